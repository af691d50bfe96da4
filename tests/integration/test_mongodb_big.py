#!/usr/bin/python3
"""test_mongodb_big — big collections on the MongoDB backend (storage/mongodb/
mg_big.c, docs/mongodb.md "Big collections"): past mongo-big-threshold
members a hash, list, set or sorted set is one document per member in the
collection db0_big. Against the test server tests/mongo/server.py (an
EMULATOR: its figures are never MongoDB's).

  * conversion in place: keys of every type grow across a small threshold
    under one pipeline, with reads between the writes, and every reply is
    redis-server's byte for byte (RESP2 and RESP3); the documents show the
    layout switched exactly when the count passed the threshold;
  * the hot paths on the big layout (point reads and writes, rank and score
    ranges, list ends, ZRANK) against redis-server, then shrinking, DEL,
    RENAME, COPY, EXPIRE, FLUSHDB leave no member document behind that
    should not be there;
  * emulator-only: a hash and a list of 24 MB (past MongoDB's 16 MB document
    limit, which the small layout hits) are stored and read back whole.

The whole shared differential matrix also runs on the big layout: the
"mongodb-big" variant of tests/CMakeLists.txt (FD_MONGO_BIG_THRESHOLD=2).
"""

import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import (Tests, Diff, diff_pair, check, eq, start_redis,  # noqa: E402
                    need_mongodb, shared_mongo, start_mongo_frontdoor, norm_sorted, norm_pairs)

T = Tests("test_mongodb_big.py", case_timeout=120)


def emulator():
    need_mongodb(("mockupdb", "mongomock", "pymongo"))
    return shared_mongo()


def fd(threshold, **kw):
    db = "big%d" % random.randrange(1 << 30)
    return start_mongo_frontdoor(emulator().uri, mongo_database=db, backend_timeout=60000,
                                 mongo_big_threshold=threshold, **kw), db


def mongo(db):
    """The emulator's documents, read directly with pymongo (/usr/bin/python3)."""
    import pymongo
    return pymongo.MongoClient(emulator().uri)[db]


def key_doc(db, key):
    return mongo(db)["db0"].find_one({"_id": key.encode()})


def members(db):
    return mongo(db)["db0_big"].count_documents({})


def _norm_for(c):
    name = c[0].upper()
    if name in ("SMEMBERS", "SUNION", "SINTER", "SDIFF", "HKEYS", "HVALS"):
        return (norm_sorted, None)
    if name == "HGETALL":
        return (norm_pairs, None)
    return None


def grow_steps(n):
    """One pipeline: every type grows one member at a time up to n, reading
    the whole collection and a point of it after each write."""
    cmds = []
    for i in range(n):
        m = "m%03d" % i
        cmds += [("RPUSH", "l", m), ("LPUSH", "l", "x" + m), ("LRANGE", "l", "0", "-1"), ("LINDEX", "l", "1"),
                 ("LLEN", "l"), ("LRANGE", "l", "-3", "-1"),
                 ("HSET", "h", m, str(i)), ("HGET", "h", m), ("HLEN", "h"), ("HGETALL", "h"),
                 ("SADD", "s", m), ("SISMEMBER", "s", m), ("SCARD", "s"), ("SMEMBERS", "s"),
                 ("ZADD", "z", str(i % 7), m), ("ZRANGE", "z", "0", "-1", "WITHSCORES"), ("ZRANK", "z", m),
                 ("ZCARD", "z"), ("ZSCORE", "z", m), ("ZRANGEBYSCORE", "z", "2", "(5", "LIMIT", "1", "3")]
    return cmds


@T.case
def conversion_in_place_under_a_pipeline():
    """Threshold 8: each key crosses it in the middle of one pipeline; every
    reply is redis-server's, and the key documents switch layout at 9."""
    ref = start_redis(databases=1)
    s, db = fd(8)
    for proto in (2, 3):
        d = diff_pair(proto == 3, servers=(ref, s), timeout=60)
        cmds = grow_steps(6)
        d.pipeline(cmds, norms=[_norm_for(c) for c in cmds])
        d.finish()
        for k in ("h", "s", "z"):
            check("big" not in key_doc(db, k), "%s: 6 members stay one document" % k, key_doc(db, k))
        check("big" in key_doc(db, "l"), "l: 12 elements are past 8", key_doc(db, "l"))
        cmds = grow_steps(14)[6 * 20:]
        d.pipeline(cmds, norms=[_norm_for(c) for c in cmds])
        d.finish()
        for k in ("l", "h", "s", "z"):
            doc = key_doc(db, k)
            check("big" in doc and "value" not in doc, "%s: converted in place" % k, doc)
        eq(key_doc(db, "z")["bn"], 14, "zset member count")
        eq(members(db), 28 + 14 + 14 + 2 * 14, "member documents (list, hash, set, zset twice)")
        print("      RESP%d: %d replies identical to redis-server's" % (proto, d.count))


BIG_STEPS = [
    ("RPUSH", "l", "a", "b", "c", "d", "e", "f"), ("LPUSH", "l", "z", "y"), ("LPOP", "l"), ("RPOP", "l"),
    ("LINDEX", "l", "-2"), ("LSET", "l", "2", "X"), ("LINSERT", "l", "BEFORE", "X", "W"), ("LREM", "l", "1", "c"),
    ("LRANGE", "l", "0", "-1"), ("LTRIM", "l", "1", "-2"), ("LRANGE", "l", "0", "-1"), ("LPOS", "l", "X"),
    ("RPOPLPUSH", "l", "l2"), ("LMOVE", "l", "l", "LEFT", "RIGHT"), ("LRANGE", "l", "0", "-1"),
    ("LPOP", "l", "2"), ("RPOP", "l", "9"), ("EXISTS", "l"),
    ("HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5"), ("HSET", "h", "c", "33", "f", "6"),
    ("HINCRBY", "h", "a", "10"), ("HINCRBYFLOAT", "h", "b", "0.5"), ("HSETNX", "h", "a", "x"),
    ("HMGET", "h", "a", "nope", "f"), ("HEXISTS", "h", "e"), ("HSTRLEN", "h", "c"), ("HDEL", "h", "d", "e", "zz"),
    ("HGETALL", "h"), ("HLEN", "h"), ("HDEL", "h", "a", "b", "c", "f"), ("EXISTS", "h"),
    ("SADD", "s", "1", "2", "3", "4", "5", "6"), ("SADD", "s", "3", "7"), ("SREM", "s", "1", "9"),
    ("SMISMEMBER", "s", "2", "9"), ("SCARD", "s"), ("SMEMBERS", "s"), ("SINTER", "s", "t"),
    ("SADD", "t", "2", "4", "8", "16"), ("SINTER", "s", "t"), ("SUNIONSTORE", "u", "s", "t"), ("SCARD", "u"),
    ("SMOVE", "s", "t", "3"), ("SDIFF", "t", "s"),
    ("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e", "-1", "f"), ("ZADD", "z", "GT", "CH", "0", "a", "9", "b"),
    ("ZINCRBY", "z", "2.5", "c"), ("ZRANGE", "z", "0", "-1", "WITHSCORES"), ("ZREVRANGE", "z", "1", "3", "WITHSCORES"),
    ("ZRANGE", "z", "(1", "+inf", "BYSCORE", "LIMIT", "1", "2"), ("ZRANGEBYSCORE", "z", "-inf", "(5"),
    ("ZREVRANGEBYSCORE", "z", "9", "1", "WITHSCORES", "LIMIT", "0", "3"), ("ZRANK", "z", "c"), ("ZREVRANK", "z", "c"),
    ("ZRANK", "z", "nope"), ("ZSCORE", "z", "b"), ("ZMSCORE", "z", "a", "nope"), ("ZCOUNT", "z", "2", "5"),
    ("ZREM", "z", "f", "nope"), ("ZPOPMIN", "z"), ("ZPOPMAX", "z", "2"), ("ZRANGE", "z", "0", "-1", "WITHSCORES"),
    ("ZUNIONSTORE", "zu", "2", "z", "z"), ("ZRANGE", "zu", "0", "-1", "WITHSCORES"),
    ("EXPIRE", "zu", "100"), ("TTL", "zu"), ("TYPE", "zu"),
    ("RENAME", "zu", "zv"), ("ZRANGE", "zv", "0", "-1"), ("TTL", "zv"), ("COPY", "zv", "zw"),
    ("ZADD", "zw", "100", "new"), ("ZCARD", "zv"), ("ZCARD", "zw"), ("DUMP", "zw"), ("SORT", "s"),
    ("DEL", "zv", "zw", "u", "t", "s", "z", "l2"),
]


@T.case
def big_layout_commands_and_cleanup():
    """Threshold 2: every key above is big; the replies are redis-server's,
    and once every key is gone no member document is left."""
    ref = start_redis(databases=1)
    s, db = fd(2)
    d = Diff(ref.conn(), s.conn(timeout=60))
    d.cmd("FLUSHDB")
    for st in BIG_STEPS:
        n = _norm_for(st)
        if st[0] == "TTL":
            d.cmd(*st, same=lambda a, b: a == b or abs(int(a[1:-2]) - int(b[1:-2])) <= 2)
        else:
            d.cmd(*st, norm=n[0] if n else None)
    d.finish()
    eq(s.conn().cmd("DBSIZE"), b":0\r\n", "no key left")
    eq(members(db), 0, "no member document left")
    # FLUSHDB empties db0_big too
    c = s.conn()
    c.cmd("RPUSH", "a", "1", "2", "3", "4")
    c.cmd("ZADD", "b", "1", "x", "2", "y", "3", "z")
    check(members(db) > 0, "members written")
    eq(c.cmd("FLUSHDB"), b"+OK\r\n")
    eq(members(db), 0, "FLUSHDB left member documents")
    # an overwrite of a big key (SET, RESTORE-less paths) drops its members
    c.cmd("SADD", "k", "1", "2", "3", "4")
    c.cmd("SET", "k", "v", "KEEPTTL")
    eq(members(db), 0, "SET over a big set left its members")
    c.cmd("HSET", "k2", "a", "1", "b", "2", "c", "3")
    c.cmd("EXPIRE", "k2", "-1")
    eq(members(db), 0, "an EXPIRE in the past left members")


@T.case
def beyond_16mb_emulator_only():
    """EMULATOR-ONLY (its limits, not MongoDB's; the emulator enforces the
    16 MB document limit as MongoDB does): a hash and a list of 24 values of
    1 MB are past one document's limit; the small layout refuses them, the big
    layout stores and returns them whole."""
    v = [bytes([65 + i]) * (1 << 20) for i in range(24)]
    s, db = fd(4)
    c = s.conn(timeout=120)
    for i in range(0, 24, 4):
        r = c.cmd("HSET", "h", *sum(([b"f%d" % (i + j), v[i + j]] for j in range(4)), []))
        eq(r, b":4\r\n", "HSET of 4 MB")
        eq(c.cmd("RPUSH", "l", *v[i:i + 4]), b":%d\r\n" % (i + 4), "RPUSH of 4 MB")
    eq(c.cmd("HLEN", "h"), b":24\r\n")
    eq(c.cmd("LLEN", "l"), b":24\r\n")
    eq(c.cmd("HGET", "h", "f17"), b"$%d\r\n" % len(v[17]) + v[17] + b"\r\n", "HGET of one 1 MB value")
    eq(c.cmd("LINDEX", "l", "-1"), b"$%d\r\n" % len(v[23]) + v[23] + b"\r\n", "LINDEX -1")
    whole = c.cmd("LRANGE", "l", "0", "-1")
    check(len(whole) > 24 << 20 and whole.startswith(b"*24\r\n$1048576\r\nAAAA"), "LRANGE of 24 MB", len(whole))
    eq(c.cmd("HSTRLEN", "h", "f23"), b":1048576\r\n")
    eq(c.cmd("MEMORY", "USAGE", "h")[:1], b":", "MEMORY USAGE of a 24 MB hash")
    eq(c.cmd("DEL", "h", "l"), b":2\r\n")
    eq(members(db), 0, "DEL dropped the members")
    # the small layout cannot hold it: one document past 16 MB is refused
    # (HSET rewrites the document, which libmongoc and the emulator check;
    # the emulator does not check a $push in place, MongoDB would)
    s2, db2 = fd(1000)
    c2 = s2.conn(timeout=120)
    for i in range(16):
        eq(c2.cmd("HSET", "h", b"f%d" % i, v[i]), b":1\r\n")
    r = c2.cmd("HSET", "h", "f16", v[16])
    check(r.startswith(b"-ERR mongodb"), "the small layout past 16 MB is refused", r[:200])
    eq(c2.cmd("HLEN", "h"), b":16\r\n", "and changes nothing")
    print("      24 MB hash and list stored and read back on the big layout (emulator)")


if __name__ == "__main__":
    T.main()
