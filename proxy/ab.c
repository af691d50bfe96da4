/* ab.c — A/B split and mirror: routing decisions, reply comparison,
 * mismatch samples, INFO ab and the FRONTDOOR command (see ab.h). */
#include "ab.h"
#include "ab_int.h"
#include "builtin.h"
#include "capture.h"   /* capture (issue 17) */
#include "backends.h"
#include "config.h"
#include "log.h"
#include "strmap.h"
#include "../protocol/resp_scan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>

#define AB_SAMPLES 32          /* latest divergences kept */
#define AB_RACES 8             /* latest races kept */
#define AB_MAXKEYS 8           /* keys tracked per command; more: tracked as keyless */
#define AB_MIXED UINT64_MAX    /* writes of several clients in flight */

/* Race tracking. Every key a mirrored command names has an entry while
 * some mirrored command naming it is in flight (from px_ab_begin until both
 * sides answered). A command's mismatch is a race when another client wrote
 * one of its keys in that window: a write of another client was in flight
 * when it began, or began before it ended. `any` stands for every write
 * (keyless reads such as DBSIZE check it), `all` for keyless writes
 * (FLUSHALL: every keyed command checks it). */
typedef struct ab_key {
    uint32_t refs;             /* in-flight commands naming it (a map entry is freed at 0) */
    uint32_t wr_inflight;      /* in-flight writes to it */
    uint64_t wr_client;        /* their client, AB_MIXED when several */
    uint64_t last_seq, last_client;   /* the latest write begun, and its client */
    uint64_t other_seq;        /* the latest write begun by a client other than last_client */
} ab_key;

typedef struct ab_ref { ab_key *k; px_strent *e; unsigned char check, write; } ab_ref;

typedef struct px_ab_pair px_ab_pair;

struct px_ab_pair {
    px_tap      tap[2];        /* what each side's request reports to (px_submit_to) */
    struct px_ab_side { struct px_ab_pair *p; int side; } sides[2];
    fd_command *cmd;
    char       *text;          /* the command, printable, truncated */
    char       *rep[2];
    size_t      len[2];
    int         have[2], failed[2];
    int         queued;        /* counted in ab.queued until the secondary answers */
    uint64_t    client, seq;   /* the client; its place in the order commands began */
    int         race;          /* another client wrote one of its keys meanwhile */
    char       *key;           /* its first key (for the diff), NULL when keyless */
    size_t      keylen;
    int         nref;
    ab_ref      ref[AB_MAXKEYS + 2];
};


static struct {
    uint64_t mirrored, compared, divergences, races, dropped, split_secondary, secondary_errors, queued;
    uint64_t sampled_out, stopped_at_ms;
    uint64_t races_by_cmd[FD_CMD_COUNT];
    ab_sample samples[AB_SAMPLES];
    unsigned  next_sample, nsamples;
    ab_sample race_samples[AB_RACES];
    unsigned  next_race, nraces;
    FILE     *log;
    char     *log_name;
    long long race_log_sec;            /* races logged in this second, and not */
    uint64_t  race_log_n, race_log_skipped;
    /* race tracking */
    px_strmap keys;
    ab_key    any, all;
    uint64_t  seq;
} ab;

/* ---------------------------------------------------------------- split */

static uint64_t fnv1a(const void *p, size_t n, uint64_t h) {
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

/* A well-mixed 64-bit hash (FNV-1a then a finaliser), as a fraction in [0,1). */
static double unit_hash(const void *p, size_t n) {
    uint64_t h = fnv1a(p, n, 1469598103934665603ull);
    h ^= h >> 33; h *= 0xff51afd7ed558ccdull; h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53ull; h ^= h >> 33;
    return (double)(h >> 11) / 9007199254740992.0;
}

static int px_ab_split_to_secondary(px_conn *c, const fd_command *cmd, int argc, resp_arg *argv) {
    double u;
    if (px_cfg.ab_split_by == PX_AB_BY_CLIENT) {
        u = unit_hash(&c->id, sizeof c->id);
    } else {
        if (!cmd || cmd->first_key <= 0 || cmd->first_key >= argc) return 0;   /* keyless: primary */
        u = unit_hash(argv[cmd->first_key].ptr, argv[cmd->first_key].len);
    }
    if (u >= px_cfg.ab_split_fraction) return 0;
    ab.split_secondary++;
    return 1;
}

/* ----------------------------------------------------------- race tracking */

static void ref_add(px_ab_pair *p, ab_key *k, px_strent *e, int check, int write) {
    if (check && k->wr_inflight && k->wr_client != p->client) p->race = 1;
    if (write) {
        if (!k->wr_inflight) k->wr_client = p->client;
        else if (k->wr_client != p->client) k->wr_client = AB_MIXED;
        k->wr_inflight++;
        if (k->last_client != p->client) { k->other_seq = k->last_seq; k->last_client = p->client; }
        k->last_seq = p->seq;
    }
    k->refs++;
    p->ref[p->nref++] = (ab_ref){k, e, (unsigned char)check, (unsigned char)write};
}

static void track_begin(px_ab_pair *p, int argc, resp_arg *argv) {
    int pos[AB_MAXKEYS + 1];
    int n = fd_command_keys(p->cmd, argc, argv, pos, AB_MAXKEYS + 1);
    int w = (p->cmd->flags & FD_CMD_WRITE) != 0;
    p->seq = ++ab.seq;
    if (n > 0 && (p->key = malloc(argv[pos[0]].len + 1)) != NULL) {
        memcpy(p->key, argv[pos[0]].ptr, argv[pos[0]].len);
        p->key[argv[pos[0]].len] = 0;
        p->keylen = argv[pos[0]].len;
    }
    if (n > AB_MAXKEYS) n = 0;                   /* many keys: as if it named them all */
    int keyed = 0;
    for (int i = 0; i < n; i++) {
        px_strent *e = px_strmap_add(&ab.keys, argv[pos[i]].ptr, argv[pos[i]].len, sizeof(ab_key), NULL);
        if (!e) { keyed = 0; break; }            /* out of memory: fall back to the global entries */
        ref_add(p, px_strmap_data(e), e, 1, w);
        keyed = 1;
    }
    if (keyed) {
        ref_add(p, &ab.all, NULL, 1, 0);
        if (w) ref_add(p, &ab.any, NULL, 0, 1);
    } else {
        ref_add(p, &ab.any, NULL, 1, w);
        if (w) ref_add(p, &ab.all, NULL, 0, 1);
    }
}

static void track_end(px_ab_pair *p) {
    for (int i = 0; i < p->nref; i++) {
        ab_ref *r = &p->ref[i];
        ab_key *k = r->k;
        uint64_t other = k->last_client != p->client ? k->last_seq : k->other_seq;
        if (r->check && other > p->seq) p->race = 1;
        if (r->write && --k->wr_inflight == 0) k->wr_client = 0;
        if (--k->refs == 0 && r->e) px_strmap_del(&ab.keys, r->e);
    }
    p->nref = 0;
}

/* --------------------------------------------------------------- mirror */

static px_ab_pair *px_ab_begin(uint64_t client, fd_command *cmd, int argc, resp_arg *argv) {
    px_backend *sec = px_srv.secondary;
    if (px_cfg.ab_mode != PX_AB_MIRROR || !sec || !cmd || ab.stopped_at_ms) return NULL;
    int w = (cmd->flags & FD_CMD_WRITE) != 0;
    if (w ? !px_cfg.ab_mirror_writes : !px_cfg.ab_mirror_reads) return NULL;
    if (px_cfg.ab_mirror_sample < 1.0 && cmd->first_key > 0 && cmd->first_key < argc &&
        unit_hash(argv[cmd->first_key].ptr, argv[cmd->first_key].len) >= px_cfg.ab_mirror_sample) {
        ab.sampled_out++;                          /* by key: a key is always or never mirrored */
        return NULL;
    }
    if (sec->b.ops->async && (long long)ab.queued >= px_cfg.ab_mirror_queue) { ab.dropped++; return NULL; }
    px_ab_pair *p = calloc(1, sizeof *p);
    char *text = malloc(AB_TEXT_MAX + 8);
    if (!p || !text) { free(p); free(text); ab.dropped++; return NULL; }
    if (sec->b.ops->async) { p->queued = 1; ab.queued++; }
    size_t o = 0;
    for (int i = 0; i < argc && o + 8 < AB_TEXT_MAX; i++) {
        if (i) text[o++] = ' ';
        o += ab_printable(text + o, AB_TEXT_MAX - o, argv[i].ptr, argv[i].len, 1);
    }
    text[o] = '\0';
    p->cmd = cmd;
    p->text = text;
    p->client = client;
    track_begin(p, argc, argv);
    ab.mirrored++;
    return p;
}

/* ------------------------------------------------------ samples and logging */

static void sample_free(ab_sample *s) {
    free(s->text);
    free(s->rep[0]);
    free(s->rep[1]);
    free(s->diff);
    memset(s, 0, sizeof *s);
}

static const char *side_name(int side) {
    px_backend *be = side ? px_srv.secondary : px_srv.primary;
    return be ? be->own.be.backend : side ? "secondary" : "primary";
}

static void log_line(const char *kind, const ab_sample *s) {
    if (!px_cfg.ab_log_file[0]) return;
    if (!ab.log || !ab.log_name || strcmp(ab.log_name, px_cfg.ab_log_file)) {
        if (ab.log) fclose(ab.log);
        free(ab.log_name);
        ab.log = fopen(px_cfg.ab_log_file, "a");
        ab.log_name = strdup(px_cfg.ab_log_file);
        if (!ab.log) { px_log(PX_LOG_WARNING, "ab-log-file %s: cannot open", px_cfg.ab_log_file); return; }
    }
    fprintf(ab.log, "%lld %s: %s\n", s->ms, kind, s->text);
    for (int i = 0; i < 2; i++) {
        char line[AB_TEXT_MAX * 2];
        size_t o = 0;
        line[0] = 0;
        if (!s->rep[i] || !ab_reply_text(s->rep[i], s->len[i], line, sizeof line - 16, &o))
            snprintf(line + o, sizeof line - o, "%s(truncated)", o ? " ... " : "");
        fprintf(ab.log, "  %s %s: %s\n", i ? "secondary" : "primary", side_name(i), line);
    }
    if (s->diff) fprintf(ab.log, "  diff: %s\n", s->diff);
    fflush(ab.log);
}

/* Move p's command and replies into a sample (p keeps none of them). */
static void take_sample(ab_sample *s, px_ab_pair *p) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    s->ms = (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
    s->text = p->text;
    p->text = NULL;
    for (int i = 0; i < 2; i++) {
        s->rep[i] = p->rep[i];
        s->len[i] = p->len[i] < AB_TEXT_MAX ? p->len[i] : AB_TEXT_MAX;
        p->rep[i] = NULL;
    }
}

void ab_keep_divergence(ab_sample *src) {
    ab_sample *s = &ab.samples[ab.next_sample];
    sample_free(s);
    *s = *src;
    memset(src, 0, sizeof *src);
    ab.next_sample = (ab.next_sample + 1) % AB_SAMPLES;
    if (ab.nsamples < AB_SAMPLES) ab.nsamples++;
    log_line("divergence", s);
}

/* Races come in bursts on hot keys: ab-log-file gets at most AB_RACE_LOG a
 * second, then one line counting the rest. */
#define AB_RACE_LOG 10
static void keep_race(px_ab_pair *p) {
    ab_sample *s = &ab.race_samples[ab.next_race];
    sample_free(s);
    take_sample(s, p);
    ab.next_race = (ab.next_race + 1) % AB_RACES;
    if (ab.nraces < AB_RACES) ab.nraces++;
    long long sec = s->ms / 1000;
    if (sec != ab.race_log_sec) {
        if (ab.race_log_skipped && ab.log && px_cfg.ab_log_file[0]) {
            fprintf(ab.log, "%lld races: %llu more not logged in that second (INFO ab counts them all)\n",
                    ab.race_log_sec * 1000 + 999, (unsigned long long)ab.race_log_skipped);
        }
        ab.race_log_sec = sec;
        ab.race_log_n = 0;
        ab.race_log_skipped = 0;
    }
    if (ab.race_log_n++ < AB_RACE_LOG) log_line("race", s);
    else ab.race_log_skipped++;
}

static void divergence(px_ab_pair *p) {
    ab.divergences++;
    p->cmd->ab_mismatches++;
    if (px_cfg.ab_stop_after > 0 && ab.divergences >= (uint64_t)px_cfg.ab_stop_after && !ab.stopped_at_ms) {
        ab.stopped_at_ms = (uint64_t)px_now_ms();
        px_log(PX_LOG_WARNING, "A/B: %llu divergences (ab-stop-after): mirroring stopped; FRONTDOOR AB RESET resumes it",
               (unsigned long long)ab.divergences);
    }
    if (px_cfg.ab_mismatch_log == PX_AB_LOG_COUNT) return;
    ab_sample s = {0};
    take_sample(&s, p);
    if (px_cfg.ab_mismatch_log == PX_AB_LOG_DIFF && p->key && ab_diff_divergence(&s, p->key, p->keylen) == 0) {
        p->key = NULL;
        return;
    }
    ab_keep_divergence(&s);
}

static void px_ab_record(px_ab_pair *p, int side, const char *reply, size_t len, int failed) {
    if (!p) return;
    if (side == 1 && p->queued) { p->queued = 0; ab.queued--; }
    p->have[side] = 1;
    p->failed[side] = failed;
    if (!failed && (p->rep[side] = malloc(len ? len : 1)) != NULL) {
        memcpy(p->rep[side], reply, len);
        p->len[side] = len;
    }
    if (!p->have[0] || !p->have[1]) return;
    track_end(p);
    if (p->failed[1]) { ab.dropped++; ab.secondary_errors++; }
    else if (!p->failed[0] && p->rep[0] && p->rep[1] && !(p->cmd->flags & FD_CMD_NONDET)) {
        ab.compared++;
        p->cmd->ab_compared++;
        if (!ab_replies_equal(p->cmd, p->rep[0], p->len[0], p->rep[1], p->len[1])) {
            if (p->race) {
                ab.races++;
                ab.races_by_cmd[p->cmd->id]++;
                if (px_cfg.ab_mismatch_log != PX_AB_LOG_COUNT) keep_race(p);
            } else {
                divergence(p);
            }
        }
    }
    free(p->text);
    free(p->rep[0]);
    free(p->rep[1]);
    free(p->key);
    free(p);
}

/* ------------------------------------------------------------- the layer */

static void on_side(void *ud, const char *reply, size_t len, int failed) {
    struct px_ab_side *s = ud;
    px_ab_record(s->p, s->side, reply, len, failed);
}

/* The routing layer (server.h): dispatch hands every backend command here;
 * A/B lives entirely below this line. */
int px_route_submit(px_conn *c, fd_command *cmd, int argc, resp_arg *argv, const char *raw, size_t rawlen,
                    uint64_t *clock) {
    if (px_cfg.ab_mode == PX_AB_OFF || !px_srv.secondary || !cmd)
        return px_submit_to(px_srv.primary, c, &c->out, c->id, cmd, argc, argv, raw, rawlen, clock, NULL);
    if (px_cfg.ab_mode == PX_AB_SPLIT) {
        px_backend *be = px_ab_split_to_secondary(c, cmd, argc, argv) ? px_srv.secondary : px_srv.primary;
        return px_submit_to(be, c, &c->out, c->id, cmd, argc, argv, raw, rawlen, clock, NULL);
    }
    px_ab_pair *p = px_ab_begin(c->id, cmd, argc, argv);
    if (!p) return px_submit_to(px_srv.primary, c, &c->out, c->id, cmd, argc, argv, raw, rawlen, clock, NULL);
    for (int i = 0; i < 2; i++) {
        p->sides[i] = (struct px_ab_side){p, i};
        p->tap[i] = (px_tap){on_side, &p->sides[i]};
    }
    px_backend *sec = px_srv.secondary;
    px_tap tap1 = p->tap[1];                 /* p is freed by the second answer: never read p after it */
    int owed = px_submit_to(px_srv.primary, c, &c->out, c->id, cmd, argc, argv, raw, rawlen, clock, &p->tap[0]);
    resp_out scratch;
    resp_out_init(&scratch, c->out.proto);
    uint64_t copy_clock = *clock;            /* the copy starts when the primary's part ended */
    px_submit_to(sec, NULL, &scratch, c->id, cmd, argc, argv, raw, rawlen, &copy_clock, &tap1);
    resp_out_free(&scratch);
    return owed;
}

/* ---------------------------------------------------------------- reports */

static const char *const mode_names[] = {"off", "split", "mirror"};

void px_ab_info(resp_out *o) {
    char buf[256];
#define L(...) do { int n_ = snprintf(buf, sizeof buf, __VA_ARGS__); resp_out_raw(o, buf, (size_t)n_ < sizeof buf ? (size_t)n_ : sizeof buf - 1); } while (0)
    L("ab_mode:%s\r\n", mode_names[px_cfg.ab_mode]);
    L("ab_primary:%s\r\n", px_srv.primary ? px_srv.primary->own.be.backend : "");
    L("ab_secondary:%s\r\n", px_srv.secondary ? px_srv.secondary->own.be.backend : "");
    L("ab_split_by:%s\r\n", px_cfg.ab_split_by == PX_AB_BY_CLIENT ? "client" : "key");
    L("ab_split_fraction:%g\r\n", px_cfg.ab_split_fraction);
    L("ab_mirror_writes:%s\r\n", px_cfg.ab_mirror_writes ? "yes" : "no");
    L("ab_mirror_reads:%s\r\n", px_cfg.ab_mirror_reads ? "yes" : "no");
    L("ab_mirror_sample:%g\r\n", px_cfg.ab_mirror_sample);
    L("ab_mirrored:%llu\r\n", (unsigned long long)ab.mirrored);
    L("ab_sampled_out:%llu\r\n", (unsigned long long)ab.sampled_out);
    L("ab_compared:%llu\r\n", (unsigned long long)ab.compared);
    L("ab_mismatches:%llu\r\n", (unsigned long long)(ab.divergences + ab.races));
    L("ab_divergences:%llu\r\n", (unsigned long long)ab.divergences);
    L("ab_races:%llu\r\n", (unsigned long long)ab.races);
    L("ab_stopped:%s\r\n", ab.stopped_at_ms ? "yes" : "no");
    L("ab_dropped:%llu\r\n", (unsigned long long)ab.dropped);
    L("ab_secondary_errors:%llu\r\n", (unsigned long long)ab.secondary_errors);
    L("ab_queue:%llu\r\n", (unsigned long long)ab.queued);
    L("ab_split_secondary:%llu\r\n", (unsigned long long)ab.split_secondary);
    size_t n;
    fd_command *t = fd_commands_table(&n);
    for (size_t i = 0; i < n; i++)
        if (t[i].ab_compared)
            L("ab_cmd_%s:compared=%llu,divergences=%llu,races=%llu\r\n", t[i].name,
              (unsigned long long)t[i].ab_compared, (unsigned long long)t[i].ab_mismatches,
              (unsigned long long)ab.races_by_cmd[t[i].id]);
#undef L
}

void px_ab_counters(px_ab_counts *o) {
    *o = (px_ab_counts){ab.mirrored, ab.compared, ab.divergences, ab.races, ab.dropped, ab.secondary_errors,
                        ab.queued, ab.split_secondary, ab.sampled_out, ab.stopped_at_ms != 0};
}

static void report_reply(resp_out *t, const char *who, const char *r, size_t len) {
    char line[AB_TEXT_MAX * 2 + 64];
    size_t o = (size_t)snprintf(line, sizeof line, "    %-20s ", who);
    if (!r || !ab_reply_text(r, len, line, sizeof line - 2, &o)) o += (size_t)snprintf(line + o, sizeof line - o, "(truncated)");
    if (o > sizeof line - 2) o = sizeof line - 2;
    line[o++] = '\n';
    resp_out_raw(t, line, o);
}

static void report_backend(resp_out *t, const char *label, const px_backend *be) {
    char line[512];
    const px_hist *l = &be->latency, *w = &be->wait;
    double fd = px_backend_frontdoor_us(be);
    int n = snprintf(line, sizeof line, "%-10s %-9s %10llu %8llu %9.1f %9.1f %9.1f %9.1f %9.1f %9.2f\n", label, be->b.ops->name,
                     (unsigned long long)be->calls, (unsigned long long)be->errors,
                     px_hist_quantile(l, 0.5) / 1e3, px_hist_quantile(l, 0.99) / 1e3, px_hist_quantile(l, 0.999) / 1e3,
                     px_hist_quantile(w, 0.5) / 1e3, px_hist_quantile(w, 0.99) / 1e3, fd);
    resp_out_raw(t, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* FRONTDOOR REPORT: the A/B state and the backends' latencies as a text a
 * person reads (redis-cli FRONTDOOR REPORT). */
static void report(px_conn *c) {
    resp_out t;
    resp_out_init(&t, 2);
    char line[AB_DIFF_MAX + 64];
#define P(...) do { int n_ = snprintf(line, sizeof line, __VA_ARGS__); resp_out_raw(&t, line, (size_t)n_ < sizeof line ? (size_t)n_ : sizeof line - 1); } while (0)
    if (px_cfg.ab_mode == PX_AB_MIRROR) P("A/B mode: mirror (%s mirrored%s; queue %llu of %lld)\n",
        px_cfg.ab_mirror_writes && px_cfg.ab_mirror_reads ? "reads and writes" : px_cfg.ab_mirror_writes ? "writes only" : "reads only",
        ab.stopped_at_ms ? ", STOPPED after ab-stop-after divergences" : "", (unsigned long long)ab.queued, px_cfg.ab_mirror_queue);
    else if (px_cfg.ab_mode == PX_AB_SPLIT) P("A/B mode: split by %s, %.1f%% to the secondary\n", px_cfg.ab_split_by == PX_AB_BY_CLIENT ? "client" : "key", px_cfg.ab_split_fraction * 100);
    else P("A/B mode: off\n");
    P("backend swaps: %llu\n\n", (unsigned long long)px_srv.switches);
    P("latency in microseconds: total = from the hand-over to the backend until the reply is ready;\n"
      "wait = waiting on the backend (an embedded store: its own work); frontdoor = total - wait, per call\n");
    P("%-10s %-9s %10s %8s %9s %9s %9s %9s %9s %9s\n", "role", "backend", "calls", "errors", "p50", "p99", "p99.9", "wait p50", "wait p99", "frontdoor");
    if (px_srv.primary) report_backend(&t, "primary", px_srv.primary);
    if (px_srv.secondary) report_backend(&t, "secondary", px_srv.secondary);
    for (px_backend *d = px_srv.draining; d; d = d->next) report_backend(&t, "draining", d);
    if (px_cfg.ab_mode == PX_AB_SPLIT) P("\nsent to the secondary: %llu\n", (unsigned long long)ab.split_secondary);
    P("\nmirrored %llu, compared %llu, identical %llu, divergences %llu, races %llu, dropped %llu (secondary failed %llu)\n",
      (unsigned long long)ab.mirrored, (unsigned long long)ab.compared,
      (unsigned long long)(ab.compared - ab.divergences - ab.races), (unsigned long long)ab.divergences,
      (unsigned long long)ab.races, (unsigned long long)ab.dropped, (unsigned long long)ab.secondary_errors);
    P("(a race: the replies differ on a key another client wrote while the command was in flight,\n"
      " so the two stores may have applied the writes in different orders; not a divergence)\n");
    size_t n;
    fd_command *tab = fd_commands_table(&n);
    int any = 0;
    for (size_t i = 0; i < n; i++)
        if (tab[i].ab_mismatches || ab.races_by_cmd[tab[i].id]) {
            if (!any++) P("by command:        divergences      races   compared\n");
            P("  %-16s %11llu %10llu %10llu\n", tab[i].name, (unsigned long long)tab[i].ab_mismatches,
              (unsigned long long)ab.races_by_cmd[tab[i].id], (unsigned long long)tab[i].ab_compared);
        }
    const char *pn = px_srv.primary ? px_srv.primary->b.ops->name : "primary";
    const char *sn = px_srv.secondary ? px_srv.secondary->b.ops->name : "secondary";
    char who[2][48];
    snprintf(who[0], sizeof who[0], "primary %s:", pn);
    snprintf(who[1], sizeof who[1], "secondary %s:", sn);
    if (ab.nsamples) P("latest divergences, newest first:\n");
    for (unsigned k = 0; k < ab.nsamples; k++) {
        const ab_sample *s = &ab.samples[(ab.next_sample + AB_SAMPLES - 1 - k) % AB_SAMPLES];
        P("  %s\n", s->text);
        report_reply(&t, who[0], s->rep[0], s->len[0]);
        report_reply(&t, who[1], s->rep[1], s->len[1]);
        if (s->diff) P("    %-20s %s\n", "key now:", s->diff);
    }
    if (ab.nraces) P("latest races, newest first:\n");
    for (unsigned k = 0; k < ab.nraces && k < 3; k++) {
        const ab_sample *s = &ab.race_samples[(ab.next_race + AB_RACES - 1 - k) % AB_RACES];
        P("  %s\n", s->text);
        report_reply(&t, who[0], s->rep[0], s->len[0]);
        report_reply(&t, who[1], s->rep[1], s->len[1]);
    }
#undef P
    resp_add_verbatim(&c->out, "txt", t.data ? t.data : "", t.len);
    resp_out_free(&t);
}

static void ab_reset(void) {
    for (unsigned i = 0; i < AB_SAMPLES; i++) sample_free(&ab.samples[i]);
    for (unsigned i = 0; i < AB_RACES; i++) sample_free(&ab.race_samples[i]);
    ab.next_sample = ab.nsamples = ab.next_race = ab.nraces = 0;
    ab.mirrored = ab.compared = ab.divergences = ab.races = ab.dropped = ab.split_secondary = ab.secondary_errors = 0;
    ab.sampled_out = ab.stopped_at_ms = 0;
    memset(ab.races_by_cmd, 0, sizeof ab.races_by_cmd);
    size_t n;
    fd_command *t = fd_commands_table(&n);
    for (size_t i = 0; i < n; i++) t[i].ab_compared = t[i].ab_mismatches = 0;
}

static void add_samples(resp_out *o, const ab_sample *ring, unsigned count, unsigned next, unsigned size) {
    resp_add_array(o, count);
    for (unsigned k = 0; k < count; k++) {
        const ab_sample *s = &ring[(next + size - 1 - k) % size];
        resp_add_array(o, 5);
        resp_add_int(o, s->ms);
        resp_add_bulk_cstr(o, s->text);
        resp_add_bulk(o, s->rep[0] ? s->rep[0] : "", s->len[0]);
        resp_add_bulk(o, s->rep[1] ? s->rep[1] : "", s->len[1]);
        if (s->diff) resp_add_bulk_cstr(o, s->diff);
        else resp_add_null(o);
    }
}

/* FRONTDOOR AB KEY k: the key's state on both sides and what differs. */
static void ab_key_cmd(px_conn *c, resp_arg *key) {
    if (px_cfg.ab_mode == PX_AB_OFF || !px_srv.secondary) { resp_add_error(&c->out, "ERR FRONTDOOR AB KEY needs an A/B secondary (ab-mode mirror or split)"); return; }
    ab_diff_key_cmd(c, key);
}

/* FRONTDOOR AB [RESET|RACES|KEY k] | FRONTDOOR REPORT | FRONTDOOR HELP */
void px_cmd_frontdoor(px_conn *c, int argc, resp_arg *argv) {
    resp_out *o = &c->out;
    if (resp_arg_is(&argv[1], "AB") && argc == 2) {
        add_samples(o, ab.samples, ab.nsamples, ab.next_sample, AB_SAMPLES);
    } else if (resp_arg_is(&argv[1], "AB") && argc == 3 && resp_arg_is(&argv[2], "RACES")) {
        add_samples(o, ab.race_samples, ab.nraces, ab.next_race, AB_RACES);
    } else if (resp_arg_is(&argv[1], "AB") && argc == 4 && resp_arg_is(&argv[2], "KEY")) {
        ab_key_cmd(c, &argv[3]);
    } else if (resp_arg_is(&argv[1], "AB") && argc == 3 && resp_arg_is(&argv[2], "RESET")) {
        ab_reset();
        resp_add_simple(o, "OK", 2);
    } else if (resp_arg_is(&argv[1], "REPORT") && argc == 2) {
        report(c);
    } else if (resp_arg_is(&argv[1], "CAPTURE")) {               /* capture (issue 17) */
        px_capture_cmd(c, argc, argv);
    } else if (resp_arg_is(&argv[1], "HELP") && argc == 2) {
        static const char *const help[] = {
            "AB",
            "    The latest A/B divergences, newest first: [unix-ms, command, primary reply, secondary reply, key diff or nil].",
            "AB RACES",
            "    The latest races (replies that differ on a key another client wrote meanwhile), same shape.",
            "AB KEY <key>",
            "    The key's state on the primary and on the secondary, and what differs: [primary, text, secondary, text, diff, text].",
            "AB RESET",
            "    Forget divergences and races, zero the A/B counters (INFO ab), resume a mirror stopped by ab-stop-after.",
            "CAPTURE START [<path>]|STOP|STATUS",
            "    Record every command clients send into <path> for fdload --replay (capture-* directives).",
            "REPORT",
            "    A readable report: A/B mode, each backend's calls, errors and latency percentiles, divergences with both replies and the key's diff, races.",
            "HELP",
            "    Print this help.",
            NULL,
        };
        px_reply_help(c, "FRONTDOOR", help);
    } else {
        resp_add_errorf(o, "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try FRONTDOOR HELP.",
                        (int)(argv[1].len > 64 ? 64 : argv[1].len), argv[1].ptr);
    }
}
