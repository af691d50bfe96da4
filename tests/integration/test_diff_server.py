#!/usr/bin/python3
"""Differential test of commands frontdoor serves itself (proxy/), so that
every backend answers them the same: the same commands go to a real
redis-server 7.0 and to frontdoor, replies compared byte for byte, in RESP2
and in RESP3 (FD_DIFF_SUITES: every backend runs this file).

LATENCY HISTOGRAM (proxy/slowlog.c): the parts that are deterministic —
argument errors, names that are not commands (also "parent|sub" names that
are no subcommand), commands never run and
commands refused before running (an arity error) left out, the entries in
argument order (repeats kept), a command that ran into an error counted —
and the shape of an entry, {calls, histogram_usec: {µs: cumulative count}},
after one call: only the bucket's µs differ (the two servers time
differently), so that number alone is normalised.

Each pass uses commands of its own (a histogram counts for the whole life
of the shared servers).

COMMAND GETKEYS: the keys of a call as Redis 7.0 finds them (SORT's STORE,
GEORADIUS's STORE/STOREDIST, counted keys), its errors in its order.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import Tests, diff_pair

T = Tests(case_timeout=60)

HIST = b"$14\r\nhistogram_usec\r\n"


def one_bucket(raw):
    """An entry's bucket (its first integer after each histogram_usec) as
    ':#': a command run once has exactly one bucket, cumulative count 1."""
    parts = raw.split(HIST)
    return HIST.join([parts[0]] + [re.sub(rb":[1-9][0-9]*\r\n", b":#\r\n", p, count=1) for p in parts[1:]])


# Per protocol: (a command run once, one run into WRONGTYPE, one never run)
COMMANDS = {False: ("lpos", "hstrlen", "zlexcount"), True: ("linsert", "hexists", "zrevrank")}


def latency_histogram_steps(d, resp3):
    ok, fails, never = COMMANDS[resp3]
    d.cmd("LATENCY")                                          # arity
    d.cmd("LATENCY", "HISTOGRAMS")                            # unknown subcommand
    d.cmd("LATENCY", "HISTOGRAM", never)                      # never run: an empty map
    d.cmd("latency", "histogram", "nosuch", "NOSUCH", "", "set|get", never.upper())
    # "parent|sub" names that are no subcommand: Redis finds nothing either
    # (frontdoor's table has no subcommand rows: proxy/slowlog.c)
    d.cmd("LATENCY", "HISTOGRAM", "config|nosuch", "a|b|c", "CLIENT|", "|get", never + "|x")
    d.cmd("RPUSH", "l", "a", "b", "a")
    arity = ("LPOS", "l") if ok == "lpos" else ("LINSERT", "l", "BEFORE")
    d.cmd(*arity)                                             # refused before running: not counted
    d.cmd("LATENCY", "HISTOGRAM", ok)
    d.cmd(*(("LPOS", "l", "a", "RANK", "-1") if ok == "lpos" else ("LINSERT", "l", "BEFORE", "b", "x")))
    d.cmd(fails.upper(), "l", "f")                            # WRONGTYPE: ran, counted
    d.cmd("LATENCY", "HISTOGRAM", ok.upper(), norm=one_bucket)
    d.cmd("LATENCY", "HISTOGRAM", fails, "nosuch", never, ok, ok, norm=one_bucket)
    d.cmd("DEL", "l")


@T.case
def latency_histogram_as_redis():
    for resp3 in (False, True):
        d = diff_pair(resp3)
        latency_histogram_steps(d, resp3)
        if d.mismatches:
            raise AssertionError(("RESP3: " if resp3 else "RESP2: ") + d.report())


# COMMAND GETKEYS (proxy/builtin.c, storage/command.c fd_command_keys): the
# keys as Redis 7.0 finds them, its errors in its order
GETKEYS = [
    (), ("get",), ("nosuch", "a"), ("ping", "x"), ("get", "a", "b"), ("config", "get", "x"),
    ("get", "a"), ("GET", "a"), ("del", "a", "b", "c"), ("mset", "a", "1", "b"), ("mset", "a", "1", "b", "2"),
    ("eval", "s", "0"), ("eval", "s", "1", "k"), ("eval", "s", "2", "k"), ("fcall", "f", "-1", "k"),
    ("zunionstore", "d", "0", "a"), ("zunionstore", "d", "x", "a"), ("zunionstore", "d", "1", "a"),
    ("blmpop", "0", "2", "a", "b", "left"), ("lmpop", "1", "a", "left"), ("sintercard", "2", "a", "b"),
    ("xread", "streams", "a"), ("xread", "streams", "a", "b"), ("xread", "streams", "a", "b", "c"),
    ("xreadgroup", "group", "g", "c", "streams", "s", ">"), ("bitop", "and", "d", "a", "b"),
    ("object", "encoding", "k"), ("xgroup", "create", "k", "g", "0"),
    ("object", "encoding"), ("xinfo", "stream"), ("object", "help"), ("xgroup", "HELP", "x"),
    ("memory", "usage", "k", "samples", "5"), ("xinfo", "stream", "k", "full"),
    # SORT: the last STORE's key; LIMIT skips 2, GET and BY 1, the key itself is read as an option
    ("sort", "a", "store", "d"), ("SORT", "a", "STORE", "d"), ("sort", "a", "store"),
    ("sort", "a", "get", "store", "d"), ("sort", "a", "store", "limit", "x", "y", "d"),
    ("sort", "a", "by", "store", "store", "d"), ("sort", "a", "store", "d", "store", "e"),
    ("sort", "a", "limit", "0", "1", "store", "d", "asc"), ("sort_ro", "a", "store", "d"),
    ("georadius", "k", "0", "0", "1", "m", "store", "d"),
    ("georadius", "k", "0", "0", "1", "m", "store", "d", "storedist", "e"),
    ("georadiusbymember", "k", "m", "1", "m", "storedist", "d"),
    ("georadius", "k", "0", "0", "1", "m", "store", "d", "store", "e"), ("georadius", "k", "0", "0", "1", "m", "store"),
    ("georadius", "k", "0", "0", "1", "store", "d"), ("georadiusbymember", "k", "m", "1", "store", "d"),
]


@T.case
def command_getkeys_as_redis():
    for resp3 in (False, True):
        d = diff_pair(resp3)
        for call in GETKEYS:
            d.cmd("COMMAND", "GETKEYS", *call)
        d.cmd("command", "getkeys", "sort", "a", "store", "d")
        if d.mismatches:
            raise AssertionError(("RESP3: " if resp3 else "RESP2: ") + d.report())


if __name__ == "__main__":
    T.main()
