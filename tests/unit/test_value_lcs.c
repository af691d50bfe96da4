/* test_value_lcs.c — storage/value/lcs.c against a real redis-server 7.0:
 * LCS with LEN, IDX, MINMATCHLEN, WITHMATCHLEN, in RESP2 and RESP3, on
 * fixed cases (Redis's documentation example, empty and missing keys, binary
 * bytes, errors in Redis's order, the proto-max-bulk-len limit on the
 * table) and on random strings over small alphabets. */
#include "value_oracle.h"

static unsigned long long rng = 0x2545f4914f6cdd1dULL;
static unsigned long long rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static const char *const opts[] = {
    "", "LEN", "IDX", "IDX WITHMATCHLEN", "IDX MINMATCHLEN 2", "IDX MINMATCHLEN 4 WITHMATCHLEN",
    "WITHMATCHLEN", "MINMATCHLEN 3", "idx minmatchlen -5 withmatchlen", "len minmatchlen 2",
    "IDX MINMATCHLEN 1 MINMATCHLEN 0", NULL,
};

static void fixed(void)
{
    CHECK(same(0, "SET k1 ohmytext"));
    CHECK(same(0, "SET k2 mynewtext"));
    CHECK(same(0, "SET one a"));
    CHECK(same(0, "LPUSH lst x"));
    resp_arg set[3] = { { (char *)"SET", 3 }, { (char *)"empty", 5 }, { (char *)"", 0 } };
    CHECK(same_v(3, set, 0));
    resp_arg setb[3] = { { (char *)"SET", 3 }, { (char *)"bin", 3 }, { (char *)"a\x00\r\nb\xff\x00", 7 } };
    CHECK(same_v(3, setb, 0));
    resp_arg setc[3] = { { (char *)"SET", 3 }, { (char *)"bin2", 4 }, { (char *)"\x00\xff\r\nab", 6 } };
    CHECK(same_v(3, setc, 0));
    const char *pairs[][2] = { { "k1", "k2" }, { "k2", "k1" }, { "k1", "k1" }, { "k1", "nokey" },
                               { "nokey", "nokey" }, { "empty", "k1" }, { "one", "k1" }, { "bin", "bin2" },
                               { "one", "one" } };
    for (size_t p = 0; p < sizeof pairs / sizeof *pairs; p++)
        for (int o = 0; opts[o]; o++) CHECK(same(1, "LCS %s %s %s", pairs[p][0], pairs[p][1], opts[o]));
    /* errors: the keys' type first, then the options in order, then LEN+IDX */
    const char *errs[] = {
        "LCS lst k1", "LCS k1 lst", "LCS lst nokey LEN IDX", "LCS k1 lst foo", "LCS k1 k2 LEN IDX",
        "LCS k1 k2 IDX LEN", "LCS k1 k2 LEN IDX foo", "LCS k1 k2 MINMATCHLEN", "LCS k1 k2 MINMATCHLEN x",
        "LCS k1 k2 MINMATCHLEN x LEN IDX", "LCS k1 k2 foo", "LCS k1 k2 IDX foo", "LCS nokey k2 len idx",
        "LCS k1 k2 MINMATCHLEN 9223372036854775808", "LCS k1 k2 MINMATCHLEN -9223372036854775808 IDX",
    };
    for (size_t i = 0; i < sizeof errs / sizeof *errs; i++) CHECK(same(1, "%s", errs[i]));

    /* the table is limited by proto-max-bulk-len (1 MB: 600 x 600 is over) */
    static char big[601];
    memset(big, 'a', 600);
    resp_arg setbig[3] = { { (char *)"SET", 3 }, { (char *)"big", 3 }, { big, 600 } };
    CHECK(same_v(3, setbig, 0));
    CHECK(or_cmd(or_fd2, "CONFIG SET proto-max-bulk-len 1mb") == 0);
    m_max_bulk = 1024 * 1024;
    CHECK(same(1, "LCS big big LEN"));
    CHECK(same(1, "LCS big k1 LEN"));
    CHECK(or_cmd(or_fd2, "CONFIG SET proto-max-bulk-len 512mb") == 0);
    m_max_bulk = 512LL * 1024 * 1024;
    CHECK(same(1, "LCS big big LEN"));
    CHECK(same(1, "LCS big k1 IDX WITHMATCHLEN"));
}

static void randomised(void)
{
    char a[200], b[200];
    int bad = 0;
    for (int it = 0; it < 1500 && bad < 5; it++) {
        int alpha = 2 + (int)(rnd() % 4);
        size_t al = rnd() % 60, bl = rnd() % 60;
        if (rnd() % 10 == 0) { al = rnd() % 200; bl = rnd() % 200; }
        for (size_t i = 0; i < al; i++) a[i] = (char)('a' + rnd() % alpha);
        for (size_t i = 0; i < bl; i++) b[i] = (char)('a' + rnd() % alpha);
        resp_arg sa[3] = { { (char *)"SET", 3 }, { (char *)"ra", 2 }, { a, al } };
        resp_arg sb[3] = { { (char *)"SET", 3 }, { (char *)"rb", 2 }, { b, bl } };
        CHECK(same_v(3, sa, 0));
        CHECK(same_v(3, sb, 0));
        int ok = same(1, "LCS ra rb %s", opts[rnd() % 11]);
        if (!ok) bad++;
        CHECK(ok);
    }
}

int main(void)
{
    if (oracle_start() != 0) { CHECK(0); oracle_stop(); return TEST_DONE(); }
    fixed();
    randomised();
    oracle_stop();
    m_reset();
    return TEST_DONE();
}
