/* strings.h — the computations of Redis 7.0's string commands (t_string.c)
 * that do not depend on where a string is stored, shared by every
 * Redis-types backend (storage/kv/kv_string.c, storage/mongodb/
 * mg_string.c): SET's NX/XX condition and reply, GETRANGE, INCR/DECR and
 * INCRBYFLOAT arithmetic, SETRANGE's new value.
 *
 * Module prefix: fd_str. Pure: the backend looks the key up (WRONGTYPE is
 * its answer), hands the old value in (v NULL / len 0 when the key is
 * missing) and stores what it is told. Statuses are storage/status.h's. */
#ifndef FRONTDOOR_VALUE_STRINGS_H
#define FRONTDOOR_VALUE_STRINGS_H

#include <stddef.h>
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

#endif
