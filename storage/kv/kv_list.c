/* kv_list.c — the list commands of KV_COMMANDS over the ordered-KV layer,
 * with Redis 7.0's semantics, reply shapes and error texts (t_list.c).
 *
 * A list is its metadata (version, size, head, tail) plus one record per
 * element keyed by a sequence number (SSDB's queue):
 *   'S' len enc version 'l' seq(8 BE) -> element
 * The elements are exactly the sequence numbers head..tail (no holes); the
 * first pushed element gets 2^63. Costs, in stored records:
 *   LPUSH/RPUSH/LPOP/RPOP: O(1) each (one element write/delete + metadata);
 *   LLEN O(1); LINDEX/LSET O(1) point operations (head + index);
 *   LRANGE a range scan from head+start: O(returned);
 *   LTRIM O(removed) deletes (the whole list: O(1), to the garbage queue);
 *   LINSERT: finds the pivot by a scan (O(position)), then renumbers the
 *     shorter side by one: O(min(position, size - position)) rewrites;
 *   LREM: reads the list from the end it starts at and compacts the
 *     survivors over the holes: O(size) reads, O(moved) rewrites;
 *   LPOS: a scan from either end, bounded by MAXLEN.
 */
#include <string.h>
#include <stdlib.h>
#include <limits.h>
#include "kv.h"
#include "../cmdargs.h"


typedef struct lref {
    kv_key  k;
    kv_meta m;
    uint8_t pfx[KV_ELEM_MAX];
    size_t  pl;
} lref;

static int lref_load(kv_ctx *c, lref *r, const resp_arg *key)
{
    FD_TRY(kv_coll_lookup(c, &r->k, &r->m, key, KV_T_LIST));
    if (r->m.live) r->pl = kv_elem_prefix(r->pfx, &r->k, &r->m, KV_TAG_LIST);
    return FD_OK;
}

static int lref_create(kv_ctx *c, lref *r)
{
    if (r->m.live) return FD_OK;
    FD_TRY(kv_coll_new(c, &r->k, &r->m, KV_T_LIST));
    r->pl = kv_elem_prefix(r->pfx, &r->k, &r->m, KV_TAG_LIST);
    return FD_OK;
}

static size_t seq_key(uint8_t *out, const lref *r, uint64_t seq)
{
    memcpy(out, r->pfx, r->pl);
    kv_put_u64(out + r->pl, seq);
    return r->pl + 8;
}

static int get_at(kv_ctx *c, const lref *r, uint64_t seq, const void **v, size_t *vl)
{
    uint8_t ek[KV_ELEM_MAX];
    size_t el = seq_key(ek, r, seq);
    int s = c->drv->get(c->txn, ek, el, v, vl);
    return s == FD_NOTFOUND ? FD_E_CORRUPT : s;   /* head..tail has no holes */
}

static int put_at(kv_ctx *c, const lref *r, uint64_t seq, const void *v, size_t vl)
{
    uint8_t ek[KV_ELEM_MAX];
    size_t el = seq_key(ek, r, seq);
    return c->drv->put(c->txn, ek, el, vl ? v : "", vl);
}

static int del_at(kv_ctx *c, const lref *r, uint64_t seq)
{
    uint8_t ek[KV_ELEM_MAX];
    size_t el = seq_key(ek, r, seq);
    int s = c->drv->del(c->txn, ek, el);
    return s == FD_NOTFOUND ? FD_OK : s;
}

/* Copy the element at seq to seq2 (driver memory is invalid after a write). */
static int move_at(kv_ctx *c, const lref *r, uint64_t seq, uint64_t seq2)
{
    const void *v; size_t vl;
    FD_TRY(get_at(c, r, seq, &v, &vl));
    char *b = kv_scratch(c->st, vl ? vl : 1);
    if (!b) return FD_E_NOMEM;
    memcpy(b, v, vl);
    return put_at(c, r, seq2, b, vl);
}

static int push_one(kv_ctx *c, lref *r, int left, const void *v, size_t vl)
{
    uint64_t seq;
    if (r->m.size == 0) seq = r->m.head = r->m.tail = KV_LIST_SEQ_START;
    else if (left) seq = --r->m.head;
    else seq = ++r->m.tail;
    r->m.size++;
    return put_at(c, r, seq, v, vl);
}

/* ---------------------------------------------------------------- push / pop */

static int push_generic(kv_ctx *c, int left, int xx)
{
    lref r;
    FD_TRY(lref_load(c, &r, &c->argv[1]));
    if (!r.m.live) {
        if (xx) { FD_OUT(resp_add_int(c->out, 0)); return FD_OK; }
        FD_TRY(lref_create(c, &r));
    }
    for (int j = 2; j < c->argc; j++)
        FD_TRY(push_one(c, &r, left, c->argv[j].ptr, c->argv[j].len));
    FD_TRY(kv_coll_save(c, &r.k, &r.m));
    KV_NOTIFY_ARG(c, LIST, left ? "lpush" : "rpush", 1);
    FD_OUT(resp_add_int(c->out, (long long)r.m.size));
    return FD_OK;
}

int kv_cmd_lpush(kv_ctx *c)  { return push_generic(c, 1, 0); }
int kv_cmd_rpush(kv_ctx *c)  { return push_generic(c, 0, 0); }
int kv_cmd_lpushx(kv_ctx *c) { return push_generic(c, 1, 1); }
int kv_cmd_rpushx(kv_ctx *c) { return push_generic(c, 0, 1); }

/* Pop count (<= size) elements of the live list r from the left or right
 * end, replying each as a bulk; the key goes when emptied. On failure the
 * caller cuts its reply back. */
static int pop_elems(kv_ctx *c, lref *r, int left, long long count)
{
    int s = FD_OK;
    if (count == (long long)r->m.size && count > 1) {
        /* the whole list goes: reply from one scan, delete in O(1) */
        kv_iter *it;
        long long got = 0;
        FD_TRY(c->drv->iter_open(c->txn, &it));
        const void *kp, *vp; size_t kl, vl;
        s = kv_range_seek(c, it, r->pfx, r->pl, r->pfx, r->pl, !left, &kp, &kl, &vp, &vl);
        while (s == FD_OK && got < count) {
            if (resp_add_bulk(c->out, vp, vl)) { s = FD_E_NOMEM; break; }
            if (++got < count) s = kv_range_step(c, it, r->pfx, r->pl, !left, &kp, &kl, &vp, &vl);
        }
        c->drv->iter_close(it);
        if (s == FD_NOTFOUND) s = FD_E_CORRUPT;
        if (s == FD_OK) s = kv_delete(c, &r->k, &r->m);
        if (s == FD_OK) {
            KV_NOTIFY(c, LIST, left ? "lpop" : "rpop", r->k.key, r->k.klen);
            KV_NOTIFY(c, GENERIC, "del", r->k.key, r->k.klen);
        }
        return s;
    }
    for (long long i = 0; i < count && s == FD_OK; i++) {
        uint64_t seq = left ? r->m.head : r->m.tail;
        const void *v; size_t vl;
        if ((s = get_at(c, r, seq, &v, &vl)) != FD_OK) break;
        if (resp_add_bulk(c->out, v, vl)) { s = FD_E_NOMEM; break; }
        if ((s = del_at(c, r, seq)) != FD_OK) break;
        if (left) r->m.head++; else r->m.tail--;
        r->m.size--;
    }
    if (s == FD_OK) s = kv_coll_save(c, &r->k, &r->m);
    if (s == FD_OK) {
        KV_NOTIFY(c, LIST, left ? "lpop" : "rpop", r->k.key, r->k.klen);
        if (!r->m.size) KV_NOTIFY(c, GENERIC, "del", r->k.key, r->k.klen);
    }
    return s;
}

static int pop_generic(kv_ctx *c, int left)
{
    long long count = 1;
    int hascount = c->argc == 3;
    if (c->argc > 3) {
        FD_OUT(resp_add_errorf(c->out, "ERR wrong number of arguments for '%s' command", left ? "lpop" : "rpop"));
        return FD_OK;
    }
    if (hascount) {
        /* getPositiveLongFromObjectOrReply: one text for both errors */
        if (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &count) != 0 || count < 0) return FD_E_RANGE_POSITIVE;
    }
    lref r;
    FD_TRY(lref_load(c, &r, &c->argv[1]));
    if (!r.m.live) {
        if (hascount) FD_OUT(resp_add_null_array(c->out));
        else FD_OUT(resp_add_null(c->out));
        return FD_OK;
    }
    if (hascount && count == 0) { FD_OUT(resp_add_array(c->out, 0)); return FD_OK; }
    if (count > (long long)r.m.size) count = (long long)r.m.size;
    size_t mark = c->out->len;
    if (hascount) FD_OUT(resp_add_array(c->out, count));
    int s = pop_elems(c, &r, left, count);
    if (s != FD_OK) c->out->len = mark;
    return s;
}

int kv_cmd_lpop(kv_ctx *c) { return pop_generic(c, 1); }
int kv_cmd_rpop(kv_ctx *c) { return pop_generic(c, 0); }

int kv_list_mpop_one(kv_ctx *c, const resp_arg *key, int left, long long count, int *done)
{
    lref r;
    *done = 0;
    FD_TRY(lref_load(c, &r, key));
    if (!r.m.live || r.m.size == 0) return FD_OK;
    if (count > (long long)r.m.size) count = (long long)r.m.size;
    size_t mark = c->out->len;
    int s = FD_OK;
    if (resp_add_array(c->out, 2) || resp_add_bulk(c->out, key->ptr, key->len) ||
        resp_add_array(c->out, count)) s = FD_E_NOMEM;
    if (s == FD_OK) s = pop_elems(c, &r, left, count);
    if (s != FD_OK) c->out->len = mark;
    else *done = 1;
    return s;
}

/* ---------------------------------------------------------------- reads */

int kv_cmd_llen(kv_ctx *c)
{
    lref r;
    FD_TRY(lref_load(c, &r, &c->argv[1]));
    FD_OUT(resp_add_int(c->out, r.m.live ? (long long)r.m.size : 0));
    return FD_OK;
}

int kv_cmd_lindex(kv_ctx *c)
{
    lref r;
    FD_TRY(lref_load(c, &r, &c->argv[1]));
    if (!r.m.live) { FD_OUT(resp_add_null(c->out)); return FD_OK; }
    long long idx, n = (long long)r.m.size;
    if (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &idx) != 0) return FD_E_NOTINT;
    if (idx < 0) idx += n;
    if (idx < 0 || idx >= n) { FD_OUT(resp_add_null(c->out)); return FD_OK; }
    const void *v; size_t vl;
    FD_TRY(get_at(c, &r, r.m.head + (uint64_t)idx, &v, &vl));
    FD_OUT(resp_add_bulk(c->out, v, vl));
    return FD_OK;
}

int kv_cmd_lrange(kv_ctx *c)
{
    long long start, end;
    if (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &start) != 0 ||
        resp_str2ll(c->argv[3].ptr, c->argv[3].len, &end) != 0) return FD_E_NOTINT;
    lref r;
    FD_TRY(lref_load(c, &r, &c->argv[1]));
    long long n = r.m.live ? (long long)r.m.size : 0;
    if (start < 0) start += n;
    if (end < 0) end += n;
    if (start < 0) start = 0;
    if (start > end || start >= n) { FD_OUT(resp_add_array(c->out, 0)); return FD_OK; }
    if (end >= n) end = n - 1;
    long long want = end - start + 1, got = 0;
    size_t mark = c->out->len;
    FD_OUT(resp_add_array(c->out, want));
    uint8_t from[KV_ELEM_MAX];
    size_t fl = seq_key(from, &r, r.m.head + (uint64_t)start);
    kv_iter *it;
    FD_TRY(c->drv->iter_open(c->txn, &it));
    const void *kp, *vp; size_t kl, vl;
    int s = kv_range_seek(c, it, r.pfx, r.pl, from, fl, 0, &kp, &kl, &vp, &vl);
    while (s == FD_OK && got < want) {
        if (resp_add_bulk(c->out, vp, vl)) { s = FD_E_NOMEM; break; }
        if (++got < want) s = kv_range_step(c, it, r.pfx, r.pl, 0, &kp, &kl, &vp, &vl);
    }
    c->drv->iter_close(it);
    if (s == FD_NOTFOUND) s = FD_E_CORRUPT;
    if (s != FD_OK) c->out->len = mark;
    return s;
}

int kv_cmd_lpos(kv_ctx *c)
{
    fd_lpos o;
    int replied;
    FD_TRY(fd_parse_lpos(c->argv, c->argc, &o, c->out, &replied));
    if (replied) return FD_OK;
    long long rank = o.rank, count = o.count, maxlen = o.maxlen;
    int rev = o.rev;
    lref r;
    FD_TRY(lref_load(c, &r, &c->argv[1]));
    if (!r.m.live) {
        if (count != -1) FD_OUT(resp_add_array(c->out, 0));
        else FD_OUT(resp_add_null(c->out));
        return FD_OK;
    }
    const resp_arg *el = &c->argv[2];
    size_t mark = c->out->len;
    long long n = (long long)r.m.size, index = 0, matches = 0, emitted = 0;
    kv_iter *it;
    FD_TRY(c->drv->iter_open(c->txn, &it));
    const void *kp, *vp; size_t kl, vl;
    int s = kv_range_seek(c, it, r.pfx, r.pl, r.pfx, r.pl, rev, &kp, &kl, &vp, &vl);
    while (s == FD_OK && (maxlen == 0 || index < maxlen)) {
        if (vl == el->len && memcmp(vp, el->ptr, vl) == 0) {
            matches++;
            if (matches >= rank) {
                if (resp_add_int(c->out, rev ? n - index - 1 : index)) { s = FD_E_NOMEM; break; }
                emitted++;
                if (count == -1 || (count && !o.nolimit && emitted >= count)) break;
            }
        }
        index++;
        s = kv_range_step(c, it, r.pfx, r.pl, rev, &kp, &kl, &vp, &vl);
    }
    c->drv->iter_close(it);
    if (s != FD_OK && s != FD_NOTFOUND) { c->out->len = mark; return s; }
    if (count != -1) {
        if (resp_out_insert_header(c->out, mark, 'a', emitted)) { c->out->len = mark; return FD_E_NOMEM; }
    } else if (!emitted) FD_OUT(resp_add_null(c->out));
    return FD_OK;
}

/* ---------------------------------------------------------------- middle changes */

int kv_cmd_lset(kv_ctx *c)
{
    lref r;
    FD_TRY(lref_load(c, &r, &c->argv[1]));
    if (!r.m.live) return FD_E_NOKEY;
    long long idx, n = (long long)r.m.size;
    if (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &idx) != 0) return FD_E_NOTINT;
    if (idx < 0) idx += n;
    if (idx < 0 || idx >= n) return FD_E_INDEX;
    FD_TRY(put_at(c, &r, r.m.head + (uint64_t)idx, c->argv[3].ptr, c->argv[3].len));
    KV_NOTIFY_ARG(c, LIST, "lset", 1);
    FD_OUT(resp_add_status(c->out, "OK"));
    return FD_OK;
}

int kv_cmd_ltrim(kv_ctx *c)
{
    long long start, end;
    if (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &start) != 0 ||
        resp_str2ll(c->argv[3].ptr, c->argv[3].len, &end) != 0) return FD_E_NOTINT;
    lref r;
    FD_TRY(lref_load(c, &r, &c->argv[1]));
    if (!r.m.live) { FD_OUT(resp_add_status(c->out, "OK")); return FD_OK; }
    long long n = (long long)r.m.size, ltrim, rtrim;
    if (start < 0) start += n;
    if (end < 0) end += n;
    if (start < 0) start = 0;
    if (start > end || start >= n) { ltrim = n; rtrim = 0; }
    else {
        if (end >= n) end = n - 1;
        ltrim = start;
        rtrim = n - end - 1;
    }
    if (ltrim + rtrim >= n) {
        FD_TRY(kv_delete(c, &r.k, &r.m));          /* O(1): the elements go to the garbage queue */
    } else if (ltrim + rtrim > 0) {
        for (long long i = 0; i < ltrim; i++) FD_TRY(del_at(c, &r, r.m.head++));
        for (long long i = 0; i < rtrim; i++) FD_TRY(del_at(c, &r, r.m.tail--));
        r.m.size -= (uint64_t)(ltrim + rtrim);
        FD_TRY(kv_coll_save(c, &r.k, &r.m));
    }
    KV_NOTIFY_ARG(c, LIST, "ltrim", 1);
    if (ltrim + rtrim >= n) KV_NOTIFY_ARG(c, GENERIC, "del", 1);
    FD_OUT(resp_add_status(c->out, "OK"));
    return FD_OK;
}

int kv_cmd_lrem(kv_ctx *c)
{
    long long toremove;
    if (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &toremove) != 0) return FD_E_NOTINT;
    lref r;
    FD_TRY(lref_load(c, &r, &c->argv[1]));
    if (!r.m.live) { FD_OUT(resp_add_int(c->out, 0)); return FD_OK; }
    const resp_arg *el = &c->argv[3];
    int rev = toremove < 0;
    uint64_t limit = toremove == 0 ? UINT64_MAX : rev ? (uint64_t)0 - (uint64_t)toremove : (uint64_t)toremove;
    /* Walk from the chosen end; survivors are moved over the holes left by
     * removed elements (w trails r), then the freed end is deleted. */
    uint64_t n = r.m.size, removed = 0;
    uint64_t rd = rev ? r.m.tail : r.m.head, wr = rd;
    for (uint64_t i = 0; i < n; i++) {
        const void *v; size_t vl;
        FD_TRY(get_at(c, &r, rd, &v, &vl));
        if (removed < limit && vl == el->len && memcmp(v, el->ptr, vl) == 0) {
            removed++;
        } else {
            if (wr != rd) FD_TRY(move_at(c, &r, rd, wr));
            wr = rev ? wr - 1 : wr + 1;
        }
        rd = rev ? rd - 1 : rd + 1;
    }
    if (removed) {
        if (removed == n) {
            FD_TRY(kv_delete(c, &r.k, &r.m));
        } else {
            for (uint64_t i = 0; i < removed; i++) {
                if (rev) FD_TRY(del_at(c, &r, r.m.head++));
                else FD_TRY(del_at(c, &r, r.m.tail--));
            }
            r.m.size -= removed;
            FD_TRY(kv_coll_save(c, &r.k, &r.m));
        }
        KV_NOTIFY_ARG(c, LIST, "lrem", 1);
        if (removed == n) KV_NOTIFY_ARG(c, GENERIC, "del", 1);
    }
    FD_OUT(resp_add_int(c->out, (long long)removed));
    return FD_OK;
}

int kv_cmd_linsert(kv_ctx *c)
{
    int after;
    if (resp_arg_is(&c->argv[2], "after")) after = 1;
    else if (resp_arg_is(&c->argv[2], "before")) after = 0;
    else return FD_E_SYNTAX;
    lref r;
    FD_TRY(lref_load(c, &r, &c->argv[1]));
    if (!r.m.live) { FD_OUT(resp_add_int(c->out, 0)); return FD_OK; }
    const resp_arg *pivot = &c->argv[3], *val = &c->argv[4];
    /* find the pivot */
    long long pos = -1, idx = 0;
    kv_iter *it;
    FD_TRY(c->drv->iter_open(c->txn, &it));
    const void *kp, *vp; size_t kl, vl;
    int s = kv_range_seek(c, it, r.pfx, r.pl, r.pfx, r.pl, 0, &kp, &kl, &vp, &vl);
    while (s == FD_OK) {
        if (vl == pivot->len && memcmp(vp, pivot->ptr, vl) == 0) { pos = idx; break; }
        idx++;
        s = kv_range_step(c, it, r.pfx, r.pl, 0, &kp, &kl, &vp, &vl);
    }
    c->drv->iter_close(it);
    if (s != FD_OK && s != FD_NOTFOUND) return s;
    if (pos < 0) { FD_OUT(resp_add_int(c->out, -1)); return FD_OK; }
    uint64_t n = r.m.size, i = (uint64_t)pos + (after ? 1 : 0);   /* index of the new element */
    if (i <= n - i) {
        /* shift elements [0, i) one to the left */
        for (uint64_t j = 0; j < i; j++) FD_TRY(move_at(c, &r, r.m.head + j, r.m.head + j - 1));
        FD_TRY(put_at(c, &r, r.m.head + i - 1, val->ptr, val->len));
        r.m.head--;
    } else {
        /* shift elements [i, n) one to the right */
        for (uint64_t j = n; j > i; j--) FD_TRY(move_at(c, &r, r.m.head + j - 1, r.m.head + j));
        FD_TRY(put_at(c, &r, r.m.head + i, val->ptr, val->len));
        r.m.tail++;
    }
    r.m.size++;
    FD_TRY(kv_coll_save(c, &r.k, &r.m));
    KV_NOTIFY_ARG(c, LIST, "linsert", 1);
    FD_OUT(resp_add_int(c->out, (long long)r.m.size));
    return FD_OK;
}

/* ---------------------------------------------------------------- LMOVE */

static int lmove_generic(kv_ctx *c, int from_left, int to_left)
{
    lref src, dstb, *dst;
    FD_TRY(lref_load(c, &src, &c->argv[1]));
    if (!src.m.live) { FD_OUT(resp_add_null(c->out)); return FD_OK; }
    int same = c->argv[1].len == c->argv[2].len && memcmp(c->argv[1].ptr, c->argv[2].ptr, c->argv[1].len) == 0;
    if (same) dst = &src;
    else {
        dst = &dstb;
        FD_TRY(lref_load(c, dst, &c->argv[2]));
    }
    uint64_t seq = from_left ? src.m.head : src.m.tail;
    const void *v; size_t vl;
    FD_TRY(get_at(c, &src, seq, &v, &vl));
    char *val = malloc(vl ? vl : 1);
    if (!val) return FD_E_NOMEM;
    memcpy(val, v, vl);
    int s = del_at(c, &src, seq);
    if (s == FD_OK) {
        if (from_left) src.m.head++; else src.m.tail--;
        src.m.size--;
        if (!same) s = kv_coll_save(c, &src.k, &src.m);
    }
    if (s == FD_OK) s = lref_create(c, dst);
    if (s == FD_OK) s = push_one(c, dst, to_left, val, vl);
    if (s == FD_OK) s = kv_coll_save(c, &dst->k, &dst->m);
    if (s == FD_OK && resp_add_bulk(c->out, val, vl)) s = FD_E_NOMEM;
    if (s == FD_OK) {
        /* Redis's lmoveGenericCommand: the push, then the pop, then the source's del */
        KV_NOTIFY_ARG(c, LIST, to_left ? "lpush" : "rpush", 2);
        KV_NOTIFY_ARG(c, LIST, from_left ? "lpop" : "rpop", 1);
        if (!same && !src.m.size) KV_NOTIFY_ARG(c, GENERIC, "del", 1);
    }
    free(val);
    return s;
}

int kv_cmd_rpoplpush(kv_ctx *c) { return lmove_generic(c, 0, 1); }

int kv_cmd_lmove(kv_ctx *c)
{
    int from_left, to_left;
    FD_TRY(fd_parse_lmove(c->argv, &from_left, &to_left));
    return lmove_generic(c, from_left, to_left);
}
