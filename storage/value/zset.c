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

/* ZADD's item j: score argv[first + 2j], member the next (checked by fd_parse_zadd). */
static void zadd_item(const resp_arg *argv, int first, int j, double *score, const resp_arg **member)
{
    fd_parse_score(&argv[first + 2 * j], score);
    *member = &argv[first + 2 * j + 1];
}

int fd_zset_zadd(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, int is_incr, resp_out *out)
{
    int flags, idx, elements, replied;
    int s = fd_parse_zadd(argv, argc, is_incr, &flags, &idx, &elements, out, &replied);
    if (s != FD_OK || replied) return s;
    return fd_zset_add(io, h, argv, flags, idx, elements, zadd_item, out);
}

int fd_zset_add(const fd_zset_io *io, void *h, const resp_arg *argv, int flags, int idx, int elements,
                fd_zset_item_fn item, resp_out *out)
{
    int s, nx = flags & FD_ZADD_NX, xx = flags & FD_ZADD_XX, gt = flags & FD_ZADD_GT,
        lt = flags & FD_ZADD_LT, incr = flags & FD_ZADD_INCR;
    fd_zset_zk zk;
    int exists;
    s = io->open(h, &argv[1], 0, 2, 1, &zk, &exists);      /* (the members: argv[idx + 1], step 2; a superset) */
    long long added = 0, updated = 0, processed = 0;
    double score = 0;
    for (int j = 0; j < elements && s == FD_OK && (exists || !xx); j++) {
        const resp_arg *mb;
        double cur;
        item(argv, idx, j, &score, &mb);
        int f = exists ? io->score(h, &zk, mb->ptr, mb->len, &cur) : FD_NOTFOUND;
        if (f == FD_OK) {
            if (nx) continue;
            if (incr) {
                score += cur;
                if (isnan(score))
                    return fd_zset_close(io, h, &zk, OUT(resp_add_error(out, "ERR resulting score is not a number (NaN)")));
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
    return fd_zset_close(io, h, &zk, s);
}

int fd_zset_zrem(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, resp_out *out)
{
    fd_zset_zk zk;
    int exists, s = io->open(h, &argv[1], 0, 2, 1, &zk, &exists);
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
    return fd_zset_close(io, h, &zk, s);
}

/* ZSCORE (many 0: one member, a double or nil) / ZMSCORE (an array). */
int fd_zset_zscore(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, int many, resp_out *out)
{
    fd_zset_zk zk;
    int exists, s = io->open(h, &argv[1], 0, 2, 1, &zk, &exists);
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
    return fd_zset_close(io, h, &zk, s);
}

int fd_zset_zcard(const fd_zset_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    fd_zset_zk zk;
    int exists, s = io->open(h, &argv[1], 0, INT_MAX, 1, &zk, &exists);      /* no member named */
    if (s == FD_OK) s = OUT(resp_add_int(out, exists ? io->count(h, &zk) : 0));
    return fd_zset_close(io, h, &zk, s);
}

/* ---------------------------------------------------------------- ranges */

typedef struct lex_end { const fd_zrange *z; int last, in; } lex_end;

static int lex_end_fn(void *arg, const char *m, size_t ml, double score)
{
    lex_end *e = arg;
    e->in = e->last ? fd_zrange_gte_min(e->z, score, m, ml) : fd_zrange_lte_max(e->z, score, m, ml);
    return 0;
}

/* Bring z to what io->range walks (see zset.h) over the open set: 0 when
 * it selects nothing (or *s says why not). Redis 7.0: a rank range is
 * sanitized against the size; an empty score or lex range, a negative
 * offset or a zero limit select nothing; a lex range nothing unless the
 * last member (in score order) is >= min and the first <= max
 * (zslIsInLexRange; it matters when the scores differ). */
static int selects(const fd_zset_io *io, void *h, fd_zset_zk *zk, fd_zrange *z, int *s)
{
    *s = FD_OK;
    long long n = io->count(h, zk), got;
    if (z->type == FD_ZR_RANK) return fd_rank_range(n, &z->start, &z->end);
    if (fd_zrange_empty(z) || z->offset < 0 || z->limit == 0 || n == 0) return 0;
    if (z->type != FD_ZR_LEX) return 1;
    for (int last = 1; last >= 0; last--) {
        lex_end e = { z, last, 0 };
        fd_zrange end = { .type = FD_ZR_RANK, .start = last ? n - 1 : 0, .end = last ? n - 1 : 0 };
        if ((*s = io->range(h, zk, &end, 0, lex_end_fn, &e, &got)) != FD_OK || !e.in) return 0;
    }
    return 1;
}

/* How a range command opens its key: a lex range reads the whole set (a
 * store that reads windows reads rank and score ranges only). */
static int range_open(const fd_zset_io *io, void *h, const resp_arg *key, int source, const fd_zrange *z,
                      fd_zset_zk *zk, int *exists)
{
    return io->open(h, key, source, z->type == FD_ZR_LEX ? FD_ZSET_WHOLE : INT_MAX, 1, zk, exists);
}

int fd_zset_emit(void *arg, const char *m, size_t ml, double score) { return fd_zset_emit_inline(arg, m, ml, score); }

int fd_zset_zrange(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, int type, int rev, resp_out *out)
{
    fd_zrange z;
    int replied;
    int s = fd_parse_zrange(argv, argc, type, rev, &z, out, &replied);
    if (s != FD_OK || replied) return s;
    fd_zset_zk zk;
    int exists;
    s = range_open(io, h, &argv[1], 0, &z, &zk, &exists);
    long long n = 0;
    size_t mark = out->len;
    if (s == FD_OK && exists && selects(io, h, &zk, &z, &s)) {
        fd_zset_emit_to e = { out, z.withscores, z.withscores && out->proto == 3 };
        s = io->range(h, &zk, &z, 0, fd_zset_emit, &e, &n);
    }
    if (s == FD_OK && resp_out_insert_header(out, mark, 'a', z.withscores && out->proto != 3 ? 2 * n : n))
        s = FD_E_NOMEM;
    if (s != FD_OK) out->len = mark;
    return fd_zset_close(io, h, &zk, s);
}

/* ZCOUNT / ZLEXCOUNT (count 1) and ZREMRANGEBYRANK/SCORE/LEX (count 0). */
int fd_zset_zcount(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, int type, int count, resp_out *out)
{
    fd_zrange z;
    int replied;
    int s = fd_parse_zrange(argv, argc, type, 0, &z, out, &replied);
    if (s != FD_OK || replied) return s;
    fd_zset_zk zk;
    int exists;
    s = io->open(h, &argv[1], 0, FD_ZSET_WHOLE, 1, &zk, &exists);
    long long n = 0;
    if (s == FD_OK && exists && selects(io, h, &zk, &z, &s))
        s = io->range(h, &zk, &z, !count, NULL, NULL, &n);
    if (s == FD_OK && !count && n) {
        static const char *const ev[] = { [FD_ZR_RANK] = "zremrangebyrank", [FD_ZR_SCORE] = "zremrangebyscore",
                                          [FD_ZR_LEX] = "zremrangebylex" };
        s = io->save(h, &zk);
        if (s == FD_OK) {
            EVENT(ZSET, ev[type], &argv[1]);
            if (fd_notify_on(FD_NOTIFY_GENERIC) && io->gone(h, &zk)) EVENT(GENERIC, "del", &argv[1]);
        }
    }
    if (s == FD_OK) s = OUT(resp_add_int(out, n));
    return fd_zset_close(io, h, &zk, s);
}

int fd_zset_zrank(const fd_zset_io *io, void *h, const resp_arg *argv, int rev, resp_out *out)
{
    fd_zset_zk zk;
    int exists, s = io->open(h, &argv[1], 0, 2, 1, &zk, &exists);
    long long rank = 0;
    int f = s == FD_OK && exists ? io->rank(h, &zk, argv[2].ptr, argv[2].len, &rank) : FD_NOTFOUND;
    if (s == FD_OK && f == FD_NOTFOUND) s = OUT(resp_add_null(out));
    else if (s == FD_OK && f != FD_OK) s = f;
    else if (s == FD_OK) s = OUT(resp_add_int(out, rev ? io->count(h, &zk) - 1 - rank : rank));
    return fd_zset_close(io, h, &zk, s);
}

/* Pop the members z (a sanitized rank range from one end) selects, each
 * through e after the caller's header, then store the set and raise
 * zpopmin/zpopmax (and del when it is gone): genericZpopCommand. */
static int pop_walk(const fd_zset_io *io, void *h, fd_zset_zk *zk, const resp_arg *key, const fd_zrange *z,
                    fd_zset_emit_to *e)
{
    long long k = 0;
    FD_TRY(io->range(h, zk, z, 1, fd_zset_emit, e, &k));
    if (k != z->end - z->start + 1) return FD_E_CORRUPT;     /* the header said so many */
    FD_TRY(io->save(h, zk));
    EVENT(ZSET, z->rev ? "zpopmax" : "zpopmin", key);
    if (fd_notify_on(FD_NOTIFY_GENERIC) && io->gone(h, zk)) EVENT(GENERIC, "del", key);
    return FD_OK;
}

int fd_zset_zpop(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, int max, resp_out *out)
{
    long long count = -1;
    if (argc > 3) return FD_E_SYNTAX;
    /* getPositiveLongFromObjectOrReply: one text for both errors */
    if (argc == 3 && (resp_str2ll(argv[2].ptr, argv[2].len, &count) != 0 || count < 0)) return FD_E_RANGE_POSITIVE;
    int nested = out->proto == 3 && count != -1;
    fd_zset_zk zk;
    int exists, s = io->open(h, &argv[1], 0, INT_MAX, 1, &zk, &exists);
    size_t mark = out->len;
    fd_zrange z = { .type = FD_ZR_RANK, .rev = max, .start = 0, .end = (count < 0 ? 1 : count) - 1 };
    if (s == FD_OK && exists && count != 0 && selects(io, h, &zk, &z, &s)) {
        fd_zset_emit_to e = { out, 1, nested };
        long long k = z.end + 1;
        s = OUT(resp_add_array(out, nested ? k : 2 * k));
        if (s == FD_OK) s = pop_walk(io, h, &zk, &argv[1], &z, &e);
    } else if (s == FD_OK) {
        s = OUT(resp_add_array(out, 0));
    }
    if (s != FD_OK) out->len = mark;
    return fd_zset_close(io, h, &zk, s);
}

int fd_zset_mpop_one(const fd_zset_io *io, void *h, const resp_arg *key, int max, long long count,
                     resp_out *out, int *popped)
{
    fd_zset_zk zk;
    int exists, s = io->open(h, key, 0, INT_MAX, 1, &zk, &exists);
    size_t mark = out->len;
    fd_zrange z = { .type = FD_ZR_RANK, .rev = max, .start = 0, .end = count - 1 };
    *popped = 0;
    if (s == FD_OK && exists && selects(io, h, &zk, &z, &s)) {
        fd_zset_emit_to e = { out, 1, 1 };
        s = OUT(resp_add_array(out, 2) || resp_add_bulk(out, key->ptr, key->len) || resp_add_array(out, z.end + 1));
        if (s == FD_OK) s = pop_walk(io, h, &zk, key, &z, &e);
        if (s != FD_OK) out->len = mark;
        else *popped = 1;
    }
    return fd_zset_close(io, h, &zk, s);
}

static int copy_fn(void *arg, const char *m, size_t ml, double score)
{
    return fd_zbuf_add(arg, m, ml, score);
}

int fd_zset_zrangestore(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, resp_out *out)
{
    fd_zrange z;
    int replied;
    int s = fd_parse_zrangestore(argv, argc, &z, out, &replied);
    if (s != FD_OK || replied) return s;
    fd_zset_zk zk;
    int exists;
    s = range_open(io, h, &argv[2], 1, &z, &zk, &exists);      /* the source: lookupKeyRead (keymiss) */
    fd_zbuf cp = { 0 };
    long long n = 0;
    if (s == FD_OK && exists && selects(io, h, &zk, &z, &s)) s = io->range(h, &zk, &z, 0, copy_fn, &cp, &n);
    if (s == FD_OK) s = io->store(h, &argv[1], cp.a, cp.n, "zrangestore");
    if (s == FD_OK) s = OUT(resp_add_int(out, (long long)cp.n));
    fd_zbuf_free(&cp);
    return fd_zset_close(io, h, &zk, s);
}
