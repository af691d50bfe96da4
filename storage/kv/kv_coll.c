/* kv_coll.c — the store of the field-collection command layers
 * (storage/value/coll.h): hashes (value/hash.c) and sets (value/set.c)
 * over the ordered-KV layer.
 *
 * A hash or a set is its metadata (version, size) plus one record per
 * element:   'S' len enc version tag element' -> value   (a set's: "")
 * with tag KV_TAG_HASH or KV_TAG_SET. get/put/del are one point operation
 * per element, count a metadata read, walk one range scan in byte order
 * (Redis: insertion order for small hashes and sets, hash order else —
 * neither is specified). The open collection (kv_hk) lives in the
 * caller's buffer; nothing is allocated per command. */
#include <string.h>
#include "kv.h"
#include "../value/coll.h"

typedef struct kv_hk {
    kv_key  k;
    kv_meta m;
    int     type, tag;            /* KV_T_HASH/KV_TAG_HASH or KV_T_SET/KV_TAG_SET */
    int     was;                  /* open_dest: a live key was replaced (its save raises no "new") */
    size_t  pl;                   /* the element prefix's length in ek (m.live) */
    uint8_t ek[KV_ELEM_MAX];
} kv_hk;
_Static_assert(sizeof(kv_hk) <= sizeof(fd_coll_hk), "kv_hk fits fd_coll_hk");

static int coll_open(kv_ctx *c, const resp_arg *key, int how, int type, int tag, fd_coll_hk *b, int *exists)
{
    kv_hk *x = (kv_hk *)b->b;
    x->type = type;
    x->tag = tag;
    x->was = 0;
    int read = c->read;
    if (how == FD_COLL_SOURCE) c->read = 1;          /* lookupKeyRead: its keymiss */
    int s = kv_coll_lookup(c, &x->k, &x->m, key, type);
    c->read = read;
    FD_TRY(s);
    if ((*exists = x->m.live)) x->pl = kv_elem_prefix(x->ek, &x->k, &x->m, tag);
    return FD_OK;
}

static int hash_open(void *h, const resp_arg *key, int how, int named, int step, fd_coll_hk *b, int *exists)
{
    (void)named; (void)step;
    return coll_open(h, key, how, KV_T_HASH, KV_TAG_HASH, b, exists);
}

static int set_open(void *h, const resp_arg *key, int how, int named, int step, fd_coll_hk *b, int *exists)
{
    (void)named; (void)step;
    return coll_open(h, key, how, KV_T_SET, KV_TAG_SET, b, exists);
}

/* A STORE's destination: whatever is there goes now (a new version for
 * the result); re-creating a live key raises no "new" (c->overwrite, set
 * around the save). */
static int set_open_dest(void *h, const resp_arg *key, int need_was, fd_coll_hk *b, int *was)
{
    (void)need_was;
    kv_ctx *c = h;
    kv_hk *x = (kv_hk *)b->b;
    x->type = KV_T_SET;
    x->tag = KV_TAG_SET;
    kv_key_init(&x->k, key->ptr, key->len);
    FD_TRY(kv_lookup(c, &x->k, &x->m));
    *was = x->was = x->m.live;
    if (x->m.found) FD_TRY(kv_delete(c, &x->k, &x->m));
    memset(&x->m, 0, sizeof x->m);
    return FD_OK;
}

static int hk_get(void *h, fd_coll_hk *b, const char *f, size_t fl, const void **v, size_t *vl)
{
    kv_hk *x = (kv_hk *)b->b;
    size_t el = kv_elem_key(x->ek, x->ek, x->pl, f, fl);
    return kv_elem_get(h, x->ek, el, f, fl, v, vl);
}

static int hk_put(void *h, fd_coll_hk *b, const char *f, size_t fl, const void *v, size_t vl, int lasting,
                  int *created)
{
    (void)lasting;                /* kv_elem_put copies into the transaction */
    kv_ctx *c = h;
    kv_hk *x = (kv_hk *)b->b;
    if (!x->m.live) {
        FD_TRY(kv_coll_new(c, &x->k, &x->m, x->type));
        x->pl = kv_elem_prefix(x->ek, &x->k, &x->m, x->tag);
    }
    size_t el = kv_elem_key(x->ek, x->ek, x->pl, f, fl);
    const void *ov; size_t ovl;
    int s = kv_elem_get(c, x->ek, el, f, fl, &ov, &ovl);
    if (s == FD_NOTFOUND) { *created = 1; x->m.size++; }
    else if (s != FD_OK) return s;
    else if (x->type == KV_T_SET) return FD_OK;      /* a member: nothing to rewrite */
    return kv_elem_put(c, x->ek, el, f, fl, v, vl);
}

static int hk_del(void *h, fd_coll_hk *b, const char *f, size_t fl, int *removed)
{
    kv_ctx *c = h;
    kv_hk *x = (kv_hk *)b->b;
    if (!x->m.size) return FD_OK;
    size_t el = kv_elem_key(x->ek, x->ek, x->pl, f, fl);
    const void *v; size_t vl;
    int s = kv_elem_get(c, x->ek, el, f, fl, &v, &vl);
    if (s == FD_NOTFOUND) return FD_OK;
    if (s != FD_OK) return s;
    FD_TRY(c->drv->del(c->txn, x->ek, el));
    *removed = 1;
    x->m.size--;
    return FD_OK;
}

static long long hk_count(void *h, fd_coll_hk *b) { (void)h; return (long long)((kv_hk *)b->b)->m.size; }

/* One range scan, in byte order. */
static int hk_walk(void *h, fd_coll_hk *b, fd_coll_walk_fn fn, void *arg)
{
    kv_ctx *c = h;
    kv_hk *x = (kv_hk *)b->b;
    uint8_t pfx[KV_ELEM_MAX];
    size_t pl = kv_elem_prefix(pfx, &x->k, &x->m, x->tag);
    kv_iter *it;
    FD_TRY(c->drv->iter_open(c->txn, &it));
    const void *kp, *vp; size_t kl, vl;
    int s = kv_range_seek(c, it, pfx, pl, pfx, pl, 0, &kp, &kl, &vp, &vl);
    while (s == FD_OK) {
        const char *f, *v; size_t fl, vvl;
        if ((s = kv_elem_decode(kp, kl, pl, vp, vl, &f, &fl, &v, &vvl)) != FD_OK) break;
        if ((s = fn(arg, f, fl, v, vvl)) != 0) break;
        s = kv_range_step(c, it, pfx, pl, 0, &kp, &kl, &vp, &vl);
    }
    c->drv->iter_close(it);
    return s == FD_NOTFOUND ? FD_OK : s;
}

static int hk_save(void *h, fd_coll_hk *b)
{
    kv_ctx *c = h;
    kv_hk *x = (kv_hk *)b->b;
    if (!x->was) return kv_coll_save(c, &x->k, &x->m);
    c->overwrite = 1;
    int s = kv_coll_save(c, &x->k, &x->m);
    c->overwrite = 0;
    return s;
}

static int hk_gone(void *h, fd_coll_hk *b) { (void)h; return ((kv_hk *)b->b)->m.size == 0; }
static void hk_close(void *h, fd_coll_hk *b) { (void)h; (void)b; }

void kv_io_event(void *h, int cls, const char *event, const resp_arg *key)
{
    kv_ctx *c = h;
    FD_NOTIFY(&c->st->events, cls, event, key->ptr, key->len);
}

void kv_io_untouched(void *h, int nth) { ((kv_ctx *)h)->untouched |= 1u << nth; }

const fd_coll_io kv_hash_io = { hash_open, NULL, hk_get, hk_put, hk_del, hk_count, hk_walk,
                                hk_save, hk_gone, hk_close, kv_io_event, kv_io_untouched };
const fd_coll_io kv_set_io = { set_open, set_open_dest, hk_get, hk_put, hk_del, hk_count, hk_walk,
                               hk_save, hk_gone, hk_close, kv_io_event, kv_io_untouched };
