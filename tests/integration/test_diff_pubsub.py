#!/usr/bin/python3
"""Differential test of pub/sub counts (issue 27), on every backend
(FD_DIFF_SUITES): several subscribers per server, the same commands to a
real redis-server 7.0 and to frontdoor, replies compared byte for byte in
RESP2 and RESP3.

On the redis backends frontdoor's subscribers share one relay connection,
which the server counts once per channel and pattern: PUBLISH, SPUBLISH and
PUBSUB NUMSUB/SHARDNUMSUB/NUMPAT/CHANNELS must still answer what a
redis-server answers (proxy/pubsub.c, docs/pubsub.md "Counts") — Redis's
own tests "PUBLISH/SUBSCRIBE with two clients" and "NUMPATs returns the
number of unique patterns" among them. On redis, a client subscribed
directly to the backing server is counted as redis-server counts it.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import Tests, Conn, check, diff_pair, norm_sorted, parse, shared_frontdoor

T = Tests(case_timeout=60)
BACKEND = os.environ.get("FD_BACKEND", "lmdb")


def clients(n, resp3):
    """n Diff pairs (each a client on redis-server and one on frontdoor)
    sharing one report; the first flushes both servers."""
    ds = [diff_pair(resp3, flush=(i == 0)) for i in range(n)]
    for d in ds[1:]:
        d.mismatches = ds[0].mismatches
    return ds


def close(ds):
    for d in ds:
        d.ref.close()
        d.fd.close()


def both_protocols(fn):
    def case():
        for resp3 in (False, True):
            ds = []
            try:
                fn(resp3, ds)
                if ds and ds[0].mismatches:
                    raise AssertionError(("RESP3: " if resp3 else "RESP2: ") + ds[0].report())
            finally:
                close(ds)
    case.__name__ = fn.__name__
    T.add(fn.__name__, case)
    return fn


def read_both(d, what):
    d._compare(what, d.ref.read(), d.fd.read())


def sub(d, *args):
    """A (P|S)(UN)SUBSCRIBE: one confirmation per name, each compared."""
    d.cmd(*args)
    for i in range(len(args) - 2):
        read_both(d, "%s confirmation %d" % (args[0], i + 2))


@both_protocols
def publish_subscribe_with_two_clients(resp3, ds):
    """Redis's test: two subscribers of chan1, PUBLISH answers 2, both read
    the message."""
    rd1, rd2, r = clients(3, resp3)
    ds += [rd1, rd2, r]
    rd1.cmd("SUBSCRIBE", "chan1")
    rd2.cmd("SUBSCRIBE", "chan1")
    r.cmd("PUBLISH", "chan1", "hello")
    read_both(rd1, "rd1 message")
    read_both(rd2, "rd2 message")
    r.cmd("PUBSUB", "NUMSUB", "chan1", "chan2")
    rd1.cmd("UNSUBSCRIBE", "chan1")
    r.cmd("PUBLISH", "chan1", "again")
    read_both(rd2, "rd2 second message")
    r.cmd("PUBSUB", "NUMSUB", "chan1")
    rd2.cmd("UNSUBSCRIBE", "chan1")
    r.cmd("PUBLISH", "chan1", "nobody")
    r.cmd("PUBSUB", "NUMSUB", "chan1")


@both_protocols
def numpat_returns_the_number_of_unique_patterns(resp3, ds):
    """Redis's test: three unique patterns and one that overlaps."""
    rd1, rd2, r = clients(3, resp3)
    ds += [rd1, rd2, r]
    rd1.cmd("PSUBSCRIBE", "foo*")
    rd2.cmd("PSUBSCRIBE", "foo*")
    rd1.cmd("PSUBSCRIBE", "bar*")
    rd2.cmd("PSUBSCRIBE", "baz*")
    r.cmd("PUBSUB", "NUMPAT")
    r.cmd("PUBLISH", "foo1", "m")             # two subscribers of foo*
    for d, n in ((rd1, 1), (rd2, 1)):
        for _ in range(n):
            read_both(d, "pmessage foo1")
    r.cmd("PUBLISH", "bar1", "m")
    read_both(rd1, "pmessage bar1")
    rd1.cmd("PUNSUBSCRIBE", "foo*")
    rd1.cmd("PUNSUBSCRIBE", "bar*")
    r.cmd("PUBSUB", "NUMPAT")
    rd2.cmd("PUNSUBSCRIBE", "foo*")
    rd2.cmd("PUNSUBSCRIBE", "baz*")
    r.cmd("PUBSUB", "NUMPAT")


@both_protocols
def counts_of_channels_patterns_and_shard_channels(resp3, ds):
    """A receiver per subscription: a channel's subscribers plus each
    matching pattern's; NUMSUB counts channel subscribers only; CHANNELS
    lists each channel once; shard channels apart."""
    a, b, c, r = clients(4, resp3)
    ds += [a, b, c, r]
    sub(a, "SUBSCRIBE", "news", "sport")
    sub(b, "SUBSCRIBE", "news")
    sub(b, "PSUBSCRIBE", "n*", "ne*")
    sub(c, "PSUBSCRIBE", "n*")
    sub(c, "SSUBSCRIBE", "{s}x")
    r.cmd("PUBLISH", "news", "m1")            # a, b (channel), b twice, c (patterns): 5
    read_both(a, "a: message news")
    # b's: the channel's message, then one per pattern in the server's
    # pattern order (a hash table's: compared as a set)
    read_both(b, "b: message news")
    d = b
    pair = [sorted([d.ref.read(), d.ref.read()]), sorted([d.fd.read(), d.fd.read()])]
    d._compare("b: two pmessages for news", pair[0], pair[1])
    read_both(c, "c: pmessage news")
    r.cmd("PUBLISH", "sport", "m2")
    read_both(a, "a: message sport")
    r.cmd("PUBLISH", "nothing-here", "m3")    # n* twice
    read_both(b, "b: pmessage nothing-here")
    read_both(c, "c: pmessage nothing-here")
    r.cmd("PUBLISH", "other", "m4")
    r.cmd("PUBSUB", "NUMSUB", "news", "sport", "n*", "other")
    r.cmd("PUBSUB", "NUMSUB")
    r.cmd("PUBSUB", "NUMPAT")
    r.cmd("PUBSUB", "CHANNELS", norm=norm_sorted)
    r.cmd("PUBSUB", "CHANNELS", "n*", norm=norm_sorted)
    r.cmd("PUBSUB", "CHANNELS", "zz*")
    r.cmd("SPUBLISH", "{s}x", "m5")
    read_both(c, "c: smessage")
    r.cmd("SPUBLISH", "{s}y", "m6")
    r.cmd("PUBSUB", "SHARDNUMSUB", "{s}x", "{s}y")
    r.cmd("PUBSUB", "SHARDCHANNELS")
    sub(c, "SUNSUBSCRIBE", "{s}x")
    r.cmd("PUBSUB", "SHARDNUMSUB", "{s}x")
    sub(a, "UNSUBSCRIBE", "news", "sport")
    sub(b, "UNSUBSCRIBE", "news")
    sub(b, "PUNSUBSCRIBE", "n*", "ne*")
    sub(c, "PUNSUBSCRIBE", "n*")
    r.cmd("PUBLISH", "news", "m7")
    r.cmd("PUBSUB", "NUMSUB", "news")
    r.cmd("PUBSUB", "NUMPAT")
    r.cmd("PUBSUB", "CHANNELS")


@T.case
def direct_subscribers_of_the_backend_counted():
    """redis backend: a client subscribed on the backing redis-server itself
    counts as redis-server counts it, beside frontdoor's subscribers (the
    relay's own subscriptions are not counted)."""
    if BACKEND != "redis":
        return
    f = shared_frontdoor()
    with f.conn() as s1, f.conn() as s2, Conn(f.backing.port) as direct, f.conn() as p:
        check(s1.cmd("SUBSCRIBE", "dch").endswith(b":1\r\n"), "s1 subscribed")
        check(s2.cmd("PSUBSCRIBE", "d*").endswith(b":1\r\n"), "s2 subscribed")
        check(direct.cmd("SUBSCRIBE", "dch").endswith(b":1\r\n"), "direct subscribed")
        check(direct.cmd("PSUBSCRIBE", "only-direct*").endswith(b":2\r\n"), "direct psubscribed")
        r = p.cmd("PUBLISH", "dch", "m")
        check(r == b":3\r\n", "PUBLISH: s1, s2's pattern, the direct client", r)
        r = p.cmd("PUBSUB", "NUMSUB", "dch")
        check(parse(r) == [b"dch", 2], "NUMSUB: s1 and the direct client", r)
        r = p.cmd("PUBSUB", "NUMPAT")
        check(r == b":2\r\n", "NUMPAT: d* and only-direct*", r)
        with Conn(f.backing.port) as direct2:
            check(direct2.cmd("SUBSCRIBE", "direct-only-ch").endswith(b":1\r\n"), "direct2 subscribed")
            r = p.cmd("PUBSUB", "CHANNELS")
            check(sorted(parse(r)) == [b"dch", b"direct-only-ch"], "CHANNELS: the union", r)
            r = p.cmd("PUBLISH", "direct-only-ch", "m")
            check(r == b":2\r\n", "PUBLISH to a channel only a direct client has: it and s2's d*", r)


if __name__ == "__main__":
    T.main()
