/* kv_mpop.c — ZMPOP and LMPOP (the non-blocking forms) over the ordered-KV
 * layer. The pop of one key is kv_zset_mpop_one / kv_list_mpop_one
 * (storage/value/zset.c and list.c over this store). Arguments: fd_mpop_parse (storage/value/zsetops.h). */
#include <string.h>
#include "kv.h"
#include "../value/zsetops.h"

static int pop_one(void *ud, int zset, const resp_arg *key, int where, long long count, int *done)
{
    return zset ? kv_zset_mpop_one(ud, key, where, count, done) : kv_list_mpop_one(ud, key, !where, count, done);
}

int kv_cmd_zmpop(kv_ctx *c) { return fd_mpop_run(c->argv, c->argc, 1, pop_one, c, c->out); }
int kv_cmd_lmpop(kv_ctx *c) { return fd_mpop_run(c->argv, c->argc, 0, pop_one, c, c->out); }
