/* kv_backend.c — the generic fd_backend_ops of the embedded backends, over
 * any kv_driver (storage/kv/kv.h). fd_backend.state is the kv_store.
 *
 * Group commit. The first submit of an event-loop turn begins ONE write
 * transaction; every command of the turn, reads and writes alike, runs in it
 * (commands are atomic for free: one thread, one transaction); end_turn
 * commits it — one fsync per turn in sync mode — before the proxy writes any
 * of the turn's replies. A turn without writes commits nothing to disk.
 *
 * Asynchronous commit (a driver with kv_driver.hold: LevelDB). commit()
 * only hands the turn to the driver's writer thread; a write command that
 * changed something returns FD_PENDING and its reply is kept by the driver
 * until the commit is stored; every other request that came with a pending
 * handle (the backend is ops->async) is completed inside submit
 * (kv_backend_submit). A write whose
 * reply cannot wait (a detached request: a script's command) makes the
 * turn's commit synchronous. While b->writes_inline is set (the driver
 * commits the turn on the loop: it cannot stall) writes get no pending
 * handle from the host and nothing is held.
 *
 * Map full (LMDB). When a put fails with MDB_MAP_FULL, LMDB marks the whole
 * transaction failed: every command of the turn is lost. So:
 *   - careful mode: when the map is nearly full at turn start (high-water
 *     mark > 80%, kv_driver.nearly_full), after a MAP_FULL, or for one write
 *     whose arguments are big compared with the room left, each write command
 *     runs in a NESTED transaction: a MAP_FULL aborts only that command, which
 *     fails with FD_E_OOM ("-OOM ..."), and the turn goes on. The counter
 *     records are rewritten inside each nested transaction so the final
 *     counter write at commit needs no new page.
 *   - outside careful mode a storage error (FD_E_OOM, FD_E_IO, ...) aborts the
 *     turn's transaction: that submit returns the error, later submits of the
 *     same turn return it too without running, end_turn returns it (the proxy
 *     then withholds the turn's write replies by closing those clients: their
 *     writes were not made), and the store switches to careful mode for the
 *     next KV_CAREFUL_TURNS turns that start below the mark (an aborted
 *     transaction does not move LMDB's high-water mark, so the mark alone
 *     would not remember the failure).
 *
 * Active expiry: cron deletes keys due by the expiry index, at most
 * KV_CRON_KEYS keys or KV_CRON_BUDGET_US per call, in its own short
 * transaction — or, when a turn's transaction is open (the proxy's timer
 * fired between submits and end_turn), in a transaction nested in it.
 *
 * Keyspace events (host.h, docs/notifications.md): the handlers raise them
 * into st->events; they are delivered, in order, when the transaction that
 * holds their changes commits (end_turn, or cron's own transaction; on
 * LevelDB when the turn is handed to its writer), and dropped with a
 * command, a cycle or a turn that is aborted.
 */
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include "kv.h"

#define KV_CRON_KEYS       1000
#define KV_CRON_BUDGET_US  1000
#define KV_BIG_WRITE       (64 * 1024)        /* args above this: check the room left */
#define KV_SCRATCH_KEEP    (8u << 20)         /* scratch above this is freed at end_turn */
#define KV_CAREFUL_TURNS   1000               /* turns kept careful after a MAP_FULL */

static void reset_turn(kv_store *st)
{
    st->t_keys = st->t_expires = 0;
    st->t_dirty = st->t_cleared = 0;
}

static void merge(kv_store *st, const kv_ctx *c)
{
    st->t_keys += c->d_keys;
    st->t_expires += c->d_expires;
    if (c->d_keys || c->d_expires) st->t_dirty = 1;
}

/* Write the counters (turn deltas + c's) into txn. */
static int flush_with(kv_store *st, void *txn, const kv_ctx *c)
{
    st->t_keys += c->d_keys;
    st->t_expires += c->d_expires;
    int s = kv_store_flush_counters(st, txn);
    st->t_keys -= c->d_keys;
    st->t_expires -= c->d_expires;
    return s;
}

/* Commit the turn's transaction with its counters. FD_OK or FD_E_*. */
static int commit_turn(kv_store *st)
{
    const kv_driver *d = st->drv;
    int s = FD_OK;
    if (!st->txn) return FD_OK;
    if (st->t_dirty) s = kv_store_flush_counters(st, st->txn);
    if (s == FD_OK) s = d->commit(st->txn);
    else d->abort(st->txn);
    st->txn = NULL;
    if (s == FD_OK) {
        st->keys += (uint64_t)st->t_keys;
        st->expires += (uint64_t)st->t_expires;
        st->commits++;
        fd_events_deliver(&st->events);       /* the turn's events, once it is committed */
    } else {
        fd_events_cut(&st->events, 0);
        st->commit_errors++;
        if (s == FD_E_OOM) st->oom_sticky = KV_CAREFUL_TURNS;
    }
    reset_turn(st);
    return s;
}

static void abort_turn(kv_store *st, int status)
{
    if (st->txn) st->drv->abort(st->txn);
    st->txn = NULL;
    reset_turn(st);
    fd_events_cut(&st->events, 0);            /* the turn's events go with it */
    st->turn_err = status;
    if (status == FD_E_OOM) st->oom_sticky = KV_CAREFUL_TURNS;
}

static int begin_turn(kv_store *st)
{
    const kv_driver *d = st->drv;
    int s = d->begin(st->db, NULL, &st->txn);
    if (s != FD_OK) { st->txn = NULL; return s; }
    int full = d->nearly_full && d->nearly_full(st->db, 0);
    st->careful = full || st->oom_sticky > 0;
    if (!full && st->oom_sticky > 0) st->oom_sticky--;
    if (st->careful) st->careful_turns++;
    return FD_OK;
}

int kv_backend_attach(fd_backend *b, kv_store *st, const kv_driver *drv, void *db,
                      const fd_backend_config *cfg, char *err, size_t errlen)
{
    int s = kv_store_init(st, drv, db, err, errlen);
    if (s != FD_OK) return s;
    st->max_bulk = cfg->max_bulk;
    b->state = st;
    b->turn_writes = 0;
    return FD_OK;
}

/* A multi-key command's metadata records, up to KV_PREFETCH_MAX, handed
 * to the driver's prefetch before the command reads them one by one. */
static void prefetch_keys(const kv_driver *d, void *txn, const fd_request *r)
{
    const fd_command *cmd = r->cmd;
    if (cmd->first_key <= 0 || cmd->last_key == cmd->first_key) return;
    int pos[KV_PREFETCH_MAX];
    int n = fd_command_keys(cmd, r->argc, r->argv, pos, KV_PREFETCH_MAX);
    if (n < 2) return;
    uint8_t enc[KV_PREFETCH_MAX][KV_MKEY_MAX];
    const void *k[KV_PREFETCH_MAX];
    size_t kl[KV_PREFETCH_MAX];
    for (int i = 0; i < n; i++) {
        kl[i] = kv_enc_meta_key(enc[i], r->argv[pos[i]].ptr, r->argv[pos[i]].len);
        k[i] = enc[i];
    }
    d->prefetch(txn, n, k, kl);
}

static int submit_one(fd_backend *b, fd_request *r)
{
    kv_store *st = b->state;
    const kv_driver *d = st->drv;
    kv_handler h = r->cmd ? kv_handler_of(r->cmd->id) : NULL;
    if (!h) return FD_E_NOTSUPPORTED;
    if (st->turn_err) return st->turn_err;
    if (!st->txn) {
        int s = begin_turn(st);
        if (s != FD_OK) return s;
    }
    if (r->is_write) b->turn_writes++;
    if (d->prefetch) prefetch_keys(d, st->txn, r);

    kv_ctx c;
    memset(&c, 0, sizeof c);
    c.st = st;
    c.drv = d;
    c.txn = st->txn;
    c.argc = r->argc;
    c.argv = r->argv;
    c.out = r->out;
    c.now_ms = r->now_ms;
    c.max_bulk = st->max_bulk > 0 ? st->max_bulk : RESP_DEFAULT_MAX_BULK;
    c.read = !r->is_write;
    size_t evmark = st->events.len;

    int nested = 0;
    if (r->is_write && d->nearly_full) {
        nested = st->careful;
        if (!nested) {
            size_t bytes = 0;
            for (int i = 0; i < r->argc; i++) bytes += r->argv[i].len;
            nested = bytes > KV_BIG_WRITE && d->nearly_full(st->db, bytes);
        }
    }
    if (nested) {
        int s = d->begin(st->db, st->txn, &c.txn);
        if (s == FD_E_NOTSUPPORTED) { nested = 0; c.txn = st->txn; }
        else if (s != FD_OK) return s;
    }

    size_t mark = r->out->len;
    /* b->writes_inline: the driver commits this turn before end_turn returns */
    int async = d->hold && r->is_write && !b->writes_inline;
    uint64_t stamp0 = async ? d->stamp(st->txn) : 0;
    int s = fd_notify_on(FD_NOTIFY_EXPIRED) ? kv_expire_keys(&c, r->cmd) : FD_OK;   /* lazy expiry */
    if (s == FD_OK) s = h(&c);
    r->untouched = s == FD_OK ? c.untouched : 0;
    if (r->out->over && !r->is_write) {
        /* the reply passed max-reply-bytes (resp.h): a read changed
         * nothing; the caller writes the refusal */
        r->out->len = mark;
        s = FD_OK;
    }
    if (nested) {
        /* only this command is at stake: the turn's transaction is intact */
        if (!kv_is_storage_error(s) && (c.d_keys || c.d_expires || st->t_dirty)) {
            int fs = flush_with(st, c.txn, &c);
            if (fs != FD_OK) s = fs;
        }
        if (kv_is_storage_error(s)) {
            d->abort(c.txn);
            r->out->len = mark;
            fd_events_cut(&st->events, evmark);
            return s;
        }
        int cs = d->commit(c.txn);
        if (cs != FD_OK) { r->out->len = mark; fd_events_cut(&st->events, evmark); return cs; }
        merge(st, &c);
        return s;
    }
    if (kv_is_storage_error(s)) {
        /* the transaction may be unusable (LMDB after MAP_FULL): the turn is lost */
        r->out->len = mark;
        abort_turn(st, s);
        return s;
    }
    merge(st, &c);
    if (async && d->stamp(st->txn) != stamp0) {
        /* the commit is asynchronous: the reply waits for it */
        if (s == FD_OK && r->pending && !r->detached &&
            d->hold(st->txn, r->pending, r->out->data + mark, r->out->len - mark) == FD_OK) {
            r->out->len = mark;
            return FD_PENDING;
        }
        d->hold(st->txn, NULL, NULL, 0);      /* released now: end_turn stores it first */
    }
    return s;
}

/* A driver that commits asynchronously (kv_driver.hold) serves an
 * asynchronous backend (ops->async): the host hands every request a pending
 * handle and counts on its completion (MULTI/EXEC counts a unit's replies),
 * so a request answered at once is completed here, inside submit, and the
 * writes whose commit is in flight complete when it is stored. */
int kv_backend_submit(fd_backend *b, fd_request *r)
{
    kv_store *st = b->state;
    size_t mark = r->out->len;
    int s = submit_one(b, r);
    if (!r->pending || !st->drv->hold || s == FD_PENDING) return s;
    if (s == FD_OK) {
        /* the reply moves out of r->out first: completing may grow that buffer */
        size_t n = r->out->len - mark;
        char small[4096], *tmp = n <= sizeof small ? small : malloc(n);
        if (!tmp) {
            r->out->len = mark;
            fd_pending_error(r->pending, FD_E_NOMEM);
            return FD_PENDING;
        }
        memcpy(tmp, r->out->data + mark, n);
        r->out->len = mark;
        fd_pending_reply(r->pending, tmp, n);
        if (tmp != small) free(tmp);
    } else {
        r->out->len = mark;
        fd_pending_error(r->pending, s);
    }
    return FD_PENDING;
}

const char *kv_backend_support(const struct fd_command *cmd)
{
    return kv_handler_of(cmd->id) ? FD_SERVED : NULL;
}

int kv_backend_end_turn(fd_backend *b)
{
    kv_store *st = b->state;
    int err = st->turn_err;
    st->turn_err = 0;
    b->turn_writes = 0;
    int s = commit_turn(st);
    if (!err) err = s;
    if (st->buf_cap > KV_SCRATCH_KEEP) {
        free(st->buf);
        st->buf = NULL;
        st->buf_cap = 0;
    }
    return err;
}

void kv_backend_cron(fd_backend *b, int64_t now_ms)
{
    kv_store *st = b->state;
    const kv_driver *d = st->drv;
    if (st->turn_err) return;                 /* the turn failed: end_turn first */
    int own = !st->txn, nested = 0, s, done = 0;
    kv_ctx c;
    memset(&c, 0, sizeof c);
    c.st = st;
    c.drv = d;
    c.now_ms = now_ms;
    if (own) {
        if (begin_turn(st) != FD_OK) return;
        c.txn = st->txn;
    } else {
        s = d->begin(st->db, st->txn, &c.txn);
        if (s == FD_OK) nested = 1;
        else if (s == FD_E_NOTSUPPORTED) c.txn = st->txn;
        else return;
    }
    size_t evmark = st->events.len;
    s = kv_expire_cycle(&c, KV_CRON_KEYS, KV_CRON_BUDGET_US, &done);
    if (nested) {
        if (s == FD_OK && (c.d_keys || c.d_expires)) s = flush_with(st, c.txn, &c);
        if (s == FD_OK) s = d->commit(c.txn);
        else d->abort(c.txn);
        if (s == FD_OK) merge(st, &c);        /* its events leave with the turn's */
        else fd_events_cut(&st->events, evmark);
        return;                               /* a failure lost only this cycle */
    }
    if (s != FD_OK) {
        if (own) { d->abort(st->txn); st->txn = NULL; reset_turn(st); fd_events_cut(&st->events, 0); }
        else abort_turn(st, s);
        return;
    }
    merge(st, &c);
    if (own) commit_turn(st);
}

void kv_backend_keyspace(fd_backend *b, uint64_t *keys, uint64_t *expires)
{
    kv_store *st = b->state;
    *keys = st->keys + (uint64_t)st->t_keys;
    *expires = st->expires + (uint64_t)st->t_expires;
}

void kv_backend_info(kv_store *st, resp_out *lines)
{
    char buf[512];
    int n = snprintf(buf, sizeof buf,
                     "kv_keys:%llu\r\nkv_expires:%llu\r\nkv_expired_keys:%llu\r\n"
                     "kv_commits:%llu\r\nkv_commit_errors:%llu\r\nkv_careful_turns:%llu\r\n"
                     "kv_careful_mode:%d\r\nkv_collection_versions:%llu\r\n",
                     (unsigned long long)(st->keys + (uint64_t)st->t_keys),
                     (unsigned long long)(st->expires + (uint64_t)st->t_expires),
                     (unsigned long long)st->expired_keys,
                     (unsigned long long)st->commits, (unsigned long long)st->commit_errors,
                     (unsigned long long)st->careful_turns, st->careful || st->oom_sticky,
                     (unsigned long long)st->version);
    if (n > 0) resp_out_raw(lines, buf, (size_t)n);
}

/* ---------------------------------------------------------------- frontdoor's own records */

static int aux_key(uint8_t *k, const char *name, size_t *kl)
{
    size_t n = strlen(name);
    if (n == 0 || n > FD_AUX_NAME_MAX) return FD_E_INTERNAL;
    k[0] = KV_PFX_AUX;
    memcpy(k + 1, name, n);
    *kl = n + 1;
    return FD_OK;
}

int kv_backend_aux_get(fd_backend *b, const char *name, char **v, size_t *vl)
{
    kv_store *st = b->state;
    const kv_driver *d = st->drv;
    uint8_t k[1 + FD_AUX_NAME_MAX];
    size_t kl;
    int s = aux_key(k, name, &kl);
    if (s != FD_OK) return s;
    void *txn = st->txn;
    int own = !txn;
    if (own && (s = d->begin(st->db, NULL, &txn)) != FD_OK) return s;
    const void *p;
    size_t n;
    s = d->get(txn, k, kl, &p, &n);
    if (s == FD_OK) {
        *v = malloc(n ? n : 1);
        if (!*v) s = FD_E_NOMEM;
        else {
            memcpy(*v, p, n);
            *vl = n;
        }
    }
    if (own) d->abort(txn);
    return s;
}

int kv_backend_aux_put(fd_backend *b, const char *name, const void *v, size_t vl)
{
    kv_store *st = b->state;
    const kv_driver *d = st->drv;
    uint8_t k[1 + FD_AUX_NAME_MAX];
    size_t kl;
    int s = aux_key(k, name, &kl);
    if (s != FD_OK) return s;
    if (!st->txn && (s = begin_turn(st)) != FD_OK) return s;
    s = vl ? d->put(st->txn, k, kl, v, vl) : d->del(st->txn, k, kl);
    if (s == FD_NOTFOUND) s = FD_OK;
    /* not a client's held reply: the commit stores it before it returns */
    if (s == FD_OK && d->hold) s = d->hold(st->txn, NULL, NULL, 0);
    return s;
}
