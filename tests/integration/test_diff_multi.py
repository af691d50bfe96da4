#!/usr/bin/python3
"""Differential test of transactions (MULTI EXEC DISCARD WATCH UNWATCH) and
Lua scripting (EVAL EVALSHA EVAL_RO EVALSHA_RO SCRIPT): the same commands go
to a real redis-server 7.0 and to frontdoor, every reply compared byte for
byte, each script once in RESP2 and once in RESP3.

A case may use two clients: a step ("@B", cmd...) runs on the second client
(of each server), every other step on the first. Multi-key cases use one
hash tag ({t}) so that they run unchanged through a Redis Cluster (a
transaction's keys must share a slot there).

WATCH on the redis backends sees only writes made through frontdoor
(proxy/multi.h); every "other client" here is a client of frontdoor, so
the cases hold there too.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import Tests, check, diff_case, diff_pipelined, shared_pair, skip

T = Tests(case_timeout=120)
BACKEND = os.environ.get("FD_BACKEND", "lmdb")

def scripted(name, steps):
    diff_case(T, name, steps, first=[("SCRIPT", "FLUSH")])


pipelined = diff_pipelined


# ============================================================ transactions

scripted("multi_basic", [
    ("MULTI",), ("SET", "{t}a", "1"), ("INCR", "{t}a"), ("GET", "{t}a"), ("RPUSH", "{t}l", "x", "y"),
    ("LRANGE", "{t}l", "0", "-1"), ("HSET", "{t}h", "f", "v"), ("HGETALL", "{t}h"), ("EXISTS", "{t}nokey"),
    ("GET", "{t}nokey"), ("EXEC",), ("GET", "{t}a"), ("EXEC",), ("DISCARD",),
])

scripted("multi_empty", [("MULTI",), ("EXEC",), ("MULTI",), ("DISCARD",), ("EXEC",)])

scripted("multi_nested_and_without", [
    ("EXEC",), ("DISCARD",), ("MULTI",), ("MULTI",), ("SET", "{t}a", "1"), ("EXEC",), ("GET", "{t}a"),
    ("multi",), ("set", "{t}a", "2"), ("discard",), ("GET", "{t}a"),
])

scripted("multi_queued_errors_execabort", [
    ("MULTI",), ("SET", "{t}a", "1"), ("SET", "{t}a"), ("INCR", "{t}a"), ("EXEC",), ("EXISTS", "{t}a"),
    ("MULTI",), ("GET",), ("DISCARD",), ("EXEC",),
    ("MULTI",), ("SET", "{t}a", "1"), ("GET", "{t}a", "x"), ("EXEC",), ("MULTI",), ("EXEC",),
])

# On the redis backends a command frontdoor's table does not know is queued
# (+QUEUED) and left to Redis, which aborts the EXEC (multi.h): the EXEC
# reply is Redis's, the queueing reply is not.
scripted("multi_queued_unknown_command", [
    ("MULTI",), ("SET", "{t}a", "1"), ("NOSUCHCOMMAND", "x"), ("EXEC",), ("EXISTS", "{t}a"),
    pipelined([("MULTI",), ("INCR", "{t}p"), ("NOPE",), ("EXEC",), ("GET", "{t}p")]),
])

scripted("multi_runtime_errors", [
    ("MULTI",), ("SET", "{t}a", "x"), ("INCR", "{t}a"), ("LPUSH", "{t}a", "y"), ("GET", "{t}a"),
    ("SET", "{t}b", "1", "EX", "0"), ("INCRBY", "{t}b", "notanumber"), ("SET", "{t}c", "ok"), ("EXEC",),
    ("MGET", "{t}a", "{t}b", "{t}c"),
])

scripted("multi_watch_inside_multi", [
    ("MULTI",), ("WATCH", "{t}a"), ("SET", "{t}a", "1"), ("EXEC",), ("GET", "{t}a"),
    ("MULTI",), ("UNWATCH",), ("EXEC",),
])

scripted("multi_watch_other_client_write", [
    ("SET", "{t}w", "1"), ("WATCH", "{t}w"), ("@B", "SET", "{t}w", "2"),
    ("MULTI",), ("SET", "{t}w", "3"), ("GET", "{t}w"), ("EXEC",), ("GET", "{t}w"),
    # the watch is gone after EXEC
    ("MULTI",), ("SET", "{t}w", "4"), ("EXEC",), ("GET", "{t}w"),
    # a key that does not exist yet
    ("WATCH", "{t}new"), ("@B", "SET", "{t}new", "x"), ("MULTI",), ("GET", "{t}new"), ("EXEC",),
    # deleting a watched key
    ("WATCH", "{t}new"), ("@B", "DEL", "{t}new"), ("MULTI",), ("GET", "{t}new"), ("EXEC",),
    # several keys, one touched
    ("WATCH", "{t}x", "{t}y", "{t}w"), ("@B", "INCR", "{t}y"), ("MULTI",), ("PING",), ("EXEC",),
    # a watched key no one touches
    ("WATCH", "{t}w"), ("@B", "SET", "{t}other", "1"), ("MULTI",), ("GET", "{t}w"), ("EXEC",),
])

scripted("multi_watch_same_client_write", [
    ("SET", "{t}w", "1"), ("WATCH", "{t}w"), ("SET", "{t}w", "2"), ("MULTI",), ("GET", "{t}w"), ("EXEC",),
    ("WATCH", "{t}w"), ("GET", "{t}w"), ("MULTI",), ("INCR", "{t}w"), ("EXEC",), ("GET", "{t}w"),
])

scripted("multi_watch_flushdb", [
    ("SET", "{t}w", "1"), ("WATCH", "{t}w"), ("@B", "FLUSHDB",), ("MULTI",), ("SET", "{t}w", "2"), ("EXEC",),
    ("EXISTS", "{t}w"), ("SET", "{t}w", "1"), ("WATCH", "{t}w"), ("@B", "FLUSHALL",), ("MULTI",), ("PING",),
    ("EXEC",),
])

scripted("multi_unwatch_and_discard_clear_watches", [
    ("SET", "{t}w", "1"), ("WATCH", "{t}w"), ("UNWATCH",), ("@B", "SET", "{t}w", "2"),
    ("MULTI",), ("GET", "{t}w"), ("EXEC",), ("UNWATCH",),
    ("WATCH", "{t}w"), ("MULTI",), ("DISCARD",), ("@B", "SET", "{t}w", "3"),
    ("MULTI",), ("GET", "{t}w"), ("EXEC",),
    # a touched watch stays until EXEC/DISCARD/UNWATCH: an aborted EXEC clears it
    ("WATCH", "{t}w"), ("@B", "SET", "{t}w", "4"), ("MULTI",), ("EXEC",), ("MULTI",), ("GET", "{t}w"), ("EXEC",),
    # WATCH twice the same key, UNWATCH without WATCH
    ("UNWATCH",), ("WATCH", "{t}w", "{t}w"), ("WATCH", "{t}w"), ("MULTI",), ("EXEC",),
])

scripted("multi_watch_by_script_and_exec", [
    ("SET", "{t}w", "1"), ("WATCH", "{t}w"),
    ("@B", "EVAL", "return redis.call('incr', KEYS[1])", "1", "{t}w"),
    ("MULTI",), ("GET", "{t}w"), ("EXEC",),
    ("WATCH", "{t}w"), ("@B", "MULTI"), ("@B", "SET", "{t}w", "9"), ("@B", "EXEC"),
    ("MULTI",), ("GET", "{t}w"), ("EXEC",),
])

scripted("multi_pipelined", [
    pipelined([("MULTI",), ("SET", "{t}p", "1"), ("INCR", "{t}p"), ("INCR", "{t}p"), ("GET", "{t}p"),
               ("EXEC",), ("GET", "{t}p"), ("MULTI",), ("INCR", "{t}p"), ("GET", "{t}p", "x"), ("EXEC",),
               ("GET", "{t}p")]),
    pipelined([("WATCH", "{t}p"), ("GET", "{t}p"), ("MULTI",), ("SET", "{t}p", "5"), ("EXEC",)]),
])

scripted("multi_resp_types", [
    ("HSET", "{t}h", "a", "1", "b", "2"), ("SADD", "{t}s", "m"), ("ZADD", "{t}z", "1.5", "m"),
    ("MULTI",), ("HGETALL", "{t}h"), ("SMEMBERS", "{t}s"), ("ZSCORE", "{t}z", "m"),
    ("ZRANGE", "{t}z", "0", "-1", "WITHSCORES"), ("GET", "{t}nokey"), ("SET", "{t}k", "v", "GET"),
    ("EXISTS", "{t}h"), ("EXEC",),
])

scripted("multi_eval_inside", [
    ("MULTI",), ("EVAL", "return redis.call('set', KEYS[1], ARGV[1])", "1", "{t}e", "v"),
    ("EVAL", "return redis.call('get', KEYS[1])", "1", "{t}e"), ("EVAL", "return redis.call('incr', KEYS[1])", "1", "{t}e"),
    ("EXEC",),
])

# ============================================================ scripting

scripted("script_lua_to_resp", [
    ("EVAL", "return 1", "0"), ("EVAL", "return -7", "0"), ("EVAL", "return 3.99", "0"), ("EVAL", "return -3.99", "0"),
    ("EVAL", "return 'str'", "0"), ("EVAL", "return ''", "0"), ("EVAL", "return true", "0"),
    ("EVAL", "return false", "0"), ("EVAL", "return nil", "0"), ("EVAL", "return", "0"),
    ("EVAL", "return {1, 'two', {3, 'four'}, 5.5}", "0"), ("EVAL", "return {1, 2, nil, 4}", "0"),
    ("EVAL", "return {}", "0"), ("EVAL", "return {a=1}", "0"), ("EVAL", "return {1, false, 3}", "0"),
    ("EVAL", "return {1, true, 3}", "0"), ("EVAL", "return {err='My Error'}", "0"),
    ("EVAL", "return {ok='Fine'}", "0"), ("EVAL", "return {err='x', ok='y'}", "0"),
    ("EVAL", "return redis.error_reply('MY oops')", "0"), ("EVAL", "return redis.error_reply('oops')", "0"),
    ("EVAL", "return redis.status_reply('FINE')", "0"), ("EVAL", "return {redis.status_reply('A'), redis.error_reply('B')}", "0"),
    ("EVAL", "return 1e20", "0"), ("EVAL", "return 0/0", "0"), ("EVAL", "return tostring(1/0)", "0"),
    ("EVAL", "return {1, {2, {3, {4}}}}", "0"), ("EVAL", "return 'a\\0b'", "0"),
    ("EVAL", "return {KEYS[1], KEYS[2], ARGV[1], ARGV[2], #KEYS, #ARGV}", "2", "{t}k1", "{t}k2", "a1", "a2"),
    ("EVAL", "return {err=''}", "0"), ("EVAL", "return redis.error_reply('')", "0"),
    ("EVAL", "return {err='-FOO bar'}", "0"),
])

scripted("script_resp_to_lua", [
    ("SET", "{t}s", "hello"), ("RPUSH", "{t}l", "a", "b"), ("HSET", "{t}h", "f", "v"), ("ZADD", "{t}z", "2.5", "m"),
    ("EVAL", "return redis.call('get', KEYS[1])", "1", "{t}s"),
    ("EVAL", "return redis.call('get', KEYS[1])", "1", "{t}nokey"),
    ("EVAL", "return type(redis.call('get', KEYS[1]))", "1", "{t}nokey"),
    ("EVAL", "local r = redis.call('get', KEYS[1]); return tostring(r)", "1", "{t}nokey"),
    ("EVAL", "return redis.call('set', KEYS[1], 'x')", "1", "{t}s2"),
    ("EVAL", "local r = redis.call('set', KEYS[1], 'x'); return type(r) .. ':' .. r['ok']", "1", "{t}s2"),
    ("EVAL", "return redis.call('incr', KEYS[1])", "1", "{t}n"),
    ("EVAL", "return type(redis.call('incr', KEYS[1]))", "1", "{t}n"),
    ("EVAL", "return redis.call('lrange', KEYS[1], 0, -1)", "1", "{t}l"),
    ("EVAL", "return redis.call('hgetall', KEYS[1])", "1", "{t}h"),
    ("EVAL", "return redis.call('zscore', KEYS[1], 'm')", "1", "{t}z"),
    ("EVAL", "return redis.call('zrange', KEYS[1], 0, -1, 'WITHSCORES')", "1", "{t}z"),
    ("EVAL", "return redis.call('exists', KEYS[1], KEYS[2])", "2", "{t}s", "{t}l"),
    ("EVAL", "return redis.call('lpop', KEYS[1])", "1", "{t}nolist"),
    ("EVAL", "return {redis.call('lpop', KEYS[1])}", "1", "{t}nolist"),
    ("EVAL", "return redis.call('ping')", "0"),
    ("EVAL", "return redis.call('set', KEYS[1], 3.7)", "1", "{t}f"), ("GET", "{t}f"),
    ("EVAL", "return redis.call('set', KEYS[1], 12345678901234)", "1", "{t}f"), ("GET", "{t}f"),
    ("EVAL", "return redis.call('set', KEYS[1], 0.1)", "1", "{t}f"), ("GET", "{t}f"),
    ("EVAL", "return redis.call('SeT', KEYS[1], 'case')", "1", "{t}f"), ("GET", "{t}f"),
])

scripted("script_resp3_in_lua", [
    ("HSET", "{t}h", "f", "v"), ("ZADD", "{t}z", "2.5", "m"), ("SADD", "{t}s", "x"),
    ("EVAL", "redis.setresp(3); return redis.call('hgetall', KEYS[1])", "1", "{t}h"),
    ("EVAL", "redis.setresp(3); local r = redis.call('hgetall', KEYS[1]); return type(r['map'])", "1", "{t}h"),
    ("EVAL", "redis.setresp(3); return redis.call('zscore', KEYS[1], 'm')", "1", "{t}z"),
    ("EVAL", "redis.setresp(3); local r = redis.call('zscore', KEYS[1], 'm'); return tostring(r['double'])", "1", "{t}z"),
    ("EVAL", "redis.setresp(3); return redis.call('smembers', KEYS[1])", "1", "{t}s"),
    ("EVAL", "redis.setresp(3); return redis.call('get', KEYS[1])", "1", "{t}nokey"),
    ("EVAL", "redis.setresp(3); return tostring(redis.call('get', KEYS[1]))", "1", "{t}nokey"),
    ("EVAL", "redis.setresp(3); return true", "0"), ("EVAL", "redis.setresp(3); return false", "0"),
    ("EVAL", "redis.setresp(3); return {double=3.5}", "0"), ("EVAL", "return {double=3.5}", "0"),
    ("EVAL", "return {map={a=1}}", "0"), ("EVAL", "return {set={a=true}}", "0"),
    ("EVAL", "return {big_number='123456789012345678901234567890'}", "0"),
    ("EVAL", "redis.setresp(4)", "0"), ("EVAL", "redis.setresp()", "0"),
])

scripted("script_call_vs_pcall_errors", [
    ("SET", "{t}s", "str"),
    ("EVAL", "return redis.call('incr', KEYS[1])", "1", "{t}s"),
    ("EVAL", "return redis.pcall('incr', KEYS[1])", "1", "{t}s"),
    ("EVAL", "local r = redis.pcall('incr', KEYS[1]); return r['err']", "1", "{t}s"),
    ("EVAL", "local ok, e = pcall(redis.call, 'incr', KEYS[1]); return {tostring(ok), type(e)}", "1", "{t}s"),
    ("EVAL", "local ok, e = pcall(redis.call, 'incr', KEYS[1]); return e", "1", "{t}s"),
    ("EVAL", "return redis.call('lpush', KEYS[1], 'x')", "1", "{t}s"),
    ("EVAL", "return redis.pcall('lpush', KEYS[1], 'x')", "1", "{t}s"),
    ("EVAL", "redis.call('set', KEYS[1], 'partial'); return redis.call('incr', KEYS[1])", "1", "{t}p"),
    ("GET", "{t}p"),
    ("EVAL", "error('plain')", "0"), ("EVAL", "error({err='TABLE err'})", "0"),
    ("EVAL", "error('x', 0)", "0"), ("EVAL", "local t = nil; return t.x", "0"),
    ("EVAL", "return redis.call()", "0"), ("EVAL", "return redis.call(1)", "0"),
    ("EVAL", "return redis.call('get', {})", "0"), ("EVAL", "return redis.pcall('get', {})", "0"),
    ("EVAL", "return redis.call('nosuchcmd')", "0"), ("EVAL", "return redis.pcall('nosuchcmd')", "0"),
    ("EVAL", "return redis.call('get')", "0"), ("EVAL", "return redis.pcall('get', 'a', 'b')", "0"),
    ("EVAL", "return x", "0"), ("EVAL", "x = 1", "0"), ("EVAL", "return redis.call('get' ", "0"),
    ("EVAL", "redis.x = 1", "0"), ("EVAL", "string.foo = 1", "0"),
])

scripted("script_not_allowed_from_scripts", [
    ("EVAL", "return redis.call('multi')", "0"), ("EVAL", "return redis.call('exec')", "0"),
    ("EVAL", "return redis.call('watch', 'x')", "0"), ("EVAL", "return redis.call('eval', 'return 1', '0')", "0"),
    ("EVAL", "return redis.pcall('evalsha', 'abc', '0')", "0"), ("EVAL", "return redis.call('script', 'load', 'return 1')", "0"),
    ("EVAL", "return redis.call('client', 'list')", "0"),
    ("EVAL", "return redis.call('auth', 'x')", "0"), ("EVAL", "return redis.call('hello')", "0"), ("EVAL", "return redis.call('config', 'get', 'maxmemory')", "0"),
    ("EVAL", "return redis.pcall('quit')", "0"), ("EVAL", "return redis.pcall('client', 'id')", "0"),
    ("EVAL", "return redis.call('discard')", "0"), ("EVAL", "return redis.call('unwatch')", "0"),
])

scripted("script_noscript_and_cache", [
    ("EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"),
    ("EVALSHA", "abc", "0"), ("EVALSHA_RO", "ffffffffffffffffffffffffffffffffffffffff", "0"),
    ("SCRIPT", "LOAD", "return 'loaded'"), ("SCRIPT", "EXISTS", "a0d87b1d81a8e0bf5f3c4e1ef1a1e8f6a8d6f8d7",
                                              "ca24bd1c16bc5da67f42a7a86aacbdba49e3a4c4"),
    ("EVALSHA", "3e5a3c0b9ba4bd0aa8fd2d64e5b0ebd0d6d7df30", "0"),
    ("SCRIPT", "EXISTS", "3e5a3c0b9ba4bd0aa8fd2d64e5b0ebd0d6d7df30"),
    ("EVAL", "return 'cached by eval'", "0"),
    ("EVALSHA", "d2a2a5f2c6b8a5c6d2e3b1a7d19a4f1b1c9e0b3e", "0"),
    ("SCRIPT", "LOAD", "return redis.sha1hex('')"),
    ("EVAL", "return redis.sha1hex('return 1')", "0"),
    ("SCRIPT", "FLUSH"), ("SCRIPT", "FLUSH", "ASYNC"), ("SCRIPT", "FLUSH", "SYNC"), ("SCRIPT", "FLUSH", "X"),
    ("SCRIPT", "EXISTS", "3e5a3c0b9ba4bd0aa8fd2d64e5b0ebd0d6d7df30"),
    ("SCRIPT", "LOAD", "return +"), ("SCRIPT", "LOAD"), ("SCRIPT", "NOPE"), ("SCRIPT", "KILL"),
    ("SCRIPT", "EXISTS"), ("SCRIPT",),
])


def _load_then_evalsha(two):
    for d in (two.a,):
        sha_ref, sha_fd = d.cmd("SCRIPT", "LOAD", "return {KEYS[1], ARGV[1], redis.call('incr', KEYS[1])}")
        sha = sha_ref.split(b"\r\n")[1].decode()
        d.cmd("EVALSHA", sha, "1", "{t}c", "arg")
        d.cmd("evalsha", sha.upper(), "1", "{t}c", "arg")
        d.cmd("EVALSHA_RO", sha, "1", "{t}c", "arg")
        d.cmd("EVALSHA", sha, "2", "{t}c")
        d.cmd("SCRIPT", "EXISTS", sha, sha.upper(), "nope")


scripted("script_load_evalsha", [_load_then_evalsha, ("GET", "{t}c")])

scripted("script_numkeys", [
    ("EVAL", "return 1", "-1"), ("EVAL", "return 1", "x"), ("EVAL", "return 1", "2", "{t}a"),
    ("EVAL", "return 1", "1.5", "{t}a"), ("EVAL", "return #KEYS", "1", "{t}a", "b"),
    ("EVAL", "return 1", "99999999999999999999"), ("EVAL", "return 1"), ("EVALSHA", "x"),
    ("EVAL", "return #ARGV", "0", "a", "b", "c"), ("EVAL_RO", "return 1", "-5"),
])

scripted("script_read_only", [
    ("SET", "{t}a", "1"),
    ("EVAL_RO", "return redis.call('get', KEYS[1])", "1", "{t}a"),
    ("EVAL_RO", "return redis.call('set', KEYS[1], '2')", "1", "{t}a"),
    ("EVAL_RO", "return redis.pcall('set', KEYS[1], '2')", "1", "{t}a"), ("GET", "{t}a"),
    ("EVAL", "#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], '3')", "1", "{t}a"),
    ("EVAL", "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])", "1", "{t}a"),
    ("EVAL", "#!lua\nreturn redis.call('get', KEYS[1])", "1", "{t}a"),
    ("EVAL", "#!lua flags=bogus\nreturn 1", "0"), ("EVAL", "#!nolua\nreturn 1", "0"),
    ("EVAL", "#!lua name=x\nreturn 1", "0"),
])

scripted("script_writes", [
    ("EVAL", "redis.call('set', KEYS[1], ARGV[1]); redis.call('rpush', KEYS[2], ARGV[1], ARGV[2]); "
             "return {redis.call('get', KEYS[1]), redis.call('llen', KEYS[2])}", "2", "{t}a", "{t}l", "v1", "v2"),
    ("GET", "{t}a"), ("LRANGE", "{t}l", "0", "-1"),
    ("EVAL", "local v = tonumber(redis.call('get', KEYS[1]) or '0'); redis.call('set', KEYS[1], v + 1); "
             "return redis.call('get', KEYS[1])", "1", "{t}n"),
    ("EVAL", "redis.call('del', KEYS[1]); return redis.call('exists', KEYS[1])", "1", "{t}a"),
    ("EVAL", "return redis.call('expire', KEYS[1], 100)", "1", "{t}l"), ("TTL", "{t}l"),
    ("EVAL", "redis.set_repl(redis.REPL_ALL); redis.replicate_commands(); return redis.call('incr', KEYS[1])", "1", "{t}n"),
    ("EVAL", "redis.set_repl(99)", "0"),
])

scripted("script_libraries", [
    ("EVAL", "return cjson.encode({1, 2, 'x'})", "0"),
    ("EVAL", "return cjson.decode('[1,2,{\"a\":3}]')[3]['a']", "0"),
    ("EVAL", "return cjson.encode(cjson.decode('{\"k\":\"v\"}'))", "0"),
    ("EVAL", "return cmsgpack.pack({1, 2, 'x'})", "0"),
    ("EVAL", "return cmsgpack.unpack(cmsgpack.pack({1, 2, 'x'}))", "0"),
    ("EVAL", "return bit.band(0xff, 0x0f)", "0"), ("EVAL", "return bit.tohex(65535)", "0"),
    ("EVAL", "return struct.pack('>I2', 258)", "0"), ("EVAL", "return struct.unpack('>I2', '\\1\\2')", "0"),
    ("EVAL", "return string.format('%d %s %.2f', 1, 'x', 2.5)", "0"),
    ("EVAL", "return table.concat({'a', 'b'}, ',')", "0"), ("EVAL", "return math.floor(2.7)", "0"),
    ("EVAL", "return tostring(tonumber('0x10'))", "0"), ("EVAL", "return type(loadstring)", "0"),
    ("EVAL", "return type(print)", "0"), ("EVAL", "return redis.REDIS_VERSION_NUM >= 0x070000", "0"),
    ("EVAL", "return redis.LOG_WARNING", "0"), ("EVAL", "redis.log(redis.LOG_DEBUG, 'x'); return 1", "0"),
])

scripted("script_pipelined", [
    pipelined([("EVAL", "return redis.call('incr', KEYS[1])", "1", "{t}q")] * 5 +
              [("SCRIPT", "LOAD", "return redis.call('incr', KEYS[1])"),
               ("EVALSHA", "bb2d5de0dea7d47d2b2c2b9e8b22f46c3c0f78b6", "1", "{t}q"), ("GET", "{t}q")]),
])


# ============================================================ while a script is busy

def _busy_side(srv):
    """On one server: an EVAL spins past busy-reply-threshold; what another
    client's transaction commands get meanwhile (Redis 7.0: MULTI, DISCARD,
    WATCH, UNWATCH run; a refused command flags the transaction; EXEC is
    answered -EXECABORT ... because of: BUSY and discards it)."""
    import time
    a, b = srv.conn(timeout=10), srv.conn(timeout=10)
    out = []
    try:
        b.cmd("CONFIG", "SET", "busy-reply-threshold", "100")
        a.send("EVAL", "local i = 0 while true do i = i + 1 end", "0")
        time.sleep(0.5)
        for cmd in [("MULTI",), ("WATCH", "{t}k"), ("UNWATCH",), ("PING",), ("EXEC",), ("DISCARD",),
                    ("MULTI",), ("EXEC",), ("EXEC",), ("WATCH", "{t}k"), ("UNWATCH",), ("DISCARD",),
                    ("MULTI",), ("SET", "{t}k", "1"), ("DISCARD",), ("EXEC",),
                    ("MULTI",), ("GET", "{t}k")]:
            out.append(b.cmd(*cmd))
        out.append(srv.conn(timeout=10).cmd("SCRIPT", "KILL"))   # b is in MULTI: it would queue it
        out.append(a.read())
        # the script is gone: the flagged transaction aborts for its errors
        out.append(b.cmd("EXEC"))
        out.append(b.cmd("MULTI"))
        out.append(b.cmd("EXEC"))
    finally:
        b.cmd("CONFIG", "SET", "busy-reply-threshold", "5000")
    return out


@T.case
def multi_while_script_busy():
    """MULTI/EXEC/DISCARD/WATCH/UNWATCH while another client's script is
    past busy-reply-threshold, byte for byte as Redis 7.0."""
    if BACKEND in ("redis", "redis-cluster"):
        # the server runs it: other clients' commands wait behind it on the
        # shared backend connection (docs/transactions.md)
        skip("a Redis backend's busy server is not seen as -BUSY through the shared connection")
    ref, fd = shared_pair()
    r, f = _busy_side(ref), _busy_side(fd)
    check(r == f, "busy replies differ:\n  redis: %r\n  fd:    %r" % (r, f))


# lua-time-limit: Redis 7.0's alias of busy-reply-threshold (one value, two names)
scripted("lua_time_limit_alias", [
    ("CONFIG", "SET", "lua-time-limit", "300"), ("CONFIG", "GET", "lua-time-limit"),
    ("CONFIG", "GET", "busy-reply-threshold"), ("CONFIG", "GET", "lua*"), ("CONFIG", "GET", "busy-reply*"),
    ("CONFIG", "SET", "busy-reply-threshold", "400"), ("CONFIG", "GET", "lua-time-limit"),
    ("CONFIG", "SET", "lua-time-limit", "x"), ("CONFIG", "SET", "lua-time-limit", "5000"),
    ("CONFIG", "GET", "busy-reply-threshold"),
])


# EXEC refused by its arity, in MULTI or not: Redis 7.0's execCommandAbort
# (-EXECABORT ... because of: wrong number of arguments..., the transaction
# discarded); other transaction commands' arity errors flag the transaction
scripted("exec_arity_aborts", [
    ("EXEC", "x"), ("MULTI",), ("SET", "{t}a", "1"), ("EXEC", "x"), ("EXEC",), ("EXISTS", "{t}a"),
    ("MULTI",), ("DISCARD", "x"), ("EXEC",), ("MULTI",), ("MULTI", "x"), ("EXEC",),
    ("WATCH",), ("MULTI",), ("WATCH",), ("EXEC",), ("MULTI",), ("UNWATCH", "x"), ("EXEC",),
])


# SELECT, SWAPDB, MOVE queued in MULTI (the fuzzer's redis-multi-db): EXEC
# answers them as outside MULTI, where they are frontdoor's (one database,
# 0), on every backend; on the redis backends they never reach the server
# (SWAPDB 0 3 there swapped the server's databases). The texts chosen are
# Redis's own (the reference has one database too).
scripted("multi_db_commands", [
    ("SET", "{t}a", "1"), ("MULTI",), ("SET", "{t}a", "2"), ("SWAPDB", "0", "0"), ("SWAPDB", "0", "x"),
    ("SELECT", "0"), ("SELECT", "1"), ("SELECT", "x"), ("MOVE", "{t}a", "0"), ("MOVE", "{t}a", "-4294967296"),
    ("MOVE", "{t}a", "x"), ("COPY", "{t}a", "{t}b", "DB", "x"), ("GET", "{t}a"), ("EXEC",),
    ("GET", "{t}a"), ("EXISTS", "{t}b"),
    ("MULTI",), ("SELECT", "0"), ("EXEC",), ("MULTI",), ("MOVE", "{t}a", "0"), ("MOVE", "{t}a", "0"), ("EXEC",),
    ("MULTI",), ("COPY", "{t}a", "{t}b", "DB", "x"), ("EXEC",),
])


@T.case
def multi_db_commands_as_outside():
    """A command frontdoor answers for its one database (SWAPDB 0 3, MOVE k 1,
    SELECT 2) or a backend refuses (COPY ... DB 3 on a Redis backend) gets,
    inside EXEC, the reply it gets outside MULTI, one element per queued
    command, and changes nothing: the key stays where it was (on the redis
    backend, the server's database 3 stays empty)."""
    _, fd = shared_pair()
    one = [("SWAPDB", "0", "3"), ("MOVE", "{t}m", "1"), ("SELECT", "2"), ("COPY", "{t}m", "{t}n", "DB", "3")]
    with fd.conn() as c:
        c.cmd("DEL", "{t}m", "{t}n")
        c.cmd("SET", "{t}m", "v")
        outside = [c.cmd(*cmd) for cmd in one]
        for r in outside:
            check(r.startswith(b"-ERR "), "outside MULTI, %r" % (r,))
        check(c.cmd("MULTI") == b"+OK\r\n", "MULTI")
        for cmd in [("INCR", "{t}cnt")] + one + [("GET", "{t}m")]:
            check(c.cmd(*cmd) == b"+QUEUED\r\n", "queued %r" % (cmd,))
        got = c.cmd("EXEC")
        head = b"*%d\r\n" % (len(one) + 2)
        check(got.startswith(head), "EXEC: %d replies expected: %r" % (len(one) + 2, got))
        rest = got[len(head):]
        check(rest.startswith(b":") and rest.index(b"\r\n") > 0, "EXEC's INCR: %r" % got)
        rest = rest[rest.index(b"\r\n") + 2:]
        check(rest == b"".join(outside) + b"$1\r\nv\r\n",
              "EXEC's replies differ from outside MULTI's:\n  outside: %r\n  EXEC:    %r" % (outside, got))
        check(c.cmd("GET", "{t}m") == b"$1\r\nv\r\n", "the key moved")
        check(c.cmd("EXISTS", "{t}n") == b":0\r\n", "the copy was made")
    if getattr(fd, "backing", None) is not None:
        with fd.backing.conn() as b:
            b.cmd("SELECT", "3")
            check(b.cmd("DBSIZE") == b":0\r\n", "the backend server's database 3 is not empty")


@T.case
def multi_own_commands_as_outside():
    """frontdoor's own connection and server commands queued in MULTI
    (CLIENT SETNAME/GETNAME/ID, CONFIG GET, WAIT, PING, ECHO, FRONTDOOR)
    answer inside EXEC as outside it, on every backend: on the redis
    backends they never go up to the server (where CLIENT SETNAME would name
    frontdoor's shared link, and FRONTDOOR is unknown)."""
    _, fd = shared_pair()
    with fd.conn() as c:
        cid = c.cmd("CLIENT", "ID")
        check(cid.startswith(b":"), "CLIENT ID: %r" % cid)
        cfg = c.cmd("CONFIG", "GET", "maxclients")
        fdhelp = c.cmd("FRONTDOOR", "HELP")
        check(fdhelp.startswith(b"*"), "FRONTDOOR HELP: %r" % fdhelp[:60])
        check(c.cmd("MULTI") == b"+OK\r\n", "MULTI")
        cmds = [("INCR", "{t}own"), ("CLIENT", "SETNAME", "in-multi"), ("CLIENT", "GETNAME"), ("CLIENT", "ID"),
                ("CONFIG", "GET", "maxclients"), ("WAIT", "0", "0"), ("PING",), ("ECHO", "e"), ("FRONTDOOR", "HELP")]
        for cmd in cmds:
            check(c.cmd(*cmd) == b"+QUEUED\r\n", "queued %r" % (cmd,))
        got = c.cmd("EXEC")
        check(got.startswith(b"*%d\r\n:" % len(cmds)), "EXEC: %r" % got[:80])
        rest = got[got.index(b"\r\n:") + 2:]
        rest = rest[rest.index(b"\r\n") + 2:]
        want = b"+OK\r\n$8\r\nin-multi\r\n" + cid + cfg + b":0\r\n+PONG\r\n$1\r\ne\r\n" + fdhelp
        check(rest == want, "EXEC's replies differ from outside MULTI's:\n  want: %r\n  EXEC: %r" % (want[:300], got[:300]))
        check(c.cmd("CLIENT", "GETNAME") == b"$8\r\nin-multi\r\n", "the name set in EXEC is the client's")
        c.cmd("CLIENT", "SETNAME", "")


@T.case
def script_debug_refused():
    """SCRIPT DEBUG YES|SYNC is refused on every backend, also queued in
    MULTI (frontdoor has no Lua debugger to offer; on a Redis backend the
    server's would take over a connection every client shares); NO is +OK,
    other values and arities Redis 7.0's errors. Scripts keep running on
    every connection afterwards."""
    _, fd = shared_pair()
    refused = b"-ERR frontdoor does not support the Lua debugger (SCRIPT DEBUG)\r\n"
    with fd.conn() as c:
        for how in ("YES", "sync"):
            r = c.cmd("SCRIPT", "DEBUG", how)
            check(r == refused, "SCRIPT DEBUG %s: %r" % (how, r))
        check(c.cmd("SCRIPT", "DEBUG", "NO") == b"+OK\r\n", "SCRIPT DEBUG NO")
        check(c.cmd("SCRIPT", "DEBUG", "x") == b"-ERR Use SCRIPT DEBUG YES/SYNC/NO\r\n", "SCRIPT DEBUG x")
        r = c.cmd("SCRIPT", "DEBUG")
        check(r == b"-ERR wrong number of arguments for 'script|debug' command\r\n", "SCRIPT DEBUG: %r" % r)
        c.cmd("MULTI")
        c.cmd("SCRIPT", "DEBUG", "YES")
        c.cmd("EVAL", "return 7", "0")
        r = c.cmd("EXEC")
        check(r == b"*2\r\n" + refused + b":7\r\n", "SCRIPT DEBUG YES in MULTI: %r" % r)
        conns = [fd.conn() for _ in range(4)]
        try:
            for i, o in enumerate([c] + conns):
                r = o.cmd("EVAL", "return redis.call('incr', KEYS[1])", "1", "{t}dbg%d" % i)
                check(r == b":1\r\n", "EVAL after SCRIPT DEBUG on client %d: %r" % (i, r))
        finally:
            for o in conns:
                o.close()
        c.cmd("DEL", *["{t}dbg%d" % i for i in range(5)])


if __name__ == "__main__":
    T.main()
