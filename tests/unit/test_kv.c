/* test_kv.c — the ordered-KV layer: encodings (storage/kv/kv_codec.c) and
 * the Redis commands driven through the LMDB backend in a temporary folder,
 * exactly as the proxy drives them (submit per command, end_turn per turn,
 * cron for active expiry). */
#include <stdlib.h>
#include <stdint.h>
#include <math.h>
#include <float.h>
#include <unistd.h>
#include <sys/stat.h>
#define KV_HARNESS_STORE
#include "kv_harness.h"

/* ---------------------------------------------------------------- encodings */

static int cmp8(const uint8_t *a, const uint8_t *b) { return memcmp(a, b, 8); }

static void test_doubles(void)
{
    const double v[] = { -INFINITY, -1e308, -1.5, -1.0, -DBL_MIN, -4.9e-324, 0.0,
                         4.9e-324, DBL_MIN, 1.0, 1.5, 1e308, INFINITY };
    size_t n = sizeof v / sizeof v[0];
    uint8_t e[16][8];
    for (size_t i = 0; i < n; i++) {
        kv_enc_double(e[i], v[i]);
        CHECK(kv_dec_double(e[i]) == v[i]);
    }
    int ordered = 1;
    for (size_t i = 1; i < n; i++) if (cmp8(e[i - 1], e[i]) >= 0) ordered = 0;
    CHECK(ordered);
    uint8_t mz[8], pz[8];
    kv_enc_double(mz, -0.0);
    kv_enc_double(pz, 0.0);
    CHECK(cmp8(mz, pz) == 0);                     /* -0 and +0 are one score */
    CHECK(!signbit(kv_dec_double(mz)));
    uint8_t small[8];
    kv_enc_double(small, -4.9e-324);
    CHECK(cmp8(small, mz) < 0);
}

static void test_integers(void)
{
    const int64_t v[] = { INT64_MIN, -1000000, -1, 0, 1, 255, 256, INT64_MAX };
    uint8_t e[8][8];
    int ordered = 1;
    for (size_t i = 0; i < 8; i++) {
        kv_enc_i64(e[i], v[i]);
        CHECK(kv_dec_i64(e[i]) == v[i]);
        if (i && cmp8(e[i - 1], e[i]) >= 0) ordered = 0;
    }
    CHECK(ordered);
    /* list sequence numbers: pushes at the head go below KV_LIST_SEQ_START,
     * at the tail above; byte order is list order */
    uint64_t seq[] = { KV_LIST_SEQ_START - 3, KV_LIST_SEQ_START - 2, KV_LIST_SEQ_START - 1,
                       KV_LIST_SEQ_START, KV_LIST_SEQ_START + 1, KV_LIST_SEQ_START + 256 };
    ordered = 1;
    for (size_t i = 1; i < 6; i++) {
        uint8_t a[8], b[8];
        kv_put_u64(a, seq[i - 1]);
        kv_put_u64(b, seq[i]);
        if (cmp8(a, b) >= 0) ordered = 0;
    }
    CHECK(ordered);
}

static void test_keys_encoding(void)
{
    /* SipHash-2-4 reference vector: key 00..0f, message 00..0e */
    uint8_t key[16], msg[15];
    for (int i = 0; i < 16; i++) key[i] = (uint8_t)i;
    for (int i = 0; i < 15; i++) msg[i] = (uint8_t)i;
    CHECK(kv_siphash(key, msg, 15) == 0xa129ca6149be45e5ULL);
    CHECK(kv_siphash(key, msg, 0) == 0x726fdb47dd0e0e31ULL);

    /* 'a' + "bc" vs 'ab' + "c": the length byte keeps element records apart */
    uint8_t p1[KV_SUBPFX_MAX + 8], p2[KV_SUBPFX_MAX + 8];
    size_t l1 = kv_enc_sub_prefix(p1, (const uint8_t *)"a", 1, 7);
    size_t l2 = kv_enc_sub_prefix(p2, (const uint8_t *)"ab", 2, 7);
    memcpy(p1 + l1, "bc", 2); l1 += 2;
    memcpy(p2 + l2, "c", 1); l2 += 1;
    CHECK(l1 == l2 && memcmp(p1, p2, l1) != 0);
    CHECK(memcmp(p1, p2, 2) != 0);                 /* differ already at the length byte */
    /* one key's prefix never prefixes another key's records */
    uint8_t q[KV_SUBPFX_MAX];
    size_t ql = kv_enc_sub_prefix(q, (const uint8_t *)"a", 1, 7);
    CHECK(!(l2 >= ql && memcmp(p2, q, ql) == 0));

    /* long keys: 200 bytes kept, then a 128-bit hash; round trip via metadata */
    char k1[600], k2[600];
    memset(k1, 'x', sizeof k1);
    memcpy(k2, k1, sizeof k2);
    k2[599] = 'y';
    uint8_t e1[KV_ENC_MAX], e2[KV_ENC_MAX], e3[KV_ENC_MAX];
    CHECK(kv_enc_key(e1, k1, 600) == KV_KEY_HASHED);
    CHECK(kv_enc_key(e2, k2, 600) == KV_KEY_HASHED);
    CHECK(memcmp(e1, k1, KV_KEY_INLINE) == 0);
    CHECK(memcmp(e1, e2, KV_KEY_HASHED) != 0);
    CHECK(kv_enc_key(e3, k1, 600) == KV_KEY_HASHED && memcmp(e1, e3, KV_KEY_HASHED) == 0);
    CHECK(kv_enc_key(e3, k1, KV_KEY_INLINE) == KV_KEY_INLINE);
    CHECK(kv_enc_key(e3, k1, KV_KEY_INLINE + 1) == KV_KEY_HASHED);
    /* a raw key is never 216 bytes: a 216-byte key is hashed too */
    CHECK(kv_enc_key(e3, k1, KV_KEY_HASHED) == KV_KEY_HASHED && memcmp(e3, e1, KV_KEY_INLINE) == 0);
    uint8_t mk[KV_MKEY_MAX];
    CHECK(kv_enc_meta_key(mk, "ab", 2) == 3 && mk[0] == 'M');
    CHECK(KV_PFX_COUNTER < KV_PFX_EXPIRE && KV_PFX_EXPIRE < KV_PFX_GARBAGE &&
          KV_PFX_GARBAGE < KV_PFX_META && KV_PFX_META < KV_PFX_SUB);

    /* metadata parse of a long-key string record */
    uint8_t rec[KV_META_HDR + 4 + 600 + 3];
    rec[0] = KV_T_STRING | KV_F_LONGKEY;
    kv_put_u64(rec + 1, 12345);
    kv_put_u32(rec + 9, 600);
    memcpy(rec + 13, k1, 600);
    memcpy(rec + 613, "val", 3);
    kv_meta m;
    CHECK(kv_meta_parse(rec, sizeof rec, &m) == FD_OK);
    CHECK(m.type == KV_T_STRING && m.expire == 12345 && m.fullkey_len == 600 &&
          memcmp(m.fullkey, k1, 600) == 0 && m.vlen == 3 && memcmp(m.val, "val", 3) == 0);
    CHECK(kv_meta_parse(rec, 5, &m) == FD_E_CORRUPT);
}

/* ---------------------------------------------------------------- commands */

static void test_strings(void)
{
    EXPECT("$-1\r\n", get, RD, "k");
    EXPECT("+OK\r\n", set, W, "k", "v1");
    EXPECT("$2\r\nv1\r\n", get, RD, "k");
    EXPECT("$-1\r\n", set, W, "k", "v2", "NX");
    EXPECT("+OK\r\n", set, W, "k", "v2", "XX");
    EXPECT("$-1\r\n", set, W, "nokey", "v", "XX");
    EXPECT("$2\r\nv2\r\n", set, W, "k", "v3", "GET");
    EXPECT("$2\r\nv3\r\n", get, RD, "k");
    EXPECT("-ERR syntax error\r\n", set, W, "k", "v", "NX", "XX");
    EXPECT("-ERR syntax error\r\n", set, W, "k", "v", "EX", "10", "PX", "100");
    EXPECT("-ERR syntax error\r\n", set, W, "k", "v", "EX");
    EXPECT("-ERR syntax error\r\n", set, W, "k", "v", "KEEPTTL", "EX", "5");
    EXPECT("-ERR syntax error\r\n", set, W, "k", "v", "FOO");
    EXPECT("-ERR value is not an integer or out of range\r\n", set, W, "k", "v", "EX", "abc");
    EXPECT("-ERR invalid expire time in 'set' command\r\n", set, W, "k", "v", "EX", "0");
    EXPECT("-ERR invalid expire time in 'set' command\r\n", set, W, "k", "v", "PX", "-5");
    EXPECT("-ERR invalid expire time in 'set' command\r\n", set, W, "k", "v", "EX", "9223372036854775807");
    EXPECT("+OK\r\n", set, W, "k", "v", "ex", "10", "EX", "20");    /* repeat: last wins */
    EXPECT(":20\r\n", ttl, RD, "k");
    EXPECT("+OK\r\n", set, W, "k", "v4", "KEEPTTL");
    EXPECT(":20\r\n", ttl, RD, "k");
    EXPECT("+OK\r\n", set, W, "k", "v5");
    EXPECT(":-1\r\n", ttl, RD, "k");
    EXPECT("-ERR invalid expire time in 'setex' command\r\n", setex, W, "k", "0", "v");
    EXPECT("+OK\r\n", setex, W, "k", "100", "v");
    EXPECT(":100000\r\n", pttl, RD, "k");
    EXPECT("+OK\r\n", psetex, W, "k", "1500", "v");
    EXPECT(":2\r\n", ttl, RD, "k");           /* (1500 + 500) / 1000 */
    EXPECT(":1500\r\n", pttl, RD, "k");
    EXPECT(":0\r\n", setnx, W, "k", "x");
    EXPECT(":1\r\n", setnx, W, "k2", "x");
    EXPECT("$1\r\nx\r\n", getset, W, "k2", "y");
    EXPECT("$-1\r\n", getset, W, "k3", "z");
    EXPECT("$1\r\ny\r\n", getdel, W, "k2");
    EXPECT("$-1\r\n", getdel, W, "k2");
    EXPECT(":0\r\n", exists, RD, "k2");
    EXPECT("*3\r\n$1\r\nv\r\n$-1\r\n$1\r\nz\r\n", mget, RD, "k", "nokey", "k3");
    EXPECT("+OK\r\n", mset, W, "a", "1", "b", "2", "a", "3");
    EXPECT("$1\r\n3\r\n", get, RD, "a");
    EXPECT("-ERR wrong number of arguments for 'mset' command\r\n", mset, W, "a", "1", "b");
    EXPECT(":0\r\n", msetnx, W, "x1", "1", "a", "2");
    EXPECT(":0\r\n", exists, RD, "x1");
    EXPECT(":1\r\n", msetnx, W, "x1", "1", "x2", "2");
    EXPECT(":2\r\n", exists, RD, "x1", "x2");

    /* GETEX */
    EXPECT("$1\r\n3\r\n", getex, W, "a", "EX", "50");
    EXPECT(":50\r\n", ttl, RD, "a");
    EXPECT("$1\r\n3\r\n", getex, W, "a", "PERSIST");
    EXPECT(":-1\r\n", ttl, RD, "a");
    EXPECT("-ERR syntax error\r\n", getex, W, "a", "PERSIST", "EX", "5");
    EXPECT("-ERR syntax error\r\n", getex, W, "a", "KEEPTTL");
    EXPECT("-ERR invalid expire time in 'getex' command\r\n", getex, W, "a", "PX", "0");
    EXPECT("$-1\r\n", getex, W, "nokey");
    EXPECT("$-1\r\n", getex, W, "nokey", "EX", "0");      /* Redis: no key, no check */
    EXPECT("$-1\r\n", getex, W, "nokey", "EX", "x");

    /* counters */
    EXPECT(":1\r\n", incr, W, "n");
    EXPECT(":11\r\n", incrby, W, "n", "10");
    EXPECT(":10\r\n", decr, W, "n");
    EXPECT(":-5\r\n", decrby, W, "n", "15");
    EXPECT("$2\r\n-5\r\n", get, RD, "n");
    EXPECT("-ERR value is not an integer or out of range\r\n", incr, W, "k");
    EXPECT("-ERR value is not an integer or out of range\r\n", incrby, W, "n", "1.5");
    EXPECT("+OK\r\n", set, W, "big", "9223372036854775807");
    EXPECT("-ERR increment or decrement would overflow\r\n", incr, W, "big");
    EXPECT("-ERR decrement would overflow\r\n", decrby, W, "n", "-9223372036854775808");
    EXPECT("+OK\r\n", set, W, "f", "10.50");
    EXPECT("$4\r\n10.6\r\n", incrbyfloat, W, "f", "0.1");
    EXPECT("$4\r\n10.6\r\n", get, RD, "f");
    EXPECT("$4\r\n10.6\r\n", set, W, "f", "5.0e3", "GET");
    EXPECT("$4\r\n5200\r\n", incrbyfloat, W, "f", "2.0e2");
    EXPECT("-ERR value is not a valid float\r\n", incrbyfloat, W, "k", "1");
    EXPECT("-ERR value is not a valid float\r\n", incrbyfloat, W, "f", "x");
    EXPECT("-ERR increment would produce NaN or Infinity\r\n", incrbyfloat, W, "f", "inf");
    EXPECT("+OK\r\n", setex, W, "ttlkeep", "100", "5");
    EXPECT(":6\r\n", incr, W, "ttlkeep");
    EXPECT(":100\r\n", ttl, RD, "ttlkeep");          /* INCR keeps the TTL */

    /* APPEND / STRLEN / GETRANGE / SETRANGE */
    EXPECT(":5\r\n", append, W, "s", "Hello");
    EXPECT(":11\r\n", append, W, "s", " World");
    EXPECT(":11\r\n", strlen, RD, "s");
    EXPECT(":0\r\n", strlen, RD, "nokey");
    EXPECT("$4\r\nHell\r\n", getrange, RD, "s", "0", "3");
    EXPECT("$3\r\nrld\r\n", getrange, RD, "s", "-3", "-1");
    EXPECT("$11\r\nHello World\r\n", getrange, RD, "s", "0", "-1");
    EXPECT("$11\r\nHello World\r\n", getrange, RD, "s", "-100", "100");
    EXPECT("$0\r\n\r\n", getrange, RD, "s", "5", "3");
    EXPECT("$0\r\n\r\n", getrange, RD, "s", "-1", "-5");
    EXPECT("$0\r\n\r\n", getrange, RD, "nokey", "0", "-1");
    EXPECT(":11\r\n", setrange, W, "s", "6", "Redis");
    EXPECT("$11\r\nHello Redis\r\n", get, RD, "s");
    EXPECT(":11\r\n", setrange, W, "s2", "6", "Redis");
    EXPECT("$11\r\n\0\0\0\0\0\0Redis\r\n", getrange, RD, "s2", "0", "-1");
    CHECK(memcmp(reply, "$11\r\n\0\0\0\0\0\0Redis\r\n", 18) == 0);
    EXPECT(":0\r\n", setrange, W, "s3", "5", "");
    EXPECT(":0\r\n", exists, RD, "s3");
    EXPECT("-ERR offset is out of range\r\n", setrange, W, "s", "-1", "x");
    EXPECT("-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n",
           setrange, W, "s", "536870911", "xx");

    /* WRONGTYPE needs a non-string: not creatable yet by commands, so a
     * hash record is written directly below (test_types). */
}

static void test_keys(void)
{
    EXPECT("+OK\r\n", flushdb, W, "SYNC");
    EXPECT("-ERR syntax error\r\n", flushdb, W, "x", "FOO");
    EXPECT("+OK\r\n", flushdb, W, "ASYNC");
    EXPECT(":0\r\n", dbsize, RD, "x");
    EXPECT("$-1\r\n", randomkey, RD, "x");
    EXPECT("+OK\r\n", mset, W, "a", "1", "b", "2", "c", "3");
    EXPECT(":3\r\n", dbsize, RD, "x");
    EXPECT(":3\r\n", exists, RD, "a", "a", "b");
    EXPECT(":2\r\n", touch, RD, "a", "b", "zz");
    EXPECT("+string\r\n", type, RD, "a");
    EXPECT("+none\r\n", type, RD, "zz");
    EXPECT(":2\r\n", del, W, "a", "b", "a", "zz");
    EXPECT(":1\r\n", dbsize, RD, "x");
    EXPECT("$1\r\nc\r\n", randomkey, RD, "x");

    /* EXPIRE family */
    EXPECT(":0\r\n", expire, W, "nokey", "10");
    EXPECT(":-2\r\n", ttl, RD, "nokey");
    EXPECT(":-1\r\n", ttl, RD, "c");
    EXPECT(":-1\r\n", expiretime, RD, "c");
    EXPECT(":1\r\n", expire, W, "c", "100");
    EXPECT(":100\r\n", ttl, RD, "c");
    EXPECT(":0\r\n", expire, W, "c", "200", "NX");
    EXPECT(":1\r\n", expire, W, "c", "200", "XX");
    EXPECT(":0\r\n", expire, W, "c", "100", "GT");
    EXPECT(":1\r\n", expire, W, "c", "300", "GT");
    EXPECT(":0\r\n", expire, W, "c", "400", "LT");
    EXPECT(":1\r\n", expire, W, "c", "50", "LT");
    EXPECT(":50\r\n", ttl, RD, "c");
    EXPECT("-ERR NX and XX, GT or LT options at the same time are not compatible\r\n",
           expire, W, "c", "5", "NX", "XX");
    EXPECT("-ERR GT and LT options at the same time are not compatible\r\n",
           expire, W, "c", "5", "GT", "LT");
    EXPECT("-ERR Unsupported option foo\r\n", expire, W, "c", "5", "foo");
    EXPECT("-ERR value is not an integer or out of range\r\n", expire, W, "c", "x");
    EXPECT("-ERR invalid expire time in 'expire' command\r\n", expire, W, "c", "9223372036854775807");
    char buf[64];
    snprintf(buf, sizeof buf, ":%lld\r\n", (long long)(now_ms + 50000));
    EXPECT(buf, pexpiretime, RD, "c");
    snprintf(buf, sizeof buf, ":%lld\r\n", (long long)((now_ms + 50000) / 1000));
    EXPECT(buf, expiretime, RD, "c");
    EXPECT(":1\r\n", pexpire, W, "c", "1234");
    EXPECT(":1234\r\n", pttl, RD, "c");
    snprintf(buf, sizeof buf, "%lld", (long long)(now_ms / 1000 + 77));
    EXPECT(":1\r\n", expireat, W, "c", buf);
    EXPECT(":77\r\n", ttl, RD, "c");
    snprintf(buf, sizeof buf, "%lld", (long long)(now_ms + 5555));
    EXPECT(":1\r\n", pexpireat, W, "c", buf);
    EXPECT(":5555\r\n", pttl, RD, "c");
    EXPECT(":1\r\n", persist, W, "c");
    EXPECT(":0\r\n", persist, W, "c");
    EXPECT(":-1\r\n", ttl, RD, "c");
    /* a time in the past deletes */
    EXPECT(":1\r\n", expire, W, "c", "-1");
    EXPECT(":0\r\n", exists, RD, "c");

    /* lazy and active expiry */
    EXPECT("+OK\r\n", flushdb, W, "SYNC");
    for (int i = 0; i < 300; i++) {
        char k[32];
        snprintf(k, sizeof k, "e%03d", i);
        EXPECT("+OK\r\n", set, W, k, "v", "PX", i < 250 ? "1000" : "100000");
    }
    EXPECT("+OK\r\n", set, W, "keep", "v");
    uint64_t keys, expires;
    ops->keyspace(&B, &keys, &expires);
    CHECK(keys == 301 && expires == 300);
    now_ms += 2000;
    EXPECT("$-1\r\n", get, RD, "e000");
    EXPECT(":0\r\n", exists, RD, "e001", "e100");
    EXPECT(":-2\r\n", ttl, RD, "e002");
    EXPECT(":301\r\n", dbsize, RD, "x");      /* as Redis: not yet reclaimed */
    /* cron works in bounded slices (1 ms / 1000 keys): a few calls at most */
    int crons = 0;
    do { ops->cron(&B, now_ms); ops->keyspace(&B, &keys, &expires); } while (keys > 51 && ++crons < 100);
    CHECK(keys == 51 && expires == 50);
    EXPECT(":51\r\n", dbsize, RD, "x");
    EXPECT("$1\r\nv\r\n", get, RD, "e299");
    /* the expired key is gone from KEYS */
    submit("keys", kv_cmd_keys, 0, "e0*", (const char *)NULL);
    ops->end_turn(&B);
    CHECK(strncmp(reply, "*0\r\n", 4) == 0);
    submit("keys", kv_cmd_keys, 0, "e2[5-9]?", (const char *)NULL);
    ops->end_turn(&B);
    CHECK(strncmp(reply, "*50\r\n", 5) == 0);
    /* a key overwritten before its expiry leaves no stale index entry */
    EXPECT("+OK\r\n", set, W, "re", "v", "PX", "10");
    EXPECT("+OK\r\n", set, W, "re", "v2");
    now_ms += 100;
    ops->cron(&B, now_ms);
    EXPECT("$2\r\nv2\r\n", get, RD, "re");

    /* RENAME */
    EXPECT("-ERR no such key\r\n", rename, W, "nokey", "x");
    EXPECT("+OK\r\n", set, W, "src", "val", "EX", "100");
    EXPECT("+OK\r\n", rename, W, "src", "src");
    EXPECT(":0\r\n", renamenx, W, "src", "src");
    EXPECT("+OK\r\n", rename, W, "src", "dst");
    EXPECT(":0\r\n", exists, RD, "src");
    EXPECT("$3\r\nval\r\n", get, RD, "dst");
    EXPECT(":100\r\n", ttl, RD, "dst");
    EXPECT("+OK\r\n", set, W, "other", "o");
    EXPECT(":0\r\n", renamenx, W, "dst", "other");
    EXPECT(":1\r\n", renamenx, W, "dst", "fresh");
    EXPECT("+OK\r\n", rename, W, "fresh", "other");
    EXPECT("$3\r\nval\r\n", get, RD, "other");
    ops->keyspace(&B, &keys, &expires);
    EXPECT(":53\r\n", dbsize, RD, "x");       /* 51 + re + other */
    CHECK(keys == 53 && expires == 51);
}

/* A hash record made by hand (collections arrive with the next issue):
 * WRONGTYPE, TYPE, DEL to the garbage queue and reclamation by cron. */
static void test_types(void)
{
    kv_store *st = B.state;
    EXPECT("+OK\r\n", flushdb, W, "SYNC");
    /* begin a turn with a harmless command, then write records in its txn */
    submit("exists", kv_cmd_exists, 0, "h", (const char *)NULL);
    void *txn = st->txn;
    CHECK(txn != NULL);
    uint64_t ver = kv_new_version(st);
    uint8_t mk[KV_MKEY_MAX], meta[KV_META_HDR + 16];
    size_t ml = kv_enc_meta_key(mk, "h", 1);
    meta[0] = KV_T_HASH;
    kv_put_u64(meta + 1, 0);
    kv_put_u64(meta + 9, ver);
    kv_put_u64(meta + 17, 100);
    CHECK(st->drv->put(txn, mk, ml, meta, sizeof meta) == FD_OK);
    for (int i = 0; i < 100; i++) {
        uint8_t sk[KV_SUBPFX_MAX + 16];
        size_t sl = kv_enc_sub_prefix(sk, (const uint8_t *)"h", 1, ver);
        sk[sl++] = KV_TAG_HASH;
        sl += (size_t)snprintf((char *)sk + sl, 16, "f%03d", i);
        CHECK(st->drv->put(txn, sk, sl, "v", 1) == FD_OK);
    }
    st->t_keys++;
    st->t_dirty = 1;
    CHECK(ops->end_turn(&B) == FD_OK);
    EXPECT("+hash\r\n", type, RD, "h");
    EXPECT("-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", get, RD, "h");
    EXPECT("-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", incr, W, "h");
    EXPECT("-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", append, W, "h", "x");
    EXPECT("-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", set, W, "h", "x", "GET");
    EXPECT("*1\r\n$-1\r\n", mget, RD, "h");
    /* SCAN TYPE filter */
    EXPECT("+OK\r\n", set, W, "s", "x");
    EXPECT("*2\r\n$1\r\n0\r\n*1\r\n$1\r\nh\r\n", scan, RD, "0", "TYPE", "hash");
    EXPECT("*2\r\n$1\r\n0\r\n*1\r\n$1\r\ns\r\n", scan, RD, "0", "TYPE", "STRING");
    /* RENAME moves the elements under the new name */
    EXPECT("+OK\r\n", rename, W, "h", "h2");
    EXPECT("+hash\r\n", type, RD, "h2");
    /* DEL is O(1): a garbage entry; cron reclaims the old elements */
    EXPECT(":1\r\n", del, W, "h2");
    EXPECT(":1\r\n", dbsize, RD, "x");
    for (int i = 0; i < 10; i++) ops->cron(&B, now_ms);
    /* nothing but the counters, 's' and no 'S'/'G' record is left */
    submit("exists", kv_cmd_exists, 0, "s", (const char *)NULL);
    kv_iter *it;
    int subs = 0, garbage = 0;
    CHECK(st->drv->iter_open(st->txn, &it) == FD_OK);
    for (int s = st->drv->seek(it, "", 0); s == FD_OK; s = st->drv->next(it)) {
        const void *k, *v; size_t kl, vl;
        st->drv->cur(it, &k, &kl, &v, &vl);
        if (((const uint8_t *)k)[0] == KV_PFX_SUB) subs++;
        if (((const uint8_t *)k)[0] == KV_PFX_GARBAGE) garbage++;
    }
    st->drv->iter_close(it);
    ops->end_turn(&B);
    CHECK(subs == 0 && garbage == 0);
    /* SET over a collection replaces it */
    EXPECT("+OK\r\n", set, W, "s", "y");
    EXPECT("+string\r\n", type, RD, "s");
}

/* Every key exactly once over a full SCAN, also with writes between calls. */
static void test_scan(void)
{
    EXPECT("+OK\r\n", flushdb, W, "SYNC");
    enum { N = 1000 };
    static unsigned char seen[N];
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < N; i++) {
        char k[32];
        snprintf(k, sizeof k, "key:%d", i);
        EXPECT("+OK\r\n", set, W, k, "v");
    }
    EXPECT("-ERR invalid cursor\r\n", scan, RD, "abc");
    EXPECT("-ERR syntax error\r\n", scan, RD, "0", "COUNT", "0");
    EXPECT("-ERR syntax error\r\n", scan, RD, "0", "FOO", "1");
    EXPECT("-ERR value is not an integer or out of range\r\n", scan, RD, "0", "COUNT", "x");
    char cursor[32] = "0";
    int calls = 0, dups = 0, bad = 0;
    do {
        submit("scan", kv_cmd_scan, 0, cursor, "COUNT", "7", (const char *)NULL);
        ops->end_turn(&B);
        calls++;
        /* parse *2 $n cursor *m {$l key} */
        const char *p = reply;
        if (strncmp(p, "*2\r\n$", 5) != 0) { bad++; break; }
        p += 5;
        int cl = atoi(p);
        p = strstr(p, "\r\n") + 2;
        memcpy(cursor, p, (size_t)cl);
        cursor[cl] = '\0';
        p += cl + 2;
        int m = atoi(p + 1);
        p = strstr(p, "\r\n") + 2;
        if (m > 7) bad++;
        for (int j = 0; j < m; j++) {
            int l = atoi(p + 1);
            p = strstr(p, "\r\n") + 2;
            int id = strncmp(p, "key:", 4) == 0 ? atoi(p + 4) : -1;
            if (id >= 0 && id < N) { if (seen[id]++) dups++; }
            p += l + 2;
        }
        if (calls == 50) {                 /* writes between calls do not disturb */
            EXPECT("+OK\r\n", set, W, "new-key", "v");
            EXPECT(":1\r\n", del, W, "key:999");
            EXPECT("+OK\r\n", set, W, "key:999", "v");
        }
    } while (strcmp(cursor, "0") != 0 && calls < 1000);
    int missing = 0;
    for (int i = 0; i < N; i++) if (!seen[i]) missing++;
    if (bad || dups || missing) fprintf(stderr, "  scan: bad %d dups %d missing %d calls %d\n", bad, dups, missing, calls);
    CHECK(bad == 0 && dups == 0 && missing == 0);
    CHECK(calls >= N / 7 && calls <= N / 7 + 3);
    /* MATCH */
    submit("scan", kv_cmd_scan, 0, "0", "MATCH", "key:99?", "COUNT", "2000", (const char *)NULL);
    ops->end_turn(&B);
    CHECK(strncmp(reply, "*2\r\n$1\r\n0\r\n*10\r\n", 15) == 0);
    /* an unknown cursor restarts rather than failing */
    submit("scan", kv_cmd_scan, 0, "123456789", "COUNT", "5", (const char *)NULL);
    ops->end_turn(&B);
    CHECK(strncmp(reply, "*2\r\n$", 5) == 0 && strstr(reply, "*5\r\n") != NULL);
}

static void test_binary_and_long(void)
{
    EXPECT("+OK\r\n", flushdb, W, "SYNC");
    /* keys and values with NUL and 0xff */
    resp_arg a[3] = { { "set", 3 }, { "k\0\xff" "b", 4 }, { "\xff\0v\0", 4 } };
    submit_args("set", kv_cmd_set, 1, 3, a);
    CHECK(ops->end_turn(&B) == FD_OK && strcmp(reply, "+OK\r\n") == 0);
    resp_arg g[2] = { { "get", 3 }, { "k\0\xff" "b", 4 } };
    submit_args("get", kv_cmd_get, 0, 2, g);
    ops->end_turn(&B);
    CHECK(memcmp(reply, "$4\r\n\xff\0v\0\r\n", 10) == 0);
    resp_arg g2[2] = { { "get", 3 }, { "k", 1 } };
    submit_args("get", kv_cmd_get, 0, 2, g2);
    ops->end_turn(&B);
    CHECK(strcmp(reply, "$-1\r\n") == 0);
    resp_arg ks[2] = { { "keys", 4 }, { "*", 1 } };
    submit_args("keys", kv_cmd_keys, 0, 2, ks);
    ops->end_turn(&B);
    CHECK(memcmp(reply, "*1\r\n$4\r\nk\0\xff" "b\r\n", 14) == 0);

    /* 600-byte keys: stored hashed, listed with their full name */
    char k1[601], k2[601], k3[601];
    memset(k1, 'a', 600); k1[600] = 0;
    memcpy(k2, k1, 601); k2[599] = 'b';
    memcpy(k3, k1, 601); k3[0] = 'c';
    EXPECT("+OK\r\n", set, W, k1, "one");
    EXPECT("+OK\r\n", set, W, k2, "two", "EX", "100");
    EXPECT("$3\r\none\r\n", get, RD, k1);
    EXPECT("$3\r\ntwo\r\n", get, RD, k2);
    EXPECT(":100\r\n", ttl, RD, k2);
    submit("keys", kv_cmd_keys, 0, "a*b", (const char *)NULL);
    ops->end_turn(&B);
    char want[700];
    snprintf(want, sizeof want, "*1\r\n$600\r\n%s\r\n", k2);
    CHECK(strcmp(reply, want) == 0);
    submit("scan", kv_cmd_scan, 0, "0", "MATCH", "a*b", (const char *)NULL);
    ops->end_turn(&B);
    snprintf(want, sizeof want, "*2\r\n$1\r\n0\r\n*1\r\n$600\r\n%s\r\n", k2);
    if (strcmp(reply, want) != 0) fprintf(stderr, "  scan long: %.60s\n", reply);
    CHECK(strcmp(reply, want) == 0);
    EXPECT("+OK\r\n", rename, W, k2, k3);
    EXPECT("$3\r\ntwo\r\n", get, RD, k3);
    EXPECT(":100\r\n", ttl, RD, k3);
    EXPECT(":0\r\n", exists, RD, k2);
    submit("randomkey", kv_cmd_randomkey, 0, (const char *)NULL);
    ops->end_turn(&B);
    CHECK(strncmp(reply, "$600\r\n", 6) == 0 || strncmp(reply, "$4\r\n", 4) == 0);
    EXPECT(":3\r\n", dbsize, RD, "x");
    EXPECT("+OK\r\n", rename, W, k3, "short");
    EXPECT("$3\r\ntwo\r\n", get, RD, "short");
    EXPECT(":2\r\n", del, W, "short", k1);

    /* a 20 MB value, then APPEND and GETRANGE on it */
    size_t big = 20u << 20;
    char *v = malloc(big + 1);
    for (size_t i = 0; i < big; i++) v[i] = (char)('a' + i % 26);
    v[big] = 0;
    resp_arg s[3] = { { "set", 3 }, { "big", 3 }, { v, big } };
    submit_args("set", kv_cmd_set, 1, 3, s);
    CHECK(last_status == FD_OK && ops->end_turn(&B) == FD_OK);
    resp_arg gb[2] = { { "get", 3 }, { "big", 3 } };
    out.len = 0;
    submit_args("get", kv_cmd_get, 0, 2, gb);
    ops->end_turn(&B);
    CHECK(out.len == big + 13 && memcmp(out.data, "$20971520\r\n", 11) == 0 &&
          memcmp(out.data + 11, v, big) == 0);
    EXPECT(":20971523\r\n", append, W, "big", "xyz");
    EXPECT("$5\r\nwxxyz\r\n", getrange, RD, "big", "-5", "-1");
    EXPECT(":20971523\r\n", strlen, RD, "big");
    free(v);
}

/* A small map: writes fail with OOM, nothing crashes, committed data stay;
 * careful mode then fails only the command that does not fit. */
static void test_map_full(void)
{
    char d2[80];
    snprintf(d2, sizeof d2, "%s/small", dir);
    close_store();
    open_store(d2, 1u << 20);                 /* 1 MB map */
    kv_store *st = B.state;
    EXPECT("+OK\r\n", set, W, "committed", "yes");
    size_t vl = 48 << 10;                      /* below the big-write check */
    char *v = malloc(64 << 10);
    memset(v, 'v', 64 << 10);

    /* Phase A: the map has room at turn start, but one turn writes more
     * than it holds: LMDB fails the whole transaction. The submit that hit
     * MAP_FULL and every later one of the turn get FD_E_OOM, end_turn
     * reports it, nothing of the turn is kept, earlier commits are. */
    CHECK(!st->careful);
    resp_out info;
    resp_out_init(&info, 2);
    ops->info(&B, &info);                     /* nosync: WRITEMAP until the map fills */
    CHECK(memmem(info.data, info.len, "lmdb_writemap:yes", 17) != NULL);
    resp_out_free(&info);
    int first_oom = -1, later_ok = 0;
    for (int j = 0; j < 30; j++) {
        char k[32];
        snprintf(k, sizeof k, "a%d", j);
        resp_arg a[3] = { { "set", 3 }, { k, strlen(k) }, { v, vl } };
        int s = submit_args("set", kv_cmd_set, 1, 3, a);
        if (s == FD_E_OOM && first_oom < 0) first_oom = j;
        if (s == FD_OK && first_oom >= 0) later_ok++;
    }
    CHECK(first_oom > 0 && later_ok == 0);
    CHECK(ops->end_turn(&B) == FD_E_OOM);
    EXPECT("$-1\r\n", get, RD, "a0");
    EXPECT("$3\r\nyes\r\n", get, RD, "committed");
    EXPECT(":1\r\n", dbsize, RD, "x");

    /* Phase B: careful mode now: in one turn, the writes that do not fit
     * fail alone with OOM, the others land and the turn commits. */
    int fails = 0, oks = 0;
    for (int j = 0; j < 30; j++) {
        char k[32];
        snprintf(k, sizeof k, "b%d", j);
        resp_arg a[3] = { { "set", 3 }, { k, strlen(k) }, { v, vl } };
        int s = submit_args("set", kv_cmd_set, 1, 3, a);
        if (s == FD_E_OOM) fails++;
        else if (s == FD_OK) oks++;
        snprintf(k, sizeof k, "small%d", j);
        if (submit("set", kv_cmd_set, 1, k, "x", (const char *)NULL) == FD_OK) oks++;
    }
    CHECK(st->careful);
    CHECK(fails > 0 && oks > 10);
    CHECK(ops->end_turn(&B) == FD_OK);
    EXPECT("$1\r\nx\r\n", get, RD, "small0");
    EXPECT("$3\r\nyes\r\n", get, RD, "committed");
    /* the counters agree with the records after the failures */
    submit("dbsize", kv_cmd_dbsize, 0, (const char *)NULL);
    ops->end_turn(&B);
    long long n = atoll(reply + 1);
    submit("keys", kv_cmd_keys, 0, "*", (const char *)NULL);
    ops->end_turn(&B);
    CHECK(n > 1 && atoll(reply + 1) == n);
    /* more turns of small writes until even they do not fit: still no crash */
    int small_fail = 0;
    for (int t = 0; t < 200 && !small_fail; t++) {
        char k[32];
        snprintf(k, sizeof k, "t%d", t);
        resp_arg a[3] = { { "set", 3 }, { k, strlen(k) }, { v, 8 << 10 } };
        if (submit_args("set", kv_cmd_set, 1, 3, a) == FD_E_OOM) small_fail = 1;
        CHECK(ops->end_turn(&B) == FD_OK);
    }
    CHECK(small_fail);
    EXPECT("$3\r\nyes\r\n", get, RD, "committed");
    /* deleting makes room again */
    EXPECT("+OK\r\n", flushdb, W, "SYNC");
    EXPECT("+OK\r\n", set, W, "after", "ok");
    EXPECT("$2\r\nok\r\n", get, RD, "after");
    resp_out_init(&info, 2);
    ops->info(&B, &info);
    CHECK(info.len > 0 && memmem(info.data, info.len, "lmdb_map_size:1048576", 21) != NULL);
    /* the MAP_FULL reopened the store without WRITEMAP, for careful mode */
    CHECK(memmem(info.data, info.len, "lmdb_writemap:no", 16) != NULL);
    CHECK(memmem(info.data, info.len, "kv_careful_mode:1", 17) != NULL);
    resp_out_free(&info);
    free(v);
    close_store();
    open_store(dir, 64u << 20);
}

/* nosync opens LMDB with WRITEMAP; past half of the map it is reopened
 * without (careful mode needs nested transactions), with no write lost. */
static int info_has(const char *what)
{
    resp_out info;
    resp_out_init(&info, 2);
    ops->info(&B, &info);
    int has = memmem(info.data, info.len, what, strlen(what)) != NULL;
    resp_out_free(&info);
    return has;
}

static void test_writemap_threshold(void)
{
    char d4[80];
    snprintf(d4, sizeof d4, "%s/wm", dir);
    close_store();
    open_store(d4, 4u << 20);                 /* 4 MB map */
    CHECK(info_has("lmdb_writemap:yes"));
    char *v = malloc(16 << 10);
    memset(v, 'w', 16 << 10);
    int t = 0;
    for (; t < 200 && info_has("lmdb_writemap:yes"); t++) {   /* 64 KB per turn */
        for (int j = 0; j < 4; j++) {
            char k[32];
            snprintf(k, sizeof k, "w%d.%d", t, j);
            resp_arg a[3] = { { "set", 3 }, { k, strlen(k) }, { v, 16 << 10 } };
            CHECK(submit_args("set", kv_cmd_set, 1, 3, a) == FD_OK);
        }
        CHECK(ops->end_turn(&B) == FD_OK);
        submit("get", kv_cmd_get, 0, "w0.0", (const char *)NULL);   /* a turn start */
        ops->end_turn(&B);
    }
    CHECK(info_has("lmdb_writemap:no"));
    CHECK(t > 20);                            /* not before ~2 MB were written */
    kv_store *st = B.state;
    CHECK(!st->careful);
    submit("dbsize", kv_cmd_dbsize, 0, (const char *)NULL);
    ops->end_turn(&B);
    CHECK(atoll(reply + 1) == 4LL * t);       /* every write survived the reopen */
    EXPECT("+OK\r\n", set, W, "after", "ok");
    EXPECT("$2\r\nok\r\n", get, RD, "after");
    free(v);
    close_store();
    open_store(dir, 64u << 20);
}

/* The proxy's cron timer can fire between a turn's submits and its
 * end_turn: expiry then runs nested in the open transaction. */
static void test_cron_in_turn(void)
{
    EXPECT("+OK\r\n", flushdb, W, "SYNC");
    EXPECT("+OK\r\n", set, W, "soon", "v", "PX", "10");
    EXPECT("+OK\r\n", set, W, "later", "v", "EX", "100");
    now_ms += 20;
    submit("set", kv_cmd_set, 1, "w1", "v", (const char *)NULL);
    ops->cron(&B, now_ms);
    submit("set", kv_cmd_set, 1, "w2", "v", (const char *)NULL);
    CHECK(ops->end_turn(&B) == FD_OK);
    EXPECT(":3\r\n", dbsize, RD, "x");
    EXPECT(":2\r\n", exists, RD, "w1", "w2");
    EXPECT(":1\r\n", exists, RD, "later");
    uint64_t keys, expires;
    ops->keyspace(&B, &keys, &expires);
    CHECK(keys == 3 && expires == 1);
    /* RESP3 replies come from the same writer */
    out.proto = 3;
    EXPECT("_\r\n", get, RD, "nokey");
    out.proto = 2;
}

/* The driver's cursor contract (seek >=, seek <=, next, prev) that the
 * collection commands will use for ranges and reverse ranges. */
static void test_driver_cursor(void)
{
    kv_store *st = B.state;
    const kv_driver *d = st->drv;
    submit("dbsize", kv_cmd_dbsize, 0, (const char *)NULL);
    void *txn = st->txn;
    CHECK(d->put(txn, "Sa", 2, "1", 1) == FD_OK);
    CHECK(d->put(txn, "Sb", 2, "2", 1) == FD_OK);
    CHECK(d->put(txn, "Sc", 2, "3", 1) == FD_OK);
    kv_iter *it;
    const void *k, *v; size_t kl, vl;
    CHECK(d->iter_open(txn, &it) == FD_OK);
    CHECK(d->seek(it, "Sbb", 3) == FD_OK && d->cur(it, &k, &kl, &v, &vl) == FD_OK && kl == 2 && !memcmp(k, "Sc", 2));
    CHECK(d->seek_le(it, "Sbb", 3) == FD_OK && d->cur(it, &k, &kl, &v, &vl) == FD_OK && !memcmp(k, "Sb", 2));
    CHECK(d->seek_le(it, "Sa", 2) == FD_OK && d->cur(it, &k, &kl, &v, &vl) == FD_OK && !memcmp(k, "Sa", 2));
    CHECK(d->seek_le(it, "\xff", 1) == FD_OK && d->cur(it, &k, &kl, &v, &vl) == FD_OK && !memcmp(k, "Sc", 2));
    CHECK(d->prev(it) == FD_OK && d->cur(it, &k, &kl, &v, &vl) == FD_OK && !memcmp(k, "Sb", 2) && vl == 1 && !memcmp(v, "2", 1));
    CHECK(d->next(it) == FD_OK && d->next(it) == FD_NOTFOUND);
    CHECK(d->seek(it, "T", 1) == FD_NOTFOUND);
    CHECK(d->seek_le(it, "", 0) == FD_NOTFOUND);
    CHECK(d->get(txn, "Sz", 2, &v, &vl) == FD_NOTFOUND);
    CHECK(d->del(txn, "Sz", 2) == FD_NOTFOUND);
    d->iter_close(it);
    CHECK(d->del(txn, "Sa", 2) == FD_OK && d->del(txn, "Sb", 2) == FD_OK && d->del(txn, "Sc", 2) == FD_OK);
    CHECK(ops->end_turn(&B) == FD_OK);
}

/* A store stamped with another format is refused at open, with a reason;
 * FLUSHDB keeps the stamp. */
static void test_format_stamp(void)
{
    char d3[80];
    snprintf(d3, sizeof d3, "%s/format", dir);
    close_store();
    open_store(d3, 8u << 20);
    EXPECT("+OK\r\n", flushdb, W, "SYNC");
    close_store();
    open_store(d3, 8u << 20);                 /* still format 1 after FLUSHDB */
    kv_store *st = B.state;
    submit("dbsize", kv_cmd_dbsize, 0, (const char *)NULL);
    uint8_t v[8];
    kv_put_u64(v, 99);
    CHECK(st->drv->put(st->txn, "Cformat", 7, v, 8) == FD_OK);
    CHECK(ops->end_turn(&B) == FD_OK);
    close_store();
    fd_backend b = { .ops = ops };
    fd_lmdb_settings cfg_ls = { .map_size = 8u << 20 };
    fd_backend_config cfg = { .dir = d3, .options = &cfg_ls };
    char err[256] = "";
    CHECK(ops->open(&b, &cfg, err, sizeof err) == FD_E_CORRUPT && strstr(err, "format 99") != NULL);
    open_store(dir, 64u << 20);
}

static void test_restart(void)
{
    EXPECT("+OK\r\n", flushdb, W, "SYNC");
    EXPECT("+OK\r\n", set, W, "p1", "v1");
    EXPECT("+OK\r\n", set, W, "p2", "v2", "EX", "1000");
    EXPECT(":5\r\n", incrby, W, "p3", "5");
    /* one turn with several writes, committed by end_turn */
    submit("set", kv_cmd_set, 1, "p4", "v4", (const char *)NULL);
    submit("set", kv_cmd_set, 1, "p5", "v5", (const char *)NULL);
    CHECK(B.turn_writes == 2);
    CHECK(ops->end_turn(&B) == FD_OK && B.turn_writes == 0);
    /* a second open of the same folder is refused (LMDB's writer lock
     * would otherwise block the loop) */
    fd_backend b2 = { .ops = ops };
    fd_lmdb_settings cfg2_ls = { .map_size = 64u << 20 };
    fd_backend_config cfg2 = { .dir = dir, .options = &cfg2_ls };
    char err[256] = "";
    CHECK(ops->open(&b2, &cfg2, err, sizeof err) != FD_OK && strstr(err, "in use") != NULL);
    /* an uncommitted turn is lost at close */
    submit("set", kv_cmd_set, 1, "lost", "v", (const char *)NULL);
    close_store();
    open_store(dir, 64u << 20);
    EXPECT("$2\r\nv1\r\n", get, RD, "p1");
    EXPECT(":1000\r\n", ttl, RD, "p2");
    EXPECT("$1\r\n5\r\n", get, RD, "p3");
    EXPECT("$2\r\nv5\r\n", get, RD, "p5");
    EXPECT("$-1\r\n", get, RD, "lost");
    EXPECT(":5\r\n", dbsize, RD, "x");
    uint64_t keys, expires;
    ops->keyspace(&B, &keys, &expires);
    CHECK(keys == 5 && expires == 1);
}

static void test_registry(void)
{
    CHECK(fd_backend_find("lmdb") != NULL);
    CHECK(fd_backend_find("nope") == NULL);
    CHECK(strstr(fd_backend_names(), "lmdb") != NULL);
    CHECK(strcmp(fd_strerror(FD_OK), "OK") == 0);
    CHECK(strcmp(fd_strerror(FD_E_WRONGTYPE),
                 "WRONGTYPE Operation against a key holding the wrong kind of value") == 0);
    CHECK(fd_strerror(9999) != NULL);
    /* a folder that cannot be created is named in the error */
    fd_backend b = { .ops = fd_backend_find("lmdb") };
    fd_lmdb_settings cfg_ls = { .map_size = 1 << 20 };
    fd_backend_config cfg = { .dir = "/proc/frontdoor-no/x", .options = &cfg_ls };
    char err[256] = "";
    CHECK(b.ops->open(&b, &cfg, err, sizeof err) != FD_OK && strstr(err, "/proc/frontdoor-no/x") != NULL);
}

int main(void)
{
    test_doubles();
    test_integers();
    test_keys_encoding();
    test_registry();

    ops = fd_backend_find("lmdb");
    if (!ops) { fprintf(stderr, "lmdb backend not built\n"); return 1; }
    if (harness_begin(dir, sizeof dir, "test_kv") != 0) return 1;
    open_store(dir, 64u << 20);
    test_strings();
    check_consistency("test_strings");
    test_keys();
    check_consistency("test_keys");
    test_types();
    check_consistency("test_types");
    test_scan();
    check_consistency("test_scan");
    test_binary_and_long();
    check_consistency("test_binary_and_long");
    test_cron_in_turn();
    test_driver_cursor();
    check_consistency("test_cron_in_turn");
    test_restart();
    test_format_stamp();
    check_consistency("test_restart");
    test_map_full();
    test_writemap_threshold();
    close_store();
    return harness_end(dir);
}
