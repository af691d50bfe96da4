#!/usr/bin/python3
"""bench/fdload, the open-loop load generator, and frontdoor's traffic capture.

fdload: --help lists its flags; the open-loop schedule (request k intended at
k/rate on connection k mod clients, exactly, and sent at that pace); a server
that stalls once shows the stall in open-loop p99 and not in closed-loop p99
(coordinated omission); the mix, key distributions and value sizes within
tolerance; counts, fill, pipelining and the JSON against redis-server; SLO
search on a server throttled to a known rate; --tls against frontdoor's
tls-port (a client certificate, --sni, a wrong CA or name refused) and
bench/run --tls (redis-benchmark and fdload on every target's tls-port). Capture: what clients send
through frontdoor is what fdload --replay sends, byte for byte and per
client in order; hashing keeps sizes; sample, size cap and STOP work; a
redis-py session captured and replayed against every backend in the suite.

fdload comes from $FDLOAD_BIN, else next to $FRONTDOOR_BIN (the same build).
Fake servers (a stalling one, a throttled one, a recorder) are small Python
RESP servers in this file."""
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from fdtest import (Tests, check, eq, free_port, frontdoor_bin, make_tempdir,  # noqa: E402
                    start_frontdoor, start_redis, HOST, tls_pki, tls_cert)

T = Tests(case_timeout=60)


def fdload_bin():
    b = os.environ.get("FDLOAD_BIN")
    if b:
        return b
    cand = os.path.join(os.path.dirname(os.path.abspath(frontdoor_bin())), "fdload")
    if os.access(cand, os.X_OK):
        return cand
    from fdtest import skip
    skip("no fdload next to %s: build the fdload target (needs libhiredis-dev) or set FDLOAD_BIN" % frontdoor_bin())


def fdload(*args, timeout=40, check_rc=True):
    r = subprocess.run([fdload_bin(), "--no-progress"] + [str(a) for a in args],
                       capture_output=True, timeout=timeout)
    if check_rc and r.returncode != 0:
        raise AssertionError("fdload %s exited %d\nstdout: %s\nstderr: %s"
                             % (" ".join(map(str, args)), r.returncode, r.stdout.decode(errors="replace")[-2000:],
                                r.stderr.decode(errors="replace")[-2000:]))
    return r


def fdload_json(*args, timeout=40):
    r = fdload(*args, "--json", "-", "-q", timeout=timeout)
    return json.loads(r.stdout)


def dry(*args):
    """fdload --dry-run lines -> [(intended_us or None, conn, [args])]."""
    out = fdload("--dry-run", *args).stdout.decode()
    rows = []
    for line in out.splitlines():
        head, _, rest = line.partition("\t")
        t, c = head.split(" ")
        rows.append((None if t == "-" else float(t), int(c), rest.split(" ")))
    return rows


# ------------------------------------------------------------ fake servers

def read_command(f):
    """One RESP multibulk from a socket file -> (raw bytes, [args]) or None."""
    line = f.readline()
    if not line:
        return None
    if not line.startswith(b"*"):
        return line, line.split()
    raw = [line]
    args = []
    for _ in range(int(line[1:])):
        h = f.readline()
        n = int(h[1:])
        d = f.read(n + 2)
        raw += [h, d]
        args.append(d[:-2])
    return b"".join(raw), args


class FakeServer:
    """A threaded RESP server: handle(args) -> reply bytes (may sleep). Each
    connection's received bytes are kept in .streams (in connection order)."""

    def __init__(self, handle):
        self.handle = handle
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((HOST, 0))
        self.sock.listen(256)
        self.port = self.sock.getsockname()[1]
        self.streams = []
        self.arrivals = []
        self.lock = threading.Lock()
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                s, _ = self.sock.accept()
            except OSError:
                return
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self.lock:
                buf = bytearray()
                self.streams.append(buf)
            threading.Thread(target=self._serve, args=(s, buf), daemon=True).start()

    def _serve(self, s, buf):
        f = s.makefile("rb")
        try:
            while True:
                c = read_command(f)
                if c is None:
                    return
                raw, args = c
                buf += raw
                with self.lock:
                    self.arrivals.append(time.monotonic())
                s.sendall(self.handle(args))
        except (OSError, ValueError):
            pass
        finally:
            s.close()

    def close(self):
        self.closed = True
        self.sock.close()


def ok_reply(args):
    if args and args[0].upper() == b"GET":
        return b"$-1\r\n"
    return b"+OK\r\n"


# ------------------------------------------------------------------ fdload

@T.case
def help_lists_the_flags():
    out = fdload("--help").stdout.decode()
    for flag in ["-h, --host", "-p, --port", "-c, --clients", "-P, --pipeline", "-n, --requests", "--duration",
                 "--rate", "--mix", "--keys", "--dist", "--value-size", "--fill", "--warmup", "--replay", "--speed",
                 "--slo", "--json", "--timeline", "--dry-run", "zipf", "hot"]:
        check(flag in out, "--help lacks " + flag, out)
    r = fdload("--bogus", check_rc=False)
    eq(r.returncode, 2, "an unknown flag")


@T.case
def open_loop_schedule_arithmetic():
    # request k: intended k/rate after the start, on connection k mod clients
    rows = dry("--rate", "1000", "-c", "4", "-n", "12", "--mix", "get")
    eq([r[0] for r in rows], [k * 1000.0 for k in range(12)], "intended µs at 1000/s")
    eq([r[1] for r in rows], [k % 4 for k in range(12)], "connection of each request")
    rows = dry("--rate", "3", "-c", "2", "-n", "4", "--mix", "get")
    eq([r[0] for r in rows], [0.0, 333333.333, 666666.666, 1000000.0], "intended µs at 3/s (ns, truncated)")
    # --duration at a rate: exactly duration*rate requests
    eq(len(dry("--rate", "250", "--duration", "2", "--mix", "get")), 500, "requests for 2 s at 250/s")
    # sent at that pace on a real socket: 300/s over 3 connections for 1 s
    srv = FakeServer(ok_reply)
    try:
        res = fdload_json("-p", srv.port, "--rate", "300", "-c", "3", "--duration", "1", "--mix", "get")
        eq(res["requests"], 300, "requests answered")
        eq(res["mode"], "open")
        eq(res["latency_from"], "intended")
        a = sorted(srv.arrivals)
        span = a[-1] - a[0]
        check(0.95 <= span <= 1.15, "300 requests at 300/s arrive over ~1 s, not in a burst", span)
        # no second holds much more than its share: at most 2x the rate's 100 per 1/3 s
        thirds = [sum(1 for x in a if a[0] + i / 3 <= x < a[0] + (i + 1) / 3) for i in range(3)]
        check(all(70 <= n <= 130 for n in thirds), "arrivals spread evenly", thirds)
        eq(sum(s["sent"] for s in res["timeline"]), 300, "timeline sent")
        eq(sum(s["done"] for s in res["timeline"]), 300, "timeline done")
    finally:
        srv.close()


@T.case
def stall_shows_in_open_loop_p99_not_closed_loop():
    """The server stalls once for 0.5 s. Open loop at 200/s: the ~100
    requests intended during the stall all wait (latency from their intended
    time), so p99 is hundreds of ms. Closed loop: the one connection stops
    sending during the stall, one request is slow out of thousands, p99 stays
    low (the coordinated-omission blind spot) though max sees it."""
    def make():
        state = {"n": 0, "t0": None}

        def handle(args):
            now = time.monotonic()
            if state["t0"] is None:
                state["t0"] = now
            state["n"] += 1
            if state.get("stalled") is None and now - state["t0"] >= 0.8:
                state["stalled"] = True
                time.sleep(0.5)
            return ok_reply(args)
        return FakeServer(handle)

    srv = make()
    try:
        op = fdload_json("-p", srv.port, "--rate", "200", "-c", "1", "--duration", "2.5", "--mix", "get")
    finally:
        srv.close()
    srv = make()
    try:
        cl = fdload_json("-p", srv.port, "-c", "1", "--duration", "2.5", "--mix", "get")
    finally:
        srv.close()
    eq(op["requests"], 500, "open loop sent every request")
    check(op["latency_ms"]["p99"] >= 300, "open loop p99 shows the 500 ms stall", op["latency_ms"])
    check(op["latency_ms"]["p90"] >= 100, "open loop: ~1/5 of the requests were delayed", op["latency_ms"])
    check(cl["requests"] > 1000, "closed loop ran", cl["requests"])
    check(cl["latency_ms"]["max"] >= 400, "closed loop saw the stall once (max)", cl["latency_ms"])
    check(cl["latency_ms"]["p99"] < 50, "closed loop p99 hides it", cl["latency_ms"])
    # the timeline puts the stall in its second
    check(max(s["p99_ms"] for s in op["timeline"]) >= 300, "timeline p99 shows the stall", op["timeline"])


@T.case
def mix_key_distributions_value_sizes():
    n = 20000
    rows = dry("-n", n, "--mix", "get:90,set:10", "--keys", "10", "-d", "10-20", "--seed", "7")
    gets = sum(1 for r in rows if r[2][0] == "GET")
    check(abs(gets / n - 0.9) < 0.015, "get share ~0.9", gets / n)
    ids = [int(r[2][1][4:]) for r in rows]
    counts = [ids.count(i) for i in range(10)]
    check(all(abs(c - n / 10) < n / 10 * 0.1 for c in counts), "uniform over 10 keys within 10%", counts)
    sizes = [len(r[2][2]) for r in rows if r[2][0] == "SET"]
    eq((min(sizes), max(sizes)), (10, 20), "value sizes span 10-20")
    eq(len(set(sizes)), 11, "every size 10..20 drawn")
    # a weighted list of sizes
    rows = dry("-n", n, "--mix", "set", "--keys", "10", "-d", "8:70,40:20,100:10", "--seed", "11")
    lens = [len(r[2][2]) if not r[2][2].startswith("<") else int(r[2][2][1:].split()[0]) for r in rows]
    for size, share in ((8, 0.7), (40, 0.2), (100, 0.1)):
        check(abs(lens.count(size) / n - share) < 0.015, "value size %d share ~%.1f" % (size, share), lens.count(size) / n)
    eq(set(lens), {8, 40, 100}, "only the listed sizes")
    check(fdload("--dry-run", "-d", "8:0", check_rc=False).returncode != 0, "a zero weight is refused")
    # zipf 0.99 over 100 keys: rank r has probability (1/(r+1)^0.99) / zeta(100)
    rows = dry("-n", n, "--mix", "get", "--keys", "100", "--dist", "zipf:0.99", "--seed", "3")
    ids = [int(r[2][1][4:]) for r in rows]
    zeta = sum(1 / (i ** 0.99) for i in range(1, 101))
    for r in (0, 1, 9):
        want = (1 / (r + 1) ** 0.99) / zeta
        got = ids.count(r) / n
        check(abs(got - want) < max(0.15 * want, 0.003), "zipf rank %d share" % r, got, want)
    check(max(ids) < 100 and min(ids) == 0, "zipf ids in range")
    # hot: 10% of 100 keys get 90% of the operations
    rows = dry("-n", n, "--mix", "get", "--keys", "100", "--dist", "hot:0.1:0.9", "--seed", "5")
    hot = sum(1 for r in rows if int(r[2][1][4:]) < 10) / n
    check(abs(hot - 0.9) < 0.015, "hot share ~0.9", hot)
    # seq: 0,1,2,... wrapping at --keys
    rows = dry("-n", 25, "--mix", "get", "--keys", "10", "--dist", "seq")
    eq([int(r[2][1][4:]) for r in rows], [i % 10 for i in range(25)], "seq order")
    # custom templates and placeholders; the same seed sends the same commands
    rows = dry("-n", 50, "--mix", "ZADD board {score} {member}:1,LPUSH list:{id} {value}:1,ping:1", "-d", "5", "--seed", "9")
    eq(rows, dry("-n", 50, "--mix", "ZADD board {score} {member}:1,LPUSH list:{id} {value}:1,ping:1", "-d", "5", "--seed", "9"),
       "deterministic with --seed")
    kinds = {r[2][0] for r in rows}
    eq(kinds, {"ZADD", "LPUSH", "PING"}, "custom mix")
    z = next(r[2] for r in rows if r[2][0] == "ZADD")
    check(z[1] == "board" and z[2].isdigit() and z[3].startswith("m:"), "ZADD placeholders", z)
    lp = next(r[2] for r in rows if r[2][0] == "LPUSH")
    check(lp[1].startswith("list:") and len(lp[1]) == 17 and lp[2] == "xxxxx", "LPUSH placeholders", lp)
    r = fdload("--dry-run", "--mix", "GET {nope}", check_rc=False)
    check(r.returncode != 0 and b"placeholder" in r.stderr, "unknown placeholder refused", r.stderr)
    r = fdload("--dry-run", "--dist", "zipf:1.5", check_rc=False)
    check(r.returncode != 0, "zipf theta out of range refused")


@T.case
def against_redis_server_counts_fill_pipeline_json():
    rs = start_redis()
    res = fdload_json("-p", rs.port, "-c", "8", "-P", "16", "-n", "20000", "--mix", "set:1,get:1,incr:1",
                      "--keys", "500", "--fill", "-d", "37")
    eq(res["requests"], 20000, "requests")
    eq(res["errors"], 0, "errors: " + res["first_error"])
    eq(sum(res["commands"].values()), 20000, "commands add up")
    eq(res["mode"], "closed")
    eq(res["pipeline"], 16)
    eq(sum(c for _, c in res["histogram_ns"]), 20000, "histogram count")
    lat = res["latency_ms"]
    check(0 < lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p99.9"] <= lat["p99.99"] <= lat["max"], "percentiles ordered", lat)
    c = rs.conn()
    check(int(c.call("DBSIZE")) >= 500, "fill wrote every key")
    eq(c.call("STRLEN", "key:000000000499"), 37, "value size")
    eq(c.call("STRLEN", "key:000000000000"), 37, "value size")
    # errors are counted and the first one kept
    res = fdload_json("-p", rs.port, "-c", "2", "-n", "100", "--mix", "LPUSH {key} x", "--keys", "5")
    eq(res["errors"], 100, "WRONGTYPE on string keys")
    check(res["first_error"].startswith("WRONGTYPE"), "first error kept", res["first_error"])
    # open loop at a rate redis-server sustains easily: latency stays low
    res = fdload_json("-p", rs.port, "-c", "4", "--rate", "2000", "--duration", "1", "--keys", "500")
    eq(res["requests"], 2000)
    check(res["latency_ms"]["p50"] < 5, "open loop p50 against an idle redis-server", res["latency_ms"])


@T.case
def tls_against_frontdoor_tls_port():
    """fdload --tls with a client certificate (tls-auth-clients yes) against
    frontdoor's tls-port, pipelined: every request answered, the keys are
    there; --sni with the certificate's name works, another name, a CA that
    did not sign the server's certificate, or no client certificate fail
    with the reason."""
    p = tls_pki()
    d = p["dir"]
    if not os.path.exists(os.path.join(d, "ca2.crt")):
        tls_cert(d, "ca2", cn="fdtest-ca2")
    tport = free_port()
    fd = start_frontdoor(tls_port=tport, tls_cert_file=p["server.crt"], tls_key_file=p["server.key"],
                         tls_ca_cert_file=p["ca.crt"], tls_auth_clients="yes")
    tls = ["--tls", "--cacert", p["ca.crt"], "--cert", p["client.crt"], "--key", p["client.key"]]
    res = fdload_json("-p", tport, *tls, "-c", "4", "-P", "16", "-n", "20000", "--mix", "set:1,get:1",
                      "--keys", "300", "--fill", "-d", "5000")
    eq(res["requests"], 20000, "requests")
    eq(res["errors"], 0, "errors: " + res["first_error"])
    c = fd.conn()
    eq(c.call("DBSIZE"), 300, "fill over TLS wrote every key")
    eq(c.call("STRLEN", "key:000000000299"), 5000, "value size (records of 16 kB and more)")
    res = fdload_json("-p", tport, *tls, "--sni", "localhost", "-c", "2", "-n", "200")
    eq((res["requests"], res["errors"]), (200, 0))
    for extra, why in ((["--sni", "elsewhere.example"], b"hostname mismatch"),
                       (["--cacert", os.path.join(d, "ca2.crt")], b"certificate verify failed")):
        r = fdload("-p", tport, *tls, *extra, "-n", "10", check_rc=False)
        check(r.returncode != 0 and why in r.stderr, why, r.stderr)
    # no client certificate: TLS 1.3 tells after the handshake, at the first read
    r = fdload("-p", tport, "--tls", "--cacert", p["ca.crt"], "-c", "1", "-n", "10", "--json", "-", "-q", check_rc=False)
    check(b"lost" in r.stderr and b"certificate required" in r.stderr, "the reason is shown", r.stderr)
    res = json.loads(r.stdout)
    eq((res["errors"], res["unanswered"]), (1, 1), "the request sent was not answered")
    check("certificate required" in res["first_error"], res["first_error"])
    r = fdload("-p", tport, "--cacert", p["ca.crt"], "-n", "10", check_rc=False)
    check(r.returncode != 0 and b"go with --tls" in r.stderr, r.stderr)


@T.case
def bench_run_tls():
    """bench/run --tls: redis-benchmark (seed-setget) and fdload (fdload-mix)
    measure each target's tls-port; twemproxy is skipped with the reason."""
    import shutil
    import tempfile
    out = tempfile.mkdtemp(prefix="fdtest-benchrun-tls-")
    try:
        run = [sys.executable, os.path.join(REPO, "bench", "run"), "--quick", "--tls", "--frontdoor", frontdoor_bin(),
               "--fdload", fdload_bin(), "--backends", "lmdb-nosync,twemproxy", "-c", "4", "--repeats", "1"]
        r = subprocess.run(run + ["--scenario", "seed-setget", "-n", "2000", "-P", "16", "--out", out],
                           capture_output=True, text=True, timeout=60)
        eq(r.returncode, 0, "bench/run exit: " + r.stderr[-1500:])
        r = subprocess.run(run + ["--scenario", "fdload-mix", "--fdload-keys", "1000", "--rates", "300",
                                  "--fdload-duration", "1", "--out", os.path.join(out, "mix")],
                           capture_output=True, text=True, timeout=60)
        eq(r.returncode, 0, "bench/run exit: " + r.stderr[-1500:])
        for folder in (out, os.path.join(out, "mix")):
            res = json.load(open(os.path.join(folder, "results.json")))
            runs = [x for x in res["runs"] if x["target"] in ("redis-direct", "lmdb-nosync")]
            check(len(runs) >= 2 and all(x["ok"] for x in runs), "every run ok", [(x["target"], x.get("reason")) for x in runs])
            for x in runs:
                argv = x["argv"]
                check("--tls" in argv and "--cacert" in argv, "the client was told TLS", argv)
                plain = [e["scenarios"][sc]["port"] for e in [res["targets"][x["target"]]] for sc in e["scenarios"]]
                check(int(argv[argv.index("-p") + 1]) not in plain, "measured on the tls-port, not the plain one", argv, plain)
            tw = res["targets"].get("twemproxy", {})
            check("TLS" in json.dumps(tw), "twemproxy skipped with the reason", tw)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def throttled_server(rate):
    """Serves one request per 1/rate s, all connections together (a virtual
    clock: the k-th reply goes no earlier than k/rate after the first)."""
    st = {"next": None}
    lock = threading.Lock()

    def handle(args):
        with lock:
            now = time.monotonic()
            start = now if st["next"] is None or st["next"] < now else st["next"]
            st["next"] = start + 1.0 / rate
            done = st["next"]
        d = done - time.monotonic()
        if d > 0:
            time.sleep(d)
        return ok_reply(args)
    return FakeServer(handle)


@T.case
def slo_search_converges_on_a_throttled_server():
    """400 requests/s at most. Below it latency is the 2.5 ms service time;
    above it the queue grows for the whole step. p90 rather than p99: with
    200-400 requests per 1 s step, p99 is the 3rd-worst request, and Python
    thread wake-ups on 2 shared cores reach tens of ms now and then."""
    srv = throttled_server(400)
    try:
        res = fdload_json("-p", srv.port, "-c", "4", "--mix", "get", "--slo", "p90<20ms", "--slo-step", "1",
                          "--slo-steps", "7", timeout=50)
    finally:
        srv.close()
    slo = res["slo"]
    check(340 <= slo["probe_closed_loop"] <= 420, "closed-loop probe ~ the throttle", slo["probe_closed_loop"])
    check(320 <= slo["max_rate"] <= 440, "max rate under p90<20ms ~ 400/s", slo["max_rate"], slo["steps"])
    eq(slo["quantile"], 0.9)
    eq(slo["limit_ms"], 20.0)
    for st in slo["steps"]:
        eq(st["pass"], st["quantile_ms"] <= 20 and st["dropped"] <= (st["requests"] + st["dropped"]) // 100,
           "verdict of step at %.0f/s" % st["rate"])
    check(any(not st["pass"] for st in slo["steps"]), "some step above capacity failed", slo["steps"])
    # a failed step was run once more (--slo-retry 1) and failed again
    check(all(st["tries"] == 2 for st in slo["steps"] if not st["pass"]), "a failed step ran twice", slo["steps"])
    check(all(st["tries"] in (1, 2) for st in slo["steps"]), "at most one rerun", slo["steps"])
    check(all(st["pass"] for st in slo["steps"] if st["rate"] <= 320), "steps well under capacity pass", slo["steps"])
    print("  max rate %.0f/s (probe %.0f/s), steps: %s" % (slo["max_rate"], slo["probe_closed_loop"],
          " ".join("%.0f%s" % (st["rate"], "+" if st["pass"] else "-") for st in slo["steps"])))
    r = fdload("--slo", "p99<2", "-p", "1", check_rc=False)
    check(r.returncode != 0 and b"unit" in r.stderr, "a limit without a unit is refused", r.stderr)


# ------------------------------------------------------------------ capture

def read_capture(path):
    """-> (header wall ns, [(t_ns, client, flags, bytes)])"""
    with open(path, "rb") as f:
        data = f.read()
    eq(data[:8], b"FDCAP1\n\0", "capture magic")
    wall = struct.unpack_from("<Q", data, 8)[0]
    recs, off = [], 16
    while off + 24 <= len(data):
        t, client, n, flags = struct.unpack_from("<QQII", data, off)
        recs.append((t, client, flags, data[off + 24:off + 24 + n]))
        off += 24 + n
    eq(off, len(data), "the capture ends on a record boundary")
    return wall, recs


def enc(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def capture_path(tag):
    return os.path.join(make_tempdir("fdtest-cap-"), tag + ".fdcap")


def start_capture(fd, path, **settings):
    """Capture from now on (fdtest's start-up PING stays out of it)."""
    c = fd.conn()
    for k, v in settings.items():
        eq(c.cmd("CONFIG", "SET", k.replace("_", "-"), v), b"+OK\r\n", "CONFIG SET " + k)
    eq(c.cmd("FRONTDOOR", "CAPTURE", "START", path), b"+OK\r\n", "CAPTURE START")


@T.case
def capture_then_replay_is_byte_identical_per_client():
    path = capture_path("ident")
    fd = start_frontdoor()
    start_capture(fd, path)
    conns = [fd.conn() for _ in range(3)]
    want = [bytearray() for _ in conns]
    # interleaved: pipelines, binary-safe values, inline commands (recorded as multibulk)
    for rnd in range(20):
        for i, c in enumerate(conns):
            cmds = [enc("SET", "k%d:%d" % (i, rnd), b"v\r\n\x00" * (rnd + 1)), enc("INCR", "n%d" % i),
                    enc("RPUSH", "l%d" % i, "a", "b")]
            c.send_raw(b"".join(cmds))
            for _ in cmds:
                c.read()
            for x in cmds:
                want[i] += x
    conns[1].send_raw(b"GET k1:0\r\n")
    conns[1].read()
    want[1] += enc("GET", "k1:0")
    conns[2].cmd("AUTH", "nopass")          # never recorded (an error here: no requirepass)
    conns[0].cmd("FRONTDOOR", "CAPTURE", "STOP")
    _, recs = read_capture(path)
    per = {}
    for t, client, flags, raw in recs:
        per.setdefault(client, bytearray()).extend(raw)
        eq(flags, 0, "not hashed")
    check(not any(b"AUTH" in bytes(v) for v in per.values()), "AUTH not recorded")
    stop = enc("FRONTDOOR", "CAPTURE", "STOP")
    got = sorted(bytes(v).replace(stop, b"") for v in per.values())
    eq(got, sorted(bytes(w) for w in want), "capture = what each client sent")
    ts = [r[0] for r in recs]
    eq(ts, sorted(ts), "arrival times in order")
    # replay as fast as possible against a recorder: the same bytes per connection
    rec = FakeServer(ok_reply)
    try:
        res = fdload_json("-p", rec.port, "--replay", path, "--speed", "max")
        eq(res["requests"], 20 * 9 + 1, "replayed commands (FRONTDOOR left out)")
        eq(res["skipped"], 1, "FRONTDOOR CAPTURE STOP skipped")
        time.sleep(0.1)
        eq(sorted(bytes(s) for s in rec.streams), sorted(bytes(w) for w in want), "replayed bytes per connection")
    finally:
        rec.close()


@T.case
def replay_keeps_the_recorded_pace_scaled():
    path = capture_path("pace")
    fd = start_frontdoor()
    start_capture(fd, path)
    c = fd.conn()
    c.cmd("SET", "a", "1")
    time.sleep(0.6)
    c.cmd("GET", "a")
    c.cmd("FRONTDOOR", "CAPTURE", "STOP")
    # the directive captures from start-up (fdtest's readiness PING is the first command)
    p2 = capture_path("startup")
    fd2 = start_frontdoor(capture_file=p2)
    fd2.conn().cmd("FRONTDOOR", "CAPTURE", "STOP")
    eq(read_capture(p2)[1][0][3], enc("PING"), "capture-file at start-up")
    for speed, gap in (("1", 0.6), ("2x", 0.3)):
        rec = FakeServer(ok_reply)
        try:
            fdload_json("-p", rec.port, "--replay", path, "--speed", speed)
            a = rec.arrivals
            eq(len(a), 2)
            check(abs((a[1] - a[0]) - gap) < 0.08, "gap at speed %s" % speed, a[1] - a[0], gap)
        finally:
            rec.close()


@T.case
def capture_hash_sample_and_size_cap():
    path = capture_path("hash")
    fd = start_frontdoor()
    start_capture(fd, path, capture_hash="yes")
    c = fd.conn()
    c.cmd("SET", "secretkey", "secretvalue-0123456789-abcdefghij", "EX", "100")
    c.cmd("GET", "secretkey")
    c.cmd("ZADD", "board", "12.5", "alice")
    c.cmd("FRONTDOOR", "CAPTURE", "STOP")
    _, recs = read_capture(path)
    raw = b"".join(r[3] for r in recs)
    check(b"secret" not in raw and b"alice" not in raw and b"board" not in raw, "keys and values hashed", raw)
    eq([r[2] for r in recs[:3]], [1, 1, 1], "hashed flag")
    lines = fdload("--dry-run", "--replay", path).stdout.decode().splitlines()
    setargs = lines[0].split("\t")[1].split(" ")
    eq([len(x) for x in setargs], [3, 9, 33, 2, 3], "sizes kept")
    eq((setargs[0], setargs[3], setargs[4]), ("SET", "EX", "100"), "command, option words and numbers kept")
    getargs = lines[1].split("\t")[1].split(" ")
    eq(getargs[1], setargs[1], "the same key hashes the same")
    zargs = lines[2].split("\t")[1].split(" ")
    eq(zargs[2], "12.5", "score kept")
    # sample: whole clients in or out
    path = capture_path("sample")
    fd.conn().cmd("CONFIG", "SET", "capture-hash", "no")
    fd.conn().cmd("CONFIG", "SET", "capture-sample", "0.5")
    eq(fd.conn().cmd("FRONTDOOR", "CAPTURE", "START", path), b"+OK\r\n")
    clients = [fd.conn() for _ in range(40)]
    for i, cl in enumerate(clients):
        for k in range(3):
            cl.cmd("SET", "s%d" % i, k)
    fd.conn().cmd("CONFIG", "SET", "capture-file", "")
    _, recs = read_capture(path)
    by = {}
    for r in recs:
        by.setdefault(r[1], []).append(r[3])
    by = {k: v for k, v in by.items() if not any(b"CONFIG" in x for x in v)}
    check(5 <= len(by) <= 35, "about half of 40 clients recorded", len(by))
    check(all(len(v) == 3 for v in by.values()), "each recorded client complete", by)
    # the size cap stops the capture
    path = capture_path("cap")
    fd.conn().cmd("CONFIG", "SET", "capture-sample", "1")
    fd.conn().cmd("CONFIG", "SET", "capture-max-size", "2000")
    fd.conn().cmd("FRONTDOOR", "CAPTURE", "START", path)
    c = fd.conn()
    for i in range(100):
        c.cmd("SET", "key%d" % i, "x" * 20)
    st = fd.conn().call("FRONTDOOR", "CAPTURE", "STATUS")
    check(b"active" in st[0] if isinstance(st, list) else True, "status reply", st)
    eq(dict(zip(st[0::2], st[1::2]))[b"active"] if isinstance(st, list) else st[b"active"], 0, "stopped at the cap")
    check(os.path.getsize(path) <= 2000, "file within capture-max-size", os.path.getsize(path))
    check(len(read_capture(path)[1]) >= 20, "recorded until the cap")
    # start/stop many times: the flush timer must not unbalance the event loop
    # (an unref'ed libev watcher stopped without ev_ref made frontdoor exit)
    c = fd.conn()
    for i in range(25):
        eq(c.cmd("FRONTDOOR", "CAPTURE", "START", capture_path("cycle%d" % i)), b"+OK\r\n")
        c.cmd("SET", "cycle", i)
        time.sleep(0.12)                   # a flush tick while on
        eq(c.cmd("FRONTDOOR", "CAPTURE", "STOP"), b"+OK\r\n")
    time.sleep(0.2)
    eq(fd.conn().cmd("PING"), b"+PONG\r\n", "frontdoor still serving after 25 start/stop cycles")
    r = fd.conn().cmd("CONFIG", "SET", "capture-file", "/nonexistent-dir/x.fdcap")
    check(r.startswith(b"-ERR"), "an unwritable capture file is refused", r)
    r = fd.conn().cmd("FRONTDOOR", "CAPTURE", "START", "/nonexistent-dir/y.fdcap")
    check(r.startswith(b"-ERR can't open the capture file"), "START on an unwritable path refused", r)
    eq(fd.conn().call("CONFIG", "GET", "capture-file"), [b"capture-file", b""], "no capture configured after the failures")


def redis_py_session(port):
    """A redis-py session in the pattern of an RQ producer and worker. RQ itself
    (python3-rq) wraps its writes in MULTI/EXEC, which frontdoor refuses
    (unknown command on the embedded backends; "not supported" on the redis
    backend, whose connections are shared), so RQ cannot run through
    frontdoor: its command pattern is imitated with plain pipelines. {rq}
    keeps every key in one cluster slot."""
    import redis
    r = redis.Redis(host=HOST, port=port)
    r.sadd("{rq}:queues", "{rq}:queue:default")
    for i in range(20):
        job = "{rq}:job:%d" % i
        with r.pipeline(transaction=False) as p:
            p.hset(job, mapping={"status": "queued", "data": "payload-%d" % i * 3, "origin": "default"})
            p.expire(job, 500)
            p.rpush("{rq}:queue:default", str(i))
            p.execute()
    done = 0
    while True:
        jid = r.lpop("{rq}:queue:default")
        if jid is None:
            break
        job = "{rq}:job:" + jid.decode()
        r.hget(job, "data")
        with r.pipeline(transaction=False) as p:
            p.hset(job, "status", "finished")
            p.zadd("{rq}:finished", {jid: done})
            p.incr("{rq}:done")
            p.execute()
        done += 1
    r.set("{rq}:worker:w1", "idle", ex=60)
    r.mget("{rq}:worker:w1", "{rq}:done")
    r.zrange("{rq}:finished", 0, -1, withscores=True)
    r.delete("{rq}:worker:w1")
    r.connection_pool.disconnect()


def final_state(port):
    import redis
    r = redis.Redis(host=HOST, port=port)
    st = (r.get("{rq}:done"), r.zcard("{rq}:finished"), r.hget("{rq}:job:7", "status"),
          r.llen("{rq}:queue:default"), sorted(r.smembers("{rq}:queues")), r.exists("{rq}:worker:w1"))
    r.connection_pool.disconnect()
    return st


@T.case
def redis_py_session_replayed_on_every_backend():
    try:
        import redis  # noqa: F401
    except ImportError:
        from fdtest import skip
        skip("python3-redis is not installed")
    path = capture_path("rq")
    fd = start_frontdoor()
    start_capture(fd, path)
    redis_py_session(fd.port)
    fd.conn().cmd("FRONTDOOR", "CAPTURE", "STOP")
    want = final_state(fd.port)
    eq(want[0], b"20", "the session ran")
    n = len(read_capture(path)[1]) - 1                      # STOP is left out
    targets = [("redis-server", lambda: start_redis())]
    for be in ("lmdb", "leveldb", "redis", "mongodb", "redis-cluster"):
        targets.append((be, lambda be=be: start_frontdoor(backend=be)))
    ran = []
    for name, start in targets:
        try:
            srv = start()
        except Exception as e:  # noqa: BLE001  (a backend not built / no cluster support here)
            if "Skip" in type(e).__name__ or "unknown backend" in str(e):
                continue
            raise
        res = fdload_json("-p", srv.port, "--replay", path, "--speed", "max")
        eq(res["requests"], n, name + ": replayed")
        eq(res["errors"], 0, name + ": errors: " + res["first_error"])
        eq(final_state(srv.port), want, name + ": the state the session left")
        ran.append(name)
    check({"redis-server", "lmdb"} <= set(ran), "replayed on redis-server and lmdb at least", ran)
    print("  replayed on: " + ", ".join(ran))


@T.case
def capture_through_the_ab_mirror():
    """In A/B mirror mode the capture records what clients send, once (not
    the copies sent to the secondary), and replays the same."""
    path = capture_path("mirror")
    fd = start_frontdoor(backend="lmdb", ab_mode="mirror", ab_secondary="lmdb",
                         ab_dir=make_tempdir("fdtest-ab-"), ab_durability="nosync")
    start_capture(fd, path)
    c = fd.conn()
    sent = [enc("SET", "m%d" % i, "v%d" % i) for i in range(30)] + [enc("GET", "m%d" % i) for i in range(30)]
    for x in sent:
        c.send_raw(x)
        c.read()
    c.cmd("FRONTDOOR", "CAPTURE", "STOP")
    recs = [r[3] for r in read_capture(path)[1]]
    eq(recs[:-1], sent, "each command once, as sent")
    rs = start_redis()
    res = fdload_json("-p", rs.port, "--replay", path, "--speed", "max")
    eq((res["requests"], res["errors"]), (60, 0))
    eq(rs.conn().call("GET", "m29"), b"v29", "replayed writes landed")


# ------------------------------------------------------- bench/run + compare

@T.case
def bench_run_fdload_scenarios_and_compare():
    """bench/run's fdload scenarios on redis-server alone (quick, small): the
    runs are ok, results.json matches its schema, the report has the
    latency-vs-rate and SLO sections; --compare of a run with itself says
    same, against a far better baseline says worse (exit 3)."""
    import shutil
    import tempfile
    sys.path.insert(0, os.path.join(REPO, "bench"))
    from fdbench import schema
    out = tempfile.mkdtemp(prefix="fdtest-benchrun-")
    try:
        run = [sys.executable, os.path.join(REPO, "bench", "run"), "--quick", "--frontdoor", frontdoor_bin(),
               "--fdload", fdload_bin(), "--backends", "redis-direct", "--no-baselines", "-c", "4",
               "--fdload-keys", "1000"]
        r = subprocess.run(run + ["--scenario", "fdload-mix", "--rates", "300,1000", "--fdload-duration", "1",
                                  "--repeats", "2", "--out", out], capture_output=True, text=True, timeout=40)
        eq(r.returncode, 0, "bench/run exit: " + r.stderr[-1500:])
        out2 = os.path.join(out, "slo")
        r = subprocess.run(run + ["--scenario", "fdload-slo", "--slo", "p90<50ms", "--repeats", "1", "--out", out2],
                           capture_output=True, text=True, timeout=40)
        eq(r.returncode, 0, "bench/run exit: " + r.stderr[-1500:])
        res2 = json.load(open(os.path.join(out2, "results.json")))
        eq(schema.validate(res2), [], "results.json schema (slo)")
        slo = res2["runs"]
        eq(len(slo), 1)
        check(slo[0]["ok"] and slo[0]["rps"] > 0 and slo[0]["fdload"]["slo"]["steps"], "SLO max rate and steps", slo)
        check("Highest rate under the SLO" in open(os.path.join(out2, "summary.md")).read(), "summary.md SLO section")
        check("SLO search" in open(os.path.join(out2, "report.html")).read(), "report.html SLO chart")
        with open(os.path.join(out, "results.json")) as f:
            res = json.load(f)
        eq(schema.validate(res), [], "results.json schema")
        runs = res["runs"]
        eq(len(runs), 2 * 2, "2 rates x 2 repeats")
        check(all(x["ok"] for x in runs), "every run ok", [x.get("reason") for x in runs])
        mix = runs
        eq(sorted({x["setting"] for x in mix}), ["1000/s", "300/s"])
        check(all(abs(x["rps"] - int(x["setting"][:-2])) < 0.1 * int(x["setting"][:-2]) for x in mix), "achieved ~ offered", mix)
        check(all(x["fdload"]["timeline"] for x in mix), "timelines kept")
        md = open(os.path.join(out, "summary.md")).read()
        check("Latency vs offered rate" in md, "summary.md section", md[-3000:])
        html = open(os.path.join(out, "report.html")).read()
        check("p99 latency vs offered rate" in html and "<svg" in html, "report.html charts")
        # fdload-replay of a small capture
        path = capture_path("bench")
        fd = start_frontdoor()
        start_capture(fd, path)
        c = fd.conn()
        for i in range(50):
            c.cmd("SET", "r%d" % i, "x" * i)
            c.cmd("GET", "r%d" % i)
        c.cmd("FRONTDOOR", "CAPTURE", "STOP")
        out3 = os.path.join(out, "replay")
        r = subprocess.run(run + ["--scenario", "fdload-replay", "--replay", path, "--speed", "max", "--repeats", "1",
                                  "--out", out3], capture_output=True, text=True, timeout=40)
        eq(r.returncode, 0, "bench/run replay exit: " + r.stderr[-1500:])
        res3 = json.load(open(os.path.join(out3, "results.json")))
        eq(schema.validate(res3), [], "results.json schema (replay)")
        eq([(x["ok"], x["requests"], x["fdload"]["errors"]) for x in res3["runs"]], [(True, 100, 0)], "replay run")
        r = subprocess.run([sys.executable, os.path.join(REPO, "bench", "run"), "--scenario", "fdload-replay"],
                           capture_output=True, text=True, timeout=30)
        check(r.returncode == 2 and "--replay" in r.stderr, "fdload-replay without --replay is refused", r.stderr)
        # compare with itself: no change beyond the noise
        run_bench = [sys.executable, os.path.join(REPO, "bench", "run")]
        r = subprocess.run(run_bench + ["--render", out, "--compare", os.path.join(out, "results.json")],
                           capture_output=True, text=True, timeout=30)
        eq(r.returncode, 0, "compare with itself: " + r.stdout[-1500:] + r.stderr[-1500:])
        cmp = open(os.path.join(out, "compare.md")).read()
        check("**same**" in cmp and "worse" not in cmp.split("Verdicts:")[1].split("\n")[0], "verdicts: same", cmp)
        # a baseline far better than any run here (p99 of a 1 s run at 300/s is the
        # 3rd-worst request: its min-max over two repeats spans up to ~10x)
        for x in res["runs"]:
            x["rps"] = x["rps"] * 10
            if x.get("p99_latency_ms"):
                x["p99_latency_ms"] = 0.001
        base = os.path.join(out, "baseline.json")
        with open(base, "w") as f:
            json.dump(res, f)
        r = subprocess.run(run_bench + ["--render", out, "--compare", base], capture_output=True, text=True, timeout=30)
        eq(r.returncode, 3, "a regression exits 3: " + r.stdout[-1500:])
        cmp = open(os.path.join(out, "compare.md")).read()
        check("**worse**" in cmp, "worse verdicts", cmp)
        check(os.path.exists(os.path.join(out, "compare.html")), "compare.html")
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    T.main()
