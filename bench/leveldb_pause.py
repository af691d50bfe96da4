#!/usr/bin/python3
"""leveldb_pause — how long can a LevelDB compaction freeze frontdoor's clients?

Drives a sustained write load (redis-benchmark: SET of 1 KB values on random
keys, several connections, pipelined) against one frontdoor, while a probe
client on its own connection sends PING / GET every millisecond and times
each reply. LevelDB flushes and compacts on its own background thread; if
writes outrun it (level-0 slowdown / stop triggers, or a full memtable while
the previous one is still being written), leveldb_write() blocks — and with it
frontdoor's event loop, so every client, the probe included, waits.

    bench/leveldb_pause.py                                  # leveldb, 1mb write buffer, 400 MB
    bench/leveldb_pause.py --write-buffer 64mb --mb 400
    bench/leveldb_pause.py --backend lmdb --lmdb-map-size 2gb   # the same load on LMDB, for comparison
    bench/leveldb_pause.py --durability sync
    bench/leveldb_pause.py --write-buffer 64mb --mb 2048 --compare /tmp/ld-base/frontdoor --repeat 2
                            # this build and another binary side by side, alternating, in one run

Prints a summary (probe latency percentiles, worst pauses with their time
into the run, the load's throughput, frontdoor's INFO leveldb_* counters) and
writes it as JSON with --json FILE. Needs redis-benchmark (redis-tools) and a
built frontdoor (--frontdoor, else $FRONTDOOR_BIN, else the newest build*/).
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import fdtest  # noqa: E402


def parse_size(s):
    s = s.strip().lower()
    for suf, mul in (("gb", 1 << 30), ("mb", 1 << 20), ("kb", 1 << 10), ("g", 10 ** 9), ("m", 10 ** 6),
                     ("k", 1000), ("b", 1)):
        if s.endswith(suf):
            return int(s[:-len(suf)]) * mul
    return int(s)


def info_fields(port):
    with fdtest.Conn(port, timeout=30) as c:
        return fdtest.info_fields(fdtest.parse(c.cmd("INFO", "backend")))


def pct(sorted_vals, p):
    if not sorted_vals:
        return 0.0
    i = min(len(sorted_vals) - 1, int(round(p / 100.0 * (len(sorted_vals) - 1))))
    return sorted_vals[i]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frontdoor", help="frontdoor binary")
    ap.add_argument("--backend", default="leveldb")
    ap.add_argument("--mb", type=int, default=400, help="MB of values to write (default 400)")
    ap.add_argument("--value-size", type=int, default=1024)
    ap.add_argument("--keyspace", type=int, default=100000000, help="redis-benchmark -r (random keys)")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--pipeline", type=int, default=16)
    ap.add_argument("--write-buffer", default="1mb", help="leveldb-write-buffer-size (default 1mb: tiny)")
    ap.add_argument("--block-cache", default="64mb")
    ap.add_argument("--compression", default="snappy")
    ap.add_argument("--durability", default="nosync")
    ap.add_argument("--lmdb-map-size", default="2gb")
    ap.add_argument("--interval-ms", type=float, default=1.0, help="probe period (default 1 ms)")
    ap.add_argument("--data-root", help="parent of the temporary data folder (default: system temp)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--compare", help="comma-separated other frontdoor binaries: each runs the same load, "
                    "alternating with --frontdoor, --repeat times (one summary table at the end)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per binary (default 1)")
    a = ap.parse_args()
    bins = [a.frontdoor or fdtest.frontdoor_bin()]
    if a.compare:
        bins += [b for b in a.compare.split(",") if b]
    results = []
    for rep in range(a.repeat):
        for b in bins:
            print("\n=== run %d of %s" % (rep + 1, b))
            sys.stdout.flush()
            r = run_one(a, b)
            r["binary"] = b
            results.append(r)
    if len(results) > 1:
        print("\nsummary (probe = PING/GET every %.1f ms; GET = the GET probes only):" % a.interval_ms)
        print("%-40s %8s %9s %9s %9s %9s %9s" % ("binary", "SET/s", "max ms", "p99.9 ms", "GETp99.9", "GET max", ">10ms"))
        for r in results:
            print("%-40s %8d %9.1f %9.2f %9.2f %9.1f %9d" % (r["binary"][-40:], r["sets_per_s"], r["probe_ms"]["max"],
                  r["probe_ms"]["p99.9"], r["get_ms"]["p99.9"], r["get_ms"]["max"], r["probes_over_ms"]["10"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results if len(results) > 1 else results[0], f, indent=1)


def run_one(a, binary):
    os.environ["FRONTDOOR_BIN"] = binary
    fdtest.START_TIMEOUT = 30
    if a.data_root:
        os.environ["TMPDIR"] = a.data_root
    directives = dict(backend=a.backend, durability=a.durability)
    if a.backend == "leveldb":
        directives.update(leveldb_write_buffer_size=a.write_buffer, leveldb_block_cache_size=a.block_cache,
                          leveldb_compression=a.compression)
    elif a.backend == "lmdb":
        directives.update(lmdb_map_size=a.lmdb_map_size)
    fd = fdtest.start_frontdoor(**directives)
    port = fd.port
    n = a.mb * (1 << 20) // a.value_size
    probe = fdtest.Conn(port, timeout=120)
    probe.cmd("SET", "probe:key", "x" * 100)

    bench = [fdtest.REDIS_BENCHMARK, "-p", str(port), "-t", "set", "-d", str(a.value_size),
             "-r", str(a.keyspace), "-n", str(n), "-c", str(a.clients), "-P", str(a.pipeline), "-q"]
    print("frontdoor %s, backend %s (%s), load: %s" % (fdtest.frontdoor_bin(), a.backend,
          ", ".join("%s=%s" % kv for kv in sorted(directives.items()) if kv[0] != "backend"),
          " ".join(bench[1:])))
    sys.stdout.flush()
    load_before = os.getloadavg()
    t_start = time.monotonic()
    # redis-benchmark's progress output goes to a file: a pipe nobody reads
    # during the run would fill up and stall the load after a few minutes
    bench_out = open(os.path.join(fdtest.make_tempdir("leveldb-pause-"), "bench.out"), "w+b")
    proc = subprocess.Popen(bench, stdout=bench_out, stderr=subprocess.STDOUT,
                            preexec_fn=fdtest._pdeathsig)
    lat = []           # (time into the run, seconds)
    i = 0
    period = a.interval_ms / 1000.0
    next_t = time.monotonic()
    while proc.poll() is None:
        t0 = time.monotonic()
        if i % 2:
            probe.send("GET", "probe:key")
        else:
            probe.send("PING")
        r = probe.read()
        t1 = time.monotonic()
        if r.startswith(b"-"):
            print("probe got an error reply: %r" % r[:200])
        lat.append((t0 - t_start, t1 - t0, i % 2))
        i += 1
        next_t += period
        if next_t > t1:
            time.sleep(next_t - t1)
        else:
            next_t = t1
    bench_out.seek(0)
    out = bench_out.read().decode("utf-8", "replace").replace("\r", "\n")
    bench_out.close()
    elapsed = time.monotonic() - t_start
    load_after = os.getloadavg()
    info = info_fields(port)
    disk = 0
    for root, _, files in os.walk(fd.dir):
        for f in files:
            try:
                disk += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    fd.stop()

    vals = sorted(x[1] for x in lat)
    gets = sorted(x[1] for x in lat if x[2])
    worst = sorted(lat, key=lambda x: -x[1])[:8]
    res = {
        "backend": a.backend, "directives": directives, "mb": a.mb, "requests": n,
        "clients": a.clients, "pipeline": a.pipeline, "value_size": a.value_size,
        "elapsed_s": round(elapsed, 2), "mb_per_s": round(a.mb / elapsed, 1),
        "sets_per_s": int(n / elapsed), "probes": len(vals),
        "probe_ms": {k: round(pct(vals, p) * 1000, 2) for k, p in
                     (("p50", 50), ("p99", 99), ("p99.9", 99.9), ("max", 100))},
        "get_ms": {k: round(pct(gets, p) * 1000, 2) for k, p in
                   (("p50", 50), ("p99", 99), ("p99.9", 99.9), ("max", 100))},
        "probes_over_ms": {str(t): sum(1 for v in vals if v > t / 1000.0) for t in (10, 50, 100, 500, 1000)},
        "worst": [(round(t, 2), round(v * 1000, 1)) for t, v, _ in worst],
        "disk_mb": round(disk / 1048576.0, 1),
        "loadavg_1m_before_after": [round(load_before[0], 2), round(load_after[0], 2)],
        "cpus": os.cpu_count(),
        "benchmark_output": out.strip().splitlines()[-3:],
        "info": {k: v for k, v in info.items() if k.startswith(("leveldb_", "lmdb_", "kv_keys", "kv_commits"))},
    }
    print("load: %d SETs of %d B in %.1fs = %.1f MB/s (%d SET/s); data folder %.0f MB at the end"
          % (n, a.value_size, elapsed, res["mb_per_s"], res["sets_per_s"], res["disk_mb"]))
    print("load average (1 min) before/after: %.2f / %.2f on %d CPUs (other processes skew the probe)"
          % (load_before[0], load_after[0], os.cpu_count()))
    print("probe (%d PING/GET, one every %.1f ms): p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, max %.1f ms"
          % (len(vals), a.interval_ms, res["probe_ms"]["p50"], res["probe_ms"]["p99"],
             res["probe_ms"]["p99.9"], res["probe_ms"]["max"]))
    print("GET probes only: p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, max %.1f ms"
          % (res["get_ms"]["p50"], res["get_ms"]["p99"], res["get_ms"]["p99.9"], res["get_ms"]["max"]))
    print("probes slower than 10/50/100/500/1000 ms: %s" % "/".join(str(v) for v in res["probes_over_ms"].values()))
    print("worst (s into the run, ms): %s" % ", ".join("%.2fs %.1fms" % w for w in res["worst"]))
    for k in sorted(res["info"]):
        print("  %s: %s" % (k, res["info"][k]))
    return res


if __name__ == "__main__":
    main()
