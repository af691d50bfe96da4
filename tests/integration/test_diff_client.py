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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import Tests, diff_case, check

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
] + ([] if FORWARDED_MULTI else [
    ("MULTI",), ("WAIT", "1", "0"), ("WAIT", "x", "0"), ("EXEC",),   # in MULTI: :0 at once, never blocks
]) + [
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
    exec_step if not FORWARDED_MULTI else       # during EXEC: flags=x multi=3 cmd=exec (forwarded: the backend's)
    (lambda two: two.a.cmd("EXEC", same=lambda a, b: a.split(b"\r\n")[0] == b.split(b"\r\n")[0])),
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


if __name__ == "__main__":
    T.main()
