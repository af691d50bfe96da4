#!/usr/bin/python3
"""SLOWLOG, LATENCY, INFO errorstats / rejected_calls, SWAPDB and MOVE
(proxy/slowlog.h), against a real redis-server where the reply is
deterministic.

(a) replies Redis and frontdoor give alike, byte for byte in RESP2 and RESP3:
    HELP texts, errors, SLOWLOG LEN/RESET, an empty LATENCY, SWAPDB 0 0,
    MOVE k 0 and the argument errors.
(b) slowlog-log-slower-than 0 logs every command: entry shape (id, time,
    µs, args, this connection's ip:port, its name), newest first, GET count
    and -1; the arguments kept equal Redis's (32 at most, 128 bytes each,
    AUTH redacted); slowlog-max-len trims; EXEC is not logged, its commands
    are; a negative threshold turns it off.
(c) latency-monitor-threshold 1 and a Lua busy loop: LATEST/HISTORY hold a
    "command" sample >= 1 ms; the default slow log threshold logs it and not
    a PING; LATENCY RESET; DOCTOR speaks of it.
(d) errorstats after WRONGTYPE (also inside EXEC), unknown-command and
    arity errors: the same section as redis-server's; rejected_calls and
    failed_calls of commandstats as Redis 7.0 counts them.
(e) the redis backend (asynchronous completion): entries and errorstats.
(f) the threshold the core tests inline follows CONFIG SET and a failed
    CONFIG SET's rollback.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import (Tests, Diff, start_frontdoor, start_redis, check, eq, parse, Err, skip,
                    frontdoor_is_redis, info_fields, to_str)

T = Tests()
BUSY = "local i=0 while i<%d do i=i+1 end return i"


def need():
    if frontdoor_is_redis():
        skip("the binary under test is redis-server")


def pair(**fd_directives):
    ref = start_redis(databases=1)
    fd = start_frontdoor(durability="nosync", **fd_directives)
    return ref, fd


def entries(c, n=-1):
    return c.call("SLOWLOG", "GET", str(n))


def laddr(c):
    h, p = c.sock.getsockname()[:2]
    return ("%s:%d" % (h, p)).encode()


@T.case
def same_replies_as_redis():
    need()
    ref, fd = pair()
    for resp3 in (False, True):
        d = Diff(ref.conn(), fd.conn())
        if resp3:
            for c in (d.ref, d.fd):
                check(c.cmd("HELLO", "3").startswith(b"%"), "HELLO 3")
        for args in [("SLOWLOG", "HELP"), ("SLOWLOG", "RESET"), ("SLOWLOG", "LEN"),
                     ("SLOWLOG", "GET", "-2"), ("SLOWLOG", "GET", "x"), ("SLOWLOG", "GET", "1", "2"),
                     ("SLOWLOG", "LEN", "1"), ("SLOWLOG", "RESET", "1"), ("SLOWLOG", "foo"), ("SLOWLOG",),
                     ("LATENCY", "HELP"), ("LATENCY", "foo"), ("LATENCY", "HISTORY"),
                     ("LATENCY", "LATEST"), ("LATENCY", "HISTORY", "command"), ("LATENCY", "RESET"),
                     ("LATENCY", "RESET", "command", "nosuch"), ("LATENCY", "GRAPH", "command"),
                     ("SWAPDB", "0", "0"), ("SWAPDB", "x", "0"), ("SWAPDB", "0", "x"), ("SWAPDB", "0"),
                     ("MOVE", "k", "0"), ("MOVE", "k", "x"), ("MOVE", "k"),
                     ("CONFIG", "SET", "slowlog-log-slower-than", "-2"),
                     ("CONFIG", "GET", "slowlog-max-len"), ("CONFIG", "GET", "slowlog-log-slower-than"),
                     ("CONFIG", "GET", "latency-monitor-threshold")]:
            d.cmd(*args)
        d.finish()
        # other databases: Redis (databases 1) says out of range; frontdoor says why
        with fd.conn() as c:
            for args in (("SWAPDB", "0", "1"), ("SWAPDB", "3", "0"), ("MOVE", "k", "1")):
                r = c.cmd(*args)
                check(r.startswith(b"-ERR DB index is out of range") and b"one database" in r, args, r)


@T.case
def every_command_logged_with_its_shape():
    need()
    ref, fd = pair(slowlog_log_slower_than=0)
    check(ref.conn().cmd("CONFIG", "SET", "slowlog-log-slower-than", "0") == b"+OK\r\n", "ref config")
    with fd.conn() as c:
        eq(c.call("SLOWLOG", "RESET"), "OK")
        eq(c.call("SLOWLOG", "LEN"), 1, "the RESET itself is logged")
        c.call("CLIENT", "SETNAME", "nm")
        c.call("SET", "k", "v")
        t0 = int(time.time())
        e = entries(c)[:3]
        eq([x[3] for x in e], [[b"SET", b"k", b"v"], [b"CLIENT", b"SETNAME", b"nm"], [b"SLOWLOG", b"LEN"]])
        for x in e:
            eq(len(x), 6, "entry length")
            check(all(isinstance(v, int) for v in x[:3]), "id, time, µs are integers", x)
            check(abs(x[1] - t0) <= 2, "unix time", x)
            check(0 <= x[2] < 1000000, "µs", x)
            eq(x[4], laddr(c), "client address")
        eq([x[5] for x in e], [b"nm", b"nm", b""], "client name as it was after the command")
        eq(c.call("SLOWLOG", "LEN"), 5, "RESET, LEN, SETNAME, SET, GET")
        eq([x[0] for x in e], [e[2][0] + 2, e[2][0] + 1, e[2][0]], "ids, newest first")
        eq(len(c.call("SLOWLOG", "GET")), 6, "default count 10: six so far (a command is logged after its reply)")
        eq(len(c.call("SLOWLOG", "GET", "2")), 2, "GET 2")
        eq(c.call("SLOWLOG", "GET", "0"), [], "GET 0")
        # MULTI/EXEC: the queued command is logged, EXEC is not
        c.call("SLOWLOG", "RESET")
        c.send_many([("MULTI",), ("INCR", "n"), ("EXEC",)])
        c.read_n(3)
        eq([x[3][0] for x in entries(c)], [b"INCR", b"MULTI", b"SLOWLOG"], "EXEC not logged")
        # off: a negative threshold
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "-1")
        c.call("SLOWLOG", "RESET")
        c.call("PING")
        eq(c.call("SLOWLOG", "LEN"), 0, "off")


@T.case
def threshold_follows_config_set_and_rollback():
    """The core tests the threshold inline (proxy/hooks.h exec_slow,
    px_hook.slow_ns): it must follow CONFIG SET, and a CONFIG SET that
    fails and rolls back."""
    need()
    fd = start_frontdoor(durability="nosync")          # the default threshold (10 ms)
    with fd.conn() as c:
        c.call("SET", "k", "v")
        c.call("SLOWLOG", "RESET")
        c.call("GET", "k")
        eq([x[3] for x in entries(c)], [], "a fast GET under the default threshold")
        eq(c.call("CONFIG", "SET", "slowlog-log-slower-than", "0"), "OK")
        c.call("GET", "k")
        eq(entries(c)[0][3], [b"GET", b"k"], "logged once the threshold is 0")
        r = c.cmd("CONFIG", "SET", "slowlog-log-slower-than", "-1", "maxclients", "notanumber")
        check(r.startswith(b"-ERR CONFIG SET failed"), r)
        eq(c.call("CONFIG", "GET", "slowlog-log-slower-than"), [b"slowlog-log-slower-than", b"0"], "rolled back")
        c.call("GET", "k")
        eq(entries(c)[0][3], [b"GET", b"k"], "still logged after the rollback")
        eq(c.call("CONFIG", "SET", "slowlog-log-slower-than", "-1"), "OK")
        c.call("SLOWLOG", "RESET")
        c.call("GET", "k")
        eq(c.call("SLOWLOG", "LEN"), 0, "off")


@T.case
def arguments_kept_as_redis_keeps_them():
    need()
    ref, fd = pair(slowlog_log_slower_than=0)
    rc, fc = ref.conn(), fd.conn()
    rc.cmd("CONFIG", "SET", "slowlog-log-slower-than", "0")
    cmds = [("SET", "big", "x" * 200), ("RPUSH", "l") + tuple("a%d" % i for i in range(40)),
            ("AUTH", "secret"), ("HELLO", "2", "AUTH", "default", "secret"),
            ("ECHO", "y" * 128), ("ECHO", "z" * 129), ("RPUSH", "m") + tuple("b%d" % i for i in range(30))]
    got = {}
    for name, c in (("ref", rc), ("fd", fc)):
        c.call("SLOWLOG", "RESET")
        for a in cmds:
            c.cmd(*a)
        got[name] = [x[3] for x in entries(c, len(cmds))]
    eq(got["fd"], got["ref"], "arguments as Redis keeps them")
    e = got["fd"][::-1]
    eq(e[0][2], b"x" * 128 + b"... (72 more bytes)", "cut at 128 bytes")
    eq(len(e[1]), 32, "32 arguments at most")
    eq(e[1][31], b"... (11 more arguments)", "the rest counted")
    eq(e[2], [b"AUTH", b"(redacted)"], "AUTH redacted")
    # a backend's credential rows (storage/option.h FD_OPT_SECRET), any case, ab- twins too
    fc.call("SLOWLOG", "RESET")
    eq(fc.call("CONFIG", "SET", "AB-Redis-Password", "hunter2", "ab-mongo-uri", "mongodb://u:pw@h",
               "ab-redis-user", "shown"), "OK")
    eq(entries(fc, 1)[0][3], [b"CONFIG", b"SET", b"AB-Redis-Password", b"(redacted)", b"ab-mongo-uri",
                              b"(redacted)", b"ab-redis-user", b"shown"], "backend secrets redacted")
    # max-len trims, oldest first; lowering it takes effect at the next entry
    for name, c in (("ref", rc), ("fd", fc)):
        c.call("CONFIG", "SET", "slowlog-max-len", "3")
        for i in range(10):
            c.call("SET", "t%d" % i, "v")
        got[name] = c.call("SLOWLOG", "LEN"), [x[3] for x in entries(c)]
    eq(got["fd"], got["ref"], "max-len 3")
    eq(got["fd"][0], 3, "trimmed to 3")
    eq(fc.call("CONFIG", "SET", "slowlog-max-len", "0"), "OK")
    fc.call("SLOWLOG", "RESET")
    fc.call("PING")
    eq(fc.call("SLOWLOG", "LEN"), 0, "max-len 0: nothing kept")


@T.case
def latency_monitor_and_default_threshold():
    need()
    fd = start_frontdoor(durability="nosync", latency_monitor_threshold=1)
    with fd.conn() as c:
        eq(c.call("SLOWLOG", "RESET"), "OK")
        eq(c.call("LATENCY", "RESET"), 0)
        t0 = time.monotonic()
        eq(c.call("EVAL", BUSY % 20000000, "0"), 20000000)
        ms = (time.monotonic() - t0) * 1000
        check(ms >= 20, "the script is slow enough to test with", ms)
        c.call("PING")
        latest = c.call("LATENCY", "LATEST")
        ev = {to_str(x[0]): x for x in latest}
        check("command" in ev, "a 'command' event", latest)
        name, t, last, mx = ev["command"]
        check(abs(t - time.time()) <= 3 and 10 <= last <= ms + 5 and mx >= last, "LATEST", latest)
        hist = c.call("LATENCY", "HISTORY", "command")
        check(len(hist) >= 1 and [t, last] in hist, "HISTORY", hist, latest)
        check(b"command" in c.call("LATENCY", "DOCTOR"), "DOCTOR names the event")
        e = entries(c)
        eq([x[3][0] for x in e], [b"EVAL"], "the default 10 ms threshold logs the script, not PING")
        check(e[0][2] >= 10000, "its duration in µs", e)
        eq(c.call("LATENCY", "RESET", "command"), 1)
        check("command" not in [to_str(x[0]) for x in c.call("LATENCY", "LATEST")], "reset")
        c.call("CONFIG", "SET", "latency-monitor-threshold", "0")
        c.call("EVAL", BUSY % 5000000, "0")
        check("command" not in [to_str(x[0]) for x in c.call("LATENCY", "LATEST")], "off: not sampled")
        check(b"disabled" in c.call("LATENCY", "DOCTOR"), "DOCTOR says it is off")


def errors_workload(c):
    c.call("CONFIG", "RESETSTAT")
    c.call("SET", "s", "x")
    out = [c.cmd("LPUSH", "s", "a"), c.cmd("NOSUCHCMD", "a"), c.cmd("GET"), c.cmd("GET", "s")]
    c.send_many([("MULTI",), ("LPUSH", "s", "b"), ("EXEC",)])
    out += c.read_n(3)
    sec = to_str(c.call("INFO", "errorstats"))
    cs = info_fields(c.call("INFO", "commandstats"))
    return out, sec, cs


@T.case
def errorstats_as_redis():
    need()
    ref, fd = pair()
    r, f = errors_workload(ref.conn()), errors_workload(fd.conn())
    eq(f[0], r[0], "the replies")
    eq(f[1], r[1], "INFO errorstats")
    check("errorstat_WRONGTYPE:count=2" in f[1] and "errorstat_ERR:count=2" in f[1], "counts", f[1])
    strip = lambda v: ",".join(p for p in v.split(",") if p.split("=")[0] in ("calls", "rejected_calls"))
    eq(strip(f[2]["cmdstat_get"]), strip(r[2]["cmdstat_get"]), "GET: one call, one rejected")
    eq(strip(f[2]["cmdstat_lpush"]), strip(r[2]["cmdstat_lpush"]), "LPUSH calls")
    with fd.conn() as c:
        c.call("CONFIG", "RESETSTAT")
        check("errorstat_" not in to_str(c.call("INFO", "errorstats")), "RESETSTAT clears it")
        check("# Errorstats" in to_str(c.call("INFO")), "in the default INFO")


@T.case
def redis_backend_async_completion():
    need()
    fd = start_frontdoor(backend="redis", slowlog_log_slower_than=0)
    with fd.conn() as c:
        c.call("CLIENT", "SETNAME", "rb")
        c.call("CONFIG", "RESETSTAT")
        c.call("SLOWLOG", "RESET")
        c.send_many([("SET", "k", "v"), ("GET", "k"), ("LPUSH", "k", "x")])
        r = c.read_n(3)
        check(r[2].startswith(b"-WRONGTYPE"), "backend's error", r)
        e = entries(c, 4)
        eq([x[3] for x in e], [[b"LPUSH", b"k", b"x"], [b"GET", b"k"], [b"SET", b"k", b"v"], [b"SLOWLOG", b"RESET"]])
        check(all(x[4] == laddr(c) and x[5] == b"rb" for x in e), "client", e)
        check("errorstat_WRONGTYPE:count=1" in to_str(c.call("INFO", "errorstats")), "errorstats")
        check(c.cmd("MOVE", "k", "1").startswith(b"-ERR DB index is out of range"), "MOVE refused")
        eq(c.cmd("SWAPDB", "0", "0"), b"+OK\r\n")


if __name__ == "__main__":
    T.main()
