/* kv_list.c — the lists over the ordered-KV layer: the store of
 * storage/value/list.c's commands (fd_list_io).
 *
 * A list is its metadata (version, size, head, tail) plus one record per
 * element keyed by a sequence number (SSDB's queue):
 *   'S' len enc version 'l' seq(8 BE) -> element
 * The elements are exactly the sequence numbers head..tail (no holes); the
 * first pushed element gets 2^63. Costs, in stored records:
 *   LPUSH/RPUSH/LPOP/RPOP: O(1) each (one element write/delete + metadata);
 *   LLEN O(1); LINDEX/LSET O(1) point operations (head + index);
 *   LRANGE a range scan from head+start: O(returned);
 *   LTRIM O(removed) deletes (the whole list: O(1), to the garbage queue);
 *   LINSERT: finds the pivot by a scan (O(position)), then renumbers the
 *     shorter side by one: O(min(position, size - position)) rewrites;
 *   LREM: reads the list from the end it starts at and compacts the
 *     survivors over the holes: O(size) reads, O(moved) rewrites;
 *   LPOS: a scan from either end, bounded by MAXLEN.
 */
#include <string.h>
#include <stdlib.h>
#include <limits.h>
#include "kv.h"
#include "../value/list.h"


typedef struct lref {
    kv_key  k;
    kv_meta m;
    uint8_t pfx[KV_ELEM_MAX];
    size_t  pl;
    int     dropped;              /* the whole list went (kv_delete): nothing to save */
} lref;
_Static_assert(sizeof(lref) <= sizeof(fd_list_lk), "lref fits fd_list_lk");

static int lref_load(kv_ctx *c, lref *r, const resp_arg *key)
{
    FD_TRY(kv_coll_lookup(c, &r->k, &r->m, key, KV_T_LIST));
    if (r->m.live) r->pl = kv_elem_prefix(r->pfx, &r->k, &r->m, KV_TAG_LIST);
    return FD_OK;
}

static int lref_create(kv_ctx *c, lref *r)
{
    if (r->m.live) return FD_OK;
    FD_TRY(kv_coll_new(c, &r->k, &r->m, KV_T_LIST));
    r->pl = kv_elem_prefix(r->pfx, &r->k, &r->m, KV_TAG_LIST);
    return FD_OK;
}

static size_t seq_key(uint8_t *out, const lref *r, uint64_t seq)
{
    memcpy(out, r->pfx, r->pl);
    kv_put_u64(out + r->pl, seq);
    return r->pl + 8;
}

static int get_at(kv_ctx *c, const lref *r, uint64_t seq, const void **v, size_t *vl)
{
    uint8_t ek[KV_ELEM_MAX];
    size_t el = seq_key(ek, r, seq);
    int s = c->drv->get(c->txn, ek, el, v, vl);
    return s == FD_NOTFOUND ? FD_E_CORRUPT : s;   /* head..tail has no holes */
}

static int put_at(kv_ctx *c, const lref *r, uint64_t seq, const void *v, size_t vl)
{
    uint8_t ek[KV_ELEM_MAX];
    size_t el = seq_key(ek, r, seq);
    return c->drv->put(c->txn, ek, el, vl ? v : "", vl);
}

static int del_at(kv_ctx *c, const lref *r, uint64_t seq)
{
    uint8_t ek[KV_ELEM_MAX];
    size_t el = seq_key(ek, r, seq);
    int s = c->drv->del(c->txn, ek, el);
    return s == FD_NOTFOUND ? FD_OK : s;
}

/* Copy the element at seq to seq2 (driver memory is invalid after a write). */
static int move_at(kv_ctx *c, const lref *r, uint64_t seq, uint64_t seq2)
{
    const void *v; size_t vl;
    FD_TRY(get_at(c, r, seq, &v, &vl));
    char *b = kv_scratch(c->st, vl ? vl : 1);
    if (!b) return FD_E_NOMEM;
    memcpy(b, v, vl);
    return put_at(c, r, seq2, b, vl);
}

static int push_one(kv_ctx *c, lref *r, int left, const void *v, size_t vl)
{
    uint64_t seq;
    if (r->m.size == 0) seq = r->m.head = r->m.tail = KV_LIST_SEQ_START;
    else if (left) seq = --r->m.head;
    else seq = ++r->m.tail;
    r->m.size++;
    return put_at(c, r, seq, v, vl);
}

/* ---------------------------------------------------------------- fd_list_io */

static int lk_open(void *h, const resp_arg *key, long long from, long long count, fd_list_lk *b, long long *len)
{
    (void)from; (void)count;      /* point reads and range scans: nothing to load ahead */
    lref *r = (lref *)b->b;
    r->dropped = 0;
    int s = lref_load(h, r, key);
    *len = s == FD_OK && r->m.live ? (long long)r->m.size : 0;
    return s;
}

static int lk_get(void *h, fd_list_lk *b, long long idx, const void **v, size_t *vl)
{
    lref *r = (lref *)b->b;
    return get_at(h, r, r->m.head + (uint64_t)idx, v, vl);
}

/* A range scan from element idx (rev: from the tail's idx-th): *it open
 * (the caller closes it) and the first element, or the status. */
static int seek_at(kv_ctx *c, const lref *r, long long idx, int rev, kv_iter **it,
                   const void **kp, size_t *kl, const void **vp, size_t *vl)
{
    uint8_t from[KV_ELEM_MAX];
    size_t fl = seq_key(from, r, rev ? r->m.tail - (uint64_t)idx : r->m.head + (uint64_t)idx);
    FD_TRY(c->drv->iter_open(c->txn, it));
    return kv_range_seek(c, *it, r->pfx, r->pl, from, fl, rev, kp, kl, vp, vl);
}

static int lk_walk(void *h, fd_list_lk *b, long long idx, int rev, fd_list_walk_fn fn, void *arg)
{
    kv_ctx *c = h;
    lref *r = (lref *)b->b;
    kv_iter *it = NULL;
    const void *kp, *vp; size_t kl, vl;
    int s = seek_at(c, r, idx, rev, &it, &kp, &kl, &vp, &vl);
    while (s == FD_OK) {
        if ((s = fn(arg, vp, vl)) != 0) break;
        s = kv_range_step(c, it, r->pfx, r->pl, rev, &kp, &kl, &vp, &vl);
    }
    if (it) c->drv->iter_close(it);
    return s == FD_NOTFOUND ? FD_OK : s;
}

/* The same scan, replying as it goes. A short range read by a read-only
 * command (LRANGE; not LPOP's count, whose elements go) from a store whose
 * recent reads are cached (kv_driver.get_cached) is read element by
 * element: the list has no holes, so the n elements are seq, seq +- 1... */
static int lk_reply(void *h, fd_list_lk *b, long long idx, int rev, long long n, resp_out *out)
{
    kv_ctx *c = h;
    lref *r = (lref *)b->b;
    if (c->read && c->drv->get_cached && n <= KV_CACHED_RUN) {
        uint64_t seq = rev ? r->m.tail - (uint64_t)idx : r->m.head + (uint64_t)idx;
        for (long long i = 0; i < n; i++, seq = rev ? seq - 1 : seq + 1) {
            uint8_t ek[KV_ELEM_MAX];
            size_t el = seq_key(ek, r, seq);
            const void *v; size_t vl;
            int s = c->drv->get_cached(c->txn, ek, el, &v, &vl);
            if (s != FD_OK) return s == FD_NOTFOUND ? FD_E_CORRUPT : s;   /* head..tail has no holes */
            if (resp_add_bulk(out, v, vl)) return FD_E_NOMEM;
        }
        return FD_OK;
    }
    kv_iter *it = NULL;
    const void *kp, *vp; size_t kl, vl;
    long long got = 0;
    int s = seek_at(c, r, idx, rev, &it, &kp, &kl, &vp, &vl);
    while (s == FD_OK) {
        if (resp_add_bulk(out, vp, vl)) { s = FD_E_NOMEM; break; }
        if (++got == n) break;
        s = kv_range_step(c, it, r->pfx, r->pl, rev, &kp, &kl, &vp, &vl);
    }
    if (it) c->drv->iter_close(it);
    return s == FD_NOTFOUND ? FD_E_CORRUPT : s;
}

static int lk_push(void *h, fd_list_lk *b, int left, const void *v, size_t vl)
{
    lref *r = (lref *)b->b;
    if (r->dropped) return FD_E_INTERNAL;   /* (list.c never pushes onto a list it emptied) */
    FD_TRY(lref_create(h, r));
    return push_one(h, r, left, v, vl);
}

/* n from one end; the whole list of more than one: O(1), its records to
 * the garbage queue. */
static int lk_trim(void *h, fd_list_lk *b, int left, long long n)
{
    kv_ctx *c = h;
    lref *r = (lref *)b->b;
    if ((uint64_t)n >= r->m.size && n > 1) {
        FD_TRY(kv_delete(c, &r->k, &r->m));
        r->m.size = 0;
        r->dropped = 1;
        return FD_OK;
    }
    for (long long i = 0; i < n; i++) FD_TRY(del_at(c, r, left ? r->m.head++ : r->m.tail--));
    r->m.size -= (uint64_t)n;
    return FD_OK;
}

static int lk_set(void *h, fd_list_lk *b, long long idx, const void *v, size_t vl)
{
    lref *r = (lref *)b->b;
    return put_at(h, r, r->m.head + (uint64_t)idx, v, vl);
}

/* The new element at index i: the shorter side moves by one. */
static int lk_insert(void *h, fd_list_lk *b, long long idx, const void *v, size_t vl)
{
    kv_ctx *c = h;
    lref *r = (lref *)b->b;
    uint64_t n = r->m.size, i = (uint64_t)idx;
    if (i <= n - i) {
        /* shift elements [0, i) one to the left */
        for (uint64_t j = 0; j < i; j++) FD_TRY(move_at(c, r, r->m.head + j, r->m.head + j - 1));
        FD_TRY(put_at(c, r, r->m.head + i - 1, v, vl));
        r->m.head--;
    } else {
        /* shift elements [i, n) one to the right */
        for (uint64_t j = n; j > i; j--) FD_TRY(move_at(c, r, r->m.head + j - 1, r->m.head + j));
        FD_TRY(put_at(c, r, r->m.head + i, v, vl));
        r->m.tail++;
    }
    r->m.size++;
    return FD_OK;
}

/* LREM: the list read from the end it starts at; survivors are moved over
 * the holes left by removed elements (wr trails rd), then the freed end is
 * deleted. */
static int lk_remove(void *h, fd_list_lk *b, const char *el, size_t ell, uint64_t limit, int rev, uint64_t *removed)
{
    kv_ctx *c = h;
    lref *r = (lref *)b->b;
    uint64_t n = r->m.size;
    uint64_t rd = rev ? r->m.tail : r->m.head, wr = rd;
    for (uint64_t i = 0; i < n; i++) {
        const void *v; size_t vl;
        FD_TRY(get_at(c, r, rd, &v, &vl));
        if (*removed < limit && vl == ell && memcmp(v, el, vl) == 0) {
            (*removed)++;
        } else {
            if (wr != rd) FD_TRY(move_at(c, r, rd, wr));
            wr = rev ? wr - 1 : wr + 1;
        }
        rd = rev ? rd - 1 : rd + 1;
    }
    if (!*removed) return FD_OK;
    if (*removed == n) return lk_trim(h, b, 0, (long long)n);
    for (uint64_t i = 0; i < *removed; i++) FD_TRY(del_at(c, r, rev ? r->m.head++ : r->m.tail--));
    r->m.size -= *removed;
    return FD_OK;
}

static int lk_save(void *h, fd_list_lk *b)
{
    lref *r = (lref *)b->b;
    return r->dropped ? FD_OK : kv_coll_save(h, &r->k, &r->m);
}

static const fd_list_io list_io = { lk_open, NULL, lk_get, lk_walk, lk_reply, lk_push, lk_trim, lk_set, lk_insert,
                                    lk_remove, lk_save, NULL, kv_io_event, NULL, NULL, NULL, NULL };

FD_LIST_HANDLERS(kv, kv_ctx, list_io)
