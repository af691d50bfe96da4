/* mg_doc.c — the MongoDB backend's documents: reading and writing a key's
 * document, the helpers every type shares, the generic collection loader
 * and the member index (contracts in mg.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mg.h"

/* ================================================================ helpers */

uint64_t mg_hash_key(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)p[i]; h *= 1099511628211ULL; }
    h ^= h >> 30; h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27; h *= 0x94d049bb133111ebULL;
    return h ^ (h >> 31);
}

int mg_fail(mg_ctx *c)
{
    atomic_fetch_add(&c->b->mongo_errors, 1);
    return MG_E_MONGO;
}

void *mg_reserve(void *a, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return a;
    size_t nc = *cap ? *cap : 8;
    while (nc < need) nc *= 2;
    void *na = realloc(a, nc * size);
    if (na) *cap = nc;
    return na;
}

/* ================================================================ documents */

const char *const mg_type_names[] = {"none", "string", "list", "hash", "set", "zset", "stream"};


void mg_meta_free(mg_meta *m)
{
    if (m->doc) bson_destroy(m->doc);
    m->doc = NULL;
}

int mg_type_of(const char *s)
{
    for (int i = 1; i <= MG_T_STREAM; i++)
        if (!strcmp(s, mg_type_names[i])) return i;
    return MG_T_NONE;
}

static void meta_parse(mg_ctx *c, const bson_t *doc, mg_meta *m)
{
    bson_iter_t it;
    memset(m, 0, sizeof *m);
    m->found = 1;
    m->doc = bson_copy(doc);
    m->val = "";
    if (bson_iter_init(&it, m->doc)) {
        while (bson_iter_next(&it)) {
            const char *k = bson_iter_key(&it);
            if (k[0] == 'b' && BSON_ITER_HOLDS_INT64(&it)) {         /* a big collection (mg_big.c) */
                if (!strcmp(k, "big")) m->big = bson_iter_int64(&it);
                else if (!strcmp(k, "bn")) m->bn = bson_iter_int64(&it);
                else if (!strcmp(k, "blh")) m->blh = bson_iter_int64(&it);
                else if (!strcmp(k, "bo")) m->bo = bson_iter_int64(&it);
            } else if (!strcmp(k, "type") && BSON_ITER_HOLDS_UTF8(&it)) {
                m->type = mg_type_of(bson_iter_utf8(&it, NULL));
            } else if (!strcmp(k, "expireAt") && BSON_ITER_HOLDS_DATE_TIME(&it)) {
                m->expire = bson_iter_date_time(&it);
            } else if (!strcmp(k, "value")) {
                switch (bson_iter_type(&it)) {
                case BSON_TYPE_BINARY: {
                    bson_subtype_t st; uint32_t n; const uint8_t *p;
                    bson_iter_binary(&it, &st, &n, &p);
                    m->val = (const char *)p; m->vlen = n;
                    break;
                }
                case BSON_TYPE_INT64:
                    m->vlen = (size_t)resp_ll2str(m->num, sizeof m->num, (long long)bson_iter_int64(&it));
                    m->val = m->num;
                    break;
                case BSON_TYPE_INT32:
                    m->vlen = (size_t)resp_ll2str(m->num, sizeof m->num, (long long)bson_iter_int32(&it));
                    m->val = m->num;
                    break;
                case BSON_TYPE_DOUBLE:
                    m->vlen = (size_t)snprintf(m->num, sizeof m->num, "%.17g", bson_iter_double(&it));
                    m->val = m->num;
                    break;
                case BSON_TYPE_UTF8: {
                    uint32_t n; const char *p = bson_iter_utf8(&it, &n);
                    m->val = p; m->vlen = n;
                    break;
                }
                default: break;
                }
            }
        }
    }
    if (m->type == MG_T_NONE) m->type = MG_T_STRING;
    m->live = !m->expire || m->expire > c->now_ms;
}

void mg_append_key(bson_t *b, const char *field, const char *p, size_t n)
{
    bson_append_binary(b, field, -1, BSON_SUBTYPE_BINARY, (const uint8_t *)p, (uint32_t)n);
}

/* value: Int64 when the bytes are a canonical 64-bit integer, else binary */
void mg_append_value(bson_t *b, const char *p, size_t n)
{
    long long v;
    char buf[32];
    if (n && n < 21 && resp_str2ll(p, n, &v) == 0 &&
        (size_t)resp_ll2str(buf, sizeof buf, v) == n && memcmp(buf, p, n) == 0)
        bson_append_int64(b, "value", -1, v);
    else
        bson_append_binary(b, "value", -1, BSON_SUBTYPE_BINARY, (const uint8_t *)p, (uint32_t)n);
}

/* { $or: [ {expireAt: {$exists: false}}, {expireAt: {$gt: now}} ] } pieces */
void mg_append_live(bson_t *q, int64_t now_ms)
{
    bson_t arr, a, b, x;
    bson_append_array_begin(q, "$or", -1, &arr);
    bson_append_document_begin(&arr, "0", -1, &a);
    bson_append_document_begin(&a, "expireAt", -1, &x);
    bson_append_bool(&x, "$exists", -1, false);
    bson_append_document_end(&a, &x);
    bson_append_document_end(&arr, &a);
    bson_append_document_begin(&arr, "1", -1, &b);
    bson_append_document_begin(&b, "expireAt", -1, &x);
    bson_append_date_time(&x, "$gt", -1, now_ms);
    bson_append_document_end(&b, &x);
    bson_append_document_end(&arr, &b);
    bson_append_array_end(q, &arr);
}

/* Read the document of a key with a projection (NULL: all of it). */
int mg_lookup_proj(mg_ctx *c, const resp_arg *key, mg_meta *m, const bson_t *projection)
{
    bson_t q = BSON_INITIALIZER, opts = BSON_INITIALIZER;
    mg_append_key(&q, "_id", key->ptr, key->len);
    bson_append_int64(&opts, "limit", -1, 1);
    bson_append_bool(&opts, "singleBatch", -1, true);
    if (projection) bson_append_document(&opts, "projection", -1, projection);
    mongoc_cursor_t *cur = mongoc_collection_find_with_opts(c->coll, &q, &opts, NULL);
    const bson_t *doc;
    memset(m, 0, sizeof *m);
    m->val = "";
    if (mongoc_cursor_next(cur, &doc)) meta_parse(c, doc, m);
    int bad = mongoc_cursor_error(cur, &c->err);
    mongoc_cursor_destroy(cur);
    bson_destroy(&q);
    bson_destroy(&opts);
    if (bad) { mg_meta_free(m); return mg_fail(c); }
    if (!m->live && c->read) MG_NOTIFY(c, KEY_MISS, "keymiss", key->ptr, key->len);   /* lookupKeyRead */
    int nstep = c->nstep, expect = c->expect;
    c->nstep = 0;
    c->expect = 0;
    if (m->big && m->live && !projection && (!expect || expect == m->type)) {     /* the collection as the small layout holds it (or a part: mg_named) */
        int s = nstep ? mg_big_expand_named(c, m, c->nfirst, nstep) : mg_big_expand(c, m);
        if (s != FD_OK) { mg_meta_free(m); return s; }
    }
    return FD_OK;
}

/* Read the document of a key. want_value 0: without the value field. */
int mg_lookup(mg_ctx *c, const resp_arg *key, mg_meta *m, int want_value)
{
    if (want_value) return mg_lookup_proj(c, key, m, NULL);
    bson_t proj = BSON_INITIALIZER;
    bson_append_int32(&proj, "value", -1, 0);
    int s = mg_lookup_proj(c, key, m, &proj);
    bson_destroy(&proj);
    return s;
}

int mg_write_doc_copy(mg_ctx *c, const resp_arg *key, const bson_t *src)
{
    bson_t d = BSON_INITIALIZER;
    bson_iter_t it;
    if (bson_iter_init(&it, src))
        while (bson_iter_next(&it))
            if (strcmp(bson_iter_key(&it), "_id")) bson_append_iter(&d, NULL, 0, &it);
    int s = mg_write_doc(c, key, &d);
    bson_destroy(&d);
    return s;
}

int mg_key_live(mg_ctx *c, const resp_arg *key, int *live)
{
    mg_meta m;
    FD_TRY(mg_lookup(c, key, &m, 0));
    *live = m.live;
    mg_meta_free(&m);
    return FD_OK;
}

/* Replace the key's document with a string (expire 0 = none). The value is
 * a then b (APPEND without a copy). */
int mg_write_string(mg_ctx *c, const resp_arg *key, int64_t expire,
                           const char *a, size_t al, const char *b2, size_t bl)
{
    if (al + bl > MG_DOC_MAX) {
        bson_set_error(&c->err, MONGOC_ERROR_SERVER, 10334,
                       "value of %zu bytes exceeds MongoDB's 16 MB document limit", al + bl);
        return MG_E_MONGO;
    }
    bson_t d = BSON_INITIALIZER;
    bson_append_utf8(&d, "type", -1, "string", -1);
    if (bl) {
        char *v = malloc(al + bl ? al + bl : 1);
        if (!v) { bson_destroy(&d); return FD_E_NOMEM; }
        memcpy(v, a, al);
        memcpy(v + al, b2, bl);
        mg_append_value(&d, v, al + bl);
        free(v);
    } else {
        mg_append_value(&d, a, al);
    }
    if (expire) bson_append_date_time(&d, "expireAt", -1, expire);
    int s = mg_write_doc(c, key, &d);
    bson_destroy(&d);
    return s;
}

int mg_set_expire(mg_ctx *c, const resp_arg *key, int64_t expire)
{
    bson_t q = BSON_INITIALIZER, u = BSON_INITIALIZER, x;
    mg_append_key(&q, "_id", key->ptr, key->len);
    if (expire) {
        bson_append_document_begin(&u, "$set", -1, &x);
        bson_append_date_time(&x, "expireAt", -1, expire);
    } else {
        bson_append_document_begin(&u, "$unset", -1, &x);
        bson_append_utf8(&x, "expireAt", -1, "", 0);
    }
    bson_append_document_end(&u, &x);
    bool ok = mongoc_collection_update_one(c->coll, &q, &u, NULL, NULL, &c->err);
    bson_destroy(&q);
    bson_destroy(&u);
    return ok ? FD_OK : mg_fail(c);
}

/* Look up a string key: FD_E_WRONGTYPE for another live type. */
int mg_lookup_string(mg_ctx *c, const resp_arg *key, mg_meta *m)
{
    c->expect = MG_T_STRING;          /* a big collection: WRONGTYPE without reading its members */
    FD_TRY(mg_lookup(c, key, m, 1));
    if (m->live && m->type != MG_T_STRING) { mg_meta_free(m); return FD_E_WRONGTYPE; }
    return FD_OK;
}

/* Sort order of argument indexes by key bytes (mg_lookup_many). */
typedef struct { const resp_arg *a; int i; } mg_argref;

static int argref_cmp(const void *x, const void *y)
{
    const mg_argref *p = x, *q = y;
    size_t n = p->a->len < q->a->len ? p->a->len : q->a->len;
    int c = memcmp(p->a->ptr, q->a->ptr, n);
    if (c) return c;
    if (p->a->len != q->a->len) return p->a->len < q->a->len ? -1 : 1;
    return p->i - q->i;
}

static int keycmp(const char *k, size_t kl, const resp_arg *a)
{
    size_t n = kl < a->len ? kl : a->len;
    int c = memcmp(k, a->ptr, n);
    if (c) return c;
    return kl == a->len ? 0 : (kl < a->len ? -1 : 1);
}

/* Documents of several keys at once ({_id: {$in: [...]}}): metas[i] for
 * argv[first + i*step]. dup[i] (if not NULL) is set when the key already
 * appeared at an earlier position. */
int mg_lookup_many(mg_ctx *c, int first, int step, mg_meta *metas, int n, int want_value,
                       unsigned char *dup)
{
    mg_argref *refs = malloc((size_t)n * sizeof *refs);
    if (!refs) return FD_E_NOMEM;
    for (int i = 0; i < n; i++) { refs[i].a = &c->argv[first + i * step]; refs[i].i = i; }
    qsort(refs, (size_t)n, sizeof *refs, argref_cmp);
    bson_t q = BSON_INITIALIZER, in, arr, opts = BSON_INITIALIZER, proj;
    bson_append_document_begin(&q, "_id", -1, &in);
    bson_append_array_begin(&in, "$in", -1, &arr);
    for (int i = 0, k = 0; i < n; i++) {
        if (dup) dup[refs[i].i] = i > 0 && keycmp(refs[i - 1].a->ptr, refs[i - 1].a->len, refs[i].a) == 0;
        if (i > 0 && keycmp(refs[i - 1].a->ptr, refs[i - 1].a->len, refs[i].a) == 0) continue;
        char idx[16];
        const char *ks;
        bson_uint32_to_string((uint32_t)k++, &ks, idx, sizeof idx);
        mg_append_key(&arr, ks, refs[i].a->ptr, refs[i].a->len);
    }
    bson_append_array_end(&in, &arr);
    bson_append_document_end(&q, &in);
    if (!want_value) {
        bson_append_document_begin(&opts, "projection", -1, &proj);
        bson_append_int32(&proj, "value", -1, 0);
        bson_append_document_end(&opts, &proj);
    }
    for (int i = 0; i < n; i++) { memset(&metas[i], 0, sizeof metas[i]); metas[i].val = ""; }
    mongoc_cursor_t *cur = mongoc_collection_find_with_opts(c->coll, &q, &opts, NULL);
    const bson_t *doc;
    while (mongoc_cursor_next(cur, &doc)) {
        bson_iter_t it;
        if (!bson_iter_init_find(&it, doc, "_id") || !BSON_ITER_HOLDS_BINARY(&it)) continue;
        bson_subtype_t st; uint32_t kl; const uint8_t *kp;
        bson_iter_binary(&it, &st, &kl, &kp);
        /* the first position of this key in sorted order, then its repeats */
        int lo = 0, hi = n;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (keycmp((const char *)kp, kl, refs[mid].a) > 0) lo = mid + 1;
            else hi = mid;
        }
        for (int j = lo; j < n && keycmp((const char *)kp, kl, refs[j].a) == 0; j++)
            if (!metas[refs[j].i].found) meta_parse(c, doc, &metas[refs[j].i]);
    }
    int bad = mongoc_cursor_error(cur, &c->err);
    mongoc_cursor_destroy(cur);
    bson_destroy(&q);
    bson_destroy(&opts);
    free(refs);
    if (bad) {
        for (int i = 0; i < n; i++) mg_meta_free(&metas[i]);
        return mg_fail(c);
    }
    for (int i = 0; i < n && c->read; i++)     /* lookupKeyRead, key by key */
        if (!metas[i].live) MG_NOTIFY(c, KEY_MISS, "keymiss", c->argv[first + i * step].ptr, c->argv[first + i * step].len);
    return FD_OK;
}

/* {count: db0, query: q} -> n, or -1 (the count command: no aggregation
 * pipeline; with a range on expireAt the TTL index answers it) */
int64_t mg_count(mongoc_collection_t *coll, const bson_t *q, bson_error_t *err)
{
    bson_t cmd = BSON_INITIALIZER, reply;
    bson_append_utf8(&cmd, "count", -1, MG_COLL, -1);
    if (q) bson_append_document(&cmd, "query", -1, q);
    int64_t n = -1;
    if (mongoc_collection_command_simple(coll, &cmd, NULL, &reply, err)) {
        bson_iter_t it;
        if (bson_iter_init_find(&it, &reply, "n") && BSON_ITER_HOLDS_NUMBER(&it)) n = bson_iter_as_int64(&it);
        else bson_set_error(err, MONGOC_ERROR_SERVER, 0, "count gave no n");
    }
    bson_destroy(&reply);
    bson_destroy(&cmd);
    return n;
}

int mg_load_elems(mg_ctx *c, const resp_arg *key, mg_meta *m, int type, const bson_t *projection,
                  mg_elem_fn each, void *coll)
{
    c->expect = type;                 /* a big key of another type: no member read */
    FD_TRY(mg_lookup_proj(c, key, m, projection));
    if (!m->live) return FD_OK;
    if (m->type != type) { mg_meta_free(m); return FD_E_WRONGTYPE; }
    bson_iter_t it, arr;
    if (!bson_iter_init_find(&it, m->doc, "value") || !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &arr))
        return FD_OK;
    while (bson_iter_next(&arr))
        if (each(coll, &arr) != FD_OK) { mg_meta_free(m); return FD_E_NOMEM; }
    return FD_OK;
}

/* ================================================================ member index
 *
 * Finding a field or member in a loaded collection: a linear scan while it
 * is small, else an open-addressing table of positions built on first use
 * and extended as elements are appended (SADD/HSET/ZADD of many, and the
 * set operations, stay O(elements) instead of O(elements^2)). Removing an
 * element shifts positions: the table is then rebuilt on the next lookup. */

#define MG_IX_MIN 16

void mg_ix_free(mg_ix *x) { free(x->slot); memset(x, 0, sizeof *x); }
void mg_ix_invalidate(mg_ix *x) { x->count = SIZE_MAX; }

static void ix_put(mg_ix *x, const void *coll, mg_keyat at, size_t i)
{
    const char *p; size_t l;
    at(coll, i, &p, &l);
    size_t h = (size_t)mg_hash_key(p, l) & x->mask;
    while (x->slot[h]) h = (h + 1) & x->mask;
    x->slot[h] = (uint32_t)(i + 1);
}

long mg_ix_find(mg_ix *x, const void *coll, size_t n, mg_keyat at, const char *p, size_t l)
{
    const char *q; size_t ql;
    if (n >= MG_IX_MIN && n < UINT32_MAX / 4 && (!x->slot || x->count != n)) {
        if (x->slot && x->count < n && 2 * n <= x->mask + 1) {
            for (size_t i = x->count; i < n; i++) ix_put(x, coll, at, i);     /* appended since */
            x->count = n;
        } else {
            size_t cap = 64;
            while (cap < 2 * n) cap <<= 1;
            uint32_t *sl = calloc(cap, sizeof *sl);
            if (sl) {
                free(x->slot);
                x->slot = sl;
                x->mask = cap - 1;
                for (size_t i = 0; i < n; i++) ix_put(x, coll, at, i);
                x->count = n;
            }
        }
    }
    if (n < MG_IX_MIN || !x->slot || x->count != n) {      /* small (or out of memory): a scan */
        for (size_t i = 0; i < n; i++) {
            at(coll, i, &q, &ql);
            if (ql == l && memcmp(q, p, l) == 0) return (long)i;
        }
        return -1;
    }
    for (size_t h = (size_t)mg_hash_key(p, l) & x->mask; x->slot[h]; h = (h + 1) & x->mask) {
        size_t i = x->slot[h] - 1;
        at(coll, i, &q, &ql);
        if (ql == l && memcmp(q, p, l) == 0) return (long)i;
    }
    return -1;
}

/* ---------------------------------------------------------------- keyspace events */

int mg_reply_int(const mg_ctx *c, size_t mark, long long *v)
{
    const char *p = c->out->data + mark;
    size_t n = c->out->len - mark;
    if (n < 4 || p[0] != ':') return 0;
    const char *e = memchr(p, '\r', n);
    return e && resp_str2ll(p + 1, (size_t)(e - p - 1), v) == 0;
}

int mg_reply_some(const mg_ctx *c, size_t mark)
{
    const char *p = c->out->data + mark;
    size_t n = c->out->len - mark;
    if (n < 3 || p[0] == '-' || p[0] == '_') return 0;
    if (p[0] == '$') return p[1] != '-';
    if ((p[0] == '*' || p[0] == '~' || p[0] == '%') && (p[1] == '-' || (p[1] == '0' && p[2] == '\r'))) return 0;
    return 1;
}

void mg_notify_del_if_gone(mg_ctx *c, const resp_arg *key)
{
    int live = 1;
    if (fd_notify_on(FD_NOTIFY_GENERIC) && mg_key_live(c, key, &live) == FD_OK && !live)
        MG_NOTIFY(c, GENERIC, "del", key->ptr, key->len);
}

int mg_key_gone(void *h, const resp_arg *key)
{
    int live = 1;
    return mg_key_live(h, key, &live) == FD_OK && !live;
}

int mg_coll_gone(void *h, struct fd_coll_hk *hk)
{
    const resp_arg *key;
    memcpy(&key, hk, sizeof key);
    return mg_key_gone(h, key);
}

void mg_coll_event(void *h, int cls, const char *event, const resp_arg *key)
{
    mg_ctx *c = h;
    FD_NOTIFY(c->ev, cls, event, key->ptr, key->len);
}
