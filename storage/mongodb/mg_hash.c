/* mg_hash.c — the MongoDB backend's hashes.
 *
 * { _id, type: "hash", value: [ {f: BinData, v: BinData}, ... ], expireAt? }
 * Field names are arbitrary bytes, so they are values, never MongoDB field
 * names. Each command reads the document, changes the array here and writes
 * it back (one replaceOne; the key's worker runs its commands in order, so
 * this is atomic for this frontdoor). Fields keep insertion order. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mg.h"

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

/* the result first: it may read h */

static int hset_generic(mg_ctx *c, int hmset)
{
    if (c->argc % 2 == 1) {
        FD_OUT(resp_add_errorf(c->out, "ERR wrong number of arguments for '%s' command", hmset ? "hmset" : "hset"));
        return FD_OK;
    }
    mg_meta m; mg_hash h;
    mg_named(c, 2, 1);     /* a big hash: only these fields (mg_big.c) */
    FD_TRY(mg_hash_load(c, &c->argv[1], &m, &h));
    long long created = 0;
    int s = FD_OK;
    for (int j = 2; j < c->argc && s == FD_OK; j += 2)
        s = hash_set(&h, c->argv[j].ptr, c->argv[j].len, c->argv[j + 1].ptr, c->argv[j + 1].len, 0, &created);
    if (s == FD_OK) s = hash_save(c, &c->argv[1], &m, &h);
    if (s == FD_OK) s = (hmset ? resp_add_status(c->out, "OK") : resp_add_int(c->out, created)) ? FD_E_NOMEM : FD_OK;
    HASH_DONE(s);
}

/* The keyspace event of a hash command, from its reply (Redis's t_hash.c):
 * always (any), or when an integer above 0; then "del" when the hash is
 * gone (HDEL). */
static int hash_events(mg_ctx *c, int s, size_t mark, const char *ev, int any, int dels)
{
    long long v = 0;
    if (s != FD_OK || !fd_notify_on(FD_NOTIFY_HASH | FD_NOTIFY_GENERIC)) return s;
    if (any ? (c->out->len <= mark || c->out->data[mark] == '-') : !(mg_reply_int(c, mark, &v) && v > 0)) return s;
    MG_NOTIFY_ARG(c, HASH, ev, 1);
    if (dels) mg_notify_del_if_gone(c, &c->argv[1]);
    return s;
}
#define HASH_EV(call, ev, any, dels) \
    do { size_t mark_ = c->out->len; return hash_events(c, (call), mark_, ev, any, dels); } while (0)

int mg_cmd_hset(mg_ctx *c)  { HASH_EV(hset_generic(c, 0), "hset", 1, 0); }
int mg_cmd_hmset(mg_ctx *c) { HASH_EV(hset_generic(c, 1), "hset", 1, 0); }
static int hsetnx_do(mg_ctx *c);
static int hdel_do(mg_ctx *c);
static int hincrby_do(mg_ctx *c);
static int hincrbyfloat_do(mg_ctx *c);
int mg_cmd_hsetnx(mg_ctx *c)       { HASH_EV(hsetnx_do(c), "hset", 0, 0); }
int mg_cmd_hdel(mg_ctx *c)         { HASH_EV(hdel_do(c), "hdel", 0, 1); }
int mg_cmd_hincrby(mg_ctx *c)      { HASH_EV(hincrby_do(c), "hincrby", 1, 0); }
int mg_cmd_hincrbyfloat(mg_ctx *c) { HASH_EV(hincrbyfloat_do(c), "hincrbyfloat", 1, 0); }

static int hsetnx_do(mg_ctx *c)
{
    mg_meta m; mg_hash h;
    mg_named(c, 2, 1);     /* a big hash: only these fields (mg_big.c) */
    FD_TRY(mg_hash_load(c, &c->argv[1], &m, &h));
    int s;
    if (hash_find(&h, c->argv[2].ptr, c->argv[2].len) >= 0) s = resp_add_int(c->out, 0) ? FD_E_NOMEM : FD_OK;
    else {
        s = hash_set(&h, c->argv[2].ptr, c->argv[2].len, c->argv[3].ptr, c->argv[3].len, 0, NULL);
        if (s == FD_OK) s = hash_save(c, &c->argv[1], &m, &h);
        if (s == FD_OK && resp_add_int(c->out, 1)) s = FD_E_NOMEM;
    }
    HASH_DONE(s);
}

static int hdel_do(mg_ctx *c)
{
    mg_meta m; mg_hash h;
    mg_named(c, 2, 1);     /* a big hash: only these fields (mg_big.c) */
    FD_TRY(mg_hash_load(c, &c->argv[1], &m, &h));
    long long n = 0;
    for (int j = 2; j < c->argc; j++) {
        long i = hash_find(&h, c->argv[j].ptr, c->argv[j].len);
        if (i < 0) continue;
        free(h.a[i].own);
        memmove(&h.a[i], &h.a[i + 1], (h.n - (size_t)i - 1) * sizeof h.a[0]);
        h.n--;
        mg_ix_invalidate(&h.ix);
        n++;
    }
    int s = n ? hash_save(c, &c->argv[1], &m, &h) : FD_OK;
    if (s == FD_OK && resp_add_int(c->out, n)) s = FD_E_NOMEM;
    HASH_DONE(s);
}

static int hincrby_do(mg_ctx *c)
{
    long long incr, v = 0;
    if (resp_str2ll(c->argv[3].ptr, c->argv[3].len, &incr) != 0) return FD_E_NOTINT;
    mg_meta m; mg_hash h;
    mg_named(c, 2, 1);     /* a big hash: only these fields (mg_big.c) */
    FD_TRY(mg_hash_load(c, &c->argv[1], &m, &h));
    long i = hash_find(&h, c->argv[2].ptr, c->argv[2].len);
    int s = FD_OK;
    if (i >= 0 && resp_str2ll(h.a[i].v, h.a[i].vl, &v) != 0) {
        s = resp_add_error(c->out, "ERR hash value is not an integer") ? FD_E_NOMEM : FD_OK;
        HASH_DONE(s);
    }
    if ((incr < 0 && v < 0 && incr < LLONG_MIN - v) || (incr > 0 && v > 0 && incr > LLONG_MAX - v))
        HASH_DONE(FD_E_OVERFLOW);
    v += incr;
    char buf[32];
    int n = resp_ll2str(buf, sizeof buf, v);
    s = hash_set(&h, c->argv[2].ptr, c->argv[2].len, buf, (size_t)n, 1, NULL);
    if (s == FD_OK) s = hash_save(c, &c->argv[1], &m, &h);
    if (s == FD_OK && resp_add_int(c->out, v)) s = FD_E_NOMEM;
    HASH_DONE(s);
}

static int hincrbyfloat_do(mg_ctx *c)
{
    long double v = 0, incr;
    if (resp_str2ld(c->argv[3].ptr, c->argv[3].len, &incr) != 0) return FD_E_NOTFLOAT;
    if (isnan(incr) || isinf(incr)) {
        FD_OUT(resp_add_error(c->out, "ERR value is NaN or Infinity"));
        return FD_OK;
    }
    mg_meta m; mg_hash h;
    mg_named(c, 2, 1);     /* a big hash: only these fields (mg_big.c) */
    FD_TRY(mg_hash_load(c, &c->argv[1], &m, &h));
    long i = hash_find(&h, c->argv[2].ptr, c->argv[2].len);
    int s = FD_OK;
    if (i >= 0 && resp_str2ld(h.a[i].v, h.a[i].vl, &v) != 0) {
        s = resp_add_error(c->out, "ERR hash value is not a float") ? FD_E_NOMEM : FD_OK;
        HASH_DONE(s);
    }
    v += incr;
    if (isnan(v) || isinf(v)) HASH_DONE(FD_E_NAN);
    size_t cap = 5 * 1024 + 64;
    char *buf = malloc(cap);
    if (!buf) HASH_DONE(FD_E_NOMEM);
    int n = resp_format_ld(buf, cap, v);
    if (n <= 0 || (size_t)n >= cap) { free(buf); HASH_DONE(FD_E_INTERNAL); }
    s = hash_set(&h, c->argv[2].ptr, c->argv[2].len, buf, (size_t)n, 1, NULL);
    if (s == FD_OK) s = hash_save(c, &c->argv[1], &m, &h);
    if (s == FD_OK && resp_add_bulk(c->out, buf, (size_t)n)) s = FD_E_NOMEM;
    free(buf);
    HASH_DONE(s);
}

int mg_cmd_hget(mg_ctx *c)
{
    mg_meta m; mg_hash h;
    mg_named(c, 2, 1);     /* a big hash: only these fields (mg_big.c) */
    FD_TRY(mg_hash_load(c, &c->argv[1], &m, &h));
    long i = hash_find(&h, c->argv[2].ptr, c->argv[2].len);
    int r = i >= 0 ? resp_add_bulk(c->out, h.a[i].v, h.a[i].vl) : resp_add_null(c->out);
    HASH_DONE(r ? FD_E_NOMEM : FD_OK);
}

int mg_cmd_hmget(mg_ctx *c)
{
    mg_meta m; mg_hash h;
    mg_named(c, 2, 1);     /* a big hash: only these fields (mg_big.c) */
    FD_TRY(mg_hash_load(c, &c->argv[1], &m, &h));
    int r = resp_add_array(c->out, c->argc - 2);
    for (int j = 2; j < c->argc && !r; j++) {
        long i = hash_find(&h, c->argv[j].ptr, c->argv[j].len);
        r = i >= 0 ? resp_add_bulk(c->out, h.a[i].v, h.a[i].vl) : resp_add_null(c->out);
    }
    HASH_DONE(r ? FD_E_NOMEM : FD_OK);
}

int mg_cmd_hlen(mg_ctx *c)
{
    mg_meta m; mg_hash h;
    mg_named(c, c->argc, 1);     /* a big hash: only these fields (mg_big.c) */
    FD_TRY(mg_hash_load(c, &c->argv[1], &m, &h));
    HASH_DONE(resp_add_int(c->out, mg_coll_count(&m, h.n)) ? FD_E_NOMEM : FD_OK);
}

int mg_cmd_hexists(mg_ctx *c)
{
    mg_meta m; mg_hash h;
    mg_named(c, 2, 1);     /* a big hash: only these fields (mg_big.c) */
    FD_TRY(mg_hash_load(c, &c->argv[1], &m, &h));
    HASH_DONE(resp_add_int(c->out, hash_find(&h, c->argv[2].ptr, c->argv[2].len) >= 0) ? FD_E_NOMEM : FD_OK);
}

int mg_cmd_hstrlen(mg_ctx *c)
{
    mg_meta m; mg_hash h;
    mg_named(c, 2, 1);     /* a big hash: only these fields (mg_big.c) */
    FD_TRY(mg_hash_load(c, &c->argv[1], &m, &h));
    long i = hash_find(&h, c->argv[2].ptr, c->argv[2].len);
    HASH_DONE(resp_add_int(c->out, i >= 0 ? (long long)h.a[i].vl : 0) ? FD_E_NOMEM : FD_OK);
}

static int getall_generic(mg_ctx *c, int keys, int vals)
{
    mg_meta m; mg_hash h;
    FD_TRY(mg_hash_load(c, &c->argv[1], &m, &h));
    int r = keys && vals ? resp_add_map(c->out, (long long)h.n) : resp_add_array(c->out, (long long)h.n);
    for (size_t i = 0; i < h.n && !r; i++) {
        if (keys) r = resp_add_bulk(c->out, h.a[i].f, h.a[i].fl);
        if (!r && vals) r = resp_add_bulk(c->out, h.a[i].v, h.a[i].vl);
    }
    HASH_DONE(r ? FD_E_NOMEM : FD_OK);
}

int mg_cmd_hgetall(mg_ctx *c) { return getall_generic(c, 1, 1); }
int mg_cmd_hkeys(mg_ctx *c)   { return getall_generic(c, 1, 0); }
int mg_cmd_hvals(mg_ctx *c)   { return getall_generic(c, 0, 1); }

int mg_hash_save(mg_ctx *c, const resp_arg *key, const mg_meta *m, const mg_hash *h) { return hash_save(c, key, m, h); }
