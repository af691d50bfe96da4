#!/usr/bin/python3
"""ratios.py — one bench/run's throughput per test and target as a table:
median requests/s [min–max] and the ratio of the medians to redis-direct,
plus the servers' CPU µs per request (median). Usage:
    bench/ratios.py RUN_DIR [--setting LABEL]"""
import json, statistics, sys, os
d = sys.argv[1]
res = json.load(open(os.path.join(d, "results.json")))
cells = {}
cpu = {}
for r in res["runs"]:
    if not r.get("ok") or r.get("rps") is None:
        continue
    key = (r["test"], r["target"])
    cells.setdefault(key, []).append(r["rps"])
    c = sum((r.get("server_cpu_s") or {}).values())   # every server process of the target
    if r.get("requests"):
        cpu.setdefault(key, []).append(c / r["requests"] * 1e6)
tests = []
targets = []
for (t, g) in cells:
    if t not in tests: tests.append(t)
    if g not in targets: targets.append(g)
targets.sort(key=lambda g: (g != "redis-direct", g))
def k(x):
    return f"{x/1000:.0f}k" if x < 1e6 else f"{x/1e6:.2f}M"
print("| test | " + " | ".join(targets) + " |")
print("|---|" + "---|" * len(targets))
for t in tests:
    base = statistics.median(cells.get((t, "redis-direct"), [0])) or None
    row = []
    for g in targets:
        v = cells.get((t, g))
        if not v:
            row.append("—"); continue
        m = statistics.median(v)
        s = f"{k(m)} [{k(min(v))}–{k(max(v))}]"
        if g != "redis-direct" and base:
            s += f" **{m/base:.2f}×**"
        cu = cpu.get((t, g))
        if cu:
            s += f" ({statistics.median(cu):.2f} µs)"
        row.append(s)
    print(f"| {t} | " + " | ".join(row) + " |")
env = res.get("environment", {})
print(f"\nload average at start/end: {env.get('loadavg_start', env.get('load_start'))} / {env.get('loadavg_end', env.get('load_end'))}")
