/* zsetops.c — see zsetops.h. Redis 7.0's t_zset.c semantics, our code. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "zsetops.h"
#include "../status.h"
#include "../cmdargs.h"

/* ---------------------------------------------------------------- elements */

int fd_zent_cmp(const void *x, const void *y)
{
    const fd_zent *a = x, *b = y;
    if (a->s < b->s) return -1;
    if (a->s > b->s) return 1;
    return fd_lexcmp(a->m, a->ml, b->m, b->ml);
}

void fd_zent_sort(fd_zent *a, size_t n)
{
    if (n > 1) qsort(a, n, sizeof *a, fd_zent_cmp);
}

struct fd_zblock { struct fd_zblock *next; size_t used, cap; char data[]; };

int fd_zbuf_add(fd_zbuf *z, const char *m, size_t ml, double s)
{
    if (z->n == z->cap) {
        size_t nc = z->cap ? z->cap * 2 : 16;
        fd_zent *na = realloc(z->a, nc * sizeof *na);
        if (!na) return -1;
        z->a = na;
        z->cap = nc;
    }
    struct fd_zblock *b = z->blocks;
    if (!b || b->cap - b->used < ml) {
        size_t cap = ml > 65536 ? ml : 65536;
        b = malloc(sizeof *b + cap);
        if (!b) return -1;
        b->next = z->blocks;
        b->used = 0;
        b->cap = cap;
        z->blocks = b;
    }
    char *p = b->data + b->used;
    if (ml) memcpy(p, m, ml);
    b->used += ml;
    z->a[z->n++] = (fd_zent){ p, ml, s };
    return 0;
}

void fd_zbuf_free(fd_zbuf *z)
{
    free(z->a);
    for (struct fd_zblock *b = z->blocks, *nx; b; b = nx) { nx = b->next; free(b); }
    memset(z, 0, sizeof *z);
}

/* ---------------------------------------------------------------- a member -> index table */

typedef struct zhash { uint32_t *slot; size_t mask; } zhash;   /* slot: index + 1, 0 = empty */

static uint64_t hbytes(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)p[i]; h *= 1099511628211ULL; }
    h ^= h >> 29; h *= 0xbf58476d1ce4e5b9ULL; h ^= h >> 32;
    return h;
}

static int zh_init(zhash *h, size_t n)
{
    size_t sz = 16;
    while (sz < n * 2) sz <<= 1;
    h->slot = calloc(sz, sizeof *h->slot);
    h->mask = sz - 1;
    return h->slot ? 0 : -1;
}

/* the index of m among a (as inserted), or -1; insert (index ins) when ins >= 0 and absent */
static long zh_find(zhash *h, const fd_zent *a, const char *m, size_t ml, long ins)
{
    size_t i = hbytes(m, ml) & h->mask;
    for (;;) {
        uint32_t v = h->slot[i];
        if (!v) {
            if (ins >= 0) h->slot[i] = (uint32_t)ins + 1;
            return -1;
        }
        const fd_zent *e = &a[v - 1];
        if (e->ml == ml && memcmp(e->m, m, ml) == 0) return (long)v - 1;
        i = (i + 1) & h->mask;
    }
}

/* ---------------------------------------------------------------- ZUNION / ZINTER / ZDIFF */

int fd_zsetop_begin(const resp_arg *argv, int argc, int op, int store, int card, int nkidx,
                    fd_zsetop *o, resp_out *out, int *replied)
{
    memset(o, 0, sizeof *o);
    o->op = op;
    o->store = store;
    o->card = card;
    o->nkidx = nkidx;
    *replied = 0;
    long long nk;
    if (resp_str2ll(argv[nkidx].ptr, argv[nkidx].len, &nk) != 0) return FD_E_NOTINT;
    if (nk < 1) {
        char name[32];
        size_t l = argv[0].len < sizeof name - 1 ? argv[0].len : sizeof name - 1;
        for (size_t i = 0; i < l; i++) name[i] = (char)tolower((unsigned char)argv[0].ptr[i]);
        name[l] = 0;
        if (resp_add_errorf(out, "ERR at least 1 input key is needed for '%s' command", name)) return FD_E_NOMEM;
        *replied = 1;
        return FD_OK;
    }
    if (nk > argc - nkidx - 1) return FD_E_SYNTAX;
    o->numkeys = nk;
    o->weights = malloc((size_t)nk * sizeof *o->weights);
    if (!o->weights) return FD_E_NOMEM;
    for (long long i = 0; i < nk; i++) o->weights[i] = 1.0;
    return FD_OK;
}

int fd_zsetop_options(const resp_arg *argv, int argc, fd_zsetop *o, resp_out *out, int *replied)
{
    *replied = 0;
    long long j = o->nkidx + 1 + o->numkeys;
    while (j < argc) {
        long long remaining = argc - j;
        const resp_arg *a = &argv[j];
        if (o->op != FD_ZOP_DIFF && !o->card && remaining >= o->numkeys + 1 && resp_arg_is(a, "weights")) {
            j++;
            for (long long i = 0; i < o->numkeys; i++, j++) {
                if (fd_parse_score(&argv[j], &o->weights[i]) != 0) {
                    if (resp_add_error(out, "ERR weight value is not a float")) return FD_E_NOMEM;
                    *replied = 1;
                    return FD_OK;
                }
            }
        } else if (o->op != FD_ZOP_DIFF && !o->card && remaining >= 2 && resp_arg_is(a, "aggregate")) {
            const resp_arg *v = &argv[j + 1];
            if (resp_arg_is(v, "sum")) o->aggregate = FD_ZAGG_SUM;
            else if (resp_arg_is(v, "min")) o->aggregate = FD_ZAGG_MIN;
            else if (resp_arg_is(v, "max")) o->aggregate = FD_ZAGG_MAX;
            else return FD_E_SYNTAX;
            j += 2;
        } else if (!o->store && !o->card && resp_arg_is(a, "withscores")) {
            o->withscores = 1;
            j++;
        } else if (o->card && remaining >= 2 && resp_arg_is(a, "limit")) {
            long long l;
            if (resp_str2ll(argv[j + 1].ptr, argv[j + 1].len, &l) != 0 || l < 0) {
                if (resp_add_error(out, "ERR LIMIT can't be negative")) return FD_E_NOMEM;
                *replied = 1;
                return FD_OK;
            }
            o->limit = l;
            j += 2;
        } else return FD_E_SYNTAX;
    }
    return FD_OK;
}

void fd_zsetop_free(fd_zsetop *o)
{
    free(o->weights);
    o->weights = NULL;
}

int fd_zsetop_cmd(const fd_zsetop_io *io, void *ud, const resp_arg *argv, int argc, int op, int store,
                  int card, resp_out *out)
{
    fd_zsetop o;
    int replied, nkidx = store ? 2 : 1;
    int s = fd_zsetop_begin(argv, argc, op, store, card, nkidx, &o, out, &replied);
    if (s != FD_OK || replied) { fd_zsetop_free(&o); return s; }
    for (long long i = 0; i < o.numkeys && s == FD_OK; i++)     /* every key's type first, as Redis */
        s = io->check(ud, &argv[nkidx + 1 + i]);
    if (s == FD_OK) s = fd_zsetop_options(argv, argc, &o, out, &replied);
    if (s != FD_OK || replied) { fd_zsetop_free(&o); return s; }
    void **hold = calloc((size_t)o.numkeys, sizeof *hold);
    fd_zsrc *src = calloc((size_t)o.numkeys, sizeof *src);
    fd_zent *res = NULL;
    size_t nres = 0;
    if (!hold || !src) s = FD_E_NOMEM;
    for (long long i = 0; i < o.numkeys && s == FD_OK; i++)
        s = io->load(ud, &argv[nkidx + 1 + i], &hold[i], &src[i]);
    if (s == FD_OK && fd_zsetop_run(&o, src, &res, &nres)) s = FD_E_NOMEM;
    if (s == FD_OK) {
        size_t mark = out->len;
        if (card) s = resp_add_int(out, (long long)nres) ? FD_E_NOMEM : FD_OK;
        else if (store) {
            static const char *const ev[] = { [FD_ZOP_UNION] = "zunionstore", [FD_ZOP_INTER] = "zinterstore",
                                              [FD_ZOP_DIFF] = "zdiffstore" };
            s = io->store(ud, &argv[1], res, nres, ev[op]);
            if (s == FD_OK && resp_add_int(out, (long long)nres)) s = FD_E_NOMEM;
        } else if (fd_zreply_range(out, res, nres, o.withscores)) s = FD_E_NOMEM;
        if (s != FD_OK) out->len = mark;
    }
    free(res);
    for (long long i = 0; hold && i < o.numkeys; i++)
        if (hold[i]) io->release(ud, hold[i]);
    free(hold);
    free(src);
    fd_zsetop_free(&o);
    return s;
}

static void aggregate(double *target, double val, int agg)
{
    if (agg == FD_ZAGG_SUM) {
        *target = *target + val;
        if (isnan(*target)) *target = 0.0;     /* inf + -inf: Redis's convention */
    } else if (agg == FD_ZAGG_MIN) {
        *target = val < *target ? val : *target;
    } else {
        *target = val > *target ? val : *target;
    }
}

typedef struct zin { const fd_zent *a; size_t n; double w; size_t pos; zhash h; } zin;

int fd_zsetop_run(const fd_zsetop *o, const fd_zsrc *src, fd_zent **res, size_t *nres)
{
    size_t nk = (size_t)o->numkeys, total = 0;
    *res = NULL;
    *nres = 0;
    zin *in = calloc(nk, sizeof *in);
    if (!in) return -1;
    for (size_t i = 0; i < nk; i++) {
        in[i] = (zin){ src[i].a, src[i].n, o->weights ? o->weights[i] : 1.0, i, { 0 } };
        total += src[i].n;
    }
    /* union and intersection: smallest input first (a stable sort, as glibc's qsort is) */
    if (o->op != FD_ZOP_DIFF)
        for (size_t i = 1; i < nk; i++) {
            zin t = in[i];
            size_t j = i;
            while (j > 0 && in[j - 1].n > t.n) { in[j] = in[j - 1]; j--; }
            in[j] = t;
        }
    int rc = -1;
    fd_zent *r = NULL;
    size_t n = 0;
    zhash acc = { 0 };
    if (o->op == FD_ZOP_UNION) {
        if (!(r = malloc((total ? total : 1) * sizeof *r)) || zh_init(&acc, total)) goto done;
        for (size_t i = 0; i < nk; i++)
            for (size_t k = 0; k < in[i].n; k++) {
                const fd_zent *e = &in[i].a[k];
                double score = in[i].w * e->s;
                if (isnan(score)) score = 0;
                long at = zh_find(&acc, r, e->m, e->ml, (long)n);
                if (at < 0) r[n++] = (fd_zent){ e->m, e->ml, score };
                else aggregate(&r[at].s, score, o->aggregate);
            }
    } else {
        size_t first_n = nk ? in[0].n : 0;
        if (!(r = malloc((first_n ? first_n : 1) * sizeof *r))) goto done;
        for (size_t i = 1; i < nk; i++) {
            if (zh_init(&in[i].h, in[i].n)) goto done;
            for (size_t k = 0; k < in[i].n; k++) zh_find(&in[i].h, in[i].a, in[i].a[k].m, in[i].a[k].ml, (long)k);
        }
        if (o->op == FD_ZOP_INTER && first_n) {
            for (size_t k = 0; k < first_n; k++) {
                const fd_zent *e = &in[0].a[k];
                double score = in[0].w * e->s;
                if (isnan(score)) score = 0;
                size_t j;
                for (j = 1; j < nk; j++) {
                    long at = zh_find(&in[j].h, in[j].a, e->m, e->ml, -1);
                    if (at < 0) break;
                    aggregate(&score, in[j].a[at].s * in[j].w, o->aggregate);
                }
                if (j < nk) continue;
                r[n++] = (fd_zent){ e->m, e->ml, score };
                if (o->card && o->limit && (long long)n >= o->limit) break;
            }
        } else if (o->op == FD_ZOP_DIFF) {
            for (size_t k = 0; k < first_n; k++) {
                const fd_zent *e = &in[0].a[k];
                size_t j;
                for (j = 1; j < nk; j++)
                    if (zh_find(&in[j].h, in[j].a, e->m, e->ml, -1) >= 0) break;
                if (j == nk) r[n++] = *e;
            }
        }
    }
    if (!o->card) fd_zent_sort(r, n);
    *res = r;
    *nres = n;
    r = NULL;
    rc = 0;
done:
    free(r);
    free(acc.slot);
    for (size_t i = 0; i < nk; i++) free(in[i].h.slot);
    free(in);
    return rc;
}

int fd_zreply_range(resp_out *out, const fd_zent *a, size_t n, int withscores)
{
    int nested = withscores && out->proto == 3;
    if (resp_add_array(out, withscores && !nested ? 2 * (long long)n : (long long)n)) return -1;
    for (size_t i = 0; i < n; i++) {
        if (nested && resp_add_array(out, 2)) return -1;
        if (resp_add_bulk(out, a[i].m, a[i].ml)) return -1;
        if (withscores && resp_add_double(out, a[i].s)) return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- ZRANGESTORE */

int fd_parse_zrangestore(const resp_arg *argv, int argc, struct fd_zrange *z, resp_out *out,
                         int *replied)
{
    /* Redis's option loop without WITHSCORES: the errors it meets first */
    int bytype = 0, rev = 0;
    for (int j = 5; j < argc; j++) {
        const resp_arg *a = &argv[j];
        long long v;
        if (resp_arg_is(a, "limit") && argc - j - 1 >= 2) {
            if (resp_str2ll(argv[j + 1].ptr, argv[j + 1].len, &v) != 0 ||
                resp_str2ll(argv[j + 2].ptr, argv[j + 2].len, &v) != 0) return FD_E_NOTINT;
            j += 2;
        } else if (!rev && resp_arg_is(a, "rev")) rev = 1;
        else if (!bytype && (resp_arg_is(a, "bylex") || resp_arg_is(a, "byscore"))) bytype = 1;
        else return FD_E_SYNTAX;
    }
    return fd_parse_zrange(argv + 1, argc - 1, -1, -1, z, out, replied);
}

/* ---------------------------------------------------------------- ZRANDMEMBER */

static uint64_t xs(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ULL;
    x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dULL;
}

static int emit_one(resp_out *out, const fd_zent *e, int withscores)
{
    if (withscores && out->proto == 3 && resp_add_array(out, 2)) return -1;
    if (resp_add_bulk(out, e->m, e->ml)) return -1;
    if (withscores && resp_add_double(out, e->s)) return -1;
    return 0;
}

int fd_zrandmember_reply(resp_out *out, const fd_zent *a, size_t n, int has_count,
                         long long count, int withscores, uint64_t *rng)
{
    if (!has_count) {
        const fd_zent *e = &a[xs(rng) % n];
        return resp_add_bulk(out, e->m, e->ml) ? -1 : 0;
    }
    int uniq = count >= 0;
    unsigned long long want = uniq ? (unsigned long long)count : (unsigned long long)(-count);
    if (want == 0) return resp_add_array(out, 0) ? -1 : 0;
    if (!uniq || want == 1) {
        if (resp_add_array(out, withscores && out->proto == 2 ? 2 * (long long)want : (long long)want)) return -1;
        for (unsigned long long i = 0; i < want; i++)
            if (emit_one(out, &a[xs(rng) % n], withscores)) return -1;
        return 0;
    }
    if (want >= n) {
        if (resp_add_array(out, withscores && out->proto == 2 ? 2 * (long long)n : (long long)n)) return -1;
        for (size_t i = n; i-- > 0;)       /* the whole set, highest first (as 7.0) */
            if (emit_one(out, &a[i], withscores)) return -1;
        return 0;
    }
    /* distinct: a partial Fisher-Yates shuffle over indexes */
    size_t *ix = malloc(n * sizeof *ix);
    if (!ix) return -1;
    for (size_t i = 0; i < n; i++) ix[i] = i;
    for (size_t i = 0; i < want; i++) {
        size_t j = i + (size_t)(xs(rng) % (n - i));
        size_t t = ix[i]; ix[i] = ix[j]; ix[j] = t;
    }
    int rc = resp_add_array(out, withscores && out->proto == 2 ? 2 * (long long)want : (long long)want) ? -1 : 0;
    for (size_t i = 0; i < want && !rc; i++) rc = emit_one(out, &a[ix[i]], withscores);
    free(ix);
    return rc;
}

/* ---------------------------------------------------------------- ZMPOP / LMPOP */

int fd_mpop_parse(const resp_arg *argv, int argc, int nkidx, int zset, long long *numkeys,
                  int *where, long long *count, resp_out *out, int *replied)
{
    *replied = 0;
    long long nk, c = -1;
    if (resp_str2ll(argv[nkidx].ptr, argv[nkidx].len, &nk) != 0 || nk < 1) {
        if (resp_add_error(out, "ERR numkeys should be greater than 0")) return FD_E_NOMEM;
        *replied = 1;
        return FD_OK;
    }
    if (nk > argc - nkidx - 2) return FD_E_SYNTAX;
    int widx = nkidx + (int)nk + 1;
    const resp_arg *w = &argv[widx];
    if (resp_arg_is(w, zset ? "min" : "left")) *where = 0;
    else if (resp_arg_is(w, zset ? "max" : "right")) *where = 1;
    else return FD_E_SYNTAX;
    for (int j = widx + 1; j < argc; j++) {
        int more = argc - 1 - j;
        if (c == -1 && more && resp_arg_is(&argv[j], "count")) {
            j++;
            if (resp_str2ll(argv[j].ptr, argv[j].len, &c) != 0 || c < 1) {
                if (resp_add_error(out, "ERR count should be greater than 0")) return FD_E_NOMEM;
                *replied = 1;
                return FD_OK;
            }
        } else return FD_E_SYNTAX;
    }
    *numkeys = nk;
    *count = c == -1 ? 1 : c;
    return FD_OK;
}

int fd_mpop_run(const resp_arg *argv, int argc, int zset, fd_mpop_one pop, void *ud, resp_out *out)
{
    long long numkeys, count;
    int where, replied;
    int s = fd_mpop_parse(argv, argc, 1, zset, &numkeys, &where, &count, out, &replied);
    if (s != FD_OK || replied) return s;
    for (long long i = 0; i < numkeys; i++) {
        int done;
        if ((s = pop(ud, zset, &argv[2 + i], where, count, &done)) != FD_OK || done) return s;
    }
    return resp_add_null_array(out) ? FD_E_NOMEM : FD_OK;
}
