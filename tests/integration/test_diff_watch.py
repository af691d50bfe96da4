#!/usr/bin/python3
"""Differential test of WATCH and expiry (proxy/multi.c): the same steps go
to a real redis-server 7.0 and to frontdoor, every reply compared byte for
byte, each case once in RESP2 and once in RESP3, on every backend.

Redis 7.0's rules (multi.c, db.c): a watched key that was live when WATCH ran
and has expired by EXEC makes EXEC answer a null array; a key absent or
already expired at WATCH that is still absent at EXEC does not; FLUSHDB
touches only the watched keys that exist. A step ("@B", cmd...) runs on a
second client of each server; ("SLEEP", s) waits on both. Every key shares
one hash tag, so the cases run unchanged through a Redis Cluster. Sleeps are
short (about 0.1 s a case and protocol).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import Tests, diff_case, diff_pair, diff_pipelined, shared_pair

T = Tests(case_timeout=60)

PAST = 0.12     # seconds: past a 50 ms expiry on both servers


def case(name, steps):
    diff_case(T, name, steps, first=())


pipelined = diff_pipelined


def expect_exec_null(last_reply_of):
    """A check that the case is what it says (not only equal on both sides)."""
    def step(two):
        a, b = two.a.cmd("EXEC")
        if a not in (b"*-1\r\n", b"_\r\n"):
            raise AssertionError("%s: redis-server's EXEC should abort: %r" % (last_reply_of, a))
    return step


# a key live at WATCH, expired by EXEC: EXEC aborts
case("watch_key_expires_before_exec", [
    ("SET", "{t}k", "v"), ("PEXPIRE", "{t}k", "50"), ("WATCH", "{t}k"), ("SLEEP", PAST),
    ("MULTI",), ("SET", "{t}out", "ran"), expect_exec_null("expired watched key"),
    ("GET", "{t}out"), ("EXISTS", "{t}k"),
    # the aborted EXEC dropped the watches: the next transaction runs
    ("MULTI",), ("SET", "{t}out", "second"), ("EXEC",), ("GET", "{t}out"),
])

# SET ... PX and one expiring key among several watched ones; the expired key
# read meanwhile (Redis deletes it then) changes nothing
case("watch_several_one_expires", [
    ("SET", "{t}a", "1"), ("SET", "{t}b", "2", "PX", "50"), ("WATCH", "{t}a", "{t}b", "{t}none"),
    ("SLEEP", PAST), ("GET", "{t}b"), ("MULTI",), ("INCR", "{t}a"), ("EXEC",), ("GET", "{t}a"),
    ("SET", "{t}c", "3", "PX", "50"), ("WATCH", "{t}c"), ("SLEEP", PAST), ("UNWATCH",),
    ("MULTI",), ("INCR", "{t}a"), ("EXEC",),
])

# absent or already expired at WATCH, still absent at EXEC: EXEC runs
case("watch_absent_or_expired_key_runs", [
    ("WATCH", "{t}none"), ("SLEEP", 0.02), ("MULTI",), ("SET", "{t}out", "1"), ("EXEC",),
    ("SET", "{t}k", "v", "PX", "10"), ("SLEEP", 0.05), ("WATCH", "{t}k"), ("SLEEP", 0.02),
    ("MULTI",), ("SET", "{t}out", "2"), ("EXEC",), ("GET", "{t}out"), ("EXISTS", "{t}k"),
    # then written by another client: that is a change
    ("SET", "{t}k", "v", "PX", "10"), ("SLEEP", 0.05), ("WATCH", "{t}k"), ("@B", "SET", "{t}k", "new"),
    ("MULTI",), ("GET", "{t}k"), ("EXEC",),
])

# an expiry far away: EXEC runs; PERSIST (a write) by another client aborts
case("watch_far_expiry_and_persist", [
    ("SET", "{t}k", "v", "EX", "100"), ("WATCH", "{t}k"), ("MULTI",), ("GET", "{t}k"), ("EXEC",),
    ("WATCH", "{t}k"), ("@B", "PERSIST", "{t}k"), ("MULTI",), ("GET", "{t}k"), ("EXEC",), ("TTL", "{t}k"),
    # 400 ms: PERSIST must come before the deadline on both servers, even on loaded cores
    ("PEXPIRE", "{t}k", "400"), ("WATCH", "{t}k"), ("@B", "PERSIST", "{t}k"), ("SLEEP", 0.45),
    ("MULTI",), ("GET", "{t}k"), ("EXEC",), ("GET", "{t}k"),
    # a new expiry set by another client after WATCH: a write too
    ("WATCH", "{t}k"), ("@B", "PEXPIRE", "{t}k", "100000"), ("MULTI",), ("GET", "{t}k"), ("EXEC",),
])

# FLUSHDB/FLUSHALL touch only the watched keys that exist (Redis 7.0's
# touchAllWatchedKeysInDb): an absent or already expired key is not changed
case("watch_flush_touches_existing_keys_only", [
    ("WATCH", "{t}none"), ("@B", "FLUSHDB"), ("MULTI",), ("SET", "{t}out", "1"), ("EXEC",),
    ("SET", "{t}k", "v", "PX", "10"), ("SLEEP", 0.05), ("WATCH", "{t}k"), ("@B", "FLUSHALL"),
    ("MULTI",), ("SET", "{t}out", "2"), ("EXEC",), ("GET", "{t}out"),
    ("WATCH", "{t}out", "{t}none"), ("@B", "FLUSHDB"), ("MULTI",), ("SET", "{t}out", "3"), ("EXEC",),
    ("EXISTS", "{t}out"),
    # SWAPDB 0 0 (the only swap frontdoor has) changes nothing
    ("SET", "{t}s", "1"), ("WATCH", "{t}s"), ("SWAPDB", "0", "0"), ("MULTI",), ("GET", "{t}s"), ("EXEC",),
])

# pipelined: WATCH's reply waits for the backend's answers, the rest stays in order
case("watch_pipelined_in_order", [
    ("SET", "{t}k", "v", "EX", "100"), ("SET", "{t}e", "v", "PX", "60"),
    pipelined([("WATCH", "{t}k", "{t}x", "{t}e"), ("GET", "{t}k"), ("WATCH", "{t}y"), ("MULTI",),
               ("INCR", "{t}n"), ("PTTL", "{t}none"), ("EXEC",), ("GET", "{t}n")]),
    pipelined([("WATCH", "{t}e"), ("MULTI",), ("INCR", "{t}n"), ("DISCARD",), ("UNWATCH",),
               ("WATCH", "{t}e", "{t}k")]),
    ("SLEEP", PAST),
    pipelined([("MULTI",), ("INCR", "{t}n"), ("EXEC",), ("GET", "{t}n"), ("WATCH", "{t}k"),
               ("MULTI",), ("INCR", "{t}n"), ("EXEC",), ("GET", "{t}n")]),
])

# many keys in one WATCH, and WATCH again after a change (Redis 7.0: nothing
# more is watched once dirty; EXEC aborts either way)
case("watch_many_keys_and_dirty", [
    ("MSET", "{t}1", "a", "{t}2", "b", "{t}3", "c"), ("PEXPIRE", "{t}2", "100000"),
    ("WATCH",) + tuple("{t}%d" % i for i in range(40)), ("MULTI",), ("GET", "{t}2"), ("EXEC",),
    ("WATCH", "{t}1"), ("@B", "SET", "{t}1", "z"), ("WATCH", "{t}2", "{t}3"), ("MULTI",), ("EXEC",),
    ("MULTI",), ("GET", "{t}1"), ("EXEC",),
])


# ---------------------------------------------------------------- no-op writes
# Redis 7.0 touches a watched key only when a command modified it
# (signalModifiedKey): a write that changed nothing, or failed with an error,
# leaves another client's EXEC running. frontdoor decides from the reply where
# it has the reply when the write returns (commands.def's TC flag: :0, null or
# empty means no change; errors raised before any change): the embedded
# backends, and a script's redis.call on every backend frontdoor's engine
# runs; elsewhere it stays conservative (docs/transactions.md), hence the
# skips in tests/CMakeLists.txt.

KEYS = ("{t}k", "{t}d", "{t}s", "{t}o", "{t}x")
S = [("SADD", "{t}k", "a")]
H = [("HSET", "{t}k", "f", "v")]
Z = [("ZADD", "{t}k", "1", "a")]
L = [("RPUSH", "{t}k", "a", "b")]
ST = [("SET", "{t}k", "v")]
TTL = [("SET", "{t}k", "v", "EX", "100")]
X = [("XADD", "{t}k", "1-1", "f", "v")]
XG = X + [("XGROUP", "CREATE", "{t}k", "g", "0")]

# (what, set-up, the other client's write): {t}k is the watched key
NOOPS = [
    ("set_nx_existing", ST, ("SET", "{t}k", "w", "NX")),
    ("set_xx_missing", [], ("SET", "{t}k", "w", "XX")),
    ("set_xx_get_missing", [], ("SET", "{t}k", "w", "XX", "GET")),
    ("setnx_existing", ST, ("SETNX", "{t}k", "w")),
    ("msetnx_one_exists", [("SET", "{t}o", "v")], ("MSETNX", "{t}k", "1", "{t}o", "2")),
    ("getdel_missing", [], ("GETDEL", "{t}k")),
    ("getex_missing", [], ("GETEX", "{t}k", "PERSIST")),
    ("setrange_missing_empty", [], ("SETRANGE", "{t}k", "3", "")),
    ("pfadd_no_change", [("PFADD", "{t}k", "a")], ("PFADD", "{t}k", "a")),
    ("del_absent", [], ("DEL", "{t}k")),
    ("unlink_absent", [], ("UNLINK", "{t}k", "{t}o")),
    ("expire_absent", [], ("EXPIRE", "{t}k", "100")),
    ("pexpire_nx_with_ttl", TTL, ("PEXPIRE", "{t}k", "5000", "NX")),
    ("expireat_xx_without_ttl", ST, ("EXPIREAT", "{t}k", "4000000000", "XX")),
    ("expire_gt_smaller", TTL, ("EXPIRE", "{t}k", "50", "GT")),
    ("persist_without_ttl", ST, ("PERSIST", "{t}k")),
    ("persist_absent", [], ("PERSIST", "{t}k")),
    ("renamenx_destination_exists", [("SET", "{t}s", "1"), ("SET", "{t}k", "2")], ("RENAMENX", "{t}s", "{t}k")),
    ("copy_destination_exists", [("SET", "{t}s", "1"), ("SET", "{t}k", "2")], ("COPY", "{t}s", "{t}k")),
    ("sadd_existing", S, ("SADD", "{t}k", "a")),
    ("srem_absent", S, ("SREM", "{t}k", "x", "y")),
    ("spop_missing", [], ("SPOP", "{t}k")),
    ("spop_count_missing", [], ("SPOP", "{t}k", "3")),
    ("smove_absent_member", S, ("SMOVE", "{t}k", "{t}d", "x")),
    ("hdel_absent", H, ("HDEL", "{t}k", "x")),
    ("hsetnx_existing", H, ("HSETNX", "{t}k", "f", "w")),
    ("zrem_absent", Z, ("ZREM", "{t}k", "x")),
    ("zpopmin_missing", [], ("ZPOPMIN", "{t}k")),
    ("zpopmax_count_0", Z, ("ZPOPMAX", "{t}k", "0")),
    ("zremrangebyrank_none", Z, ("ZREMRANGEBYRANK", "{t}k", "5", "10")),
    ("zremrangebyscore_none", Z, ("ZREMRANGEBYSCORE", "{t}k", "5", "10")),
    ("zremrangebylex_none", Z, ("ZREMRANGEBYLEX", "{t}k", "[x", "[z")),
    ("zmpop_missing", [], ("ZMPOP", "1", "{t}k", "MIN")),
    ("lpop_missing", [], ("LPOP", "{t}k")),
    ("rpop_count_missing", [], ("RPOP", "{t}k", "2")),
    ("lpop_count_0", L, ("LPOP", "{t}k", "0")),
    ("lpushx_missing", [], ("LPUSHX", "{t}k", "a")),
    ("rpushx_missing", [], ("RPUSHX", "{t}k", "a")),
    ("lrem_none", L, ("LREM", "{t}k", "0", "x")),
    ("linsert_missing", [], ("LINSERT", "{t}k", "BEFORE", "a", "x")),
    ("linsert_no_pivot", L, ("LINSERT", "{t}k", "AFTER", "-2", "v1")),      # fuzzer run 6, seed 817393954
    ("copy_source_watched", ST, ("COPY", "{t}k", "{t}d", "REPLACE")),      # fuzzer run 6: only the destination changes
    ("rpoplpush_empty_source", [], ("RPOPLPUSH", "{t}s", "{t}k")),
    ("lmove_empty", [], ("LMOVE", "{t}k", "{t}d", "LEFT", "RIGHT")),
    ("lmpop_missing", [], ("LMPOP", "1", "{t}k", "LEFT")),
    ("xdel_none", X, ("XDEL", "{t}k", "9-9")),
    ("xtrim_none", X, ("XTRIM", "{t}k", "MAXLEN", "10")),
    ("xadd_nomkstream_missing", [], ("XADD", "{t}k", "NOMKSTREAM", "*", "f", "v")),
    # a blocking pop that finds nothing (it times out, or runs in MULTI or a
    # script, where it does not block): nothing popped, nothing signalled
    ("blpop_times_out", [], ("BLPOP", "{t}k", "0.01")),
    ("brpop_times_out_two_keys", [], ("BRPOP", "{t}o", "{t}k", "0.01")),
    ("bzpopmin_times_out", [], ("BZPOPMIN", "{t}k", "0.01")),
    ("blmove_times_out", [], ("BLMOVE", "{t}k", "{t}d", "LEFT", "RIGHT", "0.01")),
    ("blmpop_times_out", [], ("BLMPOP", "0.01", "1", "{t}k", "LEFT")),
    ("swapdb_0_0", ST, ("SWAPDB", "0", "0")),
    # no change by their arguments alone (t_set.c, bitops.c)
    ("smove_same_set", S, ("SMOVE", "{t}k", "{t}k", "a")),
    ("smove_same_set_absent_member", S, ("SMOVE", "{t}k", "{t}k", "x")),
    ("bitfield_get_only", [("BITFIELD", "{t}k", "SET", "u8", "0", "1")],
     ("BITFIELD", "{t}k", "GET", "u8", "0", "OVERFLOW", "SAT", "GET", "i4", "3")),
    ("bitfield_get_missing", [], ("BITFIELD", "{t}k", "GET", "u8", "0")),
    # SORT reads its key and writes only the STORE key; an empty result over
    # a missing destination changes nothing (Redis's sortGetKeys, sortCommandGeneric)
    ("sort_watched_key", L, ("SORT", "{t}k", "ALPHA")),
    ("sort_watched_key_store_elsewhere", L, ("SORT", "{t}k", "ALPHA", "STORE", "{t}o")),
    ("sort_store_empty_missing_dest", [], ("SORT", "{t}s", "STORE", "{t}k")),
    ("sort_store_empty_by_missing_dest", [("RPUSH", "{t}s", "1")], ("SORT", "{t}s", "LIMIT", "5", "1", "STORE", "{t}k")),
    ("xack_none", XG, ("XACK", "{t}k", "g", "1-1")),
    ("xgroup_destroy_missing", X, ("XGROUP", "DESTROY", "{t}k", "g")),
    ("xclaim_none", XG, ("XCLAIM", "{t}k", "g", "c", "0", "1-1")),
    ("xreadgroup_nothing_new", XG + [("XREADGROUP", "GROUP", "g", "c", "STREAMS", "{t}k", ">")],
     ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "{t}k", ">")),
]

# a STORE command reads its sources and writes its destination only
# (Redis signals the destination): a watched source is not touched, on every
# backend (the rule is the row's key flags KR|K1W, applied at dispatch too;
# fuzzer run 7, seed 2121023245: SINTERSTORE)
SOURCES = [
    ("sinterstore_source", S, ("SINTERSTORE", "{t}d", "{t}k")),
    ("sunionstore_source", S, ("SUNIONSTORE", "{t}d", "{t}k", "{t}o")),
    ("sdiffstore_missing_source", [], ("SDIFFSTORE", "{t}d", "{t}k")),
    ("zunionstore_source", Z, ("ZUNIONSTORE", "{t}d", "1", "{t}k")),
    ("zrangestore_source", Z, ("ZRANGESTORE", "{t}d", "{t}k", "0", "-1")),
    ("bitop_source", ST, ("BITOP", "OR", "{t}d", "{t}k")),
    ("pfmerge_source", [("PFADD", "{t}k", "a")], ("PFMERGE", "{t}d", "{t}k")),
    ("geosearchstore_source", [("GEOADD", "{t}k", "13.36", "38.11", "p")],
     ("GEOSEARCHSTORE", "{t}d", "{t}k", "FROMLONLAT", "13.36", "38.11", "BYRADIUS", "10", "km")),
]

# no change by their effect, which the reply does not show (Redis 7.0's
# setbitCommand / bitfieldGeneric `changes` / smoveCommand): the backend
# reports the keys it left unchanged (fd_request.untouched). The embedded
# backends do; mongodb (worker threads) and the Redis backends touch on the
# safe side (tests/CMakeLists.txt skips these there).
NOOPS_EFFECT = [
    ("setbit_same_bit_1", [("SET", "{t}k", "a")], ("SETBIT", "{t}k", "1", "1")),
    ("setbit_same_bit_0", [("SET", "{t}k", "a")], ("SETBIT", "{t}k", "0", "0")),
    ("bitfield_set_same_value", [("SET", "{t}k", "a")], ("BITFIELD", "{t}k", "SET", "u8", "0", "97")),
    ("bitfield_incrby_zero", [("SET", "{t}k", "a")], ("BITFIELD", "{t}k", "INCRBY", "i5", "3", "0")),
    ("bitfield_overflow_fail", [("SET", "{t}k", "a")],
     ("BITFIELD", "{t}k", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "200", "GET", "u4", "0")),
    ("bitfield_sat_at_max", [("SET", "{t}k", "\x7f")],
     ("BITFIELD", "{t}k", "OVERFLOW", "SAT", "INCRBY", "i8", "0", "9")),
    ("smove_destination_had_member", [("SADD", "{t}s", "a", "b"), ("SADD", "{t}k", "a")],
     ("SMOVE", "{t}s", "{t}k", "a")),
]

# writes that fail with an error raised before any change
ERRORS = [
    ("sadd_wrongtype", ST, ("SADD", "{t}k", "a")),
    ("incr_not_an_integer", ST, ("INCR", "{t}k")),
    ("set_syntax_error", ST, ("SET", "{t}k", "v", "BOGUS")),
    ("hincrby_wrongtype", ST, ("HINCRBY", "{t}k", "f", "1")),
    ("expire_not_an_integer", ST, ("EXPIRE", "{t}k", "soon")),
    ("lmove_wrongtype_destination", [("RPUSH", "{t}s", "a"), ("SET", "{t}k", "1")],
     ("LMOVE", "{t}s", "{t}k", "LEFT", "LEFT")),
    ("sinterstore_wrongtype_source", [("SET", "{t}x", "1"), ("SADD", "{t}k", "a")],
     ("SINTERSTORE", "{t}k", "{t}x")),
    # MOVE refused (frontdoor's one database; the same texts on redis-server)
    ("move_db_out_of_range", ST, ("MOVE", "{t}k", "-4294967296")),
    ("move_db_not_a_number", ST, ("MOVE", "{t}k", "x")),
    ("move_same_db", ST, ("MOVE", "{t}k", "0")),
    # a blocking pop failing: WRONGTYPE, a bad timeout
    ("brpop_wrongtype", [("SET", "{t}s", "x")], ("BRPOP", "{t}k", "{t}s", "1e-9")),
    ("blpop_negative_timeout", [("RPUSH", "{t}k", "a")], ("BLPOP", "{t}k", "-1")),
    ("blmove_wrongtype_destination", [("RPUSH", "{t}k", "a"), ("SET", "{t}d", "x")],
     ("BLMOVE", "{t}k", "{t}d", "LEFT", "RIGHT", "0.01")),
]

# real changes, and writes Redis signals even when they change nothing (no
# TC flag): EXEC aborts on every backend
CHANGES = [
    ("sadd_new", S, ("SADD", "{t}k", "b")),
    ("set_nx_missing", [], ("SET", "{t}k", "v", "NX")),
    ("set_get_missing", [], ("SET", "{t}k", "v", "GET")),        # a null reply, yet set
    ("set_nx_get_missing", [], ("SET", "{t}k", "v", "NX", "GET")),
    ("del_existing_among_absent", ST, ("DEL", "{t}o", "{t}k")),
    ("pexpireat_past", ST, ("PEXPIREAT", "{t}k", "1")),
    ("persist_with_ttl", TTL, ("PERSIST", "{t}k")),
    ("lpop_last", [("RPUSH", "{t}k", "a")], ("LPOP", "{t}k")),
    ("hsetnx_new", H, ("HSETNX", "{t}k", "g", "v")),
    ("pfadd_creates_empty", [], ("PFADD", "{t}k")),
    ("smove_into_watched", [("SADD", "{t}s", "a")], ("SMOVE", "{t}s", "{t}k", "a")),
    ("rpoplpush_into_watched", [("RPUSH", "{t}s", "a")], ("RPOPLPUSH", "{t}s", "{t}k")),
    ("zpopmin_last", Z, ("ZPOPMIN", "{t}k")),
    ("xadd_new", [], ("XADD", "{t}k", "1-1", "f", "v")),
    ("append_empty_to_missing", [], ("APPEND", "{t}k", "")),      # :0, yet the key is created
    ("ltrim_keeps_all", L, ("LTRIM", "{t}k", "0", "-1")),
    ("lset_same_value", L, ("LSET", "{t}k", "0", "a")),
    ("hset_same_value", H, ("HSET", "{t}k", "f", "v")),
    ("incrby_zero", [("SET", "{t}k", "1")], ("INCRBY", "{t}k", "0")),
    ("zadd_score_update", Z, ("ZADD", "{t}k", "2", "a")),         # :0, yet changed
    ("sinterstore_empty_over_existing", ST, ("SINTERSTORE", "{t}k", "{t}x")),
    ("bitfield_set_new_value", [("BITFIELD", "{t}k", "SET", "u8", "0", "1")], ("BITFIELD", "{t}k", "SET", "u8", "0", "2")),
    ("setbit_other_bit", [("SET", "{t}k", "a")], ("SETBIT", "{t}k", "1", "0")),
    ("setbit_grows_with_0", [("SET", "{t}k", "a")], ("SETBIT", "{t}k", "100", "0")),
    ("setbit_creates_with_0", [], ("SETBIT", "{t}k", "1", "0")),
    ("bitfield_same_value_grows", [("SET", "{t}k", "a")], ("BITFIELD", "{t}k", "SET", "u8", "8", "0")),
    ("bitfield_creates_with_0", [], ("BITFIELD", "{t}k", "SET", "u8", "0", "0")),
    ("bitfield_one_of_two_changes", [("SET", "{t}k", "a")],
     ("BITFIELD", "{t}k", "SET", "u8", "0", "97", "INCRBY", "u4", "4", "1")),
    ("smove_source_member_also_in_destination", [("SADD", "{t}k", "a"), ("SADD", "{t}d", "a")],
     ("SMOVE", "{t}k", "{t}d", "a")),
    ("bitfield_incrby_creates", [], ("BITFIELD", "{t}k", "GET", "u8", "0", "INCRBY", "u8", "0", "1")),
    ("sort_store_into_watched", [("RPUSH", "{t}s", "2", "1")], ("SORT", "{t}s", "STORE", "{t}k")),
    ("sort_store_last_of_two", [("RPUSH", "{t}s", "1")], ("SORT", "{t}s", "STORE", "{t}o", "STORE", "{t}k")),
    ("sort_store_empty_over_existing", ST, ("SORT", "{t}x", "STORE", "{t}k")),
]

# blocking pops that pop (not from scripts: Redis 7.0 refuses them there)
BLOCKING_CHANGES = [
    ("blpop_pops", L, ("BLPOP", "{t}o", "{t}k", "0.01")),
    ("brpoplpush_into_watched", [("RPUSH", "{t}s", "a")], ("BRPOPLPUSH", "{t}s", "{t}k", "0.01")),
    ("bzpopmax_pops", Z, ("BZPOPMAX", "{t}k", "0.01")),
]


def exec_expect(what, aborts):
    """EXEC on both; checks that redis-server's outcome is what the case says
    (the comparison itself is the DiffTwo's)."""
    def step(two):
        a, _ = two.a.cmd("EXEC")
        if (a in (b"*-1\r\n", b"_\r\n")) != aborts:
            raise AssertionError("%s: redis-server's EXEC should %s: %r"
                                 % (what, "abort" if aborts else "run", a))
    return step


def by_client(op):
    return [("@B",) + op]


def in_exec(op):
    return [("@B", "MULTI"), ("@B",) + op, ("@B", "EXEC")]


# the other client's write from a script: redis.pcall, so an error is the reply
SCRIPT = "return redis.pcall(unpack(ARGV))"


def in_script(op):
    return [("@B", "EVAL", SCRIPT, str(len(KEYS))) + KEYS + op]


def watch_steps(items, how, aborts):
    steps = []
    for what, setup, op in items:
        steps += [("DEL",) + KEYS] + setup + [("WATCH", "{t}k")] + how(op)
        steps += [("MULTI",), ("INCR", "{t}n"), exec_expect(what, aborts)]
    return steps + [("GET", "{t}n")]


case("watch_noop_writes_run", watch_steps(NOOPS, by_client, False))
case("watch_error_writes_run", watch_steps(ERRORS, by_client, False))
case("watch_noop_writes_in_exec_run", watch_steps(NOOPS + ERRORS, in_exec, False))
case("watch_noop_writes_in_script_run", watch_steps(NOOPS + ERRORS, in_script, False))
case("watch_store_sources_run", watch_steps(SOURCES, by_client, False))
case("watch_store_sources_in_exec_run", watch_steps(SOURCES, in_exec, False))
case("watch_noop_effect_writes_run", watch_steps(NOOPS_EFFECT, by_client, False))
case("watch_noop_effect_writes_in_exec_run", watch_steps(NOOPS_EFFECT, in_exec, False))
case("watch_noop_effect_writes_in_script_run", watch_steps(NOOPS_EFFECT, in_script, False))
case("watch_changes_abort", watch_steps(CHANGES + BLOCKING_CHANGES, by_client, True))
case("watch_changes_in_exec_abort", watch_steps(CHANGES + BLOCKING_CHANGES, in_exec, True))
case("watch_changes_in_script_abort", watch_steps(CHANGES, in_script, True))


# The client's own failed MOVE or blocking pop between WATCH and EXEC (the
# fuzzer's run 3, lmdb and leveldb: tests/fuzz/cmdcorpus/watch-*.json): EXEC
# runs, as on redis-server; its own pop that popped aborts. The client's
# next command waits for the pop's reply: exact on every backend.
case("watch_own_failed_move_and_pops_run", [
    ("DEL", "{t}l", "{t}n", "{t}new") + KEYS, ("SET", "{t}k", "1.5"), ("WATCH", "{t}new", "{t}k"), ("MOVE", "{t}k", "-4294967296"),
    ("MOVE", "{t}k", "0"), ("MULTI",), ("INCR", "{t}n"), exec_expect("own failed MOVE", False),
    ("WATCH", "{t}l", "{t}k"), ("BLPOP", "{t}l", "0.01"), ("MULTI",), ("INCR", "{t}n"), exec_expect("own timed-out BLPOP", False),
    ("WATCH", "{t}l", "{t}o", "{t}k"), ("BRPOP", "{t}o", "{t}l", "{t}k", "{t}none", "1e-9"),
    ("MULTI",), ("INCR", "{t}n"), exec_expect("own BRPOP on a string", False),
    ("WATCH", "{t}l"), ("BZPOPMIN", "{t}l", "0.01"), ("BLMOVE", "{t}l", "{t}o", "LEFT", "LEFT", "0.01"),
    ("MULTI",), ("INCR", "{t}n"), exec_expect("own timed-out BZPOPMIN, BLMOVE", False),
    ("RPUSH", "{t}l", "a"), ("WATCH", "{t}l"), ("BLPOP", "{t}l", "0.01"), ("MULTI",), ("INCR", "{t}n"),
    exec_expect("own BLPOP that popped", True), ("GET", "{t}n"),
])


def watch_half_close_and_gone():
    """A client that pipelines WATCH ... EXEC and half-closes gets every
    reply (WATCH's may be owed by the backend meanwhile: the rest is not
    dropped), the same bytes as redis-server's; clients that go away while
    their WATCH is asked about leave the server serving."""
    import socket
    ref, fd = shared_pair()
    d = diff_pair()
    d.cmd("SET", "{t}k", "1", "EX", "100")
    d.ref.close()
    d.fd.close()
    cmds = [("WATCH", "{t}k", "{t}none"), ("MULTI",), ("INCR", "{t}k"), ("EXEC",), ("GET", "{t}k")]
    got = []
    for srv in (ref, fd):
        c = srv.conn()
        c.send_many(cmds)
        c.sock.shutdown(socket.SHUT_WR)
        got.append(c.read_all_until_close(5.0))
        c.close()
    if got[0] != got[1]:
        raise AssertionError("half-closed pipeline: redis-server %r, frontdoor %r" % (got[0], got[1]))
    if not got[1][1]:
        raise AssertionError("frontdoor did not close the half-closed connection")
    keys = tuple("{t}g%d" % i for i in range(200))
    for _ in range(20):
        c = fd.conn()
        c.send_many([("WATCH",) + keys, ("MULTI",), ("INCR", "{t}k"), ("EXEC",)])
        c.close()
    with fd.conn() as c:   # their commands may or may not have run yet: the server serves
        r = c.cmd("PING")
        if r != b"+PONG\r\n":
            raise AssertionError("after clients went away mid-WATCH: PING answered %r" % r)
        c.send_many([("WATCH", "{t}quiet"), ("MULTI",), ("PING",), ("EXEC",)])
        r = c.read_n(4)
        if r != [b"+OK\r\n", b"+OK\r\n", b"+QUEUED\r\n", b"*1\r\n+PONG\r\n"]:
            raise AssertionError("after clients went away mid-WATCH: %r" % r)


T.add("watch_half_close_and_gone", watch_half_close_and_gone)


if __name__ == "__main__":
    T.main()
