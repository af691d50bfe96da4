/* mg_list.c — the MongoDB backend's lists: the store of
 * storage/value/list.c's commands (fd_list_io), and the array-of-BinData
 * loader/saver lists share with sets (mg_set.c).
 *
 * { _id, type: "list", value: [ BinData, ... ], n: Int64, expireAt? }: the
 * elements in order, n their count. The hot commands (LPUSH/RPUSH/LPOP/RPOP
 * without count, LRANGE/LINDEX from the head, LLEN, LTRIM 0 N) are one
 * findAndModify or one projected read; the others, as hashes: read, change
 * here, write the whole document back. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mg.h"
#include "../value/list.h"

void mg_list_free(mg_list *L) { free(L->p); free(L->l); mg_ix_free(&L->ix); memset(L, 0, sizeof *L); }

int mg_list_reserve(mg_list *L, size_t n)
{
    size_t pcap = L->cap, lcap = L->cap;
    const char **np = mg_reserve(L->p, &pcap, n, sizeof *np);
    if (!np) return FD_E_NOMEM;
    L->p = np;
    size_t *nl = mg_reserve(L->l, &lcap, n, sizeof *nl);
    if (!nl) return FD_E_NOMEM;
    L->l = nl;
    L->cap = pcap;
    return FD_OK;
}

/* mg_load_elems's element parser for an array of BinData (others skipped) */
static int array_elem(void *coll, bson_iter_t *e)
{
    mg_list *L = coll;
    if (!BSON_ITER_HOLDS_BINARY(e)) return FD_OK;
    bson_subtype_t st; uint32_t n; const uint8_t *p;
    bson_iter_binary(e, &st, &n, &p);
    if (mg_list_reserve(L, L->n + 1) != FD_OK) return FD_E_NOMEM;
    L->p[L->n] = (const char *)p;
    L->l[L->n++] = n;
    return FD_OK;
}

/* An array of BinData (a list's elements, a set's members) of a key of
 * the given type. */
static int array_load_proj(mg_ctx *c, const resp_arg *key, mg_meta *m, mg_list *L, int type,
                           const bson_t *projection)
{
    memset(L, 0, sizeof *L);
    int s = mg_load_elems(c, key, m, type, projection, array_elem, L);
    if (s != FD_OK) mg_list_free(L);
    return s;
}

int mg_array_load(mg_ctx *c, const resp_arg *key, mg_meta *m, mg_list *L, int type)
{
    return array_load_proj(c, key, m, L, type, NULL);
}

int mg_array_save(mg_ctx *c, const resp_arg *key, const mg_meta *m, const mg_list *L, int type)
{
    if (!L->n && m->expanded != 2) return mg_coll_delete(c, key, m);   /* (a part of a big one: mg_coll_write) */
    bson_t d = BSON_INITIALIZER, arr;
    bson_append_utf8(&d, "type", -1, mg_type_names[type], -1);
    bson_append_array_begin(&d, "value", -1, &arr);
    for (size_t i = 0; i < L->n; i++) {
        char idx[16];
        const char *ks;
        bson_uint32_to_string((uint32_t)i, &ks, idx, sizeof idx);
        bson_append_binary(&arr, ks, -1, BSON_SUBTYPE_BINARY, (const uint8_t *)L->p[i], (uint32_t)L->l[i]);
    }
    bson_append_array_end(&d, &arr);
    if (type == MG_T_LIST) bson_append_int64(&d, "n", -1, (int64_t)L->n);   /* the fast paths' length */
    if (m->live && m->expire) bson_append_date_time(&d, "expireAt", -1, m->expire);
    int s = mg_coll_write(c, key, m, &d);
    bson_destroy(&d);
    return s;
}

static int list_load(mg_ctx *c, const resp_arg *key, mg_meta *m, mg_list *L)
{
    return mg_array_load(c, key, m, L, MG_T_LIST);
}

static int list_save(mg_ctx *c, const resp_arg *key, const mg_meta *m, const mg_list *L)
{
    return mg_array_save(c, key, m, L, MG_T_LIST);
}

/* The hot list commands in one round trip, without the array (the
 * "$push/$pop" layout of MongoDB's own docs): a findAndModify filtered on a
 * live list that has its length `n` (every list write keeps it). When that
 * filter matches nothing (no key, an expired one, another type, a list
 * written before `n` existed, a pop that would empty the list), the
 * general read-modify-write path answers: it gives Redis's replies for
 * those cases. Returns FD_OK with *done set when the fast path answered. */
static int list_fam(mg_ctx *c, const resp_arg *key, const bson_t *extra_q, const bson_t *update,
                    const bson_t *fields, int return_new, bson_t *reply, bson_iter_t *value, int *done)
{
    bson_t q = BSON_INITIALIZER, x;
    mg_append_key(&q, "_id", key->ptr, key->len);
    bson_append_utf8(&q, "type", -1, "list", -1);
    if (extra_q) bson_concat(&q, extra_q);
    else {
        bson_append_document_begin(&q, "n", -1, &x);
        bson_append_bool(&x, "$exists", -1, true);
        bson_append_document_end(&q, &x);
    }
    mg_append_live(&q, c->now_ms);
    mongoc_find_and_modify_opts_t *fam = mongoc_find_and_modify_opts_new();
    mongoc_find_and_modify_opts_set_update(fam, update);
    mongoc_find_and_modify_opts_set_fields(fam, fields);
    if (return_new) mongoc_find_and_modify_opts_set_flags(fam, MONGOC_FIND_AND_MODIFY_RETURN_NEW);
    bool ok = mongoc_collection_find_and_modify_with_opts(c->coll, &q, fam, reply, &c->err);
    mongoc_find_and_modify_opts_destroy(fam);
    bson_destroy(&q);
    *done = 0;
    if (!ok) return mg_fail(c);
    if (bson_iter_init_find(value, reply, "value") && BSON_ITER_HOLDS_DOCUMENT(value)) *done = 1;
    return FD_OK;
}

/* LPUSH/RPUSH/LPUSHX/RPUSHX on an existing list: $push (at $position 0
 * for the left, in reverse: LPUSH l a b c puts c first), $inc n. */
static int push_fast(mg_ctx *c, const resp_arg *key, int left, int first, int argc, const resp_arg *argv,
                     long long *len, int *done)
{
    bson_t u = BSON_INITIALIZER, push, val, each, inc, fields = BSON_INITIALIZER, reply;
    bson_append_document_begin(&u, "$push", -1, &push);
    bson_append_document_begin(&push, "value", -1, &val);
    bson_append_array_begin(&val, "$each", -1, &each);
    int add = argc - first;
    for (int j = 0; j < add; j++) {
        char idx[16];
        const char *ks;
        bson_uint32_to_string((uint32_t)j, &ks, idx, sizeof idx);
        const resp_arg *a = &argv[left ? argc - 1 - j : first + j];
        bson_append_binary(&each, ks, -1, BSON_SUBTYPE_BINARY, (const uint8_t *)a->ptr, (uint32_t)a->len);
    }
    bson_append_array_end(&val, &each);
    if (left) bson_append_int32(&val, "$position", -1, 0);
    bson_append_document_end(&push, &val);
    bson_append_document_end(&u, &push);
    bson_append_document_begin(&u, "$inc", -1, &inc);
    bson_append_int64(&inc, "n", -1, add);
    bson_append_document_end(&u, &inc);
    bson_append_int32(&fields, "n", -1, 1);
    /* only while the list stays within the threshold: the push that
     * crosses it takes the general path, which converts it (mg_big.c) */
    bson_t q = BSON_INITIALIZER, x;
    bson_append_document_begin(&q, "n", -1, &x);
    bson_append_int64(&x, "$lte", -1, (int64_t)(mg_big_threshold(c) - add));
    bson_append_document_end(&q, &x);
    bson_iter_t v, nit;
    int s = list_fam(c, key, &q, &u, &fields, 1, &reply, &v, done);
    bson_destroy(&q);
    if (s == FD_OK && *done) {
        if (bson_iter_recurse(&v, &nit) && bson_iter_find(&nit, "n") && BSON_ITER_HOLDS_NUMBER(&nit))
            *len = bson_iter_as_int64(&nit);
        else s = FD_E_CORRUPT;
    }
    bson_destroy(&reply);
    bson_destroy(&fields);
    bson_destroy(&u);
    return s;
}

/* LPOP/RPOP (no count) of a list that keeps at least one element: $pop,
 * $inc n -1, the old first/last element projected with $slice. */
static int pop_fast(mg_ctx *c, const resp_arg *key, int left, resp_out *out, int *done)
{
    bson_t q = BSON_INITIALIZER, x, u = BSON_INITIALIZER, pop, inc, fields = BSON_INITIALIZER, reply;
    bson_append_document_begin(&q, "n", -1, &x);
    bson_append_int64(&x, "$gt", -1, 1);
    bson_append_document_end(&q, &x);
    bson_append_document_begin(&u, "$pop", -1, &pop);
    bson_append_int32(&pop, "value", -1, left ? -1 : 1);
    bson_append_document_end(&u, &pop);
    bson_append_document_begin(&u, "$inc", -1, &inc);
    bson_append_int64(&inc, "n", -1, -1);
    bson_append_document_end(&u, &inc);
    bson_append_document_begin(&fields, "value", -1, &x);
    bson_append_int32(&x, "$slice", -1, left ? 1 : -1);
    bson_append_document_end(&fields, &x);
    bson_iter_t v, arr, val;
    int s = list_fam(c, key, &q, &u, &fields, 0, &reply, &v, done);
    if (s == FD_OK && *done) {
        s = FD_E_CORRUPT;
        if (bson_iter_recurse(&v, &val) && bson_iter_find(&val, "value") && BSON_ITER_HOLDS_ARRAY(&val) &&
            bson_iter_recurse(&val, &arr) && bson_iter_next(&arr) && BSON_ITER_HOLDS_BINARY(&arr)) {
            bson_subtype_t st; uint32_t n; const uint8_t *p;
            bson_iter_binary(&arr, &st, &n, &p);
            s = resp_add_bulk(out, p, n) ? FD_E_NOMEM : FD_OK;
        }
    }
    bson_destroy(&reply);
    bson_destroy(&fields);
    bson_destroy(&u);
    bson_destroy(&q);
    return s;
}

/* Load a list, only elements [from, from + count) of it when count > 0
 * ({value: {$slice: [from, count]}}: LRANGE/LINDEX with indexes from the
 * head). *len gets the list's length from `n` (-1 when the document has
 * none). */
static int list_load_slice(mg_ctx *c, const resp_arg *key, mg_meta *m, mg_list *L,
                           long long from, long long count, long long *len)
{
    bson_t proj = BSON_INITIALIZER, x, a;
    /* the fields named: alone, $slice means "and every other field" to
     * MongoDB but "only this one" to the emulator */
    bson_append_int32(&proj, "type", -1, 1);
    bson_append_int32(&proj, "expireAt", -1, 1);
    bson_append_int32(&proj, "n", -1, 1);
    bson_append_int32(&proj, "big", -1, 1);       /* a big list (mg_big.c) */
    bson_append_int32(&proj, "bn", -1, 1);
    bson_append_int32(&proj, "blh", -1, 1);
    bson_append_document_begin(&proj, "value", -1, &x);
    bson_append_array_begin(&x, "$slice", -1, &a);
    bson_append_int64(&a, "0", -1, from);
    bson_append_int64(&a, "1", -1, count);
    bson_append_array_end(&x, &a);
    bson_append_document_end(&proj, &x);
    int s = array_load_proj(c, key, m, L, MG_T_LIST, &proj);
    bson_destroy(&proj);
    *len = -1;
    if (s == FD_OK && m->live && m->big) {
        /* a big list (mg_big.c): those positions only */
        if ((s = mg_big_list_slice(c, m, from, count)) != FD_OK) { mg_list_free(L); mg_meta_free(m); return s; }
        bson_iter_t it, arr;
        if (bson_iter_init_find(&it, m->doc, "value") && BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &arr))
            while (s == FD_OK && bson_iter_next(&arr)) s = array_elem(L, &arr);
        if (s != FD_OK) { mg_list_free(L); mg_meta_free(m); return s; }
        *len = m->bn;
        return FD_OK;
    }
    bson_iter_t it;
    if (s == FD_OK && m->live && bson_iter_init_find(&it, m->doc, "n") && BSON_ITER_HOLDS_NUMBER(&it))
        *len = bson_iter_as_int64(&it);
    return s;
}

/* ---------------------------------------------------------------- fd_list_io
 * The list as loaded: whole (any change), or the slice [from, from + L.n)
 * of a list of len elements (reads from the head: a projected $slice). */

typedef struct mg_lk {
    const resp_arg *key;
    mg_meta  m;
    mg_list  L;
    long long from, len;
    int      whole;
} mg_lk;
_Static_assert(sizeof(mg_lk) <= sizeof(fd_list_lk), "mg_lk fits fd_list_lk");

static void lk_drop(mg_lk *x)
{
    mg_list_free(&x->L);
    mg_meta_free(&x->m);
    memset(&x->m, 0, sizeof x->m);
}

static int lk_whole(mg_ctx *c, mg_lk *x)
{
    int s = list_load(c, x->key, &x->m, &x->L);
    if (s != FD_OK) { memset(&x->m, 0, sizeof x->m); return s; }   /* (freed by the load) */
    x->from = 0;
    x->len = x->m.live ? (long long)x->L.n : 0;
    x->whole = 1;
    return FD_OK;
}

/* [from, from + count) with the length (count 0: the length only); a list
 * written before `n` existed: whole. */
static int lk_slice(mg_ctx *c, mg_lk *x, long long from, long long count)
{
    long long len;
    int s = list_load_slice(c, x->key, &x->m, &x->L, from, count ? count : 1, &len);
    if (s != FD_OK) { memset(&x->m, 0, sizeof x->m); return s; }
    if (x->m.live && len < 0) {
        lk_drop(x);
        return lk_whole(c, x);
    }
    x->from = from;
    x->len = x->m.live ? len : 0;
    x->whole = 0;
    return FD_OK;
}

static int lk_open(void *h, const resp_arg *key, long long from, long long count, fd_list_lk *b, long long *len)
{
    mg_lk *x = (mg_lk *)b->b;
    memset(x, 0, sizeof *x);
    x->key = key;
    int s = count < 0 || from >= INT32_MAX || count >= INT32_MAX ? lk_whole(h, x) : lk_slice(h, x, from, count);
    *len = x->len;
    return s;
}

static int lk_need(void *h, fd_list_lk *b, long long from, long long count)
{
    mg_lk *x = (mg_lk *)b->b;
    if (x->whole || (from >= x->from && from + count <= x->from + (long long)x->L.n)) return FD_OK;
    mg_ctx *c = h;
    int read = c->read;
    c->read = 0;                  /* the list is there: no second keymiss */
    lk_drop(x);
    int s = from < INT32_MAX && count < INT32_MAX ? lk_slice(c, x, from, count) : lk_whole(c, x);
    c->read = read;
    return s;
}

static int lk_get(void *h, fd_list_lk *b, long long idx, const void **v, size_t *vl)
{
    mg_lk *x = (mg_lk *)b->b;
    FD_TRY(lk_need(h, b, idx, 1));
    size_t i = (size_t)(idx - x->from);
    if (i >= x->L.n) return FD_E_CORRUPT;
    *v = x->L.p[i];
    *vl = x->L.l[i];
    return FD_OK;
}

static int lk_walk(void *h, fd_list_lk *b, long long idx, int rev, fd_list_walk_fn fn, void *arg)
{
    (void)h;
    mg_lk *x = (mg_lk *)b->b;
    long long n = (long long)x->L.n, first = rev ? x->len - 1 - idx - x->from : idx - x->from;
    for (long long i = first; i >= 0 && i < n; i += rev ? -1 : 1) {
        int s = fn(arg, x->L.p[i], x->L.l[i]);
        if (s) return s;
    }
    return FD_OK;
}

/* The changes need the whole list (list.c opens it so for them). */
#define WHOLE(x) do { if (!(x)->whole) return FD_E_INTERNAL; } while (0)

static int lk_push(void *h, fd_list_lk *b, int left, const void *v, size_t vl)
{
    (void)h;
    mg_lk *x = (mg_lk *)b->b;
    WHOLE(x);
    mg_list *L = &x->L;
    if (mg_list_reserve(L, L->n + 1) != FD_OK) return FD_E_NOMEM;
    if (left) {
        memmove(L->p + 1, L->p, L->n * sizeof *L->p);
        memmove(L->l + 1, L->l, L->n * sizeof *L->l);
    }
    size_t at = left ? 0 : L->n;
    L->p[at] = v;
    L->l[at] = vl;
    L->n++;
    x->len++;
    return FD_OK;
}

static int lk_trim(void *h, fd_list_lk *b, int left, long long n)
{
    (void)h;
    mg_lk *x = (mg_lk *)b->b;
    WHOLE(x);
    mg_list *L = &x->L;
    if (left) {
        memmove(L->p, L->p + n, (L->n - (size_t)n) * sizeof *L->p);
        memmove(L->l, L->l + n, (L->n - (size_t)n) * sizeof *L->l);
    }
    L->n -= (size_t)n;
    x->len -= n;
    return FD_OK;
}

static int lk_set(void *h, fd_list_lk *b, long long idx, const void *v, size_t vl)
{
    (void)h;
    mg_lk *x = (mg_lk *)b->b;
    WHOLE(x);
    x->L.p[idx] = v;
    x->L.l[idx] = vl;
    return FD_OK;
}

static int lk_insert(void *h, fd_list_lk *b, long long idx, const void *v, size_t vl)
{
    (void)h;
    mg_lk *x = (mg_lk *)b->b;
    WHOLE(x);
    mg_list *L = &x->L;
    size_t i = (size_t)idx;
    if (mg_list_reserve(L, L->n + 1) != FD_OK) return FD_E_NOMEM;
    memmove(L->p + i + 1, L->p + i, (L->n - i) * sizeof *L->p);
    memmove(L->l + i + 1, L->l + i, (L->n - i) * sizeof *L->l);
    L->p[i] = v;
    L->l[i] = vl;
    L->n++;
    x->len++;
    return FD_OK;
}

static int lk_remove(void *h, fd_list_lk *b, const char *el, size_t ell, uint64_t limit, int rev, uint64_t *removed)
{
    (void)h;
    mg_lk *x = (mg_lk *)b->b;
    WHOLE(x);
    mg_list *L = &x->L;
    unsigned char *gone = calloc(L->n ? L->n : 1, 1);
    if (!gone) return FD_E_NOMEM;
    for (size_t k = 0; k < L->n && *removed < limit; k++) {
        size_t i = rev ? L->n - 1 - k : k;
        if (L->l[i] == ell && memcmp(L->p[i], el, ell) == 0) { gone[i] = 1; (*removed)++; }
    }
    size_t w = 0;
    for (size_t i = 0; i < L->n; i++)
        if (!gone[i]) { L->p[w] = L->p[i]; L->l[w] = L->l[i]; w++; }
    free(gone);
    L->n = w;
    x->len = (long long)w;
    return FD_OK;
}

static int lk_save(void *h, fd_list_lk *b)
{
    mg_lk *x = (mg_lk *)b->b;
    WHOLE(x);
    return list_save(h, x->key, &x->m, &x->L);
}

static void lk_close(void *h, fd_list_lk *b)
{
    (void)h;
    lk_drop((mg_lk *)b->b);
}

/* LPUSH & co.: $push on an existing list within the threshold, or the new
 * positions of a big list (mg_big.c). */
static int push_quick(void *h, const resp_arg *key, int left, int first, int argc, const resp_arg *argv,
                      long long *len, int *done)
{
    mg_ctx *c = h;
    FD_TRY(push_fast(c, key, left, first, argc, argv, len, done));
    if (*done) return FD_OK;
    mg_meta m;
    FD_TRY(mg_lookup(c, key, &m, 0));
    int s = FD_OK;
    if (m.live && m.big && m.type == MG_T_LIST) {
        s = mg_big_list_push(c, key, &m, left, &argv[first], argc - first, len);
        *done = s == FD_OK;
    }
    mg_meta_free(&m);
    return s;
}

/* LPOP/RPOP without a count: $pop, or one element of a big list. */
static int pop_quick(void *h, const resp_arg *key, int left, resp_out *out, int *done)
{
    mg_ctx *c = h;
    FD_TRY(pop_fast(c, key, left, out, done));
    if (*done) return FD_OK;
    mg_meta m;
    FD_TRY(mg_lookup(c, key, &m, 0));
    int s = FD_OK;
    if (m.live && m.big && m.type == MG_T_LIST) {
        s = mg_big_list_pop(c, key, &m, left, out);
        *done = s == FD_OK;
    }
    mg_meta_free(&m);
    return s;
}

/* LTRIM key 0 N (a capped list): $push of nothing with $slice N+1, $min n,
 * in one round trip. */
static int ltrim_quick(void *h, const resp_arg *key, long long end, int *done)
{
    *done = 0;
    if (end >= INT32_MAX) return FD_OK;
    bson_t u = BSON_INITIALIZER, push, val, each, mn, fields = BSON_INITIALIZER, reply;
    bson_append_document_begin(&u, "$push", -1, &push);
    bson_append_document_begin(&push, "value", -1, &val);
    bson_append_array_begin(&val, "$each", -1, &each);
    bson_append_array_end(&val, &each);
    bson_append_int64(&val, "$slice", -1, end + 1);
    bson_append_document_end(&push, &val);
    bson_append_document_end(&u, &push);
    bson_append_document_begin(&u, "$min", -1, &mn);
    bson_append_int64(&mn, "n", -1, end + 1);
    bson_append_document_end(&u, &mn);
    bson_append_int32(&fields, "n", -1, 1);
    bson_iter_t v;
    int s = list_fam(h, key, NULL, &u, &fields, 1, &reply, &v, done);
    bson_destroy(&reply);
    bson_destroy(&fields);
    bson_destroy(&u);
    return s;
}

static const fd_list_io list_io = { lk_open, lk_need, lk_get, lk_walk, NULL, lk_push, lk_trim, lk_set, lk_insert,
                                    lk_remove, lk_save, lk_close, mg_coll_event,
                                    push_quick, pop_quick, ltrim_quick, mg_key_gone };

FD_LIST_HANDLERS(mg, mg_ctx, list_io)
