#!/usr/bin/python3
"""The A/B verdict and its HTML page (issue 18; proxy/ab_report.h,
bench/ab_report.py).

A short mirrored session, redis -> lmdb, one client (no races), then two keys
changed behind frontdoor's back (a string and a hash) read through it: two
divergences. Then:
- FRONTDOOR REPORT's first line is the verdict, and its numbers are INFO ab's
  (compared, divergences, races, the identical share floored to 2 decimals);
  its latency part names the command with the worst p99 ratio, recomputed
  here from the per-command figures of FRONTDOOR REPORT JSON;
- FRONTDOOR REPORT JSON agrees with INFO ab (totals and per command) and
  with INFO commandstats / latencystats (the primary's side of a command is
  the same record those read; the secondary's copies count once per mirrored
  command);
- bench/ab_report.py writes one self-contained HTML page whose verdict,
  totals and per-command rows are those numbers, with both divergences'
  replies and diffs.
"""
import html
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import (Tests, start_frontdoor, start_redis, check, eq, skip, wait_until, frontdoor_is_redis,
                    info_fields, make_tempdir, Conn, HOST)

T = Tests(case_timeout=60)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "ab_report.py")


def info(c, section):
    raw = c.call("INFO", section)
    return info_fields(raw.decode() if isinstance(raw, bytes) else raw)


def fields(v):
    return dict(kv.split("=", 1) for kv in v.split(","))


@T.case
def verdict_json_and_html_agree_with_info():
    if frontdoor_is_redis():
        skip("the binary under test is redis-server: no A/B there")
    r = start_redis()
    fd = start_frontdoor(backend="redis", redis_address="%s:%d" % (HOST, r.port), ab_mode="mirror",
                         ab_secondary="lmdb", ab_dir=make_tempdir("fdtest-abr-"), ab_durability="nosync")
    with fd.conn() as c:
        cmds = []
        for i in range(300):
            cmds += [("SET", "k%d" % i, "v%d" % i), ("GET", "k%d" % i), ("INCR", "n%d" % (i % 7)),
                     ("HSET", "h", "f%d" % i, i), ("LPUSH", "l", i)]
        for i in range(0, len(cmds), 100):
            c.send_many(cmds[i:i + 100])
            c.read_n(len(cmds[i:i + 100]))
        with Conn(r.port) as direct:                  # behind frontdoor's back, on the primary
            eq(direct.cmd("SET", "k7", "changed"), b"+OK\r\n")
            eq(direct.cmd("HSET", "h", "f3", "changed"), b":0\r\n")
        c.cmd("GET", "k7")
        # one divergence kept before the next is made: their order is the
        # order their comparisons end, which a loaded machine can swap for
        # two commands in flight together (ci20)
        wait_until(lambda: len(c.call("FRONTDOOR", "AB")) == 1, what="the first divergence kept")
        c.cmd("HGETALL", "h")
        wait_until(lambda: int(info(c, "ab")["ab_queue"]) == 0, what="mirror queue drained")
        wait_until(lambda: len(c.call("FRONTDOOR", "AB")) == 2 and all(s[4] for s in c.call("FRONTDOOR", "AB")),
                   what="both divergences kept with their diffs")
        a = info(c, "ab")
        compared, div, races = int(a["ab_compared"]), int(a["ab_divergences"]), int(a["ab_races"])
        eq(div, 2, "divergences")
        eq(races, 0, "races (one client)")
        eq(compared, len(cmds) + 2, "compared")
        text = c.call("FRONTDOOR", "REPORT").decode()
        first = text.split("\n", 1)[0]
        check(first.startswith("verdict: "), "the verdict is the report's first line", text[:300])
        verdict = first[len("verdict: "):]
        m = re.fullmatch(r"lmdb answered (\d+\.\d\d) % identically \((\d+) divergences, (\d+) races of ([\d,]+) compared\)"
                         r"; (\d+\.\d)\u00d7 (slower|faster) at p99 (?:on|on every command \(least on) ([A-Z]+)\)?", verdict)
        check(m, "verdict shape", verdict)
        same = compared - div - races
        eq(m.group(1), "%.2f" % ((same * 10000 // compared) / 100.0), "identical share")
        eq((int(m.group(2)), int(m.group(3)), int(m.group(4).replace(",", ""))), (div, races, compared))
        # the JSON form: the same numbers
        rep = json.loads(c.call("FRONTDOOR", "REPORT", "JSON"))
        eq(rep["verdict"], verdict, "JSON verdict")
        eq((rep["mode"], rep["primary"], rep["secondary"]), ("mirror", "redis", "lmdb"))
        t = rep["totals"]
        eq((t["compared"], t["divergences"], t["races"], t["identical"], t["dropped"], t["mirrored"]),
           (compared, div, races, same, int(a["ab_dropped"]), int(a["ab_mirrored"])))
        by = {x["name"]: x for x in rep["commands"]}
        for name in ("get", "set", "incr", "hset", "lpush", "hgetall"):
            f = fields(a["ab_cmd_" + name])
            eq((by[name]["compared"], by[name]["divergences"], by[name]["races"]),
               (int(f["compared"]), int(f["divergences"]), int(f["races"])), name)
        eq((by["get"]["divergences"], by["hgetall"]["divergences"]), (1, 1))
        # latency per side: the primary's side of SET is the record commandstats/latencystats read
        cs, ls = info(c, "commandstats"), info(c, "latencystats")
        for name in ("set", "incr", "lpush"):
            calls = int(fields(cs["cmdstat_" + name])["calls"])
            eq(by[name]["primary"]["calls"], calls, name + " primary calls = commandstats")
            eq(by[name]["secondary"]["calls"], calls, name + " secondary copies = commandstats")
            eq("%.3f" % by[name]["primary"]["p99_us"], fields(ls["latency_percentiles_usec_" + name])["p99"],
               name + " primary p99 = latencystats")
        # the verdict's latency part: the worst p99 ratio among commands both sides ran >= 20 times
        cand = [(x["secondary"]["p99_us"] / x["primary"]["p99_us"], x["name"]) for x in rep["commands"]
                if min(x["primary"]["calls"], x["secondary"]["calls"]) >= 20 and x["primary"]["p99_us"] > 0
                and x["secondary"]["p99_us"] > 0]
        ratio, worst = max(cand)
        eq(m.group(7), worst.upper(), "the command named")
        eq(m.group(5), "%.1f" % (ratio if ratio >= 1 else 1 / ratio), "the ratio")
        eq(m.group(6), "slower" if ratio >= 1 else "faster")
        eq([d["command"] for d in rep["divergences"]], ["HGETALL h", "GET k7"], "divergences, newest first")
        eq(rep["divergences"][1]["primary"], '"changed"')
        check("f3" in rep["divergences"][0]["diff"], "hash diff names the field", rep["divergences"][0])
        # the HTML page
        out = os.path.join(make_tempdir("fdtest-abr-html-"), "ab.html")
        p = subprocess.run([sys.executable, SCRIPT, "--port", str(fd.port), "-o", out], capture_output=True,
                           text=True, timeout=30)
        eq(p.returncode, 0, "ab_report.py exit (%s)" % p.stderr)
        eq(p.stdout.strip(), verdict, "printed verdict")
        page = open(out, encoding="utf-8").read()
        check(page.startswith("<!DOCTYPE html>") and "<script" not in page and "http://" not in page.replace(
            "http://www.w3.org/2000/svg", ""), "self-contained page")
        v = re.search(r"<span class='verdict'>(.*?)</span>", page)
        check(v, "verdict in the page")
        eq(html.unescape(v.group(1)), verdict, "page verdict")
        check("<tr><td>compared</td><td>%s</td></tr>" % format(compared, ",") in page, "page: compared")
        check("<tr><td>divergences</td><td>%d</td></tr>" % div in page, "page: divergences")
        for name in ("get", "set", "hgetall"):
            x = by[name]
            row = "<tr><td>%s</td><td>%s</td><td>%s</td>" % (name, format(x["compared"], ","), format(x["identical"], ","))
            check(row in page, "page: %s compared/identical row" % name, row)
            lrow = "<tr><td>%s</td><td>%s</td>" % (name, format(x["primary"]["calls"], ","))
            check(lrow in page, "page: %s latency row" % name, lrow)
        check(html.escape('"changed"', quote=True) in page and "GET k7" in page and "HGETALL h" in page,
              "page: the divergences with both replies")
        check("<svg" in page, "page: charts")


if __name__ == "__main__":
    T.main()
