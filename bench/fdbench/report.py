"""From results.json: the figures every report shows (shared by summary.md
and report.html), results.csv rows, and summary.md itself."""
import math
import statistics

from . import fdl
from . import targets as T

BASE = "redis-direct"
PROXY = "twemproxy"
CBASE = "redis-cluster-direct"
CLUSTER_NOTE = ("redis-cluster-direct runs redis-benchmark --cluster --threads 1: without --threads its cluster mode "
                "starts one client thread per master (a different client from every other column) and counts ~0.25 s "
                "of their start-up in each test's time. Single node vs cluster: redis (frontdoor → one redis-server), "
                "redis-cluster (frontdoor → 3 masters), redis-cluster-direct (the client → 3 masters).")
ORDER = T.ALL_TARGETS
LAT = [("p50", "p50_latency_ms"), ("p95", "p95_latency_ms"), ("p99", "p99_latency_ms"),
       ("p99.9", "p999_latency_ms"), ("max", "max_latency_ms")]

CSV_COLUMNS = ["scenario", "target", "backend", "durability", "setting", "test", "repeat", "ok", "reason",
               "requests", "clients", "pipeline", "data_size", "keyspace", "dataset_keys", "list_len",
               "rps", "avg_ms", "min_ms", "p50_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms",
               "wall_s", "client_cpu_s", "proxy_cpu_s", "server_cpu_s", "proxy_cpu_pct", "server_cpu_pct",
               "proxy_rss_peak_kb", "server_rss_peak_kb", "proxy_rss_after_kb", "server_rss_after_kb",
               "data_disk_bytes"]


def _med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def _sum(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) if xs else None


def _split(d, proxy):
    """{role: v} -> (proxy roles' sum, server roles' sum)."""
    d = d or {}
    p = _sum([v for r, v in d.items() if r in T.PROXY_ROLES]) if proxy else None
    s = _sum([v for r, v in d.items() if r not in T.PROXY_ROLES])
    return p, s


def csv_rows(results):
    tinfo = results["targets"]
    for r in results["runs"]:
        t = tinfo.get(r["target"], {})
        has_proxy = t.get("kind") in ("frontdoor", "twemproxy")
        pc, sc = _split(r.get("server_cpu_s"), has_proxy)
        wall = r.get("wall_s")
        pk, sk = _split(r.get("rss_peak_during_kb"), has_proxy)
        after = {role: m.get("VmRSS") for role, m in (r.get("mem_kb_after") or {}).items()}
        pa, sa = _split(after, has_proxy)
        yield [r.get("scenario"), r["target"], t.get("backend") or "", t.get("durability") or "", r.get("setting"),
               r["test"], r.get("repeat"), int(bool(r.get("ok"))), r.get("reason") or "",
               r.get("requests"), r.get("clients"), r.get("pipeline"), r.get("data_size"), r.get("keyspace"),
               r.get("dataset_keys"), r.get("list_len"),
               r.get("rps"), r.get("avg_latency_ms"), r.get("min_latency_ms"), r.get("p50_latency_ms"),
               r.get("p95_latency_ms"), r.get("p99_latency_ms"), r.get("p999_latency_ms"), r.get("max_latency_ms"),
               wall, r.get("client_cpu_s"), pc, sc,
               round(100 * pc / wall, 1) if pc is not None and wall else None,
               round(100 * sc / wall, 1) if sc is not None and wall else None,
               pk, sk, pa, sa, r.get("data_disk_bytes")]


# ---- aggregation ------------------------------------------------------------

def scenarios_run(results):
    seen = []
    for r in results["runs"]:
        if r.get("scenario") not in seen:
            seen.append(r.get("scenario"))
    return seen


def ran(results, sc=None):
    """Targets with runs (in scenario sc), baselines first."""
    names = {r["target"] for r in results["runs"] if sc is None or r.get("scenario") == sc}
    return [n for n in ORDER if n in names] + sorted(n for n in names if n not in ORDER)


def settings_of(results, sc):
    out = []
    for r in results["runs"]:
        if r.get("scenario") == sc and r.get("setting") not in out:
            out.append(r.get("setting"))
    return out


def tests_of(results, sc, setting=None):
    out = []
    for r in results["runs"]:
        if r.get("scenario") == sc and (setting is None or r.get("setting") == setting) and r["test"] not in out:
            out.append(r["test"])
    return out


def aggregate(results, sc):
    """(target, test, setting) -> {'ok': [...runs], 'failed': [...runs]}."""
    cells = {}
    for r in results["runs"]:
        if r.get("scenario") != sc:
            continue
        c = cells.setdefault((r["target"], r["test"], r.get("setting")), {"ok": [], "failed": []})
        (c["ok"] if r["ok"] else c["failed"]).append(r)
    return cells


def requests_sent(r):
    """Requests in a run: every row redis-benchmark printed (LRANGE tests
    include their LPUSH phase)."""
    rows = r.get("rows") or []
    n = sum(x.get("requests") or 0 for x in rows)
    return n or r.get("requests") or 0


def stats(cell):
    if not cell or not cell["ok"]:
        return None
    ok = cell["ok"]
    rps = [r["rps"] for r in ok if r.get("rps")]
    if not rps:
        return None
    st = {"rps": _med(rps), "rps_min": min(rps), "rps_max": max(rps), "n": len(rps), "failed": len(cell["failed"])}
    for short, key in LAT:
        st[short] = _med([r.get(key) for r in ok])
    roles = {}
    for r in ok:
        n = requests_sent(r)
        for role, v in (r.get("server_cpu_s") or {}).items():
            if v is not None and n:
                roles.setdefault(role, []).append(v / n * 1e9)
    st["cpu_ns_per_req"] = {role: _med(v) for role, v in roles.items()}
    st["cpu_pct"] = {role: _med([(r.get("cpu_pct") or {}).get(role) for r in ok]) for role in roles}
    peaks = {}
    for r in ok:
        for role, v in (r.get("rss_peak_during_kb") or {}).items():
            peaks[role] = max(peaks.get(role, 0), v or 0)
    st["rss_peak_kb"] = peaks
    growth = {}
    for r in ok:
        n = r.get("requests") or 0
        for role, m in (r.get("mem_kb_after") or {}).items():
            b = ((r.get("mem_kb_before") or {}).get(role) or {}).get("VmRSS")
            if b is not None and m.get("VmRSS") is not None and n:
                growth.setdefault(role, []).append((m["VmRSS"] - b) * 1024.0 / n)
    st["rss_growth_b_per_req"] = {role: _med(v) for role, v in growth.items()}
    st["client_cpu_ns_per_req"] = _med([r.get("client_cpu_s", 0) / requests_sent(r) * 1e9 for r in ok if requests_sent(r)])
    st["disk"] = _med([r.get("data_disk_bytes") for r in ok])
    return st


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def ratio_matrix(results, sc, setting):
    """{(A, B): (geometric mean over tests of rps_A / rps_B, tests compared)}."""
    cells = aggregate(results, sc)
    names = ran(results, sc)
    tests = tests_of(results, sc, setting)
    out = {}
    for a in names:
        for b in names:
            rs = []
            for t in tests:
                sa, sb = stats(cells.get((a, t, setting))), stats(cells.get((b, t, setting)))
                if sa and sb:
                    rs.append(sa["rps"] / sb["rps"])
            out[(a, b)] = (geomean(rs), len(rs))
    return out


def vs(results, sc, setting, base):
    """{target: {test: ratio to base}} for one setting."""
    cells = aggregate(results, sc)
    out = {}
    for n in ran(results, sc):
        if n == base:
            continue
        row = {}
        for t in tests_of(results, sc, setting):
            a, b = stats(cells.get((n, t, setting))), stats(cells.get((base, t, setting)))
            row[t] = a["rps"] / b["rps"] if a and b else None
        out[n] = row
    return out


def resources(results, sc):
    """Per target: server CPU ns/req per role per setting, CPU %, peak RSS
    during the runs, VmHWM and RSS after each pass, data on disk."""
    cells = aggregate(results, sc)
    out = {}
    for n in ran(results, sc):
        row = {"cpu_ns_per_req": {}, "cpu_pct": {}}
        for s in settings_of(results, sc):
            total, pct, nreq = {}, {}, 0
            for t in tests_of(results, sc, s):
                c = cells.get((n, t, s))
                for r in (c or {}).get("ok", []):
                    nreq += requests_sent(r)
                    for role, v in (r.get("server_cpu_s") or {}).items():
                        if v is not None:
                            total[role] = total.get(role, 0.0) + v
                    for role, v in (r.get("cpu_pct") or {}).items():
                        if v is not None:
                            pct.setdefault(role, []).append(v)
            if nreq:
                row["cpu_ns_per_req"][s] = {role: v / nreq * 1e9 for role, v in total.items()}
                row["cpu_pct"][s] = {role: _med(v) for role, v in pct.items()}
        peaks = {}
        for r in results["runs"]:
            if r.get("scenario") == sc and r["target"] == n:
                for role, v in (r.get("rss_peak_during_kb") or {}).items():
                    peaks[role] = max(peaks.get(role, 0), v or 0)
        row["rss_peak_kb"] = peaks
        tsc = (results["targets"].get(n, {}).get("scenarios") or {}).get(sc) or {}
        fin = tsc.get("final") or {}
        row["hwm_kb"] = {role: m.get("VmHWM") for role, m in (fin.get("mem_kb") or {}).items()}
        row["rss_after_repeat"] = tsc.get("rss_after_repeat") or []
        row["disk"] = fin.get("data_disk_bytes")
        out[n] = row
    return out


def growth_series(results):
    """{'keys': {target: {test: [(keys, stats)]}}, 'list': {...}, 'fill': {target: [(keys, run)]}}."""
    out = {"keys": {}, "list": {}, "fill": {}}
    for r in results["runs"]:
        if r.get("scenario") != "growth":
            continue
        if r["test"] == "fill":
            out["fill"].setdefault(r["target"], []).append(r)
            continue
        kind = "keys" if r.get("dataset_keys") else "list"
        x = r.get("dataset_keys") or r.get("list_len")
        st = stats({"ok": [r], "failed": []}) if r["ok"] else None
        out[kind].setdefault(r["target"], {}).setdefault(r["test"], []).append((x, st, r))
    return out


# ---- targets from anchors.md, checked against this run -----------------------

# SSDB's ratio to direct Redis on the anchors' machine (anchors.md, k req/s):
# the LevelDB target is "1.5x SSDB at -P 1, 3x at -P 16"; SSDB is not run
# here, so it is compared through the ratio to direct Redis.
ANCHOR_SSDB = {  # test: (redis P1, ssdb P1, redis P16, ssdb P16)
    "set": (47, 29, 719, 42), "get": (48, 27, 725, 34), "incr": (48, 30, 676, 37),
    "lpush": (49, 28, 719, 38), "hset": (45, 27, 735, 48), "zadd": (48, 30, 781, 43),
}
ANCHOR_TESTS = ["set", "get", "incr", "lpush", "rpop", "sadd", "hset", "zadd", "lrange_100", "mset"]


def _setting_for(results, sc, p):
    for s in (results["settings"].get("plans", {}).get(sc) or {}).get("settings", []):
        if s["pipeline"] == p:
            return s["label"]
    return None


def glance(results):
    """[(target description, measured text, threshold text, verdict)] for
    anchors.md's targets; verdict: 'met', 'not met', 'not measured'."""
    sc = "default" if "default" in scenarios_run(results) else ("seed-suite" if "seed-suite" in scenarios_run(results) else None)
    out = []
    if not sc:
        return out, sc
    cells = aggregate(results, sc)

    def r(a, b, test, s):
        if s is None:
            return None
        x, y = stats(cells.get((a, test, s))), stats(cells.get((b, test, s)))
        return x["rps"] / y["rps"] if x and y else None

    s1, s16 = _setting_for(results, sc, 1), _setting_for(results, sc, 16)

    def add(what, val, thr, detail=""):
        if val is None:
            out.append((what, "–", f"≥ {thr:.2f}×", "not measured", detail))
        else:
            out.append((what, f"{val:.2f}×", f"≥ {thr:.2f}×", "met" if val >= thr else "not met", detail))

    add("LMDB GET vs direct Redis, -P 1", r("lmdb-nosync", BASE, "get", s1), 1.0)
    add("LMDB GET vs direct Redis, -P 16", r("lmdb-nosync", BASE, "get", s16), 0.8)
    add("LMDB SET (nosync) vs direct Redis, -P 1", r("lmdb-nosync", BASE, "set", s1), 0.8)
    for p, s, thr in ((1, s1, 1.0), (16, s16, 1.5)):
        vals = {t: r("redis", PROXY, t, s) for t in ANCHOR_TESTS}
        got = {t: v for t, v in vals.items() if v is not None}
        if got:
            worst = min(got, key=got.get)
            add(f"redis backend vs twemproxy, -P {p}, worst of {len(got)} tests", got[worst], thr,
                f"worst: {worst.upper()}" + (f"; missing: {', '.join(t for t in vals if t not in got)}" if len(got) < len(vals) else ""))
        else:
            add(f"redis backend vs twemproxy, -P {p}", None, thr)
    for p, s, thr, idx in ((1, s1, 1.5, (0, 1)), (16, s16, 3.0, (2, 3))):
        got = {}
        for t, a in ANCHOR_SSDB.items():
            v = r("leveldb-nosync", BASE, t, s)
            if v is not None:
                got[t] = v / (a[idx[1]] / a[idx[0]])
        if got:
            worst = min(got, key=got.get)
            add(f"LevelDB (nosync) vs SSDB, -P {p}, worst of {len(got)} tests (indirect)", got[worst], thr,
                f"worst: {worst.upper()}; SSDB not run here: its ratio to direct Redis from anchors.md")
        else:
            add(f"LevelDB vs SSDB, -P {p} (indirect)", None, thr)
    res = resources(results, sc)
    if BASE in res:
        base = _sum(res[BASE]["hwm_kb"].values())
        for n in ("lmdb-nosync", "leveldb-nosync", "redis"):
            if n in res:
                fd = res[n]["hwm_kb"].get("frontdoor")
                reps = [x.get("frontdoor") for x in res[n]["rss_after_repeat"] if x.get("frontdoor")]
                steady = reps[1:] if len(reps) > 2 else reps   # the first pass is warm-up
                flat = (max(steady) / min(steady)) if len(steady) > 1 else None
                tsc = (results["targets"].get(n, {}).get("scenarios") or {}).get(sc) or {}
                fm = ((tsc.get("final") or {}).get("mem_kb") or {}).get("frontdoor") or {}
                filed = fm.get("RssFile")
                if fd and base:
                    note = (f"RSS after each pass {' / '.join(f'{x / 1024:.1f}' for x in reps)} MB"
                            + (" (flat after the first pass)" if flat and flat < 1.2 else " (grows)" if flat else "")) if reps else ""
                    if filed:
                        note += f"; at the end {filed / 1024:.1f} MB of its RSS were file pages (RssFile: the binary, its libraries, mapped data files), {(fm.get('RssAnon') or 0) / 1024:.1f} MB anonymous"
                    out.append((f"frontdoor's peak RSS ({n}) below redis-server's", f"{fd / 1024:.1f} MB vs {base / 1024:.1f} MB",
                                "below", "met" if fd < base else "not met", note))
    return out, sc


# ---- summary.md ----------------------------------------------------------------

def _k(rps):
    return f"{rps / 1000:.1f}"


def _norm(reason):
    reason = " ".join(str(reason).split())
    return reason.split(", with args beginning with")[0]


def _short(reason, width=70):
    reason = _norm(reason)
    return reason if len(reason) <= width else reason[:width - 1] + "…"


def _esc(s):
    return str(s).replace("|", "\\|")


def rps_text(cell, st):
    if cell is None:
        return "–"
    total = len(cell["ok"]) + len(cell["failed"])
    if cell["failed"]:
        why = _short(cell["failed"][0]["reason"])
        if st is None:
            return f"FAILED ({_esc(why)})"
        return f"FAILED {len(cell['failed'])}/{total} ({_esc(why)}); ok runs {_k(st['rps'])}"
    if st is None:
        return "–"
    if st["n"] > 1:
        return f"{_k(st['rps'])} ({_k(st['rps_min'])}–{_k(st['rps_max'])})"
    return _k(st["rps"])


def _ms(v):
    if v is None:
        return "–"
    return f"{v:.2f}" if v < 10 else f"{v:.1f}" if v < 100 else f"{v:.0f}"


def _bytes(b):
    if b is None:
        return "–"
    if b < 1e6:
        return f"{b / 1e3:.0f} kB"
    return f"{b / 1e6:.1f} MB" if b < 1e9 else f"{b / 1e9:.2f} GB"


def _mb(kb):
    return f"{kb / 1024:.1f}" if kb is not None else "–"


def _roles(d, fmt, unit=""):
    d = {k: v for k, v in sorted((d or {}).items(), key=lambda kv: kv[0] not in T.PROXY_ROLES) if v is not None}
    if not d:
        return "–"
    tot = sum(d.values())
    if len(d) == 1:
        return fmt(tot) + unit
    return fmt(tot) + unit + " (" + " + ".join(f"{r} {fmt(v)}" for r, v in d.items()) + ")"


def short_name(n):
    return n


def env_lines(results):
    e = results["environment"]
    v = e["versions"]
    m = results["meta"]
    L = [f"- Command: `{m['command_line']}`",
         f"- Machine: {e['cpu_model']}, {e['nproc']} cores, {(e.get('mem_total_kb') or 0) / 1048576:.0f} GB RAM, "
         f"{e.get('os') or ''} Linux {e['kernel']}; load average {e['loadavg_start']} at start, {e.get('loadavg_end') or '?'} at the end; git {e.get('git') or '?'}",
         f"- Versions: {v.get('frontdoor') or 'frontdoor: not found'}"
         + (f" ({e.get('frontdoor_build')})" if e.get("frontdoor_build") else "")
         + f"; {v.get('redis_server') or 'redis-server: not installed'}; {v.get('redis_benchmark')}"
         + f"; LMDB {v.get('lmdb') or '?'}; LevelDB {v.get('leveldb_runtime') or v.get('leveldb') or '?'}; libmongoc {v.get('libmongoc') or '?'}"
         + f"; MongoDB server {v.get('mongodb_server') or 'not contacted'}"
         + (" — **an EMULATOR (tests/mongo/server.py): its figures are not MongoDB's**" if v.get("mongodb_emulator") else "")
         + (f"; {v['nutcracker']}" if v.get("nutcracker") else ""),
         f"- Data folders on {m.get('data_fs')} ({m.get('data_root')})"
         + (" — **tmpfs: fsync costs nothing here, sync figures are not disk figures**" if m.get("data_fs") == "tmpfs" else ""),
         "- Durability: redis-server (direct, behind twemproxy, behind frontdoor, cluster nodes) runs without persistence "
         "(save \"\", appendonly no); frontdoor `sync` fsyncs every group commit before replying, `nosync` does not; "
         "mongodb: the write concern named in its description.",
         "- Client (redis-benchmark), proxies and servers share the same "
         f"{e['nproc']} cores: at -P 1 the client itself needs about a core, so P1 figures are partly client-bound. "
         "Compare only figures from this run: run-to-run spread is ~10 %, more for proxies."]
    return L


def render(results):
    meta = results["meta"]
    L = [f"# frontdoor self-benchmark — {meta['started_utc']}", ""]
    if meta.get("interrupted"):
        L += [f"**Interrupted** ({meta['interrupted']}): the figures below are the runs that finished.", ""]
    if meta.get("error"):
        L += [f"**Error**: {meta['error']}", ""]
    L += env_lines(results)
    tg = results["targets"]
    ranx = [n for n, t in tg.items() if t.get("status") == "ran"]
    L.append("- Ran: " + (", ".join(f"{n} ({tg[n].get('describe')})" for n in ranx) or "nothing"))
    skipped = {n: t for n, t in tg.items() if t.get("status") != "ran"}
    if skipped:
        L.append("- Skipped:")
        for n, t in skipped.items():
            L.append(f"  - {n}: {t.get('reason')}")
    L.append("")
    gl, gsc = glance(results)
    if gl:
        L += ["## At a glance: frontdoor's targets (anchors.md)", "",
              f"From the `{gsc}` scenario of this run; ratios are median requests/s over median requests/s, same test, same setting.", "",
              "| target | measured | wanted | verdict | note |", "|---|---|---|---|---|"]
        for what, val, thr, verdict, note in gl:
            L.append(f"| {what} | {val} | {thr} | **{verdict}** | {_esc(note)} |")
        L.append("")
    for sc in scenarios_run(results):
        L += scenario_md(results, sc)
    fails = [r for r in results["runs"] if not r["ok"]]
    if fails:
        L += [f"## Failed runs ({len(fails)} of {len(results['runs'])})", ""]
        groups = {}
        for r in fails:
            groups.setdefault(_norm(r.get("reason")), []).append(r)
        for reason, rs in groups.items():
            tgs = ", ".join(dict.fromkeys(r["target"] for r in rs))
            ts = ", ".join(dict.fromkeys(r["test"].upper() for r in rs))
            cf = ", ".join(dict.fromkeys(f"{r['scenario']} [{r.get('setting')}]" for r in rs))
            L.append(f"- {_esc(reason)} — {tgs}: {ts} ({cf}; {len(rs)} run{'s' if len(rs) > 1 else ''})")
        L.append("")
    L.append("Raw runs: `results.json` and `results.csv` beside this file; charts: `report.html`.")
    return "\n".join(L) + "\n"


def plan_text(results, sc):
    """What actually ran in a scenario (after --quick and overrides)."""
    plan = (results["settings"].get("plans") or {}).get(sc) or {}
    sets = plan.get("settings") or []
    if not sets:
        return ""
    if sc in fdl.SCENARIOS:
        return fdl.plan_text(plan)
    def uniq(k):
        return list(dict.fromkeys(s.get(k) for s in sets))
    parts = [f"-n {'/'.join(str(x) for x in uniq('requests'))}",
             f"-c {'/'.join(str(x) for x in uniq('clients'))}",
             f"-P {'/'.join(str(x) for x in uniq('pipeline'))}"]
    d, r = uniq("data_size"), uniq("keyspace")
    parts.append(f"-d {'/'.join(str(x) for x in d)}" if d != [None] else "3-byte values")
    parts.append(f"-r {'/'.join(str(x) for x in r)}" if r != [None] else "no -r (one key per test)")
    reps = plan.get("repeats", 1)
    return (f"As run: {', '.join(parts)}; {len(plan.get('tests') or [])} tests; "
            f"{reps} repeat{'s' if reps > 1 else ''} (cells: median" + (", min–max" if reps > 1 else "") + ").")


def scenario_md(results, sc):
    plan = (results["settings"].get("plans") or {}).get(sc) or {}
    L = [f"## Scenario `{sc}`", "", plan.get("description", "") + ". " + plan_text(results, sc), ""]
    if sc == "growth":
        return L + growth_md(results)
    cells = aggregate(results, sc)
    names = ran(results, sc)
    reps = plan.get("repeats", 1)
    L.append(f"Thousands of requests/s, median of {reps}" + (" (min–max)" if reps > 1 else "") +
             "; `· N×`: ratio to redis-direct, same test and setting.")
    L.append("")
    if CBASE in names:
        L += [CLUSTER_NOTE, ""]
    for s in settings_of(results, sc):
        tests = tests_of(results, sc, s)
        L += [f"### Throughput, {s}", ""]
        head = ["test"] + names
        L += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for t in tests:
            row = [t.upper()]
            for n in names:
                c = cells.get((n, t, s))
                st = stats(c)
                txt = rps_text(c, st)
                if st and n != BASE:
                    b = stats(cells.get((BASE, t, s)))
                    if b:
                        txt += f" · {st['rps'] / b['rps']:.2f}×"
                row.append(txt)
            L.append("| " + " | ".join(row) + " |")
        L += ["", f"### Latency ms (p50 / p99 / p99.9 / max), {s}", ""]
        L += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for t in tests:
            row = [t.upper()]
            for n in names:
                st = stats(cells.get((n, t, s)))
                row.append(" / ".join(_ms(st[k]) for k in ("p50", "p99", "p99.9", "max")) if st else "–")
            L.append("| " + " | ".join(row) + " |")
        L.append("")
        rm = ratio_matrix(results, sc, s)
        L += [f"### Ratios, {s}: row is N× column (geometric mean over the tests both ran)", ""]
        L += ["| A \\ B | " + " | ".join(names) + " |", "|" + "---|" * (len(names) + 1)]
        for a in names:
            L.append(f"| {a} | " + " | ".join("–" if a == b or rm[(a, b)][0] is None else f"{rm[(a, b)][0]:.2f}×" for b in names) + " |")
        L.append("")
    if sc == "seed-perop":
        L += perop_md(results, sc)
    L += split_md(results, sc)
    res = resources(results, sc)
    L += ["### Resources", "",
          "Server CPU: utime+stime of each server process over the successful runs, µs per request (LRANGE tests count their LPUSH phase); "
          "CPU %: median over the runs of CPU seconds ÷ wall seconds (100 % = one core); peak RSS: highest VmRSS sampled every 0.1 s during the runs; "
          "RSS after each pass over the tests; data on disk at the end.", ""]
    sets = settings_of(results, sc)
    head = ["target"] + [f"CPU µs/req [{s}]" for s in sets] + [f"CPU % [{s}]" for s in sets] + ["peak RSS MB", "RSS MB after each pass", "data on disk"]
    L += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for n in names:
        r = res[n]
        row = [n]
        row += [_roles(r["cpu_ns_per_req"].get(s), lambda v: f"{v / 1000:.1f}") for s in sets]
        row += [_roles(r["cpu_pct"].get(s), lambda v: f"{v:.0f}") for s in sets]
        row.append(_roles(r["rss_peak_kb"], _mb))
        row.append(" / ".join(_mb(sum(v for v in x.values() if v)) for x in r["rss_after_repeat"]) or "–")
        row.append(_bytes(r["disk"]))
        L.append("| " + " | ".join(row) + " |")
    L.append("")
    if sc in fdl.SCENARIOS:
        L += fdl.scenario_md(results, sc)
    return L


def split_md(results, sc):
    """frontdoor's own view (INFO backends): per backend call, how the time
    from hand-over to reply divides between waiting on the backend and
    frontdoor's own work. Medians over the successful runs."""
    cells = {}
    for r in results["runs"]:
        if r["scenario"] == sc and r["ok"] and r.get("frontdoor_split"):
            cells.setdefault((r["target"], r["setting"]), []).append(r["frontdoor_split"])
    if not cells:
        return []
    L = ["### Inside frontdoor (its INFO backends counters)", "",
         "Per backend call, median over the runs: µs from hand-over to the backend until the reply is ready; "
         "of which waiting on the backend (an embedded store: its own work, on the loop) and frontdoor's own part "
         "(encoding, queueing, placing the reply). Client-side latency adds parsing, the loop turn and the network.", "",
         "| target | setting | µs per call | waiting on backend | frontdoor |", "|---|---|---|---|---|"]
    for (t, st), xs in sorted(cells.items()):
        L.append(f"| {t} | {st} | {_med([x['us_per_call'] for x in xs]):.1f} | "
                 f"{_med([x['backend_us_per_call'] for x in xs]):.1f} | {_med([x['frontdoor_us_per_call'] for x in xs]):.2f} |")
    L.append("")
    return L


def perop_md(results, sc):
    cells = aggregate(results, sc)
    names = ran(results, sc)
    L = ["### Per operation", "",
         "ns/op: 10⁹ ÷ requests/s at one client (at -P 1 that is the full round trip: client, kernel, proxy, server); "
         "server CPU ns/op: the server processes' CPU per request; RSS growth: (RSS after − RSS before) ÷ requests, "
         "the memory each request left behind (writes to new keys), per process. CPU times come in 10 ms clock ticks: short runs show steps.", ""]
    for s in settings_of(results, sc):
        head = ["test"] + names
        L += [f"#### {s}: ns/op · server CPU ns/op · RSS growth B/op", "",
              "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for t in tests_of(results, sc, s):
            row = [t.upper()]
            for n in names:
                st = stats(cells.get((n, t, s)))
                if not st:
                    row.append("–")
                    continue
                cpu = sum(v for v in st["cpu_ns_per_req"].values() if v is not None)
                gr = _roles(st["rss_growth_b_per_req"], lambda v: f"{v:.0f}")
                row.append(f"{1e9 / st['rps']:,.0f} · {cpu:,.0f} · {gr}")
            L.append("| " + " | ".join(row) + " |")
        L.append("")
    return L


def growth_md(results):
    g = growth_series(results)
    gp = results["settings"].get("growth") or {}
    L = [f"Fill: `SET key:%012d` with {gp.get('data_size')}-byte values from a pipelined client; at each size, "
         f"redis-benchmark -n {gp.get('measure_requests')} -c {gp.get('clients')} -P {gp.get('pipeline')} -r SIZE "
         "(random keys over the whole dataset). List: `RPUSH fdbench:list` by redis-benchmark up to each length, then "
         "LRANGE of the head and the tail and LINDEX of the middle. A target stops growing when a step exceeds "
         f"{gp.get('budget_s')} s or fails (it bends there).", ""]
    names = sorted(set(g["keys"]) | set(g["fill"]), key=lambda n: ORDER.index(n) if n in ORDER else 99)
    if names:
        L += ["| target | keys | fill k keys/s | GET k/s (p99 ms) | SET k/s (p99 ms) | RSS MB | data on disk |", "|---|---|---|---|---|---|---|"]
        for n in names:
            for f in g["fill"].get(n, []):
                k = f.get("keyspace")
                row = [n, f"{k:,}", (_k(f['rps']) if f.get("rps") else "–") + ("" if f["ok"] else f" ({_short(f['reason'], 50)})")]
                for test in ("get", "set"):
                    pts = [p for p in g["keys"].get(n, {}).get(test, []) if p[0] == k]
                    if pts and pts[0][1]:
                        row.append(f"{_k(pts[0][1]['rps'])} ({_ms(pts[0][1]['p99'])})")
                    elif pts:
                        row.append(f"FAILED ({_short(pts[0][2].get('reason'), 40)})")
                    else:
                        row.append("–")
                mem = {role: m.get("VmRSS") for role, m in (f.get("mem_kb_after") or {}).items()}
                row += [_roles(mem, _mb), _bytes(f.get("data_disk_bytes"))]
                L.append("| " + " | ".join(row) + " |")
        L.append("")
    lnames = sorted(g["list"], key=lambda n: ORDER.index(n) if n in ORDER else 99)
    if lnames:
        tests = []
        for n in lnames:
            for t in g["list"][n]:
                if t not in tests:
                    tests.append(t)
        L += ["| target | list length | " + " | ".join(f"{t} k/s (p99 ms)" for t in tests) + " |", "|---|---|" + "---|" * len(tests)]
        lens = sorted({p[0] for n in lnames for t in g["list"][n].values() for p in t})
        for n in lnames:
            for x in lens:
                row = [n, f"{x:,}"]
                for t in tests:
                    pts = [p for p in g["list"][n].get(t, []) if p[0] == x]
                    if pts and pts[0][1]:
                        row.append(f"{_k(pts[0][1]['rps'])} ({_ms(pts[0][1]['p99'])})")
                    elif pts:
                        row.append(f"FAILED ({_short(pts[0][2].get('reason'), 40)})")
                    else:
                        row.append("–")
                L.append("| " + " | ".join(row) + " |")
        L.append("")
    stopped = gp.get("stopped") or {}
    if stopped:
        L += ["Where targets stopped:", ""] + [f"- {k}: {v}" for k, v in stopped.items()] + [""]
    return L
