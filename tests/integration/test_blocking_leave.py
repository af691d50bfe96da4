#!/usr/bin/env python3
"""test_blocking_leave — a client that leaves while its blocking pop is being
served loses nothing (MongoDB backend, the asynchronous one where frontdoor
itself pops on a wake-up).

Redis unblocks a client that disconnects before serving it, so its elements
stay in the list. On an asynchronous backend frontdoor's wake-up pop is in
flight for a while: when the client leaves in that window, what the pop took
is put back (proxy/blocking.c, restore_popped). The emulator answers every
command 100 ms late (--delay-ms) so that the window is wide and the client's
close surely falls inside it (whichever of the push and the pop the
emulator runs first, the key must end up with what was pushed).

Asserted, for BLPOP, BZPOPMIN and BLMPOP ... RIGHT COUNT 2: after the client
closed during the pop, the key holds exactly what was pushed, in order (with
scores for the sorted set); BLMOVE's element is on the source or the
destination, once.
"""
import time

from fdtest import (Tests, Conn, MongoEmulator, start_frontdoor, eq, wait_until, frontdoor_is_redis, skip,
                    info_fields)

T = Tests()
DELAY_MS = 100
_emu = []


_fd = []


def fd():
    """One frontdoor for every case (each case has keys of its own)."""
    if frontdoor_is_redis():
        skip("redis-server unblocks before popping: nothing to test")
    if not _emu:
        _emu.append(MongoEmulator(args=["--delay-ms", str(DELAY_MS)]).start())
    if not _fd or not _fd[0].alive():
        _fd[:] = [start_frontdoor(backend="mongodb", mongo_uri=_emu[0].uri, backend_timeout=20000, keep=True)]
    return _fd[0]


def blocked_clients(f):
    return int(info_fields(Conn(f.port).cmd("INFO", "clients").decode()).get("blocked_clients", -1))


def leave_while_served(f, block_args, push_args):
    """A blocks with block_args; B pushes; A closes as soon as B's push is
    acknowledged: frontdoor sent A's wake-up pop right after the push, and
    it is then at the backend for DELAY_MS."""
    a = Conn(f.port)
    a.send(*block_args)
    wait_until(lambda: blocked_clients(f) == 1, timeout=10, what="A blocked")
    b = Conn(f.port, timeout=10)
    b.cmd(*push_args)
    a.close()
    return b


@T.case
def blpop_put_back():
    f = fd()
    b = leave_while_served(f, ["BLPOP", "q", "0"], ["RPUSH", "q", "v1"])
    wait_until(lambda: b.call("LRANGE", "q", "0", "-1") == [b"v1"], timeout=5,
               what="the popped element back on q")


@T.case
def bzpopmin_put_back():
    f = fd()
    b = leave_while_served(f, ["BZPOPMIN", "z", "0"], ["ZADD", "z", "1.5", "m"])
    wait_until(lambda: b.call("ZRANGE", "z", "0", "-1", "WITHSCORES") == [b"m", b"1.5"], timeout=5,
               what="the popped member back on z with its score")


@T.case
def blmpop_count_put_back_in_order():
    f = fd()
    b = leave_while_served(f, ["BLMPOP", "0", "1", "l", "RIGHT", "COUNT", "2"], ["RPUSH", "l", "a", "b", "c"])
    wait_until(lambda: b.call("LRANGE", "l", "0", "-1") == [b"a", b"b", b"c"], timeout=5,
               what="the two popped elements back on l's tail in order")


@T.case
def blmove_element_stays_on_destination():
    f = fd()
    b = leave_while_served(f, ["BLMOVE", "s", "d", "LEFT", "RIGHT", "0"], ["RPUSH", "s", "x"])
    # on d when the move ran before frontdoor saw the close, else still on s
    wait_until(lambda: b.call("LRANGE", "s", "0", "-1") + b.call("LRANGE", "d", "0", "-1") == [b"x"],
               timeout=5, what="the element on s or d, once")


@T.case
def push_during_first_try_wakes():
    """A write sent while a new waiter's first pop is still at the backend
    ran after that pop: the waiter must still be woken (its keys are tried
    once more when it starts waiting)."""
    f = fd()
    a = Conn(f.port, timeout=10)
    b = Conn(f.port, timeout=10)
    a.send("BLPOP", "w", "0")
    time.sleep(DELAY_MS / 2000.0)
    b.cmd("RPUSH", "w", "job")                 # A's first try is still in flight
    eq(a.read(), b"*2\r\n$1\r\nw\r\n$3\r\njob\r\n", "A woken by the push")


@T.teardown
def stop_servers():
    for f in _fd:
        f.stop()
    for e in _emu:
        e.kill()


if __name__ == "__main__":
    T.main()
