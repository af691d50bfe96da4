/* kv_stream.c — the stream commands (XADD ... XAUTOCLAIM) of the embedded
 * backends: storage/value/stream.c holds the semantics; this file gives it
 * the ordered-KV layer as its fd_stream_io.
 *
 * A stream is a KV_T_STREAM metadata record ('M': version + the engine's
 * FD_SMETA_LEN-byte metadata) and its sub-records under the collection
 * prefix 'S' len enc version, followed by the engine's sub key ('x' id for
 * entries, 'n' for listpack-node bookkeeping, 'g' groups, 'c' consumers,
 * 'p'/'q' pending entries: docs/encoding.md, "Streams"). So DEL is O(1) (the
 * version goes to the garbage queue), RENAME copies the sub-records as for
 * any collection, and an empty stream stays a key, as Redis's.
 * Costs, in stored records: XADD O(1) (+ trimmed); XRANGE/XREVRANGE a seek
 * then O(returned); XLEN O(1); XDEL O(ids); XREADGROUP ">" O(returned)
 * reads + O(returned) writes; XACK O(ids); XPENDING O(returned). */
#include <stdlib.h>
#include <string.h>
#include "kv.h"
#include "../value/stream.h"

typedef struct kv_sk {
    kv_key  k;
    kv_meta m;
    uint8_t pfx[KV_SUBPFX_MAX];
    size_t  pl;
} kv_sk;

#define KV_SK_KEYMAX (KV_SUBPFX_MAX + FD_SSUB_MAX)

static int sio_open(void *h, const resp_arg *key, void **skp, uint8_t *meta, int *exists)
{
    kv_ctx *c = h;
    *skp = NULL;
    *exists = 0;
    kv_sk *sk = malloc(sizeof *sk);
    if (!sk) return FD_E_NOMEM;
    kv_key_init(&sk->k, key->ptr, key->len);
    int s = kv_lookup(c, &sk->k, &sk->m);
    if (s == FD_OK && sk->m.live && sk->m.type != KV_T_STREAM) s = FD_E_WRONGTYPE;
    if (s == FD_OK && sk->m.live && sk->m.vlen < FD_SMETA_LEN) s = FD_E_CORRUPT;
    if (s != FD_OK || !sk->m.live) { free(sk); return s; }
    memcpy(meta, sk->m.val, FD_SMETA_LEN);
    sk->pl = kv_enc_sub_prefix(sk->pfx, KV_KEY_ENC(&sk->k), KV_KEY_ELEN(&sk->k), sk->m.version);
    *skp = sk;
    *exists = 1;
    return FD_OK;
}

static int sio_create(void *h, const resp_arg *key, void **skp)
{
    kv_ctx *c = h;
    kv_sk *sk = *skp ? *skp : malloc(sizeof *sk);
    if (!sk) return FD_E_NOMEM;
    if (!*skp) {
        kv_key_init(&sk->k, key->ptr, key->len);
        int s = kv_lookup(c, &sk->k, &sk->m);     /* an expired record of any type goes */
        if (s != FD_OK) { free(sk); return s; }
    }
    int s = kv_coll_new(c, &sk->k, &sk->m, KV_T_STREAM);
    if (s != FD_OK) { if (!*skp) free(sk); return s; }
    sk->pl = kv_enc_sub_prefix(sk->pfx, KV_KEY_ENC(&sk->k), KV_KEY_ELEN(&sk->k), sk->m.version);
    *skp = sk;
    return FD_OK;
}

static int sio_save(void *h, void *skp, const uint8_t *meta)
{
    kv_sk *sk = skp;
    uint8_t body[8 + FD_SMETA_LEN];
    kv_put_u64(body, sk->m.version);
    memcpy(body + 8, meta, FD_SMETA_LEN);
    return kv_write_meta(h, &sk->k, &sk->m, KV_T_STREAM, body, sizeof body);
}

static size_t full_key(uint8_t *out, const kv_sk *sk, const uint8_t *sub, size_t sl)
{
    memcpy(out, sk->pfx, sk->pl);
    memcpy(out + sk->pl, sub, sl);
    return sk->pl + sl;
}

static int sio_get(void *h, void *skp, const uint8_t *sub, size_t sl, const void **v, size_t *vl)
{
    kv_ctx *c = h;
    uint8_t k[KV_SK_KEYMAX];
    if (sl > FD_SSUB_MAX) return FD_E_INTERNAL;
    size_t kl = full_key(k, skp, sub, sl);
    return c->drv->get(c->txn, k, kl, v, vl);
}

static int sio_put(void *h, void *skp, const uint8_t *sub, size_t sl, const void *v, size_t vl)
{
    kv_ctx *c = h;
    uint8_t k[KV_SK_KEYMAX];
    if (sl > FD_SSUB_MAX) return FD_E_INTERNAL;
    size_t kl = full_key(k, skp, sub, sl);
    return c->drv->put(c->txn, k, kl, vl ? v : "", vl);
}

static int sio_del(void *h, void *skp, const uint8_t *sub, size_t sl)
{
    kv_ctx *c = h;
    uint8_t k[KV_SK_KEYMAX];
    if (sl > FD_SSUB_MAX) return FD_E_INTERNAL;
    size_t kl = full_key(k, skp, sub, sl);
    return c->drv->del(c->txn, k, kl);
}

static int sio_walk(void *h, void *skp, const uint8_t *pfx, size_t pl, const uint8_t *from, size_t fl,
                    int rev, fd_swalk_fn fn, void *arg)
{
    kv_ctx *c = h;
    kv_sk *sk = skp;
    uint8_t p[KV_SK_KEYMAX], f[KV_SK_KEYMAX];
    if (pl > FD_SSUB_MAX || fl > FD_SSUB_MAX) return FD_E_INTERNAL;
    size_t fpl = full_key(p, sk, pfx, pl), ffl = full_key(f, sk, from, fl);
    kv_iter *it;
    FD_TRY(c->drv->iter_open(c->txn, &it));
    const void *kp, *vp; size_t kl, vl;
    int s = kv_range_seek(c, it, p, fpl, f, ffl, rev, &kp, &kl, &vp, &vl);
    while (s == FD_OK) {
        int r = fn(arg, (const uint8_t *)kp + sk->pl, kl - sk->pl, vp, vl);
        if (r == FD_SW_STOP) break;
        if (r != FD_SW_NEXT) { s = r; break; }
        s = kv_range_step(c, it, p, fpl, rev, &kp, &kl, &vp, &vl);
    }
    c->drv->iter_close(it);
    return s == FD_NOTFOUND ? FD_OK : s;
}

static void sio_close(void *h, void *skp)
{
    (void)h;
    free(skp);
}

static void sio_event(void *h, int cls, const char *event, const resp_arg *key)
{
    fd_events_add(&((kv_ctx *)h)->st->events, cls, event, key->ptr, key->len);
}

static const fd_stream_io kv_stream_io = {
    .open = sio_open, .create = sio_create, .save = sio_save,
    .get = sio_get, .put = sio_put, .del = sio_del, .walk = sio_walk, .close = sio_close,
    .event = sio_event,
};

#define KV_STREAM_CMD(name) \
    int kv_cmd_##name(kv_ctx *c) \
    { \
        fd_stream_call call = { &kv_stream_io, c, c->argc, c->argv, c->out, c->now_ms }; \
        return fd_stream_##name(&call); \
    }

KV_STREAM_CMD(xadd)
KV_STREAM_CMD(xrange)
KV_STREAM_CMD(xrevrange)
KV_STREAM_CMD(xlen)
KV_STREAM_CMD(xdel)
KV_STREAM_CMD(xtrim)
KV_STREAM_CMD(xread)
KV_STREAM_CMD(xreadgroup)
KV_STREAM_CMD(xsetid)
KV_STREAM_CMD(xinfo)
KV_STREAM_CMD(xgroup)
KV_STREAM_CMD(xack)
KV_STREAM_CMD(xpending)
KV_STREAM_CMD(xclaim)
KV_STREAM_CMD(xautoclaim)

int kv_stream_dump(kv_ctx *c, struct fd_rdb_buf *out)
{
    fd_stream_call call = { &kv_stream_io, c, c->argc, c->argv, c->out, c->now_ms };
    return fd_stream_dump(&call, &c->argv[1], out);
}

int kv_stream_restore(kv_ctx *c, const resp_arg *key, const void *p, size_t n)
{
    fd_stream_call call = { &kv_stream_io, c, c->argc, c->argv, c->out, c->now_ms };
    return fd_stream_restore(&call, key, p, n);
}
