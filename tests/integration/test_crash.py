#!/usr/bin/python3
"""test_crash — acknowledged writes survive SIGKILL, on every embedded backend.

For each of lmdb and leveldb, with `durability sync`, several rounds on ONE
data folder:

  1. start frontdoor on the folder;
  2. writers on several connections pipeline SET k:<...> <unique value>,
     INCR ctr:<writer>, and where the server has them (COMMAND INFO) RPUSH
     list:<writer> <unique element> and HSET hash:<writer> <field> <unique
     value); every reply read is an acknowledgement and is recorded;
  3. SIGKILL frontdoor at a random moment of the load;
  4. restart it on the same folder and check every write acknowledged in
     this round AND in all earlier rounds: values equal, counters >= the
     highest acknowledged value, list elements present in acknowledgement
     order, hash fields equal; then that the store answers normally (a full
     SCAN works and agrees with DBSIZE, new writes work).

Knobs: FD_CRASH_ROUNDS (default 4 per backend), FD_SEED.
"""

import os
import random
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import (Tests, Conn, ConnClosed, ReplyTimeout, Err, parse, check, eq, skip,  # noqa: E402
                    start_frontdoor, make_tempdir, frontdoor_is_redis, missing_prerequisite)

T = Tests("test_crash.py", case_timeout=90)
ROUNDS = int(os.environ.get("FD_CRASH_ROUNDS", "4"))
SEED = int(os.environ.get("FD_SEED", str(int(time.time() * 1000) % 1000000007)))
WRITERS = 4
PIPELINE = 8          # commands in flight per connection: several per loop turn


def has_command(conn, name):
    r = parse(conn.cmd("COMMAND", "INFO", name))
    return isinstance(r, list) and len(r) == 1 and r[0] is not None


class Ledger:
    """Everything acknowledged so far, across rounds (one backend)."""

    def __init__(self):
        self.strings = {}      # key -> value
        self.counters = {}     # key -> highest acknowledged INCR result
        self.lists = {}        # key -> [elements in ack order]
        self.hashes = {}       # key -> {field: value}
        self.lock = threading.Lock()
        self.errors = []       # error replies (none expected)
        self.acks = 0


def writer(port, wid, rnd_seed, ledger, round_no, stop, cmds):
    rnd = random.Random(rnd_seed)
    try:
        c = Conn(port, timeout=10)
    except OSError:
        return
    seq = 0
    try:
        while not stop.is_set():
            batch = []
            for _ in range(PIPELINE):
                seq += 1
                tag = "%d-%d-%d-%08x" % (round_no, wid, seq, rnd.getrandbits(32))
                kind = rnd.choice(cmds)
                if kind == "set":
                    key = "k:%d:%d:%d" % (round_no, wid, seq)
                    batch.append((kind, key, tag, ("SET", key, "v" + tag * rnd.randint(1, 20))))
                elif kind == "incr":
                    key = "ctr:%d" % wid
                    batch.append((kind, key, None, ("INCR", key)))
                elif kind == "rpush":
                    key = "list:%d" % wid
                    batch.append((kind, key, tag, ("RPUSH", key, "e" + tag)))
                else:
                    key = "hash:%d" % wid
                    field = "f%d-%d" % (round_no, seq)   # unique: an unacknowledged later
                                                         # HSET may have landed, never on it
                    batch.append((kind, key, (field, "h" + tag), ("HSET", key, field, "h" + tag)))
            c.send_many([b[3] for b in batch])
            for kind, key, extra, cmd in batch:
                r = parse(c.read())
                with ledger.lock:
                    if isinstance(r, Err):
                        ledger.errors.append("%s -> %s" % (cmd[:2], r))
                        continue
                    ledger.acks += 1
                    if kind == "set":
                        ledger.strings[key] = cmd[2]
                    elif kind == "incr":
                        if r > ledger.counters.get(key, 0):
                            ledger.counters[key] = r
                    elif kind == "rpush":
                        ledger.lists.setdefault(key, []).append(cmd[2])
                    else:
                        ledger.hashes.setdefault(key, {})[extra[0]] = extra[1]
    except (ConnClosed, ReplyTimeout, OSError):
        pass                     # the server was killed: what was read is what counts
    finally:
        c.close()


def b2s(v):
    return v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else v


def verify(fd, ledger, cmds, what):
    with fd.conn(timeout=30) as c:
        keys = sorted(ledger.strings)
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            got = parse(c.cmd("MGET", *chunk))
            for k, v in zip(chunk, got):
                if b2s(v) != ledger.strings[k]:
                    raise AssertionError("%s: acknowledged SET %s lost or changed: got %r"
                                         % (what, k, v if v is None else v[:60]))
        for k, n in ledger.counters.items():
            v = parse(c.cmd("GET", k))
            check(v is not None and int(v) >= n,
                  "%s: counter %s is %r, %d increments were acknowledged" % (what, k, v, n))
        if "rpush" in cmds:
            for k, elems in ledger.lists.items():
                got = [b2s(x) for x in parse(c.cmd("LRANGE", k, 0, -1))]
                pos = {e: i for i, e in enumerate(got)}
                check(len(pos) == len(got), "%s: duplicate elements in %s" % (what, k))
                last = -1
                for e in elems:
                    check(e in pos, "%s: acknowledged RPUSH %s %s lost" % (what, k, e))
                    check(pos[e] > last, "%s: %s out of order in %s" % (what, e, k))
                    last = pos[e]
        if "hset" in cmds:
            for k, fields in ledger.hashes.items():
                names = sorted(fields)
                for i in range(0, len(names), 500):
                    chunk = names[i:i + 500]
                    got = parse(c.cmd("HMGET", k, *chunk))
                    for f, v in zip(chunk, got):
                        check(b2s(v) == fields[f], "%s: acknowledged HSET %s %s lost: got %r, want %r"
                              % (what, k, f, v, fields[f]))
        # the store answers normally: a full SCAN, DBSIZE agreeing, new writes
        dbsize = parse(c.cmd("DBSIZE"))
        seen = set()
        cursor = b"0"
        calls = 0
        while True:
            r = parse(c.cmd("SCAN", cursor, "COUNT", 1000))
            check(isinstance(r, list) and len(r) == 2, "%s: SCAN reply" % what, r)
            cursor = r[0]
            seen.update(r[1])
            calls += 1
            if cursor == b"0" or calls > 100000:
                break
        eq(len(seen), dbsize, "%s: keys seen by a full SCAN vs DBSIZE" % what)
        want_keys = len(ledger.strings) + len(ledger.counters) + \
            (len(ledger.lists) if "rpush" in cmds else 0) + (len(ledger.hashes) if "hset" in cmds else 0)
        check(dbsize >= want_keys, "%s: DBSIZE %d below the %d keys acknowledged" % (what, dbsize, want_keys))
        for k in list(ledger.strings)[:20]:
            eq(c.cmd("TYPE", k), b"+string\r\n", "%s: TYPE %s" % (what, k))
        eq(c.cmd("SET", "after-crash", "ok"), b"+OK\r\n", "%s: a write after restart" % what)
        eq(c.cmd("GET", "after-crash"), b"$2\r\nok\r\n", "%s: read back" % what)
        return dbsize


def crash_rounds(backend):
    # against redis-server (FRONTDOOR_BIN=redis-server, to validate the test)
    # `durability sync` becomes appendonly + appendfsync always: the same promise
    rnd = random.Random("%s-%d" % (backend, SEED))
    d = make_tempdir("fdtest-crash-%s-" % backend)
    try:
        fd = start_frontdoor(datadir=d, backend=backend, durability="sync")
    except RuntimeError as e:
        if "unknown backend" in str(e):
            missing_prerequisite("backend %s is not built in" % backend)
        raise
    with fd.conn() as c:
        cmds = ["set", "set", "incr"]
        if has_command(c, "rpush"):
            cmds.append("rpush")
        if has_command(c, "hset"):
            cmds.append("hset")
    ledger = Ledger()
    summary = []
    for rno in range(ROUNDS):
        if rno:
            fd.start()
        stop = threading.Event()
        threads = [threading.Thread(target=writer, daemon=True,
                                    args=(fd.port, w, rnd.getrandbits(32), ledger, rno, stop, cmds))
                   for w in range(WRITERS)]
        acks0 = ledger.acks
        for t in threads:
            t.start()
        delay = rnd.uniform(0.3, 1.5)
        time.sleep(delay)
        fd.kill()                                   # SIGKILL, mid-load
        stop.set()
        for t in threads:
            t.join(15)
        check(not ledger.errors, "%s round %d: error replies under load" % (backend, rno),
              ledger.errors[:5])
        check(ledger.acks > acks0, "%s round %d: no write was acknowledged in %.2fs"
              % (backend, rno, delay))
        fd.start()                                  # same folder, new port
        n = verify(fd, ledger, cmds, "%s round %d" % (backend, rno))
        summary.append("%.2fs/%d acks/%d keys" % (delay, ledger.acks - acks0, n))
        fd.kill()
    print("      %s (%s; seed %d): %s" % (backend, "+".join(sorted(set(cmds))), SEED,
                                          ", ".join(summary)))


@T.case
def sigkill_lmdb():
    crash_rounds("lmdb")


@T.case
def sigkill_leveldb():
    crash_rounds("leveldb")


if __name__ == "__main__":
    T.main()
