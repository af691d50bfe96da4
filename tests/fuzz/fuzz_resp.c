/* fuzz_resp.c — libFuzzer target for protocol/.
 *
 * The input is a byte stream as a client would send it. It is parsed three
 * ways — whole, in pseudo-random chunks derived from the input's hash, and
 * (for short inputs) byte by byte — with the unparsed rest moved to a fresh
 * allocation after every chunk, as a connection's read buffer would be.
 * Invariants (abort on violation):
 *   - consumed <= len, consumed > 0 for RESP_COMMAND/RESP_EMPTY, 0 otherwise;
 *   - every argv slice lies inside the consumed bytes of the buffer;
 *   - after RESP_ERROR the parser stays in error with the same text;
 *   - all three feeds give the same commands and the same final error;
 *   - resp_parser_want never asks for more than the bulk being read.
 * Each parsed command is also written back with the writer (array of bulks,
 * which is a multibulk request) and re-parsed to the same arguments; its
 * arguments go through str2ll/ll2str (round trip), str2ld, the double
 * formatters and glob matching (checked against a direct port of Redis's
 * recursive stringmatchlen).
 */
#include "protocol/resp.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FZ_ASSERT(c) do { if (!(c)) { fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #c); abort(); } } while (0)

/* ------------------------------------------------------------ transcript */

typedef struct {
    unsigned char *s;
    size_t len, cap;
} fz_buf;

static void fz_put(fz_buf *b, const void *p, size_t n) {
    if (b->len + n > b->cap) {
        size_t c = b->cap ? b->cap : 256;
        while (c < b->len + n) c *= 2;
        unsigned char *ns = realloc(b->s, c);
        FZ_ASSERT(ns != NULL);
        b->s = ns;
        b->cap = c;
    }
    if (n) memcpy(b->s + b->len, p, n);
    b->len += n;
}

/* ------------------------------------------------------------ reference glob */

/* Redis 7.0 stringmatchlen_impl, kept recursive and C-string based as in
 * Redis (pattern and string must be NUL-terminated past their lengths). */
static int ref_glob(const char *pattern, int patternLen, const char *string, int stringLen,
                    int nocase, int *skipLonger) {
    while (patternLen && stringLen) {
        switch (pattern[0]) {
        case '*':
            while (patternLen && pattern[1] == '*') { pattern++; patternLen--; }
            if (patternLen == 1) return 1;
            while (stringLen) {
                if (ref_glob(pattern + 1, patternLen - 1, string, stringLen, nocase, skipLonger)) return 1;
                if (*skipLonger) return 0;
                string++;
                stringLen--;
            }
            *skipLonger = 1;
            return 0;
        case '?':
            string++;
            stringLen--;
            break;
        case '[': {
            int not, match;
            pattern++;
            patternLen--;
            not = pattern[0] == '^';
            if (not) { pattern++; patternLen--; }
            match = 0;
            while (1) {
                if (pattern[0] == '\\' && patternLen >= 2) {
                    pattern++;
                    patternLen--;
                    if (pattern[0] == string[0]) match = 1;
                } else if (pattern[0] == ']') {
                    break;
                } else if (patternLen == 0) {
                    pattern--;
                    patternLen++;
                    break;
                } else if (patternLen >= 3 && pattern[1] == '-') {
                    int start = pattern[0], end = pattern[2], c = string[0];
                    if (start > end) { int t = start; start = end; end = t; }
                    if (nocase) { start = tolower(start); end = tolower(end); c = tolower(c); }
                    pattern += 2;
                    patternLen -= 2;
                    if (c >= start && c <= end) match = 1;
                } else {
                    if (!nocase) { if (pattern[0] == string[0]) match = 1; }
                    else if (tolower((int)pattern[0]) == tolower((int)string[0])) match = 1;
                }
                pattern++;
                patternLen--;
            }
            if (not) match = !match;
            if (!match) return 0;
            string++;
            stringLen--;
            break;
        }
        case '\\':
            if (patternLen >= 2) { pattern++; patternLen--; }
            /* fall through */
        default:
            if (!nocase) { if (pattern[0] != string[0]) return 0; }
            else if (tolower((int)pattern[0]) != tolower((int)string[0])) return 0;
            string++;
            stringLen--;
            break;
        }
        pattern++;
        patternLen--;
        if (stringLen == 0) {
            while (*pattern == '*') { pattern++; patternLen--; }
            break;
        }
    }
    return patternLen == 0 && stringLen == 0;
}

static void check_glob(const char *p, size_t pl, const char *s, size_t sl) {
    if (pl > 48 || sl > 48) return;
    char pz[64], sz[64];
    memcpy(pz, p, pl);
    pz[pl] = '\0';
    memcpy(sz, s, sl);
    sz[sl] = '\0';
    /* the reference reads C strings: an embedded NUL would end them early */
    if (memchr(pz, '\0', pl) || memchr(sz, '\0', sl)) return;
    for (int nocase = 0; nocase <= 1; nocase++) {
        int skip = 0;
        int want = ref_glob(pz, (int)pl, sz, (int)sl, nocase, &skip);
        FZ_ASSERT(resp_glob_match(p, pl, s, sl, nocase) == want);
    }
}

/* ------------------------------------------------------------ per command */

static void check_command(const resp_parser *p) {
    /* writer round trip: an array of bulks is a multibulk request */
    for (int proto = 2; proto <= 3; proto++) {
        resp_out o;
        resp_out_init(&o, proto);
        FZ_ASSERT(resp_add_array(&o, p->argc) == 0);
        for (int i = 0; i < p->argc; i++) FZ_ASSERT(resp_add_bulk(&o, p->argv[i].ptr, p->argv[i].len) == 0);
        resp_parser q;
        resp_parser_init(&q, 0);
        size_t c = 0;
        FZ_ASSERT(resp_parse(&q, o.data, o.len, &c) == RESP_COMMAND);
        FZ_ASSERT(c == o.len && q.argc == p->argc);
        for (int i = 0; i < p->argc; i++)
            FZ_ASSERT(q.argv[i].len == p->argv[i].len && memcmp(q.argv[i].ptr, p->argv[i].ptr, p->argv[i].len) == 0);
        resp_parser_free(&q);
        resp_out_free(&o);
    }
    /* numbers */
    for (int i = 0; i < p->argc && i < 4; i++) {
        const resp_arg *a = &p->argv[i];
        long long v;
        if (resp_str2ll(a->ptr, a->len, &v) == 0) {
            char b[32];
            int n = resp_ll2str(b, sizeof b, v);
            FZ_ASSERT((size_t)n == a->len && memcmp(b, a->ptr, a->len) == 0);
        }
        long double ld;
        if (resp_str2ld(a->ptr, a->len, &ld) == 0) {
            char b[6000];
            int n = resp_format_ld(b, sizeof b, ld);
            FZ_ASSERT(n > 0 && (size_t)n < sizeof b && b[n] == '\0');
            n = resp_format_double(b, sizeof b, (double)ld);
            FZ_ASSERT(n > 0 && (size_t)n < sizeof b);
            resp_out o;
            resp_out_init(&o, 3);
            FZ_ASSERT(resp_add_double(&o, (double)ld) == 0 && o.len > 3 && o.data[0] == ',');
            o.proto = 2;
            FZ_ASSERT(resp_add_double(&o, (double)ld) == 0);
            FZ_ASSERT(resp_add_error(&o, "ERR x") == 0 && resp_add_verbatim(&o, "txt", a->ptr, a->len) == 0);
            resp_out_free(&o);
        }
    }
    if (p->argc >= 2) check_glob(p->argv[0].ptr, p->argv[0].len, p->argv[1].ptr, p->argv[1].len);
}

/* ------------------------------------------------------------ feeding */

static uint64_t fz_rng(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

enum { FEED_WHOLE, FEED_SPLIT, FEED_BYTES };

/* Feed data to a fresh parser; records commands and the error in *t.
 * `seed` drives chunk sizes for FEED_SPLIT. */
static void feed(const uint8_t *data, size_t size, int mode, uint64_t seed, int unauth,
                 long long max_bulk, int check_cmds, fz_buf *t) {
    resp_parser p;
    resp_parser_init(&p, max_bulk);
    p.unauth = unauth;
    char *buf = NULL;
    size_t blen = 0, fed = 0;
    int dead = 0;
    while (fed < size && !dead) {
        size_t chunk = size - fed;
        if (mode == FEED_BYTES) chunk = 1;
        else if (mode == FEED_SPLIT) {
            uint64_t r = fz_rng(&seed);
            size_t max = (r & 3) == 0 ? 1 : (r & 3) == 1 ? 7 : (r & 3) == 2 ? 64 : 4096;
            chunk = 1 + (size_t)((r >> 8) % max);
            if (chunk > size - fed) chunk = size - fed;
        }
        /* a fresh allocation each time: stale pointers would be caught by ASan */
        char *nb = malloc(blen + chunk);
        FZ_ASSERT(nb != NULL);
        if (blen) memcpy(nb, buf, blen);
        memcpy(nb + blen, data + fed, chunk);
        free(buf);
        buf = nb;
        blen += chunk;
        fed += chunk;

        size_t start = 0;
        for (;;) {
            size_t len = blen - start, consumed = 12345;
            int rc = resp_parse(&p, buf + start, len, &consumed);
            FZ_ASSERT(consumed <= len);
            if (rc == RESP_INCOMPLETE) {
                FZ_ASSERT(consumed == 0);
                FZ_ASSERT(resp_parser_error(&p) == NULL);
                size_t want = resp_parser_want(&p);
                FZ_ASSERT(want <= (size_t)p.max_bulk + 2);
                break;
            }
            if (rc == RESP_ERROR) {
                const char *e = resp_parser_error(&p);
                FZ_ASSERT(consumed == 0 && e != NULL && strncmp(e, "Protocol error: ", 16) == 0);
                /* sticky */
                size_t c2 = 1;
                FZ_ASSERT(resp_parse(&p, buf + start, len, &c2) == RESP_ERROR && c2 == 0);
                FZ_ASSERT(resp_parse(&p, (char *)"PING\r\n", 6, &c2) == RESP_ERROR && c2 == 0);
                FZ_ASSERT(resp_parser_error(&p) == e && resp_parser_want(&p) == 0);
                fz_put(t, "!", 1);
                fz_put(t, e, strlen(e));
                dead = 1;
                break;
            }
            FZ_ASSERT(rc == RESP_COMMAND || rc == RESP_EMPTY);
            FZ_ASSERT(consumed > 0);
            if (rc == RESP_EMPTY) {
                fz_put(t, "E", 1);
            } else {
                FZ_ASSERT(p.argc > 0);
                fz_put(t, "C", 1);
                fz_put(t, &p.argc, sizeof p.argc);
                for (int i = 0; i < p.argc; i++) {
                    const resp_arg *a = &p.argv[i];
                    FZ_ASSERT(a->ptr >= buf + start && a->len <= consumed &&
                              a->ptr + a->len <= buf + start + consumed);
                    if (!unauth) FZ_ASSERT((long long)a->len <= p.max_bulk || a->len <= RESP_INLINE_MAX);
                    fz_put(t, &a->len, sizeof a->len);
                    fz_put(t, a->ptr, a->len);
                }
                if (check_cmds) check_command(&p);
            }
            start += consumed;
        }
        memmove(buf, buf + start, blen - start);
        blen -= start;
    }
    free(buf);
    resp_parser_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* configuration and split sizes come from the input's hash, so the
     * corpus stays plain client traffic */
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 1099511628211ULL;
    h |= 1;
    int unauth = (h >> 60) == 0;                  /* 1 in 16 */
    long long max_bulk = ((h >> 56) & 15) == 1 ? 64 : 0;

    fz_buf whole = {0}, split = {0}, bytes = {0};
    feed(data, size, FEED_WHOLE, h, unauth, max_bulk, 1, &whole);
    feed(data, size, FEED_SPLIT, h, unauth, max_bulk, 0, &split);
    FZ_ASSERT(whole.len == split.len && (whole.len == 0 || memcmp(whole.s, split.s, whole.len) == 0));
    if (size <= 4096) {
        feed(data, size, FEED_BYTES, h, unauth, max_bulk, 0, &bytes);
        FZ_ASSERT(whole.len == bytes.len && (whole.len == 0 || memcmp(whole.s, bytes.s, whole.len) == 0));
    }
    free(whole.s);
    free(split.s);
    free(bytes.s);
    return 0;
}
