#!/usr/bin/python3
"""Differential test of client-side caching (CLIENT TRACKING, proxy/tracking.c,
issue 27) on every backend (FD_DIFF_SUITES): two clients per server, A
tracks and reads, B writes; what A receives (its RESP3 invalidate pushes,
then the reply to a PING) is compared byte for byte with redis-server 7.0,
in RESP2 (no redirect: no pushes, as Redis) and RESP3.

Served: default mode, ON/OFF, NOLOOP, OPTIN/OPTOUT with CLIENT CACHING, REDIRECT (RESP2: B subscribed to
__redis__:invalidate gets messages; RESP3: pushes), FLUSHALL/FLUSHDB's null invalidate,
CLIENT GETREDIR / TRACKINGINFO while tracking, INFO's tracking_clients; BCAST
with PREFIX (one message per prefix for the writes of one loop turn, NOLOOP,
REDIRECT, a redirect gone: tracking-redir-broken and broken_redirect; the
prefix errors), tracking-table-max-keys (random keys evicted
with their invalidations: counts and shape compared, not names).
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import Tests, DiffTwo, diff_case, diff_steps

T = Tests(case_timeout=60)


def a_receives(two, blur=None, what="what A receives up to PING"):
    """A sends PING: everything it gets up to +PONG (pushes first) compared,
    after blur(raw) when given."""
    d = two.a
    got = []
    for c in (d.ref, d.fd):
        c.send("PING")
        raw = b""
        for _ in range(20):
            r = c.read(timeout=5)
            raw += r
            if r.startswith(b"+PONG"):
                break
        got.append(blur(raw) if blur else raw)
    d._compare(what, got[0], got[1])


def info_clients(two):
    """INFO clients' tracking_clients line on both."""
    def norm(raw):
        for line in raw.split(b"\r\n"):
            if line.startswith(b"tracking_clients:"):
                return line
        return b"<no tracking_clients>"
    two.a.cmd("INFO", "clients", norm=norm)


def info_tables(two):
    """INFO stats' tracking_total_keys, _items and _prefixes on both."""
    def norm(raw):
        return b" ".join(line for line in raw.split(b"\r\n")
                         if line.startswith((b"tracking_total_keys:", b"tracking_total_items:",
                                             b"tracking_total_prefixes:")))
    two.a.cmd("INFO", "stats", norm=norm)


def a_client_info(two):
    """A's CLIENT INFO: its flags= (t, R, B in Redis 7.0's order) and redir=
    fields (a client id, which differs between the servers, blurred)."""
    def norm(raw):
        m = re.search(rb"flags=(\S*) .* redir=(-?\d+) ", raw)
        if not m:
            return b"<no flags/redir in %r>" % raw[:80]
        redir = m.group(2) if int(m.group(2)) <= 0 else b"<id>"
        return b"flags=" + m.group(1) + b" redir=" + redir
    two.a.cmd("CLIENT", "INFO", norm=norm)


basic_steps = [
    a_client_info,                     # flags=N redir=-1
    ("CLIENT", "TRACKING", "ON"),
    ("CLIENT", "GETREDIR"),
    ("CLIENT", "TRACKINGINFO"),
    a_client_info,                     # flags=t redir=0
    info_clients,
    ("@B", "SET", "k1", "v1"),
    ("@B", "SET", "k2", "v2"),
    ("GET", "k1"),
    ("MGET", "k2", "nokey"),
    info_tables,                       # 3 keys, 3 items
    ("@B", "SET", "k1", "x"),          # A read k1: one invalidate
    a_receives,
    ("@B", "SET", "k1", "y"),          # forgotten after it: none
    a_receives,
    ("@B", "DEL", "k2"),               # read by A (MGET)
    a_receives,
    ("@B", "SET", "k3", "z"),          # never read: none
    a_receives,
    info_tables,
    ("GET", "k1"),
    ("CLIENT", "TRACKING", "OFF"),
    ("@B", "SET", "k1", "after-off"),  # off: nothing
    a_receives,
    ("CLIENT", "GETREDIR"),
    ("CLIENT", "TRACKINGINFO"),
    info_clients,
]
diff_case(T, "tracking_default_mode_invalidates_reads", basic_steps)

noloop_steps = [
    ("CLIENT", "TRACKING", "ON", "NOLOOP"),
    ("CLIENT", "TRACKINGINFO"),
    ("@B", "SET", "n1", "v"),
    ("GET", "n1"),
    ("SET", "n1", "mine"),             # NOLOOP: A's own write sends A nothing
    a_receives,
    ("GET", "n1"),
    ("@B", "SET", "n1", "theirs"),     # another client's write: the invalidate
    a_receives,
]
diff_case(T, "tracking_noloop_spares_own_writes", noloop_steps)

flush_steps = [
    ("CLIENT", "TRACKING", "ON"),
    ("@B", "SET", "f1", "v"),
    ("GET", "f1"),
    ("@B", "FLUSHALL"),                # the null invalidate
    a_receives,
    ("@B", "SET", "f1", "v"),          # the table was emptied: nothing
    a_receives,
    ("GET", "f1"),
    ("@B", "FLUSHDB"),
    a_receives,
]
diff_case(T, "tracking_flush_sends_null_invalidate", flush_steps)

def a_sends_unread(*cmds):
    """A sends cmds in one write and reads nothing (their replies are
    silenced by CLIENT REPLY): a_receives then compares what did come."""
    def step(two):
        from fdtest import encode_many
        data = encode_many(list(cmds))
        two.a.ref.send_raw(data)
        two.a.fd.send_raw(data)
    return step


own_write_silenced_steps = [
    ("CLIENT", "TRACKING", "ON"),
    ("SET", "s1", "v"),
    ("GET", "s1"),
    a_sends_unread(("CLIENT", "REPLY", "SKIP"), ("SET", "s1", "mine")),   # SET's reply skipped, its invalidate a push
    a_receives,
    ("GET", "s1"),
    ("@B", "SET", "s1", "theirs"),
    a_receives,
]
diff_case(T, "tracking_own_invalidate_while_reply_skipped", own_write_silenced_steps)


def a_sets(two):
    """A writes a key it read: SET's reply, then (RESP3) its own invalidate
    (Redis 7.0 sends the caller's after the reply)."""
    d = two.a
    got = []
    for c in (d.ref, d.fd):
        c.send("SET", "s1", "mine")
        raw = c.read(timeout=5)
        try:
            raw += c.read(timeout=0.5)
        except Exception:       # RESP2: nothing follows
            pass
        got.append(raw)
    d._compare("SET s1 by the tracking client", got[0], got[1])


own_write_steps = [
    ("CLIENT", "TRACKING", "ON"),
    ("@B", "SET", "s1", "v"),
    ("GET", "s1"),
    a_sets,                            # no NOLOOP: A's own write invalidates its read
    a_receives,
    ("GET", "s1"),
    ("FLUSHALL",),                     # its own flush: the null invalidate after +OK
    a_receives,
]
diff_case(T, "tracking_own_write_without_noloop", own_write_steps)

def note_b_ids(two):
    """B's client id on each server (asked before B subscribes)."""
    two.b_ids = [cb.cmd("CLIENT", "ID")[1:-2] for cb in (two.b.ref, two.b.fd)]


def redirect_to_b(*opts):
    """A: CLIENT TRACKING ON REDIRECT <B's id on each server> opts..."""
    def step(two):
        raws = []
        for ca, idb in zip((two.a.ref, two.a.fd), two.b_ids):
            raws.append(ca.cmd("CLIENT", "TRACKING", "ON", "REDIRECT", idb, *opts))
        two.a._compare("CLIENT TRACKING ON REDIRECT <B>", raws[0], raws[1])
    return step


def getredir_is_b(two):
    got = []
    for ca, idb in zip((two.a.ref, two.a.fd), two.b_ids):
        got.append(ca.cmd("CLIENT", "GETREDIR") == b":" + idb + b"\r\n")
    two.a._compare("CLIENT GETREDIR is B's id", b"%r" % got[0], b"%r" % got[1])


def b_receives(two):
    """B's next message (the redirected invalidation: a RESP2 pub/sub
    message on __redis__:invalidate, or a RESP3 push)."""
    d = two.b
    got = [c.read(timeout=5) for c in (d.ref, d.fd)]
    d._compare("what B receives", got[0], got[1])


redirect_steps = [
    note_b_ids,
    ("@B", "SUBSCRIBE", "__redis__:invalidate"),
    redirect_to_b(),
    getredir_is_b,
    ("SET", "r1", "v"),
    ("GET", "r1"),
    ("SET", "r1", "w"),                # A's write, A's read: to B
    b_receives,
    ("GET", "r1"),
    ("FLUSHALL",),                     # the null invalidate, to B
    b_receives,
    ("CLIENT", "TRACKING", "ON", "REDIRECT", "987654321"),
    ("CLIENT", "TRACKING", "ON", "REDIRECT", "x"),
    ("CLIENT", "TRACKING", "ON", "REDIRECT", "1", "REDIRECT", "2"),
    ("CLIENT", "TRACKING", "ON", "REDIRECT"),
]
diff_case(T, "tracking_redirect_to_a_subscriber", redirect_steps)

optin_steps = [
    ("CLIENT", "TRACKING", "ON", "OPTIN"),
    ("CLIENT", "TRACKINGINFO"),
    ("@B", "MSET", "o1", "a", "o2", "b", "o3", "c"),
    ("GET", "o1"),                     # OPTIN without CACHING yes: not remembered
    ("CLIENT", "CACHING", "yes"),
    ("CLIENT", "TRACKINGINFO"),        # caching-yes
    ("GET", "o2"),                     # remembered
    ("GET", "o3"),                     # the mark lasted one command: not
    ("CLIENT", "CACHING", "no"),
    ("CLIENT", "TRACKING", "ON", "OPTOUT"),
    ("@B", "MSET", "o1", "x", "o2", "y", "o3", "z"),
    a_receives,                        # o2 only
    ("CLIENT", "TRACKING", "OFF"),
    ("CLIENT", "TRACKING", "ON", "OPTOUT"),
    ("GET", "o1"),                     # OPTOUT: remembered
    ("CLIENT", "CACHING", "no"),
    ("GET", "o2"),                     # not remembered
    ("CLIENT", "CACHING", "yes"),
    ("CLIENT", "CACHING", "maybe"),
    ("@B", "MSET", "o1", "1", "o2", "2"),
    a_receives,                        # o1 only
    ("CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT"),
]
diff_case(T, "tracking_optin_optout_with_client_caching", optin_steps)

error_steps = [
    ("CLIENT", "TRACKING"),
    ("CLIENT", "TRACKING", "maybe"),
    ("CLIENT", "TRACKING", "ON", "FOO"),
    ("CLIENT", "TRACKING", "OFF"),
    ("CLIENT", "TRACKINGINFO"),
    ("CLIENT", "TRACKING", "ON", "NOLOOP"),
    ("RESET",),                        # RESET turns tracking off
    ("CLIENT", "TRACKINGINFO"),
    ("CLIENT", "GETREDIR"),
]
diff_case(T, "tracking_errors_as_redis", error_steps)


# ------------------------------------------------------------------ BCAST

def b_pipelines(*cmds):
    """B sends cmds in one write (one loop turn on both servers: Redis
    broadcasts a turn's keys in one message per prefix), replies compared."""
    def step(two):
        two.b.pipeline(list(cmds))
    return step


def a_pipelines(*cmds):
    """A sends cmds in one write; everything it gets up to the last reply
    (its own BCAST invalidations follow the replies) is compared by a_receives."""
    def step(two):
        two.a.pipeline(list(cmds))
    return step


bcast_error_steps = [
    ("CLIENT", "TRACKING", "ON", "PREFIX", "x"),                  # PREFIX without BCAST
    ("CLIENT", "TRACKING", "ON", "BCAST", "OPTIN"),
    ("CLIENT", "TRACKING", "ON", "BCAST", "OPTOUT"),
    ("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "ab", "PREFIX", "a"),     # the first overlaps a later one
    ("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a", "PREFIX", "a"),
    ("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a\r\nb", "PREFIX", "a"),   # CR LF shown as spaces
    ("CLIENT", "TRACKINGINFO"),                                   # still off
    ("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "x", "PREFIX", "p:"),
    ("CLIENT", "TRACKINGINFO"),                                   # bcast, prefixes sorted
    ("CLIENT", "GETREDIR"),
    info_tables,                                                  # 2 prefixes
    ("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "x"),         # overlaps its own
    ("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "xy"),
    ("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "p"),
    ("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "q", "NOLOOP"),   # adds q, NOLOOP now
    ("CLIENT", "TRACKINGINFO"),
    ("CLIENT", "TRACKING", "ON"),                                 # BCAST off while on: refused
    ("CLIENT", "TRACKING", "ON", "OPTIN"),
    ("CLIENT", "TRACKING", "ON", "BCAST"),                        # the empty prefix joins
    ("CLIENT", "TRACKINGINFO"),
    ("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "zz"),        # '' overlaps everything
    info_tables,
    ("@B", "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "x"),   # B shares x
    info_tables,
    ("CLIENT", "TRACKING", "OFF"),                                # clears A's prefixes
    ("CLIENT", "TRACKINGINFO"),
    info_tables,                                                  # x stays (B's)
    ("@B", "RESET"),
    info_tables,                                                  # none
    ("CLIENT", "TRACKING", "ON"),                                 # default mode again
    ("CLIENT", "TRACKING", "ON", "BCAST"),
    ("CLIENT", "TRACKING", "OFF"),
    ("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "x", "PREFIX", "y"),
    ("CLIENT", "TRACKINGINFO"),
]
diff_case(T, "tracking_bcast_prefix_errors_and_info", bcast_error_steps)

bcast_batch_steps = [
    ("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "u:", "PREFIX", "a"),
    ("@B", "SET", "zz", "1"),                          # no prefix of A's: nothing
    a_receives,
    b_pipelines(("SET", "u:2", "x"),                   # one turn: one message per prefix,
                ("MSET", "u:1", "y", "a", "1", "zz", "2", "u:2", "z"),   # keys sorted, each once
                ("DEL", "u:1"),
                ("SET", "ab", "2")),
    a_receives,
    ("@B", "SET", "u:3", "x"),                         # the next turn: its own message
    a_receives,
    ("GET", "u:3"),                                    # BCAST reads are not remembered
    info_tables,
    ("@B", "FLUSHALL"),                                # the null invalidate reaches BCAST too
    a_receives,
    ("SET", "u:4", "mine"),                            # without NOLOOP, A's own write: after its reply
    a_receives,
    b_pipelines(("MULTI",), ("SET", "a{m}1", "1"), ("INCR", "a{m}2"), ("EXEC",)),
    a_receives,
    ("@B", "CLIENT", "TRACKING", "ON", "BCAST"),       # B, all keys: A's write reaches both
    ("SET", "u:5", "v"),
    a_receives,
    ("@B", "PING"),                                    # B's push (RESP3) arrives before its PONG
]
diff_case(T, "tracking_bcast_one_message_per_prefix_and_turn", bcast_batch_steps)

bcast_noloop_steps = [
    ("CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP", "PREFIX", "n:"),
    ("CLIENT", "TRACKINGINFO"),
    a_pipelines(("SET", "n:1", "mine"), ("MSET", "n:2", "a", "n:3", "b")),   # A's own: nothing
    a_receives,
    ("@B", "SET", "n:1", "theirs"),
    a_receives,
    a_pipelines(("SET", "n:5", "x"), ("SET", "zz", "y")),
    a_receives,
    ("@B", "MSET", "n:4", "1", "n:5", "2"),
    a_receives,
]
diff_case(T, "tracking_bcast_noloop_spares_own_writes", bcast_noloop_steps)

bcast_redirect_steps = [
    note_b_ids,
    ("@B", "SUBSCRIBE", "__redis__:invalidate"),
    redirect_to_b("BCAST", "PREFIX", "q"),
    lambda two: two.a.cmd("CLIENT", "TRACKINGINFO",          # the redirect id differs
                          norm=lambda raw: re.sub(rb"redirect\r\n:\d+", b"redirect :id", raw)),
    getredir_is_b,
    ("MSET", "q2", "1", "q1", "2", "r", "3"),         # to B: [q1 q2] (RESP2: a message)
    b_receives,
    ("SET", "r2", "4"),                                # not under q: nothing
    ("SET", "q3", "5"),
    b_receives,
    ("FLUSHALL",),                                     # the null, to B
    b_receives,
]
diff_case(T, "tracking_bcast_redirect_to_a_subscriber", bcast_redirect_steps)


def redirect_to_gone_client(two):
    """A third client C on each server; A redirects to it (BCAST, prefix
    br); C closes; B writes under br: A gets `tracking-redir-broken <C>`
    (RESP3; nothing in RESP2) and TRACKINGINFO shows broken_redirect. C's
    id differs between the servers: it is blurred."""
    from fdtest import Conn
    blur = lambda raw: re.sub(rb":\d+\r\n", b":<id>\r\n", raw)
    got = {"on": [], "push": [], "info": []}
    for ca, cb in ((two.a.ref, two.b.ref), (two.a.fd, two.b.fd)):
        c = Conn(ca.port)
        cid = c.cmd("CLIENT", "ID")[1:-2]
        got["on"].append(ca.cmd("CLIENT", "TRACKING", "ON", "BCAST", "REDIRECT", cid, "PREFIX", "br"))
        c.close()
        for _ in range(50):                  # the server has seen C go
            if b"id=%s " % cid not in cb.cmd("CLIENT", "LIST"):
                break
            time.sleep(0.05)
        cb.cmd("SET", "br1", "x")
        ca.send("PING")
        raw = b""
        for _ in range(5):
            r = ca.read()
            raw += r
            if r.startswith(b"+PONG"):
                break
        got["push"].append(blur(raw))
        got["info"].append(blur(ca.cmd("CLIENT", "TRACKINGINFO")))
    for what in ("on", "push", "info"):
        two.a._compare("redirect to a gone client: " + what, *got[what])


bcast_broken_steps = [
    redirect_to_gone_client,
    a_client_info,                                     # flags=tRB redir=<C's id>
    ("CLIENT", "TRACKING", "OFF"),
    ("CLIENT", "TRACKINGINFO"),                        # the mark goes with tracking
]
diff_case(T, "tracking_bcast_redirect_broken", bcast_broken_steps)


# a transaction's writes (forwarded to a Redis backend as one block: no
# command hook sees its parts) invalidate too, after EXEC's reply
multi_steps = [
    ("CLIENT", "TRACKING", "ON"),
    ("@B", "MSET", "{x}1", "a", "{x}2", "b"),
    ("MGET", "{x}1", "{x}2"),
    b_pipelines(("MULTI",), ("SET", "{x}1", "c"), ("GET", "{x}2"), ("EXEC",)),
    a_receives,                                        # {x}1 only
    ("GET", "{x}1"),
    a_pipelines(("MULTI",), ("DEL", "{x}1"), ("INCR", "{x}3"), ("EXEC",)),   # its own: after EXEC's reply
    a_receives,
]
diff_case(T, "tracking_transaction_writes_invalidate", multi_steps)

# a script's writes (frontdoor's engine, or forwarded whole to a Redis
# backend: its declared keys) invalidate, its caller's own after its reply;
# in BCAST, NOLOOP does not spare a script's writes (Redis 7.0: the script
# client wrote them)
SET_KEYS = "for i, k in ipairs(KEYS) do redis.call('SET', k, ARGV[1]) end return #KEYS"
script_steps = [
    ("CLIENT", "TRACKING", "ON"),
    ("@B", "MSET", "{s}1", "a", "{s}2", "b"),
    ("MGET", "{s}1", "{s}2"),
    ("@B", "EVAL", SET_KEYS, "1", "{s}1", "x"),
    a_receives,
    ("EVAL", SET_KEYS, "1", "{s}2", "y"),              # its own: after the reply
    a_receives,
    ("CLIENT", "TRACKING", "OFF"),
    ("CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP", "PREFIX", "{s}"),
    ("EVAL", SET_KEYS, "2", "{s}2", "{s}1", "z"),      # not spared
    a_receives,
    ("SET", "{s}3", "w"),                              # spared
    a_receives,
]
diff_case(T, "tracking_script_writes_invalidate", script_steps)


# ------------------------------------------------- tracking-table-max-keys

def a_receives_any_keys(two):
    """a_receives with the tracked keys' names (t:<digit>) blurred: Redis
    evicts random keys, so the count and shape of the invalidations are
    compared, not which keys."""
    a_receives(two, lambda raw: re.sub(rb"t:\d", b"t:?", raw), "what A receives up to PING (key names blurred)")


limit_steps = [
    ("CONFIG", "SET", "tracking-table-max-keys", "2"),
    ("CONFIG", "GET", "tracking-table-max-keys"),
    ("CLIENT", "TRACKING", "ON"),
    ("MGET", "t:1", "t:2", "t:3", "t:4", "t:5"),       # 5 keys: 3 evicted, with their invalidations
    a_receives_any_keys,
    info_tables,                                       # 2 keys, 2 items
    ("CONFIG", "SET", "tracking-table-max-keys", "0"),   # no limit
    ("MGET", "t:1", "t:2", "t:3", "t:4", "t:5"),
    a_receives_any_keys,
    info_tables,
    ("CONFIG", "SET", "tracking-table-max-keys", "1"),   # lowered: 4 go
    a_receives_any_keys,
    info_tables,
    ("CONFIG", "SET", "tracking-table-max-keys", "-1"),
    ("CONFIG", "SET", "tracking-table-max-keys", "x"),
    ("CONFIG", "SET", "tracking-table-max-keys", "1000000"),
]


def limit_case():
    for resp3 in (False, True):
        two = DiffTwo(resp3)
        try:
            diff_steps(limit_steps, two)
            if two.a.mismatches:
                raise AssertionError(("RESP3: " if resp3 else "RESP2: ") + two.a.report())
        finally:
            for c in (two.b.ref, two.b.fd):     # the servers are shared: the default back
                c.cmd("CONFIG", "SET", "tracking-table-max-keys", "1000000")
            two.close()


T.add("tracking_table_max_keys_evicts_random_keys", limit_case)


if __name__ == "__main__":
    T.main()
