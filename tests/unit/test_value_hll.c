/* test_value_hll.c — storage/value/hll.c against a real redis-server 7.0:
 * the stored bytes (GET) after PFADD of 1, 100, 5000 and 100000 elements
 * (sparse, the sparse -> dense promotion at hll-sparse-max-bytes, dense),
 * PFCOUNT (cached and recomputed; one key and several), PFMERGE of sparse
 * and dense values, a smaller hll-sparse-max-bytes, and the errors on
 * values that are not HLLs or are corrupt — every reply byte for byte. */
#include "value_oracle.h"

static char  elebuf[600][24];
static resp_arg bargv[604];

/* PFADD key e<from>..e<to-1> (prefix p) as one command, compared. */
static int pfadd_batch(const char *key, const char *p, int from, int to)
{
    int argc = 0;
    bargv[argc++] = (resp_arg){ (char *)"PFADD", 5 };
    bargv[argc++] = (resp_arg){ (char *)key, strlen(key) };
    for (int i = from; i < to; i++) {
        int n = snprintf(elebuf[argc], sizeof elebuf[argc], "%s%d", p, i);
        bargv[argc] = (resp_arg){ elebuf[argc], (size_t)n };
        argc++;
    }
    return same_v(argc, bargv, 0);
}

/* Add n elements in batches of b, comparing every reply, and the stored
 * bytes after every batch when each is set. Returns mismatches. */
static int fill(const char *key, const char *p, int n, int b, int each)
{
    int bad = 0;
    for (int i = 0; i < n; i += b) {
        int to = i + b < n ? i + b : n;
        if (!pfadd_batch(key, p, i, to)) bad++;
        if (each && !same_value(key)) bad++;
        if (bad > 3) break;
    }
    return bad;
}

static int is_dense(const char *key)
{
    resp_arg k = { (char *)key, strlen(key) };
    mkey *m = m_find(&k, 0);
    return m && m->len == FD_HLL_DENSE_SIZE && m->v[4] == 0;
}

static void growth(void)
{
    /* 1 element: the 18-byte empty sparse value, one VAL opcode split in */
    CHECK(fill("h1", "a", 1, 1, 1) == 0);
    CHECK(same(1, "PFCOUNT h1"));
    CHECK(same_value("h1"));   /* the cache is now written in the value */
    CHECK(same(0, "PFADD h1 a0"));   /* no register changes: :0, cache kept */
    CHECK(same_value("h1"));
    CHECK(same(0, "PFADD h1"));
    CHECK(same(0, "PFADD hnew"));    /* created: :1 */
    CHECK(same_value("hnew"));
    CHECK(same(1, "PFCOUNT hnew"));

    /* 100 elements: still sparse, adjacent VAL opcodes merging */
    CHECK(fill("h100", "b", 100, 7, 1) == 0);
    CHECK(same(1, "PFCOUNT h100"));
    CHECK(same_value("h100"));
    CHECK(!is_dense("h100"));

    /* 5000 elements: promoted to dense past 3000 bytes; the bytes are
     * compared after every batch, so the promotion happens at the same
     * element as in Redis */
    CHECK(fill("h5k", "c", 5000, 50, 1) == 0);
    CHECK(is_dense("h5k"));
    CHECK(same(1, "PFCOUNT h5k"));
    CHECK(same_value("h5k"));
    /* a PFCOUNT between adds: the cached count's bytes stay, the top bit
     * marks them stale */
    CHECK(fill("h5k", "c", 5100, 100, 1) == 0);
    CHECK(same(1, "PFCOUNT h5k"));

    /* 100000 elements, dense */
    CHECK(fill("h100k", "d", 100000, 500, 0) == 0);
    CHECK(same_value("h100k"));
    CHECK(same(1, "PFCOUNT h100k"));
    CHECK(same_value("h100k"));

    /* binary elements of every tail length of the hash (0..17 bytes) */
    char e[32];
    for (int l = 0; l <= 17; l++) {
        for (int i = 0; i < l; i++) e[i] = (char)(0xf0 + i * 7 + l);
        resp_arg argv[3] = { { (char *)"PFADD", 5 }, { (char *)"hbin", 4 }, { e, (size_t)l } };
        CHECK(same_v(3, argv, 0));
    }
    CHECK(same_value("hbin"));
    CHECK(same(1, "PFCOUNT hbin"));
}

static void merges(void)
{
    CHECK(fill("s1", "x", 300, 100, 0) == 0);
    CHECK(fill("s2", "y", 200, 100, 0) == 0);
    CHECK(fill("s3", "x", 150, 150, 0) == 0);   /* overlaps s1 */
    /* sparse + sparse into a new key: stays sparse */
    CHECK(same(0, "PFMERGE m1 s1 s2"));
    CHECK(same_value("m1"));
    CHECK(!is_dense("m1"));
    CHECK(same(1, "PFCOUNT m1"));
    /* into an existing sparse dest */
    CHECK(same(0, "PFMERGE s3 s2 nokey"));
    CHECK(same_value("s3"));
    /* sparse + dense: dense */
    CHECK(same(0, "PFMERGE m2 s1 h5k"));
    CHECK(same_value("m2"));
    CHECK(is_dense("m2"));
    CHECK(same(1, "PFCOUNT m2"));
    /* dense dest, sparse sources */
    CHECK(same(0, "PFMERGE h5k s1 s2 s3"));
    CHECK(same_value("h5k"));
    /* sparse dest with a valid cache, merged with many sparse ones until the
     * sparse size limit promotes it during the merge */
    CHECK(fill("s4", "z", 700, 100, 0) == 0);
    CHECK(same(1, "PFCOUNT s4"));
    CHECK(fill("s5", "w", 700, 100, 0) == 0);
    CHECK(same(0, "PFMERGE s4 s5 s1 s2"));
    CHECK(same_value("s4"));
    CHECK(is_dense("s4"));
    CHECK(same(0, "PFMERGE only"));
    CHECK(same_value("only"));
    CHECK(same(0, "PFMERGE only"));
    CHECK(same_value("only"));
    /* several keys */
    CHECK(same(1, "PFCOUNT s1 s2"));
    CHECK(same(1, "PFCOUNT s1 h100k nokey s3"));
    CHECK(same(1, "PFCOUNT nokey nokey2"));
    CHECK(same(1, "PFCOUNT h100k h5k"));
    CHECK(same_value("s1"));   /* PFCOUNT of several keys stores nothing */
}

static void errors(void)
{
    CHECK(same(0, "LPUSH lst a"));
    CHECK(same(0, "SET str foo"));
    CHECK(same(0, "SET str16 HYLLxxxxxxxxxxxxxxxxxxxxxxx"));   /* encoding 'x' */
    CHECK(same(0, "PFADD lst a"));
    CHECK(same(0, "PFADD str a"));
    CHECK(same(0, "PFADD str16 a"));
    CHECK(same(1, "PFCOUNT lst"));
    CHECK(same(1, "PFCOUNT str"));
    CHECK(same(1, "PFCOUNT s1 str"));
    CHECK(same(1, "PFCOUNT s1 lst"));
    CHECK(same(0, "PFMERGE str s1"));
    CHECK(same(0, "PFMERGE s1 lst"));
    CHECK(same(0, "PFMERGE m3 s1 str"));
    CHECK(same(1, "PFCOUNT m3"));

    /* hand-made values: dense of the wrong length, sparse that covers too
     * few or too many registers, a VAL past the end */
    static const struct { const char *key; const char *v; size_t n; } bad[] = {
        { "dshort", "HYLL\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x00\x00", 18 },
        { "sfew",   "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\x00", 18 },
        { "smany",  "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff\x7f\xff", 20 },
        { "sval",   "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xfe\x83", 19 },
        { "scache", "HYLL\x01\x00\x00\x00\x2a\x00\x00\x00\x00\x00\x00\x00\x7f\x00", 18 },
        { "shdr",   "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80", 16 },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        resp_arg set[3] = { { (char *)"SET", 3 }, { (char *)bad[i].key, strlen(bad[i].key) },
                            { (char *)bad[i].v, bad[i].n } };
        CHECK(same_v(3, set, 0));
        CHECK(same(0, "PFCOUNT %s", bad[i].key));
        CHECK(same(0, "PFCOUNT %s s1", bad[i].key));
        CHECK(same(0, "PFMERGE m4 %s", bad[i].key));
        CHECK(same(0, "PFADD %s a5", bad[i].key));   /* one element: nothing is half-applied */
        CHECK(same_value(bad[i].key));
    }
    /* a value copied from Redis keeps working (it was SET byte for byte) */
    CHECK(or_cmd(or_fd2, "GET h100") == 0);
    resp_arg copy[3] = { { (char *)"SET", 3 }, { (char *)"copied", 6 }, { NULL, 0 } };
    char *nl = memchr(or_buf, '\n', or_len);
    copy[2].ptr = nl + 1;
    copy[2].len = (size_t)atol(or_buf + 1);
    char *val = malloc(copy[2].len);
    memcpy(val, copy[2].ptr, copy[2].len);
    copy[2].ptr = val;
    CHECK(same_v(3, copy, 0));
    free(val);
    CHECK(same(0, "PFADD copied q1 q2 q3"));
    CHECK(same(1, "PFCOUNT copied"));
    CHECK(same_value("copied"));
}

static void small_sparse_limit(void)
{
    CHECK(or_cmd(or_fd2, "CONFIG SET hll-sparse-max-bytes 200") == 0);
    m_sparse_max = 200;
    CHECK(fill("t1", "t", 400, 10, 1) == 0);
    CHECK(is_dense("t1"));
    CHECK(fill("t2", "u", 60, 10, 1) == 0);
    CHECK(fill("t3", "v", 60, 10, 1) == 0);
    CHECK(same(0, "PFMERGE t2 t3"));
    CHECK(same_value("t2"));
    CHECK(or_cmd(or_fd2, "CONFIG SET hll-sparse-max-bytes 3000") == 0);
    m_sparse_max = 0;
}

int main(void)
{
    if (oracle_start() != 0) { CHECK(0); oracle_stop(); return TEST_DONE(); }
    growth();
    merges();
    errors();
    small_sparse_limit();
    oracle_stop();
    m_reset();
    return TEST_DONE();
}
