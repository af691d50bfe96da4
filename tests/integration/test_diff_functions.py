#!/usr/bin/python3
"""Redis Functions (FUNCTION LOAD/LIST/DUMP/RESTORE/DELETE/FLUSH/KILL/STATS,
FCALL, FCALL_RO; proxy/script.c's functions, proxy/scripting.c): the same
commands go to a real redis-server 7.0 and to frontdoor, replies compared
byte for byte, in RESP2 and in RESP3 (FD_DIFF_SUITES: every backend runs
this file; on the redis backends frontdoor forwards them).

FUNCTION LIST answers libraries (and a library's functions) in the order of
redis-server's hash tables, which a random seed shuffles: the cases LIST one
library at a time (LIBRARYNAME) with one function, or several functions
whose list is compared as a set. FUNCTION DUMP is compared with one library
loaded (several libraries' order is the same hash order).

Then, as an application would: redis-cli -x FUNCTION LOAD from a file, and
redis-py's function_load / fcall / fcall_ro / function_list.
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import Tests, check, diff_pair, shared_pair, skip, start_frontdoor

T = Tests(case_timeout=60)
CLUSTER = os.environ.get("FD_BACKEND") == "redis-cluster"

LIB = """#!lua name=mylib
redis.register_function('setk', function(keys, args) return redis.call('set', keys[1], args[1]) end)
"""
LIB_RO = """#!lua name=rolib
redis.register_function{function_name='getk', callback=function(keys, args) return redis.call('get', keys[1]) end,
  flags={'no-writes'}, description='reads a key'}
"""
LIB_MANY = """#!lua name=many
redis.register_function{function_name='allflags', callback=function() return 1 end,
  flags={'allow-cross-slot-keys', 'no-writes', 'no-cluster', 'allow-stale', 'allow-oom'}}
"""
LIB_CALLS = """#!lua name=calls
local v = redis.REDIS_VERSION
redis.log(redis.LOG_NOTICE, 'loading calls')
redis.register_function('echoall', function(keys, args) return {keys, args, #keys, #args} end)
redis.register_function('ver', function() return v end)
redis.register_function('boom', function() error('boom') end)
redis.register_function('myerr', function() return redis.error_reply('MY custom') end)
redis.register_function('status', function() return redis.status_reply('FINE') end)
redis.register_function('writes_ro', function(keys) return redis.call('set', keys[1], 'x') end)
redis.register_function('nested', function() return redis.call('fcall', 'ver', 0) end)
redis.register_function('evalit', function() return redis.call('eval', 'return 1', 0) end)
redis.register_function('types', function() return {1, 'two', 3.9, true, false, {err='E x'}} end)
redis.register_function('resp3', function(keys) redis.setresp(3); return redis.call('hgetall', keys[1]) end)
redis.register_function('globalkeys', function() return KEYS end)
"""
LIB_NOWRITE = """#!lua name=nowrite
redis.register_function{function_name='tries', callback=function(keys) return redis.call('set', keys[1], 'x') end,
  flags={'no-writes'}}
"""

BAD_LOADS = [
    "no shebang",
    "#!lua",
    "#!lua name=a-b\nredis.register_function('f', function() end)",
    "#!lua name=x\nreturn 1",
    "#!lua name=x name=y\n",
    "#!lua name=x foo=bar\n",
    "#!foo name=x\n",
    "#!lua\nredis.register_function('f', function() end)",
    "#!lua name=x\nredis.call('ping')",
    "#!lua name=x\nerror('x')",
    "#!lua name=x\nx = 1",
    "#!lua name=x\nlocal t = string.len('a')",
    "#!lua name=x\nredis.register_function()",
    "#!lua name=x\nredis.register_function('a')",
    "#!lua name=x\nredis.register_function(5)",
    "#!lua name=x\nredis.register_function(1, 2)",
    "#!lua name=x\nredis.register_function('a-b', function() end)",
    "#!lua name=x\nredis.register_function('a', function() end) redis.register_function('A', function() end)",
    "#!lua name=x\nredis.register_function{function_name='a'}",
    "#!lua name=x\nredis.register_function{callback=function() end}",
    "#!lua name=x\nredis.register_function{function_name='a', callback=function() end, flags='x'}",
    "#!lua name=x\nredis.register_function{function_name='a', callback=function() end, flags={'bad'}}",
    "#!lua name=x\nredis.register_function{function_name='a', callback=function() end, foo=1}",
    "#!lua name=x\nredis.register_function{function_name='a', callback=5}",
    "#!lua name=x\nredis.register_function{function_name={}, callback=function() end}",
    "#!lua name=x\nredis.register_function('f', function() end",
    "#!lua name=x\nlocal x = 1 +",
]


def sorted_list_norm(raw):
    """A FUNCTION LIST reply's lines as a sorted list (hash order aside)."""
    return sorted(raw.split(b"\r\n"))


def errors_steps(d):
    d.cmd("FUNCTION", "FLUSH")
    for code in BAD_LOADS:
        d.cmd("FUNCTION", "LOAD", code)
    d.cmd("FUNCTION", "LOAD")
    d.cmd("FUNCTION", "LOAD", "REPLACE")
    d.cmd("FUNCTION", "LOAD", "foo", LIB)
    d.cmd("FUNCTION", "LOAD", "REPLACE", "REPLACE", "x")
    d.cmd("FUNCTION")
    d.cmd("FUNCTION", "NOSUCH")
    d.cmd("FUNCTION", "HELP")
    d.cmd("function", "help", "x")
    d.cmd("FUNCTION", "DELETE")
    d.cmd("FUNCTION", "DELETE", "nosuch")
    d.cmd("FUNCTION", "DELETE", "a", "b")
    d.cmd("FUNCTION", "FLUSH", "x")
    d.cmd("FUNCTION", "FLUSH", "SYNC", "x")
    d.cmd("FUNCTION", "FLUSH", "async")
    d.cmd("FUNCTION", "KILL")
    d.cmd("FUNCTION", "KILL", "x")
    d.cmd("FUNCTION", "STATS")
    d.cmd("FUNCTION", "STATS", "x")
    d.cmd("FUNCTION", "DUMP")
    d.cmd("FUNCTION", "DUMP", "x")
    d.cmd("FUNCTION", "RESTORE")
    d.cmd("FUNCTION", "RESTORE", "garbage")
    d.cmd("FUNCTION", "RESTORE", "garbage", "FLUSH")
    d.cmd("FUNCTION", "RESTORE", "garbage", "bogus")
    d.cmd("FUNCTION", "RESTORE", "a", "b", "c")
    d.cmd("FUNCTION", "LIST", "x")
    d.cmd("FUNCTION", "LIST", "LIBRARYNAME")
    d.cmd("FUNCTION", "LIST", "WITHCODE", "WITHCODE")
    d.cmd("FUNCTION", "LIST", "LIBRARYNAME", "a", "LIBRARYNAME", "b")
    d.cmd("FUNCTION", "LIST")
    d.cmd("FCALL")
    d.cmd("FCALL", "f")
    d.cmd("FCALL", "nosuch", "0")
    d.cmd("FCALL", "nosuch", "x")
    d.cmd("FCALL_RO", "nosuch", "0")
    d.cmd("SCRIPT", "KILL")


def load_call_steps(d):
    d.cmd("FUNCTION", "FLUSH")
    for lib in (LIB, LIB_RO, LIB_MANY, LIB_CALLS, LIB_NOWRITE):
        d.cmd("FUNCTION", "LOAD", lib)
    d.cmd("FUNCTION", "LOAD", LIB)                                   # exists
    d.cmd("FUNCTION", "LOAD", "REPLACE", LIB)
    d.cmd("function", "load", "replace", LIB.replace("mylib", "other"))   # setk in another library
    d.cmd("FUNCTION", "LOAD", "#!LUA NAME=Mylib\nredis.register_function('setk2', function() return 2 end)")
    d.cmd("FUNCTION", "STATS")
    for name in ("rolib", "many", "nowrite", "MANY"):
        d.cmd("FUNCTION", "LIST", "LIBRARYNAME", name)
        d.cmd("FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", name)
    for name in ("mylib", "Mylib"):                                 # the pattern is case-insensitive: both
        d.cmd("FUNCTION", "LIST", "LIBRARYNAME", name, norm=sorted_list_norm)
    d.cmd("FUNCTION", "LIST", "libraryname", "call*", "withcode", norm=sorted_list_norm)
    d.cmd("FUNCTION", "LIST", "LIBRARYNAME", "nomatch*")
    d.cmd("FUNCTION", "LIST", norm=sorted_list_norm)
    d.cmd("FCALL", "setk", "1", "k", "v")
    d.cmd("FCALL", "SETK", "1", "k", "v2")                          # names are case-insensitive
    d.cmd("FCALL", "getk", "1", "k")
    d.cmd("FCALL_RO", "getk", "1", "k")
    d.cmd("FCALL_RO", "setk", "1", "k", "v")
    d.cmd("FCALL", "setk", "2", "k")
    d.cmd("FCALL", "setk", "-1", "k")
    d.cmd("FCALL", "setk", "x", "k")
    d.cmd("FCALL", "echoall", "2", "{t}a", "{t}b", "c", "d", "e")    # one slot: a cluster takes it too
    d.cmd("FCALL", "echoall", "0")
    d.cmd("FCALL", "ver", "0")
    d.cmd("FCALL", "boom", "0")
    d.cmd("FCALL", "myerr", "0")
    d.cmd("FCALL", "status", "0")
    d.cmd("FCALL", "types", "0")
    d.cmd("HSET", "h", "a", "1")
    d.cmd("FCALL", "resp3", "1", "h")
    d.cmd("FCALL_RO", "writes_ro", "1", "k")
    d.cmd("FCALL", "tries", "1", "k")
    d.cmd("FCALL", "nested", "0")
    d.cmd("EVAL", "return KEYS[1]", "1", "{t}a")                    # then a function sees no KEYS global
    d.cmd("FCALL", "globalkeys", "1", "{t}a")
    d.cmd("FCALL", "evalit", "0")
    if not CLUSTER:                                                 # a cluster refuses no-cluster (as Redis Cluster)
        d.cmd("FCALL", "allflags", "0")
    d.cmd("EVAL", "return redis.call('fcall', 'ver', 0)", "0")
    d.cmd("EVAL", "return redis.pcall('fcall_ro', 'ver', 0)", "0")
    d.cmd("EVAL", "return redis.call('function', 'list')", "0")
    d.cmd("GET", "k")
    # SCRIPT FLUSH empties the script cache only
    d.cmd("SCRIPT", "FLUSH")
    d.cmd("FCALL", "getk", "1", "k")
    # FLUSHALL / FLUSHDB keep the libraries (only FUNCTION FLUSH removes them)
    d.cmd("FLUSHALL")
    d.cmd("FLUSHDB")
    d.cmd("FCALL", "ver", "0")
    d.cmd("DBSIZE")
    d.cmd("KEYS", "*")
    d.cmd("FUNCTION", "STATS")
    d.cmd("FUNCTION", "DELETE", "calls")
    d.cmd("FUNCTION", "DELETE", "calls")
    d.cmd("FCALL", "ver", "0")
    d.cmd("FUNCTION", "STATS")
    # MULTI
    d.cmd("MULTI")
    d.cmd("FCALL", "setk", "1", "m", "1")
    d.cmd("FCALL", "getk", "1", "m")
    d.cmd("FUNCTION", "DELETE", "nosuch")
    d.cmd("EXEC")
    d.cmd("FUNCTION", "FLUSH")
    d.cmd("FUNCTION", "STATS")
    d.cmd("FCALL", "setk", "1", "k", "v")


def dump_restore_steps(d):
    d.cmd("FUNCTION", "FLUSH")
    d.cmd("FUNCTION", "DUMP")                                       # no library: the footer only
    d.cmd("FUNCTION", "LOAD", LIB_CALLS)                            # LZF-compressed in the payload
    dumped, _ = d.cmd("FUNCTION", "DUMP")                           # byte for byte
    payload = dumped.split(b"\r\n", 1)[1][:-2]
    d.cmd("FUNCTION", "RESTORE", payload)                           # APPEND: exists
    d.cmd("FUNCTION", "RESTORE", payload, "APPEND")
    d.cmd("FUNCTION", "RESTORE", payload, "replace")
    d.cmd("FUNCTION", "RESTORE", payload, "FLUSH")
    d.cmd("FUNCTION", "RESTORE", payload[:-1] + bytes([payload[-1] ^ 1]))   # checksum
    d.cmd("FUNCTION", "FLUSH")
    d.cmd("FUNCTION", "LOAD", LIB)
    small, _ = d.cmd("FUNCTION", "DUMP")
    small = small.split(b"\r\n", 1)[1][:-2]
    d.cmd("FUNCTION", "FLUSH")
    d.cmd("FUNCTION", "LOAD", LIB.replace("mylib", "clash"))
    d.cmd("FUNCTION", "RESTORE", small)                             # function setk exists elsewhere
    d.cmd("FUNCTION", "RESTORE", small, "REPLACE")
    d.cmd("FUNCTION", "RESTORE", small, "FLUSH")
    d.cmd("FCALL", "setk", "1", "k", "restored")
    d.cmd("FUNCTION", "LIST")
    d.cmd("FUNCTION", "RESTORE", payload)
    d.cmd("FCALL", "ver", "0")
    d.cmd("FUNCTION", "STATS")
    d.cmd("FUNCTION", "FLUSH")


def run_pass(steps):
    for resp3 in (False, True):
        d = diff_pair(resp3)
        wait_functions(d.fd)
        try:
            steps(d)
        finally:
            for c in (d.ref, d.fd):
                try:
                    c.cmd("FUNCTION", "FLUSH")
                except Exception:
                    pass
        if d.mismatches:
            raise AssertionError(("RESP3: " if resp3 else "RESP2: ") + d.report())


@T.case
def function_errors_as_redis():
    run_pass(errors_steps)


@T.case
def load_call_list_as_redis():
    run_pass(load_call_steps)


@T.case
def dump_restore_as_redis():
    run_pass(dump_restore_steps)


@T.case
def payload_crosses_both_ways():
    """redis-server's FUNCTION DUMP restores into frontdoor and frontdoor's
    into redis-server; the library then runs on either."""
    ref, fd = shared_pair()
    a, b = ref.conn(), fd.conn()
    wait_functions(b)
    try:
        for c in (a, b):
            c.cmd("FUNCTION", "FLUSH")
        a.cmd("FUNCTION", "LOAD", LIB_CALLS)
        b.cmd("FUNCTION", "LOAD", LIB_RO)
        pa = a.cmd("FUNCTION", "DUMP").split(b"\r\n", 1)[1][:-2]
        pb = b.cmd("FUNCTION", "DUMP").split(b"\r\n", 1)[1][:-2]
        check(b.cmd("FUNCTION", "RESTORE", pa) == b"+OK\r\n", "redis-server's payload restores into frontdoor")
        check(a.cmd("FUNCTION", "RESTORE", pb) == b"+OK\r\n", "frontdoor's payload restores into redis-server")
        for c in (a, b):
            check(c.cmd("FCALL", "ver", "0") == b"$6\r\n7.0.15\r\n", "ver runs", c.cmd("FCALL", "ver", "0"))
            c.cmd("SET", "pk", "pv")
            check(c.cmd("FCALL_RO", "getk", "1", "pk") == b"$2\r\npv\r\n", "getk runs")
            c.cmd("DEL", "pk")
    finally:
        for c in (a, b):
            c.cmd("FUNCTION", "FLUSH")


def wait_functions(c, timeout=15.0):
    """After a start: until FUNCTION answers (mongodb: "backend unavailable"
    until its admin thread read the stored libraries)."""
    import time
    deadline = time.monotonic() + timeout
    while b"unavailable" in c.cmd("FUNCTION", "STATS") and time.monotonic() < deadline:
        time.sleep(0.1)


LIB_SPIN = """#!lua name=spin
redis.register_function{function_name='spin', callback=function() local i = 0 while true do i = i + 1 end end,
  flags={'no-writes'}}
redis.register_function('spinw', function(keys) redis.call('set', keys[1], 'x') local i = 0 while true do i = i + 1 end end)
"""


def busy_side(srv, wrote):
    """On one server: a function spins past busy-reply-threshold; what another
    client gets (-BUSY, FUNCTION STATS, SCRIPT KILL, FUNCTION KILL), and the
    spinning client's reply. A function that wrote is UNKILLABLE: it is then
    left to SHUTDOWN NOSAVE... so only the no-writes one is killed."""
    a, b = srv.conn(timeout=10), srv.conn(timeout=10)
    wait_functions(b)
    out = []
    try:
        b.cmd("CONFIG", "SET", "busy-reply-threshold", "100")
        b.cmd("FUNCTION", "FLUSH")
        b.cmd("FUNCTION", "LOAD", LIB_SPIN)
        a.send("FCALL", "spin", "0")
        import time
        time.sleep(0.5)
        out.append(b.cmd("GET", "x"))
        stats = b.cmd("FUNCTION", "STATS")
        # the duration varies: keep the shape and the name/command
        out.append(stats.split(b"duration_ms")[0])
        out.append(b.cmd("SCRIPT", "KILL"))
        out.append(b.cmd("FUNCTION", "KILL"))
        out.append(a.read())
        out.append(a.cmd("PING"))
        out.append(b.cmd("FUNCTION", "KILL"))
        a.send("EVAL", "local i = 0 while true do i = i + 1 end", "0")
        time.sleep(0.5)
        out.append(b.cmd("FUNCTION", "KILL"))
        out.append(b.cmd("SCRIPT", "KILL"))
        out.append(a.read())
    finally:
        b.cmd("CONFIG", "SET", "busy-reply-threshold", "5000")
        b.cmd("FUNCTION", "FLUSH")
    return out


@T.case
def busy_function_kill_as_redis():
    """-BUSY names FUNCTION KILL while a function runs; FUNCTION STATS answers
    while busy; SCRIPT KILL does not stop a function nor FUNCTION KILL an
    EVAL script; FUNCTION KILL stops a function that did not write."""
    if os.environ.get("FD_BACKEND") in ("redis", "redis-cluster"):
        # the server runs it: other clients' commands wait behind it on the
        # shared backend connection (docs/functions.md)
        skip("a Redis backend's busy server is not seen as -BUSY through the shared connection")
    ref, fd = shared_pair()
    r, f = busy_side(ref, False), busy_side(fd, False)
    check(r == f, "busy replies differ:\n  redis: %r\n  fd:    %r" % (r, f))


@T.case
def acl_categories_as_redis():
    """FUNCTION LOAD/DELETE/FLUSH/RESTORE are @write (a -@write user is
    refused them, not LIST/STATS/DUMP); FCALL and FUNCTION are @scripting; a
    function's redis.call is checked against the caller (lmdb, leveldb,
    mongodb: frontdoor's engine runs it)."""
    for resp3 in (False, True):
        d = diff_pair(resp3)
        wait_functions(d.fd)
        try:
            d.cmd("FUNCTION", "FLUSH")
            d.cmd("FUNCTION", "LOAD", LIB_RO)
            d.cmd("ACL", "SETUSER", "fnw", "on", "nopass", "+@all", "-@write", "~*")
            d.cmd("ACL", "SETUSER", "fns", "on", "nopass", "+@all", "-@scripting", "~*")
            d.cmd("AUTH", "fnw", "x")
            d.cmd("FUNCTION", "LOAD", LIB)
            d.cmd("FUNCTION", "DELETE", "rolib")
            d.cmd("FUNCTION", "FLUSH")
            d.cmd("FUNCTION", "RESTORE", "x")
            d.cmd("FUNCTION", "LIST", "LIBRARYNAME", "rolib")
            d.cmd("FUNCTION", "STATS")
            d.cmd("FCALL_RO", "getk", "1", "k")
            d.cmd("AUTH", "fns", "x")
            d.cmd("FCALL", "getk", "1", "k")
            d.cmd("FUNCTION", "LIST")
            d.cmd("AUTH", "default", "x")
        finally:
            for c in (d.ref, d.fd):
                c.cmd("AUTH", "default", "x")
                c.cmd("ACL", "DELUSER", "fnw", "fns")
                c.cmd("FUNCTION", "FLUSH")
        if d.mismatches:
            raise AssertionError(("RESP3: " if resp3 else "RESP2: ") + d.report())


@T.case
def libraries_survive_restart_and_flushall():
    """lmdb, leveldb, mongodb: the libraries are kept in the store (a
    reserved record no Redis type shows): they survive FLUSHALL and a
    restart, and FUNCTION FLUSH / DELETE are stored too. (mongodb stores them
    from its admin thread: the restart waits for FUNCTION to answer.)"""
    backend = os.environ.get("FD_BACKEND", "lmdb")
    if backend not in ("lmdb", "leveldb", "mongodb"):
        skip("a Redis backend keeps the libraries in its server")
    fd = start_frontdoor()
    c = fd.conn()
    wait_functions(c)
    c.cmd("FUNCTION", "FLUSH")
    check(c.cmd("FUNCTION", "LOAD", LIB_CALLS) == b"$5\r\ncalls\r\n", "load calls")
    check(c.cmd("FUNCTION", "LOAD", LIB) == b"$5\r\nmylib\r\n", "load mylib")
    c.cmd("FCALL", "setk", "1", "k", "v")
    check(c.cmd("FLUSHALL") == b"+OK\r\n", "flushall")
    check(c.cmd("DBSIZE") == b":0\r\n", "the libraries are no key", c.cmd("DBSIZE"))
    check(c.cmd("SCAN", "0") == b"*2\r\n$1\r\n0\r\n*0\r\n", "SCAN shows nothing", c.cmd("SCAN", "0"))
    check(c.cmd("RANDOMKEY") == b"$-1\r\n", "RANDOMKEY shows nothing")
    dump = c.cmd("FUNCTION", "DUMP")
    c.close()
    fd.restart()
    c = fd.conn()
    wait_functions(c)
    check(c.cmd("FCALL", "ver", "0") == b"$6\r\n7.0.15\r\n", "a library survives a restart", c.cmd("FCALL", "ver", "0"))
    check(c.cmd("FUNCTION", "DUMP") == dump, "the same libraries after the restart")
    check(c.cmd("FUNCTION", "DELETE", "calls") == b"+OK\r\n", "delete calls")
    c.close()
    fd.restart()
    c = fd.conn()
    wait_functions(c)
    check(c.cmd("FCALL", "ver", "0") == b"-ERR Function not found\r\n", "DELETE is stored")
    check(c.cmd("FCALL", "setk", "1", "k", "w") == b"+OK\r\n", "mylib is still there")
    check(c.cmd("FUNCTION", "FLUSH") == b"+OK\r\n", "flush")
    c.close()
    fd.restart()
    c = fd.conn()
    wait_functions(c)
    check(c.cmd("FUNCTION", "LIST") == b"*0\r\n", "FUNCTION FLUSH is stored", c.cmd("FUNCTION", "LIST"))
    check(c.cmd("GET", "k") == b"$1\r\nw\r\n", "the data are there")
    c.close()


@T.case
def redis_cli_load_from_file_and_redis_py():
    """An application's way: redis-cli -x FUNCTION LOAD < lib.lua, then
    redis-py's fcall / fcall_ro / function_list / function_load."""
    cli = shutil.which("redis-cli")
    if not cli:
        skip("no redis-cli")
    try:
        import redis
    except ImportError:
        skip("no redis-py")
    _, fd = shared_pair()
    c = fd.conn()
    wait_functions(c)
    c.cmd("FUNCTION", "FLUSH")
    try:
        with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
            f.write(LIB_RO)
            path = f.name
        with open(path) as src:
            r = subprocess.run([cli, "-h", "127.0.0.1", "-p", str(fd.port), "-x", "FUNCTION", "LOAD"],
                               stdin=src, capture_output=True, text=True, timeout=20)
        os.unlink(path)
        check(r.returncode == 0 and r.stdout.strip() == "rolib", "redis-cli -x FUNCTION LOAD", r.stdout, r.stderr)
        rc = redis.Redis(host="127.0.0.1", port=fd.port, decode_responses=True)
        check(rc.function_load(LIB, replace=True) == "mylib", "function_load")
        check(rc.fcall("setk", 1, "app:k", "hello") == "OK", "fcall setk")
        check(rc.fcall_ro("getk", 1, "app:k") == "hello", "fcall_ro getk")
        libs = sorted(x[x.index("library_name") + 1] for x in rc.function_list())   # RESP2: flat pairs
        check(libs == ["mylib", "rolib"], "function_list", libs)
        try:
            rc.fcall_ro("setk", 1, "app:k", "x")
            check(False, "fcall_ro of a write function must fail")
        except redis.ResponseError as e:
            check("write flag" in str(e), "fcall_ro refusal", str(e))
        rc.delete("app:k")
        rc.close()
    finally:
        c.cmd("FUNCTION", "FLUSH")


if __name__ == "__main__":
    T.main()
