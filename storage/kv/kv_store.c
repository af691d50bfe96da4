/* kv_store.c — the record-level operations of the Redis-types layer:
 * metadata lookup with lazy expiry, string writes, deletes with the garbage
 * queue, the expiry index, the counter records, and the active expiry /
 * reclamation cycle run by cron. See kv.h for the layout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../clock.h"
#include "kv.h"

static const uint8_t ck_keys[]    = { KV_PFX_COUNTER, 'k', 'e', 'y', 's' };
static const uint8_t ck_expires[] = { KV_PFX_COUNTER, 'e', 'x', 'p', 'i', 'r', 'e', 's' };
static const uint8_t ck_version[] = { KV_PFX_COUNTER, 'v', 'e', 'r', 's', 'i', 'o', 'n' };
static const uint8_t ck_format[]  = { KV_PFX_COUNTER, 'f', 'o', 'r', 'm', 'a', 't' };

/* ---------------------------------------------------------------- store */

static int read_counter(const kv_driver *d, void *txn, const uint8_t *k, size_t kl, uint64_t *out)
{
    const void *v; size_t vl;
    int s = d->get(txn, k, kl, &v, &vl);
    if (s == FD_NOTFOUND) { *out = 0; return FD_OK; }
    if (s != FD_OK) return s;
    if (vl != 8) return FD_E_CORRUPT;
    *out = kv_get_u64(v);
    return FD_OK;
}

int kv_store_init(kv_store *st, const kv_driver *drv, void *db, char *err, size_t errlen)
{
    memset(st, 0, sizeof *st);
    st->drv = drv;
    st->db = db;
    st->cursors = calloc(KV_SCAN_SLOTS, sizeof *st->cursors);
    if (!st->cursors) { snprintf(err, errlen, "out of memory"); return FD_E_NOMEM; }
    st->next_cursor = 1;
    st->rng = 0x9e3779b97f4a7c15ULL ^ (uint64_t)time(NULL);

    void *txn;
    uint64_t format = 0;
    int s = drv->begin(db, NULL, &txn);
    if (s == FD_OK) {
        s = read_counter(drv, txn, ck_format, sizeof ck_format, &format);
        if (s == FD_OK) s = read_counter(drv, txn, ck_keys, sizeof ck_keys, &st->keys);
        if (s == FD_OK) s = read_counter(drv, txn, ck_expires, sizeof ck_expires, &st->expires);
        if (s == FD_OK) s = read_counter(drv, txn, ck_version, sizeof ck_version, &st->version);
        if (s == FD_OK && format == 0) {        /* a new store: stamp the format */
            uint8_t v[8];
            kv_put_u64(v, KV_FORMAT);
            s = drv->put(txn, ck_format, sizeof ck_format, v, 8);
            if (s == FD_OK) s = drv->commit(txn);
            else drv->abort(txn);
            format = KV_FORMAT;
        } else {
            drv->abort(txn);
        }
    }
    if (s == FD_OK && format != KV_FORMAT) {
        snprintf(err, errlen, "the data were written in storage format %llu; this frontdoor reads format %d",
                 (unsigned long long)format, KV_FORMAT);
        s = FD_E_CORRUPT;
    } else if (s != FD_OK) {
        snprintf(err, errlen, "cannot read the store's counters: %s", fd_strerror(s));
    }
    if (s != FD_OK) {
        free(st->cursors);
        st->cursors = NULL;
    }
    return s;
}

void kv_store_free(kv_store *st)
{
    if (st->txn) { st->drv->abort(st->txn); st->txn = NULL; }
    free(st->buf);
    free(st->cursors);
    fd_events_free(&st->events);
    st->buf = NULL;
    st->cursors = NULL;
    st->buf_cap = 0;
}

char *kv_scratch(kv_store *st, size_t n)
{
    if (n <= st->buf_cap) return st->buf;
    size_t cap = st->buf_cap ? st->buf_cap : 4096;
    while (cap < n) cap = cap * 2 > cap ? cap * 2 : n;
    char *p = realloc(st->buf, cap);
    if (!p) return NULL;
    st->buf = p;
    st->buf_cap = cap;
    return p;
}

int kv_store_flush_counters(kv_store *st, void *txn)
{
    uint8_t v[8];
    int s;
    kv_put_u64(v, st->keys + (uint64_t)st->t_keys);
    if ((s = st->drv->put(txn, ck_keys, sizeof ck_keys, v, 8)) != FD_OK) return s;
    kv_put_u64(v, st->expires + (uint64_t)st->t_expires);
    if ((s = st->drv->put(txn, ck_expires, sizeof ck_expires, v, 8)) != FD_OK) return s;
    kv_put_u64(v, st->version);
    if ((s = st->drv->put(txn, ck_version, sizeof ck_version, v, 8)) != FD_OK) return s;
    if (st->t_cleared) {            /* FLUSHDB wiped the format stamp too */
        kv_put_u64(v, KV_FORMAT);
        s = st->drv->put(txn, ck_format, sizeof ck_format, v, 8);
    }
    return s;
}

uint64_t kv_new_version(kv_store *st)
{
    st->t_dirty = 1;
    return ++st->version;
}

/* ---------------------------------------------------------------- records */

void kv_key_init(kv_key *k, const void *key, size_t len)
{
    k->key = key;
    k->klen = len;
    k->mlen = kv_enc_meta_key(k->mkey, key, len);
}

int kv_lookup(kv_ctx *c, const kv_key *k, kv_meta *m)
{
    const void *v; size_t vl;
    int s = c->drv->get(c->txn, k->mkey, k->mlen, &v, &vl);
    if (s == FD_NOTFOUND) {
        memset(m, 0, sizeof *m);
        if (c->read && k->key) KV_NOTIFY(c, KEY_MISS, "keymiss", k->key, k->klen);
        return FD_OK;
    }
    if (s != FD_OK) return s;
    if ((s = kv_meta_parse(v, vl, m)) != FD_OK) return s;
    /* A long key shares its record only with a 128-bit hash collision: refuse
     * to read or overwrite another key's data rather than mix them up. */
    if (k->key && m->fullkey &&
        (m->fullkey_len != k->klen || memcmp(m->fullkey, k->key, k->klen) != 0))
        return FD_E_CORRUPT;
    if (m->expire && m->expire <= c->now_ms) m->live = 0;
    if (!m->live && c->read && k->key) KV_NOTIFY(c, KEY_MISS, "keymiss", k->key, k->klen);
    return FD_OK;
}

int kv_drop(kv_ctx *c, const void *k, size_t kl)
{
    if (c->drv->drop) return c->drv->drop(c->txn, k, kl);
    int s = c->drv->del(c->txn, k, kl);
    return s == FD_NOTFOUND ? FD_OK : s;
}

/* A key with an expiry has its entry in the expiry index. */
static int del_expire_entry(kv_ctx *c, const kv_key *k, int64_t expire)
{
    uint8_t ek[KV_EKEY_MAX];
    size_t el = kv_enc_expire_key(ek, expire, KV_KEY_ENC(k), KV_KEY_ELEN(k));
    return kv_drop(c, ek, el);
}

static int put_expire_entry(kv_ctx *c, const kv_key *k, int64_t expire)
{
    uint8_t ek[KV_EKEY_MAX];
    size_t el = kv_enc_expire_key(ek, expire, KV_KEY_ENC(k), KV_KEY_ELEN(k));
    return c->drv->put(c->txn, ek, el, "", 0);
}

/* Queue the elements of a collection version for reclamation by cron:
 * 'G' + version -> the element prefix. O(1) whatever the collection size. */
static int drop_collection(kv_ctx *c, const kv_key *k, const kv_meta *m)
{
    uint8_t gk[9], pfx[KV_SUBPFX_MAX];
    gk[0] = KV_PFX_GARBAGE;
    kv_put_u64(gk + 1, m->version);
    size_t pl = kv_enc_sub_prefix(pfx, KV_KEY_ENC(k), KV_KEY_ELEN(k), m->version);
    return c->drv->put(c->txn, gk, 9, pfx, pl);
}

int kv_delete(kv_ctx *c, const kv_key *k, const kv_meta *m)
{
    int s = FD_OK;
    if (m->type != KV_T_STRING && (s = drop_collection(c, k, m)) != FD_OK) return s;
    if (m->expire) {
        if ((s = del_expire_entry(c, k, m->expire)) != FD_OK) return s;
        c->d_expires--;
    }
    s = kv_drop(c, k->mkey, k->mlen);             /* m was read from it */
    if (s == FD_OK) c->d_keys--;
    return s;
}

/* Bytes of the metadata header for k: flags, expiry, [full key]. */
static size_t meta_hdr_len(const kv_key *k)
{
    return KV_META_HDR + (k->klen > KV_KEY_INLINE ? 4 + k->klen : 0);
}

static uint8_t *meta_hdr_write(uint8_t *p, const kv_key *k, int type, int64_t expire)
{
    p[0] = (uint8_t)type | (k->klen > KV_KEY_INLINE ? KV_F_LONGKEY : 0);
    kv_put_u64(p + 1, (uint64_t)expire);
    p += KV_META_HDR;
    if (k->klen > KV_KEY_INLINE) {
        kv_put_u32(p, (uint32_t)k->klen);
        memcpy(p + 4, k->key, k->klen);
        p += 4 + k->klen;
    }
    return p;
}

/* Keep the expiry index and counters right when k goes from `old` to a
 * record with expiry `expire`. */
static int expiry_transition(kv_ctx *c, const kv_key *k, const kv_meta *old, int64_t expire)
{
    int s;
    int64_t oe = old->found ? old->expire : 0;
    if (oe == expire) return FD_OK;
    if (oe && (s = del_expire_entry(c, k, oe)) != FD_OK) return s;
    if (expire && (s = put_expire_entry(c, k, expire)) != FD_OK) return s;
    c->d_expires += (expire != 0) - (oe != 0);
    return FD_OK;
}

int kv_write_string(kv_ctx *c, const kv_key *k, const kv_meta *old, int64_t expire,
                    const void *a, size_t al, const void *b, size_t bl)
{
    int s;
    if (old->found && old->type != KV_T_STRING && (s = drop_collection(c, k, old)) != FD_OK)
        return s;
    if ((s = expiry_transition(c, k, old, expire)) != FD_OK) return s;
    size_t hl = meta_hdr_len(k);
    void *dst;
    if ((s = c->drv->reserve(c->txn, k->mkey, k->mlen, hl + al + bl, &dst)) != FD_OK) return s;
    uint8_t *p = meta_hdr_write(dst, k, KV_T_STRING, expire);
    if (al) memcpy(p, a, al);
    if (bl) memcpy(p + al, b, bl);
    if (!old->found) c->d_keys++;
    if (!old->live && !c->overwrite) KV_NOTIFY(c, NEW, "new", k->key, k->klen);
    return FD_OK;
}

int kv_write_meta(kv_ctx *c, const kv_key *k, kv_meta *m, int type, const void *body, size_t bl)
{
    size_t hl = meta_hdr_len(k);
    void *dst;
    int s = c->drv->reserve(c->txn, k->mkey, k->mlen, hl + bl, &dst);
    if (s != FD_OK) return s;
    memcpy(meta_hdr_write(dst, k, type, m->expire), body, bl);
    if (!m->found) {
        c->d_keys++;
        m->found = 1;
        if (!c->overwrite) KV_NOTIFY(c, NEW, "new", k->key, k->klen);
    }
    return FD_OK;
}

int kv_set_expire(kv_ctx *c, const kv_key *k, const kv_meta *m, int64_t expire)
{
    const void *v; size_t vl;
    int s = c->drv->get(c->txn, k->mkey, k->mlen, &v, &vl);
    if (s != FD_OK) return s == FD_NOTFOUND ? FD_E_INTERNAL : s;
    /* The value lives in driver memory that the next write may reuse. */
    char *copy = kv_scratch(c->st, vl);
    if (!copy) return FD_E_NOMEM;
    memcpy(copy, v, vl);
    kv_put_u64((uint8_t *)copy + 1, (uint64_t)expire);
    if ((s = expiry_transition(c, k, m, expire)) != FD_OK) return s;
    return c->drv->put(c->txn, k->mkey, k->mlen, copy, vl);
}

int kv_copy_prefix(kv_ctx *c, const uint8_t *from, size_t flen, const uint8_t *to, size_t tlen)
{
    /* Copy in batches: collect under the cursor into the scratch buffer as
     * [u32 kl][key][u32 vl][val]..., close it, then write (no write while a
     * cursor walks the same map, which not every engine tolerates). */
    uint8_t seek[600];
    size_t seekl = flen;
    int skip_equal = 0;
    if (flen > sizeof seek) return FD_E_INTERNAL;
    memcpy(seek, from, flen);
    for (;;) {
        kv_iter *it;
        size_t used = 0;
        int s = c->drv->iter_open(c->txn, &it);
        if (s != FD_OK) return s;
        s = c->drv->seek(it, seek, seekl);
        while (s == FD_OK) {
            const void *kp, *vp; size_t kl, vl;
            if ((s = c->drv->cur(it, &kp, &kl, &vp, &vl)) != FD_OK) break;
            if (kl < flen || memcmp(kp, from, flen) != 0) { s = FD_NOTFOUND; break; }
            if (skip_equal && kl == seekl && memcmp(kp, seek, kl) == 0) { s = c->drv->next(it); continue; }
            char *b = kv_scratch(c->st, used + 8 + kl + vl);
            if (!b) { s = FD_E_NOMEM; break; }
            kv_put_u32((uint8_t *)b + used, (uint32_t)kl);
            memcpy(b + used + 4, kp, kl);
            kv_put_u32((uint8_t *)b + used + 4 + kl, (uint32_t)vl);
            memcpy(b + used + 8 + kl, vp, vl);
            used += 8 + kl + vl;
            if (used > (1u << 20)) break;          /* s == FD_OK: more to come */
            s = c->drv->next(it);
        }
        c->drv->iter_close(it);
        if (s != FD_OK && s != FD_NOTFOUND) return s;
        int more = (s == FD_OK);
        const uint8_t *b = (const uint8_t *)c->st->buf;
        for (size_t off = 0; off < used;) {
            uint32_t kl = kv_get_u32(b + off);
            const uint8_t *kp = b + off + 4;
            uint32_t vl = kv_get_u32(b + off + 4 + kl);
            uint8_t nk[600];
            if (kl > sizeof seek || tlen + (kl - flen) > sizeof nk) return FD_E_INTERNAL;
            memcpy(nk, to, tlen);
            memcpy(nk + tlen, kp + flen, kl - flen);
            if ((s = c->drv->put(c->txn, nk, tlen + kl - flen, b + off + 8 + kl, vl)) != FD_OK) return s;
            memcpy(seek, kp, kl);
            seekl = kl;
            off += 8 + kl + vl;
        }
        skip_equal = 1;
        if (!more || used == 0) return FD_OK;
    }
}

/* ---------------------------------------------------------------- cron */

#define KV_CRON_BATCH 64

/* Expire up to `max` keys whose expiry index entry is <= now. */
static int expire_batch(kv_ctx *c, int max, int *done)
{
    kv_store *st = c->st;
    const kv_driver *d = st->drv;
    void *txn = c->txn;
    int64_t now_ms = c->now_ms;
    uint8_t ekeys[KV_CRON_BATCH][KV_EKEY_MAX];
    size_t elens[KV_CRON_BATCH];
    int n = 0;
    kv_iter *it;
    int s = d->iter_open(txn, &it);
    if (s != FD_OK) return s;
    uint8_t start = KV_PFX_EXPIRE;
    s = d->seek(it, &start, 1);
    if (max > KV_CRON_BATCH) max = KV_CRON_BATCH;
    while (s == FD_OK && n < max) {
        const void *kp, *vp; size_t kl, vl;
        if ((s = d->cur(it, &kp, &kl, &vp, &vl)) != FD_OK) break;
        const uint8_t *k = kp;
        if (kl < 9 || k[0] != KV_PFX_EXPIRE || kl > KV_EKEY_MAX) break;
        if ((int64_t)kv_get_u64(k + 1) > now_ms) break;
        memcpy(ekeys[n], k, kl);
        elens[n++] = kl;
        s = d->next(it);
    }
    d->iter_close(it);
    if (s != FD_OK && s != FD_NOTFOUND) return s;

    for (int i = 0; i < n; i++) {
        /* rebuild the key from the encoded form: 'M' + enc */
        kv_key k;
        k.key = NULL;
        k.mlen = 1 + elens[i] - 9;
        k.mkey[0] = KV_PFX_META;
        memcpy(k.mkey + 1, ekeys[i] + 9, elens[i] - 9);
        k.klen = k.mlen - 1 == KV_KEY_HASHED ? KV_KEY_HASHED : k.mlen - 1;
        kv_meta m;
        if ((s = kv_lookup(c, &k, &m)) != FD_OK) return s;
        int64_t when = (int64_t)kv_get_u64(ekeys[i] + 1);
        if (m.found && m.expire == when) {
            if ((s = kv_delete(c, &k, &m)) != FD_OK) return s;
            st->expired_keys++;
            if (m.fullkey) KV_NOTIFY(c, EXPIRED, "expired", m.fullkey, m.fullkey_len);
            else KV_NOTIFY(c, EXPIRED, "expired", k.mkey + 1, k.mlen - 1);
        } else {
            /* stale index entry (should not happen): drop it */
            s = d->del(txn, ekeys[i], elens[i]);
            if (s != FD_OK && s != FD_NOTFOUND) return s;
        }
    }
    *done = n;
    return FD_OK;
}

/* Delete up to `max` element records of the first garbage queue entry;
 * the entry goes when its prefix is empty. */
static int reclaim_batch(kv_store *st, void *txn, int max, int *done)
{
    const kv_driver *d = st->drv;
    uint8_t gk[9], pfx[KV_SUBPFX_MAX];
    size_t pl = 0;
    uint8_t keys[KV_CRON_BATCH][520];
    size_t lens[KV_CRON_BATCH];
    int n = 0, found = 0;
    kv_iter *it;
    int s = d->iter_open(txn, &it);
    if (s != FD_OK) return s;
    uint8_t start = KV_PFX_GARBAGE;
    s = d->seek(it, &start, 1);
    if (s == FD_OK) {
        const void *kp, *vp; size_t kl, vl;
        if ((s = d->cur(it, &kp, &kl, &vp, &vl)) == FD_OK && kl == 9 &&
            ((const uint8_t *)kp)[0] == KV_PFX_GARBAGE && vl <= sizeof pfx) {
            memcpy(gk, kp, 9);
            memcpy(pfx, vp, vl);
            pl = vl;
            found = 1;
        }
    }
    if (found) {
        if (max > KV_CRON_BATCH) max = KV_CRON_BATCH;
        s = d->seek(it, pfx, pl);
        while (s == FD_OK && n < max) {
            const void *kp, *vp; size_t kl, vl;
            if ((s = d->cur(it, &kp, &kl, &vp, &vl)) != FD_OK) break;
            if (kl < pl || kl > sizeof keys[0] || memcmp(kp, pfx, pl) != 0) break;
            memcpy(keys[n], kp, kl);
            lens[n++] = kl;
            s = d->next(it);
        }
    }
    d->iter_close(it);
    if (s != FD_OK && s != FD_NOTFOUND) return s;
    if (!found) { *done = 0; return FD_OK; }
    for (int i = 0; i < n; i++)
        if ((s = d->del(txn, keys[i], lens[i])) != FD_OK && s != FD_NOTFOUND) return s;
    if (n < max && (s = d->del(txn, gk, 9)) != FD_OK && s != FD_NOTFOUND) return s;
    *done = n ? n : 1;
    return FD_OK;
}

int kv_expire_keys(kv_ctx *c, const struct fd_command *cmd)
{
    int pos[KV_LAZY_KEYS];
    int n = fd_command_keys(cmd, c->argc, c->argv, pos, KV_LAZY_KEYS);
    int read = c->read;
    c->read = 0;                              /* these lookups are not the command's */
    int s = FD_OK;
    for (int i = 0; i < n && s == FD_OK; i++) {
        kv_key k; kv_meta m;
        kv_key_init(&k, c->argv[pos[i]].ptr, c->argv[pos[i]].len);
        if ((s = kv_lookup(c, &k, &m)) != FD_OK || !m.found || m.live) continue;
        if ((s = kv_delete(c, &k, &m)) != FD_OK) break;
        c->st->expired_keys++;
        KV_NOTIFY(c, EXPIRED, "expired", k.key, k.klen);
    }
    c->read = read;
    return s;
}

int kv_expire_cycle(kv_ctx *c, int max_keys, int64_t budget_us, int *done)
{
    int64_t t0 = fd_mono_us();
    int total = 0, s, n;
    *done = 0;
    do {
        if ((s = expire_batch(c, max_keys - total, &n)) != FD_OK) return s;
        total += n;
        *done = total;
    } while (n == KV_CRON_BATCH && total < max_keys && fd_mono_us() - t0 < budget_us);
    int budget = max_keys;
    while (budget > 0 && fd_mono_us() - t0 < budget_us) {
        if ((s = reclaim_batch(c->st, c->txn, budget, &n)) != FD_OK) return s;
        if (n == 0) break;
        budget -= n;
    }
    return FD_OK;
}

/* ---------------------------------------------------------------- collections */

int kv_coll_lookup(kv_ctx *c, kv_key *k, kv_meta *m, const resp_arg *key, int type)
{
    kv_key_init(k, key->ptr, key->len);
    int s = kv_lookup(c, k, m);
    if (s != FD_OK) return s;
    if (m->live && m->type != type) return FD_E_WRONGTYPE;
    return FD_OK;
}

int kv_coll_new(kv_ctx *c, const kv_key *k, kv_meta *m, int type)
{
    if (m->found) {                 /* an expired record: replace it */
        int s = kv_delete(c, k, m);
        if (s != FD_OK) return s;
    }
    memset(m, 0, sizeof *m);
    m->live = 1;
    m->type = type;
    m->version = kv_new_version(c->st);
    if (type == KV_T_LIST) {
        m->head = KV_LIST_SEQ_START;
        m->tail = KV_LIST_SEQ_START - 1;
    }
    return FD_OK;
}

int kv_coll_save(kv_ctx *c, const kv_key *k, kv_meta *m)
{
    int s;
    if (m->size == 0) {
        if (!m->found) return FD_OK;
        if (m->expire) {
            if ((s = del_expire_entry(c, k, m->expire)) != FD_OK) return s;
            c->d_expires--;
        }
        if ((s = kv_drop(c, k->mkey, k->mlen)) != FD_OK) return s;
        c->d_keys--;
        m->found = 0;
        m->live = 0;
        return FD_OK;
    }
    uint8_t buf[KV_META_HDR + 32];
    size_t hl = meta_hdr_len(k), bl = m->type == KV_T_LIST || (m->type == KV_T_ZSET && (m->head || m->tail)) ? 32 : 16;
    void *dst;
    if ((s = c->drv->reserve(c->txn, k->mkey, k->mlen, hl + bl, &dst)) != FD_OK) return s;
    uint8_t *p = meta_hdr_write(dst, k, m->type, m->expire);
    kv_put_u64(buf, m->version);
    kv_put_u64(buf + 8, m->size);
    kv_put_u64(buf + 16, m->head);
    kv_put_u64(buf + 24, m->tail);
    memcpy(p, buf, bl);
    if (!m->found) {
        c->d_keys++;
        m->found = 1;
        if (!c->overwrite) KV_NOTIFY(c, NEW, "new", k->key, k->klen);
    }
    return FD_OK;
}

size_t kv_elem_prefix(uint8_t *out, const kv_key *k, const kv_meta *m, int tag)
{
    size_t n = kv_enc_sub_prefix(out, KV_KEY_ENC(k), KV_KEY_ELEN(k), m->version);
    out[n++] = (uint8_t)tag;
    return n;
}

size_t kv_elem_key(uint8_t *out, const uint8_t *pfx, size_t pl, const void *sub, size_t sl)
{
    if (out != pfx) memmove(out, pfx, pl);
    return pl + kv_enc_key(out + pl, sub, sl);
}

int kv_elem_get(kv_ctx *c, const uint8_t *ek, size_t el, const void *f, size_t fl,
                const void **v, size_t *vl)
{
    int s = c->drv->get(c->txn, ek, el, v, vl);
    if (s != FD_OK || fl <= KV_KEY_INLINE) return s;
    const uint8_t *p = *v;
    if (*vl < 4) return FD_E_CORRUPT;
    uint32_t n = kv_get_u32(p);
    if (*vl - 4 < n) return FD_E_CORRUPT;
    if (n != fl || memcmp(p + 4, f, fl) != 0) return FD_E_CORRUPT;   /* 128-bit collision */
    *v = p + 4 + n;
    *vl -= 4 + n;
    return FD_OK;
}

int kv_elem_put(kv_ctx *c, const uint8_t *ek, size_t el, const void *f, size_t fl,
                const void *v, size_t vl)
{
    if (fl <= KV_KEY_INLINE) return c->drv->put(c->txn, ek, el, vl ? v : "", vl);
    void *dst;
    int s = c->drv->reserve(c->txn, ek, el, 4 + fl + vl, &dst);
    if (s != FD_OK) return s;
    uint8_t *p = dst;
    kv_put_u32(p, (uint32_t)fl);
    memcpy(p + 4, f, fl);
    if (vl) memcpy(p + 4 + fl, v, vl);
    return FD_OK;
}

int kv_elem_decode(const void *k, size_t kl, size_t pl, const void *v, size_t vl,
                   const char **sub, size_t *sl, const char **val, size_t *vall)
{
    if (kl < pl) return FD_E_CORRUPT;
    if (kl - pl == KV_KEY_HASHED) {
        const uint8_t *p = v;
        if (vl < 4) return FD_E_CORRUPT;
        uint32_t n = kv_get_u32(p);
        if (vl - 4 < n) return FD_E_CORRUPT;
        *sub = (const char *)p + 4;
        *sl = n;
        *val = (const char *)p + 4 + n;
        *vall = vl - 4 - n;
    } else {
        *sub = (const char *)k + pl;
        *sl = kl - pl;
        *val = v;
        *vall = vl;
    }
    return FD_OK;
}

static int range_cur(kv_ctx *c, kv_iter *it, const uint8_t *pfx, size_t pl,
                     const void **k, size_t *kl, const void **v, size_t *vl)
{
    int s = c->drv->cur(it, k, kl, v, vl);
    if (s != FD_OK) return s;
    if (*kl < pl || memcmp(*k, pfx, pl) != 0) return FD_NOTFOUND;
    return FD_OK;
}

int kv_range_seek(kv_ctx *c, kv_iter *it, const uint8_t *pfx, size_t pl,
                  const uint8_t *from, size_t fl, int rev,
                  const void **k, size_t *kl, const void **v, size_t *vl)
{
    int s;
    if (!rev) {
        s = c->drv->seek(it, from, fl);
    } else {
        /* longer than any element key that starts with `from`, and within
         * LMDB's 511-byte key limit */
        uint8_t key[KV_ELEM_MAX + 2];
        size_t n = fl <= KV_ELEM_MAX ? KV_ELEM_MAX + 1 - fl : 1;
        if (fl + n > sizeof key) return FD_E_INTERNAL;
        memcpy(key, from, fl);
        memset(key + fl, 0xff, n);
        s = c->drv->seek_le(it, key, fl + n);
    }
    if (s != FD_OK) return s;
    return range_cur(c, it, pfx, pl, k, kl, v, vl);
}

int kv_range_step(kv_ctx *c, kv_iter *it, const uint8_t *pfx, size_t pl, int rev,
                  const void **k, size_t *kl, const void **v, size_t *vl)
{
    int s = rev ? c->drv->prev(it) : c->drv->next(it);
    if (s != FD_OK) return s;
    return range_cur(c, it, pfx, pl, k, kl, v, vl);
}

uint64_t kv_rand(kv_store *st)
{
    uint64_t x = st->rng;      /* xorshift64* */
    x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
    st->rng = x;
    return x * 0x2545f4914f6cdd1dULL;
}

int kv_list_add(kv_list *l, const void *a, size_t al, const void *b, size_t bl)
{
    size_t need = l->len + 4 + al + bl;
    if (need > l->cap) {
        size_t cap = l->cap ? l->cap : 1024;
        while (cap < need) cap *= 2;
        char *p = realloc(l->p, cap);
        if (!p) return FD_E_NOMEM;
        l->p = p;
        l->cap = cap;
    }
    kv_put_u32((uint8_t *)l->p + l->len, (uint32_t)(al + bl));
    if (al) memcpy(l->p + l->len + 4, a, al);
    if (bl) memcpy(l->p + l->len + 4 + al, b, bl);
    l->len = need;
    l->n++;
    return FD_OK;
}

int kv_list_next(const kv_list *l, size_t *off, const char **p, size_t *n)
{
    if (*off >= l->len) return 0;
    *n = kv_get_u32((const uint8_t *)l->p + *off);
    *p = l->p + *off + 4;
    *off += 4 + *n;
    return 1;
}

void kv_list_free(kv_list *l)
{
    free(l->p);
    memset(l, 0, sizeof *l);
}

int kv_cursor_resume(const kv_store *st, uint64_t cursor, uint8_t *start, size_t *len)
{
    if (!cursor) return 0;
    const kv_cursor *e = &st->cursors[cursor % KV_SCAN_SLOTS];
    if (e->id != cursor) return 0;
    memcpy(start + *len, e->enc, e->len);
    *len += e->len;
    return 1;
}

uint64_t kv_cursor_remember(kv_store *st, const uint8_t *enc, size_t len)
{
    uint64_t next = st->next_cursor++;
    if (st->next_cursor == 0) st->next_cursor = 1;
    kv_cursor *e = &st->cursors[next % KV_SCAN_SLOTS];
    e->id = next;
    e->len = (uint8_t)len;
    memcpy(e->enc, enc, len);
    return next;
}
