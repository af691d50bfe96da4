/* geo.h — Redis 7.0's geo commands as pure algorithms over "a sorted set
 * the backend can read", so that every Redis-types backend (storage/kv/,
 * storage/mongodb/) answers GEOADD, GEOPOS, GEODIST, GEOHASH, GEORADIUS(_RO),
 * GEORADIUSBYMEMBER(_RO), GEOSEARCH and GEOSEARCHSTORE with redis-server
 * 7.0's bytes: the same 52-bit interleaved geohash scores, the same 9 score
 * ranges scanned in the same order, the same distance filter, the same sorts
 * (a stable sort where Redis calls glibc's qsort, Redis's partial pqsort
 * where it calls that, so ties come out in Redis's order), the same error
 * texts in the same order of checks, and the same RESP2/RESP3 reply shapes.
 *
 * Module prefix: fd_geo_. No store access of its own: the backend looks the
 * key up (and answers WRONGTYPE) first, then hands the library an
 * fd_geo_zset — a member->score lookup and a score-range walk. Members given
 * to the library are copied before the callback returns. Nothing here
 * blocks; the search allocates its result array (freed by the library).
 *
 * Typical wiring of one command (a few lines per backend):
 *   GEOADD:   fd_geo_parse_add(); then per i: fd_geo_add_item() -> ZADD logic
 *   GEOPOS:   per member: fd_geo_reply_pos(out, found, score)
 *   GEOHASH:  per member: fd_geo_reply_hash(out, found, score)
 *   GEODIST:  fd_geo_parse_dist() before the lookup, then fd_geo_reply_dist()
 *   searches: fd_geo_command(argv, argc, cmd, &zset, store_fn, ctx, out)
 */
#ifndef FRONTDOOR_VALUE_GEO_H
#define FRONTDOOR_VALUE_GEO_H

#include <stddef.h>
#include <stdint.h>
#include "../../protocol/resp.h"
#include "zset.h"

#define FD_GEO_STEP_MAX 26              /* 26*2 = 52 bits: a double holds them exactly */
#define FD_GEO_LAT_MIN  -85.05112878
#define FD_GEO_LAT_MAX  85.05112878
#define FD_GEO_LONG_MIN -180.0
#define FD_GEO_LONG_MAX 180.0
#define FD_GEO_EARTH_RADIUS 6372797.560856   /* metres, Redis's EARTH_RADIUS_IN_METERS */

/* ---------------------------------------------------------------- primitives */

/* The GEOADD score of (lon, lat): Redis's geohashEncodeWGS84 at step 26,
 * aligned to 52 bits. 0 on success, -1 when outside the limits above. */
int fd_geo_encode(double lon, double lat, uint64_t *score);

/* The centre of the step-26 cell a score names (Redis's decodeGeohash: the
 * score is truncated to uint64 first). xy[0] = longitude, xy[1] = latitude. */
void fd_geo_decode(double score, double xy[2]);

/* Great-circle distance in metres (Redis 7.0's geohashGetDistance: haversine
 * with FD_GEO_EARTH_RADIUS). Arguments: longitude first. */
double fd_geo_distance(double lon1, double lat1, double lon2, double lat2);

/* GEOHASH's 11 characters for a score (decoded, re-encoded over the
 * standard ranges -180..180 / -90..90, base32, the 11th always '0'). */
void fd_geo_hash_string(double score, char out[11]);

/* A unit argument (m, km, ft, mi, any case): the factor to metres, or -1. */
double fd_geo_unit(const resp_arg *a);

/* ---------------------------------------------------------------- reply writers */

/* One GEOPOS element: a null array when !found, else [lon, lat] as Redis's
 * addReplyHumanLongDouble (RESP2 bulk, RESP3 double). 0, or -1 out of memory. */
int fd_geo_reply_pos(resp_out *out, int found, double score);
/* One GEOHASH element: null when !found, else the 11-char bulk. */
int fd_geo_reply_hash(resp_out *out, int found, double score);
/* A distance as Redis's addReplyDoubleDistance: bulk "%.4f" (both protocols). */
int fd_geo_reply_distance(resp_out *out, double d);

/* ---------------------------------------------------------------- GEOADD */

/* GEOADD key [NX|XX] [CH] lon lat member ...: the options (as FD_ZADD_NX /
 * FD_ZADD_XX / FD_ZADD_CH of storage/cmdargs.h) and every triple checked in
 * order, before any write. Returns FD_OK with *replied 0 (*first: argv index
 * of the first longitude, *n triples), FD_OK with *replied 1 after writing
 * the error ("ERR invalid longitude,latitude pair %f,%f"), FD_E_SYNTAX or
 * FD_E_NOTFLOAT (the caller replies with fd_strerror), FD_E_NOMEM. */
int fd_geo_parse_add(const resp_arg *argv, int argc, int *flags, int *first, int *n,
                     resp_out *out, int *replied);
/* Triple i (after a successful fd_geo_parse_add): its score and member. */
void fd_geo_add_item(const resp_arg *argv, int first, int i, double *score,
                     const resp_arg **member);

/* ---------------------------------------------------------------- GEODIST */

/* GEODIST key m1 m2 [unit]: checked before the key lookup, as Redis. FD_OK
 * with *to_meters (1 without a unit) and *replied 0; FD_OK with *replied 1
 * after the unit error; FD_E_SYNTAX for extra arguments; FD_E_NOMEM. */
int fd_geo_parse_dist(const resp_arg *argv, int argc, double *to_meters, resp_out *out,
                      int *replied);
/* GEODIST's reply: null unless both were found (and the key exists). */
int fd_geo_reply_dist(resp_out *out, int found, double s1, double s2, double to_meters);

/* ---------------------------------------------------------------- searches */

enum fd_geo_cmd {
    FD_GEO_RADIUS,              /* GEORADIUS key lon lat radius unit [opts] */
    FD_GEO_RADIUS_RO,
    FD_GEO_RADIUSBYMEMBER,      /* GEORADIUSBYMEMBER key member radius unit [opts] */
    FD_GEO_RADIUSBYMEMBER_RO,
    FD_GEO_SEARCH,              /* GEOSEARCH key FROM... BY... [opts] */
    FD_GEO_SEARCHSTORE          /* GEOSEARCHSTORE dst src FROM... BY... [opts] */
};

/* Emitted by the backend's range walk for each member; returns 0 to go on,
 * 1 to stop the walk (the library has enough: COUNT n ANY), -1 out of memory. */
typedef int (*fd_geo_emit_fn)(void *arg, const char *member, size_t len, double score);

/* The source sorted set, read through the backend. */
typedef struct fd_geo_zset {
    void *ctx;
    int exists;   /* the key holds a sorted set (the backend answered WRONGTYPE already) */
    /* The score of member: FD_OK, FD_NOTFOUND or an FD_E_* status. */
    int (*score)(void *ctx, const char *member, size_t len, double *score);
    /* Call emit for every member with min <= score < max, in sorted-set
     * order (score, then member bytes), until emit returns non-zero.
     * FD_OK, FD_E_NOMEM when emit returned -1, or an FD_E_* of the store. */
    int (*range)(void *ctx, double min, double max, fd_geo_emit_fn emit, void *arg);
} fd_geo_zset;

/* A parsed search. */
typedef struct fd_geo_query {
    int cmd;
    int circular;               /* BYRADIUS (or GEORADIUS*) vs BYBOX */
    double xy[2];               /* centre */
    double radius;              /* in the unit */
    double width, height;       /* in the unit */
    double conversion;          /* unit -> metres */
    int withdist, withhash, withcoord;
    int sort;                   /* 0 none, 1 ASC, -1 DESC (COUNT without ANY implies ASC) */
    int any;
    long long count;            /* 0: unlimited */
    const resp_arg *store;      /* destination key, or NULL */
    int storedist;              /* STOREDIST: the stored score is the distance in the unit */
} fd_geo_query;

/* Parse a search command's arguments as georadiusGeneric does (its checks in
 * its order; FROMMEMBER / GEORADIUSBYMEMBER look the member up through z).
 * FD_OK with *replied 0: q is ready (when !z->exists it still is: see
 * fd_geo_command for the empty answers); FD_OK with *replied 1 after
 * writing Redis's error to out; FD_E_NOMEM; or the status of z->score. */
int fd_geo_parse_search(const resp_arg *argv, int argc, int cmd, const fd_geo_zset *z,
                        fd_geo_query *q, resp_out *out, int *replied);

/* One match. */
typedef struct fd_geo_point {
    double lon, lat;            /* decoded cell centre */
    double dist;                /* metres from the centre (in the unit after fd_geo_run) */
    double score;               /* the member's geohash score */
    size_t moff, mlen;          /* member bytes: result->members + moff */
} fd_geo_point;

typedef struct fd_geo_result {
    fd_geo_point *pts;
    size_t n, cap;              /* all matches collected */
    size_t ret;                 /* how many are returned / stored: the first ret of pts, in order */
    char *members;              /* the members' bytes */
    size_t mlen, mcap;
} fd_geo_result;

/* Scan the 9 cells (geohashCalculateAreasByShapeWGS84), filter by distance or
 * box, sort and cut as Redis does; r->pts[0..r->ret) are the answer, their
 * dist already divided by the unit. r is initialised here; free it with
 * fd_geo_result_free whatever the return. FD_OK, FD_E_NOMEM, or the status
 * of z->range. z->exists must be true. */
int fd_geo_run(const fd_geo_query *q, const fd_geo_zset *z, fd_geo_result *r);
void fd_geo_result_free(fd_geo_result *r);

/* The reply of a non-STORE search (RESP2/RESP3: an array of members or of
 * [member, dist?, hash?, [lon, lat]?]). 0, or -1 out of memory. */
int fd_geo_reply_search(const fd_geo_query *q, const fd_geo_result *r, resp_out *out);
/* The score a STORE/STOREDIST destination gets for a point. */
double fd_geo_store_score(const fd_geo_query *q, const fd_geo_point *p);

/* Write the destination of a STORE search: replace key dst with a sorted set
 * of pts[0..n) (member r->members+moff, score fd_geo_store_score), or delete
 * it when n == 0. FD_OK or an FD_E_* status (the library then returns it). */
typedef int (*fd_geo_store_fn)(void *ctx, const resp_arg *dst, const fd_geo_query *q,
                               const fd_geo_result *r);

/* A whole search command after the key lookup: parse, and either the error
 * reply, or the empty answer for a missing key (for STORE: store(n=0), then
 * :0), or run, then the reply or store() and :count. store may be NULL for
 * the commands that cannot store (it is then never called). FD_OK when a
 * reply was written; otherwise an FD_E_* status to reply with. */
int fd_geo_command(const resp_arg *argv, int argc, int cmd, const fd_geo_zset *z,
                   fd_geo_store_fn store, void *store_ctx, resp_out *out);

/* ---------------------------------------------------------------- the commands (geo_cmd.c)
 * Over a store's sorted sets (zset.h's fd_zset_io): GEOADD, GEOPOS and
 * GEOHASH (hash 1), GEODIST, and the searches (cmd: enum fd_geo_cmd). The
 * reply goes to out (nothing on a failure); FD_OK or an FD_E_* status. */
int fd_geo_add(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, resp_out *out);
int fd_geo_members(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, int hash, resp_out *out);
int fd_geo_dist(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, resp_out *out);
int fd_geo_search(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, int cmd, resp_out *out);

/* The handlers of a family, named <P>_cmd_<command>, over io for a context
 * type CTX with argc, argv and out (kv_ctx, mg_ctx). */
#define FD_GEO_HANDLERS(P, CTX, IO) \
    int P##_cmd_geoadd(CTX *c)  { return fd_geo_add(&(IO), c, c->argc, c->argv, c->out); } \
    int P##_cmd_geopos(CTX *c)  { return fd_geo_members(&(IO), c, c->argc, c->argv, 0, c->out); } \
    int P##_cmd_geohash(CTX *c) { return fd_geo_members(&(IO), c, c->argc, c->argv, 1, c->out); } \
    int P##_cmd_geodist(CTX *c) { return fd_geo_dist(&(IO), c, c->argc, c->argv, c->out); } \
    int P##_cmd_georadius(CTX *c) { return fd_geo_search(&(IO), c, c->argc, c->argv, FD_GEO_RADIUS, c->out); } \
    int P##_cmd_georadius_ro(CTX *c) { return fd_geo_search(&(IO), c, c->argc, c->argv, FD_GEO_RADIUS_RO, c->out); } \
    int P##_cmd_georadiusbymember(CTX *c) \
        { return fd_geo_search(&(IO), c, c->argc, c->argv, FD_GEO_RADIUSBYMEMBER, c->out); } \
    int P##_cmd_georadiusbymember_ro(CTX *c) \
        { return fd_geo_search(&(IO), c, c->argc, c->argv, FD_GEO_RADIUSBYMEMBER_RO, c->out); } \
    int P##_cmd_geosearch(CTX *c) { return fd_geo_search(&(IO), c, c->argc, c->argv, FD_GEO_SEARCH, c->out); } \
    int P##_cmd_geosearchstore(CTX *c) { return fd_geo_search(&(IO), c, c->argc, c->argv, FD_GEO_SEARCHSTORE, c->out); }

#endif
