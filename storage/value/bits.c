/* bits.c — bitmap commands as pure functions (see bits.h). Semantics,
 * order of checks and error texts follow Redis 7.0's bitops.c; the code is
 * our own. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <limits.h>
#include "bits.h"
#include "../status.h"

static const char ERR_OFFSET[] = "ERR bit offset is not an integer or out of range";
static const char ERR_BIT[]    = "ERR bit is not an integer or out of range";
static const char ERR_NOTINT[] = "ERR value is not an integer or out of range";
static const char ERR_SYNTAX[] = "ERR syntax error";
static const char ERR_BFTYPE[] =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";

/* Redis compares option names with strcasecmp on C strings: an argument
 * with a NUL byte matches on what comes before it. */
static int opt_c(const resp_arg *a, const char *name)
{
    size_t n = strnlen(a->ptr, a->len);
    return n == strlen(name) && strncasecmp(a->ptr, name, n) == 0;
}

static int arg_ll(const resp_arg *a, long long *v)
{
    return resp_str2ll(a->ptr, a->len, v);
}

/* SWAR popcount of one 64-bit word (no POPCNT instruction needed) */
static inline unsigned swar64(uint64_t x)
{
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
    return (unsigned)((x * 0x0101010101010101ULL) >> 56);
}

static long long popcount_sw(const unsigned char *p, size_t n)
{
    long long bits = 0;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        bits += swar64(w);
    }
    while (n--) bits += swar64(*p++);
    return bits;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* with the POPCNT instruction, four independent sums per 32 bytes */
__attribute__((target("popcnt"))) static long long popcount_hw(const unsigned char *p, size_t n)
{
    uint64_t c0 = 0, c1 = 0, c2 = 0, c3 = 0, w[4];
    for (; n >= 32; p += 32, n -= 32) {
        memcpy(w, p, 32);
        c0 += (uint64_t)__builtin_popcountll(w[0]);
        c1 += (uint64_t)__builtin_popcountll(w[1]);
        c2 += (uint64_t)__builtin_popcountll(w[2]);
        c3 += (uint64_t)__builtin_popcountll(w[3]);
    }
    return (long long)(c0 + c1 + c2 + c3) + popcount_sw(p, n);
}
#endif

long long fd_popcount(const unsigned char *p, size_t n)
{
#if defined(__x86_64__) && defined(__GNUC__)
    static int hw = -1;
    if (hw < 0) hw = __builtin_cpu_supports("popcnt") ? 1 : 0;
    if (hw) return popcount_hw(p, n);
#endif
    return popcount_sw(p, n);
}

const char *fd_bit_parse_offset(const resp_arg *a, int hash_bits, long long max_bulk, uint64_t *off)
{
    long long v;
    size_t skip = (a->len > 0 && a->ptr[0] == '#' && hash_bits > 0) ? 1 : 0;
    if (max_bulk <= 0) max_bulk = RESP_DEFAULT_MAX_BULK;
    if (resp_str2ll(a->ptr + skip, a->len - skip, &v) != 0) return ERR_OFFSET;
    /* Redis multiplies in long long (wrapping on x86-64); done unsigned here */
    if (skip) v = (long long)((unsigned long long)v * (unsigned long long)hash_bits);
    if (v < 0 || (v >> 3) >= max_bulk) return ERR_OFFSET;
    *off = (uint64_t)v;
    return NULL;
}

/* ---------------------------------------------------------------- GETBIT / SETBIT */

int fd_getbit(const unsigned char *v, size_t len, uint64_t off)
{
    uint64_t byte = off >> 3;
    if (byte >= len) return 0;
    return (v[byte] >> (7 - (off & 7))) & 1;
}

const char *fd_setbit_parse(const resp_arg *argv, int argc, long long max_bulk, fd_setbit *p)
{
    long long on;
    (void)argc;
    const char *e = fd_bit_parse_offset(&argv[2], 0, max_bulk, &p->offset);
    if (e) return e;
    if (arg_ll(&argv[3], &on) != 0 || (on & ~1LL)) return ERR_BIT;
    p->on = (int)on;
    return NULL;
}

void fd_setbit_plan(const fd_setbit *p, const unsigned char *v, size_t oldlen, fd_bitpatch *out)
{
    size_t byte = (size_t)(p->offset >> 3);
    int shift = 7 - (int)(p->offset & 7);
    unsigned char old = byte < oldlen ? v[byte] : 0;
    out->byte = byte;
    out->newlen = byte + 1 > oldlen ? byte + 1 : oldlen;
    out->oldbit = (old >> shift) & 1;
    out->val = (unsigned char)((old & ~(1u << shift)) | ((unsigned)p->on << shift));
    out->write = out->newlen != oldlen || oldlen == 0 || out->oldbit != p->on;
}

void fd_bitpatch_apply(const fd_bitpatch *pt, unsigned char *buf, size_t oldlen)
{
    if (pt->newlen > oldlen) memset(buf + oldlen, 0, pt->newlen - oldlen);
    buf[pt->byte] = pt->val;
}

/* ---------------------------------------------------------------- ranges */

/* Redis's normalisation of a BITCOUNT/BITPOS range over totlen units.
 * Returns 0 when the range is empty. */
static int norm_range(long long totlen, long long *start, long long *end)
{
    if (*start < 0) *start += totlen;
    if (*end < 0) *end += totlen;
    if (*start < 0) *start = 0;
    if (*end < 0) *end = 0;
    if (*end >= totlen) *end = totlen - 1;
    return *start <= *end;
}

/* Set bits in the bit range [s, e] (inclusive, within the value). */
static long long count_bits(const unsigned char *v, uint64_t s, uint64_t e)
{
    uint64_t sb = s >> 3, eb = e >> 3;
    long long n = fd_popcount(v + sb, (size_t)(eb - sb + 1));
    unsigned char head = (unsigned char)(0xFF00u >> (s & 7));        /* bits before s in its byte */
    unsigned char tail = (unsigned char)((1u << (7 - (e & 7))) - 1);  /* bits after e in its byte */
    n -= __builtin_popcount(v[sb] & head);
    n -= __builtin_popcount(v[eb] & tail);
    return n;
}

long long fd_bitcount_range(const unsigned char *v, size_t len, long long start, long long end, int isbit)
{
    long long totlen = (long long)len;
    if (isbit) totlen <<= 3;
    if (!norm_range(totlen, &start, &end)) return 0;
    if (!isbit) { start <<= 3; end = (end << 3) + 7; }
    return count_bits(v, (uint64_t)start, (uint64_t)end);
}

int fd_bitcount_cmd(const resp_arg *argv, int argc, const unsigned char *v, size_t len, resp_out *out)
{
    long long start, end;
    int isbit = 0;
    if (argc == 2) return resp_add_int(out, fd_popcount(v, len));
    if (argc != 4 && argc != 5) return resp_add_error(out, ERR_SYNTAX);
    if (arg_ll(&argv[2], &start) != 0 || arg_ll(&argv[3], &end) != 0)
        return resp_add_error(out, ERR_NOTINT);
    if (start < 0 && end < 0 && start > end) return resp_add_int(out, 0);
    if (argc == 5) {
        if (opt_c(&argv[4], "bit")) isbit = 1;
        else if (!opt_c(&argv[4], "byte")) return resp_add_error(out, ERR_SYNTAX);
    }
    return resp_add_int(out, fd_bitcount_range(v, len, start, end, isbit));
}

/* ---------------------------------------------------------------- BITPOS */

const char *fd_bitpos_parse_bit(const resp_arg *argv, int argc, int *bit)
{
    long long b;
    (void)argc;
    if (arg_ll(&argv[2], &b) != 0) return ERR_NOTINT;
    if (b != 0 && b != 1) return "ERR The bit argument must be 1 or 0.";
    *bit = (int)b;
    return NULL;
}

/* First bit equal to bit in the bit range [s, e] of v, or -1. */
static long long find_bit(const unsigned char *v, uint64_t s, uint64_t e, int bit)
{
    unsigned char skip = bit ? 0x00 : 0xFF;
    uint64_t i = s;
    /* the partial first byte, bit by bit */
    while (i <= e && (i & 7)) {
        if (((v[i >> 3] >> (7 - (i & 7))) & 1) == bit) return (long long)i;
        i++;
    }
    /* whole bytes: skip runs that cannot hold the bit, 8 at a time */
    uint64_t w8 = bit ? 0 : UINT64_MAX;
    while (i + 63 <= e) {
        uint64_t w;
        memcpy(&w, v + (i >> 3), 8);
        if (w != w8) break;
        i += 64;
    }
    while (i + 7 <= e && v[i >> 3] == skip) i += 8;
    for (; i <= e; i++)
        if (((v[i >> 3] >> (7 - (i & 7))) & 1) == bit) return (long long)i;
    return -1;
}

int fd_bitpos_cmd(const resp_arg *argv, int argc, int bit, const unsigned char *v, size_t len,
                  int exists, resp_out *out)
{
    long long start, end, totlen = (long long)len;
    int isbit = 0, end_given = 0;
    if (!exists) return resp_add_int(out, bit ? -1 : 0);
    if (argc == 3) {
        start = 0;
        end = totlen - 1;
    } else if (argc >= 4 && argc <= 6) {
        if (arg_ll(&argv[3], &start) != 0) return resp_add_error(out, ERR_NOTINT);
        if (argc == 6) {
            if (opt_c(&argv[5], "bit")) isbit = 1;
            else if (!opt_c(&argv[5], "byte")) return resp_add_error(out, ERR_SYNTAX);
        }
        if (argc >= 5) {
            if (arg_ll(&argv[4], &end) != 0) return resp_add_error(out, ERR_NOTINT);
            end_given = 1;
        } else {
            end = totlen - 1;
        }
        if (isbit) totlen <<= 3;
        if (!norm_range(totlen, &start, &end)) return resp_add_int(out, -1);
    } else {
        return resp_add_error(out, ERR_SYNTAX);
    }
    if (start > end) return resp_add_int(out, -1);
    if (!isbit) { start <<= 3; end = (end << 3) + 7; }
    long long pos = find_bit(v, (uint64_t)start, (uint64_t)end, bit);
    if (pos < 0 && bit == 0 && !end_given) pos = end + 1;   /* the string is zero-padded on the right */
    return resp_add_int(out, pos);
}

/* ---------------------------------------------------------------- BITOP */

const char *fd_bitop_parse(const resp_arg *argv, int argc, int *op)
{
    const resp_arg *o = &argv[1];
    if (opt_c(o, "and")) *op = FD_BITOP_AND;
    else if (opt_c(o, "or")) *op = FD_BITOP_OR;
    else if (opt_c(o, "xor")) *op = FD_BITOP_XOR;
    else if (opt_c(o, "not")) *op = FD_BITOP_NOT;
    else return ERR_SYNTAX;
    if (*op == FD_BITOP_NOT && argc != 4) return "ERR BITOP NOT must be called with a single source key.";
    return NULL;
}

size_t fd_bitop_step(int op, unsigned char *acc, size_t acclen, const unsigned char *src, size_t len,
                     int first)
{
    size_t i;
    if (first) {
        if (len) memcpy(acc, src, len);
        if (op == FD_BITOP_NOT)
            for (i = 0; i < len; i++) acc[i] = (unsigned char)~acc[i];
        return len;
    }
    size_t n = len > acclen ? len : acclen;
    /* a source shorter than another counts as zero bytes there */
    if (len > acclen) memset(acc + acclen, 0, len - acclen);
    switch (op) {
    case FD_BITOP_AND:
        for (i = 0; i < len; i++) acc[i] &= src[i];
        if (len < n) memset(acc + len, 0, n - len);
        break;
    case FD_BITOP_OR:
        for (i = 0; i < len; i++) acc[i] |= src[i];
        break;
    case FD_BITOP_XOR:
        for (i = 0; i < len; i++) acc[i] ^= src[i];
        break;
    default:   /* NOT has one source */
        break;
    }
    return n;
}

/* ---------------------------------------------------------------- BITFIELD */

int fd_bitfield_max_ops(int argc)
{
    return argc > 2 ? (argc - 2) / 3 + 1 : 1;
}

static const char *parse_bftype(const resp_arg *a, int *sign, int *bits)
{
    long long n;
    if (a->len == 0) return ERR_BFTYPE;
    if (a->ptr[0] == 'i') *sign = 1;
    else if (a->ptr[0] == 'u') *sign = 0;
    else return ERR_BFTYPE;
    /* Redis reads the width with strlen: it stops at a NUL byte */
    size_t wl = strnlen(a->ptr + 1, a->len - 1);
    if (resp_str2ll(a->ptr + 1, wl, &n) != 0 || n < 1 || (*sign && n > 64) || (!*sign && n > 63))
        return ERR_BFTYPE;
    *bits = (int)n;
    return NULL;
}

const char *fd_bitfield_parse(const resp_arg *argv, int argc, int ro, long long max_bulk, fd_bitfield *bf)
{
    int ow = FD_BF_WRAP;
    bf->nops = 0;
    bf->readonly = 1;
    bf->maxbit = 0;
    for (int j = 2; j < argc; j++) {
        int rem = argc - j - 1, opcode, sign, bits;
        const resp_arg *sub = &argv[j];
        if (opt_c(sub, "get") && rem >= 2) opcode = FD_BF_GET;
        else if (opt_c(sub, "set") && rem >= 3) opcode = FD_BF_SET;
        else if (opt_c(sub, "incrby") && rem >= 3) opcode = FD_BF_INCRBY;
        else if (opt_c(sub, "overflow") && rem >= 1) {
            const resp_arg *t = &argv[++j];
            if (opt_c(t, "wrap")) ow = FD_BF_WRAP;
            else if (opt_c(t, "sat")) ow = FD_BF_SAT;
            else if (opt_c(t, "fail")) ow = FD_BF_FAIL;
            else return "ERR Invalid OVERFLOW type specified";
            continue;
        } else {
            return ERR_SYNTAX;
        }
        const char *e = parse_bftype(&argv[j + 1], &sign, &bits);
        if (e) return e;
        uint64_t off;
        if ((e = fd_bit_parse_offset(&argv[j + 2], bits, max_bulk, &off)) != NULL) return e;
        long long val = 0;
        if (opcode != FD_BF_GET) {
            bf->readonly = 0;
            if (bf->maxbit < off + (uint64_t)bits - 1) bf->maxbit = off + (uint64_t)bits - 1;
            if (arg_ll(&argv[j + 3], &val) != 0) return ERR_NOTINT;
        }
        fd_bfop *op = &bf->ops[bf->nops++];
        op->offset = off;
        op->value = val;
        op->opcode = (uint8_t)opcode;
        op->overflow = (uint8_t)ow;
        op->bits = (uint8_t)bits;
        op->sign = (uint8_t)sign;
        j += opcode == FD_BF_GET ? 2 : 3;
    }
    if (!bf->readonly && ro) return "ERR BITFIELD_RO only supports the GET subcommand";
    return NULL;
}

size_t fd_bitfield_newlen(const fd_bitfield *bf, size_t oldlen)
{
    if (bf->readonly) return oldlen;
    size_t need = (size_t)(bf->maxbit >> 3) + 1;
    return need > oldlen ? need : oldlen;
}

/* bits-wide unsigned field at bit offset off; bytes past len read as 0 */
static uint64_t get_field(const unsigned char *p, size_t len, uint64_t off, int bits)
{
    uint64_t v = 0;
    for (int j = 0; j < bits; j++, off++) {
        uint64_t byte = off >> 3;
        unsigned b = byte < len ? (p[byte] >> (7 - (off & 7))) & 1 : 0;
        v = (v << 1) | b;
    }
    return v;
}

static void set_field(unsigned char *p, uint64_t off, int bits, uint64_t v)
{
    for (int j = 0; j < bits; j++, off++) {
        unsigned b = (unsigned)(v >> (bits - 1 - j)) & 1;
        unsigned shift = 7 - (unsigned)(off & 7);
        p[off >> 3] = (unsigned char)((p[off >> 3] & ~(1u << shift)) | (b << shift));
    }
}

/* the low `bits` bits of v as a two's complement number */
static int64_t sign_extend(uint64_t v, int bits)
{
    if (bits < 64) {
        uint64_t high = UINT64_MAX << bits;
        if (v & ((uint64_t)1 << (bits - 1))) v |= high;
        else v &= ~high;
    }
    return (int64_t)v;
}

/* The new value of a SET (incr: 0, base: the value) or INCRBY (base: the
 * field's value), or 0 when an overflow under FAIL refuses the write. */
static int bf_unsigned(const fd_bfop *op, uint64_t base, uint64_t *res)
{
    uint64_t max = ((uint64_t)1 << op->bits) - 1;   /* bits <= 63 */
    int64_t incr = op->opcode == FD_BF_INCRBY ? op->value : 0;
    int over = 0;   /* 1 above max, -1 below 0 */
    if (base > max || (incr > 0 && (uint64_t)incr > max - base)) over = 1;
    else if (incr < 0 && (uint64_t)0 - (uint64_t)incr > base) over = -1;
    if (!over) { *res = base + (uint64_t)incr; return 1; }
    switch (op->overflow) {
    case FD_BF_WRAP: *res = (base + (uint64_t)incr) & max; return 1;
    case FD_BF_SAT:  *res = over > 0 ? max : 0; return 1;
    default:         return 0;
    }
}

static int bf_signed(const fd_bfop *op, int64_t base, int64_t *res)
{
    int64_t max = op->bits == 64 ? INT64_MAX : (int64_t)(((uint64_t)1 << (op->bits - 1)) - 1);
    int64_t min = -max - 1;
    int64_t incr = op->opcode == FD_BF_INCRBY ? op->value : 0;
    int over = 0;
    /* exact: base + incr compared with [min, max] without overflowing */
    if (base > max || (incr > 0 && base > max - incr)) over = 1;
    else if (base < min || (incr < 0 && base < min - incr)) over = -1;
    if (!over) { *res = base + incr; return 1; }
    switch (op->overflow) {
    case FD_BF_WRAP: *res = sign_extend((uint64_t)base + (uint64_t)incr, op->bits); return 1;
    case FD_BF_SAT:  *res = over > 0 ? max : min; return 1;
    default:         return 0;
    }
}

int fd_bitfield_exec(const fd_bitfield *bf, unsigned char *buf, size_t len, resp_out *out,
                     int *changed, size_t *dlo, size_t *dhi)
{
    size_t lo = SIZE_MAX, hi = 0;
    int nchanged = 0;
    if (resp_add_array(out, bf->nops)) return -1;
    for (int i = 0; i < bf->nops; i++) {
        const fd_bfop *op = &bf->ops[i];
        uint64_t raw = get_field(buf, len, op->offset, op->bits);
        if (op->opcode == FD_BF_GET) {
            long long r = op->sign ? (long long)sign_extend(raw, op->bits) : (long long)raw;
            if (resp_add_int(out, r)) return -1;
            continue;
        }
        uint64_t nraw;
        long long reply;
        int ok;
        if (op->sign) {
            int64_t old = sign_extend(raw, op->bits), nv;
            ok = bf_signed(op, op->opcode == FD_BF_SET ? op->value : old, &nv);
            nraw = (uint64_t)nv;
            reply = op->opcode == FD_BF_SET ? old : nv;
        } else {
            uint64_t nv;
            ok = bf_unsigned(op, op->opcode == FD_BF_SET ? (uint64_t)op->value : raw, &nv);
            nraw = nv;
            reply = op->opcode == FD_BF_SET ? (long long)raw : (long long)nv;
        }
        if (!ok) {
            if (resp_add_null(out)) return -1;
            continue;
        }
        if (resp_add_int(out, reply)) return -1;
        if (op->bits < 64) nraw &= ((uint64_t)1 << op->bits) - 1;
        set_field(buf, op->offset, op->bits, nraw);
        if (nraw != raw) nchanged++;
        size_t b0 = (size_t)(op->offset >> 3), b1 = (size_t)((op->offset + op->bits - 1) >> 3) + 1;
        if (b0 < lo) lo = b0;
        if (b1 > hi) hi = b1;
    }
    if (changed) *changed = nchanged;
    if (lo == SIZE_MAX) lo = hi = 0;
    if (dlo) *dlo = lo;
    if (dhi) *dhi = hi;
    return 0;
}

int fd_bitop_add(int op, unsigned char **acc, size_t *n, size_t *cap, const unsigned char *src,
                 size_t len, int first)
{
    size_t need = (*n > len ? *n : len) + 1;
    if (need > *cap) {
        unsigned char *na = realloc(*acc, need);
        if (!na) return -1;
        *acc = na;
        *cap = need;
    }
    *n = fd_bitop_step(op, *acc, *n, src, len, first);
    return 0;
}

int fd_bitfield_begin(const resp_arg *argv, int argc, int ro, long long max_bulk, fd_bitfield *bf,
                      resp_out *out, int *replied)
{
    memset(bf, 0, sizeof *bf);
    *replied = 0;
    if (!(bf->ops = malloc((size_t)fd_bitfield_max_ops(argc) * sizeof *bf->ops + 1))) return FD_E_NOMEM;
    const char *e = fd_bitfield_parse(argv, argc, ro, max_bulk, bf);
    if (!e) return FD_OK;
    *replied = 1;
    return resp_add_error(out, e) ? FD_E_NOMEM : FD_OK;
}

void fd_bitfield_end(fd_bitfield *bf)
{
    free(bf->ops);
    bf->ops = NULL;
}

int fd_bitfield_apply(const fd_bitfield *bf, const unsigned char *old, size_t oldlen, int exists,
                      unsigned char *buf, size_t nl, resp_out *out, int *store)
{
    if (oldlen) memcpy(buf, old, oldlen);
    if (nl > oldlen) memset(buf + oldlen, 0, nl - oldlen);
    int changed = 0;
    if (fd_bitfield_exec(bf, buf, nl, out, &changed, NULL, NULL)) return -1;
    *store = !exists || nl != oldlen || changed;
    return 0;
}
