#!/usr/bin/python3
"""TLS for clients (tls-port, proxy/tls.h, docs/tls.md), with real clients.

Certificates are made by this test with the openssl CLI in a temp dir (a CA,
the server, a client, an expired client, a client and a server of another
CA): nothing is committed.

(a) redis-cli --tls and redis-py ssl=True with a client certificate; port 0
    is TLS only; tls-port alongside port serves both.
(b) tls-auth-clients yes refuses a client without a certificate, with a
    certificate of another CA, with an expired certificate; optional
    accepts no certificate but refuses a bad one; no accepts anyone.
(c) a client that trusts another CA refuses frontdoor's certificate.
(d) plain RESP sent to the TLS port is dropped; the server lives on.
(e) a client that stops mid-handshake (silent TCP, or half a ClientHello)
    does not delay others, and is closed after tls-handshake-timeout.
(f) big pipelines and big values (decrypted bytes left inside OpenSSL
    after a read, SSL_pending, are processed without a new socket event).
(g) CONFIG SET tls-cert-file/tls-key-file: new connections get the new
    certificate, the open one keeps working; a bad file is refused with
    Redis's error and the running context is kept.
(h) a missing certificate at start-up is a clear start-up error.
(i) ioredis tls:{} (tests/apps/node_modules) when node is present.
(j) the redis backend over TLS (redis-tls, a real redis-server with
    --tls-port and tls-auth-clients yes: frontdoor's client certificate):
    commands, a pipeline and a big value go through; the ab- twins exist.
(k) a backend whose certificate is expired, untrusted or of another name
    (redis-tls-sni), or a plain connection to its TLS port: clients get
    "-ERR backend unavailable (... certificate ...)" quickly, never a hang,
    and the log says why.
(l) the mongodb backend through a TLS terminator (Python ssl in front of
    the emulator, tests/mongo/server.py): mongo-uri with tls=true and
    tlsCAFile, and a client certificate (tlsCertificateKeyFile) the
    terminator requires; a URI trusting another CA gets an error reply.
(m) the same with the mongo-tls-* directives and a plain URI (libmongoc's
    mongoc_ssl_opt_t): a client key encrypted with a password; a CA that
    did not sign the terminator's certificate gets "-ERR backend
    unavailable (... certificate ...)" within backend-timeout; allow-
    invalid-certificates accepts it; a certificate of another name is
    refused unless allow-invalid-hostnames; the ab- twins exist.
(n) redis-cluster with tls-cluster yes nodes (frontdoor reaching them over
    TLS only): slots are migrated node to node (MIGRATING/IMPORTING, MIGRATE
    over the nodes' TLS ports, SETSLOT NODE) back and forth while clients
    write through frontdoor: frontdoor follows ASK and MOVED to TLS nodes,
    no error reply, and every acknowledged write is there afterwards.
"""
import os
import socket
import ssl
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import (parse, start_redis, Cluster, redis_cluster_support, wait_cluster_map, need_mongodb, start_mongo_frontdoor, shared_mongo, Tests, Conn, ConnClosed, start_frontdoor, check, eq, skip, free_port, frontdoor_is_redis,
                    HOST, REDIS_CLI, run, missing_prerequisite, Server, tls_pki, tls_cert, need_node, APPS_DIR,
                    run_frontdoor_expect_exit, info_fields)

T = Tests()


def pki():
    """fdtest.tls_pki()'s CA, server and client, and (made once) a second
    server certificate, an expired client certificate, a second CA and a
    client of it."""
    p = tls_pki()
    d = p["dir"]
    if "expired.crt" in p:
        return p
    tls_cert(d, "server2", "ca", cn="localhost")   # the reloaded certificate (same CA, another key)
    tls_cert(d, "ca2", cn="fdtest-ca2")
    tls_cert(d, "other", "ca2", san=False)          # a client of another CA
    # an expired client certificate: `openssl ca` takes explicit dates
    os.makedirs(os.path.join(d, "db"), exist_ok=True)
    open(os.path.join(d, "db", "index.txt"), "w").close()
    with open(os.path.join(d, "ca.cnf"), "w") as f:
        f.write("[ca]\ndefault_ca=c\n[c]\ndatabase=db/index.txt\nnew_certs_dir=db\nserial=db/serial\n"
                "default_md=sha256\npolicy=p\n[p]\ncommonName=supplied\n")
    with open(os.path.join(d, "db", "serial"), "w") as f:
        f.write("1000\n")
    for argv in (["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "expired.key", "-out",
                  "expired.csr", "-subj", "/CN=expired"],
                 ["openssl", "ca", "-batch", "-config", "ca.cnf", "-cert", "ca.crt", "-keyfile", "ca.key",
                  "-in", "expired.csr", "-out", "expired.crt", "-startdate", "20200101000000Z",
                  "-enddate", "20200102000000Z", "-notext"]):
        r = subprocess.run(argv, cwd=d, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        check(r.returncode == 0, r.stdout.decode(errors="replace"))
    p.update({k: os.path.join(d, k) for k in (
        "ca2.crt", "server2.crt", "server2.key", "other.crt", "other.key", "expired.crt", "expired.key")})
    return p


def need():
    if frontdoor_is_redis():
        skip("the binary under test is redis-server (its TLS is tested upstream)")
    return pki()


def start_tls(tls_only=False, **kw):
    """frontdoor with a TLS listener (and the plain port unless tls_only);
    returns (server, tls_port)."""
    p = pki()
    tport = free_port()
    d = dict(tls_port=tport, tls_cert_file=p["server.crt"], tls_key_file=p["server.key"],
             tls_ca_cert_file=p["ca.crt"])
    d.update(kw)
    if tls_only:
        # TLS only: the harness waits on the plain port, so wait here
        d["port"] = 0
        s = start_frontdoor(wait=False, **d)
        s.port = None
        deadline = time.monotonic() + 15
        while True:
            try:
                with tls_conn(tport) as c:
                    eq(c.cmd("PING"), b"+PONG\r\n")
                break
            except (OSError, ConnClosed):
                if time.monotonic() > deadline or s.proc.poll() is not None:
                    raise RuntimeError("frontdoor did not answer on tls-port:\n" + s.log()[-3000:])
                time.sleep(0.1)
        return s, tport
    return start_frontdoor(**d), tport


def ctx(cert="client", ca="ca.crt", verify=True):
    p = pki()
    c = ssl.create_default_context(cafile=p[ca])
    if not verify:
        c.check_hostname = False
        c.verify_mode = ssl.CERT_NONE
    if cert:
        c.load_cert_chain(p[cert + ".crt"], p[cert + ".key"])
    return c


def tls_conn(port, **kw):
    return Conn(port, tls=ctx(**kw))


def refused(port, **kw):
    """True when the server refuses this client: the handshake fails, or (TLS
    1.3: the client's certificate is checked after the client's Finished)
    the first command gets no reply but a closed connection."""
    try:
        with tls_conn(port, **kw) as c:
            c.sock.settimeout(3)
            c.cmd("PING")
        return False
    except (ssl.SSLError, ConnClosed, ConnectionResetError, BrokenPipeError):
        return True


def plain_bytes_to(port, data):
    """Send data in the clear to a TLS port; all it answers until it closes
    (or 5 s pass)."""
    raw = socket.create_connection((HOST, port), timeout=5)
    raw.sendall(data)
    got = b""
    try:
        while True:
            b = raw.recv(4096)
            if not b:
                break
            got += b
    except (ConnectionResetError, socket.timeout):
        pass
    raw.close()
    return got


def cli(port, *args, cert=True, ca="ca.crt"):
    p = pki()
    a = [REDIS_CLI, "-h", HOST, "-p", str(port), "--tls", "--cacert", p[ca]]
    if cert:
        a += ["--cert", p["client.crt"], "--key", p["client.key"]]
    return run(a + list(args), timeout=20)


@T.case
def redis_cli_and_redis_py_tls_only():
    need()
    s, tport = start_tls(tls_only=True)
    rc, out = cli(tport, "SET", "k", "v")
    eq((rc, out.strip()), (0, "OK"))
    rc, out = cli(tport, "GET", "k")
    eq((rc, out.strip()), (0, "v"))
    import redis
    p = pki()
    r = redis.Redis(host=HOST, port=tport, ssl=True, ssl_ca_certs=p["ca.crt"], ssl_certfile=p["client.crt"],
                    ssl_keyfile=p["client.key"], socket_timeout=5)
    eq(r.get("k"), b"v")
    r.hset("h", mapping={"a": "1", "b": "2"})
    eq(r.hgetall("h"), {b"a": b"1", b"b": b"2"})
    r.close()


@T.case
def plain_and_tls_side_by_side():
    need()
    s, tport = start_tls()
    with Conn(s.port) as plain, tls_conn(tport) as t:
        eq(plain.cmd("SET", "x", "1"), b"+OK\r\n")
        eq(t.cmd("GET", "x"), b"$1\r\n1\r\n")
        eq(t.cmd("CONFIG", "GET", "tls-port")[-8:].strip(b"\r\n").split(b"\r\n")[-1], str(tport).encode())


@T.case
def client_auth_yes_optional_no():
    need()
    s, tport = start_tls()              # tls-auth-clients yes (the default, as Redis)
    check(not refused(tport), "a client with a certificate of the CA is served")
    check(refused(tport, cert=None), "no client certificate: refused")
    check(refused(tport, cert="other"), "a certificate of another CA: refused")
    check(refused(tport, cert="expired"), "an expired certificate: refused")
    with Conn(s.port) as c:
        eq(c.cmd("PING"), b"+PONG\r\n")
    s.stop()
    s, tport = start_tls(tls_auth_clients="optional")
    check(not refused(tport, cert=None), "optional: no certificate is fine")
    check(not refused(tport), "optional: a good certificate is fine")
    check(refused(tport, cert="other"), "optional: a certificate of another CA is still refused")
    s.stop()
    s, tport = start_tls(tls_auth_clients="no", tls_ca_cert_file="")
    check(not refused(tport, cert=None), "no: anyone")


@T.case
def client_refuses_untrusted_server():
    need()
    s, tport = start_tls()
    try:
        tls_conn(tport, ca="ca2.crt").close()
        check(False, "a client trusting another CA accepted frontdoor's certificate")
    except ssl.SSLCertVerificationError:
        pass
    rc, out = cli(tport, "PING", ca="ca2.crt")
    check(rc != 0 or "PONG" not in out, "redis-cli trusting another CA: " + out)


@T.case
def plain_resp_to_tls_port():
    need()
    s, tport = start_tls()
    got = plain_bytes_to(tport, b"*1\r\n$4\r\nPING\r\n")
    check(b"PONG" not in got, "plain RESP got a reply on the TLS port: %r" % got)
    with tls_conn(tport) as c:
        eq(c.cmd("PING"), b"+PONG\r\n")


@T.case
def stalled_handshakes_do_not_block_others():
    need()
    s, tport = start_tls(tls_handshake_timeout=1500)
    silent = [socket.create_connection((HOST, tport), timeout=5) for _ in range(5)]
    # half a ClientHello: a TLS record header announcing more than is sent
    half = socket.create_connection((HOST, tport), timeout=5)
    half.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 20)
    t0 = time.monotonic()
    with tls_conn(tport) as c:
        for i in range(50):
            eq(c.cmd("INCR", "n"), (":%d\r\n" % (i + 1)).encode())
    check(time.monotonic() - t0 < 3, "other clients waited for the stalled handshakes")
    # after tls-handshake-timeout the stalled ones are closed
    for sock in silent + [half]:
        sock.settimeout(6)
        try:
            eq(sock.recv(100), b"")
        except ConnectionResetError:
            pass
        sock.close()
    check(time.monotonic() - t0 >= 1.0, "closed before the timeout")
    with tls_conn(tport) as c:
        eq(c.cmd("GET", "n"), b"$2\r\n50\r\n")


@T.case
def big_pipelines_and_values():
    need()
    s, tport = start_tls()
    with tls_conn(tport) as c:
        n = 3000
        c.send_many([("SET", "k%d" % i, "v" * (i % 97)) for i in range(n)])
        for i in range(n):
            eq(c.read(), b"+OK\r\n")
        big = os.urandom(3 * 1024 * 1024 + 7)
        eq(c.cmd("SET", "big", big), b"+OK\r\n")
        # one write holding many small commands: they arrive in a few TLS
        # records, whose decrypted bytes outlast one read
        c.send_many([("GET", "k%d" % i) for i in range(n)])
        for i in range(n):
            v = b"v" * (i % 97)
            eq(c.read(), b"$%d\r\n%s\r\n" % (len(v), v))
        r = c.cmd("GET", "big")
        eq(r, b"$%d\r\n%s\r\n" % (len(big), big))
        eq(c.cmd("STRLEN", "big"), b":%d\r\n" % len(big))


@T.case
def idle_connection_gives_back_its_buffers():
    """A TLS client idle for more than a second has its record buffers
    freed (px_tls_idle, from the cron); its next commands, a pipeline and a
    value bigger than a record, work as before."""
    need()
    s, tport = start_tls()
    with tls_conn(tport) as c:
        eq(c.cmd("SET", "idle", "x" * 100000), b"+OK\r\n")
        time.sleep(2.5)
        eq(c.cmd("STRLEN", "idle"), b":100000\r\n")
        got = c.cmd("GET", "idle")
        eq(len(got), len(b"$100000\r\n") + 100000 + 2)
        time.sleep(2.5)
        c.send_many([("INCR", "n")] * 200)
        eq(c.read_n(200)[-1], b":200\r\n")


@T.case
def config_set_reloads_certificate():
    need()
    p = pki()
    s, tport = start_tls()
    old = tls_conn(tport)
    eq(old.cmd("SET", "a", "1"), b"+OK\r\n")
    eq(old.cmd("CONFIG", "SET", "tls-cert-file", p["server2.crt"], "tls-key-file", p["server2.key"]), b"+OK\r\n")
    with open(p["server2.crt"], "rb") as f:
        want = ssl.PEM_cert_to_DER_cert(f.read().decode())
    with tls_conn(tport) as c:
        eq(c.sock.getpeercert(binary_form=True), want)
        eq(c.cmd("GET", "a"), b"$1\r\n1\r\n")
    eq(old.cmd("GET", "a"), b"$1\r\n1\r\n")    # the open connection keeps its session
    r = old.cmd("CONFIG", "SET", "tls-cert-file", os.path.join(p["dir"], "nonexistent.crt"))
    check(r.startswith(b"-ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - "
                       b"Unable to update TLS configuration"), r)
    check("Failed to load certificate" in s.log(), "the reason is logged")
    with open(p["server2.crt"], "rb") as f:
        eq(old.cmd("CONFIG", "GET", "tls-cert-file"),
           b"*2\r\n$13\r\ntls-cert-file\r\n$%d\r\n%s\r\n" % (len(p["server2.crt"]), p["server2.crt"].encode()))
    with tls_conn(tport) as c:
        eq(c.sock.getpeercert(binary_form=True), want)
    old.close()


@T.case
def startup_errors():
    need()
    p = pki()
    s = Server("frontdoor", [("tls-port", free_port()), ("tls-key-file", p["server.key"]),
                             ("tls-cert-file", os.path.join(p["dir"], "missing.crt")),
                             ("tls-ca-cert-file", p["ca.crt"])])
    try:
        s.start()
        check(False, "started with a missing certificate")
    except RuntimeError as e:
        s.expected_exit = True
        check("Failed to load certificate" in str(e), str(e)[-500:])
    s = Server("frontdoor", [("tls-port", free_port()), ("tls-cert-file", p["server.crt"]),
                             ("tls-key-file", p["server.key"])])
    try:
        s.start()
        check(False, "started with tls-auth-clients yes and no CA")
    except RuntimeError as e:
        s.expected_exit = True
        check("tls-ca-cert-file or tls-ca-cert-dir" in str(e), str(e)[-500:])


@T.case
def ioredis_tls():
    need()
    p = pki()
    mods = os.path.join(APPS_DIR, "node_modules", "ioredis")
    need_node("ioredis")
    s, tport = start_tls(tls_only=True)
    js = ("const Redis=require(%r);const fs=require('fs');"
          "const r=new Redis({host:'127.0.0.1',port:%d,tls:{ca:fs.readFileSync(%r),cert:fs.readFileSync(%r),"
          "key:fs.readFileSync(%r),servername:'localhost'},maxRetriesPerRequest:1});"
          "(async()=>{await r.set('io','ok');const p=r.pipeline();for(let i=0;i<500;i++)p.incr('c');"
          "await p.exec();console.log(await r.get('io'),await r.get('c'));r.disconnect();})()"
          ".catch(e=>{console.error(e);process.exit(1)});") % (mods, tport, p["ca.crt"], p["client.crt"],
                                                              p["client.key"])
    rc, out = run(["node", "-e", js], timeout=30)
    eq((rc, out.strip()), (0, "ok 500"))


def tls_redis(cert="server"):
    """A redis-server with a TLS port (client certificates required);
    returns (server, tls_port)."""
    p = pki()
    tport = free_port()
    r = start_redis(tls_port=tport, tls_cert_file=p[cert + ".crt"], tls_key_file=p[cert + ".key"],
                    tls_ca_cert_file=p["ca.crt"], tls_auth_clients="yes")
    return r, tport


@T.case
def redis_backend_over_tls():
    p = need()
    r, rport = tls_redis()
    s = start_frontdoor(backend="redis", redis_address="%s:%d" % (HOST, rport), redis_tls="yes",
                        redis_tls_ca_cert_file=p["ca.crt"], redis_tls_cert_file=p["client.crt"],
                        redis_tls_key_file=p["client.key"], redis_tls_sni="localhost")
    with Conn(s.port) as c, r.conn() as direct:
        eq(c.cmd("SET", "k", "v"), b"+OK\r\n")
        eq(direct.cmd("GET", "k"), b"$1\r\nv\r\n")      # it reached the TLS redis-server
        c.send_many([("INCR", "n")] * 2000)
        for i in range(2000):
            eq(c.read(), b":%d\r\n" % (i + 1))
        big = os.urandom(2 * 1024 * 1024)
        eq(c.cmd("SET", "big", big), b"+OK\r\n")
        eq(c.cmd("GET", "big"), b"$%d\r\n%s\r\n" % (len(big), big))
        eq(c.cmd("CONFIG", "GET", "ab-redis-tls"), b"*2\r\n$12\r\nab-redis-tls\r\n$2\r\nno\r\n")


@T.case
def redis_backend_bad_certificates():
    p = need()
    r, rport = tls_redis()
    rx, xport = tls_redis(cert="expired")
    base = dict(backend="redis", redis_tls="yes", redis_tls_cert_file=p["client.crt"],
                redis_tls_key_file=p["client.key"], backend_timeout=2000)
    cases = [
        ("expired", dict(redis_address="%s:%d" % (HOST, xport), redis_tls_ca_cert_file=p["ca.crt"]),
         "certificate has expired"),
        ("untrusted", dict(redis_address="%s:%d" % (HOST, rport), redis_tls_ca_cert_file=p["ca2.crt"]),
         "certificate"),
        ("wrong name", dict(redis_address="%s:%d" % (HOST, rport), redis_tls_ca_cert_file=p["ca.crt"],
                            redis_tls_sni="db.example.com"), "hostname mismatch"),
    ]
    for what, d, text in cases:
        kw = dict(base)
        kw.update(d)
        s = start_frontdoor(**kw)
        with Conn(s.port) as c:
            t0 = time.monotonic()
            got = c.cmd("GET", "k")
            check(time.monotonic() - t0 < 3, what + ": took too long")
            check(got.startswith(b"-ERR backend unavailable (redis ") and text.encode() in got, what, got)
        check(text in s.log(), what + ": not logged")
        s.stop()
    # plain to the TLS port: refused, not hung
    s = start_frontdoor(backend="redis", redis_address="%s:%d" % (HOST, rport), backend_timeout=1000)
    with Conn(s.port) as c:
        t0 = time.monotonic()
        got = c.cmd("GET", "k")
        check(got.startswith(b"-ERR backend unavailable"), got)
        check(time.monotonic() - t0 < 3, "plain to a TLS port hung")


class TlsTerminator:
    """TLS on a loopback port in front of a plain one (a thread per
    connection, bytes relayed both ways): client certificates required."""

    def __init__(self, backend_port, cert="server"):
        import threading
        p = pki()
        self.ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=p["ca.crt"])
        self.ctx.load_cert_chain(os.path.join(p["dir"], cert + ".crt"), os.path.join(p["dir"], cert + ".key"))
        self.ctx.verify_mode = ssl.CERT_REQUIRED
        self.backend_port = backend_port
        self.lsock = socket.socket()
        self.lsock.bind((HOST, 0))
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        self.handshakes = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        import threading
        while True:
            try:
                raw, _ = self.lsock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw):
        import threading
        try:
            t = self.ctx.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            raw.close()
            return
        self.handshakes += 1
        b = socket.create_connection((HOST, self.backend_port))

        def pump(src, dst):
            try:
                while True:
                    data = src.recv(65536)
                    if not data:
                        break
                    dst.sendall(data)
            except OSError:
                pass
            for x in (src, dst):
                try:
                    x.close()
                except OSError:
                    pass
        threading.Thread(target=pump, args=(b, t), daemon=True).start()
        pump(t, b)

    def close(self):
        self.lsock.close()


@T.case
def mongodb_backend_over_tls():
    need()
    need_mongodb()
    p = pki()
    # libmongoc reads the client certificate and its key from one PEM file
    both = os.path.join(p["dir"], "client-both.pem")
    with open(both, "w") as f:
        f.write(open(p["client.crt"]).read() + open(p["client.key"]).read())
    term = TlsTerminator(shared_mongo().port)
    try:
        uri = "mongodb://%s:%d/?tls=true&tlsCAFile=%s&tlsCertificateKeyFile=%s" % (HOST, term.port, p["ca.crt"], both)
        s = start_mongo_frontdoor(uri)
        with Conn(s.port, timeout=30) as c:
            eq(c.cmd("SET", "k", "v"), b"+OK\r\n")
            eq(c.cmd("GET", "k"), b"$1\r\nv\r\n")
            eq(c.cmd("HSET", "h", "a", "1"), b":1\r\n")
        check(term.handshakes > 0, "nothing went through the terminator")
        s.stop()
        # libmongoc's server selection gives up (naming the certificate) well
        # before frontdoor's own deadline: both default to backend-timeout,
        # and on a loaded machine the deadline came first (ci20: "no reply
        # within backend-timeout 2000 ms")
        uri = ("mongodb://%s:%d/?tls=true&tlsCAFile=%s&tlsCertificateKeyFile=%s&serverSelectionTimeoutMS=500"
               % (HOST, term.port, p["ca2.crt"], both))
        s = start_mongo_frontdoor(uri, backend_timeout=5000)
        with Conn(s.port, timeout=30) as c:
            got = c.cmd("GET", "k")
            check(got.startswith(b"-ERR backend unavailable (mongodb") and b"certificate" in got,
                  "a server of another CA was trusted", got)
    finally:
        term.close()


@T.case
def mongodb_tls_directives():
    need()
    need_mongodb()
    p = pki()
    d = p["dir"]
    # the client certificate and its key encrypted with a password, in one PEM
    pem = os.path.join(d, "client-enc.pem")
    r = subprocess.run(["openssl", "pkey", "-in", p["client.key"], "-aes256", "-passout", "pass:s3cret"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    check(r.returncode == 0, r.stdout.decode(errors="replace"))
    with open(pem, "wb") as f:
        f.write(open(p["client.crt"], "rb").read() + r.stdout)
    if not os.path.exists(os.path.join(d, "noname.crt")):
        tls_cert(d, "noname", "ca", cn="elsewhere.example", san=False)   # signed by our CA, another name
    uri = "mongodb://%s:%d/" % (HOST, 0)
    tls = dict(mongo_tls="yes", mongo_tls_ca_cert_file=p["ca.crt"], mongo_tls_certificate_key_file=pem,
               mongo_tls_certificate_key_file_password="s3cret")

    def first_reply(s):
        t = time.monotonic()
        with Conn(s.port, timeout=30) as c:
            got = c.cmd("SET", "k", "v")
        return got, time.monotonic() - t

    term = TlsTerminator(shared_mongo().port)
    bad = TlsTerminator(shared_mongo().port, cert="noname")
    try:
        uri = "mongodb://%s:%d/" % (HOST, term.port)
        s = start_mongo_frontdoor(uri, **tls)
        with Conn(s.port, timeout=30) as c:
            eq(c.cmd("SET", "k", "v"), b"+OK\r\n")
            eq(c.cmd("GET", "k"), b"$1\r\nv\r\n")
            for name in ("mongo-tls", "ab-mongo-tls", "ab-mongo-tls-ca-cert-file",
                         "ab-mongo-tls-certificate-key-file-password", "ab-mongo-tls-allow-invalid-hostnames"):
                check(name.encode() in c.cmd("CONFIG", "GET", name), "no directive " + name)
        check(term.handshakes > 0, "nothing went through the terminator")
        s.stop()
        # mongo-tls no: the directives do not turn TLS on (the terminator sees no handshake)
        n = term.handshakes
        s = start_mongo_frontdoor(uri, backend_timeout=2000, **dict(tls, mongo_tls="no"))
        got, _ = first_reply(s)
        check(got.startswith(b"-ERR backend unavailable"), "plain bytes to a TLS port went through", got)
        eq(term.handshakes, n)
        check("ignored: TLS is off" in s.log(), s.log()[-2000:])
        s.stop()
        # a CA that did not sign the terminator's certificate: a prompt, clear
        # error (backend-timeout 8 s: under ASan on loaded cores the handshake's
        # failure once came after a 2 s timeout, CI ci7; it is the error text,
        # not the timeout, that is checked)
        s = start_mongo_frontdoor(uri, backend_timeout=8000, **dict(tls, mongo_tls_ca_cert_file=p["ca2.crt"]))
        got, took = first_reply(s)
        check(got.startswith(b"-ERR backend unavailable (mongodb") and b"certificate" in got,
              "a server of another CA was trusted", got)
        check(took < 10, "the error took %.1f s (backend-timeout 8000)" % took)
        s.stop()
        # ... accepted with mongo-tls-allow-invalid-certificates yes
        s = start_mongo_frontdoor(uri, **dict(tls, mongo_tls_ca_cert_file=p["ca2.crt"],
                                              mongo_tls_allow_invalid_certificates="yes"))
        eq(first_reply(s)[0], b"+OK\r\n")
        s.stop()
        # a wrong password for the key: no connection
        s = start_mongo_frontdoor(uri, backend_timeout=2000, **dict(tls, mongo_tls_certificate_key_file_password="nope"))
        got, _ = first_reply(s)
        check(got.startswith(b"-ERR backend unavailable"), "a key with a wrong password was used", got)
        s.stop()
        # a certificate of another name: refused, then accepted with allow-invalid-hostnames
        uri_bad = "mongodb://%s:%d/" % (HOST, bad.port)
        s = start_mongo_frontdoor(uri_bad, backend_timeout=2000, **tls)
        got, took = first_reply(s)
        check(got.startswith(b"-ERR backend unavailable (mongodb"), "a certificate of another name was accepted", got)
        check(took < 10, "the error took %.1f s (backend-timeout 2000)" % took)
        s.stop()
        s = start_mongo_frontdoor(uri_bad, mongo_tls_allow_invalid_hostnames="yes", **tls)
        eq(first_reply(s)[0], b"+OK\r\n")
        s.stop()
        # an unreadable file is a start-up error naming the directive
        rc, out = run_frontdoor_expect_exit([("backend", "mongodb"), ("mongo-uri", uri), ("mongo-tls", "yes"),
                                             ("mongo-tls-ca-cert-file", os.path.join(d, "none.crt"))], timeout=30)
        check(rc not in (0, None) and "mongo-tls-ca-cert-file" in out and "No such file" in out, rc, out[-2000:])
    finally:
        term.close()
        bad.close()


@T.case
def metrics_over_tls():
    p = need()
    import urllib.request
    mport = free_port()
    s, tport = start_tls(metrics_port=mport, metrics_tls="yes")
    with tls_conn(tport) as c:
        eq(c.cmd("SET", "m", "1"), b"+OK\r\n")
    ctx_ok = ctx()
    ctx_ok.check_hostname = False       # the certificate names localhost, the URL 127.0.0.1 is fine too
    with urllib.request.urlopen("https://127.0.0.1:%d/metrics" % mport, context=ctx_ok, timeout=10) as r:
        body = r.read().decode()
    check("frontdoor_" in body, body[:300])
    # tls-auth-clients yes: no client certificate, no page
    try:
        urllib.request.urlopen("https://127.0.0.1:%d/metrics" % mport, context=ctx(cert=None), timeout=5).read()
        check(False, "the page was served without a client certificate")
    except (OSError, ssl.SSLError):
        pass
    # plain HTTP to the TLS endpoint: no page
    got = plain_bytes_to(mport, b"GET /metrics HTTP/1.0\r\n\r\n")
    check(b"frontdoor_" not in got, got[:200])
    with tls_conn(tport) as c:                  # the server lives on
        eq(c.cmd("GET", "m"), b"$1\r\n1\r\n")
    s = Server("frontdoor", [("metrics-port", free_port()), ("metrics-tls", "yes")])
    try:
        s.start()
        check(False, "metrics-tls started without a certificate")
    except RuntimeError as e:
        s.expected_exit = True
        check("metrics-tls yes needs tls-cert-file" in str(e), str(e)[-400:])


def resumed(port):
    c = ctx()
    with Conn(port, tls=c) as a:
        eq(a.cmd("PING"), b"+PONG\r\n")      # TLS 1.3 tickets come after the handshake
        sess = a.sock.session
    raw = socket.create_connection((HOST, port), timeout=5)
    b = c.wrap_socket(raw, server_hostname=HOST, session=sess)
    try:
        return b.session_reused
    finally:
        b.close()


@T.case
def session_caching():
    need()
    s, tport = start_tls()
    check(resumed(tport), "tls-session-caching yes: the session was not resumed")
    s.stop()
    s, tport = start_tls(tls_session_caching="no")
    check(not resumed(tport), "tls-session-caching no: a session was resumed")


@T.case
def protocols():
    need()
    s, tport = start_tls(tls_protocols="TLSv1.3")
    c12 = ctx()
    c12.maximum_version = ssl.TLSVersion.TLSv1_2
    try:
        Conn(tport, tls=c12).close()
        check(False, "a TLS 1.2 client was accepted with tls-protocols TLSv1.3")
    except (ssl.SSLError, ConnectionResetError):
        pass
    with tls_conn(tport) as c:
        eq(c.sock.version(), "TLSv1.3")
        r = c.cmd("CONFIG", "SET", "tls-protocols", "TLSv9")
        check(r.startswith(b"-ERR CONFIG SET failed (possibly related to argument 'tls-protocols') - Unable to update TLS"), r)
        eq(c.cmd("CONFIG", "SET", "tls-protocols", "TLSv1.2 TLSv1.3"), b"+OK\r\n")
    Conn(tport, tls=c12).close()      # now accepted
    check("Invalid tls-protocols" in s.log(), "the reason is logged")


def tls_cluster():
    """A 3-master cluster with tls-cluster yes (TLS on the bus, MIGRATE and
    to TLS clients; tls-auth-clients yes) -> (cluster, [tls port per node,
    in cl.nodes order])."""
    p = pki()
    why = redis_cluster_support()
    if why:
        missing_prerequisite("no local Redis Cluster: " + why)
    tports = []

    def node_tls():
        tports.append(free_port())
        return [("tls-port", tports[-1]), ("tls-cluster", "yes"), ("tls-cert-file", p["server.crt"]),
                ("tls-key-file", p["server.key"]), ("tls-ca-cert-file", p["ca.crt"]),
                ("tls-auth-clients", "yes")]
    return Cluster(3, 0, 2000, node_directives=node_tls).start(), tports


def cluster_frontdoor(cl, tports, **kw):
    """frontdoor's redis-cluster backend seeded with the first node's TLS
    port (so it only ever learns TLS ports), with a client certificate and
    the name checked; waits for the slot map."""
    p = pki()
    s = start_frontdoor(backend="redis-cluster", redis_cluster_seeds="%s:%d" % (HOST, tports[0]),
                        redis_tls="yes", redis_tls_ca_cert_file=p["ca.crt"], redis_tls_cert_file=p["client.crt"],
                        redis_tls_key_file=p["client.key"], redis_tls_sni="localhost", **kw)
    wait_cluster_map(s)
    return s


@T.case
def redis_cluster_over_tls():
    need()
    cl, tports = tls_cluster()
    s = cluster_frontdoor(cl, tports)
    with Conn(s.port) as c:
        for i in range(60):
            eq(c.cmd("SET", "key:%d" % i, "v%d" % i), b"+OK\r\n")
        for i in range(60):
            eq(c.cmd("GET", "key:%d" % i), b"$%d\r\nv%d\r\n" % (len("v%d" % i), i))
    used = 0
    for n in cl.masters():
        with Conn(n.port) as d:
            used += parse(d.cmd("DBSIZE")) > 0
    eq(used, 3)


@T.case(timeout=120)
def redis_cluster_live_migration_over_tls():
    need()
    import threading
    cl, tports = tls_cluster()
    s = cluster_frontdoor(cl, tports)
    ms = cl.masters()
    with Conn(ms[0].port) as c:
        slot = parse(c.cmd("CLUSTER", "KEYSLOT", "{mig}"))

    def owner():
        for n in ms:
            with Conn(n.port) as c:
                if not c.cmd("GET", "{mig}").startswith(b"-MOVED"):
                    return n
        raise AssertionError("no master owns slot %d" % slot)

    def myid(n):
        with Conn(n.port) as c:
            return parse(c.cmd("CLUSTER", "MYID")).decode()

    def move(src, dst):
        """src's keys of slot to dst, one batch of MIGRATE at a time, over
        dst's TLS port (the source node connects with TLS: tls-cluster)."""
        sid, did = myid(src), myid(dst)
        dport = tports[cl.nodes.index(dst)]
        with Conn(src.port) as a, Conn(dst.port) as b:
            eq(b.cmd("CLUSTER", "SETSLOT", slot, "IMPORTING", sid), b"+OK\r\n")
            eq(a.cmd("CLUSTER", "SETSLOT", slot, "MIGRATING", did), b"+OK\r\n")
            batches = 0
            while True:
                keys = parse(a.cmd("CLUSTER", "GETKEYSINSLOT", slot, 100))
                if not keys:
                    break
                r = a.cmd("MIGRATE", HOST, dport, "", 0, 5000, "KEYS", *keys)
                eq(r, b"+OK\r\n", "MIGRATE over TLS")
                batches += 1
                time.sleep(0.02)            # writers get ASKed meanwhile
            for n in [dst, src] + [m for m in ms if m not in (src, dst)]:
                with Conn(n.port) as c:
                    eq(c.cmd("CLUSTER", "SETSLOT", slot, "NODE", did), b"+OK\r\n")
        return batches

    stop = threading.Event()
    acked = {}           # writer -> [i acknowledged]
    errors = []

    def writer(w):
        got = acked.setdefault(w, [])
        try:
            with Conn(s.port, timeout=30) as c:
                i = 0
                while not stop.is_set():
                    key = "{mig}:w%d:%d" % (w, i) if w < 2 else "other:w%d:%d" % (w, i)
                    if w == 0:
                        r = c.cmd("SET", key, "v%d" % i)
                    elif w == 1:
                        r = c.cmd("RPUSH", "{mig}:list", "w%d:%d" % (w, i))
                    else:
                        r = c.cmd("SET", key, "v%d" % i)
                    if r.startswith(b"-"):
                        errors.append(r)
                    else:
                        got.append(i)
                    i += 1
                    time.sleep(0.001)
        except Exception as e:          # noqa: BLE001 (reported below)
            errors.append(repr(e).encode())

    before = info_fields(parse(Conn(s.port).cmd("INFO", "backend")))
    threads = [threading.Thread(target=writer, args=(w,), daemon=True) for w in range(3)]
    for t in threads:
        t.start()
    batches = 0
    try:
        time.sleep(0.5)
        a = owner()
        b = [m for m in ms if m is not a][0]
        for src, dst in ((a, b), (b, a), (a, b)):
            batches += move(src, dst)
            time.sleep(0.3)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    after = info_fields(parse(Conn(s.port).cmd("INFO", "backend")))
    moved = int(after["redis_cluster_moved"]) - int(before["redis_cluster_moved"])
    ask = int(after["redis_cluster_ask"]) - int(before["redis_cluster_ask"])
    print("      %d writes, %d MIGRATE batches, MOVED %d, ASK %d" % (sum(map(len, acked.values())), batches, moved, ask))
    check(not errors, "error replies during the migration", errors[:5])
    check(batches >= 3 and len(acked[0]) > 50, "keys were migrated while written", batches, len(acked[0]))
    check(moved > 0 and ask > 0, "frontdoor followed MOVED and ASK to TLS nodes", moved, ask)
    eq(owner(), b, "the slot ended on the second node")
    with Conn(s.port, timeout=30) as c:
        c.send_many([("GET", "{mig}:w0:%d" % i) for i in acked[0]])
        got = c.read_n(len(acked[0]))
        lost = [i for i, r in zip(acked[0], got) if r != b"$%d\r\nv%d\r\n" % (len("v%d" % i), i)]
        check(not lost, "acknowledged SETs lost", lost[:10])
        items = parse(c.cmd("LRANGE", "{mig}:list", 0, -1))
        eq(items, [b"w1:%d" % i for i in acked[1]], "every acknowledged RPUSH, in order")
        c.send_many([("GET", "other:w2:%d" % i) for i in acked[2]])
        check(all(r.startswith(b"$") for r in c.read_n(len(acked[2]))), "the other slots' writes")


if __name__ == "__main__":
    T.main()
