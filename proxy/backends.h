/* backends.h — the running backends: the primary, the A/B secondary, and old
 * primaries draining after a live swap. Module prefix: px_backends_ (and
 * px_hist_ for the latency histograms).
 *
 * A backend instance owns a copy of the settings it was opened with (the
 * storage module may keep pointers into them until close). Every request
 * handed to an instance is counted: calls, errors, requests in flight, and
 * two latency histograms (see px_backend). A swap opens the new primary
 * first; new commands go to it at once, the old one stays open until its
 * in-flight requests are answered and its last turn is committed, then it
 * is closed. Nothing here blocks except the backends' own open/close.
 */
#ifndef FRONTDOOR_BACKENDS_H
#define FRONTDOOR_BACKENDS_H

#include <stdint.h>
#include <time.h>
#include "../storage/backend.h"
#include "config.h"
#include "../storage/command.h"

/* Log-linear histogram of durations in ns: 16 buckets per power of two
 * (about 4% resolution), 0 ns .. 2^40 ns (~18 minutes). */
#define PX_HIST_SUB 16
#define PX_HIST_BUCKETS (41 * PX_HIST_SUB)
typedef struct px_hist {
    uint64_t count, sum_ns, max_ns;
    uint32_t b[PX_HIST_BUCKETS];
} px_hist;
static inline unsigned px_hist_index(uint64_t v) {
    if (v < PX_HIST_SUB) return (unsigned)v;
    unsigned msb = 63u - (unsigned)__builtin_clzll(v);          /* >= 4 */
    unsigned i = (msb - 3) * PX_HIST_SUB + ((unsigned)(v >> (msb - 4)) & (PX_HIST_SUB - 1));
    return i < PX_HIST_BUCKETS ? i : PX_HIST_BUCKETS - 1;
}
static inline void px_hist_add(px_hist *h, uint64_t ns) {
    h->count++;
    h->sum_ns += ns;
    if (ns > h->max_ns) h->max_ns = ns;
    h->b[px_hist_index(ns)]++;
}
/* dst += src (bucket by bucket; max is the larger). */
void     px_hist_merge(px_hist *dst, const px_hist *src);
/* The largest value (ns) bucket i holds. */
uint64_t px_hist_bucket_upper(unsigned i);
/* The value at quantile q (0..1), in ns: the upper edge of its bucket. */
uint64_t px_hist_quantile(const px_hist *h, double q);

/* ---------------------------------------------------------------------
 * The one measurement of a command (issue 18). A command is timed once:
 * one clock read when it is dispatched, one when its reply is ready; the
 * span is added once, to ONE record: the (backend, command) record of the
 * backend that answered it, or the proxy's record of the command when the
 * proxy answered it (handler, or refused before reaching a backend).
 * Everything else reads these records:
 *   - INFO commandstats (calls, usec, failed_calls), INFO latencystats and
 *     the Prometheus per-command series: the sum over the proxy's records,
 *     every open backend's client records and the records of closed ones
 *     (px_cmd_total);
 *   - INFO backends / FRONTDOOR REPORT / Prometheus per backend: the sum
 *     over the backend's records (px_backend_refresh);
 *   - FRONTDOOR REPORT's per-command latency per side (px_backend_cmd);
 *   - SLOWLOG, LATENCY and errorstats take the same span and error flag
 *     from the code that updated the record (proxy/slowlog.h).
 * A record is allocated the first time its command is seen (memory grows
 * with the commands used, not the table). Loop thread only.
 */
typedef struct px_cmdstat {
    px_hist  lat;                 /* count = calls, sum_ns = time */
    uint64_t errors;              /* replies that were errors */
} px_cmdstat;

/* Which records a request goes to: a client's command, or frontdoor's own
 * (a mirror copy, a diff read, a script's detached request). */
enum { PX_REC_CLIENT, PX_REC_OWN, PX_REC_KINDS };

/* The slot's record, allocated on first use (NULL: out of memory). */
px_cmdstat *px_cmdstat_new(px_cmdstat **slot);
static inline void px_cmdstat_add(px_cmdstat **slot, uint64_t ns, int is_error) {
    px_cmdstat *s = *slot;
    if (__builtin_expect(!s, 0) && !(s = px_cmdstat_new(slot))) return;
    px_hist_add(&s->lat, ns);
    s->errors += (unsigned)is_error;
}
/* The proxy's records (commands it answered itself), by command id. */
extern px_cmdstat *px_cmd_proxy[FD_CMD_COUNT];
/* A command's totals for INFO commandstats: calls, ns, errors (no merge). */
void px_cmd_sum(int id, uint64_t *calls, uint64_t *ns, uint64_t *errors);
/* A command's latency histogram over every client record (into *out). */
void px_cmd_total(int id, px_hist *out);
/* CONFIG RESETSTAT: forget the client records (commandstats, latencystats;
 * the backends' counters of clients' commands go with them). */
void px_cmdstats_reset(void);

typedef struct px_backend {
    fd_backend  b;                /* what the storage module sees */
    px_settings own;              /* deep copy: `b` was opened from own.be */
    const char *role;             /* "primary", "secondary", "draining" */
    time_t      opened_at;
    uint64_t    inflight;         /* requests handed over and not answered */
    /* the records: per kind (PX_REC_*) and command id; misc: requests
     * without a command of the table (passthrough, blocking retries) */
    px_cmdstat *rec[PX_REC_KINDS][FD_CMD_COUNT];
    px_cmdstat  misc;
    /* asynchronous backends: the part spent waiting (after submit returned) */
    px_hist     wait_live;
    /* A snapshot of the records, made by px_backend_refresh (readers call
     * it first): calls, errors; latency: from the hand-over to the backend
     * until the reply is in the client's buffer; wait: the part spent
     * waiting on the backend (an asynchronous backend: after submit
     * returned; an embedded one: all of it, the store's own work).
     * latency - wait is frontdoor's. */
    uint64_t    calls, errors;
    px_hist     latency, wait;
    /* support() of every command, asked once at open (FD_SERVED or why not) */
    const char *support[FD_CMD_COUNT];
    struct px_backend *next;      /* draining list */
} px_backend;

/* One answered request of `be`: `ns` from dispatch (hand-over) to reply,
 * into the record of (kind, cmd) — cmd NULL: be->misc. */
static inline void px_backend_record(px_backend *be, int kind, const fd_command *cmd, uint64_t ns, int is_error) {
    if (cmd) px_cmdstat_add(&be->rec[kind][cmd->id], ns, is_error);
    else { px_hist_add(&be->misc.lat, ns); be->misc.errors += (unsigned)is_error; }
}
/* Sum be's records into be->calls, errors, latency, wait. */
void px_backend_refresh(px_backend *be);
/* Refresh the primary, the secondary and the draining backends. */
void px_backends_refresh(void);
/* be's histogram of one command (client and own requests), into *out;
 * its error count. */
void px_backend_cmd(const px_backend *be, int id, px_hist *out, uint64_t *errors);

/* Open the backend described by bs (copied), as `role`. NULL with err. */
px_backend *px_backend_open(const px_backend_settings *bs, const char *role, char *err, size_t errlen);
/* Close be (NULL: nothing) and free it; then, on glibc, give the heap's free
 * pages back to the system (malloc_trim): a swap or A/B off is when a
 * backend's traffic leaves holes in the heap. */
void        px_backend_close(px_backend *be);
/* Account for one answered request without a command id at hand (blocking
 * retries): into be->misc (is_error: the reply was an error). */
void        px_backend_account(px_backend *be, uint64_t latency_ns, uint64_t wait_ns, int is_error);

/* Run one command on `be` for frontdoor itself (not a client's): argv[0]
 * names a command of the table, argc <= 8. cb(ud, reply, len) gets the RESP2 reply exactly once — possibly
 * before this returns (an embedded backend, an error) — with an error reply
 * when the backend is NULL, does not serve the command, or fails; the reply
 * is valid only during cb. Counted in be's calls and latency like any
 * request; a network backend is kept open (draining) until it answered. */
typedef void (*px_call_cb)(void *ud, const char *reply, size_t len);
void        px_backend_call(px_backend *be, int argc, const resp_arg *argv, px_call_cb cb, void *ud);

/* Mean time per call spent in frontdoor rather than waiting on the backend, µs. */
double      px_backend_frontdoor_us(const px_backend *be);

/* Start-up: the primary from px_cfg.be, and the A/B secondary if configured. */
int  px_backends_init(char *err, size_t errlen);
/* Reopen the primary from px_cfg.be (CONFIG SET, SIGHUP). A no-op if
 * nothing changed unless force is set. An embedded backend is swapped at
 * once. A network backend is first asked EXISTS of a fixed key: traffic moves to it only
 * once it answered, so a server that cannot be reached leaves the running
 * primary in place (and px_cfg.be is restored). Returns 0 (swapped), -1
 * (not swapped: err says why; px_cfg.be is the caller's to restore) or 1:
 * the probe is in flight; `reply`, if not NULL, is then completed with +OK
 * or the error when it ends (the outcome is logged either way). One swap at
 * a time. */
int  px_backends_swap(int force, fd_pending *reply, char *err, size_t errlen);
/* Make the secondary match px_cfg.ab_mode / px_cfg.ab (opened, reopened or
 * closed). On failure the running A/B setup stays. */
int  px_backends_ab_apply(char *err, size_t errlen);
/* End of a loop turn. before_flush: commit every backend whose replies go
 * to clients (primary, draining, a split secondary); returns FD_OK or the
 * first failure. after_flush: commit the mirror secondary and close drained
 * backends. */
int  px_backends_commit_before_flush(void);
void px_backends_after_flush(void);
void px_backends_cron(int64_t now_ms);
/* notify-keyspace-events changed to `flags` (PX_NOTIFY_* bits): forwarded
 * to the primary when it is a Redis server (fd_backend_ops.notify_set). */
void px_backends_notify(int flags);
void px_backends_shutdown(void);

#endif
