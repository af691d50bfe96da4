#!/usr/bin/python3
"""Differential test of notify-keyspace-events (proxy/config.c, docs/
notifications.md): the directive's parsing and CONFIG GET's canonical form
are Redis 7.0's (notify.c keyspaceEventsStringToFlags/FlagsToString), each
step compared byte for byte with a real redis-server 7.0, in RESP2 and RESP3,
on every backend.

frontdoor does not deliver keyspace notifications yet: a value that would
deliver one (K or E together with a class) is refused with an error naming
why, and the setting is left unchanged (checked on frontdoor alone, since
redis-server accepts it). With backend redis, events the backend Redis fires
(its own notify-keyspace-events set on it directly) reach frontdoor's
subscribers through the pub/sub relay: checked with redis-py's pubsub()
against redis-server's sequence, `expired` included without a read. Every case ends with the directive back at "" on
both servers (the reference server is shared by the cases).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import time

from fdtest import Tests, diff_case, diff_pair, shared_pair, start_frontdoor, start_redis, HOST, backends_idle

T = Tests(case_timeout=60)

NKE = "notify-keyspace-events"


def set_get(value):
    return [("CONFIG", "SET", NKE, value), ("CONFIG", "GET", NKE)]


def case(name, steps):
    diff_case(T, name, steps + set_get(""))


# the canonical form: "A" for every type class g$lshzxetd (n is dropped
# beside it, as Redis 7.0 prints it), the classes in Redis's order, then K E m
case("notify_canonical_form", [("CONFIG", "GET", NKE)] + [
    st for v in ("", "A", "An", "nA", "g$lshzxetd", "g$lshzxetdn", "$g", "xg", "gm", "Agxm", "mA",
                 "n", "dnt", "KE", "EK", "E", "K", "m", "AAA", "ggg$$")
    for st in set_get(v)])

# a character that is no class: Redis's error, the value unchanged
case("notify_invalid_class", set_get("gx") + [
    st for v in ("Q", "KEq", "a", " ", "g ", "k", "e$X", "Ag$lshzxeKEtmdnB")
    for st in set_get(v)] + [
    ("CONFIG", "SET", NKE, "g", "hz", "x"), ("CONFIG", "GET", NKE),
])


BACKEND = os.environ.get("FD_BACKEND") or "lmdb"
# the backends on which frontdoor delivers keyspace events (docs/notifications.md)
DELIVERS = ("lmdb", "leveldb", "redis", "redis-cluster")
# a Redis Cluster: each master fires its own keys' events (compared per key),
# and multi-key commands across slots are refused (the family cases are not run)
CLUSTER = BACKEND == "redis-cluster"
# the class letters a backend delivers when not all of them (the others are refused)
CLASSES = {"mongodb": "g$lshzxtm"}.get(BACKEND)
# events compared per key: a cluster's masters fire their own keys' events
# (mongodb delivers in submission order: compared as a sequence)
PERKEY = CLUSTER
if CLASSES:
    DELIVERS += (BACKEND,)


def effective(classes):
    """classes as this backend takes them: "A" narrowed to what it
    delivers; None when a class it refuses is asked for."""
    if CLASSES is None:
        return classes
    v = classes.replace("A", "g$lshzxetd")       # Redis's A
    if not all(ch in "KE" + CLASSES for ch in v.replace("e", "").replace("d", "")):
        return None                                  # (e and d are never raised: accepted)
    return classes


def refused():
    """Values that would deliver an event are accepted where frontdoor
    delivers events; elsewhere refused with the reason, in one CONFIG SET or
    among others (all rolled back)."""
    d = diff_pair()
    try:
        c = d.fd
        for v in ("KEA", "Ex", "Kg", "KEm", "K$", "En", "AKE"):
            r = c.cmd("CONFIG", "SET", NKE, v)
            if BACKEND in DELIVERS and effective(v) is not None:
                if r != b"+OK\r\n":
                    raise AssertionError("CONFIG SET %s %s on %s: %r" % (NKE, v, BACKEND, r))
                c.cmd("CONFIG", "SET", NKE, "")
                continue
            want = (b"-ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - "
                    b"frontdoor does not deliver keyspace notifications yet on the " + BACKEND.encode() + b" backend")
            if not r.startswith(want) or b"docs/notifications.md" not in r:
                raise AssertionError("CONFIG SET %s %s: %r" % (NKE, v, r))
            r = c.cmd("CONFIG", "GET", NKE)
            if r != b"*2\r\n$22\r\nnotify-keyspace-events\r\n$0\r\n\r\n":
                raise AssertionError("after a refused %r: %r" % (v, r))
        if BACKEND not in DELIVERS:
            # with another directive in the same call: nothing is set
            old = c.cmd("CONFIG", "GET", "slowlog-max-len")
            r = c.cmd("CONFIG", "SET", "slowlog-max-len", "77", NKE, "KEA")
            if not r.startswith(b"-ERR CONFIG SET failed"):
                raise AssertionError("mixed CONFIG SET: %r" % r)
            if c.cmd("CONFIG", "GET", "slowlog-max-len") != old:
                raise AssertionError("a refused notify-keyspace-events left slowlog-max-len changed")
        # values that deliver nothing are accepted (as redis-server does)
        for v, canon in (("A", b"A"), ("KE", b"KE"), ("gm", b"gm")):
            if c.cmd("CONFIG", "SET", NKE, v) != b"+OK\r\n":
                raise AssertionError("CONFIG SET %s %s refused" % (NKE, v))
            r = c.cmd("CONFIG", "GET", NKE)
            if not r.endswith(b"\r\n" + canon + b"\r\n"):
                raise AssertionError("CONFIG GET after %r: %r" % (v, r))
    finally:
        d.fd.cmd("CONFIG", "SET", NKE, "")
        d.ref.close()
        d.fd.close()


T.add("notify_refused_values", refused)


# ------------------------------------------------------------ events

def _key_of(m):
    """The key a message is about: the keyspace channel's tail, or the
    keyevent message's data. (A Redis Cluster fires each key's events on
    its own master: only one key's events are ordered.)"""
    parts = m.split(b"\r\n")
    ch, data = parts[-4], parts[-2]
    return ch.split(b":", 1)[1] if ch.startswith(b"__keyspace@") else data


def _ev(m):
    """A message as 'channel data' (its last two bulks)."""
    parts = m.split(b"\r\n")
    return "%s %s" % (parts[-4].decode("latin-1"), parts[-2].decode("latin-1")) if len(parts) >= 5 else repr(m)


def events_case(name, classes, steps, resp3=False, pause=0.0, unordered=False, cluster_ok=False):
    """Every message a subscriber of "__key*" (psubscribe) gets while `steps`
    run on another connection, with notify-keyspace-events `classes`,
    compared byte for byte with redis-server's (the replies to the steps
    too). The end of the stream is a PUBLISH on "__keyend" (it matches the
    pattern): deterministic, no timing. pause: seconds to sleep after the
    steps (active expiry: the keys expire with no read); unordered: the
    events are compared as sets of keyspace/keyevent pairs (Redis's active
    expiry samples keys in hash order, frontdoor's takes them by deadline)."""
    eff = effective(classes)
    if eff is not None:
        classes = eff

    def run():
        d = diff_pair(resp3=resp3)
        subs = []
        try:
            for c in (d.ref, d.fd):
                r = c.cmd("CONFIG", "SET", NKE, classes)
                if r != b"+OK\r\n":
                    raise AssertionError("CONFIG SET %s %s: %r" % (NKE, classes, r))
            srv = shared_pair()
            for s in srv:
                sc = s.conn(timeout=5.0)
                if resp3:
                    sc.cmd("HELLO", "3")
                sc.cmd("PSUBSCRIBE", "__key*")
                subs.append(sc)
                # on a Redis backend the relay subscribes asynchronously: go
                # on once a message published now comes back
                pc = s.conn(timeout=5.0)
                deadline = time.time() + 5
                while True:
                    pc.cmd("PUBLISH", "__keyready", "x")
                    try:
                        if b"__keyready" in sc.read(timeout=0.2):
                            break
                    except Exception:
                        if time.time() > deadline:
                            raise AssertionError("the subscription never became active")
                pc.close()
            for st in steps:
                if st == "sleep":
                    time.sleep(0.25)
                    continue
                d.cmd(*st)
            if pause:
                time.sleep(pause)
            # MongoDB raises a request's events in submission order: they can
            # trail the replies behind another client's slow request
            backends_idle(d.fd)
            got = []
            for c, sc in zip((d.ref, d.fd), subs):
                c.cmd("PUBLISH", "__keyend", "end")
                msgs = []
                while True:
                    m = sc.read(timeout=5.0)
                    if b"__keyend" in m:
                        break
                    if b"__keyready" not in m:      # a late readiness probe
                        msgs.append(m)
                if CLUSTER and c is d.fd:
                    # other masters' events come on their own relays: they
                    # may trail the marker (which came through the channel relay)
                    time.sleep(0.3)
                    try:
                        while True:
                            m = sc.read(timeout=0.3)
                            if b"__keyready" not in m:
                                msgs.append(m)
                    except Exception:
                        pass
                if unordered:
                    msgs = sorted(msgs)
                elif PERKEY:
                    msgs = sorted(msgs, key=_key_of)   # stable: each key's own order is kept
                got.append(msgs)
            if os.environ.get("FD_NOTIFY_SHOW"):
                print(d.fd.cmd("CONFIG", "GET", NKE), got)
            if got[0] != got[1]:
                lines = ["events differ (redis-server | frontdoor):"]
                for i in range(max(len(got[0]), len(got[1]))):
                    a = got[0][i] if i < len(got[0]) else b"-"
                    b = got[1][i] if i < len(got[1]) else b"-"
                    lines.append("  %s %s | %s" % ("  " if a == b else "!!", _ev(a), _ev(b)))
                raise AssertionError("\n".join(lines))
            d.finish()
        finally:
            for sc in subs:
                sc.close()
            for c in (d.ref, d.fd):
                try:
                    c.cmd("CONFIG", "SET", NKE, "")
                except Exception:
                    pass
            d.ref.close()
            d.fd.close()
    if BACKEND in DELIVERS and (not CLUSTER or cluster_ok) and eff is not None:
        T.add(name, run)


def events(name, classes, steps, pause=0.0, unordered=False, cluster_ok=False):
    events_case(name, classes, steps, pause=pause, unordered=unordered, cluster_ok=cluster_ok)
    events_case(name + "_resp3", classes, steps, resp3=True, pause=pause, unordered=unordered,
                cluster_ok=cluster_ok)


events("notify_events_string", "KEA", [
    ("SET", "s", "v"), ("SET", "s", "w", "EX", "100"), ("SET", "s", "x", "KEEPTTL"), ("SET", "s", "y", "NX"),
    ("SET", "s", "y", "XX", "GET"), ("SETNX", "t", "1"), ("SETNX", "t", "2"), ("SETEX", "u", "100", "v"),
    ("PSETEX", "u", "100000", "v"), ("GETSET", "t", "3"), ("APPEND", "t", "x"), ("APPEND", "a", "x"),
    ("SETRANGE", "a", "3", "yy"), ("SETRANGE", "a", "0", ""), ("INCR", "i"), ("DECR", "i"),
    ("INCRBY", "i", "5"), ("DECRBY", "i", "2"), ("INCRBYFLOAT", "f", "1.5"), ("INCR", "s"),
    ("MSET", "m1", "a", "m2", "b"), ("MSETNX", "m3", "a", "m4", "b"), ("MSETNX", "m3", "a", "m5", "b"),
    ("GETDEL", "m1"), ("GETDEL", "m1"), ("GETEX", "m2", "EX", "100"), ("GETEX", "m2", "PERSIST"),
    ("GETEX", "m2"), ("GETEX", "m3", "PXAT", "1"), ("SETBIT", "b", "7", "1"), ("SETBIT", "b", "7", "1"),
    ("BITFIELD", "bf", "SET", "u8", "0", "255", "GET", "u8", "0"), ("BITFIELD", "bf", "GET", "u8", "0"),
    ("BITOP", "OR", "bo", "b", "bf"), ("BITOP", "AND", "bo", "none1", "none2"),
    ("SET", "x", "1", "PX", "1"), "sleep", ("GET", "x"),
])

events("notify_events_generic", "KEA", [
    ("SET", "a", "1"), ("SET", "b", "2"), ("RPUSH", "l", "1", "2"), ("DEL", "a", "none", "l"),
    ("UNLINK", "b"), ("SET", "c", "1"), ("EXPIRE", "c", "100"), ("PEXPIRE", "c", "100000"),
    ("EXPIREAT", "c", "99999999999"), ("EXPIRE", "c", "100", "NX"), ("PERSIST", "c"), ("PERSIST", "c"),
    ("EXPIRE", "none", "10"), ("RENAME", "c", "d"), ("RENAMENX", "d", "e"), ("SET", "f", "1"),
    ("RENAMENX", "e", "f"), ("RENAME", "e", "e"), ("COPY", "f", "g"), ("COPY", "f", "g"),
    ("COPY", "f", "g", "REPLACE"), ("SET", "h", "1"), ("EXPIRE", "h", "-1"), ("SET", "h2", "1"),
    ("PEXPIREAT", "h2", "1"), ("SADD", "srt", "3", "1", "2"), ("SORT", "srt", "STORE", "so"),
    ("SORT", "none", "STORE", "so"), ("SET", "r", "v"), ("DUMP", "r"), ("TOUCH", "r"), ("FLUSHDB",),
])

events("notify_events_list", "KEA", [
    ("RPUSH", "l", "a", "b", "c"), ("LPUSH", "l", "z"), ("RPUSHX", "l", "d"), ("LPUSHX", "none", "d"),
    ("LINSERT", "l", "BEFORE", "a", "q"), ("LINSERT", "l", "BEFORE", "nope", "q"), ("LSET", "l", "0", "y"),
    ("LPOP", "l"), ("RPOP", "l", "2"), ("LREM", "l", "0", "q"), ("LREM", "l", "0", "nope"),
    ("LTRIM", "l", "0", "0"), ("RPUSH", "l", "m", "n"), ("LMOVE", "l", "l2", "LEFT", "RIGHT"),
    ("RPOPLPUSH", "l", "l2"), ("RPOPLPUSH", "l", "l2"), ("LMPOP", "2", "none", "l2", "LEFT", "COUNT", "5"),
    ("RPUSH", "t", "1", "2"), ("LTRIM", "t", "5", "10"), ("RPUSH", "p", "1"), ("LPOP", "p"),
    ("BLPOP", "none", "l2", "0.01"), ("RPUSH", "b", "1"), ("BRPOP", "b", "1"),
    ("RPUSH", "bm", "x"), ("BLMOVE", "bm", "bm2", "RIGHT", "LEFT", "1"),
])

events("notify_events_hash", "KEA", [
    ("HSET", "h", "a", "1", "b", "2"), ("HSET", "h", "a", "1"), ("HMSET", "h", "c", "3"),
    ("HSETNX", "h", "a", "9"), ("HSETNX", "h", "d", "4"), ("HINCRBY", "h", "n", "5"),
    ("HINCRBYFLOAT", "h", "f", "1.5"), ("HDEL", "h", "a", "zz"), ("HDEL", "h", "zz"),
    ("HDEL", "h", "b", "c", "d", "n", "f"), ("HGET", "h", "a"),
])

events("notify_events_set", "KEA", [
    ("SADD", "s", "a", "b", "c"), ("SADD", "s", "a"), ("SREM", "s", "a", "zz"), ("SREM", "s", "zz"),
    ("SMOVE", "s", "t", "b"), ("SMOVE", "s", "t", "zz"), ("SMOVE", "s", "t", "c"), ("SADD", "u", "1"),
    ("SPOP", "u"), ("SADD", "u", "1", "2"), ("SPOP", "u", "5"), ("SADD", "a", "1", "2", "3"), ("SADD", "b", "2", "3", "4"),
    ("SINTERSTORE", "d", "a", "b"), ("SUNIONSTORE", "d", "a", "b"), ("SDIFFSTORE", "d", "a", "b"),
    ("SINTERSTORE", "d", "a", "none"), ("SDIFFSTORE", "d", "none", "a"), ("SADD", "one", "x"),
    ("SPOP", "one", "1"),
])

events("notify_events_zset", "KEA", [
    ("ZADD", "z", "1", "a", "2", "b", "3", "c"), ("ZADD", "z", "1", "a"), ("ZADD", "z", "XX", "5", "zz"),
    ("ZADD", "z", "INCR", "2", "a"), ("ZINCRBY", "z", "1", "b"), ("ZREM", "z", "zz"), ("ZREM", "z", "a"),
    ("ZADD", "z", "4", "d", "5", "e"), ("ZREMRANGEBYSCORE", "z", "100", "200"),
    ("ZREMRANGEBYSCORE", "z", "0", "3"), ("ZREMRANGEBYRANK", "z", "0", "0"),
    ("ZADD", "y", "0", "a", "0", "b", "0", "c"), ("ZREMRANGEBYLEX", "y", "[a", "[a"),
    ("ZPOPMIN", "y"), ("ZPOPMAX", "y", "5"), ("ZADD", "p", "1", "a", "2", "b"), ("ZADD", "q", "1", "b"),
    ("ZUNIONSTORE", "o", "2", "p", "q"), ("ZINTERSTORE", "o", "2", "p", "q"), ("ZDIFFSTORE", "o", "2", "q", "p"),
    ("ZRANGESTORE", "o2", "p", "0", "-1"), ("ZRANGESTORE", "o2", "p", "5", "6"),
    ("ZMPOP", "2", "none", "p", "MIN", "COUNT", "9"), ("BZPOPMIN", "q", "1"),
    ("ZADD", "r", "1", "a"), ("ZREMRANGEBYRANK", "r", "0", "-1"),
])

events("notify_events_stream", "KEA", [
    ("XADD", "x", "1-1", "f", "v"), ("XADD", "x", "2-1", "f", "v"), ("XADD", "x", "MAXLEN", "1", "3-1", "f", "v"),
    ("XTRIM", "x", "MAXLEN", "0"), ("XTRIM", "x", "MAXLEN", "0"), ("XADD", "x", "4-1", "f", "v"),
    ("XDEL", "x", "4-1"), ("XDEL", "x", "4-1"), ("XGROUP", "CREATE", "x", "g", "0"),
    ("XGROUP", "CREATECONSUMER", "x", "g", "c1"), ("XGROUP", "CREATECONSUMER", "x", "g", "c1"),
    ("XADD", "x", "5-1", "f", "v"), ("XREADGROUP", "GROUP", "g", "c2", "STREAMS", "x", ">"),
    ("XGROUP", "SETID", "x", "g", "0"), ("XGROUP", "DELCONSUMER", "x", "g", "c1"),
    ("XSETID", "x", "9-9"), ("XGROUP", "DESTROY", "x", "g"), ("XGROUP", "DESTROY", "x", "g"),
    ("XADD", "y", "NOMKSTREAM", "*", "f", "v"), ("XGROUP", "CREATE", "y", "g", "$", "MKSTREAM"),
])

events("notify_events_multi_script", "KEA", [
    ("MULTI",), ("SET", "a", "1"), ("INCR", "a"), ("RPUSH", "l", "x"), ("DEL", "a"), ("EXEC",),
    ("EVAL", "redis.call('set', KEYS[1], 'v'); redis.call('lpush', KEYS[2], 'e'); return redis.call('del', KEYS[1])",
     "2", "k", "l"),
    ("EVAL", "return redis.pcall('incr', KEYS[1])", "1", "l"),
])

events("notify_events_hll_geo", "KEA", [
    ("PFADD", "h", "a", "b"), ("PFADD", "h", "a"), ("PFADD", "h2", "c"), ("PFMERGE", "h3", "h", "h2"),
    ("PFCOUNT", "h", "h2"), ("GEOADD", "g", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"),
    ("GEOSEARCHSTORE", "g2", "g", "FROMMEMBER", "Palermo", "BYRADIUS", "500", "km", "ASC"),
    ("GEOSEARCHSTORE", "g3", "g", "FROMMEMBER", "Palermo", "BYRADIUS", "500", "km", "STOREDIST"),
])

# keymiss (class m): every read-only command, on missing keys and on
# existing ones (Redis 7.0's lookupKeyRead; OBJECT does not notify)
events("notify_events_keymiss", "KEm", [
    ("SET", "s", "v"), ("RPUSH", "l", "a"), ("HSET", "h", "f", "v"), ("SADD", "t", "m"),
    ("ZADD", "z", "1", "m"), ("XADD", "x", "1-1", "f", "v"),
    ("GET", "no1"), ("GET", "s"), ("MGET", "s", "no2", "no2", "no3"), ("EXISTS", "no4", "s", "no4"),
    ("TYPE", "no5"), ("TTL", "no6"), ("PTTL", "s"), ("STRLEN", "no7"), ("GETRANGE", "no8", "0", "1"),
    ("GETBIT", "no9", "1"), ("BITCOUNT", "no10"), ("LRANGE", "no11", "0", "-1"), ("LLEN", "no12"),
    ("LINDEX", "no13", "0"), ("LPOS", "no14", "a"), ("HGET", "no15", "f"), ("HGETALL", "no16"),
    ("HLEN", "no17"), ("HMGET", "no18", "f"), ("HEXISTS", "h", "nofield"), ("SMEMBERS", "no19"),
    ("SISMEMBER", "no20", "m"), ("SCARD", "no21"), ("SUNION", "t", "no22"), ("SINTER", "no23", "t"),
    ("ZRANGE", "no24", "0", "-1"), ("ZSCORE", "no25", "m"), ("ZCARD", "no26"), ("ZRANK", "no27", "m"),
    ("XRANGE", "no28", "-", "+"), ("XLEN", "no29"), ("DUMP", "no30"), ("OBJECT", "ENCODING", "no31"),
    ("GET", "l"), ("LRANGE", "s", "0", "-1"),
    # write commands read their sources with lookupKeyRead; MEMORY does not notify
    ("SUNIONSTORE", "d", "t", "no40"), ("SINTERSTORE", "d", "no41", "t"), ("ZUNIONSTORE", "d", "2", "z", "no42"),
    ("BITOP", "OR", "d", "no43"), ("PFMERGE", "d", "no44"), ("PFCOUNT", "no45"), ("COPY", "no46", "cp"),
    ("SORT", "no47", "STORE", "d"), ("ZRANGESTORE", "d", "no48", "0", "-1"), ("MEMORY", "USAGE", "no49"),
    ("TOUCH", "no50"), ("EXPIRETIME", "no51"), ("LCS", "no52", "no53"), ("SMOVE", "no54", "t", "m"),
    ("RPOPLPUSH", "no55", "l"), ("LPOP", "no56"), ("INCR", "cnt"), ("APPEND", "no57", "x"),
    ("ZUNION", "2", "z", "no58"), ("ZINTERCARD", "2", "no59", "z"), ("SDIFF", "no60", "t"),
    ("SINTERCARD", "2", "t", "no61"), ("HRANDFIELD", "no62"), ("SRANDMEMBER", "no63"), ("ZRANDMEMBER", "no64"),
    # writes that read the key first (getGenericCommand): GETDEL, GETEX, SET ... GET, GETSET
    ("GETDEL", "no65"), ("GETEX", "no66", "EX", "10"), ("SET", "no67", "v", "GET"), ("GETSET", "no68", "v"),
    # the geo searches (georadiusGeneric: lookupKeyRead), GEOPOS/GEODIST
    ("GEOSEARCHSTORE", "d", "no69", "FROMLONLAT", "15", "37", "BYRADIUS", "10", "km"),
    ("GEORADIUS", "no70", "15", "37", "10", "km"), ("GEOSEARCH", "no71", "FROMLONLAT", "15", "37", "BYBOX", "1", "1", "km"),
    ("GEOPOS", "no72", "m"), ("GEODIST", "no73", "a", "b"), ("ZCOUNT", "no74", "0", "1"), ("ZPOPMIN", "no75"),
], cluster_ok=False)


# class filtering: K only, E only, each class letter alone, n, m
_mix = [("SET", "s", "1"), ("EXPIRE", "s", "100"), ("RPUSH", "l", "a"), ("SADD", "t", "m"),
        ("HSET", "h", "f", "v"), ("ZADD", "z", "1", "m"), ("XADD", "x", "1-1", "f", "v"),
        ("GET", "nokey"), ("LRANGE", "nolist", "0", "-1"), ("EXISTS", "nokey2"), ("DEL", "s"),
        ("SET", "e", "1", "PX", "1"), "sleep", ("GET", "e")]
for _cls in ("K$", "E$", "Kg", "El", "Ks", "Eh", "Kz", "Et", "KEx", "KEn", "KEm", "Em", "KEA", "KEAnm", "KA"):
    events_case("notify_classes_" + _cls.replace("$", "S"), _cls, _mix, cluster_ok=True)

# expired without any read, by the active expiry cycle
events("notify_expired_active", "Ex", [
    ("SET", "a", "1", "PX", "50"), ("RPUSH", "b", "x"), ("PEXPIRE", "b", "80"),
    ("HSET", "c", "f", "v"), ("PEXPIRE", "c", "60"),
], pause=1.0, unordered=True, cluster_ok=True)


def collect(ps, quiet=0.4, limit=5.0):
    """Every message a redis-py PubSub receives until `quiet` s pass without one."""
    out, end = [], time.time() + limit
    while time.time() < end:
        m = ps.get_message(timeout=quiet)
        if m is None:
            break
        out.append((m["type"], m["pattern"], m["channel"], m["data"]))
    return out


def redis_py_expired():
    """A real subscriber library: redis-py's pubsub() on
    __keyevent@0__:expired gets the expired event of a key nobody reads
    (active expiry), after the set/expire events it did not subscribe to."""
    import redis
    fd = shared_pair()[1]
    r = redis.Redis(host=HOST, port=fd.port)
    try:
        r.flushdb()
        r.config_set(NKE, "KEA")
        ps = r.pubsub()
        ps.subscribe("__keyevent@0__:expired")
        subs = collect(ps)
        r.set("fresh", "v", px=80)
        r.set("kept", "v", ex=100)
        got = collect(ps, quiet=1.0)
        want = [("message", None, b"__keyevent@0__:expired", b"fresh")]
        if subs != [("subscribe", None, b"__keyevent@0__:expired", 1)] or got != want:
            raise AssertionError("redis-py pubsub: %r then %r" % (subs, got))
        ps.close()
    finally:
        r.config_set(NKE, "")
        r.close()


if BACKEND in DELIVERS and effective("Ex") is not None:
    T.add("notify_redis_py_expired", redis_py_expired)


IOREDIS = r"""
const [port] = process.argv.slice(1);
const Redis = require('ioredis');
(async () => {
  const r = new Redis({port: +port, lazyConnect: true, maxRetriesPerRequest: 0});
  const sub = new Redis({port: +port, lazyConnect: true, maxRetriesPerRequest: 0});
  await r.connect(); await sub.connect();
  await r.config('SET', 'notify-keyspace-events', 'KEA');
  const got = [];
  sub.on('pmessage', (pat, ch, msg) => got.push([pat, ch, msg]));
  sub.on('message', (ch, msg) => got.push([null, ch, msg]));
  await sub.subscribe('__keyevent@0__:expired');
  await sub.psubscribe('__keyspace@0__:io*');
  // a Redis backend's relays subscribe asynchronously: write a probe key
  // until its event comes back, then start afresh
  for (let i = 0; i < 50 && !got.some(g => g[1] === '__keyspace@0__:ioprobe'); i++) {
    await r.set('ioprobe', i);
    await new Promise(res => setTimeout(res, 100));
  }
  await r.del('ioprobe');
  await new Promise(res => setTimeout(res, 200));
  got.length = 0;
  await r.set('iokey', 'v', 'PX', 80);
  await r.hset('iohash', 'f', 'v');
  await new Promise(res => setTimeout(res, 1200));
  await r.config('SET', 'notify-keyspace-events', '');
  sub.disconnect(); r.disconnect();
  console.log(JSON.stringify({got}));
})().catch(e => { console.log(JSON.stringify({error: String(e)})); process.exit(1); });
"""


def ioredis_events():
    """A second real library: ioredis's subscriber (pmessage/message
    events) gets the keyspace events of its writes and the expired event
    of a key nobody reads, as it would from redis-server."""
    import json
    import subprocess
    from fdtest import need_node
    nodejs = need_node("ioredis")
    apps = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps")
    fd = shared_pair()[1]
    fd.conn().cmd("FLUSHDB")
    p = subprocess.run([nodejs, "-e", IOREDIS, str(fd.port)], cwd=apps, capture_output=True, timeout=60)
    out = p.stdout.decode().strip().split("\n")[-1]
    res = json.loads(out) if out.startswith("{") else {"error": p.stdout.decode() + p.stderr.decode()}
    got = res.get("got")
    want = [["__keyspace@0__:io*", "__keyspace@0__:iokey", "set"],
            ["__keyspace@0__:io*", "__keyspace@0__:iokey", "expire"],
            ["__keyspace@0__:io*", "__keyspace@0__:iohash", "hset"],
            ["__keyspace@0__:io*", "__keyspace@0__:iokey", "expired"],
            [None, "__keyevent@0__:expired", "iokey"]]
    if got is None or sorted(got, key=str) != sorted(want, key=str) or \
            [g for g in got if g[1].endswith("iokey")] != [w for w in want if w[1].endswith("iokey")]:
        raise AssertionError("ioredis got %r, want %r" % (res, want))


if BACKEND in DELIVERS and effective("KEA") is not None:
    T.add("notify_ioredis_events", ioredis_events)


def redis_backend_reconnect():
    """backend redis: notify-keyspace-events set through frontdoor is
    forwarded to the backend Redis and applied again when frontdoor
    reconnects to it (here: a restarted backend, which starts with "")."""
    import redis
    fd = start_frontdoor(backend="redis")
    try:
        backing = fd.backing
        r = redis.Redis(host=HOST, port=fd.port)
        if not r.config_set(NKE, "KEA"):
            raise AssertionError("CONFIG SET refused")
        deadline = time.time() + 5
        while redis.Redis(host=HOST, port=backing.port).config_get(NKE)[NKE] != "AKE":
            if time.time() > deadline:
                raise AssertionError("the backend never got notify-keyspace-events")
            time.sleep(0.05)
        port = backing.port
        backing.stop()
        backing.start(port=port)
        deadline = time.time() + 10
        while True:
            try:
                r.set("probe", "1")
                break
            except redis.RedisError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        got = redis.Redis(host=HOST, port=port).config_get(NKE)[NKE]
        if got != "AKE":
            raise AssertionError("after the backend's restart: %r" % got)
        ps = r.pubsub()
        ps.subscribe("__keyevent@0__:set")
        collect(ps)
        r.set("after", "1")
        got = collect(ps)
        if got != [("message", None, b"__keyevent@0__:set", b"after")]:
            raise AssertionError("events after the reconnect: %r" % got)
        ps.close()
    finally:
        fd.stop()
        if fd.backing is not None:
            fd.backing.stop()


if BACKEND == "redis":
    T.add("notify_redis_backend_reconnect", redis_backend_reconnect)


def redis_backend_relay():
    """backend redis: the backend Redis fires the events itself when its own
    notify-keyspace-events is set (on the backend, not through frontdoor);
    frontdoor's relay delivers them to its subscribers. A real library
    (redis-py pubsub()) on frontdoor gets the same sequence as on
    redis-server, `expired` included with no read of the key."""
    import redis
    ref = start_redis()
    fd = start_frontdoor(backend="redis")
    try:
        backing = fd.backing
        if backing is None:
            raise AssertionError("backend redis without its own redis-server")
        seqs = []
        for srv, backend_port in ((ref, ref.port), (fd, backing.port)):
            redis.Redis(host=HOST, port=backend_port).config_set(NKE, "KEA")
            r = redis.Redis(host=HOST, port=srv.port)
            ps = r.pubsub()
            ps.subscribe("__keyevent@0__:expired")
            ps.psubscribe("__keyspace@0__:*")
            subs = collect(ps)
            r.set("k", "v", px=60)
            r.set("n", "1")
            r.incrby("n", 5)
            r.append("n", "0")
            r.expire("n", 100)
            r.rename("n", "m")
            r.delete("m", "none")
            time.sleep(0.3)                  # k expires meanwhile: no read of it
            seqs.append(subs + collect(ps))
            ps.close()
        if os.environ.get("FD_NOTIFY_SHOW"):
            print(seqs[1])
        if seqs[0] != seqs[1]:
            raise AssertionError("redis-server: %r\nfrontdoor:    %r" % (seqs[0], seqs[1]))
        if ("message", None, b"__keyevent@0__:expired", b"k") not in seqs[0]:
            raise AssertionError("no expired event on redis-server: %r" % seqs[0])
    finally:
        fd.stop()
        if fd.backing is not None:
            fd.backing.stop()
        ref.stop()


T.add("notify_redis_backend_relay", redis_backend_relay)


if __name__ == "__main__":
    T.main()
