"""One stock redis-benchmark invocation (one -t test or one literal command),
always under timeout, and its full (non-CSV) output parsed.

Why not --csv: redis-benchmark 7.0's CSV has rps, avg, min, p50, p95, p99
and max but no p99.9. Its normal output has the same summary line plus the
HDR histogram it keeps ("Latency by percentile distribution" and
"Cumulative distribution of latencies": "X% <= V milliseconds"), from which
p99.9 is read: the smallest V with at least 99.9 % of requests <= V (an
upper bound at the histogram's resolution)."""
import re
import resource
import subprocess
import threading
import time

from . import procs

# redis-benchmark 7.0.15's default suite, in its own order (-t names).
DEFAULT_TESTS = ["ping_inline", "ping_mbulk", "set", "get", "incr", "lpush", "rpush", "lpop", "rpop",
                 "sadd", "hset", "spop", "zadd", "zpopmin", "lrange_100", "lrange_300", "lrange_500",
                 "lrange_600", "mset"]
# -t accepts these too; expanded here so every cell is one test.
ALIASES = {"ping": ["ping_inline", "ping_mbulk"],
           "lrange": ["lrange_100", "lrange_300", "lrange_500", "lrange_600"]}
LAT_FIELDS = ["avg_latency_ms", "min_latency_ms", "p50_latency_ms", "p95_latency_ms",
              "p99_latency_ms", "p999_latency_ms", "max_latency_ms"]
FIELDS = ["rps"] + LAT_FIELDS


def expand_tests(spec):
    out = []
    for t in spec:
        t = t.strip().lower()
        if not t:
            continue
        for x in ALIASES.get(t, [t]):
            if x not in out:
                out.append(x)
    return out


def row_key(name):
    """'LRANGE_100 (first 100 elements)' -> 'lrange_100'; the LPUSH that
    fills the list for LRANGE -> 'lpush (needed ...)' stays distinct; a
    literal command ('LRANGE mylist 0 99') is kept whole, lower case."""
    n = name.strip().lower()
    if "needed" in n:
        return n
    if " " in n and not n.split(" ", 1)[1].startswith("("):
        return n
    return n.split(" ", 1)[0]


_HEAD = re.compile(r"^====== (.*) ======\s*$")
_DIST = re.compile(r"^\s*([\d.]+)% <= ([\d.]+) milliseconds \(cumulative count (\d+)\)")
_THRU = re.compile(r"throughput summary: ([\d.]+) requests per second")
_DONE = re.compile(r"(\d+) requests completed in ([\d.]+) seconds")
_THRU_INF = re.compile(r"throughput summary: inf requests per second")


def parse_output(text):
    """Every '====== NAME ======' section of redis-benchmark's output ->
    {'test': NAME, 'rps', 'avg_latency_ms', ..., 'p999_latency_ms', 'max_latency_ms',
    'requests', 'seconds'}. Sections without a summary are left out."""
    rows = []
    cur = None
    lines = text.replace("\r", "\n").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _HEAD.match(line)
        if m:
            cur = {"test": m.group(1).strip(), "_dist": []}
            rows.append(cur)
        elif cur is not None:
            d = _DIST.match(line)
            if d:
                cur["_dist"].append((float(d.group(1)), float(d.group(2)), int(d.group(3))))
            t = _THRU.search(line)
            if t:
                cur["rps"] = float(t.group(1))
            elif _THRU_INF.search(line):
                # the section took under redis-benchmark's 1 ms clock: it prints
                # "inf"; run() puts a lower bound from the process's wall time
                cur["rps_inf"] = True
            c = _DONE.search(line)
            if c:
                cur["requests"] = int(c.group(1))
                cur["seconds"] = float(c.group(2))
            if line.split() == ["avg", "min", "p50", "p95", "p99", "max"] and i + 1 < len(lines):
                try:
                    vals = [float(x) for x in lines[i + 1].split()]
                except ValueError:
                    vals = []
                if len(vals) == 6:
                    for k, v in zip(["avg_latency_ms", "min_latency_ms", "p50_latency_ms", "p95_latency_ms",
                                     "p99_latency_ms", "max_latency_ms"], vals):
                        cur[k] = v
                    i += 1
        i += 1
    out = []
    for r in rows:
        dist = r.pop("_dist")
        if "rps" not in r and not r.get("rps_inf"):
            continue
        total = max((c for _, _, c in dist), default=0)
        if total:
            need = 0.999 * total
            cands = [v for _, v, c in dist if c >= need - 1e-9]
            r["p999_latency_ms"] = min(cands) if cands else r.get("max_latency_ms")
        else:
            r["p999_latency_ms"] = r.get("max_latency_ms")
        out.append(r)
    return out


def version(exe="redis-benchmark"):
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10)
        return (out.stdout or out.stderr).strip()
    except Exception as e:  # noqa: BLE001 - reported, not fatal
        return f"unknown ({e})"


class RssWatch(threading.Thread):
    """Samples VmRSS of the given pids every `every` s while a run lasts; max per role."""

    def __init__(self, pids, every=0.1):
        super().__init__(daemon=True)
        self.pids = dict(pids or {})
        self.every = every
        self.peak = {}
        self._halt = threading.Event()

    def run(self):
        while True:
            for role, pid in self.pids.items():
                v = procs.mem_kb(pid).get("VmRSS")
                if v is not None and v > self.peak.get(role, 0):
                    self.peak[role] = v
            if self._halt.wait(self.every):
                break

    def finish(self):
        self._halt.set()
        self.join(2)
        return self.peak



def run_client(argv, timeout_s, pids):
    """Run a load client (argv) under `timeout`, watching the servers' RSS
    (pids) meanwhile: (rc, stdout bytes, stderr bytes, the result dict's
    common fields: argv, rc, wall_s, client_cpu_s, warnings, ok, reason,
    rss_peak_during_kb)."""
    full = ["timeout", "-k", "5", str(int(timeout_s)), *argv]
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True, preexec_fn=procs._child_setup)
    procs.LIVE[p.pid] = p
    watch = RssWatch(pids)   # started after the fork: preexec_fn and threads don't mix
    watch.start()
    try:
        out, err = p.communicate()
    finally:
        if p.poll() is None:
            procs.stop(p, grace=2.0)
        procs.LIVE.pop(p.pid, None)
    wall = time.monotonic() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = {"argv": argv, "rc": p.returncode, "wall_s": round(wall, 3),
           "client_cpu_s": round((ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime), 3),
           "warnings": [], "ok": False, "reason": None, "rss_peak_during_kb": watch.finish()}
    return p.returncode, out, err, res

def run(port, test, n, clients, pipeline, data_size=None, keyspace=None, timeout_s=120,
        command=None, cluster=False, pids=None, tls=None):
    """Run redis-benchmark once: `-t test`, or the literal `command` (a list
    of arguments; `test` is then only its name in the results). Returns a
    dict with ok/reason, rps and latencies of the row for `test`, every row,
    wall and client CPU seconds, and the peak RSS per role of `pids` during
    the run. tls: targets.make_tls()'s dict, to connect with --tls."""
    argv = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-n", str(n),
            "-c", str(clients), "-P", str(pipeline)]
    if command is None:
        argv[5:5] = ["-t", test]
    if data_size is not None:
        argv += ["-d", str(data_size)]
    if keyspace is not None:
        argv += ["-r", str(keyspace)]
    if cluster:
        # --cluster alone starts one client thread per master and counts
        # ~0.25 s of their start-up in every test's time; one thread keeps
        # the client what it is for every other target.
        argv += ["--cluster", "--threads", "1"]
    if tls:
        argv += ["--tls", "--cacert", tls["ca"]]   # targets.make_tls
    if command is not None:
        argv += [str(x) for x in command]
    rc, out, err, res = run_client(argv, timeout_s, pids)
    wall = res["wall_s"]
    out = out.decode("utf-8", "replace")
    err = err.decode("utf-8", "replace")
    rows = res["rows"] = parse_output(out)
    for line in (out + "\n" + err).replace("\r", "\n").splitlines():
        if line.startswith("WARNING"):
            res["warnings"].append(line.strip())
    want = test if command is None else " ".join(str(x) for x in command).lower()
    main = [r for r in rows if row_key(r["test"]) == want]
    if command is not None and not main and rows:
        main = rows[-1:]
    for r in rows:
        if r.pop("rps_inf", None) and r.get("rps") is None:
            n_req = r.get("requests") or n
            r["rps"] = round(n_req / wall, 2) if wall > 0 else 0.0
            res["warnings"].append(f"redis-benchmark timed {r['test']} under 1 ms (it printed inf requests/s): rps = {n_req} "
                                   f"requests / the process's {wall:.3f} s, a lower bound; use a larger -n")
    if main:
        res.update({k: main[0].get(k) for k in FIELDS})
    # Decide failure: any server error, a non-zero exit, a timeout, no row.
    text = (out + "\n" + err).replace("\r", "\n")
    server_err = next((ln.strip() for ln in text.splitlines() if "Error from server" in ln), None)
    if rc in (124, 137, -9):
        res["reason"] = f"timed out after {int(timeout_s)} s"
    elif server_err:
        res["reason"] = server_err
    elif rc != 0:
        tail = [ln.strip() for ln in (err or out).splitlines() if ln.strip() and not ln.startswith("WARNING")]
        res["reason"] = f"exit {rc}" + (f": {tail[-1][:300]}" if tail else "")
    elif not main:
        res["reason"] = f"no result for '{test}' (redis-benchmark ran no such test?)"
    else:
        res["ok"] = True
    if not res["ok"]:
        res["stderr_tail"] = err[-2000:]
        res["stdout_tail"] = out.replace("\r", "\n")[-2000:]
    return res
