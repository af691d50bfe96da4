/* mg_sort.c — the MongoDB backend's SORT, SORT_RO, COPY, OBJECT and MEMORY.
 * SORT's rules are storage/value/sort.h's; OBJECT/MEMORY's texts
 * storage/value/introspect.h's. This file loads documents and writes them.
 *
 * SORT with BY/GET patterns reads one document per element and pattern
 * (mg_backend.c queues such a SORT on every worker, so the keys its
 * patterns name are not written meanwhile); STORE replaces the destination
 * with one list document. COPY writes the source's document under the new
 * _id (its TTL included). MEMORY USAGE is the document's BSON size plus an
 * estimate of its index entries (SAMPLES is accepted: the whole document is
 * read anyway). */
#include <stdlib.h>
#include <string.h>

#include "mg.h"
#include "../value/sort.h"
#include "../value/introspect.h"

/* ---------------------------------------------------------------- SORT */

/* What SORT's load holds: the source's elements and the last fetch's
 * document (its value is returned); fetch's ud. */
typedef struct fetch_state {
    mg_ctx *c;
    mg_meta m;      /* the document of the last fetch */
    mg_hash h;
    mg_meta sm;     /* the source's */
    mg_list L;
    mg_zset Z;
} fetch_state;

static void fetch_release(fetch_state *f)
{
    mg_hash_free(&f->h);
    mg_meta_free(&f->m);
}

static int sort_fetch(void *ud, const char *key, size_t kl, const char *field, size_t fl,
                      const char **v, size_t *vl)
{
    fetch_state *f = ud;
    fetch_release(f);
    resp_arg k = { (char *)key, kl };
    int s = field ? mg_hash_load(f->c, &k, &f->m, &f->h) : mg_lookup_string(f->c, &k, &f->m);
    if (s == FD_E_WRONGTYPE) { memset(&f->m, 0, sizeof f->m); return 0; }
    if (s != FD_OK) { memset(&f->m, 0, sizeof f->m); return -s; }
    if (!f->m.live) return 0;
    if (!field) { *v = f->m.val; *vl = f->m.vlen; return 1; }
    for (size_t i = 0; i < f->h.n; i++) {
        if (f->h.a[i].fl == fl && memcmp(f->h.a[i].f, field, fl) == 0) {
            *v = f->h.a[i].v;
            *vl = f->h.a[i].vl;
            return 1;
        }
    }
    return 0;
}

/* fd_sort_io.load: the list, set or sorted set's elements */
static int sort_load(void *ud, const resp_arg *key, void **hold, int *type, fd_sort_elem **el, size_t *n)
{
    mg_ctx *c = ud;
    fetch_state *f = calloc(1, sizeof *f);
    if (!(*hold = f)) return FD_E_NOMEM;
    f->c = c;
    mg_meta m;
    c->read = 1;                          /* the source: lookupKeyRead (keymiss), once */
    int s = mg_lookup(c, key, &m, 0);
    c->read = 0;
    FD_TRY(s);                            /* mg_lookup freed m */
    int mt = m.live ? m.type : MG_T_NONE;
    mg_meta_free(&m);
    *n = 0;
    if (mt == MG_T_LIST || mt == MG_T_SET) {
        *type = mt == MG_T_SET ? FD_SORT_SET : FD_SORT_LIST;
        if ((s = mg_array_load(c, key, &f->sm, &f->L, mt)) != FD_OK) { memset(&f->sm, 0, sizeof f->sm); return s; }
        *n = f->L.n;
    } else if (mt == MG_T_ZSET) {
        *type = FD_SORT_ZSET;
        if ((s = mg_zset_load(c, key, &f->sm, &f->Z)) != FD_OK) { memset(&f->sm, 0, sizeof f->sm); return s; }
        *n = f->Z.n;
    } else if (mt != MG_T_NONE) return FD_E_WRONGTYPE;
    if (!(*el = malloc((*n ? *n : 1) * sizeof **el))) return FD_E_NOMEM;
    for (size_t i = 0; i < *n; i++) {
        if (*type == FD_SORT_ZSET) { (*el)[i].p = f->Z.a[i].m; (*el)[i].l = f->Z.a[i].ml; }
        else { (*el)[i].p = f->L.p[i]; (*el)[i].l = f->L.l[i]; }
    }
    return FD_OK;
}

static void sort_release(void *hold)
{
    fetch_state *f = hold;
    fetch_release(f);
    mg_list_free(&f->L);
    mg_zset_free(&f->Z);
    mg_meta_free(&f->sm);
    free(f);
}

/* fd_sort_io.store: the destination becomes a list (no TTL), or goes when empty */
static int sort_store(void *ud, const resp_arg *dst, const fd_sort_result *res)
{
    mg_ctx *c = ud;
    int s;
    if (!res->n) {
        int was = 0;
        s = mg_key_live(c, dst, &was);
        if (s == FD_OK) s = mg_delete(c, dst);
        if (s == FD_OK && was) MG_NOTIFY(c, GENERIC, "del", dst->ptr, dst->len);
        return s;
    }
    mg_list R = {0};
    if ((s = mg_list_reserve(&R, (size_t)res->n)) == FD_OK) {
        size_t off = 0;
        const char *p; size_t l;
        while (fd_sort_result_next(res, &off, &p, &l)) { R.p[R.n] = p; R.l[R.n] = l; R.n++; }
        mg_meta none;
        memset(&none, 0, sizeof none);
        s = mg_array_save(c, dst, &none, &R, MG_T_LIST);
        if (s == FD_OK) MG_NOTIFY(c, LIST, "sortstore", dst->ptr, dst->len);
    }
    mg_list_free(&R);
    return s;
}

static const fd_sort_io sort_io = { sort_load, sort_fetch, sort_release, sort_store };

int mg_cmd_sort(mg_ctx *c)    { return fd_sort_cmd(&sort_io, c, c->argv, c->argc, 0, c->out); }
int mg_cmd_sort_ro(mg_ctx *c) { return fd_sort_cmd(&sort_io, c, c->argv, c->argc, 1, c->out); }

/* ---------------------------------------------------------------- COPY */

int mg_cmd_copy(mg_ctx *c)
{
    int replace, replied;
    FD_TRY(fd_parse_copy_opts(c->argv, c->argc, &replace, c->out, &replied));
    if (replied) return FD_OK;
    const resp_arg *sa = &c->argv[1], *da = &c->argv[2];
    mg_meta sm;
    c->read = 1;                          /* the source: lookupKeyRead (keymiss) */
    int s0 = mg_lookup(c, sa, &sm, 1);
    c->read = 0;
    FD_TRY(s0);
    if (!sm.live) { mg_meta_free(&sm); FD_OUT(resp_add_int(c->out, 0)); return FD_OK; }
    int exists;
    int s = mg_key_live(c, da, &exists);
    if (s != FD_OK) { mg_meta_free(&sm); return s; }
    if (exists && !replace) { mg_meta_free(&sm); FD_OUT(resp_add_int(c->out, 0)); return FD_OK; }
    s = sm.type == MG_T_STREAM ? mg_stream_copy(c, da, sm.doc) : mg_write_doc_copy(c, da, sm.doc);
    mg_meta_free(&sm);
    FD_TRY(s);
    MG_NOTIFY(c, GENERIC, "copy_to", da->ptr, da->len);
    FD_OUT(resp_add_int(c->out, 1));
    return FD_OK;
}

/* ---------------------------------------------------------------- OBJECT / MEMORY */

static int obj_type(int t)
{
    return t == MG_T_STRING ? FD_OBJ_STRING : t == MG_T_LIST ? FD_OBJ_LIST : t == MG_T_HASH ? FD_OBJ_HASH
         : t == MG_T_SET ? FD_OBJ_SET : FD_OBJ_ZSET;
}

int mg_cmd_object(mg_ctx *c)
{
    int sub, r = fd_object_parse(c->argv, c->argc, c->out, &sub);
    if (r) return r < 0 ? FD_E_NOMEM : FD_OK;
    mg_meta m;
    c->read = 0;                          /* Redis's OBJECT: LOOKUP_NONOTIFY, no keymiss */
    FD_TRY(mg_lookup(c, &c->argv[2], &m, sub == FD_OBJ_ENCODING));
    if (!m.live) r = resp_add_null(c->out);
    else r = fd_object_reply(sub, obj_type(m.type), m.val, m.type == MG_T_STRING ? m.vlen : 0, c->out);
    mg_meta_free(&m);
    return r ? FD_E_NOMEM : FD_OK;
}

int mg_cmd_memory(mg_ctx *c)
{
    long long samples;
    int r = fd_memory_parse(c->argv, c->argc, c->out, &samples);
    if (r) return r < 0 ? FD_E_NOMEM : FD_OK;
    mg_meta m;
    c->read = 0;                          /* Redis's MEMORY USAGE: LOOKUP_NONOTIFY, no keymiss */
    FD_TRY(mg_lookup(c, &c->argv[2], &m, 1));
    if (!m.live) r = resp_add_null(c->out);
    else {
        /* the document, its _id index entry (the key + ~16 bytes of
         * WiredTiger overhead), and its TTL index entry */
        long long bytes = (long long)m.doc->len + (long long)c->argv[2].len + 16;
        if (m.expire) bytes += 8 + 16;
        r = resp_add_int(c->out, bytes);
    }
    mg_meta_free(&m);
    return r ? FD_E_NOMEM : FD_OK;
}
