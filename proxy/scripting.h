/* scripting.h — EVAL/EVALSHA/EVAL_RO/EVALSHA_RO, SCRIPT, and FUNCTION/FCALL/
 * FCALL_RO (docs/functions.md): the proxy's host for the Lua engine
 * (script.h). Module prefix: px_script_. The FUNCTION libraries are saved in
 * the primary's store (fd_backend_ops.aux_put, record "functions") after
 * every change and loaded when the engine starts (aux_get); the Redis
 * backends have no such ops (their servers keep the libraries).
 *
 * Where a script runs:
 *   - redis, redis-cluster: on the Redis server itself — the command is
 *     forwarded (a cluster routes it by its keys: all in one slot);
 *   - lmdb, leveldb, mongodb: in frontdoor's engine; redis.call runs a
 *     command through the same table and checks as a client's (px_execute_into),
 *     so the script sees the backend exactly as clients do. A script is
 *     atomic: on the embedded backends it runs inside one loop step and one
 *     write transaction; on mongodb every other client is held while it runs
 *     (atomic against clients of this frontdoor only).
 * A script that runs past busy-reply-threshold (5 s) makes other clients get
 * -BUSY; SCRIPT KILL from another client stops it unless it wrote.
 */
#ifndef FRONTDOOR_SCRIPTING_H
#define FRONTDOOR_SCRIPTING_H

#include "server.h"

/* While a script is busy: answer c's command with -BUSY (or run SCRIPT KILL)
 * and return 1; 0 when the command may run. As Redis 7.0: MULTI, DISCARD,
 * WATCH and UNWATCH run; EXEC is answered -EXECABORT ... because of: BUSY
 * and discards the transaction; any other refusal inside MULTI flags it. */
int  px_script_refuse_busy(px_conn *c, const fd_command *cmd, int argc, resp_arg *argv);
/* The client whose script is running (NULL when none). While it is not
 * NULL the loop may run nested (the busy hook; a mongodb reply awaited):
 * the server then neither commits nor frees that client (server.c). */
px_conn *px_script_client(void);
/* 1 while a script is past busy-reply-threshold: other clients are not
 * held for it (px_atomic_hold) but answered -BUSY. */
int px_script_busy_now(void);
/* The A/B layer (proxy/ab.c): run EVAL/EVALSHA/EVAL_RO/EVALSHA_RO, SCRIPT
 * or FUNCTION/FCALL (refused: no functions here) of client c in frontdoor's
 * engine against backend `be` — the primary as for the client itself, or
 * an A/B side whose redis.call commands then go to that backend directly
 * (not counted as the client's; on an asynchronous one the loop runs nested
 * and every other client is held). One reply is appended to out. */
void px_script_run_on(struct px_backend *be, px_conn *c, int argc, resp_arg *argv, resp_out *out);
/* The body of a script in frontdoor's engine by its SHA1 (scripts that ran
 * or were loaded with an lmdb, leveldb or mongodb backend, or on an
 * embedded A/B secondary): 1 with *body and *len pointing into the engine's
 * cache (fd_script_body: copy before running anything), 0 when the engine
 * has none (or was never started). For the A/B layer's NOSCRIPT resend. */
int  px_script_body(const resp_arg *sha, const char **body, size_t *len);
/* Drop the engine (shutdown). */
void px_script_shutdown(void);

/* Register this feature's hooks (hooks.h): main.c, once at start-up. */
void px_scripting_hooks(void);

#endif
