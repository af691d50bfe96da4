/* script.c — the Lua scripting engine (see script.h for the contract).
 *
 * Redis 7.0 runs on its own patched Lua, whose tables can be made read-only;
 * Debian's liblua5.1 has no such flag, so protection is built from proxies:
 * every table reachable from the globals (and the string metatable) is
 * replaced by an empty proxy whose metatable reads through to the real table
 * (__index = real) and refuses writes (__newindex raises "Attempt to modify a
 * readonly table" at the caller's line, as the patched VM does). The globals
 * of the state (LUA_GLOBALSINDEX) are the proxy of the real globals, whose
 * own metatable raises "Script attempted to access nonexistent global
 * variable". rawset/rawget/next/pairs/setmetatable/getmetatable see
 * through proxies or refuse writes to them with 7.0's texts.
 */
#include "proxy/script.h"
#include "proxy/sha1.h"
#include "storage/status.h"
#include "storage/value/rdb.h"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <malloc.h>

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* Libraries: Debian's (lua-cjson-dev, lua-bitop-dev) and ours (script_libs.c). */
int luaopen_cjson(lua_State *L);
int luaopen_bit(lua_State *L);
int fd_luaopen_struct(lua_State *L);
int fd_luaopen_cmsgpack(lua_State *L);

#define COMPAT_VERSION "7.0.15"
#define COMPAT_VERSION_NUM 0x0007000f

#define ERR_NOSCRIPT "NOSCRIPT No matching script. Please use EVAL."

/* registry keys (addresses of these statics are unique light userdata) */
static char K_REAL_OF;     /* proxy -> real table */
static char K_PROXY_OF;    /* real table -> proxy */
static char K_REAL_G;      /* the real globals table */
static char K_ERRH;        /* the error handler */
static char K_TOSTRING;    /* the original tostring */
static char K_STRMT_PROXY; /* proxy of the string metatable */
static char K_LIBAPI;      /* the globals seen while a library loads (redis.register_function, log) */

/* A library's function (FUNCTION LOAD): its callback is kept in the Lua
 * registry (ref); name and description owned. */
typedef struct fn_entry {
    struct fn_entry *next;        /* in its library, registration order */
    struct lib_entry *lib;
    char    *name, *desc;         /* desc NULL: none */
    size_t   desclen;
    unsigned flags;               /* FD_SCRIPT_F_NO_WRITES | ALLOW_OOM | ... */
    int      ref;
} fn_entry;

/* A library: its name and code (as given to FUNCTION LOAD, shebang
 * included: FUNCTION LIST WITHCODE, DUMP), owned. */
typedef struct lib_entry {
    struct lib_entry *next;       /* load order */
    char     *name;
    char     *code;
    size_t    codelen;
    fn_entry *fns;
    size_t    nfns;
} lib_entry;

typedef struct script_entry {
    struct script_entry *next;
    char     sha[41];
    unsigned flags;        /* FD_SCRIPT_F_SHEBANG | NO_WRITES | ALLOW_OOM | ... */
    size_t   len;          /* the body as given (shebang included) */
    char     body[];       /* fd_script_body */
} script_entry;

struct fd_script_engine {
    lua_State     *L;
    fd_script_host host;

    script_entry **buckets;
    size_t         nbuckets, count;

    long long threshold_ms;
    uint64_t  rand48;      /* Redis's redisLrand48 state (48 bits) */
    long      gc_count;

    /* the running script */
    int       running, busy, killed, inuse, oom;
    unsigned  flags;
    int       resp;        /* redis.setresp */
    char      sha[41];
    uint64_t  start_us;

    size_t    lua_used, lua_peak;   /* the Lua heap's bytes now, and the most since the last trim */

    /* functions: the libraries (FUNCTION LOAD), the one being loaded
     * (redis.register_function's target) and the function running */
    lib_entry *libs, *loading;
    size_t     nlibs, nfns;
    uint64_t   load_start_us;
    const fn_entry *fn;
    int        fn_argc;
    const resp_arg *fn_argv;      /* the FCALL's arguments: valid until the loop runs (busy) */
    resp_out   fn_cmd;            /* ... copied as RESP bulks when the run turns busy (FUNCTION STATS) */

    resp_out  callbuf;     /* a redis.call reply, reused */
    resp_arg *argv;        /* redis.call arguments, reused */
    int       argv_cap;
};

static void lib_free(lua_State *L, lib_entry *l);
static void count_libs(fd_script_engine *e);
static int function_load(fd_script_engine *e, const char *code, size_t len, int replace, const char **name, char *err,
                         size_t errsz);

/* ------------------------------------------------------------ utilities */

static uint64_t mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void host_log(fd_script_engine *e, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void host_log(fd_script_engine *e, int level, const char *fmt, ...) {
    if (!e->host.log) return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof buf) n = sizeof buf - 1;
    e->host.log(e->host.ud, level, buf, (size_t)n);
}

static fd_script_engine *engine_of(lua_State *L) {
    return lua_touserdata(L, lua_upvalueindex(1));
}

/* Redis's lrand48 (rand.c): the 48-bit LCG of POSIX lrand48, fixed start. */
static int32_t rand48_next(fd_script_engine *e) {
    e->rand48 = (0x5DEECE66DULL * e->rand48 + 0xB) & 0xFFFFFFFFFFFFULL;
    return (int32_t)(e->rand48 >> 17);
}

/* Push an error table as Redis's luaPushErrorBuff: "-CODE msg" keeps CODE,
 * "-msg" (no space) and "msg" get "ERR"; CR/LF trimmed from the message's
 * ends. C-string semantics (stops at NUL) as Redis's sds calls. */
static void push_error(lua_State *L, const char *s, int stats_flag) {
    const char *code = "ERR", *msg = s;
    size_t codelen = 3;
    if (s[0] == '-') {
        const char *sp = strchr(s, ' ');
        if (!sp) msg = s + 1;
        else { code = s + 1; codelen = (size_t)(sp - s - 1); msg = sp + 1; }
    }
    size_t mlen = strlen(msg);
    while (mlen && (*msg == '\r' || *msg == '\n')) { msg++; mlen--; }
    while (mlen && (msg[mlen - 1] == '\r' || msg[mlen - 1] == '\n')) mlen--;
    lua_newtable(L);
    lua_pushliteral(L, "err");
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addlstring(&b, code, codelen);
    luaL_addchar(&b, ' ');
    luaL_addlstring(&b, msg, mlen);
    luaL_pushresult(&b);
    lua_rawset(L, -3);
    if (stats_flag) {
        lua_pushliteral(L, "ignore_error_stats_update");
        lua_pushboolean(L, 1);
        lua_rawset(L, -3);
    }
}

/* ------------------------------------------------------ RESP -> Lua */

static const char *find_crlf(const char *p, const char *end) {
    for (; p + 1 < end; p++)
        if (p[0] == '\r' && p[1] == '\n') return p;
    return NULL;
}

static int parse_ll(const char *p, const char *q, long long *v) {
    return resp_str2ll(p, (size_t)(q - p), v);
}

/* Convert one reply at *pp to a Lua value pushed on L (nothing pushed when
 * push == 0: attributes are skipped). Redis 7.0's rules (script_lua.c).
 * Returns 0, or -1 on malformed input (nothing left pushed then). */
static int reply_to_lua(lua_State *L, const char **pp, const char *end, int push, int depth) {
    const char *p = *pp;
    if (p >= end || depth > 1000) return -1;
    if (push && !lua_checkstack(L, 5)) return -1;
    char t = *p++;
    const char *eol = find_crlf(p, end);
    if (!eol) return -1;
    const char *next = eol + 2;
    long long n;
    switch (t) {
    case '+':
        if (push) {
            lua_newtable(L);
            lua_pushliteral(L, "ok");
            lua_pushlstring(L, p, (size_t)(eol - p));
            lua_rawset(L, -3);
        }
        break;
    case '-':
        if (push) {
            /* "-" + text, as a C string */
            lua_pushliteral(L, "-");
            lua_pushlstring(L, p, (size_t)(eol - p));
            lua_concat(L, 2);
            const char *s = lua_tostring(L, -1);
            push_error(L, s, 1);
            lua_remove(L, -2);
        }
        break;
    case ':':
        if (parse_ll(p, eol, &n) < 0) return -1;
        if (push) lua_pushnumber(L, (lua_Number)n);
        break;
    case '$':
    case '=':
        if (parse_ll(p, eol, &n) < 0) return -1;
        if (n < 0) {
            if (push) lua_pushboolean(L, 0);
            break;
        }
        if ((long long)(end - next) < n + 2) return -1;
        if (push) {
            if (t == '$') {
                lua_pushlstring(L, next, (size_t)n);
            } else {
                if (n < 4) return -1;
                lua_newtable(L);
                lua_pushliteral(L, "verbatim_string");
                lua_newtable(L);
                lua_pushliteral(L, "string");
                lua_pushlstring(L, next + 4, (size_t)n - 4);
                lua_rawset(L, -3);
                lua_pushliteral(L, "format");
                lua_pushlstring(L, next, 3);
                lua_rawset(L, -3);
                lua_rawset(L, -3);
            }
        }
        next += n + 2;
        break;
    case '*':
    case '>':
    case '~':
    case '%':
    case '|':
        if (parse_ll(p, eol, &n) < 0) return -1;
        if (n < 0) {
            if (push) lua_pushboolean(L, 0);
            break;
        }
        if (t == '|') {   /* attribute: skipped, then the value it annotates */
            for (long long j = 0; j < 2 * n; j++)
                if (reply_to_lua(L, &next, end, 0, depth + 1) < 0) return -1;
            *pp = next;
            return reply_to_lua(L, pp, end, push, depth + 1);
        }
        if (push) {
            lua_newtable(L);
            if (t == '~' || t == '%') {
                lua_pushstring(L, t == '~' ? "set" : "map");
                lua_newtable(L);
            }
        }
        for (long long j = 0; j < n; j++) {
            if (t == '*' || t == '>') {
                if (push) lua_pushnumber(L, (lua_Number)(j + 1));
                if (reply_to_lua(L, &next, end, push, depth + 1) < 0) { if (push) lua_pop(L, 2); return -1; }
            } else if (t == '%') {
                if (reply_to_lua(L, &next, end, push, depth + 1) < 0) { if (push) lua_pop(L, 3); return -1; }
                if (reply_to_lua(L, &next, end, push, depth + 1) < 0) { if (push) lua_pop(L, 4); return -1; }
            } else {
                if (reply_to_lua(L, &next, end, push, depth + 1) < 0) { if (push) lua_pop(L, 3); return -1; }
                if (push) lua_pushboolean(L, 1);
            }
            if (push) lua_settable(L, -3);
        }
        if (push && (t == '~' || t == '%')) lua_settable(L, -3);
        break;
    case '_':
        if (push) lua_pushnil(L);
        break;
    case '#':
        if (eol - p != 1 || (*p != 't' && *p != 'f')) return -1;
        if (push) lua_pushboolean(L, *p == 't');
        break;
    case ',': {
        char buf[128];
        size_t len = (size_t)(eol - p);
        if (len >= sizeof buf) return -1;
        memcpy(buf, p, len);
        buf[len] = '\0';
        double d = strtod(buf, NULL);
        if (push) {
            lua_newtable(L);
            lua_pushliteral(L, "double");
            lua_pushnumber(L, d);
            lua_rawset(L, -3);
        }
        break;
    }
    case '(':
        if (push) {
            lua_newtable(L);
            lua_pushliteral(L, "big_number");
            lua_pushlstring(L, p, (size_t)(eol - p));
            lua_rawset(L, -3);
        }
        break;
    default:
        return -1;
    }
    *pp = next;
    return 0;
}

/* ------------------------------------------------------ Lua -> RESP */

/* Redis's (long long)lua_Number cast, defined for every input (x86 gives
 * LLONG_MIN for NaN and out-of-range values). */
static long long num_to_ll(lua_Number d) {
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return LLONG_MIN;
    return (long long)d;
}

/* Field `k` of the table at -1 (raw), pushed; returns its type. */
static int rawfield(lua_State *L, const char *k) {
    lua_pushstring(L, k);
    lua_rawget(L, -2);
    return lua_type(L, -1);
}

/* Append `s` (C string semantics) with CR/LF mapped to spaces and, for
 * errors, trimmed at both ends first (addReplyErrorFormatEx). */
static int add_mapped(resp_out *o, char lead, const char *s, size_t n, int trim) {
    if (trim) {
        while (n && (*s == '\r' || *s == '\n')) { s++; n--; }
        while (n && (s[n - 1] == '\r' || s[n - 1] == '\n')) n--;
    }
    if (resp_out_reserve(o, n + 3) < 0) return -1;
    char *d = o->data + o->len;
    d[0] = lead;
    for (size_t i = 0; i < n; i++) d[i + 1] = (s[i] == '\r' || s[i] == '\n') ? ' ' : s[i];
    d[n + 1] = '\r';
    d[n + 2] = '\n';
    o->len += n + 3;
    return 0;
}

/* An error reply "-<msg>" as addReplyErrorFormat(c, "-%s", msg) makes it. */
static int add_error_text(resp_out *o, const char *msg) {
    return add_mapped(o, '-', msg, strlen(msg), 1);
}

/* Convert the value at the top of L to a reply (and pop it). Redis 7.0's
 * luaReplyToRedisReply; `script_resp` is the script's setresp. */
static void lua_to_reply(fd_script_engine *e, lua_State *L, resp_out *o) {
    int rc = 0;
    if (!lua_checkstack(L, 4)) {
        rc = resp_add_error(o, "ERR reached lua stack limit");
        lua_pop(L, 1);
        if (rc < 0) e->oom = 1;
        return;
    }
    switch (lua_type(L, -1)) {
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, -1, &n);
        rc = resp_add_bulk(o, s, n);
        break;
    }
    case LUA_TBOOLEAN:
        if (e->resp == 2)
            rc = lua_toboolean(L, -1) ? resp_add_int(o, 1) : resp_add_null(o);
        else
            rc = resp_add_bool(o, lua_toboolean(L, -1));
        break;
    case LUA_TNUMBER:
        rc = resp_add_int(o, num_to_ll(lua_tonumber(L, -1)));
        break;
    case LUA_TTABLE: {
        int t;
        if ((t = rawfield(L, "err")) == LUA_TSTRING) {
            rc = add_error_text(o, lua_tostring(L, -1));
            lua_pop(L, 2);
            if (rc < 0) e->oom = 1;
            return;
        }
        lua_pop(L, 1);
        if ((t = rawfield(L, "ok")) == LUA_TSTRING) {
            const char *s = lua_tostring(L, -1);
            rc = add_mapped(o, '+', s, strlen(s), 0);
            lua_pop(L, 2);
            if (rc < 0) e->oom = 1;
            return;
        }
        lua_pop(L, 1);
        if ((t = rawfield(L, "double")) == LUA_TNUMBER) {
            rc = resp_add_double(o, lua_tonumber(L, -1));
            lua_pop(L, 2);
            if (rc < 0) e->oom = 1;
            return;
        }
        lua_pop(L, 1);
        if ((t = rawfield(L, "big_number")) == LUA_TSTRING) {
            size_t n;
            const char *s = lua_tolstring(L, -1, &n);
            rc = o->proto == 3 ? add_mapped(o, '(', s, n, 0) : 0;
            if (o->proto != 3) {
                /* RESP2: a bulk string, CR/LF mapped as Redis's sdsmapchars */
                size_t at = o->len;
                rc = resp_add_bulk(o, s, n);
                if (rc == 0)
                    for (size_t i = o->len - n - 2; i < o->len - 2 && i >= at; i++)
                        if (o->data[i] == '\r' || o->data[i] == '\n') o->data[i] = ' ';
            }
            lua_pop(L, 2);
            if (rc < 0) e->oom = 1;
            return;
        }
        lua_pop(L, 1);
        if ((t = rawfield(L, "verbatim_string")) == LUA_TTABLE) {
            if (rawfield(L, "format") == LUA_TSTRING) {
                const char *fmt = lua_tostring(L, -1);
                lua_pushliteral(L, "string");
                lua_rawget(L, -3);
                if (lua_type(L, -1) == LUA_TSTRING) {
                    size_t n;
                    const char *s = lua_tolstring(L, -1, &n);
                    rc = resp_add_verbatim(o, fmt, s, n);
                    lua_pop(L, 4);
                    if (rc < 0) e->oom = 1;
                    return;
                }
                lua_pop(L, 1);
            }
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
        if ((t = rawfield(L, "map")) == LUA_TTABLE) {
            long long n = 0;
            lua_pushnil(L);
            while (lua_next(L, -2)) { lua_pop(L, 1); n++; }
            rc = resp_add_map(o, n);
            lua_pushnil(L);
            while (lua_next(L, -2)) {
                lua_pushvalue(L, -2);
                lua_to_reply(e, L, o);   /* key */
                lua_to_reply(e, L, o);   /* value */
            }
            lua_pop(L, 2);
            if (rc < 0) e->oom = 1;
            return;
        }
        lua_pop(L, 1);
        if ((t = rawfield(L, "set")) == LUA_TTABLE) {
            long long n = 0;
            lua_pushnil(L);
            while (lua_next(L, -2)) { lua_pop(L, 1); n++; }
            rc = resp_add_set(o, n);
            lua_pushnil(L);
            while (lua_next(L, -2)) {
                lua_pop(L, 1);
                lua_pushvalue(L, -1);
                lua_to_reply(e, L, o);
            }
            lua_pop(L, 2);
            if (rc < 0) e->oom = 1;
            return;
        }
        lua_pop(L, 1);
        /* an array, up to the first nil */
        long long n = 0;
        for (;;) {
            lua_rawgeti(L, -1, (int)(n + 1));
            int nil = lua_isnil(L, -1);
            lua_pop(L, 1);
            if (nil) break;
            n++;
        }
        rc = resp_add_array(o, n);
        for (long long j = 1; j <= n; j++) {
            lua_rawgeti(L, -1, (int)j);
            lua_to_reply(e, L, o);
        }
        break;
    }
    default:
        rc = resp_add_null(o);
    }
    lua_pop(L, 1);
    if (rc < 0) e->oom = 1;
}

/* ------------------------------------------------------ redis.* */

/* The arguments of redis.call/pcall/acl_check_cmd (stack 1..argc) into
 * e->argv; numbers formatted "%.17g" in place on the stack. Returns argc,
 * or -1 with an error table pushed. */
static int collect_args(fd_script_engine *e, lua_State *L) {
    int argc = lua_gettop(L);
    if (argc == 0) {
        push_error(L, "Please specify at least one argument for this redis lib call", 0);
        return -1;
    }
    if (argc > e->argv_cap) {
        int cap = argc < 16 ? 16 : argc;
        resp_arg *nv = realloc(e->argv, sizeof *nv * (size_t)cap);
        if (!nv) { push_error(L, "-OOM frontdoor: out of memory for script arguments", 0); return -1; }
        e->argv = nv;
        e->argv_cap = cap;
    }
    for (int j = 1; j <= argc; j++) {
        if (lua_type(L, j) == LUA_TNUMBER) {
            char buf[64];
            int n = snprintf(buf, sizeof buf, "%.17g", (double)lua_tonumber(L, j));
            lua_pushlstring(L, buf, (size_t)n);
            lua_replace(L, j);
        } else if (lua_type(L, j) != LUA_TSTRING) {
            lua_settop(L, 0);
            push_error(L, "Lua redis lib command arguments must be strings or integers", 0);
            return -1;
        }
        size_t n;
        const char *s = lua_tolstring(L, j, &n);
        e->argv[j - 1].ptr = (char *)s;
        e->argv[j - 1].len = n;
    }
    return argc;
}

/* Run the command through the host and push its converted reply (or an
 * error table). Returns 1 if the reply is an error. */
static int host_call(fd_script_engine *e, lua_State *L, int argc, int check_only) {
    e->callbuf.len = 0;
    e->callbuf.proto = e->resp;
    int rc = e->host.call ? e->host.call(e->host.ud, argc, e->argv, e->resp, check_only, &e->callbuf) : -1;
    lua_settop(L, 0);   /* the arguments are not needed any more */
    if (rc < 0 || e->callbuf.len == 0) {
        push_error(L, "-OOM frontdoor: the command could not run from the script (out of memory)", 1);
        return 1;
    }
    if (rc & FD_SCRIPT_CALL_WRITE) e->flags |= FD_SCRIPT_F_WROTE;
    const char *p = e->callbuf.data, *end = p + e->callbuf.len;
    if (reply_to_lua(L, &p, end, 1, 0) < 0) {
        lua_settop(L, 0);
        push_error(L, "frontdoor: malformed reply to a command called from a script", 1);
        return 1;
    }
    return e->callbuf.data[0] == '-';
}

static void count_hook(lua_State *L, lua_Debug *ar);

static int redis_generic_call(lua_State *L, int raise) {
    fd_script_engine *e = engine_of(L);
    if (!e->running) {
        push_error(L, "redis.call/pcall can only be called inside a script invocation", 0);
        return lua_error(L);
    }
    int argc = collect_args(e, L);
    if (argc < 0) return raise ? lua_error(L) : 1;
    if (e->inuse) {
        const char *w = "luaRedisGenericCommand() recursive call detected. "
                        "Are you doing funny stuff with Lua debug hooks?";
        host_log(e, FD_SCRIPT_LOG_WARNING, "%s", w);
        lua_settop(L, 0);
        push_error(L, w, 0);
        return 1;
    }
    e->inuse = 1;
    int is_err = host_call(e, L, argc, 0);
    e->inuse = 0;
    /* a command may take long (an asynchronous backend): the busy check
     * after each one too, not only every FD_SCRIPT_HOOK_STEPS instructions */
    if (e->threshold_ms > 0) count_hook(L, NULL);
    if (raise && is_err) return lua_error(L);
    return 1;
}

static int l_redis_call(lua_State *L)  { return redis_generic_call(L, 1); }
static int l_redis_pcall(lua_State *L) { return redis_generic_call(L, 0); }

static int l_acl_check_cmd(lua_State *L) {
    fd_script_engine *e = engine_of(L);
    if (!e->running) {
        push_error(L, "redis.acl_check_cmd can only be called inside a script invocation", 0);
        return lua_error(L);
    }
    int argc = collect_args(e, L);
    if (argc < 0) return lua_error(L);
    int is_err = host_call(e, L, argc, 1);
    if (is_err) return lua_error(L);
    /* :1 / :0 became a number */
    int ok = lua_type(L, -1) == LUA_TNUMBER ? lua_tonumber(L, -1) != 0 : lua_toboolean(L, -1);
    lua_pop(L, 1);
    lua_pushboolean(L, ok);
    return 1;
}

/* Raise {err="ERR <msg>"} as Redis's luaPushError + luaError. */
static int raise_err(lua_State *L, const char *msg) {
    push_error(L, msg, 0);
    return lua_error(L);
}

static int l_sha1hex(lua_State *L) {
    if (lua_gettop(L) != 1) return raise_err(L, "wrong number of arguments");
    size_t n = 0;
    const char *s = lua_tolstring(L, 1, &n);
    char hex[41];
    fd_sha1_hex(hex, s ? s : "", s ? n : 0);
    lua_pushstring(L, hex);
    return 1;
}

static int l_error_reply(lua_State *L) {
    if (lua_gettop(L) != 1 || lua_type(L, -1) != LUA_TSTRING) {
        push_error(L, "wrong number or type of arguments", 0);
        return 1;
    }
    const char *s = lua_tostring(L, -1);
    if (s[0] != '-') {
        lua_pushliteral(L, "-");
        lua_pushvalue(L, 1);
        lua_concat(L, 2);
        s = lua_tostring(L, -1);
    }
    push_error(L, s, 0);
    return 1;
}

static int l_status_reply(lua_State *L) {
    if (lua_gettop(L) != 1 || lua_type(L, -1) != LUA_TSTRING) {
        push_error(L, "wrong number or type of arguments", 0);
        return 1;
    }
    lua_newtable(L);
    lua_pushliteral(L, "ok");
    lua_pushvalue(L, -3);
    lua_settable(L, -3);
    return 1;
}

static int l_set_repl(lua_State *L) {
    fd_script_engine *e = engine_of(L);
    if (!e->running) return raise_err(L, "redis.set_repl can only be called inside a script invocation");
    if (lua_gettop(L) != 1) return raise_err(L, "redis.set_repl() requires two arguments.");
    int flags = (int)lua_tonumber(L, -1);
    if (flags & ~3)
        return raise_err(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.");
    return 0;   /* frontdoor does not replicate: accepted and ignored */
}

static int l_log(lua_State *L) {
    fd_script_engine *e = engine_of(L);
    int argc = lua_gettop(L);
    if (argc < 2) return raise_err(L, "redis.log() requires two arguments or more.");
    if (!lua_isnumber(L, 1)) return raise_err(L, "First argument must be a number (log level).");
    int level = (int)lua_tonumber(L, 1);
    if (level < FD_SCRIPT_LOG_DEBUG || level > FD_SCRIPT_LOG_WARNING)
        return raise_err(L, "Invalid debug level.");
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int j = 2; j <= argc; j++) {
        size_t n;
        const char *s = lua_tolstring(L, j, &n);   /* numbers become strings in place, as Redis */
        if (!s) continue;
        if (j != 2) luaL_addchar(&b, ' ');
        luaL_addlstring(&b, s, n);
    }
    luaL_pushresult(&b);
    size_t n;
    const char *s = lua_tolstring(L, -1, &n);
    if (e->host.log) e->host.log(e->host.ud, level, s, n);
    return 0;
}

static int l_setresp(lua_State *L) {
    fd_script_engine *e = engine_of(L);
    if (!e->running) return raise_err(L, "redis.setresp can only be called inside a script invocation");
    if (lua_gettop(L) != 1) return raise_err(L, "redis.setresp() requires one argument.");
    int resp = (int)lua_tonumber(L, 1);
    if (resp != 2 && resp != 3) return raise_err(L, "RESP version must be 2 or 3.");
    e->resp = resp;
    return 0;
}

static int l_breakpoint(lua_State *L) { lua_pushboolean(L, 0); return 1; }
static int l_debug(lua_State *L) { (void)L; return 0; }
static int l_replicate_commands(lua_State *L) { lua_pushboolean(L, 1); return 1; }

/* the global pcall: an error table becomes its "err" text (7.0's luaRedisPcall) */
static int l_pcall(lua_State *L) {
    int argc = lua_gettop(L);
    lua_pushboolean(L, 1);
    lua_insert(L, 1);
    if (lua_pcall(L, argc - 1, LUA_MULTRET, 0)) {
        lua_remove(L, 1);
        if (lua_istable(L, -1)) {
            lua_getfield(L, -1, "err");
            if (lua_isstring(L, -1)) lua_replace(L, -2);
            else lua_pop(L, 1);
        }
        lua_pushboolean(L, 0);
        lua_insert(L, 1);
    }
    return lua_gettop(L);
}

static int l_math_random(lua_State *L) {
    fd_script_engine *e = engine_of(L);
    lua_Number r = (lua_Number)(rand48_next(e) % INT32_MAX) / (lua_Number)INT32_MAX;
    switch (lua_gettop(L)) {
    case 0:
        lua_pushnumber(L, r);
        break;
    case 1: {
        int u = luaL_checkint(L, 1);
        luaL_argcheck(L, 1 <= u, 1, "interval is empty");
        lua_pushnumber(L, floor(r * u) + 1);
        break;
    }
    case 2: {
        int l = luaL_checkint(L, 1);
        int u = luaL_checkint(L, 2);
        luaL_argcheck(L, l <= u, 2, "interval is empty");
        lua_pushnumber(L, floor(r * (u - l + 1)) + l);
        break;
    }
    default:
        return luaL_error(L, "wrong number of arguments");
    }
    return 1;
}

static int l_math_randomseed(lua_State *L) {
    fd_script_engine *e = engine_of(L);
    int32_t seed = (int32_t)luaL_checkint(L, 1);
    e->rand48 = ((uint64_t)(uint32_t)seed << 16) | 0x330E;
    return 0;
}

/* ------------------------------------------------------ protection */

static int l_nonexistent_global(lua_State *L) {
    if (lua_gettop(L) != 2) return luaL_error(L, "Wrong number of arguments to luaProtectedTableError");
    if (!lua_isstring(L, -1) && !lua_isnumber(L, -1))
        return luaL_error(L, "Second argument to luaProtectedTableError must be a string or number");
    return luaL_error(L, "Script attempted to access nonexistent global variable '%s'", lua_tostring(L, -1));
}

/* __newindex of a proxy: the VM's error, at the assigning line */
static int l_readonly_newindex(lua_State *L) {
    return luaL_error(L, "Attempt to modify a readonly table");
}

/* the same error from a C API call (rawset, setmetatable): no position */
static int readonly_api_error(lua_State *L) {
    lua_pushliteral(L, "Attempt to modify a readonly table");
    return lua_error(L);
}

/* If the value at idx is a proxy, push its real table and return 1. */
static int real_of(lua_State *L, int idx) {
    if (!lua_istable(L, idx)) return 0;
    lua_pushlightuserdata(L, &K_REAL_OF);
    lua_rawget(L, LUA_REGISTRYINDEX);
    lua_pushvalue(L, idx);
    lua_rawget(L, -2);
    lua_remove(L, -2);
    if (lua_isnil(L, -1)) { lua_pop(L, 1); return 0; }
    return 1;
}

static int is_proxy(lua_State *L, int idx) {
    if (!real_of(L, idx)) return 0;
    lua_pop(L, 1);
    return 1;
}

/* proxy of the real table at idx if there is one (else the value itself) */
static void push_proxy_of(lua_State *L, int idx) {
    idx = idx < 0 && idx > LUA_REGISTRYINDEX ? lua_gettop(L) + idx + 1 : idx;
    if (!lua_istable(L, idx)) { lua_pushvalue(L, idx); return; }
    lua_pushlightuserdata(L, &K_PROXY_OF);
    lua_rawget(L, LUA_REGISTRYINDEX);
    lua_pushvalue(L, idx);
    lua_rawget(L, -2);
    lua_remove(L, -2);
    if (lua_isnil(L, -1)) { lua_pop(L, 1); lua_pushvalue(L, idx); }
}

static int l_rawset(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checkany(L, 2);
    luaL_checkany(L, 3);
    if (is_proxy(L, 1)) return readonly_api_error(L);
    lua_settop(L, 3);
    lua_rawset(L, 1);
    return 1;
}

static int l_rawget(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checkany(L, 2);
    if (real_of(L, 1)) lua_replace(L, 1);
    lua_settop(L, 2);
    lua_rawget(L, 1);
    return 1;
}

static int l_next(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    if (real_of(L, 1)) lua_replace(L, 1);
    lua_settop(L, 2);
    if (lua_next(L, 1)) return 2;
    lua_pushnil(L);
    return 1;
}

static int l_pairs(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_pushvalue(L, lua_upvalueindex(1));   /* our next */
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    return 3;
}

static int l_setmetatable(lua_State *L) {
    int t = lua_type(L, 2);
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_argcheck(L, t == LUA_TNIL || t == LUA_TTABLE, 2, "nil or table expected");
    if (is_proxy(L, 1)) return readonly_api_error(L);
    if (luaL_getmetafield(L, 1, "__metatable")) luaL_error(L, "cannot change a protected metatable");
    lua_settop(L, 2);
    lua_setmetatable(L, 1);
    return 1;
}

static int l_getmetatable(lua_State *L) {
    luaL_checkany(L, 1);
    if (lua_type(L, 1) == LUA_TSTRING) {
        lua_pushlightuserdata(L, &K_STRMT_PROXY);
        lua_rawget(L, LUA_REGISTRYINDEX);
        return 1;
    }
    if (real_of(L, 1)) {
        /* the real table's metatable, read-only */
        if (!lua_getmetatable(L, -1)) { lua_pushnil(L); return 1; }
        push_proxy_of(L, -1);
        return 1;
    }
    if (!lua_getmetatable(L, 1)) { lua_pushnil(L); return 1; }
    luaL_getmetafield(L, 1, "__metatable");
    return 1;
}

/* Make the table at the top read-only: replace it (in place on the stack)
 * by its proxy, recursively for the tables it holds. */
static void protect_top(lua_State *L, int real_idx_pmap, int proxy_idx_pmap) {
    int real = lua_gettop(L);
    /* a proxy already (the string metatable's __index) */
    lua_pushvalue(L, real);
    lua_rawget(L, real_idx_pmap);
    int isproxy = !lua_isnil(L, -1);
    lua_pop(L, 1);
    if (isproxy) return;
    /* already done (cycles, _G._G)? */
    lua_pushvalue(L, real);
    lua_rawget(L, proxy_idx_pmap);
    if (!lua_isnil(L, -1)) { lua_replace(L, real); return; }
    lua_pop(L, 1);

    lua_newtable(L);                          /* proxy */
    int proxy = lua_gettop(L);
    lua_pushvalue(L, real); lua_pushvalue(L, proxy); lua_rawset(L, proxy_idx_pmap);
    lua_pushvalue(L, proxy); lua_pushvalue(L, real); lua_rawset(L, real_idx_pmap);

    /* children first: every table value becomes its proxy */
    lua_pushnil(L);
    while (lua_next(L, real)) {
        if (lua_istable(L, -1)) {
            protect_top(L, real_idx_pmap, proxy_idx_pmap);
            lua_pushvalue(L, -2);             /* key */
            lua_pushvalue(L, -2);             /* proxy */
            lua_rawset(L, real);              /* same key: allowed during next */
        }
        lua_pop(L, 1);
    }
    /* the real table's metatable (the globals' error one) gets a proxy too, for getmetatable */
    if (lua_getmetatable(L, real)) {
        protect_top(L, real_idx_pmap, proxy_idx_pmap);
        lua_pop(L, 1);
    }

    lua_newtable(L);                          /* the proxy's metatable */
    lua_pushliteral(L, "__index");
    lua_pushvalue(L, real);
    lua_rawset(L, -3);
    lua_pushliteral(L, "__newindex");
    lua_pushcfunction(L, l_readonly_newindex);
    lua_rawset(L, -3);
    lua_setmetatable(L, proxy);
    lua_replace(L, real);                     /* leave the proxy where the real table was */
}

/* ------------------------------------------------------ error handler */

/* 7.0's __redis__err__handler: turn the error into a table {err=...} and add
 * the source and line of the function that raised it (of its caller when it
 * was a C function). */
static int l_err_handler(lua_State *L) {
    lua_Debug ar;
    int have = 0;
    if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "nSl", &ar)) {
        have = 1;
        if (strcmp(ar.what, "C") == 0)
            have = lua_getstack(L, 2, &ar) && lua_getinfo(L, "nSl", &ar);
    }
    lua_settop(L, 1);
    if (!lua_istable(L, 1)) {
        lua_pushlightuserdata(L, &K_TOSTRING);
        lua_rawget(L, LUA_REGISTRYINDEX);
        lua_pushvalue(L, 1);
        lua_call(L, 1, 1);
        lua_pushliteral(L, "ERR ");
        lua_insert(L, -2);
        lua_concat(L, 2);
        lua_newtable(L);
        lua_pushliteral(L, "err");
        lua_pushvalue(L, -3);
        lua_settable(L, -3);
        lua_replace(L, 1);
        lua_settop(L, 1);
    }
    if (have) {
        lua_pushliteral(L, "source");
        lua_pushstring(L, ar.source);
        lua_settable(L, 1);
        lua_pushliteral(L, "line");
        lua_pushnumber(L, ar.currentline);
        lua_settable(L, 1);
    }
    return 1;
}

/* ------------------------------------------------------ state setup */

static void set_cfunc(lua_State *L, const char *name, lua_CFunction f, fd_script_engine *e) {
    lua_pushstring(L, name);
    lua_pushlightuserdata(L, e);
    lua_pushcclosure(L, f, 1);
    lua_rawset(L, -3);
}

static void set_num(lua_State *L, const char *name, lua_Number v) {
    lua_pushstring(L, name);
    lua_pushnumber(L, v);
    lua_rawset(L, -3);
}

static void open_lib(lua_State *L, const char *global, lua_CFunction open, const char *arg) {
    int top = lua_gettop(L);
    lua_pushcfunction(L, open);
    lua_pushstring(L, arg);
    lua_call(L, 1, 1);
    if (global && lua_istable(L, -1)) lua_setfield(L, LUA_GLOBALSINDEX, global);
    lua_settop(L, top);
}

/* Lua's allocator (lua_Alloc): realloc that counts the heap's bytes and
 * refuses to grow it past FD_SCRIPT_LUA_MAX_MEMORY (Lua then raises "not
 * enough memory"). Freeing and shrinking never fail, as Lua requires. */
static void *lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    fd_script_engine *e = ud;
    if (nsize == 0) {
        free(ptr);
        e->lua_used -= ptr ? osize : 0;
        return NULL;
    }
    size_t old = ptr ? osize : 0;
    if (nsize > old && e->lua_used - old + nsize > FD_SCRIPT_LUA_MAX_MEMORY) return NULL;
    void *p = realloc(ptr, nsize);
    if (!p) return NULL;
    e->lua_used = e->lua_used - old + nsize;
    if (e->lua_used > e->lua_peak) e->lua_peak = e->lua_used;
    return p;
}

/* After a script: a heap that grew past FD_SCRIPT_TRIM_AT is collected in
 * full and the freed memory returned to the system; a redis.call buffer
 * grown past it is dropped. */
static void after_script(fd_script_engine *e) {
    int trim = 0;
    if (e->lua_peak > FD_SCRIPT_TRIM_AT) {
        lua_gc(e->L, LUA_GCCOLLECT, 0);
        e->lua_peak = e->lua_used;
        trim = 1;
    }
    if (e->callbuf.cap > FD_SCRIPT_TRIM_AT) {
        int proto = e->callbuf.proto;
        resp_out_free(&e->callbuf);
        resp_out_init(&e->callbuf, proto);
        trim = 1;
    }
    if (e->fn_cmd.cap > FD_SCRIPT_TRIM_AT) {   /* a busy FCALL's big arguments */
        resp_out_free(&e->fn_cmd);
        resp_out_init(&e->fn_cmd, 2);
        trim = 1;
    }
    if (trim) malloc_trim(0);
}

/* As luaL_newstate's: an error outside any pcall (a bug) is reported. */
static int lua_panic(lua_State *L) {
    fprintf(stderr, "PANIC: unprotected error in call to Lua API (%s)\n", lua_tostring(L, -1));
    return 0;
}

static int l_register_function(lua_State *L);


/* redis.log, the LOG_* levels and REDIS_VERSION(_NUM) into the table on top
 * of L's stack: what scripts and loading libraries both see. */
static void set_log_and_version(lua_State *L, fd_script_engine *e)
{
    set_cfunc(L, "log", l_log, e);
    set_num(L, "LOG_DEBUG", FD_SCRIPT_LOG_DEBUG);
    set_num(L, "LOG_VERBOSE", FD_SCRIPT_LOG_VERBOSE);
    set_num(L, "LOG_NOTICE", FD_SCRIPT_LOG_NOTICE);
    set_num(L, "LOG_WARNING", FD_SCRIPT_LOG_WARNING);
    set_num(L, "REDIS_VERSION_NUM", COMPAT_VERSION_NUM);
    lua_pushliteral(L, "REDIS_VERSION");
    lua_pushliteral(L, COMPAT_VERSION);
    lua_rawset(L, -3);
}

static int setup_state(fd_script_engine *e) {
    lua_State *L = lua_newstate(lua_alloc, e);
    if (!L) return -1;
    lua_atpanic(L, lua_panic);
    e->L = L;

    open_lib(L, NULL, luaopen_base, "");
    open_lib(L, NULL, luaopen_table, LUA_TABLIBNAME);
    open_lib(L, NULL, luaopen_string, LUA_STRLIBNAME);
    open_lib(L, NULL, luaopen_math, LUA_MATHLIBNAME);
    open_lib(L, NULL, luaopen_debug, LUA_DBLIBNAME);
    open_lib(L, "cjson", luaopen_cjson, "cjson");
    open_lib(L, "struct", fd_luaopen_struct, "struct");
    open_lib(L, "cmsgpack", fd_luaopen_cmsgpack, "cmsgpack");
    open_lib(L, "bit", luaopen_bit, "bit");

    /* not in 7.0.15's globals (measured: type(rawget(_G, name)) is nil there) */
    const char *deny[] = {"print", "dofile", "loadfile", "debug", "getfenv", "setfenv", "newproxy", NULL};
    for (int i = 0; deny[i]; i++) {
        lua_pushnil(L);
        lua_setfield(L, LUA_GLOBALSINDEX, deny[i]);
    }

    /* the original tostring for the error handler */
    lua_pushlightuserdata(L, &K_TOSTRING);
    lua_getglobal(L, "tostring");
    lua_rawset(L, LUA_REGISTRYINDEX);

    /* base functions that must see through proxies */
    lua_pushcfunction(L, l_pcall);         lua_setglobal(L, "pcall");
    lua_pushcfunction(L, l_rawset);        lua_setglobal(L, "rawset");
    lua_pushcfunction(L, l_rawget);        lua_setglobal(L, "rawget");
    lua_pushcfunction(L, l_setmetatable);  lua_setglobal(L, "setmetatable");
    lua_pushcfunction(L, l_getmetatable);  lua_setglobal(L, "getmetatable");
    lua_pushcfunction(L, l_next);
    lua_pushvalue(L, -1);
    lua_setglobal(L, "next");
    lua_pushcclosure(L, l_pairs, 1);       lua_setglobal(L, "pairs");

    /* math.random / math.randomseed on Redis's PRNG */
    lua_getglobal(L, "math");
    set_cfunc(L, "random", l_math_random, e);
    set_cfunc(L, "randomseed", l_math_randomseed, e);
    lua_pop(L, 1);

    /* the redis table */
    lua_newtable(L);
    set_cfunc(L, "call", l_redis_call, e);
    set_cfunc(L, "pcall", l_redis_pcall, e);
    set_log_and_version(L, e);
    set_cfunc(L, "setresp", l_setresp, e);
    set_cfunc(L, "sha1hex", l_sha1hex, e);
    set_cfunc(L, "error_reply", l_error_reply, e);
    set_cfunc(L, "status_reply", l_status_reply, e);
    set_cfunc(L, "set_repl", l_set_repl, e);
    set_num(L, "REPL_NONE", 0);
    set_num(L, "REPL_AOF", 1);
    set_num(L, "REPL_SLAVE", 2);
    set_num(L, "REPL_REPLICA", 2);
    set_num(L, "REPL_ALL", 3);
    set_cfunc(L, "acl_check_cmd", l_acl_check_cmd, e);
    set_cfunc(L, "breakpoint", l_breakpoint, e);
    set_cfunc(L, "debug", l_debug, e);
    set_cfunc(L, "replicate_commands", l_replicate_commands, e);
    lua_setglobal(L, "redis");

    /* the error handler: in the registry, and as 7.0's global name */
    lua_pushcfunction(L, l_err_handler);
    lua_pushlightuserdata(L, &K_ERRH);
    lua_pushvalue(L, -2);
    lua_rawset(L, LUA_REGISTRYINDEX);
    lua_setglobal(L, "__redis__err__handler");

    /* reading an unknown global is an error */
    lua_newtable(L);
    lua_pushcfunction(L, l_nonexistent_global);
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, LUA_GLOBALSINDEX);

    /* read-only: proxies for the globals and everything reachable */
    lua_newtable(L);
    int real_of_map = lua_gettop(L);
    lua_newtable(L);
    int proxy_of_map = lua_gettop(L);
    lua_pushlightuserdata(L, &K_REAL_OF);  lua_pushvalue(L, real_of_map);  lua_rawset(L, LUA_REGISTRYINDEX);
    lua_pushlightuserdata(L, &K_PROXY_OF); lua_pushvalue(L, proxy_of_map); lua_rawset(L, LUA_REGISTRYINDEX);

    lua_pushvalue(L, LUA_GLOBALSINDEX);
    lua_pushlightuserdata(L, &K_REAL_G);
    lua_pushvalue(L, -2);
    lua_rawset(L, LUA_REGISTRYINDEX);
    protect_top(L, real_of_map, proxy_of_map);    /* globals -> proxy (its _G too) */
    int gproxy = lua_gettop(L);

    /* the string metatable: method calls through the string proxy; getmetatable("") read-only */
    lua_pushliteral(L, "");
    if (lua_getmetatable(L, -1)) {
        int mt = lua_gettop(L);
        lua_getfield(L, mt, "__index");
        push_proxy_of(L, -1);
        lua_setfield(L, mt, "__index");
        lua_pop(L, 1);
        lua_pushvalue(L, mt);
        protect_top(L, real_of_map, proxy_of_map);
        lua_pushlightuserdata(L, &K_STRMT_PROXY);
        lua_insert(L, -2);
        lua_rawset(L, LUA_REGISTRYINDEX);
        lua_settop(L, gproxy);
    } else {
        lua_settop(L, gproxy);
    }

    /* the globals a library sees while it loads (7.0's library API):
     * redis.register_function, redis.log, LOG_*, REDIS_VERSION(_NUM) and
     * nothing else (any other name is a nonexistent global) */
    lua_newtable(L);
    lua_newtable(L);
    set_cfunc(L, "register_function", l_register_function, e);
    set_log_and_version(L, e);
    for (int i = 0; i < 2; i++) {          /* the redis table, then the api table */
        lua_newtable(L);
        lua_pushcfunction(L, l_nonexistent_global);
        lua_setfield(L, -2, "__index");
        lua_setmetatable(L, -2);
        if (i == 0) lua_setfield(L, -2, "redis");
    }
    protect_top(L, real_of_map, proxy_of_map);
    lua_pushlightuserdata(L, &K_LIBAPI);
    lua_insert(L, -2);
    lua_rawset(L, LUA_REGISTRYINDEX);

    lua_pushvalue(L, gproxy);
    lua_replace(L, LUA_GLOBALSINDEX);
    lua_settop(L, 0);
    return 0;
}

/* ------------------------------------------------------ cache */

static size_t sha_hash(const char *sha) {
    size_t h = 0;
    for (int i = 0; i < 16; i++) h = h * 16 + (size_t)(isdigit((unsigned char)sha[i]) ? sha[i] - '0' : sha[i] - 'a' + 10);
    return h;
}

static script_entry *cache_find(fd_script_engine *e, const char *sha) {
    if (!e->nbuckets) return NULL;
    for (script_entry *s = e->buckets[sha_hash(sha) & (e->nbuckets - 1)]; s; s = s->next)
        if (memcmp(s->sha, sha, 40) == 0) return s;
    return NULL;
}

static int cache_add(fd_script_engine *e, script_entry *s) {
    if (e->count + 1 > e->nbuckets) {
        size_t nb = e->nbuckets ? e->nbuckets * 2 : 64;
        script_entry **b = calloc(nb, sizeof *b);
        if (!b) return -1;
        for (size_t i = 0; i < e->nbuckets; i++)
            for (script_entry *x = e->buckets[i], *nx; x; x = nx) {
                nx = x->next;
                size_t h = sha_hash(x->sha) & (nb - 1);
                x->next = b[h];
                b[h] = x;
            }
        free(e->buckets);
        e->buckets = b;
        e->nbuckets = nb;
    }
    size_t h = sha_hash(s->sha) & (e->nbuckets - 1);
    s->next = e->buckets[h];
    e->buckets[h] = s;
    e->count++;
    return 0;
}

int fd_script_body(const fd_script_engine *e, const char *sha, size_t shalen, const char **body, size_t *len) {
    char low[41];
    if (!e || shalen != 40) return 0;
    for (int i = 0; i < 40; i++) {
        char ch = (char)tolower((unsigned char)sha[i]);
        if (!isxdigit((unsigned char)ch)) return 0;
        low[i] = ch;
    }
    low[40] = '\0';
    const script_entry *s = cache_find((fd_script_engine *)e, low);
    if (!s) return 0;
    *body = s->body;
    *len = s->len;
    return 1;
}

static void cache_clear(fd_script_engine *e) {
    for (size_t i = 0; i < e->nbuckets; i++)
        for (script_entry *x = e->buckets[i], *nx; x; x = nx) { nx = x->next; free(x); }   /* body included */
    free(e->buckets);
    e->buckets = NULL;
    e->nbuckets = e->count = 0;
}

/* The next space-separated word of a shebang line [*p, end) (Redis:
 * sdssplitargs without quotes): its start in *w, its length returned, 0 when
 * no word is left; *p moves past it. Shared by scripts' and libraries'
 * "#!" lines. */
static size_t next_word(const char **p, const char *end, const char **w) {
    const char *q = *p;
    while (q < end && isspace((unsigned char)*q)) q++;
    *w = q;
    while (q < end && !isspace((unsigned char)*q)) q++;
    *p = q;
    return (size_t)(q - *w);
}

/* 7.0's evalExtractShebangFlags. Returns the body offset after the shebang
 * line (its '\n' kept, so line numbers stay), or -1 with an error reply. */
static long shebang(const char *body, size_t len, unsigned *flags, resp_out *out, int *oom) {
    *flags = 0;
    if (len < 2 || body[0] != '#' || body[1] != '!') return 0;
    const char *nl = memchr(body, '\n', len);
    if (!nl) { *oom |= resp_add_error(out, "ERR Invalid script shebang") < 0; return -1; }
    size_t sl = (size_t)(nl - body);
    /* split on spaces (Redis: sdssplitargs) */
    const char *p = body, *end = nl;
    int part = 0;
    *flags = FD_SCRIPT_F_SHEBANG;
    const char *w;
    size_t wl;
    while ((wl = next_word(&p, end, &w)) != 0) {
        if (part == 0) {
            if (wl != 5 || memcmp(w, "#!lua", 5) != 0) {
                *oom |= resp_add_errorf(out, "ERR Unexpected engine in script shebang: %.*s", (int)wl, w) < 0;
                return -1;
            }
        } else if (wl >= 6 && memcmp(w, "flags=", 6) == 0) {
            const char *f = w + 6, *fe = p;
            while (f < fe) {
                const char *c = memchr(f, ',', (size_t)(fe - f));
                const char *ce = c ? c : fe;
                size_t fl = (size_t)(ce - f);
                if (fl == 9 && !memcmp(f, "no-writes", 9)) *flags |= FD_SCRIPT_F_NO_WRITES;
                else if (fl == 9 && !memcmp(f, "allow-oom", 9)) *flags |= FD_SCRIPT_F_ALLOW_OOM;
                else if (fl == 11 && !memcmp(f, "allow-stale", 11)) *flags |= FD_SCRIPT_F_ALLOW_STALE;
                else if (fl == 10 && !memcmp(f, "no-cluster", 10)) *flags |= FD_SCRIPT_F_NO_CLUSTER;
                else {
                    *oom |= resp_add_errorf(out, "ERR Unexpected flag in script shebang: %.*s", (int)fl, f) < 0;
                    return -1;
                }
                if (!c) break;
                f = c + 1;
            }
        } else {
            *oom |= resp_add_errorf(out, "ERR Unknown lua shebang option: %.*s", (int)wl, w) < 0;
            return -1;
        }
        part++;
    }
    if (part == 0) { *oom |= resp_add_error(out, "ERR Invalid engine in script shebang") < 0; return -1; }
    return (long)sl;
}

/* Find or compile the script `body`; its SHA1 into sha. NULL with an error
 * reply in out when it does not compile. */
static script_entry *create_function(fd_script_engine *e, const char *body, size_t len, char sha[41], resp_out *out) {
    fd_sha1_hex(sha, body, len);
    script_entry *s = cache_find(e, sha);
    if (s) return s;
    unsigned flags;
    long off = shebang(body, len, &flags, out, &e->oom);
    if (off < 0) return NULL;
    lua_State *L = e->L;
    if (luaL_loadbuffer(L, body + off, len - (size_t)off, "@user_script")) {
        const char *msg = lua_tostring(L, -1);
        e->oom |= resp_add_errorf(out, "ERR Error compiling script (new function): %s", msg ? msg : "") < 0;
        lua_pop(L, 1);
        return NULL;
    }
    s = calloc(1, sizeof *s + len);
    if (s) {
        memcpy(s->sha, sha, 41);
        s->flags = flags;
        s->len = len;
        if (len) memcpy(s->body, body, len);
    }
    if (!s || cache_add(e, s) < 0) {
        free(s);
        lua_pop(L, 1);
        e->oom |= resp_add_error(out, "OOM command not allowed when used memory > 'maxmemory'.") < 0;
        return NULL;
    }
    char name[43] = "f_";
    memcpy(name + 2, sha, 41);
    lua_setfield(L, LUA_REGISTRYINDEX, name);
    return s;
}

/* ------------------------------------------------------ running */

/* The engine whose script runs (one runs at a time per process: a hook has
 * no user data in Lua 5.1). */
static fd_script_engine *hook_engine;

static void count_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    fd_script_engine *e = hook_engine;
    if (!e || !e->running) return;
    if (!e->killed) {
        long long elapsed = (long long)((mono_us() - e->start_us) / 1000u);
        if (!e->busy && elapsed < e->threshold_ms) return;
        int first = !e->busy;
        if (first) {
            e->busy = 1;
            /* the loop runs from now on: the FCALL's argv may be overwritten */
            e->fn_cmd.len = 0;
            for (int i = 0; e->fn && i < e->fn_argc; i++) resp_add_bulk(&e->fn_cmd, e->fn_argv[i].ptr, e->fn_argv[i].len);
            host_log(e, FD_SCRIPT_LOG_WARNING,
                     "Slow script detected: still in execution after %lld milliseconds. "
                     "You can try killing the script using the SCRIPT KILL command.", elapsed);
        }
        if (e->host.busy) e->host.busy(e->host.ud, elapsed, first);
    }
    if (e->killed) {
        host_log(e, FD_SCRIPT_LOG_WARNING, "Lua script killed by user with SCRIPT KILL.");
        /* every line from now on fails again, so pcall cannot keep it alive */
        lua_sethook(L, count_hook, LUA_MASKLINE, 0);
        push_error(L, "Script killed by user with SCRIPT KILL...", 0);
        lua_error(L);
    }
}

static void set_array_global(lua_State *L, const char *name, const resp_arg *v, int n) {
    lua_pushlightuserdata(L, &K_REAL_G);
    lua_rawget(L, LUA_REGISTRYINDEX);
    lua_pushstring(L, name);
    lua_createtable(L, n, 0);
    for (int j = 0; j < n; j++) {
        lua_pushlstring(L, v[j].ptr, v[j].len);
        lua_rawseti(L, -2, j + 1);
    }
    lua_rawset(L, -3);
    lua_pop(L, 1);
}

/* Run the cached script s (EVAL: KEYS and ARGV globals) or, s NULL, the
 * function fn (FCALL: called with the keys and args tables). */
static int run_script(fd_script_engine *e, script_entry *s, const fn_entry *fn, const resp_arg *keys, int nkeys,
                      const resp_arg *args, int nargs, int ro, resp_out *out) {
    lua_State *L = e->L;
    unsigned sflags = fn ? fn->flags | FD_SCRIPT_F_SHEBANG | FD_SCRIPT_F_FUNCTION : s->flags;
    if ((sflags & FD_SCRIPT_F_SHEBANG) && !(sflags & FD_SCRIPT_F_NO_WRITES) && ro)
        return resp_add_error(out, "ERR Can not execute a script with write flag using *_ro command.");
    unsigned flags = sflags;
    if (ro) flags |= FD_SCRIPT_F_NO_WRITES;
    if (!(flags & FD_SCRIPT_F_SHEBANG)) flags &= FD_SCRIPT_F_NO_WRITES | FD_SCRIPT_F_SHEBANG; /* compat mode */
    if (e->host.prepare && e->host.prepare(e->host.ud, flags, out) != 0) return 0;

    lua_settop(L, 0);
    lua_pushlightuserdata(L, &K_ERRH);
    lua_rawget(L, LUA_REGISTRYINDEX);
    if (fn) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, fn->ref);
    } else {
        char name[43] = "f_";
        memcpy(name + 2, s->sha, 41);
        lua_getfield(L, LUA_REGISTRYINDEX, name);
    }

    e->running = 1;
    e->busy = e->killed = e->inuse = 0;
    e->flags = flags;
    e->resp = 2;
    if (fn) e->sha[0] = '\0';
    else memcpy(e->sha, s->sha, 41);
    e->fn = fn;
    const char *label = fn ? fn->name : e->sha;   /* the errors' "script: <name>" */
    e->start_us = mono_us();
    hook_engine = e;
    if (e->threshold_ms > 0) lua_sethook(L, count_hook, LUA_MASKCOUNT, FD_SCRIPT_HOOK_STEPS);

    int err;
    if (fn) {
        /* a function has no KEYS/ARGV globals (7.0: nonexistent), whatever an EVAL left */
        lua_pushlightuserdata(L, &K_REAL_G);
        lua_rawget(L, LUA_REGISTRYINDEX);
        lua_pushnil(L);
        lua_setfield(L, -2, "KEYS");
        lua_pushnil(L);
        lua_setfield(L, -2, "ARGV");
        lua_pop(L, 1);
        for (int t = 0; t < 2; t++) {
            const resp_arg *v = t ? args : keys;
            int n = t ? nargs : nkeys;
            lua_createtable(L, n, 0);
            for (int j = 0; j < n; j++) {
                lua_pushlstring(L, v[j].ptr, v[j].len);
                lua_rawseti(L, -2, j + 1);
            }
        }
        err = lua_pcall(L, 2, 1, 1);
    } else {
        set_array_global(L, "KEYS", keys, nkeys);
        set_array_global(L, "ARGV", args, nargs);
        err = lua_pcall(L, 0, 1, 1);
    }

    if (++e->gc_count == 50) {
        lua_gc(L, LUA_GCSTEP, 50);
        e->gc_count = 0;
    }

    if (err) {
        if (!lua_istable(L, -1)) {
            const char *msg = lua_isstring(L, -1) ? lua_tostring(L, -1) : "execution failure";
            e->oom |= resp_add_errorf(out, "ERR Error running script %s, %.100s", label, msg) < 0;
        } else {
            const char *msg = "", *src = NULL, *line = NULL;
            lua_getfield(L, -1, "err");
            if (lua_isstring(L, -1)) msg = lua_tostring(L, -1);
            lua_getfield(L, -2, "source");
            if (lua_isstring(L, -1)) src = lua_tostring(L, -1);
            lua_getfield(L, -3, "line");
            if (lua_isstring(L, -1)) line = lua_tostring(L, -1);
            if (line && src)
                e->oom |= resp_add_errorf(out, "-%s script: %s, on %s:%s.", msg, label, src, line) < 0;
            else
                e->oom |= resp_add_errorf(out, "-%s", msg) < 0;
            lua_pop(L, 3);
        }
        lua_pop(L, 1);
    } else {
        lua_to_reply(e, L, out);
    }
    if (out->over) e->oom = 0;   /* past max-reply-bytes: the caller refuses it (resp.h) */

    lua_sethook(L, NULL, 0, 0);
    lua_settop(L, 0);
    after_script(e);
    e->running = e->busy = e->killed = 0;
    e->flags = 0;
    e->sha[0] = '\0';
    e->fn = NULL;
    hook_engine = NULL;
    return 0;
}

static int argis(const resp_arg *a, const char *lit) {
    size_t n = strlen(lit);
    return a->len == n && strncasecmp(a->ptr, lit, n) == 0;
}

int fd_script_eval(fd_script_engine *e, int argc, const resp_arg *argv, resp_out *out) {
    e->oom = 0;
    if (e->running) return resp_add_error(out, FD_SCRIPT_BUSY_ERR);
    int evalsha = argis(&argv[0], "evalsha") || argis(&argv[0], "evalsha_ro");
    int ro = argis(&argv[0], "eval_ro") || argis(&argv[0], "evalsha_ro");
    if (argc < 3) return resp_add_errorf(out, "ERR wrong number of arguments for '%.*s' command",
                                         (int)argv[0].len, argv[0].ptr);
    if (evalsha && argv[1].len != 40) return resp_add_error(out, ERR_NOSCRIPT);
    long long numkeys;
    if (resp_str2ll(argv[2].ptr, argv[2].len, &numkeys) < 0)
        return resp_add_error(out, "ERR value is not an integer or out of range");
    if (numkeys > argc - 3) return resp_add_error(out, "ERR Number of keys can't be greater than number of args");
    if (numkeys < 0) return resp_add_error(out, "ERR Number of keys can't be negative");

    script_entry *s;
    if (evalsha) {
        char sha[41];
        for (int j = 0; j < 40; j++) sha[j] = (char)tolower((unsigned char)argv[1].ptr[j]);
        sha[40] = '\0';
        s = cache_find(e, sha);
        if (!s) return resp_add_error(out, ERR_NOSCRIPT);
    } else {
        char sha[41];
        s = create_function(e, argv[1].ptr, argv[1].len, sha, out);
        if (!s) return e->oom ? -1 : 0;
    }
    run_script(e, s, NULL, argv + 3, (int)numkeys, argv + 3 + numkeys, argc - 3 - (int)numkeys, ro, out);
    return e->oom ? -1 : 0;
}

int fd_script_kill(fd_script_engine *e, resp_out *out) { return fd_script_kill_from(e, 1, out); }

int fd_script_kill_from(fd_script_engine *e, int is_eval, resp_out *out) {
    if (!e->running) return resp_add_error(out, "NOTBUSY No scripts in execution right now.");
    if (e->flags & FD_SCRIPT_F_WROTE)
        return resp_add_error(out, "UNKILLABLE Sorry the script already executed write commands against the "
                                   "dataset. You can either wait the script termination or kill the server in "
                                   "a hard way using the SHUTDOWN NOSAVE command.");
    if (is_eval && e->fn) return resp_add_error(out, FD_SCRIPT_BUSY_FN_ERR);
    if (!is_eval && !e->fn) return resp_add_error(out, FD_SCRIPT_BUSY_ERR);
    e->killed = 1;
    return resp_add_status(out, "OK");
}

const char *const fd_script_help_lines[] = {
    "DEBUG (YES|SYNC|NO)",
    "    Set the debug mode for subsequent scripts executed.",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
    NULL,
};

/* SCRIPT FLUSH: a new Lua state and an empty script cache; the function
 * libraries are kept (7.0 keeps them in an interpreter of their own): their
 * code is run again in the new state. */
static int reset_state(fd_script_engine *e) {
    lib_entry *libs = e->libs;
    e->libs = NULL;
    lua_close(e->L);
    e->L = NULL;
    cache_clear(e);
    for (lib_entry *l = libs; l; l = l->next)
        for (fn_entry *f = l->fns; f; f = f->next) f->ref = LUA_NOREF;
    int rc = setup_state(e);
    for (lib_entry *l = libs, *nl; l; l = nl) {
        nl = l->next;
        char err[256];
        const char *name;
        if (rc == 0 && function_load(e, l->code, l->codelen, 0, &name, err, sizeof err) < 0)
            host_log(e, FD_SCRIPT_LOG_WARNING, "library %s could not be loaded again after SCRIPT FLUSH: %s", l->name, err);
        lib_free(NULL, l);
    }
    count_libs(e);
    return rc;
}

/* SCRIPT's and FUNCTION's subcommands: name and Redis arity (negative: at
 * least). */
typedef struct subcommand { const char *name; int arity; } subcommand;

/* The index of argv[1] (sub) in subs[0..n), or -1 after Redis's unknown
 * subcommand or arity error (*rc: the reply writer's status). */
static int find_subcommand(const subcommand *subs, int n, int argc, const resp_arg *sub, const char *parent,
                           const char *help, resp_out *out, int *rc) {
    int known = -1;
    for (int i = 0; i < n; i++)
        if (argis(sub, subs[i].name)) known = i;
    if (known < 0) {
        *rc = resp_add_errorf(out, "ERR unknown subcommand '%.*s'. Try %s HELP.",
                              (int)(sub->len > 128 ? 128 : sub->len), sub->ptr, help);
        return -1;
    }
    int ar = subs[known].arity;
    if ((ar > 0 && argc != ar) || (ar < 0 && argc < -ar)) {
        *rc = resp_add_errorf(out, "ERR wrong number of arguments for '%s|%s' command", parent, subs[known].name);
        return -1;
    }
    return known;
}

int fd_script_debug_cmd(int argc, const resp_arg *argv, resp_out *out) {
    static const subcommand subs[] = {{"debug", 3}};
    int rc;
    if (find_subcommand(subs, 1, argc, &argv[1], "script", "SCRIPT", out, &rc) < 0) return rc;
    if (argis(&argv[2], "no")) return resp_add_status(out, "OK");
    if (argis(&argv[2], "yes") || argis(&argv[2], "sync"))
        return resp_add_error(out, "ERR frontdoor does not support the Lua debugger (SCRIPT DEBUG)");
    return resp_add_error(out, "ERR Use SCRIPT DEBUG YES/SYNC/NO");
}

int fd_script_script_cmd(fd_script_engine *e, int argc, const resp_arg *argv, resp_out *out) {
    e->oom = 0;
    const resp_arg *sub = &argv[1];
    static const subcommand subs[] = {
        {"load", 3}, {"exists", -3}, {"flush", -2}, {"kill", 2}, {"debug", 3}, {"help", 2},
    };
    int rc, known = find_subcommand(subs, (int)(sizeof subs / sizeof subs[0]), argc, sub, "script", "SCRIPT", out, &rc);
    if (known < 0) return rc;

    if (known == 0) {   /* LOAD */
        char sha[41];
        script_entry *s = create_function(e, argv[2].ptr, argv[2].len, sha, out);
        if (!s) return e->oom ? -1 : 0;
        return resp_add_bulk(out, sha, 40);
    }
    if (known == 1) {   /* EXISTS */
        if (resp_add_array(out, argc - 2) < 0) return -1;
        for (int j = 2; j < argc; j++) {
            int found = 0;
            if (argv[j].len == 40) {
                char sha[41];
                for (int k = 0; k < 40; k++) sha[k] = (char)tolower((unsigned char)argv[j].ptr[k]);
                sha[40] = '\0';
                found = cache_find(e, sha) != NULL;
            }
            if (resp_add_int(out, found) < 0) return -1;
        }
        return 0;
    }
    if (known == 2) {   /* FLUSH */
        if (argc > 3 || (argc == 3 && !argis(&argv[2], "sync") && !argis(&argv[2], "async")))
            return resp_add_error(out, "ERR SCRIPT FLUSH only support SYNC|ASYNC option");
        if (e->running) return resp_add_error(out, FD_SCRIPT_BUSY_ERR);
        if (reset_state(e) < 0) return resp_add_error(out, "ERR frontdoor: could not restart the Lua interpreter");
        return resp_add_status(out, "OK");
    }
    if (known == 3) return fd_script_kill(e, out);
    if (known == 4) return fd_script_debug_cmd(argc, argv, out);
    return resp_add_error(out, "ERR SCRIPT HELP is answered by the caller");
}

/* ------------------------------------------------------ functions */

/* Library and function names: [A-Za-z0-9_]+ (7.0's functionsVerifyName). */
static int valid_name(const char *p, size_t n) {
    if (!n) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)p[i]) && p[i] != '_') return 0;
    return 1;
}

/* 7.0 says "Library names" for function names too */
#define ERR_BAD_NAME "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"

static const struct { unsigned flag; const char *name; } fn_flags[] = {
    {FD_SCRIPT_F_NO_WRITES, "no-writes"},     {FD_SCRIPT_F_ALLOW_OOM, "allow-oom"},
    {FD_SCRIPT_F_ALLOW_STALE, "allow-stale"}, {FD_SCRIPT_F_NO_CLUSTER, "no-cluster"},
    {FD_SCRIPT_F_CROSS_SLOT, "allow-cross-slot-keys"},
};

static void lib_free(lua_State *L, lib_entry *l) {
    if (!l) return;
    for (fn_entry *f = l->fns, *nf; f; f = nf) {
        nf = f->next;
        if (L) luaL_unref(L, LUA_REGISTRYINDEX, f->ref);
        free(f->name);
        free(f->desc);
        free(f);
    }
    free(l->name);
    free(l->code);
    free(l);
}

static void libs_free(lua_State *L, lib_entry *l) {
    for (lib_entry *nl; l; l = nl) { nl = l->next; lib_free(L, l); }
}

/* function names are case-insensitive (7.0's functions dict) */
static fn_entry *fn_in_lib(const lib_entry *l, const char *name, size_t n) {
    for (fn_entry *f = l->fns; f; f = f->next)
        if (strlen(f->name) == n && strncasecmp(f->name, name, n) == 0) return f;
    return NULL;
}

static fn_entry *fn_find_in(lib_entry *libs, const char *name, size_t n) {
    for (lib_entry *l = libs; l; l = l->next) {
        fn_entry *f = fn_in_lib(l, name, n);
        if (f) return f;
    }
    return NULL;
}

static lib_entry *lib_find(lib_entry *libs, const char *name, size_t n) {
    for (lib_entry *l = libs; l; l = l->next)
        if (strlen(l->name) == n && memcmp(l->name, name, n) == 0) return l;
    return NULL;
}

static void count_libs(fd_script_engine *e) {
    e->nlibs = e->nfns = 0;
    for (lib_entry *l = e->libs; l; l = l->next) { e->nlibs++; e->nfns += l->nfns; }
}

/* redis.register_function's error: an {err=...} table, no position (7.0's luaPushError at load) */
static int reg_error(lua_State *L, const char *msg) {
    push_error(L, msg, 0);
    return lua_error(L);
}

/* redis.register_function(name, callback) or ({function_name=, callback=, description=, flags={...}}) */
static int l_register_function(lua_State *L) {
    fd_script_engine *e = engine_of(L);
    lib_entry *lib = e->loading;
    if (!lib) return reg_error(L, "redis.register_function can only be called on FUNCTION LOAD command");
    int argc = lua_gettop(L);
    if (argc < 1 || argc > 2) return reg_error(L, "wrong number of arguments to redis.register_function");
    const char *name = NULL, *desc = NULL;
    size_t namelen = 0, desclen = 0;
    unsigned flags = 0;
    int cb = 0;                               /* stack index of the callback */
    if (argc == 2) {
        if (lua_type(L, 1) != LUA_TSTRING && lua_type(L, 1) != LUA_TNUMBER)
            return reg_error(L, "first argument to redis.register_function must be a string");
        name = lua_tolstring(L, 1, &namelen);
        if (!lua_isfunction(L, 2)) return reg_error(L, "second argument to redis.register_function must be a function");
        cb = 2;
    } else {
        if (!lua_istable(L, 1))
            return reg_error(L, "calling redis.register_function with a single argument is only applicable to Lua "
                                "table (representing named arguments).");
        lua_settop(L, 4);                     /* slots 2..4: name, description, callback */
        lua_pushnil(L);
        while (lua_next(L, 1)) {
            if (lua_type(L, -2) != LUA_TSTRING && lua_type(L, -2) != LUA_TNUMBER)
                return reg_error(L, "named argument key given to redis.register_function is not a string");
            lua_pushvalue(L, -2);
            const char *key = lua_tostring(L, -1);
            lua_pop(L, 1);
            int vt = lua_type(L, -1);
            if (!strcasecmp(key, "function_name")) {
                if (vt != LUA_TSTRING && vt != LUA_TNUMBER)
                    return reg_error(L, "function_name argument given to redis.register_function must be a string");
                lua_pushvalue(L, -1);
                lua_replace(L, 2);            /* keep it alive on the stack */
                name = lua_tolstring(L, 2, &namelen);
            } else if (!strcasecmp(key, "description")) {
                if (vt != LUA_TSTRING && vt != LUA_TNUMBER)
                    return reg_error(L, "description argument given to redis.register_function must be a string");
                lua_pushvalue(L, -1);
                lua_replace(L, 3);
                desc = lua_tolstring(L, 3, &desclen);
            } else if (!strcasecmp(key, "callback")) {
                if (vt != LUA_TFUNCTION)
                    return reg_error(L, "callback argument given to redis.register_function must be a function");
                lua_pushvalue(L, -1);
                lua_replace(L, 4);
                cb = 4;
            } else if (!strcasecmp(key, "flags")) {
                if (vt != LUA_TTABLE)
                    return reg_error(L, "flags argument to redis.register_function must be a table representing "
                                        "function flags");
                for (int j = 1;; j++) {
                    lua_rawgeti(L, -1, j);
                    if (lua_isnil(L, -1)) { lua_pop(L, 1); break; }
                    if (!lua_isstring(L, -1)) return reg_error(L, "unknown flag given");
                    const char *fs = lua_tostring(L, -1);
                    int found = 0;
                    for (size_t k = 0; k < sizeof fn_flags / sizeof fn_flags[0]; k++)
                        if (!strcasecmp(fs, fn_flags[k].name)) { flags |= fn_flags[k].flag; found = 1; }
                    lua_pop(L, 1);
                    if (!found) return reg_error(L, "unknown flag given");
                }
            } else {
                return reg_error(L, "unknown argument given to redis.register_function");
            }
            lua_pop(L, 1);
        }
        if (!name) return reg_error(L, "redis.register_function must get a function name argument");
        if (!cb) return reg_error(L, "redis.register_function must get a callback argument");
    }
    if (!valid_name(name, namelen)) return reg_error(L, ERR_BAD_NAME);
    fn_entry **tail = &lib->fns;
    for (fn_entry *f = lib->fns; f; f = f->next) {
        if (strlen(f->name) == namelen && memcmp(f->name, name, namelen) == 0)   /* case-sensitive here (7.0) */
            return reg_error(L, "Function already exists in the library");
        tail = &f->next;
    }
    fn_entry *f = calloc(1, sizeof *f);
    if (f) f->name = strndup(name, namelen);
    if (f && desc) {
        f->desc = malloc(desclen + 1);
        if (f->desc) { memcpy(f->desc, desc, desclen); f->desc[desclen] = '\0'; f->desclen = desclen; }
    }
    if (!f || !f->name || (desc && !f->desc)) {
        if (f) { free(f->name); free(f->desc); free(f); }
        return reg_error(L, "out of memory");
    }
    f->flags = flags;
    f->lib = lib;
    lua_pushvalue(L, cb);
    f->ref = luaL_ref(L, LUA_REGISTRYINDEX);
    *tail = f;
    lib->nfns++;
    return 0;
}

/* FUNCTION LOAD's time bound while the library's code runs (7.0: 500 ms) */
#define FD_SCRIPT_LOAD_TIMEOUT_US 500000u

static void load_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    fd_script_engine *e = hook_engine;
    if (!e || mono_us() - e->load_start_us <= FD_SCRIPT_LOAD_TIMEOUT_US) return;
    lua_sethook(L, load_hook, LUA_MASKLINE, 0);
    push_error(L, "FUNCTION LOAD timeout", 0);
    lua_error(L);
}

/* The globals' read-through target: the library API while a library loads,
 * the real globals otherwise (7.0 swaps its globals' __index the same way). */
static void globals_index(lua_State *L, int libapi) {
    if (!lua_getmetatable(L, LUA_GLOBALSINDEX)) return;
    lua_pushliteral(L, "__index");
    lua_pushlightuserdata(L, libapi ? (void *)&K_LIBAPI : (void *)&K_REAL_G);
    lua_rawget(L, LUA_REGISTRYINDEX);
    lua_rawset(L, -3);
    lua_pop(L, 1);
}

/* Parse the "#!<engine> name=<lib>" line, compile and run the code,
 * collecting its functions into a new library (not linked). NULL with the
 * error's text (without "ERR ") in err. */
static lib_entry *lib_create(fd_script_engine *e, const char *code, size_t len, int replace, char *err, size_t errsz) {
    lua_State *L = e->L;
    if (len < 2 || code[0] != '#' || code[1] != '!') { snprintf(err, errsz, "Missing library metadata"); return NULL; }
    const char *nl = memchr(code, '\n', len);
    if (!nl) { snprintf(err, errsz, "Invalid library metadata"); return NULL; }
    const char *p = code, *end = nl, *eng = NULL, *name = NULL;
    size_t englen = 0, namelen = 0;
    int part = 0;
    const char *w;
    size_t wl;
    while ((wl = next_word(&p, end, &w)) != 0) {
        if (part++ == 0) { eng = w + 2; englen = wl - 2; continue; }
        if (wl >= 5 && strncasecmp(w, "name=", 5) == 0) {
            if (name) { snprintf(err, errsz, "Invalid metadata value, name argument was given multiple times"); return NULL; }
            name = w + 5;
            namelen = wl - 5;
            continue;
        }
        snprintf(err, errsz, "Invalid metadata value given: %.*s", (int)(wl > 200 ? 200 : wl), w);
        return NULL;
    }
    if (!part) { snprintf(err, errsz, "Invalid library metadata"); return NULL; }
    if (!name) { snprintf(err, errsz, "Library name was not given"); return NULL; }
    if (englen != 3 || strncasecmp(eng, "lua", 3) != 0) {
        snprintf(err, errsz, "Engine '%.*s' not found", (int)(englen > 200 ? 200 : englen), eng);
        return NULL;
    }
    if (!valid_name(name, namelen)) { snprintf(err, errsz, ERR_BAD_NAME); return NULL; }
    if (!replace && lib_find(e->libs, name, namelen)) {   /* before the code runs, as 7.0 */
        snprintf(err, errsz, "Library '%.*s' already exists", (int)namelen, name);
        return NULL;
    }

    lib_entry *lib = calloc(1, sizeof *lib);
    if (lib) lib->name = strndup(name, namelen);
    if (lib) lib->code = malloc(len ? len : 1);
    if (!lib || !lib->name || !lib->code) {
        lib_free(L, lib);
        snprintf(err, errsz, "out of memory");
        return NULL;
    }
    memcpy(lib->code, code, len);
    lib->codelen = len;

    /* the code after the metadata line (its '\n' kept: line numbers stay) */
    globals_index(L, 1);
    int rc = luaL_loadbuffer(L, nl, len - (size_t)(nl - code), "@user_function");
    if (rc) {
        const char *m = lua_tostring(L, -1);
        snprintf(err, errsz, "Error compiling function: %s", m ? m : "");
        lua_settop(L, 0);
        globals_index(L, 0);
        lib_free(L, lib);
        return NULL;
    }
    e->loading = lib;
    e->load_start_us = mono_us();
    hook_engine = e;
    lua_sethook(L, load_hook, LUA_MASKCOUNT, FD_SCRIPT_HOOK_STEPS);
    rc = lua_pcall(L, 0, 0, 0);
    lua_sethook(L, NULL, 0, 0);
    hook_engine = NULL;
    e->loading = NULL;
    globals_index(L, 0);
    if (rc) {
        const char *m = "";
        int prefix = 1;
        if (lua_istable(L, -1)) {
            lua_getfield(L, -1, "err");
            if (lua_isstring(L, -1)) m = lua_tostring(L, -1);
            prefix = 0;
        } else if (lua_isstring(L, -1)) {
            m = lua_tostring(L, -1);
        }
        snprintf(err, errsz, "Error registering functions: %s%s", prefix ? "ERR " : "", m);
        lua_settop(L, 0);
        lib_free(L, lib);
        return NULL;
    }
    lua_settop(L, 0);
    if (!lib->fns) {
        snprintf(err, errsz, "No functions registered");
        lib_free(L, lib);
        return NULL;
    }
    return lib;
}

/* Add lib to libs (at the end): its functions must not exist in another
 * library (skip: a library about to be replaced). 0, or -1 with err. */
static int lib_link(lib_entry **libs, lib_entry *lib, const lib_entry *skip, char *err, size_t errsz) {
    for (lib_entry *l = *libs; l; l = l->next) {
        if (l == skip) continue;
        for (fn_entry *f = lib->fns; f; f = f->next)
            if (fn_in_lib(l, f->name, strlen(f->name))) {
                snprintf(err, errsz, "Function %s already exists", f->name);
                return -1;
            }
    }
    lib_entry **tail = libs;
    while (*tail) tail = &(*tail)->next;
    lib->next = NULL;
    *tail = lib;
    return 0;
}

static void lib_unlink(lib_entry **libs, lib_entry *lib) {
    for (lib_entry **pp = libs; *pp; pp = &(*pp)->next)
        if (*pp == lib) { *pp = lib->next; lib->next = NULL; return; }
}

/* FUNCTION LOAD's core: 0 with *name set to the library's (owned by the
 * engine), or -1 with err. */
static int function_load(fd_script_engine *e, const char *code, size_t len, int replace, const char **name, char *err,
                         size_t errsz) {
    lib_entry *lib = lib_create(e, code, len, replace, err, errsz);
    if (!lib) return -1;
    lib_entry *old = lib_find(e->libs, lib->name, strlen(lib->name));
    if (old && !replace) {
        snprintf(err, errsz, "Library '%s' already exists", lib->name);
        lib_free(e->L, lib);
        return -1;
    }
    if (lib_link(&e->libs, lib, old, err, errsz) < 0) { lib_free(e->L, lib); return -1; }
    if (old) { lib_unlink(&e->libs, old); lib_free(e->L, old); }
    count_libs(e);
    *name = lib->name;
    return 0;
}

int fd_script_functions_dump(const fd_script_engine *e, fd_rdb_buf *out) {
    for (const lib_entry *l = e->libs; l; l = l->next)
        if (fd_rdb_function_add(out, l->code, l->codelen) != FD_OK) return -1;
    return fd_rdb_footer(out) == FD_OK ? 0 : -1;
}

typedef struct restore_ctx { fd_script_engine *e; lib_entry *libs; char *err; size_t errsz; } restore_ctx;

static int restore_one(void *ud, const char *code, size_t len) {
    restore_ctx *r = ud;
    lib_entry *lib = lib_create(r->e, code, len, 1, r->err, r->errsz);
    if (!lib) return 2;
    if (lib_find(r->libs, lib->name, strlen(lib->name))) {
        snprintf(r->err, r->errsz, "Library '%s' already exists", lib->name);
        lib_free(r->e->L, lib);
        return 2;
    }
    if (lib_link(&r->libs, lib, NULL, r->err, r->errsz) < 0) { lib_free(r->e->L, lib); return 2; }
    return 0;
}

/* FUNCTION RESTORE's core; policy 0 APPEND, 1 REPLACE, 2 FLUSH. 0, or -1 with err. */
static int function_restore(fd_script_engine *e, const char *p, size_t len, int policy, char *err, size_t errsz) {
    if (fd_rdb_verify(p, len) < 0) { snprintf(err, errsz, "DUMP payload version or checksum are wrong"); return -1; }
    restore_ctx r = {e, NULL, err, errsz};
    int rc = fd_rdb_functions_load(p, len, restore_one, &r);
    if (rc) {
        if (rc == 1) snprintf(err, errsz, "given type is not a function");
        else if (rc != 2) snprintf(err, errsz, "failed loading the given functions payload");
        libs_free(e->L, r.libs);
        return -1;
    }
    if (policy == 2) {
        libs_free(e->L, e->libs);
        e->libs = r.libs;
        count_libs(e);
        return 0;
    }
    /* join: every restored library checked against the current ones first */
    for (lib_entry *n = r.libs; n; n = n->next) {
        lib_entry *old = lib_find(e->libs, n->name, strlen(n->name));
        if (old && policy == 0) {
            snprintf(err, errsz, "Library %s already exists", n->name);
            libs_free(e->L, r.libs);
            return -1;
        }
        for (lib_entry *l = e->libs; l; l = l->next) {
            if (lib_find(r.libs, l->name, strlen(l->name))) continue;   /* replaced */
            for (fn_entry *f = n->fns; f; f = f->next)
                if (fn_in_lib(l, f->name, strlen(f->name))) {
                    snprintf(err, errsz, "Function %s already exists", f->name);
                    libs_free(e->L, r.libs);
                    return -1;
                }
        }
    }
    for (lib_entry *n = r.libs, *nn; n; n = nn) {
        nn = n->next;
        lib_entry *old = lib_find(e->libs, n->name, strlen(n->name));
        if (old) { lib_unlink(&e->libs, old); lib_free(e->L, old); }
        lib_entry **tail = &e->libs;
        while (*tail) tail = &(*tail)->next;
        n->next = NULL;
        *tail = n;
    }
    count_libs(e);
    return 0;
}

int fd_script_functions_restore(fd_script_engine *e, const void *p, size_t len, char *err, size_t errsz) {
    if (e->running) { snprintf(err, errsz, "a script runs"); return -1; }
    return function_restore(e, p, len, 2, err, errsz);
}

size_t fd_script_function_count(const fd_script_engine *e, size_t *libraries) {
    if (libraries) *libraries = e->nlibs;
    return e->nfns;
}

int fd_script_fcall(fd_script_engine *e, int argc, const resp_arg *argv, resp_out *out) {
    e->oom = 0;
    if (e->running) return resp_add_error(out, FD_SCRIPT_BUSY_ERR);
    int ro = argis(&argv[0], "fcall_ro");
    fn_entry *fn = fn_find_in(e->libs, argv[1].ptr, argv[1].len);
    if (!fn) return resp_add_error(out, "ERR Function not found");
    long long numkeys;
    if (resp_str2ll(argv[2].ptr, argv[2].len, &numkeys) < 0) return resp_add_error(out, "ERR Bad number of keys provided");
    if (numkeys > argc - 3) return resp_add_error(out, "ERR Number of keys can't be greater than number of args");
    if (numkeys < 0) return resp_add_error(out, "ERR Number of keys can't be negative");
    e->fn_argc = argc;
    e->fn_argv = argv;
    run_script(e, NULL, fn, argv + 3, (int)numkeys, argv + 3 + numkeys, argc - 3 - (int)numkeys, ro, out);
    e->fn_argc = 0;
    e->fn_argv = NULL;
    return e->oom ? -1 : 0;
}

const char *const fd_script_function_help_lines[] = {
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of failure",
    "      in case of functions name collision with another library).",
    "HELP",
    "    Prints this help.",
    NULL,
};

static int list_libs(fd_script_engine *e, int argc, const resp_arg *argv, resp_out *out) {
    int withcode = 0;
    const resp_arg *pat = NULL;
    for (int i = 2; i < argc; i++) {
        if (!withcode && argis(&argv[i], "withcode")) { withcode = 1; continue; }
        if (!pat && argis(&argv[i], "libraryname")) {
            if (i >= argc - 1) return resp_add_error(out, "ERR library name argument was not given");
            pat = &argv[++i];
            continue;
        }
        return resp_add_errorf(out, "ERR Unknown argument %.*s", (int)(argv[i].len > 200 ? 200 : argv[i].len), argv[i].ptr);
    }
    size_t n = 0;
    for (lib_entry *l = e->libs; l; l = l->next)
        if (!pat || resp_glob_match(pat->ptr, pat->len, l->name, strlen(l->name), 1)) n++;
    int bad = resp_add_array(out, (long long)n) < 0;
    for (lib_entry *l = e->libs; l && !bad; l = l->next) {
        if (pat && !resp_glob_match(pat->ptr, pat->len, l->name, strlen(l->name), 1)) continue;
        bad |= resp_add_map(out, withcode ? 4 : 3) < 0;
        bad |= resp_add_bulk_cstr(out, "library_name") < 0 || resp_add_bulk_cstr(out, l->name) < 0;
        bad |= resp_add_bulk_cstr(out, "engine") < 0 || resp_add_bulk_cstr(out, "LUA") < 0;
        bad |= resp_add_bulk_cstr(out, "functions") < 0 || resp_add_array(out, (long long)l->nfns) < 0;
        for (fn_entry *f = l->fns; f && !bad; f = f->next) {
            bad |= resp_add_map(out, 3) < 0;
            bad |= resp_add_bulk_cstr(out, "name") < 0 || resp_add_bulk_cstr(out, f->name) < 0;
            bad |= resp_add_bulk_cstr(out, "description") < 0;
            bad |= (f->desc ? resp_add_bulk(out, f->desc, f->desclen) : resp_add_null(out)) < 0;
            bad |= resp_add_bulk_cstr(out, "flags") < 0;
            int nf = 0;
            for (size_t k = 0; k < sizeof fn_flags / sizeof fn_flags[0]; k++) nf += (f->flags & fn_flags[k].flag) != 0;
            bad |= resp_add_set(out, nf) < 0;
            for (size_t k = 0; k < sizeof fn_flags / sizeof fn_flags[0]; k++)
                if (f->flags & fn_flags[k].flag) bad |= resp_add_status(out, fn_flags[k].name) < 0;   /* 7.0: +flag */
        }
        if (withcode) bad |= resp_add_bulk_cstr(out, "library_code") < 0 || resp_add_bulk(out, l->code, l->codelen) < 0;
    }
    return bad ? -1 : 0;
}

static int function_stats(fd_script_engine *e, resp_out *out) {
    int bad = resp_add_map(out, 2) < 0 || resp_add_bulk_cstr(out, "running_script") < 0;
    if (!e->running) {
        bad |= resp_add_null(out) < 0;
    } else {
        bad |= resp_add_map(out, 3) < 0;
        bad |= resp_add_bulk_cstr(out, "name") < 0 || resp_add_bulk_cstr(out, e->fn ? e->fn->name : e->sha) < 0;
        int snap = e->fn && e->busy;   /* only asked while busy: from another client */
        bad |= resp_add_bulk_cstr(out, "command") < 0 || resp_add_array(out, snap ? e->fn_argc : 0) < 0;
        if (snap) bad |= resp_out_raw(out, e->fn_cmd.data, e->fn_cmd.len) < 0;
        bad |= resp_add_bulk_cstr(out, "duration_ms") < 0 ||
               resp_add_int(out, (long long)((mono_us() - e->start_us) / 1000u)) < 0;
    }
    bad |= resp_add_bulk_cstr(out, "engines") < 0 || resp_add_map(out, 1) < 0 || resp_add_bulk_cstr(out, "LUA") < 0;
    bad |= resp_add_map(out, 2) < 0 || resp_add_bulk_cstr(out, "libraries_count") < 0 ||
           resp_add_int(out, (long long)e->nlibs) < 0 || resp_add_bulk_cstr(out, "functions_count") < 0 ||
           resp_add_int(out, (long long)e->nfns) < 0;
    return bad ? -1 : 0;
}

int fd_script_function_cmd(fd_script_engine *e, int argc, const resp_arg *argv, resp_out *out, int *changed) {
    char err[512];
    *changed = 0;
    e->oom = 0;
    const resp_arg *sub = &argv[1];
    static const subcommand subs[] = {
        {"load", -3}, {"list", -2}, {"dump", 2}, {"restore", -3}, {"delete", 3},
        {"flush", -2}, {"kill", 2}, {"stats", 2}, {"help", 2},
    };
    int rc, known = find_subcommand(subs, (int)(sizeof subs / sizeof subs[0]), argc, sub, "function", "FUNCTION", out, &rc);
    if (known < 0) return rc;
    if (e->running && known != 6 && known != 7) return resp_add_error(out, FD_SCRIPT_BUSY_ERR);
    switch (known) {
    case 0: {   /* LOAD [REPLACE] code */
        int replace = 0, pos = 2;
        while (pos < argc - 1) {
            const resp_arg *a = &argv[pos++];
            if (argis(a, "replace")) { replace = 1; continue; }
            return resp_add_errorf(out, "ERR Unknown option given: %.*s", (int)(a->len > 200 ? 200 : a->len), a->ptr);
        }
        if (pos >= argc) return resp_add_error(out, "ERR Function code is missing");
        const char *name;
        if (function_load(e, argv[pos].ptr, argv[pos].len, replace, &name, err, sizeof err) < 0)
            return resp_add_errorf(out, "ERR %s", err);
        *changed = 1;
        return resp_add_bulk_cstr(out, name);
    }
    case 1: return list_libs(e, argc, argv, out);
    case 2: {   /* DUMP */
        fd_rdb_buf b = {0};
        int rc = fd_script_functions_dump(e, &b) < 0 ? -1 : resp_add_bulk(out, b.p, b.len);
        fd_rdb_buf_free(&b);
        return rc < 0 ? -1 : 0;
    }
    case 3: {   /* RESTORE payload [FLUSH|APPEND|REPLACE] */
        if (argc > 4)
            return resp_add_errorf(out, "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try FUNCTION HELP.",
                                   (int)sub->len, sub->ptr);
        int policy = 0;
        if (argc == 4) {
            if (argis(&argv[3], "flush")) policy = 2;
            else if (argis(&argv[3], "append")) policy = 0;
            else if (argis(&argv[3], "replace")) policy = 1;
            else return resp_add_error(out, "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.");
        }
        if (function_restore(e, argv[2].ptr, argv[2].len, policy, err, sizeof err) < 0)
            return resp_add_errorf(out, "ERR %s", err);
        *changed = 1;
        return resp_add_status(out, "OK");
    }
    case 4: {   /* DELETE */
        lib_entry *l = lib_find(e->libs, argv[2].ptr, argv[2].len);
        if (!l) return resp_add_error(out, "ERR Library not found");
        lib_unlink(&e->libs, l);
        lib_free(e->L, l);
        count_libs(e);
        *changed = 1;
        return resp_add_status(out, "OK");
    }
    case 5:     /* FLUSH [ASYNC|SYNC] */
        if (argc > 3)
            return resp_add_errorf(out, "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try FUNCTION HELP.",
                                   (int)sub->len, sub->ptr);
        if (argc == 3 && !argis(&argv[2], "sync") && !argis(&argv[2], "async"))
            return resp_add_error(out, "ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
        libs_free(e->L, e->libs);
        e->libs = NULL;
        count_libs(e);
        *changed = 1;
        return resp_add_status(out, "OK");
    case 6: return fd_script_kill_from(e, 0, out);
    case 7: return function_stats(e, out);
    default: return resp_add_error(out, "ERR FUNCTION HELP is answered by the caller");
    }
}

/* ------------------------------------------------------ lifecycle */

fd_script_engine *fd_script_new(const fd_script_host *host) {
    fd_script_engine *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    if (host) e->host = *host;
    e->threshold_ms = 5000;
    e->rand48 = 0x1234ABCD330EULL;
    resp_out_init(&e->callbuf, 2);
    resp_out_init(&e->fn_cmd, 2);
    if (setup_state(e) < 0) { fd_script_free(e); return NULL; }
    return e;
}

void fd_script_free(fd_script_engine *e) {
    if (!e) return;
    libs_free(NULL, e->libs);
    if (e->L) lua_close(e->L);
    cache_clear(e);
    resp_out_free(&e->callbuf);
    resp_out_free(&e->fn_cmd);
    free(e->argv);
    free(e);
}

void fd_script_set_busy_threshold(fd_script_engine *e, long long ms) { e->threshold_ms = ms < 0 ? 0 : ms; }
int fd_script_running(const fd_script_engine *e) { return e->running; }
int fd_script_busy(const fd_script_engine *e) { return e->running && e->busy; }
unsigned fd_script_flags(const fd_script_engine *e) { return e->running ? e->flags : 0; }
const char *fd_script_current_sha(const fd_script_engine *e) { return e->running ? e->sha : ""; }
size_t fd_script_count(const fd_script_engine *e) { return e->count; }
size_t fd_script_lua_memory(const fd_script_engine *e) {
    return e->L ? (size_t)lua_gc(e->L, LUA_GCCOUNT, 0) * 1024u : 0;
}
