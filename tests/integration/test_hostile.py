#!/usr/bin/env python3
"""Hostile clients (issue 25, part 3; docs/robustness.md "Hostile clients and
soak"). One frontdoor (timeout 2, maxclients 120, a 1 MB query buffer limit)
takes rounds of hostile scenarios while a well-behaved client (fdtest.Probe)
keeps checking its own SET/GET with a bounded round trip:

  * idle connections up to and past maxclients: the ones past it get
    "-ERR max number of clients reached" and are closed, the others work;
  * half a command, then silence: closed by `timeout`; an inline request
    that never ends: closed by the query buffer bound, whatever it costs;
  * a connection flood: threads connecting and dropping as fast as they can;
  * a disconnect mid-pipeline (MBs of replies never read), mid-MULTI (the
    queue is dropped, nothing runs), right after an EVAL (the script runs
    whole), while blocked (a later push is not lost to the dead client),
    while subscribed with unread messages (the subscription goes).

After each round the server is back to its clients, blocked clients and
subscriptions; VmRSS after the rounds is within 10 % of its baseline, taken
after one warm-up round (glibc's arenas and frontdoor's lazily grown
structures). The same scenarios run in short form on any backend with
FD_BACKEND.
"""

import errno
import os
import socket
import threading
import time

from fdtest import (Tests, Conn, ConnClosed, Probe, start_frontdoor, check, eq, wait_until, encode,
                    parse, info_fields, settled_rss_kb, HOST, skip, is_sanitized)

T = Tests(case_timeout=120)

MAXCLIENTS = 120
TIMEOUT = 2


class Admin:
    """Checks on a fresh connection each time: one kept open would itself be
    closed by the 2 s idle timeout while a scenario runs."""

    def __init__(self, fd):
        self.fd, self.port = fd, fd.port

    def cmd(self, *args):
        with Conn(self.port, timeout=20) as c:
            try:
                return c.cmd(*args)
            except ConnClosed as e:
                raise AssertionError("%s: connection closed, after %r\n  frontdoor log: %s"
                                     % (args[0], e.partial, self.fd.log()[-1500:]))

    def pipe(self, data, n):
        with Conn(self.port, timeout=20) as c:
            c.send_raw(data)
            return c.read_n(n)


def clients_info(c):
    return info_fields(parse(c.cmd("INFO", "clients")))


def open_many(port, n):
    out = []
    for _ in range(n):
        out.append(Conn(port, timeout=5.0))
    return out


def past_maxclients(fd, admin):
    """Idle connections up to maxclients and 10 past it."""
    # the probe and `held`, once the admin connections of earlier checks are gone
    held = Conn(fd.port)
    wait_until(lambda: clients_info(held).get("connected_clients") == "2", timeout=5,
               what="2 clients before the maxclients scenario")
    room = MAXCLIENTS - 2
    conns = open_many(fd.port, room + 10)
    over, ok = conns[room:], conns[:room]
    conns.append(held)
    try:
        # the last 10 are told and closed; the others answer a PING
        for i, c in enumerate(over):
            data, closed = c.read_all_until_close(3.0)
            eq(data, b"-ERR max number of clients reached\r\n", "client %d past maxclients" % i)
            check(closed, "client %d past maxclients must be closed" % i)
        for c in ok:
            c.send_raw(encode("PING"))
        for i, c in enumerate(ok):
            eq(c.read(), b"+PONG\r\n", "idle client %d under maxclients" % i)
    finally:
        for c in conns:
            c.close()


def half_commands(fd):
    """Clients that stop in the middle of a command: closed by `timeout`."""
    halves = [b"*3\r\n$3\r\nSET\r\n$4\r\nhalf\r\n$10\r\nabc",
              b"*3\r\n$3\r\nSET\r\n", b"*2\r\n", b"SET half", b"$3\r\nGET"]
    conns = []
    for h in halves:
        c = Conn(fd.port)
        c.send_raw(h)
        conns.append(c)
    return conns


def endless_inline(fd):
    """An inline request that never ends: bounded (the 64 KB inline limit or
    the query buffer limit), the client is closed."""
    c = Conn(fd.port)
    sent = 0
    try:
        while sent < (8 << 20):
            c.send_raw(b"x" * 65536)
            sent += 65536
    except OSError:
        pass
    data, closed = c.read_all_until_close(5.0)
    c.close()
    check(closed, "an endless inline request must be closed (sent %d bytes)" % sent)
    check(sent < (8 << 20) or data.startswith(b"-ERR"), "endless inline: an error", data[:100])


def flood(fd, seconds=1.5, threads=4, most=2000):
    """Connections opened and dropped as fast as possible (at most `most`),
    some with half a PING, some with a whole one and no wait for the reply."""
    stop = time.monotonic() + seconds
    counts = [0] * threads
    errors = []

    def run(i):
        n = 0
        while time.monotonic() < stop and n < most // threads:
            try:
                s = socket.create_connection((HOST, fd.port), timeout=5)
                if n % 3 == 1:
                    s.sendall(b"*1\r\n$4\r\nPI")
                elif n % 3 == 2:
                    s.sendall(encode("PING"))
                # most leave with a RST: the TIME_WAITs of a graceful close
                # on our side would use up the local ports
                if n % 4 != 3:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                s.close()
                n += 1
            except OSError as e:
                if e.errno == errno.EADDRNOTAVAIL:     # our side out of local ports
                    time.sleep(0.01)
                    continue
                # past maxclients a connect still succeeds (then the error
                # line); a refused connect would mean the listener went away
                errors.append(repr(e))
                time.sleep(0.01)
        counts[i] = n

    ts = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(seconds + 30)
    check(len(errors) <= sum(counts) // 100, "connect errors in the flood", errors[:5])
    return sum(counts)


def drop_mid_pipeline(fd, admin):
    """Pipelines of big replies that are never read, then a close."""
    admin.cmd("SET", "big:val", "v" * 65536)
    for _ in range(4):
        c = Conn(fd.port)
        c.send_raw(encode("GET", "big:val") * 300 + encode("INCR", "pipe:ctr") * 2000)
        c.close()


def drop_mid_multi(fd, admin, rnd):
    c = Conn(fd.port)
    eq(c.cmd("MULTI"), b"+OK\r\n", "MULTI")
    for i in range(50):
        eq(c.cmd("SET", "{multi%d}:%d" % (rnd, i), "x" * 1000), b"+QUEUED\r\n", "queued")
    c.close()
    return ["{multi%d}:%d" % (rnd, i) for i in range(50)]


def drop_after_eval(fd, rnd):
    c = Conn(fd.port)
    # 2000 INCRs take milliseconds here, but seconds of emulator round trips on
    # mongodb (other clients held meanwhile): 200 there
    n = 200 if os.environ.get("FD_BACKEND") == "mongodb" else 2000
    c.send("EVAL", "for i=1,%d do redis.call('INCR', KEYS[1]) end return 1" % n, "1",
           "script:%d" % rnd)
    c.close()
    return n


def drop_while_blocked(fd, admin, rnd):
    conns = []
    for i in range(5):
        c = Conn(fd.port)
        c.send("BLPOP", "blk:%d:%d" % (rnd, i), "0")
        conns.append(c)
    # timeout 30: on mongodb the previous step's 2000-INCR script (emulator round trips,
    # other clients held) can still be running
    wait_until(lambda: clients_info(admin).get("blocked_clients") == "5", timeout=30,
               what="5 blocked clients")
    for c in conns:
        c.close()


def drop_while_subscribed(fd, admin, rnd):
    subs = []
    for i in range(4):
        c = Conn(fd.port)
        c.send("SUBSCRIBE", "ch:%d" % rnd)
        c.read()
        c.send("PSUBSCRIBE", "pat:%d:*" % rnd)
        c.read()
        subs.append(c)
    payload = "m" * 1024
    reps = admin.pipe(b"".join(encode("PUBLISH", "ch:%d" % rnd, payload) for _ in range(500)), 500)
    # on the redis backends the count is the server's: one relay connection,
    # and a cluster node counts only its own subscribers: 0 when PUBLISH's
    # node is not the relay's (docs/pubsub.md)
    backend = os.environ.get("FD_BACKEND")
    want = {"redis": [1], "redis-cluster": [0, 1]}.get(backend, [4])
    check(reps[-1] in [b":%d\r\n" % w for w in want],
          "the last message reached the 4 subscribers: %r, want one of %r" % (reps[-1], want))
    for c in subs:
        c.close()


def hostile_round(fd, admin, rnd):
    """One round of every scenario; returns a description of its size."""
    past_maxclients(fd, admin)
    halves = half_commands(fd)
    t_half = time.monotonic()
    endless_inline(fd)
    n = flood(fd)
    # the flood's connections are closed by their clients; frontdoor may
    # still be reading their FINs (a loaded machine): the next scenarios'
    # clients must not meet maxclients because of them. Here: the probe,
    # admin, the halves (their idle timeout is checked below) and no more.
    # (the asking connection itself may meet maxclients meanwhile: not yet)
    wait_until(lambda: int(clients_info(admin).get("connected_clients", 1 << 30)) <= 2 + len(halves), timeout=10,
               what="the flood's connections gone")
    drop_mid_pipeline(fd, admin)
    mkeys = drop_mid_multi(fd, admin, rnd)
    n_eval = drop_after_eval(fd, rnd)
    drop_while_blocked(fd, admin, rnd)
    drop_while_subscribed(fd, admin, rnd)
    # the half commands are closed by the idle timeout (2 s; the check runs
    # each 1 s in redis and here: within 2..4.5 s of their last byte)
    for i, c in enumerate(halves):
        check(c.wait_closed(max(0.5, t_half + TIMEOUT + 2.5 - time.monotonic())),
              "half command %d must be closed by timeout %d" % (i, TIMEOUT))
        c.close()
    # effects: the dropped MULTI ran nothing, the dropped EVAL ran whole, a
    # push after the blocked clients left stays in its list
    eq(admin.cmd("EXISTS", *mkeys), b":0\r\n", "a MULTI dropped before EXEC ran nothing")
    wait_until(lambda: admin.cmd("GET", "script:%d" % rnd) == b"$%d\r\n%d\r\n" % (len(str(n_eval)), n_eval), timeout=10,
               what="the EVAL sent before the disconnect ran whole")
    eq(admin.cmd("LPUSH", "blk:%d:0" % rnd, "v"), b":1\r\n", "LPUSH after the blocked left")
    eq(admin.cmd("LLEN", "blk:%d:0" % rnd), b":1\r\n", "the pushed value was not lost to a dead client")
    eq(admin.cmd("EXISTS", "half"), b":0\r\n", "a half command did not run")
    # back to the admin + probe connections, nobody blocked or subscribed
    wait_until(lambda: clients_info(admin).get("connected_clients") == "2", timeout=10,
               what="connected_clients back to the probe and the asking one after round %d" % rnd)
    eq(clients_info(admin).get("blocked_clients"), "0", "blocked_clients after round %d" % rnd)
    eq(parse(admin.cmd("PUBSUB", "NUMSUB", "ch:%d" % rnd)), [b"ch:%d" % rnd, 0],
       "subscribers gone after round %d" % rnd)
    eq(admin.cmd("PUBSUB", "NUMPAT"), b":0\r\n", "patterns gone after round %d" % rnd)
    return n


@T.case
def hostile_rounds_leave_nothing_behind():
    fd = start_frontdoor(timeout=TIMEOUT, maxclients=MAXCLIENTS, loglevel=os.environ.get("FD_LOGLEVEL"),
                         client_query_buffer_limit=1 << 20)
    rounds = int(os.environ.get("FD_HOSTILE_ROUNDS", "3"))
    admin = Admin(fd)
    if True:
        probe = Probe(fd.port).start()
        wait_until(lambda: clients_info(admin).get("connected_clients") == "2", timeout=5,
                   what="the probe connected")
        try:
            hostile_round(fd, admin, -1)                # warm-up: two rounds
            hostile_round(fd, admin, 0)
            base = settled_rss_kb(fd)
            rss = [base]
            for rnd in range(1, rounds + 1):
                flooded = hostile_round(fd, admin, rnd)
                rss.append(settled_rss_kb(fd))
                print("      round %d: %d flood connections, RSS %d kB (baseline %d kB)"
                      % (rnd, flooded, rss[-1], base))
        finally:
            probe.stop()
        # a script is atomic: the EVAL of 2000 INCRs holds every client for
        # its run, seconds on the MongoDB emulator (Python). The sanitizer
        # build is ~4x slower: its worst wait was 0.77 s alone and 1.53 s
        # beside CI's other jobs (session 16), the plain build's 0.2-0.3 s
        if os.environ.get("FD_BACKEND") == "mongodb":
            bound = 10.0
        else:
            bound = 4.0 if is_sanitized(fd.binary) else 1.5
        probe.check_ok("hostile rounds", max_latency=bound)
        print("      probe: %d rounds, worst %.1f ms" % (probe.rounds, probe.worst * 1000))
        # back to baseline: the cron gives freed heap pages back after a burst
        # (proxy/backends.c, malloc_trim at most every 10 s): wait for it
        deadline = time.monotonic() + 12
        while rss[-1] > base * 1.10 and time.monotonic() < deadline:
            time.sleep(0.5)
            rss[-1] = fd.proc_status_kb("VmRSS")
        check(rss[-1] <= base * 1.10,
              "RSS %d kB after %d hostile rounds is more than 10 %% over its baseline %d kB "
              "(per round: %s)" % (rss[-1], rounds, base, rss))
        check(fd.alive(), "frontdoor alive")


@T.case
def one_commands_error_closes_nobody():
    """A command's error in a turn that also writes is that command's reply,
    not a failed commit: DUMP of a stream on the embedded backends answered
    "stored data is corrupt" as a storage failure, the turn's commit failed
    and every client whose write it held was closed (cmdfuzz, leveldb seed
    604235377: MULTI; HMSET; DUMP stream; EXEC). DUMP of a stream is now a
    payload; the turn's shape is kept, its reply must be the same each time."""
    if os.environ.get("FD_BACKEND", "lmdb") not in ("lmdb", "leveldb"):
        skip("the embedded backends' turn commit")
    fd = start_frontdoor()
    a = Conn(fd.port)
    eq(a.cmd("XADD", "st", "1-1", "f", "v"), b"$3\r\n1-1\r\n", "XADD")
    dump_err = a.cmd("DUMP", "st")
    check(dump_err.startswith(b"$"), "DUMP of a stream is a payload: %r" % dump_err)
    # a write and the DUMP in one pipeline (one turn, one commit)
    a.send_raw(encode("SET", "w1", "1") + encode("DUMP", "st") + encode("GET", "w1"))
    reps = a.read_n(3)
    eq(reps, [b"+OK\r\n", dump_err, b"$1\r\n1\r\n"], "pipelined SET, DUMP, GET")
    # inside a transaction with a write (the fuzzer's shape)
    eq(a.cmd("MULTI"), b"+OK\r\n", "MULTI")
    eq(a.cmd("SET", "w2", "2"), b"+QUEUED\r\n", "queued SET")
    eq(a.cmd("DUMP", "st"), b"+QUEUED\r\n", "queued DUMP")
    eq(a.cmd("EXEC"), b"*2\r\n+OK\r\n" + dump_err, "EXEC")
    b = Conn(fd.port)
    eq(b.cmd("MGET", "w1", "w2"), b"*2\r\n$1\r\n1\r\n$1\r\n2\r\n", "both writes committed")
    eq(a.cmd("PING"), b"+PONG\r\n", "the client is still connected")
    eq(int(info_fields(parse(b.cmd("INFO", "persistence"))).get("failed_commits", "-1")), 0, "no failed commit")
    check("commit failed" not in fd.log(), "no commit failure in the log")
    fd.stop()


if __name__ == "__main__":
    T.main()
