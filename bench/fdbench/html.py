"""report.html: one self-contained page (no scripts, no fetches), charts as
inline SVG drawn here from results.json."""
import html
import math
import re

import sys
from . import fdl as F
from . import report as R
from . import targets as T

PALETTE = {
    "redis-direct": "#4e79a7", "twemproxy": "#9c755f", "redis-cluster-direct": "#76b7b2",
    "lmdb-nosync": "#59a14f", "lmdb-sync": "#8cd17d", "leveldb-nosync": "#f28e2b", "leveldb-sync": "#ffbe7d",
    "redis": "#e15759", "mongodb": "#b07aa1", "redis-cluster": "#edc948",
}
EXTRA = ["#bab0ac", "#d37295", "#499894", "#86bcb6"]
FONT = "font-family='system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif'"


def color(name, _cache={}):
    if name in PALETTE:
        return PALETTE[name]
    if name not in _cache:
        _cache[name] = EXTRA[len(_cache) % len(EXTRA)]
    return _cache[name]


def esc(s):
    return html.escape(str(s), quote=True)


def _nice_max(v):
    if not v or v <= 0:
        return 1.0
    e = 10 ** math.floor(math.log10(v))
    for m in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if m * e >= v:
            return m * e
    return 10 * e


def _ticks(lo, hi, log):
    if log:
        out = []
        e = math.floor(math.log10(lo))
        while 10 ** e <= hi * 1.0001:
            for m in (1, 2, 5):
                v = m * 10 ** e
                if lo * 0.999 <= v <= hi * 1.0001:
                    out.append(v)
            e += 1
        return out
    step = hi / 5
    return [step * i for i in range(6)]


def _fmt(v):
    if v == 0:
        return "0"
    if abs(v) >= 1e6:
        return f"{v / 1e6:g}M"
    if abs(v) >= 1e3:
        return f"{v / 1e3:g}k"
    if abs(v) >= 1:
        return f"{v:g}"
    return f"{v:.2g}"


def legend(names, x=0, y=0, width=1000):
    out, cx, cy = [], x, y
    for n in names:
        w = 18 + 7.2 * len(n) + 16
        if cx + w > x + width:
            cx, cy = x, cy + 18
        out.append(f"<rect x='{cx:.0f}' y='{cy - 10}' width='12' height='12' fill='{color(n)}'/>"
                   f"<text x='{cx + 16:.0f}' y='{cy}' font-size='12'>{esc(n)}</text>")
        cx += w
    return "".join(out), cy - y + 18


def placeholder(text, width=900):
    return (f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='40' viewBox='0 0 {width} 40' {FONT} role='img'>"
            f"<rect x='0.5' y='0.5' width='{width - 1}' height='39' fill='#fafafa' stroke='#ddd'/>"
            f"<text x='12' y='25' font-size='12' fill='#666'>{esc(text)}</text></svg>")


def grouped_bars(categories, series, title, ylabel, log=False, ref=None, marks=None, fmt=_fmt, height=300):
    """Vertical grouped bars: categories on x, one bar per series (name,
    [values or None]). marks: {series: [(value or None, shape)]} drawn on
    the bars (latency percentiles). ref: a horizontal reference line."""
    ns = len(series)
    ncat = max(1, len(categories))
    bw = max(3, min(18, int(((1240 - 84) / ncat - 10) / max(1, ns))))
    gw = ns * bw + 10
    left, top = 64, 28
    width = max(640, left + gw * len(categories) + 20)
    leg, legh = legend([n for n, _ in series], left, top + 12, width - left - 10)
    ptop = top + legh + 8
    vals = [v for _, vs in series for v in vs if v]
    if marks:
        vals += [m for ms in marks.values() for row in ms for (m, _) in row if m]
    if ref:
        vals.append(ref)
    if not vals:
        vals = [1]
    if log:
        lo = 10 ** math.floor(math.log10(min(vals)))
        hi = 10 ** math.ceil(math.log10(max(vals) * 1.0001))
    else:
        lo, hi = 0.0, _nice_max(max(vals) * 1.05)

    def y(v):
        if log:
            v = max(v, lo)
            return ptop + height - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * height
        return ptop + height - (v - lo) / (hi - lo) * height

    lab_h = max(len(c) for c in categories) * 6.5 + 14 if categories else 20
    H = ptop + height + lab_h + 10
    o = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{H:.0f}' viewBox='0 0 {width} {H:.0f}' {FONT} role='img'>",
         f"<text x='{left}' y='16' font-size='14' font-weight='600'>{esc(title)}</text>"]
    o.append(leg)
    for tv in _ticks(lo if log else 0, hi, log):
        ty = y(tv) if (not log or tv > 0) else ptop + height
        o.append(f"<line x1='{left}' x2='{width - 10}' y1='{ty:.1f}' y2='{ty:.1f}' stroke='#e3e3e3'/>"
                 f"<text x='{left - 6}' y='{ty + 4:.1f}' font-size='11' text-anchor='end' fill='#555'>{fmt(tv)}</text>")
    o.append(f"<text transform='translate(14,{ptop + height / 2:.0f}) rotate(-90)' font-size='12' text-anchor='middle' fill='#333'>{esc(ylabel)}</text>")
    for i, cat in enumerate(categories):
        gx = left + 8 + i * gw
        for j, (name, vs) in enumerate(series):
            v = vs[i] if i < len(vs) else None
            bx = gx + j * bw
            if v is None:
                o.append(f"<text x='{bx + bw / 2:.1f}' y='{ptop + height - 3}' font-size='9' text-anchor='middle' fill='#b00'>×</text>")
                continue
            by = y(v)
            o.append(f"<rect x='{bx}' y='{by:.1f}' width='{bw - 1}' height='{max(0.5, ptop + height - by):.1f}' fill='{color(name)}'>"
                     f"<title>{esc(name)} · {esc(cat)}: {fmt(v)}</title></rect>")
            for (mv, shape) in ((marks or {}).get(name, [[]] * len(categories))[i] if marks else []):
                if mv is None:
                    continue
                my = y(mv)
                if shape == "dot":
                    o.append(f"<circle cx='{bx + (bw - 1) / 2:.1f}' cy='{my:.1f}' r='{max(1.5, bw / 4):.1f}' fill='#222'/>")
                else:
                    o.append(f"<line x1='{bx - 1}' x2='{bx + bw}' y1='{my:.1f}' y2='{my:.1f}' stroke='#222' stroke-width='1.5'/>")
        cx = gx + ns * bw / 2
        o.append(f"<text transform='translate({cx:.1f},{ptop + height + 10}) rotate(35)' font-size='11' fill='#222'>{esc(cat)}</text>")
    if ref is not None:
        ry = y(ref)
        o.append(f"<line x1='{left}' x2='{width - 10}' y1='{ry:.1f}' y2='{ry:.1f}' stroke='#333' stroke-dasharray='5,3'/>"
                 f"<text x='{width - 12}' y='{ry - 4:.1f}' font-size='11' text-anchor='end'>{fmt(ref)}</text>")
    o.append(f"<line x1='{left}' x2='{left}' y1='{ptop}' y2='{ptop + height}' stroke='#999'/>")
    o.append("</svg>")
    return "".join(o)


def hbars(rows, title, unit, ref=None, fmt=_fmt, stack=True):
    """Horizontal bars, one row per (label, {part: value}, color or None);
    parts are stacked (roles of one target)."""
    left, top, rh = 400, 30, 22
    width = 1080
    vals = [sum(v for v in parts.values() if v) for _, parts, _ in rows] + ([ref] if ref else [])
    hi = _nice_max(max(vals) * 1.05 if vals and max(vals) > 0 else 1)
    pos = sorted(v for v in vals if v > 0)
    if len(pos) >= 3:
        med = pos[len(pos) // 2]
        normal = [v for v in pos if v <= 5 * med]
        if normal and pos[-1] > 5 * med:
            hi = _nice_max(max(normal) * 1.6)   # an outlier (the emulator) would flatten the rest: clip it
    H = top + rh * len(rows) + 34
    o = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{H}' viewBox='0 0 {width} {H}' {FONT} role='img'>",
         f"<text x='4' y='16' font-size='14' font-weight='600'>{esc(title)}</text>"]
    pw = width - left - 150

    def x(v):
        return left + v / hi * pw
    for tv in _ticks(0, hi, False):
        o.append(f"<line x1='{x(tv):.1f}' x2='{x(tv):.1f}' y1='{top}' y2='{top + rh * len(rows)}' stroke='#e6e6e6'/>"
                 f"<text x='{x(tv):.1f}' y='{top + rh * len(rows) + 14}' font-size='11' text-anchor='middle' fill='#555'>{fmt(tv)}</text>")
    o.append(f"<text x='{left + pw / 2:.0f}' y='{H - 2}' font-size='12' text-anchor='middle'>{esc(unit)}</text>")
    for i, (label, parts, col) in enumerate(rows):
        ry = top + i * rh
        o.append(f"<text x='{left - 6}' y='{ry + rh / 2 + 4:.1f}' font-size='12' text-anchor='end'>{esc(label)}</text>")
        cx = left
        k = 0
        for part, v in sorted(parts.items(), key=lambda kv: kv[0] not in T.PROXY_ROLES):
            if not v:
                continue
            w = min(v / hi * pw, left + pw - cx)
            c = col or color(label)
            op = 1.0 if k == 0 else 0.55
            o.append(f"<rect x='{cx:.1f}' y='{ry + 3}' width='{max(0.5, w):.1f}' height='{rh - 6}' fill='{c}' fill-opacity='{op}' stroke='#fff'>"
                     f"<title>{esc(label)} {esc(part)}: {fmt(v)}</title></rect>")
            if len(parts) > 1 and w > 60:
                o.append(f"<text x='{cx + 4:.1f}' y='{ry + rh / 2 + 4:.1f}' font-size='10' fill='#111'>{esc(part)}</text>")
            cx += w
            k += 1
        tot = sum(v for v in parts.values() if v)
        clipped = tot > hi
        if clipped:
            o.append(f"<text x='{cx - 14:.1f}' y='{ry + rh / 2 + 5:.1f}' font-size='14' fill='#fff' font-weight='700'>»</text>")
        o.append(f"<text x='{cx + 4:.1f}' y='{ry + rh / 2 + 4:.1f}' font-size='11'>{fmt(tot)}{' (off scale)' if clipped else ''}</text>")
    if ref is not None:
        o.append(f"<line x1='{x(ref):.1f}' x2='{x(ref):.1f}' y1='{top - 4}' y2='{top + rh * len(rows)}' stroke='#222' stroke-dasharray='5,3'/>")
    o.append("</svg>")
    return "".join(o)


def heatmap(names, rm, title):
    cell, left, top = 64, 170, 40
    n = len(names)
    W = left + cell * n + 20
    H = top + 110 + cell * n
    o = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{W}' height='{H}' viewBox='0 0 {W} {H}' {FONT} role='img'>",
         f"<text x='4' y='16' font-size='14' font-weight='600'>{esc(title)}</text>"]
    for j, b in enumerate(names):
        o.append(f"<text transform='translate({left + j * cell + cell / 2:.0f},{top + 100}) rotate(-40)' font-size='11'>{esc(b)}</text>")
    for i, a in enumerate(names):
        y = top + 108 + i * cell
        o.append(f"<text x='{left - 6}' y='{y + cell / 2 + 4:.0f}' font-size='11' text-anchor='end'>{esc(a)}</text>")
        for j, b in enumerate(names):
            x = left + j * cell
            v = rm.get((a, b), (None, 0))[0]
            if a == b or v is None:
                o.append(f"<rect x='{x}' y='{y}' width='{cell - 2}' height='{cell - 2}' fill='#f2f2f2'/>")
                continue
            t = max(-1.0, min(1.0, math.log(v) / math.log(3)))
            if t >= 0:
                c = f"rgb({int(255 - 160 * t)},{int(255 - 60 * t)},{int(255 - 160 * t)})"
            else:
                c = f"rgb({int(255 + 20 * t)},{int(255 + 150 * t)},{int(255 + 150 * t)})"
            o.append(f"<rect x='{x}' y='{y}' width='{cell - 2}' height='{cell - 2}' fill='{c}'><title>{esc(a)} is {v:.2f}× {esc(b)}</title></rect>"
                     f"<text x='{x + cell / 2 - 1:.0f}' y='{y + cell / 2 + 4:.0f}' font-size='12' text-anchor='middle'>{v:.2f}×</text>")
    o.append("</svg>")
    return "".join(o)


def lines(series, title, xlabel, ylabel, logx=True, logy=False, fmt=_fmt):
    """series: [(name, [(x, y or None)])]."""
    left, top, pw, ph = 70, 30, 520, 240
    pts = [(x, y) for _, s in series for x, y in s if y]
    leg, legh = legend([n for n, _ in series], left, top + 10, pw)
    ptop = top + legh + 6
    W, H = left + pw + 30, ptop + ph + 46
    o = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{W}' height='{H}' viewBox='0 0 {W} {H}' {FONT} role='img'>",
         f"<text x='4' y='16' font-size='14' font-weight='600'>{esc(title)}</text>", leg]
    if not pts:
        o.append(f"<text x='{left + 10}' y='{ptop + 30}' font-size='12' fill='#b00'>no successful run</text></svg>")
        return "".join(o)
    xs = [x for x, _ in pts]
    ys = [y for _, y in pts]
    xlo, xhi = min(xs), max(xs)
    if xlo == xhi:
        xhi = xlo * 10
    if logy:
        ylo, yhi = 10 ** math.floor(math.log10(min(ys))), 10 ** math.ceil(math.log10(max(ys) * 1.0001))
    else:
        ylo, yhi = 0, _nice_max(max(ys) * 1.05)

    def X(v):
        if logx:
            return left + (math.log10(v) - math.log10(xlo)) / (math.log10(xhi) - math.log10(xlo)) * pw
        return left + (v - xlo) / (xhi - xlo) * pw

    def Y(v):
        if logy:
            return ptop + ph - (math.log10(v) - math.log10(ylo)) / (math.log10(yhi) - math.log10(ylo)) * ph
        return ptop + ph - (v - ylo) / (yhi - ylo) * ph
    for tv in _ticks(ylo if logy else 0, yhi, logy):
        o.append(f"<line x1='{left}' x2='{left + pw}' y1='{Y(tv):.1f}' y2='{Y(tv):.1f}' stroke='#e6e6e6'/>"
                 f"<text x='{left - 6}' y='{Y(tv) + 4:.1f}' font-size='11' text-anchor='end' fill='#555'>{fmt(tv)}</text>")
    for xv in sorted(set(xs)):
        o.append(f"<line x1='{X(xv):.1f}' x2='{X(xv):.1f}' y1='{ptop}' y2='{ptop + ph}' stroke='#f0f0f0'/>"
                 f"<text x='{X(xv):.1f}' y='{ptop + ph + 14}' font-size='11' text-anchor='middle' fill='#555'>{_fmt(xv)}</text>")
    o.append(f"<text x='{left + pw / 2:.0f}' y='{H - 8}' font-size='12' text-anchor='middle'>{esc(xlabel)}</text>")
    o.append(f"<text transform='translate(14,{ptop + ph / 2:.0f}) rotate(-90)' font-size='12' text-anchor='middle'>{esc(ylabel)}</text>")
    for name, s in series:
        s = sorted(s)
        seg = []
        for x, y in s + [(None, None)]:
            if y:
                seg.append(f"{X(x):.1f},{Y(y):.1f}")
            else:
                if len(seg) > 1:
                    o.append(f"<polyline points='{' '.join(seg)}' fill='none' stroke='{color(name)}' stroke-width='2.2'/>")
                seg = []
        for x, y in s:
            if y:
                o.append(f"<circle cx='{X(x):.1f}' cy='{Y(y):.1f}' r='3.5' fill='{color(name)}'><title>{esc(name)} at {_fmt(x)}: {fmt(y)}</title></circle>")
            elif x is not None:
                o.append(f"<text x='{X(x):.1f}' y='{ptop + ph - 4}' font-size='12' text-anchor='middle' fill='{color(name)}'>×</text>")
    o.append(f"<rect x='{left}' y='{ptop}' width='{pw}' height='{ph}' fill='none' stroke='#bbb'/></svg>")
    return "".join(o)


# ---- page ---------------------------------------------------------------------

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;margin:24px auto;max-width:1320px;color:#1d1d1d;padding:0 16px;line-height:1.4}
h1{font-size:24px;margin-bottom:4px} h2{font-size:19px;margin-top:34px;border-bottom:2px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:20px 0 6px} .note{color:#555;font-size:13px;max-width:1000px}
table{border-collapse:collapse;font-size:12.5px;margin:6px 0 14px} td,th{border:1px solid #ddd;padding:3px 7px;text-align:right;white-space:nowrap}
th{background:#f5f5f5} td:first-child,th:first-child{text-align:left}
.env td{text-align:left;white-space:normal} .wrap td{white-space:normal;max-width:560px;text-align:left} .wrap th{text-align:left} .env td:first-child{font-weight:600;width:170px}
.met{background:#dff3df;font-weight:600} .notmet{background:#fbe0e0;font-weight:600} .nm{color:#777}
.chart{overflow-x:auto;margin:8px 0 16px} .warn{background:#fff4d6;border:1px solid #e8c66a;padding:8px 12px;border-radius:4px;max-width:1000px}
nav a{margin-right:14px;font-size:13px} .fail{color:#b00} .grid{display:flex;flex-wrap:wrap;gap:4px 18px} .grid .chart{margin:4px 0}
"""


def table(head, rows, cls=""):
    o = [f"<table class='{cls}'><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>"]
    for r in rows:
        o.append("<tr>" + "".join(c if isinstance(c, Raw) else f"<td>{esc(c)}</td>" for c in r) + "</tr>")
    o.append("</table>")
    return "".join(o)


class Raw(str):
    pass


def rps_cell(c):
    """A throughput table cell: median (min–max); a failure as a short
    FAILED with the whole reason as a tooltip."""
    st = R.stats(c)
    if c and c["failed"]:
        why = R._norm(c["failed"][0].get("reason"))
        short = re.sub(r"^(exit \d+: )?(Error from server: |Error: )?(ERR )?", "", why)
        short = short if len(short) <= 34 else short[:33] + "…"
        head = f"FAILED {len(c['failed'])}/{len(c['failed']) + len(c['ok'])}" if st else "FAILED"
        extra = f"; ok runs {R._k(st['rps'])}" if st else ""
        return Raw(f"<td class='fail' title='{esc(why)}' style='white-space:normal;max-width:190px;text-align:left'>"
                   f"{esc(head)}{esc(extra)} <small>({esc(short)})</small></td>")
    return R.rps_text(c, st)


def section(sid, title, body, sections):
    sections.append((sid, title))
    return f"<section id='{sid}'><h2>{esc(title)}</h2>{body}</section>"


def chart(svg):
    return f"<div class='chart'>{svg}</div>"


def render(results):
    meta, env = results["meta"], results["environment"]
    v = env["versions"]
    secs = []
    body = []
    # environment
    tg = results["targets"]
    envrows = [["command", meta["command_line"]],
               ["started / finished", f"{meta['started_utc']} / {meta.get('finished_utc') or '?'}"],
               ["machine", f"{env['cpu_model']}, {env['nproc']} cores, {(env.get('mem_total_kb') or 0) / 1048576:.0f} GB RAM, {env.get('os') or ''}, Linux {env['kernel']}"],
               ["load average", f"{env['loadavg_start']} at start, {env.get('loadavg_end') or '?'} at the end (1, 5, 15 min)"],
               ["frontdoor", f"{v.get('frontdoor')} — {env.get('frontdoor_path')} ({env.get('frontdoor_build')}), git {env.get('git')}"],
               ["redis", f"{v.get('redis_server')}; {v.get('redis_benchmark')}"],
               ["libraries", f"LMDB {v.get('lmdb')}, LevelDB {v.get('leveldb_runtime') or v.get('leveldb')}, libmongoc {v.get('libmongoc')}"
                             + (f", {v['nutcracker']}" if v.get("nutcracker") else "")],
               ["MongoDB server", (v.get("mongodb_server") or "not contacted")
                + (" — EMULATOR (tests/mongo/server.py): its figures are NOT MongoDB's" if v.get("mongodb_emulator") else "")],
               ["data folders", f"{meta.get('data_fs')} ({meta.get('data_root')})"],
               ["durability", "redis-server: no persistence (save \"\", appendonly no). frontdoor sync: fsync per group commit before replying; nosync: none. "
                              "mongodb: " + (tg.get("mongodb", {}).get("describe") or "not run")],
               ["targets", "; ".join(f"{n}: {t.get('describe') or ''}" + ("" if t.get("status") == "ran" else f" — SKIPPED: {t.get('reason')}")
                                     for n, t in tg.items())],
               ["options", ", ".join(f"{k}={val}" for k, val in (results["settings"].get("options") or {}).items() if val not in (None, False))]]
    warn = ("<p class='warn'>Client (redis-benchmark), proxies and servers share this machine's "
            f"{env['nproc']} cores; at -P 1 the client needs about a core itself, so P1 figures are partly client-bound. "
            "Compare only figures within this report (run-to-run spread ~10 %, more for proxies)."
            + (" The mongodb target ran against an EMULATOR: its figures say nothing about MongoDB." if v.get("mongodb_emulator") else "")
            + (f" <b>Interrupted</b> ({esc(meta['interrupted'])})." if meta.get("interrupted") else "")
            + (f" <b>Error</b>: {esc(meta['error'])}." if meta.get("error") else "") + "</p>")
    # at a glance
    gl, gsc = R.glance(results)
    if gl:
        rows = []
        bars = []
        for what, val, thr, verdict, note in gl:
            cls = {"met": "met", "not met": "notmet"}.get(verdict, "nm")
            rows.append([what, val, thr, Raw(f"<td class='{cls}'>{esc(verdict)}</td>"), note])
            if val.endswith("×"):
                t = float(thr.split()[1].rstrip("×"))
                bars.append((what, {"measured ÷ wanted": float(val.rstrip("×")) / t}, "#59a14f" if verdict == "met" else "#e15759"))
        b = (f"<p class='note'>Targets from anchors.md, checked against the <code>{esc(gsc)}</code> scenario of this run. "
             "Bars: measured ratio ÷ wanted ratio (the dashed line, 1.0, is the target; right of it = met).</p>")
        if not bars:
            b += chart(placeholder("Nothing to compare yet: these targets need redis-direct, twemproxy, lmdb-nosync, leveldb-nosync and redis at -P 1 and 16 in the default or seed-suite scenario"))
        else:
            b += chart(hbars([(w[:62] + ("…" if len(w) > 62 else ""), p, c) for w, p, c in bars], "Measured ÷ target", "measured ratio ÷ wanted ratio", ref=1.0, fmt=lambda x: f"{x:.2f}"))
        b += table(["target", "measured", "wanted", "verdict", "note"], rows, "wrap")
        body.append(section("glance", "At a glance: frontdoor's targets", b, secs))
    for sc in R.scenarios_run(results):
        body.append(scenario_html(results, sc, secs))
    fails = [r for r in results["runs"] if not r["ok"]]
    skipped = {n: t for n, t in tg.items() if t.get("status") != "ran"}
    if fails or skipped:
        rows = [[n, "skipped", t.get("reason") or ""] for n, t in skipped.items()]
        groups = {}
        for r in fails:
            groups.setdefault((r["target"], R._norm(r.get("reason"))), []).append(r)
        for (n, reason), rs in groups.items():
            rows.append([n, f"{len(rs)} failed run{'s' if len(rs) > 1 else ''}: " + ", ".join(dict.fromkeys(f"{r['test'].upper()} [{r.get('setting')}]" for r in rs))[:200], reason])
        counts = {}
        for r in fails:
            counts[r["target"]] = counts.get(r["target"], 0) + 1
        allc = {}
        for r in results["runs"]:
            allc[r["target"]] = allc.get(r["target"], 0) + 1
        svg = hbars([(n, {"failed": counts.get(n, 0)}, "#e15759") for n in allc] + [(n, {"skipped": 1}, "#bbbbbb") for n in skipped],
                    "Failed runs per target (skipped targets: grey)", "runs", fmt=lambda x: f"{x:g}")
        body.append(section("failures", "Skipped targets and failed runs", chart(svg) + table(["target", "what", "reason"], rows, "wrap"), secs))
    nav = "<nav>" + "".join(f"<a href='#{sid}'>{esc(t)}</a>" for sid, t in secs) + "</nav>"
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>frontdoor benchmark "
            f"{esc(meta['started_utc'])}</title><style>{CSS}</style></head><body>"
            f"<h1>frontdoor self-benchmark</h1><p class='note'>{esc(meta['started_utc'])} · scenarios: {esc(', '.join(results['settings'].get('scenarios', [])))}</p>"
            + warn + table(["", ""], envrows, "env") + nav + "".join(body)
            + "<p class='note'>Raw data: results.json (schema: bench/results.schema.json) and results.csv beside this file.</p></body></html>\n")


def scenario_html(results, sc, secs):
    plan = (results["settings"].get("plans") or {}).get(sc) or {}
    if sc == "growth":
        return growth_html(results, secs)
    cells = R.aggregate(results, sc)
    names = R.ran(results, sc)
    out = []
    reps = plan.get("repeats", 1)
    # throughput
    b = [f"<p class='note'>{esc(plan.get('description', ''))}. {esc(R.plan_text(results, sc))} Thousands of requests/s; × = failed or not run.</p>"]
    for s in R.settings_of(results, sc):
        tests = R.tests_of(results, sc, s)
        series = [(n, [(lambda st: st["rps"] / 1000 if st else None)(R.stats(cells.get((n, t, s)))) for t in tests]) for n in names]
        b.append(chart(grouped_bars([t.upper() for t in tests], series, f"Throughput, {s}", "k requests/s")))
        rows = []
        for t in tests:
            row = [t.upper()]
            for n in names:
                c = cells.get((n, t, s))
                row.append(rps_cell(c))
            rows.append(row)
        b.append(table(["test"] + names, rows))
    out.append(section(f"{sc}-rps", f"{sc}: throughput per test and target", "".join(b), secs))
    # latency
    b = ["<p class='note'>From redis-benchmark's own histogram. Bars: p99 (log scale); dot: p50; tick: p99.9 (the smallest "
         "printed latency with ≥ 99.9 % of requests at or below it).</p>"]
    for s in R.settings_of(results, sc):
        tests = R.tests_of(results, sc, s)
        series, marks = [], {}
        for n in names:
            sts = [R.stats(cells.get((n, t, s))) for t in tests]
            series.append((n, [st["p99"] if st and st["p99"] else None for st in sts]))
            marks[n] = [[(st["p50"], "dot"), (st["p99.9"], "tick")] if st else [] for st in sts]
        b.append(chart(grouped_bars([t.upper() for t in tests], series, f"Latency p50 / p99 / p99.9, {s}", "ms (log)", log=True, marks=marks,
                                    fmt=lambda x: f"{x:g}")))
        rows = []
        for t in tests:
            for n in names:
                st = R.stats(cells.get((n, t, s)))
                if st:
                    rows.append([t.upper(), n] + [R._ms(st[k]) for k, _ in R.LAT])
        b.append(f"<details><summary>table: p50 / p95 / p99 / p99.9 / max ms, {esc(s)}</summary>"
                 + table(["test", "target"] + [k for k, _ in R.LAT], rows) + "</details>")
    out.append(section(f"{sc}-lat", f"{sc}: latency percentiles", "".join(b), secs))
    # ratios
    b = ["<p class='note'>Row A is N× column B: geometric mean over the tests both ran of A's median requests/s ÷ B's. Green: row faster.</p>"]
    for s in R.settings_of(results, sc):
        rm = R.ratio_matrix(results, sc, s)
        b.append(chart(heatmap(names, rm, f"A is N× B, {s}")))
        b.append(table(["A \\ B"] + names, [[a] + ["–" if a == bb or rm[(a, bb)][0] is None else f"{rm[(a, bb)][0]:.2f}×" for bb in names] for a in names]))
    out.append(section(f"{sc}-ratio", f"{sc}: ratio table, each pair", "".join(b), secs))
    # overhead vs direct
    if R.BASE in names and len(names) > 1:
        b = ["<p class='note'>Each target's median requests/s ÷ direct redis-server's, same test and setting "
             "(1.0 = as fast as Redis without a proxy; &gt; 1 happens at -P 1 where the client is the bottleneck).</p>"]
        for s in R.settings_of(results, sc):
            tests = R.tests_of(results, sc, s)
            ov = R.vs(results, sc, s, R.BASE)
            series = [(n, [ov[n].get(t) for t in tests]) for n in names if n != R.BASE]
            b.append(chart(grouped_bars([t.upper() for t in tests], series, f"vs direct Redis, {s}", "× redis-direct", ref=1.0,
                                        fmt=lambda x: f"{x:.2f}")))
            if R.CBASE in names:
                b.append(f"<p class='note'>{esc(R.CLUSTER_NOTE)}</p>")
            if R.CBASE in names and "redis-cluster" in names:
                cv = R.vs(results, sc, s, R.CBASE).get("redis-cluster", {})
                b.append(table(["test", "frontdoor redis-cluster ÷ redis-cluster-direct"], [[t.upper(), f"{cv[t]:.2f}×" if cv.get(t) else "–"] for t in tests]))
        out.append(section(f"{sc}-overhead", f"{sc}: overhead vs direct Redis", "".join(b), secs))
    # per op
    if sc == "seed-perop":
        b = ["<p class='note'>ns/op = 10⁹ ÷ requests/s at one client (at -P 1: the whole round trip). Server CPU ns/op: the server processes' "
             "CPU per request (CPU times come in 10 ms clock ticks: short runs show steps, and a missing bar is 0 ticks). RSS growth: (RSS after − before) ÷ requests.</p>"]
        for s in R.settings_of(results, sc):
            tests = R.tests_of(results, sc, s)
            sts = {n: [R.stats(cells.get((n, t, s))) for t in tests] for n in names}
            b.append(chart(grouped_bars([t.upper() for t in tests], [(n, [1e9 / st["rps"] if st else None for st in sts[n]]) for n in names],
                                        f"ns per operation, {s}", "ns/op (log)", log=True)))
            b.append(chart(grouped_bars([t.upper() for t in tests],
                                        [(n, [sum(x for x in st["cpu_ns_per_req"].values() if x) if st else None for st in sts[n]]) for n in names],
                                        f"server CPU ns per operation, {s}", "ns/op (log)", log=True)))
            rows = []
            for t_i, t in enumerate(tests):
                for n in names:
                    st = sts[n][t_i]
                    if st:
                        rows.append([t.upper(), n, f"{1e9 / st['rps']:,.0f}", R._roles(st["cpu_ns_per_req"], lambda x: f"{x:,.0f}"),
                                     R._roles(st["rss_growth_b_per_req"], lambda x: f"{x:.0f}")])
            b.append(f"<details><summary>table, {esc(s)}</summary>" + table(["test", "target", "ns/op", "server CPU ns/op", "RSS growth B/op"], rows) + "</details>")
        out.append(section(f"{sc}-perop", f"{sc}: cost per operation", "".join(b), secs))
    # resources
    res = R.resources(results, sc)
    b = ["<p class='note'>Server CPU: utime+stime of each server process over the successful runs, per request (stacked: proxy first, "
         "then what is behind it). CPU %: CPU seconds ÷ wall seconds of each run, median (100 % = one core). Peak RSS: highest VmRSS sampled "
         "every 0.1 s during the runs.</p>"]
    for s in R.settings_of(results, sc):
        b.append(chart(hbars([(n, {r: v / 1000 for r, v in res[n]["cpu_ns_per_req"].get(s, {}).items()}, None) for n in names],
                             f"Server CPU per request, {s}", "µs per request", fmt=lambda x: f"{x:.1f}")))
        b.append(chart(hbars([(n, dict(res[n]["cpu_pct"].get(s, {})), None) for n in names],
                             f"Server CPU % during the runs (median; 100 = one core), {s}", "% of one core", fmt=lambda x: f"{x:.0f}")))
    b.append(chart(hbars([(n, {r: v / 1024 for r, v in res[n]["rss_peak_kb"].items()}, None) for n in names],
                         "Peak RSS during the runs", "MB", fmt=lambda x: f"{x:.1f}")))
    rows = []
    for n in names:
        r = res[n]
        rows.append([n] + [R._roles({k: v / 1000 for k, v in r["cpu_ns_per_req"].get(s, {}).items()}, lambda x: f"{x:.1f}") for s in R.settings_of(results, sc)]
                    + [R._roles(r["cpu_pct"].get(s), lambda x: f"{x:.0f}") for s in R.settings_of(results, sc)]
                    + [R._roles(r["rss_peak_kb"], R._mb), " / ".join(R._mb(sum(x for x in d.values() if x)) for d in r["rss_after_repeat"]) or "–",
                       R._bytes(r["disk"])])
    sets = R.settings_of(results, sc)
    b.append(table(["target"] + [f"CPU µs/req {s}" for s in sets] + [f"CPU % {s}" for s in sets] + ["peak RSS MB", "RSS MB after each pass", "data on disk"], rows, "wrap"))
    out.append(section(f"{sc}-res", f"{sc}: CPU and memory", "".join(b), secs))
    if sc in F.SCENARIOS:
        extra = F.scenario_html(results, sc, sys.modules[__name__])
        if extra:
            out.insert(1, section(f"{sc}-fdload", f"{sc}: latency vs rate, timelines", extra, secs))
    return "".join(out)


def growth_html(results, secs):
    g = R.growth_series(results)
    gp = results["settings"].get("growth") or {}
    out = []
    note = (f"<p class='note'>Fill: pipelined <code>SET key:%012d</code> with {gp.get('data_size')}-byte values; at each size, redis-benchmark "
            f"-n {gp.get('measure_requests')} -c {gp.get('clients')} -P {gp.get('pipeline')} -r SIZE over the whole dataset. "
            f"A target stops growing when a step takes over {gp.get('budget_s')} s or fails: that is where it bends. × = failed there.</p>")
    b = [note, "<div class='grid'>"]
    for test in ("get", "set"):
        ser = [(n, [(x, st["rps"] / 1000 if st else None) for x, st, _ in d.get(test, [])]) for n, d in g["keys"].items()]
        b.append(chart(lines(ser, f"{test.upper()} throughput as the dataset grows", "keys in the dataset", "k requests/s")))
        ser = [(n, [(x, st["p99"] if st else None) for x, st, _ in d.get(test, [])]) for n, d in g["keys"].items()]
        b.append(chart(lines(ser, f"{test.upper()} p99 latency as the dataset grows", "keys in the dataset", "ms (log)", logy=True, fmt=lambda x: f"{x:g}")))
    ser = [(n, [(f["keyspace"], f["rps"] / 1000 if f.get("rps") and f["ok"] else None) for f in fs]) for n, fs in g["fill"].items()]
    b.append(chart(lines(ser, "Fill rate (pipelined SET of new keys)", "keys in the dataset", "k keys/s")))
    ser = [(n, [(f["keyspace"], sum(m.get("VmRSS") or 0 for m in (f.get("mem_kb_after") or {}).values()) / 1024) for f in fs]) for n, fs in g["fill"].items()]
    b.append(chart(lines(ser, "Memory (RSS of all server processes) as the dataset grows", "keys in the dataset", "MB", logy=True)))
    b.append("</div>")
    stopped = gp.get("stopped") or {}
    if stopped:
        b.append(table(["target", "where it stopped growing", ], [[k, v] for k, v in stopped.items()], "wrap"))
    out.append(section("growth-keys", "growth: keys 10k → as far as it goes", "".join(b), secs))
    b = ["<p class='note'>One list, <code>fdbench:list</code>, grown with RPUSH (redis-benchmark; its throughput over each step is the RPUSH curve), "
         "then LRANGE of the first and the last 100 elements and LINDEX of the middle at each length.</p>"]
    b.append("<div class='grid'>")
    tests = []
    for d in g["list"].values():
        for t in d:
            if t not in tests:
                tests.append(t)
    for t in tests:
        ser = [(n, [(x, st["rps"] / 1000 if st else None) for x, st, _ in d.get(t, [])]) for n, d in g["list"].items()]
        b.append(chart(lines(ser, f"{t.upper()} as the list grows", "list length", "k requests/s", logy=True)))
    if not tests:
        b.append(chart(lines([], "list growth", "list length", "k requests/s")))
    b.append("</div>")
    out.append(section("growth-list", "growth: one list to 1M elements", "".join(b), secs))
    return "".join(out)
