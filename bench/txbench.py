#!/usr/bin/python3
"""txbench.py — transactions per second of a 10-command MULTI/EXEC (10 INCR
on keys sharing a hash tag), closed loop: each of --conns processes sends
-P transactions at once and waits for all their replies, as
redis-benchmark -P does. Replies are counted by lines (every reply of this
workload is one line), so the Python client stays cheap.
    bench/txbench.py -p PORT [-P 16] [--conns 4] [--seconds 5]
Prints: tx/s and commands/s (12 per transaction: MULTI, 10 INCR, EXEC)."""
import argparse
import multiprocessing as mp
import socket
import time


def enc(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode() if isinstance(a, str) else a
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


TX = enc("MULTI") + b"".join(enc("INCR", "{tx}k%d" % i) for i in range(10)) + enc("EXEC")
LINES = 1 + 10 + 1 + 10


def worker(port, p, seconds, q):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    batch = TX * p
    want = LINES * p
    n = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        s.sendall(batch)
        got = 0
        while got < want:
            d = s.recv(1 << 20)
            if not d:
                raise SystemExit("closed")
            got += d.count(b"\r\n")
        n += p
    q.put(n)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-p", "--port", type=int, required=True)
    ap.add_argument("-P", type=int, default=1)
    ap.add_argument("--conns", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=5)
    a = ap.parse_args()
    q = mp.Queue()
    ps = [mp.Process(target=worker, args=(a.port, a.P, a.seconds, q)) for _ in range(a.conns)]
    t0 = time.monotonic()
    for p in ps:
        p.start()
    total = sum(q.get() for _ in ps)
    for p in ps:
        p.join()
    dt = time.monotonic() - t0
    print("%.0f tx/s (%.0f commands/s) -P %d, %d connections" % (total / dt, total * 12 / dt, a.P, a.conns))


if __name__ == "__main__":
    main()
