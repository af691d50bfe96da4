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
 * -0 is stored as 0 (Redis replies "-0" for a score set to -0). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <ctype.h>
#include "kv.h"
#include "../value/zset.h"
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
    if (had_old) {
        el = index_key(ek, r, old, mb, ml);
        int s = c->drv->del(c->txn, ek, el);
        if (s != FD_OK && s != FD_NOTFOUND) return s;
    }
    el = index_key(ek, r, score, mb, ml);
    FD_TRY(kv_elem_put(c, ek, el, mb, ml, NULL, 0));
    kv_enc_double(sc, score);
    el = kv_elem_key(ek, r->zp, r->pl, mb, ml);
    return kv_elem_put(c, ek, el, mb, ml, sc, 8);
}

static int member_del(kv_ctx *c, zref *r, const char *mb, size_t ml, double score)
{
    uint8_t ek[KV_ELEM_MAX];
    size_t el = index_key(ek, r, score, mb, ml);
    int s = c->drv->del(c->txn, ek, el);
    if (s != FD_OK && s != FD_NOTFOUND) return s;
    el = kv_elem_key(ek, r->zp, r->pl, mb, ml);
    s = c->drv->del(c->txn, ek, el);
    return s == FD_NOTFOUND ? FD_OK : s;
}

/* ---------------------------------------------------------------- parsing */

/* Scores and range bounds are parsed by storage/cmdargs.c (shared with the
 * MongoDB backend). */

/* ---------------------------------------------------------------- range walks */

enum { ACT_REPLY, ACT_COUNT, ACT_COLLECT };

/* A range: fd_zrange (storage/cmdargs.h), as fd_parse_zrange reads it. */

typedef struct zsink {
    int act, withscores;
    long long n;
    kv_list l;                          /* ACT_COLLECT: score(8) + member */
} zsink;




static int sink_emit(kv_ctx *c, zsink *k, const uint8_t *sc8, double score, const char *mb, size_t ml)
{
    k->n++;
    if (k->act == ACT_COUNT) return FD_OK;
    if (k->act == ACT_COLLECT) return kv_list_add(&k->l, sc8, 8, mb, ml);
    int r = 0;
    if (k->withscores && c->out->proto == 3) r = resp_add_array(c->out, 2);
    if (!r) r = resp_add_bulk(c->out, mb, ml);
    if (!r && k->withscores) r = resp_add_double(c->out, score);
    return r ? FD_E_NOMEM : FD_OK;
}

/* Walk the score index of r as z says, sending each member to k. */
static int zwalk(kv_ctx *c, const zref *r, const fd_zrange *z, zsink *k)
{
    if (!r->m.live) return FD_OK;
    if (z->type == FD_ZR_SCORE && (z->min > z->max || (z->min == z->max && (z->minex || z->maxex))))
        return FD_OK;
    if (z->type == FD_ZR_LEX && (z->lmin_kind == 2 || z->lmax_kind == 1)) return FD_OK;
    if (z->type == FD_ZR_LEX && z->lmin_kind == 0 && z->lmax_kind == 0) {
        int cmp = fd_lexcmp(z->lmin, z->lminl, z->lmax, z->lmaxl);
        if (cmp > 0 || (cmp == 0 && (z->minex || z->maxex))) return FD_OK;
    }
    if (z->type != FD_ZR_RANK && z->offset < 0) return FD_OK;   /* Redis skips past the end */
    if (z->type != FD_ZR_RANK && z->limit == 0) return FD_OK;
    const size_t pl = r->pl;
    const int rev = z->rev;
    uint8_t from[KV_ELEM_MAX + 8];
    size_t fl = pl;
    memcpy(from, r->sp, pl);
    kv_iter *it;
    FD_TRY(c->drv->iter_open(c->txn, &it));
    const void *kp, *vp; size_t kl, vl;
    int s;
    if (z->type == FD_ZR_LEX) {
        /* Redis 7.0's zzlIsInLexRange/zslIsInLexRange: nothing unless the
         * last member (by score) is >= min and the first <= max; it
         * matters only when the scores differ (lex ranges assume equal
         * ones), e.g. ZREVRANGEBYLEX over d(-1) a(1) c(2.5): [a - is empty */
        for (int end = 0; end < 2; end++) {
            const char *mb, *v; size_t ml, vvl;
            s = kv_range_seek(c, it, r->sp, pl, r->sp, pl, end == 0, &kp, &kl, &vp, &vl);
            if (s == FD_OK && kl < pl + 8) s = FD_E_CORRUPT;
            if (s == FD_OK) s = kv_elem_decode(kp, kl, pl + 8, vp, vl, &mb, &ml, &v, &vvl);
            if (s == FD_OK && !(end == 0 ? fd_zrange_gte_min(z, 0, mb, ml) : fd_zrange_lte_max(z, 0, mb, ml))) s = FD_NOTFOUND;
            if (s != FD_OK) {
                c->drv->iter_close(it);
                return s == FD_NOTFOUND ? FD_OK : s;
            }
        }
    }
    if (z->type == FD_ZR_SCORE) {
        kv_enc_double(from + pl, rev ? z->max : z->min);
        fl = pl + 8;
        if (!rev && isinf(z->min) && z->min < 0) fl = pl;
        if (rev && isinf(z->max) && z->max > 0) fl = pl;
    } else if (z->type == FD_ZR_LEX && ((!rev && z->lmin_kind == 0) || (rev && z->lmax_kind == 0))) {
        /* members of equal scores: seek inside the first (last) score */
        s = kv_range_seek(c, it, r->sp, pl, r->sp, pl, rev, &kp, &kl, &vp, &vl);
        if (s == FD_OK && kl >= pl + 8) {
            memcpy(from + pl, (const uint8_t *)kp + pl, 8);
            fl = pl + 8 + kv_enc_key(from + pl + 8, rev ? z->lmax : z->lmin, rev ? z->lmaxl : z->lminl);
        }
    }
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
        if ((s = sink_emit(c, k, sc8, score, mb, ml)) != FD_OK) break;
        if (left > 0) left--;
    next:
        idx++;
        s = kv_range_step(c, it, r->sp, pl, rev, &kp, &kl, &vp, &vl);
    }
    c->drv->iter_close(it);
    if (s == FD_NOTFOUND) s = FD_OK;
    return s;
}

/* Delete the collected members of k from r; returns FD_OK. */
static int delete_collected(kv_ctx *c, zref *r, zsink *k)
{
    size_t off = 0;
    const char *p; size_t n;
    while (kv_list_next(&k->l, &off, &p, &n))
        FD_TRY(member_del(c, r, p + 8, n - 8, kv_dec_double((const uint8_t *)p)));
    r->m.size -= (uint64_t)k->l.n;
    return kv_coll_save(c, &r->k, &r->m);
}

/* ---------------------------------------------------------------- fd_zset_io
 * ZADD, ZINCRBY, ZREM, ZSCORE, ZMSCORE, ZCARD are storage/value/zset.c's;
 * this is their store: point reads and writes of a member record and its
 * score-index record. */

_Static_assert(sizeof(zref) <= sizeof(fd_zset_zk), "kv_zref fits fd_zset_zk");

static int zk_open(void *h, const resp_arg *key, int named, int step, fd_zset_zk *b, int *exists)
{
    (void)named; (void)step;
    zref *r = (zref *)b->b;
    int s = zref_load(h, r, key);
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

static const fd_zset_io zset_io = { zk_open, zk_score, zk_put, zk_del, zk_count, zk_save, zk_gone, NULL,
                                    kv_io_event };

FD_ZSET_HANDLERS(kv, kv_ctx, zset_io)

/* ZRANK (rev 0) / ZREVRANK (1). Two walks in step: one from the starting
 * end towards the member (counting the records before it), one from the
 * member towards the other end (counting those after it); the first to
 * finish gives the rank: O(min(rank, size - rank)). */
static int rank_generic(kv_ctx *c, int rev)
{
    zref r;
    FD_TRY(zref_load(c, &r, &c->argv[1]));
    const resp_arg *mb = &c->argv[2];
    double d;
    int s = score_get(c, &r, mb->ptr, mb->len, &d);
    if (s == FD_NOTFOUND) { FD_OUT(resp_add_null(c->out)); return FD_OK; }
    if (s != FD_OK) return s;
    uint8_t target[KV_ELEM_MAX + 8];
    size_t tl = index_key(target, &r, d, mb->ptr, mb->len);
    kv_iter *a, *b;
    FD_TRY(c->drv->iter_open(c->txn, &a));
    if ((s = c->drv->iter_open(c->txn, &b)) != FD_OK) { c->drv->iter_close(a); return s; }
    const void *kp, *vp; size_t kl, vl;
    long long before = 0, after = 0, rank = -1, n = (long long)r.m.size;
    int sa = kv_range_seek(c, a, r.sp, r.pl, r.sp, r.pl, rev, &kp, &kl, &vp, &vl);
    if (sa == FD_OK && kl == tl && memcmp(kp, target, tl) == 0) rank = 0;
    int sb = rank < 0 ? kv_range_seek(c, b, r.sp, r.pl, target, tl, 0, &kp, &kl, &vp, &vl) : FD_OK;
    if (rank < 0 && sb == FD_OK && !(kl == tl && memcmp(kp, target, tl) == 0)) sb = FD_E_CORRUPT;
    while (rank < 0 && sa == FD_OK && sb == FD_OK) {
        /* a: one more record before the member */
        before++;
        sa = kv_range_step(c, a, r.sp, r.pl, rev, &kp, &kl, &vp, &vl);
        if (sa == FD_OK && kl == tl && memcmp(kp, target, tl) == 0) { rank = before; break; }
        /* b: one more record on the member's other side */
        sb = kv_range_step(c, b, r.sp, r.pl, rev, &kp, &kl, &vp, &vl);
        if (sb == FD_NOTFOUND) { rank = n - 1 - after; break; }
        after++;
    }
    c->drv->iter_close(a);
    c->drv->iter_close(b);
    if (rank < 0) {
        s = sa != FD_OK ? sa : sb;
        return s == FD_NOTFOUND || s == FD_OK ? FD_E_CORRUPT : s;
    }
    FD_OUT(resp_add_int(c->out, rank));
    return FD_OK;
}

int kv_cmd_zrank(kv_ctx *c)    { return rank_generic(c, 0); }
int kv_cmd_zrevrank(kv_ctx *c) { return rank_generic(c, 1); }

/* ---------------------------------------------------------------- ZRANGE family */

/* zrangeGenericCommand: type/rev fixed by the command name, or -1 (ZRANGE:
 * chosen by BYSCORE/BYLEX/REV). */
static int zrange_generic(kv_ctx *c, int type, int rev)
{
    fd_zrange z;
    int replied;
    FD_TRY(fd_parse_zrange(c->argv, c->argc, type, rev, &z, c->out, &replied));
    if (replied) return FD_OK;
    int withscores = z.withscores;
    type = z.type;
    zref r;
    FD_TRY(zref_load(c, &r, &c->argv[1]));
    if (!r.m.live) { FD_OUT(resp_add_array(c->out, 0)); return FD_OK; }
    if (type == FD_ZR_RANK && !fd_rank_range((long long)r.m.size, &z.start, &z.end)) {
        FD_OUT(resp_add_array(c->out, 0));
        return FD_OK;
    }
    long long n = (long long)r.m.size;
    if (type == FD_ZR_RANK && z.start > n - 1 - z.end) {
        /* nearer the other end: walk from there and reply in reverse */
        fd_zrange f = z;
        f.rev = !z.rev;
        f.start = n - 1 - z.end;
        f.end = n - 1 - z.start;
        zsink k = { .act = ACT_COLLECT };
        int s = zwalk(c, &r, &f, &k);
        size_t *offs = s == FD_OK ? malloc(((size_t)k.l.n + 1) * sizeof *offs) : NULL;
        if (s == FD_OK && !offs) s = FD_E_NOMEM;
        if (s == FD_OK) {
            size_t off = 0, mark = c->out->len;
            const char *p; size_t pl;
            long long i = 0;
            while (i < k.l.n && (offs[i] = off, kv_list_next(&k.l, &off, &p, &pl))) i++;
            int e = resp_add_array(c->out, withscores && c->out->proto != 3 ? 2 * k.l.n : k.l.n);
            zsink rk = { .act = ACT_REPLY, .withscores = withscores };
            for (long long j = i - 1; j >= 0 && !e; j--) {
                size_t o = offs[j];
                kv_list_next(&k.l, &o, &p, &pl);
                e = sink_emit(c, &rk, (const uint8_t *)p, kv_dec_double((const uint8_t *)p), p + 8, pl - 8) != FD_OK;
            }
            if (e) { c->out->len = mark; s = FD_E_NOMEM; }
        }
        free(offs);
        kv_list_free(&k.l);
        return s;
    }
    zsink k = { .act = ACT_REPLY, .withscores = withscores };
    size_t mark = c->out->len;
    int s = zwalk(c, &r, &z, &k);
    if (s == FD_OK && resp_out_insert_header(c->out, mark, 'a', withscores && c->out->proto != 3 ? 2 * k.n : k.n))
        s = FD_E_NOMEM;
    if (s != FD_OK) c->out->len = mark;
    return s;
}

int kv_cmd_zrange(kv_ctx *c)            { return zrange_generic(c, -1, -1); }
int kv_cmd_zrevrange(kv_ctx *c)         { return zrange_generic(c, FD_ZR_RANK, 1); }
int kv_cmd_zrangebyscore(kv_ctx *c)     { return zrange_generic(c, FD_ZR_SCORE, 0); }
int kv_cmd_zrevrangebyscore(kv_ctx *c)  { return zrange_generic(c, FD_ZR_SCORE, 1); }
int kv_cmd_zrangebylex(kv_ctx *c)       { return zrange_generic(c, FD_ZR_LEX, 0); }
int kv_cmd_zrevrangebylex(kv_ctx *c)    { return zrange_generic(c, FD_ZR_LEX, 1); }

static int count_generic(kv_ctx *c, int type)
{
    fd_zrange z;
    int replied;
    FD_TRY(fd_parse_zrange(c->argv, c->argc, type, 0, &z, c->out, &replied));
    if (replied) return FD_OK;
    zref r;
    FD_TRY(zref_load(c, &r, &c->argv[1]));
    zsink k = { .act = ACT_COUNT };
    FD_TRY(zwalk(c, &r, &z, &k));
    FD_OUT(resp_add_int(c->out, k.n));
    return FD_OK;
}

int kv_cmd_zcount(kv_ctx *c)    { return count_generic(c, FD_ZR_SCORE); }
int kv_cmd_zlexcount(kv_ctx *c) { return count_generic(c, FD_ZR_LEX); }

static int remrange_generic(kv_ctx *c, int type)
{
    fd_zrange z;
    int replied;
    FD_TRY(fd_parse_zrange(c->argv, c->argc, type, 0, &z, c->out, &replied));
    if (replied) return FD_OK;
    zref r;
    FD_TRY(zref_load(c, &r, &c->argv[1]));
    if (!r.m.live || (type == FD_ZR_RANK && !fd_rank_range((long long)r.m.size, &z.start, &z.end))) {
        FD_OUT(resp_add_int(c->out, 0));
        return FD_OK;
    }
    long long n = (long long)r.m.size;
    if (type == FD_ZR_RANK && z.start > n - 1 - z.end) {    /* nearer the other end */
        long long st = z.start;
        z.rev = 1;
        z.start = n - 1 - z.end;
        z.end = n - 1 - st;
    }
    zsink k = { .act = ACT_COLLECT };
    int s = zwalk(c, &r, &z, &k);
    if (s == FD_OK && k.n) {
        int all = (uint64_t)k.n >= r.m.size;
        if (all) s = kv_delete(c, &r.k, &r.m);   /* all: O(1) */
        else s = delete_collected(c, &r, &k);
        static const char *const ev[] = { [FD_ZR_RANK] = "zremrangebyrank", [FD_ZR_SCORE] = "zremrangebyscore",
                                          [FD_ZR_LEX] = "zremrangebylex" };
        if (s == FD_OK) KV_NOTIFY_ARG(c, ZSET, ev[type], 1);
        if (s == FD_OK && all) KV_NOTIFY_ARG(c, GENERIC, "del", 1);
    }
    if (s == FD_OK && resp_add_int(c->out, k.n)) s = FD_E_NOMEM;
    kv_list_free(&k.l);
    return s;
}

int kv_cmd_zremrangebyrank(kv_ctx *c)  { return remrange_generic(c, FD_ZR_RANK); }
int kv_cmd_zremrangebyscore(kv_ctx *c) { return remrange_generic(c, FD_ZR_SCORE); }
int kv_cmd_zremrangebylex(kv_ctx *c)   { return remrange_generic(c, FD_ZR_LEX); }

/* ZPOPMIN (rev 0) / ZPOPMAX (rev 1). */
static int pop_generic(kv_ctx *c, int rev)
{
    long long count = -1;
    if (c->argc > 3) return FD_E_SYNTAX;
    if (c->argc == 3) {
        /* getPositiveLongFromObjectOrReply: one text for both errors */
        if (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &count) != 0 || count < 0) return FD_E_RANGE_POSITIVE;
    }
    int nested = c->out->proto == 3 && count != -1;
    zref r;
    FD_TRY(zref_load(c, &r, &c->argv[1]));
    if (!r.m.live || count == 0) { FD_OUT(resp_add_array(c->out, 0)); return FD_OK; }
    if (count == -1) count = 1;
    zsink k = { .act = ACT_COLLECT };
    int s = kv_zset_pop(c, &r, rev, count, &k.l);
    k.n = k.l.n;
    if (s == FD_OK) {
        size_t mark = c->out->len, off = 0;
        const char *p; size_t n;
        int e = resp_add_array(c->out, nested ? k.n : 2 * k.n);
        while (!e && kv_list_next(&k.l, &off, &p, &n)) {
            if (nested) e = resp_add_array(c->out, 2);
            if (!e) e = resp_add_bulk(c->out, p + 8, n - 8);
            if (!e) e = resp_add_double(c->out, kv_dec_double((const uint8_t *)p));
        }
        if (e) { c->out->len = mark; s = FD_E_NOMEM; }
    }
    kv_list_free(&k.l);
    return s;
}

int kv_cmd_zpopmin(kv_ctx *c) { return pop_generic(c, 0); }
int kv_cmd_zpopmax(kv_ctx *c) { return pop_generic(c, 1); }

int kv_cmd_zscan(kv_ctx *c) { return kv_subscan(c, KV_T_ZSET, KV_TAG_ZMEMBER); }

/* ---------------------------------------------------------------- for kv_geo.c, kv_zsetops.c, kv_dump.c */

int kv_zref_load(kv_ctx *c, kv_zref *r, const resp_arg *key) { return zref_load(c, r, key); }
int kv_zref_create(kv_ctx *c, kv_zref *r) { return zref_create(c, r); }

int kv_zset_score(kv_ctx *c, const kv_zref *r, const char *m, size_t ml, double *score)
{
    return score_get(c, r, m, ml, score);
}

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

int kv_zset_range(kv_ctx *c, const kv_zref *r, const fd_zrange *zr, kv_list *l)
{
    fd_zrange z;
    memset(&z, 0, sizeof z);
    z.type = zr->type == FD_ZR_RANK ? FD_ZR_RANK : zr->type == FD_ZR_SCORE ? FD_ZR_SCORE : FD_ZR_LEX;
    z.rev = zr->rev;
    z.start = zr->start; z.end = zr->end;
    z.min = zr->min; z.max = zr->max; z.minex = zr->minex; z.maxex = zr->maxex;
    z.lmin_kind = zr->lmin_kind; z.lmax_kind = zr->lmax_kind;
    z.lmin = zr->lmin; z.lmax = zr->lmax; z.lminl = zr->lminl; z.lmaxl = zr->lmaxl;
    z.offset = zr->offset; z.limit = zr->limit;
    if (!r->m.live) return FD_OK;
    if (z.type == FD_ZR_RANK && !fd_rank_range((long long)r->m.size, &z.start, &z.end)) return FD_OK;
    zsink k = { .act = ACT_COLLECT };
    int s = zwalk(c, r, &z, &k);
    *l = k.l;
    return s;
}

int kv_zset_pop(kv_ctx *c, kv_zref *r, int rev, long long count, kv_list *l)
{
    fd_zrange z;
    memset(&z, 0, sizeof z);
    z.type = FD_ZR_RANK;
    z.rev = rev;
    z.start = 0;
    z.end = count < (long long)r->m.size ? count - 1 : (long long)r->m.size - 1;
    zsink k = { .act = ACT_COLLECT };
    int s = zwalk(c, r, &z, &k);
    int all = 0;
    if (s == FD_OK) {
        all = (uint64_t)k.n >= r->m.size;
        if (all) s = kv_delete(c, &r->k, &r->m);   /* all: O(1) */
        else s = delete_collected(c, r, &k);
    }
    if (s == FD_OK && k.n) {
        KV_NOTIFY(c, ZSET, rev ? "zpopmax" : "zpopmin", r->k.key, r->k.klen);
        if (all) KV_NOTIFY(c, GENERIC, "del", r->k.key, r->k.klen);
    }
    *l = k.l;
    return s;
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
