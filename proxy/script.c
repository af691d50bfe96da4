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

    resp_out  callbuf;     /* a redis.call reply, reused */
    resp_arg *argv;        /* redis.call arguments, reused */
    int       argv_cap;
};

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
    if (trim) malloc_trim(0);
}

/* As luaL_newstate's: an error outside any pcall (a bug) is reported. */
static int lua_panic(lua_State *L) {
    fprintf(stderr, "PANIC: unprotected error in call to Lua API (%s)\n", lua_tostring(L, -1));
    return 0;
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
    set_cfunc(L, "log", l_log, e);
    set_num(L, "LOG_DEBUG", FD_SCRIPT_LOG_DEBUG);
    set_num(L, "LOG_VERBOSE", FD_SCRIPT_LOG_VERBOSE);
    set_num(L, "LOG_NOTICE", FD_SCRIPT_LOG_NOTICE);
    set_num(L, "LOG_WARNING", FD_SCRIPT_LOG_WARNING);
    set_num(L, "REDIS_VERSION_NUM", COMPAT_VERSION_NUM);
    lua_pushliteral(L, "REDIS_VERSION");
    lua_pushliteral(L, COMPAT_VERSION);
    lua_rawset(L, -3);
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
    while (p < end) {
        while (p < end && isspace((unsigned char)*p)) p++;
        if (p >= end) break;
        const char *w = p;
        while (p < end && !isspace((unsigned char)*p)) p++;
        size_t wl = (size_t)(p - w);
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

static int run_script(fd_script_engine *e, script_entry *s, const resp_arg *keys, int nkeys,
                      const resp_arg *args, int nargs, int ro, resp_out *out) {
    lua_State *L = e->L;
    if ((s->flags & FD_SCRIPT_F_SHEBANG) && !(s->flags & FD_SCRIPT_F_NO_WRITES) && ro)
        return resp_add_error(out, "ERR Can not execute a script with write flag using *_ro command.");
    unsigned flags = s->flags;
    if (ro) flags |= FD_SCRIPT_F_NO_WRITES;
    if (!(flags & FD_SCRIPT_F_SHEBANG)) flags &= FD_SCRIPT_F_NO_WRITES | FD_SCRIPT_F_SHEBANG; /* compat mode */
    if (e->host.prepare && e->host.prepare(e->host.ud, flags, out) != 0) return 0;

    lua_settop(L, 0);
    lua_pushlightuserdata(L, &K_ERRH);
    lua_rawget(L, LUA_REGISTRYINDEX);
    char name[43] = "f_";
    memcpy(name + 2, s->sha, 41);
    lua_getfield(L, LUA_REGISTRYINDEX, name);

    e->running = 1;
    e->busy = e->killed = e->inuse = 0;
    e->flags = flags;
    e->resp = 2;
    memcpy(e->sha, s->sha, 41);
    e->start_us = mono_us();
    hook_engine = e;
    if (e->threshold_ms > 0) lua_sethook(L, count_hook, LUA_MASKCOUNT, FD_SCRIPT_HOOK_STEPS);

    set_array_global(L, "KEYS", keys, nkeys);
    set_array_global(L, "ARGV", args, nargs);

    int err = lua_pcall(L, 0, 1, 1);

    if (++e->gc_count == 50) {
        lua_gc(L, LUA_GCSTEP, 50);
        e->gc_count = 0;
    }

    if (err) {
        if (!lua_istable(L, -1)) {
            const char *msg = lua_isstring(L, -1) ? lua_tostring(L, -1) : "execution failure";
            e->oom |= resp_add_errorf(out, "ERR Error running script %s, %.100s", e->sha, msg) < 0;
        } else {
            const char *msg = "", *src = NULL, *line = NULL;
            lua_getfield(L, -1, "err");
            if (lua_isstring(L, -1)) msg = lua_tostring(L, -1);
            lua_getfield(L, -2, "source");
            if (lua_isstring(L, -1)) src = lua_tostring(L, -1);
            lua_getfield(L, -3, "line");
            if (lua_isstring(L, -1)) line = lua_tostring(L, -1);
            if (line && src)
                e->oom |= resp_add_errorf(out, "-%s script: %s, on %s:%s.", msg, e->sha, src, line) < 0;
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
    run_script(e, s, argv + 3, (int)numkeys, argv + 3 + numkeys, argc - 3 - (int)numkeys, ro, out);
    return e->oom ? -1 : 0;
}

int fd_script_kill(fd_script_engine *e, resp_out *out) {
    if (!e->running) return resp_add_error(out, "NOTBUSY No scripts in execution right now.");
    if (e->flags & FD_SCRIPT_F_WROTE)
        return resp_add_error(out, "UNKILLABLE Sorry the script already executed write commands against the "
                                   "dataset. You can either wait the script termination or kill the server in "
                                   "a hard way using the SHUTDOWN NOSAVE command.");
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

static int reset_state(fd_script_engine *e) {
    lua_close(e->L);
    e->L = NULL;
    cache_clear(e);
    return setup_state(e);
}

int fd_script_script_cmd(fd_script_engine *e, int argc, const resp_arg *argv, resp_out *out) {
    e->oom = 0;
    const resp_arg *sub = &argv[1];
    static const struct { const char *name; int arity; } subs[] = {
        {"load", 3}, {"exists", -3}, {"flush", -2}, {"kill", 2}, {"debug", 3}, {"help", 2},
    };
    int known = -1;
    for (int i = 0; i < (int)(sizeof subs / sizeof subs[0]); i++)
        if (argis(sub, subs[i].name)) known = i;
    if (known < 0)
        return resp_add_errorf(out, "ERR unknown subcommand '%.*s'. Try SCRIPT HELP.",
                               (int)(sub->len > 128 ? 128 : sub->len), sub->ptr);
    int ar = subs[known].arity;
    if ((ar > 0 && argc != ar) || (ar < 0 && argc < -ar))
        return resp_add_errorf(out, "ERR wrong number of arguments for 'script|%s' command", subs[known].name);

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
    if (known == 4) {   /* DEBUG */
        if (argis(&argv[2], "no")) return resp_add_status(out, "OK");
        if (argis(&argv[2], "yes") || argis(&argv[2], "sync"))
            return resp_add_error(out, "ERR frontdoor does not support the Lua debugger (SCRIPT DEBUG)");
        return resp_add_error(out, "ERR Use SCRIPT DEBUG YES/SYNC/NO");
    }
    return resp_add_error(out, "ERR SCRIPT HELP is answered by the caller");
}

/* ------------------------------------------------------ lifecycle */

fd_script_engine *fd_script_new(const fd_script_host *host) {
    fd_script_engine *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    if (host) e->host = *host;
    e->threshold_ms = 5000;
    e->rand48 = 0x1234ABCD330EULL;
    resp_out_init(&e->callbuf, 2);
    if (setup_state(e) < 0) { fd_script_free(e); return NULL; }
    return e;
}

void fd_script_free(fd_script_engine *e) {
    if (!e) return;
    if (e->L) lua_close(e->L);
    cache_clear(e);
    resp_out_free(&e->callbuf);
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
