/* multi.h — transactions (MULTI, EXEC, DISCARD, WATCH, UNWATCH) and the
 * atomic units they and scripts need. Module prefix: px_multi_ / px_watch_ /
 * px_atomic_.
 *
 * Queueing. Between MULTI and EXEC every command that passes the central
 * checks is copied into the client's queue and answered +QUEUED; one that
 * fails them (unknown, arity, NOAUTH, CROSSSLOT on a cluster) is answered
 * with its error and flags the transaction, so EXEC answers -EXECABORT.
 *
 * Atomicity of EXEC, per backend:
 *   - embedded (lmdb, leveldb): the queued commands run one after the other
 *     inside the EXEC call, in the loop turn's one write transaction: no
 *     other client's command can run in between, and one commit covers them;
 *   - asynchronous (mongodb): they are submitted together and every other
 *     client's commands are held (not read, not parsed) until their replies
 *     are in — atomic against every client of this frontdoor, not against
 *     other writers of the same MongoDB database;
 *   - a Redis server (redis, redis-cluster): MULTI, the queued commands and
 *     EXEC go to Redis as one contiguous block on one connection (nothing
 *     else is written to that connection in between), and Redis's own EXEC
 *     reply is the client's; on a cluster all keys of the transaction must
 *     hash to one slot (else -CROSSSLOT when queueing), and the block goes to
 *     that slot's master.
 *
 * WATCH is kept by the proxy for every backend (never forwarded, also not
 * to a Redis server). EXEC answers a null array, as Redis 7.0's, when since
 * WATCH: a write command dispatched by any client of this frontdoor named a
 * watched key, or a backend swap happened; FLUSHDB/FLUSHALL ran while a
 * watched key existed (one absent at WATCH is not touched); or a key live
 * at WATCH has expired: WATCH asks the primary for each new key's
 * PEXPIRETIME (px_submit_to, detached) and EXEC compares the deadline with
 * px_now_ms, the backends' expiry clock (deadline <= now: expired). On an
 * asynchronous backend WATCH's +OK is a pending mark and the client's input
 * is held (c->watch_wait, px_atomic_hold) until every answer is in; the
 * embedded backends answer inside WATCH. A write whose reply is complete
 * when it returns (the embedded backends; a script's redis.call on any
 * frontdoor-run backend) touches its keys only if its reply says it changed
 * something (px_watch_touch_reply: errors, and :0/null/empty for the
 * commands flagged FD_CMD_TOUCH_CHANGED, do not), as Redis 7.0's
 * signalModifiedKey. Limits: a write whose reply is owed by an asynchronous
 * backend (mongodb, redis, redis-cluster; EXEC's commands there; for the
 * other clients, a blocking command's pop there), a forwarded script or MULTI block count as a change
 * of every key they name even when they changed nothing, so an EXEC may
 * abort where redis-server's would not, never the reverse; on the redis
 * backends, writes made by other clients of the Redis server directly are
 * not seen (docs/transactions.md).
 */
#ifndef FRONTDOOR_MULTI_H
#define FRONTDOOR_MULTI_H

#include "server.h"

/* Queue a command of a client in MULTI (cmd NULL: a command the table does
 * not know, for a Redis backend); replies +QUEUED or an error. */
void px_multi_queue(px_conn *c, fd_command *cmd, int argc, resp_arg *argv);
/* A command of a client in MULTI was refused by the central checks: EXEC
 * will answer -EXECABORT. No-op outside MULTI. */
void px_multi_flag_error(px_conn *c);
/* The number of commands c has queued since MULTI, -1 when not in MULTI
 * (CLIENT LIST's multi=): during its EXEC, the count still, as Redis. */
int  px_multi_queued(const px_conn *c);
/* The client is closing (or RESET): drop its queue and its watches. */
void px_multi_release(px_conn *c);

/* Copy a command to keep it past its dispatch (a MULTI queue, an A/B copy):
 * one malloc'd block holding the argc argument slices followed by the
 * command as a RESP multibulk ("*<argc>\r\n$<len>\r\n<arg>\r\n..."); each
 * slice points at its argument inside that multibulk (followed by "\r\n",
 * not NUL-terminated). Returns the block, whose start is the argv array, and
 * sets *raw and *rawlen to the multibulk inside it. The caller owns the
 * block and frees it whole with free(argv) (never free(*raw)). NULL when out
 * of memory (nothing allocated, *raw and *rawlen untouched). */
resp_arg *px_cmd_copy(int argc, const resp_arg *argv, char **raw, size_t *rawlen);

/* A write command was dispatched: mark the clients watching its keys. */
void px_watch_touch(const fd_command *cmd, int argc, const resp_arg *argv);
/* A command ran and its whole reply is known (reply, len: its bytes, RESP2
 * or RESP3): px_watch_touch unless the reply shows that Redis 7.0 would not
 * have signalled its keys — an error raised before any change (WRONGTYPE,
 * syntax, a value out of range...; a storage or backend failure, which may
 * leave part of a change, still touches), or, for a FD_CMD_TOUCH_CHANGED
 * command, :0, a null or an empty array/set/map; and not the keys the
 * backend reported unchanged (untouched: fd_request.untouched's bits).
 * Non-write commands touch nothing. Call it after the command has run and before any other client's
 * command can run (the loop thread, no turn in between). */
void px_watch_touch_reply(const fd_command *cmd, int argc, const resp_arg *argv, const char *reply, size_t len,
                          unsigned untouched);
/* A write whose reply an asynchronous backend owes, run for client `self`
 * (a blocking command's pop, proxy/blocking.c): at its submit, the other
 * clients watching its keys are marked (the safe side: their EXEC may run
 * before the reply is in); self's own next command waits for the reply,
 * which decides for self (px_watch_touch_reply_of(..., self)). */
void px_watch_touch_others(const fd_command *cmd, int argc, const resp_arg *argv, const px_conn *self);
/* px_watch_touch_reply for the clients `only` (NULL: every client). */
void px_watch_touch_reply_of(const fd_command *cmd, int argc, const resp_arg *argv, const char *reply, size_t len,
                             const px_conn *only);
/* A command a Redis server runs without px_execute (forwarded EVAL/EVALSHA,
 * the commands of an EXEC block): px_watch_touch if it is a write, or a
 * script that may write (EVAL/EVALSHA: every key it declares, as a write). */
void px_watch_touch_if_write(const fd_command *cmd, int argc, const resp_arg *argv);
/* Every watched key changed (backend swap). */
void px_watch_touch_all(void);

/* Atomic units on an asynchronous backend. px_atomic_begin(c) makes c the
 * owner: until px_atomic_end(), the replies of c's commands submitted count
 * (px_atomic_count), and the unit ends when the last one is in: other
 * clients' input is held meanwhile (px_atomic_hold) and resumed then. */
void px_atomic_begin(px_conn *c);
void px_atomic_end(void);
void px_atomic_count(fd_pending *p);
/* An A/B secondary's unit (proxy/ab.h) on an asynchronous secondary: hold
 * other clients (c the owner unless a unit already runs) until the matching
 * px_atomic_release, like one more reply owed. */
void px_atomic_retain(px_conn *c);
void px_atomic_release(void);
/* In process_input: 1 if c must wait (it was put on the held list, or its
 * WATCH waits for the backend's answers). */
int  px_atomic_hold(px_conn *c);
/* Arm px_atomic_hold (hooks.h: held): call after making px_srv.atomic_owner
 * non-NULL. It idles itself once no unit and no WATCH holds anyone. */
void px_atomic_arm(void);
/* Run the held clients' input again (the unit ended). */
void px_atomic_resume(void);

/* Register this feature's hooks (hooks.h): main.c, once at start-up. */
void px_multi_hooks(void);

#endif
