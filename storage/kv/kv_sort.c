/* kv_sort.c — the generic commands SORT, SORT_RO, COPY, OBJECT and MEMORY
 * over the ordered-KV layer. SORT's rules are storage/value/sort.h's; this
 * file loads the collection, fetches the BY/GET keys and stores the result.
 *
 * Costs: SORT reads the whole collection (O(n) records) plus one read per
 * element and pattern; COPY of a collection copies every element record
 * under a fresh version (O(n), as RENAME); OBJECT is one metadata read;
 * MEMORY USAGE reads the metadata and, for a collection, up to SAMPLES
 * element records (docs/encoding.md, "Introspection"). */
#include <stdlib.h>
#include <string.h>
#include "kv.h"
#include "../cmdargs.h"
#include "../value/sort.h"
#include "../value/introspect.h"
#include "../value/stream.h"

/* ---------------------------------------------------------------- collections */

int kv_coll_collect(kv_ctx *c, const kv_key *k, const kv_meta *m, long long max, kv_list *out)
{
    int tag, skip = 0;
    switch (m->type) {
    case KV_T_LIST: tag = KV_TAG_LIST; break;
    case KV_T_SET:  tag = KV_TAG_SET; break;
    case KV_T_ZSET: tag = KV_TAG_ZSCORE; skip = 8; break;
    case KV_T_HASH: tag = KV_TAG_HASH; break;
    default: return FD_OK;
    }
    uint8_t pfx[KV_ELEM_MAX];
    size_t pl = kv_elem_prefix(pfx, k, m, tag);
    kv_iter *it;
    FD_TRY(c->drv->iter_open(c->txn, &it));
    const void *kp, *vp; size_t kl, vl;
    long long got = 0;
    int s = kv_range_seek(c, it, pfx, pl, pfx, pl, 0, &kp, &kl, &vp, &vl);
    while (s == FD_OK && (max < 0 || got < max)) {
        if (m->type == KV_T_LIST) {
            s = kv_list_add(out, vp, vl, NULL, 0);
        } else {
            const char *sub, *val; size_t sl, vall;
            if ((s = kv_elem_decode(kp, kl, pl + (size_t)skip, vp, vl, &sub, &sl, &val, &vall)) != FD_OK) break;
            s = kv_list_add(out, sub, sl, NULL, 0);
            if (s == FD_OK && m->type == KV_T_HASH) s = kv_list_add(out, val, vall, NULL, 0);
        }
        got++;
        if (s == FD_OK) s = kv_range_step(c, it, pfx, pl, 0, &kp, &kl, &vp, &vl);
    }
    c->drv->iter_close(it);
    return s == FD_NOTFOUND ? FD_OK : s;
}

/* ---------------------------------------------------------------- SORT */

/* What SORT's load holds: the elements' memory; fetch's ud. */
typedef struct sort_hold { kv_ctx *c; kv_list L; } sort_hold;

/* fd_sort_fetch over the store: a string, or a field of a hash. */
static int sort_fetch(void *ud, const char *key, size_t kl, const char *field, size_t fl,
                      const char **v, size_t *vl)
{
    kv_ctx *c = ((sort_hold *)ud)->c;
    kv_key k; kv_meta m;
    kv_key_init(&k, key, kl);
    int s = kv_lookup(c, &k, &m);
    if (s != FD_OK) return -s;
    if (!m.live) return 0;
    if (!field) {
        if (m.type != KV_T_STRING) return 0;
        *v = m.val;
        *vl = m.vlen;
        return 1;
    }
    if (m.type != KV_T_HASH) return 0;
    uint8_t ek[KV_ELEM_MAX];
    size_t pl = kv_elem_prefix(ek, &k, &m, KV_TAG_HASH);
    size_t el = kv_elem_key(ek, ek, pl, field, fl);
    const void *fv;
    s = kv_elem_get(c, ek, el, field, fl, &fv, vl);
    if (s == FD_NOTFOUND) return 0;
    if (s != FD_OK) return -s;
    *v = fv;
    return 1;
}

/* Replace key `dst` by a list of the items of r (delete it when r is empty). */
static int store_list(void *ud, const resp_arg *dst, const fd_sort_result *r)
{
    kv_ctx *c = ud;
    kv_key k; kv_meta m;
    kv_key_init(&k, dst->ptr, dst->len);
    FD_TRY(kv_lookup(c, &k, &m));
    int was = m.live;
    if (m.found) FD_TRY(kv_delete(c, &k, &m));
    if (!r->n) {
        if (was) KV_NOTIFY(c, GENERIC, "del", dst->ptr, dst->len);
        return FD_OK;
    }
    memset(&m, 0, sizeof m);
    FD_TRY(kv_coll_new(c, &k, &m, KV_T_LIST));
    uint8_t ek[KV_ELEM_MAX];
    size_t pl = kv_elem_prefix(ek, &k, &m, KV_TAG_LIST);
    size_t off = 0;
    const char *p; size_t l;
    while (fd_sort_result_next(r, &off, &p, &l)) {
        m.tail++;
        kv_put_u64(ek + pl, m.tail);
        FD_TRY(c->drv->put(c->txn, ek, pl + 8, l ? p : "", l));
        m.size++;
    }
    c->overwrite = was;
    FD_TRY(kv_coll_save(c, &k, &m));
    c->overwrite = 0;
    KV_NOTIFY(c, LIST, "sortstore", dst->ptr, dst->len);
    return FD_OK;
}

/* fd_sort_io.load: the list, set or sorted set's elements */
static int sort_load(void *ud, const resp_arg *key, void **hold, int *type, fd_sort_elem **el, size_t *n)
{
    kv_ctx *c = ud;
    int ro = c->read;                     /* SORT_RO: its fetches are reads too */
    sort_hold *h = calloc(1, sizeof *h);
    if (!(*hold = h)) return FD_E_NOMEM;
    h->c = c;
    kv_key k; kv_meta m;
    kv_key_init(&k, key->ptr, key->len);
    c->read = 1;                          /* the source: lookupKeyRead (keymiss) */
    int s = kv_lookup(c, &k, &m);
    c->read = ro;
    FD_TRY(s);
    if (m.live) {
        if (m.type == KV_T_SET) *type = FD_SORT_SET;
        else if (m.type == KV_T_ZSET) *type = FD_SORT_ZSET;
        else if (m.type != KV_T_LIST) return FD_E_WRONGTYPE;
        FD_TRY(kv_coll_collect(c, &k, &m, -1, &h->L));
    }
    if (!(*el = malloc((size_t)(h->L.n ? h->L.n : 1) * sizeof **el))) return FD_E_NOMEM;
    size_t off = 0;
    const char *p; size_t l;
    *n = 0;
    while (kv_list_next(&h->L, &off, &p, &l)) { (*el)[*n].p = p; (*el)[*n].l = l; (*n)++; }
    return FD_OK;
}

static void sort_release(void *hold)
{
    kv_list_free(&((sort_hold *)hold)->L);
    free(hold);
}

static const fd_sort_io sort_io = { sort_load, sort_fetch, sort_release, store_list };

int kv_cmd_sort(kv_ctx *c)    { return fd_sort_cmd(&sort_io, c, c->argv, c->argc, 0, c->out); }
int kv_cmd_sort_ro(kv_ctx *c) { return fd_sort_cmd(&sort_io, c, c->argv, c->argc, 1, c->out); }

/* ---------------------------------------------------------------- COPY */

int kv_cmd_copy(kv_ctx *c)
{
    int replace, replied;
    FD_TRY(fd_parse_copy_opts(c->argv, c->argc, &replace, c->out, &replied));
    if (replied) return FD_OK;
    const resp_arg *sa = &c->argv[1], *da = &c->argv[2];
    kv_key sk, dk; kv_meta sm, dm;
    kv_key_init(&sk, sa->ptr, sa->len);
    c->read = 1;                          /* the source: lookupKeyRead (keymiss) */
    int s0 = kv_lookup(c, &sk, &sm);
    c->read = 0;
    FD_TRY(s0);
    if (!sm.live) { FD_OUT(resp_add_int(c->out, 0)); return FD_OK; }
    kv_key_init(&dk, da->ptr, da->len);
    FD_TRY(kv_lookup(c, &dk, &dm));
    if (dm.live && !replace) { FD_OUT(resp_add_int(c->out, 0)); return FD_OK; }
    if (sm.type == KV_T_STRING) {
        /* the value is driver memory: copy it before the first write */
        char *v = kv_scratch(c->st, sm.vlen);
        if (!v && sm.vlen) return FD_E_NOMEM;
        if (sm.vlen) memcpy(v, sm.val, sm.vlen);
        if (dm.found) { FD_TRY(kv_delete(c, &dk, &dm)); memset(&dm, 0, sizeof dm); }
        FD_TRY(kv_write_string(c, &dk, &dm, sm.expire, v, sm.vlen, NULL, 0));
    } else {
        /* a stream's metadata is its own blob (no element count for
         * kv_coll_save): kept before the first write (driver memory) */
        uint8_t sbody[8 + FD_SMETA_LEN];
        if (sm.type == KV_T_STREAM) {
            if (sm.vlen < FD_SMETA_LEN) return FD_E_CORRUPT;
            memcpy(sbody + 8, sm.val, FD_SMETA_LEN);
        }
        if (dm.found) FD_TRY(kv_delete(c, &dk, &dm));
        kv_meta nm = sm;
        nm.found = 0;
        nm.version = kv_new_version(c->st);
        uint8_t from[KV_SUBPFX_MAX], to[KV_SUBPFX_MAX];
        size_t fl = kv_enc_sub_prefix(from, KV_KEY_ENC(&sk), KV_KEY_ELEN(&sk), sm.version);
        size_t tl = kv_enc_sub_prefix(to, KV_KEY_ENC(&dk), KV_KEY_ELEN(&dk), nm.version);
        FD_TRY(kv_copy_prefix(c, from, fl, to, tl));
        if (sm.type == KV_T_STREAM) {
            kv_put_u64(sbody, nm.version);
            FD_TRY(kv_write_meta(c, &dk, &nm, KV_T_STREAM, sbody, sizeof sbody));
        } else {
            FD_TRY(kv_coll_save(c, &dk, &nm));
        }
        if (sm.expire) {
            uint8_t ek[KV_EKEY_MAX];
            size_t el = kv_enc_expire_key(ek, sm.expire, KV_KEY_ENC(&dk), KV_KEY_ELEN(&dk));
            FD_TRY(c->drv->put(c->txn, ek, el, "", 0));
            c->d_expires++;
        }
    }
    KV_NOTIFY_ARG(c, GENERIC, "copy_to", 2);
    FD_OUT(resp_add_int(c->out, 1));
    return FD_OK;
}

/* ---------------------------------------------------------------- OBJECT */

static int obj_type(int t)
{
    return t == KV_T_STRING ? FD_OBJ_STRING : t == KV_T_LIST ? FD_OBJ_LIST : t == KV_T_HASH ? FD_OBJ_HASH
         : t == KV_T_SET ? FD_OBJ_SET : FD_OBJ_ZSET;
}

int kv_cmd_object(kv_ctx *c)
{
    int sub, r = fd_object_parse(c->argv, c->argc, c->out, &sub);
    if (r) return r < 0 ? FD_E_NOMEM : FD_OK;
    kv_key k; kv_meta m;
    kv_key_init(&k, c->argv[2].ptr, c->argv[2].len);
    c->read = 0;                          /* Redis's OBJECT: LOOKUP_NONOTIFY, no keymiss */
    FD_TRY(kv_lookup(c, &k, &m));
    if (!m.live) { FD_OUT(resp_add_null(c->out)); return FD_OK; }
    FD_OUT(fd_object_reply(sub, obj_type(m.type), m.val, m.vlen, c->out));
    return FD_OK;
}

/* ---------------------------------------------------------------- MEMORY */

#define KV_RECORD_OVERHEAD 16   /* engine bytes per record (LMDB node header + page slot, rounded) */

int kv_cmd_memory(kv_ctx *c)
{
    long long samples;
    int r = fd_memory_parse(c->argv, c->argc, c->out, &samples);
    if (r) return r < 0 ? FD_E_NOMEM : FD_OK;
    kv_key k; kv_meta m;
    kv_key_init(&k, c->argv[2].ptr, c->argv[2].len);
    c->read = 0;                          /* Redis's MEMORY USAGE: LOOKUP_NONOTIFY, no keymiss */
    FD_TRY(kv_lookup(c, &k, &m));
    if (!m.live) { FD_OUT(resp_add_null(c->out)); return FD_OK; }
    const void *v; size_t vl;
    int s = c->drv->get(c->txn, k.mkey, k.mlen, &v, &vl);
    if (s != FD_OK) return s == FD_NOTFOUND ? FD_E_INTERNAL : s;
    long long bytes = (long long)(k.mlen + vl) + KV_RECORD_OVERHEAD;
    if (m.expire) bytes += 1 + 8 + (long long)KV_KEY_ELEN(&k) + KV_RECORD_OVERHEAD;
    if (m.type != KV_T_STRING && m.size) {
        /* element records: key = sub prefix + tag + sub; sample up to `samples` */
        uint8_t pfx[KV_ELEM_MAX];
        int tag = m.type == KV_T_LIST ? KV_TAG_LIST : m.type == KV_T_SET ? KV_TAG_SET
                : m.type == KV_T_HASH ? KV_TAG_HASH : KV_TAG_ZMEMBER;
        size_t pl = kv_elem_prefix(pfx, &k, &m, tag);
        kv_iter *it;
        FD_TRY(c->drv->iter_open(c->txn, &it));
        const void *kp, *vp; size_t kl, vvl;
        long long seen = 0, sum = 0, want = samples ? samples : (long long)m.size;
        s = kv_range_seek(c, it, pfx, pl, pfx, pl, 0, &kp, &kl, &vp, &vvl);
        while (s == FD_OK && seen < want) {
            sum += (long long)(kl + vvl) + KV_RECORD_OVERHEAD;
            seen++;
            s = kv_range_step(c, it, pfx, pl, 0, &kp, &kl, &vp, &vvl);
        }
        c->drv->iter_close(it);
        if (s != FD_OK && s != FD_NOTFOUND) return s;
        if (seen) {
            long long per = sum / seen;
            /* a sorted set keeps two records per member: member -> score and the score index */
            if (m.type == KV_T_ZSET) per = per * 2 + 8;
            bytes += per * (long long)m.size;
        }
    }
    FD_OUT(resp_add_int(c->out, bytes));
    return FD_OK;
}
