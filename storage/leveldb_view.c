/* leveldb_view.c — the LevelDB backend's reads and writes inside a
 * transaction: the layered read view (the turn's overlay, the uncommitted
 * batches newest first, the row cache, LevelDB), get/put/del/clear, and
 * cursors merging a LevelDB iterator with the overlay. Private:
 * leveldb_int.h. */
#include "leveldb_int.h"

static const char empty_val[1];

/* The newest uncommitted batch's entry of k, or NULL. */
static kv_ov_node *layer_get(ld_db *db, const void *k, size_t kl)
{
    for (int i = db->nb - 1; i >= 0; i--) {
        kv_ov_node *n = kv_overlay_get(db->bq[i]->ov, k, kl);
        if (n) return n;
    }
    return NULL;
}

/* The overlay side of a cursor: the turn's overlay over the uncommitted
 * batches (newest first; none after a clear in this turn). For each key the
 * newest layer's entry stands for it. Layers do not change while a
 * transaction is open (retirement waits for its end), so an entry pointer
 * stays valid while the turn overlay's generation does. */
static kv_ov_node *vw_seek(const ld_txn *x, const void *k, size_t kl, int strict)
{
    kv_ov_node *best = kv_overlay_seek(x->ov, k, kl, strict);
    if (x->cleared) return best;
    for (int i = x->db->nb - 1; i >= 0; i--) {
        kv_ov_node *n = kv_overlay_seek(x->db->bq[i]->ov, k, kl, strict);
        if (n && (!best || ov_cmp(n, kv_ov_key(best), best->klen) < 0)) best = n;
    }
    return best;
}

static kv_ov_node *vw_seek_le(const ld_txn *x, const void *k, size_t kl, int strict)
{
    kv_ov_node *best = kv_overlay_seek_le(x->ov, k, kl, strict);
    if (x->cleared) return best;
    for (int i = x->db->nb - 1; i >= 0; i--) {
        kv_ov_node *n = kv_overlay_seek_le(x->db->bq[i]->ov, k, kl, strict);
        if (n && (!best || ov_cmp(n, kv_ov_key(best), best->klen) > 0)) best = n;
    }
    return best;
}

static kv_ov_node *vw_next(const ld_txn *x, const kv_ov_node *n)
{
    if (!x->db->nb || x->cleared) return kv_ov_next(n);
    return vw_seek(x, kv_ov_key(n), n->klen, 1);
}

static kv_ov_node *vw_prev(const ld_txn *x, const kv_ov_node *n)
{
    return vw_seek_le(x, kv_ov_key(n), n->klen, 1);
}

static kv_ov_node *vw_get(ld_txn *x, const void *k, size_t kl)
{
    kv_ov_node *n = kv_overlay_get(x->ov, k, kl);
    if (n || x->cleared || !x->db->nb) return n;
    return layer_get(x->db, k, kl);
}

static ld_row *const no_row = NULL;

/* row_link that also works before the cache exists. */
static ld_row *const *row_link_or_null(ld_db *db, const char *k, size_t kl, uint64_t h)
{
    return db->rc ? ld_row_link(db, k, kl, h) : &no_row;
}

/* RPOP in a pipeline reads tail, tail-1, ...: on a read of the element
 * below the memo key that the row cache lacks, put k and the
 * LD_READ_BEHIND - 1 elements below it (those LevelDB holds and the cache
 * lacks) into the row cache, read forwards with one seek of the
 * transaction's iterator. The following reads are cache hits. */
static int read_behind(ld_txn *x, const char *k, size_t kl)
{
    ld_db *db = x->db;
    char from[LD_MEMO_MAX];
    uint64_t seq = kv_get_u64((const uint8_t *)k + kl - 8);
    memcpy(from, k, kl - 8);
    kv_put_u64((uint8_t *)from + kl - 8, seq >= LD_READ_BEHIND - 1 ? seq - (LD_READ_BEHIND - 1) : 0);
    leveldb_iterator_t *it = x->sit;
    if (!it && !(it = x->sit = leveldb_create_iterator(db->ldb, db->ropts))) return FD_E_NOMEM;
    x->sit_at = 0;
    if (!db->rc && !(db->rc = calloc(LD_RC_BUCKETS, sizeof *db->rc))) return FD_OK;
    for (leveldb_iter_seek(it, from, kl); leveldb_iter_valid(it); leveldb_iter_next(it)) {
        size_t bl, vl;
        const char *bk = leveldb_iter_key(it, &bl);
        if (bl != kl || memcmp(bk, k, kl - 8) != 0 || kv_overlay_keycmp(bk, bl, k, kl) > 0) break;
        uint64_t h = ld_row_hash(bk, bl);
        if (*ld_row_link(db, bk, bl, h)) continue;
        const char *v = leveldb_iter_value(it, &vl);
        ld_rc_fill(x, bk, bl, h, v, vl);
    }
    char *err = NULL;
    leveldb_iter_get_error(it, &err);
    if (err) { ld_sit_drop(x); return ld_status(db, err); }
    return FD_OK;
}

/* ld_get's LevelDB read of k, the element after the memo key, through the
 * transaction's iterator: one step when it stands on the memo key, else a
 * seek that leaves it on k. The value is copied (the iterator moves on)
 * and freed with the turn's reads. */
static int sit_get(ld_txn *x, const char *k, size_t kl, const void **v, size_t *vl)
{
    leveldb_iterator_t *it = x->sit;
    if (it && x->sit_at) {
        leveldb_iter_next(it);
    } else {
        if (!it && !(it = x->sit = leveldb_create_iterator(x->db->ldb, x->db->ropts))) return FD_E_NOMEM;
        leveldb_iter_seek(it, k, kl);
    }
    int c = 1;
    size_t bl = 0, len = 0;
    if (leveldb_iter_valid(it)) {
        const char *bk = leveldb_iter_key(it, &bl);
        c = kv_overlay_keycmp(bk, bl, k, kl);
    } else {
        char *err = NULL;
        leveldb_iter_get_error(it, &err);
        if (err) { ld_sit_drop(x); return ld_status(x->db, err); }
    }
    ld_memo_note(x, k, kl, c == 0);             /* clears sit_at */
    if (c != 0) return FD_NOTFOUND;          /* LevelDB has nothing between */
    const char *val = leveldb_iter_value(it, &len);
    char *copy = malloc(len ? len : 1);
    if (!copy) return FD_E_NOMEM;
    if (len) memcpy(copy, val, len);
    if (ld_defer_free(x, copy) != FD_OK) { free(copy); return FD_E_NOMEM; }   /* freed with the reads */
    x->sit_at = 1;
    *v = copy;
    *vl = len;
    return FD_OK;
}

/* ld_get, and with keep (kv_driver.get_cached) the row cache is asked
 * first also for the element after the memo key, and what the
 * transaction's iterator read for it is put there: LRANGE's elements are
 * read again by the next LRANGE. Without keep (LPOP in a pipeline reads
 * each element once, then deletes it) the iterator step comes first and
 * nothing is kept. */
static int get_impl(ld_txn *x, const void *k, size_t kl, const void **v, size_t *vl, int keep)
{
    kv_ov_node *n = kv_overlay_get(x->ov, k, kl);
    if (n) {
        if (n->dead) return FD_NOTFOUND;
        *v = n->val ? n->val : empty_val;
        *vl = n->vlen;
        return FD_OK;
    }
    if (x->cleared) return FD_NOTFOUND;
    if (x->db->nb && (n = layer_get(x->db, k, kl))) {
        if (n->dead) return FD_NOTFOUND;
        *v = n->val ? n->val : empty_val;
        *vl = n->vlen;
        return FD_OK;
    }
    if (ld_reads_room(x)) return FD_E_NOMEM;
    ld_db *db = x->db;
    int step = ld_memo_step(x, k, kl);
    uint64_t h = 0;
    ld_row *r = NULL;
    if (keep) {
        h = ld_row_hash(k, kl);
        if (db->rc_entries) r = *ld_row_link(db, k, kl, h);
    }
    if (!r) {
        if (step > 0) {
            int s = sit_get(x, k, kl, v, vl);
            if (s == FD_OK && keep) ld_rc_fill(x, k, kl, h, *v, *vl);
            return s;
        }
        if (!keep) h = ld_row_hash(k, kl);
        if (step < 0 && !*row_link_or_null(db, k, kl, h)) {
            int s = read_behind(x, k, kl);
            if (s != FD_OK) return s;
        }
        if (db->rc_entries) r = *ld_row_link(db, k, kl, h);
    }
    if (r) {
        db->rc_hits++;
        ld_memo_note(x, k, kl, r->held);
        if (!r->held) return FD_NOTFOUND;
        *v = row_val(r);
        *vl = r->vl;
        return FD_OK;
    }
    db->rc_misses++;
    char *err = NULL;
    size_t len = 0;
    char *val = leveldb_get(db->ldb, db->ropts, k, kl, &len, &err);
    if (err) { leveldb_free(val); return ld_status(db, err); }
    ld_memo_note(x, k, kl, val != NULL);
    /* kept with the turn's reads (read_behind/rc_fill may have used the
     * room made above: defer_free grows it) */
    if (val && ld_defer_free(x, val) != FD_OK) { leveldb_free(val); return FD_E_NOMEM; }
    ld_rc_fill(x, k, kl, h, val, len);
    if (!val) return FD_NOTFOUND;
    *v = val;
    *vl = len;
    return FD_OK;
}

int ld_get(void *txn, const void *k, size_t kl, const void **v, size_t *vl)
{
    return get_impl(txn, k, kl, v, vl, 0);
}

int ld_get_cached(void *txn, const void *k, size_t kl, const void **v, size_t *vl)
{
    return get_impl(txn, k, kl, v, vl, 1);
}

int ld_put(void *txn, const void *k, size_t kl, const void *v, size_t vl)
{
    ld_txn *x = txn;
    if (kl > UINT32_MAX) return FD_E_INTERNAL;
    /* v may be this node's own value or a get() result: copy, then release */
    int s = kv_overlay_put(x->ov, k, kl, v, vl, NULL);
    ld_release_reads(x);
    x->stamp++;
    return s;
}

int ld_reserve(void *txn, const void *k, size_t kl, size_t vl, void **dst)
{
    ld_txn *x = txn;
    kv_ov_node *n;
    if (kl > UINT32_MAX) return FD_E_INTERNAL;
    int s = kv_overlay_put(x->ov, k, kl, NULL, vl, &n);
    ld_release_reads(x);
    x->stamp++;
    if (s != FD_OK) return s;
    *dst = n->val;
    return FD_OK;
}

/* A tombstone for k in the turn's overlay (n: k's entry there, or NULL). */
static int tombstone(ld_txn *x, kv_ov_node *n, const void *k, size_t kl)
{
    if (n) kv_overlay_kill(x->ov, n);
    else {
        int s = kv_overlay_del(x->ov, k, kl);
        if (s != FD_OK) return s;
    }
    ld_release_reads(x);
    x->stamp++;
    return FD_OK;
}

int ld_del(void *txn, const void *k, size_t kl)
{
    ld_txn *x = txn;
    kv_ov_node *n = kv_overlay_get(x->ov, k, kl);
    if (n) {
        if (n->dead) return FD_NOTFOUND;
        return tombstone(x, n, k, kl);
    }
    if (x->cleared) return FD_NOTFOUND;
    /* only a record LevelDB (or an uncommitted batch) holds needs a tombstone */
    kv_ov_node *ln = layer_get(x->db, k, kl);
    int held = ln ? !ln->dead : ld_memo_find(x, k, kl);
    if (held < 0) {
        char *err = NULL;
        size_t len = 0;
        char *val = leveldb_get(x->db->ldb, x->db->ropts, k, kl, &len, &err);
        if (err) { leveldb_free(val); return ld_status(x->db, err); }
        held = val != NULL;
        leveldb_free(val);
        ld_memo_note(x, k, kl, held);
    }
    if (!held) return FD_NOTFOUND;
    return tombstone(x, NULL, k, kl);
}

/* kv_driver.drop: the caller knows k is held; no lookup. (Were it not, the
 * tombstone would hide nothing: a record more to write, no wrong answer.) */
int ld_drop(void *txn, const void *k, size_t kl)
{
    ld_txn *x = txn;
    kv_ov_node *n = kv_overlay_get(x->ov, k, kl);
    if (n && n->dead) return FD_OK;
    if (!n && x->cleared) return FD_OK;
    return tombstone(x, n, k, kl);
}

int ld_clear(void *txn)
{
    ld_txn *x = txn;
    x->memo = 0;
    ld_sit_drop(x);
    kv_overlay_clear(x->ov);
    x->cleared = 1;
    ld_release_reads(x);
    x->stamp++;
    return FD_OK;
}

/* ---------------------------------------------------------------- cursors
 *
 * A cursor is the merge of `bi` (LevelDB) and the overlay. Its position is
 * the copy of the current key; the overlay side is re-found by key whenever
 * the overlay's structure changed since (kv_overlay_gen), so writes made while
 * a cursor is open are seen and freed nodes are never touched.
 * Invariants between moves, where cur is the current key:
 *   forwards:  bi is at the first LevelDB key >= cur (or invalid);
 *              on is the first overlay node >= cur (or NULL);
 *   backwards: bi is at the last LevelDB key <= cur (or invalid);
 *              on is the last overlay node <= cur (or NULL).
 * On equal keys the overlay wins; a tombstone hides the key. */

int ld_iter_open(void *txn, kv_iter **itp)
{
    ld_txn *x = txn;
    kv_iter *it = calloc(1, sizeof *it);
    if (!it) return FD_E_NOMEM;
    it->tx = x;
    it->bi = leveldb_create_iterator(x->db->ldb, x->db->ropts);
    if (!it->bi) { free(it); return FD_E_NOMEM; }
    *itp = it;
    return FD_OK;
}

void ld_iter_close(kv_iter *it)
{
    leveldb_iter_destroy(it->bi);
    free(it->key);
    free(it);
}

static int base_valid(const kv_iter *it)
{
    return !it->tx->cleared && leveldb_iter_valid(it->bi);
}

static int base_at(const kv_iter *it, const char *k, size_t kl)
{
    if (!base_valid(it)) return 0;
    size_t bl;
    const char *bk = leveldb_iter_key(it->bi, &bl);
    return kv_overlay_keycmp(bk, bl, k, kl) == 0;
}

static int set_cur(kv_iter *it, const char *k, size_t kl, int from_ov)
{
    if (kl > it->kcap) {
        size_t cap = kl < 64 ? 64 : kl * 2;
        char *nk = realloc(it->key, cap);
        if (!nk) { it->valid = 0; return FD_E_NOMEM; }
        it->key = nk;
        it->kcap = cap;
    }
    if (kl) memcpy(it->key, k, kl);
    it->klen = kl;
    it->from_ov = from_ov;
    it->valid = 1;
    return FD_OK;
}

/* Nothing more on the LevelDB side: an error, or simply the end. */
static int base_end_status(kv_iter *it)
{
    char *err = NULL;
    leveldb_iter_get_error(it->bi, &err);
    return ld_status(it->tx->db, err);
}

static int resolve_fwd(kv_iter *it)
{
    it->dir = 1;
    it->gen = kv_overlay_gen(it->tx->ov);
    for (;;) {
        int bv = base_valid(it);
        kv_ov_node *o = it->on;
        if (!bv && !it->tx->cleared) {
            int s = base_end_status(it);
            if (s != FD_OK) { it->valid = 0; return s; }
        }
        if (!bv && !o) { it->valid = 0; return FD_NOTFOUND; }
        size_t bl = 0;
        const char *bk = bv ? leveldb_iter_key(it->bi, &bl) : NULL;
        int c = !bv ? 1 : !o ? -1 : kv_overlay_keycmp(bk, bl, kv_ov_key(o), o->klen);
        if (c < 0) return set_cur(it, bk, bl, 0);
        if (o->dead) {
            if (c == 0) leveldb_iter_next(it->bi);
            it->on = vw_next(it->tx, o);
            continue;
        }
        return set_cur(it, kv_ov_key(o), o->klen, 1);
    }
}

static int resolve_bwd(kv_iter *it)
{
    it->dir = -1;
    it->gen = kv_overlay_gen(it->tx->ov);
    for (;;) {
        int bv = base_valid(it);
        kv_ov_node *o = it->on;
        if (!bv && !it->tx->cleared) {
            int s = base_end_status(it);
            if (s != FD_OK) { it->valid = 0; return s; }
        }
        if (!bv && !o) { it->valid = 0; return FD_NOTFOUND; }
        size_t bl = 0;
        const char *bk = bv ? leveldb_iter_key(it->bi, &bl) : NULL;
        int c = !bv ? -1 : !o ? 1 : kv_overlay_keycmp(bk, bl, kv_ov_key(o), o->klen);
        if (c > 0) return set_cur(it, bk, bl, 0);
        if (o->dead) {
            if (c == 0) leveldb_iter_prev(it->bi);
            it->on = vw_prev(it->tx, o);
            continue;
        }
        return set_cur(it, kv_ov_key(o), o->klen, 1);
    }
}

int ld_seek(kv_iter *it, const void *k, size_t kl)
{
    ld_db *db = it->tx->db;
    ld_hint *h = it->tx->cleared ? NULL : ld_hint_find(db, k, kl);
    if (h) {
        db->hint_hits++;
        leveldb_iter_seek(it->bi, h->b, h->bl);
    } else {
        leveldb_iter_seek(it->bi, k, kl);
    }
    if (!it->tx->cleared && leveldb_iter_valid(it->bi)) {
        size_t bl;
        const char *bk = leveldb_iter_key(it->bi, &bl);
        if (h) ld_hint_note(db, h, h->a, h->al, bk, bl);
        else ld_hint_note(db, NULL, k, kl, bk, bl);
    }
    it->on = vw_seek(it->tx, k, kl, 0);
    return resolve_fwd(it);
}

int ld_seek_le(kv_iter *it, const void *k, size_t kl)
{
    leveldb_iter_seek(it->bi, k, kl);
    if (leveldb_iter_valid(it->bi)) {
        if (!base_at(it, k, kl)) leveldb_iter_prev(it->bi);
    } else {
        leveldb_iter_seek_to_last(it->bi);
    }
    it->on = vw_seek_le(it->tx, k, kl, 0);
    return resolve_bwd(it);
}

int ld_next(kv_iter *it)
{
    if (!it->valid) return FD_NOTFOUND;
    const char *k = it->key;
    size_t kl = it->klen;
    kv_overlay *ov = it->tx->ov;
    if (it->dir == 1) {
        /* a record of LevelDB's own is where bi stands: no need to compare */
        if (!it->from_ov ? base_valid(it) : base_at(it, k, kl)) leveldb_iter_next(it->bi);
        if (it->gen != kv_overlay_gen(ov)) it->on = vw_seek(it->tx, k, kl, 1);
        else if (it->on && ov_cmp(it->on, k, kl) == 0) it->on = vw_next(it->tx, it->on);
    } else {
        leveldb_iter_seek(it->bi, k, kl);
        if (base_at(it, k, kl)) leveldb_iter_next(it->bi);
        it->on = vw_seek(it->tx, k, kl, 1);
    }
    return resolve_fwd(it);
}

int ld_prev(kv_iter *it)
{
    if (!it->valid) return FD_NOTFOUND;
    const char *k = it->key;
    size_t kl = it->klen;
    kv_overlay *ov = it->tx->ov;
    if (it->dir == -1) {
        if (!it->from_ov ? base_valid(it) : base_at(it, k, kl)) leveldb_iter_prev(it->bi);
        if (it->gen != kv_overlay_gen(ov) || (it->on && ov_cmp(it->on, k, kl) == 0))
            it->on = vw_seek_le(it->tx, k, kl, 1);
    } else {
        leveldb_iter_seek(it->bi, k, kl);
        if (leveldb_iter_valid(it->bi)) leveldb_iter_prev(it->bi);   /* last < k */
        else leveldb_iter_seek_to_last(it->bi);
        it->on = vw_seek_le(it->tx, k, kl, 1);
    }
    return resolve_bwd(it);
}

int ld_cur(kv_iter *it, const void **k, size_t *kl, const void **v, size_t *vl)
{
    if (!it->valid) return FD_NOTFOUND;
    if (it->gen != kv_overlay_gen(it->tx->ov)) {
        /* written since the cursor got here: the overlay may now hold (or,
         * after a clear, no longer hold) this key. `on` at the key itself
         * satisfies the invariants of both directions. */
        kv_ov_node *n = vw_get(it->tx, it->key, it->klen);
        if (n || it->from_ov) {
            it->on = n;
            it->gen = kv_overlay_gen(it->tx->ov);
            it->from_ov = 1;
        }
    }
    if (it->from_ov) {
        kv_ov_node *n = it->on;
        if (!n || n->dead) return FD_NOTFOUND;   /* deleted under the cursor */
        *v = n->val ? n->val : empty_val;
        *vl = n->vlen;
    } else {
        if (!base_valid(it)) return FD_NOTFOUND;  /* cleared under the cursor */
        *v = leveldb_iter_value(it->bi, vl);
    }
    *k = it->key;
    *kl = it->klen;
    return FD_OK;
}
