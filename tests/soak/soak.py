#!/usr/bin/env python3
"""Soak run (issue 25, part 4; docs/robustness.md "Hostile clients and soak").

For each backend: one frontdoor under mixed open-loop load from fdload
(build/fdload) for a set duration while faults are injected in turn, then
the verdict:

  * 0 crashes: frontdoor (and the fdload run) alive to the end, clean log;
  * 0 acknowledged writes lost: writer threads SET unique keys and INCR
    their own counters and record every acknowledged reply; at the end each
    acknowledged SET reads back its value and each counter is at least its
    acknowledged INCRs and at most the INCRs sent (an INCR whose reply was an
    error or never came may or may not have run: only the acknowledgement
    is a promise). Embedded backends run `durability sync`; the redis
    backend's redis-server runs `appendonly yes, appendfsync always`, so what
    it acknowledged survives its SIGKILL;
  * RSS flat: frontdoor's VmRSS after the load drains is within 10 % of its
    baseline, taken after a warm-up of the same load.

Faults, one every --fault-every seconds, in turn:
  * ab:    A/B mirroring on (ab-mode mirror to an LMDB secondary), then off;
  * swap:  a live swap (CONFIG SET backend <same> with a changed setting:
           a new backend instance opened, the old one drained);
  * kill:  network backends with persistence: the redis-server behind is
           SIGKILLed and restarted on its port 1 s later (the mongodb
           emulator keeps its data in memory: not killed; embedded
           backends live in frontdoor's process: test_crash.py kills those);
  * churn: all along, a thread connects, pipelines, leaves mid-pipeline,
           mid-MULTI, while blocked or subscribed.

Usage: tests/soak/run [--minutes M | --seconds S] [--backends lmdb,leveldb,redis,mongodb]
The CI version is tests/integration/test_soak.py (a few seconds a backend).
"""

import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from fdtest import (is_sanitized, frontdoor_bin, Conn, Probe, start_frontdoor, start_redis, start_mongo_frontdoor,  # noqa: E402
                    shared_mongo, check, eq, encode, parse, info_fields, settled_rss_kb, backends_idle,
                    make_tempdir, REPO, HOST)


def fdload_bin():
    fdb = os.environ.get("FRONTDOOR_BIN", "")
    cand = [os.path.join(os.path.dirname(fdb), "fdload")] if fdb else []
    cand.append(os.path.join(REPO, "build", "fdload"))
    for p in cand:
        if os.access(p, os.X_OK):
            return p
    raise AssertionError("no fdload binary next to FRONTDOOR_BIN or in build/")


# the faults in turn (--faults); "ab" twice so each cycle turns mirroring on and off
FAULTS = ["ab", "swap", "kill", "ab"]
MIX = "get:40,set:25,incr:10,lpush:5,lpop:5,hset:5,hget:5,zadd:3,zrange:2"


def fdload(port, seconds, rate, clients, json_path, fill=False):
    argv = [fdload_bin(), "-p", str(port), "-c", str(clients), "--rate", str(rate),
            "--duration", str(seconds), "--mix", MIX, "--keys", "20000", "-d", "16-512",
            "--members", "200", "--no-progress", "-q", "--drop-late", "--drain-timeout", "15",
            "--json", json_path] + (["--fill"] if fill else [])
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


class Writer(threading.Thread):
    """SET soak:<id>:<n> n and INCR soak:ctr:<id>, one at a time; records what
    was acknowledged. Reconnects after an error or a closed connection."""

    def __init__(self, port, ident, stop):
        super().__init__(daemon=True)
        self.port, self.wid, self.stop = port, ident, stop
        self.acked_sets, self.incr_acked, self.incr_sent, self.errors = [], 0, 0, 0

    def run(self):
        c, n = None, 0
        while not self.stop.is_set():
            try:
                if c is None:
                    c = Conn(self.port, timeout=5)
                key = "soak:%d:%d" % (self.wid, n)
                c.send_raw(encode("SET", key, str(n)) + encode("INCR", "soak:ctr:%d" % self.wid))
                self.incr_sent += 1
                r1 = c.read()
                if r1 == b"+OK\r\n":
                    self.acked_sets.append(n)
                else:
                    self.errors += 1
                r2 = c.read()
                if r2.startswith(b":"):
                    self.incr_acked += 1
                else:
                    self.errors += 1
                n += 1
                self.stop.wait(0.005)
            except Exception:           # noqa: BLE001 - counted; the server may be restarting its backend
                self.errors += 1
                if c is not None:
                    c.close()
                c = None
                self.stop.wait(0.1)
        if c is not None:
            c.close()

    def verify(self, port):
        with Conn(port, timeout=30) as c:
            for i in range(0, len(self.acked_sets), 500):
                part = self.acked_sets[i:i + 500]
                got = parse(c.cmd("MGET", *["soak:%d:%d" % (self.wid, n) for n in part]))
                lost = [n for n, v in zip(part, got) if v != str(n).encode()]
                check(not lost, "writer %d: %d acknowledged SETs lost, e.g. %s"
                      % (self.wid, len(lost), lost[:5]))
            v = parse(c.cmd("GET", "soak:ctr:%d" % self.wid))
            v = int(v) if v is not None else 0
            check(self.incr_acked <= v <= self.incr_sent,
                  "writer %d: counter %d outside [acknowledged %d, sent %d]"
                  % (self.wid, v, self.incr_acked, self.incr_sent))


class Churn(threading.Thread):
    """Short-lived clients leaving in awkward states."""

    def __init__(self, port, stop):
        super().__init__(daemon=True)
        self.port, self.stop, self.n = port, stop, 0

    def run(self):
        rng = random.Random(7)
        while not self.stop.is_set():
            try:
                with Conn(self.port, timeout=2) as c:
                    k = self.n % 4
                    if k == 0:
                        c.send_raw(encode("GET", "key:%012d" % rng.randrange(20000)) * 200)
                    elif k == 1:
                        c.send_raw(encode("MULTI") + encode("SET", "churn:m", "x") * 20)
                    elif k == 2:
                        c.send("BLPOP", "churn:blk:%d" % self.n, "0")
                    else:
                        c.send("SUBSCRIBE", "churn:ch")
                        c.read()
            except Exception:           # noqa: BLE001 - a refused connection is counted by the probe, not here
                pass
            self.n += 1
            self.stop.wait(0.02)


def cmd_ok(c, *args):
    r = c.cmd(*args)
    eq(r, b"+OK\r\n", " ".join(args))


def start_backend(backend, tmp):
    """(frontdoor, redis-or-None, swap-settings pair)"""
    if backend in ("lmdb", "leveldb"):
        # LevelDB's memtable and block cache are frontdoor's own memory and
        # fill up to their sizes (64mb each by default) as data grows: small
        # ones are full by the baseline, so RSS measures frontdoor, not them
        small = {"leveldb_write_buffer_size": "1mb", "leveldb_block_cache_size": "1mb"}
        fd = start_frontdoor(backend=backend, durability="sync",
                             **(small if backend == "leveldb" else {}))
        return fd, None, (("durability", "nosync"), ("durability", "sync"))
    if backend == "redis":
        r = start_redis(appendonly="yes", appendfsync="always")
        fd = start_frontdoor(backend="redis", redis_address="%s:%d" % (HOST, r.port),
                             backend_timeout=1000)
        return fd, r, (("redis-pool-size", "4"), ("redis-pool-size", "3"))
    if backend == "mongodb":
        # no swap: opening a second client on the emulator while it is
        # loaded (Python) can outlast its server selection timeout
        fd = start_mongo_frontdoor(shared_mongo().uri)
        return fd, None, None
    raise AssertionError("unknown backend %r" % backend)


def _phase(fd, redis, backend, swaps, tmp, seconds, fault_every, rate, clients, wid0, tag):
    """fdload + writers + churn + a probe for `seconds`, a fault every
    `fault_every` s; ends with the mirror off and the backend answering.
    Returns (figures, writers)."""
    stop = threading.Event()
    writers = [Writer(fd.port, wid0 + i, stop) for i in range(2)]
    churn = Churn(fd.port, stop)
    probe = Probe(fd.port, key="soak:probe", interval=0.05, timeout=10)
    load = fdload(fd.port, seconds, rate, clients, os.path.join(tmp, tag + ".json"))
    for t in writers + [churn]:
        t.start()
    probe.start()
    faults = {"ab": 0, "swap": 0, "kill": 0}
    rss_peak = fd.proc_status_kb("RssAnon")
    t_end = time.monotonic() + seconds
    order = FAULTS
    i = 0
    try:
        while time.monotonic() < t_end:
            stop.wait(min(fault_every, max(0.0, t_end - time.monotonic())))
            if time.monotonic() >= t_end:
                break
            rss_peak = max(rss_peak, fd.proc_status_kb("RssAnon"))
            f = order[i % len(order)]
            i += 1
            with Conn(fd.port, timeout=30) as c:
                if f == "ab":
                    ab = info_fields(parse(c.cmd("INFO", "backends"))).get("backend_secondary")
                    if ab:
                        cmd_ok(c, "CONFIG", "SET", "ab-mode", "off")
                    else:
                        cmd_ok(c, "CONFIG", "SET", "ab-mode", "mirror", "ab-secondary", "lmdb",
                               "ab-dir", os.path.join(tmp, "ab-%s-%d" % (tag, i)),
                               "ab-durability", "nosync")
                    faults["ab"] += 1
                elif f == "swap" and swaps:
                    # the setting the backend does not have now: a real swap
                    (n, v), (_, v2) = swaps
                    if c.call("CONFIG", "GET", n)[1] == v.encode():
                        v = v2
                    before = int(info_fields(parse(c.cmd("INFO", "backends")))["backend_switches"])
                    cmd_ok(c, "CONFIG", "SET", "backend", backend, n, v)
                    after = int(info_fields(parse(c.cmd("INFO", "backends")))["backend_switches"])
                    check(after == before + 1, "live swap %s %s counted (%d -> %d)" % (n, v, before, after))
                    faults["swap"] += 1
                elif f == "kill" and redis is not None:
                    redis.kill()
                    time.sleep(1.0)
                    redis.start(port=redis.port)
                    faults["kill"] += 1
            check(fd.alive(), "frontdoor died during fault %s:\n%s" % (f, fd.log()[-3000:]))
    finally:
        stop.set()
        probe.stop()
        for t in writers + [churn]:
            t.join(30)
    out = load.communicate(timeout=120)[1].decode("utf-8", "replace")
    check(fd.alive(), "frontdoor crashed:\n%s" % fd.log()[-3000:])
    eq(load.returncode, 0, "fdload exit status: %s" % out[-1000:])
    with open(os.path.join(tmp, tag + ".json")) as f:
        res = json.load(f)
    # the backend is back (redis restarted, the mirror off)
    with Conn(fd.port, timeout=30) as c:
        if info_fields(parse(c.cmd("INFO", "backends"))).get("backend_secondary"):
            cmd_ok(c, "CONFIG", "SET", "ab-mode", "off")
        deadline = time.monotonic() + 15
        while c.cmd("PING") != b"+PONG\r\n" or c.cmd("GET", "soak:probe").startswith(b"-"):
            check(time.monotonic() < deadline, "backend not back after the soak")
            time.sleep(0.2)
    fig = {
        "requests": res.get("requests"), "errors": res.get("errors"), "dropped": res.get("dropped"),
        "acked_sets": sum(len(w.acked_sets) for w in writers),
        "acked_incrs": sum(w.incr_acked for w in writers),
        "writer_errors": sum(w.errors for w in writers), "churned_clients": churn.n,
        "faults": faults, "rss_peak_kb": rss_peak,
        "probe_rounds": probe.rounds, "probe_errors": len(probe.errors),
        "probe_worst_ms": round(probe.worst * 1000, 1),
    }
    check(res.get("requests", 0) > 0, "fdload sent nothing", res)
    # without a kill the probe and the writers must not see an error at all
    if faults["kill"] == 0:
        # the MongoDB emulator is Python on the same cores: seconds at times
        probe.check_ok("%s soak" % backend, max_latency=10.0 if backend == "mongodb" else 2.0)
        eq(fig["writer_errors"], 0, "%s: writer errors without a backend kill" % backend)
    return fig, writers


def _drained(fd, timeout=30.0):
    """No request in flight to any backend (fdtest.backends_idle): RSS is
    compared once a slow backend (the MongoDB emulator under load) has
    answered what clients that timed out left queued, not while that
    backlog drains. Returns how many are still owed."""
    with Conn(fd.port, timeout=5) as c:
        return backends_idle(c, timeout)


def _rss_at_rest(fd, backend, after):
    """frontdoor's RssAnon once nothing is in flight (fails if something
    still is after 30 s) and the once-a-second malloc_trim has run."""
    owed = _drained(fd)
    check(owed == 0, "%s: %d requests still in flight 30 s after %s" % (backend, owed, after))
    time.sleep(1.5)
    return settled_rss_kb(fd, timeout=10, field="RssAnon")


def _rss_bound(kb):
    """The most RssAnon may be after a phase that started at kb: 10 %
    more, and never less than 1 MB more."""
    return max(kb * 1.10, kb + 1024)


def soak_one(backend, seconds, fault_every=3.0, rate=1500, clients=16, log=print):
    """Run the soak on one backend; returns a dict of figures. Raises
    AssertionError on a crash, a lost acknowledged write or RSS growth.
    The warm-up is the same load and faults for 20 % of the time (at least
    4 s, at most 60 s; two cycles of the faults) after --fill: the baseline is taken once allocator
    arenas, caches and the lazily built structures (a mirror, a swapped
    backend, the client table) exist."""
    tmp = make_tempdir("fdsoak-")
    fd, redis, swaps = start_backend(backend, tmp)
    rate = rate if backend != "mongodb" else min(rate, 100)   # the emulator is Python: 300/s saturated it (2/3 dropped)
    warm = max(4.0, min(60.0, seconds * 0.2))
    p = fdload(fd.port, 1, rate, clients, os.path.join(tmp, "fill.json"), fill=True)
    p.wait(120)
    # two cycles of the faults in the warm-up
    _, wwarm = _phase(fd, redis, backend, swaps, tmp, warm, min(fault_every, warm / (2 * len(FAULTS) + 1)), rate,
                      clients, 0, "warm")
    # frontdoor gives back what a burst left free once a second (malloc_trim
    # in proxy/backends.c): both measures wait for that check
    _drained(fd)
    time.sleep(1.5)
    base = settled_rss_kb(fd, field="RssAnon")
    fig, writers = _phase(fd, redis, backend, swaps, tmp, seconds, fault_every, rate, clients,
                          10, "load")
    for w in wwarm + writers:
        w.verify(fd.port)
    rss = _rss_at_rest(fd, backend, "the load")
    fig.update({"backend": backend, "seconds": seconds, "warmup_seconds": warm,
                "rss_base_kb": base, "rss_end_kb": rss, "vmrss_end_kb": fd.rss_kb()})
    log("      %s" % json.dumps(fig))
    if is_sanitized(frontdoor_bin()):
        # ASan keeps freed memory in its quarantine (and its shadow): the
        # bound is the plain build's; here the run checks crashes, leaks
        # (LeakSanitizer at exit) and lost writes
        log("      (sanitized build: the RSS bound is checked by the plain build's run)")
    elif rss > _rss_bound(base):
        # 10 %, and never less than 1 MB: RssAnon bases of 2-3 MB (the
        # redis backend) move by a few hundred kB with the allocator's free
        # lists. Past that, one more load phase of the same length: a leak
        # grows again with the load, a one-time step does not (seen on
        # MongoDB, 1 run in 3 or 4 on ci21's machine, the session's start
        # included: +6.5 MB once, then flat)
        log("      RssAnon %d kB after the soak, baseline %d kB: one more phase" % (rss, base))
        _, more = _phase(fd, redis, backend, swaps, tmp, seconds, fault_every, rate, clients, 20, "again")
        for w in more:
            w.verify(fd.port)
        rss2 = _rss_at_rest(fd, backend, "the second phase")
        fig["rss_again_kb"] = rss2
        check(rss2 <= _rss_bound(rss),
              "%s: RssAnon %d kB after the soak, baseline %d kB, and %d kB after one more phase (it grows with the load)"
              % (backend, rss, base, rss2))
    fd.stop()
    if redis is not None:
        redis.kill()
    return fig


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float)
    ap.add_argument("--seconds", type=float)
    ap.add_argument("--backends", default="lmdb,leveldb,redis,mongodb")
    ap.add_argument("--fault-every", type=float, default=10.0)
    ap.add_argument("--rate", type=int, default=2000)
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--faults", default=",".join(FAULTS), help="the faults in turn (%(default)s)")
    ap.add_argument("--json", help="append one JSON line of figures per backend here")
    a = ap.parse_args()
    FAULTS[:] = [f for f in a.faults.split(",") if f]
    total = a.seconds if a.seconds else (a.minutes or 1.0) * 60
    backends = [b for b in a.backends.split(",") if b]
    per = total / len(backends)
    failed = 0
    for b in backends:
        print("soak %s: %.0f s" % (b, per), flush=True)
        try:
            fig = soak_one(b, per, fault_every=a.fault_every, rate=a.rate, clients=a.clients)
            if a.json:
                with open(a.json, "a") as f:
                    f.write(json.dumps(fig) + "\n")
            print("ok   %s" % b, flush=True)
        except AssertionError as e:
            failed += 1
            print("FAIL %s: %s" % (b, e), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
