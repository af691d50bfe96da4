"""fdload scenarios for bench/run: open-loop mixes at fixed rates (latency
vs offered rate), SLO search (the highest rate under a percentile limit) and
the replay of a capture, on every target. One fdload run returns the same
dict shape as rb.run (ok, reason, rps, latencies, wall/client CPU, peak RSS)
plus "fdload": the parts of fdload's --json the report draws (timeline, SLO
steps, dropped requests)."""
import json
import os
import shutil
import subprocess

from . import procs, rb

SCENARIOS = ("fdload-mix", "fdload-slo", "fdload-replay")


def find_fdload(frontdoor_path, given=None):
    """--fdload, else fdload beside the frontdoor binary (the same build), else PATH."""
    if given:
        return os.path.abspath(given)
    if frontdoor_path:
        cand = os.path.join(os.path.dirname(os.path.abspath(frontdoor_path)), "fdload")
        if os.access(cand, os.X_OK):
            return cand
    return shutil.which("fdload")


def plan(name, a):
    """(tests, settings, repeats) for an fdload scenario; a setting is one
    fdload invocation's options (the label is what the report shows)."""
    quick = a.quick
    dur = a.fdload_duration or (2 if quick else 10)
    keys = a.fdload_keys or (10000 if quick else 100000)
    c = (a.c or [50])[0]
    # requests: what the plan knows beforehand (rate x duration; 1 = decided by fdload: SLO steps, the capture)
    base = {"requests": 1, "clients": c, "pipeline": 1, "data_size": a.d if a.d is not None else 100,
            "keyspace": keys, "duration": dur, "mix": a.fdload_mix, "dist": a.fdload_dist}
    reps = a.repeats or (1 if quick else 3)
    if name == "fdload-mix":
        rates = a.rates or ([1000, 5000] if quick else [1000, 5000, 20000, 50000])
        settings = [dict(base, rate=r, requests=r * dur, label=f"{r}/s") for r in rates]
        return ["mix"], settings, reps
    if name == "fdload-slo":
        step = 1 if quick else 5
        return [f"slo {a.slo}"], [dict(base, slo=a.slo, slo_step=step, label="bisection")], reps
    if name == "fdload-replay":
        label = f"speed {a.speed}"
        return [f"replay {os.path.basename(a.replay or '?')}"], [dict(base, replay=a.replay, speed=a.speed, label=label)], reps
    raise ValueError(name)


def plan_text(plan):
    """What an fdload scenario ran, for the report's header line."""
    s = (plan.get("settings") or [{}])[0]
    reps = plan.get("repeats", 1)
    tail = f"; {reps} repeat{'s' if reps > 1 else ''} (cells: median" + (", min–max" if reps > 1 else "") + ")."
    if s.get("replay"):
        return f"As run: fdload --replay {s['replay']} --speed {s['speed']}" + tail
    common = f"-c {s.get('clients')} --mix {s.get('mix')} --dist {s.get('dist')} --keys {s.get('keyspace')} -d {s.get('data_size')} (filled first)"
    if s.get("slo"):
        return f"As run: fdload --slo '{s['slo']}' --slo-step {s['slo_step']} {common}" + tail
    rates = ", ".join(str(x.get("rate")) for x in plan.get("settings") or [])
    return f"As run: fdload --rate R --duration {s.get('duration')} --drop-late {common}, R = {rates}/s" + tail


def tls_args(tls):
    """fdload's flags for targets.make_tls()'s dict (None: plain)."""
    return ["--tls", "--cacert", tls["ca"]] if tls else []


def argv_for(fdload, port, setting, emulator_rate_cap=None, tls=None):
    s = setting
    argv = [fdload, "-p", str(port), "-c", str(s["clients"]), "--json", "-", "-q", "--no-progress", *tls_args(tls)]
    if s.get("replay"):
        return argv + ["--replay", s["replay"], "--speed", str(s["speed"])]
    argv += ["--mix", s["mix"], "--dist", s["dist"], "--keys", str(s["keyspace"]), "-d", str(s["data_size"])]
    if s.get("slo"):
        return argv + ["--slo", s["slo"], "--slo-step", str(s["slo_step"])]
    return argv + ["--rate", str(s["rate"]), "--duration", str(s["duration"]), "--drop-late", "--drain-timeout", "10"]


def fill(fdload, port, setting, timeout_s, tls=None):
    """SET every key of the scenario's key space once (not measured)."""
    argv = [fdload, "-p", str(port), *tls_args(tls), "-c", "8", "--fill", "--keys", str(setting["keyspace"]), "-d", str(setting["data_size"]),
            "-n", "1", "--mix", "ping", "-q", "--no-progress"]
    try:
        r = subprocess.run(argv, capture_output=True, timeout=timeout_s, preexec_fn=procs._child_setup)
        return None if r.returncode == 0 else (r.stderr.decode(errors="replace").strip()[-300:] or f"exit {r.returncode}")
    except subprocess.TimeoutExpired:
        return f"fill not done within {timeout_s} s"


def run(fdload, port, setting, timeout_s, pids=None, tls=None):
    """One fdload run; the dict measure() expects from rb.run."""
    argv = argv_for(fdload, port, setting, tls=tls)
    rc, out, err, res = rb.run_client(argv, timeout_s, pids)
    err = err.decode("utf-8", "replace")
    try:
        j = json.loads(out)
    except ValueError:
        j = None
    if rc in (124, 137, -9):
        res["reason"] = f"timed out after {int(timeout_s)} s"
    elif rc != 0 or j is None:
        tail = [ln for ln in err.splitlines() if ln.strip()]
        res["reason"] = f"fdload exit {rc}" + (f": {tail[-1][:300]}" if tail else "")
    else:
        lat = j["latency_ms"]
        res.update({"rps": round(j["slo"]["max_rate"] if setting.get("slo") else j["throughput"], 2),
                    "avg_latency_ms": lat["mean"], "min_latency_ms": lat["min"], "p50_latency_ms": lat["p50"],
                    "p95_latency_ms": None, "p99_latency_ms": lat["p99"], "p999_latency_ms": lat["p99.9"],
                    "max_latency_ms": lat["max"]})
        res["fdload"] = {k: j.get(k) for k in ("mode", "rate", "requests", "errors", "dropped", "unanswered", "first_error",
                                               "seconds", "throughput", "latency_ms", "latency_from", "commands", "timeline", "slo",
                                               "records", "skipped")}
        planned = j["requests"] + j.get("dropped", 0)
        if j["errors"]:
            res["warnings"].append(f"{j['errors']} error replies, first: {j['first_error']}")
        if j.get("unanswered"):
            res["reason"] = f"{j['unanswered']} requests unanswered"
        elif planned and j["errors"] > planned / 100:
            res["reason"] = f"{j['errors']} of {planned} requests answered with an error, first: {j['first_error']}"
        else:
            res["ok"] = True
        res["requests"] = j["requests"]
    if not res["ok"]:
        res["stderr_tail"] = err[-2000:]
    return res


# ------------------------------------------------------------------ report

def _runs(results, sc):
    return [r for r in results["runs"] if r.get("scenario") == sc and r.get("ok") and r.get("fdload")]


def _med(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


def rate_curves(results):
    """fdload-mix: {target: [(offered rate, median achieved, median p50, median p99, dropped)]}."""
    by = {}
    for r in _runs(results, "fdload-mix"):
        by.setdefault(r["target"], {}).setdefault(r["fdload"]["rate"], []).append(r)
    out = {}
    for t, rates in by.items():
        out[t] = [(rate, _med([x["rps"] for x in rs]), _med([x["p50_latency_ms"] for x in rs]),
                   _med([x["p99_latency_ms"] for x in rs]), _med([x["fdload"].get("dropped") or 0 for x in rs]))
                  for rate, rs in sorted(rates.items())]
    return out


def timelines(results, sc="fdload-mix"):
    """Per target: the timeline of its run at the highest rate (first repeat)."""
    out = {}
    for r in _runs(results, sc):
        cur = out.get(r["target"])
        if cur is None or (r["fdload"].get("rate") or 0) > (cur["fdload"].get("rate") or 0):
            out[r["target"]] = r
    return {t: (r["fdload"].get("rate"), r["fdload"].get("timeline") or []) for t, r in out.items()}


def slo_steps(results):
    """fdload-slo: {target: [(rate, pQ ms, pass)] of every repeat's steps} and the medians."""
    steps, best = {}, {}
    for r in _runs(results, "fdload-slo"):
        s = r["fdload"].get("slo") or {}
        steps.setdefault(r["target"], []).extend((st["rate"], st["quantile_ms"], st["pass"]) for st in s.get("steps", []))
        best.setdefault(r["target"], []).append(s.get("max_rate"))
    return steps, {t: (_med(v), min(v), max(v)) for t, v in best.items()}


def scenario_md(results, sc):
    L = []
    if sc == "fdload-mix":
        cur = rate_curves(results)
        if cur:
            L += ["### Latency vs offered rate (open loop, latency from the intended send time)", "",
                  "Medians over the repeats; `dropped`: requests still unsent at the end of the run (the target could not keep up).", "",
                  "| target | offered/s | achieved/s | p50 ms | p99 ms | dropped |", "|---|---|---|---|---|---|"]
            for t, pts in cur.items():
                for rate, ach, p50, p99, dr in pts:
                    L.append(f"| {t} | {rate:g} | {ach:.0f} | {p50:.3f} | {p99:.3f} | {dr:.0f} |")
            L.append("")
    if sc == "fdload-slo":
        steps, best = slo_steps(results)
        if best:
            L += ["### Highest rate under the SLO", "", "| target | max rate/s (median, min–max) | steps tried (rate: pQ ms, pass/FAIL) |", "|---|---|---|"]
            for t, (m, lo, hi) in best.items():
                tried = ", ".join(f"{r:.0f}: {q:.2f} {'pass' if ok else 'FAIL'}" for r, q, ok in sorted(steps.get(t, []))[:12])
                L.append(f"| {t} | {m:.0f} ({lo:.0f}–{hi:.0f}) | {tried} |")
            L.append("")
    return L


def scenario_html(results, sc, H):
    """Charts for the fdload scenarios; H is bench/fdbench/html (its chart helpers)."""
    out = []
    if sc == "fdload-mix":
        cur = rate_curves(results)
        if cur:
            out.append(H.chart(H.lines([(t, [(r, p99) for r, _, _, p99, _ in pts]) for t, pts in cur.items()],
                                       "p99 latency vs offered rate (open loop)", "offered requests/s", "p99 ms", logx=True, logy=True)))
            out.append(H.chart(H.lines([(t, [(r, ach) for r, ach, _, _, _ in pts]) for t, pts in cur.items()],
                                       "Achieved vs offered rate", "offered requests/s", "achieved requests/s", logx=True, logy=True)))
        tl = timelines(results)
        if tl:
            out.append(H.chart(H.lines([(f"{t} @{rate:g}/s", [(s["t"] + 1, s["p99_ms"] or None) for s in pts]) for t, (rate, pts) in tl.items()],
                                       "Per-second p99 at the highest offered rate", "second", "p99 ms", logx=False, logy=True)))
            out.append(H.chart(H.lines([(f"{t} @{rate:g}/s", [(s["t"] + 1, s["done"] or None) for s in pts]) for t, (rate, pts) in tl.items()],
                                       "Per-second completions at the highest offered rate", "second", "requests", logx=False)))
    if sc == "fdload-slo":
        steps, best = slo_steps(results)
        if steps:
            out.append(H.chart(H.lines([(t, sorted((r, q) for r, q, _ in pts)) for t, pts in steps.items()],
                                       "SLO search: the percentile at each rate tried", "offered requests/s", "ms", logx=True, logy=True)))
    if sc == "fdload-replay":
        tl = timelines(results, sc)
        if tl:
            out.append(H.chart(H.lines([(t, [(s["t"] + 1, s["p99_ms"] or None) for s in pts]) for t, (_, pts) in tl.items()],
                                       "Replay: per-second p99", "second", "p99 ms", logx=False, logy=True)))
    return "".join(out)
