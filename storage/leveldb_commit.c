/* leveldb_commit.c — the LevelDB backend's commits: a turn's overlay frozen
 * into a batch, written by the writer thread (one leveldb_write each) or,
 * when it cannot stall, inline on the loop; the write replies held until
 * their batch is stored; retirement (row cache, hints, statistics) on the
 * loop. Private: leveldb_int.h. */
#include "leveldb_int.h"

/* ---------------------------------------------------------------- commits
 *
 * Asynchronous commit (docs/leveldb.md, "Commits off the loop thread").
 * end_turn freezes the turn's overlay into a batch (or merges it into the
 * batch still waiting at the queue's tail) and returns; the writer thread
 * writes batches in order, one leveldb_write each. Until a batch is retired
 * its overlay is a layer of every read (newest first, then LevelDB). The
 * replies of the writes it holds are completed (fd_pending_reply) when the
 * write is done, from the ev_async callback. Retirement (row cache, seek
 * hints, statistics, freeing) happens on the loop thread only while no
 * transaction is open, so the layers a transaction reads never change
 * under it: memos, read iterators and cursors stay true for its duration.
 *
 * A failed write fails the replies its batch holds, and every batch frozen
 * before the loop saw the failure (they may have read the lost data): see
 * ld_writer(). A turn that released a write reply (a script), FLUSHDB, and any
 * commit without a loop (unit tests) are written before end_turn returns. */

int ld_holds_push(ld_holds *h, fd_pending *p, const void *reply, size_t len)
{
    if (h->nheld == h->capheld) {
        size_t cap = h->capheld ? h->capheld * 2 : 16;
        ld_held *n = realloc(h->held, cap * sizeof *n);
        if (!n) return FD_E_NOMEM;
        h->held = n;
        h->capheld = cap;
    }
    if (h->rlen + len > h->rcap) {
        size_t cap = h->rcap ? h->rcap : 256;
        while (cap < h->rlen + len) cap *= 2;
        char *n = realloc(h->rbuf, cap);
        if (!n) return FD_E_NOMEM;
        h->rbuf = n;
        h->rcap = cap;
    }
    if (len) memcpy(h->rbuf + h->rlen, reply, len);
    h->held[h->nheld++] = (ld_held){p, h->rlen, len};
    h->rlen += len;
    return FD_OK;
}

/* Append src's replies to dst (src emptied). */
static int holds_move(ld_holds *dst, ld_holds *src)
{
    if (!dst->nheld) {
        ld_holds t = *dst;
        *dst = *src;
        *src = t;
        src->nheld = src->rlen = 0;
        return FD_OK;
    }
    for (size_t i = 0; i < src->nheld; i++)
        if (ld_holds_push(dst, src->held[i].p, src->rbuf + src->held[i].off, src->held[i].len) != FD_OK) {
            /* what did not move fails now */
            for (size_t j = i; j < src->nheld; j++) src->held[j - i] = src->held[j];
            src->nheld -= i;
            return FD_E_NOMEM;
        }
    src->nheld = src->rlen = 0;
    return FD_OK;
}

void ld_holds_free(ld_holds *h)
{
    free(h->held);
    free(h->rbuf);
    memset(h, 0, sizeof *h);
}

/* Queue h's replies for on_wake with `status` (h emptied). */
void ld_answers_add(ld_db *db, ld_holds *h, int status)
{
    if (!h->nheld) return;
    ld_answers *a = calloc(1, sizeof *a);
    if (!a) {
        /* cannot even queue: complete them now (the host copes) */
        for (size_t i = 0; i < h->nheld; i++) fd_pending_error(h->held[i].p, FD_E_NOMEM);
        h->nheld = h->rlen = 0;
        return;
    }
    a->status = status;
    a->held = h->held;
    a->nheld = h->nheld;
    a->rbuf = h->rbuf;
    memset(h, 0, sizeof *h);
    if (db->ans_tail) db->ans_tail->next = a;
    else db->ans = a;
    db->ans_tail = a;
    if (db->async && !db->in_wake) ev_async_send(db->loop, &db->wake);
}

/* Complete every queued reply (loop thread, outside submit/end_turn). */
void ld_answers_send(ld_db *db)
{
    while (db->ans) {
        ld_answers *a = db->ans;
        db->ans = db->ans_tail = NULL;
        while (a) {
            ld_answers *nx = a->next;
            for (size_t i = 0; i < a->nheld; i++) {
                if (a->status == FD_OK) fd_pending_reply(a->held[i].p, a->rbuf + a->held[i].off, a->held[i].len);
                else { fd_pending_error(a->held[i].p, a->status); db->failed_replies++; }
            }
            free(a->held);
            free(a->rbuf);
            free(a);
            a = nx;
        }
    }
}

void ld_batch_free(ld_batch *b)
{
    kv_overlay_free(b->ov);
    ld_holds_free(&b->h);
    free(b);
}

/* Length of x as a varint32/64 (LevelDB's encoding). */
static inline size_t varint_len(uint64_t x)
{
    if (x < 128) return 1;
    size_t n = 2;
    for (x >>= 14; x; x >>= 7) n++;
    return n;
}

/* The bytes LevelDB's memtable arena grows by for one record of an entry
 * of e bytes: MemTable::Add allocates the entry, then the skiplist node
 * (8-aligned, 16 + 8 per extra level: 1/4 of the nodes have 2 levels or
 * more, a mean of 18.7 bytes; here 16 twice, then 24). Arena::Allocate
 * takes it from the current 4 KB block, or starts a new one (the rest is
 * wasted), or gives a request above 1 KB a block of its own; each block
 * counts its size plus a pointer (Arena::MemoryUsage). Simulated, so the
 * estimate includes the waste (25% with 1 KB entries). Called by whoever
 * writes (the writer thread or the loop, never both at once). */
static inline uint64_t arena_alloc(ld_db *db, size_t n)
{
    if (n <= db->ar_rem) { db->ar_rem -= n; return 0; }
    if (n > LD_ARENA_BLOCK / 4) return n + sizeof(char *);
    db->ar_rem = LD_ARENA_BLOCK - n;
    return LD_ARENA_BLOCK + sizeof(char *);
}

static inline uint64_t arena_add(ld_db *db, size_t e)
{
    uint64_t a = arena_alloc(db, e);
    size_t pad = (LD_ARENA_BLOCK - db->ar_rem) & 7;   /* the node is 8-aligned */
    size_t node = ++db->ar_n % 3 ? 16 : 24;
    return a + arena_alloc(db, pad + node);
}

/* Append one record to wb, adding to *arena the bytes LevelDB's memtable
 * will use for it (arena_add of its entry: varint lengths, key, 8-byte
 * tag, value) and to *logb its bytes in the log (the entry less the tag
 * plus a type byte, to a byte). */
static inline void wb_add(ld_db *db, leveldb_writebatch_t *wb, const char *k, size_t kl, const char *v, size_t vl,
                   int del, uint64_t *arena, uint64_t *logb)
{
    if (del) leveldb_writebatch_delete(wb, k, kl);
    else leveldb_writebatch_put(wb, k, kl, v, vl);
    size_t e = varint_len(kl + 8) + kl + 8 + varint_len(vl) + vl;
    *arena += arena_add(db, e);
    *logb += e - 7;
}

/* One leveldb_write of overlay ov (after a clear: first a delete of every
 * record LevelDB holds). Sets *records, and *arena / *logb (wb_add; the log
 * also gets a 12-byte batch header and a 7-byte header per 32 KB block).
 * Only reads ov and LevelDB. FD_OK or FD_E_*, LevelDB's text in errbuf. */
static int write_overlay(ld_db *db, const kv_overlay *ov, int cleared, uint64_t *records,
                         uint64_t *arena, uint64_t *logb, char *errbuf, size_t errlen)
{
    if (db->delay_ms > 0) {                  /* test hook: a slow write */
        struct timespec ts = {db->delay_ms / 1000, (long)(db->delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    leveldb_writebatch_t *wb = leveldb_writebatch_create();
    uint64_t n = 0, a = 0, l = 12;
    char *err = NULL;
    if (cleared) {
        /* FLUSHDB: every record LevelDB holds goes, in the same batch */
        leveldb_iterator_t *it = leveldb_create_iterator(db->ldb, db->ropts);
        for (leveldb_iter_seek_to_first(it); leveldb_iter_valid(it); leveldb_iter_next(it)) {
            size_t kl;
            const char *k = leveldb_iter_key(it, &kl);
            wb_add(db, wb, k, kl, NULL, 0, 1, &a, &l);
            n++;
        }
        leveldb_iter_get_error(it, &err);
        leveldb_iter_destroy(it);
    }
    if (!err) {
        for (kv_ov_node *nd = kv_overlay_first(ov); nd; nd = kv_ov_next(nd)) {
            wb_add(db, wb, kv_ov_key(nd), nd->klen, nd->val ? nd->val : "", nd->vlen, nd->dead, &a, &l);
            n++;
        }
        leveldb_write(db->ldb, db->wopts, wb, &err);
    }
    leveldb_writebatch_destroy(wb);
    *records = n;
    *arena = a;
    *logb = l + 7 * (1 + l / 32768);
    if (err) snprintf(errbuf, errlen, "%s", err);
    return ld_status(NULL, err);
}

/* Write batch b into LevelDB (the writer thread). */
static int batch_write(ld_db *db, ld_batch *b)
{
    int64_t t0 = fd_mono_us();
    if (db->fail_nth && db->async && ++db->nwritten == db->fail_nth) {
        snprintf(b->err, sizeof b->err, "IO error: injected (FRONTDOOR_LEVELDB_FAIL_WRITE)");
        b->write_us = 0;
        return FD_E_IO;
    }
    int s = write_overlay(db, b->ov, b->cleared, &b->records, &b->arena, &b->logb, b->err, sizeof b->err);
    b->write_us = (uint64_t)(fd_mono_us() - t0);
    return s;
}

/* The writer thread. A failed write (batch F) poisons the queue: every
 * later batch up to poison_upto fails unwritten, since its turns may have
 * read F's data. poison_upto is the last batch queued when the loop retired
 * F (no transaction open then: later turns never saw F); the first batch
 * after it is written again and clears the poison. */
void *ld_writer(void *arg)
{
    ld_db *db = arg;
    pthread_mutex_lock(&db->wmu);
    for (;;) {
        ld_batch *b = NULL;
        for (int i = 0; i < db->nb; i++)
            if (db->bq[i]->state == LB_QUEUED) { b = db->bq[i]; break; }
        if (db->freeq && (!b || db->nfree > 64)) {
            /* retired batches: freeing a big overlay is the writer's work, not the loop's */
            ld_batch *f = db->freeq;
            db->freeq = NULL;
            db->nfree = 0;
            pthread_mutex_unlock(&db->wmu);
            while (f) { ld_batch *nx = f->fnext; ld_batch_free(f); f = nx; }
            pthread_mutex_lock(&db->wmu);
            continue;
        }
        if (!b) {
            if (db->wstop) break;
            db->widle = 1;
            pthread_cond_wait(&db->wcv, &db->wmu);
            db->widle = 0;
            continue;
        }
        b->state = LB_WRITING;
        int skip = 0;
        if (db->poison_from) {
            if (b->seq <= db->poison_upto) skip = db->poison_status;
            else db->poison_from = 0;
        }
        pthread_mutex_unlock(&db->wmu);
        int s = b->fail ? b->fail : skip ? skip : batch_write(db, b);
        pthread_mutex_lock(&db->wmu);
        if (s != FD_OK && !db->poison_from) {
            db->poison_from = b->seq;
            db->poison_upto = UINT64_MAX;
            db->poison_status = s;
        }
        b->status = s;
        b->state = LB_DONE;
        pthread_cond_broadcast(&db->dcv);
        pthread_mutex_unlock(&db->wmu);
        ev_async_send(db->loop, &db->wake);
        pthread_mutex_lock(&db->wmu);
    }
    pthread_mutex_unlock(&db->wmu);
    return NULL;
}

/* Move the replies of every finished batch to db->ans (loop thread). */
static void collect_done(ld_db *db)
{
    if (!db->nb) return;
    pthread_mutex_lock(&db->wmu);
    for (int i = 0; i < db->nb; i++) {
        ld_batch *b = db->bq[i];
        if (b->state != LB_DONE || b->collected) continue;
        b->collected = 1;
        db->held_replies -= b->h.nheld;
        if (b->status != FD_OK) {
            if (!b->err[0]) snprintf(b->err, sizeof b->err, "%s", fd_strerror(b->status));
            db->commit_failures++;
        }
        ld_answers_add(db, &b->h, b->status);
    }
    pthread_mutex_unlock(&db->wmu);
}

/* Apply a written batch to the loop's state and free it. */
static void batch_retire(ld_db *db, ld_batch *b)
{
    uint64_t bytes = kv_overlay_bytes(b->ov);
    db->held_bytes -= bytes;
    if (b->status == FD_OK) {
        ld_hints_drop_written(db, b->ov);
        if (b->cleared) { ld_rc_clear(db); ld_request_compaction(db); }
        else ld_rc_commit(db, b->ov);
        db->commits++;
        db->arena_sum += b->arena;
        db->logb_sum += b->logb;
        db->commit_records += b->records;
        db->commit_bytes += bytes;
        db->last_commit_us = b->write_us;
        db->total_commit_us += b->write_us;
        if (b->write_us > db->max_commit_us) db->max_commit_us = b->write_us;
        if (b->write_us > LD_SLOW_COMMIT_US) db->slow_commits++;
        if (b->write_us > LD_STALL_US) db->writer_stall_us += b->write_us;
    } else {
        /* LevelDB's state is unknown: forget what was learnt of it */
        ld_hints_clear(db);
        ld_rc_clear(db);
        if (b->err[0]) snprintf(db->last_error, sizeof db->last_error, "%s", b->err);
        pthread_mutex_lock(&db->wmu);
        if (db->poison_from && db->poison_upto == UINT64_MAX) db->poison_upto = db->seq;
        pthread_mutex_unlock(&db->wmu);
    }
    db->writer_busy_us += b->write_us;
    ld_holds_free(&b->h);
    if (db->async) {
        pthread_mutex_lock(&db->wmu);
        b->fnext = db->freeq;
        db->freeq = b;
        db->nfree++;
        /* no wake-up: the writer frees them before its next wait (a signal
         * per batch made the writer preempt the loop) */
        pthread_mutex_unlock(&db->wmu);
    } else {
        ld_batch_free(b);
    }
}

/* Retire the finished batches at the head of the queue. Only while no
 * transaction is open. Returns the first failed status retired, or FD_OK. */
int ld_retire_done(ld_db *db)
{
    int failed = FD_OK;
    if (!db->nb || db->tx.used) return FD_OK;
    int64_t t0 = fd_mono_us();
    collect_done(db);
    /* out of the queue first: the writer scans it, and frees what it is handed */
    ld_batch *done[LD_MAX_BATCHES];
    int k = 0;
    pthread_mutex_lock(&db->wmu);
    /* collected only: a batch done since collect_done still owes its replies */
    while (k < db->nb && db->bq[k]->state == LB_DONE && db->bq[k]->collected) { done[k] = db->bq[k]; k++; }
    if (k) {
        memmove(db->bq, db->bq + k, (size_t)(db->nb - k) * sizeof *db->bq);
        db->nb -= k;
    }
    pthread_mutex_unlock(&db->wmu);
    if (k) {
        for (int i = 0; i < k; i++) {
            if (done[i]->status != FD_OK && failed == FD_OK) failed = done[i]->status;
            batch_retire(db, done[i]);
        }
        uint64_t us = (uint64_t)(fd_mono_us() - t0);
        if (us > db->retire_max_us) db->retire_max_us = us;
    }
    return failed;
}

/* Wait until the writer finished one more batch (loop thread). */
static void wait_progress(ld_db *db)
{
    pthread_mutex_lock(&db->wmu);
    for (;;) {
        int k = 0;
        while (k < db->nb && db->bq[k]->state == LB_DONE) k++;
        if (k > 0 || !db->nb) break;
        pthread_cond_wait(&db->dcv, &db->wmu);
    }
    pthread_mutex_unlock(&db->wmu);
}

/* Every batch written and retired. The first failure among them, or FD_OK. */
int ld_drain(ld_db *db)
{
    int failed = FD_OK;
    while (db->nb) {
        int s = ld_retire_done(db);
        if (s != FD_OK && failed == FD_OK) failed = s;
        if (db->nb) wait_progress(db);
    }
    return failed;
}

/* ---------------------------------------------------------------- inline commits
 *
 * A turn goes to the writer thread only because leveldb_write MAY stall.
 * It blocks only in MakeRoomForWrite, evaluated once before the batch goes
 * in: with >= 8 level-0 files (1 ms sleep), >= 12 (wait), or a memtable
 * above write_buffer_size (then a switch; a wait if the previous memtable
 * is still being flushed). So while nothing is in flight at the writer, L0
 * (plus the flush in progress) is below 8 and the memtable is below
 * write_buffer_size less a margin for the estimate, a turn is written on
 * the loop as without a writer: its write replies are not held, the proxy
 * hands them no pending handle at all (be->writes_inline). Those conditions
 * can only stop holding through a write: the memtable grows by what we
 * write (mem_est counts it), level 0 grows only by a flush, which follows
 * a switch. Once a turn went to the writer, every later one does until the
 * writer has nothing left (order), then inline_poll reads LevelDB's state
 * again. LevelDB says nothing about its memtable alone
 * ("approximate-memory-usage" includes the block cache), so the poll
 * estimates it from the current log file: the memtable holds exactly the
 * writes in it, at the memtable/log byte ratio of every write so far; a
 * second log file means a flush in progress. */


/* A memtable estimated at est bytes is below LevelDB's write buffer by
 * more than the estimate's error (1/16 of it): no write can switch it. */
static int memtable_has_room(const ld_db *db, uint64_t est)
{
    return est + db->wbuf_size / 16 < db->wbuf_size;
}

/* Read LevelDB's state (writer mode, nothing in flight): inline_ok when no
 * write can stall. At most every LD_POLL_US. */
static void inline_poll(ld_db *db)
{
    int64_t now = fd_mono_us();
    if (now - db->poll_us < LD_POLL_US || now < db->inline_after_us) return;
    db->poll_us = now;
    db->polls++;
    if (db->cstarted) {
        pthread_mutex_lock(&db->cmu);
        int busy = db->cwant || db->cbusy;
        pthread_mutex_unlock(&db->cmu);
        if (busy) return;
    }
    int l0 = (int)ld_prop_ull(db, "leveldb.num-files-at-level0");
    if (l0 >= LD_L0_SLOWDOWN - 1) return;
    /* kept open: opendir's 32 KB buffer is a malloc that consolidates the heap */
    if (db->logdir) rewinddir(db->logdir);
    else if (!(db->logdir = opendir(db->dir))) return;
    DIR *d = db->logdir;
    int nlogs = 0;
    unsigned long long maxn = 0;
    char name[64] = "";
    for (struct dirent *de; (de = readdir(d)); ) {
        size_t n = strlen(de->d_name);
        char *end;
        if (n < 5 || n >= sizeof name || strcmp(de->d_name + n - 4, ".log") != 0) continue;
        unsigned long long num = strtoull(de->d_name, &end, 10);
        if (end != de->d_name + n - 4) continue;
        nlogs++;
        if (num >= maxn) { maxn = num; memcpy(name, de->d_name, n + 1); }
    }
    /* two logs: the previous memtable is being flushed (one more L0 file) */
    if (nlogs < 1 || nlogs > 2 || l0 + nlogs - 1 >= LD_L0_SLOWDOWN) return;
    char path[4200];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", db->dir, name);
    if (stat(path, &sb) != 0) return;
    double ratio = db->logb_sum >= (1u << 20) ? (double)db->arena_sum / (double)db->logb_sum : 4.0;
    uint64_t est = (uint64_t)((double)sb.st_size * ratio);
    if (!memtable_has_room(db, est)) return;
    db->mem_est = est;
    db->inline_ok = 1;
}

/* A turn written now goes inline: allowed (inline_poll), nothing at the
 * writer, and the turns are small (a heavy write stream, LD_INLINE_TURN_BYTES
 * a turn and more, costs the loop more time than the writer's hand-over:
 * the writer writes it on the other core while the loop serves). */
int ld_inline_now(const ld_db *db)
{
    return db->inline_ok && !db->nb && db->turn_bytes_avg < LD_INLINE_TURN_BYTES;
}

/* The proxy's flag for the next requests: inline while allowed and nothing
 * is at the writer. Called between turns only. */
void ld_inline_update(ld_db *db)
{
    if (!db->be) return;
    if (!db->inline_ok && !db->nb && db->async && !db->no_inline &&
        db->turn_bytes_avg < LD_INLINE_TURN_BYTES)    /* (else the poll could not make it inline) */
        inline_poll(db);
    db->be->writes_inline = ld_inline_now(db);
}

/* The loop thread's voluntary context switches so far: a write that made
 * it sleep (a lock held by LevelDB's compaction, the kernel's writeback)
 * adds one; a preemption does not. */
static long thread_sleeps(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nvcsw : 0;
}

/* Write x's overlay on the loop thread, as without a writer (nothing is in
 * flight: the caller drained the queue). Its held replies (if any) complete
 * after it. */
static int commit_inline(ld_db *db, ld_txn *x)
{
    int64_t t0 = fd_mono_us();
    long v0 = db->async ? thread_sleeps() : 0;
    uint64_t records = 0, arena = 0, logb = 0;
    char err[256] = "";
    int s = write_overlay(db, x->ov, x->cleared, &records, &arena, &logb, err, sizeof err);
    uint64_t us = (uint64_t)(fd_mono_us() - t0);
    if (s == FD_OK) {
        ld_hints_drop_written(db, x->ov);
        if (x->cleared) { ld_rc_clear(db); ld_request_compaction(db); }
        else ld_rc_commit(db, x->ov);
        db->commits++;
        db->commit_records += records;
        db->commit_bytes += kv_overlay_bytes(x->ov);
        db->last_commit_us = us;
        db->total_commit_us += us;
        if (us > db->max_commit_us) db->max_commit_us = us;
        if (us > LD_SLOW_COMMIT_US) db->slow_commits++;
        db->arena_sum += arena;
        db->logb_sum += logb;
        db->mem_est += arena;
    } else {
        /* LevelDB's state is unknown: forget what was learnt of it */
        ld_hints_clear(db);
        ld_rc_clear(db);
        db->commit_failures++;
        snprintf(db->last_error, sizeof db->last_error, "%s", err[0] ? err : fd_strerror(s));
    }
    if (db->async) {
        db->inline_commits++;
        if (!memtable_has_room(db, db->mem_est)) db->inline_ok = 0;   /* the switch is the writer's */
        /* slow, and it slept: LevelDB (a lock its compaction holds, a stall)
         * or the kernel (writeback) made the loop wait. Back to the writer
         * for a while; preempted only: stay (the writer would not help) */
        if (us > LD_STALL_US) {
            db->inline_slow++;
            if (thread_sleeps() != v0) {
                db->inline_blocked++;
                db->writer_stall_us += us;
                db->inline_ok = 0;
                db->inline_after_us = fd_mono_us() + LD_INLINE_BACKOFF_US;
            }
        }
    }
    ld_answers_add(db, &x->h, s);
    ld_txn_end(x);
    return s;
}

void ld_on_wake(struct ev_loop *loop, ev_async *w, int revents)
{
    (void)loop; (void)revents;
    ld_db *db = w->data;
    db->in_wake = 1;
    if (db->tx.used) collect_done(db);
    else { ld_retire_done(db); ld_inline_update(db); }
    db->in_wake = 0;
    ld_answers_send(db);
}


/* Merge overlay src into dst (the newer src wins). */
static int overlay_merge(kv_overlay *dst, const kv_overlay *src)
{
    for (kv_ov_node *n = kv_overlay_first(src); n; n = kv_ov_next(n)) {
        int s = n->dead ? kv_overlay_del(dst, kv_ov_key(n), n->klen)
                        : kv_overlay_put(dst, kv_ov_key(n), n->klen, n->val, n->vlen, NULL);
        if (s != FD_OK) return s;
    }
    return FD_OK;
}

/* Loop-thread time in end_turn's commit (INFO). */
static void loop_commit_time(ld_db *db, int64_t t0)
{
    if (!db->async) return;                  /* (not the format stamp written at open) */
    uint64_t us = (uint64_t)(fd_mono_us() - t0);
    db->loop_commit_us += us;
    if (us > db->loop_commit_max_us) db->loop_commit_max_us = us;
}

/* The end of a turn. Written here, on the loop (commit_inline), while no
 * write can stall and nothing is at the writer; also (after waiting for
 * the writer) when a reply was released, after a clear, and without a
 * writer. Otherwise x's writes become a batch for the writer (merged into
 * the one waiting at the tail, if any). */
int ld_commit(void *txn)
{
    ld_txn *x = txn;
    ld_db *db = x->db;
    if (kv_overlay_count(x->ov) == 0 && !x->cleared) {
        ld_answers_add(db, &x->h, FD_OK);       /* (nothing held: a hold needs a write) */
        ld_txn_end(x);
        if (db->nb) ld_retire_done(db);
        ld_inline_update(db);
        return FD_OK;
    }
    int64_t t0 = fd_mono_us();
    if (kv_overlay_count(x->ov) > db->max_overlay) db->max_overlay = kv_overlay_count(x->ov);
    uint64_t tb = kv_overlay_bytes(x->ov);
    db->turn_bytes_avg = db->turn_bytes_avg - db->turn_bytes_avg / 8 + tb / 8;
    int inl = ld_inline_now(db);
    if (!db->async || inl || x->inline_turn || x->cleared || x->must_sync) {
        int s = FD_OK;
        if (db->async && !inl && !x->inline_turn) db->sync_turns++;
        if (db->nb) {
            /* in order: what the writer holds goes first (x is not read any more) */
            x->used = 0;
            s = ld_drain(db);
            x->used = 1;
        }
        if (s != FD_OK) {
            /* x may have read what was lost */
            ld_answers_add(db, &x->h, s);
            ld_txn_end(x);
        } else {
            s = commit_inline(db, x);
        }
        loop_commit_time(db, t0);
        ld_inline_update(db);
        return s;
    }
    int s = FD_OK;
    ld_batch *tail = NULL;
    db->inline_ok = 0;                       /* what the writer writes is not counted: poll again */
    if (db->nb) {
        int64_t tl = fd_mono_us();
        pthread_mutex_lock(&db->wmu);        /* the writer cannot take it while we merge */
        uint64_t lw = (uint64_t)(fd_mono_us() - tl);
        if (lw > db->lock_wait_max_us) db->lock_wait_max_us = lw;
        if (db->bq[db->nb - 1]->state == LB_QUEUED) tail = db->bq[db->nb - 1];
        if (tail) {
            uint64_t before = kv_overlay_bytes(tail->ov);
            s = overlay_merge(tail->ov, x->ov);
            db->held_bytes += kv_overlay_bytes(tail->ov) - before;
            size_t nh = x->h.nheld;
            if (s == FD_OK) s = holds_move(&tail->h, &x->h);
            db->held_replies += nh - x->h.nheld;
            if (s != FD_OK) tail->fail = s;     /* half merged: the writer must not write it */
            tail->turns++;
            db->merged_turns++;
        }
        pthread_mutex_unlock(&db->wmu);
    }
    if (s != FD_OK) {
        /* the tail is half merged: the writer fails it (and the queue after it) */
        ld_answers_add(db, &x->h, s);
        ld_txn_end(x);
        ld_inline_update(db);
        return s;
    }
    if (!tail) {
        ld_batch *b = calloc(1, sizeof *b);
        kv_overlay *fresh = b ? kv_overlay_new() : NULL;
        if (!fresh) {
            free(b);
            ld_answers_add(db, &x->h, FD_E_NOMEM);
            ld_txn_end(x);
            ld_inline_update(db);
            return FD_E_NOMEM;
        }
        b->ov = x->ov;
        x->ov = fresh;
        b->turns = 1;
        b->h = x->h;
        memset(&x->h, 0, sizeof x->h);
        db->held_bytes += kv_overlay_bytes(b->ov);
        db->held_replies += b->h.nheld;
        while (db->nb == LD_MAX_BATCHES) {
            ld_txn_end(x);                      /* (retire needs no open transaction) */
            ld_retire_done(db);
            if (db->nb == LD_MAX_BATCHES) wait_progress(db);
        }
        pthread_mutex_lock(&db->wmu);
        b->seq = ++db->seq;
        b->state = LB_QUEUED;
        db->bq[db->nb++] = b;
        if (db->widle) pthread_cond_signal(&db->wcv);
        pthread_mutex_unlock(&db->wmu);
    }
    ld_txn_end(x);
    /* the bound: wait for the writer rather than hold more */
    int waited = 0;
    int64_t tw = 0;
    while (db->nb && (db->held_bytes > LD_HOLD_BYTES || db->held_replies > LD_HOLD_REPLIES)) {
        if (!waited) { waited = 1; tw = fd_mono_us(); db->bp_waits++; }
        ld_retire_done(db);
        if (db->nb && (db->held_bytes > LD_HOLD_BYTES || db->held_replies > LD_HOLD_REPLIES))
            wait_progress(db);
    }
    if (waited) db->bp_us += (uint64_t)(fd_mono_us() - tw);
    ld_retire_done(db);
    loop_commit_time(db, t0);
    ld_inline_update(db);
    return s;
}
