#!/usr/bin/python3
"""Protocol over the wire: protocol errors (Redis's texts, connection closed
afterwards), limits on lengths that must not make the server allocate,
pipelining, commands split across writes, the pre-AUTH limits and AUTH/QUIT.

Wherever Redis's behaviour is deterministic the bytes frontdoor sends back
(and whether it closes) are compared with a real redis-server; the key texts
are also asserted literally.
"""
import os
import random
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import (Tests, Diff, Conn, start_frontdoor, start_redis, encode, encode_many,
                    parse, check, eq, wait_until, ConnClosed, info_fields)

T = Tests(case_timeout=50)

_servers = {}


def servers(auth=False):
    """(reference redis, frontdoor), shared by the cases; auth=True: the pair
    started with requirepass 'sekret'."""
    key = "auth" if auth else "plain"
    pair = _servers.get(key)
    if pair is None or not (pair[0].alive() and pair[1].alive()):
        if pair is not None:
            for s in pair:
                if not s.alive():
                    print("      !! %s died (status %s):\n%s" % (s.kind, s.proc.returncode,
                                                                 s.log()[-3000:]))
                s.cleanup()
        kw = {"requirepass": "sekret"} if auth else {}
        pair = (start_redis(keep=True, **kw), start_frontdoor(keep=True, **kw))
        _servers[key] = pair
    return pair


def exchange(server, data, wait=2.0, auth=False, chunks=None):
    """Open a fresh connection, send data, collect everything until the
    server closes (or `wait` seconds of silence). Returns (bytes, closed)."""
    c = server.conn(auth=auth)
    try:
        if chunks:
            for ch in chunks:
                c.send_raw(ch)
                time.sleep(0.002)
        else:
            c.send_raw(data)
        return c.read_all_until_close(wait)
    finally:
        c.close()


def compare_close(data, expect=None, expect_closed=True, auth=False, wait=2.0, what=None):
    """Send data to both servers on fresh connections; the output and the
    close must be the same as redis-server's (and as `expect` if given)."""
    ref, fd = servers(auth=auth)
    ra, rclosed = exchange(ref, data, wait=wait)
    fa, fclosed = exchange(fd, data, wait=wait)
    label = what or repr(data[:80])
    if expect is not None:
        eq(ra, expect, "redis-server itself answered %s differently than the test expects" % label)
    eq((fa, fclosed), (ra, rclosed), "frontdoor vs redis-server for %s (reply bytes, closed?)" % label)
    if expect_closed is not None:
        eq(fclosed, expect_closed, "connection closed after %s?" % label)
    return fa


PE = b"-ERR Protocol error: "

PROTOCOL_ERRORS = [
    ("invalid multibulk length", b"*abc\r\n", PE + b"invalid multibulk length\r\n"),
    ("multibulk length +1", b"*+1\r\n$4\r\nPING\r\n", PE + b"invalid multibulk length\r\n"),
    ("multibulk length 01", b"*01\r\n$4\r\nPING\r\n", PE + b"invalid multibulk length\r\n"),
    ("multibulk length > INT_MAX", b"*2147483648\r\n", PE + b"invalid multibulk length\r\n"),
    ("multibulk length 3e9", b"*3000000000\r\n", PE + b"invalid multibulk length\r\n"),
    ("multibulk length empty", b"*\r\n", PE + b"invalid multibulk length\r\n"),
    ("expected $ got x", b"*1\r\nx\r\n", PE + b"expected '$', got 'x'\r\n"),
    ("expected $ got *", b"*2\r\n$4\r\nECHO\r\n*1\r\n", PE + b"expected '$', got '*'\r\n"),
    ("expected $ got :", b"*1\r\n:1\r\n", PE + b"expected '$', got ':'\r\n"),
    ("invalid bulk length", b"*1\r\n$abc\r\n", PE + b"invalid bulk length\r\n"),
    ("negative bulk length -1", b"*1\r\n$-1\r\n", PE + b"invalid bulk length\r\n"),
    ("negative bulk length -5", b"*1\r\n$-5\r\n", PE + b"invalid bulk length\r\n"),
    ("bulk length with space", b"*1\r\n$ 4\r\nPING\r\n", PE + b"invalid bulk length\r\n"),
    ("bulk length 04", b"*1\r\n$04\r\nPING\r\n", PE + b"invalid bulk length\r\n"),
    ("bulk length empty", b"*1\r\n$\r\n", PE + b"invalid bulk length\r\n"),
    ("bulk length > proto-max-bulk-len", b"*1\r\n$536870913\r\n", PE + b"invalid bulk length\r\n"),
    ("bulk length 2e9", b"*1\r\n$2000000000\r\n", PE + b"invalid bulk length\r\n"),
    ("unbalanced double quotes", b'SET "a b\r\n', PE + b"unbalanced quotes in request\r\n"),
    ("unbalanced single quotes", b"SET 'a\r\n", PE + b"unbalanced quotes in request\r\n"),
    ("closing quote followed by char", b'SET "a"b c\r\n', PE + b"unbalanced quotes in request\r\n"),
    ("error after good commands", b"PING\r\n*1\r\n$4\r\nPING\r\n*1\r\n$x\r\n",
     b"+PONG\r\n+PONG\r\n" + PE + b"invalid bulk length\r\n"),
    ("commands after the error are not run", b"*1\r\n$y\r\nSET after error\r\n",
     PE + b"invalid bulk length\r\n"),
]


@T.case
def protocol_errors_text_and_close():
    bad = []
    for what, data, expect in PROTOCOL_ERRORS:
        try:
            compare_close(data, expect=expect, what=what)
        except AssertionError as e:
            bad.append("[%s] %s" % (what, e))
    # the command after the error above must not have run
    ref, fd = servers()
    with fd.conn() as c:
        r = c.cmd("EXISTS", "after")
    if r != b":0\r\n":
        bad.append("a command sent after a protocol error was executed (EXISTS after -> %r)" % r)
    check(not bad, "%d protocol error case(s) differ:\n" % len(bad) + "\n".join(bad))


@T.case
def too_big_inline_and_length_strings():
    # 64 KB + 1 without a newline: the whole payload is read before the error
    compare_close(b"a" * 65537, expect=PE + b"too big inline request\r\n", what="64KB+1 inline")
    compare_close(b"*" + b"1" * 65537, expect=PE + b"too big mbulk count string\r\n",
                  what="64KB mbulk count")
    compare_close(b"*1\r\n$" + b"1" * 65537, expect=PE + b"too big bulk count string\r\n",
                  what="64KB bulk count")


@T.case
def inline_exactly_64kb_boundary():
    """Redis: the limit applies to > 64 KB buffered *without* a newline; a
    65536-byte line whose CRLF follows is an (unknown) inline command, whose
    name the error truncates to 128 bytes."""
    ref, fd = servers()
    out = []
    for s in (ref, fd):
        with s.conn() as c:
            c.send_raw(b"x" * 65536)
            check(c.is_open(0.3), "%s closed a 64KB inline request still under the limit" % s.kind)
            c.send_raw(b"\r\nPING\r\n")
            out.append(c.read_all_until_close(0.5))
    eq(out[1], out[0], "65536-byte inline line + CRLF + PING: (replies, closed?), frontdoor vs redis")


@T.case
def quirk_bulk_crlf_not_checked():
    """Redis skips the two bytes after a bulk without checking they are CRLF."""
    compare_close(b"*1\r\n$4\r\nPINGxx\r\n", expect=b"+PONG\r\n", expect_closed=False, wait=0.3,
                  what="bulk followed by xx instead of CRLF")


@T.case
def empty_and_null_multibulk_ignored():
    compare_close(b"*0\r\n*-1\r\n*-5\r\nPING\r\n", expect=b"+PONG\r\n", expect_closed=False,
                  wait=0.3, what="*0 *-1 *-5 then PING")
    compare_close(b"\r\n\n  \r\nPING\r\n", expect=b"+PONG\r\n", expect_closed=False, wait=0.3,
                  what="empty inline lines then PING")
    compare_close(b"*1\r\n$0\r\n\r\n", expect_closed=False, wait=0.3, what="empty command name")


def rss_growth_kb(server, action):
    before = server.rss_kb()
    result = action()
    time.sleep(0.3)
    after = server.rss_kb()
    return after - before, before, after, result


@T.case
def huge_lengths_do_not_allocate():
    ref, fd = servers()
    limit_kb = 32 * 1024
    conns = []
    try:
        # a huge argument count, many times over: the server must wait for the
        # arguments, not allocate for them (not even untouched virtual memory)
        rss0, vm0 = fd.rss_kb(), fd.vmsize_kb()
        for _ in range(20):
            c = fd.conn()
            c.send_raw(b"*1000000000\r\n")
            conns.append(c)
        time.sleep(0.3)
        rss1, vm1 = fd.rss_kb(), fd.vmsize_kb()
        print("      20 x '*1000000000': RSS %d -> %d kB, VmSize %d -> %d kB" % (rss0, rss1, vm0, vm1))
        check(rss1 - rss0 < limit_kb, "RSS grew by %d kB after '*1000000000' headers" % (rss1 - rss0))
        check(vm1 - vm0 < 4 * limit_kb,
              "VmSize grew by %d kB after '*1000000000' headers alone" % (vm1 - vm0))
        # a legal 400 MB bulk that never arrives in full: at most the bytes sent
        # may become resident
        c = fd.conn()
        c.send_raw(b"*1000000000\r\n$400000000\r\n" + b"z" * 1000)
        conns.append(c)
        time.sleep(0.3)
        rss2 = fd.rss_kb()
        print("      + '$400000000' and 1000 bytes: RSS %d kB" % rss2)
        check(rss2 - rss0 < limit_kb, "RSS grew by %d kB after a 400 MB bulk header" % (rss2 - rss0))
        for c in conns:
            check(c.is_open(0.05), "a connection with a pending huge multibulk was closed")
        # over proto-max-bulk-len: an error, not an allocation
        c = fd.conn()
        c.send_raw(b"*1000000000\r\n$2000000000\r\n")
        data, closed = c.read_all_until_close(2.0)
        eq(data, PE + b"invalid bulk length\r\n", "$2000000000 header")
        check(closed, "connection must be closed after invalid bulk length")
        rss3 = fd.rss_kb()
        check(rss3 - rss0 < limit_kb, "frontdoor RSS grew by %d kB" % (rss3 - rss0))
        with fd.conn() as c:
            eq(c.cmd("PING"), b"+PONG\r\n", "server still answers")
    finally:
        for c in conns:
            c.close()


@T.case
def pipeline_1000_mixed_in_one_write():
    ref, fd = servers()
    r = random.Random(7)
    cmds = [("FLUSHDB",)]
    for i in range(1000):
        k = "p%d" % r.randrange(30)
        cmds.append(r.choice([("SET", k, str(i)), ("GET", k), ("INCR", k), ("DEL", k),
                              ("APPEND", k, "x"), ("EXISTS", k, "p1"), ("PING",),
                              ("ECHO", "e%d" % i), ("MGET", k, "p2", "p3"), ("STRLEN", k),
                              ("GET",), ("NOSUCHCMD", k)]))
    d = Diff(ref.conn(), fd.conn())
    data = encode_many(cmds)
    # inline commands in the same write
    data += b"PING\r\nSET inl 5\r\nINCR inl\r\n"
    d.raw(data, len(cmds) + 3, "1000 pipelined commands")
    d.finish()


@T.case
def commands_split_byte_by_byte():
    ref, fd = servers()
    payload = (encode("SET", "split", b"v\r\n\x00al") + encode("GET", "split")
               + b"ECHO inline\r\n" + encode("MGET", "split", "nokey")
               + encode("SET", "big", "B" * 3000) + encode("STRLEN", "big"))
    nrep = 6
    want = []
    with ref.conn() as c:
        c.send_raw(payload)
        want = c.read_n(nrep)
    # byte by byte, except the 3000-byte value in the middle: 100-byte pieces
    pieces = [payload[i:i + 1] for i in range(400)]
    mid_end = len(payload) - 200
    pieces += [payload[i:min(i + 100, mid_end)] for i in range(400, mid_end, 100)]
    pieces += [payload[i:i + 1] for i in range(mid_end, len(payload))]
    assert b"".join(pieces) == payload
    with fd.conn() as c:
        for n, p in enumerate(pieces):
            c.send_raw(p)
            if n % 16 == 0:
                time.sleep(0.001)
        got = c.read_n(nrep)
    eq(got, want, "replies to a byte-by-byte stream")
    # every split point of one command, in two writes with a pause between
    cmd = encode("SET", "k2", "val") + b"GET k2\r\n"
    for i in range(1, len(cmd)):
        with fd.conn() as c:
            c.send_raw(cmd[:i])
            time.sleep(0.003)
            c.send_raw(cmd[i:])
            got = c.read_n(2)
        eq(got, [b"+OK\r\n", b"$3\r\nval\r\n"], "command split at byte %d" % i)


@T.case
def large_values_across_reads():
    ref, fd = servers()
    d = Diff(ref.conn(timeout=15), fd.conn(timeout=15))
    for n in (16383, 16384, 16385, 32767, 32768, 32769, 65536, 1 << 20, 5 * (1 << 20)):
        v = bytes(random.Random(n).getrandbits(8) for _ in range(min(n, 4096))) * (n // 4096 + 1)
        v = v[:n]
        d.cmd("SET", "big%d" % n, v)
        d.cmd("STRLEN", "big%d" % n)
        d.cmd("GET", "big%d" % n)
    # several big values in one pipelined write
    cmds = [("SET", "m%d" % i, "x" * 100000) for i in range(10)] + \
           [("GET", "m%d" % i) for i in range(10)]
    d.raw(encode_many(cmds), len(cmds), "pipelined 100KB values")
    d.cmd("DEL", *["big%d" % n for n in (16383, 16384, 16385, 32767, 32768, 32769, 65536,
                                        1 << 20, 5 * (1 << 20))])
    d.finish()


def exchange_halfclose(server, data, wait=3.0):
    """Send data, shut down our write side, read until the server closes."""
    c = server.conn()
    try:
        c.send_raw(data)
        try:
            c.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        return c.read_all_until_close(wait)
    finally:
        c.close()


@T.case
def half_close_delivers_all_replies():
    """A client that sends its commands and then shuts down its write side
    (printf ... | nc -N) still gets every reply, then the server closes."""
    ref, fd = servers()
    cmds = [("SET", "hc%d" % i, "v" * (i % 50)) for i in range(300)] + \
           [("GET", "hc%d" % i) for i in range(300)] + [("DEL",) + tuple("hc%d" % i for i in range(300))]
    data = encode_many(cmds) + b"PING\r\n"
    want = exchange_halfclose(ref, data)
    got = exchange_halfclose(fd, data)
    eq(got, want, "(replies, closed?) after half-close, frontdoor vs redis")
    eq(want[1], True, "redis closed")


def _mutations(r, base):
    b = bytearray(base)
    for _ in range(r.randrange(1, 4)):
        if not b:
            break
        op = r.randrange(8)
        i = r.randrange(len(b))
        if op == 0:                                   # flip a digit / protocol char
            b[i] = ord(r.choice("0123456789*$\r\n-+: x\""))
        elif op == 1:                                 # delete a byte
            del b[i]
        elif op == 2:                                 # insert a byte
            b[i:i] = bytes([ord(r.choice("0123456789*$\r\n -\"'\\"))])
        elif op == 3:                                 # truncate
            del b[i:]
        elif op == 4:                                 # duplicate a slice
            j = min(len(b), i + r.randrange(1, 30))
            b[i:i] = b[i:j]
        elif op == 5:                                 # change a length digit
            k = b.find(b"$", i)
            if k >= 0 and k + 1 < len(b):
                b[k + 1] = ord(r.choice("0123456789"))
        elif op == 6:                                 # a big number in a header
            k = b.find(r.choice([b"*", b"$"]), i)
            if k >= 0:
                b[k + 1:k + 1] = r.choice([b"99999", b"-", b"0", b"2147483648", b"1"])
        else:                                         # swap CRLF for LF or CR
            k = b.find(b"\r\n", i)
            if k >= 0:
                b[k:k + 2] = r.choice([b"\n", b"\r", b"\r\r\n", b""])
    return bytes(b)


@T.case(timeout=55)
def mutated_streams_differential():
    """Seeded byte-level mutations of small valid pipelines (multibulk and
    inline); each stream goes to both servers on a fresh connection that
    half-closes; replies and the close must be the same. FD_SEED reproduces."""
    seed = int(os.environ.get("FD_SEED", str(int(time.time() * 1000) % 1000000007)))
    n = int(os.environ.get("FD_FUZZ_N", "1500"))
    print("      mutation seed %d, %d streams (reproduce: FD_SEED=%d)" % (seed, n, seed))
    r = random.Random(seed)
    ref, fd = servers()
    bad = []
    for it in range(n):
        cmds = []
        for _ in range(r.randrange(1, 5)):
            k = "z%d" % r.randrange(5)
            cmds.append(r.choice([("SET", k, r.choice(["v1", "abc", "12", ""])), ("GET", k),
                                  ("INCR", k), ("DEL", k), ("EXISTS", k, "z1"), ("PING",),
                                  ("ECHO", "e"), ("MGET", k, "z2"), ("APPEND", k, "q")]))
        base = b""
        for c in cmds:
            if r.random() < 0.3:
                base += b" ".join(x.encode() if x else b'""' for x in c) + b"\r\n"
            else:
                base += encode(*c)
        data = _mutations(r, base) + encode("PING")
        for s in (ref, fd):
            with s.conn() as c:
                c.send_raw(encode("DEL", "z0", "z1", "z2", "z3", "z4"))
                c.read()
        want = exchange_halfclose(ref, data)
        got = exchange_halfclose(fd, data)
        if got != want:
            bad.append("stream #%d %r\n     redis: %r\n     fd:    %r" % (it, data, want, got))
            if len(bad) >= 10:
                break
    check(not bad, "seed %d: %d mutated stream(s) answered differently:\n%s"
          % (seed, len(bad), "\n".join(bad)))


@T.case
def abrupt_disconnects():
    """Clients vanishing (RST) mid-command, mid-pipeline and mid-reply must
    not disturb the server or the other clients."""
    import struct
    ref, fd = servers()
    with fd.conn() as c:
        eq(c.cmd("SET", "abrupt:big", "b" * 2000000), b"+OK\r\n", "SET 2MB")
    watcher = fd.conn()
    payloads = [
        b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\nabc",          # mid-bulk
        encode_many([("GET", "abrupt:big")] * 20),                    # mid-reply
        encode_many([("INCR", "abrupt:ctr")] * 500) + b"*2\r\n$3\r\nGET",  # mid-pipeline
        b"SET abrupt:inline ",                                        # mid-inline
        b"*1000000\r\n",                                              # huge pending count
    ]
    for rnd in range(6):
        for p in payloads:
            c = fd.conn()
            c.send_raw(p)
            if rnd % 2:
                time.sleep(0.01)
            c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            c.close()                                                 # RST
        eq(watcher.cmd("PING"), b"+PONG\r\n", "another client during the disconnects")
    time.sleep(0.3)
    with fd.conn() as c:
        eq(c.cmd("STRLEN", "abrupt:big"), b":2000000\r\n", "data intact")
        eq(c.cmd("EXISTS", "k", "abrupt:inline"), b":0\r\n", "unfinished commands not run")
        v = parse(c.cmd("GET", "abrupt:ctr"))
        check(v is None or int(v) <= 6 * 500, "INCR counter sane", v)
        f = info_fields(parse(c.cmd("INFO", "clients")))
        wait_until(lambda: info_fields(parse(c.cmd("INFO", "clients")))["connected_clients"] == "2",
                   timeout=5, what="connected_clients back to 2 (watcher + this one)")
        c.cmd("DEL", "abrupt:big", "abrupt:ctr")
    watcher.close()


# ------------------------------------------------------------- requirepass

@T.case
def unauthenticated_limits():
    compare_close(b"*20\r\n", expect=PE + b"unauthenticated multibulk length\r\n",
                  auth=True, what="*20 before AUTH")
    compare_close(b"*11\r\n", expect=PE + b"unauthenticated multibulk length\r\n",
                  auth=True, what="*11 before AUTH")
    compare_close(b"*1\r\n$16385\r\n", expect=PE + b"unauthenticated bulk length\r\n",
                  auth=True, what="$16385 before AUTH")
    # at the limits: accepted, the command then gets NOAUTH
    compare_close(encode("DEL", *["a"] * 9), expect=b"-NOAUTH Authentication required.\r\n",
                  expect_closed=False, auth=True, wait=0.3, what="10 args before AUTH")
    compare_close(encode("GET", "x" * 16384), expect=b"-NOAUTH Authentication required.\r\n",
                  expect_closed=False, auth=True, wait=0.3, what="16384-byte bulk before AUTH")
    # after AUTH the limits are gone
    ref, fd = servers(auth=True)
    d = Diff(ref.conn(), fd.conn())
    d.cmd("MSET", *["k%d" % (i // 2) for i in range(40)])
    d.cmd("SET", "big", "v" * 100000)
    d.cmd("STRLEN", "big")
    d.finish()


@T.case
def noauth_auth_wrongpass():
    ref, fd = servers(auth=True)
    d = Diff(ref.conn(auth=False), fd.conn(auth=False))
    r, _ = d.cmd("GET", "a")
    eq(r, b"-NOAUTH Authentication required.\r\n", "redis NOAUTH text")
    d.cmd("SET", "a", "b")
    d.cmd("PING")
    d.cmd("nosuchcommand")
    d.cmd("DBSIZE")
    r, _ = d.cmd("AUTH", "wrong")
    eq(r, b"-WRONGPASS invalid username-password pair or user is disabled.\r\n", "WRONGPASS text")
    d.cmd("AUTH", "default", "wrong")
    d.cmd("AUTH", "someone", "sekret")
    d.cmd("AUTH")
    d.cmd("AUTH", "a", "b", "c")
    d.cmd("GET", "a")
    d.cmd("HELLO", "3")
    d.cmd("HELLO", "2", "AUTH", "default", "wrong")
    r, _ = d.cmd("AUTH", "sekret")
    eq(r, b"+OK\r\n", "AUTH")
    d.cmd("SET", "a", "b")
    d.cmd("GET", "a")
    d.cmd("AUTH", "default", "sekret")
    d.cmd("AUTH", "wrong")    # failing AUTH on an authenticated connection
    d.cmd("GET", "a")
    d.finish()
    # HELLO with AUTH authenticates and switches protocol (reply body differs
    # by server: checked for shape only)
    for s in (ref, fd):
        with s.conn(auth=False) as c:
            v = parse(c.cmd("HELLO", "3", "AUTH", "default", "sekret"))
            check(isinstance(v, dict) and v.get(b"proto") == 3,
                  "%s: HELLO 3 AUTH default <pass> must return a map with proto 3" % s.kind, v)
            eq(c.cmd("GET", "nokey"), b"_\r\n", "%s: RESP3 null after HELLO 3 AUTH" % s.kind)


@T.case
def auth_without_requirepass():
    ref, fd = servers()
    d = Diff(ref.conn(), fd.conn())
    d.cmd("AUTH", "x")
    d.cmd("AUTH", "default", "x")
    d.cmd("PING")
    d.finish()


@T.case
def quit_replies_ok_and_closes():
    compare_close(b"QUIT\r\n", expect=b"+OK\r\n", what="QUIT inline")
    compare_close(encode("QUIT"), expect=b"+OK\r\n", what="QUIT")
    compare_close(encode("PING") + encode("QUIT") + encode("SET", "afterquit", "1"),
                  expect=b"+PONG\r\n+OK\r\n", what="PING QUIT SET")
    compare_close(encode("QUIT"), expect=b"+OK\r\n", auth=True, what="QUIT before AUTH")
    ref, fd = servers()
    with fd.conn() as c:
        eq(c.cmd("EXISTS", "afterquit"), b":0\r\n", "command after QUIT must not run")


if __name__ == "__main__":
    T.main()
