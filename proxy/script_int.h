/* script_int.h — what the Lua engine's files share (private to
 * proxy/script*.c; script.h is the contract): the engine's state, the
 * script cache's and the function libraries' entries, the registry keys,
 * and the functions one file calls in another (prefix sc_). Layout:
 * script.c (utilities, the script cache, running a script or function,
 * lifecycle), script_conv.c (RESP <-> Lua conversions), script_env.c (the
 * redis.* API, read-only globals, the error handler, the state's setup),
 * script_fn.c (FUNCTION libraries: load, list, dump/restore, stats),
 * script_libs.c (struct, cmsgpack). Loop thread only. */
#ifndef FRONTDOOR_PROXY_SCRIPT_INT_H
#define FRONTDOOR_PROXY_SCRIPT_INT_H

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

#define COMPAT_VERSION "7.0.15"

#define COMPAT_VERSION_NUM 0x0007000f

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

/* SCRIPT's and FUNCTION's subcommands: name and Redis arity (negative: at
 * least). */
typedef struct subcommand { const char *name; int arity; } subcommand;

/* proxy/script.c */
fd_script_engine *sc_engine_of(lua_State *L);
int sc_argis(const resp_arg *a, const char *lit);
int sc_find_subcommand(const subcommand *subs, int n, int argc, const resp_arg *sub, const char *parent,
                           const char *help, resp_out *out, int *rc);
int sc_run_script(fd_script_engine *e, script_entry *s, const fn_entry *fn, const resp_arg *keys, int nkeys,
                      const resp_arg *args, int nargs, int ro, resp_out *out);
int32_t sc_rand48_next(fd_script_engine *e);
size_t sc_next_word(const char **p, const char *end, const char **w);
uint64_t sc_mono_us(void);
void sc_count_hook(lua_State *L, lua_Debug *ar);
void sc_host_log(fd_script_engine *e, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void sc_push_error(lua_State *L, const char *s, int stats_flag);

/* proxy/script_conv.c */
int sc_reply_to_lua(lua_State *L, const char **pp, const char *end, int push, int depth);
void sc_lua_to_reply(fd_script_engine *e, lua_State *L, resp_out *o);

/* proxy/script_env.c */
int sc_setup_state(fd_script_engine *e);
void sc_after_script(fd_script_engine *e);

/* proxy/script_fn.c */
int sc_function_load(fd_script_engine *e, const char *code, size_t len, int replace, const char **name, char *err,
                         size_t errsz);
int sc_l_register_function(lua_State *L);
void sc_count_libs(fd_script_engine *e);
void sc_lib_free(lua_State *L, lib_entry *l);
void sc_libs_free(lua_State *L, lib_entry *l);

/* registry keys: script.c */
/* the engine whose script or function runs (script.c) */
extern fd_script_engine *sc_hook_engine;
extern char K_REAL_OF, K_PROXY_OF, K_REAL_G, K_ERRH, K_TOSTRING, K_STRMT_PROXY, K_LIBAPI;

#endif
