/* hash.c — the hash commands over fd_coll_io (see hash.h), with Redis
 * 7.0's semantics, reply shapes, error texts and keyspace events
 * (t_hash.c: learned from it, written here anew). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "hash.h"
#include "../status.h"
#include "../host.h"

#define EVENT(cls, name) do { if (io->event && fd_notify_on(FD_NOTIFY_##cls)) \
                                  io->event(h, FD_NOTIFY_##cls, name, &argv[1]); } while (0)

/* Open argv[1] (close it whatever happens: done()). */
static int open_hash(const fd_coll_io *io, void *h, const resp_arg *argv, int named, int step,
                     fd_coll_hk *hk, int *exists)
{
    *exists = 0;
    return io->open(h, &argv[1], FD_COLL_AS_CMD, named, step, hk, exists);
}

static int done(const fd_coll_io *io, void *h, fd_coll_hk *hk, int s)
{
    io->close(h, hk);
    return s;
}

/* ---------------------------------------------------------------- writes */

int fd_hash_hset(const fd_coll_io *io, void *h, int argc, const resp_arg *argv, int hmset, resp_out *out)
{
    if (argc % 2 == 1)
        return resp_add_errorf(out, "ERR wrong number of arguments for '%s' command", hmset ? "hmset" : "hset")
               ? FD_E_NOMEM : FD_OK;
    fd_coll_hk hk;
    int exists, s = open_hash(io, h, argv, 2, 1, &hk, &exists);
    long long created = 0;
    for (int j = 2; j < argc && s == FD_OK; j += 2) {
        int c = 0;
        s = io->put(h, &hk, argv[j].ptr, argv[j].len, argv[j + 1].ptr, argv[j + 1].len, 1, &c);
        created += c;
    }
    if (s == FD_OK) s = io->save(h, &hk);
    if (s == FD_OK) {
        EVENT(HASH, "hset");
        s = (hmset ? resp_add_status(out, "OK") : resp_add_int(out, created)) ? FD_E_NOMEM : FD_OK;
    }
    return done(io, h, &hk, s);
}

int fd_hash_hsetnx(const fd_coll_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    fd_coll_hk hk;
    int exists, s = open_hash(io, h, argv, 2, 1, &hk, &exists);
    if (s == FD_OK && exists) {
        const void *v; size_t vl;
        s = io->get(h, &hk, argv[2].ptr, argv[2].len, &v, &vl);
        if (s == FD_OK) return done(io, h, &hk, resp_add_int(out, 0) ? FD_E_NOMEM : FD_OK);
        if (s == FD_NOTFOUND) s = FD_OK;
    }
    int c = 0;
    if (s == FD_OK) s = io->put(h, &hk, argv[2].ptr, argv[2].len, argv[3].ptr, argv[3].len, 1, &c);
    if (s == FD_OK) s = io->save(h, &hk);
    if (s == FD_OK) {
        EVENT(HASH, "hset");
        s = resp_add_int(out, 1) ? FD_E_NOMEM : FD_OK;
    }
    return done(io, h, &hk, s);
}

int fd_hash_hdel(const fd_coll_io *io, void *h, int argc, const resp_arg *argv, resp_out *out)
{
    return fd_coll_remove(io, h, argc, argv, FD_NOTIFY_HASH, "hdel", out);
}

int fd_hash_hincrby(const fd_coll_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    long long incr, v = 0;
    if (resp_str2ll(argv[3].ptr, argv[3].len, &incr) != 0) return FD_E_NOTINT;
    fd_coll_hk hk;
    int exists, s = open_hash(io, h, argv, 2, 1, &hk, &exists);
    if (s == FD_OK && exists) {
        const void *ov; size_t ovl;
        s = io->get(h, &hk, argv[2].ptr, argv[2].len, &ov, &ovl);
        if (s == FD_OK && resp_str2ll(ov, ovl, &v) != 0)
            return done(io, h, &hk, resp_add_error(out, "ERR hash value is not an integer") ? FD_E_NOMEM : FD_OK);
        if (s == FD_NOTFOUND) s = FD_OK;
    }
    if (s == FD_OK && ((incr < 0 && v < 0 && incr < LLONG_MIN - v) || (incr > 0 && v > 0 && incr > LLONG_MAX - v)))
        s = FD_E_OVERFLOW;
    if (s == FD_OK) {
        v += incr;
        char buf[32];
        int n = resp_ll2str(buf, sizeof buf, v), c = 0;
        s = io->put(h, &hk, argv[2].ptr, argv[2].len, buf, (size_t)n, 0, &c);
    }
    if (s == FD_OK) s = io->save(h, &hk);
    if (s == FD_OK) {
        EVENT(HASH, "hincrby");
        s = resp_add_int(out, v) ? FD_E_NOMEM : FD_OK;
    }
    return done(io, h, &hk, s);
}

int fd_hash_hincrbyfloat(const fd_coll_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    long double v = 0, incr;
    if (resp_str2ld(argv[3].ptr, argv[3].len, &incr) != 0) return FD_E_NOTFLOAT;
    if (isnan(incr) || isinf(incr)) return resp_add_error(out, "ERR value is NaN or Infinity") ? FD_E_NOMEM : FD_OK;
    fd_coll_hk hk;
    int exists, s = open_hash(io, h, argv, 2, 1, &hk, &exists);
    if (s == FD_OK && exists) {
        const void *ov; size_t ovl;
        s = io->get(h, &hk, argv[2].ptr, argv[2].len, &ov, &ovl);
        if (s == FD_OK && resp_str2ld(ov, ovl, &v) != 0)
            return done(io, h, &hk, resp_add_error(out, "ERR hash value is not a float") ? FD_E_NOMEM : FD_OK);
        if (s == FD_NOTFOUND) s = FD_OK;
    }
    if (s != FD_OK) return done(io, h, &hk, s);
    v += incr;
    if (isnan(v) || isinf(v)) return done(io, h, &hk, FD_E_NAN);
    char buf[5 * 1024 + 64];
    int n = resp_format_ld(buf, sizeof buf, v), c = 0;
    if (n <= 0 || (size_t)n >= sizeof buf) return done(io, h, &hk, FD_E_INTERNAL);
    s = io->put(h, &hk, argv[2].ptr, argv[2].len, buf, (size_t)n, 0, &c);
    if (s == FD_OK) s = io->save(h, &hk);
    if (s == FD_OK) {
        EVENT(HASH, "hincrbyfloat");
        s = resp_add_bulk(out, buf, (size_t)n) ? FD_E_NOMEM : FD_OK;
    }
    return done(io, h, &hk, s);
}

/* ---------------------------------------------------------------- reads */

/* The value of field argv[j] (FD_NOTFOUND also when the hash does not exist). */
static int field(const fd_coll_io *io, void *h, fd_coll_hk *hk, int exists, const resp_arg *f,
                 const void **v, size_t *vl)
{
    return exists ? io->get(h, hk, f->ptr, f->len, v, vl) : FD_NOTFOUND;
}

int fd_hash_hget(const fd_coll_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    fd_coll_hk hk;
    const void *v; size_t vl;
    int exists, s = open_hash(io, h, argv, 2, 1, &hk, &exists);
    if (s == FD_OK) s = field(io, h, &hk, exists, &argv[2], &v, &vl);
    if (s == FD_OK) s = resp_add_bulk(out, v, vl) ? FD_E_NOMEM : FD_OK;
    else if (s == FD_NOTFOUND) s = resp_add_null(out) ? FD_E_NOMEM : FD_OK;
    return done(io, h, &hk, s);
}

int fd_hash_hmget(const fd_coll_io *io, void *h, int argc, const resp_arg *argv, resp_out *out)
{
    fd_coll_hk hk;
    int exists, s = open_hash(io, h, argv, 2, 1, &hk, &exists);
    size_t mark = out->len;
    if (s == FD_OK && resp_add_array(out, argc - 2)) s = FD_E_NOMEM;
    for (int j = 2; j < argc && s == FD_OK; j++) {
        const void *v; size_t vl;
        s = field(io, h, &hk, exists, &argv[j], &v, &vl);
        if (s == FD_OK) s = resp_add_bulk(out, v, vl) ? FD_E_NOMEM : FD_OK;
        else if (s == FD_NOTFOUND) s = resp_add_null(out) ? FD_E_NOMEM : FD_OK;
    }
    if (s != FD_OK) out->len = mark;
    return done(io, h, &hk, s);
}

int fd_hash_hlen(const fd_coll_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    fd_coll_hk hk;
    int exists, s = open_hash(io, h, argv, INT_MAX, 1, &hk, &exists);     /* no field named */
    if (s == FD_OK && resp_add_int(out, exists ? io->count(h, &hk) : 0)) s = FD_E_NOMEM;
    return done(io, h, &hk, s);
}

int fd_hash_hexists(const fd_coll_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    fd_coll_hk hk;
    const void *v; size_t vl;
    int exists, s = open_hash(io, h, argv, 2, 1, &hk, &exists);
    if (s == FD_OK) s = field(io, h, &hk, exists, &argv[2], &v, &vl);
    if (s == FD_OK || s == FD_NOTFOUND) s = resp_add_int(out, s == FD_OK) ? FD_E_NOMEM : FD_OK;
    return done(io, h, &hk, s);
}

int fd_hash_hstrlen(const fd_coll_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    fd_coll_hk hk;
    const void *v; size_t vl = 0;
    int exists, s = open_hash(io, h, argv, 2, 1, &hk, &exists);
    if (s == FD_OK) s = field(io, h, &hk, exists, &argv[2], &v, &vl);
    if (s == FD_OK || s == FD_NOTFOUND) s = resp_add_int(out, s == FD_OK ? (long long)vl : 0) ? FD_E_NOMEM : FD_OK;
    return done(io, h, &hk, s);
}

typedef struct getall_arg { resp_out *out; int keys, vals; long long n; } getall_arg;

static int getall_one(void *arg, const char *f, size_t fl, const char *v, size_t vl)
{
    getall_arg *a = arg;
    if ((a->keys && resp_add_bulk(a->out, f, fl)) || (a->vals && resp_add_bulk(a->out, v, vl))) return FD_E_NOMEM;
    a->n++;
    return 0;
}

int fd_hash_getall(const fd_coll_io *io, void *h, const resp_arg *argv, int keys, int vals, resp_out *out)
{
    fd_coll_hk hk;
    int exists, s = open_hash(io, h, argv, -1, 1, &hk, &exists);
    size_t mark = out->len;
    long long n = s == FD_OK && exists ? io->count(h, &hk) : 0;
    if (s == FD_OK && (keys && vals ? resp_add_map(out, n) : resp_add_array(out, n))) s = FD_E_NOMEM;
    if (s == FD_OK && n) {
        getall_arg a = { out, keys, vals, 0 };
        s = io->walk(h, &hk, getall_one, &a);
        if (s == FD_OK && a.n != n) s = FD_E_CORRUPT;
    }
    if (s != FD_OK) out->len = mark;
    return done(io, h, &hk, s);
}
