/* mg.h — the MongoDB backend's private header (`backend mongodb`, storage/
 * mongodb/): Redis keys as MongoDB documents, through libmongoc on worker
 * threads. docs/mongodb.md has the data model with an example document per
 * type; mg_backend.c has the threads, faults and write concern.
 *
 * Data model. One collection per logical database ("db0" in
 * mongo-database); one document per key:
 *     { _id: BinData(0, key), type: "string", value: <Int64 | BinData>,
 *       expireAt: ISODate }            (expireAt only when the key has a TTL)
 * A hash: value is an array of {f: BinData, v: BinData}; a list or a set:
 * an array of BinData (a list also keeps its length in n, for the one-trip
 * $push/$pop/$slice paths); a sorted set: an array of {m: BinData,
 * s: Double} in Redis's order (see mg_hash.c, mg_list.c, mg_set.c,
 * mg_zset.c). Plain SETs queued together go as one bulk write (mg_backend.c,
 * "grouped writes"). Past mongo-big-threshold members a collection is big:
 * one document per member in db0_big, the key document holding
 * {type, big: version, bn: count, ...}; mg_big.c is the one place that
 * knows (the collection access layer, below).
 * A string that is the canonical decimal form of a 64-bit integer is stored
 * as Int64 (as Redis's int encoding), so INCR/INCRBY/DECR are one
 * findAndModify with $inc; any other string is BinData (binary-safe).
 * expireAt has a TTL index (expireAfterSeconds 0); the TTL monitor runs about
 * once a minute, so every read also checks expireAt: an expired key is never
 * returned.
 *
 * Files: mg_doc.c (documents, shared helpers, member index), mg_big.c (big
 * collections: the layout of hashes/lists/sets/sorted sets), mg_string.c,
 * mg_keys.c, mg_hash.c, mg_list.c, mg_set.c, mg_zset.c, mg_scan.c (random
 * picks, SCAN/HSCAN/SSCAN/ZSCAN), mg_backend.c (workers, grouped writes,
 * loop side, fd_mongodb_backend).
 *
 * Module prefix: mg_. Everything here except mg_backend.c's loop side runs
 * on a worker thread, inside one command (an mg_ctx); nothing is shared
 * between workers but mg_backend's atomics and its mutex-guarded fields.
 */
#ifndef FRONTDOOR_MG_H
#define FRONTDOOR_MG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <ev.h>
#include <mongoc/mongoc.h>

#include "../backend.h"
#include "mg_settings.h"
#include "../cmdargs.h"
#include "../command.h"

#define MG_COLL        "db0"
#define MG_STREAM_COLL "db0_stream"   /* stream sub-records (mg_stream.c) */
#define MG_BIG_COLL    "db0_big"      /* members of big collections (mg_big.c) */
#define MG_AUX_COLL    "frontdoor_aux" /* frontdoor's own records (aux_get/aux_put: the FUNCTION
                                          libraries): {_id: name, v: binary}; FLUSHDB leaves it */
#define MG_SCANS       8            /* SCAN iterations remembered */
#define MG_E_MONGO     (FD_STATUS_COUNT + 1)   /* a driver error: its text is in ctx->err */
#define MG_E_STOP      (FD_STATUS_COUNT + 2)   /* an mg_big_scan callback: enough (not an error) */

/* Return FD_E_NOMEM when a resp_add_* failed; return any status but FD_OK. */

/* ================================================================ shared types */

typedef struct mg_backend mg_backend;
typedef struct mg_req mg_req;
typedef struct mg_ctx mg_ctx;

/* A command handler (see "handlers" below). */
typedef int (*mg_fn)(mg_ctx *c);

/* a worker's queue node: one per worker a request is queued to */
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

/* a key of a KEYS/SCAN listing, with its scan hash */
typedef struct mg_keyent { uint64_t h; int64_t expire; int type; uint32_t len; char *key; } mg_keyent;

/* One command in flight: built on the loop thread (mg_submit), run by a
 * worker, completed back on the loop thread. */
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
    fd_events   ev;              /* keyspace events raised (delivered before the reply) */
    uint64_t    seq;             /* submission order: events are delivered in it (mg_backend.c) */
    int         read;            /* a read-only command (mg_ctx.read) */
    int         status;
    int         skipped;         /* deadline passed before a worker took it */
};

/* The backend (fd_backend.state). */
struct mg_backend {
    fd_backend_config cfg;
    fd_mongo_settings ms;        /* its own settings (mg_settings.h), copied at open; cfg.options points here */
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
    /* frontdoor's own record (one: FD_AUX_NAME "functions"), under amu: read
     * by the admin thread once the server answers (aux_loaded), cached;
     * aux_put updates the cache and leaves the write to the admin thread
     * (aux_dirty; the latest value wins, retried until stored) */
    int             aux_loaded, aux_dirty;
    char           *aux_val;             /* NULL: no record */
    size_t          aux_len;
    /* SCAN: the sorted key list of iterations in progress, by next cursor */
    pthread_mutex_t smu;
    struct mg_scan { uint64_t next; mg_keyent *v; size_t n; int64_t born_us; } scans[MG_SCANS];
    /* keyspace events in submission order (loop thread): the next request
     * whose events go out, and those of later ones that completed first */
    uint64_t        seq_next, ev_next;
    struct mg_held *held;
    size_t          nheld;
    /* statistics (loop thread) */
    unsigned long long requests, timeouts, errors;
    atomic_ullong   mongo_errors;
    atomic_ullong   bulk_groups, bulk_grouped;   /* grouped SETs: bulk writes, SETs in them */
};

/* What a handler gets: the command (argv[0] is its name, arity already
 * checked by the proxy), where to reply, the worker's collection. */
struct mg_ctx {
    mg_backend      *b;
    mongoc_collection_t *coll;
    mongoc_client_t *client;
    int              argc;
    resp_arg        *argv;
    resp_out        *out;
    int64_t          now_ms;
    long long        max_bulk;
    bson_error_t     err;          /* set with MG_E_MONGO */
    mongoc_collection_t *bcoll;    /* db0_big, made on first use (mg_big_coll), destroyed after the command */
    int              nfirst, nstep; /* mg_named: the next lookup's members (nstep 0: all) */
    int              expect;        /* the next lookup expands a big key only of this MG_T_* (0: any) */
    fd_events       *ev;            /* the request's keyspace events (host.h), delivered on completion */
    int              read;          /* a read-only command: a lookup of a missing key raises keymiss */
};

/* Raise a keyspace event (host.h FD_NOTIFY) of class FD_NOTIFY_<cls> on the
 * command's argument i, or on a key; delivered with the reply, on the loop
 * thread, unless the command fails. */
#define MG_NOTIFY(c, cls, event, key, klen) FD_NOTIFY((c)->ev, FD_NOTIFY_##cls, event, key, klen)
#define MG_NOTIFY_ARG(c, cls, event, i) MG_NOTIFY(c, cls, event, (c)->argv[i].ptr, (c)->argv[i].len)
/* What a handler replied (c->out from mark): an integer (1, in *v), or
 * something (1: not an error, a null, an empty array/set/map, or a 0). The
 * collection handlers raise their events from the reply (mg_list.c ...). */
int  mg_reply_int(const mg_ctx *c, size_t mark, long long *v);
int  mg_reply_some(const mg_ctx *c, size_t mark);
/* "del" on key when it no longer exists (a collection emptied): one more
 * read, made only while class g is delivered. */
void mg_notify_del_if_gone(mg_ctx *c, const resp_arg *key);
/* fd_coll_io (storage/value/coll.h) for the hash and set stores: gone()
 * of a handle whose first member is its key (const resp_arg *), and
 * event(). h is the mg_ctx. */
struct fd_coll_hk;
int  mg_coll_gone(void *h, struct fd_coll_hk *hk);
/* 1 when key is not live (after a write: it went). h: the mg_ctx. */
int  mg_key_gone(void *h, const resp_arg *key);
void mg_coll_event(void *h, int cls, const char *event, const resp_arg *key);

/* ================================================================ handlers
 *
 * One per DATA row of storage/commands.def, named by the row's impl
 * (mg_cmd_<impl>: GETRANGE/SUBSTR share mg_cmd_getrange, DEL/UNLINK
 * mg_cmd_del, FLUSHDB/FLUSHALL mg_cmd_flushdb). mg_backend.c finds them by
 * command id; a handler missing here fails the link. Contract (as the kv handlers'):
 *   - on success it writes exactly one reply to c->out and returns FD_OK
 *     (an error reply of its own included);
 *   - otherwise it writes nothing (what it wrote is cut back) and returns an
 *     FD_E_* status, which the proxy replies as fd_strerror(status), or
 *     MG_E_MONGO with c->err set (the worker replies "ERR mongodb: ..." or
 *     "ERR backend unavailable (mongodb: ...)").
 * A command of several steps that fails halfway leaves the steps done. */
#define MG_DECL_PROXY(impl)
#define MG_DECL_DATA(impl) int mg_cmd_##impl(mg_ctx *c);
#define CMD(id, ar, fl, f, l, s, fam, impl, ...) MG_DECL_##fam(impl)
#include "../commands.def"
#undef CMD
#undef MG_DECL_PROXY
#undef MG_DECL_DATA

/* ================================================================ helpers (mg_doc.c) */

int64_t  mg_mono_us(void);                       /* monotonic clock, microseconds */
uint64_t mg_hash_key(const char *p, size_t n);   /* 64-bit hash (FNV-1a + a mixer) */
/* Count a driver error (INFO mongodb_driver_errors): returns MG_E_MONGO. */
int      mg_fail(mg_ctx *c);
/* a's room for at least need elements of size bytes (doubling from 8):
 * the array (maybe moved, *cap updated), or NULL when out of memory (a is
 * unchanged and still owned by the caller). */
void    *mg_reserve(void *a, size_t *cap, size_t need, size_t size);

/* ================================================================ documents (mg_doc.c) */

enum { MG_T_NONE, MG_T_STRING, MG_T_LIST, MG_T_HASH, MG_T_SET, MG_T_ZSET, MG_T_STREAM };
extern const char *const mg_type_names[];       /* by MG_T_*: "none", "string", ... */
int mg_type_of(const char *s);                  /* a type name -> MG_T_*, MG_T_NONE if unknown */

/* A key's document as read. Free with mg_meta_free (safe twice). */
typedef struct mg_meta {
    int         found;      /* a document exists (maybe expired) */
    int         live;       /* found and not expired */
    int         type;
    int64_t     expire;     /* ms since epoch, 0 = none */
    const char *val;        /* string value (points into doc or num) */
    size_t      vlen;
    bson_t     *doc;        /* owned copy */
    char        num[32];
    /* a big collection (mg_big.c): its members are documents of db0_big */
    int64_t     big;        /* their version sv; 0: a small key (value in doc) */
    int64_t     bn;         /* members */
    int64_t     blh;        /* lists: the head's position */
    int64_t     bo;         /* hashes, sets: the next insertion order */
    int         expanded;   /* doc is the expanded value (mg_big_expand) */
} mg_meta;

void mg_meta_free(mg_meta *m);

/* Pieces of queries and documents. */
void mg_append_key(bson_t *b, const char *field, const char *p, size_t n);   /* BinData */
/* "value": Int64 when the bytes are a canonical 64-bit integer, else BinData */
void mg_append_value(bson_t *b, const char *p, size_t n);
/* {$or: [{expireAt: {$exists: false}}, {expireAt: {$gt: now}}]} */
void mg_append_live(bson_t *q, int64_t now_ms);

/* Reads fill *m (always initialised, to "not found" on a miss) and return
 * FD_OK, or MG_E_MONGO (then *m holds nothing to free). */
int mg_lookup_proj(mg_ctx *c, const resp_arg *key, mg_meta *m, const bson_t *projection); /* NULL: all */
int mg_lookup(mg_ctx *c, const resp_arg *key, mg_meta *m, int want_value);  /* 0: without value */
/* A string key: also FD_E_WRONGTYPE for another live type (nothing to free). */
int mg_lookup_string(mg_ctx *c, const resp_arg *key, mg_meta *m);
/* Is key live (FD_OK with *live), or a lookup failure. */
int mg_key_live(mg_ctx *c, const resp_arg *key, int *live);
/* Documents of several keys in one query: metas[i] for argv[first + i*step]
 * (n of them); dup[i] (if not NULL) is set when that key already appeared
 * at an earlier position. On failure every metas[i] is freed. */
int mg_lookup_many(mg_ctx *c, int first, int step, mg_meta *metas, int n, int want_value,
                   unsigned char *dup);

/* Writes: FD_OK, FD_E_NOMEM or MG_E_MONGO. mg_write_doc replaces (upsert)
 * the key's document; a collection of more than mongo-big-threshold
 * members is written in the big layout, and a big collection it
 * overwrites is dropped (mg_big.c: mg_coll_write with no old meta). */
int mg_write_doc(mg_ctx *c, const resp_arg *key, const bson_t *doc);
/* Replace key's document by every field of src but its _id (COPY, RENAME). */
int mg_write_doc_copy(mg_ctx *c, const resp_arg *key, const bson_t *src);
/* Replace with a string whose value is a then b (expire 0 = none). A value
 * of more than MG_DOC_MAX bytes cannot be a MongoDB document: MG_E_MONGO
 * with c->err "value of N bytes exceeds MongoDB's 16 MB document limit"
 * (code 10334, mongod's BSONObjectTooLarge), before anything is sent. */
#define MG_DOC_MAX (16u << 20)
int mg_write_string(mg_ctx *c, const resp_arg *key, int64_t expire,
                    const char *a, size_t al, const char *b2, size_t bl);
int mg_delete(mg_ctx *c, const resp_arg *key);    /* and a big collection's members (mg_big.c) */
int mg_set_expire(mg_ctx *c, const resp_arg *key, int64_t expire);     /* 0: remove the TTL */

/* {count: db0, query: q}: the count, or -1 with *err set. */
int64_t mg_count(mongoc_collection_t *coll, const bson_t *q, bson_error_t *err);

/* The generic collection loader: look the key up (with projection, NULL:
 * all), check it is a live `type` (FD_E_WRONGTYPE, *m freed, otherwise) and
 * pass each element of its value array to each(coll, element), which
 * stores what it keeps in coll (pointing into m->doc) and returns FD_OK or
 * FD_E_NOMEM (then *m is freed; the caller frees coll). A missing or
 * expired key: FD_OK with m->live 0 and no element. */
typedef int (*mg_elem_fn)(void *coll, bson_iter_t *element);
int mg_load_elems(mg_ctx *c, const resp_arg *key, mg_meta *m, int type, const bson_t *projection,
                  mg_elem_fn each, void *coll);

/* ================================================================ member index (mg_doc.c)
 *
 * Finding a field or member in a loaded collection: a linear scan while it
 * is small, else an open-addressing table of positions built on first use
 * and extended as elements are appended. Removing or moving elements: call
 * mg_ix_invalidate (the table is rebuilt on the next lookup). */

typedef struct mg_ix { uint32_t *slot; size_t mask, count; } mg_ix;
/* the field/member bytes of element i of coll */
typedef void (*mg_keyat)(const void *coll, size_t i, const char **p, size_t *l);

void mg_ix_free(mg_ix *x);
void mg_ix_invalidate(mg_ix *x);
/* The position of p/l among the n elements of coll, or -1. */
long mg_ix_find(mg_ix *x, const void *coll, size_t n, mg_keyat at, const char *p, size_t l);

/* ================================================================ collections
 *
 * Loaded collections point into their mg_meta's document (free the
 * collection, then the meta). Each *_load returns FD_OK (m->live 0 and an
 * empty collection for a missing key), FD_E_WRONGTYPE, FD_E_NOMEM or
 * MG_E_MONGO; on any failure both are already freed. */

/* hashes (mg_hash.c): fields in insertion order; own: a value copy to free */
typedef struct mg_field { const char *f, *v; size_t fl, vl; char *own; } mg_field;
typedef struct mg_hash { mg_field *a; size_t n, cap; mg_ix ix; } mg_hash;
int  mg_hash_load(mg_ctx *c, const resp_arg *key, mg_meta *m, mg_hash *h);
void mg_hash_free(mg_hash *h);

/* lists and sets (mg_list.c): an array of BinData, as parallel arrays */
typedef struct mg_list { const char **p; size_t *l; size_t n, cap; mg_ix ix; } mg_list;
void mg_list_free(mg_list *L);
int  mg_list_reserve(mg_list *L, size_t n);     /* room for n elements: FD_OK, FD_E_NOMEM */
int  mg_array_load(mg_ctx *c, const resp_arg *key, mg_meta *m, mg_list *L, int type);
/* Write L back as a `type` (MG_T_LIST or MG_T_SET), keeping m's TTL; an
 * empty L deletes the key (when m->found). */
int  mg_array_save(mg_ctx *c, const resp_arg *key, const mg_meta *m, const mg_list *L, int type);

/* sorted sets (mg_zset.c): entries in Redis's order (score, member) */
typedef struct mg_zent { const char *m; size_t ml; double s; } mg_zent;
typedef struct mg_zset { mg_zent *a; size_t n, cap; int dirty; mg_ix ix; } mg_zset;
int  mg_zset_load(mg_ctx *c, const resp_arg *key, mg_meta *m, mg_zset *Z);
void mg_zset_free(mg_zset *Z);
/* Write Z back (sorted first if dirty), keeping m's TTL when m->live; an
 * empty Z deletes the key (when m->found). */
int  mg_zset_save(mg_ctx *c, const resp_arg *key, const mg_meta *m, mg_zset *Z);
/* Replace key dst (whatever it holds, TTL dropped) with the sorted set
 * a[0..n) of distinct members, or delete it when n is 0 (mg_zsetops.c); raises
 * `event` on dst (n > 0), or "del" when a live dst was deleted. */
struct fd_zent;
int  mg_zstore(mg_ctx *c, const resp_arg *dst, const struct fd_zent *a, size_t n, const char *event);
/* ZMPOP's / LMPOP's core for one key (storage/value/zset.c and list.c over
 * this store): a sorted set (list) pops up to count members from the low
 * (max 0) / left end or the other, replies [key, [[member, score]...]]
 * ([key, [elements...]]) and sets *done; a missing key: *done 0, nothing
 * written; FD_E_WRONGTYPE. */
int  mg_zset_mpop_one(mg_ctx *c, const resp_arg *key, int max, long long count, int *done);
int  mg_list_mpop_one(mg_ctx *c, const resp_arg *key, int left, long long count, int *done);
/* hashes: write h back as mg_zset_save does (mg_hash.c) */
int  mg_hash_save(mg_ctx *c, const resp_arg *key, const mg_meta *m, const mg_hash *h);

/* Handler exits: the result first (it may read the collection), then free. */
#define HASH_DONE(st) do { int st_ = (st); mg_hash_free(&h); mg_meta_free(&m); return st_; } while (0)
#define LIST_DONE(st) do { int st_ = (st); mg_list_free(&L); mg_meta_free(&m); return st_; } while (0)

/* ================================================================ big collections (mg_big.c)
 *
 * The collection access layer: one place decides where a hash, list, set
 * or sorted set lives (one document, or one document per member in
 * db0_big beyond mongo-big-threshold; the layouts are in mg_big.c and
 * docs/mongodb.md). Readers see one layout: mg_lookup/mg_lookup_proj with
 * no projection expand a big collection into the document the small
 * layout would hold (mg_big_expand); saves pass the meta they read to
 * mg_coll_write, which writes the difference in whichever layout fits.
 * Fast paths of hot commands use mg_big_scan and the id builders. */

long long mg_big_threshold(const mg_ctx *c);
mongoc_collection_t *mg_big_coll(mg_ctx *c);     /* NULL: out of memory */

/* Replace m->doc (a big collection's key document, m->live) by the
 * expanded document {type, value: [...], n (lists), expireAt}; sets
 * m->expanded. FD_OK (nothing to do for a small key), FD_E_NOMEM,
 * MG_E_MONGO (m untouched, still owned by the caller). */
int  mg_big_expand(mg_ctx *c, mg_meta *m);
/* Write key's collection document doc (small layout: {type, value,
 * expireAt?}; any other document is written as it is). old: the meta read
 * before (its doc expanded), or NULL when unknown. A big old collection
 * gets the difference (its sv kept); a small or unknown one is replaced,
 * converted to the big layout when doc has more than the threshold;
 * members of an overwritten big collection are dropped. */
int  mg_coll_write(mg_ctx *c, const resp_arg *key, const mg_meta *old, const bson_t *doc);
/* The next mg_lookup/mg_lookup_proj (no projection) of a big hash, set or
 * sorted set reads only the members named argv[first], argv[first + step],
 * ... (none when first >= argc): m->expanded 2, a part of the collection
 * whose count is mg_coll_count. Saves of it write the difference for those
 * members only. Handlers that touch named members only use it (HSET, HGET,
 * SADD, SISMEMBER, ZADD, ZSCORE...); naming extra arguments (a score, an
 * option) only reads more. A small key reads whole as always. */
static inline void mg_named(mg_ctx *c, int first, int step) { c->nfirst = first; c->nstep = step; }
int  mg_big_expand_named(mg_ctx *c, mg_meta *m, int first, int step);
/* The number of members of a loaded collection that has n loaded. */
static inline long long mg_coll_count(const mg_meta *m, size_t n) { return m->expanded == 2 ? m->bn : (long long)n; }
/* Delete the key (when old->found), members included. */
int  mg_coll_delete(mg_ctx *c, const resp_arg *key, const mg_meta *old);
/* Delete every member document of version sv. */
int  mg_big_drop(mg_ctx *c, int64_t sv);

/* Member ids: sv (16 hex) + tag + hex parts; a small buffer, else heap. */
typedef struct mg_bid { char buf[96]; char *heap; size_t len, cap; } mg_bid;
void        mg_bid_init(mg_bid *b, int64_t sv, char tag);
int         mg_bid_hex(mg_bid *b, const char *p, size_t n);   /* -1: out of memory */
int         mg_bid_u64(mg_bid *b, uint64_t v);                /* 16 hex digits */
const char *mg_bid_ptr(const mg_bid *b);
void        mg_bid_free(mg_bid *b);
uint64_t    mg_big_pos(int64_t pos);          /* a list position, order-preserving */
uint64_t    mg_big_score_bits(double s);      /* a score, order-preserving (-0 as 0) */

/* Lists (m: a live big list's key document, read without its value):
 * m->doc becomes {type, value: elements [from, from + count), n: all},
 * not a whole image (m->expanded 0: never saved from). */
int  mg_big_list_slice(mg_ctx *c, mg_meta *m, long long from, long long count);
/* Push the k elements el at the left/right end (LPUSH order: the last
 * first): *len the new length. */
int  mg_big_list_push(mg_ctx *c, const resp_arg *key, mg_meta *m, int left, const resp_arg *el, int k,
                      long long *len);
/* Pop one element from an end and reply it (bulk) to out; the key goes
 * with its last element. */
int  mg_big_list_pop(mg_ctx *c, const resp_arg *key, mg_meta *m, int left, resp_out *out);

/* Sorted sets (m: a big sorted set read with nothing named, mg_named):
 * m->doc becomes {type, value: the members z selects (a sanitized rank
 * range, or a score range with its LIMIT offset/count applied: the caller
 * then walks it with offset 0)}, read as one _id range; m->expanded 2 (a
 * part of the collection, savable as one: ZPOPMIN/ZPOPMAX). */
int  mg_big_zset_window(mg_ctx *c, mg_meta *m, const fd_zrange *z);
/* The rank of member p/n (score: its score) in the big sorted set m: the
 * count of its members before it (one count of an _id range). */
int  mg_big_zrank(mg_ctx *c, const mg_meta *m, const char *p, size_t n, double score, long long *rank);

/* Each member document with lo <= _id < hi in _id order (rev: descending),
 * skipping skip, at most limit (< 0: all), read in pages: each(u, doc, id,
 * idlen) returns FD_OK to go on, MG_E_STOP to stop (FD_OK is returned),
 * or an error (returned). */
typedef int (*mg_big_each)(void *u, const bson_t *doc, const char *id, size_t idl);
int  mg_big_scan(mg_ctx *c, const char *lo, size_t lol, const char *hi, size_t hil, int rev,
                 long long skip, long long limit, mg_big_each each, void *u);

/* ================================================================ streams (mg_stream.c) */

/* Delete the sub-documents (db0_stream) of the stream whose key document
 * m was read (DEL/UNLINK, after the key document went): FD_OK or MG_E_MONGO. */
int  mg_stream_drop(mg_ctx *c, const mg_meta *m);
/* COPY of a stream: its sub-documents copied under a fresh version, then the
 * key document dst (src's fields, expiry included, with the new version),
 * so that the copy shares nothing with the source. FD_OK, FD_E_CORRUPT,
 * FD_E_NOMEM or MG_E_MONGO. */
int  mg_stream_copy(mg_ctx *c, const resp_arg *dst, const bson_t *src);
/* DUMP / RESTORE of a stream (storage/value/stream.h's fd_stream_dump /
 * fd_stream_restore over MongoDB): the payload of the stream at key into
 * out (FD_NOTFOUND: none); the stream key created from a checked payload
 * (key absent: the caller deleted it; no TTL). */
struct fd_rdb_buf;
int  mg_stream_dump(mg_ctx *c, const resp_arg *key, struct fd_rdb_buf *out);
int  mg_stream_restore(mg_ctx *c, const resp_arg *key, const void *p, size_t n);

/* ================================================================ keys (mg_keys.c) */

/* Every live key with its type and scan hash (sorted by hash when sorted):
 * FD_OK (*out owned by the caller: mg_keys_free), FD_E_NOMEM, MG_E_MONGO. */
int  mg_all_keys(mg_ctx *c, mg_keyent **out, size_t *count, int sorted);
void mg_keys_free(mg_keyent *v, size_t n);

#endif
