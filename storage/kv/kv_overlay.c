/* kv_overlay.c — the write-set skiplist (contract in kv_overlay.h). */
#include <stdlib.h>
#include <string.h>

#include "../status.h"
#include "../bytecmp.h"
#include "kv_overlay.h"

#define OV_MAX_LEVEL 20

/* Memory. Nodes and values come from the overlay's own blocks of OV_BLOCK
 * bytes, taken in order and given back all at once by clear (a spare list
 * of up to OV_SPARE blocks is kept for the next transaction); only a node
 * or a value over OV_SMALL bytes is malloc'ed on its own (OV_HEAP_* in
 * kv_ov_node.heap) and freed by clear or when replaced. A write used to
 * cost two malloc and two free calls, the frees often on another thread
 * (LevelDB's writer frees a written batch's overlay). A value replaced
 * within a transaction leaves its old room in the block until clear; a
 * value that grows gets at least twice its old room, so a key rewritten n
 * times with growing values wastes at most about as much as it holds. */
#define OV_BLOCK   (64 * 1024)
#define OV_SMALL   (4 * 1024)
#define OV_SPARE   16
#define OV_HEAP_NODE 1
#define OV_HEAP_VAL  2

/* Under AddressSanitizer a block's free room and a released block are
 * poisoned: a node used after clear is still reported. */
#if defined(__SANITIZE_ADDRESS__)
#define OV_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OV_ASAN 1
#endif
#endif
#ifdef OV_ASAN
#include <sanitizer/asan_interface.h>
#define OV_POISON(p, n)   ASAN_POISON_MEMORY_REGION(p, n)
#define OV_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define OV_POISON(p, n)   ((void)(p), (void)(n))
#define OV_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

typedef struct ov_block {
    struct ov_block *next;
    size_t used;
    _Alignas(16) char data[OV_BLOCK];
} ov_block;

struct kv_overlay {
    kv_ov_node *head;        /* sentinel with OV_MAX_LEVEL pointers */
    int         level;       /* levels in use */
    size_t      count;       /* nodes (tombstones included) */
    size_t      bytes;       /* keys + values held */
    uint64_t    gen;         /* bumped by every insert and by clear: cursors re-find */
    uint64_t    rng;
    /* Exact lookups go through a hash index of every node (open addressing,
     * linear probing, at most half full; NULL slots are free: nodes are
     * only ever removed all at once by clear). A get or a put of a key the
     * overlay holds is then one hash and one key compare instead of a walk
     * of the skiplist (~10 key compares at 1000 entries). */
    kv_ov_node **tab;
    size_t      tcap;        /* slots, a power of 2 (0: no table yet) */
    /* The insertion finger: `last`, the node inserted last, and fup[], its
     * predecessors at every level, valid while gen is fgen (no insert or
     * clear since). A new key k right before last (fup[0] < k < last) or
     * right after it (last < k < last's successor) is linked in without a
     * walk: the kv layer inserts runs of neighbouring keys — LPUSH's and
     * RPOP's element keys going down, RPUSH's and LPOP's going up — with
     * lookups of other keys (the list's metadata) in between. */
    kv_ov_node *fup[OV_MAX_LEVEL];
    kv_ov_node *last;
    uint64_t    fgen;        /* gen the finger was taken at; never gen when unset */
    ov_block   *blocks;      /* in use, the newest first */
    ov_block   *spare;       /* given back by clear, at most OV_SPARE */
    int         nspare;
};

/* n bytes (at most OV_SMALL) from the blocks, 16-aligned; NULL when out of
 * memory. */
static void *ov_alloc(kv_overlay *ov, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    ov_block *b = ov->blocks;
    if (!b || OV_BLOCK - b->used < n) {
        if (ov->spare) {
            b = ov->spare;
            ov->spare = b->next;
            ov->nspare--;
        } else if (!(b = malloc(sizeof *b))) {
            return NULL;
        }
        OV_POISON(b->data, OV_BLOCK);
        b->used = 0;
        b->next = ov->blocks;
        ov->blocks = b;
    }
    void *p = b->data + b->used;
    b->used += n;
    OV_UNPOISON(p, n);
    return p;
}

/* Room for a node or a value of n bytes: from the blocks, or malloc'ed
 * (*heap |= bit) when big. */
static void *ov_room(kv_overlay *ov, size_t n, uint8_t *heap, uint8_t bit)
{
    if (n <= OV_SMALL) return ov_alloc(ov, n);
    void *p = malloc(n);
    if (p) *heap |= bit;
    return p;
}

/* The blocks back to the spare list (past OV_SPARE: freed). */
static void ov_blocks_release(kv_overlay *ov, int keep)
{
    while (ov->blocks) {
        ov_block *b = ov->blocks;
        ov->blocks = b->next;
        if (keep && ov->nspare < OV_SPARE) {
            OV_POISON(b->data, OV_BLOCK);
            b->next = ov->spare;
            ov->spare = b;
            ov->nspare++;
        } else {
            OV_UNPOISON(b->data, OV_BLOCK);
            free(b);
        }
    }
    if (!keep) {
        while (ov->spare) {
            ov_block *b = ov->spare;
            ov->spare = b->next;
            OV_UNPOISON(b->data, OV_BLOCK);
            free(b);
        }
        ov->nspare = 0;
    }
}

int kv_overlay_keycmp(const char *a, size_t al, const char *b, size_t bl)
{
    return fd_bytes_cmp(a, al, b, bl);
}

static int ov_cmp(const kv_ov_node *n, const char *k, size_t kl)
{
    return kv_overlay_keycmp(kv_ov_key(n), n->klen, k, kl);
}

/* 64-bit hash of a key: 8 bytes at a time, multiply-xorshift mixing. */
static uint64_t ov_hash(const char *k, size_t kl)
{
    const uint64_t m = 0x9e3779b97f4a7c15ULL;
    uint64_t h = (uint64_t)kl * m;
    for (; kl >= 8; kl -= 8, k += 8) {
        uint64_t w;
        memcpy(&w, k, 8);
        h = (h ^ w) * m;
        h ^= h >> 29;
    }
    if (kl) {
        uint64_t w = 0;
        for (size_t i = 0; i < kl; i++) w = (w << 8) | (unsigned char)k[i];   /* no memcpy call */
        h = (h ^ w) * m;
        h ^= h >> 29;
    }
    h *= 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 32);
}

/* The slot of k in the hash index: its node's, or the free one where it
 * would go. The table must exist. */
static kv_ov_node **ov_slot(const kv_overlay *ov, const char *k, size_t kl)
{
    size_t mask = ov->tcap - 1, i = (size_t)ov_hash(k, kl) & mask;
    for (;;) {
        kv_ov_node *n = ov->tab[i];
        if (!n || (n->klen == kl && ov_cmp(n, k, kl) == 0)) return &ov->tab[i];
        i = (i + 1) & mask;
    }
}

/* Room for one more node in the hash index (grown to keep it at most half
 * full). FD_OK or FD_E_NOMEM. */
static int ov_tab_reserve(kv_overlay *ov)
{
    if ((ov->count + 1) * 2 <= ov->tcap) return FD_OK;
    size_t cap = ov->tcap ? ov->tcap * 2 : 256;
    kv_ov_node **t = calloc(cap, sizeof *t);
    if (!t) return FD_E_NOMEM;
    free(ov->tab);
    ov->tab = t;
    ov->tcap = cap;
    for (kv_ov_node *n = ov->head->next[0]; n; n = n->next[0])
        *ov_slot(ov, kv_ov_key(n), n->klen) = n;
    return FD_OK;
}

kv_overlay *kv_overlay_new(void)
{
    kv_overlay *ov = calloc(1, sizeof *ov);
    if (!ov) return NULL;
    ov->head = calloc(1, sizeof(kv_ov_node) + OV_MAX_LEVEL * sizeof(kv_ov_node *));
    if (!ov->head) { free(ov); return NULL; }
    ov->head->level = OV_MAX_LEVEL;
    ov->level = 1;
    ov->rng = 0x9e3779b97f4a7c15ULL ^ (uint64_t)(uintptr_t)ov->head;
    ov->fgen = UINT64_MAX;
    return ov;
}

void kv_overlay_clear(kv_overlay *ov)
{
    kv_ov_node *n = ov->head->next[0];
    while (n) {
        kv_ov_node *nx = n->next[0];
        if (n->heap & OV_HEAP_VAL) free(n->val);
        if (n->heap & OV_HEAP_NODE) free(n);
        n = nx;
    }
    ov_blocks_release(ov, 1);
    memset(ov->head->next, 0, OV_MAX_LEVEL * sizeof(kv_ov_node *));
    ov->level = 1;
    if (ov->tcap > 4096 && ov->count * 16 < ov->tcap) {
        /* a big transaction grew it: do not clear that much every turn */
        free(ov->tab);
        ov->tab = NULL;
        ov->tcap = 0;
    } else if (ov->count && ov->tab) {
        memset(ov->tab, 0, ov->tcap * sizeof *ov->tab);
    }
    ov->count = 0;
    ov->bytes = 0;
    ov->gen++;
}

void kv_overlay_free(kv_overlay *ov)
{
    if (!ov) return;
    kv_overlay_clear(ov);
    ov_blocks_release(ov, 0);
    free(ov->tab);
    free(ov->head);
    free(ov);
}

/* The last node < k (<= k when or_equal); the head when none.
 * update (optional) gets the predecessor at every level. */
static kv_ov_node *ov_walk(const kv_overlay *ov, const char *k, size_t kl, int or_equal, kv_ov_node **update)
{
    kv_ov_node *x = ov->head;
    for (int i = ov->level - 1; i >= 0; i--) {
        for (;;) {
            kv_ov_node *n = x->next[i];
            if (!n) break;
            int c = ov_cmp(n, k, kl);
            if (c < 0 || (or_equal && c == 0)) x = n;
            else break;
        }
        if (update) update[i] = x;
    }
    return x;
}

kv_ov_node *kv_overlay_get(kv_overlay *ov, const void *k, size_t kl)
{
    return ov->tcap ? *ov_slot(ov, k, kl) : NULL;
}

void kv_overlay_prefetch(const kv_overlay *ov, const void *k, size_t kl)
{
    if (ov->tcap) __builtin_prefetch(&ov->tab[(size_t)ov_hash(k, kl) & (ov->tcap - 1)]);
}

kv_ov_node *kv_overlay_first(const kv_overlay *ov)
{
    return ov->head->next[0];
}

kv_ov_node *kv_overlay_seek(const kv_overlay *ov, const void *k, size_t kl, int strict)
{
    return ov_walk(ov, k, kl, strict, NULL)->next[0];
}

kv_ov_node *kv_overlay_seek_le(const kv_overlay *ov, const void *k, size_t kl, int strict)
{
    kv_ov_node *x = ov_walk(ov, k, kl, !strict, NULL);
    return x == ov->head ? NULL : x;
}

kv_ov_node *kv_overlay_prev(const kv_overlay *ov, const kv_ov_node *n)
{
    return kv_overlay_seek_le(ov, kv_ov_key(n), n->klen, 1);
}

static int ov_random_level(kv_overlay *ov)
{
    /* xorshift64*; a level goes up with probability 1/4 */
    uint64_t x = ov->rng;
    x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
    ov->rng = x;
    uint64_t r = x * 0x2545F4914F6CDD1DULL;
    int lvl = 1;
    while (lvl < OV_MAX_LEVEL && (r & 3) == 0) { lvl++; r >>= 2; }
    return lvl;
}

/* Fill update[] with k's predecessors at every level (k is absent): from
 * the finger when k falls right before or right after the last inserted
 * node, else by a walk. */
static void ov_place(kv_overlay *ov, const char *k, size_t kl, kv_ov_node **update)
{
    if (ov->fgen == ov->gen) {
        kv_ov_node *p = ov->fup[0], *l = ov->last, *x = l->next[0];
        int c = ov_cmp(l, k, kl);
        if (c > 0 && (p == ov->head || ov_cmp(p, k, kl) < 0)) {
            memcpy(update, ov->fup, (size_t)ov->level * sizeof *update);
            return;                                   /* between p and last */
        }
        if (c < 0 && (!x || ov_cmp(x, k, kl) > 0)) {
            /* right after last: last precedes k on its own levels; above
             * them, last's predecessors do (their next is past x) */
            int i = 0;
            for (; i < l->level && i < ov->level; i++) update[i] = l;
            for (; i < ov->level; i++) update[i] = ov->fup[i];
            return;
        }
    }
    ov_walk(ov, k, kl, 0, update);
}

/* The node of k, created (as a tombstone with no value) when absent; NULL
 * when out of memory. */
static kv_ov_node *ov_upsert(kv_overlay *ov, const char *k, size_t kl)
{
    kv_ov_node **slot = NULL;
    if (ov->tcap) {
        slot = ov_slot(ov, k, kl);
        if (*slot) return *slot;
    }
    size_t cap = ov->tcap;
    if (ov_tab_reserve(ov) != FD_OK) return NULL;
    if (!slot || ov->tcap != cap) slot = ov_slot(ov, k, kl);   /* the table moved */
    kv_ov_node *update[OV_MAX_LEVEL];
    ov_place(ov, k, kl, update);
    int lvl = ov_random_level(ov);
    uint8_t heap = 0;
    kv_ov_node *n = ov_room(ov, sizeof(kv_ov_node) + (size_t)lvl * sizeof(kv_ov_node *) + kl, &heap, OV_HEAP_NODE);
    if (!n) return NULL;
    n->heap = heap;
    n->val = NULL;
    n->vlen = n->vcap = 0;
    n->klen = (uint32_t)kl;
    n->dead = 1;
    n->level = (uint8_t)lvl;
    if (kl) memcpy((char *)kv_ov_key(n), k, kl);
    if (lvl > ov->level) {
        for (int i = ov->level; i < lvl; i++) update[i] = ov->head;
        ov->level = lvl;
    }
    for (int i = 0; i < lvl; i++) {
        n->next[i] = update[i]->next[i];
        update[i]->next[i] = n;
    }
    *slot = n;
    ov->count++;
    ov->bytes += kl;
    ov->gen++;
    memcpy(ov->fup, update, (size_t)ov->level * sizeof *update);   /* n's predecessors */
    ov->last = n;
    ov->fgen = ov->gen;
    return n;
}

/* Make n live with the value v (vl bytes), or with vl bytes of undefined
 * contents when v is NULL. v may point into n's own value: copied before
 * the old buffer goes. The buffer is reused when it fits and is not far
 * too big. */
static int ov_assign(kv_overlay *ov, kv_ov_node *n, const void *v, size_t vl)
{
    if (vl > n->vcap || (n->vcap > 4096 && vl < n->vcap / 4)) {
        size_t cap = vl ? vl : 1;
        if (n->vcap && vl > n->vcap && cap < 2 * n->vcap && 2 * n->vcap <= OV_SMALL) cap = 2 * n->vcap;
        uint8_t heap = n->heap & ~OV_HEAP_VAL;
        char *nv = ov_room(ov, cap, &heap, OV_HEAP_VAL);
        if (!nv) return FD_E_NOMEM;
        if (v && vl) memcpy(nv, v, vl);
        if (n->heap & OV_HEAP_VAL) free(n->val);
        n->heap = heap;
        ov->bytes -= n->vcap;
        n->val = nv;
        n->vcap = cap;
        ov->bytes += cap;
    } else if (v && vl) {
        memmove(n->val, v, vl);
    }
    n->vlen = vl;
    n->dead = 0;
    return FD_OK;
}

int kv_overlay_put(kv_overlay *ov, const void *k, size_t kl, const void *v, size_t vl, kv_ov_node **node)
{
    if (kl > UINT32_MAX) return FD_E_INTERNAL;
    kv_ov_node *n = ov_upsert(ov, k, kl);
    if (!n) return FD_E_NOMEM;
    if (node) *node = n;
    return ov_assign(ov, n, v, vl);
}

void kv_overlay_kill(kv_overlay *ov, kv_ov_node *n)
{
    n->dead = 1;
    ov->bytes -= n->vcap;
    if (n->heap & OV_HEAP_VAL) free(n->val);
    n->heap &= ~OV_HEAP_VAL;
    n->val = NULL;
    n->vlen = n->vcap = 0;
}

int kv_overlay_del(kv_overlay *ov, const void *k, size_t kl)
{
    if (kl > UINT32_MAX) return FD_E_INTERNAL;
    kv_ov_node *n = ov_upsert(ov, k, kl);
    if (!n) return FD_E_NOMEM;
    kv_overlay_kill(ov, n);
    return FD_OK;
}

size_t   kv_overlay_count(const kv_overlay *ov) { return ov->count; }
size_t   kv_overlay_bytes(const kv_overlay *ov) { return ov->bytes; }
uint64_t kv_overlay_gen(const kv_overlay *ov)   { return ov->gen; }
