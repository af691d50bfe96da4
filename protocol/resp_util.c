/* resp_util.c — strict number parsing/formatting and glob matching shared by
 * the writer and by command handlers. Pure functions: no allocation, no I/O.
 *
 * The rules follow Redis 7.0 util.c (string2ll, string2ld, ll2string,
 * ld2string LD_STR_HUMAN, stringmatchlen) so replies and error decisions are
 * byte-for-byte those of Redis.
 */
#include "protocol/resp.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ integers */

/* Two ASCII digits for every value 0..99, so formatting does one division
 * per two digits. */
static const char digit_pairs[201] =
    "0001020304050607080910111213141516171819"
    "2021222324252627282930313233343536373839"
    "4041424344454647484950515253545556575859"
    "6061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* Digits of v (at least one). */
static int u64_digits(unsigned long long v) {
    int n = 1;
    for (;;) {
        if (v < 10) return n;
        if (v < 100) return n + 1;
        if (v < 1000) return n + 2;
        if (v < 10000) return n + 3;
        v /= 10000;
        n += 4;
    }
}

/* Write the decimal form of v to dst (which has room for 20 bytes, no NUL
 * is written). Returns the length. Used by the writer's hot path. */
int resp_u64_fmt(char *dst, unsigned long long v) {
    int len = u64_digits(v), i = len - 1;
    while (v >= 100) {
        unsigned idx = (unsigned)(v % 100) * 2;
        v /= 100;
        dst[i] = digit_pairs[idx + 1];
        dst[i - 1] = digit_pairs[idx];
        i -= 2;
    }
    if (v < 10) {
        dst[i] = (char)('0' + v);
    } else {
        unsigned idx = (unsigned)v * 2;
        dst[i] = digit_pairs[idx + 1];
        dst[i - 1] = digit_pairs[idx];
    }
    return len;
}

/* Like resp_u64_fmt for a signed value: dst needs room for 20 bytes. */
int resp_ll_fmt(char *dst, long long v) {
    if (v < 0) {
        dst[0] = '-';
        return 1 + resp_u64_fmt(dst + 1, (unsigned long long)0 - (unsigned long long)v);
    }
    return resp_u64_fmt(dst, (unsigned long long)v);
}

/* NUL-terminated decimal form of v. Returns its length, or 0 (and an empty
 * string when buflen > 0) if buf cannot hold it with its NUL. */
int resp_ll2str(char *buf, size_t buflen, long long v) {
    char tmp[24];
    int n = resp_ll_fmt(tmp, v);
    if (buflen < (size_t)n + 1) {
        if (buflen) buf[0] = '\0';
        return 0;
    }
    memcpy(buf, tmp, (size_t)n);
    buf[n] = '\0';
    return n;
}

/* Redis string2ll: optional '-', then "0" alone or a digit 1-9 followed by
 * digits; nothing else (no spaces, no '+', no leading zeros, no "-0"), no
 * overflow, fewer than 21 bytes. 0 on success, -1 otherwise (*out untouched). */
int resp_str2ll(const char *s, size_t n, long long *out) {
    size_t i = 0;
    int neg = 0;
    unsigned long long v;

    if (n == 0 || n >= 21) return -1;
    if (n == 1 && s[0] == '0') {
        if (out) *out = 0;
        return 0;
    }
    if (s[0] == '-') {
        neg = 1;
        if (++i == n) return -1;
    }
    if (s[i] < '1' || s[i] > '9') return -1;
    v = (unsigned long long)(s[i++] - '0');
    for (; i < n; i++) {
        unsigned d;
        if (s[i] < '0' || s[i] > '9') return -1;
        d = (unsigned)(s[i] - '0');
        if (v > ULLONG_MAX / 10) return -1;
        v *= 10;
        if (v > ULLONG_MAX - d) return -1;
        v += d;
    }
    if (neg) {
        if (v > (unsigned long long)LLONG_MAX + 1) return -1;
        if (out) *out = (long long)(0 - v);   /* two's complement: LLONG_MIN ok */
    } else {
        if (v > (unsigned long long)LLONG_MAX) return -1;
        if (out) *out = (long long)v;
    }
    return 0;
}

/* ------------------------------------------------------------ long doubles */

/* Redis's MAX_LONG_DOUBLE_CHARS: string2ld rejects longer inputs, and it is
 * enough for "%.17Lf" of any long double. */
#define LD_MAX_CHARS (5 * 1024)

static int is_space(int c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* Redis string2ld: strtold over the whole string; rejects empty or >= 5 KB
 * input, a leading space, trailing bytes, overflow/underflow to inf/0 and
 * NaN. Accepts what strtold accepts otherwise ("+1", "1e3", "0x1p3", "inf").
 * 0 on success, -1 otherwise. */
int resp_str2ld(const char *s, size_t n, long double *out) {
    char buf[LD_MAX_CHARS];
    char *end;
    long double v;

    if (n == 0 || n >= sizeof buf) return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    errno = 0;
    v = strtold(buf, &end);
    if (is_space((unsigned char)buf[0]) || *end != '\0' || (size_t)(end - buf) != n ||
        (errno == ERANGE && (isinf(v) || v == 0.0L)) || errno == EINVAL || isnan(v))
        return -1;
    if (out) *out = v;
    return 0;
}

/* Redis ld2string(..., LD_STR_HUMAN): "%.17Lf", trailing zeros and a bare
 * '.' removed, "-0" shown as "0"; "inf"/"-inf" spelled out. This is how
 * INCRBYFLOAT / HINCRBYFLOAT results are stored and replied. Returns the
 * length (NUL-terminated), or 0 with an empty string when buf is too small. */
int resp_format_ld(char *buf, size_t buflen, long double v) {
    size_t l;
    int r;

    if (isinf(v)) {
        const char *s = v > 0 ? "inf" : "-inf";
        l = strlen(s);
        if (buflen < l + 1) goto err;
        memcpy(buf, s, l + 1);
        return (int)l;
    }
    if (buflen == 0) return 0;
    r = snprintf(buf, buflen, "%.17Lf", v);
    if (r < 0 || (size_t)r + 1 > buflen) goto err;
    l = (size_t)r;
    if (memchr(buf, '.', l)) {
        while (l > 0 && buf[l - 1] == '0') l--;
        if (l > 0 && buf[l - 1] == '.') l--;
    }
    if (l == 2 && buf[0] == '-' && buf[1] == '0') {
        buf[0] = '0';
        l = 1;
    }
    buf[l] = '\0';
    return (int)l;
err:
    if (buflen) buf[0] = '\0';
    return 0;
}

/* A double in the same human form. The double is first turned into its
 * shortest round-tripping decimal ("%.15g".."%.17g") and that decimal is
 * formatted as the long double Redis would have computed, so 10.6 prints
 * "10.6" and not "10.59999999999999964". Exact Redis parity for
 * INCRBYFLOAT needs the arithmetic in long double: use resp_format_ld. */
int resp_format_double(char *buf, size_t buflen, double d) {
    char tmp[40];
    int prec;

    if (isinf(d) || isnan(d) || d == 0.0) {
        const char *s = isnan(d) ? "nan" : isinf(d) ? (d > 0 ? "inf" : "-inf") : "0";
        size_t l = strlen(s);
        if (buflen < l + 1) {
            if (buflen) buf[0] = '\0';
            return 0;
        }
        memcpy(buf, s, l + 1);
        return (int)l;
    }
    for (prec = 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, d);
        if (prec == 17 || strtod(tmp, NULL) == d) break;
    }
    return resp_format_ld(buf, buflen, strtold(tmp, NULL));
}

size_t resp_vformat_line(char *buf, size_t cap, const char *fmt, va_list ap) {
    int n = vsnprintf(buf, cap - 2, fmt, ap);
    if (n < 0) n = 0;
    if ((size_t)n > cap - 3) n = (int)cap - 3;
    buf[n] = '\r';
    buf[n + 1] = '\n';
    return (size_t)n + 2;
}

int resp_format_d2string(char *buf, size_t buflen, double d) {
    int n;
    if (d == 0) n = snprintf(buf, buflen, "%s", signbit(d) ? "-0" : "0");
    else if (isinf(d)) n = snprintf(buf, buflen, "%s", d > 0 ? "inf" : "-inf");
    else if (d >= (double)(-LLONG_MAX / 2) && d <= (double)(LLONG_MAX / 2) && d == (double)(long long)d)
        n = snprintf(buf, buflen, "%lld", (long long)d);
    else n = snprintf(buf, buflen, "%.17g", d);
    return n < 0 ? 0 : (size_t)n < buflen ? n : (int)buflen - 1;
}

/* ------------------------------------------------------------ glob */

/* tolower() as Redis gets it: "C" locale (Redis sets only LC_COLLATE) on
 * glibc, called with a signed char. ASCII letters are lowered; glibc maps
 * the negative values -128..-2 to their unsigned byte (128..254) and keeps
 * -1 (EOF, i.e. byte 0xff) as -1. Only nocase ranges can tell the difference. */
static int lower(int c) {
    if (c >= 'A' && c <= 'Z') return c + ('a' - 'A');
    if (c < -1) return c + 256;
    return c;
}

/* One pattern element at pat[*pi] (not '*') against the byte c. Advances
 * *pi past the element. Returns 1 if the byte matches. Bytes are compared as
 * signed chars, as Redis does on x86 (matters for ranges with bytes >= 0x80). */
static int glob_one(const char *pat, size_t plen, size_t *pi, int c, int nocase) {
    size_t i = *pi;
    int match = 0;

    if (pat[i] == '?') {
        match = 1;
    } else if (pat[i] == '[') {
        int not;
        i++;
        not = i < plen && pat[i] == '^';
        if (not) i++;
        for (;;) {
            size_t rem = plen - i;
            if (rem >= 2 && pat[i] == '\\') {
                i++;
                if ((signed char)pat[i] == c) match = 1;   /* escaped: case-sensitive, as Redis */
            } else if (rem >= 1 && pat[i] == ']') {
                break;
            } else if (rem == 0) {
                i--;                                      /* unterminated: class ends with the pattern */
                break;
            } else if (rem >= 3 && pat[i + 1] == '-') {
                int start = (signed char)pat[i], end = (signed char)pat[i + 2], cc = c;
                if (start > end) { int t = start; start = end; end = t; }
                if (nocase) { start = lower(start); end = lower(end); cc = lower(cc); }
                i += 2;
                if (cc >= start && cc <= end) match = 1;
            } else if (!nocase ? (signed char)pat[i] == c : lower((signed char)pat[i]) == lower(c)) {
                match = 1;
            }
            i++;
        }
        if (not) match = !match;
    } else {
        if (pat[i] == '\\' && plen - i >= 2) i++;
        match = !nocase ? (signed char)pat[i] == c : lower((signed char)pat[i]) == lower(c);
    }
    *pi = i + 1;
    return match;
}

/* Redis stringmatchlen. Every element but '*' consumes exactly one byte, so
 * on a mismatch it is enough to let the most recent '*' absorb one more byte
 * (no recursion: patterns with many stars cannot blow the stack, and the
 * work is O(plen * slen) at worst). The Redis quirks are kept: an empty
 * string matches only the empty pattern (so "*" does not match ""), and
 * trailing stars match once the string is used up. */
int resp_glob_match(const char *pat, size_t plen, const char *s, size_t slen, int nocase) {
    size_t pi = 0, si = 0;
    size_t star_p = (size_t)-1, star_s = 0;

    if (slen == 0) return plen == 0;
    for (;;) {
        if (pi < plen && si < slen) {
            if (pat[pi] == '*') {
                while (pi + 1 < plen && pat[pi + 1] == '*') pi++;
                if (pi + 1 == plen) return 1;
                star_p = ++pi;
                star_s = si;
                continue;
            }
            if (glob_one(pat, plen, &pi, (signed char)s[si], nocase)) {
                si++;
                if (si < slen) continue;
                while (pi < plen && pat[pi] == '*') pi++;
                if (pi == plen) return 1;
            }
        }
        /* mismatch, pattern exhausted with string left, or string exhausted
         * with pattern left: let the last star take one more byte */
        if (star_p == (size_t)-1) return 0;
        if (++star_s >= slen) return 0;
        pi = star_p;
        si = star_s;
    }
}
