/* test_resp_scan.c — reply boundaries for every RESP2/RESP3 type, fed whole,
 * byte by byte and in pieces; errors; nesting limit. */
#include "test.h"
#include "protocol/resp_scan.h"

#include <stdlib.h>

/* Feed `s` in pieces of `step` bytes (0 = whole); return the lengths found. */
static int scan_all(const char *s, size_t n, size_t step, long long *lens, int max) {
    resp_scanner sc;
    resp_scanner_init(&sc);
    size_t start = 0, avail = step ? 0 : n;
    int k = 0;
    for (;;) {
        long long r = resp_scan_reply(&sc, s + start, avail - start);
        if (r < 0) return -1;
        if (r > 0) {
            if (k < max) lens[k++] = r;
            start += (size_t)r;
            continue;
        }
        if (avail == n) break;
        avail += step;
        if (avail > n) avail = n;
    }
    return start == n ? k : -2;   /* -2: trailing incomplete bytes */
}

static void expect(const char *s, size_t n, int count, const long long *want) {
    size_t steps[] = {0, 1, 2, 3, 7, 64};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        long long lens[32];
        int k = scan_all(s, n, steps[i], lens, 32);
        CHECK(k == count);
        if (k != count) fprintf(stderr, "  case %.*s step %zu: %d\n", (int)n, s, steps[i], k);
        for (int j = 0; j < count && j < k; j++) CHECK(lens[j] == want[j]);
    }
}

#define EXPECT1(lit) do { long long w[1] = {sizeof(lit) - 1}; expect(lit, sizeof(lit) - 1, 1, w); } while (0)

int main(void) {
    EXPECT1("+OK\r\n");
    EXPECT1("-ERR wrong\r\n");
    EXPECT1(":-42\r\n");
    EXPECT1("$-1\r\n");
    EXPECT1("$0\r\n\r\n");
    EXPECT1("$5\r\na\r\nbc\r\n");               /* CRLF inside a bulk */
    EXPECT1("*-1\r\n");
    EXPECT1("*0\r\n");
    EXPECT1("*2\r\n$1\r\na\r\n*1\r\n:1\r\n");
    EXPECT1("_\r\n");
    EXPECT1(",3.14\r\n");
    EXPECT1(",inf\r\n");
    EXPECT1("#t\r\n");
    EXPECT1("(12345678901234567890\r\n");
    EXPECT1("!8\r\nSYNTAX x\r\n");
    EXPECT1("=8\r\ntxt:abcd\r\n");
    EXPECT1("%2\r\n+a\r\n:1\r\n+b\r\n*2\r\n:1\r\n:2\r\n");
    EXPECT1("~3\r\n+a\r\n+b\r\n+c\r\n");
    EXPECT1(">2\r\n+message\r\n+x\r\n");
    EXPECT1("|1\r\n+ttl\r\n:3\r\n$2\r\nhi\r\n");             /* attribute, then the value */
    EXPECT1("*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n");         /* attribute inside an array */
    EXPECT1("*3\r\n%0\r\n~0\r\n*0\r\n");

    /* several replies back to back */
    const char many[] = "+OK\r\n:1\r\n$3\r\nfoo\r\n*1\r\n$-1\r\n";
    long long w[4] = {5, 4, 9, 9};
    expect(many, sizeof many - 1, 4, w);

    /* incomplete stays incomplete */
    long long lens[4];
    CHECK(scan_all("*2\r\n:1\r\n", 8, 0, lens, 4) == -2);
    CHECK(scan_all("$10\r\nabc", 8, 0, lens, 4) == -2);

    /* errors */
    CHECK(scan_all("?x\r\n", 4, 0, lens, 4) == -1);
    CHECK(scan_all("$abc\r\n", 6, 0, lens, 4) == -1);
    CHECK(scan_all("*-2\r\n", 5, 0, lens, 4) == -1);
    CHECK(scan_all("+OK\n", 4, 0, lens, 4) == -1);
    CHECK(scan_all("%-1\r\n", 5, 0, lens, 4) == -1);

    /* any depth: Redis cuts a self-referencing Lua table at its own depth,
     * deeper than any fixed limit; a proxy passes it on (issue 25) */
    {
        int levels = 100000;
        size_t cap = (size_t)levels * 4 + 64;
        char *deep = malloc(cap);
        size_t n = 0;
        for (int i = 0; i < levels; i++) { memcpy(deep + n, "*1\r\n", 4); n += 4; }
        memcpy(deep + n, ":1\r\n+OK\r\n", 9); n += 9;
        long long two[2];
        CHECK(scan_all(deep, n, 0, two, 2) == 2 && two[0] == (long long)n - 5 && two[1] == 5);
        CHECK(scan_all(deep, n, 4096, two, 2) == 2 && two[0] == (long long)n - 5);
        CHECK(scan_all(deep, n - 9, 0, two, 2) == -2);          /* the innermost value missing */
        n = 0;                                                   /* deep maps and attributes too */
        for (int i = 0; i < 1000; i++) { memcpy(deep + n, "%1\r\n|1\r\n+a\r\n+b\r\n+k\r\n", 20); n += 20; }
        memcpy(deep + n, ":1\r\n", 4); n += 4;
        CHECK(scan_all(deep, n, 0, two, 2) == 1 && two[0] == (long long)n);
        free(deep);
    }
    /* an aggregate may announce at most RESP_SCAN_MAX_ELEMENTS (the counter
     * cannot overflow: it grows by at most that per header line) */
    CHECK(scan_all("*1099511627776\r\n", 16, 0, lens, 4) == -2);
    CHECK(scan_all("*1099511627777\r\n", 16, 0, lens, 4) == -1);

    /* a 1 MB bulk fed in 16 KB pieces */
    size_t big = 1 << 20;
    char *b = malloc(big + 64);
    int h = snprintf(b, 64, "$%zu\r\n", big);
    memset(b + h, 'x', big);
    memcpy(b + h + big, "\r\n", 2);
    long long one[1];
    CHECK(scan_all(b, (size_t)h + big + 2, 16384, one, 1) == 1 && one[0] == (long long)(h + big + 2));
    free(b);
    return TEST_DONE();
}
