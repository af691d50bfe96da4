#!/usr/bin/python3
"""Commands the proxy serves itself (PING/ECHO/QUIT, HELLO, COMMAND, CONFIG,
INFO, CLIENT, TIME, DBSIZE), the connection limits (idle timeout,
maxclients, query and output buffer limits), startup errors, and data
surviving a restart (SIGTERM) and, with --durability sync, a SIGKILL.

Server-specific replies (INFO, CLIENT LIST, HELLO...) are checked for shape
and content rather than compared with redis-server byte for byte.
"""
import os
import re
import signal
import socket
import stat
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import (Tests, shared_frontdoor, Diff, Conn, ConnClosed, start_frontdoor, start_redis, encode,
                    encode_many, parse, check, eq, wait_until, kv_pairs, info_fields,
                    info_sections, run_frontdoor_expect_exit, make_tempdir, frontdoor_is_redis,
                    skip, Err, to_str, run, ReplyTimeout, is_sanitized)

T = Tests(case_timeout=50)

fd_shared = shared_frontdoor


def is_err(v, prefix="ERR"):
    return isinstance(v, Err) and v.startswith(prefix)


# ------------------------------------------------------------ simple commands

@T.case
def ping_echo_quit():
    fd = fd_shared()
    with fd.conn() as c:
        eq(c.cmd("PING"), b"+PONG\r\n", "PING")
        eq(c.cmd("PING", "hi"), b"$2\r\nhi\r\n", "PING msg")
        eq(c.cmd("ECHO", b"a\x00b"), b"$3\r\na\x00b\r\n", "ECHO")
        eq(c.cmd("QUIT"), b"+OK\r\n", "QUIT")
        check(c.wait_closed(2.0), "QUIT must close the connection")


@T.case
def hello_2_and_3():
    fd = fd_shared()
    with fd.conn() as c:
        v = parse(c.cmd("HELLO", "2"))
        check(isinstance(v, list), "HELLO 2 must be a flat array", v)
        m = kv_pairs(v)
        for k in ("server", "version", "proto", "id", "mode", "role", "modules"):
            check(k in m, "HELLO 2 lacks %r" % k, v)
        eq(m["proto"], 2, "HELLO 2 proto")
        my_id = parse(c.cmd("CLIENT", "ID"))
        eq(m["id"], my_id, "HELLO id == CLIENT ID")
        r = c.cmd("HELLO", "3")
        check(r.startswith(b"%7\r\n"), "HELLO 3 must be a 7-entry map", r)
        m = kv_pairs(parse(r))
        eq(m["proto"], 3, "HELLO 3 proto")
        eq(c.cmd("GET", "hello:nokey"), b"_\r\n", "RESP3 null after HELLO 3")
        r = c.cmd("HELLO")
        check(r.startswith(b"%"), "HELLO without a version keeps RESP3", r)
        eq(c.cmd("HELLO", "4"), b"-NOPROTO unsupported protocol version\r\n", "HELLO 4")
        r = c.cmd("HELLO", "2", "SETNAME", "hname")
        check(r.startswith(b"*14\r\n"), "HELLO 2 SETNAME must reply like HELLO 2", r)
        eq(c.cmd("CLIENT", "GETNAME"), b"$5\r\nhname\r\n", "HELLO SETNAME sets the name")
        eq(c.cmd("GET", "hello:nokey"), b"$-1\r\n", "RESP2 null after HELLO 2")


@T.case
def hello_with_auth():
    fd = start_frontdoor(requirepass="pw1")
    with fd.conn(auth=False) as c:
        eq(c.cmd("GET", "a"), b"-NOAUTH Authentication required.\r\n", "NOAUTH before HELLO")
        r = c.cmd("HELLO", "3", "AUTH", "default", "nope")
        eq(r, b"-WRONGPASS invalid username-password pair or user is disabled.\r\n",
           "HELLO AUTH with a wrong password")
        r = c.cmd("HELLO", "3", "AUTH", "default", "pw1")
        check(r.startswith(b"%7\r\n"), "HELLO 3 AUTH default pw must return the map", r)
        eq(c.cmd("SET", "a", "1"), b"+OK\r\n", "authenticated after HELLO AUTH")
        eq(c.cmd("GET", "nokey"), b"_\r\n", "RESP3 after HELLO 3 AUTH")
    with fd.conn(auth=False) as c:
        r = c.cmd("HELLO", "2", "AUTH", "default", "pw1", "SETNAME", "n1")
        check(r.startswith(b"*14\r\n"), "HELLO 2 AUTH ... SETNAME", r)
        eq(c.cmd("CLIENT", "GETNAME"), b"$2\r\nn1\r\n", "name set by HELLO")


def _skeleton(raw, depth=2):
    """The RESP type structure of a reply down to `depth` levels: aggregates
    as (type, count, children), leaves as their type byte."""
    from fdtest import _parse_at
    def walk(p, lvl):
        t = raw[p:p + 1]
        e = raw.index(b"\r\n", p)
        if t in b"*~%>":
            n = int(raw[p + 1:e])
            kids = []
            q = e + 2
            for _ in range(n * (2 if t == b"%" else 1)):
                k, q = walk(q, lvl + 1)
                kids.append(k)
            return ((t.decode(), n, tuple(kids) if lvl < depth else None), q)
        _, q = _parse_at(raw, p)
        return t.decode(), q
    return walk(0, 0)[0]


@T.case
def resp3_reply_types_of_server_commands():
    """In RESP3 INFO / CLIENT LIST / CLIENT INFO are verbatim strings, CONFIG
    GET and COMMAND DOCS maps, COMMAND INFO flags sets - as redis-server."""
    fd = fd_shared()
    ref = start_redis()
    cmds = [("INFO", "server"), ("CLIENT", "LIST"), ("CLIENT", "INFO"), ("CONFIG", "GET", "port"),
            ("CONFIG", "GET", "maxclients", "timeout"), ("COMMAND", "DOCS", "get"),
            ("COMMAND", "INFO", "get", "nosuchcmd"), ("TIME",), ("CLIENT", "GETNAME"),
            ("CLIENT", "ID"), ("LASTSAVE",), ("DBSIZE",), ("COMMAND", "COUNT")]
    bad = []
    for s in (ref, fd):
        s.c3 = s.conn()
        s.c3.cmd("HELLO", "3")
    for cmd in cmds:
        a = ref.c3.cmd(*cmd)
        b = fd.c3.cmd(*cmd)
        depth = 0 if cmd[0] == "COMMAND" else 3
        if _skeleton(a, depth) != _skeleton(b, depth):
            bad.append("%s\n     redis: %s\n     fd:    %s" % (" ".join(cmd), _skeleton(a, depth),
                                                             _skeleton(b, depth)))
    for s in (ref, fd):
        s.c3.close()
    check(not bad, "RESP3 reply types differ from redis-server:\n" + "\n".join(bad))


@T.case
def command_count_info_docs():
    fd = fd_shared()
    with fd.conn() as c:
        n = parse(c.cmd("COMMAND", "COUNT"))
        check(isinstance(n, int) and n >= 40, "COMMAND COUNT must be an integer >= 40", n)
        allc = parse(c.cmd("COMMAND"))
        check(isinstance(allc, list), "COMMAND must be an array", allc)
        eq(len(allc), n, "COMMAND entries == COMMAND COUNT")
        names = set(to_str(e[0]) for e in allc)
        for want in ("get", "set", "ping", "command", "config", "info", "hello", "auth"):
            check(want in names, "COMMAND lacks %r" % want)
        v = parse(c.cmd("COMMAND", "INFO", "get", "set", "mget", "ping", "nosuchcmd"))
        check(isinstance(v, list) and len(v) == 5, "COMMAND INFO with 5 names -> 5 entries", v)
        for e, (name, arity, first, last, step) in zip(v, [("get", 2, 1, 1, 1), ("set", -3, 1, 1, 1),
                                                           ("mget", -2, 1, -1, 1), ("ping", -1, 0, 0, 0)]):
            check(isinstance(e, list) and len(e) >= 6, "COMMAND INFO %s entry" % name, e)
            eq((to_str(e[0]), e[1], e[3], e[4], e[5]), (name, arity, first, last, step),
               "COMMAND INFO %s: name, arity, first, last, step" % name)
            check(isinstance(e[2], list), "COMMAND INFO %s flags must be an array" % name, e)
        eq(v[4], None, "COMMAND INFO of an unknown command is a null")
        d = parse(c.cmd("COMMAND", "DOCS", "get"))
        dm = kv_pairs(d)
        check("get" in dm, "COMMAND DOCS get must have a 'get' entry", d)
        gm = kv_pairs(dm["get"])
        for k in ("summary", "since", "group"):
            check(k in gm, "COMMAND DOCS get lacks %r" % k, gm)
        eq(to_str(gm["group"]), "string", "COMMAND DOCS get group")
        alld = parse(c.cmd("COMMAND", "DOCS"))
        check(len(kv_pairs(alld)) >= 40, "COMMAND DOCS without args must document every command")
        eq(parse(c.cmd("COMMAND", "DOCS", "nosuchcmd")), [], "COMMAND DOCS of unknown command")
        r = parse(c.cmd("COMMAND", "NOSUCHSUB"))
        check(is_err(r), "COMMAND NOSUCHSUB must be an error", r)


@T.case
def config_get_for_tools():
    fd = fd_shared()
    with fd.conn() as c:
        for name in ("save", "appendonly"):
            v = parse(c.cmd("CONFIG", "GET", name))
            check(isinstance(v, list) and len(v) == 2 and to_str(v[0]) == name,
                  "CONFIG GET %s must answer [name, value] (redis-benchmark asks)" % name, v)
        v = parse(c.cmd("CONFIG", "GET", "appendonly"))
        check(to_str(v[1]) in ("yes", "no"), "appendonly is yes/no", v)
        eq(kv_pairs(parse(c.cmd("CONFIG", "GET", "port"))), {"port": str(fd.port).encode()},
           "CONFIG GET port")
        m = kv_pairs(parse(c.cmd("CONFIG", "GET", "maxclients")))
        check(re.fullmatch(rb"\d+", m.get("maxclients", b"")), "CONFIG GET maxclients", m)
        m = kv_pairs(parse(c.cmd("CONFIG", "GET", "max*")))
        check("maxclients" in m, "CONFIG GET max* must include maxclients", m)
        check(all(k.startswith("max") for k in m), "CONFIG GET max* returned other names", m)
        m = kv_pairs(parse(c.cmd("CONFIG", "GET", "*")))
        for k in ("port", "timeout", "maxclients", "requirepass", "proto-max-bulk-len",
                  "client-query-buffer-limit", "dir"):
            check(k in m, "CONFIG GET * lacks %r" % k, sorted(m))
        eq(parse(c.cmd("CONFIG", "GET", "nosuchdirective")), [], "CONFIG GET of an unknown name")
        m = kv_pairs(parse(c.cmd("CONFIG", "GET", "port", "timeout")))
        eq(sorted(m), ["port", "timeout"], "CONFIG GET with several names")
        r = parse(c.cmd("CONFIG", "GET"))
        check(is_err(r), "CONFIG GET without a name must be an error", r)


@T.case
def config_set_then_get():
    fd = start_frontdoor()
    with fd.conn() as c:
        eq(c.cmd("CONFIG", "SET", "timeout", "123"), b"+OK\r\n", "CONFIG SET timeout")
        eq(kv_pairs(parse(c.cmd("CONFIG", "GET", "timeout"))), {"timeout": b"123"},
           "CONFIG GET after SET")
        eq(c.cmd("CONFIG", "SET", "maxclients", "77"), b"+OK\r\n", "CONFIG SET maxclients")
        eq(kv_pairs(parse(c.cmd("CONFIG", "GET", "maxclients"))), {"maxclients": b"77"},
           "CONFIG GET maxclients after SET")
        r = parse(c.cmd("CONFIG", "SET", "timeout", "abc"))
        check(is_err(r) and "timeout" in r, "CONFIG SET timeout abc must be an error naming it", r)
        r = parse(c.cmd("CONFIG", "SET", "maxclients", "-5"))
        check(is_err(r) and "maxclients" in r, "CONFIG SET maxclients -5 must be an error", r)
        eq(kv_pairs(parse(c.cmd("CONFIG", "GET", "timeout"))), {"timeout": b"123"},
           "a failed CONFIG SET must not change the value")
        r = parse(c.cmd("CONFIG", "SET", "nosuchdirective", "1"))
        check(is_err(r) and "nosuchdirective" in r, "CONFIG SET of an unknown name", r)
        r = parse(c.cmd("CONFIG", "SET", "timeout"))
        check(is_err(r), "CONFIG SET without value", r)
        r = parse(c.cmd("CONFIG", "NOSUCHSUB"))
        check(is_err(r), "CONFIG NOSUCHSUB", r)
        # a CONFIG SET takes effect: maxclients
        eq(c.cmd("CONFIG", "SET", "maxclients", "2"), b"+OK\r\n", "CONFIG SET maxclients 2")
        with fd.conn() as c2:
            eq(c2.cmd("PING"), b"+PONG\r\n", "second client under maxclients 2")
            c3 = Conn(fd.port)
            data, closed = c3.read_all_until_close(2.0)
            eq((data, closed), (b"-ERR max number of clients reached\r\n", True),
               "third client after CONFIG SET maxclients 2")
        eq(c.cmd("CONFIG", "SET", "maxclients", "100"), b"+OK\r\n", "CONFIG SET maxclients 100")
        # and timeout
        eq(c.cmd("CONFIG", "SET", "timeout", "1"), b"+OK\r\n", "CONFIG SET timeout 1")
        idle = fd.conn()
        check(idle.wait_closed(4.0), "an idle client is closed after CONFIG SET timeout 1")


@T.case
def info_sections_and_counters():
    fd = start_frontdoor()
    others = [fd.conn() for _ in range(2)]
    try:
        with fd.conn() as c:
            text = parse(c.cmd("INFO"))
            check(isinstance(text, bytes), "INFO is a bulk string", text)
            secs = info_sections(text)
            for s in ("Server", "Clients", "Stats", "Keyspace"):
                check(s in secs, "INFO lacks section %r" % s, secs)
            f = info_fields(text)
            eq(f.get("tcp_port"), str(fd.port), "INFO tcp_port")
            eq(f.get("process_id"), str(fd.pid), "INFO process_id")
            check("uptime_in_seconds" in f, "INFO uptime_in_seconds")
            eq(f.get("connected_clients"), "3", "INFO connected_clients with 3 connections")
            check(int(f.get("total_connections_received", "0")) >= 3,
                  "INFO total_connections_received", f.get("total_connections_received"))
            check(not any(k.startswith("db0") for k in f), "empty keyspace shows no db0 line", f)
            srv = info_fields(parse(c.cmd("INFO", "server")))
            check("tcp_port" in srv and "connected_clients" not in srv,
                  "INFO server shows only the server section", sorted(srv))
            c.cmd("SET", "a", "1")
            c.cmd("SET", "b", "2", "EX", "1000")
            c.cmd("SET", "c", "3", "PX", "1000000")
            for _ in range(5):
                c.cmd("GET", "a")
            c.cmd("GET")
            ks = parse(c.cmd("INFO", "keyspace"))
            check(re.search(rb"(^|\r\n)db0:keys=3,expires=2,", ks),
                  "INFO keyspace db0:keys=3,expires=2,...", ks)
            cs = to_str(parse(c.cmd("INFO", "commandstats")))
            check(re.search(r"(^|\r\n)cmdstat_get:calls=5,usec=\d+,usec_per_call=[\d.]+", cs),
                  "INFO commandstats cmdstat_get:calls=5,... (the arity error is not a call)", cs)
            check(re.search(r"(^|\r\n)cmdstat_set:calls=3,", cs), "cmdstat_set:calls=3", cs)
            st1 = int(info_fields(parse(c.cmd("INFO", "stats")))["total_commands_processed"])
            c.cmd("PING")
            c.cmd("PING")
            st2 = int(info_fields(parse(c.cmd("INFO", "stats")))["total_commands_processed"])
            eq(st2 - st1, 3, "total_commands_processed counts each command")
            allinfo = info_sections(parse(c.cmd("INFO", "all")))
            check("Commandstats" in allinfo, "INFO all includes Commandstats", allinfo)
    finally:
        for o in others:
            o.close()


@T.case
def client_commands():
    fd = fd_shared()
    with fd.conn() as c, fd.conn() as c2:
        eq(c.cmd("CLIENT", "GETNAME"), b"$-1\r\n", "CLIENT GETNAME without name")
        eq(c.cmd("CLIENT", "SETNAME", "tester"), b"+OK\r\n", "CLIENT SETNAME")
        eq(c.cmd("CLIENT", "GETNAME"), b"$6\r\ntester\r\n", "CLIENT GETNAME")
        r = c.cmd("CLIENT", "SETNAME", "a b")
        eq(r, b"-ERR Client names cannot contain spaces, newlines or special characters.\r\n",
           "CLIENT SETNAME with a space")
        cid = parse(c.cmd("CLIENT", "ID"))
        cid2 = parse(c2.cmd("CLIENT", "ID"))
        check(isinstance(cid, int) and isinstance(cid2, int) and cid != cid2,
              "CLIENT ID: distinct integers", cid, cid2)
        info = to_str(parse(c.cmd("CLIENT", "INFO")))
        check(info.endswith("\n") and info.count("\n") == 1, "CLIENT INFO: one line", info)
        fields = dict(kv.split("=", 1) for kv in info.split() if "=" in kv)
        eq(fields.get("id"), str(cid), "CLIENT INFO id")
        eq(fields.get("name"), "tester", "CLIENT INFO name")
        eq(fields.get("addr"), "127.0.0.1:%d" % c.sock.getsockname()[1], "CLIENT INFO addr")
        lst = to_str(parse(c.cmd("CLIENT", "LIST")))
        ids = re.findall(r"(?:^|\n)id=(\d+) ", lst)
        check(str(cid) in ids and str(cid2) in ids, "CLIENT LIST shows both connections", lst)
        check(re.search(r"id=%d .*name=tester" % cid, lst), "CLIENT LIST shows the name", lst)
        c.cmd("CLIENT", "SETNAME", "")
        eq(c.cmd("CLIENT", "GETNAME"), b"$-1\r\n", "CLIENT SETNAME '' clears the name")
        r = parse(c.cmd("CLIENT", "NOSUCHSUB"))
        check(is_err(r), "CLIENT NOSUCHSUB", r)


# ------------------------------------------------------------ promises of the README / config table

def _diff_each(fd, cmds):
    """The same commands to redis-server and frontdoor, byte for byte."""
    ref = start_redis()
    d = Diff(ref.conn(), fd.conn())
    for c in cmds:
        d.cmd(*c)
    d.finish()


@T.case
def client_kill_forms():
    fd = fd_shared()
    with fd.conn() as c, fd.conn() as v1, fd.conn() as v2, fd.conn() as v3:
        id1 = parse(v1.cmd("CLIENT", "ID"))
        id2 = parse(v2.cmd("CLIENT", "ID"))
        addr3 = "127.0.0.1:%d" % v3.sock.getsockname()[1]
        eq(c.cmd("CLIENT", "KILL", "ID", str(id1)), b":1\r\n", "CLIENT KILL ID <id>")
        check(v1.wait_closed(5), "the client killed by ID is disconnected")
        eq(c.cmd("CLIENT", "KILL", "ID", str(id1)), b":0\r\n", "CLIENT KILL ID of a gone client")
        eq(c.cmd("CLIENT", "KILL", "ADDR", "127.0.0.1:%d" % v2.sock.getsockname()[1]), b":1\r\n",
           "CLIENT KILL ADDR ip:port")
        check(v2.wait_closed(5), "the client killed by ADDR is disconnected")
        eq(c.cmd("CLIENT", "KILL", addr3), b"+OK\r\n", "CLIENT KILL ip:port (old form)")
        check(v3.wait_closed(5), "the client killed by the old form is disconnected")
        eq(c.cmd("PING"), b"+PONG\r\n", "the killer is still connected")
        lst = to_str(parse(c.cmd("CLIENT", "LIST")))
        check("id=%d " % id1 not in lst and "id=%d " % id2 not in lst, "killed clients gone from CLIENT LIST", lst)
    # the texts of the error cases, as redis-server 7.0 gives them
    _diff_each(fd, [("CLIENT", "KILL", "1.2.3.4:5"), ("CLIENT", "KILL", "ID", "999999"),
                    ("CLIENT", "KILL", "ID", "x"), ("CLIENT", "KILL", "ADDR"),
                    ("CLIENT", "KILL", "FOO", "bar")])
    _diff_each(fd, [("CLIENT", "KILL", "ID", "0"), ("CLIENT", "KILL", "ID", "-3"),
                    ("CLIENT", "KILL", "TYPE", "bogus"), ("CLIENT", "KILL", "USER", "nosuchuser"),
                    ("CLIENT", "KILL", "SKIPME", "maybe"), ("CLIENT", "KILL", "ID", "999999", "SKIPME"),
                    ("CLIENT", "KILL", "TYPE", "master"), ("CLIENT", "KILL", "TYPE", "replica"),
                    ("CLIENT", "KILL", "TYPE", "slave"), ("CLIENT", "KILL", "ADDR", "1.2.3.4:5", "SKIPME", "no")])
    with fd.conn() as c, fd.conn() as v:
        vid = parse(v.cmd("CLIENT", "ID"))
        eq(c.cmd("CLIENT", "KILL", "ID", str(vid), "SKIPME", "yes"), b":1\r\n", "ID + SKIPME yes")
        check(v.wait_closed(5), "the client killed by ID + SKIPME is disconnected")
        eq(c.cmd("CLIENT", "KILL", "ID", str(parse(c.cmd("CLIENT", "ID")))), b":0\r\n",
           "the caller is skipped by default")
        eq(c.cmd("PING"), b"+PONG\r\n", "the caller is still connected")
    with fd.conn() as c, fd.conn() as v, fd.conn() as sub:
        vid = parse(v.cmd("CLIENT", "ID"))
        sub.cmd("SUBSCRIBE", "ch")
        laddr = "%s:%d" % v.sock.getpeername()[:2]
        # two filters: both must match
        eq(c.cmd("CLIENT", "KILL", "ID", str(vid), "TYPE", "pubsub"), b":0\r\n", "ID of a normal client + TYPE pubsub")
        eq(c.cmd("CLIENT", "KILL", "ID", str(vid), "USER", "default", "LADDR", "1.2.3.4:5"), b":0\r\n",
           "ID + another LADDR")
        eq(c.cmd("CLIENT", "KILL", "TYPE", "pubsub"), b":1\r\n", "TYPE pubsub kills the subscriber")
        check(sub.wait_closed(5), "the subscriber is disconnected")
        eq(c.cmd("CLIENT", "KILL", "ID", str(vid), "USER", "default", "LADDR", laddr, "TYPE", "normal"),
           b":1\r\n", "ID + USER + LADDR + TYPE normal")
        check(v.wait_closed(5), "the client killed by four filters is disconnected")
    own = start_frontdoor()     # LADDR kills every client of the listener: not the shared server's
    with own.conn() as c, own.conn() as v:
        laddr = "%s:%d" % c.sock.getpeername()[:2]
        eq(v.cmd("PING"), b"+PONG\r\n", "the other client accepted")   # (a connect can be in the backlog still)
        eq(c.cmd("CLIENT", "KILL", "LADDR", laddr), b":1\r\n", "LADDR kills the other client of the listener")
        check(v.wait_closed(5), "the other client is disconnected")
        eq(c.cmd("PING"), b"+PONG\r\n", "LADDR skips the caller (SKIPME yes by default)")
        c.send_many([("CLIENT", "KILL", "LADDR", laddr, "SKIPME", "no")])
        eq(c.read_n(1), [b":1\r\n"], "SKIPME no: the caller counted, and answered first")
        check(c.wait_closed(5), "SKIPME no: the caller is disconnected after the reply")


@T.case
def config_resetstat_clears_counters():
    fd = start_frontdoor()
    with fd.conn() as c:
        for _ in range(5):
            c.cmd("SET", "a", "1")
            c.cmd("GET", "a")
        cs = to_str(parse(c.cmd("INFO", "commandstats")))
        check("cmdstat_get:calls=5," in cs, "commandstats before", cs)
        eq(c.cmd("CONFIG", "RESETSTAT"), b"+OK\r\n")
        cs = to_str(parse(c.cmd("INFO", "commandstats")))
        check("cmdstat_get:" not in cs and "cmdstat_set:" not in cs, "commandstats cleared", cs)
        st = info_fields(parse(c.cmd("INFO", "stats")))
        check(int(st["total_commands_processed"]) <= 2, "total_commands_processed reset", st)
        eq(st["total_connections_received"], "0", "total_connections_received reset (as Redis)")
        c.cmd("GET", "a")
        cs = to_str(parse(c.cmd("INFO", "commandstats")))
        check("cmdstat_get:calls=1," in cs, "counting again from zero", cs)
        eq(c.cmd("GET", "a"), b"$1\r\n1\r\n", "data untouched")


@T.case
def command_list_is_the_table():
    fd = fd_shared()
    with fd.conn() as c:
        names = [x.decode() for x in parse(c.cmd("COMMAND", "LIST"))]
        eq(len(names), parse(c.cmd("COMMAND", "COUNT")), "COMMAND LIST has COMMAND COUNT names")
        eq(len(set(names)), len(names), "no name twice")
        full = parse(c.cmd("COMMAND"))
        eq(sorted(names), sorted(e[0].decode() for e in full), "the same names as COMMAND")
        for n in ("get", "set", "command", "hello", "lpush", "zadd", "scan"):
            check(n in names, "COMMAND LIST lacks %s" % n)
        # Redis 7.0: COMMAND LIST FILTERBY PATTERN <glob> filters by name
        got = sorted(x.decode() for x in parse(c.cmd("COMMAND", "LIST", "FILTERBY", "PATTERN", "hg*")))
        want = sorted(n for n in names if n.startswith("hg"))
        eq(got, want, "COMMAND LIST FILTERBY PATTERN hg*")
        eq(want, ["hget", "hgetall"], "the commands named hg*")
        eq(c.cmd("COMMAND", "LIST", "BOGUS"), b"-ERR syntax error\r\n", "COMMAND LIST BOGUS")
        eq(c.cmd("COMMAND", "LIST", "FILTERBY", "PATTERN"), b"-ERR syntax error\r\n", "FILTERBY without its value")
        eq(c.cmd("COMMAND", "LIST", "FILTERBY", "NAME", "get"), b"-ERR syntax error\r\n", "FILTERBY NAME")
        eq(c.cmd("COMMAND", "LIST", "FILTERBY", "PATTERN", "x", "FILTERBY", "PATTERN", "y"),
           b"-ERR syntax error\r\n", "one filter only (Redis 7.0)")
        # no modules: MODULE selects nothing; ACLCAT as COMMAND INFO's categories
        eq(c.cmd("COMMAND", "LIST", "FILTERBY", "MODULE", "x"), b"*0\r\n", "FILTERBY MODULE")
        eq(c.cmd("COMMAND", "LIST", "FILTERBY", "ACLCAT", "nosuchcategory"), b"*0\r\n", "unknown ACL category")
        cats = {to_str(e[0]): set(to_str(x) for x in e[6]) for e in full}
        for cat in ("write", "hash", "FAST"):
            got = sorted(x.decode() for x in parse(c.cmd("COMMAND", "LIST", "FILTERBY", "ACLCAT", cat)))
            want = sorted(n for n, cs in cats.items() if "@" + cat.lower() in cs)
            check(want, "some commands are @%s" % cat.lower())
            eq(got, want, "COMMAND LIST FILTERBY ACLCAT %s: COMMAND INFO's @%s commands" % (cat, cat.lower()))
        got = sorted(x.decode() for x in parse(c.cmd("COMMAND", "LIST", "FILTERBY", "PATTERN", "*SCAN")))
        eq(got, sorted(n for n in names if n.endswith("scan")), "the pattern matches any case")


@T.case
def info_memory_persistence_cpu():
    fd = start_frontdoor()
    with fd.conn() as c:
        text = parse(c.cmd("INFO"))
        secs = info_sections(text)
        for s in ("Memory", "Persistence", "CPU"):
            check(s in secs, "INFO lacks section %r" % s, secs)
        m = info_fields(parse(c.cmd("INFO", "memory")))
        eq(info_sections(parse(c.cmd("INFO", "memory"))), ["Memory"], "INFO memory: that section only")
        rss = int(m["used_memory_rss"])
        want = fd.rss_kb() * 1024
        check(abs(rss - want) <= max(4 << 20, want // 4), "used_memory_rss %d vs VmRSS %d" % (rss, want))
        used0 = int(m["used_memory"])
        # (mallinfo2 counts glibc malloc's blocks: under ASan, whose allocator
        # replaces it, used_memory is 0)
        lo = 0 if is_sanitized(fd.binary) else 1
        check(lo <= used0 < rss * 4, "used_memory plausible", m)
        p = info_fields(parse(c.cmd("INFO", "persistence")))
        eq(p.get("loading"), "0", "INFO persistence loading:0")
        check(p.get("failed_commits") == "0", "INFO persistence failed_commits:0", p)
        cpu0 = info_fields(parse(c.cmd("INFO", "cpu")))
        t0 = float(cpu0["used_cpu_user"]) + float(cpu0["used_cpu_sys"])
        # some work, then the counters must have moved like /proc's
        # (PING: served by the proxy, as fast on every backend)
        c.send_many([("PING",)] * 20000)
        c.read_n(20000, timeout=60)
        cpu1 = info_fields(parse(c.cmd("INFO", "cpu")))
        t1 = float(cpu1["used_cpu_user"]) + float(cpu1["used_cpu_sys"])
        with open("/proc/%d/stat" % fd.pid) as f:
            st = f.read().rsplit(")", 1)[1].split()
        proc_s = (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")
        check(t1 > t0, "used_cpu_* grow with work", cpu0, cpu1)
        check(abs(t1 - proc_s) <= 0.5 + 0.2 * proc_s, "used_cpu_user+sys %.2f vs /proc %.2f s" % (t1, proc_s))


@T.case
def pidfile_and_logfile():
    d = make_tempdir("fdtest-pid-")
    pidf, logf = os.path.join(d, "fd.pid"), os.path.join(d, "fd.log")
    fd = start_frontdoor(pidfile=pidf, logfile=logf)
    with open(pidf) as f:
        eq(f.read().strip(), str(fd.pid), "the pidfile holds the server's pid")
    with fd.conn() as c:
        eq(c.cmd("PING"), b"+PONG\r\n")
    with open(logf) as f:
        text = f.read()
    check("ready" in text, "the log goes to the logfile", text[-2000:])
    check("ready" not in fd.log(), "... and not to stdout/stderr", fd.log()[-2000:])
    eq(fd.stop(), 0)
    check(not os.path.exists(pidf), "the pidfile is removed at a clean exit")
    with open(logf) as f:
        check("bye" in f.read(), "the shutdown is logged to the logfile")


@T.case
def unixsocket_listener():
    d = make_tempdir("fdtest-unix-")
    path = os.path.join(d, "fd.sock")
    fd = start_frontdoor(unixsocket=path)
    u = socket.socket(socket.AF_UNIX)
    u.settimeout(5)
    u.connect(path)
    try:
        u.sendall(encode("SET", "via", "unix") + encode("GET", "via") + encode("CLIENT", "INFO"))
        data = b""
        while data.count(b"\r\n") < 5:
            chunk = u.recv(65536)
            check(chunk, "connection closed", data)
            data += chunk
        check(data.startswith(b"+OK\r\n$4\r\nunix\r\n"), "commands over the unix socket", data)
        check(b"addr=" + path.encode() in data or b"addr=/" in data or b"flags=U" in data,
              "CLIENT INFO of a unix client names the socket (flags=U / addr)", data)
    finally:
        u.close()
    with fd.conn() as c:
        eq(c.cmd("GET", "via"), b"$4\r\nunix\r\n", "the TCP listener shares the data")
    eq(fd.stop(), 0)
    check(not os.path.exists(path), "the socket file is removed at a clean exit")
    # redis.conf's unixsocketperm is octal ("unixsocketperm 700" = rwx------)
    fd = start_frontdoor(unixsocket=path, unixsocketperm="700")
    eq(stat.S_IMODE(os.stat(path).st_mode), 0o700, "unixsocketperm 700 is rwx------")
    with fd.conn() as c:
        eq(parse(c.cmd("CONFIG", "GET", "unixsocketperm")), [b"unixsocketperm", b"700"], "CONFIG GET: octal, as Redis")
    eq(fd.stop(), 0)
    # the start-up errors of redis-server 7.0 for the same lines
    for bad, why in (("800", "argument couldn't be parsed as an octal number"),
                     ("1000", "argument must be between 0 and 777 inclusive")):
        rc, out = run_frontdoor_expect_exit([("unixsocket", path), ("unixsocketperm", bad)], timeout=10)
        check(rc not in (None, 0), "unixsocketperm %s is refused at start-up (exit %s)" % (bad, rc), out[-500:])
        check(why in out, "unixsocketperm %s: %r" % (bad, why), out[-500:])


def _v6():
    try:
        s = socket.socket(socket.AF_INET6)
        s.bind(("::1", 0))
        s.close()
        return True
    except OSError:
        return False


@T.case
def several_bind_addresses_and_ipv6():
    if not _v6():
        skip("no IPv6 loopback (::1) on this machine")
    fd = start_frontdoor(bind="127.0.0.1 ::1")
    with Conn(fd.port, host="::1") as c6, Conn(fd.port) as c4:
        eq(c6.cmd("SET", "v6", "yes"), b"+OK\r\n", "a command over ::1")
        eq(c4.cmd("GET", "v6"), b"$3\r\nyes\r\n", "the same data over 127.0.0.1")
        info = to_str(parse(c6.cmd("CLIENT", "INFO")))
        check("addr=[::1]:" in info or "addr=::1:" in info, "CLIENT INFO of an IPv6 client", info)
    # the redis backend at a [v6]:port address
    r = start_redis(bind="127.0.0.1 ::1")
    fd2 = start_frontdoor(backend="redis", redis_address="[::1]:%d" % r.port)
    with fd2.conn() as c:
        eq(c.cmd("SET", "through", "v6"), b"+OK\r\n", "forwarded to [::1]:port")
    with Conn(r.port) as rc:
        eq(rc.cmd("GET", "through"), b"$2\r\nv6\r\n", "the write reached the redis-server")
        lst = to_str(parse(rc.cmd("CLIENT", "LIST")))
        check("addr=[::1]:" in lst, "frontdoor's backend connection comes over ::1", lst)


@T.case
def time_and_dbsize():
    fd = start_frontdoor()
    with fd.conn() as c:
        v = parse(c.cmd("TIME"))
        check(isinstance(v, list) and len(v) == 2 and all(isinstance(x, bytes) for x in v),
              "TIME: two bulk strings", v)
        secs, usecs = int(v[0]), int(v[1])
        check(abs(secs - time.time()) < 5, "TIME seconds near now", v)
        check(0 <= usecs < 1000000, "TIME microseconds in range", v)
        ls = parse(c.cmd("LASTSAVE"))
        check(isinstance(ls, int) and 0 < ls <= time.time() + 5, "LASTSAVE: a unix time", ls)
        eq(c.cmd("DBSIZE"), b":0\r\n", "DBSIZE empty")
        c.send_many([("SET", "k%d" % i, "v") for i in range(250)])
        c.read_n(250)
        eq(c.cmd("DBSIZE"), b":250\r\n", "DBSIZE after 250 SETs")
        c.cmd("DEL", "k0", "k1")
        eq(c.cmd("DBSIZE"), b":248\r\n", "DBSIZE after DEL")


# ------------------------------------------------------------ connection limits

@T.case
def idle_timeout_closes():
    fd = start_frontdoor(timeout=1)
    busy = fd.conn()
    idle = fd.conn()
    t0 = time.monotonic()
    check(idle.is_open(0.5), "idle connection closed before its timeout")
    # the busy one keeps talking every 0.3 s
    closed_at = None
    while time.monotonic() - t0 < 4.0:
        eq(busy.cmd("PING"), b"+PONG\r\n", "a busy connection must not time out")
        if closed_at is None and not idle.is_open(0.3):
            closed_at = time.monotonic() - t0
    check(closed_at is not None, "idle connection not closed within 4 s with --timeout 1")
    check(0.9 <= closed_at <= 3.5, "idle connection closed after %.2fs (want ~1-2s)" % closed_at)
    busy.close()


@T.case
def maxclients_limit():
    fd = start_frontdoor(maxclients=2)
    # the readiness probe's connection may still hold a slot for a moment
    deadline = time.monotonic() + 5
    while True:
        a, b = fd.conn(), fd.conn()
        try:
            ra, rb = a.cmd("PING"), b.cmd("PING")
        except (ConnClosed, OSError) as e:
            ra, rb = repr(e), None
        if (ra, rb) == (b"+PONG\r\n", b"+PONG\r\n") or time.monotonic() > deadline:
            break
        a.close()
        b.close()
        time.sleep(0.2)
    eq(ra, b"+PONG\r\n", "client 1")
    eq(rb, b"+PONG\r\n", "client 2")
    c = Conn(fd.port)
    data, closed = c.read_all_until_close(2.0)
    eq(data, b"-ERR max number of clients reached\r\n", "third client")
    check(closed, "third client must be disconnected")
    a.close()
    time.sleep(0.3)
    with fd.conn() as d:
        eq(d.cmd("PING"), b"+PONG\r\n", "a slot freed by a disconnect can be used again")
    b.close()


@T.case
def query_buffer_limit():
    fd = start_frontdoor(client_query_buffer_limit=1048576)
    rss0 = fd.rss_kb()
    c = fd.conn()
    c.send_raw(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2097152\r\n")
    try:
        for _ in range(32):
            c.send_raw(b"x" * 65536)
    except OSError:
        pass
    data, closed = c.read_all_until_close(5.0)
    check(closed, "an unfinished 2 MB bulk over a 1 MB query buffer limit must close the connection")
    with fd.conn() as d:
        eq(d.cmd("PING"), b"+PONG\r\n", "server alive")
        eq(d.cmd("EXISTS", "k"), b":0\r\n", "the oversized command was not run")
    check(fd.rss_kb() - rss0 < 64 * 1024, "RSS bounded after query buffer overflow")


@T.case
def output_buffer_limit():
    fd = start_frontdoor(client_output_buffer_limit=4194304)
    with fd.conn() as c:
        eq(c.cmd("SET", "big", "x" * 1048576), b"+OK\r\n", "SET 1MB")
    rss0 = fd.rss_kb()
    c = fd.conn()
    c.send_many([("GET", "big")] * 300)      # 300 MB of replies, never read
    peak = rss0
    t0 = time.monotonic()
    while time.monotonic() - t0 < 3.0:
        peak = max(peak, fd.rss_kb())
        time.sleep(0.05)
    print("      RSS %d kB -> peak %d kB with a non-reading client (limit 4 MB, 300 MB asked)"
          % (rss0, peak))
    check(peak - rss0 < 100 * 1024,
          "RSS grew by %d kB (peak within 3 s): output buffer not bounded by the 4 MB limit\n"
          "  frontdoor log: %s" % (peak - rss0, fd.log()[-600:]))
    n, closed = 0, False
    c.sock.settimeout(5.0)
    while n < (64 << 20):
        try:
            chunk = c.sock.recv(1 << 20)
        except socket.timeout:
            break
        except OSError:
            closed = True
            break
        if not chunk:
            closed = True
            break
        n += len(chunk)
    c.close()
    check(closed and n < (64 << 20),
          "the client over its output buffer limit must be disconnected (read %d bytes, closed=%s)"
          % (n, closed))
    with fd.conn() as d:
        eq(d.cmd("STRLEN", "big"), b":1048576\r\n", "server alive and data intact")


@T.case
def concurrent_clients_are_atomic():
    """8 connections pipelining INCRs on one counter and SETs on their own
    keys at the same time: no increment and no write may be lost."""
    import threading
    fd = start_frontdoor()
    nconn, per = 8, 500
    errors = []

    def worker(i):
        try:
            with fd.conn(timeout=30) as c:
                cmds = []
                for j in range(per):
                    cmds.append(("INCR", "shared"))
                    cmds.append(("SET", "own:%d:%d" % (i, j), str(j)))
                    cmds.append(("APPEND", "log", "x"))
                c.send_many(cmds)
                reps = c.read_n(len(cmds), timeout=30)
                bad = [r for r in reps if r.startswith(b"-")]
                if bad:
                    errors.append("conn %d: %d error replies, e.g. %r" % (i, len(bad), bad[0]))
        except Exception as e:
            errors.append("conn %d: %r" % (i, e))

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(nconn)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(40)
    check(not errors, "concurrent clients failed", errors)
    with fd.conn() as c:
        eq(c.cmd("GET", "shared"), b"$4\r\n%d\r\n" % (nconn * per), "INCR total")
        eq(c.cmd("STRLEN", "log"), b":%d\r\n" % (nconn * per), "APPEND total")
        eq(c.cmd("DBSIZE"), b":%d\r\n" % (nconn * per + 2), "DBSIZE")
        vals = parse(c.cmd("MGET", *["own:%d:%d" % (i, per - 1) for i in range(nconn)]))
        eq(vals, [str(per - 1).encode()] * nconn, "last SET of each connection")


@T.case
def many_connections_accounted():
    fd = start_frontdoor()
    n = 400
    conns = []
    try:
        for i in range(n):
            c = fd.conn()
            c.send_raw(encode("SET", "conn:%d" % i, str(i)) + encode("PING"))
            conns.append(c)
        for i, c in enumerate(conns):
            eq(c.read_n(2), [b"+OK\r\n", b"+PONG\r\n"], "connection %d" % i)
        with fd.conn() as c:
            f = info_fields(parse(c.cmd("INFO", "clients")))
            eq(f.get("connected_clients"), str(n + 1), "connected_clients with %d open" % (n + 1))
            eq(c.cmd("DBSIZE"), b":%d\r\n" % n, "one key per connection")
            for x in conns:
                x.close()
            conns = []
            wait_until(lambda: info_fields(parse(c.cmd("INFO", "clients"))).get("connected_clients")
                       == "1", timeout=5, what="connected_clients back to 1 after closing")
    finally:
        for x in conns:
            x.close()


@T.case
def keys_expire_in_real_time():
    fd = start_frontdoor()
    with fd.conn() as c:
        c.send_raw(encode("MSET", *[x for i in range(50) for x in ("bulk:%d" % i, "v")]) +
                   b"".join(encode("PEXPIRE", "bulk:%d" % i, "200") for i in range(50)))
        c.read_n(51)
        c.cmd("SET", "stay", "v", "EX", "100")
        t0 = time.monotonic()
        c.send_raw(encode("SET", "px", "v", "PX", "500") + encode("SET", "ex", "v", "EX", "1") +
                   encode("SET", "exp", "v") + encode("PEXPIRE", "exp", "500") +
                   encode("SET", "getex", "v") + encode("GETEX", "getex", "PX", "500") +
                   encode("GET", "px"))
        reps = c.read_n(7)
        if time.monotonic() - t0 < 0.4:
            eq(reps[-1], b"$1\r\nv\r\n", "GET before expiry")
        time.sleep(1.3)
        eq(c.cmd("GET", "px"), b"$-1\r\n", "PX 500 expired after 1.3 s")
        eq(c.cmd("EXISTS", "ex", "exp", "getex"), b":0\r\n", "EX 1 / PEXPIRE / GETEX PX expired")
        eq(c.cmd("TTL", "ex"), b":-2\r\n", "TTL of an expired key")
        ttl = parse(c.cmd("TTL", "stay"))
        check(ttl in (98, 99), "TTL counts down (EX 100 after 1.3 s)", ttl)
        eq(sorted(parse(c.cmd("KEYS", "*"))), [b"stay"], "KEYS does not show expired keys")
        eq(c.cmd("MGET", "bulk:0", "bulk:49"), b"*2\r\n$-1\r\n$-1\r\n", "expired keys read as nil")
        # keys that are never read again are reclaimed too: DBSIZE gets to 1
        wait_until(lambda: c.cmd("DBSIZE") == b":1\r\n", timeout=10,
                   what="DBSIZE to drop to 1 as expired keys are reclaimed")


@T.case
def expiry_follows_the_latest_write():
    """A TTL that was replaced, removed or moved must not fire later (stale
    expiry-index entries), and one that was kept must."""
    fd = start_frontdoor()
    P = ("PX", "300")
    steps = [
        ("SET", "flushed", "1") + P, ("FLUSHDB",), ("SET", "flushed", "again"),
        ("SET", "overwritten", "old") + P, ("SET", "overwritten", "new"),
        ("SET", "deleted", "old") + P, ("DEL", "deleted"), ("SET", "deleted", "new"),
        ("SET", "persisted", "v") + P, ("PERSIST", "persisted"),
        ("SET", "getexp", "v") + P, ("GETEX", "getexp", "PERSIST"),
        ("SET", "extended", "v") + P, ("PEXPIRE", "extended", "100000"),
        ("SET", "gt", "v") + P, ("PEXPIRE", "gt", "100000", "GT"),
        ("SET", "keepttl", "v") + P, ("SET", "keepttl", "v2", "KEEPTTL"),
        ("SET", "src", "v") + P, ("RENAME", "src", "dst"), ("SET", "src", "fresh"),
        ("SET", "over2", "v") + P, ("SET", "nottl", "v"), ("RENAME", "nottl", "over2"),
        ("SET", "longa", "v", "PX", "100000"), ("SET", "shortb", "v") + P, ("RENAME", "longa", "shortb"),
        ("SET", "getset", "v") + P, ("GETSET", "getset", "v2"),
        ("SET", "incr", "1") + P, ("INCR", "incr"),
        ("SET", "append", "1") + P, ("APPEND", "append", "x"),
        ("SET", "setrange", "1") + P, ("SETRANGE", "setrange", "0", "x"),
        ("SET", "msetk", "1") + P, ("MSET", "msetk", "2"),
        ("SET", "setex", "1") + P, ("SETEX", "setex", "100", "v"),
        ("SET", "setnx", "1") + P, ("SETNX", "setnx", "2"),
    ]
    present = ["flushed", "overwritten", "deleted", "persisted", "getexp", "extended", "gt",
               "src", "over2", "shortb", "getset", "msetk", "setex"]
    gone = ["keepttl", "dst", "longa", "incr", "append", "setrange", "setnx", "nottl"]
    with fd.conn() as c:
        c.send_many(steps)
        reps = c.read_n(len(steps))
        errs = [(st, r) for st, r in zip(steps, reps) if r.startswith(b"-")]
        eq(errs, [], "error replies while setting up")
        time.sleep(1.2)
        got = {k: parse(c.cmd("EXISTS", k)) for k in present + gone}
        wrong = {k: v for k, v in got.items() if v != (1 if k in present else 0)}
        eq(wrong, {}, "keys whose existence after 1.2 s is wrong (EXISTS reply)")
        eq(c.cmd("GET", "overwritten"), b"$3\r\nnew\r\n", "overwritten value")
        eq(c.cmd("TTL", "overwritten"), b":-1\r\n", "no TTL after a plain SET")
        eq(c.cmd("GET", "src"), b"$5\r\nfresh\r\n", "RENAME source re-created without TTL")
        eq(c.cmd("TTL", "over2"), b":-1\r\n", "RENAME onto a key with a TTL drops that TTL")
        wait_until(lambda: c.cmd("DBSIZE") == b":%d\r\n" % len(present), timeout=10,
                   what="DBSIZE == %d once the expired keys are reclaimed" % len(present))


@T.case
def keys_expire_while_stopped():
    fd = start_frontdoor()
    with fd.conn() as c:
        c.cmd("SET", "short", "v", "PX", "500")
        c.cmd("SET", "long", "v", "EX", "1000")
    eq(fd.stop(signal.SIGTERM), 0, "exit status after SIGTERM")
    time.sleep(0.8)
    fd.start()
    with fd.conn() as c:
        eq(c.cmd("GET", "short"), b"$-1\r\n", "a key that expired while the server was down")
        eq(c.cmd("GET", "long"), b"$1\r\nv\r\n", "a key with a long TTL")
        wait_until(lambda: c.cmd("DBSIZE") == b":1\r\n", timeout=10, what="DBSIZE 1")


@T.case
def durability_nosync_survives_sigterm():
    fd = start_frontdoor(durability="nosync")
    with fd.conn() as c:
        c.send_many([("SET", "ns%d" % i, "v%d" % i) for i in range(2000)])
        reps = c.read_n(2000)
        eq(set(reps), {b"+OK\r\n"}, "2000 SETs")
    eq(fd.stop(signal.SIGTERM), 0, "exit status after SIGTERM")
    fd.start()
    with fd.conn() as c:
        eq(c.cmd("DBSIZE"), b":2000\r\n", "keys after a clean restart with --durability nosync")
        eq(c.cmd("GET", "ns1999"), b"$5\r\nv1999\r\n", "last key")


@T.case
def sigterm_with_busy_clients():
    """SIGTERM while clients are pipelining writes: the server exits 0 in
    bounded time, and every write it acknowledged is there after a restart."""
    import threading
    fd = start_frontdoor()
    acked = {}
    errors = []
    stop = threading.Event()

    def writer(i):
        n = 0
        try:
            with fd.conn(timeout=5) as c:
                while not stop.is_set():
                    cmds = [("SET", "w%d:%d" % (i, n + j), "v") for j in range(50)]
                    c.send_many(cmds)
                    for j in range(50):
                        r = c.read()
                        if r != b"+OK\r\n":
                            errors.append("writer %d SET #%d -> %r" % (i, n, r))
                            return
                        n += 1
                        acked[i] = n
        except (ConnClosed, ReplyTimeout, OSError):
            pass                # the server is shutting down: what was read counts
        except Exception as e:
            errors.append("writer %d: %r" % (i, e))
        finally:
            acked[i] = n

    ts = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    # SIGTERM once every writer is under way (a loaded CI may take a while
    # to connect them: "no acknowledgement" must not be scheduling noise)
    wait_until(lambda: all(acked.get(i, 0) > 0 for i in range(4)) or errors, timeout=20,
               what="every writer's first acknowledgement")
    time.sleep(0.5)
    rc = fd.stop(signal.SIGTERM, timeout=10)
    stop.set()
    for t in ts:
        t.join(10)
    eq(rc, 0, "exit status after SIGTERM under load")
    eq(errors, [], "writers saw only +OK or the connection closing")
    fd.start()
    with fd.conn() as c:
        for i in range(4):
            n = acked.get(i, 0)
            check(n > 0, "writer %d got no acknowledgement before SIGTERM" % i)
            vals = parse(c.cmd("MGET", *["w%d:%d" % (i, j) for j in range(n)]))
            lost = [j for j in range(n) if vals[j] != b"v"]
            eq(lost[:10], [], "writer %d: acknowledged writes lost after SIGTERM (of %d)" % (i, n))


# ------------------------------------------------------------ startup errors

def _startup_fails(directives, names, line=None, what=""):
    rc, out = run_frontdoor_expect_exit(directives)
    check(rc is not None, "%s: frontdoor kept running (should exit with an error)\n%s" % (what, out[-2000:]))
    check(rc != 0, "%s: exit status 0 on a bad configuration\n%s" % (what, out[-2000:]))
    for n in names:
        check(n in out, "%s: the message must name %r" % (what, n), out[-2000:])
    if line is not None:
        check(re.search(r"(line\s*%d\b|:%d\b)" % (line, line), out),
              "%s: the message must give line %d" % (what, line), out[-2000:])


@T.case
def startup_errors_command_line():
    _startup_fails([("nosuchdirective", "1")], ["nosuchdirective"], what="unknown directive")
    _startup_fails([("maxclients", "abc")], ["maxclients"], what="bad maxclients")
    _startup_fails([("timeout", "-3")], ["timeout"], what="negative timeout")
    _startup_fails([("proto-max-bulk-len", "lots")], ["proto-max-bulk-len"], what="bad size")


@T.case
def startup_errors_config_file():
    d = make_tempdir("fdtest-conf-")
    p1 = os.path.join(d, "unknown.conf")
    with open(p1, "w") as f:
        f.write("# a comment\n\nnosuchdirective 1\ntimeout 5\n")
    _startup_fails([("config", p1)], ["nosuchdirective"], line=3, what="unknown directive in file")
    p2 = os.path.join(d, "badvalue.conf")
    with open(p2, "w") as f:
        f.write("timeout 5\nmaxclients notanumber\n")
    _startup_fails([("config", p2)], ["maxclients"], line=2, what="bad value in file")
    p3 = os.path.join(d, "missing.conf")
    rc, out = run_frontdoor_expect_exit([("config", p3)])
    check(rc not in (None, 0), "a missing config file must make frontdoor exit non-zero", rc, out[-1000:])


@T.case
def version_and_help_exit_zero():
    from fdtest import frontdoor_bin
    rc, out = run([frontdoor_bin(), "--version"], timeout=10)
    check(rc == 0 and re.search(r"\d+\.\d+\.\d+", out), "--version: exit 0 and a version", rc, out)
    if frontdoor_is_redis():
        return
    rc, out = run([frontdoor_bin(), "--help"], timeout=10)
    check(rc == 0 and "Usage" in out, "--help: exit 0 and a usage text", rc, out)


@T.case
def second_server_on_same_dir_refused():
    if frontdoor_is_redis():
        skip("redis-server does not lock its --dir")
    fd = start_frontdoor()
    rc, out = run_frontdoor_expect_exit([], datadir=fd.dir, timeout=10)
    check(rc is not None, "a second frontdoor on the same --dir kept running\n" + out[-1500:])
    check(rc != 0, "a second frontdoor on the same --dir exited 0\n" + out[-1500:])
    with fd.conn() as c:
        eq(c.cmd("SET", "still", "works"), b"+OK\r\n", "the first server is unaffected")


@T.case
def config_file_is_applied():
    d = make_tempdir("fdtest-conf-")
    p = os.path.join(d, "good.conf")
    with open(p, "w") as f:
        f.write("# frontdoor test config\nMaxClients 33\ntimeout 7\n  \nrequirepass \"se cret\"\n"
                "client-query-buffer-limit 2mb\nproto-max-bulk-len 64mb\n")
    fd = start_frontdoor(config=p, timeout=9)
    with Conn(fd.port) as c:
        eq(c.cmd("AUTH", "se cret"), b"+OK\r\n", "requirepass with a quoted value from the file")
        eq(kv_pairs(parse(c.cmd("CONFIG", "GET", "maxclients"))), {"maxclients": b"33"},
           "maxclients from the file")
        eq(kv_pairs(parse(c.cmd("CONFIG", "GET", "timeout"))), {"timeout": b"9"},
           "the command line overrides the file")
        eq(kv_pairs(parse(c.cmd("CONFIG", "GET", "client-query-buffer-limit"))),
           {"client-query-buffer-limit": b"2097152"}, "memory units (2mb) in the file")
        eq(kv_pairs(parse(c.cmd("CONFIG", "GET", "proto-max-bulk-len"))),
           {"proto-max-bulk-len": b"67108864"}, "memory units (64mb) in the file")


# ------------------------------------------------------------ persistence

@T.case
def data_survives_restart():
    fd = start_frontdoor()
    with fd.conn() as c:
        c.cmd("SET", "plain", "value")
        c.cmd("SET", b"bin\x00\xff", b"\r\n\x00")
        c.cmd("SET", "ttl", "t", "EX", "1000")
        c.cmd("SET", "gone", "x", "PX", "200")
        c.cmd("INCRBY", "n", "41")
        c.cmd("INCR", "n")
        c.cmd("SET", "big", "B" * 300000)
        c.cmd("SET", "deleted", "x")
        c.cmd("DEL", "deleted")
    time.sleep(0.4)
    rc = fd.stop(signal.SIGTERM)
    eq(rc, 0, "exit status after SIGTERM")
    fd.start()
    with fd.conn() as c:
        eq(c.cmd("GET", "plain"), b"$5\r\nvalue\r\n", "plain key after restart")
        eq(c.cmd("GET", b"bin\x00\xff"), b"$3\r\n\r\n\x00\r\n", "binary key after restart")
        eq(c.cmd("GET", "n"), b"$2\r\n42\r\n", "counter after restart")
        eq(c.cmd("STRLEN", "big"), b":300000\r\n", "big value after restart")
        ttl = parse(c.cmd("TTL", "ttl"))
        check(isinstance(ttl, int) and 990 <= ttl <= 1000, "TTL kept across restart", ttl)
        eq(c.cmd("EXISTS", "gone", "deleted"), b":0\r\n", "expired/deleted keys stay gone")
        eq(c.cmd("DBSIZE"), b":5\r\n", "DBSIZE after restart")
    rc = fd.stop(signal.SIGINT)
    eq(rc, 0, "exit status after SIGINT")


@T.case
def durability_sync_survives_sigkill():
    fd = start_frontdoor(durability="sync")
    n = 300
    with fd.conn() as c:
        for i in range(n):
            eq(c.cmd("SET", "d%d" % i, "v%d" % i), b"+OK\r\n", "SET acknowledged")
        eq(c.cmd("INCRBY", "ctr", "7"), b":7\r\n", "INCRBY acknowledged")
        eq(c.cmd("DEL", "d0"), b":1\r\n", "DEL acknowledged")
    fd.stop(signal.SIGKILL)
    fd.start()
    with fd.conn() as c:
        vals = parse(c.cmd("MGET", *["d%d" % i for i in range(n)]))
        missing = [i for i in range(1, n) if vals[i] != ("v%d" % i).encode()]
        eq(missing, [], "acknowledged SETs lost after kill -9 (indexes)")
        eq(vals[0], None, "acknowledged DEL lost after kill -9")
        eq(c.cmd("GET", "ctr"), b"$1\r\n7\r\n", "acknowledged INCRBY after kill -9")


@T.case
def durability_sync_concurrent_writers_sigkill():
    """Several clients pipelining writes (group commit territory) when the
    server is SIGKILLed: every write whose reply a client had read is there
    after the restart."""
    import threading
    fd = start_frontdoor(durability="sync")
    nw = 4
    acked_sets = {}
    acked_ctr = {}
    errors = []
    stop = threading.Event()

    def writer(w):
        nset, last_ctr = 0, 0
        try:
            with fd.conn(timeout=5) as c:
                while not stop.is_set():
                    cmds = []
                    for j in range(40):
                        cmds.append(("SET", "cw%d:%d" % (w, nset + j), "v%d" % (nset + j)))
                        cmds.append(("INCR", "ctr%d" % w))
                    c.send_many(cmds)
                    for j in range(40):
                        r = c.read()
                        if r != b"+OK\r\n":
                            errors.append("writer %d SET #%d -> %r" % (w, nset, r))
                            return
                        nset += 1
                        acked_sets[w] = nset
                        r = parse(c.read())
                        if not isinstance(r, int) or isinstance(r, bool) or r <= last_ctr:
                            errors.append("writer %d INCR -> %r after %d" % (w, r, last_ctr))
                            return
                        last_ctr = r
                        acked_ctr[w] = last_ctr
        except (ConnClosed, ReplyTimeout, OSError):
            pass                # SIGKILLed: what was read counts
        except Exception as e:
            errors.append("writer %d: %r" % (w, e))

    ts = [threading.Thread(target=writer, args=(w,)) for w in range(nw)]
    for t in ts:
        t.start()
    wait_until(lambda: all(acked_sets.get(w, 0) > 0 for w in range(nw)) or errors, timeout=20,
               what="every writer's first acknowledgement")
    time.sleep(0.7)
    fd.stop(signal.SIGKILL)
    stop.set()
    for t in ts:
        t.join(10)
    eq(errors, [], "writers saw only +OK / increasing counters until the kill")
    fd.start()
    with fd.conn() as c:
        for w in range(nw):
            n = acked_sets.get(w, 0)
            check(n > 0, "writer %d got no acknowledgement" % w)
            vals = parse(c.cmd("MGET", *["cw%d:%d" % (w, i) for i in range(n)]))
            lost = [i for i in range(n) if vals[i] != ("v%d" % i).encode()]
            eq(lost[:10], [], "writer %d: acknowledged SETs lost after SIGKILL (of %d)" % (w, n))
            ctr = int(parse(c.cmd("GET", "ctr%d" % w)) or 0)
            check(ctr >= acked_ctr.get(w, 0),
                  "writer %d: counter %d after restart, but INCR had acknowledged %d"
                  % (w, ctr, acked_ctr.get(w, 0)))
        print("      acknowledged before SIGKILL: %s SETs" % [acked_sets.get(w, 0) for w in range(nw)])


@T.case
def lmdb_map_full_is_an_error_not_a_crash():
    if frontdoor_is_redis():
        skip("frontdoor-only directive --lmdb-map-size")
    fd = start_frontdoor(backend="lmdb", lmdb_map_size=4 * 1048576)
    with fd.conn() as c:
        eq(c.cmd("SET", "small", "1"), b"+OK\r\n", "SET in a small map")
        errs = 0
        for i in range(40):
            r = c.cmd("SET", "fill%d" % i, "F" * 262144)
            if r.startswith(b"-"):
                errs += 1
                # README: "when full, writes get -OOM" (docs/encoding.md gives the text)
                eq(r, b"-OOM command not allowed: the store is full (raise lmdb-map-size)\r\n",
                   "the map-full error")
            else:
                eq(r, b"+OK\r\n", "SET")
        check(errs > 0, "10 MB into a 4 MB LMDB map must give an error reply")
        eq(c.cmd("SET", "tiny", "x"), b"+OK\r\n", "a small write still fits")
        eq(c.cmd("DEL", *["fill%d" % i for i in range(40)]), b":%d\r\n" % (40 - errs),
           "the SETs that were acknowledged are there (and DEL makes room)")
        # LMDB reuses the pages a commit freed only from the commit after the
        # next one (the previous meta page may still point at them)
        eq(c.cmd("SET", "tiny", "y"), b"+OK\r\n", "one more commit")
        eq(c.cmd("SET", "fill-again", "F" * 262144), b"+OK\r\n", "room again after DEL")
        eq(c.cmd("GET", "small"), b"$1\r\n1\r\n", "earlier data readable after map full")
        eq(c.cmd("PING"), b"+PONG\r\n", "server alive after map full")


if __name__ == "__main__":
    T.main()
