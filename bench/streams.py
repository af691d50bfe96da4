#!/usr/bin/python3
"""Stream commands side by side: redis-server and frontdoor in one run, with
stock redis-benchmark (same client, settings and moment for every target).

    /usr/bin/python3 bench/streams.py [--n 100000] [--repeats 3] [--targets redis,lmdb-nosync,lmdb-sync]

Per target and pipeline depth (-P 1, -P 16; 50 clients):
  XADD        XADD s * f v
  XRANGE10    XRANGE r <random id> + COUNT 10   (r holds --stream-size entries, 1000;
              ids 1-0..N-0, the start drawn by -r N: a seek anywhere in it)
  XREADGROUP  XREADGROUP GROUP g c COUNT 1 STREAMS q >   (q holds n entries per run)
  XACK        XACK q g <random id of q>    (-r n: ids "000000012345" = 12345-0)
  RG+ACK      pairs per second = 1 / (1/XREADGROUP + 1/XACK): one delivery
              and its acknowledgement, as a consumer does them. XACK here
              acknowledges RANDOM ids (redis-benchmark has no sequence): the
              worst case for a B-tree PEL (every ack dirties other pages).
  LOOP16      a consumer loop (this script's client, 50 connections):
              XREADGROUP COUNT 16 > then XACK of the 16 ids it got, until the
              stream (n entries) is consumed: entries delivered+acked per
              second. The in-order acknowledgement real consumers do.
Prints the median (min-max) of --repeats runs, and the ratio to redis-server.
"""
import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port, timeout=15):
    t = time.time() + timeout
    while time.time() < t:
        try:
            with socket.create_connection(("127.0.0.1", port), 0.5) as c:
                c.sendall(b"PING\r\n")
                if c.recv(64).startswith(b"+PONG"):
                    return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("port %d did not answer" % port)


def pipe(port, cmds):
    """Send RESP commands pipelined; read every reply (counted by lines)."""
    def enc(a):
        return b"*%d\r\n" % len(a) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in (s.encode() for s in a))
    with socket.create_connection(("127.0.0.1", port)) as c:
        for i in range(0, len(cmds), 1000):
            chunk = cmds[i:i + 1000]
            c.sendall(b"".join(enc(a) for a in chunk))
            got, buf = 0, b""
            while got < len(chunk):
                d = c.recv(1 << 20)
                if not d:
                    raise SystemExit("connection closed")
                buf += d
                # simple replies only (+OK, $n id, :n)
                while True:
                    nl = buf.find(b"\r\n")
                    if nl < 0:
                        break
                    line = buf[:nl]
                    if line.startswith(b"$") and line != b"$-1":
                        n = int(line[1:])
                        if len(buf) < nl + 2 + n + 2:
                            break
                        buf = buf[nl + 2 + n + 2:]
                    else:
                        if line.startswith(b"-"):
                            raise SystemExit("error: %r" % line)
                        buf = buf[nl + 2:]
                    got += 1


def bench(port, args, n, P, r=None):
    cmd = ["redis-benchmark", "-p", str(port), "-n", str(n), "-c", "50", "-P", str(P), "-q", "--csv"]
    if r:
        cmd += ["-r", str(r)]
    out = subprocess.run(cmd + args, capture_output=True, text=True, timeout=600).stdout
    for line in out.splitlines():
        parts = [x.strip('"') for x in line.split(",")]
        if len(parts) >= 2 and parts[0] != "test":
            return float(parts[1])
    raise SystemExit("no figure from redis-benchmark: %r" % out)


def _parse(buf, i):
    """One RESP2 reply at buf[i:]: (value, next) or None when incomplete."""
    nl = buf.find(b"\r\n", i)
    if nl < 0:
        return None
    t, line = buf[i:i + 1], buf[i + 1:nl]
    if t in (b"+", b"-", b":"):
        return (line if t != b":" else int(line)), nl + 2
    n = int(line)
    if t == b"$":
        if n < 0:
            return None, nl + 2
        if len(buf) < nl + 2 + n + 2:
            return None
        return buf[nl + 2:nl + 2 + n], nl + 2 + n + 2
    if n < 0:
        return None, nl + 2
    out, j = [], nl + 2
    for _ in range(n):
        r = _parse(buf, j)
        if r is None:
            return None
        out.append(r[0])
        j = r[1]
    return out, j


def consumer_loop(port, total, conns=50, batch=16):
    """Entries delivered and acknowledged per second by `conns` consumers."""
    import selectors

    def enc(*a):
        return b"*%d\r\n" % len(a) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in a)
    sel = selectors.DefaultSelector()
    st = {}
    t0 = time.time()
    for k in range(conns):
        c = socket.create_connection(("127.0.0.1", port))
        c.setblocking(False)
        name = b"c%d" % k
        st[c] = {"buf": b"", "phase": "read", "name": name, "done": False}
        c.sendall(enc(b"XREADGROUP", b"GROUP", b"g", name, b"COUNT", b"%d" % batch, b"STREAMS", b"q", b">"))
        sel.register(c, selectors.EVENT_READ)
    acked, live = 0, conns
    while live:
        for key, _ in sel.select(5):
            c = key.fileobj
            s = st[c]
            d = c.recv(1 << 20)
            if not d:
                raise SystemExit("connection closed")
            s["buf"] += d
            r = _parse(s["buf"], 0)
            if r is None:
                continue
            v, j = r
            s["buf"] = s["buf"][j:]
            if s["phase"] == "read":
                if not v:
                    sel.unregister(c)
                    c.close()
                    live -= 1
                    continue
                ids = [e[0] for e in v[0][1]]
                s["n"] = len(ids)
                s["phase"] = "ack"
                c.sendall(enc(b"XACK", b"q", b"g", *ids))
            else:
                if isinstance(v, bytes):
                    raise SystemExit("XACK error: %r" % v)
                acked += v
                s["phase"] = "read"
                c.sendall(enc(b"XREADGROUP", b"GROUP", b"g", s["name"], b"COUNT", b"%d" % batch, b"STREAMS", b"q", b">"))
    el = time.time() - t0
    if acked != total:
        raise SystemExit("consumer loop acknowledged %d of %d" % (acked, total))
    return acked / el


def start(target, tmp):
    port = free_port()
    if target == "redis":
        p = subprocess.Popen(["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    else:
        d = tempfile.mkdtemp(dir=tmp)
        dur = "nosync" if target.endswith("nosync") else "sync"
        p = subprocess.Popen([os.path.join(REPO, "build", "frontdoor"), "--port", str(port), "--dir", d,
                              "--backend", "lmdb", "--durability", dur],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port)
    return p, port


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--targets", default="redis,lmdb-nosync,lmdb-sync")
    ap.add_argument("--stream-size", type=int, default=1000, help="entries in the XRANGE stream (growth: 1000000)")
    ap.add_argument("--tests", default="XADD,XRANGE10,XREADGROUP,XACK,LOOP16")
    a = ap.parse_args()
    targets = a.targets.split(",")
    tmp = tempfile.mkdtemp(prefix="fd-streams-bench-")
    procs = {t: start(t, tmp) for t in targets}
    res = {}
    try:
        for rep in range(a.repeats):
            for P in (1, 16):
                for t in targets:      # interleaved: the same moment for every target
                    port = procs[t][1]
                    pipe(port, [["DEL", "s", "q"]])
                    f = res.setdefault((t, P), {})
                    want = a.tests.split(",")
                    if "XADD" in want:
                        f.setdefault("XADD", []).append(bench(port, ["XADD", "s", "*", "f", "v"], a.n, P))
                    if "XRANGE10" in want:
                        if not (rep or P != 1) or a.stream_size <= 100000:
                            pipe(port, [["DEL", "r"]])
                            for b0 in range(0, a.stream_size, 100000):
                                pipe(port, [["XADD", "r", "%d-0" % (i + 1), "f", "v"]
                                            for i in range(b0, min(a.stream_size, b0 + 100000))])
                        f.setdefault("XRANGE10", []).append(
                            bench(port, ["XRANGE", "r", "__rand_int__", "+", "COUNT", "10"], a.n, P, r=a.stream_size))
                    if "XREADGROUP" not in want:
                        continue
                    pipe(port, [["XADD", "q", "%d-0" % (i + 1), "f", "v"] for i in range(a.n)])
                    pipe(port, [["XGROUP", "CREATE", "q", "g", "0"]])
                    f.setdefault("XREADGROUP", []).append(
                        bench(port, ["XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "q", ">"], a.n, P))
                    f.setdefault("XACK", []).append(bench(port, ["XACK", "q", "g", "__rand_int__"], a.n, P, r=a.n))
                    rg, ak = f["XREADGROUP"][-1], f["XACK"][-1]
                    f.setdefault("RG+ACK", []).append(1.0 / (1.0 / rg + 1.0 / ak))
                    if P == 1:
                        pipe(port, [["DEL", "q"]])
                        pipe(port, [["XADD", "q", "%d-0" % (i + 1), "f", "v"] for i in range(a.n)])
                        pipe(port, [["XGROUP", "CREATE", "q", "g", "0"]])
                        f.setdefault("LOOP16", []).append(consumer_loop(port, a.n))
    finally:
        for p, _ in procs.values():
            p.terminate()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    tests = [x for x in ["XADD", "XRANGE10", "XREADGROUP", "XACK", "RG+ACK", "LOOP16"] if x in res[(targets[0], 1)]]
    print("| test | -P | " + " | ".join(targets) + " |")
    print("|---|---|" + "---|" * len(targets))
    for test in tests:
        for P in ((1,) if test == "LOOP16" else (1, 16)):
            cells = []
            base = statistics.median(res[("redis", P)][test]) if "redis" in targets else None
            for t in targets:
                v = res[(t, P)][test]
                m = statistics.median(v)
                cell = "%.0f (%.0f–%.0f)" % (m, min(v), max(v))
                if base and t != "redis":
                    cell += " **%.2f×**" % (m / base)
                cells.append(cell)
            print("| %s | %d | %s |" % (test, P, " | ".join(cells)))


if __name__ == "__main__":
    sys.exit(main())
