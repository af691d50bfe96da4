/* kv_overlay.c — the write-set skiplist (contract in kv_overlay.h). */
#include <stdlib.h>
#include <string.h>

#include "../status.h"
#include "kv_overlay.h"

#define OV_MAX_LEVEL 20

struct kv_overlay {
    kv_ov_node *head;        /* sentinel with OV_MAX_LEVEL pointers */
    int         level;       /* levels in use */
    size_t      count;       /* nodes (tombstones included) */
    size_t      bytes;       /* keys + values held */
    uint64_t    gen;         /* bumped by every insert and by clear: cursors re-find */
    uint64_t    rng;
    /* The finger: the predecessors at every level from the last point
     * lookup, valid while gen is fgen (no insert, no clear since). A later
     * lookup of any key k with fup[0] < k <= fup[0]->next[0] reuses them
     * (two compares instead of a walk): the kv layer reads a key and then
     * writes it (get then put, get then del) and each needs its place. */
    kv_ov_node *fup[OV_MAX_LEVEL];
    uint64_t    fgen;        /* gen the finger was taken at; never gen when unset */
};

int kv_overlay_keycmp(const char *a, size_t al, const char *b, size_t bl)
{
    size_t n = al < bl ? al : bl;
    int c = n ? memcmp(a, b, n) : 0;
    if (c) return c;
    return al < bl ? -1 : al > bl;
}

static int ov_cmp(const kv_ov_node *n, const char *k, size_t kl)
{
    return kv_overlay_keycmp(kv_ov_key(n), n->klen, k, kl);
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
        free(n->val);
        free(n);
        n = nx;
    }
    memset(ov->head->next, 0, OV_MAX_LEVEL * sizeof(kv_ov_node *));
    ov->level = 1;
    ov->count = 0;
    ov->bytes = 0;
    ov->gen++;
}

void kv_overlay_free(kv_overlay *ov)
{
    if (!ov) return;
    kv_overlay_clear(ov);
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

/* The first node >= k (NULL: none), with *eq set when it is k's; the
 * finger holds k's predecessors afterwards. */
static kv_ov_node *ov_find(kv_overlay *ov, const char *k, size_t kl, int *eq)
{
    if (ov->fgen == ov->gen) {
        kv_ov_node *p = ov->fup[0], *x = p->next[0];
        if (p == ov->head || ov_cmp(p, k, kl) < 0) {
            int c = x ? ov_cmp(x, k, kl) : 1;
            if (c >= 0) { *eq = c == 0; return x; }
        }
    }
    kv_ov_node *x = ov_walk(ov, k, kl, 0, ov->fup)->next[0];
    ov->fgen = ov->gen;
    *eq = x && ov_cmp(x, k, kl) == 0;
    return x;
}

kv_ov_node *kv_overlay_get(kv_overlay *ov, const void *k, size_t kl)
{
    int eq;
    kv_ov_node *n = ov_find(ov, k, kl, &eq);
    return eq ? n : NULL;
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

/* The node of k, created (as a tombstone with no value) when absent; NULL
 * when out of memory. */
static kv_ov_node *ov_upsert(kv_overlay *ov, const char *k, size_t kl)
{
    int eq;
    kv_ov_node *x = ov_find(ov, k, kl, &eq);
    if (eq) return x;
    kv_ov_node **update = ov->fup;
    int lvl = ov_random_level(ov);
    kv_ov_node *n = malloc(sizeof(kv_ov_node) + (size_t)lvl * sizeof(kv_ov_node *) + kl);
    if (!n) return NULL;
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
    ov->count++;
    ov->bytes += kl;
    ov->gen++;
    ov->fgen = ov->gen;      /* update[] still precedes n at every level */
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
        char *nv = malloc(cap);
        if (!nv) return FD_E_NOMEM;
        if (v && vl) memcpy(nv, v, vl);
        free(n->val);
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
    free(n->val);
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
