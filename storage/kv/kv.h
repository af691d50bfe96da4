/* kv.h — the ordered key-value layer shared by the embedded backends.
 *
 * Three parts:
 *   1. kv_driver: what an embedded engine (LMDB, later LevelDB) provides —
 *      an ordered map of byte strings with a write transaction, nested
 *      transactions where the engine has them, and cursors.
 *   2. The key encoding (kv_enc_*): how Redis keys of all five types, their
 *      metadata, sub-records, expiry index and counters map onto that ordered
 *      map. docs/encoding.md is the long form; this header is the contract.
 *   3. The Redis-types layer state (kv_store, struct kv_ctx) and the generic
 *      backend (kv_backend_*, storage/kv/kv_backend.c) that turns any driver into
 *      an fd_backend_ops with group commit and active expiry.
 *
 * Module prefix: kv_. Everything runs on the loop thread.
 */
#ifndef FRONTDOOR_KV_H
#define FRONTDOOR_KV_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "../../protocol/resp.h"
#include "../status.h"
#include "../backend.h"
#include "kv_commands.h"

/* ================================================================ driver */

typedef struct kv_iter kv_iter;   /* defined by each driver */

/* An ordered KV engine. `db` is the driver's handle, `txn` a transaction it
 * returned from begin(). Every function returns FD_OK, FD_NOTFOUND where
 * stated, or an FD_E_* status (engine full → FD_E_OOM, I/O → FD_E_IO,
 * damaged file → FD_E_CORRUPT, malloc → FD_E_NOMEM).
 *
 * Memory returned by get()/cur() belongs to the engine and is valid only
 * until the next write (put/reserve/del/clear) in that transaction or its
 * end — copy it first if a write follows.
 * After an FD_E_* from a write the transaction may be unusable (LMDB marks
 * it failed): the caller aborts it.
 * A driver without nested transactions (LevelDB: a write batch) returns
 * FD_E_NOTSUPPORTED from begin(parent != NULL) and sets nearly_full NULL;
 * the backend then runs every command directly in the turn's transaction. */
typedef struct kv_driver {
    const char *name;
    /* Begin a write transaction; parent NULL: the top-level one (at most one
     * at a time), else a nested one inside parent (FD_E_NOTSUPPORTED if the
     * engine has none). Reads see the transaction's own writes. */
    int  (*begin)(void *db, void *parent, void **txn);
    int  (*commit)(void *txn);          /* the txn is gone whatever the result */
    void (*abort)(void *txn);
    int  (*get)(void *txn, const void *k, size_t kl, const void **v, size_t *vl); /* FD_NOTFOUND */
    int  (*put)(void *txn, const void *k, size_t kl, const void *v, size_t vl);
    /* Put a value of vl bytes and return where to write them (*dst, valid
     * until the next driver call); saves a copy of big values. */
    int  (*reserve)(void *txn, const void *k, size_t kl, size_t vl, void **dst);
    int  (*del)(void *txn, const void *k, size_t kl);                            /* FD_NOTFOUND */
    int  (*clear)(void *txn);                                                    /* delete everything */
    /* Cursors: opened inside a transaction, closed before it ends. Positioning
     * calls return FD_OK, FD_NOTFOUND (ran off either end) or FD_E_*. */
    int  (*iter_open)(void *txn, kv_iter **it);
    void (*iter_close)(kv_iter *it);
    int  (*seek)(kv_iter *it, const void *k, size_t kl);      /* first record >= k */
    int  (*seek_le)(kv_iter *it, const void *k, size_t kl);   /* last record <= k */
    int  (*next)(kv_iter *it);
    int  (*prev)(kv_iter *it);
    int  (*cur)(kv_iter *it, const void **k, size_t *kl, const void **v, size_t *vl);
    /* Non-zero when a write of about `extra` more bytes might not fit (LMDB:
     * high-water mark above 80% of the map): the backend then runs writes in
     * nested transactions (see kv_backend.c). NULL: never. */
    int  (*nearly_full)(void *db, size_t extra);
    /* Optional (LevelDB): commit() may return before the transaction is
     * stored (a writer thread stores it); then the replies of the writes it
     * holds wait for it. NULL: commit() stores before it returns.
     *   stamp(txn): a number that changes with every write made in txn (a
     *     command that changed nothing needs no wait).
     *   hold(txn, p, reply, len): keep a copy of a write command's reply
     *     until txn's commit is stored, then complete p with it on the loop
     *     thread (fd_pending_reply), or fail p with the commit's status.
     *     FD_OK, or FD_E_NOMEM (not held). p NULL: a write's reply was
     *     released now (a detached request: a script's command): txn's
     *     commit() must store it before it returns. */
    uint64_t (*stamp)(void *txn);
    int  (*hold)(void *txn, fd_pending *p, const void *reply, size_t len);
    /* Optional (LevelDB): n records under pfx were deleted from places the
     * next walks of pfx cross (SPOP's random picks). A store that keeps
     * tombstones until a compaction may compact that range sooner. A hint:
     * nothing is promised, and an aborted txn may have given it. NULL:
     * deletes leave nothing behind (LMDB). */
    void (*scattered)(void *txn, const void *pfx, size_t pl, uint64_t n);
    /* Optional: the records k[0..n) (n <= KV_PREFETCH_MAX) will be read by
     * get() soon (a multi-key command's metadata records, before the
     * command runs). A store may start loading the memory those reads
     * touch, so their cache misses overlap instead of coming one after the
     * other. A hint: it changes nothing a read answers. NULL: none. */
    void (*prefetch)(void *txn, int n, const void *const *k, const size_t *kl);
    /* Optional: delete k, a record the caller knows is there (read in this
     * transaction, or implied by one that was: a sorted-set member's
     * score-index record, a key's expiry entry), without del()'s lookup.
     * FD_OK or FD_E_*. A store whose delete must first ask whether the
     * record exists (LevelDB: a tombstone only over a held record) saves
     * that read. NULL: del(). */
    int  (*drop)(void *txn, const void *k, size_t kl);
    /* Optional: get() for a read likely to come again soon (LRANGE's
     * elements, at most KV_CACHED_RUN of them per command): a store with a
     * cache of recent reads answers from it and keeps what it had to read
     * there. Same contract as get(). NULL: a cursor walk instead. */
    int  (*get_cached)(void *txn, const void *k, size_t kl, const void **v, size_t *vl);
} kv_driver;
#define KV_CACHED_RUN 128
#define KV_PREFETCH_MAX 16

/* ================================================================ encoding
 *
 * One byte of prefix separates the record families; the order is
 * 'A' < 'C' < 'E' < 'G' < 'M' < 'S', so SCAN/KEYS walk only the 'M' range.
 *
 *   'A' name                       -> frontdoor's own record      fd_backend_ops.aux_get/aux_put
 *                                                                 (the FUNCTION libraries), kept by FLUSHDB
 *   'C' name                       -> counter (8 bytes BE)        format, keys, expires, version
 *   'E' expire_ms(8 BE) enc        -> ""                          expiry index
 *   'G' version(8 BE)              -> subkey prefix to reclaim    garbage queue (O(1) DEL)
 *   'M' enc                        -> metadata (+ inline string)  one per Redis key
 *   'S' len(1) enc version(8 BE) tag sub -> element               collection elements
 *
 * enc is the encoded key: the key itself when it is at most KV_KEY_INLINE
 * (200) bytes, else its first 200 bytes followed by a 128-bit SipHash-2-4
 * (KV_KEY_HASHED = 216 bytes). The two forms never collide: a raw form is
 * never longer than 200 bytes, a hashed one is always 216.
 *
 * Metadata value:
 *   flags(1) = type (low 4 bits) | KV_F_LONGKEY
 *   expire_ms(8 BE, 0 = none)
 *   [KV_F_LONGKEY: full key length (4 BE) + full key]
 *   string:     the value bytes (stored inline: GET is one read)
 *   collection: version(8 BE) size(8 BE) [list: head(8 BE) tail(8 BE)]
 *   stream:     version(8 BE) + the engine's metadata (FD_SMETA_LEN bytes,
 *               storage/value/stream.h: length, last/first/max-deleted ids,
 *               entries added, groups, ...)
 *
 * Sub-record tags (after the version):
 *   'f' field'          -> value            hash
 *   'm' member'         -> ""               set
 *   'z' member'         -> score(8, kv_enc_double)   zset member -> score
 *   's' score(8) member'-> ""               zset score index (byte order = numeric order)
 *   'l' seq(8 BE)       -> element          list (head..tail, start 2^63, SSDB-style)
 *   'x' 'n' 'g' 'c' 'p' 'q' ...             stream sub-records, laid out by
 *                                           storage/value/stream.h (kv_stream.c)
 * where field'/member' is encoded like a key (raw up to 200 bytes, else
 * prefix + hash with the full text at the front of the value).
 */
#define KV_FORMAT 1   /* 'C' "format": bumped by any incompatible change below */
enum { KV_T_NONE = 0, KV_T_STRING = 1, KV_T_LIST = 2, KV_T_HASH = 3, KV_T_SET = 4, KV_T_ZSET = 5, KV_T_STREAM = 6 };
#define KV_F_TYPEMASK   0x0f
#define KV_F_LONGKEY    0x10   /* the full key follows the expiry */

#define KV_PFX_AUX      'A'
#define KV_PFX_COUNTER  'C'
#define KV_PFX_EXPIRE   'E'
#define KV_PFX_GARBAGE  'G'
#define KV_PFX_META     'M'
#define KV_PFX_SUB      'S'

#define KV_TAG_HASH     'f'
#define KV_TAG_SET      'm'
#define KV_TAG_ZMEMBER  'z'
#define KV_TAG_ZSCORE   's'
#define KV_TAG_LIST     'l'

#define KV_KEY_INLINE   200                     /* longest key stored as is */
#define KV_KEY_HASHED   (KV_KEY_INLINE + 16)    /* length of a hashed key */
#define KV_ENC_MAX      KV_KEY_HASHED
#define KV_MKEY_MAX     (1 + KV_ENC_MAX)
#define KV_EKEY_MAX     (1 + 8 + KV_ENC_MAX)
#define KV_SUBPFX_MAX   (1 + 1 + KV_ENC_MAX + 8)
#define KV_META_HDR     9                       /* flags + expiry */
#define KV_LIST_SEQ_START 0x8000000000000000ULL /* first list sequence number */

/* SipHash-2-4 of data under a 16-byte key. */
uint64_t kv_siphash(const uint8_t key[16], const void *data, size_t len);
/* 128-bit hash: two SipHash-2-4 runs under two fixed keys, big-endian. */
void     kv_hash128(const void *data, size_t len, uint8_t out[16]);

/* Big-endian integers (inline: every key and metadata record uses them). */
static inline void kv_put_u64(uint8_t *p, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
    memcpy(p, &v, 8);
#else
    for (int i = 7; i >= 0; i--) { p[i] = (uint8_t)v; v >>= 8; }
#endif
}
static inline uint64_t kv_get_u64(const uint8_t *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, p, 8);
    return __builtin_bswap64(v);
#else
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return v;
#endif
}
static inline void kv_put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);  p[3] = (uint8_t)v;
}
static inline uint32_t kv_get_u32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
/* Signed 64-bit as 8 bytes whose byte order is numeric order. */
void     kv_enc_i64(uint8_t out[8], int64_t v);
int64_t  kv_dec_i64(const uint8_t in[8]);
/* Double as 8 bytes whose byte order is numeric order, -inf .. +inf.
 * -0 is stored as +0 (Redis compares them equal); NaN is never stored. */
void     kv_enc_double(uint8_t out[8], double d);
double   kv_dec_double(const uint8_t in[8]);

/* Encoded form of a key (or field/member): out must hold KV_ENC_MAX bytes.
 * Returns its length (len if len <= KV_KEY_INLINE, else KV_KEY_HASHED). */
size_t kv_enc_key(uint8_t *out, const void *key, size_t len);
/* 'M' + enc. out: KV_MKEY_MAX bytes. */
size_t kv_enc_meta_key(uint8_t *out, const void *key, size_t len);
/* 'E' + expire + enc. */
size_t kv_enc_expire_key(uint8_t *out, int64_t expire_ms, const uint8_t *enc, size_t elen);
/* 'S' + len8(enc) + enc + version: the prefix of every element of one
 * collection version. out: KV_SUBPFX_MAX bytes. */
size_t kv_enc_sub_prefix(uint8_t *out, const uint8_t *enc, size_t elen, uint64_t version);

/* Parsed metadata record. Pointers are into driver memory (see kv_driver). */
typedef struct kv_meta {
    int         found;      /* a record exists (it may be expired) */
    int         live;       /* found and not expired at c->now_ms */
    int         type;       /* KV_T_* */
    int64_t     expire;     /* ms since the epoch, 0 = none */
    const char *fullkey;    /* KV_F_LONGKEY: the full key, else NULL */
    size_t      fullkey_len;
    const char *val;        /* string: the value */
    size_t      vlen;
    uint64_t    version, size, head, tail;  /* collections; lists: the sequence ends;
                                              * sorted sets: score bounds (kv_zset.c), 0 = none */
} kv_meta;

/* Parse a metadata value. FD_OK or FD_E_CORRUPT. Sets found=1, live=1
 * (the caller applies expiry). */
int kv_meta_parse(const void *v, size_t vl, kv_meta *m);

/* ================================================================ store */

#define KV_SCAN_SLOTS 1024   /* remembered SCAN cursors (ring) */

typedef struct kv_cursor {
    uint64_t id;             /* cursor number given to the client; 0 = free */
    uint8_t  len;
    uint8_t  enc[KV_ENC_MAX];/* encoded key of the last record visited */
} kv_cursor;

/* Per-store state of the Redis-types layer (one per open backend). */
typedef struct kv_store {
    const kv_driver *drv;
    void    *db;
    void    *txn;            /* the turn's transaction, or NULL */
    int      turn_err;       /* FD_E_* of this turn's aborted transaction, reported by end_turn */
    int      careful;        /* run each write in a nested transaction (map nearly full) */
    int      oom_sticky;     /* turns left in careful mode after a MAP_FULL */
    long long max_bulk;      /* proto-max-bulk-len (set by the driver file from its config) */
    /* counters: committed values, plus this turn's deltas */
    uint64_t keys, expires, version;
    int64_t  t_keys, t_expires;
    int      t_dirty;        /* counter records must be written at commit */
    int      t_cleared;      /* FLUSHDB ran this turn: rewrite the format stamp */
    /* a reusable scratch buffer for building values (APPEND, SETRANGE...) */
    char    *buf;
    size_t   buf_cap;
    /* SCAN cursor table */
    kv_cursor *cursors;
    uint64_t next_cursor;
    uint64_t rng;            /* RANDOMKEY */
    /* statistics */
    uint64_t expired_keys, commits, commit_errors, careful_turns;
    /* keyspace events raised in the open transaction (host.h), delivered
     * when it commits, dropped with it */
    fd_events events;
} kv_store;

/* What a handler sees: the command, the reply sink and the transaction.
 * Built on the stack by kv_backend_submit for one command; argv and out are
 * the request's (valid only during the call); txn is the turn's transaction
 * or, in careful mode, a transaction nested in it. */
struct kv_ctx {
    kv_store        *st;
    const kv_driver *drv;
    void            *txn;
    int              argc;
    resp_arg        *argv;
    resp_out        *out;
    int64_t          now_ms;
    long long        max_bulk;
    /* counter changes made by this command; merged into the turn on success */
    int64_t          d_keys, d_expires;
    /* the keys this write left unchanged (fd_request.untouched), set by the handler */
    unsigned         untouched;
    int              read;   /* a read-only command: a lookup that misses raises keymiss */
    int              overwrite; /* a STORE replacing a live destination: re-creating it raises
                                 * no "new" (Redis's setKey overwrites it) */
};
typedef struct kv_ctx kv_ctx;

/* Raise a keyspace event (host.h: FD_NOTIFY) of class FD_NOTIFY_<cls> on a
 * key, or on the command's argument i; delivered when the turn commits. */
#define KV_NOTIFY(c, cls, event, key, klen) FD_NOTIFY(&(c)->st->events, FD_NOTIFY_##cls, event, key, klen)
#define KV_NOTIFY_ARG(c, cls, event, i) KV_NOTIFY(c, cls, event, (c)->argv[i].ptr, (c)->argv[i].len)

/* Initialise st over an open driver handle: loads the counters. */
int  kv_store_init(kv_store *st, const kv_driver *drv, void *db, char *err, size_t errlen);
/* Abort any open transaction and free st's memory (not the driver's). */
void kv_store_free(kv_store *st);
/* SCAN cursors. kv_cursor_resume: if `cursor` is one st remembers, append
 * the encoded record it stopped at to start[*len] and return 1 (the scan
 * resumes after it); else 0 (an unknown cursor restarts the iteration).
 * kv_cursor_remember: a new cursor number for the record enc[0..len). */
int      kv_cursor_resume(const kv_store *st, uint64_t cursor, uint8_t *start, size_t *len);
uint64_t kv_cursor_remember(kv_store *st, const uint8_t *enc, size_t len);
/* Scratch buffer of at least n bytes (NULL on malloc failure). Valid until
 * the next call; shrunk at the end of a turn when it grew large. */
char *kv_scratch(kv_store *st, size_t n);


/* ================================================================ backend
 * The generic fd_backend_ops entry points (storage/kv/kv_backend.c). A driver
 * file sets fd_backend.state to its kv_store (it may embed it first in a
 * larger struct) and uses these for submit/end_turn/cron/keyspace. */
/* The end of a driver's open: kv_store_init over `db`, then b->state = st.
 * On failure nothing is attached and the driver closes `db` itself. */
int  kv_backend_attach(fd_backend *b, kv_store *st, const kv_driver *drv, void *db,
                       const fd_backend_config *cfg, char *err, size_t errlen);
int  kv_backend_submit(fd_backend *b, fd_request *r);
int  kv_backend_end_turn(fd_backend *b);
void kv_backend_cron(fd_backend *b, int64_t now_ms);
/* support(): the kv family serves every DATA command it has a handler for. */
const char *kv_backend_support(const struct fd_command *cmd);
void kv_backend_keyspace(fd_backend *b, uint64_t *keys, uint64_t *expires);
/* fd_backend_ops.aux_get / aux_put: 'A' records (see the encoding above). */
int  kv_backend_aux_get(fd_backend *b, const char *name, char **v, size_t *vl);
int  kv_backend_aux_put(fd_backend *b, const char *name, const void *v, size_t vl);
/* Append the layer's INFO lines (kv_keys, kv_expires, ...). */
void kv_backend_info(kv_store *st, resp_out *lines);

/* ================================================================ internal
 * Helpers shared by the handler files (kv_store.c, kv_string.c, kv_keys.c). */

/* A key named by a command argument, with its 'M' record key. */
typedef struct kv_key {
    const char *key;
    size_t      klen;
    uint8_t     mkey[KV_MKEY_MAX];   /* 'M' + enc */
    size_t      mlen;
} kv_key;
#define KV_KEY_ENC(k)  ((k)->mkey + 1)
#define KV_KEY_ELEN(k) ((k)->mlen - 1)

void kv_key_init(kv_key *k, const void *key, size_t len);
/* Read k's metadata: FD_OK with m->found = 0 when absent; m->live applies
 * the expiry at c->now_ms. FD_E_* on storage errors. In a read-only
 * command (c->read) a key named by the command (k->key set) that is not
 * live raises "keymiss" (class m), as Redis 7.0's lookupKeyRead. A read
 * never writes (callers keep pointers into driver memory across lookups). */
int  kv_lookup(kv_ctx *c, const kv_key *k, kv_meta *m);
/* Delete k, a record known to be there (kv_driver.drop, else del()). */
int  kv_drop(kv_ctx *c, const void *k, size_t kl);
/* Delete k's record (m from kv_lookup, m->found): metadata, expiry index
 * entry, counters; a collection's elements go to the garbage queue. */
int  kv_delete(kv_ctx *c, const kv_key *k, const kv_meta *m);
/* Write k as a string of a..b (two pieces, either may be empty) with expiry
 * `expire` (0 none), replacing whatever `old` (from kv_lookup) was. a and b
 * must not point into driver memory. */
int  kv_write_string(kv_ctx *c, const kv_key *k, const kv_meta *old, int64_t expire,
                     const void *a, size_t al, const void *b, size_t bl);
/* Write k's metadata record as type `type` with body (version first) and
 * m's expiry; counts a new key when !m->found (then sets it). (Streams.) */
int  kv_write_meta(kv_ctx *c, const kv_key *k, kv_meta *m, int type, const void *body, size_t bl);
/* Change the expiry of the live key k (m from kv_lookup): rewrites the
 * metadata and the expiry index. */
int  kv_set_expire(kv_ctx *c, const kv_key *k, const kv_meta *m, int64_t expire);
/* A fresh collection version (unique in the store, never reused). */
uint64_t kv_new_version(kv_store *st);
/* Copy every element record of prefix `from` to prefix `to` (RENAME of a
 * collection); from/to are kv_enc_sub_prefix() outputs. */
int  kv_copy_prefix(kv_ctx *c, const uint8_t *from, size_t flen, const uint8_t *to, size_t tlen);
/* Lazy expiry, as Redis's expireIfNeeded, while class x is delivered: the
 * keys of command `cmd` (storage/command.h fd_command_keys, at most
 * KV_LAZY_KEYS of them) whose record has expired are deleted and raise
 * "expired", before the command runs (kv_backend.c). FD_OK or FD_E_*. */
#define KV_LAZY_KEYS 256
int  kv_expire_keys(kv_ctx *c, const struct fd_command *cmd);
/* Active expiry (keys whose expiry index entry is <= c->now_ms) and garbage
 * reclamation in c->txn, bounded by max_keys records and budget_us of wall
 * time. Counter changes accumulate in c->d_*. FD_OK or FD_E_*; *done is the
 * number of keys expired. */
int  kv_expire_cycle(kv_ctx *c, int max_keys, int64_t budget_us, int *done);
/* Write the counter records of st (keys + turn delta, ...) into txn. */
int  kv_store_flush_counters(kv_store *st, void *txn);
/* ---------------------------------------------------------------- collections
 * Shared by kv_list.c, kv_hash.c, kv_set.c, kv_zset.c (implemented in
 * kv_store.c). An element record is
 *   'S' len(enc) enc version(8) tag sub  ->  [u32 len + full sub] value
 * where the bracketed part is present only when the field/member was longer
 * than KV_KEY_INLINE (sub is then its 216-byte hashed form). */
#define KV_ELEM_MAX  (KV_SUBPFX_MAX + 1 + 8 + KV_ENC_MAX)   /* longest element key: 451 */
#define KV_SEEK_MAX  (KV_ELEM_MAX + 8)

/* Look up the key `key` as a collection of `type`: FD_E_WRONGTYPE when it
 * holds a live value of another type. An expired record is reported with
 * m->live = 0 (m->found may be 1: kv_coll_new removes it). */
int  kv_coll_lookup(kv_ctx *c, kv_key *k, kv_meta *m, const resp_arg *key, int type);
/* Turn m into a new, empty collection of `type` with a fresh version,
 * deleting an expired record of the same key first. Nothing is written
 * until kv_coll_save. */
int  kv_coll_new(kv_ctx *c, const kv_key *k, kv_meta *m, int type);
/* Write m's metadata (version, size, head, tail, expiry). When m->size is
 * 0 the key is deleted instead (its elements must be gone already): an
 * empty collection never exists. Keeps the key counter right. */
int  kv_coll_save(kv_ctx *c, const kv_key *k, kv_meta *m);
/* 'S' len enc version tag: the prefix of m's elements with `tag`. */
size_t kv_elem_prefix(uint8_t *out, const kv_key *k, const kv_meta *m, int tag);
/* Prefix (from kv_elem_prefix or longer) + encoded sub (field/member). */
size_t kv_elem_key(uint8_t *out, const uint8_t *pfx, size_t pl, const void *sub, size_t sl);
/* Read the element record ek whose sub is (f, fl): FD_OK with *v, *vl the
 * value proper (after any long-sub prefix), FD_NOTFOUND, or FD_E_*. */
int  kv_elem_get(kv_ctx *c, const uint8_t *ek, size_t el, const void *f, size_t fl,
                 const void **v, size_t *vl);
/* Write element ek with sub (f, fl) and value v (neither may point into
 * driver memory); v may be NULL when vl is 0. */
int  kv_elem_put(kv_ctx *c, const uint8_t *ek, size_t el, const void *f, size_t fl,
                 const void *v, size_t vl);
/* Decode a record found under a prefix of pl bytes (the sub starts at pl):
 * the full sub and the value proper. FD_OK or FD_E_CORRUPT. */
int  kv_elem_decode(const void *k, size_t kl, size_t pl, const void *v, size_t vl,
                    const char **sub, size_t *sl, const char **val, size_t *vall);
/* Range walks over one prefix. Seek: forward, the first record >= from;
 * rev, the last record <= from followed by 0xff bytes (so every key that
 * starts with `from` is included). Step: next / prev. Both return FD_OK with
 * the record in *k, *v, FD_NOTFOUND when the walk left pfx, or FD_E_*. */
int  kv_range_seek(kv_ctx *c, kv_iter *it, const uint8_t *pfx, size_t pl,
                   const uint8_t *from, size_t fl, int rev,
                   const void **k, size_t *kl, const void **v, size_t *vl);
int  kv_range_step(kv_ctx *c, kv_iter *it, const uint8_t *pfx, size_t pl, int rev,
                   const void **k, size_t *kl, const void **v, size_t *vl);
/* Position it on a random record of the prefix, which holds `size` records
 * (kv_hash.c). Up to KV_RANDOM_EXACT records the pick is uniform: a random
 * rank, walked to from the first record (at most size - 1 steps). Above it,
 * an estimate of bounded cost (at most 64 seeks, typically 2 per branching
 * level of the keys, one of them backward): a random descent of the key trie, each branch of a
 * level equally likely — near uniform for keys of one shape, not when
 * branches differ much in size (docs/encoding.md). A stale size (fewer
 * records) gives the first record. FD_OK, FD_NOTFOUND (no record), FD_E_*. */
#define KV_RANDOM_EXACT 512
int  kv_random_seek(kv_ctx *c, kv_iter *it, const uint8_t *pfx, size_t pl, uint64_t size,
                    const void **k, size_t *kl, const void **v, size_t *vl);
/* `want` independent uniform picks (with repetitions) among the `size`
 * records of the prefix: fn(arg, sub, sl, val, vl) for each, with the
 * decoded sub and value (valid during the call; fn must not write to the
 * store), until it returns non-zero (that status is returned). Small
 * collections (<= KV_RANDOM_EXACT) are read once when want > 1, so the cost
 * is O(size + want); bigger ones cost one kv_random_seek per pick. */
typedef int (*kv_pick_fn)(void *arg, const char *sub, size_t sl, const char *val, size_t vl);
int  kv_random_picks(kv_ctx *c, const uint8_t *pfx, size_t pl, uint64_t size, long long want,
                     kv_pick_fn fn, void *arg);
/* xorshift64* of the store (random pickers). */
uint64_t kv_rand(kv_store *st);

/* A growable list of byte strings (each stored as u32 length + bytes),
 * for results collected before writing (the driver's memory is invalid
 * after a write). */
typedef struct kv_list {
    char  *p;
    size_t len, cap;
    long long n;
} kv_list;
int  kv_list_add(kv_list *l, const void *a, size_t al, const void *b, size_t bl);  /* one item: a then b */
/* Walk: *off starts at 0; returns 1 with the item, 0 at the end. */
int  kv_list_next(const kv_list *l, size_t *off, const char **p, size_t *n);
void kv_list_free(kv_list *l);

/* The stores of hashes and sets (kv_coll.c; storage/value/coll.h). */
struct fd_coll_io;
extern const struct fd_coll_io kv_hash_io, kv_set_io;
/* TYPE's name of a KV_T_* type (kv_keys.c). */
const char *kv_type_name(int t);
/* The event() of the value/ adapters: a keyspace event on key (h: kv_ctx). */
void kv_io_event(void *h, int cls, const char *event, const resp_arg *key);
/* Their untouched(): the command's key number nth was left as it was. */
void kv_io_untouched(void *h, int nth);

/* HSCAN/SSCAN/ZSCAN (kv_hash.c): walk the `tag` records of a `type` key. */
int  kv_subscan(kv_ctx *c, int type, int tag);

/* ---------------------------------------------------------------- sorted sets (kv_zset.c)
 * The sorted-set layout for the files built on it (kv_zsetops.c,
 * kv_dump.c, kv_sort.c): a key with its 'z' (member -> score) and 's' (score index)
 * element prefixes. */
typedef struct kv_zref {
    kv_key  k;
    kv_meta m;
    uint8_t zp[KV_ELEM_MAX], sp[KV_ELEM_MAX];
    size_t  pl;                 /* both prefixes have this length */
} kv_zref;
/* Look key up as a sorted set (FD_E_WRONGTYPE for another live type);
 * r->m.live says whether it exists. */
int kv_zref_load(kv_ctx *c, kv_zref *r, const resp_arg *key);
/* Write member m with score (had_old: its previous score was old). The
 * caller counts new members into r->m.size and calls kv_coll_save. */
int kv_zset_put(kv_ctx *c, kv_zref *r, const char *m, size_t ml, double score, int had_old, double old);
/* The members with min <= score <= max (minex/maxex: exclusive bounds) in
 * Redis's order: fn(arg, member, len, score) for each until it returns
 * non-zero (1 stops, -1 is FD_E_NOMEM). Members are in driver memory: copy
 * them; fn must not write to the store. FD_OK or FD_E_*. */
typedef int (*kv_zset_fn)(void *arg, const char *m, size_t ml, double score);
int kv_zset_walk(kv_ctx *c, const kv_zref *r, double min, int minex, double max, int maxex,
                 kv_zset_fn fn, void *arg);
/* Replace key dst (whatever it holds) with a sorted set of a[0..n) (distinct
 * members), or delete it when n is 0. a must not point into driver memory.
 * Raises `event` on dst (n > 0), or "del" when a live dst was deleted. */
struct fd_zent;
int kv_zset_store(kv_ctx *c, const resp_arg *dst, const struct fd_zent *a, size_t n, const char *event);

/* DUMP / RESTORE of a stream (kv_stream.c, storage/value/stream.h's
 * fd_stream_dump / fd_stream_restore over this layer): the payload of the
 * stream argv[1] into out (FD_NOTFOUND: not a stream); the stream key
 * created from a checked payload (key absent: the caller deleted it; no TTL). */
struct fd_rdb_buf;
int kv_stream_dump(kv_ctx *c, struct fd_rdb_buf *out);
int kv_stream_restore(kv_ctx *c, const resp_arg *key, const void *p, size_t n);

/* ---------------------------------------------------------------- lists (kv_list.c) */
/* LMPOP's core for one key (kept separate for the blocking form): when key
 * holds a list, pop up to count elements from the left (or right) end and
 * reply [key, [elements]], *done = 1; a missing key: *done = 0 and nothing
 * written; FD_E_WRONGTYPE for another type. */
int kv_list_mpop_one(kv_ctx *c, const resp_arg *key, int left, long long count, int *done);
/* ZMPOP's core for one key (storage/value/zset.c over kv_zset.c), the same contract: a sorted set
 * pops up to count members from the low (max 0) or high end and replies
 * [key, [[member, score]...]]. */
int kv_zset_mpop_one(kv_ctx *c, const resp_arg *key, int max, long long count, int *done);

/* Every element of the live collection m of key k, in its native order
 * (list: head to tail; set: stored order; sorted set: by score, then
 * member; hash: fields, each followed by its value), appended to out as
 * copies; at most max items (hash: max fields), max < 0: all
 * (kv_sort.c). FD_OK or FD_E_*. */
int  kv_coll_collect(kv_ctx *c, const kv_key *k, const kv_meta *m, long long max, kv_list *out);

/* Status that means the transaction is broken (storage failure). */
static inline int kv_is_storage_error(int s)
{
    return s == FD_E_OOM || s == FD_E_IO || s == FD_E_CORRUPT || s == FD_E_NOMEM || s == FD_E_INTERNAL;
}

#endif
