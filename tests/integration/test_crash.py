#!/usr/bin/python3
"""test_crash — acknowledged writes survive SIGKILL, on every embedded backend.

For each of lmdb and leveldb, with `durability sync` and with `nosync`,
several rounds on ONE data folder:

  1. start frontdoor on the folder;
  2. writers on several connections pipeline SET k:<...> <unique value>,
     INCR ctr:<writer>, SET of a few keys overwritten again and again with
     versioned values, MSET of a group of keys to one versioned value, a
     key SET once then RENAMEd back and forth between two names, and where
     the server has them (COMMAND INFO) RPUSH list:<writer> <unique
     element> and HSET hash:<writer> <field> <unique value>, and
     transactions MULTI; INCR a; INCR b; SET c <n>; EXEC on three keys of
     the round and writer (the n-th EXEC leaves a = b = c = n); every reply
     read is an acknowledgement and is recorded;
  3. SIGKILL frontdoor at a random moment of the load (after the round's
     first acknowledgement);
  4. restart it on the same folder and check every write acknowledged in
     this round AND in all earlier rounds: values equal, counters >= the
     highest acknowledged value, an overwritten key at the acknowledged
     version or a later one (never a stale value), each MSET group all at
     one version (never half of one), each renamed key at exactly one of its
     two names, list elements present in acknowledgement order, hash fields
     equal, each transaction's three keys all absent or a = b = c (never
     part of an EXEC) and at least the last acknowledged EXEC's n; then that the store answers normally (a full SCAN works and
     agrees with DBSIZE, new writes work).

The power_loss_* cases do the same on a data folder mounted through
crashfs.py, which forgets every byte not fsync'ed when it is unmounted after
the SIGKILL: with `sync` nothing acknowledged may be lost; with `nosync`
(the control) something must be lost, and the store must still open.

Knobs: FD_CRASH_ROUNDS (default 4 per backend), FD_SEED.
"""

import atexit
import os
import random
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import (Tests, Conn, ConnClosed, ReplyTimeout, Err, parse, check, eq, skip,  # noqa: E402
                    start_frontdoor, make_tempdir, frontdoor_is_redis, missing_prerequisite,
                    wait_until, _pdeathsig)

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
        self.strings = {}      # key -> value (written once)
        self.counters = {}     # key -> highest acknowledged INCR result
        self.lists = {}        # key -> [elements in ack order]
        self.hashes = {}       # key -> {field: value}
        self.over = {}         # overwritten key -> (round, seq) of the last acknowledged SET
        self.msets = {}        # group name -> (round, seq) of the last acknowledged MSET
        self.renames = {}      # (a, b) -> (value, SET acknowledged?) of a key RENAMEd back and forth
        self.tx = {}           # transaction key prefix -> n of the last acknowledged EXEC (0: none yet)
        self.lock = threading.Lock()
        self.errors = []       # error replies (none expected)
        self.acks = 0


MSET_WIDTH = 3


def over_value(rno, seq, rnd):
    return "o:%d:%d:%s" % (rno, seq, "x" * rnd.randint(0, 300))


def parse_version(v, prefix):
    """b"o:3:17:xxx" -> (3, 17)"""
    if v is None:
        return None
    f = v.decode().split(":")
    check(f[0] == prefix and len(f) >= 3, "not a value this test wrote: %r" % v[:60])
    return (int(f[1]), int(f[2]))


def writer(port, wid, rnd_seed, ledger, round_no, stop, cmds):
    rnd = random.Random(rnd_seed)
    try:
        c = Conn(port, timeout=10)
    except OSError:
        return
    seq = 0
    # this round's key that moves: SET once, then RENAME a->b, b->a, ... (in
    # pipeline order on this one connection, so each RENAME finds its source)
    ra, rb = "r:%d:%d:a" % (round_no, wid), "r:%d:%d:b" % (round_no, wid)
    rval = "R-%d-%d-%08x" % (round_no, wid, rnd.getrandbits(32))
    rpos = None               # where the last RENAME sent leaves it
    # this round's transaction keys: the n-th EXEC leaves tx:..:a = b = c = n
    txk = "tx:%d:%d:" % (round_no, wid)
    txn = 0                   # EXECs sent
    try:
        while not stop.is_set():
            batch = []
            for _ in range(PIPELINE):
                seq += 1
                tag = "%d-%d-%d-%08x" % (round_no, wid, seq, rnd.getrandbits(32))
                kind = rnd.choice(cmds)
                if kind == "rename" and rpos is None:
                    rpos = ra
                    batch.append(("rename-set", (ra, rb), rval, ("SET", ra, rval)))
                    continue
                if kind == "multi":
                    txn += 1
                    with ledger.lock:     # sent: verify checks all-or-nothing from now on
                        ledger.tx.setdefault(txk, 0)
                    batch.append(("tx-queue", txk, "OK", ("MULTI",)))
                    batch.append(("tx-queue", txk, "QUEUED", ("INCR", txk + "a")))
                    batch.append(("tx-queue", txk, "QUEUED", ("INCR", txk + "b")))
                    batch.append(("tx-queue", txk, "QUEUED", ("SET", txk + "c", str(txn))))
                    batch.append(("tx-exec", txk, txn, ("EXEC",)))
                elif kind == "set":
                    key = "k:%d:%d:%d" % (round_no, wid, seq)
                    batch.append((kind, key, tag, ("SET", key, "v" + tag * rnd.randint(1, 20))))
                elif kind == "incr":
                    key = "ctr:%d" % wid
                    batch.append((kind, key, None, ("INCR", key)))
                elif kind == "over":
                    key = "ow:%d:%d" % (wid, rnd.randrange(4))
                    batch.append((kind, key, (round_no, seq), ("SET", key, over_value(round_no, seq, rnd))))
                elif kind == "mset":
                    g = "m:%d" % wid
                    v = over_value(round_no, seq, rnd).replace("o:", "m:", 1)
                    args = ("MSET",) + tuple(x for i in range(MSET_WIDTH) for x in ("%s:%d" % (g, i), v))
                    batch.append((kind, g, (round_no, seq), args))
                elif kind == "rename":
                    src, dst = (ra, rb) if rpos == ra else (rb, ra)
                    rpos = dst
                    batch.append((kind, (ra, rb), None, ("RENAME", src, dst)))
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
                    if kind == "tx-queue":
                        if r != extra:
                            ledger.errors.append("%s -> %r, not %s" % (cmd[:2], r, extra))
                    elif kind == "tx-exec":
                        if r != [extra, extra, "OK"]:
                            ledger.errors.append("EXEC #%d of %s -> %r" % (extra, key, r))
                        else:
                            ledger.tx[key] = extra
                    elif kind == "set":
                        ledger.strings[key] = cmd[2]
                    elif kind == "incr":
                        if r > ledger.counters.get(key, 0):
                            ledger.counters[key] = r
                    elif kind == "over":
                        ledger.over[key] = extra
                    elif kind == "mset":
                        ledger.msets[key] = extra
                    elif kind == "rename-set":
                        ledger.renames[key] = (extra, True)
                    elif kind == "rename":
                        pass            # checked as all-or-nothing, wherever it is
                    elif kind == "rpush":
                        ledger.lists.setdefault(key, []).append(cmd[2])
                    else:
                        ledger.hashes.setdefault(key, {})[extra[0]] = extra[1]
            # a SET of the moving key that was sent but not acknowledged may
            # have landed: record the pair so that verify checks all-or-nothing
            with ledger.lock:
                if rpos is not None and (ra, rb) not in ledger.renames:
                    ledger.renames[(ra, rb)] = (rval, False)
    except (ConnClosed, ReplyTimeout, OSError):
        with ledger.lock:
            if rpos is not None and (ra, rb) not in ledger.renames:
                ledger.renames[(ra, rb)] = (rval, False)
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
        for k, acked in ledger.over.items():
            v = parse_version(parse(c.cmd("GET", k)), "o")
            check(v is not None and v >= acked,
                  "%s: overwritten key %s holds version %r, older than the acknowledged %r "
                  "(a stale value came back)" % (what, k, v, acked))
        for g, acked in ledger.msets.items():
            keys = ["%s:%d" % (g, i) for i in range(MSET_WIDTH)]
            vals = parse(c.cmd("MGET", *keys))
            check(len(set(vals)) == 1, "%s: MSET %s is half applied: %r"
                  % (what, g, [x[:20] if x else x for x in vals]))
            v = parse_version(vals[0], "m")
            check(v is not None and v >= acked, "%s: MSET group %s holds version %r, older than "
                  "the acknowledged %r" % (what, g, v, acked))
        for (ka, kb), (val, acked) in ledger.renames.items():
            got = parse(c.cmd("MGET", ka, kb))
            present = [x for x in got if x is not None]
            if acked:
                check(len(present) == 1 and b2s(present[0]) == val,
                      "%s: a key RENAMEd back and forth between %s and %s must be at exactly one "
                      "of them with its value: got %r" % (what, ka, kb, got))
            else:
                check(len(present) <= 1 and all(b2s(x) == val for x in present),
                      "%s: RENAME all-or-nothing: %s/%s hold %r" % (what, ka, kb, got))
        for k, acked in ledger.tx.items():
            a, b, cv = parse(c.cmd("MGET", k + "a", k + "b", k + "c"))
            if a is None and b is None and cv is None:
                check(acked == 0, "%s: transaction keys %s* absent, EXEC #%d was acknowledged"
                      % (what, k, acked))
                continue
            check(a is not None and a == b == cv, "%s: a transaction of %s* is part applied: "
                  "a=%r b=%r c=%r (MULTI; INCR a; INCR b; SET c n; EXEC)" % (what, k, a, b, cv))
            check(int(a) >= acked, "%s: transaction keys %s* at EXEC #%d, #%d was acknowledged"
                  % (what, k, int(a), acked))
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
        want_keys = len(ledger.strings) + len(ledger.counters) + len(ledger.over) + \
            MSET_WIDTH * len(ledger.msets) + sum(1 for _, a in ledger.renames.values() if a) + \
            3 * sum(1 for n in ledger.tx.values() if n) + \
            (len(ledger.lists) if "rpush" in cmds else 0) + (len(ledger.hashes) if "hset" in cmds else 0)
        check(dbsize >= want_keys, "%s: DBSIZE %d below the %d keys acknowledged" % (what, dbsize, want_keys))
        for k in list(ledger.strings)[:20]:
            eq(c.cmd("TYPE", k), b"+string\r\n", "%s: TYPE %s" % (what, k))
        eq(c.cmd("SET", "after-crash", "ok"), b"+OK\r\n", "%s: a write after restart" % what)
        eq(c.cmd("GET", "after-crash"), b"$2\r\nok\r\n", "%s: read back" % what)
        return dbsize


class CrashMount:
    """A crashfs.py mount (see that file): a data folder whose unsynced
    writes a "power loss" (power_loss()) throws away."""

    def __init__(self):
        self.backing = make_tempdir("fdtest-crashfs-disk-")
        self.mnt = make_tempdir("fdtest-crashfs-mnt-")
        self.proc = None
        self.dropped = []          # crashfs's line of each power loss
        _mounts.append(self)

    def mount(self):
        self.proc = subprocess.Popen(["/usr/bin/python3", CRASHFS, self.backing, self.mnt],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, preexec_fn=_pdeathsig)
        deadline = time.monotonic() + 10
        while not os.path.ismount(self.mnt):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                out = self.proc.stdout.read().decode() if self.proc.poll() is not None else ""
                self.proc.kill()
                raise RuntimeError("crashfs did not mount (exit %s): %s" % (self.proc.poll(), out[-1500:]))
            time.sleep(0.02)
        return self

    def power_loss(self):
        """Unmount: every file goes back to its content at its last fsync.
        Returns the bytes dropped. The programs using it must be dead."""
        for i in range(50):
            if subprocess.run(["umount", self.mnt], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)            # the killed server's last descriptors closing
        else:
            raise AssertionError("cannot unmount %s" % self.mnt)
        out, _ = self.proc.communicate(timeout=30)
        line = [l for l in out.decode().splitlines() if l.startswith("dropped ")]
        check(self.proc.returncode == 0 and line, "crashfs exit %s: %s" % (self.proc.returncode, out[-1500:]))
        self.dropped.append(line[0])
        return int(line[0].split()[1])

    def cleanup(self):
        if self.proc is not None and self.proc.poll() is None:
            for s in fdtest_live_servers():
                if s.dir == self.mnt:
                    s.kill()
            subprocess.run(["umount", "-l", self.mnt], capture_output=True)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


_mounts = []


def fdtest_live_servers():
    import fdtest
    return list(fdtest._live_servers)
CRASHFS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "crashfs.py")


def _cleanup_mounts():
    for m in _mounts:
        m.cleanup()
    del _mounts[:]


atexit.register(_cleanup_mounts)


def crashfs_support():
    """None if crashfs can mount here, else why not."""
    if os.geteuid() != 0:
        return "mounting a FUSE file system here needs root"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse in this kernel/container"
    r = subprocess.run(["/usr/bin/python3", "-c", "import fusepy"], capture_output=True)
    if r.returncode != 0:
        return "python3-fusepy is not installed (tests/setup-debian.sh --test)"
    return None


def crash_rounds(backend, durability="sync", power_loss=False, rounds=ROUNDS):
    """rounds of load + SIGKILL on one data folder; power_loss: the folder is
    a crashfs mount, unmounted (unsynced data dropped) after each SIGKILL.
    Every acknowledged write is checked unless durability is nosync AND the
    power is lost (the one case where losing the last writes is allowed:
    then only that the store opens and works, and that crashfs did drop
    something, so the simulation is shown to bite)."""
    # against redis-server (FRONTDOOR_BIN=redis-server, to validate the test)
    # `durability sync` becomes appendonly + appendfsync always: the same promise
    rnd = random.Random("%s-%s-%s-%d" % (backend, durability, power_loss, SEED))
    mount = None
    if power_loss:
        why = crashfs_support()
        if why:
            missing_prerequisite(why)
        mount = CrashMount().mount()
        d = mount.mnt
    else:
        d = make_tempdir("fdtest-crash-%s-" % backend)
    try:
        fd = start_frontdoor(datadir=d, backend=backend, durability=durability)
    except RuntimeError as e:
        if "unknown backend" in str(e):
            missing_prerequisite("backend %s is not built in" % backend)
        raise
    with fd.conn() as c:
        cmds = ["set", "set", "incr", "over", "over", "mset", "mset", "rename"]
        if has_command(c, "rpush"):
            cmds.append("rpush")
        if has_command(c, "hset"):
            cmds.append("hset")
        if has_command(c, "multi"):
            cmds.append("multi")
    keep_all = not (power_loss and durability == "nosync")
    ledger = Ledger()
    summary = []
    dropped = 0
    for rno in range(rounds):
        if rno:
            fd.start()
        stop = threading.Event()
        threads = [threading.Thread(target=writer, daemon=True,
                                    args=(fd.port, w, rnd.getrandbits(32), ledger, rno, stop, cmds))
                   for w in range(WRITERS)]
        acks0 = ledger.acks
        for t in threads:
            t.start()
        # the kill comes at a random moment AFTER the first acknowledgement
        # of the round (on a loaded 2-core CI the writers may need a moment
        # to connect; "no write acknowledged" must not be a scheduling artefact)
        wait_until(lambda: ledger.acks > acks0 or ledger.errors, timeout=20, interval=0.01,
                   what="%s round %d: a first acknowledged write" % (backend, rno))
        delay = rnd.uniform(0.2, 1.2)
        time.sleep(delay)
        fd.kill()                                   # SIGKILL, mid-load
        stop.set()
        for t in threads:
            t.join(15)
        check(not ledger.errors, "%s round %d: error replies under load" % (backend, rno),
              ledger.errors[:5])
        if mount is not None:
            dropped += mount.power_loss()
            mount.mount()
        fd.start()                                  # same folder, new port
        round_acks = ledger.acks - acks0
        round_execs = sum(v for k, v in ledger.tx.items() if k.startswith("tx:%d:" % rno))
        what = "%s %s%s round %d" % (backend, durability, " power-loss" if power_loss else "", rno)
        if keep_all:
            n = verify(fd, ledger, cmds, what)
        else:
            n = verify_store_works(fd, what)
            ledger = Ledger()                       # what was acknowledged may be gone
        summary.append("%.2fs/%d acks (%d EXEC)/%d keys" % (delay, round_acks, round_execs, n))
        fd.kill()
    if mount is not None:
        if not keep_all:
            check(dropped > 0, "nosync under crashfs: the power losses dropped nothing (%s): "
                  "the simulation does not bite" % "; ".join(mount.dropped))
        mount.power_loss()
    print("      %s %s%s (%s; seed %d): %s%s" % (
        backend, durability, " +power loss" if power_loss else "", "+".join(sorted(set(cmds))),
        SEED, ", ".join(summary), ("\n        crashfs: " + "; ".join(mount.dropped)) if mount else ""))


def verify_store_works(fd, what):
    """After a loss the durability mode allows: the store opens, a full SCAN
    agrees with DBSIZE, every key read back has one of the values this test
    writes, new writes work."""
    with fd.conn(timeout=30) as c:
        dbsize = parse(c.cmd("DBSIZE"))
        seen = set()
        cursor = b"0"
        while True:
            r = parse(c.cmd("SCAN", cursor, "COUNT", 1000))
            cursor = r[0]
            seen.update(r[1])
            if cursor == b"0":
                break
        eq(len(seen), dbsize, "%s: keys seen by a full SCAN vs DBSIZE" % what)
        for k in sorted(seen)[:200]:
            t = parse(c.cmd("TYPE", k))
            check(t in ("string", "list", "hash"), "%s: TYPE %r is %r" % (what, k, t))
        eq(c.cmd("SET", "after-crash", "ok"), b"+OK\r\n", "%s: a write after restart" % what)
        return dbsize


@T.case
def sigkill_lmdb():
    crash_rounds("lmdb")


@T.case
def sigkill_leveldb():
    crash_rounds("leveldb")


# README: "nosync: survive a crash of frontdoor" - the same checks
@T.case
def sigkill_lmdb_nosync():
    crash_rounds("lmdb", "nosync")


@T.case
def sigkill_leveldb_nosync():
    crash_rounds("leveldb", "nosync")


# "sync: acknowledged writes are on disk": SIGKILL, then what the kernel had
# not written is lost too (crashfs.py). Device-mapper (dm-flakey,
# dm-log-writes) would be the real thing, but this kernel has no
# device-mapper (/dev/mapper/control: "No such device", no modprobe), so a
# FUSE file system plays the disk: it forgets every file's data written
# since that file's last fsync/fdatasync; metadata (create, rename, unlink)
# is kept, as if each directory were synced at once.
def _with_mounts_cleaned(fn):
    """Unmount whatever crashfs a case left mounted (a failure mid-way) before
    the harness removes its folders."""
    def case():
        try:
            fn()
        finally:
            for m in list(_mounts):
                m.cleanup()
    case.__name__ = fn.__name__
    return case


@T.case(timeout=120)
@_with_mounts_cleaned
def power_loss_lmdb_sync():
    crash_rounds("lmdb", "sync", power_loss=True, rounds=3)


@T.case(timeout=120)
@_with_mounts_cleaned
def power_loss_leveldb_sync():
    crash_rounds("leveldb", "sync", power_loss=True, rounds=3)


# The control: nosync does lose unsynced data under crashfs (so the sync
# cases above prove something), and the store still opens and works.
@T.case(timeout=120)
@_with_mounts_cleaned
def power_loss_nosync_control():
    crash_rounds("lmdb", "nosync", power_loss=True, rounds=2)
    crash_rounds("leveldb", "nosync", power_loss=True, rounds=2)


if __name__ == "__main__":
    T.main()
