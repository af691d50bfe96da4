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

/* ---------------------------------------------------------------- the commands over fd_str_io
 * (t_string.c: learned from it, written here anew) */

#include "../host.h"

#define EVENT(cls, name, key) do { if (fd_notify_on(FD_NOTIFY_##cls)) \
                                       io->event(h, FD_NOTIFY_##cls, name, key); } while (0)
#define OUT(expr) ((expr) ? FD_E_NOMEM : FD_OK)

/* The SET core. abort_nx: reply :0/:1 (SETNX) instead of nil/+OK. */
static int set_generic(const fd_str_io *io, void *h, int flags, int64_t expire, const resp_arg *key,
                       const resp_arg *val, int abort_nx, resp_out *out)
{
    if (io->set_blind && !(flags & (FD_SET_NX | FD_SET_XX | FD_SET_GET | FD_SET_KEEPTTL))) {
        int s = io->set_blind(h, key, expire, val);
        if (s != FD_OK) return s;
        EVENT(STRING, "set", key);
        if (expire) EVENT(GENERIC, "expire", key);
        return OUT(resp_add_status(out, "OK"));
    }
    fd_str_sk sk;
    fd_str_val v;
    int s = io->open(h, key, (flags & FD_SET_GET) ? FD_STR_STRING : FD_STR_ANY, &sk, &v);
    if (s != FD_OK) return fd_str_close(io, h, &sk, s);
    size_t mark = out->len;
    if (flags & FD_SET_GET) {
        /* the old value may be the store's memory: reply now, before writing */
        if (OUT(v.live ? resp_add_bulk(out, v.v, v.len) : resp_add_null(out))) return fd_str_close(io, h, &sk, FD_E_NOMEM);
        if (!v.live) EVENT(KEY_MISS, "keymiss", key);
    }
    int write = !fd_str_set_blocked(flags, v.live);
    if (write) {
        int expires = expire != 0 && !(flags & FD_SET_KEEPTTL);
        if ((flags & FD_SET_KEEPTTL) && v.live) expire = v.expire;
        s = io->write(h, &sk, key, expire, val->ptr, val->len, NULL, 0);
        if (s != FD_OK) { out->len = mark; return fd_str_close(io, h, &sk, s); }
        EVENT(STRING, "set", key);
        if (expires) EVENT(GENERIC, "expire", key);
    }
    return fd_str_close(io, h, &sk, OUT(fd_str_set_reply(out, flags, abort_nx, write)));
}

int fd_str_set(const fd_str_io *io, void *h, int argc, const resp_arg *argv, int64_t now, resp_out *out)
{
    int flags;
    const resp_arg *exp;
    int64_t expire = 0;
    int s = fd_parse_set_opts(argv, argc, 3, 1, &flags, &exp);
    if (s == FD_OK && exp) s = fd_set_expire_ms(exp, flags, now, &expire);
    return s != FD_OK ? s : set_generic(io, h, flags, expire, &argv[1], &argv[2], 0, out);
}

int fd_str_setnx(const fd_str_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    return set_generic(io, h, FD_SET_NX, 0, &argv[1], &argv[2], 1, out);
}

int fd_str_setex(const fd_str_io *io, void *h, const resp_arg *argv, int64_t now, int ms, resp_out *out)
{
    int64_t expire;
    int s = fd_set_expire_ms(&argv[2], ms ? FD_SET_PX : FD_SET_EX, now, &expire);
    return s != FD_OK ? s : set_generic(io, h, 0, expire, &argv[1], &argv[3], 0, out);
}

int fd_str_getset(const fd_str_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    return set_generic(io, h, FD_SET_GET, 0, &argv[1], &argv[2], 0, out);
}

/* ---------------------------------------------------------------- reads */

int fd_str_get(const fd_str_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    fd_str_sk sk;
    fd_str_val v;
    int s = io->open(h, &argv[1], FD_STR_STRING, &sk, &v);
    if (s == FD_OK) s = OUT(v.live ? resp_add_bulk(out, v.v, v.len) : resp_add_null(out));
    return fd_str_close(io, h, &sk, s);
}

/* GETDEL / GETEX on a missing key: keymiss (lookupKeyRead), nil. */
static int get_missing(const fd_str_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    EVENT(KEY_MISS, "keymiss", &argv[1]);
    return OUT(resp_add_null(out));
}

int fd_str_getdel(const fd_str_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    fd_str_sk sk;
    fd_str_val v;
    int s = io->open(h, &argv[1], FD_STR_STRING, &sk, &v);
    if (s != FD_OK || !v.live) return fd_str_close(io, h, &sk, s != FD_OK ? s : get_missing(io, h, argv, out));
    size_t mark = out->len;
    s = OUT(resp_add_bulk(out, v.v, v.len));
    if (s == FD_OK && (s = io->del(h, &sk, &argv[1])) != FD_OK) out->len = mark;
    else if (s == FD_OK) EVENT(GENERIC, "del", &argv[1]);
    return fd_str_close(io, h, &sk, s);
}

int fd_str_getex(const fd_str_io *io, void *h, int argc, const resp_arg *argv, int64_t now, resp_out *out)
{
    int flags;
    const resp_arg *exp;
    int64_t expire = 0;
    int s = fd_parse_set_opts(argv, argc, 2, 0, &flags, &exp);
    if (s != FD_OK) return s;
    fd_str_sk sk;
    fd_str_val v;
    s = io->open(h, &argv[1], FD_STR_STRING, &sk, &v);
    if (s != FD_OK || !v.live) return fd_str_close(io, h, &sk, s != FD_OK ? s : get_missing(io, h, argv, out));
    /* as Redis 7.0: the expiry value is validated only for an existing string */
    if (exp && (s = fd_set_expire_ms(exp, flags, now, &expire)) != FD_OK) return fd_str_close(io, h, &sk, s);
    size_t mark = out->len;
    if (resp_add_bulk(out, v.v, v.len)) return fd_str_close(io, h, &sk, FD_E_NOMEM);
    const char *ev = NULL;
    if (exp && expire <= now) { s = io->del(h, &sk, &argv[1]); ev = "del"; }
    else if (exp) { s = io->expire(h, &sk, &argv[1], expire); ev = "expire"; }
    else if ((flags & FD_SET_PERSIST) && v.expire) { s = io->expire(h, &sk, &argv[1], 0); ev = "persist"; }
    if (s != FD_OK) out->len = mark;
    else if (ev) EVENT(GENERIC, ev, &argv[1]);
    return fd_str_close(io, h, &sk, s);
}

int fd_str_mget(const fd_str_io *io, void *h, int argc, const resp_arg *argv, resp_out *out)
{
    if (io->mget) return io->mget(h, argc, argv, out);
    size_t mark = out->len;
    int s = OUT(resp_add_array(out, argc - 1));
    for (int j = 1; j < argc && s == FD_OK; j++) {
        fd_str_sk sk;
        fd_str_val v;
        s = io->open(h, &argv[j], FD_STR_ANY_VALUE, &sk, &v);
        if (s == FD_OK) s = OUT(v.string ? resp_add_bulk(out, v.v, v.len) : resp_add_null(out));
        fd_str_close(io, h, &sk, s);
    }
    if (s != FD_OK) out->len = mark;
    return s;
}

int fd_str_strlen(const fd_str_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    fd_str_sk sk;
    fd_str_val v;
    int s = io->open(h, &argv[1], FD_STR_STRING, &sk, &v);
    if (s == FD_OK) s = OUT(resp_add_int(out, v.live ? (long long)v.len : 0));
    return fd_str_close(io, h, &sk, s);
}

int fd_str_getrange(const fd_str_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    long long start, end;
    int s = fd_arg_ll(&argv[2], &start);
    if (s == FD_OK) s = fd_arg_ll(&argv[3], &end);
    if (s != FD_OK) return s;
    fd_str_sk sk;
    fd_str_val v;
    s = io->open(h, &argv[1], FD_STR_STRING, &sk, &v);
    if (s == FD_OK) s = OUT(fd_str_getrange_reply(out, v.v, v.live ? v.len : 0, start, end));
    return fd_str_close(io, h, &sk, s);
}

/* ---------------------------------------------------------------- writes */

/* One key of MSET / MSETNX: open, or write argv[j + 1] (no expiry). */
static int mset_one(const fd_str_io *io, void *h, const resp_arg *argv, int j, int write, int *live)
{
    fd_str_sk sk;
    fd_str_val v;
    int s = io->open(h, &argv[j], FD_STR_ANY, &sk, &v);
    *live = v.live;
    if (s == FD_OK && write) s = io->write(h, &sk, &argv[j], 0, argv[j + 1].ptr, argv[j + 1].len, NULL, 0);
    return fd_str_close(io, h, &sk, s);
}

int fd_str_mset(const fd_str_io *io, void *h, int argc, const resp_arg *argv, int nx, resp_out *out)
{
    if (argc % 2 == 0)
        return OUT(resp_add_errorf(out, "ERR wrong number of arguments for '%s' command", nx ? "msetnx" : "mset"));
    int s = FD_OK, any = 0, live;
    if (nx && io->any_live) s = io->any_live(h, argc, argv, &any);
    else for (int j = 1; nx && j < argc && s == FD_OK && !any; j += 2) { s = mset_one(io, h, argv, j, 0, &live); any = live; }
    if (s != FD_OK) return s;
    if (any) return OUT(resp_add_int(out, 0));
    if (io->mset) s = io->mset(h, argc, argv);
    for (int j = 1; j < argc && s == FD_OK; j += 2) {
        if (!io->mset) s = mset_one(io, h, argv, j, 1, &live);
        if (s == FD_OK) EVENT(STRING, "set", &argv[j]);
    }
    if (s != FD_OK) return s;
    return OUT(nx ? resp_add_int(out, 1) : resp_add_status(out, "OK"));
}

int fd_str_incrby(const fd_str_io *io, void *h, const resp_arg *argv, int by, int decr, resp_out *out)
{
    const resp_arg *key = &argv[1];
    long long incr = decr ? -1 : 1, v;
    if (by) {
        int replied, s = fd_str_parse_incr(&argv[2], decr, &incr, out, &replied);
        if (s != FD_OK || replied) return s;
    }
    if (io->incr) {
        int did = 0, s = io->incr(h, key, incr, &v, &did);
        if (s != FD_OK) return s;
        if (did) {
            EVENT(STRING, "incrby", key);
            return OUT(resp_add_int(out, v));
        }
    }
    fd_str_sk sk;
    fd_str_val o;
    int s = io->open(h, key, FD_STR_STRING, &sk, &o);
    if (s == FD_OK) s = fd_str_incr(o.v, o.len, o.live, incr, &v);
    if (s == FD_OK) {
        char buf[32];
        int n = resp_ll2str(buf, sizeof buf, v);
        s = io->write(h, &sk, key, o.live ? o.expire : 0, buf, (size_t)n, NULL, 0);
    }
    if (s == FD_OK) {
        EVENT(STRING, "incrby", key);
        s = OUT(resp_add_int(out, v));
    }
    return fd_str_close(io, h, &sk, s);
}

int fd_str_incrbyfloat_cmd(const fd_str_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    fd_str_sk sk;
    fd_str_val o;
    int s = io->open(h, &argv[1], FD_STR_STRING, &sk, &o);
    char *buf = s == FD_OK ? io->scratch(h, &sk, FD_STR_INCRBYFLOAT_BUF) : NULL;
    size_t n;
    if (s == FD_OK && !buf) s = FD_E_NOMEM;
    if (s == FD_OK) s = fd_str_incrbyfloat(o.v, o.len, o.live, &argv[2], buf, &n);
    if (s == FD_OK) s = io->write(h, &sk, &argv[1], o.live ? o.expire : 0, buf, n, NULL, 0);
    if (s == FD_OK) {
        EVENT(STRING, "incrbyfloat", &argv[1]);
        s = OUT(resp_add_bulk(out, buf, n));
    }
    return fd_str_close(io, h, &sk, s);
}

int fd_str_append(const fd_str_io *io, void *h, const resp_arg *argv, long long max_bulk, resp_out *out)
{
    const resp_arg *a = &argv[2];
    fd_str_sk sk;
    fd_str_val o;
    int s = io->open(h, &argv[1], FD_STR_STRING, &sk, &o);
    size_t total = (o.live ? o.len : 0) + a->len;
    if (s == FD_OK && o.live && (long long)o.len + (long long)a->len > max_bulk) s = FD_E_STRLEN;
    if (s == FD_OK)
        s = o.live ? io->write(h, &sk, &argv[1], o.expire, o.v, o.len, a->ptr, a->len)
                   : io->write(h, &sk, &argv[1], 0, a->ptr, a->len, NULL, 0);
    if (s == FD_OK) {
        EVENT(STRING, "append", &argv[1]);
        s = OUT(resp_add_int(out, (long long)total));
    }
    return fd_str_close(io, h, &sk, s);
}

int fd_str_setrange_cmd(const fd_str_io *io, void *h, const resp_arg *argv, long long max_bulk, resp_out *out)
{
    long long off;
    const resp_arg *a = &argv[3];
    int s = fd_arg_ll(&argv[2], &off);
    if (s != FD_OK) return s;
    if (off < 0) return FD_E_OFFSET;
    fd_str_sk sk;
    fd_str_val o;
    s = io->open(h, &argv[1], FD_STR_STRING, &sk, &o);
    size_t olen = o.live ? o.len : 0;
    if (s != FD_OK) return fd_str_close(io, h, &sk, s);
    if (a->len == 0) return fd_str_close(io, h, &sk, OUT(resp_add_int(out, (long long)olen)));
    if (off > max_bulk - (long long)a->len) return fd_str_close(io, h, &sk, FD_E_STRLEN);
    size_t end = (size_t)off + a->len, nlen = end > olen ? end : olen;
    char *b = io->scratch(h, &sk, nlen);
    if (!b) return fd_str_close(io, h, &sk, FD_E_NOMEM);
    fd_str_setrange(b, o.v, olen, (size_t)off, a);
    s = io->write(h, &sk, &argv[1], o.live ? o.expire : 0, b, nlen, NULL, 0);
    if (s == FD_OK) {
        EVENT(STRING, "setrange", &argv[1]);
        s = OUT(resp_add_int(out, (long long)nlen));
    }
    return fd_str_close(io, h, &sk, s);
}
