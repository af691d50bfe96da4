/* test_kv_lmdb_order.c — storage/lmdb.c compares keys with its own function
 * (lm_keycmp, set with mdb_set_compare), which must give exactly LMDB's
 * default order (memcmp over the common length, then the shorter key
 * first): otherwise a data file written by frontdoor would be a damaged
 * B+tree for any other LMDB program (mdb_dump, mdb_stat, an older
 * frontdoor) and the reverse.
 *
 * Keys of every shape are written through the lmdb backend (lengths 1..40
 * bytes, bytes 0x00/0x01/0x7f/0x80/0xfe/0xff, long shared prefixes,
 * prefixes of each other, differences in and across 8-byte words), the
 * store is closed, then the file is opened with plain liblmdb and its
 * default comparator: the records must come out strictly increasing in
 * that order, and mdb_get must find every key written.
 */
#include <lmdb.h>
#include "../../storage/bytecmp.h"
#define KV_HARNESS_STORE
#include "kv_harness.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static uint32_t rnd(uint32_t n) { return t_rnd(&rng_state, n); }

#define NKEYS 4000
static char keys[NKEYS][41];
static size_t klens[NKEYS];

static int default_cmp(const MDB_val *a, const MDB_val *b)
{
    size_t n = a->mv_size < b->mv_size ? a->mv_size : b->mv_size;
    int c = n ? memcmp(a->mv_data, b->mv_data, n) : 0;
    if (c) return c;
    return a->mv_size < b->mv_size ? -1 : a->mv_size > b->mv_size;
}

int main(void)
{
    ops = fd_backend_find("lmdb");
    if (!ops) { fprintf(stderr, "lmdb backend not built\n"); return 1; }
    if (harness_begin(dir, sizeof dir, "test_kv_lmdb_order") != 0) return 1;
    open_store(dir, 64u << 20);
    static const char alphabet[] = { 0x00, 0x01, 0x7f, (char)0x80, (char)0xfe, (char)0xff, 'a' };
    for (int i = 0; i < NKEYS; i++) {
        size_t kl;
        if (i > 0 && rnd(3) == 0) {
            /* a neighbour of an earlier key: same prefix, one byte changed,
             * or a prefix / extension of it */
            int j = (int)rnd((uint32_t)i);
            kl = klens[j];
            memcpy(keys[i], keys[j], kl);
            uint32_t how = rnd(3);
            if (how == 0 && kl > 1) kl = 1 + rnd((uint32_t)kl - 1);
            else if (how == 1 && kl < 40) keys[i][kl++] = alphabet[rnd(sizeof alphabet)];
            else keys[i][rnd((uint32_t)kl)] = alphabet[rnd(sizeof alphabet)];
        } else {
            kl = 1 + rnd(40);
            for (size_t b = 0; b < kl; b++) keys[i][b] = alphabet[rnd(sizeof alphabet)];
        }
        klens[i] = kl;
        resp_arg argv[3] = { { "set", 3 }, { keys[i], kl }, { "v", 1 } };
        CHECK(submit_args("set", kv_cmd_set, 1, 3, argv) == FD_OK);
        if (i % 500 == 499) CHECK(ops->end_turn(&B) == FD_OK);
    }
    CHECK(ops->end_turn(&B) == FD_OK);
    close_store();

    /* the same file through plain liblmdb, default comparator */
    MDB_env *env;
    MDB_txn *t;
    MDB_dbi dbi;
    MDB_cursor *c;
    CHECK(mdb_env_create(&env) == 0);
    CHECK(mdb_env_set_mapsize(env, 64u << 20) == 0);
    CHECK(mdb_env_open(env, dir, MDB_RDONLY | MDB_NOTLS, 0644) == 0);
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &t) == 0);
    CHECK(mdb_dbi_open(t, NULL, 0, &dbi) == 0);
    CHECK(mdb_cursor_open(t, dbi, &c) == 0);
    MDB_val k, v, prev = { 0, NULL };
    size_t records = 0, out_of_order = 0;
    for (int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (records++ && default_cmp(&prev, &k) >= 0) out_of_order++;
        prev = k;
    }
    mdb_cursor_close(c);
    size_t missing = 0;
    for (int i = 0; i < NKEYS; i++) {
        uint8_t mk[KV_MKEY_MAX];
        MDB_val key = { kv_enc_meta_key(mk, keys[i], klens[i]), mk };
        if (mdb_get(t, dbi, &key, &v) != 0) missing++;
    }
    mdb_txn_abort(t);
    mdb_env_close(env);
    CHECK(records > NKEYS / 2);
    CHECK(out_of_order == 0);
    CHECK(missing == 0);

    /* fd_bytes_cmp itself against the default order, on every pair of
     * neighbours and random pairs: lengths 1..40 put the first difference
     * in every position of the 8-byte loop and of the byte loop after it */
    size_t wrong = 0;
    for (int i = 0; i < NKEYS * 20; i++) {
        int a = i % NKEYS, b = i < NKEYS ? (a + 1) % NKEYS : (int)rnd(NKEYS);
        MDB_val va = { klens[a], keys[a] }, vb = { klens[b], keys[b] };
        int want = default_cmp(&va, &vb), got = fd_bytes_cmp(keys[a], klens[a], keys[b], klens[b]);
        if ((want > 0) != (got > 0) || (want < 0) != (got < 0)) wrong++;
    }
    CHECK(wrong == 0);
    return harness_end(dir);
}
