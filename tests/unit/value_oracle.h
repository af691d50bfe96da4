/* value_oracle.h — what test_value_bits.c, test_value_hll.c and
 * test_value_lcs.c share: a real redis-server (the oracle, /usr/bin/
 * redis-server 7.0, started on a unix socket in a temporary folder, so no
 * port is ever guessed), a tiny blocking RESP client for it, and a model
 * store that runs the same commands through storage/value/ the way a
 * backend will wire them (lookup, WRONGTYPE, parse, apply, store), so every
 * reply can be compared byte for byte, in RESP2 and RESP3.
 *
 * Everything is static: one test file each. */
#ifndef FRONTDOOR_VALUE_ORACLE_H
#define FRONTDOOR_VALUE_ORACLE_H
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include "test.h"
#include "../../protocol/resp.h"
#include "../../protocol/resp_scan.h"
#include "../../storage/value/bits.h"
#include "../../storage/value/hll.h"
#include "../../storage/value/lcs.h"

/* ---------------------------------------------------------------- the oracle */

static char   or_dir[64];
static pid_t  or_pid = -1;
static int    or_fd2 = -1, or_fd3 = -1;    /* RESP2 and RESP3 (HELLO 3) connections */
static char  *or_buf;                       /* last reply */
static size_t or_len, or_cap, or_have;      /* reply length; bytes buffered */

static inline int or_connect(void)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s/r.sock", or_dir);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) { close(fd); return -1; }
    return fd;
}

/* Send argv as a RESP array on fd; read one complete reply into or_buf[0..or_len). */
static inline int or_cmdv(int fd, int argc, const resp_arg *argv)
{
    resp_out o;
    resp_out_init(&o, 2);
    resp_add_array(&o, argc);
    for (int i = 0; i < argc; i++) resp_add_bulk(&o, argv[i].ptr, argv[i].len);
    size_t off = 0;
    while (off < o.len) {
        ssize_t n = write(fd, o.data + off, o.len - off);
        if (n <= 0) { resp_out_free(&o); return -1; }
        off += (size_t)n;
    }
    resp_out_free(&o);
    /* drop the previous reply's bytes, keep what followed it */
    if (or_have > or_len) memmove(or_buf, or_buf + or_len, or_have - or_len);
    or_have = or_have > or_len ? or_have - or_len : 0;
    or_len = 0;
    resp_scanner s;
    resp_scanner_init(&s);
    for (;;) {
        if (or_have) {
            long long r = resp_scan_reply(&s, or_buf, or_have);
            if (r < 0) return -1;
            if (r > 0) { or_len = (size_t)r; return 0; }
        }
        if (or_cap - or_have < 65536) {
            or_cap = or_cap ? or_cap * 2 : 1 << 20;
            or_buf = realloc(or_buf, or_cap);
        }
        ssize_t n = read(fd, or_buf + or_have, or_cap - or_have);
        if (n <= 0) return -1;
        or_have += (size_t)n;
    }
}

/* Split a command line on spaces into argv (no quoting; tests that need
 * binary arguments build argv themselves). Returns argc. */
static inline int split_line(char *line, resp_arg *argv, int max)
{
    int argc = 0;
    for (char *t = strtok(line, " "); t && argc < max; t = strtok(NULL, " ")) {
        argv[argc].ptr = t;
        argv[argc].len = strlen(t);
        argc++;
    }
    return argc;
}

static inline int or_cmd(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int or_cmd(int fd, const char *fmt, ...)
{
    char line[4096];
    resp_arg argv[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    int argc = split_line(line, argv, 256);
    return or_cmdv(fd, argc, argv);
}

/* Start the oracle; 0, or -1 (printed). */
static inline int oracle_start(void)
{
    snprintf(or_dir, sizeof or_dir, "/tmp/fd_value.XXXXXX");
    if (!mkdtemp(or_dir)) { perror("mkdtemp"); return -1; }
    char sock[128];
    snprintf(sock, sizeof sock, "%s/r.sock", or_dir);
    or_pid = fork();
    if (or_pid == 0) {
        int devnull = open("/dev/null", 1);
        if (devnull >= 0) { dup2(devnull, 1); dup2(devnull, 2); }
        execl("/usr/bin/redis-server", "redis-server", "--port", "0", "--unixsocket", sock,
              "--save", "", "--appendonly", "no", "--dir", or_dir, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 500; i++) {   /* up to 5 s */
        if ((or_fd2 = or_connect()) >= 0) break;
        usleep(10000);
    }
    if (or_fd2 < 0 || (or_fd3 = or_connect()) < 0) {
        fprintf(stderr, "could not start /usr/bin/redis-server (apt-get install redis-server)\n");
        return -1;
    }
    if (or_cmd(or_fd3, "HELLO 3") != 0) return -1;
    if (or_cmd(or_fd2, "INFO server") != 0 || !memmem(or_buf, or_len, "redis_version:7.0.", 18)) {
        fprintf(stderr, "the oracle is not redis-server 7.0\n");
        return -1;
    }
    return 0;
}

static inline void oracle_stop(void)
{
    if (or_fd2 >= 0) close(or_fd2);
    if (or_fd3 >= 0) close(or_fd3);
    if (or_pid > 0) { kill(or_pid, SIGTERM); waitpid(or_pid, NULL, 0); }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", or_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", or_dir);
    free(or_buf);
}

/* ---------------------------------------------------------------- the model store */

enum { M_NONE, M_STRING, M_LIST };
typedef struct mkey {
    char name[32];
    int type;
    unsigned char *v;
    size_t len;
} mkey;

#define M_MAXKEYS 64
static mkey m_keys[M_MAXKEYS];
static long long m_max_bulk = 512LL * 1024 * 1024;
static size_t m_sparse_max = 0;   /* hll-sparse-max-bytes; 0: default */
static const char M_WRONGTYPE[] = "WRONGTYPE Operation against a key holding the wrong kind of value";

static inline mkey *m_find(const resp_arg *k, int create)
{
    mkey *freek = NULL;
    for (int i = 0; i < M_MAXKEYS; i++) {
        mkey *m = &m_keys[i];
        if (m->type != M_NONE && strlen(m->name) == k->len && memcmp(m->name, k->ptr, k->len) == 0) return m;
        if (m->type == M_NONE && !freek) freek = m;
    }
    if (!create || !freek || k->len >= sizeof freek->name) return NULL;
    memcpy(freek->name, k->ptr, k->len);
    freek->name[k->len] = 0;
    freek->v = NULL;
    freek->len = 0;
    return freek;
}

static inline void m_store(const resp_arg *k, const unsigned char *v, size_t len)
{
    mkey *m = m_find(k, 1);
    unsigned char *nv = malloc(len ? len : 1);
    if (len) memcpy(nv, v, len);
    free(m->v);
    m->v = nv;
    m->len = len;
    m->type = M_STRING;
}

static inline void m_del(mkey *m)
{
    if (!m) return;
    free(m->v);
    m->v = NULL;
    m->len = 0;
    m->type = M_NONE;
}

static inline int m_err(resp_out *o, const char *e) { return resp_add_error(o, e); }

/* Run one command on the model; the reply goes to o. Arity is the command
 * table's job: tests only send commands of a valid arity. */
static inline int m_exec(int argc, const resp_arg *argv, resp_out *o)
{
    const resp_arg *c = &argv[0];
#define IS(name) (c->len == strlen(name) && strncasecmp(c->ptr, name, c->len) == 0)
    const char *e;
    if (IS("set")) {
        m_store(&argv[1], (const unsigned char *)argv[2].ptr, argv[2].len);
        return resp_add_status(o, "OK");
    }
    if (IS("get")) {
        mkey *m = m_find(&argv[1], 0);
        if (!m) return resp_add_null(o);
        if (m->type != M_STRING) return m_err(o, M_WRONGTYPE);
        return resp_add_bulk(o, m->v, m->len);
    }
    if (IS("del")) {
        long long n = 0;
        for (int i = 1; i < argc; i++) { mkey *m = m_find(&argv[i], 0); if (m) { m_del(m); n++; } }
        return resp_add_int(o, n);
    }
    if (IS("lpush")) {
        mkey *m = m_find(&argv[1], 1);
        if (m->type == M_STRING) return m_err(o, M_WRONGTYPE);
        m->type = M_LIST;
        return resp_add_int(o, 1);
    }
    if (IS("setbit")) {
        fd_setbit p;
        if ((e = fd_setbit_parse(argv, argc, m_max_bulk, &p))) return m_err(o, e);
        mkey *m = m_find(&argv[1], 0);
        if (m && m->type != M_STRING) return m_err(o, M_WRONGTYPE);
        fd_bitpatch pt;
        fd_setbit_plan(&p, m ? m->v : NULL, m ? m->len : 0, &pt);
        if (pt.write) {
            /* a store patching in place: grow with zeros, write one byte */
            if (!m) { m = m_find(&argv[1], 1); m->type = M_STRING; }
            m->v = realloc(m->v, pt.newlen);
            fd_bitpatch_apply(&pt, m->v, m->len);
            m->len = pt.newlen;
        }
        return resp_add_int(o, pt.oldbit);
    }
    if (IS("getbit")) {
        uint64_t off;
        if ((e = fd_bit_parse_offset(&argv[2], 0, m_max_bulk, &off))) return m_err(o, e);
        mkey *m = m_find(&argv[1], 0);
        if (m && m->type != M_STRING) return m_err(o, M_WRONGTYPE);
        return resp_add_int(o, m ? fd_getbit(m->v, m->len, off) : 0);
    }
    if (IS("bitcount")) {
        mkey *m = m_find(&argv[1], 0);
        if (!m) return resp_add_int(o, 0);
        if (m->type != M_STRING) return m_err(o, M_WRONGTYPE);
        return fd_bitcount_cmd(argv, argc, m->v, m->len, o);
    }
    if (IS("bitpos")) {
        int bit;
        if ((e = fd_bitpos_parse_bit(argv, argc, &bit))) return m_err(o, e);
        mkey *m = m_find(&argv[1], 0);
        if (m && m->type != M_STRING) return m_err(o, M_WRONGTYPE);
        return fd_bitpos_cmd(argv, argc, bit, m ? m->v : NULL, m ? m->len : 0, m != NULL, o);
    }
    if (IS("bitop")) {
        int op;
        if ((e = fd_bitop_parse(argv, argc, &op))) return m_err(o, e);
        unsigned char *acc = NULL;
        size_t n = 0;
        for (int i = 3; i < argc; i++) {
            mkey *m = m_find(&argv[i], 0);
            if (m && m->type != M_STRING) { free(acc); return m_err(o, M_WRONGTYPE); }
            size_t l = m ? m->len : 0;
            acc = realloc(acc, (n > l ? n : l) + 1);
            n = fd_bitop_step(op, acc, n, m ? m->v : NULL, l, i == 3);
        }
        if (n) m_store(&argv[2], acc, n);
        else m_del(m_find(&argv[2], 0));
        free(acc);
        return resp_add_int(o, (long long)n);
    }
    if (IS("bitfield") || IS("bitfield_ro")) {
        fd_bfop ops[256];
        fd_bitfield bf = { .ops = ops };
        if (fd_bitfield_max_ops(argc) > 256) return m_err(o, "test: too many ops");
        if ((e = fd_bitfield_parse(argv, argc, IS("bitfield_ro"), m_max_bulk, &bf))) return m_err(o, e);
        mkey *m = m_find(&argv[1], 0);
        if (m && m->type != M_STRING) return m_err(o, M_WRONGTYPE);
        if (bf.readonly) return fd_bitfield_exec(&bf, m ? m->v : NULL, m ? m->len : 0, o, NULL, NULL, NULL);
        size_t old = m ? m->len : 0, nl = fd_bitfield_newlen(&bf, old);
        unsigned char *buf = calloc(1, nl), *before = calloc(1, nl);
        if (old) memcpy(buf, m->v, old);
        memcpy(before, buf, nl);
        int changed;
        size_t lo, hi;
        int rc = fd_bitfield_exec(&bf, buf, nl, o, &changed, &lo, &hi);
        /* the dirty range is exact enough for a patching store */
        CHECK(memcmp(buf, before, lo) == 0 && memcmp(buf + hi, before + hi, nl - hi) == 0);
        if (!m || nl != old || changed) m_store(&argv[1], buf, nl);
        free(buf);
        free(before);
        return rc;
    }
    if (IS("pfadd")) {
        mkey *m = m_find(&argv[1], 0);
        if (m && m->type != M_STRING) return m_err(o, M_WRONGTYPE);
        if (m && (e = fd_hll_check(m->v, m->len))) return m_err(o, e);
        static unsigned char buf[FD_HLL_BUF_SIZE];
        size_t len = 0;
        if (m) {
            if (m->len > sizeof buf) return m_err(o, FD_HLL_ERR_CORRUPT);
            memcpy(buf, m->v, m->len);
            len = m->len;
        }
        int upd;
        if ((e = fd_pfadd(argv + 2, argc - 2, buf, &len, m != NULL, m_sparse_max, &upd))) return m_err(o, e);
        if (upd) m_store(&argv[1], buf, len);
        return resp_add_int(o, upd);
    }
    if (IS("pfcount") && argc == 2) {
        mkey *m = m_find(&argv[1], 0);
        if (!m) return resp_add_int(o, 0);
        if (m->type != M_STRING) return m_err(o, M_WRONGTYPE);
        if ((e = fd_hll_check(m->v, m->len))) return m_err(o, e);
        uint64_t card;
        int wrote;
        if ((e = fd_hll_card(m->v, m->len, &card, &wrote))) return m_err(o, e);   /* in place */
        return resp_add_int(o, (long long)card);
    }
    if (IS("pfcount") || IS("pfmerge")) {
        static uint8_t regs[FD_HLL_REGISTERS];
        memset(regs, 0, sizeof regs);
        int dense = 0;
        for (int i = 1; i < argc; i++) {
            mkey *m = m_find(&argv[i], 0);
            if (!m) continue;
            if (m->type != M_STRING) return m_err(o, M_WRONGTYPE);
            if ((e = fd_hll_merge_raw(regs, m->v, m->len, &dense))) return m_err(o, e);
        }
        if (IS("pfcount")) return resp_add_int(o, (long long)fd_hll_count_raw(regs));
        mkey *d = m_find(&argv[1], 0);
        static unsigned char buf[FD_HLL_BUF_SIZE];
        size_t len = 0;
        if (d) { memcpy(buf, d->v, d->len); len = d->len; }
        if ((e = fd_hll_store_raw(buf, &len, d != NULL, dense, regs, m_sparse_max))) return m_err(o, e);
        m_store(&argv[1], buf, len);
        return resp_add_status(o, "OK");
    }
    if (IS("lcs")) {
        mkey *a = m_find(&argv[1], 0), *b = m_find(&argv[2], 0);
        if ((a && a->type != M_STRING) || (b && b->type != M_STRING)) return m_err(o, FD_LCS_ERR_TYPE);
        fd_lcs opt;
        if ((e = fd_lcs_parse(argv, argc, &opt))) return m_err(o, e);
        return fd_lcs_reply(&opt, a ? a->v : NULL, a ? a->len : 0, b ? b->v : NULL, b ? b->len : 0,
                            m_max_bulk, o);
    }
#undef IS
    return m_err(o, "ERR test model: unknown command");
}

/* ---------------------------------------------------------------- comparing */

static int cmp_shown;   /* mismatches printed so far (the first few only) */

static inline void show(const char *what, const char *p, size_t n)
{
    fprintf(stderr, "  %s (%zu bytes): ", what, n);
    for (size_t i = 0; i < n && i < 300; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch == '\r') fputs("\\r", stderr);
        else if (ch == '\n') fputs("\\n", stderr);
        else if (ch < 32 || ch > 126) fprintf(stderr, "\\x%02x", ch);
        else fputc(ch, stderr);
    }
    fputc('\n', stderr);
}

/* Run argv on the oracle (RESP2 connection) and on the model; 1 when the
 * replies are byte-identical. proto3: also compare the reply on the RESP3
 * connection (read-only commands: run again there). */
static inline int same_v(int argc, const resp_arg *argv, int proto3)
{
    int ok = 1;
    for (int pass = 0; pass < (proto3 ? 2 : 1); pass++) {
        resp_out o;
        resp_out_init(&o, pass ? 3 : 2);
        if (or_cmdv(pass ? or_fd3 : or_fd2, argc, argv) != 0) { resp_out_free(&o); return 0; }
        m_exec(argc, argv, &o);
        if (o.len != or_len || memcmp(o.data, or_buf, or_len) != 0) {
            ok = 0;
            if (cmp_shown++ < 10) {
                fprintf(stderr, "mismatch (RESP%d) for:", pass ? 3 : 2);
                for (int i = 0; i < argc && i < 12; i++) fprintf(stderr, " %.*s", (int)(argv[i].len > 40 ? 40 : argv[i].len), argv[i].ptr);
                fputc('\n', stderr);
                show("redis", or_buf, or_len);
                show("model", o.data, o.len);
            }
        }
        resp_out_free(&o);
    }
    return ok;
}

static inline int same(int proto3, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int same(int proto3, const char *fmt, ...)
{
    char line[4096];
    resp_arg argv[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    int argc = split_line(line, argv, 256);
    return same_v(argc, argv, proto3);
}

/* Is the stored value of key the same on both (GET)? */
static inline int same_value(const char *key)
{
    return same(0, "GET %s", key);
}

static inline void m_reset(void)
{
    for (int i = 0; i < M_MAXKEYS; i++) m_del(&m_keys[i]);
}

#endif
