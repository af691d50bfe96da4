#!/usr/bin/python3
"""Online migration between backends (FRONTDOOR MIGRATE, docs/migration.md).

(a) per pair (lmdb->redis, redis->lmdb, lmdb->mongodb, leveldb->redis-cluster):
    keys of every type, some with TTLs, written with A/B off; then mirror on,
    MIGRATE START: every key reaches the secondary with its type, value and
    TTL (checked by reading the secondary itself after a swap to it, not only
    by VERIFY), VERIFY says 0 differ / missing / extra, INFO migrate counts.
(a2) streams with consumer groups, consumers, pending entries, deletions and
    a TTL (lmdb->redis, redis->mongodb): XINFO STREAM FULL, XRANGE, XINFO
    GROUPS and XPENDING read the same on the secondary, VERIFY finds them
    identical, the copied groups go on.
(b) writes racing the copy of the same keys (a slow RATE, three writers on
    those keys all along): the secondary ends with the application's values
    (fails without the ordering rule: the copy's older value overwrites a
    write, or a write is applied twice).
(b2) CUTOVER under load (lmdb->redis, redis->lmdb): four writers go on through it,
    none sees an error, every acknowledged write is on the new primary.
(c) VERIFY finds what differs: a key changed, deleted and added behind
    frontdoor's back on the secondary's redis-server.
(d) a value the destination cannot hold (MongoDB's 16 MB document limit) is
    reported in STATUS and the log, never skipped silently; the destination
    down mid-way: stage "waiting" with the reason, resumed when it is back,
    nothing lost.
(e) PAUSE / RESUME / ABORT, errors; the state file resumes a backfill after
    a restart.
(f) the Grafana dashboard (conf/grafana-frontdoor.json): every metric it
    queries exists on the metrics endpoint.
"""
import json
import os
import re
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import (Tests, start_frontdoor, start_redis, check, eq, skip, wait_until, frontdoor_is_redis,
                    info_fields, make_tempdir, parse, Conn, HOST, shared_mongo, shared_cluster, wait_cluster_map,
                    redis_cluster_support, free_port, need_mongodb, REPO)

T = Tests(case_timeout=60)


def need_frontdoor():
    if frontdoor_is_redis():
        skip("the binary under test is redis-server: no migration there")


def info(c, section="migrate"):
    return info_fields(c.call("INFO", section).decode())


def status(c):
    r = c.call("FRONTDOOR", "MIGRATE", "STATUS")
    return {r[i].decode(): r[i + 1] for i in range(0, len(r), 2)}


def verify(c, timeout=30):
    eq(c.call("FRONTDOOR", "MIGRATE", "VERIFY"), "OK")
    wait_until(lambda: info(c)["migrate_verify"] == "done", timeout=timeout, what="verify done")
    r = c.call("FRONTDOOR", "MIGRATE", "VERIFY", "STATUS")
    return {r[i].decode(): r[i + 1] for i in range(0, len(r), 2)}


def backend_kw(side, name, servers):
    """Directives for one side (side "" or "ab_")."""
    kw = {}
    if name == "redis":
        servers[side] = start_redis()
        kw[side + "redis_address"] = "%s:%d" % (HOST, servers[side].port)
    elif name == "redis-cluster":
        servers[side] = shared_cluster()
        servers[side].flushall()
        kw[side + "redis_cluster_seeds"] = servers[side].seeds
    elif name == "mongodb":
        kw[side + "mongo_uri"] = "mongodb://%s:%d" % (HOST, shared_mongo().port)
        kw[side + "mongo_database"] = "mig%s%d" % (side or "p", int(time.time() * 1000) % 1000000)
    else:
        kw[side + "dir"] = make_tempdir("fdtest-mig-")
        kw[side + "durability"] = "nosync"
    return kw


def start_pair(prim, sec, **extra):
    """frontdoor on `prim` with A/B off; returns (fd, the secondary's directives as CONFIG SET pairs, servers)."""
    servers = {}
    kw = dict(backend=prim)
    kw.update(backend_kw("", prim, servers))
    kw.update(extra)
    fd = start_frontdoor(**kw)
    if prim == "redis-cluster":
        wait_cluster_map(fd)
    skw = backend_kw("ab_", sec, servers)
    pairs = ["ab-secondary", sec] + [x for k, v in skw.items() for x in (k.replace("_", "-"), v)]
    return fd, pairs, servers


def mirror_on(c, pairs, *more):
    eq(c.call("CONFIG", "SET", "ab-mode", "mirror", *(list(pairs) + list(more))), "OK")


def load(c, n, prefix="k"):
    """n keys of mixed types (a fifth with TTLs); returns the commands that read each back."""
    cmds, reads = [], []
    for i in range(n):
        k = "%s:%d" % (prefix, i)
        t = i % 5
        if t == 0:
            cmds.append(("SET", k, "v%d" % i * (1 + i % 7)))
            reads.append(("GET", k))
        elif t == 1:
            cmds.append(("RPUSH", k) + tuple("e%d" % j for j in range(1 + i % 9)))
            reads.append(("LRANGE", k, "0", "-1"))
        elif t == 2:
            cmds.append(("HSET", k) + tuple(x for j in range(1 + i % 6) for x in ("f%d" % j, "%d" % (i * j))))
            reads.append(("HGETALL", k))
        elif t == 3:
            cmds.append(("SADD", k) + tuple("m%d" % j for j in range(1 + i % 8)))
            reads.append(("SMEMBERS", k))
        else:
            cmds.append(("ZADD", k) + tuple(x for j in range(1 + i % 5) for x in ("%g" % (j * 1.5), "z%d" % j)))
            reads.append(("ZRANGE", k, "0", "-1", "WITHSCORES"))
        if i % 5 == 0:
            cmds.append(("PEXPIRE", k, str(600000 + i)))
    c.send_many(cmds)
    for r in c.read_n(len(cmds)):
        check(not r.startswith(b"-"), "load", r)
    return reads


def norm(cmd, r):
    if cmd[0] in ("SMEMBERS",):
        return sorted(r)
    if cmd[0] == "HGETALL":
        return sorted(zip(r[0::2], r[1::2]))
    return r


def snapshot(c, reads):
    c.send_many(reads)
    out = [parse(x) for x in c.read_n(len(reads))]
    return [norm(cmd, r) for cmd, r in zip(reads, out)]


def ttls(c, keys):
    c.send_many([("PTTL", k) for k in keys])
    return [parse(x) for x in c.read_n(len(keys))]


def synced(c, timeout=40):
    wait_until(lambda: info(c)["migrate_stage"] == "synced", timeout=timeout, what="backfill done")
    wait_until(lambda: info(c, "ab")["ab_queue"] == "0", what="mirror settled")


def swap_to_secondary(c, pairs):
    """Make the secondary the primary (A/B off first frees an embedded folder), as docs/migration.md's cutover."""
    d = dict(zip(pairs[0::2], pairs[1::2]))
    args = ["ab-mode", "off", "backend", d.pop("ab-secondary")]
    for k, v in d.items():
        args += [k[3:], v]
    eq(c.call("CONFIG", "SET", *args), "OK")


def pair_case(prim, sec, n=200):
    def case():
        need_frontdoor()
        if "mongodb" in (prim, sec):
            need_mongodb()
        if "redis-cluster" in (prim, sec):
            why = redis_cluster_support()
            if why:
                skip(why)
        fd, pairs, servers = start_pair(prim, sec)
        with fd.conn() as c:
            reads = load(c, n)
            keys = [r[1] for r in reads]
            mirror_on(c, pairs)
            if sec == "redis-cluster":
                wait_until(lambda: info(c, "backends").get("backend_secondary") == "redis-cluster", what="secondary")
                time.sleep(0.5)
            eq(c.call("FRONTDOOR", "MIGRATE", "START", "BATCH", "50"), "OK")
            synced(c)
            m = info(c)
            eq((m["migrate_keys_copied"], m["migrate_keys_failed"]), (str(n), "0"), "every key copied: %s" % m)
            eq(m["migrate_keys_total"], str(n), "DBSIZE at the start")
            check(int(m["migrate_bytes_copied"]) > n * 10, "bytes counted", m)
            v = verify(c)
            eq((v["checked"], v["identical"], v["differ"], v["missing"], v["extra"]),
               (str(n).encode(), str(n).encode(), b"0", b"0", b"0"), "verify: %r" % v)
            want, want_ttl = snapshot(c, reads), ttls(c, keys)
            swap_to_secondary(c, pairs)
            eq(info(c, "backends")["backend_primary"], sec, "swapped")
            if sec == "redis-cluster":
                wait_cluster_map(fd)
            got, got_ttl = snapshot(c, reads), ttls(c, keys)
            for k, w, g in zip(keys, want, got):
                eq(g, w, "key %s on the secondary" % k)
            for k, w, g in zip(keys, want_ttl, got_ttl):
                check((w < 0 and g == w) or (w > 0 and abs(w - g) < 5000), "TTL of %s: %r vs %r" % (k, w, g))
    case.__name__ = "copies_%s_to_%s" % (prim.replace("-", "_"), sec.replace("-", "_"))
    T.add(case.__name__, case, timeout=90)


for _p, _s in (("lmdb", "redis"), ("redis", "lmdb"), ("lmdb", "mongodb"), ("leveldb", "redis-cluster")):
    pair_case(_p, _s)


def load_streams(c):
    """Streams of every shape: plain (several listpacks), with consumer groups,
    consumers, pending entries and deletions (and a TTL), an empty one with a
    group. Returns (keys, the reads that show their whole state)."""
    cmds = [("XADD", "st:plain", "%d-%d" % (100 + i // 2, i % 2), "a", str(i), "b", "x" * (i % 40))
            for i in range(250)]
    cmds += [("XADD", "st:groups", "%d-0" % (i + 1), "f", "v%d" % i) for i in range(40)]
    cmds += [("XGROUP", "CREATE", "st:groups", "g1", "0"),
             ("XGROUP", "CREATE", "st:groups", "g2", "$", "ENTRIESREAD", "40"),
             ("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "5", "STREAMS", "st:groups", ">"),
             ("XREADGROUP", "GROUP", "g1", "bob", "COUNT", "3", "STREAMS", "st:groups", ">"),
             ("XACK", "st:groups", "g1", "2-0"),
             ("XCLAIM", "st:groups", "g1", "carol", "0", "3-0", "RETRYCOUNT", "4"),
             ("XGROUP", "CREATECONSUMER", "st:groups", "g2", "dave"),
             ("XDEL", "st:groups", "20-0", "21-0", "40-0"),
             ("PEXPIRE", "st:groups", "600000"),
             ("XGROUP", "CREATE", "st:empty", "g", "$", "MKSTREAM")]
    c.send_many(cmds)
    for r in c.read_n(len(cmds)):
        check(not r.startswith(b"-"), "stream load", r)
    keys = ["st:plain", "st:groups", "st:empty"]
    reads = []
    for k in keys:
        reads += [("XINFO", "STREAM", k, "FULL"), ("XRANGE", k, "-", "+"), ("XINFO", "GROUPS", k)]
    reads += [("XPENDING", "st:groups", "g1"), ("XPENDING", "st:groups", "g2")]
    return keys, reads


def stream_case(prim, sec):
    def case():
        need_frontdoor()
        if "mongodb" in (prim, sec):
            need_mongodb()
        fd, pairs, servers = start_pair(prim, sec)
        with fd.conn() as c:
            keys, reads = load_streams(c)
            want, want_ttl = snapshot(c, reads), ttls(c, keys)
            dumps = [parse(c.cmd("DUMP", k)) for k in keys]
            check(all(isinstance(d, bytes) for d in dumps), "DUMP of each stream on the primary", dumps)
            mirror_on(c, pairs)
            eq(c.call("FRONTDOOR", "MIGRATE", "START"), "OK")
            synced(c)
            m = info(c)
            eq((m["migrate_keys_copied"], m["migrate_keys_failed"]), ("3", "0"), "every stream copied: %s" % m)
            v = verify(c)
            eq((v["identical"], v["differ"], v["missing"], v["extra"]), (b"3", b"0", b"0", b"0"), "verify: %r" % v)
            if sec == "redis":
                # VERIFY reads streams by content: a consumer added behind
                # frontdoor's back differs, removed again is identical
                with servers["ab_"].conn() as r:
                    r.cmd("XGROUP", "CREATECONSUMER", "st:groups", "g2", "eve")
                    v = verify(c)
                    eq((v["identical"], v["differ"]), (b"2", b"1"), "verify after a change: %r" % v)
                    r.cmd("XGROUP", "DELCONSUMER", "st:groups", "g2", "eve")
                v = verify(c)
                eq((v["identical"], v["differ"]), (b"3", b"0"), "verify after undoing it: %r" % v)
            swap_to_secondary(c, pairs)
            eq(info(c, "backends")["backend_primary"], sec, "swapped")
            got, got_ttl = snapshot(c, reads), ttls(c, keys)
            for r, w, g in zip(reads, want, got):
                eq(g, w, "%s on the secondary" % (r,))
            check(got_ttl[0] == -1 and got_ttl[2] == -1 and abs(got_ttl[1] - want_ttl[1]) < 5000,
                  "TTLs %r vs %r" % (got_ttl, want_ttl))
            # the copy is a working stream: groups go on where they were
            eq(parse(c.cmd("XREADGROUP", "GROUP", "g1", "bob", "COUNT", "1", "STREAMS", "st:groups", ">"))[0][1][0][0],
               b"9-0", "g1's next entry on the secondary")
    case.__name__ = "copies_streams_%s_to_%s" % (prim.replace("-", "_"), sec.replace("-", "_"))
    T.add(case.__name__, case, timeout=90)


for _p, _s in (("lmdb", "redis"), ("redis", "mongodb")):
    stream_case(_p, _s)


@T.case(timeout=90)
def writes_racing_the_copy_win():
    """A writer changes the keys being copied (INCR, RPUSH, SET, DEL/recreate) during a slow backfill:
    afterwards both sides hold the application's values. The copy of a key whose write reached the
    secondary meanwhile is read again (keys_recopied > 0); without that rule the older copied value
    overwrites the write and VERIFY/the swap show differing keys."""
    need_frontdoor()
    # a network primary: between a key's DUMP and its RESTORE, writes run there and their copies reach
    # the (embedded) secondary first
    # (clients pinned to pooled connections: a write and the DUMP of its key travel on different ones)
    fd, pairs, servers = start_pair("redis", "lmdb", redis_pool_size=4, redis_pool_affinity="client")
    with fd.conn() as c:
        n = 30                                   # writer j writes the keys k = j (mod 3): one client per key
        c.send_many([("SET", "c:%d" % i, "0") for i in range(n)] + [("RPUSH", "l:%d" % i, "a") for i in range(n)])
        c.read_n(2 * n)
        mirror_on(c, pairs)
        stop = threading.Event()
        counts = [0] * 3

        def writer(wid):
            with fd.conn() as w:
                i = wid
                while not stop.is_set():
                    k = i % n
                    w.send_many([("INCR", "c:%d" % k), ("RPUSH", "l:%d" % k, str(i)), ("SET", "s:%d" % k, str(i))])
                    w.read_n(3)
                    counts[wid] += 1
                    i += 3
        ts = [threading.Thread(target=writer, args=(j,)) for j in range(3)]
        for t in ts:
            t.start()
        try:
            eq(c.call("FRONTDOOR", "MIGRATE", "START", "RATE", "40", "BATCH", "5"), "OK")
            synced(c, timeout=60)
        finally:
            stop.set()
            for t in ts:
                t.join()
        synced(c)
        m = info(c)
        check(int(m["migrate_keys_recopied"]) > 0, "copies done again after a racing write", m)
        eq(m["migrate_keys_failed"], "0")
        v = verify(c)
        eq((v["differ"], v["missing"], v["extra"]), (b"0", b"0", b"0"), "verify after the race: %r" % v)
        keys = [("GET", "c:%d" % i) for i in range(n)] + [("LRANGE", "l:%d" % i, "0", "-1") for i in range(n)] + \
               [("GET", "s:%d" % i) for i in range(n)]
        want = snapshot(c, keys)
        eq(sum(int(x) for x in want[:n]), sum(counts), "every INCR counted on the primary")
        swap_to_secondary(c, pairs)
        got = snapshot(c, keys)
        for k, w, g in zip(keys, want, got):
            eq(g, w, "%s %s on the secondary" % k[:2])


def cutover_case(prim, sec):
    def case():
        """CUTOVER under load: writers keep going (INCR, RPUSH) through it and see no error; afterwards
        the secondary is the primary, A/B is off, every acknowledged write is there, the stage is done."""
        need_frontdoor()
        fd, pairs, servers = start_pair(prim, sec)
        with fd.conn() as c:
            load(c, 100)
            mirror_on(c, pairs)
            eq(c.call("FRONTDOOR", "MIGRATE", "START"), "OK")
            synced(c)
            check(c.cmd("FRONTDOOR", "MIGRATE", "CUTOVER", "NOW").startswith(b"-ERR syntax error"))
            stop = threading.Event()
            acked, errors = [0] * 4, []

            def writer(w_id):
                with fd.conn() as w:
                    while not stop.is_set():
                        w.send_many([("INCR", "cnt:%d" % w_id), ("RPUSH", "lst:%d" % w_id, "x")])
                        r = [parse(x) for x in w.read_n(2, timeout=10)]
                        if any(isinstance(x, Exception) or isinstance(x, bytes) and x.startswith(b"ERR") for x in r) \
                                or not all(isinstance(x, int) for x in r):
                            errors.append(r)
                        else:
                            acked[w_id] += 1
            ts = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
            for t in ts:
                t.start()
            try:
                time.sleep(0.3)
                eq(c.call("FRONTDOOR", "MIGRATE", "CUTOVER"), "OK")
                time.sleep(0.3)
            finally:
                stop.set()
                for t in ts:
                    t.join()
            eq(errors, [], "no client saw an error")
            eq(info(c)["migrate_stage"], "done")
            eq(info(c, "backends")["backend_primary"], sec)
            eq(c.call("CONFIG", "GET", "ab-mode"), [b"ab-mode", b"off"])
            eq(c.call("CONFIG", "GET", "backend"), [b"backend", sec.encode()])
            for i in range(4):
                eq(c.call("GET", "cnt:%d" % i), str(acked[i]).encode(), "every INCR of writer %d" % i)
                eq(c.call("LLEN", "lst:%d" % i), acked[i], "every RPUSH of writer %d" % i)
            eq(c.call("GET", "k:0"), b"v0", "the backfilled data")
            check("migrate: done: cutover done" in fd.log(), "logged")
    case.__name__ = "cutover_%s_to_%s_under_load" % (prim, sec)
    T.add(case.__name__, case, timeout=60)


for _p, _s in (("lmdb", "redis"), ("redis", "lmdb")):
    cutover_case(_p, _s)


@T.case(timeout=60)
def verify_reports_differing_missing_extra():
    need_frontdoor()
    fd, pairs, servers = start_pair("lmdb", "redis")
    with fd.conn() as c:
        load(c, 50)
        mirror_on(c, pairs)
        eq(c.call("FRONTDOOR", "MIGRATE", "START"), "OK")
        synced(c)
        with Conn(servers["ab_"].port) as r:
            r.call("RPUSH", "k:1", "changed")
            r.call("DEL", "k:2")
            r.call("SET", "only-here", "x")
            r.call("PERSIST", "k:5")
        v = verify(c)
        eq((v["differ"], v["missing"], v["extra"]), (b"2", b"1", b"1"), "verify: %r" % v)
        why = {k.decode(): w.decode() for k, w in v["keys"]}
        eq(why, {"k:1": "the values differ", "k:2": "missing on the secondary", "only-here": "extra: only on the secondary",
                 "k:5": why.get("k:5", "?")})
        check(why["k:5"].startswith("the TTLs differ: "), "the TTL", why)
        m = info(c)
        eq((m["migrate_verify_differ"], m["migrate_verify_missing"], m["migrate_verify_extra"]), ("2", "1", "1"))


@T.case(timeout=90)
def too_big_for_mongodb_is_reported():
    need_frontdoor()
    need_mongodb()
    fd, pairs, servers = start_pair("lmdb", "mongodb", proto_max_bulk_len="64mb")
    with fd.conn() as c:
        load(c, 20)
        eq(c.call("SET", "huge", "x" * (17 * 1024 * 1024)), "OK")
        mirror_on(c, pairs)
        eq(c.call("FRONTDOOR", "MIGRATE", "START"), "OK")
        synced(c, timeout=60)
        s = status(c)
        eq((s["keys_copied"], s["keys_failed"]), (b"20", b"1"), "the big key failed, the others copied: %r" % s)
        eq(len(s["failed"]), 1)
        eq(s["failed"][0][0], b"huge")
        check(b"16" in s["failed"][0][1] or b"large" in s["failed"][0][1] or b"limit" in s["failed"][0][1],
              "why it failed", s["failed"])
        log = fd.log()
        check("migrate: key 'huge'" in log and "not copied" in log, "logged", log[-2000:])


@T.case(timeout=90)
def destination_down_waits_and_resumes():
    need_frontdoor()
    fd, pairs, servers = start_pair("lmdb", "redis", ab_backend_timeout="300")
    with fd.conn() as c:
        reads = load(c, 400)
        mirror_on(c, pairs)
        eq(c.call("FRONTDOOR", "MIGRATE", "START", "RATE", "300", "BATCH", "20"), "OK")
        wait_until(lambda: int(info(c)["migrate_keys_copied"]) > 50, what="some keys copied")
        r = servers["ab_"]
        os.kill(r.proc.pid, signal.SIGSTOP)      # down: it no longer answers (and keeps its data)
        wait_until(lambda: info(c)["migrate_stage"] == "waiting", timeout=10, what="waiting")
        check("unavailable" in info(c)["migrate_waiting"], "the reason", info(c))
        eq(status(c)["stage"], b"waiting")
        # writes while it is down: their copies fail, and the keys are copied again later
        for i in range(0, 400, 37):
            c.call("APPEND", "k:%d" % (i - i % 5), "-more")
        os.kill(r.proc.pid, signal.SIGCONT)
        wait_until(lambda: info(c)["migrate_stage"] in ("backfill", "synced"), timeout=15, what="resumed")
        synced(c, timeout=40)
        eq(info(c)["migrate_keys_failed"], "0")
        v = verify(c)
        eq((v["differ"], v["missing"], v["extra"]), (b"0", b"0", b"0"), "nothing lost: %r" % v)
        log = fd.log()
        check("migrate: waiting" in log and "resumed" in log, "a log line per stage", log[-2000:])
        # synced, and the destination goes away again: the mirrored writes it missed are copied again
        lost = int(info(c)["migrate_copies_lost"])
        os.kill(r.proc.pid, signal.SIGSTOP)
        for i in range(3, 400, 41):
            c.call("APPEND", "k:%d" % (i - i % 5), "-again")
        time.sleep(0.8)                          # past ab-backend-timeout: the copies fail
        os.kill(r.proc.pid, signal.SIGCONT)
        wait_until(lambda: int(info(c)["migrate_copies_lost"]) > lost, timeout=10, what="lost copies counted")
        wait_until(lambda: info(c)["migrate_stage"] == "synced" and info(c)["migrate_queue"] == "0" and
                   info(c)["migrate_inflight"] == "0", timeout=20, what="copied again")
        v = verify(c)
        eq((v["differ"], v["missing"], v["extra"]), (b"0", b"0", b"0"), "nothing lost after synced: %r" % v)


@T.case(timeout=60)
def pause_resume_abort_and_errors():
    need_frontdoor()
    fd, pairs, servers = start_pair("lmdb", "redis")
    with fd.conn() as c:
        err = c.cmd("FRONTDOOR", "MIGRATE", "START")
        check(err.startswith(b"-ERR FRONTDOOR MIGRATE needs ab-mode mirror"), err)
        load(c, 300)
        mirror_on(c, pairs, "ab-mirror-writes", "no")
        check(c.cmd("FRONTDOOR", "MIGRATE", "START").startswith(b"-ERR FRONTDOOR MIGRATE needs every write mirrored"))
        eq(c.call("CONFIG", "SET", "ab-mirror-writes", "yes"), "OK")
        check(c.cmd("FRONTDOOR", "MIGRATE", "START", "RATE", "-1").startswith(b"-ERR value is out of range"))
        check(c.cmd("FRONTDOOR", "MIGRATE", "START", "FAST").startswith(b"-ERR syntax error"))
        eq(c.call("FRONTDOOR", "MIGRATE", "START", "RATE", "100", "BATCH", "10"), "OK")
        check(c.cmd("FRONTDOOR", "MIGRATE", "START").startswith(b"-ERR a migration is under way"))
        eq(c.call("FRONTDOOR", "MIGRATE", "PAUSE"), "OK")
        eq(info(c)["migrate_stage"], "paused")
        a = int(info(c)["migrate_keys_copied"])
        time.sleep(0.5)
        b = int(info(c)["migrate_keys_copied"])
        check(b - a <= 10, "paused: at most the copies in flight finish", a, b)
        eq(c.call("FRONTDOOR", "MIGRATE", "RATE", "0"), "OK")
        eq(c.call("FRONTDOOR", "MIGRATE", "RESUME"), "OK")
        synced(c)
        eq(info(c)["migrate_keys_copied"], "300")
        check(c.cmd("FRONTDOOR", "MIGRATE", "RESUME").startswith(b"-ERR the migration is not paused"))
        eq(c.call("FRONTDOOR", "MIGRATE", "ABORT"), "OK")
        eq(info(c)["migrate_stage"], "aborted")
        check(c.cmd("FRONTDOOR", "MIGRATE", "ABORT").startswith(b"-ERR no migration is under way"))
        help_ = c.call("FRONTDOOR", "MIGRATE", "HELP")
        check(any("VERIFY" in (x.decode() if isinstance(x, bytes) else x) for x in help_), help_)


@T.case(timeout=90)
def resumes_after_a_restart():
    """The state file keeps the SCAN cursor of the last batch done: a frontdoor restarted mid-way
    (same config) goes on from there and every key ends on the secondary."""
    need_frontdoor()
    state = os.path.join(make_tempdir("fdtest-migstate-"), "m.state")
    servers = {}
    kw = dict(backend="lmdb", migrate_state_file=state)
    kw.update(backend_kw("", "lmdb", servers))
    skw = backend_kw("ab_", "redis", servers)
    fd = start_frontdoor(**kw)
    with fd.conn() as c:
        load(c, 600)
    fd.stop()
    kw.update(skw)
    kw.update(ab_mode="mirror", ab_secondary="redis")
    fd = start_frontdoor(**kw)
    with fd.conn() as c:
        eq(c.call("FRONTDOOR", "MIGRATE", "START", "RATE", "400", "BATCH", "25"), "OK")
        wait_until(lambda: int(info(c)["migrate_keys_copied"]) >= 150, what="a part copied")
    fd.stop()
    with open(state) as f:
        line = f.read().split()
    eq(line[:3], ["frontdoor-migrate", "1", "backfill"], "the state file")
    check(line[3] != "0" and int(line[6]) >= 50, "a cursor and a count", line)
    fd = start_frontdoor(**kw)
    with fd.conn() as c:
        wait_until(lambda: info(c)["migrate_stage"] in ("backfill", "synced"), what="resumed")
        check("resumed after a restart" in fd.log(), "logged")
        eq(c.call("FRONTDOOR", "MIGRATE", "RATE", "0"), "OK")
        synced(c)
        v = verify(c)
        eq((v["checked"], v["differ"], v["missing"], v["extra"]), (b"600", b"0", b"0", b"0"), "all there: %r" % v)


@T.case
def grafana_dashboard_names_existing_metrics():
    need_frontdoor()
    path = os.path.join(REPO, "conf", "grafana-frontdoor.json")
    with open(path) as f:
        dash = json.load(f)
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    check(len(exprs) >= 8, "panels with queries", len(exprs))
    names = set()
    for e in exprs:
        names.update(n for n in re.findall(r"\b(frontdoor_[a-z_]+)", e))
    port = free_port()
    fd, pairs, servers = start_pair("lmdb", "redis", metrics_port=str(port))
    with fd.conn() as c:
        mirror_on(c, pairs)
        c.call("SET", "a", "1")
        import urllib.request
        page = urllib.request.urlopen("http://%s:%d/metrics" % (HOST, port), timeout=5).read().decode()
    have = set(re.findall(r"^(frontdoor_[a-z_]+)", page, re.M))
    for n in sorted(names):
        base = re.sub(r"_(bucket|sum|count)$", "", n)
        check(n in have or base in have, "the dashboard queries %s, which the endpoint does not serve" % n)
    check("frontdoor_migrate_keys_total" in names and "frontdoor_migrate_eta_seconds" in names, "migration panels", names)


if __name__ == "__main__":
    T.main()
