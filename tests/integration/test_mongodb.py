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
from fdtest import (Tests, Conn, Err, parse, check, eq, skip,  # noqa: E402
                    start_frontdoor, frontdoor_is_redis, free_port, MongoEmulator,
                    REDIS_BENCHMARK, wait_until, run_frontdoor_expect_exit)

T = Tests("test_mongodb.py", case_timeout=50)


_built = []


def need_mongodb():
    """Skip when the binary has no MongoDB backend (or is a redis-server)."""
    if frontdoor_is_redis():
        skip("frontdoor is a redis-server stand-in")
    if not _built:
        rc, out = run_frontdoor_expect_exit([("backend", "no-such-backend")])
        mods = subprocess.run(["/usr/bin/python3", "-c", "import mockupdb, mongomock"],
                              capture_output=True).returncode == 0
        _built.append(("mongodb" in out, mods))
    if not _built[0][0]:
        skip("frontdoor built without the MongoDB backend (FRONTDOOR_WITH_MONGODB)")
    if not _built[0][1]:
        skip("the test server needs python3-mockupdb and python3-mongomock "
             "(bash tests/setup-debian.sh --test)")


def emulator(port=0):
    need_mongodb()
    return MongoEmulator(port).start()


def fd(emu=None, uri=None, **kw):
    need_mongodb()
    kw.setdefault("backend", "mongodb")
    kw.setdefault("mongo_uri", uri or emu.uri)
    kw.setdefault("mongo_database", "t%d" % random.randrange(1 << 30))
    # the emulator under a loaded machine can take seconds: only the fault
    # cases test the timeout, with their own value
    kw.setdefault("backend_timeout", 20000)
    return start_frontdoor(**kw)


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
    check(dt < 0.5 + 0.4, "the error took %.3fs; backend-timeout is 0.5s" % dt)
    dt1 = dt
    # several at once: each within the timeout, in order
    c.send_many([("SET", "k%d" % i, i) for i in range(20)])
    t0 = time.monotonic()
    for i in range(20):
        r = c.read()
        check(unavailable(r), "pipelined SET %d" % i, r)
    dt = time.monotonic() - t0
    check(dt < 0.5 + 0.6, "20 pipelined errors took %.3fs" % dt)
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
    check(dt < 1.0 + 0.5, "the error took %.3fs; backend-timeout is 1s" % dt)
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
        skip("redis-benchmark not installed")
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
