/* kv_set.c — the sets over the ordered-KV layer: storage/value/set.c's
 * commands over the store in kv_coll.c (SADD ... SINTERCARD), and the
 * commands that share this store's random and scan walks: SPOP,
 * SRANDMEMBER, SSCAN.
 *
 * A set is its metadata (version, size) plus one record per member:
 *   'S' len enc version 'm' member' -> ""   ([u32 len + member] when long)
 * Random picks (SPOP, SRANDMEMBER) seek to a pseudo-random point of the
 * member range: correct (distinct when Redis promises distinct) but not
 * uniform. */
#include <string.h>
#include <stdlib.h>
#include <limits.h>
#include "kv.h"
#include "../cmdargs.h"
#include "../value/set.h"

FD_SET_HANDLERS(kv, kv_ctx, kv_set_io)

/* A set named by a command argument, with its member prefix. */
typedef struct sref {
    kv_key  k;
    kv_meta m;
    uint8_t pfx[KV_ELEM_MAX];
    size_t  pl;
} sref;

static int sref_load(kv_ctx *c, sref *r, const resp_arg *key)
{
    FD_TRY(kv_coll_lookup(c, &r->k, &r->m, key, KV_T_SET));
    if (r->m.live) r->pl = kv_elem_prefix(r->pfx, &r->k, &r->m, KV_TAG_SET);
    return FD_OK;
}

/* Remove one member; *removed += 1 when it was there. */
static int member_remove(kv_ctx *c, sref *r, const char *mb, size_t ml, long long *removed)
{
    uint8_t ek[KV_ELEM_MAX];
    size_t el = kv_elem_key(ek, r->pfx, r->pl, mb, ml);
    const void *v; size_t vl;
    int s = kv_elem_get(c, ek, el, mb, ml, &v, &vl);
    if (s == FD_NOTFOUND) return FD_OK;
    if (s != FD_OK) return s;
    FD_TRY(c->drv->del(c->txn, ek, el));
    (*removed)++;
    return FD_OK;
}

/* ---------------------------------------------------------------- SPOP / SRANDMEMBER */

static int add_member(void *arg, const char *mb, size_t ml, const char *v, size_t vl)
{
    (void)v; (void)vl;
    return kv_list_add(arg, mb, ml, NULL, 0);
}

/* Collect `want` distinct members from a uniformly random start, then
 * consecutive ones (wrapping), or with repeat set (or a single pick) `want`
 * independent uniform picks (kv_random_picks). */
static int pick_members(kv_ctx *c, const sref *r, long long want, int repeat, kv_list *out)
{
    if (repeat || want == 1) return kv_random_picks(c, r->pfx, r->pl, r->m.size, want, add_member, out);
    kv_iter *it;
    FD_TRY(c->drv->iter_open(c->txn, &it));
    const void *kp, *vp; size_t kl, vl;
    int s = want >= (long long)r->m.size
            ? kv_range_seek(c, it, r->pfx, r->pl, r->pfx, r->pl, 0, &kp, &kl, &vp, &vl)
            : kv_random_seek(c, it, r->pfx, r->pl, r->m.size, &kp, &kl, &vp, &vl);
    for (long long i = 0; i < want && s == FD_OK; i++) {
        const char *mb, *v; size_t ml, vvl;
        if ((s = kv_elem_decode(kp, kl, r->pl, vp, vl, &mb, &ml, &v, &vvl)) != FD_OK) break;
        if ((s = kv_list_add(out, mb, ml, NULL, 0)) != FD_OK) break;
        if (i + 1 < want) {
            s = kv_range_step(c, it, r->pfx, r->pl, 0, &kp, &kl, &vp, &vl);
            if (s == FD_NOTFOUND) s = kv_range_seek(c, it, r->pfx, r->pl, r->pfx, r->pl, 0, &kp, &kl, &vp, &vl);
        }
    }
    c->drv->iter_close(it);
    if (s == FD_NOTFOUND) s = FD_E_CORRUPT;     /* the size said there were more */
    return s;
}

static int reply_list(kv_ctx *c, const kv_list *l, int kind)
{
    size_t mark = c->out->len, off = 0;
    const char *p; size_t n;
    int r = kind == 's' ? resp_add_set(c->out, l->n) : resp_add_array(c->out, l->n);
    while (!r && kv_list_next(l, &off, &p, &n)) r = resp_add_bulk(c->out, p, n);
    if (r) { c->out->len = mark; return FD_E_NOMEM; }
    return FD_OK;
}

/* SPOP / SRANDMEMBER: with a count, the picked members as `kind`
 * (reply_list); without, the one member as a bulk string. */
static int reply_picked(kv_ctx *c, const kv_list *l, int hascount, int kind)
{
    if (hascount) return reply_list(c, l, kind);
    size_t off = 0; const char *p; size_t n;
    kv_list_next(l, &off, &p, &n);
    return resp_add_bulk(c->out, p, n) ? FD_E_NOMEM : FD_OK;
}

int kv_cmd_spop(kv_ctx *c)
{
    long long count = 1;
    int hascount = c->argc == 3;
    if (c->argc > 3) return FD_E_SYNTAX;
    if (hascount) {
        /* getPositiveLongFromObjectOrReply: one text for both errors */
        if (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &count) != 0 || count < 0) return FD_E_RANGE_POSITIVE;
    }
    sref r;
    FD_TRY(sref_load(c, &r, &c->argv[1]));
    if (!r.m.live || (hascount && count == 0)) {
        if (hascount) FD_OUT(resp_add_set(c->out, 0));
        else FD_OUT(resp_add_null(c->out));
        return FD_OK;
    }
    kv_list l = {0};
    int s = pick_members(c, &r, count < (long long)r.m.size ? count : (long long)r.m.size, 0, &l);
    int all = s == FD_OK && l.n >= (long long)r.m.size;
    if (all) {
        s = kv_delete(c, &r.k, &r.m);            /* the whole set: O(1), reclaimed by cron */
    } else if (s == FD_OK) {
        size_t off = 0;
        const char *p; size_t n;
        long long removed = 0;
        while (s == FD_OK && kv_list_next(&l, &off, &p, &n)) s = member_remove(c, &r, p, n, &removed);
        r.m.size -= (uint64_t)removed;
        /* the next picks walk across these holes */
        if (removed && c->drv->scattered) c->drv->scattered(c->txn, r.pfx, r.pl, (uint64_t)removed);
        if (s == FD_OK) s = kv_coll_save(c, &r.k, &r.m);
    }
    if (s == FD_OK) {
        KV_NOTIFY_ARG(c, SET, "spop", 1);
        if (all) KV_NOTIFY_ARG(c, GENERIC, "del", 1);
    }
    if (s == FD_OK) s = reply_picked(c, &l, hascount, 's');
    kv_list_free(&l);
    return s;
}

int kv_cmd_srandmember(kv_ctx *c)
{
    long long count = 1;
    int hascount = c->argc == 3;
    if (c->argc > 3) return FD_E_SYNTAX;
    if (hascount) {
        if (resp_str2ll(c->argv[2].ptr, c->argv[2].len, &count) != 0) return FD_E_NOTINT;
        if (count == LLONG_MIN) {
            FD_OUT(resp_add_error(c->out, "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"));
            return FD_OK;
        }
    }
    sref r;
    FD_TRY(sref_load(c, &r, &c->argv[1]));
    if (!r.m.live || (hascount && count == 0)) {
        if (hascount) FD_OUT(resp_add_array(c->out, 0));
        else FD_OUT(resp_add_null(c->out));
        return FD_OK;
    }
    int repeat = count < 0;
    long long want = repeat ? -count : count < (long long)r.m.size ? count : (long long)r.m.size;
    kv_list l = {0};
    int s = pick_members(c, &r, want, repeat, &l);
    if (s == FD_OK) s = reply_picked(c, &l, hascount, 'a');
    kv_list_free(&l);
    return s;
}

int kv_cmd_sscan(kv_ctx *c) { return kv_subscan(c, KV_T_SET, KV_TAG_SET); }
