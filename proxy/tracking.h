/* tracking.h — client-side caching: CLIENT TRACKING (Redis 7.0's default
 * and broadcasting modes, with NOLOOP and REDIRECT). Module prefix: px_tracking_.
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
 * only (except) when CLIENT CACHING yes (no) came just before it.
 *
 * BCAST [PREFIX p]...: the client's reads are not remembered; instead every
 * key written that starts with one of its prefixes ("" without PREFIX) is
 * sent to it, the keys of one loop turn in one message per prefix (sorted,
 * each once; NOLOOP: without the keys it wrote last), at the end of the turn
 * before the commit (hook turn_start), as Redis 7.0 does in beforeSleep.
 * Redis's errors for overlapping prefixes and mixed modes; INFO's
 * tracking_total_prefixes counts the prefix table.
 *
 * Bounds: the key table holds at most tracking-table-max-keys keys (config
 * directive, Redis 7.0's default 1000000, 0 = no limit): over it, random
 * keys are forgotten with their invalidations at the end of the turn, at
 * most 100 × (turns in a row it was over + 1) per turn, as Redis's
 * trackingLimitUsedSlots (a read may overshoot it until then). A prefix's
 * written keys are held for one turn only. The prefix table holds the
 * prefixes of the BCAST clients (a prefix goes with its last client).
 * Hooks exec_done and closed are armed only while a client tracks;
 * turn_start only while BCAST keys wait or the table is over its limit
 * (nobody in BCAST: one count tested per write).
 * Loop thread only.
 */
#ifndef FRONTDOOR_TRACKING_H
#define FRONTDOOR_TRACKING_H

#include "server.h"

/* CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST] [PREFIX p]... [OPTIN] [OPTOUT]
 * [NOLOOP]: the reply into c->out (Redis 7.0's errors; overlapping prefixes:
 * the error only, nothing changed — Redis 7.0 answers a collision between
 * two provided prefixes after the first with the error and +OK). */
void px_tracking_command(px_conn *c, int argc, const resp_arg *argv);
/* A write by c that bypasses the command hooks (a transaction's command
 * forwarded to a Redis backend in its MULTI block, proxy/multi.c; a script
 * a Redis backend runs, proxy/scripting.c): its keys invalidated and noted
 * for BCAST as if it ran (a FLUSHALL/FLUSHDB: the null to all; EVAL,
 * EVALSHA, FCALL: every key it declares, the safe side). Not a write, or
 * nobody tracks: nothing. */
void px_tracking_write(px_conn *c, const fd_command *cmd, int argc, const resp_arg *argv);
/* Tracking off for c (CLIENT TRACKING OFF, RESET, a closed connection);
 * not tracking: nothing. */
void px_tracking_off(px_conn *c);
/* CLIENT GETREDIR's answer (-1: not tracking, 0: tracking without redirect, else the id). */
long long px_tracking_redir(const px_conn *c);
/* CLIENT LIST/INFO's tracking flags for c, in Redis 7.0's order: "t"
 * tracking, then "R" its redirect found broken, "B" broadcasting; "" when
 * not tracking. A static string. */
const char *px_tracking_list_flags(const px_conn *c);
/* CLIENT TRACKINGINFO's reply into c->out. */
void px_tracking_info(px_conn *c);
/* CLIENT CACHING yes|no (arg): Redis 7.0's errors; the mark lasts until the
 * client's next command other than CLIENT. */
void px_tracking_caching(px_conn *c, const resp_arg *arg);
/* INFO: tracking clients, keys in the table, (key, client) pairs in it,
 * BCAST prefixes. */
size_t px_tracking_clients(void);
size_t px_tracking_keys(void);
size_t px_tracking_items(void);
size_t px_tracking_prefixes(void);
/* Register the hooks (main.c's feature list). */
void px_tracking_hooks(void);

#endif
