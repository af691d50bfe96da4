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
 *
 * Files: this one (utilities, the script cache, running, lifecycle),
 * script_conv.c, script_env.c, script_fn.c; what they share is
 * script_int.h.
 */
#include "script_int.h"



#define ERR_NOSCRIPT "NOSCRIPT No matching script. Please use EVAL."

/* registry keys (their addresses are unique light userdata: one
 * definition, here; script_int.h declares them) */
char K_REAL_OF;     /* proxy -> real table */
char K_PROXY_OF;    /* real table -> proxy */
char K_REAL_G;      /* the real globals table */
char K_ERRH;        /* the error handler */
char K_TOSTRING;    /* the original tostring */
char K_STRMT_PROXY; /* proxy of the string metatable */
char K_LIBAPI;      /* the globals seen while a library loads (redis.register_function, log) */






/* ------------------------------------------------------------ utilities */

uint64_t sc_mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void sc_host_log(fd_script_engine *e, int level, const char *fmt, ...) {
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

fd_script_engine *sc_engine_of(lua_State *L) {
    return lua_touserdata(L, lua_upvalueindex(1));
}

/* Redis's lrand48 (rand.c): the 48-bit LCG of POSIX lrand48, fixed start. */
int32_t sc_rand48_next(fd_script_engine *e) {
    e->rand48 = (0x5DEECE66DULL * e->rand48 + 0xB) & 0xFFFFFFFFFFFFULL;
    return (int32_t)(e->rand48 >> 17);
}

/* Push an error table as Redis's luaPushErrorBuff: "-CODE msg" keeps CODE,
 * "-msg" (no space) and "msg" get "ERR"; CR/LF trimmed from the message's
 * ends. C-string semantics (stops at NUL) as Redis's sds calls. */
void sc_push_error(lua_State *L, const char *s, int stats_flag) {
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
size_t sc_next_word(const char **p, const char *end, const char **w) {
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
    while ((wl = sc_next_word(&p, end, &w)) != 0) {
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
fd_script_engine *sc_hook_engine;   /* the engine whose script runs (Lua hooks have no user data); script_int.h */

void sc_count_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    fd_script_engine *e = sc_hook_engine;
    if (!e || !e->running) return;
    if (!e->killed) {
        long long elapsed = (long long)((sc_mono_us() - e->start_us) / 1000u);
        if (!e->busy && elapsed < e->threshold_ms) return;
        int first = !e->busy;
        if (first) {
            e->busy = 1;
            /* the loop runs from now on: the FCALL's argv may be overwritten */
            e->fn_cmd.len = 0;
            for (int i = 0; e->fn && i < e->fn_argc; i++) resp_add_bulk(&e->fn_cmd, e->fn_argv[i].ptr, e->fn_argv[i].len);
            sc_host_log(e, FD_SCRIPT_LOG_WARNING,
                     "Slow script detected: still in execution after %lld milliseconds. "
                     "You can try killing the script using the SCRIPT KILL command.", elapsed);
        }
        if (e->host.busy) e->host.busy(e->host.ud, elapsed, first);
    }
    if (e->killed) {
        sc_host_log(e, FD_SCRIPT_LOG_WARNING, "Lua script killed by user with SCRIPT KILL.");
        /* every line from now on fails again, so pcall cannot keep it alive */
        lua_sethook(L, sc_count_hook, LUA_MASKLINE, 0);
        sc_push_error(L, "Script killed by user with SCRIPT KILL...", 0);
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
int sc_run_script(fd_script_engine *e, script_entry *s, const fn_entry *fn, const resp_arg *keys, int nkeys,
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
    e->start_us = sc_mono_us();
    sc_hook_engine = e;
    if (e->threshold_ms > 0) lua_sethook(L, sc_count_hook, LUA_MASKCOUNT, FD_SCRIPT_HOOK_STEPS);

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
        sc_lua_to_reply(e, L, out);
    }
    if (out->over) e->oom = 0;   /* past max-reply-bytes: the caller refuses it (resp.h) */

    lua_sethook(L, NULL, 0, 0);
    lua_settop(L, 0);
    sc_after_script(e);
    e->running = e->busy = e->killed = 0;
    e->flags = 0;
    e->sha[0] = '\0';
    e->fn = NULL;
    sc_hook_engine = NULL;
    return 0;
}

int sc_argis(const resp_arg *a, const char *lit) {
    size_t n = strlen(lit);
    return a->len == n && strncasecmp(a->ptr, lit, n) == 0;
}

int fd_script_eval(fd_script_engine *e, int argc, const resp_arg *argv, resp_out *out) {
    e->oom = 0;
    if (e->running) return resp_add_error(out, FD_SCRIPT_BUSY_ERR);
    int evalsha = sc_argis(&argv[0], "evalsha") || sc_argis(&argv[0], "evalsha_ro");
    int ro = sc_argis(&argv[0], "eval_ro") || sc_argis(&argv[0], "evalsha_ro");
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
    sc_run_script(e, s, NULL, argv + 3, (int)numkeys, argv + 3 + numkeys, argc - 3 - (int)numkeys, ro, out);
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
    int rc = sc_setup_state(e);
    for (lib_entry *l = libs, *nl; l; l = nl) {
        nl = l->next;
        char err[256];
        const char *name;
        if (rc == 0 && sc_function_load(e, l->code, l->codelen, 0, &name, err, sizeof err) < 0)
            sc_host_log(e, FD_SCRIPT_LOG_WARNING, "library %s could not be loaded again after SCRIPT FLUSH: %s", l->name, err);
        sc_lib_free(NULL, l);
    }
    sc_count_libs(e);
    return rc;
}


/* The index of argv[1] (sub) in subs[0..n), or -1 after Redis's unknown
 * subcommand or arity error (*rc: the reply writer's status). */
int sc_find_subcommand(const subcommand *subs, int n, int argc, const resp_arg *sub, const char *parent,
                           const char *help, resp_out *out, int *rc) {
    int known = -1;
    for (int i = 0; i < n; i++)
        if (sc_argis(sub, subs[i].name)) known = i;
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
    if (sc_find_subcommand(subs, 1, argc, &argv[1], "script", "SCRIPT", out, &rc) < 0) return rc;
    if (sc_argis(&argv[2], "no")) return resp_add_status(out, "OK");
    if (sc_argis(&argv[2], "yes") || sc_argis(&argv[2], "sync"))
        return resp_add_error(out, "ERR frontdoor does not support the Lua debugger (SCRIPT DEBUG)");
    return resp_add_error(out, "ERR Use SCRIPT DEBUG YES/SYNC/NO");
}

int fd_script_script_cmd(fd_script_engine *e, int argc, const resp_arg *argv, resp_out *out) {
    e->oom = 0;
    const resp_arg *sub = &argv[1];
    static const subcommand subs[] = {
        {"load", 3}, {"exists", -3}, {"flush", -2}, {"kill", 2}, {"debug", 3}, {"help", 2},
    };
    int rc, known = sc_find_subcommand(subs, (int)(sizeof subs / sizeof subs[0]), argc, sub, "script", "SCRIPT", out, &rc);
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
        if (argc > 3 || (argc == 3 && !sc_argis(&argv[2], "sync") && !sc_argis(&argv[2], "async")))
            return resp_add_error(out, "ERR SCRIPT FLUSH only support SYNC|ASYNC option");
        if (e->running) return resp_add_error(out, FD_SCRIPT_BUSY_ERR);
        if (reset_state(e) < 0) return resp_add_error(out, "ERR frontdoor: could not restart the Lua interpreter");
        return resp_add_status(out, "OK");
    }
    if (known == 3) return fd_script_kill(e, out);
    if (known == 4) return fd_script_debug_cmd(argc, argv, out);
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
    resp_out_init(&e->fn_cmd, 2);
    if (sc_setup_state(e) < 0) { fd_script_free(e); return NULL; }
    return e;
}

void fd_script_free(fd_script_engine *e) {
    if (!e) return;
    sc_libs_free(NULL, e->libs);
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
