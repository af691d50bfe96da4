/* mg_string.c — the MongoDB backend's string commands.
 *
 * { _id, type: "string", value: Int64 | BinData, expireAt? }: see mg.h. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mg.h"
#include "../value/strings.h"

static int set_generic(mg_ctx *c, int flags, int64_t expire, const resp_arg *key,
                       const resp_arg *val, int abort_nx)
{
    if (!(flags & (FD_SET_NX | FD_SET_XX | FD_SET_GET | FD_SET_KEEPTTL))) {
        /* plain SET: one replace, no read */
        FD_TRY(mg_write_string(c, key, expire, val->ptr, val->len, NULL, 0));
        MG_NOTIFY(c, STRING, "set", key->ptr, key->len);
        if (expire) MG_NOTIFY(c, GENERIC, "expire", key->ptr, key->len);
        FD_OUT(resp_add_status(c->out, "OK"));
        return FD_OK;
    }
    mg_meta m;
    FD_TRY(mg_lookup(c, key, &m, (flags & FD_SET_GET) != 0));
    int s = FD_OK;
    if ((flags & FD_SET_GET) && m.live && m.type != MG_T_STRING) { s = FD_E_WRONGTYPE; goto done; }
    size_t mark = c->out->len;
    if (flags & FD_SET_GET) {
        if (m.live) { if (resp_add_bulk(c->out, m.val, m.vlen)) { s = FD_E_NOMEM; goto done; } }
        else if (resp_add_null(c->out)) { s = FD_E_NOMEM; goto done; }
    }
    int write = !fd_str_set_blocked(flags, m.live);
    if (write) {
        int expires = expire != 0 && !(flags & FD_SET_KEEPTTL);
        if ((flags & FD_SET_KEEPTTL) && m.live) expire = m.expire;
        s = mg_write_string(c, key, expire, val->ptr, val->len, NULL, 0);
        if (s != FD_OK) { c->out->len = mark; goto done; }
        MG_NOTIFY(c, STRING, "set", key->ptr, key->len);
        if (expires) MG_NOTIFY(c, GENERIC, "expire", key->ptr, key->len);
    }
    if (fd_str_set_reply(c->out, flags, abort_nx, write)) s = FD_E_NOMEM;
done:
    mg_meta_free(&m);
    return s;
}

int mg_cmd_set(mg_ctx *c)
{
    int flags;
    const resp_arg *exp;
    int64_t expire = 0;
    FD_TRY(fd_parse_set_opts(c->argv, c->argc, 3, 1, &flags, &exp));
    if (exp) FD_TRY(fd_set_expire_ms(exp, flags, c->now_ms, &expire));
    return set_generic(c, flags, expire, &c->argv[1], &c->argv[2], 0);
}

int mg_cmd_setnx(mg_ctx *c) { return set_generic(c, FD_SET_NX, 0, &c->argv[1], &c->argv[2], 1); }

int mg_cmd_setex(mg_ctx *c)
{
    int64_t expire;
    FD_TRY(fd_set_expire_ms(&c->argv[2], FD_SET_EX, c->now_ms, &expire));
    return set_generic(c, 0, expire, &c->argv[1], &c->argv[3], 0);
}

int mg_cmd_psetex(mg_ctx *c)
{
    int64_t expire;
    FD_TRY(fd_set_expire_ms(&c->argv[2], FD_SET_PX, c->now_ms, &expire));
    return set_generic(c, 0, expire, &c->argv[1], &c->argv[3], 0);
}

int mg_cmd_getset(mg_ctx *c) { return set_generic(c, FD_SET_GET, 0, &c->argv[1], &c->argv[2], 0); }

int mg_cmd_get(mg_ctx *c)
{
    mg_meta m;
    FD_TRY(mg_lookup_string(c, &c->argv[1], &m));
    int r = m.live ? resp_add_bulk(c->out, m.val, m.vlen) : resp_add_null(c->out);
    mg_meta_free(&m);
    return r ? FD_E_NOMEM : FD_OK;
}

int mg_cmd_getdel(mg_ctx *c)
{
    mg_meta m;
    FD_TRY(mg_lookup_string(c, &c->argv[1], &m));
    int s = FD_OK;
    if (!m.live) s = resp_add_null(c->out) ? FD_E_NOMEM : FD_OK;
    else {
        size_t mark = c->out->len;
        if (resp_add_bulk(c->out, m.val, m.vlen)) s = FD_E_NOMEM;
        else if ((s = mg_delete(c, &c->argv[1])) != FD_OK) c->out->len = mark;
        else MG_NOTIFY_ARG(c, GENERIC, "del", 1);
    }
    mg_meta_free(&m);
    return s;
}

int mg_cmd_getex(mg_ctx *c)
{
    int flags;
    const resp_arg *exp;
    int64_t expire = 0;
    FD_TRY(fd_parse_set_opts(c->argv, c->argc, 2, 0, &flags, &exp));
    mg_meta m;
    FD_TRY(mg_lookup_string(c, &c->argv[1], &m));
    int s = FD_OK;
    if (!m.live) { s = resp_add_null(c->out) ? FD_E_NOMEM : FD_OK; goto done; }
    if (exp && (s = fd_set_expire_ms(exp, flags, c->now_ms, &expire)) != FD_OK) goto done;
    size_t mark = c->out->len;
    if (resp_add_bulk(c->out, m.val, m.vlen)) { s = FD_E_NOMEM; goto done; }
    const char *ev = NULL;
    if (exp && expire <= c->now_ms) { s = mg_delete(c, &c->argv[1]); ev = "del"; }
    else if (exp) { s = mg_set_expire(c, &c->argv[1], expire); ev = "expire"; }
    else if ((flags & FD_SET_PERSIST) && m.expire) { s = mg_set_expire(c, &c->argv[1], 0); ev = "persist"; }
    if (s != FD_OK) c->out->len = mark;
    else if (ev) MG_NOTIFY_ARG(c, GENERIC, ev, 1);
done:
    mg_meta_free(&m);
    return s;
}
int mg_cmd_mget(mg_ctx *c)
{
    int n = c->argc - 1;
    mg_meta *m = calloc((size_t)n, sizeof *m);
    if (!m) return FD_E_NOMEM;
    int s = mg_lookup_many(c, 1, 1, m, n, 1, NULL);
    if (s == FD_OK) {
        if (resp_add_array(c->out, n)) s = FD_E_NOMEM;
        for (int i = 0; i < n && s == FD_OK; i++) {
            int r = (m[i].live && m[i].type == MG_T_STRING) ? resp_add_bulk(c->out, m[i].val, m[i].vlen)
                                                           : resp_add_null(c->out);
            if (r) s = FD_E_NOMEM;
        }
        for (int i = 0; i < n; i++) mg_meta_free(&m[i]);
    }
    free(m);
    return s;
}

int mg_cmd_strlen(mg_ctx *c)
{
    mg_meta m;
    FD_TRY(mg_lookup_string(c, &c->argv[1], &m));
    int r = resp_add_int(c->out, m.live ? (long long)m.vlen : 0);
    mg_meta_free(&m);
    return r ? FD_E_NOMEM : FD_OK;
}

int mg_cmd_getrange(mg_ctx *c)
{
    long long start, end;
    FD_TRY(fd_arg_ll(&c->argv[2], &start));
    FD_TRY(fd_arg_ll(&c->argv[3], &end));
    mg_meta m;
    FD_TRY(mg_lookup_string(c, &c->argv[1], &m));
    int r = fd_str_getrange_reply(c->out, m.val, m.live ? m.vlen : 0, start, end);
    mg_meta_free(&m);
    return r ? FD_E_NOMEM : FD_OK;
}

static int mset_bulk(mg_ctx *c)
{
    mongoc_bulk_operation_t *bulk = mongoc_collection_create_bulk_operation_with_opts(c->coll, NULL);
    bson_t opts = BSON_INITIALIZER;
    bson_append_bool(&opts, "upsert", -1, true);
    int s = FD_OK;
    for (int j = 1; j < c->argc && s == FD_OK; j += 2) {
        bson_t q = BSON_INITIALIZER, d = BSON_INITIALIZER;
        mg_append_key(&q, "_id", c->argv[j].ptr, c->argv[j].len);
        bson_append_utf8(&d, "type", -1, "string", -1);
        mg_append_value(&d, c->argv[j + 1].ptr, c->argv[j + 1].len);
        if (!mongoc_bulk_operation_replace_one_with_opts(bulk, &q, &d, &opts, &c->err)) s = mg_fail(c);
        bson_destroy(&q);
        bson_destroy(&d);
    }
    if (s == FD_OK && !mongoc_bulk_operation_execute(bulk, NULL, &c->err)) s = mg_fail(c);
    mongoc_bulk_operation_destroy(bulk);
    bson_destroy(&opts);
    for (int j = 1; j < c->argc && s == FD_OK; j += 2) MG_NOTIFY_ARG(c, STRING, "set", j);
    return s;
}

int mg_cmd_mset(mg_ctx *c)
{
    if (c->argc % 2 == 0) {
        FD_OUT(resp_add_error(c->out, "ERR wrong number of arguments for 'mset' command"));
        return FD_OK;
    }
    FD_TRY(mset_bulk(c));
    FD_OUT(resp_add_status(c->out, "OK"));
    return FD_OK;
}

int mg_cmd_msetnx(mg_ctx *c)
{
    if (c->argc % 2 == 0) {
        FD_OUT(resp_add_error(c->out, "ERR wrong number of arguments for 'msetnx' command"));
        return FD_OK;
    }
    int n = (c->argc - 1) / 2, any = 0;
    mg_meta *m = calloc((size_t)n, sizeof *m);
    if (!m) return FD_E_NOMEM;
    int s = mg_lookup_many(c, 1, 2, m, n, 0, NULL);
    if (s != FD_OK) { free(m); return s; }
    for (int i = 0; i < n; i++) { if (m[i].live) any = 1; mg_meta_free(&m[i]); }
    free(m);
    if (any) { FD_OUT(resp_add_int(c->out, 0)); return FD_OK; }
    FD_TRY(mset_bulk(c));
    FD_OUT(resp_add_int(c->out, 1));
    return FD_OK;
}

static int incr_generic(mg_ctx *c, long long incr)
{
    const resp_arg *key = &c->argv[1];
    /* fast path: an existing live integer that will not overflow, in one
     * findAndModify: {_id, type: string, value <= MAX-incr (numbers only), live} */
    {
        bson_t q = BSON_INITIALIZER, rng, u = BSON_INITIALIZER, x, reply;
        mg_append_key(&q, "_id", key->ptr, key->len);
        bson_append_utf8(&q, "type", -1, "string", -1);
        bson_append_document_begin(&q, "value", -1, &rng);
        if (incr >= 0) bson_append_int64(&rng, "$lte", -1, LLONG_MAX - incr);
        else bson_append_int64(&rng, "$gte", -1, LLONG_MIN - incr);
        bson_append_document_end(&q, &rng);
        mg_append_live(&q, c->now_ms);
        bson_append_document_begin(&u, "$inc", -1, &x);
        bson_append_int64(&x, "value", -1, incr);
        bson_append_document_end(&u, &x);
        mongoc_find_and_modify_opts_t *fam = mongoc_find_and_modify_opts_new();
        mongoc_find_and_modify_opts_set_update(fam, &u);
        mongoc_find_and_modify_opts_set_flags(fam, MONGOC_FIND_AND_MODIFY_RETURN_NEW);
        bool ok = mongoc_collection_find_and_modify_with_opts(c->coll, &q, fam, &reply, &c->err);
        int found = 0;
        long long v = 0;
        if (ok) {
            bson_iter_t it;
            if (bson_iter_init(&it, &reply) && bson_iter_find_descendant(&it, "value.value", &it)) {
                if (BSON_ITER_HOLDS_INT64(&it)) { v = bson_iter_int64(&it); found = 1; }
                else if (BSON_ITER_HOLDS_INT32(&it)) { v = bson_iter_int32(&it); found = 1; }
                else if (BSON_ITER_HOLDS_DOUBLE(&it)) { v = (long long)bson_iter_double(&it); found = 1; }
            }
        }
        bson_destroy(&reply);
        mongoc_find_and_modify_opts_destroy(fam);
        bson_destroy(&q);
        bson_destroy(&u);
        if (!ok) return mg_fail(c);
        if (found) {
            MG_NOTIFY(c, STRING, "incrby", key->ptr, key->len);
            FD_OUT(resp_add_int(c->out, v));
            return FD_OK;
        }
    }
    /* slow path: missing, expired, not an integer, overflow, wrong type */
    mg_meta m;
    FD_TRY(mg_lookup_string(c, key, &m));
    long long v;
    int s = fd_str_incr(m.val, m.vlen, m.live, incr, &v);
    if (s == FD_OK) {
        char buf[32];
        int n = resp_ll2str(buf, sizeof buf, v);
        s = mg_write_string(c, key, m.live ? m.expire : 0, buf, (size_t)n, NULL, 0);
        if (s == FD_OK) MG_NOTIFY(c, STRING, "incrby", key->ptr, key->len);
        if (s == FD_OK && resp_add_int(c->out, v)) s = FD_E_NOMEM;
    }
    mg_meta_free(&m);
    return s;
}

int mg_cmd_incr(mg_ctx *c) { return incr_generic(c, 1); }
int mg_cmd_decr(mg_ctx *c) { return incr_generic(c, -1); }

static int incrby_generic(mg_ctx *c, int decr)
{
    long long incr;
    int replied;
    FD_TRY(fd_str_parse_incr(&c->argv[2], decr, &incr, c->out, &replied));
    return replied ? FD_OK : incr_generic(c, incr);
}

int mg_cmd_incrby(mg_ctx *c) { return incrby_generic(c, 0); }
int mg_cmd_decrby(mg_ctx *c) { return incrby_generic(c, 1); }

int mg_cmd_incrbyfloat(mg_ctx *c)
{
    mg_meta m;
    FD_TRY(mg_lookup_string(c, &c->argv[1], &m));
    int s = FD_OK;
    size_t n;
    char *buf = malloc(FD_STR_INCRBYFLOAT_BUF);
    if (!buf) { s = FD_E_NOMEM; goto done; }
    if ((s = fd_str_incrbyfloat(m.val, m.vlen, m.live, &c->argv[2], buf, &n)) != FD_OK) goto done;
    s = mg_write_string(c, &c->argv[1], m.live ? m.expire : 0, buf, n, NULL, 0);
    if (s == FD_OK) MG_NOTIFY_ARG(c, STRING, "incrbyfloat", 1);
    if (s == FD_OK && resp_add_bulk(c->out, buf, n)) s = FD_E_NOMEM;
done:
    free(buf);
    mg_meta_free(&m);
    return s;
}

int mg_cmd_append(mg_ctx *c)
{
    mg_meta m;
    const resp_arg *a = &c->argv[2];
    FD_TRY(mg_lookup_string(c, &c->argv[1], &m));
    int s;
    if (!m.live) {
        s = mg_write_string(c, &c->argv[1], 0, a->ptr, a->len, NULL, 0);
        if (s == FD_OK && resp_add_int(c->out, (long long)a->len)) s = FD_E_NOMEM;
    } else if ((long long)m.vlen + (long long)a->len > c->max_bulk) {
        s = FD_E_STRLEN;
    } else {
        size_t total = m.vlen + a->len;
        s = mg_write_string(c, &c->argv[1], m.expire, m.val, m.vlen, a->ptr, a->len);
        if (s == FD_OK && resp_add_int(c->out, (long long)total)) s = FD_E_NOMEM;
    }
    if (s == FD_OK) MG_NOTIFY_ARG(c, STRING, "append", 1);
    mg_meta_free(&m);
    return s;
}

int mg_cmd_setrange(mg_ctx *c)
{
    long long off;
    const resp_arg *a = &c->argv[3];
    FD_TRY(fd_arg_ll(&c->argv[2], &off));
    if (off < 0) return FD_E_OFFSET;
    mg_meta m;
    FD_TRY(mg_lookup_string(c, &c->argv[1], &m));
    size_t olen = m.live ? m.vlen : 0;
    int s = FD_OK;
    if (a->len == 0) { s = resp_add_int(c->out, (long long)olen) ? FD_E_NOMEM : FD_OK; goto done; }
    if (off > c->max_bulk - (long long)a->len) { s = FD_E_STRLEN; goto done; }
    size_t end = (size_t)off + a->len;
    size_t nlen = end > olen ? end : olen;
    char *b = malloc(nlen);
    if (!b) { s = FD_E_NOMEM; goto done; }
    fd_str_setrange(b, m.val, olen, (size_t)off, a);
    s = mg_write_string(c, &c->argv[1], m.live ? m.expire : 0, b, nlen, NULL, 0);
    free(b);
    if (s == FD_OK) MG_NOTIFY_ARG(c, STRING, "setrange", 1);
    if (s == FD_OK && resp_add_int(c->out, (long long)nlen)) s = FD_E_NOMEM;
done:
    mg_meta_free(&m);
    return s;
}
