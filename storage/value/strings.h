/* strings.h — Redis 7.0's string commands (t_string.c) written once over a
 * small adapter per store (fd_str_io): SET, SETNX, SETEX, PSETEX, GETSET,
 * GET, GETDEL, GETEX, MGET, STRLEN, GETRANGE, MSET, MSETNX, INCR, DECR,
 * INCRBY, DECRBY, INCRBYFLOAT, APPEND, SETRANGE — argument checks in
 * Redis's order, its error texts, replies and keyspace events — and the
 * computations under them (SET's NX/XX condition and reply, GETRANGE,
 * INCR/DECR and INCRBYFLOAT arithmetic, SETRANGE's new value), which the
 * bit commands share. The stores: storage/kv/kv_string.c (the value inline
 * in the key's record), storage/mongodb/mg_string.c (a document, with
 * MongoDB's own one-round-trip paths as hooks: a blind SET, $inc, batched
 * MGET/MSET).
 *
 * Module prefix: fd_str. No global state; nothing blocks. Statuses are
 * storage/status.h's. */
#ifndef FRONTDOOR_VALUE_STRINGS_H
#define FRONTDOOR_VALUE_STRINGS_H

#include <stddef.h>
#include <stdint.h>
#include "../../protocol/resp.h"

/* Do SET's NX/XX options (flags: FD_SET_*, storage/cmdargs.h) refuse to
 * write a key that exists (or not)? */
int fd_str_set_blocked(int flags, int exists);
/* SET's reply after the write (written 1) or after NX/XX refused it (0):
 * nothing with GET (the old value, written before, is the reply), :1/:0
 * for SETNX (abort_nx), else +OK / nil. 0, or -1 out of memory. */
int fd_str_set_reply(resp_out *out, int flags, int abort_nx, int written);

/* GETRANGE's reply for a value v[0..len) (len 0 for a missing key):
 * Redis's negative indexes and clamping. 0, or -1 out of memory. */
int fd_str_getrange_reply(resp_out *out, const char *v, size_t len, long long start, long long end);

/* INCRBY / DECRBY's increment argument a (decr: DECRBY, negated):
 * FD_OK with *incr and *replied 0; FD_OK with *replied 1 after writing
 * "ERR decrement would overflow"; FD_E_NOTINT; FD_E_NOMEM. */
int fd_str_parse_incr(const resp_arg *a, int decr, long long *incr, resp_out *out, int *replied);
/* The new value of INCR & co. on v[0..len) (exists 0: 0): FD_OK with
 * *res, FD_E_NOTINT (not an integer) or FD_E_OVERFLOW. */
int fd_str_incr(const char *v, size_t len, int exists, long long incr, long long *res);

/* Room INCRBYFLOAT's result needs ("%.17Lf" of a huge long double). */
#define FD_STR_INCRBYFLOAT_BUF (5 * 1024 + 64)
/* INCRBYFLOAT on v[0..len) (exists 0: 0) by the argument a: the new value's
 * text (Redis's long double human form) in buf (FD_STR_INCRBYFLOAT_BUF
 * bytes), *n bytes. FD_OK, FD_E_NOTFLOAT (either operand), FD_E_NAN or
 * FD_E_INTERNAL. */
int fd_str_incrbyfloat(const char *v, size_t len, int exists, const resp_arg *a, char *buf, size_t *n);

/* SETRANGE's new value into b (room for nlen = max(olen, off + p's
 * length) bytes): the old value, zero bytes up to off, then p. */
void fd_str_setrange(char *b, const char *old, size_t olen, size_t off, const resp_arg *p);

/* ---------------------------------------------------------------- the commands */

/* An open key: the adapter's state, in a buffer of the caller's. */
#define FD_STR_SK_BYTES 512
typedef struct fd_str_sk { _Alignas(16) unsigned char b[FD_STR_SK_BYTES]; } fd_str_sk;

/* A key as open() found it. */
typedef struct fd_str_val {
    int         found;      /* a record exists, maybe expired */
    int         live;       /* a live key (a string, unless open's want allowed any type) */
    int         string;     /* live and a string */
    const char *v;          /* string: its value, valid until write/del/close */
    size_t      len;
    int64_t     expire;     /* ms since the epoch, 0 = none */
} fd_str_val;

/* open()'s want; v is filled in whatever open returns. */
enum {
    FD_STR_ANY = 0,         /* any type (SET, MSET...): the value may be left out */
    FD_STR_STRING = 1,      /* FD_E_WRONGTYPE for a live key of another type; the value read */
    FD_STR_ANY_VALUE = 2,   /* any type, a string's value read (MGET) */
    FD_STR_SOURCE = 4,      /* or'd: a source's lookup (lookupKeyRead: its keymiss) whatever the command */
};

/* What a store provides. h is its per-command context. Statuses: FD_OK or
 * FD_E_*. Lookups are the command's (a read command's missing key raises
 * keymiss: the store's). */
typedef struct fd_str_io {
    int   (*open)(void *h, const resp_arg *key, int want, fd_str_sk *sk, fd_str_val *v);
    /* Make the open key the string a then b with that expiry (0: none); a
     * or b may point into the value open() gave. */
    int   (*write)(void *h, fd_str_sk *sk, const resp_arg *key, int64_t expire, const char *a, size_t al,
                   const char *b, size_t bl);
    int   (*del)(void *h, fd_str_sk *sk, const resp_arg *key);
    int   (*expire)(void *h, fd_str_sk *sk, const resp_arg *key, int64_t at);   /* 0: persist */
    /* n bytes of room, valid until close (NULL: out of memory). */
    char *(*scratch)(void *h, fd_str_sk *sk, size_t n);
    void  (*close)(void *h, fd_str_sk *sk);                                 /* NULL: nothing to do */
    void  (*event)(void *h, int cls, const char *event, const resp_arg *key);
    /* Optional one-round-trip paths (NULL: open/write per key):
     * a plain SET (no option) written without reading the key; */
    int   (*set_blind)(void *h, const resp_arg *key, int64_t expire, const resp_arg *val);
    /* INCRBY on a live integer that does not overflow, atomically: *done
     * 0 when it does not apply (the general path answers); */
    int   (*incr)(void *h, const resp_arg *key, long long incr, long long *v, int *done);
    /* MGET's reply for argv[1..argc); */
    int   (*mget)(void *h, int argc, const resp_arg *argv, resp_out *out);
    /* MSET's writes of the pairs from argv[1] (no expiry), after its checks;
     * *any for MSETNX: whether a key of argv[1], argv[3]... is live. */
    int   (*mset)(void *h, int argc, const resp_arg *argv);
    int   (*any_live)(void *h, int argc, const resp_arg *argv, int *any);
    /* Optional: the command's key number `nth` was left unchanged by this
     * write (WATCH does not see it touched: fd_request.untouched). */
    void  (*untouched)(void *h, int nth);
} fd_str_io;

/* The end of a command over io: close the key (when the store has a close)
 * and return the status s. */
static inline int fd_str_close(const fd_str_io *io, void *h, fd_str_sk *sk, int s)
{
    if (io->close) io->close(h, sk);
    return s;
}

/* One command over io: argv[0] is its name; now: the command's clock
 * (ms); max_bulk: proto-max-bulk-len. The reply goes to out (nothing on a
 * failure). FD_OK or an FD_E_* status. */
int fd_str_set(const fd_str_io *io, void *h, int argc, const resp_arg *argv, int64_t now, resp_out *out);
int fd_str_setnx(const fd_str_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_str_setex(const fd_str_io *io, void *h, const resp_arg *argv, int64_t now, int ms, resp_out *out); /* PSETEX: ms 1 */
int fd_str_getset(const fd_str_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_str_get(const fd_str_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_str_getdel(const fd_str_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_str_getex(const fd_str_io *io, void *h, int argc, const resp_arg *argv, int64_t now, resp_out *out);
int fd_str_mget(const fd_str_io *io, void *h, int argc, const resp_arg *argv, resp_out *out);
int fd_str_strlen(const fd_str_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_str_getrange(const fd_str_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_str_mset(const fd_str_io *io, void *h, int argc, const resp_arg *argv, int nx, resp_out *out); /* MSETNX: nx 1 */
/* INCR (by 0, decr 0), DECR (0, 1), INCRBY (1, 0), DECRBY (1, 1) */
int fd_str_incrby(const fd_str_io *io, void *h, const resp_arg *argv, int by, int decr, resp_out *out);
int fd_str_incrbyfloat_cmd(const fd_str_io *io, void *h, const resp_arg *argv, resp_out *out);
int fd_str_append(const fd_str_io *io, void *h, const resp_arg *argv, long long max_bulk, resp_out *out);
int fd_str_setrange_cmd(const fd_str_io *io, void *h, const resp_arg *argv, long long max_bulk, resp_out *out);

/* The string handlers of a family, named <P>_cmd_<command> as
 * commands.def's impl column binds them, over io for a context type CTX
 * with argc, argv, out, now_ms and max_bulk (kv_ctx, mg_ctx). */
#define FD_STR_HANDLERS(P, CTX, IO) \
    int P##_cmd_set(CTX *c)         { return fd_str_set(&(IO), c, c->argc, c->argv, c->now_ms, c->out); } \
    int P##_cmd_setnx(CTX *c)       { return fd_str_setnx(&(IO), c, c->argv, c->out); } \
    int P##_cmd_setex(CTX *c)       { return fd_str_setex(&(IO), c, c->argv, c->now_ms, 0, c->out); } \
    int P##_cmd_psetex(CTX *c)      { return fd_str_setex(&(IO), c, c->argv, c->now_ms, 1, c->out); } \
    int P##_cmd_getset(CTX *c)      { return fd_str_getset(&(IO), c, c->argv, c->out); } \
    int P##_cmd_get(CTX *c)         { return fd_str_get(&(IO), c, c->argv, c->out); } \
    int P##_cmd_getdel(CTX *c)      { return fd_str_getdel(&(IO), c, c->argv, c->out); } \
    int P##_cmd_getex(CTX *c)       { return fd_str_getex(&(IO), c, c->argc, c->argv, c->now_ms, c->out); } \
    int P##_cmd_mget(CTX *c)        { return fd_str_mget(&(IO), c, c->argc, c->argv, c->out); } \
    int P##_cmd_strlen(CTX *c)      { return fd_str_strlen(&(IO), c, c->argv, c->out); } \
    int P##_cmd_getrange(CTX *c)    { return fd_str_getrange(&(IO), c, c->argv, c->out); } \
    int P##_cmd_mset(CTX *c)        { return fd_str_mset(&(IO), c, c->argc, c->argv, 0, c->out); } \
    int P##_cmd_msetnx(CTX *c)      { return fd_str_mset(&(IO), c, c->argc, c->argv, 1, c->out); } \
    int P##_cmd_incr(CTX *c)        { return fd_str_incrby(&(IO), c, c->argv, 0, 0, c->out); } \
    int P##_cmd_decr(CTX *c)        { return fd_str_incrby(&(IO), c, c->argv, 0, 1, c->out); } \
    int P##_cmd_incrby(CTX *c)      { return fd_str_incrby(&(IO), c, c->argv, 1, 0, c->out); } \
    int P##_cmd_decrby(CTX *c)      { return fd_str_incrby(&(IO), c, c->argv, 1, 1, c->out); } \
    int P##_cmd_incrbyfloat(CTX *c) { return fd_str_incrbyfloat_cmd(&(IO), c, c->argv, c->out); } \
    int P##_cmd_append(CTX *c)      { return fd_str_append(&(IO), c, c->argv, c->max_bulk, c->out); } \
    int P##_cmd_setrange(CTX *c)    { return fd_str_setrange_cmd(&(IO), c, c->argv, c->max_bulk, c->out); }

#endif
