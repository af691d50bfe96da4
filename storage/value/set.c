/* set.c — the set commands over fd_coll_io (see set.h), with Redis 7.0's
 * semantics, reply shapes, error texts and keyspace events (t_set.c:
 * learned from it, written here anew). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "set.h"
#include "zsetops.h"
#include "../status.h"
#include "../host.h"
#include "../cmdargs.h"

#define EVENT(cls, name, i) do { if (io->event && fd_notify_on(FD_NOTIFY_##cls)) \
                                     io->event(h, FD_NOTIFY_##cls, name, &argv[i]); } while (0)

static int done(const fd_coll_io *io, void *h, fd_coll_hk *hk, int s)
{
    io->close(h, hk);
    return s;
}

static int reply_int(resp_out *out, long long v) { return resp_add_int(out, v) ? FD_E_NOMEM : FD_OK; }

/* 1 when m is a member of the open set (exists: it is there at all), 0
 * not, or -FD_E_*. */
static int member(const fd_coll_io *io, void *h, fd_coll_hk *hk, int exists, const char *m, size_t ml)
{
    if (!exists) return 0;
    const void *v; size_t vl;
    int s = io->get(h, hk, m, ml, &v, &vl);
    return s == FD_OK ? 1 : s == FD_NOTFOUND ? 0 : -s;
}

/* ---------------------------------------------------------------- one set */

int fd_set_sadd(const fd_coll_io *io, void *h, int argc, const resp_arg *argv, resp_out *out)
{
    fd_coll_hk hk;
    int exists, s = io->open(h, &argv[1], FD_COLL_AS_CMD, 2, 1, &hk, &exists);
    long long n = 0;
    for (int j = 2; j < argc && s == FD_OK; j++) {
        int c = 0;
        s = io->put(h, &hk, argv[j].ptr, argv[j].len, "", 0, 1, &c);
        n += c;
    }
    if (s == FD_OK && n) {
        s = io->save(h, &hk);
        if (s == FD_OK) EVENT(SET, "sadd", 1);
    }
    if (s == FD_OK) s = reply_int(out, n);
    return done(io, h, &hk, s);
}

int fd_set_srem(const fd_coll_io *io, void *h, int argc, const resp_arg *argv, resp_out *out)
{
    return fd_coll_remove(io, h, argc, argv, FD_NOTIFY_SET, "srem", out);
}

int fd_set_scard(const fd_coll_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    fd_coll_hk hk;
    int exists, s = io->open(h, &argv[1], FD_COLL_AS_CMD, INT_MAX, 1, &hk, &exists);    /* no member named */
    if (s == FD_OK) s = reply_int(out, exists ? io->count(h, &hk) : 0);
    return done(io, h, &hk, s);
}

int fd_set_sismember(const fd_coll_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    fd_coll_hk hk;
    int exists, s = io->open(h, &argv[1], FD_COLL_AS_CMD, 2, 1, &hk, &exists);
    if (s == FD_OK) {
        int y = member(io, h, &hk, exists, argv[2].ptr, argv[2].len);
        s = y < 0 ? -y : reply_int(out, y);
    }
    return done(io, h, &hk, s);
}

int fd_set_smismember(const fd_coll_io *io, void *h, int argc, const resp_arg *argv, resp_out *out)
{
    fd_coll_hk hk;
    int exists, s = io->open(h, &argv[1], FD_COLL_AS_CMD, 2, 1, &hk, &exists);
    size_t mark = out->len;
    if (s == FD_OK && resp_add_array(out, argc - 2)) s = FD_E_NOMEM;
    for (int j = 2; j < argc && s == FD_OK; j++) {
        int y = member(io, h, &hk, exists, argv[j].ptr, argv[j].len);
        s = y < 0 ? -y : reply_int(out, y);
    }
    if (s != FD_OK) out->len = mark;
    return done(io, h, &hk, s);
}

typedef struct members_arg { resp_out *out; long long n; } members_arg;

static int members_one(void *arg, const char *m, size_t ml, const char *v, size_t vl)
{
    (void)v; (void)vl;
    members_arg *a = arg;
    a->n++;
    return resp_add_bulk(a->out, m, ml) ? FD_E_NOMEM : 0;
}

int fd_set_smembers(const fd_coll_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    fd_coll_hk hk;
    int exists, s = io->open(h, &argv[1], FD_COLL_AS_CMD, -1, 1, &hk, &exists);
    size_t mark = out->len;
    long long n = s == FD_OK && exists ? io->count(h, &hk) : 0;
    if (s == FD_OK && resp_add_set(out, n)) s = FD_E_NOMEM;
    if (s == FD_OK && n) {
        members_arg a = { out, 0 };
        s = io->walk(h, &hk, members_one, &a);
        if (s == FD_OK && a.n != n) s = FD_E_CORRUPT;
    }
    if (s != FD_OK) out->len = mark;
    return done(io, h, &hk, s);
}

/* SMOVE src dst member: Redis's order — a missing source answers 0 before
 * the destination's type is looked at; src == dst answers membership. */
int fd_set_smove(const fd_coll_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    fd_coll_hk src, dst;
    const resp_arg *mb = &argv[3];
    int sx, dx, s = io->open(h, &argv[1], FD_COLL_AS_CMD, 3, 1, &src, &sx);
    if (s != FD_OK) return done(io, h, &src, s);
    int ds = io->open(h, &argv[2], FD_COLL_AS_CMD, 3, 1, &dst, &dx);
    if (!sx) {
        s = reply_int(out, 0);
    } else if (ds != FD_OK) {
        s = ds;
    } else if (argv[1].len == argv[2].len && memcmp(argv[1].ptr, argv[2].ptr, argv[1].len) == 0) {
        int y = member(io, h, &src, sx, mb->ptr, mb->len);
        s = y < 0 ? -y : reply_int(out, y);
    } else {
        int r = 0, c = 0;
        s = io->del(h, &src, mb->ptr, mb->len, &r);
        if (s == FD_OK && r) s = io->save(h, &src);
        if (s == FD_OK && r) {
            EVENT(SET, "srem", 1);
            if (fd_notify_on(FD_NOTIFY_GENERIC) && io->gone(h, &src)) EVENT(GENERIC, "del", 1);
            s = io->put(h, &dst, mb->ptr, mb->len, "", 0, 1, &c);
        }
        if (s == FD_OK && c) {
            s = io->save(h, &dst);
            if (s == FD_OK) EVENT(SET, "sadd", 2);
        } else if (s == FD_OK && r && io->untouched) {
            io->untouched(h, 1);           /* the destination (key 1) had it: only the source changed */
        }
        if (s == FD_OK) s = reply_int(out, r);
    }
    io->close(h, &dst);
    return done(io, h, &src, s);
}

/* ---------------------------------------------------------------- SINTER / SUNION / SDIFF */

/* Where the result goes: the reply (mode 0), a copy (1: a STORE form), or
 * only its count (2: SINTERCARD, stopping at limit > 0). */
typedef struct setop {
    const fd_coll_io *io;
    void *h;
    fd_coll_hk *hk;
    int *exists, n, i, op, mode;
    resp_out *out;
    fd_zbuf copy;
    long long count, limit;
} setop;

#define SETOP_STOP (-1)            /* the walk's "limit reached" (never an FD_* status) */

/* A member of set i: kept or not by the others, by op. */
static int setop_one(void *arg, const char *m, size_t ml, const char *v, size_t vl)
{
    (void)v; (void)vl;
    setop *k = arg;
    for (int j = 0; j < k->n; j++) {
        if (j == k->i) continue;
        if (k->op == FD_SETOP_UNION && j > k->i) break;      /* only the earlier sets */
        int y = member(k->io, k->h, &k->hk[j], k->exists[j], m, ml);
        if (y < 0) return -y;
        if (k->op == FD_SETOP_INTER ? !y : y) return 0;
    }
    k->count++;
    if (k->mode == 0) return resp_add_bulk(k->out, m, ml) ? FD_E_NOMEM : 0;
    if (k->mode == 1) return fd_zbuf_add(&k->copy, m, ml, 1) ? FD_E_NOMEM : 0;
    return k->limit && k->count >= k->limit ? SETOP_STOP : 0;
}

/* Open the n sets at keys (every type checked first), then walk as op
 * says. The handles are closed here. */
static int setop_run(setop *k, const resp_arg *keys, int how)
{
    const fd_coll_io *io = k->io;
    k->hk = calloc((size_t)k->n, sizeof *k->hk);
    k->exists = calloc((size_t)k->n, sizeof *k->exists);
    int s = k->hk && k->exists ? FD_OK : FD_E_NOMEM, opened = 0, empty = 0, smallest = -1;
    long long least = 0;
    for (int j = 0; j < k->n && s == FD_OK; j++, opened++) {
        s = io->open(k->h, &keys[j], how, -1, 1, &k->hk[j], &k->exists[j]);
        if (s != FD_OK || !k->exists[j]) {
            if (k->op == FD_SETOP_INTER) empty = 1;    /* but the later keys' types are still checked */
            continue;
        }
        long long c = io->count(k->h, &k->hk[j]);
        if (smallest < 0 || c < least) { smallest = j; least = c; }
    }
    for (int i = 0; i < k->n && s == FD_OK && !empty; i++) {
        if (!k->exists[i] || (k->op == FD_SETOP_INTER && i != smallest) || (k->op == FD_SETOP_DIFF && i != 0))
            continue;
        k->i = i;
        s = io->walk(k->h, &k->hk[i], setop_one, k);
        if (s == SETOP_STOP) break;
    }
    if (s == SETOP_STOP) s = FD_OK;
    for (int j = 0; j < opened; j++) io->close(k->h, &k->hk[j]);
    free(k->hk);
    free(k->exists);
    return s;
}

int fd_set_op(const fd_coll_io *io, void *h, int argc, const resp_arg *argv, int op, int store, resp_out *out)
{
    setop k = { .io = io, .h = h, .n = argc - 1 - store, .op = op, .mode = store, .out = out };
    size_t mark = out->len;
    int s = setop_run(&k, &argv[1 + store], store ? FD_COLL_SOURCE : FD_COLL_AS_CMD);
    if (!store) {
        if (s == FD_OK && resp_out_insert_header(out, mark, 's', k.count)) s = FD_E_NOMEM;
        if (s != FD_OK) out->len = mark;
        return s;
    }
    if (s == FD_OK) {
        fd_coll_hk d;
        int was = 0, c = 0;
        s = io->open_dest(h, &argv[1], !k.copy.n && fd_notify_on(FD_NOTIFY_GENERIC), &d, &was);
        for (size_t e = 0; e < k.copy.n && s == FD_OK; e++)
            s = io->put(h, &d, k.copy.a[e].m, k.copy.a[e].ml, "", 0, 1, &c);
        if (s == FD_OK) s = io->save(h, &d);
        static const char *const ev[] = { [FD_SETOP_INTER] = "sinterstore", [FD_SETOP_UNION] = "sunionstore",
                                          [FD_SETOP_DIFF] = "sdiffstore" };
        if (s == FD_OK && k.copy.n) EVENT(SET, ev[op], 1);
        else if (s == FD_OK && was) EVENT(GENERIC, "del", 1);
        if (s == FD_OK) s = reply_int(out, (long long)k.copy.n);
        io->close(h, &d);
    }
    fd_zbuf_free(&k.copy);
    return s;
}

int fd_set_sintercard(const fd_coll_io *io, void *h, int argc, const resp_arg *argv, resp_out *out)
{
    long long numkeys, limit;
    int replied, s = fd_parse_sintercard(argv, argc, &numkeys, &limit, out, &replied);
    if (s != FD_OK || replied) return s;
    setop k = { .io = io, .h = h, .n = (int)numkeys, .op = FD_SETOP_INTER, .mode = 2, .out = out, .limit = limit };
    s = setop_run(&k, &argv[2], FD_COLL_AS_CMD);
    return s == FD_OK ? reply_int(out, k.count) : s;
}
