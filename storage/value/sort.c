/* sort.c — SORT / SORT_RO: see sort.h (the rules of Redis 7.0's sort.c,
 * written from its documented behaviour). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "sort.h"
#include "../status.h"
#include "../bytecmp.h"

static const char ERR_SYNTAX[] = "ERR syntax error";
static const char ERR_NOTINT[] = "ERR value is not an integer or out of range";
static const char ERR_SCORE[]  = "ERR One or more scores can't be converted into double";

const char *fd_sort_parse(const resp_arg *argv, int argc, int ro, fd_sort *o)
{
    o->desc = o->alpha = o->dontsort = 0;
    o->lstart = 0;
    o->lcount = -1;
    o->by = o->store = NULL;
    o->ngets = 0;
    for (int j = 2; j < argc; j++) {
        int left = argc - j - 1;
        const resp_arg *a = &argv[j];
        if (resp_arg_is(a, "asc")) o->desc = 0;
        else if (resp_arg_is(a, "desc")) o->desc = 1;
        else if (resp_arg_is(a, "alpha")) o->alpha = 1;
        else if (resp_arg_is(a, "limit") && left >= 2) {
            if (resp_str2ll(argv[j + 1].ptr, argv[j + 1].len, &o->lstart) != 0 ||
                resp_str2ll(argv[j + 2].ptr, argv[j + 2].len, &o->lcount) != 0)
                return ERR_NOTINT;
            j += 2;
        } else if (!ro && resp_arg_is(a, "store") && left >= 1) {
            o->store = &argv[++j];
        } else if (resp_arg_is(a, "by") && left >= 1) {
            o->by = &argv[++j];
            /* as Redis: a BY without '*' sets "don't sort"; a later BY never clears it */
            if (!memchr(o->by->ptr, '*', strnlen(o->by->ptr, o->by->len))) o->dontsort = 1;
        } else if (resp_arg_is(a, "get") && left >= 1) {
            o->gets[o->ngets++] = ++j;
        } else {
            return ERR_SYNTAX;
        }
    }
    return NULL;
}

int fd_sort_begin(const resp_arg *argv, int argc, int ro, fd_sort *o, resp_out *out, int *replied)
{
    *replied = 0;
    if (!(o->gets = malloc((size_t)argc * sizeof *o->gets))) return FD_E_NOMEM;
    const char *e = fd_sort_parse(argv, argc, ro, o);
    if (!e) return FD_OK;
    *replied = 1;
    return resp_add_error(out, e) ? FD_E_NOMEM : FD_OK;
}

void fd_sort_end(fd_sort *o)
{
    free(o->gets);
    o->gets = NULL;
}

int fd_sort_pattern(const resp_arg *pat, const char *sub, size_t sl, char *key, size_t *kl,
                    const char **field, size_t *fl)
{
    const char *sp = pat->ptr;
    size_t plen = pat->len, clen = strnlen(sp, plen);   /* Redis reads it as a C string */
    if (clen == 1 && sp[0] == '#') return 2;
    const char *p = memchr(sp, '*', clen);
    if (!p) return 0;
    const char *f = NULL, *cend = sp + clen;
    for (const char *q = p + 1; q + 1 < cend; q++)
        if (q[0] == '-' && q[1] == '>') { f = q; break; }
    size_t fieldlen = 0;
    *field = NULL;
    *fl = 0;
    if (f && f + 2 < cend) {
        fieldlen = plen - (size_t)(f - sp) - 2;
        *field = f + 2;
        *fl = fieldlen;
    }
    size_t prefixlen = (size_t)(p - sp);
    size_t postfixlen = plen - (prefixlen + 1) - (fieldlen ? fieldlen + 2 : 0);
    memcpy(key, sp, prefixlen);
    if (sl) memcpy(key + prefixlen, sub, sl);
    memcpy(key + prefixlen + sl, p + 1, postfixlen);
    *kl = prefixlen + sl + postfixlen;
    return 1;
}

/* ---------------------------------------------------------------- results */

static int res_add(fd_sort_result *r, const char *p, size_t l)
{
    size_t need = r->len + 4 + l;
    if (need > r->cap) {
        size_t cap = r->cap ? r->cap : 1024;
        while (cap < need) cap *= 2;
        char *np = realloc(r->p, cap);
        if (!np) return FD_E_NOMEM;
        r->p = np;
        r->cap = cap;
    }
    uint32_t n = (uint32_t)l;
    memcpy(r->p + r->len, &n, 4);
    if (l) memcpy(r->p + r->len + 4, p, l);
    r->len = need;
    r->n++;
    return FD_OK;
}

int fd_sort_result_next(const fd_sort_result *r, size_t *off, const char **p, size_t *l)
{
    if (*off >= r->len) return 0;
    uint32_t n;
    memcpy(&n, r->p + *off, 4);
    *p = r->p + *off + 4;
    *l = n;
    *off += 4 + (size_t)n;
    return 1;
}

void fd_sort_result_free(fd_sort_result *r)
{
    free(r->p);
    memset(r, 0, sizeof *r);
}

/* ---------------------------------------------------------------- sorting */

typedef struct item {
    const char *p;
    size_t l;
    double score;
    char *cmp;            /* ALPHA BY: a copy of the BY value (NULL: missing) */
    size_t cmpl;
} item;

/* the comparator's settings (qsort has no context; workers are threads) */
static _Thread_local int cmp_desc, cmp_alpha, cmp_by;


static int item_cmp(const void *x, const void *y)
{
    const item *a = x, *b = y;
    int cmp;
    if (!cmp_alpha) {
        if (a->score > b->score) cmp = 1;
        else if (a->score < b->score) cmp = -1;
        else cmp = fd_bytes_cmp(a->p, a->l, b->p, b->l);
    } else if (cmp_by) {
        if (!a->cmp || !b->cmp) cmp = a->cmp == b->cmp ? 0 : !a->cmp ? -1 : 1;
        else cmp = fd_bytes_cmp(a->cmp, a->cmpl, b->cmp, b->cmpl);
    } else {
        cmp = fd_bytes_cmp(a->p, a->l, b->p, b->l);
    }
    return cmp_desc ? -cmp : cmp;
}

/* strtod over the value read as a C string, as Redis: 0 or -1 (not a double). */
static int parse_score(const char *v, size_t vl, double *out)
{
    char sbuf[128], *buf = sbuf;
    if (vl >= sizeof sbuf && !(buf = malloc(vl + 1))) return -2;
    memcpy(buf, v, vl);
    buf[vl] = 0;
    char *end;
    errno = 0;
    double d = strtod(buf, &end);
    int bad = end[0] != '\0' || errno == ERANGE || isnan(d);
    if (buf != sbuf) free(buf);
    *out = d;
    return bad ? -1 : 0;
}

/* A pattern's value for the element e: 1 found (*v), 0 none, <0 -status. */
static int lookup(const resp_arg *pat, const item *e, fd_sort_fetch fetch, void *ud,
                  char **kbuf, size_t *kcap, const char **v, size_t *vl)
{
    size_t need = pat->len + e->l + 1;
    if (need > *kcap) {
        char *nb = realloc(*kbuf, need);
        if (!nb) return -FD_E_NOMEM;
        *kbuf = nb;
        *kcap = need;
    }
    size_t kl, fl;
    const char *field;
    int r = fd_sort_pattern(pat, e->p, e->l, *kbuf, &kl, &field, &fl);
    if (r == 2) { *v = e->p; *vl = e->l; return 1; }
    if (r == 0) return 0;
    return fetch(ud, *kbuf, kl, field, fl, v, vl);
}

int fd_sort_exec(const fd_sort *o, const resp_arg *argv, int type, fd_sort_elem *elems, size_t n,
                 fd_sort_fetch fetch, void *ud, resp_out *out, fd_sort_result *res, int *replied)
{
    (void)argv;
    *replied = 0;
    int dontsort = o->dontsort, alpha = o->alpha;
    const resp_arg *by = o->by;
    if (dontsort && type == FD_SORT_SET && o->store) { dontsort = 0; alpha = 1; by = NULL; }

    long long vlen = (long long)n;
    long long start = o->lstart < 0 ? 0 : o->lstart;
    long long end;
    if (start >= vlen) { start = vlen - 1; end = vlen - 2; }
    else end = o->lcount < 0 ? vlen - 1 : start + (o->lcount > vlen ? vlen : o->lcount) - 1;
    if (end >= vlen) end = vlen - 1;

    item *v = calloc(n ? n : 1, sizeof *v);
    if (!v) return FD_E_NOMEM;
    for (size_t i = 0; i < n; i++) {
        size_t at = (dontsort && o->desc && type != FD_SORT_SET) ? n - 1 - i : i;
        v[i].p = elems[at].p;
        v[i].l = elems[at].l;
    }
    char *kbuf = NULL;
    size_t kcap = 0;
    int s = FD_OK, conv_err = 0;
    size_t mark = out->len;

    if (!dontsort) {
        for (size_t j = 0; j < n && s == FD_OK; j++) {
            const char *bv;
            size_t bl;
            if (by) {
                int r = lookup(by, &v[j], fetch, ud, &kbuf, &kcap, &bv, &bl);
                if (r < 0) { s = -r; break; }
                if (r == 0) continue;
            } else {
                bv = v[j].p;
                bl = v[j].l;
            }
            if (alpha) {
                if (by) {
                    v[j].cmp = malloc(bl ? bl : 1);
                    if (!v[j].cmp) { s = FD_E_NOMEM; break; }
                    if (bl) memcpy(v[j].cmp, bv, bl);
                    v[j].cmpl = bl;
                }
            } else {
                int r = parse_score(bv, bl, &v[j].score);
                if (r == -2) { s = FD_E_NOMEM; break; }
                if (r) conv_err = 1;
            }
        }
        if (s == FD_OK) {
            cmp_desc = o->desc;
            cmp_alpha = alpha;
            cmp_by = by != NULL;
            qsort(v, n, sizeof *v, item_cmp);
        }
    }

    long long count = end - start + 1;
    if (count < 0) count = 0;
    long long outputlen = o->ngets ? (long long)o->ngets * count : count;
    if (s != FD_OK) {
        /* fall through to cleanup */
    } else if (conv_err) {
        if (resp_add_error(out, ERR_SCORE)) s = FD_E_NOMEM;
        *replied = 1;
    } else if (!o->store) {
        if (resp_add_array(out, outputlen)) s = FD_E_NOMEM;
        for (long long j = start; j <= end && s == FD_OK; j++) {
            if (!o->ngets && resp_add_bulk(out, v[j].p, v[j].l)) { s = FD_E_NOMEM; break; }
            for (int g = 0; g < o->ngets && s == FD_OK; g++) {
                const char *gv;
                size_t gl;
                int r = lookup(&argv[o->gets[g]], &v[j], fetch, ud, &kbuf, &kcap, &gv, &gl);
                if (r < 0) s = -r;
                else if ((r ? resp_add_bulk(out, gv, gl) : resp_add_null(out)) != 0) s = FD_E_NOMEM;
            }
        }
        if (s == FD_OK) *replied = 1;
    } else {
        memset(res, 0, sizeof *res);
        for (long long j = start; j <= end && s == FD_OK; j++) {
            if (!o->ngets) { s = res_add(res, v[j].p, v[j].l); continue; }
            for (int g = 0; g < o->ngets && s == FD_OK; g++) {
                const char *gv = "";
                size_t gl = 0;
                int r = lookup(&argv[o->gets[g]], &v[j], fetch, ud, &kbuf, &kcap, &gv, &gl);
                if (r < 0) s = -r;
                else s = res_add(res, r ? gv : "", r ? gl : 0);
            }
        }
        if (s != FD_OK) fd_sort_result_free(res);
    }
    if (s != FD_OK) { out->len = mark; *replied = 0; }
    for (size_t i = 0; i < n; i++) free(v[i].cmp);
    free(v);
    free(kbuf);
    return s;
}

int fd_sort_cmd(const fd_sort_io *io, void *ud, const resp_arg *argv, int argc, int ro, resp_out *out)
{
    fd_sort o;
    fd_sort_result res = {0};
    fd_sort_elem *el = NULL;
    size_t n = 0;
    void *hold = NULL;
    int type = FD_SORT_LIST, replied;
    int s = fd_sort_begin(argv, argc, ro, &o, out, &replied);
    if (s == FD_OK && !replied) s = io->load(ud, &argv[1], &hold, &type, &el, &n);
    if (s == FD_OK && !replied) s = fd_sort_exec(&o, argv, type, el, n, io->fetch, hold, out, &res, &replied);
    if (s == FD_OK && !replied) s = io->store(ud, o.store, &res);
    if (s == FD_OK && !replied) s = resp_add_int(out, res.n) ? FD_E_NOMEM : FD_OK;
    fd_sort_result_free(&res);
    free(el);
    if (hold) io->release(hold);
    fd_sort_end(&o);
    return s;
}
