/* kv_bits.c — the bitmap commands (SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP,
 * BITFIELD, BITFIELD_RO) and LCS over the ordered-KV layer: the key lookup,
 * the type check and the store around the pure value library
 * storage/value/bits.h and lcs.h, in the order of checks those headers give
 * (Redis 7.0's bitops.c and t_string.c).
 *
 * A string lives inline in its key's metadata record (kv.h), so a write
 * that changes one bit rewrites the record (header + value): SETBIT on a
 * string of n bytes costs one read and one put of about n bytes
 * (docs/encoding.md, "Bitmaps" has the measured figures). A SETBIT or
 * BITFIELD that changes nothing (same bit, no growth) writes nothing. */
#include <stdlib.h>
#include <string.h>
#include "kv.h"
#include "../value/bits.h"
#include "../value/lcs.h"

int kv_string_lookup(kv_ctx *c, kv_key *k, kv_meta *m, const resp_arg *key)
{
    kv_key_init(k, key->ptr, key->len);
    FD_TRY(kv_lookup(c, k, m));
    if (m->live && m->type != KV_T_STRING) return FD_E_WRONGTYPE;
    return FD_OK;
}

/* An error text of the value library as the reply; the command is done. */
static int reply_err(kv_ctx *c, const char *e)
{
    FD_OUT(resp_add_error(c->out, e));
    return FD_OK;
}

int kv_cmd_setbit(kv_ctx *c)
{
    fd_setbit p;
    const char *e = fd_setbit_parse(c->argv, c->argc, c->max_bulk, &p);
    if (e) return reply_err(c, e);
    kv_key k; kv_meta m;
    FD_TRY(kv_string_lookup(c, &k, &m, &c->argv[1]));
    size_t old = m.live ? m.vlen : 0;
    fd_bitpatch pt;
    fd_setbit_plan(&p, m.live ? (const unsigned char *)m.val : NULL, old, &pt);
    if (pt.write) {
        /* the old value is driver memory the put may reuse: build the new one aside */
        unsigned char *b = (unsigned char *)kv_scratch(c->st, pt.newlen);
        if (!b) return FD_E_NOMEM;
        if (old) memcpy(b, m.val, old);
        fd_bitpatch_apply(&pt, b, old);
        FD_TRY(kv_write_string(c, &k, &m, m.live ? m.expire : 0, b, pt.newlen, NULL, 0));
        KV_NOTIFY_ARG(c, STRING, "setbit", 1);
    } else
        c->untouched = 1;                 /* the bit was already so (Redis 7.0 signals nothing) */
    FD_OUT(resp_add_int(c->out, pt.oldbit));
    return FD_OK;
}

int kv_cmd_getbit(kv_ctx *c)
{
    uint64_t off;
    const char *e = fd_bit_parse_offset(&c->argv[2], 0, c->max_bulk, &off);
    if (e) return reply_err(c, e);
    kv_key k; kv_meta m;
    FD_TRY(kv_string_lookup(c, &k, &m, &c->argv[1]));
    FD_OUT(resp_add_int(c->out, m.live ? fd_getbit((const unsigned char *)m.val, m.vlen, off) : 0));
    return FD_OK;
}

int kv_cmd_bitcount(kv_ctx *c)
{
    kv_key k; kv_meta m;
    FD_TRY(kv_string_lookup(c, &k, &m, &c->argv[1]));
    if (!m.live) { FD_OUT(resp_add_int(c->out, 0)); return FD_OK; }
    FD_OUT(fd_bitcount_cmd(c->argv, c->argc, (const unsigned char *)m.val, m.vlen, c->out));
    return FD_OK;
}

int kv_cmd_bitpos(kv_ctx *c)
{
    int bit;
    const char *e = fd_bitpos_parse_bit(c->argv, c->argc, &bit);
    if (e) return reply_err(c, e);
    kv_key k; kv_meta m;
    FD_TRY(kv_string_lookup(c, &k, &m, &c->argv[1]));
    FD_OUT(fd_bitpos_cmd(c->argv, c->argc, bit, m.live ? (const unsigned char *)m.val : NULL,
                         m.live ? m.vlen : 0, m.live, c->out));
    return FD_OK;
}

int kv_cmd_bitop(kv_ctx *c)
{
    int op;
    const char *e = fd_bitop_parse(c->argv, c->argc, &op);
    if (e) return reply_err(c, e);
    unsigned char *acc = NULL;
    size_t n = 0, cap = 0;
    for (int i = 3; i < c->argc; i++) {
        kv_key k; kv_meta m;
        c->read = 1;                      /* the sources: lookupKeyRead (keymiss) */
        int s = kv_string_lookup(c, &k, &m, &c->argv[i]);
        c->read = 0;
        if (s != FD_OK) { free(acc); return s; }
        if (fd_bitop_add(op, &acc, &n, &cap, m.live ? (const unsigned char *)m.val : NULL,
                         m.live ? m.vlen : 0, i == 3)) { free(acc); return FD_E_NOMEM; }
    }
    kv_key dk; kv_meta dm;
    kv_key_init(&dk, c->argv[2].ptr, c->argv[2].len);
    int s = kv_lookup(c, &dk, &dm);
    if (s == FD_OK) {
        int was = dm.live;
        if (n) s = kv_write_string(c, &dk, &dm, 0, acc, n, NULL, 0);
        else if (dm.found) s = kv_delete(c, &dk, &dm);
        if (s == FD_OK && n) KV_NOTIFY_ARG(c, STRING, "set", 2);
        else if (s == FD_OK && was) KV_NOTIFY_ARG(c, GENERIC, "del", 2);
    }
    free(acc);
    FD_TRY(s);
    FD_OUT(resp_add_int(c->out, (long long)n));
    return FD_OK;
}

static int bitfield_generic(kv_ctx *c, int ro)
{
    fd_bitfield bf;
    int replied;
    int s = fd_bitfield_begin(c->argv, c->argc, ro, c->max_bulk, &bf, c->out, &replied);
    if (s != FD_OK || replied) goto done;
    kv_key k; kv_meta m;
    if ((s = kv_string_lookup(c, &k, &m, &c->argv[1])) != FD_OK) goto done;
    size_t old = m.live ? m.vlen : 0;
    if (bf.readonly) {
        if (fd_bitfield_exec(&bf, m.live ? (unsigned char *)m.val : NULL, old, c->out, NULL, NULL, NULL))
            s = FD_E_NOMEM;
        goto done;
    }
    size_t nl = fd_bitfield_newlen(&bf, old);
    unsigned char *b = (unsigned char *)kv_scratch(c->st, nl);
    if (!b) { s = FD_E_NOMEM; goto done; }
    size_t mark = c->out->len;
    int store;
    if (fd_bitfield_apply(&bf, (const unsigned char *)m.val, old, m.live, b, nl, c->out, &store)) {
        s = FD_E_NOMEM;
        goto done;
    }
    if (store) {
        s = kv_write_string(c, &k, &m, m.live ? m.expire : 0, b, nl, NULL, 0);
        if (s != FD_OK) c->out->len = mark;
        else KV_NOTIFY_ARG(c, STRING, "setbit", 1);
    } else
        c->untouched = 1;                 /* no byte changed (Redis 7.0: no `changes`) */
done:
    fd_bitfield_end(&bf);
    return s;
}

int kv_cmd_bitfield(kv_ctx *c)    { return bitfield_generic(c, 0); }
int kv_cmd_bitfield_ro(kv_ctx *c) { return bitfield_generic(c, 1); }

/* ---------------------------------------------------------------- LCS */

int kv_cmd_lcs(kv_ctx *c)
{
    kv_key ka, kb; kv_meta ma, mb;
    kv_key_init(&ka, c->argv[1].ptr, c->argv[1].len);
    kv_key_init(&kb, c->argv[2].ptr, c->argv[2].len);
    FD_TRY(kv_lookup(c, &ka, &ma));
    FD_TRY(kv_lookup(c, &kb, &mb));    /* reads only: ma's memory stays valid */
    if ((ma.live && ma.type != KV_T_STRING) || (mb.live && mb.type != KV_T_STRING))
        return reply_err(c, FD_LCS_ERR_TYPE);
    fd_lcs o;
    const char *e = fd_lcs_parse(c->argv, c->argc, &o);
    if (e) return reply_err(c, e);
    FD_OUT(fd_lcs_reply(&o, ma.live ? (const unsigned char *)ma.val : NULL, ma.live ? ma.vlen : 0,
                        mb.live ? (const unsigned char *)mb.val : NULL, mb.live ? mb.vlen : 0,
                        c->max_bulk, c->out));
    return FD_OK;
}
