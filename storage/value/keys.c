/* keys.c — the key commands over fd_key_io (see keys.h), with Redis 7.0's
 * semantics (db.c, expire.c: learned from them, written here anew). */
#include <stdlib.h>
#include "keys.h"
#include "../cmdargs.h"
#include "../clock.h"
#include "../status.h"
#include "../host.h"

#define EVENT(name, key) do { if (fd_notify_on(FD_NOTIFY_GENERIC)) \
                                  io->event(h, FD_NOTIFY_GENERIC, name, key); } while (0)
#define OUT(expr) ((expr) ? FD_E_NOMEM : FD_OK)

static int done(const fd_key_io *io, void *h, fd_str_sk *sk, int s)
{
    if (io->close) io->close(h, sk);
    return s;
}

int fd_key_del(const fd_key_io *io, void *h, int argc, const resp_arg *argv, resp_out *out)
{
    long long n = 0;
    int s = FD_OK;
    if (io->del_many) {
        unsigned char *dead = calloc((size_t)argc, 1);
        if (!dead) return FD_E_NOMEM;
        s = io->del_many(h, argc, argv, dead);
        for (int j = 1; j < argc && s == FD_OK; j++)
            if (dead[j - 1]) { n++; EVENT("del", &argv[j]); }
        free(dead);
    } else {
        for (int j = 1; j < argc && s == FD_OK; j++) {
            fd_str_sk sk;
            fd_str_val v;
            s = io->open(h, &argv[j], FD_STR_ANY, &sk, &v);
            if (s == FD_OK && v.found) s = io->del(h, &sk, &argv[j]);    /* an expired record goes too, uncounted */
            if (s == FD_OK && v.live) { n++; EVENT("del", &argv[j]); }
            done(io, h, &sk, s);
        }
    }
    return s != FD_OK ? s : OUT(resp_add_int(out, n));
}

int fd_key_exists(const fd_key_io *io, void *h, int argc, const resp_arg *argv, resp_out *out)
{
    long long n = 0;
    int s = FD_OK;
    if (io->count_live) s = io->count_live(h, argc, argv, &n);
    else for (int j = 1; j < argc && s == FD_OK; j++) {
        fd_str_sk sk;
        fd_str_val v;
        s = io->open(h, &argv[j], FD_STR_ANY, &sk, &v);
        if (s == FD_OK && v.live) n++;
        done(io, h, &sk, s);
    }
    return s != FD_OK ? s : OUT(resp_add_int(out, n));
}

int fd_key_type(const fd_key_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    fd_str_sk sk;
    fd_str_val v;
    int s = io->open(h, &argv[1], FD_STR_ANY, &sk, &v);
    if (s == FD_OK) s = OUT(resp_add_status(out, v.live ? io->type(h, &sk) : "none"));
    return done(io, h, &sk, s);
}

int fd_key_expire(const fd_key_io *io, void *h, int argc, const resp_arg *argv, int64_t now, int64_t base,
                  int seconds, resp_out *out)
{
    int flags;
    int r = fd_parse_expire_opts(argv, argc, 3, &flags, out);
    if (r) return r > 0 ? FD_OK : FD_E_NOMEM;    /* 1: an error was replied */
    long long when;
    int s = fd_expire_when(&argv[2], base, seconds, &when);
    if (s != FD_OK) return s;
    fd_str_sk sk;
    fd_str_val v;
    s = io->open(h, &argv[1], FD_STR_ANY, &sk, &v);
    if (s != FD_OK) return done(io, h, &sk, s);
    /* v.expire 0: no expiry (Redis's -1) */
    if (!v.live || fd_expire_refused(flags, v.expire, when)) return done(io, h, &sk, OUT(resp_add_int(out, 0)));
    int gone = when <= now;
    s = gone ? io->del(h, &sk, &argv[1]) : io->expire(h, &sk, &argv[1], when);
    if (s == FD_OK) {
        EVENT(gone ? "del" : "expire", &argv[1]);
        s = OUT(resp_add_int(out, 1));
    }
    return done(io, h, &sk, s);
}

int fd_key_ttl(const fd_key_io *io, void *h, const resp_arg *argv, int64_t now, int mode, resp_out *out)
{
    fd_str_sk sk;
    fd_str_val v;
    int s = io->open(h, &argv[1], FD_STR_ANY, &sk, &v);
    if (s != FD_OK) return done(io, h, &sk, s);
    long long r;
    if (!v.live) r = -2;
    else if (!v.expire) r = -1;
    else if (mode >= 2) r = mode == 2 ? fd_ms_to_s_rounded(v.expire) : v.expire;   /* Redis rounds EXPIRETIME too */
    else {
        long long ttl = v.expire - now;
        if (ttl < 0) ttl = 0;
        r = mode == 1 ? ttl : fd_ms_to_s_rounded(ttl);
    }
    return done(io, h, &sk, OUT(resp_add_int(out, r)));
}

int fd_key_persist(const fd_key_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    fd_str_sk sk;
    fd_str_val v;
    int s = io->open(h, &argv[1], FD_STR_ANY, &sk, &v);
    if (s != FD_OK || !v.live || !v.expire) return done(io, h, &sk, s != FD_OK ? s : OUT(resp_add_int(out, 0)));
    s = io->expire(h, &sk, &argv[1], 0);
    if (s == FD_OK) {
        EVENT("persist", &argv[1]);
        s = OUT(resp_add_int(out, 1));
    }
    return done(io, h, &sk, s);
}
