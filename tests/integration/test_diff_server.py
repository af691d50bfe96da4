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


if __name__ == "__main__":
    T.main()
