"""Processes the benchmark starts: free ports, start/stop, /proc sampling,
a tiny RESP client for PING and INFO. Linux only, stdlib only."""
import ctypes
import errno
import os
import signal
import socket

from . import resp
import subprocess
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
_PR_SET_PDEATHSIG = 1
_AVOID_PORTS = {6379, 6380, 26379, 22222}

# Every child we started and have not reaped yet: pid -> Popen. The signal
# handler / finally block in bench/run walks this to leave nothing behind.
LIVE = {}


def free_port(host="127.0.0.1"):
    """A loopback port nobody listens on right now (the kernel picks it)."""
    for _ in range(50):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind((host, 0))
            port = s.getsockname()[1]
        finally:
            s.close()
        if port not in _AVOID_PORTS:
            return port
    raise RuntimeError("no free loopback port")


def free_port_with_bus(host="127.0.0.1"):
    """A free port P whose cluster bus port P + 10000 is free too."""
    for _ in range(200):
        port = free_port(host)
        if port + 10000 > 65535 or (port + 10000) in _AVOID_PORTS:
            continue
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind((host, port + 10000))
            return port
        except OSError:
            continue
        finally:
            s.close()
    raise RuntimeError("no free loopback port pair (P, P+10000)")


def uri_hostport(uri):
    """('host', port) of the first host in a mongodb:// URI, or None."""
    rest = uri.split("://", 1)[-1]
    rest = rest.split("/", 1)[0].split("?", 1)[0]
    rest = rest.rsplit("@", 1)[-1].split(",")[0]
    if not rest:
        return None
    if rest.startswith("["):
        host, _, port = rest[1:].partition("]")
        port = port.lstrip(":")
    else:
        host, _, port = rest.partition(":")
    try:
        return host, int(port or 27017)
    except ValueError:
        return None


def _child_setup():
    # Own session (a Ctrl-C on the terminal reaches only the runner, which then
    # stops everything in order) and die with the runner if it is SIGKILLed.
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except Exception:
        pass


def spawn(argv, log_path, cwd=None):
    """Start a long-running server; stdout+stderr go to log_path."""
    log = open(log_path, "ab")
    try:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                             cwd=cwd, start_new_session=True, preexec_fn=_child_setup)
    finally:
        log.close()
    LIVE[p.pid] = p
    return p


def stop(p, grace=5.0):
    """SIGTERM, wait up to grace seconds, then SIGKILL. Returns the exit code."""
    if p is None:
        return None
    if p.poll() is None:
        try:
            p.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            p.wait(grace)
        except subprocess.TimeoutExpired:
            try:
                p.kill()
            except ProcessLookupError:
                pass
            p.wait()
    LIVE.pop(p.pid, None)
    return p.returncode


def stop_all():
    for p in list(LIVE.values()):
        stop(p, grace=3.0)


# ---- /proc sampling -------------------------------------------------------

def cpu_seconds(pid):
    """utime+stime of pid in seconds, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except OSError:
        return None
    # comm may contain spaces/parentheses: split after the last ')'
    fields = data[data.rindex(")") + 2:].split()
    # fields[0] is field 3 (state); utime is field 14, stime field 15
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def mem_kb(pid):
    """{'VmRSS', 'VmHWM', 'RssAnon', 'RssFile': kB} of pid, or {} if it is gone.
    RssFile counts mapped file pages (LMDB's map, LevelDB's tables)."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def dir_size(path):
    """(bytes on disk, apparent bytes) of everything under path."""
    disk = apparent = 0
    for root, dirs, files in os.walk(path):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            disk += st.st_blocks * 512
            apparent += st.st_size
    return disk, apparent


def fs_type(path):
    """Filesystem type holding path (from /proc/mounts, longest prefix)."""
    path = os.path.realpath(path)
    best, best_type = "", "?"
    try:
        with open("/proc/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 3:
                    continue
                mnt = parts[1].replace("\\040", " ")
                if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) > len(best):
                    best, best_type = mnt, parts[2]
    except OSError:
        pass
    return best_type


# ---- minimal RESP client ---------------------------------------------------

def command(port, *args, timeout=2.0, host="127.0.0.1"):
    """Send one command, return the raw reply (bytes) read until it looks
    complete. Raises OSError on connection trouble."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(resp.encode(*args))
        buf = b""
        deadline = time.monotonic() + timeout
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
            if resp.complete(buf):
                break
            if time.monotonic() > deadline:
                raise socket.timeout("reply incomplete")
        return buf


def ping(port, timeout=1.0):
    try:
        return command(port, "PING", timeout=timeout).startswith(b"+PONG")
    except (OSError, ValueError):
        return False


def port_open(port, timeout=0.5, host="127.0.0.1"):
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def info(port, timeout=2.0):
    """INFO as a dict, or None if the server does not answer it."""
    try:
        raw = command(port, "INFO", timeout=timeout)
    except (OSError, ValueError):
        return None
    if not raw.startswith((b"$", b"=")):
        return None
    body = raw.partition(b"\r\n")[2].decode("utf-8", "replace")
    out = {}
    for line in body.splitlines():
        if ":" in line and not line.startswith("#"):
            k, _, v = line.partition(":")
            out[k] = v
    return out
