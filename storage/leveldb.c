/* leveldb.c — the LevelDB backend: a kv_driver over one LevelDB database
 * (cfg->dir) and `fd_leveldb_backend`, whose submit / end_turn / cron are the
 * generic ones of kv_backend.c. docs/leveldb.md is the long form.
 *
 * LevelDB has no transactions, and its reads do not see a WriteBatch that is
 * not yet written. The turn's transaction is therefore an in-memory OVERLAY:
 * a skiplist of key -> value | tombstone holding every write of the turn
 * (storage/kv/kv_overlay.h).
 *   - get() looks in the overlay first, then in LevelDB;
 *   - a cursor merges a LevelDB iterator with the overlay (overlay wins on
 *     equal keys, tombstones hide keys), forwards and backwards; it sees
 *     writes made after it was positioned (as an LMDB cursor does);
 *   - clear() (FLUSHDB) empties the overlay and hides all of LevelDB;
 *   - commit = ONE leveldb_write of a WriteBatch built from the overlay (all
 *     of LevelDB's keys deleted first after a clear), with WriteOptions.sync
 *     when cfg->sync: one write + one fsync per event-loop turn (group
 *     commit); a turn that wrote nothing writes nothing. The write runs on
 *     a writer thread ("commits" below): the frozen overlay stays a read
 *     layer until it is stored, and the replies of its writes wait
 *     (FD_PENDING, the backend is ops->async) — unless it cannot stall and
 *     the turn is light: then on the loop ("inline commits" below);
 *   - abort = drop the overlay.
 * Only the writer thread writes the database while a turn is open (the
 * loop writes inline only at the end of a turn, with nothing at the
 * writer), and only keys of overlays still layered above it, so reads need
 * no snapshot: for every other key
 * LevelDB is unchanged while a turn is open.
 * No nested transactions (begin(parent) is FD_E_NOTSUPPORTED, nearly_full is
 * NULL): a write to the overlay can only fail on malloc, so careful mode has
 * nothing to protect.
 *
 * Files: this one (the transaction, the backend), leveldb_cache.c (row
 * cache, memo, seek hints), leveldb_commit.c (batches, writer thread,
 * inline commits), leveldb_view.c (layered reads, cursors); what they share
 * is leveldb_int.h.
 */
#include "leveldb_int.h"


/* LevelDB reports errors as Status::ToString() text. Keeps the text for
 * INFO (leveldb_last_error) and frees it. */
int ld_status(ld_db *db, char *err)
{
    if (!err) return FD_OK;
    int s = FD_E_IO;
    if (strncmp(err, "Corruption:", 11) == 0) s = FD_E_CORRUPT;
    else if (strncmp(err, "Invalid argument:", 17) == 0 || strncmp(err, "Not implemented:", 16) == 0)
        s = FD_E_INTERNAL;
    if (db) snprintf(db->last_error, sizeof db->last_error, "%s", err);
    leveldb_free(err);
    return s;
}

/* Free p (malloc'ed) with the turn's reads: at the next write or the
 * transaction's end. */
int ld_defer_free(ld_txn *x, void *p)
{
    if (ld_reads_room(x)) return FD_E_NOMEM;
    x->reads[x->nreads++] = p;
    return FD_OK;
}

void ld_release_reads(ld_txn *x)
{
    for (size_t i = 0; i < x->nreads; i++) leveldb_free(x->reads[i]);
    x->nreads = 0;
    if (x->capreads > 64) {
        free(x->reads);
        x->reads = NULL;
        x->capreads = 0;
    }
}


void ld_sit_drop(ld_txn *x)
{
    if (x->sit) leveldb_iter_destroy(x->sit);
    x->sit = NULL;
    x->sit_at = 0;
}

void ld_txn_end(ld_txn *x)
{
    x->memo = 0;
    ld_sit_drop(x);
    ld_release_reads(x);
    kv_overlay_clear(x->ov);
    x->cleared = 0;
    x->must_sync = 0;
    x->used = 0;
}

/* FLUSHDB leaves a tombstone for every record. Until compactions drop them,
 * every seek into a deleted range (cron's seek to the expiry index, KEYS,
 * SCAN) steps over all of them: slow, on the loop thread. So after a clear
 * is committed a helper thread runs leveldb_compact_range over everything
 * (requests made meanwhile are merged into one more run); the loop goes on
 * serving.
 *
 * Scattered deletes do the same on a smaller scale: SPOP takes members
 * from random places of a set, and its next random pick (kv_random_seek)
 * steps over the tombstones of the earlier ones, more with each pop
 * (measured: the last thousand SPOPs of a 60k-member set at 150/s, 7 ms
 * each). The kv layer reports such deletes (kv_driver.scattered); after
 * LD_TOMBS_COMPACT of them the helper compacts the range of the
 * collections they fell in, unless LevelDB's files hold more than
 * LD_TOMBS_COMPACT_MAX bytes there (a rewrite that big is left to
 * LevelDB's own compactions; counted as skipped). Deletes at the ends of a
 * collection (LPOP, ZPOPMIN) are not reported: seeks start past them (seek
 * hints, list read-behind, sorted-set bounds), and compacting behind every
 * 4096 of them measured slower (LPOP -P 16: 725k -> 332k/s). */
#define LD_TOMBS_COMPACT      4096
#define LD_TOMBS_COMPACT_MAX  ((uint64_t)64 << 20)

/* Compact [lo, hi] when LevelDB's files hold at most LD_TOMBS_COMPACT_MAX
 * bytes of it: 1 done, 0 skipped. The compactor thread. */
static int compact_range_bounded(ld_db *db, const char *lo, size_t lol, const char *hi, size_t hil)
{
    const char *ks[1] = { lo }, *ke[1] = { hi };
    size_t ksl[1] = { lol }, kel[1] = { hil };
    uint64_t size = 0;
    leveldb_approximate_sizes(db->ldb, 1, ks, ksl, ke, kel, &size);
    if (size > LD_TOMBS_COMPACT_MAX) return 0;
    leveldb_compact_range(db->ldb, lo, lol, hi, hil);
    return 1;
}

static void *compactor(void *arg)
{
    ld_db *db = arg;
    pthread_mutex_lock(&db->cmu);
    for (;;) {
        while (!db->cwant && !db->cstop) pthread_cond_wait(&db->ccv, &db->cmu);
        if (db->cstop) break;
        int want = db->cwant;
        char *lo = db->clo, *hi = db->chi;
        size_t lol = db->clol, hil = db->chil;
        db->clo = db->chi = NULL;
        db->cwant = 0;
        db->cbusy = 1;
        pthread_mutex_unlock(&db->cmu);
        int done = 1;
        if (want == 1) leveldb_compact_range(db->ldb, NULL, 0, NULL, 0);
        else done = compact_range_bounded(db, lo, lol, hi, hil);
        free(lo);
        free(hi);
        pthread_mutex_lock(&db->cmu);
        db->cbusy = 0;
        if (want == 1) db->compactions++;
        else if (done) db->range_compactions++;
        else db->range_skipped++;
    }
    pthread_mutex_unlock(&db->cmu);
    return NULL;
}

/* A copy of k (one byte at least), or NULL. */
static char *key_dup(const char *k, size_t kl)
{
    char *c = malloc(kl ? kl : 1);
    if (c && kl) memcpy(c, k, kl);
    return c;
}

/* Widen the bound *b (lower when dir < 0, upper else) to k. */
static void widen(char **b, size_t *bl, const char *k, size_t kl, int dir)
{
    if (*b) {
        int c = kv_overlay_keycmp(k, kl, *b, *bl);
        if (dir < 0 ? c >= 0 : c <= 0) return;
    }
    char *n = key_dup(k, kl);
    if (!n) return;
    free(*b);
    *b = n;
    *bl = kl;
}

/* Ask the helper for a compaction: everything (lo NULL), or [lo, hi],
 * merged with a range request still waiting. Best effort: without memory
 * or a thread, LevelDB compacts in its own time. */
static void request_compaction(ld_db *db, const char *lo, size_t lol, const char *hi, size_t hil)
{
    /* compact_range switches the memtable and waits for its flush, holding
     * LevelDB's write queue: a write behind it would wait too */
    db->inline_ok = 0;
    if (!db->cstarted) {
        if (pthread_mutex_init(&db->cmu, NULL) != 0) return;
        if (pthread_cond_init(&db->ccv, NULL) != 0) { pthread_mutex_destroy(&db->cmu); return; }
        if (pthread_create(&db->cthread, NULL, compactor, db) != 0) {
            pthread_cond_destroy(&db->ccv);
            pthread_mutex_destroy(&db->cmu);
            return;
        }
        db->cstarted = 1;
    }
    pthread_mutex_lock(&db->cmu);
    if (!lo || db->cwant == 1) {
        free(db->clo);
        free(db->chi);
        db->clo = db->chi = NULL;
        db->cwant = 1;
    } else {
        widen(&db->clo, &db->clol, lo, lol, -1);
        widen(&db->chi, &db->chil, hi, hil, 1);
        if (db->clo && db->chi) db->cwant = 2;
    }
    pthread_cond_signal(&db->ccv);
    pthread_mutex_unlock(&db->cmu);
}

void ld_request_compaction(ld_db *db)
{
    request_compaction(db, NULL, 0, NULL, 0);
}

static void ld_scattered(void *txn, const void *pfx, size_t pl, uint64_t n)
{
    ld_db *db = ((ld_txn *)txn)->db;
    if (!pl || !n) return;
    /* the prefix's range ends at its successor (pl <= KV_ELEM_MAX) */
    char end[KV_ELEM_MAX];
    size_t el = pl < sizeof end ? pl : sizeof end;
    memcpy(end, pfx, el);
    while (el && (uint8_t)end[el - 1] == 0xff) el--;
    if (!el) return;
    end[el - 1]++;
    widen(&db->tlo, &db->tlol, pfx, pl, -1);
    widen(&db->thi, &db->thil, end, el, 1);
    db->tombs += n;
    if (db->tombs < LD_TOMBS_COMPACT || !db->tlo || !db->thi) return;
    request_compaction(db, db->tlo, db->tlol, db->thi, db->thil);
    free(db->tlo);
    free(db->thi);
    db->tlo = db->thi = NULL;
    db->tombs = 0;
}


static int ld_begin(void *dbp, void *parent, void **txn)
{
    ld_db *db = dbp;
    if (parent) return FD_E_NOTSUPPORTED;
    if (db->tx.used) return FD_E_INTERNAL;
    if (db->nb) ld_retire_done(db);
    if (!db->tx.ov && !(db->tx.ov = kv_overlay_new())) return FD_E_NOMEM;
    db->tx.db = db;
    db->tx.used = 1;
    db->tx.cleared = 0;
    db->tx.must_sync = 0;
    db->tx.inline_turn = db->be && db->be->writes_inline;
    *txn = &db->tx;
    return FD_OK;
}

static void ld_abort(void *txn)
{
    ld_txn *x = txn;
    ld_answers_add(x->db, &x->h, FD_E_IO);      /* their writes are not made */
    ld_txn_end(x);
}

static uint64_t ld_stamp(void *txn)
{
    return ((ld_txn *)txn)->stamp;
}

static int ld_hold(void *txn, fd_pending *p, const void *reply, size_t len)
{
    ld_txn *x = txn;
    if (!p || !x->db->async) { x->must_sync = 1; return p ? FD_E_NOTSUPPORTED : FD_OK; }
    return ld_holds_push(&x->h, p, reply, len);
}


/* kv_driver.prefetch: the overlays' hash slots (the turn's, the batches
 * in flight) and the row cache's lookups (ld_rc_prefetch), all at once:
 * ld_get then finds them cached. */
static void ld_prefetch(void *txn, int n, const void *const *k, const size_t *kl)
{
    ld_txn *x = txn;
    ld_db *db = x->db;
    uint64_t h[KV_PREFETCH_MAX];
    for (int i = 0; i < n; i++) {
        kv_overlay_prefetch(x->ov, k[i], kl[i]);
        for (int j = 0; j < db->nb; j++) kv_overlay_prefetch(db->bq[j]->ov, k[i], kl[i]);
        h[i] = ld_row_hash(k[i], kl[i]);
    }
    ld_rc_prefetch(db, n, h);
}

static const kv_driver ld_driver = {
    .name = "leveldb",
    .begin = ld_begin, .commit = ld_commit, .abort = ld_abort,
    .get = ld_get, .get_cached = ld_get_cached, .put = ld_put, .reserve = ld_reserve, .del = ld_del, .drop = ld_drop, .clear = ld_clear,
    .iter_open = ld_iter_open, .iter_close = ld_iter_close,
    .seek = ld_seek, .seek_le = ld_seek_le, .next = ld_next, .prev = ld_prev, .cur = ld_cur,
    .nearly_full = NULL,     /* no nested transactions: see the top of the file */
    .stamp = ld_stamp, .hold = ld_hold, .scattered = ld_scattered, .prefetch = ld_prefetch,
};

/* ---------------------------------------------------------------- backend */

/* Stop the writer after it wrote everything queued; send what is owed. */
static void writer_stop(ld_db *db)
{
    if (!db->async) return;
    ld_drain(db);
    pthread_mutex_lock(&db->wmu);
    db->wstop = 1;
    pthread_cond_signal(&db->wcv);
    pthread_mutex_unlock(&db->wmu);
    pthread_join(db->wthread, NULL);
    ev_async_stop(db->loop, &db->wake);
    db->async = 0;
    while (db->freeq) { ld_batch *nx = db->freeq->fnext; ld_batch_free(db->freeq); db->freeq = nx; }
    ld_answers_send(db);
}

static void ld_release(ld_db *db)
{
    writer_stop(db);
    ld_drain(db);                       /* (no writer: nothing can be queued) */
    ld_answers_send(db);
    pthread_cond_destroy(&db->wcv);
    pthread_cond_destroy(&db->dcv);
    pthread_mutex_destroy(&db->wmu);
    ld_hints_clear(db);
    ld_rc_clear(db);
    free(db->rc);
    db->rc = NULL;
    if (db->logdir) closedir(db->logdir);
    db->logdir = NULL;
    if (db->cstarted) {              /* waits for a compaction in progress */
        pthread_mutex_lock(&db->cmu);
        db->cstop = 1;
        pthread_cond_signal(&db->ccv);
        pthread_mutex_unlock(&db->cmu);
        pthread_join(db->cthread, NULL);
        pthread_cond_destroy(&db->ccv);
        pthread_mutex_destroy(&db->cmu);
        db->cstarted = 0;
    }
    free(db->clo);
    free(db->chi);
    free(db->tlo);
    free(db->thi);
    db->clo = db->chi = db->tlo = db->thi = NULL;
    db->tombs = 0;
    /* no iterator may outlive the database (LevelDB asserts in
     * ~VersionSet): the transaction's, should a turn still be open */
    ld_sit_drop(&db->tx);
    if (db->ldb) leveldb_close(db->ldb);
    if (db->opts) leveldb_options_destroy(db->opts);
    if (db->cache) leveldb_cache_destroy(db->cache);
    if (db->bloom) leveldb_filterpolicy_destroy(db->bloom);
    if (db->ropts) leveldb_readoptions_destroy(db->ropts);
    if (db->wopts) leveldb_writeoptions_destroy(db->wopts);
    kv_overlay_free(db->tx.ov);
    db->tx.ov = NULL;
    ld_holds_free(&db->tx.h);
    free(db->tx.reads);
    free(db->dir);
    if (db->lockfd >= 0) close(db->lockfd);
}

static int leveldb_backend_open(fd_backend *b, const fd_backend_config *cfg, char *err, size_t errlen)
{
    const char *dir = fd_datadir_name(cfg);
    int ds = fd_datadir_create(dir, err, errlen);
    if (ds != FD_OK) return ds;
    char path[4200];
    /* the LMDB backend's files: this folder belongs to another engine */
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    if (access(path, F_OK) == 0) {
        snprintf(err, errlen, "the data folder '%s' holds an LMDB store (data.mdb): "
                 "use 'backend lmdb', or another 'dir' for leveldb", dir);
        return FD_E_IO;
    }
    /* LevelDB's own LOCK refuses a second process too; frontdoor.lock gives
     * the same message as the LMDB backend and covers mixed engines. */
    int lockfd;
    if ((ds = fd_datadir_lock(dir, &lockfd, err, errlen)) != FD_OK) return ds;
    ld_backend *lb = calloc(1, sizeof *lb);
    if (!lb) { close(lockfd); snprintf(err, errlen, "out of memory"); return FD_E_NOMEM; }
    ld_db *db = &lb->db;
    db->lockfd = lockfd;
    pthread_mutex_init(&db->wmu, NULL);
    pthread_cond_init(&db->wcv, NULL);
    pthread_cond_init(&db->dcv, NULL);

    db->sync = cfg->sync;
    static const fd_leveldb_settings none;
    const fd_leveldb_settings *ls = cfg->options ? cfg->options : &none;
    db->cache_size = ls->block_cache_size ? (uint64_t)ls->block_cache_size : LD_DEFAULT_CACHE;
    db->wbuf_size = ls->write_buffer_size ? (uint64_t)ls->write_buffer_size : LD_DEFAULT_WBUF;
    db->rc_budget = db->cache_size / 2 > LD_RC_MIN ? (size_t)(db->cache_size / 2) : LD_RC_MIN;
    db->compression = ls->compression;
    db->max_files = ls->max_open_files > 0 ? (int)ls->max_open_files : LD_DEFAULT_FILES;
    db->dir = strdup(dir);
    db->opts = leveldb_options_create();
    db->cache = leveldb_cache_create_lru((size_t)db->cache_size);
    db->bloom = leveldb_filterpolicy_create_bloom(LD_BLOOM_BITS);
    db->ropts = leveldb_readoptions_create();
    db->wopts = leveldb_writeoptions_create();
    if (!db->dir || !db->opts || !db->cache || !db->bloom || !db->ropts || !db->wopts ||
        !(db->tx.ov = kv_overlay_new())) {
        ld_release(db);
        free(lb);
        snprintf(err, errlen, "out of memory");
        return FD_E_NOMEM;
    }
    leveldb_options_set_create_if_missing(db->opts, 1);
    leveldb_options_set_cache(db->opts, db->cache);
    leveldb_options_set_filter_policy(db->opts, db->bloom);
    leveldb_options_set_write_buffer_size(db->opts, (size_t)db->wbuf_size);
    leveldb_options_set_max_open_files(db->opts, db->max_files);
    leveldb_options_set_compression(db->opts, db->compression == FD_LEVELDB_SNAPPY
                                    ? leveldb_snappy_compression : leveldb_no_compression);
    leveldb_writeoptions_set_sync(db->wopts, (uint8_t)(cfg->sync != 0));
    char *lerr = NULL;
    db->ldb = leveldb_open(db->opts, dir, &lerr);
    if (lerr || !db->ldb) {
        int s = lerr && strncmp(lerr, "Corruption:", 11) == 0 ? FD_E_CORRUPT : FD_E_IO;
        if (lerr && strstr(lerr, "LOCK"))
            snprintf(err, errlen, "the data folder '%s' is in use by another process (%s)", dir, lerr);
        else
            snprintf(err, errlen, "cannot open the LevelDB store in '%s': %s", dir,
                     lerr ? lerr : "unknown error");
        leveldb_free(lerr);
        db->ldb = NULL;
        ld_release(db);
        free(lb);
        return s;
    }
    int s = kv_backend_attach(b, &lb->st, &ld_driver, db, cfg, err, errlen);
    if (s != FD_OK) {
        ld_release(db);
        free(lb);
        return s;
    }
    /* test hooks of tests/integration/test_leveldb_async.py: a slow or a
     * failing writer */
    const char *hook = getenv("FRONTDOOR_LEVELDB_WRITE_DELAY_MS");
    db->delay_ms = hook ? atoi(hook) : 0;
    hook = getenv("FRONTDOOR_LEVELDB_FAIL_WRITE");
    db->fail_nth = hook ? atoi(hook) : 0;
    hook = getenv("FRONTDOOR_LEVELDB_INLINE");
    db->no_inline = cfg->sync || db->delay_ms > 0 || db->fail_nth > 0 || (hook && atoi(hook) == 0);
    db->be = b;
    if (cfg->loop) {
        /* the writer thread; without a loop (unit tests) commits are inline */
        db->loop = cfg->loop;
        ev_async_init(&db->wake, ld_on_wake);
        db->wake.data = db;
        ev_async_start(db->loop, &db->wake);
        if (pthread_create(&db->wthread, NULL, ld_writer, db) == 0) db->async = 1;
        else ev_async_stop(db->loop, &db->wake);
        ld_inline_update(db);
    }
    return s;
}

static void leveldb_backend_close(fd_backend *b)
{
    ld_backend *lb = b->state;
    if (!lb) return;
    kv_store_free(&lb->st);          /* aborts an uncommitted turn */
    writer_stop(&lb->db);            /* what is queued is written first */
    /* The replies writer_stop sent may have run more commands here (a
     * client blocked in BLPOP served when an LPUSH's reply completed): a
     * turn they opened is aborted too (bounded: each round's failed
     * replies may open another). */
    for (int i = 0; i < 4 && lb->st.txn; i++) {
        kv_store_free(&lb->st);
        ld_answers_send(&lb->db);
    }
    if (!lb->db.sync) {
        /* nosync: make the log durable once, at shutdown (an empty synced
         * write fsyncs LevelDB's log) */
        leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
        leveldb_writebatch_t *wb = leveldb_writebatch_create();
        char *e = NULL;
        leveldb_writeoptions_set_sync(wo, 1);
        leveldb_write(lb->db.ldb, wo, wb, &e);
        leveldb_free(e);
        leveldb_writebatch_destroy(wb);
        leveldb_writeoptions_destroy(wo);
    }
    ld_release(&lb->db);
    free(lb);
    b->state = NULL;
}

unsigned long long ld_prop_ull(ld_db *db, const char *name)
{
    char *v = leveldb_property_value(db->ldb, name);
    unsigned long long n = v ? strtoull(v, NULL, 10) : 0;
    leveldb_free(v);
    return n;
}

/* The helper's counters: FLUSHDB compactions, range compactions done and
 * skipped (too big). */
static void compactions_done(ld_db *db, uint64_t n[3])
{
    n[0] = n[1] = n[2] = 0;
    if (!db->cstarted) return;
    pthread_mutex_lock(&db->cmu);
    n[0] = db->compactions;
    n[1] = db->range_compactions;
    n[2] = db->range_skipped;
    pthread_mutex_unlock(&db->cmu);
}

/* LevelDB's compaction table (property "leveldb.stats": per level, files,
 * size, time, MB read and written by compactions, memtable flushes
 * included), summed over the levels. LevelDB does not count compactions. */
typedef struct ld_cstats { double secs, read_mb, write_mb; } ld_cstats;
static void compaction_stats(ld_db *db, ld_cstats *cs)
{
    memset(cs, 0, sizeof *cs);
    char *v = leveldb_property_value(db->ldb, "leveldb.stats");
    if (v) {
        for (char *line = strtok(v, "\n"); line; line = strtok(NULL, "\n")) {
            int lvl, files;
            double size, secs, rd, wr;
            if (sscanf(line, " %d %d %lf %lf %lf %lf", &lvl, &files, &size, &secs, &rd, &wr) == 6) {
                cs->secs += secs;
                cs->read_mb += rd;
                cs->write_mb += wr;
            }
        }
        leveldb_free(v);
    }
}

static void leveldb_backend_info(fd_backend *b, resp_out *lines)
{
    ld_backend *lb = b->state;
    ld_db *db = &lb->db;
    char buf[4096];
    char files[128];
    ld_cstats cs;
    compaction_stats(db, &cs);
    uint64_t cn[3];
    compactions_done(db, cn);
    int fl = 0;
    for (int lvl = 0; lvl < 7; lvl++) {
        char name[64];
        snprintf(name, sizeof name, "leveldb.num-files-at-level%d", lvl);
        fl += snprintf(files + fl, sizeof files - (size_t)fl, "%s%llu", lvl ? "," : "", ld_prop_ull(db, name));
        if (fl >= (int)sizeof files) break;
    }
    int n = snprintf(buf, sizeof buf,
                     "leveldb_version:%d.%d\r\nleveldb_sync:%s\r\nleveldb_block_cache_size:%llu\r\n"
                     "leveldb_write_buffer_size:%llu\r\nleveldb_compression:%s\r\n"
                     "leveldb_max_open_files:%d\r\nleveldb_approximate_memory_usage:%llu\r\n"
                     "leveldb_files_per_level:%s\r\n"
                     "leveldb_commits:%llu\r\nleveldb_commit_records:%llu\r\nleveldb_commit_bytes:%llu\r\n"
                     "leveldb_last_commit_us:%llu\r\nleveldb_max_commit_us:%llu\r\n"
                     "leveldb_avg_commit_us:%llu\r\nleveldb_slow_commits:%llu\r\n"
                     "leveldb_max_turn_records:%llu\r\nleveldb_seek_hint_hits:%llu\r\n"
                     "leveldb_flush_compactions:%llu\r\n"
                     "leveldb_delete_compactions:%llu\r\nleveldb_delete_compactions_skipped:%llu\r\n"
                     "leveldb_row_cache_entries:%llu\r\nleveldb_row_cache_bytes:%llu\r\n"
                     "leveldb_row_cache_hits:%llu\r\nleveldb_row_cache_misses:%llu\r\n"
                     "leveldb_row_cache_evicted:%llu\r\n"
                     "leveldb_async_commit:%s\r\nleveldb_commits_in_flight:%d\r\n"
                     "leveldb_held_replies:%llu\r\nleveldb_held_bytes:%llu\r\n"
                     "leveldb_merged_turns:%llu\r\nleveldb_sync_turns:%llu\r\n"
                     "leveldb_loop_commit_us_total:%llu\r\nleveldb_loop_commit_us_max:%llu\r\n"
                     "leveldb_loop_retire_us_max:%llu\r\nleveldb_loop_lock_wait_us_max:%llu\r\n"
                     "leveldb_writer_busy_us:%llu\r\nleveldb_writer_stall_us:%llu\r\n"
                     "leveldb_backpressure_waits:%llu\r\nleveldb_backpressure_us:%llu\r\n"
                     "leveldb_commit_failures:%llu\r\nleveldb_failed_replies:%llu\r\n"
                     "leveldb_inline_mode:%s\r\nleveldb_inline_commits:%llu\r\n"
                     "leveldb_inline_slow:%llu\r\nleveldb_inline_blocked:%llu\r\n"
                     "leveldb_inline_polls:%llu\r\n"
                     "leveldb_memtable_estimate:%llu\r\n"
                     "leveldb_compaction_ms:%llu\r\n"
                     "leveldb_compaction_read_mb:%llu\r\nleveldb_compaction_write_mb:%llu\r\n"
                     "leveldb_last_error:%s\r\n",
                     leveldb_major_version(), leveldb_minor_version(), db->sync ? "yes" : "no",
                     (unsigned long long)db->cache_size, (unsigned long long)db->wbuf_size,
                     db->compression == FD_LEVELDB_SNAPPY ? "snappy" : "none", db->max_files,
                     ld_prop_ull(db, "leveldb.approximate-memory-usage"), files,
                     (unsigned long long)db->commits, (unsigned long long)db->commit_records,
                     (unsigned long long)db->commit_bytes, (unsigned long long)db->last_commit_us,
                     (unsigned long long)db->max_commit_us,
                     (unsigned long long)(db->commits ? db->total_commit_us / db->commits : 0),
                     (unsigned long long)db->slow_commits, (unsigned long long)db->max_overlay, (unsigned long long)db->hint_hits,
                     (unsigned long long)cn[0], (unsigned long long)cn[1], (unsigned long long)cn[2],
                     (unsigned long long)db->rc_entries, (unsigned long long)db->rc_bytes,
                     (unsigned long long)db->rc_hits, (unsigned long long)db->rc_misses,
                     (unsigned long long)db->rc_evicted,
                     db->async ? "yes" : "no", db->nb,
                     (unsigned long long)db->held_replies, (unsigned long long)db->held_bytes,
                     (unsigned long long)db->merged_turns, (unsigned long long)db->sync_turns,
                     (unsigned long long)db->loop_commit_us, (unsigned long long)db->loop_commit_max_us,
                     (unsigned long long)db->retire_max_us, (unsigned long long)db->lock_wait_max_us,
                     (unsigned long long)db->writer_busy_us, (unsigned long long)db->writer_stall_us,
                     (unsigned long long)db->bp_waits, (unsigned long long)db->bp_us,
                     (unsigned long long)db->commit_failures, (unsigned long long)db->failed_replies,
                     ld_inline_now(db) ? "yes" : "no", (unsigned long long)db->inline_commits,
                     (unsigned long long)db->inline_slow, (unsigned long long)db->inline_blocked,
                     (unsigned long long)db->polls,
                     (unsigned long long)db->mem_est,
                     (unsigned long long)(cs.secs * 1000),
                     (unsigned long long)cs.read_mb, (unsigned long long)cs.write_mb,
                     db->last_error);
    if (n > 0) resp_out_raw(lines, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
    kv_backend_info(&lb->st, lines);
}

/* leveldb's directives (option.h) */
static const char *const ld_compression_names[] = {"snappy", "none", NULL};   /* = FD_LEVELDB_* */
#define LDO(f) offsetof(fd_leveldb_settings, f)
static const fd_option ld_rows[] = {
    {"leveldb-block-cache-size", FD_OPT_MEM, LDO(block_cache_size), "64mb", 1024 * 1024, 1LL << 40, NULL, 0},
    {"leveldb-compression", FD_OPT_ENUM, LDO(compression), "snappy", 0, 0, ld_compression_names, 0},
    {"leveldb-max-open-files", FD_OPT_INT, LDO(max_open_files), "1000", 64, 1000000, NULL, 0},
    {"leveldb-write-buffer-size", FD_OPT_MEM, LDO(write_buffer_size), "16mb", 64 * 1024, 1024LL * 1024 * 1024, NULL, 0},
};
const fd_option_set fd_leveldb_options = FD_OPTION_SET("leveldb", ld_rows, fd_leveldb_settings);
_Static_assert(sizeof(fd_leveldb_settings) <= FD_OPTION_SET_BYTES, "leveldb settings fit a set");

const fd_backend_ops fd_leveldb_backend = {
    .name     = "leveldb",
    .options  = &fd_leveldb_options,
    .open     = leveldb_backend_open,
    .close    = leveldb_backend_close,
    .submit   = kv_backend_submit,
    .end_turn = kv_backend_end_turn,
    .cron     = kv_backend_cron,
    .aux_get  = kv_backend_aux_get,
    .aux_put  = kv_backend_aux_put,
    .keyspace = kv_backend_keyspace,
    .info     = leveldb_backend_info,
    .support  = kv_backend_support,
    .embedded = 1,
    .notify   = FD_NOTIFY_CLASSES,
    .async    = 1,               /* write replies wait for their commit (writer thread) */
    .async_writes = 1,           /* reads never wait: no pending handle for them */
};
