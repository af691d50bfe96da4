/* resp_scan.c — reply boundaries in a RESP2/RESP3 stream (see resp_scan.h). */
#include "resp_scan.h"
#include "resp.h"

#include <string.h>

void resp_scanner_init(resp_scanner *s) {
    s->pos = 0;
    s->depth = 0;
    s->err = NULL;
}

/* Parse the integer of a header line buf[from..eol) ("\r" at eol). */
static int line_int(const char *buf, size_t from, size_t eol, long long *v) {
    return resp_str2ll(buf + from, eol - from, v);
}

/* One value finished: pop the aggregates it completed. A completed
 * attribute is not a value of its parent (the value it annotates follows).
 * Returns 1 when the whole reply is complete. */
static int value_done(resp_scanner *s) {
    while (s->depth > 0) {
        if (--s->left[s->depth - 1] > 0) return 0;
        s->depth--;
        if (s->attr[s->depth]) return 0;
    }
    return 1;
}

static int push(resp_scanner *s, long long n, int attr) {
    if (s->depth == RESP_SCAN_MAX_DEPTH) { s->err = "reply nested too deeply"; return -1; }
    s->attr[s->depth] = (char)attr;
    s->left[s->depth++] = n;
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
            if (value_done(s)) goto complete;
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
            if (value_done(s)) goto complete;
            break;
        case '*': case '~': case '>': case '%': case '|':
            if (line_int(buf, start + 1, cr, &n) || n < -1 || (n == -1 && type != '*') || n > (1LL << 40)) {
                s->err = "invalid aggregate length";
                return -1;
            }
            s->pos = next;
            if (type == '%') n *= 2;
            if (type == '|') {
                /* attribute: 2n elements that annotate the value after them */
                if (n > 0 && push(s, 2 * n, 1)) return -1;
                break;
            }
            if (n <= 0) {
                if (value_done(s)) goto complete;
            } else if (push(s, n, 0)) {
                return -1;
            }
            break;
        default:
            s->err = "unknown reply type byte";
            return -1;
        }
    }
    return 0;
complete:;
    long long total = (long long)s->pos;
    s->pos = 0;
    s->depth = 0;
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
