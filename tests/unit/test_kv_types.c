/* test_kv_types.c — lists, hashes, sets and sorted sets of the ordered-KV
 * layer (storage/kv/kv_list.c, kv_hash.c, kv_set.c, kv_zset.c), driven
 * through the LMDB backend (or $FD_TEST_BACKEND) in a temporary folder as the proxy drives
 * them (submit per command, end_turn per turn, cron for expiry and for the
 * reclamation of deleted collections). The harness is kv_harness.h. */
#include <stdlib.h>
#include <stdint.h>
#include <math.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#define KV_HARNESS_STORE
#include "kv_harness.h"

/* ---------------------------------------------------------------- helpers */

#define WT "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"

/* Records of one family ('S' elements, 'G' garbage) in the store. */
static long count_family(uint8_t pfx)
{
    kv_store *st = B.state;
    submit("dbsize", kv_cmd_dbsize, 0, (const char *)NULL);     /* opens a turn */
    kv_iter *it;
    long n = 0;
    CHECK(st->drv->iter_open(st->txn, &it) == FD_OK);
    for (int s = st->drv->seek(it, &pfx, 1); s == FD_OK; s = st->drv->next(it)) {
        const void *k, *v; size_t kl, vl;
        st->drv->cur(it, &k, &kl, &v, &vl);
        if (((const uint8_t *)k)[0] != pfx) break;
        n++;
    }
    st->drv->iter_close(it);
    ops->end_turn(&B);
    return n;
}

/* Run cron until no garbage is left; returns the number of calls, and the
 * largest number of element records one call removed in *max_step. */
static int reclaim_all(long *max_step)
{
    int calls = 0;
    long before = count_family(KV_PFX_SUB);
    *max_step = 0;
    while (count_family(KV_PFX_GARBAGE) > 0 && calls < 100000) {
        ops->cron(&B, now_ms);
        calls++;
        long after = count_family(KV_PFX_SUB);
        if (before - after > *max_step) *max_step = before - after;
        before = after;
    }
    return calls;
}

/* A command with many arguments: name, then argc-1 strings from a table. */
static int submit_many(const char *name, kv_handler h, int w, int argc, char **args)
{
    resp_arg *argv = calloc((size_t)argc, sizeof *argv);
    argv[0].ptr = (char *)name;
    argv[0].len = strlen(name);
    for (int i = 1; i < argc; i++) { argv[i].ptr = args[i - 1]; argv[i].len = strlen(args[i - 1]); }
    int s = submit_args(name, h, w, argc, argv);
    free(argv);
    return s;
}

/* ---------------------------------------------------------------- lists */

static void test_lists(void)
{
    EXPECT("+OK\r\n", flushdb, W, "SYNC");
    EXPECT(":3\r\n", rpush, W, "l", "a", "b", "c");
    EXPECT(":4\r\n", lpush, W, "l", "z");
    EXPECT("*4\r\n$1\r\nz\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", lrange, RD, "l", "0", "-1");
    EXPECT(":4\r\n", llen, RD, "l");
    EXPECT("$1\r\na\r\n", lindex, RD, "l", "1");
    EXPECT("$1\r\nc\r\n", lindex, RD, "l", "-1");
    EXPECT("$-1\r\n", lindex, RD, "l", "9");
    EXPECT("-ERR value is not an integer or out of range\r\n", lindex, RD, "l", "x");
    EXPECT("*2\r\n$1\r\nb\r\n$1\r\nc\r\n", lrange, RD, "l", "-2", "100");
    EXPECT("*0\r\n", lrange, RD, "l", "3", "1");
    EXPECT("*0\r\n", lrange, RD, "nokey", "0", "-1");
    EXPECT("$1\r\nz\r\n", lpop, W, "l");
    EXPECT("$1\r\nc\r\n", rpop, W, "l");
    EXPECT("$-1\r\n", lpop, W, "nokey");
    EXPECT("*-1\r\n", lpop, W, "nokey", "2");
    EXPECT("*0\r\n", lpop, W, "l", "0");
    EXPECT("-ERR value is out of range, must be positive\r\n", lpop, W, "l", "-1");
    EXPECT("-ERR wrong number of arguments for 'lpop' command\r\n", lpop, W, "l", "1", "2");
    EXPECT("+OK\r\n", lset, W, "l", "0", "A");
    EXPECT("-ERR index out of range\r\n", lset, W, "l", "5", "x");
    EXPECT("-ERR no such key\r\n", lset, W, "nokey", "0", "x");
    EXPECT(":0\r\n", lpushx, W, "nokey", "a");
    EXPECT(":0\r\n", exists, RD, "nokey");
    EXPECT(":3\r\n", rpushx, W, "l", "c");
    /* LINSERT on either side of the middle renumbers the shorter side */
    EXPECT(":4\r\n", linsert, W, "l", "BEFORE", "b", "x");
    EXPECT(":5\r\n", linsert, W, "l", "AFTER", "b", "y");
    EXPECT(":-1\r\n", linsert, W, "l", "AFTER", "nope", "y");
    EXPECT(":0\r\n", linsert, W, "nokey", "AFTER", "a", "y");
    EXPECT("-ERR syntax error\r\n", linsert, W, "l", "MIDDLE", "b", "y");
    EXPECT("*5\r\n$1\r\nA\r\n$1\r\nx\r\n$1\r\nb\r\n$1\r\ny\r\n$1\r\nc\r\n", lrange, RD, "l", "0", "-1");
    EXPECT(":7\r\n", rpush, W, "l", "x", "x");
    EXPECT(":1\r\n", lpos, RD, "l", "x");
    EXPECT(":6\r\n", lpos, RD, "l", "x", "RANK", "-1");
    EXPECT("*2\r\n:6\r\n:5\r\n", lpos, RD, "l", "x", "RANK", "-1", "COUNT", "2");
    EXPECT("*3\r\n:1\r\n:5\r\n:6\r\n", lpos, RD, "l", "x", "COUNT", "0");
    EXPECT("*1\r\n:1\r\n", lpos, RD, "l", "x", "COUNT", "0", "MAXLEN", "3");
    EXPECT("$-1\r\n", lpos, RD, "l", "nope");
    EXPECT("-ERR COUNT can't be negative\r\n", lpos, RD, "l", "x", "COUNT", "-1");
    /* LREM from the tail, then from the head */
    EXPECT(":2\r\n", lrem, W, "l", "-2", "x");
    EXPECT("*5\r\n$1\r\nA\r\n$1\r\nx\r\n$1\r\nb\r\n$1\r\ny\r\n$1\r\nc\r\n", lrange, RD, "l", "0", "-1");
    EXPECT(":1\r\n", lrem, W, "l", "0", "x");
    EXPECT("*4\r\n$1\r\nA\r\n$1\r\nb\r\n$1\r\ny\r\n$1\r\nc\r\n", lrange, RD, "l", "0", "-1");
    EXPECT("+OK\r\n", ltrim, W, "l", "1", "-2");
    EXPECT("*2\r\n$1\r\nb\r\n$1\r\ny\r\n", lrange, RD, "l", "0", "-1");
    /* LMOVE / RPOPLPUSH, also onto itself */
    EXPECT("$1\r\ny\r\n", rpoplpush, W, "l", "l");
    EXPECT("*2\r\n$1\r\ny\r\n$1\r\nb\r\n", lrange, RD, "l", "0", "-1");
    EXPECT("$1\r\ny\r\n", lmove, W, "l", "m", "LEFT", "RIGHT");
    EXPECT("$1\r\nb\r\n", lmove, W, "l", "m", "left", "left");
    EXPECT(":0\r\n", exists, RD, "l");              /* the last element went */
    EXPECT("*2\r\n$1\r\nb\r\n$1\r\ny\r\n", lrange, RD, "m", "0", "-1");
    EXPECT("-ERR syntax error\r\n", lmove, W, "m", "l", "UP", "LEFT");
    EXPECT("$-1\r\n", rpoplpush, W, "nokey", "m");
    /* popping the last elements deletes the key; LTRIM of everything too */
    EXPECT("*2\r\n$1\r\nb\r\n$1\r\ny\r\n", lpop, W, "m", "10");
    EXPECT(":0\r\n", exists, RD, "m");
    EXPECT(":2\r\n", rpush, W, "t", "1", "2");
    EXPECT("+OK\r\n", ltrim, W, "t", "5", "9");
    EXPECT(":0\r\n", exists, RD, "t");
    /* WRONGTYPE both ways */
    EXPECT("+OK\r\n", set, W, "s", "v");
    EXPECT(WT, lpush, W, "s", "x");
    EXPECT(WT, lrange, RD, "s", "0", "1");
    EXPECT(WT, llen, RD, "s");
    EXPECT(WT, lpos, RD, "s", "x");
    EXPECT(":1\r\n", rpush, W, "l2", "1");
    EXPECT(WT, get, RD, "l2");
    EXPECT(WT, rpoplpush, W, "l2", "s");
    EXPECT("*1\r\n$1\r\n1\r\n", lrange, RD, "l2", "0", "-1");   /* nothing moved */
    EXPECT("+list\r\n", type, RD, "l2");
    /* RESP3 nil shapes */
    out.proto = 3;
    EXPECT("_\r\n", lpop, W, "nokey", "2");
    EXPECT("_\r\n", lindex, RD, "l2", "5");
    out.proto = 2;
}

/* 100k pushes at both ends, then reads and pops at the ends and in the
 * middle: every end operation is O(1) stored records. */
static void test_big_list(void)
{
    EXPECT("+OK\r\n", flushdb, W, "SYNC");
    enum { N = 100000, PER = 1000 };
    char **vals = malloc(PER * sizeof *vals);
    for (int i = 0; i < PER; i++) vals[i] = malloc(16);
    clock_t t0 = clock();
    for (int b = 0; b < N / PER; b++) {
        int left = b % 2;
        for (int i = 0; i < PER; i++) snprintf(vals[i], 16, "%d", left ? -(b * PER + i) : b * PER + i);
        char *args[PER + 1];
        args[0] = "big";
        for (int i = 0; i < PER; i++) args[i + 1] = vals[i];
        submit_many(left ? "lpush" : "rpush", left ? kv_cmd_lpush : kv_cmd_rpush, 1, PER + 2, args);
        ops->end_turn(&B);
    }
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    fprintf(stderr, "  100k list pushes: %.2f s cpu\n", secs);
    EXPECT(":100000\r\n", llen, RD, "big");
    /* the head is the last LPUSH batch, reversed: -99999; the tail 98999 */
    EXPECT("$6\r\n-99999\r\n", lindex, RD, "big", "0");
    EXPECT("$5\r\n98999\r\n", lindex, RD, "big", "-1");
    R(lrange, RD, "big", "50000", "50002");
    CHECK(strncmp(reply, "*3\r\n", 4) == 0);
    R(lrange, RD, "big", "0", "-1");
    CHECK(strncmp(reply, "*100000\r\n", 9) == 0);
    EXPECT("$6\r\n-99999\r\n", lpop, W, "big");
    EXPECT("$5\r\n98999\r\n", rpop, W, "big");
    R(lpop, W, "big", "1000");
    CHECK(strncmp(reply, "*1000\r\n", 7) == 0);
    EXPECT(":98998\r\n", llen, RD, "big");
    EXPECT(":98999\r\n", linsert, W, "big", "BEFORE", "0", "mid");
    EXPECT(":1\r\n", lrem, W, "big", "1", "mid");
    EXPECT(":98998\r\n", llen, RD, "big");
    EXPECT("+OK\r\n", lset, W, "big", "-1", "last");
    EXPECT("$4\r\nlast\r\n", lindex, RD, "big", "98997");
    /* element records = size (no leftovers from pops/inserts/removes) */
    CHECK(count_family(KV_PFX_SUB) == 98998);
    EXPECT(":1\r\n", del, W, "big");
    long step;
    int calls = reclaim_all(&step);
    CHECK(count_family(KV_PFX_SUB) == 0);
    CHECK(calls >= 50 && step <= 1100);       /* bounded batches: ~1000 records per cron call */
    for (int i = 0; i < PER; i++) free(vals[i]);
    free(vals);
}

/* ---------------------------------------------------------------- hashes */

static void test_hashes(void)
{
    EXPECT("+OK\r\n", flushdb, W, "SYNC");
    EXPECT(":2\r\n", hset, W, "h", "f1", "v1", "f2", "v2");
    EXPECT(":0\r\n", hset, W, "h", "f1", "v9");
    EXPECT("-ERR wrong number of arguments for 'hset' command\r\n", hset, W, "h", "f1", "v1", "f2");
    EXPECT("+OK\r\n", hmset, W, "h", "f3", "v3");
    EXPECT("$2\r\nv9\r\n", hget, RD, "h", "f1");
    EXPECT("$-1\r\n", hget, RD, "h", "nof");
    EXPECT("$-1\r\n", hget, RD, "nokey", "f");
    EXPECT("*3\r\n$2\r\nv9\r\n$-1\r\n$2\r\nv3\r\n", hmget, RD, "h", "f1", "nof", "f3");
    EXPECT(":3\r\n", hlen, RD, "h");
    EXPECT(":1\r\n", hexists, RD, "h", "f2");
    EXPECT(":0\r\n", hexists, RD, "h", "zz");
    EXPECT(":2\r\n", hstrlen, RD, "h", "f2");
    EXPECT("*6\r\n$2\r\nf1\r\n$2\r\nv9\r\n$2\r\nf2\r\n$2\r\nv2\r\n$2\r\nf3\r\n$2\r\nv3\r\n", hgetall, RD, "h");
    EXPECT("*3\r\n$2\r\nf1\r\n$2\r\nf2\r\n$2\r\nf3\r\n", hkeys, RD, "h");
    EXPECT("*3\r\n$2\r\nv9\r\n$2\r\nv2\r\n$2\r\nv3\r\n", hvals, RD, "h");
    out.proto = 3;
    EXPECT("%3\r\n$2\r\nf1\r\n$2\r\nv9\r\n$2\r\nf2\r\n$2\r\nv2\r\n$2\r\nf3\r\n$2\r\nv3\r\n", hgetall, RD, "h");
    EXPECT("%0\r\n", hgetall, RD, "nokey");
    out.proto = 2;
    EXPECT(":0\r\n", hsetnx, W, "h", "f1", "x");
    EXPECT(":1\r\n", hsetnx, W, "h", "f4", "x");
    EXPECT(":5\r\n", hincrby, W, "h", "n", "5");
    EXPECT("-ERR hash value is not an integer\r\n", hincrby, W, "h", "f1", "1");
    EXPECT("-ERR increment or decrement would overflow\r\n", hincrby, W, "h", "n", "9223372036854775807");
    EXPECT("-ERR value is not an integer or out of range\r\n", hincrby, W, "h", "n", "x");
    EXPECT("$3\r\n5.1\r\n", hincrbyfloat, W, "h", "n", "0.1");
    EXPECT("-ERR hash value is not a float\r\n", hincrbyfloat, W, "h", "f1", "1");
    EXPECT("-ERR value is not a valid float\r\n", hincrbyfloat, W, "h", "n", "x");
    EXPECT(":2\r\n", hdel, W, "h", "f1", "f2", "zz");
    EXPECT(":3\r\n", hlen, RD, "h");
    /* HRANDFIELD: distinct with a positive count, repeats with a negative one */
    R(hrandfield, RD, "h", "3");
    CHECK(strncmp(reply, "*3\r\n", 4) == 0);
    R(hrandfield, RD, "h", "10");
    CHECK(strncmp(reply, "*3\r\n", 4) == 0);
    CHECK(strstr(reply, "f3") && strstr(reply, "f4") && strstr(reply, "\nn\r") && strstr(reply, "nokey") == NULL);
    R(hrandfield, RD, "h", "-7", "WITHVALUES");
    CHECK(strncmp(reply, "*14\r\n", 5) == 0);
    EXPECT("$-1\r\n", hrandfield, RD, "nokey");
    EXPECT("*0\r\n", hrandfield, RD, "nokey", "3");
    EXPECT("-ERR syntax error\r\n", hrandfield, RD, "h", "1", "FOO");
    /* HSCAN: a small hash comes whole */
    R(hscan, RD, "h", "0");
    CHECK(strncmp(reply, "*2\r\n$1\r\n0\r\n*6\r\n", 15) == 0);
    EXPECT("*2\r\n$1\r\n0\r\n*2\r\n$2\r\nf3\r\n$2\r\nv3\r\n", hscan, RD, "h", "0", "MATCH", "f3");
    EXPECT("-ERR invalid cursor\r\n", hscan, RD, "h", "x");
    EXPECT("-ERR syntax error\r\n", hscan, RD, "h", "0", "TYPE", "hash");
    /* WRONGTYPE */
    EXPECT("+OK\r\n", set, W, "s", "v");
    EXPECT(WT, hget, RD, "s", "f");
    EXPECT(WT, hset, W, "s", "f", "v");
    EXPECT(WT, hgetall, RD, "s");
    EXPECT(WT, get, RD, "h");
    /* the last field deleted deletes the key */
    EXPECT(":3\r\n", hdel, W, "h", "f3", "f4", "n", "nokey");
    EXPECT(":0\r\n", exists, RD, "h");
    EXPECT("*0\r\n", hgetall, RD, "h");
}

/* A big hash in HSCAN pages; a 100k-field hash deleted in O(1) and
 * reclaimed by cron in bounded steps. */
static void test_big_hash(void)
{
    EXPECT("+OK\r\n", flushdb, W, "SYNC");
    enum { N = 100000, PER = 1000 };
    char **args = malloc((2 * PER + 1) * sizeof *args);
    char *buf = malloc(2 * PER * 16);
    args[0] = "bh";
    for (int b = 0; b < N / PER; b++) {
        for (int i = 0; i < PER; i++) {
            snprintf(buf + 32 * i, 16, "field:%06d", b * PER + i);
            snprintf(buf + 32 * i + 16, 16, "%d", i);
            args[1 + 2 * i] = buf + 32 * i;
            args[2 + 2 * i] = buf + 32 * i + 16;
        }
        submit_many("hset", kv_cmd_hset, 1, 2 * PER + 2, args);
        CHECK(strcmp(reply, ":1000\r\n") == 0);
        ops->end_turn(&B);
    }
    EXPECT(":100000\r\n", hlen, RD, "bh");
    EXPECT("$3\r\n999\r\n", hget, RD, "bh", "field:099999");
    /* HSCAN pages: every field exactly once */
    long seen = 0;
    char cursor[32] = "0";
    int rounds = 0;
    do {
        R(hscan, RD, "bh", cursor, "COUNT", "5000");
        const char *p = reply + 4;                        /* "*2\r\n$n\r\n<cursor>" */
        p = strchr(p, '\n') + 1;
        size_t cl = strcspn(p, "\r");
        memcpy(cursor, p, cl);
        cursor[cl] = '\0';
        p = strchr(p, '*');
        seen += atol(p + 1) / 2;
        rounds++;
    } while (strcmp(cursor, "0") != 0 && rounds < 1000);
    if (seen != N) fprintf(stderr, "  HSCAN: %ld fields in %d rounds\n", seen, rounds);
    CHECK(seen == N && rounds >= N / 5000 && rounds <= N / 5000 + 1);
    /* HRANDFIELD distinct over a big hash */
    R(hrandfield, RD, "bh", "5");
    CHECK(strncmp(reply, "*5\r\n", 4) == 0);
    CHECK(count_family(KV_PFX_SUB) == N);
    clock_t t0 = clock();
    EXPECT(":1\r\n", del, W, "bh");
    double del_secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CHECK(del_secs < 0.05);                               /* O(1): a garbage entry */
    EXPECT(":0\r\n", exists, RD, "bh");
    EXPECT(":0\r\n", dbsize, RD, "x");
    CHECK(count_family(KV_PFX_GARBAGE) == 1);
    /* a new hash under the same name is independent of the garbage */
    EXPECT(":1\r\n", hset, W, "bh", "f", "v");
    EXPECT(":1\r\n", hlen, RD, "bh");
    long step;
    int calls = reclaim_all(&step);
    fprintf(stderr, "  100k-field hash reclaimed in %d cron calls, at most %ld records each\n", calls, step);
    CHECK(calls >= 90 && step <= 1100);
    CHECK(count_family(KV_PFX_SUB) == 1);
    EXPECT("*2\r\n$1\r\nf\r\n$1\r\nv\r\n", hgetall, RD, "bh");
    free(args);
    free(buf);
}

/* ---------------------------------------------------------------- sets */

static void test_sets(void)
{
    EXPECT("+OK\r\n", flushdb, W, "SYNC");
    EXPECT(":3\r\n", sadd, W, "s", "a", "b", "c", "a");
    EXPECT(":0\r\n", sadd, W, "s", "a");
    EXPECT(":3\r\n", scard, RD, "s");
    EXPECT(":1\r\n", sismember, RD, "s", "a");
    EXPECT(":0\r\n", sismember, RD, "s", "z");
    EXPECT("*2\r\n:1\r\n:0\r\n", smismember, RD, "s", "a", "z");
    EXPECT("*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", smembers, RD, "s");
    out.proto = 3;
    EXPECT("~3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", smembers, RD, "s");
    EXPECT("~0\r\n", smembers, RD, "nokey");
    out.proto = 2;
    EXPECT(":1\r\n", srem, W, "s", "a", "z");
    EXPECT(":2\r\n", sadd, W, "t", "b", "x");
    EXPECT("*1\r\n$1\r\nb\r\n", sinter, RD, "s", "t");
    EXPECT("*3\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nx\r\n", sunion, RD, "s", "t");
    EXPECT("*1\r\n$1\r\nc\r\n", sdiff, RD, "s", "t");
    EXPECT("*0\r\n", sinter, RD, "s", "nokey");
    EXPECT(":1\r\n", sinterstore, W, "d", "s", "t");
    EXPECT(":3\r\n", sunionstore, W, "d", "s", "t", "d");
    EXPECT("*3\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nx\r\n", smembers, RD, "d");
    EXPECT(":0\r\n", sdiffstore, W, "d", "s", "s");
    EXPECT(":0\r\n", exists, RD, "d");
    EXPECT(":1\r\n", sintercard, RD, "2", "s", "t");
    EXPECT(":1\r\n", sintercard, RD, "1", "s", "LIMIT", "1");
    EXPECT("-ERR numkeys should be greater than 0\r\n", sintercard, RD, "0", "s");
    EXPECT("-ERR Number of keys can't be greater than number of args\r\n", sintercard, RD, "3", "s");
    EXPECT("-ERR LIMIT can't be negative\r\n", sintercard, RD, "1", "s", "LIMIT", "-1");
    EXPECT(":1\r\n", smove, W, "s", "t", "c");
    EXPECT(":0\r\n", smove, W, "s", "t", "zz");
    EXPECT(":1\r\n", smove, W, "s", "t", "b");
    EXPECT(":0\r\n", exists, RD, "s");              /* emptied by SMOVE */
    EXPECT(":3\r\n", scard, RD, "t");
    /* SPOP / SRANDMEMBER: distinct for positive counts */
    R(srandmember, RD, "t", "2");
    CHECK(strncmp(reply, "*2\r\n", 4) == 0);
    R(srandmember, RD, "t", "-5");
    CHECK(strncmp(reply, "*5\r\n", 4) == 0);
    R(spop, W, "t", "2");
    CHECK(strncmp(reply, "*2\r\n", 4) == 0);
    EXPECT(":1\r\n", scard, RD, "t");
    R(spop, W, "t");
    CHECK(reply[0] == '$');
    EXPECT(":0\r\n", exists, RD, "t");
    EXPECT("$-1\r\n", spop, W, "t");
    EXPECT("-ERR value is out of range, must be positive\r\n", spop, W, "t", "-1");
    /* a bigger set: SPOP with a count is distinct and shrinks by that much */
    char *args[501], buf[500][8];
    for (int i = 0; i < 500; i++) { snprintf(buf[i], 8, "m%d", i); args[i + 1] = buf[i]; }
    args[0] = "bs";
    submit_many("sadd", kv_cmd_sadd, 1, 502, args);
    ops->end_turn(&B);
    CHECK(strcmp(reply, ":500\r\n") == 0);
    R(spop, W, "bs", "200");
    CHECK(strncmp(reply, "*200\r\n", 6) == 0);
    EXPECT(":300\r\n", scard, RD, "bs");
    long step;
    reclaim_all(&step);
    CHECK(count_family(KV_PFX_SUB) == 300);
    /* WRONGTYPE */
    EXPECT("+OK\r\n", set, W, "str", "v");
    EXPECT(WT, sadd, W, "str", "a");
    EXPECT(WT, sinter, RD, "bs", "str");
    EXPECT(WT, sinter, RD, "nokey", "str");
    EXPECT(WT, smove, W, "bs", "str", "m1");
    EXPECT(":0\r\n", smove, W, "nokey", "str", "m1");
    EXPECT("+OK\r\n", set, W, "str", "v");
    EXPECT(":300\r\n", sunionstore, W, "str", "bs");   /* STORE overwrites any type */
    EXPECT("+set\r\n", type, RD, "str");
    EXPECT(":1\r\n", del, W, "str");
    EXPECT(":1\r\n", del, W, "bs");
}

/* ---------------------------------------------------------------- sorted sets */

static void test_zsets(void)
{
    EXPECT("+OK\r\n", flushdb, W, "SYNC");
    EXPECT(":3\r\n", zadd, W, "z", "1", "a", "2", "b", "3", "c");
    EXPECT("$1\r\n2\r\n", zscore, RD, "z", "b");
    EXPECT(":3\r\n", zcard, RD, "z");
    EXPECT("*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", zrange, RD, "z", "0", "-1");
    EXPECT("*4\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nb\r\n$1\r\n2\r\n", zrange, RD, "z", "0", "1", "REV", "WITHSCORES");
    out.proto = 3;
    EXPECT("*2\r\n*2\r\n$1\r\na\r\n,1\r\n*2\r\n$1\r\nb\r\n,2\r\n", zrange, RD, "z", "0", "1", "WITHSCORES");
    EXPECT(",2\r\n", zscore, RD, "z", "b");
    EXPECT("*1\r\n*2\r\n$1\r\na\r\n,1\r\n", zpopmin, W, "z", "1");
    EXPECT(":1\r\n", zadd, W, "z", "1", "a");
    out.proto = 2;
    EXPECT("*2\r\n$1\r\nb\r\n$1\r\nc\r\n", zrangebyscore, RD, "z", "(1", "3");
    EXPECT("*1\r\n$1\r\nb\r\n", zrangebyscore, RD, "z", "-inf", "+inf", "LIMIT", "1", "1");
    EXPECT("*2\r\n$1\r\nc\r\n$1\r\nb\r\n", zrevrangebyscore, RD, "z", "+inf", "(1");
    EXPECT("*2\r\n$1\r\nc\r\n$1\r\nb\r\n", zrevrange, RD, "z", "0", "1");
    EXPECT(":2\r\n", zcount, RD, "z", "(1", "+inf");
    EXPECT(":2\r\n", zrank, RD, "z", "c");
    EXPECT(":0\r\n", zrevrank, RD, "z", "c");
    EXPECT("$-1\r\n", zrank, RD, "z", "nope");
    EXPECT("$3\r\n1.5\r\n", zincrby, W, "z", "0.5", "a");
    EXPECT("$4\r\n1000\r\n", zincrby, W, "z", "1e3", "new");
    EXPECT(":0\r\n", zadd, W, "z", "NX", "10", "a");
    EXPECT(":1\r\n", zadd, W, "z", "XX", "CH", "10", "a");
    EXPECT(":0\r\n", zadd, W, "z", "GT", "CH", "1", "a");
    EXPECT("$-1\r\n", zadd, W, "z", "GT", "INCR", "-1", "a");
    EXPECT("$3\r\n4.5\r\n", zadd, W, "z", "INCR", "2.5", "b");
    EXPECT("-ERR XX and NX options at the same time are not compatible\r\n", zadd, W, "z", "NX", "XX", "1", "a");
    EXPECT("-ERR GT, LT, and/or NX options at the same time are not compatible\r\n", zadd, W, "z", "GT", "LT", "1", "a");
    EXPECT("-ERR INCR option supports a single increment-element pair\r\n", zadd, W, "z", "INCR", "1", "a", "2", "b");
    EXPECT("-ERR value is not a valid float\r\n", zadd, W, "z", "nan", "a");
    EXPECT("-ERR syntax error\r\n", zadd, W, "z", "1", "a", "2");
    EXPECT("-ERR min or max is not a float\r\n", zcount, RD, "z", "x", "1");
    EXPECT("-ERR min or max not valid string range item\r\n", zrangebylex, RD, "z", "a", "+");
    EXPECT("-ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX\r\n",
           zrange, RD, "z", "0", "1", "LIMIT", "0", "1");
    EXPECT("-ERR syntax error, WITHSCORES not supported in combination with BYLEX\r\n",
           zrange, RD, "z", "-", "+", "BYLEX", "WITHSCORES");
    EXPECT("*3\r\n$3\r\n4.5\r\n$-1\r\n$4\r\n1000\r\n", zmscore, RD, "z", "b", "zz", "new");
    EXPECT(":2\r\n", zrem, W, "z", "a", "zz", "c");
    EXPECT("*4\r\n$1\r\nb\r\n$3\r\n4.5\r\n$3\r\nnew\r\n$4\r\n1000\r\n", zrange, RD, "z", "0", "-1", "WITHSCORES");
    EXPECT("*2\r\n$3\r\nnew\r\n$4\r\n1000\r\n", zpopmax, W, "z");
    EXPECT(":1\r\n", zremrangebyscore, W, "z", "-inf", "+inf");
    EXPECT(":0\r\n", exists, RD, "z");
    /* infinities and negative scores order numerically */
    EXPECT(":5\r\n", zadd, W, "z", "-inf", "ninf", "+inf", "pinf", "-2.5", "n", "0", "zero", "1e-300", "tiny");
    EXPECT("*5\r\n$4\r\nninf\r\n$1\r\nn\r\n$4\r\nzero\r\n$4\r\ntiny\r\n$4\r\npinf\r\n", zrange, RD, "z", "0", "-1");
    EXPECT("*2\r\n$4\r\npinf\r\n$3\r\ninf\r\n", zrange, RD, "z", "-1", "-1", "WITHSCORES");
    EXPECT(":2\r\n", zremrangebyrank, W, "z", "0", "1");
    EXPECT("*3\r\n$4\r\nzero\r\n$4\r\ntiny\r\n$4\r\npinf\r\n", zrange, RD, "z", "0", "-1");
    /* lex ranges over equal scores */
    EXPECT(":5\r\n", zadd, W, "lx", "0", "a", "0", "b", "0", "c", "0", "d", "0", "e");
    EXPECT("*2\r\n$1\r\nb\r\n$1\r\nc\r\n", zrangebylex, RD, "lx", "[b", "(d");
    EXPECT("*3\r\n$1\r\nd\r\n$1\r\nc\r\n$1\r\nb\r\n", zrevrangebylex, RD, "lx", "[d", "(a");
    EXPECT(":3\r\n", zlexcount, RD, "lx", "(a", "[d");
    EXPECT(":2\r\n", zremrangebylex, W, "lx", "-", "(c");
    EXPECT("*3\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n", zrange, RD, "lx", "0", "-1");
    R(zscan, RD, "lx", "0");
    CHECK(strncmp(reply, "*2\r\n$1\r\n0\r\n*6\r\n$1\r\nc\r\n$1\r\n0\r\n", 29) == 0);
    /* WRONGTYPE */
    EXPECT("+OK\r\n", set, W, "s", "v");
    EXPECT(WT, zadd, W, "s", "1", "a");
    EXPECT(WT, zrange, RD, "s", "0", "1");
    EXPECT(WT, zscore, RD, "s", "a");
    EXPECT("$-1\r\n", zscore, RD, "nokey", "a");
    EXPECT("*0\r\n", zrange, RD, "nokey", "0", "-1");
    /* a bigger zset: ranks and ranges agree */
    char *args[2001], buf[2000][12];
    args[0] = "bz";
    for (int i = 0; i < 1000; i++) {
        snprintf(buf[2 * i], 12, "%d", (i * 7919) % 1000);
        snprintf(buf[2 * i + 1], 12, "m%04d", i);
        args[1 + 2 * i] = buf[2 * i];
        args[2 + 2 * i] = buf[2 * i + 1];
    }
    submit_many("zadd", kv_cmd_zadd, 1, 2002, args);
    ops->end_turn(&B);
    CHECK(strcmp(reply, ":1000\r\n") == 0);
    EXPECT(":500\r\n", zcount, RD, "bz", "0", "(500");
    EXPECT(":999\r\n", zrevrank, RD, "bz", "m0000");        /* score 0: the lowest */
    EXPECT("*2\r\n$5\r\nm0000\r\n$1\r\n0\r\n", zpopmin, W, "bz");
    EXPECT(":999\r\n", zcard, RD, "bz");
    /* ZRANK/ZREVRANK agree with ZRANGE at both ends and in the middle */
    int rank_ok = 1;
    for (int i = 0; i < 999; i += (i < 5 || i > 993) ? 1 : 97) {
        char idx[16], want[32], mb[16];
        snprintf(idx, sizeof idx, "%d", i);
        R(zrange, RD, "bz", idx, idx);
        if (sscanf(reply, "*1\r\n$5\r\n%5s", mb) != 1) { rank_ok = 0; break; }
        snprintf(want, sizeof want, ":%d\r\n", i);
        if (strcmp(R(zrank, RD, "bz", mb), want) != 0) rank_ok = 0;
        snprintf(want, sizeof want, ":%d\r\n", 998 - i);
        if (strcmp(R(zrevrank, RD, "bz", mb), want) != 0) rank_ok = 0;
    }
    CHECK(rank_ok);
    /* ranges near the end are walked from that end: same replies */
    char a[256], b2[256];
    snprintf(a, sizeof a, "%.200s", R(zrange, RD, "bz", "-2", "-1", "WITHSCORES"));
    snprintf(b2, sizeof b2, "%.200s", R(zrange, RD, "bz", "997", "998", "WITHSCORES"));
    CHECK(strncmp(a, "*4\r\n", 4) == 0 && strcmp(a, b2) == 0);
    snprintf(a, sizeof a, "%.200s", R(zrevrange, RD, "bz", "-1", "-1"));
    snprintf(b2, sizeof b2, "%.200s", R(zrange, RD, "bz", "0", "0"));
    CHECK(strncmp(a, "*1\r\n", 4) == 0 && strcmp(a, b2) == 0);
    long step;
    reclaim_all(&step);
    CHECK(count_family(KV_PFX_SUB) == 2 * (999 + 3 + 3));   /* 'z' + 's' per member */
}

/* ---------------------------------------------------------------- generic key commands */

static void test_ttl_rename_scan(void)
{
    EXPECT("+OK\r\n", flushdb, W, "SYNC");
    EXPECT(":2\r\n", rpush, W, "l", "a", "b");
    EXPECT(":1\r\n", hset, W, "h", "f", "v");
    EXPECT(":1\r\n", sadd, W, "s", "m");
    EXPECT(":1\r\n", zadd, W, "z", "1", "m");
    EXPECT("+OK\r\n", set, W, "str", "v");
    /* TYPE and SCAN TYPE on every type */
    EXPECT("+list\r\n", type, RD, "l");
    EXPECT("+hash\r\n", type, RD, "h");
    EXPECT("+set\r\n", type, RD, "s");
    EXPECT("+zset\r\n", type, RD, "z");
    EXPECT("*2\r\n$1\r\n0\r\n*1\r\n$1\r\nl\r\n", scan, RD, "0", "TYPE", "list");
    EXPECT("*2\r\n$1\r\n0\r\n*1\r\n$1\r\nh\r\n", scan, RD, "0", "TYPE", "hash");
    EXPECT("*2\r\n$1\r\n0\r\n*1\r\n$1\r\ns\r\n", scan, RD, "0", "TYPE", "set");
    EXPECT("*2\r\n$1\r\n0\r\n*1\r\n$1\r\nz\r\n", scan, RD, "0", "TYPE", "zset");
    EXPECT(":5\r\n", exists, RD, "l", "h", "s", "z", "str");
    /* TTL on every type; a write keeps it */
    EXPECT(":1\r\n", expire, W, "l", "10");
    EXPECT(":1\r\n", pexpire, W, "h", "10000");
    EXPECT(":1\r\n", expire, W, "s", "10");
    EXPECT(":1\r\n", expire, W, "z", "10");
    EXPECT(":3\r\n", rpush, W, "l", "c");
    EXPECT(":1\r\n", hset, W, "h", "g", "v");
    EXPECT(":1\r\n", sadd, W, "s", "n");
    EXPECT(":1\r\n", zadd, W, "z", "2", "n");
    EXPECT(":10\r\n", ttl, RD, "l");
    EXPECT(":10\r\n", ttl, RD, "h");
    EXPECT(":10\r\n", ttl, RD, "s");
    EXPECT(":10\r\n", ttl, RD, "z");
    EXPECT(":1\r\n", persist, W, "z");
    EXPECT(":-1\r\n", ttl, RD, "z");
    /* RENAME of each type keeps elements and expiry; the old name is gone */
    EXPECT("+OK\r\n", rename, W, "l", "l2");
    EXPECT("+OK\r\n", rename, W, "h", "h2");
    EXPECT("+OK\r\n", rename, W, "s", "s2");
    EXPECT("+OK\r\n", rename, W, "z", "z2");
    EXPECT("*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", lrange, RD, "l2", "0", "-1");
    EXPECT("*4\r\n$1\r\nf\r\n$1\r\nv\r\n$1\r\ng\r\n$1\r\nv\r\n", hgetall, RD, "h2");
    EXPECT("*2\r\n$1\r\nm\r\n$1\r\nn\r\n", smembers, RD, "s2");
    EXPECT("*4\r\n$1\r\nm\r\n$1\r\n1\r\n$1\r\nn\r\n$1\r\n2\r\n", zrange, RD, "z2", "0", "-1", "WITHSCORES");
    EXPECT(":10\r\n", ttl, RD, "l2");
    EXPECT(":-1\r\n", ttl, RD, "z2");
    EXPECT(":0\r\n", exists, RD, "l", "h", "s", "z");
    EXPECT(":0\r\n", renamenx, W, "l2", "str");
    EXPECT("+OK\r\n", rename, W, "z2", "str");           /* over a string */
    EXPECT("+zset\r\n", type, RD, "str");
    EXPECT("+OK\r\n", rename, W, "s2", "h2");           /* over a collection */
    EXPECT("*2\r\n$1\r\nm\r\n$1\r\nn\r\n", smembers, RD, "h2");
    EXPECT(WT, hget, RD, "h2", "f");
    long step;
    reclaim_all(&step);
    /* only live elements remain: l2 (3), h2 as a set (2), str as a zset (2x2) */
    CHECK(count_family(KV_PFX_SUB) == 3 + 2 + 4);
    check_consistency("rename");
    /* expiry: gone lazily, then reclaimed actively */
    now_ms += 11000;
    EXPECT(":0\r\n", exists, RD, "l2");
    EXPECT("*0\r\n", lrange, RD, "l2", "0", "-1");
    EXPECT(":0\r\n", llen, RD, "l2");
    EXPECT(":1\r\n", rpush, W, "l2", "new");             /* a write replaces the expired list */
    EXPECT("*1\r\n$3\r\nnew\r\n", lrange, RD, "l2", "0", "-1");
    EXPECT(":-1\r\n", ttl, RD, "l2");
    EXPECT(":0\r\n", exists, RD, "h2");                 /* the set kept s's TTL */
    EXPECT(":1\r\n", expire, W, "str", "1");
    now_ms += 2000;
    ops->cron(&B, now_ms);
    reclaim_all(&step);
    EXPECT(":1\r\n", dbsize, RD, "x");
    CHECK(count_family(KV_PFX_SUB) == 1);
    /* DEL / UNLINK */
    EXPECT(":1\r\n", del, W, "l2", "str", "nokey");
    reclaim_all(&step);
    CHECK(count_family(KV_PFX_SUB) == 0 && count_family(KV_PFX_GARBAGE) == 0);
}

/* Long keys and long fields/members (hashed encodings) in every type. */
static void test_long_names(void)
{
    EXPECT("+OK\r\n", flushdb, W, "SYNC");
    static char key[600], f1[500], f2[500];
    memset(key, 'k', sizeof key - 1);
    memset(f1, 'f', sizeof f1 - 1);
    memcpy(f2, f1, sizeof f2);
    f2[498] = 'g';                           /* same first 200 bytes as f1 */
    EXPECT(":2\r\n", hset, W, key, f1, "v1", f2, "v2");
    EXPECT("$2\r\nv1\r\n", hget, RD, key, f1);
    EXPECT("$2\r\nv2\r\n", hget, RD, key, f2);
    R(hkeys, RD, key);
    CHECK(strncmp(reply, "*2\r\n$499\r\n", 10) == 0 && strlen(reply) == 4 + 2 * (6 + 499 + 2));
    EXPECT(":2\r\n", sadd, W, "s", f1, f2);
    EXPECT(":1\r\n", sismember, RD, "s", f2);
    EXPECT(":2\r\n", zadd, W, "z", "1", f1, "2", f2);
    R(zrange, RD, "z", "1", "1");
    CHECK(strncmp(reply, "*1\r\n$499\r\n", 10) == 0 && reply[10 + 498] == 'g');
    EXPECT(":1\r\n", zrem, W, "z", f1);
    EXPECT(":1\r\n", zcard, RD, "z");
    EXPECT(":1\r\n", rpush, W, key + 1, f1);
    R(lpop, W, key + 1);
    CHECK(strncmp(reply, "$499\r\n", 6) == 0);
    EXPECT(":1\r\n", hdel, W, key, f1);
    EXPECT(":1\r\n", hlen, RD, key);
    check_consistency("long names");
}

int main(void)
{
    /* FD_TEST_BACKEND=leveldb runs the same cases over another embedded driver */
    const char *bname = getenv("FD_TEST_BACKEND") ? getenv("FD_TEST_BACKEND") : "lmdb";
    ops = fd_backend_find(bname);
    if (!ops) { fprintf(stderr, "%s backend not built\n", bname); return 1; }
    if (harness_begin(dir, sizeof dir, "test_kv_types") != 0) return 1;
    open_store(dir, 1024u << 20);
    test_lists();
    check_consistency("lists");
    test_big_list();
    check_consistency("big list");
    test_hashes();
    check_consistency("hashes");
    test_big_hash();
    check_consistency("big hash");
    test_sets();
    check_consistency("sets");
    test_zsets();
    check_consistency("zsets");
    test_ttl_rename_scan();
    check_consistency("ttl/rename/scan");
    test_long_names();
    close_store();
    return harness_end(dir);
}
