#!/usr/bin/python3
"""test_mongodb — the MongoDB backend against the test server
tests/mongo/server.py (mongomock over mockupdb: an EMULATOR; every figure
printed here is the emulator's, never MongoDB's).

  * faults: the server down at start-up (frontdoor starts, commands fail with
    "-ERR backend unavailable" within backend-timeout, service resumes when
    the server appears); the server killed under load (errors within the
    timeout, no crash, no reply out of order, recovery after a restart);
  * order: pipelined commands on many keys, from several clients at once,
    come back in request order with the values a per-client model predicts;
  * the commands the shared matrix covers only lightly (sorted sets by
    rank, score and lex with every option, ZPOP*, ZREMRANGEBY*, *SCAN,
    HRANDFIELD, SPOP, SRANDMEMBER, LINSERT, LPOS, LMOVE, RPOPLPUSH, S*STORE,
    SINTERCARD) compared reply for reply with a real redis-server, in RESP2
    and RESP3, on small and on bigger (> 128 elements) collections;
  * data: binary keys and values (NUL, 0xff, CR LF), hash fields with any
    bytes ('.', '$', NUL), Int64 limits, INCR
    overflow errors, expired keys never returned (the emulator's TTL sweep is
    a minute away);
  * redis-benchmark -n 2000 -c 20 -t set,get,incr,mset,ping: no error reply;
  * INFO says which server answered and that it is an emulator;
  * the write concern follows durability / mongo-w / mongo-j / mongo-wtimeout.
"""

import os
import random
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import (Tests, Conn, Err, parse, check, eq,  # noqa: E402
                    free_port, missing_prerequisite, MongoEmulator, need_mongodb, start_mongo_frontdoor,
                    REDIS_BENCHMARK, wait_until, start_redis, Diff, norm_sorted, norm_pairs, ttl_close,
                    raw_elements, diff_pair)

T = Tests("test_mongodb.py", case_timeout=50)


def emulator(port=0):
    need_mongodb()
    return MongoEmulator(port).start()


def fd(emu=None, uri=None, **kw):
    # only the fault cases test the timeout, with their own value
    return start_mongo_frontdoor(uri or emu.uri, **kw)


def unavailable(r):
    return r.startswith(b"-ERR backend unavailable")


# ------------------------------------------------------------------ faults

@T.case
def server_down_at_startup_then_up():
    port = free_port()          # nothing listens there yet
    s = fd(uri="mongodb://127.0.0.1:%d" % port, backend_timeout=500)
    c = s.conn(timeout=10)
    eq(c.cmd("PING"), b"+PONG\r\n", "frontdoor answers while MongoDB is down")
    t0 = time.monotonic()
    r = c.cmd("SET", "k", "v")
    dt = time.monotonic() - t0
    check(unavailable(r), "SET while the server is down", r)
    # (margins: the timeout, plus room for a loaded 2-core CI that a
    # libmongoc server-selection wake-up and the loop's turn may need)
    check(dt < 0.5 + 1.5, "the error took %.3fs; backend-timeout is 0.5s" % dt)
    dt1 = dt
    # several at once: each within the timeout, in order
    c.send_many([("SET", "k%d" % i, i) for i in range(20)])
    t0 = time.monotonic()
    for i in range(20):
        r = c.read()
        check(unavailable(r), "pipelined SET %d" % i, r)
    dt = time.monotonic() - t0
    check(dt < 0.5 + 2.0, "20 pipelined errors took %.3fs (each within the timeout, not 20 x)" % dt)
    print("      server down: one error in %.0f ms, 20 pipelined in %.0f ms (backend-timeout 500 ms)"
          % (dt1 * 1000, dt * 1000))
    emu = emulator(port)
    t0 = time.monotonic()
    wait_until(lambda: c.cmd("SET", "k", "v") == b"+OK\r\n", timeout=10, interval=0.1,
               what="SET to work once the server is up")
    print("      server up: service back after %.2f s" % (time.monotonic() - t0))
    eq(c.cmd("GET", "k"), b"$1\r\nv\r\n")
    emu.kill()


@T.case
def server_killed_under_load_then_restarted():
    emu = emulator()
    s = fd(emu, backend_timeout=1000)
    stop = threading.Event()
    problems = []
    stats = {"ok": 0, "unavail": 0, "slowest_err": 0.0}

    def load(wid):
        try:
            c = Conn(s.port, timeout=15)
            n = 0
            while not stop.is_set():
                k = "w%d:%d" % (wid, n % 50)
                c.send_many([("SET", k, n), ("GET", k), ("INCR", "ctr%d" % wid)])
                t0 = time.monotonic()
                rs = [c.read() for _ in range(3)]
                dt = time.monotonic() - t0
                if rs[0] == b"+OK\r\n":
                    stats["ok"] += 1
                    if not unavailable(rs[1]) and rs[1] != b"$%d\r\n%d\r\n" % (len(str(n)), n):
                        problems.append("GET after SET %s=%d gave %r" % (k, n, rs[1]))
                elif unavailable(rs[0]):
                    stats["unavail"] += 1
                    stats["slowest_err"] = max(stats["slowest_err"], dt)
                else:
                    problems.append("SET gave %r" % rs[0])
                for r in rs[1:]:
                    if not (r.startswith(b"$") or r.startswith(b":") or unavailable(r)):
                        problems.append("unexpected reply %r" % r)
                n += 1
        except Exception as e:        # noqa: BLE001
            problems.append("writer %d: %r" % (wid, e))

    ths = [threading.Thread(target=load, args=(i,)) for i in range(4)]
    for t in ths:
        t.start()
    time.sleep(1.0)
    ok_before = stats["ok"]
    emu.kill()
    t_kill = time.monotonic()
    time.sleep(2.5)
    c = s.conn(timeout=10)
    eq(c.cmd("PING"), b"+PONG\r\n", "frontdoor alive with the server gone")
    t0 = time.monotonic()
    r = c.cmd("GET", "w0:1")
    dt = time.monotonic() - t0
    check(unavailable(r), "GET with the server gone", r)
    check(dt < 1.0 + 2.0, "the error took %.3fs; backend-timeout is 1s (+2 s scheduling room)" % dt)
    emu.restart()
    t_up = time.monotonic()
    wait_until(lambda: stats["ok"] > ok_before and c.cmd("SET", "x", "1") == b"+OK\r\n",
               timeout=15, interval=0.1, what="service back after the restart")
    back = time.monotonic() - t_up
    stop.set()
    for t in ths:
        t.join(20)
    check(not problems, "replies under load", *problems[:10])
    check(stats["unavail"] > 0, "some commands failed while the server was down", stats)
    check(stats["slowest_err"] < 1.0 * 2 + 1.0,
          "a pipelined batch of 3 failed within ~timeout each (%.2fs)" % stats["slowest_err"])
    check(s.alive(), "frontdoor survived")
    print("      killed at +1s: %d batches ok, %d failed; slowest failed batch %.0f ms; "
          "service back %.2f s after the restart (down %.1f s)"
          % (stats["ok"], stats["unavail"], stats["slowest_err"] * 1000, back, t_up - t_kill))


# ------------------------------------------------------------------ order

@T.case
def pipelined_mixed_keys_in_order():
    emu = emulator()
    s = fd(emu, mongo_workers=4)
    problems = []

    def client(cid):
        rnd = random.Random(cid)
        model = {}
        c = Conn(s.port, timeout=30)
        cmds, want = [], []
        for i in range(300):
            k = "c%d:k%d" % (cid, rnd.randrange(20))
            op = rnd.randrange(6)
            if op == 0:
                v = "v%d" % i
                cmds.append(("SET", k, v)); want.append(b"+OK\r\n"); model[k] = v
            elif op == 1:
                cmds.append(("GET", k))
                v = model.get(k)
                want.append(b"$-1\r\n" if v is None else b"$%d\r\n%s\r\n" % (len(v), v.encode()))
            elif op == 2:
                cur = model.get(k)
                if cur is not None and not re.fullmatch(r"-?\d+", cur):
                    cmds.append(("DEL", k)); want.append(b":1\r\n"); model.pop(k)
                else:
                    nv = int(cur or 0) + 1
                    cmds.append(("INCR", k)); want.append(b":%d\r\n" % nv); model[k] = str(nv)
            elif op == 3:
                k2 = "c%d:k%d" % (cid, rnd.randrange(20))
                cmds.append(("MSET", k, "m%d" % i, k2, "n%d" % i)); want.append(b"+OK\r\n")
                model[k] = "m%d" % i; model[k2] = "n%d" % i
            elif op == 4:
                k2 = "c%d:k%d" % (cid, rnd.randrange(20))
                cmds.append(("MGET", k, k2))
                vs = [model.get(k), model.get(k2)]
                want.append(b"*2\r\n" + b"".join(b"$-1\r\n" if v is None else b"$%d\r\n%s\r\n" % (len(v), v.encode())
                                                   for v in vs))
            else:
                cmds.append(("EXISTS", k)); want.append(b":%d\r\n" % (k in model))
        c.send_many(cmds)
        for i, w in enumerate(want):
            r = c.read()
            if r != w:
                problems.append("client %d reply %d to %r: got %r want %r" % (cid, i, cmds[i], r, w))
                return

    ths = [threading.Thread(target=client, args=(i,)) for i in range(6)]
    t0 = time.monotonic()
    for t in ths:
        t.start()
    for t in ths:
        t.join(40)
    check(not problems, "replies in request order with the model's values", *problems[:5])
    print("      6 clients x 300 pipelined mixed commands in %.2f s (emulator)" % (time.monotonic() - t0))


@T.case
def pipelined_sets_grouped_in_bulk_writes():
    """Plain SETs waiting together in a worker's queue go as one bulk write;
    replies stay per command and in order, a failing SET in the middle (a
    document over 16 MB) gets its error and the others their +OK."""
    emu = emulator()
    s = fd(emu, mongo_workers=1)
    c = s.conn(timeout=60)
    cmds, want = [], []
    for i in range(400):
        cmds.append(("SET", "g%d" % (i % 37), "v%d" % i))
        want.append(b"+OK\r\n")
    cmds += [("GET", "g%d" % k) for k in range(37)]
    last = {k: max(i for i in range(400) if i % 37 == k) for k in range(37)}
    want += [b"$%d\r\nv%d\r\n" % (len("v%d" % last[k]), last[k]) for k in range(37)]
    c.send_many(cmds)
    got = [c.read() for _ in cmds]
    for i, (g, w) in enumerate(zip(got, want)):
        eq(g, w, "reply %d to %r" % (i, cmds[i][:2]))
    info = parse(c.cmd("INFO", "backend"))
    grouped = int(re.search(rb"mongodb_bulk_grouped_sets:(\d+)", info).group(1))
    check(grouped > 0, "some SETs went in bulk writes", info)
    big = b"x" * (17 * 1024 * 1024)
    cmds = [("SET", "a", "1"), ("SET", "b", "2"), ("SET", "big", big), ("SET", "c", "3"),
            ("SET", "a", "4"), ("GET", "a"), ("GET", "c"), ("EXISTS", "big")]
    c.send_many(cmds)
    got = [c.read() for _ in cmds]
    eq(got[:2], [b"+OK\r\n"] * 2)
    # refused before it is sent (docs/bounds.md): MongoDB's own limit, its code
    check(got[2] == b"-ERR mongodb: value of 17825792 bytes exceeds MongoDB's 16 MB document limit (code 10334)\r\n",
          "the 17 MB SET fails", got[2][:200])
    eq(got[3:], [b"+OK\r\n", b"+OK\r\n", b"$1\r\n4\r\n", b"$1\r\n3\r\n", b":0\r\n"])
    print("      %d of 400 pipelined SETs went in bulk writes (1 worker)" % grouped)


# ------------------------------------------------------------------ data

@T.case
def binary_values_int64_and_errors():
    emu = emulator()
    s = fd(emu)
    c = s.conn()
    key = b"k\x00\xff\r\n"
    val = bytes(range(256)) * 3
    eq(c.cmd("SET", key, val), b"+OK\r\n")
    eq(parse(c.cmd("GET", key)), val, "binary value round trip")
    eq(c.cmd("STRLEN", key), b":768\r\n")
    eq(parse(c.cmd("KEYS", "k*")), [key])
    eq(c.cmd("SET", "n", "9223372036854775806"), b"+OK\r\n")
    eq(c.cmd("INCR", "n"), b":9223372036854775807\r\n")
    eq(c.cmd("INCR", "n"), b"-ERR increment or decrement would overflow\r\n")
    eq(c.cmd("GET", "n"), b"$19\r\n9223372036854775807\r\n")
    eq(c.cmd("SET", "m", "-9223372036854775808"), b"+OK\r\n")
    eq(c.cmd("DECR", "m"), b"-ERR increment or decrement would overflow\r\n")
    eq(c.cmd("SET", "z", "007"), b"+OK\r\n")
    eq(c.cmd("GET", "z"), b"$3\r\n007\r\n", "a non-canonical integer stays a string")
    eq(c.cmd("INCR", "z"), b"-ERR value is not an integer or out of range\r\n", "as Redis: 007 is no integer")
    eq(c.cmd("SET", "f", "1.5"), b"+OK\r\n")
    eq(c.cmd("INCR", "f"), b"-ERR value is not an integer or out of range\r\n")
    eq(c.cmd("INCRBYFLOAT", "f", "1.5"), b"$1\r\n3\r\n")
    eq(c.cmd("INCR", "f"), b":4\r\n")
    eq(c.cmd("SET", "e", "v", "PX", "60"), b"+OK\r\n")
    time.sleep(0.15)
    eq(c.cmd("GET", "e"), b"$-1\r\n", "an expired key is never returned")
    eq(c.cmd("EXISTS", "e"), b":0\r\n")
    eq(c.cmd("TTL", "e"), b":-2\r\n")
    check(b"e" not in parse(c.cmd("KEYS", "*")), "KEYS skips expired keys")
    eq(c.cmd("DBSIZE"), b":5\r\n")
    eq(c.cmd("INCR", "e"), b":1\r\n", "INCR on an expired key starts from 0")
    eq(c.cmd("TTL", "e"), b":-1\r\n")


@T.case
def hash_fields_any_bytes():
    emu = emulator()
    s = fd(emu)
    c = s.conn()
    fields = [b"a.b", b"$set", b"\x00\xff", b"", b"_id", b"x" * 3000]
    args = []
    for i, f in enumerate(fields):
        args += [f, b"v%d\x00" % i]
    eq(c.cmd("HSET", "h", *args), b":%d\r\n" % len(fields))
    got = parse(c.cmd("HGETALL", "h"))
    eq(dict(zip(got[::2], got[1::2])), dict(zip(args[::2], args[1::2])), "fields and values round trip")
    eq(c.cmd("HGET", "h", b"$set"), b"$3\r\nv1\x00\r\n")
    eq(c.cmd("TYPE", "h"), b"+hash\r\n")
    eq(c.cmd("GET", "h"), b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n")
    eq(c.cmd("EXPIRE", "h", "100"), b":1\r\n")
    eq(c.cmd("HSET", "h", "new", "1"), b":1\r\n")
    check(0 < parse(c.cmd("TTL", "h")) <= 100, "a hash write keeps the TTL")
    eq(c.cmd("RENAME", "h", "h2"), b"+OK\r\n")
    eq(c.cmd("HLEN", "h2"), b":%d\r\n" % (len(fields) + 1))
    eq(c.cmd("HDEL", "h2", *(fields + [b"new"])), b":%d\r\n" % (len(fields) + 1))
    eq(c.cmd("EXISTS", "h2"), b":0\r\n", "the last field gone, the key is gone")


# ------------------------------------------------------------------ against redis-server

def _norm_len(raw):
    """Replies with random content (SPOP/SRANDMEMBER/HRANDFIELD with a
    count below the size): the exact header (RESP type and count) and each
    element's RESP type; a single reply: its type byte (members themselves
    are checked by the cases that know the set: spop_srandmember_members)."""
    head, elems = raw_elements(raw)
    if head is None:
        return raw if raw[:1] in (b"-", b":") or raw in (b"$-1\r\n", b"*-1\r\n", b"_\r\n") else raw[:1]
    return (head, [e[:1] for e in elems])


def _norm_scan(raw):
    """A *SCAN call that returns everything at once: the reply's header, the
    cursor's bytes, the item array's header and its items' exact bytes,
    sorted (a small Redis set is a hash table: its order is its own)."""
    head, elems = raw_elements(raw)
    if head is None or len(elems) != 2:
        return raw
    ihead, items = raw_elements(elems[1])
    if ihead is None:
        return raw
    return (head, elems[0], ihead, sorted(items))


NORMS = {"sorted": norm_sorted, "pairs": norm_pairs, "len": _norm_len, "scan": _norm_scan}


def _ref_and_fd(emu):
    ref = start_redis(databases=1)
    s = fd(emu)
    return ref, s


def _run_steps(d, steps):
    for st in steps:
        norm = same = None
        if st and st[0] in NORMS:
            norm, st = NORMS[st[0]], st[1:]
        elif st and st[0] in ("TTL", "PTTL"):
            same = ttl_close(2 if st[0] == "TTL" else 2500)
        d.cmd(*st, norm=norm, same=same)


ZSET_STEPS = [
    ("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"), ("ZADD", "z", "0", "x", "0", "y", "0", "aa"),
    ("ZRANGE", "z", "0", "-1", "WITHSCORES"), ("ZRANGE", "z", "2", "1"), ("ZRANGE", "z", "-100", "100"),
    ("ZRANGE", "z", "0", "-1", "REV"), ("ZRANGE", "z", "-3", "-1", "REV", "WITHSCORES"),
    ("ZRANGE", "z", "(1", "5", "BYSCORE"), ("ZRANGE", "z", "5", "(1", "BYSCORE", "REV", "WITHSCORES"),
    ("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "1", "2"),
    ("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "-1", "2"),
    ("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "0", "0"),
    ("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "2", "-1", "WITHSCORES"),
    ("ZRANGE", "z", "0", "-1", "LIMIT", "0", "1"), ("ZRANGE", "z", "[a", "[z", "BYLEX", "WITHSCORES"),
    ("ZRANGE", "z", "0", "1", "BYSCORE", "BYLEX"), ("ZRANGE", "z", "0", "1", "REV", "REV"),
    ("ZRANGE", "z", "0", "1", "LIMIT", "x", "1", "BYSCORE"), ("ZRANGE", "z", "a", "1"),
    ("ZRANGE", "z", "0", "1", "FOO"), ("ZRANGE", "z", "0", "-1", "LIMIT", "0", "-1"),
    ("ZRANGEBYSCORE", "z", "-inf", "+inf", "WITHSCORES", "LIMIT", "1", "1"),
    ("ZREVRANGEBYSCORE", "z", "+inf", "-inf"), ("ZREVRANGEBYSCORE", "z", "3", "1", "LIMIT", "0", "1"),
    ("ZREVRANGEBYSCORE", "z", "(3", "(1", "WITHSCORES"),
    ("ZRANGEBYSCORE", "z", "a", "b"), ("ZRANGEBYSCORE", "z", "(1", "(1"), ("ZRANGEBYSCORE", "z", "2", "1"),
    ("ZRANGEBYSCORE", "z", "1", "1"), ("ZRANGEBYSCORE", "z", "(0", "1"), ("ZRANGEBYSCORE", "z", "-inf", "(0"),
    ("ZRANGEBYSCORE", "z", "0", "1", "LIMIT", "0"), ("ZRANGEBYSCORE", "z", "0", "1", "BYLEX"),
    ("ZREVRANGE", "z", "0", "2", "WITHSCORES"), ("ZREVRANGE", "z", "1", "0"), ("ZREVRANGE", "z", "0", "1", "REV"),
    ("ZCOUNT", "z", "(1", "3"), ("ZCOUNT", "z", "-inf", "+inf"), ("ZCOUNT", "z", "x", "1"), ("ZCOUNT", "nokey", "0", "1"),
    ("ZRANK", "z", "c"), ("ZREVRANK", "z", "c"), ("ZRANK", "z", "zz"), ("ZRANK", "nokey", "a"), ("ZREVRANK", "z", "x"),
    ("ZSCORE", "z", "aa"), ("ZMSCORE", "z", "a", "nom", "e"), ("ZMSCORE", "nokey", "a"), ("ZCARD", "z"), ("ZCARD", "nokey"),
    ("ZADD", "z"), ("ZADD", "z", "1"), ("ZADD", "z", "1", "a", "2"), ("ZADD", "z", "nan", "a"), ("ZADD", "z", " 1", "a"),
    ("ZADD", "z", "1 ", "a"), ("ZADD", "z", "", "a"), ("ZADD", "z", "1e400", "a"), ("ZADD", "z", "0x10", "hex"),
    ("ZADD", "z", "inf", "top", "-inf", "bottom"), ("ZRANGE", "z", "0", "-1", "WITHSCORES"),
    ("ZADD", "z", "INCR", "1", "a", "2", "b"), ("ZADD", "z", "GT", "LT", "1", "a"), ("ZADD", "z", "NX", "GT", "1", "a"),
    ("ZADD", "z", "NX", "XX", "1", "a"), ("ZADD", "z", "INCR", "-inf", "top"), ("ZSCORE", "z", "top"),
    ("ZADD", "z", "XX", "INCR", "1", "nope"), ("ZADD", "z", "NX", "INCR", "1", "a"), ("ZADD", "z", "XX", "1", "new1"),
    ("ZADD", "z", "GT", "CH", "5", "a", "0", "b", "9", "fresh"), ("ZADD", "z", "LT", "CH", "0", "a", "10", "b"),
    ("ZADD", "z", "CH", "1", "dup", "2", "dup"), ("ZSCORE", "z", "dup"), ("ZADD", "z", "gt", "ch", "incr", "1", "a"),
    ("ZADD", "z", "LT", "INCR", "1", "a"), ("ZINCRBY", "z", "1", "newm"), ("ZINCRBY", "z", "x", "a"),
    ("ZINCRBY", "z", "1e308", "big"), ("ZINCRBY", "z", "1e308", "big"), ("ZSCORE", "z", "big"),
    ("ZINCRBY", "z", "-inf", "big"), ("ZINCRBY", "z", "1", "a", "b"),
    ("ZADD", "neg", "-0", "m"), ("ZSCORE", "neg", "m"), ("ZADD", "neg", "0", "m"), ("ZSCORE", "neg", "m"),
    ("ZADD", "neg", "1.5e-7", "n", "123456789.123456789", "o"), ("ZRANGE", "neg", "0", "-1", "WITHSCORES"),
    ("ZREMRANGEBYRANK", "z", "0", "1"), ("ZREMRANGEBYRANK", "z", "-1", "-1"), ("ZREMRANGEBYRANK", "z", "5", "1"),
    ("ZREMRANGEBYRANK", "z", "x", "1"), ("ZREMRANGEBYSCORE", "z", "(2", "4"), ("ZREMRANGEBYSCORE", "z", "x", "4"),
    ("ZRANGE", "z", "0", "-1", "WITHSCORES"), ("ZREMRANGEBYSCORE", "z", "-inf", "+inf"), ("EXISTS", "z"),
    ("ZREMRANGEBYRANK", "nokey", "0", "-1"),
    ("ZADD", "l", "0", "a", "0", "b", "0", "c", "0", "d", "0", "e", "0", "", "0", b"\xff", "0", "ab"),
    ("ZRANGEBYLEX", "l", "-", "+"), ("ZRANGEBYLEX", "l", "[b", "(d"), ("ZRANGEBYLEX", "l", "(a", "[c", "LIMIT", "1", "1"),
    ("ZREVRANGEBYLEX", "l", "+", "-"), ("ZREVRANGEBYLEX", "l", "[d", "(a"), ("ZREVRANGEBYLEX", "l", "+", "-", "LIMIT", "2", "3"),
    ("ZRANGEBYLEX", "l", "a", "b"), ("ZRANGEBYLEX", "l", "+", "-"), ("ZRANGEBYLEX", "l", "[c", "[a"),
    ("ZRANGEBYLEX", "l", "[", "(\xff"), ("ZRANGEBYLEX", "l", "-", "[a"), ("ZRANGEBYLEX", "l", "--", "+"),
    ("ZRANGEBYLEX", "l", "(b", "(b"), ("ZRANGEBYLEX", "l", "[b", "[b"),
    ("ZLEXCOUNT", "l", "-", "+"), ("ZLEXCOUNT", "l", "[b", "[d"), ("ZLEXCOUNT", "l", "x", "y"),
    ("ZRANGE", "l", "[d", "[b", "BYLEX", "REV"), ("ZRANGE", "l", "[b", "[d", "BYLEX", "LIMIT", "1", "5"),
    ("ZREMRANGEBYLEX", "l", "[b", "(d"), ("ZREMRANGEBYLEX", "l", "x", "y"), ("ZRANGE", "l", "0", "-1"),
    ("ZREMRANGEBYLEX", "l", "-", "+"), ("EXISTS", "l"),
    ("ZADD", "p", "1", "a", "2", "b", "3", "c", "4", "d"), ("ZPOPMAX", "p"), ("ZPOPMIN", "p", "0"), ("ZPOPMIN", "p", "-1"),
    ("ZPOPMIN", "p", "x"), ("ZPOPMIN", "p", "1"), ("ZPOPMAX", "p", "10"), ("EXISTS", "p"), ("ZPOPMIN", "nokey"),
    ("ZPOPMIN", "nokey", "2"), ("ZPOPMIN", "p", "1", "2"), ("ZADD", "p", "1", "a"), ("ZPOPMIN", "p"), ("EXISTS", "p"),
    ("SET", "str", "v"), ("ZADD", "str", "1", "a"), ("ZRANGE", "str", "0", "-1"), ("ZSCORE", "str", "a"),
    ("ZPOPMIN", "str"), ("ZCOUNT", "str", "0", "1"), ("ZCOUNT", "str", "x", "1"), ("ZRANGEBYLEX", "str", "-", "+"),
    ("ZREMRANGEBYRANK", "str", "0", "1"), ("ZSCAN", "str", "0"), ("ZCARD", "str"), ("ZRANK", "str", "a"),
    ("ZINCRBY", "str", "1", "a"), ("ZREM", "str", "a"), ("ZMSCORE", "str", "a"), ("ZADD", "str", "x", "a"),
    ("ZADD", "t", "1", "a"), ("EXPIRE", "t", "100"), ("ZADD", "t", "2", "b"), ("TTL", "t"), ("ZREM", "t", "a"),
    ("TTL", "t"), ("ZPOPMIN", "t"), ("TTL", "t"), ("EXISTS", "t"),
    ("ZADD", "r", "1", "a", "2", "b"), ("RENAME", "r", "r2"), ("ZRANGE", "r2", "0", "-1", "WITHSCORES"), ("TYPE", "r2"),
    ("ZREM", "r2", "a", "a", "zz"), ("ZREM", "r2", "b"), ("EXISTS", "r2"), ("ZREM", "nokey", "a"),
    ("ZADD", "sc", "3", "c", "1", "a", "2", "b", "1", b"\x00"), ("ZSCAN", "sc", "0"), ("ZSCAN", "sc", "0", "MATCH", "a*"),
    ("ZSCAN", "sc", "0", "COUNT", "1"), ("ZSCAN", "sc", "abc"), ("ZSCAN", "nokey", "0"), ("ZSCAN", "sc", "0", "COUNT", "0"),
    ("ZSCAN", "sc", "0", "FOO"), ("ZSCAN", "sc", "0", "TYPE", "zset"), ("ZSCAN", "nokey", "0", "FOO"),
    ("ZADD", "sc2", "0.1", "a", "1.5", "b", "-inf", "c", "1e20", "d", "-0", "e", "3.0e-5", "f"), ("ZSCAN", "sc2", "0"),
    ("ZINCRBY", "sc2", "-0", "g"), ("ZSCORE", "sc2", "g"), ("ZRANGE", "sc2", "0", "-1", "WITHSCORES"),
]

HASH_LIST_SET_STEPS = [
    ("HSET", "h", "f1", "v1", "f2", "v2", "g", "w"), ("HSCAN", "h", "0"), ("HSCAN", "h", "0", "MATCH", "f*"),
    ("HSCAN", "h", "0", "COUNT", "1"), ("HSCAN", "h", "x"), ("HSCAN", "h", "0", "COUNT", "0"), ("HSCAN", "nokey", "0"),
    ("HSCAN", "h", "0", "MATCH"), ("HRANDFIELD", "nokey"), ("HRANDFIELD", "nokey", "3"), ("HRANDFIELD", "h", "0"),
    ("sorted", "HRANDFIELD", "h", "100"), ("pairs", "HRANDFIELD", "h", "3", "WITHVALUES"), ("len", "HRANDFIELD", "h", "-5"),
    ("len", "HRANDFIELD", "h", "2"), ("len", "HRANDFIELD", "h", "-4", "WITHVALUES"), ("HRANDFIELD", "h", "x"),
    ("HRANDFIELD", "h", "1", "foo"), ("HRANDFIELD", "h", "1", "withvalues", "x"), ("HRANDFIELD", "h", "-9223372036854775808"),
    ("HSET", "one", "f", "v"), ("HRANDFIELD", "one"), ("HRANDFIELD", "one", "1", "WITHVALUES"),
    ("HRANDFIELD", "one", "-3", "WITHVALUES"), ("HRANDFIELD", "one", "-2"),
    ("SADD", "s1", "a", "b", "c"), ("SPOP", "s1", "0"), ("sorted", "SPOP", "s1", "5"), ("EXISTS", "s1"), ("SPOP", "nokey"),
    ("SPOP", "nokey", "2"), ("SADD", "s1", "a"), ("SPOP", "s1", "-1"), ("SPOP", "s1", "x"), ("SPOP", "s1", "1", "2"),
    ("SPOP", "s1"), ("EXISTS", "s1"), ("SADD", "s2", "a", "b", "c", "d"), ("len", "SPOP", "s2", "3"), ("SCARD", "s2"),
    ("len", "SPOP", "s2"), ("SCARD", "s2"), ("SADD", "s3", "a", "b", "c", "d"), ("SRANDMEMBER", "nokey"),
    ("SRANDMEMBER", "nokey", "3"), ("SRANDMEMBER", "s3", "0"), ("sorted", "SRANDMEMBER", "s3", "10"),
    ("len", "SRANDMEMBER", "s3", "-7"), ("len", "SRANDMEMBER", "s3", "2"), ("SRANDMEMBER", "s3", "x"),
    ("SRANDMEMBER", "s3", "-9223372036854775808"), ("SRANDMEMBER", "s3", "1", "2"), ("SADD", "sone", "x"),
    ("SRANDMEMBER", "sone", "-3"), ("SRANDMEMBER", "sone"), ("SCARD", "s3"),
    ("SADD", "u1", "a", "b", "c"), ("SADD", "u2", "b", "c", "d"), ("SINTERSTORE", "d", "u1", "u2"), ("sorted", "SMEMBERS", "d"),
    ("SUNIONSTORE", "d", "u1", "u2"), ("sorted", "SMEMBERS", "d"), ("SDIFFSTORE", "d", "u1", "u2"), ("sorted", "SMEMBERS", "d"),
    ("SINTERSTORE", "d", "u1", "nokey"), ("EXISTS", "d"), ("SET", "d", "x"), ("SUNIONSTORE", "d", "u1"), ("TYPE", "d"),
    ("SET", "str", "v"), ("SINTERSTORE", "d", "str", "u1"), ("SINTERSTORE", "d", "nokey", "str"), ("TYPE", "d"),
    ("SINTERSTORE", "d", "u1", "u1"), ("SDIFFSTORE", "u1", "u1", "u2"), ("sorted", "SMEMBERS", "u1"),
    ("EXPIRE", "d", "100"), ("SUNIONSTORE", "d", "u2"), ("TTL", "d"), ("SUNIONSTORE", "str", "u2"), ("TYPE", "str"),
    ("SINTERCARD", "2", "u1", "u2"), ("SINTERCARD", "2", "u2", "d", "LIMIT", "1"), ("SINTERCARD", "2", "u2", "d", "LIMIT", "0"),
    ("SINTERCARD", "0", "u1"), ("SINTERCARD", "3", "u1", "u2"), ("SINTERCARD", "1", "u1", "LIMIT", "-1"),
    ("SINTERCARD", "1", "u1", "FOO"), ("SINTERCARD", "x", "u1"), ("SET", "str2", "v"), ("SINTERCARD", "2", "u1", "str2"),
    ("SINTERCARD", "2", "u2", "nokey"), ("SINTERCARD", "1", "nokey"), ("SINTERCARD", "1", "u2", "LIMIT"),
    ("SADD", "ss", "b", "a", "c"), ("scan", "SSCAN", "ss", "0"), ("scan", "SSCAN", "ss", "0", "MATCH", "[ab]"),
    ("SSCAN", "ss", "x"), ("SSCAN", "nokey", "0"), ("SSCAN", "ss", "0", "COUNT", "-1"), ("SSCAN", "str2", "0"),
    ("RPUSH", "L", "a", "b", "c"), ("LINSERT", "L", "BEFORE", "b", "x"), ("LINSERT", "L", "AFTER", "c", "y"),
    ("LINSERT", "L", "after", "a", "z"), ("LINSERT", "L", "AFTER", "nope", "z"), ("LINSERT", "nokey", "BEFORE", "a", "b"),
    ("LINSERT", "L", "MIDDLE", "a", "b"), ("LINSERT", "str2", "MIDDLE", "a", "b"), ("LINSERT", "str2", "BEFORE", "a", "b"),
    ("LRANGE", "L", "0", "-1"), ("EXISTS", "nokey"),
    ("RPUSH", "P", "a", "b", "c", "a", "b", "c", "a"), ("LPOS", "P", "a"), ("LPOS", "P", "a", "RANK", "2"),
    ("LPOS", "P", "a", "RANK", "-1"), ("LPOS", "P", "a", "RANK", "-2", "COUNT", "0"), ("LPOS", "P", "a", "COUNT", "0"),
    ("LPOS", "P", "a", "COUNT", "2"), ("LPOS", "P", "a", "COUNT", "2", "MAXLEN", "3"), ("LPOS", "P", "a", "RANK", "0"),
    ("LPOS", "P", "a", "COUNT", "-1"), ("LPOS", "P", "a", "MAXLEN", "-1"), ("LPOS", "P", "a", "RANK", "x"),
    ("LPOS", "P", "a", "FOO"), ("LPOS", "P", "z"), ("LPOS", "P", "z", "COUNT", "1"), ("LPOS", "nokey", "a"),
    ("LPOS", "nokey", "a", "COUNT", "1"), ("LPOS", "P", "a", "RANK", "-9223372036854775808"), ("LPOS", "P", "a", "RANK", "10"),
    ("LPOS", "P", "a", "COUNT", "0", "MAXLEN", "1", "RANK", "-1"), ("LPOS", "P", "a", "RANK"), ("LPOS", "str2", "a"),
    ("LPOS", "P", "c", "RANK", "-1", "MAXLEN", "2"), ("LPOS", "P", "a", "RANK", "-9223372036854775808", "COUNT", "1"),
    ("LPOS", "P", "b", "RANK", "-9223372036854775808", "COUNT", "0", "MAXLEN", "4"),
    ("RPUSH", "A", "1", "2", "3"), ("RPOPLPUSH", "A", "B"), ("RPOPLPUSH", "A", "A"), ("LRANGE", "A", "0", "-1"),
    ("LRANGE", "B", "0", "-1"), ("RPOPLPUSH", "nokey", "B"), ("RPOPLPUSH", "A", "str2"), ("LRANGE", "A", "0", "-1"),
    ("RPOPLPUSH", "str2", "A"), ("RPOPLPUSH", "nokey", "str2"), ("LMOVE", "A", "B", "LEFT", "RIGHT"),
    ("LMOVE", "A", "B", "RIGHT", "LEFT"), ("LMOVE", "A", "B", "UP", "LEFT"), ("LMOVE", "A", "B", "left", "DOWN"),
    ("LRANGE", "B", "0", "-1"), ("EXISTS", "A"), ("LMOVE", "B", "B", "LEFT", "RIGHT"), ("LMOVE", "B", "B", "RIGHT", "LEFT"),
    ("LRANGE", "B", "0", "-1"), ("EXPIRE", "B", "100"), ("LMOVE", "B", "C", "LEFT", "LEFT"), ("TTL", "B"), ("TTL", "C"),
    ("LMOVE", "nokey", "C", "LEFT", "LEFT"), ("LMOVE", "str2", "C", "LEFT", "LEFT"), ("LMOVE", "C", "str2", "LEFT", "LEFT"),
    ("LRANGE", "C", "0", "-1"),
]


def _diff_both_protocols(emu, steps):
    ref, s = _ref_and_fd(emu)
    for proto in (2, 3):
        d = diff_pair(proto == 3, servers=(ref, s), timeout=30)
        _run_steps(d, steps)
        if d.mismatches:
            raise AssertionError("RESP%d:\n%s" % (proto, d.report()))
        print("      RESP%d: %d replies identical to redis-server's" % (proto, d.count))


@T.case
def zsets_match_redis():
    _diff_both_protocols(emulator(), ZSET_STEPS)


@T.case
def hash_list_set_commands_match_redis():
    _diff_both_protocols(emulator(), HASH_LIST_SET_STEPS)


LIST_FAST_STEPS = [
    ("RPUSH", "l", "a", "b", "c"), ("LPUSH", "l", "x", "y"), ("RPUSHX", "l", "z"), ("LPUSHX", "l", "w"),
    ("LLEN", "l"), ("LRANGE", "l", "0", "2"), ("LRANGE", "l", "2", "100"), ("LRANGE", "l", "7", "9"),
    ("LRANGE", "l", "3", "1"), ("LRANGE", "l", "-2", "-1"), ("LRANGE", "l", "1", "-2"), ("LINDEX", "l", "0"),
    ("LINDEX", "l", "7"), ("LINDEX", "l", "8"), ("LINDEX", "l", "-1"), ("LINDEX", "l", "2147483648"),
    ("LRANGE", "l", "2147483647", "2147483648"), ("LPOP", "l"), ("RPOP", "l"), ("LRANGE", "l", "0", "-1"),
    ("LPOP", "l", "2"), ("LLEN", "l"), ("RPOP", "l"), ("LPOP", "l"), ("LPOP", "l"), ("EXISTS", "l"), ("LPOP", "l"),
    ("LLEN", "l"), ("LPUSHX", "l", "a"), ("RPUSHX", "l", "a"), ("LINDEX", "l", "0"), ("LRANGE", "l", "0", "5"),
    ("RPUSH", "one", "only"), ("LPOP", "one"), ("EXISTS", "one"), ("RPUSH", "one", "only"), ("RPOP", "one"),
    ("EXISTS", "one"), ("SET", "s", "v"), ("LPUSH", "s", "a"), ("RPUSHX", "s", "a"), ("LPOP", "s"), ("LLEN", "s"),
    ("LRANGE", "s", "0", "1"), ("LINDEX", "s", "0"), ("RPUSH", "t", "1", "2", "3"), ("EXPIRE", "t", "100"),
    ("LPUSH", "t", "0"), ("RPOP", "t"), ("TTL", "t"), ("LRANGE", "t", "0", "9"), ("RENAME", "t", "t2"),
    ("RPUSH", "t2", "9"), ("LRANGE", "t2", "0", "-1"), ("LLEN", "t2"),
    ("RPUSH", "b", b"\x00\xff", b"\r\n", b""), ("LPOP", "b"), ("RPOP", "b"), ("LINDEX", "b", "0"), ("LLEN", "b"),
    ("RPUSH", "cap", "1", "2", "3", "4", "5"), ("LTRIM", "cap", "0", "2"), ("LRANGE", "cap", "0", "-1"), ("LLEN", "cap"),
    ("LPUSH", "cap", "0"), ("LTRIM", "cap", "0", "10"), ("LLEN", "cap"), ("LTRIM", "cap", "0", "0"),
    ("LRANGE", "cap", "0", "-1"), ("RPUSH", "cap", "x"), ("LLEN", "cap"), ("LTRIM", "cap", "0", "2147483648"),
    ("LTRIM", "nokey", "0", "3"), ("EXISTS", "nokey"), ("LTRIM", "s", "0", "1"), ("LTRIM", "cap", "1", "-1"),
    ("LRANGE", "cap", "0", "-1"), ("LLEN", "cap"), ("EXPIRE", "cap", "100"), ("RPUSH", "cap", "y", "z"),
    ("LTRIM", "cap", "0", "1"), ("TTL", "cap"), ("LRANGE", "cap", "0", "-1"),
]


@T.case
def list_fast_paths_match_redis():
    """LPUSH/RPUSH(X), LPOP/RPOP, LRANGE/LINDEX from the head and LLEN go
    by $push/$pop/$slice and the length field n; the cases they leave to the
    read-modify-write path (no key, other type, last element, negative
    indexes) give the same replies."""
    _diff_both_protocols(emulator(), LIST_FAST_STEPS)


@T.case
def list_without_length_field():
    """A list document written without `n` (by an earlier frontdoor) is
    served by the general path, which adds `n`; an expired list is never
    pushed onto."""
    import pymongo
    import bson
    emu = emulator()
    s = fd(emu, mongo_database="legacy")
    c = s.conn()
    cl = pymongo.MongoClient(emu.uri, serverSelectionTimeoutMS=3000)
    coll = cl["legacy"]["db0"]
    coll.insert_one({"_id": bson.Binary(b"old"), "type": "list", "value": [bson.Binary(b"a"), bson.Binary(b"b")]})
    eq(c.cmd("LLEN", "old"), b":2\r\n")
    eq(c.cmd("LINDEX", "old", "1"), b"$1\r\nb\r\n")
    eq(c.cmd("LPOP", "old"), b"$1\r\na\r\n")
    eq(coll.find_one({"_id": bson.Binary(b"old")}).get("n"), 1, "the general path wrote n")
    eq(c.cmd("RPUSH", "old", "c", "d"), b":3\r\n")
    eq(coll.find_one({"_id": bson.Binary(b"old")}).get("n"), 3, "$inc kept n")
    eq(c.cmd("LRANGE", "old", "0", "-1"), b"*3\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n")
    eq(c.cmd("RPUSH", "gone", "x", "y"), b":2\r\n")
    eq(c.cmd("PEXPIRE", "gone", "50"), b":1\r\n")
    time.sleep(0.15)
    eq(c.cmd("RPUSH", "gone", "z"), b":1\r\n", "an expired list starts again")
    eq(c.cmd("LRANGE", "gone", "0", "-1"), b"*1\r\n$1\r\nz\r\n")
    eq(c.cmd("TTL", "gone"), b":-1\r\n")
    cl.close()


def _scan_all(conn, cmd, key, *opts):
    seen, cursor, rounds = [], b"0", 0
    while True:
        v = parse(conn.cmd(cmd, key, cursor, *opts))
        check(isinstance(v, list) and len(v) == 2 and isinstance(v[1], list), "%s reply" % cmd, v)
        cursor = v[0]
        seen += v[1]
        rounds += 1
        check(rounds < 5000, "%s did not end" % cmd)
        if cursor == b"0":
            return seen, rounds


@T.case
def big_collections_match_redis():
    """> 128 elements (no longer returned whole by *SCAN): ranges, ranks,
    pops and full SCAN iterations (compared as sets) against redis-server."""
    emu = emulator()
    ref, s = _ref_and_fd(emu)
    d = Diff(ref.conn(), s.conn(timeout=30))
    d.cmd("FLUSHDB")
    rnd = random.Random(5)
    n = 400
    members = ["m%03d" % i for i in range(n)]
    zargs = []
    for m in members:
        zargs += [str(rnd.choice([rnd.randrange(50), rnd.random() * 100 - 50])), m]
    steps = [("ZADD", "z") + tuple(zargs), ("ZCARD", "z"), ("ZRANGE", "z", "0", "9", "WITHSCORES"),
             ("ZRANGE", "z", "-10", "-1", "WITHSCORES"), ("ZRANGE", "z", "190", "210"),
             ("ZREVRANGE", "z", "150", "170", "WITHSCORES"), ("ZRANGEBYSCORE", "z", "(10", "20", "WITHSCORES"),
             ("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "100", "30"), ("ZCOUNT", "z", "-10", "(10"),
             ("ZRANK", "z", "m200"), ("ZREVRANK", "z", "m200"), ("ZRANK", "z", "m399"), ("ZSCORE", "z", "m123"),
             ("ZPOPMIN", "z", "5"), ("ZPOPMAX", "z", "5"), ("ZREMRANGEBYRANK", "z", "100", "149"),
             ("ZREMRANGEBYSCORE", "z", "(0", "5"), ("ZCARD", "z"), ("ZRANGE", "z", "0", "-1", "WITHSCORES"),
             ("ZADD", "z", "INCR", "7", "m050"), ("ZADD", "z", "CH", "1", "m051", "2", "m052", "3", "new"),
             ("ZRANGE", "z", "0", "-1", "WITHSCORES"),
             ("HSET", "h") + tuple(x for m in members for x in (m, "v" + m)), ("HLEN", "h"),
             ("SADD", "s") + tuple(members), ("SCARD", "s"), ("SADD", "sp") + tuple(members), ("len", "SPOP", "sp", "50"),
             ("SCARD", "sp"), ("len", "SPOP", "sp", "350"), ("EXISTS", "sp"),
             ("len", "SRANDMEMBER", "s", "500"), ("len", "SRANDMEMBER", "s", "-500"),
             ("len", "HRANDFIELD", "h", "150", "WITHVALUES"), ("len", "HRANDFIELD", "h", "1000"),
             ("RPUSH", "l") + tuple(members), ("LPOS", "l", "m300"), ("LINSERT", "l", "BEFORE", "m300", "x"),
             ("LPOS", "l", "x"), ("LRANGE", "l", "295", "305"),
             # lookups in big collections (the member index), after removals and appends
             ("SADD", "s2") + tuple(members[::3]) + tuple("o%d" % i for i in range(100)),
             ("sorted", "SINTER", "s", "s2"), ("sorted", "SUNION", "s", "s2"), ("sorted", "SDIFF", "s2", "s"),
             ("SINTERSTORE", "s3", "s", "s2"), ("SINTERCARD", "2", "s", "s2"), ("SINTERCARD", "2", "s", "s2", "LIMIT", "7"),
             ("SREM", "s") + tuple(members[::5]), ("SMISMEMBER", "s") + tuple(members[::7]),
             ("SADD", "s", "m000", "m005", "new1", "m001"), ("SMISMEMBER", "s", "m000", "m005", "new1", "m010", "m001"),
             ("SMOVE", "s", "s2", "m002"), ("SISMEMBER", "s2", "m002"), ("SCARD", "s"), ("SCARD", "s2"),
             ("HDEL", "h") + tuple(members[::4]), ("HMGET", "h") + tuple(members[::9]), ("HSET", "h", "m000", "back", "m001", "again"),
             ("HMGET", "h", "m000", "m001", "m004", "m399"), ("HLEN", "h"),
             ("ZREM", "z") + tuple(members[::6]), ("ZMSCORE", "z") + tuple(members[::11]),
             ("ZADD", "z", "1", "m000", "2", "m006", "3", "brand"), ("ZMSCORE", "z", "m000", "m006", "brand", "m012"),
             ("ZRANK", "z", "brand"), ("ZCARD", "z")]
    _run_steps(d, steps)
    if d.mismatches:
        raise AssertionError(d.report())
    # HRANDFIELD with a count: distinct fields, each a real one
    got = parse(d.fd.cmd("HRANDFIELD", "h", "150"))
    eq(len(set(got)), 150, "HRANDFIELD 150 gives distinct fields")
    check(set(got) <= set(m.encode() for m in members), "HRANDFIELD fields are the hash's")
    for cmd, key, opts in (("ZSCAN", "z", ()), ("ZSCAN", "z", ("COUNT", "7")), ("HSCAN", "h", ("MATCH", "m1*")),
                           ("SSCAN", "s", ()), ("SSCAN", "s", ("COUNT", "1000")), ("HSCAN", "h", ("COUNT", "3"))):
        want, _ = _scan_all(d.ref, cmd, key, *opts)
        got, rounds = _scan_all(d.fd, cmd, key, *opts)
        if cmd == "SSCAN":
            eq(sorted(set(got)), sorted(set(want)), "%s %s" % (cmd, opts))
        else:
            gp = sorted(set(zip(got[::2], got[1::2])))
            wp = sorted(set(zip(want[::2], want[1::2])))
            eq(gp, wp, "%s %s: pairs" % (cmd, opts))
        check(len(got) == len(set(got)) or cmd != "SSCAN", "%s %s: no duplicates" % (cmd, opts))
    # an element present for the whole iteration is returned once even when
    # others come and go between calls
    seen, cursor, i = [], b"0", 0
    while True:
        v = parse(d.fd.cmd("SSCAN", "s", cursor, "COUNT", "20"))
        seen += v[1]
        cursor = v[0]
        d.fd.cmd("SADD", "s", "extra%d" % i)
        d.fd.cmd("SREM", "s", "extra%d" % (i - 1))
        i += 1
        if cursor == b"0":
            break
    stable = set(parse(d.ref.cmd("SMEMBERS", "s")))
    got = [x for x in seen if not x.startswith(b"extra")]
    eq(sorted(got), sorted(stable), "SSCAN under changes: every stable member exactly once")


@T.case
def info_names_the_emulator():
    emu = emulator()
    s = fd(emu)
    c = s.conn()
    eq(c.cmd("SET", "a", "1"), b"+OK\r\n")
    info = wait_until(lambda: (lambda t: t if b"mongodb_server_emulator:1" in t else None)(
        parse(c.cmd("INFO", "backend"))), timeout=5, what="INFO to show the server")
    check(b"mongodb_server_version:" in info, "server version in INFO", info)


def last_write_concern(emu):
    import pymongo
    cl = pymongo.MongoClient(emu.uri, serverSelectionTimeoutMS=3000)
    try:
        return cl.admin.command("frontdoorTestInfo").get("lastWriteConcern")
    finally:
        cl.close()


@T.case
def write_concern_follows_durability():
    emu = emulator()
    cases = [
        (dict(durability="sync"), {"j": True}),
        (dict(durability="nosync"), None),
        (dict(durability="nosync", mongo_j="yes"), {"j": True}),
        (dict(durability="sync", mongo_j="no", mongo_w="majority", mongo_wtimeout=5000),
         {"w": "majority", "j": False, "wtimeout": 5000}),
        (dict(mongo_w="2", mongo_j="no"), {"w": 2, "j": False}),
    ]
    for directives, want in cases:
        s = fd(emu, **directives)
        c = s.conn()
        eq(c.cmd("SET", "k", "v"), b"+OK\r\n")
        got = last_write_concern(emu)
        if got is not None:
            got = {k: v for k, v in got.items()}
        eq(got, want, "write concern with %s" % directives)
        c.close()
        s.stop()


@T.case
def redis_benchmark_no_errors():
    if not os.path.exists(REDIS_BENCHMARK):
        missing_prerequisite("redis-benchmark not installed")
    emu = emulator()
    s = fd(emu)
    t0 = time.monotonic()
    p = subprocess.run(["timeout", "45", REDIS_BENCHMARK, "-h", "127.0.0.1", "-p", str(s.port),
                        "-n", "2000", "-c", "20", "-t", "set,get,incr,mset,ping", "-q"],
                       capture_output=True, text=True)
    out = p.stdout + p.stderr
    check(p.returncode == 0, "redis-benchmark exit status %d" % p.returncode, out[-2000:])
    check("ERR" not in out and "Error" not in out, "no error replies", out[-2000:])
    lines = [l.strip() for l in out.replace("\r", "\n").split("\n") if "requests per second" in l]
    check(len(lines) >= 5, "a figure for every test", out[-2000:])
    print("      EMULATOR figures (mongomock, not MongoDB), %.1f s: %s"
          % (time.monotonic() - t0, "; ".join(lines)))


if __name__ == "__main__":
    T.main()
