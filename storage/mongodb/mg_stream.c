/* mg_stream.c — the stream commands on MongoDB: storage/value/stream.c holds
 * the semantics; this file gives it MongoDB as its fd_stream_io.
 *
 * A stream is NOT one growing document. Its key document in db0 holds only
 * the metadata: { _id: key, type: "stream", sv: NumberLong(version),
 * m: BinData(engine metadata, 104 bytes), expireAt? }. Every entry, listpack
 * node record, group, consumer and pending entry is its own small document
 * in the collection db0_stream:
 *     { _id: "<16 hex digits of sv><hex of the engine's sub key>", v: BinData }
 * The _id string sorts as the sub keys do (hex keeps byte order and prefixes),
 * so the _id index serves every range read: XRANGE is one find with
 * {_id: {$gte: .., $lt: ..}} sorted by _id, XADD three point writes (entry,
 * node record, metadata). The version sv is random per stream: RENAME moves
 * only the key document (its sub-documents follow sv), and a deleted or
 * expired stream's sub-documents are never seen again by a new stream of the
 * same name. DEL/UNLINK delete them too (mg_stream_drop); a stream that
 * expires or is overwritten leaves them until FLUSHDB (docs/mongodb.md). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mg.h"
#include "../value/stream.h"

typedef struct mg_sh {
    mg_ctx *c;
    mongoc_collection_t *sc;     /* db0_stream */
    uint8_t *got;                /* owned: the last get()'s value, valid until the next
                                    get() or the end of the command (freed by MG_STREAM_CMD) */
} mg_sh;

typedef struct mg_sk {
    int64_t sv, expire;
    char    hex[17];
    const resp_arg *key;
} mg_sk;

#define MG_ID_MAX (16 + 2 * FD_SSUB_MAX + 2)

static const char hexd[] = "0123456789abcdef";

static size_t make_id(char *out, const mg_sk *sk, const uint8_t *sub, size_t sl)
{
    memcpy(out, sk->hex, 16);
    for (size_t i = 0; i < sl; i++) {
        out[16 + 2 * i] = hexd[sub[i] >> 4];
        out[17 + 2 * i] = hexd[sub[i] & 15];
    }
    out[16 + 2 * sl] = 0;
    return 16 + 2 * sl;
}

static int unhex(const char *p, size_t n, uint8_t *out)
{
    for (size_t i = 0; i < n / 2; i++) {
        int a = p[2 * i], b = p[2 * i + 1];
        a = a >= 'a' ? a - 'a' + 10 : a - '0';
        b = b >= 'a' ? b - 'a' + 10 : b - '0';
        if (a < 0 || a > 15 || b < 0 || b > 15) return -1;
        out[i] = (uint8_t)(a << 4 | b);
    }
    return 0;
}

static void set_hex(mg_sk *sk)
{
    uint64_t v = (uint64_t)sk->sv;
    for (int i = 15; i >= 0; i--) { sk->hex[i] = hexd[v & 15]; v >>= 4; }
    sk->hex[16] = 0;
}

static int sio_open(void *h, const resp_arg *key, void **skp, uint8_t *meta, int *exists)
{
    mg_sh *sh = h;
    mg_meta m;
    *skp = NULL;
    *exists = 0;
    FD_TRY(mg_lookup(sh->c, key, &m, 1));
    if (!m.live) { mg_meta_free(&m); return FD_OK; }
    if (m.type != MG_T_STREAM) { mg_meta_free(&m); return FD_E_WRONGTYPE; }
    mg_sk *sk = calloc(1, sizeof *sk);
    if (!sk) { mg_meta_free(&m); return FD_E_NOMEM; }
    bson_iter_t it;
    int ok = 0;
    if (bson_iter_init_find(&it, m.doc, "sv") && BSON_ITER_HOLDS_INT64(&it)) {
        sk->sv = bson_iter_int64(&it);
        if (bson_iter_init_find(&it, m.doc, "m") && BSON_ITER_HOLDS_BINARY(&it)) {
            bson_subtype_t st; uint32_t n; const uint8_t *p;
            bson_iter_binary(&it, &st, &n, &p);
            if (n == FD_SMETA_LEN) { memcpy(meta, p, n); ok = 1; }
        }
    }
    sk->expire = m.expire;
    sk->key = key;
    mg_meta_free(&m);
    if (!ok) { free(sk); return FD_E_CORRUPT; }
    set_hex(sk);
    *skp = sk;
    *exists = 1;
    return FD_OK;
}

static int sio_create(void *h, const resp_arg *key, void **skp)
{
    mg_sh *sh = h;
    mg_sk *sk = *skp ? *skp : calloc(1, sizeof *sk);
    if (!sk) return FD_E_NOMEM;
    /* a fresh random version (63 bits) */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t r = mg_hash_key(key->ptr, key->len) ^ ((uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ULL) ^
                 ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)(uintptr_t)sk ^ (uint64_t)clock();
    r ^= r >> 31; r *= 0xbf58476d1ce4e5b9ULL; r ^= r >> 29;
    sk->sv = (int64_t)(r & 0x7fffffffffffffffULL);
    sk->expire = 0;
    sk->key = key;
    (void)sh;
    set_hex(sk);
    *skp = sk;
    return FD_OK;
}

static int sio_save(void *h, void *skp, const uint8_t *meta)
{
    mg_sh *sh = h;
    mg_sk *sk = skp;
    bson_t d = BSON_INITIALIZER;
    bson_append_utf8(&d, "type", -1, "stream", -1);
    bson_append_int64(&d, "sv", -1, sk->sv);
    bson_append_binary(&d, "m", -1, BSON_SUBTYPE_BINARY, meta, FD_SMETA_LEN);
    if (sk->expire) bson_append_date_time(&d, "expireAt", -1, sk->expire);
    int s = mg_write_doc(sh->c, sk->key, &d);
    bson_destroy(&d);
    return s;
}

static int sio_get(void *h, void *skp, const uint8_t *sub, size_t sl, const void **v, size_t *vl)
{
    mg_sh *sh = h;
    char id[MG_ID_MAX];
    size_t il = make_id(id, skp, sub, sl);
    bson_t q = BSON_INITIALIZER, opts = BSON_INITIALIZER;
    bson_append_utf8(&q, "_id", -1, id, (int)il);
    bson_append_int64(&opts, "limit", -1, 1);
    bson_append_bool(&opts, "singleBatch", -1, true);
    mongoc_cursor_t *cur = mongoc_collection_find_with_opts(sh->sc, &q, &opts, NULL);
    const bson_t *doc;
    int s = FD_NOTFOUND;
    if (mongoc_cursor_next(cur, &doc)) {
        bson_iter_t it;
        if (bson_iter_init_find(&it, doc, "v") && BSON_ITER_HOLDS_BINARY(&it)) {
            bson_subtype_t st; uint32_t n; const uint8_t *p;
            bson_iter_binary(&it, &st, &n, &p);
            free(sh->got);
            sh->got = malloc(n ? n : 1);
            if (!sh->got) s = FD_E_NOMEM;
            else { if (n) memcpy(sh->got, p, n); *v = sh->got; *vl = n; s = FD_OK; }
        } else s = FD_E_CORRUPT;
    }
    if (mongoc_cursor_error(cur, &sh->c->err)) s = mg_fail(sh->c);
    mongoc_cursor_destroy(cur);
    bson_destroy(&q);
    bson_destroy(&opts);
    return s;
}

static int sio_put(void *h, void *skp, const uint8_t *sub, size_t sl, const void *v, size_t vl)
{
    mg_sh *sh = h;
    char id[MG_ID_MAX];
    size_t il = make_id(id, skp, sub, sl);
    bson_t q = BSON_INITIALIZER, d = BSON_INITIALIZER, opts = BSON_INITIALIZER;
    bson_append_utf8(&q, "_id", -1, id, (int)il);
    bson_append_binary(&d, "v", -1, BSON_SUBTYPE_BINARY, vl ? v : (const uint8_t *)"", (uint32_t)vl);
    bson_append_bool(&opts, "upsert", -1, true);
    bool ok = mongoc_collection_replace_one(sh->sc, &q, &d, &opts, NULL, &sh->c->err);
    bson_destroy(&q);
    bson_destroy(&d);
    bson_destroy(&opts);
    return ok ? FD_OK : mg_fail(sh->c);
}

static int sio_del(void *h, void *skp, const uint8_t *sub, size_t sl)
{
    mg_sh *sh = h;
    char id[MG_ID_MAX];
    size_t il = make_id(id, skp, sub, sl);
    bson_t q = BSON_INITIALIZER, r;
    bson_append_utf8(&q, "_id", -1, id, (int)il);
    bool ok = mongoc_collection_delete_one(sh->sc, &q, NULL, &r, &sh->c->err);
    int s = FD_OK;
    if (!ok) s = mg_fail(sh->c);
    else {
        bson_iter_t it;
        if (bson_iter_init_find(&it, &r, "deletedCount") && bson_iter_as_int64(&it) == 0) s = FD_NOTFOUND;
    }
    bson_destroy(&r);
    bson_destroy(&q);
    return s;
}

#define MG_WALK_BATCH 256

/* Range reads in batches of MG_WALK_BATCH documents, each batch one find on
 * the _id index, until the callback stops or the range ends. */
static int sio_walk(void *h, void *skp, const uint8_t *pfx, size_t pl, const uint8_t *from, size_t fl,
                    int rev, fd_swalk_fn fn, void *arg)
{
    mg_sh *sh = h;
    mg_sk *sk = skp;
    char lo[MG_ID_MAX + 1], hi[MG_ID_MAX + 1], cur_id[MG_ID_MAX + 1];
    size_t lol, hil;
    int have_cur = 0;
    if (!rev) {
        lol = make_id(lo, sk, from, fl);            /* _id >= from */
        hil = make_id(hi, sk, pfx, pl);             /* _id < pfx + "g" */
        hi[hil++] = 'g'; hi[hil] = 0;
    } else {
        lol = make_id(lo, sk, pfx, pl);             /* _id >= pfx */
        hil = make_id(hi, sk, from, fl);            /* _id < from + "g" */
        hi[hil++] = 'g'; hi[hil] = 0;
    }
    uint8_t *sub = malloc(FD_SSUB_MAX + 1);
    if (!sub) return FD_E_NOMEM;
    int s = FD_OK, done = 0;
    while (!done && s == FD_OK) {
        bson_t q = BSON_INITIALIZER, r, opts = BSON_INITIALIZER, so;
        bson_append_document_begin(&q, "_id", -1, &r);
        if (!rev) {
            if (have_cur) bson_append_utf8(&r, "$gt", -1, cur_id, -1);
            else bson_append_utf8(&r, "$gte", -1, lo, (int)lol);
            bson_append_utf8(&r, "$lt", -1, hi, (int)hil);
        } else {
            bson_append_utf8(&r, "$gte", -1, lo, (int)lol);
            if (have_cur) bson_append_utf8(&r, "$lt", -1, cur_id, -1);
            else bson_append_utf8(&r, "$lt", -1, hi, (int)hil);
        }
        bson_append_document_end(&q, &r);
        bson_append_document_begin(&opts, "sort", -1, &so);
        bson_append_int32(&so, "_id", -1, rev ? -1 : 1);
        bson_append_document_end(&opts, &so);
        bson_append_int64(&opts, "limit", -1, MG_WALK_BATCH);
        mongoc_cursor_t *cur = mongoc_collection_find_with_opts(sh->sc, &q, &opts, NULL);
        const bson_t *doc;
        int got = 0;
        while (s == FD_OK && mongoc_cursor_next(cur, &doc)) {
            bson_iter_t it;
            uint32_t idl;
            const char *idp = NULL;
            const uint8_t *vp = (const uint8_t *)"";
            uint32_t vn = 0;
            got++;
            if (bson_iter_init_find(&it, doc, "_id") && BSON_ITER_HOLDS_UTF8(&it)) idp = bson_iter_utf8(&it, &idl);
            if (!idp || idl < 16 || (idl - 16) % 2 || (idl - 16) / 2 > FD_SSUB_MAX || unhex(idp + 16, idl - 16, sub) != 0) {
                s = FD_E_CORRUPT;
                break;
            }
            memcpy(cur_id, idp, idl);
            cur_id[idl] = 0;
            have_cur = 1;
            if (bson_iter_init_find(&it, doc, "v") && BSON_ITER_HOLDS_BINARY(&it)) {
                bson_subtype_t st;
                bson_iter_binary(&it, &st, &vn, &vp);
            }
            int rr = fn(arg, sub, (idl - 16) / 2, vp, vn);
            if (rr == FD_SW_STOP) { done = 1; break; }
            if (rr != FD_SW_NEXT) { s = rr; break; }
        }
        if (s == FD_OK && mongoc_cursor_error(cur, &sh->c->err)) s = mg_fail(sh->c);
        mongoc_cursor_destroy(cur);
        bson_destroy(&q);
        bson_destroy(&opts);
        if (got < MG_WALK_BATCH) done = 1;
    }
    free(sub);
    return s;
}

static void sio_close(void *h, void *skp)
{
    (void)h;
    free(skp);
}

int mg_stream_drop(mg_ctx *c, const mg_meta *m)
{
    bson_iter_t it;
    if (!m->doc || !bson_iter_init_find(&it, m->doc, "sv") || !BSON_ITER_HOLDS_INT64(&it)) return FD_OK;
    mg_sk sk = { .sv = bson_iter_int64(&it) };
    set_hex(&sk);
    char hi[18];
    memcpy(hi, sk.hex, 16);
    hi[16] = 'g';
    hi[17] = 0;
    mongoc_collection_t *sc = mongoc_client_get_collection(c->client, c->b->dbname, MG_STREAM_COLL);
    if (!sc) return FD_E_NOMEM;
    bson_t q = BSON_INITIALIZER, r;
    bson_append_document_begin(&q, "_id", -1, &r);
    bson_append_utf8(&r, "$gte", -1, sk.hex, 16);
    bson_append_utf8(&r, "$lt", -1, hi, 17);
    bson_append_document_end(&q, &r);
    bool ok = mongoc_collection_delete_many(sc, &q, NULL, NULL, &c->err);
    bson_destroy(&q);
    mongoc_collection_destroy(sc);
    return ok ? FD_OK : mg_fail(c);
}

typedef struct copy_to { mg_sh *sh; mg_sk *to; } copy_to;

static int copy_one(void *arg, const uint8_t *sub, size_t sl, const void *v, size_t vl)
{
    copy_to *t = arg;
    return sio_put(t->sh, t->to, sub, sl, v, vl);     /* FD_OK is FD_SW_NEXT */
}

int mg_stream_copy(mg_ctx *c, const resp_arg *dst, const bson_t *src)
{
    bson_iter_t it;
    if (!bson_iter_init_find(&it, src, "sv") || !BSON_ITER_HOLDS_INT64(&it)) return FD_E_CORRUPT;
    mg_sk from = { .sv = bson_iter_int64(&it) }, *to = NULL;
    set_hex(&from);
    mg_sh sh = { c, mongoc_client_get_collection(c->client, c->b->dbname, MG_STREAM_COLL), NULL };
    if (!sh.sc) return FD_E_NOMEM;
    int s = sio_create(&sh, dst, (void **)&to);
    if (s == FD_OK) {
        copy_to t = { &sh, to };
        s = sio_walk(&sh, &from, NULL, 0, NULL, 0, 0, copy_one, &t);
    }
    if (s == FD_OK) {              /* the key document last: the copy exists once it is whole */
        bson_t d = BSON_INITIALIZER;
        if (bson_iter_init(&it, src))
            while (bson_iter_next(&it)) {
                const char *k = bson_iter_key(&it);
                if (!strcmp(k, "sv")) bson_append_int64(&d, "sv", -1, to->sv);
                else if (strcmp(k, "_id")) bson_append_iter(&d, NULL, 0, &it);
            }
        s = mg_write_doc(c, dst, &d);
        bson_destroy(&d);
    }
    free(to);
    free(sh.got);
    mongoc_collection_destroy(sh.sc);
    return s;
}

static void sio_event(void *h, int cls, const char *event, const resp_arg *key)
{
    fd_events_add(((mg_sh *)h)->c->ev, cls, event, key->ptr, key->len);
}

static const fd_stream_io mg_stream_io = {
    .open = sio_open, .create = sio_create, .save = sio_save,
    .get = sio_get, .put = sio_put, .del = sio_del, .walk = sio_walk, .close = sio_close,
    .event = sio_event,
};

#define MG_STREAM_CMD(name) \
    int mg_cmd_##name(mg_ctx *c) \
    { \
        mg_sh sh = { c, mongoc_client_get_collection(c->client, c->b->dbname, MG_STREAM_COLL), NULL }; \
        if (!sh.sc) return FD_E_NOMEM; \
        fd_stream_call call = { &mg_stream_io, &sh, c->argc, c->argv, c->out, c->now_ms }; \
        size_t mark = c->out->len; \
        int s = fd_stream_##name(&call); \
        if (s != FD_OK) c->out->len = mark; \
        mongoc_collection_destroy(sh.sc); \
        free(sh.got); \
        return s; \
    }

MG_STREAM_CMD(xadd)
MG_STREAM_CMD(xrange)
MG_STREAM_CMD(xrevrange)
MG_STREAM_CMD(xlen)
MG_STREAM_CMD(xdel)
MG_STREAM_CMD(xtrim)
MG_STREAM_CMD(xread)
MG_STREAM_CMD(xreadgroup)
MG_STREAM_CMD(xsetid)
MG_STREAM_CMD(xinfo)
MG_STREAM_CMD(xgroup)
MG_STREAM_CMD(xack)
MG_STREAM_CMD(xpending)
MG_STREAM_CMD(xclaim)
MG_STREAM_CMD(xautoclaim)

/* DUMP / RESTORE: one engine call with this backend's io */
static int mg_stream_run(mg_ctx *c, const resp_arg *key, struct fd_rdb_buf *out, const void *p, size_t n)
{
    mg_sh sh = { c, mongoc_client_get_collection(c->client, c->b->dbname, MG_STREAM_COLL), NULL };
    if (!sh.sc) return FD_E_NOMEM;
    fd_stream_call call = { &mg_stream_io, &sh, c->argc, c->argv, c->out, c->now_ms };
    int s = out ? fd_stream_dump(&call, key, out) : fd_stream_restore(&call, key, p, n);
    mongoc_collection_destroy(sh.sc);
    free(sh.got);
    return s;
}

int mg_stream_dump(mg_ctx *c, const resp_arg *key, struct fd_rdb_buf *out) { return mg_stream_run(c, key, out, NULL, 0); }

int mg_stream_restore(mg_ctx *c, const resp_arg *key, const void *p, size_t n)
{
    return mg_stream_run(c, key, NULL, p, n);
}
