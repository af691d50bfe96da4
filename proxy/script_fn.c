/* script_fn.c — Redis 7.0 Functions: FUNCTION LOAD / DELETE / FLUSH /
 * LIST / DUMP / RESTORE / STATS, libraries and their registered functions
 * (redis.register_function, flags), FCALL's lookup. Private:
 * script_int.h. */
#include "script_int.h"

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

void sc_lib_free(lua_State *L, lib_entry *l) {
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

void sc_libs_free(lua_State *L, lib_entry *l) {
    for (lib_entry *nl; l; l = nl) { nl = l->next; sc_lib_free(L, l); }
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

void sc_count_libs(fd_script_engine *e) {
    e->nlibs = e->nfns = 0;
    for (lib_entry *l = e->libs; l; l = l->next) { e->nlibs++; e->nfns += l->nfns; }
}

/* redis.register_function's error: an {err=...} table, no position (7.0's luaPushError at load) */
static int reg_error(lua_State *L, const char *msg) {
    sc_push_error(L, msg, 0);
    return lua_error(L);
}

/* redis.register_function(name, callback) or ({function_name=, callback=, description=, flags={...}}) */
int sc_l_register_function(lua_State *L) {
    fd_script_engine *e = sc_engine_of(L);
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
    fd_script_engine *e = sc_hook_engine;
    if (!e || sc_mono_us() - e->load_start_us <= FD_SCRIPT_LOAD_TIMEOUT_US) return;
    lua_sethook(L, load_hook, LUA_MASKLINE, 0);
    sc_push_error(L, "FUNCTION LOAD timeout", 0);
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
    while ((wl = sc_next_word(&p, end, &w)) != 0) {
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
        sc_lib_free(L, lib);
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
        sc_lib_free(L, lib);
        return NULL;
    }
    e->loading = lib;
    e->load_start_us = sc_mono_us();
    sc_hook_engine = e;
    lua_sethook(L, load_hook, LUA_MASKCOUNT, FD_SCRIPT_HOOK_STEPS);
    rc = lua_pcall(L, 0, 0, 0);
    lua_sethook(L, NULL, 0, 0);
    sc_hook_engine = NULL;
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
        sc_lib_free(L, lib);
        return NULL;
    }
    lua_settop(L, 0);
    if (!lib->fns) {
        snprintf(err, errsz, "No functions registered");
        sc_lib_free(L, lib);
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
int sc_function_load(fd_script_engine *e, const char *code, size_t len, int replace, const char **name, char *err,
                         size_t errsz) {
    lib_entry *lib = lib_create(e, code, len, replace, err, errsz);
    if (!lib) return -1;
    lib_entry *old = lib_find(e->libs, lib->name, strlen(lib->name));
    if (old && !replace) {
        snprintf(err, errsz, "Library '%s' already exists", lib->name);
        sc_lib_free(e->L, lib);
        return -1;
    }
    if (lib_link(&e->libs, lib, old, err, errsz) < 0) { sc_lib_free(e->L, lib); return -1; }
    if (old) { lib_unlink(&e->libs, old); sc_lib_free(e->L, old); }
    sc_count_libs(e);
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
        sc_lib_free(r->e->L, lib);
        return 2;
    }
    if (lib_link(&r->libs, lib, NULL, r->err, r->errsz) < 0) { sc_lib_free(r->e->L, lib); return 2; }
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
        sc_libs_free(e->L, r.libs);
        return -1;
    }
    if (policy == 2) {
        sc_libs_free(e->L, e->libs);
        e->libs = r.libs;
        sc_count_libs(e);
        return 0;
    }
    /* join: every restored library checked against the current ones first */
    for (lib_entry *n = r.libs; n; n = n->next) {
        lib_entry *old = lib_find(e->libs, n->name, strlen(n->name));
        if (old && policy == 0) {
            snprintf(err, errsz, "Library %s already exists", n->name);
            sc_libs_free(e->L, r.libs);
            return -1;
        }
        for (lib_entry *l = e->libs; l; l = l->next) {
            if (lib_find(r.libs, l->name, strlen(l->name))) continue;   /* replaced */
            for (fn_entry *f = n->fns; f; f = f->next)
                if (fn_in_lib(l, f->name, strlen(f->name))) {
                    snprintf(err, errsz, "Function %s already exists", f->name);
                    sc_libs_free(e->L, r.libs);
                    return -1;
                }
        }
    }
    for (lib_entry *n = r.libs, *nn; n; n = nn) {
        nn = n->next;
        lib_entry *old = lib_find(e->libs, n->name, strlen(n->name));
        if (old) { lib_unlink(&e->libs, old); sc_lib_free(e->L, old); }
        lib_entry **tail = &e->libs;
        while (*tail) tail = &(*tail)->next;
        n->next = NULL;
        *tail = n;
    }
    sc_count_libs(e);
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
    int ro = sc_argis(&argv[0], "fcall_ro");
    fn_entry *fn = fn_find_in(e->libs, argv[1].ptr, argv[1].len);
    if (!fn) return resp_add_error(out, "ERR Function not found");
    long long numkeys;
    if (resp_str2ll(argv[2].ptr, argv[2].len, &numkeys) < 0) return resp_add_error(out, "ERR Bad number of keys provided");
    if (numkeys > argc - 3) return resp_add_error(out, "ERR Number of keys can't be greater than number of args");
    if (numkeys < 0) return resp_add_error(out, "ERR Number of keys can't be negative");
    e->fn_argc = argc;
    e->fn_argv = argv;
    sc_run_script(e, NULL, fn, argv + 3, (int)numkeys, argv + 3 + numkeys, argc - 3 - (int)numkeys, ro, out);
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
        if (!withcode && sc_argis(&argv[i], "withcode")) { withcode = 1; continue; }
        if (!pat && sc_argis(&argv[i], "libraryname")) {
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
               resp_add_int(out, (long long)((sc_mono_us() - e->start_us) / 1000u)) < 0;
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
    int rc, known = sc_find_subcommand(subs, (int)(sizeof subs / sizeof subs[0]), argc, sub, "function", "FUNCTION", out, &rc);
    if (known < 0) return rc;
    if (e->running && known != 6 && known != 7) return resp_add_error(out, FD_SCRIPT_BUSY_ERR);
    switch (known) {
    case 0: {   /* LOAD [REPLACE] code */
        int replace = 0, pos = 2;
        while (pos < argc - 1) {
            const resp_arg *a = &argv[pos++];
            if (sc_argis(a, "replace")) { replace = 1; continue; }
            return resp_add_errorf(out, "ERR Unknown option given: %.*s", (int)(a->len > 200 ? 200 : a->len), a->ptr);
        }
        if (pos >= argc) return resp_add_error(out, "ERR Function code is missing");
        const char *name;
        if (sc_function_load(e, argv[pos].ptr, argv[pos].len, replace, &name, err, sizeof err) < 0)
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
            if (sc_argis(&argv[3], "flush")) policy = 2;
            else if (sc_argis(&argv[3], "append")) policy = 0;
            else if (sc_argis(&argv[3], "replace")) policy = 1;
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
        sc_lib_free(e->L, l);
        sc_count_libs(e);
        *changed = 1;
        return resp_add_status(out, "OK");
    }
    case 5:     /* FLUSH [ASYNC|SYNC] */
        if (argc > 3)
            return resp_add_errorf(out, "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try FUNCTION HELP.",
                                   (int)sub->len, sub->ptr);
        if (argc == 3 && !sc_argis(&argv[2], "sync") && !sc_argis(&argv[2], "async"))
            return resp_add_error(out, "ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
        sc_libs_free(e->L, e->libs);
        e->libs = NULL;
        sc_count_libs(e);
        *changed = 1;
        return resp_add_status(out, "OK");
    case 6: return fd_script_kill_from(e, 0, out);
    case 7: return function_stats(e, out);
    default: return resp_add_error(out, "ERR FUNCTION HELP is answered by the caller");
    }
}
