/* list.h — Redis 7.0's list commands (t_list.c) written once over a small
 * adapter per store (fd_list_io): LPUSH, RPUSH, LPUSHX, RPUSHX, LPOP,
 * RPOP, LLEN, LINDEX, LRANGE, LPOS, LSET, LTRIM, LREM, LINSERT, LMOVE,
 * RPOPLPUSH and LMPOP's pop of one key (the blocking forms call the same).
 * Argument checks in Redis's order, its error texts, reply shapes and
 * keyspace events are here; the store keeps the elements
 * (storage/kv/kv_list.c: a record per element under a sequence number;
 * storage/mongodb/mg_list.c: the document's array or the big layout, with
 * MongoDB's one-round-trip paths as hooks: $push, $pop, $slice).
 *
 * Module prefix: fd_list. No global state; nothing blocks.
 */
#ifndef FRONTDOOR_VALUE_LIST_H
#define FRONTDOOR_VALUE_LIST_H

#include <stddef.h>
#include <stdint.h>
#include "../../protocol/resp.h"

/* An open list: the adapter's state, in a buffer of the caller's. */
#define FD_LIST_LK_BYTES 1024
typedef struct fd_list_lk { _Alignas(16) unsigned char b[FD_LIST_LK_BYTES]; } fd_list_lk;

/* A walk callback: one element (valid during the call). 0 goes on, else
 * the walk stops and returns it. */
typedef int (*fd_list_walk_fn)(void *arg, const char *v, size_t vl);

/* What a store provides. h is its per-command context, lk the open list.
 * Indexes count from the head, 0 .. len-1. Statuses: FD_OK or FD_E_*.
 * Element memory (get, walk) is valid until the next change. */
typedef struct fd_list_io {
    /* Open the list at key (the command's lookup: a read command's keymiss
     * is the store's): *len its length, 0 when there is none; WRONGTYPE
     * for another type. from/count say what the command reads next, a hint
     * a store that loads lists whole may use: count -1 every element (and
     * any change), 0 none (the length only), else [from, from + count).
     * close() is called after open, whatever it returned. */
    int  (*open)(void *h, const resp_arg *key, long long from, long long count, fd_list_lk *lk, long long *len);
    /* Optional: the command reads [from, from + count) next (within the list). */
    int  (*need)(void *h, fd_list_lk *lk, long long from, long long count);
    int  (*get)(void *h, fd_list_lk *lk, long long idx, const void **v, size_t *vl);
    /* From element idx toward the tail, or (rev) from element len-1-idx
     * toward the head, until the end or fn returns nonzero (returned). */
    int  (*walk)(void *h, fd_list_lk *lk, long long idx, int rev, fd_list_walk_fn fn, void *arg);
    /* Optional: n (>= 1) elements from idx (as walk) written to out as
     * bulks, FD_E_CORRUPT when fewer are there (NULL: walk does it; this
     * saves a call per element on a store that reads elements itself). */
    int  (*reply)(void *h, fd_list_lk *lk, long long idx, int rev, long long n, resp_out *out);
    /* Push v at one end (the list is created when it did not exist); v
     * stays valid until close. */
    int  (*push)(void *h, fd_list_lk *lk, int left, const void *v, size_t vl);
    /* Remove n (1 <= n <= len) elements from one end. */
    int  (*trim)(void *h, fd_list_lk *lk, int left, long long n);
    /* Element idx becomes v (valid until close). */
    int  (*set)(void *h, fd_list_lk *lk, long long idx, const void *v, size_t vl);
    /* v (valid until close) becomes element idx (0 <= idx <= len), the
     * later ones move up. */
    int  (*insert)(void *h, fd_list_lk *lk, long long idx, const void *v, size_t vl);
    /* LREM: remove up to limit elements equal to el, from the tail first
     * when rev: *removed. */
    int  (*remove)(void *h, fd_list_lk *lk, const char *el, size_t ell, uint64_t limit, int rev, uint64_t *removed);
    /* Store the changes (no element left: the key goes). */
    int  (*save)(void *h, fd_list_lk *lk);
    void (*close)(void *h, fd_list_lk *lk);
    void (*event)(void *h, int cls, const char *event, const resp_arg *key);
    /* Optional one-round-trip paths; *done 0: not taken, the general path
     * answers. push_quick: the values argv[first..argc) pushed one by one
     * at one end, *len the new length (xx: only onto an existing list);
     * pop_quick: one element popped and replied (a bulk) into out;
     * ltrim_quick: LTRIM key 0 end on a live list (it keeps >= 1 element). */
    int  (*push_quick)(void *h, const resp_arg *key, int left, int first, int argc, const resp_arg *argv,
                       long long *len, int *done);
    int  (*pop_quick)(void *h, const resp_arg *key, int left, resp_out *out, int *done);
    int  (*ltrim_quick)(void *h, const resp_arg *key, long long end, int *done);
    /* Optional, after a quick pop: 1 when key is gone (NULL: never). */
    int  (*key_gone)(void *h, const resp_arg *key);
} fd_list_io;

/* One command over io: argv[0] is its name, the reply goes to out
 * (nothing on a failure). FD_OK, or an FD_E_* status. */
int fd_list_push(const fd_list_io *io, void *h, int argc, const resp_arg *argv, int left, int xx, resp_out *out);
int fd_list_pop(const fd_list_io *io, void *h, int argc, const resp_arg *argv, int left, resp_out *out);
int fd_list_llen(const fd_list_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_list_lindex(const fd_list_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_list_lrange(const fd_list_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_list_lpos(const fd_list_io *io, void *h, int argc, const resp_arg *argv, resp_out *out);
int fd_list_lset(const fd_list_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_list_ltrim(const fd_list_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_list_lrem(const fd_list_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_list_linsert(const fd_list_io *io, void *h, const resp_arg *argv, resp_out *out);
/* LMOVE (lmove 1: its LEFT|RIGHT arguments) and RPOPLPUSH (0). */
int fd_list_lmove(const fd_list_io *io, void *h, const resp_arg *argv, int lmove, resp_out *out);
/* LMPOP's pop of one key: up to count elements from one end, the reply
 * [key, [elements]] and *done 1; a missing key: *done 0, nothing written. */
int fd_list_mpop_one(const fd_list_io *io, void *h, const resp_arg *key, int left, long long count,
                     resp_out *out, int *done);

/* The list handlers of a family, named <P>_cmd_<command> as commands.def's
 * impl column binds them, over io for a context type CTX with argc, argv
 * and out (kv_ctx, mg_ctx). */
#define FD_LIST_HANDLERS(P, CTX, IO) \
    int P##_cmd_lpush(CTX *c)     { return fd_list_push(&(IO), c, c->argc, c->argv, 1, 0, c->out); } \
    int P##_cmd_rpush(CTX *c)     { return fd_list_push(&(IO), c, c->argc, c->argv, 0, 0, c->out); } \
    int P##_cmd_lpushx(CTX *c)    { return fd_list_push(&(IO), c, c->argc, c->argv, 1, 1, c->out); } \
    int P##_cmd_rpushx(CTX *c)    { return fd_list_push(&(IO), c, c->argc, c->argv, 0, 1, c->out); } \
    int P##_cmd_lpop(CTX *c)      { return fd_list_pop(&(IO), c, c->argc, c->argv, 1, c->out); } \
    int P##_cmd_rpop(CTX *c)      { return fd_list_pop(&(IO), c, c->argc, c->argv, 0, c->out); } \
    int P##_cmd_llen(CTX *c)      { return fd_list_llen(&(IO), c, c->argv, c->out); } \
    int P##_cmd_lindex(CTX *c)    { return fd_list_lindex(&(IO), c, c->argv, c->out); } \
    int P##_cmd_lrange(CTX *c)    { return fd_list_lrange(&(IO), c, c->argv, c->out); } \
    int P##_cmd_lpos(CTX *c)      { return fd_list_lpos(&(IO), c, c->argc, c->argv, c->out); } \
    int P##_cmd_lset(CTX *c)      { return fd_list_lset(&(IO), c, c->argv, c->out); } \
    int P##_cmd_ltrim(CTX *c)     { return fd_list_ltrim(&(IO), c, c->argv, c->out); } \
    int P##_cmd_lrem(CTX *c)      { return fd_list_lrem(&(IO), c, c->argv, c->out); } \
    int P##_cmd_linsert(CTX *c)   { return fd_list_linsert(&(IO), c, c->argv, c->out); } \
    int P##_cmd_lmove(CTX *c)     { return fd_list_lmove(&(IO), c, c->argv, 1, c->out); } \
    int P##_cmd_rpoplpush(CTX *c) { return fd_list_lmove(&(IO), c, c->argv, 0, c->out); } \
    int P##_list_mpop_one(CTX *c, const resp_arg *key, int left, long long count, int *done) \
        { return fd_list_mpop_one(&(IO), c, key, left, count, c->out, done); }

#endif
