/* kv_hash.c — the hashes over the ordered-KV layer: the store of
 * storage/value/hash.c's commands (fd_coll_io), HRANDFIELD, and the
 * generic HSCAN/SSCAN/ZSCAN walk.
 *
 * A hash is its metadata (version, size) plus one record per field:
 *   'S' len enc version 'f' field' -> value
 * HGET/HSET/HDEL/HEXISTS are one point read or write per field, HLEN one
 * metadata read, HGETALL/HKEYS/HVALS one range scan. Fields come back in
 * byte order (Redis: insertion order for small hashes, hash order else —
 * neither is specified). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <limits.h>
#include "kv.h"
#include "../cmdargs.h"
#include "../value/hash.h"


FD_HASH_HANDLERS(kv, kv_ctx, kv_hash_io)   /* the store: kv_coll.c */

/* ---------------------------------------------------------------- HRANDFIELD */

/* The estimate for big collections, of bounded cost: a random descent of
 * the key trie. Under the current prefix P (first the collection's), the
 * first and the last record share P + some common bytes (taken as they
 * are); at the first byte where they differ a byte is drawn uniformly from
 * their range, and redrawn while no record has it (at most KV_RANDOM_SEEKS
 * seeks in all), the record equal to P itself counting as one more choice.
 * Every branch of a level is equally likely whatever it holds, so keys of
 * one shape (m00000..m05999, user:<uuid>) come out near uniform; branches of
 * very different sizes (user:1..user:100000, unpadded) do not. */
#define KV_RANDOM_SEEKS 64
static int descend_seek(kv_ctx *c, kv_iter *it, const uint8_t *pfx, size_t pl,
                        const void **k, size_t *kl, const void **v, size_t *vl)
{
    uint8_t p[KV_ELEM_MAX + 2], f[KV_ELEM_MAX], last[KV_ELEM_MAX];
    size_t n = pl, fl = 0, lastl = 0;
    int budget = KV_RANDOM_SEEKS, lo = 0, hi = -1, s;
    memcpy(p, pfx, pl);
    while (budget > 0) {
        budget--;
        s = kv_range_seek(c, it, p, n, p, n, 0, k, kl, v, vl);   /* the first record under p */
        if (s == FD_NOTFOUND && hi >= 0 && n > pl) {
            /* nothing has the byte drawn: draw again among this level's range */
            p[n - 1] = (uint8_t)(lo + (int)(kv_rand(c->st) % (uint64_t)(hi - lo + 1)));
            continue;
        }
        if (s != FD_OK) return s;
        fl = *kl < sizeof f ? *kl : sizeof f;
        memcpy(f, *k, fl);
        /* the last record under p: the collection's last one while p is a
         * prefix of it (one backward seek per pick: on LevelDB a seek past
         * the end of the range may cross many deleted records) */
        const uint8_t *l = last;
        size_t ll = lastl, cp = n;
        if (!lastl || lastl < n || memcmp(last, p, n)) {
            budget--;
            if ((s = kv_range_seek(c, it, p, n, p, n, 1, k, kl, v, vl)) != FD_OK) return s;
            l = *k;
            ll = *kl;
            if (!lastl) {
                lastl = ll < sizeof last ? ll : sizeof last;
                memcpy(last, l, lastl);
            }
        }
        if (ll == fl && memcmp(l, f, fl) == 0) return FD_OK;        /* one record under p: this one */
        while (cp < fl && cp < ll && f[cp] == l[cp]) cp++;
        if (cp >= ll || cp + 1 >= sizeof p) break;
        memcpy(p + n, f + n, cp - n);
        n = cp;
        lo = cp < fl ? f[cp] : -1;                                 /* -1: the record that is p itself */
        hi = l[cp];
        int b = lo + (int)(kv_rand(c->st) % (uint64_t)(hi - lo + 1));
        if (b < 0) return kv_range_seek(c, it, pfx, pl, p, n, 0, k, kl, v, vl);
        if (lo < 0) lo = 0;
        p[n++] = (uint8_t)b;
    }
    /* out of seeks (or a byte drawn into a gap at the end): the record at or
     * after p, wrapping to the first */
    s = kv_range_seek(c, it, pfx, pl, p, n, 0, k, kl, v, vl);
    if (s == FD_NOTFOUND) s = kv_range_seek(c, it, pfx, pl, pfx, pl, 0, k, kl, v, vl);
    return s;
}

int kv_random_seek(kv_ctx *c, kv_iter *it, const uint8_t *pfx, size_t pl, uint64_t size,
                   const void **k, size_t *kl, const void **v, size_t *vl)
{
    if (size > KV_RANDOM_EXACT) return descend_seek(c, it, pfx, pl, k, kl, v, vl);
    if (size == 0) return kv_range_seek(c, it, pfx, pl, pfx, pl, 0, k, kl, v, vl);
    /* a uniform rank, walked to from the first record (forward only: no
     * seek past the end of the range, see descend_seek) */
    uint64_t steps = kv_rand(c->st) % size;
    int s = kv_range_seek(c, it, pfx, pl, pfx, pl, 0, k, kl, v, vl);
    while (s == FD_OK && steps--) s = kv_range_step(c, it, pfx, pl, 0, k, kl, v, vl);
    /* fewer records than `size` said (a stale count): the first one */
    if (s == FD_NOTFOUND) s = kv_range_seek(c, it, pfx, pl, pfx, pl, 0, k, kl, v, vl);
    return s;
}

int kv_random_picks(kv_ctx *c, const uint8_t *pfx, size_t pl, uint64_t size, long long want,
                    kv_pick_fn fn, void *arg)
{
    kv_iter *it;
    FD_TRY(c->drv->iter_open(c->txn, &it));
    const void *kp, *vp; size_t kl, vl;
    const char *sub, *val; size_t sl, vvl;
    int s = FD_OK;
    if (want == 1 || size > KV_RANDOM_EXACT) {
        /* one seek per pick (uniform up to KV_RANDOM_EXACT, see kv.h) */
        for (long long i = 0; i < want && s == FD_OK; i++) {
            s = kv_random_seek(c, it, pfx, pl, size, &kp, &kl, &vp, &vl);
            if (s == FD_OK) s = kv_elem_decode(kp, kl, pl, vp, vl, &sub, &sl, &val, &vvl);
            if (s == FD_OK) s = fn(arg, sub, sl, val, vvl);
        }
        c->drv->iter_close(it);
        return s == FD_NOTFOUND ? FD_E_CORRUPT : s;
    }
    /* several picks from a small collection: copy it once (item 2i is the
     * sub of record i, 2i+1 its value), then pick ranks in memory */
    kv_list l = { 0 };
    s = kv_range_seek(c, it, pfx, pl, pfx, pl, 0, &kp, &kl, &vp, &vl);
    while (s == FD_OK) {
        if ((s = kv_elem_decode(kp, kl, pl, vp, vl, &sub, &sl, &val, &vvl)) != FD_OK) break;
        if ((s = kv_list_add(&l, sub, sl, NULL, 0)) != FD_OK) break;
        if ((s = kv_list_add(&l, val, vvl, NULL, 0)) != FD_OK) break;
        s = kv_range_step(c, it, pfx, pl, 0, &kp, &kl, &vp, &vl);
    }
    c->drv->iter_close(it);
    if (s == FD_NOTFOUND) s = l.n ? FD_OK : FD_E_CORRUPT;
    size_t *off = s == FD_OK ? malloc((size_t)l.n * sizeof *off) : NULL;
    if (s == FD_OK && !off) s = FD_E_NOMEM;
    if (s == FD_OK) {
        size_t o = 0, n;
        const char *p;
        for (long long i = 0; i < l.n; i++) { off[i] = o; kv_list_next(&l, &o, &p, &n); }
        uint64_t records = (uint64_t)l.n / 2;
        for (long long i = 0; i < want && s == FD_OK; i++) {
            uint64_t r = kv_rand(c->st) % records;
            size_t o1 = off[2 * r], o2 = off[2 * r + 1];
            kv_list_next(&l, &o1, &sub, &sl);
            kv_list_next(&l, &o2, &val, &vvl);
            s = fn(arg, sub, sl, val, vvl);
        }
    }
    free(off);
    kv_list_free(&l);
    return s;
}

/* HRANDFIELD's reply for one random pick (kv_random_picks). */
typedef struct hrand_out { resp_out *out; int nested, withvalues; } hrand_out;

static int hrand_emit(void *arg, const char *f, size_t fl, const char *v, size_t vl)
{
    hrand_out *o = arg;
    if ((o->nested && resp_add_array(o->out, 2)) || resp_add_bulk(o->out, f, fl) ||
        (o->withvalues && resp_add_bulk(o->out, v, vl))) return FD_E_NOMEM;
    return FD_OK;
}

int kv_cmd_hrandfield(kv_ctx *c)
{
    long long count;
    int withvalues, hascount, replied;
    FD_TRY(fd_parse_rand_count(c->argv, c->argc, "withvalues", &hascount, &count, &withvalues,
                               c->out, &replied));
    if (replied) return FD_OK;
    kv_key k; kv_meta m;
    FD_TRY(kv_coll_lookup(c, &k, &m, &c->argv[1], KV_T_HASH));
    if (!m.live) {
        if (hascount) FD_OUT(resp_add_array(c->out, 0));
        else FD_OUT(resp_add_null(c->out));
        return FD_OK;
    }
    if (hascount && count == 0) { FD_OUT(resp_add_array(c->out, 0)); return FD_OK; }
    uint8_t pfx[KV_ELEM_MAX];
    size_t pl = kv_elem_prefix(pfx, &k, &m, KV_TAG_HASH);
    size_t mark = c->out->len;
    int repeat = count < 0, nested = withvalues && c->out->proto == 3;
    long long want = !hascount ? 1 : repeat ? -count : (count < (long long)m.size ? count : (long long)m.size);
    if (hascount) {
        if (withvalues && !nested) FD_OUT(resp_add_array(c->out, want * 2));
        else FD_OUT(resp_add_array(c->out, want));
    }
    int s = FD_OK;
    if (repeat || !hascount) {
        /* with repetitions (or one pick): independent uniform picks */
        hrand_out o = { c->out, nested, withvalues };
        s = kv_random_picks(c, pfx, pl, m.size, want, hrand_emit, &o);
        if (s != FD_OK) c->out->len = mark;
        return s;
    }
    kv_iter *it;
    FD_TRY(c->drv->iter_open(c->txn, &it));
    const void *kp, *vp; size_t kl, vl;
    /* distinct: a random start, then consecutive records (wrapping) */
    s = want == (long long)m.size ? kv_range_seek(c, it, pfx, pl, pfx, pl, 0, &kp, &kl, &vp, &vl)
                                  : kv_random_seek(c, it, pfx, pl, m.size, &kp, &kl, &vp, &vl);
    for (long long i = 0; i < want && s == FD_OK; i++) {
        const char *f, *v; size_t fl, vvl;
        if ((s = kv_elem_decode(kp, kl, pl, vp, vl, &f, &fl, &v, &vvl)) != FD_OK) break;
        if ((nested && resp_add_array(c->out, 2)) || resp_add_bulk(c->out, f, fl) ||
            (withvalues && resp_add_bulk(c->out, v, vvl))) { s = FD_E_NOMEM; break; }
        if (i + 1 < want) {
            s = kv_range_step(c, it, pfx, pl, 0, &kp, &kl, &vp, &vl);
            if (s == FD_NOTFOUND) s = kv_range_seek(c, it, pfx, pl, pfx, pl, 0, &kp, &kl, &vp, &vl);
        }
    }
    c->drv->iter_close(it);
    if (s == FD_NOTFOUND) s = FD_E_CORRUPT;     /* the size said there were more */
    if (s != FD_OK) c->out->len = mark;
    return s;
}

/* ---------------------------------------------------------------- *SCAN */

/* Collections up to this size are returned whole by one call, cursor 0
 * (as Redis does for its small listpack/intset encodings). */
#define KV_SCAN_WHOLE 128

int kv_subscan(kv_ctx *c, int type, int tag)
{
    uint64_t cursor;
    int replied;
    FD_TRY(fd_scan_cursor(&c->argv[2], &cursor, c->out, &replied));
    if (replied) return FD_OK;
    kv_key k; kv_meta m;
    FD_TRY(kv_coll_lookup(c, &k, &m, &c->argv[1], type));
    if (!m.live) {
        FD_OUT(resp_add_array(c->out, 2));
        FD_OUT(resp_add_bulk(c->out, "0", 1));
        FD_OUT(resp_add_array(c->out, 0));
        return FD_OK;
    }
    long long count;
    const resp_arg *pat;
    FD_TRY(fd_parse_scan_opts(c->argv, c->argc, 3, &count, &pat, NULL));    /* no TYPE */
    /* a small sorted set is walked in score order, as Redis's listpack */
    int by_score = 0;
    if (m.size <= KV_SCAN_WHOLE) {
        cursor = 0;
        count = KV_SCAN_WHOLE + 1;
        if (tag == KV_TAG_ZMEMBER) { by_score = 1; tag = KV_TAG_ZSCORE; }
    }

    kv_store *st = c->st;
    uint8_t pfx[KV_ELEM_MAX], start[KV_ELEM_MAX];
    size_t pl = kv_elem_prefix(pfx, &k, &m, tag), sl = pl;
    memcpy(start, pfx, pl);
    int skip = kv_cursor_resume(st, cursor, start, &sl);
    size_t mark = c->out->len;
    long long n = 0, visited = 0;
    uint8_t last[KV_ENC_MAX];
    size_t lastl = 0;
    kv_iter *it;
    FD_TRY(c->drv->iter_open(c->txn, &it));
    const void *kp, *vp; size_t kl, vl;
    int s = kv_range_seek(c, it, pfx, pl, start, sl, 0, &kp, &kl, &vp, &vl);
    while (s == FD_OK) {
        if (skip && kl == sl && memcmp(kp, start, kl) == 0) {
            skip = 0;
            s = kv_range_step(c, it, pfx, pl, 0, &kp, &kl, &vp, &vl);
            continue;
        }
        skip = 0;
        if (visited == count) break;          /* s == FD_OK: more follow */
        visited++;
        lastl = kl - pl < sizeof last ? kl - pl : sizeof last;
        memcpy(last, (const uint8_t *)kp + pl, lastl);
        const char *f, *v; size_t fl, vvl;
        if (by_score && kl < pl + 8) { s = FD_E_CORRUPT; break; }
        if ((s = kv_elem_decode(kp, kl, pl + (by_score ? 8 : 0), vp, vl, &f, &fl, &v, &vvl)) != FD_OK) break;
        if (by_score) { v = (const char *)kp + pl; vvl = 8; }
        if (!pat || resp_glob_match(pat->ptr, pat->len, f, fl, 0)) {
            int r = resp_add_bulk(c->out, f, fl);
            if (!r && tag == KV_TAG_HASH) r = resp_add_bulk(c->out, v, vvl);
            if (!r && (tag == KV_TAG_ZMEMBER || tag == KV_TAG_ZSCORE)) {
                char buf[64];
                /* ZSCAN shows a score as the listpack stores it: d2string */
                int bl = vvl >= 8 ? resp_format_d2string(buf, sizeof buf, kv_dec_double((const uint8_t *)v)) : 0;
                r = resp_add_bulk(c->out, buf, (size_t)bl);
            }
            if (r) { s = FD_E_NOMEM; break; }
            n += tag == KV_TAG_SET ? 1 : 2;
        }
        s = kv_range_step(c, it, pfx, pl, 0, &kp, &kl, &vp, &vl);
    }
    c->drv->iter_close(it);
    if (s != FD_OK && s != FD_NOTFOUND) { c->out->len = mark; return s; }
    uint64_t next = 0;
    if (s == FD_OK && lastl) next = kv_cursor_remember(st, last, lastl);
    if (resp_out_insert_header(c->out, mark, 'a', n)) { c->out->len = mark; return FD_E_NOMEM; }
    resp_out h;
    char num[24];
    int nl = resp_u64_fmt(num, next);
    resp_out_init(&h, c->out->proto);
    int r = resp_add_array(&h, 2);
    if (!r) r = resp_add_bulk(&h, num, (size_t)nl);
    if (!r) r = resp_out_reserve(c->out, h.len);
    if (!r) {
        memmove(c->out->data + mark + h.len, c->out->data + mark, c->out->len - mark);
        memcpy(c->out->data + mark, h.data, h.len);
        c->out->len += h.len;
    }
    resp_out_free(&h);
    if (r) { c->out->len = mark; return FD_E_NOMEM; }
    return FD_OK;
}

int kv_cmd_hscan(kv_ctx *c) { return kv_subscan(c, KV_T_HASH, KV_TAG_HASH); }
