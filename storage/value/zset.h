/* zset.h — Redis 7.0's sorted-set commands that name their members
 * (t_zset.c), written once over a small adapter per store (fd_zset_io):
 * ZADD, ZINCRBY, ZREM, ZSCORE, ZMSCORE, ZCARD, and (over the store's
 * ordered walk, `range`, and its rank) ZRANGE and its family, ZRANGESTORE,
 * ZRANK/ZREVRANK, ZCOUNT/ZLEXCOUNT, ZREMRANGEBY*, ZPOPMIN/ZPOPMAX and
 * ZMPOP's pop of one key — the argument checks (fd_parse_zadd,
 * fd_parse_zrange), the range rules of Redis 7.0 (sanitized ranks, empty
 * ranges, LIMIT, zslIsInLexRange's test of the ends), Redis's error texts,
 * replies and keyspace events. The store keeps the members in score order
 * (storage/kv/kv_zset.c: a member record and a score-index record each,
 * walked by seeks; storage/mongodb/mg_zset.c: the document's sorted array,
 * or a big set's window read as one _id range). The multi-key commands and
 * ZRANDMEMBER are zsetops.h's.
 *
 * Module prefix: fd_zset. No global state; nothing blocks.
 */
#ifndef FRONTDOOR_VALUE_ZSET_H
#define FRONTDOOR_VALUE_ZSET_H

#include "../../protocol/resp.h"
#include "../cmdargs.h"
#include "zsetops.h"

/* An open sorted set: the adapter's state, in a buffer of the caller's. */
#define FD_ZSET_ZK_BYTES 1536
typedef struct fd_zset_zk { _Alignas(16) unsigned char b[FD_ZSET_ZK_BYTES]; } fd_zset_zk;

/* A member handed to a range walk's callback: m is valid only during the
 * call. 0 goes on; 1 stops the walk (FD_OK); -1: out of memory (the walk
 * fails with FD_E_NOMEM). */
typedef int (*fd_zset_fn)(void *arg, const char *m, size_t ml, double score);

/* The range commands' reply sink: fd_zset_emit(&(fd_zset_emit_to){...})
 * writes a member (a bulk, [member, score] when nested: RESP3 pairs, or
 * member then score). A store may test fn == fd_zset_emit and call the
 * inline fd_zset_emit_inline itself (one indirect call less per member). */
typedef struct fd_zset_emit_to { resp_out *out; int withscores, nested; } fd_zset_emit_to;
static inline int fd_zset_emit_inline(void *arg, const char *m, size_t ml, double score)
{
    fd_zset_emit_to *e = arg;
    if (e->nested && resp_add_array(e->out, 2)) return -1;
    if (resp_add_bulk(e->out, m, ml)) return -1;
    return e->withscores && resp_add_double(e->out, score) ? -1 : 0;
}
int fd_zset_emit(void *arg, const char *m, size_t ml, double score);

/* open()'s named: every member (a store that reads parts reads the whole). */
#define FD_ZSET_WHOLE (-1)

/* What a store provides. h is its per-command context, zk the open set.
 * Statuses: FD_OK, FD_NOTFOUND where said, or FD_E_*. */
typedef struct fd_zset_io {
    /* Open the sorted set at key: *exists 0 when there is none;
     * FD_E_WRONGTYPE for another type. source: a STORE form's source (a
     * read lookup whatever the command: its keymiss). named: the members
     * the command names are argv[named], argv[named + step]... (a store
     * that loads only those may; named >= argc: none, a range() follows;
     * FD_ZSET_WHOLE: all); close() is called whatever it returned. */
    int  (*open)(void *h, const resp_arg *key, int source, int named, int step, fd_zset_zk *zk, int *exists);
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
    /* The members z selects, in its order (z->rev: from the highest), to
     * fn (NULL: only counted), *n of them. z is checked first (zset.c): a
     * rank range lies within 0..count-1, a score or lex range is not empty,
     * offset >= 0 and limit != 0 (limit -1: no limit). A score or lex walk
     * starts at the first member inside the near bound, skips z->offset,
     * and stops at the first outside the far bound or after z->limit.
     * remove: the members walked leave the set too (save() stores it). */
    int  (*range)(void *h, fd_zset_zk *zk, const fd_zrange *z, int remove, fd_zset_fn fn, void *arg,
                  long long *n);
    /* The rank of m counted from the lowest score: FD_NOTFOUND when absent. */
    int  (*rank)(void *h, fd_zset_zk *zk, const char *m, size_t ml, long long *rank);
    /* Replace dst by the sorted set a[0..n) (n 0: dst goes), with its
     * events (zsetops.h's store: ZRANGESTORE's destination). */
    int  (*store)(void *h, const resp_arg *dst, const fd_zent *a, size_t n, const char *event);
} fd_zset_io;

/* The end of a command over io: close the set (when the store has a close)
 * and return the status s. */
static inline int fd_zset_close(const fd_zset_io *io, void *h, fd_zset_zk *zk, int s)
{
    if (io->close) io->close(h, zk);
    return s;
}

/* One command over io: argv[0] is its name, the reply goes to out
 * (nothing on a failure). FD_OK or an FD_E_* status. */
int fd_zset_zadd(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, int incr, resp_out *out);
/* ZADD's body after its parse (GEOADD's too): flags FD_ZADD_*, elements
 * items read by item(argv, first, j, ...) (checked before any write). */
typedef void (*fd_zset_item_fn)(const resp_arg *argv, int first, int j, double *score, const resp_arg **member);
int fd_zset_add(const fd_zset_io *io, void *h, const resp_arg *argv, int flags, int first, int elements,
                fd_zset_item_fn item, resp_out *out);
int fd_zset_zrem(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, resp_out *out);
int fd_zset_zscore(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, int many, resp_out *out);
int fd_zset_zcard(const fd_zset_io *io, void *h, const resp_arg *argv, resp_out *out);
/* ZRANGE and its family: type/rev fixed by the command, or -1 (ZRANGE:
 * BYSCORE/BYLEX/REV decide); ZCOUNT/ZLEXCOUNT (count 1) and ZREMRANGEBY*
 * (count 0) for a type; ZRANK/ZREVRANK; ZPOPMIN/ZPOPMAX; ZRANGESTORE. */
int fd_zset_zrange(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, int type, int rev, resp_out *out);
int fd_zset_zcount(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, int type, int count, resp_out *out);
int fd_zset_zrank(const fd_zset_io *io, void *h, const resp_arg *argv, int rev, resp_out *out);
int fd_zset_zpop(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, int max, resp_out *out);
int fd_zset_zrangestore(const fd_zset_io *io, void *h, int argc, const resp_arg *argv, resp_out *out);
/* ZMPOP's pop of one key (count >= 1): [key, [[member, score]...]] to out
 * and *done 1, or nothing (*done 0) when the key holds no sorted set. */
int fd_zset_mpop_one(const fd_zset_io *io, void *h, const resp_arg *key, int max, long long count,
                     resp_out *out, int *done);

/* The handlers of a family, named <P>_cmd_<command> as commands.def's
 * impl column binds them, over io for a context type CTX with argc, argv
 * and out (kv_ctx, mg_ctx). */
#define FD_ZSET_HANDLERS(P, CTX, IO) \
    int P##_cmd_zadd(CTX *c)    { return fd_zset_zadd(&(IO), c, c->argc, c->argv, 0, c->out); } \
    int P##_cmd_zincrby(CTX *c) { return fd_zset_zadd(&(IO), c, c->argc, c->argv, 1, c->out); } \
    int P##_cmd_zrem(CTX *c)    { return fd_zset_zrem(&(IO), c, c->argc, c->argv, c->out); } \
    int P##_cmd_zscore(CTX *c)  { return fd_zset_zscore(&(IO), c, c->argc, c->argv, 0, c->out); } \
    int P##_cmd_zmscore(CTX *c) { return fd_zset_zscore(&(IO), c, c->argc, c->argv, 1, c->out); } \
    int P##_cmd_zcard(CTX *c)   { return fd_zset_zcard(&(IO), c, c->argv, c->out); } \
    int P##_cmd_zrange(CTX *c)  { return fd_zset_zrange(&(IO), c, c->argc, c->argv, -1, -1, c->out); } \
    int P##_cmd_zrevrange(CTX *c) { return fd_zset_zrange(&(IO), c, c->argc, c->argv, FD_ZR_RANK, 1, c->out); } \
    int P##_cmd_zrangebyscore(CTX *c) { return fd_zset_zrange(&(IO), c, c->argc, c->argv, FD_ZR_SCORE, 0, c->out); } \
    int P##_cmd_zrevrangebyscore(CTX *c) { return fd_zset_zrange(&(IO), c, c->argc, c->argv, FD_ZR_SCORE, 1, c->out); } \
    int P##_cmd_zrangebylex(CTX *c) { return fd_zset_zrange(&(IO), c, c->argc, c->argv, FD_ZR_LEX, 0, c->out); } \
    int P##_cmd_zrevrangebylex(CTX *c) { return fd_zset_zrange(&(IO), c, c->argc, c->argv, FD_ZR_LEX, 1, c->out); } \
    int P##_cmd_zcount(CTX *c)  { return fd_zset_zcount(&(IO), c, c->argc, c->argv, FD_ZR_SCORE, 1, c->out); } \
    int P##_cmd_zlexcount(CTX *c) { return fd_zset_zcount(&(IO), c, c->argc, c->argv, FD_ZR_LEX, 1, c->out); } \
    int P##_cmd_zremrangebyrank(CTX *c) { return fd_zset_zcount(&(IO), c, c->argc, c->argv, FD_ZR_RANK, 0, c->out); } \
    int P##_cmd_zremrangebyscore(CTX *c) { return fd_zset_zcount(&(IO), c, c->argc, c->argv, FD_ZR_SCORE, 0, c->out); } \
    int P##_cmd_zremrangebylex(CTX *c) { return fd_zset_zcount(&(IO), c, c->argc, c->argv, FD_ZR_LEX, 0, c->out); } \
    int P##_cmd_zrank(CTX *c)   { return fd_zset_zrank(&(IO), c, c->argv, 0, c->out); } \
    int P##_cmd_zrevrank(CTX *c) { return fd_zset_zrank(&(IO), c, c->argv, 1, c->out); } \
    int P##_cmd_zpopmin(CTX *c) { return fd_zset_zpop(&(IO), c, c->argc, c->argv, 0, c->out); } \
    int P##_cmd_zpopmax(CTX *c) { return fd_zset_zpop(&(IO), c, c->argc, c->argv, 1, c->out); } \
    int P##_cmd_zrangestore(CTX *c) { return fd_zset_zrangestore(&(IO), c, c->argc, c->argv, c->out); } \
    int P##_zset_mpop_one(CTX *c, const resp_arg *key, int max, long long count, int *done) \
        { return fd_zset_mpop_one(&(IO), c, key, max, count, c->out, done); }

#endif
