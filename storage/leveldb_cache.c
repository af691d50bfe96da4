/* leveldb_cache.c — the LevelDB backend's caches on the loop thread: the
 * row cache (recently read and written rows, kept true by each retired
 * batch: rc_commit), the base-lookup memo of a transaction (what its
 * last LevelDB lookups found, and list read-behind), and the seek hints
 * (ranges LevelDB holds no live record in). Private: leveldb_int.h. */
#include "leveldb_int.h"

uint64_t ld_row_hash(const char *k, size_t kl)
{
    uint64_t h = 0xcbf29ce484222325ULL;          /* FNV-1a */
    for (size_t i = 0; i < kl; i++) h = (h ^ (uint8_t)k[i]) * 0x100000001b3ULL;
    return h ^ (h >> 29);
}

static size_t row_cost(const ld_row *r) { return sizeof *r + r->kl + r->vl + 16; }
static int row_is_sub(ld_row *r) { return r->kl && row_key(r)[0] == KV_PFX_SUB; }

/* Account for r entering (+1) or leaving (-1) the cache. */
static void row_count(ld_db *db, ld_row *r, int d)
{
    size_t c = row_cost(r);
    db->rc_bytes = d > 0 ? db->rc_bytes + c : db->rc_bytes - c;
    db->rc_entries += (size_t)(ssize_t)d;
    if (row_is_sub(r)) db->rc_sub += (size_t)(ssize_t)d;
}

/* The address of the link to k's entry in its chain (*link NULL: none). */
ld_row **ld_row_link(ld_db *db, const char *k, size_t kl, uint64_t h)
{
    ld_row **l = &db->rc[h & (LD_RC_BUCKETS - 1)];
    for (; *l; l = &(*l)->next) {
        ld_row *r = *l;
        if (r->hash == h && r->kl == kl && memcmp(row_key(r), k, kl) == 0) break;
    }
    return l;
}

void ld_rc_clear(ld_db *db)
{
    if (!db->rc) return;
    for (size_t i = 0; i < LD_RC_BUCKETS; i++) {
        for (ld_row *r = db->rc[i], *nx; r; r = nx) { nx = r->next; free(r); }
        db->rc[i] = NULL;
    }
    db->rc_bytes = db->rc_entries = db->rc_sub = 0;
}


/* Remember LevelDB's answer for k (v NULL: no such key), read in
 * transaction x. Entries evicted to make room may have been handed out by
 * ld_get in this turn: they are freed with the turn's reads. Best effort:
 * out of memory leaves the cache as it was. */
void ld_rc_fill(ld_txn *x, const char *k, size_t kl, uint64_t h, const char *v, size_t vl)
{
    ld_db *db = x->db;
    if (kl > UINT32_MAX || vl > UINT32_MAX) return;
    if (!db->rc && !(db->rc = calloc(LD_RC_BUCKETS, sizeof *db->rc))) return;
    size_t cost = sizeof(ld_row) + kl + vl + 16;
    if (cost > db->rc_budget / 64) return;             /* big values: not worth the room */
    while (db->rc_bytes + cost > db->rc_budget) {
        ld_row **b = &db->rc[db->rc_hand++ & (LD_RC_BUCKETS - 1)];
        while (*b) {
            ld_row *r = *b;
            if (ld_defer_free(x, r) != FD_OK) return;
            *b = r->next;
            row_count(db, r, -1);
            db->rc_evicted++;
        }
    }
    ld_row *r = malloc(cost - 16);
    if (!r) return;
    r->hash = h;
    r->kl = (uint32_t)kl;
    r->vl = (uint32_t)vl;
    r->held = v != NULL;
    memcpy(row_key(r), k, kl);
    if (vl) memcpy(row_val(r), v, vl);
    ld_row **b = &db->rc[h & (LD_RC_BUCKETS - 1)];
    r->next = *b;
    *b = r;
    row_count(db, r, 1);
}

/* Ask the CPU for the buckets of the hashes h[0..n) at once, then for
 * each bucket's first entry (its load waits for the bucket, already on its
 * way): a lookup is two cache misses on a big cache, and n lookups one
 * after the other paid them 2n times in a row. A hint: changes nothing. */
void ld_rc_prefetch(const ld_db *db, int n, const uint64_t *h)
{
    if (!db->rc) return;
    for (int i = 0; i < n; i++) __builtin_prefetch(&db->rc[h[i] & (LD_RC_BUCKETS - 1)]);
    for (int i = 0; i < n; i++) {
        const ld_row *r = db->rc[h[i] & (LD_RC_BUCKETS - 1)];
        if (r) __builtin_prefetch(r);
    }
}

/* One written key's entry: replaced by the new value, or dropped. */
static void rc_commit_one(ld_db *db, const kv_ov_node *n, uint64_t h)
{
    const char *k = kv_ov_key(n);
    ld_row **l = ld_row_link(db, k, n->klen, h);
    ld_row *r = *l;
    if (!r) return;
    if (!n->dead && r->vl == n->vlen) {          /* same size: in place */
        r->held = 1;
        if (n->vlen) memcpy(row_val(r), n->val, n->vlen);
        return;
    }
    *l = r->next;
    row_count(db, r, -1);
    if (!n->dead && sizeof *r + n->klen + n->vlen + 16 <= db->rc_budget / 64) {
        ld_row *nr = malloc(sizeof *nr + n->klen + n->vlen);
        if (nr) {
            *nr = *r;
            nr->vl = (uint32_t)n->vlen;
            nr->held = 1;
            memcpy(row_key(nr), k, n->klen);
            if (n->vlen) memcpy(row_val(nr), n->val, n->vlen);
            nr->next = *l;
            *l = nr;
            row_count(db, nr, 1);
        }
    }
    free(r);
}

/* After a successful commit of x: every written key's entry is replaced by
 * the new value or dropped (a delete). Runs between turns: nothing handed
 * out is live. Keys are taken LD_RC_AHEAD at a time, their lookups
 * prefetched together (ld_rc_prefetch): one after the other they were 9 %
 * of the loop's time under MSET (perf). */
#define LD_RC_AHEAD 16
void ld_rc_commit(ld_db *db, const kv_overlay *ov)
{
    if (!db->rc || !db->rc_entries) return;
    const kv_ov_node *nd[LD_RC_AHEAD];
    uint64_t hs[LD_RC_AHEAD];
    for (kv_ov_node *n = kv_overlay_first(ov); n;) {
        int c = 0;
        for (; n && c < LD_RC_AHEAD; n = kv_ov_next(n)) {
            const char *k = kv_ov_key(n);
            /* element writes (LPUSH, HSET...) skip the lookup while no
             * element record is cached */
            if (!db->rc_sub && n->klen && k[0] == KV_PFX_SUB) continue;
            nd[c] = n;
            hs[c++] = ld_row_hash(k, n->klen);
        }
        ld_rc_prefetch(db, c, hs);
        for (int i = 0; i < c; i++) rc_commit_one(db, nd[i], hs[i]);
    }
}

void ld_memo_note(ld_txn *x, const void *k, size_t kl, int held)
{
    x->sit_at = 0;
    if (kl > LD_MEMO_MAX) { x->memo = 0; return; }
    memcpy(x->memo_key, k, kl);
    x->memo_kl = kl;
    x->memo = held ? 1 : 2;
}

/* 1 LevelDB holds k, 0 it does not, -1 unknown (ask LevelDB). */
int ld_memo_find(const ld_txn *x, const void *k, size_t kl)
{
    if (!x->memo || x->memo_kl != kl || memcmp(x->memo_key, k, kl) != 0) return -1;
    return x->memo == 1;
}

/* 1 when k is the list element after the memo key (same list, sequence
 * number one higher), -1 when it is the one before, else 0. Only a hint
 * for the read path: any answer is correct, a wrong one costs a step.
 * Going down (RPOP) does not step the iterator backwards: LevelDB's Prev
 * searches the memtable again (its skiplist has no back links; measured
 * 14.5k against 11.6k instructions per RPOP); ld_get reads the
 * LD_READ_BEHIND elements below k forwards into the row cache instead. */
int ld_memo_step(const ld_txn *x, const char *k, size_t kl)
{
    const char *m = x->memo_key;
    if (x->memo != 1 || x->memo_kl != kl || kl < 11 || k[0] != KV_PFX_SUB ||
        k[kl - 9] != KV_TAG_LIST || memcmp(m, k, kl - 8) != 0) return 0;
    uint64_t a = kv_get_u64((const uint8_t *)m + kl - 8), b = kv_get_u64((const uint8_t *)k + kl - 8);
    return b == a + 1 ? 1 : a == b + 1 ? -1 : 0;
}


static void hint_free(ld_hint *h)
{
    free(h->a);
    free(h->b);
    memset(h, 0, sizeof *h);
}

void ld_hints_clear(ld_db *db)
{
    for (int i = 0; i < LD_HINTS; i++) hint_free(&db->hints[i]);
}

/* After a commit: a hint whose range received a live record is wrong now. */
void ld_hints_drop_written(ld_db *db, const kv_overlay *ov)
{
    for (int i = 0; i < LD_HINTS; i++) {
        ld_hint *h = &db->hints[i];
        if (!h->used) continue;
        for (kv_ov_node *n = kv_overlay_seek(ov, h->a, h->al, 0); n && ov_cmp(n, h->b, h->bl) < 0; n = kv_ov_next(n))
            if (!n->dead) { hint_free(h); break; }
    }
}

/* The hint containing k, or NULL. */
ld_hint *ld_hint_find(ld_db *db, const char *k, size_t kl)
{
    for (int i = 0; i < LD_HINTS; i++) {
        ld_hint *h = &db->hints[i];
        if (h->used && kv_overlay_keycmp(h->a, h->al, k, kl) <= 0 && kv_overlay_keycmp(k, kl, h->b, h->bl) < 0) return h;
    }
    return NULL;
}

/* A seek to a landed on b: [a, b) holds no live record. h: the hint that
 * was used (extended), else a new one replaces the least recently used. */
void ld_hint_note(ld_db *db, ld_hint *h, const char *a, size_t al, const char *b, size_t bl)
{
    if (kv_overlay_keycmp(a, al, b, bl) >= 0) return;
    if (!h) {
        h = &db->hints[0];
        for (int i = 1; i < LD_HINTS && h->used; i++)
            if (db->hints[i].used < h->used) h = &db->hints[i];
        hint_free(h);
        h->a = malloc(al ? al : 1);
        if (!h->a) return;
        if (al) memcpy(h->a, a, al);
        h->al = al;
    }
    char *nb = malloc(bl ? bl : 1);
    if (!nb) { hint_free(h); return; }
    if (bl) memcpy(nb, b, bl);
    free(h->b);
    h->b = nb;
    h->bl = bl;
    h->used = ++db->hint_clock;
}
