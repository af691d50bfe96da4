/* test_script.c — the Lua scripting engine (proxy/script.c) with a fake host:
 * a tiny dictionary (SET GET INCR DEL HSET HGETALL SADD SMEMBERS ZADD ZSCORE
 * for one-field values) plus RAW, which replies its argument's bytes as is
 * (RESP3 types no ordinary command gives a script).
 *
 * The table `vectors` was produced once with Debian's /usr/bin/redis-server
 * 7.0.15: a Python script sent each argv below over a socket, once on a RESP2
 * connection and once after HELLO 3, each time after FLUSHALL and the setup
 * SET s hello, SET n 10, HSET h f v, SADD st m, ZADD z 1.5 m, on a fresh
 * server (the math.random cases depend on it: the PRNG is not reseeded per
 * script), and recorded the reply bytes. The busy/kill texts come from the
 * same server with busy-reply-threshold 100 and a second connection sending
 * PING and SCRIPT KILL. */
#include "test.h"
#include "proxy/script.h"
#include "proxy/sha1.h"

#include <stdlib.h>
#include <strings.h>

/* ------------------------------------------------------------ fake host */

typedef struct { char key[32]; char type; char a[64]; char b[64]; int used; } fake_entry;
static fake_entry store[32];
static fd_script_engine *E;
static char logged[256];
static int logged_level = -1;
static int busy_calls, busy_first, busy_flag_seen;
static char kill_reply[256];
static char nested_reply[256];
static int kill_mode;   /* 0 none, 1 kill on busy, 2 try a nested EVAL then kill */

static fake_entry *find(const resp_arg *k) {
    for (int i = 0; i < 32; i++)
        if (store[i].used && strlen(store[i].key) == k->len && !memcmp(store[i].key, k->ptr, k->len)) return &store[i];
    return NULL;
}
static fake_entry *put(const resp_arg *k, char type) {
    fake_entry *f = find(k);
    if (!f) for (int i = 0; i < 32 && !f; i++) if (!store[i].used) f = &store[i];
    memset(f, 0, sizeof *f);
    f->used = 1;
    f->type = type;
    memcpy(f->key, k->ptr, k->len < 31 ? k->len : 31);
    return f;
}
static void cpy(char *d, const resp_arg *a) { size_t n = a->len < 63 ? a->len : 63; memcpy(d, a->ptr, n); d[n] = 0; }
static void setup_store(void) {
    memset(store, 0, sizeof store);
    resp_arg k;
    k.ptr = "s"; k.len = 1; strcpy(put(&k, 's')->a, "hello");
    k.ptr = "n"; k.len = 1; strcpy(put(&k, 's')->a, "10");
    k.ptr = "h"; k.len = 1; { fake_entry *f = put(&k, 'h'); strcpy(f->a, "f"); strcpy(f->b, "v"); }
    k.ptr = "st"; k.len = 2; strcpy(put(&k, 'S')->a, "m");
    k.ptr = "z"; k.len = 1; { fake_entry *f = put(&k, 'z'); strcpy(f->a, "m"); strcpy(f->b, "1.5"); }
}

#define IS(a, lit) ((a).len == sizeof(lit) - 1 && !strncasecmp((a).ptr, lit, sizeof(lit) - 1))

static int fake_call(void *ud, int argc, const resp_arg *argv, int resp, int check_only, resp_out *o) {
    (void)ud;
    CHECK(o->proto == resp);
    static const struct { const char *name; int arity, write; } cmds[] = {
        {"set", -3, 1}, {"get", 2, 0}, {"incr", 2, 1}, {"del", -2, 1}, {"hset", -4, 1}, {"hgetall", 2, 0},
        {"sadd", -3, 1}, {"smembers", 2, 0}, {"zadd", -4, 1}, {"zscore", 3, 0}, {"raw", 2, 0},
    };
    int c = -1;
    for (int i = 0; i < (int)(sizeof cmds / sizeof cmds[0]); i++)
        if (strlen(cmds[i].name) == argv[0].len && !strncasecmp(argv[0].ptr, cmds[i].name, argv[0].len)) c = i;
    if (c < 0) {
        if (check_only) return resp_add_error(o, "ERR Invalid command passed to redis.acl_check_cmd()");
        return resp_add_error(o, "ERR Unknown Redis command called from script");
    }
    if ((cmds[c].arity > 0 && argc != cmds[c].arity) || (cmds[c].arity < 0 && argc < -cmds[c].arity))
        return resp_add_error(o, "ERR Wrong number of args calling Redis command from script");
    if (check_only) return resp_add_int(o, 1);
    if (cmds[c].write && (fd_script_flags(E) & FD_SCRIPT_F_NO_WRITES))
        return resp_add_error(o, "ERR Write commands are not allowed from read-only scripts.");
    fake_entry *f = find(&argv[1]);
    switch (c) {
    case 0: cpy(put(&argv[1], 's')->a, &argv[2]); resp_add_status(o, "OK"); return FD_SCRIPT_CALL_WRITE;
    case 1:
        if (!f) return resp_add_null(o);
        return resp_add_bulk_cstr(o, f->a);
    case 2: {
        long long v = 0;
        if (f && resp_str2ll(f->a, strlen(f->a), &v) < 0) return resp_add_error(o, "ERR value is not an integer or out of range");
        if (!f) f = put(&argv[1], 's');
        snprintf(f->a, sizeof f->a, "%lld", ++v);
        resp_add_int(o, v);
        return FD_SCRIPT_CALL_WRITE;
    }
    case 3: if (f) f->used = 0; resp_add_int(o, f != NULL); return FD_SCRIPT_CALL_WRITE;
    case 5: resp_add_map(o, 1); resp_add_bulk_cstr(o, f->a); return resp_add_bulk_cstr(o, f->b);
    case 7: resp_add_set(o, 1); return resp_add_bulk_cstr(o, f->a);
    case 9: return resp_add_double(o, atof(f->b));
    case 10: return resp_out_raw(o, argv[1].ptr, argv[1].len);
    default: return resp_add_error(o, "ERR not in the fake");
    }
}

static void fake_log(void *ud, int level, const char *msg, size_t len) {
    (void)ud;
    if (len >= sizeof logged) len = sizeof logged - 1;
    memcpy(logged, msg, len);
    logged[len] = 0;
    logged_level = level;
}

static void fake_busy(void *ud, long long elapsed, int first) {
    (void)ud;
    busy_calls++;
    if (first) busy_first++;
    if (fd_script_busy(E)) busy_flag_seen = 1;
    CHECK(elapsed >= 50);
    if (kill_mode && first) {
        resp_out o;
        resp_out_init(&o, 2);
        if (kill_mode == 2) {
            resp_arg a[3] = {{"EVAL", 4}, {"return 1", 8}, {"0", 1}};
            fd_script_eval(E, 3, a, &o);
            snprintf(nested_reply, sizeof nested_reply, "%.*s", (int)o.len, o.data);
            o.len = 0;
        }
        fd_script_kill(E, &o);
        snprintf(kill_reply, sizeof kill_reply, "%.*s", (int)o.len, o.data);
        resp_out_free(&o);
    }
}

/* ------------------------------------------------------------ helpers */

static int run(int proto, int argc, const char *const *args, resp_out *o) {
    resp_arg a[16];
    for (int i = 0; i < argc; i++) { a[i].ptr = (char *)args[i]; a[i].len = strlen(args[i]); }
    o->len = 0;
    o->proto = proto;
    if (!strcasecmp(args[0], "SCRIPT")) return fd_script_script_cmd(E, argc, a, o);
    return fd_script_eval(E, argc, a, o);
}

/* EVAL <script> 0 on `proto`, reply compared with `want` */
static void eval_is(int proto, const char *script, const char *want, int line) {
    resp_out o;
    resp_out_init(&o, proto);
    const char *args[] = {"EVAL", script, "0"};
    setup_store();
    run(proto, 3, args, &o);
    if (o.len != strlen(want) || memcmp(o.data, want, o.len)) {
        t_failed++;
        fprintf(stderr, "line %d: RESP%d %s\n  got  %.*s\n  want %s\n", line, proto, script, (int)o.len, o.data, want);
    } else t_passed++;
    resp_out_free(&o);
}
#define EVAL_IS(p, s, w) eval_is(p, s, w, __LINE__)

/* ------------------------------------------------------------ vectors */

static const struct { int argc; const char *argv[8]; const char *want2; size_t len2; const char *want3; size_t len3; } vectors[] = {
    {3, {"EVAL", "return {math.random(100), math.random(1000), tostring(math.random())}", "0"}, "*3\r\n:40\r\n:841\r\n$16\r\n0.35333609737146\r\n", 38, "*3\r\n:45\r\n:319\r\n$16\r\n0.88642843341754\r\n", 38},
    {3, {"EVAL", "math.randomseed(42); return {math.random(1000000), math.random(5,9)}", "0"}, "*2\r\n:744526\r\n:6\r\n", 17, "*2\r\n:744526\r\n:6\r\n", 17},
    {3, {"EVAL", "return 1", "0"}, ":1\r\n", 4, ":1\r\n", 4},
    {3, {"EVAL", "return 3.99", "0"}, ":3\r\n", 4, ":3\r\n", 4},
    {3, {"EVAL", "return -3.99", "0"}, ":-3\r\n", 5, ":-3\r\n", 5},
    {3, {"EVAL", "return 'x'", "0"}, "$1\r\nx\r\n", 7, "$1\r\nx\r\n", 7},
    {3, {"EVAL", "return true", "0"}, ":1\r\n", 4, ":1\r\n", 4},
    {3, {"EVAL", "return false", "0"}, "$-1\r\n", 5, "_\r\n", 3},
    {3, {"EVAL", "return nil", "0"}, "$-1\r\n", 5, "_\r\n", 3},
    {3, {"EVAL", "return {1,2,3,'x',{4,5},true,false}", "0"}, "*7\r\n:1\r\n:2\r\n:3\r\n$1\r\nx\r\n*2\r\n:4\r\n:5\r\n:1\r\n$-1\r\n", 44, "*7\r\n:1\r\n:2\r\n:3\r\n$1\r\nx\r\n*2\r\n:4\r\n:5\r\n:1\r\n_\r\n", 42},
    {3, {"EVAL", "return {1,nil,3}", "0"}, "*1\r\n:1\r\n", 8, "*1\r\n:1\r\n", 8},
    {3, {"EVAL", "return {ok='fine'}", "0"}, "+fine\r\n", 7, "+fine\r\n", 7},
    {3, {"EVAL", "return {ok='a\nb'}", "0"}, "-ERR Error compiling script (new function): user_script:1: unfinished string near ''a'\r\n", 88, "-ERR Error compiling script (new function): user_script:1: unfinished string near ''a'\r\n", 88},
    {3, {"EVAL", "return {err='MY err'}", "0"}, "-MY err\r\n", 9, "-MY err\r\n", 9},
    {3, {"EVAL", "return {err='x\\r\ny\n'}", "0"}, "-ERR Error compiling script (new function): user_script:1: unfinished string near ''x '\r\n", 89, "-ERR Error compiling script (new function): user_script:1: unfinished string near ''x '\r\n", 89},
    {3, {"EVAL", "return redis.error_reply('FOO bar')", "0"}, "-FOO bar\r\n", 10, "-FOO bar\r\n", 10},
    {3, {"EVAL", "return redis.error_reply('-FOO')", "0"}, "-ERR FOO\r\n", 10, "-ERR FOO\r\n", 10},
    {3, {"EVAL", "return redis.error_reply('')", "0"}, "-ERR \r\n", 7, "-ERR \r\n", 7},
    {3, {"EVAL", "return redis.error_reply()", "0"}, "-ERR wrong number or type of arguments\r\n", 40, "-ERR wrong number or type of arguments\r\n", 40},
    {3, {"EVAL", "return redis.status_reply('OK2')", "0"}, "+OK2\r\n", 6, "+OK2\r\n", 6},
    {3, {"EVAL", "return {double=3.5}", "0"}, "$3\r\n3.5\r\n", 9, ",3.5\r\n", 6},
    {3, {"EVAL", "return {map={a=1}}", "0"}, "*2\r\n$1\r\na\r\n:1\r\n", 15, "%1\r\n$1\r\na\r\n:1\r\n", 15},
    {3, {"EVAL", "return {set={a=true}}", "0"}, "*1\r\n$1\r\na\r\n", 11, "~1\r\n$1\r\na\r\n", 11},
    {3, {"EVAL", "return {big_number='123'}", "0"}, "$3\r\n123\r\n", 9, "(123\r\n", 6},
    {3, {"EVAL", "return {verbatim_string={format='txt',string='hi'}}", "0"}, "$2\r\nhi\r\n", 8, "=6\r\ntxt:hi\r\n", 12},
    {7, {"EVAL", "return {KEYS[1],KEYS[2],ARGV[1],ARGV[2],#KEYS,#ARGV}", "2", "k1", "k2", "a1", "a2"}, "*6\r\n$2\r\nk1\r\n$2\r\nk2\r\n$2\r\na1\r\n$2\r\na2\r\n:2\r\n:2\r\n", 44, "*6\r\n$2\r\nk1\r\n$2\r\nk2\r\n$2\r\na1\r\n$2\r\na2\r\n:2\r\n:2\r\n", 44},
    {5, {"EVAL", "return redis.call('set',KEYS[1],ARGV[1])", "1", "x", "5"}, "+OK\r\n", 5, "+OK\r\n", 5},
    {4, {"EVAL", "return redis.call('get',KEYS[1])", "1", "s"}, "$5\r\nhello\r\n", 11, "$5\r\nhello\r\n", 11},
    {3, {"EVAL", "return redis.call('get','nokey')", "0"}, "$-1\r\n", 5, "_\r\n", 3},
    {4, {"EVAL", "return redis.call('incr',KEYS[1])", "1", "n"}, ":11\r\n", 5, ":11\r\n", 5},
    {4, {"EVAL", "return redis.call('incr',KEYS[1])", "1", "s"}, "-ERR value is not an integer or out of range script: 6f5ade10a69975e903c6d07b10ea44c6382381a5, on @user_script:1.\r\n", 115, "-ERR value is not an integer or out of range script: 6f5ade10a69975e903c6d07b10ea44c6382381a5, on @user_script:1.\r\n", 115},
    {4, {"EVAL", "return redis.pcall('incr',KEYS[1])", "1", "s"}, "-ERR value is not an integer or out of range\r\n", 46, "-ERR value is not an integer or out of range\r\n", 46},
    {4, {"EVAL", "local r = redis.pcall('incr',KEYS[1]); return r['err']", "1", "s"}, "$43\r\nERR value is not an integer or out of range\r\n", 50, "$43\r\nERR value is not an integer or out of range\r\n", 50},
    {3, {"EVAL", "return redis.call('nosuchcmd')", "0"}, "-ERR Unknown Redis command called from script script: 4f5958446b28593dea988ad0a5603cbd6962dd95, on @user_script:1.\r\n", 116, "-ERR Unknown Redis command called from script script: 4f5958446b28593dea988ad0a5603cbd6962dd95, on @user_script:1.\r\n", 116},
    {3, {"EVAL", "return redis.pcall('nosuchcmd')", "0"}, "-ERR Unknown Redis command called from script\r\n", 47, "-ERR Unknown Redis command called from script\r\n", 47},
    {3, {"EVAL", "return redis.call()", "0"}, "-ERR Please specify at least one argument for this redis lib call script: 0a907e1429221a4d85516cab7fd219a82a9439d8, on @user_script:1.\r\n", 136, "-ERR Please specify at least one argument for this redis lib call script: 0a907e1429221a4d85516cab7fd219a82a9439d8, on @user_script:1.\r\n", 136},
    {3, {"EVAL", "return redis.pcall()", "0"}, "-ERR Please specify at least one argument for this redis lib call\r\n", 67, "-ERR Please specify at least one argument for this redis lib call\r\n", 67},
    {3, {"EVAL", "return redis.call('get',{})", "0"}, "-ERR Lua redis lib command arguments must be strings or integers script: 4deb073a545207f215b56dcef5ca825f9f406808, on @user_script:1.\r\n", 135, "-ERR Lua redis lib command arguments must be strings or integers script: 4deb073a545207f215b56dcef5ca825f9f406808, on @user_script:1.\r\n", 135},
    {3, {"EVAL", "redis.call('set','k',1.5); redis.call('set','k2',100); return {redis.call('get','k'), redis.call('get','k2')}", "0"}, "*2\r\n$3\r\n1.5\r\n$3\r\n100\r\n", 22, "*2\r\n$3\r\n1.5\r\n$3\r\n100\r\n", 22},
    {3, {"EVAL", "return redis.call('hgetall','h')", "0"}, "*2\r\n$1\r\nf\r\n$1\r\nv\r\n", 18, "*2\r\n$1\r\nf\r\n$1\r\nv\r\n", 18},
    {3, {"EVAL", "redis.setresp(3); return redis.call('hgetall','h')", "0"}, "*2\r\n$1\r\nf\r\n$1\r\nv\r\n", 18, "%1\r\n$1\r\nf\r\n$1\r\nv\r\n", 18},
    {3, {"EVAL", "redis.setresp(3); local r = redis.call('hgetall','h'); return {type(r), type(r.map), r.map.f}", "0"}, "*3\r\n$5\r\ntable\r\n$5\r\ntable\r\n$1\r\nv\r\n", 33, "*3\r\n$5\r\ntable\r\n$5\r\ntable\r\n$1\r\nv\r\n", 33},
    {3, {"EVAL", "redis.setresp(3); return redis.call('smembers','st')", "0"}, "*1\r\n$1\r\nm\r\n", 11, "~1\r\n$1\r\nm\r\n", 11},
    {3, {"EVAL", "redis.setresp(3); local r = redis.call('smembers','st'); return tostring(r.set.m)", "0"}, "$4\r\ntrue\r\n", 10, "$4\r\ntrue\r\n", 10},
    {3, {"EVAL", "redis.setresp(3); return redis.call('zscore','z','m')", "0"}, "$3\r\n1.5\r\n", 9, ",1.5\r\n", 6},
    {3, {"EVAL", "redis.setresp(3); return redis.call('zscore','z','m')['double']", "0"}, ":1\r\n", 4, ":1\r\n", 4},
    {3, {"EVAL", "return redis.call('zscore','z','m')", "0"}, "$3\r\n1.5\r\n", 9, "$3\r\n1.5\r\n", 9},
    {3, {"EVAL", "redis.setresp(3); return redis.call('get','nokey')", "0"}, "$-1\r\n", 5, "_\r\n", 3},
    {3, {"EVAL", "redis.setresp(3); return {redis.call('get','nokey') == nil, redis.call('get','nokey') == false}", "0"}, "*2\r\n:1\r\n:0\r\n", 12, "*2\r\n#t\r\n#f\r\n", 12},
    {3, {"EVAL", "return {redis.call('get','nokey') == nil, redis.call('get','nokey') == false}", "0"}, "*2\r\n$-1\r\n:1\r\n", 13, "*2\r\n_\r\n:1\r\n", 11},
    {3, {"EVAL", "redis.setresp(3); return true", "0"}, ":1\r\n", 4, "#t\r\n", 4},
    {3, {"EVAL", "redis.setresp(3); return false", "0"}, ":0\r\n", 4, "#f\r\n", 4},
    {3, {"EVAL", "redis.setresp(3); return {1,true,false,'x'}", "0"}, "*4\r\n:1\r\n:1\r\n:0\r\n$1\r\nx\r\n", 23, "*4\r\n:1\r\n#t\r\n#f\r\n$1\r\nx\r\n", 23},
    {3, {"EVAL", "a=1", "0"}, "-ERR user_script:1: Attempt to modify a readonly table script: 86eda770a6060824b090dd4df091e3bd4121279c, on @user_script:1.\r\n", 125, "-ERR user_script:1: Attempt to modify a readonly table script: 86eda770a6060824b090dd4df091e3bd4121279c, on @user_script:1.\r\n", 125},
    {3, {"EVAL", "return b", "0"}, "-ERR user_script:1: Script attempted to access nonexistent global variable 'b' script: 816510dfadab6b5fbade21d62972b3b4ab4b5cca, on @user_script:1.\r\n", 149, "-ERR user_script:1: Script attempted to access nonexistent global variable 'b' script: 816510dfadab6b5fbade21d62972b3b4ab4b5cca, on @user_script:1.\r\n", 149},
    {3, {"EVAL", "error('x')", "0"}, "-ERR user_script:1: x script: 9851144f39f03a0d597a980c5aa79c80cb696891, on @user_script:1.\r\n", 92, "-ERR user_script:1: x script: 9851144f39f03a0d597a980c5aa79c80cb696891, on @user_script:1.\r\n", 92},
    {3, {"EVAL", "error({err='MY x'})", "0"}, "-MY x script: 892d3143709ed90870061a291d50ce1f009cd7bf, on @user_script:1.\r\n", 76, "-MY x script: 892d3143709ed90870061a291d50ce1f009cd7bf, on @user_script:1.\r\n", 76},
    {3, {"EVAL", "error(5,0)", "0"}, "-ERR 5 script: 51d5d1885b3ae42ebc5cb7e216ff2909226cbd5c, on @user_script:1.\r\n", 77, "-ERR 5 script: 51d5d1885b3ae42ebc5cb7e216ff2909226cbd5c, on @user_script:1.\r\n", 77},
    {3, {"EVAL", "error('a\nb', 0)", "0"}, "-ERR Error compiling script (new function): user_script:1: unfinished string near ''a'\r\n", 88, "-ERR Error compiling script (new function): user_script:1: unfinished string near ''a'\r\n", 88},
    {3, {"EVAL", "return 'a'..nil", "0"}, "-ERR user_script:1: attempt to concatenate a nil value script: bad78e871dc70caae12e06df72017df3c5f79a6b, on @user_script:1.\r\n", 125, "-ERR user_script:1: attempt to concatenate a nil value script: bad78e871dc70caae12e06df72017df3c5f79a6b, on @user_script:1.\r\n", 125},
    {3, {"EVAL", "return 1 +", "0"}, "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'\r\n", 91, "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'\r\n", 91},
    {3, {"EVAL", "local t = nil; t.x = 1", "0"}, "-ERR user_script:1: attempt to index local 't' (a nil value) script: e98c756492d45de9755b55e57ea469ba44ef51f8, on @user_script:1.\r\n", 131, "-ERR user_script:1: attempt to index local 't' (a nil value) script: e98c756492d45de9755b55e57ea469ba44ef51f8, on @user_script:1.\r\n", 131},
    {3, {"EVAL", "redis.call = nil", "0"}, "-ERR user_script:1: Attempt to modify a readonly table script: 2786c35ed73d3860851cf52e0b5dfbbc0bdb4803, on @user_script:1.\r\n", 125, "-ERR user_script:1: Attempt to modify a readonly table script: 2786c35ed73d3860851cf52e0b5dfbbc0bdb4803, on @user_script:1.\r\n", 125},
    {3, {"EVAL", "string.x = 1", "0"}, "-ERR user_script:1: Attempt to modify a readonly table script: c3eb0a2a15b3d4790b323c4104029c1ae425a769, on @user_script:1.\r\n", 125, "-ERR user_script:1: Attempt to modify a readonly table script: c3eb0a2a15b3d4790b323c4104029c1ae425a769, on @user_script:1.\r\n", 125},
    {3, {"EVAL", "rawset(_G,'z',1)", "0"}, "-ERR Attempt to modify a readonly table script: 7ab68dc16610d4ce0d1e905d04be574cfd2084c0, on @user_script:1.\r\n", 110, "-ERR Attempt to modify a readonly table script: 7ab68dc16610d4ce0d1e905d04be574cfd2084c0, on @user_script:1.\r\n", 110},
    {3, {"EVAL", "setmetatable(_G,nil)", "0"}, "-ERR Attempt to modify a readonly table script: 363cd756dc20f58a9f4a1d92f45ec7a5f14fbaed, on @user_script:1.\r\n", 110, "-ERR Attempt to modify a readonly table script: 363cd756dc20f58a9f4a1d92f45ec7a5f14fbaed, on @user_script:1.\r\n", 110},
    {3, {"EVAL", "return rawget(_G,'zz')", "0"}, "$-1\r\n", 5, "_\r\n", 3},
    {3, {"EVAL", "function foo() return 1 end return foo()", "0"}, "-ERR user_script:1: Attempt to modify a readonly table script: 535e41dae541a9756f5e79dc47e2dd7709f51529, on @user_script:1.\r\n", 125, "-ERR user_script:1: Attempt to modify a readonly table script: 535e41dae541a9756f5e79dc47e2dd7709f51529, on @user_script:1.\r\n", 125},
    {3, {"EVAL", "local function foo() return 7 end return foo()", "0"}, ":7\r\n", 4, ":7\r\n", 4},
    {3, {"EVAL", "return ('abc'):upper()", "0"}, "$3\r\nABC\r\n", 9, "$3\r\nABC\r\n", 9},
    {3, {"EVAL", "return type(getmetatable('').__index)", "0"}, "$5\r\ntable\r\n", 11, "$5\r\ntable\r\n", 11},
    {3, {"EVAL", "getmetatable('').__index = nil", "0"}, "-ERR user_script:1: Attempt to modify a readonly table script: d73a1dfb50411851ebe32e3e075eb37e35009eff, on @user_script:1.\r\n", 125, "-ERR user_script:1: Attempt to modify a readonly table script: d73a1dfb50411851ebe32e3e075eb37e35009eff, on @user_script:1.\r\n", 125},
    {3, {"EVAL", "local n = 0; for k,v in pairs(redis) do n = n + 1 end return n", "0"}, ":23\r\n", 5, ":23\r\n", 5},
    {3, {"EVAL", "return rawget(string, 'len') ~= nil", "0"}, ":1\r\n", 4, ":1\r\n", 4},
    {3, {"EVAL", "local t = {} ; t.x = 1; KEYS[1] = 'y'; return {t.x, KEYS[1]}", "0"}, "*2\r\n:1\r\n$1\r\ny\r\n", 15, "*2\r\n:1\r\n$1\r\ny\r\n", 15},
    {3, {"EVAL", "return {pcall(error,'x')}", "0"}, "*2\r\n$-1\r\n$1\r\nx\r\n", 16, "*2\r\n_\r\n$1\r\nx\r\n", 14},
    {3, {"EVAL", "return {pcall(redis.call,'nosuch')}", "0"}, "*2\r\n$-1\r\n$44\r\nERR Unknown Redis command called from script\r\n", 60, "*2\r\n_\r\n$44\r\nERR Unknown Redis command called from script\r\n", 58},
    {3, {"EVAL", "return {pcall(function() return 1 end)}", "0"}, "*2\r\n:1\r\n:1\r\n", 12, "*2\r\n:1\r\n:1\r\n", 12},
    {3, {"EVAL", "return type(print)", "0"}, "-ERR user_script:1: Script attempted to access nonexistent global variable 'print' script: 296aa29e565df267b5e30e498f3872c9f9e8e8cc, on @user_script:1.\r\n", 153, "-ERR user_script:1: Script attempted to access nonexistent global variable 'print' script: 296aa29e565df267b5e30e498f3872c9f9e8e8cc, on @user_script:1.\r\n", 153},
    {3, {"EVAL", "return type(debug)", "0"}, "-ERR user_script:1: Script attempted to access nonexistent global variable 'debug' script: 21bcbd6f0f3639ee18732cb6907e65a4859b9625, on @user_script:1.\r\n", 153, "-ERR user_script:1: Script attempted to access nonexistent global variable 'debug' script: 21bcbd6f0f3639ee18732cb6907e65a4859b9625, on @user_script:1.\r\n", 153},
    {3, {"EVAL", "return {type(loadstring), type(os), type(io), type(require), type(module)}", "0"}, "-ERR user_script:1: Script attempted to access nonexistent global variable 'os' script: 397e492884f4ef5538225e336baa6bf0b80ed917, on @user_script:1.\r\n", 150, "-ERR user_script:1: Script attempted to access nonexistent global variable 'os' script: 397e492884f4ef5538225e336baa6bf0b80ed917, on @user_script:1.\r\n", 150},
    {3, {"EVAL", "return {type(coroutine), type(newproxy), type(gcinfo), type(unpack), type(select)}", "0"}, "-ERR user_script:1: Script attempted to access nonexistent global variable 'newproxy' script: dfcf48b077ea2278568ce19ebc768618c089663e, on @user_script:1.\r\n", 156, "-ERR user_script:1: Script attempted to access nonexistent global variable 'newproxy' script: dfcf48b077ea2278568ce19ebc768618c089663e, on @user_script:1.\r\n", 156},
    {3, {"EVAL", "return redis.sha1hex('')", "0"}, "$40\r\nda39a3ee5e6b4b0d3255bfef95601890afd80709\r\n", 47, "$40\r\nda39a3ee5e6b4b0d3255bfef95601890afd80709\r\n", 47},
    {3, {"EVAL", "return redis.sha1hex('abc')", "0"}, "$40\r\na9993e364706816aba3e25717850c26c9cd0d89d\r\n", 47, "$40\r\na9993e364706816aba3e25717850c26c9cd0d89d\r\n", 47},
    {3, {"EVAL", "return redis.sha1hex()", "0"}, "-ERR wrong number of arguments script: 3c7ce947ae74a835cc575b6ee87fb27503cb7ba4, on @user_script:1.\r\n", 101, "-ERR wrong number of arguments script: 3c7ce947ae74a835cc575b6ee87fb27503cb7ba4, on @user_script:1.\r\n", 101},
    {3, {"EVAL", "return redis.setresp(4)", "0"}, "-ERR RESP version must be 2 or 3. script: 921c0a48021d97dfd5884aeea41875972c7804d9, on @user_script:1.\r\n", 104, "-ERR RESP version must be 2 or 3. script: 921c0a48021d97dfd5884aeea41875972c7804d9, on @user_script:1.\r\n", 104},
    {3, {"EVAL", "return redis.setresp()", "0"}, "-ERR redis.setresp() requires one argument. script: 76da64e28014e7c9ad76db33c3918c53d81a3d7e, on @user_script:1.\r\n", 114, "-ERR redis.setresp() requires one argument. script: 76da64e28014e7c9ad76db33c3918c53d81a3d7e, on @user_script:1.\r\n", 114},
    {3, {"EVAL", "return redis.log(redis.LOG_WARNING,'hello from a script')", "0"}, "$-1\r\n", 5, "_\r\n", 3},
    {3, {"EVAL", "return redis.log(9,'x')", "0"}, "-ERR Invalid debug level. script: bdf8c5fe30a2bd47a4a97712903fc7f8bf1d2532, on @user_script:1.\r\n", 96, "-ERR Invalid debug level. script: bdf8c5fe30a2bd47a4a97712903fc7f8bf1d2532, on @user_script:1.\r\n", 96},
    {3, {"EVAL", "return redis.log('x','y')", "0"}, "-ERR First argument must be a number (log level). script: 7eb2c51797b5ba4486062c3780fcd2ba1dfab7c7, on @user_script:1.\r\n", 120, "-ERR First argument must be a number (log level). script: 7eb2c51797b5ba4486062c3780fcd2ba1dfab7c7, on @user_script:1.\r\n", 120},
    {3, {"EVAL", "return redis.log(1)", "0"}, "-ERR redis.log() requires two arguments or more. script: f5438245431406aa19fc387d93c6d03a0d5bcb0f, on @user_script:1.\r\n", 119, "-ERR redis.log() requires two arguments or more. script: f5438245431406aa19fc387d93c6d03a0d5bcb0f, on @user_script:1.\r\n", 119},
    {3, {"EVAL", "return redis.set_repl(redis.REPL_ALL)", "0"}, "$-1\r\n", 5, "_\r\n", 3},
    {3, {"EVAL", "return redis.set_repl(8)", "0"}, "-ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE. script: 186ef0ab02df6866cf837bcb124a0cff989e3d09, on @user_script:1.\r\n", 153, "-ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE. script: 186ef0ab02df6866cf837bcb124a0cff989e3d09, on @user_script:1.\r\n", 153},
    {3, {"EVAL", "return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL, redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}", "0"}, "*9\r\n:0\r\n:1\r\n:2\r\n:2\r\n:3\r\n:0\r\n:1\r\n:2\r\n:3\r\n", 40, "*9\r\n:0\r\n:1\r\n:2\r\n:2\r\n:3\r\n:0\r\n:1\r\n:2\r\n:3\r\n", 40},
    {3, {"EVAL", "return redis.replicate_commands()", "0"}, ":1\r\n", 4, ":1\r\n", 4},
    {3, {"EVAL", "return redis.breakpoint()", "0"}, "$-1\r\n", 5, "_\r\n", 3},
    {3, {"EVAL", "return redis.debug('x')", "0"}, "$-1\r\n", 5, "_\r\n", 3},
    {3, {"EVAL", "return {redis.REDIS_VERSION, redis.REDIS_VERSION_NUM}", "0"}, "*2\r\n$6\r\n7.0.15\r\n:458767\r\n", 25, "*2\r\n$6\r\n7.0.15\r\n:458767\r\n", 25},
    {3, {"EVAL", "return cjson.encode({a={1,2,'x'}})", "0"}, "$15\r\n{\"a\":[1,2,\"x\"]}\r\n", 22, "$15\r\n{\"a\":[1,2,\"x\"]}\r\n", 22},
    {3, {"EVAL", "return cjson.decode('[1,2,{\"a\":3}]')[3].a", "0"}, ":3\r\n", 4, ":3\r\n", 4},
    {3, {"EVAL", "return cjson.encode(cjson.decode('{\"n\":null,\"f\":1.5}'))", "0"}, "$18\r\n{\"f\":1.5,\"n\":null}\r\n", 25, "$18\r\n{\"f\":1.5,\"n\":null}\r\n", 25},
    {3, {"EVAL", "return cjson.decode('{')", "0"}, "-ERR user_script:1: Expected object key string but found T_END at character 2 script: 6c60bbb22c4b71b0415e4e539d6dc66cc27df21d, on @user_script:1.\r\n", 148, "-ERR user_script:1: Expected object key string but found T_END at character 2 script: 6c60bbb22c4b71b0415e4e539d6dc66cc27df21d, on @user_script:1.\r\n", 148},
    {3, {"EVAL", "return cmsgpack.pack({1,2,3}, 'abc', -1, 300, 1.5, 2^40, true, -200, {a=1}, 0.1, 70000, -40000, string.rep('x',40))", "0"}, "$95\r\n\223\001\002\003\243abc\377\315\001,\312?\300\000\000\317\000\000\001\000\000\000\000\000\303\321\3778\201\241a\001\313?\271\231\231\231\231\231\232\316\000\001\021p\322\377\377c\300\331(xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\r\n", 102, "$95\r\n\223\001\002\003\243abc\377\315\001,\312?\300\000\000\317\000\000\001\000\000\000\000\000\303\321\3778\201\241a\001\313?\271\231\231\231\231\231\232\316\000\001\021p\322\377\377c\300\331(xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\r\n", 102},
    {3, {"EVAL", "return {cmsgpack.unpack(cmsgpack.pack({1,2,3}, 'abc', -1, 300, 2^40, true, -200))}", "0"}, "*7\r\n*3\r\n:1\r\n:2\r\n:3\r\n$3\r\nabc\r\n:-1\r\n:300\r\n:1099511627776\r\n:1\r\n:-200\r\n", 67, "*7\r\n*3\r\n:1\r\n:2\r\n:3\r\n$3\r\nabc\r\n:-1\r\n:300\r\n:1099511627776\r\n:1\r\n:-200\r\n", 67},
    {3, {"EVAL", "return cmsgpack.unpack(cmsgpack.pack({k='v'})).k", "0"}, "$1\r\nv\r\n", 7, "$1\r\nv\r\n", 7},
    {3, {"EVAL", "return {cmsgpack.unpack_one(cmsgpack.pack(1,2),0)}", "0"}, "*2\r\n:1\r\n:1\r\n", 12, "*2\r\n:1\r\n:1\r\n", 12},
    {3, {"EVAL", "return {cmsgpack.unpack_limit(cmsgpack.pack(1,2,3),2)}", "0"}, "*3\r\n:2\r\n:1\r\n:2\r\n", 16, "*3\r\n:2\r\n:1\r\n:2\r\n", 16},
    {3, {"EVAL", "return {cmsgpack.unpack_limit(cmsgpack.pack(1,2,3),5,-1)}", "0"}, "-ERR user_script:1: Invalid request to unpack with offset of -1 and limit of 3. script: ff3ec0971a8b88ded5f0c0414c10f8774b2c1a1a, on @user_script:1.\r\n", 150, "-ERR user_script:1: Invalid request to unpack with offset of -1 and limit of 3. script: ff3ec0971a8b88ded5f0c0414c10f8774b2c1a1a, on @user_script:1.\r\n", 150},
    {3, {"EVAL", "return cmsgpack.unpack('\\205')", "0"}, "-ERR user_script:1: Missing bytes in input. script: 79144aeb216f1ca3fa978037eb658eedc72dc864, on @user_script:1.\r\n", 114, "-ERR user_script:1: Missing bytes in input. script: 79144aeb216f1ca3fa978037eb658eedc72dc864, on @user_script:1.\r\n", 114},
    {3, {"EVAL", "return cmsgpack.unpack('\\193')", "0"}, "-ERR user_script:1: Bad data format in input. script: dc135bd7bc2955014f03280e151acf74360378e7, on @user_script:1.\r\n", 116, "-ERR user_script:1: Bad data format in input. script: dc135bd7bc2955014f03280e151acf74360378e7, on @user_script:1.\r\n", 116},
    {3, {"EVAL", "return cmsgpack.pack()", "0"}, "-ERR user_script:1: bad argument #0 to 'pack' (MessagePack pack needs input.) script: 6bc235afa55de88253e203cc5fe5844792e25209, on @user_script:1.\r\n", 148, "-ERR user_script:1: bad argument #0 to 'pack' (MessagePack pack needs input.) script: 6bc235afa55de88253e203cc5fe5844792e25209, on @user_script:1.\r\n", 148},
    {3, {"EVAL", "return {bit.band(0xff, 0x0f), bit.bor(1,2), bit.bxor(3,1), bit.lshift(1,10), bit.tohex(255), bit.tobit(2^32+5)}", "0"}, "*6\r\n:15\r\n:3\r\n:2\r\n:1024\r\n$8\r\n000000ff\r\n:5\r\n", 42, "*6\r\n:15\r\n:3\r\n:2\r\n:1024\r\n$8\r\n000000ff\r\n:5\r\n", 42},
    {3, {"EVAL", "return struct.pack('>I2i4<h', 513, -2, 7)", "0"}, "$8\r\n\002\001\377\377\377\376\007\000\r\n", 14, "$8\r\n\002\001\377\377\377\376\007\000\r\n", 14},
    {3, {"EVAL", "return {struct.unpack('>I2', 'AB')}", "0"}, "*2\r\n:16706\r\n:3\r\n", 16, "*2\r\n:16706\r\n:3\r\n", 16},
    {3, {"EVAL", "return {struct.unpack('<i4c3s', struct.pack('<i4c3s', -9, 'xyz', 'end'))}", "0"}, "*4\r\n:-9\r\n$3\r\nxyz\r\n$3\r\nend\r\n:12\r\n", 32, "*4\r\n:-9\r\n$3\r\nxyz\r\n$3\r\nend\r\n:12\r\n", 32},
    {3, {"EVAL", "return struct.size('!4bi4d')", "0"}, ":16\r\n", 5, ":16\r\n", 5},
    {3, {"EVAL", "return struct.size('s')", "0"}, "-ERR user_script:1: bad argument #1 to 'size' (option 's' has no fixed size) script: a2a0525826ab7939ccd3f54427a862205642f28f, on @user_script:1.\r\n", 147, "-ERR user_script:1: bad argument #1 to 'size' (option 's' has no fixed size) script: a2a0525826ab7939ccd3f54427a862205642f28f, on @user_script:1.\r\n", 147},
    {3, {"EVAL", "return struct.pack('i40',1)", "0"}, "-ERR user_script:1: integral size 40 is larger than limit of 32 script: 8297a24baf5248612dc087892615212f5c1a3470, on @user_script:1.\r\n", 134, "-ERR user_script:1: integral size 40 is larger than limit of 32 script: 8297a24baf5248612dc087892615212f5c1a3470, on @user_script:1.\r\n", 134},
    {3, {"EVAL", "return struct.unpack('i4','ab')", "0"}, "-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: 3ef60db871b260cc30f17fa93aff540fcad76a37, on @user_script:1.\r\n", 142, "-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: 3ef60db871b260cc30f17fa93aff540fcad76a37, on @user_script:1.\r\n", 142},
    {3, {"EVAL", "return struct.pack('q',1)", "0"}, "-ERR user_script:1: bad argument #1 to 'pack' (invalid format option 'q') script: 1b5cc12c9373f0c88806e2dfc2bf83162eb3a0a1, on @user_script:1.\r\n", 144, "-ERR user_script:1: bad argument #1 to 'pack' (invalid format option 'q') script: 1b5cc12c9373f0c88806e2dfc2bf83162eb3a0a1, on @user_script:1.\r\n", 144},
    {3, {"EVAL", "return x", "-1"}, "-ERR Number of keys can't be negative\r\n", 39, "-ERR Number of keys can't be negative\r\n", 39},
    {4, {"EVAL", "return x", "5", "a"}, "-ERR Number of keys can't be greater than number of args\r\n", 58, "-ERR Number of keys can't be greater than number of args\r\n", 58},
    {3, {"EVAL", "return x", "abc"}, "-ERR value is not an integer or out of range\r\n", 46, "-ERR value is not an integer or out of range\r\n", 46},
    {3, {"EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"}, "-NOSCRIPT No matching script. Please use EVAL.\r\n", 48, "-NOSCRIPT No matching script. Please use EVAL.\r\n", 48},
    {3, {"EVALSHA", "fff", "0"}, "-NOSCRIPT No matching script. Please use EVAL.\r\n", 48, "-NOSCRIPT No matching script. Please use EVAL.\r\n", 48},
    {3, {"EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"}, ":1\r\n", 4, ":1\r\n", 4},
    {3, {"EVALSHA", "E0E1F9FABFC9D4800C877A703B823AC0578FF8DB", "0"}, ":1\r\n", 4, ":1\r\n", 4},
    {3, {"EVAL_RO", "return redis.call('set','a','b')", "0"}, "-ERR Write commands are not allowed from read-only scripts. script: ff967d0ae0e68b4f9e360fa91c54598bc25ad9b6, on @user_script:1.\r\n", 130, "-ERR Write commands are not allowed from read-only scripts. script: ff967d0ae0e68b4f9e360fa91c54598bc25ad9b6, on @user_script:1.\r\n", 130},
    {3, {"EVAL_RO", "return redis.call('get','s')", "0"}, "$5\r\nhello\r\n", 11, "$5\r\nhello\r\n", 11},
    {3, {"EVAL", "#!lua flags=no-writes\nreturn redis.call('set','k','v')", "0"}, "-ERR Write commands are not allowed from read-only scripts. script: 34c8c9d31128963989284e33e9f94720fd85832d, on @user_script:2.\r\n", 130, "-ERR Write commands are not allowed from read-only scripts. script: 34c8c9d31128963989284e33e9f94720fd85832d, on @user_script:2.\r\n", 130},
    {3, {"EVAL", "#!lua\nreturn x", "0"}, "-ERR user_script:2: Script attempted to access nonexistent global variable 'x' script: 58b72ca6d006e3bafbb8cc006de4820497ce9cf8, on @user_script:2.\r\n", 149, "-ERR user_script:2: Script attempted to access nonexistent global variable 'x' script: 58b72ca6d006e3bafbb8cc006de4820497ce9cf8, on @user_script:2.\r\n", 149},
    {3, {"EVAL", "#!lua flags=bogus\nreturn 1", "0"}, "-ERR Unexpected flag in script shebang: bogus\r\n", 47, "-ERR Unexpected flag in script shebang: bogus\r\n", 47},
    {3, {"EVAL", "#!python\nreturn 1", "0"}, "-ERR Unexpected engine in script shebang: #!python\r\n", 52, "-ERR Unexpected engine in script shebang: #!python\r\n", 52},
    {3, {"EVAL", "#!lua", "0"}, "-ERR Invalid script shebang\r\n", 29, "-ERR Invalid script shebang\r\n", 29},
    {3, {"EVAL", "#!lua foo=bar\nreturn 1", "0"}, "-ERR Unknown lua shebang option: foo=bar\r\n", 42, "-ERR Unknown lua shebang option: foo=bar\r\n", 42},
    {3, {"EVAL_RO", "#!lua\nreturn 1", "0"}, "-ERR Can not execute a script with write flag using *_ro command.\r\n", 67, "-ERR Can not execute a script with write flag using *_ro command.\r\n", 67},
    {3, {"EVAL_RO", "#!lua flags=no-writes\nreturn 2", "0"}, ":2\r\n", 4, ":2\r\n", 4},
    {3, {"EVAL", "#!lua flags=no-writes,allow-oom\nreturn 3", "0"}, ":3\r\n", 4, ":3\r\n", 4},
    {3, {"SCRIPT", "LOAD", "return 1"}, "$40\r\ne0e1f9fabfc9d4800c877a703b823ac0578ff8db\r\n", 47, "$40\r\ne0e1f9fabfc9d4800c877a703b823ac0578ff8db\r\n", 47},
    {5, {"SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "ffffffffffffffffffffffffffffffffffffffff", "E0E1F9FABFC9D4800C877A703B823AC0578FF8DB"}, "*3\r\n:1\r\n:0\r\n:1\r\n", 16, "*3\r\n:1\r\n:0\r\n:1\r\n", 16},
    {3, {"SCRIPT", "LOAD", "return 1 +"}, "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'\r\n", 91, "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'\r\n", 91},
    {2, {"SCRIPT", "KILL"}, "-NOTBUSY No scripts in execution right now.\r\n", 45, "-NOTBUSY No scripts in execution right now.\r\n", 45},
    {3, {"SCRIPT", "FLUSH", "bad"}, "-ERR SCRIPT FLUSH only support SYNC|ASYNC option\r\n", 50, "-ERR SCRIPT FLUSH only support SYNC|ASYNC option\r\n", 50},
    {3, {"SCRIPT", "FLUSH", "ASYNC"}, "+OK\r\n", 5, "+OK\r\n", 5},
    {3, {"SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"}, "*1\r\n:0\r\n", 8, "*1\r\n:0\r\n", 8},
    {2, {"SCRIPT", "bogus"}, "-ERR unknown subcommand 'bogus'. Try SCRIPT HELP.\r\n", 51, "-ERR unknown subcommand 'bogus'. Try SCRIPT HELP.\r\n", 51},
    {3, {"EVAL", "return {ok='a'..string.char(10)..'b'}", "0"}, "+a b\r\n", 6, "+a b\r\n", 6},
    {3, {"EVAL", "return {err='x'..string.char(13,10)..'y'..string.char(10)}", "0"}, "-x  y\r\n", 7, "-x  y\r\n", 7},
    {3, {"EVAL", "error('a'..string.char(10)..'b', 0)", "0"}, "-ERR a b script: c8c8161f733785c19d05f1dbf7364cd0d8bf9752, on @user_script:1.\r\n", 79, "-ERR a b script: c8c8161f733785c19d05f1dbf7364cd0d8bf9752, on @user_script:1.\r\n", 79},
    {3, {"EVAL", "return {type(loadstring), type(load), type(getfenv), type(setfenv), type(xpcall), type(collectgarbage), type(gcinfo), type(coroutine), type(unpack), type(select), _VERSION, type(tonumber), type(rawequal), type(ipairs)}", "0"}, "-ERR user_script:1: Script attempted to access nonexistent global variable 'getfenv' script: 74dda6f9f41010643726534d38b5c28569fedd01, on @user_script:1.\r\n", 155, "-ERR user_script:1: Script attempted to access nonexistent global variable 'getfenv' script: 74dda6f9f41010643726534d38b5c28569fedd01, on @user_script:1.\r\n", 155},
    {3, {"EVAL", "return type(newproxy)", "0"}, "-ERR user_script:1: Script attempted to access nonexistent global variable 'newproxy' script: 2db8cbf73e97a4b7d8d1a7ce472bf57302f0f369, on @user_script:1.\r\n", 156, "-ERR user_script:1: Script attempted to access nonexistent global variable 'newproxy' script: 2db8cbf73e97a4b7d8d1a7ce472bf57302f0f369, on @user_script:1.\r\n", 156},
    {3, {"EVAL", "return type(require)", "0"}, "-ERR user_script:1: Script attempted to access nonexistent global variable 'require' script: a10ff9bcfafac54cee41502b0e65e31ab05862c3, on @user_script:1.\r\n", 155, "-ERR user_script:1: Script attempted to access nonexistent global variable 'require' script: a10ff9bcfafac54cee41502b0e65e31ab05862c3, on @user_script:1.\r\n", 155},
    {3, {"EVAL", "return type(__redis__err__handler)", "0"}, "$8\r\nfunction\r\n", 14, "$8\r\nfunction\r\n", 14},
    {3, {"EVAL", "return type(os)", "0"}, "-ERR user_script:1: Script attempted to access nonexistent global variable 'os' script: 88bfcb2247db0b6fa4925f3cddc3fd0651459f99, on @user_script:1.\r\n", 150, "-ERR user_script:1: Script attempted to access nonexistent global variable 'os' script: 88bfcb2247db0b6fa4925f3cddc3fd0651459f99, on @user_script:1.\r\n", 150},
    {3, {"EVAL", "return table.concat({1,2,3}, '-')", "0"}, "$5\r\n1-2-3\r\n", 11, "$5\r\n1-2-3\r\n", 11},
    {3, {"EVAL", "return string.format('%5.2f|%d|%s', 3.14159, 42, 'z')", "0"}, "$10\r\n 3.14|42|z\r\n", 17, "$10\r\n 3.14|42|z\r\n", 17},
    {3, {"EVAL", "return tostring(1e15)..' '..tostring(0.1)..' '..tostring(2^53)", "0"}, "$28\r\n1e+15 0.1 9.007199254741e+15\r\n", 35, "$28\r\n1e+15 0.1 9.007199254741e+15\r\n", 35},
    {3, {"EVAL", "return redis.call('set', 'k', 1e20)", "0"}, "+OK\r\n", 5, "+OK\r\n", 5},
    {3, {"EVAL", "redis.call('set','k',1e20); return redis.call('get','k')", "0"}, "$5\r\n1e+20\r\n", 11, "$5\r\n1e+20\r\n", 11},
    {3, {"EVAL", "return {1e20, -1e20, 2^63, 0/0}", "0"}, "*4\r\n:-9223372036854775808\r\n:-9223372036854775808\r\n:-9223372036854775808\r\n:-9223372036854775808\r\n", 96, "*4\r\n:-9223372036854775808\r\n:-9223372036854775808\r\n:-9223372036854775808\r\n:-9223372036854775808\r\n", 96},
    {3, {"EVAL", "local s = loadstring('return 5'); return s()", "0"}, ":5\r\n", 4, ":5\r\n", 4},
    {3, {"EVAL", "local f = loadstring('x = 5'); return pcall(f)", "0"}, "$-1\r\n", 5, "_\r\n", 3},
    {3, {"EVAL", "local ok, e = pcall(function() y = 1 end); return e", "0"}, "$49\r\nuser_script:1: Attempt to modify a readonly table\r\n", 56, "$49\r\nuser_script:1: Attempt to modify a readonly table\r\n", 56},
    {3, {"EVAL", "return {pcall(redis.call)}", "0"}, "*2\r\n$-1\r\n$64\r\nERR Please specify at least one argument for this redis lib call\r\n", 80, "*2\r\n_\r\n$64\r\nERR Please specify at least one argument for this redis lib call\r\n", 78},
    {3, {"EVAL", "return redis.pcall('get','s','extra')", "0"}, "-ERR Wrong number of args calling Redis command from script\r\n", 61, "-ERR Wrong number of args calling Redis command from script\r\n", 61},
};

static void test_vectors(void) {
    resp_out o;
    resp_out_init(&o, 2);
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
        for (int proto = 2; proto <= 3; proto++) {
            const char *want = proto == 2 ? vectors[i].want2 : vectors[i].want3;
            size_t wlen = proto == 2 ? vectors[i].len2 : vectors[i].len3;
            setup_store();
            run(proto, vectors[i].argc, vectors[i].argv, &o);
            if (o.len != wlen || memcmp(o.data, want, o.len)) {
                t_failed++;
                fprintf(stderr, "vector %zu RESP%d %s\n  got  %.*s\n  want %s\n", i, proto, vectors[i].argv[1],
                        (int)o.len, o.data, want);
            } else t_passed++;
        }
    }
    resp_out_free(&o);
    /* redis.log went to the host */
    CHECK(logged_level == FD_SCRIPT_LOG_WARNING);
    CHECK(strcmp(logged, "hello from a script") == 0);
}

/* RESP3 reply types no command of the fake gives otherwise, through RAW
 * (expectations from 7.0's conversion rules in script_lua.c) */
static void test_resp3_from_host(void) {
    EVAL_IS(3, "redis.setresp(3); return redis.call('raw', '#t\\r\\n')", "#t\r\n");
    EVAL_IS(2, "redis.setresp(3); return redis.call('raw', '#f\\r\\n')", ":0\r\n");
    EVAL_IS(2, "redis.setresp(3); return redis.call('raw', '#t\\r\\n') == true", ":1\r\n");
    EVAL_IS(3, "redis.setresp(3); local r = redis.call('raw', '(12345678901234567890\\r\\n'); return r", "(12345678901234567890\r\n");
    EVAL_IS(2, "redis.setresp(3); local r = redis.call('raw', '(12345678901234567890\\r\\n'); return r", "$20\r\n12345678901234567890\r\n");
    EVAL_IS(2, "local r = redis.call('raw', '(123\\r\\n'); return r.big_number", "$3\r\n123\r\n");
    EVAL_IS(2, "local r = redis.call('raw', '=8\\r\\ntxt:abcd\\r\\n'); return {r.verbatim_string.format, r.verbatim_string.string}",
            "*2\r\n$3\r\ntxt\r\n$4\r\nabcd\r\n");
    EVAL_IS(3, "local r = redis.call('raw', '=8\\r\\nmkd:abcd\\r\\n'); return r", "=8\r\nmkd:abcd\r\n");
    EVAL_IS(2, "return redis.call('raw', '|1\\r\\n+a\\r\\n+b\\r\\n:5\\r\\n')", ":5\r\n");
    EVAL_IS(2, "return redis.call('raw', '_\\r\\n') == nil", ":1\r\n");
    EVAL_IS(2, "return redis.call('raw', '*3\\r\\n:1\\r\\n_\\r\\n:3\\r\\n')", "*1\r\n:1\r\n");
    EVAL_IS(2, "return redis.call('raw', '*-1\\r\\n') == false", ":1\r\n");
    EVAL_IS(2, "return redis.call('raw', ',2.5\\r\\n').double * 2", ":5\r\n");
    EVAL_IS(3, "return redis.call('raw', ',-inf\\r\\n')", ",-inf\r\n");
    /* a status as a map key is the table {ok=...}, so r.map.k is nil */
    EVAL_IS(2, "local r = redis.call('raw', '%1\\r\\n+k\\r\\n:1\\r\\n'); return r.map.k", "$-1\r\n");
    EVAL_IS(2, "local r = redis.call('raw', '%1\\r\\n$1\\r\\nk\\r\\n:1\\r\\n'); return r.map.k", ":1\r\n");
    EVAL_IS(2, "local r = redis.call('raw', '*1\\r\\n-ERR inner\\r\\n'); return r[1].err", "$9\r\nERR inner\r\n");
    EVAL_IS(2, "return redis.pcall('raw', '-MYERR custom\\r\\n')", "-MYERR custom\r\n");
    EVAL_IS(2, "return redis.pcall('raw', '-MYERR\\r\\n')['err']", "$9\r\nERR MYERR\r\n");
    EVAL_IS(2, "return redis.call('raw', '+QUEUED\\r\\n')", "+QUEUED\r\n");
    EVAL_IS(2, "return redis.pcall('raw', '$5\\r\\nab\\r\\n')",
            "-ERR frontdoor: malformed reply to a command called from a script\r\n");
    EVAL_IS(2, "return {redis.acl_check_cmd('get','x'), redis.pcall('raw', ':7\\r\\n')}", "*2\r\n:1\r\n:7\r\n");
    EVAL_IS(2, "return redis.acl_check_cmd('nosuch')",
            "-ERR Invalid command passed to redis.acl_check_cmd() script: d2491587bab5149c93be0dce4426f7a06ba9e1a1, on @user_script:1.\r\n");
}

static void test_sha1(void) {
    char h[41];
    fd_sha1_hex(h, "", 0);
    CHECK(!strcmp(h, "da39a3ee5e6b4b0d3255bfef95601890afd80709"));
    fd_sha1_hex(h, "abc", 3);
    CHECK(!strcmp(h, "a9993e364706816aba3e25717850c26c9cd0d89d"));
    const char *s = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    fd_sha1_hex(h, s, strlen(s));
    CHECK(!strcmp(h, "84983e441c3bd26ebaae4aa1f95129e5e54670f1"));
    /* a million 'a', fed in uneven pieces */
    static char mil[1000000];
    memset(mil, 'a', sizeof mil);
    fd_sha1_ctx c;
    unsigned char d[20];
    fd_sha1_init(&c);
    for (size_t off = 0, step = 1; off < sizeof mil; off += step, step = step * 3 % 997 + 1)
        fd_sha1_update(&c, mil + off, off + step > sizeof mil ? sizeof mil - off : step);
    fd_sha1_final(&c, d);
    static const unsigned char want[20] = {0x34, 0xaa, 0x97, 0x3c, 0xd4, 0xc4, 0xda, 0xa4, 0xf6, 0x1e,
                                           0xeb, 0x2b, 0xdb, 0xad, 0x27, 0x31, 0x65, 0x34, 0x01, 0x6f};
    CHECK(!memcmp(d, want, 20));
    /* 55/56/64 bytes: the padding edges */
    fd_sha1_hex(h, mil, 55);
    CHECK(!strcmp(h, "c1c8bbdc22796e28c0e15163d20899b65621d65a"));
    fd_sha1_hex(h, mil, 64);
    CHECK(!strcmp(h, "0098ba824b5c16427bd7a1122a5a442a25ec644d"));
}

static void test_libs_roundtrip(void) {
    EVAL_IS(2, "local t = {1, -1, 127, 128, 255, 256, 65535, 65536, -32, -33, -128, -129, -32768, -32769, "
               "2^31, -2^31, -2^31-1, 2^32, 2^53, -2^53, 1.5, 0.1, 'x', string.rep('y', 300), string.rep('z', 70000), "
               "true, false, {a={b={c='d'}}}, {}} "
               "local u = cmsgpack.unpack(cmsgpack.pack(t)) "
               "for i = 1, 27 do if u[i] ~= t[i] then return {i, tostring(u[i])} end end "
               "return {u[28].a.b.c, #u[29], #u}", "*3\r\n$1\r\nd\r\n:0\r\n:29\r\n");
    /* nesting deeper than 16 is encoded as nil, as Redis */
    EVAL_IS(2, "local t = {} local c = t for i = 1, 20 do c[1] = {} c = c[1] end "
               "local u = cmsgpack.unpack(cmsgpack.pack(t)) local d = 0 while type(u) == 'table' do d = d + 1 u = u[1] end return d",
            ":16\r\n");
    EVAL_IS(2, "local s = cjson.encode({k={1,2,3},s='a\"b',n=cjson.null}) local t = cjson.decode(s) "
               "return {t.k[3], t.s, tostring(t.n == cjson.null)}", "*3\r\n:3\r\n$3\r\na\"b\r\n$4\r\ntrue\r\n");
    EVAL_IS(2, "return {bit.tohex(bit.bnot(0)), bit.arshift(-256, 4), bit.rol(1, 33), bit.bswap(0x12345678)}",
            "*4\r\n$8\r\nffffffff\r\n:-16\r\n:2\r\n:2018915346\r\n");
    EVAL_IS(2, "local s = struct.pack('>bBhHlLi8I3fdc2sx', -1, 200, -300, 60000, -5, 7, -9, 70000, 1.5, 2.25, 'ab', 'zz') "
               "return {struct.unpack('>bBhHlLi8I3fdc2sx', s)}",
            "*13\r\n:-1\r\n:200\r\n:-300\r\n:60000\r\n:-5\r\n:7\r\n:-9\r\n:70000\r\n:1\r\n:2\r\n$2\r\nab\r\n$2\r\nzz\r\n:52\r\n");
    EVAL_IS(2, "return {struct.unpack('B c0', struct.pack('B c0', 3, 'xyz'))}", "*2\r\n$3\r\nxyz\r\n:5\r\n");
}

static void test_busy_and_kill(void) {
    resp_out o;
    resp_out_init(&o, 2);
    fd_script_set_busy_threshold(E, 50);

    /* a read-only loop is killed from the busy callback; a nested EVAL is refused */
    kill_mode = 2;
    busy_calls = busy_first = busy_flag_seen = 0;
    const char *a1[] = {"EVAL", "local i = 0 while true do i = i + 1 end", "0"};
    run(2, 3, a1, &o);
    CHECK(busy_calls >= 1 && busy_first == 1 && busy_flag_seen);
    CHECK(!strcmp(kill_reply, "+OK\r\n"));
    CHECK(!strcmp(nested_reply, "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"));
    CHECK_MEM(o.data, o.len, "-ERR Script killed by user with SCRIPT KILL... script: 3fcf51a9b854b8f66cb8685600b0d7df968f4398, on @user_script:1.\r\n");
    CHECK(!fd_script_running(E) && !fd_script_busy(E));

    /* pcall cannot swallow the kill */
    kill_mode = 1;
    const char *a2[] = {"EVAL", "while true do pcall(function() while true do end end) end", "0"};
    run(2, 3, a2, &o);
    CHECK_MEM(o.data, o.len, "-ERR Script killed by user with SCRIPT KILL... script: 3d7b0cfd4124d0a72b8a39e531e7c806bc453d3e, on @user_script:1.\r\n");

    /* a script that wrote is UNKILLABLE and runs to its end */
    busy_calls = 0;
    const char *a3[] = {"EVAL", "redis.call('set','x','1') local i = 0 while i < 5e6 do i = i + 1 end return i", "0"};
    setup_store();
    run(2, 3, a3, &o);
    CHECK(!strcmp(kill_reply, "-UNKILLABLE Sorry the script already executed write commands against the dataset. "
                              "You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.\r\n")
          || busy_calls == 0);   /* a very fast machine may finish before 50 ms */
    CHECK_MEM(o.data, o.len, ":5000000\r\n");

    /* SCRIPT KILL with nothing running */
    o.len = 0;
    fd_script_kill(E, &o);
    CHECK_MEM(o.data, o.len, "-NOTBUSY No scripts in execution right now.\r\n");

    /* threshold 0: no hook, no busy calls */
    kill_mode = 0;
    busy_calls = 0;
    fd_script_set_busy_threshold(E, 0);
    const char *a4[] = {"EVAL", "local i = 0 while i < 3e6 do i = i + 1 end return i", "0"};
    run(2, 3, a4, &o);
    CHECK_MEM(o.data, o.len, ":3000000\r\n");
    CHECK(busy_calls == 0);
    fd_script_set_busy_threshold(E, 5000);
    resp_out_free(&o);
}

static void test_api(void) {
    resp_out o;
    resp_out_init(&o, 2);
    const char *l[] = {"SCRIPT", "LOAD", "return redis.call('get', KEYS[1])"};
    run(2, 3, l, &o);
    CHECK(o.len == 40 + 7);
    char sha[41];
    memcpy(sha, o.data + 5, 40);
    sha[40] = 0;
    size_t n = fd_script_count(E);
    CHECK(n >= 1);
    const char *ev[] = {"EVALSHA", sha, "1", "s"};
    setup_store();
    run(3, 4, ev, &o);
    CHECK_MEM(o.data, o.len, "$5\r\nhello\r\n");
    if (o.len != 11) fprintf(stderr, "EVALSHA: %.*s\n", (int)o.len, o.data);
    CHECK(fd_script_lua_memory(E) > 0);
    /* globals are reset by SCRIPT FLUSH, and the cache emptied */
    const char *fl[] = {"SCRIPT", "FLUSH"};
    run(2, 2, fl, &o);
    CHECK_MEM(o.data, o.len, "+OK\r\n");
    CHECK(fd_script_count(E) == 0);
    run(3, 4, ev, &o);
    CHECK_MEM(o.data, o.len, "-NOSCRIPT No matching script. Please use EVAL.\r\n");
    /* wrong arity of SCRIPT subcommands */
    const char *bad[] = {"SCRIPT", "LOAD"};
    run(2, 2, bad, &o);
    CHECK_MEM(o.data, o.len, "-ERR wrong number of arguments for 'script|load' command\r\n");
    const char *dbg[] = {"SCRIPT", "DEBUG", "no"};
    run(2, 3, dbg, &o);
    CHECK_MEM(o.data, o.len, "+OK\r\n");
    /* the state works after the flush: protection still on */
    EVAL_IS(2, "x = 1", "-ERR user_script:1: Attempt to modify a readonly table script: 34bce5f775de97f557a34088509c8bfe1ea17e52, on @user_script:1.\r\n");
    EVAL_IS(2, "return redis.call('get', 's')", "$5\r\nhello\r\n");
    /* many scripts: the cache grows and every one is found again */
    char body[64], shas[200][41];
    for (int i = 0; i < 200; i++) {
        snprintf(body, sizeof body, "return %d", i);
        fd_sha1_hex(shas[i], body, strlen(body));
        const char *ld[] = {"SCRIPT", "LOAD", body};
        run(2, 3, ld, &o);
    }
    int found = 0;
    for (int i = 0; i < 200; i++) {
        const char *es[] = {"EVALSHA", shas[i], "0"};
        char want[16];
        run(2, 3, es, &o);
        snprintf(want, sizeof want, ":%d\r\n", i);
        found += o.len == strlen(want) && !memcmp(o.data, want, o.len);
    }
    CHECK(found == 200);
    CHECK(fd_script_count(E) == 202);   /* + the two EVALs above */
    /* flags seen by the host during a run */
    EVAL_IS(2, "return redis.call('raw', ':1\\r\\n')", ":1\r\n");
    CHECK(fd_script_flags(E) == 0 && !strcmp(fd_script_current_sha(E), ""));
    resp_out_free(&o);
}

int main(void) {
    fd_script_host h = {.ud = NULL, .call = fake_call, .busy = fake_busy, .log = fake_log};
    E = fd_script_new(&h);
    CHECK(E != NULL);
    if (!E) return TEST_DONE();
    test_vectors();
    test_resp3_from_host();
    test_sha1();
    test_libs_roundtrip();
    test_busy_and_kill();
    test_api();
    fd_script_free(E);
    return TEST_DONE();
}
