/* hll.c — HyperLogLog values, byte-compatible with Redis 7.0 (see hll.h).
 * The representation, the order in which the sparse opcodes are split and
 * merged, the promotion rule and the estimator follow hyperloglog.c so the
 * bytes match; the code is our own. */
#include <math.h>
#include <string.h>
#include "hll.h"

const char FD_HLL_ERR_TYPE[]    = "WRONGTYPE Key is not a valid HyperLogLog string value.";
const char FD_HLL_ERR_CORRUPT[] = "INVALIDOBJ Corrupted HLL object detected";

#define P        14
#define Q        (64 - P)
#define REGS     FD_HLL_REGISTERS
#define HDR      FD_HLL_HDR_SIZE
#define ENC_DENSE  0
#define ENC_SPARSE 1
#define REG_MAX  63

/* sparse opcodes */
#define OP_IS_ZERO(b)   (((b) & 0xc0) == 0x00)
#define OP_IS_XZERO(b)  (((b) & 0xc0) == 0x40)
#define OP_IS_VAL(b)    ((b) & 0x80)
#define ZERO_LEN(p)     (((p)[0] & 0x3f) + 1)
#define XZERO_LEN(p)    (((((p)[0] & 0x3f) << 8) | (p)[1]) + 1)
#define VAL_VALUE(p)    ((((p)[0] >> 2) & 0x1f) + 1)
#define VAL_LEN(p)      (((p)[0] & 0x3) + 1)
#define VAL_MAX_VALUE   32
#define VAL_MAX_LEN     4
#define ZERO_MAX_LEN    64
#define XZERO_MAX_LEN   16384

static unsigned char op_val(int val, int len)  { return (unsigned char)(0x80 | ((val - 1) << 2) | (len - 1)); }

/* ZERO or XZERO for a run of len registers; returns the bytes written */
static int put_zero(unsigned char *p, int len)
{
    if (len > ZERO_MAX_LEN) {
        p[0] = (unsigned char)(0x40 | ((len - 1) >> 8));
        p[1] = (unsigned char)((len - 1) & 0xff);
        return 2;
    }
    p[0] = (unsigned char)(len - 1);
    return 1;
}

uint64_t fd_murmur64a(const void *key, size_t len, uint64_t seed)
{
    const uint64_t m = 0xc6a4a7935bd1e995ULL;
    const int r = 47;
    /* Redis passes the length as an int and seeds with seed ^ (len * m) */
    uint64_t h = seed ^ ((uint64_t)(int)len * m);
    const uint8_t *d = key;
    size_t nblocks = len / 8;
    for (size_t i = 0; i < nblocks; i++, d += 8) {
        uint64_t k = (uint64_t)d[0] | (uint64_t)d[1] << 8 | (uint64_t)d[2] << 16 | (uint64_t)d[3] << 24 |
                     (uint64_t)d[4] << 32 | (uint64_t)d[5] << 40 | (uint64_t)d[6] << 48 | (uint64_t)d[7] << 56;
        k *= m;
        k ^= k >> r;
        k *= m;
        h ^= k;
        h *= m;
    }
    switch (len & 7) {
    case 7: h ^= (uint64_t)d[6] << 48; /* fall through */
    case 6: h ^= (uint64_t)d[5] << 40; /* fall through */
    case 5: h ^= (uint64_t)d[4] << 32; /* fall through */
    case 4: h ^= (uint64_t)d[3] << 24; /* fall through */
    case 3: h ^= (uint64_t)d[2] << 16; /* fall through */
    case 2: h ^= (uint64_t)d[1] << 8;  /* fall through */
    case 1: h ^= (uint64_t)d[0]; h *= m;
    default: break;
    }
    h ^= h >> r;
    h *= m;
    h ^= h >> r;
    return h;
}

/* register index and the length of the 00..1 run of the element's hash */
static int pat_len(const unsigned char *ele, size_t elen, long *reg)
{
    uint64_t h = fd_murmur64a(ele, elen, 0xadc83b19ULL);
    *reg = (long)(h & (REGS - 1));
    h >>= P;
    h |= (uint64_t)1 << Q;   /* the run is at most Q + 1 */
    int count = 1;
    while (!(h & 1)) { count++; h >>= 1; }
    return count;
}

/* ---------------------------------------------------------------- dense registers */

static unsigned dense_get(const unsigned char *r, long i)
{
    size_t byte = (size_t)i * 6 / 8;
    unsigned fb = (unsigned)(i * 6) & 7;
    unsigned b0 = r[byte];
    unsigned b1 = byte + 1 < REGS * 6 / 8 ? r[byte + 1] : 0;
    return ((b0 >> fb) | (b1 << (8 - fb))) & REG_MAX;
}

static void dense_set(unsigned char *r, long i, unsigned v)
{
    size_t byte = (size_t)i * 6 / 8;
    unsigned fb = (unsigned)(i * 6) & 7;
    r[byte] = (unsigned char)((r[byte] & ~(REG_MAX << fb)) | (v << fb));
    if (byte + 1 < REGS * 6 / 8)
        r[byte + 1] = (unsigned char)((r[byte + 1] & ~(REG_MAX >> (8 - fb))) | (v >> (8 - fb)));
}

static int dense_update(unsigned char *r, long i, unsigned count)
{
    if (count > dense_get(r, i)) { dense_set(r, i, count); return 1; }
    return 0;
}

/* ---------------------------------------------------------------- checks */

const char *fd_hll_check(const unsigned char *v, size_t len)
{
    if (len < HDR || memcmp(v, "HYLL", 4) != 0 || v[4] > ENC_SPARSE) return FD_HLL_ERR_TYPE;
    if (v[4] == ENC_DENSE && len != FD_HLL_DENSE_SIZE) return FD_HLL_ERR_TYPE;
    return NULL;
}

size_t fd_hll_init(unsigned char *buf)
{
    memset(buf, 0, HDR);
    memcpy(buf, "HYLL", 4);
    buf[4] = ENC_SPARSE;
    size_t n = HDR;
    for (int left = REGS; left > 0;) {
        int x = left > XZERO_MAX_LEN ? XZERO_MAX_LEN : left;
        n += (size_t)put_zero(buf + n, x);
        left -= x;
    }
    return n;
}

void fd_hll_invalidate(unsigned char *buf)
{
    buf[15] |= 0x80;
}

/* Merge the registers of the sparse value v[0..len) into raw (one byte per
 * register: the max). 0, or -1 when it does not cover exactly REGS. */
static int sparse_merge(uint8_t *raw, const unsigned char *v, size_t len)
{
    const unsigned char *p = v + HDR, *end = v + len;
    long idx = 0;
    while (p < end) {
        if (OP_IS_ZERO(*p)) { idx += ZERO_LEN(p); p++; }
        else if (OP_IS_XZERO(*p)) { idx += XZERO_LEN(p); p += 2; }
        else {
            int run = VAL_LEN(p), val = VAL_VALUE(p);
            if (idx + run > REGS) break;
            while (run--) { if (val > raw[idx]) raw[idx] = (uint8_t)val; idx++; }
            p++;
        }
    }
    return idx == REGS ? 0 : -1;
}

/* sparse -> dense in place (buf has room for the dense size). 0, -1 corrupt. */
static int to_dense(unsigned char *buf, size_t *len)
{
    if (buf[4] == ENC_DENSE) return 0;
    uint8_t raw[REGS];
    memset(raw, 0, sizeof raw);
    if (sparse_merge(raw, buf, *len) != 0) return -1;
    unsigned char regs[REGS * 6 / 8];
    memset(regs, 0, sizeof regs);
    for (long i = 0; i < REGS; i++)
        if (raw[i]) dense_set(regs, i, raw[i]);
    buf[4] = ENC_DENSE;   /* magic and the cached cardinality stay as they were */
    memcpy(buf + HDR, regs, sizeof regs);
    *len = FD_HLL_DENSE_SIZE;
    return 0;
}

/* Set register index to count in a sparse value if count is larger:
 * 1 changed (possibly promoted to dense), 0 not, -1 corrupt. */
static int sparse_update(unsigned char *buf, size_t *len, size_t sparse_max, long index, int count)
{
    if (count > VAL_MAX_VALUE) goto promote;

    unsigned char *sparse = buf + HDR, *end = buf + *len, *p = sparse, *prev = NULL;
    long first = 0, span = 0;
    int oplen = 1;
    while (p < end) {
        oplen = 1;
        if (OP_IS_ZERO(*p)) span = ZERO_LEN(p);
        else if (OP_IS_VAL(*p)) span = VAL_LEN(p);
        else { span = XZERO_LEN(p); oplen = 2; }
        if (index <= first + span - 1) break;
        prev = p;
        p += oplen;
        first += span;
    }
    if (span == 0 || p >= end) return -1;
    unsigned char *next = p + oplen;
    if (next >= end) next = NULL;

    int is_zero = OP_IS_ZERO(*p), is_xzero = OP_IS_XZERO(*p), is_val = !is_zero && !is_xzero;
    long runlen = span;
    if (is_val) {
        if (VAL_VALUE(p) >= count) return 0;
        if (runlen == 1) { *p = op_val(count, 1); goto updated; }
    }
    if (is_zero && runlen == 1) { *p = op_val(count, 1); goto updated; }

    /* split the opcode into up to three: before, the register, after */
    unsigned char seq[5];
    int n = 0;
    long last = first + span - 1;
    if (is_val) {
        int cur = VAL_VALUE(p);
        if (index != first) seq[n++] = op_val(cur, (int)(index - first));
        seq[n++] = op_val(count, 1);
        if (index != last) seq[n++] = op_val(cur, (int)(last - index));
    } else {
        if (index != first) n += put_zero(seq + n, (int)(index - first));
        seq[n++] = op_val(count, 1);
        if (index != last) n += put_zero(seq + n, (int)(last - index));
    }
    int delta = n - (is_xzero ? 2 : 1);
    if (delta > 0 && *len + (size_t)delta > sparse_max) goto promote;
    if (*len + (size_t)(delta > 0 ? delta : 0) > FD_HLL_BUF_SIZE) return -1;
    if (delta && next) memmove(next + delta, next, (size_t)(end - next));
    *len = (size_t)((long)*len + delta);
    memcpy(p, seq, (size_t)n);
    end += delta;

updated:
    /* merge adjacent VAL opcodes of the same value, from prev, 5 opcodes */
    p = prev ? prev : sparse;
    for (int scan = 5; p < end && scan--;) {
        if (OP_IS_XZERO(*p)) { p += 2; continue; }
        if (OP_IS_ZERO(*p)) { p++; continue; }
        if (p + 1 < end && OP_IS_VAL(p[1]) && VAL_VALUE(p) == VAL_VALUE(p + 1)) {
            int l = VAL_LEN(p) + VAL_LEN(p + 1);
            if (l <= VAL_MAX_LEN) {
                p[1] = op_val(VAL_VALUE(p), l);
                memmove(p, p + 1, (size_t)(end - p - 1));
                (*len)--;
                end--;
                continue;   /* try the merged opcode with the next one */
            }
        }
        p++;
    }
    fd_hll_invalidate(buf);
    return 1;

promote:
    if (to_dense(buf, len) != 0) return -1;
    dense_update(buf + HDR, index, (unsigned)count);
    return 1;
}

static int hll_set(unsigned char *buf, size_t *len, size_t sparse_max, long index, int count)
{
    if (!sparse_max) sparse_max = FD_HLL_SPARSE_MAX_DEFAULT;
    if (buf[4] == ENC_DENSE) return dense_update(buf + HDR, index, (unsigned)count);
    if (buf[4] == ENC_SPARSE) return sparse_update(buf, len, sparse_max, index, count);
    return -1;
}

int fd_hll_add(unsigned char *buf, size_t *len, size_t sparse_max, const unsigned char *ele, size_t elen)
{
    long reg;
    int count = pat_len(ele, elen, &reg);
    return hll_set(buf, len, sparse_max, reg, count);
}

const char *fd_pfadd(const resp_arg *eles, int n, unsigned char *buf, size_t *len, int exists,
                     size_t sparse_max, int *updated)
{
    int upd = 0;
    if (!exists) {
        *len = fd_hll_init(buf);
        upd = 1;
    } else if (*len > FD_HLL_BUF_SIZE - 8) {
        return FD_HLL_ERR_CORRUPT;
    }
    for (int i = 0; i < n; i++) {
        int r = fd_hll_add(buf, len, sparse_max, (const unsigned char *)eles[i].ptr, eles[i].len);
        if (r < 0) return FD_HLL_ERR_CORRUPT;
        upd |= r;
    }
    if (upd) fd_hll_invalidate(buf);
    *updated = upd;
    return NULL;
}

/* ---------------------------------------------------------------- counting */

static double sigma(double x)
{
    if (x == 1.) return INFINITY;
    double zp, y = 1, z = x;
    do {
        x *= x;
        zp = z;
        z += x * y;
        y += y;
    } while (zp != z);
    return z;
}

static double tau(double x)
{
    if (x == 0. || x == 1.) return 0.;
    double zp, y = 1.0, z = 1 - x;
    do {
        x = sqrt(x);
        zp = z;
        y *= 0.5;
        z -= pow(1 - x, 2) * y;
    } while (zp != z);
    return z / 3;
}

static uint64_t estimate(const int *hist)
{
    double m = REGS;
    double z = m * tau((m - hist[Q + 1]) / (double)m);
    for (int j = Q; j >= 1; --j) {
        z += hist[j];
        z *= 0.5;
    }
    z += m * sigma(hist[0] / (double)m);
    return (uint64_t)llroundl(0.721347520444481703680 * m * m / z);
}

/* histogram of register values; -1 when a sparse value does not cover
 * exactly the 16384 registers */
static int histogram(const unsigned char *v, size_t len, int *hist)
{
    if (v[4] == ENC_DENSE) {
        for (long i = 0; i < REGS; i++) hist[dense_get(v + HDR, i)]++;
        return 0;
    }
    const unsigned char *p = v + HDR, *end = v + len;
    long idx = 0;
    while (p < end) {
        if (OP_IS_ZERO(*p)) { int r = ZERO_LEN(p); idx += r; hist[0] += r; p++; }
        else if (OP_IS_XZERO(*p)) { int r = XZERO_LEN(p); idx += r; hist[0] += r; p += 2; }
        else { int r = VAL_LEN(p); idx += r; hist[VAL_VALUE(p)] += r; p++; }
    }
    return idx == REGS ? 0 : -1;
}

const char *fd_hll_card(unsigned char *v, size_t len, uint64_t *card, int *cache_written)
{
    *cache_written = 0;
    if (!(v[15] & 0x80)) {
        uint64_t c = 0;
        for (int i = 7; i >= 0; i--) c = (c << 8) | v[FD_HLL_CARD_OFF + i];
        *card = c;
        return NULL;
    }
    int hist[64] = {0};
    if (histogram(v, len, hist) != 0) return FD_HLL_ERR_CORRUPT;
    uint64_t c = estimate(hist);
    for (int i = 0; i < 8; i++) v[FD_HLL_CARD_OFF + i] = (unsigned char)(c >> (8 * i));
    *card = c;
    *cache_written = 1;
    return NULL;
}

const char *fd_hll_merge_raw(uint8_t *regs, const unsigned char *v, size_t len, int *dense)
{
    const char *e = fd_hll_check(v, len);
    if (e) return e;
    if (v[4] == ENC_DENSE) {
        if (dense) *dense = 1;
        for (long i = 0; i < REGS; i++) {
            unsigned r = dense_get(v + HDR, i);
            if (r > regs[i]) regs[i] = (uint8_t)r;
        }
        return NULL;
    }
    return sparse_merge(regs, v, len) == 0 ? NULL : FD_HLL_ERR_CORRUPT;
}

uint64_t fd_hll_count_raw(const uint8_t *regs)
{
    int hist[256] = {0};   /* raw registers are bytes: keep any value in bounds */
    for (long i = 0; i < REGS; i++) hist[regs[i]]++;
    return estimate(hist);
}

const char *fd_hll_store_raw(unsigned char *buf, size_t *len, int exists, int use_dense,
                             const uint8_t *regs, size_t sparse_max)
{
    if (!exists) *len = fd_hll_init(buf);
    else if (*len > FD_HLL_BUF_SIZE - 8) return FD_HLL_ERR_CORRUPT;
    if (use_dense && to_dense(buf, len) != 0) return FD_HLL_ERR_CORRUPT;
    for (long i = 0; i < REGS; i++) {
        if (!regs[i]) continue;
        /* Redis ignores the result here (a corrupt dest was refused earlier) */
        if (hll_set(buf, len, sparse_max, i, regs[i]) < 0) return FD_HLL_ERR_CORRUPT;
    }
    fd_hll_invalidate(buf);
    return NULL;
}

/* An existing value into the working buffer: NULL, or FD_HLL_ERR_CORRUPT
 * when it cannot fit. */
static const char *load_value(const unsigned char *old, size_t oldlen, int exists, unsigned char *buf,
                              size_t *len)
{
    *len = 0;
    if (!exists) return NULL;
    if (oldlen > FD_HLL_BUF_SIZE) return FD_HLL_ERR_CORRUPT;
    memcpy(buf, old, oldlen);
    *len = oldlen;
    return NULL;
}

const char *fd_pfadd_value(const resp_arg *eles, int n, const unsigned char *old, size_t oldlen,
                           int exists, unsigned char *buf, size_t *len, int *updated)
{
    const char *e;
    *updated = 0;
    if (exists && (e = fd_hll_check(old, oldlen))) return e;
    if ((e = load_value(old, oldlen, exists, buf, len))) return e;
    return fd_pfadd(eles, n, buf, len, exists, 0, updated);
}

const char *fd_pfmerge_value(const uint8_t *regs, int use_dense, const unsigned char *old,
                             size_t oldlen, int exists, unsigned char *buf, size_t *len)
{
    const char *e = load_value(old, oldlen, exists, buf, len);
    return e ? e : fd_hll_store_raw(buf, len, exists, use_dense, regs, 0);
}
