/* mg_geo.c — the geo commands on the MongoDB backend: GEOADD, GEOPOS,
 * GEODIST, GEOHASH and the searches, over the sorted-set document (its
 * members kept in Redis's order, so a score range is a binary search and a
 * walk). The geometry, parsing and replies are storage/value/geo.c.
 * Read, change, write back, as the other sorted-set commands (mg_zset.c). */
#include <stdlib.h>
#include <string.h>
#include "mg.h"
#include "../value/geo.h"
#include "../value/zsetops.h"

typedef struct geoz { mg_ctx *c; mg_zset Z; } geoz;

static int gz_score(void *ctx, const char *m, size_t ml, double *score)
{
    geoz *g = ctx;
    long i = mg_zset_find(&g->Z, m, ml);
    if (i < 0) return FD_NOTFOUND;
    *score = g->Z.a[i].s;
    return FD_OK;
}

static int gz_range(void *ctx, double min, double max, fd_geo_emit_fn emit, void *arg)
{
    geoz *g = ctx;
    size_t lo = 0, hi = g->Z.n;
    while (lo < hi) {                       /* the first score >= min */
        size_t mid = lo + (hi - lo) / 2;
        if (g->Z.a[mid].s < min) lo = mid + 1; else hi = mid;
    }
    for (size_t i = lo; i < g->Z.n && g->Z.a[i].s < max; i++) {
        int r = emit(arg, g->Z.a[i].m, g->Z.a[i].ml, g->Z.a[i].s);
        if (r < 0) return FD_E_NOMEM;
        if (r > 0) break;
    }
    return FD_OK;
}

int mg_zstore(mg_ctx *c, const resp_arg *dst, const fd_zent *a, size_t n, const char *event)
{
    mg_meta m;
    FD_TRY(mg_lookup(c, dst, &m, 0));
    int found = m.found, was = m.live;
    mg_meta_free(&m);
    mg_meta fresh;
    memset(&fresh, 0, sizeof fresh);
    fresh.found = found;                    /* a new key: no TTL */
    mg_zset Z;
    memset(&Z, 0, sizeof Z);
    Z.a = malloc((n ? n : 1) * sizeof *Z.a);
    if (!Z.a) return FD_E_NOMEM;
    for (size_t i = 0; i < n; i++) Z.a[i] = (mg_zent){ a[i].m, a[i].ml, a[i].s };
    Z.n = Z.cap = n;
    Z.dirty = 1;
    int s = mg_zset_save(c, dst, &fresh, &Z);
    mg_zset_free(&Z);
    if (s == FD_OK && n) MG_NOTIFY(c, ZSET, event, dst->ptr, dst->len);
    else if (s == FD_OK && was) MG_NOTIFY(c, GENERIC, "del", dst->ptr, dst->len);
    return s;
}

static int gz_store(void *ctx, const resp_arg *dst, const fd_geo_query *q, const fd_geo_result *r)
{
    mg_ctx *c = ctx;
    fd_zent *a = malloc((r->ret ? r->ret : 1) * sizeof *a);
    if (!a) return FD_E_NOMEM;
    for (size_t i = 0; i < r->ret; i++)
        a[i] = (fd_zent){ r->members + r->pts[i].moff, r->pts[i].mlen, fd_geo_store_score(q, &r->pts[i]) };
    int s = mg_zstore(c, dst, a, r->ret,
                      resp_arg_is(&c->argv[0], "geosearchstore") ? "geosearchstore" : "georadiusstore");
    free(a);
    return s;
}

#define GEO_DONE(st) do { int st_ = (st); mg_zset_free(&Z); mg_meta_free(&m); return st_; } while (0)

int mg_cmd_geoadd(mg_ctx *c)
{
    int flags, first, n, replied;
    FD_TRY(fd_geo_parse_add(c->argv, c->argc, &flags, &first, &n, c->out, &replied));
    if (replied) return FD_OK;
    mg_meta m; mg_zset Z;
    FD_TRY(mg_zset_load(c, &c->argv[1], &m, &Z));
    long long added = 0, updated = 0;
    if (!m.live && (flags & FD_ZADD_XX)) GEO_DONE(resp_add_int(c->out, 0) ? FD_E_NOMEM : FD_OK);
    for (int i = 0; i < n; i++) {
        double score;
        const resp_arg *mb;
        fd_geo_add_item(c->argv, first, i, &score, &mb);
        long at = mg_zset_find(&Z, mb->ptr, mb->len);
        if (at >= 0) {
            if ((flags & FD_ZADD_NX) || Z.a[at].s == score) continue;
            Z.a[at].s = score;
            Z.dirty = 1;
            updated++;
        } else {
            if (flags & FD_ZADD_XX) continue;
            mg_zent *na = mg_reserve(Z.a, &Z.cap, Z.n + 1, sizeof *na);
            if (!na) GEO_DONE(FD_E_NOMEM);
            Z.a = na;
            Z.a[Z.n++] = (mg_zent){ mb->ptr, mb->len, score };
            Z.dirty = 1;
            added++;
        }
    }
    int s = FD_OK;
    if (added || updated) {
        mg_ix_invalidate(&Z.ix);
        s = mg_zset_save(c, &c->argv[1], &m, &Z);
        if (s == FD_OK) MG_NOTIFY_ARG(c, ZSET, "zadd", 1);     /* Redis's GEOADD runs ZADD */
    }
    if (s == FD_OK && resp_add_int(c->out, (flags & FD_ZADD_CH) ? added + updated : added)) s = FD_E_NOMEM;
    GEO_DONE(s);
}

static int per_member(mg_ctx *c, int hash)
{
    mg_meta m; mg_zset Z;
    FD_TRY(mg_zset_load(c, &c->argv[1], &m, &Z));
    size_t mark = c->out->len;
    int e = resp_add_array(c->out, c->argc - 2);
    for (int j = 2; j < c->argc && !e; j++) {
        long at = mg_zset_find(&Z, c->argv[j].ptr, c->argv[j].len);
        double score = at >= 0 ? Z.a[at].s : 0;
        e = hash ? fd_geo_reply_hash(c->out, at >= 0, score) : fd_geo_reply_pos(c->out, at >= 0, score);
    }
    if (e) { c->out->len = mark; GEO_DONE(FD_E_NOMEM); }
    GEO_DONE(FD_OK);
}

int mg_cmd_geopos(mg_ctx *c)  { return per_member(c, 0); }
int mg_cmd_geohash(mg_ctx *c) { return per_member(c, 1); }

int mg_cmd_geodist(mg_ctx *c)
{
    double to_m;
    int replied;
    FD_TRY(fd_geo_parse_dist(c->argv, c->argc, &to_m, c->out, &replied));
    if (replied) return FD_OK;
    mg_meta m; mg_zset Z;
    FD_TRY(mg_zset_load(c, &c->argv[1], &m, &Z));
    long a = mg_zset_find(&Z, c->argv[2].ptr, c->argv[2].len);
    long b = mg_zset_find(&Z, c->argv[3].ptr, c->argv[3].len);
    int e = fd_geo_reply_dist(c->out, a >= 0 && b >= 0, a >= 0 ? Z.a[a].s : 0, b >= 0 ? Z.a[b].s : 0, to_m);
    GEO_DONE(e ? FD_E_NOMEM : FD_OK);
}

static int search(mg_ctx *c, int cmd)
{
    mg_meta m;
    geoz g = { .c = c };
    FD_TRY(mg_zset_load(c, &c->argv[cmd == FD_GEO_SEARCHSTORE ? 2 : 1], &m, &g.Z));
    fd_geo_zset z = { &g, m.live, gz_score, gz_range };
    size_t mark = c->out->len;
    int s = fd_geo_command(c->argv, c->argc, cmd, &z, gz_store, c, c->out);
    if (s != FD_OK) c->out->len = mark;
    mg_zset_free(&g.Z);
    mg_meta_free(&m);
    return s;
}

int mg_cmd_georadius(mg_ctx *c)            { return search(c, FD_GEO_RADIUS); }
int mg_cmd_georadius_ro(mg_ctx *c)         { return search(c, FD_GEO_RADIUS_RO); }
int mg_cmd_georadiusbymember(mg_ctx *c)    { return search(c, FD_GEO_RADIUSBYMEMBER); }
int mg_cmd_georadiusbymember_ro(mg_ctx *c) { return search(c, FD_GEO_RADIUSBYMEMBER_RO); }
int mg_cmd_geosearch(mg_ctx *c)            { return search(c, FD_GEO_SEARCH); }
int mg_cmd_geosearchstore(mg_ctx *c)       { return search(c, FD_GEO_SEARCHSTORE); }
