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
 * units:  a transaction (EXEC) or a script (EVAL & co., FCALL) is mirrored
 *         and compared as one unit: the secondary runs it whole on its own
 *         atomic mechanism (a Redis server: MULTI...EXEC as one block / the
 *         script forwarded; an embedded store: one loop step; mongodb: other
 *         clients held until its replies are in; a script: frontdoor's Lua
 *         engine against the secondary); an EXEC's replies are compared per
 *         queued command, and a mismatch names the first that differs. The
 *         keys of all its commands are tracked for races. In split mode a
 *         unit goes wholly to one side (its first key's, or the client's).
 * order:  ab-mirror-order primary (default): with a network primary, a
 *         copy is sent to the secondary when the primary's reply arrives
 *         (not when dispatch hands the command over), so the secondary
 *         applies different clients' writes to one key in the order the
 *         primary acknowledged them; units and scripts go at dispatch.
 *         dispatch: every copy goes when dispatch hands the command over.
 *         One client's copies keep its order either way.
 * calibration: FRONTDOOR AB CALIBRATE n: the next n mirrored reads are asked
 *         of the primary twice instead (writes still mirrored); mismatches
 *         count as noise per command. Afterwards a command whose noise is
 *         above 1 % of its calibrated reads has its mismatches counted as
 *         "noisy", apart from divergences.
 */
#ifndef FRONTDOOR_AB_H
#define FRONTDOOR_AB_H

#include "server.h"

/* The routing layer itself is the route hook (hooks.h, where
 * dispatch calls it while a secondary is open; px_call hands each side's
 * request to a backend).
 * Everything A/B — split choice, mirror copies, comparison, race tracking,
 * policies — is in ab.c and its ab_*.c files (ab_int.h), below that call. */

void px_ab_info(resp_out *o);                   /* INFO ab lines */

/* 1 when A/B routes commands (split or mirror with a secondary): scripts and
 * SCRIPT/FUNCTION go through px_forward then (the layer picks the side and
 * runs the copy). */
int px_ab_routes(void);

/* EXEC as a unit (multi.c). px_ab_exec_begin: where the EXEC of c with n
 * queued commands runs (the primary; split: the side of its first key or of
 * the client) and, in mirror mode, the unit compared as one (the commands
 * are copied). Then for each queued command i: px_ab_exec_step(i) before it
 * runs and px_ab_exec_local(i, reply) after, with the bytes it appended to
 * c->out (taken only when the proxy served it: a backend's reply reaches the
 * layer itself). On a Redis primary px_ab_exec_tap() is the tap of EXEC's
 * forwarded reply (NULL when not mirrored). px_ab_exec_end(c) sends the unit
 * to the secondary; call it before px_atomic_end. One EXEC at a time. */
typedef struct px_unit_cmd { fd_command *cmd; int argc; resp_arg *argv; } px_unit_cmd;
struct px_backend *px_ab_exec_begin(px_conn *c, int n, const px_unit_cmd *q);
void px_ab_exec_step(int i);
void px_ab_exec_local(int i, const char *reply, size_t len);
const px_tap *px_ab_exec_tap(void);
void px_ab_exec_end(px_conn *c);

/* 1 when a mirrored write naming key (or a keyless write) is in flight on
 * either side (the race tracking's count; migrate.c). */
int px_ab_key_writes_inflight(const char *key, size_t len);

/* The A/B counters (INFO ab's), for the metrics endpoint. */
typedef struct px_ab_counts {
    uint64_t mirrored, compared, divergences, races, dropped, secondary_errors, queued, split_secondary, sampled_out;
    int      stopped;
    uint64_t noisy;            /* mismatches of commands calibration found noisy (not divergences) */
    uint64_t deferred;         /* copies sent when the primary answered (ab-mirror-order primary) */
    uint64_t units;            /* EXECs mirrored as one unit (also in mirrored) */
    long long calibrate_left;  /* calibration reads still to ask (FRONTDOOR AB CALIBRATE) */
} px_ab_counts;
void px_ab_counters(px_ab_counts *out);

/* Register the A/B layer's hooks (hooks.h: the router): main.c, once at start-up. */
void px_ab_hooks(void);

#endif
