/* migrate.c — online migration, primary → A/B secondary (migrate.h,
 * docs/migration.md): the backfill (SCAN + DUMP/PTTL → RESTORE REPLACE),
 * the dirty-key rule that lets concurrent writes win, VERIFY (a per-key
 * digest of both sides), the throttle, the state file, INFO migrate and the
 * metrics. Loop thread only; every request is px_backend_call's. */
#include "migrate.h"
#include "ab.h"
#include "backends.h"
#include "config.h"
#include "log.h"
#include "multi.h"
#include "strmap.h"
#include "../storage/value/rdb.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define MG_WINDOW 64            /* copies (or verify checks) in flight at once */
#define MG_PER_PUMP 256         /* copies started per pump: an embedded pair never holds the loop long */
#define MG_TICK 0.002           /* s: the throttle's, the probes' and the next batch's timer */
#define MG_PROBE_MS 500         /* destination down: probed this often */
#define MG_REQUEUE_MAX 100000   /* keys queued for a copy again; beyond: the backfill starts over */
#define MG_SAMPLES 16           /* failed / differing / missing / extra keys kept for STATUS */
#define MG_TTL_SLACK_MS 2000    /* VERIFY: TTLs closer than this are the same */
#define MG_SAVE_MS 100          /* the state file is rewritten at most this often between batches */
#define MG_UNAVAILABLE "-ERR backend unavailable"

#define MG_CUTOVER_MS 5000     /* the cutover's drain: clients held at most this long, then it gives up */

enum { MG_IDLE, MG_BACKFILL, MG_PAUSED, MG_WAITING, MG_SYNCED, MG_CUTOVER, MG_DONE, MG_ABORTED };
static const char *const stage_names[] = {"idle", "backfill", "paused", "waiting", "synced", "cutover", "done", "aborted"};

/* A key queued (owned bytes). */
typedef struct mg_key { char *p; size_t n; } mg_key;

/* A FIFO of keys: a growable ring. Bounded by its users: one SCAN reply at
 * a time, plus at most MG_REQUEUE_MAX keys copied again. */
typedef struct mg_queue { mg_key *v; size_t head, count, cap; } mg_queue;

static int q_push(mg_queue *q, const char *p, size_t n, int front) {
    if (q->count == q->cap) {
        size_t ncap = q->cap ? q->cap * 2 : 256;
        mg_key *nv = malloc(ncap * sizeof *nv);
        if (!nv) return -1;
        for (size_t i = 0; i < q->count; i++) nv[i] = q->v[(q->head + i) % q->cap];
        free(q->v);
        q->v = nv;
        q->cap = ncap;
        q->head = 0;
    }
    char *k = malloc(n ? n : 1);
    if (!k) return -1;
    memcpy(k, p, n);
    if (front) {
        q->head = (q->head + q->cap - 1) % q->cap;
        q->v[q->head] = (mg_key){k, n};
    } else {
        q->v[(q->head + q->count) % q->cap] = (mg_key){k, n};
    }
    q->count++;
    return 0;
}

static mg_key q_pop(mg_queue *q) {
    mg_key k = q->v[q->head];
    q->head = (q->head + 1) % q->cap;
    q->count--;
    return k;
}

static void q_clear(mg_queue *q) {
    while (q->count) free(q_pop(q).p);
    free(q->v);
    memset(q, 0, sizeof *q);
}

/* One key being copied: from its DUMP until the secondary acknowledged its
 * RESTORE (the copying map holds it by key). */
typedef struct mg_copy {
    uint64_t gen;               /* the migration it belongs to (a stale one's replies are dropped) */
    int      dirty;             /* a write's copy touched the key meanwhile: copy it again */
    int      wait;              /* replies outstanding (DUMP, PTTL) */
    char    *payload;           /* the DUMP (NULL: the key is gone) */
    size_t   plen;
    long long pttl;
    char    *err;               /* the primary's error, if any */
    px_strent *e;               /* its entry in mg.copying */
} mg_copy;

/* A kept report line: a key and why. */
typedef struct mg_sample { char *key; char *why; } mg_sample;

typedef struct mg_samples { mg_sample v[MG_SAMPLES]; unsigned next, count; } mg_samples;

static void sample_add(mg_samples *s, const char *key, size_t klen, const char *why) {
    mg_sample *x = &s->v[s->next];
    free(x->key);
    free(x->why);
    x->key = malloc(klen + 1);
    if (x->key) { memcpy(x->key, key, klen); x->key[klen] = 0; }
    x->why = strdup(why ? why : "");
    s->next = (s->next + 1) % MG_SAMPLES;
    if (s->count < MG_SAMPLES) s->count++;
}

static void samples_clear(mg_samples *s) {
    for (unsigned i = 0; i < MG_SAMPLES; i++) { free(s->v[i].key); free(s->v[i].why); }
    memset(s, 0, sizeof *s);
}

/* VERIFY: one key compared on both sides. */
typedef struct mg_check {
    uint64_t gen;
    int      wait, phase, recheck;
    uint64_t dig[2];
    int      exists[2], bad[2];
    long long pttl[2];
    size_t   klen;
    char     key[];
} mg_check;

static struct {
    int       stage, resume_stage;       /* resume_stage: what WAITING returns to */
    uint64_t  gen;
    long long rate;                      /* keys/s; 0 = no limit */
    long long batch;                     /* SCAN COUNT */
    double    tokens;
    int64_t   last_ns;
    char      cursor[32];                /* the next SCAN's cursor */
    int       scan_inflight, scan_done, rescan;
    mg_queue  queue;
    px_strmap copying;
    int       inflight;
    int       pumping, repump;
    ev_timer  timer;
    int64_t   probe_at_ms;
    int64_t   saved_ms;                  /* the state file's last rewrite between batches */
    int       probe_inflight;
    char      waiting_why[200];
    /* counters */
    uint64_t  copied, bytes, failed, recopied, vanished, lost, scanned, total_keys;
    int64_t   started_ms, synced_ms, stage_ms;
    double    rate_ewma;                 /* keys/s measured */
    uint64_t  rate_last_copied;
    int64_t   rate_last_ms;
    mg_samples fails;
    /* CUTOVER */
    struct {
        int          phase;              /* 0 none, 1 draining (clients held), 2 the swap's probe in flight */
        int64_t      deadline_ms;
        fd_pending  *owed;               /* the CUTOVER reply */
        px_settings  old;                /* px_cfg before the switch (for a rollback) */
        px_backend_settings target;      /* the new primary's settings */
    } co;
    /* VERIFY */
    struct {
        int       running, phase, scan_inflight, scan_done, inflight;
        char      cursor[32];
        mg_queue  queue, recheck;
        uint64_t  checked, same, differ, missing, extra;
        int64_t   started_ms, ended_ms;
        mg_samples diffs;
    } vf;
} mg;

int px_migrate_running(void) { return mg.stage != MG_IDLE && mg.stage != MG_DONE && mg.stage != MG_ABORTED; }

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void pump(void);
static void vf_pump(void);
static void state_save(void);

static void set_stage(int st, const char *why) {
    if (mg.stage == st) return;
    mg.stage = st;
    mg.stage_ms = now_ms();
    px_log(st == MG_WAITING || st == MG_ABORTED ? PX_LOG_WARNING : PX_LOG_NOTICE,
           "migrate: %s%s%s (copied %llu keys, %llu bytes, %llu failed)", stage_names[st], why ? ": " : "", why ? why : "",
           (unsigned long long)mg.copied, (unsigned long long)mg.bytes, (unsigned long long)mg.failed);
    state_save();
}

/* ------------------------------------------------------------ RESP2 reading */

/* A line's integer after the type byte at r (r[0] is the type); the bytes
 * after its CRLF in *next. -1 when malformed. */
static int rd_int(const char *r, const char *end, long long *v, const char **next) {
    const char *e = memchr(r, '\r', (size_t)(end - r));
    if (!e || e + 1 >= end || r + 1 >= e) return -1;
    if (resp_str2ll(r + 1, (size_t)(e - r - 1), v)) return -1;
    *next = e + 2;
    return 0;
}

/* A bulk at r: *p, *n (n = -1: nil); *next after it. -1 when malformed. */
static int rd_bulk(const char *r, const char *end, const char **p, long long *n, const char **next) {
    if (r >= end || r[0] != '$' || rd_int(r, end, n, next)) return -1;
    if (*n < 0) { *p = NULL; return 0; }
    if (*next + *n + 2 > end) return -1;
    *p = *next;
    *next += *n + 2;
    return 0;
}

/* The error line of an error reply, without its CRLF, at most max-1 bytes. */
static void err_text(const char *r, size_t len, char *out, size_t max) {
    size_t l = len;
    while (l && (r[l - 1] == '\r' || r[l - 1] == '\n')) l--;
    if (l && r[0] == '-') { r++; l--; }
    if (l >= max) l = max - 1;
    memcpy(out, r, l);
    out[l] = 0;
}

static int is_unavailable(const char *r, size_t len) {
    return len >= sizeof MG_UNAVAILABLE - 1 && !memcmp(r, MG_UNAVAILABLE, sizeof MG_UNAVAILABLE - 1);
}

/* -------------------------------------------------------------- state file */

static const char *state_path(char *buf, size_t len) {
    if (px_cfg.migrate_state_file && px_cfg.migrate_state_file[0]) return px_cfg.migrate_state_file;
    snprintf(buf, len, "%s.migrate-state", px_cfg.be.dir && px_cfg.be.dir[0] ? px_cfg.be.dir : "frontdoor-data");
    return buf;
}

/* One line, rewritten (tmp + rename) at each stage and each SCAN batch
 * done: "frontdoor-migrate 1 <stage> <cursor> <rate> <batch> <copied> <bytes> <failed>". */
static void state_save(void) {
    char pb[1100], tmp[1200];
    const char *path = state_path(pb, sizeof pb);
    if (mg.stage == MG_IDLE) return;
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) { px_log(PX_LOG_WARNING, "migrate: cannot write %s: %s", tmp, strerror(errno)); return; }
    int st = mg.stage == MG_WAITING ? mg.resume_stage : mg.stage;
    fprintf(f, "frontdoor-migrate 1 %s %s %lld %lld %llu %llu %llu\n", stage_names[st], mg.cursor, mg.rate, mg.batch,
            (unsigned long long)mg.copied, (unsigned long long)mg.bytes, (unsigned long long)mg.failed);
    if (fclose(f) || rename(tmp, path)) px_log(PX_LOG_WARNING, "migrate: cannot write %s: %s", path, strerror(errno));
}

/* ------------------------------------------------------------------ timer */

static void tick(struct ev_loop *loop, ev_timer *w, int revents);

static void timer_on(void) {
    if (ev_is_active(&mg.timer)) return;
    ev_timer_init(&mg.timer, tick, MG_TICK, MG_TICK);
    ev_timer_start(px_srv.loop, &mg.timer);
}

static void timer_off(void) {
    if (ev_is_active(&mg.timer)) ev_timer_stop(px_srv.loop, &mg.timer);
}

/* ------------------------------------------------------------ the backfill */

static void copy_start(const char *k, size_t n);

static void copy_free(mg_copy *cp) {
    free(cp->payload);
    free(cp->err);
    free(cp);
}

/* Leave the copying map; the copy is over. */
static void copy_end(mg_copy *cp) {
    if (cp->e) px_strmap_del(&mg.copying, cp->e);
    cp->e = NULL;
    mg.inflight--;
    copy_free(cp);
}

/* The destination (or the source) does not answer: the key goes back to
 * the head of the queue and the backfill waits, probing. */
static void go_waiting(const char *why) {
    if (mg.stage != MG_WAITING) {
        mg.resume_stage = mg.stage == MG_PAUSED ? MG_PAUSED : mg.stage;
        snprintf(mg.waiting_why, sizeof mg.waiting_why, "%s", why);
        mg.probe_at_ms = now_ms() + MG_PROBE_MS;
        set_stage(MG_WAITING, mg.waiting_why);
    }
}

static void on_restore(void *ud, const char *r, size_t len) {
    mg_copy *cp = ud;
    if (cp->gen != mg.gen) { copy_free(cp); return; }
    const char *k = cp->e->name;
    size_t kn = cp->e->len;
    if (len && r[0] == '-') {
        char why[300];
        err_text(r, len, why, sizeof why);
        if (is_unavailable(r, len)) {
            q_push(&mg.queue, k, kn, 1);
            copy_end(cp);
            go_waiting(why);
            return;
        }
        /* the destination cannot hold it: reported, never skipped silently */
        mg.failed++;
        sample_add(&mg.fails, k, kn, why);
        if (mg.failed <= 100 || mg.failed % 1000 == 0)
            px_log(PX_LOG_WARNING, "migrate: key '%.*s' (%zu bytes) not copied: %s (%llu failed so far)",
                   (int)(kn > 200 ? 200 : kn), k, cp->plen, why, (unsigned long long)mg.failed);
        copy_end(cp);
    } else if (cp->dirty || px_ab_key_writes_inflight(k, kn)) {
        /* a write's copy reached the secondary while the copy was under way: the
         * value may be older than it; read it again */
        mg.recopied++;
        if (q_push(&mg.queue, k, kn, 0)) mg.rescan = 1;   /* again, behind the queue (and the throttle) */
        copy_end(cp);
    } else {
        mg.copied++;
        mg.bytes += cp->plen + kn;
        copy_end(cp);
    }
    pump();
}

/* DUMP and PTTL are in: RESTORE on the secondary, or done. */
static void copy_restore(mg_copy *cp) {
    const char *k = cp->e->name;
    size_t kn = cp->e->len;
    if (cp->err) {
        if (!strncmp(cp->err, MG_UNAVAILABLE + 1, sizeof MG_UNAVAILABLE - 2)) {
            q_push(&mg.queue, k, kn, 1);
            char why[300];
            snprintf(why, sizeof why, "primary: %s", cp->err);
            copy_end(cp);
            go_waiting(why);
            return;
        }
        mg.failed++;
        char why[300];
        snprintf(why, sizeof why, "reading it from the primary: %s", cp->err);
        sample_add(&mg.fails, k, kn, why);
        px_log(PX_LOG_WARNING, "migrate: key '%.*s' not copied: %s", (int)(kn > 200 ? 200 : kn), k, why);
        copy_end(cp);
        pump();
        return;
    }
    if (!cp->payload || cp->pttl == -2) {
        /* gone on the primary (deleted or expired: the mirror carries a DEL) */
        if (cp->dirty) { on_restore(cp, "+OK\r\n", 5); return; }
        mg.vanished++;
        copy_end(cp);
        pump();
        return;
    }
    /* a mirrored write of the key still in flight may reach the secondary
     * after the RESTORE (a secondary that does not keep one key's requests
     * in order across its connections: redis-cluster), or have run on the
     * primary before the DUMP with its reply still on the way (another pooled
     * connection): the copy is done again after it */
    if (px_ab_key_writes_inflight(k, kn)) cp->dirty = 1;
    char ttl[24];
    int tl = snprintf(ttl, sizeof ttl, "%lld", cp->pttl > 0 ? cp->pttl : 0);
    resp_arg argv[5] = {{"RESTORE", 7}, {(char *)k, kn}, {ttl, (size_t)tl}, {cp->payload, cp->plen}, {"REPLACE", 7}};
    px_backend_call(px_srv.secondary, 5, argv, on_restore, cp);
}

static void on_dump(void *ud, const char *r, size_t len) {
    mg_copy *cp = ud;
    if (cp->gen == mg.gen) {
        const char *p, *next;
        long long n;
        if (len && r[0] == '-') {
            char why[300];
            err_text(r, len, why, sizeof why);
            free(cp->err);
            cp->err = strdup(why);
        } else if (!rd_bulk(r, r + len, &p, &n, &next) && n >= 0 && (cp->payload = malloc(n ? (size_t)n : 1))) {
            memcpy(cp->payload, p, (size_t)n);
            cp->plen = (size_t)n;
        }
    }
    if (--cp->wait == 0) {
        if (cp->gen != mg.gen) copy_free(cp);
        else copy_restore(cp);
    }
}

static void on_pttl(void *ud, const char *r, size_t len) {
    mg_copy *cp = ud;
    long long v;
    const char *next;
    if (cp->gen == mg.gen && len && r[0] == ':' && !rd_int(r, r + len, &v, &next)) cp->pttl = v;
    if (--cp->wait == 0) {
        if (cp->gen != mg.gen) copy_free(cp);
        else copy_restore(cp);
    }
}

/* Copy key k (borrowed): DUMP and PTTL on the primary, in that order. */
static void copy_start(const char *k, size_t n) {
    int created;
    px_strent *e = px_strmap_add(&mg.copying, k, n, sizeof(mg_copy *), &created);
    if (!e) { mg.failed++; sample_add(&mg.fails, k, n, "out of memory"); return; }
    if (!created) {                      /* already being copied: that copy reads it again */
        (*(mg_copy **)px_strmap_data(e))->dirty = 1;
        return;
    }
    mg_copy *cp = calloc(1, sizeof *cp);
    if (!cp) { px_strmap_del(&mg.copying, e); mg.failed++; sample_add(&mg.fails, k, n, "out of memory"); return; }
    cp->gen = mg.gen;
    cp->e = e;
    cp->pttl = -1;
    *(mg_copy **)px_strmap_data(e) = cp;
    mg.inflight++;
    cp->wait = 2;
    resp_arg a1[2] = {{"DUMP", 4}, {e->name, e->len}};
    px_backend_call(px_srv.primary, 2, a1, on_dump, cp);
    resp_arg a2[2] = {{"PTTL", 4}, {e->name, e->len}};
    px_backend_call(px_srv.primary, 2, a2, on_pttl, cp);
}

static void on_scan(void *ud, const char *r, size_t len) {
    uint64_t gen = (uint64_t)(uintptr_t)ud;
    if (gen != mg.gen) return;
    mg.scan_inflight = 0;
    const char *end = r + len, *next, *p;
    long long n, cn;
    if (len && r[0] == '-') {
        char why[300];
        err_text(r, len, why, sizeof why);
        if (is_unavailable(r, len)) { go_waiting(why); return; }
        px_log(PX_LOG_WARNING, "migrate: SCAN on the primary failed: %s", why);
        set_stage(MG_ABORTED, "SCAN failed");
        return;
    }
    if (len < 4 || r[0] != '*' || rd_bulk(r + 4, end, &p, &cn, &next) || cn < 0 || cn >= (long long)sizeof mg.cursor ||
        next >= end || next[0] != '*' || rd_int(next, end, &n, &next)) {
        set_stage(MG_ABORTED, "SCAN reply malformed");
        return;
    }
    memcpy(mg.cursor, p, (size_t)cn);
    mg.cursor[cn] = 0;
    for (long long i = 0; i < n; i++) {
        const char *kp;
        long long kn;
        if (rd_bulk(next, end, &kp, &kn, &next) || kn < 0) break;
        mg.scanned++;
        if (q_push(&mg.queue, kp, (size_t)kn, 0)) { mg.rescan = 1; break; }
    }
    if (!strcmp(mg.cursor, "0")) mg.scan_done = 1;
    pump();
}

static void on_dbsize(void *ud, const char *r, size_t len) {
    long long v;
    const char *next;
    if ((uint64_t)(uintptr_t)ud == mg.gen && len && r[0] == ':' && !rd_int(r, r + len, &v, &next) && v >= 0)
        mg.total_keys = (uint64_t)v;
}

/* Start what may start: copies from the queue (within the window and the
 * throttle), the next SCAN batch once the last one is done, the stage's end. */
static void pump(void) {
    if (mg.pumping) { mg.repump = 1; return; }
    mg.pumping = 1;
    do {
        mg.repump = 0;
        if (mg.stage != MG_BACKFILL && mg.stage != MG_SYNCED) break;
        if (!px_srv.secondary || !px_srv.primary) { set_stage(MG_ABORTED, "the A/B secondary was closed"); break; }
        int started = 0;
        while (mg.queue.count && mg.inflight < MG_WINDOW && started < MG_PER_PUMP && (!mg.rate || mg.tokens >= 1.0)) {
            mg_key k = q_pop(&mg.queue);
            if (mg.rate) mg.tokens -= 1.0;
            copy_start(k.p, k.n);
            free(k.p);
            started++;
            if (mg.stage != MG_BACKFILL && mg.stage != MG_SYNCED) break;
        }
        if (mg.stage != MG_BACKFILL && mg.stage != MG_SYNCED) break;
        if (mg.queue.count || mg.inflight || mg.scan_inflight) break;
        /* every key of the batches so far is copied: the cursor is safe to resume from */
        if (!mg.scan_done) {
            int64_t ms = now_ms();
            if (ms - mg.saved_ms >= MG_SAVE_MS) { state_save(); mg.saved_ms = ms; }   /* an older cursor is safe too */
            mg.scan_inflight = 1;
            char count[24];
            int cl = snprintf(count, sizeof count, "%lld", mg.batch);
            resp_arg argv[4] = {{"SCAN", 4}, {mg.cursor, strlen(mg.cursor)}, {"COUNT", 5}, {count, (size_t)cl}};
            px_backend_call(px_srv.primary, 4, argv, on_scan, (void *)(uintptr_t)mg.gen);
            continue;
        }
        if (mg.rescan) {                 /* keys lost beyond what the queue holds: a second pass */
            mg.rescan = 0;
            mg.scan_done = 0;
            strcpy(mg.cursor, "0");
            if (mg.stage == MG_SYNCED) set_stage(MG_BACKFILL, "copies were lost beyond the requeue bound: scanning again");
            continue;
        }
        if (mg.stage == MG_BACKFILL) {
            mg.synced_ms = now_ms();
            set_stage(MG_SYNCED, "backfill done, the mirror keeps the secondary in step");
        }
    } while (mg.repump);
    mg.pumping = 0;
}

/* ----------------------------------------------------------------- VERIFY */

/* A digest of one value that does not depend on its encoding: strings and
 * lists in order, sets, hashes and sorted sets as an order-free sum,
 * streams by content in order (dig_sentry...). */
typedef struct mg_dig { uint64_t ordered, sum; uint64_t n; } mg_dig;

static uint64_t mix(uint64_t h) {
    h ^= h >> 33; h *= 0xff51afd7ed558ccdull; h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53ull; h ^= h >> 33;
    return h;
}

static int dig_item(void *ctx, int type, const fd_rdb_item *it) {
    mg_dig *d = ctx;
    uint64_t h = fd_crc64(0, it->p, it->n);
    h = mix(h ^ (uint64_t)it->n);
    if (type == FD_RDB_HASH) h = mix(h ^ fd_crc64(0x5a5a, it->v, it->vn) ^ (uint64_t)it->vn * 31);
    if (type == FD_RDB_ZSET) {
        char sc[40];
        int l = snprintf(sc, sizeof sc, "%.17g", it->score);
        h = mix(h ^ fd_crc64(0xa5a5, sc, (size_t)l));
    }
    if (type == FD_RDB_STRING || type == FD_RDB_LIST) d->ordered = mix(d->ordered * 1099511628211ull ^ h);
    else d->sum += h;
    d->n++;
    return 0;
}

/* A stream's digest: its entries, metadata, groups, consumers and pending
 * entries in payload order (not its listpack bytes, which differ after
 * deletions between a Redis and frontdoor's own DUMP). */
static void dig_bytes(mg_dig *d, const void *p, size_t n) {
    d->ordered = mix(d->ordered * 1099511628211ull ^ fd_crc64(0, p, n) ^ (uint64_t)n);
    d->n++;
}

static void dig_u64s(mg_dig *d, const uint64_t *v, size_t k) {
    for (size_t i = 0; i < k; i++) d->ordered = mix(d->ordered * 1099511628211ull ^ v[i]);
}

static int dig_sentry(void *ctx, fd_rdb_sid id, const fd_rdb_item *fv, size_t nf) {
    uint64_t v[3] = {id.ms, id.seq, nf};
    dig_u64s(ctx, v, 3);
    for (size_t i = 0; i < nf; i++) {
        dig_bytes(ctx, fv[i].p, fv[i].n);
        dig_bytes(ctx, fv[i].v, fv[i].vn);
    }
    return 0;
}

static int dig_snode(void *ctx, fd_rdb_sid master, const fd_rdb_item *mf, size_t nmf, uint64_t live,
                     uint64_t deleted, size_t lp_bytes, fd_rdb_sid last) {
    (void)ctx; (void)master; (void)mf; (void)nmf; (void)live; (void)deleted; (void)lp_bytes; (void)last;
    return 0;
}

static int dig_sinfo(void *ctx, const fd_rdb_stream_info *m) {
    uint64_t v[9] = {m->length, m->added, m->groups, m->last.ms, m->last.seq, m->first.ms, m->first.seq,
                     m->maxdel.ms, m->maxdel.seq};
    dig_u64s(ctx, v, 9);
    return 0;
}

static int dig_sgroup(void *ctx, const char *name, size_t nl, fd_rdb_sid last, int64_t er, uint64_t npel,
                      uint64_t ncons) {
    uint64_t v[5] = {last.ms, last.seq, (uint64_t)er, npel, ncons};
    dig_bytes(ctx, name, nl);
    dig_u64s(ctx, v, 5);
    return 0;
}

static int dig_scons(void *ctx, const char *name, size_t nl, int64_t seen, uint64_t npel) {
    uint64_t v[2] = {(uint64_t)seen, npel};
    dig_bytes(ctx, name, nl);
    dig_u64s(ctx, v, 2);
    return 0;
}

static int dig_snack(void *ctx, fd_rdb_sid id, int64_t dtime, uint64_t count) {
    uint64_t v[4] = {id.ms, id.seq, (uint64_t)dtime, count};
    dig_u64s(ctx, v, 4);
    return 0;
}

/* The digest of a DUMP payload: 0 and *out, or -1 when it does not load. */
static int payload_digest(const char *p, size_t n, uint64_t *out) {
    mg_dig d = {0x12345, 0, 0};
    int type;
    if (fd_rdb_verify(p, n) || fd_rdb_load(p, n, &type, dig_item, &d)) return -1;
    if (type == FD_RDB_STREAM) {
        fd_rdb_stream_sink sk = {&d, dig_sentry, dig_snode, dig_sinfo, dig_sgroup, dig_scons, dig_snack};
        if (fd_rdb_stream_load(p, n, &sk)) return -1;
    }
    *out = mix(d.ordered ^ mix(d.sum + (uint64_t)type * 0x9e3779b97f4a7c15ull) ^ d.n);
    return 0;
}

static void vf_free(mg_check *k) { free(k); }

static void vf_end(mg_check *k) {
    mg.vf.inflight--;
    vf_free(k);
}

static void vf_verdict(mg_check *k) {
    const char *why = NULL;
    char buf[160];
    if (k->phase == 1 && !k->bad[0] && k->exists[0]) { vf_end(k); return; }   /* checked with the primary's keys */
    if (k->bad[0] || k->bad[1]) why = "a DUMP did not load or an error";
    else if (k->phase == 0 && k->exists[0] && !k->exists[1]) why = "missing on the secondary";
    else if (k->phase == 1 && k->exists[1] && !k->exists[0]) why = "extra: only on the secondary";
    else if (k->exists[0] && k->exists[1] && k->dig[0] != k->dig[1]) why = "the values differ";
    else if (k->exists[0] && k->exists[1] && ((k->pttl[0] < 0) != (k->pttl[1] < 0) ||
             llabs(k->pttl[0] - k->pttl[1]) > MG_TTL_SLACK_MS)) {
        snprintf(buf, sizeof buf, "the TTLs differ: %lld ms vs %lld ms", k->pttl[0], k->pttl[1]);
        why = buf;
    }
    if (!why) {
        mg.vf.checked++;
        if (k->exists[0] || k->exists[1]) mg.vf.same++;
        vf_end(k);
        return;
    }
    if (!k->recheck && mg.vf.recheck.count < MG_REQUEUE_MAX) {   /* a write may be on its way: look again later */
        char *pk = malloc(k->klen + 1);          /* its phase, then the key */
        if (pk) {
            pk[0] = (char)('0' + k->phase);
            memcpy(pk + 1, k->key, k->klen);
            q_push(&mg.vf.recheck, pk, k->klen + 1, 0);
            free(pk);
        }
        vf_end(k);
        return;
    }
    mg.vf.checked++;
    if (!strncmp(why, "missing", 7)) mg.vf.missing++;
    else if (!strncmp(why, "extra", 5)) mg.vf.extra++;
    else mg.vf.differ++;
    sample_add(&mg.vf.diffs, k->key, k->klen, why);
    vf_end(k);
}

static void vf_reply(mg_check *k, int side, int what, const char *r, size_t len) {
    if (k->gen != mg.gen) { if (--k->wait == 0) vf_free(k); return; }
    const char *p, *next;
    long long n;
    if (len && r[0] == '-') k->bad[side] = 1;
    else if (what == 0) {
        if (!rd_bulk(r, r + len, &p, &n, &next)) {
            if (n >= 0) {
                k->exists[side] = 1;
                if (payload_digest(p, (size_t)n, &k->dig[side])) k->bad[side] = 1;
            }
        } else k->bad[side] = 1;
    } else if (len && r[0] == ':') {
        rd_int(r, r + len, &k->pttl[side], &next);
    }
    if (--k->wait == 0) { vf_verdict(k); vf_pump(); }
}

static void vf_d0(void *ud, const char *r, size_t len) { vf_reply(ud, 0, 0, r, len); }
static void vf_t0(void *ud, const char *r, size_t len) { vf_reply(ud, 0, 1, r, len); }
static void vf_d1(void *ud, const char *r, size_t len) { vf_reply(ud, 1, 0, r, len); }
static void vf_t1(void *ud, const char *r, size_t len) { vf_reply(ud, 1, 1, r, len); }

static void vf_check(const char *key, size_t n, int phase, int recheck) {
    mg_check *k = calloc(1, sizeof *k + n + 1);
    if (!k) return;
    memcpy(k->key, key, n);
    k->klen = n;
    k->gen = mg.gen;
    k->phase = phase;
    k->recheck = recheck;
    k->wait = 4;
    mg.vf.inflight++;
    resp_arg d[2] = {{"DUMP", 4}, {k->key, n}}, t[2] = {{"PTTL", 4}, {k->key, n}};
    px_backend_call(px_srv.primary, 2, d, vf_d0, k);
    px_backend_call(px_srv.primary, 2, t, vf_t0, k);
    px_backend_call(px_srv.secondary, 2, d, vf_d1, k);
    px_backend_call(px_srv.secondary, 2, t, vf_t1, k);
}

static void vf_on_scan(void *ud, const char *r, size_t len) {
    if ((uint64_t)(uintptr_t)ud != mg.gen || !mg.vf.running) return;
    mg.vf.scan_inflight = 0;
    const char *end = r + len, *next, *p;
    long long n, cn;
    if (len < 4 || r[0] != '*' || rd_bulk(r + 4, end, &p, &cn, &next) || cn < 0 || cn >= (long long)sizeof mg.vf.cursor ||
        next >= end || next[0] != '*' || rd_int(next, end, &n, &next)) {
        char why[200];
        err_text(r, len, why, sizeof why);
        px_log(PX_LOG_WARNING, "migrate: VERIFY's SCAN failed: %s", why);
        mg.vf.running = 0;
        mg.vf.ended_ms = now_ms();
        return;
    }
    memcpy(mg.vf.cursor, p, (size_t)cn);
    mg.vf.cursor[cn] = 0;
    for (long long i = 0; i < n; i++) {
        const char *kp;
        long long kn;
        if (rd_bulk(next, end, &kp, &kn, &next) || kn < 0) break;
        q_push(&mg.vf.queue, kp, (size_t)kn, 0);
    }
    if (!strcmp(mg.vf.cursor, "0")) mg.vf.scan_done = 1;
    vf_pump();
}

static void vf_pump(void) {
    static int in;
    if (in || !mg.vf.running) return;
    in = 1;
    for (;;) {
        if (!px_srv.secondary || !px_srv.primary) { mg.vf.running = 0; break; }
        int started = 0;
        while ((mg.vf.queue.count || (mg.vf.scan_done && mg.vf.phase == 1 && mg.vf.recheck.count)) &&
               mg.vf.inflight < MG_WINDOW && started < MG_PER_PUMP) {
            int re = !mg.vf.queue.count;
            mg_key k = q_pop(re ? &mg.vf.recheck : &mg.vf.queue);
            if (re) vf_check(k.p + 1, k.n - 1, k.p[0] - '0', 1);
            else vf_check(k.p, k.n, mg.vf.phase, 0);
            free(k.p);
            started++;
        }
        if (mg.vf.queue.count || mg.vf.scan_inflight || started) break;
        if (!mg.vf.scan_done) {
            mg.vf.scan_inflight = 1;
            resp_arg argv[4] = {{"SCAN", 4}, {mg.vf.cursor, strlen(mg.vf.cursor)}, {"COUNT", 5}, {"1000", 4}};
            px_backend_call(mg.vf.phase ? px_srv.secondary : px_srv.primary, 4, argv, vf_on_scan,
                            (void *)(uintptr_t)mg.gen);
            continue;
        }
        if (mg.vf.phase == 0) {          /* the primary's keys are checked: now the secondary's, for extras */
            mg.vf.phase = 1;
            mg.vf.scan_done = 0;
            strcpy(mg.vf.cursor, "0");
            continue;
        }
        if (mg.vf.inflight || mg.vf.recheck.count) break;
        mg.vf.running = 0;
        mg.vf.ended_ms = now_ms();
        px_log(PX_LOG_NOTICE, "migrate: verify done in %.1f s: %llu keys checked, %llu identical, %llu differ, "
               "%llu missing, %llu extra", (double)(mg.vf.ended_ms - mg.vf.started_ms) / 1000.0,
               (unsigned long long)mg.vf.checked, (unsigned long long)mg.vf.same, (unsigned long long)mg.vf.differ,
               (unsigned long long)mg.vf.missing, (unsigned long long)mg.vf.extra);
        break;
    }
    in = 0;
}

/* ---------------------------------------------------------------- CUTOVER */

/* The cutover ends: clients released, the reply sent. ok: the secondary is
 * the primary now; else why not (everything as it was). */
static void co_end(int ok, const char *why) {
    char msg[400];
    int n = ok ? snprintf(msg, sizeof msg, "+OK\r\n") : snprintf(msg, sizeof msg, "-ERR cutover not done: %s\r\n", why);
    fd_pending *owed = mg.co.owed;
    mg.co.owed = NULL;
    mg.co.phase = 0;
    px_atomic_release();
    if (owed) fd_pending_reply(owed, msg, (size_t)n);
    px_settings_free(&mg.co.old);
    px_settings tmp = {0};
    tmp.be = mg.co.target;
    px_settings_free(&tmp);
    memset(&mg.co.target, 0, sizeof mg.co.target);
    if (ok) set_stage(MG_DONE, "cutover done: the secondary is the primary, the old one drained and closed");
    else { mg.stage = MG_CUTOVER; set_stage(MG_SYNCED, why); }
}

/* Drained: every request the old primary had is answered and every copy is
 * in on the secondary. Switch as CONFIG SET ab-mode off backend ... would. */
static void co_switch(void) {
    char err[600];
    px_settings_copy(&mg.co.old, &px_cfg);
    px_backend_settings_assign(&mg.co.target, &px_cfg.ab);
    px_cfg.ab_mode = PX_AB_OFF;
    if (px_backends_ab_apply(err, sizeof err)) goto rollback;      /* closes the secondary (an embedded folder is freed) */
    px_backend_settings_assign(&px_cfg.be, &mg.co.target);
    int rc = px_backends_swap(0, NULL, err, sizeof err);
    if (rc < 0) goto rollback;
    if (rc == 1) { mg.co.phase = 2; return; }                      /* a network backend answers its probe first: tick() */
    co_end(1, NULL);
    return;
rollback:
    px_log(PX_LOG_WARNING, "migrate: cutover failed, back to the mirror: %s", err);
    px_settings_free(&px_cfg);
    px_settings_copy(&px_cfg, &mg.co.old);
    if (px_backends_swap(0, NULL, err, sizeof err) < 0 || px_backends_ab_apply(err, sizeof err))
        px_log(PX_LOG_WARNING, "migrate: cutover rollback: %s", err);
    co_end(0, err);
}

static void co_tick(int64_t ms) {
    if (mg.co.phase == 1) {
        px_ab_counts a;
        px_ab_counters(&a);
        int drained = px_srv.primary && !px_srv.primary->inflight && !a.queued && !mg.inflight && !mg.queue.count &&
                      (!px_srv.secondary || !px_srv.secondary->inflight);
        if (drained) co_switch();
        else if (ms > mg.co.deadline_ms) co_end(0, "the old primary or the mirror did not drain in time");
    } else if (mg.co.phase == 2) {
        if (px_srv.primary && px_backend_settings_equal(&px_srv.primary->own.be, &mg.co.target)) co_end(1, NULL);
        else if (!px_backend_settings_equal(&px_cfg.be, &mg.co.target)) {
            /* the probe failed: the swap put px_cfg.be back; the mirror too */
            char err[600];
            px_settings_free(&px_cfg);
            px_settings_copy(&px_cfg, &mg.co.old);
            if (px_backends_ab_apply(err, sizeof err)) px_log(PX_LOG_WARNING, "migrate: cutover rollback: %s", err);
            co_end(0, "the new primary did not answer its probe (the log says why)");
        }
    }
}

/* FRONTDOOR MIGRATE CUTOVER [FORCE]: hold every other client, wait until
 * nothing is in flight on the old primary or to the secondary, switch, release. */
static void cutover_cmd(px_conn *c, int force) {
    resp_out *o = &c->out;
    if (mg.stage != MG_SYNCED) { resp_add_errorf(o, "ERR the backfill is not done (stage %s)", stage_names[mg.stage]); return; }
    if (mg.failed && !force) {
        resp_add_errorf(o, "ERR %llu keys could not be copied (FRONTDOOR MIGRATE STATUS); CUTOVER FORCE switches anyway",
                        (unsigned long long)mg.failed);
        return;
    }
    mg.co.owed = px_pending_push(c, NULL, 0);
    if (!mg.co.owed) { resp_add_error(o, "ERR out of memory"); return; }
    set_stage(MG_CUTOVER, "clients held until the old primary and the mirror are drained");
    px_atomic_retain(c);                                   /* the other clients' input waits */
    mg.co.phase = 1;
    mg.co.deadline_ms = now_ms() + MG_CUTOVER_MS;
    timer_on();
    co_tick(now_ms());
}

/* ----------------------------------------------------------- timer, probe */

static void on_probe(void *ud, const char *r, size_t len) {
    if ((uint64_t)(uintptr_t)ud != mg.gen) return;
    mg.probe_inflight = 0;
    if (mg.stage != MG_WAITING) return;
    if (len && r[0] == '-') {
        err_text(r, len, mg.waiting_why, sizeof mg.waiting_why);
        mg.probe_at_ms = now_ms() + MG_PROBE_MS;
        return;
    }
    mg.waiting_why[0] = 0;
    set_stage(mg.resume_stage, "both sides answer again: resumed");
    pump();
}

static void tick(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)loop; (void)w; (void)revents;
    int64_t ns = fd_mono_ns(), ms = now_ms();
    double dt = mg.last_ns ? (double)(ns - mg.last_ns) / 1e9 : 0;
    mg.last_ns = ns;
    if (mg.rate) {
        mg.tokens += dt * (double)mg.rate;
        double cap = (double)mg.rate / 10.0 + 1.0;      /* bursts of at most 100 ms' worth */
        if (mg.tokens > cap) mg.tokens = cap;
    }
    if (ms - mg.rate_last_ms >= 1000) {
        double inst = (double)(mg.copied - mg.rate_last_copied) * 1000.0 / (double)(ms - mg.rate_last_ms);
        mg.rate_ewma = mg.rate_last_ms ? 0.5 * mg.rate_ewma + 0.5 * inst : inst;
        mg.rate_last_copied = mg.copied;
        mg.rate_last_ms = ms;
    }
    if (mg.stage == MG_WAITING && !mg.probe_inflight && ms >= mg.probe_at_ms) {
        /* a keyed read on each side; resumed when both answer */
        mg.probe_inflight = 1;
        resp_arg argv[2] = {{"EXISTS", 6}, {"frontdoor:migrate-probe", 23}};
        px_backend_call(px_srv.primary, 2, argv, on_probe, (void *)(uintptr_t)(mg.gen + 1));   /* ignored */
        px_backend_call(px_srv.secondary, 2, argv, on_probe, (void *)(uintptr_t)mg.gen);
    }
    pump();
    vf_pump();
    if (mg.co.phase) co_tick(ms);
    /* idle: synced with nothing to copy, paused, over (a lost copy, RESUME, VERIFY, CUTOVER start it again) */
    int busy = mg.stage == MG_BACKFILL || mg.stage == MG_WAITING ||
               (mg.stage == MG_SYNCED && (mg.queue.count || mg.inflight || mg.rescan));
    if (!busy && !mg.vf.running && !mg.co.phase) timer_off();
}

/* ----------------------------------------------------- the A/B layer's calls */

static void touch_all(px_strent *e, void *arg) {
    (void)arg;
    (*(mg_copy **)px_strmap_data(e))->dirty = 1;
}

void px_migrate_touch(const fd_command *cmd, int argc, const resp_arg *argv) {
    if (!mg.copying.count) return;
    int pos[16];
    int n = cmd ? fd_command_keys(cmd, argc, argv, pos, 16) : 0;
    if (n <= 0 || n > 16) { px_strmap_each(&mg.copying, touch_all, NULL); return; }
    for (int i = 0; i < n; i++) {
        px_strent *e = px_strmap_get(&mg.copying, argv[pos[i]].ptr, argv[pos[i]].len);
        if (e) (*(mg_copy **)px_strmap_data(e))->dirty = 1;
    }
}

void px_migrate_lost_key(const char *key, size_t len) {
    if (!px_migrate_running()) return;
    mg.lost++;
    if (mg.queue.count >= MG_REQUEUE_MAX || q_push(&mg.queue, key, len, 0)) mg.rescan = 1;
    timer_on();                                        /* the next tick copies it */
    px_strent *e = px_strmap_get(&mg.copying, key, len);
    if (e) (*(mg_copy **)px_strmap_data(e))->dirty = 1;
}

void px_migrate_lost(const fd_command *cmd, int argc, const resp_arg *argv) {
    if (!px_migrate_running()) return;
    int pos[16];
    int n = cmd ? fd_command_keys(cmd, argc, argv, pos, 16) : 0;
    if (n <= 0 || n > 16) {
        mg.lost++;
        mg.rescan = 1;
        px_strmap_each(&mg.copying, touch_all, NULL);
        timer_on();
        return;
    }
    for (int i = 0; i < n; i++) px_migrate_lost_key(argv[pos[i]].ptr, argv[pos[i]].len);
}

/* --------------------------------------------------------------- commands */

static void reset_run(void) {
    mg.gen++;                            /* replies still in flight are dropped as they come */
    q_clear(&mg.queue);
    px_strmap_clear(&mg.copying);        /* the copies themselves are freed by their last reply */
    mg.inflight = 0;
    mg.scan_inflight = mg.scan_done = mg.rescan = 0;
    mg.probe_inflight = 0;
    mg.pumping = mg.repump = 0;
    strcpy(mg.cursor, "0");
    mg.copied = mg.bytes = mg.failed = mg.recopied = mg.vanished = mg.lost = mg.scanned = mg.total_keys = 0;
    mg.rate_ewma = 0;
    mg.rate_last_copied = 0;
    mg.rate_last_ms = 0;
    mg.tokens = 0;
    mg.last_ns = 0;
    samples_clear(&mg.fails);
    if (mg.vf.running) {                 /* its replies are dropped too */
        mg.vf.running = 0;
        mg.vf.inflight = 0;
        mg.vf.ended_ms = now_ms();
    }
}

/* Why a migration cannot run now, or NULL. */
static const char *cannot_run(void) {
    if (px_cfg.ab_mode != PX_AB_MIRROR || !px_srv.secondary)
        return "ERR FRONTDOOR MIGRATE needs ab-mode mirror with the destination as ab-secondary (docs/migration.md)";
    if (!px_cfg.ab_mirror_writes || px_cfg.ab_mirror_sample < 1.0 || px_cfg.ab_stop_after)
        return "ERR FRONTDOOR MIGRATE needs every write mirrored (ab-mirror-writes yes, ab-mirror-sample 1, ab-stop-after 0)";
    if (px_srv.primary && px_srv.primary->b.ops->async && px_cfg.ab_mirror_order != PX_AB_ORDER_PRIMARY)
        return "ERR FRONTDOOR MIGRATE needs ab-mirror-order primary with a network primary (the copy's ordering rule)";
    return NULL;
}

static void begin(long long rate, long long batch, const char *cursor, const char *how) {
    reset_run();
    mg.rate = rate;
    mg.batch = batch;
    snprintf(mg.cursor, sizeof mg.cursor, "%s", cursor);
    mg.started_ms = now_ms();
    mg.resume_stage = MG_BACKFILL;
    mg.stage = MG_IDLE;
    resp_arg argv[1] = {{"DBSIZE", 6}};
    px_backend_call(px_srv.primary, 1, argv, on_dbsize, (void *)(uintptr_t)mg.gen);
    char why[200];
    snprintf(why, sizeof why, "%s %s → %s, rate %lld keys/s%s, batch %lld, cursor %s", how,
             px_srv.primary->b.ops->name, px_srv.secondary->b.ops->name, rate, rate ? "" : " (no limit)", batch, cursor);
    set_stage(MG_BACKFILL, why);
    timer_on();
    pump();
}

static int opt_ll(resp_arg *a, long long *v, long long min) {
    return resp_str2ll(a->ptr, a->len, v) || *v < min;
}

static void status_reply(px_conn *c) {
    resp_out *o = &c->out;
    char line[400];
    resp_add_array(o, 20);
#define KV(k, fmt, ...) do { resp_add_bulk_cstr(o, k); snprintf(line, sizeof line, fmt, __VA_ARGS__); resp_add_bulk_cstr(o, line); } while (0)
    KV("stage", "%s", stage_names[mg.stage]);
    KV("waiting", "%s", mg.stage == MG_WAITING ? mg.waiting_why : "");
    KV("keys_copied", "%llu", (unsigned long long)mg.copied);
    KV("keys_total", "%llu", (unsigned long long)mg.total_keys);
    KV("bytes_copied", "%llu", (unsigned long long)mg.bytes);
    KV("keys_failed", "%llu", (unsigned long long)mg.failed);
    KV("keys_recopied", "%llu", (unsigned long long)mg.recopied);
    KV("cursor", "%s", mg.cursor);
    KV("rate", "%lld", mg.rate);
    resp_add_bulk_cstr(o, "failed");
    resp_add_array(o, mg.fails.count);
    for (unsigned i = 0; i < mg.fails.count; i++) {
        const mg_sample *s = &mg.fails.v[(mg.fails.next + MG_SAMPLES - 1 - i) % MG_SAMPLES];
        resp_add_array(o, 2);
        resp_add_bulk_cstr(o, s->key ? s->key : "");
        resp_add_bulk_cstr(o, s->why ? s->why : "");
    }
#undef KV
}

static void verify_reply(px_conn *c) {
    resp_out *o = &c->out;
    resp_add_array(o, 14);
    resp_add_bulk_cstr(o, "state");
    resp_add_bulk_cstr(o, mg.vf.running ? "running" : mg.vf.ended_ms ? "done" : "never run");
    resp_add_bulk_cstr(o, "checked");
    resp_add_bulk_ll(o, (long long)mg.vf.checked);
    resp_add_bulk_cstr(o, "identical");
    resp_add_bulk_ll(o, (long long)mg.vf.same);
    resp_add_bulk_cstr(o, "differ");
    resp_add_bulk_ll(o, (long long)mg.vf.differ);
    resp_add_bulk_cstr(o, "missing");
    resp_add_bulk_ll(o, (long long)mg.vf.missing);
    resp_add_bulk_cstr(o, "extra");
    resp_add_bulk_ll(o, (long long)mg.vf.extra);
    resp_add_bulk_cstr(o, "keys");
    resp_add_array(o, mg.vf.diffs.count);
    for (unsigned i = 0; i < mg.vf.diffs.count; i++) {
        const mg_sample *s = &mg.vf.diffs.v[(mg.vf.diffs.next + MG_SAMPLES - 1 - i) % MG_SAMPLES];
        resp_add_array(o, 2);
        resp_add_bulk_cstr(o, s->key ? s->key : "");
        resp_add_bulk_cstr(o, s->why ? s->why : "");
    }
}

static void verify_start(void) {
    q_clear(&mg.vf.queue);
    q_clear(&mg.vf.recheck);
    samples_clear(&mg.vf.diffs);
    mg.vf.running = 1;
    mg.vf.phase = 0;
    mg.vf.scan_inflight = mg.vf.scan_done = mg.vf.inflight = 0;
    strcpy(mg.vf.cursor, "0");
    mg.vf.checked = mg.vf.same = mg.vf.differ = mg.vf.missing = mg.vf.extra = 0;
    mg.vf.started_ms = now_ms();
    mg.vf.ended_ms = 0;
    px_log(PX_LOG_NOTICE, "migrate: verify started (%s against %s)", px_srv.primary->b.ops->name,
           px_srv.secondary->b.ops->name);
    timer_on();
    vf_pump();
}

void px_migrate_cmd(px_conn *c, int argc, resp_arg *argv) {
    resp_out *o = &c->out;
    resp_arg *sub = argc > 2 ? &argv[2] : NULL;
    const char *why;
    if (!sub || resp_arg_is(sub, "STATUS")) {
        if (argc > 3) goto syntax;
        status_reply(c);
    } else if (resp_arg_is(sub, "START")) {
        long long rate = 0, batch = 100;
        for (int i = 3; i < argc; i += 2) {
            if (i + 1 >= argc) goto syntax;
            if (resp_arg_is(&argv[i], "RATE")) { if (opt_ll(&argv[i + 1], &rate, 0)) goto range; }
            else if (resp_arg_is(&argv[i], "BATCH")) { if (opt_ll(&argv[i + 1], &batch, 1) || batch > 100000) goto range; }
            else goto syntax;
        }
        if ((why = cannot_run())) { resp_add_error(o, why); return; }
        if (px_migrate_running()) { resp_add_error(o, "ERR a migration is under way (FRONTDOOR MIGRATE STATUS; ABORT first)"); return; }
        begin(rate, batch, "0", "started");
        resp_add_simple(o, "OK", 2);
    } else if (resp_arg_is(sub, "PAUSE") && argc == 3) {
        if (mg.stage != MG_BACKFILL && mg.stage != MG_WAITING) { resp_add_error(o, "ERR no backfill to pause"); return; }
        if (mg.stage == MG_WAITING) mg.resume_stage = MG_PAUSED;
        else set_stage(MG_PAUSED, "paused by FRONTDOOR MIGRATE PAUSE (the mirror goes on)");
        resp_add_simple(o, "OK", 2);
    } else if (resp_arg_is(sub, "RESUME") && argc == 3) {
        if (mg.stage != MG_PAUSED) { resp_add_error(o, "ERR the migration is not paused"); return; }
        set_stage(MG_BACKFILL, "resumed");
        timer_on();
        pump();
        resp_add_simple(o, "OK", 2);
    } else if (resp_arg_is(sub, "RATE") && argc == 4) {
        long long rate;
        if (opt_ll(&argv[3], &rate, 0)) goto range;
        mg.rate = rate;
        state_save();
        resp_add_simple(o, "OK", 2);
    } else if (resp_arg_is(sub, "ABORT") && argc == 3) {
        if (!px_migrate_running()) { resp_add_error(o, "ERR no migration is under way"); return; }
        if (mg.co.phase) { resp_add_error(o, "ERR a cutover is under way"); return; }
        set_stage(MG_ABORTED, "aborted by FRONTDOOR MIGRATE ABORT (the secondary keeps what was copied)");
        reset_run();
        mg.stage = MG_ABORTED;
        resp_add_simple(o, "OK", 2);
    } else if (resp_arg_is(sub, "CUTOVER") && (argc == 3 || (argc == 4 && resp_arg_is(&argv[3], "FORCE")))) {
        cutover_cmd(c, argc == 4);
    } else if (resp_arg_is(sub, "VERIFY") && argc == 3) {
        if (px_cfg.ab_mode == PX_AB_OFF || !px_srv.secondary) { resp_add_error(o, "ERR FRONTDOOR MIGRATE VERIFY needs an A/B secondary"); return; }
        if (!mg.vf.running) verify_start();
        resp_add_simple(o, "OK", 2);
    } else if (resp_arg_is(sub, "VERIFY") && argc == 4 && resp_arg_is(&argv[3], "STATUS")) {
        verify_reply(c);
    } else if (resp_arg_is(sub, "HELP") && argc == 3) {
        static const char *const help[] = {
            "START [RATE <keys/s>] [BATCH <n>]",
            "    Copy every key of the primary (type, value, TTL) to the A/B secondary while the mirror applies new writes (ab-mode mirror).",
            "STATUS",
            "    [stage, waiting, keys_copied, keys_total, bytes_copied, keys_failed, keys_recopied, cursor, rate, failed [[key, why]...]].",
            "PAUSE | RESUME | RATE <keys/s> | ABORT",
            "    Pause or resume the backfill (the mirror goes on), change its rate, or stop it.",
            "CUTOVER [FORCE]",
            "    Once synced: hold the other clients, drain the old primary and the mirror, make the secondary the primary (A/B off), release; FORCE: despite failed keys.",
            "VERIFY | VERIFY STATUS",
            "    Compare every key on both sides by a digest of its value and its TTL; the result: differ, missing, extra and the keys.",
            NULL,
        };
        px_reply_help(c, "FRONTDOOR MIGRATE", help);
    } else {
        goto syntax;
    }
    return;
syntax:
    resp_add_error(o, "ERR syntax error. Try FRONTDOOR MIGRATE HELP.");
    return;
range:
    resp_add_error(o, "ERR value is out of range");
}

/* ------------------------------------------------------------------ INFO */

static double eta_s(void) {
    if (mg.stage != MG_BACKFILL || mg.rate_ewma <= 0 || mg.total_keys <= mg.copied) return 0;
    return (double)(mg.total_keys - mg.copied) / mg.rate_ewma;
}

void px_migrate_info(resp_out *o) {
    char b[1600];
    int n = snprintf(b, sizeof b,
                     "migrate_stage:%s\r\nmigrate_waiting:%s\r\nmigrate_keys_copied:%llu\r\nmigrate_keys_total:%llu\r\n"
                     "migrate_bytes_copied:%llu\r\nmigrate_keys_failed:%llu\r\nmigrate_keys_recopied:%llu\r\n"
                     "migrate_keys_vanished:%llu\r\nmigrate_copies_lost:%llu\r\nmigrate_inflight:%d\r\n"
                     "migrate_queue:%zu\r\nmigrate_rate_limit:%lld\r\nmigrate_rate:%.1f\r\nmigrate_eta_seconds:%.0f\r\n"
                     "migrate_cursor:%s\r\nmigrate_verify:%s\r\nmigrate_verify_checked:%llu\r\n"
                     "migrate_verify_identical:%llu\r\nmigrate_verify_differ:%llu\r\nmigrate_verify_missing:%llu\r\n"
                     "migrate_verify_extra:%llu\r\n",
                     stage_names[mg.stage], mg.stage == MG_WAITING ? mg.waiting_why : "",
                     (unsigned long long)mg.copied, (unsigned long long)mg.total_keys, (unsigned long long)mg.bytes,
                     (unsigned long long)mg.failed, (unsigned long long)mg.recopied, (unsigned long long)mg.vanished,
                     (unsigned long long)mg.lost, mg.inflight, mg.queue.count, mg.rate, mg.rate_ewma, eta_s(), mg.cursor,
                     mg.vf.running ? "running" : mg.vf.ended_ms ? "done" : "never", (unsigned long long)mg.vf.checked,
                     (unsigned long long)mg.vf.same, (unsigned long long)mg.vf.differ, (unsigned long long)mg.vf.missing,
                     (unsigned long long)mg.vf.extra);
    if (n > 0) resp_out_raw(o, b, (size_t)n < sizeof b ? (size_t)n : sizeof b - 1);
}

void px_migrate_metrics(resp_out *o, void (*head)(resp_out *, const char *, const char *, const char *),
                        px_migrate_out_fn out) {
    head(o, "frontdoor_migrate_stage", "gauge", "Migration stage: 1 for the current one (FRONTDOOR MIGRATE STATUS).");
    for (int i = 0; i < (int)(sizeof stage_names / sizeof stage_names[0]); i++)
        out(o, "frontdoor_migrate_stage{stage=\"%s\"} %d\n", stage_names[i], mg.stage == i);
    head(o, "frontdoor_migrate_keys_total", "counter", "Migration: keys by outcome (copied, failed, recopied, vanished, lost).");
    out(o, "frontdoor_migrate_keys_total{outcome=\"copied\"} %llu\n", (unsigned long long)mg.copied);
    out(o, "frontdoor_migrate_keys_total{outcome=\"failed\"} %llu\n", (unsigned long long)mg.failed);
    out(o, "frontdoor_migrate_keys_total{outcome=\"recopied\"} %llu\n", (unsigned long long)mg.recopied);
    out(o, "frontdoor_migrate_keys_total{outcome=\"vanished\"} %llu\n", (unsigned long long)mg.vanished);
    out(o, "frontdoor_migrate_keys_total{outcome=\"lost\"} %llu\n", (unsigned long long)mg.lost);
    head(o, "frontdoor_migrate_keys_source", "gauge", "Migration: keys on the primary when it started (DBSIZE).");
    out(o, "frontdoor_migrate_keys_source %llu\n", (unsigned long long)mg.total_keys);
    head(o, "frontdoor_migrate_bytes_total", "counter", "Migration: bytes copied (keys and DUMP payloads).");
    out(o, "frontdoor_migrate_bytes_total %llu\n", (unsigned long long)mg.bytes);
    head(o, "frontdoor_migrate_rate_keys_per_second", "gauge", "Migration: keys copied per second (measured).");
    out(o, "frontdoor_migrate_rate_keys_per_second %.1f\n", mg.rate_ewma);
    head(o, "frontdoor_migrate_eta_seconds", "gauge", "Migration: seconds left at the measured rate (0: unknown or done).");
    out(o, "frontdoor_migrate_eta_seconds %.0f\n", eta_s());
    head(o, "frontdoor_migrate_verify_keys", "gauge", "Migration: the last VERIFY's keys by verdict.");
    out(o, "frontdoor_migrate_verify_keys{verdict=\"identical\"} %llu\n", (unsigned long long)mg.vf.same);
    out(o, "frontdoor_migrate_verify_keys{verdict=\"differ\"} %llu\n", (unsigned long long)mg.vf.differ);
    out(o, "frontdoor_migrate_verify_keys{verdict=\"missing\"} %llu\n", (unsigned long long)mg.vf.missing);
    out(o, "frontdoor_migrate_verify_keys{verdict=\"extra\"} %llu\n", (unsigned long long)mg.vf.extra);
}

/* --------------------------------------------------------------- start-up */

void px_migrate_init(void) {
    char pb[1100];
    const char *path = state_path(pb, sizeof pb);
    FILE *f = fopen(path, "r");
    if (!f) return;
    char stage[32] = "", cursor[32] = "";
    long long rate = 0, batch = 100;
    unsigned long long copied = 0, bytes = 0, failed = 0;
    int n = fscanf(f, "frontdoor-migrate 1 %31s %31s %lld %lld %llu %llu %llu", stage, cursor, &rate, &batch, &copied,
                   &bytes, &failed);
    fclose(f);
    if (n != 7) { px_log(PX_LOG_WARNING, "migrate: %s does not parse: ignored", path); return; }
    int st = -1;
    for (int i = 0; i < (int)(sizeof stage_names / sizeof stage_names[0]); i++)
        if (!strcmp(stage, stage_names[i])) st = i;
    if (st != MG_BACKFILL && st != MG_PAUSED) return;     /* nothing to resume */
    const char *why = cannot_run();
    if (why) { px_log(PX_LOG_WARNING, "migrate: %s says a backfill was under way, not resumed: %s", path, why + 4); return; }
    begin(rate, batch < 1 ? 100 : batch, cursor, "resumed after a restart from");
    mg.copied = copied;
    mg.bytes = bytes;
    mg.failed = failed;
    mg.rate_last_copied = copied;
    if (st == MG_PAUSED) set_stage(MG_PAUSED, "paused before the restart");
}
