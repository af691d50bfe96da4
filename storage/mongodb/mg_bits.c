/* mg_bits.c — the MongoDB backend's bitmap commands (SETBIT, GETBIT,
 * BITCOUNT, BITPOS, BITOP, BITFIELD, BITFIELD_RO), LCS and HyperLogLog
 * (PFADD, PFCOUNT, PFMERGE): lookup, type check and store around the pure
 * library storage/value/ (bits.h, lcs.h, hll.h), in the order of checks
 * those headers give.
 *
 * A string is one document's `value` (BinData, or Int64 for a canonical
 * integer): MongoDB has no update operator that changes one bit of a
 * BinData ($bit works on integers only), so SETBIT/BITFIELD/PFADD read the
 * document and replace it whole: two round trips and the whole value
 * rewritten (docs/mongodb.md, "Bitmaps and HyperLogLog"). A write that
 * changes nothing is not sent. */
#include <stdlib.h>
#include <string.h>

#include "mg.h"
#include "../value/bits.h"
#include "../value/hll.h"
#include "../value/lcs.h"

static int reply_err(mg_ctx *c, const char *e)
{
    FD_OUT(resp_add_error(c->out, e));
    return FD_OK;
}

#define UV(m) ((m).live ? (const unsigned char *)(m).val : NULL)
#define UL(m) ((m).live ? (m).vlen : 0)

int mg_cmd_setbit(mg_ctx *c)
{
    fd_setbit p;
    const char *e = fd_setbit_parse(c->argv, c->argc, c->max_bulk, &p);
    if (e) return reply_err(c, e);
    mg_meta m;
    FD_TRY(mg_lookup_string(c, &c->argv[1], &m));
    size_t old = UL(m);
    fd_bitpatch pt;
    fd_setbit_plan(&p, UV(m), old, &pt);
    int s = FD_OK;
    if (pt.write) {
        unsigned char *b = malloc(pt.newlen);
        if (!b) { mg_meta_free(&m); return FD_E_NOMEM; }
        if (old) memcpy(b, m.val, old);
        fd_bitpatch_apply(&pt, b, old);
        s = mg_write_string(c, &c->argv[1], m.live ? m.expire : 0, (const char *)b, pt.newlen, NULL, 0);
        free(b);
        if (s == FD_OK) MG_NOTIFY_ARG(c, STRING, "setbit", 1);
    }
    mg_meta_free(&m);
    FD_TRY(s);
    FD_OUT(resp_add_int(c->out, pt.oldbit));
    return FD_OK;
}

int mg_cmd_getbit(mg_ctx *c)
{
    uint64_t off;
    const char *e = fd_bit_parse_offset(&c->argv[2], 0, c->max_bulk, &off);
    if (e) return reply_err(c, e);
    mg_meta m;
    FD_TRY(mg_lookup_string(c, &c->argv[1], &m));
    int bit = m.live ? fd_getbit(UV(m), m.vlen, off) : 0;
    mg_meta_free(&m);
    FD_OUT(resp_add_int(c->out, bit));
    return FD_OK;
}

int mg_cmd_bitcount(mg_ctx *c)
{
    mg_meta m;
    FD_TRY(mg_lookup_string(c, &c->argv[1], &m));
    int r = m.live ? fd_bitcount_cmd(c->argv, c->argc, UV(m), m.vlen, c->out) : resp_add_int(c->out, 0);
    mg_meta_free(&m);
    return r ? FD_E_NOMEM : FD_OK;
}

int mg_cmd_bitpos(mg_ctx *c)
{
    int bit;
    const char *e = fd_bitpos_parse_bit(c->argv, c->argc, &bit);
    if (e) return reply_err(c, e);
    mg_meta m;
    FD_TRY(mg_lookup_string(c, &c->argv[1], &m));
    int r = fd_bitpos_cmd(c->argv, c->argc, bit, UV(m), UL(m), m.live, c->out);
    mg_meta_free(&m);
    return r ? FD_E_NOMEM : FD_OK;
}

int mg_cmd_bitop(mg_ctx *c)
{
    int op;
    const char *e = fd_bitop_parse(c->argv, c->argc, &op);
    if (e) return reply_err(c, e);
    unsigned char *acc = NULL;
    size_t n = 0, cap = 0;
    for (int i = 3; i < c->argc; i++) {
        mg_meta m;
        c->read = 1;                      /* the sources: lookupKeyRead (keymiss) */
        int s = mg_lookup_string(c, &c->argv[i], &m);
        c->read = 0;
        if (s != FD_OK) { free(acc); return s; }
        int r = fd_bitop_add(op, &acc, &n, &cap, UV(m), UL(m), i == 3);
        mg_meta_free(&m);
        if (r) { free(acc); return FD_E_NOMEM; }
    }
    int was = 0, s = n ? FD_OK : mg_key_live(c, &c->argv[2], &was);
    if (s == FD_OK) s = n ? mg_write_string(c, &c->argv[2], 0, (const char *)acc, n, NULL, 0) : mg_delete(c, &c->argv[2]);
    free(acc);
    FD_TRY(s);
    if (n) MG_NOTIFY_ARG(c, STRING, "set", 2);
    else if (was) MG_NOTIFY_ARG(c, GENERIC, "del", 2);
    FD_OUT(resp_add_int(c->out, (long long)n));
    return FD_OK;
}

static int bitfield_generic(mg_ctx *c, int ro)
{
    fd_bitfield bf;
    unsigned char *b = NULL;
    mg_meta m;
    memset(&m, 0, sizeof m);
    int replied;
    int s = fd_bitfield_begin(c->argv, c->argc, ro, c->max_bulk, &bf, c->out, &replied);
    if (s != FD_OK || replied) goto done;
    if ((s = mg_lookup_string(c, &c->argv[1], &m)) != FD_OK) goto done;
    size_t old = UL(m);
    if (bf.readonly) {
        if (fd_bitfield_exec(&bf, (unsigned char *)UV(m), old, c->out, NULL, NULL, NULL)) s = FD_E_NOMEM;
        goto done;
    }
    size_t nl = fd_bitfield_newlen(&bf, old);
    if (!(b = malloc(nl ? nl : 1))) { s = FD_E_NOMEM; goto done; }
    size_t mark = c->out->len;
    int store;
    if (fd_bitfield_apply(&bf, UV(m), old, m.live, b, nl, c->out, &store)) { s = FD_E_NOMEM; goto done; }
    if (store) {
        s = mg_write_string(c, &c->argv[1], m.live ? m.expire : 0, (const char *)b, nl, NULL, 0);
        if (s != FD_OK) c->out->len = mark;
        else MG_NOTIFY_ARG(c, STRING, "setbit", 1);
    }
done:
    mg_meta_free(&m);
    free(b);
    fd_bitfield_end(&bf);
    return s;
}

int mg_cmd_bitfield(mg_ctx *c)    { return bitfield_generic(c, 0); }
int mg_cmd_bitfield_ro(mg_ctx *c) { return bitfield_generic(c, 1); }

/* ---------------------------------------------------------------- LCS */

int mg_cmd_lcs(mg_ctx *c)
{
    mg_meta a, b;
    FD_TRY(mg_lookup(c, &c->argv[1], &a, 1));
    int s = mg_lookup(c, &c->argv[2], &b, 1);
    if (s != FD_OK) { mg_meta_free(&a); return s; }
    fd_lcs o;
    const char *e = NULL;
    if ((a.live && a.type != MG_T_STRING) || (b.live && b.type != MG_T_STRING)) e = FD_LCS_ERR_TYPE;
    else e = fd_lcs_parse(c->argv, c->argc, &o);
    int r = e ? resp_add_error(c->out, e)
              : fd_lcs_reply(&o, UV(a), UL(a), UV(b), UL(b), c->max_bulk, c->out);
    mg_meta_free(&a);
    mg_meta_free(&b);
    return r ? FD_E_NOMEM : FD_OK;
}

/* ---------------------------------------------------------------- HyperLogLog */

int mg_cmd_pfadd(mg_ctx *c)
{
    mg_meta m;
    FD_TRY(mg_lookup_string(c, &c->argv[1], &m));
    unsigned char *buf = malloc(FD_HLL_BUF_SIZE);
    int s = FD_OK, upd = 0;
    size_t len;
    if (!buf) { s = FD_E_NOMEM; goto out; }
    const char *e = fd_pfadd_value(c->argv + 2, c->argc - 2, UV(m), UL(m), m.live, buf, &len, &upd);
    if (!e && upd) s = mg_write_string(c, &c->argv[1], m.live ? m.expire : 0, (const char *)buf, len, NULL, 0);
    if (!e && upd && s == FD_OK) MG_NOTIFY_ARG(c, STRING, "pfadd", 1);
    if (s == FD_OK && (e ? resp_add_error(c->out, e) : resp_add_int(c->out, upd))) s = FD_E_NOMEM;
out:
    free(buf);
    mg_meta_free(&m);
    return s;
}

/* Merge the keys argv[1..argc) into regs; *err: the reply text of a bad value. */
static int merge_keys(mg_ctx *c, uint8_t *regs, int *dense, const char **err)
{
    *err = NULL;
    for (int i = 1; i < c->argc; i++) {
        mg_meta m;
        FD_TRY(mg_lookup_string(c, &c->argv[i], &m));
        if (m.live) *err = fd_hll_merge_raw(regs, UV(m), m.vlen, dense);
        mg_meta_free(&m);
        if (*err) return FD_OK;
    }
    return FD_OK;
}

int mg_cmd_pfcount(mg_ctx *c)
{
    const char *e = NULL;
    int s = FD_OK;
    if (c->argc == 2) {
        mg_meta m;
        FD_TRY(mg_lookup_string(c, &c->argv[1], &m));
        uint64_t card = 0;
        unsigned char *buf = NULL;
        if (m.live && !(e = fd_hll_check(UV(m), m.vlen))) {
            if (!(buf = malloc(m.vlen))) { mg_meta_free(&m); return FD_E_NOMEM; }
            memcpy(buf, m.val, m.vlen);
            int wrote = 0;
            e = fd_hll_card(buf, m.vlen, &card, &wrote);
            if (!e && wrote) s = mg_write_string(c, &c->argv[1], m.expire, (const char *)buf, m.vlen, NULL, 0);
        }
        free(buf);
        mg_meta_free(&m);
        FD_TRY(s);
        FD_OUT(e ? resp_add_error(c->out, e) : resp_add_int(c->out, (long long)card));
        return FD_OK;
    }
    uint8_t *regs = calloc(1, FD_HLL_REGISTERS);
    if (!regs) return FD_E_NOMEM;
    s = merge_keys(c, regs, NULL, &e);
    if (s == FD_OK && (e ? resp_add_error(c->out, e) : resp_add_int(c->out, (long long)fd_hll_count_raw(regs))))
        s = FD_E_NOMEM;
    free(regs);
    return s;
}

int mg_cmd_pfmerge(mg_ctx *c)
{
    uint8_t *regs = calloc(1, FD_HLL_REGISTERS);
    unsigned char *buf = malloc(FD_HLL_BUF_SIZE);
    mg_meta m;
    memset(&m, 0, sizeof m);
    int dense = 0, s;
    const char *e = NULL;
    if (!regs || !buf) { s = FD_E_NOMEM; goto out; }
    c->read = 1;                          /* every key, the destination first: lookupKeyRead */
    s = merge_keys(c, regs, &dense, &e);
    c->read = 0;
    if (s != FD_OK || e) goto out;
    if ((s = mg_lookup_string(c, &c->argv[1], &m)) != FD_OK) goto out;
    size_t len;
    if ((e = fd_pfmerge_value(regs, dense, UV(m), UL(m), m.live, buf, &len))) goto out;
    s = mg_write_string(c, &c->argv[1], m.live ? m.expire : 0, (const char *)buf, len, NULL, 0);
    if (s == FD_OK) MG_NOTIFY_ARG(c, STRING, "pfadd", 1);
out:
    mg_meta_free(&m);
    free(regs);
    free(buf);
    FD_TRY(s);
    FD_OUT(e ? resp_add_error(c->out, e) : resp_add_status(c->out, "OK"));
    return FD_OK;
}
