"""bench/run --compare OLD/results.json: this run against a baseline, one
verdict per cell (scenario, target, test, setting), aware of the noise.

The figure compared is requests/s (higher is better), except in fdload-mix
where the offered rate is fixed and p99 latency is compared (lower is
better). With at least 2 repeats on both sides a cell is `better` or
`worse` only when the two min-max ranges do not overlap; otherwise it is
`same`. With 1 repeat on either side there is no range: a change beyond
±15 % is `better?`/`worse?` (weak), anything less `same?`. Writes
compare.md and compare.html in the output folder and prints the table;
run() returns 3 when any cell is `worse` or `worse?` (a regression check),
else 0."""
import os

from . import report as R

SINGLE_THRESHOLD = 0.15


def _metric(sc):
    if sc == "fdload-mix":
        return "p99 ms", "p99_latency_ms", False
    return "requests/s", "rps", True


def _values(results, sc, key):
    out = {}
    for (target, test, setting), cell in R.aggregate(results, sc).items():
        vals = [r.get(key) for r in cell["ok"] if r.get(key) is not None]
        if vals:
            out[(target, test, setting)] = vals
    return out


def _med(xs):
    xs = sorted(xs)
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


def verdict(old, new, higher_better):
    """(verdict, change) for two lists of repeats."""
    mo, mn = _med(old), _med(new)
    change = (mn - mo) / mo if mo else 0.0
    good = change > 0 if higher_better else change < 0
    if len(old) >= 2 and len(new) >= 2:
        overlap = not (max(new) < min(old) or min(new) > max(old))
        if overlap:
            return "same", change
        return ("better" if good else "worse"), change
    if abs(change) <= SINGLE_THRESHOLD:
        return "same?", change
    return ("better?" if good else "worse?"), change


def compare(new, old):
    """Rows: (scenario, target, test, setting, metric, old values, new values, verdict, change)."""
    rows = []
    for sc in R.scenarios_run(new):
        if sc == "growth":
            continue
        name, key, hb = _metric(sc)
        o, n = _values(old, sc, key), _values(new, sc, key)
        for cell in n:
            if cell in o:
                v, ch = verdict(o[cell], n[cell], hb)
                rows.append((sc, *cell, name, o[cell], n[cell], v, ch))
    return rows


def _fmt(xs):
    m = _med(xs)
    f = (lambda v: f"{v:.3f}") if m < 100 else (lambda v: f"{v:,.0f}")
    return f(m) + (f" ({f(min(xs))}–{f(max(xs))})" if len(xs) > 1 else "")


def markdown(rows, old_path, new_label):
    L = [f"# bench/run --compare: {new_label} against {old_path}", "",
         "Per cell: median (min–max over the repeats). `better`/`worse`: the two ranges do not overlap; `same`: they do. "
         f"With one repeat on a side there is no range: beyond ±{SINGLE_THRESHOLD:.0%} is `better?`/`worse?`, else `same?`. "
         "fdload-mix compares p99 latency (lower is better), everything else requests/s.", ""]
    if not rows:
        return "\n".join(L + ["No cell in common (different scenarios, targets, tests or settings).", ""])
    counts = {}
    for r in rows:
        counts[r[7]] = counts.get(r[7], 0) + 1
    L += ["Verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())), ""]
    L += ["| scenario | target | test | setting | figure | baseline | this run | change | verdict |", "|---|---|---|---|---|---|---|---|---|"]
    for sc, t, test, s, name, o, n, v, ch in rows:
        L.append(f"| {sc} | {t} | {test} | {s} | {name} | {_fmt(o)} | {_fmt(n)} | {ch:+.1%} | **{v}** |")
    return "\n".join(L) + "\n"


def html_page(rows, old_path, new_label):
    from . import html as H
    bars = []
    for sc, t, test, s, name, o, n, v, ch in rows:
        col = {"better": "#59a14f", "worse": "#e15759", "better?": "#9fd18f", "worse?": "#f2a0a1"}.get(v, "#bbbbbb")
        bars.append((f"{sc} {t} {test} [{s}]"[:70], {v: ch * 100}, col))
    chart = H.chart(H.hbars(bars, "Change against the baseline, % (green better, red worse, grey within noise)", "%",
                            fmt=lambda x: f"{x:+.1f}", stack=False)) if bars else ""
    table = H.table(["scenario", "target", "test", "setting", "figure", "baseline", "this run", "change", "verdict"],
                    [[sc, t, test, s, name, _fmt(o), _fmt(n), f"{ch:+.1%}", v] for sc, t, test, s, name, o, n, v, ch in rows])
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>bench/run --compare</title>"
            f"<style>{H.CSS}</style></head><body><h1>{H.esc(new_label)} against {H.esc(old_path)}</h1>"
            "<p class='note'>better/worse: the min–max ranges over the repeats do not overlap; same: they do; "
            f"? = one repeat on a side, threshold ±{SINGLE_THRESHOLD:.0%}. fdload-mix: p99 latency; others: requests/s.</p>"
            + chart + table + "</body></html>\n")


def run(new, old_path, out):
    import json
    with open(old_path) as f:
        old = json.load(f)
    rows = compare(new, old)
    label = new["meta"].get("started_utc", "this run")
    text = markdown(rows, old_path, label)
    with open(os.path.join(out, "compare.md"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "compare.html"), "w") as f:
        f.write(html_page(rows, old_path, label))
    print(text)
    worse = [r for r in rows if r[7] in ("worse", "worse?")]
    return 3 if worse else 0
