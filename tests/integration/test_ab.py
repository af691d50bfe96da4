#!/usr/bin/python3
"""Live backend swap and A/B routing (docs/ab-testing.md).

(a) mirror redis -> lmdb under a seeded random workload: every compared reply
    matches (ab_mismatches 0); then a key changed behind frontdoor's back on
    the primary's redis-server shows up as a mismatch with both replies, in
    FRONTDOOR AB and in ab-log-file.
(b) read-only mirroring (ab-mirror-writes no): writes reach the primary only.
(c) split by key hash (lmdb primary, redis secondary): 10k keys, each served
    consistently by one side, the secondary's share within tolerance of
    ab-split-fraction, ab_split_secondary counting it; split by client.
(g) redis-benchmark -c 10 mirrored redis -> lmdb, four connections pinned per client:
    the order-dependent replies (LPUSH lengths, INCR values) differ, all
    counted as races, none as divergences; then keys changed behind
    frontdoor's back (string, list, hash, set, zset, TTL, type) are
    divergences whose diff names what differs; FRONTDOOR AB KEY.
(h) policies: ab-mismatch-log count, ab-stop-after, ab-mirror-reads no,
    ab-mirror-sample (by key).
(d) secondary down in mirror mode: the client sees no error, copies are
    counted as dropped, the queue stays bounded.
(e) live swap under load: redis-benchmark runs while CONFIG SET flips the
    backend between lmdb and redis: no errors, no disconnects, every command
    counted; a failed swap keeps the running backend.
(f) SIGHUP re-reads the config file (swap), a broken file is refused and the
    running setup kept; CONFIG REWRITE writes the running values back.

FD_SEED=n reproduces the random workload.
"""
import os
import random
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import (Tests, start_frontdoor, start_redis, check, eq, skip, wait_until, free_port,
                    frontdoor_is_redis, info_fields, make_tempdir, parse, Conn, Err, REDIS_BENCHMARK, HOST,
                    missing_prerequisite)

T = Tests(case_timeout=60)
SEED = int(os.environ.get("FD_SEED", random.randrange(1 << 30)))


def need_frontdoor():
    if frontdoor_is_redis():
        skip("the binary under test is redis-server: no A/B routing there")


def info(c, section):
    raw = c.call("INFO", section)
    return info_fields(raw.decode() if isinstance(raw, bytes) else raw)


def ab_counts(c):
    f = info(c, "ab")
    return {k: (int(v) if v.isdigit() else v) for k, v in f.items()}


def workload(rng, n):
    """A random mix of reads and writes over a small key space, all types."""
    keys = ["k%d" % i for i in range(40)]
    out = []
    for _ in range(n):
        k = rng.choice(keys)
        r = rng.random()
        v = "v%d" % rng.randrange(1000)
        if r < 0.15:
            out.append(("SET", "s" + k, v))
        elif r < 0.30:
            out.append(("GET", "s" + k))
        elif r < 0.38:
            out.append(("INCRBY", "n" + k, str(rng.randrange(-5, 50))))
        elif r < 0.46:
            out.append(("RPUSH", "l" + k, v))
        elif r < 0.52:
            out.append(("LRANGE", "l" + k, "0", "-1"))
        elif r < 0.60:
            out.append(("HSET", "h" + k, "f%d" % rng.randrange(8), v))
        elif r < 0.66:
            out.append(("HGETALL", "h" + k))
        elif r < 0.74:
            out.append(("SADD", "t" + k, v))
        elif r < 0.80:
            out.append(("SMEMBERS", "t" + k))
        elif r < 0.86:
            out.append(("ZADD", "z" + k, str(rng.randrange(100)), v))
        elif r < 0.90:
            out.append(("ZRANGE", "z" + k, "0", "-1", "WITHSCORES"))
        elif r < 0.94:
            out.append(("DEL", rng.choice(["s", "l", "h", "t", "z", "n"]) + k))
        elif r < 0.97:
            out.append(("EXISTS", "s" + k, "l" + k))
        else:
            out.append(("TYPE", rng.choice(["s", "l", "h", "t", "z", "n"]) + k))
    return out


@T.case
def mirror_redis_to_lmdb_matches_then_catches_a_divergence():
    need_frontdoor()
    r = start_redis()
    log = os.path.join(make_tempdir("fdtest-ablog-"), "ab.log")
    ab_dir = make_tempdir("fdtest-ab-")
    fd = start_frontdoor(backend="redis", redis_address="%s:%d" % (HOST, r.port), ab_mode="mirror",
                         ab_secondary="lmdb", ab_dir=ab_dir, ab_durability="nosync", ab_log_file=log)
    rng = random.Random(SEED)
    with fd.conn() as c:
        cmds = workload(rng, 3000)
        for i in range(0, len(cmds), 100):          # pipelined, 100 at a time
            c.send_many(cmds[i:i + 100])
            for reply in c.read_n(len(cmds[i:i + 100])):
                check(not reply.startswith(b"-ERR backend"), "primary failed (seed %d)" % SEED, reply)
        wait_until(lambda: ab_counts(c)["ab_queue"] == 0, what="mirror queue drained")
        a = ab_counts(c)
        check(a["ab_mirrored"] == 3000, "every command mirrored", a)
        check(a["ab_compared"] >= 2900, "nearly all compared (none are random here)", a)
        if a["ab_mismatches"]:
            check(False, "mismatches on an identical workload (seed %d)" % SEED, a, c.call("FRONTDOOR", "AB"))
        eq(a["ab_dropped"], 0, "drops")
        eq(a["ab_primary"], "redis")
        eq(a["ab_secondary"], "lmdb")
        # diverge one key behind frontdoor's back: the primary's redis now differs
        with Conn(r.port) as direct:
            eq(direct.cmd("SET", "diverged", "on-primary"), b"+OK\r\n")
        c.cmd("GET", "diverged")
        wait_until(lambda: ab_counts(c)["ab_mismatches"] == 1, what="the mismatch counted")
        wait_until(lambda: len(c.call("FRONTDOOR", "AB")) == 1, what="the divergence kept with its diff")
        samples = c.call("FRONTDOOR", "AB")
        ms, text, prim, sec, diff = samples[0]
        eq(text, b"GET diverged")
        eq(prim, b"$10\r\non-primary\r\n")
        eq(sec, b"$-1\r\n")
        eq(diff, b"the key exists only on the primary (a string)")
        check("ab_cmd_get:compared=" in c.call("INFO", "ab").decode(), "per-command counters")
        with open(log) as f:
            logged = f.read()
        check("divergence: GET diverged" in logged and '"on-primary"' in logged and "diff: the key exists only" in logged,
              "divergence logged", logged)
        # backends: both counted, with latency percentiles
        b = info(c, "backends")
        check("calls=" in b["be_primary"] and "p99_us=" in b["be_secondary"], "per-backend stats", b)
        eq(c.cmd("FRONTDOOR", "AB", "RESET"), b"+OK\r\n")
        eq(ab_counts(c)["ab_mismatches"], 0)
        eq(c.call("FRONTDOOR", "AB"), [])


@T.case
def mirrored_store_becomes_the_primary_in_one_call():
    need_frontdoor()
    r = start_redis()
    ab_dir = make_tempdir("fdtest-ab-")
    fd = start_frontdoor(backend="redis", redis_address="%s:%d" % (HOST, r.port), ab_mode="mirror",
                         ab_secondary="lmdb", ab_dir=ab_dir, ab_durability="nosync")
    with fd.conn() as c:
        eq(c.cmd("RPUSH", "l", "a", "b"), b":2\r\n")
        eq(c.cmd("INCR", "n"), b":1\r\n")
        # the secondary's folder cannot be the primary's while A/B is on...
        got = c.call("CONFIG", "SET", "backend", "lmdb", "dir", ab_dir)
        check(isinstance(got, Err) and "secondary" in got, "refused with the reason", got)
        eq(info(c, "backends")["backend_primary"], "redis")
        eq(c.call("CONFIG", "GET", "backend")[1], b"redis", "rolled back")
        # ...but turning A/B off in the same call frees it
        eq(c.cmd("CONFIG", "SET", "ab-mode", "off", "backend", "lmdb", "dir", ab_dir), b"+OK\r\n")
        b = info(c, "backends")
        eq((b["backend_primary"], b["backend_secondary"]), ("lmdb", ""))
        eq(c.cmd("LRANGE", "l", "0", "-1"), b"*2\r\n$1\r\na\r\n$1\r\nb\r\n", "mirrored data now served")
        eq(c.cmd("INCR", "n"), b":2\r\n")
        wait_until(lambda: info(c, "backends")["backend_draining"] == "0", what="redis drained")


@T.case
def read_only_mirroring_keeps_writes_on_the_primary():
    need_frontdoor()
    sec = start_redis()
    fd = start_frontdoor(durability="nosync", ab_mode="mirror", ab_secondary="redis",
                         ab_redis_address="%s:%d" % (HOST, sec.port), ab_mirror_writes="no")
    with fd.conn() as c, Conn(sec.port) as direct:
        eq(c.cmd("SET", "a", "1"), b"+OK\r\n")
        eq(c.cmd("GET", "a"), b"$1\r\n1\r\n")
        wait_until(lambda: ab_counts(c)["ab_mismatches"] == 1, what="the read compared")
        eq(direct.cmd("EXISTS", "a"), b":0\r\n", "the write did not reach the secondary")
        a = ab_counts(c)
        eq(a["ab_mirrored"], 1, "only the read was mirrored")


@T.case
def split_by_key_is_stable_and_near_the_fraction():
    need_frontdoor()
    sec = start_redis()
    fd = start_frontdoor(durability="nosync", ab_mode="split", ab_secondary="redis",
                         ab_redis_address="%s:%d" % (HOST, sec.port), ab_split_fraction="0.3")
    n = 10000
    with fd.conn() as c, Conn(sec.port) as direct:
        cmds = [("SET", "key:%d" % i, "val%d" % i) for i in range(n)]
        for i in range(0, n, 500):
            c.send_many(cmds[i:i + 500])
            check(all(x == b"+OK\r\n" for x in c.read_n(len(cmds[i:i + 500]))), "SETs")
        on_secondary = int(direct.cmd("DBSIZE")[1:-2])
        share = on_secondary / n
        check(0.27 <= share <= 0.33, "secondary share %.3f for fraction 0.3" % share)
        eq(ab_counts(c)["ab_split_secondary"], on_secondary, "split counter = keys on the secondary")
        # each key consistently on one side: every GET finds what its SET stored
        gets = [("GET", "key:%d" % i) for i in range(n)]
        for i in range(0, n, 500):
            c.send_many(gets[i:i + 500])
            for j, reply in enumerate(c.read_n(len(gets[i:i + 500]))):
                v = "val%d" % (i + j)
                eq(reply, b"$%d\r\n%s\r\n" % (len(v), v.encode()), "GET key:%d" % (i + j))
        # keyless commands stay on the primary
        eq(c.cmd("DBSIZE"), b":%d\r\n" % (n - on_secondary))
        # by client: a connection's commands all go to one side
        eq(c.cmd("CONFIG", "SET", "ab-split-by", "client", "ab-split-fraction", "0.5"), b"+OK\r\n")
        sides = set()
        for _ in range(12):
            with fd.conn() as x:
                eq(x.cmd("SET", "c1", "x"), b"+OK\r\n")
                eq(x.cmd("SET", "c2", "x"), b"+OK\r\n")
            with Conn(sec.port) as d:
                got = d.cmd("EXISTS", "c1", "c2")
                check(got in (b":0\r\n", b":2\r\n"), "a client's keys stay together", got)
                sides.add(got)
                d.cmd("DEL", "c1", "c2")
        check(len(sides) == 2, "12 clients at 0.5 used both sides", sides)


@T.case
def secondary_down_costs_the_client_nothing():
    need_frontdoor()
    dead = free_port()      # nothing listens there
    fd = start_frontdoor(durability="nosync", ab_mode="mirror", ab_secondary="redis",
                         ab_redis_address="%s:%d" % (HOST, dead), ab_backend_timeout="200",
                         ab_mirror_queue="50")
    with fd.conn() as c:
        for i in range(10):
            cmds = [("SET", "k%d" % j, "v") for j in range(100)] + [("GET", "k%d" % j) for j in range(100)]
            c.send_many(cmds)
            replies = c.read_n(len(cmds))
            check(all(x in (b"+OK\r\n", b"$1\r\nv\r\n") for x in replies), "client replies unaffected",
                  [x for x in replies if x not in (b"+OK\r\n", b"$1\r\nv\r\n")][:3])
        wait_until(lambda: ab_counts(c)["ab_queue"] == 0, what="copies settled")
        a = ab_counts(c)
        eq(a["ab_dropped"], 2000, "every copy dropped (%s)" % a)
        eq(a["ab_mismatches"], 0)
        eq(a["ab_compared"], 0)


def ab_cmd(c, name):
    """INFO ab's ab_cmd_<name> line as a dict of ints."""
    v = info(c, "ab").get("ab_cmd_" + name, "")
    return {k: int(x) for k, x in (kv.split("=") for kv in v.split(",") if kv)}


@T.case(timeout=120)
def concurrent_clients_make_races_not_divergences():
    need_frontdoor()
    r = start_redis()
    log = os.path.join(make_tempdir("fdtest-ablog-"), "ab.log")
    fd = start_frontdoor(backend="redis", redis_address="%s:%d" % (HOST, r.port), ab_mode="mirror",
                         ab_secondary="lmdb", ab_dir=make_tempdir("fdtest-ab-"), ab_durability="nosync",
                         ab_log_file=log, redis_pool_size=4, redis_pool_affinity="client")
    with fd.conn() as c:
        # each client pinned to a connection (the order before issue 30's key affinity): replies of one
        # key come back from four connections in an order frontdoor cannot see
        eq(c.call("CONFIG", "GET", "redis-pool-size")[1], b"4", "the pool asked for")
        argv = ["timeout", "-k", "5", "90", REDIS_BENCHMARK, "-h", HOST, "-p", str(fd.port),
                "-t", "lpush,hset,sadd,zadd,incr", "-n", "5000", "-c", "10", "-q"]
        out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=100).stdout.decode()
        check("rror" not in out, "redis-benchmark errors", out[-1000:])
        wait_until(lambda: ab_counts(c)["ab_queue"] == 0, what="mirror settled")
        a = ab_counts(c)
        eq(a["ab_mirrored"], 25000, "every command mirrored (%s)" % a)
        eq(a["ab_divergences"], 0, "no divergence: %s %r" % (a, c.call("FRONTDOOR", "AB")[:2]))
        eq(c.call("FRONTDOOR", "AB"), [], "no divergence kept")
        # ten clients pushing to one list: some lengths come back in another order
        lp, incr = ab_cmd(c, "lpush"), ab_cmd(c, "incr")
        check(lp["races"] > 0 and incr["races"] > 0, "order-dependent replies counted as races", lp, incr)
        eq(a["ab_races"], a["ab_mismatches"], "every mismatch is a race")
        # ab-mirror-order primary (the default): every copy left when the primary answered
        eq((a["ab_mirror_order"], a["ab_deferred"]), ("primary", 25000), "copies in the primary's order")
        for cmd in ("hset", "sadd", "zadd"):   # same member every time: only who added it first (1, then 0s)
            check(ab_cmd(c, cmd)["races"] < 10, "a few races at most", cmd, ab_cmd(c, cmd))
        races = c.call("FRONTDOOR", "AB", "RACES")
        check(len(races) > 0 and all(x[1].split()[0] in (b"LPUSH", b"INCR", b"HSET", b"SADD", b"ZADD") for x in races), "races kept apart", races[:1])
        # the stores hold the same data (the values pushed are all equal)
        eq(c.call("FRONTDOOR", "AB", "KEY", "mylist")[5], b"the list is identical on both sides now "
           b"(it changed since, or the replies differ on equal data)")
        report = c.call("FRONTDOOR", "REPORT").decode()
        check("divergences 0, races %d" % a["ab_races"] in report, "REPORT: races apart", report)
        with open(log) as f:
            logged = f.read()
        check(" race: " in logged and " divergence: " not in logged, "the log tells them apart", logged[:500])

        # now change keys behind frontdoor's back, on redis-server directly
        eq(c.cmd("FRONTDOOR", "AB", "RESET"), b"+OK\r\n")
        for cmd in [("SET", "s", "value-1"), ("RPUSH", "l", "a", "b", "c"), ("HSET", "h", "f1", "x", "f2", "y"),
                    ("SADD", "t", "m1", "m2"), ("ZADD", "z", "1", "a", "2", "b"), ("SET", "e", "v"), ("SET", "ty", "v")]:
            c.call(*cmd)
        with Conn(r.port) as d:
            d.cmd("SET", "s", "value-2")
            d.cmd("LSET", "l", "1", "B")
            d.cmd("HSET", "h", "f2", "Y", "f3", "z")
            d.cmd("SADD", "t", "m3")
            d.cmd("ZADD", "z", "5", "b")
            d.cmd("EXPIRE", "e", "1000")
            d.cmd("DEL", "ty")
            d.cmd("RPUSH", "ty", "v")
        reads = [("GET", "s"), ("LRANGE", "l", "0", "-1"), ("HGETALL", "h"), ("SMEMBERS", "t"),
                 ("ZRANGE", "z", "0", "-1", "WITHSCORES"), ("TYPE", "ty")]
        for cmd in reads:
            c.call(*cmd)
        eq(c.cmd("GET", "e"), b"$1\r\nv\r\n")   # equal replies: no divergence (the TTL differs unseen)
        wait_until(lambda: len(c.call("FRONTDOOR", "AB")) == len(reads), what="the divergences kept with their diffs")
        a = ab_counts(c)
        eq((a["ab_divergences"], a["ab_races"]), (len(reads), 0), "divergences, no races (%s)" % a)
        diffs = {x[1].decode(): x[4].decode() for x in c.call("FRONTDOOR", "AB")}
        eq(diffs["GET s"], 'string value: "value-2" (7 bytes) on the primary, "value-1" (7 bytes) on the secondary, '
           'first difference at byte 6')
        eq(diffs["LRANGE l 0 -1"], 'list element 1: "B" vs "b"')
        eq(diffs["HGETALL h"], 'field: 3 vs 2 fields; field "f2" value: "Y" vs "y"; field "f3" only on the primary')
        eq(diffs["SMEMBERS t"], 'member: 3 vs 2 members; member "m3" only on the primary')
        eq(diffs["ZRANGE z 0 -1 WITHSCORES"], 'member "b" score: "5" vs "2"')
        eq(diffs["TYPE ty"], "type: list on the primary, string on the secondary")
        # FRONTDOOR AB KEY: a key with a TTL on one side only
        k = c.call("FRONTDOOR", "AB", "KEY", "e")
        eq((k[0], k[2], k[4]), (b"primary", b"secondary", b"diff"))
        check(k[1].startswith(b"type string, ttl ") and k[3] == b'type string, no ttl, "v"', "both states", k)
        check(k[5].startswith(b"TTL: ") and b"none on the secondary" in k[5], "the TTL differs", k)
        eq(c.call("FRONTDOOR", "AB", "KEY", "l")[5], b'list element 1: "B" vs "b"')
        eq(c.call("FRONTDOOR", "AB", "KEY", "nosuchkey")[5], b"the key exists on neither side now")
        report = c.call("FRONTDOOR", "REPORT").decode()
        check('key now:             list element 1: "B" vs "b"' in report, "REPORT shows the diff", report)


@T.case(timeout=120)
def key_affine_pool_makes_no_races():
    """redis-pool-affinity key (the default): every command on one key goes over one pooled connection,
    so the primary's reply order on a key is its execution order and the mirror applies the same order:
    ten clients pushing to one list and incrementing one counter make no race and no divergence.
    Fails with redis-pool-affinity client (the test above: thousands of races)."""
    need_frontdoor()
    r = start_redis()
    fd = start_frontdoor(backend="redis", redis_address="%s:%d" % (HOST, r.port), ab_mode="mirror",
                         ab_secondary="lmdb", ab_dir=make_tempdir("fdtest-ab-"), ab_durability="nosync",
                         redis_pool_size=4)   # the default is one connection: order is then trivially kept
    with fd.conn() as c:
        eq(c.call("CONFIG", "GET", "redis-pool-affinity")[1], b"key", "the default")
        eq(info(c, "backend").get("redis_backend_pool_affinity"), "key", "INFO backend")
        argv = ["timeout", "-k", "5", "90", REDIS_BENCHMARK, "-h", HOST, "-p", str(fd.port),
                "-t", "lpush,incr", "-n", "4000", "-c", "10", "-q"]
        out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=100).stdout.decode()
        check("rror" not in out, "redis-benchmark errors", out[-1000:])
        wait_until(lambda: ab_counts(c)["ab_queue"] == 0, what="mirror settled")
        a = ab_counts(c)
        eq(a["ab_mirrored"], 8000, "every command mirrored (%s)" % a)
        eq((ab_cmd(c, "lpush")["compared"], ab_cmd(c, "incr")["compared"]), (4000, 4000), "all compared")
        eq((a["ab_divergences"], a["ab_races"]), (0, 0), "no race, no divergence: %s %r" % (
            a, c.call("FRONTDOOR", "AB", "RACES")[:2]))
        eq(c.call("FRONTDOOR", "AB", "KEY", "counter:__rand_int__")[5][:31], b"the string is identical on both")
        # a client's pipeline over several keys keeps its own order (it follows its in-flight connection)
        cmds = []
        for i in range(300):
            k = "p%d" % (i % 7)
            cmds += [("RPUSH", k, str(i)), ("RENAME", k, k + "x"), ("RPOPLPUSH", k + "x", "sink"), ("EXISTS", k + "x")]
        c.send_many(cmds)
        reps = [parse(x) for x in c.read_n(len(cmds))]
        eq(reps, [x for i in range(300) for x in (1, "OK", str(i).encode(), 0)], "the pipeline ran in its order")
        eq(c.call("LLEN", "sink"), 300)
        eq(c.call("LRANGE", "sink", "0", "2"), [b"299", b"298", b"297"])


@T.case
def mismatch_policies():
    need_frontdoor()
    r = start_redis()
    fd = start_frontdoor(backend="redis", redis_address="%s:%d" % (HOST, r.port), ab_mode="mirror",
                         ab_secondary="lmdb", ab_dir=make_tempdir("fdtest-ab-"), ab_durability="nosync",
                         ab_mismatch_log="count", ab_stop_after="3")
    with fd.conn() as c, Conn(r.port) as d:
        for i in range(5):
            d.cmd("SET", "k%d" % i, "behind")
        for i in range(2):
            c.call("GET", "k%d" % i)
        wait_until(lambda: ab_counts(c)["ab_divergences"] == 2, what="two divergences")
        eq(c.call("FRONTDOOR", "AB"), [], "count: none kept")
        c.call("GET", "k2")
        wait_until(lambda: ab_counts(c)["ab_stopped"] == "yes", what="stopped after 3")
        mirrored = ab_counts(c)["ab_mirrored"]
        c.call("GET", "k3")
        c.call("SET", "x", "1")
        a = ab_counts(c)
        eq((a["ab_mirrored"], a["ab_divergences"]), (mirrored, 3), "nothing mirrored once stopped")
        check("STOPPED" in c.call("FRONTDOOR", "REPORT").decode(), "REPORT says so")
        eq(c.cmd("FRONTDOOR", "AB", "RESET"), b"+OK\r\n")
        eq(ab_counts(c)["ab_stopped"], "no")
        # writes only: reads are not mirrored
        eq(c.cmd("CONFIG", "SET", "ab-mirror-reads", "no", "ab-mismatch-log", "reply"), b"+OK\r\n")
        c.call("GET", "k4")
        c.call("SET", "w", "1")
        wait_until(lambda: ab_counts(c)["ab_mirrored"] == 1, what="the write mirrored")
        eq(ab_counts(c)["ab_divergences"], 0, "the read was not")
        # a sample by key: a key is always, or never, mirrored
        eq(c.cmd("CONFIG", "SET", "ab-mirror-reads", "yes", "ab-mirror-sample", "0.25"), b"+OK\r\n")
        eq(c.cmd("FRONTDOOR", "AB", "RESET"), b"+OK\r\n")
        for i in range(400):
            c.call("SET", "sk%d" % i, "v")
            c.call("GET", "sk%d" % i)
        a = ab_counts(c)
        eq(a["ab_mirrored"] + a["ab_sampled_out"], 800)
        check(a["ab_mirrored"] % 2 == 0 and 0.15 * 800 <= a["ab_mirrored"] <= 0.35 * 800, "about a quarter, by key", a)
        eq(a["ab_divergences"], 0, "a sampled key's reads find its writes on the secondary")


def bench(port, seconds_cap=60, n=30000):
    argv = ["timeout", "-k", "5", str(seconds_cap), REDIS_BENCHMARK, "-h", HOST, "-p", str(port),
            "-t", "set,get,incr,lpush,lpop", "-n", str(n), "-c", "20", "-P", "4", "-q"]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


@T.case
def swap_under_load_loses_nothing():
    need_frontdoor()
    r = start_redis()
    fd = start_frontdoor(durability="nosync", redis_address="%s:%d" % (HOST, r.port))
    with fd.conn() as c:
        before = int(info(c, "stats")["total_connections_received"])
        p = bench(fd.port)
        swaps = 0
        backends = ["redis", "lmdb"]
        while p.poll() is None and swaps < 40:
            eq(c.cmd("CONFIG", "SET", "backend", backends[swaps % 2]), b"+OK\r\n")
            swaps += 1
            time.sleep(0.05)
        out, _ = p.communicate(timeout=90)
        out = out.decode("utf-8", "replace")
        eq(p.returncode, 0, "redis-benchmark exit status\n" + out[-2000:])
        check("rror" not in out, "redis-benchmark saw an error reply", out[-2000:])
        check(swaps >= 4, "swapped several times under load (%d)" % swaps)
        # no client was dropped and reconnected across the swaps: redis-benchmark
        # opens exactly 20 clients per test (5 tests) plus one to read the
        # server's config (the same run against redis-server: 101)
        eq(int(info(c, "stats")["total_connections_received"]) - before, 5 * 20 + 1,
           "connections opened during the run")
        b = info(c, "backends")
        check(int(b["backend_switches"]) == swaps, "every swap counted", b)
        wait_until(lambda: info(c, "backends")["backend_draining"] == "0", what="old backends drained")
        st = info(c, "stats")
        # 5 tests x n commands, plus our CONFIG/INFO
        check(int(st["total_commands_processed"]) >= 5 * 30000, "every command counted", st)
        # a swap to a server that cannot be reached keeps the running backend
        now = info(c, "backends")["backend_primary"]
        switches = int(info(c, "backends")["backend_switches"])
        c.send("CONFIG", "SET", "backend", "redis", "redis-address", "%s:%d" % (HOST, free_port()))
        c.send("PING")                       # queued behind the owed CONFIG SET reply
        got, pong = parse(c.read(timeout=10)), c.read(timeout=10)
        check(isinstance(got, Err) and "does not answer" in got, "swap refused with the reason", got)
        eq(pong, b"+PONG\r\n", "the next reply comes after it")
        b = info(c, "backends")
        eq((b["backend_primary"], int(b["backend_switches"])), (now, switches), "still on the running backend")
        eq(c.call("CONFIG", "GET", "redis-address")[1], ("%s:%d" % (HOST, r.port)).encode(), "setting restored")
        eq(c.cmd("SET", "after", "1"), b"+OK\r\n")
        got = c.call("CONFIG", "SET", "backend", "no-such-store")
        check(isinstance(got, Err) and "unknown backend" in got, "clear error", got)
        eq(c.cmd("PING"), b"+PONG\r\n")


@T.case
def swap_to_a_cluster_waits_for_its_slot_map():
    """A redis-cluster backend learns its slot map after it is opened: the
    swap's probe must wait for it rather than fail."""
    need_frontdoor()
    if "redis-cluster" not in run_frontdoor_backends():
        missing_prerequisite("frontdoor built without the redis-cluster backend")
    node = start_redis(cluster_enabled="yes", cluster_port=free_port())   # the bus port, else port + 10000
    with Conn(node.port) as d:
        eq(d.cmd("CLUSTER", "ADDSLOTSRANGE", "0", "16383"), b"+OK\r\n")
        wait_until(lambda: b"cluster_state:ok" in d.cmd("CLUSTER", "INFO"), timeout=10, what="cluster ok")
    fd = start_frontdoor(durability="nosync")
    with fd.conn() as c:
        first = info(c, "backends")["backend_primary"]     # lmdb, or the suite's FD_BACKEND
        eq(c.cmd("SET", "a", "on-lmdb"), b"+OK\r\n")
        eq(c.cmd("CONFIG", "SET", "backend", "redis-cluster", "redis-cluster-seeds", "%s:%d" % (HOST, node.port)),
           b"+OK\r\n")
        eq(info(c, "backends")["backend_primary"], "redis-cluster")
        eq(c.cmd("GET", "a"), b"$-1\r\n")
        eq(c.cmd("SET", "a", "on-cluster"), b"+OK\r\n")
        with Conn(node.port) as d:
            eq(d.cmd("GET", "a"), b"$10\r\non-cluster\r\n")
        eq(c.cmd("CONFIG", "SET", "backend", first), b"+OK\r\n")
        eq(c.cmd("GET", "a"), b"$7\r\non-lmdb\r\n")


def run_frontdoor_backends():
    """The backends this frontdoor was built with (its error for an unknown one lists them)."""
    from fdtest import run_frontdoor_expect_exit
    rc, out = run_frontdoor_expect_exit([("backend", "no-such-backend")])
    return out


@T.case
def sighup_reloads_and_rewrite_writes_back():
    need_frontdoor()
    r = start_redis()
    d = make_tempdir("fdtest-conf-")
    conf = os.path.join(d, "frontdoor.conf")
    with open(conf, "w") as f:
        f.write("# a comment that must survive\nbackend lmdb\ndurability nosync\n")
    fd = start_frontdoor(extra_args=["--config", conf])
    # --config after the harness's --port/--dir: the file sets neither
    with fd.conn() as c:
        eq(info(c, "backends")["backend_primary"], "lmdb")
        eq(c.cmd("SET", "here", "lmdb"), b"+OK\r\n")
        with open(conf, "w") as f:
            f.write("# a comment that must survive\nbackend redis\nredis-address %s:%d\ndurability nosync\n" % (HOST, r.port))
        os.kill(fd.pid, signal.SIGHUP)
        wait_until(lambda: info(c, "backends")["backend_primary"] == "redis", what="swapped by SIGHUP")
        eq(c.cmd("GET", "here"), b"$-1\r\n", "now on redis")
        # a backend that cannot be reached: the running one is kept
        with open(conf, "w") as f:
            f.write("backend redis\nredis-address %s:%d\ndurability nosync\n" % (HOST, free_port()))
        os.kill(fd.pid, signal.SIGHUP)
        wait_until(lambda: "does not answer" in fd.log(), what="the failed swap logged")
        eq(c.cmd("GET", "here"), b"$-1\r\n", "still on the first redis")
        eq(c.call("CONFIG", "GET", "redis-address")[1], ("%s:%d" % (HOST, r.port)).encode())
        # a broken file: refused as a whole, the running setup kept. The file
        # asks for a different backend and timeout BEFORE its bad line, so a
        # partial apply (or no check at all) shows
        eq(c.cmd("CONFIG", "SET", "timeout", "0"), b"+OK\r\n")
        refusals = fd.log().count("reload failed, keeping the running configuration")
        with open(conf, "w") as f:
            f.write("backend lmdb\ntimeout 55\nfrobnicate yes\n")
        os.kill(fd.pid, signal.SIGHUP)
        wait_until(lambda: fd.log().count("reload failed, keeping the running configuration") > refusals,
                   what="the broken file's refusal logged")
        check("frobnicate" in fd.log()[-2000:], "the refusal names the bad directive", fd.log()[-2000:])
        eq(info(c, "backends")["backend_primary"], "redis", "backend kept")
        eq(c.call("CONFIG", "GET", "timeout"), [b"timeout", b"0"], "timeout kept")
        eq(c.cmd("GET", "here"), b"$-1\r\n", "still on the first redis")
        eq(c.cmd("PING"), b"+PONG\r\n")
        # CONFIG REWRITE: running values back into the file, comments kept
        with open(conf, "w") as f:
            f.write("# a comment that must survive\nbackend redis\nredis-address %s:%d\ndurability nosync\n" % (HOST, r.port))
        eq(c.cmd("CONFIG", "SET", "backend", "lmdb", "timeout", "77"), b"+OK\r\n")
        eq(c.cmd("CONFIG", "REWRITE"), b"+OK\r\n")
        with open(conf) as f:
            text = f.read()
        check("# a comment that must survive" in text, "comment kept", text)
        check('backend "lmdb"' in text and 'timeout "77"' in text, "running values written", text)
        eq(c.cmd("GET", "here"), b"$4\r\nlmdb\r\n", "back on the lmdb data")
    # the rewritten file is read back: a restart on it has the rewritten values
    # (--config is read where it stands on the command line, so the rewritten
    # file's own port would win over the harness's --port before it: the new
    # port comes after it)
    eq(fd.stop(), 0, "clean exit")
    port = free_port()
    fd.extra_args = ["--config", conf, "--port", str(port)]
    fd.start(port=port)
    with fd.conn() as c:
        eq(info(c, "backends")["backend_primary"], "lmdb", "backend from the rewritten file")
        eq(c.call("CONFIG", "GET", "timeout"), [b"timeout", b"77"], "timeout from the rewritten file")
        eq(c.call("CONFIG", "GET", "durability"), [b"durability", b"nosync"], "durability kept in the file")
        eq(c.cmd("GET", "here"), b"$4\r\nlmdb\r\n", "the lmdb data after a restart on the rewritten file")


if __name__ == "__main__":
    T.main()
