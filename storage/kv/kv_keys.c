/* kv_keys.c — the generic key commands (DEL, EXISTS, TYPE, EXPIRE family,
 * TTL family, PERSIST, TOUCH, KEYS, SCAN, RENAME, RANDOMKEY) and the server
 * ones (DBSIZE, FLUSHDB) of KV_COMMANDS, with Redis 7.0's semantics.
 *
 * KEYS/SCAN/RANDOMKEY walk only the 'M' records. SCAN cursors: the client
 * sees an integer; the store keeps a bounded ring (KV_SCAN_SLOTS) mapping
 * each cursor number to the encoded key of the last record visited, as
 * kvrocks does. An unknown or evicted cursor restarts from the beginning
 * (the SCAN guarantee — every key present throughout is returned — holds;
 * some keys may come twice, which SCAN allows). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <limits.h>
#include "kv.h"
#include "../cmdargs.h"
#include "../clock.h"


const char *kv_type_name(int t)
{
    switch (t) {
    case KV_T_STRING: return "string";
    case KV_T_LIST:   return "list";
    case KV_T_HASH:   return "hash";
    case KV_T_SET:    return "set";
    case KV_T_ZSET:   return "zset";
    case KV_T_STREAM: return "stream";
    default:          return "none";
    }
}

/* Insert n bytes at offset mark of o (aggregate headers whose count is known
 * only after the elements were written). 0 or -1. */
static int insert_at(resp_out *o, size_t mark, const char *p, size_t n)
{
    if (resp_out_reserve(o, n)) return -1;
    memmove(o->data + mark + n, o->data + mark, o->len - mark);
    memcpy(o->data + mark, p, n);
    o->len += n;
    return 0;
}

/* The header of an array of n elements in o's protocol, inserted at mark. */
static int insert_array_header(resp_out *o, size_t mark, long long n)
{
    resp_out h;
    resp_out_init(&h, o->proto);
    int r = resp_add_array(&h, n);
    if (r == 0) r = insert_at(o, mark, h.data, h.len);
    resp_out_free(&h);
    return r;
}

/* The full name of the key of an 'M' record (k, kl) with value v. */
static int record_name(const void *k, size_t kl, const void *v, size_t vl,
                       const char **name, size_t *nl, kv_meta *m)
{
    FD_TRY(kv_meta_parse(v, vl, m));
    if (m->fullkey) { *name = m->fullkey; *nl = m->fullkey_len; }
    else { *name = (const char *)k + 1; *nl = kl - 1; }
    return FD_OK;
}

/* ---------------------------------------------------------------- KEYS / SCAN */

int kv_cmd_keys(kv_ctx *c)
{
    const resp_arg *pat = &c->argv[1];
    int all = pat->len == 1 && pat->ptr[0] == '*';
    /* literal prefix of the pattern: only records starting with it can match */
    uint8_t start[1 + KV_KEY_INLINE];
    size_t pl = 0;
    start[0] = KV_PFX_META;
    while (pl < pat->len && pl < KV_KEY_INLINE && !strchr("*?[\\", pat->ptr[pl])) {
        start[1 + pl] = (uint8_t)pat->ptr[pl];
        pl++;
    }
    size_t mark = c->out->len;
    long long n = 0;
    kv_iter *it;
    FD_TRY(c->drv->iter_open(c->txn, &it));
    int s = c->drv->seek(it, start, 1 + pl);
    while (s == FD_OK) {
        const void *kp, *vp; size_t kl, vl;
        if ((s = c->drv->cur(it, &kp, &kl, &vp, &vl)) != FD_OK) break;
        if (kl < 1 + pl || memcmp(kp, start, 1 + pl) != 0) { s = FD_NOTFOUND; break; }
        const char *name; size_t nl; kv_meta m;
        if ((s = record_name(kp, kl, vp, vl, &name, &nl, &m)) != FD_OK) break;
        if ((!m.expire || m.expire > c->now_ms) &&
            (all || resp_glob_match(pat->ptr, pat->len, name, nl, 0))) {
            if (resp_add_bulk(c->out, name, nl)) { s = FD_E_NOMEM; break; }
            n++;
        }
        s = c->drv->next(it);
    }
    c->drv->iter_close(it);
    if (s == FD_NOTFOUND) s = insert_array_header(c->out, mark, n) ? FD_E_NOMEM : FD_OK;
    if (s != FD_OK) c->out->len = mark;
    return s;
}

int kv_cmd_scan(kv_ctx *c)
{
    /* cursor: as Redis's parseScanCursorOrReply (strtoul): an optional sign,
     * then decimal digits; "-N" wraps around as strtoul does. A cursor we
     * did not hand out restarts the iteration (SCAN may repeat keys, never
     * miss one). */
    uint64_t cursor;
    int replied;
    FD_TRY(fd_scan_cursor(&c->argv[1], &cursor, c->out, &replied));
    if (replied) return FD_OK;

    long long count;
    const resp_arg *pat, *type;
    FD_TRY(fd_parse_scan_opts(c->argv, c->argc, 2, &count, &pat, &type));

    kv_store *st = c->st;
    uint8_t start[KV_MKEY_MAX];
    size_t sl = 1;
    start[0] = KV_PFX_META;
    int skip = kv_cursor_resume(st, cursor, start, &sl);

    size_t mark = c->out->len;
    long long n = 0, visited = 0;
    uint8_t last[KV_ENC_MAX];
    size_t lastl = 0;
    kv_iter *it;
    FD_TRY(c->drv->iter_open(c->txn, &it));
    int s = c->drv->seek(it, start, sl);
    while (s == FD_OK) {
        const void *kp, *vp; size_t kl, vl;
        if ((s = c->drv->cur(it, &kp, &kl, &vp, &vl)) != FD_OK) break;
        if (kl < 1 || ((const uint8_t *)kp)[0] != KV_PFX_META || kl > KV_MKEY_MAX) { s = FD_NOTFOUND; break; }
        if (skip && kl == sl && memcmp(kp, start, kl) == 0) { skip = 0; s = c->drv->next(it); continue; }
        skip = 0;
        if (visited == count) break;            /* s == FD_OK: more records follow */
        visited++;
        memcpy(last, (const uint8_t *)kp + 1, kl - 1);
        lastl = kl - 1;
        const char *name; size_t nl; kv_meta m;
        if ((s = record_name(kp, kl, vp, vl, &name, &nl, &m)) != FD_OK) break;
        if ((!m.expire || m.expire > c->now_ms) &&
            (!type || (type->len == strlen(kv_type_name(m.type)) &&
                       strncasecmp(type->ptr, kv_type_name(m.type), type->len) == 0)) &&
            (!pat || resp_glob_match(pat->ptr, pat->len, name, nl, 0))) {
            if (resp_add_bulk(c->out, name, nl)) { s = FD_E_NOMEM; break; }
            n++;
        }
        s = c->drv->next(it);
    }
    c->drv->iter_close(it);
    if (s != FD_OK && s != FD_NOTFOUND) { c->out->len = mark; return s; }

    uint64_t next = 0;
    if (s == FD_OK && lastl) next = kv_cursor_remember(st, last, lastl);   /* records left: remember where */
    /* header: *2, the cursor as a bulk string, then *n */
    resp_out h;
    char num[24];
    int nl = snprintf(num, sizeof num, "%llu", (unsigned long long)next);
    resp_out_init(&h, c->out->proto);
    int r = resp_add_array(&h, 2);
    if (!r) r = resp_add_bulk(&h, num, (size_t)nl);
    if (!r) r = resp_add_array(&h, n);
    if (!r) r = insert_at(c->out, mark, h.data, h.len);
    resp_out_free(&h);
    if (r) { c->out->len = mark; return FD_E_NOMEM; }
    return FD_OK;
}

/* ---------------------------------------------------------------- RANDOMKEY */

int kv_cmd_randomkey(kv_ctx *c)
{
    /* A uniform pick among the 'M' records (the key counter says how many:
     * kv_random_seek walks to a random rank up to KV_RANDOM_EXACT keys, an
     * estimate of bounded cost above, docs/encoding.md). An expired key is
     * skipped by picking again, as Redis does; after KV_RANDOMKEY_TRIES
     * expired picks, the next live key from the last one (wrapping once,
     * at most 1000 records). */
    enum { KV_RANDOMKEY_TRIES = 8 };
    static const uint8_t meta = KV_PFX_META;
    kv_store *st = c->st;
    uint64_t n = st->keys + (uint64_t)(st->t_keys + c->d_keys);
    size_t mark = c->out->len;
    const void *kp, *vp; size_t kl, vl;
    kv_iter *it;
    FD_TRY(c->drv->iter_open(c->txn, &it));
    int s = FD_OK, found = 0, wrapped = 0;
    for (int t = 0; t < KV_RANDOMKEY_TRIES + 1000 && !found; t++) {
        if (t < KV_RANDOMKEY_TRIES) {
            s = kv_random_seek(c, it, &meta, 1, n, &kp, &kl, &vp, &vl);
        } else {
            s = kv_range_step(c, it, &meta, 1, 0, &kp, &kl, &vp, &vl);
            if (s == FD_NOTFOUND && !wrapped++) s = kv_range_seek(c, it, &meta, 1, &meta, 1, 0, &kp, &kl, &vp, &vl);
        }
        if (s != FD_OK) break;
        const char *name; size_t nl; kv_meta m;
        if ((s = record_name(kp, kl, vp, vl, &name, &nl, &m)) != FD_OK) break;
        if (!m.expire || m.expire > c->now_ms) {
            if (resp_add_bulk(c->out, name, nl)) s = FD_E_NOMEM;
            found = 1;
        }
    }
    c->drv->iter_close(it);
    if (s != FD_OK && s != FD_NOTFOUND) { c->out->len = mark; return s; }
    if (!found) FD_OUT(resp_add_null(c->out));
    return FD_OK;
}

/* ---------------------------------------------------------------- RENAME */

static int rename_generic(kv_ctx *c, int nx)
{
    const resp_arg *sa = &c->argv[1], *da = &c->argv[2];
    kv_key sk, dk;
    kv_meta sm, dm;
    kv_key_init(&sk, sa->ptr, sa->len);
    FD_TRY(kv_lookup(c, &sk, &sm));
    if (!sm.live) return FD_E_NOKEY;
    if (sa->len == da->len && memcmp(sa->ptr, da->ptr, sa->len) == 0) {
        if (nx) FD_OUT(resp_add_int(c->out, 0));
        else FD_OUT(resp_add_status(c->out, "OK"));
        return FD_OK;
    }
    kv_key_init(&dk, da->ptr, da->len);
    FD_TRY(kv_lookup(c, &dk, &dm));
    if (nx && dm.live) { FD_OUT(resp_add_int(c->out, 0)); return FD_OK; }

    /* A collection's elements are keyed by its key: copy them under the new
     * name with a fresh version (O(n), as kvrocks); the old ones go to the
     * garbage queue with the source's delete below. */
    uint64_t nver = 0;
    if (sm.type != KV_T_STRING) {
        uint8_t from[KV_SUBPFX_MAX], to[KV_SUBPFX_MAX];
        nver = kv_new_version(c->st);
        size_t fl = kv_enc_sub_prefix(from, KV_KEY_ENC(&sk), KV_KEY_ELEN(&sk), sm.version);
        size_t tl = kv_enc_sub_prefix(to, KV_KEY_ENC(&dk), KV_KEY_ELEN(&dk), nver);
        FD_TRY(kv_copy_prefix(c, from, fl, to, tl));
    }
    if (dm.found) FD_TRY(kv_delete(c, &dk, &dm));

    /* the new metadata: the source's, with the destination's name */
    const void *v; size_t vl;
    int s = c->drv->get(c->txn, sk.mkey, sk.mlen, &v, &vl);
    if (s != FD_OK) return s == FD_NOTFOUND ? FD_E_INTERNAL : s;
    size_t sh = KV_META_HDR + (sm.fullkey ? 4 + sm.fullkey_len : 0);
    size_t dh = KV_META_HDR + (dk.klen > KV_KEY_INLINE ? 4 + dk.klen : 0);
    size_t body = vl - sh, nl = dh + body;
    uint8_t *b = (uint8_t *)kv_scratch(c->st, nl);
    if (!b) return FD_E_NOMEM;
    memcpy(b, v, KV_META_HDR);
    b[0] = (uint8_t)((b[0] & ~KV_F_LONGKEY) | (dk.klen > KV_KEY_INLINE ? KV_F_LONGKEY : 0));
    if (dk.klen > KV_KEY_INLINE) {
        kv_put_u32(b + KV_META_HDR, (uint32_t)dk.klen);
        memcpy(b + KV_META_HDR + 4, dk.key, dk.klen);
    }
    memcpy(b + dh, (const uint8_t *)v + sh, body);
    if (sm.type != KV_T_STRING) kv_put_u64(b + dh, nver);

    FD_TRY(kv_delete(c, &sk, &sm));
    FD_TRY(c->drv->put(c->txn, dk.mkey, dk.mlen, b, nl));
    c->d_keys++;
    KV_NOTIFY(c, NEW, "new", da->ptr, da->len);
    if (sm.expire) {
        uint8_t ek[KV_EKEY_MAX];
        size_t el = kv_enc_expire_key(ek, sm.expire, KV_KEY_ENC(&dk), KV_KEY_ELEN(&dk));
        FD_TRY(c->drv->put(c->txn, ek, el, "", 0));
        c->d_expires++;
    }
    KV_NOTIFY(c, GENERIC, "rename_from", sa->ptr, sa->len);
    KV_NOTIFY(c, GENERIC, "rename_to", da->ptr, da->len);
    if (nx) FD_OUT(resp_add_int(c->out, 1));
    else FD_OUT(resp_add_status(c->out, "OK"));
    return FD_OK;
}

int kv_cmd_rename(kv_ctx *c)   { return rename_generic(c, 0); }
int kv_cmd_renamenx(kv_ctx *c) { return rename_generic(c, 1); }

/* ---------------------------------------------------------------- server */

int kv_cmd_dbsize(kv_ctx *c)
{
    kv_store *st = c->st;
    FD_OUT(resp_add_int(c->out, (long long)(st->keys + (uint64_t)(st->t_keys + c->d_keys))));
    return FD_OK;
}

int kv_cmd_flushdb(kv_ctx *c)
{
    if (c->argc > 2 || (c->argc == 2 && !resp_arg_is(&c->argv[1], "async") && !resp_arg_is(&c->argv[1], "sync")))
        return FD_E_SYNTAX;
    kv_store *st = c->st;
    /* frontdoor's own records ('A': the FUNCTION libraries) survive it, as
     * Redis's functions survive FLUSHALL: copied out, put back */
    size_t n = 0, cap = 0;
    char *keep = NULL;
    kv_iter *it;
    int s = c->drv->iter_open(c->txn, &it);
    if (s != FD_OK) return s;
    const uint8_t pfx = KV_PFX_AUX;
    for (s = c->drv->seek(it, &pfx, 1); s == FD_OK; s = c->drv->next(it)) {
        const void *k, *v;
        size_t kl, vl;
        if ((s = c->drv->cur(it, &k, &kl, &v, &vl)) != FD_OK) break;
        if (!kl || ((const uint8_t *)k)[0] != KV_PFX_AUX) break;
        size_t need = n + 2 * sizeof(size_t) + kl + vl;
        if (need > cap) {
            char *nk = realloc(keep, need * 2);
            if (!nk) { s = FD_E_NOMEM; break; }
            keep = nk;
            cap = need * 2;
        }
        memcpy(keep + n, &kl, sizeof kl);
        memcpy(keep + n + sizeof kl, &vl, sizeof vl);
        memcpy(keep + n + 2 * sizeof kl, k, kl);
        memcpy(keep + n + 2 * sizeof kl + kl, v, vl);
        n = need;
    }
    c->drv->iter_close(it);
    if (s != FD_OK && s != FD_NOTFOUND) { free(keep); return s; }
    s = c->drv->clear(c->txn);
    for (size_t off = 0; s == FD_OK && off < n;) {
        size_t kl, vl;
        memcpy(&kl, keep + off, sizeof kl);
        memcpy(&vl, keep + off + sizeof kl, sizeof vl);
        s = c->drv->put(c->txn, keep + off + 2 * sizeof kl, kl, keep + off + 2 * sizeof kl + kl, vl);
        off += 2 * sizeof kl + kl + vl;
    }
    free(keep);
    FD_TRY(s);
    c->d_keys = -(int64_t)(st->keys + (uint64_t)st->t_keys);
    c->d_expires = -(int64_t)(st->expires + (uint64_t)st->t_expires);
    st->t_dirty = 1;     /* the counter records were wiped too: rewrite them */
    st->t_cleared = 1;
    FD_OUT(resp_add_status(c->out, "OK"));
    return FD_OK;
}
