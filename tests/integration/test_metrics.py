#!/usr/bin/python3
"""The Prometheus endpoint (metrics-port, proxy/metrics.h), read by a real
parser: python3-prometheus-client's text parser from Debian.

(a) off by default, immutable at runtime.
(b) a mirrored workload (lmdb primary, lmdb secondary) with an error: the
    page parses; per-command calls/errors equal INFO commandstats; each
    command histogram is well formed (cumulative, +Inf = count) and agrees
    with INFO commandstats (count = calls, sum = usec within truncation) and
    INFO latencystats (p50 within the bucket the histogram puts the median
    in); per-backend histograms agree with INFO backends for primary and
    secondary; A/B counters equal INFO ab; connections counted.
(b2) a redis primary mirrored to lmdb: the noisy, deferred and unit A/B
    events are exported, equal INFO ab and are not 0.
(c) anything but GET /metrics (or /) is a 404/405, and the server lives on.
"""
import os
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import (Tests, start_frontdoor, check, eq, skip, free_port, frontdoor_is_redis, info_fields,
                    make_tempdir, Err, HOST, missing_prerequisite, start_redis, wait_until)

T = Tests()

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:                                   # tests/setup-debian.sh --test installs it
    text_string_to_metric_families = None


def need():
    if frontdoor_is_redis():
        skip("the binary under test is redis-server: no metrics endpoint")
    if text_string_to_metric_families is None:
        missing_prerequisite("python3-prometheus-client (tests/setup-debian.sh --test)")


def info(c, section):
    raw = c.call("INFO", section)
    return info_fields(raw.decode() if isinstance(raw, bytes) else raw)


def kv(v):
    return dict(x.split("=", 1) for x in v.split(","))


def scrape(port, path="/metrics"):
    with urllib.request.urlopen("http://%s:%d%s" % (HOST, port, path), timeout=5) as r:
        return r.headers.get("Content-Type"), r.read().decode()


def families(text):
    """{family name: [(sample name, labels, value)]}"""
    out = {}
    for fam in text_string_to_metric_families(text):
        out[fam.name] = [(s.name, s.labels, s.value) for s in fam.samples]
    return out


def series(fams, fam, name, **labels):
    got = [v for n, l, v in fams.get(fam, []) if n == name and all(l.get(k) == x for k, x in labels.items())]
    check(len(got) == 1, "one %s%r" % (name, labels), got)
    return got[0]


def buckets(fams, fam, **labels):
    """[(le, cumulative count)] of one histogram, in order."""
    out = [(float(l["le"]), v) for n, l, v in fams[fam]
           if n == fam + "_bucket" and all(l.get(k) == x for k, x in labels.items())]
    check(out and out[-1][0] == float("inf"), "ends with +Inf", out)
    check(all(a[0] < b[0] and a[1] <= b[1] for a, b in zip(out, out[1:])), "cumulative", out)
    return out


def check_hist(fams, fam, count, sum_us, p50_us, **labels):
    """The histogram has `count` observations summing to sum_us (INFO's
    truncated figure: within 1 us per call), and its median lies in the
    bucket that holds INFO's p50."""
    b = buckets(fams, fam, **labels)
    eq(b[-1][1], count, "%s %r: +Inf bucket = INFO count" % (fam, labels))
    eq(series(fams, fam, fam + "_count", **labels), count, "count")
    s = series(fams, fam, fam + "_sum", **labels) * 1e6
    check(sum_us - 1 <= s <= sum_us + count + 1, "%s %r: sum %.1f us vs INFO %.1f us" % (fam, labels, s, sum_us))
    # the first bucket holding half the observations is the one p50 falls in
    first = next(le for le, c in b if c >= 0.5 * count)
    below = [le for le, c in b if le < first]
    lo = below[-1] if below else 0.0
    # INFO's p50 is the upper edge of a fine bucket (~4% wide) clipped to the max: it may sit just above lo
    check(lo * 1e6 / 1.07 <= p50_us <= first * 1e6, "%s %r: INFO p50 %.3f us in (%g, %g] s" % (fam, labels, p50_us, lo, first))


@T.case
def off_by_default_and_immutable():
    need()
    fd = start_frontdoor(durability="nosync")
    with fd.conn() as c:
        eq(c.call("CONFIG", "GET", "metrics-port"), [b"metrics-port", b"0"])
        got = c.call("CONFIG", "SET", "metrics-port", "9999")
        check(isinstance(got, Err), "not at runtime", got)


@T.case
def scraped_page_agrees_with_info():
    need()
    mport = free_port()
    fd = start_frontdoor(durability="nosync", metrics_port=str(mport), ab_mode="mirror", ab_secondary="lmdb",
                         ab_dir=make_tempdir("fdtest-ab-"), ab_durability="nosync")
    with fd.conn() as c, fd.conn() as c2:
        cmds = [("SET", "k%d" % i, "v%d" % i) for i in range(500)] + [("GET", "k%d" % i) for i in range(500)]
        c.send_many(cmds)
        c.read_n(len(cmds))
        c.cmd("SET", "s", "x")
        check(c.cmd("INCR", "s").startswith(b"-ERR"), "an error")
        c2.cmd("PING")
        ctype, text = scrape(mport)
        check(ctype.startswith("text/plain; version=0.0.4"), "content type", ctype)
        f = families(text)
        cs, ls, be, ab = info(c, "commandstats"), info(c, "latencystats"), info(c, "backends"), info(c, "ab")
        for cmd in ("set", "get", "incr"):
            st = kv(cs["cmdstat_" + cmd])
            eq(series(f, "frontdoor_command_calls", "frontdoor_command_calls_total", cmd=cmd), int(st["calls"]), cmd)
            eq(series(f, "frontdoor_command_errors", "frontdoor_command_errors_total", cmd=cmd),
               int(st["failed_calls"]), cmd)
            check_hist(f, "frontdoor_command_duration_seconds", int(st["calls"]), int(st["usec"]),
                       float(kv(ls["latency_percentiles_usec_" + cmd])["p50"]), cmd=cmd)
        eq(series(f, "frontdoor_command_errors", "frontdoor_command_errors_total", cmd="incr"), 1)
        for role in ("primary", "secondary"):
            b = kv(be["be_" + role])
            eq(series(f, "frontdoor_backend_calls", "frontdoor_backend_calls_total", role=role, backend="lmdb"),
               int(b["calls"]), role)
            check_hist(f, "frontdoor_backend_duration_seconds", int(b["calls"]), float(b["usec"]),
                       float(b["p50_us"]), role=role, backend="lmdb")
            check_hist(f, "frontdoor_backend_wait_seconds", int(b["calls"]), float(b["wait_usec"]),
                       float(b["wait_p50_us"]), role=role, backend="lmdb")
        for event, field in (("mirrored", "ab_mirrored"), ("compared", "ab_compared"),
                             ("divergence", "ab_divergences"), ("race", "ab_races"), ("dropped", "ab_dropped")):
            eq(series(f, "frontdoor_ab", "frontdoor_ab_total", event=event), int(ab[field]), event)
        check(int(ab["ab_mirrored"]) >= 1002, "mirrored", ab)
        eq(series(f, "frontdoor_connected_clients", "frontdoor_connected_clients"), 2)
        check(series(f, "frontdoor_connections_received", "frontdoor_connections_received_total") >= 2, "accepted")
        # a second scrape counts the first
        eq(series(families(scrape(mport, "/")[1]), "frontdoor_metrics_scrapes", "frontdoor_metrics_scrapes_total"), 1)


@T.case
def ab_noisy_deferred_units_exported():
    """A redis primary mirrored to lmdb (ab-mirror-order primary): copies
    deferred, a transaction mirrored as a unit, a calibrated random script
    then counted noisy; each event equals INFO ab and is not 0."""
    need()
    r, mport = start_redis(), free_port()
    fd = start_frontdoor(durability="nosync", metrics_port=str(mport), backend="redis",
                         redis_address="%s:%d" % (HOST, r.port), ab_mode="mirror", ab_secondary="lmdb",
                         ab_dir=make_tempdir("fdtest-ab-"), ab_durability="nosync")
    rnd = "return redis.call('SRANDMEMBER', KEYS[1], 3)"
    with fd.conn() as c:
        c.call("SADD", "s", *["m%d" % i for i in range(50)])
        c.send_many([("MULTI",), ("SET", "u", "1"), ("INCR", "u"), ("EXEC",)])
        c.read_n(4)
        eq(c.cmd("FRONTDOOR", "AB", "CALIBRATE", "20"), b"+OK\r\n")
        for _ in range(40):                       # 20 calibrated, then 20 mirrored: noisy
            c.call("EVAL_RO", rnd, "1", "s")
        wait_until(lambda: info(c, "ab")["ab_queue"] == "0", what="mirror settled")
        ab, f = info(c, "ab"), families(scrape(mport)[1])
        for event, field in (("noisy", "ab_noisy"), ("deferred", "ab_deferred"), ("unit", "ab_units")):
            got = series(f, "frontdoor_ab", "frontdoor_ab_total", event=event)
            eq(got, int(ab[field]), event)
            check(got > 0, "%s counted" % event, ab)
        eq(series(f, "frontdoor_ab", "frontdoor_ab_total", event="unit"), 1, "one transaction")


@T.case
def other_requests_are_refused():
    need()
    mport = free_port()
    fd = start_frontdoor(durability="nosync", metrics_port=str(mport))
    try:
        scrape(mport, "/nothing")
        check(False, "404 expected")
    except urllib.error.HTTPError as e:
        eq(e.code, 404)
    req = urllib.request.Request("http://%s:%d/metrics" % (HOST, mport), data=b"x", method="POST")
    try:
        urllib.request.urlopen(req, timeout=5)
        check(False, "405 expected")
    except urllib.error.HTTPError as e:
        eq(e.code, 405)
    with fd.conn() as c:
        eq(c.cmd("PING"), b"+PONG\r\n")


if __name__ == "__main__":
    T.main()
