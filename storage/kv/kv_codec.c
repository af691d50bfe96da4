/* kv_codec.c — the byte encodings of the ordered-KV layer (see kv.h and
 * docs/encoding.md): big-endian integers, order-preserving signed integers
 * and doubles, key encoding with SipHash-2-4 for long keys, metadata parsing.
 * Pure functions, no allocation. */
#include <string.h>
#include "kv.h"

/* ---------------------------------------------------------------- integers */

/* Flipping the sign bit maps INT64_MIN..INT64_MAX onto 0..UINT64_MAX. */
void kv_enc_i64(uint8_t out[8], int64_t v)
{
    kv_put_u64(out, (uint64_t)v ^ 0x8000000000000000ULL);
}

int64_t kv_dec_i64(const uint8_t in[8])
{
    uint64_t u = kv_get_u64(in) ^ 0x8000000000000000ULL;
    int64_t v;
    memcpy(&v, &u, 8);
    return v;
}

/* IEEE 754: positives (sign 0) order like their bit patterns, so setting the
 * sign bit puts them above all negatives; negatives order reversed, so all
 * their bits are flipped. -inf → 0x000fff..., +inf → 0xfff000... */
void kv_enc_double(uint8_t out[8], double d)
{
    uint64_t u;
    if (d == 0) d = 0.0;              /* -0 → +0 */
    memcpy(&u, &d, 8);
    if (u & 0x8000000000000000ULL) u = ~u;
    else u |= 0x8000000000000000ULL;
    kv_put_u64(out, u);
}

double kv_dec_double(const uint8_t in[8])
{
    uint64_t u = kv_get_u64(in);
    double d;
    if (u & 0x8000000000000000ULL) u &= ~0x8000000000000000ULL;
    else u = ~u;
    memcpy(&d, &u, 8);
    return d;
}

/* ---------------------------------------------------------------- SipHash-2-4 */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND do { \
    v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32); \
    v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2; \
    v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0; \
    v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32); } while (0)

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

uint64_t kv_siphash(const uint8_t key[16], const void *data, size_t len)
{
    const uint8_t *in = data;
    uint64_t k0 = le64(key), k1 = le64(key + 8);
    uint64_t v0 = 0x736f6d6570736575ULL ^ k0, v1 = 0x646f72616e646f6dULL ^ k1;
    uint64_t v2 = 0x6c7967656e657261ULL ^ k0, v3 = 0x7465646279746573ULL ^ k1;
    size_t blocks = len / 8;
    for (size_t i = 0; i < blocks; i++) {
        uint64_t m = le64(in + 8 * i);
        v3 ^= m; SIPROUND; SIPROUND; v0 ^= m;
    }
    uint64_t b = (uint64_t)len << 56;
    const uint8_t *t = in + 8 * blocks;
    for (size_t i = 0; i < (len & 7); i++) b |= (uint64_t)t[i] << (8 * i);
    v3 ^= b; SIPROUND; SIPROUND; v0 ^= b;
    v2 ^= 0xff;
    SIPROUND; SIPROUND; SIPROUND; SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

/* Fixed keys: changing them changes every stored long key — never do. */
static const uint8_t kv_hkey1[16] = "frontdoor-kv-h1\0";
static const uint8_t kv_hkey2[16] = "frontdoor-kv-h2\0";

void kv_hash128(const void *data, size_t len, uint8_t out[16])
{
    kv_put_u64(out, kv_siphash(kv_hkey1, data, len));
    kv_put_u64(out + 8, kv_siphash(kv_hkey2, data, len));
}

/* ---------------------------------------------------------------- keys */

size_t kv_enc_key(uint8_t *out, const void *key, size_t len)
{
    if (len <= KV_KEY_INLINE) {
        memcpy(out, key, len);
        return len;
    }
    memcpy(out, key, KV_KEY_INLINE);
    kv_hash128(key, len, out + KV_KEY_INLINE);
    return KV_KEY_HASHED;
}

size_t kv_enc_meta_key(uint8_t *out, const void *key, size_t len)
{
    out[0] = KV_PFX_META;
    return 1 + kv_enc_key(out + 1, key, len);
}

size_t kv_enc_expire_key(uint8_t *out, int64_t expire_ms, const uint8_t *enc, size_t elen)
{
    out[0] = KV_PFX_EXPIRE;
    kv_put_u64(out + 1, (uint64_t)expire_ms);   /* expiries are positive */
    memcpy(out + 9, enc, elen);
    return 9 + elen;
}

size_t kv_enc_sub_prefix(uint8_t *out, const uint8_t *enc, size_t elen, uint64_t version)
{
    out[0] = KV_PFX_SUB;
    out[1] = (uint8_t)elen;                     /* <= KV_ENC_MAX (216) */
    memcpy(out + 2, enc, elen);
    kv_put_u64(out + 2 + elen, version);
    return 2 + elen + 8;
}

/* ---------------------------------------------------------------- metadata */

int kv_meta_parse(const void *v, size_t vl, kv_meta *m)
{
    const uint8_t *p = v, *end = p + vl;
    memset(m, 0, sizeof *m);
    if (vl < KV_META_HDR) return FD_E_CORRUPT;
    m->found = m->live = 1;
    m->type = p[0] & KV_F_TYPEMASK;
    m->expire = (int64_t)kv_get_u64(p + 1);
    p += KV_META_HDR;
    if (v && ((const uint8_t *)v)[0] & KV_F_LONGKEY) {
        if (end - p < 4) return FD_E_CORRUPT;
        uint32_t kl = kv_get_u32(p);
        p += 4;
        if ((size_t)(end - p) < kl) return FD_E_CORRUPT;
        m->fullkey = (const char *)p;
        m->fullkey_len = kl;
        p += kl;
    }
    switch (m->type) {
    case KV_T_STRING:
        m->val = (const char *)p;
        m->vlen = (size_t)(end - p);
        return FD_OK;
    case KV_T_HASH: case KV_T_SET: case KV_T_ZSET:
        if (end - p < 16) return FD_E_CORRUPT;
        m->version = kv_get_u64(p);
        m->size = kv_get_u64(p + 8);
        if (m->type == KV_T_ZSET && end - p >= 32) {     /* a sorted set's score bounds (kv_zset.c) */
            m->head = kv_get_u64(p + 16);
            m->tail = kv_get_u64(p + 24);
        }
        return FD_OK;
    case KV_T_STREAM:   /* version, then the stream engine's metadata */
        if (end - p < 8) return FD_E_CORRUPT;
        m->version = kv_get_u64(p);
        m->val = (const char *)p + 8;
        m->vlen = (size_t)(end - p - 8);
        return FD_OK;
    case KV_T_LIST:
        if (end - p < 32) return FD_E_CORRUPT;
        m->version = kv_get_u64(p);
        m->size = kv_get_u64(p + 8);
        m->head = kv_get_u64(p + 16);
        m->tail = kv_get_u64(p + 24);
        return FD_OK;
    default:
        return FD_E_CORRUPT;
    }
}
