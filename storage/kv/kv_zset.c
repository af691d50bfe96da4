/* kv_zset.c — the sorted-set commands of KV_COMMANDS over the ordered-KV
 * layer, with Redis 7.0's semantics, reply shapes and error texts (t_zset.c).
 *
 * A sorted set is its metadata (version, size) plus two records per member:
 *   'S' len enc version 'z' member'           -> score(8)   member -> score
 *   'S' len enc version 's' score(8) member'  -> ""         the score index
 * (score = kv_enc_double: byte order is numeric order, -inf..+inf; ties
 * order by member bytes, as Redis). Costs, in stored records:
 *   ZADD/ZREM/ZINCRBY: O(1) point operations per member (one 'z' read,
 *     then 'z' + 's' writes, the old 's' deleted on a score change);
 *   ZSCORE/ZMSCORE O(1) per member; ZCARD O(1) (metadata);
 *   ZRANGEBYSCORE/ZRANGEBYLEX/ZCOUNT/ZLEXCOUNT: a seek, then O(offset +
 *     returned) (ZCOUNT/ZLEXCOUNT O(counted));
 *   ZRANGE/ZREMRANGEBYRANK by rank: O(min(start, size - end) + returned),
 *     walked from the nearer end;
 *   ZRANK/ZREVRANK: index walks from the member and from that end in step,
 *     O(min(rank, size - rank));
 *   ZPOPMIN/ZPOPMAX O(count); ZREMRANGEBY*: O(removed) (+ the skip).
 * -0 is stored as 0 (Redis replies "-0" for a score set to -0).
 *
 * Score bounds (issue 31): the metadata may carry a floor and a ceiling
 * (kv_meta head/tail: kv_enc_double's 8 bytes, 0 = none) such that every
 * member's score lies within them. A pop from an end (ZPOPMIN/ZPOPMAX,
 * ZMPOP, ZREMRANGEBYRANK 0.., ZREMRANGEBYSCORE -inf..) sets the bound to the
 * last score it removed, a write outside a bound moves it, and walks from
 * an end seek from the bound. On LevelDB this is what keeps a queue drained
 * from one end cheap: the deleted index records stay in the tree as
 * tombstones until compaction, and a seek from the start of the set would
 * step over every one of them (ZPOPMIN on a set fed by ZADD: 13 times
 * slower than on LMDB before, docs/benchmarks.md). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <ctype.h>
#include "kv.h"
#include "../value/zset.h"
#include "../value/geo.h"
#include "../cmdargs.h"
#include "../value/zsetops.h"


typedef kv_zref zref;   /* kv.h: 'z' and 's' prefixes of one key */

static void zref_prefixes(zref *r)
{
    r->pl = kv_elem_prefix(r->zp, &r->k, &r->m, KV_TAG_ZMEMBER);
    kv_elem_prefix(r->sp, &r->k, &r->m, KV_TAG_ZSCORE);
}

static int zref_load(kv_ctx *c, zref *r, const resp_arg *key)
{
    FD_TRY(kv_coll_lookup(c, &r->k, &r->m, key, KV_T_ZSET));
    if (r->m.live) zref_prefixes(r);
    return FD_OK;
}

static int zref_create(kv_ctx *c, zref *r)
{
    if (r->m.live) return FD_OK;
    FD_TRY(kv_coll_new(c, &r->k, &r->m, KV_T_ZSET));
    zref_prefixes(r);
    return FD_OK;
}

/* The score of member mb: FD_OK, FD_NOTFOUND or FD_E_*. */
static int score_get(kv_ctx *c, const zref *r, const char *mb, size_t ml, double *score)
{
    if (!r->m.live) return FD_NOTFOUND;
    uint8_t ek[KV_ELEM_MAX];
    size_t el = kv_elem_key(ek, r->zp, r->pl, mb, ml);
    const void *v; size_t vl;
    int s = kv_elem_get(c, ek, el, mb, ml, &v, &vl);
    if (s != FD_OK) return s;
    if (vl != 8) return FD_E_CORRUPT;
    *score = kv_dec_double(v);
    return FD_OK;
}

static size_t index_key(uint8_t *out, const zref *r, double score, const char *mb, size_t ml)
{
    memcpy(out, r->sp, r->pl);
    kv_enc_double(out + r->pl, score);
    return r->pl + 8 + kv_enc_key(out + r->pl + 8, mb, ml);
}

/* Set member mb to score (old: its current score when had_old). */
static int member_write(kv_ctx *c, zref *r, const char *mb, size_t ml, double score,
                        int had_old, double old)
{
    uint8_t ek[KV_ELEM_MAX], sc[8];
    size_t el;
    if (had_old) {                                /* a member's index record is there */
        el = index_key(ek, r, old, mb, ml);
        FD_TRY(kv_drop(c, ek, el));
    }
    el = index_key(ek, r, score, mb, ml);
    FD_TRY(kv_elem_put(c, ek, el, mb, ml, NULL, 0));
    kv_enc_double(sc, score);
    uint64_t e = kv_get_u64(sc);                  /* outside a bound: the bound moves (the caller saves r) */
    if (r->m.head && e < r->m.head) r->m.head = e;
    if (r->m.tail && e > r->m.tail) r->m.tail = e;
    el = kv_elem_key(ek, r->zp, r->pl, mb, ml);
    return kv_elem_put(c, ek, el, mb, ml, sc, 8);
}

static int member_del(kv_ctx *c, zref *r, const char *mb, size_t ml, double score)
{
    uint8_t ek[KV_ELEM_MAX];
    size_t el = index_key(ek, r, score, mb, ml);
    FD_TRY(kv_drop(c, ek, el));
    el = kv_elem_key(ek, r->zp, r->pl, mb, ml);
    return kv_drop(c, ek, el);
}

/* ---------------------------------------------------------------- parsing */

/* Scores and range bounds are parsed by storage/cmdargs.c (shared with the
 * MongoDB backend). */

/* ---------------------------------------------------------------- range walks */

/* A walk's sink: the caller's fn (NULL: only counted) and, when the walked
 * members leave the set (or are handed over later), their list of
 * score(8) + member. */
typedef struct zsink {
    fd_zset_fn fn;
    void *arg;
    int keep;
    long long n;
    kv_list l;
} zsink;

static int sink_emit(zsink *k, const uint8_t *sc8, double score, const char *mb, size_t ml)
{
    k->n++;
    int r = k->fn == fd_zset_emit ? fd_zset_emit_inline(k->arg, mb, ml, score) : k->fn ? k->fn(k->arg, mb, ml, score) : 0;
    if (r < 0) return FD_E_NOMEM;
    if (k->keep) FD_TRY(kv_list_add(&k->l, sc8, 8, mb, ml));
    return r > 0 ? FD_NOTFOUND : FD_OK;          /* FD_NOTFOUND: fn stops the walk (FD_OK) */
}

/* A walk of r's score index from `from` (fl bytes, the prefix first), in
 * direction rev: from the score bound instead when the walk would start
 * beyond it (every member lies inside the bounds). */
static size_t bound_from(const zref *r, uint8_t *from, size_t fl, int rev)
{
    uint64_t b = rev ? r->m.tail : r->m.head;
    if (!b) return fl;
    uint8_t be[8];
    kv_put_u64(be, b);
    int beyond = fl < r->pl + 8 ? 1 : (rev ? memcmp(from + r->pl, be, 8) > 0 : memcmp(from + r->pl, be, 8) < 0);
    if (!beyond) return fl;
    memcpy(from + r->pl, be, 8);
    return r->pl + 8;
}

/* Walk the score index of r as z says (checked by storage/value/zset.c:
 * fd_zset_io.range), sending each member to k. */
static int zwalk(kv_ctx *c, const zref *r, const fd_zrange *z, zsink *k)
{
    if (!r->m.live) return FD_OK;
    const size_t pl = r->pl;
    const int rev = z->rev;
    uint8_t from[KV_ELEM_MAX + 8];
    size_t fl = pl;
    memcpy(from, r->sp, pl);
    kv_iter *it;
    FD_TRY(c->drv->iter_open(c->txn, &it));
    const void *kp, *vp; size_t kl, vl;
    int s;
    if (z->type == FD_ZR_SCORE) {
        kv_enc_double(from + pl, rev ? z->max : z->min);
        fl = pl + 8;
        if (!rev && isinf(z->min) && z->min < 0) fl = pl;
        if (rev && isinf(z->max) && z->max > 0) fl = pl;
    } else if (z->type == FD_ZR_LEX && ((!rev && z->lmin_kind == 0) || (rev && z->lmax_kind == 0))) {
        /* members of equal scores: seek inside the first (last) score */
        s = kv_range_seek(c, it, r->sp, pl, from, bound_from(r, from, pl, rev), rev, &kp, &kl, &vp, &vl);
        if (s == FD_OK && kl >= pl + 8) {
            memcpy(from + pl, (const uint8_t *)kp + pl, 8);
            fl = pl + 8 + kv_enc_key(from + pl + 8, rev ? z->lmax : z->lmin, rev ? z->lmaxl : z->lminl);
        }
    }
    fl = bound_from(r, from, fl, rev);
    s = kv_range_seek(c, it, r->sp, pl, from, fl, rev, &kp, &kl, &vp, &vl);
    long long idx = 0, skip = z->type == FD_ZR_RANK ? z->start : z->offset;
    long long left = z->type == FD_ZR_RANK ? z->end - z->start + 1 : z->limit;
    int started = 0;
    while (s == FD_OK && left != 0) {
        if (kl < pl + 8) { s = FD_E_CORRUPT; break; }
        const uint8_t *sc8 = (const uint8_t *)kp + pl;
        double score = kv_dec_double(sc8);
        const char *mb, *v; size_t ml, vvl;
        if ((s = kv_elem_decode(kp, kl, pl + 8, vp, vl, &mb, &ml, &v, &vvl)) != FD_OK) break;
        if (z->type == FD_ZR_SCORE) {
            if (!started && !(rev ? fd_zrange_lte_max(z, score, NULL, 0) : fd_zrange_gte_min(z, score, NULL, 0))) goto next;
            if (!(rev ? fd_zrange_gte_min(z, score, NULL, 0) : fd_zrange_lte_max(z, score, NULL, 0))) break;
        } else if (z->type == FD_ZR_LEX) {
            if (!started && !(rev ? fd_zrange_lte_max(z, 0, mb, ml) : fd_zrange_gte_min(z, 0, mb, ml))) goto next;
            if (!(rev ? fd_zrange_gte_min(z, 0, mb, ml) : fd_zrange_lte_max(z, 0, mb, ml))) break;
        }
        started = 1;
        if (skip > 0) { skip--; goto next; }
        if ((s = sink_emit(k, sc8, score, mb, ml)) != FD_OK) break;
        if (left > 0) left--;
    next:
        idx++;
        s = kv_range_step(c, it, r->sp, pl, rev, &kp, &kl, &vp, &vl);
    }
    c->drv->iter_close(it);
    if (s == FD_NOTFOUND) s = FD_OK;
    return s;
}

/* The n members listed in l leave r (all of them: the key's records go at
 * once); the caller saves r. bound 0 / 1: they were the lowest / highest,
 * walked from that end: the last one's score is the new floor / ceiling. */
static int delete_walked(kv_ctx *c, zref *r, const kv_list *l, long long n, int bound)
{
    if ((uint64_t)n >= r->m.size) {
        FD_TRY(kv_delete(c, &r->k, &r->m));          /* all: O(1) */
        r->m.found = r->m.live = 0;
        r->m.size = 0;
        return FD_OK;
    }
    size_t off = 0;
    const char *p; size_t pn;
    uint64_t last = 0;
    while (kv_list_next(l, &off, &p, &pn)) {
        FD_TRY(member_del(c, r, p + 8, pn - 8, kv_dec_double((const uint8_t *)p)));
        last = kv_get_u64((const uint8_t *)p);
    }
    if (bound == 0) r->m.head = last;
    if (bound == 1) r->m.tail = last;
    r->m.size -= (uint64_t)n;
    return FD_OK;
}

/* The members of l to k, last first. */
static int replay_reversed(const kv_list *l, zsink *k)
{
    size_t *offs = malloc(((size_t)l->n + 1) * sizeof *offs), off = 0;
    if (!offs) return FD_E_NOMEM;
    const char *p; size_t pn;
    long long i = 0;
    while (i < l->n && (offs[i] = off, kv_list_next(l, &off, &p, &pn))) i++;
    int s = FD_OK;
    for (long long j = i - 1; j >= 0 && s == FD_OK; j--) {
        size_t o = offs[j];
        kv_list_next(l, &o, &p, &pn);
        s = sink_emit(k, (const uint8_t *)p, kv_dec_double((const uint8_t *)p), p + 8, pn - 8);
    }
    free(offs);
    return s == FD_NOTFOUND ? FD_OK : s;
}

/* ---------------------------------------------------------------- fd_zset_io
 * The sorted-set commands are storage/value/zset.c's; this is their store:
 * point reads and writes of a member record and its score-index record,
 * walks of the score index. */

_Static_assert(sizeof(zref) <= sizeof(fd_zset_zk), "kv_zref fits fd_zset_zk");

static int zk_open(void *h, const resp_arg *key, int source, int named, int step, fd_zset_zk *b, int *exists)
{
    (void)named; (void)step;
    kv_ctx *c = h;
    zref *r = (zref *)b->b;
    int read = c->read;
    if (source) c->read = 1;                      /* lookupKeyRead: its keymiss */
    int s = zref_load(c, r, key);
    c->read = read;
    *exists = s == FD_OK && r->m.live;
    return s;
}

static int zk_score(void *h, fd_zset_zk *b, const char *m, size_t ml, double *score)
{
    return score_get(h, (zref *)b->b, m, ml, score);
}

static int zk_put(void *h, fd_zset_zk *b, const char *m, size_t ml, double score, int had_old, double old)
{
    zref *r = (zref *)b->b;
    FD_TRY(zref_create(h, r));
    FD_TRY(member_write(h, r, m, ml, score, had_old, old));
    if (!had_old) r->m.size++;
    return FD_OK;
}

static int zk_del(void *h, fd_zset_zk *b, const char *m, size_t ml, int *removed)
{
    zref *r = (zref *)b->b;
    double cur;
    if (!r->m.size) return FD_OK;
    int s = score_get(h, r, m, ml, &cur);
    if (s == FD_NOTFOUND) return FD_OK;
    FD_TRY(s);
    FD_TRY(member_del(h, r, m, ml, cur));
    r->m.size--;
    *removed = 1;
    return FD_OK;
}

static long long zk_count(void *h, fd_zset_zk *b) { (void)h; return (long long)((zref *)b->b)->m.size; }

static int zk_save(void *h, fd_zset_zk *b)
{
    zref *r = (zref *)b->b;
    return kv_coll_save(h, &r->k, &r->m);
}

static int zk_gone(void *h, fd_zset_zk *b) { (void)h; return ((zref *)b->b)->m.size == 0; }

/* A rank range nearer the far end is walked from there and handed over
 * in z's order: O(min(start, size - end) + returned). */
static int zk_range(void *h, fd_zset_zk *b, const fd_zrange *z, int remove, fd_zset_fn fn, void *arg, long long *n)
{
    kv_ctx *c = h;
    zref *r = (zref *)b->b;
    long long size = (long long)r->m.size;
    zsink k = { fn, arg, remove, 0, { 0 } };
    int s;
    if (z->type == FD_ZR_RANK && z->start > size - 1 - z->end) {
        fd_zrange f = *z;
        f.rev = !z->rev;
        f.start = size - 1 - z->end;
        f.end = size - 1 - z->start;
        zsink all = { NULL, NULL, 1, 0, { 0 } };
        s = zwalk(c, r, &f, &all);
        k.keep = 0;
        if (s == FD_OK) s = replay_reversed(&all.l, &k);
        if (s == FD_OK && remove && all.n) s = delete_walked(c, r, &all.l, all.n, f.start == 0 ? f.rev : -1);
        kv_list_free(&all.l);
    } else {
        s = zwalk(c, r, z, &k);
        int end = (z->type == FD_ZR_RANK && z->start == 0) ||
                  (z->type == FD_ZR_SCORE && z->offset == 0 && (z->rev ? isinf(z->max) && z->max > 0 : isinf(z->min) && z->min < 0));
        if (s == FD_OK && remove && k.n) s = delete_walked(c, r, &k.l, k.n, end ? z->rev : -1);
    }
    kv_list_free(&k.l);
    *n = k.n;
    return s;
}

/* Two walks in step: one from the low end towards the member (counting the
 * records before it), one from the member towards the high end (counting
 * those after it); the first to finish gives the rank: O(min(rank, size -
 * rank)). */
static int zk_rank(void *h, fd_zset_zk *b, const char *m, size_t ml, long long *rank)
{
    kv_ctx *c = h;
    zref *r = (zref *)b->b;
    double d;
    FD_TRY(score_get(c, r, m, ml, &d));
    uint8_t target[KV_ELEM_MAX + 8];
    size_t tl = index_key(target, r, d, m, ml);
    kv_iter *a, *bi;
    FD_TRY(c->drv->iter_open(c->txn, &a));
    int s = c->drv->iter_open(c->txn, &bi);
    if (s != FD_OK) { c->drv->iter_close(a); return s; }
    const void *kp, *vp; size_t kl, vl;
    long long before = 0, after = 0, n = (long long)r->m.size;
    *rank = -1;
    uint8_t from[KV_ELEM_MAX + 8];
    memcpy(from, r->sp, r->pl);
    int sa = kv_range_seek(c, a, r->sp, r->pl, from, bound_from(r, from, r->pl, 0), 0, &kp, &kl, &vp, &vl);
    if (sa == FD_OK && kl == tl && memcmp(kp, target, tl) == 0) *rank = 0;
    int sb = *rank < 0 ? kv_range_seek(c, bi, r->sp, r->pl, target, tl, 0, &kp, &kl, &vp, &vl) : FD_OK;
    if (*rank < 0 && sb == FD_OK && !(kl == tl && memcmp(kp, target, tl) == 0)) sb = FD_E_CORRUPT;
    while (*rank < 0 && sa == FD_OK && sb == FD_OK) {
        before++;                                   /* a: one more record before the member */
        sa = kv_range_step(c, a, r->sp, r->pl, 0, &kp, &kl, &vp, &vl);
        if (sa == FD_OK && kl == tl && memcmp(kp, target, tl) == 0) { *rank = before; break; }
        sb = kv_range_step(c, bi, r->sp, r->pl, 0, &kp, &kl, &vp, &vl);   /* b: one more after it */
        if (sb == FD_NOTFOUND) { *rank = n - 1 - after; break; }
        after++;
    }
    c->drv->iter_close(a);
    c->drv->iter_close(bi);
    if (*rank < 0) {
        s = sa != FD_OK ? sa : sb;
        return s == FD_NOTFOUND || s == FD_OK ? FD_E_CORRUPT : s;
    }
    return FD_OK;
}

static int zk_store(void *h, const resp_arg *dst, const fd_zent *a, size_t n, const char *event)
{
    return kv_zset_store(h, dst, a, n, event);
}

static const fd_zset_io zset_io = { zk_open, zk_score, zk_put, zk_del, zk_count, zk_save, zk_gone, NULL,
                                    kv_io_event, zk_range, zk_rank, zk_store };

FD_ZSET_HANDLERS(kv, kv_ctx, zset_io)
FD_GEO_HANDLERS(kv, kv_ctx, zset_io)

int kv_cmd_zscan(kv_ctx *c) { return kv_subscan(c, KV_T_ZSET, KV_TAG_ZMEMBER); }

/* ---------------------------------------------------------------- for kv_zsetops.c, kv_dump.c */

int kv_zref_load(kv_ctx *c, kv_zref *r, const resp_arg *key) { return zref_load(c, r, key); }

int kv_zset_put(kv_ctx *c, kv_zref *r, const char *m, size_t ml, double score, int had_old, double old)
{
    return member_write(c, r, m, ml, score, had_old, old);
}

int kv_zset_walk(kv_ctx *c, const kv_zref *r, double min, int minex, double max, int maxex,
                 kv_zset_fn fn, void *arg)
{
    if (!r->m.live) return FD_OK;
    const size_t pl = r->pl;
    uint8_t from[KV_ELEM_MAX + 8];
    size_t fl = pl;
    memcpy(from, r->sp, pl);
    if (!(isinf(min) && min < 0)) { kv_enc_double(from + pl, min); fl = pl + 8; }
    fl = bound_from(r, from, fl, 0);
    kv_iter *it;
    FD_TRY(c->drv->iter_open(c->txn, &it));
    const void *kp, *vp; size_t kl, vl;
    int s = kv_range_seek(c, it, r->sp, pl, from, fl, 0, &kp, &kl, &vp, &vl);
    while (s == FD_OK) {
        if (kl < pl + 8) { s = FD_E_CORRUPT; break; }
        double score = kv_dec_double((const uint8_t *)kp + pl);
        if (maxex ? score >= max : score > max) break;
        if (minex ? score > min : score >= min) {
            const char *mb, *v; size_t ml, vvl;
            if ((s = kv_elem_decode(kp, kl, pl + 8, vp, vl, &mb, &ml, &v, &vvl)) != FD_OK) break;
            int rc = fn(arg, mb, ml, score);
            if (rc < 0) { s = FD_E_NOMEM; break; }
            if (rc > 0) break;
        }
        s = kv_range_step(c, it, r->sp, pl, 0, &kp, &kl, &vp, &vl);
    }
    c->drv->iter_close(it);
    return s == FD_NOTFOUND ? FD_OK : s;
}

int kv_zset_store(kv_ctx *c, const resp_arg *dst, const fd_zent *a, size_t n, const char *event)
{
    kv_zref r;
    kv_key_init(&r.k, dst->ptr, dst->len);
    FD_TRY(kv_lookup(c, &r.k, &r.m));
    int was = r.m.live;
    if (r.m.found) {
        FD_TRY(kv_delete(c, &r.k, &r.m));
        r.m.found = r.m.live = 0;
    }
    if (!n) {
        if (was) KV_NOTIFY(c, GENERIC, "del", dst->ptr, dst->len);
        return FD_OK;
    }
    FD_TRY(zref_create(c, &r));
    for (size_t i = 0; i < n; i++)
        FD_TRY(member_write(c, &r, a[i].m, a[i].ml, a[i].s, 0, 0));
    r.m.size = n;
    c->overwrite = was;
    int s = kv_coll_save(c, &r.k, &r.m);
    c->overwrite = 0;
    if (s == FD_OK) KV_NOTIFY(c, ZSET, event, dst->ptr, dst->len);
    return s;
}
