/* zsetops.h — Redis 7.0's multi-key sorted-set commands as pure algorithms
 * over sorted sets held in memory, shared by every Redis-types backend
 * (storage/kv/kv_zsetops.c, storage/mongodb/mg_zsetops.c):
 *   ZUNION / ZINTER / ZDIFF, their STORE forms and ZINTERCARD
 *     (t_zset.c's zunionInterDiffGenericCommand: its checks in its order,
 *     weights, SUM/MIN/MAX with its NaN rules, sets read as score 1);
 *   ZRANDMEMBER (count, negative count, WITHSCORES, its range checks);
 *   ZMPOP / LMPOP argument parsing (numkeys, MIN|MAX / LEFT|RIGHT, COUNT),
 *     so the blocking forms can share it.
 *
 * Module prefix: fd_z / fd_mpop. No store access: the backend looks keys up
 * and answers WRONGTYPE itself, in Redis's order (documented per function),
 * then hands the library the elements. Nothing here blocks.
 */
#ifndef FRONTDOOR_VALUE_ZSETOPS_H
#define FRONTDOOR_VALUE_ZSETOPS_H

#include <stddef.h>
#include <stdint.h>
#include "../../protocol/resp.h"

/* One element of a sorted set (or of a set: s = 1). Same layout as the
 * MongoDB backend's mg_zent. m points at memory the caller keeps alive. */
typedef struct fd_zent { const char *m; size_t ml; double s; } fd_zent;

/* Redis's order: score, then member bytes (a shorter prefix first). */
int  fd_zent_cmp(const void *a, const void *b);
void fd_zent_sort(fd_zent *a, size_t n);

/* A growable array of fd_zent whose member bytes it owns (copied into
 * blocks that never move, so pointers stay valid until fd_zbuf_free). */
typedef struct fd_zbuf {
    fd_zent *a;
    size_t n, cap;
    struct fd_zblock *blocks;
} fd_zbuf;
/* Append (m, ml, s), copying m. 0, or -1 out of memory. */
int  fd_zbuf_add(fd_zbuf *z, const char *m, size_t ml, double s);
void fd_zbuf_free(fd_zbuf *z);

/* ---------------------------------------------------------------- ZUNION / ZINTER / ZDIFF */

enum { FD_ZOP_UNION, FD_ZOP_INTER, FD_ZOP_DIFF };
enum { FD_ZAGG_SUM, FD_ZAGG_MIN, FD_ZAGG_MAX };

typedef struct fd_zsetop {
    int op;
    int store;              /* a destination key comes first (argv[1]): no WITHSCORES */
    int card;               /* ZINTERCARD: LIMIT, no WEIGHTS/AGGREGATE/WITHSCORES */
    int nkidx;              /* argv index of numkeys */
    long long numkeys;      /* keys at argv[nkidx + 1 ...] */
    int aggregate, withscores;
    long long limit;        /* ZINTERCARD: 0 = none */
    double *weights;        /* numkeys of them (fd_zsetop_free) */
} fd_zsetop;

/* Step 1, before any key lookup: numkeys at argv[nkidx] ("ERR at least 1
 * input key is needed for '<name>' command" with name = argv[0] in lower
 * case; FD_E_NOTINT; FD_E_SYNTAX when fewer keys follow). o is set up for
 * op. FD_OK with *replied 0 or 1 (error written), or an FD_E_* status. */
int fd_zsetop_begin(const resp_arg *argv, int argc, int op, int store, int card, int nkidx,
                    fd_zsetop *o, resp_out *out, int *replied);
/* Step 2, after the backend has checked every key's type (zset or set, else
 * WRONGTYPE, at the first bad key, before this): the options after the
 * keys. Same returns. */
int fd_zsetop_options(const resp_arg *argv, int argc, fd_zsetop *o, resp_out *out, int *replied);
void fd_zsetop_free(fd_zsetop *o);

/* One input: the key's elements in any order (n = 0 when missing). */
typedef struct fd_zsrc { const fd_zent *a; size_t n; } fd_zsrc;

/* Step 3: the result (elements pointing into the sources, in Redis's
 * order) into *res (malloc'd, free()), *nres; ZINTERCARD: only *nres
 * (capped by the limit). 0, or -1 out of memory. */
int fd_zsetop_run(const fd_zsetop *o, const fd_zsrc *src, fd_zent **res, size_t *nres);

/* The whole command over a backend (steps 1 to 3, the reply or the STORE):
 * what a store gives it. ud is the backend's per-command context. */
typedef struct fd_zsetop_io {
    /* One source key's type, every key's before the options (Redis's
     * order), looked up as Redis's lookupKeyRead (a keymiss event; the
     * loads after it raise none): FD_OK when missing, a sorted set or a
     * set; FD_E_WRONGTYPE, or an FD_E_* status. */
    int  (*check)(void *ud, const resp_arg *key);
    /* One source's elements into *src (a set's at score 1; missing: n 0),
     * their memory held by *hold until release(ud, *hold) (also called
     * after a failed load; *hold starts NULL). */
    int  (*load)(void *ud, const resp_arg *key, void **hold, fd_zsrc *src);
    void (*release)(void *ud, void *hold);
    /* STORE: the destination becomes the sorted set res (n 0: deleted),
     * raising event (Redis's name) as Redis does. */
    int  (*store)(void *ud, const resp_arg *dst, const fd_zent *res, size_t n, const char *event);
} fd_zsetop_io;

/* ZUNION/ZINTER/ZDIFF, their STORE forms (store 1: argv[1] the
 * destination) and ZINTERCARD (card 1) over io: the checks in Redis's
 * order, the reply written to out (nothing on a failure). FD_OK, or an
 * FD_E_* status for the caller's error reply. */
int fd_zsetop_cmd(const fd_zsetop_io *io, void *ud, const resp_arg *argv, int argc, int op, int store,
                  int card, resp_out *out);
/* The seven handlers of a family, named <P>_cmd_<command> as
 * commands.def's impl column binds them, over io for a context type CTX
 * with argc, argv and out (kv_ctx, mg_ctx). */
#define FD_ZSETOP_HANDLERS(P, CTX, IO) \
    int P##_cmd_zunion(CTX *c)      { return fd_zsetop_cmd(&(IO), c, c->argv, c->argc, FD_ZOP_UNION, 0, 0, c->out); } \
    int P##_cmd_zinter(CTX *c)      { return fd_zsetop_cmd(&(IO), c, c->argv, c->argc, FD_ZOP_INTER, 0, 0, c->out); } \
    int P##_cmd_zdiff(CTX *c)       { return fd_zsetop_cmd(&(IO), c, c->argv, c->argc, FD_ZOP_DIFF, 0, 0, c->out); } \
    int P##_cmd_zunionstore(CTX *c) { return fd_zsetop_cmd(&(IO), c, c->argv, c->argc, FD_ZOP_UNION, 1, 0, c->out); } \
    int P##_cmd_zinterstore(CTX *c) { return fd_zsetop_cmd(&(IO), c, c->argv, c->argc, FD_ZOP_INTER, 1, 0, c->out); } \
    int P##_cmd_zdiffstore(CTX *c)  { return fd_zsetop_cmd(&(IO), c, c->argv, c->argc, FD_ZOP_DIFF, 1, 0, c->out); } \
    int P##_cmd_zintercard(CTX *c)  { return fd_zsetop_cmd(&(IO), c, c->argv, c->argc, FD_ZOP_INTER, 0, 1, c->out); }

/* A range reply of elements (as ZRANGE: RESP3 WITHSCORES pairs nested). */
int fd_zreply_range(resp_out *out, const fd_zent *a, size_t n, int withscores);

/* ---------------------------------------------------------------- ZRANGESTORE */

/* ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT o c]: the range
 * as fd_parse_zrange (storage/cmdargs.h) reads it for ZRANGE src ..., with
 * WITHSCORES refused (a syntax error where Redis meets it). Same returns. */
struct fd_zrange;
int fd_parse_zrangestore(const resp_arg *argv, int argc, struct fd_zrange *z, resp_out *out,
                         int *replied);

/* ---------------------------------------------------------------- ZRANDMEMBER */

/* (the arguments: fd_parse_rand_count, cmdargs.h) */
/* The reply for an existing sorted set of n >= 1 elements (a in Redis's
 * order): one bulk without a count, else the array (negative count:
 * repeats allowed; positive: distinct; count >= n: the whole set, highest
 * score first, as 7.0). rng: xorshift state.
 * 0, or -1 out of memory. A missing key is the caller's: null without a
 * count, an empty array with one. */
int fd_zrandmember_reply(resp_out *out, const fd_zent *a, size_t n, int has_count,
                         long long count, int withscores, uint64_t *rng);

/* ---------------------------------------------------------------- ZMPOP / LMPOP */

/* ZMPOP numkeys key... MIN|MAX [COUNT c] (zset 1) / LMPOP ... LEFT|RIGHT
 * (zset 0), numkeys at argv[nkidx]: *numkeys (keys from argv[nkidx+1]),
 * *where (0 MIN/LEFT, 1 MAX/RIGHT), *count (1 by default). Errors as
 * Redis: "ERR numkeys should be greater than 0", syntax, "ERR count should
 * be greater than 0". FD_OK with *replied 0/1, or FD_E_SYNTAX. */
int fd_mpop_parse(const resp_arg *argv, int argc, int nkidx, int zset, long long *numkeys,
                  int *where, long long *count, resp_out *out, int *replied);

/* Pop up to count elements of one key from its `where` end (0 MIN/LEFT, 1
 * MAX/RIGHT) and write the reply [key, elements]: *done 1; a missing or
 * empty key: *done 0 and nothing written. FD_OK or an FD_E_* status. */
typedef int (*fd_mpop_one)(void *ud, int zset, const resp_arg *key, int where, long long count,
                           int *done);
/* The non-blocking ZMPOP / LMPOP (numkeys at argv[1]): parse, then pop from
 * the first key that has elements, or reply a null array. Returns as
 * fd_mpop_parse and pop. */
int fd_mpop_run(const resp_arg *argv, int argc, int zset, fd_mpop_one pop, void *ud, resp_out *out);

#endif
