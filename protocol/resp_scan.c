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
        size_t start = s->pos;
        const char *nl = memchr(buf + start, '\n', len - start);
        if (!nl) return 0;
        size_t eol = (size_t)(nl - buf);           /* index of '\n' */
        if (eol == start || buf[eol - 1] != '\r') { s->err = "header line not terminated by CRLF"; return -1; }
        size_t cr = eol - 1, next = eol + 1;
        char type = buf[start];
        long long n;
        switch (type) {
        case '+': case '-': case ':': case '_': case ',': case '#': case '(':
            s->pos = next;
            s->outstanding--;
            break;
        case '$': case '!': case '=':
            if (line_int(buf, start + 1, cr, &n) || n < -1 || (n == -1 && type != '$')) {
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
            if (line_int(buf, start + 1, cr, &n) || n < -1 || (n == -1 && type != '*') || n > RESP_SCAN_MAX_ELEMENTS) {
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
