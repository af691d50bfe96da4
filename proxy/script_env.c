/* script_env.c — a script's environment: the redis.* API (call, pcall,
 * sha1hex, error_reply, status_reply, log, setresp, set_repl...), the
 * read-only protection of globals and library tables (proxies: see
 * script.c's head), the error handler, and the Lua state's setup.
 * Private: script_int.h. */
#include "script_int.h"

/* Libraries: Debian's (lua-cjson-dev, lua-bitop-dev) and ours (script_libs.c). */
int luaopen_cjson(lua_State *L);
int luaopen_bit(lua_State *L);
int fd_luaopen_struct(lua_State *L);
int fd_luaopen_cmsgpack(lua_State *L);

/* ------------------------------------------------------ redis.* */

/* The arguments of redis.call/pcall/acl_check_cmd (stack 1..argc) into
 * e->argv; numbers formatted "%.17g" in place on the stack. Returns argc,
 * or -1 with an error table pushed. */
static int collect_args(fd_script_engine *e, lua_State *L) {
    int argc = lua_gettop(L);
    if (argc == 0) {
        sc_push_error(L, "Please specify at least one argument for this redis lib call", 0);
        return -1;
    }
    if (argc > e->argv_cap) {
        int cap = argc < 16 ? 16 : argc;
        resp_arg *nv = realloc(e->argv, sizeof *nv * (size_t)cap);
        if (!nv) { sc_push_error(L, "-OOM frontdoor: out of memory for script arguments", 0); return -1; }
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
            sc_push_error(L, "Lua redis lib command arguments must be strings or integers", 0);
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
        sc_push_error(L, "-OOM frontdoor: the command could not run from the script (out of memory)", 1);
        return 1;
    }
    if (rc & FD_SCRIPT_CALL_WRITE) e->flags |= FD_SCRIPT_F_WROTE;
    const char *p = e->callbuf.data, *end = p + e->callbuf.len;
    if (sc_reply_to_lua(L, &p, end, 1, 0) < 0) {
        lua_settop(L, 0);
        sc_push_error(L, "frontdoor: malformed reply to a command called from a script", 1);
        return 1;
    }
    return e->callbuf.data[0] == '-';
}


static int redis_generic_call(lua_State *L, int raise) {
    fd_script_engine *e = sc_engine_of(L);
    if (!e->running) {
        sc_push_error(L, "redis.call/pcall can only be called inside a script invocation", 0);
        return lua_error(L);
    }
    int argc = collect_args(e, L);
    if (argc < 0) return raise ? lua_error(L) : 1;
    if (e->inuse) {
        const char *w = "luaRedisGenericCommand() recursive call detected. "
                        "Are you doing funny stuff with Lua debug hooks?";
        sc_host_log(e, FD_SCRIPT_LOG_WARNING, "%s", w);
        lua_settop(L, 0);
        sc_push_error(L, w, 0);
        return 1;
    }
    e->inuse = 1;
    int is_err = host_call(e, L, argc, 0);
    e->inuse = 0;
    /* a command may take long (an asynchronous backend): the busy check
     * after each one too, not only every FD_SCRIPT_HOOK_STEPS instructions */
    if (e->threshold_ms > 0) sc_count_hook(L, NULL);
    if (raise && is_err) return lua_error(L);
    return 1;
}

static int l_redis_call(lua_State *L)  { return redis_generic_call(L, 1); }
static int l_redis_pcall(lua_State *L) { return redis_generic_call(L, 0); }

static int l_acl_check_cmd(lua_State *L) {
    fd_script_engine *e = sc_engine_of(L);
    if (!e->running) {
        sc_push_error(L, "redis.acl_check_cmd can only be called inside a script invocation", 0);
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
    sc_push_error(L, msg, 0);
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
        sc_push_error(L, "wrong number or type of arguments", 0);
        return 1;
    }
    const char *s = lua_tostring(L, -1);
    if (s[0] != '-') {
        lua_pushliteral(L, "-");
        lua_pushvalue(L, 1);
        lua_concat(L, 2);
        s = lua_tostring(L, -1);
    }
    sc_push_error(L, s, 0);
    return 1;
}

static int l_status_reply(lua_State *L) {
    if (lua_gettop(L) != 1 || lua_type(L, -1) != LUA_TSTRING) {
        sc_push_error(L, "wrong number or type of arguments", 0);
        return 1;
    }
    lua_newtable(L);
    lua_pushliteral(L, "ok");
    lua_pushvalue(L, -3);
    lua_settable(L, -3);
    return 1;
}

static int l_set_repl(lua_State *L) {
    fd_script_engine *e = sc_engine_of(L);
    if (!e->running) return raise_err(L, "redis.set_repl can only be called inside a script invocation");
    if (lua_gettop(L) != 1) return raise_err(L, "redis.set_repl() requires two arguments.");
    int flags = (int)lua_tonumber(L, -1);
    if (flags & ~3)
        return raise_err(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.");
    return 0;   /* frontdoor does not replicate: accepted and ignored */
}

static int l_log(lua_State *L) {
    fd_script_engine *e = sc_engine_of(L);
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
    fd_script_engine *e = sc_engine_of(L);
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
    fd_script_engine *e = sc_engine_of(L);
    lua_Number r = (lua_Number)(sc_rand48_next(e) % INT32_MAX) / (lua_Number)INT32_MAX;
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
    fd_script_engine *e = sc_engine_of(L);
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
void sc_after_script(fd_script_engine *e) {
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

int sc_setup_state(fd_script_engine *e) {
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
    set_cfunc(L, "register_function", sc_l_register_function, e);
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
