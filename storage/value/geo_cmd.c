/* geo_cmd.c — the geo commands over a store's sorted sets (fd_zset_io,
 * zset.h): GEOADD (ZADD's body, zset.c), GEOPOS, GEOHASH, GEODIST and the
 * searches (GEORADIUS[BYMEMBER][_RO], GEOSEARCH[STORE]). The geometry,
 * parsing, sorting and replies are geo.c's; this file hands it the set (a
 * member's score, a walk between two scores) and the STORE destination. */
#include <stdlib.h>
#include "geo.h"
#include "../status.h"

int fd_geo_add(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, resp_out *out)
{
    int flags, first, n, replied;
    int s = fd_geo_parse_add(argv, argc, &flags, &first, &n, out, &replied);
    if (s != FD_OK || replied) return s;
    return fd_zset_add(io, h, argv, flags, first, n, fd_geo_add_item, out);   /* Redis's GEOADD runs ZADD */
}

/* GEOPOS (hash 0) / GEOHASH (1): an element per member named. */
int fd_geo_members(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, int hash, resp_out *out)
{
    fd_zset_zk zk;
    int exists, s = io->open(h, &argv[1], 0, 2, 1, &zk, &exists);
    size_t mark = out->len;
    if (s == FD_OK && resp_add_array(out, argc - 2)) s = FD_E_NOMEM;
    for (int j = 2; j < argc && s == FD_OK; j++) {
        double score = 0;
        int f = exists ? io->score(h, &zk, argv[j].ptr, argv[j].len, &score) : FD_NOTFOUND;
        if (f != FD_OK && f != FD_NOTFOUND) s = f;
        else if (hash ? fd_geo_reply_hash(out, f == FD_OK, score) : fd_geo_reply_pos(out, f == FD_OK, score))
            s = FD_E_NOMEM;
    }
    if (s != FD_OK) out->len = mark;
    return fd_zset_close(io, h, &zk, s);
}

int fd_geo_dist(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, resp_out *out)
{
    double to_m;
    int replied;
    int s = fd_geo_parse_dist(argv, argc, &to_m, out, &replied);
    if (s != FD_OK || replied) return s;
    fd_zset_zk zk;
    int exists;
    s = io->open(h, &argv[1], 0, 2, 1, &zk, &exists);
    double sc[2] = { 0, 0 };
    int found = s == FD_OK && exists;
    for (int j = 0; j < 2 && found && s == FD_OK; j++) {
        int f = io->score(h, &zk, argv[2 + j].ptr, argv[2 + j].len, &sc[j]);
        if (f == FD_NOTFOUND) found = 0;
        else s = f;
    }
    if (s == FD_OK && fd_geo_reply_dist(out, found, sc[0], sc[1], to_m)) s = FD_E_NOMEM;
    return fd_zset_close(io, h, &zk, s);
}

/* ---------------------------------------------------------------- searches */

typedef struct geoz {
    const fd_zset_io *io;
    void *h;
    fd_zset_zk *zk;
    const resp_arg *argv;
} geoz;

static int gz_score(void *ctx, const char *m, size_t ml, double *score)
{
    geoz *g = ctx;
    return g->io->score(g->h, g->zk, m, ml, score);
}

static int gz_range(void *ctx, double min, double max, fd_geo_emit_fn emit, void *arg)
{
    geoz *g = ctx;
    fd_zrange z = { .type = FD_ZR_SCORE, .min = min, .max = max, .maxex = 1, .limit = -1 };
    long long n;
    if (!(min < max)) return FD_OK;         /* (a range io->range may walk: not empty) */
    return g->io->range(g->h, g->zk, &z, 0, emit, arg, &n);
}

static int gz_store(void *ctx, const resp_arg *dst, const fd_geo_query *q, const fd_geo_result *r)
{
    geoz *g = ctx;
    fd_zent *a = malloc((r->ret ? r->ret : 1) * sizeof *a);
    if (!a) return FD_E_NOMEM;
    for (size_t i = 0; i < r->ret; i++)
        a[i] = (fd_zent){ r->members + r->pts[i].moff, r->pts[i].mlen, fd_geo_store_score(q, &r->pts[i]) };
    int s = g->io->store(g->h, dst, a, r->ret,
                         resp_arg_is(&g->argv[0], "geosearchstore") ? "geosearchstore" : "georadiusstore");
    free(a);
    return s;
}

int fd_geo_search(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, int cmd, resp_out *out)
{
    fd_zset_zk zk;
    int exists;
    /* georadiusGeneric: lookupKeyRead whatever the command (its keymiss);
     * the whole set (FROMMEMBER looks a member up, nine cells are walked) */
    int s = io->open(h, &argv[cmd == FD_GEO_SEARCHSTORE ? 2 : 1], 1, FD_ZSET_WHOLE, 1, &zk, &exists);
    if (s != FD_OK) return fd_zset_close(io, h, &zk, s);
    geoz g = { io, h, &zk, argv };
    fd_geo_zset z = { &g, exists, gz_score, gz_range };
    size_t mark = out->len;
    s = fd_geo_command(argv, argc, cmd, &z, gz_store, &g, out);
    if (s != FD_OK) out->len = mark;
    return fd_zset_close(io, h, &zk, s);
}
