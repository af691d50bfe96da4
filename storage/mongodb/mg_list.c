/* mg_list.c — the MongoDB backend's lists, and the array-of-BinData
 * loader/saver they share with sets (mg_set.c).
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
static int push_fast(mg_ctx *c, int left, int *done)
{
    bson_t u = BSON_INITIALIZER, push, val, each, inc, fields = BSON_INITIALIZER, reply;
    bson_append_document_begin(&u, "$push", -1, &push);
    bson_append_document_begin(&push, "value", -1, &val);
    bson_append_array_begin(&val, "$each", -1, &each);
    int add = c->argc - 2;
    for (int j = 0; j < add; j++) {
        char idx[16];
        const char *ks;
        bson_uint32_to_string((uint32_t)j, &ks, idx, sizeof idx);
        const resp_arg *a = &c->argv[left ? c->argc - 1 - j : 2 + j];
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
    int s = list_fam(c, &c->argv[1], &q, &u, &fields, 1, &reply, &v, done);
    bson_destroy(&q);
    if (s == FD_OK && *done) {
        if (bson_iter_recurse(&v, &nit) && bson_iter_find(&nit, "n") && BSON_ITER_HOLDS_NUMBER(&nit))
            s = resp_add_int(c->out, bson_iter_as_int64(&nit)) ? FD_E_NOMEM : FD_OK;
        else s = FD_E_CORRUPT;
    }
    bson_destroy(&reply);
    bson_destroy(&fields);
    bson_destroy(&u);
    return s;
}

/* LPOP/RPOP (no count) of a list that keeps at least one element: $pop,
 * $inc n -1, the old first/last element projected with $slice. */
static int pop_fast(mg_ctx *c, int left, int *done)
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
    int s = list_fam(c, &c->argv[1], &q, &u, &fields, 0, &reply, &v, done);
    if (s == FD_OK && *done) {
        s = FD_E_CORRUPT;
        if (bson_iter_recurse(&v, &val) && bson_iter_find(&val, "value") && BSON_ITER_HOLDS_ARRAY(&val) &&
            bson_iter_recurse(&val, &arr) && bson_iter_next(&arr) && BSON_ITER_HOLDS_BINARY(&arr)) {
            bson_subtype_t st; uint32_t n; const uint8_t *p;
            bson_iter_binary(&arr, &st, &n, &p);
            s = resp_add_bulk(c->out, p, n) ? FD_E_NOMEM : FD_OK;
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

static int push_generic(mg_ctx *c, int left, int xx)
{
    int done;
    FD_TRY(push_fast(c, left, &done));
    if (done) return FD_OK;
    mg_meta m; mg_list L;
    FD_TRY(mg_lookup(c, &c->argv[1], &m, 0));
    if (m.live && m.big && m.type == MG_T_LIST) {      /* a big list: the new positions only */
        long long len;
        int s = mg_big_list_push(c, &c->argv[1], &m, left, &c->argv[2], c->argc - 2, &len);
        mg_meta_free(&m);
        FD_TRY(s);
        FD_OUT(resp_add_int(c->out, len));
        return FD_OK;
    }
    mg_meta_free(&m);
    FD_TRY(list_load(c, &c->argv[1], &m, &L));
    if (!m.live && xx) LIST_DONE(resp_add_int(c->out, 0) ? FD_E_NOMEM : FD_OK);
    size_t add = (size_t)(c->argc - 2);
    if (mg_list_reserve(&L, L.n + add) != FD_OK) LIST_DONE(FD_E_NOMEM);
    if (left) {
        memmove(L.p + add, L.p, L.n * sizeof *L.p);
        memmove(L.l + add, L.l, L.n * sizeof *L.l);
        for (size_t j = 0; j < add; j++) {          /* LPUSH a b c: c first */
            L.p[add - 1 - j] = c->argv[2 + j].ptr;
            L.l[add - 1 - j] = c->argv[2 + j].len;
        }
    } else {
        for (size_t j = 0; j < add; j++) { L.p[L.n + j] = c->argv[2 + j].ptr; L.l[L.n + j] = c->argv[2 + j].len; }
    }
    L.n += add;
    int s = list_save(c, &c->argv[1], &m, &L);
    if (s == FD_OK && resp_add_int(c->out, (long long)L.n)) s = FD_E_NOMEM;
    LIST_DONE(s);
}

/* The keyspace events of a list command, from its reply (Redis's t_list.c):
 * ev on argv[1] when the reply is an integer above 0 (ints) or anything
 * but a null/empty one; then "del" when the list is gone (pops). */
static int list_events(mg_ctx *c, int s, size_t mark, const char *ev, int ints, int pops)
{
    long long v = 0;
    if (s != FD_OK || !fd_notify_on(FD_NOTIFY_LIST | FD_NOTIFY_GENERIC)) return s;
    if (ints ? !(mg_reply_int(c, mark, &v) && v > 0) : !mg_reply_some(c, mark)) return s;
    MG_NOTIFY_ARG(c, LIST, ev, 1);
    if (pops) mg_notify_del_if_gone(c, &c->argv[1]);
    return s;
}
#define LIST_EV(call, ev, ints, pops) \
    do { size_t mark_ = c->out->len; return list_events(c, (call), mark_, ev, ints, pops); } while (0)

int mg_cmd_lpush(mg_ctx *c)  { LIST_EV(push_generic(c, 1, 0), "lpush", 1, 0); }
int mg_cmd_rpush(mg_ctx *c)  { LIST_EV(push_generic(c, 0, 0), "rpush", 1, 0); }
int mg_cmd_lpushx(mg_ctx *c) { LIST_EV(push_generic(c, 1, 1), "lpush", 1, 0); }
int mg_cmd_rpushx(mg_ctx *c) { LIST_EV(push_generic(c, 0, 1), "rpush", 1, 0); }

static int pop_generic(mg_ctx *c, int left)
{
    long long count = 1;
    int hascount = c->argc == 3;
    if (c->argc > 3) {
        FD_OUT(resp_add_errorf(c->out, "ERR wrong number of arguments for '%s' command", left ? "lpop" : "rpop"));
        return FD_OK;
    }
    if (hascount && (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &count) != 0 || count < 0))
        return FD_E_RANGE_POSITIVE;
    mg_meta m; mg_list L;
    if (!hascount) {
        int done;
        FD_TRY(pop_fast(c, left, &done));
        if (done) return FD_OK;
        FD_TRY(mg_lookup(c, &c->argv[1], &m, 0));
        if (m.live && m.big && m.type == MG_T_LIST) {  /* a big list: one element */
            int s = mg_big_list_pop(c, &c->argv[1], &m, left, c->out);
            mg_meta_free(&m);
            return s;
        }
        mg_meta_free(&m);
    }
    FD_TRY(list_load(c, &c->argv[1], &m, &L));
    if (!m.live) LIST_DONE((hascount ? resp_add_null_array(c->out) : resp_add_null(c->out)) ? FD_E_NOMEM : FD_OK);
    if (hascount && count == 0) LIST_DONE(resp_add_array(c->out, 0) ? FD_E_NOMEM : FD_OK);
    if (count > (long long)L.n) count = (long long)L.n;
    size_t mark = c->out->len;
    int r = hascount ? resp_add_array(c->out, count) : 0;
    for (long long i = 0; i < count && !r; i++) {
        size_t at = left ? (size_t)i : L.n - 1 - (size_t)i;
        r = resp_add_bulk(c->out, L.p[at], L.l[at]);
    }
    if (r) { c->out->len = mark; LIST_DONE(FD_E_NOMEM); }
    if (left) {
        memmove(L.p, L.p + count, (L.n - (size_t)count) * sizeof *L.p);
        memmove(L.l, L.l + count, (L.n - (size_t)count) * sizeof *L.l);
    }
    L.n -= (size_t)count;
    int s = list_save(c, &c->argv[1], &m, &L);
    if (s != FD_OK) c->out->len = mark;
    LIST_DONE(s);
}

int mg_cmd_lpop(mg_ctx *c) { LIST_EV(pop_generic(c, 1), "lpop", 0, 1); }
int mg_cmd_rpop(mg_ctx *c) { LIST_EV(pop_generic(c, 0), "rpop", 0, 1); }

int mg_cmd_llen(mg_ctx *c)
{
    mg_meta m; mg_list L;
    long long len;
    FD_TRY(list_load_slice(c, &c->argv[1], &m, &L, 0, 1, &len));
    if (!m.live || len >= 0) LIST_DONE(resp_add_int(c->out, m.live ? len : 0) ? FD_E_NOMEM : FD_OK);
    mg_list_free(&L);
    mg_meta_free(&m);
    FD_TRY(list_load(c, &c->argv[1], &m, &L));
    LIST_DONE(resp_add_int(c->out, (long long)L.n) ? FD_E_NOMEM : FD_OK);
}

int mg_cmd_lindex(mg_ctx *c)
{
    mg_meta m; mg_list L;
    long long idx, len;
    if (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &idx) == 0 && idx >= 0 && idx < INT32_MAX) {
        /* one element from the head: only it comes back */
        FD_TRY(list_load_slice(c, &c->argv[1], &m, &L, idx, 1, &len));
        if (!m.live) LIST_DONE(resp_add_null(c->out) ? FD_E_NOMEM : FD_OK);
        LIST_DONE((L.n ? resp_add_bulk(c->out, L.p[0], L.l[0]) : resp_add_null(c->out)) ? FD_E_NOMEM : FD_OK);
    }
    FD_TRY(list_load(c, &c->argv[1], &m, &L));
    if (!m.live) LIST_DONE(resp_add_null(c->out) ? FD_E_NOMEM : FD_OK);
    long long n = (long long)L.n;
    if (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &idx) != 0) LIST_DONE(FD_E_NOTINT);
    if (idx < 0) idx += n;
    if (idx < 0 || idx >= n) LIST_DONE(resp_add_null(c->out) ? FD_E_NOMEM : FD_OK);
    LIST_DONE(resp_add_bulk(c->out, L.p[idx], L.l[idx]) ? FD_E_NOMEM : FD_OK);
}

int mg_cmd_lrange(mg_ctx *c)
{
    long long start, end;
    if (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &start) != 0 ||
        resp_str2ll(c->argv[3].ptr, c->argv[3].len, &end) != 0) return FD_E_NOTINT;
    mg_meta m; mg_list L;
    if ((start < 0 || end < 0) && start > -INT32_MAX && end > -INT32_MAX) {
        /* from the tail: the length first (a projected read, no element),
         * then the range from the head, as below (a big list reads only
         * those positions) */
        long long len;
        FD_TRY(list_load_slice(c, &c->argv[1], &m, &L, 0, 1, &len));
        int live = m.live;
        mg_list_free(&L);
        mg_meta_free(&m);
        if (!live) { FD_OUT(resp_add_array(c->out, 0)); return FD_OK; }   /* one lookup: one keymiss */
        if (len >= 0) {
            if (start < 0) start += len;
            if (end < 0) end += len;
            if (start < 0) start = 0;
            if (start > end || start >= len) { FD_OUT(resp_add_array(c->out, 0)); return FD_OK; }
        }
    }
    if (start >= 0 && start < INT32_MAX && end >= start && end - start < INT32_MAX) {
        /* a range from the head: only its elements come back */
        long long len;
        FD_TRY(list_load_slice(c, &c->argv[1], &m, &L, start, end - start + 1, &len));
        int r = resp_add_array(c->out, (long long)L.n);
        for (size_t i = 0; i < L.n && !r; i++) r = resp_add_bulk(c->out, L.p[i], L.l[i]);
        LIST_DONE(r ? FD_E_NOMEM : FD_OK);
    }
    FD_TRY(list_load(c, &c->argv[1], &m, &L));
    long long n = (long long)L.n;
    if (start < 0) start += n;
    if (end < 0) end += n;
    if (start < 0) start = 0;
    if (start > end || start >= n) LIST_DONE(resp_add_array(c->out, 0) ? FD_E_NOMEM : FD_OK);
    if (end >= n) end = n - 1;
    int r = resp_add_array(c->out, end - start + 1);
    for (long long i = start; i <= end && !r; i++) r = resp_add_bulk(c->out, L.p[i], L.l[i]);
    LIST_DONE(r ? FD_E_NOMEM : FD_OK);
}

static int lset_do(mg_ctx *c)
{
    mg_meta m; mg_list L;
    FD_TRY(list_load(c, &c->argv[1], &m, &L));
    if (!m.live) LIST_DONE(FD_E_NOKEY);
    long long idx, n = (long long)L.n;
    if (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &idx) != 0) LIST_DONE(FD_E_NOTINT);
    if (idx < 0) idx += n;
    if (idx < 0 || idx >= n) LIST_DONE(FD_E_INDEX);
    L.p[idx] = c->argv[3].ptr;
    L.l[idx] = c->argv[3].len;
    int s = list_save(c, &c->argv[1], &m, &L);
    if (s == FD_OK && resp_add_status(c->out, "OK")) s = FD_E_NOMEM;
    LIST_DONE(s);
}

static int ltrim_do(mg_ctx *c)
{
    long long start, end;
    if (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &start) != 0 ||
        resp_str2ll(c->argv[3].ptr, c->argv[3].len, &end) != 0) return FD_E_NOTINT;
    if (start == 0 && end >= 0 && end < INT32_MAX) {
        /* LTRIM key 0 N (a capped list): $push of nothing with $slice N+1,
         * $min n, in one round trip; the list keeps at least one element */
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
        int done;
        int s = list_fam(c, &c->argv[1], NULL, &u, &fields, 1, &reply, &v, &done);
        bson_destroy(&reply);
        bson_destroy(&fields);
        bson_destroy(&u);
        FD_TRY(s);
        if (done) { FD_OUT(resp_add_status(c->out, "OK")); return FD_OK; }
    }
    mg_meta m; mg_list L;
    FD_TRY(list_load(c, &c->argv[1], &m, &L));
    if (!m.live) LIST_DONE(resp_add_status(c->out, "OK") ? FD_E_NOMEM : FD_OK);
    long long n = (long long)L.n;
    if (start < 0) start += n;
    if (end < 0) end += n;
    if (start < 0) start = 0;
    int s = FD_OK;
    if (start > end || start >= n) {
        L.n = 0;
    } else {
        if (end >= n) end = n - 1;
        memmove(L.p, L.p + start, (size_t)(end - start + 1) * sizeof *L.p);
        memmove(L.l, L.l + start, (size_t)(end - start + 1) * sizeof *L.l);
        L.n = (size_t)(end - start + 1);
    }
    if (L.n != (size_t)n) s = list_save(c, &c->argv[1], &m, &L);
    if (s == FD_OK && resp_add_status(c->out, "OK")) s = FD_E_NOMEM;
    LIST_DONE(s);
}

static int lrem_do(mg_ctx *c)
{
    long long toremove;
    if (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &toremove) != 0) return FD_E_NOTINT;
    mg_meta m; mg_list L;
    FD_TRY(list_load(c, &c->argv[1], &m, &L));
    if (!m.live) LIST_DONE(resp_add_int(c->out, 0) ? FD_E_NOMEM : FD_OK);
    const resp_arg *el = &c->argv[3];
    int rev = toremove < 0;
    uint64_t limit = toremove == 0 ? UINT64_MAX : rev ? (uint64_t)0 - (uint64_t)toremove : (uint64_t)toremove;
    uint64_t removed = 0;
    unsigned char *gone = calloc(L.n ? L.n : 1, 1);
    if (!gone) LIST_DONE(FD_E_NOMEM);
    for (size_t k = 0; k < L.n && removed < limit; k++) {
        size_t i = rev ? L.n - 1 - k : k;
        if (L.l[i] == el->len && memcmp(L.p[i], el->ptr, el->len) == 0) { gone[i] = 1; removed++; }
    }
    size_t w = 0;
    for (size_t i = 0; i < L.n; i++)
        if (!gone[i]) { L.p[w] = L.p[i]; L.l[w] = L.l[i]; w++; }
    free(gone);
    L.n = w;
    int s = removed ? list_save(c, &c->argv[1], &m, &L) : FD_OK;
    if (s == FD_OK && resp_add_int(c->out, (long long)removed)) s = FD_E_NOMEM;
    LIST_DONE(s);
}

static int linsert_do(mg_ctx *c)
{
    int after;
    if (resp_arg_is(&c->argv[2], "after")) after = 1;
    else if (resp_arg_is(&c->argv[2], "before")) after = 0;
    else return FD_E_SYNTAX;
    mg_meta m; mg_list L;
    FD_TRY(list_load(c, &c->argv[1], &m, &L));
    if (!m.live) LIST_DONE(resp_add_int(c->out, 0) ? FD_E_NOMEM : FD_OK);
    const resp_arg *pivot = &c->argv[3], *val = &c->argv[4];
    size_t i = 0;
    while (i < L.n && !(L.l[i] == pivot->len && memcmp(L.p[i], pivot->ptr, pivot->len) == 0)) i++;
    if (i == L.n) LIST_DONE(resp_add_int(c->out, -1) ? FD_E_NOMEM : FD_OK);
    if (after) i++;
    if (mg_list_reserve(&L, L.n + 1) != FD_OK) LIST_DONE(FD_E_NOMEM);
    memmove(L.p + i + 1, L.p + i, (L.n - i) * sizeof *L.p);
    memmove(L.l + i + 1, L.l + i, (L.n - i) * sizeof *L.l);
    L.p[i] = val->ptr;
    L.l[i] = val->len;
    L.n++;
    int s = list_save(c, &c->argv[1], &m, &L);
    if (s == FD_OK && resp_add_int(c->out, (long long)L.n)) s = FD_E_NOMEM;
    LIST_DONE(s);
}

int mg_cmd_lset(mg_ctx *c)    { LIST_EV(lset_do(c), "lset", 0, 0); }
int mg_cmd_lrem(mg_ctx *c)    { LIST_EV(lrem_do(c), "lrem", 1, 1); }
int mg_cmd_linsert(mg_ctx *c) { LIST_EV(linsert_do(c), "linsert", 1, 0); }

int mg_cmd_ltrim(mg_ctx *c)
{
    /* Redis raises ltrim on any existing list, trimmed or not */
    int live = 0;
    if (fd_notify_on(FD_NOTIFY_LIST | FD_NOTIFY_GENERIC)) FD_TRY(mg_key_live(c, &c->argv[1], &live));
    int s = ltrim_do(c);
    if (s == FD_OK && live && c->out->data[c->out->len - 5] == '+') {
        MG_NOTIFY_ARG(c, LIST, "ltrim", 1);
        mg_notify_del_if_gone(c, &c->argv[1]);
    }
    return s;
}

int mg_cmd_lpos(mg_ctx *c)
{
    fd_lpos o;
    int replied;
    int st = fd_parse_lpos(c->argv, c->argc, &o, c->out, &replied);
    if (st != FD_OK || replied) return st;
    long long rank = o.rank, count = o.count, maxlen = o.maxlen;
    int rev = o.rev, nolimit = o.nolimit;
    mg_meta m; mg_list L;
    FD_TRY(list_load(c, &c->argv[1], &m, &L));
    if (!m.live) LIST_DONE((count != -1 ? resp_add_array(c->out, 0) : resp_add_null(c->out)) ? FD_E_NOMEM : FD_OK);
    const resp_arg *el = &c->argv[2];
    long long n = (long long)L.n, matches = 0, emitted = 0;
    long long *hit = malloc((size_t)(n ? n : 1) * sizeof *hit);
    if (!hit) LIST_DONE(FD_E_NOMEM);
    for (long long index = 0; index < n && (maxlen == 0 || index < maxlen); index++) {
        size_t i = (size_t)(rev ? n - 1 - index : index);
        if (L.l[i] != el->len || memcmp(L.p[i], el->ptr, el->len) != 0) continue;
        if (++matches < rank) continue;
        hit[emitted++] = (long long)i;
        if (count == -1 || (count && !nolimit && emitted >= count)) break;
    }
    int r;
    if (count == -1) r = emitted ? resp_add_int(c->out, hit[0]) : resp_add_null(c->out);
    else {
        r = resp_add_array(c->out, emitted);
        for (long long k = 0; k < emitted && !r; k++) r = resp_add_int(c->out, hit[k]);
    }
    free(hit);
    LIST_DONE(r ? FD_E_NOMEM : FD_OK);
}

static int lmove_generic(mg_ctx *c, int from_left, int to_left)
{
    mg_meta m, dm; mg_list L, D;
    FD_TRY(list_load(c, &c->argv[1], &m, &L));
    if (!m.live) LIST_DONE(resp_add_null(c->out) ? FD_E_NOMEM : FD_OK);
    int same = c->argv[1].len == c->argv[2].len && memcmp(c->argv[1].ptr, c->argv[2].ptr, c->argv[1].len) == 0;
    mg_meta *dmp = &m;
    mg_list *dp = &L;
    if (!same) {
        int s = list_load(c, &c->argv[2], &dm, &D);
        if (s != FD_OK) LIST_DONE(s);
        dmp = &dm;
        dp = &D;
    }
    size_t at = from_left ? 0 : L.n - 1;
    const char *v = L.p[at];
    size_t vl = L.l[at];
    if (from_left) { memmove(L.p, L.p + 1, (L.n - 1) * sizeof *L.p); memmove(L.l, L.l + 1, (L.n - 1) * sizeof *L.l); }
    L.n--;
    int s = mg_list_reserve(dp, dp->n + 1);
    if (s == FD_OK) {
        if (to_left) {
            memmove(dp->p + 1, dp->p, dp->n * sizeof *dp->p);
            memmove(dp->l + 1, dp->l, dp->n * sizeof *dp->l);
            dp->p[0] = v; dp->l[0] = vl;
        } else {
            dp->p[dp->n] = v; dp->l[dp->n] = vl;
        }
        dp->n++;
        /* the destination first: a failure then loses nothing */
        s = list_save(c, &c->argv[2], dmp, dp);
        if (s == FD_OK && !same) s = list_save(c, &c->argv[1], &m, &L);
    }
    if (s == FD_OK && resp_add_bulk(c->out, v, vl)) s = FD_E_NOMEM;
    if (s == FD_OK) {
        /* Redis's lmoveGenericCommand: the push, then the pop, then the source's del */
        MG_NOTIFY_ARG(c, LIST, to_left ? "lpush" : "rpush", 2);
        MG_NOTIFY_ARG(c, LIST, from_left ? "lpop" : "rpop", 1);
        if (!same && !L.n) MG_NOTIFY_ARG(c, GENERIC, "del", 1);
    }
    if (!same) { mg_list_free(&D); mg_meta_free(&dm); }
    LIST_DONE(s);
}

int mg_cmd_rpoplpush(mg_ctx *c) { return lmove_generic(c, 0, 1); }

int mg_cmd_lmove(mg_ctx *c)
{
    int from_left, to_left;
    FD_TRY(fd_parse_lmove(c->argv, &from_left, &to_left));
    return lmove_generic(c, from_left, to_left);
}
