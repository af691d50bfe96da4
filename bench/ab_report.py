#!/usr/bin/env python3
"""ab_report.py — an A/B session of a running frontdoor as one self-contained
HTML page (no scripts, no fetches; charts as inline SVG by fdbench/html.py,
the same look as bench/run's report.html).

    bench/ab_report.py --port 6380 -o ab-report.html [--json ab-report.json]

It reads `FRONTDOOR REPORT JSON` (proxy/ab_report.h) once and writes: the
verdict line, the totals (compared, identical, divergences, races, dropped
copies, secondary errors), per command compared / identical / divergences /
races with the latest examples (command, both replies, the key's diff),
latency per command per backend side by side (p50 / p99 / p99.9, from the
same per-(backend, command) records INFO commandstats and the Prometheus
endpoint read) and each backend's calls and errors. Prints the verdict.
Python 3 standard library only."""
import argparse
import json
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdbench import html as H  # noqa: E402
from fdbench import resp  # noqa: E402


def command(host, port, *args, password=None, timeout=10.0):
    """One command on a fresh connection: its parsed reply."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        cmds = ([("AUTH", password)] if password else []) + [args]
        s.sendall(b"".join(resp.encode(*c) for c in cmds))
        buf, replies = b"", []
        while len(replies) < len(cmds):
            chunk = s.recv(1 << 16)
            if not chunk:
                raise ConnectionError("frontdoor closed the connection")
            buf += chunk
            while True:
                n = resp.complete(buf)
                if not n:
                    break
                replies.append(resp.parse(buf[:n]))
                buf = buf[n:]
    r = replies[-1]
    if isinstance(r, resp.Err):
        raise RuntimeError(str(r))
    return r


def fetch(host, port, password=None):
    raw = command(host, port, "FRONTDOOR", "REPORT", "JSON", password=password)
    return json.loads(raw.decode("utf-8"))


def _n(v):
    return f"{v:,}"


def _pct(part, whole):
    return f"{100.0 * part / whole:.2f} %" if whole else "–"


def _us(v):
    return f"{v:.1f}" if v else "–"


def render(rep, source=""):
    esc, Raw = H.esc, H.Raw
    t = rep["totals"]
    pn, sn = rep.get("primary") or "primary", rep.get("secondary") or "secondary"
    secs, body = [], []
    # totals
    rows = [["mode", rep["mode"]], ["primary / secondary", f"{pn} / {sn}"],
            ["mirrored", _n(t["mirrored"])], ["compared", _n(t["compared"])],
            ["identical", f"{_n(t['identical'])} ({_pct(t['identical'], t['compared'])})"],
            ["divergences", _n(t["divergences"])], ["races", _n(t["races"])],
            ["dropped copies", f"{_n(t['dropped'])} (secondary failed {_n(t['secondary_errors'])})"],
            ["sampled out / split to the secondary", f"{_n(t['sampled_out'])} / {_n(t['split_secondary'])}"],
            ["mirror queue", _n(t["queue"])], ["stopped (ab-stop-after)", "yes" if t["stopped"] else "no"]]
    b = H.table(["", ""], rows, "env")
    b += ("<p class='note'>identical = compared − divergences − races. A race: the replies differ on a key another "
          "client wrote while the command was in flight, so the stores may have applied the writes in other orders "
          "(not a divergence). A dropped copy never reached a verdict (queue full or secondary unavailable).</p>")
    body.append(H.section("totals", "Totals", b, secs))
    # per command: comparison
    cmds = rep["commands"]
    compared = [c for c in cmds if c["compared"]]
    ex = {}
    for kind in ("divergences", "races"):
        for s in rep.get(kind) or []:
            name = (s["command"].split(" ", 1)[0] or "").strip('"').lower()
            ex.setdefault(name, []).append((kind[:-1] if kind == "races" else "divergence", s))
    if compared:
        bars = [(c["name"], {"divergences": c["divergences"], "races": c["races"]}, None) for c in compared
                if c["divergences"] or c["races"]]
        b = ""
        if bars:
            b += H.chart(H.hbars([(n, p, "#e15759" if p["divergences"] else "#f2a0a1") for n, p, _ in bars],
                                 "Mismatches per command (divergences, races)", "replies", fmt=lambda x: f"{x:g}"))
        rows = []
        for c in compared:
            cls = "notmet" if c["divergences"] else ("nm" if c["races"] else "met")
            rows.append([c["name"], _n(c["compared"]), _n(c["identical"]),
                         Raw(f"<td class='{cls}'>{_pct(c['identical'], c['compared'])}</td>"),
                         _n(c["divergences"]), _n(c["races"]), len(ex.get(c["name"], []))])
        b += H.table(["command", "compared", "identical", "identical %", "divergences", "races", "examples below"], rows)
        body.append(H.section("commands", "Replies compared, per command", b, secs))
    # examples
    if ex:
        b = ""
        for name, items in ex.items():
            b += f"<h3>{esc(name.upper())}</h3>"
            rows = [[kind, s["command"], s["primary"], s["secondary"], s.get("diff") or ""] for kind, s in items]
            b += H.table(["kind", "command", f"primary {pn}", f"secondary {sn}", "key now (what differs)"], rows, "wrap")
        body.append(H.section("examples", "Examples, newest first", b, secs))
    # latency per command per side
    lat = [c for c in cmds if c["primary"]["calls"] or c["secondary"]["calls"]]
    if lat:
        cats = [c["name"] for c in lat]
        series = [(f"primary {pn}", [c["primary"]["p99_us"] or None for c in lat]),
                  (f"secondary {sn}", [c["secondary"]["p99_us"] or None for c in lat])]
        marks = {f"primary {pn}": [[(c["primary"]["p50_us"] or None, "dot"), (c["primary"]["p999_us"] or None, "tick")] for c in lat],
                 f"secondary {sn}": [[(c["secondary"]["p50_us"] or None, "dot"), (c["secondary"]["p999_us"] or None, "tick")] for c in lat]}
        b = H.chart(H.grouped_bars(cats, series, "Latency per command, µs (bar: p99, dot: p50, tick: p99.9; log scale)",
                                   "µs", log=True, marks=marks, fmt=lambda x: f"{x:g}"))
        rows = []
        for c in lat:
            p, s = c["primary"], c["secondary"]
            ratio = f"{s['p99_us'] / p['p99_us']:.2f}×" if p["p99_us"] and s["p99_us"] else "–"
            rows.append([c["name"], _n(p["calls"]), _n(p["errors"]), _us(p["p50_us"]), _us(p["p99_us"]), _us(p["p999_us"]),
                         _n(s["calls"]), _n(s["errors"]), _us(s["p50_us"]), _us(s["p99_us"]), _us(s["p999_us"]), ratio])
        b += H.table(["command", f"{pn} calls", "errors", "p50", "p99", "p99.9",
                      f"{sn} calls", "errors", "p50", "p99", "p99.9", "p99 secondary ÷ primary"], rows)
        b += ("<p class='note'>From the hand-over to each backend until its reply is ready (the primary's: dispatch to "
              "reply, as INFO commandstats/latencystats count it; the secondary's copy starts when the primary's part "
              "ended). An embedded store's time is its own work inside frontdoor; a network store's includes the round "
              "trip. Percentiles are the upper edges of ~4 % buckets.</p>")
        body.append(H.section("latency", "Latency per command, side by side", b, secs))
    # backends
    rows = [[b["role"], b["backend"], _n(b["calls"]), _n(b["errors"]), _n(b["inflight"]), _us(b["p50_us"]), _us(b["p99_us"]),
             _us(b["p999_us"]), _us(b["wait_p50_us"]), _us(b["wait_p99_us"]), f"{b['frontdoor_us_per_call']:.2f}"]
            for b in rep["backends"]]
    body.append(H.section("backends", "Backends: calls, errors, latency (µs)", H.table(
        ["role", "backend", "calls", "errors", "in flight", "p50", "p99", "p99.9", "wait p50", "wait p99", "frontdoor per call"], rows), secs))
    nav = "<nav>" + "".join(f"<a href='#{sid}'>{esc(t)}</a>" for sid, t in secs) + "</nav>"
    verdict = rep.get("verdict") or "no verdict: A/B is off or has no secondary"
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>frontdoor A/B report</title>"
            f"<style>{H.CSS}</style></head><body><h1>frontdoor A/B report</h1>"
            f"<p class='note'>{esc(source)}</p>"
            f"<p class='warn' id='verdict'><b>Verdict:</b> <span class='verdict'>{esc(verdict)}</span></p>"
            + nav + "".join(body)
            + "<p class='note'>Source: FRONTDOOR REPORT JSON (docs/ab-testing.md, \"The report as a page\").</p></body></html>\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=6380)
    ap.add_argument("--password", default=os.environ.get("FRONTDOOR_PASSWORD"))
    ap.add_argument("-o", "--out", default="ab-report.html")
    ap.add_argument("--json", help="also keep the raw FRONTDOOR REPORT JSON here")
    a = ap.parse_args(argv)
    rep = fetch(a.host, a.port, a.password)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rep, f, indent=1)
    import time
    src = f"frontdoor at {a.host}:{a.port}, read {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}"
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(render(rep, src))
    print(rep.get("verdict") or "no verdict (A/B off)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
