/* kv_string.c — a key's own record over the ordered-KV layer: the store of
 * storage/value/strings.c's commands (fd_str_io) and of value/keys.c's
 * (fd_key_io: DEL, EXISTS, TYPE, the expiry commands), one adapter for both.
 *
 * Strings live inline in the key's metadata record, so GET is one read.
 * Integers written by INCR are stored as their decimal text, as Redis
 * replies them. Every command validates its arguments before its first
 * write, so a failure leaves no partial change (storage errors excepted:
 * the backend aborts those, see kv_backend.c). */
#include <string.h>
#include "kv.h"
#include "../value/strings.h"
#include "../value/string_ops.h"
#include "../value/keys.h"

typedef struct kv_sk {
    kv_key  k;
    kv_meta m;
} kv_sk;
_Static_assert(sizeof(kv_sk) <= sizeof(fd_str_sk), "kv_sk fits fd_str_sk");

static int sk_open(void *h, const resp_arg *key, int want, fd_str_sk *b, fd_str_val *v)
{
    kv_ctx *c = h;
    kv_sk *x = (kv_sk *)b->b;
    kv_key_init(&x->k, key->ptr, key->len);
    int read = c->read;
    if (want & FD_STR_SOURCE) c->read = 1;        /* lookupKeyRead: its keymiss */
    int s = kv_lookup(c, &x->k, &x->m);
    c->read = read;
    want &= ~FD_STR_SOURCE;
    if (s != FD_OK) x->m.live = 0;
    v->found = x->m.found;
    v->live = x->m.live;
    v->string = v->live && x->m.type == KV_T_STRING;
    v->v = x->m.val;
    v->len = x->m.vlen;
    v->expire = x->m.expire;
    if (s == FD_OK && want == FD_STR_STRING && v->live && !v->string) s = FD_E_WRONGTYPE;
    return s;
}

static int sk_write(void *h, fd_str_sk *b, const resp_arg *key, int64_t expire, const char *a, size_t al,
                    const char *p, size_t pl)
{
    (void)key;
    kv_ctx *c = h;
    kv_sk *x = (kv_sk *)b->b;
    if (al && x->m.live && a >= x->m.val && a < x->m.val + x->m.vlen) {
        /* the old value is in driver memory that the write may reuse: copy it */
        char *cp = kv_scratch(c->st, al);
        if (!cp) return FD_E_NOMEM;
        memcpy(cp, a, al);
        a = cp;
    }
    return kv_write_string(c, &x->k, &x->m, expire, a, al, p, pl);
}

static int sk_del(void *h, fd_str_sk *b, const resp_arg *key)
{
    (void)key;
    kv_sk *x = (kv_sk *)b->b;
    return kv_delete(h, &x->k, &x->m);
}

static int sk_expire(void *h, fd_str_sk *b, const resp_arg *key, int64_t at)
{
    (void)key;
    kv_sk *x = (kv_sk *)b->b;
    return kv_set_expire(h, &x->k, &x->m, at);
}

static char *sk_scratch(void *h, fd_str_sk *b, size_t n) { (void)b; return kv_scratch(((kv_ctx *)h)->st, n); }

static const fd_str_io str_io = { sk_open, sk_write, sk_del, sk_expire, sk_scratch, NULL, kv_io_event,
                                  NULL, NULL, NULL, NULL, NULL, kv_io_untouched };

FD_STR_HANDLERS(kv, kv_ctx, str_io)
FD_SOP_HANDLERS(kv, kv_ctx, str_io)

static const char *sk_type(void *h, fd_str_sk *b) { (void)h; return kv_type_name(((kv_sk *)b->b)->m.type); }

static const fd_key_io key_io = { sk_open, sk_del, sk_expire, sk_type, NULL, kv_io_event, NULL, NULL };

FD_KEY_HANDLERS(kv, kv_ctx, key_io)
