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
 * skiplist searches call this in their inner loops). A common part of 8
 * bytes or more ends with one more 8-byte load that overlaps the last
 * whole word, not a byte loop: its bytes before that word are known equal,
 * so its first differing byte is the first overall (the byte loop's exit
 * branch was a quarter of the comparator's time under HSET, issue 31). */
static inline int fd_bytes_cmp(const void *a, size_t al, const void *b, size_t bl)
{
    size_t n = al < bl ? al : bl, i = 0;
    const unsigned char *p = a, *q = b;
    uint64_t x, y;
    if (n >= 8) {
        for (; i + 8 <= n; i += 8) {
            memcpy(&x, p + i, 8);
            memcpy(&y, q + i, 8);
            if (x != y) goto differ;
        }
        if (i < n) {
            memcpy(&x, p + n - 8, 8);
            memcpy(&y, q + n - 8, 8);
            if (x != y) goto differ;
        }
        return al < bl ? -1 : al > bl;
    }
    for (; i < n; i++)
        if (p[i] != q[i]) return p[i] < q[i] ? -1 : 1;
    return al < bl ? -1 : al > bl;
differ:                                       /* the first differing byte decides */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    x = __builtin_bswap64(x);                 /* big-endian: byte order is numeric order */
    y = __builtin_bswap64(y);
#endif
    return x < y ? -1 : 1;
}

#endif
