/* kv_dump.c — DUMP and RESTORE over the ordered-KV layer, in Redis 7.0's
 * payload format (storage/value/rdb.c builds and reads the bytes).
 *
 * DUMP reads the value whole (O(n)) in the order the layout keeps it: list
 * head to tail, sorted set by score then member, hash fields and set members
 * in byte order (Redis's listpack hash keeps insertion order, so a hash DUMP
 * equals redis-server's only when the fields were added in byte order; sets
 * past the intset and hashtable encodings never are byte-identical in Redis
 * either). RESTORE checks as Redis does, in its order (options, BUSYKEY, TTL,
 * version and CRC, a full decode before any write), then writes the value.
 * IDLETIME and FREQ are accepted and checked but not kept: the layer has no
 * LRU/LFU clock (OBJECT IDLETIME/FREQ are not served). Streams go through
 * the stream engine (kv_stream_dump / kv_stream_restore): the payload holds
 * the entries, groups, consumers and PELs; DUMP's bytes are redis-server's
 * for a stream built by XADD without deletions (same node cuts). */
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "kv.h"
#include "../value/rdb.h"

/* ---------------------------------------------------------------- DUMP */

/* Every record under prefix pfx as [u32 sub length][sub][value] in l. */
static int collect_prefix(kv_ctx *c, const uint8_t *pfx, size_t pl, int has_sub, kv_list *l)
{
    kv_iter *it;
    FD_TRY(c->drv->iter_open(c->txn, &it));
    const void *kp, *vp; size_t kl, vl;
    int s = kv_range_seek(c, it, pfx, pl, pfx, pl, 0, &kp, &kl, &vp, &vl);
    while (s == FD_OK) {
        const char *sub = "", *v = vp; size_t sl = 0, vvl = vl;
        if (has_sub && (s = kv_elem_decode(kp, kl, pl, vp, vl, &sub, &sl, &v, &vvl)) != FD_OK) break;
        uint8_t *h = (uint8_t *)kv_scratch(c->st, 4 + sl);
        if (!h) { s = FD_E_NOMEM; break; }
        kv_put_u32(h, (uint32_t)sl);
        memcpy(h + 4, sub, sl);
        if (kv_list_add(l, h, 4 + sl, v, vvl)) { s = FD_E_NOMEM; break; }
        s = kv_range_step(c, it, pfx, pl, 0, &kp, &kl, &vp, &vl);
    }
    c->drv->iter_close(it);
    return s == FD_NOTFOUND ? FD_OK : s;
}

static int add_zent(void *arg, const char *m, size_t ml, double score)
{
    uint8_t hdr[12];
    kv_put_u32(hdr, (uint32_t)ml);
    memcpy(hdr + 4, &score, 8);
    return kv_list_add(arg, hdr, 12, m, ml) ? -1 : 0;
}

int kv_cmd_dump(kv_ctx *c)
{
    kv_key k;
    kv_meta m;
    kv_key_init(&k, c->argv[1].ptr, c->argv[1].len);
    FD_TRY(kv_lookup(c, &k, &m));
    if (!m.live) { FD_OUT(resp_add_null(c->out)); return FD_OK; }
    fd_rdb_buf b = { 0 };
    kv_list l = { 0 };
    fd_rdb_item *items = NULL;
    int s = FD_OK, type;
    if (m.type == KV_T_STRING) {
        fd_rdb_item it = { m.val, m.vlen, NULL, 0, 0 };
        s = fd_rdb_dump(FD_RDB_STRING, &it, 1, &b);
        goto reply;
    }
    uint8_t pfx[KV_ELEM_MAX];
    size_t pl;
    switch (m.type) {
    case KV_T_LIST:
        type = FD_RDB_LIST;
        pl = kv_elem_prefix(pfx, &k, &m, KV_TAG_LIST);
        s = collect_prefix(c, pfx, pl, 0, &l);
        break;
    case KV_T_SET:
        type = FD_RDB_SET;
        pl = kv_elem_prefix(pfx, &k, &m, KV_TAG_SET);
        s = collect_prefix(c, pfx, pl, 1, &l);
        break;
    case KV_T_HASH:
        type = FD_RDB_HASH;
        pl = kv_elem_prefix(pfx, &k, &m, KV_TAG_HASH);
        s = collect_prefix(c, pfx, pl, 1, &l);
        break;
    case KV_T_ZSET: {
        type = FD_RDB_ZSET;
        kv_zref r;
        s = kv_zref_load(c, &r, &c->argv[1]);
        if (s == FD_OK) s = kv_zset_walk(c, &r, -INFINITY, 0, INFINITY, 0, add_zent, &l);
        break;
    }
    case KV_T_STREAM:
        s = kv_stream_dump(c, &b);
        goto reply;
    default:
        s = FD_E_CORRUPT;
    }
    if (s == FD_OK && !(items = malloc(((size_t)l.n + 1) * sizeof *items))) s = FD_E_NOMEM;
    if (s == FD_OK) {
        size_t off = 0, i = 0;
        const char *p; size_t n;
        while (kv_list_next(&l, &off, &p, &n)) {
            uint32_t sl = kv_get_u32((const uint8_t *)p);
            fd_rdb_item *it = &items[i++];
            memset(it, 0, sizeof *it);
            if (type == FD_RDB_ZSET) {
                memcpy(&it->score, p + 4, 8);
                it->p = p + 12; it->n = sl;
            } else if (type == FD_RDB_LIST) {
                it->p = p + 4; it->n = n - 4;
            } else {
                it->p = p + 4; it->n = sl;
                it->v = p + 4 + sl; it->vn = n - 4 - sl;
            }
        }
        s = fd_rdb_dump(type, items, i, &b);
    }
reply:
    if (s == FD_OK && resp_add_bulk(c->out, b.p, b.len)) s = FD_E_NOMEM;
    free(items);
    kv_list_free(&l);
    fd_rdb_buf_free(&b);
    return s;
}

/* ---------------------------------------------------------------- RESTORE */

typedef struct rst {
    kv_ctx *c;
    kv_key *k;
    kv_meta *m;
    kv_zref z;
    uint8_t pfx[KV_ELEM_MAX];
    size_t pl;
    int64_t expire;
    int started;
} rst;

static int restore_item(void *ctx, int type, const fd_rdb_item *it)
{
    rst *r = ctx;
    kv_ctx *c = r->c;
    if (type == FD_RDB_STRING)
        return kv_write_string(c, r->k, r->m, r->expire, it->p, it->n, NULL, 0);
    if (!r->started) {
        static const int kt[] = { [FD_RDB_LIST] = KV_T_LIST, [FD_RDB_SET] = KV_T_SET,
                                  [FD_RDB_ZSET] = KV_T_ZSET, [FD_RDB_HASH] = KV_T_HASH };
        static const int tag[] = { [FD_RDB_LIST] = KV_TAG_LIST, [FD_RDB_SET] = KV_TAG_SET,
                                   [FD_RDB_ZSET] = KV_TAG_ZMEMBER, [FD_RDB_HASH] = KV_TAG_HASH };
        FD_TRY(kv_coll_new(c, r->k, r->m, kt[type]));
        r->pl = kv_elem_prefix(r->pfx, r->k, r->m, tag[type]);
        if (type == FD_RDB_ZSET) {
            r->z.k = *r->k;
            r->z.m = *r->m;
            r->z.pl = kv_elem_prefix(r->z.zp, r->k, r->m, KV_TAG_ZMEMBER);
            kv_elem_prefix(r->z.sp, r->k, r->m, KV_TAG_ZSCORE);
        }
        r->started = 1;
    }
    uint8_t ek[KV_ELEM_MAX];
    size_t el;
    switch (type) {
    case FD_RDB_LIST: {
        uint64_t seq;
        if (r->m->size == 0) seq = r->m->head = r->m->tail = KV_LIST_SEQ_START;
        else seq = ++r->m->tail;
        r->m->size++;
        memcpy(ek, r->pfx, r->pl);
        kv_put_u64(ek + r->pl, seq);
        return c->drv->put(c->txn, ek, r->pl + 8, it->n ? it->p : "", it->n);
    }
    case FD_RDB_SET:
        el = kv_elem_key(ek, r->pfx, r->pl, it->p, it->n);
        r->m->size++;
        return kv_elem_put(c, ek, el, it->p, it->n, NULL, 0);
    case FD_RDB_HASH:
        el = kv_elem_key(ek, r->pfx, r->pl, it->p, it->n);
        r->m->size++;
        return kv_elem_put(c, ek, el, it->p, it->n, it->v, it->vn);
    case FD_RDB_ZSET:
        r->m->size++;
        return kv_zset_put(c, &r->z, it->p, it->n, it->score, 0, 0);
    }
    return FD_E_INTERNAL;
}

int kv_cmd_restore(kv_ctx *c)
{
    fd_restore_opts o;
    int replied;
    FD_TRY(fd_parse_restore(c->argv, c->argc, &o, c->out, &replied));
    if (replied) return FD_OK;
    kv_key k;
    kv_meta m;
    kv_key_init(&k, c->argv[1].ptr, c->argv[1].len);
    FD_TRY(kv_lookup(c, &k, &m));
    if (!o.replace && m.live) { FD_OUT(resp_add_error(c->out, FD_RDB_BUSYKEY)); return FD_OK; }
    long long ttl;
    int type, expired;
    FD_TRY(fd_restore_prepare(c->argv, &o, c->now_ms, NULL, NULL, &type, &ttl, &expired, c->out, &replied));
    if (replied) return FD_OK;
    const resp_arg *pl = &c->argv[3];
    if (m.found) {                     /* REPLACE, or an expired record */
        FD_TRY(kv_delete(c, &k, &m));
        memset(&m, 0, sizeof m);
    }
    if (expired) { FD_OUT(resp_add_status(c->out, "OK")); return FD_OK; }
    if (type == FD_RDB_STREAM) {
        FD_TRY(kv_stream_restore(c, &c->argv[1], pl->ptr, pl->len));
        if (ttl) {
            FD_TRY(kv_lookup(c, &k, &m));
            FD_TRY(kv_set_expire(c, &k, &m, ttl));
        }
        FD_OUT(resp_add_status(c->out, "OK"));
        return FD_OK;
    }
    rst r = { .c = c, .k = &k, .m = &m, .expire = ttl };
    int s = fd_rdb_load(pl->ptr, pl->len, &type, restore_item, &r);
    if (s == -1) s = FD_E_CORRUPT;
    if (s != FD_OK) return s;
    if (type != FD_RDB_STRING) {
        FD_TRY(kv_coll_save(c, &k, &m));
        if (ttl) FD_TRY(kv_set_expire(c, &k, &m, ttl));
    }
    KV_NOTIFY_ARG(c, GENERIC, "restore", 1);
    FD_OUT(resp_add_status(c->out, "OK"));
    return FD_OK;
}
