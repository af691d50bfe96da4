/* set.h — Redis 7.0's set commands (t_set.c) written once over the
 * field-collection adapter (fd_coll_io, coll.h; a member is an element
 * whose value is empty): SADD, SREM, SCARD, SISMEMBER, SMISMEMBER,
 * SMEMBERS, SMOVE, SINTER, SUNION, SDIFF, their STORE forms and
 * SINTERCARD. Argument checks in Redis's order, its error texts, reply
 * shapes (RESP2/RESP3) and keyspace events are here; the store keeps the
 * members (storage/kv/kv_coll.c: a record per member;
 * storage/mongodb/mg_set.c: the document's array or the big layout).
 * SPOP, SRANDMEMBER and SSCAN stay with each store (they share its random
 * and scan walks with hashes and sorted sets).
 *
 * The algebra walks one set and asks the others per member (SINTER: the
 * smallest set; SUNION: each set, a member kept when no earlier set has
 * it; SDIFF: the first set), so a store with point lookups (kv) reads
 * O(N*K) records and holds none; the reply is written as it goes and its
 * header put in front at the end. The STORE forms copy the result first
 * (the destination may be a source), then replace the destination.
 *
 * Module prefix: fd_set. No global state; nothing blocks.
 */
#ifndef FRONTDOOR_VALUE_SET_H
#define FRONTDOOR_VALUE_SET_H

#include "../../protocol/resp.h"
#include "coll.h"

/* One command over io: argv[0] is its name, the reply goes to out
 * (nothing on a failure). FD_OK, or an FD_E_* status for the caller's
 * error reply. */
int fd_set_sadd(const fd_coll_io *io, void *h, int argc, const resp_arg *argv, resp_out *out);
int fd_set_srem(const fd_coll_io *io, void *h, int argc, const resp_arg *argv, resp_out *out);
int fd_set_scard(const fd_coll_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_set_sismember(const fd_coll_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_set_smismember(const fd_coll_io *io, void *h, int argc, const resp_arg *argv, resp_out *out);
int fd_set_smembers(const fd_coll_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_set_smove(const fd_coll_io *io, void *h, const resp_arg *argv, resp_out *out);

enum { FD_SETOP_INTER, FD_SETOP_UNION, FD_SETOP_DIFF };
/* SINTER/SUNION/SDIFF (store 0: the keys from argv[1]) and their STORE
 * forms (store 1: argv[1] the destination, the keys from argv[2]). Every
 * key's type is checked before any member is read (WRONGTYPE even when an
 * earlier key is missing). */
int fd_set_op(const fd_coll_io *io, void *h, int argc, const resp_arg *argv, int op, int store, resp_out *out);
/* SINTERCARD numkeys key... [LIMIT limit]. */
int fd_set_sintercard(const fd_coll_io *io, void *h, int argc, const resp_arg *argv, resp_out *out);

/* The set handlers of a family, named <P>_cmd_<command> as commands.def's
 * impl column binds them, each a call over io for a context type CTX with
 * argc, argv and out (kv_ctx, mg_ctx). */
#define FD_SET_HANDLERS(P, CTX, IO) \
    int P##_cmd_sadd(CTX *c)        { return fd_set_sadd(&(IO), c, c->argc, c->argv, c->out); } \
    int P##_cmd_srem(CTX *c)        { return fd_set_srem(&(IO), c, c->argc, c->argv, c->out); } \
    int P##_cmd_scard(CTX *c)       { return fd_set_scard(&(IO), c, c->argv, c->out); } \
    int P##_cmd_sismember(CTX *c)   { return fd_set_sismember(&(IO), c, c->argv, c->out); } \
    int P##_cmd_smismember(CTX *c)  { return fd_set_smismember(&(IO), c, c->argc, c->argv, c->out); } \
    int P##_cmd_smembers(CTX *c)    { return fd_set_smembers(&(IO), c, c->argv, c->out); } \
    int P##_cmd_smove(CTX *c)       { return fd_set_smove(&(IO), c, c->argv, c->out); } \
    int P##_cmd_sinter(CTX *c)      { return fd_set_op(&(IO), c, c->argc, c->argv, FD_SETOP_INTER, 0, c->out); } \
    int P##_cmd_sunion(CTX *c)      { return fd_set_op(&(IO), c, c->argc, c->argv, FD_SETOP_UNION, 0, c->out); } \
    int P##_cmd_sdiff(CTX *c)       { return fd_set_op(&(IO), c, c->argc, c->argv, FD_SETOP_DIFF, 0, c->out); } \
    int P##_cmd_sinterstore(CTX *c) { return fd_set_op(&(IO), c, c->argc, c->argv, FD_SETOP_INTER, 1, c->out); } \
    int P##_cmd_sunionstore(CTX *c) { return fd_set_op(&(IO), c, c->argc, c->argv, FD_SETOP_UNION, 1, c->out); } \
    int P##_cmd_sdiffstore(CTX *c)  { return fd_set_op(&(IO), c, c->argc, c->argv, FD_SETOP_DIFF, 1, c->out); } \
    int P##_cmd_sintercard(CTX *c)  { return fd_set_sintercard(&(IO), c, c->argc, c->argv, c->out); }

#endif
