/* mg_dump.c — DUMP and RESTORE on the MongoDB backend, in Redis 7.0's
 * payload format (storage/value/rdb.c). The document keeps Redis's orders
 * (list, hash insertion order, sorted set), so DUMP's bytes are
 * redis-server's wherever 7.0's encoding is deterministic. RESTORE checks
 * as Redis in its order and decodes the whole payload before writing one
 * document. A stream goes through the stream engine (mg_stream_dump /
 * mg_stream_restore: entries, groups, consumers, PELs). IDLETIME and FREQ are checked, not kept (no LRU/LFU clock). */
#include <stdlib.h>
#include <string.h>
#include "mg.h"
#include "../value/rdb.h"
#include "../value/zsetops.h"

int mg_cmd_dump(mg_ctx *c)
{
    mg_meta m;
    FD_TRY(mg_lookup(c, &c->argv[1], &m, 0));
    int live = m.live, type = m.type;
    mg_meta_free(&m);
    if (!live) { FD_OUT(resp_add_null(c->out)); return FD_OK; }
    fd_rdb_buf b = { 0 };
    fd_rdb_item *items = NULL;
    int s = FD_OK;
    size_t n = 0;
    mg_list L = { 0 };
    mg_hash h = { 0 };
    mg_zset Z = { 0 };
    memset(&m, 0, sizeof m);
    switch (type) {
    case MG_T_STRING:
        if ((s = mg_lookup_string(c, &c->argv[1], &m)) != FD_OK) break;
        if (!m.live) { mg_meta_free(&m); FD_OUT(resp_add_null(c->out)); return FD_OK; }
        { fd_rdb_item it = { m.val, m.vlen, NULL, 0, 0 }; s = fd_rdb_dump(FD_RDB_STRING, &it, 1, &b); }
        goto reply;
    case MG_T_LIST: case MG_T_SET:
        if ((s = mg_array_load(c, &c->argv[1], &m, &L, type)) != FD_OK) break;
        n = L.n;
        if (!(items = calloc(n + 1, sizeof *items))) { s = FD_E_NOMEM; break; }
        for (size_t i = 0; i < n; i++) { items[i].p = L.p[i]; items[i].n = L.l[i]; }
        break;
    case MG_T_HASH:
        if ((s = mg_hash_load(c, &c->argv[1], &m, &h)) != FD_OK) break;
        n = h.n;
        if (!(items = calloc(n + 1, sizeof *items))) { s = FD_E_NOMEM; break; }
        for (size_t i = 0; i < n; i++)
            items[i] = (fd_rdb_item){ h.a[i].f, h.a[i].fl, h.a[i].v, h.a[i].vl, 0 };
        break;
    case MG_T_STREAM:
        s = mg_stream_dump(c, &c->argv[1], &b);
        if (s == FD_NOTFOUND) { s = resp_add_null(c->out) ? FD_E_NOMEM : FD_OK; goto out; }
        goto reply;
    case MG_T_ZSET:
        if ((s = mg_zset_load(c, &c->argv[1], &m, &Z)) != FD_OK) break;
        n = Z.n;
        if (!(items = calloc(n + 1, sizeof *items))) { s = FD_E_NOMEM; break; }
        for (size_t i = 0; i < n; i++) items[i] = (fd_rdb_item){ Z.a[i].m, Z.a[i].ml, NULL, 0, Z.a[i].s };
        break;
    default:
        s = FD_E_CORRUPT;
    }
    if (s == FD_OK && !n) {                 /* gone between the two reads */
        s = resp_add_null(c->out) ? FD_E_NOMEM : FD_OK;
        goto out;
    }
    if (s == FD_OK)
        s = fd_rdb_dump(type == MG_T_LIST ? FD_RDB_LIST : type == MG_T_SET ? FD_RDB_SET :
                        type == MG_T_HASH ? FD_RDB_HASH : FD_RDB_ZSET, items, n, &b);
reply:
    if (s == FD_OK && resp_add_bulk(c->out, b.p, b.len)) s = FD_E_NOMEM;
out:
    free(items);
    mg_list_free(&L);
    mg_hash_free(&h);
    mg_zset_free(&Z);
    mg_meta_free(&m);
    fd_rdb_buf_free(&b);
    return s;
}

/* the decoded elements, copied (fd_rdb_load's pointers live during a call):
 * a hash pair is two entries, field then value */
static int keep(void *ctx, int type, const fd_rdb_item *it)
{
    fd_zbuf *z = ctx;
    if (fd_zbuf_add(z, it->p, it->n, it->score)) return FD_E_NOMEM;
    if (type == FD_RDB_HASH && fd_zbuf_add(z, it->v, it->vn, 0)) return FD_E_NOMEM;
    return 0;
}

int mg_cmd_restore(mg_ctx *c)
{
    fd_restore_opts o;
    int replied;
    FD_TRY(fd_parse_restore(c->argv, c->argc, &o, c->out, &replied));
    if (replied) return FD_OK;
    const resp_arg *key = &c->argv[1];
    mg_meta m;
    FD_TRY(mg_lookup(c, key, &m, 0));
    int live = m.live, found = m.found;
    mg_meta_free(&m);
    if (!o.replace && live) { FD_OUT(resp_add_error(c->out, FD_RDB_BUSYKEY)); return FD_OK; }
    long long ttl;
    int type, expired;
    fd_zbuf z = { 0 };
    int s = fd_restore_prepare(c->argv, &o, c->now_ms, keep, &z, &type, &ttl, &expired, c->out, &replied);
    if (s != FD_OK || replied) { fd_zbuf_free(&z); return s; }
    if (expired) {          /* already expired: only the old key goes */
        s = found ? mg_delete(c, key) : FD_OK;
        fd_zbuf_free(&z);
        if (s == FD_OK && resp_add_status(c->out, "OK")) s = FD_E_NOMEM;
        return s;
    }
    if (type == FD_RDB_STREAM) {          /* the engine writes it: the old key goes first */
        fd_zbuf_free(&z);
        if (found) FD_TRY(mg_delete(c, key));
        FD_TRY(mg_stream_restore(c, key, c->argv[3].ptr, c->argv[3].len));
        if (ttl) FD_TRY(mg_set_expire(c, key, ttl));
        FD_OUT(resp_add_status(c->out, "OK"));
        return FD_OK;
    }
    mg_meta fresh;
    memset(&fresh, 0, sizeof fresh);
    fresh.found = found;
    fresh.live = 1;
    fresh.expire = ttl;
    if (type == FD_RDB_STRING) {
        s = mg_write_string(c, key, ttl, z.a[0].m, z.a[0].ml, NULL, 0);
    } else if (type == FD_RDB_LIST || type == FD_RDB_SET) {
        mg_list L = { 0 };
        if ((s = mg_list_reserve(&L, z.n)) == FD_OK) {
            for (size_t i = 0; i < z.n; i++) { L.p[i] = z.a[i].m; L.l[i] = z.a[i].ml; }
            L.n = z.n;
            s = mg_array_save(c, key, &fresh, &L, type == FD_RDB_LIST ? MG_T_LIST : MG_T_SET);
        }
        mg_list_free(&L);
    } else if (type == FD_RDB_HASH) {
        mg_hash h = { 0 };
        h.n = h.cap = z.n / 2;
        if (!(h.a = calloc(h.n + 1, sizeof *h.a))) s = FD_E_NOMEM;
        for (size_t i = 0; s == FD_OK && i < h.n; i++)
            h.a[i] = (mg_field){ z.a[2 * i].m, z.a[2 * i + 1].m, z.a[2 * i].ml, z.a[2 * i + 1].ml, NULL };
        if (s == FD_OK) s = mg_hash_save(c, key, &fresh, &h);
        mg_hash_free(&h);
    } else {
        mg_zset Z = { 0 };
        if (!(Z.a = malloc((z.n + 1) * sizeof *Z.a))) s = FD_E_NOMEM;
        for (size_t i = 0; s == FD_OK && i < z.n; i++) Z.a[i] = (mg_zent){ z.a[i].m, z.a[i].ml, z.a[i].s };
        Z.n = Z.cap = z.n;
        Z.dirty = 1;
        if (s == FD_OK) s = mg_zset_save(c, key, &fresh, &Z);
        mg_zset_free(&Z);
    }
    fd_zbuf_free(&z);
    if (s == FD_OK) MG_NOTIFY(c, GENERIC, "restore", key->ptr, key->len);
    if (s == FD_OK && resp_add_status(c->out, "OK")) s = FD_E_NOMEM;
    return s;
}
