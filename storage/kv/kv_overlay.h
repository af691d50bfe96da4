/* kv_overlay.h — an in-memory ordered map of byte-string keys to a value or
 * a tombstone: the write set of a transaction over an engine whose reads do
 * not see its pending writes (LevelDB: storage/leveldb.c keeps a turn's
 * writes here and commits them as one WriteBatch).
 *
 * A skiplist ordered by kv_overlay_keycmp (bytes, then length: LevelDB's
 * default order). Entries are live (a value) or tombstones (deleted in this
 * transaction: they hide the engine's record). One thread writes an
 * overlay; once nobody puts into it any more (a frozen turn, LevelDB's
 * writer thread storing it), another thread may walk it with first/next
 * while the owner still reads it (kv_overlay_get only reads the hash
 * index; the insertion finger is moved by puts only). No entry is ever removed except by clear/free, so an
 * entry pointer stays valid until then (a put or del changes the entry in
 * place).
 *
 * Cursors over the engine and the overlay together keep an entry pointer and
 * kv_overlay_gen(): the generation changes on every insert of a new key and
 * on clear, so a cursor that sees it changed finds its place again by key.
 *
 * Module prefix: kv_overlay_ / kv_ov_. Errors: FD_E_NOMEM (malloc),
 * FD_E_INTERNAL (a key longer than 4 GiB).
 */
#ifndef FRONTDOOR_KV_OVERLAY_H
#define FRONTDOOR_KV_OVERLAY_H

#include <stddef.h>
#include <stdint.h>

typedef struct kv_overlay kv_overlay;

/* An entry. Read-only for callers: dead (a tombstone), val/vlen (a live
 * entry's value; val may be NULL when vlen is 0), the key through kv_ov_key
 * and klen. */
typedef struct kv_ov_node {
    char    *val;            /* vcap bytes (the overlay's); NULL when vcap == 0 */
    size_t   vlen, vcap;
    uint32_t klen;
    uint8_t  dead;           /* tombstone: deleted in this transaction */
    uint8_t  level;
    uint8_t  heap;           /* private: OV_HEAP_* (kv_overlay.c) */
    struct kv_ov_node *next[];  /* `level` pointers, then the key bytes */
} kv_ov_node;

static inline const char *kv_ov_key(const kv_ov_node *n) { return (const char *)(n->next + n->level); }
/* The entry after n in key order, or NULL. */
static inline kv_ov_node *kv_ov_next(const kv_ov_node *n) { return n->next[0]; }

/* Byte order of keys: memcmp, then the shorter first (<0, 0, >0). */
int kv_overlay_keycmp(const char *a, size_t al, const char *b, size_t bl);

/* A new empty overlay, or NULL (out of memory). */
kv_overlay *kv_overlay_new(void);
/* Free it and every entry (NULL is fine). */
void kv_overlay_free(kv_overlay *ov);
/* Remove every entry, tombstones included (count and bytes 0); bumps gen. */
void kv_overlay_clear(kv_overlay *ov);

/* A hint: a get of k follows soon; start loading its hash slot. */
void kv_overlay_prefetch(const kv_overlay *ov, const void *k, size_t kl);
/* The entry of k (live or tombstone), or NULL when the overlay has none:
 * one lookup in the overlay's hash index (no walk, nothing changed). */
kv_ov_node *kv_overlay_get(kv_overlay *ov, const void *k, size_t kl);

/* Make k live with the value v (vl bytes, copied; v may point into k's own
 * current value), or with vl bytes of undefined contents when v is NULL
 * (the caller then writes them at (*node)->val). *node (optional) gets the
 * entry. FD_OK, FD_E_NOMEM (a new key may then be left as a tombstone: the
 * caller abandons the transaction), FD_E_INTERNAL (kl > UINT32_MAX). */
int kv_overlay_put(kv_overlay *ov, const void *k, size_t kl, const void *v, size_t vl, kv_ov_node **node);

/* Make k a tombstone (created when absent; its value freed). FD_OK,
 * FD_E_NOMEM, FD_E_INTERNAL. */
int kv_overlay_del(kv_overlay *ov, const void *k, size_t kl);
/* Make the entry n a tombstone (no lookup). */
void kv_overlay_kill(kv_overlay *ov, kv_ov_node *n);

/* Positioning: NULL when there is no such entry. Tombstones are entries
 * (the caller skips them where it must). */
kv_ov_node *kv_overlay_first(const kv_overlay *ov);
/* The first entry >= k (> k when strict). */
kv_ov_node *kv_overlay_seek(const kv_overlay *ov, const void *k, size_t kl, int strict);
/* The last entry <= k (< k when strict). */
kv_ov_node *kv_overlay_seek_le(const kv_overlay *ov, const void *k, size_t kl, int strict);
/* The entry before n (the last one < n's key). */
kv_ov_node *kv_overlay_prev(const kv_overlay *ov, const kv_ov_node *n);

size_t   kv_overlay_count(const kv_overlay *ov);   /* entries, tombstones included */
size_t   kv_overlay_bytes(const kv_overlay *ov);   /* key bytes + value buffers held */
uint64_t kv_overlay_gen(const kv_overlay *ov);     /* see the top of this file */

#endif
