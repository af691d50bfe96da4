/* ab_report.h — the A/B verdict a person reads, and FRONTDOOR REPORT's
 * machine-readable form (issue 18). Module prefix: px_ab_report_, px_ab_.
 *
 * Everything here reads existing measurements, never new ones: the A/B
 * counters and samples of the A/B layer (through the read-only views below,
 * defined in ab_samples.c) and the per-(backend, command)
 * records of proxy/backends.h — the same records INFO commandstats,
 * latencystats, INFO backends and the Prometheus endpoint read, so the
 * latency per command per side agrees with them.
 *
 * The verdict, one line, e.g.
 *   "lmdb answered 99.97 % identically (12 divergences, 340 races of
 *    1,000,000 compared); 2.1× slower at p99 on HGETALL"
 * identical = compared - divergences - races (INFO ab); the latency part
 * compares p99 of the secondary with the primary's per command, among the
 * commands both sides answered at least PX_AB_VERDICT_MIN_CALLS times (all
 * commands both answered when none did), and names the worst ratio. Dropped
 * copies and a stopped mirror are appended when there are any.
 */
#ifndef FRONTDOOR_AB_REPORT_H
#define FRONTDOOR_AB_REPORT_H

#include "server.h"

#define PX_AB_VERDICT_MIN_CALLS 20

/* ------------------------------------------- views of the layer's state (ab_samples.c) */
typedef struct px_ab_sample_view {
    long long   ms;               /* wall clock, unix ms */
    const char *text;             /* the command, printable */
    const char *rep[2];           /* the replies as received (RESP), may be NULL */
    size_t      len[2];
    const char *diff;             /* the key's diff, or NULL */
} px_ab_sample_view;
/* The k-th newest divergence (races 0) or race (races 1): 1, or 0 when
 * there are not that many. The view is valid until the next command. */
int      px_ab_sample_at(int races, unsigned k, px_ab_sample_view *v);
/* Races counted for one command id. */
uint64_t px_ab_races_of(int id);
/* One RESP reply as redis-cli shows it, on one line, into out (NUL-ended,
 * at most max-1 bytes); "(truncated)" when it cannot be read whole. */
void     px_ab_reply_text(const char *r, size_t len, char *out, size_t max);

/* ------------------------------------------------------------- here */
/* The verdict line (no newline) into out; "" when there is nothing to
 * judge (A/B off, or no secondary). */
void px_ab_verdict(char *out, size_t max);
/* FRONTDOOR REPORT JSON: one bulk string holding a JSON object: mode,
 * primary, secondary, verdict, totals, backends[], commands[] (per command:
 * compared, identical, divergences, races, and per side calls, errors,
 * p50_us, p99_us, p999_us), divergences[] and races[] (newest first:
 * ms, command, primary, secondary (replies as redis-cli shows them), diff).
 * bench/ab_report.py turns it into an HTML page. */
void px_ab_report_json(px_conn *c);

#endif
