#!/usr/bin/env python3
"""A/B units and calibration (docs/ab-testing.md, proxy/ab.h).

(a) A MULTI/EXEC and a Lua script are mirrored as one unit: the secondary
    runs them whole and ends with the same data as the primary (read on each
    side directly where it is a redis-server, else with FRONTDOOR AB KEY),
    for the backend pairs redis->lmdb, lmdb->redis, redis->redis,
    mongodb->lmdb (when built); their replies are compared as one. To a
    mongodb secondary scripts and transactions go in the primary's order
    (ab-mirror-order primary: through the outbox).
(b) A unit that diverges is reported with the queued command that differs.
(c) EVALSHA after SCRIPT LOAD on a redis secondary; a secondary that lost
    its scripts (SCRIPT FLUSH behind frontdoor's back) gets the body as EVAL;
    so does one that never saw a script loaded before mirroring started
    (lmdb primary: the body comes from frontdoor's engine).
(d) Split: a transaction goes wholly to one side.
(e) A contended lock (SET NX, a releasing script) stays the same on both sides.
(f) Calibration: reads asked twice of the primary measure the noise per
    command: none for GET/HGETALL/LRANGE, some for SRANDMEMBER and for a
    read-only script around it, whose later mismatches count as noisy.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import (Tests, start_frontdoor, start_redis, check, eq, skip, wait_until, frontdoor_is_redis,
                    info_fields, make_tempdir, Conn, HOST, run_frontdoor_expect_exit, shared_mongo)

T = Tests(case_timeout=60)


def need_frontdoor():
    if frontdoor_is_redis():
        skip("A/B is frontdoor's")


def built(backend):
    rc, out = run_frontdoor_expect_exit([("backend", "no-such-backend")])
    return backend in out


def ab(c):
    return info_fields(c.call("INFO", "ab").decode())


def start_pair(prim, sec, **extra):
    """frontdoor in mirror mode from `prim` to `sec`; returns (fd, {side: redis or None})."""
    kw, servers = dict(ab_mode="mirror"), {}
    for side, name in (("primary", prim), ("secondary", sec)):
        pre = "" if side == "primary" else "ab_"
        key = "backend" if side == "primary" else "ab_secondary"
        kw[key] = name
        servers[side] = None
        if name == "redis":
            servers[side] = start_redis()
            kw[pre + "redis_address"] = "%s:%d" % (HOST, servers[side].port)
        elif name == "mongodb":
            kw[pre + "mongo_uri"] = "mongodb://%s:%d" % (HOST, shared_mongo().port)
            kw[pre + "mongo_database"] = "ab%s%d" % (side, int(time.time() * 1000) % 100000)
        else:
            kw[pre + "dir"] = make_tempdir("fdtest-abu-")
            kw[pre + "durability"] = "nosync"
    kw.update(extra)
    return start_frontdoor(**kw), servers


def settled(c):
    wait_until(lambda: ab(c)["ab_queue"] == "0", what="mirror settled")


PAIRS = [("redis", "lmdb"), ("lmdb", "redis"), ("redis", "redis"), ("mongodb", "lmdb")]

UNIT = [("SET", "u:a", "1"), ("INCR", "u:a"), ("RPUSH", "u:l", "x", "y"), ("HSET", "u:h", "f", "v"),
        ("SADD", "u:s", "m1", "m2"), ("PING",), ("LRANGE", "u:l", "0", "-1"), ("GET", "u:a")]
SCRIPT = "redis.call('SET', KEYS[1], ARGV[1]); redis.call('RPUSH', KEYS[2], ARGV[1]); return redis.call('INCRBY', KEYS[1], 5)"
STATE = [("GET", "u:a"), ("LRANGE", "u:l", "0", "-1"), ("HGETALL", "u:h"), ("SMEMBERS", "u:s"),
         ("GET", "u:sk"), ("LRANGE", "u:sl", "0", "-1"), ("GET", "u:sha")]


@T.case
def exec_and_scripts_mirrored_as_units():
    need_frontdoor()
    for prim, sec in PAIRS:
        if not built(prim) or not built(sec):
            print("  (pair %s->%s: backend not built)" % (prim, sec))
            continue
        fd, servers = start_pair(prim, sec)
        with fd.conn() as c:
            eq(c.cmd("MULTI"), b"+OK\r\n")
            for cmd in UNIT:
                eq(c.cmd(*cmd), b"+QUEUED\r\n")
            eq(c.call("EXEC"), ["OK", 2, 2, 1, 2, "PONG", [b"x", b"y"], b"2"], "%s->%s" % (prim, sec))
            eq(c.call("EVAL", SCRIPT, "2", "u:sk", "u:sl", "10"), 15)
            sha = c.call("SCRIPT", "LOAD", "return redis.call('INCRBY', KEYS[1], ARGV[1])")
            eq(c.call("EVALSHA", sha, "1", "u:sha", "7"), 7)
            eq(c.call("EVALSHA", sha, "1", "u:sha", "7"), 14)
            settled(c)
            a = ab(c)
            eq((a["ab_units"], a["ab_divergences"], a["ab_races"], a["ab_dropped"]), ("1", "0", "0", "0"),
               "%s->%s: %s %r" % (prim, sec, a, c.call("FRONTDOOR", "AB")))
            check(a["ab_cmd_exec"].startswith("compared=1,") and a["ab_cmd_eval"].startswith("compared=1,")
                  and a["ab_cmd_evalsha"].startswith("compared=2,"), "the units compared as one each", a)
            want = [c.call(*q) for q in STATE]
            eq(want, [b"2", [b"x", b"y"], [b"f", b"v"], want[3], b"15", [b"10"], b"14"], "through frontdoor")
            for side in ("primary", "secondary"):
                srv = servers[side]
                if srv is not None:                  # a redis-server: read it directly
                    with Conn(srv.port) as d:
                        got = [d.call(*q) for q in STATE]
                    got[3] = sorted(got[3])
                    eq(got, want[:3] + [sorted(want[3])] + want[4:], "%s->%s: the %s's data" % (prim, sec, side))
            for k in ("u:a", "u:l", "u:h", "u:s", "u:sk", "u:sl", "u:sha"):
                diff = c.call("FRONTDOOR", "AB", "KEY", k)[5]
                check(b"is identical on both sides" in diff, "%s->%s: %s the same on both sides" % (prim, sec, k), diff)
        fd.stop()


def pipelined_by_each(conns, step_cmds, steps=10):
    """Every connection i pipelines step_cmds(i, j) for j < steps in one
    write, all at once; every reply is read, then the A/B layer settles.
    Returns the first connection."""
    for i, c in enumerate(conns):
        cmds = []
        for j in range(steps):
            cmds += step_cmds(i, j)
        c.send_many(cmds)
    for i, c in enumerate(conns):
        c.read_n(steps * len(step_cmds(i, 0)))
    settled(conns[0])
    return conns[0]


@T.case
def scripts_to_a_mongodb_secondary_follow_the_primary_order():
    """ab-mirror-order primary, a redis primary (one pooled connection: its
    order is frontdoor's) and a mongodb secondary, where frontdoor's engine
    runs the script copies: they too go when the primary answered (every
    copy deferred), plain RPUSHes between them queue behind them, so four
    clients' pipelines leave the list in the same order on both sides."""
    need_frontdoor()
    if not built("mongodb"):
        skip("frontdoor built without the MongoDB backend")
    fd, _ = start_pair("redis", "mongodb", redis_pool_size="1", ab_backend_timeout="20000")
    script = "redis.call('RPUSH', KEYS[1], ARGV[1]); return redis.call('INCR', KEYS[2])"
    conns = [fd.conn() for _ in range(4)]
    try:
        c = pipelined_by_each(conns, lambda i, j: [("EVAL", script, "2", "o:l", "o:n", "s%d.%d" % (i, j)),
                                                   ("RPUSH", "o:l", "p%d.%d" % (i, j))])
        a = ab(c)
        eq((a["ab_mirrored"], a["ab_deferred"], a["ab_divergences"], a["ab_races"], a["ab_dropped"]),
           ("80", "80", "0", "0", "0"), "every copy sent when the primary answered: %s %r" % (a, c.call("FRONTDOOR", "AB")))
        check(a["ab_cmd_eval"].startswith("compared=40,divergences=0,"), "the scripts compared", a)
        for k in ("o:l", "o:n"):
            diff = c.call("FRONTDOOR", "AB", "KEY", k)[5]
            check(b"is identical on both sides" in diff, "%s the same on both sides" % k, diff)
    finally:
        for c in conns:
            c.close()


@T.case
def transactions_to_a_mongodb_secondary_follow_the_primary_order():
    """The same with MULTI/EXEC units: each goes to the mongodb secondary
    when the primary answered its EXEC (through the outbox), and the copies
    the primary answers meanwhile wait until the unit's replies are in."""
    need_frontdoor()
    if not built("mongodb"):
        skip("frontdoor built without the MongoDB backend")
    fd, _ = start_pair("redis", "mongodb", redis_pool_size="1", ab_backend_timeout="20000")
    conns = [fd.conn() for _ in range(4)]
    try:
        c = pipelined_by_each(conns, lambda i, j: [("MULTI",), ("RPUSH", "t:l", "m%d.%d" % (i, j)), ("INCR", "t:n"),
                                                   ("EXEC",), ("RPUSH", "t:l", "p%d.%d" % (i, j))])
        a = ab(c)
        eq((a["ab_units"], a["ab_deferred"], a["ab_divergences"], a["ab_races"], a["ab_dropped"]),
           ("40", "80", "0", "0", "0"), "every unit and copy sent when the primary answered: %s %r"
           % (a, c.call("FRONTDOOR", "AB")))
        for k in ("t:l", "t:n"):
            diff = c.call("FRONTDOOR", "AB", "KEY", k)[5]
            check(b"is identical on both sides" in diff, "%s the same on both sides" % k, diff)
    finally:
        for c in conns:
            c.close()
    fd.stop()


@T.case
def a_unit_divergence_names_the_queued_command():
    need_frontdoor()
    fd, servers = start_pair("redis", "redis")
    with fd.conn() as c, Conn(servers["secondary"].port) as sec:
        eq(c.cmd("SET", "d:c", "same"), b"+OK\r\n")
        settled(c)
        eq(sec.cmd("SET", "d:c", "changed-on-the-secondary"), b"+OK\r\n")    # behind frontdoor's back
        for cmd in (("MULTI",), ("SET", "d:a", "1"), ("INCR", "d:b"), ("GET", "d:c"), ("EXEC",)):
            c.call(*cmd)
        wait_until(lambda: len(c.call("FRONTDOOR", "AB")) == 1, what="the divergence kept")
        ms, text, prim, secr, diff = c.call("FRONTDOOR", "AB")[0]
        eq(text, b"EXEC: queued command 3 of 3 differs: GET d:c | MULTI/EXEC: SET d:a 1; INCR d:b; GET d:c")
        eq((prim, secr), (b"$4\r\nsame\r\n", b"$24\r\nchanged-on-the-secondary\r\n"), "that command's replies")
        check(diff.startswith(b'string value: "same" (4 bytes) on the primary'), "the key's diff", diff)
        a = ab(c)
        eq((a["ab_divergences"], a["ab_units"]), ("1", "1"))
        check(a["ab_cmd_exec"] == "compared=1,divergences=1,races=0,noisy=0", "counted under exec", a)
        report = c.call("FRONTDOOR", "REPORT").decode()
        check("EXEC: queued command 3 of 3 differs: GET d:c" in report, "REPORT names it", report)
        # a script is one unit too: its reply differs as a whole
        eq(c.call("EVAL", "return redis.call('GET', KEYS[1])", "1", "d:c"), b"same")
        wait_until(lambda: len(c.call("FRONTDOOR", "AB")) == 2, what="the script's divergence kept")
        eq(c.call("FRONTDOOR", "AB")[0][1], b"EVAL \"return redis.call('GET', KEYS[1])\" 1 d:c")


@T.case
def evalsha_after_script_load_on_a_redis_secondary():
    need_frontdoor()
    body = "return redis.call('INCRBY', KEYS[1], ARGV[1])"
    for prim in ("redis", "lmdb"):
        fd, servers = start_pair(prim, "redis")
        with fd.conn() as c, Conn(servers["secondary"].port) as sec:
            sha = c.call("SCRIPT", "LOAD", body)
            settled(c)
            eq(sec.call("SCRIPT", "EXISTS", sha), [1], "%s->redis: SCRIPT LOAD reached the secondary" % prim)
            eq(c.call("EVALSHA", sha, "1", "n", "2"), 2)
            settled(c)
            eq(sec.call("GET", "n"), b"2", "the secondary ran EVALSHA")
            # the secondary lost its scripts (a restart): the body goes as EVAL
            eq(sec.cmd("SCRIPT", "FLUSH"), b"+OK\r\n")
            eq(c.call("EVALSHA", sha, "1", "n", "3"), 5)
            settled(c)
            wait_until(lambda: sec.call("GET", "n") == b"5", what="the secondary ran it as EVAL")
            a = ab(c)
            eq((a["ab_noscript_resent"], a["ab_divergences"], a["ab_compared"]), ("1", "0", "3"), a)
        fd.stop()


@T.case
def evalsha_of_a_script_loaded_before_mirroring():
    # lmdb primary: the script is in frontdoor's engine, loaded while A/B was
    # off; the redis secondary answers NOSCRIPT and gets the engine's body
    need_frontdoor()
    body = "return redis.call('INCRBY', KEYS[1], ARGV[1])"
    fd, servers = start_pair("lmdb", "redis", ab_mode="off")
    with fd.conn() as c, Conn(servers["secondary"].port) as sec:
        sha = c.call("SCRIPT", "LOAD", body)
        eq(c.cmd("CONFIG", "SET", "ab-mode", "mirror"), b"+OK\r\n")
        eq(sec.call("SCRIPT", "EXISTS", sha), [0], "the secondary never saw the script")
        eq(c.call("EVALSHA", sha.upper(), "1", "m", "4"), 4)
        settled(c)
        wait_until(lambda: sec.call("GET", "m") == b"4", what="the secondary ran it as EVAL")
        eq(sec.call("SCRIPT", "EXISTS", sha), [1], "and keeps it")
        a = ab(c)
        eq((a["ab_noscript_resent"], a["ab_divergences"]), ("1", "0"), a)
    fd.stop()


@T.case
def split_sends_a_transaction_wholly_to_one_side():
    need_frontdoor()
    fd, servers = start_pair("redis", "redis", ab_mode="split", ab_split_fraction="0.5")
    with fd.conn() as c, Conn(servers["primary"].port) as p, Conn(servers["secondary"].port) as s:
        for i in range(40):
            # the second key hashes elsewhere: it follows the first
            for cmd in (("MULTI",), ("SET", "t%d" % i, "v"), ("SET", "other%d" % (i * 7919), "w"), ("EXEC",)):
                c.call(*cmd)
        sides = []
        for i in range(40):
            on_p = (p.call("EXISTS", "t%d" % i, "other%d" % (i * 7919)), s.call("EXISTS", "t%d" % i, "other%d" % (i * 7919)))
            check(on_p in ((2, 0), (0, 2)), "transaction %d wholly on one side" % i, on_p)
            sides.append(on_p[0] == 2)
        check(5 < sum(sides) < 35, "both sides used", sum(sides))
        eq(int(ab(c)["ab_split_secondary"]), 40 - sum(sides))


@T.case
def a_contended_lock_stays_the_same_on_both_sides():
    """Four clients take and release one lock (SET NX PX, then a script that
    deletes it if the token is theirs, as redis-py's lock()). With one
    connection to redis-server the primary's order is known exactly: every
    copy, the scripts' included, must reach the secondary in it (a release
    sent ahead of a failed SET NX left the secondary with another holder)."""
    need_frontdoor()
    import threading
    fd, servers = start_pair("redis", "lmdb", redis_pool_size="1")
    release = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
    errors = []

    def worker(n):
        try:
            with fd.conn() as c:
                for i in range(60):
                    token = "t%d-%d" % (n, i)
                    while c.call("SET", "lock", token, "NX", "PX", "5000") != "OK":
                        pass
                    c.call("INCR", "counter")
                    eq(c.call("EVAL", release, "1", "lock", token), 1)
        except Exception as e:                   # reported below
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    check(not errors, "workers", errors[:1])
    with fd.conn() as c:
        settled(c)
        a = ab(c)
        eq(a["ab_divergences"], "0", "%s %r" % (a, c.call("FRONTDOOR", "AB")[:2]))
        eq(c.call("GET", "counter"), b"240")
        check(b"identical on both sides" in c.call("FRONTDOOR", "AB", "KEY", "counter")[5], "the counter agrees")


@T.case
def calibration_measures_noise_per_command():
    need_frontdoor()
    fd, servers = start_pair("redis", "lmdb")
    rnd = "return redis.call('SRANDMEMBER', KEYS[1], 3)"
    with fd.conn() as c:
        c.call("SADD", "s", *["m%d" % i for i in range(50)])
        c.call("HSET", "h", "a", "1", "b", "2")
        c.call("RPUSH", "l", "1", "2", "3")
        c.call("SET", "k", "v")
        eq(c.cmd("FRONTDOOR", "AB", "CALIBRATE", "250"), b"+OK\r\n")
        mirrored0 = int(ab(c)["ab_mirrored"])
        for _ in range(40):
            c.call("GET", "k")
            c.call("HGETALL", "h")
            c.call("LRANGE", "l", "0", "-1")
            c.call("SRANDMEMBER", "s", "3")
            c.call("EVAL_RO", rnd, "1", "s")
        c.call("SET", "k", "w")                     # a write during calibration: still mirrored
        settled(c)
        a = ab(c)
        eq(a["ab_calibrate_left"], "50")
        eq(a["ab_calibrated"], "200")
        eq(int(a["ab_mirrored"]) - mirrored0, 1, "reads went to the primary twice, the write to the secondary")
        for cmd in ("get", "hgetall", "lrange"):
            eq(a["ab_noise_%s" % cmd], "calibrated=40,noise=0,noisy=no", cmd)
        for cmd in ("srandmember", "eval_ro"):
            f = dict(x.split("=") for x in a["ab_noise_%s" % cmd].split(","))
            check(int(f["noise"]) >= 30 and f["noisy"] == "yes", "%s is noisy" % cmd, a)
        eq(c.cmd("FRONTDOOR", "AB", "CALIBRATE", "200"), b"+OK\r\n")   # a new measurement
        for _ in range(40):
            c.call("EVAL_RO", rnd, "1", "s")
            c.call("GET", "k")
        settled(c)
        eq(c.cmd("FRONTDOOR", "AB", "CALIBRATE", "0"), b"+OK\r\n")   # ends it, keeps what it measured
        eq(ab(c)["ab_noise_get"], "calibrated=40,noise=0,noisy=no")
        # now mirrored again: the script's mismatches are noise, not divergences
        for _ in range(20):
            c.call("EVAL_RO", rnd, "1", "s")
        settled(c)
        a = ab(c)
        check(int(a["ab_noisy"]) >= 15 and a["ab_divergences"] == "0", "mismatches counted as noisy", a)
        check(a["ab_cmd_eval_ro"].startswith("compared=20,divergences=0,races=0,noisy="), "per command", a)
        report = c.call("FRONTDOOR", "REPORT").decode()
        check("noise measured by calibration" in report and "noisy %s" % a["ab_noisy"] in report, "REPORT", report)
        err = c.call("FRONTDOOR", "AB", "CALIBRATE", "-1")
        check(str(err).startswith("ERR"), "a negative count is refused", err)


if __name__ == "__main__":
    T.main()
