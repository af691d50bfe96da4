/* test_value_geo.c — storage/value/geo against a real redis-server 7.0.
 *
 * How: a redis-server is started on a free loopback port (redis_live.h); the
 * same point set is GEOADDed to it and to an in-memory sorted array that
 * drives the library through its fd_geo_zset callbacks; then hundreds of
 * GEORADIUS / GEORADIUSBYMEMBER / GEOSEARCH / GEOSEARCHSTORE queries (random
 * centres, including the poles and the antimeridian, radii from 1 m to 5000
 * km, boxes, every option, RESP2 and RESP3), GEOPOS / GEOHASH / GEODIST, and
 * every error case are sent to both; the reply bytes must be identical.
 * The hard-coded vectors at the top were produced with redis-server 7.0.15
 * (GEOADD then ZSCORE / GEOHASH / GEOPOS) and run even without a server. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "test.h"
#include "redis_live.h"
#include "storage/value/geo.h"
#include "storage/status.h"

/* ---------------------------------------------------------------- an in-memory sorted set */

typedef struct { double score; char m[40]; size_t ml; } zel;
typedef struct { zel *e; size_t n, cap; } zmem;

static int zel_cmp(const void *a, const void *b)
{
    const zel *x = a, *y = b;
    if (x->score != y->score) return x->score < y->score ? -1 : 1;
    size_t l = x->ml < y->ml ? x->ml : y->ml;
    int c = memcmp(x->m, y->m, l);
    return c ? c : (x->ml < y->ml ? -1 : x->ml > y->ml);
}

static void zm_add(zmem *z, const char *m, double score)
{
    for (size_t i = 0; i < z->n; i++)
        if (strcmp(z->e[i].m, m) == 0) {
            z->e[i].score = score;
            qsort(z->e, z->n, sizeof *z->e, zel_cmp);
            return;
        }
    if (z->n == z->cap) z->e = realloc(z->e, (z->cap = z->cap * 2 + 64) * sizeof *z->e);
    zel *e = &z->e[z->n++];
    e->score = score;
    snprintf(e->m, sizeof e->m, "%s", m);
    e->ml = strlen(e->m);
    qsort(z->e, z->n, sizeof *z->e, zel_cmp);
}

static int zm_score(void *ctx, const char *m, size_t ml, double *score)
{
    zmem *z = ctx;
    for (size_t i = 0; i < z->n; i++)
        if (z->e[i].ml == ml && memcmp(z->e[i].m, m, ml) == 0) {
            *score = z->e[i].score;
            return FD_OK;
        }
    return FD_NOTFOUND;
}

static int zm_range(void *ctx, double min, double max, fd_geo_emit_fn emit, void *arg)
{
    zmem *z = ctx;
    for (size_t i = 0; i < z->n; i++) {
        if (z->e[i].score < min) continue;
        if (z->e[i].score >= max) break;
        int r = emit(arg, z->e[i].m, z->e[i].ml, z->e[i].score);
        if (r < 0) return FD_E_NOMEM;
        if (r > 0) break;
    }
    return FD_OK;
}

/* the STORE destination, as ZRANGE dst 0 -1 WITHSCORES would show it */
static int stored_calls;
static int mem_store(void *ctx, const resp_arg *dst, const fd_geo_query *q, const fd_geo_result *r)
{
    resp_out *o = ctx;
    zmem tmp = { 0 };
    for (size_t i = 0; i < r->ret; i++) {
        char m[64];
        snprintf(m, sizeof m, "%.*s", (int)r->pts[i].mlen, r->members + r->pts[i].moff);
        zm_add(&tmp, m, fd_geo_store_score(q, &r->pts[i]));
    }
    resp_add_array(o, (long long)tmp.n * 2);
    for (size_t i = 0; i < tmp.n; i++) {
        resp_add_bulk(o, tmp.e[i].m, tmp.e[i].ml);
        resp_add_double(o, tmp.e[i].score);
    }
    free(tmp.e);
    stored_calls++;
    return FD_OK;
}

/* ---------------------------------------------------------------- driving both */

static rl_server srv;
static int have_srv;
static zmem pts;
static int proto = 2;
static int mismatches, multi;   /* multi: replies with 2+ results (the test must exercise order) */

typedef struct { resp_arg a[64]; char buf[2048]; int argc; } words;

static void split(words *w, const char *line)
{
    snprintf(w->buf, sizeof w->buf, "%s", line);
    w->argc = 0;
    for (char *p = w->buf; *p && w->argc < 64;) {
        while (*p == ' ') p++;
        if (!*p) break;
        char *s = p;
        while (*p && *p != ' ') p++;
        w->a[w->argc].ptr = s;
        w->a[w->argc].len = (size_t)(p - s);
        w->argc++;
        if (*p) *p++ = 0;
    }
}

static int cmd_of(const resp_arg *a)
{
    static const char *names[] = { "georadius", "georadius_ro", "georadiusbymember", "georadiusbymember_ro",
                                   "geosearch", "geosearchstore" };
    for (int i = 0; i < 6; i++)
        if (a->len == strlen(names[i]) && strncasecmp(a->ptr, names[i], a->len) == 0) return i;
    return -1;
}

/* our reply for one command line, as the wiring of a backend would make it */
static void ours(const char *line, resp_out *o, resp_out *stored)
{
    words w;
    split(&w, line);
    int cmd = cmd_of(&w.a[0]);
    int src = cmd == FD_GEO_SEARCHSTORE ? 2 : 1;
    fd_geo_zset z = { &pts, w.a[src].len == 1 && w.a[src].ptr[0] == 'g', zm_score, zm_range };
    int s = fd_geo_command(w.a, w.argc, cmd, &z, mem_store, stored, o);
    if (s != FD_OK) resp_add_error(o, fd_strerror(s));
}

static void compare(const char *line)
{
    char *rep;
    size_t rl;
    resp_out o, st;
    resp_out_init(&o, proto);
    resp_out_init(&st, 2);
    ours(line, &o, &st);
    if (rl_cmdline(&srv, line, &rep, &rl) != 0) {
        CHECK(!"redis-server went away");
        exit(1);
    }
    int same = rl == o.len && memcmp(rep, o.data, rl) == 0;
    CHECK(same);
    if (rep[0] == '*' && atoi(rep + 1) > 1) multi++;
    if (!same && mismatches++ < 8)
        fprintf(stderr, "MISMATCH (RESP%d) %s\n  redis: %.600s\n  ours:  %.*s\n", proto, line, rep,
                (int)(o.len > 600 ? 600 : o.len), o.data);
    free(rep);
    if (st.len) {   /* the destination the STORE wrote */
        const char *dst = strstr(line, "geosearchstore") ? "dst" : NULL;
        char q[64];
        snprintf(q, sizeof q, "zrange %s 0 -1 withscores", dst ? dst : "dst");
        if (proto == 3) {   /* compare in RESP2 */
            rl_cmdline(&srv, "hello 2", &rep, &rl);
            free(rep);
        }
        rl_cmdline(&srv, q, &rep, &rl);
        int ok = rl == st.len && memcmp(rep, st.data, rl) == 0;
        CHECK(ok);
        if (!ok && mismatches++ < 8) fprintf(stderr, "STORE MISMATCH %s\n  redis: %.400s\n  ours:  %.400s\n", line, rep, st.data);
        free(rep);
        if (proto == 3) {
            rl_cmdline(&srv, "hello 3", &rep, &rl);
            free(rep);
        }
    }
    resp_out_free(&o);
    resp_out_free(&st);
}

/* ---------------------------------------------------------------- the point set */

static double urand(double lo, double hi) { return lo + (hi - lo) * drand48(); }

static void add_point(double lon, double lat, const char *name)
{
    char line[256], *rep;
    size_t rl;
    snprintf(line, sizeof line, "geoadd g %.9f %.9f %s", lon, lat, name);
    words w;
    split(&w, line);
    int flags, first, n, replied;
    resp_out o;
    resp_out_init(&o, 2);
    int s = fd_geo_parse_add(w.a, w.argc, &flags, &first, &n, &o, &replied);
    CHECK(s == FD_OK && !replied && n == 1);
    double score;
    const resp_arg *m;
    fd_geo_add_item(w.a, first, 0, &score, &m);
    zm_add(&pts, name, score);
    resp_out_free(&o);
    if (!have_srv) return;
    rl_cmdline(&srv, line, &rep, &rl);
    free(rep);
    snprintf(line, sizeof line, "zscore g %s", name);
    rl_cmdline(&srv, line, &rep, &rl);
    const char *nl = strchr(rep, '\n');
    double theirs = nl ? atof(nl + 1) : -1;
    CHECK(theirs == score);
    if (theirs != score) fprintf(stderr, "score of %s: redis %.17g ours %.17g\n", name, theirs, score);
    free(rep);
}

static void build_points(void)
{
    char name[32];
    int k = 0;
    for (int i = 0; i < 250; i++) {
        snprintf(name, sizeof name, "r%d", k++);
        add_point(urand(-180, 180), urand(-85.05112878, 85.05112878), name);
    }
    for (int i = 0; i < 80; i++) {   /* a dense cluster (Sicily) */
        snprintf(name, sizeof name, "c%d", k++);
        add_point(13.36 + urand(-0.5, 0.5), 38.11 + urand(-0.5, 0.5), name);
    }
    for (int i = 0; i < 40; i++) {   /* both sides of the antimeridian */
        snprintf(name, sizeof name, "a%d", k++);
        add_point(i % 2 ? urand(179.5, 180) : urand(-180, -179.5), urand(-3, 3), name);
    }
    add_point(180, 0, "lon180");
    add_point(-180, 0, "lonm180");
    add_point(180, 85.05112878, "corner_ne");
    add_point(-180, -85.05112878, "corner_sw");
    for (int i = 0; i < 40; i++) {   /* near both poles */
        snprintf(name, sizeof name, "p%d", k++);
        add_point(urand(-180, 180), i % 2 ? urand(80, 85.05112878) : urand(-85.05112878, -80), name);
    }
    for (int i = 0; i < 12; i++) {   /* equal positions: ties in distance */
        double lon = 13.36 + urand(-0.2, 0.2), lat = 38.11 + urand(-0.2, 0.2);
        for (int j = 0; j < 3; j++) {
            snprintf(name, sizeof name, "t%d_%d", i, j);
            add_point(lon, lat, name);
        }
    }
}

/* ---------------------------------------------------------------- queries */

static const char *units[] = { "m", "km", "mi", "ft", "KM" };
static const double unit_m[] = { 1, 1000, 1609.34, 0.3048, 1000 };

static void random_center(double *lon, double *lat)
{
    int k = (int)(drand48() * 6);
    if (k == 0) { *lon = urand(-180, 180); *lat = urand(-85.05, 85.05); }
    else if (k == 1) { *lon = 13.36 + urand(-1, 1); *lat = 38.11 + urand(-1, 1); }
    else if (k == 2) { *lon = drand48() < 0.5 ? urand(179, 180) : urand(-180, -179); *lat = urand(-5, 5); }
    else if (k == 3) { *lon = urand(-180, 180); *lat = drand48() < 0.5 ? urand(78, 85.05) : urand(-85.05, -78); }
    else if (k == 4) { *lon = drand48() < 0.5 ? 180 : -180; *lat = urand(-85.05112878, 85.05112878); }
    else { *lon = urand(-180, 180); *lat = drand48() < 0.5 ? 85.05112878 : -85.05112878; }
}

static void random_query(char *line, size_t cap)
{
    int kind = (int)(drand48() * 5);
    int u = (int)(drand48() * 5);
    double meters = pow(10, urand(drand48() < 0.2 ? 0 : 3.5, 6.8));
    double lon, lat;
    random_center(&lon, &lat);
    const char *member = pts.e[(size_t)(drand48() * pts.n)].m;
    int n = 0;
    if (kind == 0) n = snprintf(line, cap, "georadius g %.6f %.6f %.4f %s", lon, lat, meters / unit_m[u], units[u]);
    else if (kind == 1) n = snprintf(line, cap, "georadiusbymember_ro g %s %.4f %s", member, meters / unit_m[u], units[u]);
    else {
        const char *cmd = kind == 4 ? "geosearchstore dst g" : "geosearch g";
        n = drand48() < 0.5 ? snprintf(line, cap, "%s fromlonlat %.6f %.6f", cmd, lon, lat)
                            : snprintf(line, cap, "%s frommember %s", cmd, member);
        if (drand48() < 0.5) n += snprintf(line + n, cap - (size_t)n, " byradius %.4f %s", meters / unit_m[u], units[u]);
        else n += snprintf(line + n, cap - (size_t)n, " bybox %.4f %.4f %s", meters / unit_m[u] * urand(0.2, 3),
                           meters / unit_m[u] * urand(0.2, 3), units[u]);
    }
    int store = kind == 4 || (kind == 0 && drand48() < 0.15);
    double r = drand48();
    if (r < 0.3) n += snprintf(line + n, cap - (size_t)n, " asc");
    else if (r < 0.6) n += snprintf(line + n, cap - (size_t)n, " desc");
    if (drand48() < 0.4) {
        n += snprintf(line + n, cap - (size_t)n, " count %d", 1 + (int)(drand48() * 12));
        if (drand48() < 0.3) n += snprintf(line + n, cap - (size_t)n, " any");
    }
    if (kind == 0 && store) n += snprintf(line + n, cap - (size_t)n, drand48() < 0.5 ? " store dst" : " storedist dst");
    else if (kind == 4) { if (drand48() < 0.5) n += snprintf(line + n, cap - (size_t)n, " storedist"); }
    else {
        if (drand48() < 0.5) n += snprintf(line + n, cap - (size_t)n, " withdist");
        if (drand48() < 0.3) n += snprintf(line + n, cap - (size_t)n, " withhash");
        if (drand48() < 0.4) n += snprintf(line + n, cap - (size_t)n, " withcoord");
    }
}

static const char *error_cases[] = {
    "geosearch g frommember nope byradius 1 km",
    "geosearch g fromlonlat 15 37 byradius -1 km",
    "geosearch g fromlonlat 15 37 byradius x km",
    "geosearch g fromlonlat 15 37 byradius 1 parsec",
    "geosearch g fromlonlat 15 37 bybox x 1 km",
    "geosearch g fromlonlat 15 37 bybox 1 x km",
    "geosearch g fromlonlat 15 37 bybox 1 -1 km",
    "geosearch g fromlonlat 15 37 bybox 1 1 yd",
    "geosearch g fromlonlat 15 37 byradius 1 km any",
    "geosearch g fromlonlat 15 37 byradius 1 km count 0",
    "geosearch g fromlonlat 15 37 byradius 1 km count -3",
    "geosearch g fromlonlat 15 37 byradius 1 km count x",
    "geosearch g fromlonlat 15 37 byradius 1 km count",
    "geosearch g fromlonlat 15 37 byradius 1 km store x",
    "geosearch g fromlonlat 15 37 byradius 1 km storedist",
    "geosearch g fromlonlat 15 37 byradius 1 km frommember c300",
    "geosearch g frommember c300 fromlonlat 15 37 byradius 1 km",
    "geosearch g fromlonlat 15 37 byradius 1 km bybox 1 1 km",
    "geosearch g fromlonlat 15 37 bybox 1 1 km byradius 1 km",
    "geosearch g fromlonlat 15 37 byradius 1 km byradius 200 km",
    "geosearch g fromlonlat 200 37 byradius 1 km",
    "geosearch g fromlonlat 15 86 byradius 1 km",
    "geosearch g fromlonlat x 37 byradius 1 km",
    "GeoSearch g byradius 1 km asc desc",
    "GeoSearch g fromlonlat 1 2 asc desc",
    "GeoSearchSTORE dst g fromlonlat 1 2 asc desc",
    "geosearch nokey fromlonlat 1 2 asc desc",
    "geosearch nokey frommember x byradius 1 km",
    "geosearch nokey frommember x byradius x km",
    "geosearch g frommember nope byradius x km",
    "geosearchstore dst g fromlonlat 15 37 byradius 1 km withdist",
    "geosearchstore dst g fromlonlat 15 37 byradius 1 km store x",
    "geosearchstore dst nokey fromlonlat 1 2 byradius 1 km",
    "georadius g 15 37 100 km store dst withdist",
    "georadius g 15 37 100 km withhash storedist dst",
    "georadius_ro g 15 37 100 km store dst",
    "georadius g 15 37 -100 km",
    "georadius g 15 37 100 km frommember c300",
    "georadius g 15 37 100 km byradius 1 km",
    "georadius g 15 37 100 km count 3 any withdist",
    "georadius g 200 37 100 km",
    "georadius g 15 37 100 furlong",
    "georadius nokey 1 2 3 km store dst",
    "georadius nokey 1 2 x km",
    "georadiusbymember g nope 100 km",
    "georadiusbymember nokey nope x km",
    "georadiusbymember nokey nope 1 km store dst",
    "georadiusbymember g c300 x km",
    "georadiusbymember_ro g c300 10 km storedist dst",
    "georadiusbymember g c300 0 km",
    "georadius g 13.36 38.11 0 m withdist",
    "geosearch g fromlonlat 13.36 38.11 bybox 0 0 m",
    "geosearch g frommember t3_1 byradius 0 m withdist withcoord withhash",
    "geosearch g frommember t3_1 byradius 1 m count 2",
    "geosearch g frommember t3_1 byradius 1 m count 2 desc",
    "geosearch g frommember t3_1 byradius 50 km count 10 asc withdist",
    "geosearch g frommember t3_1 byradius 50 km count 1 any withdist",
    "geosearch g fromlonlat 180 0 byradius 100 km withdist withcoord",
    "geosearch g fromlonlat -180 0 bybox 300 300 km withdist withcoord",
    "geosearch g fromlonlat 0 85.05112878 byradius 500 km withdist withcoord",
    "geosearch g fromlonlat 0 -85.05112878 bybox 5000 800 km desc",
    "georadius g 0 0 20000 km count 5",
    "georadius g 0 0 20000 km desc count 7 withdist",
    "georadius g 100 40 20000 km",
    "georadius g 100 40 0.1 m",
};

static void vectors(void)
{
    /* produced with redis-server 7.0.15: GEOADD g <lon> <lat> m; ZSCORE g m; GEOHASH g m; GEOPOS g m */
    uint64_t s;
    CHECK(fd_geo_encode(13.361389, 38.115556, &s) == 0 && s == 3479099956230698ULL);
    CHECK(fd_geo_encode(15.087269, 37.502669, &s) == 0 && s == 3479447370796909ULL);
    CHECK(fd_geo_encode(200, 100, &s) == -1);
    CHECK(fd_geo_encode(0, 85.06, &s) == -1);
    char h[11];
    fd_geo_hash_string(3479099956230698.0, h);
    CHECK(memcmp(h, "sqc8b49rny0", 11) == 0);
    resp_out o;
    resp_out_init(&o, 2);
    fd_geo_reply_pos(&o, 1, 3479099956230698.0);
    CHECK_MEM(o.data, o.len, "*2\r\n$20\r\n13.36138933897018433\r\n$20\r\n38.11555639549629859\r\n");
    o.len = 0;
    fd_geo_reply_dist(&o, 1, 3479099956230698.0, 3479447370796909.0, 1000);
    CHECK_MEM(o.data, o.len, "$8\r\n166.2742\r\n");
    o.len = 0;
    o.proto = 3;
    fd_geo_reply_pos(&o, 0, 0);
    CHECK_MEM(o.data, o.len, "_\r\n");
    resp_out_free(&o);
}

static void geoadd_errors(void)
{
    static const char *cases[] = {
        "geoadd g 200 100 x", "geoadd g nx xx 1 2 a", "geoadd g gt 1 2 a", "geoadd g abc 2 a",
        "geoadd g 1 2 a 3", "geoadd g 1 2 a 3 95 b", "geoadd g 1 2 a -181 0 b", "geoadd g ch nx 1 x a",
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        words w;
        split(&w, cases[i]);
        int flags, first, n, replied = 0;
        resp_out o;
        resp_out_init(&o, 2);
        int s = fd_geo_parse_add(w.a, w.argc, &flags, &first, &n, &o, &replied);
        if (s != FD_OK) resp_add_error(&o, fd_strerror(s));
        else CHECK(replied);
        char *rep;
        size_t rl;
        rl_cmdline(&srv, cases[i], &rep, &rl);
        int same = rl == o.len && memcmp(rep, o.data, rl) == 0;
        CHECK(same);
        if (!same) fprintf(stderr, "GEOADD %s\n  redis: %s  ours: %.*s\n", cases[i], rep, (int)o.len, o.data);
        free(rep);
        resp_out_free(&o);
    }
}

static void point_commands(void)
{
    /* GEOPOS, GEOHASH, GEODIST of every member (and of a missing one) */
    for (size_t i = 0; i <= pts.n; i += (i < pts.n ? 1 : 1)) {
        const char *m = i < pts.n ? pts.e[i].m : "nope";
        double sc = i < pts.n ? pts.e[i].score : 0;
        char line[128], *rep;
        size_t rl;
        resp_out o;
        resp_out_init(&o, proto);
        resp_add_array(&o, 1);
        fd_geo_reply_pos(&o, i < pts.n, sc);
        snprintf(line, sizeof line, "geopos g %s", m);
        rl_cmdline(&srv, line, &rep, &rl);
        CHECK(rl == o.len && memcmp(rep, o.data, rl) == 0);
        free(rep);
        o.len = 0;
        resp_add_array(&o, 1);
        fd_geo_reply_hash(&o, i < pts.n, sc);
        snprintf(line, sizeof line, "geohash g %s", m);
        rl_cmdline(&srv, line, &rep, &rl);
        CHECK(rl == o.len && memcmp(rep, o.data, rl) == 0);
        free(rep);
        o.len = 0;
        size_t j = (i * 7919) % pts.n;
        int u = (int)(i % 5);
        snprintf(line, sizeof line, "geodist g %s %s %s", m, pts.e[j].m, units[u]);
        fd_geo_reply_dist(&o, i < pts.n, sc, pts.e[j].score, unit_m[u]);
        rl_cmdline(&srv, line, &rep, &rl);
        int same = rl == o.len && memcmp(rep, o.data, rl) == 0;
        CHECK(same);
        if (!same) fprintf(stderr, "%s\n  redis: %s  ours: %.*s\n", line, rep, (int)o.len, o.data);
        free(rep);
        resp_out_free(&o);
        if (i == pts.n) break;
    }
}

int main(void)
{
    srand48(getenv("FD_SEED") ? atol(getenv("FD_SEED")) : 20240515);   /* FD_SEED: try another point set */
    vectors();
    if (rl_start(&srv) != 0) {
        printf("no %s: the differential part is skipped\n", RL_BIN);
        return TEST_DONE();
    }
    have_srv = 1;
    build_points();
    geoadd_errors();
    point_commands();
    for (size_t i = 0; i < sizeof error_cases / sizeof *error_cases; i++) compare(error_cases[i]);
    char line[512];
    for (int i = 0; i < 1500; i++) {
        random_query(line, sizeof line);
        compare(line);
    }
    char *rep;
    size_t rl;
    rl_cmdline(&srv, "hello 3", &rep, &rl);
    free(rep);
    proto = 3;
    point_commands();
    for (size_t i = 0; i < sizeof error_cases / sizeof *error_cases; i++) compare(error_cases[i]);
    for (int i = 0; i < 400; i++) {
        random_query(line, sizeof line);
        compare(line);
    }
    rl_stop(&srv);
    printf("%d search replies with 2 or more results\n", multi);
    CHECK(multi > 500);
    return TEST_DONE();
}
