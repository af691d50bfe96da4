/* rdb.c — DUMP / RESTORE payloads in Redis 7.0's format: see rdb.h.
 * Written from the format (rdb.h / rdb.c / listpack.c / ziplist.c /
 * intset.c / zipmap.c / lzf of Redis 7.0); the byte layouts are Redis's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "rdb.h"
#include "../cmdargs.h"
#include "../status.h"

/* RDB type bytes */
enum {
    T_STRING = 0, T_LIST = 1, T_SET = 2, T_ZSET = 3, T_HASH = 4, T_ZSET_2 = 5,
    T_HASH_ZIPMAP = 9, T_LIST_ZIPLIST = 10, T_SET_INTSET = 11, T_ZSET_ZIPLIST = 12,
    T_HASH_ZIPLIST = 13, T_LIST_QUICKLIST = 14, T_HASH_LISTPACK = 16, T_ZSET_LISTPACK = 17,
    T_LIST_QUICKLIST_2 = 18, T_STREAM_2 = 19
};

/* 7.0's defaults */
#define SET_MAX_INTSET 512
#define HASH_MAX_LP_ENTRIES 128
#define HASH_MAX_LP_VALUE 64
#define ZSET_MAX_LP_ENTRIES 128
#define ZSET_MAX_LP_VALUE 64
#define LIST_NODE_MAX 8192     /* list-max-listpack-size -2 */

/* ---------------------------------------------------------------- crc64 */

static uint64_t crc_table[256];
static int crc_ready;

static void crc_init(void)
{
    const uint64_t poly = 0x95ac9329ac4bc9b5ULL;   /* 0xad93d23594c935a9 reflected */
    for (int i = 0; i < 256; i++) {
        uint64_t c = (uint64_t)i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ poly : c >> 1;
        crc_table[i] = c;
    }
    crc_ready = 1;
}

uint64_t fd_crc64(uint64_t crc, const void *p, size_t n)
{
    if (!crc_ready) crc_init();
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) crc = crc_table[(crc ^ s[i]) & 0xff] ^ (crc >> 8);
    return crc;
}

/* ---------------------------------------------------------------- lzf */

#define LZF_HLOG 16
#define LZF_HSIZE (1u << LZF_HLOG)
#define LZF_MAX_LIT (1 << 5)
#define LZF_MAX_OFF (1 << 13)
#define LZF_MAX_REF ((1 << 8) + (1 << 3))
#define LZF_FRST(p) (((unsigned)(p)[0] << 8) | (p)[1])
#define LZF_NEXT(v, p) (((v) << 8) | (p)[2])
#define LZF_IDX(h) ((((h) >> (3 * 8 - LZF_HLOG)) - (h) * 5) & (LZF_HSIZE - 1))

size_t fd_lzf_compress(const void *in_data, size_t in_len, void *out_data, size_t out_len)
{
    if (!in_len || !out_len) return 0;
    /* positions + 1 (0: empty slot) */
    uint32_t *htab = calloc(LZF_HSIZE, sizeof *htab);
    if (!htab) return 0;
    const unsigned char *in = in_data, *ip = in, *in_end = in + in_len;
    unsigned char *op = out_data, *out_end = op + out_len;
    int lit = 0;
    op++;   /* start a literal run */
    unsigned hval = LZF_FRST(ip);
    size_t result = 0;
    while (ip < in_end - 2) {
        hval = LZF_NEXT(hval, ip);
        uint32_t *slot = &htab[LZF_IDX(hval)];
        const unsigned char *ref = *slot ? in + (*slot - 1) : NULL;
        *slot = (uint32_t)(ip - in) + 1;
        size_t off;
        if (ref && ref > in && (off = (size_t)(ip - ref - 1)) < LZF_MAX_OFF && ref[2] == ip[2] &&
            ref[0] == ip[0] && ref[1] == ip[1]) {
            unsigned len = 2;
            unsigned maxlen = (unsigned)(in_end - ip) - len;
            maxlen = maxlen > LZF_MAX_REF ? LZF_MAX_REF : maxlen;
            if (op + 3 + 1 >= out_end)
                if (op - !lit + 3 + 1 >= out_end) goto done;
            op[-lit - 1] = (unsigned char)(lit - 1);
            op -= !lit;
            int stop = 0;
            if (maxlen > 16)   /* 16 steps without the maxlen test, as lzf_c.c's unrolled loop */
                for (int k = 0; k < 16; k++) {
                    len++;
                    if (ref[len] != ip[len]) { stop = 1; break; }
                }
            if (!stop) {
                do len++;
                while (len < maxlen && ref[len] == ip[len]);
            }
            len -= 2;
            ip++;
            if (len < 7) *op++ = (unsigned char)((off >> 8) + (len << 5));
            else {
                *op++ = (unsigned char)((off >> 8) + (7 << 5));
                *op++ = (unsigned char)(len - 7);
            }
            *op++ = (unsigned char)off;
            lit = 0;
            op++;
            ip += len + 1;
            if (ip >= in_end - 2) break;
            ip -= 2;   /* VERY_FAST: hash the two positions before */
            hval = LZF_FRST(ip);
            hval = LZF_NEXT(hval, ip);
            htab[LZF_IDX(hval)] = (uint32_t)(ip - in) + 1;
            ip++;
            hval = LZF_NEXT(hval, ip);
            htab[LZF_IDX(hval)] = (uint32_t)(ip - in) + 1;
            ip++;
        } else {
            if (op >= out_end) goto done;
            lit++;
            *op++ = *ip++;
            if (lit == LZF_MAX_LIT) {
                op[-lit - 1] = (unsigned char)(lit - 1);
                lit = 0;
                op++;
            }
        }
    }
    if (op + 3 > out_end) goto done;
    while (ip < in_end) {
        lit++;
        *op++ = *ip++;
        if (lit == LZF_MAX_LIT) {
            op[-lit - 1] = (unsigned char)(lit - 1);
            lit = 0;
            op++;
        }
    }
    op[-lit - 1] = (unsigned char)(lit - 1);
    op -= !lit;
    result = (size_t)(op - (unsigned char *)out_data);
done:
    free(htab);
    return result;
}

size_t fd_lzf_decompress(const void *in_data, size_t in_len, void *out_data, size_t out_len)
{
    const unsigned char *ip = in_data, *in_end = ip + in_len;
    unsigned char *op = out_data, *out = out_data, *out_end = op + out_len;
    while (ip < in_end) {
        unsigned ctrl = *ip++;
        if (ctrl < (1 << 5)) {
            ctrl++;
            if (op + ctrl > out_end || ip + ctrl > in_end) return 0;
            memcpy(op, ip, ctrl);
            op += ctrl;
            ip += ctrl;
        } else {
            unsigned len = ctrl >> 5;
            if (len == 7) {
                if (ip >= in_end) return 0;
                len += *ip++;
            }
            if (ip >= in_end) return 0;
            size_t back = ((ctrl & 0x1f) << 8) + *ip++ + 1;
            if ((size_t)(op - out) < back) return 0;
            len += 2;
            if (op + len > out_end) return 0;
            const unsigned char *ref = op - back;
            for (unsigned k = 0; k < len; k++) *op++ = *ref++;
        }
    }
    return (size_t)(op - out);
}

/* ---------------------------------------------------------------- writing */

void fd_rdb_buf_free(fd_rdb_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

static int put(fd_rdb_buf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t nc = b->cap ? b->cap : 64;
        while (nc < b->len + n) nc *= 2;
        unsigned char *np = realloc(b->p, nc);
        if (!np) return -1;
        b->p = np;
        b->cap = nc;
    }
    if (n) memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

static int put1(fd_rdb_buf *b, unsigned v)
{
    unsigned char c = (unsigned char)v;
    return put(b, &c, 1);
}

static void le(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t rd_le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* rdbSaveLen */
static int put_len(fd_rdb_buf *b, uint64_t len)
{
    unsigned char buf[9];
    if (len < (1 << 6)) return put1(b, (unsigned)len);
    if (len < (1 << 14)) {
        buf[0] = (unsigned char)(((len >> 8) & 0xff) | 0x40);
        buf[1] = (unsigned char)(len & 0xff);
        return put(b, buf, 2);
    }
    if (len <= UINT32_MAX) {
        buf[0] = 0x80;
        for (int i = 0; i < 4; i++) buf[1 + i] = (unsigned char)(len >> (24 - 8 * i));
        return put(b, buf, 5);
    }
    buf[0] = 0x81;
    for (int i = 0; i < 8; i++) buf[1 + i] = (unsigned char)(len >> (56 - 8 * i));
    return put(b, buf, 9);
}

/* rdbEncodeInteger: 0 when v does not fit 32 bits */
static int enc_int(long long v, unsigned char *buf)
{
    if (v >= -(1 << 7) && v <= (1 << 7) - 1) {
        buf[0] = 0xC0;
        buf[1] = (unsigned char)(v & 0xff);
        return 2;
    }
    if (v >= -(1 << 15) && v <= (1 << 15) - 1) {
        buf[0] = 0xC1;
        le(buf + 1, (uint64_t)v, 2);
        return 3;
    }
    if (v >= -((long long)1 << 31) && v <= ((long long)1 << 31) - 1) {
        buf[0] = 0xC2;
        le(buf + 1, (uint64_t)v, 4);
        return 5;
    }
    return 0;
}

/* rdbSaveRawString: small canonical integers encoded, > 20 bytes LZF when
 * that saves at least 4 bytes, else length + bytes */
static int put_str(fd_rdb_buf *b, const void *s, size_t len)
{
    if (len <= 11) {
        long long v;
        char tmp[32];
        if (len && resp_str2ll(s, len, &v) == 0) {
            int l = resp_ll2str(tmp, sizeof tmp, v);
            unsigned char buf[5];
            int el;
            if ((size_t)l == len && memcmp(tmp, s, len) == 0 && (el = enc_int(v, buf))) return put(b, buf, (size_t)el);
        }
    }
    if (len > 20) {
        size_t outlen = len - 4;
        unsigned char *o = malloc(outlen + 1);
        if (!o) return -1;
        size_t cl = fd_lzf_compress(s, len, o, outlen);
        if (cl) {
            int r = put1(b, 0xC3) || put_len(b, cl) || put_len(b, len) || put(b, o, cl);
            free(o);
            return r ? -1 : 0;
        }
        free(o);
    }
    return put_len(b, len) || put(b, s, len) ? -1 : 0;
}

/* ---- listpack */

static size_t lp_backlen(unsigned char *buf, uint64_t l)
{
    if (l <= 127) { buf[0] = (unsigned char)l; return 1; }
    if (l < 16383) { buf[0] = (unsigned char)(l >> 7); buf[1] = (unsigned char)((l & 127) | 128); return 2; }
    if (l < 2097151) {
        buf[0] = (unsigned char)(l >> 14); buf[1] = (unsigned char)(((l >> 7) & 127) | 128);
        buf[2] = (unsigned char)((l & 127) | 128);
        return 3;
    }
    if (l < 268435455) {
        buf[0] = (unsigned char)(l >> 21); buf[1] = (unsigned char)(((l >> 14) & 127) | 128);
        buf[2] = (unsigned char)(((l >> 7) & 127) | 128); buf[3] = (unsigned char)((l & 127) | 128);
        return 4;
    }
    buf[0] = (unsigned char)(l >> 28); buf[1] = (unsigned char)(((l >> 21) & 127) | 128);
    buf[2] = (unsigned char)(((l >> 14) & 127) | 128); buf[3] = (unsigned char)(((l >> 7) & 127) | 128);
    buf[4] = (unsigned char)((l & 127) | 128);
    return 5;
}

/* a listpack under construction in b: header written at start, finished by lp_end */
static int lp_begin(fd_rdb_buf *b) { unsigned char h[6] = { 0 }; return put(b, h, 6); }

static int lp_add(fd_rdb_buf *b, const char *s, size_t len)
{
    unsigned char enc[16];
    size_t el;
    long long v;
    if (len <= 20 && len && resp_str2ll(s, len, &v) == 0) {
        if (v >= 0 && v <= 127) { enc[0] = (unsigned char)v; el = 1; }
        else if (v >= -4096 && v <= 4095) {
            uint64_t u = v < 0 ? (uint64_t)((1 << 13) + v) : (uint64_t)v;
            enc[0] = (unsigned char)((u >> 8) | 0xC0);
            enc[1] = (unsigned char)(u & 0xff);
            el = 2;
        } else if (v >= -32768 && v <= 32767) { enc[0] = 0xF1; le(enc + 1, (uint64_t)v, 2); el = 3; }
        else if (v >= -8388608 && v <= 8388607) { enc[0] = 0xF2; le(enc + 1, (uint64_t)v, 3); el = 4; }
        else if (v >= -2147483648LL && v <= 2147483647LL) { enc[0] = 0xF3; le(enc + 1, (uint64_t)v, 4); el = 5; }
        else { enc[0] = 0xF4; le(enc + 1, (uint64_t)v, 8); el = 9; }
        unsigned char bl[5];
        size_t bn = lp_backlen(bl, el);
        return put(b, enc, el) || put(b, bl, bn) ? -1 : 0;
    }
    size_t hl;
    if (len < 64) { enc[0] = (unsigned char)(0x80 | len); hl = 1; }
    else if (len < 4096) { enc[0] = (unsigned char)(0xE0 | (len >> 8)); enc[1] = (unsigned char)(len & 0xff); hl = 2; }
    else { enc[0] = 0xF0; le(enc + 1, len, 4); hl = 5; }
    unsigned char bl[5];
    size_t bn = lp_backlen(bl, hl + len);
    return put(b, enc, hl) || put(b, s, len) || put(b, bl, bn) ? -1 : 0;
}

static int lp_end(fd_rdb_buf *b, size_t start, size_t count)
{
    if (put1(b, 0xFF)) return -1;
    le(b->p + start, b->len - start, 4);
    le(b->p + start + 4, count < 65535 ? count : 65535, 2);
    return 0;
}

/* the bytes a listpack entry for s takes (for the node size check) */
static int put_blob(fd_rdb_buf *b, const fd_rdb_buf *blob) { return put_str(b, blob->p, blob->len); }

static int is_ll(const char *s, size_t n, long long *v) { return n && n <= 20 && resp_str2ll(s, n, v) == 0; }

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

static int dump_list(const fd_rdb_item *it, size_t n, fd_rdb_buf *out)
{
    /* cut into nodes as RPUSH does (_quicklistNodeAllowInsert, fill -2) */
    size_t nodes = 0;
    size_t *cuts = malloc((n + 1) * sizeof *cuts);
    fd_rdb_buf lp = { 0 };
    int r = -1;
    if (!cuts) return -1;
    size_t node_sz = 0;
    for (size_t i = 0; i < n; i++) {
        /* the estimate of 7.0.15's quicklist: element bytes + 8 (measured) */
        if (i == 0 || node_sz + it[i].n + 8 > LIST_NODE_MAX) {
            cuts[nodes++] = i;
            lp.len = 0;
            if (lp_begin(&lp)) goto out;
        }
        if (lp_add(&lp, it[i].p, it[i].n)) goto out;
        node_sz = lp.len + 1;   /* with the terminator */
    }
    cuts[nodes] = n;
    if (put1(out, T_LIST_QUICKLIST_2) || put_len(out, nodes)) goto out;
    for (size_t k = 0; k < nodes; k++) {
        lp.len = 0;
        if (lp_begin(&lp)) goto out;
        for (size_t i = cuts[k]; i < cuts[k + 1]; i++)
            if (lp_add(&lp, it[i].p, it[i].n)) goto out;
        if (lp_end(&lp, 0, cuts[k + 1] - cuts[k]) || put_len(out, 2) || put_blob(out, &lp)) goto out;
    }
    r = 0;
out:
    free(cuts);
    fd_rdb_buf_free(&lp);
    return r;
}

static int dump_set(const fd_rdb_item *it, size_t n, fd_rdb_buf *out)
{
    int ints = n <= SET_MAX_INTSET;
    long long v;
    for (size_t i = 0; i < n && ints; i++) ints = is_ll(it[i].p, it[i].n, &v);
    if (!ints) {
        if (put1(out, T_SET) || put_len(out, n)) return -1;
        for (size_t i = 0; i < n; i++)
            if (put_str(out, it[i].p, it[i].n)) return -1;
        return 0;
    }
    long long *vals = malloc((n ? n : 1) * sizeof *vals);
    if (!vals) return -1;
    int width = 2;
    for (size_t i = 0; i < n; i++) {
        is_ll(it[i].p, it[i].n, &vals[i]);
        if (vals[i] < INT16_MIN || vals[i] > INT16_MAX) width = width < 4 ? 4 : width;
        if (vals[i] < INT32_MIN || vals[i] > INT32_MAX) width = 8;
    }
    qsort(vals, n, sizeof *vals, cmp_ll);
    fd_rdb_buf is = { 0 };
    unsigned char h[8];
    le(h, (uint64_t)width, 4);
    le(h + 4, n, 4);
    int r = put(&is, h, 8);
    for (size_t i = 0; i < n && !r; i++) {
        le(h, (uint64_t)vals[i], width);
        r = put(&is, h, (size_t)width);
    }
    free(vals);
    r = r || put1(out, T_SET_INTSET) || put_blob(out, &is);
    fd_rdb_buf_free(&is);
    return r ? -1 : 0;
}

static int dump_hash(const fd_rdb_item *it, size_t n, fd_rdb_buf *out)
{
    int small = n <= HASH_MAX_LP_ENTRIES;
    for (size_t i = 0; i < n && small; i++) small = it[i].n <= HASH_MAX_LP_VALUE && it[i].vn <= HASH_MAX_LP_VALUE;
    if (!small) {
        if (put1(out, T_HASH) || put_len(out, n)) return -1;
        for (size_t i = 0; i < n; i++)
            if (put_str(out, it[i].p, it[i].n) || put_str(out, it[i].v, it[i].vn)) return -1;
        return 0;
    }
    fd_rdb_buf lp = { 0 };
    int r = lp_begin(&lp);
    for (size_t i = 0; i < n && !r; i++) r = lp_add(&lp, it[i].p, it[i].n) || lp_add(&lp, it[i].v, it[i].vn);
    r = r || lp_end(&lp, 0, 2 * n) || put1(out, T_HASH_LISTPACK) || put_blob(out, &lp);
    fd_rdb_buf_free(&lp);
    return r ? -1 : 0;
}

static int dump_zset(const fd_rdb_item *it, size_t n, fd_rdb_buf *out)
{
    int small = n <= ZSET_MAX_LP_ENTRIES;
    for (size_t i = 0; i < n && small; i++) small = it[i].n <= ZSET_MAX_LP_VALUE;
    if (!small) {   /* skiplist: from the highest score down, scores as binary doubles */
        if (put1(out, T_ZSET_2) || put_len(out, n)) return -1;
        for (size_t i = n; i-- > 0;) {
            unsigned char d[8];
            uint64_t bits;
            memcpy(&bits, &it[i].score, 8);
            le(d, bits, 8);
            if (put_str(out, it[i].p, it[i].n) || put(out, d, 8)) return -1;
        }
        return 0;
    }
    fd_rdb_buf lp = { 0 };
    int r = lp_begin(&lp);
    for (size_t i = 0; i < n && !r; i++) {
        char sb[64];
        int sl = resp_format_d2string(sb, sizeof sb, it[i].score);
        r = lp_add(&lp, it[i].p, it[i].n) || lp_add(&lp, sb, (size_t)sl);
    }
    r = r || lp_end(&lp, 0, 2 * n) || put1(out, T_ZSET_LISTPACK) || put_blob(out, &lp);
    fd_rdb_buf_free(&lp);
    return r ? -1 : 0;
}

int fd_rdb_dump(int type, const fd_rdb_item *items, size_t n, fd_rdb_buf *out)
{
    size_t start = out->len;
    int r;
    switch (type) {
    case FD_RDB_STRING:
        if (n != 1) return FD_E_INTERNAL;
        r = put1(out, T_STRING) || put_str(out, items[0].p, items[0].n);
        break;
    case FD_RDB_LIST: r = dump_list(items, n, out); break;
    case FD_RDB_SET: r = dump_set(items, n, out); break;
    case FD_RDB_HASH: r = dump_hash(items, n, out); break;
    case FD_RDB_ZSET: r = dump_zset(items, n, out); break;
    default: return FD_E_INTERNAL;
    }
    unsigned char f[10];
    le(f, FD_RDB_VERSION, 2);
    if (r || put(out, f, 2)) return FD_E_NOMEM;
    le(f, fd_crc64(0, out->p + start, out->len - start), 8);
    return put(out, f, 8) ? FD_E_NOMEM : FD_OK;
}

/* ---------------------------------------------------------------- stream writing */

static void be_id(unsigned char *b, fd_rdb_sid id)
{
    for (int i = 0; i < 8; i++) {
        b[i] = (unsigned char)(id.ms >> (56 - 8 * i));
        b[8 + i] = (unsigned char)(id.seq >> (56 - 8 * i));
    }
}

static fd_rdb_sid get_be_id(const unsigned char *b)
{
    fd_rdb_sid id = { 0, 0 };
    for (int i = 0; i < 8; i++) {
        id.ms = id.ms << 8 | b[i];
        id.seq = id.seq << 8 | b[8 + i];
    }
    return id;
}

static int lp_add_ll(fd_rdb_buf *b, long long v)
{
    char tmp[24];
    return lp_add(b, tmp, (size_t)resp_ll2str(tmp, sizeof tmp, v));
}

static int put_ms(fd_rdb_buf *b, int64_t ms)
{
    unsigned char t[8];
    le(t, (uint64_t)ms, 8);
    return put(b, t, 8);
}

int fd_rdb_stream_begin(fd_rdb_buf *out, uint64_t nodes)
{
    return put1(out, T_STREAM_2) || put_len(out, nodes) ? FD_E_NOMEM : FD_OK;
}

int fd_rdb_stream_node(fd_rdb_buf *out, fd_rdb_sid master, const fd_rdb_item *mf, size_t nmf,
                       const fd_rdb_sentry *e, size_t n)
{
    fd_rdb_buf lp = { 0 };
    size_t count = 4 + nmf;
    int r = lp_begin(&lp) || lp_add_ll(&lp, (long long)n) || lp_add_ll(&lp, 0) || lp_add_ll(&lp, (long long)nmf);
    for (size_t i = 0; i < nmf && !r; i++) r = lp_add(&lp, mf[i].p, mf[i].n);
    r = r || lp_add_ll(&lp, 0);
    for (size_t k = 0; k < n && !r; k++) {
        int same = e[k].nf == nmf;
        for (size_t i = 0; i < nmf && same; i++)
            same = e[k].fv[i].n == mf[i].n && (!mf[i].n || memcmp(e[k].fv[i].p, mf[i].p, mf[i].n) == 0);
        r = lp_add_ll(&lp, same ? 2 : 0) || lp_add_ll(&lp, (long long)(e[k].id.ms - master.ms)) ||
            lp_add_ll(&lp, (long long)(e[k].id.seq - master.seq));
        if (!same) r = r || lp_add_ll(&lp, (long long)e[k].nf);
        for (size_t i = 0; i < e[k].nf && !r; i++)
            r = (!same && lp_add(&lp, e[k].fv[i].p, e[k].fv[i].n)) || lp_add(&lp, e[k].fv[i].v, e[k].fv[i].vn);
        long long lpc = same ? (long long)e[k].nf + 3 : 2 * (long long)e[k].nf + 4;
        r = r || lp_add_ll(&lp, lpc);
        count += (size_t)lpc + 1;
    }
    unsigned char key[16];
    be_id(key, master);
    r = r || lp_end(&lp, 0, count) || put_str(out, key, 16) || put_blob(out, &lp);
    fd_rdb_buf_free(&lp);
    return r ? FD_E_NOMEM : FD_OK;
}

int fd_rdb_stream_info_put(fd_rdb_buf *out, const fd_rdb_stream_info *m)
{
    return put_len(out, m->length) || put_len(out, m->last.ms) || put_len(out, m->last.seq) ||
           put_len(out, m->first.ms) || put_len(out, m->first.seq) || put_len(out, m->maxdel.ms) ||
           put_len(out, m->maxdel.seq) || put_len(out, m->added) || put_len(out, m->groups)
               ? FD_E_NOMEM : FD_OK;
}

int fd_rdb_stream_group(fd_rdb_buf *out, const char *name, size_t nl, fd_rdb_sid last, int64_t entries_read,
                        uint64_t npel)
{
    return put_str(out, name, nl) || put_len(out, last.ms) || put_len(out, last.seq) ||
           put_len(out, (uint64_t)entries_read) || put_len(out, npel) ? FD_E_NOMEM : FD_OK;
}

int fd_rdb_stream_nack(fd_rdb_buf *out, fd_rdb_sid id, int64_t delivery_ms, uint64_t count)
{
    unsigned char k[16];
    be_id(k, id);
    return put(out, k, 16) || put_ms(out, delivery_ms) || put_len(out, count) ? FD_E_NOMEM : FD_OK;
}

int fd_rdb_stream_consumers(fd_rdb_buf *out, uint64_t n) { return put_len(out, n) ? FD_E_NOMEM : FD_OK; }

int fd_rdb_stream_consumer(fd_rdb_buf *out, const char *name, size_t nl, int64_t seen_ms, uint64_t npel)
{
    return put_str(out, name, nl) || put_ms(out, seen_ms) || put_len(out, npel) ? FD_E_NOMEM : FD_OK;
}

int fd_rdb_stream_cpel(fd_rdb_buf *out, fd_rdb_sid id)
{
    unsigned char k[16];
    be_id(k, id);
    return put(out, k, 16) ? FD_E_NOMEM : FD_OK;
}

/* ---------------------------------------------------------------- reading */

int fd_rdb_verify(const void *p, size_t len)
{
    const unsigned char *s = p;
    if (len < 10) return -1;
    const unsigned char *footer = s + len - 10;
    unsigned ver = (unsigned)footer[0] | (unsigned)footer[1] << 8;
    if (ver > FD_RDB_VERSION) return -1;
    return fd_crc64(0, s, len - 8) == rd_le(footer + 2, 8) ? 0 : -1;
}

typedef struct {
    const unsigned char *p, *end;
    int bad;
} rd;

static int rd_bytes(rd *r, size_t n, const unsigned char **out)
{
    if ((size_t)(r->end - r->p) < n) { r->bad = 1; return -1; }
    *out = r->p;
    r->p += n;
    return 0;
}

/* rdbLoadLenByRef: 0 a length; 1 an encoded string marker (*len = its kind) */
static int rd_len(rd *r, uint64_t *len, int *encoded)
{
    const unsigned char *b;
    *encoded = 0;
    if (rd_bytes(r, 1, &b)) return -1;
    int t = (b[0] & 0xC0) >> 6;
    if (t == 3) { *encoded = 1; *len = b[0] & 0x3F; return 0; }
    if (t == 0) { *len = b[0] & 0x3F; return 0; }
    if (t == 1) {
        const unsigned char *c;
        if (rd_bytes(r, 1, &c)) return -1;
        *len = ((uint64_t)(b[0] & 0x3F) << 8) | c[0];
        return 0;
    }
    int n = b[0] == 0x80 ? 4 : b[0] == 0x81 ? 8 : 0;
    const unsigned char *c;
    if (!n || rd_bytes(r, (size_t)n, &c)) { r->bad = 1; return -1; }
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | c[i];
    *len = v;
    return 0;
}

static int rd_plain_len(rd *r, uint64_t *len)
{
    int enc;
    if (rd_len(r, len, &enc)) return -1;
    if (enc) { r->bad = 1; return -1; }
    return 0;
}

/* a loaded string: points into the payload, into tmp (integers) or into a
 * malloc'd buffer (*heap, LZF) */
typedef struct { const char *p; size_t n; char tmp[24]; char *heap; } rstr;

static int rd_str(rd *r, rstr *s)
{
    uint64_t len;
    int enc;
    s->heap = NULL;
    if (rd_len(r, &len, &enc)) return -1;
    if (!enc) {
        const unsigned char *b;
        if (rd_bytes(r, (size_t)len, &b)) return -1;
        s->p = (const char *)b;
        s->n = (size_t)len;
        return 0;
    }
    const unsigned char *b;
    long long v;
    switch (len) {
    case 0: if (rd_bytes(r, 1, &b)) return -1; v = (int8_t)b[0]; break;
    case 1: if (rd_bytes(r, 2, &b)) return -1; v = (int16_t)rd_le(b, 2); break;
    case 2: if (rd_bytes(r, 4, &b)) return -1; v = (int32_t)rd_le(b, 4); break;
    case 3: {
        uint64_t clen, ulen;
        if (rd_plain_len(r, &clen) || rd_plain_len(r, &ulen) || rd_bytes(r, (size_t)clen, &b)) return -1;
        if (ulen > (uint64_t)1 << 32 || !(s->heap = malloc(ulen ? (size_t)ulen : 1))) { r->bad = 1; return -1; }
        if (ulen == 0 || fd_lzf_decompress(b, (size_t)clen, s->heap, (size_t)ulen) != ulen) {
            free(s->heap);
            s->heap = NULL;
            r->bad = 1;
            return -1;
        }
        s->p = s->heap;
        s->n = (size_t)ulen;
        return 0;
    }
    default: r->bad = 1; return -1;
    }
    s->n = (size_t)resp_ll2str(s->tmp, sizeof s->tmp, v);
    s->p = s->tmp;
    return 0;
}

static void rstr_free(rstr *s) { free(s->heap); s->heap = NULL; }

/* ---- duplicates: a small open-addressing set of (ptr,len) over the payload or copies */

typedef struct { char **k; size_t *kl; size_t cap, n; } dset;

static uint64_t fnv(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
    return h;
}

/* 1 added, 0 duplicate, -1 no memory */
static int dset_add(dset *d, const char *p, size_t n)
{
    if ((d->n + 1) * 2 > d->cap) {
        size_t nc = d->cap ? d->cap * 2 : 64;
        char **nk = calloc(nc, sizeof *nk);
        size_t *nl = calloc(nc, sizeof *nl);
        if (!nk || !nl) { free(nk); free(nl); return -1; }
        for (size_t i = 0; i < d->cap; i++)
            if (d->k[i]) {
                size_t j = fnv(d->k[i], d->kl[i]) & (nc - 1);
                while (nk[j]) j = (j + 1) & (nc - 1);
                nk[j] = d->k[i];
                nl[j] = d->kl[i];
            }
        free(d->k);
        free(d->kl);
        d->k = nk;
        d->kl = nl;
        d->cap = nc;
    }
    size_t j = fnv(p, n) & (d->cap - 1);
    while (d->k[j]) {
        if (d->kl[j] == n && memcmp(d->k[j], p, n) == 0) return 0;
        j = (j + 1) & (d->cap - 1);
    }
    char *c = malloc(n ? n : 1);
    if (!c) return -1;
    memcpy(c, p, n);
    d->k[j] = c;
    d->kl[j] = n;
    d->n++;
    return 1;
}

static void dset_free(dset *d)
{
    for (size_t i = 0; i < d->cap; i++) free(d->k[i]);
    free(d->k);
    free(d->kl);
    memset(d, 0, sizeof *d);
}

/* ---- the loader's output */

typedef struct {
    int type;
    fd_rdb_item_fn fn;
    void *ctx;
    dset seen;          /* set members / hash fields / zset members */
    int pending;        /* hash/zset from flat encodings: the first half of a pair is held */
    rstr first;
    char *first_copy;
    size_t count;
} sink;

#define BAD (-1)

static int emit(sink *k, const char *p, size_t n, const char *v, size_t vn, double score)
{
    if (k->type != FD_RDB_LIST && k->type != FD_RDB_STRING) {
        int a = dset_add(&k->seen, p, n);
        if (a < 0) return FD_E_NOMEM;
        if (a == 0) return BAD;
    }
    if (k->type == FD_RDB_ZSET && isnan(score)) return BAD;
    k->count++;
    if (!k->fn) return 0;
    fd_rdb_item it = { p, n, v, vn, score };
    return k->fn(k->ctx, k->type, &it);
}

/* an element from a flat sequence (listpack / ziplist / zipmap entries):
 * lists and sets emit it, hashes and zsets pair it up */
static int flat(sink *k, const char *p, size_t n)
{
    if (k->type == FD_RDB_LIST || k->type == FD_RDB_SET) return emit(k, p, n, NULL, 0, 0);
    if (!k->pending) {
        free(k->first_copy);
        if (!(k->first_copy = malloc(n ? n : 1))) return FD_E_NOMEM;
        memcpy(k->first_copy, p, n);
        k->first.n = n;
        k->pending = 1;
        return 0;
    }
    k->pending = 0;
    if (k->type == FD_RDB_HASH) return emit(k, k->first_copy, k->first.n, p, n, 0);
    /* zset score: a string as zzlGetScore reads it */
    char buf[128];
    if (n == 0 || n >= sizeof buf) return BAD;
    memcpy(buf, p, n);
    buf[n] = 0;
    char *e;
    double d = strtod(buf, &e);
    if (e != buf + n) return BAD;
    return emit(k, k->first_copy, k->first.n, NULL, 0, d);
}

/* ---- listpack / ziplist / intset / zipmap walkers */

/* One listpack entry at p (before end, the terminator): its string form in
 * *s, *sl (an integer is written in num as decimal) and its total size in
 * *adv (header, data, back-length checked). 0, or BAD. */
static int lp_decode_one(const unsigned char *p, const unsigned char *end, char num[24],
                         const char **s, size_t *sl, size_t *adv)
{
    unsigned char b = p[0];
    size_t hl, need;
    long long v = 0;
    int isint = 1;
    if ((b & 0x80) == 0) { v = b; hl = 1; need = 0; }
    else if ((b & 0xC0) == 0x80) { isint = 0; hl = 1; need = b & 0x3F; }
    else if ((b & 0xE0) == 0xC0) {
        if (end - p < 2) return BAD;
        uint64_t u = ((uint64_t)(b & 0x1F) << 8) | p[1];
        v = u >= 1 << 12 ? (long long)u - (1 << 13) : (long long)u;
        hl = 2; need = 0;
    } else if ((b & 0xF0) == 0xE0) {
        if (end - p < 2) return BAD;
        isint = 0; hl = 2; need = ((size_t)(b & 0x0F) << 8) | p[1];
    } else if (b == 0xF0) {
        if (end - p < 5) return BAD;
        isint = 0; hl = 5; need = (size_t)rd_le(p + 1, 4);
    } else if (b >= 0xF1 && b <= 0xF4) {
        int w = b == 0xF1 ? 2 : b == 0xF2 ? 3 : b == 0xF3 ? 4 : 8;
        if (end - p < 1 + w) return BAD;
        uint64_t u = rd_le(p + 1, w);
        if (w < 8 && (u >> (8 * w - 1)) & 1) u |= ~(uint64_t)0 << (8 * w);
        v = (long long)u;
        hl = 1 + (size_t)w; need = 0;
    } else return BAD;
    if ((size_t)(end - p) < hl + need) return BAD;
    if (isint) {
        *sl = (size_t)resp_ll2str(num, 24, v);
        *s = num;
    } else {
        *s = (const char *)p + hl;
        *sl = need;
    }
    unsigned char bl[5];
    size_t bn = lp_backlen(bl, hl + need);
    if ((size_t)(end - p) < hl + need + bn || memcmp(p + hl + need, bl, bn) != 0) return BAD;
    *adv = hl + need + bn;
    return 0;
}

/* A listpack's header and terminator: 0 with *count declared (65535: not
 * kept) and its entries in [*p, *end), or BAD. */
static int lp_frame(const unsigned char *lp, size_t len, size_t *declared, const unsigned char **p,
                    const unsigned char **end)
{
    if (len < 7 || rd_le(lp, 4) != len || lp[len - 1] != 0xFF) return BAD;
    *declared = (size_t)rd_le(lp + 4, 2);
    *p = lp + 6;
    *end = lp + len - 1;
    return 0;
}

static int walk_listpack(sink *k, const unsigned char *lp, size_t len)
{
    size_t declared, count = 0;
    const unsigned char *p, *end;
    if (lp_frame(lp, len, &declared, &p, &end)) return BAD;
    while (p < end) {
        char num[24];
        const char *s;
        size_t sl, adv;
        if (lp_decode_one(p, end, num, &s, &sl, &adv)) return BAD;
        int r = flat(k, s, sl);
        if (r) return r;
        count++;
        p += adv;
    }
    if (declared != 65535 && declared != count) return BAD;
    return 0;
}

static int walk_ziplist(sink *k, const unsigned char *zl, size_t len)
{
    if (len < 11 || rd_le(zl, 4) != len || zl[len - 1] != 0xFF) return BAD;
    const unsigned char *p = zl + 10, *end = zl + len - 1;
    size_t declared = (size_t)rd_le(zl + 8, 2), count = 0;
    while (p < end) {
        size_t pl = p[0] < 254 ? 1 : 5;
        if ((size_t)(end - p) < pl + 1) return BAD;
        p += pl;
        unsigned char b = p[0];
        char num[24];
        const char *s;
        size_t sl, hl, dl;
        long long v;
        int isint = 1;
        switch (b >> 6) {
        case 0: isint = 0; hl = 1; dl = b & 0x3F; break;
        case 1:
            if (end - p < 2) return BAD;
            isint = 0; hl = 2; dl = ((size_t)(b & 0x3F) << 8) | p[1];
            break;
        case 2:
            if (end - p < 5) return BAD;
            isint = 0; hl = 5; dl = ((size_t)p[1] << 24) | ((size_t)p[2] << 16) | ((size_t)p[3] << 8) | p[4];
            break;
        default:
            hl = 1;
            if (b == 0xC0) dl = 2;
            else if (b == 0xD0) dl = 4;
            else if (b == 0xE0) dl = 8;
            else if (b == 0xF0) dl = 3;
            else if (b == 0xFE) dl = 1;
            else if (b >= 0xF1 && b <= 0xFD) dl = 0;
            else return BAD;
        }
        if ((size_t)(end - p) < hl + dl) return BAD;
        if (isint) {
            if (dl == 0) v = (b & 0x0F) - 1;
            else {
                uint64_t u = rd_le(p + 1, (int)dl);
                if (dl < 8 && (u >> (8 * dl - 1)) & 1) u |= ~(uint64_t)0 << (8 * dl);
                v = (long long)u;
            }
            sl = (size_t)resp_ll2str(num, sizeof num, v);
            s = num;
        } else {
            s = (const char *)p + hl;
            sl = dl;
        }
        int r = flat(k, s, sl);
        if (r) return r;
        count++;
        p += hl + dl;
    }
    if (declared != 65535 && declared != count) return BAD;
    return 0;
}

static int walk_intset(sink *k, const unsigned char *is, size_t len)
{
    if (len < 8) return BAD;
    uint32_t w = (uint32_t)rd_le(is, 4), n = (uint32_t)rd_le(is + 4, 4);
    if ((w != 2 && w != 4 && w != 8) || len != 8 + (size_t)n * w) return BAD;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t u = rd_le(is + 8 + (size_t)i * w, (int)w);
        if (w < 8 && (u >> (8 * w - 1)) & 1) u |= ~(uint64_t)0 << (8 * w);
        char num[24];
        int r = flat(k, num, (size_t)resp_ll2str(num, sizeof num, (long long)u));
        if (r) return r;
    }
    return 0;
}

static int walk_zipmap(sink *k, const unsigned char *zm, size_t len)
{
    if (len < 2 || zm[len - 1] != 0xFF) return BAD;
    const unsigned char *p = zm + 1, *end = zm + len - 1;
    while (p < end) {
        for (int part = 0; part < 2; part++) {
            size_t l, hl = p[0] < 254 ? 1 : 5;
            if ((size_t)(end - p) < hl) return BAD;
            l = hl == 1 ? p[0] : (size_t)rd_le(p + 1, 4);
            p += hl;
            size_t free_b = 0;
            if (part == 1) {
                if (p >= end) return BAD;
                free_b = *p++;
            }
            if ((size_t)(end - p) < l + free_b) return BAD;
            int r = flat(k, (const char *)p, l);
            if (r) return r;
            p += l + free_b;
        }
    }
    return 0;
}

/* rdbLoadDoubleValue (the old ZSET type's scores) */
static int rd_old_double(rd *r, double *d)
{
    const unsigned char *b;
    if (rd_bytes(r, 1, &b)) return -1;
    if (b[0] == 253) *d = NAN;
    else if (b[0] == 254) *d = INFINITY;
    else if (b[0] == 255) *d = -INFINITY;
    else {
        char buf[256];
        const unsigned char *s;
        if (rd_bytes(r, b[0], &s)) return -1;
        memcpy(buf, s, b[0]);
        buf[b[0]] = 0;
        char *e;
        *d = strtod(buf, &e);
        if (e != buf + b[0]) { r->bad = 1; return -1; }
    }
    return 0;
}

static int load_blob(rd *r, sink *k, int (*walk)(sink *, const unsigned char *, size_t))
{
    rstr s;
    if (rd_str(r, &s)) return BAD;
    int x = walk(k, (const unsigned char *)s.p, s.n);
    rstr_free(&s);
    return x;
}

/* ---- streams */

static int id_cmp(fd_rdb_sid a, fd_rdb_sid b)
{
    if (a.ms != b.ms) return a.ms > b.ms ? 1 : -1;
    return a.seq == b.seq ? 0 : a.seq > b.seq ? 1 : -1;
}

static int rd_id(rd *r, fd_rdb_sid *id) { return rd_plain_len(r, &id->ms) || rd_plain_len(r, &id->seq) ? -1 : 0; }

static int rd_raw_id(rd *r, fd_rdb_sid *id)
{
    const unsigned char *b;
    if (rd_bytes(r, 16, &b)) return -1;
    *id = get_be_id(b);
    return 0;
}

static int rd_ms(rd *r, int64_t *ms)
{
    const unsigned char *b;
    if (rd_bytes(r, 8, &b)) return -1;
    *ms = (int64_t)rd_le(b, 8);
    return 0;
}

/* a listpack's entries as strings: el[i] points into the listpack or into
 * nums (24 bytes per entry, the integers' decimal forms) */
typedef struct { fd_rdb_item *el; char *nums; size_t n; } lpels;

static void lpels_free(lpels *l) { free(l->el); free(l->nums); memset(l, 0, sizeof *l); }

static int lp_split(const unsigned char *lp, size_t len, lpels *l)
{
    size_t declared, n = 0;
    const unsigned char *p, *end, *q;
    memset(l, 0, sizeof *l);
    if (lp_frame(lp, len, &declared, &p, &end)) return BAD;
    for (q = p; q < end; n++) {   /* count (and check) first */
        char num[24];
        const char *s;
        size_t sl, adv;
        if (lp_decode_one(q, end, num, &s, &sl, &adv)) return BAD;
        q += adv;
    }
    if (declared != 65535 && declared != n) return BAD;
    if (!(l->el = calloc(n + 1, sizeof *l->el)) || !(l->nums = malloc(24 * (n + 1)))) {
        lpels_free(l);
        return FD_E_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const char *s;
        size_t sl, adv;
        lp_decode_one(p, end, l->nums + 24 * i, &s, &sl, &adv);
        l->el[i].p = s;
        l->el[i].n = sl;
        p += adv;
    }
    l->n = n;
    return 0;
}

static int el_int(const lpels *l, size_t i, long long *v)
{
    return i < l->n && l->el[i].n && l->el[i].n <= 20 && resp_str2ll(l->el[i].p, l->el[i].n, v) == 0 ? 0 : BAD;
}

/* One node (t_stream.c's listpack layout): the master entry, then entries
 * as deltas from the node key. Live entries go to sk->entry, then the node
 * to sk->node. *prev: the last id seen (strictly increasing across nodes). */
static int load_stream_node(fd_rdb_sid master, const unsigned char *lp, size_t len,
                            const fd_rdb_stream_sink *sk, fd_rdb_sid *prev, int *have_prev, uint64_t *live_total)
{
    lpels l;
    int x = lp_split(lp, len, &l);
    if (x) return x;
    long long count, deleted, nmf, v;
    fd_rdb_item *fv = NULL;
    x = BAD;
    if (el_int(&l, 0, &count) || el_int(&l, 1, &deleted) || el_int(&l, 2, &nmf) || count < 0 || deleted < 0 ||
        nmf < 0 || (size_t)nmf + 4 > l.n || el_int(&l, 3 + (size_t)nmf, &v) || v != 0)
        goto out;
    const fd_rdb_item *mf = l.el + 3;
    if (!(fv = calloc(l.n + 1, sizeof *fv))) { x = FD_E_NOMEM; goto out; }
    size_t i = 4 + (size_t)nmf;
    uint64_t live = 0, dead = 0;
    fd_rdb_sid last = master;
    while (i < l.n) {
        long long flags, msd, seqd, nf, lpc;
        if (el_int(&l, i, &flags) || el_int(&l, i + 1, &msd) || el_int(&l, i + 2, &seqd) || flags < 0 || flags > 3)
            goto out;
        int same = (flags & 2) != 0;
        size_t at = i + 3;
        if (same) nf = nmf;
        else if (el_int(&l, at++, &nf) || nf < 0 || (size_t)nf > l.n) goto out;
        size_t need = same ? (size_t)nf : 2 * (size_t)nf;
        if (l.n - at < need + 1 || el_int(&l, at + need, &lpc) || lpc != (same ? nf + 3 : 2 * nf + 4)) goto out;
        fd_rdb_sid id = { master.ms + (uint64_t)msd, master.seq + (uint64_t)seqd };
        if (*have_prev && id_cmp(id, *prev) <= 0) goto out;
        *prev = id;
        *have_prev = 1;
        last = id;
        for (size_t f = 0; f < (size_t)nf; f++) {
            if (same) fv[f] = (fd_rdb_item){ mf[f].p, mf[f].n, l.el[at + f].p, l.el[at + f].n, 0 };
            else fv[f] = (fd_rdb_item){ l.el[at + 2 * f].p, l.el[at + 2 * f].n, l.el[at + 2 * f + 1].p,
                                        l.el[at + 2 * f + 1].n, 0 };
        }
        if (flags & 1) dead++;
        else {
            live++;
            if (sk && (x = sk->entry(sk->ctx, id, fv, (size_t)nf)) != 0) goto out;
            x = BAD;
        }
        i = at + need + 1;
    }
    /* the master's counters must be true; a node without a live entry is
     * never kept by Redis (XDEL and trimming drop it) */
    if (live != (uint64_t)count || dead != (uint64_t)deleted || live == 0) goto out;
    *live_total += live;
    x = sk ? sk->node(sk->ctx, master, mf, (size_t)nmf, live, dead, len, last) : 0;
out:
    free(fv);
    lpels_free(&l);
    return x;
}

typedef struct { fd_rdb_sid id; int64_t dtime; uint64_t dcount; int owned; } lnack;

static int lnack_find(const lnack *a, size_t n, fd_rdb_sid id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = id_cmp(a[mid].id, id);
        if (!c) return (int)mid;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

/* one consumer group: name, last id, entries read, its PEL (nacks, ids
 * increasing), its consumers with their PELs (each id in the group's PEL,
 * owned once; every nack owned) */
static int load_stream_group(rd *r, const fd_rdb_stream_sink *sk, dset *gnames)
{
    rstr name, cname;
    fd_rdb_sid last;
    uint64_t er, npel, ncons;
    lnack *pel = NULL;
    dset cnames;
    int x = BAD;
    memset(&cnames, 0, sizeof cnames);
    if (rd_str(r, &name)) return BAD;
    int a = dset_add(gnames, name.p, name.n);
    if (a <= 0) { rstr_free(&name); return a < 0 ? FD_E_NOMEM : BAD; }
    if (rd_id(r, &last) || rd_plain_len(r, &er) || rd_plain_len(r, &npel) || npel > (size_t)(r->end - r->p) / 25)
        goto out;
    if (!(pel = calloc(npel + 1, sizeof *pel))) { x = FD_E_NOMEM; goto out; }
    for (uint64_t i = 0; i < npel; i++) {
        if (rd_raw_id(r, &pel[i].id) || rd_ms(r, &pel[i].dtime) || rd_plain_len(r, &pel[i].dcount)) goto out;
        if (i && id_cmp(pel[i].id, pel[i - 1].id) <= 0) goto out;
    }
    if (rd_plain_len(r, &ncons) || ncons > (size_t)(r->end - r->p) / 10) goto out;
    if (sk && (x = sk->group(sk->ctx, name.p, name.n, last, (int64_t)er, npel, ncons)) != 0) goto out;
    for (uint64_t c = 0; c < ncons; c++) {
        int64_t seen;
        uint64_t cn;
        if (rd_str(r, &cname)) { x = BAD; goto out; }
        a = dset_add(&cnames, cname.p, cname.n);
        if (a <= 0 || rd_ms(r, &seen) || rd_plain_len(r, &cn) || cn > npel) {
            rstr_free(&cname);
            x = a < 0 ? FD_E_NOMEM : BAD;
            goto out;
        }
        x = sk ? sk->consumer(sk->ctx, cname.p, cname.n, seen, cn) : 0;
        rstr_free(&cname);
        if (x) goto out;
        for (uint64_t k = 0; k < cn; k++) {
            fd_rdb_sid id;
            int at;
            if (rd_raw_id(r, &id) || (at = lnack_find(pel, (size_t)npel, id)) < 0 || pel[at].owned) { x = BAD; goto out; }
            pel[at].owned = 1;
            if (sk && (x = sk->nack(sk->ctx, id, pel[at].dtime, pel[at].dcount)) != 0) goto out;
        }
    }
    x = 0;
    for (uint64_t i = 0; i < npel && !x; i++)
        if (!pel[i].owned) x = BAD;
out:
    rstr_free(&name);
    free(pel);
    dset_free(&cnames);
    return x;
}

/* RDB_TYPE_STREAM_LISTPACKS_2 after its type byte */
static int load_stream(rd *r, const fd_rdb_stream_sink *sk)
{
    uint64_t nodes, live_total = 0;
    fd_rdb_sid prev = { 0, 0 }, prev_key = { 0, 0 };
    int have_prev = 0, x;
    if (rd_plain_len(r, &nodes)) return BAD;
    for (uint64_t i = 0; i < nodes; i++) {
        rstr key, lp;
        if (rd_str(r, &key)) return BAD;
        if (key.n != 16) { rstr_free(&key); return BAD; }
        fd_rdb_sid master = get_be_id((const unsigned char *)key.p);
        rstr_free(&key);
        if (i && id_cmp(master, prev_key) <= 0) return BAD;
        prev_key = master;
        if (rd_str(r, &lp)) return BAD;
        x = load_stream_node(master, (const unsigned char *)lp.p, lp.n, sk, &prev, &have_prev, &live_total);
        rstr_free(&lp);
        if (x) return x;
    }
    fd_rdb_stream_info m;
    m.nodes = nodes;
    if (rd_plain_len(r, &m.length) || rd_id(r, &m.last) || rd_id(r, &m.first) || rd_id(r, &m.maxdel) ||
        rd_plain_len(r, &m.added) || rd_plain_len(r, &m.groups))
        return BAD;
    if (m.length != live_total || (have_prev && id_cmp(prev, m.last) > 0)) return BAD;
    if (sk && (x = sk->info(sk->ctx, &m)) != 0) return x;
    dset gnames;
    memset(&gnames, 0, sizeof gnames);
    x = 0;
    for (uint64_t g = 0; g < m.groups && !x; g++) x = load_stream_group(r, sk, &gnames);
    dset_free(&gnames);
    return x;
}

int fd_rdb_stream_load(const void *p, size_t len, const fd_rdb_stream_sink *sk)
{
    if (len < 11) return BAD;
    rd r = { p, (const unsigned char *)p + len - 10, 0 };
    const unsigned char *t;
    if (rd_bytes(&r, 1, &t) || t[0] != T_STREAM_2) return BAD;
    int x = load_stream(&r, sk);
    if (!x && r.bad) x = BAD;
    return x;
}

static int load(rd *r, int rtype, sink *k)
{
    uint64_t n;
    int x;
    rstr a, b;
    switch (rtype) {
    case T_STRING:
        k->type = FD_RDB_STRING;
        if (rd_str(r, &a)) return BAD;
        x = emit(k, a.p, a.n, NULL, 0, 0);
        rstr_free(&a);
        return x;
    case T_LIST: case T_SET:
        k->type = rtype == T_LIST ? FD_RDB_LIST : FD_RDB_SET;
        if (rd_plain_len(r, &n)) return BAD;
        for (uint64_t i = 0; i < n; i++) {
            if (rd_str(r, &a)) return BAD;
            x = emit(k, a.p, a.n, NULL, 0, 0);
            rstr_free(&a);
            if (x) return x;
        }
        return 0;
    case T_ZSET: case T_ZSET_2:
        k->type = FD_RDB_ZSET;
        if (rd_plain_len(r, &n)) return BAD;
        for (uint64_t i = 0; i < n; i++) {
            double d;
            if (rd_str(r, &a)) return BAD;
            if (rtype == T_ZSET_2) {
                const unsigned char *db;
                if (rd_bytes(r, 8, &db)) { rstr_free(&a); return BAD; }
                uint64_t bits = rd_le(db, 8);
                memcpy(&d, &bits, 8);
            } else if (rd_old_double(r, &d)) {
                rstr_free(&a);
                return BAD;
            }
            x = emit(k, a.p, a.n, NULL, 0, d);
            rstr_free(&a);
            if (x) return x;
        }
        return 0;
    case T_HASH:
        k->type = FD_RDB_HASH;
        if (rd_plain_len(r, &n)) return BAD;
        for (uint64_t i = 0; i < n; i++) {
            if (rd_str(r, &a)) return BAD;
            if (rd_str(r, &b)) { rstr_free(&a); return BAD; }
            x = emit(k, a.p, a.n, b.p, b.n, 0);
            rstr_free(&a);
            rstr_free(&b);
            if (x) return x;
        }
        return 0;
    case T_HASH_ZIPMAP: k->type = FD_RDB_HASH; return load_blob(r, k, walk_zipmap);
    case T_LIST_ZIPLIST: k->type = FD_RDB_LIST; return load_blob(r, k, walk_ziplist);
    case T_SET_INTSET: k->type = FD_RDB_SET; return load_blob(r, k, walk_intset);
    case T_ZSET_ZIPLIST: k->type = FD_RDB_ZSET; return load_blob(r, k, walk_ziplist);
    case T_HASH_ZIPLIST: k->type = FD_RDB_HASH; return load_blob(r, k, walk_ziplist);
    case T_HASH_LISTPACK: k->type = FD_RDB_HASH; return load_blob(r, k, walk_listpack);
    case T_ZSET_LISTPACK: k->type = FD_RDB_ZSET; return load_blob(r, k, walk_listpack);
    case T_LIST_QUICKLIST: case T_LIST_QUICKLIST_2:
        k->type = FD_RDB_LIST;
        if (rd_plain_len(r, &n) || n == 0) return BAD;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t container = 2;
            if (rtype == T_LIST_QUICKLIST_2 && (rd_plain_len(r, &container) || (container != 1 && container != 2)))
                return BAD;
            if (container == 1) {   /* a plain node: one element */
                if (rd_str(r, &a)) return BAD;
                x = emit(k, a.p, a.n, NULL, 0, 0);
                rstr_free(&a);
            } else {
                size_t before = k->count;
                x = load_blob(r, k, rtype == T_LIST_QUICKLIST ? walk_ziplist : walk_listpack);
                if (!x && k->count == before) x = BAD;   /* an empty node */
            }
            if (x) return x;
        }
        return 0;
    case T_STREAM_2:
        k->type = FD_RDB_STREAM;
        return load_stream(r, NULL);
    default:
        return BAD;
    }
}

int fd_rdb_load(const void *p, size_t len, int *type, fd_rdb_item_fn fn, void *ctx)
{
    if (len < 11) return BAD;
    rd r = { p, (const unsigned char *)p + len - 10, 0 };
    const unsigned char *t;
    if (rd_bytes(&r, 1, &t)) return BAD;
    sink k;
    memset(&k, 0, sizeof k);
    k.fn = fn;
    k.ctx = ctx;
    int x = load(&r, t[0], &k);
    if (!x && (r.bad || k.pending || (k.count == 0 && k.type != FD_RDB_STRING && k.type != FD_RDB_STREAM))) x = BAD;
    *type = k.type;
    dset_free(&k.seen);
    free(k.first_copy);
    return x;
}

/* ---------------------------------------------------------------- RESTORE arguments */

int fd_parse_restore(const resp_arg *argv, int argc, fd_restore_opts *o, resp_out *out, int *replied)
{
    memset(o, 0, sizeof *o);
    o->idletime = o->freq = -1;
    *replied = 0;
    for (int j = 4; j < argc; j++) {
        int more = argc - j - 1;
        if (resp_arg_is(&argv[j], "replace")) o->replace = 1;
        else if (resp_arg_is(&argv[j], "absttl")) o->absttl = 1;
        else if (resp_arg_is(&argv[j], "idletime") && more >= 1 && o->freq == -1) {
            if (fd_arg_ll(&argv[j + 1], &o->idletime) != FD_OK) return FD_E_NOTINT;
            if (o->idletime < 0) {
                *replied = 1;
                return resp_add_error(out, "ERR Invalid IDLETIME value, must be >= 0") ? FD_E_NOMEM : FD_OK;
            }
            j++;
        } else if (resp_arg_is(&argv[j], "freq") && more >= 1 && o->idletime == -1) {
            if (fd_arg_ll(&argv[j + 1], &o->freq) != FD_OK) return FD_E_NOTINT;
            if (o->freq < 0 || o->freq > 255) {
                *replied = 1;
                return resp_add_error(out, "ERR Invalid FREQ value, must be >= 0 and <= 255") ? FD_E_NOMEM : FD_OK;
            }
            j++;
        } else
            return FD_E_SYNTAX;
    }
    return FD_OK;
}

int fd_restore_ttl(const resp_arg *a, long long *ttl, resp_out *out, int *replied)
{
    *replied = 0;
    if (fd_arg_ll(a, ttl) != FD_OK) return FD_E_NOTINT;
    if (*ttl < 0) {
        *replied = 1;
        return resp_add_error(out, "ERR Invalid TTL value, must be >= 0") ? FD_E_NOMEM : FD_OK;
    }
    return FD_OK;
}

int fd_restore_prepare(const resp_arg *argv, const fd_restore_opts *o, long long now_ms,
                       fd_rdb_item_fn fn, void *ctx, int *type, long long *ttl, int *expired,
                       resp_out *out, int *replied)
{
    *expired = 0;
    FD_TRY(fd_restore_ttl(&argv[2], ttl, out, replied));
    if (*replied) return FD_OK;
    const char *e = NULL;
    const resp_arg *pl = &argv[3];
    if (fd_rdb_verify(pl->ptr, pl->len) != 0) {
        e = "ERR DUMP payload version or checksum are wrong";
    } else {
        int s = fd_rdb_load(pl->ptr, pl->len, type, fn, ctx);
        if (s == -1) e = "ERR Bad data format";
        else if (s != 0) return s;
    }
    if (e) {
        *replied = 1;
        return resp_add_error(out, e) ? FD_E_NOMEM : FD_OK;
    }
    if (*ttl && !o->absttl) *ttl += now_ms;
    *expired = *ttl && *ttl <= now_ms;
    return FD_OK;
}

/* ---------------------------------------------------------------- FUNCTION DUMP / RESTORE */

int fd_rdb_function_add(fd_rdb_buf *out, const char *code, size_t len)
{
    return put1(out, 0xF5) || put_str(out, code, len) ? FD_E_NOMEM : FD_OK;
}

int fd_rdb_footer(fd_rdb_buf *out)
{
    unsigned char f[8];
    le(f, FD_RDB_VERSION, 2);
    if (put(out, f, 2)) return FD_E_NOMEM;
    le(f, fd_crc64(0, out->p, out->len), 8);
    return put(out, f, 8) ? FD_E_NOMEM : FD_OK;
}

int fd_rdb_functions_load(const void *p, size_t len, fd_rdb_function_fn fn, void *ctx)
{
    if (len < 10) return -1;
    rd r = { (const unsigned char *)p, (const unsigned char *)p + len - 10, 0 };
    while (r.p < r.end) {
        const unsigned char *t;
        if (rd_bytes(&r, 1, &t)) return -1;
        if (t[0] != 0xF5) return 1;
        rstr s;
        if (rd_str(&r, &s)) return -1;
        int rc = fn(ctx, s.p, s.n);
        rstr_free(&s);
        if (rc) return rc;
    }
    return 0;
}
