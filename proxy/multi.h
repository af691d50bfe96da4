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
 * WATCH is kept by the proxy for every backend: a write command dispatched
 * by any client of this frontdoor on a watched key (or FLUSHDB/FLUSHALL, or
 * a backend swap) makes the watcher's EXEC answer a null array. It counts a
 * write command on the key as a change even when it changed nothing (SET NX
 * on an existing key), so an EXEC may abort where redis-server's would not,
 * never the reverse; a key that only expires is not seen; on the redis
 * backends, writes made by other clients of the Redis server directly are not
 * seen (docs/transactions.md).
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
/* The client is closing (or RESET): drop its queue and its watches. */
void px_multi_release(px_conn *c);

/* A write command was dispatched: mark the clients watching its keys. */
void px_watch_touch(const fd_command *cmd, int argc, const resp_arg *argv);
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
/* In process_input: 1 if c must wait (it was put on the held list). */
int  px_atomic_hold(px_conn *c);
/* Run the held clients' input again (the unit ended). */
void px_atomic_resume(void);

#endif
