/* kv_string.c — the string commands of KV_COMMANDS over the ordered-KV layer,
 * with Redis 7.0's semantics, reply shapes and error texts (t_string.c).
 *
 * Strings live inline in the key's metadata record, so GET is one read.
 * Integers written by INCR are stored as their decimal text, as Redis
 * replies them. Every handler validates its arguments before its first
 * write, so a failure leaves no partial change (storage errors excepted:
 * the backend aborts those, see kv_backend.c). */
#include <math.h>
#include <string.h>
#include <strings.h>
#include <limits.h>
#include "kv.h"
#include "../cmdargs.h"
#include "../value/strings.h"


/* ---------------------------------------------------------------- SET family */

/* The SET core. abort_nx: reply :0/:1 (SETNX) instead of nil/+OK. */
static int set_generic(kv_ctx *c, int flags, int64_t expire, const resp_arg *key,
                       const resp_arg *val, int abort_nx)
{
    kv_key k;
    kv_meta m;
    kv_key_init(&k, key->ptr, key->len);
    FD_TRY(kv_lookup(c, &k, &m));
    if ((flags & FD_SET_GET) && m.live && m.type != KV_T_STRING) return FD_E_WRONGTYPE;
    size_t mark = c->out->len;
    if (flags & FD_SET_GET) {
        /* the old value is in driver memory: reply now, before writing */
        if (m.live) FD_OUT(resp_add_bulk(c->out, m.val, m.vlen));
        else FD_OUT(resp_add_null(c->out));
    }
    if ((flags & FD_SET_GET) && !m.live) KV_NOTIFY(c, KEY_MISS, "keymiss", key->ptr, key->len);
    if (fd_str_set_blocked(flags, m.live)) return fd_str_set_reply(c->out, flags, abort_nx, 0) ? FD_E_NOMEM : FD_OK;
    int expires = expire != 0 && !(flags & FD_SET_KEEPTTL);
    if ((flags & FD_SET_KEEPTTL) && m.live) expire = m.expire;
    int s = kv_write_string(c, &k, &m, expire, val->ptr, val->len, NULL, 0);
    if (s != FD_OK) { c->out->len = mark; return s; }
    KV_NOTIFY(c, STRING, "set", key->ptr, key->len);
    if (expires) KV_NOTIFY(c, GENERIC, "expire", key->ptr, key->len);
    return fd_str_set_reply(c->out, flags, abort_nx, 1) ? FD_E_NOMEM : FD_OK;
}

int kv_cmd_set(kv_ctx *c)
{
    int flags;
    const resp_arg *exp;
    int64_t expire = 0;
    FD_TRY(fd_parse_set_opts(c->argv, c->argc, 3, 1, &flags, &exp));
    if (exp) FD_TRY(fd_set_expire_ms(exp, flags, c->now_ms, &expire));
    return set_generic(c, flags, expire, &c->argv[1], &c->argv[2], 0);
}

int kv_cmd_setnx(kv_ctx *c)
{
    return set_generic(c, FD_SET_NX, 0, &c->argv[1], &c->argv[2], 1);
}

int kv_cmd_setex(kv_ctx *c)
{
    int64_t expire;
    FD_TRY(fd_set_expire_ms(&c->argv[2], FD_SET_EX, c->now_ms, &expire));
    return set_generic(c, 0, expire, &c->argv[1], &c->argv[3], 0);
}

int kv_cmd_psetex(kv_ctx *c)
{
    int64_t expire;
    FD_TRY(fd_set_expire_ms(&c->argv[2], FD_SET_PX, c->now_ms, &expire));
    return set_generic(c, 0, expire, &c->argv[1], &c->argv[3], 0);
}

int kv_cmd_getset(kv_ctx *c)
{
    return set_generic(c, FD_SET_GET, 0, &c->argv[1], &c->argv[2], 0);
}

/* ---------------------------------------------------------------- reads */

/* Look up a string: FD_OK with *live set, FD_E_WRONGTYPE, or FD_E_*. */
static int lookup_string(kv_ctx *c, kv_key *k, kv_meta *m, const resp_arg *key)
{
    kv_key_init(k, key->ptr, key->len);
    FD_TRY(kv_lookup(c, k, m));
    if (m->live && m->type != KV_T_STRING) return FD_E_WRONGTYPE;
    return FD_OK;
}

int kv_cmd_get(kv_ctx *c)
{
    kv_key k; kv_meta m;
    FD_TRY(lookup_string(c, &k, &m, &c->argv[1]));
    if (!m.live) FD_OUT(resp_add_null(c->out));
    else FD_OUT(resp_add_bulk(c->out, m.val, m.vlen));
    return FD_OK;
}

int kv_cmd_getdel(kv_ctx *c)
{
    kv_key k; kv_meta m;
    FD_TRY(lookup_string(c, &k, &m, &c->argv[1]));
    if (!m.live) {
        KV_NOTIFY_ARG(c, KEY_MISS, "keymiss", 1);
        FD_OUT(resp_add_null(c->out));
        return FD_OK;
    }
    size_t mark = c->out->len;
    FD_OUT(resp_add_bulk(c->out, m.val, m.vlen));
    int s = kv_delete(c, &k, &m);
    if (s != FD_OK) c->out->len = mark;
    else KV_NOTIFY_ARG(c, GENERIC, "del", 1);
    return s;
}

int kv_cmd_getex(kv_ctx *c)
{
    int flags;
    const resp_arg *exp;
    int64_t expire = 0;
    FD_TRY(fd_parse_set_opts(c->argv, c->argc, 2, 0, &flags, &exp));
    kv_key k; kv_meta m;
    FD_TRY(lookup_string(c, &k, &m, &c->argv[1]));
    if (!m.live) {
        KV_NOTIFY_ARG(c, KEY_MISS, "keymiss", 1);
        FD_OUT(resp_add_null(c->out));
        return FD_OK;
    }
    /* as Redis 7.0: the expiry value is validated only for an existing string */
    if (exp) FD_TRY(fd_set_expire_ms(exp, flags, c->now_ms, &expire));
    size_t mark = c->out->len;
    FD_OUT(resp_add_bulk(c->out, m.val, m.vlen));
    int s = FD_OK;
    const char *ev = NULL;
    if (exp && expire <= c->now_ms) { s = kv_delete(c, &k, &m); ev = "del"; }
    else if (exp) { s = kv_set_expire(c, &k, &m, expire); ev = "expire"; }
    else if ((flags & FD_SET_PERSIST) && m.expire) { s = kv_set_expire(c, &k, &m, 0); ev = "persist"; }
    if (s != FD_OK) c->out->len = mark;
    else if (ev) KV_NOTIFY_ARG(c, GENERIC, ev, 1);
    return s;
}

int kv_cmd_mget(kv_ctx *c)
{
    size_t mark = c->out->len;
    int s = FD_OK;
    if (resp_add_array(c->out, c->argc - 1)) return FD_E_NOMEM;
    for (int j = 1; j < c->argc && s == FD_OK; j++) {
        kv_key k; kv_meta m;
        kv_key_init(&k, c->argv[j].ptr, c->argv[j].len);
        if ((s = kv_lookup(c, &k, &m)) != FD_OK) break;
        if (m.live && m.type == KV_T_STRING) s = resp_add_bulk(c->out, m.val, m.vlen) ? FD_E_NOMEM : FD_OK;
        else s = resp_add_null(c->out) ? FD_E_NOMEM : FD_OK;
    }
    if (s != FD_OK) c->out->len = mark;
    return s;
}

int kv_cmd_strlen(kv_ctx *c)
{
    kv_key k; kv_meta m;
    FD_TRY(lookup_string(c, &k, &m, &c->argv[1]));
    FD_OUT(resp_add_int(c->out, m.live ? (long long)m.vlen : 0));
    return FD_OK;
}

int kv_cmd_getrange(kv_ctx *c)
{
    long long start, end;
    FD_TRY(fd_arg_ll(&c->argv[2], &start));
    FD_TRY(fd_arg_ll(&c->argv[3], &end));
    kv_key k; kv_meta m;
    FD_TRY(lookup_string(c, &k, &m, &c->argv[1]));
    FD_OUT(fd_str_getrange_reply(c->out, m.val, m.live ? m.vlen : 0, start, end));
    return FD_OK;
}

/* ---------------------------------------------------------------- writes */

int kv_cmd_mset(kv_ctx *c)
{
    if (c->argc % 2 == 0) {
        FD_OUT(resp_add_error(c->out, "ERR wrong number of arguments for 'mset' command"));
        return FD_OK;
    }
    for (int j = 1; j < c->argc; j += 2) {
        kv_key k; kv_meta m;
        kv_key_init(&k, c->argv[j].ptr, c->argv[j].len);
        FD_TRY(kv_lookup(c, &k, &m));
        FD_TRY(kv_write_string(c, &k, &m, 0, c->argv[j + 1].ptr, c->argv[j + 1].len, NULL, 0));
        KV_NOTIFY_ARG(c, STRING, "set", j);
    }
    FD_OUT(resp_add_status(c->out, "OK"));
    return FD_OK;
}

int kv_cmd_msetnx(kv_ctx *c)
{
    if (c->argc % 2 == 0) {
        FD_OUT(resp_add_error(c->out, "ERR wrong number of arguments for 'msetnx' command"));
        return FD_OK;
    }
    for (int j = 1; j < c->argc; j += 2) {
        kv_key k; kv_meta m;
        kv_key_init(&k, c->argv[j].ptr, c->argv[j].len);
        FD_TRY(kv_lookup(c, &k, &m));
        if (m.live) { FD_OUT(resp_add_int(c->out, 0)); return FD_OK; }
    }
    for (int j = 1; j < c->argc; j += 2) {
        kv_key k; kv_meta m;
        kv_key_init(&k, c->argv[j].ptr, c->argv[j].len);
        FD_TRY(kv_lookup(c, &k, &m));
        FD_TRY(kv_write_string(c, &k, &m, 0, c->argv[j + 1].ptr, c->argv[j + 1].len, NULL, 0));
        KV_NOTIFY_ARG(c, STRING, "set", j);
    }
    FD_OUT(resp_add_int(c->out, 1));
    return FD_OK;
}

static int incr_generic(kv_ctx *c, long long incr)
{
    kv_key k; kv_meta m;
    FD_TRY(lookup_string(c, &k, &m, &c->argv[1]));
    long long v;
    FD_TRY(fd_str_incr(m.val, m.vlen, m.live, incr, &v));
    char buf[32];
    int n = resp_ll2str(buf, sizeof buf, v);
    FD_TRY(kv_write_string(c, &k, &m, m.live ? m.expire : 0, buf, (size_t)n, NULL, 0));
    KV_NOTIFY_ARG(c, STRING, "incrby", 1);
    FD_OUT(resp_add_int(c->out, v));
    return FD_OK;
}

int kv_cmd_incr(kv_ctx *c) { return incr_generic(c, 1); }
int kv_cmd_decr(kv_ctx *c) { return incr_generic(c, -1); }

static int incrby_generic(kv_ctx *c, int decr)
{
    long long incr;
    int replied;
    FD_TRY(fd_str_parse_incr(&c->argv[2], decr, &incr, c->out, &replied));
    return replied ? FD_OK : incr_generic(c, incr);
}

int kv_cmd_incrby(kv_ctx *c) { return incrby_generic(c, 0); }
int kv_cmd_decrby(kv_ctx *c) { return incrby_generic(c, 1); }

int kv_cmd_incrbyfloat(kv_ctx *c)
{
    kv_key k; kv_meta m;
    FD_TRY(lookup_string(c, &k, &m, &c->argv[1]));
    char buf[FD_STR_INCRBYFLOAT_BUF];
    size_t n;
    FD_TRY(fd_str_incrbyfloat(m.val, m.vlen, m.live, &c->argv[2], buf, &n));
    FD_TRY(kv_write_string(c, &k, &m, m.live ? m.expire : 0, buf, n, NULL, 0));
    KV_NOTIFY_ARG(c, STRING, "incrbyfloat", 1);
    FD_OUT(resp_add_bulk(c->out, buf, n));
    return FD_OK;
}

int kv_cmd_append(kv_ctx *c)
{
    kv_key k; kv_meta m;
    const resp_arg *a = &c->argv[2];
    FD_TRY(lookup_string(c, &k, &m, &c->argv[1]));
    if (!m.live) {
        FD_TRY(kv_write_string(c, &k, &m, 0, a->ptr, a->len, NULL, 0));
        KV_NOTIFY_ARG(c, STRING, "append", 1);
        FD_OUT(resp_add_int(c->out, (long long)a->len));
        return FD_OK;
    }
    if ((long long)m.vlen + (long long)a->len > c->max_bulk) return FD_E_STRLEN;
    /* the old value is in driver memory that the write may reuse: copy it */
    char *old = kv_scratch(c->st, m.vlen);
    if (!old && m.vlen) return FD_E_NOMEM;
    if (m.vlen) memcpy(old, m.val, m.vlen);
    size_t total = m.vlen + a->len;
    FD_TRY(kv_write_string(c, &k, &m, m.expire, old, m.vlen, a->ptr, a->len));
    KV_NOTIFY_ARG(c, STRING, "append", 1);
    FD_OUT(resp_add_int(c->out, (long long)total));
    return FD_OK;
}

int kv_cmd_setrange(kv_ctx *c)
{
    long long off;
    const resp_arg *a = &c->argv[3];
    FD_TRY(fd_arg_ll(&c->argv[2], &off));
    if (off < 0) return FD_E_OFFSET;
    kv_key k; kv_meta m;
    FD_TRY(lookup_string(c, &k, &m, &c->argv[1]));
    size_t olen = m.live ? m.vlen : 0;
    if (a->len == 0) { FD_OUT(resp_add_int(c->out, (long long)olen)); return FD_OK; }
    if (off > c->max_bulk - (long long)a->len) return FD_E_STRLEN;
    size_t end = (size_t)off + a->len;
    size_t nlen = end > olen ? end : olen;
    char *b = kv_scratch(c->st, nlen);
    if (!b) return FD_E_NOMEM;
    fd_str_setrange(b, m.val, olen, (size_t)off, a);
    FD_TRY(kv_write_string(c, &k, &m, m.live ? m.expire : 0, b, nlen, NULL, 0));
    KV_NOTIFY_ARG(c, STRING, "setrange", 1);
    FD_OUT(resp_add_int(c->out, (long long)nlen));
    return FD_OK;
}
