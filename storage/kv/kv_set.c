/* kv_set.c — the set commands of KV_COMMANDS over the ordered-KV layer, with
 * Redis 7.0's semantics, reply shapes and error texts (t_set.c).
 *
 * A set is its metadata (version, size) plus one record per member:
 *   'S' len enc version 'm' member' -> ""   ([u32 len + member] when long)
 * SADD/SREM/SISMEMBER are one point operation per member, SCARD one
 * metadata read, SMEMBERS one range scan. SINTER walks the smallest set and
 * probes the others (O(N·K) point reads), SUNION probes the earlier sets for
 * each member of each set, SDIFF probes the other sets for each member of the
 * first. The STORE forms collect the result first (the destination may be a
 * source), then replace the destination. Random picks (SPOP, SRANDMEMBER)
 * seek to a pseudo-random point of the member range: correct (distinct when
 * Redis promises distinct) but not uniform. */
#include <string.h>
#include <stdlib.h>
#include <limits.h>
#include "kv.h"
#include "../cmdargs.h"


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

/* 1 member, 0 not, or -FD_E_*. */
static int is_member(kv_ctx *c, const sref *r, const char *mb, size_t ml)
{
    if (!r->m.live) return 0;
    uint8_t ek[KV_ELEM_MAX];
    size_t el = kv_elem_key(ek, r->pfx, r->pl, mb, ml);
    const void *v; size_t vl;
    int s = kv_elem_get(c, ek, el, mb, ml, &v, &vl);
    if (s == FD_OK) return 1;
    if (s == FD_NOTFOUND) return 0;
    return -s;
}

/* Add (add=1) or remove one member; *changed += 1 when it did. */
static int member_change(kv_ctx *c, sref *r, const char *mb, size_t ml, int add, long long *changed)
{
    uint8_t ek[KV_ELEM_MAX];
    size_t el = kv_elem_key(ek, r->pfx, r->pl, mb, ml);
    const void *v; size_t vl;
    int s = kv_elem_get(c, ek, el, mb, ml, &v, &vl);
    if (s != FD_OK && s != FD_NOTFOUND) return s;
    if (add && s == FD_NOTFOUND) {
        FD_TRY(kv_elem_put(c, ek, el, mb, ml, NULL, 0));
        (*changed)++;
    } else if (!add && s == FD_OK) {
        FD_TRY(c->drv->del(c->txn, ek, el));
        (*changed)++;
    }
    return FD_OK;
}

static int create_if_missing(kv_ctx *c, sref *r)
{
    if (r->m.live) return FD_OK;
    FD_TRY(kv_coll_new(c, &r->k, &r->m, KV_T_SET));
    r->pl = kv_elem_prefix(r->pfx, &r->k, &r->m, KV_TAG_SET);
    return FD_OK;
}

/* ---------------------------------------------------------------- SADD/SREM/SCARD... */

int kv_cmd_sadd(kv_ctx *c)
{
    sref r;
    FD_TRY(sref_load(c, &r, &c->argv[1]));
    FD_TRY(create_if_missing(c, &r));
    long long n = 0;
    for (int j = 2; j < c->argc; j++)
        FD_TRY(member_change(c, &r, c->argv[j].ptr, c->argv[j].len, 1, &n));
    r.m.size += (uint64_t)n;
    if (n) FD_TRY(kv_coll_save(c, &r.k, &r.m));
    if (n) KV_NOTIFY_ARG(c, SET, "sadd", 1);
    FD_OUT(resp_add_int(c->out, n));
    return FD_OK;
}

int kv_cmd_srem(kv_ctx *c)
{
    sref r;
    FD_TRY(sref_load(c, &r, &c->argv[1]));
    long long n = 0;
    if (r.m.live) {
        for (int j = 2; j < c->argc && (uint64_t)n < r.m.size; j++)
            FD_TRY(member_change(c, &r, c->argv[j].ptr, c->argv[j].len, 0, &n));
        r.m.size -= (uint64_t)n;
        if (n) FD_TRY(kv_coll_save(c, &r.k, &r.m));
        if (n) KV_NOTIFY_ARG(c, SET, "srem", 1);
        if (n && !r.m.size) KV_NOTIFY_ARG(c, GENERIC, "del", 1);
    }
    FD_OUT(resp_add_int(c->out, n));
    return FD_OK;
}

int kv_cmd_scard(kv_ctx *c)
{
    sref r;
    FD_TRY(sref_load(c, &r, &c->argv[1]));
    FD_OUT(resp_add_int(c->out, r.m.live ? (long long)r.m.size : 0));
    return FD_OK;
}

int kv_cmd_sismember(kv_ctx *c)
{
    sref r;
    FD_TRY(sref_load(c, &r, &c->argv[1]));
    int y = is_member(c, &r, c->argv[2].ptr, c->argv[2].len);
    if (y < 0) return -y;
    FD_OUT(resp_add_int(c->out, y));
    return FD_OK;
}

int kv_cmd_smismember(kv_ctx *c)
{
    sref r;
    FD_TRY(sref_load(c, &r, &c->argv[1]));
    size_t mark = c->out->len;
    FD_OUT(resp_add_array(c->out, c->argc - 2));
    for (int j = 2; j < c->argc; j++) {
        int y = is_member(c, &r, c->argv[j].ptr, c->argv[j].len);
        if (y < 0) { c->out->len = mark; return -y; }
        if (resp_add_int(c->out, y)) { c->out->len = mark; return FD_E_NOMEM; }
    }
    return FD_OK;
}

int kv_cmd_smove(kv_ctx *c)
{
    sref src, dst;
    FD_TRY(sref_load(c, &src, &c->argv[1]));
    kv_key_init(&dst.k, c->argv[2].ptr, c->argv[2].len);
    FD_TRY(kv_lookup(c, &dst.k, &dst.m));
    if (!src.m.live) { FD_OUT(resp_add_int(c->out, 0)); return FD_OK; }
    if (dst.m.live && dst.m.type != KV_T_SET) return FD_E_WRONGTYPE;
    if (dst.m.live) dst.pl = kv_elem_prefix(dst.pfx, &dst.k, &dst.m, KV_TAG_SET);
    const resp_arg *mb = &c->argv[3];
    if (c->argv[1].len == c->argv[2].len && memcmp(c->argv[1].ptr, c->argv[2].ptr, c->argv[1].len) == 0) {
        int y = is_member(c, &src, mb->ptr, mb->len);
        if (y < 0) return -y;
        FD_OUT(resp_add_int(c->out, y));
        return FD_OK;
    }
    long long n = 0;
    FD_TRY(member_change(c, &src, mb->ptr, mb->len, 0, &n));
    if (!n) { FD_OUT(resp_add_int(c->out, 0)); return FD_OK; }
    src.m.size--;
    FD_TRY(kv_coll_save(c, &src.k, &src.m));
    KV_NOTIFY_ARG(c, SET, "srem", 1);
    if (!src.m.size) KV_NOTIFY_ARG(c, GENERIC, "del", 1);
    FD_TRY(create_if_missing(c, &dst));
    n = 0;
    FD_TRY(member_change(c, &dst, mb->ptr, mb->len, 1, &n));
    dst.m.size += (uint64_t)n;
    if (n) FD_TRY(kv_coll_save(c, &dst.k, &dst.m));
    else c->untouched = 1u << 1;          /* the destination had it: only the source changed */
    if (n) KV_NOTIFY_ARG(c, SET, "sadd", 2);
    FD_OUT(resp_add_int(c->out, 1));
    return FD_OK;
}

/* SMEMBERS: one range scan. */
int kv_cmd_smembers(kv_ctx *c)
{
    sref r;
    FD_TRY(sref_load(c, &r, &c->argv[1]));
    long long n = r.m.live ? (long long)r.m.size : 0;
    size_t mark = c->out->len;
    FD_OUT(resp_add_set(c->out, n));
    if (!n) return FD_OK;
    kv_iter *it;
    FD_TRY(c->drv->iter_open(c->txn, &it));
    const void *kp, *vp; size_t kl, vl;
    long long got = 0;
    int s = kv_range_seek(c, it, r.pfx, r.pl, r.pfx, r.pl, 0, &kp, &kl, &vp, &vl);
    while (s == FD_OK) {
        const char *mb, *v; size_t ml, vvl;
        if ((s = kv_elem_decode(kp, kl, r.pl, vp, vl, &mb, &ml, &v, &vvl)) != FD_OK) break;
        if (resp_add_bulk(c->out, mb, ml)) { s = FD_E_NOMEM; break; }
        got++;
        s = kv_range_step(c, it, r.pfx, r.pl, 0, &kp, &kl, &vp, &vl);
    }
    c->drv->iter_close(it);
    if (s == FD_NOTFOUND) s = got == n ? FD_OK : FD_E_CORRUPT;
    if (s != FD_OK) c->out->len = mark;
    return s;
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
        while (s == FD_OK && kv_list_next(&l, &off, &p, &n)) s = member_change(c, &r, p, n, 0, &removed);
        r.m.size -= (uint64_t)removed;
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

/* ---------------------------------------------------------------- SINTER / SUNION / SDIFF */

enum { OP_INTER, OP_UNION, OP_DIFF };

/* Where results go: the reply (mode 0), a list (1), or a count (2, with an
 * optional limit). */
typedef struct sink {
    int mode;
    kv_ctx *c;
    kv_list l;
    long long n, limit;
} sink;

/* FD_OK, 1 (limit reached: stop) or FD_E_*. */
static int emit(sink *k, const char *mb, size_t ml)
{
    k->n++;
    if (k->mode == 0) return resp_add_bulk(k->c->out, mb, ml) ? FD_E_NOMEM : FD_OK;
    if (k->mode == 1) return kv_list_add(&k->l, mb, ml, NULL, 0);
    return k->limit && k->n >= k->limit ? 1 : FD_OK;
}

/* Walk the members of sets[i], calling the op's test for each. */
static int setop_walk(kv_ctx *c, sref *sets, int nsets, int i, int op, sink *k)
{
    const sref *r = &sets[i];
    if (!r->m.live) return FD_OK;
    kv_iter *it;
    FD_TRY(c->drv->iter_open(c->txn, &it));
    const void *kp, *vp; size_t kl, vl;
    int s = kv_range_seek(c, it, r->pfx, r->pl, r->pfx, r->pl, 0, &kp, &kl, &vp, &vl);
    while (s == FD_OK) {
        const char *mb, *v; size_t ml, vvl;
        if ((s = kv_elem_decode(kp, kl, r->pl, vp, vl, &mb, &ml, &v, &vvl)) != FD_OK) break;
        int keep = 1;
        for (int j = 0; j < nsets && keep; j++) {
            if (j == i) continue;
            if (op == OP_UNION && j > i) break;          /* only the earlier sets */
            int y = is_member(c, &sets[j], mb, ml);
            if (y < 0) { s = -y; break; }
            keep = op == OP_INTER ? y : !y;
        }
        if (s != FD_OK) break;
        if (keep && (s = emit(k, mb, ml)) != FD_OK) break;
        s = kv_range_step(c, it, r->pfx, r->pl, 0, &kp, &kl, &vp, &vl);
    }
    c->drv->iter_close(it);
    if (s == FD_NOTFOUND || s == 1) s = FD_OK;
    return s;
}

/* Compute op over the sets named by argv[first .. first+n). Every key's
 * type is checked first (WRONGTYPE even when another key is missing). */
static int setop(kv_ctx *c, int first, int n, int op, sink *k)
{
    sref *sets = calloc((size_t)n, sizeof *sets);
    if (!sets) return FD_E_NOMEM;
    int s = FD_OK, empty = 0, smallest = -1;
    for (int j = 0; j < n && s == FD_OK; j++) {
        s = sref_load(c, &sets[j], &c->argv[first + j]);
        if (s != FD_OK) break;
        if (!sets[j].m.live) {
            if (op == OP_INTER) empty = 1;     /* but the later keys' types are still checked */
            continue;
        }
        if (smallest < 0 || sets[j].m.size < sets[smallest].m.size) smallest = j;
    }
    if (s == FD_OK && !empty) {
        if (op == OP_INTER) s = smallest >= 0 ? setop_walk(c, sets, n, smallest, op, k) : FD_OK;
        else if (op == OP_DIFF) s = setop_walk(c, sets, n, 0, op, k);
        else for (int i = 0; i < n && s == FD_OK; i++) s = setop_walk(c, sets, n, i, op, k);
    }
    free(sets);
    return s;
}

static int setop_reply(kv_ctx *c, int op)
{
    sink k = { .mode = 0, .c = c };
    size_t mark = c->out->len;
    int s = setop(c, 1, c->argc - 1, op, &k);
    if (s == FD_OK && kv_reply_header(c->out, mark, 's', k.n)) s = FD_E_NOMEM;
    if (s != FD_OK) c->out->len = mark;
    return s;
}

static int setop_store(kv_ctx *c, int op)
{
    sink k = { .mode = 1, .c = c };
    c->read = 1;                          /* the sources: lookupKeyRead (keymiss) */
    int s = setop(c, 2, c->argc - 2, op, &k);
    c->read = 0;
    if (s == FD_OK) {
        sref d;
        kv_key_init(&d.k, c->argv[1].ptr, c->argv[1].len);
        s = kv_lookup(c, &d.k, &d.m);
        int was = d.m.live;
        if (s == FD_OK && d.m.found) {
            s = kv_delete(c, &d.k, &d.m);
            memset(&d.m, 0, sizeof d.m);
        }
        if (s == FD_OK && k.l.n) {
            s = create_if_missing(c, &d);
            size_t off = 0; const char *p; size_t n;
            long long added = 0;
            while (s == FD_OK && kv_list_next(&k.l, &off, &p, &n)) s = member_change(c, &d, p, n, 1, &added);
            d.m.size = (uint64_t)added;
            c->overwrite = was;
            if (s == FD_OK) s = kv_coll_save(c, &d.k, &d.m);
            c->overwrite = 0;
            static const char *const ev[] = { [OP_INTER] = "sinterstore", [OP_UNION] = "sunionstore",
                                              [OP_DIFF] = "sdiffstore" };
            if (s == FD_OK) KV_NOTIFY_ARG(c, SET, ev[op], 1);
        } else if (s == FD_OK && was) {
            KV_NOTIFY_ARG(c, GENERIC, "del", 1);
        }
        if (s == FD_OK && resp_add_int(c->out, k.n)) s = FD_E_NOMEM;
    }
    kv_list_free(&k.l);
    return s;
}

int kv_cmd_sinter(kv_ctx *c)       { return setop_reply(c, OP_INTER); }
int kv_cmd_sunion(kv_ctx *c)       { return setop_reply(c, OP_UNION); }
int kv_cmd_sdiff(kv_ctx *c)        { return setop_reply(c, OP_DIFF); }
int kv_cmd_sinterstore(kv_ctx *c)  { return setop_store(c, OP_INTER); }
int kv_cmd_sunionstore(kv_ctx *c)  { return setop_store(c, OP_UNION); }
int kv_cmd_sdiffstore(kv_ctx *c)   { return setop_store(c, OP_DIFF); }

int kv_cmd_sintercard(kv_ctx *c)
{
    long long numkeys, limit;
    int replied, st = fd_parse_sintercard(c->argv, c->argc, &numkeys, &limit, c->out, &replied);
    if (st != FD_OK || replied) return st;
    sink k = { .mode = 2, .c = c, .limit = limit };
    FD_TRY(setop(c, 2, (int)numkeys, OP_INTER, &k));
    FD_OUT(resp_add_int(c->out, k.n));
    return FD_OK;
}

int kv_cmd_sscan(kv_ctx *c) { return kv_subscan(c, KV_T_SET, KV_TAG_SET); }
