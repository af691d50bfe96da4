#!/usr/bin/python3
"""Differential test of the CLIENT items of issue 27 that frontdoor serves
itself (proxy/builtin.c), on every backend (FD_DIFF_SUITES): the same
commands to a real redis-server 7.0 and to frontdoor, replies compared byte
for byte in RESP2 and RESP3.

OBJECT FREQ: Redis's error (no LFU maxmemory-policy).

WAIT numreplicas timeout: frontdoor answers as a Redis without replicas —
Redis 7.0's argument errors, :0 at once for numreplicas <= 0 and inside
MULTI, refused in a script. (numreplicas > 0 outside MULTI: Redis sleeps for
the timeout first, frontdoor answers at once; docs/compatibility.md. The
reply is the same, only its timing differs, so that case is compared too.)

CLIENT LIST TYPE t / ID id...: Redis 7.0's filters and errors.

CLIENT INFO / CLIENT LIST: the fields Redis 7.0 prints, in its order; the
values that depend on the server's memory, sockets and clock (id addr laddr
fd age idle qbuf qbuf-free argv-mem multi-mem rbs rbp obl omem tot-mem) are
masked, the others compared: name flags db sub psub ssub multi oll events
cmd (parent|sub for a container's subcommand, EXEC for what runs inside it)
user redir resp — in MULTI (flags=x multi=<queued>) and during EXEC.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import Tests, diff_case, check, encode_many, ConnClosed, ReplyTimeout, shared_pair

T = Tests(case_timeout=60)

# On the redis backends a MULTI block is forwarded whole (proxy/multi.c):
# the commands frontdoor serves itself run there on the backend's
# connection (docs/transactions.md), so the in-MULTI steps are left out.
FORWARDED_MULTI = os.environ.get("FD_BACKEND") in ("redis", "redis-cluster")

VOLATILE = {"id", "addr", "laddr", "fd", "age", "idle", "qbuf", "qbuf-free", "argv-mem", "multi-mem", "rbs",
            "rbp", "obl", "omem", "tot-mem"}


def payload(raw):
    """The text of a bulk / verbatim reply (RESP2 $, RESP3 =txt:)."""
    head, _, body = raw.partition(b"\r\n")
    check(head[:1] in (b"$", b"="), "a bulk or verbatim reply", raw)
    body = body[:-2]
    return body[4:] if head[:1] == b"=" else body


def masked(text):
    lines = []
    for line in text.split(b"\n"):
        out = []
        for f in line.split(b" "):
            k, _, v = f.partition(b"=")
            out.append(k + b"=" + (b"#" if k.decode() in VOLATILE else v))
        lines.append(b" ".join(out))
    return b"\n".join(lines)


def info_norm(raw):
    """CLIENT INFO's one line, its volatile values masked."""
    if raw[:1] == b"-":
        return raw
    return masked(payload(raw).rstrip(b"\n"))


def list_line(name):
    """CLIENT LIST's line of the client named `name`, masked."""
    def norm(raw):
        for line in payload(raw).split(b"\n"):
            if (b" name=%s " % name.encode()) in line:
                return masked(line)
        return b"<no client named %s>" % name.encode()
    return norm


def info_step(*cmd, who="A"):
    def step(two):
        d = two.a if who == "A" else two.b
        d.cmd(*cmd, norm=info_norm)
    return step


def list_step(name):
    def step(two):
        two.b.cmd("CLIENT", "LIST", norm=list_line(name))
        # B's CLIENT LIST: its own line is the last (clients listed oldest first)
        two.b.cmd("CLIENT", "LIST", norm=lambda raw: masked(payload(raw).rstrip(b"\n").split(b"\n")[-1]))
    return step


def exec_step(two):
    """EXEC of MULTI / CLIENT INFO / SET / CLIENT LIST: each of the four
    replies compared, the CLIENT ones masked (the inner lines show flags=x
    multi=3 cmd=exec on Redis)."""
    _ = """"""
    d = two.a
    for c in (d.ref, d.fd):
        c.send_raw(b"*1\r\n$4\r\nEXEC\r\n")
    a, b = d.ref.read(), d.fd.read()

    def parts(raw):
        head, _, rest = raw.partition(b"\r\n")
        items, p = [], rest
        for _ in range(int(head[1:])):
            h, _, p = p.partition(b"\r\n")
            if h[:1] in (b"$", b"="):
                n = int(h[1:])
                items.append(info_norm(h + b"\r\n" + p[:n] + b"\r\n") if b"cmd=" in p[:n] else p[:n])
                p = p[n + 2:]
            else:
                items.append(h)
        return items
    d._compare("EXEC (CLIENT INFO inside)", a, b, same=lambda x, y: parts(x) == parts(y))


wait_steps = [
    ("WAIT", "0", "0"),
    ("WAIT", "-5", "0"),
    ("WAIT", "1", "50"),                       # Redis: :0 after 50 ms; frontdoor: :0 at once
    ("WAIT", "x", "-1"),                       # numreplicas checked first
    ("WAIT", "0", "x"),
    ("WAIT", "0", "-1"),
    ("WAIT", "0", "99999999999999999999"),
    ("WAIT", "0", "1.5"),
    ("WAIT", "1"),
    ("WAIT", "1", "2", "3"),
    ("MULTI",), ("WAIT", "1", "0"), ("WAIT", "x", "0"), ("EXEC",),   # in MULTI: :0 at once, never blocks
] + [
    ("EVAL", "return redis.call('wait', 0, 0)", "0"),
    ("EVAL", "return redis.pcall('wait', 0, 0)", "0"),
]
diff_case(T, "wait_as_redis_without_replicas", wait_steps)

# OBJECT FREQ: no LFU maxmemory-policy on any frontdoor store: Redis's error
# for an existing key, a null for a missing one
object_freq_steps = [
    ("OBJECT", "FREQ", "nosuch"),
    ("SET", "fk", "v"),
    ("OBJECT", "FREQ", "fk"),
    ("OBJECT", "FREQ"),
]
diff_case(T, "object_freq_as_redis_without_lfu", object_freq_steps)

# Client-side caching's read-only subcommands, for a client not tracking
# (CLIENT TRACKING itself: test_diff_tracking.py)
tracking_off_steps = [
    ("CLIENT", "GETREDIR"),
    ("CLIENT", "GETREDIR", "x"),
    ("CLIENT", "TRACKINGINFO"),
    ("CLIENT", "TRACKINGINFO", "x"),
    ("CLIENT", "CACHING", "YES"),
    ("CLIENT", "CACHING", "no"),
    ("CLIENT", "CACHING", "maybe"),
    ("CLIENT", "CACHING"),
    ("CLIENT", "CACHING", "YES", "x"),
]
diff_case(T, "tracking_subcommands_when_not_tracking", tracking_off_steps)

def list_by_ids(two):
    """CLIENT LIST ID <B's id> <A's id> <none> <B's id>: each server's own
    ids; the lines in argument order, repeats kept, missing ids skipped."""
    d = two.a
    raws = []
    for ca, cb in ((d.ref, two.b.ref), (d.fd, two.b.fd)):
        ida = ca.cmd("CLIENT", "ID")[1:-2]
        idb = cb.cmd("CLIENT", "ID")[1:-2]
        raws.append(ca.cmd("CLIENT", "LIST", "ID", idb, ida, "987654", idb))
    d._compare("CLIENT LIST ID b a none b", raws[0], raws[1],
               same=lambda a, b: masked(payload(a)) == masked(payload(b)))


client_list_filter_steps = [
    ("CLIENT", "SETNAME", "la"),
    ("@B", "CLIENT", "SETNAME", "lb"),
    list_by_ids,
    ("CLIENT", "LIST", "ID"),
    ("CLIENT", "LIST", "ID", "x"),
    ("CLIENT", "LIST", "ID", "1", "1.5"),
    ("CLIENT", "LIST", "ID", "987654"),
    ("CLIENT", "LIST", "TYPE", "master"),
    ("CLIENT", "LIST", "TYPE", "replica"),
    ("CLIENT", "LIST", "TYPE", "pubsub"),
    ("CLIENT", "LIST", "TYPE", "foo"),
    ("CLIENT", "LIST", "TYPE", "normal", "x"),
    ("CLIENT", "LIST", "foo"),
    lambda two: two.a.cmd("CLIENT", "LIST", "TYPE", "NORMAL", norm=lambda raw: masked(payload(raw))),
]
diff_case(T, "client_list_type_and_id_as_redis", client_list_filter_steps)

def tracking_info_fields(two):
    """INFO's client-side caching fields, in Redis's sections, with Redis's
    values when no client tracks (0)."""
    for sect, fields in (("clients", ("tracking_clients",)),
                         ("stats", ("tracking_total_keys", "tracking_total_items", "tracking_total_prefixes"))):
        for c, who in ((two.a.ref, "redis"), (two.a.fd, "frontdoor")):
            text = payload(c.cmd("INFO", sect))
            for f in fields:
                check((b"\r\n%s:0\r\n" % f.encode()) in text, "%s INFO %s: %s:0" % (who, sect, f), text)


diff_case(T, "info_tracking_fields", [tracking_info_fields])

client_info_steps = [
    ("CLIENT", "SETNAME", "ci-a"),
    info_step("CLIENT", "INFO"),
    ("SET", "k", "v"),
    ("@B", "CLIENT", "SETNAME", "ci-b"),
    list_step("ci-a"),                        # A's last command: set
    ("CLIENT", "GETNAME"),
    list_step("ci-a"),                        # a container: client|getname
    ("OBJECT", "ENCODING", "nosuch"),
    list_step("ci-a"),                        # object|encoding
    ("MULTI",),
    ("CLIENT", "INFO"),
    ("SET", "k", "w"),
    list_step("ci-a"),                        # queueing: flags=x multi=2 cmd=set
    ("CLIENT", "INFO"),
    exec_step,                                # during EXEC: flags=x multi=3 cmd=exec (redis backends too:
                                              # frontdoor answers CLIENT in a forwarded EXEC)
    list_step("ci-a"),                        # after: flags=N multi=-1 cmd=exec
    ("PING",),
    list_step("ci-a"),
    ("WAIT", "0", "0"),
    list_step("ci-a"),
    lambda two: two.a.cmd("CLIENT", "LIST", norm=lambda raw: masked(payload(raw))),  # all, oldest first
    list_step("ci-a"),
    info_step("CLIENT", "INFO", who="B"),
]
diff_case(T, "client_info_fields_as_redis", client_info_steps)


# ------------------------------------------------------------ CLIENT REPLY
# CLIENT REPLY ON|OFF|SKIP (Redis 7.0 networking.c): what a silenced client
# receives is compared as one byte stream, up to a closing
# CLIENT REPLY ON + ECHO <END> (whatever went missing in between shows as a
# difference of the stream). Pushes (pub/sub messages and confirmations)
# are sent whatever CLIENT REPLY says; errors, MULTI's +QUEUED, EXEC's
# array, a blocked command's answer and a script's reply are not.

END = "--end-of-stream--"


def read_until(c, marker):
    """c's bytes up to and including the bulk `marker` (then nothing is left)."""
    tail = b"$%d\r\n%s\r\n" % (len(marker), marker.encode())
    deadline = time.monotonic() + c.timeout
    while bytes(c.buf[c.pos:]).find(tail) < 0:
        c._fill(deadline)
    data = bytes(c.buf[c.pos:])
    c.buf.clear()
    c.pos = 0
    return data


def stream(*cmds, end=True, what=None):
    """A step: cmds pipelined in one write to A on both servers (then, if
    end, CLIENT REPLY ON and ECHO END), the byte streams compared."""
    def step(two):
        d = two.a
        seq = list(cmds) + ([("CLIENT", "REPLY", "ON"), ("ECHO", END)] if end else [])
        data = encode_many(seq)
        for c in (d.ref, d.fd):
            c.send_raw(data)
        label = what or "stream " + " | ".join(" ".join(x) for x in cmds)[:160]
        a = read_until(d.ref, END)
        try:
            b = read_until(d.fd, END)
        except (ConnClosed, ReplyTimeout) as e:
            d.mismatches.append((label, a, ("<%s: %s>" % (type(e).__name__, e)).encode()))
            d.fail_now()
        d._compare(label, a, b)
    return step


def send_only(*cmds):
    """A step: cmds to A on both servers, nothing read (a silenced stream
    continued by a later step)."""
    def step(two):
        data = encode_many(list(cmds))
        for c in (two.a.ref, two.a.fd):
            c.send_raw(data)
    return step


def read_one(what):
    """A step: one reply (a push) read from A on both servers, compared."""
    def step(two):
        d = two.a
        a = d.ref.read()
        try:
            b = d.fd.read()
        except (ConnClosed, ReplyTimeout) as e:
            d.mismatches.append((what, a, ("<%s: %s>" % (type(e).__name__, e)).encode()))
            d.fail_now()
        d._compare(what, a, b)
    return step


client_reply_steps = [
    # OFF silences replies and errors alike (unknown, arity, WRONGTYPE,
    # syntax), SKIP is ignored while OFF, ON answers +OK
    stream(("CLIENT", "REPLY", "OFF"), ("SET", "rk", "v"), ("GET", "rk"), ("INCR", "rk"), ("NOSUCHCMD", "x"),
           ("GET",), ("CLIENT", "REPLY", "X"), ("CLIENT", "REPLY", "SKIP"), ("PING",), ("CLIENT", "REPLY", "ON"),
           ("GET", "rk")),
    # CLIENT REPLY's own errors while on; SKIP silences exactly the next
    # command; SKIP SKIP: the second SKIP is the skipped one; SKIP then ON
    stream(("CLIENT", "REPLY"), ("CLIENT", "REPLY", "ON", "x"), ("CLIENT", "REPLY", "maybe"),
           ("client", "reply", "skip"), ("SET", "rs", "1"), ("GET", "rs"),
           ("CLIENT", "REPLY", "SKIP"), ("CLIENT", "REPLY", "SKIP"), ("PING", "1"), ("PING", "2"),
           ("CLIENT", "REPLY", "SKIP"), ("CLIENT", "REPLY", "ON"), ("PING", "3")),
    # commands served by the backend, mixed with the proxy's, pipelined
    stream(("CLIENT", "REPLY", "SKIP"), ("RPUSH", "rl", "a", "b", "c"), ("LRANGE", "rl", "0", "-1"),
           ("CLIENT", "REPLY", "OFF"), ("LPOP", "rl"), ("LPOP", "nosuch"), ("HSET", "rh", "f", "v"), ("PING",),
           ("HGET", "rl", "f"), ("ECHO", "silenced"), ("CLIENT", "REPLY", "ON"), ("LRANGE", "rl", "0", "-1"),
           ("HGETALL", "rh"), ("CLIENT", "REPLY", "SKIP"), ("DEL", "rh"), ("EXISTS", "rh"), ("TYPE", "rl")),
    # a long silenced pipeline, then the reads that see it
    stream(*([("CLIENT", "REPLY", "OFF")] + [("INCR", "rc")] * 300 + [("CLIENT", "REPLY", "ON"), ("GET", "rc")] +
             [("CLIENT", "REPLY", "SKIP"), ("INCR", "rc")] * 50 + [("GET", "rc")]),
           what="300 INCR silenced by OFF, 50 by SKIP"),
    # the same, one command per write (not read in between)
    send_only(("CLIENT", "REPLY", "OFF")),
    send_only(("SET", "rw", "1")),
    send_only(("APPEND", "rw", "2")),
    send_only(("CLIENT", "REPLY", "SKIP")),
    stream(("GET", "rw")),
    # a script's reply and its writes
    stream(("CLIENT", "REPLY", "SKIP"), ("EVAL", "return redis.call('set', KEYS[1], '1')", "1", "re"),
           ("GET", "re"), ("CLIENT", "REPLY", "OFF"), ("EVAL", "return {1, 'x'}", "0"),
           ("EVAL", "return redis.call('nosuch')", "0")),
    # RESET ends OFF (its +RESET is sent); a SKIP in effect still silences it
    stream(("CLIENT", "REPLY", "OFF"), ("RESET",), ("PING",)),
    stream(("CLIENT", "REPLY", "SKIP"), ("RESET",), ("PING",)),
]
diff_case(T, "client_reply_on_off_skip", client_reply_steps)

client_reply_multi_steps = [
    # MULTI's +OK, +QUEUED and EXEC's reply are replies like any
    stream(("CLIENT", "REPLY", "SKIP"), ("MULTI",), ("SET", "rm", "1"), ("EXEC",), ("PING",)),
    stream(("CLIENT", "REPLY", "OFF"), ("MULTI",), ("SET", "rm", "2"), ("INCR", "rm"), ("EXEC",)),
    # a transaction refused while queueing (EXECABORT) is silenced too
    stream(("CLIENT", "REPLY", "OFF"), ("MULTI",), ("NOSUCH",), ("EXEC",), ("CLIENT", "REPLY", "ON"), ("PING",)),
] + ([] if FORWARDED_MULTI else [
    stream(("MULTI",), ("INCR", "rm"), ("CLIENT", "REPLY", "SKIP"), ("EXEC",), ("GET", "rm")),
    stream(("MULTI",), ("SET", "rm", "x"), ("CLIENT", "REPLY", "SKIP"), ("DISCARD",), ("GET", "rm")),
    # CLIENT REPLY run by EXEC: OFF silences the rest of EXEC's own array
    # (Redis sends a broken array then: the stream shows it); a SKIP inside
    # silences the command after EXEC
    stream(("MULTI",), ("CLIENT", "REPLY", "OFF"), ("SET", "rm", "3"), ("EXEC",), ("PING",)),
    stream(("MULTI",), ("CLIENT", "REPLY", "SKIP"), ("SET", "rm", "4"), ("GET", "rm"), ("EXEC",), ("PING",),
           ("PING", "after")),
])
diff_case(T, "client_reply_in_transactions", client_reply_multi_steps)


@T.case
def client_reply_in_forwarded_multi_refused():
    """On the redis backends a MULTI block runs on frontdoor's connection to
    Redis: CLIENT REPLY queued there is refused (the transaction aborts)
    rather than silencing that connection; the client's later commands are
    answered."""
    if not FORWARDED_MULTI:
        return
    c = shared_pair()[1].conn()
    try:
        check(c.cmd("MULTI") == b"+OK\r\n", "MULTI")
        r = c.cmd("CLIENT", "REPLY", "SKIP")
        check(r.startswith(b"-ERR CLIENT REPLY inside MULTI"), "refused while queueing", r)
        r = c.cmd("EXEC")
        check(r.startswith(b"-EXECABORT"), "EXEC aborts", r)
        check(c.cmd("SET", "fm", "1") == b"+OK\r\n" and c.cmd("GET", "fm") == b"$1\r\n1\r\n", "answered after")
    finally:
        c.close()


def blocked_push(two):
    two.b.cmd("RPUSH", "rb", "x", "y")


client_reply_blocking_steps = [
    # (without CLIENT REPLY) a blocking command answered at once, the
    # commands pipelined after it run (an asynchronous backend's first try
    # once left them unread)
    stream(("RPUSH", "rq", "a"), ("BLPOP", "rq", "5"), ("PING",), ("BLPOP", "rq", "0.05"), ("ECHO", "x")),
    # a blocked command's answer, by timeout or by a push, is silenced by
    # the SKIP before it; the next command is answered
    stream(("CLIENT", "REPLY", "SKIP"), ("BLPOP", "rnokey", "0.05"), ("PING",)),
    send_only(("CLIENT", "REPLY", "SKIP"), ("BLPOP", "rb", "5")),
    ("SLEEP", 0.2),
    blocked_push,
    stream(("LRANGE", "rb", "0", "-1")),
    send_only(("CLIENT", "REPLY", "OFF"), ("BRPOP", "rb", "5"), ("BLPOP", "rb2", "5")),
    ("SLEEP", 0.2),
    lambda two: two.b.cmd("LPUSH", "rb2", "z"),
    stream(("EXISTS", "rb", "rb2")),
]
diff_case(T, "client_reply_blocking", client_reply_blocking_steps)


def until_closed(data, what):
    """A step: raw bytes to A on both servers, the bytes each sends compared
    (none: a silenced QUIT, protocol error). Redis 7.0 then leaves the
    connection open and reads nothing more from it (its close waits for a
    reply that never comes); frontdoor closes it (docs/pubsub.md)."""
    def step(two):
        d = two.a
        for c in (d.ref, d.fd):
            c.send_raw(data)
        a, _ = d.ref.read_all_until_close(timeout=0.5)
        b, closed = d.fd.read_all_until_close(timeout=5)
        d._compare(what, a, b)
        check(closed, "frontdoor closes the connection", b)
    return step


diff_case(T, "client_reply_off_then_quit", [
    ("SET", "rq", "1"),
    until_closed(b"CLIENT REPLY OFF\r\nGET rq\r\nQUIT\r\n", "OFF, GET, QUIT: nothing, then closed")])
diff_case(T, "client_reply_off_then_protocol_error", [
    until_closed(b"CLIENT REPLY SKIP\r\n*1\r\n$x\r\n", "SKIP, then a protocol error: its text silenced, closed")])


def publish_from_b(two):
    two.b.cmd("PUBLISH", "rch", "from-b")


client_reply_pubsub_steps = [
    # subscribe confirmations and messages are pushes: sent while OFF, in
    # RESP2 too; a subscribed RESP2 client's PING (a reply) is not
    send_only(("CLIENT", "REPLY", "OFF"), ("SUBSCRIBE", "rch", "rch2")),
    read_one("subscribe confirmation 1 while OFF"),
    read_one("subscribe confirmation 2 while OFF"),
    send_only(("PING",), ("PSUBSCRIBE", "rc*")),
    read_one("psubscribe confirmation while OFF (PING silenced)"),
    publish_from_b,
    read_one("message while OFF"),
    read_one("pmessage while OFF"),
    stream(("UNSUBSCRIBE", "rch", "rch2"), ("PUNSUBSCRIBE",), ("PING",)),
]
diff_case(T, "client_reply_pubsub", client_reply_pubsub_steps)


@T.case
def client_reply_own_message_resp3():
    """RESP3: a silenced client publishing to its own channel gets the
    message (a push) but not PUBLISH's count; the next replies are silenced
    until ON."""
    from fdtest import diff_pair
    d = diff_pair(resp3=True)
    try:
        d.cmd("SUBSCRIBE", "own")
        data = encode_many([("CLIENT", "REPLY", "OFF"), ("PUBLISH", "own", "self"), ("GET", "nothing")])
        for c in (d.ref, d.fd):
            c.send_raw(data)
        d._compare("own message while OFF", d.ref.read(), d.fd.read())
        stream(("PING",))(type("two", (), {"a": d})())
        if d.mismatches:
            raise AssertionError(d.report())
    finally:
        d.ref.close()
        d.fd.close()


def redis_py_fire_and_forget():
    """An application's use through redis-py (which has no API for it):
    CLIENT REPLY OFF sent raw on a connection of the pool, fire-and-forget
    writes, CLIENT REPLY ON, then reads through the client that see them —
    the same on redis-server and frontdoor."""
    try:
        import redis
    except ImportError:
        from fdtest import missing_prerequisite
        missing_prerequisite("python3-redis")
    results = []
    for srv in shared_pair():
        r = redis.Redis(host="127.0.0.1", port=srv.port)
        r.delete("app:counter", "app:events")
        conn = r.connection_pool.get_connection("CLIENT")
        try:
            conn.send_command("CLIENT", "REPLY", "OFF")
            for i in range(500):
                conn.send_command("INCR", "app:counter")
                conn.send_command("RPUSH", "app:events", "e%d" % i)
            conn.send_command("CLIENT", "REPLY", "SKIP")
            conn.send_command("SET", "app:last", "done")
            conn.send_command("CLIENT", "REPLY", "ON")
            ok = conn.read_response()
            check(ok in (b"OK", "OK"), "CLIENT REPLY ON is the first reply read", ok)
            check(not conn.can_read(timeout=0.2), "nothing else was sent", conn.can_read())
            conn.send_command("GET", "app:counter")
            counter = conn.read_response()
        finally:
            r.connection_pool.release(conn)
        results.append((counter, r.llen("app:events"), r.lrange("app:events", 0, 2), r.get("app:last")))
        r.close()
    check(results[0] == (b"500", 500, [b"e0", b"e1", b"e2"], b"done"), "redis-server: the writes", results[0])
    check(results[1] == results[0], "frontdoor as redis-server", results)


T.add("client_reply_redis_py_fire_and_forget", redis_py_fire_and_forget)


if __name__ == "__main__":
    T.main()
