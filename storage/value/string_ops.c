/* string_ops.c — bitmaps, LCS and HyperLogLog over fd_str_io (see
 * string_ops.h), with Redis 7.0's semantics. */
#include <stdlib.h>
#include <string.h>
#include "string_ops.h"
#include "bits.h"
#include "hll.h"
#include "lcs.h"
#include "../status.h"
#include "../host.h"

#define EVENT(cls, name, key) do { if (fd_notify_on(FD_NOTIFY_##cls)) \
                                       io->event(h, FD_NOTIFY_##cls, name, key); } while (0)
#define OUT(expr) ((expr) ? FD_E_NOMEM : FD_OK)
#define UV(x) ((x).string ? (const unsigned char *)(x).v : NULL)
#define UL(x) ((x).string ? (x).len : 0)

/* An error text of the value library as the reply: the command is done. */
static int reply_err(resp_out *out, const char *e) { return OUT(resp_add_error(out, e)); }

/* (optional) the key was left as it was: no `changes` for WATCH */
static void untouched(const fd_str_io *io, void *h)
{
    if (io->untouched) io->untouched(h, 0);
}

/* ---------------------------------------------------------------- bitmaps */

int fd_sop_setbit(const fd_str_io *io, void *h, int argc, const resp_arg *argv, long long max_bulk, resp_out *out)
{
    fd_setbit p;
    const char *e = fd_setbit_parse(argv, argc, max_bulk, &p);
    if (e) return reply_err(out, e);
    fd_str_sk sk;
    fd_str_val v;
    int s = io->open(h, &argv[1], FD_STR_STRING, &sk, &v);
    fd_bitpatch pt = { 0 };
    if (s == FD_OK) {
        size_t old = UL(v);
        fd_setbit_plan(&p, UV(v), old, &pt);
        if (pt.write) {
            unsigned char *b = (unsigned char *)io->scratch(h, &sk, pt.newlen);
            if (!b) return fd_str_close(io, h, &sk, FD_E_NOMEM);
            if (old) memcpy(b, v.v, old);
            fd_bitpatch_apply(&pt, b, old);
            s = io->write(h, &sk, &argv[1], v.live ? v.expire : 0, (const char *)b, pt.newlen, NULL, 0);
            if (s == FD_OK) EVENT(STRING, "setbit", &argv[1]);
        } else {
            untouched(io, h);             /* the bit was already so (Redis 7.0 signals nothing) */
        }
    }
    if (s == FD_OK) s = OUT(resp_add_int(out, pt.oldbit));
    return fd_str_close(io, h, &sk, s);
}

int fd_sop_getbit(const fd_str_io *io, void *h, const resp_arg *argv, long long max_bulk, resp_out *out)
{
    uint64_t off;
    const char *e = fd_bit_parse_offset(&argv[2], 0, max_bulk, &off);
    if (e) return reply_err(out, e);
    fd_str_sk sk;
    fd_str_val v;
    int s = io->open(h, &argv[1], FD_STR_STRING, &sk, &v);
    if (s == FD_OK) s = OUT(resp_add_int(out, v.string ? fd_getbit(UV(v), v.len, off) : 0));
    return fd_str_close(io, h, &sk, s);
}

int fd_sop_bitcount(const fd_str_io *io, void *h, int argc, const resp_arg *argv, resp_out *out)
{
    fd_str_sk sk;
    fd_str_val v;
    int s = io->open(h, &argv[1], FD_STR_STRING, &sk, &v);
    if (s == FD_OK) s = OUT(v.string ? fd_bitcount_cmd(argv, argc, UV(v), v.len, out) : resp_add_int(out, 0));
    return fd_str_close(io, h, &sk, s);
}

int fd_sop_bitpos(const fd_str_io *io, void *h, int argc, const resp_arg *argv, resp_out *out)
{
    int bit;
    const char *e = fd_bitpos_parse_bit(argv, argc, &bit);
    if (e) return reply_err(out, e);
    fd_str_sk sk;
    fd_str_val v;
    int s = io->open(h, &argv[1], FD_STR_STRING, &sk, &v);
    if (s == FD_OK) s = OUT(fd_bitpos_cmd(argv, argc, bit, UV(v), UL(v), v.string, out));
    return fd_str_close(io, h, &sk, s);
}

int fd_sop_bitop(const fd_str_io *io, void *h, int argc, const resp_arg *argv, resp_out *out)
{
    int op;
    const char *e = fd_bitop_parse(argv, argc, &op);
    if (e) return reply_err(out, e);
    unsigned char *acc = NULL;
    size_t n = 0, cap = 0;
    fd_str_sk sk;
    fd_str_val v;
    for (int i = 3; i < argc; i++) {
        int s = io->open(h, &argv[i], FD_STR_STRING | FD_STR_SOURCE, &sk, &v);   /* lookupKeyRead */
        if (s == FD_OK && fd_bitop_add(op, &acc, &n, &cap, UV(v), UL(v), i == 3)) s = FD_E_NOMEM;
        fd_str_close(io, h, &sk, s);
        if (s != FD_OK) { free(acc); return s; }
    }
    int s = io->open(h, &argv[2], FD_STR_ANY, &sk, &v);          /* whatever it holds goes */
    if (s == FD_OK) {
        int was = v.live;
        if (n) s = io->write(h, &sk, &argv[2], 0, (const char *)acc, n, NULL, 0);
        else if (v.found) s = io->del(h, &sk, &argv[2]);
        if (s == FD_OK && n) EVENT(STRING, "set", &argv[2]);
        else if (s == FD_OK && was) EVENT(GENERIC, "del", &argv[2]);
    }
    free(acc);
    if (s == FD_OK) s = OUT(resp_add_int(out, (long long)n));
    return fd_str_close(io, h, &sk, s);
}

int fd_sop_bitfield(const fd_str_io *io, void *h, int argc, const resp_arg *argv, int ro, long long max_bulk,
                    resp_out *out)
{
    fd_bitfield bf;
    int replied;
    int s = fd_bitfield_begin(argv, argc, ro, max_bulk, &bf, out, &replied);
    if (s != FD_OK || replied) { fd_bitfield_end(&bf); return s; }
    fd_str_sk sk;
    fd_str_val v;
    s = io->open(h, &argv[1], FD_STR_STRING, &sk, &v);
    size_t old = UL(v);
    if (s == FD_OK && bf.readonly) {
        if (fd_bitfield_exec(&bf, (unsigned char *)UV(v), old, out, NULL, NULL, NULL)) s = FD_E_NOMEM;
    } else if (s == FD_OK) {
        size_t nl = fd_bitfield_newlen(&bf, old), mark = out->len;
        unsigned char *b = (unsigned char *)io->scratch(h, &sk, nl ? nl : 1);
        int store = 0;
        if (!b || fd_bitfield_apply(&bf, UV(v), old, v.string, b, nl, out, &store)) s = FD_E_NOMEM;
        else if (store) {
            s = io->write(h, &sk, &argv[1], v.live ? v.expire : 0, (const char *)b, nl, NULL, 0);
            if (s != FD_OK) out->len = mark;
            else EVENT(STRING, "setbit", &argv[1]);
        } else {
            untouched(io, h);             /* no byte changed (Redis 7.0: no `changes`) */
        }
    }
    fd_bitfield_end(&bf);
    return fd_str_close(io, h, &sk, s);
}

/* ---------------------------------------------------------------- LCS */

int fd_sop_lcs(const fd_str_io *io, void *h, int argc, const resp_arg *argv, long long max_bulk, resp_out *out)
{
    fd_str_sk ska, skb;
    fd_str_val a, b;
    int s = io->open(h, &argv[1], FD_STR_ANY_VALUE, &ska, &a);
    if (s != FD_OK) return fd_str_close(io, h, &ska, s);
    s = io->open(h, &argv[2], FD_STR_ANY_VALUE, &skb, &b);       /* reads only: a's value stays valid */
    if (s == FD_OK) {
        fd_lcs o;
        const char *e = (a.live && !a.string) || (b.live && !b.string) ? FD_LCS_ERR_TYPE : fd_lcs_parse(argv, argc, &o);
        s = OUT(e ? resp_add_error(out, e) : fd_lcs_reply(&o, UV(a), UL(a), UV(b), UL(b), max_bulk, out));
    }
    fd_str_close(io, h, &skb, s);
    return fd_str_close(io, h, &ska, s);
}

/* ---------------------------------------------------------------- HyperLogLog */

int fd_sop_pfadd(const fd_str_io *io, void *h, int argc, const resp_arg *argv, resp_out *out)
{
    fd_str_sk sk;
    fd_str_val v;
    int s = io->open(h, &argv[1], FD_STR_STRING, &sk, &v);
    if (s != FD_OK) return fd_str_close(io, h, &sk, s);
    unsigned char *buf = (unsigned char *)io->scratch(h, &sk, FD_HLL_BUF_SIZE);
    if (!buf) return fd_str_close(io, h, &sk, FD_E_NOMEM);
    size_t len;
    int upd;
    const char *e = fd_pfadd_value(argv + 2, argc - 2, UV(v), UL(v), v.string, buf, &len, &upd);
    if (e) return fd_str_close(io, h, &sk, reply_err(out, e));
    if (upd) s = io->write(h, &sk, &argv[1], v.live ? v.expire : 0, (const char *)buf, len, NULL, 0);
    if (s == FD_OK && upd) EVENT(STRING, "pfadd", &argv[1]);
    if (s == FD_OK) s = OUT(resp_add_int(out, upd));
    return fd_str_close(io, h, &sk, s);
}

/* Merge every key of argv[1..argc) into regs (missing keys skipped;
 * source: each a lookupKeyRead). FD_OK with *err NULL, or with *err the
 * reply text of a bad value; FD_E_* on storage. */
static int merge_keys(const fd_str_io *io, void *h, int argc, const resp_arg *argv, int source, uint8_t *regs,
                      int *dense, const char **err)
{
    *err = NULL;
    for (int i = 1; i < argc && !*err; i++) {
        fd_str_sk sk;
        fd_str_val v;
        int s = io->open(h, &argv[i], FD_STR_STRING | (source ? FD_STR_SOURCE : 0), &sk, &v);
        if (s == FD_OK && v.string) *err = fd_hll_merge_raw(regs, UV(v), v.len, dense);
        fd_str_close(io, h, &sk, s);
        FD_TRY(s);
    }
    return FD_OK;
}

int fd_sop_pfcount(const fd_str_io *io, void *h, int argc, const resp_arg *argv, resp_out *out)
{
    const char *e = NULL;
    int s;
    if (argc == 2) {
        fd_str_sk sk;
        fd_str_val v;
        s = io->open(h, &argv[1], FD_STR_STRING, &sk, &v);
        uint64_t card = 0;
        if (s == FD_OK && v.string && !(e = fd_hll_check(UV(v), v.len))) {
            unsigned char *buf = (unsigned char *)io->scratch(h, &sk, v.len ? v.len : 1);
            int wrote = 0;
            if (!buf) return fd_str_close(io, h, &sk, FD_E_NOMEM);
            memcpy(buf, v.v, v.len);
            e = fd_hll_card(buf, v.len, &card, &wrote);
            if (!e && wrote)        /* a stale cached cardinality: written back, as Redis does */
                s = io->write(h, &sk, &argv[1], v.expire, (const char *)buf, v.len, NULL, 0);
        }
        if (s == FD_OK) s = OUT(e ? resp_add_error(out, e) : resp_add_int(out, (long long)card));
        return fd_str_close(io, h, &sk, s);
    }
    uint8_t *regs = calloc(1, FD_HLL_REGISTERS);
    if (!regs) return FD_E_NOMEM;
    s = merge_keys(io, h, argc, argv, 0, regs, NULL, &e);
    if (s == FD_OK) s = OUT(e ? resp_add_error(out, e) : resp_add_int(out, (long long)fd_hll_count_raw(regs)));
    free(regs);
    return s;
}

int fd_sop_pfmerge(const fd_str_io *io, void *h, int argc, const resp_arg *argv, resp_out *out)
{
    uint8_t *regs = calloc(1, FD_HLL_REGISTERS);
    if (!regs) return FD_E_NOMEM;
    int dense = 0;
    const char *e;
    int s = merge_keys(io, h, argc, argv, 1, regs, &dense, &e);  /* every key, the destination first */
    if (s == FD_OK && !e) {
        fd_str_sk sk;
        fd_str_val v;
        s = io->open(h, &argv[1], FD_STR_STRING, &sk, &v);
        unsigned char *buf = s == FD_OK ? (unsigned char *)io->scratch(h, &sk, FD_HLL_BUF_SIZE) : NULL;
        size_t len;
        if (s == FD_OK && !buf) s = FD_E_NOMEM;
        if (s == FD_OK && !(e = fd_pfmerge_value(regs, dense, UV(v), UL(v), v.string, buf, &len))) {
            s = io->write(h, &sk, &argv[1], v.live ? v.expire : 0, (const char *)buf, len, NULL, 0);
            if (s == FD_OK) EVENT(STRING, "pfadd", &argv[1]);
        }
        fd_str_close(io, h, &sk, s);
    }
    free(regs);
    if (s == FD_OK) s = OUT(e ? resp_add_error(out, e) : resp_add_status(out, "OK"));
    return s;
}
