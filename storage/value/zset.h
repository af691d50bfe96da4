/* zset.h — Redis 7.0's sorted-set commands that name their members
 * (t_zset.c), written once over a small adapter per store (fd_zset_io):
 * ZADD, ZINCRBY, ZREM, ZSCORE, ZMSCORE, ZCARD — the argument checks
 * (fd_parse_zadd), Redis's error texts, replies and keyspace events. The
 * store keeps the members in score order (storage/kv/kv_zset.c: a member
 * record and a score-index record each; storage/mongodb/mg_zset.c: the
 * document's sorted array or the big layout). The range commands (ZRANGE
 * and its family, ZRANK, ZCOUNT, ZREMRANGEBY*, ZPOP*) walk each store's
 * order its own way and stay with it; the multi-key ones are zsetops.h's.
 *
 * Module prefix: fd_zset. No global state; nothing blocks.
 */
#ifndef FRONTDOOR_VALUE_ZSET_H
#define FRONTDOOR_VALUE_ZSET_H

#include "../../protocol/resp.h"

/* An open sorted set: the adapter's state, in a buffer of the caller's. */
#define FD_ZSET_ZK_BYTES 1536
typedef struct fd_zset_zk { _Alignas(16) unsigned char b[FD_ZSET_ZK_BYTES]; } fd_zset_zk;

/* What a store provides. h is its per-command context, zk the open set.
 * Statuses: FD_OK, FD_NOTFOUND where said, or FD_E_*. */
typedef struct fd_zset_io {
    /* Open the sorted set at key (the command's lookup): *exists 0 when
     * there is none; FD_E_WRONGTYPE for another type. named: the members
     * the command names are argv[named], argv[named + step]... (a store
     * that loads only those may); close() is called whatever it returned. */
    int  (*open)(void *h, const resp_arg *key, int named, int step, fd_zset_zk *zk, int *exists);
    int  (*score)(void *h, fd_zset_zk *zk, const char *m, size_t ml, double *score);    /* FD_NOTFOUND */
    /* Member m (a command argument) gets score; old: its score when had_old.
     * The set is created when it did not exist. */
    int  (*put)(void *h, fd_zset_zk *zk, const char *m, size_t ml, double score, int had_old, double old);
    /* Remove m: *removed 1 when it was there. */
    int  (*del)(void *h, fd_zset_zk *zk, const char *m, size_t ml, int *removed);
    long long (*count)(void *h, fd_zset_zk *zk);
    /* Store the changes (no member left: the key goes); gone() after it. */
    int  (*save)(void *h, fd_zset_zk *zk);
    int  (*gone)(void *h, fd_zset_zk *zk);
    void (*close)(void *h, fd_zset_zk *zk);                 /* NULL: nothing */
    void (*event)(void *h, int cls, const char *event, const resp_arg *key);
} fd_zset_io;

/* One command over io: argv[0] is its name, the reply goes to out
 * (nothing on a failure). FD_OK or an FD_E_* status. */
int fd_zset_zadd(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, int incr, resp_out *out);
int fd_zset_zrem(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, resp_out *out);
int fd_zset_zscore(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, int many, resp_out *out);
int fd_zset_zcard(const fd_zset_io *io, void *h, const resp_arg *argv, resp_out *out);

/* The handlers of a family, named <P>_cmd_<command> as commands.def's
 * impl column binds them, over io for a context type CTX with argc, argv
 * and out (kv_ctx, mg_ctx). */
#define FD_ZSET_HANDLERS(P, CTX, IO) \
    int P##_cmd_zadd(CTX *c)    { return fd_zset_zadd(&(IO), c, c->argc, c->argv, 0, c->out); } \
    int P##_cmd_zincrby(CTX *c) { return fd_zset_zadd(&(IO), c, c->argc, c->argv, 1, c->out); } \
    int P##_cmd_zrem(CTX *c)    { return fd_zset_zrem(&(IO), c, c->argc, c->argv, c->out); } \
    int P##_cmd_zscore(CTX *c)  { return fd_zset_zscore(&(IO), c, c->argc, c->argv, 0, c->out); } \
    int P##_cmd_zmscore(CTX *c) { return fd_zset_zscore(&(IO), c, c->argc, c->argv, 1, c->out); } \
    int P##_cmd_zcard(CTX *c)   { return fd_zset_zcard(&(IO), c, c->argv, c->out); }

#endif
