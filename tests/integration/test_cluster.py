#!/usr/bin/python3
"""The redis-cluster backend: frontdoor --backend redis-cluster in front of a
real local Redis Cluster (3 masters, from /usr/bin/redis-server with
cluster-enabled yes, on free loopback ports, created with
redis-cli --cluster create; 3 more replicas for the failover case).

(a) differential: single-key commands of every type and the split multi-key
    commands (MGET, MSET, DEL, UNLINK, EXISTS, TOUCH over keys in many slots)
    sent to a plain redis-server and through frontdoor→cluster; replies
    compared byte for byte, RESP2 and RESP3, one command at a time and
    pipelined.
(b) CROSSSLOT: other multi-key commands over several slots get Redis's exact
    error (from frontdoor for table commands, from the cluster for the
    others); with hash tags they work.
(c) keyless commands fan out: DBSIZE, KEYS, SCAN (a full iteration returns
    every key once), FLUSHALL, RANDOMKEY; keys really are spread over the
    masters.
(d) resharding with redis-cli --cluster reshard while clients run: no error
    reply reaches a client (MOVED/ASK/TRYAGAIN handled inside).
(e) failover: a master SIGKILLed → its slots' commands fail promptly with
    "backend unavailable"; once its replica is promoted, traffic resumes with
    no restart.
(f) redis-benchmark's default suite, -P 1 and -P 16, no errors.
Skips cleanly when redis-server cannot run a cluster here.
"""
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import (Tests, Diff, start_frontdoor, start_redis, start_cluster, wait_cluster_map,
                    redis_cluster_support, run_frontdoor_expect_exit, parse, norm_sorted,
                    norm_pairs, ttl_close, check, eq, skip, run, wait_until, free_port,
                    frontdoor_is_redis, info_fields, missing_prerequisite, Conn, REDIS_BENCHMARK, REDIS_CLI, HOST,
                    check_deep_reply_passes)

T = Tests(case_timeout=60)
CROSSSLOT = b"-CROSSSLOT Keys in request don't hash to the same slot\r\n"
UNAVAILABLE = b"-ERR backend unavailable (redis-cluster"

_shared = {}


def need():
    if frontdoor_is_redis():
        skip("the binary under test is redis-server: no cluster backend")
    why = redis_cluster_support()
    if why:
        missing_prerequisite(why)


def shared():
    """(reference redis-server, cluster, frontdoor→cluster), shared by cases."""
    need()
    if not _shared or not all(n.alive() for n in _shared["cluster"].nodes) or not _shared["fd"].alive():
        for k, v in list(_shared.items()):
            v.cleanup()
        _shared.clear()
        _shared["ref"] = start_redis(keep=True)
        _shared["cluster"] = start_cluster(keep=True)
        # a roomy timeout: redis-benchmark's LRANGE_600 at -P 16 on a busy
        # 2-core machine can keep a master busy for most of a second
        _shared["fd"] = start_frontdoor(keep=True, backend="redis-cluster", backend_timeout=5000,
                                        redis_cluster_seeds=_shared["cluster"].seeds)
        wait_cluster_map(_shared["fd"])
    return _shared["ref"], _shared["cluster"], _shared["fd"]


def diff(proto=2):
    ref, cluster, fd = shared()
    d = Diff(ref.conn(), fd.conn())
    if proto == 3:
        for c in (d.ref, d.fd):
            check(parse(c.cmd("HELLO", "3")).get(b"proto") == 3, "HELLO 3")
    d.cmd("FLUSHALL")
    return d


def backend_info(fd):
    with fd.conn() as c:
        return info_fields(parse(c.cmd("INFO", "backend")))


# ============================================================ (a) differential

KEYS = ["k%d" % i for i in range(40)]      # spread over many slots (and all masters)


def script():
    s = []
    a = s.append
    for i, k in enumerate(KEYS[:12]):
        a(("SET", k, "v%d" % i))
    for st in [("GET", "k1"), ("APPEND", "k1", "xy"), ("STRLEN", "k1"), ("GETRANGE", "k1", "0", "1"),
               ("INCR", "n1"), ("INCRBY", "n2", "5"), ("INCRBYFLOAT", "n3", "1.5"), ("DECR", "n1"),
               ("INCR", "k2"), ("SETNX", "k3", "q"), ("GETSET", "k4", "new"), ("GETDEL", "k5"), ("GETEX", "k6", "PERSIST"),
               ("SET", "e", "v", "EX", "100"), ("TTL", "e"), ("PERSIST", "e"), ("TTL", "e"), ("TYPE", "k1"),
               ("EXPIRE", "k7", "100"), ("PTTL", "k7"), ("SETRANGE", "k8", "3", "ZZ"), ("GET", "k8"),
               # split multi-key commands, keys over many slots, duplicates and missing keys
               ("MGET",) + tuple(KEYS[:20]), ("MGET", "k1", "nokey", "k1", "k2", "k30"),
               ("MSET",) + tuple(x for i, k in enumerate(KEYS[10:30]) for x in (k, "m%d" % i)),
               ("MGET",) + tuple(KEYS), ("EXISTS",) + tuple(KEYS[::3]) + ("k1", "k1", "nokey"),
               ("TOUCH", "k1", "k2", "k3", "nokey"), ("DEL", "k1", "k2", "nokey", "k2"), ("UNLINK", "k3", "k4", "k5"),
               ("EXISTS", "k1", "k2", "k3", "k4", "k6"), ("MGET", "k1", "k2", "k6", "k7"), ("DBSIZE",),
               ("MSET", "k1"), ("MSET", "k1", "a", "k2"), ("MGET",), ("DEL",),
               # hash tags keep keys together
               ("MSET", "{u}a", "1", "{u}b", "2"), ("MGET", "{u}a", "{u}b", "k9"), ("MSETNX", "{u}c", "3", "{u}d", "4"),
               ("RENAME", "{u}a", "{u}z"), ("SINTERSTORE", "{u}s", "{u}x"),
               # lists, hashes, sets, sorted sets
               ("RPUSH", "l", "a", "b", "c"), ("LPUSH", "l", "z"), ("LRANGE", "l", "0", "-1"), ("LPOP", "l"),
               ("RPOP", "l", "2"), ("LLEN", "l"), ("LINDEX", "l", "0"), ("LPOS", "l", "a"),
               ("HSET", "h", "f", "v", "g", "w"), ("HGET", "h", "f"), ("HMGET", "h", "f", "x"), ("HLEN", "h"),
               ("HINCRBY", "h", "n", "3"), ("HDEL", "h", "g"), ("pairs", "HGETALL", "h"),
               ("SADD", "st", "a", "b"), ("SCARD", "st"), ("SISMEMBER", "st", "a"), ("sorted", "SMEMBERS", "st"),
               ("SREM", "st", "a"), ("ZADD", "z", "1", "a", "2", "b"), ("ZRANGE", "z", "0", "-1", "WITHSCORES"),
               ("ZSCORE", "z", "b"), ("ZINCRBY", "z", "2", "a"), ("ZRANK", "z", "a"), ("ZPOPMIN", "z"),
               ("GET", "l"), ("LPUSH", "k9", "x"),
               # commands frontdoor's table does not know: the cluster answers
               ("PFADD", "hll", "a", "b"), ("PFCOUNT", "hll"), ("XADD", "x", "1-1", "f", "v"), ("XLEN", "x"),
               ("SETBIT", "bm", "7", "1"), ("BITCOUNT", "bm"), ("OBJECT", "ENCODING", "n1"),
               ("EVAL", "return redis.call('get', KEYS[1])", "1", "k6"), ("EVAL", "return 1", "0"),
               ("GET",), ("FOOBAR", "x")]:
        a(st)
    return s


def run_steps(d, steps):
    for st in steps:
        norm = None
        if st and st[0] in ("sorted", "pairs"):
            norm, st = (norm_sorted if st[0] == "sorted" else norm_pairs), st[1:]
        if st and st[0] in ("TTL", "PTTL"):
            d.cmd(*st, same=ttl_close(2) if st[0] == "TTL" else ttl_close(2500))
        else:
            d.cmd(*st, norm=norm)


@T.case
def differential_resp2():
    d = diff()
    run_steps(d, script())
    d.finish()
    ref, cluster, fd = shared()
    i = backend_info(fd)
    check(int(i["redis_cluster_split"]) > 0, "split commands counted", i)


@T.case
def differential_resp3():
    d = diff(proto=3)
    run_steps(d, script())
    d.finish()


@T.case
def differential_pipelined_random():
    """3000 random commands over 200 keys, pipelined in batches of 300,
    MGET/MSET/DEL/EXISTS over random key sets among them."""
    seed = int(os.environ.get("FD_SEED", str(int(time.time() * 1000) % 1000003)))
    print("      seed %d (reproduce: FD_SEED=%d)" % (seed, seed))
    rng = random.Random(seed)
    d = diff()
    keys = ["r:%d" % i for i in range(200)]
    cmds = []
    for _ in range(3000):
        x = rng.random()
        ks = rng.sample(keys, rng.randint(1, 8))
        if x < 0.25:
            cmds.append(("SET", ks[0], str(rng.randint(0, 99))))
        elif x < 0.4:
            cmds.append(("GET", ks[0]))
        elif x < 0.5:
            cmds.append(("INCR", ks[0]))
        elif x < 0.62:
            cmds.append(("MGET",) + tuple(ks))
        elif x < 0.72:
            cmds.append(("MSET",) + tuple(v for k in ks for v in (k, str(rng.randint(0, 99)))))
        elif x < 0.8:
            cmds.append(("DEL",) + tuple(ks))
        elif x < 0.87:
            cmds.append(("EXISTS",) + tuple(ks + ks[:1]))
        elif x < 0.92:
            cmds.append(("UNLINK",) + tuple(ks))
        elif x < 0.96:
            cmds.append(("RPUSH", "l" + ks[0], "x"))
        else:
            cmds.append(("DBSIZE",))
    for i in range(0, len(cmds), 300):
        first = d.pipeline(cmds[i:i + 300])
        if first >= 0:
            break
    d.finish()


@T.case
def routing_needs_no_redirections():
    """frontdoor computes every key's slot itself (CRC16, hash tags as Redis
    reads them) and finds the key positions of known and passthrough
    commands: on a stable cluster no command is redirected. (A wrong slot
    would still be answered right, through MOVED, so this counts them.)"""
    ref, cluster, fd = shared()
    cluster.wait_ok()
    with fd.conn() as c:
        c.cmd("FLUSHALL")
        before = int(backend_info(fd)["redis_cluster_moved"])
        odd = ["{}", "{}x", "{a", "a}", "a}{b}", "{{x}}", "x{}{y}", "{a}{b}", "\xff{\x00}", "\u00e9t\u00e9",
               "123456789", "{123456789}abc", "", "k" * 1000]
        keys = odd + ["key:%d" % i for i in range(300)]
        c.send_many([("SET", k, "v") for k in keys])
        eq(set(c.read_n(len(keys))), {b"+OK\r\n"})
        with cluster.live()[0].conn() as n0:
            for k in odd:       # stored on the master of the slot Redis computes
                slot = parse(n0.cmd("CLUSTER", "KEYSLOT", k))
                holder = [m for m in cluster.masters() if any(lo <= slot <= hi and p == m.port
                          for lo, hi, p in cluster.slots_view(n0))]
                with holder[0].conn() as mc:
                    eq(mc.cmd("EXISTS", k), b":1\r\n", "key %r (slot %d) on its master" % (k, slot))
        for cmd in [("OBJECT", "ENCODING", "key:7"), ("MEMORY", "USAGE", "key:8"), ("XADD", "xs", "1-1", "f", "v"),
                    ("XREAD", "COUNT", "1", "STREAMS", "xs", "0"), ("EVAL", "return redis.call('get', KEYS[1])", "1", "key:9"),
                    ("ZUNIONSTORE", "zd", "1", "zd"), ("PFADD", "key:10:h", "a"), ("BITOP", "NOT", "key:11:b", "key:11:b"),
                    ("GETRANGE", "key:12", "0", "0"), ("SINTERCARD", "1", "key:13:s")]:
            check(not c.cmd(*cmd).startswith(b"-"), "no error for %r" % (cmd,))
        eq(int(backend_info(fd)["redis_cluster_moved"]), before, "MOVED counter (no redirection expected)")


# ============================================================ (b) CROSSSLOT

@T.case
def crossslot_errors():
    ref, cluster, fd = shared()
    direct = cluster.masters()[0].conn()
    with fd.conn() as c:
        c.cmd("FLUSHALL")
        # table commands: frontdoor answers, exactly as a cluster node
        for cmd in [("RENAME", "a", "b"), ("RENAMENX", "a", "b"), ("SMOVE", "a", "b", "m"), ("SINTER", "a", "b"),
                    ("SUNIONSTORE", "a", "b"), ("RPOPLPUSH", "a", "b"), ("LMOVE", "a", "b", "LEFT", "LEFT"),
                    ("MSETNX", "a", "1", "b", "2"), ("SINTERCARD", "2", "a", "b"), ("SDIFF", "{x}a", "b")]:
            eq(c.cmd(*cmd), CROSSSLOT, "%r through frontdoor" % (cmd,))
            eq(direct.cmd(*cmd), CROSSSLOT, "%r on a cluster node (the reference)" % (cmd,))
        # commands the table does not know: the cluster itself answers
        for cmd in [("PFMERGE", "a", "b"), ("ZUNIONSTORE", "a", "2", "b", "c"), ("BITOP", "AND", "a", "b"),
                    ("PFCOUNT", "a", "b"), ("EVAL", "return 1", "2", "a", "b"), ("COPY", "a", "b")]:
            eq(c.cmd(*cmd), CROSSSLOT, "%r through frontdoor" % (cmd,))
        # the same with one hash tag: served
        eq(c.cmd("SET", "{t}a", "1"), b"+OK\r\n")
        eq(c.cmd("RENAME", "{t}a", "{t}b"), b"+OK\r\n")
        eq(c.cmd("SADD", "{t}s1", "m"), b":1\r\n")
        eq(c.cmd("SMOVE", "{t}s1", "{t}s2", "m"), b":1\r\n")
        eq(c.cmd("PFADD", "{t}h1", "x"), b":1\r\n")
        eq(c.cmd("PFMERGE", "{t}h2", "{t}h1"), b"+OK\r\n")
        eq(c.cmd("RPUSH", "{t}l", "v"), b":1\r\n")
        eq(c.cmd("LMOVE", "{t}l", "{t}l2", "LEFT", "RIGHT"), b"$1\r\nv\r\n")
        eq(c.cmd("MSETNX", "{t}x", "1", "{t}y", "2"), b":1\r\n")
        eq(c.cmd("EVAL", "return redis.call('get', KEYS[1])", "2", "{t}x", "{t}y"), b"$1\r\n1\r\n")
    direct.close()
    check(int(backend_info(fd)["redis_cluster_crossslot"]) >= 10, "CROSSSLOT counted")


# ============================================================ (c) keyless

@T.case
def keyless_fanout_and_scan():
    ref, cluster, fd = shared()
    with fd.conn() as c:
        eq(c.cmd("FLUSHALL"), b"+OK\r\n")
        eq(c.cmd("DBSIZE"), b":0\r\n")
        eq(c.cmd("RANDOMKEY"), b"$-1\r\n")
        eq(c.cmd("SCAN", "0"), b"*2\r\n$1\r\n0\r\n*0\r\n", "SCAN of an empty cluster ends at once")
        keys = ["s:%d" % i for i in range(1500)]
        c.send_many([("SET", k, "v") for k in keys])
        c.read_n(len(keys))
        eq(c.cmd("DBSIZE"), b":1500\r\n")
        eq(sorted(parse(c.cmd("KEYS", "s:*"))), sorted(k.encode() for k in keys), "KEYS over every master")
        check(parse(c.cmd("RANDOMKEY")).startswith(b"s:"), "RANDOMKEY finds a key")
        # every master holds some: routing really spreads keys
        per = []
        for m in cluster.masters():
            with m.conn() as mc:
                per.append(parse(mc.cmd("DBSIZE")))
        check(len(per) == 3 and min(per) > 300 and sum(per) == 1500, "keys spread over the masters", per)
        # each key lives on the master of its slot
        for k in keys[:20]:
            with cluster.master_of(k).conn() as mc:
                eq(mc.cmd("GET", k), b"$1\r\nv\r\n", "key %s on its slot's master" % k)
        # a full SCAN returns every key, once per master walk
        for extra in ((), ("COUNT", "100"), ("MATCH", "s:1*", "COUNT", "1000")):
            seen, cursor, rounds = [], b"0", 0
            while True:
                cur, page = parse(c.cmd("SCAN", cursor, *extra))
                seen += page
                rounds += 1
                cursor = cur
                if cur == b"0":
                    break
                check(rounds < 10000, "SCAN terminates")
            want = [k.encode() for k in keys if not extra or extra[0] != "MATCH" or k.startswith("s:1")]
            eq(sorted(set(seen)), sorted(want), "SCAN %r covers every key" % (extra,))
        eq(c.cmd("SCAN", "x"), b"-ERR invalid cursor\r\n")
        eq(c.cmd("SCAN", " 1"), b"-ERR invalid cursor\r\n")
        eq(c.cmd("SCAN", "18446744073709551616"), b"-ERR invalid cursor\r\n")
        eq(c.cmd("SCAN", "1x"), b"-ERR invalid cursor\r\n")
        eq(c.cmd("FLUSHDB"), b"+OK\r\n")
        eq(c.cmd("DBSIZE"), b":0\r\n")


# ============================================================ (d) resharding

def node_id(node):
    with node.conn() as c:
        return parse(c.cmd("CLUSTER", "MYID")).decode()


class Traffic:
    """Clients pipelining SET, GET, MGET (one slot, hash tags), and MSET/MGET
    split over two slots against frontdoor until stopped; every reply is
    checked."""

    def __init__(self, port, nthreads=4, keys=2000):
        self.port = port
        self.stop = threading.Event()
        self.errors = []
        self.count = 0
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(i, keys), daemon=True) for i in range(nthreads)]

    def run(self, i, nkeys):
        rng = random.Random(i)
        try:
            with Conn(self.port, timeout=10.0) as c:
                n = 0
                while not self.stop.is_set():
                    batch, want = [], []
                    for _ in range(50):
                        k = "t%d:%d" % (i, rng.randrange(nkeys))
                        k2 = "t%d:%d" % (i, rng.randrange(nkeys))
                        batch += [("SET", k, "v"), ("GET", k), ("MGET", "{%s}a" % k, "{%s}b" % k, k),
                                  ("MSET", k, "v", k2, "v"), ("MGET", k2, k)]
                        want += [b"+OK\r\n", b"$1\r\nv\r\n", None, b"+OK\r\n", b"*2\r\n$1\r\nv\r\n$1\r\nv\r\n"]
                    c.send_many(batch)
                    for w, r in zip(want, c.read_n(len(batch))):
                        if r.startswith(b"-") or (w is not None and r != w):
                            self.errors.append(r)
                    n += len(batch)
                with self.lock:
                    self.count += n
        except Exception as e:
            self.errors.append(repr(e).encode())

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *a):
        self.stop.set()
        for t in self.threads:
            t.join(30)


@T.case(timeout=80)
def resharding_under_traffic_no_errors():
    ref, cluster, fd = shared()
    with fd.conn() as c:
        c.cmd("FLUSHALL")
    before = backend_info(fd)
    ms = cluster.masters()
    src, dst = ms[0], ms[1]
    t0 = time.monotonic()
    with Traffic(fd.port) as tr:
        time.sleep(0.3)
        rc, out = run([REDIS_CLI, "--cluster", "reshard", "%s:%d" % (HOST, src.port),
                       "--cluster-from", node_id(src), "--cluster-to", node_id(dst),
                       "--cluster-slots", "600", "--cluster-yes"], timeout=60)
        check(rc == 0, "redis-cli --cluster reshard failed", out[-2000:])
        time.sleep(0.3)
    after = backend_info(fd)
    print("      %d commands during a %.1fs reshard of 600 slots; MOVED %d, ASK %d, TRYAGAIN %d"
          % (tr.count, time.monotonic() - t0,
             int(after["redis_cluster_moved"]) - int(before["redis_cluster_moved"]),
             int(after["redis_cluster_ask"]) - int(before["redis_cluster_ask"]),
             int(after["redis_cluster_tryagain"]) - int(before["redis_cluster_tryagain"])))
    check(not tr.errors, "error replies during resharding", tr.errors[:10])
    check(tr.count > 1000, "traffic ran", tr.count)
    check(int(after["redis_cluster_moved"]) + int(after["redis_cluster_ask"]) >
          int(before["redis_cluster_moved"]) + int(before["redis_cluster_ask"]), "redirections were followed", after)
    cluster.wait_ok()
    # the map frontdoor ends with is the cluster's
    wait_until(lambda: int(backend_info(fd)["redis_cluster_refreshes"]) > int(after["redis_cluster_refreshes"]),
               timeout=10, what="a map refresh after the reshard")
    with fd.conn() as c:
        for i in range(100):
            eq(c.cmd("SET", "after:%d" % i, "x"), b"+OK\r\n")


# ============================================================ (e) failover

def published_until_heard(c, sub, verb, channel, timeout, what):
    """PUBLISH (or SPUBLISH) "after" on c until the subscriber sub hears a
    message (those sent while no relay is up are not seen, as in Redis):
    the first message heard, parsed."""
    got = []

    def heard():
        c.cmd(verb, channel, "after")
        try:
            got.append(parse(sub.read(timeout=0.5)))
        except Exception:
            return False
        return True
    wait_until(heard, timeout=timeout, interval=0.2, what=what)
    return got[0]


@T.case(timeout=90)
def failover_traffic_resumes():
    need()
    cluster = start_cluster(masters=3, replicas=1, node_timeout=1000)
    fd = start_frontdoor(backend="redis-cluster", redis_cluster_seeds=cluster.seeds, backend_timeout=1000)
    wait_cluster_map(fd)
    # replicas in sync before anything fails
    for n in cluster.nodes:
        i = cluster.info(n, "replication")
        if i.get("role") == "slave":
            wait_until(lambda n=n: cluster.info(n, "replication").get("master_link_status") == "up",
                       timeout=20, what="replica link up")
    # subscribers through frontdoor: a channel (its relay is at one master,
    # killed last: the relay must move to a live node) and a shard channel of
    # the victim's slots (it must follow them to the promoted replica)
    sub = fd.conn(timeout=10.0)
    eq(parse(sub.cmd("SUBSCRIBE", "fo:ch")), [b"subscribe", b"fo:ch", 1])
    wait_until(lambda: backend_info(fd)["redis-cluster_backend_pubsub_relay"].startswith("up,"),
               timeout=10, what="the channel relay up")
    relay_port = int(backend_info(fd)["redis-cluster_backend_pubsub_relay"].rsplit(":", 1)[1])
    victim = [m for m in cluster.masters() if m.port != relay_port][0]
    schan = [ch for ch in ("fo:s%d" % i for i in range(200)) if cluster.master_of(ch) is victim][0]
    ssub = fd.conn(timeout=10.0)
    eq(parse(ssub.cmd("SSUBSCRIBE", schan)), [b"ssubscribe", schan.encode(), 1])
    keys = []
    with fd.conn() as c:
        for i in range(300):
            k = "f:%d" % i
            eq(c.cmd("SET", k, "v%d" % i), b"+OK\r\n")
            keys.append(k)
        mine = [k for k in keys if cluster.master_of(k) is victim]
        check(mine, "some keys on the victim")
        # WAIT on the victim so its replica has them before the kill
        with victim.conn() as vc:
            eq(parse(vc.cmd("WAIT", "1", "5000")), 1)
    victim.kill()
    t0 = time.monotonic()
    with fd.conn(timeout=5.0) as c:
        r = c.cmd("GET", mine[0])
        dt = time.monotonic() - t0
        check(r.startswith(UNAVAILABLE), "a dead master's slot: backend unavailable", r)
        # the behaviour: an error from the refused connection, long before the
        # shared frontdoor's 5 s backend-timeout; 3 s of it is scheduling room
        # for a loaded 2-core CI (1.5 s failed once, issue 20)
        check(dt < 3.0, "promptly, not at backend-timeout (%.2fs)" % dt)
        # traffic resumes once the replica is promoted, without a restart
        last = []
        def resumed():
            r = c.cmd("GET", mine[0])
            last.append(r)
            return r == b"$%d\r\n%s\r\n" % (len("v%d" % keys.index(mine[0])),
                                                              ("v%d" % keys.index(mine[0])).encode())
        try:
            wait_until(resumed, timeout=30, interval=0.1, what="traffic through the promoted replica")
        except AssertionError:
            # say what was seen (once failed in CI under load, not reproduced)
            print("      last replies: %r" % sorted(set(last[-50:])))
            for n in cluster.nodes:
                try:
                    print("      node %d alive=%s role=%s" % (n.port, n.alive(), cluster.info(n, "replication").get("role")))
                except Exception as e:
                    print("      node %d: %s" % (n.port, e))
            print("      frontdoor log tail:\n" + fd.log()[-2000:])
            raise
        print("      traffic resumed %.1fs after the kill" % (time.monotonic() - t0))
        # the other masters may still say CLUSTERDOWN for a moment (Redis's
        # own answer, passed on): once every node agrees, everything is served
        cluster.wait_ok()
        for k in keys:
            eq(c.cmd("GET", k), b"$%d\r\n%s\r\n" % (len("v%d" % keys.index(k)), ("v%d" % keys.index(k)).encode()),
               "key %s after failover" % k)
        eq(c.cmd("SET", mine[0], "new"), b"+OK\r\n")
        eq(parse(c.cmd("DBSIZE")), 300)
        # the shard subscriber hears a message published after the failover
        # (published until one arrives: those sent before the relay is up
        # again are not seen, as in Redis)
        eq(published_until_heard(c, ssub, "SPUBLISH", schan, 20, "a shard message from the promoted replica"),
           [b"smessage", schan.encode(), b"after"])
        ssub.close()
        # then the channel relay's master dies too: the subscriber hears a
        # message published after that failover
        [m for m in cluster.masters() if m.port == relay_port][0].kill()
        eq(published_until_heard(c, sub, "PUBLISH", "fo:ch", 30, "a message through the moved relay"),
           [b"message", b"fo:ch", b"after"])
        sub.close()
    i = backend_info(fd)
    eq(i["redis_cluster_masters"], "3")
    eq(i["redis_cluster_masters_up"], "3")


# ============================================================ misc

@T.case
def unreachable_seeds_and_config_errors():
    need()
    dead = free_port()
    fd = start_frontdoor(backend="redis-cluster", redis_cluster_seeds="%s:%d" % (HOST, dead), backend_timeout=500)
    with fd.conn() as c:
        t0 = time.monotonic()
        r = c.cmd("GET", "a")
        check(r.startswith(UNAVAILABLE), "no cluster: backend unavailable", r)
        # backend-timeout 0.5 s; +2 s is scheduling room on a loaded 2-core CI
        check(time.monotonic() - t0 < 0.5 + 2.0, "within the timeout")
        r = c.cmd("DBSIZE")
        check(r.startswith(UNAVAILABLE), "keyless without a map", r)
        eq(c.cmd("PING"), b"+PONG\r\n")
        i = info_fields(parse(c.cmd("INFO", "backend")))
        eq(i["redis_cluster_map"], "none")
    rc, out = run_frontdoor_expect_exit([("backend", "redis-cluster"), ("redis-cluster-seeds", "nocolon")])
    check(rc not in (0, None) and "nocolon" in out, "bad seed: a start-up error", rc, out[-500:])


@T.case
def tryagain_outlasting_backend_timeout():
    """A multi-key command on a slot left half migrated (MIGRATING on its
    master, IMPORTING on another, one of its keys not there) gets -TRYAGAIN
    from the cluster for as long as the migration lasts. frontdoor retries
    every 25 ms until backend-timeout, then (docs/redis-cluster.md) fails it
    with 'backend unavailable (slot still migrating)'; meanwhile the client's
    other commands are not blocked."""
    ref, cluster, fd0 = shared()
    fd = start_frontdoor(backend="redis-cluster", redis_cluster_seeds=cluster.seeds, backend_timeout=600)
    wait_cluster_map(fd)
    with cluster.master_of("{ta}x").conn() as c:
        slot = parse(c.cmd("CLUSTER", "KEYSLOT", "{ta}x"))
    src = cluster.master_of("{ta}x")
    dst = [m for m in cluster.masters() if m.port != src.port][0]
    with src.conn() as s, dst.conn() as d:
        eq(s.cmd("SET", "{ta}x", "1"), b"+OK\r\n")
        eq(d.cmd("CLUSTER", "SETSLOT", slot, "IMPORTING", node_id(src)), b"+OK\r\n")
        eq(s.cmd("CLUSTER", "SETSLOT", slot, "MIGRATING", node_id(dst)), b"+OK\r\n")
        try:
            with fd.conn(timeout=10) as c:
                t0 = time.monotonic()
                r = c.cmd("MGET", "{ta}x", "{ta}y")
                took = time.monotonic() - t0
                tries = int(backend_info(fd)["redis_cluster_tryagain"])
                # margins: the retries must have lasted most of the 600 ms
                # (the behaviour); the upper bound only says "not hung" and is
                # wide for a loaded 2-core machine
                check(0.45 <= took <= 5.0, "MGET answered after %.2f s (backend-timeout 0.6 s)" % took, r)
                check(tries >= 10, "retried every 25 ms (%d TRYAGAIN counted)" % tries)
                check(r.startswith(UNAVAILABLE + b": slot %d still migrating" % slot),
                      "the error after backend-timeout: %r" % r[:120])
                eq(c.cmd("GET", "{ta}x"), b"$1\r\n1\r\n", "single-key commands still served")
        finally:
            s.cmd("CLUSTER", "SETSLOT", slot, "STABLE")
            d.cmd("CLUSTER", "SETSLOT", slot, "STABLE")
            s.cmd("DEL", "{ta}x")


@T.case
def first_commands_wait_for_the_map():
    """Commands sent the moment frontdoor answers (its slot map may not be
    loaded yet) wait for the map instead of failing: keyed and fan-out alike."""
    ref, cluster, fd0 = shared()
    for _ in range(3):
        fd = start_frontdoor(backend="redis-cluster", redis_cluster_seeds=cluster.seeds)
        with fd.conn() as c:
            c.send_many([("DBSIZE",), ("SET", "w:a", "1"), ("MGET", "w:a", "w:b", "w:c"), ("DEL", "w:a", "w:b"),
                         ("FLUSHALL",)])
            eq(c.read_n(5)[1:], [b"+OK\r\n", b"*3\r\n$1\r\n1\r\n$-1\r\n$-1\r\n", b":1\r\n", b"+OK\r\n"])
        fd.cleanup()


@T.case
def refused_commands_name_the_backend():
    ref, cluster, fd = shared()
    with fd.conn() as c:
        eq(c.cmd("COPY", "a", "b", "DB", "1"),
           b"-ERR 'copy' is not supported by frontdoor's redis-cluster backend: its DB option would name the backend "
           b"server's databases (frontdoor exposes one, redis-db there)\r\n")
        eq(c.cmd("WAIT", "1", "0"), b":0\r\n")    # frontdoor answers as a server without replicas (README)
        eq(c.cmd("PING"), b"+PONG\r\n")


@T.case(timeout=80)
def redis_benchmark_default_suite():
    ref, cluster, fd = shared()
    for p in ("1", "16"):
        t0 = time.monotonic()
        rc, out = run(["timeout", "60", REDIS_BENCHMARK, "-h", HOST, "-p", str(fd.port), "-n", "5000",
                       "-c", "50", "-r", "100000", "-P", p, "--csv"], timeout=65)
        rows = [l for l in out.splitlines() if l.startswith('"') and not l.startswith('"test"')]
        print("      -P %s: %d tests in %.1fs" % (p, len(rows), time.monotonic() - t0))
        check(rc == 0 and "Error" not in out and "ERR" not in out and "WARNING" not in out,
              "redis-benchmark -P %s failed (rc %s)" % (p, rc), out[-2000:])
        check(len(rows) >= 20, "every default test ran", out[-2000:])
    i = backend_info(fd)
    eq(i["redis_cluster_failed"], "0", "no failed request")



@T.case
def deeply_nested_reply_passes_through():
    """Issue 25: a reply of any depth (resp_scan's counter) passes through
    the cluster backend too."""
    ref, cluster, fd = shared()
    check_deep_reply_passes(ref.port, fd.port)
    eq(fd.conn().cmd("SET", "after-deep", "1"), b"+OK\r\n")


if __name__ == "__main__":
    T.main()
