/* hash.h — Redis 7.0's hash commands (t_hash.c) written once over a small
 * adapter per store (fd_hash_io): HSET, HMSET, HSETNX, HDEL, HINCRBY,
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

/* An open hash: the adapter's state, kept in a buffer of the caller's
 * (no allocation per command). */
#define FD_HASH_HK_BYTES 1024
typedef struct fd_hash_hk { _Alignas(16) unsigned char b[FD_HASH_HK_BYTES]; } fd_hash_hk;

/* A walk callback: a field and its value (valid during the call). 0 goes
 * on, else the walk stops and returns it. */
typedef int (*fd_hash_walk_fn)(void *arg, const char *f, size_t fl, const char *v, size_t vl);

/* What a store provides. `h` is the store's per-command handle (its
 * context), `hk` the open hash. Every function returns FD_OK, FD_NOTFOUND
 * where stated, or an FD_E_* status. Memory returned by get/walk is valid
 * until the next put/del. */
typedef struct fd_hash_io {
    /* Open the hash at key (Redis's lookupKeyRead/Write: the keymiss event
     * is the store's): *exists 0 when there is none (or it expired);
     * FD_E_WRONGTYPE for another type. named: the fields the command
     * names are argv[named], argv[named + step], ... (a store that loads
     * only those may); named < 0: the command reads every field. close()
     * is called after open, whatever it returned. */
    int  (*open)(void *h, const resp_arg *key, int named, int step, fd_hash_hk *hk, int *exists);
    int  (*get)(void *h, fd_hash_hk *hk, const char *f, size_t fl, const void **v, size_t *vl); /* FD_NOTFOUND */
    /* Set f to v (v is not the store's memory); the hash is created when it
     * did not exist. lasting: v stays valid until close (a command argument;
     * else a buffer of this call's: a store that keeps v must copy it).
     * *created 1 when f is new. */
    int  (*put)(void *h, fd_hash_hk *hk, const char *f, size_t fl, const void *v, size_t vl, int lasting,
                int *created);
    /* Remove f: *removed 1 when it was there. */
    int  (*del)(void *h, fd_hash_hk *hk, const char *f, size_t fl, int *removed);
    /* The number of fields (0: none). */
    long long (*count)(void *h, fd_hash_hk *hk);
    /* Every field, in the store's order. */
    int  (*walk)(void *h, fd_hash_hk *hk, fd_hash_walk_fn fn, void *arg);
    /* Store what put/del changed (the key goes when no field is left). */
    int  (*save)(void *h, fd_hash_hk *hk);
    /* After a save: 1 when the key is gone. */
    int  (*gone)(void *h, fd_hash_hk *hk);
    void (*close)(void *h, fd_hash_hk *hk);
    /* A keyspace event of class cls (storage/host.h FD_NOTIFY_*) on key. */
    void (*event)(void *h, int cls, const char *event, const resp_arg *key);
} fd_hash_io;

/* One command over io: argv[0] is its name, the reply goes to out
 * (nothing on a failure). FD_OK, or an FD_E_* status for the caller's
 * error reply. */
int fd_hash_hset(const fd_hash_io *io, void *h, int argc, const resp_arg *argv, int hmset, resp_out *out);
int fd_hash_hsetnx(const fd_hash_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_hash_hdel(const fd_hash_io *io, void *h, int argc, const resp_arg *argv, resp_out *out);
int fd_hash_hincrby(const fd_hash_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_hash_hincrbyfloat(const fd_hash_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_hash_hget(const fd_hash_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_hash_hmget(const fd_hash_io *io, void *h, int argc, const resp_arg *argv, resp_out *out);
int fd_hash_hlen(const fd_hash_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_hash_hexists(const fd_hash_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_hash_hstrlen(const fd_hash_io *io, void *h, const resp_arg *argv, resp_out *out);
/* HGETALL (keys 1, vals 1), HKEYS (1, 0), HVALS (0, 1). */
int fd_hash_getall(const fd_hash_io *io, void *h, const resp_arg *argv, int keys, int vals, resp_out *out);

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
