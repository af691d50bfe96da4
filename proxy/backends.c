/* backends.c — opening, swapping, committing and accounting the running
 * backends (see backends.h). */
#include "backends.h"
#include "server.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------ histograms */

/* Largest value that falls in bucket i. */
static uint64_t hist_upper(unsigned i) {
    if (i < PX_HIST_SUB) return i;
    unsigned msb = i / PX_HIST_SUB + 3, sub = i % PX_HIST_SUB;
    return ((uint64_t)(PX_HIST_SUB + sub + 1) << (msb - 4)) - 1;
}

uint64_t px_hist_bucket_upper(unsigned i) { return hist_upper(i); }

void px_hist_merge(px_hist *dst, const px_hist *src) {
    if (!src->count) return;
    dst->count += src->count;
    dst->sum_ns += src->sum_ns;
    if (src->max_ns > dst->max_ns) dst->max_ns = src->max_ns;
    for (unsigned i = 0; i < PX_HIST_BUCKETS; i++) dst->b[i] += src->b[i];
}

uint64_t px_hist_quantile(const px_hist *h, double q) {
    if (!h->count) return 0;
    uint64_t rank = (uint64_t)(q * (double)h->count + 0.5), seen = 0;
    if (rank < 1) rank = 1;
    for (unsigned i = 0; i < PX_HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank) {
            uint64_t u = hist_upper(i);
            return u < h->max_ns ? u : h->max_ns;
        }
    }
    return h->max_ns;
}

/* ---------------------------------------------------------------- records */

px_cmdstat *px_cmd_proxy[FD_CMD_COUNT];
static px_cmdstat *retired[FD_CMD_COUNT];      /* closed backends' client records */

px_cmdstat *px_cmdstat_new(px_cmdstat **slot) {
    return *slot = calloc(1, sizeof **slot);
}

/* The client records that count in commandstats, besides the proxy's. */
static void client_sources(px_cmdstat **src[], int *n) {
    int k = 0;
    src[k++] = retired;
    if (px_srv.primary) src[k++] = px_srv.primary->rec[PX_REC_CLIENT];
    if (px_srv.secondary) src[k++] = px_srv.secondary->rec[PX_REC_CLIENT];
    for (px_backend *d = px_srv.draining; d && k < 15; d = d->next) src[k++] = d->rec[PX_REC_CLIENT];
    *n = k;
}

void px_cmd_sum(int id, uint64_t *calls, uint64_t *ns, uint64_t *errors) {
    px_cmdstat **src[16];
    int n;
    client_sources(src, &n);
    src[n++] = px_cmd_proxy;
    *calls = *ns = *errors = 0;
    for (int i = 0; i < n; i++) {
        const px_cmdstat *s = src[i][id];
        if (!s) continue;
        *calls += s->lat.count;
        *ns += s->lat.sum_ns;
        *errors += s->errors;
    }
}

void px_cmd_total(int id, px_hist *out) {
    px_cmdstat **src[16];
    int n;
    client_sources(src, &n);
    src[n++] = px_cmd_proxy;
    memset(out, 0, sizeof *out);
    for (int i = 0; i < n; i++)
        if (src[i][id]) px_hist_merge(out, &src[i][id]->lat);
}

static void free_records(px_cmdstat **r) {
    for (int i = 0; i < FD_CMD_COUNT; i++) { free(r[i]); r[i] = NULL; }
}

void px_cmdstats_reset(void) {
    free_records(px_cmd_proxy);
    free_records(retired);
    if (px_srv.primary) free_records(px_srv.primary->rec[PX_REC_CLIENT]);
    if (px_srv.secondary) free_records(px_srv.secondary->rec[PX_REC_CLIENT]);
    for (px_backend *d = px_srv.draining; d; d = d->next) free_records(d->rec[PX_REC_CLIENT]);
}

void px_backend_refresh(px_backend *be) {
    be->calls = be->misc.lat.count;
    be->errors = be->misc.errors;
    be->latency = be->misc.lat;
    for (int k = 0; k < PX_REC_KINDS; k++)
        for (int i = 0; i < FD_CMD_COUNT; i++) {
            const px_cmdstat *s = be->rec[k][i];
            if (!s) continue;
            be->calls += s->lat.count;
            be->errors += s->errors;
            px_hist_merge(&be->latency, &s->lat);
        }
    be->wait = be->b.ops->async ? be->wait_live : be->latency;
}

void px_backends_refresh(void) {
    if (px_srv.primary) px_backend_refresh(px_srv.primary);
    if (px_srv.secondary) px_backend_refresh(px_srv.secondary);
    for (px_backend *d = px_srv.draining; d; d = d->next) px_backend_refresh(d);
}

void px_backend_cmd(const px_backend *be, int id, px_hist *out, uint64_t *errors) {
    memset(out, 0, sizeof *out);
    *errors = 0;
    for (int k = 0; k < PX_REC_KINDS; k++) {
        const px_cmdstat *s = be->rec[k][id];
        if (!s) continue;
        px_hist_merge(out, &s->lat);
        *errors += s->errors;
    }
}

/* -------------------------------------------------------------- instances */

/* The directive to a Redis server: the canonical form, plus "n" when "A"
 * hides it (Redis 7.0 prints "A" without the n it keeps). */
static void notify_forward(px_backend *be, int flags) {
    char f[40];
    px_notify_format(flags, f, sizeof f - 1);
    if ((flags & PX_NOTIFY_ALL) == PX_NOTIFY_ALL && (flags & PX_NOTIFY_NEW)) strcat(f, "n");
    be->b.ops->notify_set(&be->b, f);
}

px_backend *px_backend_open(const px_backend_settings *bs, const char *role, char *err, size_t errlen) {
    const fd_backend_ops *ops = fd_backend_find(bs->backend);
    if (!ops) {
        if (!bs->backend[0]) snprintf(err, errlen, "no backend named");
        else snprintf(err, errlen, "unknown backend '%s' (built in: %s)", bs->backend, fd_backend_names());
        return NULL;
    }
    px_backend *be = calloc(1, sizeof *be);
    if (!be) { snprintf(err, errlen, "out of memory"); return NULL; }
    for (int i = 0; i < FD_CMD_COUNT; i++) {
        const fd_command *cmd = fd_command_by_id(i);
        be->support[i] = cmd->family == FD_FAM_DATA ? ops->support(cmd) : FD_SERVED;
    }
    px_settings_copy(&be->own, &px_cfg);
    px_backend_settings_assign(&be->own.be, bs);
    const px_backend_settings *s = &be->own.be;
    fd_backend_config bc = {
        .dir = s->dir,
        .sync = s->durability,
        .options = px_backend_options(s, ops->options),
        .loop = px_srv.loop,
        .backend_timeout_ms = s->backend_timeout,
        .max_bulk = px_cfg.proto_max_bulk_len,
    };
    be->b.ops = ops;
    char berr[512] = "";
    if (ops->open(&be->b, &bc, berr, sizeof berr) != FD_OK) {
        snprintf(err, errlen, "backend %s: %s", ops->name, berr);
        px_settings_free(&be->own);
        free(be);
        return NULL;
    }
    be->role = role;
    be->opened_at = time(NULL);
    if (ops->notify_set && px_cfg.notify_keyspace_events)   /* set through frontdoor: the server fires them */
        notify_forward(be, (int)px_cfg.notify_keyspace_events);
    return be;
}

void px_backends_notify(int flags) {
    px_backend *be = px_srv.primary;
    if (be && be->b.ops->notify_set) notify_forward(be, flags);
}

void px_backend_close(px_backend *be) {
    if (!be) return;
    if (be->b.ops) be->b.ops->close(&be->b);
    for (int i = 0; i < FD_CMD_COUNT; i++) {        /* commandstats keep counting its clients' commands */
        px_cmdstat *s = be->rec[PX_REC_CLIENT][i];
        if (s && (retired[i] || px_cmdstat_new(&retired[i]))) {
            px_hist_merge(&retired[i]->lat, &s->lat);
            retired[i]->errors += s->errors;
        }
    }
    for (int k = 0; k < PX_REC_KINDS; k++) free_records(be->rec[k]);
    px_settings_free(&be->own);
    free(be);
#ifdef __GLIBC__
    /* A closed backend (a swap, A/B turned off) leaves the holes of what it
     * and its traffic freed inside the heap; glibc returns only the heap's
     * top to the system, so RSS would stay at the high-water mark of the
     * mirror. Release the free pages now (madvise; ~1 ms for tens of MB,
     * on a rare administrative event). docs/robustness.md */
    malloc_trim(0);
#endif
}

void px_backend_account(px_backend *be, uint64_t latency_ns, uint64_t wait_ns, int is_error) {
    px_backend_record(be, PX_REC_OWN, NULL, latency_ns, is_error);
    if (be->b.ops->async) px_hist_add(&be->wait_live, wait_ns);
}

double px_backend_frontdoor_us(const px_backend *be) {
    const px_hist *l = &be->latency, *w = &be->wait;
    if (!l->count) return 0;
    uint64_t own = l->sum_ns > w->sum_ns ? l->sum_ns - w->sum_ns : 0;
    return (double)own / 1e3 / (double)l->count;
}

/* ------------------------------------------------------ frontdoor's own calls */

void px_backend_call(px_backend *be, int argc, const resp_arg *cargv, px_call_cb cb, void *ud) {
    resp_arg argv[8];
    fd_command *cmd = argc > 0 && argc <= 8 ? fd_command_lookup(cargv[0].ptr, cargv[0].len) : NULL;
    for (int i = 0; i < argc && i < 8; i++) argv[i] = cargv[i];
    if (!be || !cmd || be->support[cmd->id] != FD_SERVED) {
        resp_out out;
        resp_out_init(&out, 2);
        if (!be || !cmd) resp_add_error(&out, be ? "ERR unknown command" : "ERR backend unavailable");
        else fd_reply_unsupported(&out, cmd->name, be->b.ops->name, NULL);
        cb(ud, out.data, out.len);
        resp_out_free(&out);
        return;
    }
    px_call_reply(&(px_request){.be = be, .cmd = cmd, .argc = argc, .argv = argv, .unchecked = 1}, 2, cb, ud);
}

/* ------------------------------------------------------------ the running set */

/* A backend that keeps its data in `dir` (a capability of the backend, not its name). */
static int is_embedded(const char *name) {
    const fd_backend_ops *ops = fd_backend_find(name);
    return ops && ops->embedded;
}

/* Two embedded backends on one data folder cannot be open at once (the
 * folder is locked): such a swap closes the old one first. */
static int same_folder(const px_backend *old, const px_backend_settings *bs) {
    return is_embedded(old->own.be.backend) && is_embedded(bs->backend) && !strcmp(old->own.be.dir, bs->dir);
}

/* Take a backend out of service: an embedded one has nothing in flight and
 * is committed and closed now (its folder may be reopened at once); a
 * network one drains first. */
static void retire(px_backend *old) {
    if (!old->b.ops->async) {
        if (old->b.ops->end_turn && old->b.ops->end_turn(&old->b) != FD_OK)
            px_log(PX_LOG_WARNING, "backend %s: last commit failed while closing it", old->own.be.backend);
        px_backend_refresh(old);
        px_log(PX_LOG_NOTICE, "backend %s closed (%llu calls)", old->own.be.backend, (unsigned long long)old->calls);
        px_backend_close(old);
        return;
    }
    old->role = "draining";
    old->next = px_srv.draining;
    px_srv.draining = old;
}

/* Close the backend in *slot (primary or secondary) out of service: the
 * slot is cleared first, since replies its close still sends (LevelDB's
 * writer) may run more commands (a client's next pipelined command, a
 * BLPOP woken by an LPUSH's reply); they find no backend (-ERR backend
 * unavailable) rather than one half closed. */
static void close_in_slot(px_backend **slot) {
    px_backend *be = *slot;
    *slot = NULL;
    px_backend_close(be);
}

int px_backends_init(char *err, size_t errlen) {
    px_srv.primary = px_backend_open(&px_cfg.be, "primary", err, errlen);
    if (!px_srv.primary) return -1;
    char e2[512];
    if (px_backends_ab_apply(e2, sizeof e2)) {
        snprintf(err, errlen, "A/B secondary: %s", e2);
        return -1;
    }
    return 0;
}

/* The swap waiting for its new backend's first answer. */
static struct {
    px_backend         *nb;
    px_backend_settings old;     /* the running primary's settings: restored into px_cfg.be on failure */
    fd_pending         *reply;   /* the CONFIG SET reply owed, or NULL */
} sw;

static void free_backend_settings(px_backend_settings *bs) {
    px_settings tmp = {0};
    tmp.be = *bs;
    px_settings_free(&tmp);
    memset(bs, 0, sizeof *bs);
}

static void activate(px_backend *nb) {
    px_backend *old = px_srv.primary;
    px_srv.primary = nb;
    px_srv.switches++;
    px_srv.switched_at = time(NULL);
    px_log(PX_LOG_NOTICE, "backend swapped: now %s%s", nb->own.be.backend,
           old && old->b.ops->async ? " (the previous one closes once its requests are answered)" : "");
    if (old) retire(old);
}

/* The new backend's answer to the probe: switch, or stay. */
static int probe_result(const char *reply, size_t len, char *err, size_t errlen) {
    px_backend *nb = sw.nb;
    sw.nb = NULL;
    int rc = 0;
    if (len && reply[0] != '-') {
        activate(nb);
    } else {
        size_t l = len > 1 ? len - 1 : 0;
        while (l && (reply[l] == '\r' || reply[l] == '\n')) l--;
        snprintf(err, errlen, "%s does not answer: %.*s", nb->own.be.backend, (int)(len ? l : 0), len ? reply + 1 : "");
        px_log(PX_LOG_WARNING, "backend swap failed, staying on %s: %s",
               px_srv.primary ? px_srv.primary->own.be.backend : "none", err);
        px_backend_settings_assign(&px_cfg.be, &sw.old);
        retire(nb);                          /* closed once the probe is off its books */
        rc = -1;
    }
    free_backend_settings(&sw.old);
    return rc;
}

/* The probe's answer: probe_result's verdict, kept while px_call runs (an
 * answer given inside it is returned by px_backends_swap). */
static struct { int in_call, rc; char err[600]; } probe;

/* The swap is decided: CONFIG SET's owed reply says how. */
static void probe_finish(int rc, const char *err) {
    fd_pending *owed = sw.reply;
    sw.reply = NULL;
    if (!owed) return;
    resp_out o;
    resp_out_init(&o, 2);
    if (rc == 0) resp_add_simple(&o, "OK", 2);
    else resp_add_errorf(&o, "ERR CONFIG SET failed: backend not swapped - %s", err);
    fd_pending_reply(owed, o.data, o.len);
    resp_out_free(&o);
}

static void on_probe(void *ud, const char *reply, size_t len, int failed) {
    (void)ud; (void)failed;
    if (!sw.nb) return;                      /* shutting down: the swap was abandoned */
    probe.rc = probe_result(reply, len, probe.err, sizeof probe.err);
    if (!probe.in_call) probe_finish(probe.rc, probe.err);
}

int px_backends_swap(int force, fd_pending *reply, char *err, size_t errlen) {
    px_backend *old = px_srv.primary;
    if (sw.nb) { snprintf(err, errlen, "a backend swap is in progress"); return -1; }
    if (old && !force && px_backend_settings_equal(&old->own.be, &px_cfg.be)) return 0;
    if (old && px_srv.secondary && same_folder(px_srv.secondary, &px_cfg.be)) {
        snprintf(err, errlen, "dir '%s' is the A/B secondary's data folder", px_cfg.be.dir);
        return -1;
    }
    if (old && same_folder(old, &px_cfg.be)) {
        /* embedded: nothing in flight; commit what this turn wrote, close, reopen */
        if (old->b.ops->end_turn && old->b.ops->end_turn(&old->b) != FD_OK) {
            snprintf(err, errlen, "the running backend could not commit; not swapping");
            return -1;
        }
        px_settings keep;
        px_settings_copy(&keep, &old->own);
        close_in_slot(&px_srv.primary);
        px_backend *nb = px_backend_open(&px_cfg.be, "primary", err, errlen);
        if (!nb) {
            char e2[512];
            px_srv.primary = px_backend_open(&keep.be, "primary", e2, sizeof e2);
            if (!px_srv.primary) px_log(PX_LOG_WARNING, "swap failed and the previous backend did not reopen: %s", e2);
            px_settings_free(&keep);
            return -1;
        }
        px_settings_free(&keep);
        activate(nb);
        return 0;
    }
    px_backend *nb = px_backend_open(&px_cfg.be, "primary", err, errlen);
    if (!nb) return -1;
    if (!nb->b.ops->async || !old) { activate(nb); return 0; }

    /* a network backend: it must answer before traffic moves to it */
    sw.nb = nb;
    sw.reply = reply;
    if (old) px_backend_settings_assign(&sw.old, &old->own.be);
    /* a keyed read: a cluster answers keyed commands once it has its slot map */
    static char exists[] = "EXISTS", key[] = "frontdoor:swap-probe";
    static const char raw[] = "*2\r\n$6\r\nEXISTS\r\n$20\r\nfrontdoor:swap-probe\r\n";
    resp_arg argv[2] = {{exists, 6}, {key, sizeof key - 1}};
    fd_command *cmd = fd_command_lookup(exists, 6);
    resp_out scratch;
    resp_out_init(&scratch, 2);
    px_tap tap = {on_probe, NULL};
    probe.in_call = 1;
    probe.rc = -1;
    snprintf(probe.err, sizeof probe.err, "no answer");
    int owed = px_call(&(px_request){.be = nb, .out = &scratch, .cmd = cmd, .argc = 2, .argv = argv, .raw = raw,
                                     .rawlen = sizeof raw - 1, .unchecked = 1, .tap = &tap});
    probe.in_call = 0;
    resp_out_free(&scratch);
    if (owed == 1) return 1;                 /* on_probe decides */
    if (owed == 2) {                         /* answered inside submit: on_probe decided, the reply is owed */
        probe_finish(probe.rc, probe.err);
        return 1;
    }
    /* answered at once (on_probe decided) */
    sw.reply = NULL;
    if (probe.rc) snprintf(err, errlen, "%s", probe.err);
    return probe.rc;
}

int px_backends_ab_apply(char *err, size_t errlen) {
    px_backend *cur = px_srv.secondary;
    int want = px_cfg.ab_mode != PX_AB_OFF;
    if (want && !px_cfg.ab.backend[0]) {
        snprintf(err, errlen, "ab-mode %s needs ab-secondary (the secondary's backend name)",
                 px_cfg.ab_mode == PX_AB_SPLIT ? "split" : "mirror");
        return -1;
    }
    if (!want) {
        if (cur) {
            px_log(PX_LOG_NOTICE, "A/B off: secondary %s closing", cur->own.be.backend);
            px_srv.secondary = NULL;
            retire(cur);
        }
        return 0;
    }
    if (cur && px_backend_settings_equal(&cur->own.be, &px_cfg.ab)) return 0;
    if (px_srv.primary && same_folder(px_srv.primary, &px_cfg.ab)) {
        snprintf(err, errlen, "ab-dir '%s' is the primary's data folder: give the secondary its own", px_cfg.ab.dir);
        return -1;
    }
    if (cur && same_folder(cur, &px_cfg.ab)) {
        if (cur->b.ops->end_turn) cur->b.ops->end_turn(&cur->b);
        close_in_slot(&px_srv.secondary);
        cur = NULL;
    }
    px_backend *nb = px_backend_open(&px_cfg.ab, "secondary", err, errlen);
    if (!nb) return -1;
    px_srv.secondary = nb;
    if (cur) retire(cur);
    px_log(PX_LOG_NOTICE, "A/B %s: secondary %s", px_cfg.ab_mode == PX_AB_SPLIT ? "split" : "mirror", nb->own.be.backend);
    return 0;
}

static int commit(px_backend *be) {
    if (!be || !be->b.ops->end_turn) return FD_OK;
    return be->b.ops->end_turn(&be->b);
}

int px_backends_commit_before_flush(void) {
    int st = commit(px_srv.primary), s2;
    for (px_backend *d = px_srv.draining; d; d = d->next)
        if ((s2 = commit(d)) != FD_OK && st == FD_OK) st = s2;
    if (px_cfg.ab_mode == PX_AB_SPLIT && (s2 = commit(px_srv.secondary)) != FD_OK && st == FD_OK) st = s2;
    if (sw.nb) commit(sw.nb);                /* a network backend sends its turn's requests here: the probe */
    return st;
}

void px_backends_after_flush(void) {
    if (px_cfg.ab_mode != PX_AB_SPLIT && px_srv.secondary && commit(px_srv.secondary) != FD_OK)
        px_log(PX_LOG_WARNING, "A/B secondary %s: commit failed", px_srv.secondary->own.be.backend);
    for (px_backend **pp = &px_srv.draining; *pp;) {
        px_backend *d = *pp;
        if (d->inflight == 0) {
            *pp = d->next;
            px_backend_refresh(d);
            px_log(PX_LOG_NOTICE, "backend %s drained (%llu calls): closed", d->own.be.backend, (unsigned long long)d->calls);
            px_backend_close(d);
        } else {
            pp = &d->next;
        }
    }
}

#ifdef __GLIBC__
/* Memory a burst left free inside the heap (docs/robustness.md, "Memory"):
 * glibc gives back by itself only the heap's top, so after a backlog (a slow
 * MongoDB primary under A/B, a pipeline flood) RSS would stay at its high
 * mark. Checked once a second (mallinfo2: a walk of the free lists);
 * malloc_trim(0) (madvise of the free pages, ~1 ms for tens of MB) when more
 * than PX_TRIM_MIN bytes are free and they are a quarter of what is in use,
 * and either PX_TRIM_MIN more became free since the last trim (a burst
 * ended) or PX_TRIM_EVERY_MS have passed (pages re-used and freed again). */
#define PX_TRIM_MIN ((size_t)1 << 20)
#define PX_TRIM_EVERY_MS 10000
static void trim_cron(int64_t now_ms) {
    static int64_t next_check, last_trim;
    static size_t free_at_trim;
    if (now_ms < next_check) return;
    next_check = now_ms + 1000;
    struct mallinfo2 mi = mallinfo2();
    if (mi.fordblks < PX_TRIM_MIN || mi.fordblks < mi.uordblks / 4) return;
    if (mi.fordblks < free_at_trim + PX_TRIM_MIN && now_ms - last_trim < PX_TRIM_EVERY_MS) return;
    malloc_trim(0);
    last_trim = now_ms;
    free_at_trim = mi.fordblks;
}
#endif

void px_backends_cron(int64_t now_ms) {
#ifdef __GLIBC__
    trim_cron(now_ms);
#endif
    px_backend *all[2] = {px_srv.primary, px_srv.secondary};
    for (int i = 0; i < 2; i++)
        if (all[i] && all[i]->b.ops->cron) all[i]->b.ops->cron(&all[i]->b, now_ms);
    for (px_backend *d = px_srv.draining; d; d = d->next)
        if (d->b.ops->cron) d->b.ops->cron(&d->b, now_ms);
    if (sw.nb && sw.nb->b.ops->cron) sw.nb->b.ops->cron(&sw.nb->b, now_ms);
}

void px_backends_shutdown(void) {
    if (sw.nb) {                             /* a swap still waiting for its probe */
        px_backend *nb = sw.nb;
        sw.nb = NULL;
        sw.reply = NULL;
        free_backend_settings(&sw.old);
        px_backend_close(nb);
    }
    close_in_slot(&px_srv.primary);
    close_in_slot(&px_srv.secondary);
    while (px_srv.draining) {
        px_backend *d = px_srv.draining;
        px_srv.draining = d->next;
        px_backend_close(d);
    }
}
