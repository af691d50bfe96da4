/* test_kv_leveldb.c — the LevelDB backend (storage/leveldb.c).
 *
 *   1. the driver contract on its own: the turn overlay (get/put/reserve/del
 *      with read-your-writes and tombstones), commit and abort, durability
 *      across close/open, clear, no nesting;
 *   2. the merged cursor against a model: random LevelDB contents, random
 *      overlay writes on top (overwrites, tombstones, clear), random seek /
 *      seek_le / next / prev, also with writes made while the cursor is open;
 *   3. string and key commands through the backend as the proxy drives them
 *      (submit per command, end_turn per turn, cron), and a random command
 *      mix run on LevelDB and LMDB side by side: every reply must be equal;
 *   4. an independent oracle: a hand-written model of a string keyspace
 *      computes the expected reply bytes of a random mix (no expiry), on
 *      LevelDB and on LMDB.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/stat.h>
#include "kv_harness.h"
#include "../../storage/leveldb_settings.h"

static char root[64];

static uint64_t rng_state = 0x2545F4914F6CDD1DULL;
static uint32_t rnd(uint32_t n) { return t_rnd(&rng_state, n); }

static int open_backend(fd_backend *b, const char *name, const char *dir)
{
    fd_lmdb_settings ls = { .map_size = 256u << 20 };
    fd_leveldb_settings lds = { .write_buffer_size = 1u << 20,   /* small: flushes happen */
                                .block_cache_size = 8u << 20 };
    fd_backend_config cfg = { .dir = dir, .sync = 0, .max_bulk = RESP_DEFAULT_MAX_BULK,
                              .options = !strcmp(name, "lmdb") ? (const void *)&ls : (const void *)&lds };
    char err[256] = "";
    memset(b, 0, sizeof *b);
    b->ops = fd_backend_find(name);
    if (!b->ops) { fprintf(stderr, "backend %s not built\n", name); return -1; }
    int s = b->ops->open(b, &cfg, err, sizeof err);
    if (s) fprintf(stderr, "open %s %s: %s\n", name, dir, err);
    return s;
}

static kv_store *ST(fd_backend *b) { return b->state; }

/* ------------------------------------------------------------ 1. driver */

static int getv(const kv_driver *d, void *txn, const char *k, const char *want)
{
    const void *v; size_t vl;
    int s = d->get(txn, k, strlen(k), &v, &vl);
    if (!want) return s == FD_NOTFOUND;
    return s == FD_OK && vl == strlen(want) && memcmp(v, want, vl) == 0;
}

static void test_driver(void)
{
    char dir[128];
    snprintf(dir, sizeof dir, "%s/driver", root);
    fd_backend B;
    CHECK(open_backend(&B, "leveldb", dir) == FD_OK);
    const kv_driver *d = ST(&B)->drv;
    void *db = ST(&B)->db, *txn, *nested;
    CHECK(strcmp(d->name, "leveldb") == 0);
    CHECK(d->nearly_full == NULL);

    CHECK(d->begin(db, NULL, &txn) == FD_OK);
    CHECK(d->begin(db, txn, &nested) == FD_E_NOTSUPPORTED);     /* no nesting */
    CHECK(d->begin(db, NULL, &nested) != FD_OK);                 /* one at a time */
    CHECK(getv(d, txn, "a", NULL));
    CHECK(d->put(txn, "a", 1, "1", 1) == FD_OK);
    CHECK(getv(d, txn, "a", "1"));                               /* read-your-writes */
    CHECK(d->put(txn, "a", 1, "one", 3) == FD_OK);
    CHECK(getv(d, txn, "a", "one"));
    CHECK(d->put(txn, "b", 1, "", 0) == FD_OK);                  /* empty value */
    CHECK(getv(d, txn, "b", ""));
    CHECK(d->del(txn, "b", 1) == FD_OK);
    CHECK(getv(d, txn, "b", NULL));
    CHECK(d->del(txn, "b", 1) == FD_NOTFOUND);
    CHECK(d->del(txn, "zz", 2) == FD_NOTFOUND);
    void *dst;
    CHECK(d->reserve(txn, "r", 1, 5, &dst) == FD_OK);
    memcpy(dst, "hello", 5);
    CHECK(getv(d, txn, "r", "hello"));
    CHECK(d->commit(txn) == FD_OK);

    /* committed: visible to the next transaction; abort drops a turn */
    CHECK(d->begin(db, NULL, &txn) == FD_OK);
    CHECK(getv(d, txn, "a", "one") && getv(d, txn, "r", "hello") && getv(d, txn, "b", NULL));
    CHECK(d->del(txn, "a", 1) == FD_OK);                          /* a LevelDB record */
    CHECK(getv(d, txn, "a", NULL));
    CHECK(d->del(txn, "a", 1) == FD_NOTFOUND);
    CHECK(d->put(txn, "x", 1, "X", 1) == FD_OK);
    d->abort(txn);
    CHECK(d->begin(db, NULL, &txn) == FD_OK);
    CHECK(getv(d, txn, "a", "one") && getv(d, txn, "x", NULL));

    /* get() results stay valid together until the next write; a put of a
     * value that points into the store's own memory (its get() result, or
     * the same key's overlay value) copies it first */
    const void *v1, *v2; size_t l1, l2;
    CHECK(d->get(txn, "a", 1, &v1, &l1) == FD_OK && d->get(txn, "r", 1, &v2, &l2) == FD_OK);
    CHECK(l1 == 3 && memcmp(v1, "one", 3) == 0 && l2 == 5 && memcmp(v2, "hello", 5) == 0);
    CHECK(d->put(txn, "c", 1, v2, l2) == FD_OK && getv(d, txn, "c", "hello"));
    CHECK(d->get(txn, "c", 1, &v1, &l1) == FD_OK);
    CHECK(d->put(txn, "c", 1, (const char *)v1 + 1, 3) == FD_OK && getv(d, txn, "c", "ell"));
    /* a big value, then a small one in its place (the buffer shrinks) */
    size_t big = 5u << 20;
    char *bv = malloc(big);
    for (size_t i = 0; i < big; i++) bv[i] = (char)('a' + i % 23);
    CHECK(d->put(txn, "big", 3, bv, big) == FD_OK);
    CHECK(d->get(txn, "big", 3, &v1, &l1) == FD_OK && l1 == big && memcmp(v1, bv, big) == 0);
    CHECK(d->put(txn, "big", 3, (const char *)v1 + 10, 7) == FD_OK);
    CHECK(d->get(txn, "big", 3, &v1, &l1) == FD_OK && l1 == 7 && memcmp(v1, bv + 10, 7) == 0);
    CHECK(d->put(txn, "big2", 4, bv, big) == FD_OK);
    /* binary keys with NUL and 0xff; the empty key */
    CHECK(d->put(txn, "k\0\xff", 3, "\0", 1) == FD_OK);
    CHECK(d->get(txn, "k\0\xff", 3, &v1, &l1) == FD_OK && l1 == 1 && ((const char *)v1)[0] == 0);
    CHECK(d->get(txn, "k\0", 2, &v1, &l1) == FD_NOTFOUND);
    CHECK(d->put(txn, "", 0, "empty", 5) == FD_OK);
    CHECK(d->commit(txn) == FD_OK);

    /* durability across close/open */
    B.ops->close(&B);
    CHECK(open_backend(&B, "leveldb", dir) == FD_OK);
    d = ST(&B)->drv;
    db = ST(&B)->db;
    CHECK(d->begin(db, NULL, &txn) == FD_OK);
    CHECK(getv(d, txn, "a", "one") && getv(d, txn, "c", "ell") && getv(d, txn, "x", NULL));
    CHECK(d->get(txn, "big", 3, &v1, &l1) == FD_OK && l1 == 7);
    CHECK(d->get(txn, "big2", 4, &v1, &l1) == FD_OK && l1 == big && memcmp(v1, bv, big) == 0);
    CHECK(d->get(txn, "k\0\xff", 3, &v1, &l1) == FD_OK && l1 == 1);
    CHECK(d->get(txn, "", 0, &v1, &l1) == FD_OK && l1 == 5);
    kv_iter *it;
    const void *k; size_t kl;
    CHECK(d->iter_open(txn, &it) == FD_OK);
    CHECK(d->seek_le(it, "", 0) == FD_OK && d->cur(it, &k, &kl, &v1, &l1) == FD_OK && kl == 0);
    CHECK(d->prev(it) == FD_NOTFOUND);
    d->iter_close(it);

    /* clear: everything hidden at once, new writes on top, then committed */
    CHECK(d->clear(txn) == FD_OK);
    CHECK(getv(d, txn, "a", NULL) && d->del(txn, "c", 1) == FD_NOTFOUND);
    CHECK(d->put(txn, "after", 5, "1", 1) == FD_OK);
    CHECK(d->iter_open(txn, &it) == FD_OK);
    CHECK(d->seek(it, "", 0) == FD_OK && d->cur(it, &k, &kl, &v1, &l1) == FD_OK &&
          kl == 5 && memcmp(k, "after", 5) == 0);
    CHECK(d->next(it) == FD_NOTFOUND);
    CHECK(d->seek_le(it, "\xff", 1) == FD_OK && d->cur(it, &k, &kl, &v1, &l1) == FD_OK && kl == 5);
    d->iter_close(it);
    CHECK(d->commit(txn) == FD_OK);
    B.ops->close(&B);
    CHECK(open_backend(&B, "leveldb", dir) == FD_OK);
    d = ST(&B)->drv;
    db = ST(&B)->db;
    CHECK(d->begin(db, NULL, &txn) == FD_OK);
    CHECK(getv(d, txn, "after", "1") && getv(d, txn, "a", NULL) && getv(d, txn, "big2", NULL));
    int n = 0;
    CHECK(d->iter_open(txn, &it) == FD_OK);
    for (int s = d->seek(it, "", 0); s == FD_OK; s = d->next(it)) n++;
    d->iter_close(it);
    CHECK(n == 2);                                  /* "after" and the format stamp */
    d->abort(txn);

    /* a second open of the folder is refused, naming it */
    fd_backend B2 = { .ops = B.ops };
    fd_backend_config cfg = { .dir = dir };
    char err[512] = "";
    CHECK(B2.ops->open(&B2, &cfg, err, sizeof err) != FD_OK && strstr(err, "in use") && strstr(err, dir));
    B.ops->close(&B);
    /* a folder holding an LMDB store is refused, not silently shadowed */
    char ldir[160];
    snprintf(ldir, sizeof ldir, "%s/lmdbdir", root);
    fd_backend L;
    if (fd_backend_find("lmdb") && open_backend(&L, "lmdb", ldir) == FD_OK) {
        L.ops->close(&L);
        fd_backend_config c2 = { .dir = ldir };
        err[0] = 0;
        CHECK(B2.ops->open(&B2, &c2, err, sizeof err) != FD_OK && strstr(err, "LMDB") && strstr(err, ldir));
    }
    /* an uncreatable folder is named */
    fd_backend_config c3 = { .dir = "/proc/frontdoor-no/x" };
    err[0] = 0;
    CHECK(B2.ops->open(&B2, &c3, err, sizeof err) != FD_OK && strstr(err, "/proc/frontdoor-no/x"));
    free(bv);
}

/* ------------------------------------------------------------ 2. cursor model
 * Keys: every string of 1..3 letters over "abcd" (84), sorted bytewise. */

#define NK 84
static char mkeys[NK][4];
static size_t mklen[NK];
static int base_has[NK], cur_has[NK];
static unsigned base_val[NK], cur_val[NK];
static unsigned stamp;

static int bcmp_(const char *a, size_t al, const char *b, size_t bl)
{
    size_t n = al < bl ? al : bl;
    int c = n ? memcmp(a, b, n) : 0;
    return c ? c : (al < bl ? -1 : al > bl);
}

static int key_order(const void *a, const void *b)
{
    return bcmp_(a, strlen(a), b, strlen(b));
}

static void model_keys(void)
{
    int n = 0;
    for (int len = 1; len <= 3; len++) {
        int total = 1;
        for (int i = 0; i < len; i++) total *= 4;
        for (int x = 0; x < total; x++) {
            int y = x;
            for (int i = len - 1; i >= 0; i--) { mkeys[n][i] = (char)('a' + y % 4); y /= 4; }
            mkeys[n][len] = 0;
            n++;
        }
    }
    qsort(mkeys, NK, sizeof mkeys[0], key_order);
    for (int i = 0; i < NK; i++) mklen[i] = strlen(mkeys[i]);
}

/* A model position: index of the expected key, -1 = none. */
static int m_ge(const char *p, size_t pl, int strict)
{
    for (int i = 0; i < NK; i++) {
        int c = bcmp_(mkeys[i], mklen[i], p, pl);
        if (cur_has[i] && (strict ? c > 0 : c >= 0)) return i;
    }
    return -1;
}

static int m_le(const char *p, size_t pl, int strict)
{
    for (int i = NK - 1; i >= 0; i--) {
        int c = bcmp_(mkeys[i], mklen[i], p, pl);
        if (cur_has[i] && (strict ? c < 0 : c <= 0)) return i;
    }
    return -1;
}

static int model_fail;

/* Compare the cursor's answer (status s) with the model's index. Records of
 * the kv layer ('C...') sort before the model's keys: seen backwards, they
 * count as "no record". Returns 1 when the cursor is on a model key. */
static int same(const kv_driver *d, kv_iter *it, int s, int want, const char *what)
{
    const void *k, *v; size_t kl, vl;
    int got = -1;
    if (s == FD_OK) {
        if (d->cur(it, &k, &kl, &v, &vl) != FD_OK) got = -2;
        else if (kl && ((const char *)k)[0] == KV_PFX_COUNTER) got = -1;
        else {
            got = -3;
            for (int i = 0; i < NK; i++)
                if (kl == mklen[i] && memcmp(k, mkeys[i], kl) == 0) { got = i; break; }
            if (got >= 0) {
                char want_v[16];
                snprintf(want_v, sizeof want_v, "%u", cur_val[got]);
                if (vl != strlen(want_v) || memcmp(v, want_v, vl) != 0) {
                    if (model_fail++ < 5) fprintf(stderr, "  model %s: key %s value %.*s, want %s\n",
                                                  what, mkeys[got], (int)vl, (const char *)v, want_v);
                    CHECK(0);
                }
            }
        }
    } else if (s != FD_NOTFOUND) got = -4;
    if (got != want) {
        if (model_fail++ < 5) fprintf(stderr, "  model %s: got %s (%d), want %s\n", what,
                                      got >= 0 ? mkeys[got] : "-", got, want >= 0 ? mkeys[want] : "-");
        CHECK(got == want);
        return 0;
    }
    return got >= 0;
}

static void m_write(const kv_driver *d, void *txn)
{
    int i = (int)rnd(NK);
    if (rnd(3) == 0) {
        int s = d->del(txn, mkeys[i], mklen[i]);
        CHECK(s == (cur_has[i] ? FD_OK : FD_NOTFOUND));
        cur_has[i] = 0;
    } else {
        char v[16];
        cur_val[i] = ++stamp;
        snprintf(v, sizeof v, "%u", cur_val[i]);
        CHECK(d->put(txn, mkeys[i], mklen[i], v, strlen(v)) == FD_OK);
        cur_has[i] = 1;
    }
}

static void random_probe(char *p, size_t *pl)
{
    *pl = 1 + rnd(4);
    for (size_t i = 0; i < *pl; i++) p[i] = (char)('a' + rnd(5));   /* 'e' is never a key */
}

/* Full scans both ways equal the model. */
static void m_scan(const kv_driver *d, void *txn, const char *what)
{
    kv_iter *it;
    CHECK(d->iter_open(txn, &it) == FD_OK);
    int want = m_ge("a", 1, 0);
    int s = d->seek(it, "a", 1);
    while (same(d, it, s, want, what)) {
        want = m_ge(mkeys[want], mklen[want], 1);
        s = d->next(it);
    }
    want = m_le("\xff", 1, 0);
    s = d->seek_le(it, "\xff", 1);
    while (same(d, it, s, want, what)) {
        want = m_le(mkeys[want], mklen[want], 1);
        s = d->prev(it);
    }
    d->iter_close(it);
}

static void test_cursor_model(void)
{
    char dir[128];
    snprintf(dir, sizeof dir, "%s/model", root);
    fd_backend B;
    CHECK(open_backend(&B, "leveldb", dir) == FD_OK);
    model_keys();
    const kv_driver *d = ST(&B)->drv;
    void *db = ST(&B)->db, *txn;
    int rounds = 400, steps_total = 0;
    for (int r = 0; r < rounds; r++) {
        CHECK(d->begin(db, NULL, &txn) == FD_OK);
        /* overlay writes on top of what LevelDB holds */
        int nw = (int)rnd(r % 7 == 0 ? 80 : 20);
        if (rnd(12) == 0) {
            CHECK(d->clear(txn) == FD_OK);
            memset(cur_has, 0, sizeof cur_has);
        }
        for (int i = 0; i < nw; i++) m_write(d, txn);
        m_scan(d, txn, "scan in txn");
        /* random moves, with writes while the cursor is open */
        kv_iter *it;
        CHECK(d->iter_open(txn, &it) == FD_OK);
        int on = 0, pos = -1;
        for (int step = 0; step < 150; step++, steps_total++) {
            char p[8]; size_t pl;
            int op = on ? (int)rnd(6) : (int)rnd(2);
            if (op == 0) {
                random_probe(p, &pl);
                pos = m_ge(p, pl, 0);
                on = same(d, it, d->seek(it, p, pl), pos, "seek");
            } else if (op == 1) {
                random_probe(p, &pl);
                pos = m_le(p, pl, 0);
                on = same(d, it, d->seek_le(it, p, pl), pos, "seek_le");
            } else if (op == 2 || op == 3) {
                pos = m_ge(mkeys[pos], mklen[pos], 1);
                on = same(d, it, d->next(it), pos, "next");
            } else if (op == 4) {
                pos = m_le(mkeys[pos], mklen[pos], 1);
                on = same(d, it, d->prev(it), pos, "prev");
            } else {
                /* a write while positioned: the cursor's key itself or another */
                int i = rnd(2) ? pos : (int)rnd(NK);
                char v[16];
                cur_val[i] = ++stamp;
                snprintf(v, sizeof v, "%u", cur_val[i]);
                if (rnd(3) == 0 && i != pos) {
                    int s = d->del(txn, mkeys[i], mklen[i]);
                    CHECK(s == (cur_has[i] ? FD_OK : FD_NOTFOUND));
                    cur_has[i] = 0;
                } else {
                    CHECK(d->put(txn, mkeys[i], mklen[i], v, strlen(v)) == FD_OK);
                    cur_has[i] = 1;
                }
                if (i == pos) on = same(d, it, FD_OK, pos, "cur after write");
            }
        }
        d->iter_close(it);
        if (rnd(3) == 0) {
            d->abort(txn);
            memcpy(cur_has, base_has, sizeof cur_has);
            memcpy(cur_val, base_val, sizeof cur_val);
        } else {
            CHECK(d->commit(txn) == FD_OK);
            memcpy(base_has, cur_has, sizeof cur_has);
            memcpy(base_val, cur_val, sizeof cur_val);
        }
        if (r % 50 == 49) {                          /* committed state survives reopen */
            B.ops->close(&B);
            CHECK(open_backend(&B, "leveldb", dir) == FD_OK);
            d = ST(&B)->drv;
            db = ST(&B)->db;
        }
        CHECK(d->begin(db, NULL, &txn) == FD_OK);
        m_scan(d, txn, "scan after end");
        d->abort(txn);
    }
    B.ops->close(&B);
    if (model_fail) fprintf(stderr, "  cursor model: %d mismatches\n", model_fail);
    CHECK(steps_total == rounds * 150);
}

/* ------------------------------------------------------------ 3. commands */

/* 1 when b's INFO shows `line` within 5 s (the helper thread's work), the
 * last INFO left in *info. */
static int info_within(fd_backend *b, resp_out *info, const char *line)
{
    for (int i = 0; i < 500; i++) {
        info->len = 0;
        b->ops->info(b, info);
        if (memmem(info->data, info->len, line, strlen(line))) return 1;
        usleep(10000);
    }
    return 0;
}

static void test_commands(void)
{
    char dir[128];
    snprintf(dir, sizeof dir, "%s/cmds", root);
    fd_backend B;
    CHECK(open_backend(&B, "leveldb", dir) == FD_OK);
    cur_b = &B;
    EXPECT("$-1\r\n", get, RD, "k");
    EXPECT("+OK\r\n", set, W, "k", "v1");
    EXPECT("$2\r\nv1\r\n", get, RD, "k");
    EXPECT("$-1\r\n", set, W, "k", "v2", "NX");
    EXPECT("$2\r\nv1\r\n", set, W, "k", "v3", "GET");
    EXPECT(":1\r\n", incr, W, "n");
    EXPECT(":11\r\n", incrby, W, "n", "10");
    EXPECT(":5\r\n", append, W, "s", "Hello");
    EXPECT(":11\r\n", append, W, "s", " World");
    EXPECT("$5\r\nWorld\r\n", getrange, RD, "s", "-5", "-1");
    EXPECT("+OK\r\n", mset, W, "a", "1", "b", "2", "c", "3");
    EXPECT("*3\r\n$1\r\n1\r\n$-1\r\n$1\r\n3\r\n", mget, RD, "a", "nokey", "c");
    EXPECT(":6\r\n", dbsize, RD, "x");
    EXPECT(":2\r\n", del, W, "a", "b", "zz");
    EXPECT(":1\r\n", expire, W, "c", "100");
    EXPECT(":100\r\n", ttl, RD, "c");
    EXPECT("+OK\r\n", rename, W, "c", "c2");
    EXPECT(":100\r\n", ttl, RD, "c2");
    EXPECT("+OK\r\n", set, W, "soon", "x", "PX", "50");
    EXPECT("*5\r\n$2\r\nc2\r\n$1\r\nk\r\n$1\r\nn\r\n$1\r\ns\r\n$4\r\nsoon\r\n", keys, RD, "*");
    /* several commands in one turn see each other's writes */
    resp_arg a1[3] = { { "set", 3 }, { "t1", 2 }, { "x", 1 } };
    resp_arg a2[2] = { { "get", 3 }, { "t1", 2 } };
    resp_arg a3[2] = { { "del", 3 }, { "t1", 2 } };
    resp_arg a4[2] = { { "exists", 6 }, { "t1", 2 } };
    submit_to(&B, "set", kv_cmd_set, 1, 3, a1);
    submit_to(&B, "get", kv_cmd_get, 0, 2, a2);
    CHECK(strcmp(reply, "$1\r\nx\r\n") == 0);
    submit_to(&B, "del", kv_cmd_del, 1, 2, a3);
    CHECK(strcmp(reply, ":1\r\n") == 0);
    submit_to(&B, "exists", kv_cmd_exists, 0, 2, a4);
    CHECK(strcmp(reply, ":0\r\n") == 0);
    CHECK(B.turn_writes == 2);
    CHECK(B.ops->end_turn(&B) == FD_OK);
    /* active expiry by cron */
    now_ms += 100;
    B.ops->cron(&B, now_ms);
    uint64_t keys, expires;
    B.ops->keyspace(&B, &keys, &expires);
    CHECK(keys == 4 && expires == 1);
    /* a turn left open at close is lost, committed ones stay */
    resp_arg l[3] = { { "set", 3 }, { "lost", 4 }, { "v", 1 } };
    submit_to(&B, "set", kv_cmd_set, 1, 3, l);
    B.ops->close(&B);
    CHECK(open_backend(&B, "leveldb", dir) == FD_OK);
    EXPECT("$-1\r\n", get, RD, "lost");
    EXPECT("$11\r\nHello World\r\n", get, RD, "s");
    EXPECT(":4\r\n", dbsize, RD, "x");
    EXPECT(":100\r\n", ttl, RD, "c2");
    /* SCAN walks every key once, also across turns with writes */
    EXPECT("+OK\r\n", flushdb, W, "SYNC");
    EXPECT(":0\r\n", dbsize, RD, "x");
    for (int i = 0; i < 500; i++) {
        char k[16];
        snprintf(k, sizeof k, "key:%d", i);
        EXPECT("+OK\r\n", set, W, k, "v");
    }
    int seen = 0, calls = 0;
    char cursor[32] = "0";
    do {
        R(scan, RD, cursor, "COUNT", "9");
        const char *p = reply + 5;
        int cl = atoi(p);
        p = strstr(p, "\r\n") + 2;
        memcpy(cursor, p, (size_t)cl);
        cursor[cl] = 0;
        p += cl + 2;
        seen += atoi(p + 1);
        if (++calls == 10) { R(set, W, "zzz-new", "v"); R(del, W, "key:0"); }
    } while (strcmp(cursor, "0") != 0 && calls < 500);
    CHECK(seen >= 499 && seen <= 501);
    /* INFO names the engine and its settings */
    resp_out info;
    resp_out_init(&info, 2);
    B.ops->info(&B, &info);
    CHECK(memmem(info.data, info.len, "leveldb_compression:snappy", 26) != NULL);
    CHECK(memmem(info.data, info.len, "leveldb_write_buffer_size:1048576", 33) != NULL);
    CHECK(memmem(info.data, info.len, "kv_keys:500", 11) != NULL);
    /* the FLUSHDB above left tombstones: a helper thread compacted them away */
    CHECK(info_within(&B, &info, "leveldb_flush_compactions:1\r\n"));
    /* scattered deletes: SPOP leaves tombstones among the set's members,
     * which its next random picks cross; after 4096 of them
     * (LD_TOMBS_COMPACT) the helper compacts the set's range, and the set
     * is intact */
    for (int i = 0; i < 5000; i++) {
        char m[16];
        snprintf(m, sizeof m, "m%05d", i);
        EXPECT(":1\r\n", sadd, W, "drained", m);
    }
    R(spop, W, "drained", "4500");
    EXPECT(":500\r\n", scard, RD, "drained");
    CHECK(info_within(&B, &info, "leveldb_delete_compactions:1\r\n"));
    CHECK(memmem(info.data, info.len, "leveldb_delete_compactions_skipped:0\r\n", 38) != NULL);
    EXPECT(":500\r\n", scard, RD, "drained");
    EXPECT(":1\r\n", exists, RD, "drained");
    resp_out_free(&info);
    B.ops->close(&B);
}

/* The same random commands on LevelDB and on LMDB: equal replies. */
static void test_vs_lmdb(void)
{
    if (!fd_backend_find("lmdb")) return;
    char d1[128], d2[128];
    snprintf(d1, sizeof d1, "%s/vs-leveldb", root);
    snprintf(d2, sizeof d2, "%s/vs-lmdb", root);
    fd_backend BL, BM;
    CHECK(open_backend(&BL, "leveldb", d1) == FD_OK);
    CHECK(open_backend(&BM, "lmdb", d2) == FD_OK);
    static char r1[1 << 16];
    int diffs = 0, cmds = 0;
    for (int turn = 0; turn < 3000; turn++) {
        int n = 1 + (int)rnd(8);
        for (int j = 0; j < n; j++, cmds++) {
            char k1[16], k2[16], v[32], num[24];
            snprintf(k1, sizeof k1, "k%u", rnd(40));
            snprintf(k2, sizeof k2, "k%u", rnd(40));
            snprintf(v, sizeof v, "v%u", rnd(1000));
            snprintf(num, sizeof num, "%d", (int)rnd(200) - 20);
            resp_arg a[8];
            int argc = 0, w = 1;
            const char *name;
            kv_handler h;
#define A(s) (a[argc].ptr = (char *)(s), a[argc].len = strlen(s), argc++)
            switch (rnd(22)) {
            case 0: name = "set"; h = kv_cmd_set; A(name); A(k1); A(v); break;
            case 1: name = "set"; h = kv_cmd_set; A(name); A(k1); A(v); A("PX"); A(num); break;
            case 2: name = "set"; h = kv_cmd_set; A(name); A(k1); A(v); A(rnd(2) ? "NX" : "XX"); A("GET"); break;
            case 3: case 4: name = "get"; h = kv_cmd_get; w = 0; A(name); A(k1); break;
            case 5: name = "del"; h = kv_cmd_del; A(name); A(k1); A(k2); break;
            case 6: name = "incr"; h = kv_cmd_incr; A(name); A(k1); break;
            case 7: name = "incrby"; h = kv_cmd_incrby; A(name); A(k1); A(num); break;
            case 8: name = "append"; h = kv_cmd_append; A(name); A(k1); A(v); break;
            case 9: name = "expire"; h = kv_cmd_expire; A(name); A(k1); A(num); break;
            case 10: name = "pexpire"; h = kv_cmd_pexpire; A(name); A(k1); A(num); break;
            case 11: name = "ttl"; h = kv_cmd_ttl; w = 0; A(name); A(k1); break;
            case 12: name = "rename"; h = kv_cmd_rename; A(name); A(k1); A(k2); break;
            case 13: name = "renamenx"; h = kv_cmd_renamenx; A(name); A(k1); A(k2); break;
            case 14: name = "exists"; h = kv_cmd_exists; w = 0; A(name); A(k1); A(k2); A(k1); break;
            case 15: name = "mset"; h = kv_cmd_mset; A(name); A(k1); A(v); A(k2); A(num); break;
            case 16: name = "keys"; h = kv_cmd_keys; w = 0; A(name); A(rnd(2) ? "*" : "k1*"); break;
            case 17: name = "scan"; h = kv_cmd_scan; w = 0; A(name); A("0"); A("COUNT"); A("1000"); break;
            case 18: name = "dbsize"; h = kv_cmd_dbsize; w = 0; A(name); break;
            case 19: name = "getdel"; h = kv_cmd_getdel; A(name); A(k1); break;
            case 20: name = "setrange"; h = kv_cmd_setrange; A(name); A(k1); A("3"); A(v); break;
            default:
                if (rnd(40) == 0) { name = "flushdb"; h = kv_cmd_flushdb; A(name); }
                else { name = "persist"; h = kv_cmd_persist; A(name); A(k1); }
                break;
            }
#undef A
            submit_to(&BL, name, h, w, argc, a);
            memcpy(r1, reply, strlen(reply) + 1);
            submit_to(&BM, name, h, w, argc, a);
            if (strcmp(r1, reply) != 0) {
                if (diffs++ < 5) fprintf(stderr, "  vs lmdb: %s %.*s: leveldb %s lmdb %s", name,
                                         (int)a[1].len, argc > 1 ? a[1].ptr : "", r1, reply);
            }
        }
        CHECK(BL.ops->end_turn(&BL) == FD_OK);
        CHECK(BM.ops->end_turn(&BM) == FD_OK);
        if (rnd(10) == 0) {
            now_ms += rnd(60);
            BL.ops->cron(&BL, now_ms);
            BM.ops->cron(&BM, now_ms);
        }
        if (turn % 1000 == 999) {
            BL.ops->close(&BL);
            BM.ops->close(&BM);
            CHECK(open_backend(&BL, "leveldb", d1) == FD_OK);
            CHECK(open_backend(&BM, "lmdb", d2) == FD_OK);
        }
        uint64_t k1, e1, k2, e2;
        BL.ops->keyspace(&BL, &k1, &e1);
        BM.ops->keyspace(&BM, &k2, &e2);
        if (k1 != k2 || e1 != e2) {
            if (diffs++ < 5) fprintf(stderr, "  vs lmdb: keyspace %llu/%llu vs %llu/%llu\n",
                                     (unsigned long long)k1, (unsigned long long)e1,
                                     (unsigned long long)k2, (unsigned long long)e2);
        }
    }
    CHECK(diffs == 0);
    CHECK(cmds > 10000);
    BL.ops->close(&BL);
    BM.ops->close(&BM);
}

/* An oracle that is not the command code: a model of a string keyspace
 * (40 keys, values kept in C strings) computes each reply by hand from
 * Redis's documented rules, and the backend's reply must be those bytes.
 * Commands without expiry, so the model stays a few lines; run on LevelDB
 * and on LMDB, across turns and a close/reopen. */
#define MK 40
static int mod_has[MK];
static char mod_val[MK][160];

static void model_bulk(char *out, size_t n, int i)
{
    if (!mod_has[i]) snprintf(out, n, "$-1\r\n");
    else snprintf(out, n, "$%zu\r\n%.159s\r\n", strlen(mod_val[i]), mod_val[i]);
}

static int model_int(const char *s, long long *v)
{
    char *end;
    if (!*s || (s[0] == '0' && s[1]) || (s[0] == '-' && (s[1] == '0' || !s[1]))) return 0;
    errno = 0;
    *v = strtoll(s, &end, 10);
    return *end == 0 && errno == 0;
}

static void test_vs_model(const char *backend)
{
    if (!fd_backend_find(backend)) return;
    char dir[128];
    snprintf(dir, sizeof dir, "%s/model-%s", root, backend);
    fd_backend B;
    CHECK(open_backend(&B, backend, dir) == FD_OK);
    memset(mod_has, 0, sizeof mod_has);
    int diffs = 0, cmds = 0;
    char want[512];
    for (int turn = 0; turn < 2000; turn++) {
        int n = 1 + (int)rnd(6);
        for (int j = 0; j < n; j++, cmds++) {
            int i1 = (int)rnd(MK), i2 = (int)rnd(MK);
            char k1[8], k2[8], v[24];
            snprintf(k1, sizeof k1, "m%d", i1);
            snprintf(k2, sizeof k2, "m%d", i2);
            if (rnd(2)) snprintf(v, sizeof v, "%d", (int)rnd(2000) - 1000);
            else snprintf(v, sizeof v, "v%u", rnd(1000));
            resp_arg a[8];
            int argc = 0, w = 1;
            const char *name;
            kv_handler h;
            long long x;
#define A(s) (a[argc].ptr = (char *)(s), a[argc].len = strlen(s), argc++)
            switch (rnd(9)) {
            case 0: name = "set"; h = kv_cmd_set; A(name); A(k1); A(v);
                snprintf(want, sizeof want, "+OK\r\n");
                mod_has[i1] = 1; snprintf(mod_val[i1], sizeof mod_val[i1], "%s", v);
                break;
            case 1: name = "get"; h = kv_cmd_get; w = 0; A(name); A(k1);
                model_bulk(want, sizeof want, i1);
                break;
            case 2: name = "del"; h = kv_cmd_del; A(name); A(k1); A(k2);
                snprintf(want, sizeof want, ":%d\r\n", mod_has[i1] + (i2 != i1 && mod_has[i2]));
                mod_has[i1] = mod_has[i2] = 0;
                break;
            case 3: name = "incr"; h = kv_cmd_incr; A(name); A(k1);
                if (!mod_has[i1]) x = 0;
                else if (!model_int(mod_val[i1], &x)) {
                    snprintf(want, sizeof want, "-ERR value is not an integer or out of range\r\n");
                    break;
                }
                x++;
                snprintf(want, sizeof want, ":%lld\r\n", x);
                mod_has[i1] = 1; snprintf(mod_val[i1], sizeof mod_val[i1], "%lld", x);
                break;
            case 4: name = "append"; h = kv_cmd_append; A(name); A(k1); A(v);
                if (!mod_has[i1]) mod_val[i1][0] = 0;
                if (strlen(mod_val[i1]) + strlen(v) < sizeof mod_val[i1]) {
                    strcat(mod_val[i1], v);
                    mod_has[i1] = 1;
                    snprintf(want, sizeof want, ":%zu\r\n", strlen(mod_val[i1]));
                } else {                      /* keep the model's buffer: a plain SET instead */
                    argc = 0; name = "set"; h = kv_cmd_set; A(name); A(k1); A(v);
                    snprintf(want, sizeof want, "+OK\r\n");
                    mod_has[i1] = 1; snprintf(mod_val[i1], sizeof mod_val[i1], "%s", v);
                }
                break;
            case 5: name = "exists"; h = kv_cmd_exists; w = 0; A(name); A(k1); A(k2); A(k1);
                snprintf(want, sizeof want, ":%d\r\n", 2 * mod_has[i1] + mod_has[i2]);
                break;
            case 6: name = "strlen"; h = kv_cmd_strlen; w = 0; A(name); A(k1);
                snprintf(want, sizeof want, ":%zu\r\n", mod_has[i1] ? strlen(mod_val[i1]) : 0);
                break;
            case 7: name = "getdel"; h = kv_cmd_getdel; A(name); A(k1);
                model_bulk(want, sizeof want, i1);
                mod_has[i1] = 0;
                break;
            default: {
                name = "dbsize"; h = kv_cmd_dbsize; w = 0; A(name);
                int c = 0;
                for (int k = 0; k < MK; k++) c += mod_has[k];
                snprintf(want, sizeof want, ":%d\r\n", c);
                break;
            }
            }
#undef A
            submit_to(&B, name, h, w, argc, a);
            if (strcmp(reply, want) != 0 && diffs++ < 5)
                fprintf(stderr, "  %s vs model: %s %.*s: got %s want %s", backend, name,
                        (int)a[1].len, argc > 1 ? a[1].ptr : "", reply, want);
        }
        CHECK(B.ops->end_turn(&B) == FD_OK);
        if (turn == 999) {
            B.ops->close(&B);
            CHECK(open_backend(&B, backend, dir) == FD_OK);
        }
    }
    CHECK(diffs == 0);
    CHECK(cmds > 5000);
    B.ops->close(&B);
}

/* ------------------------------------------------------------ 1b. list reads
 * Reads of list elements in ascending sequence go through an iterator kept
 * for the transaction (leveldb.c: sit_get); each read must still answer
 * exactly what a point lookup answers: holes, the end of the list, values
 * still valid together until the next write, overlay writes in between, a
 * jump, the same key twice, and after clear. */
static size_t elem_key(char *out, uint64_t seq)
{
    static const char pfx[] = { KV_PFX_SUB, 4, 'l', 'i', 's', 't', 0, 0, 0, 0, 0, 0, 0, 1, KV_TAG_LIST };
    memcpy(out, pfx, sizeof pfx);
    kv_put_u64((uint8_t *)out + sizeof pfx, seq);
    return sizeof pfx + 8;
}

/* Elements from..to-1 but the hole, "v<i>" each, committed. */
static void put_elems(const kv_driver *d, void *db, uint64_t S, int from, int to, int hole)
{
    char k[32], w[16];
    void *txn;
    CHECK(d->begin(db, NULL, &txn) == FD_OK);
    for (int i = from; i < to; i++) {
        if (i == hole) continue;
        snprintf(w, sizeof w, "v%d", i);
        CHECK(d->put(txn, k, elem_key(k, S + i), w, strlen(w)) == FD_OK);
    }
    CHECK(d->commit(txn) == FD_OK);
}

static int elem_cached;   /* elem_is reads with get_cached (LRANGE's reads) */

static int elem_is(const kv_driver *d, void *txn, uint64_t seq, int want)
{
    char k[32], w[16];
    size_t kl = elem_key(k, seq);
    const void *v; size_t vl;
    int s = (elem_cached ? d->get_cached : d->get)(txn, k, kl, &v, &vl);
    if (want < 0) return s == FD_NOTFOUND;
    snprintf(w, sizeof w, "v%d", want);
    return s == FD_OK && vl == strlen(w) && memcmp(v, w, vl) == 0;
}

static unsigned long long info_num(fd_backend *b, const char *name);

static void test_list_reads(void)
{
    char dir[128], k[32], w[16];
    snprintf(dir, sizeof dir, "%s/listreads", root);
    fd_backend B;
    CHECK(open_backend(&B, "leveldb", dir) == FD_OK);
    const kv_driver *d = ST(&B)->drv;
    void *db = ST(&B)->db, *txn;
    const uint64_t S = KV_LIST_SEQ_START;
    /* elements S..S+19 except S+5, S+6 and S+16, and a key right after the list */
    CHECK(d->begin(db, NULL, &txn) == FD_OK);
    for (int i = 0; i < 20; i++) {
        if (i == 5 || i == 6 || i == 16) continue;
        snprintf(w, sizeof w, "v%d", i);
        CHECK(d->put(txn, k, elem_key(k, S + i), w, strlen(w)) == FD_OK);
    }
    CHECK(d->put(txn, "T", 1, "after", 5) == FD_OK);
    CHECK(d->commit(txn) == FD_OK);

    CHECK(d->begin(db, NULL, &txn) == FD_OK);
    CHECK(elem_is(d, txn, S + 0, 0) && elem_is(d, txn, S + 1, 1));    /* point lookup, then seek */
    const void *v2; size_t l2;
    CHECK(d->get(txn, k, elem_key(k, S + 2), &v2, &l2) == FD_OK);     /* a step */
    CHECK(elem_is(d, txn, S + 3, 3));
    CHECK(l2 == 2 && memcmp(v2, "v2", 2) == 0);                        /* still valid: no write yet */
    /* an overlay write between reads: the overlay answers first */
    CHECK(d->put(txn, k, elem_key(k, S + 4), "new", 3) == FD_OK);
    CHECK(d->del(txn, k, elem_key(k, S + 3)) == FD_OK);
    CHECK(elem_is(d, txn, S + 3, -1));
    { const void *v; size_t vl; CHECK(d->get(txn, k, elem_key(k, S + 4), &v, &vl) == FD_OK && vl == 3 && memcmp(v, "new", 3) == 0); }
    CHECK(elem_is(d, txn, S + 2, 2) && elem_is(d, txn, S + 3, -1));   /* S+3: deleted in the overlay */
    /* holes: S+5 and S+6 absent, S+7 present */
    CHECK(elem_is(d, txn, S + 5, -1) && elem_is(d, txn, S + 6, -1) && elem_is(d, txn, S + 7, 7));
    CHECK(elem_is(d, txn, S + 8, 8) && elem_is(d, txn, S + 8, 8));    /* the same key twice */
    CHECK(elem_is(d, txn, S + 9, 9) && elem_is(d, txn, S + 12, 12) && elem_is(d, txn, S + 13, 13));
    for (int i = 14; i < 20; i++) CHECK(elem_is(d, txn, S + i, i == 16 ? -1 : i));   /* a step into a hole */
    CHECK(elem_is(d, txn, S + 20, -1) && elem_is(d, txn, S + 21, -1)); /* past the end (next key: "T") */
    CHECK(elem_is(d, txn, S + 10, 10) && elem_is(d, txn, S + 11, 11));  /* backwards jump, then forwards */
    /* a key LevelDB holds, deleted via the memo of the read just made */
    CHECK(elem_is(d, txn, S + 12, 12) && d->del(txn, k, elem_key(k, S + 13)) == FD_OK);
    CHECK(elem_is(d, txn, S + 13, -1));
    CHECK(d->clear(txn) == FD_OK);
    CHECK(elem_is(d, txn, S + 14, -1) && elem_is(d, txn, S + 15, -1));
    d->abort(txn);
    CHECK(d->begin(db, NULL, &txn) == FD_OK);                          /* the abort dropped the clear */
    CHECK(elem_is(d, txn, S + 14, 14) && elem_is(d, txn, S + 15, 15) && elem_is(d, txn, S + 16, -1));
    CHECK(elem_is(d, txn, S + 17, 17));
    CHECK(d->del(txn, k, elem_key(k, S + 18)) == FD_OK && d->commit(txn) == FD_OK);
    CHECK(d->begin(db, NULL, &txn) == FD_OK);                          /* a new transaction sees the commit */
    CHECK(elem_is(d, txn, S + 17, 17) && elem_is(d, txn, S + 18, -1) && elem_is(d, txn, S + 19, 19));
    d->abort(txn);

    /* downwards (RPOP): elements read behind into the row cache */
    put_elems(d, db, S, 100, 200, 150);                              /* a hole at 150 */
    for (int round = 0; round < 2; round++) {
        CHECK(d->begin(db, NULL, &txn) == FD_OK);
        int bad = 0;
        for (int i = 199; i >= 95; i--) {
            int want = i < 100 || i == 150 ? -1 : i;
            if (round == 1 && i % 10 == 3) want = -1;                 /* deleted in round 0 */
            if (round == 1 && i % 10 == 4) want = 1000 + i;           /* rewritten in round 0 */
            bad += !elem_is(d, txn, S + i, want);
            if (round == 0 && i % 10 == 3 && i != 150 && i >= 100)
                CHECK(d->del(txn, k, elem_key(k, S + i)) == FD_OK && elem_is(d, txn, S + i, -1));
            if (round == 0 && i % 10 == 4 && i >= 100) {
                snprintf(w, sizeof w, "v%d", 1000 + i);
                CHECK(d->put(txn, k, elem_key(k, S + i), w, strlen(w)) == FD_OK);
            }
        }
        CHECK(bad == 0);
        CHECK(d->commit(txn) == FD_OK);
    }

    /* upwards with get_cached (LRANGE), over elements nothing read yet:
     * the row cache is asked first and what the iterator reads is kept
     * there, so the second pass is all hits; a commit's writes (a rewrite,
     * a delete, a new element in a hole) keep it exact */
    CHECK(d->get_cached != NULL);
    put_elems(d, db, S, 300, 400, 350);                              /* a hole at 350 */
    elem_cached = 1;
    for (int round = 0; round < 3; round++) {
        CHECK(d->begin(db, NULL, &txn) == FD_OK);
        unsigned long long hits = info_num(&B, "leveldb_row_cache_hits");
        int bad = 0;
        for (int i = 300; i < 400; i++) {
            int want = i == 350 && round < 2 ? -1 : i;
            if (round == 2 && i == 321) want = 7777;
            if (round == 2 && i == 322) want = -1;
            bad += !elem_is(d, txn, S + i, want);
        }
        CHECK(bad == 0);
        if (round == 1) {
            CHECK(info_num(&B, "leveldb_row_cache_hits") >= hits + 98);   /* all but the hole */
            CHECK(d->put(txn, k, elem_key(k, S + 321), "v7777", 5) == FD_OK);
            CHECK(d->del(txn, k, elem_key(k, S + 322)) == FD_OK);
            CHECK(d->put(txn, k, elem_key(k, S + 350), "v350", 4) == FD_OK);
            CHECK(elem_is(d, txn, S + 321, 7777) && elem_is(d, txn, S + 322, -1));   /* the overlay first */
        }
        CHECK(d->commit(txn) == FD_OK);
    }
    elem_cached = 0;
    B.ops->close(&B);
}

/* ------------------------------------------------------------ 1c. row cache
 * A small block cache makes the row cache (half its size, at least 64 KB)
 * evict: answers must stay exact across evictions, commits (replaced,
 * resized, deleted values), an abort, and a value handed out by a cache hit
 * must stay valid until the next write even when its entry is evicted. */
static unsigned long long info_num(fd_backend *b, const char *name)
{
    resp_out o;
    resp_out_init(&o, 2);
    b->ops->info(b, &o);
    unsigned long long n = 0;
    const char *p = memmem(o.data, o.len, name, strlen(name));
    if (p) n = strtoull(p + strlen(name) + 1, NULL, 10);
    resp_out_free(&o);
    return n;
}

static void rc_val(char *out, size_t cap, int i, int gen)
{
    snprintf(out, cap, "value-%05d-%d%.*s", i, gen, gen % 3 * 7, "-------------------------");
}

static void test_row_cache(void)
{
    char dir[128], k[32], w[64];
    snprintf(dir, sizeof dir, "%s/rowcache", root);
    fd_leveldb_settings lds = { .write_buffer_size = 1u << 20, .block_cache_size = 64u << 10 };
    fd_backend_config cfg = { .dir = dir, .max_bulk = RESP_DEFAULT_MAX_BULK, .options = &lds };
    char err[256] = "";
    fd_backend B;
    memset(&B, 0, sizeof B);
    B.ops = fd_backend_find("leveldb");
    CHECK(B.ops->open(&B, &cfg, err, sizeof err) == FD_OK);
    const kv_driver *d = ST(&B)->drv;
    void *db = ST(&B)->db, *txn;
    enum { NR = 3000 };
    int gen[NR];
    CHECK(d->begin(db, NULL, &txn) == FD_OK);
    for (int i = 0; i < NR; i++) {
        gen[i] = 0;
        snprintf(k, sizeof k, "rk%05d", i);
        rc_val(w, sizeof w, i, 0);
        CHECK(d->put(txn, k, strlen(k), w, strlen(w)) == FD_OK);
    }
    CHECK(d->commit(txn) == FD_OK);
    for (int round = 1; round <= 4; round++) {
        CHECK(d->begin(db, NULL, &txn) == FD_OK);
        /* a cache hit's value, held while thousands of reads evict */
        const void *held; size_t heldl;
        CHECK(getv(d, txn, "rk00007", NULL) == 0);
        CHECK(d->get(txn, "rk00007", 7, &held, &heldl) == FD_OK);
        rc_val(w, sizeof w, 7, gen[7]);
        int bad = 0;
        for (int i = 0; i < NR; i++) {
            snprintf(k, sizeof k, "rk%05d", (i * 7919) % NR);
            char want[64];
            rc_val(want, sizeof want, (i * 7919) % NR, gen[(i * 7919) % NR]);
            bad += gen[(i * 7919) % NR] < 0 ? !getv(d, txn, k, NULL) : !getv(d, txn, k, want);
        }
        CHECK(bad == 0);
        CHECK(heldl == strlen(w) && memcmp(held, w, heldl) == 0);
        CHECK(getv(d, txn, "nosuchkey", NULL) && getv(d, txn, "nosuchkey", NULL));
        /* writes: same size, other size, delete, re-create */
        for (int i = round; i < NR; i += 5) {
            snprintf(k, sizeof k, "rk%05d", i);
            if (i % 3 == 0) {
                CHECK(d->del(txn, k, strlen(k)) == FD_OK || gen[i] < 0);
                gen[i] = -1;
            } else {
                gen[i] = gen[i] < 0 ? 1 : gen[i] + (i % 2 ? 1 : 3);
                rc_val(w, sizeof w, i, gen[i]);
                CHECK(d->put(txn, k, strlen(k), w, strlen(w)) == FD_OK);
            }
        }
        CHECK(d->put(txn, "nosuchkey", 9, "now", 3) == FD_OK);
        if (round == 3) {                        /* an aborted turn changes nothing */
            d->abort(txn);
            CHECK(d->begin(db, NULL, &txn) == FD_OK);
            CHECK(getv(d, txn, "nosuchkey", NULL));
            d->abort(txn);
            break;
        }
        CHECK(d->commit(txn) == FD_OK);
        CHECK(d->begin(db, NULL, &txn) == FD_OK);
        CHECK(getv(d, txn, "nosuchkey", "now") && d->del(txn, "nosuchkey", 9) == FD_OK);
        CHECK(d->commit(txn) == FD_OK);
    }
    CHECK(info_num(&B, "leveldb_row_cache_hits") > 0);
    CHECK(info_num(&B, "leveldb_row_cache_evicted") > 0);
    CHECK(info_num(&B, "leveldb_row_cache_bytes") <= (64u << 10));
    B.ops->close(&B);
}

int main(void)
{
    CHECK(fd_backend_find("leveldb") != NULL);
    CHECK(strstr(fd_backend_names(), "leveldb") != NULL);
    if (!fd_backend_find("leveldb")) return TEST_DONE();
    if (harness_begin(root, sizeof root, "test_kv_leveldb") != 0) return 1;
    test_driver();
    test_list_reads();
    test_row_cache();
    test_cursor_model();
    test_commands();
    test_vs_lmdb();
    test_vs_model("leveldb");
    test_vs_model("lmdb");
    return harness_end(root);
}
