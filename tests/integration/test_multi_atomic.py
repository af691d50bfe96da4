#!/usr/bin/python3
"""Atomicity of EXEC and of scripts under concurrent clients, and the busy
script: -BUSY for the others, SCRIPT KILL from another client.

Each case runs on the embedded backends (lmdb, leveldb) and on mongodb (the
emulator tests/mongo/server.py; skipped without the backend), where
frontdoor itself runs transactions and scripts (proxy/multi.h,
proxy/scripting.h). While writers hammer the same key over several
connections, a transaction or a script that reads it, increments it and
reads it again must see exactly +1: no other client's command in between.
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import Tests, start_frontdoor, check, eq, parse, Err, missing_prerequisite, encode_many

T = Tests(case_timeout=180)

BACKENDS = ["lmdb", "leveldb", "mongodb"]
BUSY = b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"
KILLED_PREFIX = b"-ERR Script killed by user with SCRIPT KILL..."


def start(backend):
    try:
        return start_frontdoor(backend=backend)
    except Exception as e:   # a build without the backend refuses --backend NAME
        if backend != "lmdb" and "backend" in str(e).lower():
            missing_prerequisite("frontdoor built without the %s backend: %s" % (backend, str(e)[:200]))
        raise


class Hammer:
    """n connections sending pipelined INCR key until stopped."""

    def __init__(self, fd, key, n=3, depth=16):
        self.stop = threading.Event()
        self.count = 0
        self.errors = []
        self.threads = [threading.Thread(target=self._run, args=(fd.conn(timeout=30), key, depth))
                        for _ in range(n)]
        for t in self.threads:
            t.start()

    def _run(self, conn, key, depth):
        data = encode_many([("INCR", key)] * depth)
        try:
            while not self.stop.is_set():
                conn.send_raw(data)
                for _ in range(depth):
                    r = conn.read(timeout=30)
                    if not r.startswith(b":"):
                        self.errors.append(r)
                self.count += depth
        except Exception as e:
            self.errors.append(repr(e))
        finally:
            conn.close()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(60)
        check(not self.errors, "hammer errors", self.errors[:3])
        check(self.count > 0, "the hammer sent nothing")


def exec_case(backend):
    def fn():
        fd = start(backend)
        c = fd.conn(timeout=30)
        c.cmd("SET", "x", "0")
        h = Hammer(fd, "x")
        try:
            for i in range(150):
                # a transaction pipelined in one write: GET, INCR, GET
                c.send_raw(encode_many([("MULTI",), ("GET", "x"), ("INCR", "x"), ("GET", "x"), ("INCR", "x"),
                                        ("GET", "x"), ("EXEC",)]))
                replies = [parse(c.read()) for _ in range(7)]
                eq(replies[:6], ["OK"] + ["QUEUED"] * 5, "queueing replies")
                a, b, c1, d, e = replies[6]
                check(int(b) == int(a) + 1 and int(c1) == int(b) and int(d) == int(b) + 1 and int(e) == int(d),
                      "EXEC %d interleaved with other clients: %r" % (i, replies[6]))
        finally:
            h.finish()
        n = int(parse(c.cmd("GET", "x")))
        eq(n, h.count + 300, "every INCR counted once")
    fn.__name__ = "exec_atomic_" + backend
    T.add(fn.__name__, fn)


SCRIPT = ("local a = tonumber(redis.call('get', KEYS[1]) or '0'); "
          "redis.call('set', KEYS[1], a + 1); "
          "local b = tonumber(redis.call('get', KEYS[1])); "
          "for i = 1, 2000 do redis.call('get', KEYS[1]) end; "
          "return {a, b, tonumber(redis.call('get', KEYS[1]))}")


def script_case(backend):
    def fn():
        fd = start(backend)
        c = fd.conn(timeout=60)
        c.cmd("SET", "x", "0")
        sha = parse(c.cmd("SCRIPT", "LOAD", SCRIPT))
        h = Hammer(fd, "x")
        try:
            for i in range(40 if backend == "mongodb" else 150):
                r = parse(c.cmd("EVALSHA", sha, "1", "x"))
                check(isinstance(r, list) and r[1] == r[0] + 1 and r[2] == r[1],
                      "script run %d interleaved with other clients: %r" % (i, r))
        finally:
            h.finish()
    fn.__name__ = "script_atomic_" + backend
    T.add(fn.__name__, fn)


def busy_case(backend):
    def fn():
        fd = start(backend)
        a, b = fd.conn(timeout=30), fd.conn(timeout=30)
        eq(parse(b.cmd("CONFIG", "SET", "busy-reply-threshold", "100")), "OK")
        b.cmd("SET", "k", "before")
        # a read-only endless script: -BUSY for others, SCRIPT KILL stops it
        a.send("EVAL", "local n = 0; while true do n = n + 1; redis.call('get', KEYS[1]) end", "1", "k")
        time.sleep(0.4)
        eq(b.cmd("GET", "k"), BUSY, "another client's command while the script is busy")
        eq(b.cmd("PING"), BUSY)
        eq(b.cmd("SCRIPT", "KILL"), b"+OK\r\n")
        r = a.read(timeout=10)
        check(r.startswith(KILLED_PREFIX), "the killed script's reply", r)
        eq(b.cmd("GET", "k"), b"$6\r\nbefore\r\n", "served again after SCRIPT KILL")
        eq(a.cmd("PING"), b"+PONG\r\n")
        eq(b.cmd("SCRIPT", "KILL"), b"-NOTBUSY No scripts in execution right now.\r\n")
        # a script that wrote cannot be killed, and its writes are not
        # committed half-way: kill the server while it runs, restart, look
        if backend == "mongodb":
            return    # the emulator's data survive a frontdoor kill anyway
        a.send("EVAL", "redis.call('set', KEYS[1], 'during'); while true do end", "1", "k")
        time.sleep(0.4)
        eq(b.cmd("SCRIPT", "KILL"),
           b"-UNKILLABLE Sorry the script already executed write commands against the dataset. "
           b"You can either wait the script termination or kill the server in a hard way using "
           b"the SHUTDOWN NOSAVE command.\r\n")
        eq(b.cmd("SET", "k", "x"), BUSY)
        fd.kill()
        fd.restart()
        eq(fd.conn().cmd("GET", "k"), b"$6\r\nbefore\r\n", "a script's writes committed before it ended")
    fn.__name__ = "busy_script_and_kill_" + backend
    T.add(fn.__name__, fn)


for be in BACKENDS:
    exec_case(be)
    script_case(be)
    busy_case(be)

if __name__ == "__main__":
    T.main()
