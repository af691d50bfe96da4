/* zset.c — the sorted-set commands that name their members, over
 * fd_zset_io (see zset.h), with Redis 7.0's semantics (t_zset.c: learned
 * from it, written here anew). */
#include <limits.h>
#include <math.h>
#include "zset.h"
#include "../cmdargs.h"
#include "../status.h"
#include "../host.h"

#define EVENT(cls, name, key) do { if (fd_notify_on(FD_NOTIFY_##cls)) \
                                       io->event(h, FD_NOTIFY_##cls, name, key); } while (0)
#define OUT(expr) ((expr) ? FD_E_NOMEM : FD_OK)

static int done(const fd_zset_io *io, void *h, fd_zset_zk *zk, int s)
{
    if (io->close) io->close(h, zk);
    return s;
}

int fd_zset_zadd(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, int is_incr, resp_out *out)
{
    int flags, idx, elements, replied;
    int s = fd_parse_zadd(argv, argc, is_incr, &flags, &idx, &elements, out, &replied);
    if (s != FD_OK || replied) return s;
    int nx = flags & FD_ZADD_NX, xx = flags & FD_ZADD_XX, gt = flags & FD_ZADD_GT,
        lt = flags & FD_ZADD_LT, incr = flags & FD_ZADD_INCR;
    fd_zset_zk zk;
    int exists;
    s = io->open(h, &argv[1], 2, 1, &zk, &exists);      /* (the members: argv[idx + 1], step 2; a superset) */
    long long added = 0, updated = 0, processed = 0;
    double score = 0;
    for (int j = 0; j < elements && s == FD_OK && (exists || !xx); j++) {
        const resp_arg *mb = &argv[idx + 2 * j + 1];
        double cur;
        fd_parse_score(&argv[idx + 2 * j], &score);
        int f = exists ? io->score(h, &zk, mb->ptr, mb->len, &cur) : FD_NOTFOUND;
        if (f == FD_OK) {
            if (nx) continue;
            if (incr) {
                score += cur;
                if (isnan(score))
                    return done(io, h, &zk, OUT(resp_add_error(out, "ERR resulting score is not a number (NaN)")));
            }
            if ((lt && score >= cur) || (gt && score <= cur)) continue;
            processed++;
            if (score != cur) {
                s = io->put(h, &zk, mb->ptr, mb->len, score, 1, cur);
                updated++;
            }
        } else if (f == FD_NOTFOUND) {
            if (xx) continue;
            s = io->put(h, &zk, mb->ptr, mb->len, score, 0, 0);
            exists = 1;
            added++;
            processed++;
        } else {
            s = f;
        }
    }
    if (s == FD_OK && (added || updated)) {
        s = io->save(h, &zk);
        if (s == FD_OK) EVENT(ZSET, incr ? "zincr" : "zadd", &argv[1]);
    }
    if (s == FD_OK) {
        if (incr) s = OUT(processed ? resp_add_double(out, score) : resp_add_null(out));
        else s = OUT(resp_add_int(out, (flags & FD_ZADD_CH) ? added + updated : added));
    }
    return done(io, h, &zk, s);
}

int fd_zset_zrem(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, resp_out *out)
{
    fd_zset_zk zk;
    int exists, s = io->open(h, &argv[1], 2, 1, &zk, &exists);
    long long n = 0;
    for (int j = 2; j < argc && s == FD_OK && exists; j++) {
        int r = 0;
        s = io->del(h, &zk, argv[j].ptr, argv[j].len, &r);
        n += r;
    }
    if (s == FD_OK && n) s = io->save(h, &zk);
    if (s == FD_OK && n) {
        EVENT(ZSET, "zrem", &argv[1]);
        if (fd_notify_on(FD_NOTIFY_GENERIC) && io->gone(h, &zk)) EVENT(GENERIC, "del", &argv[1]);
    }
    if (s == FD_OK) s = OUT(resp_add_int(out, n));
    return done(io, h, &zk, s);
}

/* ZSCORE (many 0: one member, a double or nil) / ZMSCORE (an array). */
int fd_zset_zscore(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, int many, resp_out *out)
{
    fd_zset_zk zk;
    int exists, s = io->open(h, &argv[1], 2, 1, &zk, &exists);
    size_t mark = out->len;
    if (s == FD_OK && many) s = OUT(resp_add_array(out, argc - 2));
    for (int j = 2; j < (many ? argc : 3) && s == FD_OK; j++) {
        double d;
        int f = exists ? io->score(h, &zk, argv[j].ptr, argv[j].len, &d) : FD_NOTFOUND;
        if (f == FD_OK) s = OUT(resp_add_double(out, d));
        else if (f == FD_NOTFOUND) s = OUT(resp_add_null(out));
        else s = f;
    }
    if (s != FD_OK) out->len = mark;
    return done(io, h, &zk, s);
}

int fd_zset_zcard(const fd_zset_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    fd_zset_zk zk;
    int exists, s = io->open(h, &argv[1], INT_MAX, 1, &zk, &exists);      /* no member named */
    if (s == FD_OK) s = OUT(resp_add_int(out, exists ? io->count(h, &zk) : 0));
    return done(io, h, &zk, s);
}
