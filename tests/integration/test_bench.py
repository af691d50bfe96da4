#!/usr/bin/python3
"""bench/run in quick mode (tiny -n, one repeat, three tests) against the
frontdoor under test: every backend built into it produces rows, results.json
matches bench/results.schema.json (checked by bench/fdbench/schema.py,
stdlib only), results.csv holds the same rows, report.html has a chart
(inline SVG) in every section and fetches nothing, and a missing backend
(an unknown name; mongodb at an address where nothing listens; a backend
the binary lacks) is reported as skipped with its reason. A second, smaller
run covers the growth and seed-setget scenarios. Nothing here looks at how
large a figure is."""
import csv
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "bench"))
from fdtest import Tests, check, eq, frontdoor_bin, missing_prerequisite  # noqa: E402
from fdbench import schema  # noqa: E402

T = Tests(case_timeout=120)
RUN = os.path.join(REPO, "bench", "run")
EMBEDDED = {"lmdb": ["lmdb-sync", "lmdb-nosync"], "leveldb": ["leveldb-sync", "leveldb-nosync"]}
_runs = {}
_tmp = tempfile.mkdtemp(prefix="fdtest-bench-")


@T.teardown
def _cleanup():
    shutil.rmtree(_tmp, ignore_errors=True)


def built_in():
    """The backends compiled into the binary under test, from its own
    'unknown backend' message."""
    r = subprocess.run([frontdoor_bin(), "--backend", "no-such-backend", "--port", "0"],
                       capture_output=True, text=True, timeout=20, cwd=_tmp)
    m = re.search(r"built in: ([^)]*)\)", r.stdout + r.stderr)
    check(m, "frontdoor did not list its backends", r.stdout + r.stderr)
    return [b.strip() for b in m.group(1).split(",") if b.strip()]


def dead_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def bench(name, args):
    """Run bench/run once (cached by name); returns (out dir, results, stderr)."""
    if name in _runs:
        return _runs[name]
    out = os.path.join(_tmp, name)
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, RUN, "--quick", "--frontdoor", frontdoor_bin(), "--out", out,
                        "--data-root", _tmp] + args,
                       capture_output=True, text=True, timeout=110, stdin=subprocess.DEVNULL)
    print("      bench/run %s: exit %d in %.1f s" % (" ".join(args), r.returncode, time.monotonic() - t0))
    check(r.returncode == 0, "bench/run exited %d" % r.returncode, r.stderr[-3000:])
    with open(os.path.join(out, "results.json")) as f:
        res = json.load(f)
    _runs[name] = (out, res, r.stderr)
    return _runs[name]


def main_run():
    args = ["--backends", "lmdb,leveldb,redis,mongodb,redis-cluster,bogus",
            "--mongodb-uri", "mongodb://127.0.0.1:%d" % dead_port(),
            "--tests", "set,get,lrange_100", "-n", "3000", "-c", "10", "-P", "1,16"]
    return bench("main", args)


@T.case
def every_available_backend_has_rows():
    out, res, err = main_run()
    have = built_in()
    want = ["redis-direct"]
    for b in have:
        want += EMBEDDED.get(b, [b] if b in ("redis", "redis-cluster") else [])
    if "redis-cluster" in have:
        want.append("redis-cluster-direct")
    tests = {"set", "get", "lrange_100"}
    for t in want:
        eq(res["targets"][t]["status"], "ran", "status of %s (reason: %s)" % (t, res["targets"][t].get("reason")))
        ok = {(r["test"], r["setting"]) for r in res["runs"] if r["target"] == t and r["ok"] and r.get("rps") is not None}
        for setting in ("-P 1 -c 10", "-P 16 -c 10"):
            for test in tests:
                check((test, setting) in ok, "%s: no successful %s row at %s" % (t, test, setting),
                      [r.get("reason") for r in res["runs"] if r["target"] == t and not r["ok"]][:3])
    # the default scenario measures random keys (redis-benchmark -r 100000)
    for r in res["runs"]:
        eq(r["keyspace"], 100000, "keyspace of %s %s" % (r["target"], r["test"]))
        check("-r" in r["argv"] and r["argv"][r["argv"].index("-r") + 1] == "100000",
              "redis-benchmark argv lacks -r 100000", r["argv"])
    for r in res["runs"]:
        if r["ok"]:
            for k in ("p50_latency_ms", "p95_latency_ms", "p99_latency_ms", "p999_latency_ms", "max_latency_ms"):
                check(isinstance(r.get(k), (int, float)), "%s %s: %s missing" % (r["target"], r["test"], k))
            check(isinstance(r.get("server_cpu_s"), dict) and r["server_cpu_s"], "no server CPU for %s" % r["target"])
            # frontdoor's own view of its backend (INFO backends), on every frontdoor target
            if r["target"] not in ("redis-direct", "twemproxy", "redis-cluster-direct"):
                fs = r.get("frontdoor_split")
                check(fs and fs["calls"] >= 1 and fs["us_per_call"] >= fs["backend_us_per_call"] >= 0,
                      "no frontdoor_split for %s %s" % (r["target"], r["test"]), fs)


@T.case
def missing_backends_are_skipped_with_reason():
    out, res, err = main_run()
    tg = res["targets"]
    eq(tg["bogus"]["status"], "skipped")
    check("unknown target" in tg["bogus"]["reason"], "reason for bogus", tg["bogus"]["reason"])
    have = built_in()
    if "mongodb" in have:
        eq(tg["mongodb"]["status"], "skipped", "mongodb at a port where nothing listens")
        check("not reachable" in tg["mongodb"]["reason"], "reason for mongodb", tg["mongodb"]["reason"])
    else:
        check("not built" in tg["mongodb"]["reason"], "reason for mongodb", tg["mongodb"]["reason"])
    if "redis-cluster" not in have:
        eq(tg["redis-cluster"]["status"], "skipped")
        check("not built" in tg["redis-cluster"]["reason"], "reason for redis-cluster", tg["redis-cluster"]["reason"])
    # ... and visible in every output
    with open(os.path.join(out, "summary.md")) as f:
        md = f.read()
    with open(os.path.join(out, "report.html")) as f:
        page = f.read()
    for name, t in tg.items():
        if t["status"] == "skipped":
            check("%s: %s" % (name, t["reason"]) in md, "summary.md does not say why %s was skipped" % name)
            check(name in page and "skipped" in page, "report.html does not list %s as skipped" % name)
    check(not any(r["target"] in ("bogus",) for r in res["runs"]), "a skipped target has runs")


@T.case
def results_json_matches_schema():
    out, res, err = main_run()
    errs = schema.validate(res)
    check(not errs, "results.json does not match bench/results.schema.json", errs[:10])
    eq(res["schema"], "frontdoor-bench/2")
    v = res["environment"]["versions"]
    for k in ("frontdoor", "redis_server", "redis_benchmark", "lmdb", "leveldb", "libmongoc", "mongodb_server", "mongodb_emulator"):
        check(k in v, "environment.versions lacks " + k)
    # the validator does catch a broken document
    bad = json.loads(json.dumps(res))
    bad["runs"][0]["ok"] = "yes"
    del bad["environment"]["cpu_model"]
    eq(len(schema.validate(bad)), 2, "problems found in a broken copy")
    # an oracle that is not bench's own code: Debian's python3-jsonschema
    # (a full JSON Schema implementation) on the same schema file
    try:
        import jsonschema
    except ImportError:
        missing_prerequisite("python3-jsonschema (tests/setup-debian.sh --test)")
    with open(os.path.join(REPO, "bench", "results.schema.json")) as f:
        sch = json.load(f)
    jsonschema.Draft7Validator.check_schema(sch)
    v = jsonschema.Draft7Validator(sch)
    errs2 = ["%s: %s" % ("/".join(map(str, e.absolute_path)), e.message) for e in v.iter_errors(res)]
    eq(errs2, [], "results.json against results.schema.json (python3-jsonschema)")
    eq(len(list(v.iter_errors(bad))), 2, "python3-jsonschema's problems in the broken copy")


@T.case
def results_csv_has_the_same_rows():
    out, res, err = main_run()
    with open(os.path.join(out, "results.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    eq(len(rows), len(res["runs"]), "CSV rows vs runs")
    got = [(r["scenario"], r["target"], r["test"], r["setting"], int(r["repeat"]), r["ok"] == "1") for r in rows]
    want = [(r["scenario"], r["target"], r["test"], r["setting"], r["repeat"], r["ok"]) for r in res["runs"]]
    eq(got, want, "CSV rows")
    for r, j in zip(rows, res["runs"]):
        if j["ok"]:
            eq(float(r["rps"]), float(j["rps"]), "rps of %s %s" % (j["target"], j["test"]))


def sections(page):
    return re.findall(r"<section id='([^']+)'>(.*?)</section>", page, re.S)


@T.case
def html_has_a_chart_per_section_and_fetches_nothing():
    out, res, err = main_run()
    with open(os.path.join(out, "report.html")) as f:
        page = f.read()
    secs = dict(sections(page))
    for sid in ("glance", "default-rps", "default-lat", "default-ratio", "default-overhead", "default-res", "failures"):
        check(sid in secs, "report.html has no section " + sid, list(secs))
    for sid, body in secs.items():
        check("<svg" in body, "section %s has no chart" % sid)
    low = page.lower()
    for bad in ("<script", "<link", "<img", "<iframe", "@import", "url("):
        check(bad not in low, "report.html contains %s" % bad)
    check(not re.search(r"(src|href)=['\"]?(https?:)?//", low), "report.html refers to another site")
    check(os.path.getsize(os.path.join(out, "summary.md")) > 0, "empty summary.md")


@T.case
def growth_and_seed_scenarios_run():
    out, res, err = bench("growth", ["--backends", "lmdb-nosync", "--scenario", "seed-setget,growth",
                                     "--growth-keys", "200,400", "--growth-list", "1000,2000", "-n", "2000"])
    check(not schema.validate(res), "results.json schema", schema.validate(res)[:5])
    runs = [r for r in res["runs"] if r["target"] == "lmdb-nosync"]
    scen = {r["scenario"] for r in runs if r["ok"]}
    eq(sorted(scen), ["growth", "seed-setget"], "scenarios with successful rows")
    fills = [r for r in runs if r["test"] == "fill" and r["ok"]]
    eq([r["dataset_keys"] for r in fills], [200, 400], "dataset sizes filled")
    lists = {r["list_len"] for r in runs if r.get("list_len") and r["ok"]}
    eq(sorted(lists), [1000, 2000], "list lengths measured")
    with open(os.path.join(out, "report.html")) as f:
        secs = dict(sections(f.read()))
    for sid in ("growth-keys", "growth-list", "seed-setget-rps", "seed-setget-lat"):
        check(sid in secs and "<svg" in secs[sid], "no chart in section " + sid, list(secs))


@T.case
def frontdoor_base_runs_twins():
    # --frontdoor-base: every frontdoor target T also runs as T@base with the second binary
    out, res, err = bench("base", ["--backends", "lmdb-nosync", "--tests", "set", "-n", "2000", "-P", "16",
                                   "--frontdoor-base", frontdoor_bin()])
    check(not schema.validate(res), "results.json schema", schema.validate(res)[:5])
    ok = {r["target"] for r in res["runs"] if r["ok"]}
    eq(sorted(ok), ["lmdb-nosync", "lmdb-nosync@base", "redis-direct"], "targets with successful rows")
    r = subprocess.run([sys.executable, os.path.join(os.path.dirname(RUN), "ratios.py"), out],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 0 and "lmdb-nosync@base" in r.stdout and "| set |" in r.stdout,
          "ratios.py table", r.stdout + r.stderr)


@T.case
def default_run_carries_the_slo_table():
    # issue 31: a plain bench/run reports each target's p99<1ms rate (fdload-slo)
    # after the redis-benchmark suite; --quick keeps the default suite alone
    import importlib.machinery
    import types
    loader = importlib.machinery.SourceFileLoader("bench_run", RUN)
    mod = types.ModuleType(loader.name)
    mod.__file__ = RUN
    loader.exec_module(mod)
    fdl_bin = os.path.join(os.path.dirname(frontdoor_bin()), "fdload")
    a = mod.parse_args(["--frontdoor", frontdoor_bin(), "--fdload", fdl_bin])
    eq(a.scenarios, ["default", "fdload-slo"], "default scenarios")
    eq(a.slo, "p99<1ms", "default SLO")
    eq(mod.parse_args(["--quick", "--frontdoor", frontdoor_bin()]).scenarios, ["default"], "--quick scenarios")
    eq(mod.parse_args(["--scenario", "growth"]).scenarios, ["growth"], "an explicit --scenario")


if __name__ == "__main__":
    T.main()
