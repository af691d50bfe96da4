#!/usr/bin/python3
"""Bounds of issue 25, on every backend (FD_DIFF_SUITES): count arguments
outside Redis 7.0's ranges (HRANDFIELD / SRANDMEMBER / ZRANDMEMBER) get
Redis's error byte for byte, and the last bit of a 512 MB string (SETBIT
4294967295) is answered as Redis does — except on MongoDB, whose 16 MB
document limit refuses it with the documented error (docs/mongodb.md).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import Tests, diff_pair, check

T = Tests(case_timeout=300)
BACKEND = os.environ.get("FD_BACKEND", "lmdb")

BIG = "-9223372036854770000"
LMIN = "-9223372036854775808"


def scripted(name, steps):
    def fn():
        for resp3 in (False, True):
            d = diff_pair(resp3)
            for st in steps:
                d.cmd(*st)
            if d.mismatches:
                raise AssertionError(("RESP3: " if resp3 else "RESP2: ") + d.report())
    fn.__name__ = name
    T.add(name, fn)


# Each command once on an existing key, once on a missing one and once on a
# key of another type: the range checks come before the key lookup.
scripted("bounds_rand_count_ranges", [
    ("HSET", "h", "a", "1", "b", "2"), ("SADD", "s", "a", "b"), ("ZADD", "z", "1", "a", "2", "b"),
    ("SET", "str", "x"),
    ("HRANDFIELD", "h", BIG, "WITHVALUES"), ("HRANDFIELD", "h", LMIN), ("HRANDFIELD", "h", LMIN, "WITHVALUES"),
    ("HRANDFIELD", "h", "9223372036854775807", "WITHVALUES"), ("HRANDFIELD", "h", "4611686018427387904", "WITHVALUES"),
    ("HRANDFIELD", "h", "-4611686018427387904", "WITHVALUES"), ("HRANDFIELD", "nokey", BIG, "WITHVALUES"),
    ("HRANDFIELD", "str", BIG, "WITHVALUES"), ("HRANDFIELD", "h", "x", "WITHVALUESX"),
    ("HRANDFIELD", "h", LMIN, "WITHVALUESX"), ("HRANDFIELD", "h", "5", "WITHVALUESX"),
    ("HRANDFIELD", "h", "5", "WITHVALUES", "x"), ("HRANDFIELD", "nokey", "x"),
    ("HRANDFIELD", "nokey", "-3", "WITHVALUES"),
    ("SRANDMEMBER", "s", LMIN), ("SRANDMEMBER", "nokey", LMIN), ("SRANDMEMBER", "str", LMIN),
    ("SRANDMEMBER", "s", "x"), ("SRANDMEMBER", "s", "0"),
    ("ZRANDMEMBER", "z", BIG, "WITHSCORES"), ("ZRANDMEMBER", "z", LMIN), ("ZRANDMEMBER", "z", LMIN, "WITHSCORES"),
    ("ZRANDMEMBER", "nokey", BIG, "WITHSCORES"), ("ZRANDMEMBER", "str", BIG, "WITHSCORES"),
    ("ZRANDMEMBER", "z", "x", "WITHSCORESX"), ("ZRANDMEMBER", "z", "5", "WITHSCORESX"),
])


def bounds_setbit_last_bit():
    """SETBIT at the last bit of a 512 MB string, then again on the 512 MB
    value (a rewrite: LMDB needs room for both copies, lmdb-map-size's
    default allows it). Was: the connection closed."""
    d = diff_pair(False, timeout=120.0)
    if BACKEND == "mongodb":
        r = d.fd.cmd("SETBIT", "bits", "4294967295", "1")
        check(r.startswith(b"-ERR mongodb: value of 536870912 bytes exceeds MongoDB's 16 MB document limit"), "mongodb: the 16 MB limit, as documented: %r" % r[:200])
        check(d.fd.cmd("EXISTS", "bits") == b":0\r\n", "mongodb: nothing stored")
        check(d.fd.cmd("PING") == b"+PONG\r\n", "mongodb: the connection stays")
        return
    for st in (("SETBIT", "bits", "4294967295", "1"), ("STRLEN", "bits"), ("GETBIT", "bits", "4294967295"),
               ("SETBIT", "bits", "4294967294", "1"), ("GETBIT", "bits", "4294967294"),
               ("BITCOUNT", "bits"), ("DEL", "bits"), ("PING",)):
        d.cmd(*st)
    if d.mismatches:
        raise AssertionError(d.report())


T.add("bounds_setbit_last_bit", bounds_setbit_last_bit)

if __name__ == "__main__":
    T.main()
