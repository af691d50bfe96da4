#!/usr/bin/python3
"""Measure FRONTDOOR MIGRATE (docs/migration.md, docs/benchmarks.md "Online migration").

For each pair: N keys of mixed types (strings, lists, hashes, sets, sorted
sets of 10 elements; a fifth with TTLs) on the primary; mirror on; the
application's open-loop latency (fdload --rate, get:80,set:20) measured
before and during the backfill; keys/s and MB/s of the backfill; VERIFY's
time and verdict. Writes run throughout (the fdload SETs), so "every key
matches" is checked with writes going on.

    bench/migrate_bench.py --keys 100000 --pairs redis:lmdb,lmdb:redis-cluster --rate 0
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
from fdtest import (start_frontdoor, start_redis, make_tempdir, info_fields, HOST, shared_mongo,  # noqa: E402
                    start_cluster, wait_cluster_map, Conn, parse, cleanup_all)

FDLOAD = os.path.join(HERE, "..", "build", "fdload")


def side(prefix, name, keep):
    kw = {}
    if name == "redis":
        r = start_redis()
        keep.append(r)
        kw[prefix + "redis_address"] = "%s:%d" % (HOST, r.port)
    elif name == "redis-cluster":
        cl = start_cluster()
        keep.append(cl)
        kw[prefix + "redis_cluster_seeds"] = cl.seeds
    elif name == "mongodb":
        kw[prefix + "mongo_uri"] = "mongodb://%s:%d" % (HOST, shared_mongo().port)
        kw[prefix + "mongo_database"] = "bench%d" % int(time.time())
    else:
        kw[prefix + "dir"] = make_tempdir("mig-bench-")
        kw[prefix + "durability"] = "nosync"
    return kw


def load(port, n, batch=2000):
    with Conn(port, timeout=60) as c:
        cmds = []
        for i in range(n):
            k = "m:%09d" % i
            t = i % 5
            if t == 0:
                cmds.append(("SET", k, "v" * 100))
            elif t == 1:
                cmds.append(("RPUSH", k) + tuple("element-%d" % j for j in range(10)))
            elif t == 2:
                cmds.append(("HSET", k) + tuple(x for j in range(10) for x in ("field%d" % j, "value-%d" % j)))
            elif t == 3:
                cmds.append(("SADD", k) + tuple("member-%d" % j for j in range(10)))
            else:
                cmds.append(("ZADD", k) + tuple(x for j in range(10) for x in (str(j), "member-%d" % j)))
            if i % 5 == 1:
                cmds.append(("PEXPIRE", k, "86400000"))
            if len(cmds) >= batch:
                c.send_many(cmds)
                c.read_n(len(cmds))
                cmds = []
        if cmds:
            c.send_many(cmds)
            c.read_n(len(cmds))


def fdload(port, rate, seconds):
    out = subprocess.run([FDLOAD, "-p", str(port), "--rate", str(rate), "--duration", str(seconds), "-c", "10",
                          "--mix", "get:80,set:20", "--keys", "10000", "--json", "-", "-q", "--no-progress"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=seconds + 60).stdout
    d = json.loads(out)
    return d["latency_ms"], d["errors"]


def info(port, section="migrate"):
    with Conn(port) as c:
        return info_fields(c.call("INFO", section).decode())


def run_pair(prim, sec, n, rate, app_rate, seconds, state_file=""):
    keep = []
    kw = dict(backend=prim)
    if state_file:
        kw["migrate_state_file"] = state_file
    kw.update(side("", prim, keep))
    fd = start_frontdoor(**kw)
    if prim == "redis-cluster":
        wait_cluster_map(fd, timeout=30)
    t0 = time.monotonic()
    load(fd.port, n)
    t_load = time.monotonic() - t0
    skw = side("ab_", sec, keep)
    args = ["ab-mode", "mirror", "ab-secondary", sec]
    for k, v in skw.items():
        args += [k.replace("_", "-"), v]
    with Conn(fd.port) as c:
        assert c.call("CONFIG", "SET", *args) == "OK"
    time.sleep(1.0)
    before, _ = fdload(fd.port, app_rate, seconds)
    during = {}

    def app():
        during["lat"], during["errors"] = fdload(fd.port, app_rate, seconds)
    th = threading.Thread(target=app)
    th.start()
    time.sleep(0.5)
    with Conn(fd.port) as c:
        start = ["FRONTDOOR", "MIGRATE", "START", "BATCH", "500"] + (["RATE", str(rate)] if rate else [])
        assert c.call(*start) == "OK"
    t0 = time.monotonic()
    while info(fd.port)["migrate_stage"] != "synced":
        time.sleep(0.05)
    t_copy = time.monotonic() - t0
    th.join()
    m = info(fd.port)
    t0 = time.monotonic()
    with Conn(fd.port) as c:
        c.call("FRONTDOOR", "MIGRATE", "VERIFY")
        while info(fd.port)["migrate_verify"] != "done":
            time.sleep(0.05)
        t_verify = time.monotonic() - t0
        v = c.call("FRONTDOOR", "MIGRATE", "VERIFY", "STATUS")
    v = {v[i].decode(): v[i + 1] for i in range(0, len(v), 2)}
    res = dict(pair="%s -> %s" % (prim, sec), keys=int(m["migrate_keys_copied"]), failed=int(m["migrate_keys_failed"]),
               recopied=int(m["migrate_keys_recopied"]), load_s=round(t_load, 1), copy_s=round(t_copy, 2),
               keys_per_s=round(int(m["migrate_keys_copied"]) / t_copy), mb_per_s=round(int(m["migrate_bytes_copied"]) / t_copy / 1e6, 2),
               rate_limit=rate, app_rate=app_rate, p99_before_ms=before["p99"], p99_during_ms=during["lat"]["p99"],
               p50_before_ms=before["p50"], p50_during_ms=during["lat"]["p50"], app_errors=during["errors"],
               verify_s=round(t_verify, 2), verify_checked=int(v["checked"]), differ=int(v["differ"]),
               missing=int(v["missing"]), extra=int(v["extra"]))
    fd.stop()
    for k in keep:
        k.cleanup() if hasattr(k, "cleanup") else k.stop()
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=100000)
    ap.add_argument("--pairs", default="redis:lmdb")
    ap.add_argument("--rate", type=int, default=0, help="MIGRATE RATE (keys/s; 0: no limit)")
    ap.add_argument("--app-rate", type=int, default=2000, help="fdload's open-loop rate (requests/s)")
    ap.add_argument("--seconds", type=int, default=10, help="fdload's duration before and during")
    ap.add_argument("--state-file", default="", help="migrate-state-file (default: next to the data folder)")
    a = ap.parse_args()
    try:
        for p in a.pairs.split(","):
            prim, sec = p.split(":")
            print(json.dumps(run_pair(prim, sec, a.keys, a.rate, a.app_rate, a.seconds, a.state_file)), flush=True)
    finally:
        cleanup_all()


if __name__ == "__main__":
    main()
