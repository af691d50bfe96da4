/* pubsub.h — publish/subscribe and MONITOR, Redis 7.0's semantics on every
 * backend. Module prefix: px_pubsub_ (px_monitor_ for MONITOR).
 *
 * The broker is the proxy's on every backend: it knows each client's
 * channels, patterns and shard channels, and writes messages into the
 * subscribers' output (RESP2 arrays, RESP3 push frames, mixed with normal
 * replies in RESP3). Where the messages come from depends on the primary:
 *  - lmdb, leveldb, mongodb: PUBLISH / SPUBLISH deliver here, at once
 *    (messages are not stored);
 *  - redis, redis-cluster (backends with ops->pubsub): PUBLISH / SPUBLISH
 *    go to the server, and the backend keeps ONE connection subscribed to
 *    the union of every local client's channels and patterns (shard
 *    channels at their shard's master): the messages it relays, whoever
 *    published them, are fanned out here. 10,000 subscribers cost one
 *    backend connection.
 * RESP2 subscribed mode: only (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PING, QUIT,
 * RESET are accepted (px_pubsub_denied), PING answers ["pong", msg]. A
 * subscriber whose unsent output passes pubsub-output-buffer-limit is
 * disconnected (Redis's client-output-buffer-limit pubsub class, hard limit).
 * PUBSUB CHANNELS/NUMSUB/NUMPAT/SHARDCHANNELS/SHARDNUMSUB answer from this
 * frontdoor's subscribers; on a relaying backend they, PUBLISH and SPUBLISH
 * are asked of the server and its answer adjusted to a redis-server's: the
 * relay (counted by the server once per name) replaced by the subscribers
 * behind it (docs/pubsub.md, "Counts").
 */
#ifndef FRONTDOOR_PUBSUB_H
#define FRONTDOOR_PUBSUB_H

#include <stddef.h>
#include <stdint.h>
#include "server.h"

/* The handlers: family PROXY rows of commands.def (prototypes in commands.h). */

/* c's subscriptions (channels + patterns + shard channels); 0 if none. */
size_t px_pubsub_count(const px_conn *c);
/* c's channels, patterns, shard channels (CLIENT LIST sub=, psub=, ssub=). */
void px_pubsub_client_counts(const px_conn *c, size_t n[3]);
/* RESP2 subscribed mode: 1 (and the error written) if cmd is not allowed. */
int  px_pubsub_denied(px_conn *c, const fd_command *cmd);
/* Drop every subscription of c and MONITOR, sending nothing (RESET, close). */
void px_pubsub_reset(px_conn *c);
/* Each of c's subscriptions: fn(ud, kind (0 channel, 1 pattern, 2 shard
 * channel), name, len) until it returns non-zero, which is returned; 0 when
 * every one was seen. (ACL: a user's subscribers losing a channel.) */
int  px_pubsub_each(const px_conn *c, int (*fn)(void *ud, int kind, const char *name, size_t len), void *ud);
/* The client is closing. */
void px_pubsub_conn_closed(px_conn *c);

/* Feed the monitors one executed command (cheap when there are none). */
extern uint64_t px_monitors;
void px_monitor_feed(px_conn *c, const fd_command *cmd, int argc, const resp_arg *argv);

/* Deliver a message published here to this frontdoor's subscribers of
 * `ch` and of the patterns matching it (not through a relay); the number
 * of receivers. (Keyspace events: proxy/notify.c.) */
long long px_pubsub_publish_local(const char *ch, size_t clen, const char *msg, size_t mlen);

/* The host callbacks of a relaying backend (storage/host.h). */
void px_pubsub_backend_message(struct fd_backend *b, int kind, const char *pattern, size_t plen,
                               const char *channel, size_t clen, const char *msg, size_t mlen);
void px_pubsub_backend_resync(struct fd_backend *b);
/* fd_host.pubsub_ready: the relay holds `name` now; the subscribe
 * confirmations held for it go out (docs/pubsub.md). */
void px_pubsub_backend_ready(struct fd_backend *b, int kind, const char *name, size_t len);

/* INFO: distinct channels, patterns, shard channels with subscribers. */
void px_pubsub_stats(uint64_t *channels, uint64_t *patterns, uint64_t *shard);

/* Register this feature's hooks (hooks.h): main.c, once at start-up. */
void px_pubsub_hooks(void);

#endif
