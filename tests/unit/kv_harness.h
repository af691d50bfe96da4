/* kv_harness.h — the harness the ordered-KV unit tests share (test_kv.c,
 * test_kv_types.c, test_kv_leveldb.c): a temporary folder for the run,
 * commands submitted to a backend as the proxy submits them (an fd_request
 * with a bare command row, submit per command, end_turn per turn) with the
 * reply captured as text, and the R / EXPECT shorthands.
 *
 * A test that drives one store in `dir` defines KV_HARNESS_STORE before the
 * include and also gets ops, B, open_store / close_store, submit_args /
 * submit and check_consistency.
 *
 * Everything here is static and meant for one test file each; functions are
 * inline so that a test not using one of them stays warning-free. */
#ifndef FRONTDOOR_KV_HARNESS_H
#define FRONTDOOR_KV_HARNESS_H
#include <stdarg.h>
#include <stdlib.h>
#include <stdint.h>
#include "test.h"
#include "../../storage/kv/kv.h"
#include "../../storage/lmdb_settings.h"

static resp_out out;
static int64_t now_ms = 1700000000000LL;
static int last_status;
static char reply[1 << 16];
static fd_backend *cur_b;           /* where R and EXPECT send their commands */

/* Makes the run's folder "/tmp/<name>.XXXXXX" in dir (size n) and the reply
 * buffer. Returns 0, or -1 with the error printed. */
static inline int harness_begin(char *dir, size_t n, const char *name)
{
    snprintf(dir, n, "/tmp/%s.XXXXXX", name);
    if (!mkdtemp(dir)) { perror("mkdtemp"); return -1; }
    resp_out_init(&out, 2);
    return 0;
}

/* Frees the reply buffer, removes the run's folder; the test's exit code. */
static inline int harness_end(const char *dir)
{
    resp_out_free(&out);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return TEST_DONE();
}

/* Submit one command to b (no end_turn). Returns the status; the reply (or
 * "-<error text>" with the command name filled in) is in `reply`. */
static inline int submit_to(fd_backend *b, const char *name, kv_handler h, int is_write,
                            int argc, resp_arg *argv)
{
    /* the real row, so the backend finds its handler by id as in the server */
    const fd_command *row = fd_command_lookup(name, strlen(name));
    (void)h;   /* named by the caller so a test does not compile without the handler */
    if (!row) { fprintf(stderr, "  no command '%s' in the table\n", name); exit(1); }
    fd_request r = { .cmd = row, .argc = argc, .argv = argv, .out = &out,
                     .now_ms = now_ms, .is_write = is_write };
    out.len = 0;
    int s = b->ops->submit(b, &r);
    last_status = s;
    if (s == FD_OK) {
        size_t n = out.len < sizeof reply - 1 ? out.len : sizeof reply - 1;
        memcpy(reply, out.data, n);
        reply[n] = '\0';
    } else {
        char fmt[256];
        snprintf(fmt, sizeof fmt, "-%s\r\n", fd_strerror(s));
        snprintf(reply, sizeof reply, fmt, name);
    }
    return s;
}

/* submit_to with the arguments after the name as NULL-terminated strings. */
static inline int vsubmit_to(fd_backend *b, const char *name, kv_handler h, int is_write, va_list ap)
{
    resp_arg argv[64];
    int argc = 0;
    argv[argc].ptr = (char *)name;
    argv[argc++].len = strlen(name);
    for (const char *a; (a = va_arg(ap, const char *)) != NULL;) {
        argv[argc].ptr = (char *)a;
        argv[argc++].len = strlen(a);
    }
    return submit_to(b, name, h, is_write, argc, argv);
}

/* One command in its own turn on cur_b: returns the reply text. */
static inline const char *run(const char *name, kv_handler h, int w, ...)
{
    va_list ap;
    va_start(ap, w);
    vsubmit_to(cur_b, name, h, w, ap);
    va_end(ap);
    cur_b->ops->end_turn(cur_b);
    return reply;
}

#define R(name, w, ...) run(#name, kv_cmd_##name, w, __VA_ARGS__, (const char *)NULL)
#define W 1
#define RD 0
#define EXPECT(want, name, w, ...) do { const char *got_ = R(name, w, __VA_ARGS__); \
    if (strcmp(got_, want) != 0) fprintf(stderr, "  %s: got %s", #name " " #__VA_ARGS__, got_); \
    CHECK(strcmp(got_, want) == 0); } while (0)

#ifdef KV_HARNESS_STORE
/* ------------------------------------------------------- the one store */

static const fd_backend_ops *ops;
static fd_backend B;
static char dir[64];

static inline void open_store(const char *path, uint64_t map)
{
    fd_lmdb_settings ls = { .map_size = (long long)map };
    fd_backend_config cfg = { .dir = path, .sync = 0, .max_bulk = RESP_DEFAULT_MAX_BULK,
                              .options = ops->options == &fd_lmdb_options ? &ls : NULL };
    char err[256] = "";
    memset(&B, 0, sizeof B);
    B.ops = ops;
    cur_b = &B;
    int s = ops->open(&B, &cfg, err, sizeof err);
    if (s) fprintf(stderr, "open: %s\n", err);
    CHECK(s == FD_OK);
}

static inline void close_store(void) { ops->close(&B); }

static inline int submit_args(const char *name, kv_handler h, int is_write, int argc, resp_arg *argv)
{
    return submit_to(&B, name, h, is_write, argc, argv);
}

/* Submit one command to B (no end_turn); arguments NULL-terminated. */
static inline int submit(const char *name, kv_handler h, int is_write, ...)
{
    va_list ap;
    va_start(ap, is_write);
    int s = vsubmit_to(&B, name, h, is_write, ap);
    va_end(ap);
    return s;
}

/* The store's invariants, checked by walking every record in a turn of its
 * own: one 'M' per counted key, one 'E' per key with an expiry and none
 * stale, counters equal to the records. */
static inline void check_consistency(const char *where)
{
    kv_store *st = B.state;
    submit("dbsize", kv_cmd_dbsize, 0, (const char *)NULL);   /* opens the turn */
    long long dbsize = atoll(reply + 1);
    const kv_driver *d = st->drv;
    kv_iter *it;
    long long metas = 0, with_exp = 0, eidx = 0, stale = 0;
    CHECK(d->iter_open(st->txn, &it) == FD_OK);
    for (int s = d->seek(it, "", 0); s == FD_OK; s = d->next(it)) {
        const void *k, *v; size_t kl, vl;
        d->cur(it, &k, &kl, &v, &vl);
        const uint8_t *kb = k;
        if (kb[0] == KV_PFX_META) {
            kv_meta m;
            CHECK(kv_meta_parse(v, vl, &m) == FD_OK);
            metas++;
            if (m.expire) with_exp++;
        } else if (kb[0] == KV_PFX_EXPIRE) {
            eidx++;
            /* the key it names must have exactly this expiry */
            const void *mv; size_t mvl; kv_meta m;
            uint8_t mk[KV_MKEY_MAX];
            mk[0] = KV_PFX_META;
            memcpy(mk + 1, kb + 9, kl - 9);
            if (d->get(st->txn, mk, kl - 8, &mv, &mvl) != FD_OK ||
                kv_meta_parse(mv, mvl, &m) != FD_OK || m.expire != (int64_t)kv_get_u64(kb + 1))
                stale++;
        }
    }
    d->iter_close(it);
    ops->end_turn(&B);
    uint64_t keys, expires;
    ops->keyspace(&B, &keys, &expires);
    int ok = metas == dbsize && (uint64_t)metas == keys && with_exp == eidx &&
             (uint64_t)eidx == expires && stale == 0;
    if (!ok) fprintf(stderr, "  consistency (%s): M %lld dbsize %lld keys %llu, expiring %lld E %lld expires %llu, stale %lld\n",
                     where, metas, dbsize, (unsigned long long)keys, with_exp, eidx,
                     (unsigned long long)expires, stale);
    CHECK(ok);
}
#endif /* KV_HARNESS_STORE */

#endif
