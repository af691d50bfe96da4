/* hll.h — HyperLogLog values exactly as Redis 7.0 stores them
 * (hyperloglog.c), so PFADD / PFCOUNT / PFMERGE give redis-server's counts
 * and bytes, and an HLL copied from Redis with GET/SET keeps working.
 *
 * Module prefix: fd_hll / fd_pf. Pure: functions over a value's bytes; the
 * caller (storage/kv/, storage/mongodb/) reads and stores the string.
 *
 * Layout (all Redis's): a 16-byte header "HYLL", encoding (0 dense,
 * 1 sparse), 3 unused bytes, the cached cardinality as 8 bytes little
 * endian whose top bit (byte 15, 0x80) set means "stale"; then 16384
 * registers of 6 bits, either dense (12288 bytes, LSB first) or sparse
 * opcodes ZERO 00xxxxxx, XZERO 01xxxxxx yyyyyyyy, VAL 1vvvvvxx. Elements
 * hash with MurmurHash64A, seed 0xadc83b19. A sparse value is promoted to
 * dense when a register needs a value above 32 or when an insertion would
 * take it past hll-sparse-max-bytes (default 3000). The count is Ertl's
 * estimator (hllSigma / hllTau) Redis uses since 5.0.
 *
 * Errors: the functions return NULL or one of these reply texts:
 *   FD_HLL_ERR_TYPE    "WRONGTYPE Key is not a valid HyperLogLog string value."
 *   FD_HLL_ERR_CORRUPT "INVALIDOBJ Corrupted HLL object detected"
 * A key holding another type is the caller's ordinary WRONGTYPE error.
 *
 * Wiring (order of checks as Redis 7.0):
 *   PFADD key ele...: lookup; an existing string must pass fd_hll_check and
 *     is copied into a buffer of FD_HLL_BUF_SIZE bytes; fd_pfadd; store when
 *     *updated; reply :1 / :0. On an error nothing is stored.
 *   PFCOUNT key: missing: :0. Else fd_hll_check, then fd_hll_card on a
 *     writable copy; when *cache_written, store the value again (or patch
 *     its bytes 8..15, FD_HLL_CARD_OFF). Reply :card.
 *   PFCOUNT k1 k2...: registers uint8_t[FD_HLL_REGISTERS] zeroed; for each
 *     key in order: missing: skip; other type: WRONGTYPE; fd_hll_merge_raw.
 *     Reply :fd_hll_count_raw(). Nothing is stored.
 *   PFMERGE dest src...: the same merge over dest then the sources (dest
 *     is argv[1], merged first, as Redis), noting *dense; then fd_hll_store_raw
 *     on a copy of dest (or a new one); store; reply +OK.
 * All three change the value in place as far as Redis is concerned: a TTL
 * on the key stays.
 */
#ifndef FRONTDOOR_VALUE_HLL_H
#define FRONTDOOR_VALUE_HLL_H

#include <stddef.h>
#include <stdint.h>
#include "../../protocol/resp.h"

#define FD_HLL_HDR_SIZE      16
#define FD_HLL_REGISTERS     16384
#define FD_HLL_DENSE_SIZE    (FD_HLL_HDR_SIZE + FD_HLL_REGISTERS * 6 / 8)   /* 12304 */
#define FD_HLL_CARD_OFF      8
#define FD_HLL_SPARSE_MAX_DEFAULT 3000    /* hll-sparse-max-bytes */
/* Room every working buffer needs: the largest valid sparse value (one
 * 2-byte opcode per register) plus an insertion. Longer values are corrupt. */
#define FD_HLL_BUF_SIZE      (FD_HLL_HDR_SIZE + 2 * FD_HLL_REGISTERS + 8)

extern const char FD_HLL_ERR_TYPE[];
extern const char FD_HLL_ERR_CORRUPT[];

/* Redis's MurmurHash64A (endian-neutral variant). */
uint64_t fd_murmur64a(const void *key, size_t len, uint64_t seed);

/* Is v[0..len) an HLL (isHLLObjectOrReply)? NULL, or FD_HLL_ERR_TYPE:
 * shorter than the header, no "HYLL" magic, an encoding above 1, a dense
 * value whose length is not FD_HLL_DENSE_SIZE. */
const char *fd_hll_check(const unsigned char *v, size_t len);

/* Write the empty HLL PFADD / PFMERGE create (sparse, 18 bytes) into buf;
 * returns its length. */
size_t fd_hll_init(unsigned char *buf);

/* Add one element to the HLL in buf[0..*len) (capacity FD_HLL_BUF_SIZE);
 * may grow *len or promote to dense. sparse_max: hll-sparse-max-bytes (0:
 * the default). Returns 1 when a register changed, 0 when not, -1 when the
 * value is corrupt. Does not touch the cached cardinality (fd_pfadd does). */
int fd_hll_add(unsigned char *buf, size_t *len, size_t sparse_max, const unsigned char *ele, size_t elen);

/* Mark the cached cardinality stale (byte 15 |= 0x80). */
void fd_hll_invalidate(unsigned char *buf);

/* PFADD's work on buf[0..*len): a copy of a value that passed fd_hll_check
 * (exists 1), or anything (exists 0: buf is initialised as a new HLL).
 * Adds the n elements; *updated = 1 when the value must be stored (new key,
 * or a register changed; the cache is then invalidated). Reply :*updated.
 * Returns NULL or FD_HLL_ERR_CORRUPT (also for a value longer than
 * FD_HLL_BUF_SIZE - 8). */
const char *fd_pfadd(const resp_arg *eles, int n, unsigned char *buf, size_t *len, int exists,
                     size_t sparse_max, int *updated);

/* PFCOUNT of one HLL (already checked): the cached cardinality when valid,
 * otherwise computed and written into v[8..16) (*cache_written = 1: the
 * caller stores the value). NULL or FD_HLL_ERR_CORRUPT (a sparse value that
 * does not cover exactly 16384 registers). */
const char *fd_hll_card(unsigned char *v, size_t len, uint64_t *card, int *cache_written);

/* Merge the HLL v[0..len) into regs (one byte per register: the max). It
 * is checked first (FD_HLL_ERR_TYPE); FD_HLL_ERR_CORRUPT for a bad sparse
 * value. *dense (may be NULL) is set to 1 when v is dense. */
const char *fd_hll_merge_raw(uint8_t *regs, const unsigned char *v, size_t len, int *dense);

/* The cardinality estimate of raw registers (PFCOUNT of several keys). */
uint64_t fd_hll_count_raw(const uint8_t *regs);

/* PFMERGE's write: buf[0..*len) is a copy of dest (exists 1: it was merged
 * into regs already, so it is a valid HLL) or is initialised (exists 0).
 * Converted to dense when use_dense (some input was dense), then every
 * non-zero register of regs set in index order (which may promote a sparse
 * value), and the cache invalidated. NULL or FD_HLL_ERR_CORRUPT. */
const char *fd_hll_store_raw(unsigned char *buf, size_t *len, int exists, int use_dense,
                             const uint8_t *regs, size_t sparse_max);

/* For a backend, PFADD / PFMERGE's write on a key's value: old[0..oldlen)
 * when exists, copied into buf (FD_HLL_BUF_SIZE bytes) into *len, then
 * fd_pfadd (PFADD: an existing value passes fd_hll_check first) or
 * fd_hll_store_raw (PFMERGE: dest was merged, so checked, already). A value
 * longer than buf is FD_HLL_ERR_CORRUPT. NULL or the error reply text. */
const char *fd_pfadd_value(const resp_arg *eles, int n, const unsigned char *old, size_t oldlen,
                           int exists, unsigned char *buf, size_t *len, int *updated);
const char *fd_pfmerge_value(const uint8_t *regs, int use_dense, const unsigned char *old,
                             size_t oldlen, int exists, unsigned char *buf, size_t *len);

#endif
