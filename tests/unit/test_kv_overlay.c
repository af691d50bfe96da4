/* test_kv_overlay.c — the write-set skiplist (storage/kv/kv_overlay.c).
 *
 *   1. the contract on fixed cases: put/get/overwrite, an empty key and an
 *      empty value, put of a value that points into the entry's own value,
 *      reserve (v NULL), tombstones (del of an absent key, kill), seek /
 *      seek_le (strict or not) / prev / next, clear, count, bytes, gen;
 *   2. random operations against a model (a sorted array of key -> value |
 *      tombstone): after every step the overlay must hold exactly the model,
 *      and random seeks in both directions must land where the model says;
 *   3. the access pattern of the list commands, against the same model:
 *      runs of neighbouring keys inserted going up or down (LPUSH/RPOP: down,
 *      RPUSH/LPOP: up), each insert between a get and a put of another key
 *      (the list's metadata), sometimes a new key elsewhere in between (which
 *      moves the insertion finger), values and tombstones, clears; after
 *      every run the overlay holds exactly the model in order, forwards and
 *      backwards, and every key's exact lookup (the hash index) answers what
 *      the model says, absent keys included.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "test.h"
#include "storage/status.h"
#include "storage/kv/kv_overlay.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static uint32_t rnd(uint32_t n) { return t_rnd(&rng_state, n); }

#define KEYEQ(n, lit) ((n) && (n)->klen == sizeof(lit) - 1 && memcmp(kv_ov_key(n), (lit), (n)->klen) == 0)

static void fixed_cases(void)
{
    kv_overlay *ov = kv_overlay_new();
    CHECK(ov != NULL);
    CHECK(kv_overlay_count(ov) == 0 && kv_overlay_bytes(ov) == 0);
    CHECK(kv_overlay_first(ov) == NULL);
    CHECK(kv_overlay_get(ov, "a", 1) == NULL);
    CHECK(kv_overlay_seek(ov, "", 0, 0) == NULL);
    CHECK(kv_overlay_seek_le(ov, "zzz", 3, 0) == NULL);

    uint64_t g0 = kv_overlay_gen(ov);
    kv_ov_node *n = NULL;
    CHECK(kv_overlay_put(ov, "b", 1, "1", 1, &n) == FD_OK);
    CHECK(n && !n->dead && n->vlen == 1 && n->val[0] == '1');
    CHECK(kv_overlay_gen(ov) != g0);                      /* a new key */
    uint64_t g1 = kv_overlay_gen(ov);
    CHECK(kv_overlay_put(ov, "b", 1, "22", 2, NULL) == FD_OK);
    CHECK(kv_overlay_gen(ov) == g1);                      /* an overwrite: same structure */
    n = kv_overlay_get(ov, "b", 1);
    CHECK(n && n->vlen == 2 && memcmp(n->val, "22", 2) == 0);
    CHECK(kv_overlay_count(ov) == 1);
    CHECK(kv_overlay_bytes(ov) >= 1 + 2);

    /* the value given back from the entry itself (a get() result) */
    CHECK(kv_overlay_put(ov, "b", 1, n->val + 1, 1, NULL) == FD_OK);
    n = kv_overlay_get(ov, "b", 1);
    CHECK(n && n->vlen == 1 && n->val[0] == '2');
    char big[10000];
    memset(big, 'x', sizeof big);
    CHECK(kv_overlay_put(ov, "b", 1, big, sizeof big, NULL) == FD_OK);
    n = kv_overlay_get(ov, "b", 1);
    CHECK(kv_overlay_put(ov, "b", 1, n->val + 5, 10, NULL) == FD_OK);   /* shrinks: a new buffer */
    n = kv_overlay_get(ov, "b", 1);
    CHECK(n && n->vlen == 10 && memcmp(n->val, big, 10) == 0);

    /* an empty key, an empty value, reserve */
    CHECK(kv_overlay_put(ov, "", 0, "", 0, NULL) == FD_OK);
    n = kv_overlay_get(ov, "", 0);
    CHECK(n && !n->dead && n->vlen == 0 && n->klen == 0);
    CHECK(kv_overlay_first(ov) == n);                     /* "" sorts first */
    CHECK(kv_overlay_put(ov, "d", 1, NULL, 3, &n) == FD_OK);
    CHECK(n && n->val && n->vlen == 3);
    memcpy(n->val, "abc", 3);
    n = kv_overlay_get(ov, "d", 1);
    CHECK(n && memcmp(n->val, "abc", 3) == 0);

    /* tombstones */
    CHECK(kv_overlay_del(ov, "c", 1) == FD_OK);           /* absent: a new tombstone */
    n = kv_overlay_get(ov, "c", 1);
    CHECK(n && n->dead && n->vlen == 0);
    CHECK(kv_overlay_count(ov) == 4);                     /* "", b, c, d */
    n = kv_overlay_get(ov, "d", 1);
    kv_overlay_kill(ov, n);
    CHECK(n->dead && n->val == NULL && n->vlen == 0);
    CHECK(kv_overlay_put(ov, "d", 1, "e", 1, NULL) == FD_OK);   /* alive again */
    n = kv_overlay_get(ov, "d", 1);
    CHECK(n && !n->dead && n->val[0] == 'e');

    /* positioning over "", b, c(dead), d; "ba" sorts between b and c */
    CHECK(KEYEQ(kv_overlay_seek(ov, "b", 1, 0), "b"));
    CHECK(KEYEQ(kv_overlay_seek(ov, "b", 1, 1), "c"));
    CHECK(KEYEQ(kv_overlay_seek(ov, "ba", 2, 0), "c"));
    CHECK(kv_overlay_seek(ov, "d", 1, 1) == NULL);
    CHECK(KEYEQ(kv_overlay_seek_le(ov, "c", 1, 0), "c"));
    CHECK(KEYEQ(kv_overlay_seek_le(ov, "c", 1, 1), "b"));
    CHECK(KEYEQ(kv_overlay_seek_le(ov, "ba", 2, 0), "b"));
    CHECK(KEYEQ(kv_overlay_seek_le(ov, "zz", 2, 1), "d"));
    n = kv_overlay_seek_le(ov, "b", 1, 1);
    CHECK(n && n->klen == 0);                             /* the empty key */
    CHECK(kv_overlay_seek_le(ov, "", 0, 1) == NULL);
    CHECK(KEYEQ(kv_overlay_prev(ov, kv_overlay_get(ov, "d", 1)), "c"));
    CHECK(kv_overlay_prev(ov, kv_overlay_first(ov)) == NULL);
    CHECK(KEYEQ(kv_ov_next(kv_overlay_get(ov, "b", 1)), "c"));

    uint64_t g2 = kv_overlay_gen(ov);
    kv_overlay_clear(ov);
    CHECK(kv_overlay_gen(ov) != g2);
    CHECK(kv_overlay_count(ov) == 0 && kv_overlay_bytes(ov) == 0);
    CHECK(kv_overlay_first(ov) == NULL && kv_overlay_get(ov, "b", 1) == NULL);
    CHECK(kv_overlay_put(ov, "b", 1, "1", 1, NULL) == FD_OK);   /* usable after a clear */
    CHECK(kv_overlay_count(ov) == 1);
    kv_overlay_free(ov);
    kv_overlay_free(NULL);
}

/* ---------------------------------------------------------------- model */

#define RKEY 4              /* random keys: up to 4 letters, at most 1365 of them */
#define MAXK 12             /* the runs' keys: a prefix and 8 bytes */
#define MAXN 6000
typedef struct { char k[MAXK]; size_t kl; int dead; char v[64]; size_t vl; } ment;
static ment model[MAXN];
static size_t mn;

static int mcmp(const char *a, size_t al, const char *b, size_t bl)
{
    return kv_overlay_keycmp(a, al, b, bl);
}

/* index of the first model entry >= k */
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
    model[i].dead = 1;
    return &model[i];
}

static int same(const kv_ov_node *n, const ment *e)
{
    if (!n || !e) return n == NULL && e == NULL;
    if (n->klen != e->kl || memcmp(kv_ov_key(n), e->k, e->kl) != 0 || n->dead != e->dead) return 0;
    return e->dead || (n->vlen == e->vl && (!e->vl || memcmp(n->val, e->v, e->vl) == 0));
}

static void random_key(char *k, size_t *kl)
{
    /* few letters, short keys: collisions, prefixes, the empty key */
    *kl = rnd(RKEY + 1);
    for (size_t i = 0; i < *kl; i++) k[i] = (char)("ab\0\xff"[rnd(4)]);
}

static int whole_matches(kv_overlay *ov)
{
    size_t i = 0, live_bytes = 0;
    for (const kv_ov_node *n = kv_overlay_first(ov); n; n = kv_ov_next(n), i++) {
        if (i >= mn || !same(n, &model[i])) return 0;
        live_bytes += n->klen + n->vlen;
    }
    if (i != mn || kv_overlay_count(ov) != mn || kv_overlay_bytes(ov) < live_bytes) return 0;
    /* backwards from the last entry */
    const kv_ov_node *n = mn ? kv_overlay_get(ov, model[mn - 1].k, model[mn - 1].kl) : NULL;
    for (size_t j = mn; j > 0; j--) {
        if (!same(n, &model[j - 1])) return 0;
        n = kv_overlay_prev(ov, n);
    }
    return n == NULL;
}

static void random_ops(void)
{
    kv_overlay *ov = kv_overlay_new();
    CHECK(ov != NULL);
    mn = 0;
    int bad_whole = 0, bad_get = 0, bad_seek = 0, bad_gen = 0, bad_put = 0, clears = 0;
    size_t most = 0;
    for (int step = 0; step < 20000; step++) {
        char k[MAXK], v[64];
        size_t kl, vl;
        random_key(k, &kl);
        uint32_t op = rnd(100);
        if (op < 45) {                                  /* put (or reserve) */
            vl = rnd(sizeof v);
            for (size_t i = 0; i < vl; i++) v[i] = (char)rnd(256);
            int existed = kv_overlay_get(ov, k, kl) != NULL;
            uint64_t g = kv_overlay_gen(ov);
            kv_ov_node *n = NULL;
            int s;
            if (rnd(4) == 0) {
                s = kv_overlay_put(ov, k, kl, NULL, vl, &n);
                if (s == FD_OK && vl) memcpy(n->val, v, vl);
            } else {
                s = kv_overlay_put(ov, k, kl, v, vl, &n);
            }
            if (s != FD_OK || !n) bad_put++;
            if (existed != (kv_overlay_gen(ov) == g)) bad_gen++;
            ment *e = mset(k, kl);
            e->dead = 0;
            memcpy(e->v, v, vl);
            e->vl = vl;
        } else if (op < 55) {                           /* put part of its own value back */
            kv_ov_node *n = kv_overlay_get(ov, k, kl);
            if (n && !n->dead && n->vlen) {
                size_t off = rnd((uint32_t)n->vlen), len = rnd((uint32_t)(n->vlen - off) + 1);
                ment *e = mset(k, kl);
                memmove(e->v, e->v + off, len);
                e->vl = len;
                if (kv_overlay_put(ov, k, kl, n->val + off, len, NULL) != FD_OK) bad_put++;
            }
        } else if (op < 75) {                           /* delete: a tombstone */
            kv_ov_node *n = kv_overlay_get(ov, k, kl);
            if (n && rnd(2)) kv_overlay_kill(ov, n);
            else if (kv_overlay_del(ov, k, kl) != FD_OK) bad_put++;
            ment *e = mset(k, kl);
            e->dead = 1;
            e->vl = 0;
        } else if (op < 97) {                           /* reads */
            size_t i = mlower(k, kl);
            const ment *eq = i < mn && mcmp(model[i].k, model[i].kl, k, kl) == 0 ? &model[i] : NULL;
            if (!same(kv_overlay_get(ov, k, kl), eq)) bad_get++;
            const ment *ge = i < mn ? &model[i] : NULL;
            const ment *gt = eq ? (i + 1 < mn ? &model[i + 1] : NULL) : ge;
            const ment *lt = i > 0 ? &model[i - 1] : NULL;
            const ment *le = eq ? eq : lt;
            if (!same(kv_overlay_seek(ov, k, kl, 0), ge)) bad_seek++;
            if (!same(kv_overlay_seek(ov, k, kl, 1), gt)) bad_seek++;
            if (!same(kv_overlay_seek_le(ov, k, kl, 0), le)) bad_seek++;
            if (!same(kv_overlay_seek_le(ov, k, kl, 1), lt)) bad_seek++;
            if (eq && !same(kv_overlay_prev(ov, kv_overlay_get(ov, k, kl)), lt)) bad_seek++;
        } else if (rnd(40) == 0) {                      /* clear (rare) */
            clears++;
            uint64_t g = kv_overlay_gen(ov);
            kv_overlay_clear(ov);
            if (kv_overlay_gen(ov) == g || kv_overlay_bytes(ov) != 0) bad_gen++;
            mn = 0;
        }
        if (mn > most) most = mn;
        if (step % 97 == 0 || op >= 97) bad_whole += !whole_matches(ov);
    }
    bad_whole += !whole_matches(ov);
    CHECK(bad_put == 0);
    CHECK(bad_gen == 0);
    CHECK(bad_get == 0);
    CHECK(bad_seek == 0);
    CHECK(bad_whole == 0);
    CHECK(most > 300 && clears > 0);   /* the model was not trivially small; clears happened */
    kv_overlay_free(ov);
}

/* prefix (1-3 letters of "ab") + 8-byte big-endian sequence number */
static size_t seq_key(char *k, const char *pfx, size_t pl, uint64_t seq)
{
    memcpy(k, pfx, pl);
    for (int i = 7; i >= 0; i--) { k[pl + (size_t)i] = (char)(seq & 0xff); seq >>= 8; }
    return pl + 8;
}

static int run_put(kv_overlay *ov, const char *k, size_t kl)
{
    uint32_t v = rnd(1u << 30);
    ment *e = mset(k, kl);
    e->dead = 0;
    memcpy(e->v, &v, 4);
    e->vl = 4;
    return kv_overlay_put(ov, k, kl, &v, 4, NULL) == FD_OK;
}

static int run_del(kv_overlay *ov, const char *k, size_t kl)
{
    ment *e = mset(k, kl);
    e->dead = 1;
    e->vl = 0;
    return kv_overlay_del(ov, k, kl) == FD_OK;
}

static int run_matches(kv_overlay *ov)
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

static void list_runs(void)
{
    rng_state = 0x2545F4914F6CDD1DULL;   /* the sequence this case was written with */
    mn = 0;
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
            if (!(tomb || rnd(8) == 0 ? run_del(ov, k, el) : run_put(ov, k, el))) bad_op++;
            if (!run_put(ov, meta, ml)) bad_op++;
            if (rnd(10) == 0) {                       /* another key in between */
                char o[MAXK];
                size_t ol = seq_key(o, "ab" + rnd(2), 1, (uint64_t)rnd(1u << 20) << 40);
                if (!run_put(ov, o, ol)) bad_op++;
            }
            seq = down ? seq - 1 - (rnd(6) == 0) : seq + 1 + (rnd(6) == 0);
        }
        if (mn > most) most = mn;
        if (run % 7 == 0) bad_match += !run_matches(ov);
        if (mn + 100 >= MAXN || rnd(60) == 0) {
            bad_match += !run_matches(ov);
            kv_overlay_clear(ov);
            mn = 0;
            clears++;
            if (kv_overlay_get(ov, meta, ml) != NULL || kv_overlay_count(ov) != 0) bad_match++;
        }
    }
    bad_match += !run_matches(ov);
    CHECK(bad_op == 0);
    CHECK(bad_absent == 0);
    CHECK(bad_match == 0);
    CHECK(most > 1000 && clears > 5);
    kv_overlay_free(ov);
}

int main(void)
{
    fixed_cases();
    random_ops();
    list_runs();
    return TEST_DONE();
}
