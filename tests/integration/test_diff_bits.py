#!/usr/bin/python3
"""Differential test of the bitmap, HyperLogLog, LCS and generic commands
(SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD BITFIELD_RO, PFADD PFCOUNT
PFMERGE, LCS, COPY, SORT SORT_RO, OBJECT, MEMORY): the same commands go to a
real redis-server 7.0 and to frontdoor, every reply compared byte for byte,
each script once in RESP2 and once in RESP3.

Multi-key cases use one hash tag ({t}) so that they run unchanged through a
Redis Cluster. SORT's BY/GET patterns name other keys: a cluster refuses
them (sort_patterns is skipped there; sort_patterns_cluster checks the
refusal instead). OBJECT/MEMORY answers that depend on the store are checked
against docs/encoding.md, not against Redis.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import Tests, diff_pair, shared_pair, check, eq, parse, Err

T = Tests(case_timeout=120)
BACKEND = os.environ.get("FD_BACKEND", "lmdb")
REDIS_BACKEND = BACKEND in ("redis", "redis-cluster")

def run(steps, d):
    for st in steps:
        if callable(st):
            st(d)
        else:
            d.cmd(*st)


def scripted(name, steps):
    def fn():
        for resp3 in (False, True):
            d = diff_pair(resp3)
            run(steps, d)
            if d.mismatches:
                raise AssertionError(("RESP3: " if resp3 else "RESP2: ") + d.report())
    fn.__name__ = name
    T.add(name, fn)


# ============================================================ bitmaps

scripted("bits_setbit_getbit", [
    ("SETBIT", "b", "7", "1"), ("GET", "b"), ("SETBIT", "b", "7", "1"), ("SETBIT", "b", "7", "0"),
    ("GET", "b"), ("STRLEN", "b"), ("SETBIT", "b", "0", "1"), ("GETBIT", "b", "0"), ("GETBIT", "b", "1"),
    ("SETBIT", "b", "100000", "1"), ("STRLEN", "b"), ("GETBIT", "b", "100000"),
    ("GETBIT", "b", "99999999"), ("GETBIT", "nokey", "5"), ("SETBIT", "z", "100", "0"), ("GET", "z"),
    ("SETBIT", "b", "-1", "1"), ("SETBIT", "b", "x", "1"), ("SETBIT", "b", "1", "2"),
    ("SETBIT", "b", "1", "-1"), ("SETBIT", "b", "1", "x"), ("SETBIT", "b", "4294967296", "1"),
    ("SETBIT", "b", "x", "2"), ("GETBIT", "b", "-1"), ("GETBIT", "b", "4294967296"), ("GETBIT", "b", "1.5"),
    ("SET", "s", "foobar"), ("SETBIT", "s", "6", "1"), ("GET", "s"), ("GETBIT", "s", "9"),
    ("SET", "n", "12345"), ("SETBIT", "n", "2", "1"), ("GET", "n"), ("INCR", "n"),
    ("SET", "t", "a", "EX", "1000"), ("SETBIT", "t", "100", "1"), ("TTL", "t"),
    ("RPUSH", "l", "a"), ("SETBIT", "l", "1", "1"), ("GETBIT", "l", "1"), ("SETBIT", "l", "x", "1"),
])

scripted("bits_bitcount", [
    ("BITCOUNT", "nokey"), ("BITCOUNT", "nokey", "0", "-1"), ("BITCOUNT", "nokey", "x", "y"),
    ("SET", "s", "foobar"), ("BITCOUNT", "s"), ("BITCOUNT", "s", "0", "0"), ("BITCOUNT", "s", "1", "1"),
    ("BITCOUNT", "s", "0", "-1"), ("BITCOUNT", "s", "-2", "-1"), ("BITCOUNT", "s", "-1", "-2"),
    ("BITCOUNT", "s", "-100", "100"), ("BITCOUNT", "s", "5", "2"), ("BITCOUNT", "s", "10", "20"),
    ("BITCOUNT", "s", "1", "5", "BYTE"), ("BITCOUNT", "s", "5", "30", "BIT"), ("BITCOUNT", "s", "-5", "-1", "bit"),
    ("BITCOUNT", "s", "0", "-1", "BIT"), ("BITCOUNT", "s", "47", "47", "BIT"), ("BITCOUNT", "s", "48", "100", "BIT"),
    ("BITCOUNT", "s", "0"), ("BITCOUNT", "s", "0", "1", "FOO"), ("BITCOUNT", "s", "x", "1"),
    ("BITCOUNT", "s", "0", "y"), ("BITCOUNT", "s", "0", "1", "BIT", "x"), ("BITCOUNT", "s", "-1", "-5", "BIT"),
    ("SET", "e", ""), ("BITCOUNT", "e"), ("BITCOUNT", "e", "0", "-1"),
    ("SET", "big", b"\xff" * 1000), ("BITCOUNT", "big"), ("BITCOUNT", "big", "3", "997", "BIT"),
    ("HSET", "h", "f", "v"), ("BITCOUNT", "h"), ("BITCOUNT", "h", "0", "1"),
])

scripted("bits_bitpos", [
    ("BITPOS", "nokey", "1"), ("BITPOS", "nokey", "0"), ("BITPOS", "nokey", "0", "x"), ("BITPOS", "nokey", "2"),
    ("SET", "s", b"\xff\xf0\x00"), ("BITPOS", "s", "0"), ("BITPOS", "s", "1"), ("BITPOS", "s", "1", "2"),
    ("BITPOS", "s", "0", "0", "0"), ("BITPOS", "s", "1", "-1"), ("BITPOS", "s", "1", "1", "-1"),
    ("BITPOS", "s", "0", "1", "1"), ("BITPOS", "s", "1", "7", "15", "BIT"), ("BITPOS", "s", "0", "7", "15", "BIT"),
    ("BITPOS", "s", "1", "-10", "-1", "BIT"), ("BITPOS", "s", "0", "3", "2"), ("BITPOS", "s", "1", "100"),
    ("SET", "ones", b"\xff\xff"), ("BITPOS", "ones", "0"), ("BITPOS", "ones", "0", "0"), ("BITPOS", "ones", "0", "0", "-1"),
    ("BITPOS", "ones", "0", "0", "15", "BIT"), ("SET", "zero", b"\x00\x00"), ("BITPOS", "zero", "1"),
    ("BITPOS", "s", "2"), ("BITPOS", "s", "x"), ("BITPOS", "s", "1", "x"), ("BITPOS", "s", "1", "0", "y"),
    ("BITPOS", "s", "1", "0", "1", "FOO"), ("BITPOS", "s", "1", "0", "1", "BIT", "x"),
    ("SET", "e", ""), ("BITPOS", "e", "0"), ("BITPOS", "e", "1"),
    ("SADD", "set", "a"), ("BITPOS", "set", "1"), ("BITPOS", "set", "2"),
])

scripted("bits_bitop", [
    ("SET", "{t}a", "foobar"), ("SET", "{t}b", "abcdef"), ("SET", "{t}c", "xyz"),
    ("BITOP", "AND", "{t}d", "{t}a", "{t}b"), ("GET", "{t}d"),
    ("BITOP", "OR", "{t}d", "{t}a", "{t}b", "{t}c"), ("GET", "{t}d"),
    ("BITOP", "XOR", "{t}d", "{t}a", "{t}c"), ("GET", "{t}d"),
    ("BITOP", "NOT", "{t}d", "{t}c"), ("GET", "{t}d"),
    ("BITOP", "and", "{t}d", "{t}a", "{t}missing"), ("GET", "{t}d"),
    ("BITOP", "OR", "{t}d", "{t}missing", "{t}a"), ("GET", "{t}d"),
    ("BITOP", "NOT", "{t}d", "{t}missing"), ("EXISTS", "{t}d"),
    ("SET", "{t}d", "x"), ("BITOP", "AND", "{t}d", "{t}m1", "{t}m2"), ("EXISTS", "{t}d"),
    ("SET", "{t}d", "x", "EX", "1000"), ("BITOP", "OR", "{t}d", "{t}a"), ("TTL", "{t}d"),
    ("BITOP", "XOR", "{t}a", "{t}a", "{t}b"), ("GET", "{t}a"),
    ("BITOP", "NOT", "{t}d", "{t}a", "{t}b"), ("BITOP", "FOO", "{t}d", "{t}a"), ("BITOP", "ANDX", "{t}d", "{t}a"),
    ("RPUSH", "{t}l", "x"), ("BITOP", "AND", "{t}d", "{t}a", "{t}l"), ("BITOP", "AND", "{t}l", "{t}a"),
    ("TYPE", "{t}l"), ("BITOP", "AND", "{t}d"),
])

scripted("bits_bitfield", [
    ("BITFIELD", "bf", "SET", "i8", "0", "100", "GET", "i8", "0"), ("GET", "bf"),
    ("BITFIELD", "bf", "INCRBY", "i8", "0", "100"), ("BITFIELD", "bf", "OVERFLOW", "SAT", "INCRBY", "i8", "0", "100"),
    ("BITFIELD", "bf", "OVERFLOW", "FAIL", "INCRBY", "i8", "0", "100", "GET", "i8", "0"),
    ("BITFIELD", "bf", "OVERFLOW", "WRAP", "INCRBY", "u4", "#3", "100", "GET", "u4", "#3"), ("GET", "bf"),
    ("BITFIELD", "bf", "SET", "u63", "100", "123456789", "GET", "u63", "100", "GET", "i64", "100"),
    ("BITFIELD", "bf", "SET", "i64", "0", "-9223372036854775808", "INCRBY", "i64", "0", "-1"),
    ("BITFIELD", "bf", "OVERFLOW", "SAT", "INCRBY", "i64", "0", "-1", "INCRBY", "u2", "1000", "7"),
    ("STRLEN", "bf"), ("BITFIELD", "bf"),
    ("BITFIELD", "new", "GET", "u8", "0"), ("EXISTS", "new"),
    ("BITFIELD", "new", "OVERFLOW", "FAIL", "SET", "u2", "50", "9"), ("GET", "new"),
    ("BITFIELD", "bf", "GET", "u64", "0"), ("BITFIELD", "bf", "GET", "i65", "0"), ("BITFIELD", "bf", "GET", "x8", "0"),
    ("BITFIELD", "bf", "GET", "u8"), ("BITFIELD", "bf", "GET", "u8", "-1"), ("BITFIELD", "bf", "GET", "u8", "#x"),
    ("BITFIELD", "bf", "SET", "u8", "0", "x"), ("BITFIELD", "bf", "OVERFLOW", "BAD", "GET", "u8", "0"),
    ("BITFIELD", "bf", "FOO"), ("BITFIELD", "bf", "INCRBY", "u8", "0"),
    ("BITFIELD_RO", "bf", "GET", "u8", "0", "GET", "i4", "#2"), ("BITFIELD_RO", "bf", "SET", "u8", "0", "1"),
    ("BITFIELD_RO", "bf", "INCRBY", "u8", "0", "1"), ("BITFIELD_RO", "nokey", "GET", "u8", "0"),
    ("BITFIELD_RO", "bf"), ("EXISTS", "nokey"),
    ("SET", "t", "a", "EX", "1000"), ("BITFIELD", "t", "SET", "u8", "64", "1"), ("TTL", "t"), ("GET", "t"),
    ("HSET", "h", "f", "v"), ("BITFIELD", "h", "GET", "u8", "0"), ("BITFIELD_RO", "h", "GET", "u8", "0"),
])

# ============================================================ HyperLogLog


def _get_same(key):
    """The stored HLL bytes must be Redis's byte for byte."""
    return ("GET", key)


scripted("hll_basic", [
    ("PFADD", "h"), ("GET", "h"), ("PFADD", "h"), ("PFCOUNT", "h"),
    ("PFADD", "h", "a", "b", "c"), ("PFADD", "h", "a"), ("PFADD", "h", "a", "d"), ("GET", "h"),
    ("PFCOUNT", "h"), ("GET", "h"), ("PFCOUNT", "h"), ("PFCOUNT", "nokey"), ("EXISTS", "nokey"),
    ("SET", "t", "x"), ("DEL", "t"), ("PFADD", "t", "a"), ("EXPIRE", "t", "1000"), ("PFADD", "t", "z"),
    ("PFCOUNT", "t"), ("TTL", "t"),
    ("SET", "s", "not an hll"), ("PFADD", "s", "a"), ("PFCOUNT", "s"), ("SET", "s", "HYLL"), ("PFCOUNT", "s"),
    ("SET", "s", b"HYLL\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), ("PFADD", "s", "a"),
    ("SET", "s", b"HYLL\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00abc"), ("PFCOUNT", "s"),
    ("SET", "s", b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x01"), ("PFCOUNT", "s"), ("PFADD", "s", "q"),
    ("RPUSH", "l", "a"), ("PFADD", "l", "a"), ("PFCOUNT", "l"),
])


def _fill(key, n, prefix="e", chunk=500):
    steps = []
    for i in range(0, n, chunk):
        steps.append(("PFADD", key) + tuple("%s%d" % (prefix, j) for j in range(i, min(n, i + chunk))))
    return steps


scripted("hll_sparse_to_dense", (
    _fill("{t}h", 200) + [("STRLEN", "{t}h"), ("PFCOUNT", "{t}h"), ("GET", "{t}h")] +
    _fill("{t}h", 3000) + [("STRLEN", "{t}h"), ("PFCOUNT", "{t}h"), ("GET", "{t}h")] +
    _fill("{t}big", 20000, "x", 1000) + [("PFCOUNT", "{t}big"), ("GET", "{t}big"), ("PFADD", "{t}big", "x1"),
                                         ("PFADD", "{t}big", "new-one"), ("PFCOUNT", "{t}big")] +
    [("PFADD", "{t}run", "a" * 10), ("PFADD", "{t}run") + tuple(str(i) for i in range(40)), ("GET", "{t}run")]
))

scripted("hll_merge", (
    _fill("{t}s1", 100, "a") + _fill("{t}s2", 150, "b") + _fill("{t}d1", 5000, "c") +
    [("PFCOUNT", "{t}s1", "{t}s2"), ("PFCOUNT", "{t}s1", "{t}d1"), ("PFCOUNT", "{t}s1", "{t}s2", "{t}nokey"),
     ("PFCOUNT", "{t}nokey", "{t}nokey2"),
     ("PFMERGE", "{t}m1", "{t}s1", "{t}s2"), ("GET", "{t}m1"), ("PFCOUNT", "{t}m1"),
     ("PFMERGE", "{t}m2", "{t}s1", "{t}d1"), ("GET", "{t}m2"), ("PFCOUNT", "{t}m2"),
     ("PFMERGE", "{t}s1", "{t}s2"), ("GET", "{t}s1"), ("PFMERGE", "{t}empty"), ("GET", "{t}empty"),
     ("PFMERGE", "{t}empty2", "{t}nokey"), ("GET", "{t}empty2"),
     ("SET", "{t}x", "junk"), ("PFMERGE", "{t}m3", "{t}s1", "{t}x"), ("EXISTS", "{t}m3"),
     ("PFCOUNT", "{t}s1", "{t}x"), ("RPUSH", "{t}l", "a"), ("PFMERGE", "{t}m3", "{t}l"), ("PFCOUNT", "{t}s1", "{t}l"),
     ("PFMERGE", "{t}l", "{t}s1"), ("SET", "{t}ttl", "x"), ("DEL", "{t}ttl"), ("PFADD", "{t}ttl", "q"),
     ("EXPIRE", "{t}ttl", "1000"), ("PFMERGE", "{t}ttl", "{t}s2"), ("TTL", "{t}ttl"), ("PFCOUNT", "{t}ttl")]
))


def _hll_copied(d):
    """An HLL copied from Redis with GET/SET keeps working on frontdoor."""
    ref = d.ref
    ref.cmd("PFADD", "src", *["v%d" % i for i in range(300)])
    raw = parse(ref.cmd("GET", "src"))
    d.cmd("SET", "copy", raw)
    d.cmd("PFCOUNT", "copy")
    d.cmd("PFADD", "copy", "v1", "w1")
    d.cmd("GET", "copy")
    ref.cmd("PFADD", "dense", *["v%d" % i for i in range(4000)])
    raw = parse(ref.cmd("GET", "dense"))
    d.cmd("SET", "copyd", raw)
    d.cmd("PFCOUNT", "copyd")
    d.cmd("PFADD", "copyd", "zz")
    d.cmd("GET", "copyd")


scripted("hll_copied_from_redis", [_hll_copied])

# ============================================================ LCS

scripted("lcs_all_forms", [
    ("SET", "{t}a", "ohmytext"), ("SET", "{t}b", "mynewtext"), ("LCS", "{t}a", "{t}b"),
    ("LCS", "{t}a", "{t}b", "LEN"), ("LCS", "{t}a", "{t}b", "IDX"), ("LCS", "{t}a", "{t}b", "IDX", "WITHMATCHLEN"),
    ("LCS", "{t}a", "{t}b", "IDX", "MINMATCHLEN", "4"), ("LCS", "{t}a", "{t}b", "IDX", "MINMATCHLEN", "-1", "WITHMATCHLEN"),
    ("LCS", "{t}a", "{t}b", "LEN", "IDX"), ("LCS", "{t}a", "{t}b", "MINMATCHLEN"), ("LCS", "{t}a", "{t}b", "MINMATCHLEN", "x"),
    ("LCS", "{t}a", "{t}b", "FOO"), ("LCS", "{t}a", "{t}nokey"), ("LCS", "{t}nokey", "{t}nokey2", "IDX"),
    ("LCS", "{t}a", "{t}a", "LEN"), ("SET", "{t}e", ""), ("LCS", "{t}e", "{t}a", "IDX"),
    ("RPUSH", "{t}l", "x"), ("LCS", "{t}a", "{t}l"), ("LCS", "{t}l", "{t}a", "FOO"),
    ("SET", "{t}x", "ACCGGTCGAGTGCGCGGAAGCCGGCCGAA" * 3), ("SET", "{t}y", "GTCGTTCGGAATGCCGTTGCTCTGTAAA" * 3),
    ("LCS", "{t}x", "{t}y"), ("LCS", "{t}x", "{t}y", "IDX", "MINMATCHLEN", "3", "WITHMATCHLEN"),
])

# ============================================================ COPY

scripted("copy_all_types", [
    ("SET", "{t}s", "value"), ("COPY", "{t}s", "{t}s2"), ("GET", "{t}s2"), ("COPY", "{t}s", "{t}s2"),
    ("SET", "{t}s", "other"), ("COPY", "{t}s", "{t}s2", "REPLACE"), ("GET", "{t}s2"), ("GET", "{t}s"),
    ("SET", "{t}e", "v", "EX", "1000"), ("COPY", "{t}e", "{t}e2"), ("TTL", "{t}e2"),
    ("COPY", "{t}nokey", "{t}x"), ("EXISTS", "{t}x"), ("COPY", "{t}s", "{t}s"), ("COPY", "{t}s", "{t}s", "REPLACE"),
    ("COPY", "{t}s", "{t}d2", "DB", "x"), ("COPY", "{t}s", "{t}d2", "DB"), ("COPY", "{t}s", "{t}d2", "FOO"),
    ("COPY", "{t}s", "{t}d2", "DB", "99999999999"), ("EXISTS", "{t}d2"),
    ("RPUSH", "{t}l", "a", "b", "c"), ("COPY", "{t}l", "{t}l2"), ("LRANGE", "{t}l2", "0", "-1"),
    ("RPUSH", "{t}l2", "d"), ("LRANGE", "{t}l", "0", "-1"), ("LRANGE", "{t}l2", "0", "-1"),
    ("HSET", "{t}h", "f1", "v1", "f2", "v2"), ("COPY", "{t}h", "{t}h2"), ("HGET", "{t}h2", "f2"), ("HLEN", "{t}h2"),
    ("SADD", "{t}set", "x", "y"), ("COPY", "{t}set", "{t}set2"), ("SCARD", "{t}set2"), ("SISMEMBER", "{t}set2", "y"),
    ("ZADD", "{t}z", "1", "a", "2", "b"), ("COPY", "{t}z", "{t}z2"), ("ZRANGE", "{t}z2", "0", "-1", "WITHSCORES"),
    ("COPY", "{t}z", "{t}s", "REPLACE"), ("TYPE", "{t}s"), ("ZSCORE", "{t}s", "b"), ("COPY", "{t}s2", "{t}z", "REPLACE"),
    ("TYPE", "{t}z"), ("GET", "{t}z"), ("COPY", "{t}l", "{t}h"), ("TYPE", "{t}h"),
    ("EXPIRE", "{t}l", "1000"), ("COPY", "{t}l", "{t}h", "REPLACE"), ("TTL", "{t}h"), ("LRANGE", "{t}h", "0", "-1"),
    ("DEL", "{t}l"), ("LRANGE", "{t}h", "0", "-1"), ("DBSIZE",),
])



@T.case
def copy_db_option():
    """COPY ... DB n: frontdoor has database 0 only. The embedded and
    MongoDB backends answer as a redis-server with one database; the Redis
    backends refuse the DB option before forwarding (it would name the
    backend server's databases; frontdoor's one is redis-db there)."""
    steps = [("SET", "{t}s", "v"), ("COPY", "{t}s", "{t}d", "DB", "0"), ("EXISTS", "{t}d"),
             ("COPY", "{t}s", "{t}d2", "DB", "1"), ("COPY", "{t}s", "{t}d2", "DB", "1", "FOO"),
             ("COPY", "{t}s", "{t}s", "DB", "1"), ("COPY", "{t}s", "{t}d2", "db", "-1", "REPLACE"),
             ("EXISTS", "{t}d2")]
    for resp3 in (False, True):
        d = diff_pair(resp3)
        for st in steps:
            if REDIS_BACKEND and st == ("EXISTS", "{t}d"):
                eq(d.fd.cmd(*st), b":0\r\n", "nothing copied through the %s backend" % BACKEND)
            elif REDIS_BACKEND and st[0] == "COPY":
                a = d.ref.cmd(*st)
                b = d.fd.cmd(*st)
                check(b.startswith(b"-ERR 'copy' is not supported") and b"DB option" in b,
                      "COPY to another database is refused through the %s backend" % BACKEND, a, b)
            else:
                d.cmd(*st)
        d.finish()


# ============================================================ SORT

scripted("sort_plain", [
    ("RPUSH", "l", "3", "1", "2", "10", "-5", "2.5", "1e2"), ("SORT", "l"), ("SORT", "l", "DESC"),
    ("SORT", "l", "ALPHA"), ("SORT", "l", "ALPHA", "DESC"), ("SORT", "l", "LIMIT", "1", "3"),
    ("SORT", "l", "LIMIT", "0", "0"), ("SORT", "l", "LIMIT", "-5", "2"), ("SORT", "l", "LIMIT", "5", "-1"),
    ("SORT", "l", "LIMIT", "100", "5"), ("SORT", "l", "LIMIT", "2", "100", "DESC"), ("SORT", "l", "asc", "limit", "1", "1"),
    ("SORT_RO", "l"), ("SORT_RO", "l", "DESC", "LIMIT", "0", "2"), ("SORT_RO", "l", "STORE", "x"),
    ("RPUSH", "w", "b", "a", "10", "c"), ("SORT", "w"), ("SORT", "w", "ALPHA"), ("SORT", "w", "LIMIT", "0", "1", "ALPHA"),
    ("RPUSH", "dup", "2", "1", "2", "1", "01", "1.0"), ("SORT", "dup"), ("SORT", "dup", "DESC"),
    ("RPUSH", "ws", " 1", "2 ", "", "0x10", "inf", "-inf"), ("SORT", "ws"), ("SORT", "ws", "ALPHA"),
    ("RPUSH", "nan", "nan"), ("SORT", "nan"),
    ("SORT", "nokey"), ("SORT", "nokey", "DESC", "LIMIT", "0", "5"), ("SORT_RO", "nokey"),
    ("SORT", "l", "LIMIT", "1"), ("SORT", "l", "LIMIT", "x", "1"), ("SORT", "l", "LIMIT", "1", "y"),
    ("SORT", "l", "FOO"), ("SORT", "l", "BY"), ("SORT", "l", "GET"), ("SORT", "l", "STORE"),
    ("SORT", "l", "LIMIT", "1", "1", "x"), ("SORT", "l", "LIMIT", "1.5", "1"),
    ("SET", "str", "x"), ("SORT", "str"), ("SORT", "str", "FOO"), ("HSET", "h", "a", "1"), ("SORT", "h"),
    ("SORT_RO", "h"),
    ("ZADD", "z", "3", "c", "1", "a", "2", "b", "2", "bb"), ("SORT", "z", "ALPHA"), ("SORT", "z", "ALPHA", "DESC"),
    ("SORT", "z"), ("ZADD", "zn", "1", "30", "2", "20", "3", "10"), ("SORT", "zn"), ("SORT", "zn", "LIMIT", "1", "1"),
    ("SADD", "set", "5", "3", "9", "1"), ("SORT", "set"), ("SORT", "set", "DESC"), ("SORT", "set", "LIMIT", "1", "2"),
    ("SADD", "aset", "b", "a", "c"), ("SORT", "aset", "ALPHA"), ("SORT", "aset"),
])

scripted("sort_store", [
    ("RPUSH", "{t}l", "3", "1", "2"), ("SORT", "{t}l", "STORE", "{t}out"), ("LRANGE", "{t}out", "0", "-1"),
    ("TYPE", "{t}out"), ("SORT", "{t}l", "DESC", "STORE", "{t}out"), ("LRANGE", "{t}out", "0", "-1"),
    ("SET", "{t}s", "x", "EX", "1000"), ("SORT", "{t}l", "STORE", "{t}s"), ("TTL", "{t}s"), ("TYPE", "{t}s"),
    ("SORT", "{t}nokey", "STORE", "{t}s"), ("EXISTS", "{t}s"), ("SORT", "{t}l", "LIMIT", "5", "5", "STORE", "{t}s"),
    ("EXISTS", "{t}s"), ("SORT", "{t}l", "STORE", "{t}l"), ("LRANGE", "{t}l", "0", "-1"),
    ("SADD", "{t}set", "c", "a", "b"), ("SORT", "{t}set", "ALPHA", "STORE", "{t}o2"), ("LRANGE", "{t}o2", "0", "-1"),
    ("SORT", "{t}set", "BY", "nosort", "STORE", "{t}o3"), ("LRANGE", "{t}o3", "0", "-1"),
    ("RPUSH", "{t}bad", "a"), ("SET", "{t}o4", "keep"), ("SORT", "{t}bad", "STORE", "{t}o4"), ("GET", "{t}o4"),
    ("SORT", "{t}l", "STORE", "{t}o5", "STORE", "{t}o6"), ("EXISTS", "{t}o5", "{t}o6"),
])

scripted("sort_nosort", [
    ("RPUSH", "l", "3", "1", "2", "5", "4"), ("SORT", "l", "BY", "nosort"), ("SORT", "l", "BY", "nosort", "DESC"),
    ("SORT", "l", "BY", "nosort", "LIMIT", "1", "2"), ("SORT", "l", "BY", "nosort", "DESC", "LIMIT", "1", "2"),
    ("SORT", "l", "BY", "nosort", "LIMIT", "10", "2"), ("SORT", "l", "BY", "nosort", "DESC", "LIMIT", "-1", "100"),
    ("ZADD", "z", "3", "c", "1", "a", "2", "b"), ("SORT", "z", "BY", "nosort"), ("SORT", "z", "BY", "nosort", "DESC"),
    ("SORT", "z", "BY", "nosort", "DESC", "LIMIT", "1", "1"), ("SORT", "z", "BY", "x->y"),
    ("SORT_RO", "l", "BY", "const", "DESC"),
])


def _sort_pattern_data(d):
    for args in [("RPUSH", "l", "1", "2", "3", "4", "x"), ("MSET", "w_1", "30", "w_2", "10", "w_3", "20", "w_x", "5"),
                 ("MSET", "o_1", "one", "o_2", "two", "o_3", "three"),
                 ("HSET", "h_1", "f", "c", "n", "3"), ("HSET", "h_2", "f", "a", "n", "1"),
                 ("HSET", "h_3", "f", "b", "n", "2"), ("HSET", "h_x", "f", "d"),
                 ("MSET", "a_1", "b", "a_2", "c", "a_3", "a", "a_4", "d", "a_x", "e"),
                 ("RPUSH", "w_4", "notastring"), ("SET", "bad_1", "x")]:
        d.cmd(*args)


scripted("sort_patterns", [
    _sort_pattern_data,
    ("SORT", "l", "BY", "w_*"), ("SORT", "l", "BY", "w_*", "DESC"), ("SORT", "l", "BY", "w_*", "GET", "o_*"),
    ("SORT", "l", "BY", "w_*", "GET", "#", "GET", "o_*", "GET", "h_*->f"), ("SORT", "l", "GET", "#"),
    ("SORT", "l", "BY", "h_*->n", "GET", "h_*->f"), ("SORT", "l", "BY", "a_*", "ALPHA"),
    ("SORT", "l", "BY", "a_*", "ALPHA", "DESC", "LIMIT", "1", "2"), ("SORT", "l", "BY", "h_*->f", "ALPHA"),
    ("SORT", "l", "BY", "w_*", "LIMIT", "1", "2", "GET", "o_*", "GET", "nostar"), ("SORT", "l", "BY", "bad_*"),
    ("SORT", "l", "BY", "nosort", "GET", "o_*", "GET", "#"), ("SORT", "l", "BY", "w_*->"), ("SORT", "l", "GET", "h_*->"),
    ("SORT", "l", "GET", "o_*", "STORE", "dst"), ("LRANGE", "dst", "0", "-1"),
    ("SORT", "l", "BY", "w_*", "GET", "#", "GET", "h_*->f", "STORE", "dst"), ("LRANGE", "dst", "0", "-1"),
    ("SORT", "l", "BY", "o_*"), ("SORT", "l", "BY", "o_*", "ALPHA"), ("SORT", "l", "BY", "nosort", "BY", "w_*"),
    ("SORT_RO", "l", "BY", "w_*", "GET", "o_*"), ("SORT", "l", "GET", "#", "GET", "#"), ("SORT", "l", "BY", "w_*->f"),
    ("SADD", "s", "3", "1", "2"), ("SORT", "s", "BY", "w_*", "GET", "o_*"), ("SORT", "s", "BY", "w_*", "DESC"),
    ("ZADD", "z", "1", "3", "2", "2", "3", "1"), ("SORT", "z", "BY", "w_*"), ("SORT", "z", "BY", "nosort", "GET", "o_*"),
])


@T.case
def cluster_sort_refusals():
    """Through a Redis Cluster a SORT with BY/GET patterns gets the cluster's
    refusal (what Redis answers in cluster mode); elsewhere it is served."""
    if BACKEND != "redis-cluster":
        from fdtest import skip
        skip("cluster only (sort_patterns covers the other backends)")
    ref, fd = shared_pair()
    with fd.conn() as c:
        c.cmd("FLUSHDB")
        c.cmd("RPUSH", "l", "1", "2")
        eq(c.cmd("SORT", "l", "BY", "w_*"), b"-ERR BY option of SORT denied in Cluster mode.\r\n", "SORT BY")
        eq(c.cmd("SORT", "l", "GET", "#"), b"-ERR GET option of SORT denied in Cluster mode.\r\n", "SORT GET")
        eq(c.cmd("SORT", "l", "BY", "nosort"), b"*2\r\n$1\r\n1\r\n$1\r\n2\r\n", "SORT BY nosort")
        c.cmd("DEL", "l")

# ============================================================ OBJECT / MEMORY

scripted("object_memory_replies", [
    ("SET", "i", "12345"), ("OBJECT", "ENCODING", "i"), ("SET", "e", "short string"), ("OBJECT", "encoding", "e"),
    ("SET", "r", "x" * 45), ("OBJECT", "ENCODING", "r"), ("SET", "n", "-9223372036854775808"), ("OBJECT", "ENCODING", "n"),
    ("SET", "n2", "0123"), ("OBJECT", "ENCODING", "n2"), ("OBJECT", "ENCODING", "nokey"), ("OBJECT", "REFCOUNT", "nokey"),
    ("OBJECT", "FREQ", "nokey"), ("OBJECT", "IDLETIME", "nokey"), ("OBJECT", "REFCOUNT", "r"), ("OBJECT", "FREQ", "r"),
    ("OBJECT", "HELP"), ("OBJECT", "help", "x"), ("OBJECT", "ENCODING"), ("OBJECT", "ENCODING", "a", "b"),
    ("OBJECT", "FOO"), ("OBJECT", "FOO", "bar"), ("OBJECT", "REFCOUNT"),
    ("MEMORY", "USAGE", "nokey"), ("MEMORY", "USAGE"), ("MEMORY", "USAGE", "r", "SAMPLES"),
    ("MEMORY", "USAGE", "r", "SAMPLES", "x"), ("MEMORY", "USAGE", "r", "SAMPLES", "-1"), ("MEMORY", "USAGE", "r", "FOO"),
    ("MEMORY", "HELP"), ("MEMORY", "HELP", "x"), ("MEMORY", "FOO"), ("MEMORY", "USAGE", "nokey", "SAMPLES", "0"),
])

# what docs/encoding.md says frontdoor's own backends report
OUR_ENCODINGS = {"list": b"quicklist", "hash": b"hashtable", "set": b"hashtable", "zset": b"skiplist"}


@T.case
def object_memory_ours():
    """OBJECT/MEMORY answers about frontdoor's own store (not Redis's)."""
    ref, fd = shared_pair()
    with fd.conn() as c:
        c.cmd("FLUSHDB")
        c.cmd("RPUSH", "list", "a", "b")
        c.cmd("HSET", "hash", "f", "v")
        c.cmd("SADD", "set", "1", "2")
        c.cmd("ZADD", "zset", "1", "a")
        c.cmd("SET", "str", "x" * 1000)
        c.cmd("RPUSH", "biglist", *["element-%d" % i for i in range(2000)])
        for t, enc in OUR_ENCODINGS.items():
            r = parse(c.cmd("OBJECT", "ENCODING", t))
            if not REDIS_BACKEND:
                eq(r, enc, "OBJECT ENCODING of a %s" % t)
            else:
                check(isinstance(r, bytes) and r, "OBJECT ENCODING through Redis", r)
            r = parse(c.cmd("OBJECT", "REFCOUNT", t))
            check(isinstance(r, int) and r >= 1, "OBJECT REFCOUNT", r)
        r = parse(c.cmd("OBJECT", "IDLETIME", "str"))
        if not REDIS_BACKEND:
            check(isinstance(r, Err) and "does not track" in r, "OBJECT IDLETIME is refused honestly", r)
        small = parse(c.cmd("MEMORY", "USAGE", "str"))
        check(isinstance(small, int) and small >= 1000, "MEMORY USAGE counts the value", small)
        big = parse(c.cmd("MEMORY", "USAGE", "biglist"))
        allb = parse(c.cmd("MEMORY", "USAGE", "biglist", "SAMPLES", "0"))
        check(isinstance(big, int) and big >= 2000 * 10, "MEMORY USAGE extrapolates the elements", big)
        check(isinstance(allb, int) and allb >= 2000 * 10, "MEMORY USAGE SAMPLES 0", allb)
        r = parse(c.cmd("MEMORY", "STATS"))
        if not REDIS_BACKEND:
            check(isinstance(r, Err), "MEMORY STATS is refused with a reason", r)
        c.cmd("FLUSHDB")

# ============================================================ expired keys


def _nap(d):
    import time
    time.sleep(0.05)


scripted("expired_keys", [
    ("PSETEX", "{t}a", "10", "abc"), ("PSETEX", "{t}b", "10", "abc"), ("PSETEX", "{t}c", "10", "abc"),
    ("PSETEX", "{t}d", "10", "abc"), ("PSETEX", "{t}e", "10", "abc"), _nap,
    ("SETBIT", "{t}a", "3", "1"), ("GET", "{t}a"), ("TTL", "{t}a"), ("GETBIT", "{t}b", "1"), ("BITCOUNT", "{t}b"),
    ("PFADD", "{t}c", "x"), ("TTL", "{t}c"), ("PFCOUNT", "{t}c"), ("COPY", "{t}d", "{t}x"), ("EXISTS", "{t}x"),
    ("SET", "{t}y", "v"), ("COPY", "{t}y", "{t}e"), ("GET", "{t}e"), ("TTL", "{t}e"),
    ("BITFIELD", "{t}b", "SET", "u8", "0", "255"), ("TTL", "{t}b"), ("GET", "{t}b"),
    ("RPUSH", "{t}l", "2", "1"), ("PEXPIRE", "{t}l", "10"), _nap, ("SORT", "{t}l"), ("EXISTS", "{t}l", "{t}d"),
])

# ============================================================ WRONGTYPE everywhere

scripted("wrongtype_all", [
    ("RPUSH", "{t}l", "a"), ("SETBIT", "{t}l", "1", "1"), ("GETBIT", "{t}l", "1"), ("BITCOUNT", "{t}l"),
    ("BITPOS", "{t}l", "1"), ("BITOP", "OR", "{t}d", "{t}l"), ("BITFIELD", "{t}l", "GET", "u8", "0"),
    ("BITFIELD_RO", "{t}l", "GET", "u8", "0"), ("PFADD", "{t}l", "a"), ("PFCOUNT", "{t}l"),
    ("PFCOUNT", "{t}l", "{t}x"), ("PFMERGE", "{t}l", "{t}x"), ("PFMERGE", "{t}x", "{t}l"), ("LCS", "{t}l", "{t}x"),
    ("SET", "{t}s", "v"), ("SORT", "{t}s"), ("SORT_RO", "{t}s"), ("HSET", "{t}h", "f", "v"), ("SORT", "{t}h", "ALPHA"),
    ("COPY", "{t}l", "{t}s"), ("COPY", "{t}l", "{t}s", "REPLACE"), ("LRANGE", "{t}s", "0", "-1"),
])

if __name__ == "__main__":
    T.main()
