/* mongodb.c — the MongoDB backend (`backend mongodb`): Redis keys as MongoDB
 * documents, through libmongoc on worker threads. docs/mongodb.md has the
 * data model with an example document per type.
 *
 * Data model. One collection per logical database ("db0" in
 * mongo-database); one document per key:
 *     { _id: BinData(0, key), type: "string", value: <Int64 | BinData>,
 *       expireAt: ISODate }            (expireAt only when the key has a TTL)
 * A hash: value is an array of {f: BinData, v: BinData}; a list or a set:
 * an array of BinData (a list also keeps its length in n, for the one-trip
 * $push/$pop/$slice paths); a sorted set: an array of {m: BinData,
 * s: Double} in Redis's order (see "hashes", "lists", "sets", "sorted
 * sets"). Plain SETs queued together go as one bulk write ("grouped
 * writes").
 * A string that is the canonical decimal form of a 64-bit integer is stored
 * as Int64 (as Redis's int encoding), so INCR/INCRBY/DECR are one
 * findAndModify with $inc; any other string is BinData (binary-safe).
 * expireAt has a TTL index (expireAfterSeconds 0); the TTL monitor runs about
 * once a minute, so every read also checks expireAt: an expired key is never
 * returned.
 *
 * Threads. libmongoc calls block, so none runs on the loop thread. The loop
 * thread copies each request (argv) and queues it to one of `mongo-workers`
 * threads, chosen by a hash of its key: commands on one key run in order on
 * one thread, so a read-modify-write (GETSET, APPEND, SETRANGE...) is atomic
 * against every other command of this frontdoor. A command on several keys
 * (MSET, DEL a b, RENAME) or on none (KEYS, SCAN, DBSIZE, FLUSHDB) is queued
 * to every worker its keys hash to (all of them when keyless) and runs once
 * all of them reached it (the last to arrive runs it; the others wait): it is
 * ordered with the commands before and after it on each of its keys. No
 * deadlock: the loop thread queues in one global order, so the oldest barrier
 * is always at the head of all its queues. Each worker holds one client of a
 * mongoc_client_pool_t. Results come back through a completion queue and an
 * ev_async on the loop, where fd_pending_reply is called; the proxy's reply
 * marks put each client's replies back in request order (proxy/pending.c).
 *
 * Faults. serverSelectionTimeoutMS, socketTimeoutMS and connectTimeoutMS
 * default to backend-timeout (unless the URI sets them). A loop timer fails
 * every request not answered within backend-timeout with
 * "-ERR backend unavailable (mongodb: ...)"; a worker skips requests whose
 * deadline passed while they waited in its queue (so a timed-out write is
 * not executed late, except the one in flight at the deadline: its outcome
 * is unknown, as with any network store). libmongoc's topology monitor finds
 * the server again when it returns; nothing else is needed to recover.
 * An "admin" thread creates the TTL index (retrying until the server
 * answers), reads buildInfo (INFO shows whether an emulator answered) and
 * counts keys for INFO keyspace every few seconds.
 *
 * Write concern. mongo-w, mongo-j, mongo-wtimeout; mongo-j "auto" follows
 * `durability`: sync -> j:true, nosync -> the URI's/server's default.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <ev.h>
#include <mongoc/mongoc.h>

#include "backend.h"
#include "cmdargs.h"
#include "host.h"

#define MG_COLL        "db0"
#define MG_TICK_MS     20
#define MG_SCANS       8            /* SCAN iterations remembered */
#define MG_SCAN_AGE_US (60 * 1000000LL)
#define MG_E_MONGO     (FD_STATUS_COUNT + 1)   /* error text in ctx->err */
#define MG_E_UNKNOWN   (FD_STATUS_COUNT + 2)   /* reply "unknown command" */

typedef struct mg_backend mg_backend;
typedef struct mg_req mg_req;

typedef struct mg_node { mg_req *r; struct mg_node *next; } mg_node;

typedef struct mg_worker {
    mg_backend     *b;
    int             idx;
    pthread_t       th;
    pthread_mutex_t mu;
    pthread_cond_t  cv;
    mg_node        *head, *tail;
    int             started;
} mg_worker;

typedef struct mg_ctx mg_ctx;
/* a key of a KEYS/SCAN listing, with its scan hash */
typedef struct mg_keyent { uint64_t h; int64_t expire; int type; uint32_t len; char *key; } mg_keyent;
typedef int (*mg_fn)(mg_ctx *c);

struct mg_req {
    mg_req     *next;            /* completion queue */
    mg_req     *lprev, *lnext;   /* loop thread: in-flight list (submission order) */
    fd_pending *p;               /* NULL once answered by the timeout */
    mg_fn       fn;
    const char *name;
    int         argc;
    resp_arg   *argv;            /* copies, in one allocation with the bytes */
    int         proto;
    int64_t     now_ms;
    int64_t     deadline_us;     /* monotonic */
    /* barrier: a command queued to nw workers */
    int         nw, arrived, refs, done;
    pthread_mutex_t bmu;
    pthread_cond_t  bcv;
    mg_node    *nodes;           /* nw queue nodes */
    mg_node     node1;
    /* result */
    resp_out    out;
    int         status;
    int         skipped;         /* deadline passed before a worker took it */
};

struct mg_backend {
    fd_backend_config cfg;
    char           *uri_str, *dbname;
    mongoc_uri_t   *uri;
    mongoc_client_pool_t *pool;
    mongoc_write_concern_t *wc;
    int             nworkers;
    mg_worker      *w;
    atomic_int      stop;
    /* completions */
    pthread_mutex_t cmu;
    mg_req         *chead, *ctail;
    ev_async        async;
    ev_timer        tick;
    struct ev_loop *loop;
    /* loop thread: requests not yet completed */
    mg_req         *ihead, *itail;
    long long       inflight;
    /* admin thread */
    pthread_t       admin;
    int             admin_started;
    pthread_mutex_t amu;
    pthread_cond_t  acv;
    atomic_int      indexes_ok;
    atomic_llong    keys, expires;
    char            server_version[64];
    int             server_emulator;     /* -1 unknown */
    /* SCAN: the sorted key list of iterations in progress, by next cursor */
    pthread_mutex_t smu;
    struct mg_scan { uint64_t next; mg_keyent *v; size_t n; int64_t born_us; } scans[MG_SCANS];
    /* statistics (loop thread) */
    unsigned long long requests, timeouts, errors;
    atomic_ullong   mongo_errors;
    atomic_ullong   bulk_groups, bulk_grouped;   /* grouped SETs: bulk writes, SETs in them */
};

struct mg_ctx {
    mg_backend      *b;
    mongoc_collection_t *coll;
    mongoc_client_t *client;
    int              argc;
    resp_arg        *argv;
    resp_out        *out;
    int64_t          now_ms;
    long long        max_bulk;
    bson_error_t     err;
};

/* ================================================================ helpers */

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static uint64_t hash_key(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)p[i]; h *= 1099511628211ULL; }
    h ^= h >> 30; h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27; h *= 0x94d049bb133111ebULL;
    return h ^ (h >> 31);
}

#define OUT(expr) do { if ((expr) != 0) return FD_E_NOMEM; } while (0)
#define TRY(expr) do { int s_ = (expr); if (s_ != FD_OK) return s_; } while (0)

/* Is a mongoc error one of "the server cannot be reached"? */
static int err_unavailable(const bson_error_t *e)
{
    return e->domain == MONGOC_ERROR_SERVER_SELECTION || e->domain == MONGOC_ERROR_STREAM ||
           e->domain == MONGOC_ERROR_PROTOCOL || e->domain == MONGOC_ERROR_CLIENT;
}

static int mongo_fail(mg_ctx *c)
{
    atomic_fetch_add(&c->b->mongo_errors, 1);
    return MG_E_MONGO;
}

/* ================================================================ documents */

enum { MG_T_NONE, MG_T_STRING, MG_T_LIST, MG_T_HASH, MG_T_SET, MG_T_ZSET };
static const char *const type_names[] = {"none", "string", "list", "hash", "set", "zset"};

typedef struct mg_meta {
    int         found;      /* a document exists (maybe expired) */
    int         live;       /* found and not expired */
    int         type;
    int64_t     expire;     /* ms since epoch, 0 = none */
    const char *val;        /* string value (points into doc or num) */
    size_t      vlen;
    bson_t     *doc;        /* owned copy */
    char        num[32];
} mg_meta;

static void meta_free(mg_meta *m)
{
    if (m->doc) bson_destroy(m->doc);
    m->doc = NULL;
}

static int type_of(const char *s)
{
    for (int i = 1; i <= MG_T_ZSET; i++)
        if (!strcmp(s, type_names[i])) return i;
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
            if (!strcmp(k, "type") && BSON_ITER_HOLDS_UTF8(&it)) {
                m->type = type_of(bson_iter_utf8(&it, NULL));
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

static void append_key(bson_t *b, const char *field, const char *p, size_t n)
{
    bson_append_binary(b, field, -1, BSON_SUBTYPE_BINARY, (const uint8_t *)p, (uint32_t)n);
}

/* value: Int64 when the bytes are a canonical 64-bit integer, else binary */
static void append_value(bson_t *b, const char *p, size_t n)
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
static void append_live(bson_t *q, int64_t now_ms)
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
static int mg_lookup_proj(mg_ctx *c, const resp_arg *key, mg_meta *m, const bson_t *projection)
{
    bson_t q = BSON_INITIALIZER, opts = BSON_INITIALIZER;
    append_key(&q, "_id", key->ptr, key->len);
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
    if (bad) { meta_free(m); return mongo_fail(c); }
    return FD_OK;
}

/* Read the document of a key. want_value 0: without the value field. */
static int mg_lookup(mg_ctx *c, const resp_arg *key, mg_meta *m, int want_value)
{
    if (want_value) return mg_lookup_proj(c, key, m, NULL);
    bson_t proj = BSON_INITIALIZER;
    bson_append_int32(&proj, "value", -1, 0);
    int s = mg_lookup_proj(c, key, m, &proj);
    bson_destroy(&proj);
    return s;
}

static int mg_write_doc(mg_ctx *c, const resp_arg *key, const bson_t *doc)
{
    bson_t q = BSON_INITIALIZER, opts = BSON_INITIALIZER;
    append_key(&q, "_id", key->ptr, key->len);
    bson_append_bool(&opts, "upsert", -1, true);
    bool ok = mongoc_collection_replace_one(c->coll, &q, doc, &opts, NULL, &c->err);
    bson_destroy(&q);
    bson_destroy(&opts);
    return ok ? FD_OK : mongo_fail(c);
}

/* Replace the key's document with a string (expire 0 = none). The value is
 * a then b (APPEND without a copy). */
static int mg_write_string(mg_ctx *c, const resp_arg *key, int64_t expire,
                           const char *a, size_t al, const char *b2, size_t bl)
{
    bson_t d = BSON_INITIALIZER;
    bson_append_utf8(&d, "type", -1, "string", -1);
    if (bl) {
        char *v = malloc(al + bl ? al + bl : 1);
        if (!v) { bson_destroy(&d); return FD_E_NOMEM; }
        memcpy(v, a, al);
        memcpy(v + al, b2, bl);
        append_value(&d, v, al + bl);
        free(v);
    } else {
        append_value(&d, a, al);
    }
    if (expire) bson_append_date_time(&d, "expireAt", -1, expire);
    int s = mg_write_doc(c, key, &d);
    bson_destroy(&d);
    return s;
}

static int mg_delete(mg_ctx *c, const resp_arg *key)
{
    bson_t q = BSON_INITIALIZER;
    append_key(&q, "_id", key->ptr, key->len);
    bool ok = mongoc_collection_delete_one(c->coll, &q, NULL, NULL, &c->err);
    bson_destroy(&q);
    return ok ? FD_OK : mongo_fail(c);
}

static int mg_set_expire(mg_ctx *c, const resp_arg *key, int64_t expire)
{
    bson_t q = BSON_INITIALIZER, u = BSON_INITIALIZER, x;
    append_key(&q, "_id", key->ptr, key->len);
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
    return ok ? FD_OK : mongo_fail(c);
}

/* Look up a string key: FD_E_WRONGTYPE for another live type. */
static int lookup_string(mg_ctx *c, const resp_arg *key, mg_meta *m)
{
    TRY(mg_lookup(c, key, m, 1));
    if (m->live && m->type != MG_T_STRING) { meta_free(m); return FD_E_WRONGTYPE; }
    return FD_OK;
}

/* ================================================================ strings */

static int set_generic(mg_ctx *c, int flags, int64_t expire, const resp_arg *key,
                       const resp_arg *val, int abort_nx)
{
    if (!(flags & (FD_SET_NX | FD_SET_XX | FD_SET_GET | FD_SET_KEEPTTL))) {
        /* plain SET: one replace, no read */
        TRY(mg_write_string(c, key, expire, val->ptr, val->len, NULL, 0));
        OUT(resp_add_status(c->out, "OK"));
        return FD_OK;
    }
    mg_meta m;
    TRY(mg_lookup(c, key, &m, (flags & FD_SET_GET) != 0));
    int s = FD_OK;
    if ((flags & FD_SET_GET) && m.live && m.type != MG_T_STRING) { s = FD_E_WRONGTYPE; goto done; }
    size_t mark = c->out->len;
    if (flags & FD_SET_GET) {
        if (m.live) { if (resp_add_bulk(c->out, m.val, m.vlen)) { s = FD_E_NOMEM; goto done; } }
        else if (resp_add_null(c->out)) { s = FD_E_NOMEM; goto done; }
    }
    if (((flags & FD_SET_NX) && m.live) || ((flags & FD_SET_XX) && !m.live)) {
        if (flags & FD_SET_GET) goto done;
        s = abort_nx ? (resp_add_int(c->out, 0) ? FD_E_NOMEM : FD_OK)
                     : (resp_add_null(c->out) ? FD_E_NOMEM : FD_OK);
        goto done;
    }
    if ((flags & FD_SET_KEEPTTL) && m.live) expire = m.expire;
    s = mg_write_string(c, key, expire, val->ptr, val->len, NULL, 0);
    if (s != FD_OK) { c->out->len = mark; goto done; }
    if (flags & FD_SET_GET) goto done;
    if (abort_nx) s = resp_add_int(c->out, 1) ? FD_E_NOMEM : FD_OK;
    else s = resp_add_status(c->out, "OK") ? FD_E_NOMEM : FD_OK;
done:
    meta_free(&m);
    return s;
}

static int cmd_set(mg_ctx *c)
{
    int flags;
    const resp_arg *exp;
    int64_t expire = 0;
    TRY(fd_parse_set_opts(c->argv, c->argc, 3, 1, &flags, &exp));
    if (exp) TRY(fd_set_expire_ms(exp, flags, c->now_ms, &expire));
    return set_generic(c, flags, expire, &c->argv[1], &c->argv[2], 0);
}

static int cmd_setnx(mg_ctx *c) { return set_generic(c, FD_SET_NX, 0, &c->argv[1], &c->argv[2], 1); }

static int cmd_setex(mg_ctx *c)
{
    int64_t expire;
    TRY(fd_set_expire_ms(&c->argv[2], FD_SET_EX, c->now_ms, &expire));
    return set_generic(c, 0, expire, &c->argv[1], &c->argv[3], 0);
}

static int cmd_psetex(mg_ctx *c)
{
    int64_t expire;
    TRY(fd_set_expire_ms(&c->argv[2], FD_SET_PX, c->now_ms, &expire));
    return set_generic(c, 0, expire, &c->argv[1], &c->argv[3], 0);
}

static int cmd_getset(mg_ctx *c) { return set_generic(c, FD_SET_GET, 0, &c->argv[1], &c->argv[2], 0); }

static int cmd_get(mg_ctx *c)
{
    mg_meta m;
    TRY(lookup_string(c, &c->argv[1], &m));
    int r = m.live ? resp_add_bulk(c->out, m.val, m.vlen) : resp_add_null(c->out);
    meta_free(&m);
    return r ? FD_E_NOMEM : FD_OK;
}

static int cmd_getdel(mg_ctx *c)
{
    mg_meta m;
    TRY(lookup_string(c, &c->argv[1], &m));
    int s = FD_OK;
    if (!m.live) s = resp_add_null(c->out) ? FD_E_NOMEM : FD_OK;
    else {
        size_t mark = c->out->len;
        if (resp_add_bulk(c->out, m.val, m.vlen)) s = FD_E_NOMEM;
        else if ((s = mg_delete(c, &c->argv[1])) != FD_OK) c->out->len = mark;
    }
    meta_free(&m);
    return s;
}

static int cmd_getex(mg_ctx *c)
{
    int flags;
    const resp_arg *exp;
    int64_t expire = 0;
    TRY(fd_parse_set_opts(c->argv, c->argc, 2, 0, &flags, &exp));
    mg_meta m;
    TRY(lookup_string(c, &c->argv[1], &m));
    int s = FD_OK;
    if (!m.live) { s = resp_add_null(c->out) ? FD_E_NOMEM : FD_OK; goto done; }
    if (exp && (s = fd_set_expire_ms(exp, flags, c->now_ms, &expire)) != FD_OK) goto done;
    size_t mark = c->out->len;
    if (resp_add_bulk(c->out, m.val, m.vlen)) { s = FD_E_NOMEM; goto done; }
    if (exp && expire <= c->now_ms) s = mg_delete(c, &c->argv[1]);
    else if (exp) s = mg_set_expire(c, &c->argv[1], expire);
    else if ((flags & FD_SET_PERSIST) && m.expire) s = mg_set_expire(c, &c->argv[1], 0);
    if (s != FD_OK) c->out->len = mark;
done:
    meta_free(&m);
    return s;
}

/* Sort order of argument indexes by key bytes (lookup_many). */
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
static int lookup_many(mg_ctx *c, int first, int step, mg_meta *metas, int n, int want_value,
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
        append_key(&arr, ks, refs[i].a->ptr, refs[i].a->len);
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
        for (int i = 0; i < n; i++) meta_free(&metas[i]);
        return mongo_fail(c);
    }
    return FD_OK;
}

static int cmd_mget(mg_ctx *c)
{
    int n = c->argc - 1;
    mg_meta *m = calloc((size_t)n, sizeof *m);
    if (!m) return FD_E_NOMEM;
    int s = lookup_many(c, 1, 1, m, n, 1, NULL);
    if (s == FD_OK) {
        if (resp_add_array(c->out, n)) s = FD_E_NOMEM;
        for (int i = 0; i < n && s == FD_OK; i++) {
            int r = (m[i].live && m[i].type == MG_T_STRING) ? resp_add_bulk(c->out, m[i].val, m[i].vlen)
                                                           : resp_add_null(c->out);
            if (r) s = FD_E_NOMEM;
        }
        for (int i = 0; i < n; i++) meta_free(&m[i]);
    }
    free(m);
    return s;
}

static int cmd_strlen(mg_ctx *c)
{
    mg_meta m;
    TRY(lookup_string(c, &c->argv[1], &m));
    int r = resp_add_int(c->out, m.live ? (long long)m.vlen : 0);
    meta_free(&m);
    return r ? FD_E_NOMEM : FD_OK;
}

static int cmd_getrange(mg_ctx *c)
{
    long long start, end;
    TRY(fd_arg_ll(&c->argv[2], &start));
    TRY(fd_arg_ll(&c->argv[3], &end));
    mg_meta m;
    TRY(lookup_string(c, &c->argv[1], &m));
    long long len = m.live ? (long long)m.vlen : 0;
    int r;
    if (!m.live || (start < 0 && end < 0 && start > end)) r = resp_add_bulk(c->out, "", 0);
    else {
        if (start < 0) start = len + start;
        if (end < 0) end = len + end;
        if (start < 0) start = 0;
        if (end < 0) end = 0;
        if (end >= len) end = len - 1;
        if (start > end || len == 0) r = resp_add_bulk(c->out, "", 0);
        else r = resp_add_bulk(c->out, m.val + start, (size_t)(end - start + 1));
    }
    meta_free(&m);
    return r ? FD_E_NOMEM : FD_OK;
}

static int mset_bulk(mg_ctx *c)
{
    mongoc_bulk_operation_t *bulk = mongoc_collection_create_bulk_operation_with_opts(c->coll, NULL);
    bson_t opts = BSON_INITIALIZER;
    bson_append_bool(&opts, "upsert", -1, true);
    int s = FD_OK;
    for (int j = 1; j < c->argc && s == FD_OK; j += 2) {
        bson_t q = BSON_INITIALIZER, d = BSON_INITIALIZER;
        append_key(&q, "_id", c->argv[j].ptr, c->argv[j].len);
        bson_append_utf8(&d, "type", -1, "string", -1);
        append_value(&d, c->argv[j + 1].ptr, c->argv[j + 1].len);
        if (!mongoc_bulk_operation_replace_one_with_opts(bulk, &q, &d, &opts, &c->err)) s = mongo_fail(c);
        bson_destroy(&q);
        bson_destroy(&d);
    }
    if (s == FD_OK && !mongoc_bulk_operation_execute(bulk, NULL, &c->err)) s = mongo_fail(c);
    mongoc_bulk_operation_destroy(bulk);
    bson_destroy(&opts);
    return s;
}

static int cmd_mset(mg_ctx *c)
{
    if (c->argc % 2 == 0) {
        OUT(resp_add_error(c->out, "ERR wrong number of arguments for 'mset' command"));
        return FD_OK;
    }
    TRY(mset_bulk(c));
    OUT(resp_add_status(c->out, "OK"));
    return FD_OK;
}

static int cmd_msetnx(mg_ctx *c)
{
    if (c->argc % 2 == 0) {
        OUT(resp_add_error(c->out, "ERR wrong number of arguments for 'msetnx' command"));
        return FD_OK;
    }
    int n = (c->argc - 1) / 2, any = 0;
    mg_meta *m = calloc((size_t)n, sizeof *m);
    if (!m) return FD_E_NOMEM;
    int s = lookup_many(c, 1, 2, m, n, 0, NULL);
    if (s != FD_OK) { free(m); return s; }
    for (int i = 0; i < n; i++) { if (m[i].live) any = 1; meta_free(&m[i]); }
    free(m);
    if (any) { OUT(resp_add_int(c->out, 0)); return FD_OK; }
    TRY(mset_bulk(c));
    OUT(resp_add_int(c->out, 1));
    return FD_OK;
}

static int incr_generic(mg_ctx *c, long long incr)
{
    const resp_arg *key = &c->argv[1];
    /* fast path: an existing live integer that will not overflow, in one
     * findAndModify: {_id, type: string, value <= MAX-incr (numbers only), live} */
    {
        bson_t q = BSON_INITIALIZER, rng, u = BSON_INITIALIZER, x, reply;
        append_key(&q, "_id", key->ptr, key->len);
        bson_append_utf8(&q, "type", -1, "string", -1);
        bson_append_document_begin(&q, "value", -1, &rng);
        if (incr >= 0) bson_append_int64(&rng, "$lte", -1, LLONG_MAX - incr);
        else bson_append_int64(&rng, "$gte", -1, LLONG_MIN - incr);
        bson_append_document_end(&q, &rng);
        append_live(&q, c->now_ms);
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
        if (!ok) return mongo_fail(c);
        if (found) { OUT(resp_add_int(c->out, v)); return FD_OK; }
    }
    /* slow path: missing, expired, not an integer, overflow, wrong type */
    mg_meta m;
    TRY(lookup_string(c, key, &m));
    long long v = 0;
    int s = FD_OK;
    if (m.live && resp_str2ll(m.val, m.vlen, &v) != 0) s = FD_E_NOTINT;
    else if ((incr < 0 && v < 0 && incr < LLONG_MIN - v) || (incr > 0 && v > 0 && incr > LLONG_MAX - v))
        s = FD_E_OVERFLOW;
    else {
        v += incr;
        char buf[32];
        int n = resp_ll2str(buf, sizeof buf, v);
        s = mg_write_string(c, key, m.live ? m.expire : 0, buf, (size_t)n, NULL, 0);
        if (s == FD_OK && resp_add_int(c->out, v)) s = FD_E_NOMEM;
    }
    meta_free(&m);
    return s;
}

static int cmd_incr(mg_ctx *c) { return incr_generic(c, 1); }
static int cmd_decr(mg_ctx *c) { return incr_generic(c, -1); }

static int cmd_incrby(mg_ctx *c)
{
    long long incr;
    TRY(fd_arg_ll(&c->argv[2], &incr));
    return incr_generic(c, incr);
}

static int cmd_decrby(mg_ctx *c)
{
    long long incr;
    TRY(fd_arg_ll(&c->argv[2], &incr));
    if (incr == LLONG_MIN) {
        OUT(resp_add_error(c->out, "ERR decrement would overflow"));
        return FD_OK;
    }
    return incr_generic(c, -incr);
}

static int cmd_incrbyfloat(mg_ctx *c)
{
    mg_meta m;
    TRY(lookup_string(c, &c->argv[1], &m));
    long double v = 0, incr;
    int s = FD_OK;
    char *buf = NULL;
    if (m.live && resp_str2ld(m.val, m.vlen, &v) != 0) { s = FD_E_NOTFLOAT; goto done; }
    if (resp_str2ld(c->argv[2].ptr, c->argv[2].len, &incr) != 0) { s = FD_E_NOTFLOAT; goto done; }
    v += incr;
    if (isnan(v) || isinf(v)) { s = FD_E_NAN; goto done; }
    size_t cap = 5 * 1024 + 64;
    buf = malloc(cap);
    if (!buf) { s = FD_E_NOMEM; goto done; }
    int n = resp_format_ld(buf, cap, v);
    if (n <= 0 || (size_t)n >= cap) { s = FD_E_INTERNAL; goto done; }
    s = mg_write_string(c, &c->argv[1], m.live ? m.expire : 0, buf, (size_t)n, NULL, 0);
    if (s == FD_OK && resp_add_bulk(c->out, buf, (size_t)n)) s = FD_E_NOMEM;
done:
    free(buf);
    meta_free(&m);
    return s;
}

static int cmd_append(mg_ctx *c)
{
    mg_meta m;
    const resp_arg *a = &c->argv[2];
    TRY(lookup_string(c, &c->argv[1], &m));
    int s;
    if (!m.live) {
        s = mg_write_string(c, &c->argv[1], 0, a->ptr, a->len, NULL, 0);
        if (s == FD_OK && resp_add_int(c->out, (long long)a->len)) s = FD_E_NOMEM;
    } else if ((long long)m.vlen + (long long)a->len > c->max_bulk) {
        s = FD_E_STRLEN;
    } else {
        size_t total = m.vlen + a->len;
        s = mg_write_string(c, &c->argv[1], m.expire, m.val, m.vlen, a->ptr, a->len);
        if (s == FD_OK && resp_add_int(c->out, (long long)total)) s = FD_E_NOMEM;
    }
    meta_free(&m);
    return s;
}

static int cmd_setrange(mg_ctx *c)
{
    long long off;
    const resp_arg *a = &c->argv[3];
    TRY(fd_arg_ll(&c->argv[2], &off));
    if (off < 0) return FD_E_OFFSET;
    mg_meta m;
    TRY(lookup_string(c, &c->argv[1], &m));
    size_t olen = m.live ? m.vlen : 0;
    int s = FD_OK;
    if (a->len == 0) { s = resp_add_int(c->out, (long long)olen) ? FD_E_NOMEM : FD_OK; goto done; }
    if (off > c->max_bulk - (long long)a->len) { s = FD_E_STRLEN; goto done; }
    size_t end = (size_t)off + a->len;
    size_t nlen = end > olen ? end : olen;
    char *b = malloc(nlen);
    if (!b) { s = FD_E_NOMEM; goto done; }
    if (olen) memcpy(b, m.val, olen);
    if ((size_t)off > olen) memset(b + olen, 0, (size_t)off - olen);
    memcpy(b + off, a->ptr, a->len);
    s = mg_write_string(c, &c->argv[1], m.live ? m.expire : 0, b, nlen, NULL, 0);
    free(b);
    if (s == FD_OK && resp_add_int(c->out, (long long)nlen)) s = FD_E_NOMEM;
done:
    meta_free(&m);
    return s;
}

/* ================================================================ keys */

static int cmd_del(mg_ctx *c)
{
    int n = c->argc - 1;
    mg_meta *m = calloc((size_t)n, sizeof *m);
    unsigned char *dup = calloc((size_t)n, 1);
    if (!m || !dup) { free(m); free(dup); return FD_E_NOMEM; }
    int s = lookup_many(c, 1, 1, m, n, 0, dup);
    if (s != FD_OK) { free(m); free(dup); return s; }
    long long live = 0;
    int found = 0;
    for (int i = 0; i < n; i++) {
        if (dup[i]) continue;                 /* DEL a a counts a once */
        if (m[i].found) found = 1;
        if (m[i].live) live++;
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
            append_key(&arr, ks, c->argv[1 + i].ptr, c->argv[1 + i].len);
        }
        bson_append_array_end(&in, &arr);
        bson_append_document_end(&q, &in);
        if (!mongoc_collection_delete_many(c->coll, &q, NULL, NULL, &c->err)) s = mongo_fail(c);
        bson_destroy(&q);
    }
    for (int i = 0; i < n; i++) meta_free(&m[i]);
    free(m);
    free(dup);
    TRY(s);
    OUT(resp_add_int(c->out, live));
    return FD_OK;
}

static int cmd_exists(mg_ctx *c)
{
    int n = c->argc - 1;
    mg_meta *m = calloc((size_t)n, sizeof *m);
    if (!m) return FD_E_NOMEM;
    int s = lookup_many(c, 1, 1, m, n, 0, NULL);
    if (s != FD_OK) { free(m); return s; }
    long long live = 0;
    for (int i = 0; i < n; i++) { if (m[i].live) live++; meta_free(&m[i]); }
    free(m);
    OUT(resp_add_int(c->out, live));
    return FD_OK;
}

static int cmd_type(mg_ctx *c)
{
    mg_meta m;
    TRY(mg_lookup(c, &c->argv[1], &m, 0));
    int r = resp_add_status(c->out, m.live ? type_names[m.type] : "none");
    meta_free(&m);
    return r ? FD_E_NOMEM : FD_OK;
}

static int expire_generic(mg_ctx *c, int64_t base, int seconds)
{
    int flags;
    int r = fd_parse_expire_opts(c->argv, c->argc, 3, &flags, c->out);
    if (r) return r > 0 ? FD_OK : FD_E_NOMEM;    /* 1: an error was replied */
    long long when;
    TRY(fd_expire_when(&c->argv[2], base, seconds, &when));
    mg_meta m;
    TRY(mg_lookup(c, &c->argv[1], &m, 0));
    int s = FD_OK;
    int64_t cur = m.expire;
    if (!m.live || fd_expire_refused(flags, cur, when)) {
        s = resp_add_int(c->out, 0) ? FD_E_NOMEM : FD_OK;
    } else {
        s = when <= c->now_ms ? mg_delete(c, &c->argv[1]) : mg_set_expire(c, &c->argv[1], when);
        if (s == FD_OK && resp_add_int(c->out, 1)) s = FD_E_NOMEM;
    }
    meta_free(&m);
    return s;
}

static int cmd_expire(mg_ctx *c)    { return expire_generic(c, c->now_ms, 1); }
static int cmd_pexpire(mg_ctx *c)   { return expire_generic(c, c->now_ms, 0); }
static int cmd_expireat(mg_ctx *c)  { return expire_generic(c, 0, 1); }
static int cmd_pexpireat(mg_ctx *c) { return expire_generic(c, 0, 0); }

static int ttl_generic(mg_ctx *c, int mode)
{
    mg_meta m;
    TRY(mg_lookup(c, &c->argv[1], &m, 0));
    long long r;
    if (!m.live) r = -2;
    else if (!m.expire) r = -1;
    else if (mode >= 2) r = mode == 2 ? (m.expire + 500) / 1000 : m.expire;
    else {
        long long ttl = m.expire - c->now_ms;
        if (ttl < 0) ttl = 0;
        r = mode == 1 ? ttl : (ttl + 500) / 1000;
    }
    meta_free(&m);
    OUT(resp_add_int(c->out, r));
    return FD_OK;
}

static int cmd_ttl(mg_ctx *c)         { return ttl_generic(c, 0); }
static int cmd_pttl(mg_ctx *c)        { return ttl_generic(c, 1); }
static int cmd_expiretime(mg_ctx *c)  { return ttl_generic(c, 2); }
static int cmd_pexpiretime(mg_ctx *c) { return ttl_generic(c, 3); }

static int cmd_persist(mg_ctx *c)
{
    mg_meta m;
    TRY(mg_lookup(c, &c->argv[1], &m, 0));
    int s = FD_OK;
    if (!m.live || !m.expire) s = resp_add_int(c->out, 0) ? FD_E_NOMEM : FD_OK;
    else {
        s = mg_set_expire(c, &c->argv[1], 0);
        if (s == FD_OK && resp_add_int(c->out, 1)) s = FD_E_NOMEM;
    }
    meta_free(&m);
    return s;
}

/* Every live key (with its type and 64-bit scan hash). */

static int keyent_cmp(const void *a, const void *b)
{
    const mg_keyent *x = a, *y = b;
    if (x->h != y->h) return x->h < y->h ? -1 : 1;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return memcmp(x->key, y->key, x->len);
}

static void keys_free(mg_keyent *v, size_t n)
{
    for (size_t i = 0; i < n; i++) free(v[i].key);
    free(v);
}

static int all_keys(mg_ctx *c, mg_keyent **out, size_t *count, int sorted)
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
        e->h = hash_key((const char *)kp, kl) | 1;   /* never 0: 0 is "done" */
        e->type = MG_T_STRING;
        if (bson_iter_init_find(&it, doc, "type") && BSON_ITER_HOLDS_UTF8(&it)) {
            int t = type_of(bson_iter_utf8(&it, NULL));
            if (t) e->type = t;
        }
        n++;
    }
    if (s == FD_OK && mongoc_cursor_error(cur, &c->err)) s = mongo_fail(c);
    mongoc_cursor_destroy(cur);
    bson_destroy(&q);
    bson_destroy(&opts);
    if (s != FD_OK) { keys_free(v, n); return s; }
    if (sorted && n > 1) qsort(v, n, sizeof *v, keyent_cmp);
    *out = v;
    *count = n;
    return FD_OK;
}

static int cmd_keys(mg_ctx *c)
{
    const resp_arg *pat = &c->argv[1];
    int all = pat->len == 1 && pat->ptr[0] == '*';
    mg_keyent *v; size_t n;
    TRY(all_keys(c, &v, &n, 0));
    long long hits = 0;
    for (size_t i = 0; i < n; i++)
        if (all || resp_glob_match(pat->ptr, pat->len, v[i].key, v[i].len, 0)) hits++;
    int r = resp_add_array(c->out, hits);
    for (size_t i = 0; i < n && !r; i++)
        if (all || resp_glob_match(pat->ptr, pat->len, v[i].key, v[i].len, 0))
            r = resp_add_bulk(c->out, v[i].key, v[i].len);
    keys_free(v, n);
    return r ? FD_E_NOMEM : FD_OK;
}

/* SCAN: keys in the order of a 64-bit hash; the cursor is the hash to resume
 * from, so a key present for the whole iteration is returned exactly once
 * whatever is added or deleted meanwhile. Each call reads every key id
 * (O(keys), as KEYS): fine for tests and small sets; see docs/mongodb.md. */
static int cmd_scan(mg_ctx *c)
{
    uint64_t cursor;
    if (fd_parse_cursor(&c->argv[1], &cursor) != 0) {
        OUT(resp_add_error(c->out, "ERR invalid cursor"));
        return FD_OK;
    }
    long long count;
    const resp_arg *pat, *type;
    TRY(fd_parse_scan_opts(c->argv, c->argc, 2, &count, &pat, &type));
    /* an iteration in progress keeps the key list it started with (SCAN
     * may return keys deleted meanwhile and miss keys added meanwhile, as
     * Redis's); a cursor we do not remember reads the list again */
    mg_keyent *v = NULL; size_t n = 0;
    mg_backend *b = c->b;
    if (cursor) {
        pthread_mutex_lock(&b->smu);
        for (int k = 0; k < MG_SCANS; k++)
            if (b->scans[k].v && b->scans[k].next == cursor) {
                v = b->scans[k].v; n = b->scans[k].n;
                b->scans[k].v = NULL;
                break;
            }
        pthread_mutex_unlock(&b->smu);
    }
    if (!v) TRY(all_keys(c, &v, &n, 1));
    size_t i = 0;
    while (i < n && v[i].h < cursor) i++;
    size_t from = i;
    long long visited = 0;
    while (i < n && (visited < count || (i > from && v[i].h == v[i - 1].h))) { i++; visited++; }
    uint64_t next = i < n ? v[i - 1].h + 1 : 0;
    if (i < n && i == from) next = 0;
    long long hits = 0;
    for (int pass = 0; pass < 2; pass++) {
        int r = 0;
        if (pass == 1) {
            char num[24];
            int nl = snprintf(num, sizeof num, "%llu", (unsigned long long)next);
            r = resp_add_array(c->out, 2);
            if (!r) r = resp_add_bulk(c->out, num, (size_t)nl);
            if (!r) r = resp_add_array(c->out, hits);
        }
        for (size_t k = from; k < i && !r; k++) {
            if (v[k].expire && v[k].expire <= c->now_ms) continue;
            if (type && !(type->len == strlen(type_names[v[k].type]) &&
                          strncasecmp(type->ptr, type_names[v[k].type], type->len) == 0)) continue;
            if (pat && !resp_glob_match(pat->ptr, pat->len, v[k].key, v[k].len, 0)) continue;
            if (pass == 0) hits++;
            else r = resp_add_bulk(c->out, v[k].key, v[k].len);
        }
        if (r) { keys_free(v, n); return FD_E_NOMEM; }
    }
    if (next) {
        /* remember the list for the next call (the oldest slot goes) */
        pthread_mutex_lock(&b->smu);
        int slot = 0;
        int64_t now = mono_us();
        for (int k = 0; k < MG_SCANS; k++) {
            if (b->scans[k].v && now - b->scans[k].born_us > MG_SCAN_AGE_US) {
                keys_free(b->scans[k].v, b->scans[k].n);
                b->scans[k].v = NULL;
            }
            if (!b->scans[k].v) { slot = k; break; }
            if (b->scans[k].born_us < b->scans[slot].born_us) slot = k;
        }
        if (b->scans[slot].v) keys_free(b->scans[slot].v, b->scans[slot].n);
        b->scans[slot].v = v;
        b->scans[slot].n = n;
        b->scans[slot].next = next;
        b->scans[slot].born_us = now;
        pthread_mutex_unlock(&b->smu);
    } else {
        keys_free(v, n);
    }
    return FD_OK;
}

/* RANDOMKEY: $sample of a few documents, the first live one; when all of
 * them had expired, a live key chosen from the full list. */
static int cmd_randomkey(mg_ctx *c)
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
    if (bad) return mongo_fail(c);
    if (!found && any) {
        mg_keyent *v; size_t n;
        TRY(all_keys(c, &v, &n, 0));
        if (n) {
            size_t pick = (size_t)hash_key((const char *)&c->now_ms, sizeof c->now_ms) % n;
            r = resp_add_bulk(c->out, v[pick].key, v[pick].len);
            found = 1;
        }
        keys_free(v, n);
    }
    if (!found) r = resp_add_null(c->out);
    return r ? FD_E_NOMEM : FD_OK;
}

static int rename_generic(mg_ctx *c, int nx)
{
    const resp_arg *sa = &c->argv[1], *da = &c->argv[2];
    mg_meta sm, dm;
    TRY(mg_lookup(c, sa, &sm, 1));
    int s = FD_OK;
    if (!sm.live) { meta_free(&sm); return FD_E_NOKEY; }
    if (sa->len == da->len && memcmp(sa->ptr, da->ptr, sa->len) == 0) {
        meta_free(&sm);
        OUT(nx ? resp_add_int(c->out, 0) : resp_add_status(c->out, "OK"));
        return FD_OK;
    }
    if (nx) {
        if ((s = mg_lookup(c, da, &dm, 0)) != FD_OK) { meta_free(&sm); return s; }
        int live = dm.live;
        meta_free(&dm);
        if (live) { meta_free(&sm); OUT(resp_add_int(c->out, 0)); return FD_OK; }
    }
    /* the source's document under the new _id, then the source goes */
    bson_t d = BSON_INITIALIZER;
    bson_iter_t it;
    if (bson_iter_init(&it, sm.doc))
        while (bson_iter_next(&it))
            if (strcmp(bson_iter_key(&it), "_id")) bson_append_iter(&d, NULL, 0, &it);
    s = mg_write_doc(c, da, &d);
    bson_destroy(&d);
    meta_free(&sm);
    if (s == FD_OK) s = mg_delete(c, sa);
    TRY(s);
    OUT(nx ? resp_add_int(c->out, 1) : resp_add_status(c->out, "OK"));
    return FD_OK;
}

static int cmd_rename(mg_ctx *c)   { return rename_generic(c, 0); }
static int cmd_renamenx(mg_ctx *c) { return rename_generic(c, 1); }

/* {count: db0, query: q} -> n, or -1 (the count command: no aggregation
 * pipeline; with a range on expireAt the TTL index answers it) */
static int64_t count_cmd(mongoc_collection_t *coll, const bson_t *q, bson_error_t *err)
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

/* DBSIZE: every document minus the expired ones still there; the second
 * count is answered by the TTL index (expireAt <= now). */
static int cmd_dbsize(mg_ctx *c)
{
    bson_t q = BSON_INITIALIZER, x;
    int64_t all = count_cmd(c->coll, NULL, &c->err);
    if (all < 0) { bson_destroy(&q); return mongo_fail(c); }
    bson_append_document_begin(&q, "expireAt", -1, &x);
    bson_append_date_time(&x, "$lte", -1, c->now_ms);
    bson_append_document_end(&q, &x);
    int64_t dead = count_cmd(c->coll, &q, &c->err);
    bson_destroy(&q);
    if (dead < 0) return mongo_fail(c);
    OUT(resp_add_int(c->out, all - dead > 0 ? all - dead : 0));
    return FD_OK;
}

static int cmd_flushdb(mg_ctx *c)
{
    if (c->argc > 2 || (c->argc == 2 && !fd_opt_is(&c->argv[1], "async") && !fd_opt_is(&c->argv[1], "sync")))
        return FD_E_SYNTAX;
    bson_t q = BSON_INITIALIZER;
    bool ok = mongoc_collection_delete_many(c->coll, &q, NULL, NULL, &c->err);
    bson_destroy(&q);
    if (!ok) return mongo_fail(c);
    OUT(resp_add_status(c->out, "OK"));
    return FD_OK;
}

/* ================================================================ member index
 *
 * Finding a field or member in a loaded collection: a linear scan while it
 * is small, else an open-addressing table of positions built on first use
 * and extended as elements are appended (SADD/HSET/ZADD of many, and the
 * set operations, stay O(elements) instead of O(elements^2)). Removing an
 * element shifts positions: the table is then rebuilt on the next lookup. */

typedef struct mg_ix { uint32_t *slot; size_t mask, count; } mg_ix;
typedef void (*mg_keyat)(const void *coll, size_t i, const char **p, size_t *l);

#define MG_IX_MIN 16

static void ix_free(mg_ix *x) { free(x->slot); memset(x, 0, sizeof *x); }
static void ix_invalidate(mg_ix *x) { x->count = SIZE_MAX; }

static void ix_put(mg_ix *x, const void *coll, mg_keyat at, size_t i)
{
    const char *p; size_t l;
    at(coll, i, &p, &l);
    size_t h = (size_t)hash_key(p, l) & x->mask;
    while (x->slot[h]) h = (h + 1) & x->mask;
    x->slot[h] = (uint32_t)(i + 1);
}

static long ix_find(mg_ix *x, const void *coll, size_t n, mg_keyat at, const char *p, size_t l)
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
    for (size_t h = (size_t)hash_key(p, l) & x->mask; x->slot[h]; h = (h + 1) & x->mask) {
        size_t i = x->slot[h] - 1;
        at(coll, i, &q, &ql);
        if (ql == l && memcmp(q, p, l) == 0) return (long)i;
    }
    return -1;
}

/* ================================================================ hashes
 *
 * { _id, type: "hash", value: [ {f: BinData, v: BinData}, ... ], expireAt? }
 * Field names are arbitrary bytes, so they are values, never MongoDB field
 * names. Each command reads the document, changes the array here and writes
 * it back (one replaceOne; the key's worker runs its commands in order, so
 * this is atomic for this frontdoor). Fields keep insertion order. */

typedef struct mg_field { const char *f, *v; size_t fl, vl; char *own; } mg_field;
typedef struct mg_hash { mg_field *a; size_t n, cap; mg_ix ix; } mg_hash;

static void hash_free(mg_hash *h)
{
    ix_free(&h->ix);
    for (size_t i = 0; i < h->n; i++) free(h->a[i].own);
    free(h->a);
    memset(h, 0, sizeof *h);
}

static int hash_push(mg_hash *h, const char *f, size_t fl, const char *v, size_t vl)
{
    if (h->n == h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 8;
        mg_field *na = realloc(h->a, nc * sizeof *na);
        if (!na) return FD_E_NOMEM;
        h->a = na; h->cap = nc;
    }
    h->a[h->n++] = (mg_field){f, v, fl, vl, NULL};
    return FD_OK;
}

/* Look up a hash key; h gets its fields (pointing into m->doc). */
static int hash_load(mg_ctx *c, const resp_arg *key, mg_meta *m, mg_hash *h)
{
    memset(h, 0, sizeof *h);
    TRY(mg_lookup(c, key, m, 1));
    if (!m->live) return FD_OK;
    if (m->type != MG_T_HASH) { meta_free(m); return FD_E_WRONGTYPE; }
    bson_iter_t it, arr;
    if (!bson_iter_init_find(&it, m->doc, "value") || !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &arr))
        return FD_OK;
    while (bson_iter_next(&arr)) {
        bson_iter_t e;
        const uint8_t *fp = NULL, *vp = NULL;
        uint32_t fl = 0, vl = 0;
        bson_subtype_t st;
        if (!BSON_ITER_HOLDS_DOCUMENT(&arr) || !bson_iter_recurse(&arr, &e)) continue;
        while (bson_iter_next(&e)) {
            if (!BSON_ITER_HOLDS_BINARY(&e)) continue;
            if (!strcmp(bson_iter_key(&e), "f")) bson_iter_binary(&e, &st, &fl, &fp);
            else if (!strcmp(bson_iter_key(&e), "v")) bson_iter_binary(&e, &st, &vl, &vp);
        }
        if (!fp) continue;
        if (hash_push(h, (const char *)fp, fl, vp ? (const char *)vp : "", vl) != FD_OK) {
            hash_free(h); meta_free(m);
            return FD_E_NOMEM;
        }
    }
    return FD_OK;
}

static void hash_keyat(const void *coll, size_t i, const char **p, size_t *l)
{
    const mg_field *f = &((const mg_hash *)coll)->a[i];
    *p = f->f; *l = f->fl;
}

static long hash_find(mg_hash *h, const char *f, size_t fl)
{
    return ix_find(&h->ix, h, h->n, hash_keyat, f, fl);
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
    if (!h->n) return m->found ? mg_delete(c, key) : FD_OK;
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
    int s = mg_write_doc(c, key, &d);
    bson_destroy(&d);
    return s;
}

/* the result first: it may read h */
#define HASH_DONE(st) do { int st_ = (st); hash_free(&h); meta_free(&m); return st_; } while (0)

static int hset_generic(mg_ctx *c, int hmset)
{
    if (c->argc % 2 == 1) {
        OUT(resp_add_errorf(c->out, "ERR wrong number of arguments for '%s' command", hmset ? "hmset" : "hset"));
        return FD_OK;
    }
    mg_meta m; mg_hash h;
    TRY(hash_load(c, &c->argv[1], &m, &h));
    long long created = 0;
    int s = FD_OK;
    for (int j = 2; j < c->argc && s == FD_OK; j += 2)
        s = hash_set(&h, c->argv[j].ptr, c->argv[j].len, c->argv[j + 1].ptr, c->argv[j + 1].len, 0, &created);
    if (s == FD_OK) s = hash_save(c, &c->argv[1], &m, &h);
    if (s == FD_OK) s = (hmset ? resp_add_status(c->out, "OK") : resp_add_int(c->out, created)) ? FD_E_NOMEM : FD_OK;
    HASH_DONE(s);
}

static int cmd_hset(mg_ctx *c)  { return hset_generic(c, 0); }
static int cmd_hmset(mg_ctx *c) { return hset_generic(c, 1); }

static int cmd_hsetnx(mg_ctx *c)
{
    mg_meta m; mg_hash h;
    TRY(hash_load(c, &c->argv[1], &m, &h));
    int s;
    if (hash_find(&h, c->argv[2].ptr, c->argv[2].len) >= 0) s = resp_add_int(c->out, 0) ? FD_E_NOMEM : FD_OK;
    else {
        s = hash_set(&h, c->argv[2].ptr, c->argv[2].len, c->argv[3].ptr, c->argv[3].len, 0, NULL);
        if (s == FD_OK) s = hash_save(c, &c->argv[1], &m, &h);
        if (s == FD_OK && resp_add_int(c->out, 1)) s = FD_E_NOMEM;
    }
    HASH_DONE(s);
}

static int cmd_hdel(mg_ctx *c)
{
    mg_meta m; mg_hash h;
    TRY(hash_load(c, &c->argv[1], &m, &h));
    long long n = 0;
    for (int j = 2; j < c->argc; j++) {
        long i = hash_find(&h, c->argv[j].ptr, c->argv[j].len);
        if (i < 0) continue;
        free(h.a[i].own);
        memmove(&h.a[i], &h.a[i + 1], (h.n - (size_t)i - 1) * sizeof h.a[0]);
        h.n--;
        ix_invalidate(&h.ix);
        n++;
    }
    int s = n ? hash_save(c, &c->argv[1], &m, &h) : FD_OK;
    if (s == FD_OK && resp_add_int(c->out, n)) s = FD_E_NOMEM;
    HASH_DONE(s);
}

static int cmd_hincrby(mg_ctx *c)
{
    long long incr, v = 0;
    if (resp_str2ll(c->argv[3].ptr, c->argv[3].len, &incr) != 0) return FD_E_NOTINT;
    mg_meta m; mg_hash h;
    TRY(hash_load(c, &c->argv[1], &m, &h));
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

static int cmd_hincrbyfloat(mg_ctx *c)
{
    long double v = 0, incr;
    if (resp_str2ld(c->argv[3].ptr, c->argv[3].len, &incr) != 0) return FD_E_NOTFLOAT;
    if (isnan(incr) || isinf(incr)) {
        OUT(resp_add_error(c->out, "ERR value is NaN or Infinity"));
        return FD_OK;
    }
    mg_meta m; mg_hash h;
    TRY(hash_load(c, &c->argv[1], &m, &h));
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

static int cmd_hget(mg_ctx *c)
{
    mg_meta m; mg_hash h;
    TRY(hash_load(c, &c->argv[1], &m, &h));
    long i = hash_find(&h, c->argv[2].ptr, c->argv[2].len);
    int r = i >= 0 ? resp_add_bulk(c->out, h.a[i].v, h.a[i].vl) : resp_add_null(c->out);
    HASH_DONE(r ? FD_E_NOMEM : FD_OK);
}

static int cmd_hmget(mg_ctx *c)
{
    mg_meta m; mg_hash h;
    TRY(hash_load(c, &c->argv[1], &m, &h));
    int r = resp_add_array(c->out, c->argc - 2);
    for (int j = 2; j < c->argc && !r; j++) {
        long i = hash_find(&h, c->argv[j].ptr, c->argv[j].len);
        r = i >= 0 ? resp_add_bulk(c->out, h.a[i].v, h.a[i].vl) : resp_add_null(c->out);
    }
    HASH_DONE(r ? FD_E_NOMEM : FD_OK);
}

static int cmd_hlen(mg_ctx *c)
{
    mg_meta m; mg_hash h;
    TRY(hash_load(c, &c->argv[1], &m, &h));
    HASH_DONE(resp_add_int(c->out, (long long)h.n) ? FD_E_NOMEM : FD_OK);
}

static int cmd_hexists(mg_ctx *c)
{
    mg_meta m; mg_hash h;
    TRY(hash_load(c, &c->argv[1], &m, &h));
    HASH_DONE(resp_add_int(c->out, hash_find(&h, c->argv[2].ptr, c->argv[2].len) >= 0) ? FD_E_NOMEM : FD_OK);
}

static int cmd_hstrlen(mg_ctx *c)
{
    mg_meta m; mg_hash h;
    TRY(hash_load(c, &c->argv[1], &m, &h));
    long i = hash_find(&h, c->argv[2].ptr, c->argv[2].len);
    HASH_DONE(resp_add_int(c->out, i >= 0 ? (long long)h.a[i].vl : 0) ? FD_E_NOMEM : FD_OK);
}

static int getall_generic(mg_ctx *c, int keys, int vals)
{
    mg_meta m; mg_hash h;
    TRY(hash_load(c, &c->argv[1], &m, &h));
    int r = keys && vals ? resp_add_map(c->out, (long long)h.n) : resp_add_array(c->out, (long long)h.n);
    for (size_t i = 0; i < h.n && !r; i++) {
        if (keys) r = resp_add_bulk(c->out, h.a[i].f, h.a[i].fl);
        if (!r && vals) r = resp_add_bulk(c->out, h.a[i].v, h.a[i].vl);
    }
    HASH_DONE(r ? FD_E_NOMEM : FD_OK);
}

static int cmd_hgetall(mg_ctx *c) { return getall_generic(c, 1, 1); }
static int cmd_hkeys(mg_ctx *c)   { return getall_generic(c, 1, 0); }
static int cmd_hvals(mg_ctx *c)   { return getall_generic(c, 0, 1); }

/* ================================================================ lists
 *
 * { _id, type: "list", value: [ BinData, ... ], expireAt? }: the elements in
 * order. As hashes: read, change here, write the whole document back. */

typedef struct mg_list { const char **p; size_t *l; size_t n, cap; mg_ix ix; } mg_list;

static void list_free(mg_list *L) { free(L->p); free(L->l); ix_free(&L->ix); memset(L, 0, sizeof *L); }

static int list_reserve(mg_list *L, size_t n)
{
    if (n <= L->cap) return FD_OK;
    size_t nc = L->cap ? L->cap : 8;
    while (nc < n) nc *= 2;
    const char **np = realloc(L->p, nc * sizeof *np);
    if (!np) return FD_E_NOMEM;
    L->p = np;
    size_t *nl = realloc(L->l, nc * sizeof *nl);
    if (!nl) return FD_E_NOMEM;
    L->l = nl;
    L->cap = nc;
    return FD_OK;
}

/* An array of BinData (a list's elements, a set's members) of a key of
 * the given type. */
static int array_load_proj(mg_ctx *c, const resp_arg *key, mg_meta *m, mg_list *L, int type,
                           const bson_t *projection)
{
    memset(L, 0, sizeof *L);
    TRY(mg_lookup_proj(c, key, m, projection));
    if (!m->live) return FD_OK;
    if (m->type != type) { meta_free(m); return FD_E_WRONGTYPE; }
    bson_iter_t it, arr;
    if (!bson_iter_init_find(&it, m->doc, "value") || !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &arr))
        return FD_OK;
    while (bson_iter_next(&arr)) {
        if (!BSON_ITER_HOLDS_BINARY(&arr)) continue;
        bson_subtype_t st; uint32_t n; const uint8_t *p;
        bson_iter_binary(&arr, &st, &n, &p);
        if (list_reserve(L, L->n + 1) != FD_OK) { list_free(L); meta_free(m); return FD_E_NOMEM; }
        L->p[L->n] = (const char *)p;
        L->l[L->n++] = n;
    }
    return FD_OK;
}

static int array_load(mg_ctx *c, const resp_arg *key, mg_meta *m, mg_list *L, int type)
{
    return array_load_proj(c, key, m, L, type, NULL);
}

static int array_save(mg_ctx *c, const resp_arg *key, const mg_meta *m, const mg_list *L, int type)
{
    if (!L->n) return m->found ? mg_delete(c, key) : FD_OK;
    bson_t d = BSON_INITIALIZER, arr;
    bson_append_utf8(&d, "type", -1, type_names[type], -1);
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
    int s = mg_write_doc(c, key, &d);
    bson_destroy(&d);
    return s;
}

static int list_load(mg_ctx *c, const resp_arg *key, mg_meta *m, mg_list *L)
{
    return array_load(c, key, m, L, MG_T_LIST);
}

static int list_save(mg_ctx *c, const resp_arg *key, const mg_meta *m, const mg_list *L)
{
    return array_save(c, key, m, L, MG_T_LIST);
}

#define LIST_DONE(st) do { int st_ = (st); list_free(&L); meta_free(&m); return st_; } while (0)

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
    append_key(&q, "_id", key->ptr, key->len);
    bson_append_utf8(&q, "type", -1, "list", -1);
    if (extra_q) bson_concat(&q, extra_q);
    else {
        bson_append_document_begin(&q, "n", -1, &x);
        bson_append_bool(&x, "$exists", -1, true);
        bson_append_document_end(&q, &x);
    }
    append_live(&q, c->now_ms);
    mongoc_find_and_modify_opts_t *fam = mongoc_find_and_modify_opts_new();
    mongoc_find_and_modify_opts_set_update(fam, update);
    mongoc_find_and_modify_opts_set_fields(fam, fields);
    if (return_new) mongoc_find_and_modify_opts_set_flags(fam, MONGOC_FIND_AND_MODIFY_RETURN_NEW);
    bool ok = mongoc_collection_find_and_modify_with_opts(c->coll, &q, fam, reply, &c->err);
    mongoc_find_and_modify_opts_destroy(fam);
    bson_destroy(&q);
    *done = 0;
    if (!ok) return mongo_fail(c);
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
    bson_iter_t v, nit;
    int s = list_fam(c, &c->argv[1], NULL, &u, &fields, 1, &reply, &v, done);
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
    bson_append_document_begin(&proj, "value", -1, &x);
    bson_append_array_begin(&x, "$slice", -1, &a);
    bson_append_int64(&a, "0", -1, from);
    bson_append_int64(&a, "1", -1, count);
    bson_append_array_end(&x, &a);
    bson_append_document_end(&proj, &x);
    int s = array_load_proj(c, key, m, L, MG_T_LIST, &proj);
    bson_destroy(&proj);
    *len = -1;
    bson_iter_t it;
    if (s == FD_OK && m->live && bson_iter_init_find(&it, m->doc, "n") && BSON_ITER_HOLDS_NUMBER(&it))
        *len = bson_iter_as_int64(&it);
    return s;
}

static int push_generic(mg_ctx *c, int left, int xx)
{
    int done;
    TRY(push_fast(c, left, &done));
    if (done) return FD_OK;
    mg_meta m; mg_list L;
    TRY(list_load(c, &c->argv[1], &m, &L));
    if (!m.live && xx) LIST_DONE(resp_add_int(c->out, 0) ? FD_E_NOMEM : FD_OK);
    size_t add = (size_t)(c->argc - 2);
    if (list_reserve(&L, L.n + add) != FD_OK) LIST_DONE(FD_E_NOMEM);
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

static int cmd_lpush(mg_ctx *c)  { return push_generic(c, 1, 0); }
static int cmd_rpush(mg_ctx *c)  { return push_generic(c, 0, 0); }
static int cmd_lpushx(mg_ctx *c) { return push_generic(c, 1, 1); }
static int cmd_rpushx(mg_ctx *c) { return push_generic(c, 0, 1); }

static int pop_generic(mg_ctx *c, int left)
{
    long long count = 1;
    int hascount = c->argc == 3;
    if (c->argc > 3) {
        OUT(resp_add_errorf(c->out, "ERR wrong number of arguments for '%s' command", left ? "lpop" : "rpop"));
        return FD_OK;
    }
    if (hascount && (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &count) != 0 || count < 0))
        return FD_E_RANGE_POSITIVE;
    if (!hascount) {
        int done;
        TRY(pop_fast(c, left, &done));
        if (done) return FD_OK;
    }
    mg_meta m; mg_list L;
    TRY(list_load(c, &c->argv[1], &m, &L));
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

static int cmd_lpop(mg_ctx *c) { return pop_generic(c, 1); }
static int cmd_rpop(mg_ctx *c) { return pop_generic(c, 0); }

static int cmd_llen(mg_ctx *c)
{
    mg_meta m; mg_list L;
    long long len;
    TRY(list_load_slice(c, &c->argv[1], &m, &L, 0, 1, &len));
    if (!m.live || len >= 0) LIST_DONE(resp_add_int(c->out, m.live ? len : 0) ? FD_E_NOMEM : FD_OK);
    list_free(&L);
    meta_free(&m);
    TRY(list_load(c, &c->argv[1], &m, &L));
    LIST_DONE(resp_add_int(c->out, (long long)L.n) ? FD_E_NOMEM : FD_OK);
}

static int cmd_lindex(mg_ctx *c)
{
    mg_meta m; mg_list L;
    long long idx, len;
    if (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &idx) == 0 && idx >= 0 && idx < INT32_MAX) {
        /* one element from the head: only it comes back */
        TRY(list_load_slice(c, &c->argv[1], &m, &L, idx, 1, &len));
        if (!m.live) LIST_DONE(resp_add_null(c->out) ? FD_E_NOMEM : FD_OK);
        LIST_DONE((L.n ? resp_add_bulk(c->out, L.p[0], L.l[0]) : resp_add_null(c->out)) ? FD_E_NOMEM : FD_OK);
    }
    TRY(list_load(c, &c->argv[1], &m, &L));
    if (!m.live) LIST_DONE(resp_add_null(c->out) ? FD_E_NOMEM : FD_OK);
    long long n = (long long)L.n;
    if (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &idx) != 0) LIST_DONE(FD_E_NOTINT);
    if (idx < 0) idx += n;
    if (idx < 0 || idx >= n) LIST_DONE(resp_add_null(c->out) ? FD_E_NOMEM : FD_OK);
    LIST_DONE(resp_add_bulk(c->out, L.p[idx], L.l[idx]) ? FD_E_NOMEM : FD_OK);
}

static int cmd_lrange(mg_ctx *c)
{
    long long start, end;
    if (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &start) != 0 ||
        resp_str2ll(c->argv[3].ptr, c->argv[3].len, &end) != 0) return FD_E_NOTINT;
    mg_meta m; mg_list L;
    if (start >= 0 && start < INT32_MAX && end >= start && end - start < INT32_MAX) {
        /* a range from the head: only its elements come back */
        long long len;
        TRY(list_load_slice(c, &c->argv[1], &m, &L, start, end - start + 1, &len));
        int r = resp_add_array(c->out, (long long)L.n);
        for (size_t i = 0; i < L.n && !r; i++) r = resp_add_bulk(c->out, L.p[i], L.l[i]);
        LIST_DONE(r ? FD_E_NOMEM : FD_OK);
    }
    TRY(list_load(c, &c->argv[1], &m, &L));
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

static int cmd_lset(mg_ctx *c)
{
    mg_meta m; mg_list L;
    TRY(list_load(c, &c->argv[1], &m, &L));
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

static int cmd_ltrim(mg_ctx *c)
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
        TRY(s);
        if (done) { OUT(resp_add_status(c->out, "OK")); return FD_OK; }
    }
    mg_meta m; mg_list L;
    TRY(list_load(c, &c->argv[1], &m, &L));
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

static int cmd_lrem(mg_ctx *c)
{
    long long toremove;
    if (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &toremove) != 0) return FD_E_NOTINT;
    mg_meta m; mg_list L;
    TRY(list_load(c, &c->argv[1], &m, &L));
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

/* ================================================================ sets
 *
 * { _id, type: "set", value: [ BinData, ... ], expireAt? }: the members,
 * each once. Read, change here, write back, as lists. */

static void set_keyat(const void *coll, size_t i, const char **p, size_t *l)
{
    const mg_list *L = coll;
    *p = L->p[i]; *l = L->l[i];
}

static long set_find(mg_list *L, const char *p, size_t n)
{
    return ix_find(&L->ix, L, L->n, set_keyat, p, n);
}

static void set_remove_at(mg_list *L, size_t i)
{
    ix_invalidate(&L->ix);
    memmove(L->p + i, L->p + i + 1, (L->n - i - 1) * sizeof *L->p);
    memmove(L->l + i, L->l + i + 1, (L->n - i - 1) * sizeof *L->l);
    L->n--;
}

static int cmd_sadd(mg_ctx *c)
{
    mg_meta m; mg_list L;
    TRY(array_load(c, &c->argv[1], &m, &L, MG_T_SET));
    long long n = 0;
    for (int j = 2; j < c->argc; j++) {
        if (set_find(&L, c->argv[j].ptr, c->argv[j].len) >= 0) continue;
        if (list_reserve(&L, L.n + 1) != FD_OK) LIST_DONE(FD_E_NOMEM);
        L.p[L.n] = c->argv[j].ptr; L.l[L.n++] = c->argv[j].len;
        n++;
    }
    int s = n ? array_save(c, &c->argv[1], &m, &L, MG_T_SET) : FD_OK;
    if (s == FD_OK && resp_add_int(c->out, n)) s = FD_E_NOMEM;
    LIST_DONE(s);
}

static int cmd_srem(mg_ctx *c)
{
    mg_meta m; mg_list L;
    TRY(array_load(c, &c->argv[1], &m, &L, MG_T_SET));
    long long n = 0;
    for (int j = 2; j < c->argc; j++) {
        long i = set_find(&L, c->argv[j].ptr, c->argv[j].len);
        if (i >= 0) { set_remove_at(&L, (size_t)i); n++; }
    }
    int s = n ? array_save(c, &c->argv[1], &m, &L, MG_T_SET) : FD_OK;
    if (s == FD_OK && resp_add_int(c->out, n)) s = FD_E_NOMEM;
    LIST_DONE(s);
}

static int cmd_scard(mg_ctx *c)
{
    mg_meta m; mg_list L;
    TRY(array_load(c, &c->argv[1], &m, &L, MG_T_SET));
    LIST_DONE(resp_add_int(c->out, (long long)L.n) ? FD_E_NOMEM : FD_OK);
}

static int cmd_sismember(mg_ctx *c)
{
    mg_meta m; mg_list L;
    TRY(array_load(c, &c->argv[1], &m, &L, MG_T_SET));
    LIST_DONE(resp_add_int(c->out, set_find(&L, c->argv[2].ptr, c->argv[2].len) >= 0) ? FD_E_NOMEM : FD_OK);
}

static int cmd_smismember(mg_ctx *c)
{
    mg_meta m; mg_list L;
    TRY(array_load(c, &c->argv[1], &m, &L, MG_T_SET));
    int r = resp_add_array(c->out, c->argc - 2);
    for (int j = 2; j < c->argc && !r; j++) r = resp_add_int(c->out, set_find(&L, c->argv[j].ptr, c->argv[j].len) >= 0);
    LIST_DONE(r ? FD_E_NOMEM : FD_OK);
}

static int cmd_smembers(mg_ctx *c)
{
    mg_meta m; mg_list L;
    TRY(array_load(c, &c->argv[1], &m, &L, MG_T_SET));
    int r = resp_add_set(c->out, (long long)L.n);
    for (size_t i = 0; i < L.n && !r; i++) r = resp_add_bulk(c->out, L.p[i], L.l[i]);
    LIST_DONE(r ? FD_E_NOMEM : FD_OK);
}

static int cmd_smove(mg_ctx *c)
{
    mg_meta m, dm; mg_list L, D;
    TRY(array_load(c, &c->argv[1], &m, &L, MG_T_SET));
    int s = mg_lookup(c, &c->argv[2], &dm, 0);
    if (s != FD_OK) LIST_DONE(s);
    int dlive = dm.live, dtype = dm.type;
    meta_free(&dm);
    if (!m.live) LIST_DONE(resp_add_int(c->out, 0) ? FD_E_NOMEM : FD_OK);
    if (dlive && dtype != MG_T_SET) LIST_DONE(FD_E_WRONGTYPE);
    const resp_arg *mb = &c->argv[3];
    long i = set_find(&L, mb->ptr, mb->len);
    if (c->argv[1].len == c->argv[2].len && memcmp(c->argv[1].ptr, c->argv[2].ptr, c->argv[1].len) == 0)
        LIST_DONE(resp_add_int(c->out, i >= 0) ? FD_E_NOMEM : FD_OK);
    if (i < 0) LIST_DONE(resp_add_int(c->out, 0) ? FD_E_NOMEM : FD_OK);
    set_remove_at(&L, (size_t)i);
    if ((s = array_save(c, &c->argv[1], &m, &L, MG_T_SET)) != FD_OK) LIST_DONE(s);
    if ((s = array_load(c, &c->argv[2], &dm, &D, MG_T_SET)) != FD_OK) LIST_DONE(s);
    if (set_find(&D, mb->ptr, mb->len) < 0) {
        if (list_reserve(&D, D.n + 1) != FD_OK) s = FD_E_NOMEM;
        else {
            D.p[D.n] = mb->ptr; D.l[D.n++] = mb->len;
            s = array_save(c, &c->argv[2], &dm, &D, MG_T_SET);
        }
    }
    list_free(&D);
    meta_free(&dm);
    if (s == FD_OK && resp_add_int(c->out, 1)) s = FD_E_NOMEM;
    LIST_DONE(s);
}

enum { OP_INTER, OP_UNION, OP_DIFF };

/* The sets of argv[first .. first+n) loaded (every key's type is checked,
 * WRONGTYPE even when another key is missing), and op's result in out
 * (pointing into their documents; limit > 0: stop at that many). */
typedef struct mg_setop { int n, loaded; mg_meta *ms; mg_list *ls; mg_list out; } mg_setop;

static void setop_free(mg_setop *o)
{
    list_free(&o->out);
    for (int j = 0; j < o->loaded; j++) { list_free(&o->ls[j]); meta_free(&o->ms[j]); }
    free(o->ms);
    free(o->ls);
}

static int setop_compute(mg_ctx *c, int first, int n, int op, long long limit, mg_setop *o)
{
    memset(o, 0, sizeof *o);
    o->n = n;
    o->ms = calloc((size_t)n, sizeof *o->ms);
    o->ls = calloc((size_t)n, sizeof *o->ls);
    int s = (o->ms && o->ls) ? FD_OK : FD_E_NOMEM, empty = 0, smallest = -1;
    mg_list *ls = o->ls;
    for (int j = 0; j < n && s == FD_OK; j++) {
        s = array_load(c, &c->argv[first + j], &o->ms[j], &ls[j], MG_T_SET);
        if (s != FD_OK) break;
        o->loaded = j + 1;
        if (!o->ms[j].live) { if (op == OP_INTER) empty = 1; continue; }
        if (smallest < 0 || ls[j].n < ls[smallest].n) smallest = j;
    }
    if (s != FD_OK || empty) return s;
    for (int i = 0; i < n && s == FD_OK; i++) {
        if ((op == OP_INTER && i != smallest) || (op == OP_DIFF && i != 0)) continue;
        for (size_t e = 0; e < ls[i].n && s == FD_OK; e++) {
            int keep = 1;
            for (int j = 0; j < n && keep; j++) {
                if (j == i) continue;
                if (op == OP_UNION && j > i) break;      /* only the earlier sets */
                int y = set_find(&ls[j], ls[i].p[e], ls[i].l[e]) >= 0;
                keep = op == OP_INTER ? y : !y;
            }
            if (!keep) continue;
            if (list_reserve(&o->out, o->out.n + 1) != FD_OK) { s = FD_E_NOMEM; break; }
            o->out.p[o->out.n] = ls[i].p[e]; o->out.l[o->out.n++] = ls[i].l[e];
            if (limit > 0 && (long long)o->out.n >= limit) return FD_OK;
        }
    }
    return s;
}

static int setop_reply(mg_ctx *c, int op)
{
    mg_setop o;
    int s = setop_compute(c, 1, c->argc - 1, op, 0, &o);
    if (s == FD_OK) {
        int r = resp_add_set(c->out, (long long)o.out.n);
        for (size_t i = 0; i < o.out.n && !r; i++) r = resp_add_bulk(c->out, o.out.p[i], o.out.l[i]);
        if (r) s = FD_E_NOMEM;
    }
    setop_free(&o);
    return s;
}

static int cmd_sinter(mg_ctx *c) { return setop_reply(c, OP_INTER); }
static int cmd_sunion(mg_ctx *c) { return setop_reply(c, OP_UNION); }
static int cmd_sdiff(mg_ctx *c)  { return setop_reply(c, OP_DIFF); }

/* S*STORE: the result replaces the destination whatever its type; an
 * empty result deletes it. */
static int setop_store(mg_ctx *c, int op)
{
    mg_setop o;
    int s = setop_compute(c, 2, c->argc - 2, op, 0, &o);
    if (s == FD_OK) {
        mg_meta none;
        memset(&none, 0, sizeof none);
        none.found = 1;                   /* empty: delete whatever is there */
        s = array_save(c, &c->argv[1], &none, &o.out, MG_T_SET);
    }
    if (s == FD_OK && resp_add_int(c->out, (long long)o.out.n)) s = FD_E_NOMEM;
    setop_free(&o);
    return s;
}

static int cmd_sinterstore(mg_ctx *c) { return setop_store(c, OP_INTER); }
static int cmd_sunionstore(mg_ctx *c) { return setop_store(c, OP_UNION); }
static int cmd_sdiffstore(mg_ctx *c)  { return setop_store(c, OP_DIFF); }

static int cmd_sintercard(mg_ctx *c)
{
    long long numkeys, limit;
    int replied, st = fd_parse_sintercard(c->argv, c->argc, &numkeys, &limit, c->out, &replied);
    if (st != FD_OK || replied) return st;
    mg_setop o;
    int s = setop_compute(c, 2, (int)numkeys, OP_INTER, limit, &o);
    if (s == FD_OK && resp_add_int(c->out, (long long)o.out.n)) s = FD_E_NOMEM;
    setop_free(&o);
    return s;
}

/* ================================================================ sorted sets
 *
 * { _id, type: "zset", value: [ {m: BinData, s: Double}, ... ], expireAt? }:
 * the members kept in Redis's order (score, then member bytes), as Redis's
 * listpack encoding, so ranges by rank are array positions and ranges by
 * score or lex are one walk. Read, change here, write back, as the other
 * collection types (docs/mongodb.md has the costs and why this layout). */

typedef struct mg_zent { const char *m; size_t ml; double s; } mg_zent;
typedef struct mg_zset { mg_zent *a; size_t n, cap; int dirty; mg_ix ix; } mg_zset;

static void zset_free(mg_zset *Z) { free(Z->a); ix_free(&Z->ix); memset(Z, 0, sizeof *Z); }

static int zent_cmp(const void *x, const void *y)
{
    const mg_zent *a = x, *b = y;
    if (a->s < b->s) return -1;
    if (a->s > b->s) return 1;
    return fd_lexcmp(a->m, a->ml, b->m, b->ml);
}

static int zset_push(mg_zset *Z, const char *m, size_t ml, double s)
{
    if (Z->n == Z->cap) {
        size_t nc = Z->cap ? Z->cap * 2 : 8;
        mg_zent *na = realloc(Z->a, nc * sizeof *na);
        if (!na) return FD_E_NOMEM;
        Z->a = na; Z->cap = nc;
    }
    Z->a[Z->n++] = (mg_zent){m, ml, s};
    return FD_OK;
}

static int zset_load(mg_ctx *c, const resp_arg *key, mg_meta *m, mg_zset *Z)
{
    memset(Z, 0, sizeof *Z);
    TRY(mg_lookup(c, key, m, 1));
    if (!m->live) return FD_OK;
    if (m->type != MG_T_ZSET) { meta_free(m); return FD_E_WRONGTYPE; }
    bson_iter_t it, arr;
    if (!bson_iter_init_find(&it, m->doc, "value") || !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &arr))
        return FD_OK;
    int sorted = 1;
    while (bson_iter_next(&arr)) {
        bson_iter_t e;
        const uint8_t *mp = NULL;
        uint32_t ml = 0;
        double s = 0;
        bson_subtype_t st;
        if (!BSON_ITER_HOLDS_DOCUMENT(&arr) || !bson_iter_recurse(&arr, &e)) continue;
        while (bson_iter_next(&e)) {
            if (!strcmp(bson_iter_key(&e), "m") && BSON_ITER_HOLDS_BINARY(&e)) bson_iter_binary(&e, &st, &ml, &mp);
            else if (!strcmp(bson_iter_key(&e), "s") && BSON_ITER_HOLDS_NUMBER(&e)) s = bson_iter_as_double(&e);
        }
        if (!mp || isnan(s)) continue;
        if (zset_push(Z, (const char *)mp, ml, s) != FD_OK) { zset_free(Z); meta_free(m); return FD_E_NOMEM; }
        if (Z->n > 1 && zent_cmp(&Z->a[Z->n - 2], &Z->a[Z->n - 1]) > 0) sorted = 0;
    }
    if (!sorted) qsort(Z->a, Z->n, sizeof *Z->a, zent_cmp);   /* written by something else (no index yet) */
    return FD_OK;
}

static void zset_keyat(const void *coll, size_t i, const char **p, size_t *l)
{
    const mg_zent *e = &((const mg_zset *)coll)->a[i];
    *p = e->m; *l = e->ml;
}

static long zset_find(mg_zset *Z, const char *p, size_t n)
{
    return ix_find(&Z->ix, Z, Z->n, zset_keyat, p, n);
}

static int zset_save(mg_ctx *c, const resp_arg *key, const mg_meta *m, mg_zset *Z)
{
    if (!Z->n) return m->found ? mg_delete(c, key) : FD_OK;
    if (Z->dirty) { qsort(Z->a, Z->n, sizeof *Z->a, zent_cmp); ix_invalidate(&Z->ix); }
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
    int s = mg_write_doc(c, key, &d);
    bson_destroy(&d);
    return s;
}

/* remove the entries whose gone[i] is set */
static void zset_compact(mg_zset *Z, const unsigned char *gone)
{
    ix_invalidate(&Z->ix);
    size_t w = 0;
    for (size_t i = 0; i < Z->n; i++)
        if (!gone[i]) Z->a[w++] = Z->a[i];
    Z->n = w;
}

#define ZSET_DONE(st) do { int st_ = (st); zset_free(&Z); meta_free(&m); return st_; } while (0)

static int zadd_generic(mg_ctx *c, int is_incr)
{
    int flags, idx, elements, replied;
    TRY(fd_parse_zadd(c->argv, c->argc, is_incr, &flags, &idx, &elements, c->out, &replied));
    if (replied) return FD_OK;
    int nx = flags & FD_ZADD_NX, xx = flags & FD_ZADD_XX, gt = flags & FD_ZADD_GT,
        lt = flags & FD_ZADD_LT, incr = flags & FD_ZADD_INCR;
    mg_meta m; mg_zset Z;
    TRY(zset_load(c, &c->argv[1], &m, &Z));
    long long added = 0, updated = 0, processed = 0;
    double score = 0;
    int s = FD_OK;
    if (m.live || !xx) {
        for (int j = 0; j < elements && s == FD_OK; j++) {
            const resp_arg *mb = &c->argv[idx + 2 * j + 1];
            fd_parse_score(&c->argv[idx + 2 * j], &score);
            long i = zset_find(&Z, mb->ptr, mb->len);
            if (i >= 0) {
                double cur = Z.a[i].s;
                if (nx) continue;
                if (incr) {
                    score += cur;
                    if (isnan(score))
                        ZSET_DONE(resp_add_error(c->out, "ERR resulting score is not a number (NaN)") ? FD_E_NOMEM : FD_OK);
                }
                if ((lt && score >= cur) || (gt && score <= cur)) continue;
                processed++;
                if (score != cur) { Z.a[i].s = score; Z.dirty = 1; updated++; }
            } else {
                if (xx) continue;
                s = zset_push(&Z, mb->ptr, mb->len, score);
                Z.dirty = 1;
                added++;
                processed++;
            }
        }
        if (s == FD_OK && (added || updated)) s = zset_save(c, &c->argv[1], &m, &Z);
    }
    if (s == FD_OK) {
        int r;
        if (incr) r = processed ? resp_add_double(c->out, score) : resp_add_null(c->out);
        else r = resp_add_int(c->out, (flags & FD_ZADD_CH) ? added + updated : added);
        if (r) s = FD_E_NOMEM;
    }
    ZSET_DONE(s);
}

static int cmd_zadd(mg_ctx *c)    { return zadd_generic(c, 0); }
static int cmd_zincrby(mg_ctx *c) { return zadd_generic(c, 1); }

static int cmd_zrem(mg_ctx *c)
{
    mg_meta m; mg_zset Z;
    TRY(zset_load(c, &c->argv[1], &m, &Z));
    long long n = 0;
    for (int j = 2; j < c->argc; j++) {
        long i = zset_find(&Z, c->argv[j].ptr, c->argv[j].len);
        if (i < 0) continue;
        memmove(&Z.a[i], &Z.a[i + 1], (Z.n - (size_t)i - 1) * sizeof Z.a[0]);
        Z.n--;
        ix_invalidate(&Z.ix);
        n++;
    }
    int s = n ? zset_save(c, &c->argv[1], &m, &Z) : FD_OK;
    if (s == FD_OK && resp_add_int(c->out, n)) s = FD_E_NOMEM;
    ZSET_DONE(s);
}

static int cmd_zscore(mg_ctx *c)
{
    mg_meta m; mg_zset Z;
    TRY(zset_load(c, &c->argv[1], &m, &Z));
    long i = zset_find(&Z, c->argv[2].ptr, c->argv[2].len);
    ZSET_DONE((i >= 0 ? resp_add_double(c->out, Z.a[i].s) : resp_add_null(c->out)) ? FD_E_NOMEM : FD_OK);
}

static int cmd_zmscore(mg_ctx *c)
{
    mg_meta m; mg_zset Z;
    TRY(zset_load(c, &c->argv[1], &m, &Z));
    int r = resp_add_array(c->out, c->argc - 2);
    for (int j = 2; j < c->argc && !r; j++) {
        long i = zset_find(&Z, c->argv[j].ptr, c->argv[j].len);
        r = i >= 0 ? resp_add_double(c->out, Z.a[i].s) : resp_add_null(c->out);
    }
    ZSET_DONE(r ? FD_E_NOMEM : FD_OK);
}

static int cmd_zcard(mg_ctx *c)
{
    mg_meta m; mg_zset Z;
    TRY(zset_load(c, &c->argv[1], &m, &Z));
    ZSET_DONE(resp_add_int(c->out, (long long)Z.n) ? FD_E_NOMEM : FD_OK);
}

static int zrank_generic(mg_ctx *c, int rev)
{
    mg_meta m; mg_zset Z;
    TRY(zset_load(c, &c->argv[1], &m, &Z));
    long i = zset_find(&Z, c->argv[2].ptr, c->argv[2].len);
    int r = i < 0 ? resp_add_null(c->out) : resp_add_int(c->out, rev ? (long long)Z.n - 1 - i : i);
    ZSET_DONE(r ? FD_E_NOMEM : FD_OK);
}

static int cmd_zrank(mg_ctx *c)    { return zrank_generic(c, 0); }
static int cmd_zrevrank(mg_ctx *c) { return zrank_generic(c, 1); }

/* The positions z selects, in reply order, into out (Z->n entries room):
 * the count. A rank range must be sanitized (fd_rank_range) first. As the
 * embedded backends' walk: a score or lex walk starts at the first member
 * inside the near bound and stops at the first one outside the far one. */
static size_t zwalk(const mg_zset *Z, const fd_zrange *z, size_t *out)
{
    size_t k = 0, n = Z->n;
    if (z->type == FD_ZR_RANK) {
        for (long long r = z->start; r <= z->end; r++) out[k++] = z->rev ? n - 1 - (size_t)r : (size_t)r;
        return k;
    }
    if (fd_zrange_empty(z) || z->offset < 0 || z->limit == 0) return 0;
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
    TRY(fd_parse_zrange(c->argv, c->argc, type, rev, &z, c->out, &replied));
    if (replied) return FD_OK;
    mg_meta m; mg_zset Z;
    TRY(zset_load(c, &c->argv[1], &m, &Z));
    if (z.type == FD_ZR_RANK && !fd_rank_range((long long)Z.n, &z.start, &z.end))
        ZSET_DONE(resp_add_array(c->out, 0) ? FD_E_NOMEM : FD_OK);
    size_t *pos = malloc((Z.n ? Z.n : 1) * sizeof *pos);
    if (!pos) ZSET_DONE(FD_E_NOMEM);
    size_t k = zwalk(&Z, &z, pos);
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

static int cmd_zrange(mg_ctx *c)           { return zrange_generic(c, -1, -1); }
static int cmd_zrevrange(mg_ctx *c)        { return zrange_generic(c, FD_ZR_RANK, 1); }
static int cmd_zrangebyscore(mg_ctx *c)    { return zrange_generic(c, FD_ZR_SCORE, 0); }
static int cmd_zrevrangebyscore(mg_ctx *c) { return zrange_generic(c, FD_ZR_SCORE, 1); }
static int cmd_zrangebylex(mg_ctx *c)      { return zrange_generic(c, FD_ZR_LEX, 0); }
static int cmd_zrevrangebylex(mg_ctx *c)   { return zrange_generic(c, FD_ZR_LEX, 1); }

/* ZCOUNT / ZLEXCOUNT (count 1) and ZREMRANGEBY* (count 0) */
static int zrange_count_or_remove(mg_ctx *c, int type, int count)
{
    fd_zrange z;
    int replied;
    TRY(fd_parse_zrange(c->argv, c->argc, type, 0, &z, c->out, &replied));
    if (replied) return FD_OK;
    mg_meta m; mg_zset Z;
    TRY(zset_load(c, &c->argv[1], &m, &Z));
    if (!m.live || (z.type == FD_ZR_RANK && !fd_rank_range((long long)Z.n, &z.start, &z.end)))
        ZSET_DONE(resp_add_int(c->out, 0) ? FD_E_NOMEM : FD_OK);
    size_t *pos = malloc(Z.n * sizeof *pos);
    unsigned char *gone = count ? NULL : calloc(Z.n, 1);
    if (!pos || (!count && !gone)) { free(pos); free(gone); ZSET_DONE(FD_E_NOMEM); }
    size_t k = zwalk(&Z, &z, pos);
    int s = FD_OK;
    if (!count && k) {
        for (size_t j = 0; j < k; j++) gone[pos[j]] = 1;
        zset_compact(&Z, gone);
        s = zset_save(c, &c->argv[1], &m, &Z);
    }
    free(pos);
    free(gone);
    if (s == FD_OK && resp_add_int(c->out, (long long)k)) s = FD_E_NOMEM;
    ZSET_DONE(s);
}

static int cmd_zcount(mg_ctx *c)           { return zrange_count_or_remove(c, FD_ZR_SCORE, 1); }
static int cmd_zlexcount(mg_ctx *c)        { return zrange_count_or_remove(c, FD_ZR_LEX, 1); }
static int cmd_zremrangebyrank(mg_ctx *c)  { return zrange_count_or_remove(c, FD_ZR_RANK, 0); }
static int cmd_zremrangebyscore(mg_ctx *c) { return zrange_count_or_remove(c, FD_ZR_SCORE, 0); }
static int cmd_zremrangebylex(mg_ctx *c)   { return zrange_count_or_remove(c, FD_ZR_LEX, 0); }

/* ZPOPMIN (rev 0) / ZPOPMAX (rev 1) */
static int zpop_generic(mg_ctx *c, int rev)
{
    long long count = -1;
    if (c->argc > 3) return FD_E_SYNTAX;
    if (c->argc == 3 && (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &count) != 0 || count < 0))
        return FD_E_RANGE_POSITIVE;
    int nested = c->out->proto == 3 && count != -1;
    mg_meta m; mg_zset Z;
    TRY(zset_load(c, &c->argv[1], &m, &Z));
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
    ix_invalidate(&Z.ix);
    int s = zset_save(c, &c->argv[1], &m, &Z);
    if (s != FD_OK) c->out->len = mark;
    ZSET_DONE(s);
}

static int cmd_zpopmin(mg_ctx *c) { return zpop_generic(c, 0); }
static int cmd_zpopmax(mg_ctx *c) { return zpop_generic(c, 1); }

/* ================================================================ random picks, *SCAN */

/* xorshift64*, one state per worker thread */
static uint64_t mg_rand(void)
{
    static _Thread_local uint64_t st;
    if (!st) st = ((uint64_t)mono_us() * 0x9E3779B97F4A7C15ULL) ^ (uint64_t)(uintptr_t)&st ^ 1;
    st ^= st >> 12; st ^= st << 25; st ^= st >> 27;
    return st * 2685821657736338717ULL;
}

/* want distinct positions of n (want <= n) in random order, or (repeat)
 * want independent random positions. NULL: out of memory. */
static size_t *pick_positions(size_t n, size_t want, int repeat)
{
    size_t *p = malloc((repeat ? (want ? want : 1) : (n ? n : 1)) * sizeof *p);
    if (!p) return NULL;
    if (repeat) {
        for (size_t i = 0; i < want; i++) p[i] = (size_t)(mg_rand() % n);
        return p;
    }
    for (size_t i = 0; i < n; i++) p[i] = i;
    if (want < n)              /* a partial Fisher-Yates shuffle */
        for (size_t i = 0; i < want; i++) {
            size_t j = i + (size_t)(mg_rand() % (n - i));
            size_t t = p[i]; p[i] = p[j]; p[j] = t;
        }
    return p;
}

/* The out-of-range text of Redis's getRangeLongFromObjectOrReply for a
 * count of LLONG_MIN (HRANDFIELD, SRANDMEMBER, LPOS RANK). */
#define ERR_LONG_RANGE "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"

/* One element of a collection for *SCAN: field/member and value/score. */
typedef struct mg_scanent { uint64_t h; const char *f, *v; size_t fl, vl; double s; } mg_scanent;

static int scanent_cmp(const void *a, const void *b)
{
    const mg_scanent *x = a, *y = b;
    if (x->h != y->h) return x->h < y->h ? -1 : 1;
    return fd_lexcmp(x->f, x->fl, y->f, y->fl);
}

/* Collections up to this size are returned whole by one call, cursor 0 (as
 * Redis does for its small encodings, and the embedded backends). */
#define MG_SCAN_WHOLE 128

/* HSCAN / SSCAN / ZSCAN over the n elements e (in the collection's order).
 * A bigger collection is walked in the order of a 63-bit hash of each
 * element; the cursor is the hash to resume from, so an element present
 * for the whole iteration is returned exactly once, whatever else is added
 * or removed meanwhile (as SCAN over the keys). */
static int subscan_reply(mg_ctx *c, int type, mg_scanent *e, size_t n, uint64_t cursor,
                         long long count, const resp_arg *pat)
{
    size_t from = 0, to = n;
    uint64_t next = 0;
    if (n > MG_SCAN_WHOLE) {
        for (size_t i = 0; i < n; i++) e[i].h = (hash_key(e[i].f, e[i].fl) >> 1) | 1;
        qsort(e, n, sizeof *e, scanent_cmp);
        while (from < n && e[from].h < cursor) from++;
        to = from;
        long long visited = 0;
        while (to < n && (visited < count || (to > from && e[to].h == e[to - 1].h))) { to++; visited++; }
        next = to < n ? e[to - 1].h + 1 : 0;
    }
    long long hits = 0;
    for (size_t i = from; i < to; i++)
        if (!pat || resp_glob_match(pat->ptr, pat->len, e[i].f, e[i].fl, 0)) hits++;
    char num[24];
    int nl = resp_u64_fmt(num, next);
    int r = resp_add_array(c->out, 2);
    if (!r) r = resp_add_bulk(c->out, num, (size_t)nl);
    if (!r) r = resp_add_array(c->out, type == MG_T_SET ? hits : 2 * hits);
    for (size_t i = from; i < to && !r; i++) {
        if (pat && !resp_glob_match(pat->ptr, pat->len, e[i].f, e[i].fl, 0)) continue;
        r = resp_add_bulk(c->out, e[i].f, e[i].fl);
        if (!r && type == MG_T_HASH) r = resp_add_bulk(c->out, e[i].v, e[i].vl);
        if (!r && type == MG_T_ZSET) {
            char buf[64];
            int bl = resp_format_d2string(buf, sizeof buf, e[i].s);   /* as ZSCAN shows a score */
            r = resp_add_bulk(c->out, buf, (size_t)bl);
        }
    }
    return r ? FD_E_NOMEM : FD_OK;
}

static int subscan_generic(mg_ctx *c, int type)
{
    uint64_t cursor;
    if (fd_parse_cursor(&c->argv[2], &cursor) != 0) {
        OUT(resp_add_error(c->out, "ERR invalid cursor"));
        return FD_OK;
    }
    mg_meta m;
    mg_hash h = {0};
    mg_list L = {0};
    mg_zset Z = {0};
    int s;
    if (type == MG_T_HASH) s = hash_load(c, &c->argv[1], &m, &h);
    else if (type == MG_T_SET) s = array_load(c, &c->argv[1], &m, &L, MG_T_SET);
    else s = zset_load(c, &c->argv[1], &m, &Z);
    TRY(s);
    mg_scanent *e = NULL;
    size_t n = type == MG_T_HASH ? h.n : type == MG_T_SET ? L.n : Z.n;
    long long count;
    const resp_arg *pat;
    if (!m.live) {
        s = (resp_add_array(c->out, 2) || resp_add_bulk(c->out, "0", 1) || resp_add_array(c->out, 0))
            ? FD_E_NOMEM : FD_OK;
    } else if ((s = fd_parse_scan_opts(c->argv, c->argc, 3, &count, &pat, NULL)) == FD_OK) {
        e = calloc(n ? n : 1, sizeof *e);
        if (!e) s = FD_E_NOMEM;
        for (size_t i = 0; e && i < n; i++) {
            if (type == MG_T_HASH) { e[i].f = h.a[i].f; e[i].fl = h.a[i].fl; e[i].v = h.a[i].v; e[i].vl = h.a[i].vl; }
            else if (type == MG_T_SET) { e[i].f = L.p[i]; e[i].fl = L.l[i]; }
            else { e[i].f = Z.a[i].m; e[i].fl = Z.a[i].ml; e[i].s = Z.a[i].s; }
        }
        if (e) s = subscan_reply(c, type, e, n, cursor, count, pat);
    }
    free(e);
    hash_free(&h);
    list_free(&L);
    zset_free(&Z);
    meta_free(&m);
    return s;
}

static int cmd_hscan(mg_ctx *c) { return subscan_generic(c, MG_T_HASH); }
static int cmd_sscan(mg_ctx *c) { return subscan_generic(c, MG_T_SET); }
static int cmd_zscan(mg_ctx *c) { return subscan_generic(c, MG_T_ZSET); }

static int cmd_hrandfield(mg_ctx *c)
{
    long long count = 0;
    int hascount = c->argc >= 3;
    if (c->argc > 4 || (c->argc == 4 && !fd_opt_is(&c->argv[3], "withvalues"))) return FD_E_SYNTAX;
    int withvalues = c->argc == 4;
    if (hascount && resp_str2ll(c->argv[2].ptr, c->argv[2].len, &count) != 0) return FD_E_NOTINT;
    if (hascount && count == LLONG_MIN) {
        OUT(resp_add_error(c->out, ERR_LONG_RANGE));
        return FD_OK;
    }
    mg_meta m; mg_hash h;
    TRY(hash_load(c, &c->argv[1], &m, &h));
    if (!m.live) HASH_DONE((hascount ? resp_add_array(c->out, 0) : resp_add_null(c->out)) ? FD_E_NOMEM : FD_OK);
    if (hascount && count == 0) HASH_DONE(resp_add_array(c->out, 0) ? FD_E_NOMEM : FD_OK);
    int repeat = count < 0, nested = withvalues && c->out->proto == 3;
    size_t want = !hascount ? 1 : repeat ? (size_t)-count : (count < (long long)h.n ? (size_t)count : h.n);
    size_t *pos = pick_positions(h.n, want, repeat);
    if (!pos) HASH_DONE(FD_E_NOMEM);
    size_t mark = c->out->len;
    int r = 0;
    if (hascount) r = resp_add_array(c->out, (long long)(withvalues && !nested ? 2 * want : want));
    for (size_t i = 0; i < want && !r; i++) {
        const mg_field *f = &h.a[pos[i]];
        if (nested) r = resp_add_array(c->out, 2);
        if (!r) r = resp_add_bulk(c->out, f->f, f->fl);
        if (!r && withvalues) r = resp_add_bulk(c->out, f->v, f->vl);
    }
    free(pos);
    if (r) c->out->len = mark;
    HASH_DONE(r ? FD_E_NOMEM : FD_OK);
}

/* SPOP (pop 1) / SRANDMEMBER (pop 0) */
static int srandom_generic(mg_ctx *c, int pop)
{
    long long count = 1;
    int hascount = c->argc == 3;
    if (c->argc > 3) return FD_E_SYNTAX;
    if (hascount) {
        if (pop) {
            /* getPositiveLongFromObjectOrReply: one text for both errors */
            if (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &count) != 0 || count < 0) return FD_E_RANGE_POSITIVE;
        } else {
            if (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &count) != 0) return FD_E_NOTINT;
            if (count == LLONG_MIN) { OUT(resp_add_error(c->out, ERR_LONG_RANGE)); return FD_OK; }
        }
    }
    mg_meta m; mg_list L;
    TRY(array_load(c, &c->argv[1], &m, &L, MG_T_SET));
    if (!m.live || (hascount && count == 0)) {
        int r = !hascount ? resp_add_null(c->out) : pop ? resp_add_set(c->out, 0) : resp_add_array(c->out, 0);
        LIST_DONE(r ? FD_E_NOMEM : FD_OK);
    }
    int repeat = !pop && count < 0;
    size_t want = repeat ? (size_t)-count : (count < (long long)L.n ? (size_t)count : L.n);
    size_t *pos = pick_positions(L.n, want, repeat);
    if (!pos) LIST_DONE(FD_E_NOMEM);
    size_t mark = c->out->len;
    int r = 0;
    if (hascount) r = pop ? resp_add_set(c->out, (long long)want) : resp_add_array(c->out, (long long)want);
    for (size_t i = 0; i < want && !r; i++) r = resp_add_bulk(c->out, L.p[pos[i]], L.l[pos[i]]);
    int s = r ? FD_E_NOMEM : FD_OK;
    if (s == FD_OK && pop) {
        unsigned char *gone = calloc(L.n, 1);
        if (!gone) s = FD_E_NOMEM;
        else {
            for (size_t i = 0; i < want; i++) gone[pos[i]] = 1;
            size_t w = 0;
            for (size_t i = 0; i < L.n; i++)
                if (!gone[i]) { L.p[w] = L.p[i]; L.l[w] = L.l[i]; w++; }
            L.n = w;
            ix_invalidate(&L.ix);
            free(gone);
            s = array_save(c, &c->argv[1], &m, &L, MG_T_SET);
        }
    }
    free(pos);
    if (s != FD_OK) c->out->len = mark;
    LIST_DONE(s);
}

static int cmd_spop(mg_ctx *c)        { return srandom_generic(c, 1); }
static int cmd_srandmember(mg_ctx *c) { return srandom_generic(c, 0); }

/* ================================================================ more list commands */

static int cmd_linsert(mg_ctx *c)
{
    int after;
    if (fd_opt_is(&c->argv[2], "after")) after = 1;
    else if (fd_opt_is(&c->argv[2], "before")) after = 0;
    else return FD_E_SYNTAX;
    mg_meta m; mg_list L;
    TRY(list_load(c, &c->argv[1], &m, &L));
    if (!m.live) LIST_DONE(resp_add_int(c->out, 0) ? FD_E_NOMEM : FD_OK);
    const resp_arg *pivot = &c->argv[3], *val = &c->argv[4];
    size_t i = 0;
    while (i < L.n && !(L.l[i] == pivot->len && memcmp(L.p[i], pivot->ptr, pivot->len) == 0)) i++;
    if (i == L.n) LIST_DONE(resp_add_int(c->out, -1) ? FD_E_NOMEM : FD_OK);
    if (after) i++;
    if (list_reserve(&L, L.n + 1) != FD_OK) LIST_DONE(FD_E_NOMEM);
    memmove(L.p + i + 1, L.p + i, (L.n - i) * sizeof *L.p);
    memmove(L.l + i + 1, L.l + i, (L.n - i) * sizeof *L.l);
    L.p[i] = val->ptr;
    L.l[i] = val->len;
    L.n++;
    int s = list_save(c, &c->argv[1], &m, &L);
    if (s == FD_OK && resp_add_int(c->out, (long long)L.n)) s = FD_E_NOMEM;
    LIST_DONE(s);
}

static int cmd_lpos(mg_ctx *c)
{
    fd_lpos o;
    int replied;
    int st = fd_parse_lpos(c->argv, c->argc, &o, c->out, &replied);
    if (st != FD_OK || replied) return st;
    long long rank = o.rank, count = o.count, maxlen = o.maxlen;
    int rev = o.rev, nolimit = o.nolimit;
    mg_meta m; mg_list L;
    TRY(list_load(c, &c->argv[1], &m, &L));
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
    TRY(list_load(c, &c->argv[1], &m, &L));
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
    int s = list_reserve(dp, dp->n + 1);
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
    if (!same) { list_free(&D); meta_free(&dm); }
    LIST_DONE(s);
}

static int cmd_rpoplpush(mg_ctx *c) { return lmove_generic(c, 0, 1); }

static int cmd_lmove(mg_ctx *c)
{
    int from_left, to_left;
    if (fd_opt_is(&c->argv[3], "left")) from_left = 1;
    else if (fd_opt_is(&c->argv[3], "right")) from_left = 0;
    else return FD_E_SYNTAX;
    if (fd_opt_is(&c->argv[4], "left")) to_left = 1;
    else if (fd_opt_is(&c->argv[4], "right")) to_left = 0;
    else return FD_E_SYNTAX;
    return lmove_generic(c, from_left, to_left);
}

/* ================================================================ table */

typedef struct mg_cmd { const char *name; mg_fn fn; } mg_cmd;

static const mg_cmd mg_cmds[] = {
    {"get", cmd_get}, {"set", cmd_set}, {"setnx", cmd_setnx}, {"setex", cmd_setex},
    {"psetex", cmd_psetex}, {"getset", cmd_getset}, {"getdel", cmd_getdel}, {"getex", cmd_getex},
    {"mget", cmd_mget}, {"mset", cmd_mset}, {"msetnx", cmd_msetnx}, {"incr", cmd_incr},
    {"incrby", cmd_incrby}, {"incrbyfloat", cmd_incrbyfloat}, {"decr", cmd_decr},
    {"decrby", cmd_decrby}, {"append", cmd_append}, {"strlen", cmd_strlen},
    {"getrange", cmd_getrange}, {"substr", cmd_getrange}, {"setrange", cmd_setrange},
    {"del", cmd_del}, {"unlink", cmd_del}, {"exists", cmd_exists}, {"touch", cmd_exists},
    {"type", cmd_type}, {"expire", cmd_expire}, {"pexpire", cmd_pexpire},
    {"expireat", cmd_expireat}, {"pexpireat", cmd_pexpireat}, {"ttl", cmd_ttl},
    {"pttl", cmd_pttl}, {"expiretime", cmd_expiretime}, {"pexpiretime", cmd_pexpiretime},
    {"persist", cmd_persist}, {"keys", cmd_keys}, {"scan", cmd_scan}, {"rename", cmd_rename},
    {"renamenx", cmd_renamenx}, {"randomkey", cmd_randomkey}, {"dbsize", cmd_dbsize},
    {"flushdb", cmd_flushdb}, {"flushall", cmd_flushdb},
    {"hset", cmd_hset}, {"hmset", cmd_hmset}, {"hsetnx", cmd_hsetnx}, {"hdel", cmd_hdel},
    {"hincrby", cmd_hincrby}, {"hincrbyfloat", cmd_hincrbyfloat}, {"hget", cmd_hget},
    {"hmget", cmd_hmget}, {"hlen", cmd_hlen}, {"hexists", cmd_hexists}, {"hstrlen", cmd_hstrlen},
    {"hgetall", cmd_hgetall}, {"hkeys", cmd_hkeys}, {"hvals", cmd_hvals},
    {"lpush", cmd_lpush}, {"rpush", cmd_rpush}, {"lpushx", cmd_lpushx}, {"rpushx", cmd_rpushx},
    {"lpop", cmd_lpop}, {"rpop", cmd_rpop}, {"llen", cmd_llen}, {"lindex", cmd_lindex},
    {"lrange", cmd_lrange}, {"lset", cmd_lset}, {"ltrim", cmd_ltrim}, {"lrem", cmd_lrem},
    {"sadd", cmd_sadd}, {"srem", cmd_srem}, {"scard", cmd_scard}, {"sismember", cmd_sismember},
    {"smismember", cmd_smismember}, {"smembers", cmd_smembers}, {"smove", cmd_smove},
    {"sinter", cmd_sinter}, {"sunion", cmd_sunion}, {"sdiff", cmd_sdiff},
    {"sinterstore", cmd_sinterstore}, {"sunionstore", cmd_sunionstore}, {"sdiffstore", cmd_sdiffstore},
    {"sintercard", cmd_sintercard}, {"spop", cmd_spop}, {"srandmember", cmd_srandmember},
    {"sscan", cmd_sscan}, {"hscan", cmd_hscan}, {"hrandfield", cmd_hrandfield},
    {"linsert", cmd_linsert}, {"lpos", cmd_lpos}, {"rpoplpush", cmd_rpoplpush}, {"lmove", cmd_lmove},
    {"zadd", cmd_zadd}, {"zincrby", cmd_zincrby}, {"zrem", cmd_zrem}, {"zscore", cmd_zscore},
    {"zmscore", cmd_zmscore}, {"zcard", cmd_zcard}, {"zcount", cmd_zcount}, {"zlexcount", cmd_zlexcount},
    {"zrank", cmd_zrank}, {"zrevrank", cmd_zrevrank}, {"zrange", cmd_zrange}, {"zrevrange", cmd_zrevrange},
    {"zrangebyscore", cmd_zrangebyscore}, {"zrevrangebyscore", cmd_zrevrangebyscore},
    {"zrangebylex", cmd_zrangebylex}, {"zrevrangebylex", cmd_zrevrangebylex},
    {"zpopmin", cmd_zpopmin}, {"zpopmax", cmd_zpopmax}, {"zremrangebyrank", cmd_zremrangebyrank},
    {"zremrangebyscore", cmd_zremrangebyscore}, {"zremrangebylex", cmd_zremrangebylex},
    {"zscan", cmd_zscan},
    {NULL, NULL}
};

static mg_fn find_fn(const char *name)
{
    for (const mg_cmd *m = mg_cmds; m->name; m++)
        if (!strcmp(m->name, name)) return m->fn;
    return NULL;
}

static const char *mg_support(const struct fd_command *cmd)
{
    return find_fn(cmd->name) ? FD_SERVED : NULL;
}

/* ================================================================ workers */

static int ensure_indexes(mongoc_client_t *cl, mg_backend *b, bson_error_t *err)
{
    bson_t cmd = BSON_INITIALIZER, arr, ix, key;
    bson_append_utf8(&cmd, "createIndexes", -1, MG_COLL, -1);
    bson_append_array_begin(&cmd, "indexes", -1, &arr);
    bson_append_document_begin(&arr, "0", -1, &ix);
    bson_append_document_begin(&ix, "key", -1, &key);
    bson_append_int32(&key, "expireAt", -1, 1);
    bson_append_document_end(&ix, &key);
    bson_append_utf8(&ix, "name", -1, "expireAt_ttl", -1);
    bson_append_int32(&ix, "expireAfterSeconds", -1, 0);
    bson_append_document_end(&arr, &ix);
    bson_append_array_end(&cmd, &arr);
    bool ok = mongoc_client_write_command_with_opts(cl, b->dbname, &cmd, NULL, NULL, err);
    bson_destroy(&cmd);
    return ok ? 0 : -1;
}

static void complete(mg_backend *b, mg_req *r)
{
    pthread_mutex_lock(&b->cmu);
    r->next = NULL;
    if (b->ctail) b->ctail->next = r;
    else b->chead = r;
    b->ctail = r;
    pthread_mutex_unlock(&b->cmu);
    ev_async_send(b->loop, &b->async);
}

static void reply_unavailable(resp_out *o, const char *why)
{
    resp_add_errorf(o, "ERR backend unavailable (mongodb: %s)", why);
}

static void execute(mg_backend *b, mongoc_client_t *cl, mongoc_collection_t *coll, mg_req *r)
{
    if (mono_us() > r->deadline_us) { r->skipped = 1; return; }
    mg_ctx c;
    memset(&c, 0, sizeof c);
    c.b = b;
    c.client = cl;
    c.coll = coll;
    c.argc = r->argc;
    c.argv = r->argv;
    c.out = &r->out;
    c.now_ms = r->now_ms;
    c.max_bulk = b->cfg.max_bulk > 0 ? b->cfg.max_bulk : RESP_DEFAULT_MAX_BULK;
    size_t mark = r->out.len;
    int s = r->fn(&c);
    if (s == MG_E_MONGO) {
        r->out.len = mark;
        if (err_unavailable(&c.err)) reply_unavailable(&r->out, c.err.message);
        else resp_add_errorf(&r->out, "ERR mongodb: %s (code %u)", c.err.message, c.err.code);
        s = FD_OK;
    } else if (s != FD_OK) {
        r->out.len = mark;
    }
    r->status = s;
}

/* ---------------------------------------------------------------- grouped writes
 *
 * Plain SETs (SET key value: one replaceOne upsert, no read, a reply that
 * does not depend on what was there) that wait one after the other in a
 * worker's queue are sent as one ordered bulk write: one round trip for up
 * to MG_GROUP_MAX of them, in queue order, so every key still sees its
 * commands in order. A bulk stops at its first failing write: that SET
 * gets the server's error, the ones before it +OK, the ones after it run
 * one by one as usual (a driver error counts the same way: the writes the
 * reply counts as done get +OK, the first not done gets the error — its
 * outcome is unknown, as that of a single write in flight). A failure after
 * every write was done (a write concern error) is every SET's error. */

#define MG_GROUP_MAX 64

static int groupable(const mg_req *r)
{
    return r->nw == 1 && r->fn == cmd_set && r->argc == 3;
}

static void group_error(mg_backend *b, mg_req *r, const bson_error_t *e)
{
    r->out.len = 0;
    if (err_unavailable(e)) reply_unavailable(&r->out, e->message);
    else resp_add_errorf(&r->out, "ERR mongodb: %s (code %u)", e->message, e->code);
    r->status = FD_OK;
    atomic_fetch_add(&b->mongo_errors, 1);
}

/* Run the n grouped SETs g[]; each is completed here. */
static void execute_group(mg_backend *b, mongoc_client_t *cl, mongoc_collection_t *coll, mg_req **g, int n)
{
    mg_req *live[MG_GROUP_MAX];
    int k = 0;
    int64_t now = mono_us();
    for (int i = 0; i < n; i++) {
        if (now > g[i]->deadline_us) g[i]->skipped = 1;
        else live[k++] = g[i];
    }
    int done = 0;                  /* live[0 .. done) are answered */
    if (k == 1) {
        execute(b, cl, coll, live[0]);
        done = 1;
    } else if (k > 1) {
        mongoc_bulk_operation_t *bulk = mongoc_collection_create_bulk_operation_with_opts(coll, NULL);
        bson_t opts = BSON_INITIALIZER, reply;
        bson_error_t err;
        bson_append_bool(&opts, "upsert", -1, true);
        int ok = 1;
        for (int i = 0; i < k && ok; i++) {
            bson_t q = BSON_INITIALIZER, d = BSON_INITIALIZER;
            append_key(&q, "_id", live[i]->argv[1].ptr, live[i]->argv[1].len);
            bson_append_utf8(&d, "type", -1, "string", -1);
            append_value(&d, live[i]->argv[2].ptr, live[i]->argv[2].len);
            ok = mongoc_bulk_operation_replace_one_with_opts(bulk, &q, &d, &opts, &err);
            bson_destroy(&q);
            bson_destroy(&d);
        }
        if (ok) {
            atomic_fetch_add(&b->bulk_groups, 1);
            atomic_fetch_add(&b->bulk_grouped, (unsigned long long)k);
        }
        if (!ok) {
            bson_init(&reply);       /* could not even be built: run them one by one */
        } else if (mongoc_bulk_operation_execute(bulk, &reply, &err)) {
            for (int i = 0; i < k; i++) {
                live[i]->status = resp_add_status(&live[i]->out, "OK") ? FD_E_NOMEM : FD_OK;
            }
            done = k;
        } else {
            bson_iter_t it, we, e;
            uint32_t failed = (uint32_t)k;  /* index of the first failed write, k: none known */
            if (bson_iter_init_find(&it, &reply, "writeErrors") && BSON_ITER_HOLDS_ARRAY(&it) &&
                bson_iter_recurse(&it, &we) && bson_iter_next(&we) && BSON_ITER_HOLDS_DOCUMENT(&we) &&
                bson_iter_recurse(&we, &e) && bson_iter_find(&e, "index") && BSON_ITER_HOLDS_NUMBER(&e)) {
                failed = (uint32_t)bson_iter_as_int64(&e);
            } else {
                /* no server-side write error (one document too large for
                 * the driver, the server lost between batches...): every
                 * replace-upsert done so far was matched or upserted, in
                 * order, so the count is the index of the first one not done */
                int64_t doneops = 0;
                if (bson_iter_init_find(&it, &reply, "nMatched") && BSON_ITER_HOLDS_NUMBER(&it))
                    doneops += bson_iter_as_int64(&it);
                if (bson_iter_init_find(&it, &reply, "nUpserted") && BSON_ITER_HOLDS_NUMBER(&it))
                    doneops += bson_iter_as_int64(&it);
                if (doneops >= 0 && doneops < k) failed = (uint32_t)doneops;
            }
            if (failed < (uint32_t)k) {
                for (uint32_t i = 0; i < failed; i++)
                    live[i]->status = resp_add_status(&live[i]->out, "OK") ? FD_E_NOMEM : FD_OK;
                group_error(b, live[failed], &err);
                done = (int)failed + 1;
            } else {
                for (int i = 0; i < k; i++) group_error(b, live[i], &err);
                done = k;
            }
        }
        bson_destroy(&reply);
        bson_destroy(&opts);
        mongoc_bulk_operation_destroy(bulk);
    }
    for (int i = done; i < k; i++) execute(b, cl, coll, live[i]);
    for (int i = 0; i < n; i++) complete(b, g[i]);
}

static void *worker_main(void *arg)
{
    mg_worker *w = arg;
    mg_backend *b = w->b;
    mongoc_client_t *cl = mongoc_client_pool_pop(b->pool);
    mongoc_collection_t *coll = mongoc_client_get_collection(cl, b->dbname, MG_COLL);
    mongoc_collection_set_write_concern(coll, b->wc);
    for (;;) {
        pthread_mutex_lock(&w->mu);
        while (!w->head && !atomic_load(&b->stop)) pthread_cond_wait(&w->cv, &w->mu);
        if (atomic_load(&b->stop)) { pthread_mutex_unlock(&w->mu); break; }
        mg_node *n = w->head;
        w->head = n->next;
        mg_req *g[MG_GROUP_MAX];
        int ng = 0;
        if (groupable(n->r))
            for (g[ng++] = n->r; w->head && ng < MG_GROUP_MAX && groupable(w->head->r); w->head = w->head->next)
                g[ng++] = w->head->r;
        if (!w->head) w->tail = NULL;
        pthread_mutex_unlock(&w->mu);
        mg_req *r = n->r;
        if (ng > 1) {
            execute_group(b, cl, coll, g, ng);
        } else if (r->nw > 1) {
            pthread_mutex_lock(&r->bmu);
            r->arrived++;
            if (r->arrived < r->nw) {
                while (!r->done && !atomic_load(&b->stop)) pthread_cond_wait(&r->bcv, &r->bmu);
                int last = --r->refs == 0;
                pthread_mutex_unlock(&r->bmu);
                if (last) complete(b, r);
                continue;
            }
            pthread_mutex_unlock(&r->bmu);
            execute(b, cl, coll, r);
            pthread_mutex_lock(&r->bmu);
            r->done = 1;
            pthread_cond_broadcast(&r->bcv);
            int last = --r->refs == 0;
            pthread_mutex_unlock(&r->bmu);
            if (last) complete(b, r);
        } else {
            execute(b, cl, coll, r);
            complete(b, r);
        }
    }
    mongoc_collection_destroy(coll);
    mongoc_client_pool_push(b->pool, cl);
    return NULL;
}

/* The admin thread: TTL index, server identity, key counts for INFO. */
static void *admin_main(void *arg)
{
    mg_backend *b = arg;
    mongoc_client_t *cl = mongoc_client_pool_pop(b->pool);
    mongoc_collection_t *coll = mongoc_client_get_collection(cl, b->dbname, MG_COLL);
    int64_t next_count = 0;
    int logged_down = 0;
    while (!atomic_load(&b->stop)) {
        bson_error_t err;
        if (!atomic_load(&b->indexes_ok)) {
            if (ensure_indexes(cl, b, &err) == 0) {
                atomic_store(&b->indexes_ok, 1);
                bson_t cmd = BSON_INITIALIZER, reply;
                bson_append_int32(&cmd, "buildInfo", -1, 1);
                if (mongoc_client_command_simple(cl, "admin", &cmd, NULL, &reply, &err)) {
                    bson_iter_t it;
                    pthread_mutex_lock(&b->amu);
                    if (bson_iter_init_find(&it, &reply, "version") && BSON_ITER_HOLDS_UTF8(&it))
                        snprintf(b->server_version, sizeof b->server_version, "%s", bson_iter_utf8(&it, NULL));
                    b->server_emulator = bson_iter_init_find(&it, &reply, "emulator") && bson_iter_as_bool(&it);
                    pthread_mutex_unlock(&b->amu);
                    fd_log(FD_LOG_NOTICE, "mongodb: connected to %s, server version %s%s", b->cfg.mongo_uri,
                           b->server_version, b->server_emulator ? " (an EMULATOR: its figures are not MongoDB's)" : "");
                }
                bson_destroy(&reply);
                bson_destroy(&cmd);
                logged_down = 0;
            } else if (!logged_down) {
                fd_log(FD_LOG_WARNING, "mongodb: %s not reachable yet (%s); commands fail until it is",
                       b->cfg.mongo_uri, err.message);
                logged_down = 1;
            }
        }
        int64_t now = mono_us();
        if (atomic_load(&b->indexes_ok) && now >= next_count) {
            bson_t q = BSON_INITIALIZER, x;
            int64_t keys = count_cmd(coll, NULL, &err);
            bson_append_document_begin(&q, "expireAt", -1, &x);
            bson_append_date_time(&x, "$gt", -1, 0);
            bson_append_document_end(&q, &x);
            int64_t ex = count_cmd(coll, &q, &err);
            bson_destroy(&q);
            if (keys >= 0) atomic_store(&b->keys, keys);
            if (ex >= 0) atomic_store(&b->expires, ex);
            next_count = now + 5000000;
        }
        pthread_mutex_lock(&b->amu);
        if (!atomic_load(&b->stop)) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            pthread_cond_timedwait(&b->acv, &b->amu, &ts);
        }
        pthread_mutex_unlock(&b->amu);
    }
    mongoc_collection_destroy(coll);
    mongoc_client_pool_push(b->pool, cl);
    return NULL;
}

/* ================================================================ loop side */

static void free_req(mg_req *r)
{
    resp_out_free(&r->out);
    if (r->nw > 1) {
        pthread_mutex_destroy(&r->bmu);
        pthread_cond_destroy(&r->bcv);
        free(r->nodes);
    }
    free(r->argv);
    free(r);
}

static void inflight_unlink(mg_backend *b, mg_req *r)
{
    if (r->lprev) r->lprev->lnext = r->lnext;
    else b->ihead = r->lnext;
    if (r->lnext) r->lnext->lprev = r->lprev;
    else b->itail = r->lprev;
    r->lprev = r->lnext = NULL;
    b->inflight--;
}

static void timed_out(mg_backend *b, mg_req *r)
{
    if (!r->p) return;
    resp_out o;
    char why[128];
    resp_out_init(&o, r->proto);
    snprintf(why, sizeof why, "no reply within backend-timeout %lld ms", b->cfg.backend_timeout_ms);
    reply_unavailable(&o, why);
    fd_pending_reply(r->p, o.data, o.len);
    resp_out_free(&o);
    r->p = NULL;
    b->timeouts++;
}

static void on_async(struct ev_loop *loop, ev_async *w, int revents)
{
    mg_backend *b = w->data;
    pthread_mutex_lock(&b->cmu);
    mg_req *r = b->chead;
    b->chead = b->ctail = NULL;
    pthread_mutex_unlock(&b->cmu);
    while (r) {
        mg_req *next = r->next;
        inflight_unlink(b, r);
        if (r->p) {
            if (r->skipped) timed_out(b, r);
            else if (r->status == FD_OK) {
                if (r->out.len && r->out.data[0] == '-') b->errors++;
                fd_pending_reply(r->p, r->out.data, r->out.len);
            } else {
                fd_pending_error(r->p, r->status);
            }
        }
        free_req(r);
        r = next;
    }
}

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
    mg_backend *b = w->data;
    int64_t now = mono_us();
    for (mg_req *r = b->ihead; r && r->deadline_us <= now; r = r->lnext) timed_out(b, r);
    /* timed-out requests stay listed (and allocated) until their worker is done */
}

static void enqueue(mg_worker *w, mg_node *n)
{
    n->next = NULL;
    pthread_mutex_lock(&w->mu);
    if (w->tail) w->tail->next = n;
    else w->head = n;
    w->tail = n;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void reply_unknown(resp_out *o, int argc, resp_arg *argv)
{
    /* as proxy/dispatch.c: the differential test skips what answers this */
    char args[512];
    size_t al = 0;
    args[0] = '\0';
    for (int i = 1; i < argc && al < 128; i++) {
        int room = 128 - (int)al;
        int n = snprintf(args + al, sizeof args - al, "'%.*s' ",
                         (int)(argv[i].len < (size_t)room ? argv[i].len : (size_t)room), argv[i].ptr);
        if (n > 0) al += (size_t)n;
        if (al >= sizeof args) { al = sizeof args - 1; break; }
    }
    resp_add_errorf(o, "ERR unknown command '%.*s', with args beginning with: %s",
                    (int)(argv[0].len > 128 ? 128 : argv[0].len), argv[0].ptr, args);
}

static int mg_submit(fd_backend *be, fd_request *req)
{
    mg_backend *b = be->state;
    mg_fn fn = req->cmd ? find_fn(req->cmd->name) : NULL;
    if (!fn) {
        reply_unknown(req->out, req->argc, req->argv);
        return FD_OK;
    }
    size_t bytes = 0;
    for (int i = 0; i < req->argc; i++) bytes += req->argv[i].len + 1;
    mg_req *r = calloc(1, sizeof *r);
    if (!r) return FD_E_NOMEM;
    r->argv = malloc((size_t)req->argc * sizeof(resp_arg) + bytes);
    if (!r->argv) { free(r); return FD_E_NOMEM; }
    char *p = (char *)(r->argv + req->argc);
    for (int i = 0; i < req->argc; i++) {
        memcpy(p, req->argv[i].ptr, req->argv[i].len);
        p[req->argv[i].len] = '\0';
        r->argv[i].ptr = p;
        r->argv[i].len = req->argv[i].len;
        p += req->argv[i].len + 1;
    }
    r->argc = req->argc;
    r->fn = fn;
    r->name = req->cmd->name;
    r->proto = req->out->proto;
    r->now_ms = req->now_ms;
    r->deadline_us = mono_us() + b->cfg.backend_timeout_ms * 1000;
    r->p = req->pending;
    resp_out_init(&r->out, r->proto);

    /* the workers this command's keys hash to */
    const fd_command *cmd = req->cmd;
    int nwk = b->nworkers;
    unsigned char *need = calloc((size_t)nwk, 1);
    if (!need) { free(r->argv); free(r); return FD_E_NOMEM; }
    int count = 0;
    if ((cmd->flags & FD_CMD_KEYLESS_BACKEND) || cmd->first_key <= 0) {
        memset(need, 1, (size_t)nwk);
        count = nwk;
    } else {
        int last = cmd->last_key < 0 ? req->argc + cmd->last_key : cmd->last_key;
        int step = cmd->key_step > 0 ? cmd->key_step : 1;
        for (int i = cmd->first_key; i <= last && i < req->argc; i += step) {
            int wi = (int)(hash_key(req->argv[i].ptr, req->argv[i].len) % (uint64_t)nwk);
            if (!need[wi]) { need[wi] = 1; count++; }
        }
        if (!count) { need[0] = 1; count = 1; }
    }
    r->nw = count;
    if (count > 1) {
        r->nodes = calloc((size_t)count, sizeof(mg_node));
        if (!r->nodes) { free(need); free(r->argv); free(r); return FD_E_NOMEM; }
        pthread_mutex_init(&r->bmu, NULL);
        pthread_cond_init(&r->bcv, NULL);
        r->refs = count;
    }
    /* in flight (loop side) */
    r->lprev = b->itail;
    if (b->itail) b->itail->lnext = r;
    else b->ihead = r;
    b->itail = r;
    b->inflight++;
    b->requests++;
    if (req->is_write) be->turn_writes++;
    int k = 0;
    for (int i = 0; i < nwk; i++) {
        if (!need[i]) continue;
        mg_node *n = count > 1 ? &r->nodes[k++] : &r->node1;
        n->r = r;
        enqueue(&b->w[i], n);
    }
    free(need);
    return FD_PENDING;
}

static int mg_end_turn(fd_backend *be)
{
    be->turn_writes = 0;
    return FD_OK;     /* writes are acknowledged by MongoDB at the write concern */
}

static void mg_keyspace(fd_backend *be, uint64_t *keys, uint64_t *expires)
{
    mg_backend *b = be->state;
    *keys = (uint64_t)atomic_load(&b->keys);
    *expires = (uint64_t)atomic_load(&b->expires);
}

static void mg_info(fd_backend *be, resp_out *lines)
{
    mg_backend *b = be->state;
    char buf[1024], ver[64];
    int emu;
    pthread_mutex_lock(&b->amu);
    snprintf(ver, sizeof ver, "%s", b->server_version[0] ? b->server_version : "unknown");
    emu = b->server_emulator;
    pthread_mutex_unlock(&b->amu);
    int n = snprintf(buf, sizeof buf,
                     "mongodb_database:%s\r\nmongodb_collection:%s\r\nmongodb_workers:%d\r\n"
                     "mongodb_server_version:%s\r\nmongodb_server_emulator:%d\r\n"
                     "mongodb_connected:%d\r\nmongodb_requests:%llu\r\nmongodb_inflight:%lld\r\n"
                     "mongodb_timeouts:%llu\r\nmongodb_error_replies:%llu\r\nmongodb_driver_errors:%llu\r\n"
                     "mongodb_bulk_writes:%llu\r\nmongodb_bulk_grouped_sets:%llu\r\n",
                     b->dbname, MG_COLL, b->nworkers, ver, emu < 0 ? 0 : emu,
                     atomic_load(&b->indexes_ok), b->requests, b->inflight, b->timeouts, b->errors,
                     (unsigned long long)atomic_load(&b->mongo_errors),
                     (unsigned long long)atomic_load(&b->bulk_groups),
                     (unsigned long long)atomic_load(&b->bulk_grouped));
    if (n > 0) resp_out_raw(lines, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

static void mg_close(fd_backend *be)
{
    mg_backend *b = be->state;
    if (!b) return;
    atomic_store(&b->stop, 1);
    for (int i = 0; i < b->nworkers; i++) {
        pthread_mutex_lock(&b->w[i].mu);
        pthread_cond_broadcast(&b->w[i].cv);
        pthread_mutex_unlock(&b->w[i].mu);
    }
    /* wake workers waiting at a barrier */
    for (mg_req *r = b->ihead; r; r = r->lnext)
        if (r->nw > 1) {
            pthread_mutex_lock(&r->bmu);
            pthread_cond_broadcast(&r->bcv);
            pthread_mutex_unlock(&r->bmu);
        }
    pthread_mutex_lock(&b->amu);
    pthread_cond_broadcast(&b->acv);
    pthread_mutex_unlock(&b->amu);
    for (int i = 0; i < b->nworkers; i++)
        if (b->w[i].started) pthread_join(b->w[i].th, NULL);
    if (b->admin_started) pthread_join(b->admin, NULL);
    on_async(b->loop, &b->async, 0);          /* what finished */
    /* what never ran: its clients are gone (shutdown) or get an error */
    for (mg_req *r = b->ihead, *next; r; r = next) {
        next = r->lnext;
        if (r->p) fd_pending_error(r->p, FD_E_UNAVAILABLE);
        free_req(r);
    }
    for (int i = 0; i < b->nworkers; i++) {
        pthread_mutex_destroy(&b->w[i].mu);
        pthread_cond_destroy(&b->w[i].cv);
    }
    ev_async_stop(b->loop, &b->async);
    ev_timer_stop(b->loop, &b->tick);
    if (b->pool) mongoc_client_pool_destroy(b->pool);
    if (b->uri) mongoc_uri_destroy(b->uri);
    if (b->wc) mongoc_write_concern_destroy(b->wc);
    free(b->w);
    free(b->uri_str);
    free(b->dbname);
    pthread_mutex_destroy(&b->cmu);
    pthread_mutex_destroy(&b->amu);
    for (int k = 0; k < MG_SCANS; k++)
        if (b->scans[k].v) keys_free(b->scans[k].v, b->scans[k].n);
    pthread_mutex_destroy(&b->smu);
    pthread_cond_destroy(&b->acv);
    free(b);
    be->state = NULL;
    mongoc_cleanup();
}

/* libmongoc's log lines go to frontdoor's log: errors as warnings, its
 * warnings (a lost connection...) at verbose, the rest dropped. */
static void mongoc_to_px_log(mongoc_log_level_t level, const char *domain, const char *msg, void *ud)
{
    (void)ud;
    if (level <= MONGOC_LOG_LEVEL_ERROR) fd_log(FD_LOG_WARNING, "libmongoc %s: %s", domain, msg);
    else if (level == MONGOC_LOG_LEVEL_WARNING) fd_log(FD_LOG_VERBOSE, "libmongoc %s: %s", domain, msg);
}

static int mg_open(fd_backend *be, const fd_backend_config *cfg, char *err, size_t errlen)
{
    if (!cfg->loop) { snprintf(err, errlen, "no event loop"); return FD_E_INTERNAL; }
    mongoc_log_set_handler(mongoc_to_px_log, NULL);
    mongoc_init();
    mg_backend *b = calloc(1, sizeof *b);
    if (!b) { snprintf(err, errlen, "out of memory"); return FD_E_NOMEM; }
    b->cfg = *cfg;
    b->loop = cfg->loop;
    b->server_emulator = -1;
    pthread_mutex_init(&b->cmu, NULL);
    pthread_mutex_init(&b->amu, NULL);
    pthread_mutex_init(&b->smu, NULL);
    pthread_cond_init(&b->acv, NULL);
    be->state = b;
    b->uri_str = strdup(cfg->mongo_uri && cfg->mongo_uri[0] ? cfg->mongo_uri : "mongodb://127.0.0.1:27017");
    b->dbname = strdup(cfg->mongo_database && cfg->mongo_database[0] ? cfg->mongo_database : "frontdoor");
    b->cfg.mongo_uri = b->uri_str;
    long long tmo = cfg->backend_timeout_ms > 0 ? cfg->backend_timeout_ms : 1000;
    b->cfg.backend_timeout_ms = tmo;
    long nproc = sysconf(_SC_NPROCESSORS_ONLN);
    b->nworkers = cfg->mongo_workers > 0 ? cfg->mongo_workers : (nproc > 0 ? (int)nproc : 2);

    bson_error_t e;
    b->uri = mongoc_uri_new_with_error(b->uri_str, &e);
    if (!b->uri) {
        snprintf(err, errlen, "bad mongo-uri '%s': %s", b->uri_str, e.message);
        goto fail;
    }
    if (!mongoc_uri_has_option(b->uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS))
        mongoc_uri_set_option_as_int32(b->uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS, (int32_t)tmo);
    if (!mongoc_uri_has_option(b->uri, MONGOC_URI_SOCKETTIMEOUTMS))
        mongoc_uri_set_option_as_int32(b->uri, MONGOC_URI_SOCKETTIMEOUTMS, (int32_t)tmo);
    if (!mongoc_uri_has_option(b->uri, MONGOC_URI_CONNECTTIMEOUTMS))
        mongoc_uri_set_option_as_int32(b->uri, MONGOC_URI_CONNECTTIMEOUTMS, (int32_t)tmo);
    if (!mongoc_uri_has_option(b->uri, MONGOC_URI_HEARTBEATFREQUENCYMS))
        mongoc_uri_set_option_as_int32(b->uri, MONGOC_URI_HEARTBEATFREQUENCYMS, 500);
    if (!mongoc_uri_get_appname(b->uri)) mongoc_uri_set_appname(b->uri, "frontdoor");
    if (!mongoc_uri_has_option(b->uri, MONGOC_URI_MAXPOOLSIZE))
        mongoc_uri_set_option_as_int32(b->uri, MONGOC_URI_MAXPOOLSIZE, b->nworkers + 4);

    /* write concern: the URI's, then the directives that were set */
    b->wc = mongoc_write_concern_copy(mongoc_uri_get_write_concern(b->uri));
    if (cfg->mongo_w && cfg->mongo_w[0]) {
        long long wv;
        if (resp_str2ll(cfg->mongo_w, strlen(cfg->mongo_w), &wv) == 0) {
            if (wv < 0 || wv > 1000) { snprintf(err, errlen, "mongo-w must be >= 0, 'majority' or a tag"); goto fail; }
            mongoc_write_concern_set_w(b->wc, (int32_t)wv);
        } else if (!strcmp(cfg->mongo_w, "majority")) {
            mongoc_write_concern_set_w(b->wc, MONGOC_WRITE_CONCERN_W_MAJORITY);
        } else {
            mongoc_write_concern_set_wtag(b->wc, cfg->mongo_w);
        }
    }
    if (cfg->mongo_j == FD_MONGO_J_YES || (cfg->mongo_j == FD_MONGO_J_AUTO && cfg->sync))
        mongoc_write_concern_set_journal(b->wc, true);
    else if (cfg->mongo_j == FD_MONGO_J_NO)
        mongoc_write_concern_set_journal(b->wc, false);
    if (cfg->mongo_wtimeout_ms > 0) mongoc_write_concern_set_wtimeout_int64(b->wc, cfg->mongo_wtimeout_ms);
    if (!mongoc_write_concern_is_valid(b->wc)) {
        snprintf(err, errlen, "invalid write concern (mongo-w %s, mongo-j, mongo-wtimeout)", cfg->mongo_w ? cfg->mongo_w : "");
        goto fail;
    }

    b->pool = mongoc_client_pool_new(b->uri);
    if (!b->pool) { snprintf(err, errlen, "cannot create a client pool for '%s'", b->uri_str); goto fail; }
    mongoc_client_pool_set_error_api(b->pool, MONGOC_ERROR_API_VERSION_2);

    ev_async_init(&b->async, on_async);
    b->async.data = b;
    ev_async_start(b->loop, &b->async);
    double tick = (double)(tmo / 4 < MG_TICK_MS ? (tmo / 4 > 0 ? tmo / 4 : 1) : MG_TICK_MS) / 1000.0;
    ev_timer_init(&b->tick, on_tick, tick, tick);
    b->tick.data = b;
    ev_timer_start(b->loop, &b->tick);

    b->w = calloc((size_t)b->nworkers, sizeof *b->w);
    if (!b->w) { snprintf(err, errlen, "out of memory"); goto fail; }
    for (int i = 0; i < b->nworkers; i++) {
        mg_worker *w = &b->w[i];
        w->b = b;
        w->idx = i;
        pthread_mutex_init(&w->mu, NULL);
        pthread_cond_init(&w->cv, NULL);
    }
    for (int i = 0; i < b->nworkers; i++) {
        if (pthread_create(&b->w[i].th, NULL, worker_main, &b->w[i]) != 0) {
            snprintf(err, errlen, "cannot start worker threads: %s", strerror(errno));
            goto fail;
        }
        b->w[i].started = 1;
    }
    if (pthread_create(&b->admin, NULL, admin_main, b) == 0) b->admin_started = 1;
    fd_log(FD_LOG_NOTICE, "mongodb backend: %s, database %s, %d workers, timeout %lld ms%s",
           b->uri_str, b->dbname, b->nworkers, tmo,
           mongoc_write_concern_get_journal(b->wc) ? ", journaled writes (j:true)" : "");
    return FD_OK;
fail:
    if (ev_is_active(&b->async)) {       /* watchers and maybe threads: close undoes them */
        if (!b->w) b->nworkers = 0;
        mg_close(be);
        return FD_E_UNAVAILABLE;
    }
    mongoc_cleanup();
    if (b->uri) mongoc_uri_destroy(b->uri);
    if (b->wc) mongoc_write_concern_destroy(b->wc);
    free(b->uri_str);
    free(b->dbname);
    free(b->w);
    free(b);
    be->state = NULL;
    return FD_E_UNAVAILABLE;
}

const fd_backend_ops fd_mongodb_backend = {
    .name     = "mongodb",
    .async    = 1,
    .open     = mg_open,
    .close    = mg_close,
    .submit   = mg_submit,
    .end_turn = mg_end_turn,
    .keyspace = mg_keyspace,
    .info     = mg_info,
    .support  = mg_support,
};
