/* mg_zset.c — the MongoDB backend's sorted sets.
 *
 * { _id, type: "zset", value: [ {m: BinData, s: Double}, ... ], expireAt? }:
 * the members kept in Redis's order (score, then member bytes), as Redis's
 * listpack encoding, so ranges by rank are array positions and ranges by
 * score or lex are one walk. Read, change here, write back, as the other
 * collection types (docs/mongodb.md has the costs and why this layout). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mg.h"
#include "../value/zset.h"

void mg_zset_free(mg_zset *Z) { free(Z->a); mg_ix_free(&Z->ix); memset(Z, 0, sizeof *Z); }

static int zent_cmp(const void *x, const void *y)
{
    const mg_zent *a = x, *b = y;
    if (a->s < b->s) return -1;
    if (a->s > b->s) return 1;
    return fd_lexcmp(a->m, a->ml, b->m, b->ml);
}

static int zset_push(mg_zset *Z, const char *m, size_t ml, double s)
{
    mg_zent *na = mg_reserve(Z->a, &Z->cap, Z->n + 1, sizeof *na);
    if (!na) return FD_E_NOMEM;
    Z->a = na;
    Z->a[Z->n++] = (mg_zent){m, ml, s};
    return FD_OK;
}

/* mg_load_elems's element parser: {m: BinData, s: number} (no m, or a NaN
 * score: skipped); an entry out of order sets Z->dirty */
static int zset_elem(void *coll, bson_iter_t *arr)
{
    mg_zset *Z = coll;
    bson_iter_t e;
    const uint8_t *mp = NULL;
    uint32_t ml = 0;
    double s = 0;
    bson_subtype_t st;
    if (!BSON_ITER_HOLDS_DOCUMENT(arr) || !bson_iter_recurse(arr, &e)) return FD_OK;
    while (bson_iter_next(&e)) {
        if (!strcmp(bson_iter_key(&e), "m") && BSON_ITER_HOLDS_BINARY(&e)) bson_iter_binary(&e, &st, &ml, &mp);
        else if (!strcmp(bson_iter_key(&e), "s") && BSON_ITER_HOLDS_NUMBER(&e)) s = bson_iter_as_double(&e);
    }
    if (!mp || isnan(s)) return FD_OK;
    if (zset_push(Z, (const char *)mp, ml, s) != FD_OK) return FD_E_NOMEM;
    if (Z->n > 1 && zent_cmp(&Z->a[Z->n - 2], &Z->a[Z->n - 1]) > 0) Z->dirty = 1;
    return FD_OK;
}

int mg_zset_load(mg_ctx *c, const resp_arg *key, mg_meta *m, mg_zset *Z)
{
    memset(Z, 0, sizeof *Z);
    int s = mg_load_elems(c, key, m, MG_T_ZSET, NULL, zset_elem, Z);
    if (s != FD_OK) { mg_zset_free(Z); return s; }
    if (Z->dirty) qsort(Z->a, Z->n, sizeof *Z->a, zent_cmp);   /* written by something else (no index yet) */
    Z->dirty = 0;
    return FD_OK;
}

static void zset_keyat(const void *coll, size_t i, const char **p, size_t *l)
{
    const mg_zent *e = &((const mg_zset *)coll)->a[i];
    *p = e->m; *l = e->ml;
}

static long zset_find(mg_zset *Z, const char *p, size_t n)
{
    return mg_ix_find(&Z->ix, Z, Z->n, zset_keyat, p, n);
}

/* Z from m->doc's value array again (after mg_big_zset_window) */
static int zset_from_doc(mg_meta *m, mg_zset *Z)
{
    memset(Z, 0, sizeof *Z);
    bson_iter_t it, arr;
    if (m->doc && bson_iter_init_find(&it, m->doc, "value") && BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &arr))
        while (bson_iter_next(&arr))
            if (zset_elem(Z, &arr) != FD_OK) { mg_zset_free(Z); return FD_E_NOMEM; }
    if (Z->dirty) qsort(Z->a, Z->n, sizeof *Z->a, zent_cmp);
    Z->dirty = 0;
    return FD_OK;
}

int mg_zset_load_end(mg_ctx *c, const resp_arg *key, mg_meta *m, mg_zset *Z, int rev, long long count)
{
    mg_named(c, c->argc, 1);          /* a big sorted set: nothing yet */
    FD_TRY(mg_zset_load(c, key, m, Z));
    if (m->expanded != 2) return FD_OK;
    fd_zrange z;
    memset(&z, 0, sizeof z);
    z.type = FD_ZR_RANK;
    z.rev = rev;
    z.start = 0;
    z.end = count > 0 ? count - 1 : 0;
    mg_zset_free(Z);
    int s = mg_big_zset_window(c, m, &z);
    if (s == FD_OK) s = zset_from_doc(m, Z);
    if (s != FD_OK) mg_meta_free(m);
    return s;
}

static int zset_save(mg_ctx *c, const resp_arg *key, const mg_meta *m, mg_zset *Z)
{
    if (!Z->n && m->expanded != 2) return mg_coll_delete(c, key, m);   /* (a part of a big one: mg_coll_write) */
    if (Z->dirty) { qsort(Z->a, Z->n, sizeof *Z->a, zent_cmp); mg_ix_invalidate(&Z->ix); }
    Z->dirty = 0;
    bson_t d = BSON_INITIALIZER, arr, e;
    bson_append_utf8(&d, "type", -1, "zset", -1);
    bson_append_array_begin(&d, "value", -1, &arr);
    for (size_t i = 0; i < Z->n; i++) {
        char idx[16];
        const char *ks;
        bson_uint32_to_string((uint32_t)i, &ks, idx, sizeof idx);
        bson_append_document_begin(&arr, ks, -1, &e);
        bson_append_binary(&e, "m", -1, BSON_SUBTYPE_BINARY, (const uint8_t *)Z->a[i].m, (uint32_t)Z->a[i].ml);
        /* -0 is stored as 0, as Redis's listpack does ("0" is what ZSCORE gives) */
        bson_append_double(&e, "s", -1, Z->a[i].s == 0 ? 0.0 : Z->a[i].s);
        bson_append_document_end(&arr, &e);
    }
    bson_append_array_end(&d, &arr);
    if (m->live && m->expire) bson_append_date_time(&d, "expireAt", -1, m->expire);
    int s = mg_coll_write(c, key, m, &d);
    bson_destroy(&d);
    return s;
}

/* remove the entries whose gone[i] is set */
static void zset_compact(mg_zset *Z, const unsigned char *gone)
{
    mg_ix_invalidate(&Z->ix);
    size_t w = 0;
    for (size_t i = 0; i < Z->n; i++)
        if (!gone[i]) Z->a[w++] = Z->a[i];
    Z->n = w;
}

#define ZSET_DONE(st) do { int st_ = (st); mg_zset_free(&Z); mg_meta_free(&m); return st_; } while (0)

/* ---------------------------------------------------------------- fd_zset_io
 * ZADD, ZINCRBY, ZREM, ZSCORE, ZMSCORE, ZCARD are storage/value/zset.c's;
 * this is their store: the sorted array loaded (a big set: only the named
 * members, mg_big.c), changed here, sorted again and written back. */

typedef struct mg_zk {
    const resp_arg *key;
    mg_meta m;
    mg_zset Z;
} mg_zk;
_Static_assert(sizeof(mg_zk) <= sizeof(fd_zset_zk), "mg_zk fits fd_zset_zk");

static int zk_open(void *h, const resp_arg *key, int named, int step, fd_zset_zk *b, int *exists)
{
    mg_ctx *c = h;
    mg_zk *x = (mg_zk *)b->b;
    memset(x, 0, sizeof *x);
    x->key = key;
    mg_named(c, named < c->argc ? named : c->argc, step);   /* a big sorted set: only these members */
    int s = mg_zset_load(c, key, &x->m, &x->Z);
    if (s != FD_OK) { memset(x, 0, sizeof *x); return s; }    /* (freed by the load) */
    *exists = x->m.live;
    return FD_OK;
}

static int zk_score(void *h, fd_zset_zk *b, const char *m, size_t ml, double *score)
{
    (void)h;
    mg_zk *x = (mg_zk *)b->b;
    long i = zset_find(&x->Z, m, ml);
    if (i < 0) return FD_NOTFOUND;
    *score = x->Z.a[i].s;
    return FD_OK;
}

static int zk_put(void *h, fd_zset_zk *b, const char *m, size_t ml, double score, int had_old, double old)
{
    (void)h; (void)old;
    mg_zk *x = (mg_zk *)b->b;
    x->Z.dirty = 1;
    long i = had_old ? zset_find(&x->Z, m, ml) : -1;
    if (i >= 0) { x->Z.a[i].s = score; return FD_OK; }
    return zset_push(&x->Z, m, ml, score);
}

static int zk_del(void *h, fd_zset_zk *b, const char *m, size_t ml, int *removed)
{
    (void)h;
    mg_zset *Z = &((mg_zk *)b->b)->Z;
    long i = zset_find(Z, m, ml);
    if (i < 0) return FD_OK;
    memmove(&Z->a[i], &Z->a[i + 1], (Z->n - (size_t)i - 1) * sizeof Z->a[0]);
    Z->n--;
    mg_ix_invalidate(&Z->ix);
    *removed = 1;
    return FD_OK;
}

static long long zk_count(void *h, fd_zset_zk *b)
{
    (void)h;
    mg_zk *x = (mg_zk *)b->b;
    return mg_coll_count(&x->m, x->Z.n);
}

static int zk_save(void *h, fd_zset_zk *b)
{
    mg_zk *x = (mg_zk *)b->b;
    return zset_save(h, x->key, &x->m, &x->Z);
}

static int zk_gone(void *h, fd_zset_zk *b) { return mg_key_gone(h, ((mg_zk *)b->b)->key); }

static void zk_close(void *h, fd_zset_zk *b)
{
    (void)h;
    mg_zk *x = (mg_zk *)b->b;
    mg_zset_free(&x->Z);
    mg_meta_free(&x->m);
}

static const fd_zset_io zset_io = { zk_open, zk_score, zk_put, zk_del, zk_count, zk_save,
                                    zk_gone, zk_close, mg_coll_event };

FD_ZSET_HANDLERS(mg, mg_ctx, zset_io)

static int zrank_generic(mg_ctx *c, int rev)
{
    mg_meta m; mg_zset Z;
    mg_named(c, 2, 1);     /* a big sorted set: only these members (mg_big.c) */
    FD_TRY(mg_zset_load(c, &c->argv[1], &m, &Z));
    long i = zset_find(&Z, c->argv[2].ptr, c->argv[2].len);
    if (i >= 0 && m.expanded == 2) {        /* a big sorted set: count the members before it */
        long long rank;
        int s = mg_big_zrank(c, &m, Z.a[i].m, Z.a[i].ml, Z.a[i].s, &rank);
        if (s != FD_OK) ZSET_DONE(s);
        ZSET_DONE(resp_add_int(c->out, rev ? m.bn - 1 - rank : rank) ? FD_E_NOMEM : FD_OK);
    }
    int r = i < 0 ? resp_add_null(c->out) : resp_add_int(c->out, rev ? (long long)Z.n - 1 - i : i);
    ZSET_DONE(r ? FD_E_NOMEM : FD_OK);
}

int mg_cmd_zrank(mg_ctx *c)    { return zrank_generic(c, 0); }
int mg_cmd_zrevrank(mg_ctx *c) { return zrank_generic(c, 1); }

/* The positions z selects, in reply order, into out (Z->n entries room):
 * the count. A rank range must be sanitized (fd_rank_range) first. As the
 * embedded backends' walk: a score or lex walk starts at the first member
 * inside the near bound and stops at the first one outside the far one. */
static size_t zwalk(const mg_zset *Z, const fd_zrange *z, size_t *out, int whole)
{
    size_t k = 0, n = Z->n;
    if (z->type == FD_ZR_RANK) {
        for (long long r = z->start; r <= z->end; r++) out[k++] = z->rev ? n - 1 - (size_t)r : (size_t)r;
        return k;
    }
    if (fd_zrange_empty(z) || z->offset < 0 || z->limit == 0) return 0;
    /* whole (Z holds every member): Redis 7.0's zzlIsInLexRange, as
     * storage/kv/kv_zset.c zwalk: nothing unless the last member (by score)
     * is >= min and the first <= max (scores that differ) */
    if (whole && z->type == FD_ZR_LEX && n &&
        (!fd_zrange_gte_min(z, Z->a[n - 1].s, Z->a[n - 1].m, Z->a[n - 1].ml) ||
         !fd_zrange_lte_max(z, Z->a[0].s, Z->a[0].m, Z->a[0].ml)))
        return 0;
    long long skip = z->offset, left = z->limit;
    int started = 0;
    for (size_t j = 0; j < n && left != 0; j++) {
        size_t i = z->rev ? n - 1 - j : j;
        const mg_zent *e = &Z->a[i];
        if (!started && !(z->rev ? fd_zrange_lte_max(z, e->s, e->m, e->ml) : fd_zrange_gte_min(z, e->s, e->m, e->ml)))
            continue;
        if (!(z->rev ? fd_zrange_gte_min(z, e->s, e->m, e->ml) : fd_zrange_lte_max(z, e->s, e->m, e->ml))) break;
        started = 1;
        if (skip > 0) { skip--; continue; }
        out[k++] = i;
        if (left > 0) left--;
    }
    return k;
}

static int zrange_generic(mg_ctx *c, int type, int rev)
{
    fd_zrange z;
    int replied;
    FD_TRY(fd_parse_zrange(c->argv, c->argc, type, rev, &z, c->out, &replied));
    if (replied) return FD_OK;
    mg_meta m; mg_zset Z;
    if (z.type != FD_ZR_LEX) mg_named(c, c->argc, 1);   /* a big sorted set: the range alone, below */
    FD_TRY(mg_zset_load(c, &c->argv[1], &m, &Z));
    if (m.expanded == 2) {
        /* a big sorted set (mg_big.c): one _id range read of the members
         * the range selects; the walk below then runs over them only */
        if (z.type == FD_ZR_RANK && !fd_rank_range(m.bn, &z.start, &z.end))
            ZSET_DONE(resp_add_array(c->out, 0) ? FD_E_NOMEM : FD_OK);
        mg_zset_free(&Z);
        int s = mg_big_zset_window(c, &m, &z);
        if (s == FD_OK) s = zset_from_doc(&m, &Z);
        if (s != FD_OK) ZSET_DONE(s);
        if (z.type == FD_ZR_RANK) { z.start = 0; z.end = (long long)Z.n - 1; }
        else z.offset = 0;
        if (!Z.n) ZSET_DONE(resp_add_array(c->out, 0) ? FD_E_NOMEM : FD_OK);
    } else if (z.type == FD_ZR_RANK && !fd_rank_range((long long)Z.n, &z.start, &z.end))
        ZSET_DONE(resp_add_array(c->out, 0) ? FD_E_NOMEM : FD_OK);
    size_t *pos = malloc((Z.n ? Z.n : 1) * sizeof *pos);
    if (!pos) ZSET_DONE(FD_E_NOMEM);
    size_t k = zwalk(&Z, &z, pos, m.expanded != 2);
    int nested = z.withscores && c->out->proto == 3;
    int r = resp_add_array(c->out, (long long)(z.withscores && !nested ? 2 * k : k));
    for (size_t j = 0; j < k && !r; j++) {
        const mg_zent *e = &Z.a[pos[j]];
        if (nested) r = resp_add_array(c->out, 2);
        if (!r) r = resp_add_bulk(c->out, e->m, e->ml);
        if (!r && z.withscores) r = resp_add_double(c->out, e->s);
    }
    free(pos);
    ZSET_DONE(r ? FD_E_NOMEM : FD_OK);
}

int mg_cmd_zrange(mg_ctx *c)           { return zrange_generic(c, -1, -1); }
int mg_cmd_zrevrange(mg_ctx *c)        { return zrange_generic(c, FD_ZR_RANK, 1); }
int mg_cmd_zrangebyscore(mg_ctx *c)    { return zrange_generic(c, FD_ZR_SCORE, 0); }
int mg_cmd_zrevrangebyscore(mg_ctx *c) { return zrange_generic(c, FD_ZR_SCORE, 1); }
int mg_cmd_zrangebylex(mg_ctx *c)      { return zrange_generic(c, FD_ZR_LEX, 0); }
int mg_cmd_zrevrangebylex(mg_ctx *c)   { return zrange_generic(c, FD_ZR_LEX, 1); }

/* ZCOUNT / ZLEXCOUNT (count 1) and ZREMRANGEBY* (count 0) */
static int zrange_count_or_remove(mg_ctx *c, int type, int count)
{
    fd_zrange z;
    int replied;
    FD_TRY(fd_parse_zrange(c->argv, c->argc, type, 0, &z, c->out, &replied));
    if (replied) return FD_OK;
    mg_meta m; mg_zset Z;
    FD_TRY(mg_zset_load(c, &c->argv[1], &m, &Z));
    if (!m.live || (z.type == FD_ZR_RANK && !fd_rank_range((long long)Z.n, &z.start, &z.end)))
        ZSET_DONE(resp_add_int(c->out, 0) ? FD_E_NOMEM : FD_OK);
    size_t *pos = malloc(Z.n * sizeof *pos);
    unsigned char *gone = count ? NULL : calloc(Z.n, 1);
    if (!pos || (!count && !gone)) { free(pos); free(gone); ZSET_DONE(FD_E_NOMEM); }
    size_t k = zwalk(&Z, &z, pos, 1);
    int s = FD_OK;
    if (!count && k) {
        for (size_t j = 0; j < k; j++) gone[pos[j]] = 1;
        zset_compact(&Z, gone);
        s = zset_save(c, &c->argv[1], &m, &Z);
        static const char *const ev[] = { [FD_ZR_RANK] = "zremrangebyrank", [FD_ZR_SCORE] = "zremrangebyscore",
                                          [FD_ZR_LEX] = "zremrangebylex" };
        if (s == FD_OK) {
            MG_NOTIFY_ARG(c, ZSET, ev[type], 1);
            mg_notify_del_if_gone(c, &c->argv[1]);
        }
    }
    free(pos);
    free(gone);
    if (s == FD_OK && resp_add_int(c->out, (long long)k)) s = FD_E_NOMEM;
    ZSET_DONE(s);
}

int mg_cmd_zcount(mg_ctx *c)           { return zrange_count_or_remove(c, FD_ZR_SCORE, 1); }
int mg_cmd_zlexcount(mg_ctx *c)        { return zrange_count_or_remove(c, FD_ZR_LEX, 1); }
int mg_cmd_zremrangebyrank(mg_ctx *c)  { return zrange_count_or_remove(c, FD_ZR_RANK, 0); }
int mg_cmd_zremrangebyscore(mg_ctx *c) { return zrange_count_or_remove(c, FD_ZR_SCORE, 0); }
int mg_cmd_zremrangebylex(mg_ctx *c)   { return zrange_count_or_remove(c, FD_ZR_LEX, 0); }

/* ZPOPMIN (rev 0) / ZPOPMAX (rev 1) */
static int zpop_generic(mg_ctx *c, int rev)
{
    long long count = -1;
    if (c->argc > 3) return FD_E_SYNTAX;
    if (c->argc == 3 && (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &count) != 0 || count < 0))
        return FD_E_RANGE_POSITIVE;
    int nested = c->out->proto == 3 && count != -1;
    mg_meta m; mg_zset Z;
    FD_TRY(mg_zset_load_end(c, &c->argv[1], &m, &Z, rev, count < 0 ? 1 : count));
    if (!m.live || count == 0) ZSET_DONE(resp_add_array(c->out, 0) ? FD_E_NOMEM : FD_OK);
    if (count == -1) count = 1;
    size_t k = count < (long long)Z.n ? (size_t)count : Z.n;
    size_t mark = c->out->len;
    int r = resp_add_array(c->out, (long long)(nested ? k : 2 * k));
    for (size_t j = 0; j < k && !r; j++) {
        const mg_zent *e = &Z.a[rev ? Z.n - 1 - j : j];
        if (nested) r = resp_add_array(c->out, 2);
        if (!r) r = resp_add_bulk(c->out, e->m, e->ml);
        if (!r) r = resp_add_double(c->out, e->s);
    }
    if (r) { c->out->len = mark; ZSET_DONE(FD_E_NOMEM); }
    if (!rev) memmove(Z.a, Z.a + k, (Z.n - k) * sizeof *Z.a);
    Z.n -= k;
    mg_ix_invalidate(&Z.ix);
    int s = zset_save(c, &c->argv[1], &m, &Z);
    if (s != FD_OK) c->out->len = mark;
    else if (k) {
        MG_NOTIFY_ARG(c, ZSET, rev ? "zpopmax" : "zpopmin", 1);
        mg_notify_del_if_gone(c, &c->argv[1]);
    }
    ZSET_DONE(s);
}

int mg_cmd_zpopmin(mg_ctx *c) { return zpop_generic(c, 0); }
int mg_cmd_zpopmax(mg_ctx *c) { return zpop_generic(c, 1); }

/* ---------------------------------------------------------------- for mg_geo.c, mg_zsetops.c, mg_dump.c */

int mg_zset_save(mg_ctx *c, const resp_arg *key, const mg_meta *m, mg_zset *Z) { return zset_save(c, key, m, Z); }
long mg_zset_find(mg_zset *Z, const char *p, size_t n) { return zset_find(Z, p, n); }
size_t mg_zset_range(const mg_zset *Z, const fd_zrange *z, size_t *pos) { return zwalk(Z, z, pos, 1); }
