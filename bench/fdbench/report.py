"""report.md from results.json: one table per (pipeline, clients, durability)
plus resources, failures and skipped targets."""
import statistics

BASE = "redis-direct"
PROXY = "twemproxy"


def _k(rps):
    return f"{rps / 1000:.1f}"


def _med(xs):
    return statistics.median(xs) if xs else None


def _norm(reason):
    """The reason without the per-run detail, so equal causes group."""
    reason = " ".join(str(reason).split())
    return reason.split(", with args beginning with")[0]


def _short(reason, width=70):
    reason = _norm(reason)
    return reason if len(reason) <= width else reason[:width - 1] + "…"


def _esc(s):
    return str(s).replace("|", "\\|")


def aggregate(results):
    """(target, test, P, c) -> {'ok': [...runs], 'failed': [...runs]}."""
    cells = {}
    for r in results["runs"]:
        key = (r["target"], r["test"], r["pipeline"], r["clients"])
        c = cells.setdefault(key, {"ok": [], "failed": []})
        (c["ok"] if r["ok"] else c["failed"]).append(r)
    return cells


def _cell_stats(cell):
    if not cell or not cell["ok"]:
        return None
    rps = [r["rps"] for r in cell["ok"]]
    return {"rps": _med(rps), "min": min(rps), "max": max(rps),
            "p50": _med([r["p50_latency_ms"] for r in cell["ok"]]),
            "p99": _med([r["p99_latency_ms"] for r in cell["ok"]]),
            "n": len(rps)}


def _rps_text(cell, st):
    if cell is None:
        return "–"
    total = len(cell["ok"]) + len(cell["failed"])
    if cell["failed"]:
        why = _short(cell["failed"][0]["reason"])
        if st is None:
            return f"FAILED ({_esc(why)})"
        return f"FAILED {len(cell['failed'])}/{total} ({_esc(why)}); ok runs {_k(st['rps'])}"
    if st["n"] > 1:
        return f"{_k(st['rps'])} ({_k(st['min'])}–{_k(st['max'])})"
    return _k(st["rps"])


def _ratio(a, b):
    if a is None or b is None or not b["rps"]:
        return "–"
    return f"{a['rps'] / b['rps']:.2f}×"


def _ran(results):
    """Targets that ran, baseline first, then twemproxy, then as asked."""
    ran = [n for n, t in results["targets"].items() if t.get("status") == "ran"]
    return sorted(ran, key=lambda n: (n != BASE, n != PROXY))


def _configs(results):
    s = results["settings"]
    return [(p, c) for p in s["pipelines"] for c in s["clients"]]


def tables(results):
    cells = aggregate(results)
    ran = _ran(results)
    tinfo = results["targets"]
    durs = []
    for n in ran:
        d = tinfo[n].get("durability")
        if d and d not in durs:
            durs.append(d)
    if not durs:
        durs = [None]
    out = []
    for (p, c) in _configs(results):
        for d in durs:
            cols = [n for n in ran if tinfo[n].get("durability") in (None, d)]
            if not cols:
                continue
            title = f"### -P {p}, -c {c}" + (f", durability {d}" if d else "")
            head = ["test"]
            for n in cols:
                head += [f"{n} k req/s", f"{n} p50/p99 ms"]
                if n != BASE and BASE in cols:
                    head.append(f"{n} vs direct")
                if n not in (BASE, PROXY) and PROXY in cols:
                    head.append(f"{n} vs twemproxy")
            lines = [title, "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            for test in results["settings"]["tests"]:
                row = [test.upper()]
                stats = {n: _cell_stats(cells.get((n, test, p, c))) for n in cols}
                for n in cols:
                    cell = cells.get((n, test, p, c))
                    st = stats[n]
                    row.append(_rps_text(cell, st))
                    row.append(f"{st['p50']:.2f} / {st['p99']:.2f}" if st else "–")
                    if n != BASE and BASE in cols:
                        row.append(_ratio(st, stats[BASE]))
                    if n not in (BASE, PROXY) and PROXY in cols:
                        row.append(_ratio(st, stats[PROXY]))
                lines.append("| " + " | ".join(row) + " |")
            out.append("\n".join(lines))
    return out


def _bytes(b):
    if b < 1e6:
        return f"{b / 1e3:.0f} kB"
    return f"{b / 1e6:.1f} MB" if b < 1e9 else f"{b / 1e9:.2f} GB"


def _mb(kb):
    return f"{kb / 1024:.1f}"


def resources(results):
    ran = _ran(results)
    if not ran:
        return ""
    n_req = results["settings"]["requests"]
    head = ["target"]
    cfgs = _configs(results)
    for (p, c) in cfgs:
        head.append(f"server CPU µs/req (-P {p} -c {c})")
    head += ["client CPU µs/req", "peak RSS MB (VmHWM)", "RSS MB after each pass", "data on disk"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in ran:
        runs = [r for r in results["runs"] if r["target"] == name and r["ok"]]
        row = [name]
        for (p, c) in cfgs:
            rr = [r for r in runs if r["pipeline"] == p and r["clients"] == c]
            reqs = sum(n_req * max(1, len(r.get("rows", []))) for r in rr)
            if not reqs:
                row.append("–")
                continue
            per_role = {}
            for r in rr:
                for role, s in (r.get("server_cpu_s") or {}).items():
                    if s is not None:
                        per_role[role] = per_role.get(role, 0.0) + s
            tot = sum(per_role.values()) / reqs * 1e6
            txt = f"{tot:.1f}"
            if len(per_role) > 1:
                txt += " (" + " + ".join(f"{role} {v / reqs * 1e6:.1f}" for role, v in per_role.items()) + ")"
            row.append(txt)
        reqs = sum(n_req * max(1, len(r.get("rows", []))) for r in runs)
        ccpu = sum(r.get("client_cpu_s", 0) for r in runs)
        row.append(f"{ccpu / reqs * 1e6:.1f}" if reqs else "–")
        t = results["targets"][name]
        fin = t.get("final") or {}
        mem = fin.get("mem_kb") or {}
        hwm = {role: m.get("VmHWM") for role, m in mem.items() if m.get("VmHWM") is not None}
        if hwm:
            txt = _mb(sum(hwm.values()))
            if len(hwm) > 1:
                txt += " (" + " + ".join(f"{role} {_mb(v)}" for role, v in hwm.items()) + ")"
            row.append(txt)
        else:
            row.append("–")
        reps = t.get("rss_after_repeat") or []
        row.append(" / ".join(_mb(sum(v for v in x.values() if v)) for x in reps) or "–")
        disk = fin.get("data_disk_bytes")
        row.append(_bytes(disk) if disk is not None else "–")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def render(results):
    m = results["machine"]
    s = results["settings"]
    meta = results["meta"]
    ran = _ran(results)
    skipped = {n: t for n, t in results["targets"].items() if t.get("status") != "ran"}
    L = []
    L.append(f"# frontdoor self-benchmark — {meta['started_utc']}")
    L.append("")
    if meta.get("interrupted"):
        L.append(f"**Interrupted** ({meta['interrupted']}): the figures below are the runs that finished.")
        L.append("")
    L.append(f"- Command: `{meta['command_line']}`")
    L.append(f"- Machine: {m['cpu_model']}, {m['nproc']} cores (nproc), Linux {m['kernel']}, "
             f"load average at start {m['loadavg_start']}, git {m.get('git', '?')}")
    L.append(f"- {m['redis_benchmark']}; {m['redis_server']}; frontdoor: {m.get('frontdoor_version') or 'not found'}"
             + (f" ({m['frontdoor_path']}" + (f", {m['frontdoor_build']}" if m.get("frontdoor_build") else "") + ")"
                if m.get("frontdoor_path") else "")
             + (f"; {m['nutcracker']}" if m.get("nutcracker") else ""))
    extra = "".join(f" {k} {v}" for k, v in (("-d", s.get("data_size")), ("-r", s.get("keyspace"))) if v is not None)
    L.append(f"- Load: stock `redis-benchmark --csv`, one `-t` test per invocation, -n {s['requests']}, "
             f"-c {','.join(map(str, s['clients']))}, -P {','.join(map(str, s['pipelines']))}{extra}; "
             f"{s['repeats']} repeat{'s' if s['repeats'] > 1 else ''}, targets interleaved per test and repeat; cells show the median"
             + (" (min–max)" if s["repeats"] > 1 else "") + " in thousands of requests/s.")
    L.append("- Client (redis-benchmark), proxies and servers share the same "
             f"{m['nproc']} cores: at -P 1 the client itself needs about a core, so P1 figures are partly client-bound.")
    L.append("- Compare only figures from the same run (this report): run-to-run spread is ~10%, more for proxies.")
    L.append("- redis-server (direct and behind twemproxy) runs without persistence (save \"\", appendonly no); "
             "frontdoor `sync` fsyncs every group commit, `nosync` does not.")
    L.append(f"- Data folders on {results['meta']['data_fs']} ({results['meta']['data_root']})"
             + (" — **tmpfs: fsync costs nothing here, sync figures are not disk figures**" if results['meta']['data_fs'] == "tmpfs" else ""))
    desc = ", ".join(f"{n} ({results['targets'][n]['describe']})" for n in ran) or "nothing"
    L.append(f"- Ran: {desc}")
    if skipped:
        L.append("- Skipped:")
        for n, t in skipped.items():
            L.append(f"  - {n}: {t.get('reason')}")
    L.append("")
    if ran:
        L.append("## Requests per second")
        L.append("")
        L.append("`vs direct` / `vs twemproxy`: this target's median requests/s divided by that target's, same test, same table. "
                 "`FAILED (reason)`: redis-benchmark reported a server error, exited non-zero, timed out or printed no result.")
        L.append("")
        for t in tables(results):
            L.append(t)
            L.append("")
        L.append("## Resources")
        L.append("")
        L.append("Server CPU: utime+stime of the server processes (/proc/PID/stat) over the successful runs, per request sent. "
                 "Client CPU: redis-benchmark's. RSS from /proc/PID/status after each pass over the tests (one per repeat and -P/-c setting); peak = VmHWM at the end.")
        L.append("")
        L.append(resources(results))
        L.append("")
    fails = [r for r in results["runs"] if not r["ok"]]
    if fails:
        L.append(f"## Failed runs ({len(fails)} of {len(results['runs'])})")
        L.append("")
        groups = {}
        for r in fails:
            groups.setdefault(_norm(r["reason"]), []).append(r)
        for reason, rs in groups.items():
            tg = ", ".join(dict.fromkeys(r["target"] for r in rs))
            ts = ", ".join(dict.fromkeys(r["test"].upper() for r in rs))
            cf = ", ".join(dict.fromkeys(f"-P {r['pipeline']} -c {r['clients']}" for r in rs))
            L.append(f"- {_esc(reason)} — {tg}: {ts} ({cf}; {len(rs)} run{'s' if len(rs) > 1 else ''})")
        L.append("")
    L.append("Raw runs, machine and versions: `results.json` beside this file.")
    return "\n".join(L) + "\n"
