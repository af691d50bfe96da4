#!/usr/bin/python3
"""Big collections on the MongoDB backend, measured on the test server
tests/mongo/server.py. EMULATOR FIGURES (single-threaded Python mongomock):
they say how frontdoor's two layouts scale against each other on it, never
how fast MongoDB is.

    /usr/bin/python3 bench/mongo_big.py sides  [--sizes 100,1000,10000] [--ops 50]
    /usr/bin/python3 bench/mongo_big.py growth [--target 1000000] [--batch 1000] [--budget 900]
    /usr/bin/python3 bench/mongo_big.py growth-list [--target 1000000] [--batch 1000] [--budget 900]

sides: for each size N, the small layout (one document: mongo-big-threshold
  1e9) and the big one (threshold 2: one document per member) hold a sorted
  set, a hash and a list of N members; one client times, one at a time,
  ZADD of a new member, ZRANGE 0 9, HSET of a new field, HGET, LPUSH,
  LRANGE 0 99 (median ms of --ops commands each).
growth: one sorted set grows by ZADDs of --batch new members (default
  threshold 1000, so it turns big at 1001) until --target members or
  --budget seconds; at each checkpoint: members added per second over the
  last stretch, and the median ms of ZADD (one new member), ZRANGE 0 9
  WITHSCORES, ZRANGEBYSCORE (a score in the middle) LIMIT 0 10, ZSCORE,
  ZRANK (of a member in the middle: a count of the members before it),
  ZCARD.
growth-list: the same for one list grown by RPUSH (checkpoints up to 2M),
  timing LPUSH, RPOP, LINDEX (middle), LRANGE 0 99, LRANGE -100 -1, LLEN.
"""
import argparse
import os
import random
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "integration"))
from fdtest import MongoEmulator, start_frontdoor  # noqa: E402


def start(emu, threshold):
    return start_frontdoor(backend="mongodb", mongo_uri=emu.uri, mongo_database="b%d" % random.randrange(1 << 30),
                           backend_timeout=600000, mongo_big_threshold=threshold, durability="nosync")


def rss_mb(emu):
    """The emulator's resident memory, MB."""
    try:
        with open("/proc/%d/status" % emu.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def fill(c, cmd, key, n, make, batch=500):
    """Pipelined commands of `batch` members each until key has n."""
    sent = 0
    cmds = []
    while sent < n:
        k = min(batch, n - sent)
        cmds.append((cmd, key) + tuple(x for i in range(sent, sent + k) for x in make(i)))
        sent += k
    for i in range(0, len(cmds), 8):
        part = cmds[i:i + 8]
        c.send_many(part)
        for _ in part:
            r = c.read()
            assert not r.startswith(b"-"), r[:200]


def timed(c, gen, ops):
    """Median ms of ops commands gen(i), one at a time."""
    t = []
    for i in range(ops):
        a = gen(i)
        t0 = time.perf_counter()
        r = c.cmd(*a)
        t.append((time.perf_counter() - t0) * 1000)
        assert not r.startswith(b"-"), (a[:3], r[:200])
    return statistics.median(t)


def sides(a):
    emu = MongoEmulator(0).start()
    rows = []
    for n in [int(x) for x in a.sizes.split(",")]:
        for name, th in (("one document", 10 ** 9), ("one per member", 2)):
            fd = start(emu, th)
            c = fd.conn(timeout=600)
            fill(c, "ZADD", "z", n, lambda i: (str(i), "m%07d" % i))
            fill(c, "HSET", "h", n, lambda i: ("f%07d" % i, "v%d" % i))
            fill(c, "RPUSH", "l", n, lambda i: ("e%07d" % i,))
            ops = a.ops
            res = [
                timed(c, lambda i: ("ZADD", "z", str(random.random() * n), "new%d" % i), ops),
                timed(c, lambda i: ("ZRANGE", "z", "0", "9"), ops),
                timed(c, lambda i: ("HSET", "h", "new%d" % i, "x"), ops),
                timed(c, lambda i: ("HGET", "h", "f%07d" % random.randrange(n)), ops),
                timed(c, lambda i: ("LPUSH", "l", "x"), ops),
                timed(c, lambda i: ("LRANGE", "l", "0", "99"), ops),
            ]
            rows.append((n, name, res))
            print("N=%-7d %-15s ZADD %7.2f  ZRANGE0-9 %7.2f  HSET %7.2f  HGET %7.2f  LPUSH %7.2f  LRANGE0-99 %7.2f"
                  % ((n, name) + tuple(res)), flush=True)
            fd.stop() if hasattr(fd, "stop") else None
    print("\n| N | layout | ZADD (new) | ZRANGE 0 9 | HSET (new) | HGET | LPUSH | LRANGE 0 99 |")
    print("|---|---|---|---|---|---|---|---|")
    for n, name, res in rows:
        print("| %d | %s | %s |" % (n, name, " | ".join("%.2f" % x for x in res)))
    emu.kill()


class Zset:
    """growth: one sorted set of random scores, grown by ZADD."""
    noun, verb = "members", "ZADDs"
    checkpoints = [1000, 10000, 100000, 250000, 500000, 750000, 1000000, 2000000, 3000000, 5000000, 10000000]
    probes = ["ZADD (1 new)", "ZRANGE 0 9 WITHSCORES", "ZRANGEBYSCORE mid LIMIT 0 10", "ZSCORE",
              "ZRANK (middle)", "ZCARD"]

    def __init__(self):
        self.rnd = random.Random(1)
        self.added = []   # (score text, member) of every ZADD, to check the replies at the end

    def write(self, first, k):
        pairs = [("%.6f" % (self.rnd.random() * 1e6), "member:%08d" % i) for i in range(first, first + k)]
        self.added += pairs
        return ("ZADD", "z") + tuple(x for p in pairs for x in p)

    def measure(self, c, have, ops):
        """The probes' median ms, and the count now."""
        rnd = self.rnd
        extra = [("%.6f" % (rnd.random() * 1e6), "extra:%d:%d" % (have, i)) for i in range(ops)]
        self.added += extra
        res = [
            timed(c, lambda i: ("ZADD", "z", extra[i][0], extra[i][1]), ops),
            timed(c, lambda i: ("ZRANGE", "z", "0", "9", "WITHSCORES"), ops),
            timed(c, lambda i: ("ZRANGEBYSCORE", "z", "500000", "+inf", "LIMIT", "0", "10"), ops),
            timed(c, lambda i: ("ZSCORE", "z", "member:%08d" % rnd.randrange(have)), ops),
            timed(c, lambda i: ("ZRANK", "z", "member:%08d" % (have // 2)), 5),
            timed(c, lambda i: ("ZCARD", "z"), ops),
        ]
        return res, int(c.cmd("ZCARD", "z")[1:-2])

    def check(self, c, have, ops):
        """At the end: the 10 lowest, a rank, a score are the expected replies."""
        order = sorted(self.added, key=lambda p: (float(p[0]), p[1].encode()))
        got = c.cmd("ZRANGE", "z", "0", "9")
        exp = b"*10\r\n" + b"".join(b"$%d\r\n%s\r\n" % (len(m), m.encode()) for _, m in order[:10])
        assert got == exp, ("ZRANGE 0 9", got[:300], exp[:300])
        k = len(order) // 3
        assert c.cmd("ZRANK", "z", order[k][1]) == b":%d\r\n" % k, "ZRANK"
        assert c.cmd("ZCARD", "z") == b":%d\r\n" % len(order), "ZCARD"
        got = c.cmd("ZRANGE", "z", str(k), str(k + 4))
        exp = b"*5\r\n" + b"".join(b"$%d\r\n%s\r\n" % (len(m), m.encode()) for _, m in order[k:k + 5])
        assert got == exp, ("ZRANGE k k+4", got[:300], exp[:300])
        print("checked at %d members: ZRANGE 0 9, ZRANGE %d %d, ZRANK and ZCARD are the expected replies"
              % (len(order), k, k + 4))


class List:
    """growth-list: one list, grown by RPUSH."""
    noun, verb = "elements", "RPUSHes"
    checkpoints = [1000, 10000, 100000, 250000, 500000, 1000000, 2000000]
    probes = ["LPUSH", "RPOP", "LINDEX (middle)", "LRANGE 0 99", "LRANGE -100 -1", "LLEN"]

    def write(self, first, k):
        return ("RPUSH", "l") + tuple("e%08d" % i for i in range(first, first + k))

    def measure(self, c, have, ops):
        res = [
            timed(c, lambda i: ("LPUSH", "l", "h%d" % i), ops),
            timed(c, lambda i: ("RPOP", "l"), ops),
            timed(c, lambda i: ("LINDEX", "l", str(have // 2)), ops),
            timed(c, lambda i: ("LRANGE", "l", "0", "99"), ops),
            timed(c, lambda i: ("LRANGE", "l", "-100", "-1"), ops),
            timed(c, lambda i: ("LLEN", "l"), ops),
        ]
        # the list is now h(ops-1)..h0, e0 .. e(have-ops-1): check a few replies, then undo
        assert c.cmd("LLEN", "l") == b":%d\r\n" % have, "LLEN"
        mid = "e%08d" % (have // 2 - ops)
        assert c.cmd("LINDEX", "l", str(have // 2)) == b"$%d\r\n%s\r\n" % (len(mid), mid.encode()), "LINDEX"
        last = "e%08d" % (have - ops - 1)
        assert c.cmd("LINDEX", "l", "-1") == b"$%d\r\n%s\r\n" % (len(last), last.encode()), "LINDEX -1"
        c.cmd("LTRIM", "l", str(ops), "-1")           # back to e0 ... (the pops and pushes undone)
        c.send_many([self.write(have - ops, ops)])
        assert c.read() == b":%d\r\n" % have
        return res, have

    def check(self, c, have, ops):
        print("replies checked at every checkpoint (LLEN, LINDEX middle and -1)")


def growth(a, kind):
    """One collection of `kind` (Zset, List) grows by --batch members a
    command, 8 pipelined, threshold 1000 (big at 1001), to each checkpoint up
    to --target or until --budget seconds; at each: members added per second
    over the last stretch, emulator RSS, the median ms of kind's probes."""
    emu = MongoEmulator(0).start()
    fd = start(emu, 1000)
    c = fd.conn(timeout=600)
    t = kind()
    checkpoints = [x for x in t.checkpoints if x <= a.target]
    have, ops = 0, 20
    t_start = time.monotonic()
    last_t, last_n = t_start, 0
    rows = []
    while checkpoints:
        goal = checkpoints.pop(0)
        while have < goal:
            batches = []
            while len(batches) < 8 and have < goal:
                k = min(a.batch, goal - have)
                batches.append(t.write(have, k))
                have += k
            c.send_many(batches)
            for _ in batches:
                r = c.read()
                assert not r.startswith(b"-"), r[:200]
        now = time.monotonic()
        rate = (have - last_n) / (now - last_t)
        res, count = t.measure(c, have, ops)
        rows.append((count, rate, res))
        print("%s %8d  added %7.0f/s  %s ms   (%.0f s so far, emulator RSS %.0f MB)"
              % (t.noun, count, rate, "  ".join("%s %.2f" % nr for nr in zip(t.probes, res)),
                 now - t_start, rss_mb(emu)), flush=True)
        last_t, last_n = time.monotonic(), have
        if time.monotonic() - t_start > a.budget and checkpoints:
            print("stopped by the time budget (%d s) before %d %s" % (a.budget, checkpoints[0], t.noun))
            break
    t.check(c, have, ops)
    print("\n| %s | %s of %d: %s added/s | %s |" % (t.noun, t.verb, a.batch, t.noun, " | ".join(t.probes)))
    print("|---|---|" + "---|" * len(t.probes))
    for count, rate, res in rows:
        print("| %d | %.0f | %s |" % (count, rate, " | ".join("%.2f" % x for x in res)))
    emu.kill()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["sides", "growth", "growth-list"])
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--ops", type=int, default=50)
    ap.add_argument("--target", type=int, default=1000000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--budget", type=int, default=900)
    a = ap.parse_args()
    print("EMULATOR figures (tests/mongo/server.py: mongomock in one Python thread), never MongoDB's", flush=True)
    if a.what == "sides":
        sides(a)
    else:
        growth(a, Zset if a.what == "growth" else List)


if __name__ == "__main__":
    main()
