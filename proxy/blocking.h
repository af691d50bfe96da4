/* blocking.h — blocking commands (BLPOP, BRPOP, BRPOPLPUSH, BLMOVE, BLMPOP,
 * BZPOPMIN, BZPOPMAX, BZMPOP) with Redis 7.0's semantics on every backend.
 * Module prefix: px_block_.
 *
 * Two ways to wait, chosen by the primary backend:
 *  - lmdb, leveldb, mongodb: the proxy waits. A blocking command is tried
 *    as its non-blocking twin (LPOP, RPOP, LMOVE, RPOPLPUSH, LMPOP, ZPOPMIN,
 *    ZPOPMAX, ZMPOP) key by key through the backend's own submit; when
 *    every key is empty the client is put at the tail of each key's FIFO in
 *    a blocked-keys table and its timer started. A write command dispatched
 *    on a key with waiters marks the key ready (px_block_signal_cmd); at the
 *    end of each top-level command (px_block_after_command) every ready key
 *    is served: the first waiter's twin is run on that key alone, and while
 *    it pops something the next waiter is tried. On mongodb each try is an
 *    asynchronous submit (the backend orders commands per key, so a try
 *    always runs after the write that woke it); one try per key is in
 *    flight, a write meanwhile makes the key be tried again. No thread
 *    waits, nothing polls the store.
 *  - redis, redis-cluster: the server waits. The command goes as received
 *    to the backend's submit_blocking (a connection of its own from a
 *    bounded pool, redis-blocking-pool-size; storage/redis_settings.h).
 * While its command blocks, a client's later commands are not read (as in
 * Redis); they run once it is answered. Timeouts: Redis's parsing and
 * errors; the timeout reply is a null array. CLIENT UNBLOCK, a client that
 * disconnects, and INFO blocked_clients are handled here.
 *
 * Inside EXEC or a script (c->atomic, set by proxy/multi.c and
 * proxy/scripting.c) a blocking command runs as its non-blocking twin, its
 * reply in place before the handler returns, and ready keys are served once
 * the whole transaction or script has run (px_dispatch's end, or the end of
 * the loop turn after an asynchronous backend's atomic unit).
 */
#ifndef FRONTDOOR_BLOCKING_H
#define FRONTDOOR_BLOCKING_H

#include <stddef.h>
#include <stdint.h>
#include "server.h"
#include "commands.h"

/* The handlers: family PROXY rows of commands.def (prototypes in commands.h). */

/* XREAD / XREADGROUP with a BLOCK option (family DATA rows): the handler
 * that serves them here, else NULL (a plain read, the storage's). The first
 * try is the command as received; when nothing can be served the storage
 * answers its "-XBLOCK <id>..." marker (storage/value/stream.h: `$`
 * resolved) and the client waits on its streams. A write on one of them
 * tries each waiter on that stream alone: XREAD COUNT n STREAMS key id, or
 * XREADGROUP GROUP g c COUNT n [NOACK] STREAMS key > (n: COUNT, else 1000,
 * as Redis). XREADGROUP ends with Redis 7.0's -NOGROUP / -UNBLOCKED errors
 * when its group or key goes away. On redis and redis-cluster the command
 * goes as received to a connection of its own (submit_blocking). */
px_handler px_block_stream_handler(const fd_command *cmd, int argc, const resp_arg *argv);


/* A write command was handed to the backend: its keys with waiters become
 * ready. Cheap when nobody waits. Scripts' and EXEC's inner commands must
 * pass here too (px_dispatch does it for what it dispatches). FLUSHALL /
 * FLUSHDB make every key with waiters ready. */
void px_block_signal_cmd(const fd_command *cmd, int argc, const resp_arg *argv);
/* Serve every ready key (no-op inside px_block_in_atomic): called at the end
 * of each top-level command (px_dispatch), and after EXEC / a script. */
void px_block_after_command(void);
/* Run the commands of clients answered since the last call (the end of the
 * loop turn, before the commit). */
void px_block_run_resumes(void);

/* The client is closing: forget its wait (a try in flight finishes alone). */
void px_block_conn_closed(px_conn *c);
/* CLIENT UNBLOCK: 1 if c was blocked and is now answered (how = 0: as a
 * timeout, 1: with -UNBLOCKED), else 0. */
int  px_block_unblock(px_conn *c, int how);
/* Clients waiting in a blocking command (INFO blocked_clients). */
uint64_t px_block_count(void);


/* Register this feature's hooks (hooks.h): main.c, once at start-up. */
void px_blocking_hooks(void);

#endif
