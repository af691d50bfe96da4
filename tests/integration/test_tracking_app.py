#!/usr/bin/python3
"""An application-style client-side cache over CLIENT TRACKING (proxy/
tracking.c, issue 27): a RESP3 client that caches GET results and drops an
entry when its `invalidate` push arrives (the null one: everything), checked
against the store while another client writes; in the default mode, and in
BCAST mode with a prefix (the cache also holds keys it never read, and no
invalidation may name a key outside its prefix); 200 tracking clients at
once, some leaving. Runs on FD_BACKEND (in
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

    def __init__(self, port, *tracking):
        self.data = {}
        self.hits = self.invalidations = 0
        self.keys_invalidated = []
        self.c = Resp3(port, self.push)
        check(self.c.call("HELLO", "3").get(b"proto") == 3, "HELLO 3")
        check(self.c.call("CLIENT", "TRACKING", "ON", *tracking) == "OK", "CLIENT TRACKING ON", tracking)

    def push(self, msg):
        check(msg[0] == b"invalidate", "an invalidate push", msg)
        self.invalidations += 1
        if msg[1] is None:
            self.data.clear()
        else:
            self.keys_invalidated.append(msg[1])
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


def bcast_cache_stays_right():
    """BCAST PREFIX app: — the cache keeps every key of the prefix it read
    (BCAST remembers nothing server-side); random writes by another client,
    pipelined several per turn, some outside the prefix; every cached GET
    must equal the store's, each message's keys sorted, distinct and under
    the prefix."""
    fd = shared_frontdoor()
    writer = fd.conn()
    writer.cmd("FLUSHALL")
    cache = Cache(fd.port, "BCAST", "PREFIX", "app:")
    rnd = random.Random(2727)
    keys = [b"app:%d" % i for i in range(20)]
    others = [b"other:%d" % i for i in range(5)]
    try:
        for step in range(400):
            batch = []
            for _ in range(rnd.randint(1, 4)):
                k = rnd.choice(keys + others)
                r = rnd.random()
                if r < 0.55:
                    batch.append(("SET", k, "v%d" % step))
                elif r < 0.7:
                    batch.append(("DEL", k))
                elif r < 0.85:
                    batch.append(("INCR", b"app:n"))
                elif r < 0.99:
                    batch.append(("MSET", k, "m%d" % step, rnd.choice(keys), "w%d" % step))
                else:
                    batch.append(("FLUSHALL",))
            writer.send_many(batch)             # one write: often one turn, one message
            writer.read_n(len(batch))
            cache.sync()
            for q in rnd.sample(keys, 5) + [b"app:n"]:
                want = writer.call("GET", q)
                got = cache.get(q)
                check(got == want, "the cached GET %r is the store's after step %d" % (q, step), (got, want))
        check(cache.hits > 500, "the cache served reads", cache.hits)
        check(cache.invalidations > 100, "invalidations arrived", cache.invalidations)
        for ks in cache.keys_invalidated:
            check(ks == sorted(set(ks)), "a message's keys are sorted and distinct", ks)
            check(all(k.startswith(b"app:") for k in ks), "only keys under the prefix", ks)
        check(any(len(ks) > 1 for ks in cache.keys_invalidated), "a turn's keys in one message",
              cache.keys_invalidated[:5])
    finally:
        cache.c.close()
        writer.close()


T.add("bcast_cache_stays_right_under_random_writes", bcast_cache_stays_right)


def many_trackers():
    """200 tracking clients (the table of tracking clients by id): each reads
    its own key and one shared key; a write of each key reaches exactly its
    readers; half of them turn tracking off or disconnect, and the next
    writes reach only the others. INFO's tracking_clients follows."""
    fd = shared_frontdoor()
    writer = fd.conn()
    writer.cmd("FLUSHALL")
    caches = [Cache(fd.port) for _ in range(200)]
    try:
        def info_clients():
            for line in writer.cmd("INFO", "clients").split(b"\r\n"):
                if line.startswith(b"tracking_clients:"):
                    return int(line.split(b":")[1])
        check(info_clients() >= 200, "200 tracking clients", info_clients())
        for i, c in enumerate(caches):
            c.get(b"many:%d" % i)
            c.get(b"many:shared")
        for i in range(200):
            writer.cmd("SET", b"many:%d" % i, "x")
        writer.cmd("SET", b"many:shared", "y")
        for i, c in enumerate(caches):
            c.sync()
            check(c.keys_invalidated == [[b"many:%d" % i], [b"many:shared"]],
                  "client %d got its key's and the shared key's invalidations" % i, c.keys_invalidated)
            c.keys_invalidated = []
            c.get(b"many:shared")
        for i, c in enumerate(caches[:100]):
            if i % 2:
                check(c.c.call("CLIENT", "TRACKING", "OFF") == "OK", "CLIENT TRACKING OFF")
            else:
                c.c.close()
        writer.cmd("SET", b"many:shared", "z")
        for c in caches[100:]:
            c.sync()
            check(c.keys_invalidated == [[b"many:shared"]], "a client still tracking got it", c.keys_invalidated)
        for c in caches[1:100:2]:
            c.sync()
            check(c.keys_invalidated == [], "a client that turned tracking off got nothing", c.keys_invalidated)
    finally:
        for c in caches:
            c.c.close()
        writer.close()


T.add("many_tracking_clients", many_trackers)


if __name__ == "__main__":
    T.main()
