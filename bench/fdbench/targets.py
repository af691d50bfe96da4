"""What the benchmark points redis-benchmark at. A target starts everything
it needs on free loopback ports with a fresh data folder, waits for it to
answer, reports the pids to sample, and stops it all again."""
import os
import re
import shutil
import signal
import subprocess
import time

from . import procs

EMBEDDED = ["lmdb", "leveldb"]          # frontdoor backends with a durability setting
SERVICE = ["redis", "mongodb", "redis-cluster"]   # frontdoor backends in front of other servers
BASELINES = ["redis-direct", "twemproxy", "redis-cluster-direct"]   # no frontdoor in the path
ALL_TARGETS = ["redis-direct", "twemproxy", "lmdb-sync", "lmdb-nosync", "leveldb-sync", "leveldb-nosync",
               "redis", "mongodb", "redis-cluster-direct", "redis-cluster"]
GROUPS = {b: [f"{b}-sync", f"{b}-nosync"] for b in EMBEDDED}
# Roles (process names in the results) that are the proxy in the path; every
# other role is a server behind it.
PROXY_ROLES = ("frontdoor", "nutcracker")
CLUSTER_NODES = 3
MONGO_EMULATOR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                              "tests", "mongo", "server.py")

# How frontdoor is pointed at the server behind a service backend: redis's
# is `redis-address host:port` (docs/redis-backend.md; pool size and timeout
# left at their defaults); mongodb's is `mongo-uri URI` (docs/mongodb.md). A
# frontdoor that rejects them is reported as such.
SERVICE_ARGS = {
    "redis": lambda addr: ["--redis-address", addr],
    "mongodb": lambda uri: ["--mongo-uri", uri],
    "redis-cluster": lambda seeds: ["--redis-cluster-seeds", seeds],
}
START_TIMEOUT = 20.0
EMULATOR_BACKEND_TIMEOUT_MS = 10000


BASE_SUFFIX = "@base"   # a frontdoor target run with the --frontdoor-base binary


class Skip(Exception):
    """The target can't run here; the message says why (shown in the report)."""


def expand(names):
    out = []
    for n in names:
        n = n.strip()
        if not n:
            continue
        for x in GROUPS.get(n, [n]):
            if x not in out:
                out.append(x)
    return out


def make_tls(d):
    """bench/run --tls: a CA and a server certificate (localhost, 127.0.0.1)
    made with the openssl CLI in d (the run's temporary folder, never kept);
    returns {"dir", "ca", "cert", "key"}. RSA 2048, as redis's own
    utils/gen-test-certs.sh. Raises RuntimeError when openssl fails."""
    def sh(*argv):
        r = subprocess.run(list(argv), cwd=d, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode:
            raise RuntimeError("%s: %s" % (" ".join(argv), r.stdout.decode(errors="replace")[-500:]))
    if not shutil.which("openssl"):
        raise RuntimeError("--tls needs the openssl CLI (apt-get install openssl)")
    os.makedirs(d, exist_ok=True)
    sh("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
       "-days", "2", "-subj", "/CN=fdbench-ca")
    sh("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
       "-subj", "/CN=localhost")
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    sh("openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
       "-out", "server.crt", "-days", "2", "-extfile", "san.ext")
    return {"dir": d, "ca": os.path.join(d, "ca.crt"), "cert": os.path.join(d, "server.crt"),
            "key": os.path.join(d, "server.key")}


def server_tls_args(tls, port):
    """The tls-* arguments (redis-server's and frontdoor's are the same) for a
    TLS listener on port, clients without certificates."""
    return ["--tls-port", str(port), "--tls-cert-file", tls["cert"], "--tls-key-file", tls["key"],
            "--tls-ca-cert-file", tls["ca"], "--tls-auth-clients", "no"]


def find_frontdoor(repo):
    cands = [os.path.join(repo, "build", "frontdoor")]
    try:
        others = [os.path.join(repo, d, "frontdoor") for d in os.listdir(repo) if d.startswith("build")]
    except OSError:
        others = []
    others = sorted((p for p in others if p not in cands and os.access(p, os.X_OK)),
                    key=lambda p: -os.path.getmtime(p))
    found = [p for p in cands + others if os.path.isfile(p) and os.access(p, os.X_OK)]
    # A sanitizer build is many times slower: take it only if there is nothing else.
    for p in found:
        if "sanitizers on" not in (build_flavour(p) or ""):
            return p
    return found[0] if found else shutil.which("frontdoor")


def frontdoor_version(path):
    if not path:
        return None
    try:
        r = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10)
        return (r.stdout or r.stderr).strip() or f"(exit {r.returncode}, no output)"
    except Exception as e:  # noqa: BLE001
        return f"unknown ({e})"


# Redis-style log prefix: "9718:M 02 Dec 2026 10:12:02.179 # "
_LOGPREFIX = re.compile(r"^\d+:[A-Z] \d+ \w+ \d+ [\d:.]+ [#*.-] ")


def _tail(path, n=5):
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - 8192))
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    lines = [_LOGPREFIX.sub("", ln).strip() for ln in lines]
    return " | ".join(ln for ln in lines[-n:] if ln)


class Target:
    def __init__(self, name, workroot, frontdoor=None, opts=None):
        self.name = name
        self.frontdoor = frontdoor
        self.opts = dict(opts or {})
        self.cluster = False   # redis-benchmark --cluster (the cluster baseline)
        self.emulator = False  # the mongodb target runs on tests/mongo/server.py
        self.versions = {}     # what the servers said about themselves
        self.workdir = os.path.join(workroot, name)
        self.procs = []        # (role, Popen)
        self.datadirs = []
        self.port = None
        # bench/run --tls (make_tls's dict): the clients measured connect to
        # tls_port; port stays plain for readiness, INFO and fills
        self.tls = self.opts.get("tls")
        self.tls_port = None
        self.kind, self.backend, self.durability = self._classify(name)
        self.dead = None       # reason once a server process exited mid-run

    @staticmethod
    def _classify(name):
        # "T@base": target T run with --frontdoor-base (a before/after in one run)
        if name.endswith(BASE_SUFFIX) and name != BASE_SUFFIX:
            kind, b, d = Target._classify(name[:-len(BASE_SUFFIX)])
            if kind != "frontdoor":
                raise Skip(f"'{name}': only frontdoor targets have a {BASE_SUFFIX} twin")
            return kind, b, d
        if name == "redis-direct":
            return "redis-direct", None, None
        if name == "twemproxy":
            return "twemproxy", None, None
        if name == "redis-cluster-direct":
            return "redis-cluster-direct", None, None
        for b in EMBEDDED:
            for d in ("sync", "nosync"):
                if name == f"{b}-{d}":
                    return "frontdoor", b, d
        if name in SERVICE:
            return "frontdoor", name, None
        if name in ("mongodb-sync", "mongodb-nosync"):
            # write concern j follows durability (mongo-j auto): j=true when sync
            return "frontdoor", "mongodb", name.split("-")[1]
        raise Skip(f"unknown target '{name}' (known: {', '.join(ALL_TARGETS)}, mongodb-sync, mongodb-nosync, "
                   "or lmdb/leveldb for both durabilities)")

    @property
    def bench_port(self):
        """Where the measured client connects: tls_port under --tls."""
        return self.tls_port if self.tls else self.port

    def describe(self):
        return self._describe() + ("; clients over TLS (tls-port, RSA 2048, tls-auth-clients no)" if self.tls else "")

    def _describe(self):
        if self.kind == "redis-direct":
            return "redis-server alone, no persistence: the baseline"
        if self.kind == "twemproxy":
            return "nutcracker (twemproxy) in front of its own redis-server, no persistence"
        if self.kind == "redis-cluster-direct":
            return f"{CLUSTER_NODES} redis-server masters, cluster-enabled, no persistence; redis-benchmark --cluster"
        if self.backend in EMBEDDED:
            return f"frontdoor, {self.backend} backend, durability {self.durability}"
        if self.backend == "redis":
            return "frontdoor, redis backend, in front of its own redis-server (no persistence)"
        if self.backend == "redis-cluster":
            return f"frontdoor, redis-cluster backend, in front of {CLUSTER_NODES} cluster masters (no persistence)"
        if self.backend == "mongodb":
            if self.opts.get("mongodb_uri"):
                return f"frontdoor, mongodb backend, MongoDB at {self.opts['mongodb_uri']}" + self._mongo_wc()
            cap = self.opts.get("emulator_n")
            return ("frontdoor, mongodb backend, in front of the MongoDB EMULATOR tests/mongo/server.py "
                    "(its speed is not MongoDB's)" + self._mongo_wc()
                    + (f"; at most {cap} requests per test (--emulator-n)" if cap else "")
                    + f"; backend-timeout {EMULATOR_BACKEND_TIMEOUT_MS // 1000} s")
        return f"frontdoor, {self.backend} backend"

    def _mongo_wc(self):
        w = self.opts.get("mongo_w")
        out = f", write concern w={w}" if w else ", write concern w: the server's default"
        if self.durability:
            out += f", durability {self.durability} (j={'true' if self.durability == 'sync' else 'false'})"
        return out

    def proxy_roles(self):
        return [r for r, _ in self.procs if r in PROXY_ROLES]

    # ---- lifecycle ---------------------------------------------------------

    def start(self):
        os.makedirs(self.workdir, exist_ok=True)
        if self.tls and self.kind in ("twemproxy", "redis-cluster-direct"):
            raise Skip("--tls: this target is not run over TLS (twemproxy has no TLS; the cluster baseline "
                       "needs redis-benchmark --cluster --tls against tls-cluster nodes)")
        if self.kind == "redis-direct":
            self.port = self._start_redis("redis-server", tls=True)
        elif self.kind == "redis-cluster-direct":
            self.port = self._start_cluster()[0]
            self.cluster = True
        elif self.kind == "twemproxy":
            self._start_twemproxy()
        else:
            self._start_frontdoor()

    def stop(self):
        codes = {}
        for role, p in reversed(self.procs):
            codes[role] = procs.stop(p)
        return codes

    def server_pids(self):
        return {role: p.pid for role, p in self.procs}

    def check_alive(self):
        for role, p in self.procs:
            if p.poll() is not None:
                rc = p.returncode
                how = f"killed by {signal.Signals(-rc).name}" if rc < 0 else f"exit code {rc}"
                last = _tail(self._log(role), 1)
                self.dead = f"{role} exited ({how})" + (f": {last}" if last and "ready" not in last else "")
                return False
        return True

    def _log(self, role):
        return os.path.join(self.workdir, f"{role}.log")

    def _wait_ready(self, role, p, port, ready, what):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if p.poll() is not None:
                return False
            if ready(port):
                return True
            time.sleep(0.05)
        procs.stop(p)
        tail = _tail(self._log(role))
        raise Skip(f"{what} did not answer PING on port {port} within {START_TIMEOUT:.0f} s" + (f": {tail}" if tail else ""))

    def _start_redis(self, role, extra=(), port_fn=None, tls=False):
        """tls: under --tls, also a TLS listener (self.tls_port): the
        redis-direct baseline only (a backend behind frontdoor stays plain)."""
        exe = shutil.which("redis-server")
        if not exe:
            raise Skip("redis-server not installed")
        data = os.path.join(self.workdir, f"{role}-data")
        os.makedirs(data, exist_ok=True)
        self.datadirs.append(data)
        for _ in range(3):
            port = (port_fn or procs.free_port)()
            argv = [exe, "--port", str(port), "--bind", "127.0.0.1", "--dir", data, "--save", "",
                    "--appendonly", "no", "--daemonize", "no", "--logfile", "", "--protected-mode", "no",
                    *extra]
            if tls and self.tls:
                self.tls_port = procs.free_port()
                argv += server_tls_args(self.tls, self.tls_port)
            p = procs.spawn(argv, self._log(role))
            self.procs.append((role, p))
            if self._wait_ready(role, p, port, procs.ping, "redis-server"):
                if not self.versions.get("redis_server"):
                    inf = procs.info(port) or {}
                    if inf.get("redis_version"):
                        self.versions["redis_server"] = inf["redis_version"]
                return port
            self.procs.pop()
            procs.stop(p)
            if "Address already in use" not in _tail(self._log(role), 20):
                break
        raise Skip(f"redis-server failed to start: {_tail(self._log(role))}")

    def _start_twemproxy(self):
        exe = shutil.which("nutcracker")
        if not exe:
            raise Skip("nutcracker not installed (Debian package 'nutcracker'; not installed by bench/run)")
        rport = self._start_redis("redis-server")
        for _ in range(3):
            port, sport = procs.free_port(), procs.free_port()
            conf = os.path.join(self.workdir, "nutcracker.yml")
            with open(conf, "w") as f:
                f.write("bench:\n"
                        f"  listen: 127.0.0.1:{port}\n"
                        "  hash: fnv1a_64\n"
                        "  distribution: ketama\n"
                        "  redis: true\n"
                        "  auto_eject_hosts: false\n"
                        "  server_connections: 1\n"
                        "  servers:\n"
                        f"   - 127.0.0.1:{rport}:1\n")
            argv = [exe, "-c", conf, "-s", str(sport), "-a", "127.0.0.1", "-o", self._log("nutcracker") + ".own"]
            p = procs.spawn(argv, self._log("nutcracker"))
            self.procs.append(("nutcracker", p))
            # twemproxy answers PING itself only in some versions: a port that
            # accepts connections, with the redis-server behind it up, is ready.
            if self._wait_ready("nutcracker", p, port, procs.port_open, "nutcracker"):
                self.port = port
                return
            self.procs.pop()
            procs.stop(p)
            log = _tail(self._log("nutcracker"), 20) + _tail(self._log("nutcracker") + ".own", 20)
            if "in use" not in log:
                break
        raise Skip(f"nutcracker failed to start: {_tail(self._log('nutcracker') + '.own') or _tail(self._log('nutcracker'))}")

    def _start_cluster(self):
        """CLUSTER_NODES masters with cluster-enabled on free ports (their
        bus port, port + 10000, free too), joined by `redis-cli --cluster
        create`; returns their ports once every node says cluster_state:ok."""
        if not shutil.which("redis-cli"):
            raise Skip("redis-cli not installed (needed to create the cluster)")
        ports = []
        for i in range(1, CLUSTER_NODES + 1):
            ports.append(self._start_redis(
                f"redis-node-{i}", extra=["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                                          "--cluster-node-timeout", "5000"],
                port_fn=procs.free_port_with_bus))
        addrs = [f"127.0.0.1:{p}" for p in ports]
        try:
            r = subprocess.run(["redis-cli", "--cluster", "create", *addrs, "--cluster-replicas", "0",
                                "--cluster-yes"], capture_output=True, text=True, timeout=60,
                               stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise Skip("redis-cli --cluster create did not finish within 60 s")
        with open(self._log("cluster-create"), "w") as f:
            f.write(r.stdout + r.stderr)
        if r.returncode != 0:
            tail = " | ".join((r.stdout + r.stderr).strip().splitlines()[-3:])
            raise Skip(f"redis-cli --cluster create failed (exit {r.returncode}): {tail}")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            states = []
            for p in ports:
                try:
                    states.append(b"cluster_state:ok" in procs.command(p, "CLUSTER", "INFO"))
                except OSError:
                    states.append(False)
            if all(states):
                self.cluster_seeds = ",".join(addrs)
                return ports
            time.sleep(0.2)
        raise Skip("the cluster did not reach cluster_state:ok within 30 s")

    def _start_mongo_emulator(self):
        """tests/mongo/server.py on a free port; returns its URI."""
        role = "mongodb-emulator"
        if not os.path.exists(MONGO_EMULATOR):
            raise Skip(f"no MongoDB URI given (--mongodb-uri) and the emulator {MONGO_EMULATOR} is missing")
        p = procs.spawn(["/usr/bin/python3", MONGO_EMULATOR, "0"], self._log(role))
        self.procs.append((role, p))
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            try:
                with open(self._log(role)) as f:
                    first = f.readline()
            except OSError:
                first = ""
            if first.startswith("port ") and first.endswith("\n"):
                return f"mongodb://127.0.0.1:{int(first.split()[1])}"
            if p.poll() is not None:
                break
            time.sleep(0.05)
        raise Skip(f"the MongoDB emulator did not start: {_tail(self._log(role), 3)}")

    def _frontdoor_argv(self, port, data, extra=()):
        argv = [self.frontdoor, "--port", str(port), "--bind", "127.0.0.1", "--dir", data,
                "--backend", self.backend]
        if self.durability:
            argv += ["--durability", self.durability]
        if self.backend == "lmdb":
            argv += ["--lmdb-map-size", self.opts.get("lmdb_map_size") or "4gb"]
        if self.backend == "mongodb" and self.opts.get("mongo_w"):
            argv += ["--mongo-w", self.opts["mongo_w"]]
        if self.tls:
            self.tls_port = procs.free_port()
            argv += server_tls_args(self.tls, self.tls_port)
        return argv + list(extra)

    def _try_frontdoor(self, extra=(), probe=False):
        """Start frontdoor once. Returns (Popen, port) when it answers PING,
        raises Skip with the reason otherwise."""
        role = "frontdoor"
        data = os.path.join(self.workdir, "probe-data" if probe else "data")
        os.makedirs(data, exist_ok=True)
        for _ in range(3):
            port = procs.free_port()
            p = procs.spawn(self._frontdoor_argv(port, data, extra), self._log(role))
            if self._wait_ready(role, p, port, procs.ping, "frontdoor"):
                return p, port, data
            procs.stop(p)
            log = _tail(self._log(role), 20)
            if "in use" in log:
                continue
            low = log.lower()
            if self.backend in low and any(w in low for w in ("unknown", "not built", "not compiled", "no such",
                                                               "unsupported", "invalid", "must be one of",
                                                               "not available")):
                raise Skip(f"not built (frontdoor: {_tail(self._log(role), 2)})")
            raise Skip(f"frontdoor exited with code {p.returncode}: {_tail(self._log(role), 3)}")
        raise Skip("frontdoor: no free port after 3 tries")

    def _start_frontdoor(self):
        if not self.frontdoor:
            raise Skip("frontdoor binary not found (build: cmake -S . -B build && cmake --build build --target frontdoor; or --frontdoor PATH)")
        if not os.access(self.frontdoor, os.X_OK):
            raise Skip(f"frontdoor binary {self.frontdoor} is not executable")
        extra = []
        if self.backend in SERVICE:
            # First: is the backend compiled in at all? Started without its
            # server's address it may run (only PING is sent) or refuse for
            # want of settings; only "unknown backend" means not built.
            try:
                p, _, _ = self._try_frontdoor(probe=True)
                procs.stop(p)
            except Skip as e:
                if str(e).startswith("not built"):
                    raise
            shutil.rmtree(os.path.join(self.workdir, "probe-data"), ignore_errors=True)
            if self.backend == "redis":
                rport = self._start_redis("redis-server")
                extra = SERVICE_ARGS["redis"](f"127.0.0.1:{rport}")
            elif self.backend == "redis-cluster":
                self._start_cluster()
                extra = SERVICE_ARGS["redis-cluster"](self.cluster_seeds)
            else:
                uri = self.opts.get("mongodb_uri")
                if uri:
                    hp = procs.uri_hostport(uri)
                    if hp and not procs.port_open(hp[1], host=hp[0], timeout=2.0):
                        raise Skip(f"MongoDB at {uri} is not reachable ({hp[0]}:{hp[1]} refuses or does not answer)")
                else:
                    uri = self._start_mongo_emulator()
                    self.emulator = True
                extra = SERVICE_ARGS["mongodb"](uri)
                if self.emulator:
                    # frontdoor answers "backend unavailable" after backend-timeout
                    # (1 s); the single-threaded emulator falls behind 50 clients on
                    # lists, so it gets 10 s: its slowness shows as low figures.
                    extra += ["--backend-timeout", str(EMULATOR_BACKEND_TIMEOUT_MS)]
        try:
            p, port, data = self._try_frontdoor(extra)
        except Skip as e:
            if extra and any(a.lstrip("-") in str(e) for a in extra[::2]):
                raise Skip(f"backend built, but bench/fdbench/targets.py SERVICE_ARGS does not match its settings: {e}")
            raise
        self.procs.append(("frontdoor", p))
        self.datadirs.append(data)
        self.port = port
        self._serve_check()

    def _serve_check(self):
        """PING is answered by frontdoor itself: a SET and a DEL through it
        show that the backend behind it serves."""
        key = "fdbench:probe"
        try:
            r1 = procs.command(self.port, "SET", key, "1", timeout=10.0)
            r2 = procs.command(self.port, "DEL", key, timeout=10.0)
        except OSError as e:
            raise Skip(f"frontdoor started but its backend does not serve (SET probe: {e})")
        if not r1.startswith(b"+OK") or not r2.startswith(b":"):
            bad = (r1 if not r1.startswith(b"+OK") else r2).decode("utf-8", "replace").strip()
            raise Skip(f"frontdoor started but its backend does not serve: {bad[:200]}")
        inf = procs.info(self.port) or {}
        for k, v in inf.items():
            if k.endswith("_version") or k.endswith("_emulator") or k in ("backend",):
                self.versions["frontdoor_info." + k] = v
    # ---- sampling ------------------------------------------------------------

    def backend_counters(self):
        """frontdoor's own counters of its primary backend (INFO backends,
        be_primary: calls, usec, wait_usec), or None for a target without
        frontdoor or when INFO cannot be read."""
        if self.kind != "frontdoor" or not self.port:
            return None
        import socket
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=5) as c:
                c.sendall(b"*2\r\n$4\r\nINFO\r\n$8\r\nbackends\r\n")
                buf = b""
                while b"\r\n" not in buf:
                    buf += c.recv(65536)
                head, _, rest = buf.partition(b"\r\n")
                need = int(head[1:]) + 2
                while len(rest) < need:
                    chunk = c.recv(65536)
                    if not chunk:
                        return None
                    rest += chunk
        except (OSError, ValueError):
            return None
        for line in rest.decode("utf-8", "replace").splitlines():
            if line.startswith("be_primary:"):
                f = dict(kv.split("=", 1) for kv in line.split(":", 1)[1].split(",") if "=" in kv)
                try:
                    return {"name": f.get("name"), "opened_at": int(f["opened_at"]), "calls": int(f["calls"]),
                            "usec": float(f["usec"]), "wait_usec": float(f["wait_usec"])}
                except (KeyError, ValueError):
                    return None
        return None

    def sample(self):
        """CPU seconds and memory of every server process, data size on disk."""
        s = {"cpu_s": {}, "mem_kb": {}}
        for role, p in self.procs:
            s["cpu_s"][role] = procs.cpu_seconds(p.pid)
            s["mem_kb"][role] = procs.mem_kb(p.pid)
        disk = apparent = 0
        for d in self.datadirs:
            a, b = procs.dir_size(d)
            disk += a
            apparent += b
        s["data_disk_bytes"], s["data_apparent_bytes"] = disk, apparent
        return s


def build_flavour(path):
    """'CMAKE_BUILD_TYPE=Release' (+ sanitizers) from the CMakeCache.txt beside
    the binary, so a debug or ASan build is visible in the report."""
    if not path:
        return None
    cache = os.path.join(os.path.dirname(path), "CMakeCache.txt")
    vals = {}
    try:
        with open(cache) as f:
            for line in f:
                k, _, v = line.strip().partition("=")
                name = k.split(":", 1)[0]
                if name in ("CMAKE_BUILD_TYPE", "CMAKE_C_FLAGS") or "SANITIZ" in name.upper():
                    vals[name] = v
    except OSError:
        return None
    out = f"build type {vals.get('CMAKE_BUILD_TYPE') or '(none: no -O)'}"
    flags = " ".join(v for k, v in vals.items() if k != "CMAKE_BUILD_TYPE")
    if "sanitize" in flags.lower() or any(k for k, v in vals.items() if "SANITIZ" in k.upper() and v.upper() in ("ON", "1", "TRUE", "YES")):
        out += ", **sanitizers on: not a speed build**"
    return out
