/* kv_geo.c — the geo commands over the ordered-KV sorted sets: GEOADD,
 * GEOPOS, GEODIST, GEOHASH and the searches (GEORADIUS[BYMEMBER][_RO],
 * GEOSEARCH[STORE]). The geometry, parsing, sorting and replies are
 * storage/value/geo.c; this file gives it the sorted set (a member lookup
 * and a walk of the score index between two scores: O(log n + matches) per
 * cell) and writes the STORE destination. */
#include <stdlib.h>
#include <string.h>
#include "kv.h"
#include "../cmdargs.h"
#include "../value/geo.h"
#include "../value/zsetops.h"

/* ---------------------------------------------------------------- the fd_geo_zset of a key */

typedef struct geoz { kv_ctx *c; kv_zref r; } geoz;

static int gz_score(void *ctx, const char *m, size_t ml, double *score)
{
    geoz *g = ctx;
    return kv_zset_score(g->c, &g->r, m, ml, score);
}

static int gz_range(void *ctx, double min, double max, fd_geo_emit_fn emit, void *arg)
{
    geoz *g = ctx;
    return kv_zset_walk(g->c, &g->r, min, 0, max, 1, (kv_zset_fn)emit, arg);
}

static int gz_store(void *ctx, const resp_arg *dst, const fd_geo_query *q, const fd_geo_result *r)
{
    kv_ctx *c = ctx;
    fd_zent *a = r->ret ? malloc(r->ret * sizeof *a) : NULL;
    if (r->ret && !a) return FD_E_NOMEM;
    for (size_t i = 0; i < r->ret; i++)
        a[i] = (fd_zent){ r->members + r->pts[i].moff, r->pts[i].mlen, fd_geo_store_score(q, &r->pts[i]) };
    int s = kv_zset_store(c, dst, a, r->ret,
                          resp_arg_is(&c->argv[0], "geosearchstore") ? "geosearchstore" : "georadiusstore");
    free(a);
    return s;
}

static int gz_load(kv_ctx *c, geoz *g, const resp_arg *key, fd_geo_zset *z)
{
    g->c = c;
    FD_TRY(kv_zref_load(c, &g->r, key));
    *z = (fd_geo_zset){ g, g->r.m.live, gz_score, gz_range };
    return FD_OK;
}

/* ---------------------------------------------------------------- GEOADD */

int kv_cmd_geoadd(kv_ctx *c)
{
    int flags, first, n, replied;
    FD_TRY(fd_geo_parse_add(c->argv, c->argc, &flags, &first, &n, c->out, &replied));
    if (replied) return FD_OK;
    kv_zref r;
    FD_TRY(kv_zref_load(c, &r, &c->argv[1]));
    long long added = 0, updated = 0;
    if (!r.m.live && (flags & FD_ZADD_XX)) goto reply;
    FD_TRY(kv_zref_create(c, &r));
    for (int i = 0; i < n; i++) {
        double score, cur;
        const resp_arg *mb;
        fd_geo_add_item(c->argv, first, i, &score, &mb);
        int s = kv_zset_score(c, &r, mb->ptr, mb->len, &cur);
        if (s == FD_OK) {
            if ((flags & FD_ZADD_NX) || score == cur) continue;
            FD_TRY(kv_zset_put(c, &r, mb->ptr, mb->len, score, 1, cur));
            updated++;
        } else if (s == FD_NOTFOUND) {
            if (flags & FD_ZADD_XX) continue;
            FD_TRY(kv_zset_put(c, &r, mb->ptr, mb->len, score, 0, 0));
            added++;
        } else return s;
    }
    r.m.size += (uint64_t)added;
    FD_TRY(kv_coll_save(c, &r.k, &r.m));
    if (added || updated) KV_NOTIFY_ARG(c, ZSET, "zadd", 1);     /* Redis's GEOADD runs ZADD */
reply:
    FD_OUT(resp_add_int(c->out, (flags & FD_ZADD_CH) ? added + updated : added));
    return FD_OK;
}

/* ---------------------------------------------------------------- point reads */

static int per_member(kv_ctx *c, int hash)
{
    kv_zref r;
    FD_TRY(kv_zref_load(c, &r, &c->argv[1]));
    size_t mark = c->out->len;
    FD_OUT(resp_add_array(c->out, c->argc - 2));
    for (int j = 2; j < c->argc; j++) {
        double score = 0;
        int s = kv_zset_score(c, &r, c->argv[j].ptr, c->argv[j].len, &score);
        if (s != FD_OK && s != FD_NOTFOUND) { c->out->len = mark; return s; }
        int e = hash ? fd_geo_reply_hash(c->out, s == FD_OK, score)
                     : fd_geo_reply_pos(c->out, s == FD_OK, score);
        if (e) { c->out->len = mark; return FD_E_NOMEM; }
    }
    return FD_OK;
}

int kv_cmd_geopos(kv_ctx *c)  { return per_member(c, 0); }
int kv_cmd_geohash(kv_ctx *c) { return per_member(c, 1); }

int kv_cmd_geodist(kv_ctx *c)
{
    double to_m;
    int replied;
    FD_TRY(fd_geo_parse_dist(c->argv, c->argc, &to_m, c->out, &replied));
    if (replied) return FD_OK;
    kv_zref r;
    FD_TRY(kv_zref_load(c, &r, &c->argv[1]));
    double s1 = 0, s2 = 0;
    int a = kv_zset_score(c, &r, c->argv[2].ptr, c->argv[2].len, &s1);
    if (a != FD_OK && a != FD_NOTFOUND) return a;
    int b = kv_zset_score(c, &r, c->argv[3].ptr, c->argv[3].len, &s2);
    if (b != FD_OK && b != FD_NOTFOUND) return b;
    FD_OUT(fd_geo_reply_dist(c->out, a == FD_OK && b == FD_OK, s1, s2, to_m));
    return FD_OK;
}

/* ---------------------------------------------------------------- searches */

static int search(kv_ctx *c, int cmd)
{
    geoz g;
    fd_geo_zset z;
    FD_TRY(gz_load(c, &g, &c->argv[cmd == FD_GEO_SEARCHSTORE ? 2 : 1], &z));
    return fd_geo_command(c->argv, c->argc, cmd, &z, gz_store, c, c->out);
}

int kv_cmd_georadius(kv_ctx *c)            { return search(c, FD_GEO_RADIUS); }
int kv_cmd_georadius_ro(kv_ctx *c)         { return search(c, FD_GEO_RADIUS_RO); }
int kv_cmd_georadiusbymember(kv_ctx *c)    { return search(c, FD_GEO_RADIUSBYMEMBER); }
int kv_cmd_georadiusbymember_ro(kv_ctx *c) { return search(c, FD_GEO_RADIUSBYMEMBER_RO); }
int kv_cmd_geosearch(kv_ctx *c)            { return search(c, FD_GEO_SEARCH); }
int kv_cmd_geosearchstore(kv_ctx *c)       { return search(c, FD_GEO_SEARCHSTORE); }
