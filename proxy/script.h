/* script.h — the Lua scripting engine: EVAL/EVALSHA/EVAL_RO/EVALSHA_RO and
 * SCRIPT LOAD/EXISTS/FLUSH/KILL with Redis 7.0's semantics, on Debian's Lua
 * 5.1 (liblua5.1), with cjson and bit from Debian and our own struct and
 * cmsgpack (script_libs.c).
 *
 * Module prefix: fd_script_. One engine = one Lua state + one script cache;
 * the proxy keeps one per server (Redis has one per server too: scripts
 * share globals' protection, the PRNG and the cache).
 *
 * What the engine does itself, byte for byte as redis-server 7.0:
 *  - numkeys checks, NOSCRIPT, shebang ("#!lua flags=...") parsing, compile
 *    errors ("Error compiling script (new function): ..."), the script cache
 *    by SHA1 (the compiled function is kept in the Lua registry as
 *    "f_<sha>", the chunk named "@user_script" as 7.0 loads it);
 *  - the environment: base (minus print/dofile/loadfile), table, string,
 *    math (math.random/randomseed on Redis's lrand48, one sequence per
 *    engine, not reseeded per script: what 7.0.15 does), cjson, bit, struct,
 *    cmsgpack; `debug` only for the error handler; every table reachable
 *    from the globals is read-only ("Attempt to modify a readonly table"),
 *    reading an unknown global fails ("Script attempted to access
 *    nonexistent global variable 'x'"), KEYS and ARGV are set per run;
 *  - the redis.* API: call, pcall, error_reply, status_reply, sha1hex, log,
 *    setresp, set_repl (validated, otherwise a no-op) and REPL_*, LOG_*,
 *    REDIS_VERSION(_NUM), replicate_commands (true), breakpoint (false),
 *    debug (nothing), acl_check_cmd (through the host's call callback, see
 *    below); a global pcall that turns error tables into their text;
 *  - reply conversion both ways (RESP2/RESP3 -> Lua for redis.call; Lua ->
 *    the client's RESP for the script's result, following the script's
 *    redis.setresp as 7.0 does for booleans), and the errors' " script:
 *    <sha>, on @user_script:<line>." suffix;
 *  - the busy hook and SCRIPT KILL (see fd_script_host.busy).
 *
 * What the host decides (through fd_script_host.call): everything about a
 * command run from a script — unknown command, arity, "not allowed from
 * scripts", writes from a read-only script, OOM, cluster slots — and it
 * answers with Redis's reply bytes, errors included (e.g.
 * "-ERR Unknown Redis command called from script\r\n"): the engine turns an
 * error reply into a Lua error for redis.call / an {err=...} table for
 * redis.pcall exactly as 7.0 does with its own policy errors.
 *
 * Threading: not thread-safe; every function runs on the thread that owns
 * the engine (the loop thread). A script runs synchronously inside
 * fd_script_eval; the only way back into the loop while it runs is the busy
 * callback.
 */
#ifndef FRONTDOOR_SCRIPT_H
#define FRONTDOOR_SCRIPT_H

#include <stddef.h>
#include "protocol/resp.h"

typedef struct fd_script_engine fd_script_engine;

/* redis.log levels (Redis's LL_*; numerically = PX_LOG_* of proxy/log.h) */
enum { FD_SCRIPT_LOG_DEBUG = 0, FD_SCRIPT_LOG_VERBOSE, FD_SCRIPT_LOG_NOTICE, FD_SCRIPT_LOG_WARNING };

/* fd_script_flags(): what the running script may do (bits) */
#define FD_SCRIPT_F_NO_WRITES   0x01u  /* read-only run: *_RO command or shebang flags=no-writes;
                                          the host refuses write commands with
                                          "-ERR Write commands are not allowed from read-only scripts.\r\n" */
#define FD_SCRIPT_F_ALLOW_OOM   0x02u  /* shebang flags=allow-oom */
#define FD_SCRIPT_F_ALLOW_STALE 0x04u  /* shebang flags=allow-stale */
#define FD_SCRIPT_F_NO_CLUSTER  0x08u  /* shebang flags=no-cluster */
#define FD_SCRIPT_F_SHEBANG     0x10u  /* the script has a "#!lua" line (else 7.0's EVAL compat mode) */
#define FD_SCRIPT_F_WROTE       0x20u  /* a write command succeeded: SCRIPT KILL answers UNKILLABLE */
#define FD_SCRIPT_F_CROSS_SLOT  0x40u  /* function flag allow-cross-slot-keys */
#define FD_SCRIPT_F_FUNCTION    0x80u  /* the run is a function's (FCALL, FCALL_RO) */

/* Return value bits of fd_script_host.call */
#define FD_SCRIPT_CALL_WRITE    0x01   /* the command was a write (marks the run FD_SCRIPT_F_WROTE) */

/* The -BUSY error the host sends other clients while fd_script_busy() is true. */
#define FD_SCRIPT_BUSY_ERR "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."

/* ... and while a function (FCALL) runs */
#define FD_SCRIPT_BUSY_FN_ERR "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."

typedef struct fd_script_host {
    void *ud;   /* passed back to every callback */

    /* Run one command for redis.call / redis.pcall / redis.acl_check_cmd.
     * argv[0..argc) are the script's arguments (argv[0] the command name as
     * written, any case; numbers already formatted "%.17g" as Redis does);
     * they are valid only during the call. `resp` is 2 or 3 (the script's
     * redis.setresp) and out->proto is set to it: append exactly ONE reply to
     * `out` (any RESP2/RESP3 type; attributes are skipped). Policy errors are
     * ordinary error replies with 7.0's texts.
     * `check_only` non-zero: redis.acl_check_cmd — do not run the command,
     * reply :1 if the caller may run it, :0 if not, or an error reply for an
     * unknown command ("-ERR Invalid command passed to redis.acl_check_cmd()").
     * Returns FD_SCRIPT_CALL_WRITE if a write command ran, 0 otherwise, -1 if
     * it could not produce a reply (out of memory: the script fails with
     * "ERR ... out of memory"). Must not call fd_script_eval (returns BUSY). */
    int (*call)(void *ud, int argc, const resp_arg *argv, int resp, int check_only, resp_out *out);

    /* Optional. Called before a script runs, after it was found/compiled, with
     * its FD_SCRIPT_F_* flags (SHEBANG, NO_WRITES, ALLOW_OOM, ...): the
     * checks 7.0 makes for scripts with a shebang (e.g. "-OOM allow-oom flag
     * is not set on the script, can not run it when used memory >
     * 'maxmemory'", "-ERR Can not run script on cluster, 'no-cluster' flag is
     * set."). Return 0 to run; or append one error reply to `out` and return
     * -1 (the script does not run). */
    int (*prepare)(void *ud, unsigned flags, resp_out *out);

    /* Optional. The busy hook: once a script has run for the busy threshold
     * (fd_script_set_busy_threshold), this is called every
     * FD_SCRIPT_HOOK_STEPS Lua instructions, from inside the script, on the
     * loop thread. The host runs its event loop without blocking
     * (e.g. ev_run(loop, EVRUN_NOWAIT)) with the script's own client paused:
     * other clients get -BUSY (FD_SCRIPT_BUSY_ERR), except SCRIPT KILL, which
     * the host passes to fd_script_script_cmd (or calls fd_script_kill);
     * after the callback returns the engine stops the script if killed.
     * The first call of a run has first_call = 1 (Redis logs "Slow script
     * detected..." then; the engine logs it through host.log). */
    void (*busy)(void *ud, long long elapsed_ms, int first_call);

    /* Optional. redis.log (level FD_SCRIPT_LOG_*, text not NUL-terminated)
     * and the engine's own warnings. Levels below the host's verbosity may be
     * dropped by the host. */
    void (*log)(void *ud, int level, const char *msg, size_t len);
} fd_script_host;

#define FD_SCRIPT_HOOK_STEPS 100000   /* Lua instructions between busy checks, as Redis */

/* The Lua heap's bound (docs/bounds.md): an allocation that would take the
 * state past it fails, and the script gets Lua's "not enough memory" error
 * (ERR Error running script <sha>, not enough memory). After a script whose
 * heap passed FD_SCRIPT_TRIM_AT, the state is fully collected and the freed
 * memory is handed back to the system (malloc_trim). */
#define FD_SCRIPT_LUA_MAX_MEMORY (512ull << 20)
#define FD_SCRIPT_TRIM_AT        (64ull << 20)

/* A new engine (Lua state, libraries, protected globals, empty cache) using
 * `host` (copied). NULL when memory is short or Lua fails to start. */
fd_script_engine *fd_script_new(const fd_script_host *host);
/* Close the Lua state and drop the cache. Not while a script runs. */
void fd_script_free(fd_script_engine *e);

/* busy-reply-threshold (lua-time-limit) in ms; 0 disables the hook (and
 * SCRIPT KILL with it), as in Redis. Default 5000. */
void fd_script_set_busy_threshold(fd_script_engine *e, long long ms);

/* EVAL, EVALSHA, EVAL_RO, EVALSHA_RO: argv is the client's command
 * (argv[0] names which; arity was checked by the caller: argc >= 3).
 * out->proto is the client's protocol; exactly one reply is appended (the
 * script's result or an error, all 7.0's texts). Returns 0; -1 when `out`
 * could not grow (the reply may be partial: the host drops the client). */
int fd_script_eval(fd_script_engine *e, int argc, const resp_arg *argv, resp_out *out);

/* SCRIPT LOAD|EXISTS|FLUSH [ASYNC|SYNC]|KILL|DEBUG NO: argv[0] = "SCRIPT",
 * argc >= 2 (arity checked by the caller). Appends one reply. HELP is the
 * caller's (fd_script_help_lines). Unknown subcommands or wrong arity get
 * 7.0's "ERR unknown subcommand or wrong number of arguments for '...'. Try
 * SCRIPT HELP." SCRIPT FLUSH while a script runs is refused with -BUSY
 * (the host should not pass it then anyway). Returns 0, -1 if out could not grow. */
int fd_script_script_cmd(fd_script_engine *e, int argc, const resp_arg *argv, resp_out *out);
/* SCRIPT DEBUG (argv[1] is "debug"; no engine needed, on every backend:
 * a Redis backend's shared connection must never enter Redis's debugger):
 * NO answers +OK, YES and SYNC "ERR frontdoor does not support the Lua
 * debugger (SCRIPT DEBUG)", anything else Redis 7.0's "Use SCRIPT DEBUG
 * YES/SYNC/NO", a wrong arity Redis's arity error. Returns as
 * fd_script_script_cmd. */
int fd_script_debug_cmd(int argc, const resp_arg *argv, resp_out *out);
/* The lines of SCRIPT HELP after Redis's heading (NULL-terminated). */
extern const char *const fd_script_help_lines[];

/* SCRIPT KILL: -NOTBUSY when no script runs, -UNKILLABLE when the running
 * one wrote, else +OK and the script fails at the next hook check with
 * "ERR Script killed by user with SCRIPT KILL..." (the error cannot be
 * caught by pcall). Appends one reply; returns as fd_script_script_cmd. */
int fd_script_kill(fd_script_engine *e, resp_out *out);

/* FUNCTION KILL (is_eval 0) or SCRIPT KILL (1): as fd_script_kill, and a
 * KILL of the other kind answers -BUSY (7.0: SCRIPT KILL does not stop a
 * function, FUNCTION KILL does not stop an EVAL script). */
int fd_script_kill_from(fd_script_engine *e, int is_eval, resp_out *out);

/* ------------------------------------------------------------ functions
 *
 * Redis 7.0 functions in the same engine and Lua state as EVAL scripts:
 * libraries ("#!lua name=<lib>" then code that calls
 * redis.register_function) run once at FUNCTION LOAD, with globals that
 * hold only redis.register_function, redis.log, LOG_* and REDIS_VERSION(_NUM) (7.0's
 * library API; 500 ms bound: "FUNCTION LOAD timeout"); each registered
 * callback is kept in the Lua registry and FCALL calls it with (keys, args)
 * as 7.0 does, under the same busy hook, SCRIPT/FUNCTION KILL, heap bound
 * and host.call policy as EVAL (the function's flags are the run's
 * FD_SCRIPT_F_*; FCALL_RO adds NO_WRITES). Function names are
 * case-insensitive, library names are not. The libraries survive SCRIPT
 * FLUSH (their code is run again in the new Lua state). Errors and reply
 * shapes are 7.0.15's (functions.c, function_lua.c). */

/* FCALL / FCALL_RO (argc >= 3, checked by the caller): one reply appended.
 * Returns as fd_script_eval. */
int fd_script_fcall(fd_script_engine *e, int argc, const resp_arg *argv, resp_out *out);

/* FUNCTION LOAD|LIST|DUMP|RESTORE|DELETE|FLUSH|KILL|STATS (argv[0] =
 * "FUNCTION", argc >= 2). One reply appended; *changed = 1 when the set of
 * libraries changed (the host then saves fd_script_functions_dump). While a
 * script runs only KILL and STATS answer (others: -BUSY). HELP is the
 * caller's (fd_script_function_help_lines). Returns 0, -1 if out could not grow. */
int fd_script_function_cmd(fd_script_engine *e, int argc, const resp_arg *argv, resp_out *out, int *changed);
extern const char *const fd_script_function_help_lines[];

/* FUNCTION DUMP's payload (storage/value/rdb.h: one 0xF5 record per
 * library, in load order, then the footer) appended to out: byte-identical
 * to redis-server's for the same libraries in the same order. 0, -1 out of memory. */
struct fd_rdb_buf;
int fd_script_functions_dump(const fd_script_engine *e, struct fd_rdb_buf *out);
/* Replace every library by the payload's (FUNCTION RESTORE ... FLUSH): the
 * libraries saved in the store, at start. 0, or -1 with a text in err. */
int fd_script_functions_restore(fd_script_engine *e, const void *p, size_t len, char *err, size_t errsz);
/* Functions and (*libraries) libraries loaded. */
size_t fd_script_function_count(const fd_script_engine *e, size_t *libraries);

/* 1 while fd_script_eval runs a script (from inside host callbacks). */
int fd_script_running(const fd_script_engine *e);
/* 1 once the running script passed the busy threshold: the host answers
 * other clients FD_SCRIPT_BUSY_ERR. */
int fd_script_busy(const fd_script_engine *e);
/* FD_SCRIPT_F_* of the running script (0 when none runs). */
unsigned fd_script_flags(const fd_script_engine *e);
/* SHA1 (40 hex + NUL) of the running script, "" when none. */
const char *fd_script_current_sha(const fd_script_engine *e);

/* The body of the cached script whose SHA1 is sha (40 hex digits, either
 * case) as it was given to EVAL or SCRIPT LOAD (shebang included): 1 with
 * *body and *len pointing into the cache, valid until the cache is flushed
 * (SCRIPT FLUSH) or the engine freed — copy it before anything that may run
 * a script or a SCRIPT command. 0 when the engine has no such script (or
 * sha is not 40 hex digits). The A/B layer resends an EVALSHA a secondary
 * answered NOSCRIPT as EVAL with it. */
int fd_script_body(const fd_script_engine *e, const char *sha, size_t shalen, const char **body, size_t *len);

/* Cached scripts and the Lua heap (INFO memory: number_of_cached_scripts,
 * used_memory_lua). */
size_t fd_script_count(const fd_script_engine *e);
size_t fd_script_lua_memory(const fd_script_engine *e);

#endif
