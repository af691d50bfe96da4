/* mg_zsetops.c — ZUNION / ZINTER / ZDIFF (+STORE), ZINTERCARD, ZRANGESTORE,
 * ZRANDMEMBER, ZMPOP and LMPOP on the MongoDB backend. The algorithms and
 * argument checks are storage/value/zsetops.c (shared with the embedded
 * backends); this file loads the documents and writes the results. */
#include <stdlib.h>
#include <string.h>
#include "mg.h"
#include "../cmdargs.h"
#include "../value/zsetops.h"
#include "../clock.h"

/* ---------------------------------------------------------------- ZUNION / ZINTER / ZDIFF */

typedef struct input { mg_meta m; mg_zset Z; mg_list L; int is_set; fd_zent *set_ents; } input;

static void input_free(input *in)
{
    mg_zset_free(&in->Z);
    mg_list_free(&in->L);
    free(in->set_ents);
    mg_meta_free(&in->m);
}

/* fd_zsetop_io.load: the sorted set's or set's elements (a set's at score 1) */
static int zs_load(void *ud, const resp_arg *key, void **hold, fd_zsrc *src)
{
    mg_ctx *c = ud;
    input *in = calloc(1, sizeof *in);
    if (!(*hold = in)) return FD_E_NOMEM;
    *src = (fd_zsrc){ NULL, 0 };
    mg_meta t;
    FD_TRY(mg_lookup(c, key, &t, 0));
    int live = t.live, type = t.type;
    mg_meta_free(&t);
    if (!live) return FD_OK;
    if (type == MG_T_ZSET) {
        FD_TRY(mg_zset_load(c, key, &in->m, &in->Z));
        *src = (fd_zsrc){ (const fd_zent *)in->Z.a, in->Z.n };
        return FD_OK;
    }
    if (type != MG_T_SET) return FD_E_WRONGTYPE;
    in->is_set = 1;
    FD_TRY(mg_array_load(c, key, &in->m, &in->L, MG_T_SET));
    in->set_ents = malloc((in->L.n ? in->L.n : 1) * sizeof *in->set_ents);
    if (!in->set_ents) return FD_E_NOMEM;
    for (size_t i = 0; i < in->L.n; i++) in->set_ents[i] = (fd_zent){ in->L.p[i], in->L.l[i], 1.0 };
    *src = (fd_zsrc){ in->set_ents, in->L.n };
    return FD_OK;
}

static void zs_release(void *ud, void *hold)
{
    (void)ud;
    input_free(hold);
    free(hold);
}

/* fd_zsetop_io.check: a sorted set, a set or nothing (lookupKeyRead) */
static int zs_check(void *ud, const resp_arg *key)
{
    mg_ctx *c = ud;
    mg_meta t;
    c->read = 1;
    int s = mg_lookup(c, key, &t, 0);
    c->read = 0;                               /* the loads after the checks: no second keymiss */
    if (s != FD_OK) return s;                  /* mg_lookup freed t */
    if (t.live && t.type != MG_T_ZSET && t.type != MG_T_SET) s = FD_E_WRONGTYPE;
    mg_meta_free(&t);
    return s;
}

/* (mg.h) the destination of a STORE form: one document in Redis's order */
int mg_zstore(mg_ctx *c, const resp_arg *dst, const fd_zent *a, size_t n, const char *event)
{
    mg_meta m;
    FD_TRY(mg_lookup(c, dst, &m, 0));
    int found = m.found, was = m.live;
    mg_meta_free(&m);
    mg_meta fresh;
    memset(&fresh, 0, sizeof fresh);
    fresh.found = found;                    /* a new key: no TTL */
    mg_zset Z;
    memset(&Z, 0, sizeof Z);
    Z.a = malloc((n ? n : 1) * sizeof *Z.a);
    if (!Z.a) return FD_E_NOMEM;
    for (size_t i = 0; i < n; i++) Z.a[i] = (mg_zent){ a[i].m, a[i].ml, a[i].s };
    Z.n = Z.cap = n;
    Z.dirty = 1;
    int s = mg_zset_save(c, dst, &fresh, &Z);
    mg_zset_free(&Z);
    if (s == FD_OK && n) MG_NOTIFY(c, ZSET, event, dst->ptr, dst->len);
    else if (s == FD_OK && was) MG_NOTIFY(c, GENERIC, "del", dst->ptr, dst->len);
    return s;
}

static int zs_store(void *ud, const resp_arg *dst, const fd_zent *res, size_t n, const char *event)
{
    return mg_zstore(ud, dst, res, n, event);
}

static const fd_zsetop_io zsetop_io = { zs_check, zs_load, zs_release, zs_store };

FD_ZSETOP_HANDLERS(mg, mg_ctx, zsetop_io)

#define ZSET_DONE(st) do { int st_ = (st); mg_zset_free(&Z); mg_meta_free(&m); return st_; } while (0)

/* ---------------------------------------------------------------- ZRANDMEMBER */

static _Thread_local uint64_t rng_state;

int mg_cmd_zrandmember(mg_ctx *c)
{
    int has_count, withscores, replied;
    long long count;
    FD_TRY(fd_parse_rand_count(c->argv, c->argc, "withscores", &has_count, &count, &withscores, c->out, &replied));
    if (replied) return FD_OK;
    mg_meta m; mg_zset Z;
    FD_TRY(mg_zset_load(c, &c->argv[1], &m, &Z));
    if (!m.live || !Z.n)
        ZSET_DONE((has_count ? resp_add_array(c->out, 0) : resp_add_null(c->out)) ? FD_E_NOMEM : FD_OK);
    if (!rng_state) rng_state = (uint64_t)fd_mono_us() * 0x9e3779b97f4a7c15ULL | 1;
    size_t mark = c->out->len;
    if (fd_zrandmember_reply(c->out, (const fd_zent *)Z.a, Z.n, has_count, count, withscores, &rng_state)) {
        c->out->len = mark;
        ZSET_DONE(FD_E_NOMEM);
    }
    ZSET_DONE(FD_OK);
}

/* ---------------------------------------------------------------- ZMPOP / LMPOP */

static int pop_one(void *ud, int zset, const resp_arg *key, int where, long long count, int *done)
{
    /* (the events: value/zset.c and value/list.c) */
    return zset ? mg_zset_mpop_one(ud, key, where, count, done) : mg_list_mpop_one(ud, key, !where, count, done);
}

int mg_cmd_zmpop(mg_ctx *c) { return fd_mpop_run(c->argv, c->argc, 1, pop_one, c, c->out); }
int mg_cmd_lmpop(mg_ctx *c) { return fd_mpop_run(c->argv, c->argc, 0, pop_one, c, c->out); }
