/* resp_writer.c — append RESP2/RESP3 replies to a resp_out buffer.
 *
 * Shapes are those Redis 7.0 sends (networking.c addReply*): the protocol
 * version in o->proto picks between the RESP3 type and its RESP2 stand-in.
 * Every function appends one whole value (or one aggregate header) or
 * nothing: on allocation failure it returns -1 and o is unchanged.
 * Integers and lengths are formatted with resp_ll_fmt (no snprintf).
 */
#include "protocol/resp.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void resp_out_init(resp_out *o, int proto) {
    o->data = NULL;
    o->len = o->cap = 0;
    o->proto = proto == 3 ? 3 : 2;
    o->limit = 0;
    o->over = 0;
}

void resp_out_free(resp_out *o) {
    free(o->data);
    o->data = NULL;
    o->len = o->cap = 0;
}

int resp_out_reserve(resp_out *o, size_t extra) {
    if (o->cap - o->len >= extra) return 0;
    if (extra > (size_t)-1 / 2 - o->len) return -1;
    size_t need = o->len + extra;
    if (o->limit && need > o->limit) { o->over = 1; return -1; }
    size_t cap = o->cap ? o->cap : 64;
    while (cap < need) cap *= 2;
    if (o->limit && cap > o->limit) cap = o->limit;     /* need <= limit: still enough */
    char *nd = realloc(o->data, cap);
    if (!nd) return -1;
    o->data = nd;
    o->cap = cap;
    return 0;
}

int resp_out_insert_header(resp_out *o, size_t mark, int kind, long long n) {
    char buf[32];
    resp_out h = { .data = buf, .cap = sizeof buf, .proto = o->proto };   /* room enough: never grows */
    int r = kind == 'm' ? resp_add_map(&h, n) : kind == 's' ? resp_add_set(&h, n) : resp_add_array(&h, n);
    if (r == 0) r = resp_out_reserve(o, h.len);
    if (r != 0) return -1;
    memmove(o->data + mark + h.len, o->data + mark, o->len - mark);
    memcpy(o->data + mark, h.data, h.len);
    o->len += h.len;
    return 0;
}

int resp_out_raw(resp_out *o, const void *p, size_t n) {
    if (resp_out_reserve(o, n) < 0) return -1;
    if (n) memcpy(o->data + o->len, p, n);
    o->len += n;
    return 0;
}

/* "<c><v>\r\n" — the header of every length-prefixed or integer value. */
static int add_hdr(resp_out *o, char c, long long v) {
    if (resp_out_reserve(o, 24) < 0) return -1;
    char *d = o->data + o->len;
    d[0] = c;
    int n = 1 + resp_ll_fmt(d + 1, v);
    d[n] = '\r';
    d[n + 1] = '\n';
    o->len += (size_t)n + 2;
    return 0;
}

/* A bulk string with a header already known to fit: one reservation. */
static int add_bulk(resp_out *o, const void *p, size_t n) {
    if (n > (size_t)-1 / 2 || resp_out_reserve(o, n + 26) < 0) return -1;
    add_hdr(o, '$', (long long)n);
    if (n) memcpy(o->data + o->len, p, n);
    o->data[o->len + n] = '\r';
    o->data[o->len + n + 1] = '\n';
    o->len += n + 2;
    return 0;
}

int resp_add_simple(resp_out *o, const char *s, size_t n) {
    if (n > (size_t)-1 / 2 || resp_out_reserve(o, n + 3) < 0) return -1;
    char *d = o->data + o->len;
    d[0] = '+';
    if (n) memcpy(d + 1, s, n);
    d[n + 1] = '\r';
    d[n + 2] = '\n';
    o->len += n + 3;
    return 0;
}

int resp_add_status(resp_out *o, const char *s) {
    return resp_add_simple(o, s, strlen(s));
}

/* "-<s>\r\n" with CR/LF inside s turned into spaces (as Redis does for
 * error texts). A leading '-' in s is not doubled. */
static int add_error_len(resp_out *o, const char *s, size_t n) {
    if (n && s[0] == '-') { s++; n--; }
    if (n > (size_t)-1 / 2 || resp_out_reserve(o, n + 3) < 0) return -1;
    char *d = o->data + o->len;
    d[0] = '-';
    for (size_t i = 0; i < n; i++) d[i + 1] = (s[i] == '\r' || s[i] == '\n') ? ' ' : s[i];
    d[n + 1] = '\r';
    d[n + 2] = '\n';
    o->len += n + 3;
    return 0;
}

int resp_add_error(resp_out *o, const char *s) {
    return add_error_len(o, s, strlen(s));
}

int resp_add_errorf(resp_out *o, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return -1;
    if ((size_t)n < sizeof small) return add_error_len(o, small, (size_t)n);
    char *big = malloc((size_t)n + 1);
    if (!big) return -1;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    int rc = add_error_len(o, big, (size_t)n);
    free(big);
    return rc;
}

int resp_add_unknown_command(resp_out *o, int argc, const resp_arg *argv) {
    char args[512];
    size_t al = 0;
    args[0] = '\0';
    for (int i = 1; i < argc && al < 128; i++) {
        int room = 128 - (int)al;
        int n = snprintf(args + al, sizeof args - al, "'%.*s' ",
                         (int)(argv[i].len < (size_t)room ? argv[i].len : (size_t)room), argv[i].ptr);
        if (n > 0) al += (size_t)n;
        if (al >= sizeof args) { al = sizeof args - 1; break; }
    }
    return resp_add_errorf(o, "ERR unknown command '%.*s', with args beginning with: %s",
                           (int)(argv[0].len > 128 ? 128 : argv[0].len), argv[0].ptr, args);
}

int resp_add_int(resp_out *o, long long v) { return add_hdr(o, ':', v); }

int resp_add_bulk(resp_out *o, const void *p, size_t n) { return add_bulk(o, p, n); }

int resp_add_bulk_cstr(resp_out *o, const char *s) { return add_bulk(o, s, strlen(s)); }

int resp_add_bulk_ll(resp_out *o, long long v) {
    char tmp[24];
    return add_bulk(o, tmp, (size_t)resp_ll_fmt(tmp, v));
}

int resp_add_null(resp_out *o) {
    return o->proto == 3 ? resp_out_raw(o, "_\r\n", 3) : resp_out_raw(o, "$-1\r\n", 5);
}

int resp_add_null_array(resp_out *o) {
    return o->proto == 3 ? resp_out_raw(o, "_\r\n", 3) : resp_out_raw(o, "*-1\r\n", 5);
}

int resp_add_array(resp_out *o, long long n) { return add_hdr(o, '*', n); }

int resp_add_map(resp_out *o, long long n) {
    if (o->proto == 3) return add_hdr(o, '%', n);
    if (n > LLONG_MAX / 2 || n < LLONG_MIN / 2) return -1;
    return add_hdr(o, '*', n * 2);
}

int resp_add_set(resp_out *o, long long n) { return add_hdr(o, o->proto == 3 ? '~' : '*', n); }

int resp_add_push(resp_out *o, long long n) { return add_hdr(o, o->proto == 3 ? '>' : '*', n); }

/* Redis 7.0 addReplyDouble: "%.17g" (so 3.0 is "3", 0.1 is
 * "0.10000000000000001"), infinities spelled "inf"/"-inf"; RESP2 sends the
 * text as a bulk string, RESP3 as ",<text>\r\n". */
int resp_add_double(resp_out *o, double d) {
    char buf[48];
    int n;
    if (isinf(d)) {
        n = d > 0 ? 3 : 4;
        memcpy(buf, d > 0 ? "inf" : "-inf", (size_t)n);
    } else {
        n = snprintf(buf, sizeof buf, "%.17g", d);
        if (n < 0 || (size_t)n >= sizeof buf) return -1;
    }
    if (o->proto != 3) return add_bulk(o, buf, (size_t)n);
    if (resp_out_reserve(o, (size_t)n + 3) < 0) return -1;
    char *w = o->data + o->len;
    w[0] = ',';
    memcpy(w + 1, buf, (size_t)n);
    w[n + 1] = '\r';
    w[n + 2] = '\n';
    o->len += (size_t)n + 3;
    return 0;
}

int resp_add_bool(resp_out *o, int b) {
    if (o->proto == 3) return resp_out_raw(o, b ? "#t\r\n" : "#f\r\n", 4);
    return resp_out_raw(o, b ? ":1\r\n" : ":0\r\n", 4);
}

/* RESP3: "=<n+4>\r\n<fmt3>:<data>\r\n", fmt3 padded with spaces to 3 bytes
 * (Redis addReplyVerbatim); RESP2: a plain bulk string. */
int resp_add_verbatim(resp_out *o, const char *fmt3, const void *p, size_t n) {
    if (o->proto != 3) return add_bulk(o, p, n);
    if (n > (size_t)-1 / 2 || resp_out_reserve(o, n + 32) < 0) return -1;
    add_hdr(o, '=', (long long)n + 4);
    char *w = o->data + o->len;
    const char *e = fmt3 ? fmt3 : "";
    for (int i = 0; i < 3; i++) w[i] = *e ? *e++ : ' ';
    w[3] = ':';
    if (n) memcpy(w + 4, p, n);
    w[n + 4] = '\r';
    w[n + 5] = '\n';
    o->len += n + 6;
    return 0;
}
