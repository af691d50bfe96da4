/* cmdargs.c — option parsing shared by the Redis-types backends: see
 * cmdargs.h. The texts and the order of the checks are Redis 7.0's. */
#include <limits.h>
#include <string.h>
#include <strings.h>
#include "cmdargs.h"

int fd_opt_is(const resp_arg *a, const char *name)
{
    size_t n = strlen(name);
    return a->len == n && strncasecmp(a->ptr, name, n) == 0;
}

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
        if (fd_opt_is(a, "nx") && !(f & FD_SET_XX) && is_set) *flags |= FD_SET_NX;
        else if (fd_opt_is(a, "xx") && !(f & FD_SET_NX) && is_set) *flags |= FD_SET_XX;
        else if (fd_opt_is(a, "get") && is_set) *flags |= FD_SET_GET;
        else if (fd_opt_is(a, "keepttl") && !(f & (FD_SET_PERSIST | ANYEXP)) && is_set) *flags |= FD_SET_KEEPTTL;
        else if (fd_opt_is(a, "persist") && !is_set && !(f & (ANYEXP | FD_SET_KEEPTTL))) *flags |= FD_SET_PERSIST;
        else if (fd_opt_is(a, "ex") && !(f & (FD_SET_KEEPTTL | FD_SET_PERSIST | FD_SET_EXAT | FD_SET_PX | FD_SET_PXAT)) && next) {
            *flags |= FD_SET_EX; *exp = next; j++;
        } else if (fd_opt_is(a, "px") && !(f & (FD_SET_KEEPTTL | FD_SET_PERSIST | FD_SET_EX | FD_SET_EXAT | FD_SET_PXAT)) && next) {
            *flags |= FD_SET_PX; *exp = next; j++;
        } else if (fd_opt_is(a, "exat") && !(f & (FD_SET_KEEPTTL | FD_SET_PERSIST | FD_SET_EX | FD_SET_PX | FD_SET_PXAT)) && next) {
            *flags |= FD_SET_EXAT; *exp = next; j++;
        } else if (fd_opt_is(a, "pxat") && !(f & (FD_SET_KEEPTTL | FD_SET_PERSIST | FD_SET_EX | FD_SET_EXAT | FD_SET_PX)) && next) {
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
        if (fd_opt_is(a, "nx")) f |= FD_EXPIRE_NX;
        else if (fd_opt_is(a, "xx")) f |= FD_EXPIRE_XX;
        else if (fd_opt_is(a, "gt")) f |= FD_EXPIRE_GT;
        else if (fd_opt_is(a, "lt")) f |= FD_EXPIRE_LT;
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
    if (ca->len && (ca->ptr[0] == '-' || ca->ptr[0] == '+')) { neg = ca->ptr[0] == '-'; i0 = 1; }
    int bad = ca->len == i0 || ca->len - i0 > 20;
    for (size_t i = i0; i < ca->len && !bad; i++) {
        unsigned d = (unsigned char)ca->ptr[i] - '0';
        if (d > 9 || cursor > (UINT64_MAX - d) / 10) bad = 1;
        else cursor = cursor * 10 + d;
    }
    if (bad) return -1;
    *out = neg ? (uint64_t)0 - cursor : cursor;
    return 0;
}

int fd_parse_scan_opts(const resp_arg *argv, int argc, int first, long long *count,
                       const resp_arg **pat, const resp_arg **type)
{
    *count = 10;
    *pat = NULL;
    if (type) *type = NULL;
    for (int i = first; i < argc; i++) {
        int more = i + 1 < argc;
        if (fd_opt_is(&argv[i], "count") && more) {
            if (resp_str2ll(argv[i + 1].ptr, argv[i + 1].len, count) != 0) return FD_E_NOTINT;
            if (*count < 1) return FD_E_SYNTAX;
            i++;
        } else if (fd_opt_is(&argv[i], "match") && more) {
            *pat = &argv[++i];
            if ((*pat)->len == 1 && (*pat)->ptr[0] == '*') *pat = NULL;
        } else if (type && fd_opt_is(&argv[i], "type") && more) {
            *type = &argv[++i];
        } else return FD_E_SYNTAX;
    }
    return FD_OK;
}
