/* test_resp_scan.c — reply boundaries for every RESP2/RESP3 type, fed whole,
 * byte by byte and in pieces; errors; nesting limit. */
#include "test.h"
#include "protocol/resp_scan.h"

#include <stdlib.h>
#include <string.h>
#include "protocol/resp.h"

/* The scanner before its fast header path (one memchr per header line,
 * then resp_str2ll): the reference the fast path must agree with. */
static long long ref_scan(resp_scanner *s, const char *buf, size_t len) {
    if (s->err) return -1;
    while (s->pos < len) {
        size_t start = s->pos;
        const char *nl = memchr(buf + start, '\n', len - start);
        if (!nl) return 0;
        size_t eol = (size_t)(nl - buf);
        if (eol == start || buf[eol - 1] != '\r') { s->err = "crlf"; return -1; }
        size_t cr = eol - 1, next = eol + 1;
        char type = buf[start];
        long long n;
        switch (type) {
        case '+': case '-': case ':': case '_': case ',': case '#': case '(':
            s->pos = next; s->outstanding--; break;
        case '$': case '!': case '=':
            if (resp_str2ll(buf + start + 1, cr - start - 1, &n) || n < -1 || (n == -1 && type != '$')) { s->err = "bulk"; return -1; }
            if (n >= 0) { if (len - next < (size_t)n + 2) return 0; next += (size_t)n + 2; }
            s->pos = next; s->outstanding--; break;
        case '*': case '~': case '>': case '%': case '|':
            if (resp_str2ll(buf + start + 1, cr - start - 1, &n) || n < -1 || (n == -1 && type != '*') || n > RESP_SCAN_MAX_ELEMENTS) { s->err = "agg"; return -1; }
            s->pos = next;
            if (type == '%' || type == '|') n *= 2;
            if (type == '|') { if (n > RESP_SCAN_MAX_OUTSTANDING - s->outstanding) { s->err = "many"; return -1; } s->outstanding += n; break; }
            if (n > 0) { if (n > RESP_SCAN_MAX_OUTSTANDING - s->outstanding) { s->err = "many"; return -1; } s->outstanding += n; }
            s->outstanding--; break;
        default:
            s->err = "type"; return -1;
        }
        if (s->outstanding == 0) { long long t = (long long)s->pos; s->pos = 0; s->outstanding = 1; return t; }
    }
    return 0;
}

static unsigned rnd_state = 12345;
static unsigned rnd(unsigned n) { rnd_state = rnd_state * 1103515245u + 12345u; return (rnd_state >> 8) % n; }

/* Random streams of near-valid replies, whose headers take the forms the
 * fast path must hand to the general one (leading zeros, "-0", a sign,
 * spaces, 19+ digits, a bare CR): the scanner and ref_scan agree on every
 * result, fed in random pieces. */
static void fast_path_agrees(void) {
    static const char *nums[] = {"0", "1", "2", "3", "10", "05", "-0", "-1", "-2", "+3", " 3", "3 ", "",
                                 "123456789012345678", "1234567890123456789", "99999999999999999999", "1\r", "2x"};
    static const char types[] = "$*%~>|!=+:-_#,(";
    char buf[4096];
    for (int round = 0; round < 20000; round++) {
        size_t n = 0;
        int parts = 1 + (int)rnd(12);
        for (int i = 0; i < parts && n < sizeof buf - 64; i++) {
            char t = types[rnd(sizeof types - 1)];
            const char *num = nums[rnd(sizeof nums / sizeof nums[0])];
            if (strchr("$!=", t) && rnd(2)) {     /* a bulk with its payload */
                int len = (int)rnd(6);
                n += (size_t)snprintf(buf + n, sizeof buf - n, "%c%d\r\n", t, len);
                for (int j = 0; j < len; j++) buf[n++] = "ab\r\n"[rnd(4)];
                memcpy(buf + n, "\r\n", 2);
                n += 2;
            } else {
                n += (size_t)snprintf(buf + n, sizeof buf - n, "%c%s\r\n", t, strchr("+:-_#,(", t) ? "x" : num);
            }
        }
        resp_scanner a, b;
        resp_scanner_init(&a);
        resp_scanner_init(&b);
        size_t start = 0, avail = 0;
        for (;;) {
            long long ra = resp_scan_reply(&a, buf + start, avail - start);
            long long rb = ref_scan(&b, buf + start, avail - start);
            CHECK((ra < 0) == (rb < 0) && (ra < 0 || ra == rb));
            if (!((ra < 0) == (rb < 0) && (ra < 0 || ra == rb))) {
                fprintf(stderr, "  fast %lld ref %lld on %.*s\n", ra, rb, (int)n, buf);
                return;
            }
            if (ra < 0) break;
            if (ra > 0) { start += (size_t)ra; continue; }
            if (avail == n) break;
            avail += 1 + rnd(9);
            if (avail > n) avail = n;
        }
    }
}

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
    fast_path_agrees();
    return TEST_DONE();
}
