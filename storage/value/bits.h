/* bits.h — the bitmap commands of Redis 7.0 (bitops.c) as pure functions
 * over a string value: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD,
 * BITFIELD_RO.
 *
 * Module prefix: fd_bit / fd_bitfield / fd_setbit ... No storage access:
 * the caller (storage/kv/, storage/mongodb/) looks the key up, checks its
 * type, hands the value's bytes in, and stores what it is told to store.
 * Every function that can fail on the client's arguments returns NULL on
 * success or Redis's error reply text (static storage, with its code, e.g.
 * "ERR bit offset is not an integer or out of range"), which the caller
 * writes with resp_add_error() and then stops (the command is done, no write).
 * The *_cmd functions write the whole reply themselves (error or result) and
 * return 0, or -1 when the reply buffer could not grow.
 *
 * Order of checks, as Redis 7.0 (the caller keeps it):
 *   SETBIT   fd_setbit_parse; lookup (WRONGTYPE); apply.
 *   GETBIT   fd_bit_parse_offset(argv[2]); lookup (WRONGTYPE); fd_getbit.
 *   BITCOUNT lookup (missing key: :0 whatever the arguments; WRONGTYPE);
 *            fd_bitcount_cmd (range parsing, then the count).
 *   BITPOS   fd_bitpos_parse_bit; lookup (WRONGTYPE); fd_bitpos_cmd.
 *   BITOP    fd_bitop_parse; every source in argument order (WRONGTYPE on
 *            the first non-string; a missing key is ""); compute; store.
 *   BITFIELD fd_bitfield_parse (all ops, then the BITFIELD_RO check); lookup
 *            (WRONGTYPE); fd_bitfield_exec.
 * Values are raw bytes; bit 0 is the most significant bit of byte 0.
 * Expiry: SETBIT and BITFIELD change the value in place (a TTL stays);
 * BITOP writes destkey as SET does (a TTL goes).
 */
#ifndef FRONTDOOR_VALUE_BITS_H
#define FRONTDOOR_VALUE_BITS_H

#include <stddef.h>
#include <stdint.h>
#include "../../protocol/resp.h"

/* ---------------------------------------------------------------- helpers */

/* Number of set bits in p[0..n). */
long long fd_popcount(const unsigned char *p, size_t n);

/* A bit offset argument (getBitOffsetFromArgument): a non-negative integer
 * whose byte (off >> 3) is below max_bulk (proto-max-bulk-len; <= 0 means
 * 512 MB). hash_bits > 0 (BITFIELD) also accepts "#N", meaning N * hash_bits.
 * Error: "ERR bit offset is not an integer or out of range". */
const char *fd_bit_parse_offset(const resp_arg *a, int hash_bits, long long max_bulk, uint64_t *off);

/* ---------------------------------------------------------------- GETBIT */

/* The bit at off of v[0..len): 0 past the end. Reply :bit. */
int fd_getbit(const unsigned char *v, size_t len, uint64_t off);

/* ---------------------------------------------------------------- SETBIT */

typedef struct fd_setbit {
    uint64_t offset;   /* bit offset */
    int      on;       /* 0 or 1 */
} fd_setbit;

/* SETBIT key offset value: argv[2], argv[3]. Errors (in this order):
 * "ERR bit offset is not an integer or out of range",
 * "ERR bit is not an integer or out of range". */
const char *fd_setbit_parse(const resp_arg *argv, int argc, long long max_bulk, fd_setbit *p);

/* What SETBIT does to a value of oldlen bytes (v: its bytes, NULL when the
 * key is missing; oldlen 0 then). Redis grows the string with zero bytes to
 * reach the bit, always (even when the bit does not change), and creates a
 * missing key. */
typedef struct fd_bitpatch {
    size_t        newlen;   /* length of the value after the command (>= oldlen) */
    size_t        byte;     /* the one byte that may change ... */
    unsigned char val;      /* ... and its new value */
    int           oldbit;   /* the reply: :oldbit */
    int           write;    /* 1: the value must be stored (new key, grown, or the bit changed) */
} fd_bitpatch;

/* Compute the patch without touching v. A store that can patch in place
 * writes zero bytes over [oldlen, newlen) then val at byte; any other
 * store applies it to a copy with fd_bitpatch_apply. */
void fd_setbit_plan(const fd_setbit *p, const unsigned char *v, size_t oldlen, fd_bitpatch *out);

/* Apply a patch to buf, which holds the old value in buf[0..oldlen) and has
 * room for patch->newlen bytes: zero-fills the growth, sets the byte. */
void fd_bitpatch_apply(const fd_bitpatch *pt, unsigned char *buf, size_t oldlen);

/* ---------------------------------------------------------------- BITCOUNT */

/* BITCOUNT key [start end [BYTE|BIT]] on an existing string value (the
 * caller replies :0 for a missing key before calling). Parses the range
 * (ERR value is not an integer or out of range / ERR syntax error, in
 * Redis's order: start, end, the "both negative and start > end" shortcut,
 * then the unit) and writes the reply. */
int fd_bitcount_cmd(const resp_arg *argv, int argc, const unsigned char *v, size_t len, resp_out *out);

/* Set bits in the range of v (Redis's normalisation: negative from the end,
 * clamped; isbit: the range is in bits). */
long long fd_bitcount_range(const unsigned char *v, size_t len, long long start, long long end, int isbit);

/* ---------------------------------------------------------------- BITPOS */

/* The bit argument argv[2] of BITPOS key bit [start [end [BYTE|BIT]]]:
 * "ERR value is not an integer or out of range" or
 * "ERR The bit argument must be 1 or 0.". Call before the lookup. */
const char *fd_bitpos_parse_bit(const resp_arg *argv, int argc, int *bit);

/* The rest of BITPOS after the lookup. exists 0: the reply is -1 for bit 1,
 * 0 for bit 0, whatever the range arguments (v unused). Otherwise parses
 * start, the unit (argc 6), end, then writes the position or -1. */
int fd_bitpos_cmd(const resp_arg *argv, int argc, int bit, const unsigned char *v, size_t len,
                  int exists, resp_out *out);

/* ---------------------------------------------------------------- BITOP */

enum { FD_BITOP_AND, FD_BITOP_OR, FD_BITOP_XOR, FD_BITOP_NOT };

/* BITOP op destkey key [key ...] (argc >= 4 checked by the command table):
 * *op, or "ERR syntax error" (unknown operation: 7.0 knows AND OR XOR NOT),
 * "ERR BITOP NOT must be called with a single source key.". Sources are
 * argv[3..argc). */
const char *fd_bitop_parse(const resp_arg *argv, int argc, int *op);

/* Streaming BITOP, one source at a time, so a backend needs only one source
 * in memory beside the result: call with first = 1 for argv[3]'s value, then
 * first = 0 for each next source (a missing key: len 0). acc holds the
 * result so far in acc[0..acclen) and must have room for max(acclen, len)
 * bytes. Returns the new result length (max of all lengths so far). After
 * the last source: result length 0 means the caller deletes destkey,
 * otherwise stores acc[0..n) at destkey (a plain SET: any TTL goes); the
 * reply is :n either way. */
size_t fd_bitop_step(int op, unsigned char *acc, size_t acclen, const unsigned char *src, size_t len,
                     int first);
/* fd_bitop_step into a result buffer it grows: *acc (NULL before the first
 * source; the caller free()s it), its length *n and room *cap. 0, or -1 out
 * of memory (*acc stays valid). */
int fd_bitop_add(int op, unsigned char **acc, size_t *n, size_t *cap, const unsigned char *src,
                 size_t len, int first);

/* ---------------------------------------------------------------- BITFIELD */

enum { FD_BF_GET, FD_BF_SET, FD_BF_INCRBY };
enum { FD_BF_WRAP, FD_BF_SAT, FD_BF_FAIL };

typedef struct fd_bfop {
    uint64_t offset;    /* bit offset */
    int64_t  value;     /* SET value / INCRBY increment */
    uint8_t  opcode;    /* FD_BF_GET / SET / INCRBY */
    uint8_t  overflow;  /* FD_BF_WRAP / SAT / FAIL in force for this op */
    uint8_t  bits;      /* 1..64 (u: 1..63) */
    uint8_t  sign;      /* 1: iN, 0: uN */
} fd_bfop;

typedef struct fd_bitfield {
    fd_bfop *ops;        /* caller's array of at least fd_bitfield_max_ops(argc) */
    int      nops;
    int      readonly;   /* only GETs: the value is read, never written or created */
    uint64_t maxbit;     /* highest bit written by SET/INCRBY (when !readonly) */
} fd_bitfield;

/* Upper bound on the operations of a BITFIELD command line of argc args. */
int fd_bitfield_max_ops(int argc);

/* Parse BITFIELD / BITFIELD_RO (ro = 1) key [GET t o] [SET t o v]
 * [INCRBY t o i] [OVERFLOW WRAP|SAT|FAIL]... into bf (bf->ops set by the
 * caller). Errors in Redis's order, per argument: "ERR syntax error",
 * "ERR Invalid OVERFLOW type specified", the bitfield type error, the bit
 * offset error, "ERR value is not an integer or out of range"; then, for
 * BITFIELD_RO with a SET/INCRBY, "ERR BITFIELD_RO only supports the GET
 * subcommand". */
const char *fd_bitfield_parse(const resp_arg *argv, int argc, int ro, long long max_bulk, fd_bitfield *bf);

/* Length of the value after the command: readonly: oldlen; otherwise
 * max(oldlen, maxbit / 8 + 1) (Redis grows and creates the key even when
 * every write fails with OVERFLOW FAIL). */
size_t fd_bitfield_newlen(const fd_bitfield *bf, size_t oldlen);

/* Run the operations and write the reply array (RESP null for a failed
 * write). buf[0..len) is the value: for readonly, the stored value as is
 * (may be NULL with len 0 for a missing key; it is only read); otherwise a
 * writable copy already grown to fd_bitfield_newlen() with zero bytes.
 * *changed (may be NULL) counts the writes that changed bytes; [*dlo, *dhi)
 * (may be NULL) is the byte range written (dlo == dhi: none), for a store
 * that patches in place. The caller stores the value when !readonly and
 * (the key is new, it grew, or *changed). Returns 0, -1 out of memory. */
int fd_bitfield_exec(const fd_bitfield *bf, unsigned char *buf, size_t len, resp_out *out,
                     int *changed, size_t *dlo, size_t *dhi);

/* For a backend, step 1: bf->ops allocated (fd_bitfield_end frees them)
 * and argv parsed (fd_bitfield_parse); a parse error is written to out with
 * *replied 1. FD_OK, or FD_E_NOMEM. */
int  fd_bitfield_begin(const resp_arg *argv, int argc, int ro, long long max_bulk, fd_bitfield *bf,
                       resp_out *out, int *replied);
void fd_bitfield_end(fd_bitfield *bf);
/* Step 2 of a BITFIELD that may write (!readonly): buf (room for
 * nl = fd_bitfield_newlen(bf, oldlen) bytes) gets the old value old[0..
 * oldlen) and zero growth, the operations run and the reply is written.
 * *store: the caller stores buf[0..nl) (the key is new, grew or changed;
 * on a failed store it cuts out back to its length before this call).
 * 0, or -1 out of memory. */
int fd_bitfield_apply(const fd_bitfield *bf, const unsigned char *old, size_t oldlen, int exists,
                      unsigned char *buf, size_t nl, resp_out *out, int *store);

#endif
