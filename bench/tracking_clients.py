#!/usr/bin/python3
"""Tracking clients for bench/tracking_cost.sh (docs/benchmarks.md, "Client-
side caching and FCALL (issue 27)"): N RESP3 connections with CLIENT
TRACKING ON [option...]. Unless in BCAST, the clients first read the whole
redis-benchmark key space (key:<12 digits>, 0 .. range-1) between them, in
MGETs of 1000, so that every key is in the tracking table once; then the
file `ready` is created and they drain everything the server sends (replies
and invalidate pushes) until SIGTERM, when they print what they received.

Usage: tracking_clients.py port nclients range ready-file [option...]
"""
import selectors
import signal
import socket
import sys

port, n, rng, ready = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
opts = sys.argv[5:]


def enc(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def read_reply(f):
    """One RESP3 reply from a file (pushes skipped), its type byte returned."""
    while True:
        line = f.readline()
        t = line[:1]
        if t in (b"*", b">", b"%", b"~"):
            count = int(line[1:-2]) * (2 if t == b"%" else 1)
            for _ in range(max(count, 0)):
                read_reply(f)
        elif t == b"$":
            size = int(line[1:-2])
            if size >= 0:
                f.read(size + 2)
        if t != b">":
            return t


conns = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    f = s.makefile("rb")
    s.sendall(enc("HELLO", "3") + enc("CLIENT", "TRACKING", "ON", *opts))
    read_reply(f)
    if read_reply(f) != b"+":
        sys.exit("CLIENT TRACKING ON %s refused" % " ".join(opts))
    if "BCAST" not in [o.upper() for o in opts]:
        for lo in range(i * rng // n, (i + 1) * rng // n, 1000):
            hi = min(lo + 1000, (i + 1) * rng // n)
            s.sendall(enc("MGET", *[b"key:%012d" % k for k in range(lo, hi)]))
            read_reply(f)
    conns.append(s)
open(ready, "w").close()

sel = selectors.DefaultSelector()
for s in conns:
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ)
received = invalidations = 0
stop = False


def on_term(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
while not stop:
    for key, _ in sel.select(timeout=0.1):
        try:
            data = key.fileobj.recv(1 << 20)
        except (BlockingIOError, InterruptedError):
            continue
        received += len(data)
        invalidations += data.count(b"$10\r\ninvalidate\r\n")
print("tracking clients (%s): %d bytes, %d invalidate messages" % (" ".join(opts) or "default", received, invalidations),
      file=sys.stderr)
