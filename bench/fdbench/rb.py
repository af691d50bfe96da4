"""One stock redis-benchmark invocation (one -t test), always under timeout,
and its --csv output parsed."""
import csv
import io
import resource
import subprocess
import time

from . import procs

# redis-benchmark 7.0.15's default suite, in its own order (-t names).
DEFAULT_TESTS = ["ping_inline", "ping_mbulk", "set", "get", "incr", "lpush", "rpush", "lpop", "rpop",
                 "sadd", "hset", "spop", "zadd", "zpopmin", "lrange_100", "lrange_300", "lrange_500",
                 "lrange_600", "mset"]
# -t accepts these too; expanded here so every cell is one test.
ALIASES = {"ping": ["ping_inline", "ping_mbulk"],
           "lrange": ["lrange_100", "lrange_300", "lrange_500", "lrange_600"]}
CSV_FIELDS = ["rps", "avg_latency_ms", "min_latency_ms", "p50_latency_ms", "p95_latency_ms",
              "p99_latency_ms", "max_latency_ms"]


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
    fills the list for LRANGE -> 'lpush (needed ...)' stays distinct."""
    n = name.strip().lower()
    if "needed" in n:
        return n
    return n.split(" ", 1)[0]


def parse_csv(text):
    rows = []
    for rec in csv.reader(io.StringIO(text)):
        if len(rec) < 8 or rec[0] == "test":
            continue
        try:
            vals = [float(x) for x in rec[1:8]]
        except ValueError:
            continue
        row = {"test": rec[0]}
        row.update(dict(zip(CSV_FIELDS, vals)))
        rows.append(row)
    return rows


def version(exe="redis-benchmark"):
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10)
        return (out.stdout or out.stderr).strip()
    except Exception as e:  # noqa: BLE001 - reported, not fatal
        return f"unknown ({e})"


def run(port, test, n, clients, pipeline, data_size=None, keyspace=None, timeout_s=120):
    """Run `redis-benchmark -t test` once. Returns a dict with ok/reason, the
    row for `test` (rps and latencies), all CSV rows, wall and client CPU s."""
    argv = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-t", test, "-n", str(n),
            "-c", str(clients), "-P", str(pipeline)]
    if data_size is not None:
        argv += ["-d", str(data_size)]
    if keyspace is not None:
        argv += ["-r", str(keyspace)]
    argv.append("--csv")
    full = ["timeout", "-k", "5", str(int(timeout_s)), *argv]
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True, preexec_fn=procs._child_setup)
    procs.LIVE[p.pid] = p
    try:
        out, err = p.communicate()
    finally:
        if p.poll() is None:
            procs.stop(p, grace=2.0)
        procs.LIVE.pop(p.pid, None)
    wall = time.monotonic() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = out.decode("utf-8", "replace")
    err = err.decode("utf-8", "replace")
    rows = parse_csv(out)
    res = {"argv": argv, "rc": p.returncode, "wall_s": round(wall, 3),
           "client_cpu_s": round((ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime), 3),
           "rows": rows, "warnings": [], "ok": False, "reason": None}
    for line in (out + "\n" + err).splitlines():
        if line.startswith("WARNING"):
            res["warnings"].append(line.strip())
    main = [r for r in rows if row_key(r["test"]) == test]
    if main:
        res.update({k: main[0][k] for k in CSV_FIELDS})
    # Decide failure: any server error, a non-zero exit, a timeout, no row.
    server_err = next((ln.strip() for ln in (out + "\n" + err).splitlines() if "Error from server" in ln), None)
    if p.returncode == 124 or p.returncode == 137 or p.returncode == -9:
        res["reason"] = f"timed out after {int(timeout_s)} s"
    elif server_err:
        res["reason"] = server_err
    elif p.returncode != 0:
        tail = [ln.strip() for ln in (err or out).splitlines() if ln.strip() and not ln.startswith("WARNING")]
        res["reason"] = f"exit {p.returncode}" + (f": {tail[-1]}" if tail else "")
    elif not main:
        res["reason"] = f"no result for '{test}' (redis-benchmark ran no such test?)"
    else:
        res["ok"] = True
    if not res["ok"]:
        res["stderr_tail"] = err[-2000:]
        res["stdout_tail"] = out[-2000:]
    return res
