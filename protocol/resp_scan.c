/* resp_scan.c — reply boundaries in a RESP2/RESP3 stream (see resp_scan.h). */
#include "resp_scan.h"
#include "resp.h"

#include <string.h>

void resp_scanner_init(resp_scanner *s) {
    s->pos = 0;
    s->outstanding = 1;
    s->err = NULL;
}

/* Parse the integer of a header line buf[from..eol) ("\r" at eol). */
static int line_int(const char *buf, size_t from, size_t eol, long long *v) {
    return resp_str2ll(buf + from, eol - from, v);
}

/* The integer of a header whose number starts at buf[i], when it is in
 * the form servers write ('-'? then 0 or [1-9][0-9]{0,17}, then CRLF): 1
 * with *v and *next (past the LF). 0 for anything else, a header cut by
 * the end of buf included: the caller takes the general path (memchr for
 * the line's end, then resp_str2ll), which decides. A reply of 100 bulk
 * strings has 101 such headers: this spares a memchr call on each
 * (LRANGE_100 relayed by the Redis backend: memchr + resp_str2ll were
 * 12 % of the process). */
static int fast_int(const char *buf, size_t i, size_t len, long long *v, size_t *next) {
    /* the usual header of a short bulk or aggregate: one digit, CRLF */
    if (len - i >= 3 && (unsigned char)(buf[i] - '0') <= 9 && buf[i + 1] == '\r' && buf[i + 2] == '\n') {
        *v = buf[i] - '0';
        *next = i + 3;
        return 1;
    }
    int neg = i < len && buf[i] == '-';
    i += (size_t)neg;
    size_t d0 = i;
    long long x = 0;
    while (i < len && i - d0 < 18 && (unsigned char)(buf[i] - '0') <= 9) x = x * 10 + (buf[i++] - '0');
    size_t nd = i - d0;
    if (nd == 0 || (nd > 1 && buf[d0] == '0') || (neg && x == 0) || len - i < 2 || buf[i] != '\r' || buf[i + 1] != '\n')
        return 0;
    *v = neg ? -x : x;
    *next = i + 2;
    return 1;
}

/* Add `n` expected values (an aggregate's elements, an attribute's pairs);
 * -1 with s->err set past RESP_SCAN_MAX_OUTSTANDING. */
static int expect_more(resp_scanner *s, long long n) {
    if (n > RESP_SCAN_MAX_OUTSTANDING - s->outstanding) { s->err = "reply announces too many elements"; return -1; }
    s->outstanding += n;
    return 0;
}

long long resp_scan_reply(resp_scanner *s, const char *buf, size_t len) {
    if (s->err) return -1;
    while (s->pos < len) {
        size_t start = s->pos, next;
        char type = buf[start];
        long long n = 0;
        int num = 0, fast = 0, bad = 0;
        switch (type) {
        case '$': case '!': case '=': case '*': case '~': case '>': case '%': case '|':
            num = 1;
            fast = fast_int(buf, start + 1, len, &n, &next);
            break;
        default:
            break;
        }
        if (!fast) {
            const char *nl = memchr(buf + start, '\n', len - start);
            if (!nl) return 0;
            size_t eol = (size_t)(nl - buf);           /* index of '\n' */
            if (eol == start || buf[eol - 1] != '\r') { s->err = "header line not terminated by CRLF"; return -1; }
            next = eol + 1;
            if (num) bad = line_int(buf, start + 1, eol - 1, &n);
        }
        switch (type) {
        case '+': case '-': case ':': case '_': case ',': case '#': case '(':
            s->pos = next;
            s->outstanding--;
            break;
        case '$': case '!': case '=':
            if (bad || n < -1 || (n == -1 && type != '$')) {
                s->err = "invalid bulk length";
                return -1;
            }
            if (n >= 0) {
                if (len - next < (size_t)n + 2) return 0;   /* wait for the payload; header rescanned (short) */
                next += (size_t)n + 2;
            }
            s->pos = next;
            s->outstanding--;
            break;
        case '*': case '~': case '>': case '%': case '|':
            if (bad || n < -1 || (n == -1 && type != '*') || n > RESP_SCAN_MAX_ELEMENTS) {
                s->err = "invalid aggregate length";
                return -1;
            }
            s->pos = next;
            if (type == '%' || type == '|') n *= 2;
            if (type == '|') {
                /* attribute: 2n values that annotate the value after them,
                 * which is still expected */
                if (expect_more(s, n)) return -1;
                break;
            }
            /* the aggregate is one value; its n elements are expected instead */
            if (n > 0 && expect_more(s, n)) return -1;
            s->outstanding--;
            break;
        default:
            s->err = "unknown reply type byte";
            return -1;
        }
        if (s->outstanding == 0) goto complete;
    }
    return 0;
complete:;
    long long total = (long long)s->pos;
    s->pos = 0;
    s->outstanding = 1;
    return total;
}

int resp_reply_next_scalar(const char **p, const char *end, const char **s, size_t *n) {
    for (;;) {
        const char *q = *p;
        if (q >= end) return 0;
        const char *cr = memchr(q, '\r', (size_t)(end - q));
        if (!cr || cr + 1 >= end || cr[1] != '\n' || cr == q) return -1;
        char t = q[0];
        *p = cr + 2;
        switch (t) {
        case '*': case '%': case '~': case '>': case '|': {
            long long v;
            if (line_int(q, 1, (size_t)(cr - q), &v) || v < 0) return -1;
            continue;                               /* its elements follow */
        }
        case '+': case ':': case ',': case '#': case '(':
            *s = q + 1;
            *n = (size_t)(cr - q - 1);
            return 1;
        case '$': case '=': {
            long long v;
            if (line_int(q, 1, (size_t)(cr - q), &v) || v < 0) return -1;
            if ((size_t)(end - *p) < (size_t)v + 2) return -1;
            *s = *p;
            *n = (size_t)v;
            if (t == '=' && v >= 4) { *s += 4; *n -= 4; }   /* past "txt:" */
            *p += v + 2;
            return 1;
        }
        default:
            return -1;
        }
    }
}
