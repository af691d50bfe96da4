/* mg_big.c — the MongoDB backend's collection access layer: where a hash,
 * list, set or sorted set lives (contracts in mg.h, "big collections";
 * docs/mongodb.md, "Big collections", has the layouts and the costs).
 *
 * Small (at most mongo-big-threshold members): the whole collection is the
 * `value` array of the key's document in db0, as it always was.
 *
 * Big (more members): the key's document holds only
 *     { _id: key, type, big: sv, bn: members, blh: head position (lists),
 *       bo: next insertion order (hashes, sets), expireAt? }
 * and every member is a document of the collection db0_big, whose string
 * _id starts with the 16 hex digits of the collection's random version sv
 * and a tag:
 *     hash    sv "h" hex(field)                        { o: order, v: BinData }
 *     set     sv "s" hex(member)                       { o: order }
 *     zset    sv "m" hex(member)                       { s: Double }
 *             sv "z" hex16(sortable score) hex(member) {}
 *     list    sv "l" hex16(position)                   { v: BinData }
 * Hex keeps byte order and prefixes, so the _id index alone serves point
 * reads (a field, a member, a list position) and ordered ranges (a list's
 * positions, a sorted set's (score, member) order): no secondary index.
 * RENAME moves the key document (the members follow sv); a new collection
 * under a deleted name gets a new sv and never sees the old members.
 *
 * The layer in one sentence: mg_lookup* expand a big collection into the
 * exact document the small layout would hold (mg_big_expand), so every
 * command's code and reply are the same on both layouts, and every save
 * goes through mg_coll_write, which writes whichever layout the new member
 * count calls for, as the difference from what was read. The hot commands
 * (mg_list.c, mg_hash.c, mg_zset.c) add point and range paths on the big
 * layout that do not read the whole collection (mg_big_* below).
 *
 * Conversion: a save that leaves more than the threshold converts a small
 * key in place (the members first, then the key document). A big key stays
 * big while it has members, as Redis never turns a skiplist back into a
 * listpack (no flapping around the threshold); it goes when it empties, is
 * deleted or overwritten. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mg.h"

#define BIG_PAGE 4096          /* members read per find */
#define BIG_BULK 2048          /* writes per bulk (libmongoc splits further) */

/* ================================================================ ids */

static const char hexd[] = "0123456789abcdef";

static void hex16(char *o, uint64_t v)
{
    for (int i = 15; i >= 0; i--) { o[i] = hexd[v & 15]; v >>= 4; }
}

static int unhex(const char *p, size_t n, char *out)
{
    for (size_t i = 0; i + 1 < n; i += 2) {
        int a = p[i], b = p[i + 1], x, y;
        x = a >= 'a' ? a - 'a' + 10 : a - '0';
        y = b >= 'a' ? b - 'a' + 10 : b - '0';
        if (x < 0 || x > 15 || y < 0 || y > 15) return -1;
        out[i / 2] = (char)(x << 4 | y);
    }
    return 0;
}

uint64_t mg_big_score_bits(double s)
{
    if (s == 0) s = 0.0;                      /* -0 sorts (and is stored) as 0 */
    uint64_t u;
    memcpy(&u, &s, sizeof u);
    return (u >> 63) ? ~u : u | (1ULL << 63);
}

static double bits_score(uint64_t u)
{
    u = (u >> 63) ? u & ~(1ULL << 63) : ~u;
    double s;
    memcpy(&s, &u, sizeof s);
    return s;
}

static uint64_t parse16(const char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 16; i++) v = v << 4 | (uint64_t)(p[i] >= 'a' ? p[i] - 'a' + 10 : p[i] - '0');
    return v;
}

static int bid_room(mg_bid *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    if (need <= (b->heap ? b->cap : sizeof b->buf)) return 0;
    size_t nc = need * 2;
    char *h = malloc(nc);
    if (!h) return -1;
    memcpy(h, mg_bid_ptr(b), b->len);
    free(b->heap);
    b->heap = h;
    b->cap = nc;
    return 0;
}

void mg_bid_init(mg_bid *b, int64_t sv, char tag)
{
    b->heap = NULL;
    b->cap = 0;
    hex16(b->buf, (uint64_t)sv);
    b->buf[16] = tag;
    b->buf[17] = 0;
    b->len = 17;
}

int mg_bid_hex(mg_bid *b, const char *p, size_t n)
{
    if (bid_room(b, 2 * n)) return -1;
    char *o = b->heap ? b->heap : b->buf;
    for (size_t i = 0; i < n; i++) {
        o[b->len++] = hexd[(unsigned char)p[i] >> 4];
        o[b->len++] = hexd[(unsigned char)p[i] & 15];
    }
    o[b->len] = 0;
    return 0;
}

int mg_bid_u64(mg_bid *b, uint64_t v)
{
    if (bid_room(b, 16)) return -1;
    char *o = b->heap ? b->heap : b->buf;
    hex16(o + b->len, v);
    b->len += 16;
    o[b->len] = 0;
    return 0;
}

const char *mg_bid_ptr(const mg_bid *b) { return b->heap ? b->heap : b->buf; }
void mg_bid_free(mg_bid *b) { free(b->heap); b->heap = NULL; b->cap = 0; }

uint64_t mg_big_pos(int64_t pos) { return (uint64_t)pos ^ (1ULL << 63); }

/* ================================================================ collection */

mongoc_collection_t *mg_big_coll(mg_ctx *c)
{
    if (!c->bcoll) {
        c->bcoll = mongoc_client_get_collection(c->client, c->b->dbname, MG_BIG_COLL);
        if (c->bcoll && c->b->wc) mongoc_collection_set_write_concern(c->bcoll, c->b->wc);
    }
    return c->bcoll;
}

long long mg_big_threshold(const mg_ctx *c)
{
    return c->b->ms.big_threshold > 0 ? c->b->ms.big_threshold : 1000;
}

static int64_t new_sv(const resp_arg *key)
{
    static _Atomic uint64_t ctr;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t r = mg_hash_key(key->ptr, key->len) ^ ((uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ULL) ^
                 ((uint64_t)ts.tv_sec << 20) ^ (atomic_fetch_add(&ctr, 1) * 0xd6e8feb86659fd93ULL) ^
                 (uint64_t)clock();
    r ^= r >> 31; r *= 0xbf58476d1ce4e5b9ULL; r ^= r >> 29;
    r &= 0x7fffffffffffffffULL;
    return r ? (int64_t)r : 1;
}

/* {_id: {$gte|$gt: lo, $lt: hi}} */
static void range_q(bson_t *q, const char *lo, size_t lol, int gt, const char *hi, size_t hil)
{
    bson_t x;
    bson_append_document_begin(q, "_id", -1, &x);
    bson_append_utf8(&x, gt ? "$gt" : "$gte", -1, lo, (int)lol);
    bson_append_utf8(&x, "$lt", -1, hi, (int)hil);
    bson_append_document_end(q, &x);
}

int mg_big_scan(mg_ctx *c, const char *lo, size_t lol, const char *hi, size_t hil, int rev,
                long long skip, long long limit, mg_big_each each, void *u)
{
    mongoc_collection_t *bc = mg_big_coll(c);
    if (!bc) return FD_E_NOMEM;
    char *a = malloc(lol + 1), *z = malloc(hil + 1);
    if (!a || !z) { free(a); free(z); return FD_E_NOMEM; }
    memcpy(a, lo, lol); a[lol] = 0;
    memcpy(z, hi, hil); z[hil] = 0;
    size_t al = lol, zl = hil;
    int excl_a = 0, st = FD_OK;
    long long left = limit;           /* < 0: all */
    for (;;) {
        long long page = BIG_PAGE;
        if (left >= 0 && left < page) page = left;
        if (page == 0) break;
        bson_t q = BSON_INITIALIZER, x, opts = BSON_INITIALIZER, sort;
        bson_append_document_begin(&q, "_id", -1, &x);
        bson_append_utf8(&x, excl_a ? "$gt" : "$gte", -1, a, (int)al);
        bson_append_utf8(&x, "$lt", -1, z, (int)zl);
        bson_append_document_end(&q, &x);
        bson_append_document_begin(&opts, "sort", -1, &sort);
        bson_append_int32(&sort, "_id", -1, rev ? -1 : 1);
        bson_append_document_end(&opts, &sort);
        if (skip > 0) bson_append_int64(&opts, "skip", -1, skip);
        bson_append_int64(&opts, "limit", -1, page);
        mongoc_cursor_t *cur = mongoc_collection_find_with_opts(bc, &q, &opts, NULL);
        const bson_t *doc;
        long long got = 0;
        char *last = NULL;
        size_t lastl = 0;
        while (st == FD_OK && mongoc_cursor_next(cur, &doc)) {
            bson_iter_t it;
            if (!bson_iter_init_find(&it, doc, "_id") || !BSON_ITER_HOLDS_UTF8(&it)) continue;
            uint32_t il;
            const char *id = bson_iter_utf8(&it, &il);
            got++;
            st = each(u, doc, id, il);
            if (st == FD_OK) {
                char *nl = realloc(last, il + 1);
                if (!nl) { st = FD_E_NOMEM; break; }
                last = nl;
                memcpy(last, id, il);
                last[il] = 0;
                lastl = il;
            }
        }
        if (st == FD_OK && mongoc_cursor_error(cur, &c->err)) st = mg_fail(c);
        mongoc_cursor_destroy(cur);
        bson_destroy(&q);
        bson_destroy(&opts);
        skip = 0;
        if (st != FD_OK || got < page || !last) { free(last); break; }
        if (left > 0) left -= got;
        /* the next page starts after the last _id seen */
        if (rev) { free(z); z = last; zl = lastl; }
        else { free(a); a = last; al = lastl; excl_a = 1; }
    }
    free(a);
    free(z);
    return st == MG_E_STOP ? FD_OK : st;
}

int mg_big_drop(mg_ctx *c, int64_t sv)
{
    mongoc_collection_t *bc = mg_big_coll(c);
    if (!bc) return FD_E_NOMEM;
    char lo[17], hi[18];
    hex16(lo, (uint64_t)sv); lo[16] = 0;
    memcpy(hi, lo, 16); hi[16] = '~'; hi[17] = 0;
    bson_t q = BSON_INITIALIZER;
    range_q(&q, lo, 16, 0, hi, 17);
    bool ok = mongoc_collection_delete_many(bc, &q, NULL, NULL, &c->err);
    bson_destroy(&q);
    return ok ? FD_OK : mg_fail(c);
}

/* ================================================================ expand */

typedef struct { char *k, *v; size_t kl, vl; int64_t o; } big_item;

typedef struct {
    int type;
    int named;            /* sorted sets: member documents (sv "m" hex), not the order */
    bson_t *arr;          /* the value array being built */
    uint32_t n;
    big_item *it;         /* hashes, sets: collected, then sorted by o */
    size_t ni, cap;
} expand_st;

static void arr_key(uint32_t i, const char **ks, char *buf, size_t bl)
{
    bson_uint32_to_string(i, ks, buf, bl);
}

static int expand_each(void *u, const bson_t *doc, const char *id, size_t idl)
{
    expand_st *e = u;
    bson_iter_t it;
    char ib[16];
    const char *ks;
    if (e->type == MG_T_LIST) {
        if (!bson_iter_init_find(&it, doc, "v") || !BSON_ITER_HOLDS_BINARY(&it)) return FD_OK;
        bson_subtype_t st; uint32_t n; const uint8_t *p;
        bson_iter_binary(&it, &st, &n, &p);
        arr_key(e->n++, &ks, ib, sizeof ib);
        bson_append_binary(e->arr, ks, -1, BSON_SUBTYPE_BINARY, p, n);
        return FD_OK;
    }
    if (e->type == MG_T_ZSET) {
        size_t at = e->named ? 17 : 33;
        if (idl < at) return FD_OK;
        double s;
        if (!e->named) s = bits_score(parse16(id + 17));
        else if (bson_iter_init_find(&it, doc, "s") && BSON_ITER_HOLDS_NUMBER(&it)) s = bson_iter_as_double(&it);
        else return FD_OK;
        size_t ml = (idl - at) / 2;
        char small[256], *m = ml <= sizeof small ? small : malloc(ml ? ml : 1);
        if (!m) return FD_E_NOMEM;
        if (unhex(id + at, ml * 2, m) != 0) { if (m != small) free(m); return FD_OK; }
        bson_t el;
        arr_key(e->n++, &ks, ib, sizeof ib);
        bson_append_document_begin(e->arr, ks, -1, &el);
        bson_append_binary(&el, "m", -1, BSON_SUBTYPE_BINARY, (const uint8_t *)m, (uint32_t)ml);
        bson_append_double(&el, "s", -1, s);
        bson_append_document_end(e->arr, &el);
        if (m != small) free(m);
        return FD_OK;
    }
    /* hashes and sets: collected with their insertion order */
    big_item *na = mg_reserve(e->it, &e->cap, e->ni + 1, sizeof *na);
    if (!na) return FD_E_NOMEM;
    e->it = na;
    big_item *x = &e->it[e->ni];
    memset(x, 0, sizeof *x);
    if (idl < 17) return FD_OK;
    x->kl = (idl - 17) / 2;
    if (!(x->k = malloc(x->kl + 1))) return FD_E_NOMEM;
    if (unhex(id + 17, x->kl * 2, x->k) != 0) { free(x->k); return FD_OK; }
    if (bson_iter_init_find(&it, doc, "o") && BSON_ITER_HOLDS_NUMBER(&it)) x->o = bson_iter_as_int64(&it);
    if (e->type == MG_T_HASH && bson_iter_init_find(&it, doc, "v") && BSON_ITER_HOLDS_BINARY(&it)) {
        bson_subtype_t st; uint32_t n; const uint8_t *p;
        bson_iter_binary(&it, &st, &n, &p);
        if (!(x->v = malloc(n ? n : 1))) { free(x->k); return FD_E_NOMEM; }
        memcpy(x->v, p, n);
        x->vl = n;
    }
    e->ni++;
    return FD_OK;
}

static int item_cmp(const void *a, const void *b)
{
    const big_item *x = a, *y = b;
    return x->o < y->o ? -1 : x->o > y->o;
}

static int expand_range(mg_ctx *c, mg_meta *m, long long from, long long count);

int mg_big_expand(mg_ctx *c, mg_meta *m)
{
    return expand_range(c, m, 0, -1);
}

int mg_big_list_slice(mg_ctx *c, mg_meta *m, long long from, long long count)
{
    if (from < 0) from = 0;
    if (from > m->bn) from = m->bn;
    if (count < 0 || count > m->bn - from) count = m->bn - from;
    return expand_range(c, m, from, count);
}

/* the member documents of ids (sv tag hex(name)), in one find */
static int find_ids(mg_ctx *c, char **ids, size_t *lens, size_t n, expand_st *e)
{
    mongoc_collection_t *bc = mg_big_coll(c);
    if (!bc) return FD_E_NOMEM;
    bson_t q = BSON_INITIALIZER, in, arr;
    bson_append_document_begin(&q, "_id", -1, &in);
    bson_append_array_begin(&in, "$in", -1, &arr);
    for (size_t i = 0; i < n; i++) {
        char ib[16];
        const char *ks;
        arr_key((uint32_t)i, &ks, ib, sizeof ib);
        bson_append_utf8(&arr, ks, -1, ids[i], (int)lens[i]);
    }
    bson_append_array_end(&in, &arr);
    bson_append_document_end(&q, &in);
    mongoc_cursor_t *cur = mongoc_collection_find_with_opts(bc, &q, NULL, NULL);
    const bson_t *doc;
    int st = FD_OK;
    while (st == FD_OK && mongoc_cursor_next(cur, &doc)) {
        bson_iter_t it;
        if (!bson_iter_init_find(&it, doc, "_id") || !BSON_ITER_HOLDS_UTF8(&it)) continue;
        uint32_t il;
        const char *id = bson_iter_utf8(&it, &il);
        st = expand_each(e, doc, id, il);
    }
    if (st == FD_OK && mongoc_cursor_error(cur, &c->err)) st = mg_fail(c);
    mongoc_cursor_destroy(cur);
    bson_destroy(&q);
    return st;
}

static int expand_finish(mg_meta *m, bson_t *d, bson_t *arr, expand_st *e, int s, int whole, int expanded);

int mg_big_expand_named(mg_ctx *c, mg_meta *m, int first, int step)
{
    if (!m->big || !m->doc || m->type == MG_T_LIST) return mg_big_expand(c, m);
    bson_t *d = bson_new(), arr;
    bson_append_utf8(d, "type", -1, mg_type_names[m->type], -1);
    bson_append_array_begin(d, "value", -1, &arr);
    expand_st e = { .type = m->type, .named = 1, .arr = &arr };
    char tag = m->type == MG_T_HASH ? 'h' : m->type == MG_T_SET ? 's' : 'm';
    size_t n = 0, cap = 0;
    char **ids = NULL;
    size_t *lens = NULL;
    int s = FD_OK;
    for (int j = first; j < c->argc && s == FD_OK; j += step) {
        mg_bid b;
        mg_bid_init(&b, m->big, tag);
        size_t c1 = cap, c2 = cap;
        char **ni = mg_reserve(ids, &c1, n + 1, sizeof *ni);
        if (ni) ids = ni;
        size_t *nl = ni ? mg_reserve(lens, &c2, n + 1, sizeof *nl) : NULL;
        if (nl) lens = nl;
        if (!ni || !nl || mg_bid_hex(&b, c->argv[j].ptr, c->argv[j].len)) { mg_bid_free(&b); s = FD_E_NOMEM; break; }
        cap = c1;
        if (!(ids[n] = malloc(b.len + 1))) { mg_bid_free(&b); s = FD_E_NOMEM; break; }
        memcpy(ids[n], mg_bid_ptr(&b), b.len + 1);
        lens[n++] = b.len;
        mg_bid_free(&b);
    }
    if (s == FD_OK && n) s = find_ids(c, ids, lens, n, &e);
    for (size_t i = 0; i < n; i++) free(ids[i]);
    free(ids);
    free(lens);
    return expand_finish(m, d, &arr, &e, s, 0, 2);
}

/* a list's elements [from, from + count) (count < 0: all; other types: all) */
static int expand_range(mg_ctx *c, mg_meta *m, long long from, long long count)
{
    if (!m->big || !m->doc) return FD_OK;
    int whole = count < 0;
    if (whole) { from = 0; count = m->bn; }
    bson_t *d = bson_new(), arr;
    bson_append_utf8(d, "type", -1, mg_type_names[m->type], -1);
    bson_append_array_begin(d, "value", -1, &arr);
    expand_st e = { .type = m->type, .arr = &arr };
    mg_bid lo, hi;
    char tag = m->type == MG_T_LIST ? 'l' : m->type == MG_T_HASH ? 'h' : m->type == MG_T_SET ? 's' : 'z';
    mg_bid_init(&lo, m->big, tag);
    mg_bid_init(&hi, m->big, (char)(tag + 1));
    if (m->type == MG_T_LIST) {
        hi.buf[16] = 'l';
        mg_bid_u64(&lo, mg_big_pos(m->blh + from));
        mg_bid_u64(&hi, mg_big_pos(m->blh + from + count));
    }
    int s = m->live ? mg_big_scan(c, mg_bid_ptr(&lo), lo.len, mg_bid_ptr(&hi), hi.len, 0, 0, -1, expand_each, &e) : FD_OK;
    mg_bid_free(&lo);
    mg_bid_free(&hi);
    return expand_finish(m, d, &arr, &e, s, whole, whole);
}

/* hashes and sets in insertion order, the document in place of m->doc */
static int expand_finish(mg_meta *m, bson_t *d, bson_t *arrp, expand_st *ep, int s, int whole, int expanded)
{
    expand_st *e = ep;
    if (s == FD_OK && e->ni) {
        qsort(e->it, e->ni, sizeof *e->it, item_cmp);
        for (size_t i = 0; i < e->ni; i++) {
            char ib[16];
            const char *ks;
            arr_key(e->n++, &ks, ib, sizeof ib);
            if (m->type == MG_T_SET) {
                bson_append_binary(arrp, ks, -1, BSON_SUBTYPE_BINARY, (const uint8_t *)e->it[i].k, (uint32_t)e->it[i].kl);
            } else {
                bson_t el;
                bson_append_document_begin(arrp, ks, -1, &el);
                bson_append_binary(&el, "f", -1, BSON_SUBTYPE_BINARY, (const uint8_t *)e->it[i].k, (uint32_t)e->it[i].kl);
                bson_append_binary(&el, "v", -1, BSON_SUBTYPE_BINARY, (const uint8_t *)(e->it[i].v ? e->it[i].v : ""),
                                   (uint32_t)e->it[i].vl);
                bson_append_document_end(arrp, &el);
            }
        }
    }
    for (size_t i = 0; i < e->ni; i++) { free(e->it[i].k); free(e->it[i].v); }
    free(e->it);
    bson_append_array_end(d, arrp);
    if (m->type == MG_T_LIST) bson_append_int64(d, "n", -1, whole ? (int64_t)e->n : m->bn);
    if (m->expire) bson_append_date_time(d, "expireAt", -1, m->expire);
    if (s != FD_OK) { bson_destroy(d); return s; }
    bson_destroy(m->doc);
    m->doc = d;
    m->expanded = expanded;
    return FD_OK;
}

/* ================================================================ elements of a value array */

typedef struct { const char *k, *v; size_t kl, vl; double s; } big_el;
typedef struct { big_el *a; size_t n, cap; mg_ix ix; } big_els;

static void els_keyat(const void *coll, size_t i, const char **p, size_t *l)
{
    const big_el *e = &((const big_els *)coll)->a[i];
    *p = e->k; *l = e->kl;
}

static void els_free(big_els *E) { free(E->a); mg_ix_free(&E->ix); memset(E, 0, sizeof *E); }

/* the elements of doc's value array (pointing into doc) */
static int els_parse(const bson_t *doc, int type, big_els *E)
{
    memset(E, 0, sizeof *E);
    bson_iter_t it, arr, f;
    if (!doc || !bson_iter_init_find(&it, doc, "value") || !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &arr))
        return FD_OK;
    while (bson_iter_next(&arr)) {
        big_el x = { "", "", 0, 0, 0 };
        bson_subtype_t st; uint32_t n; const uint8_t *p;
        if (type == MG_T_LIST || type == MG_T_SET) {
            if (!BSON_ITER_HOLDS_BINARY(&arr)) continue;
            bson_iter_binary(&arr, &st, &n, &p);
            x.k = (const char *)p; x.kl = n;
        } else {
            if (!BSON_ITER_HOLDS_DOCUMENT(&arr) || !bson_iter_recurse(&arr, &f)) continue;
            int have = 0;
            while (bson_iter_next(&f)) {
                const char *k = bson_iter_key(&f);
                if (BSON_ITER_HOLDS_BINARY(&f) && (!strcmp(k, "f") || !strcmp(k, "m"))) {
                    bson_iter_binary(&f, &st, &n, &p); x.k = (const char *)p; x.kl = n; have = 1;
                } else if (BSON_ITER_HOLDS_BINARY(&f) && !strcmp(k, "v")) {
                    bson_iter_binary(&f, &st, &n, &p); x.v = (const char *)p; x.vl = n;
                } else if (BSON_ITER_HOLDS_NUMBER(&f) && !strcmp(k, "s")) {
                    x.s = bson_iter_as_double(&f);
                }
            }
            if (!have) continue;
        }
        big_el *na = mg_reserve(E->a, &E->cap, E->n + 1, sizeof *na);
        if (!na) { els_free(E); return FD_E_NOMEM; }
        E->a = na;
        E->a[E->n++] = x;
    }
    return FD_OK;
}

/* ================================================================ writes */

typedef struct {
    mg_ctx *c;
    mongoc_bulk_operation_t *bulk;
    size_t ops;
    int st;
} big_w;

static void w_begin(big_w *w, mg_ctx *c)
{
    memset(w, 0, sizeof *w);
    w->c = c;
}

static int w_flush(big_w *w)
{
    if (w->st != FD_OK) return w->st;
    if (!w->bulk) return FD_OK;
    bson_t reply;
    uint32_t ok = mongoc_bulk_operation_execute(w->bulk, &reply, &w->c->err);
    bson_destroy(&reply);
    mongoc_bulk_operation_destroy(w->bulk);
    w->bulk = NULL;
    w->ops = 0;
    if (!ok) w->st = mg_fail(w->c);
    return w->st;
}

static mongoc_bulk_operation_t *w_bulk(big_w *w)
{
    if (w->st != FD_OK) return NULL;
    if (w->bulk && w->ops >= BIG_BULK && w_flush(w) != FD_OK) return NULL;
    if (!w->bulk) {
        mongoc_collection_t *bc = mg_big_coll(w->c);
        if (!bc) { w->st = FD_E_NOMEM; return NULL; }
        w->bulk = mongoc_collection_create_bulk_operation_with_opts(bc, NULL);
    }
    w->ops++;
    return w->bulk;
}

static void id_q(bson_t *q, const mg_bid *id)
{
    bson_append_utf8(q, "_id", -1, mg_bid_ptr(id), (int)id->len);
}

/* replace (upsert) the member document id with doc */
static void w_put(big_w *w, const mg_bid *id, const bson_t *doc)
{
    mongoc_bulk_operation_t *b = w_bulk(w);
    if (!b) return;
    bson_t q = BSON_INITIALIZER, opts = BSON_INITIALIZER;
    id_q(&q, id);
    bson_append_bool(&opts, "upsert", -1, true);
    if (!mongoc_bulk_operation_replace_one_with_opts(b, &q, doc, &opts, &w->c->err)) w->st = mg_fail(w->c);
    bson_destroy(&q);
    bson_destroy(&opts);
}

/* $set one field of an existing member document */
static void w_set(big_w *w, const mg_bid *id, const bson_t *set)
{
    mongoc_bulk_operation_t *b = w_bulk(w);
    if (!b) return;
    bson_t q = BSON_INITIALIZER, u = BSON_INITIALIZER;
    id_q(&q, id);
    bson_append_document(&u, "$set", -1, set);
    if (!mongoc_bulk_operation_update_one_with_opts(b, &q, &u, NULL, &w->c->err)) w->st = mg_fail(w->c);
    bson_destroy(&q);
    bson_destroy(&u);
}

static void w_del(big_w *w, const mg_bid *id)
{
    mongoc_bulk_operation_t *b = w_bulk(w);
    if (!b) return;
    bson_t q = BSON_INITIALIZER;
    id_q(&q, id);
    if (!mongoc_bulk_operation_remove_one_with_opts(b, &q, NULL, &w->c->err)) w->st = mg_fail(w->c);
    bson_destroy(&q);
}

static void w_del_range(big_w *w, const mg_bid *lo, const mg_bid *hi)
{
    mongoc_bulk_operation_t *b = w_bulk(w);
    if (!b) return;
    bson_t q = BSON_INITIALIZER;
    range_q(&q, mg_bid_ptr(lo), lo->len, 0, mg_bid_ptr(hi), hi->len);
    if (!mongoc_bulk_operation_remove_many_with_opts(b, &q, NULL, &w->c->err)) w->st = mg_fail(w->c);
    bson_destroy(&q);
}

static void w_end(big_w *w)
{
    if (w->bulk) mongoc_bulk_operation_destroy(w->bulk);
    w->bulk = NULL;
}

/* a member's id: sv, tag, hex(bytes) */
static int mid(mg_bid *id, int64_t sv, char tag, const char *p, size_t n)
{
    mg_bid_free(id);
    mg_bid_init(id, sv, tag);
    return mg_bid_hex(id, p, n) ? FD_E_NOMEM : FD_OK;
}

static int zid(mg_bid *id, int64_t sv, double s, const char *p, size_t n)
{
    mg_bid_free(id);
    mg_bid_init(id, sv, 'z');
    if (mg_bid_u64(id, mg_big_score_bits(s)) || mg_bid_hex(id, p, n)) return FD_E_NOMEM;
    return FD_OK;
}

static int lid(mg_bid *id, int64_t sv, int64_t pos)
{
    mg_bid_free(id);
    mg_bid_init(id, sv, 'l');
    return mg_bid_u64(id, mg_big_pos(pos)) ? FD_E_NOMEM : FD_OK;
}

/* one new member's documents */
static void put_member(big_w *w, int type, int64_t sv, const big_el *e, int64_t order_or_pos)
{
    mg_bid id = { 0 };
    bson_t d = BSON_INITIALIZER;
    int s;
    switch (type) {
    case MG_T_LIST:
        s = lid(&id, sv, order_or_pos);
        bson_append_binary(&d, "v", -1, BSON_SUBTYPE_BINARY, (const uint8_t *)e->k, (uint32_t)e->kl);
        break;
    case MG_T_HASH:
        s = mid(&id, sv, 'h', e->k, e->kl);
        bson_append_int64(&d, "o", -1, order_or_pos);
        bson_append_binary(&d, "v", -1, BSON_SUBTYPE_BINARY, (const uint8_t *)e->v, (uint32_t)e->vl);
        break;
    case MG_T_SET:
        s = mid(&id, sv, 's', e->k, e->kl);
        bson_append_int64(&d, "o", -1, order_or_pos);
        break;
    default: {  /* zset: the member's score, then its place in the order */
        s = mid(&id, sv, 'm', e->k, e->kl);
        bson_append_double(&d, "s", -1, e->s == 0 ? 0.0 : e->s);
        if (s == FD_OK) w_put(w, &id, &d);
        bson_reinit(&d);
        if (s == FD_OK) s = zid(&id, sv, e->s, e->k, e->kl);
        break;
    }
    }
    if (s != FD_OK) w->st = s;
    else w_put(w, &id, &d);
    bson_destroy(&d);
    mg_bid_free(&id);
}

static void del_member(big_w *w, int type, int64_t sv, const big_el *e)
{
    mg_bid id = { 0 };
    char tag = type == MG_T_HASH ? 'h' : type == MG_T_SET ? 's' : 'm';
    int s = mid(&id, sv, tag, e->k, e->kl);
    if (s == FD_OK) w_del(w, &id);
    if (s == FD_OK && type == MG_T_ZSET && (s = zid(&id, sv, e->s, e->k, e->kl)) == FD_OK) w_del(w, &id);
    if (s != FD_OK) w->st = s;
    mg_bid_free(&id);
}

/* The key document of a big collection. */
static void key_doc(bson_t *d, int type, int64_t sv, int64_t n, int64_t lh, int64_t bo, int64_t expire)
{
    bson_append_utf8(d, "type", -1, mg_type_names[type], -1);
    bson_append_int64(d, "big", -1, sv);
    bson_append_int64(d, "bn", -1, n);
    if (type == MG_T_LIST) bson_append_int64(d, "blh", -1, lh);
    if (type == MG_T_HASH || type == MG_T_SET) bson_append_int64(d, "bo", -1, bo);
    if (expire) bson_append_date_time(d, "expireAt", -1, expire);
}

/* replaceOne upsert of the key document */
static int replace_key(mg_ctx *c, const resp_arg *key, const bson_t *doc)
{
    bson_t q = BSON_INITIALIZER, opts = BSON_INITIALIZER;
    mg_append_key(&q, "_id", key->ptr, key->len);
    bson_append_bool(&opts, "upsert", -1, true);
    bool ok = mongoc_collection_replace_one(c->coll, &q, doc, &opts, NULL, &c->err);
    bson_destroy(&q);
    bson_destroy(&opts);
    return ok ? FD_OK : mg_fail(c);
}

/* findAndModify replace (upsert) returning the old document's big: a
 * write whose old document is not known cleans up a big collection it
 * overwrites. *oldsv 0 when there was none. */
static int replace_key_fam(mg_ctx *c, const resp_arg *key, const bson_t *doc, int64_t *oldsv)
{
    bson_t q = BSON_INITIALIZER, fields = BSON_INITIALIZER, reply;
    mg_append_key(&q, "_id", key->ptr, key->len);
    bson_append_int32(&fields, "big", -1, 1);
    mongoc_find_and_modify_opts_t *fam = mongoc_find_and_modify_opts_new();
    mongoc_find_and_modify_opts_set_update(fam, doc);
    mongoc_find_and_modify_opts_set_fields(fam, &fields);
    mongoc_find_and_modify_opts_set_flags(fam, MONGOC_FIND_AND_MODIFY_UPSERT);
    bool ok = mongoc_collection_find_and_modify_with_opts(c->coll, &q, fam, &reply, &c->err);
    mongoc_find_and_modify_opts_destroy(fam);
    *oldsv = 0;
    bson_iter_t it, v;
    if (ok && bson_iter_init_find(&it, &reply, "value") && BSON_ITER_HOLDS_DOCUMENT(&it) &&
        bson_iter_recurse(&it, &v) && bson_iter_find(&v, "big") && BSON_ITER_HOLDS_INT64(&v))
        *oldsv = bson_iter_int64(&v);
    bson_destroy(&reply);
    bson_destroy(&fields);
    bson_destroy(&q);
    return ok ? FD_OK : mg_fail(c);
}

int mg_delete(mg_ctx *c, const resp_arg *key)
{
    bson_t q = BSON_INITIALIZER, fields = BSON_INITIALIZER, reply;
    mg_append_key(&q, "_id", key->ptr, key->len);
    bson_append_int32(&fields, "big", -1, 1);
    mongoc_find_and_modify_opts_t *fam = mongoc_find_and_modify_opts_new();
    mongoc_find_and_modify_opts_set_fields(fam, &fields);
    mongoc_find_and_modify_opts_set_flags(fam, MONGOC_FIND_AND_MODIFY_REMOVE);
    bool ok = mongoc_collection_find_and_modify_with_opts(c->coll, &q, fam, &reply, &c->err);
    mongoc_find_and_modify_opts_destroy(fam);
    int64_t sv = 0;
    bson_iter_t it, v;
    if (ok && bson_iter_init_find(&it, &reply, "value") && BSON_ITER_HOLDS_DOCUMENT(&it) &&
        bson_iter_recurse(&it, &v) && bson_iter_find(&v, "big") && BSON_ITER_HOLDS_INT64(&v))
        sv = bson_iter_int64(&v);
    bson_destroy(&reply);
    bson_destroy(&fields);
    bson_destroy(&q);
    if (!ok) return mg_fail(c);
    return sv ? mg_big_drop(c, sv) : FD_OK;    /* the key first: a crash leaves only unreachable members */
}

/* the type, member count and expiry of a document about to be written */
static int doc_shape(const bson_t *doc, int *type, int64_t *n, int64_t *expire)
{
    bson_iter_t it, arr;
    *type = MG_T_NONE; *n = -1; *expire = 0;
    if (bson_iter_init_find(&it, doc, "type") && BSON_ITER_HOLDS_UTF8(&it)) *type = mg_type_of(bson_iter_utf8(&it, NULL));
    if (bson_iter_init_find(&it, doc, "expireAt") && BSON_ITER_HOLDS_DATE_TIME(&it)) *expire = bson_iter_date_time(&it);
    if (bson_iter_init_find(&it, doc, "value") && BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &arr)) {
        *n = 0;
        while (bson_iter_next(&arr)) (*n)++;
    }
    return *type == MG_T_LIST || *type == MG_T_HASH || *type == MG_T_SET || *type == MG_T_ZSET;
}

/* A collection written whole in the big layout under a new sv: the
 * members first, then the key document (a crash between them leaves only
 * members nothing points to). */
static int write_fresh_big(mg_ctx *c, const resp_arg *key, const bson_t *doc, int type, int64_t expire,
                           int known, int64_t *sv_out)
{
    big_els E;
    FD_TRY(els_parse(doc, type, &E));
    int64_t sv = new_sv(key);
    big_w w;
    w_begin(&w, c);
    for (size_t i = 0; i < E.n && w.st == FD_OK; i++) put_member(&w, type, sv, &E.a[i], (int64_t)i);
    int s = w_flush(&w);
    w_end(&w);
    if (s == FD_OK) {
        bson_t d = BSON_INITIALIZER;
        key_doc(&d, type, sv, (int64_t)E.n, 0, (int64_t)E.n, expire);
        int64_t old = 0;
        s = known ? replace_key(c, key, &d) : replace_key_fam(c, key, &d, &old);
        bson_destroy(&d);
        if (s == FD_OK && old && old != sv) s = mg_big_drop(c, old);
    }
    els_free(&E);
    *sv_out = sv;
    return s;
}

/* lists: the new elements N as the old O changed at its ends (the longest
 * common prefix and suffix stay where they are; the side that costs fewer
 * rewrites keeps its positions) */
static int update_list(mg_ctx *c, const resp_arg *key, const mg_meta *old, big_els *O, big_els *N, int64_t expire)
{
    size_t n = O->n, m = N->n, mn = n < m ? n : m, P = 0, S = 0;
    while (P < mn && O->a[P].kl == N->a[P].kl && !memcmp(O->a[P].k, N->a[P].k, O->a[P].kl)) P++;
    while (S < mn - P && O->a[n - 1 - S].kl == N->a[m - 1 - S].kl &&
           !memcmp(O->a[n - 1 - S].k, N->a[m - 1 - S].k, O->a[n - 1 - S].kl)) S++;
    int64_t h = old->blh, nh;
    size_t from, to;                 /* N[from, to) are written */
    if (n == m) { nh = h; from = P; to = m - S; }
    else if (m - P <= m - S) { nh = h; from = P; to = m; }            /* keep the prefix */
    else { nh = h + (int64_t)n - (int64_t)m; from = 0; to = m - S; }    /* keep the suffix */
    big_w w;
    w_begin(&w, c);
    for (size_t i = from; i < to && w.st == FD_OK; i++) put_member(&w, MG_T_LIST, old->big, &N->a[i], nh + (int64_t)i);
    int s = w_flush(&w);
    w_end(&w);
    if (s != FD_OK) return s;
    bson_t d = BSON_INITIALIZER;
    key_doc(&d, MG_T_LIST, old->big, (int64_t)m, nh, 0, expire);
    s = replace_key(c, key, &d);
    bson_destroy(&d);
    if (s != FD_OK) return s;
    /* positions the list no longer covers, after the key document moved */
    int64_t olo = h, ohi = h + (int64_t)n, nlo = nh, nhi = nh + (int64_t)m;
    mg_bid a = { 0 }, b = { 0 };
    w_begin(&w, c);
    if (olo < nlo && lid(&a, old->big, olo) == FD_OK && lid(&b, old->big, nlo < ohi ? nlo : ohi) == FD_OK)
        w_del_range(&w, &a, &b);
    if (ohi > nhi && lid(&a, old->big, nhi > olo ? nhi : olo) == FD_OK && lid(&b, old->big, ohi) == FD_OK)
        w_del_range(&w, &a, &b);
    s = w_flush(&w);
    w_end(&w);
    mg_bid_free(&a);
    mg_bid_free(&b);
    return s;
}

/* hashes, sets, sorted sets: by member */
static int update_members(mg_ctx *c, const resp_arg *key, const mg_meta *old, int type, big_els *O, big_els *N,
                          int64_t expire)
{
    unsigned char *seen = calloc(O->n + 1, 1);
    if (!seen) return FD_E_NOMEM;
    int64_t bo = old->bo, count = old->bn;
    big_w w;
    w_begin(&w, c);
    mg_bid id = { 0 };
    for (size_t i = 0; i < N->n && w.st == FD_OK; i++) {
        const big_el *e = &N->a[i];
        long j = mg_ix_find(&O->ix, O, O->n, els_keyat, e->k, e->kl);
        if (j < 0) { put_member(&w, type, old->big, e, bo++); count++; continue; }
        seen[j] = 1;
        const big_el *o = &O->a[j];
        if (type == MG_T_HASH && (o->vl != e->vl || memcmp(o->v, e->v, e->vl))) {
            bson_t set = BSON_INITIALIZER;
            bson_append_binary(&set, "v", -1, BSON_SUBTYPE_BINARY, (const uint8_t *)e->v, (uint32_t)e->vl);
            if (mid(&id, old->big, 'h', e->k, e->kl) == FD_OK) w_set(&w, &id, &set);
            else w.st = FD_E_NOMEM;
            bson_destroy(&set);
        } else if (type == MG_T_ZSET && mg_big_score_bits(o->s) != mg_big_score_bits(e->s)) {
            if (zid(&id, old->big, o->s, o->k, o->kl) == FD_OK) w_del(&w, &id);
            else w.st = FD_E_NOMEM;
            put_member(&w, type, old->big, e, 0);
        }
    }
    for (size_t j = 0; j < O->n && w.st == FD_OK; j++)
        if (!seen[j]) { del_member(&w, type, old->big, &O->a[j]); count--; }
    free(seen);
    mg_bid_free(&id);
    int s = w_flush(&w);
    w_end(&w);
    if (s != FD_OK) return s;
    if (old->expanded != 2) count = (int64_t)N->n;     /* a whole image: exact */
    if (count <= 0) return mg_delete(c, key);           /* the last member went (members dropped too) */
    if (count == old->bn && bo == old->bo && expire == old->expire) return FD_OK;   /* the key document holds */
    bson_t d = BSON_INITIALIZER;
    key_doc(&d, type, old->big, count, 0, bo, expire);
    s = replace_key(c, key, &d);
    bson_destroy(&d);
    return s;
}

int mg_coll_write(mg_ctx *c, const resp_arg *key, const mg_meta *old, const bson_t *doc)
{
    int type;
    int64_t n, expire, sv;
    int coll = doc_shape(doc, &type, &n, &expire);
    int known = old && old->doc;                  /* the old document was read */
    if (known && old->found && old->big) {
        if (old->live && coll && old->type == type && (old->expanded == 2 || (old->expanded && n > 0))) {
            big_els O, N;
            FD_TRY(els_parse(old->doc, type, &O));
            int s = els_parse(doc, type, &N);
            if (s == FD_OK) s = type == MG_T_LIST ? update_list(c, key, old, &O, &N, expire)
                                                  : update_members(c, key, old, type, &O, &N, expire);
            els_free(&O);
            els_free(&N);
            return s;
        }
        int s = coll && n > mg_big_threshold(c) ? write_fresh_big(c, key, doc, type, expire, 1, &sv)
                                                : replace_key(c, key, doc);
        return s == FD_OK ? mg_big_drop(c, old->big) : s;
    }
    if (coll && n > mg_big_threshold(c)) return write_fresh_big(c, key, doc, type, expire, known, &sv);
    if (known) return replace_key(c, key, doc);
    int64_t oldsv;
    FD_TRY(replace_key_fam(c, key, doc, &oldsv));
    return oldsv ? mg_big_drop(c, oldsv) : FD_OK;
}

int mg_write_doc(mg_ctx *c, const resp_arg *key, const bson_t *doc)
{
    return mg_coll_write(c, key, NULL, doc);
}

int mg_coll_delete(mg_ctx *c, const resp_arg *key, const mg_meta *old)
{
    if (!old->found) return FD_OK;
    return mg_delete(c, key);
}

/* ================================================================ list fast paths */

int mg_big_list_push(mg_ctx *c, const resp_arg *key, mg_meta *m, int left, const resp_arg *el, int k,
                     long long *len)
{
    big_w w;
    w_begin(&w, c);
    int64_t nh = left ? m->blh - k : m->blh;
    for (int j = 0; j < k && w.st == FD_OK; j++) {
        /* LPUSH a b c: c first */
        const resp_arg *a = left ? &el[k - 1 - j] : &el[j];
        big_el e = { a->ptr, "", a->len, 0, 0 };
        put_member(&w, MG_T_LIST, m->big, &e, left ? nh + j : m->blh + m->bn + j);
    }
    int s = w_flush(&w);
    w_end(&w);
    if (s != FD_OK) return s;
    bson_t d = BSON_INITIALIZER;
    key_doc(&d, MG_T_LIST, m->big, m->bn + k, nh, 0, m->expire);
    s = replace_key(c, key, &d);
    bson_destroy(&d);
    *len = m->bn + k;
    return s;
}

static int first_each(void *u, const bson_t *doc, const char *id, size_t idl)
{
    (void)id; (void)idl;
    bson_t *out = u;
    bson_copy_to(doc, out);
    return MG_E_STOP;
}

int mg_big_list_pop(mg_ctx *c, const resp_arg *key, mg_meta *m, int left, resp_out *out)
{
    int64_t pos = left ? m->blh : m->blh + m->bn - 1;
    mg_bid lo = { 0 }, hi = { 0 };
    mg_bid_init(&lo, m->big, 'l');
    mg_bid_init(&hi, m->big, 'l');
    int s = mg_bid_u64(&lo, mg_big_pos(pos)) || mg_bid_u64(&hi, mg_big_pos(pos + 1)) ? FD_E_NOMEM : FD_OK;
    bson_t doc;
    int have = 0;
    memset(&doc, 0, sizeof doc);
    if (s == FD_OK) {
        s = mg_big_scan(c, mg_bid_ptr(&lo), lo.len, mg_bid_ptr(&hi), hi.len, 0, 0, 1, first_each, &doc);
        have = s == FD_OK && doc.len > 0;
    }
    if (s == FD_OK) {
        bson_iter_t it;
        const uint8_t *p = (const uint8_t *)"";
        uint32_t n = 0;
        bson_subtype_t st;
        if (have && bson_iter_init_find(&it, &doc, "v") && BSON_ITER_HOLDS_BINARY(&it)) bson_iter_binary(&it, &st, &n, &p);
        else s = FD_E_CORRUPT;
        size_t mark = out->len;
        if (s == FD_OK && resp_add_bulk(out, p, n)) s = FD_E_NOMEM;
        if (s == FD_OK) {
            if (m->bn <= 1) {
                s = mg_delete(c, key);
            } else {
                bson_t d = BSON_INITIALIZER;
                key_doc(&d, MG_T_LIST, m->big, m->bn - 1, left ? m->blh + 1 : m->blh, 0, m->expire);
                s = replace_key(c, key, &d);
                bson_destroy(&d);
                if (s == FD_OK) {     /* the key document first: a crash leaves an unreachable element */
                    big_w w;
                    w_begin(&w, c);
                    w_del(&w, &lo);
                    s = w_flush(&w);
                    w_end(&w);
                }
            }
        }
        if (s != FD_OK) out->len = mark;
    }
    if (have) bson_destroy(&doc);
    mg_bid_free(&lo);
    mg_bid_free(&hi);
    return s;
}

/* ================================================================ sorted-set ranges */

static int zbound(mg_bid *b, int64_t sv, double s, const char *tail)
{
    mg_bid_init(b, sv, 'z');
    if (mg_bid_u64(b, mg_big_score_bits(s))) return FD_E_NOMEM;
    if (*tail && bid_room(b, 1)) return FD_E_NOMEM;
    if (*tail) {
        char *o = b->heap ? b->heap : b->buf;
        o[b->len++] = *tail;       /* "~" sorts after every hex digit */
        o[b->len] = 0;
    }
    return FD_OK;
}

int mg_big_zset_window(mg_ctx *c, mg_meta *m, const fd_zrange *z)
{
    bson_t *d = bson_new(), arr;
    bson_append_utf8(d, "type", -1, "zset", -1);
    bson_append_array_begin(d, "value", -1, &arr);
    expand_st e = { .type = MG_T_ZSET, .arr = &arr };
    mg_bid lo, hi;
    long long skip = 0, limit = -1;
    int s = FD_OK, empty = 0;
    if (z->type == FD_ZR_RANK) {
        mg_bid_init(&lo, m->big, 'z');
        mg_bid_init(&hi, m->big, 'z' + 1);
        skip = z->start;
        limit = z->end - z->start + 1;
    } else {
        empty = fd_zrange_empty(z) || z->offset < 0 || z->limit == 0;
        s = zbound(&lo, m->big, z->min, z->minex ? "~" : "");
        if (s == FD_OK) s = zbound(&hi, m->big, z->max, z->maxex ? "" : "~");
        skip = z->offset;
        limit = z->limit;
    }
    if (s == FD_OK && !empty)
        s = mg_big_scan(c, mg_bid_ptr(&lo), lo.len, mg_bid_ptr(&hi), hi.len, z->rev, skip, limit, expand_each, &e);
    mg_bid_free(&lo);
    mg_bid_free(&hi);
    return expand_finish(m, d, &arr, &e, s, 0, 2);     /* exact members: a part a save can diff */
}

int mg_big_zrank(mg_ctx *c, const mg_meta *m, const char *p, size_t n, double score, long long *rank)
{
    mg_bid lo, hi = { 0 };      /* zid frees what hi holds first */
    mg_bid_init(&lo, m->big, 'z');
    int s = zid(&hi, m->big, score, p, n);
    mongoc_collection_t *bc = mg_big_coll(c);
    if (s == FD_OK && !bc) s = FD_E_NOMEM;
    if (s == FD_OK) {
        bson_t cmd = BSON_INITIALIZER, q = BSON_INITIALIZER, reply;
        range_q(&q, mg_bid_ptr(&lo), lo.len, 0, mg_bid_ptr(&hi), hi.len);
        bson_append_utf8(&cmd, "count", -1, MG_BIG_COLL, -1);
        bson_append_document(&cmd, "query", -1, &q);
        if (mongoc_collection_command_simple(bc, &cmd, NULL, &reply, &c->err)) {
            bson_iter_t it;
            if (bson_iter_init_find(&it, &reply, "n") && BSON_ITER_HOLDS_NUMBER(&it)) *rank = bson_iter_as_int64(&it);
            else s = FD_E_CORRUPT;
        } else {
            s = mg_fail(c);
        }
        bson_destroy(&reply);
        bson_destroy(&q);
        bson_destroy(&cmd);
    }
    mg_bid_free(&lo);
    mg_bid_free(&hi);
    return s;
}
