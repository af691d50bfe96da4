/* test_kv_overlay_runs.c — the overlay (storage/kv/kv_overlay.c) under the
 * access pattern of the list commands: runs of neighbouring keys inserted
 * going up or down (LPUSH/RPOP: down, RPUSH/LPOP: up), each insert between
 * a get and a put of another key (the list's metadata), sometimes a new
 * key elsewhere in between (which moves the insertion finger), values and
 * tombstones, clears. Checked against a model (a sorted array): after every
 * run the overlay holds exactly the model in order, forwards and backwards,
 * and every key's exact lookup (the hash index) answers what the model
 * says, absent keys included.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "test.h"
#include "storage/status.h"
#include "storage/kv/kv_overlay.h"

static uint64_t rng_state = 0x2545F4914F6CDD1DULL;
static uint32_t rnd(uint32_t n) { return t_rnd(&rng_state, n); }

#define MAXK 12
#define MAXN 6000
typedef struct { char k[MAXK]; size_t kl; int dead; uint32_t v; } ment;
static ment model[MAXN];
static size_t mn;

static int mcmp(const char *a, size_t al, const char *b, size_t bl)
{
    return kv_overlay_keycmp(a, al, b, bl);
}

static size_t mlower(const char *k, size_t kl)
{
    size_t lo = 0, hi = mn;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (mcmp(model[mid].k, model[mid].kl, k, kl) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static ment *mset(const char *k, size_t kl)
{
    size_t i = mlower(k, kl);
    if (i < mn && mcmp(model[i].k, model[i].kl, k, kl) == 0) return &model[i];
    memmove(&model[i + 1], &model[i], (mn - i) * sizeof model[0]);
    mn++;
    memset(&model[i], 0, sizeof model[i]);
    memcpy(model[i].k, k, kl);
    model[i].kl = kl;
    return &model[i];
}

static int same(const kv_ov_node *n, const ment *e)
{
    if (!n || !e) return n == NULL && e == NULL;
    if (n->klen != e->kl || memcmp(kv_ov_key(n), e->k, e->kl) != 0 || n->dead != e->dead) return 0;
    return e->dead || (n->vlen == 4 && memcmp(n->val, &e->v, 4) == 0);
}

/* prefix (1-3 letters of "ab") + 8-byte big-endian sequence number */
static size_t seq_key(char *k, const char *pfx, size_t pl, uint64_t seq)
{
    memcpy(k, pfx, pl);
    for (int i = 7; i >= 0; i--) { k[pl + (size_t)i] = (char)(seq & 0xff); seq >>= 8; }
    return pl + 8;
}

static int put(kv_overlay *ov, const char *k, size_t kl)
{
    uint32_t v = rnd(1u << 30);
    ment *e = mset(k, kl);
    e->dead = 0;
    e->v = v;
    return kv_overlay_put(ov, k, kl, &v, 4, NULL) == FD_OK;
}

static int del(kv_overlay *ov, const char *k, size_t kl)
{
    ment *e = mset(k, kl);
    e->dead = 1;
    return kv_overlay_del(ov, k, kl) == FD_OK;
}

static int matches(kv_overlay *ov)
{
    size_t i = 0;
    const kv_ov_node *n;
    for (n = kv_overlay_first(ov); n; n = kv_ov_next(n), i++)
        if (i >= mn || !same(n, &model[i])) return 0;
    if (i != mn || kv_overlay_count(ov) != mn) return 0;
    for (size_t j = 0; j < mn; j++)
        if (!same(kv_overlay_get(ov, model[j].k, model[j].kl), &model[j])) return 0;
    n = mn ? kv_overlay_seek_le(ov, model[mn - 1].k, model[mn - 1].kl, 0) : NULL;
    for (size_t j = mn; j > 0; j--) {
        if (!same(n, &model[j - 1])) return 0;
        n = kv_overlay_prev(ov, n);
    }
    return n == NULL;
}

int main(void)
{
    kv_overlay *ov = kv_overlay_new();
    CHECK(ov != NULL);
    int bad_op = 0, bad_match = 0, bad_absent = 0, clears = 0;
    size_t most = 0;
    for (int run = 0; run < 3000; run++) {
        char pfx[3], meta[4], k[MAXK];
        size_t pl = 1 + rnd(3), ml = 1 + rnd(4);
        for (size_t i = 0; i < pl; i++) pfx[i] = "ab"[rnd(2)];
        for (size_t i = 0; i < ml; i++) meta[i] = "abz"[rnd(3)];
        uint64_t seq = (uint64_t)1 << 63;
        seq += (uint64_t)rnd(64) - 32;
        int down = rnd(2), len = 1 + (int)rnd(60), tomb = rnd(3) == 0;
        for (int i = 0; i < len && mn + 4 < MAXN; i++) {
            /* the command's read and write of the metadata */
            kv_ov_node *m = kv_overlay_get(ov, meta, ml);
            size_t j = mlower(meta, ml);
            int in_model = j < mn && mcmp(model[j].k, model[j].kl, meta, ml) == 0;
            if ((m != NULL) != in_model) bad_absent++;
            size_t el = seq_key(k, pfx, pl, seq);
            if (!kv_overlay_get(ov, k, el) && mlower(k, el) < mn &&
                mcmp(model[mlower(k, el)].k, model[mlower(k, el)].kl, k, el) == 0) bad_absent++;
            if (!(tomb || rnd(8) == 0 ? del(ov, k, el) : put(ov, k, el))) bad_op++;
            if (!put(ov, meta, ml)) bad_op++;
            if (rnd(10) == 0) {                       /* another key in between */
                char o[MAXK];
                size_t ol = seq_key(o, "ab" + rnd(2), 1, (uint64_t)rnd(1u << 20) << 40);
                if (!put(ov, o, ol)) bad_op++;
            }
            seq = down ? seq - 1 - (rnd(6) == 0) : seq + 1 + (rnd(6) == 0);
        }
        if (mn > most) most = mn;
        if (run % 7 == 0) bad_match += !matches(ov);
        if (mn + 100 >= MAXN || rnd(60) == 0) {
            bad_match += !matches(ov);
            kv_overlay_clear(ov);
            mn = 0;
            clears++;
            if (kv_overlay_get(ov, meta, ml) != NULL || kv_overlay_count(ov) != 0) bad_match++;
        }
    }
    bad_match += !matches(ov);
    CHECK(bad_op == 0);
    CHECK(bad_absent == 0);
    CHECK(bad_match == 0);
    CHECK(most > 1000 && clears > 5);
    kv_overlay_free(ov);
    return TEST_DONE();
}
