/* mg_keys.c — the MongoDB backend's key commands that walk or move its
 * documents (KEYS, RANDOMKEY, RENAME, DBSIZE, FLUSHDB), and the listing of
 * every live key that KEYS, RANDOMKEY and SCAN (mg_scan.c) read. DEL,
 * EXISTS, TYPE and the expiry commands: storage/value/keys.c over
 * mg_string.c's adapter. */
#include <stdlib.h>
#include <string.h>

#include "mg.h"
#include "../clock.h"

/* Every live key (with its type and 64-bit scan hash). */

static int keyent_cmp(const void *a, const void *b)
{
    const mg_keyent *x = a, *y = b;
    if (x->h != y->h) return x->h < y->h ? -1 : 1;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return memcmp(x->key, y->key, x->len);
}

void mg_keys_free(mg_keyent *v, size_t n)
{
    for (size_t i = 0; i < n; i++) free(v[i].key);
    free(v);
}

int mg_all_keys(mg_ctx *c, mg_keyent **out, size_t *count, int sorted)
{
    /* no server-side filter: expiry is checked here (a filter on expireAt
     * would be a collection scan in MongoDB as well; this way the scan has
     * nothing to evaluate) */
    bson_t q = BSON_INITIALIZER, opts = BSON_INITIALIZER, proj;
    bson_append_document_begin(&opts, "projection", -1, &proj);
    bson_append_int32(&proj, "type", -1, 1);
    bson_append_int32(&proj, "expireAt", -1, 1);
    bson_append_document_end(&opts, &proj);
    mongoc_cursor_t *cur = mongoc_collection_find_with_opts(c->coll, &q, &opts, NULL);
    const bson_t *doc;
    mg_keyent *v = NULL;
    size_t n = 0, cap = 0;
    int s = FD_OK;
    while (s == FD_OK && mongoc_cursor_next(cur, &doc)) {
        bson_iter_t it;
        if (!bson_iter_init_find(&it, doc, "_id") || !BSON_ITER_HOLDS_BINARY(&it)) continue;
        bson_subtype_t st; uint32_t kl; const uint8_t *kp;
        bson_iter_binary(&it, &st, &kl, &kp);
        bson_iter_t xi;
        int64_t xp = 0;
        if (bson_iter_init_find(&xi, doc, "expireAt") && BSON_ITER_HOLDS_DATE_TIME(&xi))
            xp = bson_iter_date_time(&xi);
        if (xp && xp <= c->now_ms) continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            mg_keyent *nv = realloc(v, nc * sizeof *nv);
            if (!nv) { s = FD_E_NOMEM; break; }
            v = nv; cap = nc;
        }
        mg_keyent *e = &v[n];
        e->key = malloc(kl ? kl : 1);
        if (!e->key) { s = FD_E_NOMEM; break; }
        memcpy(e->key, kp, kl);
        e->len = kl;
        e->expire = xp;
        e->h = mg_hash_key((const char *)kp, kl) | 1;   /* never 0: 0 is "done" */
        e->type = MG_T_STRING;
        if (bson_iter_init_find(&it, doc, "type") && BSON_ITER_HOLDS_UTF8(&it)) {
            int t = mg_type_of(bson_iter_utf8(&it, NULL));
            if (t) e->type = t;
        }
        n++;
    }
    if (s == FD_OK && mongoc_cursor_error(cur, &c->err)) s = mg_fail(c);
    mongoc_cursor_destroy(cur);
    bson_destroy(&q);
    bson_destroy(&opts);
    if (s != FD_OK) { mg_keys_free(v, n); return s; }
    if (sorted && n > 1) qsort(v, n, sizeof *v, keyent_cmp);
    *out = v;
    *count = n;
    return FD_OK;
}

int mg_cmd_keys(mg_ctx *c)
{
    const resp_arg *pat = &c->argv[1];
    int all = pat->len == 1 && pat->ptr[0] == '*';
    mg_keyent *v; size_t n;
    FD_TRY(mg_all_keys(c, &v, &n, 0));
    long long hits = 0;
    for (size_t i = 0; i < n; i++)
        if (all || resp_glob_match(pat->ptr, pat->len, v[i].key, v[i].len, 0)) hits++;
    int r = resp_add_array(c->out, hits);
    for (size_t i = 0; i < n && !r; i++)
        if (all || resp_glob_match(pat->ptr, pat->len, v[i].key, v[i].len, 0))
            r = resp_add_bulk(c->out, v[i].key, v[i].len);
    mg_keys_free(v, n);
    return r ? FD_E_NOMEM : FD_OK;
}

/* RANDOMKEY: $sample of a few documents, the first live one; when all of
 * them had expired, a live key chosen from the full list. */
int mg_cmd_randomkey(mg_ctx *c)
{
    bson_t pipe = BSON_INITIALIZER, st, smp, pr;
    bson_append_document_begin(&pipe, "0", -1, &st);
    bson_append_document_begin(&st, "$sample", -1, &smp);
    bson_append_int32(&smp, "size", -1, 16);
    bson_append_document_end(&st, &smp);
    bson_append_document_end(&pipe, &st);
    bson_append_document_begin(&pipe, "1", -1, &st);
    bson_append_document_begin(&st, "$project", -1, &pr);
    bson_append_int32(&pr, "expireAt", -1, 1);
    bson_append_document_end(&st, &pr);
    bson_append_document_end(&pipe, &st);
    mongoc_cursor_t *cur = mongoc_collection_aggregate(c->coll, MONGOC_QUERY_NONE, &pipe, NULL, NULL);
    const bson_t *doc;
    int found = 0, any = 0, r = 0;
    while (mongoc_cursor_next(cur, &doc)) {
        bson_iter_t it;
        any = 1;
        if (found || !bson_iter_init_find(&it, doc, "_id") || !BSON_ITER_HOLDS_BINARY(&it)) continue;
        bson_subtype_t s2; uint32_t kl; const uint8_t *kp;
        bson_iter_binary(&it, &s2, &kl, &kp);
        bson_iter_t xi;
        if (bson_iter_init_find(&xi, doc, "expireAt") && BSON_ITER_HOLDS_DATE_TIME(&xi) &&
            bson_iter_date_time(&xi) <= c->now_ms) continue;
        r = resp_add_bulk(c->out, kp, kl);
        found = 1;
    }
    int bad = mongoc_cursor_error(cur, &c->err);
    mongoc_cursor_destroy(cur);
    bson_destroy(&pipe);
    if (bad) return mg_fail(c);
    if (!found && any) {
        mg_keyent *v; size_t n;
        FD_TRY(mg_all_keys(c, &v, &n, 0));
        if (n) {
            size_t pick = (size_t)mg_hash_key((const char *)&c->now_ms, sizeof c->now_ms) % n;
            r = resp_add_bulk(c->out, v[pick].key, v[pick].len);
            found = 1;
        }
        mg_keys_free(v, n);
    }
    if (!found) r = resp_add_null(c->out);
    return r ? FD_E_NOMEM : FD_OK;
}

static int rename_generic(mg_ctx *c, int nx)
{
    const resp_arg *sa = &c->argv[1], *da = &c->argv[2];
    mg_meta sm;
    bson_t raw = BSON_INITIALIZER;           /* a projection that keeps everything: no expansion */
    bson_append_int32(&raw, "_fd_none", -1, 0);
    int s = mg_lookup_proj(c, sa, &sm, &raw);
    bson_destroy(&raw);
    FD_TRY(s);
    if (!sm.live) { mg_meta_free(&sm); return FD_E_NOKEY; }
    if (sa->len == da->len && memcmp(sa->ptr, da->ptr, sa->len) == 0) {
        mg_meta_free(&sm);
        FD_OUT(nx ? resp_add_int(c->out, 0) : resp_add_status(c->out, "OK"));
        return FD_OK;
    }
    if (nx) {
        int live;
        if ((s = mg_key_live(c, da, &live)) != FD_OK) { mg_meta_free(&sm); return s; }
        if (live) { mg_meta_free(&sm); FD_OUT(resp_add_int(c->out, 0)); return FD_OK; }
    }
    /* the source's document under the new _id, then the source goes; a
     * big collection's members follow its key document (sv), so only that
     * moves, and the source's key document alone is deleted */
    int64_t big = sm.big;
    s = mg_write_doc_copy(c, da, sm.doc);
    mg_meta_free(&sm);
    if (s == FD_OK && big) {
        bson_t q = BSON_INITIALIZER;
        mg_append_key(&q, "_id", sa->ptr, sa->len);
        if (!mongoc_collection_delete_one(c->coll, &q, NULL, NULL, &c->err)) s = mg_fail(c);
        bson_destroy(&q);
    } else if (s == FD_OK) {
        s = mg_delete(c, sa);
    }
    FD_TRY(s);
    MG_NOTIFY(c, GENERIC, "rename_from", sa->ptr, sa->len);
    MG_NOTIFY(c, GENERIC, "rename_to", da->ptr, da->len);
    FD_OUT(nx ? resp_add_int(c->out, 1) : resp_add_status(c->out, "OK"));
    return FD_OK;
}

int mg_cmd_rename(mg_ctx *c)   { return rename_generic(c, 0); }
int mg_cmd_renamenx(mg_ctx *c) { return rename_generic(c, 1); }

/* DBSIZE: every document minus the expired ones still there; the second
 * count is answered by the TTL index (expireAt <= now). */
int mg_cmd_dbsize(mg_ctx *c)
{
    bson_t q = BSON_INITIALIZER, x;
    int64_t all = mg_count(c->coll, NULL, &c->err);
    if (all < 0) { bson_destroy(&q); return mg_fail(c); }
    bson_append_document_begin(&q, "expireAt", -1, &x);
    bson_append_date_time(&x, "$lte", -1, c->now_ms);
    bson_append_document_end(&q, &x);
    int64_t dead = mg_count(c->coll, &q, &c->err);
    bson_destroy(&q);
    if (dead < 0) return mg_fail(c);
    FD_OUT(resp_add_int(c->out, all - dead > 0 ? all - dead : 0));
    return FD_OK;
}

int mg_cmd_flushdb(mg_ctx *c)
{
    if (c->argc > 2 || (c->argc == 2 && !resp_arg_is(&c->argv[1], "async") && !resp_arg_is(&c->argv[1], "sync")))
        return FD_E_SYNTAX;
    bson_t q = BSON_INITIALIZER;
    bool ok = mongoc_collection_delete_many(c->coll, &q, NULL, NULL, &c->err);
    if (ok) {   /* the streams' sub-documents (mg_stream.c) */
        mongoc_collection_t *sc = mongoc_client_get_collection(c->client, c->b->dbname, MG_STREAM_COLL);
        ok = sc && mongoc_collection_delete_many(sc, &q, NULL, NULL, &c->err);
        if (sc) mongoc_collection_destroy(sc);
    }
    if (ok) {   /* big collections' members (mg_big.c) */
        mongoc_collection_t *bc = mg_big_coll(c);
        ok = bc && mongoc_collection_delete_many(bc, &q, NULL, NULL, &c->err);
    }
    bson_destroy(&q);
    if (!ok) return mg_fail(c);
    FD_OUT(resp_add_status(c->out, "OK"));
    return FD_OK;
}
