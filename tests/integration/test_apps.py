#!/usr/bin/python3
"""The client libraries applications use, used as an application uses them,
against frontdoor (on FD_BACKEND): transactions, WATCH, locks and Lua
scripts as the libraries send them.

Python (Debian packages, tests/setup-debian.sh --test): kombu's redis
transport (a broker round trip: 10 messages produced, consumed, acked), redis-py (default
pipeline = MULTI/EXEC, transaction() with WATCH and a conflicting writer,
lock(), register_script), RQ (enqueue + a burst SimpleWorker, and a
non-burst worker blocked in BLPOP woken by jobs enqueued later), limits
(fixed and moving window, Lua on Redis storage).
Node (tests/apps/package.json, `npm ci` by the setup; run by tests/apps/apps.js):
ioredis multi() and defineCommand, node-redis v4 multi() with WATCH,
ioredis and node-redis v4 subscribers (a channel and a pattern, messages in
order from another client; on redis/redis-cluster also from a client of the
redis-server behind frontdoor),
rate-limiter-flexible, BullMQ (queue + worker completing jobs: its Lua
scripts, its event stream, its workers' blocking pops). Every case must pass
on every backend (node(..., known=...) exists for a case that shows a known
bug; none does today).
"""
import json
import os
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import Tests, start_frontdoor, check, eq, known_bug, missing_prerequisite, shared_cluster, HOST, need_node

T = Tests(case_timeout=120)
BACKEND = os.environ.get("FD_BACKEND", "lmdb")
APPS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "apps")

_fd = [None]


def server():
    s = _fd[0]
    if s is None or not s.alive():
        s = _fd[0] = start_frontdoor(keep=True)
    s.conn().cmd("FLUSHALL")
    return s


def redis_client(s, **kw):
    try:
        import redis
    except ImportError:
        missing_prerequisite("python3-redis")
    return redis.Redis(host=HOST, port=s.port, socket_timeout=20, **kw)


# ============================================================ redis-py

@T.case
def redispy_pipeline_is_a_transaction():
    r = redis_client(server())
    with r.pipeline() as p:                       # transaction=True by default: MULTI ... EXEC
        p.set("{a}x", "1").incr("{a}x").get("{a}x").rpush("{a}l", "a", "b").lrange("{a}l", 0, -1)
        eq(p.execute(), [True, 2, b"2", 2, [b"a", b"b"]])
    with r.pipeline() as p:                       # a runtime error inside EXEC
        p.set("{a}s", "text").incr("{a}s").get("{a}s")
        res = p.execute(raise_on_error=False)
    eq(res[0], True)
    check(isinstance(res[1], Exception) and "not an integer" in str(res[1]), "INCR error inside EXEC", res)
    eq(res[2], b"text")
    with r.pipeline(transaction=False) as p:
        eq(p.incr("{a}n").incr("{a}n").execute(), [1, 2])


@T.case
def redispy_transaction_watch_conflict():
    s = server()
    r = redis_client(s)
    other = redis_client(s)
    r.set("{w}balance", 100)
    attempts = []

    def move(pipe):
        attempts.append(1)
        bal = int(pipe.get("{w}balance"))
        if len(attempts) == 1:
            other.incrby("{w}balance", 50)        # a conflicting writer between WATCH and EXEC
        pipe.multi()
        pipe.set("{w}balance", bal - 30)
        pipe.rpush("{w}log", "moved 30")

    res = r.transaction(move, "{w}balance")
    eq(len(attempts), 2, "the first EXEC must abort (nil) and transaction() retry")
    eq(res, [True, 1])
    eq(int(r.get("{w}balance")), 120)
    eq(r.lrange("{w}log", 0, -1), [b"moved 30"])


@T.case
def redispy_lock():
    s = server()
    r = redis_client(s)
    lock = r.lock("{l}resource", timeout=10)
    check(lock.acquire(blocking=False), "acquire")
    check(lock.owned(), "owned after acquire")
    check(not r.lock("{l}resource", timeout=10).acquire(blocking=False), "a second lock must not acquire")
    check(lock.extend(20), "extend")
    ttl = r.pttl("{l}resource")
    check(20000 < ttl <= 30000, "extend adds to the TTL", ttl)
    check(lock.reacquire(), "reacquire")
    check(r.pttl("{l}resource") > 9000, "reacquire resets the TTL")
    lock.release()
    check(not r.exists("{l}resource"), "released")
    import redis.exceptions
    try:
        lock.release()
        raise AssertionError("releasing a released lock must fail")
    except redis.exceptions.LockError:
        pass
    with r.lock("{l}resource", timeout=5, blocking_timeout=2):
        check(r.exists("{l}resource"), "held inside with")


@T.case
def redispy_register_script():
    r = redis_client(server())
    add = r.register_script("return redis.call('incrby', KEYS[1], ARGV[1])")
    eq(add(keys=["{s}n"], args=[5]), 5)
    eq(add(keys=["{s}n"], args=[6]), 11)
    r.script_flush()                              # EVALSHA -> NOSCRIPT -> SCRIPT LOAD again
    eq(add(keys=["{s}n"], args=[1]), 12)
    with r.pipeline() as p:                       # scripts in a transaction
        add(keys=["{s}n"], args=[1], client=p)
        add(keys=["{s}n"], args=[1], client=p)
        eq(p.execute(), [13, 14])
    both = r.register_script("return {KEYS[1], ARGV[1], redis.call('get', KEYS[1])}")
    eq(both(keys=["{s}n"], args=["x"]), [b"{s}n", b"x", b"14"])


# ============================================================ RQ


@T.case
def rq_blocking_worker():
    """A normal (non-burst) RQ worker waits in BLPOP on its queue; jobs
    enqueued afterwards by another client wake it up."""
    try:
        import rq
    except ImportError:
        missing_prerequisite("python3-rq")
    import subprocess
    import time
    s = server()
    q = rq.Queue("fdblock", connection=redis_client(s))
    # a worker process (RQ installs signal handlers: not in a thread)
    code = ("import redis, rq; r = redis.Redis(host=%r, port=%d); "
            "rq.SimpleWorker([rq.Queue('fdblock', connection=r)], connection=r).work(burst=False, max_jobs=3)"
            % (HOST, s.port))
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.5)                       # the worker is blocked on an empty queue
    check(p.poll() is None, "the worker exited before any job: %r" % (p.stderr.read()[-600:] if p.poll() is not None else b""))
    jobs = [q.enqueue("math.factorial", i) for i in (3, 4, 5)]
    try:
        p.wait(30)
    except subprocess.TimeoutExpired:
        p.kill()
        check(False, "the blocking worker did not finish its 3 jobs within 30 s")
    for j, want in zip(jobs, (6, 24, 120)):
        j.refresh()
        eq(j.get_status(), "finished", "job %s" % j.id)
        eq(j.result, want)


@T.case
def rq_enqueue_and_burst_worker():
    try:
        import rq
    except ImportError:
        missing_prerequisite("python3-rq")
    r = redis_client(server())
    q = rq.Queue("fdtest", connection=r)
    # a function the worker imports by name (not from __main__)
    jobs = [q.enqueue("math.factorial", i) for i in range(3, 6)]
    eq(len(q), 3)
    # RQ 1.13 keeps job results in a stream (XADD, on Redis >= 5) and its
    # worker subscribes to a pub/sub channel: streams and pub/sub on every backend
    w = rq.SimpleWorker([q], connection=r)
    check(w.work(burst=True), "the burst worker must have worked")
    for j, want in zip(jobs, (6, 24, 120)):
        j.refresh()
        eq(j.get_status(), "finished", "job %s" % j.id)
        eq(j.result, want)
    eq(len(q), 0)


# ============================================================ kombu


@T.case
def kombu_redis_transport_round_trip():
    """kombu's redis transport as Celery uses it: a Producer publishes 10
    messages to a direct exchange's queue (the binding in a set, the
    messages LPUSHed), a Consumer drains them (BRPOP on the queue; each
    delivery kept in the unacked hash + sorted set in one MULTI/EXEC until
    acked) and acks every one."""
    try:
        import kombu
    except ImportError:
        missing_prerequisite("python3-kombu")
    import socket
    import time
    s = server()
    url = "redis://%s:%d/0" % (HOST, s.port)
    with kombu.Connection(url, transport_options={
            "visibility_timeout": 3600, "unacked_key": "{fdk}unacked",
            "unacked_index_key": "{fdk}unacked_index", "unacked_mutex_key": "{fdk}unacked_mutex"}) as conn:
        q = kombu.Queue("{fdk}q", kombu.Exchange("{fdk}x", type="direct"), routing_key="{fdk}q")
        with conn.Producer() as prod:
            for i in range(10):
                prod.publish({"n": i}, exchange=q.exchange, routing_key="{fdk}q", declare=[q],
                             serializer="json")
        r = redis_client(s)
        eq(r.llen("{fdk}q"), 10, "the 10 messages queued")
        got = []
        acked = []

        def on_message(body, message):
            got.append(body["n"])
            message.ack()
            acked.append(message.acknowledged)

        with conn.Consumer(q, callbacks=[on_message], accept=["json"]):
            end = time.monotonic() + 20
            while len(got) < 10 and time.monotonic() < end:
                try:
                    conn.drain_events(timeout=1)
                except socket.timeout:
                    pass
        eq(got, list(range(10)), "every message consumed once, in order")
        check(all(acked), "every message acked", acked)
        eq(r.llen("{fdk}q"), 0, "the queue drained")
        eq(r.hlen("{fdk}unacked"), 0, "no delivery left unacked")
        eq(r.zcard("{fdk}unacked_index"), 0, "no delivery left in the unacked index")
        eq(r.smembers("_kombu.binding.{fdk}x"), {b"{fdk}q\x06\x16\x06\x16{fdk}q"}, "the binding")


# ============================================================ limits


def _limits(kind):
    try:
        import limits
        import limits.storage
        import limits.strategies
    except ImportError:
        missing_prerequisite("python3-limits")
    s = server()
    storage = limits.storage.storage_from_string("redis://%s:%d" % (HOST, s.port))
    lim = getattr(limits.strategies, kind)(storage)
    item = limits.parse("3/minute")
    got = [lim.hit(item, "user", "42") for _ in range(4)]
    eq(got, [True, True, True, False], "3/minute: the 4th hit refused")
    check(not lim.test(item, "user", "42"), "test() after the limit")
    check(lim.hit(item, "user", "43"), "another identifier has its own window")
    stats = lim.get_window_stats(item, "user", "42")
    eq(stats[1], 0, "remaining")


@T.case
def limits_fixed_window():
    _limits("FixedWindowRateLimiter")


@T.case
def limits_moving_window():
    _limits("MovingWindowRateLimiter")


# ============================================================ node


def backing_port(s):
    """The port of a redis-server behind frontdoor s, to publish on directly
    (bypassing frontdoor); None on the backends that have none. On a cluster
    PUBLISH reaches every node's subscribers, so any master will do."""
    if BACKEND == "redis":
        return s.backing.port
    if BACKEND == "redis-cluster":
        return shared_cluster().masters()[0].port
    return None


def node(case, known=None, direct=False):
    """direct: the case also gets the port of the redis-server behind
    frontdoor (redis/redis-cluster) as its third argument."""
    def fn():
        nodejs = need_node()
        s = server()
        args = [nodejs, os.path.join(APPS, "apps.js"), case, str(s.port)]
        if direct and backing_port(s):
            args.append(str(backing_port(s)))
        p = subprocess.run(args, cwd=APPS,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=90)
        out = p.stdout.decode(errors="replace").strip()
        line = out.split("\n")[-1] if out else ""
        try:
            res = json.loads(line)
        except ValueError:
            res = {"ok": False, "error": out[-2000:]}
        print("      %s: %s" % (case, json.dumps(res)[:300]))
        if known:
            with known_bug(known):
                check(res.get("ok") and p.returncode == 0, "%s failed: %s" % (case, res.get("error", out)[:600]))
        else:
            check(res.get("ok") and p.returncode == 0, "%s failed: %s" % (case, res.get("error", out)[:1500]))
    fn.__name__ = "node_" + case
    T.add(fn.__name__, fn)


node("ioredis_multi")
node("ioredis_definecommand")
node("node_redis_multi")
node("rate_limiter_flexible")
# pub/sub (RESP2: ioredis 5 and node-redis 4 speak no RESP3): a channel and a
# pattern, messages in publication order, from another client through
# frontdoor and, on redis/redis-cluster, from a client of the redis-server
node("ioredis_subscriber", direct=True)
node("node_redis_subscriber", direct=True)
# BullMQ's Lua scripts write its event stream (XADD) and its workers block on
# BZPOPMIN: on lmdb/leveldb/mongodb frontdoor's own engine runs the scripts
# over its streams and blocking commands; on the redis backends Redis runs them.
node("bullmq")


if __name__ == "__main__":
    T.main()
