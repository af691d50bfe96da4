/* ab_pair.c — mirrored pairs (ab_int.h): a command's (or a unit's) two
 * replies recorded and compared, race tracking on the keys in flight,
 * script bodies remembered for a secondary's NOSCRIPT. */
#include "ab.h"
#include "ab_int.h"
#include "backends.h"
#include "commands.h"
#include "config.h"
#include "migrate.h"
#include "multi.h"
#include "scripting.h"
#include "sha1.h"
#include "../protocol/resp_scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
void ab_track_cmd(px_ab_pair *p, fd_command *cmd, int argc, resp_arg *argv) {
    int pos[AB_MAXKEYS + 1];
    int n = cmd ? fd_command_keys(cmd, argc, argv, pos, AB_MAXKEYS + 1) : 0;
    int w = ab_may_write(cmd);
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
void ab_remember_script(const resp_arg *body) {
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


/* --------------------------------------------------------------- pairs */

static void on_side(void *ud, const char *reply, size_t len, int failed);

px_ab_pair *ab_pair_new(px_conn *c, fd_command *cmd, int kind) {
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


void ab_pair_free(px_ab_pair *p) {
    ab_outbox_unit_done(p);
    free(p->text);
    free(p->rep[0]);
    free(p->rep[1]);
    free(p->key);
    free(p->ref);
    ab_cmd_free(&p->copy);
    for (int i = 0; i < p->nel; i++) {
        ab_cmd_free(&p->cmds[i]);
        free(p->el[i].rep[0]);
        free(p->el[i].rep[1]);
    }
    free(p->cmds);
    free(p->el);
    free(p);
}


/* The secondary's part is in: the queue slot and an async secondary's hold are released. */
void ab_sec_in(px_ab_pair *p) {
    if (p->queued) { p->queued = 0; ab.queued--; }
}

/* ------------------------------------------------------------- comparison */

/* A command calibration found nondeterministic: its measured noise is above
 * AB_NOISE_MIN_PCT % of the reads compared. */
int ab_is_noisy(const fd_command *cmd) {
    uint64_t n = ab.calib_compared[cmd->id];
    return n && ab.calib_noise[cmd->id] && (double)ab.calib_noise[cmd->id] * 100.0 > AB_NOISE_MIN_PCT * (double)n;
}


/* The replies differ: a race, noise (the command is noisy), or a divergence. */
static void mismatch(px_ab_pair *p, const fd_command *which) {
    if (p->race) {
        ab.races++;
        ab.races_by_cmd[p->cmd->id]++;
        if (px_cfg.ab_mismatch_log != PX_AB_LOG_COUNT) ab_keep_race(p);
    } else if (ab_is_noisy(which)) {
        ab.noisy++;
        ab.noisy_by_cmd[which->id]++;
    } else {
        ab_divergence(p);
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
        o = ab_text_add(text, o, q->argc, q->argv);
        snprintf(text + o, AB_TEXT_MAX + 8 - o, " | %s", p->text);
        /* the sample shows that command's replies, and the diff its key */
        char *r0, *r1;
        size_t l0, l1;
        if ((r0 = dup_span(v0[first], &l0)) && (r1 = dup_span(v1[first], &l1))) {
            free(p->rep[0]); free(p->rep[1]);
            p->rep[0] = r0; p->len[0] = l0;
            p->rep[1] = r1; p->len[1] = l1;
        } else free(r0);
        const resp_arg *k = ab_first_key_arg(q->cmd, q->argc, q->argv);
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
    if (p->calib || !px_migrate_running() || !ab_may_write(p->cmd)) return;
    if (!p->failed[1] && !(p->rep[1] && p->len[1] >= sizeof unavail - 1 && !memcmp(p->rep[1], unavail, sizeof unavail - 1)))
        return;
    int keyed = 0;
    for (int i = 0; i < p->nref; i++)
        if (p->ref[i].write && p->ref[i].e) { px_migrate_lost_key(p->ref[i].e->name, p->ref[i].e->len); keyed = 1; }
    if (!keyed) px_migrate_lost(NULL, 0, NULL);
}

void ab_maybe_finish(px_ab_pair *p) {
    if (p->hold || !p->have[0] || !p->have[1]) return;
    migrate_lost(p);
    track_end(p);
    if (p->kind == AB_EXEC) compare_unit(p);
    else compare_one(p);
    ab_pair_free(p);
}


static void px_ab_record(px_ab_pair *p, int side, const char *reply, size_t len, int failed) {
    if (side == 1) ab_sec_in(p);
    p->have[side] = 1;
    p->failed[side] = failed;
    if (!failed && (p->rep[side] = malloc(len ? len : 1)) != NULL) {
        memcpy(p->rep[side], reply, len);
        p->len[side] = len;
    }
    if (side == 0 && (p->defer || p->unit_wait)) { ab_copy_ready(p); return; }   /* may free p */
    ab_maybe_finish(p);
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
        ab_remember_script(&(resp_arg){(char *)kb, kl});
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
void ab_on_el(void *ud, const char *reply, size_t len, int failed) {
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
    if (s == 1) { ab_sec_in(p); if (p->retained) { p->retained = 0; px_atomic_release(); } ab_outbox_unit_done(p); }
    p->have[s] = 1;
    if (s == 0 && p->unit_wait) { ab_copy_ready(p); return; }   /* may free p */
    ab_maybe_finish(p);
}

/* A copy held back (ab-mirror-order primary) goes to the secondary now that
 * the primary answered. */
void ab_send_copy(px_ab_pair *p) {
    p->defer = 0;
    resp_out scratch;
    resp_out_init(&scratch, p->proto);
    uint64_t clock = fd_mono_ns();
    px_tap t = p->tap[1];
    p->hold++;
    px_backend *sec = px_srv.secondary;
    px_conn *c = NULL;
    if (sec && ab_is_script(p->cmd) && !sec->b.ops->passthrough &&
        (!(c = ab_conn_by_id(p->client)) || px_script_client())) {
        t.fn(t.ud, NULL, 0, 1);                 /* the client left (or a script runs): not run, dropped */
    } else {
        ab_side_submit(sec, c, 1, p->client, &scratch, p->cmd, p->copy.argc, p->copy.argv, p->copy.raw, p->copy.rawlen,
                    &clock, &t);
    }
    resp_out_free(&scratch);
    p->hold--;
    ab_maybe_finish(p);
}

int px_ab_key_writes_inflight(const char *key, size_t len) {
    px_strent *e = px_strmap_get(&ab.keys, key, len);
    return (e && ((ab_key *)px_strmap_data(e))->wr_inflight) || ab.all.wr_inflight;
}
