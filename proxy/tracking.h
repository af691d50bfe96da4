/* tracking.h — client-side caching: CLIENT TRACKING (Redis 7.0's default
 * mode, with NOLOOP and REDIRECT). Module prefix: px_tracking_.
 *
 * A client that runs CLIENT TRACKING ON has the keys of its read-only
 * commands remembered (the command table's key positions); a write command's
 * keys, by any client, send each client that read one of them a push
 * `invalidate [key]` once (RESP3 push; a RESP2 client without a redirect
 * gets nothing, as in Redis) and forget it. REDIRECT id sends them to that
 * client instead: a RESP3 push, or a `message` on __redis__:invalidate when
 * it speaks RESP2 and is in pub/sub mode (the target gone: the tracking
 * client gets `tracking-redir-broken id` in RESP3). FLUSHALL/FLUSHDB send the null
 * invalidate to every tracking client and forget every key. NOLOOP spares
 * the writer its own invalidations. OPTIN (OPTOUT): a read is remembered
 * only (except) when CLIENT CACHING yes (no) came just before it. BCAST and
 * PREFIX are refused (not served yet).
 *
 * Bounds: the key table holds at most PX_TRACKING_MAX_KEYS keys (Redis's
 * tracking-table-max-keys default); a key recorded beyond it evicts one
 * tracked key first, with its invalidation, as Redis does.
 * Hooks (exec_done, closed) are armed only while a client tracks.
 * Loop thread only.
 */
#ifndef FRONTDOOR_TRACKING_H
#define FRONTDOOR_TRACKING_H

#include "server.h"

#define PX_TRACKING_MAX_KEYS 1000000

/* CLIENT TRACKING ON|OFF [REDIRECT id] [OPTIN] [OPTOUT] [NOLOOP]: the reply into c->out. */
void px_tracking_command(px_conn *c, int argc, const resp_arg *argv);
/* Tracking off for c (CLIENT TRACKING OFF, RESET, a closed connection);
 * not tracking: nothing. */
void px_tracking_off(px_conn *c);
/* CLIENT GETREDIR's answer (-1: not tracking, 0: tracking without redirect, else the id). */
long long px_tracking_redir(const px_conn *c);
/* CLIENT TRACKINGINFO's reply into c->out. */
void px_tracking_info(px_conn *c);
/* CLIENT CACHING yes|no (arg): Redis 7.0's errors; the mark lasts until the
 * client's next command other than CLIENT. */
void px_tracking_caching(px_conn *c, const resp_arg *arg);
/* INFO: tracking clients, keys in the table, (key, client) pairs in it. */
size_t px_tracking_clients(void);
size_t px_tracking_keys(void);
size_t px_tracking_items(void);
/* Register the hooks (main.c's feature list). */
void px_tracking_hooks(void);

#endif
