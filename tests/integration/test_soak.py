#!/usr/bin/env python3
"""The soak's CI version (tests/soak/soak.py; the long one is tests/soak/run,
docs/robustness.md "Hostile clients and soak"): each backend 6 s (after a 4 s warm-up) under
fdload's mixed load with A/B mirroring turned on and off, live swaps, client
churn and, on the redis backend, its redis-server SIGKILLed and restarted:
no crash, no acknowledged write lost, RssAnon back within 10 % of the
baseline taken after a warm-up. FD_SOAK_SECONDS changes the length."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "soak"))

from fdtest import Tests, frontdoor_is_redis, skip, need_mongodb  # noqa: E402
import soak  # noqa: E402

T = Tests(case_timeout=150)
SECONDS = float(os.environ.get("FD_SOAK_SECONDS", "6"))


def run(backend):
    if frontdoor_is_redis():
        skip("frontdoor is a redis-server stand-in (no live swap, no A/B)")
    soak.soak_one(backend, SECONDS, fault_every=1.5)


@T.case
def soak_lmdb():
    run("lmdb")


@T.case
def soak_leveldb():
    run("leveldb")


@T.case
def soak_redis_killed_and_restarted():
    run("redis")


@T.case
def soak_mongodb():
    need_mongodb()
    # RssAnon was +15-20 % here from the workers' per-thread malloc arenas:
    # proxy/main.c makes one arena for the process (docs/robustness.md)
    run("mongodb")


if __name__ == "__main__":
    T.main()
