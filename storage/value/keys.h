/* keys.h — Redis 7.0's commands on keys whatever their type (db.c,
 * expire.c) written once over a small adapter per store: DEL, EXISTS,
 * TOUCH, TYPE, EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, TTL, PTTL,
 * EXPIRETIME, PEXPIRETIME, PERSIST — argument checks in Redis's order,
 * replies and keyspace events. The key's state is the string adapter's
 * (strings.h: fd_str_sk, fd_str_val, open as FD_STR_ANY, del, expire): a
 * store gives the same functions to both. KEYS, SCAN, RANDOMKEY, RENAME,
 * DBSIZE and FLUSHDB stay with each store (they walk or move its records).
 *
 * Module prefix: fd_key. No global state; nothing blocks.
 */
#ifndef FRONTDOOR_VALUE_KEYS_H
#define FRONTDOOR_VALUE_KEYS_H

#include "strings.h"

typedef struct fd_key_io {
    int   (*open)(void *h, const resp_arg *key, int want, fd_str_sk *sk, fd_str_val *v);   /* want FD_STR_ANY */
    int   (*del)(void *h, fd_str_sk *sk, const resp_arg *key);
    int   (*expire)(void *h, fd_str_sk *sk, const resp_arg *key, int64_t at);           /* 0: persist */
    /* The open live key's type as TYPE names it ("string", "list"...). */
    const char *(*type)(void *h, fd_str_sk *sk);
    void  (*close)(void *h, fd_str_sk *sk);                                             /* NULL: nothing */
    void  (*event)(void *h, int cls, const char *event, const resp_arg *key);
    /* Optional batches (NULL: one open per key). DEL: delete every key of
     * argv[1..argc) that exists (an expired one too), dead[i] 1 for each
     * argv[1 + i] that was live (a repeated key once); EXISTS/TOUCH: *n
     * the live keys, a repeated one each time. */
    int   (*del_many)(void *h, int argc, const resp_arg *argv, unsigned char *dead);
    int   (*count_live)(void *h, int argc, const resp_arg *argv, long long *n);
} fd_key_io;

/* One command over io: argv[0] is its name; now: the command's clock (ms).
 * The reply goes to out (nothing on a failure). FD_OK or an FD_E_*
 * status. */
int fd_key_del(const fd_key_io *io, void *h, int argc, const resp_arg *argv, resp_out *out);
int fd_key_exists(const fd_key_io *io, void *h, int argc, const resp_arg *argv, resp_out *out);
int fd_key_type(const fd_key_io *io, void *h, const resp_arg *argv, resp_out *out);
/* EXPIRE (base now, seconds 1), PEXPIRE (now, 0), EXPIREAT (0, 1), PEXPIREAT (0, 0) */
int fd_key_expire(const fd_key_io *io, void *h, int argc, const resp_arg *argv, int64_t now, int64_t base,
                  int seconds, resp_out *out);
/* TTL (mode 0), PTTL (1), EXPIRETIME (2), PEXPIRETIME (3) */
int fd_key_ttl(const fd_key_io *io, void *h, const resp_arg *argv, int64_t now, int mode, resp_out *out);
int fd_key_persist(const fd_key_io *io, void *h, const resp_arg *argv, resp_out *out);

/* The handlers of a family, named <P>_cmd_<command> as commands.def's
 * impl column binds them, over io for a context type CTX with argc, argv,
 * out and now_ms (kv_ctx, mg_ctx). */
#define FD_KEY_HANDLERS(P, CTX, IO) \
    int P##_cmd_del(CTX *c)         { return fd_key_del(&(IO), c, c->argc, c->argv, c->out); } \
    int P##_cmd_exists(CTX *c)      { return fd_key_exists(&(IO), c, c->argc, c->argv, c->out); } \
    int P##_cmd_touch(CTX *c)       { return fd_key_exists(&(IO), c, c->argc, c->argv, c->out); } \
    int P##_cmd_type(CTX *c)        { return fd_key_type(&(IO), c, c->argv, c->out); } \
    int P##_cmd_expire(CTX *c)      { return fd_key_expire(&(IO), c, c->argc, c->argv, c->now_ms, c->now_ms, 1, c->out); } \
    int P##_cmd_pexpire(CTX *c)     { return fd_key_expire(&(IO), c, c->argc, c->argv, c->now_ms, c->now_ms, 0, c->out); } \
    int P##_cmd_expireat(CTX *c)    { return fd_key_expire(&(IO), c, c->argc, c->argv, c->now_ms, 0, 1, c->out); } \
    int P##_cmd_pexpireat(CTX *c)   { return fd_key_expire(&(IO), c, c->argc, c->argv, c->now_ms, 0, 0, c->out); } \
    int P##_cmd_ttl(CTX *c)         { return fd_key_ttl(&(IO), c, c->argv, c->now_ms, 0, c->out); } \
    int P##_cmd_pttl(CTX *c)        { return fd_key_ttl(&(IO), c, c->argv, c->now_ms, 1, c->out); } \
    int P##_cmd_expiretime(CTX *c)  { return fd_key_ttl(&(IO), c, c->argv, c->now_ms, 2, c->out); } \
    int P##_cmd_pexpiretime(CTX *c) { return fd_key_ttl(&(IO), c, c->argv, c->now_ms, 3, c->out); } \
    int P##_cmd_persist(CTX *c)     { return fd_key_persist(&(IO), c, c->argv, c->out); }

#endif
