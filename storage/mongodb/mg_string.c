/* mg_string.c — a key's own document: the store of storage/value/
 * strings.c's commands (fd_str_io) and of value/keys.c's (fd_key_io: DEL,
 * EXISTS, TYPE, the expiry commands; one adapter for both), with MongoDB's own
 * one-round-trip paths as its hooks: a plain SET is one replace without a
 * read, INCR & co. one findAndModify ($inc) on a live integer, MGET one
 * find of every key, MSET one bulk write, DEL one delete of every key.
 *
 * { _id, type: "string", value: Int64 | BinData, expireAt? }: see mg.h. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mg.h"
#include "../value/strings.h"
#include "../value/string_ops.h"
#include "../value/keys.h"

typedef struct mg_sk {
    mg_meta m;
    char   *scratch;
} mg_sk;
_Static_assert(sizeof(mg_sk) <= sizeof(fd_str_sk), "mg_sk fits fd_str_sk");

static int sk_open(void *h, const resp_arg *key, int want, fd_str_sk *b, fd_str_val *v)
{
    mg_ctx *c = h;
    mg_sk *x = (mg_sk *)b->b;
    x->scratch = NULL;
    int read = c->read;
    if (want & FD_STR_SOURCE) c->read = 1;        /* lookupKeyRead: its keymiss */
    want &= ~FD_STR_SOURCE;
    int s = want == FD_STR_STRING ? mg_lookup_string(c, key, &x->m) : mg_lookup(c, key, &x->m, want == FD_STR_ANY_VALUE);
    c->read = read;
    if (s != FD_OK) memset(&x->m, 0, sizeof x->m);     /* (freed by the lookup) */
    v->found = x->m.found;
    v->live = x->m.live;
    v->string = v->live && x->m.type == MG_T_STRING;
    v->v = x->m.val;
    v->len = x->m.vlen;
    v->expire = x->m.expire;
    return s;
}

static int sk_write(void *h, fd_str_sk *b, const resp_arg *key, int64_t expire, const char *a, size_t al,
                    const char *p, size_t pl)
{
    (void)b;                      /* (the old value is this command's copy of the document) */
    return mg_write_string(h, key, expire, a, al, p, pl);
}

static int sk_del(void *h, fd_str_sk *b, const resp_arg *key) { (void)b; return mg_delete(h, key); }

static int sk_expire(void *h, fd_str_sk *b, const resp_arg *key, int64_t at)
{
    (void)b;
    return mg_set_expire(h, key, at);
}

static char *sk_scratch(void *h, fd_str_sk *b, size_t n)
{
    (void)h;
    mg_sk *x = (mg_sk *)b->b;
    char *p = realloc(x->scratch, n ? n : 1);
    if (p) x->scratch = p;
    return p;
}

static void sk_close(void *h, fd_str_sk *b)
{
    (void)h;
    mg_sk *x = (mg_sk *)b->b;
    free(x->scratch);
    mg_meta_free(&x->m);
}

static int sk_set_blind(void *h, const resp_arg *key, int64_t expire, const resp_arg *val)
{
    return mg_write_string(h, key, expire, val->ptr, val->len, NULL, 0);
}

/* INCRBY's one round trip: an existing live integer that will not
 * overflow, in one findAndModify: {_id, type: string, value <= MAX-incr
 * (numbers only), live}. */
static int sk_incr(void *h, const resp_arg *key, long long incr, long long *out, int *done)
{
    mg_ctx *c = h;
    bson_t q = BSON_INITIALIZER, rng, u = BSON_INITIALIZER, x, reply;
    mg_append_key(&q, "_id", key->ptr, key->len);
    bson_append_utf8(&q, "type", -1, "string", -1);
    bson_append_document_begin(&q, "value", -1, &rng);
    if (incr >= 0) bson_append_int64(&rng, "$lte", -1, LLONG_MAX - incr);
    else bson_append_int64(&rng, "$gte", -1, LLONG_MIN - incr);
    bson_append_document_end(&q, &rng);
    mg_append_live(&q, c->now_ms);
    bson_append_document_begin(&u, "$inc", -1, &x);
    bson_append_int64(&x, "value", -1, incr);
    bson_append_document_end(&u, &x);
    mongoc_find_and_modify_opts_t *fam = mongoc_find_and_modify_opts_new();
    mongoc_find_and_modify_opts_set_update(fam, &u);
    mongoc_find_and_modify_opts_set_flags(fam, MONGOC_FIND_AND_MODIFY_RETURN_NEW);
    bool ok = mongoc_collection_find_and_modify_with_opts(c->coll, &q, fam, &reply, &c->err);
    int found = 0;
    long long v = 0;
    if (ok) {
        bson_iter_t it;
        if (bson_iter_init(&it, &reply) && bson_iter_find_descendant(&it, "value.value", &it)) {
            if (BSON_ITER_HOLDS_INT64(&it)) { v = bson_iter_int64(&it); found = 1; }
            else if (BSON_ITER_HOLDS_INT32(&it)) { v = bson_iter_int32(&it); found = 1; }
            else if (BSON_ITER_HOLDS_DOUBLE(&it)) { v = (long long)bson_iter_double(&it); found = 1; }
        }
    }
    bson_destroy(&reply);
    mongoc_find_and_modify_opts_destroy(fam);
    bson_destroy(&q);
    bson_destroy(&u);
    if (!ok) return mg_fail(c);
    *done = found;
    *out = v;
    return FD_OK;
}

static int sk_mget(void *h, int argc, const resp_arg *argv, resp_out *out)
{
    (void)argv;                   /* (mg_lookup_many reads the command's) */
    mg_ctx *c = h;
    int n = argc - 1;
    mg_meta *m = calloc((size_t)n, sizeof *m);
    if (!m) return FD_E_NOMEM;
    int s = mg_lookup_many(c, 1, 1, m, n, 1, NULL);
    if (s == FD_OK) {
        if (resp_add_array(out, n)) s = FD_E_NOMEM;
        for (int i = 0; i < n && s == FD_OK; i++) {
            int r = (m[i].live && m[i].type == MG_T_STRING) ? resp_add_bulk(out, m[i].val, m[i].vlen)
                                                           : resp_add_null(out);
            if (r) s = FD_E_NOMEM;
        }
        for (int i = 0; i < n; i++) mg_meta_free(&m[i]);
    }
    free(m);
    return s;
}


/* MSET's pairs in one bulk write of upserting replaces. */
static int sk_mset(void *h, int argc, const resp_arg *argv)
{
    mg_ctx *c = h;
    mongoc_bulk_operation_t *bulk = mongoc_collection_create_bulk_operation_with_opts(c->coll, NULL);
    bson_t opts = BSON_INITIALIZER;
    bson_append_bool(&opts, "upsert", -1, true);
    int s = FD_OK;
    for (int j = 1; j < argc && s == FD_OK; j += 2) {
        bson_t q = BSON_INITIALIZER, d = BSON_INITIALIZER;
        mg_append_key(&q, "_id", argv[j].ptr, argv[j].len);
        bson_append_utf8(&d, "type", -1, "string", -1);
        mg_append_value(&d, argv[j + 1].ptr, argv[j + 1].len);
        if (!mongoc_bulk_operation_replace_one_with_opts(bulk, &q, &d, &opts, &c->err)) s = mg_fail(c);
        bson_destroy(&q);
        bson_destroy(&d);
    }
    if (s == FD_OK && !mongoc_bulk_operation_execute(bulk, NULL, &c->err)) s = mg_fail(c);
    mongoc_bulk_operation_destroy(bulk);
    bson_destroy(&opts);
    return s;
}

static int sk_any_live(void *h, int argc, const resp_arg *argv, int *any);

static const fd_str_io str_io = { sk_open, sk_write, sk_del, sk_expire, sk_scratch, sk_close, mg_coll_event,
                                  sk_set_blind, sk_incr, sk_mget, sk_mset, sk_any_live, NULL };

FD_STR_HANDLERS(mg, mg_ctx, str_io)
FD_SOP_HANDLERS(mg, mg_ctx, str_io)

static const char *sk_type(void *h, fd_str_sk *b) { (void)h; return mg_type_names[((mg_sk *)b->b)->m.type]; }

/* DEL: one find of every key, one deleteMany of those found (a stream's
 * or a big collection's side documents after). */
static int sk_del_many(void *h, int argc, const resp_arg *argv, unsigned char *dead)
{
    (void)argv;                   /* (mg_lookup_many reads the command's) */
    mg_ctx *c = h;
    int n = argc - 1;
    mg_meta *m = calloc((size_t)n, sizeof *m);
    unsigned char *dup = calloc((size_t)n, 1);
    if (!m || !dup) { free(m); free(dup); return FD_E_NOMEM; }
    int s = mg_lookup_many(c, 1, 1, m, n, 0, dup);
    if (s != FD_OK) { free(m); free(dup); return s; }
    int found = 0;
    for (int i = 0; i < n; i++) {
        if (dup[i]) continue;                 /* DEL a a counts a once */
        if (m[i].found) found = 1;
        if (m[i].live) dead[i] = 1;
    }
    if (found) {
        bson_t q = BSON_INITIALIZER, in, arr;
        bson_append_document_begin(&q, "_id", -1, &in);
        bson_append_array_begin(&in, "$in", -1, &arr);
        for (int i = 0, k = 0; i < n; i++) {
            if (!m[i].found || dup[i]) continue;
            char idx[16];
            const char *ks;
            bson_uint32_to_string((uint32_t)k++, &ks, idx, sizeof idx);
            mg_append_key(&arr, ks, c->argv[1 + i].ptr, c->argv[1 + i].len);
        }
        bson_append_array_end(&in, &arr);
        bson_append_document_end(&q, &in);
        if (!mongoc_collection_delete_many(c->coll, &q, NULL, NULL, &c->err)) s = mg_fail(c);
        bson_destroy(&q);
    }
    for (int i = 0; i < n; i++) {
        if (s == FD_OK && m[i].found && !dup[i] && m[i].type == MG_T_STREAM) s = mg_stream_drop(c, &m[i]);
        if (s == FD_OK && m[i].found && !dup[i] && m[i].big) s = mg_big_drop(c, m[i].big);
        mg_meta_free(&m[i]);
    }
    free(m);
    free(dup);
    return s;
}

/* How many of the keys argv[1], argv[1 + step]... (n of them) are live:
 * one find of every key. */
static int live_keys(mg_ctx *c, int step, int n, long long *live)
{
    mg_meta *m = calloc((size_t)n, sizeof *m);
    if (!m) return FD_E_NOMEM;
    int s = mg_lookup_many(c, 1, step, m, n, 0, NULL);
    if (s == FD_OK)
        for (int i = 0; i < n; i++) { if (m[i].live) (*live)++; mg_meta_free(&m[i]); }
    free(m);
    return s;
}

/* EXISTS / TOUCH (TOUCH has no access time to update here). */
static int sk_count_live(void *h, int argc, const resp_arg *argv, long long *live)
{
    (void)argv;                   /* (mg_lookup_many reads the command's) */
    return live_keys(h, 1, argc - 1, live);
}

/* MSETNX's check. */
static int sk_any_live(void *h, int argc, const resp_arg *argv, int *any)
{
    (void)argv;
    long long n = 0;
    int s = live_keys(h, 2, (argc - 1) / 2, &n);
    *any = n > 0;
    return s;
}

static const fd_key_io key_io = { sk_open, sk_del, sk_expire, sk_type, sk_close, mg_coll_event,
                                  sk_del_many, sk_count_live };

FD_KEY_HANDLERS(mg, mg_ctx, key_io)
