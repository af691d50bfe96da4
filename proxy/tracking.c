/* tracking.c — client-side caching (tracking.h). */
#include "tracking.h"
#include "hooks.h"
#include "strmap.h"
#include "pubsub.h"
#include "config.h"

#include <stdlib.h>
#include <string.h>

/* A BCAST prefix: the clients registered for it, and the keys written
 * under it since the last broadcast (each with its last writer's id, 0 for
 * a script: NOLOOP spares a client only its own direct writes, as Redis). */
typedef struct tprefix {
    char      *name;
    size_t     len;
    uint64_t  *ids;      /* the clients' ids, in registration order */
    size_t     n, cap;
    px_strmap  written;  /* key -> uint64_t writer id */
} tprefix;

/* A tracking client. */
typedef struct tclient {
    px_conn *c;
    int      noloop;
    uint64_t redir;      /* REDIRECT's client id, or 0 */
    px_conn *rc;         /* that client while it is connected, else NULL (closed: track_closed) */
    int      optin, optout;
    int      caching;    /* CLIENT CACHING yes (OPTIN) / no (OPTOUT) for the next command */
    int      bcast;
    int      broken;     /* its redirect target was found gone (TRACKINGINFO's broken_redirect) */
    tprefix **pfx;       /* BCAST: its prefixes, sorted (owned array; the prefixes are the table's) */
    size_t   npfx;
} tclient;

/* The tracking clients by id (the id's 8 bytes: one lookup per command,
 * however many track); the entries hold the tclient, never moved. */
static px_strmap tcs;

/* The REDIRECT targets by id: how many tracking clients redirect to each
 * (a target closing clears their rc, without a scan of every connection
 * per message). */
static px_strmap targets;

/* The BCAST prefix table, sorted as Redis's radix tree walks it (bytes,
 * a prefix before its extensions): broadcasts go out in this order. */
static tprefix **pfx;
static size_t    npfx, cappfx;
static size_t    pfx_pending;    /* prefixes holding written keys */

/* A tracked key: the ids of the clients that read it. */
typedef struct tkey {
    uint64_t *ids;
    size_t    n, cap;
} tkey;

static px_strmap keys;
static size_t    nitems;     /* (key, client) pairs in keys: INFO's tracking_total_items */

static void track_exec_done(const px_exec *e);
static void track_closed(px_conn *c);
static void track_turn_end(void);
static void track_after(void);
static void turn_arm(void);

/* The array arr (n of *cap elements used) with room for one more: arr,
 * or grown by doubling; NULL when out of memory (arr unchanged). */
static void *room(void *arr, size_t n, size_t *cap, size_t size) {
    if (n < *cap) return arr;
    size_t nc = *cap ? *cap * 2 : 4;
    void *a = realloc(arr, nc * size);
    if (a) *cap = nc;
    return a;
}

/* A tracking client's own invalidations (its own writes, without NOLOOP),
 * held until its command ends so that they follow the command's whole
 * reply (an EXEC's array, a script's), as Redis 7.0's tracking_pending_keys:
 * sent by hook `after` (or at the end of the turn). Bounded by the keys of
 * one command. */
typedef struct owned {
    uint64_t id;         /* the tracking client */
    char    *key;        /* a copy; NULL: the null of a flush */
    size_t   len;
} owned;
static owned  *own;
static size_t  nown, capown;

static tclient *find_id(uint64_t id) {
    px_strent *e = tcs.count ? px_strmap_get(&tcs, (const char *)&id, sizeof id) : NULL;
    return e ? px_strmap_data(e) : NULL;
}

static tclient *find(const px_conn *c) { return find_id(c->id); }

static void arm(int on) {
    px_hook_arm(exec_done, track_exec_done, on);
    px_hook_arm(closed, track_closed, on);
    px_hook_arm(after, track_after, on);
}

/* t redirects to r (id 0: to nobody): the targets' counts follow. */
static void redirect(tclient *t, uint64_t id, px_conn *r) {
    if (t->redir && t->rc) {
        px_strent *e = px_strmap_get(&targets, (const char *)&t->redir, sizeof t->redir);
        if (e && !--*(size_t *)px_strmap_data(e)) px_strmap_del(&targets, e);
    }
    t->redir = id, t->rc = NULL;
    if (!id) return;
    px_strent *e = px_strmap_add(&targets, (const char *)&id, sizeof id, sizeof(size_t), NULL);
    if (!e) { t->rc = NULL; return; }                 /* out of memory: as if gone */
    ++*(size_t *)px_strmap_data(e);
    t->rc = r;
}

static void target_gone(px_strent *e, void *arg) {
    tclient *t = px_strmap_data(e);
    if (t->rc == arg) t->rc = NULL;
}

static px_conn *conn_by_id(uint64_t id) {
    for (px_conn *x = px_srv.clients; x; x = x->next)
        if (x->id == id) return x;
    return NULL;
}

/* The start of one invalidation message for t, as Redis 7.0's
 * sendTrackingMessage: to its REDIRECT client when it has one (gone: t gets
 * `tracking-redir-broken` in RESP3 and is marked broken), as a RESP3 push
 * `invalidate`, or as a `message` on __redis__:invalidate to a RESP2
 * redirect target in pub/sub mode. Returns the connection whose output
 * takes the message's value next (then end_message), or NULL: nothing to send. */
static px_conn *begin_message(tclient *t) {
    px_conn *c = t->c;
    int redirected = 0;
    if (t->redir) {
        px_conn *r = t->rc;
        if (!r) {
            t->broken = 1;
            if (c->out.proto >= 3 && !(c->flags & PX_CONN_CLOSE_ASAP)) {
                px_conn_push_begin(c);       /* a push: sent whatever CLIENT REPLY says */
                resp_add_push(&c->out, 2);
                resp_add_bulk(&c->out, "tracking-redir-broken", 21);
                resp_add_int(&c->out, (long long)t->redir);
                px_conn_push_end(c);
                px_conn_touch(c);
            }
            return NULL;
        }
        c = r, redirected = 1;
    }
    if (c->flags & PX_CONN_CLOSE_ASAP) return NULL;
    if (c->out.proto < 3 && !(redirected && px_pubsub_count(c))) return NULL;
    px_conn_push_begin(c);                   /* a push: sent whatever CLIENT REPLY says */
    if (c->out.proto >= 3) {
        resp_add_push(&c->out, 2);
        resp_add_bulk(&c->out, "invalidate", 10);
    } else {
        resp_add_push(&c->out, 3);
        resp_add_bulk(&c->out, "message", 7);
        resp_add_bulk(&c->out, "__redis__:invalidate", 20);
    }
    return c;
}

static void end_message(px_conn *c) {
    px_conn_push_end(c);
    px_conn_check_output_limit(c);
    px_conn_touch(c);
}

/* One invalidation for t: [key], or (key NULL) the null of a flush. */
static void send_invalidate(tclient *t, const char *key, size_t len) {
    px_conn *c = begin_message(t);
    if (!c) return;
    if (key) {
        resp_add_array(&c->out, 1);
        resp_add_bulk(&c->out, key, len);
    } else {
        resp_add_null(&c->out);
    }
    end_message(c);
}

/* Hold t's own invalidation (key NULL: a flush's) until its command ends;
 * out of memory: sent now. */
static void defer_own(tclient *t, const char *key, size_t len) {
    char *copy = NULL;
    owned *o = room(own, nown, &capown, sizeof *own);
    if (o) own = o;
    if (o && (!key || (copy = malloc(len + 1)))) {
        if (key) memcpy(copy, key, len);
        own[nown++] = (owned){t->c->id, copy, len};
        return;
    }
    send_invalidate(t, key, len);
}

/* The held invalidations, in order. */
static void send_own(void) {
    for (size_t i = 0; i < nown; i++) {
        tclient *t = find_id(own[i].id);
        if (t) send_invalidate(t, own[i].key, own[i].len);
        free(own[i].key);
    }
    nown = 0;
}

static void track_after(void) {
    if (nown) send_own();
}

/* Send the key's invalidations (sparing `writer` when it asked NOLOOP; the
 * writer's own held until its command ends) and forget it. A BCAST client's
 * ids left from an earlier default mode are skipped, as in Redis. */
static void invalidate_entry(px_strent *e, const px_conn *writer) {
    tkey *k = px_strmap_data(e);
    for (size_t i = 0; i < k->n; i++) {
        tclient *t = find_id(k->ids[i]);
        if (!t || t->bcast) continue;
        if (t->c != writer) send_invalidate(t, e->name, e->len);
        else if (!t->noloop) defer_own(t, e->name, e->len);
    }
    nitems -= k->n;
    free(k->ids);
    px_strmap_del(&keys, e);
}

static void free_entry(px_strent *e, void *arg) {
    (void)arg;
    free(((tkey *)px_strmap_data(e))->ids);
}

static void forget_all(void) {
    px_strmap_each(&keys, free_entry, NULL);
    px_strmap_clear(&keys);
    nitems = 0;
}

/* Remember that c read key (out of memory: the key is not remembered). */
static void remember(const px_conn *c, const char *key, size_t len) {
    px_strent *e = px_strmap_add(&keys, key, len, sizeof(tkey), NULL);
    if (!e) return;
    tkey *k = px_strmap_data(e);
    for (size_t i = 0; i < k->n; i++)
        if (k->ids[i] == c->id) return;
    if (k->n == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 2;
        uint64_t *ids = realloc(k->ids, cap * sizeof *ids);
        if (!ids) return;
        k->ids = ids, k->cap = cap;
    }
    k->ids[k->n++] = c->id;
    nitems++;
}

/* ------------------------------------------------------------ the key limit */

/* The table over tracking-table-max-keys (0: no limit). */
static int over_limit(void) {
    return px_cfg.tracking_table_max_keys > 0 && keys.count > (unsigned long long)px_cfg.tracking_table_max_keys;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rng(void) {                      /* xorshift64 */
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return rng_state;
}

/* Redis 7.0's trackingLimitUsedSlots: evict random keys, with their
 * invalidations, until the table is within the limit, at most 100 × (turns
 * in a row it was still over + 1) keys this turn (the rest next turn). */
static void limit_keys(void) {
    static unsigned over_turns;
    if (!over_limit()) { over_turns = 0; return; }
    for (unsigned effort = 100 * (over_turns + 1); effort && over_limit(); effort--) {
        size_t b = (size_t)rng() & (keys.nb - 1);
        while (!keys.b[b]) b = (b + 1) & (keys.nb - 1);
        invalidate_entry(keys.b[b], NULL);
    }
    over_turns = over_limit() ? over_turns + 1 : 0;
}

/* ---------------------------------------------------------------- BCAST */

/* Redis's radix-tree order: bytes, then the shorter first. */
static int cmp_bytes(const char *a, size_t na, const char *b, size_t nb) {
    int r = memcmp(a, b, na < nb ? na : nb);
    return r ? r : (na > nb) - (na < nb);
}

static int cmp_ent(const void *x, const void *y) {
    const px_strent *a = *(px_strent *const *)x, *b = *(px_strent *const *)y;
    return cmp_bytes(a->name, a->len, b->name, b->len);
}

/* The index of prefix (p, n) in pfx, or where it would go (*found says which). */
static size_t pfx_find(const char *p, size_t n, int *found) {
    size_t lo = 0, hi = npfx;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int r = cmp_bytes(pfx[mid]->name, pfx[mid]->len, p, n);
        if (!r) { *found = 1; return mid; }
        if (r < 0) lo = mid + 1; else hi = mid;
    }
    *found = 0;
    return lo;
}

/* Register t for prefix (p, n): Redis's enableBcastTrackingForPrefix (a
 * prefix it has already: nothing). -1: out of memory, nothing changed. */
static int bcast_add(tclient *t, const char *p, size_t n) {
    int found;
    size_t at = pfx_find(p, n, &found);
    tprefix *x;
    if (found) {
        x = pfx[at];
        for (size_t i = 0; i < x->n; i++)
            if (x->ids[i] == t->c->id) return 0;
    } else {
        tprefix **np = room(pfx, npfx, &cappfx, sizeof *pfx);
        if (!np) return -1;
        pfx = np;
        if (!(x = calloc(1, sizeof *x)) || !(x->name = malloc(n + 1))) { free(x); return -1; }
        memcpy(x->name, p, n);
        x->name[n] = 0;
        x->len = n;
        memmove(&pfx[at + 1], &pfx[at], (npfx - at) * sizeof *pfx);
        pfx[at] = x;
        npfx++;
    }
    tprefix **tp = realloc(t->pfx, (t->npfx + 1) * sizeof *tp);   /* t's own list: few, kept sorted */
    if (tp) t->pfx = tp;
    uint64_t *ids = tp ? room(x->ids, x->n, &x->cap, sizeof *x->ids) : NULL;
    if (ids) x->ids = ids;
    if (!ids) {
        if (!x->n) {                        /* a prefix just made: take it back */
            memmove(&pfx[at], &pfx[at + 1], (--npfx - at) * sizeof *pfx);
            free(x->ids), free(x->name), free(x);
        }
        return -1;
    }
    size_t mine = t->npfx;
    while (mine && cmp_bytes(t->pfx[mine - 1]->name, t->pfx[mine - 1]->len, p, n) > 0) {
        t->pfx[mine] = t->pfx[mine - 1];
        mine--;
    }
    t->pfx[mine] = x;
    t->npfx++;
    x->ids[x->n++] = t->c->id;
    return 0;
}

static void prefix_free(size_t at) {
    tprefix *x = pfx[at];
    if (x->written.count) pfx_pending--;
    px_strmap_clear(&x->written);
    free(x->ids), free(x->name), free(x);
    memmove(&pfx[at], &pfx[at + 1], (--npfx - at) * sizeof *pfx);
}

/* t leaves every prefix; a prefix left without clients goes. */
static void bcast_off(tclient *t) {
    for (size_t i = 0; i < t->npfx; i++) {
        int found;
        size_t at = pfx_find(t->pfx[i]->name, t->pfx[i]->len, &found);
        tprefix *x = pfx[at];
        for (size_t j = 0; j < x->n; j++)
            if (x->ids[j] == t->c->id) { memmove(&x->ids[j], &x->ids[j + 1], (--x->n - j) * sizeof *x->ids); break; }
        if (!x->n) prefix_free(at);
    }
    free(t->pfx);
    t->pfx = NULL;
    t->npfx = 0;
}

/* A key written (by writer's id; 0: a script): noted under every prefix it
 * starts with, for the broadcast at the end of the turn (Redis 7.0's
 * trackingRememberKeyToBroadcast; the last writer kept). Out of memory:
 * the key is not noted. */
static void bcast_note(const char *key, size_t len, uint64_t writer) {
    for (size_t i = 0; i < npfx; i++) {
        tprefix *x = pfx[i];
        if (x->len > len || memcmp(x->name, key, x->len)) continue;
        size_t before = x->written.count;
        px_strent *e = px_strmap_add(&x->written, key, len, sizeof(uint64_t), NULL);
        if (!e) continue;
        *(uint64_t *)px_strmap_data(e) = writer;
        if (!before) pfx_pending++;
    }
}

static void collect(px_strent *e, void *arg) {
    px_strent ***out = arg;
    *(*out)++ = e;
}

/* Send each prefix's written keys, sorted, in one message to each of its
 * clients (a NOLOOP client without the keys it wrote last; none left:
 * nothing), then forget them: Redis 7.0's trackingBroadcastInvalidationMessages. */
static void bcast_flush(void) {
    for (size_t i = 0; i < npfx && pfx_pending; i++) {
        tprefix *x = pfx[i];
        size_t n = x->written.count;
        if (!n) continue;
        px_strent **ks = malloc(n * sizeof *ks), **end = ks;
        if (ks) {
            px_strmap_each(&x->written, collect, &end);
            qsort(ks, n, sizeof *ks, cmp_ent);
            for (size_t j = 0; j < x->n; j++) {
                tclient *t = find_id(x->ids[j]);
                if (!t) continue;
                uint64_t skip = t->noloop ? t->c->id : 0;
                size_t count = n;
                if (skip)
                    for (size_t k = 0; k < n; k++) count -= *(uint64_t *)px_strmap_data(ks[k]) == skip;
                if (!count) continue;
                px_conn *c = begin_message(t);
                if (!c) continue;
                resp_add_array(&c->out, (long long)count);
                for (size_t k = 0; k < n; k++)
                    if (!skip || *(uint64_t *)px_strmap_data(ks[k]) != skip) resp_add_bulk(&c->out, ks[k]->name, ks[k]->len);
                end_message(c);
            }
            free(ks);
        }
        px_strmap_clear(&x->written);
        pfx_pending--;
    }
}

/* ------------------------------------------------------- the end of a turn */

/* Armed while BCAST keys or own invalidations wait, or the table is over its limit. */
static void turn_arm(void) {
    px_hook_arm(turn_start, track_turn_end, pfx_pending || nown || over_limit());
}

static void track_turn_end(void) {
    if (nown) send_own();       /* a command that ended without `after` (a blocked client served) */
    limit_keys();
    bcast_flush();
    turn_arm();
}

/* ------------------------------------------------------------- commands */

/* Every command run: a tracking client's read remembers its keys (not in
 * BCAST); any write invalidates its keys (all of them: the safe side) and
 * notes them for the BCAST prefixes. */
/* FLUSHALL/FLUSHDB by `arg` (a px_conn): the null to the tracking client
 * of entry e (its own, held until its command ends). */
static void flush_one(px_strent *e, void *arg) {
    tclient *t = px_strmap_data(e);
    if (t->c == arg) defer_own(t, NULL, 0);
    else send_invalidate(t, NULL, 0);
}

static void track_command(const px_exec *e, int write) {
    const fd_command *cmd = e->cmd;
    int track = 0;
    tclient *t = find(e->c);          /* a script's command: its caller's */
    if (t) {
        track = !t->bcast && (t->optin ? t->caching : t->optout ? !t->caching : 1);
        if (!e->script && cmd->id != FD_CMD_client) t->caching = 0;   /* CLIENT CACHING: one command */
    }
    if (write && (cmd->id == FD_CMD_flushdb || cmd->id == FD_CMD_flushall)) {
        if (e->reply && e->len && e->reply[0] == '-') return;
        px_strmap_each(&tcs, flush_one, e->c);
        forget_all();
        if (nown) turn_arm();
        return;
    }
    if (write || ((cmd->flags & FD_CMD_READONLY) && track)) {
        int pos[64], *pp = pos, max = e->argc > 64 ? e->argc : 64;
        if (e->argc > 64 && !(pp = malloc((size_t)e->argc * sizeof *pp))) return;
        int n = fd_command_keys(cmd, e->argc, e->argv, pp, max);
        for (int i = 0; i < n; i++) {
            const resp_arg *a = &e->argv[pp[i]];
            if (write) {
                px_strent *k = px_strmap_get(&keys, a->ptr, a->len);
                if (k) invalidate_entry(k, e->c);
                if (npfx) bcast_note(a->ptr, a->len, e->script ? 0 : e->c->id);
            } else {
                remember(e->c, a->ptr, a->len);
            }
        }
        if (pp != pos) free(pp);
    }
    if (pfx_pending || nown || over_limit()) turn_arm();   /* also after CONFIG SET tracking-table-max-keys */
}

static void track_exec_done(const px_exec *e) {
    if (tcs.count && e->cmd) track_command(e, (e->cmd->flags & FD_CMD_WRITE) != 0);
}

void px_tracking_write(px_conn *c, const fd_command *cmd, int argc, const resp_arg *argv) {
    if (!tcs.count || !cmd) return;
    if (cmd->flags & FD_CMD_WRITE || cmd->id == FD_CMD_eval || cmd->id == FD_CMD_evalsha || cmd->id == FD_CMD_fcall)
        track_command(&(px_exec){.c = c, .script = !(cmd->flags & FD_CMD_WRITE), .cmd = cmd, .argc = argc,
                                 .argv = argv, .owed = 1}, 1);   /* a script: its writer is not c (NOLOOP) */
}

void px_tracking_off(px_conn *c) {
    tclient *t = find(c);
    if (!t) return;
    bcast_off(t);
    redirect(t, 0, NULL);
    px_strmap_del(&tcs, px_strmap_get(&tcs, (const char *)&c->id, sizeof c->id));   /* its ids left in keys are skipped (find_id) */
    if (!tcs.count) { forget_all(); arm(0); }
    turn_arm();
}

/* A connection closing: its tracking off, and the clients redirecting to it
 * lose their target (their next message: tracking-redir-broken). */
static void track_closed(px_conn *c) {
    px_tracking_off(c);
    px_strent *e = targets.count ? px_strmap_get(&targets, (const char *)&c->id, sizeof c->id) : NULL;
    if (!e) return;
    px_strmap_each(&tcs, target_gone, c);
    px_strmap_del(&targets, e);
}

/* Redis 7.0's checkPrefixCollisionsOrReply: a provided prefix that shares
 * its start with one of t's (or a later provided one): the error, 0. */
static int prefix_collision(px_conn *c, const tclient *t, int argc, const resp_arg *argv) {
    for (int i = 3; i < argc; i++) {
        if (!resp_arg_is(&argv[i], "PREFIX") || i + 1 >= argc) continue;
        const resp_arg *p = &argv[++i];
        for (size_t k = 0; t && k < t->npfx; k++) {
            const tprefix *x = t->pfx[k];
            if (!memcmp(x->name, p->ptr, x->len < p->len ? x->len : p->len)) {
                resp_add_errorf(&c->out, "ERR Prefix '%.*s' overlaps with an existing prefix '%.*s'. "
                                         "Prefixes for a single client must not overlap.",
                                (int)strnlen(p->ptr, p->len), p->ptr, (int)strnlen(x->name, x->len), x->name);
                return 1;
            }
        }
        for (int j = i + 1; j < argc; j++) {
            if (!resp_arg_is(&argv[j], "PREFIX") || j + 1 >= argc) continue;
            const resp_arg *q = &argv[++j];
            if (!memcmp(p->ptr, q->ptr, p->len < q->len ? p->len : q->len)) {
                resp_add_errorf(&c->out, "ERR Prefix '%.*s' overlaps with another provided prefix '%.*s'. "
                                         "Prefixes for a single client must not overlap.",
                                (int)strnlen(p->ptr, p->len), p->ptr, (int)strnlen(q->ptr, q->len), q->ptr);
                return 1;
            }
        }
    }
    return 0;
}

void px_tracking_command(px_conn *c, int argc, const resp_arg *argv) {
    if (argc < 3) { resp_add_error(&c->out, "ERR wrong number of arguments for 'client|tracking' command"); return; }
    int noloop = 0, optin = 0, optout = 0, bcast = 0, nprefix = 0;
    long long redir = 0;
    px_conn *rconn = NULL;
    for (int i = 3; i < argc; i++) {
        if (resp_arg_is(&argv[i], "REDIRECT") && i + 1 < argc) {
            i++;
            if (redir) { resp_add_error(&c->out, "ERR A client can only redirect to a single other client"); return; }
            if (resp_str2ll(argv[i].ptr, argv[i].len, &redir)) {
                resp_add_error(&c->out, "ERR value is not an integer or out of range");
                return;
            }
            if (redir <= 0 || !(rconn = conn_by_id((uint64_t)redir))) {
                resp_add_error(&c->out, "ERR The client ID you want redirect to does not exist");
                return;
            }
        } else if (resp_arg_is(&argv[i], "BCAST")) {
            bcast = 1;
        } else if (resp_arg_is(&argv[i], "NOLOOP")) {
            noloop = 1;
        } else if (resp_arg_is(&argv[i], "OPTIN")) {
            optin = 1;
        } else if (resp_arg_is(&argv[i], "OPTOUT")) {
            optout = 1;
        } else if (resp_arg_is(&argv[i], "PREFIX") && i + 1 < argc) {
            i++;
            nprefix++;
        } else {
            resp_add_error(&c->out, "ERR syntax error");
            return;
        }
    }
    if (resp_arg_is(&argv[2], "ON")) {
        tclient *t = find(c);
        if (!bcast && nprefix) { resp_add_error(&c->out, "ERR PREFIX option requires BCAST mode to be enabled"); return; }
        if (t && t->bcast != bcast) {
            resp_add_error(&c->out, "ERR You can't switch BCAST mode on/off before disabling tracking for this "
                                    "client, and then re-enabling it with a different mode.");
            return;
        }
        if (bcast && (optin || optout)) { resp_add_error(&c->out, "ERR OPTIN and OPTOUT are not compatible with BCAST"); return; }
        if (optin && optout) { resp_add_error(&c->out, "ERR You can't specify both OPTIN mode and OPTOUT mode"); return; }
        if (t && ((optin && t->optout) || (optout && t->optin))) {
            resp_add_error(&c->out, "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this "
                                    "client, and then re-enabling it with a different mode.");
            return;
        }
        if (bcast && prefix_collision(c, t, argc, argv)) return;
        if (!t) {
            px_strent *te = px_strmap_add(&tcs, (const char *)&c->id, sizeof c->id, sizeof *t, NULL);
            if (!te) { resp_add_error(&c->out, "ERR out of memory"); return; }
            t = px_strmap_data(te);
            *t = (tclient){.c = c};
            if (tcs.count == 1) arm(1);
        }
        t->noloop = noloop;
        redirect(t, (uint64_t)redir, rconn);
        t->optin = optin, t->optout = optout;
        t->broken = 0;
        t->bcast = bcast;
        int oom = 0;
        if (bcast && !nprefix) oom = bcast_add(t, "", 0);
        for (int i = 3; bcast && i < argc; i++)
            if (resp_arg_is(&argv[i], "PREFIX") && i + 1 < argc) oom |= bcast_add(t, argv[i + 1].ptr, argv[i + 1].len), i++;
            else if (resp_arg_is(&argv[i], "REDIRECT") && i + 1 < argc) i++;
        if (oom) { resp_add_error(&c->out, "ERR out of memory"); return; }
    } else if (resp_arg_is(&argv[2], "OFF")) {
        px_tracking_off(c);
    } else {
        resp_add_error(&c->out, "ERR syntax error");
        return;
    }
    resp_add_simple(&c->out, "OK", 2);
}

long long px_tracking_redir(const px_conn *c) {
    const tclient *t = find(c);
    return t ? (long long)t->redir : -1;
}

const char *px_tracking_list_flags(const px_conn *c) {
    const tclient *t = find(c);     /* nobody tracks: one count test */
    if (!t) return "";
    return t->broken ? (t->bcast ? "tRB" : "tR") : (t->bcast ? "tB" : "t");
}

void px_tracking_info(px_conn *c) {
    const tclient *t = find(c);
    const char *flags[8];
    int n = 0;
    flags[n++] = t ? "on" : "off";
    if (t && t->bcast) flags[n++] = "bcast";
    if (t && t->optin) flags[n++] = "optin";
    if (t && t->optin && t->caching) flags[n++] = "caching-yes";
    if (t && t->optout) flags[n++] = "optout";
    if (t && t->optout && t->caching) flags[n++] = "caching-no";
    if (t && t->noloop) flags[n++] = "noloop";
    if (t && t->broken) flags[n++] = "broken_redirect";
    resp_add_map(&c->out, 3);
    resp_add_bulk_cstr(&c->out, "flags");
    resp_add_set(&c->out, n);
    for (int i = 0; i < n; i++) resp_add_bulk_cstr(&c->out, flags[i]);
    resp_add_bulk_cstr(&c->out, "redirect");
    resp_add_int(&c->out, px_tracking_redir(c));
    resp_add_bulk_cstr(&c->out, "prefixes");
    resp_add_array(&c->out, t ? (long long)t->npfx : 0);
    for (size_t i = 0; t && i < t->npfx; i++) resp_add_bulk(&c->out, t->pfx[i]->name, t->pfx[i]->len);
}

void px_tracking_caching(px_conn *c, const resp_arg *arg) {
    tclient *t = find(c);
    if (!t || (!t->optin && !t->optout)) {
        resp_add_error(&c->out, "ERR CLIENT CACHING can be called only when the client is in tracking mode with "
                                "OPTIN or OPTOUT mode enabled");
        return;
    }
    if (resp_arg_is(arg, "yes")) {
        if (!t->optin) {
            resp_add_error(&c->out, "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.");
            return;
        }
    } else if (resp_arg_is(arg, "no")) {
        if (!t->optout) {
            resp_add_error(&c->out, "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.");
            return;
        }
    } else {
        resp_add_error(&c->out, "ERR syntax error");
        return;
    }
    t->caching = 1;
    resp_add_simple(&c->out, "OK", 2);
}

size_t px_tracking_clients(void) { return tcs.count; }
size_t px_tracking_keys(void) { return keys.count; }
size_t px_tracking_items(void) { return nitems; }
size_t px_tracking_prefixes(void) { return npfx; }

void px_tracking_hooks(void) {
    PX_HOOK_ADD_IDLE(exec_done, track_exec_done);   /* both armed while a client tracks */
    PX_HOOK_ADD_IDLE(closed, track_closed);
    PX_HOOK_ADD_IDLE(after, track_after);           /* armed while a client tracks: its own invalidations */
    PX_HOOK_ADD_IDLE(turn_start, track_turn_end);   /* armed while BCAST keys wait or the table is over its limit */
}
