#!/usr/bin/python3
"""An application-style client-side cache over CLIENT TRACKING (proxy/
tracking.c, issue 27): a RESP3 client that caches GET results and drops an
entry when its `invalidate` push arrives (the null one: everything), checked
against the store while another client writes. Runs on FD_BACKEND (in
FD_DIFF_SUITES: every backend).
"""
import os
import random
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import Tests, check, shared_frontdoor, HOST

T = Tests(case_timeout=120)


class Resp3:
    """A minimal RESP3 reader over a socket: replies, with pushes given to on_push."""

    def __init__(self, port, on_push=None):
        self.s = socket.create_connection((HOST, port), timeout=10)
        self.f = self.s.makefile("rb")
        self.on_push = on_push

    def _read(self):
        line = self.f.readline()
        check(line.endswith(b"\r\n"), "a RESP line", line)
        t, rest = line[:1], line[1:-2]
        if t in (b"+", b"-"):
            return (t + rest).decode() if t == b"-" else rest.decode()
        if t == b":":
            return int(rest)
        if t == b"_":
            return None
        if t in (b"$", b"="):
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)[:-2]
            return data[4:] if t == b"=" else data
        if t in (b"*", b">", b"~"):
            n = int(rest)
            items = [self._read() for _ in range(max(n, 0))]
            return ("push", items) if t == b">" else items
        if t == b"%":
            return {self._read(): self._read() for _ in range(int(rest))}
        raise AssertionError("unexpected RESP type %r" % line)

    def call(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.s.sendall(out)
        while True:
            r = self._read()
            if isinstance(r, tuple):
                self.on_push(r[1])
                continue
            return r

    def close(self):
        self.s.close()


class Cache:
    """GET through a local cache kept right by invalidate pushes."""

    def __init__(self, port):
        self.data = {}
        self.hits = self.invalidations = 0
        self.c = Resp3(port, self.push)
        check(self.c.call("HELLO", "3").get(b"proto") == 3, "HELLO 3")
        check(self.c.call("CLIENT", "TRACKING", "ON") == "OK", "CLIENT TRACKING ON")

    def push(self, msg):
        check(msg[0] == b"invalidate", "an invalidate push", msg)
        self.invalidations += 1
        if msg[1] is None:
            self.data.clear()
        else:
            for k in msg[1]:
                self.data.pop(k, None)

    def get(self, key):
        if key in self.data:
            self.hits += 1
            return self.data[key]
        v = self.c.call("GET", key)
        self.data[key] = v
        return v

    def sync(self):
        """A round trip: the pushes sent before it are read."""
        check(self.c.call("PING") == "PONG", "PING")


def cache_stays_right():
    fd = shared_frontdoor()
    writer = fd.conn()
    writer.cmd("FLUSHALL")
    cache = Cache(fd.port)
    rnd = random.Random(27)
    keys = [b"app:%d" % i for i in range(20)]
    try:
        for step in range(600):
            k = rnd.choice(keys)
            r = rnd.random()
            if r < 0.3:
                writer.cmd("SET", k, "v%d" % step)
            elif r < 0.35:
                writer.cmd("DEL", k)
            elif r < 0.36:
                writer.cmd("FLUSHALL")
            cache.sync()
            for q in rnd.sample(keys, 5):
                want = writer.call("GET", q)
                got = cache.get(q)
                check(got == want, "the cached GET %r is the store's after step %d" % (q, step), (got, want))
        check(cache.hits > 500, "the cache served reads", cache.hits)
        check(cache.invalidations > 50, "invalidations arrived", cache.invalidations)
    finally:
        cache.c.close()
        writer.close()


T.add("cache_stays_right_while_another_client_writes", cache_stays_right)


if __name__ == "__main__":
    T.main()
