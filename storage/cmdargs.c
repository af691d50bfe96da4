/* cmdargs.c — option parsing shared by the Redis-types backends: see
 * cmdargs.h. The texts and the order of the checks are Redis 7.0's. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "cmdargs.h"
#include "command.h"


/* ---------------------------------------------------------------- SET / GETEX */

#define ANYEXP (FD_SET_EX | FD_SET_PX | FD_SET_EXAT | FD_SET_PXAT)

int fd_parse_set_opts(const resp_arg *argv, int argc, int first, int is_set,
                      int *flags, const resp_arg **exp)
{
    *flags = 0;
    *exp = NULL;
    for (int j = first; j < argc; j++) {
        const resp_arg *a = &argv[j];
        const resp_arg *next = j + 1 < argc ? &argv[j + 1] : NULL;
        int f = *flags;
        if (resp_arg_is(a, "nx") && !(f & FD_SET_XX) && is_set) *flags |= FD_SET_NX;
        else if (resp_arg_is(a, "xx") && !(f & FD_SET_NX) && is_set) *flags |= FD_SET_XX;
        else if (resp_arg_is(a, "get") && is_set) *flags |= FD_SET_GET;
        else if (resp_arg_is(a, "keepttl") && !(f & (FD_SET_PERSIST | ANYEXP)) && is_set) *flags |= FD_SET_KEEPTTL;
        else if (resp_arg_is(a, "persist") && !is_set && !(f & (ANYEXP | FD_SET_KEEPTTL))) *flags |= FD_SET_PERSIST;
        else if (resp_arg_is(a, "ex") && !(f & (FD_SET_KEEPTTL | FD_SET_PERSIST | FD_SET_EXAT | FD_SET_PX | FD_SET_PXAT)) && next) {
            *flags |= FD_SET_EX; *exp = next; j++;
        } else if (resp_arg_is(a, "px") && !(f & (FD_SET_KEEPTTL | FD_SET_PERSIST | FD_SET_EX | FD_SET_EXAT | FD_SET_PXAT)) && next) {
            *flags |= FD_SET_PX; *exp = next; j++;
        } else if (resp_arg_is(a, "exat") && !(f & (FD_SET_KEEPTTL | FD_SET_PERSIST | FD_SET_EX | FD_SET_PX | FD_SET_PXAT)) && next) {
            *flags |= FD_SET_EXAT; *exp = next; j++;
        } else if (resp_arg_is(a, "pxat") && !(f & (FD_SET_KEEPTTL | FD_SET_PERSIST | FD_SET_EX | FD_SET_EXAT | FD_SET_PX)) && next) {
            *flags |= FD_SET_PXAT; *exp = next; j++;
        } else return FD_E_SYNTAX;
    }
    return FD_OK;
}

int fd_set_expire_ms(const resp_arg *a, int flags, int64_t now_ms, int64_t *out)
{
    long long v;
    if (resp_str2ll(a->ptr, a->len, &v) != 0) return FD_E_NOTINT;
    int seconds = (flags & (FD_SET_EX | FD_SET_EXAT)) != 0;
    if (v <= 0 || (seconds && v > LLONG_MAX / 1000)) return FD_E_EXPIRE;
    if (seconds) v *= 1000;
    if (flags & (FD_SET_EX | FD_SET_PX)) {
        if (v > LLONG_MAX - now_ms) return FD_E_EXPIRE;
        v += now_ms;
    }
    if (v <= 0) return FD_E_EXPIRE;
    *out = v;
    return FD_OK;
}

/* ---------------------------------------------------------------- EXPIRE family */

int fd_parse_expire_opts(const resp_arg *argv, int argc, int first, int *flags, resp_out *out)
{
    int f = 0;
    for (int j = first; j < argc; j++) {
        const resp_arg *a = &argv[j];
        if (resp_arg_is(a, "nx")) f |= FD_EXPIRE_NX;
        else if (resp_arg_is(a, "xx")) f |= FD_EXPIRE_XX;
        else if (resp_arg_is(a, "gt")) f |= FD_EXPIRE_GT;
        else if (resp_arg_is(a, "lt")) f |= FD_EXPIRE_LT;
        else return resp_add_errorf(out, "ERR Unsupported option %.*s", (int)a->len, a->ptr) ? -1 : 1;
    }
    if ((f & FD_EXPIRE_NX) && (f & (FD_EXPIRE_XX | FD_EXPIRE_GT | FD_EXPIRE_LT)))
        return resp_add_error(out, "ERR NX and XX, GT or LT options at the same time are not compatible") ? -1 : 1;
    if ((f & FD_EXPIRE_GT) && (f & FD_EXPIRE_LT))
        return resp_add_error(out, "ERR GT and LT options at the same time are not compatible") ? -1 : 1;
    *flags = f;
    return 0;
}

int fd_expire_when(const resp_arg *a, int64_t base, int seconds, long long *when)
{
    long long w;
    if (resp_str2ll(a->ptr, a->len, &w) != 0) return FD_E_NOTINT;
    if (seconds) {
        if (w > LLONG_MAX / 1000 || w < LLONG_MIN / 1000) return FD_E_EXPIRE;
        w *= 1000;
    }
    if (w > LLONG_MAX - base) return FD_E_EXPIRE;
    *when = w + base;
    return FD_OK;
}

int fd_expire_refused(int flags, int64_t cur, long long when)
{
    return ((flags & FD_EXPIRE_NX) && cur) || ((flags & FD_EXPIRE_XX) && !cur) ||
           ((flags & FD_EXPIRE_GT) && (!cur || when <= cur)) ||
           ((flags & FD_EXPIRE_LT) && cur && when >= cur);
}

/* ---------------------------------------------------------------- *SCAN */

int fd_parse_cursor(const resp_arg *ca, uint64_t *out)
{
    uint64_t cursor = 0;
    size_t i0 = 0;
    int neg = 0;
    /* Redis reads the C string: it ends at the first NUL */
    size_t len = strnlen(ca->ptr, ca->len);
    if (len && (ca->ptr[0] == '-' || ca->ptr[0] == '+')) { neg = ca->ptr[0] == '-'; i0 = 1; }
    /* strtoul: "" is 0 (Redis accepts it), a lone sign is not a number */
    int bad = (i0 && len == i0) || len - i0 > 20;
    for (size_t i = i0; i < len && !bad; i++) {
        unsigned d = (unsigned char)ca->ptr[i] - '0';
        if (d > 9 || cursor > (UINT64_MAX - d) / 10) bad = 1;
        else cursor = cursor * 10 + d;
    }
    if (bad) return -1;
    *out = neg ? (uint64_t)0 - cursor : cursor;
    return 0;
}

int fd_scan_cursor(const resp_arg *ca, uint64_t *cursor, resp_out *out, int *replied)
{
    *replied = fd_parse_cursor(ca, cursor) != 0;
    if (*replied && resp_add_error(out, "ERR invalid cursor")) return FD_E_NOMEM;
    return FD_OK;
}

int fd_parse_scan_opts(const resp_arg *argv, int argc, int first, long long *count,
                       const resp_arg **pat, const resp_arg **type)
{
    *count = 10;
    *pat = NULL;
    if (type) *type = NULL;
    for (int i = first; i < argc; i++) {
        int more = i + 1 < argc;
        if (resp_arg_is(&argv[i], "count") && more) {
            if (resp_str2ll(argv[i + 1].ptr, argv[i + 1].len, count) != 0) return FD_E_NOTINT;
            if (*count < 1) return FD_E_SYNTAX;
            i++;
        } else if (resp_arg_is(&argv[i], "match") && more) {
            *pat = &argv[++i];
            if ((*pat)->len == 1 && (*pat)->ptr[0] == '*') *pat = NULL;
        } else if (type && resp_arg_is(&argv[i], "type") && more) {
            *type = &argv[++i];
        } else return FD_E_SYNTAX;
    }
    return FD_OK;
}

/* ---------------------------------------------------------------- sorted sets */

int fd_lexcmp(const char *a, size_t al, const char *b, size_t bl)
{
    int r = memcmp(a, b, al < bl ? al : bl);
    if (r) return r;
    return al < bl ? -1 : al > bl;
}

int fd_parse_score(const resp_arg *a, double *out)
{
    char buf[128], *p = buf, *end;
    if (a->len == 0 || isspace((unsigned char)a->ptr[0])) return -1;
    if (a->len >= sizeof buf && !(p = malloc(a->len + 1))) return -1;
    memcpy(p, a->ptr, a->len);
    p[a->len] = '\0';
    errno = 0;
    double d = strtod(p, &end);
    int bad = (size_t)(end - p) != a->len ||
              (errno == ERANGE && (d == HUGE_VAL || d == -HUGE_VAL || fpclassify(d) == FP_ZERO)) || isnan(d);
    if (p != buf) free(p);
    if (bad) return -1;
    *out = d;
    return 0;
}

#define REPLY(txt) do { *replied = 1; return resp_add_error(out, txt) ? FD_E_NOMEM : FD_OK; } while (0)

int fd_parse_zadd(const resp_arg *argv, int argc, int is_incr, int *flags, int *first,
                  int *pairs, resp_out *out, int *replied)
{
    int f = is_incr ? FD_ZADD_INCR : 0, idx = 2;
    *replied = 0;
    while (!is_incr && idx < argc) {
        const resp_arg *a = &argv[idx];
        if (resp_arg_is(a, "nx")) f |= FD_ZADD_NX;
        else if (resp_arg_is(a, "xx")) f |= FD_ZADD_XX;
        else if (resp_arg_is(a, "ch")) f |= FD_ZADD_CH;
        else if (resp_arg_is(a, "incr")) f |= FD_ZADD_INCR;
        else if (resp_arg_is(a, "gt")) f |= FD_ZADD_GT;
        else if (resp_arg_is(a, "lt")) f |= FD_ZADD_LT;
        else break;
        idx++;
    }
    int elements = argc - idx;
    if (elements % 2 || !elements) return FD_E_SYNTAX;
    elements /= 2;
    if ((f & FD_ZADD_NX) && (f & FD_ZADD_XX))
        REPLY("ERR XX and NX options at the same time are not compatible");
    if (((f & FD_ZADD_GT) && (f & FD_ZADD_NX)) || ((f & FD_ZADD_LT) && (f & FD_ZADD_NX)) ||
        ((f & FD_ZADD_GT) && (f & FD_ZADD_LT)))
        REPLY("ERR GT, LT, and/or NX options at the same time are not compatible");
    if ((f & FD_ZADD_INCR) && elements > 1)
        REPLY("ERR INCR option supports a single increment-element pair");
    for (int j = 0; j < elements; j++) {
        double d;
        if (fd_parse_score(&argv[idx + 2 * j], &d) != 0) return FD_E_NOTFLOAT;
    }
    *flags = f;
    *first = idx;
    *pairs = elements;
    return FD_OK;
}

int fd_arg_ll(const resp_arg *a, long long *v)
{
    return resp_str2ll(a->ptr, a->len, v) == 0 ? FD_OK : FD_E_NOTINT;
}

int fd_rank_range(long long n, long long *start, long long *end)
{
    if (*start < 0) *start += n;
    if (*end < 0) *end += n;
    if (*start < 0) *start = 0;
    if (*start > *end || *start >= n) return 0;
    if (*end >= n) *end = n - 1;
    return 1;
}

int fd_parse_sintercard(const resp_arg *argv, int argc, long long *numkeys, long long *limit,
                        resp_out *out, int *replied)
{
    const char *err = NULL;
    *limit = 0;
    *replied = 0;
    if (resp_str2ll(argv[1].ptr, argv[1].len, numkeys) != 0 || *numkeys < 1)
        err = "ERR numkeys should be greater than 0";
    else if (*numkeys > argc - 2)
        err = "ERR Number of keys can't be greater than number of args";
    /* the options after the keys (numkeys is not added to unless it is valid:
     * 2147483647 + 2 overflows an int) */
    for (int i = err ? argc : 2 + (int)*numkeys; !err && i < argc; i++) {
        if (resp_arg_is(&argv[i], "limit") && i + 1 < argc) {
            i++;
            if (resp_str2ll(argv[i].ptr, argv[i].len, limit) != 0 || *limit < 0) err = "ERR LIMIT can't be negative";
        } else return FD_E_SYNTAX;
    }
    if (!err) return FD_OK;
    *replied = 1;
    return resp_add_error(out, err) ? FD_E_NOMEM : FD_OK;
}

/* LEFT (1) or RIGHT (0): 0, or -1 for anything else. */
static int list_end(const resp_arg *a, int *left)
{
    if (resp_arg_is(a, "left")) *left = 1;
    else if (resp_arg_is(a, "right")) *left = 0;
    else return -1;
    return 0;
}

int fd_parse_lmove(const resp_arg *argv, int *from_left, int *to_left)
{
    return list_end(&argv[3], from_left) || list_end(&argv[4], to_left) ? FD_E_SYNTAX : FD_OK;
}

int fd_parse_lpos(const resp_arg *argv, int argc, fd_lpos *o, resp_out *out, int *replied)
{
    o->rank = 1;
    o->count = -1;
    o->maxlen = 0;
    o->rev = o->nolimit = 0;
    *replied = 0;
    const char *err = NULL;
    for (int j = 3; j < argc && !err; j++) {
        int more = j + 1 < argc;
        const resp_arg *a = &argv[j];
        if (resp_arg_is(a, "rank") && more) {
            j++;
            if (resp_str2ll(argv[j].ptr, argv[j].len, &o->rank) != 0) return FD_E_NOTINT;
            if (o->rank == 0)
                err = "ERR RANK can't be zero: use 1 to start from the first match, "
                      "2 from the second ... or use negative to start from the end of the list";
        } else if (resp_arg_is(a, "count") && more) {
            j++;
            if (resp_str2ll(argv[j].ptr, argv[j].len, &o->count) != 0 || o->count < 0) err = "ERR COUNT can't be negative";
        } else if (resp_arg_is(a, "maxlen") && more) {
            j++;
            if (resp_str2ll(argv[j].ptr, argv[j].len, &o->maxlen) != 0 || o->maxlen < 0) err = "ERR MAXLEN can't be negative";
        } else return FD_E_SYNTAX;
    }
    if (err) {
        *replied = 1;
        return resp_add_error(out, err) ? FD_E_NOMEM : FD_OK;
    }
    if (o->rank == LLONG_MIN) {
        /* redis-server 7.0 negates it (it stays negative): every match from
         * the tail counts, and "matches - rank + 1 >= count" never holds */
        o->rev = 1;
        o->rank = 1;
        o->nolimit = 1;
    } else if (o->rank < 0) {
        o->rev = 1;
        o->rank = -o->rank;
    }
    return FD_OK;
}

/* One bound of zslParseRange: "(" prefix = exclusive; strtod must reach
 * the end of the C string (so an embedded NUL ends it, as in Redis). */
int fd_parse_score_bound(const resp_arg *a, double *out, int *ex)
{
    char buf[128], *p = buf, *end;
    if (a->len >= sizeof buf && !(p = malloc(a->len + 1))) return -1;
    memcpy(p, a->ptr, a->len);
    p[a->len] = '\0';
    *ex = p[0] == '(';
    double d = strtod(p + *ex, &end);
    int bad = end[0] != '\0' || isnan(d);
    if (p != buf) free(p);
    if (bad) return -1;
    *out = d;
    return 0;
}

/* One item of zslParseLexRange: 1 = "-", 2 = "+", 0 = a string ("["
 * inclusive, "(" exclusive); -1 invalid. */
int fd_parse_lex_bound(const resp_arg *a, const char **s, size_t *l, int *ex)
{
    if (a->len == 0) return -1;
    switch (a->ptr[0]) {
    case '-': if (a->len != 1) return -1; *ex = 1; return 1;
    case '+': if (a->len != 1) return -1; *ex = 1; return 2;
    case '(': *ex = 1; *s = a->ptr + 1; *l = a->len - 1; return 0;
    case '[': *ex = 0; *s = a->ptr + 1; *l = a->len - 1; return 0;
    default: return -1;
    }
}

int fd_parse_zrange(const resp_arg *argv, int argc, int type, int rev, fd_zrange *z,
                    resp_out *out, int *replied)
{
    memset(z, 0, sizeof *z);
    z->limit = -1;
    *replied = 0;
    int auto_type = type < 0, auto_dir = rev < 0, have_limit = 0;
    if (auto_dir) rev = 0;
    for (int j = 4; j < argc; j++) {
        int left = argc - j - 1;
        const resp_arg *a = &argv[j];
        if (resp_arg_is(a, "withscores")) z->withscores = 1;
        else if (resp_arg_is(a, "limit") && left >= 2) {
            if (resp_str2ll(argv[j + 1].ptr, argv[j + 1].len, &z->offset) != 0 ||
                resp_str2ll(argv[j + 2].ptr, argv[j + 2].len, &z->limit) != 0) return FD_E_NOTINT;
            have_limit = 1;
            j += 2;
        } else if (auto_dir && !rev && resp_arg_is(a, "rev")) rev = 1;
        else if (auto_type && type == -1 && resp_arg_is(a, "bylex")) type = FD_ZR_LEX;
        else if (auto_type && type == -1 && resp_arg_is(a, "byscore")) type = FD_ZR_SCORE;
        else return FD_E_SYNTAX;
    }
    if (type == -1) type = FD_ZR_RANK;
    if (have_limit && z->limit != -1 && type == FD_ZR_RANK)
        REPLY("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX");
    if (z->withscores && type == FD_ZR_LEX)
        REPLY("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
    int minidx = 2, maxidx = 3;
    if (rev && type != FD_ZR_RANK) { minidx = 3; maxidx = 2; }
    z->type = type;
    z->rev = rev;
    if (type == FD_ZR_RANK) {
        if (resp_str2ll(argv[minidx].ptr, argv[minidx].len, &z->start) != 0 ||
            resp_str2ll(argv[maxidx].ptr, argv[maxidx].len, &z->end) != 0) return FD_E_NOTINT;
    } else if (type == FD_ZR_SCORE) {
        if (fd_parse_score_bound(&argv[minidx], &z->min, &z->minex) != 0 ||
            fd_parse_score_bound(&argv[maxidx], &z->max, &z->maxex) != 0)
            REPLY("ERR min or max is not a float");
    } else {
        if ((z->lmin_kind = fd_parse_lex_bound(&argv[minidx], &z->lmin, &z->lminl, &z->minex)) < 0 ||
            (z->lmax_kind = fd_parse_lex_bound(&argv[maxidx], &z->lmax, &z->lmaxl, &z->maxex)) < 0)
            REPLY("ERR min or max not valid string range item");
    }
    return FD_OK;
}

int fd_zrange_gte_min(const fd_zrange *z, double score, const char *m, size_t ml)
{
    if (z->type == FD_ZR_SCORE) return z->minex ? score > z->min : score >= z->min;
    if (z->lmin_kind == 1) return 1;
    if (z->lmin_kind == 2) return 0;
    int r = fd_lexcmp(m, ml, z->lmin, z->lminl);
    return z->minex ? r > 0 : r >= 0;
}

int fd_zrange_lte_max(const fd_zrange *z, double score, const char *m, size_t ml)
{
    if (z->type == FD_ZR_SCORE) return z->maxex ? score < z->max : score <= z->max;
    if (z->lmax_kind == 2) return 1;
    if (z->lmax_kind == 1) return 0;
    int r = fd_lexcmp(m, ml, z->lmax, z->lmaxl);
    return z->maxex ? r < 0 : r <= 0;
}

int fd_zrange_empty(const fd_zrange *z)
{
    if (z->type == FD_ZR_SCORE)
        return z->min > z->max || (z->min == z->max && (z->minex || z->maxex));
    if (z->type == FD_ZR_LEX) {
        if (z->lmin_kind == 2 || z->lmax_kind == 1) return 1;
        if (z->lmin_kind == 0 && z->lmax_kind == 0) {
            int cmp = fd_lexcmp(z->lmin, z->lminl, z->lmax, z->lmaxl);
            if (cmp > 0 || (cmp == 0 && (z->minex || z->maxex))) return 1;
        }
    }
    return 0;
}

const char *fd_arg_int_error(const resp_arg *a, long long *v)
{
    if (resp_str2ll(a->ptr, a->len, v) != 0) return "ERR value is not an integer or out of range";
    if (*v < INT32_MIN || *v > INT32_MAX)
        return "ERR value is out of range, value must between -2147483648 and 2147483647";
    return NULL;
}

int fd_parse_copy_opts(const resp_arg *argv, int argc, int *replace, resp_out *out, int *replied)
{
    *replace = 0;
    *replied = 0;
    for (int j = 3; j < argc; j++) {
        if (resp_arg_is(&argv[j], "replace")) {
            *replace = 1;
        } else if (resp_arg_is(&argv[j], "db") && j + 1 < argc) {
            long long db;
            if (resp_str2ll(argv[j + 1].ptr, argv[j + 1].len, &db) != 0) return FD_E_NOTINT;
            const char *e = fd_arg_int_error(&argv[j + 1], &db);
            if (!e && db != 0) e = "ERR DB index is out of range";
            if (e) {
                *replied = 1;
                return resp_add_error(out, e) ? FD_E_NOMEM : FD_OK;
            }
            j++;
        } else {
            return FD_E_SYNTAX;
        }
    }
    if (argv[1].len == argv[2].len && memcmp(argv[1].ptr, argv[2].ptr, argv[1].len) == 0) {
        *replied = 1;
        return resp_add_error(out, "ERR source and destination objects are the same") ? FD_E_NOMEM : FD_OK;
    }
    return FD_OK;
}

/* ---- HRANDFIELD / ZRANDMEMBER */

int fd_parse_rand_count(const resp_arg *argv, int argc, const char *with, int *has_count,
                        long long *count, int *withopt, resp_out *out, int *replied)
{
    *replied = 0;
    *has_count = 0;
    *withopt = 0;
    *count = 1;
    if (argc < 3) return FD_OK;
    long long l;
    if (resp_str2ll(argv[2].ptr, argv[2].len, &l) != 0) return FD_E_NOTINT;
    if (l < -LLONG_MAX) {
        if (resp_add_errorf(out, "ERR value is out of range, value must between %lld and %lld",
                            -LLONG_MAX, LLONG_MAX)) return FD_E_NOMEM;
        *replied = 1;
        return FD_OK;
    }
    if (argc > 4 || (argc == 4 && !resp_arg_is(&argv[3], with))) return FD_E_SYNTAX;
    if (argc == 4) {
        *withopt = 1;
        if (l < -LLONG_MAX / 2 || l > LLONG_MAX / 2) {
            if (resp_add_error(out, "ERR value is out of range")) return FD_E_NOMEM;
            *replied = 1;
            return FD_OK;
        }
    }
    *has_count = 1;
    *count = l;
    return FD_OK;
}

/* ---- reply bounds */

long long fd_reply_floor(int cmd_id, int argc, const resp_arg *argv)
{
    const char *with;
    switch (cmd_id) {
    case FD_CMD_hrandfield:  with = "withvalues"; break;
    case FD_CMD_zrandmember: with = "withscores"; break;
    case FD_CMD_srandmember: with = NULL; break;
    default: return 0;
    }
    if (argc < 3 || argc > (with ? 4 : 3)) return 0;
    long long l;
    if (resp_str2ll(argv[2].ptr, argv[2].len, &l) != 0 || l >= 0 || l < -LLONG_MAX) return 0;
    int withopt = argc == 4;
    if (withopt && (!resp_arg_is(&argv[3], with) || l < -LLONG_MAX / 2)) return 0;
    long long per = withopt ? 10 : 6;
    return -l > LLONG_MAX / per ? LLONG_MAX : -l * per;
}

int fd_add_reply_too_big(resp_out *out, long long max, long long need)
{
    if (need > 0)
        return resp_add_errorf(out, "ERR the reply would exceed max-reply-bytes (%lld bytes): at least %lld bytes",
                               max, need);
    return resp_add_errorf(out, "ERR the reply would exceed max-reply-bytes (%lld bytes)", max);
}
