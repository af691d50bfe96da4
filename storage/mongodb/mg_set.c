/* mg_set.c — the MongoDB backend's sets: the store of storage/value/set.c's
 * commands (fd_coll_io; SPOP/SRANDMEMBER/SSCAN: mg_scan.c).
 *
 * { _id, type: "set", value: [ BinData, ... ], expireAt? }: the members,
 * each once (a big set: mg_big.c's layout, only the members a command
 * names loaded). Each command reads the document, changes the array here
 * and writes it back (one replaceOne, with mg_list.c's loader and saver);
 * the key's worker runs its commands in order, so this is atomic for this
 * frontdoor. Members keep insertion order. */
#include <stdlib.h>
#include <string.h>

#include "mg.h"
#include "../value/set.h"

static void set_keyat(const void *coll, size_t i, const char **p, size_t *l)
{
    const mg_list *L = coll;
    *p = L->p[i]; *l = L->l[i];
}

static long set_find(mg_list *L, const char *p, size_t n)
{
    return mg_ix_find(&L->ix, L, L->n, set_keyat, p, n);
}

/* ---------------------------------------------------------------- fd_coll_io */

typedef struct mg_sk {
    const resp_arg *key;
    mg_meta m;
    mg_list L;
} mg_sk;
_Static_assert(sizeof(mg_sk) <= sizeof(fd_coll_hk), "mg_sk fits fd_coll_hk");

static int sk_open(void *hp, const resp_arg *key, int how, int named, int step, fd_coll_hk *b, int *exists)
{
    mg_ctx *c = hp;
    mg_sk *x = (mg_sk *)b->b;
    memset(x, 0, sizeof *x);
    x->key = key;
    if (named >= 0) mg_named(c, named < c->argc ? named : c->argc, step);   /* a big set: only these members */
    int read = c->read;
    if (how == FD_COLL_SOURCE) c->read = 1;                  /* lookupKeyRead: its keymiss */
    int s = mg_array_load(c, key, &x->m, &x->L, MG_T_SET);
    c->read = read;
    if (s != FD_OK) { memset(x, 0, sizeof *x); return s; }   /* (freed by the load) */
    *exists = x->m.live;
    return FD_OK;
}

/* A STORE's destination: nothing loaded; the save replaces whatever is
 * there (found: an empty result deletes it). */
static int sk_open_dest(void *hp, const resp_arg *key, int need_was, fd_coll_hk *b, int *was)
{
    mg_sk *x = (mg_sk *)b->b;
    memset(x, 0, sizeof *x);
    x->key = key;
    x->m.found = 1;
    return need_was ? mg_key_live(hp, key, was) : FD_OK;
}

static int sk_get(void *hp, fd_coll_hk *b, const char *f, size_t fl, const void **v, size_t *vl)
{
    (void)hp;
    if (set_find(&((mg_sk *)b->b)->L, f, fl) < 0) return FD_NOTFOUND;
    *v = "";
    *vl = 0;
    return FD_OK;
}

static int sk_put(void *hp, fd_coll_hk *b, const char *f, size_t fl, const void *v, size_t vl, int lasting,
                  int *created)
{
    (void)hp; (void)v; (void)vl;
    mg_list *L = &((mg_sk *)b->b)->L;
    if (set_find(L, f, fl) >= 0) return FD_OK;
    if (!lasting) return FD_E_INTERNAL;        /* (every caller's members last: kept as pointers) */
    if (mg_list_reserve(L, L->n + 1) != FD_OK) return FD_E_NOMEM;
    L->p[L->n] = f; L->l[L->n++] = fl;
    *created = 1;
    return FD_OK;
}

static int sk_del(void *hp, fd_coll_hk *b, const char *f, size_t fl, int *removed)
{
    (void)hp;
    mg_list *L = &((mg_sk *)b->b)->L;
    long i = set_find(L, f, fl);
    if (i < 0) return FD_OK;
    mg_ix_invalidate(&L->ix);
    memmove(L->p + i, L->p + i + 1, (L->n - (size_t)i - 1) * sizeof *L->p);
    memmove(L->l + i, L->l + i + 1, (L->n - (size_t)i - 1) * sizeof *L->l);
    L->n--;
    *removed = 1;
    return FD_OK;
}

static long long sk_count(void *hp, fd_coll_hk *b)
{
    (void)hp;
    mg_sk *x = (mg_sk *)b->b;
    return mg_coll_count(&x->m, x->L.n);
}

static int sk_walk(void *hp, fd_coll_hk *b, fd_coll_walk_fn fn, void *arg)
{
    (void)hp;
    mg_list *L = &((mg_sk *)b->b)->L;
    for (size_t i = 0; i < L->n; i++) {
        int s = fn(arg, L->p[i], L->l[i], "", 0);
        if (s) return s;
    }
    return FD_OK;
}

static int sk_save(void *hp, fd_coll_hk *b)
{
    mg_sk *x = (mg_sk *)b->b;
    return mg_array_save(hp, x->key, &x->m, &x->L, MG_T_SET);
}

static void sk_close(void *hp, fd_coll_hk *b)
{
    (void)hp;
    mg_sk *x = (mg_sk *)b->b;
    mg_list_free(&x->L);
    mg_meta_free(&x->m);
}

static const fd_coll_io set_io = { sk_open, sk_open_dest, sk_get, sk_put, sk_del, sk_count, sk_walk,
                                   sk_save, mg_coll_gone, sk_close, mg_coll_event, NULL };

FD_SET_HANDLERS(mg, mg_ctx, set_io)
