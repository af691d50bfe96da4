/* kv_zsetops.c — the multi-key and whole-set sorted-set commands over the
 * ordered-KV layer: ZUNION / ZINTER / ZDIFF (+STORE), ZINTERCARD,
 * ZRANGESTORE, ZRANDMEMBER. The algorithms and argument checks are
 * storage/value/zsetops.c (shared with the MongoDB backend); this file reads
 * the inputs (sorted sets, and sets as score 1, as Redis) and writes the
 * destination.
 *
 * Costs: ZUNION/ZINTER/ZDIFF read every input whole (O(sum of sizes)) into
 * memory, as Redis iterates them; ZRANGESTORE is ZRANGE's walk (a seek, then
 * O(offset + count)) plus the writes; ZRANDMEMBER reads the whole set
 * (O(n): the layout has no positional index) — Redis is O(count). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "kv.h"
#include "../cmdargs.h"
#include "../value/zsetops.h"

/* ---------------------------------------------------------------- reading inputs */

static int add_ent(void *arg, const char *m, size_t ml, double score)
{
    return fd_zbuf_add(arg, m, ml, score) ? -1 : 0;
}

/* fd_zsetop_io.load: every member of the set or sorted set at key into a
 * fd_zbuf (sets: score 1), held until zs_release. */
static int zs_load(void *ud, const resp_arg *key, void **hold, fd_zsrc *src)
{
    kv_ctx *c = ud;
    fd_zbuf *z = calloc(1, sizeof *z);
    if (!(*hold = z)) return FD_E_NOMEM;
    *src = (fd_zsrc){ NULL, 0 };
    kv_zref r;
    kv_key_init(&r.k, key->ptr, key->len);
    FD_TRY(kv_lookup(c, &r.k, &r.m));
    if (!r.m.live) return FD_OK;
    int s;
    if (r.m.type == KV_T_ZSET) {
        FD_TRY(kv_zref_load(c, &r, key));
        s = kv_zset_walk(c, &r, -INFINITY, 0, INFINITY, 0, add_ent, z);
    } else {
        if (r.m.type != KV_T_SET) return FD_E_WRONGTYPE;
        uint8_t pfx[KV_ELEM_MAX];
        size_t pl = kv_elem_prefix(pfx, &r.k, &r.m, KV_TAG_SET);
        kv_iter *it;
        FD_TRY(c->drv->iter_open(c->txn, &it));
        const void *kp, *vp; size_t kl, vl;
        s = kv_range_seek(c, it, pfx, pl, pfx, pl, 0, &kp, &kl, &vp, &vl);
        while (s == FD_OK) {
            const char *mb, *v; size_t ml, vvl;
            if ((s = kv_elem_decode(kp, kl, pl, vp, vl, &mb, &ml, &v, &vvl)) != FD_OK) break;
            if (fd_zbuf_add(z, mb, ml, 1.0)) { s = FD_E_NOMEM; break; }
            s = kv_range_step(c, it, pfx, pl, 0, &kp, &kl, &vp, &vl);
        }
        c->drv->iter_close(it);
        if (s == FD_NOTFOUND) s = FD_OK;
    }
    *src = (fd_zsrc){ z->a, z->n };
    return s;
}

static void zs_release(void *ud, void *hold)
{
    (void)ud;
    fd_zbuf_free(hold);
    free(hold);
}

/* fd_zsetop_io.check: a sorted set, a set or nothing (lookupKeyRead) */
static int zs_check(void *ud, const resp_arg *key)
{
    kv_ctx *c = ud;
    kv_key k;
    kv_meta m;
    kv_key_init(&k, key->ptr, key->len);
    c->read = 1;
    int s = kv_lookup(c, &k, &m);
    c->read = 0;                          /* the loads after the checks: no second keymiss */
    if (s == FD_OK && m.live && m.type != KV_T_ZSET && m.type != KV_T_SET) s = FD_E_WRONGTYPE;
    return s;
}

static int zs_store(void *ud, const resp_arg *dst, const fd_zent *res, size_t n, const char *event)
{
    return kv_zset_store(ud, dst, res, n, event);
}

/* ---------------------------------------------------------------- ZUNION / ZINTER / ZDIFF */

static const fd_zsetop_io zsetop_io = { zs_check, zs_load, zs_release, zs_store };

FD_ZSETOP_HANDLERS(kv, kv_ctx, zsetop_io)

/* ---------------------------------------------------------------- ZRANDMEMBER */

int kv_cmd_zrandmember(kv_ctx *c)
{
    int has_count, withscores, replied;
    long long count;
    FD_TRY(fd_parse_rand_count(c->argv, c->argc, "withscores", &has_count, &count, &withscores, c->out, &replied));
    if (replied) return FD_OK;
    kv_zref r;
    FD_TRY(kv_zref_load(c, &r, &c->argv[1]));
    if (!r.m.live) {
        FD_OUT(has_count ? resp_add_array(c->out, 0) : resp_add_null(c->out));
        return FD_OK;
    }
    if (has_count && count == 0) { FD_OUT(resp_add_array(c->out, 0)); return FD_OK; }
    fd_zbuf b = { 0 };
    int s = kv_zset_walk(c, &r, -INFINITY, 0, INFINITY, 0, add_ent, &b);
    uint64_t rng = kv_rand(c->st);
    size_t mark = c->out->len;
    if (s == FD_OK && !b.n) s = FD_E_CORRUPT;
    if (s == FD_OK && fd_zrandmember_reply(c->out, b.a, b.n, has_count, count, withscores, &rng)) {
        c->out->len = mark;
        s = FD_E_NOMEM;
    }
    fd_zbuf_free(&b);
    return s;
}
