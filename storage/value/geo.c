/* geo.c — Redis 7.0's geo algorithms and replies: see geo.h.
 *
 * The arithmetic follows Redis's geohash.c / geohash_helper.c / geo.c step
 * for step (the same double operations in the same order, the same
 * double -> integer truncations), because the scores, the cells scanned and
 * the distances printed must be bit-identical to redis-server's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "geo.h"
#include "../cmdargs.h"
#include "../status.h"

/* ---------------------------------------------------------------- geohash */

typedef struct { uint64_t bits; uint8_t step; } ghash;
typedef struct { double min, max; } grange;
typedef struct { ghash hash; grange lon, lat; } garea;
/* neighbours in Redis's scan order after the centre */
enum { N_NORTH, N_SOUTH, N_EAST, N_WEST, N_NE, N_NW, N_SE, N_SW, N_COUNT };

#define HZERO(h) ((h).bits == 0 && (h).step == 0)

/* Spread the low 32 bits of v to the even bit positions. */
static uint64_t spread(uint64_t v)
{
    v = (v | (v << 16)) & 0x0000FFFF0000FFFFULL;
    v = (v | (v << 8)) & 0x00FF00FF00FF00FFULL;
    v = (v | (v << 4)) & 0x0F0F0F0F0F0F0F0FULL;
    v = (v | (v << 2)) & 0x3333333333333333ULL;
    v = (v | (v << 1)) & 0x5555555555555555ULL;
    return v;
}

/* The even bits of v packed into the low 32. */
static uint32_t squeeze(uint64_t v)
{
    v &= 0x5555555555555555ULL;
    v = (v | (v >> 1)) & 0x3333333333333333ULL;
    v = (v | (v >> 2)) & 0x0F0F0F0F0F0F0F0FULL;
    v = (v | (v >> 4)) & 0x00FF00FF00FF00FFULL;
    v = (v | (v >> 8)) & 0x0000FFFF0000FFFFULL;
    v = (v | (v >> 16)) & 0x00000000FFFFFFFFULL;
    return (uint32_t)v;
}

/* latitude bits in the even positions, longitude in the odd ones */
static int gh_encode(grange lon_r, grange lat_r, double lon, double lat, int step, ghash *h)
{
    if (step > 32 || step == 0) return 0;
    if (lon > FD_GEO_LONG_MAX || lon < FD_GEO_LONG_MIN || lat > FD_GEO_LAT_MAX || lat < FD_GEO_LAT_MIN)
        return 0;
    h->bits = 0;
    h->step = (uint8_t)step;
    if (lat < lat_r.min || lat > lat_r.max || lon < lon_r.min || lon > lon_r.max) return 0;
    double lat_off = (lat - lat_r.min) / (lat_r.max - lat_r.min);
    double lon_off = (lon - lon_r.min) / (lon_r.max - lon_r.min);
    lat_off *= (double)(1ULL << step);
    lon_off *= (double)(1ULL << step);
    uint32_t ilat = (uint32_t)lat_off, ilon = (uint32_t)lon_off;
    h->bits = spread(ilat) | (spread(ilon) << 1);
    return 1;
}

static const grange WGS_LON = { FD_GEO_LONG_MIN, FD_GEO_LONG_MAX };
static const grange WGS_LAT = { FD_GEO_LAT_MIN, FD_GEO_LAT_MAX };

static int gh_decode(ghash h, garea *a)
{
    if (HZERO(h)) return 0;
    a->hash = h;
    uint32_t ilat = squeeze(h.bits), ilon = squeeze(h.bits >> 1);
    double lat_scale = WGS_LAT.max - WGS_LAT.min, lon_scale = WGS_LON.max - WGS_LON.min;
    double div = (double)(1ULL << h.step);
    a->lat.min = WGS_LAT.min + (ilat * 1.0 / div) * lat_scale;
    a->lat.max = WGS_LAT.min + ((ilat + 1) * 1.0 / div) * lat_scale;
    a->lon.min = WGS_LON.min + (ilon * 1.0 / div) * lon_scale;
    a->lon.max = WGS_LON.min + ((ilon + 1) * 1.0 / div) * lon_scale;
    return 1;
}

/* Move a cell by one in longitude (the odd bits: x) or latitude (even: y),
 * wrapping around at the edges, as geohash_move_x / geohash_move_y. */
static void gh_move(ghash *h, int d, int along_x)
{
    if (d == 0) return;
    uint64_t odd = 0xaaaaaaaaaaaaaaaaULL, even = 0x5555555555555555ULL;
    uint64_t mine = h->bits & (along_x ? odd : even);
    uint64_t other = h->bits & (along_x ? even : odd);
    uint64_t zz = (along_x ? even : odd) >> (64 - h->step * 2);
    if (d > 0) mine = mine + (zz + 1);
    else {
        mine = mine | zz;
        mine = mine - (zz + 1);
    }
    mine &= (along_x ? odd : even) >> (64 - h->step * 2);
    h->bits = mine | other;
}

static void gh_neighbors(ghash h, ghash nb[N_COUNT])
{
    static const signed char dx[N_COUNT] = { 0, 0, 1, -1, 1, -1, 1, -1 };
    static const signed char dy[N_COUNT] = { 1, -1, 0, 0, 1, 1, -1, -1 };
    for (int i = 0; i < N_COUNT; i++) {
        nb[i] = h;
        gh_move(&nb[i], dx[i], 1);
        gh_move(&nb[i], dy[i], 0);
    }
}

static uint64_t gh_align52(ghash h) { return h.bits << (52 - h.step * 2); }

int fd_geo_encode(double lon, double lat, uint64_t *score)
{
    ghash h;
    if (!gh_encode(WGS_LON, WGS_LAT, lon, lat, FD_GEO_STEP_MAX, &h)) return -1;
    *score = gh_align52(h);
    return 0;
}

void fd_geo_decode(double score, double xy[2])
{
    ghash h = { (uint64_t)score, FD_GEO_STEP_MAX };
    garea a;
    gh_decode(h, &a);   /* never fails: step != 0 */
    /* a coordinate on the upper limit encodes one cell past it: clamped back */
    xy[0] = (a.lon.min + a.lon.max) / 2;
    if (xy[0] > FD_GEO_LONG_MAX) xy[0] = FD_GEO_LONG_MAX;
    if (xy[0] < FD_GEO_LONG_MIN) xy[0] = FD_GEO_LONG_MIN;
    xy[1] = (a.lat.min + a.lat.max) / 2;
    if (xy[1] > FD_GEO_LAT_MAX) xy[1] = FD_GEO_LAT_MAX;
    if (xy[1] < FD_GEO_LAT_MIN) xy[1] = FD_GEO_LAT_MIN;
}

#define DEG_RAD(x) ((x) * (M_PI / 180.0))
#define RAD_DEG(x) ((x) / (M_PI / 180.0))

double fd_geo_distance(double lon1d, double lat1d, double lon2d, double lat2d)
{
    double lat1r = DEG_RAD(lat1d), lon1r = DEG_RAD(lon1d);
    double lat2r = DEG_RAD(lat2d), lon2r = DEG_RAD(lon2d);
    double u = sin((lat2r - lat1r) / 2), v = sin((lon2r - lon1r) / 2);
    return 2.0 * FD_GEO_EARTH_RADIUS * asin(sqrt(u * u + cos(lat1r) * cos(lat2r) * v * v));
}

void fd_geo_hash_string(double score, char out[11])
{
    static const char alphabet[] = "0123456789bcdefghjkmnpqrstuvwxyz";
    double xy[2];
    fd_geo_decode(score, xy);
    grange lon_r = { -180, 180 }, lat_r = { -90, 90 };
    ghash h = { 0, 0 };
    gh_encode(lon_r, lat_r, xy[0], xy[1], 26, &h);
    for (int i = 0; i < 11; i++) {
        int idx = i == 10 ? 0 : (int)((h.bits >> (52 - ((i + 1) * 5))) & 0x1f);
        out[i] = alphabet[idx];
    }
}

double fd_geo_unit(const resp_arg *a)
{
    if (resp_arg_is(a, "m")) return 1;
    if (resp_arg_is(a, "km")) return 1000;
    if (resp_arg_is(a, "ft")) return 0.3048;
    if (resp_arg_is(a, "mi")) return 1609.34;
    return -1;
}

/* ---------------------------------------------------------------- replies */

static int add_human(resp_out *out, double d)
{
    char buf[5 * 1024];
    int n = resp_format_ld(buf, sizeof buf, (long double)d);
    if (out->proto == 2) return resp_add_bulk(out, buf, (size_t)n);
    if (resp_out_reserve(out, (size_t)n + 3)) return -1;
    out->data[out->len++] = ',';
    memcpy(out->data + out->len, buf, (size_t)n);
    out->len += (size_t)n;
    out->data[out->len++] = '\r';
    out->data[out->len++] = '\n';
    return 0;
}

int fd_geo_reply_pos(resp_out *out, int found, double score)
{
    if (!found) return resp_add_null_array(out);
    double xy[2];
    fd_geo_decode(score, xy);
    return resp_add_array(out, 2) || add_human(out, xy[0]) || add_human(out, xy[1]) ? -1 : 0;
}

int fd_geo_reply_hash(resp_out *out, int found, double score)
{
    if (!found) return resp_add_null(out);
    char buf[11];
    fd_geo_hash_string(score, buf);
    return resp_add_bulk(out, buf, 11);
}

int fd_geo_reply_distance(resp_out *out, double d)
{
    char buf[400];
    int n = snprintf(buf, sizeof buf, "%.4f", d);
    if (n < 0 || (size_t)n >= sizeof buf) n = (int)sizeof buf - 1;
    return resp_add_bulk(out, buf, (size_t)n);
}

/* ---------------------------------------------------------------- argument helpers */

#define ERR(txt) do { *replied = 1; return resp_add_error(out, txt) ? FD_E_NOMEM : FD_OK; } while (0)

/* extractLongLatOrReply: 0 with xy; 1 after an error reply; -1 no memory */
static int parse_lonlat(const resp_arg *a, double xy[2], resp_out *out)
{
    for (int i = 0; i < 2; i++)
        if (fd_parse_score(&a[i], &xy[i]) != 0)
            return resp_add_error(out, "ERR value is not a valid float") ? -1 : 1;
    if (xy[0] < FD_GEO_LONG_MIN || xy[0] > FD_GEO_LONG_MAX || xy[1] < FD_GEO_LAT_MIN || xy[1] > FD_GEO_LAT_MAX)
        return resp_add_errorf(out, "ERR invalid longitude,latitude pair %f,%f", xy[0], xy[1]) ? -1 : 1;
    return 0;
}

static int unit_or_reply(const resp_arg *a, double *conv, resp_out *out)
{
    *conv = fd_geo_unit(a);
    if (*conv >= 0) return 0;
    return resp_add_error(out, "ERR unsupported unit provided. please use M, KM, FT, MI") ? -1 : 1;
}

/* extractDistanceOrReply: argv[0] radius, argv[1] unit */
static int parse_distance(const resp_arg *a, double *conv, double *radius, resp_out *out)
{
    double d;
    if (fd_parse_score(&a[0], &d) != 0) return resp_add_error(out, "ERR need numeric radius") ? -1 : 1;
    if (d < 0) return resp_add_error(out, "ERR radius cannot be negative") ? -1 : 1;
    *radius = d;
    return unit_or_reply(&a[1], conv, out);
}

/* extractBoxOrReply: width height unit */
static int parse_box(const resp_arg *a, double *conv, double *w, double *h, resp_out *out)
{
    if (fd_parse_score(&a[0], w) != 0) return resp_add_error(out, "ERR need numeric width") ? -1 : 1;
    if (fd_parse_score(&a[1], h) != 0) return resp_add_error(out, "ERR need numeric height") ? -1 : 1;
    if (*h < 0 || *w < 0) return resp_add_error(out, "ERR height or width cannot be negative") ? -1 : 1;
    return unit_or_reply(&a[2], conv, out);
}

/* map 0 / 1 / -1 of the helpers above to the library's returns */
#define SUB(call) do { int r_ = (call); if (r_ < 0) return FD_E_NOMEM; if (r_ > 0) { *replied = 1; return FD_OK; } } while (0)

int fd_geo_parse_add(const resp_arg *argv, int argc, int *flags, int *first, int *n,
                     resp_out *out, int *replied)
{
    int xx = 0, nx = 0, f = 0, idx = 2;
    *replied = 0;
    while (idx < argc) {
        if (resp_arg_is(&argv[idx], "nx")) nx = 1;
        else if (resp_arg_is(&argv[idx], "xx")) xx = 1;
        else if (resp_arg_is(&argv[idx], "ch")) f |= FD_ZADD_CH;
        else break;
        idx++;
    }
    if ((argc - idx) % 3 || (xx && nx)) return FD_E_SYNTAX;
    if (nx) f |= FD_ZADD_NX;
    if (xx) f |= FD_ZADD_XX;
    for (int i = idx; i < argc; i += 3) {
        double xy[2];
        SUB(parse_lonlat(&argv[i], xy, out));
    }
    *flags = f;
    *first = idx;
    *n = (argc - idx) / 3;
    return FD_OK;
}

void fd_geo_add_item(const resp_arg *argv, int first, int i, double *score, const resp_arg **member)
{
    double xy[2] = { 0, 0 };
    uint64_t s = 0;
    const resp_arg *a = &argv[first + 3 * i];
    fd_parse_score(&a[0], &xy[0]);
    fd_parse_score(&a[1], &xy[1]);
    fd_geo_encode(xy[0], xy[1], &s);
    *score = (double)s;
    *member = &a[2];
}

int fd_geo_parse_dist(const resp_arg *argv, int argc, double *to_meters, resp_out *out, int *replied)
{
    *replied = 0;
    *to_meters = 1;
    if (argc == 5) SUB(unit_or_reply(&argv[4], to_meters, out));
    else if (argc > 5) return FD_E_SYNTAX;
    return FD_OK;
}

int fd_geo_reply_dist(resp_out *out, int found, double s1, double s2, double to_meters)
{
    if (!found) return resp_add_null(out);
    double a[2], b[2];
    fd_geo_decode(s1, a);
    fd_geo_decode(s2, b);
    return fd_geo_reply_distance(out, fd_geo_distance(a[0], a[1], b[0], b[1]) / to_meters);
}

/* ---------------------------------------------------------------- search: parsing */

/* longLatFromMember: 0 found, 1 after the error reply, -1 no memory, 2 a
 * store error (*st) */
static int member_center(const fd_geo_zset *z, const resp_arg *m, double xy[2], resp_out *out, int *st)
{
    double score;
    int s = z->score(z->ctx, m->ptr, m->len, &score);
    if (s == FD_OK) {
        fd_geo_decode(score, xy);
        return 0;
    }
    if (s != FD_NOTFOUND) {
        *st = s;
        return 2;
    }
    return resp_add_error(out, "ERR could not decode requested zset member") ? -1 : 1;
}

#define SUBM(call) do { int r_ = (call); \
    if (r_ < 0) return FD_E_NOMEM; \
    if (r_ == 2) return st; \
    if (r_ > 0) { *replied = 1; return FD_OK; } \
} while (0)

int fd_geo_parse_search(const resp_arg *argv, int argc, int cmd, const fd_geo_zset *z,
                        fd_geo_query *q, resp_out *out, int *replied)
{
    int st = FD_OK;
    int is_search = cmd == FD_GEO_SEARCH || cmd == FD_GEO_SEARCHSTORE;
    int nostore = cmd == FD_GEO_RADIUS_RO || cmd == FD_GEO_RADIUSBYMEMBER_RO;
    int base;
    memset(q, 0, sizeof *q);
    q->cmd = cmd;
    *replied = 0;
    if (cmd == FD_GEO_RADIUS || cmd == FD_GEO_RADIUS_RO) {
        base = 6;
        q->circular = 1;
        SUB(parse_lonlat(&argv[2], q->xy, out));
        SUB(parse_distance(&argv[base - 2], &q->conversion, &q->radius, out));
    } else if (!is_search) {
        base = 5;
        if (z->exists) {
            q->circular = 1;
            SUBM(member_center(z, &argv[2], q->xy, out, &st));
            SUB(parse_distance(&argv[base - 2], &q->conversion, &q->radius, out));
        }
    } else {
        base = 2;
        if (cmd == FD_GEO_SEARCHSTORE) {
            base = 3;
            q->store = &argv[1];
        }
    }

    int frommember = 0, fromloc = 0, byradius = 0, bybox = 0;
    int remaining = argc - base;
    for (int i = 0; i < remaining; i++) {
        const resp_arg *a = &argv[base + i];
        if (resp_arg_is(a, "withdist")) q->withdist = 1;
        else if (resp_arg_is(a, "withhash")) q->withhash = 1;
        else if (resp_arg_is(a, "withcoord")) q->withcoord = 1;
        else if (resp_arg_is(a, "any")) q->any = 1;
        else if (resp_arg_is(a, "asc")) q->sort = 1;
        else if (resp_arg_is(a, "desc")) q->sort = -1;
        else if (resp_arg_is(a, "count") && i + 1 < remaining) {
            if (fd_arg_ll(&argv[base + i + 1], &q->count) != FD_OK)
                ERR("ERR value is not an integer or out of range");
            if (q->count <= 0) ERR("ERR COUNT must be > 0");
            i++;
        } else if ((resp_arg_is(a, "store") || resp_arg_is(a, "storedist")) && i + 1 < remaining && !nostore &&
                   !is_search) {
            q->store = &argv[base + i + 1];
            q->storedist = resp_arg_is(a, "storedist");
            i++;
        } else if (resp_arg_is(a, "storedist") && cmd == FD_GEO_SEARCHSTORE) {
            q->storedist = 1;
        } else if (resp_arg_is(a, "frommember") && i + 1 < remaining && is_search && !fromloc) {
            if (z->exists) SUBM(member_center(z, &argv[base + i + 1], q->xy, out, &st));
            frommember = 1;
            i++;
        } else if (resp_arg_is(a, "fromlonlat") && i + 2 < remaining && is_search && !frommember) {
            SUB(parse_lonlat(&argv[base + i + 1], q->xy, out));
            fromloc = 1;
            i += 2;
        } else if (resp_arg_is(a, "byradius") && i + 2 < remaining && is_search && !bybox) {
            SUB(parse_distance(&argv[base + i + 1], &q->conversion, &q->radius, out));
            q->circular = 1;
            byradius = 1;
            i += 2;
        } else if (resp_arg_is(a, "bybox") && i + 3 < remaining && is_search && !byradius) {
            SUB(parse_box(&argv[base + i + 1], &q->conversion, &q->width, &q->height, out));
            q->circular = 0;
            bybox = 1;
            i += 3;
        } else
            ERR("ERR syntax error");
    }

    if (q->store && (q->withdist || q->withhash || q->withcoord)) {
        *replied = 1;
        return resp_add_errorf(out, "ERR %s is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
                               cmd == FD_GEO_SEARCHSTORE ? "GEOSEARCHSTORE" : "STORE option in GEORADIUS")
                   ? FD_E_NOMEM : FD_OK;
    }
    if (is_search && !(frommember || fromloc)) {
        *replied = 1;
        return resp_add_errorf(out, "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for %.*s",
                               (int)argv[0].len, argv[0].ptr) ? FD_E_NOMEM : FD_OK;
    }
    if (is_search && !(byradius || bybox)) {
        *replied = 1;
        return resp_add_errorf(out, "ERR exactly one of BYRADIUS and BYBOX can be specified for %.*s",
                               (int)argv[0].len, argv[0].ptr) ? FD_E_NOMEM : FD_OK;
    }
    if (q->any && !q->count) ERR("ERR the ANY argument requires COUNT argument");
    /* COUNT without ordering: the closest N, so ASC (not with ANY) */
    if (q->count != 0 && q->sort == 0 && !q->any) q->sort = 1;
    return FD_OK;
}

/* ---------------------------------------------------------------- search: areas */

typedef struct {
    ghash cells[9];   /* centre, then N S E W NE NW SE SW; zeroed ones skipped */
} areas;

static int estimate_steps(double range_m, double lat)
{
    if (range_m == 0) return 26;
    int step = 1;
    while (range_m < 20037726.37) {   /* MERCATOR_MAX */
        range_m *= 2;
        step++;
    }
    step -= 2;
    if (lat > 66 || lat < -66) {
        step--;
        if (lat > 80 || lat < -80) step--;
    }
    if (step < 1) step = 1;
    if (step > 26) step = 26;
    return step;
}

/* geohashBoundingBox: bounds = min lon, min lat, max lon, max lat */
static void bounding_box(const fd_geo_query *q, double b[4])
{
    double lon = q->xy[0], lat = q->xy[1];
    double height = q->conversion * (q->circular ? q->radius : q->height / 2);
    double width = q->conversion * (q->circular ? q->radius : q->width / 2);
    const double lat_delta = RAD_DEG(height / FD_GEO_EARTH_RADIUS);
    const double lon_delta_top = RAD_DEG(width / FD_GEO_EARTH_RADIUS / cos(DEG_RAD(lat + lat_delta)));
    const double lon_delta_bottom = RAD_DEG(width / FD_GEO_EARTH_RADIUS / cos(DEG_RAD(lat - lat_delta)));
    int south = lat < 0;
    b[0] = south ? lon - lon_delta_bottom : lon - lon_delta_top;
    b[2] = south ? lon + lon_delta_bottom : lon + lon_delta_top;
    b[1] = lat - lat_delta;
    b[3] = lat + lat_delta;
}

static void calc_areas(const fd_geo_query *q, areas *ar)
{
    double b[4];
    bounding_box(q, b);
    double min_lon = b[0], min_lat = b[1], max_lon = b[2], max_lat = b[3];
    double lon = q->xy[0], lat = q->xy[1];
    double radius_m = q->circular ? q->radius
                                  : sqrt((q->width / 2) * (q->width / 2) + (q->height / 2) * (q->height / 2));
    radius_m *= q->conversion;
    int steps = estimate_steps(radius_m, lat);
    ghash h, nb[N_COUNT];
    garea area;
    gh_encode(WGS_LON, WGS_LAT, lon, lat, steps, &h);
    gh_neighbors(h, nb);
    gh_decode(h, &area);

    int decrease = 0;
    garea north, south, east, west;
    gh_decode(nb[N_NORTH], &north);
    gh_decode(nb[N_SOUTH], &south);
    gh_decode(nb[N_EAST], &east);
    gh_decode(nb[N_WEST], &west);
    if (north.lat.max < max_lat) decrease = 1;
    if (south.lat.min > min_lat) decrease = 1;
    if (east.lon.max < max_lon) decrease = 1;
    if (west.lon.min > min_lon) decrease = 1;
    if (steps > 1 && decrease) {
        steps--;
        gh_encode(WGS_LON, WGS_LAT, lon, lat, steps, &h);
        gh_neighbors(h, nb);
        gh_decode(h, &area);
    }
    if (steps >= 2) {
        static const ghash Z = { 0, 0 };
        if (area.lat.min < min_lat) nb[N_SOUTH] = nb[N_SW] = nb[N_SE] = Z;
        if (area.lat.max > max_lat) nb[N_NORTH] = nb[N_NE] = nb[N_NW] = Z;
        if (area.lon.min < min_lon) nb[N_WEST] = nb[N_SW] = nb[N_NW] = Z;
        if (area.lon.max > max_lon) nb[N_EAST] = nb[N_SE] = nb[N_NE] = Z;
    }
    ar->cells[0] = h;
    for (int i = 0; i < N_COUNT; i++) ar->cells[i + 1] = nb[i];
}

/* ---------------------------------------------------------------- search: collecting */

typedef struct {
    const fd_geo_query *q;
    fd_geo_result *r;
    size_t limit;
} collector;

/* geoWithinShape: 1 inside (dist set), 0 outside */
static int within(const fd_geo_query *q, double score, double xy[2], double *dist)
{
    fd_geo_decode(score, xy);
    if (q->circular) {
        *dist = fd_geo_distance(q->xy[0], q->xy[1], xy[0], xy[1]);
        return *dist <= q->radius * q->conversion;
    }
    double w = q->width * q->conversion, h = q->height * q->conversion;
    double lon_d = fd_geo_distance(xy[0], xy[1], q->xy[0], xy[1]);
    double lat_d = fd_geo_distance(xy[0], xy[1], xy[0], q->xy[1]);
    if (lon_d > w / 2 || lat_d > h / 2) return 0;
    *dist = fd_geo_distance(q->xy[0], q->xy[1], xy[0], xy[1]);
    return 1;
}

static int collect(void *arg, const char *m, size_t ml, double score)
{
    collector *c = arg;
    fd_geo_result *r = c->r;
    if (r->n && c->limit && r->n >= c->limit) return 1;
    double xy[2], dist;
    if (!within(c->q, score, xy, &dist)) return 0;
    if (r->n == r->cap) {
        size_t nc = r->cap ? r->cap * 2 : 16;
        fd_geo_point *np = realloc(r->pts, nc * sizeof *np);
        if (!np) return -1;
        r->pts = np;
        r->cap = nc;
    }
    if (r->mlen + ml > r->mcap || !r->members) {
        size_t nc = r->mcap ? r->mcap : 256;
        while (nc < r->mlen + ml) nc *= 2;
        char *nm = realloc(r->members, nc);
        if (!nm) return -1;
        r->members = nm;
        r->mcap = nc;
    }
    memcpy(r->members + r->mlen, m, ml);
    fd_geo_point *p = &r->pts[r->n++];
    p->lon = xy[0];
    p->lat = xy[1];
    p->dist = dist;
    p->score = score;
    p->moff = r->mlen;
    p->mlen = ml;
    r->mlen += ml;
    return 0;
}

/* ---------------------------------------------------------------- search: sorting */

static int cmp_pt(const fd_geo_point *a, const fd_geo_point *b, int dir)
{
    int c = a->dist > b->dist ? 1 : a->dist == b->dist ? 0 : -1;
    return dir < 0 ? -c : c;
}

/* Stable merge sort: where Redis calls qsort, glibc 2.36 (Debian 12) sorts
 * with a merge sort, so equal distances keep their scan order. */
static int stable_sort(fd_geo_point *a, size_t n, int dir)
{
    if (n < 2) return 0;
    fd_geo_point *tmp = malloc(n * sizeof *tmp);
    if (!tmp) return -1;
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) tmp[k++] = cmp_pt(&a[i], &a[j], dir) <= 0 ? a[i++] : a[j++];
            while (i < mid) tmp[k++] = a[i++];
            while (j < hi) tmp[k++] = a[j++];
        }
        memcpy(a, tmp, n * sizeof *a);
    }
    free(tmp);
    return 0;
}

static void pswap(fd_geo_point *a, size_t i, size_t j)
{
    fd_geo_point t = a[i];
    a[i] = a[j];
    a[j] = t;
}

static void vswap(fd_geo_point *a, size_t i, size_t j, size_t n)
{
    for (size_t k = 0; k < n; k++) pswap(a, i + k, j + k);
}

static size_t med3(fd_geo_point *a, size_t x, size_t y, size_t z, int dir)
{
    return cmp_pt(&a[x], &a[y], dir) < 0
               ? (cmp_pt(&a[y], &a[z], dir) < 0 ? y : (cmp_pt(&a[x], &a[z], dir) < 0 ? z : x))
               : (cmp_pt(&a[y], &a[z], dir) > 0 ? y : (cmp_pt(&a[x], &a[z], dir) < 0 ? x : z));
}

static void insertion(fd_geo_point *a, size_t n, int dir)
{
    for (size_t m = 1; m < n; m++)
        for (size_t l = m; l > 0 && cmp_pt(&a[l - 1], &a[l], dir) > 0; l--) pswap(a, l, l - 1);
}

/* Redis's pqsort (Bentley & McIlroy's quicksort that skips the partitions
 * wholly outside [lo, hi]): the same pivots and swaps, so ties among the
 * first COUNT come out as redis-server's. Indexes relative to base. */
static void partial_sort(fd_geo_point *base, size_t off, size_t n, size_t lo, size_t hi, int dir)
{
    for (;;) {
        fd_geo_point *a = base + off;
        if (n < 7) {
            insertion(a, n, dir);
            return;
        }
        size_t pm = n / 2;
        if (n > 7) {
            size_t pl = 0, pn = n - 1;
            if (n > 40) {
                size_t d = n / 8;
                pl = med3(a, pl, pl + d, pl + 2 * d, dir);
                pm = med3(a, pm - d, pm, pm + d, dir);
                pn = med3(a, pn - 2 * d, pn - d, pn, dir);
            }
            pm = med3(a, pl, pm, pn, dir);
        }
        pswap(a, 0, pm);
        size_t pa = 1, pb = 1;
        long pc = (long)n - 1, pd = (long)n - 1;
        int c;
        for (;;) {
            while ((long)pb <= pc && (c = cmp_pt(&a[pb], &a[0], dir)) <= 0) {
                if (c == 0) {
                    pswap(a, pa, pb);
                    pa++;
                }
                pb++;
            }
            while ((long)pb <= pc && (c = cmp_pt(&a[pc], &a[0], dir)) >= 0) {
                if (c == 0) {
                    pswap(a, (size_t)pc, (size_t)pd);
                    pd--;
                }
                pc--;
            }
            if ((long)pb > pc) break;
            pswap(a, pb, (size_t)pc);
            pb++;
            pc--;
        }
        /* (7.0's pqsort has no "no swaps: insertion sort" shortcut: with it,
         * ties among the first COUNT would come out in another order) */
        size_t r = pa < pb - pa ? pa : pb - pa;
        vswap(a, 0, pb - r, r);
        size_t right = (size_t)(pd - pc), tail = n - 1 - (size_t)pd;
        r = right < tail ? right : tail;
        vswap(a, pb, n - r, r);
        /* [0, pb-pa) sorts before the pivot, the last pd-pc after it */
        if ((r = pb - pa) > 1) {
            size_t l = off, e = off + r - 1;
            if (!((lo < l && hi < l) || (lo > e && hi > e))) partial_sort(base, off, r, lo, hi, dir);
        }
        if ((r = (size_t)(pd - pc)) > 1) {
            off = off + n - r;
            n = r;
            size_t l = off, e = off + r - 1;
            if (!((lo < l && hi < l) || (lo > e && hi > e))) continue;
        }
        return;
    }
}

/* ---------------------------------------------------------------- search: run and reply */

void fd_geo_result_free(fd_geo_result *r)
{
    free(r->pts);
    free(r->members);
    memset(r, 0, sizeof *r);
}

int fd_geo_run(const fd_geo_query *q, const fd_geo_zset *z, fd_geo_result *r)
{
    memset(r, 0, sizeof *r);
    areas ar;
    calc_areas(q, &ar);
    collector c = { q, r, q->any ? (size_t)q->count : 0 };
    int last = 0;
    for (int i = 0; i < 9; i++) {
        ghash h = ar.cells[i];
        if (HZERO(h)) continue;
        /* huge radii: adjacent cells can be the same one */
        if (last && h.bits == ar.cells[last].bits && h.step == ar.cells[last].step) continue;
        if (r->n && c.limit && r->n >= c.limit) break;
        ghash next = h;
        next.bits++;
        double min = (double)gh_align52(h), max = (double)gh_align52(next);
        int s = z->range(z->ctx, min, max, collect, &c);
        if (s != FD_OK) return s;
        last = i;
    }
    size_t ret = q->count == 0 || r->n < (size_t)q->count ? r->n : (size_t)q->count;
    if (q->sort != 0) {
        if (ret == r->n) {
            if (stable_sort(r->pts, r->n, q->sort)) return FD_E_NOMEM;
        } else if (ret > 0) {
            partial_sort(r->pts, 0, r->n, 0, ret - 1, q->sort);
        }
    }
    r->ret = ret;
    for (size_t i = 0; i < ret; i++) r->pts[i].dist /= q->conversion;
    return FD_OK;
}

double fd_geo_store_score(const fd_geo_query *q, const fd_geo_point *p)
{
    return q->storedist ? p->dist : p->score;
}

int fd_geo_reply_search(const fd_geo_query *q, const fd_geo_result *r, resp_out *out)
{
    int opts = q->withdist + q->withcoord + q->withhash;
    if (resp_add_array(out, (long long)r->ret)) return -1;
    for (size_t i = 0; i < r->ret; i++) {
        const fd_geo_point *p = &r->pts[i];
        if (opts && resp_add_array(out, opts + 1)) return -1;
        if (resp_add_bulk(out, r->members + p->moff, p->mlen)) return -1;
        if (q->withdist && fd_geo_reply_distance(out, p->dist)) return -1;
        if (q->withhash && resp_add_int(out, (long long)p->score)) return -1;
        if (q->withcoord && (resp_add_array(out, 2) || add_human(out, p->lon) || add_human(out, p->lat)))
            return -1;
    }
    return 0;
}

int fd_geo_command(const resp_arg *argv, int argc, int cmd, const fd_geo_zset *z,
                   fd_geo_store_fn store, void *store_ctx, resp_out *out)
{
    fd_geo_query q;
    int replied, s;
    if ((s = fd_geo_parse_search(argv, argc, cmd, z, &q, out, &replied)) != FD_OK || replied) return s;
    fd_geo_result r;
    memset(&r, 0, sizeof r);
    if (z->exists && (s = fd_geo_run(&q, z, &r)) != FD_OK) {
        fd_geo_result_free(&r);
        return s;
    }
    if (q.store) {
        if (!store) s = FD_E_INTERNAL;
        else if ((s = store(store_ctx, q.store, &q, &r)) == FD_OK && resp_add_int(out, (long long)r.ret))
            s = FD_E_NOMEM;
    } else if (fd_geo_reply_search(&q, &r, out)) {
        s = FD_E_NOMEM;
    }
    fd_geo_result_free(&r);
    return s;
}
