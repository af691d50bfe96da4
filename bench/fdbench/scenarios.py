"""Named scenarios: what is run, with which settings, in which order.

A matrix scenario is a list of settings (requests, clients, pipeline, value
size, keyspace) and a list of tests; bench/run runs every setting x repeat x
test x target, targets interleaved. `growth` is a different loop (see
bench/run: run_growth): the dataset is filled step by step and measured at
each step."""
from . import rb

QUICK_N = 2000
# The default scenario's keyspace (redis-benchmark -r): random keys, so the
# stores' indexes are measured, not one hot key. `-r 1` brings back one key.
DEFAULT_KEYSPACE = 100000

# name -> one line for --help and the report
DESCRIPTIONS = {
    "default": "redis-benchmark's default suite (by default -P 1 and 16, -c 50, -n 100000, -r 100000 random keys, median of 3)",
    "seed-setget": "SET then GET of 100-byte values, 10k and 100k requests, one client (-r = -n: GET finds the keys SET wrote)",
    "seed-suite": "redis-benchmark -n 10000 -c 50, default tests, with each server's CPU % and RSS during the run",
    "seed-perop": "per-operation cost at one client (-c 1, -P 1 and 16, 100-byte values): ns/op, server CPU ns/op, RSS growth per op",
    "growth": "throughput and latency as the dataset grows (keys 10k -> 1M by default) and as one list grows (RPUSH to 1M elements, LRANGE/LINDEX at each size)",
    "fdload-mix": "fdload open loop: a command mix (--fdload-mix, default get:80,set:20 on zipf keys) at fixed offered rates; latency from the intended send time vs rate, per-second timelines",
    "fdload-slo": "fdload --slo: the highest open-loop rate each target sustains under a percentile limit (--slo, default p99<1ms; part of the default run), by bisection",
    "fdload-replay": "fdload --replay: a captured workload (frontdoor's FRONTDOOR CAPTURE) played on every target at the recorded pace (--speed)",
}
NAMES = list(DESCRIPTIONS)

PEROP_TESTS = ["set", "get", "incr", "lpush", "rpush", "lpop", "sadd", "hset", "zadd", "lrange_100", "mset"]


def _setting(n, c, p, d=None, r=None, label=None, **extra):
    s = {"requests": n, "clients": c, "pipeline": p, "data_size": d, "keyspace": r}
    s.update(extra)
    s["label"] = label or f"-P {p} -c {c}" + (f" -n {n}" if extra.get("show_n") else "")
    s.pop("show_n", None)
    return s


def plan(name, a):
    """(tests, settings, repeats) for a matrix scenario from the parsed
    arguments `a` (explicit -n/-c/-P/-d/-r/--tests/--repeats override the
    scenario's own values)."""
    quick = a.quick

    def pick(given, default):
        return default if given is None else given

    if name == "default":
        n = pick(a.n, QUICK_N if quick else 100000)
        tests = a.tests or list(rb.DEFAULT_TESTS)
        r = pick(a.r, DEFAULT_KEYSPACE)
        settings = [_setting(n, c, p, a.d, r) for p in pick(a.P, [1, 16]) for c in pick(a.c, [50])]
        return tests, settings, pick(a.repeats, 1 if quick else 3)
    if name == "seed-setget":
        ns = [a.n] if a.n else ([1000, QUICK_N] if quick else [10000, 100000])
        tests = a.tests or ["set", "get"]
        d = pick(a.d, 100)
        settings = [_setting(n, c, p, d, pick(a.r, n), label=f"-n {n} -c {c} -P {p}")
                    for n in ns for c in pick(a.c, [1]) for p in pick(a.P, [1])]
        return tests, settings, pick(a.repeats, 1 if quick else 3)
    if name == "seed-suite":
        n = pick(a.n, QUICK_N if quick else 10000)
        tests = a.tests or list(rb.DEFAULT_TESTS)
        settings = [_setting(n, c, p, a.d, a.r) for p in pick(a.P, [1]) for c in pick(a.c, [50])]
        return tests, settings, pick(a.repeats, 1 if quick else 3)
    if name == "seed-perop":
        n = pick(a.n, QUICK_N if quick else 100000)
        tests = a.tests or list(PEROP_TESTS)
        settings = [_setting(n, c, p, pick(a.d, 100), pick(a.r, n)) for p in pick(a.P, [1, 16]) for c in pick(a.c, [1])]
        return tests, settings, pick(a.repeats, 1 if quick else 3)
    raise ValueError(f"not a matrix scenario: {name}")


def growth_plan(a):
    """Steps of the growth scenario."""
    quick = a.quick
    keys = a.growth_keys or ([1000, 5000] if quick else [10000, 100000, 1000000])
    lists = a.growth_list or ([1000, 5000] if quick else [1000, 10000, 100000, 1000000])
    return {
        "key_steps": sorted(keys),
        "list_steps": sorted(lists),
        "measure_requests": a.n or (500 if quick else 20000),
        "clients": (a.c or [50])[0],
        "pipeline": (a.P or [16])[0],
        "data_size": a.d if a.d is not None else 100,
        "budget_s": a.growth_budget or (30 if quick else 150),
        "key_tests": ["get", "set"],
        "list_tests": ["LRANGE fdbench:list 0 99", "LRANGE fdbench:list -100 -1", "LINDEX fdbench:list {mid}"],
    }
