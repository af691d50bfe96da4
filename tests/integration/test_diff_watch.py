#!/usr/bin/python3
"""Differential test of WATCH and expiry (proxy/multi.c): the same steps go
to a real redis-server 7.0 and to frontdoor, every reply compared byte for
byte, each case once in RESP2 and once in RESP3, on every backend.

Redis 7.0's rules (multi.c, db.c): a watched key that was live when WATCH ran
and has expired by EXEC makes EXEC answer a null array; a key absent or
already expired at WATCH that is still absent at EXEC does not; FLUSHDB
touches only the watched keys that exist. A step ("@B", cmd...) runs on a
second client of each server; ("SLEEP", s) waits on both. Every key shares
one hash tag, so the cases run unchanged through a Redis Cluster. Sleeps are
short (about 0.1 s a case and protocol).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import Tests, diff_case, diff_pair, diff_pipelined, shared_pair

T = Tests(case_timeout=60)

PAST = 0.12     # seconds: past a 50 ms expiry on both servers


def case(name, steps):
    diff_case(T, name, steps, first=())


pipelined = diff_pipelined


def expect_exec_null(last_reply_of):
    """A check that the case is what it says (not only equal on both sides)."""
    def step(two):
        a, b = two.a.cmd("EXEC")
        if a not in (b"*-1\r\n", b"_\r\n"):
            raise AssertionError("%s: redis-server's EXEC should abort: %r" % (last_reply_of, a))
    return step


# a key live at WATCH, expired by EXEC: EXEC aborts
case("watch_key_expires_before_exec", [
    ("SET", "{t}k", "v"), ("PEXPIRE", "{t}k", "50"), ("WATCH", "{t}k"), ("SLEEP", PAST),
    ("MULTI",), ("SET", "{t}out", "ran"), expect_exec_null("expired watched key"),
    ("GET", "{t}out"), ("EXISTS", "{t}k"),
    # the aborted EXEC dropped the watches: the next transaction runs
    ("MULTI",), ("SET", "{t}out", "second"), ("EXEC",), ("GET", "{t}out"),
])

# SET ... PX and one expiring key among several watched ones; the expired key
# read meanwhile (Redis deletes it then) changes nothing
case("watch_several_one_expires", [
    ("SET", "{t}a", "1"), ("SET", "{t}b", "2", "PX", "50"), ("WATCH", "{t}a", "{t}b", "{t}none"),
    ("SLEEP", PAST), ("GET", "{t}b"), ("MULTI",), ("INCR", "{t}a"), ("EXEC",), ("GET", "{t}a"),
    ("SET", "{t}c", "3", "PX", "50"), ("WATCH", "{t}c"), ("SLEEP", PAST), ("UNWATCH",),
    ("MULTI",), ("INCR", "{t}a"), ("EXEC",),
])

# absent or already expired at WATCH, still absent at EXEC: EXEC runs
case("watch_absent_or_expired_key_runs", [
    ("WATCH", "{t}none"), ("SLEEP", 0.02), ("MULTI",), ("SET", "{t}out", "1"), ("EXEC",),
    ("SET", "{t}k", "v", "PX", "10"), ("SLEEP", 0.05), ("WATCH", "{t}k"), ("SLEEP", 0.02),
    ("MULTI",), ("SET", "{t}out", "2"), ("EXEC",), ("GET", "{t}out"), ("EXISTS", "{t}k"),
    # then written by another client: that is a change
    ("SET", "{t}k", "v", "PX", "10"), ("SLEEP", 0.05), ("WATCH", "{t}k"), ("@B", "SET", "{t}k", "new"),
    ("MULTI",), ("GET", "{t}k"), ("EXEC",),
])

# an expiry far away: EXEC runs; PERSIST (a write) by another client aborts
case("watch_far_expiry_and_persist", [
    ("SET", "{t}k", "v", "EX", "100"), ("WATCH", "{t}k"), ("MULTI",), ("GET", "{t}k"), ("EXEC",),
    ("WATCH", "{t}k"), ("@B", "PERSIST", "{t}k"), ("MULTI",), ("GET", "{t}k"), ("EXEC",), ("TTL", "{t}k"),
    ("PEXPIRE", "{t}k", "50"), ("WATCH", "{t}k"), ("@B", "PERSIST", "{t}k"), ("SLEEP", PAST),
    ("MULTI",), ("GET", "{t}k"), ("EXEC",), ("GET", "{t}k"),
    # a new expiry set by another client after WATCH: a write too
    ("WATCH", "{t}k"), ("@B", "PEXPIRE", "{t}k", "100000"), ("MULTI",), ("GET", "{t}k"), ("EXEC",),
])

# FLUSHDB/FLUSHALL touch only the watched keys that exist (Redis 7.0's
# touchAllWatchedKeysInDb): an absent or already expired key is not changed
case("watch_flush_touches_existing_keys_only", [
    ("WATCH", "{t}none"), ("@B", "FLUSHDB"), ("MULTI",), ("SET", "{t}out", "1"), ("EXEC",),
    ("SET", "{t}k", "v", "PX", "10"), ("SLEEP", 0.05), ("WATCH", "{t}k"), ("@B", "FLUSHALL"),
    ("MULTI",), ("SET", "{t}out", "2"), ("EXEC",), ("GET", "{t}out"),
    ("WATCH", "{t}out", "{t}none"), ("@B", "FLUSHDB"), ("MULTI",), ("SET", "{t}out", "3"), ("EXEC",),
    ("EXISTS", "{t}out"),
    # SWAPDB 0 0 (the only swap frontdoor has) changes nothing
    ("SET", "{t}s", "1"), ("WATCH", "{t}s"), ("SWAPDB", "0", "0"), ("MULTI",), ("GET", "{t}s"), ("EXEC",),
])

# pipelined: WATCH's reply waits for the backend's answers, the rest stays in order
case("watch_pipelined_in_order", [
    ("SET", "{t}k", "v", "EX", "100"), ("SET", "{t}e", "v", "PX", "60"),
    pipelined([("WATCH", "{t}k", "{t}x", "{t}e"), ("GET", "{t}k"), ("WATCH", "{t}y"), ("MULTI",),
               ("INCR", "{t}n"), ("PTTL", "{t}none"), ("EXEC",), ("GET", "{t}n")]),
    pipelined([("WATCH", "{t}e"), ("MULTI",), ("INCR", "{t}n"), ("DISCARD",), ("UNWATCH",),
               ("WATCH", "{t}e", "{t}k")]),
    ("SLEEP", PAST),
    pipelined([("MULTI",), ("INCR", "{t}n"), ("EXEC",), ("GET", "{t}n"), ("WATCH", "{t}k"),
               ("MULTI",), ("INCR", "{t}n"), ("EXEC",), ("GET", "{t}n")]),
])

# many keys in one WATCH, and WATCH again after a change (Redis 7.0: nothing
# more is watched once dirty; EXEC aborts either way)
case("watch_many_keys_and_dirty", [
    ("MSET", "{t}1", "a", "{t}2", "b", "{t}3", "c"), ("PEXPIRE", "{t}2", "100000"),
    ("WATCH",) + tuple("{t}%d" % i for i in range(40)), ("MULTI",), ("GET", "{t}2"), ("EXEC",),
    ("WATCH", "{t}1"), ("@B", "SET", "{t}1", "z"), ("WATCH", "{t}2", "{t}3"), ("MULTI",), ("EXEC",),
    ("MULTI",), ("GET", "{t}1"), ("EXEC",),
])


def watch_half_close_and_gone():
    """A client that pipelines WATCH ... EXEC and half-closes gets every
    reply (WATCH's may be owed by the backend meanwhile: the rest is not
    dropped), the same bytes as redis-server's; clients that go away while
    their WATCH is asked about leave the server serving."""
    import socket
    ref, fd = shared_pair()
    d = diff_pair()
    d.cmd("SET", "{t}k", "1", "EX", "100")
    d.ref.close()
    d.fd.close()
    cmds = [("WATCH", "{t}k", "{t}none"), ("MULTI",), ("INCR", "{t}k"), ("EXEC",), ("GET", "{t}k")]
    got = []
    for srv in (ref, fd):
        c = srv.conn()
        c.send_many(cmds)
        c.sock.shutdown(socket.SHUT_WR)
        got.append(c.read_all_until_close(5.0))
        c.close()
    if got[0] != got[1]:
        raise AssertionError("half-closed pipeline: redis-server %r, frontdoor %r" % (got[0], got[1]))
    if not got[1][1]:
        raise AssertionError("frontdoor did not close the half-closed connection")
    keys = tuple("{t}g%d" % i for i in range(200))
    for _ in range(20):
        c = fd.conn()
        c.send_many([("WATCH",) + keys, ("MULTI",), ("INCR", "{t}k"), ("EXEC",)])
        c.close()
    with fd.conn() as c:   # their commands may or may not have run yet: the server serves
        r = c.cmd("PING")
        if r != b"+PONG\r\n":
            raise AssertionError("after clients went away mid-WATCH: PING answered %r" % r)
        c.send_many([("WATCH", "{t}quiet"), ("MULTI",), ("PING",), ("EXEC",)])
        r = c.read_n(4)
        if r != [b"+OK\r\n", b"+OK\r\n", b"+QUEUED\r\n", b"*1\r\n+PONG\r\n"]:
            raise AssertionError("after clients went away mid-WATCH: %r" % r)


T.add("watch_half_close_and_gone", watch_half_close_and_gone)


if __name__ == "__main__":
    T.main()
