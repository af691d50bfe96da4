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
 *         all for FD_CMD_NONDET commands); mismatches are counted per command
 *         and the latest ones kept with both replies (FRONTDOOR AB, INFO ab,
 *         ab-log-file).
 */
#ifndef FRONTDOOR_AB_H
#define FRONTDOOR_AB_H

#include "server.h"

typedef struct px_ab_pair px_ab_pair;

/* split: 1 if this command goes to the secondary. */
int px_ab_split_to_secondary(px_conn *c, const fd_command *cmd, int argc, resp_arg *argv);

/* mirror: a comparison record for this command if it is to be mirrored,
 * NULL if not (not mirrored, or dropped: queue full). The command's text is
 * copied (the arguments are valid only during dispatch). */
px_ab_pair *px_ab_begin(fd_command *cmd, int argc, resp_arg *argv);
/* One side's reply (side 0 primary, 1 secondary); `failed`: the side could
 * not answer (unavailable, timeout: not compared, counted as a drop). The
 * pair is compared and freed once both sides are in. */
void px_ab_record(px_ab_pair *p, int side, const char *reply, size_t len, int failed);

void px_ab_info(resp_out *o);                   /* INFO ab lines */
void px_cmd_frontdoor(px_conn *c, int argc, resp_arg *argv);

#endif
