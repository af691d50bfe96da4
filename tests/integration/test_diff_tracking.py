#!/usr/bin/python3
"""Differential test of client-side caching (CLIENT TRACKING, proxy/tracking.c,
issue 27) on every backend (FD_DIFF_SUITES): two clients per server, A
tracks and reads, B writes; what A receives (its RESP3 invalidate pushes,
then the reply to a PING) is compared byte for byte with redis-server 7.0,
in RESP2 (no redirect: no pushes, as Redis) and RESP3.

Served: default mode, ON/OFF, NOLOOP, OPTIN/OPTOUT with CLIENT CACHING, REDIRECT (RESP2: B subscribed to
__redis__:invalidate gets messages; RESP3: pushes), FLUSHALL/FLUSHDB's null invalidate,
CLIENT GETREDIR / TRACKINGINFO while tracking, INFO's tracking_clients.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import Tests, diff_case

T = Tests(case_timeout=60)


def a_receives(two):
    """A sends PING: everything it gets up to +PONG (pushes first) compared."""
    d = two.a
    got = []
    for c in (d.ref, d.fd):
        c.send("PING")
        raw = b""
        for _ in range(10):
            r = c.read(timeout=5)
            raw += r
            if r.startswith(b"+PONG"):
                break
        got.append(raw)
    d._compare("what A receives up to PING", got[0], got[1])


def info_clients(two):
    """INFO clients' tracking_clients line on both."""
    def norm(raw):
        for line in raw.split(b"\r\n"):
            if line.startswith(b"tracking_clients:"):
                return line
        return b"<no tracking_clients>"
    two.a.cmd("INFO", "clients", norm=norm)


def info_tables(two):
    """INFO stats' tracking_total_keys and tracking_total_items on both."""
    def norm(raw):
        return b" ".join(line for line in raw.split(b"\r\n")
                         if line.startswith((b"tracking_total_keys:", b"tracking_total_items:")))
    two.a.cmd("INFO", "stats", norm=norm)


basic_steps = [
    ("CLIENT", "TRACKING", "ON"),
    ("CLIENT", "GETREDIR"),
    ("CLIENT", "TRACKINGINFO"),
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


if __name__ == "__main__":
    T.main()
