#!/usr/bin/python3
"""Differential test of ACL (proxy/acl.c, issue 29, docs/acl.md): the same
ACL commands, AUTH with a username and commands refused with -NOPERM go to
a real redis-server 7.0 and to frontdoor, replies compared byte for byte,
in RESP2 and RESP3 (FD_DIFF_SUITES: every backend runs this file; the
enforcement is the proxy's, so it holds on every backend).

Rules are chosen whose GETUSER/LIST text Redis builds the same way from
frontdoor's table (categories, single commands one at a time): Redis
orders single-command differences by its command dict, which frontdoor does
not reproduce (docs/acl.md).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import Tests, Diff, diff_pair, shared_pair, check, ConnClosed

T = Tests(case_timeout=60)

H = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"   # sha256("")


def both(resp3):
    d = diff_pair(resp3)
    return d


def user_conn(resp3, user, pw):
    """A Diff over new connections authenticated as user on both."""
    ref, fd = shared_pair()
    d = Diff(ref.conn(), fd.conn())
    if resp3:
        d.cmd("HELLO", "3", "AUTH", user, pw, norm=lambda r: r[:2])
    else:
        d.cmd("AUTH", user, pw)
    return d


def log_norm(raw):
    """ACL LOG with each entry's age and client line (the two servers'
    clocks, addresses and buffers) blanked."""
    raw = re.sub(rb"(age-seconds\r\n)(\$\d+\r\n[^\r]*|,[^\r]*)\r\n", rb"\1#\r\n", raw)
    return re.sub(rb"(client-info\r\n)\$\d+\r\n[^\r]*\r\n", rb"\1#\r\n", raw)


def finish(d, resp3):
    if d.mismatches and os.environ.get("FD_ACL_DEBUG"):
        for what, a, b in d.mismatches:
            print(what)
            for x, y in zip(log_norm(a).split(b"\r\n"), log_norm(b).split(b"\r\n")):
                print("  " + ("  " if x == y else "!!"), x, y)
    if d.mismatches:
        raise AssertionError(("RESP3: " if resp3 else "RESP2: ") + d.report())


@T.case
def acl_commands_as_redis():
    for resp3 in (False, True):
        d = both(resp3)
        d.cmd("ACL", "WHOAMI")
        d.cmd("ACL", "USERS")
        d.cmd("ACL", "LIST")
        d.cmd("ACL", "GETUSER", "default")
        d.cmd("ACL", "GETUSER", "nosuch")
        d.cmd("ACL", "CAT")
        d.cmd("ACL", "CAT", "nosuch")
        d.cmd("ACL")
        d.cmd("ACL", "NOSUCH")
        d.cmd("ACL", "SETUSER")
        d.cmd("ACL", "GETUSER")
        d.cmd("ACL", "WHOAMI", "x")
        d.cmd("ACL", "SETUSER", "alice", "on", ">p1", ">p2", "#" + H, "~app:*", "%R~ro:*", "%W~wo:*", "&news.*",
              "+@all", "-@dangerous")
        d.cmd("ACL", "GETUSER", "alice")
        d.cmd("ACL", "SETUSER", "alice", "<p2", "!" + H)
        d.cmd("ACL", "GETUSER", "alice")
        d.cmd("ACL", "SETUSER", "bob", "on", "nopass", "-@all", "+get")
        d.cmd("ACL", "GETUSER", "bob")
        d.cmd("ACL", "SETUSER", "bob", "-get", "+config|get", "allkeys", "allchannels")
        d.cmd("ACL", "GETUSER", "bob")
        d.cmd("ACL", "SETUSER", "carol", "reset", "on", ">x", "+@read", "~*")
        d.cmd("ACL", "GETUSER", "carol")
        d.cmd("ACL", "SETUSER", "carol", "allcommands", "-@write", "+set", "skip-sanitize-payload")
        d.cmd("ACL", "GETUSER", "carol")
        d.cmd("ACL", "SETUSER", "dave", "(~x* +get)", "(", "%R~y*", "+@read", ")")
        d.cmd("ACL", "GETUSER", "dave")
        d.cmd("ACL", "SETUSER", "dave", "clearselectors", "resetpass", "nopass")
        d.cmd("ACL", "GETUSER", "dave")
        d.cmd("ACL", "USERS")
        d.cmd("ACL", "LIST")
        # errors: Redis's texts, the user unchanged
        for bad in (["foo"], ["+nosuch"], ["+@nosuch"], ["#abc"], ["<nope"], ["~*", "~a"], ["&*", "&a"],
                    ["%X~a"], ["%~a"], ["(+get"], ["on", "(+get", "~x"], ["on", "+get|a|b"]):
            d.cmd("ACL", "SETUSER", "erin", *bad)
        d.cmd("ACL", "GETUSER", "erin")
        d.cmd("ACL", "SETUSER", "sp ace")
        d.cmd("ACL", "DELUSER", "default")
        d.cmd("ACL", "DELUSER", "alice", "bob", "carol", "dave", "nosuch")
        d.cmd("ACL", "DELUSER", "alice")
        d.cmd("ACL", "USERS")
        d.cmd("ACL", "GENPASS", "0")
        d.cmd("ACL", "GENPASS", "x")
        d.cmd("ACL", "GENPASS", "5000")
        d.cmd("ACL", "GENPASS", norm=len)
        d.cmd("ACL", "GENPASS", "10", norm=len)
        finish(d, resp3)


@T.case
def noperm_as_redis():
    for resp3 in (False, True):
        a = both(resp3)
        a.cmd("ACL", "LOG", "RESET")
        a.cmd("ACL", "SETUSER", "u1", "on", ">pw", "-@all", "+get", "+set", "+mget", "+publish", "+subscribe",
              "+psubscribe", "+multi", "+exec", "+config|get", "+client|id", "+ping", "+eval",
              "+blpop", "+lmpop", "+xread", "+zunion", "+mset",
              "~k*", "%R~r*", "&ch*")
        a.cmd("SET", "r1", "v")
        d = user_conn(resp3, "u1", "pw")
        d.cmd("ACL", "WHOAMI")
        d.cmd("GET", "k1")
        d.cmd("GET", "x")
        d.cmd("SET", "k1", "v")
        d.cmd("SET", "r1", "v")                    # read-only pattern
        d.cmd("GET", "r1")
        d.cmd("MGET", "k1", "r1", "zz")
        d.cmd("DEL", "k1")                         # command refused
        d.cmd("config", "get", "timeout")
        d.cmd("CONFIG", "SET", "maxmemory-policy", "noeviction")
        d.cmd("CLIENT", "ID", norm=lambda r: r[:1])
        d.cmd("CLIENT", "INFO")
        d.cmd("PUBLISH", "ch1", "m")
        d.cmd("PUBLISH", "other", "m")
        d.cmd("BLPOP", "k9", "zz", "0.01")         # blocking: every key
        d.cmd("BLPOP", "k9", "0.01")
        d.cmd("LMPOP", "2", "k1", "zz", "LEFT")    # NUMKEYS
        d.cmd("ZUNION", "2", "k{t}1", "k{t}2")     # one slot (redis-cluster)
        d.cmd("ZUNION", "2", "k1", "zz")
        d.cmd("XREAD", "STREAMS", "k1", "zz", "0", "0")
        d.cmd("XREAD", "COUNT", "1", "STREAMS", "k1", "0")
        d.cmd("MSET", "k1", "a", "zz", "b")        # every other argument
        d.cmd("MSET", "k1", "a", "k2", "zz")
        d.cmd("EVAL", "return 1", "1", "zz")       # a script's keys
        d.cmd("EVAL", "return redis.call('get', KEYS[1])", "1", "k1")
        d.cmd("EVAL", "return redis.call('del', KEYS[1])", "1", "k1")       # redis.call: the same check
        d.cmd("EVAL", "return redis.call('get', 'zz')", "0")
        d.cmd("EVAL", "return redis.call('publish', 'zz', 'm')", "0")
        d.cmd("EVAL", "return redis.pcall('set', 'r1', 'x')", "0")
        d.cmd("EVAL", "return {redis.acl_check_cmd('get', 'k1'), redis.acl_check_cmd('del', 'k1')}", "0")
        d.cmd("MULTI")
        d.cmd("GET", "k1")
        d.cmd("DEL", "k1")
        d.cmd("EXEC")
        d.cmd("SUBSCRIBE", "other")
        d.cmd("PSUBSCRIBE", "ch*x")
        d.cmd("AUTH", "u1", "wrong")
        d.cmd("AUTH", "nosuch", "pw")
        d.cmd("ACL", "WHOAMI")
        d.cmd("AUTH", "default", "anything")
        d.cmd("ACL", "WHOAMI")
        a.cmd("ACL", "SETUSER", "u1", "off")
        e = Diff(*(s.conn() for s in shared_pair()))
        e.cmd("AUTH", "u1", "pw")                  # disabled
        e.cmd("HELLO", "2", "AUTH", "u1", "pw")
        a.cmd("ACL", "DRYRUN", "u1", "get", "k1")
        a.cmd("ACL", "DRYRUN", "u1", "get", "x")
        a.cmd("ACL", "DRYRUN", "u1", "del", "k1")
        a.cmd("ACL", "DRYRUN", "u1", "publish", "zz", "m")
        a.cmd("ACL", "DRYRUN", "nosuch", "get", "k1")
        a.cmd("ACL", "DRYRUN", "u1", "nosuch")
        a.cmd("ACL", "LOG", "100", norm=log_norm)
        a.cmd("ACL", "LOG", "2", norm=log_norm)
        a.cmd("ACL", "LOG", "x")
        a.cmd("ACL", "LOG", "RESET")
        a.cmd("ACL", "LOG")
        a.cmd("ACL", "HELP")
        a.cmd("ACL", "DELUSER", "u1")
        a.cmd("DEL", "r1")
        for x in (a, d, e):
            finish(x, resp3)


@T.case
def command_info_categories_as_redis():
    """COMMAND INFO's categories (element 7) for every command both know."""
    ref, fd = shared_pair()
    r, f = ref.conn(), fd.conn()
    names = [n.decode() for n in parse_list(f.cmd("COMMAND", "LIST"))]
    bad = []
    for n in names:
        a, b = r.cmd("COMMAND", "INFO", n), f.cmd("COMMAND", "INFO", n)
        ca, cb = categories(a), categories(b)
        if ca is None:
            continue                                 # frontdoor's own (FRONTDOOR)
        if ca != cb:
            bad.append("%s: redis %s frontdoor %s" % (n, ca, cb))
    check(not bad, "categories differ:\n  " + "\n  ".join(bad))


def parse(raw, i=0):
    """One RESP reply at raw[i:]: (value, next index); aggregates as lists."""
    j = raw.index(b"\r\n", i)
    t, line = raw[i:i + 1], raw[i + 1:j]
    if t in b"*~%":
        n = int(line) * (2 if t == b"%" else 1)
        out, k = [], j + 2
        for _ in range(max(n, 0)):
            v, k = parse(raw, k)
            out.append(v)
        return (None if n < 0 else out), k
    if t == b"$":
        n = int(line)
        return (None, j + 2) if n < 0 else (raw[j + 2:j + 2 + n], j + 4 + n)
    return line, j + 2


def parse_list(raw):
    return parse(raw)[0]


def categories(raw):
    """The categories element of a one-command COMMAND INFO reply."""
    info = parse(raw)[0][0]
    return None if info is None else info[6]


@T.case
def container_subcommands_as_redis():
    """-@dangerous refuses ACL SETUSER and CLIENT KILL/LIST but not ACL
    WHOAMI or CLIENT ID (their subcommands' own categories)."""
    for resp3 in (False, True):
        a = both(resp3)
        a.cmd("ACL", "SETUSER", "op", "on", ">pw", "~*", "&*", "+@all", "-@dangerous")
        a.cmd("ACL", "GETUSER", "op")
        a.cmd("ACL", "SETUSER", "ro", "on", ">pw", "~*", "-@all", "+@connection", "-client|setname")
        a.cmd("ACL", "GETUSER", "ro")
        d = user_conn(resp3, "op", "pw")
        d.cmd("ACL", "WHOAMI")
        d.cmd("ACL", "SETUSER", "x")
        d.cmd("ACL", "list")
        d.cmd("CLIENT", "ID", norm=lambda r: r[:1])
        d.cmd("CLIENT", "KILL", "ID", "999999")
        d.cmd("CLIENT", "list")
        d.cmd("KEYS", "*")
        d.cmd("FLUSHALL")
        e = user_conn(resp3, "ro", "pw")
        e.cmd("CLIENT", "GETNAME")
        e.cmd("CLIENT", "SETNAME", "n")
        e.cmd("ECHO", "x")
        e.cmd("GET", "x")
        a.cmd("ACL", "DELUSER", "op", "ro")
        for x in (a, d, e):
            finish(x, resp3)


@T.case
def sort_patterns_as_redis():
    """SORT's BY pattern and GET need read access to every key (Redis 7.0)."""
    for resp3 in (False, True):
        a = both(resp3)
        a.cmd("ACL", "SETUSER", "s1", "on", ">pw", "~k*", "+@all")
        a.cmd("ACL", "SETUSER", "s2", "on", ">pw", "%R~*", "+@all")
        a.cmd("RPUSH", "k1", "3", "1", "2")
        d = user_conn(resp3, "s1", "pw")
        for args in (["BY", "w_*"], ["BY", "nosort"], ["GET", "#"], ["GET", "w_*"], ["LIMIT", "0", "1", "BY", "x*"],
                     ["STORE", "k2", "BY", "x*"], ["ALPHA", "GET", "#", "BY", "x*"]):
            d.cmd("SORT", "k1", *args)
        d.cmd("SORT_RO", "k1", "GET", "#")
        d.cmd("ACL", "LOG", "1", norm=log_norm)
        e = user_conn(resp3, "s2", "pw")
        if os.environ.get("FD_BACKEND") != "redis-cluster":   # a cluster refuses BY patterns itself
            e.cmd("SORT", "k1", "BY", "w_*", "GET", "#")
        a.cmd("ACL", "DRYRUN", "s1", "sort", "k1", "by", "w_*")
        a.cmd("ACL", "DELUSER", "s1", "s2")
        a.cmd("DEL", "k1", "k2")
        for x in (a, d, e):
            finish(x, resp3)


@T.case
def exec_rechecks_acl_as_redis():
    """Redis 7.0 checks every queued command again at EXEC: rules changed
    after queueing refuse its slot with -NOPERM ACLs rules changed... (the
    command, a key, a channel), logged with context multi; the rest runs.
    A user deleted while in MULTI loses its connection. (Keys of one
    slot: redis-cluster.)"""
    for resp3 in (False, True):
        a = both(resp3)
        a.cmd("ACL", "LOG", "RESET")
        a.cmd("ACL", "SETUSER", "tx", "on", ">pw", "~k*", "&ch*", "+@all")
        d = user_conn(resp3, "tx", "pw")
        d.cmd("MULTI")
        d.cmd("SET", "k{t}1", "a")
        d.cmd("GET", "k{t}1")
        d.cmd("SET", "k{t}2", "b")
        d.cmd("PUBLISH", "ch1", "m")
        d.cmd("INCR", "k{t}3")
        d.cmd("SORT", "k{t}4", "BY", "w_*")
        d.cmd("LPUSH", "k{t}4", "1")
        a.cmd("ACL", "SETUSER", "tx", "resetkeys", "~k{t}1", "~k{t}4", "~k{t}3", "-get", "resetchannels", "&other")
        d.cmd("EXEC")
        d.cmd("GET", "k{t}1")                      # not queued: the usual refusal
        a.cmd("MGET", "k{t}1", "k{t}2", "k{t}3")   # SET k{t}2 did not run
        d.cmd("MULTI")
        d.cmd("SET", "k{t}1", "c")
        a.cmd("ACL", "SETUSER", "tx", "-set")
        d.cmd("EXEC")                              # every slot refused
        a.cmd("ACL", "LOG", "10", norm=log_norm)
        # deleted while in MULTI: Redis closes the connection
        a.cmd("ACL", "SETUSER", "tx", "+set")
        e = user_conn(resp3, "tx", "pw")
        e.cmd("MULTI")
        e.cmd("SET", "k{t}1", "d")
        a.cmd("ACL", "DELUSER", "tx")
        for name, conn in (("redis", e.ref), ("frontdoor", e.fd)):
            try:
                r = conn.cmd("EXEC")
            except ConnClosed:
                r = None
            check(r is None, "%s: EXEC of a deleted user must find its connection closed" % name, r)
        a.cmd("GET", "k{t}1")
        a.cmd("DEL", "k{t}1", "k{t}2", "k{t}3", "k{t}4")
        for x in (a, d):
            finish(x, resp3)


# Commands of each family with their keys as A, B, C (one slot with {t}):
# their keys' read/write needs are Redis 7.0's key specs (commands.def:
# KR, KW, K0, K1R, K1W; SET's GET, BITFIELD's read-only form, SORT's and
# GEORADIUS's STORE: proxy/acl.c).
KEYSPEC_CMDS = [
    "GET A", "SET A v", "SET A v GET", "INCR A", "APPEND A v", "STRLEN A", "GETDEL A", "GETEX A", "MGET A B",
    "MSET A v B v", "SETRANGE A 0 v", "GETRANGE A 0 1", "LCS A B",
    "SETBIT A 0 1", "GETBIT A 0", "BITCOUNT A", "BITOP AND A B C", "BITFIELD A GET u8 0",
    "BITFIELD A OVERFLOW SAT GET u8 0", "BITFIELD A INCRBY u8 0 1", "BITFIELD_RO A GET u8 0",
    "PFADD A x", "PFCOUNT A B", "PFMERGE A B C",
    "DEL A B", "UNLINK A", "EXISTS A B", "TYPE A", "EXPIRE A 100", "TTL A", "PERSIST A", "TOUCH A",
    "RENAME A B", "RENAMENX A B", "COPY A B", "SORT A", "SORT A STORE B", "SORT A STORE C LIMIT 0 1 STORE B",
    "SORT_RO A", "OBJECT ENCODING A", "DUMP A",
    "LPUSH A x", "LPOP A", "LLEN A", "LRANGE A 0 -1", "LMOVE A B LEFT LEFT", "RPOPLPUSH A B", "LMPOP 2 A B LEFT",
    "BLPOP A B 1", "BLMOVE A B LEFT LEFT 1",
    "HSET A f v", "HGET A f", "HLEN A", "HINCRBY A f 1", "HEXISTS A f", "HSTRLEN A f",
    "SADD A x", "SMEMBERS A", "SCARD A", "SISMEMBER A x", "SPOP A", "SMOVE A B x", "SINTERSTORE A B C",
    "SUNION A B",
    "ZADD A 1 x", "ZSCORE A x", "ZCARD A", "ZINCRBY A 1 x", "ZPOPMIN A", "ZUNIONSTORE A 2 B C",
    "ZRANGESTORE A B 0 -1", "ZMPOP 2 A B MIN", "BZPOPMIN A 1",
    "GEOADD A 0 0 x", "GEOPOS A x", "GEOSEARCHSTORE A B FROMLONLAT 0 0 BYRADIUS 1 km",
    "GEORADIUS A 0 0 1 km STORE B", "GEORADIUSBYMEMBER A x 1 km STOREDIST B",
    "GEORADIUS A 0 0 1 km STORE B STOREDIST C",
    "XADD A * f v", "XLEN A", "XRANGE A - +", "XREAD STREAMS A B 0 0", "XREADGROUP GROUP g c STREAMS A 0",
    "WATCH A B", "EVAL_RO return 1 1 A", "EVAL return 1 2 A B",
]


@T.case
def key_specs_as_redis():
    """%R~ / %W~ users: each key needs read and/or write as Redis 7.0's key
    specs say (INCR: RW, LMOVE: RW source and W destination, EXISTS:
    neither, SORT ... STORE: W destination...). ACL DRYRUN's texts name the
    key, byte for byte; the commands' own -NOPERM replies too (a reply that
    is not a refusal need only not be one on both: other suites compare
    the commands)."""
    for resp3 in (False, True):
        a = both(resp3)
        a.cmd("ACL", "LOG", "RESET")
        a.cmd("ACL", "SETUSER", "ks", "on", ">pw", "+@all", "%R~r*", "%W~w*", "~b*")
        d = user_conn(resp3, "ks", "pw")
        noperm = lambda x, y: x == y if x.startswith(b"-NOPERM") or y.startswith(b"-NOPERM") else True
        for line in KEYSPEC_CMDS:
            for first, rest in (("r", "r"), ("w", "w"), ("b", "b"), ("r", "w"), ("w", "r")):
                args = []
                for t in line.split(" "):
                    if t in ("A", "B", "C"):
                        t = "%s{t}%s" % (first if t == "A" else rest, "ABC".index(t) + 1)
                    args.append(t)
                if args[0] == "EVAL_RO" or args[0] == "EVAL":
                    args[1] = "return 1"
                    del args[2]
                a.cmd("ACL", "DRYRUN", "ks", *args)
                if args[0] in ("BLPOP", "BLMOVE", "BZPOPMIN", "WATCH"):
                    continue                       # would block / changes the connection: DRYRUN only
                d.cmd(*args, same=noperm)
        a.cmd("ACL", "LOG", "200", norm=log_norm)
        a.cmd("ACL", "DELUSER", "ks")
        a.cmd("FLUSHALL")
        for x in (a, d):
            finish(x, resp3)


@T.case
def key_patterns_as_redis():
    """Key patterns of every shape (a prefix of up to 8 bytes and longer, a
    literal, globs, one glob first) against keys shorter and longer than 8
    bytes: GET / SET / EXISTS refused or not as Redis (frontdoor's fast
    path for "prefix*" and literals, its full check for the rest)."""
    for resp3 in (False, True):
        a = both(resp3)
        a.cmd("ACL", "SETUSER", "kp", "on", ">pw", "+@all", "~key:*", "~averyverylongprefix:*", "~exact",
              "%R~a?c", "%W~[xy]z*", "~*suffix", "~k", "~12345678*", "~1234567*")
        d = user_conn(resp3, "kp", "pw")
        for k in ("key:1", "key:", "key", "ke", "k", "kk", "key:000000000123", "averyverylongprefix:1",
                  "averyverylongprefix", "averyverylongprefiX:1", "exact", "exactly", "exac", "abc", "abcd",
                  "xz", "yz1", "zz", "xzzzzzzzzzzz", "a_suffix", "suffix", "suffi", "12345678", "1234567",
                  "123456", "123456789", "1234567x", "", "\x00", "other", "Key:1"):
            d.cmd("GET", k)
            d.cmd("SET", k, "v")
            d.cmd("EXISTS", k)
        # a first-argument rule on a one-key command: the full check decides it
        a.cmd("ACL", "SETUSER", "kq", "on", ">pw", "+@all", "-object|encoding", "~key:*")
        e = user_conn(resp3, "kq", "pw")
        a.cmd("SET", "key:1", "v")
        e.cmd("OBJECT", "ENCODING", "key:1")
        e.cmd("OBJECT", "FREQ", "key:1")
        e.cmd("OBJECT", "REFCOUNT", "key:1")
        e.cmd("OBJECT", "REFCOUNT", "other")
        e.cmd("GET", "key:1")
        a.cmd("ACL", "DELUSER", "kp", "kq")
        a.cmd("FLUSHALL")
        for x in (a, d, e):
            finish(x, resp3)


@T.case
def acl_and_auth_in_multi_as_redis():
    """ACL and AUTH queued in MULTI run at EXEC in their places, on
    frontdoor's users (on the redis backends they are answered by frontdoor,
    never sent to the Redis server in the block)."""
    for resp3 in (False, True):
        a = both(resp3)
        d = both(resp3)
        d.cmd("MULTI")
        d.cmd("ACL", "SETUSER", "mu", "on", ">pw", "~k*", "+@all")
        d.cmd("ACL", "WHOAMI")
        d.cmd("SET", "k{t}1", "a")
        d.cmd("AUTH", "mu", "pw")
        d.cmd("ACL", "WHOAMI")
        d.cmd("GET", "k{t}1")
        d.cmd("AUTH", "mu", "wrong")
        d.cmd("EXEC")
        d.cmd("ACL", "WHOAMI")
        d.cmd("GET", "x")
        a.cmd("ACL", "USERS")
        a.cmd("ACL", "GETUSER", "mu")
        a.cmd("ACL", "DELUSER", "mu")
        a.cmd("DEL", "k{t}1")
        for x in (a, d):
            finish(x, resp3)


@T.case
def script_in_multi_checked_as_redis():
    """A restricted user's EVAL queued in MULTI has its redis.call checked
    at EXEC, in its place (on the redis backends the transaction then runs
    command by command in frontdoor, not as a block in Redis, which would
    run the script as frontdoor's upstream user)."""
    for resp3 in (False, True):
        a = both(resp3)
        a.cmd("ACL", "SETUSER", "ev", "on", ">pw", "~k*", "+@all")
        d = user_conn(resp3, "ev", "pw")
        d.cmd("MULTI")
        d.cmd("SET", "k{t}1", "v")
        d.cmd("EVAL", "return redis.call('get', 'zz{t}')", "0")
        d.cmd("EVAL", "return redis.call('get', 'k{t}1')", "0")
        d.cmd("EVAL", "return redis.pcall('set', 'zz{t}', 'x')", "0")
        d.cmd("INCR", "k{t}2")
        d.cmd("EXEC")
        a.cmd("MGET", "k{t}1", "k{t}2", "zz{t}")
        a.cmd("ACL", "DELUSER", "ev")
        a.cmd("DEL", "k{t}1", "k{t}2")
        for x in (a, d):
            finish(x, resp3)


if __name__ == "__main__":
    T.main()
