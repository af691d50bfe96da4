/* strings.c — string command computations: see strings.h. */
#include <limits.h>
#include <math.h>
#include <string.h>
#include "strings.h"
#include "../cmdargs.h"
#include "../status.h"

int fd_str_set_blocked(int flags, int exists)
{
    return ((flags & FD_SET_NX) && exists) || ((flags & FD_SET_XX) && !exists);
}

int fd_str_set_reply(resp_out *out, int flags, int abort_nx, int written)
{
    if (flags & FD_SET_GET) return 0;
    if (abort_nx) return resp_add_int(out, written);
    return written ? resp_add_status(out, "OK") : resp_add_null(out);
}

int fd_str_getrange_reply(resp_out *out, const char *v, size_t vlen, long long start, long long end)
{
    long long len = (long long)vlen;
    if (start < 0 && end < 0 && start > end) return resp_add_bulk(out, "", 0);
    if (start < 0) start = len + start;
    if (end < 0) end = len + end;
    if (start < 0) start = 0;
    if (end < 0) end = 0;
    if (end >= len) end = len - 1;
    if (start > end || len == 0) return resp_add_bulk(out, "", 0);
    return resp_add_bulk(out, v + start, (size_t)(end - start + 1));
}

int fd_str_parse_incr(const resp_arg *a, int decr, long long *incr, resp_out *out, int *replied)
{
    *replied = 0;
    int s = fd_arg_ll(a, incr);
    if (s != FD_OK || !decr) return s;
    if (*incr == LLONG_MIN) {
        *replied = 1;
        return resp_add_error(out, "ERR decrement would overflow") ? FD_E_NOMEM : FD_OK;
    }
    *incr = -*incr;
    return FD_OK;
}

int fd_str_incr(const char *v, size_t len, int exists, long long incr, long long *res)
{
    long long cur = 0;
    if (exists && resp_str2ll(v, len, &cur) != 0) return FD_E_NOTINT;
    if ((incr < 0 && cur < 0 && incr < LLONG_MIN - cur) || (incr > 0 && cur > 0 && incr > LLONG_MAX - cur))
        return FD_E_OVERFLOW;
    *res = cur + incr;
    return FD_OK;
}

int fd_str_incrbyfloat(const char *v, size_t len, int exists, const resp_arg *a, char *buf, size_t *n)
{
    long double cur = 0, incr;
    if (exists && resp_str2ld(v, len, &cur) != 0) return FD_E_NOTFLOAT;
    if (resp_str2ld(a->ptr, a->len, &incr) != 0) return FD_E_NOTFLOAT;
    cur += incr;
    if (isnan(cur) || isinf(cur)) return FD_E_NAN;
    int r = resp_format_ld(buf, FD_STR_INCRBYFLOAT_BUF, cur);     /* Redis: long double, human form */
    if (r <= 0 || (size_t)r >= FD_STR_INCRBYFLOAT_BUF) return FD_E_INTERNAL;
    *n = (size_t)r;
    return FD_OK;
}

void fd_str_setrange(char *b, const char *old, size_t olen, size_t off, const resp_arg *p)
{
    if (olen) memcpy(b, old, olen);
    if (off > olen) memset(b + olen, 0, off - olen);
    memcpy(b + off, p->ptr, p->len);
}
