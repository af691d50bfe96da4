/* sha1.h — SHA-1 (FIPS 180-4), small and self-contained. Used for script ids
 * (EVAL's SHA1 of the body, redis.sha1hex). Pure: no allocation, no I/O.
 *
 * Not for security: SHA-1 is what Redis names scripts by, nothing more. */
#ifndef FRONTDOOR_SHA1_H
#define FRONTDOOR_SHA1_H

#include <stddef.h>
#include <stdint.h>

typedef struct fd_sha1_ctx {
    uint32_t h[5];
    uint64_t total;          /* bytes fed so far */
    unsigned char buf[64];   /* partial block */
    size_t   used;           /* bytes in buf */
} fd_sha1_ctx;

void fd_sha1_init(fd_sha1_ctx *c);
void fd_sha1_update(fd_sha1_ctx *c, const void *p, size_t n);
void fd_sha1_final(fd_sha1_ctx *c, unsigned char out[20]);

/* The 40 lowercase hex digits of SHA1(p[0..n)) and a NUL into out[41]
 * (what Redis's sha1hex gives). */
void fd_sha1_hex(char out[41], const void *p, size_t n);

#endif
