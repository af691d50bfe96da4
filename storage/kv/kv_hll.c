/* kv_hll.c — PFADD, PFCOUNT and PFMERGE over the ordered-KV layer: lookup,
 * type checks and the store around storage/value/hll.h (Redis 7.0's
 * hyperloglog.c byte layout, so a value copied from Redis with GET/SET
 * keeps working and the counts are redis-server's).
 *
 * An HLL is a plain string (sparse: tens to ~3000 bytes; dense: 12304), so
 * every write rewrites the key's metadata record. PFCOUNT of one key writes
 * the value back when it computed a stale cached cardinality, as Redis
 * does; the key's TTL stays (PFADD/PFMERGE too). */
#include <stdlib.h>
#include <string.h>
#include "kv.h"
#include "../value/hll.h"

int kv_cmd_pfadd(kv_ctx *c)
{
    kv_key k; kv_meta m;
    FD_TRY(kv_string_lookup(c, &k, &m, &c->argv[1]));
    unsigned char *buf = (unsigned char *)kv_scratch(c->st, FD_HLL_BUF_SIZE);
    if (!buf) return FD_E_NOMEM;
    size_t len;
    int upd;
    const char *e = fd_pfadd_value(c->argv + 2, c->argc - 2, (const unsigned char *)m.val, m.vlen, m.live,
                                   buf, &len, &upd);
    if (e) { FD_OUT(resp_add_error(c->out, e)); return FD_OK; }
    if (upd) FD_TRY(kv_write_string(c, &k, &m, m.live ? m.expire : 0, buf, len, NULL, 0));
    if (upd) KV_NOTIFY_ARG(c, STRING, "pfadd", 1);
    FD_OUT(resp_add_int(c->out, upd));
    return FD_OK;
}

/* Merge every key of argv[1..argc) into regs (missing keys skipped).
 * FD_OK with *err NULL, or with *err the reply text; FD_E_* on storage. */
static int merge_keys(kv_ctx *c, uint8_t *regs, int *dense, const char **err)
{
    *err = NULL;
    for (int i = 1; i < c->argc; i++) {
        kv_key k; kv_meta m;
        FD_TRY(kv_string_lookup(c, &k, &m, &c->argv[i]));
        if (!m.live) continue;
        if ((*err = fd_hll_merge_raw(regs, (const unsigned char *)m.val, m.vlen, dense))) return FD_OK;
    }
    return FD_OK;
}

int kv_cmd_pfcount(kv_ctx *c)
{
    const char *e;
    if (c->argc == 2) {
        kv_key k; kv_meta m;
        FD_TRY(kv_string_lookup(c, &k, &m, &c->argv[1]));
        if (!m.live) { FD_OUT(resp_add_int(c->out, 0)); return FD_OK; }
        if ((e = fd_hll_check((const unsigned char *)m.val, m.vlen))) {
            FD_OUT(resp_add_error(c->out, e));
            return FD_OK;
        }
        unsigned char *buf = (unsigned char *)kv_scratch(c->st, m.vlen);
        if (!buf) return FD_E_NOMEM;
        memcpy(buf, m.val, m.vlen);
        uint64_t card;
        int wrote = 0;
        if ((e = fd_hll_card(buf, m.vlen, &card, &wrote))) { FD_OUT(resp_add_error(c->out, e)); return FD_OK; }
        if (wrote) FD_TRY(kv_write_string(c, &k, &m, m.expire, buf, m.vlen, NULL, 0));
        FD_OUT(resp_add_int(c->out, (long long)card));
        return FD_OK;
    }
    uint8_t *regs = calloc(1, FD_HLL_REGISTERS);
    if (!regs) return FD_E_NOMEM;
    int s = merge_keys(c, regs, NULL, &e);
    if (s == FD_OK) {
        if (e) s = resp_add_error(c->out, e) ? FD_E_NOMEM : FD_OK;
        else s = resp_add_int(c->out, (long long)fd_hll_count_raw(regs)) ? FD_E_NOMEM : FD_OK;
    }
    free(regs);
    return s;
}

int kv_cmd_pfmerge(kv_ctx *c)
{
    uint8_t *regs = calloc(1, FD_HLL_REGISTERS);
    if (!regs) return FD_E_NOMEM;
    int dense = 0;
    const char *e;
    c->read = 1;                          /* every key, the destination first: lookupKeyRead */
    int s = merge_keys(c, regs, &dense, &e);
    c->read = 0;
    if (s != FD_OK || e) goto out;
    kv_key k; kv_meta m;
    if ((s = kv_string_lookup(c, &k, &m, &c->argv[1])) != FD_OK) goto out;
    unsigned char *buf = (unsigned char *)kv_scratch(c->st, FD_HLL_BUF_SIZE);
    if (!buf) { s = FD_E_NOMEM; goto out; }
    size_t len;
    if ((e = fd_pfmerge_value(regs, dense, (const unsigned char *)m.val, m.vlen, m.live, buf, &len))) goto out;
    s = kv_write_string(c, &k, &m, m.live ? m.expire : 0, buf, len, NULL, 0);
    if (s == FD_OK) KV_NOTIFY_ARG(c, STRING, "pfadd", 1);
out:
    free(regs);
    FD_TRY(s);
    if (e) FD_OUT(resp_add_error(c->out, e));
    else FD_OUT(resp_add_status(c->out, "OK"));
    return FD_OK;
}
