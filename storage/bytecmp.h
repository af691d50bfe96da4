/* bytecmp.h — the one byte-string order of the storage layer: memcmp over
 * the common length, then the shorter string first (LMDB's and LevelDB's
 * default key order, SORT ... ALPHA's byte order). Header-only; pure. */
#ifndef FRONTDOOR_BYTECMP_H
#define FRONTDOOR_BYTECMP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* <0, 0, >0 as a is before, equal to or after b. Compares 8 bytes at a
 * time without a call to memcmp (keys share long prefixes: the B+tree and
 * skiplist searches call this in their inner loops). */
static inline int fd_bytes_cmp(const void *a, size_t al, const void *b, size_t bl)
{
    size_t n = al < bl ? al : bl;
    const unsigned char *p = a, *q = b;
    for (; n >= 8; n -= 8, p += 8, q += 8) {
        uint64_t x, y;
        memcpy(&x, p, 8);
        memcpy(&y, q, 8);
        if (x != y) {                         /* the first differing byte decides */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            x = __builtin_bswap64(x);         /* big-endian: byte order is numeric order */
            y = __builtin_bswap64(y);
#endif
            return x < y ? -1 : 1;
        }
    }
    for (; n; n--, p++, q++)
        if (*p != *q) return *p < *q ? -1 : 1;
    return al < bl ? -1 : al > bl;
}

#endif
