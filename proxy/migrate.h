/* migrate.h — online migration from the primary to the A/B secondary
 * (issue 30, docs/migration.md). Module prefix: px_migrate_.
 *
 * With ab-mode mirror (ab-mirror-writes yes, ab-mirror-sample 1) the mirror
 * applies every new write to the secondary; FRONTDOOR MIGRATE START copies
 * what was there before: SCAN the primary, and per key DUMP + PTTL on the
 * primary, RESTORE ... REPLACE on the secondary. Everything runs on the loop
 * thread through px_backend_call (frontdoor's own requests): nothing blocks,
 * at most MG_WINDOW copies are in flight, a token bucket keeps the copies
 * at or under the RATE (keys/s).
 *
 * Ordering rule (concurrent writes win): a key is "being copied" from the
 * moment its DUMP is issued until the secondary acknowledged its RESTORE.
 * The copy is done again (DUMP re-read) when, in that window, the A/B layer
 * issued a write's copy of the key to the secondary (px_migrate_touch: the
 * key is dirty), or when, as the RESTORE is sent or acknowledged, a mirrored
 * write of the key is still in flight on either side
 * (px_ab_key_writes_inflight). With ab-mirror-order primary (or an embedded
 * primary) a write's copy is issued only after the primary ran it, so the
 * last value the secondary gets is the application's (the proof:
 * docs/migration.md). A copy the mirror dropped or the secondary failed
 * (px_migrate_lost) queues its key for a copy again.
 *
 * Commands (FRONTDOOR MIGRATE ...): START [RATE n] [BATCH n], STATUS,
 * PAUSE, RESUME, RATE n, ABORT, VERIFY [STATUS], CUTOVER [FORCE] (other
 * clients held until the old primary and the mirror are drained, then the
 * switch CONFIG SET ab-mode off backend ... would make), HELP. INFO migrate,
 * the metrics endpoint (px_migrate_metrics), the log (a line per stage),
 * and the state file (migrate-state-file) that resumes a backfill after a
 * restart. */
#ifndef FRONTDOOR_MIGRATE_H
#define FRONTDOOR_MIGRATE_H

#include "server.h"

void px_migrate_cmd(px_conn *c, int argc, resp_arg *argv);   /* FRONTDOOR MIGRATE ... */
void px_migrate_info(resp_out *o);                           /* INFO migrate lines */
/* Prometheus lines (metrics.c): frontdoor_migrate_* */
typedef void (*px_migrate_out_fn)(resp_out *o, const char *fmt, ...);
void px_migrate_metrics(resp_out *o, void (*head)(resp_out *, const char *, const char *, const char *),
                        px_migrate_out_fn out);

/* The A/B layer issued a write's copy to the secondary (cmd with its
 * arguments; borrowed): its keys being copied are marked dirty (a keyless
 * write: all of them). Cheap when no migration runs. */
void px_migrate_touch(const fd_command *cmd, int argc, const resp_arg *argv);
/* A write's copy never reached the secondary (dropped, or the secondary
 * failed it): its keys are copied again (keyless: the backfill starts over).
 * px_migrate_lost_key: one key of it (bytes borrowed). */
void px_migrate_lost(const fd_command *cmd, int argc, const resp_arg *argv);
void px_migrate_lost_key(const char *key, size_t len);
/* 1 while a migration is under way (touch/lost have work). */
int  px_migrate_running(void);

/* Start-up (main.c, after the backends are open): resume a migration the
 * state file says was under way. */
void px_migrate_init(void);

#endif
