#!/usr/bin/python3
"""Stock Redis tools against frontdoor: redis-benchmark (always under
`timeout 60`: it spins forever when the connection is refused), redis-cli
with a command as arguments, interactive mode with piped stdin (it sends
COMMAND DOCS first), -3 (HELLO 3), and --pipe mass insertion.

redis-cli's output for frontdoor is compared with its output for a real
redis-server wherever the reply does not depend on the server.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import (Tests, shared_frontdoor, shared_redis, start_frontdoor, start_redis, encode, parse, check, eq, run, skip,
                    REDIS_CLI, REDIS_BENCHMARK)

T = Tests(case_timeout=100)

fd_shared = shared_frontdoor


ref_shared = shared_redis


def flush(*servers):
    for s in servers:
        with s.conn() as c:
            eq(c.cmd("FLUSHDB"), b"+OK\r\n", "FLUSHDB")


# the MongoDB emulator is slow Python: a quarter of the requests there (every
# test still runs; what is checked is that each one completes and replies)
SCALE = 4 if os.environ.get("FD_BACKEND") == "mongodb" else 1


def requests_n(requests):
    """redis-benchmark's -n for this backend."""
    return str(max(100, requests // SCALE))


def benchmark(port, args, timeout=60):
    argv = ["timeout", "-k", "5", str(timeout), REDIS_BENCHMARK, "-h", "127.0.0.1",
            "-p", str(port)] + args
    rc, out = run(argv, timeout=timeout + 10)
    return rc, out


def check_benchmark(rc, out, tests, what):
    tail = out[-3000:]
    check(rc == 0, "%s: redis-benchmark exit status %s (124 = killed by timeout)" % (what, rc), tail)
    check("rror" not in out, "%s: redis-benchmark printed an error" % what, tail)
    for t in tests:
        # "inf": a test that ran within one tick of redis-benchmark's clock
        # (5000 PINGs answered by frontdoor itself at -P 16 once did)
        check(re.search(r"(^|[\r\n ])%s: ([\d.]+|inf) requests per second" % re.escape(t), out),
              "%s: no result line for %s" % (what, t), tail)


def knows(server, cmd):
    """Does the server know cmd (COMMAND INFO returns an entry, not a null)?"""
    with server.conn() as c:
        v = parse(c.cmd("COMMAND", "INFO", cmd))
    return isinstance(v, list) and len(v) == 1 and v[0] is not None


STRING_TESTS = ["PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "MSET (10 keys)"]


@T.case
def benchmark_string_commands():
    fd = fd_shared()
    rc, out = benchmark(fd.port, ["-n", requests_n(2000), "-c", "20", "-q", "-t", "ping,set,get,incr,mset"])
    check_benchmark(rc, out, STRING_TESTS, "-t ping,set,get,incr,mset")


@T.case
def benchmark_pipelined_16():
    fd = fd_shared()
    rc, out = benchmark(fd.port, ["-n", requests_n(5000), "-c", "20", "-P", "16", "-q",
                                  "-t", "ping,set,get,incr,mset"])
    check_benchmark(rc, out, STRING_TESTS, "-P 16")
    rc, out = benchmark(fd.port, ["-n", requests_n(2000), "-c", "20", "-P", "1", "-q", "-t", "set,get"])
    check_benchmark(rc, out, ["SET", "GET"], "-P 1")


@T.case
def benchmark_random_keys():
    fd = fd_shared()
    flush(fd)
    rc, out = benchmark(fd.port, ["-n", requests_n(3000), "-c", "20", "-q", "-r", "10000", "-t", "set,get,incr"])
    check_benchmark(rc, out, ["SET", "GET", "INCR"], "-r 10000")
    with fd.conn() as c:
        n = parse(c.cmd("DBSIZE"))
        check(n > 200, "-r 10000 must create many distinct keys", n)
        keys = parse(c.cmd("KEYS", "key:*"))
        check(keys and all(re.fullmatch(rb"key:\d{12}", k) for k in keys),
              "keys named key:<12 digits>", keys[:5])
        eq(c.cmd("GET", keys[0]), b"$3\r\nVXK\r\n", "value written by redis-benchmark SET")
        cnt = parse(c.cmd("KEYS", "counter:*"))
        check(cnt, "INCR with -r creates counter:<n> keys")
        v = parse(c.cmd("GET", cnt[0]))
        check(re.fullmatch(rb"\d+", v), "counter value is an integer", v)


@T.case
def benchmark_default_list():
    fd = fd_shared()
    if not knows(fd, "lpush"):
        # tried, not asserted, until frontdoor has lists
        rc, out = benchmark(fd.port, ["-n", "200", "-c", "10", "-q"], timeout=20)
        skip("frontdoor does not know LPUSH yet (COMMAND INFO lpush is null); default list "
             "run gave exit %s" % rc)
    rc, out = benchmark(fd.port, ["-n", requests_n(2000), "-c", "20", "-q"])
    check_benchmark(rc, out, STRING_TESTS + ["LPUSH", "RPUSH", "LPOP", "RPOP", "SADD", "HSET",
                                             "SPOP", "ZADD", "ZPOPMIN", "LRANGE_100 (first 100 elements)"],
                    "default test list")


@T.case
def benchmark_connection_refused_is_bounded():
    """The guard itself: against a closed port redis-benchmark would spin;
    `timeout` must end it (so the other cases cannot hang the suite)."""
    from fdtest import free_port
    rc, out = benchmark(free_port(), ["-n", "10", "-q", "-t", "ping"], timeout=3)
    check(rc != 0, "redis-benchmark against a closed port must not succeed", rc, out[-500:])


# ------------------------------------------------------------ redis-cli

def cli(port, args, stdin=None, timeout=20, extra=()):
    argv = ["timeout", "-k", "5", str(timeout), REDIS_CLI, "-h", "127.0.0.1", "-p", str(port)] + \
        list(extra) + list(args)
    return run(argv, timeout=timeout + 10, input=stdin)


CLI_COMMANDS = [
    ["ping"], ["set", "cli:a", "hello world"], ["get", "cli:a"], ["get", "cli:nokey"],
    ["incr", "cli:n"], ["incrbyfloat", "cli:f", "1.5"], ["mset", "cli:x", "1", "cli:y", "2"],
    ["mget", "cli:x", "cli:y", "cli:nokey"], ["exists", "cli:a", "cli:b"], ["del", "cli:x"],
    ["expire", "cli:a", "100"], ["ttl", "cli:nokey"], ["type", "cli:a"], ["strlen", "cli:a"],
    ["get"], ["foo", "bar"], ["echo", "multi\nline"], ["set", "cli:a", "b", "nx", "xx"],
    ["dbsize"], ["getrange", "cli:a", "0", "4"],
]


@T.case
def cli_command_as_args():
    fd, ref = fd_shared(), ref_shared()
    flush(fd, ref)
    bad = []
    for args in CLI_COMMANDS:
        r_rc, r_out = cli(ref.port, args)
        f_rc, f_out = cli(fd.port, args)
        if (f_rc, f_out) != (r_rc, r_out):
            bad.append("redis-cli %s\n     redis: %r (exit %s)\n     fd:    %r (exit %s)"
                       % (" ".join(args), r_out, r_rc, f_out, f_rc))
    check(not bad, "redis-cli output differs for %d command(s):\n" % len(bad) + "\n".join(bad))
    rc, out = cli(fd.port, ["ping"])
    eq((rc, out), (0, "PONG\n"), "redis-cli ping")


@T.case
def cli_interactive_piped_stdin():
    fd, ref = fd_shared(), ref_shared()
    flush(fd, ref)
    script = ("set k1 v1\nget k1\nincr cnt\nincr cnt\nget nokey\nmget k1 nokey\n"
              "get\nfoo bar\nset \"a b\" \"c d\"\nget \"a b\"\ndbsize\nping\n")
    r_rc, r_out = cli(ref.port, [], stdin=script.encode())
    f_rc, f_out = cli(fd.port, [], stdin=script.encode())
    eq((f_rc, f_out), (r_rc, r_out), "interactive redis-cli with piped stdin, frontdoor vs redis")
    check("v1" in f_out and "c d" in f_out, "interactive output", f_out)


@T.case
def cli_resp3():
    fd, ref = fd_shared(), ref_shared()
    flush(fd, ref)
    script = b"set k 1\nget k\nget nokey\nincrbyfloat f 2.5\nmget k nokey\nexists k\nping\n"
    r_rc, r_out = cli(ref.port, [], stdin=script, extra=["-3"])
    f_rc, f_out = cli(fd.port, [], stdin=script, extra=["-3"])
    eq((f_rc, f_out), (r_rc, r_out), "redis-cli -3 with piped stdin, frontdoor vs redis")
    rc, out = cli(fd.port, ["hello"], extra=["-3"])
    check(rc == 0 and "proto" in out and re.search(r"proto\s*\n?\s*3", out),
          "redis-cli -3 hello shows proto 3", out)
    rc, out = cli(fd.port, ["get", "nokey"], extra=["-3"])
    eq((rc, out), cli(ref.port, ["get", "nokey"], extra=["-3"]), "redis-cli -3 get nokey")


@T.case
def cli_auth_and_info():
    fd = start_frontdoor(requirepass="clipw")
    rc, out = cli(fd.port, ["ping"])
    check("NOAUTH" in out, "redis-cli without -a against requirepass", out)
    rc, out = cli(fd.port, ["ping"], extra=["-a", "clipw", "--no-auth-warning"])
    eq((rc, out), (0, "PONG\n"), "redis-cli -a")
    rc, out = cli(fd.port, ["ping"], extra=["-a", "wrong", "--no-auth-warning"])
    check("WRONGPASS" in out or "AUTH failed" in out, "redis-cli with a wrong password", out)
    rc, out = cli(fd.port, ["info", "server"], extra=["-a", "clipw", "--no-auth-warning"])
    check(rc == 0 and ("tcp_port:%d" % fd.port) in out, "redis-cli info server", out[-1000:])


@T.case
def cli_pipe_mass_insert():
    fd = fd_shared()
    flush(fd)
    n = 10000
    data = b"".join(encode("SET", "mass:%d" % i, "value-%d" % i) for i in range(n))
    rc, out = run(["timeout", "-k", "5", "60", REDIS_CLI, "-h", "127.0.0.1", "-p", str(fd.port),
                   "--pipe"], input=data, timeout=70)
    check(rc == 0, "redis-cli --pipe exit status %s" % rc, out[-2000:])
    check("errors: 0, replies: %d" % n in out, "redis-cli --pipe summary", out[-2000:])
    with fd.conn() as c:
        eq(c.cmd("DBSIZE"), b":%d\r\n" % n, "DBSIZE after --pipe")
        eq(c.cmd("GET", "mass:9999"), b"$10\r\nvalue-9999\r\n", "last mass-inserted value")
        eq(c.cmd("GET", "mass:0"), b"$7\r\nvalue-0\r\n", "first mass-inserted value")
    # redis-cli --scan (SCAN with MATCH) over what --pipe wrote
    rc, out = cli(fd.port, [], extra=["--scan", "--pattern", "mass:99*"])
    want = sorted(["mass:99"] + ["mass:99%d" % i for i in range(10)] +
                  ["mass:99%02d" % i for i in range(100)])
    eq((rc, sorted(set(out.split()))), (0, want), "redis-cli --scan --pattern mass:99*")
    rc, out = cli(fd.port, [], extra=["--bigkeys"], timeout=30)
    check(rc == 0 and "Biggest string found" in out and "10000 strings with" in out,
          "redis-cli --bigkeys", out[-1500:])


if __name__ == "__main__":
    T.main()
