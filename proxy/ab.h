/* ab.h — A/B routing of application traffic across the primary and a
 * secondary backend (proxy/backends.h). Module prefix: px_ab_.
 *
 * split:  a command goes to the secondary when the hash of its first key (or
 *         of the client id, ab-split-by client) falls under
 *         ab-split-fraction; keyless commands stay on the primary.
 * mirror: every command goes to the primary, whose reply the client gets; a
 *         copy goes to the secondary (reads only with ab-mirror-writes no).
 *         At most ab-mirror-queue copies are in flight to an asynchronous
 *         secondary; beyond that, and when the secondary fails to answer,
 *         copies are dropped and counted. The two replies are compared
 *         (sorted first for order-free replies, see FD_CMD_UNORDERED; not at
 *         all for FD_CMD_NONDET commands). A mismatch is a *race* when
 *         another client wrote one of the command's keys while it was in
 *         flight on either side (the two stores may have applied the writes
 *         in different orders), else a *divergence*. Both are counted per
 *         command and the latest kept with both replies; a divergence also
 *         with the key's state on both sides compared (ab-mismatch-log diff):
 *         FRONTDOOR AB [RACES], FRONTDOOR REPORT, INFO ab, ab-log-file.
 *         Policies: ab-mismatch-log count|reply|diff, ab-stop-after N,
 *         ab-mirror-reads/-writes, ab-mirror-sample (by key hash).
 *         A mirrored command starts when dispatch hands it over; its keys
 *         are tracked until both replies are in.
 */
#ifndef FRONTDOOR_AB_H
#define FRONTDOOR_AB_H

#include "server.h"

/* The routing layer itself is px_route_submit (declared in server.h, where
 * dispatch calls it; px_submit_to hands each side's request to a backend).
 * Everything A/B — split choice, mirror copies, comparison, race tracking,
 * policies — is in ab.c, below that call. */

void px_ab_info(resp_out *o);                   /* INFO ab lines */

/* The A/B counters (INFO ab's), for the metrics endpoint. */
typedef struct px_ab_counts {
    uint64_t mirrored, compared, divergences, races, dropped, secondary_errors, queued, split_secondary, sampled_out;
    int      stopped;
} px_ab_counts;
void px_ab_counters(px_ab_counts *out);
void px_cmd_frontdoor(px_conn *c, int argc, resp_arg *argv);

#endif
