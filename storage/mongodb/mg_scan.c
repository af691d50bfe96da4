/* mg_scan.c — the MongoDB backend's random picks (HRANDFIELD, SPOP,
 * SRANDMEMBER) and scans (SCAN over the keys, HSCAN, SSCAN, ZSCAN). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mg.h"

#define MG_SCAN_AGE_US (60 * 1000000LL)   /* a remembered SCAN iteration expires */

/* ================================================================ random picks */

/* xorshift64*, one state per worker thread */
static uint64_t mg_rand(void)
{
    static _Thread_local uint64_t st;
    if (!st) st = ((uint64_t)fd_mono_us() * 0x9E3779B97F4A7C15ULL) ^ (uint64_t)(uintptr_t)&st ^ 1;
    st ^= st >> 12; st ^= st << 25; st ^= st >> 27;
    return st * 2685821657736338717ULL;
}

/* want distinct positions of n (want <= n) in random order, or (repeat)
 * want independent random positions. NULL: out of memory. */
static size_t *pick_positions(size_t n, size_t want, int repeat)
{
    size_t *p = malloc((repeat ? (want ? want : 1) : (n ? n : 1)) * sizeof *p);
    if (!p) return NULL;
    if (repeat) {
        for (size_t i = 0; i < want; i++) p[i] = (size_t)(mg_rand() % n);
        return p;
    }
    for (size_t i = 0; i < n; i++) p[i] = i;
    if (want < n)              /* a partial Fisher-Yates shuffle */
        for (size_t i = 0; i < want; i++) {
            size_t j = i + (size_t)(mg_rand() % (n - i));
            size_t t = p[i]; p[i] = p[j]; p[j] = t;
        }
    return p;
}

/* The out-of-range text of Redis's getRangeLongFromObjectOrReply for a
 * count of LLONG_MIN (HRANDFIELD, SRANDMEMBER, LPOS RANK). */
#define ERR_LONG_RANGE "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"

/* ================================================================ HSCAN, SSCAN, ZSCAN */

/* One element of a collection for *SCAN: field/member and value/score. */
typedef struct mg_scanent { uint64_t h; const char *f, *v; size_t fl, vl; double s; } mg_scanent;

static int scanent_cmp(const void *a, const void *b)
{
    const mg_scanent *x = a, *y = b;
    if (x->h != y->h) return x->h < y->h ? -1 : 1;
    return fd_lexcmp(x->f, x->fl, y->f, y->fl);
}

/* Collections up to this size are returned whole by one call, cursor 0 (as
 * Redis does for its small encodings, and the embedded backends). */
#define MG_SCAN_WHOLE 128

/* HSCAN / SSCAN / ZSCAN over the n elements e (in the collection's order).
 * A bigger collection is walked in the order of a 63-bit hash of each
 * element; the cursor is the hash to resume from, so an element present
 * for the whole iteration is returned exactly once, whatever else is added
 * or removed meanwhile (as SCAN over the keys). */
static int subscan_reply(mg_ctx *c, int type, mg_scanent *e, size_t n, uint64_t cursor,
                         long long count, const resp_arg *pat)
{
    size_t from = 0, to = n;
    uint64_t next = 0;
    if (n > MG_SCAN_WHOLE) {
        for (size_t i = 0; i < n; i++) e[i].h = (mg_hash_key(e[i].f, e[i].fl) >> 1) | 1;
        qsort(e, n, sizeof *e, scanent_cmp);
        while (from < n && e[from].h < cursor) from++;
        to = from;
        long long visited = 0;
        while (to < n && (visited < count || (to > from && e[to].h == e[to - 1].h))) { to++; visited++; }
        next = to < n ? e[to - 1].h + 1 : 0;
    }
    long long hits = 0;
    for (size_t i = from; i < to; i++)
        if (!pat || resp_glob_match(pat->ptr, pat->len, e[i].f, e[i].fl, 0)) hits++;
    char num[24];
    int nl = resp_u64_fmt(num, next);
    int r = resp_add_array(c->out, 2);
    if (!r) r = resp_add_bulk(c->out, num, (size_t)nl);
    if (!r) r = resp_add_array(c->out, type == MG_T_SET ? hits : 2 * hits);
    for (size_t i = from; i < to && !r; i++) {
        if (pat && !resp_glob_match(pat->ptr, pat->len, e[i].f, e[i].fl, 0)) continue;
        r = resp_add_bulk(c->out, e[i].f, e[i].fl);
        if (!r && type == MG_T_HASH) r = resp_add_bulk(c->out, e[i].v, e[i].vl);
        if (!r && type == MG_T_ZSET) {
            char buf[64];
            int bl = resp_format_d2string(buf, sizeof buf, e[i].s);   /* as ZSCAN shows a score */
            r = resp_add_bulk(c->out, buf, (size_t)bl);
        }
    }
    return r ? FD_E_NOMEM : FD_OK;
}

static int subscan_generic(mg_ctx *c, int type)
{
    uint64_t cursor;
    int replied;
    FD_TRY(fd_scan_cursor(&c->argv[2], &cursor, c->out, &replied));
    if (replied) return FD_OK;
    mg_meta m;
    mg_hash h = {0};
    mg_list L = {0};
    mg_zset Z = {0};
    int s;
    if (type == MG_T_HASH) s = mg_hash_load(c, &c->argv[1], &m, &h);
    else if (type == MG_T_SET) s = mg_array_load(c, &c->argv[1], &m, &L, MG_T_SET);
    else s = mg_zset_load(c, &c->argv[1], &m, &Z);
    FD_TRY(s);
    mg_scanent *e = NULL;
    size_t n = type == MG_T_HASH ? h.n : type == MG_T_SET ? L.n : Z.n;
    long long count;
    const resp_arg *pat;
    if (!m.live) {
        s = (resp_add_array(c->out, 2) || resp_add_bulk(c->out, "0", 1) || resp_add_array(c->out, 0))
            ? FD_E_NOMEM : FD_OK;
    } else if ((s = fd_parse_scan_opts(c->argv, c->argc, 3, &count, &pat, NULL)) == FD_OK) {
        e = calloc(n ? n : 1, sizeof *e);
        if (!e) s = FD_E_NOMEM;
        for (size_t i = 0; e && i < n; i++) {
            if (type == MG_T_HASH) { e[i].f = h.a[i].f; e[i].fl = h.a[i].fl; e[i].v = h.a[i].v; e[i].vl = h.a[i].vl; }
            else if (type == MG_T_SET) { e[i].f = L.p[i]; e[i].fl = L.l[i]; }
            else { e[i].f = Z.a[i].m; e[i].fl = Z.a[i].ml; e[i].s = Z.a[i].s; }
        }
        if (e) s = subscan_reply(c, type, e, n, cursor, count, pat);
    }
    free(e);
    mg_hash_free(&h);
    mg_list_free(&L);
    mg_zset_free(&Z);
    mg_meta_free(&m);
    return s;
}

int mg_cmd_hscan(mg_ctx *c) { return subscan_generic(c, MG_T_HASH); }
int mg_cmd_sscan(mg_ctx *c) { return subscan_generic(c, MG_T_SET); }
int mg_cmd_zscan(mg_ctx *c) { return subscan_generic(c, MG_T_ZSET); }

/* ================================================================ HRANDFIELD, SPOP, SRANDMEMBER */

int mg_cmd_hrandfield(mg_ctx *c)
{
    long long count;
    int withvalues, hascount, replied;
    FD_TRY(fd_parse_rand_count(c->argv, c->argc, "withvalues", &hascount, &count, &withvalues,
                               c->out, &replied));
    if (replied) return FD_OK;
    mg_meta m; mg_hash h;
    FD_TRY(mg_hash_load(c, &c->argv[1], &m, &h));
    if (!m.live) HASH_DONE((hascount ? resp_add_array(c->out, 0) : resp_add_null(c->out)) ? FD_E_NOMEM : FD_OK);
    if (hascount && count == 0) HASH_DONE(resp_add_array(c->out, 0) ? FD_E_NOMEM : FD_OK);
    int repeat = count < 0, nested = withvalues && c->out->proto == 3;
    size_t want = !hascount ? 1 : repeat ? (size_t)-count : (count < (long long)h.n ? (size_t)count : h.n);
    size_t *pos = pick_positions(h.n, want, repeat);
    if (!pos) HASH_DONE(FD_E_NOMEM);
    size_t mark = c->out->len;
    int r = 0;
    if (hascount) r = resp_add_array(c->out, (long long)(withvalues && !nested ? 2 * want : want));
    for (size_t i = 0; i < want && !r; i++) {
        const mg_field *f = &h.a[pos[i]];
        if (nested) r = resp_add_array(c->out, 2);
        if (!r) r = resp_add_bulk(c->out, f->f, f->fl);
        if (!r && withvalues) r = resp_add_bulk(c->out, f->v, f->vl);
    }
    free(pos);
    if (r) c->out->len = mark;
    HASH_DONE(r ? FD_E_NOMEM : FD_OK);
}

/* SPOP (pop 1) / SRANDMEMBER (pop 0) */
static int srandom_generic(mg_ctx *c, int pop)
{
    long long count = 1;
    int hascount = c->argc == 3;
    if (c->argc > 3) return FD_E_SYNTAX;
    if (hascount) {
        if (pop) {
            /* getPositiveLongFromObjectOrReply: one text for both errors */
            if (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &count) != 0 || count < 0) return FD_E_RANGE_POSITIVE;
        } else {
            if (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &count) != 0) return FD_E_NOTINT;
            if (count == LLONG_MIN) { FD_OUT(resp_add_error(c->out, ERR_LONG_RANGE)); return FD_OK; }
        }
    }
    mg_meta m; mg_list L;
    FD_TRY(mg_array_load(c, &c->argv[1], &m, &L, MG_T_SET));
    if (!m.live || (hascount && count == 0)) {
        int r = !hascount ? resp_add_null(c->out) : pop ? resp_add_set(c->out, 0) : resp_add_array(c->out, 0);
        LIST_DONE(r ? FD_E_NOMEM : FD_OK);
    }
    int repeat = !pop && count < 0;
    size_t want = repeat ? (size_t)-count : (count < (long long)L.n ? (size_t)count : L.n);
    size_t *pos = pick_positions(L.n, want, repeat);
    if (!pos) LIST_DONE(FD_E_NOMEM);
    size_t mark = c->out->len;
    int r = 0;
    if (hascount) r = pop ? resp_add_set(c->out, (long long)want) : resp_add_array(c->out, (long long)want);
    for (size_t i = 0; i < want && !r; i++) r = resp_add_bulk(c->out, L.p[pos[i]], L.l[pos[i]]);
    int s = r ? FD_E_NOMEM : FD_OK;
    if (s == FD_OK && pop) {
        unsigned char *gone = calloc(L.n, 1);
        if (!gone) s = FD_E_NOMEM;
        else {
            for (size_t i = 0; i < want; i++) gone[pos[i]] = 1;
            size_t w = 0;
            for (size_t i = 0; i < L.n; i++)
                if (!gone[i]) { L.p[w] = L.p[i]; L.l[w] = L.l[i]; w++; }
            L.n = w;
            mg_ix_invalidate(&L.ix);
            free(gone);
            s = mg_array_save(c, &c->argv[1], &m, &L, MG_T_SET);
        }
    }
    free(pos);
    if (s != FD_OK) c->out->len = mark;
    LIST_DONE(s);
}

int mg_cmd_spop(mg_ctx *c)
{
    size_t mark = c->out->len;
    int s = srandom_generic(c, 1);
    if (s == FD_OK && mg_reply_some(c, mark)) {
        MG_NOTIFY_ARG(c, SET, "spop", 1);
        mg_notify_del_if_gone(c, &c->argv[1]);
    }
    return s;
}
int mg_cmd_srandmember(mg_ctx *c) { return srandom_generic(c, 0); }

/* ================================================================ SCAN */

/* SCAN: keys in the order of a 64-bit hash; the cursor is the hash to resume
 * from, so a key present for the whole iteration is returned exactly once
 * whatever is added or deleted meanwhile. Each call reads every key id
 * (O(keys), as KEYS): fine for tests and small sets; see docs/mongodb.md. */
int mg_cmd_scan(mg_ctx *c)
{
    uint64_t cursor;
    int replied;
    FD_TRY(fd_scan_cursor(&c->argv[1], &cursor, c->out, &replied));
    if (replied) return FD_OK;
    long long count;
    const resp_arg *pat, *type;
    FD_TRY(fd_parse_scan_opts(c->argv, c->argc, 2, &count, &pat, &type));
    /* an iteration in progress keeps the key list it started with (SCAN
     * may return keys deleted meanwhile and miss keys added meanwhile, as
     * Redis's); a cursor we do not remember reads the list again */
    mg_keyent *v = NULL; size_t n = 0;
    mg_backend *b = c->b;
    if (cursor) {
        pthread_mutex_lock(&b->smu);
        for (int k = 0; k < MG_SCANS; k++)
            if (b->scans[k].v && b->scans[k].next == cursor) {
                v = b->scans[k].v; n = b->scans[k].n;
                b->scans[k].v = NULL;
                break;
            }
        pthread_mutex_unlock(&b->smu);
    }
    if (!v) FD_TRY(mg_all_keys(c, &v, &n, 1));
    size_t i = 0;
    while (i < n && v[i].h < cursor) i++;
    size_t from = i;
    long long visited = 0;
    while (i < n && (visited < count || (i > from && v[i].h == v[i - 1].h))) { i++; visited++; }
    uint64_t next = i < n ? v[i - 1].h + 1 : 0;
    if (i < n && i == from) next = 0;
    long long hits = 0;
    for (int pass = 0; pass < 2; pass++) {
        int r = 0;
        if (pass == 1) {
            char num[24];
            int nl = snprintf(num, sizeof num, "%llu", (unsigned long long)next);
            r = resp_add_array(c->out, 2);
            if (!r) r = resp_add_bulk(c->out, num, (size_t)nl);
            if (!r) r = resp_add_array(c->out, hits);
        }
        for (size_t k = from; k < i && !r; k++) {
            if (v[k].expire && v[k].expire <= c->now_ms) continue;
            if (type && !(type->len == strlen(mg_type_names[v[k].type]) &&
                          strncasecmp(type->ptr, mg_type_names[v[k].type], type->len) == 0)) continue;
            if (pat && !resp_glob_match(pat->ptr, pat->len, v[k].key, v[k].len, 0)) continue;
            if (pass == 0) hits++;
            else r = resp_add_bulk(c->out, v[k].key, v[k].len);
        }
        if (r) { mg_keys_free(v, n); return FD_E_NOMEM; }
    }
    if (next) {
        /* remember the list for the next call (the oldest slot goes) */
        pthread_mutex_lock(&b->smu);
        int slot = 0;
        int64_t now = fd_mono_us();
        for (int k = 0; k < MG_SCANS; k++) {
            if (b->scans[k].v && now - b->scans[k].born_us > MG_SCAN_AGE_US) {
                mg_keys_free(b->scans[k].v, b->scans[k].n);
                b->scans[k].v = NULL;
            }
            if (!b->scans[k].v) { slot = k; break; }
            if (b->scans[k].born_us < b->scans[slot].born_us) slot = k;
        }
        if (b->scans[slot].v) mg_keys_free(b->scans[slot].v, b->scans[slot].n);
        b->scans[slot].v = v;
        b->scans[slot].n = n;
        b->scans[slot].next = next;
        b->scans[slot].born_us = now;
        pthread_mutex_unlock(&b->smu);
    } else {
        mg_keys_free(v, n);
    }
    return FD_OK;
}

