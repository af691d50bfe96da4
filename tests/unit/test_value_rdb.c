/* test_value_rdb.c — storage/value/rdb against a real redis-server 7.0.
 *
 * How: a redis-server on a free loopback port (redis_live.h) builds each
 * value with the obvious commands (SET, RPUSH, SADD, HSET, ZADD); its DUMP
 * must equal fd_rdb_dump's bytes for the same elements wherever 7.0's
 * encoding is deterministic (strings incl. int and LZF forms, quicklists of
 * listpacks across several nodes, intsets of each width, listpack hashes and
 * zsets, skiplist zsets); every DUMP of redis-server must load with
 * fd_rdb_load into the same elements; every payload of ours must RESTORE
 * into redis-server with the same content (also the hashtable encodings);
 * hand-built old encodings (ziplist, zipmap, linked list, old zset) must be
 * read alike by both. The constant vectors run even without a server: a
 * stream payload of redis-server 7.0.15 (groups, consumers, PEL) read by
 * fd_rdb_stream_load and written again byte for byte, then mutated byte by
 * byte and truncated (0 or -1, never a crash: the ASan build runs it). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "test.h"
#include "redis_live.h"
#include "storage/value/rdb.h"
#include "storage/status.h"

static rl_server srv;

/* ---------------------------------------------------------------- helpers */

typedef struct { char *p[20000]; size_t n[20000]; char *v[20000]; size_t vn[20000]; double sc[20000]; size_t cnt; } elems;
static elems E, L;   /* E: the value built; L: what fd_rdb_load gave back */

static void e_reset(elems *e)
{
    for (size_t i = 0; i < e->cnt; i++) { free(e->p[i]); free(e->v[i]); }
    e->cnt = 0;
}

static void e_add(elems *e, const char *p, size_t n, const char *v, size_t vn, double sc)
{
    size_t i = e->cnt++;
    e->p[i] = malloc(n + 1); memcpy(e->p[i], p, n); e->n[i] = n;
    e->v[i] = v ? malloc(vn + 1) : NULL; if (v) memcpy(e->v[i], v, vn); e->vn[i] = vn;
    e->sc[i] = sc;
}

static int collect(void *ctx, int type, const fd_rdb_item *it)
{
    e_add(ctx, it->p, it->n, it->v, it->vn, it->score);
    return 0;
}

static char *cmd(int argc, const char **argv, const size_t *lens, size_t *rl)
{
    char *rep;
    if (rl_cmd(&srv, argc, argv, lens, &rep, rl) != 0) { fprintf(stderr, "redis-server went away\n"); exit(1); }
    return rep;
}

static void simple(const char *line)
{
    char *rep; size_t rl;
    rl_cmdline(&srv, line, &rep, &rl);
    free(rep);
}

/* send a command for the current elements in batches: PREFIX key elems... */
static void build(const char *verb, int type)
{
    const char *argv[2 + 2 * 1000 + 2]; size_t lens[2 + 2 * 1000 + 2]; char scb[1000][40];
    for (size_t i = 0; i < E.cnt;) {
        int argc = 0;
        argv[argc] = verb; lens[argc++] = strlen(verb);
        argv[argc] = "k"; lens[argc++] = 1;
        for (int j = 0; j < 1000 && i < E.cnt; j++, i++) {
            if (type == FD_RDB_ZSET) {
                snprintf(scb[j], 40, "%.17g", E.sc[i]);
                argv[argc] = scb[j]; lens[argc++] = strlen(scb[j]);
            }
            argv[argc] = E.p[i]; lens[argc++] = E.n[i];
            if (type == FD_RDB_HASH) { argv[argc] = E.v[i]; lens[argc++] = E.vn[i]; }
        }
        size_t rl; free(cmd(argc, argv, lens, &rl));
    }
}

static fd_rdb_item items[20000];
static void to_items(const elems *e)
{
    for (size_t i = 0; i < e->cnt; i++) {
        items[i].p = e->p[i]; items[i].n = e->n[i]; items[i].v = e->v[i]; items[i].vn = e->vn[i];
        items[i].score = e->sc[i];
    }
}

/* the bulk payload of a DUMP reply */
static int dump_of(const char *key, unsigned char **out, size_t *n)
{
    const char *argv[2] = { "dump", key };
    size_t rl;
    char *rep = cmd(2, argv, NULL, &rl);
    int ok = rep[0] == '$' && rep[1] != '-';
    if (ok) {
        size_t h = strcspn(rep, "\n") + 1;
        *n = (size_t)atoll(rep + 1);
        *out = malloc(*n);
        memcpy(*out, rep + h, *n);
    }
    free(rep);
    return ok ? 0 : -1;
}

static int same_multiset(const elems *a, const elems *b, int sorted_check)
{
    if (a->cnt != b->cnt) return 0;
    /* O(n^2) is fine for the sizes here, except big lists: those are ordered */
    if (sorted_check) {
        for (size_t i = 0; i < a->cnt; i++)
            if (a->n[i] != b->n[i] || memcmp(a->p[i], b->p[i], a->n[i])) return 0;
        return 1;
    }
    for (size_t i = 0; i < a->cnt; i++) {
        size_t j;
        for (j = 0; j < b->cnt; j++)
            if (a->n[i] == b->n[j] && memcmp(a->p[i], b->p[j], a->n[i]) == 0 &&
                (!a->v[i] || (a->vn[i] == b->vn[j] && memcmp(a->v[i], b->v[j], a->vn[i]) == 0)) &&
                (a->sc[i] == b->sc[j] || (isnan(a->sc[i]) && isnan(b->sc[j]))))
                break;
        if (j == b->cnt) return 0;
    }
    return 1;
}

/* the whole round: build in redis, DUMP, compare, load theirs, restore ours */
static void round_trip(const char *what, int type, const char *verb, int expect_identical)
{
    simple("del k");
    build(verb, type);
    unsigned char *theirs; size_t tn;
    CHECK(dump_of("k", &theirs, &tn) == 0);
    to_items(&E);
    fd_rdb_buf ours = { 0 };
    CHECK(fd_rdb_dump(type, items, E.cnt, &ours) == FD_OK);
    if (expect_identical) {
        int same = tn == ours.len && memcmp(theirs, ours.p, tn) == 0;
        CHECK(same);
        if (!same) {
            fprintf(stderr, "DUMP differs for %s: redis %zu bytes, ours %zu; first diff at", what, tn, ours.len);
            for (size_t i = 0; i < tn && i < ours.len; i++) if (theirs[i] != ours.p[i]) { fprintf(stderr, " %zu (%02x vs %02x)", i, theirs[i], ours.p[i]); break; }
            fprintf(stderr, "\n");
        }
    }
    /* their payload loads into the same elements */
    CHECK(fd_rdb_verify(theirs, tn) == 0);
    int lt = -1;
    e_reset(&L);
    int lr = fd_rdb_load(theirs, tn, &lt, collect, &L);
    CHECK(lr == 0 && lt == type);
    int ok = same_multiset(&E, &L, type == FD_RDB_LIST || type == FD_RDB_STRING);
    CHECK(ok);
    if (!ok || lr) fprintf(stderr, "load of redis's DUMP of %s: r=%d type=%d, %zu elements vs %zu\n", what, lr, lt, L.cnt, E.cnt);
    /* our payload restores into redis-server, and its DUMP loads back the same */
    const char *argv[5] = { "restore", "k2", "0", (const char *)ours.p, "replace" };
    size_t lens[5] = { 7, 2, 1, ours.len, 7 }, rl;
    char *rep = cmd(5, argv, lens, &rl);
    CHECK(strcmp(rep, "+OK\r\n") == 0);
    if (strcmp(rep, "+OK\r\n")) fprintf(stderr, "RESTORE of our %s: %s", what, rep);
    free(rep);
    unsigned char *again; size_t an;
    if (dump_of("k2", &again, &an) == 0) {
        e_reset(&L);
        CHECK(fd_rdb_load(again, an, &lt, collect, &L) == 0);
        CHECK(same_multiset(&E, &L, type == FD_RDB_LIST || type == FD_RDB_STRING));
        free(again);
    }
    free(theirs);
    fd_rdb_buf_free(&ours);
}

static void rnd_bytes(char *b, size_t n, int alphabet)
{
    for (size_t i = 0; i < n; i++) b[i] = (char)(alphabet ? 'a' + lrand48() % alphabet : lrand48() % 256);
}

/* ---------------------------------------------------------------- cases */

static void strings(void)
{
    static const char *vals[] = { "", "a", "0", "-0", "7", "-1", "127", "128", "-128", "-129", "32767", "32768",
                                  "-32768", "2147483647", "2147483648", "-2147483648", "-2147483649", "007",
                                  "+5", " 5", "12345678901", "123456789012", "9223372036854775807",
                                  "18446744073709551616", "abcdefghijklmnopqrstu", "aaaaaaaaaaaaaaaaaaaaa",
                                  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" };
    for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
        e_reset(&E);
        e_add(&E, vals[i], strlen(vals[i]), NULL, 0, 0);
        round_trip(vals[i], FD_RDB_STRING, "set", 1);
    }
    static char buf[100000];
    size_t sizes[] = { 21, 22, 30, 64, 100, 1000, 5000, 20000, 99999 };
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int alpha = 0; alpha <= 26; alpha += 13) {   /* random bytes, 13 letters, 26 letters */
            rnd_bytes(buf, sizes[s], alpha);
            if (alpha == 13 && sizes[s] > 100) memcpy(buf + sizes[s] / 2, buf, sizes[s] / 3);   /* long repeats */
            e_reset(&E);
            e_add(&E, buf, sizes[s], NULL, 0, 0);
            round_trip("string", FD_RDB_STRING, "set", 1);
        }
}

static void lists(void)
{
    char b[20000], name[64];
    int counts[] = { 1, 5, 200, 3000, 12000 };
    for (int c = 0; c < 5; c++)
        for (int kind = 0; kind < 3; kind++) {
            e_reset(&E);
            for (int i = 0; i < counts[c]; i++) {
                size_t n;
                if (kind == 0) n = (size_t)snprintf(b, sizeof b, "%ld", lrand48() % 2000000 - 1000000);
                else if (kind == 1) { n = (size_t)(lrand48() % 80); rnd_bytes(b, n, 5); }
                else {
                    static const long lens[] = { 0, 1, 63, 64, 127, 128, 300, 4095, 4096, 9000, 16384 };
                    n = (size_t)lens[lrand48() % 11];
                    rnd_bytes(b, n, 20);
                }
                e_add(&E, b, n, NULL, 0, 0);
            }
            if (kind == 2 && counts[c] > 200) continue;   /* keep the payload modest */
            snprintf(name, sizeof name, "list %d kind %d", counts[c], kind);
            round_trip(name, FD_RDB_LIST, "rpush", 1);
        }
}

static void sets(void)
{
    char b[64], name[64];
    long long ranges[] = { 100, 30000, 2000000000LL, 9000000000000000000LL };
    int counts[] = { 1, 10, 512, 513 };
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++) {
            e_reset(&E);
            for (int i = 0; i < counts[c]; i++) {
                /* uniform in [-range, range], computed in double and clamped so that
                   neither the arithmetic nor the conversion overflows long long */
                double f = (lrand48() * 2147483648.0 + lrand48()) / 4611686018427387904.0; /* [0, 1) */
                double d = (2.0 * f - 1.0) * (double)ranges[r];
                if (d > (double)ranges[r]) d = (double)ranges[r];
                if (d < -(double)ranges[r]) d = -(double)ranges[r];
                long long v = (long long)d;
                size_t n = (size_t)snprintf(b, sizeof b, "%lld", v + i * 0);
                int dup = 0;
                for (size_t j = 0; j < E.cnt; j++) if (E.n[j] == n && !memcmp(E.p[j], b, n)) dup = 1;
                if (!dup) e_add(&E, b, n, NULL, 0, 0);
            }
            snprintf(name, sizeof name, "intset range %lld n %d", ranges[r], counts[c]);
            round_trip(name, FD_RDB_SET, "sadd", counts[c] <= 512);
        }
    e_reset(&E);
    for (int i = 0; i < 40; i++) { size_t n = (size_t)snprintf(b, sizeof b, "m%d", i); e_add(&E, b, n, NULL, 0, 0); }
    round_trip("string set", FD_RDB_SET, "sadd", 0);
}

static void hashes(void)
{
    char f[128], v[128], name[64];
    int counts[] = { 1, 20, 128, 129 };
    size_t vlens[] = { 5, 64, 65 };
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 3; l++) {
            e_reset(&E);
            for (int i = 0; i < counts[c]; i++) {
                size_t fn = (size_t)snprintf(f, sizeof f, "field:%d", i);
                size_t vn = i % 3 == 0 ? (size_t)snprintf(v, sizeof v, "%d", i * 37 - 500) : vlens[l];
                if (i % 3) rnd_bytes(v, vn, 26);
                e_add(&E, f, fn, v, vn, 0);
            }
            snprintf(name, sizeof name, "hash n %d vlen %zu", counts[c], vlens[l]);
            round_trip(name, FD_RDB_HASH, "hset", counts[c] <= 128 && vlens[l] <= 64);
        }
}

static int cmp_z(const void *a, const void *b)
{
    const size_t x = *(const size_t *)a, y = *(const size_t *)b;
    if (E.sc[x] != E.sc[y]) return E.sc[x] < E.sc[y] ? -1 : 1;
    size_t l = E.n[x] < E.n[y] ? E.n[x] : E.n[y];
    int c = memcmp(E.p[x], E.p[y], l);
    return c ? c : (E.n[x] < E.n[y] ? -1 : E.n[x] > E.n[y]);
}

static void zsets(void)
{
    char m[128], name[64];
    int counts[] = { 1, 30, 128, 129, 2000 };
    size_t mlens[] = { 4, 64, 65 };
    for (int c = 0; c < 5; c++)
        for (int l = 0; l < 3; l++) {
            e_reset(&E);
            for (int i = 0; i < counts[c]; i++) {
                size_t n = mlens[l];
                rnd_bytes(m, n, 26);
                n = (size_t)snprintf(m + n - 4 > m ? m + n - 4 : m, 5, "%04d", i) + n - 4;
                double sc;
                int k = (int)(lrand48() % 6);
                if (k == 0) sc = (double)(lrand48() % 100);
                else if (k == 1) sc = (lrand48() % 100000) / 7.0;
                else if (k == 2) sc = -(double)(lrand48() % 5000000000LL);
                else if (k == 3) sc = i % 2 ? INFINITY : -INFINITY;
                else if (k == 4) sc = 3.0e15 + lrand48() % 1000;
                else sc = 1e-300 * (lrand48() % 10);
                e_add(&E, m, n, NULL, 0, sc);
            }
            /* items in ZRANGE order */
            size_t idx[2000];
            for (size_t i = 0; i < E.cnt; i++) idx[i] = i;
            qsort(idx, E.cnt, sizeof *idx, cmp_z);
            elems *T = calloc(1, sizeof *T);
            for (size_t i = 0; i < E.cnt; i++) e_add(T, E.p[idx[i]], E.n[idx[i]], NULL, 0, E.sc[idx[i]]);
            e_reset(&E);
            for (size_t i = 0; i < T->cnt; i++) e_add(&E, T->p[i], T->n[i], NULL, 0, T->sc[i]);
            e_reset(T);
            free(T);
            snprintf(name, sizeof name, "zset n %d mlen %zu", counts[c], mlens[l]);
            round_trip(name, FD_RDB_ZSET, "zadd", 1);
        }
}

/* ---- old encodings: built by hand, read by both */

static void payload(fd_rdb_buf *b, const unsigned char *body, size_t n)
{
    b->len = 0;
    unsigned char f[10];
    uint64_t crc;
    free(b->p);
    b->p = malloc(n + 10);
    memcpy(b->p, body, n);
    f[0] = 10; f[1] = 0;
    memcpy(b->p + n, f, 2);
    crc = fd_crc64(0, b->p, n + 2);
    for (int i = 0; i < 8; i++) b->p[n + 2 + i] = (unsigned char)(crc >> (8 * i));
    b->len = b->cap = n + 10;
}

static void old_case(const char *what, const unsigned char *body, size_t n, const char *check, const char *expect)
{
    fd_rdb_buf b = { 0 };
    payload(&b, body, n);
    int t;
    e_reset(&L);
    int ours = fd_rdb_load(b.p, b.len, &t, collect, &L);
    const char *argv[5] = { "restore", "old", "0", (const char *)b.p, "replace" };
    size_t lens[5] = { 7, 3, 1, b.len, 7 }, rl;
    char *rep = cmd(5, argv, lens, &rl);
    int theirs_ok = strcmp(rep, "+OK\r\n") == 0;
    CHECK((ours == 0) == theirs_ok);
    if ((ours == 0) != theirs_ok) fprintf(stderr, "%s: ours %d, redis %s", what, ours, rep);
    free(rep);
    if (theirs_ok && check) {
        rep = NULL;
        rl_cmdline(&srv, check, &rep, &rl);
        CHECK(strcmp(rep, expect) == 0);
        if (strcmp(rep, expect)) fprintf(stderr, "%s: %s gave %s", what, check, rep);
        free(rep);
    }
    fd_rdb_buf_free(&b);
}

static void old_encodings(void)
{
    /* ziplist list: [ "ab", 5, -300 ] */
    static const unsigned char zl_list[] = { 10, 20, 20,0,0,0, 16,0,0,0, 3,0,
        0, 0x02, 'a', 'b', 4, 0xF6, 2, 0xC0, 0xD4, 0xFE, 0xFF };
    old_case("ziplist list", zl_list, sizeof zl_list, "lrange old 0 -1", "*3\r\n$2\r\nab\r\n$1\r\n5\r\n$4\r\n-300\r\n");
    /* ziplist hash f1=v1, f2=7 */
    static const unsigned char zl_hash[] = { 13, 23, 23,0,0,0, 19,0,0,0, 4,0,
        0, 0x02, 'f', '1', 4, 0x02, 'v', '1', 4, 0x02, 'f', '2', 4, 0xF8, 0xFF };
    old_case("ziplist hash", zl_hash, sizeof zl_hash, "hget old f2", "$1\r\n7\r\n");
    /* ziplist zset a=1.5 b=2 */
    static const unsigned char zl_zset[] = { 12, 26, 26,0,0,0, 22,0,0,0, 4,0,
        0, 0x01, 'a', 3, 0x03, '1', '.', '5', 5, 0x01, 'b', 3, 0xF3, 0xFF };
    old_case("ziplist zset", zl_zset, sizeof zl_zset, "zscore old a", "$3\r\n1.5\r\n");
    /* zipmap hash: k=vv */
    static const unsigned char zipmap[] = { 9, 9, 1, 1, 'k', 2, 0, 'v', 'v', 0xFF };
    old_case("zipmap", zipmap, sizeof zipmap, "hget old k", "$2\r\nvv\r\n");
    /* linked list and old zset (string scores) */
    static const unsigned char ll[] = { 1, 2, 1, 'x', 0xC0, 9 };
    old_case("linked list", ll, sizeof ll, "lrange old 0 -1", "*2\r\n$1\r\nx\r\n$1\r\n9\r\n");
    static const unsigned char oz[] = { 3, 2, 1, 'a', 3, '2', '.', '5', 1, 'b', 254 };
    old_case("old zset", oz, sizeof oz, "zscore old b", "$3\r\ninf\r\n");
    /* corrupt ones: both refuse */
    static const unsigned char bad1[] = { 10, 20, 20,0,0,0, 16,0,0,0, 3,0, 0, 0x05, 'a', 'b', 0xFF };
    old_case("truncated ziplist", bad1, sizeof bad1, NULL, NULL);
    static const unsigned char bad2[] = { 2, 0 };
    old_case("empty set", bad2, sizeof bad2, NULL, NULL);
    static const unsigned char bad3[] = { 2, 2, 1, 'a', 1, 'a' };
    old_case("duplicate member", bad3, sizeof bad3, NULL, NULL);
    static const unsigned char bad4[] = { 15, 0 };
    old_case("pre-7.0 stream", bad4, sizeof bad4, NULL, NULL);
    static const unsigned char bad5[] = { 0, 0xC3, 3, 10, 1, 'a', 'b' };
    old_case("bad lzf", bad5, sizeof bad5, NULL, NULL);
}

static void errors(void)
{
    /* the RESTORE errors, by text */
    char *rep; size_t rl;
    fd_rdb_buf b = { 0 };
    e_reset(&E);
    e_add(&E, "hello", 5, NULL, 0, 0);
    to_items(&E);
    fd_rdb_dump(FD_RDB_STRING, items, 1, &b);
    b.p[b.len - 1] ^= 1;   /* checksum */
    CHECK(fd_rdb_verify(b.p, b.len) == -1);
    const char *argv[4] = { "restore", "kk", "0", (const char *)b.p };
    size_t lens[4] = { 7, 2, 1, b.len };
    rep = cmd(4, argv, lens, &rl);
    CHECK(strcmp(rep, "-ERR DUMP payload version or checksum are wrong\r\n") == 0);
    free(rep);
    b.p[b.len - 1] ^= 1;
    b.p[b.len - 10] = 11;   /* version 11 */
    CHECK(fd_rdb_verify(b.p, b.len) == -1);
    fd_rdb_buf_free(&b);
}

/* ---------------------------------------------------------------- streams */

/* redis-server 7.0.15: XADD s 1-1 a 1 b 2; XADD s 1-2 a 3 b 4; XADD s 2-0 c x;
 * XGROUP CREATE s g 0; XREADGROUP GROUP g alice COUNT 2 STREAMS s >; DUMP s */
static const unsigned char STREAM_DUMP[] =
    "\x13\x01\x10\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x3e\x3e\x00\x00\x00"
    "\x19\x00\x03\x01\x00\x01\x02\x01\x81\x61\x02\x81\x62\x02\x00\x01\x02\x01\x00\x01\x00\x01\x01\x01"
    "\x02\x01\x05\x01\x02\x01\x00\x01\x01\x01\x03\x01\x04\x01\x05\x01\x00\x01\x01\x01\xdf\xff\x02\x01"
    "\x01\x81\x63\x02\x81\x78\x02\x06\x01\xff\x03\x02\x00\x01\x01\x00\x00\x03\x01\x01\x67\x01\x02\x02"
    "\x02\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x58\x00\x07\x43\xa2\x01\x00"
    "\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02\x58\x00\x07\x43\xa2\x01"
    "\x00\x00\x01\x01\x05\x61\x6c\x69\x63\x65\x58\x00\x07\x43\xa2\x01\x00\x00\x02\x00\x00\x00\x00\x00"
    "\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00"
    "\x00\x00\x02\x0a\x00\x75\xdb\x79\x23\x4c\x9b\xa4\xd6";

/* what a sink saw, and enough of it to write the payload again */
typedef struct {
    int entries, nodes, groups, consumers, nacks;
    fd_rdb_buf out;
    fd_rdb_sentry e[4];
    fd_rdb_item fv[4][2];
    char fvbuf[4][2][2][8];
} sseen;

static int s_entry(void *ctx, fd_rdb_sid id, const fd_rdb_item *fv, size_t nf)
{
    sseen *x = ctx;
    if (x->entries < 4 && nf <= 2) {
        for (size_t i = 0; i < nf; i++) {
            if (fv[i].n > 8 || fv[i].vn > 8) return 0;
            memcpy(x->fvbuf[x->entries][i][0], fv[i].p, fv[i].n);
            memcpy(x->fvbuf[x->entries][i][1], fv[i].v, fv[i].vn);
            x->fv[x->entries][i] = (fd_rdb_item){ x->fvbuf[x->entries][i][0], fv[i].n, x->fvbuf[x->entries][i][1], fv[i].vn, 0 };
        }
        x->e[x->entries] = (fd_rdb_sentry){ id, x->fv[x->entries], nf };
    }
    x->entries++;
    return 0;
}

static int s_node(void *ctx, fd_rdb_sid master, const fd_rdb_item *mf, size_t nmf, uint64_t live, uint64_t deleted,
                  size_t lp_bytes, fd_rdb_sid last)
{
    sseen *x = ctx;
    (void)last; (void)lp_bytes; (void)deleted;
    x->nodes++;
    if (x->nodes == 1 && live <= 4 && x->entries == (int)live) {
        fd_rdb_stream_begin(&x->out, 1);
        fd_rdb_stream_node(&x->out, master, mf, nmf, x->e, live);
    }
    return 0;
}

static int s_info(void *ctx, const fd_rdb_stream_info *m)
{
    sseen *x = ctx;
    return fd_rdb_stream_info_put(&x->out, m) == FD_OK ? 0 : FD_E_NOMEM;
}

static int s_group(void *ctx, const char *name, size_t nl, fd_rdb_sid last, int64_t er, uint64_t npel, uint64_t ncons)
{
    sseen *x = ctx;
    x->groups++;
    /* the PEL of this fixture: two nacks, written from the consumer's */
    (void)npel;
    fd_rdb_stream_group(&x->out, name, nl, last, er, 2);
    fd_rdb_sid a = { 1, 1 }, b = { 1, 2 };
    fd_rdb_stream_nack(&x->out, a, 0x01a243070058LL, 1);
    fd_rdb_stream_nack(&x->out, b, 0x01a243070058LL, 1);
    fd_rdb_stream_consumers(&x->out, ncons);
    return 0;
}

static int s_consumer(void *ctx, const char *name, size_t nl, int64_t seen, uint64_t npel)
{
    sseen *x = ctx;
    x->consumers++;
    fd_rdb_stream_consumer(&x->out, name, nl, seen, npel);
    return 0;
}

static int s_nack(void *ctx, fd_rdb_sid id, int64_t dtime, uint64_t count)
{
    sseen *x = ctx;
    x->nacks += dtime == 0x01a243070058LL && count == 1;
    fd_rdb_stream_cpel(&x->out, id);
    return 0;
}

static void streams_const(void)
{
    size_t n = sizeof STREAM_DUMP - 1;
    int type = -1;
    CHECK(fd_rdb_verify(STREAM_DUMP, n) == 0);
    CHECK(fd_rdb_load(STREAM_DUMP, n, &type, NULL, NULL) == 0 && type == FD_RDB_STREAM);
    sseen x;
    memset(&x, 0, sizeof x);
    fd_rdb_stream_sink sk = { &x, s_entry, s_node, s_info, s_group, s_consumer, s_nack };
    CHECK(fd_rdb_stream_load(STREAM_DUMP, n, &sk) == 0);
    CHECK(x.entries == 3 && x.nodes == 1 && x.groups == 1 && x.consumers == 1 && x.nacks == 2);
    /* written again from what was read: redis-server's bytes */
    CHECK(fd_rdb_footer(&x.out) == FD_OK);
    CHECK(x.out.len == n && memcmp(x.out.p, STREAM_DUMP, n) == 0);
    fd_rdb_buf_free(&x.out);

    /* every byte of the body changed (then the CRC made right) and every
     * truncation: 0 or -1, never a crash (the ASan build runs this) */
    unsigned char *m = malloc(n + 16);
    size_t body = n - 10;
    int ok = 1, bad = 0;
    for (size_t at = 0; at < body; at++)
        for (int d = 0; d < 3; d++) {
            memcpy(m, STREAM_DUMP, body);
            m[at] = d == 0 ? (unsigned char)(m[at] + 1) : d == 1 ? (unsigned char)(m[at] ^ 0x80) : 0xFF;
            m[body] = 10; m[body + 1] = 0;
            uint64_t crc = fd_crc64(0, m, body + 2);
            for (int i = 0; i < 8; i++) m[body + 2 + i] = (unsigned char)(crc >> (8 * i));
            memset(&x, 0, sizeof x);
            int r1 = fd_rdb_load(m, n, &type, NULL, NULL);
            int r2 = fd_rdb_stream_load(m, n, &sk);
            fd_rdb_buf_free(&x.out);
            if ((r1 != 0 && r1 != -1) || (r2 != 0 && r2 != -1) || (type == FD_RDB_STREAM && r1 != r2 && r1 == 0)) ok = 0;
            bad += r1 == -1;
        }
    for (size_t cut = 1; cut < body; cut++) {
        memcpy(m, STREAM_DUMP, cut);
        m[cut] = 10; m[cut + 1] = 0;
        uint64_t crc = fd_crc64(0, m, cut + 2);
        for (int i = 0; i < 8; i++) m[cut + 2 + i] = (unsigned char)(crc >> (8 * i));
        memset(&x, 0, sizeof x);
        if (fd_rdb_load(m, cut + 10, &type, NULL, NULL) != -1 || fd_rdb_stream_load(m, cut + 10, &sk) != -1) ok = 0;
        fd_rdb_buf_free(&x.out);
    }
    free(m);
    CHECK(ok);
    CHECK(bad > 100);      /* most mutations are refused */
}

int main(void)
{
    /* constant vectors */
    CHECK(fd_crc64(0, "123456789", 9) == 0xe9c6d914c4b8d9caULL);
    fd_rdb_buf b = { 0 };
    fd_rdb_item it = { "hello", 5, NULL, 0, 0 };
    CHECK(fd_rdb_dump(FD_RDB_STRING, &it, 1, &b) == FD_OK);
    /* redis-server 7.0.15: SET k hello; DUMP k */
    CHECK_MEM(b.p, b.len, "\x00\x05hello\x0a\x00" "\x63\x72\xdf\x76\x65\x34\x20\x0a");
    CHECK(fd_rdb_verify(b.p, b.len) == 0);
    fd_rdb_buf_free(&b);
    fd_rdb_item one = { "1", 1, NULL, 0, 0 };
    CHECK(fd_rdb_dump(FD_RDB_LIST, &one, 1, &b) == FD_OK);
    /* RPUSH k 1; DUMP k */
    CHECK_MEM(b.p, b.len, "\x12\x01\x02\x09\x09\x00\x00\x00\x01\x00\x01\x01\xff\x0a\x00" "\x10\x82\x8f\x92\x09\xb3\xf4\x46");
    fd_rdb_buf_free(&b);
    streams_const();

    if (rl_start(&srv) != 0) {
        printf("no %s: the differential part is skipped\n", RL_BIN);
        return TEST_DONE();
    }
    srand48(7);
    strings();
    lists();
    sets();
    hashes();
    zsets();
    old_encodings();
    errors();
    rl_stop(&srv);
    e_reset(&E);
    e_reset(&L);
    return TEST_DONE();
}
