#!/usr/bin/python3
"""frontdoor plain vs TLS vs redis-server TLS, side by side, interleaved
(docs/benchmarks.md, "TLS for clients"). Closed-loop fdload runs (the
client: bench/fdload, lighter than redis-benchmark, so the server gets
more of a shared machine's CPU), every target once per round, rounds
repeated; then new connections per second with full and resumed TLS
handshakes (Python ssl, one connection at a time).

    bench/tls_compare.py [--frontdoor build/frontdoor] [--base OLD_BINARY]
                         [--rounds 3] [-n 400000] [-c 50] [-P 16,1]

Prints a markdown table of requests/s (each round, and the median), the
server's and the client's CPU seconds per million requests (the server's
CPU per request moves much less than requests/s when other work shares the
cores). Certificates (RSA 2048) are made
in a temp dir and deleted. --base adds a "frontdoor TLS (base)" target run
with another binary (a before/after of a TLS change in the same run)."""
import argparse
import json
import os
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fdbench import procs, targets  # noqa: E402


def start(argv, port, log):
    p = procs.spawn(argv, log)
    deadline = time.monotonic() + 20
    while not procs.ping(port):
        if p.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("did not start: %s\n%s" % (" ".join(argv), open(log).read()[-2000:]))
        time.sleep(0.05)
    return p


def fdload(fdl, port, tls, n, c, P, pid=None):
    argv = [fdl, "-p", str(port), "-c", str(c), "-P", str(P), "-n", str(n), "--mix", "set:1,get:1",
            "--keys", "100000", "-d", "3", "--json", "-", "-q", "--no-progress"]
    if tls:
        argv += ["--tls", "--cacert", tls["ca"]]
    s0 = procs.cpu_seconds(pid) if pid else None
    t0 = os.times()
    r = subprocess.run(argv, capture_output=True, timeout=600)
    t1 = os.times()
    s1 = procs.cpu_seconds(pid) if pid else None
    if r.returncode:
        raise SystemExit("fdload failed: %s" % r.stderr.decode(errors="replace"))
    res = json.loads(r.stdout)
    cpu = (t1.children_user - t0.children_user) + (t1.children_system - t0.children_system)
    server = (s1 - s0) / res["requests"] * 1e6 if pid and s0 is not None and s1 is not None else float("nan")
    return res["throughput"], cpu / res["requests"] * 1e6, res["errors"], server


def conns_per_s(port, tls, seconds, resume):
    """New connections (each: connect, handshake, PING, close) per second."""
    ctx = None
    if tls:
        ctx = ssl.create_default_context(cafile=tls["ca"])
        ctx.check_hostname = False
    sess, n, reused = None, 0, 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        s = socket.create_connection(("127.0.0.1", port))
        if ctx:
            s = ctx.wrap_socket(s, session=sess if resume else None)
        s.sendall(b"*1\r\n$4\r\nPING\r\n")
        if s.recv(64) != b"+PONG\r\n":
            raise SystemExit("bad PING reply")
        if ctx:
            reused += s.session_reused
            if resume:
                sess = s.session     # TLS 1.3: the ticket came with the first reply
        s.close()
        n += 1
    return n / seconds, reused


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frontdoor", default=os.path.join(os.path.dirname(HERE), "build", "frontdoor"))
    ap.add_argument("--base", default=None, help="another frontdoor binary: a 'frontdoor TLS (base)' target")
    ap.add_argument("--fdload", default=None, help="default: beside --frontdoor")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-n", type=int, default=400000, help="requests per -P 16 run (-P 1 runs: a quarter)")
    ap.add_argument("-c", type=int, default=50)
    ap.add_argument("-P", default="16,1")
    ap.add_argument("--conn-seconds", type=float, default=3.0)
    a = ap.parse_args()
    fdl = a.fdload or os.path.join(os.path.dirname(os.path.abspath(a.frontdoor)), "fdload")
    work = tempfile.mkdtemp(prefix="tls-compare-")
    live = []
    try:
        tls = targets.make_tls(os.path.join(work, "tls"))
        tl = lambda port: targets.server_tls_args(tls, port)   # noqa: E731
        tg = []   # (name, port, tls or None, server pid)

        def frontdoor(name, binary, want_tls):
            port, tport = procs.free_port(), procs.free_port()
            d = os.path.join(work, name.replace(" ", "_"))
            os.makedirs(d)
            live.append(start([binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", d,
                               "--durability", "nosync", "--loglevel", "warning"] + tl(tport), port, d + ".log"))
            tg.append((name, tport if want_tls else port, tls if want_tls else None, live[-1].pid))
        frontdoor("frontdoor plain", a.frontdoor, False)
        frontdoor("frontdoor TLS", a.frontdoor, True)
        if a.base:
            frontdoor("frontdoor TLS (base)", a.base, True)
        rport, rtport = procs.free_port(), procs.free_port()
        live.append(start(["redis-server", "--port", str(rport), "--bind", "127.0.0.1", "--save", "",
                           "--appendonly", "no", "--dir", work, "--logfile", ""] + tl(rtport), rport,
                          os.path.join(work, "redis.log")))
        tg.append(("redis-server plain", rport, None, live[-1].pid))
        tg.append(("redis-server TLS", rtport, tls, live[-1].pid))
        for name, port, t, _ in tg:     # fill the key space once, not measured
            fdload(fdl, port, t, 100000, 8, 64)
        depths = [int(x) for x in a.P.split(",")]
        rows = {}
        for rnd in range(a.rounds):
            for P in depths:
                for name, port, t, pid in tg:
                    n = a.n if P > 1 else a.n // 4
                    rps, cpu, err, srv = fdload(fdl, port, t, n, a.c, P, pid)
                    rows.setdefault((P, name), []).append((rps, cpu, srv))
                    print("round %d -P %d %-22s %10.0f req/s  server %.2f s, client %.2f s CPU per M%s"
                          % (rnd + 1, P, name, rps, srv, cpu, "  ERRORS %d" % err if err else ""), file=sys.stderr)
        load = os.getloadavg()
        print("\n| -P | target | " + " | ".join("round %d" % (i + 1) for i in range(a.rounds))
              + " | median | vs frontdoor plain | server CPU s / M req | client CPU s / M req |")
        print("|---|---|" + "---|" * (a.rounds + 4))
        for P in depths:
            plain = statistics.median(x[0] for x in rows[(P, "frontdoor plain")])
            for name, _, _, _ in tg:
                xs = rows[(P, name)]
                med = statistics.median(x[0] for x in xs)
                print("| %d | %s | %s | %.0f | %.2f | %.2f | %.2f |" % (
                    P, name, " | ".join("%.0f" % x[0] for x in xs), med, med / plain,
                    statistics.median(x[2] for x in xs), statistics.median(x[1] for x in xs)))
        print("\nload average at the end: %.1f %.1f %.1f" % load)
        print("\n| new connections/s (Python ssl client, one at a time) | full handshake | resumed |")
        print("|---|---|---|")
        for name, port, t, _ in tg:
            full, _ = conns_per_s(port, t, a.conn_seconds, False)
            if t:
                res, reused = conns_per_s(port, t, a.conn_seconds, True)
                print("| %s | %.0f | %.0f (%.0f %% resumed) |" % (name, full, res, 100.0 * reused / max(1, res * a.conn_seconds)))
            else:
                print("| %s | %.0f (plain) | |" % (name, full))
    finally:
        for p in live:
            procs.stop(p)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
