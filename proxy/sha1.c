/* sha1.c — SHA-1 per FIPS 180-4 (see sha1.h). */
#include "proxy/sha1.h"

#include <string.h>

static uint32_t rol(uint32_t x, int s) { return (x << s) | (x >> (32 - s)); }

static void block(fd_sha1_ctx *c, const unsigned char *p) {
    uint32_t w[80];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
    for (int i = 16; i < 80; i++) w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = c->h[0], b = c->h[1], d3 = c->h[2], d = c->h[3], e = c->h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20)      { f = (b & d3) | (~b & d);          k = 0x5A827999u; }
        else if (i < 40) { f = b ^ d3 ^ d;                   k = 0x6ED9EBA1u; }
        else if (i < 60) { f = (b & d3) | (b & d) | (d3 & d); k = 0x8F1BBCDCu; }
        else             { f = b ^ d3 ^ d;                   k = 0xCA62C1D6u; }
        uint32_t t = rol(a, 5) + f + e + k + w[i];
        e = d; d = d3; d3 = rol(b, 30); b = a; a = t;
    }
    c->h[0] += a; c->h[1] += b; c->h[2] += d3; c->h[3] += d; c->h[4] += e;
}

void fd_sha1_init(fd_sha1_ctx *c) {
    c->h[0] = 0x67452301u; c->h[1] = 0xEFCDAB89u; c->h[2] = 0x98BADCFEu;
    c->h[3] = 0x10325476u; c->h[4] = 0xC3D2E1F0u;
    c->total = 0;
    c->used = 0;
}

void fd_sha1_update(fd_sha1_ctx *c, const void *data, size_t n) {
    const unsigned char *p = data;
    c->total += n;
    if (c->used) {
        size_t take = 64 - c->used < n ? 64 - c->used : n;
        memcpy(c->buf + c->used, p, take);
        c->used += take; p += take; n -= take;
        if (c->used < 64) return;
        block(c, c->buf);
        c->used = 0;
    }
    for (; n >= 64; p += 64, n -= 64) block(c, p);
    if (n) { memcpy(c->buf, p, n); c->used = n; }
}

void fd_sha1_final(fd_sha1_ctx *c, unsigned char out[20]) {
    uint64_t bits = c->total * 8;
    unsigned char pad[72] = {0x80};
    size_t padlen = (c->used < 56 ? 56 : 120) - c->used;
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)(bits >> (56 - 8 * i));
    fd_sha1_update(c, pad, padlen);
    fd_sha1_update(c, len, 8);
    for (int i = 0; i < 5; i++) {
        out[4 * i] = (unsigned char)(c->h[i] >> 24);
        out[4 * i + 1] = (unsigned char)(c->h[i] >> 16);
        out[4 * i + 2] = (unsigned char)(c->h[i] >> 8);
        out[4 * i + 3] = (unsigned char)c->h[i];
    }
}

void fd_sha1_hex(char out[41], const void *p, size_t n) {
    static const char hex[] = "0123456789abcdef";
    fd_sha1_ctx c;
    unsigned char d[20];
    fd_sha1_init(&c);
    fd_sha1_update(&c, p, n);
    fd_sha1_final(&c, d);
    for (int i = 0; i < 20; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[40] = '\0';
}
