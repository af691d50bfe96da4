/* test_resp.c — unit tests for protocol/: the request parser (errors and
 * limits as Redis 7.0, modelled on Redis's tests/unit/protocol.tcl), split
 * feeding, the reply writer in RESP2 and RESP3, and the number/glob helpers. */
#include "protocol/resp.h"
#include "tests/unit/test.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* ------------------------------------------------------------ harness */

/* A growable transcript of what the parser produced: "C<argc>" then
 * "<len>:<bytes>" per argument, "E" for an empty command, "!<error>". */
typedef struct {
    char  *s;
    size_t len, cap;
} tbuf;

static void tput(tbuf *t, const void *p, size_t n) {
    if (t->len + n + 1 > t->cap) {
        size_t c = t->cap ? t->cap : 256;
        while (c < t->len + n + 1) c *= 2;
        t->s = realloc(t->s, c);
        t->cap = c;
    }
    memcpy(t->s + t->len, p, n);
    t->len += n;
    t->s[t->len] = '\0';
}
static void tputs(tbuf *t, const char *s) { tput(t, s, strlen(s)); }

static uint64_t rng_state = 88172645463325252ULL;
static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

enum { SPLIT_WHOLE = 0, SPLIT_BYTES = 1, SPLIT_RANDOM = 2 };

/* Feed in[0..n) to a fresh parser the way a connection would: bytes arrive
 * in chunks (whole, byte by byte, or random sizes), the unparsed rest is
 * moved to a freshly allocated buffer after every chunk (so stored offsets,
 * not pointers, must survive), and parsing stops at an error. Returns the
 * transcript (caller frees .s). */
static tbuf run(const char *in, size_t n, int mode, int unauth) {
    tbuf t = {0};
    resp_parser p;
    resp_parser_init(&p, 0);
    p.unauth = unauth;
    char *buf = NULL;
    size_t blen = 0, fed = 0;
    int dead = 0;
    tputs(&t, "");
    while (fed < n && !dead) {
        size_t chunk = mode == SPLIT_WHOLE ? n - fed : mode == SPLIT_BYTES ? 1 : 1 + rng() % 37;
        if (chunk > n - fed) chunk = n - fed;
        char *nb = malloc(blen + chunk + 1);
        if (blen) memcpy(nb, buf, blen);
        memcpy(nb + blen, in + fed, chunk);
        free(buf);
        buf = nb;
        blen += chunk;
        fed += chunk;
        size_t start = 0;
        for (;;) {
            size_t consumed = 99;
            int rc = resp_parse(&p, buf + start, blen - start, &consumed);
            if (rc == RESP_INCOMPLETE) {
                if (consumed != 0) tputs(&t, "?consumed");
                break;
            }
            if (rc == RESP_ERROR) {
                tputs(&t, "!");
                tputs(&t, resp_parser_error(&p));
                dead = 1;
                break;
            }
            if (consumed == 0 || consumed > blen - start) tputs(&t, "?badconsumed");
            if (rc == RESP_EMPTY) {
                tputs(&t, "E");
            } else {
                char hdr[32];
                snprintf(hdr, sizeof hdr, "C%d", p.argc);
                tputs(&t, hdr);
                for (int i = 0; i < p.argc; i++) {
                    if (p.argv[i].ptr < buf + start || p.argv[i].ptr + p.argv[i].len > buf + start + consumed)
                        tputs(&t, "?outside");
                    snprintf(hdr, sizeof hdr, "|%zu:", p.argv[i].len);
                    tputs(&t, hdr);
                    tput(&t, p.argv[i].ptr, p.argv[i].len);
                }
            }
            start += consumed;
        }
        memmove(buf, buf + start, blen - start);
        blen -= start;
    }
    free(buf);
    resp_parser_free(&p);
    return t;
}

/* Parse `in` whole, byte by byte and in random splits; all three must give
 * the transcript `want`. */
static int parses_as(const char *in, size_t n, int unauth, const char *want, size_t wlen) {
    int ok = 1;
    for (int mode = 0; mode < 3; mode++) {
        int reps = mode == SPLIT_RANDOM ? 5 : 1;
        for (int r = 0; r < reps; r++) {
            tbuf t = run(in, n, mode, unauth);
            if (t.len != wlen || memcmp(t.s, want, wlen) != 0) {
                fprintf(stderr, "  mode %d: got      \"%.*s\"\n          expected \"%.*s\"\n", mode,
                        (int)t.len, t.s, (int)wlen, want);
                ok = 0;
            }
            free(t.s);
        }
    }
    return ok;
}
#define PARSES(lit, want) CHECK(parses_as((lit), sizeof(lit) - 1, 0, (want), sizeof(want) - 1))
#define PARSES_UNAUTH(lit, want) CHECK(parses_as((lit), sizeof(lit) - 1, 1, (want), sizeof(want) - 1))

/* One call on a fresh parser; returns the status, leaves the parser for
 * inspection (caller frees). */
static int parse_once(resp_parser *p, const char *lit, char *scratch, size_t *consumed) {
    size_t n = strlen(lit);
    memcpy(scratch, lit, n);
    return resp_parse(p, scratch, n, consumed);
}

/* ------------------------------------------------------------ parser */

static void test_multibulk_basic(void) {
    PARSES("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n", "C3|3:SET|3:key|5:value");
    PARSES("*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", "C1|4:PINGC2|4:ECHO|0:");
    /* *0, *-1, any negative: nothing to run */
    PARSES("*0\r\n*-1\r\n*-5\r\n*1\r\n$4\r\nPING\r\n", "EEEC1|4:PING");
    /* Redis skips the 2 bytes after "\r" and after bulk data unchecked */
    PARSES("*1\rX$4\r\nPINGxy*1\r\n$4\r\nPING\r\n", "C1|4:PINGC1|4:PING");
    /* binary-safe bulk: NUL, 0xff, CR, LF inside */
    PARSES("*2\r\n$3\r\nSET\r\n$6\r\na\0\xff\r\nb\r\n", "C2|3:SET|6:a\0\xff\r\nb");
    /* big number in an argument is just bytes */
    PARSES("*1\r\n$20\r\n18446744073709551616\r\n", "C1|20:18446744073709551616");
    /* mixed inline and multibulk in one stream */
    PARSES("PING\r\n*1\r\n$4\r\nPING\r\nECHO x\n", "C1|4:PINGC1|4:PINGC2|4:ECHO|1:x");
}

static void test_inline(void) {
    PARSES("PING\r\n", "C1|4:PING");
    PARSES("PING\n", "C1|4:PING");
    PARSES("\r\n\nPING\n", "EEC1|4:PING");
    PARSES("   \t \r\n", "E");
    PARSES("  SET   a\tb  \r\n", "C3|3:SET|1:a|1:b");
    PARSES("SET \"a b\" 'c d'\r\n", "C3|3:SET|3:a b|3:c d");
    PARSES("ECHO \"\\x41\\x4g\\n\\r\\t\\\\\\\"\"\r\n", "C2|4:ECHO|9:Ax4g\n\r\t\\\"");
    PARSES("ECHO \"\\xZZ\"\n", "C2|4:ECHO|3:xZZ");
    PARSES("ECHO \"\\x00\\xfF\"\n", "C2|4:ECHO|2:\0\xff");
    PARSES("ECHO 'it\\'s' 'a\\nb'\n", "C3|4:ECHO|4:it's|4:a\\nb");
    PARSES("ECHO a\"b c\"\n", "C2|4:ECHO|4:ab c");        /* quotes may open mid-token */
    PARSES("ECHO \"\" ''\n", "C3|4:ECHO|0:|0:");
    PARSES("ECHO \"a\" \r\n", "C2|4:ECHO|1:a");
    PARSES("ECHO a\vb\n", "C2|4:ECHO|3:a\vb");           /* \v only skipped between tokens */
    PARSES("ECHO \xff\x80\r\n", "C2|4:ECHO|2:\xff\x80");
    PARSES("ECHO a\rb\n", "C3|4:ECHO|1:a|1:b");
    PARSES("ECHO x\r\r\n", "C2|4:ECHO|1:x");
    /* exactly 64 KB line is fine, one more byte buffered without a newline is not */
    {
        size_t n = RESP_INLINE_MAX;
        char *s = malloc(n + 2);
        memset(s, 'a', n);
        s[n] = '\n';
        tbuf t = run(s, n + 1, SPLIT_WHOLE, 0);
        CHECK(strncmp(t.s, "C1|65536:", 9) == 0 && t.len == 9 + n);
        free(t.s);
        s[n] = 'a';
        s[n + 1] = '\n';
        t = run(s, n + 2, SPLIT_WHOLE, 0);   /* newline already buffered: Redis accepts it */
        CHECK(strncmp(t.s, "C1|65537:", 9) == 0);
        free(t.s);
        t = run(s, n + 1, SPLIT_WHOLE, 0);   /* 64 KB + 1 without a newline: too big */
        CHECK(strcmp(t.s, "!Protocol error: too big inline request") == 0);
        free(t.s);
        t = run(s, n, SPLIT_WHOLE, 0);       /* 64 KB, no \n yet: wait */
        CHECK(strcmp(t.s, "") == 0);
        free(t.s);
        free(s);
    }
}

static void test_errors(void) {
    /* protocol.tcl "Out of range multibulk length" and friends */
    PARSES("*20000000000\r\n", "!Protocol error: invalid multibulk length");
    PARSES("*3000000000\r\n", "!Protocol error: invalid multibulk length");
    PARSES("*abc\r\n", "!Protocol error: invalid multibulk length");
    PARSES("*\r\n", "!Protocol error: invalid multibulk length");
    PARSES("*01\r\n", "!Protocol error: invalid multibulk length");
    PARSES("*+1\r\n", "!Protocol error: invalid multibulk length");
    PARSES("* 1\r\n", "!Protocol error: invalid multibulk length");
    PARSES("*-0\r\n", "!Protocol error: invalid multibulk length");
    PARSES("*9223372036854775808\r\n", "!Protocol error: invalid multibulk length");
    /* "Wrong multibulk payload header" */
    PARSES("*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", "!Protocol error: expected '$', got 'f'");
    /* "Multi bulk request not followed by bulk arguments" */
    PARSES("*1\r\nfoo\r\n", "!Protocol error: expected '$', got 'f'");
    PARSES("*1\r\n\r\n", "!Protocol error: expected '$', got ' '");
    PARSES("*1\r\n\x01\r\n", "!Protocol error: expected '$', got '\x01'");
    /* "Negative / Out of range / Non-number multibulk payload length" */
    PARSES("*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$-10\r\n", "!Protocol error: invalid bulk length");
    PARSES("*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$2000000000\r\n", "!Protocol error: invalid bulk length");
    PARSES("*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$blabla\r\n", "!Protocol error: invalid bulk length");
    PARSES("*1\r\n$-1\r\n", "!Protocol error: invalid bulk length");
    PARSES("*1\r\n$\r\n", "!Protocol error: invalid bulk length");
    PARSES("*1\r\n$+3\r\nfoo\r\n", "!Protocol error: invalid bulk length");
    PARSES("*1\r\n$03\r\nfoo\r\n", "!Protocol error: invalid bulk length");
    PARSES("*1\r\n$536870913\r\n", "!Protocol error: invalid bulk length");
    PARSES("*1\r\n$99999999999999999999\r\n", "!Protocol error: invalid bulk length");
    /* "Unbalanced number of quotes" */
    PARSES("set \"\"\"test-key\"\"\" test-value\r\nping\r\n", "!Protocol error: unbalanced quotes in request");
    PARSES("PING \"a\r\n", "!Protocol error: unbalanced quotes in request");
    PARSES("ECHO \"a\"b\r\n", "!Protocol error: unbalanced quotes in request");
    PARSES("ECHO 'a'b\r\n", "!Protocol error: unbalanced quotes in request");
    PARSES("ECHO 'a\r\n", "!Protocol error: unbalanced quotes in request");
    PARSES("ECHO a\"b c\"d\r\n", "!Protocol error: unbalanced quotes in request");
    PARSES("ECHO \"a\\\"\n", "!Protocol error: unbalanced quotes in request");
    /* commands before the error are still delivered */
    PARSES("PING\r\n*1\r\n$4\r\nPING\r\n*x\r\nPING\r\n", "C1|4:PINGC1|4:PING!Protocol error: invalid multibulk length");
    /* too long header lines (no CR within 64 KB) */
    {
        size_t n = RESP_INLINE_MAX + 10;
        char *s = malloc(n + 8);
        s[0] = '*';
        memset(s + 1, '1', n - 1);
        tbuf t = run(s, n, SPLIT_WHOLE, 0);
        CHECK(strcmp(t.s, "!Protocol error: too big mbulk count string") == 0);
        free(t.s);
        memcpy(s, "*1\r\n$", 5);
        t = run(s, n, SPLIT_WHOLE, 0);
        CHECK(strcmp(t.s, "!Protocol error: too big bulk count string") == 0);
        free(t.s);
        /* a CR beyond the limit does not rescue the line (split-independent) */
        s[n - 2] = '\r';
        s[n - 1] = '\n';
        t = run(s, n, SPLIT_WHOLE, 0);
        CHECK(strcmp(t.s, "!Protocol error: too big bulk count string") == 0);
        free(t.s);
        t = run(s, n, SPLIT_RANDOM, 0);
        CHECK(strcmp(t.s, "!Protocol error: too big bulk count string") == 0);
        free(t.s);
        free(s);
    }
}

static void test_sticky_error(void) {
    resp_parser p;
    char b[64];
    size_t c;
    resp_parser_init(&p, 0);
    CHECK(resp_parser_error(&p) == NULL);
    CHECK(parse_once(&p, "*x\r\n", b, &c) == RESP_ERROR);
    CHECK(c == 0);
    CHECK(strcmp(resp_parser_error(&p), "Protocol error: invalid multibulk length") == 0);
    CHECK(parse_once(&p, "PING\r\n", b, &c) == RESP_ERROR);
    CHECK(parse_once(&p, "", b, &c) == RESP_ERROR);
    CHECK(resp_parser_want(&p) == 0);
    resp_parser_reset(&p);
    CHECK(resp_parser_error(&p) == NULL);
    CHECK(parse_once(&p, "PING\r\n", b, &c) == RESP_COMMAND && c == 6 && p.argc == 1);
    /* expected '$' error text lives in the parser */
    CHECK(parse_once(&p, "*1\r\nX\r\n", b, &c) == RESP_ERROR);
    CHECK(strcmp(resp_parser_error(&p), "Protocol error: expected '$', got 'X'") == 0);
    resp_parser_free(&p);
}

static void test_unauth(void) {
    PARSES_UNAUTH("*11\r\n", "!Protocol error: unauthenticated multibulk length");
    PARSES_UNAUTH("*10\r\n$4\r\nPING\r\n", "");      /* allowed, waits for 9 more */
    PARSES_UNAUTH("*1\r\n$16385\r\n", "!Protocol error: unauthenticated bulk length");
    PARSES_UNAUTH("*1\r\n$600000000\r\n", "!Protocol error: invalid bulk length");
    PARSES_UNAUTH("*20000000000\r\n", "!Protocol error: invalid multibulk length");
    PARSES_UNAUTH("*2\r\n$4\r\nAUTH\r\n$3\r\npwd\r\n", "C2|4:AUTH|3:pwd");
    /* 16384 is allowed */
    {
        size_t n = 16384;
        char *s = malloc(n + 64);
        int h = snprintf(s, 64, "*1\r\n$%zu\r\n", n);
        memset(s + h, 'v', n);
        memcpy(s + h + n, "\r\n", 2);
        tbuf t = run(s, (size_t)h + n + 2, SPLIT_RANDOM, 1);
        CHECK(strncmp(t.s, "C1|16384:vvv", 12) == 0);
        free(t.s);
        free(s);
    }
    /* the limit can change between commands (after AUTH) */
    {
        resp_parser p;
        char b[64];
        size_t c;
        resp_parser_init(&p, 0);
        p.unauth = 1;
        CHECK(parse_once(&p, "*1\r\n$4\r\nAUTH\r\n", b, &c) == RESP_COMMAND);
        p.unauth = 0;
        CHECK(parse_once(&p, "*11\r\n", b, &c) == RESP_INCOMPLETE);
        resp_parser_free(&p);
    }
}

static void test_limits_and_memory(void) {
    resp_parser p;
    char b[256];
    size_t c;

    /* a huge count allocates nothing: argv grows only as arguments arrive */
    resp_parser_init(&p, 0);
    CHECK(parse_once(&p, "*1000000000\r\n", b, &c) == RESP_INCOMPLETE);
    CHECK(p.argv_cap == 0 && p.argv == NULL);
    CHECK(parse_once(&p, "*1000000000\r\n$1\r\na\r\n$1\r\nb\r\n", b, &c) == RESP_INCOMPLETE);
    CHECK(p.argc == 2 && p.argv_cap <= 8);
    resp_parser_free(&p);

    /* max_args (Redis: INT_MAX) */
    resp_parser_init(&p, 0);
    CHECK(parse_once(&p, "*2147483647\r\n", b, &c) == RESP_INCOMPLETE);
    resp_parser_free(&p);
    resp_parser_init(&p, 0);
    CHECK(parse_once(&p, "*2147483648\r\n", b, &c) == RESP_ERROR);
    resp_parser_free(&p);
    resp_parser_init(&p, 0);
    p.max_args = 3;
    CHECK(parse_once(&p, "*4\r\n", b, &c) == RESP_ERROR);
    CHECK(strcmp(resp_parser_error(&p), "Protocol error: invalid multibulk length") == 0);
    resp_parser_free(&p);

    /* max_bulk: exactly the limit is allowed; want reports the rest */
    resp_parser_init(&p, 0);
    CHECK(p.max_bulk == RESP_DEFAULT_MAX_BULK);
    CHECK(parse_once(&p, "*1\r\n$536870912\r\nabc", b, &c) == RESP_INCOMPLETE);
    CHECK(resp_parser_want(&p) == 536870912 + 2 - 3);
    CHECK(p.argv == NULL);   /* nothing allocated for the announced bulk either */
    resp_parser_free(&p);
    resp_parser_init(&p, 100);
    CHECK(parse_once(&p, "*1\r\n$101\r\n", b, &c) == RESP_ERROR);
    resp_parser_free(&p);
    resp_parser_init(&p, 0);
    CHECK(parse_once(&p, "*2\r\n$3\r\nGET\r\n", b, &c) == RESP_INCOMPLETE);
    CHECK(resp_parser_want(&p) == 0);   /* in a header: unknown */
    CHECK(parse_once(&p, "*2\r\n$3\r\nGET\r\n$5\r\nab", b, &c) == RESP_INCOMPLETE);
    CHECK(resp_parser_want(&p) == 5);   /* "cde" + CRLF */
    CHECK(parse_once(&p, "*2\r\n$3\r\nGET\r\n$5\r\nabcde\r", b, &c) == RESP_INCOMPLETE);
    CHECK(resp_parser_want(&p) == 1);
    CHECK(parse_once(&p, "*2\r\n$3\r\nGET\r\n$5\r\nabcde\r\n", b, &c) == RESP_COMMAND && c == 24);
    CHECK(p.argc == 2 && p.argv[1].ptr == b + 17 && p.argv[1].len == 5);
    /* argv stays valid until the next call; then a new command starts */
    CHECK(parse_once(&p, "*1\r\n", b, &c) == RESP_INCOMPLETE && p.argc == 0);
    resp_parser_free(&p);

    /* many arguments: argv doubles */
    {
        int nargs = 100000;
        size_t cap = (size_t)nargs * 8 + 32, n = 0;
        char *s = malloc(cap);
        n += (size_t)snprintf(s, cap, "*%d\r\n", nargs);
        for (int i = 0; i < nargs; i++) { memcpy(s + n, "$1\r\nx\r\n", 7); n += 7; }
        resp_parser_init(&p, 0);
        CHECK(resp_parse(&p, s, n, &c) == RESP_COMMAND && c == n && p.argc == nargs);
        CHECK(p.argv_cap >= nargs && p.argv_cap < 2 * nargs);
        CHECK(p.argv[nargs - 1].ptr == s + n - 3);
        resp_parser_free(&p);
        free(s);
    }
}

/* A 64 MB bulk arriving in 16 KB reads, buffer grown by doubling, must be
 * linear: the parser keeps its place instead of rescanning. */
static void test_big_bulk_linear(void) {
    size_t bulk = 64u << 20, hdrcap = 64;
    char hdr[64];
    int h = snprintf(hdr, hdrcap, "*2\r\n$3\r\nSET\r\n$%zu\r\n", bulk);
    size_t total = (size_t)h + bulk + 2, cap = 16384, len = 0;
    char *buf = malloc(cap);
    resp_parser p;
    resp_parser_init(&p, 0);
    clock_t t0 = clock();
    int rc = RESP_INCOMPLETE, calls = 0;
    size_t c = 0;
    while (len < total && rc == RESP_INCOMPLETE) {
        size_t want = resp_parser_want(&p);
        if (want && cap < len + want) {            /* exact growth, as the proxy does */
            cap = len + want;
            buf = realloc(buf, cap);
        } else if (!want && cap - len < 16384) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
        size_t chunk = total - len < 16384 ? total - len : 16384;
        for (size_t i = 0; i < chunk; i++) {
            size_t off = len + i;
            buf[off] = off < (size_t)h ? hdr[off] : off < (size_t)h + bulk ? (char)(off & 0x7f) : (off == total - 2 ? '\r' : '\n');
        }
        len += chunk;
        rc = resp_parse(&p, buf, len, &c);
        calls++;
    }
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CHECK(rc == RESP_COMMAND && c == total && p.argc == 2 && p.argv[1].len == bulk);
    CHECK(cap <= total + 16384);
    CHECK(secs < 5.0);
    resp_parser_free(&p);
    free(buf);
}

/* Random pipelines: whole, byte-by-byte and random splits agree. */
static void test_random_streams(void) {
    for (int iter = 0; iter < 300; iter++) {
        tbuf in = {0};
        int ncmd = 1 + (int)(rng() % 6);
        for (int k = 0; k < ncmd; k++) {
            if (rng() % 3 == 0) {
                int nt = (int)(rng() % 4);
                for (int j = 0; j < nt; j++) {
                    char tok[16];
                    int tl = 1 + (int)(rng() % 8);
                    for (int q = 0; q < tl; q++) tok[q] = (char)('a' + rng() % 26);
                    if (j) tput(&in, " ", 1);
                    if (rng() % 4 == 0) { tput(&in, "\"", 1); tput(&in, tok, (size_t)tl); tput(&in, "\\x41\"", 5); }
                    else tput(&in, tok, (size_t)tl);
                }
                tput(&in, rng() % 2 ? "\r\n" : "\n", rng() % 2 ? 2 : 1);
            } else {
                int na = (int)(rng() % 5);
                char h[32];
                tput(&in, h, (size_t)snprintf(h, sizeof h, "*%d\r\n", na));
                for (int j = 0; j < na; j++) {
                    size_t al = rng() % 40;
                    tput(&in, h, (size_t)snprintf(h, sizeof h, "$%zu\r\n", al));
                    for (size_t q = 0; q < al; q++) { char ch = (char)rng(); tput(&in, &ch, 1); }
                    tput(&in, "\r\n", 2);
                }
            }
        }
        if (rng() % 4 == 0) tput(&in, "*1\r\n$x\r\n", 8);   /* sometimes end in an error */
        tbuf whole = run(in.s, in.len, SPLIT_WHOLE, 0);
        tbuf bytes = run(in.s, in.len, SPLIT_BYTES, 0);
        tbuf rand1 = run(in.s, in.len, SPLIT_RANDOM, 0);
        CHECK(whole.len == bytes.len && memcmp(whole.s, bytes.s, whole.len) == 0);
        CHECK(whole.len == rand1.len && memcmp(whole.s, rand1.s, whole.len) == 0);
        CHECK(!memmem(whole.s, whole.len, "?outside", 8) && !memmem(whole.s, whole.len, "?consumed", 9) &&
              !memmem(whole.s, whole.len, "?badconsumed", 12));
        free(whole.s); free(bytes.s); free(rand1.s); free(in.s);
    }
}

/* ------------------------------------------------------------ writer */

#define OUT(proto, expr, lit) do { \
    resp_out o_; resp_out_init(&o_, (proto)); resp_out *o = &o_; \
    int rc_ = (expr); \
    CHECK(rc_ == 0 && o_.len == sizeof(lit) - 1 && memcmp(o_.data, (lit), sizeof(lit) - 1) == 0); \
    if (!(o_.len == sizeof(lit) - 1 && memcmp(o_.data, (lit), sizeof(lit) - 1) == 0)) \
        fprintf(stderr, "  RESP%d got \"%.*s\"\n", (proto), (int)o_.len, o_.data ? o_.data : ""); \
    resp_out_free(&o_); } while (0)

static void test_writer(void) {
    for (int proto = 2; proto <= 3; proto++) {
        OUT(proto, resp_add_status(o, "OK"), "+OK\r\n");
        OUT(proto, resp_add_simple(o, "PONG", 4), "+PONG\r\n");
        OUT(proto, resp_add_error(o, "ERR bad\r\nthing"), "-ERR bad  thing\r\n");
        OUT(proto, resp_add_error(o, "-WRONGTYPE x"), "-WRONGTYPE x\r\n");
        OUT(proto, resp_add_errorf(o, "ERR unknown command '%s'", "foo"), "-ERR unknown command 'foo'\r\n");
        OUT(proto, resp_add_int(o, 0), ":0\r\n");
        OUT(proto, resp_add_int(o, -42), ":-42\r\n");
        OUT(proto, resp_add_int(o, LLONG_MAX), ":9223372036854775807\r\n");
        OUT(proto, resp_add_int(o, LLONG_MIN), ":-9223372036854775808\r\n");
        OUT(proto, resp_add_bulk(o, "a\0b", 3), "$3\r\na\0b\r\n");
        OUT(proto, resp_add_bulk(o, "", 0), "$0\r\n\r\n");
        OUT(proto, resp_add_bulk_cstr(o, "hello"), "$5\r\nhello\r\n");
        OUT(proto, resp_add_bulk_ll(o, -1234567890123LL), "$14\r\n-1234567890123\r\n");
        OUT(proto, resp_add_array(o, 3), "*3\r\n");
        OUT(proto, resp_add_array(o, 0), "*0\r\n");
        OUT(proto, resp_out_raw(o, "xyz", 3), "xyz");
    }
    OUT(2, resp_add_null(o), "$-1\r\n");
    OUT(3, resp_add_null(o), "_\r\n");
    OUT(2, resp_add_null_array(o), "*-1\r\n");
    OUT(3, resp_add_null_array(o), "_\r\n");
    OUT(2, resp_add_map(o, 2), "*4\r\n");
    OUT(3, resp_add_map(o, 2), "%2\r\n");
    OUT(2, resp_add_set(o, 5), "*5\r\n");
    OUT(3, resp_add_set(o, 5), "~5\r\n");
    OUT(2, resp_add_push(o, 3), "*3\r\n");
    OUT(3, resp_add_push(o, 3), ">3\r\n");
    OUT(2, resp_add_bool(o, 1), ":1\r\n");
    OUT(2, resp_add_bool(o, 0), ":0\r\n");
    OUT(3, resp_add_bool(o, 1), "#t\r\n");
    OUT(3, resp_add_bool(o, 0), "#f\r\n");
    /* doubles: checked against redis-server 7.0.15 ZSCORE */
    OUT(2, resp_add_double(o, 1.5), "$3\r\n1.5\r\n");
    OUT(3, resp_add_double(o, 1.5), ",1.5\r\n");
    OUT(2, resp_add_double(o, 3.0), "$1\r\n3\r\n");
    OUT(3, resp_add_double(o, 3.0), ",3\r\n");
    OUT(2, resp_add_double(o, 0.1), "$19\r\n0.10000000000000001\r\n");
    OUT(3, resp_add_double(o, 0.1), ",0.10000000000000001\r\n");
    OUT(2, resp_add_double(o, INFINITY), "$3\r\ninf\r\n");
    OUT(2, resp_add_double(o, -INFINITY), "$4\r\n-inf\r\n");
    OUT(3, resp_add_double(o, INFINITY), ",inf\r\n");
    OUT(3, resp_add_double(o, -INFINITY), ",-inf\r\n");
    OUT(3, resp_add_double(o, 1e300), ",1.0000000000000001e+300\r\n");
    OUT(3, resp_add_double(o, 1e17), ",1e+17\r\n");
    OUT(2, resp_add_double(o, 1e16), "$17\r\n10000000000000000\r\n");
    OUT(2, resp_add_verbatim(o, "txt", "hi", 2), "$2\r\nhi\r\n");
    OUT(3, resp_add_verbatim(o, "txt", "hi", 2), "=6\r\ntxt:hi\r\n");
    OUT(3, resp_add_verbatim(o, "md", "", 0), "=4\r\nmd :\r\n");
    /* a whole reply, several values appended */
    {
        resp_out o;
        resp_out_init(&o, 3);
        CHECK(resp_add_map(&o, 1) == 0 && resp_add_bulk_cstr(&o, "k") == 0 && resp_add_set(&o, 2) == 0 &&
              resp_add_int(&o, 1) == 0 && resp_add_null(&o) == 0);
        CHECK_MEM(o.data, o.len, "%1\r\n$1\r\nk\r\n~2\r\n:1\r\n_\r\n");
        /* long error through errorf's heap path */
        char big[1000];
        memset(big, 'x', sizeof big - 1);
        big[sizeof big - 1] = '\0';
        size_t before = o.len;
        CHECK(resp_add_errorf(&o, "ERR %s", big) == 0 && o.len == before + 1 + 4 + 999 + 2);
        /* growth: many values */
        for (int i = 0; i < 100000; i++) resp_add_int(&o, i);
        CHECK(o.len > 100000 * 3 && o.cap >= o.len);
        resp_out_free(&o);
        CHECK(o.data == NULL && o.len == 0);
    }
}

/* ------------------------------------------------------------ helpers */

static int ll_ok(const char *s, long long want) {
    long long v = 12345;
    return resp_str2ll(s, strlen(s), &v) == 0 && v == want;
}
static int ll_bad(const char *s) {
    long long v = 12345;
    return resp_str2ll(s, strlen(s), &v) == -1 && v == 12345;
}
static int ld_ok(const char *s, long double want) {
    long double v;
    return resp_str2ld(s, strlen(s), &v) == 0 && v == want;
}
static int ld_bad(const char *s) {
    long double v;
    return resp_str2ld(s, strlen(s), &v) == -1;
}
static int fmt_ld(long double v, const char *want) {
    char b[6000];
    int n = resp_format_ld(b, sizeof b, v);
    if (strcmp(b, want) != 0 || (size_t)n != strlen(want)) {
        fprintf(stderr, "  format_ld got \"%s\" want \"%s\"\n", b, want);
        return 0;
    }
    return 1;
}
static int fmt_d(double v, const char *want) {
    char b[400];
    int n = resp_format_double(b, sizeof b, v);
    if (strcmp(b, want) != 0 || (size_t)n != strlen(want)) {
        fprintf(stderr, "  format_double got \"%s\" want \"%s\"\n", b, want);
        return 0;
    }
    return 1;
}

static void test_numbers(void) {
    CHECK(ll_ok("0", 0));
    CHECK(ll_ok("1", 1));
    CHECK(ll_ok("-1", -1));
    CHECK(ll_ok("99", 99));
    CHECK(ll_ok("9223372036854775807", LLONG_MAX));
    CHECK(ll_ok("-9223372036854775808", LLONG_MIN));
    CHECK(ll_bad("9223372036854775808"));
    CHECK(ll_bad("-9223372036854775809"));
    CHECK(ll_bad("18446744073709551616"));
    CHECK(ll_bad("99999999999999999999"));
    CHECK(ll_bad("000000000000000000001"));
    CHECK(ll_bad(""));
    CHECK(ll_bad("-"));
    CHECK(ll_bad("-0"));
    CHECK(ll_bad("+1"));
    CHECK(ll_bad(" 1"));
    CHECK(ll_bad("1 "));
    CHECK(ll_bad("01"));
    CHECK(ll_bad("00"));
    CHECK(ll_bad("1a"));
    CHECK(ll_bad("0x10"));
    CHECK(ll_bad("1.0"));
    CHECK(resp_str2ll("12", 1, NULL) == 0);    /* length, not NUL, ends the input */
    {
        long long v;
        CHECK(resp_str2ll("123\0" "4", 5, &v) == -1);
        CHECK(resp_str2ll("123", 2, &v) == 0 && v == 12);
    }

    CHECK(ld_ok("1.5", 1.5L));
    CHECK(ld_ok("-1", -1.0L));
    CHECK(ld_ok("+1", 1.0L));          /* strtold accepts '+', so does Redis */
    CHECK(ld_ok("1e3", 1000.0L));
    CHECK(ld_ok("0x10", 16.0L));
    CHECK(ld_ok("-0", 0.0L));
    CHECK(ld_ok("inf", INFINITY));     /* INCRBYFLOAT then refuses the inf result */
    CHECK(ld_bad(""));
    CHECK(ld_bad("-"));
    CHECK(ld_bad(" 1"));
    CHECK(ld_bad("1 "));
    CHECK(ld_bad("\t1"));
    CHECK(ld_bad("1.5x"));
    CHECK(ld_bad("nan"));
    CHECK(ld_bad("-nan"));
    CHECK(ld_bad("1e99999"));          /* overflow */
    CHECK(ld_bad("1e-99999"));         /* underflow to 0 */
    CHECK(ld_bad("abc"));
    {
        long double v;
        CHECK(resp_str2ld("1\0" "2", 3, &v) == -1);
        char *big = malloc(6000);
        memset(big, '0', 6000);
        big[5118] = '1';
        CHECK(resp_str2ld(big, 5119, &v) == 0 && v == 1.0L);   /* 5119 bytes: the longest allowed */
        big[5119] = '1';
        CHECK(resp_str2ld(big, 5120, &v) == -1);
        free(big);
    }

    {
        char b[32];
        CHECK(resp_ll2str(b, sizeof b, 0) == 1 && strcmp(b, "0") == 0);
        CHECK(resp_ll2str(b, sizeof b, -7) == 2 && strcmp(b, "-7") == 0);
        CHECK(resp_ll2str(b, sizeof b, LLONG_MIN) == 20 && strcmp(b, "-9223372036854775808") == 0);
        CHECK(resp_ll2str(b, sizeof b, LLONG_MAX) == 19 && strcmp(b, "9223372036854775807") == 0);
        CHECK(resp_ll2str(b, 3, 123) == 0 && b[0] == '\0');
        CHECK(resp_ll2str(b, 4, 123) == 3 && strcmp(b, "123") == 0);
        /* every power-of-ten boundary round-trips */
        long long v = 1;
        for (int i = 0; i < 19; i++, v = i < 19 ? v * 10 : v) {
            long long back;
            int n = resp_ll2str(b, sizeof b, v - 1);
            CHECK(resp_str2ll(b, (size_t)n, &back) == 0 && back == v - 1);
            n = resp_ll2str(b, sizeof b, -v);
            CHECK(resp_str2ll(b, (size_t)n, &back) == 0 && back == -v);
        }
    }

    /* INCRBYFLOAT formatting, checked against redis-server 7.0.15 */
    CHECK(fmt_ld(10.5L + 0.1L, "10.6"));
    CHECK(fmt_ld(0.1L + 0.2L, "0.3"));
    CHECK(fmt_ld(3.0L, "3"));
    CHECK(fmt_ld(-0.0L, "0"));
    CHECK(fmt_ld(-1.5L, "-1.5"));
    CHECK(fmt_ld(1e18L + 1, "1000000000000000001"));
    CHECK(fmt_ld(1e20L, "100000000000000000000"));
    CHECK(fmt_ld(5200.0L, "5200"));
    CHECK(fmt_ld(1.5L + 1e-20L, "1.5"));
    CHECK(fmt_ld(INFINITY, "inf"));
    CHECK(fmt_ld(-INFINITY, "-inf"));
    CHECK(fmt_ld(1e-18L, "0"));
    {
        char b[8];
        CHECK(resp_format_ld(b, sizeof b, 123456789.0L) == 0 && b[0] == '\0');
    }
    CHECK(fmt_d(10.6, "10.6"));
    CHECK(fmt_d(3.0, "3"));
    CHECK(fmt_d(-0.0, "0"));
    CHECK(fmt_d(0.30000000000000004, "0.30000000000000004"));
    CHECK(fmt_d(1e20, "100000000000000000000"));
    CHECK(fmt_d(-2.5e-3, "-0.0025"));
    CHECK(fmt_d(INFINITY, "inf"));
}

static int gm(const char *pat, const char *s) { return resp_glob_match(pat, strlen(pat), s, strlen(s), 0); }
static int gmi(const char *pat, const char *s) { return resp_glob_match(pat, strlen(pat), s, strlen(s), 1); }

static void test_glob(void) {
    /* cases cross-checked against KEYS on redis-server 7.0.15 */
    CHECK(gm("*", "anything"));
    CHECK(!gm("*", ""));               /* Redis: "" matches only "" */
    CHECK(gm("", ""));
    CHECK(!gm("", "a"));
    CHECK(gm("**", "a"));
    CHECK(gm("h?llo", "hello"));
    CHECK(!gm("h?llo", "hllo"));
    CHECK(gm("h*llo", "hllo"));
    CHECK(gm("h*llo", "heeeello"));
    CHECK(gm("h[ae]llo", "hallo"));
    CHECK(!gm("h[ae]llo", "hillo"));
    CHECK(gm("h[^e]llo", "hallo"));
    CHECK(!gm("h[^e]llo", "hello"));
    CHECK(gm("h[a-b]llo", "hbllo"));
    CHECK(gm("h[b-a]llo", "hallo"));  /* reversed range */
    CHECK(!gm("h[a-b]llo", "hcllo"));
    CHECK(gm("a*", "a"));
    CHECK(gm("a**", "a"));
    CHECK(gm("*a", "ba"));
    CHECK(!gm("*a", "ab"));
    CHECK(gm("\\*", "*"));
    CHECK(!gm("\\*", "a"));
    CHECK(gm("\\", "\\"));
    CHECK(gm("a\\", "a\\"));
    CHECK(gm("[\\]]", "]"));
    CHECK(gm("[]]", "]") == 0);      /* "[]" is an empty class, then "]" */
    CHECK(gm("[]]", "]]") == 0);
    CHECK(gm("[", "[") == 0);
    CHECK(gm("[^", "x"));            /* unterminated negated class */
    CHECK(gm("[abc", "b"));          /* unterminated class ends with the pattern */
    CHECK(gm("[a-]", "]"));          /* "a-]" is a range, as in Redis */
    CHECK(gm("*?*", "x"));
    CHECK(gm("[\x80-\xff]", "\xff"));
    CHECK(!gm("[\x80-\xff]", "a"));    /* signed-char ranges, as Redis on x86 */
    CHECK(gm("a*b*c*d", "aXbYcZd"));
    CHECK(!gm("a*b*c*d", "aXbYcZ"));
    CHECK(gm("*.*", "a.b.c"));
    CHECK(gmi("HeLLo*", "hello world"));
    CHECK(gmi("h[A-Z]llo", "hello"));
    CHECK(gmi("h[^E]llo", "hallo"));
    CHECK(!gmi("h[^E]llo", "hello"));
    CHECK(!gm("HELLO", "hello"));
    /* nocase ranges with bytes >= 0x80 follow glibc tolower(signed char):
     * -7 becomes 249, so the range 0xf9..']' in [\xf9-] is -7..93 with
     * case and the empty 249..93 without */
    CHECK(gm("[\xf9-]", "]"));
    CHECK(!gmi("[\xf9-]", "]"));
    CHECK(gmi("[\xff-\xfe]", "\xff") == 0 && gm("[\xff-\xfe]", "\xff") == 1);
    CHECK(gmi("maxmemory*", "maxmemory-policy"));
    /* pathological pattern stays fast (no exponential backtracking) */
    {
        char pat[200], s[200];
        memset(pat, 0, sizeof pat);
        for (int i = 0; i < 60; i++) { pat[2 * i] = 'a'; pat[2 * i + 1] = '*'; }
        pat[120] = 'b';
        memset(s, 'a', 150);
        s[150] = '\0';
        clock_t t0 = clock();
        CHECK(!gm(pat, s));
        CHECK((double)(clock() - t0) / CLOCKS_PER_SEC < 1.0);
        /* and deep star nesting does not recurse */
        size_t n = 200000;
        char *lp = malloc(n + 1);
        for (size_t i = 0; i < n; i++) lp[i] = (i & 1) ? '*' : 'x';
        lp[n] = '\0';
        CHECK(resp_glob_match(lp, n, "xxxx", 4, 0) == 0);
        CHECK(resp_glob_match(lp, 8, "xxxx", 4, 0) == 1);
        free(lp);
    }
}

int main(void) {
    test_multibulk_basic();
    test_inline();
    test_errors();
    test_sticky_error();
    test_unauth();
    test_limits_and_memory();
    test_big_bulk_linear();
    test_random_streams();
    test_writer();
    test_numbers();
    test_glob();
    return TEST_DONE();
}
