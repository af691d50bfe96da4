/* mg_hash.c — the MongoDB backend's hashes.
 *
 * { _id, type: "hash", value: [ {f: BinData, v: BinData}, ... ], expireAt? }
 * Field names are arbitrary bytes, so they are values, never MongoDB field
 * names. Each command (storage/value/hash.c over this file's fd_coll_io)
 * reads the document, changes the array here and writes it back (one
 * replaceOne; the key's worker runs its commands in order, so this is
 * atomic for this frontdoor). Fields keep insertion order. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mg.h"
#include "../value/hash.h"
#include "../value/coll.h"

void mg_hash_free(mg_hash *h)
{
    mg_ix_free(&h->ix);
    for (size_t i = 0; i < h->n; i++) free(h->a[i].own);
    free(h->a);
    memset(h, 0, sizeof *h);
}

static int hash_push(mg_hash *h, const char *f, size_t fl, const char *v, size_t vl)
{
    mg_field *na = mg_reserve(h->a, &h->cap, h->n + 1, sizeof *na);
    if (!na) return FD_E_NOMEM;
    h->a = na;
    h->a[h->n++] = (mg_field){f, v, fl, vl, NULL};
    return FD_OK;
}

/* mg_load_elems's element parser: {f: BinData, v: BinData} (no f: skipped) */
static int hash_elem(void *coll, bson_iter_t *arr)
{
    bson_iter_t e;
    const uint8_t *fp = NULL, *vp = NULL;
    uint32_t fl = 0, vl = 0;
    bson_subtype_t st;
    if (!BSON_ITER_HOLDS_DOCUMENT(arr) || !bson_iter_recurse(arr, &e)) return FD_OK;
    while (bson_iter_next(&e)) {
        if (!BSON_ITER_HOLDS_BINARY(&e)) continue;
        if (!strcmp(bson_iter_key(&e), "f")) bson_iter_binary(&e, &st, &fl, &fp);
        else if (!strcmp(bson_iter_key(&e), "v")) bson_iter_binary(&e, &st, &vl, &vp);
    }
    if (!fp) return FD_OK;
    return hash_push(coll, (const char *)fp, fl, vp ? (const char *)vp : "", vl);
}

/* Look up a hash key; h gets its fields (pointing into m->doc). */
int mg_hash_load(mg_ctx *c, const resp_arg *key, mg_meta *m, mg_hash *h)
{
    memset(h, 0, sizeof *h);
    int s = mg_load_elems(c, key, m, MG_T_HASH, NULL, hash_elem, h);
    if (s != FD_OK) mg_hash_free(h);
    return s;
}

static void hash_keyat(const void *coll, size_t i, const char **p, size_t *l)
{
    const mg_field *f = &((const mg_hash *)coll)->a[i];
    *p = f->f; *l = f->fl;
}

static long hash_find(mg_hash *h, const char *f, size_t fl)
{
    return mg_ix_find(&h->ix, h, h->n, hash_keyat, f, fl);
}

/* Set field f to v (copied when copy); *created += 1 for a new field. */
static int hash_set(mg_hash *h, const char *f, size_t fl, const char *v, size_t vl, int copy, long long *created)
{
    char *own = NULL;
    if (copy) {
        own = malloc(vl ? vl : 1);
        if (!own) return FD_E_NOMEM;
        memcpy(own, v, vl);
        v = own;
    }
    long i = hash_find(h, f, fl);
    if (i >= 0) {
        free(h->a[i].own);
        h->a[i].v = v; h->a[i].vl = vl; h->a[i].own = own;
        return FD_OK;
    }
    if (hash_push(h, f, fl, v, vl) != FD_OK) { free(own); return FD_E_NOMEM; }
    h->a[h->n - 1].own = own;
    if (created) (*created)++;
    return FD_OK;
}

/* Write the hash back (delete the key when it has no field left). */
static int hash_save(mg_ctx *c, const resp_arg *key, const mg_meta *m, const mg_hash *h)
{
    if (!h->n && m->expanded != 2) return mg_coll_delete(c, key, m);   /* (a part of a big one: mg_coll_write) */
    bson_t d = BSON_INITIALIZER, arr, e;
    bson_append_utf8(&d, "type", -1, "hash", -1);
    bson_append_array_begin(&d, "value", -1, &arr);
    for (size_t i = 0; i < h->n; i++) {
        char idx[16];
        const char *ks;
        bson_uint32_to_string((uint32_t)i, &ks, idx, sizeof idx);
        bson_append_document_begin(&arr, ks, -1, &e);
        bson_append_binary(&e, "f", -1, BSON_SUBTYPE_BINARY, (const uint8_t *)h->a[i].f, (uint32_t)h->a[i].fl);
        bson_append_binary(&e, "v", -1, BSON_SUBTYPE_BINARY, (const uint8_t *)h->a[i].v, (uint32_t)h->a[i].vl);
        bson_append_document_end(&arr, &e);
    }
    bson_append_array_end(&d, &arr);
    if (m->live && m->expire) bson_append_date_time(&d, "expireAt", -1, m->expire);
    int s = mg_coll_write(c, key, m, &d);
    bson_destroy(&d);
    return s;
}

/* ---------------------------------------------------------------- fd_coll_io
 * The commands are storage/value/hash.c's; this is the store: the hash's
 * document loaded (a big hash: only the named fields, mg_big.c), changed
 * here and written back by save. */

typedef struct mg_hk {
    const resp_arg *key;          /* first: mg_coll_gone */
    mg_meta m;
    mg_hash h;
} mg_hk;
_Static_assert(sizeof(mg_hk) <= sizeof(fd_coll_hk), "mg_hk fits fd_coll_hk");

static int hk_open(void *hp, const resp_arg *key, int how, int named, int step, fd_coll_hk *b, int *exists)
{
    mg_ctx *c = hp;
    mg_hk *x = (mg_hk *)b->b;
    memset(x, 0, sizeof *x);
    (void)how;                    /* (no STORE form reads a hash) */
    x->key = key;
    if (named >= 0) mg_named(c, named < c->argc ? named : c->argc, step);   /* a big hash: only these fields */
    int s = mg_hash_load(c, key, &x->m, &x->h);
    if (s != FD_OK) { memset(x, 0, sizeof *x); return s; }      /* (freed by the load) */
    *exists = x->m.live;
    return FD_OK;
}

static int hk_get(void *hp, fd_coll_hk *b, const char *f, size_t fl, const void **v, size_t *vl)
{
    (void)hp;
    mg_hk *x = (mg_hk *)b->b;
    long i = hash_find(&x->h, f, fl);
    if (i < 0) return FD_NOTFOUND;
    *v = x->h.a[i].v;
    *vl = x->h.a[i].vl;
    return FD_OK;
}

static int hk_put(void *hp, fd_coll_hk *b, const char *f, size_t fl, const void *v, size_t vl, int lasting,
                  int *created)
{
    (void)hp;
    long long n = 0;
    int s = hash_set(&((mg_hk *)b->b)->h, f, fl, v, vl, !lasting, &n);   /* an argument: kept as is, as before */
    *created = n > 0;
    return s;
}

static int hk_del(void *hp, fd_coll_hk *b, const char *f, size_t fl, int *removed)
{
    (void)hp;
    mg_hash *h = &((mg_hk *)b->b)->h;
    long i = hash_find(h, f, fl);
    if (i < 0) return FD_OK;
    free(h->a[i].own);
    memmove(&h->a[i], &h->a[i + 1], (h->n - (size_t)i - 1) * sizeof h->a[0]);
    h->n--;
    mg_ix_invalidate(&h->ix);
    *removed = 1;
    return FD_OK;
}

static long long hk_count(void *hp, fd_coll_hk *b)
{
    (void)hp;
    mg_hk *x = (mg_hk *)b->b;
    return mg_coll_count(&x->m, x->h.n);
}

static int hk_walk(void *hp, fd_coll_hk *b, fd_coll_walk_fn fn, void *arg)
{
    (void)hp;
    mg_hash *h = &((mg_hk *)b->b)->h;
    for (size_t i = 0; i < h->n; i++) {
        int s = fn(arg, h->a[i].f, h->a[i].fl, h->a[i].v, h->a[i].vl);
        if (s) return s;
    }
    return FD_OK;
}

static int hk_save(void *hp, fd_coll_hk *b)
{
    mg_hk *x = (mg_hk *)b->b;
    return hash_save(hp, x->key, &x->m, &x->h);
}


static void hk_close(void *hp, fd_coll_hk *b)
{
    (void)hp;
    mg_hk *x = (mg_hk *)b->b;
    mg_hash_free(&x->h);
    mg_meta_free(&x->m);
}


static const fd_coll_io hash_io = { hk_open, NULL, hk_get, hk_put, hk_del, hk_count, hk_walk,
                                    hk_save, mg_coll_gone, hk_close, mg_coll_event, NULL };

FD_HASH_HANDLERS(mg, mg_ctx, hash_io)

int mg_hash_save(mg_ctx *c, const resp_arg *key, const mg_meta *m, const mg_hash *h) { return hash_save(c, key, m, h); }
