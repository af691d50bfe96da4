#!/usr/bin/python3
"""The redis backend: frontdoor --backend redis --redis-address of a
redis-server this test starts.

(a) differential: a scripted and a seeded random command sequence (all data
    types, and commands frontdoor's own table does not know: XADD, PFADD,
    GEOADD, OBJECT, DEBUG, EVAL, ...) sent to a second, reference redis-server
    directly and through frontdoor→redis; every reply compared byte for byte.
    Again after HELLO 3 (RESP3), and with a client that switches protocol
    mid-pipeline.
(b) pipelining: 10k mixed commands pipelined on each of several connections
    at once; every reply checked in order.
(c) faults: redis-server killed mid-pipeline (errors within ~1 s, frontdoor
    stays up, traffic resumes by itself after a restart on the same port);
    slow backend (DEBUG SLEEP on the real server: commands time out, PING and
    INFO still answer); backend refusing connections at startup.
(d) redis-benchmark's default suite, -P 1 and -P 16, no errors.

FD_SEED=n reproduces the random sequence.
"""
import os
import random
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import (Tests, Diff, Server, start_frontdoor, start_redis, encode, encode_inline, encode_many,
                    parse, norm_sorted, norm_pairs, ttl_close, check, eq, skip, run, wait_until, check_deep_reply_passes,
                    free_port, frontdoor_is_redis, info_fields, Conn, REDIS_BENCHMARK, HOST)

T = Tests(case_timeout=40)
UNAVAILABLE = b"-ERR backend unavailable (redis "


def need_frontdoor():
    if frontdoor_is_redis():
        skip("the binary under test is redis-server: nothing to forward")


def pair(**fd_directives):
    """(backing redis-server, frontdoor --backend redis in front of it)."""
    need_frontdoor()
    r = start_redis(enable_debug_command="yes")
    fd = start_frontdoor(backend="redis", redis_address="%s:%d" % (HOST, r.port), **fd_directives)
    return r, fd


_shared = {}


def shared():
    """reference redis, backing redis, frontdoor: shared by the differential cases."""
    need_frontdoor()
    if not _shared or not all(s.alive() for s in _shared.values()):
        for s in _shared.values():
            s.cleanup()
        _shared["ref"] = start_redis(keep=True, enable_debug_command="yes")
        _shared["back"] = start_redis(keep=True, enable_debug_command="yes")
        _shared["fd"] = start_frontdoor(keep=True, backend="redis",
                                        redis_address="%s:%d" % (HOST, _shared["back"].port))
    return _shared["ref"], _shared["back"], _shared["fd"]


def diff(proto=2):
    ref, back, fd = shared()
    d = Diff(ref.conn(), fd.conn())
    if proto == 3:
        for c in (d.ref, d.fd):
            r = parse(c.cmd("HELLO", "3"))
            check(isinstance(r, dict) and r.get(b"proto") == 3, "HELLO 3 failed", r)
    d.cmd("FLUSHALL")
    return d


# ============================================================ (a) differential

def script():
    """Deterministic commands over every type (replies are the same on two
    fresh redis-servers). Steps: args, or ("sorted"|"pairs", args...)."""
    s = []
    a = s.append
    # strings and keys
    for st in [("SET", "s1", "hello"), ("GET", "s1"), ("APPEND", "s1", " world"), ("STRLEN", "s1"),
               ("GETRANGE", "s1", "0", "4"), ("SETRANGE", "s1", "6", "W"), ("GET", "s1"),
               ("INCR", "n"), ("INCRBY", "n", "41"), ("DECRBY", "n", "2"), ("INCRBYFLOAT", "f", "1.5"),
               ("INCRBYFLOAT", "f", "1e300"), ("INCR", "s1"), ("MSET", "m1", "a", "m2", "b"),
               ("MGET", "m1", "m2", "nokey"), ("MSETNX", "m1", "x", "m3", "y"), ("GETSET", "m1", "z"),
               ("GETDEL", "m2"), ("SETNX", "m2", "q"), ("EXISTS", "m1", "m2", "m3", "nokey"),
               ("TYPE", "m1"), ("RENAME", "m1", "m4"), ("RENAMENX", "m4", "m2"), ("DEL", "m4", "nokey"),
               ("SET", "e", "v", "EX", "100"), ("TTL", "e"), ("PERSIST", "e"), ("TTL", "e"),
               ("EXPIRE", "e", "50", "NX"), ("EXPIRE", "e", "60", "XX"), ("PTTL", "e"),
               ("OBJECT", "ENCODING", "n"), ("OBJECT", "ENCODING", "s1"), ("OBJECT", "REFCOUNT", "s1"),
               ("OBJECT", "ENCODING", "nokey"), ("DEBUG", "SLEEP", "0"), ("DEBUG", "DIGEST-VALUE", "s1"),
               ("MEMORY", "USAGE", "s1"), ("COPY", "s1", "s2"), ("GET", "s2"), ("DUMP", "n"),
               ("LCS", "s1", "s2"), ("SUBSTR", "s1", "1", "3"), ("SET", "big", "x" * 300000),
               ("STRLEN", "big"), ("GET", "big"), ("SETEX", "e2", "100", "v"), ("EXPIRETIME", "nokey"),
               ("UNLINK", "s2"), ("TOUCH", "s1", "s2"), ("DBSIZE",), ("sorted", "KEYS", "*"),
               ("FOOBAR", "x", "y"), ("GET",), ("SET", "a"), ("INCR", "a", "b"),
               ("WAITAOF",), ("OBJECT",), ("OBJECT", "HELP")]:
        a(st)
    # bitmaps, HyperLogLog, geo
    for st in [("SETBIT", "bm", "7", "1"), ("SETBIT", "bm", "100", "1"), ("GETBIT", "bm", "7"),
               ("BITCOUNT", "bm"), ("BITCOUNT", "bm", "0", "0"), ("BITPOS", "bm", "1"),
               ("BITOP", "NOT", "bm2", "bm"), ("GET", "bm2"), ("BITFIELD", "bf", "SET", "u8", "0", "200",
               "INCRBY", "u8", "0", "100", "GET", "u4", "0"), ("BITFIELD_RO", "bf", "GET", "i8", "0"),
               ("PFADD", "hll", "a", "b", "c", "d"), ("PFADD", "hll", "a"), ("PFCOUNT", "hll"),
               ("PFADD", "hll2", "x", "y"), ("PFMERGE", "hll3", "hll", "hll2"), ("PFCOUNT", "hll3"),
               ("GET", "hll"), ("PFCOUNT", "s1"),
               ("GEOADD", "geo", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"),
               ("GEODIST", "geo", "Palermo", "Catania", "km"), ("GEOPOS", "geo", "Palermo", "nope"),
               ("GEOHASH", "geo", "Palermo"), ("GEOSEARCH", "geo", "FROMLONLAT", "15", "37", "BYRADIUS",
               "200", "km", "ASC", "WITHDIST", "WITHCOORD"), ("GEORADIUS", "geo", "15", "37", "100", "km")]:
        a(st)
    # lists
    for st in [("RPUSH", "l", "a", "b", "c", "d", "e"), ("LPUSH", "l", "z"), ("LRANGE", "l", "0", "-1"),
               ("LLEN", "l"), ("LINDEX", "l", "2"), ("LSET", "l", "0", "Z"), ("LINSERT", "l", "BEFORE", "c", "bc"),
               ("LPOS", "l", "c"), ("LREM", "l", "1", "bc"), ("LTRIM", "l", "0", "4"), ("LPOP", "l"),
               ("RPOP", "l", "2"), ("LMOVE", "l", "l2", "LEFT", "RIGHT"), ("RPOPLPUSH", "l", "l2"),
               ("LRANGE", "l2", "0", "-1"), ("LMPOP", "2", "nol", "l2", "LEFT", "COUNT", "5"),
               ("LPUSHX", "nol", "a"), ("LPUSH", "s1", "x"), ("OBJECT", "ENCODING", "l"),
               ("SORT", "l", "ALPHA"), ("RPUSH", "nums", "3", "1", "2"), ("SORT", "nums"),
               ("SORT", "nums", "DESC", "LIMIT", "0", "2")]:
        a(st)
    # hashes
    for st in [("HSET", "h", "f1", "v1", "f2", "v2", "n", "5"), ("HGET", "h", "f1"), ("HMGET", "h", "f1", "x"),
               ("HGETALL", "h"), ("HKEYS", "h"), ("HVALS", "h"), ("HLEN", "h"), ("HEXISTS", "h", "f2"),
               ("HINCRBY", "h", "n", "10"), ("HINCRBYFLOAT", "h", "n", "0.25"), ("HSETNX", "h", "f1", "x"),
               ("HDEL", "h", "f2", "zz"), ("HSTRLEN", "h", "f1"), ("HMSET", "h", "a", "1"),
               ("OBJECT", "ENCODING", "h"), ("HSCAN", "h", "0"), ("HGET", "s1", "x"),
               ("pairs", "HGETALL", "h")]:
        a(st)
    # sets (member order of a hashtable set depends on the server's hash seed: sorted)
    for st in [("SADD", "st", "a", "b", "c"), ("SADD", "st2", "b", "c", "d"), ("SADD", "si", "1", "2", "3"),
               ("SCARD", "st"), ("SISMEMBER", "st", "a"), ("SMISMEMBER", "st", "a", "x"),
               ("sorted", "SMEMBERS", "st"), ("sorted", "SINTER", "st", "st2"), ("sorted", "SUNION", "st", "st2"),
               ("sorted", "SDIFF", "st", "st2"), ("SINTERSTORE", "st3", "st", "st2"), ("SINTERCARD", "2", "st", "st2"),
               ("SMOVE", "st", "st2", "a"), ("SREM", "st", "b", "zz"), ("SMEMBERS", "si"),
               ("OBJECT", "ENCODING", "si"), ("OBJECT", "ENCODING", "st"), ("SADD", "h", "x")]:
        a(st)
    # sorted sets
    for st in [("ZADD", "z", "1", "a", "2", "b", "3.5", "c"), ("ZADD", "z", "INCR", "1", "a"),
               ("ZSCORE", "z", "a"), ("ZMSCORE", "z", "a", "x"), ("ZRANGE", "z", "0", "-1", "WITHSCORES"),
               ("ZREVRANGE", "z", "0", "1"), ("ZRANGEBYSCORE", "z", "(1", "+inf", "WITHSCORES"),
               ("ZRANGEBYLEX", "z", "-", "+"), ("ZRANK", "z", "c"), ("ZCOUNT", "z", "-inf", "+inf"),
               ("ZINCRBY", "z", "0.5", "b"), ("ZPOPMIN", "z"), ("ZPOPMAX", "z", "1"),
               ("ZADD", "z2", "5", "b", "6", "d"), ("ZUNIONSTORE", "zu", "2", "z", "z2", "WEIGHTS", "1", "2"),
               ("ZRANGE", "zu", "0", "-1", "WITHSCORES"), ("ZINTER", "2", "z", "z2", "WITHSCORES"),
               ("ZRANGESTORE", "zr", "zu", "0", "0"), ("ZMPOP", "1", "zu", "MIN"), ("ZCARD", "zu"),
               ("ZSCORE", "nokey", "a"), ("ZADD", "z", "nan", "x"), ("ZADD", "zinf", "inf", "a"),
               ("ZSCORE", "zinf", "a"), ("OBJECT", "ENCODING", "z"), ("ZRANDMEMBER", "nokey")]:
        a(st)
    # streams (explicit ids: '*' depends on the clock)
    for st in [("XADD", "x", "1-1", "f", "v"), ("XADD", "x", "2-1", "f", "w", "g", "z"),
               ("XADD", "x", "2-1", "f", "v"), ("XLEN", "x"), ("XRANGE", "x", "-", "+"),
               ("XREVRANGE", "x", "+", "-", "COUNT", "1"), ("XREAD", "COUNT", "10", "STREAMS", "x", "0"),
               ("XGROUP", "CREATE", "x", "g1", "0"), ("XDEL", "x", "1-1"), ("XTRIM", "x", "MAXLEN", "5"),
               ("XADD", "x", "NOMKSTREAM", "3-0", "a", "b"), ("XADD", "nox", "NOMKSTREAM", "1-0", "a", "b"),
               ("XSETID", "x", "10-0"), ("XADD", "x", "5-0", "a", "b"), ("TYPE", "x")]:
        a(st)
    # scripting
    for st in [("EVAL", "return redis.call('get', KEYS[1])", "1", "n"),
               ("EVAL", "return {1, 2, {3, 'x'}, redis.status_reply('OK')}", "0"),
               ("EVAL", "return redis.error_reply('my error')", "0"),
               ("EVAL", "return 3.99", "0"), ("EVAL", "redis.setresp(3); return redis.call('hgetall', KEYS[1])", "1", "h"),
               ("SCRIPT", "EXISTS", "0000000000000000000000000000000000000000")]:
        a(st)
    return s


def run_steps(d, steps):
    for st in steps:
        norm = None
        if st and st[0] == "sorted":
            norm, st = norm_sorted, st[1:]
        elif st and st[0] == "pairs":
            norm, st = norm_pairs, st[1:]
        if st and st[0].upper() in ("TTL", "PTTL") and len(st) == 2:
            d.cmd(*st, same=ttl_close(2) if st[0].upper() == "TTL" else ttl_close(2500))
        else:
            d.cmd(*st, norm=norm)


@T.case
def differential_scripted_resp2():
    d = diff()
    run_steps(d, script())
    d.finish()


@T.case
def differential_scripted_resp3():
    d = diff(proto=3)
    run_steps(d, script())
    d.finish()


@T.case
def differential_scripted_inline_and_pipelined():
    """The script as inline commands (frontdoor encodes them as multibulk),
    then all of it as one pipeline."""
    d = diff()
    for st in script():
        # TTL/PTTL are compared with a tolerance by the other two cases: two
        # servers can read the clock a millisecond apart
        if st[0] in ("sorted", "pairs", "TTL", "PTTL") or any(" " in x or "'" in x for x in st):
            continue
        data = encode_inline(*st)
        if len(data) > 60000:
            continue
        d.send_compare(data, "inline " + repr(data[:100]))
    d.cmd("FLUSHALL")
    steps = [st for st in script() if st[0] not in ("sorted", "pairs", "TTL", "PTTL")]
    d.pipeline(steps)
    d.finish()


def random_command(rng, k):
    """One random command over a small key space (deterministic replies)."""
    key = lambda p: "%s%d" % (p, rng.randrange(k))
    v = lambda: rng.choice(["", "0", "1", "-7", "3.5", "abc", "x" * rng.randrange(1, 200),
                            "\x00\xff\r\n", str(rng.randrange(-1000, 1000))])
    n = lambda: str(rng.randrange(-5, 6))
    c = rng.randrange(40)
    if c == 0: return ("SET", key("k"), v())
    if c == 1: return ("GET", key("k"))
    if c == 2: return ("INCRBY", key("k"), n())
    if c == 3: return ("APPEND", key("k"), v())
    if c == 4: return ("DEL", key("k"), key("l"))
    if c == 5: return ("LPUSH", key("l"), v(), v())
    if c == 6: return ("RPOP", key("l"))
    if c == 7: return ("LRANGE", key("l"), n(), n())
    if c == 8: return ("LINSERT", key("l"), rng.choice(["BEFORE", "AFTER"]), v(), v())
    if c == 9: return ("HSET", key("h"), v(), v())
    if c == 10: return ("HGETALL", key("h"))
    if c == 11: return ("HINCRBY", key("h"), v(), n())
    if c == 12: return ("HDEL", key("h"), v())
    if c == 13: return ("SADD", key("s"), n(), n())
    if c == 14: return ("SREM", key("s"), n())
    if c == 15: return ("SCARD", key("s"))
    if c == 16: return ("SISMEMBER", key("s"), n())
    if c == 17: return ("ZADD", key("z"), n(), v())
    if c == 18: return ("ZRANGE", key("z"), "0", "-1", "WITHSCORES")
    if c == 19: return ("ZINCRBY", key("z"), rng.choice(["0.5", "1", "-2.25", "1e10"]), v())
    if c == 20: return ("ZREM", key("z"), v())
    if c == 21: return ("XADD", key("x"), "%d-%d" % (rng.randrange(1, 50), rng.randrange(5)), "f", v())
    if c == 22: return ("XRANGE", key("x"), "-", "+", "COUNT", "3")
    if c == 23: return ("XLEN", key("x"))
    if c == 24: return ("PFADD", key("p"), v(), v())
    if c == 25: return ("PFCOUNT", key("p"))
    if c == 26: return ("SETBIT", key("b"), str(rng.randrange(64)), rng.choice("01"))
    if c == 27: return ("BITCOUNT", key("b"))
    if c == 28: return ("GEOADD", key("g"), str(rng.uniform(-170, 170)), str(rng.uniform(-80, 80)), v())
    if c == 29: return ("GEODIST", key("g"), v(), v())
    if c == 30: return ("TYPE", rng.choice([key("k"), key("l"), key("h"), key("z")]))
    if c == 31: return ("OBJECT", "ENCODING", rng.choice([key("k"), key("l"), key("h"), key("s")]))
    if c == 32: return ("EXISTS", key("k"), key("h"), key("z"))
    if c == 33: return ("RENAME", key("k"), key("k"))
    if c == 34: return ("ZSCORE", key("z"), v())
    if c == 35: return ("HMGET", key("h"), v(), v())
    if c == 36: return ("LPOS", key("l"), v())
    if c == 37: return ("INCRBYFLOAT", key("k"), rng.choice(["0.1", "-3", "1e5", "abc"]))
    if c == 38: return ("STRLEN", key("k"))
    return ("EVAL", "return redis.call('type', KEYS[1])", "1", key("k"))


def random_run(proto, n=3000):
    seed = int(os.environ.get("FD_SEED") or random.randrange(1 << 30))
    print("      seed %d (reproduce: FD_SEED=%d)" % (seed, seed))
    rng = random.Random(seed)
    d = diff(proto)
    i = 0
    while i < n:
        batch = [random_command(rng, 8) for _ in range(rng.choice([1, 1, 5, 50, 200]))]
        # a hash with a long value is a hashtable: its order depends on the server's hash seed
        norms = [(norm_pairs, None) if c[0] == "HGETALL" else None for c in batch]
        if d.pipeline(batch, norms=norms) >= 0:
            break
        i += len(batch)
    d.finish()


@T.case
def differential_random_resp2():
    random_run(2)


@T.case
def differential_random_resp3():
    random_run(3)


@T.case
def protocol_switch_mid_pipeline_keeps_order():
    """A client that switches RESP2→RESP3→RESP2 inside one pipeline: its
    commands keep their order at Redis (same backend connection), replies in
    the right protocol."""
    ref, back, fd = shared()
    with fd.conn() as c, fd.conn() as c2:
        c.cmd("FLUSHALL")
        cmds = []
        for i in range(300):
            cmds += [("HELLO", "3"), ("INCR", "ctr"), ("HSET", "h", "f%d" % i, str(i)), ("ZADD", "z", str(i), "m"),
                     ("ZSCORE", "z", "m"), ("HELLO", "2"), ("INCR", "ctr"), ("ZSCORE", "z", "m")]
        c.send_many(cmds)
        # another client in RESP3 on top, on the same backend connections
        c2.cmd("HELLO", "3")
        c2.send_many([("ZSCORE", "z", "m")] * 50)
        got = c.read_n(len(cmds), timeout=20)
        ctr = 0
        for i in range(300):
            r = got[i * 8:(i + 1) * 8]
            check(r[0].startswith(b"%7\r\n"), "HELLO 3 reply", r[0])
            ctr += 1
            eq(r[1], b":%d\r\n" % ctr, "INCR in RESP3 #%d" % i)
            eq(r[3], b":%d\r\n" % (1 if i == 0 else 0), "ZADD #%d" % i)
            eq(r[4], b",%d\r\n" % i, "ZSCORE as a RESP3 double #%d" % i)
            check(r[5].startswith(b"*14\r\n"), "HELLO 2 reply", r[5])
            ctr += 1
            eq(r[6], b":%d\r\n" % ctr, "INCR in RESP2 #%d" % i)
            eq(r[7], b"$%d\r\n%d\r\n" % (len(str(i)), i), "ZSCORE as a RESP2 bulk #%d" % i)
        for r in c2.read_n(50):
            check(r.startswith(b",") or r == b"_\r\n", "RESP3 client got a RESP2 reply", r)


def exchange_halfclose(port, data, wait=3.0):
    c = Conn(port)
    try:
        c.send_raw(data)
        c.sock.shutdown(socket.SHUT_WR)
        return c.read_all_until_close(wait)
    finally:
        c.close()


@T.case
def half_close_and_odd_inline_lines():
    """A client that half-closes gets every reply (they are owed by the
    backend when the EOF is read); inline lines that the parser unescapes in
    place (leading CR, quotes, escapes) are forwarded as what they mean, never
    as rewritten bytes that would break the shared backend connection."""
    ref, back, fd = shared()
    with fd.conn() as c:
        c.cmd("FLUSHALL")
        connects = info_fields(parse(c.cmd("INFO", "backend")))["redis_backend_connects"]
    with ref.conn() as c:
        c.cmd("FLUSHALL")
    streams = [
        encode_many([("SET", "hc%d" % i, "v") for i in range(200)] + [("GET", "hc%d" % i) for i in range(200)]) + b"PING\r\n",
        b"\r*2\r\n$4\r\nECHO\r\n$1\r\ne\r\n*1\r\n$4\r\nPING\r\n",
        b'  SET "q\\x41*" "x y"\r\nGET "q\\x41*"\r\n\t*3 a\r\n*1\r\n$4\r\nPING\r\n',
        b"*2\r\n$4\r\nINCR\r\n$2\r\nz0\r\n*1\r\n$9\r*1\r\n$4\r\nPING\r\n",   # protocol error after a forwarded command
    ]
    for data in streams:
        want = exchange_halfclose(ref.port, data)
        got = exchange_halfclose(fd.port, data)
        eq(got, want, "(replies, closed?) after half-close for %r" % data[:60])
    with fd.conn() as c:
        eq(info_fields(parse(c.cmd("INFO", "backend")))["redis_backend_connects"], connects,
           "the backend connections were never reset")


# ============================================================ refused commands

@T.case
def shared_connection_breakers_refused():
    r, fd = pair()
    with fd.conn() as c:
        # (blocking pops and XREAD/XREADGROUP BLOCK on a lent connection,
        # (P)SUBSCRIBE, MONITOR, RESET: test_blocking.py, test_pubsub.py;
        # MULTI/EXEC/WATCH are served too: proxy/multi.c)
        # (WAIT: frontdoor answers it as a server without replicas, README)
        for cmd, why in [(("COPY", "a", "b", "DB", "1"), "its DB option would name the backend server's "
                                                          "databases (frontdoor exposes one, redis-db there)")]:
            eq(c.cmd(*cmd), ("-ERR '%s' is not supported by frontdoor's redis backend: %s\r\n"
                             % (cmd[0].lower(), why)).encode(), " ".join(cmd))
        # inside MULTI too: the refusal keeps its place in EXEC's reply
        # (the backend's ops.refusal, asked by proxy/multi.c), the block runs
        eq(c.cmd("MULTI"), b"+OK\r\n")
        for cmd in (("SET", "a", "1"), ("COPY", "a", "b", "DB", "1"), ("COPY", "a", "b"), ("GET", "b")):
            eq(c.cmd(*cmd), b"+QUEUED\r\n", " ".join(cmd))
        why = b"its DB option would name the backend server's databases (frontdoor exposes one, redis-db there)"
        eq(c.cmd("EXEC"), b"*4\r\n+OK\r\n-ERR 'copy' is not supported by frontdoor's redis backend: " + why
           + b"\r\n:1\r\n$1\r\n1\r\n")
        eq(c.cmd("DEL", "a", "b"), b":2\r\n")
        # still usable, and XREAD without BLOCK is forwarded
        eq(c.cmd("XADD", "x", "1-0", "a", "b"), b"$3\r\n1-0\r\n")
        eq(c.cmd("XREAD", "STREAMS", "x", "0"), b"*1\r\n*2\r\n$1\r\nx\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n")
        eq(c.cmd("LPUSH", "l", "v"), b":1\r\n")
    # nothing reached the server's blocking machinery
    with r.conn() as d:
        eq(d.cmd("LLEN", "l"), b":1\r\n")
        eq(d.cmd("EXISTS", "k"), b":0\r\n")


# ============================================================ (b) pipelining

@T.case
def pipelined_10k_on_several_connections():
    r, fd = pair()
    nconn, per = 6, 10000
    errors = []

    def worker(i):
        try:
            with fd.conn(timeout=30) as c:
                cmds, want = [], []
                for j in range(per // 5):
                    cmds += [("INCR", "ctr%d" % i), ("SET", "k%d:%d" % (i, j), "v%d" % j),
                             ("GET", "k%d:%d" % (i, j)), ("ECHO", "e%d" % j), ("RPUSH", "l%d" % i, str(j))]
                    want += [b":%d\r\n" % (j + 1), b"+OK\r\n", b"$%d\r\nv%d\r\n" % (len(str(j)) + 1, j),
                             b"$%d\r\ne%d\r\n" % (len(str(j)) + 1, j), b":%d\r\n" % (j + 1)]
                data = encode_many(cmds)
                t = threading.Thread(target=c.send_raw, args=(data,))
                t.start()
                for k, w in enumerate(want):
                    got = c.read(timeout=30)
                    if got != w:
                        errors.append("conn %d reply %d (%r): got %r want %r" % (i, k, cmds[k], got, w))
                        break
                t.join()
        except Exception as e:   # noqa: BLE001
            errors.append("conn %d: %r" % (i, e))

    t0 = time.monotonic()
    ths = [threading.Thread(target=worker, args=(i,)) for i in range(nconn)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    print("      %d x %d pipelined commands in %.2fs" % (nconn, per, time.monotonic() - t0))
    check(not errors, "pipelined replies out of order or wrong", *errors[:5])
    with fd.conn() as c:
        info = info_fields(parse(c.cmd("INFO", "backend")))
        eq(info.get("redis_backend_inflight"), "0", "nothing left in flight")
        check(int(info["redis_backend_forwarded"]) >= nconn * per * 4 // 5, "forwarded count", info)


@T.case
def client_gone_with_replies_in_flight():
    r, fd = pair()
    for _ in range(20):
        c = fd.conn()
        c.send_raw(encode("DEBUG", "SLEEP", "0.01") + encode_many([("INCR", "n")] * 500))
        c.close()
    with fd.conn() as c:
        wait_until(lambda: c.cmd("GET", "n") == b"$5\r\n10000\r\n", timeout=10, what="all INCRs applied")
        eq(c.cmd("PING"), b"+PONG\r\n")


# ============================================================ (c) faults

@T.case
def backend_killed_mid_pipeline_then_restarted():
    r, fd = pair()
    port = r.port
    with fd.conn(timeout=10) as c, fd.conn(timeout=10) as c2:
        eq(c.cmd("SET", "k", "v"), b"+OK\r\n")
        # the server sleeps, so the pipeline is still in flight when it dies
        n = 5000
        c.send_raw(encode("DEBUG", "SLEEP", "0.5") + encode_many([("INCR", "n")] * n))
        time.sleep(0.2)
        t0 = time.monotonic()
        r.kill()
        replies = c.read_n(n + 1, timeout=5)
        dt = time.monotonic() - t0
        print("      %d in-flight replies after the kill in %.3fs" % (n + 1, dt))
        # no timeout involved (the connection closes): 3 s is scheduling room
        check(dt < 3.0, "in-flight requests not failed promptly: %.2fs" % dt)
        bad = [x for x in replies if not x.startswith(UNAVAILABLE)]
        check(not bad, "in-flight replies that are not 'backend unavailable'", bad[:3])
        check(b"Connection" in replies[0] or b"closed" in replies[0], "reason in the error", replies[0])
        # new commands: errors, promptly
        for conn in (c, c2):
            t0 = time.monotonic()
            got = conn.cmd("GET", "k")
            dt = time.monotonic() - t0
            check(got.startswith(UNAVAILABLE) and ("127.0.0.1:%d" % port).encode() in got, "new command", got)
            check(dt < 3.0, "new command not failed promptly: %.2fs" % dt)
        eq(c.cmd("PING"), b"+PONG\r\n")
        check(fd.alive(), "frontdoor died")
        # the same port again: traffic resumes by itself
        t0 = time.monotonic()
        r.start(port=port)
        wait_until(lambda: c.cmd("SET", "k", "again") == b"+OK\r\n" and c2.cmd("GET", "k") == b"$5\r\nagain\r\n",
                   timeout=8, interval=0.05, what="service to resume after the restart")
        print("      resumed %.2fs after the restart" % (time.monotonic() - t0))
        info = info_fields(parse(c.cmd("INFO", "backend")))
        check(int(info["redis_backend_reconnects"]) >= 1, "reconnects counted", info)


@T.case
def slow_backend_times_out_proxy_commands_answer():
    r, fd = pair(backend_timeout=1000)
    with fd.conn(timeout=10) as c, fd.conn(timeout=10) as other, r.conn(timeout=10) as direct:
        eq(c.cmd("SET", "k", "v"), b"+OK\r\n")
        # the backend sleeps 4 s: a reply at ~1 s is the timeout, never the
        # end of the sleep, even with a wide margin
        direct.send("DEBUG", "SLEEP", "4")
        time.sleep(0.1)
        t0 = time.monotonic()
        c.send_many([("GET", "k")] * 10)
        # meanwhile the proxy itself still answers on other connections
        t1 = time.monotonic()
        eq(other.cmd("PING"), b"+PONG\r\n")
        check(b"backend_name:redis" in other.cmd("INFO", "backend"), "INFO backend")
        eq(other.cmd("CONFIG", "GET", "backend-timeout"), b"*2\r\n$15\r\nbackend-timeout\r\n$4\r\n1000\r\n")
        dt_proxy = time.monotonic() - t1
        # blocked behind the backend they would take the 1 s timeout
        check(dt_proxy < 0.8, "proxy-served commands were slow: %.2fs" % dt_proxy)
        got = c.read_n(10, timeout=5)
        dt = time.monotonic() - t0
        print("      timed out after %.3fs (backend-timeout 1000 ms); PING+INFO+CONFIG took %.3fs"
              % (dt, dt_proxy))
        for g in got:
            check(g.startswith(UNAVAILABLE) and b"no reply within 1000 ms" in g, "timeout error", g)
        check(0.85 <= dt <= 3.0, "timeout after %.2fs, want ~1 s (1.05 s plus scheduling; the sleep "
              "ends at 4 s)" % dt)
        eq(direct.read(timeout=8), b"+OK\r\n")   # DEBUG SLEEP done
        wait_until(lambda: c.cmd("GET", "k") == b"$1\r\nv\r\n", timeout=5, what="service after the sleep")
        info = info_fields(parse(c.cmd("INFO", "backend")))
        check(int(info["redis_backend_timeouts"]) >= 1, "timeouts counted", info)


@T.case
def backend_refusing_at_startup():
    need_frontdoor()
    port = free_port()
    t0 = time.monotonic()
    fd = start_frontdoor(backend="redis", redis_address="%s:%d" % (HOST, port))
    print("      frontdoor up in %.2fs with no backend" % (time.monotonic() - t0))
    check("unavailable" in fd.log(), "a warning in the log", fd.log()[-1000:])
    with fd.conn() as c:
        eq(c.cmd("PING"), b"+PONG\r\n")
        t0 = time.monotonic()
        got = c.cmd("GET", "k")
        check(time.monotonic() - t0 < 3.0, "error not prompt (connection refused: no timeout involved)")
        eq(got, b"-ERR backend unavailable (redis 127.0.0.1:%d: Connection refused)\r\n" % port)
        eq(c.cmd("FOO"), got, "passthrough command too")
        r = Server("redis", [("enable-debug-command", "yes")])
        r.start(port=port)
        t0 = time.monotonic()
        wait_until(lambda: c.cmd("SET", "k", "v") == b"+OK\r\n", timeout=8, what="service once redis is up")
        print("      working %.2fs after redis came up" % (time.monotonic() - t0))
        eq(c.cmd("GET", "k"), b"$1\r\nv\r\n")


@T.case
def auth_select_and_unix_socket():
    need_frontdoor()
    r = start_redis(requirepass="s3cret")
    fd = start_frontdoor(backend="redis", redis_address="%s:%d" % (HOST, r.port),
                         redis_password="s3cret", redis_db=3)
    with fd.conn() as c:
        eq(c.cmd("SET", "k", "db3"), b"+OK\r\n")
    with r.conn() as d:
        eq(d.cmd("SELECT", "3"), b"+OK\r\n")
        eq(d.cmd("GET", "k"), b"$3\r\ndb3\r\n")
    bad = start_frontdoor(backend="redis", redis_address="%s:%d" % (HOST, r.port), redis_password="wrong")
    with bad.conn() as c:
        got = c.cmd("GET", "k")
        check(got.startswith(UNAVAILABLE) and b"AUTH failed: WRONGPASS" in got, "wrong password", got)
    # unix socket
    sock = os.path.join(r.dir, "r.sock")
    u = start_redis(unixsocket=sock)
    fdu = start_frontdoor(backend="redis", redis_address=sock)
    with fdu.conn() as c:
        eq(c.cmd("RPUSH", "l", "a", "b"), b":2\r\n")
    with u.conn() as d:
        eq(d.cmd("LRANGE", "l", "0", "-1"), b"*2\r\n$1\r\na\r\n$1\r\nb\r\n")


class FakeResp:
    """A tiny RESP server standing in for an old or broken backend: HELLO is
    an unknown command (Redis < 6), GARBAGE gets a reply that is not RESP,
    GET a null, anything else +OK."""

    def __init__(self):
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind((HOST, 0))
        self.ls.listen(16)
        self.port = self.ls.getsockname()[1]
        self.stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stop:
            try:
                s, _ = self.ls.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(s,), daemon=True).start()

    def _serve(self, s):
        buf = b""
        try:
            while not self.stop:
                data = s.recv(65536)
                if not data:
                    return
                buf += data
                while True:
                    cmd, buf2 = self._parse(buf)
                    if cmd is None:
                        break
                    buf = buf2
                    name = cmd[0].upper()
                    if name == b"HELLO":
                        s.sendall(b"-ERR unknown command 'HELLO'\r\n")
                    elif name == b"GARBAGE":
                        s.sendall(b"?bad\r\n")
                    elif name == b"GET":
                        s.sendall(b"$-1\r\n")
                    else:
                        s.sendall(b"+OK\r\n")
        except OSError:
            pass
        finally:
            s.close()

    @staticmethod
    def _parse(buf):
        if not buf.startswith(b"*") or b"\r\n" not in buf:
            return None, buf
        e = buf.index(b"\r\n")
        n, p, out = int(buf[1:e]), e + 2, []
        for _ in range(n):
            if b"\r\n" not in buf[p:]:
                return None, buf
            e = buf.index(b"\r\n", p)
            ln = int(buf[p + 1:e])
            if len(buf) < e + 2 + ln + 2:
                return None, buf
            out.append(buf[e + 2:e + 2 + ln])
            p = e + 2 + ln + 2
        return out, buf[p:]

    def close(self):
        self.stop = True
        self.ls.close()


@T.case
def deeply_nested_reply_passes_through():
    """Issue 25: a reply Redis itself produces (a self-referencing Lua table,
    cut at Redis's own depth, ~8000 levels) is passed on byte for byte, not
    taken for a protocol error that resets the backend connection."""
    ref, back, fd = shared()
    check_deep_reply_passes(ref.port, fd.port)
    eq(fd.conn().cmd("SET", "after-deep", "1"), b"+OK\r\n")


@T.case
def old_server_without_hello_and_broken_replies():
    """A backend without HELLO: RESP2 clients work, RESP3 clients get an
    error naming why (after the first HELLO failed) instead of breaking the
    shared connection again and again. A reply that is not RESP resets the
    connection with a protocol error; service resumes."""
    need_frontdoor()
    fake = FakeResp()
    try:
        fd = start_frontdoor(backend="redis", redis_address="%s:%d" % (HOST, fake.port), redis_pool_size=1)
        with fd.conn() as c2, fd.conn() as c3:
            eq(c2.cmd("SET", "k", "v"), b"+OK\r\n")
            c3.cmd("HELLO", "3")
            first = c3.cmd("GET", "k")
            check(first.startswith(UNAVAILABLE) and b"HELLO failed: ERR unknown command" in first, "first RESP3 command", first)
            wait_until(lambda: c2.cmd("GET", "k") == b"$-1\r\n", timeout=5, what="RESP2 service after the failed HELLO")
            eq(c3.cmd("GET", "k"), b"-ERR RESP3 is not available through frontdoor's redis backend (redis 127.0.0.1:%d: "
                                   b"HELLO failed: ERR unknown command 'HELLO')\r\n" % fake.port)
            eq(c2.cmd("GET", "k"), b"$-1\r\n", "RESP2 client unaffected")
            got = c2.cmd("GARBAGE")
            check(got.startswith(UNAVAILABLE) and b"protocol error" in got, "a reply that is not RESP", got)
            wait_until(lambda: c2.cmd("SET", "k", "v") == b"+OK\r\n", timeout=5, what="service after the protocol error")
    finally:
        fake.close()


# ============================================================ (d) redis-benchmark

@T.case(timeout=60)
def writes_gather_while_replies_are_due():
    """A pooled connection whose last write awaits replies holds the next requests and writes them
    once those replies are in (docs/redis-backend.md, "Gathering"): a lone client is never held; a
    request held behind a DEBUG SLEEP goes out when the sleep's reply is in (not at the deadline);
    under -c 50 turns are held and every reply is right."""
    r, fd = pair(backend_timeout=2000)
    with fd.conn() as c:
        eq(c.call("CONFIG", "GET", "redis-pool-size")[1], b"1", "one connection by default")
        eq(info_fields(parse(c.cmd("INFO", "backend")))["redis_backend_pool_affinity"], "key",
           "INFO shows the affinity as set, even over one connection")
        for i in range(300):   # one client, one request at a time: nothing in flight when each comes
            eq(c.call("SET", "k%d" % i, "v%d" % i), "OK")
            eq(c.call("GET", "k%d" % i), b"v%d" % i)
        held = lambda: int(info_fields(parse(c.cmd("INFO", "backend")))["redis_backend_writes_held"])
        eq(held(), 0, "a lone client is never held")
        with fd.conn() as a, fd.conn() as b:
            t0 = time.monotonic()
            a.send_raw(encode_many([("DEBUG", "SLEEP", "0.4")]))
            time.sleep(0.1)                      # its write is out, its reply due in 0.3 s
            b.send_raw(encode_many([("INCR", "held")]))
            eq(a.read(timeout=5), b"+OK\r\n")
            eq(b.read(timeout=5), b":1\r\n", "the held request went out once the reply before it was in")
            took = time.monotonic() - t0
            check(0.35 < took < 1.5, "answered after the sleep, long before the 2 s deadline", took)
        check(held() >= 1, "the INCR's turn was held", held())
        before = held()
        rc, out = run(["timeout", "40", REDIS_BENCHMARK, "-h", HOST, "-p", str(fd.port), "-n", "20000",
                       "-c", "50", "-r", "1000", "-t", "set,get,incr", "--csv"], timeout=45)
        check(rc == 0 and "Error" not in out, "redis-benchmark failed (rc %s)" % rc, out[-2000:])
        check(held() > before, "turns held under -c 50", held(), before)
        info = info_fields(parse(c.cmd("INFO", "backend")))
        eq((info["redis_backend_inflight"], info["redis_backend_failed"], info["redis_backend_timeouts"]),
           ("0", "0", "0"), "nothing stuck, failed or timed out")
        eq(c.call("GET", "k299"), b"v299")


@T.case(timeout=50)
def redis_benchmark_default_suite():
    r, fd = pair()
    for p in ("1", "16"):
        t0 = time.monotonic()
        rc, out = run(["timeout", "40", REDIS_BENCHMARK, "-h", HOST, "-p", str(fd.port), "-n", "5000",
                       "-c", "50", "-P", p, "--csv"], timeout=45)
        rows = [l for l in out.splitlines() if l.startswith('"') and not l.startswith('"test"')]
        print("      -P %s: %d tests in %.1fs" % (p, len(rows), time.monotonic() - t0))
        check(rc == 0 and "Error" not in out and "WARNING" not in out, "redis-benchmark -P %s failed (rc %s)" % (p, rc),
              out[-2000:])
        check(len(rows) >= 20, "every default test ran", out[-2000:])


if __name__ == "__main__":
    T.main()
