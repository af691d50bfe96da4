#!/usr/bin/python3
"""Differential test of notify-keyspace-events (proxy/config.c, docs/
notifications.md): the directive's parsing and CONFIG GET's canonical form
are Redis 7.0's (notify.c keyspaceEventsStringToFlags/FlagsToString), each
step compared byte for byte with a real redis-server 7.0, in RESP2 and RESP3,
on every backend.

frontdoor does not deliver keyspace notifications yet: a value that would
deliver one (K or E together with a class) is refused with an error naming
why, and the setting is left unchanged (checked on frontdoor alone, since
redis-server accepts it). With backend redis, events the backend Redis fires
(its own notify-keyspace-events set on it directly) reach frontdoor's
subscribers through the pub/sub relay: checked with redis-py's pubsub()
against redis-server's sequence, `expired` included without a read. Every case ends with the directive back at "" on
both servers (the reference server is shared by the cases).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import time

from fdtest import Tests, diff_case, diff_pair, start_frontdoor, start_redis, HOST

T = Tests(case_timeout=60)

NKE = "notify-keyspace-events"


def set_get(value):
    return [("CONFIG", "SET", NKE, value), ("CONFIG", "GET", NKE)]


def case(name, steps):
    diff_case(T, name, steps + set_get(""))


# the canonical form: "A" for every type class g$lshzxetd (n is dropped
# beside it, as Redis 7.0 prints it), the classes in Redis's order, then K E m
case("notify_canonical_form", [("CONFIG", "GET", NKE)] + [
    st for v in ("", "A", "An", "nA", "g$lshzxetd", "g$lshzxetdn", "$g", "xg", "gm", "Agxm", "mA",
                 "n", "dnt", "KE", "EK", "E", "K", "m", "AAA", "ggg$$")
    for st in set_get(v)])

# a character that is no class: Redis's error, the value unchanged
case("notify_invalid_class", set_get("gx") + [
    st for v in ("Q", "KEq", "a", " ", "g ", "k", "e$X", "Ag$lshzxeKEtmdnB")
    for st in set_get(v)] + [
    ("CONFIG", "SET", NKE, "g", "hz", "x"), ("CONFIG", "GET", NKE),
])


def refused():
    """Values that would deliver an event are refused on frontdoor with the
    reason, in one CONFIG SET or among others (all rolled back)."""
    d = diff_pair()
    try:
        c = d.fd
        for v in ("KEA", "Ex", "Kg", "KEm", "K$", "En", "AKE"):
            r = c.cmd("CONFIG", "SET", NKE, v)
            want = (b"-ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - "
                    b"frontdoor does not deliver keyspace notifications yet")
            if not r.startswith(want) or b"docs/notifications.md" not in r:
                raise AssertionError("CONFIG SET %s %s: %r" % (NKE, v, r))
            r = c.cmd("CONFIG", "GET", NKE)
            if r != b"*2\r\n$22\r\nnotify-keyspace-events\r\n$0\r\n\r\n":
                raise AssertionError("after a refused %r: %r" % (v, r))
        # with another directive in the same call: nothing is set
        old = c.cmd("CONFIG", "GET", "slowlog-max-len")
        r = c.cmd("CONFIG", "SET", "slowlog-max-len", "77", NKE, "KEA")
        if not r.startswith(b"-ERR CONFIG SET failed"):
            raise AssertionError("mixed CONFIG SET: %r" % r)
        if c.cmd("CONFIG", "GET", "slowlog-max-len") != old:
            raise AssertionError("a refused notify-keyspace-events left slowlog-max-len changed")
        # values that deliver nothing are accepted (as redis-server does)
        for v, canon in (("A", b"A"), ("KE", b"KE"), ("gm", b"gm")):
            if c.cmd("CONFIG", "SET", NKE, v) != b"+OK\r\n":
                raise AssertionError("CONFIG SET %s %s refused" % (NKE, v))
            r = c.cmd("CONFIG", "GET", NKE)
            if not r.endswith(b"\r\n" + canon + b"\r\n"):
                raise AssertionError("CONFIG GET after %r: %r" % (v, r))
    finally:
        d.fd.cmd("CONFIG", "SET", NKE, "")
        d.ref.close()
        d.fd.close()


T.add("notify_refused_values", refused)


def collect(ps, quiet=0.4, limit=5.0):
    """Every message a redis-py PubSub receives until `quiet` s pass without one."""
    out, end = [], time.time() + limit
    while time.time() < end:
        m = ps.get_message(timeout=quiet)
        if m is None:
            break
        out.append((m["type"], m["pattern"], m["channel"], m["data"]))
    return out


def redis_backend_relay():
    """backend redis: the backend Redis fires the events itself when its own
    notify-keyspace-events is set (on the backend, not through frontdoor);
    frontdoor's relay delivers them to its subscribers. A real library
    (redis-py pubsub()) on frontdoor gets the same sequence as on
    redis-server, `expired` included with no read of the key."""
    import redis
    ref = start_redis()
    fd = start_frontdoor(backend="redis")
    try:
        backing = fd.backing
        if backing is None:
            raise AssertionError("backend redis without its own redis-server")
        seqs = []
        for srv, backend_port in ((ref, ref.port), (fd, backing.port)):
            redis.Redis(host=HOST, port=backend_port).config_set(NKE, "KEA")
            r = redis.Redis(host=HOST, port=srv.port)
            ps = r.pubsub()
            ps.subscribe("__keyevent@0__:expired")
            ps.psubscribe("__keyspace@0__:*")
            subs = collect(ps)
            r.set("k", "v", px=60)
            r.set("n", "1")
            r.incrby("n", 5)
            r.append("n", "0")
            r.expire("n", 100)
            r.rename("n", "m")
            r.delete("m", "none")
            time.sleep(0.3)                  # k expires meanwhile: no read of it
            seqs.append(subs + collect(ps))
            ps.close()
        if os.environ.get("FD_NOTIFY_SHOW"):
            print(seqs[1])
        if seqs[0] != seqs[1]:
            raise AssertionError("redis-server: %r\nfrontdoor:    %r" % (seqs[0], seqs[1]))
        if ("message", None, b"__keyevent@0__:expired", b"k") not in seqs[0]:
            raise AssertionError("no expired event on redis-server: %r" % seqs[0])
    finally:
        fd.stop()
        if fd.backing is not None:
            fd.backing.stop()
        ref.stop()


T.add("notify_redis_backend_relay", redis_backend_relay)


if __name__ == "__main__":
    T.main()
