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
#include "../value/geo.h"

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

/* ---------------------------------------------------------------- fd_zset_io
 * The sorted-set commands are storage/value/zset.c's; this is their store:
 * the sorted array loaded (a big set: only the named members, or the
 * window a range selects, mg_big.c), changed here, sorted again and
 * written back. */

typedef struct mg_zk {
    const resp_arg *key;
    mg_meta m;
    mg_zset Z;
} mg_zk;
_Static_assert(sizeof(mg_zk) <= sizeof(fd_zset_zk), "mg_zk fits fd_zset_zk");

static int zk_open(void *h, const resp_arg *key, int source, int named, int step, fd_zset_zk *b, int *exists)
{
    mg_ctx *c = h;
    mg_zk *x = (mg_zk *)b->b;
    memset(x, 0, sizeof *x);
    x->key = key;
    if (named != FD_ZSET_WHOLE)              /* a big sorted set: only these members (none: a range follows) */
        mg_named(c, named < c->argc ? named : c->argc, step);
    int read = c->read;
    if (source) c->read = 1;                 /* lookupKeyRead: its keymiss */
    int s = mg_zset_load(c, key, &x->m, &x->Z);
    c->read = read;
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

/* A big sorted set's range: one _id range read of the members z selects
 * (mg_big_zset_window), then the walk below over them only. */
static int zk_range(void *h, fd_zset_zk *b, const fd_zrange *zin, int remove, fd_zset_fn fn, void *arg, long long *n)
{
    mg_ctx *c = h;
    mg_zk *x = (mg_zk *)b->b;
    mg_zset *Z = &x->Z;
    fd_zrange z = *zin;
    *n = 0;
    if (x->m.expanded == 2) {
        mg_zset_free(Z);
        FD_TRY(mg_big_zset_window(c, &x->m, &z));
        FD_TRY(zset_from_doc(&x->m, Z));
        if (z.type == FD_ZR_RANK) { z.start = 0; z.end = (long long)Z->n - 1; }
        else z.offset = 0;
    }
    unsigned char *gone = remove && Z->n ? calloc(Z->n, 1) : NULL;
    if (remove && Z->n && !gone) return FD_E_NOMEM;
    size_t len = Z->n;
    int s = FD_OK;
    if (z.type == FD_ZR_RANK) {
        for (long long r = z.start; r <= z.end && s == FD_OK; r++) {
            size_t i = z.rev ? len - 1 - (size_t)r : (size_t)r;
            const mg_zent *e = &Z->a[i];
            int rc = fn ? fn(arg, e->m, e->ml, e->s) : 0;
            if (rc < 0) s = FD_E_NOMEM;
            if (gone) gone[i] = 1;
            ++*n;
            if (rc > 0) break;
        }
    } else {
        /* as the embedded backends' walk: start at the first member inside
         * the near bound, stop at the first outside the far one */
        long long skip = z.offset, left = z.limit;
        int started = 0;
        size_t j0 = 0;
        if (z.type == FD_ZR_SCORE) {         /* the near bound by bisection (the array is in score order) */
            size_t lo = 0, hi = len;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2, i = z.rev ? len - 1 - mid : mid;
                if (z.rev ? !fd_zrange_lte_max(&z, Z->a[i].s, NULL, 0) : !fd_zrange_gte_min(&z, Z->a[i].s, NULL, 0))
                    lo = mid + 1;
                else
                    hi = mid;
            }
            j0 = lo;
        }
        for (size_t j = j0; j < len && left != 0 && s == FD_OK; j++) {
            size_t i = z.rev ? len - 1 - j : j;
            const mg_zent *e = &Z->a[i];
            if (!started && !(z.rev ? fd_zrange_lte_max(&z, e->s, e->m, e->ml) : fd_zrange_gte_min(&z, e->s, e->m, e->ml)))
                continue;
            if (!(z.rev ? fd_zrange_gte_min(&z, e->s, e->m, e->ml) : fd_zrange_lte_max(&z, e->s, e->m, e->ml))) break;
            started = 1;
            if (skip > 0) { skip--; continue; }
            int rc = fn ? fn(arg, e->m, e->ml, e->s) : 0;
            if (rc < 0) s = FD_E_NOMEM;
            if (gone) gone[i] = 1;
            ++*n;
            if (left > 0) left--;
            if (rc > 0) break;
        }
    }
    if (s == FD_OK && gone && *n) zset_compact(Z, gone);
    free(gone);
    return s;
}

static int zk_rank(void *h, fd_zset_zk *b, const char *m, size_t ml, long long *rank)
{
    mg_zk *x = (mg_zk *)b->b;
    long i = zset_find(&x->Z, m, ml);
    if (i < 0) return FD_NOTFOUND;
    if (x->m.expanded == 2)                  /* a big sorted set: count the members before it */
        return mg_big_zrank(h, &x->m, x->Z.a[i].m, x->Z.a[i].ml, x->Z.a[i].s, rank);
    *rank = i;
    return FD_OK;
}

static int zk_store(void *h, const resp_arg *dst, const fd_zent *a, size_t n, const char *event)
{
    return mg_zstore(h, dst, a, n, event);
}

static const fd_zset_io zset_io = { zk_open, zk_score, zk_put, zk_del, zk_count, zk_save,
                                    zk_gone, zk_close, mg_coll_event, zk_range, zk_rank, zk_store };

FD_ZSET_HANDLERS(mg, mg_ctx, zset_io)
FD_GEO_HANDLERS(mg, mg_ctx, zset_io)

/* ---------------------------------------------------------------- for mg_zsetops.c, mg_dump.c, mg_sort.c, mg_scan.c */

int mg_zset_save(mg_ctx *c, const resp_arg *key, const mg_meta *m, mg_zset *Z) { return zset_save(c, key, m, Z); }
