/* kv_mpop.c — ZMPOP and LMPOP (the non-blocking forms) over the ordered-KV
 * layer. The pop of one key is kv_zset_mpop_one / kv_list_mpop_one, so the
 * blocking forms (BZMPOP/BLMPOP) can call the same core when a key becomes
 * ready. Arguments: fd_mpop_parse (storage/value/zsetops.h). */
#include <string.h>
#include "kv.h"
#include "../value/zsetops.h"

int kv_zset_mpop_one(kv_ctx *c, const resp_arg *key, int max, long long count, int *done)
{
    kv_zref r;
    *done = 0;
    FD_TRY(kv_zref_load(c, &r, key));
    if (!r.m.live) return FD_OK;
    kv_list l = { 0 };
    int s = kv_zset_pop(c, &r, max, count, &l);
    if (s == FD_OK) {
        size_t mark = c->out->len, off = 0;
        const char *p; size_t n;
        int e = resp_add_array(c->out, 2) || resp_add_bulk(c->out, key->ptr, key->len) ||
                resp_add_array(c->out, l.n);
        while (!e && kv_list_next(&l, &off, &p, &n))
            e = resp_add_array(c->out, 2) || resp_add_bulk(c->out, p + 8, n - 8) ||
                resp_add_double(c->out, kv_dec_double((const uint8_t *)p));
        if (e) { c->out->len = mark; s = FD_E_NOMEM; }
        else *done = 1;
    }
    kv_list_free(&l);
    return s;
}

static int pop_one(void *ud, int zset, const resp_arg *key, int where, long long count, int *done)
{
    return zset ? kv_zset_mpop_one(ud, key, where, count, done) : kv_list_mpop_one(ud, key, !where, count, done);
}

int kv_cmd_zmpop(kv_ctx *c) { return fd_mpop_run(c->argv, c->argc, 1, pop_one, c, c->out); }
int kv_cmd_lmpop(kv_ctx *c) { return fd_mpop_run(c->argv, c->argc, 0, pop_one, c, c->out); }
