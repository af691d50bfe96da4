"""fdtest — shared harness for frontdoor's integration tests (stdlib only).

What it gives a test file:

  * free_port()                    a free loopback port (bind to port 0)
  * start_frontdoor(**directives)  frontdoor on a free port with a fresh temp
                                   --dir, waited for until it answers PING
  * start_redis(**directives)      a real redis-server (--save '' --appendonly no)
  * Conn(port)                     a raw RESP client: send()/send_raw(), read()
                                   returns the raw bytes of exactly one reply
                                   (nested aggregates, RESP3 types, attributes)
  * parse(raw)                     raw reply bytes -> Python values
  * Tests()                        a minimal runner: @T.case, T.main() prints
                                   every failure and a last line
                                   "N passed, N failed[, N skipped]"
  * cleanup                        every server is killed and every temp dir
                                   removed at the end of its case, at exit, on
                                   SIGTERM/SIGINT, on a case timeout; servers
                                   also get PR_SET_PDEATHSIG so a SIGKILLed
                                   test leaves nothing behind.

The binary under test comes from $FRONTDOOR_BIN (ctest sets it). When it is a
redis-server, directives that only frontdoor knows are translated or dropped
(see _translate_for_redis) so the tests can be validated against real Redis.

Environment knobs: FRONTDOOR_BIN, REDIS_SERVER_BIN (default
/usr/bin/redis-server), FD_KEEP=1 keeps temp dirs, FD_VERBOSE=1 prints more,
FD_CASE=substr runs only the cases whose name contains substr, FD_SKIP=a,b
skips (visibly) the cases named exactly a or b (an unknown name is an error),
CI=true or FD_REQUIRE_PREREQS=1 turns a missing prerequisite into a failure, FD_BACKEND=name
adds --backend name to every frontdoor started without an explicit backend
(FD_BACKEND=redis also starts a redis-server for each such frontdoor to
forward to, unless redis_address is given; FD_BACKEND=mongodb starts one
MongoDB emulator, tests/mongo/server.py, per test process and gives each
such frontdoor its own mongo-database on it, unless mongo_uri is given;
FD_BACKEND=redis-cluster starts one 3-master Redis Cluster per test process,
start_cluster(), and points each such frontdoor at it, flushed, unless
redis_cluster_seeds is given). FD_TLS=1 gives every frontdoor started
without a tls_port a TLS listener too (tls_pki()'s certificates,
tls-auth-clients optional), and its conn() — so Diff and diff_pair — speaks
TLS to it, as does Conn(port) for that TLS port (plain for the plain one).
"""

import atexit
import ctypes
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

# the RESP codec shared with the benchmark (bench/fdbench/resp.py)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from fdbench.resp import _b, encode, Err, Push, Verbatim, parse, _parse_at  # noqa: E402,F401
import time
import traceback

HOST = "127.0.0.1"
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
REDIS_SERVER = os.environ.get("REDIS_SERVER_BIN", "/usr/bin/redis-server")
REDIS_CLI = shutil.which("redis-cli") or "/usr/bin/redis-cli"
REDIS_BENCHMARK = shutil.which("redis-benchmark") or "/usr/bin/redis-benchmark"
VERBOSE = os.environ.get("FD_VERBOSE") == "1"
START_TIMEOUT = 15.0


# --------------------------------------------------------------- binaries

def frontdoor_bin():
    """$FRONTDOOR_BIN, else the newest build*/frontdoor of this checkout."""
    b = os.environ.get("FRONTDOOR_BIN")
    if b:
        return b
    cands = [p for p in glob.glob(os.path.join(REPO, "build*", "frontdoor"))
             + glob.glob(os.path.join(REPO, "build*", "*", "frontdoor"))
             if os.access(p, os.X_OK) and os.path.isfile(p)]
    if cands:
        cands.sort(key=os.path.getmtime)
        return cands[-1]
    raise SystemExit("fdtest: set FRONTDOOR_BIN to the frontdoor binary "
                     "(or FRONTDOOR_BIN=/usr/bin/redis-server to validate the tests)")


def is_redis_binary(path):
    return "redis-server" in os.path.basename(path)


def frontdoor_is_redis():
    return is_redis_binary(frontdoor_bin())


# --------------------------------------------------------------- ports

def free_port():
    """A port that was free a moment ago on 127.0.0.1 (never a fixed one)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((HOST, 0))
        return s.getsockname()[1]
    finally:
        s.close()


# --------------------------------------------------------------- RESP encoding

_INLINE_PLAIN = set(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:.-+*?[]^!,/@#%&=<>~")


def encode_inline(*args):
    """One command as an inline line: plain args as they are, others in
    double quotes with \\xHH escapes (as sdssplitargs reads them)."""
    parts = []
    for a in args:
        a = _b(a)
        if a and all(ch in _INLINE_PLAIN for ch in a):
            parts.append(a)
        else:
            q = bytearray(b'"')
            for ch in a:
                if 32 <= ch < 127 and ch not in (0x22, 0x5c):
                    q.append(ch)
                else:
                    q += b"\\x%02x" % ch
            q += b'"'
            parts.append(bytes(q))
    return b" ".join(parts) + b"\r\n"


def encode_many(cmds):
    return b"".join(encode(*c) for c in cmds)


# --------------------------------------------------------------- RESP client

class ConnClosed(Exception):
    """The peer closed the connection (EOF or reset) before a full reply."""

    def __init__(self, msg, partial=b""):
        Exception.__init__(self, msg)
        self.partial = partial


class ReplyTimeout(Exception):
    pass


class Conn:
    """A raw RESP connection. read() returns the exact bytes of one reply."""

    def __init__(self, port, timeout=5.0, host=HOST, connect_timeout=5.0, tls=None):
        """tls: an ssl.SSLContext: the connection is TLS (handshake here);
        a port that FD_TLS gave a frontdoor (start_frontdoor) is TLS too."""
        if tls is None and port in _tls_ports:
            tls = tls_client_context()
        self.port = port
        self.timeout = timeout
        self.sock = socket.create_connection((host, port), timeout=connect_timeout)
        if tls is not None:
            self.sock = tls.wrap_socket(self.sock, server_hostname=host if tls.check_hostname else None)
        self.sock.settimeout(timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.pos = 0
        self.eof = False

    # -- sending
    def send(self, *args):
        self.sock.sendall(encode(*args))

    def send_raw(self, data):
        self.sock.sendall(_b(data))

    def send_many(self, cmds):
        self.sock.sendall(encode_many(cmds))

    # -- receiving
    def _fill(self, deadline):
        if self.eof:
            raise ConnClosed("connection closed by server", bytes(self.buf[self.pos:]))
        left = deadline - time.monotonic()
        if left <= 0:
            raise ReplyTimeout("no complete reply within %.1fs (have %r)"
                               % (self.timeout, bytes(self.buf[self.pos:self.pos + 200])))
        self.sock.settimeout(left)
        try:
            chunk = self.sock.recv(1 << 16)
        except socket.timeout:
            raise ReplyTimeout("no complete reply within %.1fs (have %r)"
                               % (self.timeout, bytes(self.buf[self.pos:self.pos + 200])))
        except (ConnectionResetError, BrokenPipeError) as e:
            self.eof = True
            raise ConnClosed("connection reset: %s" % e, bytes(self.buf[self.pos:]))
        if not chunk:
            self.eof = True
            raise ConnClosed("connection closed by server", bytes(self.buf[self.pos:]))
        if self.pos > (1 << 20) and self.pos > len(self.buf) // 2:
            del self.buf[:self.pos]
            self.pos = 0
        self.buf += chunk

    def _line_end(self, start, deadline):
        while True:
            i = self.buf.find(b"\r\n", start)
            if i >= 0:
                return i
            start = max(start, len(self.buf) - 1)
            self._fill(deadline)

    def _need(self, end, deadline):
        while len(self.buf) < end:
            self._fill(deadline)

    def _skip_one(self, p, deadline):
        """Return the offset just past the complete reply starting at p."""
        self._need(p + 1, deadline)
        e = self._line_end(p, deadline)
        t = self.buf[p:p + 1]
        head = bytes(self.buf[p + 1:e])
        q = e + 2
        if t in (b"+", b"-", b":", b"_", b",", b"#", b"("):
            return q
        if t in (b"$", b"!", b"="):
            n = int(head)
            if n < 0:
                return q
            self._need(q + n + 2, deadline)
            if self.buf[q + n:q + n + 2] != b"\r\n":
                raise AssertionError("bulk not terminated by CRLF: %r"
                                     % bytes(self.buf[p:q + n + 2]))
            return q + n + 2
        if t in (b"*", b"~", b">", b"%", b"|"):
            n = int(head)
            if n < 0:
                return q
            if t in (b"%", b"|"):
                n *= 2
            for _ in range(n):
                q = self._skip_one(q, deadline)
            if t == b"|":          # an attribute precedes the actual reply
                q = self._skip_one(q, deadline)
            return q
        raise AssertionError("bad RESP type byte %r in %r"
                             % (bytes(t), bytes(self.buf[p:p + 80])))

    def read(self, timeout=None):
        """Raw bytes of exactly one complete reply."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        end = self._skip_one(self.pos, deadline)
        out = bytes(self.buf[self.pos:end])
        self.pos = end
        if self.pos == len(self.buf):
            self.buf.clear()
            self.pos = 0
        return out

    def read_n(self, n, timeout=None):
        return [self.read(timeout) for _ in range(n)]

    def cmd(self, *args):
        """Send one command, return its raw reply."""
        self.send(*args)
        return self.read()

    def call(self, *args):
        """Send one command, return its parsed reply."""
        return parse(self.cmd(*args))

    def pending(self):
        return bytes(self.buf[self.pos:])

    def read_all_until_close(self, timeout=5.0, limit=1 << 31):
        """Read until EOF; returns (bytes, closed?)."""
        deadline = time.monotonic() + timeout
        data = bytearray(self.buf[self.pos:])
        self.buf.clear()
        self.pos = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return bytes(data), False
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(1 << 16)
            except socket.timeout:
                return bytes(data), False
            except (ConnectionResetError, BrokenPipeError):
                self.eof = True
                return bytes(data), True
            if not chunk:
                self.eof = True
                return bytes(data), True
            if len(data) < limit:
                data += chunk

    def wait_closed(self, timeout=5.0):
        """True if the server closes the connection within timeout (any
        unread data is discarded)."""
        return self.read_all_until_close(timeout)[1]

    def is_open(self, wait=0.2):
        """Still connected and silent for `wait` seconds?"""
        data, closed = self.read_all_until_close(wait)
        if data:
            self.buf += data
        return not closed

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()


# --------------------------------------------------------------- RESP parsing

def to_str(v):
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("utf-8", "replace")
    return str(v)


def kv_pairs(v):
    """A map reply in RESP2 (flat list) or RESP3 (dict) form -> dict with
    str keys."""
    if isinstance(v, dict):
        return {to_str(k): v[k] for k in v}
    if isinstance(v, list):
        return {to_str(v[i]): v[i + 1] for i in range(0, len(v) - 1, 2)}
    raise AssertionError("not a map reply: %r" % (v,))


def info_fields(text):
    """INFO text -> {field: value} (section headers dropped)."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", "replace")
    out = {}
    for line in text.split("\r\n"):
        if not line or line.startswith("#") or ":" not in line:
            continue
        k, v = line.split(":", 1)
        out[k] = v
    return out


def info_sections(text):
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", "replace")
    return [l[2:].strip() for l in text.split("\r\n") if l.startswith("# ")]


# --------------------------------------------------------------- servers

_live_servers = []
_live_dirs = []


def _pdeathsig():
    """preexec_fn: the child dies with us, even if we are SIGKILLed."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)   # PR_SET_PDEATHSIG
    except Exception:
        pass


def make_tempdir(prefix="fdtest-"):
    d = tempfile.mkdtemp(prefix=prefix)
    _live_dirs.append(d)
    return d


def _remove_dir(d):
    if os.environ.get("FD_KEEP") == "1":
        return
    shutil.rmtree(d, ignore_errors=True)
    try:
        _live_dirs.remove(d)
    except ValueError:
        pass


def _size_arg(v):
    return str(v)


def _translate_for_redis(directives):
    """frontdoor directives -> redis-server argv pieces (for validating the
    tests against real Redis). Returns (args, config_file)."""
    args = []
    cfg = None
    for name, val in directives:
        n = name.replace("_", "-")
        if n == "config":
            cfg = val
            continue
        if (n in ("backend", "lmdb-map-size", "leveldb-cache-size", "redis-cluster-seeds")
                or n.startswith("mongo-")):
            continue
        if n == "durability":
            if val == "sync":
                args += ["--appendonly", "yes", "--appendfsync", "always"]
            continue
        if n == "client-output-buffer-limit":
            v = str(val)
            if len(v.split()) == 1:
                v = "normal %s %s 0" % (v, v)
            args += ["--" + n, v]
            continue
        args += ["--" + n, str(val)]
    return args, cfg


def _directive_list(kw):
    out = []
    for k, v in kw.items():
        if v is None:
            continue
        out.append((k.replace("_", "-"), v))
    return out


class Server:
    """One server process (frontdoor or redis-server) on a free loopback port.

    kind: "frontdoor" (the binary under test; may be a redis-server stand-in)
          or "redis" (the reference redis-server)."""

    def __init__(self, kind="frontdoor", directives=None, datadir=None,
                 binary=None, extra_args=None, password=None):
        self.kind = kind
        self.binary = binary or (frontdoor_bin() if kind == "frontdoor" else REDIS_SERVER)
        self.as_redis = is_redis_binary(self.binary)
        self.directives = list(directives or [])
        self.extra_args = list(extra_args or [])
        self.own_dir = datadir is None
        self.dir = datadir or make_tempdir("fdtest-%s-" % kind)
        self.logpath = os.path.join(self.dir if kind == "redis" else
                                    make_tempdir("fdtest-log-"), "server.log")
        self.password = password
        for n, v in self.directives:
            if n == "requirepass":
                self.password = v
        self.proc = None
        self.port = None
        self.log_offset = 0
        self.keep = False      # True: shared by cases, cleaned up at exit only
        self.expected_exit = False   # set when the test itself stops/kills it
        self.scanned = 0             # log bytes already checked for sanitizer reports

    # -- argv
    def argv(self, port):
        if self.kind == "redis":
            a = [self.binary, "--port", str(port), "--bind", HOST, "--dir", self.dir,
                 "--save", "", "--appendonly", "no", "--daemonize", "no",
                 "--logfile", ""]
            for n, v in self.directives:
                a += ["--" + n, str(v)]
            return a + self.extra_args
        if self.as_redis:
            rest, cfg = _translate_for_redis(self.directives)
            a = [self.binary]
            if cfg:
                a.append(cfg)
            # frontdoor has one database: SELECT 1 is an error there too
            a += ["--port", str(port), "--bind", HOST, "--dir", self.dir,
                  "--daemonize", "no", "--logfile", "", "--databases", "1"]
            return a + rest + self.extra_args
        a = [self.binary, "--port", str(port), "--bind", HOST, "--dir", self.dir]
        for n, v in self.directives:
            a += ["--" + n, str(v)]
        return a + self.extra_args

    # -- lifecycle
    def start(self, wait=True, port=None):
        tries = 1 if port else 3
        last = None
        for _ in range(tries):
            self.port = port or free_port()
            self._spawn()
            if not wait:
                return self
            try:
                self.wait_ready()
                return self
            except RuntimeError as e:
                last = e
                if "in use" not in self.log() and "EADDRINUSE" not in self.log():
                    raise
        raise last

    def _spawn(self):
        self.expected_exit = False
        argv = self.argv(self.port)
        if VERBOSE:
            print("  [start %s] %s" % (self.kind, " ".join(repr(x) for x in argv)))
        logf = open(self.logpath, "ab")
        self.log_offset = logf.tell()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=logf,
                                     stderr=subprocess.STDOUT, preexec_fn=_pdeathsig,
                                     cwd=self.dir)
        logf.close()
        if self not in _live_servers:
            _live_servers.append(self)

    def wait_ready(self, timeout=START_TIMEOUT):
        deadline = time.monotonic() + timeout
        while True:
            rc = self.proc.poll()
            if rc is not None:
                raise RuntimeError("%s exited with status %s before answering PING; "
                                   "argv: %s\n--- its output ---\n%s"
                                   % (self.kind, rc, " ".join(self.argv(self.port)),
                                      self.log()[-4000:]))
            try:
                with Conn(self.port, timeout=1.0, connect_timeout=0.5) as c:
                    r = c.cmd("PING")
                    if not r.startswith(b"-LOADING"):
                        return
            except (OSError, ConnClosed, ReplyTimeout):
                pass
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError("%s did not answer PING on port %d within %.0fs\n"
                                   "--- its output ---\n%s"
                                   % (self.kind, self.port, timeout, self.log()[-4000:]))
            time.sleep(0.05)

    def log(self):
        try:
            with open(self.logpath, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def rss_kb(self):
        """VmRSS of the server process in kB."""
        return self.proc_status_kb("VmRSS")

    def vmsize_kb(self):
        return self.proc_status_kb("VmSize")

    def proc_status_kb(self, field):
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        raise AssertionError("no %s for pid %d" % (field, self.pid))

    def conn(self, timeout=5.0, auth=True):
        tport = getattr(self, "tls_port", None)
        c = Conn(tport, timeout=timeout, tls=tls_client_context()) if tport else Conn(self.port, timeout=timeout)
        if auth and self.password:
            r = c.cmd("AUTH", self.password)
            if r != b"+OK\r\n":
                raise AssertionError("AUTH failed: %r" % r)
        return c

    def stop(self, sig=signal.SIGTERM, timeout=10.0):
        """Send sig, wait for exit; returns the exit status. SIGKILL after timeout."""
        if self.proc is None:
            return None
        self.expected_exit = True
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(sig)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
                raise AssertionError("%s did not exit within %.0fs of signal %d\n%s"
                                     % (self.kind, timeout, sig, self.log()[-2000:]))
        return self.proc.returncode

    def kill(self):
        self.expected_exit = True
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass

    def restart(self, wait=True):
        """Start again on the same --dir (and a new free port)."""
        if self.alive():
            self.stop()
        return self.start(wait=wait)

    def health_problems(self):
        """Problems to blame on the current case: the server exited without
        being asked to, or its log has new sanitizer reports."""
        out = []
        if self.proc is not None and self.proc.poll() is not None and not self.expected_exit:
            out.append("%s (pid %d) exited unexpectedly with status %s" %
                       (self.kind, self.proc.pid, self.proc.returncode))
        log = self.log()
        new = log[self.scanned:]
        self.scanned = len(log)
        for pat in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                    "WARNING: ThreadSanitizer", "Assertion `", "SUMMARY: "):
            i = new.find(pat)
            if i >= 0:
                out.append("%s log has a sanitizer/assert report:\n%s" %
                           (self.kind, new[max(0, i - 200):i + 3000]))
                break
        if out and (self.proc is None or self.proc.poll() is not None):
            out.append("--- last output ---\n" + log[-2500:])
        return out

    def cleanup(self):
        self.kill()
        if self in _live_servers:
            _live_servers.remove(self)
        if self.own_dir:
            _remove_dir(self.dir)
        d = os.path.dirname(self.logpath)
        if d != self.dir:
            _remove_dir(d)


def start_frontdoor(datadir=None, extra_args=None, wait=True, keep=False, **directives):
    """Start the binary under test: start_frontdoor(timeout=1, maxclients=2).
    Keyword names use '_' for '-' (client_query_buffer_limit=...).
    keep=True: shared by several cases (not killed at the end of a case)."""
    if os.environ.get("FD_BACKEND") and "backend" not in directives:
        directives["backend"] = os.environ["FD_BACKEND"]
    backing = None
    if (directives.get("backend") == "redis" and "redis_address" not in directives
            and not frontdoor_is_redis()):
        # the redis backend forwards to a redis-server: give it its own
        backing = start_redis(keep=keep)
        directives["redis_address"] = "%s:%d" % (HOST, backing.port)
    if (directives.get("backend") == "mongodb" and "mongo_uri" not in directives
            and not frontdoor_is_redis()):
        emu = shared_mongo()
        directives["mongo_uri"] = emu.uri
        _mongo_dbs[0] += 1
        directives.setdefault("mongo_database", "fdtest%d_%d" % (os.getpid(), _mongo_dbs[0]))
        # the emulator is slow Python (a 30k-key MSET takes seconds)
        directives.setdefault("backend_timeout", 20000)
    if directives.get("backend") == "mongodb" and os.environ.get("FD_MONGO_BIG_THRESHOLD"):
        # the "mongodb-big" variant (tests/CMakeLists.txt)
        directives.setdefault("mongo_big_threshold", int(os.environ["FD_MONGO_BIG_THRESHOLD"]))
    cluster = None
    if (directives.get("backend") == "redis-cluster" and "redis_cluster_seeds" not in directives
            and not frontdoor_is_redis()):
        # one cluster per test process; a new frontdoor finds it empty, as a
        # new redis backend finds its own redis-server
        why = redis_cluster_support()
        if why:
            missing_prerequisite("no local Redis Cluster: " + why)
        cluster = shared_cluster()
        cluster.flushall()
        directives["redis_cluster_seeds"] = cluster.seeds
    tls_port = None
    if os.environ.get("FD_TLS") == "1" and "tls_port" not in directives and not frontdoor_is_redis():
        p = tls_pki()
        tls_port = directives["tls_port"] = free_port()
        _tls_ports.add(tls_port)
        directives.update(tls_cert_file=p["server.crt"], tls_key_file=p["server.key"],
                          tls_ca_cert_file=p["ca.crt"], tls_auth_clients="optional")
    s = Server("frontdoor", _directive_list(directives), datadir=datadir,
               extra_args=extra_args)
    s.keep = keep
    s.backing = backing
    s.tls_port = tls_port
    s.start(wait=wait)
    if cluster is not None and wait:
        wait_cluster_map(s)
    return s


# --------------------------------------------------------------- Redis Cluster

def redis_cluster_support():
    """None if /usr/bin/redis-server can run a cluster here (7.0+: cluster-port
    lets the bus use a free port too), else why not."""
    rc, out = run([REDIS_SERVER, "--version"], timeout=10)
    if rc != 0:
        return "cannot run %s" % REDIS_SERVER
    import re
    m = re.search(r"v=(\d+)\.(\d+)", out)
    if not m or int(m.group(1)) < 7:
        return "redis-server %s lacks cluster-port (needs 7.0+)" % (m.group(0) if m else "?")
    if not os.access(REDIS_CLI, os.X_OK):
        return "no redis-cli"
    return None


class Cluster:
    """A local Redis Cluster: `masters` masters and `replicas` replicas per
    master, each a redis-server (cluster-enabled yes) in its own temp dir on
    free loopback ports (client and bus), created with
    redis-cli --cluster create ... --cluster-yes."""

    def __init__(self, masters=3, replicas=0, node_timeout=2000, keep=False, node_directives=None):
        """node_directives: a function returning more (name, value) pairs
        for each node (called once per node: e.g. its own tls-port)."""
        self.node_directives = node_directives
        self.nmasters = masters
        self.replicas = replicas
        self.node_timeout = node_timeout
        self.keep = keep
        self.nodes = []

    @property
    def seeds(self):
        return ",".join("%s:%d" % (HOST, n.port) for n in self.nodes[:self.nmasters])

    def start(self, timeout=60.0):
        for _ in range(self.nmasters * (1 + self.replicas)):
            s = Server("redis", [("cluster-enabled", "yes"), ("cluster-config-file", "nodes.conf"),
                                 ("cluster-node-timeout", self.node_timeout),
                                 ("cluster-port", free_port()), ("enable-debug-command", "yes")]
                       + (list(self.node_directives()) if self.node_directives else []))
            s.keep = self.keep
            self.nodes.append(s)
            s.start()
        argv = [REDIS_CLI, "--cluster", "create"] + ["%s:%d" % (HOST, n.port) for n in self.nodes]
        argv += ["--cluster-replicas", str(self.replicas), "--cluster-yes"]
        rc, out = run(argv, timeout=timeout)
        if rc != 0:
            raise RuntimeError("redis-cli --cluster create failed (%s):\n%s" % (rc, out[-3000:]))
        self.wait_ok(timeout)
        return self

    def live(self):
        return [n for n in self.nodes if n.alive()]

    def info(self, node, section):
        with Conn(node.port, timeout=5.0) as c:
            return info_fields(parse(c.cmd("INFO", section)))

    def slots_view(self, node):
        """{slot range: master port} as node sees it."""
        with Conn(node.port, timeout=5.0) as c:
            v = parse(c.cmd("CLUSTER", "SLOTS"))
        return sorted((e[0], e[1], e[2][1]) for e in v)

    def wait_ok(self, timeout=30.0):
        """Every live node says cluster_state:ok and they agree on the map."""
        def ok():
            try:
                views = []
                for n in self.live():
                    with Conn(n.port, timeout=2.0) as c:
                        if b"cluster_state:ok" not in c.cmd("CLUSTER", "INFO"):
                            return False
                    views.append(self.slots_view(n))
                return all(v == views[0] for v in views) and views
            except (OSError, ConnClosed, ReplyTimeout):
                return False
        wait_until(ok, timeout=timeout, interval=0.1, what="cluster_state:ok and one slot map on every node")

    def masters(self):
        """The live master nodes (Server objects), from CLUSTER NODES."""
        by_port = {n.port: n for n in self.live()}
        with Conn(self.live()[0].port, timeout=5.0) as c:
            text = parse(c.cmd("CLUSTER", "NODES")).decode()
        out = []
        for line in text.splitlines():
            f = line.split()
            if len(f) > 2 and "master" in f[2] and "fail" not in f[2]:
                port = int(f[1].split("@")[0].rsplit(":", 1)[1])
                if port in by_port:
                    out.append(by_port[port])
        return out

    def master_of(self, key):
        """The Server holding key's slot."""
        with Conn(self.live()[0].port, timeout=5.0) as c:
            slot = parse(c.cmd("CLUSTER", "KEYSLOT", key))
        for lo, hi, port in self.slots_view(self.live()[0]):
            if lo <= slot <= hi:
                return [n for n in self.nodes if n.port == port][0]
        raise AssertionError("no master for slot %d" % slot)

    def flushall(self):
        for n in self.masters():
            with Conn(n.port, timeout=5.0) as c:
                c.cmd("FLUSHALL")

    def cleanup(self):
        for n in self.nodes:
            n.cleanup()


_cluster_shared = []


def start_cluster(masters=3, replicas=0, node_timeout=2000, keep=False):
    """Start and create a local cluster (see Cluster). Its servers are
    cleaned up like any other (at the end of the case unless keep)."""
    return Cluster(masters, replicas, node_timeout, keep).start()


def shared_cluster():
    """One 3-master cluster per test process, started on first use."""
    for c in _cluster_shared:
        if all(n.alive() for n in c.nodes):
            return c
        c.cleanup()
        _cluster_shared.remove(c)
    c = start_cluster(keep=True)
    _cluster_shared.append(c)
    return c


def wait_cluster_map(fd, timeout=10.0):
    """Until frontdoor (backend redis-cluster) has loaded a slot map."""
    def ok():
        with Conn(fd.port, timeout=2.0) as c:
            if fd.password:
                c.cmd("AUTH", fd.password)
            return info_fields(parse(c.cmd("INFO", "backend"))).get("redis_cluster_map") == "ok"
    wait_until(ok, timeout=timeout, what="frontdoor's cluster slot map")


MONGO_SERVER = os.path.join(REPO, "tests", "mongo", "server.py")
_mongo_dbs = [0]
_mongo_shared = []


class MongoEmulator:
    """tests/mongo/server.py (mongomock over mockupdb) on a loopback port.
    An emulator: its speed says nothing about MongoDB's."""

    def __init__(self, port=0, args=()):
        self.port = port
        self.args = list(args)   # more options of tests/mongo/server.py (--delay-ms N)
        self.proc = None

    @property
    def uri(self):
        return "mongodb://%s:%d" % (HOST, self.port)

    def start(self, timeout=15.0):
        self.proc = subprocess.Popen(["/usr/bin/python3", MONGO_SERVER, str(self.port)] + self.args,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, preexec_fn=_pdeathsig)
        line = self.proc.stdout.readline().decode()
        if not line.startswith("port "):
            self.kill()
            raise RuntimeError("MongoDB emulator did not start (%r)" % line)
        self.port = int(line.split()[1])
        if self not in _mongo_shared:
            _mongo_shared.append(self)
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)

    def restart(self):
        """Start again on the same port (its data are gone: it is in memory)."""
        self.kill()
        deadline = time.monotonic() + 10
        while True:
            try:
                return self.start()
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


def shared_mongo():
    """One emulator per test process, started on first use."""
    for e in _mongo_shared:
        if e.alive():
            return e
    return MongoEmulator().start()


atexit.register(lambda: [e.kill() for e in list(_mongo_shared)])


def start_redis(extra_args=None, keep=False, **directives):
    """Start a reference redis-server (--save '' --appendonly no)."""
    s = Server("redis", _directive_list(directives), extra_args=extra_args)
    s.keep = keep
    return s.start()


def frontdoor_argv(directives, datadir, port=None, extra_args=None):
    s = Server("frontdoor", directives, datadir=datadir, extra_args=extra_args)
    return s.argv(port or free_port())


def run_frontdoor_expect_exit(directives=None, extra_args=None, timeout=10.0, datadir=None):
    """Run the binary with the given directives and expect it to exit by
    itself (startup error). Returns (returncode, output). A server that is
    still running after `timeout` is killed and reported as returncode None."""
    own = datadir is None
    d = datadir or make_tempdir("fdtest-startup-")
    try:
        s = Server("frontdoor", list(directives or []), datadir=d, extra_args=extra_args)
        argv = s.argv(free_port())
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, preexec_fn=_pdeathsig, cwd=d)
        try:
            out, _ = p.communicate(timeout=timeout)
            return p.returncode, out.decode("utf-8", "replace")
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate(timeout=5)
            return None, out.decode("utf-8", "replace")
    finally:
        if own:
            _remove_dir(d)


def cleanup_all():
    for s in list(_live_servers):
        try:
            s.cleanup()
        except Exception:
            pass
    for d in list(_live_dirs):
        _remove_dir(d)


atexit.register(cleanup_all)


def _on_term(signum, frame):
    cleanup_all()
    sys.stdout.flush()
    os._exit(128 + signum)


signal.signal(signal.SIGTERM, _on_term)
signal.signal(signal.SIGHUP, _on_term)


# --------------------------------------------------------------- runner

class Skip(Exception):
    pass


class CaseTimeout(BaseException):
    pass


def skip(reason):
    raise Skip(reason)


class ExpectedFailure(Exception):
    """Raised by known_bug(): the case shows a known, reported bug."""


class known_bug:
    """with known_bug("SRANDMEMBER is not uniform (storage/kv/kv_hash.c:295)"):
    ...assertions... — an AssertionError inside is a known bug: the case is
    reported as "xfail" (main stays green) with the bug's description. If
    nothing inside fails any more, the case FAILS ("xpass"): the bug is
    fixed, remove the marker so the assertions guard the fix."""

    def __init__(self, bug, active=True, strict=True):
        self.bug = bug
        self.active = active
        self.strict = strict      # False: a bug that shows only with some timings

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        if not self.active:
            return False
        if et is None:
            if not self.strict:
                print("      (known bug did not show this time: %s)" % self.bug)
                return False
            raise AssertionError("xpass: the known bug no longer shows, remove its known_bug() "
                                 "marker: " + self.bug)
        if issubclass(et, AssertionError):
            raise ExpectedFailure("%s\n  (the failing check: %s)" % (self.bug, str(ev).split("\n")[0][:300]))
        return False


def prerequisites_required():
    """True when a missing prerequisite must fail, not skip: in CI (CI=true)
    and under tests/run.sh (FD_REQUIRE_PREREQS=1), where
    tests/setup-debian.sh --test has just installed everything."""
    return (os.environ.get("CI", "").lower() in ("true", "1", "yes")
            or os.environ.get("FD_REQUIRE_PREREQS") == "1")


def missing_prerequisite(why):
    """A module, server or compiled-in backend the case needs is missing:
    a failure where the setup installs it (prerequisites_required()), a
    visible skip on a developer's machine."""
    if prerequisites_required():
        raise AssertionError("missing prerequisite (tests/setup-debian.sh --test installs it; "
                             "CI=true/FD_REQUIRE_PREREQS=1 make this a failure): " + why)
    skip("missing prerequisite: " + why)


APPS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "apps")


def need_node(module=None):
    """The path of node, with tests/apps/node_modules (and module in it)
    installed (tests/setup-debian.sh --test runs npm ci there; a worktree
    symlinks it: tests/integration/README.md), or missing_prerequisite."""
    nodejs = shutil.which("node")
    if not nodejs:
        missing_prerequisite("node (nodejs)")
    mods = os.path.join(APPS_DIR, "node_modules", *( [module] if module else []))
    if not os.path.isdir(mods):
        missing_prerequisite("%s (tests/setup-debian.sh --test runs npm ci in tests/apps)" % os.path.relpath(mods, APPS_DIR))
    return nodejs


def check(cond, msg="check failed", *info):
    if not cond:
        raise AssertionError(msg + ("".join("\n  " + _show(i) for i in info)))


def _show(x):
    if isinstance(x, (bytes, bytearray)) and len(x) > 600:
        return repr(bytes(x[:600])) + "...(%d bytes)" % len(x)
    s = repr(x)
    return s if len(s) < 1200 else s[:1200] + "..."


def eq(got, want, what=""):
    if got != want:
        raise AssertionError("%s\n     got: %s\n    want: %s" % (what or "mismatch",
                                                                 _show(got), _show(want)))


def wait_until(pred, timeout=5.0, interval=0.05, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.1fs waiting for %s" % (timeout, what))
        time.sleep(interval)


_sanitized_cache = {}


def is_sanitized(binary):
    """True if binary was built with AddressSanitizer (FRONTDOOR_SANITIZE)."""
    if binary not in _sanitized_cache:
        try:
            with open(binary, "rb") as f:
                _sanitized_cache[binary] = b"__asan_init" in f.read()
        except OSError:
            _sanitized_cache[binary] = False
    return _sanitized_cache[binary]


def stop_sanitized(servers):
    """Under ASan, SIGKILL would hide LeakSanitizer's report (it runs at
    exit): stop each live sanitized frontdoor of `servers` with SIGTERM and
    return the problems seen (a report in its log, a non-zero exit)."""
    probs = []
    for s in servers:
        if s.kind != "frontdoor" or not s.alive() or not is_sanitized(s.binary):
            continue
        try:
            rc = s.stop(signal.SIGTERM, timeout=30)
        except AssertionError as e:
            probs.append(str(e))
            continue
        probs += s.health_problems()
        if rc != 0:
            probs.append("%s (pid %d) exited with status %s after SIGTERM (sanitized build: "
                         "a leak report makes it non-zero)\n%s" % (s.kind, s.pid, rc, s.log()[-3000:]))
    return probs


def _health():
    time.sleep(0.05)
    probs = []
    for s in list(_live_servers):
        if s.kind == "frontdoor":
            probs += s.health_problems()
    return probs


class Tests:
    """@T.case registers a function (no args); T.main() runs them."""

    def __init__(self, name=None, case_timeout=45):
        self.name = name or os.path.basename(sys.argv[0])
        self.cases = []
        self.case_timeout = case_timeout
        self.setup_fns = []
        self.teardown_fns = []
        self.failures = []

    def case(self, fn=None, timeout=None):
        def reg(f):
            self.cases.append((f.__name__, f, timeout or self.case_timeout))
            return f
        if fn is not None:
            return reg(fn)
        return reg

    def add(self, name, fn, timeout=None):
        self.cases.append((name, fn, timeout or self.case_timeout))

    def teardown(self, fn):
        self.teardown_fns.append(fn)
        return fn

    def main(self):
        def on_alarm(signum, frame):
            raise CaseTimeout("case timed out")
        signal.signal(signal.SIGALRM, on_alarm)
        only = os.environ.get("FD_CASE")
        # FD_SKIP=a,b: the cases named exactly a or b are reported as skipped
        # (a backend that cannot give Redis's reply there, by design; the
        # reason is written beside the list in tests/CMakeLists.txt). A name
        # that is no case of this file is an error: a renamed case must not
        # quietly start running, nor a stale skip hide another.
        skips = [x.strip() for x in os.environ.get("FD_SKIP", "").split(",") if x.strip()]
        names = set(n for n, _, _ in self.cases)
        stale = [x for x in skips if x not in names]
        if stale:
            print("FD_SKIP names no case of %s: %s (cases: %s)"
                  % (self.name, ", ".join(stale), ", ".join(sorted(names))))
            sys.exit(2)
        passed = failed = skipped = xfailed = 0
        t_all = time.monotonic()
        print("%s: binary under test: %s" % (self.name, frontdoor_bin()))
        sys.stdout.flush()
        try:
            for name, fn, tmo in self.cases:
                if only and only not in name:
                    continue
                if name in skips:
                    skipped += 1
                    print("skip  %-44s (listed in FD_SKIP)" % name)
                    continue
                before = list(_live_servers)
                t0 = time.monotonic()
                signal.alarm(int(tmo))
                try:
                    fn()
                    signal.alarm(0)
                    probs = stop_sanitized([x for x in _live_servers if x not in before and not x.keep])
                    probs += _health()
                    if probs:
                        raise AssertionError("the case passed, but:\n" + "\n".join(probs))
                    passed += 1
                    print("ok    %-44s %6.2fs" % (name, time.monotonic() - t0))
                except Skip as e:
                    signal.alarm(0)
                    skipped += 1
                    print("skip  %-44s (%s)" % (name, e))
                except ExpectedFailure as e:
                    signal.alarm(0)
                    xfailed += 1
                    print("xfail %-44s known bug: %s" % (name, e))
                except KeyboardInterrupt:
                    signal.alarm(0)
                    raise
                except BaseException as e:
                    signal.alarm(0)
                    failed += 1
                    if isinstance(e, CaseTimeout):
                        detail = "timed out after %ds\n%s" % (tmo, traceback.format_exc())
                    else:
                        detail = traceback.format_exc()
                    if "the case passed, but:" not in detail:
                        try:
                            probs = _health()
                        except BaseException:
                            probs = []
                        if probs:
                            detail += "\nserver health:\n" + "\n".join(probs)
                    self.failures.append((name, detail))
                    print("FAIL  %-44s %6.2fs" % (name, time.monotonic() - t0))
                    for line in detail.rstrip().split("\n"):
                        print("      | " + line)
                finally:
                    for s in list(_live_servers):
                        if s not in before and not s.keep:
                            try:
                                s.cleanup()
                            except BaseException:
                                pass
                sys.stdout.flush()
            for fn in self.teardown_fns:
                try:
                    fn()
                except Exception:
                    pass
            # servers shared by cases: under ASan, SIGTERM them too and count
            # a leak report as a failure of the file
            probs = stop_sanitized(list(_live_servers))
            if probs:
                failed += 1
                self.failures.append(("shared servers at exit", "\n".join(probs)))
                print("FAIL  %-44s" % "shared servers at exit (sanitizer)")
                for line in "\n".join(probs).rstrip().split("\n"):
                    print("      | " + line)
        finally:
            cleanup_all()
        if self.failures:
            print("\nFailed cases: " + ", ".join(n for n, _ in self.failures))
        print("(%.1fs)" % (time.monotonic() - t_all))
        line = "%d passed, %d failed" % (passed, failed)
        if skipped:
            line += ", %d skipped" % skipped
        if xfailed:
            line += ", %d expected failures (known bugs)" % xfailed
        print(line)
        sys.stdout.flush()
        sys.exit(1 if failed else 0)


# --------------------------------------------------------------- misc helpers

# --------------------------------------------------------------- TLS

_tls = {}
_tls_ports = set()     # frontdoor TLS ports given by FD_TLS: Conn(port) speaks TLS to them


def tls_cert(d, name, ca=None, cn=None, san=True, days=3):
    """openssl CLI: <name>.key and <name>.crt in d, signed by <ca> (its .crt
    and .key in d), or a self-signed CA when ca is None; san: valid for
    localhost and 127.0.0.1."""
    def sh(*argv):
        r = subprocess.run(list(argv), cwd=d, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode:
            raise RuntimeError("%s: %s" % (" ".join(argv), r.stdout.decode(errors="replace")))
    cn = cn or name
    if ca is None:
        sh("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key",
           "-out", name + ".crt", "-days", str(days), "-subj", "/CN=" + cn)
        return
    sh("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key", "-out", name + ".csr",
       "-subj", "/CN=" + cn)
    ext = []
    if san:
        with open(os.path.join(d, "san.ext"), "w") as f:
            f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        ext = ["-extfile", "san.ext"]
    sh("openssl", "x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key",
       "-CAcreateserial", "-out", name + ".crt", "-days", str(days), *ext)


def tls_pki():
    """A CA, a server certificate (localhost, 127.0.0.1) and a client one,
    made once per process in a temp dir (never committed): {"dir", "ca.crt",
    "server.crt", "server.key", "client.crt", "client.key"}."""
    if not _tls:
        if not shutil.which("openssl"):
            missing_prerequisite("the openssl CLI")
        d = make_tempdir("fdtest-pki-")
        tls_cert(d, "ca", cn="fdtest-ca")
        tls_cert(d, "server", "ca", cn="localhost")
        tls_cert(d, "client", "ca", san=False)
        _tls.update({k: os.path.join(d, k) for k in
                     ("ca.crt", "ca.key", "server.crt", "server.key", "client.crt", "client.key")})
        _tls["dir"] = d
    return _tls


def tls_client_context(cert=True):
    """An ssl.SSLContext trusting tls_pki()'s CA, with its client certificate."""
    import ssl
    p = tls_pki()
    c = ssl.create_default_context(cafile=p["ca.crt"])
    if cert:
        c.load_cert_chain(p["client.crt"], p["client.key"])
    return c


def run(argv, timeout=60, input=None, env=None):
    """subprocess.run with a hard timeout; returns (rc, stdout+stderr text)."""
    try:
        p = subprocess.run(argv, input=input, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=timeout, env=env,
                           preexec_fn=_pdeathsig)
    except subprocess.TimeoutExpired as e:
        out = e.stdout or b""
        return None, out.decode("utf-8", "replace")
    return p.returncode, p.stdout.decode("utf-8", "replace")


def unknown_command_reply(conn, probe_args):
    """True if the server answers probe_args with '-ERR unknown command'."""
    r = conn.cmd(*probe_args)
    return r.startswith(b"-ERR unknown command")


# --------------------------------------------------------------- differential

def _abbrev(args, n=120):
    parts = []
    for a in args:
        b = _b(a)
        parts.append(repr(b[:60]) + ("..(%d)" % len(b) if len(b) > 60 else ""))
    s = " ".join(parts)
    return s if len(s) <= n * 3 else s[:n * 3] + "..."


def raw_exchange(port, data, ending, timeout=10.0):
    """Send data on a fresh connection; read until the bytes end with
    `ending` (no RESP parse: the reply may nest deeper than Python recurses)."""
    s = socket.create_connection((HOST, port), timeout=timeout)
    try:
        s.sendall(data)
        buf = b""
        deadline = time.monotonic() + timeout
        while not buf.endswith(ending) and time.monotonic() < deadline:
            x = s.recv(65536)
            if not x:
                break
            buf += x
        return buf
    finally:
        s.close()


def check_deep_reply_passes(ref_port, fd_port):
    """Issue 25: a script returning a self-referencing table gets a reply
    Redis cuts at its own Lua stack limit (~8000 levels); through frontdoor
    (redis backends) the same bytes arrive, RESP2 and RESP3, and the
    connection goes on (a PING behind it)."""
    req = encode("EVAL", "local t = {}; t[1] = t; return t", "0") + encode("PING")
    for proto in (2, 3):
        hello = encode("HELLO", "3") if proto == 3 else b""
        want = raw_exchange(ref_port, hello + req, b"+PONG\r\n")
        got = raw_exchange(fd_port, hello + req, b"+PONG\r\n")
        check(want.count(b"*1\r\n") > 1000 and want.endswith(b"+PONG\r\n"), "reference reply not deep", want[-80:])
        if proto == 3:     # HELLO's map names the servers: compare from the script's reply on
            want = want[want.index(b"*1\r\n"):]
            got = got[got.index(b"*1\r\n"):] if b"*1\r\n" in got else got
        check(got == want, "deep reply differs (proto %d)" % proto, len(got), len(want), got[-120:])


def raw_end(raw, p=0):
    """Offset just past the one complete reply that starts at raw[p]."""
    e = raw.index(b"\r\n", p)
    t = raw[p:p + 1]
    q = e + 2
    if t in (b"$", b"!", b"="):
        n = int(raw[p + 1:e])
        return q if n < 0 else q + n + 2
    if t in (b"*", b"~", b">", b"%", b"|"):
        n = int(raw[p + 1:e])
        if n < 0:
            return q
        if t in (b"%", b"|"):
            n *= 2
        for _ in range(n):
            q = raw_end(raw, q)
        if t == b"|":
            q = raw_end(raw, q)
        return q
    return q


def raw_elements(raw):
    """An aggregate reply -> (its header line, e.g. b"~3", [the raw bytes of
    each element]); any other reply -> (None, None)."""
    if raw[:1] not in (b"*", b"~", b">", b"%"):
        return None, None
    e = raw.index(b"\r\n")
    n = int(raw[1:e])
    if n < 0:
        return None, None
    if raw[:1] == b"%":
        n *= 2
    q = e + 2
    out = []
    for _ in range(n):
        end = raw_end(raw, q)
        out.append(raw[q:end])
        q = end
    if q != len(raw):
        raise ValueError("trailing bytes after reply: %r" % raw[q:q + 50])
    return raw[:e], out


def norm_sorted(raw):
    """Order-free aggregate reply (KEYS, SMEMBERS...): its header (so a RESP3
    set '~' never equals an array '*') and its elements' exact bytes,
    sorted. Anything else: the raw bytes, compared as they are."""
    head, elems = raw_elements(raw)
    if head is None:
        return raw
    return (head, sorted(elems))


def norm_pairs(raw):
    """Field/value reply in unspecified order (HGETALL): its header (a RESP3
    map '%N' never equals a flat array '*2N') and its (field, value) pairs,
    each as exact bytes, sorted."""
    head, elems = raw_elements(raw)
    if head is None:
        return raw
    return (head, sorted(zip(elems[0::2], elems[1::2])))


def ttl_close(tol):
    """Normaliser factory for TTL/PTTL: -1/-2 exactly, positives within tol."""
    def cmp(a, b):
        if a[:1] != b[:1]:
            return False        # the RESP type must match exactly
        va, vb = parse(a), parse(b)
        if not (isinstance(va, int) and isinstance(vb, int)):
            return a == b
        if va < 0 or vb < 0:
            return va == vb
        return abs(va - vb) <= tol
    return cmp


class Diff:
    """Send the same commands to a reference redis-server and to frontdoor
    and compare every reply byte for byte (or through a normaliser). All
    mismatches of a case are collected; finish() raises with the list."""

    def __init__(self, ref_conn, fd_conn, max_report=25):
        self.ref = ref_conn
        self.fd = fd_conn
        self.mismatches = []
        self.max_report = max_report
        self.count = 0

    def _compare(self, what, a, b, norm=None, same=None):
        self.count += 1
        if same is not None:
            ok = same(a, b)
        elif norm is not None:
            try:
                ok = norm(a) == norm(b)
            except Exception:
                ok = a == b
        else:
            ok = a == b
        if not ok:
            self.mismatches.append((what, a, b))
        return ok

    def cmd(self, *args, norm=None, same=None):
        a = self.ref.cmd(*args)
        try:
            b = self.fd.cmd(*args)
        except (ConnClosed, ReplyTimeout) as e:
            b = ("<%s: %s>" % (type(e).__name__, e)).encode()
            self.mismatches.append((_abbrev(args), a, b))
            self.fail_now()
        self._compare(_abbrev(args), a, b, norm, same)
        return a, b

    def ttl(self, key, pttl=False):
        if pttl:
            return self.cmd("PTTL", key, same=ttl_close(2500))
        return self.cmd("TTL", key, same=ttl_close(2))

    def raw(self, data, nreplies=1, what=None):
        self.ref.send_raw(data)
        self.fd.send_raw(data)
        out = []
        for i in range(nreplies):
            a = self.ref.read()
            try:
                b = self.fd.read()
            except (ConnClosed, ReplyTimeout) as e:
                b = ("<%s: %s>" % (type(e).__name__, e)).encode()
                self.mismatches.append((what or repr(_b(data)[:100]), a, b))
                self.fail_now()
            self._compare((what or "raw %r" % _b(data)[:100]) + " reply %d" % i, a, b)
            out.append((a, b))
        return out

    def send_compare(self, data, what, norm=None, same=None):
        """Send raw bytes holding one command to both, compare one reply."""
        self.ref.send_raw(data)
        self.fd.send_raw(data)
        a = self.ref.read()
        try:
            b = self.fd.read()
        except (ConnClosed, ReplyTimeout) as e:
            b = ("<%s: %s>" % (type(e).__name__, e)).encode()
            self.mismatches.append((what, a, b))
            self.fail_now()
        self._compare(what, a, b, norm, same)
        return a, b

    def pipeline(self, cmds, norms=None, encoder=None):
        """Pipeline cmds to both, compare reply i with reply i. norms[i] is an
        optional (norm, same) pair; encoder(i, cmd) -> bytes (default:
        multibulk). Returns the index of the first mismatch or -1."""
        data = b"".join(encoder(i, c) for i, c in enumerate(cmds)) if encoder else encode_many(cmds)
        self.ref.send_raw(data)
        self.fd.send_raw(data)
        first = -1
        for i, c in enumerate(cmds):
            a = self.ref.read()
            try:
                b = self.fd.read()
            except (ConnClosed, ReplyTimeout) as e:
                b = ("<%s: %s>" % (type(e).__name__, e)).encode()
                self.mismatches.append((_abbrev(c), a, b))
                self.fail_now()
            n, s = (norms[i] if norms and norms[i] else (None, None))
            if not self._compare(_abbrev(c), a, b, n, s) and first < 0:
                first = i
        return first

    def report(self):
        lines = ["%d of %d replies differ (redis-server vs frontdoor):"
                 % (len(self.mismatches), self.count)]
        for what, a, b in self.mismatches[:self.max_report]:
            lines.append("  cmd %s\n     redis: %s\n     fd:    %s" % (what, _show(a), _show(b)))
        if len(self.mismatches) > self.max_report:
            lines.append("  ... and %d more" % (len(self.mismatches) - self.max_report))
        return "\n".join(lines)

    def fail_now(self):
        raise AssertionError(self.report() + "\n  (frontdoor connection lost; case aborted)")

    def finish(self):
        if self.mismatches:
            raise AssertionError(self.report())


_shared = {}


def _shared_server(name):
    """The server kept under name ("ref": a redis-server with --databases 1,
    "fd": a frontdoor on FD_BACKEND), started on first use and kept for the
    whole test process. One found dead is reported with its output, cleaned
    up and started again."""
    s = _shared.get(name)
    if s is not None and not s.alive():
        print("      !! %s (pid %s) died with status %s; restarting it. Its output:\n%s"
              % (s.kind, s.proc.pid, s.proc.returncode, s.log()[-3000:]))
        s.cleanup()
        s = None
    if s is None:
        s = _shared[name] = (start_redis(databases=1, keep=True) if name == "ref"
                             else start_frontdoor(keep=True))
    return s


def shared_frontdoor():
    """One frontdoor shared by the cases of a test process (each case uses
    its own keys or flushes); restarted if found dead."""
    return _shared_server("fd")


def shared_redis():
    """The reference redis-server (--databases 1) of shared_pair() alone."""
    return _shared_server("ref")


def shared_pair():
    """(ref, fd): one reference redis-server (--databases 1, so that SELECT 1
    fails as on frontdoor, which has one database) and shared_frontdoor(),
    both kept for the whole test process; a dead one is reported and
    restarted."""
    return _shared_server("ref"), _shared_server("fd")


def diff_pair(resp3=False, flush=True, servers=None, timeout=5.0):
    """A Diff over new connections to servers (a (redis-server, frontdoor)
    pair; default shared_pair(); both connections with `timeout`):
    FLUSHDB on both first (unless flush=False), then HELLO 3 on both if resp3
    (each must reply with a map). The caller owns the Diff and its
    connections."""
    ref, fd = servers or shared_pair()
    d = Diff(ref.conn(timeout=timeout), fd.conn(timeout=timeout))
    if flush:
        d.cmd("FLUSHDB")
    if resp3:
        for c in (d.ref, d.fd):
            r = c.cmd("HELLO", "3")
            check(r.startswith(b"%"), "HELLO 3 must reply with a map", r)
    return d


_mongo_ready = {}


def need_mongodb(modules=("mockupdb", "mongomock")):
    """Skip unless the binary is frontdoor; a missing prerequisite unless it
    has the MongoDB backend and /usr/bin/python3 imports `modules` (the
    emulator's, plus whatever the caller reads documents with)."""
    if frontdoor_is_redis():
        skip("frontdoor is a redis-server stand-in")
    if "built" not in _mongo_ready:
        _mongo_ready["built"] = "mongodb" in run_frontdoor_expect_exit([("backend", "no-such-backend")])[1]
    if not _mongo_ready["built"]:
        missing_prerequisite("frontdoor built without the MongoDB backend (FRONTDOOR_WITH_MONGODB)")
    if modules not in _mongo_ready:
        _mongo_ready[modules] = subprocess.run(["/usr/bin/python3", "-c", "import " + ", ".join(modules)],
                                               capture_output=True).returncode == 0
    if not _mongo_ready[modules]:
        missing_prerequisite("the test server needs %s (bash tests/setup-debian.sh --test)"
                             % ", ".join("python3-" + m for m in modules))


def start_mongo_frontdoor(uri, **directives):
    """need_mongodb(), then start_frontdoor on the mongodb backend at `uri`
    with a database of its own (mongo_database, unless given) and
    backend_timeout 20000 (the emulator can take seconds on a loaded
    machine), unless given."""
    need_mongodb()
    directives.setdefault("mongo_database", "t" + os.urandom(4).hex())
    directives.setdefault("backend_timeout", 20000)
    return start_frontdoor(backend="mongodb", mongo_uri=uri, **directives)


class DiffTwo:
    """Two clients per server over shared_pair() (diff_pair): a step
    ("@B", cmd...) of diff_steps runs on the second; mismatches of both are
    collected in `a`. The caller closes it."""

    def __init__(self, resp3, first=()):
        self.a = diff_pair(resp3)
        for cmd in first:               # e.g. ("SCRIPT", "FLUSH")
            self.a.cmd(*cmd)
        self.b = diff_pair(resp3, flush=False)
        self.b.mismatches = self.a.mismatches   # one report

    def close(self):
        for d in (self.a, self.b):
            d.ref.close()
            d.fd.close()


def diff_steps(steps, two):
    """Run steps on a DiffTwo: a callable gets the DiffTwo, ("SLEEP", s)
    waits, ("@B", cmd...) goes to the second client, a tuple to the first."""
    for st in steps:
        if callable(st):
            st(two)
        elif st and st[0] == "SLEEP":
            time.sleep(st[1])
        elif st and st[0] == "@B":
            two.b.cmd(*st[1:])
        else:
            two.a.cmd(*st)


def diff_case(T, name, steps, first=()):
    """Register a case on T: steps once in RESP2 and once in RESP3 on a new
    DiffTwo each, failing with the mismatches' report."""
    def fn():
        for resp3 in (False, True):
            two = DiffTwo(resp3, first)
            try:
                diff_steps(steps, two)
                if two.a.mismatches:
                    raise AssertionError(("RESP3: " if resp3 else "RESP2: ") + two.a.report())
            finally:
                two.close()
    fn.__name__ = name
    T.add(name, fn)


def diff_pipelined(cmds):
    """A step: send cmds in one write to both servers, compare every reply."""
    def step(two):
        two.a.pipeline(cmds)
    return step


# --------------------------------------------------------------- hostile load helpers

class Probe:
    """A well-behaved client on its own thread while something hostile runs:
    every `interval` s it SETs a fresh value on its own key and GETs it back,
    and records errors (a wrong reply, a dropped connection) and the worst
    round-trip. start() / stop(); then .errors, .rounds, .worst (seconds)."""

    def __init__(self, port, key="probe:key", interval=0.02, timeout=5.0):
        import threading
        self.port, self.key, self.interval, self.timeout = port, key, interval, timeout
        self.errors, self.rounds, self.worst = [], 0, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        try:
            c = Conn(self.port, timeout=self.timeout)
        except OSError as e:
            self.errors.append("probe connect: %r" % (e,))
            return
        with c:
            while not self._stop.is_set():
                v = b"%d" % self.rounds
                t0 = time.monotonic()
                try:
                    c.send_raw(encode("SET", self.key, v) + encode("GET", self.key))
                    got = c.read_n(2)
                except Exception as e:       # noqa: BLE001 - recorded, reported by check_ok
                    self.errors.append("round %d: %r" % (self.rounds, e))
                    return
                self.worst = max(self.worst, time.monotonic() - t0)
                want = [b"+OK\r\n", b"$%d\r\n%s\r\n" % (len(v), v)]
                if got != want:
                    self.errors.append("round %d: %r != %r" % (self.rounds, got, want))
                self.rounds += 1
                self._stop.wait(self.interval)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(self.timeout + 5)

    def check_ok(self, what, max_latency=1.0, min_rounds=5):
        """Fail unless every round was right, there were some, and the
        worst round trip stayed under max_latency seconds."""
        check(not self.errors, "%s: the well-behaved client saw errors" % what, self.errors[:5])
        check(self.rounds >= min_rounds, "%s: the well-behaved client ran only %d rounds"
              % (what, self.rounds))
        check(self.worst <= max_latency, "%s: the well-behaved client waited %.3f s (bound %.1f s)"
              % (what, self.worst, max_latency))


def backends_idle(c, timeout=15.0):
    """Wait until frontdoor (c: a connection with .cmd) has no request in
    flight to any backend (the inflight= of every be_* line of INFO
    backends); returns how many are still owed at the timeout (0: idle).
    Clients that timed out or closed leave their requests queued to a slow
    backend, and the MongoDB backend raises events in submission order,
    behind the requests before them."""
    deadline = time.monotonic() + timeout
    while True:
        f = info_fields(parse(c.cmd("INFO", "backends")))
        owed = sum(int(v.split("inflight=")[1].split(",")[0]) for k, v in f.items()
                   if k.startswith("be_") and "inflight=" in v)
        if owed == 0 or time.monotonic() > deadline:
            return owed
        time.sleep(0.05)


def settled_rss_kb(server, timeout=5.0, interval=0.2, field="VmRSS"):
    """The server's VmRSS (or another /proc/PID/status field: RssAnon, its
    own memory without the file pages it maps, e.g. LMDB's data file) once
    it stops moving (two samples `interval` apart within 1 %, or the last
    sample after `timeout`)."""
    deadline = time.monotonic() + timeout
    prev = server.proc_status_kb(field)
    while time.monotonic() < deadline:
        time.sleep(interval)
        cur = server.proc_status_kb(field)
        if abs(cur - prev) <= prev // 100:
            return cur
        prev = cur
    return prev
