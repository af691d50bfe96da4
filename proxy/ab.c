/* ab.c — the A/B layer: split and mirror routing, mirrored pairs and units
 * (a transaction or a script compared as one), race tracking, the order
 * copies reach the secondary in, calibration, mismatch samples, INFO ab and
 * the FRONTDOOR command (see ab.h). Reply text, comparison and the key-state
 * diff are in ab_diff.c. */
#include "ab.h"
#include "ab_int.h"
#include "hooks.h"
#include "ab_report.h"   /* issue 18: verdict, REPORT JSON */
#include "builtin.h"
#include "capture.h"   /* capture (issue 17) */
#include "backends.h"
#include "commands.h"
#include "config.h"
#include "log.h"
#include "migrate.h"   /* issue 30: the backfill's dirty keys */
#include "multi.h"
#include "scripting.h"
#include "sha1.h"
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
#define AB_SCRIPTS_MAX 4096    /* script bodies remembered for a secondary's NOSCRIPT */
#define AB_NOISE_MIN_PCT 1.0   /* calibration: a command noisier than this (% of its compared reads) is "noisy" */

/* Race tracking. Every key a mirrored command names has an entry while
 * some mirrored command naming it is in flight (from px_ab_begin until both
 * sides answered). A command's mismatch is a race when another client wrote
 * one of its keys in that window: a write of another client was in flight
 * when it began, or began before it ended. `any` stands for every write
 * (keyless reads such as DBSIZE check it), `all` for keyless writes
 * (FLUSHALL: every keyed command checks it). A unit (EXEC, script) tracks
 * the keys of all its commands. */
typedef struct ab_key {
    uint32_t refs;             /* in-flight commands naming it (a map entry is freed at 0) */
    uint32_t wr_inflight;      /* in-flight writes to it */
    uint64_t wr_client;        /* their client, AB_MIXED when several */
    uint64_t last_seq, last_client;   /* the latest write begun, and its client */
    uint64_t other_seq;        /* the latest write begun by a client other than last_client */
} ab_key;

typedef struct ab_ref { ab_key *k; px_strent *e; unsigned char check, write; } ab_ref;

/* A command kept past its dispatch (multi.h px_cmd_copy: argv points into raw,
 * one block owned through argv). */
typedef struct ab_cmd {
    fd_command *cmd;           /* NULL: a command the table does not know (a Redis backend's) */
    int         argc;
    resp_arg   *argv;
    char       *raw;           /* the multibulk bytes (after the argv array, one block) */
    size_t      rawlen;
} ab_cmd;

typedef struct px_ab_pair px_ab_pair;

/* One element of a unit: one queued command's reply on each side. */
typedef struct ab_el {
    char   *rep[2];
    size_t  len[2];
    int     have[2], failed[2];
    int     remote;            /* the secondary runs it (not served by the proxy) */
    int     routed;            /* its primary reply comes through the route (else px_ab_exec_local) */
    struct ab_eltap { px_ab_pair *p; int side, i; } ud[2];
    px_tap  tap[2];
} ab_el;

enum { AB_ONE, AB_EXEC };
enum { AB_WHOLE_ALL = 1, AB_WHOLE_REMOTE = 2 };   /* a side of a unit answered with one EXEC reply */

struct px_ab_pair {
    px_tap      tap[2];        /* what each side's request reports to (px_call) */
    struct px_ab_side { struct px_ab_pair *p; int side; } sides[2];
    fd_command *cmd;           /* the command; a unit: EXEC */
    int         kind;          /* AB_ONE (a command or a script) or AB_EXEC */
    char       *text;          /* the command, printable, truncated */
    char       *rep[2];
    size_t      len[2];
    int         have[2], failed[2];
    int         queued;        /* counted in ab.queued until the secondary answers */
    int         calib;         /* calibration: side 1 is the primary asked again */
    uint64_t    client, seq;   /* the client; its place in the order commands began */
    int         race;          /* another client wrote one of its keys meanwhile */
    int         defer;         /* its copy waits for the primary's reply (in `copy`: ab-mirror-order primary) */
    int         retried;       /* EVALSHA resent as EVAL after the secondary's NOSCRIPT */
    int         retained;      /* a unit on an async secondary holds other clients (multi.h px_atomic_retain) */
    int         proto;
    ab_cmd      copy;          /* the command (a deferred copy, an EVALSHA) */
    char       *key;           /* its first key (for the diff), NULL when keyless */
    size_t      keylen;
    int         nref, refcap;
    ab_ref     *ref;
    /* a unit (AB_EXEC) */
    int         nel, left[2], whole[2], hold;
    int         unit_wait;     /* the unit goes to the secondary when the primary's part is in (ab-mirror-order primary) */
    px_ab_pair *out_next;      /* in the outbox (copies waiting for the loop's top level) */
    ab_cmd     *cmds;
    ab_el      *el;
};

static struct {
    uint64_t mirrored, compared, divergences, races, dropped, split_secondary, secondary_errors, queued;
    uint64_t sampled_out, stopped_at_ms, noisy, deferred, noscript_resent, units;
    uint64_t races_by_cmd[FD_CMD_COUNT];
    uint64_t noisy_by_cmd[FD_CMD_COUNT];
    /* calibration: reads asked twice of the primary */
    long long calib_left;
    uint64_t calib_done;
    uint64_t calib_compared[FD_CMD_COUNT], calib_noise[FD_CMD_COUNT];
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
    /* the EXEC running now (px_ab_exec_*): its client, its side, its pair */
    px_conn    *unit_conn;
    px_backend *unit_be;
    px_ab_pair *unit;
    int         unit_cur;
    /* script bodies by SHA1 (a secondary's NOSCRIPT is answered with EVAL) */
    px_strmap   scripts;
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

/* The first key a command names (scripts: their first declared key), or NULL. */
static const resp_arg *first_key_arg(const fd_command *cmd, int argc, const resp_arg *argv) {
    int pos[1];
    if (!cmd || fd_command_keys(cmd, argc, argv, pos, 1) < 1) return NULL;
    return &argv[pos[0]];
}

/* Split: whether the command (or unit) whose first key is `key` goes to the
 * secondary (by that key, or by the client with ab-split-by client). */
static int split_to_secondary(px_conn *c, const resp_arg *key) {
    double u;
    if (px_cfg.ab_split_by == PX_AB_BY_CLIENT) u = unit_hash(&c->id, sizeof c->id);
    else if (!key) return 0;                               /* keyless: primary */
    else u = unit_hash(key->ptr, key->len);
    if (u >= px_cfg.ab_split_fraction) return 0;
    ab.split_secondary++;
    return 1;
}

/* ----------------------------------------------------------- commands kept */

/* Copy a command (multi.h px_cmd_copy: one block, freed by cmd_free). */
static int cmd_copy(ab_cmd *q, fd_command *cmd, int argc, const resp_arg *argv) {
    char *raw;
    size_t rawlen;
    resp_arg *av = px_cmd_copy(argc, argv, &raw, &rawlen);
    if (!av) return -1;
    *q = (ab_cmd){cmd, argc, av, raw, rawlen};
    return 0;
}

static void cmd_free(ab_cmd *q) {
    free(q->argv);
    memset(q, 0, sizeof *q);
}

/* EVAL & co., SCRIPT, FUNCTION: run by frontdoor's engine on a backend that
 * is not a Redis server (scripting.h px_script_run_on). */
static int is_script(const fd_command *cmd) {
    switch (cmd->id) {
    case FD_CMD_eval: case FD_CMD_evalsha: case FD_CMD_eval_ro: case FD_CMD_evalsha_ro:
    case FD_CMD_fcall: case FD_CMD_fcall_ro: case FD_CMD_script: case FD_CMD_function:
        return 1;
    default:
        return 0;
    }
}

/* Whether a command may write (mirror policies, race tracking): a script
 * may, unless it is a _RO one. */
static int may_write(const fd_command *cmd) {
    if (!cmd) return 1;                            /* unknown to the table: assume it writes */
    if (cmd->flags & FD_CMD_WRITE) return 1;
    return cmd->id == FD_CMD_eval || cmd->id == FD_CMD_evalsha || cmd->id == FD_CMD_fcall || cmd->id == FD_CMD_function;
}

/* Printable command text appended at text[o] (at most AB_TEXT_MAX). */
static size_t text_add(char *text, size_t o, int argc, const resp_arg *argv) {
    for (int i = 0; i < argc && o + 8 < AB_TEXT_MAX; i++) {
        if (i) text[o++] = ' ';
        o += ab_printable(text + o, AB_TEXT_MAX - o, argv[i].ptr, argv[i].len, 1);
    }
    text[o] = '\0';
    return o;
}

/* Hand one side's request to `be`. A script command on a backend that is
 * not a Redis server runs in frontdoor's engine against it (synchronously);
 * anything else is px_call. detached: the reply goes to `out` only (a
 * copy); c may then be NULL (not for scripts). Returns 1 when the reply is
 * owed to c. */
static int side_submit(px_backend *be, px_conn *c, int detached, uint64_t client, resp_out *out, fd_command *cmd,
                       int argc, resp_arg *argv, const char *raw, size_t rawlen, uint64_t *clock, const px_tap *tap) {
    if (detached && be && be == px_srv.secondary && may_write(cmd)) px_migrate_touch(cmd, argc, argv);
    if (cmd && be && c && is_script(cmd) && !be->b.ops->passthrough) {
        size_t before = out->len;
        px_script_run_on(be, c, argc, argv, out);
        *clock = fd_mono_ns();
        if (tap) tap->fn(tap->ud, out->data + before, out->len - before, 0);
        return 0;
    }
    return px_call(&(px_request){.be = be, .c = detached ? NULL : c, .mark = !detached && c, .out = out,
                                 .client_id = client, .cmd = cmd, .argc = argc, .argv = argv, .raw = raw,
                                 .rawlen = rawlen, .detached = detached || !c, .tap = tap, .clock = clock});
}

/* The client with this id, NULL when it has gone (a copy sent later, when
 * the primary answered: frontdoor's engine runs a script for a client). */
static px_conn *conn_by_id(uint64_t id) {
    for (px_conn *c = px_srv.clients; c; c = c->next)
        if (c->id == id) return c;
    return NULL;
}

/* ----------------------------------------------------------- race tracking */

static int ref_add(px_ab_pair *p, ab_key *k, px_strent *e, int check, int write) {
    if (p->nref == p->refcap) {
        int ncap = p->refcap ? p->refcap * 2 : 12;
        ab_ref *nr = realloc(p->ref, (size_t)ncap * sizeof *nr);
        if (!nr) return -1;
        p->ref = nr;
        p->refcap = ncap;
    }
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
    return 0;
}

/* Track the keys of one command of p (a unit tracks each of its commands). */
static void track_cmd(px_ab_pair *p, fd_command *cmd, int argc, resp_arg *argv) {
    int pos[AB_MAXKEYS + 1];
    int n = cmd ? fd_command_keys(cmd, argc, argv, pos, AB_MAXKEYS + 1) : 0;
    int w = may_write(cmd);
    if (n > 0 && !p->key && (p->key = malloc(argv[pos[0]].len + 1)) != NULL) {
        memcpy(p->key, argv[pos[0]].ptr, argv[pos[0]].len);
        p->key[argv[pos[0]].len] = 0;
        p->keylen = argv[pos[0]].len;
    }
    if (n > AB_MAXKEYS) n = 0;                   /* many keys: as if it named them all */
    int keyed = 0;
    for (int i = 0; i < n; i++) {
        px_strent *e = px_strmap_add(&ab.keys, argv[pos[i]].ptr, argv[pos[i]].len, sizeof(ab_key), NULL);
        if (!e) { keyed = 0; break; }            /* out of memory: fall back to the global entries */
        if (ref_add(p, px_strmap_data(e), e, 1, w)) {
            if (!((ab_key *)px_strmap_data(e))->refs) px_strmap_del(&ab.keys, e);
            keyed = 0;
            break;
        }
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

/* ------------------------------------------------------------ script bodies */

typedef struct ab_body { char *b; size_t n; } ab_body;

/* Remember a script body by its SHA1 (EVAL, SCRIPT LOAD seen while mirroring). */
static void remember_script(const resp_arg *body) {
    if (ab.scripts.count >= AB_SCRIPTS_MAX) return;
    char sha[41];
    fd_sha1_hex(sha, body->ptr, body->len);
    int created = 0;
    px_strent *e = px_strmap_add(&ab.scripts, sha, 40, sizeof(ab_body), &created);
    if (!e || !created) return;
    ab_body *s = px_strmap_data(e);
    if (!(s->b = malloc(body->len ? body->len : 1))) { px_strmap_del(&ab.scripts, e); return; }
    memcpy(s->b, body->ptr, body->len);
    s->n = body->len;
}

static const ab_body *find_script(const resp_arg *sha) {
    char low[40];
    if (sha->len != 40) return NULL;
    for (int i = 0; i < 40; i++) {
        char ch = sha->ptr[i];
        low[i] = ch >= 'A' && ch <= 'Z' ? (char)(ch + 32) : ch;
    }
    px_strent *e = px_strmap_get(&ab.scripts, low, 40);
    return e ? px_strmap_data(e) : NULL;
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


/* --------------------------------------------------------------- pairs */

static void on_side(void *ud, const char *reply, size_t len, int failed);
static void on_el(void *ud, const char *reply, size_t len, int failed);

static px_ab_pair *pair_new(px_conn *c, fd_command *cmd, int kind) {
    px_ab_pair *p = calloc(1, sizeof *p);
    char *text = malloc(AB_TEXT_MAX + 8);
    if (!p || !text) { free(p); free(text); return NULL; }
    text[0] = 0;
    p->text = text;
    p->cmd = cmd;
    p->kind = kind;
    p->client = c->id;
    p->proto = c->out.proto;
    p->seq = ++ab.seq;
    for (int i = 0; i < 2; i++) {
        p->sides[i] = (struct px_ab_side){p, i};
        p->tap[i] = (px_tap){on_side, &p->sides[i]};
    }
    return p;
}

static void outbox_unit_done(px_ab_pair *p);

static void pair_free(px_ab_pair *p) {
    outbox_unit_done(p);
    free(p->text);
    free(p->rep[0]);
    free(p->rep[1]);
    free(p->key);
    free(p->ref);
    cmd_free(&p->copy);
    for (int i = 0; i < p->nel; i++) {
        cmd_free(&p->cmds[i]);
        free(p->el[i].rep[0]);
        free(p->el[i].rep[1]);
    }
    free(p->cmds);
    free(p->el);
    free(p);
}

/* Whether a command or unit (w: it may write; key: its first key) is
 * mirrored under the policies; counts what is not. */
static int mirror_wanted(int w, const resp_arg *key) {
    px_backend *sec = px_srv.secondary;
    if (px_cfg.ab_mode != PX_AB_MIRROR || !sec || ab.stopped_at_ms) return 0;
    if (w ? !px_cfg.ab_mirror_writes : !px_cfg.ab_mirror_reads) return 0;
    if (px_cfg.ab_mirror_sample < 1.0 && key && unit_hash(key->ptr, key->len) >= px_cfg.ab_mirror_sample) {
        ab.sampled_out++;                          /* by key: a key is always or never mirrored */
        return 0;
    }
    if (sec->b.ops->async && (long long)ab.queued >= px_cfg.ab_mirror_queue) { ab.dropped++; return 0; }
    return 1;
}

/* A mirrored command (or a calibration read) begins: its pair, or NULL. */
static px_ab_pair *px_ab_begin(px_conn *c, fd_command *cmd, int argc, resp_arg *argv) {
    if (px_cfg.ab_mode != PX_AB_MIRROR || !px_srv.secondary || !cmd || ab.stopped_at_ms) return NULL;
    int w = may_write(cmd);
    int calib = !w && ab.calib_left > 0 && (!is_script(cmd) || cmd->id == FD_CMD_eval_ro || cmd->id == FD_CMD_evalsha_ro);
    if (!calib && !mirror_wanted(w, first_key_arg(cmd, argc, argv))) {
        if (w) px_migrate_lost(cmd, argc, argv);   /* dropped (a full queue): a migration copies its keys again */
        return NULL;
    }
    px_ab_pair *p = pair_new(c, cmd, AB_ONE);
    if (!p) { ab.dropped++; if (w) px_migrate_lost(cmd, argc, argv); return NULL; }
    if (calib) {
        p->calib = 1;
        ab.calib_left--;
    } else {
        if (px_srv.secondary->b.ops->async) { p->queued = 1; ab.queued++; }
        ab.mirrored++;
    }
    text_add(p->text, 0, argc, argv);
    track_cmd(p, cmd, argc, argv);
    if ((cmd->id == FD_CMD_eval || cmd->id == FD_CMD_eval_ro) && argc > 1) remember_script(&argv[1]);
    if (cmd->id == FD_CMD_script && argc > 2 && resp_arg_is(&argv[1], "load")) remember_script(&argv[2]);
    if (cmd->id == FD_CMD_evalsha || cmd->id == FD_CMD_evalsha_ro) cmd_copy(&p->copy, cmd, argc, argv);  /* for NOSCRIPT */
    return p;
}

/* The secondary's part is in: the queue slot and an async secondary's hold are released. */
static void sec_in(px_ab_pair *p) {
    if (p->queued) { p->queued = 0; ab.queued--; }
}

/* ------------------------------------------------------------- comparison */

/* A command calibration found nondeterministic: its measured noise is above
 * AB_NOISE_MIN_PCT % of the reads compared. */
static int is_noisy(const fd_command *cmd) {
    uint64_t n = ab.calib_compared[cmd->id];
    return n && ab.calib_noise[cmd->id] && (double)ab.calib_noise[cmd->id] * 100.0 > AB_NOISE_MIN_PCT * (double)n;
}

static void divergence(px_ab_pair *p);
static void keep_race(px_ab_pair *p);

/* The replies differ: a race, noise (the command is noisy), or a divergence. */
static void mismatch(px_ab_pair *p, const fd_command *which) {
    if (p->race) {
        ab.races++;
        ab.races_by_cmd[p->cmd->id]++;
        if (px_cfg.ab_mismatch_log != PX_AB_LOG_COUNT) keep_race(p);
    } else if (is_noisy(which)) {
        ab.noisy++;
        ab.noisy_by_cmd[which->id]++;
    } else {
        divergence(p);
    }
}

static void compare_one(px_ab_pair *p) {
    if (p->calib) {                              /* the primary asked twice: noise, unless a write raced */
        if (p->failed[0] || p->failed[1] || !p->rep[0] || !p->rep[1] || p->race) return;
        ab.calib_done++;
        ab.calib_compared[p->cmd->id]++;
        if (!ab_replies_equal(p->cmd, p->rep[0], p->len[0], p->rep[1], p->len[1])) ab.calib_noise[p->cmd->id]++;
        return;
    }
    if (p->failed[1]) { ab.dropped++; ab.secondary_errors++; return; }
    if (p->failed[0] || !p->rep[0] || !p->rep[1] || (p->cmd->flags & FD_CMD_NONDET)) return;
    ab.compared++;
    p->cmd->ab_compared++;
    if (!ab_replies_equal(p->cmd, p->rep[0], p->len[0], p->rep[1], p->len[1])) mismatch(p, p->cmd);
}

/* One side of a unit as n element replies (spans). Elements the secondary
 * does not run (served by the proxy) are the primary's. 0, or -1 when the
 * side's reply is not an array of its elements (EXECABORT, nil...). */
static int unit_side(px_ab_pair *p, int s, span *v, const span *prim) {
    if (!p->whole[s]) {
        for (int i = 0; i < p->nel; i++) {
            if (s && !p->el[i].remote) v[i] = prim[i];
            else if (!p->el[i].rep[s]) return -1;
            else v[i] = (span){p->el[i].rep[s], p->el[i].len[s]};
        }
        return 0;
    }
    span *e = NULL;
    long long n = p->rep[s] ? ab_elements(p->rep[s], p->len[s], &e) : -1, j = 0;
    if (n < 0) return -1;
    for (int i = 0; i < p->nel; i++) {
        if (p->whole[s] == AB_WHOLE_REMOTE && !p->el[i].remote) { v[i] = prim[i]; continue; }
        if (j >= n) { free(e); return -1; }
        v[i] = e[j++];
    }
    free(e);
    return j == n ? 0 : -1;
}

/* A side's reply as one EXEC reply (for the sample), from its elements. */
static void unit_assemble(px_ab_pair *p, int s, const span *v) {
    if (p->rep[s]) return;
    size_t need = 24;
    for (int i = 0; i < p->nel; i++) need += v[i].n;
    char *r = malloc(need);
    if (!r) return;
    size_t o = (size_t)snprintf(r, need, "*%d\r\n", p->nel);
    for (int i = 0; i < p->nel; i++) { memcpy(r + o, v[i].p, v[i].n); o += v[i].n; }
    p->rep[s] = r;
    p->len[s] = o;
}

static char *dup_span(span s, size_t *len) {
    char *r = malloc(s.n ? s.n : 1);
    if (r) memcpy(r, s.p, s.n);
    *len = r ? s.n : 0;
    return r;
}

/* A unit (EXEC) compared element by element; a mismatch names the first
 * queued command whose replies differ. */
static void compare_unit(px_ab_pair *p) {
    if (p->failed[1]) { ab.dropped++; ab.secondary_errors++; return; }
    if (p->failed[0]) return;
    span *v0 = calloc((size_t)p->nel + 1, sizeof *v0), *v1 = calloc((size_t)p->nel + 1, sizeof *v1);
    if (!v0 || !v1) { free(v0); free(v1); return; }
    ab.compared++;
    p->cmd->ab_compared++;
    int bad = unit_side(p, 0, v0, NULL) || unit_side(p, 1, v1, v0);
    int first = -1;
    for (int i = 0; !bad && i < p->nel && first < 0; i++) {
        const fd_command *ci = p->cmds[i].cmd;
        if (!ci || (ci->flags & FD_CMD_NONDET)) continue;
        if (!ab_replies_equal(ci, v0[i].p, v0[i].n, v1[i].p, v1[i].n)) first = i;
    }
    if (!bad && first < 0) { free(v0); free(v1); return; }
    const fd_command *which = p->cmd;
    char *text = malloc(AB_TEXT_MAX + 8);
    if (text && first >= 0) {
        ab_cmd *q = &p->cmds[first];
        size_t o = (size_t)snprintf(text, AB_TEXT_MAX, "EXEC: queued command %d of %d differs: ", first + 1, p->nel);
        o = text_add(text, o, q->argc, q->argv);
        snprintf(text + o, AB_TEXT_MAX + 8 - o, " | %s", p->text);
        /* the sample shows that command's replies, and the diff its key */
        char *r0, *r1;
        size_t l0, l1;
        if ((r0 = dup_span(v0[first], &l0)) && (r1 = dup_span(v1[first], &l1))) {
            free(p->rep[0]); free(p->rep[1]);
            p->rep[0] = r0; p->len[0] = l0;
            p->rep[1] = r1; p->len[1] = l1;
        } else free(r0);
        const resp_arg *k = first_key_arg(q->cmd, q->argc, q->argv);
        free(p->key);
        p->key = NULL;
        if (k && (p->key = malloc(k->len + 1)) != NULL) { memcpy(p->key, k->ptr, k->len); p->key[k->len] = 0; p->keylen = k->len; }
        if (q->cmd) which = q->cmd;
    } else if (text) {
        snprintf(text, AB_TEXT_MAX, "EXEC: the replies differ in shape | %s", p->text);
        if (!unit_side(p, 0, v0, NULL)) unit_assemble(p, 0, v0);
        if (!unit_side(p, 1, v1, v0)) unit_assemble(p, 1, v1);
    }
    if (text) { free(p->text); p->text = text; }
    free(v0);
    free(v1);
    mismatch(p, which);
}

/* A migration runs and a write's copy did not reach the secondary (it
 * failed, or the secondary was unavailable): its keys are copied again. */
static void migrate_lost(px_ab_pair *p) {
    static const char unavail[] = "-ERR backend unavailable";
    if (p->calib || !px_migrate_running() || !may_write(p->cmd)) return;
    if (!p->failed[1] && !(p->rep[1] && p->len[1] >= sizeof unavail - 1 && !memcmp(p->rep[1], unavail, sizeof unavail - 1)))
        return;
    int keyed = 0;
    for (int i = 0; i < p->nref; i++)
        if (p->ref[i].write && p->ref[i].e) { px_migrate_lost_key(p->ref[i].e->name, p->ref[i].e->len); keyed = 1; }
    if (!keyed) px_migrate_lost(NULL, 0, NULL);
}

static void maybe_finish(px_ab_pair *p) {
    if (p->hold || !p->have[0] || !p->have[1]) return;
    migrate_lost(p);
    track_end(p);
    if (p->kind == AB_EXEC) compare_unit(p);
    else compare_one(p);
    pair_free(p);
}

static void send_copy(px_ab_pair *p);
static void unit_go(px_ab_pair *p);
static void copy_ready(px_ab_pair *p);

static void px_ab_record(px_ab_pair *p, int side, const char *reply, size_t len, int failed) {
    if (side == 1) sec_in(p);
    p->have[side] = 1;
    p->failed[side] = failed;
    if (!failed && (p->rep[side] = malloc(len ? len : 1)) != NULL) {
        memcpy(p->rep[side], reply, len);
        p->len[side] = len;
    }
    if (side == 0 && (p->defer || p->unit_wait)) { copy_ready(p); return; }   /* may free p */
    maybe_finish(p);
}

/* The secondary answered -NOSCRIPT to an EVALSHA the primary ran: send the
 * body as EVAL — remembered from an EVAL or SCRIPT LOAD seen while
 * mirroring, else from frontdoor's engine (a script loaded before mirroring
 * started with an lmdb, leveldb or mongodb primary; copied into ab.scripts
 * first: the engine's copy lives only until a SCRIPT FLUSH). 1 when resent. */
static int noscript_retry(px_ab_pair *p, const char *reply, size_t len) {
    if (p->retried || p->calib || !p->copy.argv || len < 9 || memcmp(reply, "-NOSCRIPT", 9) || !px_srv.secondary) return 0;
    const ab_body *b = find_script(&p->copy.argv[1]);
    const char *kb;
    size_t kl;
    if (!b && px_script_body(&p->copy.argv[1], &kb, &kl)) {
        remember_script(&(resp_arg){(char *)kb, kl});
        b = find_script(&p->copy.argv[1]);
    }
    if (!b) return 0;
    int ro = p->cmd->id == FD_CMD_evalsha_ro;
    resp_arg *av = malloc((size_t)p->copy.argc * sizeof *av);
    if (!av) return 0;
    memcpy(av, p->copy.argv, (size_t)p->copy.argc * sizeof *av);
    av[0] = ro ? (resp_arg){"EVAL_RO", 7} : (resp_arg){"EVAL", 4};
    av[1] = (resp_arg){b->b, b->n};
    p->retried = 1;
    ab.noscript_resent++;
    px_tap t = p->tap[1];
    resp_out scratch;
    resp_out_init(&scratch, p->proto);
    uint64_t clock = fd_mono_ns();
    /* never touch p after this: the reply may complete it */
    px_call(&(px_request){.be = px_srv.secondary, .out = &scratch, .client_id = p->client,
                          .cmd = fd_command_lookup(av[0].ptr, av[0].len), .argc = p->copy.argc, .argv = av,
                          .detached = 1, .tap = &t, .clock = &clock});
    resp_out_free(&scratch);
    free(av);
    return 1;
}

static void on_side(void *ud, const char *reply, size_t len, int failed) {
    struct px_ab_side *s = ud;
    if (s->side == 1 && !failed && noscript_retry(s->p, reply, len)) return;
    px_ab_record(s->p, s->side, reply, len, failed);
}

/* One element of a unit answered on one side. */
static void on_el(void *ud, const char *reply, size_t len, int failed) {
    struct ab_eltap *t = ud;
    px_ab_pair *p = t->p;
    ab_el *e = &p->el[t->i];
    int s = t->side;
    if (e->have[s]) return;
    e->have[s] = 1;
    e->failed[s] = failed;
    if (failed) p->failed[s] = 1;
    else if ((e->rep[s] = malloc(len ? len : 1)) != NULL) { memcpy(e->rep[s], reply, len); e->len[s] = len; }
    if (--p->left[s] > 0) return;
    if (s == 1) { sec_in(p); if (p->retained) { p->retained = 0; px_atomic_release(); } outbox_unit_done(p); }
    p->have[s] = 1;
    if (s == 0 && p->unit_wait) { copy_ready(p); return; }   /* may free p */
    maybe_finish(p);
}

/* A copy held back (ab-mirror-order primary) goes to the secondary now that
 * the primary answered. */
static void send_copy(px_ab_pair *p) {
    p->defer = 0;
    resp_out scratch;
    resp_out_init(&scratch, p->proto);
    uint64_t clock = fd_mono_ns();
    px_tap t = p->tap[1];
    p->hold++;
    px_backend *sec = px_srv.secondary;
    px_conn *c = NULL;
    if (sec && is_script(p->cmd) && !sec->b.ops->passthrough &&
        (!(c = conn_by_id(p->client)) || px_script_client())) {
        t.fn(t.ud, NULL, 0, 1);                 /* the client left (or a script runs): not run, dropped */
    } else {
        side_submit(sec, c, 1, p->client, &scratch, p->cmd, p->copy.argc, p->copy.argv, p->copy.raw, p->copy.rawlen,
                    &clock, &t);
    }
    resp_out_free(&scratch);
    p->hold--;
    maybe_finish(p);
}

/* The outbox (ab-mirror-order primary). A script that frontdoor's engine
 * runs against an asynchronous secondary (mongodb) waits for each
 * redis.call with the loop running nested, which it must not do inside the
 * primary's reply callback (that backend's read or completion handler is
 * mid-way). Such a copy waits here until the loop is at its top level
 * (outbox_run, before the loop blocks); every copy whose primary answers
 * after it, and every copy that answers while a script copy runs, queues
 * behind it, so the secondary still gets them in the primary's order.
 * A transaction (unit) for such a secondary goes the same way (its queued
 * commands may be scripts), and until all its replies are in (`unit`)
 * nothing else leaves the outbox: the copies the primary answers meanwhile
 * wait behind it, so the secondary runs the unit whole, as multi.h's hold
 * does for copies sent at dispatch (px_atomic_retain). */
static struct {
    px_ab_pair *head, *tail;
    int         running;       /* a script copy runs (nested loop) */
    px_ab_pair *unit;          /* a unit sent from here whose secondary replies are not all in */
    ev_prepare  w;
} outbox;

static int runs_nested(const px_ab_pair *p) {
    px_backend *sec = px_srv.secondary;
    return sec && !sec->b.ops->passthrough && sec->b.ops->async &&
           ((p->kind == AB_ONE && is_script(p->cmd)) || p->kind == AB_EXEC);
}

/* p's secondary part is in (or p goes): the outbox may move on. */
static void outbox_unit_done(px_ab_pair *p) {
    if (outbox.unit == p) outbox.unit = NULL;
}

static void outbox_run(struct ev_loop *loop, ev_prepare *w, int revents) {
    (void)revents;
    if (ev_depth(loop) > 1 || outbox.running) return;          /* nested: a script waits; later */
    while (outbox.head && !outbox.unit) {
        px_ab_pair *p = outbox.head;
        if (!(outbox.head = p->out_next)) outbox.tail = NULL;
        p->out_next = NULL;
        int nested = runs_nested(p);
        outbox.running = nested;
        if (p->unit_wait) unit_go(p);                         /* may free p */
        else send_copy(p);                                    /* may free p */
        outbox.running = 0;
    }
    if (!outbox.head) ev_prepare_stop(loop, w);               /* else a unit's replies are awaited */
}

/* The primary answered a deferred copy or unit: send it now, or queue it. */
static void copy_ready(px_ab_pair *p) {
    if (!outbox.head && !outbox.running && !outbox.unit && !runs_nested(p)) {
        if (p->unit_wait) unit_go(p);
        else send_copy(p);
        return;
    }
    if (outbox.tail) outbox.tail->out_next = p;
    else outbox.head = p;
    outbox.tail = p;
    if (!ev_is_active(&outbox.w)) {
        ev_prepare_init(&outbox.w, outbox_run);
        ev_prepare_start(px_srv.loop, &outbox.w);
    }
}

/* ------------------------------------------------------------- the layer */

/* The router (hooks.h: route): while a secondary is open dispatch hands
 * every backend command here; A/B lives entirely below this line. */
static int ab_route(px_conn *c, fd_command *cmd, int argc, resp_arg *argv, const char *raw, size_t rawlen,
                    uint64_t *clock) {
    if (ab.unit_conn && ab.unit_conn == c) {
        /* a command of the EXEC running now: to the unit's side; in mirror
         * mode its primary reply is the unit's element (the unit goes to
         * the secondary whole, px_ab_exec_end) */
        px_ab_pair *p = ab.unit;
        const px_tap *tap = NULL;
        if (p && !p->whole[0] && ab.unit_cur >= 0 && ab.unit_cur < p->nel && !p->el[ab.unit_cur].routed) {
            p->el[ab.unit_cur].routed = 1;
            tap = &p->el[ab.unit_cur].tap[0];
        }
        return side_submit(ab.unit_be, c, 0, c->id, &c->out, cmd, argc, argv, raw, rawlen, clock, tap);
    }
    if (px_cfg.ab_mode == PX_AB_OFF || !px_srv.secondary || !cmd)
        return px_call(&(px_request){.be = px_srv.primary, .c = c, .mark = 1, .out = &c->out, .client_id = c->id,
                                     .cmd = cmd, .argc = argc, .argv = argv, .raw = raw, .rawlen = rawlen,
                                     .clock = clock});
    if (px_cfg.ab_mode == PX_AB_SPLIT) {
        px_backend *be = split_to_secondary(c, first_key_arg(cmd, argc, argv)) ? px_srv.secondary : px_srv.primary;
        return side_submit(be, c, 0, c->id, &c->out, cmd, argc, argv, raw, rawlen, clock, NULL);
    }
    px_ab_pair *p = px_ab_begin(c, cmd, argc, argv);
    if (!p) return side_submit(px_srv.primary, c, 0, c->id, &c->out, cmd, argc, argv, raw, rawlen, clock, NULL);
    /* ab-mirror-order primary: with a network primary the copy goes when
     * the primary's reply arrives, so the secondary gets the writes of
     * different clients in the order the primary acknowledged them (which
     * is the order it ran them, but for replies of one redis-server turn:
     * docs/ab-testing.md); with an embedded primary the primary has run the
     * command already. A script too (one frontdoor's engine runs against a
     * mongodb secondary goes through the outbox, copy_ready). */
    int defer = !p->calib && px_cfg.ab_mirror_order == PX_AB_ORDER_PRIMARY && px_srv.primary && px_srv.primary->b.ops->async &&
                (p->copy.argv || cmd_copy(&p->copy, cmd, argc, argv) == 0);
    p->defer = defer;
    if (defer) ab.deferred++;
    px_tap tap1 = p->tap[1];                 /* p is freed by the second answer: never read p after it */
    px_backend *other = p->calib ? px_srv.primary : px_srv.secondary;
    int owed = side_submit(px_srv.primary, c, 0, c->id, &c->out, cmd, argc, argv, raw, rawlen, clock, &p->tap[0]);
    if (defer) return owed;                  /* sent by px_ab_record when the primary answers */
    resp_out scratch;
    resp_out_init(&scratch, c->out.proto);
    uint64_t copy_clock = *clock;            /* the copy starts when the primary's part ended */
    side_submit(other, c, 1, c->id, &scratch, cmd, argc, argv, raw, rawlen, &copy_clock, &tap1);
    resp_out_free(&scratch);
    return owed;
}

int px_ab_routes(void) { return px_cfg.ab_mode != PX_AB_OFF && px_srv.secondary != NULL; }

int px_ab_key_writes_inflight(const char *key, size_t len) {
    px_strent *e = px_strmap_get(&ab.keys, key, len);
    return (e && ((ab_key *)px_strmap_data(e))->wr_inflight) || ab.all.wr_inflight;
}

/* ------------------------------------------------------------------ units */

px_backend *px_ab_exec_begin(px_conn *c, int n, const px_unit_cmd *q) {
    ab.unit = NULL;
    ab.unit_cur = -1;
    if (!px_ab_routes()) return px_srv.primary;    /* A/B off: the route is not told about units */
    ab.unit_conn = c;
    ab.unit_be = px_srv.primary;
    const resp_arg *key = NULL;
    int w = 0;
    for (int i = 0; i < n; i++) {
        if (!key) key = first_key_arg(q[i].cmd, q[i].argc, q[i].argv);
        if (may_write(q[i].cmd)) w = 1;
    }
    if (px_cfg.ab_mode == PX_AB_SPLIT) {
        if (split_to_secondary(c, key)) ab.unit_be = px_srv.secondary;
        return ab.unit_be;
    }
    if (!n || !mirror_wanted(w, key)) {
        for (int i = 0; w && i < n; i++) px_migrate_lost(q[i].cmd, q[i].argc, q[i].argv);
        return ab.unit_be;
    }
    px_ab_pair *p = pair_new(c, fd_command_lookup("exec", 4), AB_EXEC);
    if (p && (!(p->cmds = calloc((size_t)n, sizeof *p->cmds)) || !(p->el = calloc((size_t)n, sizeof *p->el)))) {
        pair_free(p);
        p = NULL;
    }
    if (!p) { ab.dropped++; return ab.unit_be; }
    size_t o = (size_t)snprintf(p->text, AB_TEXT_MAX, "MULTI/EXEC:");
    for (int i = 0; i < n; i++) {
        if (cmd_copy(&p->cmds[i], q[i].cmd, q[i].argc, q[i].argv)) {
            p->nel = i;
            pair_free(p);
            ab.dropped++;
            return ab.unit_be;
        }
        ab_el *e = &p->el[i];
        e->remote = !q[i].cmd || !px_handler_of(q[i].cmd);
        for (int s = 0; s < 2; s++) {
            e->ud[s] = (struct ab_eltap){p, s, i};
            e->tap[s] = (px_tap){on_el, &e->ud[s]};
        }
        if (o + 8 < AB_TEXT_MAX) { p->text[o++] = ' '; o = text_add(p->text, o, q[i].argc, q[i].argv); }
        if (i + 1 < n && o + 8 < AB_TEXT_MAX) p->text[o++] = ';', p->text[o] = 0;
    }
    p->nel = n;
    for (int i = 0; i < n; i++) track_cmd(p, p->cmds[i].cmd, p->cmds[i].argc, p->cmds[i].argv);
    p->left[0] = n;
    p->hold = 1;                             /* until px_ab_exec_end sent the secondary's part */
    if (px_srv.primary && px_srv.primary->b.ops->passthrough) p->whole[0] = AB_WHOLE_ALL;
    if (px_srv.secondary->b.ops->async) { p->queued = 1; ab.queued++; }
    ab.mirrored++;
    ab.units++;
    ab.unit = p;
    return ab.unit_be;
}

void px_ab_exec_step(int i) { ab.unit_cur = i; }

void px_ab_exec_local(int i, const char *reply, size_t len) {
    px_ab_pair *p = ab.unit;
    if (!p || p->whole[0] || i < 0 || i >= p->nel || p->el[i].routed) return;
    p->el[i].routed = 1;
    on_el(&p->el[i].ud[0], reply, len, 0);
}

const px_tap *px_ab_exec_tap(void) {
    px_ab_pair *p = ab.unit;
    return p && p->whole[0] ? &p->tap[0] : NULL;
}

/* The unit to the secondary, on its own atomic-unit mechanism: a Redis
 * server gets MULTI, the commands, EXEC as one block on one connection; an
 * embedded store runs them one after the other now (one loop step, one
 * commit); an asynchronous one (mongodb) gets them together and other
 * clients are held until its replies are in (multi.h px_atomic_retain) —
 * or, `deferred` (sent from the outbox when the primary answered), the
 * outbox sends nothing else until then (outbox.unit). */
static void send_unit(px_ab_pair *p, px_conn *c, int deferred) {
    px_backend *sec = px_srv.secondary;
    for (int i = 0; i < p->nel; i++)                 /* a write's copy issued: a migration's copy of its keys is dirty */
        if (p->el[i].remote && may_write(p->cmds[i].cmd)) px_migrate_touch(p->cmds[i].cmd, p->cmds[i].argc, p->cmds[i].argv);
    if (!sec) { sec_in(p); p->failed[1] = p->have[1] = 1; return; }
    int nremote = 0;
    const resp_arg *rk = NULL;
    for (int i = 0; i < p->nel; i++)
        if (p->el[i].remote) {
            nremote++;
            if (!rk) rk = first_key_arg(p->cmds[i].cmd, p->cmds[i].argc, p->cmds[i].argv);
        }
    if (!nremote) { sec_in(p); p->have[1] = 1; return; }
    if (sec->b.ops->passthrough && !c) {
        /* the client left before the primary answered: the block on the
         * connection of its id (a cluster: routed part by part) */
        static resp_arg multi_arg[1] = {{"MULTI", 5}}, exec_arg[1] = {{"EXEC", 4}};
        resp_out scratch;
        resp_out_init(&scratch, p->proto);
        uint64_t clock = fd_mono_ns();
        p->whole[1] = AB_WHOLE_REMOTE;
        /* the unit's remote parts as one MULTI ... EXEC block, copies nobody reads but EXEC's tap */
        px_request q = {.be = sec, .out = &scratch, .client_id = p->client, .argc = 1, .argv = multi_arg,
                        .detached = 1, .clock = &clock};
        px_call(&q);
        for (int i = 0; i < p->nel; i++)
            if (p->el[i].remote) {
                q.argc = p->cmds[i].argc;
                q.argv = p->cmds[i].argv;
                q.raw = p->cmds[i].raw;
                q.rawlen = p->cmds[i].rawlen;
                px_call(&q);
            }
        q.argc = 1;
        q.argv = exec_arg;
        q.raw = NULL;
        q.rawlen = 0;
        q.tap = &p->tap[1];
        px_call(&q);
        resp_out_free(&scratch);
        return;
    }
    if (sec->b.ops->passthrough) {
        static resp_arg multi_arg[1] = {{"MULTI", 5}}, exec_arg[1] = {{"EXEC", 4}};
        p->whole[1] = AB_WHOLE_REMOTE;
        px_forward_unit(c, sec, 1, multi_arg, NULL, 0, rk, 1, NULL);
        for (int i = 0; i < p->nel; i++)
            if (p->el[i].remote)
                px_forward_unit(c, sec, p->cmds[i].argc, p->cmds[i].argv, p->cmds[i].raw, p->cmds[i].rawlen, rk, 1, NULL);
        px_forward_unit(c, sec, 1, exec_arg, NULL, 0, rk, 1, &p->tap[1]);
        return;
    }
    p->left[1] = nremote;
    if (sec->b.ops->async && deferred) outbox.unit = p;       /* later copies wait behind it (outbox_run) */
    else if (sec->b.ops->async && c) { p->retained = 1; px_atomic_retain(c); }
    resp_out scratch;
    resp_out_init(&scratch, p->proto);
    uint64_t clock = fd_mono_ns();
    for (int i = 0; i < p->nel; i++) {
        if (!p->el[i].remote) continue;
        scratch.len = 0;
        ab_cmd *q = &p->cmds[i];
        side_submit(sec, c, 1, p->client, &scratch, q->cmd, q->argc, q->argv, q->raw, q->rawlen, &clock, &p->el[i].tap[1]);
    }
    resp_out_free(&scratch);
}

/* A unit held back until the primary's part was in (ab-mirror-order
 * primary): send it now. */
static void unit_go(px_ab_pair *p) {
    p->unit_wait = 0;
    p->hold++;
    send_unit(p, conn_by_id(p->client), 1);
    p->hold--;
    maybe_finish(p);
}

void px_ab_exec_end(px_conn *c) {
    px_ab_pair *p = ab.unit;
    ab.unit = NULL;
    ab.unit_conn = NULL;
    ab.unit_be = NULL;
    ab.unit_cur = -1;
    if (!p) return;
    /* ab-mirror-order primary with a network primary: the unit goes when the
     * primary's part is in, like single copies (through the outbox for a
     * mongodb secondary, which then holds later copies until the unit's
     * replies are in) */
    if (px_cfg.ab_mirror_order == PX_AB_ORDER_PRIMARY && px_srv.primary && px_srv.primary->b.ops->async &&
        px_srv.secondary && !p->have[0]) {
        p->unit_wait = 1;
        ab.deferred++;
        p->hold = 0;
        return;
    }
    send_unit(p, c, 0);
    p->hold = 0;
    maybe_finish(p);
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
    L("ab_mirror_order:%s\r\n", px_cfg.ab_mirror_order == PX_AB_ORDER_PRIMARY ? "primary" : "dispatch");
    L("ab_deferred:%llu\r\n", (unsigned long long)ab.deferred);
    L("ab_units:%llu\r\n", (unsigned long long)ab.units);
    L("ab_noscript_resent:%llu\r\n", (unsigned long long)ab.noscript_resent);
    L("ab_noisy:%llu\r\n", (unsigned long long)ab.noisy);
    L("ab_calibrate_left:%lld\r\n", ab.calib_left);
    L("ab_calibrated:%llu\r\n", (unsigned long long)ab.calib_done);
    size_t n;
    fd_command *t = fd_commands_table(&n);
    for (size_t i = 0; i < n; i++)
        if (t[i].ab_compared || ab.noisy_by_cmd[t[i].id])
            L("ab_cmd_%s:compared=%llu,divergences=%llu,races=%llu,noisy=%llu\r\n", t[i].name,
              (unsigned long long)t[i].ab_compared, (unsigned long long)t[i].ab_mismatches,
              (unsigned long long)ab.races_by_cmd[t[i].id], (unsigned long long)ab.noisy_by_cmd[t[i].id]);
    for (size_t i = 0; i < n; i++)
        if (ab.calib_compared[t[i].id])
            L("ab_noise_%s:calibrated=%llu,noise=%llu,noisy=%s\r\n", t[i].name,
              (unsigned long long)ab.calib_compared[t[i].id], (unsigned long long)ab.calib_noise[t[i].id],
              is_noisy(&t[i]) ? "yes" : "no");
#undef L
}

void px_ab_counters(px_ab_counts *o) {
    *o = (px_ab_counts){ab.mirrored, ab.compared, ab.divergences, ab.races, ab.dropped, ab.secondary_errors,
                        ab.queued, ab.split_secondary, ab.sampled_out, ab.stopped_at_ms != 0,
                        ab.noisy, ab.deferred, ab.units, ab.calib_left};
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

/* Read-only views for proxy/ab_report.c (ab_report.h). */
int px_ab_sample_at(int races, unsigned k, px_ab_sample_view *v) {
    unsigned n = races ? ab.nraces : ab.nsamples, size = races ? AB_RACES : AB_SAMPLES;
    if (k >= n) return 0;
    const ab_sample *s = races ? &ab.race_samples[(ab.next_race + size - 1 - k) % size]
                               : &ab.samples[(ab.next_sample + size - 1 - k) % size];
    *v = (px_ab_sample_view){s->ms, s->text, {s->rep[0], s->rep[1]}, {s->len[0], s->len[1]}, s->diff};
    return 1;
}
uint64_t px_ab_races_of(int id) { return ab.races_by_cmd[id]; }
void px_ab_reply_text(const char *r, size_t len, char *out, size_t max) {
    size_t o = 0;
    out[0] = 0;
    if (!r || !ab_reply_text(r, len, out, max, &o)) snprintf(out, max, "(truncated)");
}

/* FRONTDOOR REPORT: the A/B state and the backends' latencies as a text a
 * person reads (redis-cli FRONTDOOR REPORT). */
static void report(px_conn *c) {
    resp_out t;
    resp_out_init(&t, 2);
    px_backends_refresh();                   /* the backends' counters from their records (backends.h) */
    char line[AB_DIFF_MAX + 64];
#define P(...) do { int n_ = snprintf(line, sizeof line, __VA_ARGS__); resp_out_raw(&t, line, (size_t)n_ < sizeof line ? (size_t)n_ : sizeof line - 1); } while (0)
    char verdict[512];
    px_ab_verdict(verdict, sizeof verdict);  /* issue 18: the one-line verdict (ab_report.c) */
    if (verdict[0]) P("verdict: %s\n\n", verdict);
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
    P("\nmirrored %llu, compared %llu, identical %llu, divergences %llu, races %llu, noisy %llu, dropped %llu (secondary failed %llu)\n",
      (unsigned long long)ab.mirrored, (unsigned long long)ab.compared,
      (unsigned long long)(ab.compared - ab.divergences - ab.races - ab.noisy), (unsigned long long)ab.divergences,
      (unsigned long long)ab.races, (unsigned long long)ab.noisy, (unsigned long long)ab.dropped,
      (unsigned long long)ab.secondary_errors);
    if (ab.units) P("(of them %llu transactions mirrored as one unit each)\n", (unsigned long long)ab.units);
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
    any = 0;
    for (size_t i = 0; i < n; i++)
        if (ab.calib_compared[tab[i].id]) {
            if (!any++) P("noise measured by calibration (reads asked of the primary twice%s):\n"
                          "  command           calibrated      noise      rate  noisy later\n",
                          ab.calib_left ? ", still running" : "");
            P("  %-16s %11llu %10llu %8.1f%% %6s %llu\n", tab[i].name, (unsigned long long)ab.calib_compared[tab[i].id],
              (unsigned long long)ab.calib_noise[tab[i].id],
              100.0 * (double)ab.calib_noise[tab[i].id] / (double)ab.calib_compared[tab[i].id],
              is_noisy(&tab[i]) ? "yes" : "no", (unsigned long long)ab.noisy_by_cmd[tab[i].id]);
        }
    if (!any && ab.calib_left) P("calibration: %lld reads still to ask of the primary twice\n", ab.calib_left);
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
    ab.sampled_out = ab.stopped_at_ms = ab.noisy = ab.deferred = ab.units = ab.noscript_resent = 0;
    memset(ab.races_by_cmd, 0, sizeof ab.races_by_cmd);
    memset(ab.noisy_by_cmd, 0, sizeof ab.noisy_by_cmd);
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
    } else if (resp_arg_is(&argv[1], "AB") && argc == 4 && resp_arg_is(&argv[2], "CALIBRATE")) {
        long long n;
        if (resp_str2ll(argv[3].ptr, argv[3].len, &n) || n < 0) { resp_add_error(o, "ERR value is out of range, must be positive"); return; }
        if (px_cfg.ab_mode != PX_AB_MIRROR || !px_srv.secondary) { resp_add_error(o, "ERR FRONTDOOR AB CALIBRATE needs ab-mode mirror"); return; }
        if (n > 0) {                       /* a new measurement; 0 ends the running one, keeping it */
            ab.calib_done = 0;
            memset(ab.calib_compared, 0, sizeof ab.calib_compared);
            memset(ab.calib_noise, 0, sizeof ab.calib_noise);
        }
        ab.calib_left = n;
        resp_add_simple(o, "OK", 2);
    } else if (resp_arg_is(&argv[1], "AB") && argc == 3 && resp_arg_is(&argv[2], "RESET")) {
        ab_reset();
        resp_add_simple(o, "OK", 2);
    } else if (resp_arg_is(&argv[1], "REPORT") && argc == 2) {
        report(c);
    } else if (resp_arg_is(&argv[1], "REPORT") && argc == 3 && resp_arg_is(&argv[2], "JSON")) {
        px_ab_report_json(c);                                    /* issue 18 (ab_report.c) */
    } else if (resp_arg_is(&argv[1], "MIGRATE")) {               /* issue 30 (migrate.c) */
        px_migrate_cmd(c, argc, argv);
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
            "AB CALIBRATE <n>",
            "    Ask the next <n> mirrored reads of the primary twice (not of the secondary) and count the mismatches as noise per command (a new measurement; 0 ends the running one and keeps it); afterwards a command noisier than 1% has its mismatches counted as noisy, not as divergences.",
            "AB RESET",
            "    Forget divergences and races, zero the A/B counters (INFO ab), resume a mirror stopped by ab-stop-after.",
            "MIGRATE START [RATE <keys/s>] [BATCH <n>]|STATUS|PAUSE|RESUME|RATE <keys/s>|ABORT|VERIFY [STATUS]|CUTOVER [FORCE]|HELP",
            "    Online migration to the A/B secondary: backfill every key while the mirror applies new writes, verify, cut over (docs/migration.md).",
            "CAPTURE START [<path>]|STOP|STATUS",
            "    Record every command clients send into <path> for fdload --replay (capture-* directives).",
            "REPORT",
            "    A readable report: A/B mode, each backend's calls, errors and latency percentiles, divergences with both replies and the key's diff, races.",
            "REPORT JSON",
            "    The same as one JSON document, with latency per command per side (bench/ab_report.py makes an HTML page of it).",
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

/* ------------------------------------------------------------ hooks (hooks.h) */

void px_ab_hooks(void) { PX_HOOK_ADD(route, ab_route); }
