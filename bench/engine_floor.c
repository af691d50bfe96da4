/* engine_floor: what the storage engine alone costs per SET / MSET key, with
 * no protocol, no proxy and no Redis types around it: the floor under
 * frontdoor's embedded write paths (issue 31).
 *
 * It does what frontdoor's kv layer asks of the engine for a string SET
 * (docs/encoding.md: one read of the key's `M` record, then one write of
 * it), on the same shapes redis-benchmark sends (`key:%012d` over -r keys,
 * a 3-byte value), in turns of --turn keys as frontdoor commits them
 * (`-c 50 -P 16`: 800 SETs, or 8000 keys for MSET's ten), with the engine
 * settings of `durability nosync`:
 *   lmdb     MDB_NOTLS|MDB_NOSYNC|MDB_WRITEMAP; per turn one write txn, per
 *            key mdb_get then mdb_put (frontdoor: one cursor descent and an
 *            in-page put; the same misses)
 *   leveldb  bloom 10, 64 MB cache, 16 MB write buffer, snappy; per key a
 *            leveldb_get (LevelDB's memtable + tables), per turn one
 *            WriteBatch in key order (frontdoor's overlay) and leveldb_write
 * It prints CPU microseconds per command for the whole process (LevelDB's
 * compaction thread included), to be set beside redis-server's CPU per SET
 * taken in the same run (bench/README.md, "The engines' floor").
 *
 * usage: engine_floor lmdb|leveldb DIR [--keys N] [--turn N] [--ops N] [--records R] [--blind]
 *                     [--write-buffer-mb N]
 *   --records  records read and written per command (1: a string SET; 2: an
 *              HSET of a new value, its field row and the key's `M` row; 3:
 *              a ZADD, member and score rows besides `M`)
 *   --blind    no read before the write (what a write that need not know the
 *              old record would cost)
 *   --write-buffer-mb  LevelDB's memtable size (16, frontdoor's default) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <leveldb/c.h>
#include <lmdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double wall_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void) {               /* xorshift64 */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

enum { KEYLEN = 17 };                           /* 'M' + "key:%012d" */

/* k: KEYLEN bytes (no NUL): record j of Redis key n (j 0: its `M`
 * record; 1.. other records, as a hash's field or a sorted set's member and
 * score rows, each elsewhere in the key space); n < 10^12 */
static void make_key(char *k, long n, int j) {
    char b[32];
    snprintf(b, sizeof b, "%ckey:%012ld", "MSZTUVWX"[j & 7], n % 1000000000000L);
    memcpy(k, b, KEYLEN);
}

static int cmp_key(const void *a, const void *b) { return memcmp(a, b, KEYLEN); }

static void die(const char *what, const char *err) {
    fprintf(stderr, "engine_floor: %s: %s\n", what, err ? err : "failed");
    exit(1);
}

static const char VALUE[] = "\x01xxx";          /* flags byte (string) + "xxx" */

static double c0, w0, c1, w1;                   /* when the measured part began, ended */
static long wbuf_mb = 16;                       /* LevelDB's write buffer (leveldb-write-buffer-size) */

static void lmdb_turns(MDB_env *env, MDB_dbi dbi, long turn, long ops, int blind, const char *kb) {
    MDB_txn *txn;
    int rc;
    for (long done = 0; done < ops; done += turn) {
        long n = ops - done < turn ? ops - done : turn;
        if ((rc = mdb_txn_begin(env, NULL, 0, &txn))) die("mdb_txn_begin", mdb_strerror(rc));
        for (long i = 0; i < n; i++) {
            MDB_val k = {KEYLEN, (void *)(kb + (size_t)(done + i) * KEYLEN)}, v;
            if (!blind) (void)mdb_get(txn, dbi, &k, &v);
            v.mv_size = sizeof VALUE - 1;
            v.mv_data = (void *)VALUE;
            if ((rc = mdb_put(txn, dbi, &k, &v, 0))) die("mdb_put", mdb_strerror(rc));
        }
        if ((rc = mdb_txn_commit(txn))) die("mdb_txn_commit", mdb_strerror(rc));
    }
}

static void run_lmdb(const char *dir, long keys, long turn, long ops, int blind, const char *kb, const char *fill) {
    MDB_env *env;
    MDB_dbi dbi;
    MDB_txn *txn;
    int rc;
    if ((rc = mdb_env_create(&env)) || (rc = mdb_env_set_mapsize(env, 1ull << 30)) ||
        (rc = mdb_env_open(env, dir, MDB_NOTLS | MDB_NOSYNC | MDB_WRITEMAP, 0644)))
        die("mdb_env_open", mdb_strerror(rc));
    if ((rc = mdb_txn_begin(env, NULL, 0, &txn)) || (rc = mdb_dbi_open(txn, NULL, 0, &dbi)) ||
        (rc = mdb_txn_commit(txn)))
        die("mdb_dbi_open", mdb_strerror(rc));
    lmdb_turns(env, dbi, turn, keys, 1, fill);       /* every key once */
    c0 = cpu_s();
    w0 = wall_s();
    lmdb_turns(env, dbi, turn, ops, blind, kb);
    c1 = cpu_s();
    w1 = wall_s();
    mdb_env_close(env);
}

static void leveldb_turns(leveldb_t *db, long turn, long ops, int blind, const char *kb) {
    char *err = NULL;
    leveldb_readoptions_t *ro = leveldb_readoptions_create();
    leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
    leveldb_writebatch_t *wb = leveldb_writebatch_create();
    char *sorted = malloc((size_t)turn * KEYLEN);
    if (!sorted) die("malloc", NULL);
    for (long done = 0; done < ops; done += turn) {
        long n = ops - done < turn ? ops - done : turn;
        const char *tk = kb + (size_t)done * KEYLEN;
        if (!blind)
            for (long i = 0; i < n; i++) {
                size_t vl;
                char *v = leveldb_get(db, ro, tk + (size_t)i * KEYLEN, KEYLEN, &vl, &err);
                if (err) die("leveldb_get", err);
                leveldb_free(v);
            }
        memcpy(sorted, tk, (size_t)n * KEYLEN);
        qsort(sorted, (size_t)n, KEYLEN, cmp_key);
        leveldb_writebatch_clear(wb);
        for (long i = 0; i < n; i++) {
            if (i && !memcmp(sorted + (size_t)i * KEYLEN, sorted + (size_t)(i - 1) * KEYLEN, KEYLEN)) continue;
            leveldb_writebatch_put(wb, sorted + (size_t)i * KEYLEN, KEYLEN, VALUE, sizeof VALUE - 1);
        }
        leveldb_write(db, wo, wb, &err);
        if (err) die("leveldb_write", err);
    }
    leveldb_writebatch_destroy(wb);
    leveldb_writeoptions_destroy(wo);
    leveldb_readoptions_destroy(ro);
    free(sorted);
}

static void run_leveldb(const char *dir, long keys, long turn, long ops, int blind, const char *kb, const char *fill) {
    char *err = NULL;
    leveldb_options_t *o = leveldb_options_create();
    leveldb_filterpolicy_t *bloom = leveldb_filterpolicy_create_bloom(10);
    leveldb_cache_t *cache = leveldb_cache_create_lru(64u << 20);
    leveldb_options_set_create_if_missing(o, 1);
    leveldb_options_set_cache(o, cache);
    leveldb_options_set_filter_policy(o, bloom);
    leveldb_options_set_write_buffer_size(o, (size_t)wbuf_mb << 20);
    leveldb_options_set_compression(o, leveldb_snappy_compression);
    leveldb_t *db = leveldb_open(o, dir, &err);
    if (!db) die("leveldb_open", err);
    leveldb_turns(db, turn, keys, 1, fill);            /* every key once */
    c0 = cpu_s();
    w0 = wall_s();
    leveldb_turns(db, turn, ops, blind, kb);
    c1 = cpu_s();
    w1 = wall_s();
    leveldb_close(db);
    leveldb_options_destroy(o);
    leveldb_filterpolicy_destroy(bloom);
    leveldb_cache_destroy(cache);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: engine_floor lmdb|leveldb DIR [--keys N] [--turn N] [--ops N] [--records R] [--blind]\n"
                        "                    [--write-buffer-mb N]\n");
        return 2;
    }
    long keys = 100000, turn = 800, ops = 4000000, records = 1;
    int blind = 0;
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--blind")) blind = 1;
        else if (i + 1 < argc && !strcmp(argv[i], "--keys")) keys = atol(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--turn")) turn = atol(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--ops")) ops = atol(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--records")) records = atol(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--write-buffer-mb")) wbuf_mb = atol(argv[++i]);
        else { fprintf(stderr, "engine_floor: unknown option %s\n", argv[i]); return 2; }
    }
    if (keys < 1 || turn < 1 || ops < turn || records < 1 || records > 8 || wbuf_mb < 1 || wbuf_mb > 1024) { fprintf(stderr, "engine_floor: bad sizes\n"); return 2; }
    mkdir(argv[2], 0755);
    /* the keys first (as redis-benchmark -r: uniform over keys), so that
     * making them is not measured */
    char *kb = malloc((size_t)(ops * records) * KEYLEN + 1);
    if (!kb) die("malloc", NULL);
    for (long i = 0; i < ops; i++) {
        long n = (long)(next_rand() % (uint64_t)keys);
        for (long j = 0; j < records; j++) make_key(kb + (size_t)(i * records + j) * KEYLEN, n, (int)j);
    }
    /* fill every key once, then measure */
    char *fill = malloc((size_t)(keys * records) * KEYLEN + 1);
    if (!fill) die("malloc", NULL);
    for (long i = 0; i < keys; i++)
        for (long j = 0; j < records; j++) make_key(fill + (size_t)(i * records + j) * KEYLEN, i, (int)j);
    int lm = !strcmp(argv[1], "lmdb");
    if (!lm && strcmp(argv[1], "leveldb")) { fprintf(stderr, "engine_floor: lmdb or leveldb\n"); return 2; }
    if (lm) run_lmdb(argv[2], keys * records, turn * records, ops * records, blind, kb, fill);
    else run_leveldb(argv[2], keys * records, turn * records, ops * records, blind, kb, fill);
    double c = c1 - c0, w = w1 - w0;                /* closing is not measured */
    printf("%s %s keys=%ld turn=%ld ops=%ld records=%ld: %.3f us CPU per command, %.3f us wall (%.0f commands/s)\n",
           argv[1], blind ? "put" : "get+put", keys, turn, ops, records, c * 1e6 / (double)ops,
           w * 1e6 / (double)ops, (double)ops / w);
    free(kb);
    free(fill);
    return 0;
}
