#!/usr/bin/python3
"""LevelDB commits off the loop thread (docs/leveldb.md, "Commits off the
loop thread").

The writer thread is slowed down (or made to fail) by two test hooks read
from the environment when the backend opens:
  FRONTDOOR_LEVELDB_WRITE_DELAY_MS=n  every write of a batch takes n ms more
  FRONTDOOR_LEVELDB_FAIL_WRITE=n      the writer's n-th write fails (IO error)
  FRONTDOOR_LEVELDB_INLINE=0          every turn goes to the writer (no inline
                                      commits while no write can stall)
With a commit stalled for a second, other clients are still served (reads,
and writes, whose replies wait), a write's reply is not sent before its
commit is done, a pipeline's replies stay in order, MULTI/EXEC and scripts
still work, and a failed commit fails the writes it held.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import Tests, start_frontdoor, check, eq, parse, info_fields, encode_many, run, REDIS_BENCHMARK

T = Tests(case_timeout=60)
DELAY = "FRONTDOOR_LEVELDB_WRITE_DELAY_MS"
FAIL = "FRONTDOOR_LEVELDB_FAIL_WRITE"
INLINE = "FRONTDOOR_LEVELDB_INLINE"


def start(delay_ms=0, fail_nth=0, inline=False, **directives):
    env = {DELAY: str(delay_ms), FAIL: str(fail_nth), INLINE: "1" if inline else "0"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return start_frontdoor(backend="leveldb", durability=directives.pop("durability", "nosync"), **directives)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def no_reply_within(conn, seconds):
    """True when conn has no reply within `seconds`."""
    try:
        r = conn.read(timeout=seconds)
    except Exception:
        return True
    raise AssertionError("unexpected early reply %r" % (r,))


def backend_info(conn):
    return info_fields(parse(conn.cmd("INFO", "backend")))


@T.case
def read_served_while_commit_stalled():
    fd = start(delay_ms=1500)
    a, b = fd.conn(timeout=10), fd.conn(timeout=10)
    t0 = time.monotonic()
    a.send("SET", "k", "v1")
    time.sleep(0.1)
    # the loop serves other clients while the commit is in the writer
    t1 = time.monotonic()
    eq(b.cmd("PING"), b"+PONG\r\n")
    eq(b.cmd("GET", "other"), b"$-1\r\n")
    # an uncommitted write is visible to readers (docs: what a reader sees)
    eq(b.cmd("GET", "k"), b"$2\r\nv1\r\n")
    served = time.monotonic() - t1
    check(served < 0.5, "reads took %.3fs while a commit was stalled" % served)
    f = backend_info(b)
    check(int(f["leveldb_held_replies"]) >= 1, "held replies", f.get("leveldb_held_replies"))
    check(int(f["leveldb_commits_in_flight"]) >= 1, "in flight", f.get("leveldb_commits_in_flight"))
    # the write's reply waits for its commit
    no_reply_within(a, 0.5)
    eq(a.read(timeout=10), b"+OK\r\n")
    took = time.monotonic() - t0
    check(took >= 1.3, "the SET was acknowledged after %.3fs, before its 1.5s commit" % took)
    fd.kill()
    fd.restart()
    eq(fd.conn().cmd("GET", "k"), b"$2\r\nv1\r\n", "acknowledged write survives a kill")


@T.case
def write_reply_not_before_commit_sync():
    fd = start(delay_ms=700, durability="sync")
    a = fd.conn(timeout=10)
    for i in range(3):
        t0 = time.monotonic()
        eq(a.cmd("INCR", "n"), (":%d\r\n" % (i + 1)).encode())
        took = time.monotonic() - t0
        check(took >= 0.6, "INCR %d acknowledged after %.3fs (commit takes 0.7s)" % (i, took))
    fd.kill()
    fd.restart()
    eq(fd.conn().cmd("GET", "n"), b"$1\r\n3\r\n")


@T.case
def pipeline_order_with_held_writes():
    fd = start(delay_ms=300)
    a = fd.conn(timeout=10)
    cmds = [("SET", "a", "1"), ("GET", "a"), ("INCR", "c"), ("PING",), ("GET", "c"),
            ("RPUSH", "l", "x", "y"), ("LRANGE", "l", "0", "-1"), ("DEL", "a"), ("EXISTS", "a")]
    t0 = time.monotonic()
    a.send_raw(encode_many(cmds))
    got = [a.read(timeout=10) for _ in cmds]
    eq(got, [b"+OK\r\n", b"$1\r\n1\r\n", b":1\r\n", b"+PONG\r\n", b"$1\r\n1\r\n",
             b":2\r\n", b"*2\r\n$1\r\nx\r\n$1\r\ny\r\n", b":1\r\n", b":0\r\n"])
    check(time.monotonic() - t0 >= 0.25, "replies came before the commit")


@T.case
def writes_during_stall_are_merged_and_stored():
    fd = start(delay_ms=800)
    a, b = fd.conn(timeout=10), fd.conn(timeout=10)
    a.send("SET", "first", "1")
    time.sleep(0.1)
    # more turns while the first commit is stalled: one batch waits, the next turns merge into it
    for i in range(20):
        b.send_raw(encode_many([("SET", "k%d" % i, str(i)), ("HSET", "h", "f%d" % i, str(i))]))
        time.sleep(0.01)
    c = fd.conn(timeout=10)
    # a cursor read (HGETALL, SCAN) through the uncommitted batches
    h = parse(c.cmd("HLEN", "h"))
    eq(h, 20)
    keys = set()
    cur = b"0"
    while True:
        r = parse(c.cmd("SCAN", cur, "COUNT", "100"))
        cur = r[0]
        keys.update(r[1])
        if cur == b"0":
            break
    check({b"first", b"h"} | {("k%d" % i).encode() for i in range(20)} <= keys, "scan through layers", sorted(keys)[:5])
    eq(a.read(timeout=10), b"+OK\r\n")
    got = [b.read(timeout=10) for _ in range(40)]
    eq(got, [b"+OK\r\n", b":1\r\n"] * 20)
    f = backend_info(c)
    check(int(f["leveldb_merged_turns"]) >= 1, "merged turns", f.get("leveldb_merged_turns"))
    fd.kill()
    fd.restart()
    d = fd.conn()
    eq(parse(d.cmd("HLEN", "h")), 20)
    eq(d.cmd("GET", "k19"), b"$2\r\n19\r\n")


@T.case
def exec_and_script_during_stall():
    fd = start(delay_ms=400)
    a, b = fd.conn(timeout=10), fd.conn(timeout=10)
    a.send_raw(encode_many([("MULTI",), ("SET", "m", "1"), ("INCR", "m"), ("GET", "m"), ("EXEC",)]))
    eq([a.read(timeout=10) for _ in range(5)],
       [b"+OK\r\n", b"+QUEUED\r\n", b"+QUEUED\r\n", b"+QUEUED\r\n", b"*3\r\n+OK\r\n:2\r\n$1\r\n2\r\n"])
    t0 = time.monotonic()
    eq(b.cmd("EVAL", "redis.call('set', KEYS[1], 'v') return redis.call('incr', KEYS[2])", "2", "s", "m"), b":3\r\n")
    check(time.monotonic() - t0 >= 0.35, "a script's writes were acknowledged before their commit")
    eq(b.cmd("GET", "s"), b"$1\r\nv\r\n")
    eq(b.cmd("FLUSHDB"), b"+OK\r\n")
    eq(b.cmd("DBSIZE"), b":0\r\n")


@T.case
def blocking_pop_served_through_held_push():
    fd = start(delay_ms=300)
    a, b = fd.conn(timeout=10), fd.conn(timeout=10)
    a.send("BLPOP", "q", "5")
    time.sleep(0.1)
    eq(b.cmd("LPUSH", "q", "x"), b":1\r\n")
    eq(a.read(timeout=10), b"*2\r\n$1\r\nq\r\n$1\r\nx\r\n")
    eq(b.cmd("LLEN", "q"), b":0\r\n")


@T.case
def failed_commit_fails_its_writes():
    # the writer's 3rd write fails: its SET gets an error, never an OK
    fd = start(fail_nth=3)
    a = fd.conn(timeout=10)
    eq(a.cmd("SET", "a", "1"), b"+OK\r\n")
    eq(a.cmd("SET", "b", "2"), b"+OK\r\n")
    eq(a.cmd("SET", "c", "3"), b"-ERR storage I/O error\r\n")
    eq(a.cmd("GET", "c"), b"$-1\r\n", "the failed write is gone")
    eq(a.cmd("SET", "d", "4"), b"+OK\r\n", "later commits work again")
    f = backend_info(a)
    eq(f["leveldb_commit_failures"], "1")
    check("injected" in f["leveldb_last_error"], f["leveldb_last_error"])
    fd.kill()
    fd.restart()
    d = fd.conn()
    eq([d.cmd("GET", k) for k in "abcd"], [b"$1\r\n1\r\n", b"$1\r\n2\r\n", b"$-1\r\n", b"$1\r\n4\r\n"])


@T.case
def many_writers_lose_no_reply():
    # batches finish while the loop collects and retires others: every held
    # reply must still be sent (a lost one hangs its client)
    for delay, inline in ((0, True), (0, False), (1, False)):
        fd = start(delay_ms=delay, inline=inline)
        rc, out = run(["timeout", "-k", "5", "40", REDIS_BENCHMARK, "-h", "127.0.0.1", "-p", str(fd.port),
                       "-t", "set,incr,lpush,lpop,hset", "-n", "20000", "-r", "1000", "-c", "20", "-P", "4", "-q"],
                      timeout=60)
        check(rc == 0, "redis-benchmark exit %s (124: a client waited forever)" % rc, out[-500:])
        f = backend_info(fd.conn())
        eq((f["leveldb_held_replies"], f["leveldb_commits_in_flight"]), ("0", "0"))
        fd.stop()


@T.case
def inline_and_writer_turns_keep_order():
    # a 256 KB memtable: its last part and every switch go to the writer,
    # the rest is written inline; a pipelined INCR crossing both keeps its
    # order, and every acknowledged write survives kill -9
    fd = start(inline=True, leveldb_write_buffer_size="256kb")
    c = fd.conn(timeout=30)
    eq(c.cmd("SET", "warm", "x"), b"+OK\r\n")
    f = backend_info(c)
    eq(f["leveldb_inline_mode"], "yes")
    check(int(f["leveldb_inline_commits"]) >= 1, "inline commits", f.get("leveldb_inline_commits"))
    # turns of ~20 KB: light (inline) until the memtable estimate nears the
    # 256 KB buffer, then the writer takes the switch, then inline again
    big = "v" * 2000
    n, rounds, per = 0, 100, 10
    for r in range(rounds):
        cmds = []
        for i in range(per):
            cmds.append(("SET", "big:%d:%d" % (r, i), big))
            cmds.append(("INCR", "ctr"))
        c.send_raw(encode_many(cmds))
        for i in range(per):
            eq(c.read(), b"+OK\r\n")
            n += 1
            eq(c.read(), b":%d\r\n" % n)
    f = backend_info(c)
    inline_commits, commits = int(f["leveldb_inline_commits"]), int(f["leveldb_commits"])
    # a slow inline commit that slept sends the next ones to the writer for a
    # while (under ASan and a parallel ctest that happens: CI saw 17 of 103),
    # so the bound asks that both paths were used, not how often
    check(inline_commits >= 10 and commits - inline_commits >= 3,
          "both paths used: %d inline of %d commits (%s blocked)"
          % (inline_commits, commits, f["leveldb_inline_blocked"]))
    check(int(f["leveldb_inline_polls"]) >= 3, "polls after the writer", f.get("leveldb_inline_polls"))
    # slow inline commits (> LD_STALL_US) are the machine's, not the order's:
    # under a parallel ctest or the sanitizers a commit can be preempted, so
    # their count is reported, not bounded (the order and the kill -9 below are)
    print("      %s of %d inline commits were slow" % (f["leveldb_inline_slow"], inline_commits))
    fd.kill()
    fd.restart()
    d = fd.conn(timeout=30)
    eq(d.cmd("GET", "ctr"), b"$%d\r\n%d\r\n" % (len(str(n)), n))
    eq(d.cmd("GET", "big:%d:%d" % (rounds - 1, per - 1)), b"$2000\r\n" + big.encode() + b"\r\n")
    eq(d.cmd("DBSIZE"), b":%d\r\n" % (rounds * per + 2))


if __name__ == "__main__":
    T.main()
