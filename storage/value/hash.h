/* hash.h — Redis 7.0's hash commands (t_hash.c) written once over a small
 * adapter per store (fd_coll_io, coll.h): HSET, HMSET, HSETNX, HDEL, HINCRBY,
 * HINCRBYFLOAT, HGET, HMGET, HLEN, HEXISTS, HSTRLEN, HGETALL, HKEYS,
 * HVALS. Argument checks in Redis's order, its error texts, reply shapes
 * (RESP2/RESP3) and keyspace events are here; the store keeps its fields
 * (storage/kv/kv_hash.c: a record per field; storage/mongodb/mg_hash.c:
 * the document's array or the big layout). HRANDFIELD and HSCAN stay with
 * each store (they share its random and scan walks with sets and sorted
 * sets).
 *
 * Module prefix: fd_hash. No global state; nothing blocks.
 */
#ifndef FRONTDOOR_VALUE_HASH_H
#define FRONTDOOR_VALUE_HASH_H

#include <stddef.h>
#include <stdint.h>
#include "../../protocol/resp.h"
#include "coll.h"


/* One command over io: argv[0] is its name, the reply goes to out
 * (nothing on a failure). FD_OK, or an FD_E_* status for the caller's
 * error reply. */
int fd_hash_hset(const fd_coll_io *io, void *h, int argc, const resp_arg *argv, int hmset, resp_out *out);
int fd_hash_hsetnx(const fd_coll_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_hash_hdel(const fd_coll_io *io, void *h, int argc, const resp_arg *argv, resp_out *out);
int fd_hash_hincrby(const fd_coll_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_hash_hincrbyfloat(const fd_coll_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_hash_hget(const fd_coll_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_hash_hmget(const fd_coll_io *io, void *h, int argc, const resp_arg *argv, resp_out *out);
int fd_hash_hlen(const fd_coll_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_hash_hexists(const fd_coll_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_hash_hstrlen(const fd_coll_io *io, void *h, const resp_arg *argv, resp_out *out);
/* HGETALL (keys 1, vals 1), HKEYS (1, 0), HVALS (0, 1). */
int fd_hash_getall(const fd_coll_io *io, void *h, const resp_arg *argv, int keys, int vals, resp_out *out);

/* The hash handlers of a family, named <P>_cmd_<command> as commands.def's
 * impl column binds them, each a call over io for a context type CTX with
 * argc, argv and out (kv_ctx, mg_ctx). */
#define FD_HASH_HANDLERS(P, CTX, IO) \
    int P##_cmd_hset(CTX *c)         { return fd_hash_hset(&(IO), c, c->argc, c->argv, 0, c->out); } \
    int P##_cmd_hmset(CTX *c)        { return fd_hash_hset(&(IO), c, c->argc, c->argv, 1, c->out); } \
    int P##_cmd_hsetnx(CTX *c)       { return fd_hash_hsetnx(&(IO), c, c->argv, c->out); } \
    int P##_cmd_hdel(CTX *c)         { return fd_hash_hdel(&(IO), c, c->argc, c->argv, c->out); } \
    int P##_cmd_hincrby(CTX *c)      { return fd_hash_hincrby(&(IO), c, c->argv, c->out); } \
    int P##_cmd_hincrbyfloat(CTX *c) { return fd_hash_hincrbyfloat(&(IO), c, c->argv, c->out); } \
    int P##_cmd_hget(CTX *c)         { return fd_hash_hget(&(IO), c, c->argv, c->out); } \
    int P##_cmd_hmget(CTX *c)        { return fd_hash_hmget(&(IO), c, c->argc, c->argv, c->out); } \
    int P##_cmd_hlen(CTX *c)         { return fd_hash_hlen(&(IO), c, c->argv, c->out); } \
    int P##_cmd_hexists(CTX *c)      { return fd_hash_hexists(&(IO), c, c->argv, c->out); } \
    int P##_cmd_hstrlen(CTX *c)      { return fd_hash_hstrlen(&(IO), c, c->argv, c->out); } \
    int P##_cmd_hgetall(CTX *c)      { return fd_hash_getall(&(IO), c, c->argv, 1, 1, c->out); } \
    int P##_cmd_hkeys(CTX *c)        { return fd_hash_getall(&(IO), c, c->argv, 1, 0, c->out); } \
    int P##_cmd_hvals(CTX *c)        { return fd_hash_getall(&(IO), c, c->argv, 0, 1, c->out); }

#endif
