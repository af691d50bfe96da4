/* string_ops.h — the commands that compute over a string value, written
 * once over the string adapter (strings.h's fd_str_io): the bitmaps
 * (SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD, BITFIELD_RO), LCS and
 * HyperLogLog (PFADD, PFCOUNT, PFMERGE) — the lookups, type checks,
 * writes, keyspace events and replies around the pure algorithms of
 * bits.h, lcs.h and hll.h, in the order of checks those headers give
 * (Redis 7.0's bitops.c, t_string.c, hyperloglog.c).
 *
 * A store keeps a string whole (kv: inline in the key's record; MongoDB:
 * one document's value), so a write that changes one bit rewrites the
 * value; a SETBIT or BITFIELD that changes nothing writes nothing (and
 * tells the store the key is untouched: WATCH does not see it).
 *
 * Module prefix: fd_sop. No global state; nothing blocks. */
#ifndef FRONTDOOR_VALUE_STRING_OPS_H
#define FRONTDOOR_VALUE_STRING_OPS_H

#include "strings.h"

/* One command over io: the reply goes to out (nothing on a failure);
 * max_bulk: proto-max-bulk-len. FD_OK or an FD_E_* status. */
int fd_sop_setbit(const fd_str_io *io, void *h, int argc, const resp_arg *argv, long long max_bulk, resp_out *out);
int fd_sop_getbit(const fd_str_io *io, void *h, const resp_arg *argv, long long max_bulk, resp_out *out);
int fd_sop_bitcount(const fd_str_io *io, void *h, int argc, const resp_arg *argv, resp_out *out);
int fd_sop_bitpos(const fd_str_io *io, void *h, int argc, const resp_arg *argv, resp_out *out);
int fd_sop_bitop(const fd_str_io *io, void *h, int argc, const resp_arg *argv, resp_out *out);
int fd_sop_bitfield(const fd_str_io *io, void *h, int argc, const resp_arg *argv, int ro, long long max_bulk,
                    resp_out *out);
int fd_sop_lcs(const fd_str_io *io, void *h, int argc, const resp_arg *argv, long long max_bulk, resp_out *out);
int fd_sop_pfadd(const fd_str_io *io, void *h, int argc, const resp_arg *argv, resp_out *out);
int fd_sop_pfcount(const fd_str_io *io, void *h, int argc, const resp_arg *argv, resp_out *out);
int fd_sop_pfmerge(const fd_str_io *io, void *h, int argc, const resp_arg *argv, resp_out *out);

/* The handlers of a family, named <P>_cmd_<command>, over io for a context
 * type CTX with argc, argv, out and max_bulk (kv_ctx, mg_ctx). */
#define FD_SOP_HANDLERS(P, CTX, IO) \
    int P##_cmd_setbit(CTX *c)   { return fd_sop_setbit(&(IO), c, c->argc, c->argv, c->max_bulk, c->out); } \
    int P##_cmd_getbit(CTX *c)   { return fd_sop_getbit(&(IO), c, c->argv, c->max_bulk, c->out); } \
    int P##_cmd_bitcount(CTX *c) { return fd_sop_bitcount(&(IO), c, c->argc, c->argv, c->out); } \
    int P##_cmd_bitpos(CTX *c)   { return fd_sop_bitpos(&(IO), c, c->argc, c->argv, c->out); } \
    int P##_cmd_bitop(CTX *c)    { return fd_sop_bitop(&(IO), c, c->argc, c->argv, c->out); } \
    int P##_cmd_bitfield(CTX *c) { return fd_sop_bitfield(&(IO), c, c->argc, c->argv, 0, c->max_bulk, c->out); } \
    int P##_cmd_bitfield_ro(CTX *c) { return fd_sop_bitfield(&(IO), c, c->argc, c->argv, 1, c->max_bulk, c->out); } \
    int P##_cmd_lcs(CTX *c)      { return fd_sop_lcs(&(IO), c, c->argc, c->argv, c->max_bulk, c->out); } \
    int P##_cmd_pfadd(CTX *c)    { return fd_sop_pfadd(&(IO), c, c->argc, c->argv, c->out); } \
    int P##_cmd_pfcount(CTX *c)  { return fd_sop_pfcount(&(IO), c, c->argc, c->argv, c->out); } \
    int P##_cmd_pfmerge(CTX *c)  { return fd_sop_pfmerge(&(IO), c, c->argc, c->argv, c->out); }

#endif
