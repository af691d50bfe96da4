#!/usr/bin/python3
"""ACL users beyond the differential suite (test_diff_acl.py): real clients
authenticating with a username (redis-py, ioredis, node-redis), CLIENT LIST's
user field and CLIENT KILL USER, a deleted user's connections closed,
requirepass as the default user's password, "user" lines in the
configuration, and the aclfile round trip (ACL SAVE, restart, ACL LOAD).
proxy/acl.c, docs/acl.md."""
import hashlib
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import Tests, start_frontdoor, start_redis, HOST, frontdoor_is_redis, skip, check, make_tempdir, run_frontdoor_expect_exit, need_node

T = Tests(case_timeout=90)
APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps")


def admin(s):
    c = s.conn()
    check(c.cmd("ACL", "SETUSER", "alice", "on", ">s3cret", "~app:*", "&news", "+@all", "-@dangerous") == b"+OK\r\n",
          "SETUSER alice")
    return c


@T.case
def redis_py_username():
    import redis
    s = start_frontdoor()
    admin(s)
    r = redis.Redis(port=s.port, username="alice", password="s3cret")
    check(r.acl_whoami() in (b"alice", "alice"), "WHOAMI", r.acl_whoami())
    check(r.set("app:1", "v") and r.get("app:1") == b"v", "alice's keys")
    try:
        r.get("other")
        check(False, "a key outside ~app:* must be refused")
    except redis.exceptions.NoPermissionError as e:
        check("no permissions to access one of the keys" in str(e), "NOPERM key", str(e))
    try:
        r.flushall()
        check(False, "-@dangerous must refuse FLUSHALL")
    except redis.exceptions.NoPermissionError as e:
        check("'flushall' command" in str(e), "NOPERM command", str(e))
    try:
        redis.Redis(port=s.port, username="alice", password="wrong").ping()
        check(False, "a wrong password must fail")
    except (redis.exceptions.AuthenticationError, redis.exceptions.ResponseError) as e:
        check("WRONGPASS" in str(e), "WRONGPASS", str(e))


NODE = r"""
const [kind, port] = process.argv.slice(1);
(async () => {
  let whoami, got, denied;
  if (kind === 'ioredis') {
    const Redis = require('ioredis');
    const r = new Redis({port: +port, username: 'alice', password: 's3cret', lazyConnect: true, maxRetriesPerRequest: 0});
    await r.connect();
    whoami = await r.call('ACL', 'WHOAMI');
    await r.set('app:n', 'x'); got = await r.get('app:n');
    try { await r.get('other'); } catch (e) { denied = e.message; }
    r.disconnect();
  } else {
    const {createClient} = require('redis');
    const r = createClient({url: `redis://alice:s3cret@127.0.0.1:${port}`});
    await r.connect();
    whoami = await r.sendCommand(['ACL', 'WHOAMI']);
    await r.set('app:n', 'y'); got = await r.get('app:n');
    try { await r.get('other'); } catch (e) { denied = e.message; }
    await r.quit();
  }
  console.log(JSON.stringify({whoami, got, denied}));
})().catch(e => { console.log(JSON.stringify({error: String(e)})); process.exit(1); });
"""


def node_client(kind):
    nodejs = need_node()
    s = start_frontdoor()
    admin(s)
    p = subprocess.run([nodejs, "-e", NODE, kind, str(s.port)], cwd=APPS, capture_output=True, timeout=60)
    out = p.stdout.decode().strip().split("\n")[-1]
    res = json.loads(out) if out.startswith("{") else {"error": p.stdout.decode() + p.stderr.decode()}
    check(res.get("whoami") == "alice", kind + ": authenticated as alice", res)
    check(res.get("got") in ("x", "y"), kind + ": alice's key", res)
    check("NOPERM" in (res.get("denied") or ""), kind + ": NOPERM", res)


@T.case
def ioredis_username():
    node_client("ioredis")


@T.case
def node_redis_url_username():
    node_client("node-redis")


@T.case
def client_list_user_and_kill_user():
    s = start_frontdoor()
    a = admin(s)
    u = s.conn()
    check(u.cmd("AUTH", "alice", "s3cret") == b"+OK\r\n", "AUTH alice")
    lst = a.cmd("CLIENT", "LIST").decode()
    check(" user=alice " in lst and " user=default " in lst, "CLIENT LIST user field", lst)
    check(a.cmd("CLIENT", "KILL", "USER", "nosuch").startswith(b"-ERR No such user 'nosuch'"), "unknown user")
    check(a.cmd("CLIENT", "KILL", "USER", "alice") == b":1\r\n", "one of alice's killed")
    check(not u.is_open(wait=1.0), "alice's connection closed")
    check(a.cmd("PING") == b"+PONG\r\n", "the caller stays")


@T.case
def deluser_closes_its_connections():
    s = start_frontdoor()
    a = admin(s)
    u = s.conn()
    u.cmd("AUTH", "alice", "s3cret")
    check(a.cmd("ACL", "DELUSER", "alice") == b":1\r\n", "DELUSER")
    check(not u.is_open(wait=1.0), "a deleted user's connection is closed (Redis 7.0)")
    check(s.conn().cmd("AUTH", "alice", "s3cret").startswith(b"-WRONGPASS"), "gone")


@T.case
def setuser_closes_subscribers_that_lose_a_channel():
    """Redis 7.0: after ACL SETUSER, a client of the user subscribed to a
    channel its rules no longer allow is disconnected; the others stay."""
    s = start_frontdoor()
    a = admin(s)                               # alice: &news
    a.cmd("ACL", "SETUSER", "alice", "&sports")
    sub1, sub2, other = s.conn(), s.conn(), s.conn()
    for c in (sub1, sub2, other):
        check(c.cmd("AUTH", "alice", "s3cret") == b"+OK\r\n", "AUTH")
    sub1.cmd("SUBSCRIBE", "news")
    sub2.cmd("SUBSCRIBE", "sports")
    check(a.cmd("ACL", "SETUSER", "alice", "resetchannels", "&sports") == b"+OK\r\n", "news taken away")
    check(not sub1.is_open(wait=1.0), "the news subscriber is closed")
    check(sub2.is_open(wait=0.3), "the sports subscriber stays")
    check(other.cmd("PING") == b"+PONG\r\n", "a client not subscribed stays")


@T.case
def requirepass_is_the_default_users_password():
    s = start_frontdoor(requirepass="pw1")
    c = s.conn(auth=False)
    check(c.cmd("GET", "x").startswith(b"-NOAUTH"), "NOAUTH before AUTH")
    check(c.cmd("AUTH", "default", "pw1") == b"+OK\r\n", "AUTH default pw1")
    g = c.cmd("ACL", "GETUSER", "default")
    check(hashlib.sha256(b"pw1").hexdigest().encode() in g and b"pw1\r\n" not in g, "stored as SHA-256", g)
    check(b"pw1" not in c.cmd("ACL", "LIST"), "no clear text in ACL LIST")
    c.cmd("CONFIG", "SET", "requirepass", "pw2")
    check(s.conn(auth=False).cmd("AUTH", "pw2") == b"+OK\r\n", "CONFIG SET requirepass: the new password")
    check(b"pw1" not in c.cmd("INFO") and b"pw2" not in c.cmd("INFO"), "no secret in INFO")


@T.case
def no_password_in_slowlog_or_monitor():
    s = start_frontdoor(slowlog_log_slower_than=0)
    m = s.conn()
    check(m.cmd("MONITOR") == b"+OK\r\n", "MONITOR")
    c = s.conn()
    c.cmd("ACL", "SETUSER", "zed", "on", ">hunter2pw", "+@all", "~*")
    c.cmd("AUTH", "zed", "hunter2pw")
    c.cmd("HELLO", "2", "AUTH", "zed", "hunter2pw")
    time.sleep(0.3)
    seen = b"".join(m.read_n(3))   # ACL SETUSER, AUTH, HELLO
    slow = c.cmd("SLOWLOG", "GET", "10")
    check(b"hunter2pw" not in slow and b"(redacted)" in slow, "SLOWLOG redacts", slow)
    check(b"hunter2pw" not in seen and b"(redacted)" in seen, "MONITOR redacts", seen)


@T.case
def acllog_max_len_bounds_the_log():
    s = start_frontdoor(acllog_max_len=3)
    c = s.conn()
    for i in range(6):
        c.cmd("AUTH", "nobody%d" % i, "x")
    check(c.cmd("ACL", "LOG", "100").startswith(b"*3\r\n"), "3 entries kept")
    check(b"nobody5" in c.cmd("ACL", "LOG", "1"), "the newest first")
    c.cmd("CONFIG", "SET", "acllog-max-len", "1")
    check(c.cmd("ACL", "LOG", "100").startswith(b"*1\r\n"), "shrunk with the directive")
    c.cmd("CONFIG", "SET", "acllog-max-len", "0")
    c.cmd("AUTH", "again", "x")
    check(c.cmd("ACL", "LOG") == b"*0\r\n", "0: nothing kept")


@T.case
def user_lines_in_config():
    s = start_frontdoor(extra_args=["--user", "bob", "on", ">b0b", "~b:*", "+get", "+set"])
    c = s.conn()
    check(c.cmd("AUTH", "bob", "b0b") == b"+OK\r\n", "bob from the command line")
    check(c.cmd("SET", "b:1", "v") == b"+OK\r\n", "bob's key")
    check(c.cmd("DEL", "b:1").startswith(b"-NOPERM"), "bob may not DEL")


@T.case
def aclfile_round_trip():
    d = make_tempdir()
    path = os.path.join(d, "users.acl")
    open(path, "w").close()
    s = start_frontdoor(aclfile=path)
    c = s.conn()
    check(c.cmd("ACL", "SETUSER", "carol", "on", ">c4", "%R~r:*", "&ch", "-@all", "+get", "(~w:* +set)") == b"+OK\r\n", "setuser")
    listed = c.cmd("ACL", "LIST")
    check(c.cmd("ACL", "SAVE") == b"+OK\r\n", "SAVE")
    text = open(path).read()
    check(text.startswith("user carol on #") and "c4" not in text, "the file holds hashes", text)
    s.restart()
    c = s.conn()
    check(c.cmd("ACL", "LIST") == listed, "the same users after a restart", c.cmd("ACL", "LIST"), listed)
    check(c.cmd("AUTH", "carol", "c4") == b"+OK\r\n", "carol after a restart")
    check(c.cmd("SET", "w:1", "x") == b"+OK\r\n", "carol's selector")
    a = s.conn()
    with open(path, "a") as f:
        f.write("user dan on nopass ~* +@all bogus\n")
    check(a.cmd("ACL", "LOAD") == ("-ERR %s:3: Syntax error. WARNING: ACL errors detected, no change to the previously "
                                   "active ACL rules was performed\r\n" % path).encode(), "a bad file changes nothing",
          a.cmd("ACL", "LOAD"))
    check(c.cmd("GET", "r:1") == b"$-1\r\n", "carol still connected")
    with open(path, "w") as f:
        f.write("user dan on nopass ~* +@all\n")
    check(a.cmd("ACL", "LOAD") == b"+OK\r\n", "LOAD")
    check(a.cmd("ACL", "USERS") == b"*2\r\n$3\r\ndan\r\n$7\r\ndefault\r\n", "the file's users and default")
    check(not c.is_open(wait=1.0), "carol's connection closed by LOAD (Redis 7.0)")
    rc, out = run_frontdoor_expect_exit([("aclfile", path)], extra_args=["--user", "x", "on"])
    check(rc not in (0, None) and "ACL file" in out, "aclfile and user lines together are refused", rc, out)
    with open(path, "w") as f:
        f.write("user dan on nopass +nosuch\n")
    rc, out = run_frontdoor_expect_exit([("aclfile", path)])
    check(rc not in (0, None) and "Unknown command or category name in ACL" in out, "a bad aclfile stops start-up", rc, out)


@T.case
def commands_unknown_to_frontdoor_on_a_redis_backend():
    """The redis backend answers commands frontdoor's table does not know
    (LOLWUT): a user gets them only with allcommands, allkeys, allchannels."""
    if frontdoor_is_redis():
        skip("frontdoor is a redis-server stand-in")
    s = start_frontdoor(backend="redis")
    a = s.conn()
    check(a.cmd("LOLWUT").startswith(b"$"), "the default user: forwarded", a.cmd("LOLWUT"))
    a.cmd("ACL", "SETUSER", "narrow", "on", ">pw", "-@all", "+get", "~*", "&*")
    a.cmd("ACL", "SETUSER", "wide", "on", ">pw", "+@all", "-get", "~*", "&*")
    a.cmd("ACL", "SETUSER", "keyed", "on", ">pw", "+@all", "~k*", "&*")
    n, w, k = s.conn(), s.conn(), s.conn()
    n.cmd("AUTH", "narrow", "pw"); w.cmd("AUTH", "wide", "pw"); k.cmd("AUTH", "keyed", "pw")
    check(n.cmd("LOLWUT") == b"-NOPERM this user has no permissions to run the 'lolwut' command\r\n", "narrow",
          n.cmd("LOLWUT"))
    check(w.cmd("lolwut").startswith(b"$"), "wide (+@all): forwarded", w.cmd("lolwut"))
    check(k.cmd("LOLWUT").startswith(b"-NOPERM"), "key patterns: its keys cannot be told", k.cmd("LOLWUT"))
    check(n.cmd("MULTI") .startswith(b"-NOPERM"), "narrow has no MULTI either")


@T.case
def redis_user_upstream():
    """redis-user: the redis backend authenticates as an ACL user of its
    server (AUTH user password on every connection)."""
    if frontdoor_is_redis():
        skip("frontdoor is a redis-server stand-in")
    r = start_redis()
    rc = r.conn()
    check(rc.cmd("ACL", "SETUSER", "fdproxy", "on", ">upw", "~*", "&*", "+@all") == b"+OK\r\n", "upstream user")
    s = start_frontdoor(backend="redis", redis_address="%s:%d" % (HOST, r.port), redis_user="fdproxy",
                        redis_password="upw")
    c = s.conn()
    check(c.cmd("SET", "k", "v") == b"+OK\r\n" and c.cmd("GET", "k") == b"$1\r\nv\r\n", "through the upstream user")
    check(b" user=fdproxy " in rc.cmd("CLIENT", "LIST"), "Redis sees frontdoor as fdproxy", rc.cmd("CLIENT", "LIST"))
    check(b"redis-user" in c.cmd("CONFIG", "GET", "redis-user"), "CONFIG GET redis-user")


@T.case
def exec_refusal_mirrored_without_the_refused():
    """A/B mirror: a queued command refused at EXEC (its user's rules
    changed) runs on neither side — the unit the secondary gets leaves it
    out — and the unit compares equal (lmdb -> redis, redis -> lmdb)."""
    if frontdoor_is_redis():
        skip("A/B is frontdoor's")
    from fdtest import info_fields, wait_until
    for prim, sec in (("lmdb", "redis"), ("redis", "lmdb")):
        r = start_redis()
        kw = dict(ab_mode="mirror", backend=prim, ab_secondary=sec)
        for side, name in (("", prim), ("ab_", sec)):
            if name == "redis":
                kw[side + "redis_address"] = "%s:%d" % (HOST, r.port)
            else:
                kw[side + "dir"] = make_tempdir("fdtest-aclab-")
                kw[side + "durability"] = "nosync"
        s = start_frontdoor(**kw)
        a = s.conn()
        check(a.cmd("ACL", "SETUSER", "tx", "on", ">pw", "~u:*", "+@all") == b"+OK\r\n", "SETUSER")
        c = s.conn()
        check(c.cmd("AUTH", "tx", "pw") == b"+OK\r\n", "AUTH")
        c.cmd("MULTI")
        c.cmd("SET", "u:a", "1")
        c.cmd("SET", "u:b", "2")
        c.cmd("INCR", "u:a")
        a.cmd("ACL", "SETUSER", "tx", "resetkeys", "~u:a")
        got = c.cmd("EXEC")
        check(got.startswith(b"*3\r\n+OK\r\n-NOPERM ACLs rules changed") and got.endswith(b":2\r\n"),
              "%s->%s: EXEC's reply" % (prim, sec), got)
        wait_until(lambda: info_fields(a.call("INFO", "ab").decode())["ab_queue"] == "0", what="mirror settled")
        ab = info_fields(a.call("INFO", "ab").decode())
        check(ab["ab_units"] == "1" and ab["ab_divergences"] == "0", "%s->%s: one unit, no divergence" % (prim, sec), ab)
        with r.conn() as d:
            check(d.cmd("EXISTS", "u:b") == b":0\r\n" and d.cmd("GET", "u:a") == b"$1\r\n2\r\n",
                  "%s->%s: the redis side ran SET u:a and INCR only" % (prim, sec))
        check(a.cmd("EXISTS", "u:b") == b":0\r\n", "%s->%s: u:b nowhere" % (prim, sec))
        s.stop()
        r.stop()


if __name__ == "__main__":
    T.main()
