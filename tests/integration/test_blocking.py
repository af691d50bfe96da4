#!/usr/bin/python3
"""Blocking commands (BLPOP, BRPOP, BRPOPLPUSH, BLMOVE, BLMPOP, BZPOPMIN,
BZPOPMAX, BZMPOP) on the backend FD_BACKEND names (lmdb by default; the
CMake matrix runs this file on leveldb, mongodb, redis and redis-cluster too).

Streams: XREAD/XREADGROUP BLOCK woken by another client's XADD within 100
ms (redis-py), `$` as the last id at the time of blocking, timeouts (nil
in RESP2 and RESP3), COUNT of a wake-up, several streams, XREADGROUP `>`
waiters in FIFO order (each entry to one consumer) and XREAD waiters all
woken, the group destroyed or the key deleted while blocked (Redis 7.0's
-NOGROUP / -UNBLOCKED), CLIENT UNBLOCK, and the reply bytes against
redis-server (MULTI, scripts, errors, a wake-up's reply; RESP2 and RESP3).

Asserted: redis-py's blpop woken within 100 ms by another client's push and
timing out on time; FIFO order among waiters; wake-ups by a push, a move
onto the key (BLMOVE chain) and RENAME; pipelined commands behind a blocked
one; CLIENT UNBLOCK TIMEOUT|ERROR; a client that disconnects while blocked
loses nothing; INFO blocked_clients; on redis/redis-cluster the bounded
pool of connections lent to blocked clients; and byte-for-byte differential
cases against a real redis-server (errors, immediate replies, RESP3).
"""
import os
import re
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import (Tests, shared_frontdoor, Diff, Conn, start_frontdoor, start_redis, parse, check, eq, skip,
                    info_fields, wait_until, encode, shared_cluster, frontdoor_is_redis)

T = Tests(case_timeout=60)
BACKEND = os.environ.get("FD_BACKEND", "lmdb")
REMOTE = BACKEND in ("redis", "redis-cluster")

def blocked_clients(f):
    with f.conn() as c:
        return int(info_fields(parse(c.cmd("INFO", "clients")))["blocked_clients"])


def backend_blocked_clients(f):
    """The redis backends: how many clients the servers behind f count
    blocked (None on the others)."""
    if getattr(f, "backing", None):
        servers = [f.backing]
    elif BACKEND == "redis-cluster" and not frontdoor_is_redis():
        servers = shared_cluster().masters()
    else:
        return None
    return sum(blocked_clients(s) for s in servers)


def wait_blocked(f, n):
    """frontdoor counts n blocked clients; on the redis backends the servers
    behind it too (a wait frontdoor sent may not have reached its server yet)."""
    wait_until(lambda: blocked_clients(f) >= n, timeout=5, what="%d blocked clients" % n)
    if backend_blocked_clients(f) is not None:
        wait_until(lambda: backend_blocked_clients(f) >= n, timeout=5, what="%d blocked at the backend" % n)


def redis_client(f):
    import redis
    return redis.Redis(host="127.0.0.1", port=f.port, socket_timeout=10)


def redispy_woken_within_100ms(f, block, wake, what):
    """block() (a redis-py call) runs on a thread until frontdoor f counts
    it blocked; then wake(p) runs here with a second redis-py client p.
    Fails unless block() returns within 100 ms of wake. Returns (block's
    result, p)."""
    got = {}

    def waiter():
        got["v"] = block()
        got["t"] = time.monotonic()
    th = threading.Thread(target=waiter)
    th.start()
    wait_blocked(f, 1)
    p = redis_client(f)
    t0 = time.monotonic()
    wake(p)
    th.join(5)
    check(not th.is_alive(), "%s never returned" % what)
    dt = got["t"] - t0
    check(dt < 0.1, "woken after %.3f s (want < 0.1)" % dt)
    return got["v"], p


def need_redispy():
    try:
        import redis  # noqa: F401
    except ImportError:
        skip("python3-redis not installed")


def client_unblock(f, a, p, cmd, error=False):
    """a sends cmd and, once f counts it blocked, p ends it with CLIENT
    UNBLOCK (ERROR if error): a's reply must be Redis 7.0's."""
    aid = parse(a.cmd("CLIENT", "ID"))
    a.send(*cmd)
    wait_blocked(f, 1)
    eq(p.cmd("CLIENT", "UNBLOCK", str(aid), *(["ERROR"] if error else [])), b":1\r\n")
    eq(a.read(), b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n" if error else b"*-1\r\n")
    return aid


def leave_while_blocked(f, cmd):
    """A new client sends cmd, disconnects once it is blocked; f must then
    count no blocked client (within 5 s)."""
    gone = f.conn()
    gone.send(*cmd)
    wait_blocked(f, 1)
    gone.close()
    wait_until(lambda: blocked_clients(f) == 0, timeout=5, what="the waiter gone")


@T.case
def redispy_blpop_woken_within_100ms():
    need_redispy()
    f = shared_frontdoor()
    r = redis_client(f)
    r.delete("bq:wake")
    v, p = redispy_woken_within_100ms(f, lambda: r.blpop(["bq:wake"], timeout=0),
                                      lambda p: eq(p.rpush("bq:wake", "job1"), 1), "blpop")
    eq(v, (b"bq:wake", b"job1"))
    eq(p.llen("bq:wake"), 0)


@T.case
def redispy_blpop_times_out():
    f = shared_frontdoor()
    r = redis_client(f)
    r.delete("bq:none")
    t0 = time.monotonic()
    eq(r.blpop(["bq:none"], timeout=1), None)
    dt = time.monotonic() - t0
    check(0.95 <= dt < 1.6, "timeout 1 s took %.3f s" % dt)
    with f.conn() as c:
        t0 = time.monotonic()
        eq(c.cmd("BLPOP", "bq:none", "0.25"), b"*-1\r\n")
        dt = time.monotonic() - t0
        check(0.23 <= dt < 0.8, "timeout 0.25 s took %.3f s" % dt)
        c.cmd("HELLO", "3")
        eq(c.cmd("BZPOPMIN", "bq:nonez", "0.05"), b"_\r\n")
        eq(c.cmd("BLMOVE", "{bq}none", "{bq}d", "LEFT", "RIGHT", "0.05"), b"_\r\n")
    eq(blocked_clients(f), 0)


@T.case
def fifo_among_waiters_and_pipeline_behind():
    f = shared_frontdoor()
    conns = [f.conn() for _ in range(3)]
    conns[0].cmd("DEL", "bq:fifo")
    for i, c in enumerate(conns):
        # the PING queued behind the blocked command runs once it is answered
        c.send_raw(encode("BLPOP", "bq:fifo", "0") + encode("PING"))
        wait_blocked(f, i + 1)
    with f.conn() as p:
        eq(p.cmd("RPUSH", "bq:fifo", "a", "b", "c"), b":3\r\n")
    for c, v in zip(conns, "abc"):
        eq(c.read(), b"*2\r\n$7\r\nbq:fifo\r\n$1\r\n" + v.encode() + b"\r\n")
        eq(c.read(), b"+PONG\r\n")
        c.close()
    eq(blocked_clients(f), 0)


@T.case
def several_keys_and_zsets():
    f = shared_frontdoor()
    with f.conn() as a, f.conn() as p:
        p.cmd("DEL", "{bq}a", "{bq}b", "{bq}z")
        a.send("BRPOP", "{bq}a", "{bq}b", "0")
        wait_blocked(f, 1)
        p.cmd("RPUSH", "{bq}b", "x", "y")
        eq(a.read(), b"*2\r\n$5\r\n{bq}b\r\n$1\r\ny\r\n")
        a.send("BZPOPMAX", "{bq}z", "{bq}a", "0")
        wait_blocked(f, 1)
        p.cmd("ZADD", "{bq}z", "1", "m1", "2.5", "m2")
        eq(a.read(), b"*3\r\n$5\r\n{bq}z\r\n$2\r\nm2\r\n$3\r\n2.5\r\n")
        a.cmd("HELLO", "3")
        a.send("BZPOPMIN", "{bq}z", "0")
        eq(a.read(), b"*3\r\n$5\r\n{bq}z\r\n$2\r\nm1\r\n,1\r\n")


@T.case
def blmove_chain_wakes_the_next_waiter():
    f = shared_frontdoor()
    with f.conn() as a, f.conn() as b, f.conn() as p:
        p.cmd("DEL", "{bm}src", "{bm}dst")
        a.send("BLMOVE", "{bm}src", "{bm}dst", "LEFT", "RIGHT", "0")
        wait_blocked(f, 1)
        b.send("BRPOPLPUSH", "{bm}dst", "{bm}out", "0")
        wait_blocked(f, 2)
        p.cmd("LPUSH", "{bm}src", "v")
        eq(a.read(), b"$1\r\nv\r\n")
        eq(b.read(), b"$1\r\nv\r\n")
        eq(p.cmd("LRANGE", "{bm}out", "0", "-1"), b"*1\r\n$1\r\nv\r\n")
        eq(p.cmd("EXISTS", "{bm}src", "{bm}dst"), b":0\r\n")


@T.case
def woken_by_rename_onto_the_key():
    f = shared_frontdoor()
    with f.conn() as a, f.conn() as p:
        p.cmd("DEL", "{rn}k", "{rn}tmp")
        a.send("BLPOP", "{rn}k", "0")
        wait_blocked(f, 1)
        p.cmd("RPUSH", "{rn}tmp", "x")
        eq(p.cmd("RENAME", "{rn}tmp", "{rn}k"), b"+OK\r\n")
        eq(a.read(timeout=3), b"*2\r\n$5\r\n{rn}k\r\n$1\r\nx\r\n")


@T.case
def wrong_type_push_keeps_waiting():
    f = shared_frontdoor()
    with f.conn() as a, f.conn() as p:
        p.cmd("DEL", "bq:wt")
        a.send("BLPOP", "bq:wt", "0")
        wait_blocked(f, 1)
        p.cmd("SET", "bq:wt", "string")      # ready, but not a list: stays blocked
        time.sleep(0.1)
        eq(blocked_clients(f), 1)
        p.cmd("DEL", "bq:wt")
        p.cmd("RPUSH", "bq:wt", "x")
        eq(a.read(timeout=3), b"*2\r\n$5\r\nbq:wt\r\n$1\r\nx\r\n")


@T.case
def client_unblock_timeout_and_error():
    f = shared_frontdoor()
    with f.conn() as a, f.conn() as p:
        client_unblock(f, a, p, ("BLPOP", "bq:unb", "0"))
        aid = client_unblock(f, a, p, ("BZPOPMIN", "bq:unbz", "0"), error=True)
        eq(p.cmd("CLIENT", "UNBLOCK", str(aid)), b":0\r\n")
        eq(a.cmd("PING"), b"+PONG\r\n")
        eq(blocked_clients(f), 0)


@T.case
def disconnect_while_blocked_loses_nothing():
    f = shared_frontdoor()
    with f.conn() as p:
        p.cmd("DEL", "bq:gone")
        leave_while_blocked(f, ("BLPOP", "bq:gone", "0"))
        eq(p.cmd("RPUSH", "bq:gone", "kept"), b":1\r\n")
        time.sleep(0.1)
        eq(p.cmd("LRANGE", "bq:gone", "0", "-1"), b"*1\r\n$4\r\nkept\r\n")


@T.case
def client_kill_of_a_blocked_client():
    f = shared_frontdoor()
    with f.conn() as p:
        a = f.conn()
        aid = parse(a.cmd("CLIENT", "ID"))
        a.send("BLPOP", "bq:kill", "0")
        wait_blocked(f, 1)
        eq(p.cmd("CLIENT", "KILL", "ID", str(aid)), b":1\r\n")
        a.wait_closed(3)
        wait_until(lambda: blocked_clients(f) == 0, timeout=3, what="the killed waiter gone")
        a.close()


@T.case
def transactions_and_scripts_wake_once_at_the_end():
    f = shared_frontdoor()
    with f.conn() as a, f.conn() as p:
        p.cmd("DEL", "{tx}z", "{tx}l")
        # not woken by a ZADD + DEL in one transaction (Redis 7.0's rule)
        a.send("BZPOPMIN", "{tx}z", "0")
        wait_blocked(f, 1)
        p.cmd("MULTI")
        p.cmd("ZADD", "{tx}z", "1", "gone")
        p.cmd("DEL", "{tx}z")
        eq(p.cmd("EXEC"), b"*2\r\n:1\r\n:1\r\n")
        time.sleep(0.1)
        eq(blocked_clients(f), 1)
        p.cmd("ZADD", "{tx}z", "2", "m")
        eq(a.read(), b"*3\r\n$5\r\n{tx}z\r\n$1\r\nm\r\n$1\r\n2\r\n")
        # woken by a transaction that pushes, served after the whole EXEC
        a.send("BLPOP", "{tx}l", "0")
        wait_blocked(f, 1)
        p.cmd("MULTI")
        p.cmd("RPUSH", "{tx}l", "x")
        p.cmd("RPUSH", "{tx}l", "y")
        eq(p.cmd("EXEC"), b"*2\r\n:1\r\n:2\r\n")
        eq(a.read(), b"*2\r\n$5\r\n{tx}l\r\n$1\r\nx\r\n")
        # and by a script
        p.cmd("DEL", "{tx}l")
        a.send("BRPOP", "{tx}l", "0")
        wait_blocked(f, 1)
        eq(p.cmd("EVAL", "return redis.call('rpush', KEYS[1], 'fromlua')", "1", "{tx}l"), b":1\r\n")
        eq(a.read(), b"*2\r\n$5\r\n{tx}l\r\n$7\r\nfromlua\r\n")
        eq(blocked_clients(f), 0)


@T.case
def many_waiters_many_pushes():
    f = shared_frontdoor()
    n = 50
    conns = [f.conn() for _ in range(n)]
    conns[0].cmd("DEL", "bq:many")
    for c in conns:
        c.send("BLPOP", "bq:many", "10")
    wait_blocked(f, n)
    with f.conn() as p:
        for i in range(n):
            p.send("RPUSH", "bq:many", str(i))
        for i in range(n):
            p.read()
    got = sorted(int(parse(c.read())[1]) for c in conns)
    eq(got, list(range(n)))
    for c in conns:
        c.close()


@T.case
def element_popped_for_a_client_that_left_goes_back():
    """The redis backends: a waiter leaves while the server is busy, and a
    push reaches the server before the waiter's close does: redis-server
    serves the wait first. frontdoor drains the lent connection and gives
    the element back (storage/redis_conn.c rc_blocking_cancel), so the
    acknowledged push is not lost. Fails when the connection is closed
    outright (the element popped into a dead socket)."""
    if BACKEND != "redis":
        skip("the lent connections are the redis backends'; a redis-server of its own is paused here")
    rs = start_redis(enable_debug_command="yes")
    f = start_frontdoor(backend="redis", redis_address="127.0.0.1:%d" % rs.port)
    cases = [(("BLPOP", "gb:l", "0"), ("RPUSH", "gb:l", "a", "b", "c"), ("LRANGE", "gb:l", "0", "-1"),
              b"*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"),
             (("BRPOP", "gb:r", "0"), ("RPUSH", "gb:r", "a", "b", "c"), ("LRANGE", "gb:r", "0", "-1"),
              b"*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"),
             (("BLMPOP", "0", "1", "gb:m", "RIGHT", "COUNT", "2"), ("RPUSH", "gb:m", "a", "b", "c"),
              ("LRANGE", "gb:m", "0", "-1"), b"*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"),
             (("BZPOPMIN", "gb:z", "0"), ("ZADD", "gb:z", "1", "a", "2.5", "b"),
              ("ZRANGE", "gb:z", "0", "-1", "WITHSCORES"),
              b"*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$3\r\n2.5\r\n"),
             (("BZMPOP", "0", "1", "gb:zm", "MAX", "COUNT", "5"), ("ZADD", "gb:zm", "1", "a", "2", "b"),
              ("ZRANGE", "gb:zm", "0", "-1", "WITHSCORES"),
              b"*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n")]
    with rs.conn() as direct, f.conn() as p:
        for proto in (2, 3):
            for wait, push, read, want in cases:
                gone = f.conn()
                if proto == 3:
                    gone.cmd("HELLO", "3")
                gone.send(*wait)
                wait_blocked(f, 1)
                direct.send("DEBUG", "SLEEP", "0.3")        # the server reads nothing for 0.3 s
                time.sleep(0.05)
                p.send(*push)                               # queued at the server first...
                time.sleep(0.05)
                gone.close()                                # ...then the waiter's close
                wait_until(lambda: blocked_clients(f) == 0, timeout=5, what="the waiter gone")
                check(p.read(timeout=5).startswith(b":"), "the push acknowledged")
                eq(direct.read(timeout=5), b"+OK\r\n")
                wait_until(lambda: p.cmd(*read) == want, timeout=10,
                           what="%s: what was popped for the client that left is back (RESP%d)" % (wait[0], proto))
                p.cmd("DEL", wait[3] if wait[0] in ("BLMPOP", "BZMPOP") else wait[1])


@T.case
def remote_pool_is_bounded():
    if not REMOTE:
        skip("the lent-connection pool is the redis backends'")
    f = start_frontdoor(redis_blocking_pool_size=2)
    held = [f.conn() for _ in range(2)]
    for c in held:
        c.send("BLPOP", "{pool}k", "0")
    wait_blocked(f, 2)
    with f.conn() as c:
        t0 = time.monotonic()
        r = c.cmd("BLPOP", "{pool}k", "0")
        check(r.startswith(b"-ERR frontdoor's") and b"redis-blocking-pool-size 2" in r, r)
        check(time.monotonic() - t0 < 1, "the refusal must be immediate")
        eq(c.cmd("SET", "{pool}x", "1"), b"+OK\r\n")      # other clients are not held up
        eq(c.cmd("RPUSH", "{pool}k", "a", "b"), b":2\r\n")
    for c in held:
        check(parse(c.read())[0] == b"{pool}k")
        c.close()
    with f.conn() as c:
        eq(c.cmd("BLPOP", "{pool}k", "0.01"), b"*-1\r\n")   # connections came back


# ------------------------------------------------------------ differential

@T.case
def move_onto_wrong_type_destination_answers_wrongtype():
    """Issue 25: BRPOPLPUSH / BLMOVE woken by a push while dst holds a
    string answer -WRONGTYPE (Redis) and leave the element in src; a source
    overwritten by a string keeps them waiting."""
    f = shared_frontdoor()
    wrong = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    with f.conn() as a, f.conn() as p:
        for cmd in (("BRPOPLPUSH", "{bm}src", "{bm}dst", "0"),
                    ("BLMOVE", "{bm}src", "{bm}dst", "LEFT", "RIGHT", "0")):
            p.cmd("DEL", "{bm}src", "{bm}dst")
            p.cmd("SET", "{bm}dst", "str")
            a.send(*cmd)
            wait_blocked(f, 1)
            p.cmd("RPUSH", "{bm}src", "x")
            eq(a.read(timeout=3), wrong)
            eq(p.cmd("LRANGE", "{bm}src", "0", "-1"), b"*1\r\n$1\r\nx\r\n")
            eq(p.cmd("GET", "{bm}dst"), b"$3\r\nstr\r\n")
            eq(blocked_clients(f), 0)
            # the source turned into a string: no answer, still waiting
            p.cmd("DEL", "{bm}src", "{bm}dst")
            a.send(*cmd)
            wait_blocked(f, 1)
            p.cmd("SET", "{bm}src", "s")
            time.sleep(0.1)
            eq(blocked_clients(f), 1)
            p.cmd("DEL", "{bm}src")
            p.cmd("RPUSH", "{bm}src", "y")
            eq(a.read(timeout=3), b"$1\r\ny\r\n")
            eq(p.cmd("LRANGE", "{bm}dst", "0", "-1"), b"*1\r\n$1\r\ny\r\n")


@T.case
def sub_millisecond_and_huge_timeouts():
    """Issue 25: 0.0001 s times out (rounded up to 1 ms) instead of waiting
    forever; a timeout whose deadline overflows (Redis 7.0 accepts it)
    waits, and a push still serves it."""
    f = shared_frontdoor()
    with f.conn() as a, f.conn() as p:
        p.cmd("DEL", "bq:sub", "bq:subz")
        t0 = time.monotonic()
        eq(a.cmd("BZPOPMIN", "bq:subz", "0.0001"), b"*-1\r\n")
        eq(a.cmd("BLPOP", "bq:sub", "0.0001"), b"*-1\r\n")
        check(time.monotonic() - t0 < 2, "sub-ms timeouts took", time.monotonic() - t0)
        for cmd in (("BLPOP", "bq:sub", "9223372036854775"),
                    ("XREAD", "BLOCK", "9223372036854775807", "STREAMS", "bq:subx", "$")):
            a.send(*cmd)
            wait_blocked(f, 1)
            time.sleep(0.05)
            eq(blocked_clients(f), 1)
            if cmd[0] == "BLPOP":
                p.cmd("RPUSH", "bq:sub", "v")
                eq(a.read(timeout=3), b"*2\r\n$6\r\nbq:sub\r\n$1\r\nv\r\n")
            else:
                p.cmd("XADD", "bq:subx", "5-0", "f", "v")
                eq(parse(a.read(timeout=3)), [[b"bq:subx", [[b"5-0", [b"f", b"v"]]]]])
        p.cmd("DEL", "bq:subx")


def diff_pair(proto):
    ref = start_redis()
    d = Diff(ref.conn(), shared_frontdoor().conn())
    if proto == 3:
        d.cmd("HELLO", "3", same=lambda a, b: True)
    return d


def differential(proto):
    d = diff_pair(proto)
    d.cmd("DEL", "{d}l", "{d}m", "{d}z", "{d}s", "{d}d", same=lambda a, b: True)
    d.cmd("RPUSH", "{d}l", "a", "b", "c", "d", "e", "f")
    d.cmd("ZADD", "{d}z", "1", "x", "2", "y", "3", "z")
    d.cmd("SET", "{d}s", "str")
    for args in (
        ("BLPOP", "{d}l", "0"), ("BRPOP", "{d}m", "{d}l", "1"), ("BLPOP", "{d}l", "-1"),
        ("BLPOP", "{d}l", "abc"), ("BLPOP", "{d}l", "1e30"), ("BLPOP", "{d}l", "inf"),
        ("BLPOP", "{d}l", "nan"), ("BLPOP", "{d}s", "0"), ("BLPOP", "{d}m", "{d}s", "0"),
        ("BLPOP", "{d}l"), ("BRPOPLPUSH", "{d}l", "{d}d", "0"), ("BRPOPLPUSH", "{d}s", "{d}d", "0"),
        ("BLMOVE", "{d}l", "{d}d", "LEFT", "UP", "0"), ("BLMOVE", "{d}l", "{d}d", "RIGHT", "LEFT", "x"),
        ("BLMOVE", "{d}l", "{d}d", "RIGHT", "LEFT", "0"), ("LRANGE", "{d}d", "0", "-1"),
        ("BZPOPMIN", "{d}z", "0"), ("BZPOPMAX", "{d}m", "{d}z", "0.5"), ("BZPOPMIN", "{d}s", "0"),
        ("BZPOPMIN", "{d}z", "-0.5"), ("BLPOP", "{d}m", "0.01"), ("BZPOPMAX", "{d}m", "0.01"),
        ("BRPOPLPUSH", "{d}m", "{d}d", "0.01"),
        # issue 25: a sub-millisecond timeout is rounded up to 1 ms (not 0 =
        # forever); -0.0001 rounds to 0 (forever: not sent); inf, 1e300 and
        # -inf overflow to "negative" as in Redis 7.0
        ("BZPOPMIN", "{d}m", "0.0001"), ("BLPOP", "{d}m", "0.0009"), ("BRPOP", "{d}m", "1e-400"),
        ("BRPOPLPUSH", "{d}m", "{d}d", "0.0001"), ("BLMOVE", "{d}m", "{d}d", "LEFT", "LEFT", "0.0001"),
        ("BZPOPMAX", "{d}m", "0.0001"), ("BLPOP", "{d}m", "1e300"), ("BLPOP", "{d}m", "-inf"),
        ("BZPOPMIN", "{d}m", "inf"), ("BLPOP", "{d}m", "-1e300"), ("BLPOP", "{d}m", ""),
        ("BLPOP", "{d}m", " 1"), ("BZPOPMIN", "{d}m", "-nan"),
        ("CLIENT", "UNBLOCK", "abc"), ("CLIENT", "UNBLOCK", "1", "foo"), ("CLIENT", "UNBLOCK", "999999"),
        ("CLIENT", "NO-EVICT", "on"), ("CLIENT", "NO-EVICT", "maybe"),
    ):
        d.cmd(*args)
    with shared_frontdoor().conn() as c:
        mpop = not parse(c.cmd("COMMAND", "INFO", "lmpop"))[0] is None
    # inside MULTI nothing blocks; scripts may not call the blocking pops but BLMPOP/BZMPOP
    d.cmd("DEL", "{d}e", same=lambda a, b: True)
    d.cmd("MULTI")
    for args in (("BLPOP", "{d}e", "0"), ("BRPOPLPUSH", "{d}e", "{d}d", "0"), ("BLMOVE", "{d}e", "{d}d", "LEFT", "LEFT", "0"),
                 ("BZPOPMAX", "{d}e", "0"), ("RPUSH", "{d}e", "v"), ("BRPOP", "{d}e", "0")):
        d.cmd(*args)
    d.cmd("EXEC")
    d.cmd("EVAL", "return redis.call('blpop', KEYS[1], 0)", "1", "{d}e")
    if mpop:
        d.cmd("EVAL", "return redis.call('blmpop', 0, 1, KEYS[1], 'LEFT')", "1", "{d}e")
        d.cmd("RPUSH", "{d}l", "a", "b", "c")
        for args in (("BLMPOP", "0", "1", "{d}l", "LEFT", "COUNT", "2"), ("BLMPOP", "0.01", "1", "{d}m", "RIGHT"),
                     ("BLMPOP", "0", "0", "{d}l", "LEFT"), ("BLMPOP", "0", "1", "{d}l", "UP"),
                     ("BLMPOP", "0", "1", "{d}l", "LEFT", "COUNT", "0"),
                     ("BZMPOP", "0", "1", "{d}z", "MIN"), ("BZMPOP", "0.01", "1", "{d}m", "MAX", "COUNT", "3"),
                     ("BLMPOP", "0.0001", "1", "{d}m", "LEFT"), ("BZMPOP", "0.0001", "1", "{d}m", "MIN"),
                     ("BLMPOP", "inf", "1", "{d}m", "LEFT"), ("BZMPOP", "nan", "1", "{d}m", "MIN"),
                     # issue 25: numkeys, the end and COUNT are checked before the
                     # timeout (a count naming no key never reaches a cluster node)
                     ("BLMPOP", "-1", "0", "{d}m", "LEFT"), ("BLMPOP", "x", "1.5", "{d}m", "LEFT"),
                     ("BZMPOP", "x", "0", "{d}m", "MIN"), ("BZMPOP", "-1", "-1", "{d}m", "MIN"),
                     ("BLMPOP", "0.01", "+1", "{d}m", "LEFT"), ("BZMPOP", "0.01", "4294967297", "{d}m", "MIN"),
                     ("BLMPOP", "-1", "4294967297", "{d}m", "LEFT"), ("BZMPOP", "-1", "1", "{d}m", "LEFT"),
                     ("BLMPOP", "x", "1", "{d}m", "LEFT", "COUNT", "0"), ("BLMPOP", "x", "1", "{d}m", "LEFT", "extra"),
                     ("BZMPOP", "-1", "1", "{d}m", "MIN", "COUNT", "1", "COUNT", "2"),
                     ("BZMPOP", "x", "1", "{d}m", "MAX", "COUNT", "2")):
            d.cmd(*args)
    d.finish()


# ------------------------------------------------------------ streams (XREAD / XREADGROUP BLOCK)

@T.case
def redispy_xread_block_woken_within_100ms():
    need_redispy()
    f = shared_frontdoor()
    r = redis_client(f)
    r.delete("xq:wake")
    r.xadd("xq:wake", {"old": "1"}, id="1-1")
    v, p = redispy_woken_within_100ms(f, lambda: r.xread({"xq:wake": "$"}, block=0),
                                      lambda p: eq(p.xadd("xq:wake", {"job": "1"}, id="2-1"), b"2-1"),
                                      "xread")
    # `$` was 1-1 when it blocked: only the new entry
    eq(v, [[b"xq:wake", [(b"2-1", {b"job": b"1"})]]])
    eq(blocked_clients(f), 0)


@T.case
def xread_block_times_out_nil():
    f = shared_frontdoor()
    with f.conn() as c:
        c.cmd("DEL", "xq:none")
        t0 = time.monotonic()
        eq(c.cmd("XREAD", "BLOCK", "250", "STREAMS", "xq:none", "$"), b"*-1\r\n")
        dt = time.monotonic() - t0
        check(0.23 <= dt < 0.8, "BLOCK 250 took %.3f s" % dt)
        c.cmd("XGROUP", "CREATE", "xq:none", "g", "$", "MKSTREAM")
        c.cmd("HELLO", "3")
        eq(c.cmd("XREADGROUP", "GROUP", "g", "c", "BLOCK", "50", "STREAMS", "xq:none", ">"), b"_\r\n")
        eq(c.cmd("XREAD", "BLOCK", "50", "STREAMS", "xq:none", "$"), b"_\r\n")
    eq(blocked_clients(f), 0)


@T.case
def xread_block_several_streams_count_and_all_waiters():
    f = shared_frontdoor()
    with f.conn() as a, f.conn() as b, f.conn() as p:
        p.cmd("DEL", "{xs}a", "{xs}b")
        p.cmd("XADD", "{xs}a", "5-0", "f", "old")
        # two XREAD waiters on the same streams: a stream read takes nothing away, both are served
        a.send("XREAD", "COUNT", "1", "BLOCK", "0", "STREAMS", "{xs}a", "{xs}b", "$", "$")
        b.send("XREAD", "BLOCK", "0", "STREAMS", "{xs}b", "0-0")
        wait_blocked(f, 2)
        # two entries at once (one wake-up): COUNT 1 gives the first only
        p.cmd("MULTI")
        p.cmd("XADD", "{xs}b", "1-1", "n", "1")
        p.cmd("XADD", "{xs}b", "1-2", "n", "2")
        eq(parse(p.cmd("EXEC")), [b"1-1", b"1-2"])
        eq(a.read(timeout=3), b"*1\r\n*2\r\n$5\r\n{xs}b\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nn\r\n$1\r\n1\r\n")
        eq(parse(b.read(timeout=3)), [[b"{xs}b", [[b"1-1", [b"n", b"1"]], [b"1-2", [b"n", b"2"]]]]])
        # `$` of a stream that has entries: a later id wakes it
        a.send("XREAD", "BLOCK", "0", "STREAMS", "{xs}a", "$")
        wait_blocked(f, 1)
        p.cmd("XADD", "{xs}a", "6-0", "f", "new")
        eq(parse(a.read(timeout=3)), [[b"{xs}a", [[b"6-0", [b"f", b"new"]]]]])
    eq(blocked_clients(f), 0)


@T.case
def xreadgroup_block_fifo_each_entry_to_one_consumer():
    f = shared_frontdoor()
    with f.conn() as a, f.conn() as b, f.conn() as p:
        p.cmd("DEL", "xq:g")
        eq(p.cmd("XGROUP", "CREATE", "xq:g", "g", "$", "MKSTREAM"), b"+OK\r\n")
        a.send("XREADGROUP", "GROUP", "g", "c1", "BLOCK", "0", "STREAMS", "xq:g", ">")
        wait_blocked(f, 1)
        b.send("XREADGROUP", "GROUP", "g", "c2", "BLOCK", "0", "STREAMS", "xq:g", ">")
        wait_blocked(f, 2)
        t0 = time.monotonic()
        p.cmd("XADD", "xq:g", "1-0", "job", "a")
        eq(parse(a.read(timeout=3)), [[b"xq:g", [[b"1-0", [b"job", b"a"]]]]])
        check(time.monotonic() - t0 < 0.1, "XREADGROUP woken late")
        eq(blocked_clients(f), 1)                     # c2 still waits: the entry was c1's
        p.cmd("XADD", "xq:g", "2-0", "job", "b")
        eq(parse(b.read(timeout=3)), [[b"xq:g", [[b"2-0", [b"job", b"b"]]]]])
        eq(parse(p.cmd("XPENDING", "xq:g", "g")), [2, b"1-0", b"2-0", [[b"c1", b"1"], [b"c2", b"1"]]])
    eq(blocked_clients(f), 0)


@T.case
def xreadgroup_block_group_or_key_gone():
    f = shared_frontdoor()
    with f.conn() as a, f.conn() as p:
        p.cmd("DEL", "xq:gone")
        p.cmd("XGROUP", "CREATE", "xq:gone", "g", "$", "MKSTREAM")
        a.send("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "xq:gone", ">")
        wait_blocked(f, 1)
        eq(p.cmd("XGROUP", "DESTROY", "xq:gone", "g"), b":1\r\n")
        eq(a.read(timeout=3), b"-NOGROUP the consumer group this client was blocked on no longer exists\r\n")
        p.cmd("XGROUP", "CREATE", "xq:gone", "g", "$")
        a.send("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "xq:gone", ">")
        wait_blocked(f, 1)
        eq(p.cmd("DEL", "xq:gone"), b":1\r\n")
        eq(a.read(timeout=3), b"-UNBLOCKED the stream key no longer exists\r\n")
        # issue 25: FLUSHALL, FLUSHDB and an overwrite by another type end it too
        for ender in (("FLUSHALL",), ("FLUSHDB",), ("SET", "xq:gone", "x")):
            p.cmd("DEL", "xq:gone")
            p.cmd("XGROUP", "CREATE", "xq:gone", "g", "$", "MKSTREAM")
            a.send("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "xq:gone", ">")
            wait_blocked(f, 1)
            p.cmd(*ender)
            eq(a.read(timeout=3), b"-UNBLOCKED the stream key no longer exists\r\n")
        p.cmd("DEL", "xq:gone")
        # XREAD is not ended by a deletion: it waits for an entry after its id
        a.send("XREAD", "BLOCK", "0", "STREAMS", "xq:gone", "0-0")
        wait_blocked(f, 1)
        p.cmd("SET", "xq:gone", "x")
        p.cmd("DEL", "xq:gone")
        eq(blocked_clients(f), 1)
        p.cmd("XADD", "xq:gone", "3-0", "f", "v")
        eq(parse(a.read(timeout=3)), [[b"xq:gone", [[b"3-0", [b"f", b"v"]]]]])
    eq(blocked_clients(f), 0)


@T.case
def xread_block_client_unblock_and_disconnect():
    f = shared_frontdoor()
    with f.conn() as a, f.conn() as p:
        p.cmd("DEL", "xq:unb")
        client_unblock(f, a, p, ("XREAD", "BLOCK", "0", "STREAMS", "xq:unb", "$"))
        p.cmd("XGROUP", "CREATE", "xq:unb", "g", "$", "MKSTREAM")
        client_unblock(f, a, p, ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "xq:unb", ">"),
                       error=True)
        eq(a.cmd("PING"), b"+PONG\r\n")
        # a waiter that leaves takes nothing: the next one gets the entry
        leave_while_blocked(f, ("XREADGROUP", "GROUP", "g", "c0", "BLOCK", "0", "STREAMS", "xq:unb", ">"))
        a.send("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "xq:unb", ">")
        wait_blocked(f, 1)
        p.cmd("XADD", "xq:unb", "1-0", "f", "v")
        eq(parse(a.read(timeout=3)), [[b"xq:unb", [[b"1-0", [b"f", b"v"]]]]])
    eq(blocked_clients(f), 0)


def mask(r):
    """A reply with its stream ids masked (ids made of the time differ)."""
    return re.sub(rb"\$\d+\r\n\d+-\d+\r\n", b"<id>", r)


def stream_differential(proto):
    d = diff_pair(proto)
    d.cmd("DEL", "{x}s", "{x}t", "{x}e", "{x}str", same=lambda a, b: True)
    d.cmd("XADD", "{x}s", "1-1", "f", "v")
    d.cmd("XGROUP", "CREATE", "{x}s", "g", "0")
    d.cmd("SET", "{x}str", "v")
    for args in (
        ("XREAD", "BLOCK", "0", "STREAMS", "{x}s", "0"),                       # served at once
        ("XREAD", "COUNT", "1", "BLOCK", "10", "STREAMS", "{x}s", "{x}t", "0", "0"),
        ("XREAD", "BLOCK", "10", "STREAMS", "{x}s", "$"),                      # times out: nil
        ("XREAD", "BLOCK", "-1", "STREAMS", "{x}s", "$"), ("XREAD", "BLOCK", "x", "STREAMS", "{x}s", "$"),
        ("XREAD", "BLOCK", "10", "STREAMS", "{x}s"), ("XREAD", "BLOCK", "10", "STREAMS", "{x}s", ">"),
        ("XREAD", "BLOCK", "10", "STREAMS", "{x}str", "$"), ("XREAD", "BLOCK", "1.5", "STREAMS", "{x}s", "$"),
        ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "{x}s", ">"),   # served at once
        ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "10", "STREAMS", "{x}s", ">"),  # nil
        ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "10", "STREAMS", "{x}s", "0"),  # history: at once
        ("XREADGROUP", "GROUP", "nog", "c", "BLOCK", "10", "STREAMS", "{x}s", ">"),
        ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "10", "STREAMS", "{x}e", ">"),
        ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "10", "STREAMS", "{x}s", "$"),
        ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "10", "NOACK", "STREAMS", "{x}s", ">"),
        ("XPENDING", "{x}s", "g"),
    ):
        d.cmd(*args)
    # inside MULTI nothing blocks; scripts may not BLOCK (Redis 7.0's error)
    d.cmd("MULTI")
    d.cmd("XREAD", "BLOCK", "0", "STREAMS", "{x}s", "$")
    d.cmd("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "{x}s", ">")
    d.cmd("XADD", "{x}s", "2-1", "f", "w")
    d.cmd("XREAD", "BLOCK", "0", "STREAMS", "{x}s", "1-1")
    d.cmd("EXEC")
    d.cmd("EVAL", "return redis.pcall('xread', 'block', 0, 'streams', KEYS[1], '$')", "1", "{x}s")
    d.cmd("EVAL", "return redis.pcall('XREADGROUP', 'GROUP', 'g', 'c', 'BLOCK', 'x', 'STREAMS', KEYS[1], '>')", "1", "{x}s")
    d.cmd("EVAL", "return redis.pcall('xread', 'streams', KEYS[1], '$')", "1", "{x}s")
    # a wake-up's reply bytes: both sides blocked, the same XADD wakes them
    for args in (("XREAD", "BLOCK", "0", "STREAMS", "{x}t", "{x}s", "$", "$"),
                 ("XREADGROUP", "GROUP", "g", "c", "COUNT", "5", "BLOCK", "0", "STREAMS", "{x}s", ">")):
        if args[0] == "XREADGROUP":      # what the first wake-up added is read first
            d.cmd("XREADGROUP", "GROUP", "g", "c", "STREAMS", "{x}s", ">", norm=mask)
        d.ref.send(*args)
        d.fd.send(*args)
        time.sleep(0.1)
        wait_blocked(shared_frontdoor(), 1)
        for side in (d.ref, d.fd):
            o = Conn(side.port)
            o.cmd("XADD", "{x}s", "*", "k", "w")
            o.close()
        a, b = d.ref.read(timeout=3), d.fd.read(timeout=3)
        d._compare("wake-up of %s" % args[0], mask(a), mask(b))
    d.finish()


@T.case
def served_move_touches_watch():
    """issue 27: the push a served BLMOVE/BRPOPLPUSH makes into its
    destination touches a WATCH on it (and the pushed key's), as Redis 7.0;
    a chain of moves touches every key along it. redis-server and frontdoor
    run the same steps; EXEC aborts on both."""
    ref = start_redis()
    for block, watched, push in (
            (("BLMOVE", "{w}src", "{w}dst", "LEFT", "RIGHT", "0"), "{w}dst", ("RPUSH", "{w}src", "x")),
            (("BRPOPLPUSH", "{w}src", "{w}dst", "0"), "{w}dst", ("RPUSH", "{w}src", "x")),
            (("BLMOVE", "{w}src", "{w}dst", "RIGHT", "LEFT", "0"), "{w}src", ("LPUSH", "{w}src", "x")),
            (("BZMPOP", "0", "1", "{w}z", "MIN"), "{w}z", ("ZADD", "{w}z", "1", "a"))):
        got = []
        for srv, f in ((ref, None), (shared_frontdoor(), shared_frontdoor())):
            with srv.conn() as a, srv.conn() as p, srv.conn() as w:
                p.cmd("DEL", "{w}src", "{w}dst", "{w}z")
                eq(w.cmd("WATCH", watched), b"+OK\r\n")
                a.send(*block)
                if f:
                    wait_blocked(f, 1)
                else:
                    time.sleep(0.1)
                p.cmd(*push)
                got.append((a.read(), w.cmd("MULTI"), w.cmd("PING"), w.cmd("EXEC")))
        if got[0] != got[1] or got[0][3] != b"*-1\r\n":
            raise AssertionError("%r watching %s: redis-server %r, frontdoor %r" % (block, watched, got[0], got[1]))


@T.case
def woken_by_sort_and_georadius_store():
    """A waiter on the destination of SORT ... STORE or GEORADIUS ...
    STOREDIST is woken by it, as in Redis 7.0 (their store keys are keys:
    fd_command_keys, COMMAND GETKEYS)."""
    ref = start_redis()
    for block, writes in (
            (("BLPOP", "{s}dst", "0"), [("RPUSH", "{s}l", "3", "1", "2"), ("SORT", "{s}l", "STORE", "{s}dst")]),
            (("BZPOPMIN", "{s}gd", "0"), [("GEOADD", "{s}g", "13.361389", "38.115556", "a"),
                                          ("GEORADIUS", "{s}g", "15", "37", "200", "km", "STOREDIST", "{s}gd")])):
        got = []
        for srv, f in ((ref, None), (shared_frontdoor(), shared_frontdoor())):
            with srv.conn() as a, srv.conn() as p:
                p.cmd("DEL", "{s}l", "{s}dst", "{s}g", "{s}gd")
                a.send(*block)
                if f:
                    wait_blocked(f, 1)
                else:
                    time.sleep(0.1)
                for w in writes:
                    p.cmd(*w)
                got.append(read_or_blocked(a))
                p.cmd("RPUSH", "{s}dst", "z")
                p.cmd("ZADD", "{s}gd", "1", "z")
        if got[0] != got[1] or got[0] == "blocked":
            raise AssertionError("%r: redis-server %r, frontdoor %r" % (block, got[0], got[1]))


# issue 27: several clients blocked in BLMPOP/BZMPOP (and the single-key
# pops beside them): Redis serves every waiter of one ready key, first
# blocked first and from that key, before the next ready key (in the order
# they became ready)
ORDER = [
    ([("BLMPOP", "0", "2", "{o}k1", "{o}k2", "LEFT", "COUNT", "5"), ("BLMPOP", "0", "1", "{o}k2", "LEFT"),
      ("BLMPOP", "0", "2", "{o}k1", "{o}k2", "RIGHT")],
     [("MULTI",), ("RPUSH", "{o}k2", "a", "b"), ("RPUSH", "{o}k1", "c"), ("EXEC",)]),
    ([("BLMPOP", "0", "2", "{o}k1", "{o}k2", "LEFT"), ("BLMPOP", "0", "2", "{o}k2", "{o}k1", "LEFT"),
      ("BLMPOP", "0", "1", "{o}k1", "LEFT")],
     [("MULTI",), ("RPUSH", "{o}k2", "a", "b"), ("RPUSH", "{o}k1", "c", "d"), ("EXEC",)]),
    ([("BZMPOP", "0", "2", "{o}z1", "{o}z2", "MIN"), ("BZMPOP", "0", "2", "{o}z2", "{o}z1", "MAX", "COUNT", "2"),
      ("BZMPOP", "0", "1", "{o}z1", "MIN")],
     [("MULTI",), ("ZADD", "{o}z2", "1", "a", "2", "b", "3", "c"), ("ZADD", "{o}z1", "1", "x"), ("EXEC",)]),
    ([("BLMPOP", "0", "2", "{o}k1", "{o}k2", "LEFT"), ("BLPOP", "{o}k2", "{o}k1", "0"),
      ("BLMPOP", "0", "2", "{o}k2", "{o}k1", "RIGHT", "COUNT", "3")],
     [("EVAL", "redis.call('rpush', KEYS[1], 'a', 'b') redis.call('rpush', KEYS[2], 'c') return 1",
       "2", "{o}k1", "{o}k2")]),
]


def read_or_blocked(c):
    try:
        return c.read(0.5)
    except Exception:
        return "blocked"


def served_in_redis_order(fd):
    """Each of ORDER against a fresh redis-server and frontdoor fd: the
    waiters' replies (or 'blocked') must be the same."""
    ref = start_redis()
    for blocks, pushes in ORDER:
        got = []
        for srv, f in ((ref, None), (fd, fd)):
            cs = [srv.conn() for _ in blocks]
            with srv.conn() as p:
                p.cmd("DEL", "{o}k1", "{o}k2", "{o}z1", "{o}z2")
                for i, (c, b) in enumerate(zip(cs, blocks)):
                    c.send(*b)
                    if f:
                        wait_blocked(f, i + 1)
                    else:
                        time.sleep(0.05)
                for x in pushes:
                    p.cmd(*x)
                time.sleep(0.2)
                got.append([read_or_blocked(c) for c in cs])
                p.cmd("RPUSH", "{o}k1", "z", "z", "z")        # the one left waiting goes
                p.cmd("ZADD", "{o}z1", "9", "z")
            for c in cs:
                c.close()
        if got[0] != got[1]:
            raise AssertionError("%r then %r: redis-server %r, frontdoor %r" % (blocks, pushes, got[0], got[1]))


@T.case
def several_waiters_served_in_redis_order():
    served_in_redis_order(shared_frontdoor())


@T.case
def waiters_counted_once_settled_on_a_slow_backend():
    """mongodb, the emulator answering 10 ms late: a waiter looks at its
    keys once more after it joins their FIFOs (block_after_first); INFO
    counts it blocked only once those looks are over, so a write sent after
    INFO counted it is served in Redis's order (the ready keys in the order
    they were written). With the waiter counted at once, a transaction sent
    in that window was served in the waiters' own key order (CI, session 15)."""
    if BACKEND != "mongodb":
        skip("the window is the emulator's delay: mongodb only")
    from fdtest import MongoEmulator
    emu = MongoEmulator(args=["--delay-ms", "10"]).start()
    try:
        f = start_frontdoor(backend="mongodb", mongo_uri=emu.uri, backend_timeout=20000)
        try:
            served_in_redis_order(f)
        finally:
            f.stop()
    finally:
        emu.kill()


@T.case
def differential_resp2():
    differential(2)


@T.case
def differential_resp3():
    differential(3)


@T.case
def stream_differential_resp2():
    stream_differential(2)


@T.case
def stream_differential_resp3():
    stream_differential(3)


if __name__ == "__main__":
    T.main()
