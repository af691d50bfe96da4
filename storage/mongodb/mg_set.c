/* mg_set.c — the MongoDB backend's sets (SPOP/SRANDMEMBER/SSCAN: mg_scan.c).
 *
 * { _id, type: "set", value: [ BinData, ... ], expireAt? }: the members,
 * each once. Read, change here, write back, as lists (the loader and saver
 * are mg_list.c's mg_array_load/mg_array_save). */
#include <stdlib.h>
#include <string.h>

#include "mg.h"

static void set_keyat(const void *coll, size_t i, const char **p, size_t *l)
{
    const mg_list *L = coll;
    *p = L->p[i]; *l = L->l[i];
}

static long set_find(mg_list *L, const char *p, size_t n)
{
    return mg_ix_find(&L->ix, L, L->n, set_keyat, p, n);
}

static void set_remove_at(mg_list *L, size_t i)
{
    mg_ix_invalidate(&L->ix);
    memmove(L->p + i, L->p + i + 1, (L->n - i - 1) * sizeof *L->p);
    memmove(L->l + i, L->l + i + 1, (L->n - i - 1) * sizeof *L->l);
    L->n--;
}

/* The keyspace event of a set command, from its integer reply above 0
 * (Redis's t_set.c), then "del" when the set is gone (removals). */
static int set_events(mg_ctx *c, int s, size_t mark, const char *ev, int dels)
{
    long long v = 0;
    if (s != FD_OK || !mg_reply_int(c, mark, &v) || v <= 0) return s;
    MG_NOTIFY_ARG(c, SET, ev, 1);
    if (dels) mg_notify_del_if_gone(c, &c->argv[1]);
    return s;
}
#define SET_EV(call, ev, dels) \
    do { size_t mark_ = c->out->len; return set_events(c, (call), mark_, ev, dels); } while (0)
static int sadd_do(mg_ctx *c);
static int srem_do(mg_ctx *c);
int mg_cmd_sadd(mg_ctx *c) { SET_EV(sadd_do(c), "sadd", 0); }
int mg_cmd_srem(mg_ctx *c) { SET_EV(srem_do(c), "srem", 1); }

static int sadd_do(mg_ctx *c)
{
    mg_meta m; mg_list L;
    mg_named(c, 2, 1);     /* a big set: only these members (mg_big.c) */
    FD_TRY(mg_array_load(c, &c->argv[1], &m, &L, MG_T_SET));
    long long n = 0;
    for (int j = 2; j < c->argc; j++) {
        if (set_find(&L, c->argv[j].ptr, c->argv[j].len) >= 0) continue;
        if (mg_list_reserve(&L, L.n + 1) != FD_OK) LIST_DONE(FD_E_NOMEM);
        L.p[L.n] = c->argv[j].ptr; L.l[L.n++] = c->argv[j].len;
        n++;
    }
    int s = n ? mg_array_save(c, &c->argv[1], &m, &L, MG_T_SET) : FD_OK;
    if (s == FD_OK && resp_add_int(c->out, n)) s = FD_E_NOMEM;
    LIST_DONE(s);
}

static int srem_do(mg_ctx *c)
{
    mg_meta m; mg_list L;
    mg_named(c, 2, 1);     /* a big set: only these members (mg_big.c) */
    FD_TRY(mg_array_load(c, &c->argv[1], &m, &L, MG_T_SET));
    long long n = 0;
    for (int j = 2; j < c->argc; j++) {
        long i = set_find(&L, c->argv[j].ptr, c->argv[j].len);
        if (i >= 0) { set_remove_at(&L, (size_t)i); n++; }
    }
    int s = n ? mg_array_save(c, &c->argv[1], &m, &L, MG_T_SET) : FD_OK;
    if (s == FD_OK && resp_add_int(c->out, n)) s = FD_E_NOMEM;
    LIST_DONE(s);
}

int mg_cmd_scard(mg_ctx *c)
{
    mg_meta m; mg_list L;
    mg_named(c, c->argc, 1);     /* a big set: only these members (mg_big.c) */
    FD_TRY(mg_array_load(c, &c->argv[1], &m, &L, MG_T_SET));
    LIST_DONE(resp_add_int(c->out, mg_coll_count(&m, L.n)) ? FD_E_NOMEM : FD_OK);
}

int mg_cmd_sismember(mg_ctx *c)
{
    mg_meta m; mg_list L;
    mg_named(c, 2, 1);     /* a big set: only these members (mg_big.c) */
    FD_TRY(mg_array_load(c, &c->argv[1], &m, &L, MG_T_SET));
    LIST_DONE(resp_add_int(c->out, set_find(&L, c->argv[2].ptr, c->argv[2].len) >= 0) ? FD_E_NOMEM : FD_OK);
}

int mg_cmd_smismember(mg_ctx *c)
{
    mg_meta m; mg_list L;
    mg_named(c, 2, 1);     /* a big set: only these members (mg_big.c) */
    FD_TRY(mg_array_load(c, &c->argv[1], &m, &L, MG_T_SET));
    int r = resp_add_array(c->out, c->argc - 2);
    for (int j = 2; j < c->argc && !r; j++) r = resp_add_int(c->out, set_find(&L, c->argv[j].ptr, c->argv[j].len) >= 0);
    LIST_DONE(r ? FD_E_NOMEM : FD_OK);
}

int mg_cmd_smembers(mg_ctx *c)
{
    mg_meta m; mg_list L;
    FD_TRY(mg_array_load(c, &c->argv[1], &m, &L, MG_T_SET));
    int r = resp_add_set(c->out, (long long)L.n);
    for (size_t i = 0; i < L.n && !r; i++) r = resp_add_bulk(c->out, L.p[i], L.l[i]);
    LIST_DONE(r ? FD_E_NOMEM : FD_OK);
}

int mg_cmd_smove(mg_ctx *c)
{
    mg_meta m, dm; mg_list L, D;
    FD_TRY(mg_array_load(c, &c->argv[1], &m, &L, MG_T_SET));
    int s = mg_lookup(c, &c->argv[2], &dm, 0);
    if (s != FD_OK) LIST_DONE(s);
    int dlive = dm.live, dtype = dm.type;
    mg_meta_free(&dm);
    if (!m.live) LIST_DONE(resp_add_int(c->out, 0) ? FD_E_NOMEM : FD_OK);
    if (dlive && dtype != MG_T_SET) LIST_DONE(FD_E_WRONGTYPE);
    const resp_arg *mb = &c->argv[3];
    long i = set_find(&L, mb->ptr, mb->len);
    if (c->argv[1].len == c->argv[2].len && memcmp(c->argv[1].ptr, c->argv[2].ptr, c->argv[1].len) == 0)
        LIST_DONE(resp_add_int(c->out, i >= 0) ? FD_E_NOMEM : FD_OK);
    if (i < 0) LIST_DONE(resp_add_int(c->out, 0) ? FD_E_NOMEM : FD_OK);
    set_remove_at(&L, (size_t)i);
    if ((s = mg_array_save(c, &c->argv[1], &m, &L, MG_T_SET)) != FD_OK) LIST_DONE(s);
    MG_NOTIFY_ARG(c, SET, "srem", 1);
    if (!L.n) MG_NOTIFY_ARG(c, GENERIC, "del", 1);
    if ((s = mg_array_load(c, &c->argv[2], &dm, &D, MG_T_SET)) != FD_OK) LIST_DONE(s);
    if (set_find(&D, mb->ptr, mb->len) < 0) {
        if (mg_list_reserve(&D, D.n + 1) != FD_OK) s = FD_E_NOMEM;
        else {
            D.p[D.n] = mb->ptr; D.l[D.n++] = mb->len;
            s = mg_array_save(c, &c->argv[2], &dm, &D, MG_T_SET);
            if (s == FD_OK) MG_NOTIFY_ARG(c, SET, "sadd", 2);
        }
    }
    mg_list_free(&D);
    mg_meta_free(&dm);
    if (s == FD_OK && resp_add_int(c->out, 1)) s = FD_E_NOMEM;
    LIST_DONE(s);
}

enum { OP_INTER, OP_UNION, OP_DIFF };

/* The sets of argv[first .. first+n) loaded (every key's type is checked,
 * WRONGTYPE even when another key is missing), and op's result in out
 * (pointing into their documents; limit > 0: stop at that many). */
typedef struct mg_setop { int n, loaded; mg_meta *ms; mg_list *ls; mg_list out; } mg_setop;

static void setop_free(mg_setop *o)
{
    mg_list_free(&o->out);
    for (int j = 0; j < o->loaded; j++) { mg_list_free(&o->ls[j]); mg_meta_free(&o->ms[j]); }
    free(o->ms);
    free(o->ls);
}

static int setop_compute(mg_ctx *c, int first, int n, int op, long long limit, mg_setop *o)
{
    memset(o, 0, sizeof *o);
    o->n = n;
    o->ms = calloc((size_t)n, sizeof *o->ms);
    o->ls = calloc((size_t)n, sizeof *o->ls);
    int s = (o->ms && o->ls) ? FD_OK : FD_E_NOMEM, empty = 0, smallest = -1;
    mg_list *ls = o->ls;
    for (int j = 0; j < n && s == FD_OK; j++) {
        s = mg_array_load(c, &c->argv[first + j], &o->ms[j], &ls[j], MG_T_SET);
        if (s != FD_OK) break;
        o->loaded = j + 1;
        if (!o->ms[j].live) { if (op == OP_INTER) empty = 1; continue; }
        if (smallest < 0 || ls[j].n < ls[smallest].n) smallest = j;
    }
    if (s != FD_OK || empty) return s;
    for (int i = 0; i < n && s == FD_OK; i++) {
        if ((op == OP_INTER && i != smallest) || (op == OP_DIFF && i != 0)) continue;
        for (size_t e = 0; e < ls[i].n && s == FD_OK; e++) {
            int keep = 1;
            for (int j = 0; j < n && keep; j++) {
                if (j == i) continue;
                if (op == OP_UNION && j > i) break;      /* only the earlier sets */
                int y = set_find(&ls[j], ls[i].p[e], ls[i].l[e]) >= 0;
                keep = op == OP_INTER ? y : !y;
            }
            if (!keep) continue;
            if (mg_list_reserve(&o->out, o->out.n + 1) != FD_OK) { s = FD_E_NOMEM; break; }
            o->out.p[o->out.n] = ls[i].p[e]; o->out.l[o->out.n++] = ls[i].l[e];
            if (limit > 0 && (long long)o->out.n >= limit) return FD_OK;
        }
    }
    return s;
}

static int setop_reply(mg_ctx *c, int op)
{
    mg_setop o;
    int s = setop_compute(c, 1, c->argc - 1, op, 0, &o);
    if (s == FD_OK) {
        int r = resp_add_set(c->out, (long long)o.out.n);
        for (size_t i = 0; i < o.out.n && !r; i++) r = resp_add_bulk(c->out, o.out.p[i], o.out.l[i]);
        if (r) s = FD_E_NOMEM;
    }
    setop_free(&o);
    return s;
}

int mg_cmd_sinter(mg_ctx *c) { return setop_reply(c, OP_INTER); }
int mg_cmd_sunion(mg_ctx *c) { return setop_reply(c, OP_UNION); }
int mg_cmd_sdiff(mg_ctx *c)  { return setop_reply(c, OP_DIFF); }

/* S*STORE: the result replaces the destination whatever its type; an
 * empty result deletes it. */
static int setop_store(mg_ctx *c, int op)
{
    mg_setop o;
    c->read = 1;                          /* the sources: lookupKeyRead (keymiss) */
    int s = setop_compute(c, 2, c->argc - 2, op, 0, &o);
    c->read = 0;
    int was = 0;
    if (s == FD_OK && !o.out.n && fd_notify_on(FD_NOTIFY_GENERIC)) s = mg_key_live(c, &c->argv[1], &was);
    if (s == FD_OK) {
        mg_meta none;
        memset(&none, 0, sizeof none);
        none.found = 1;                   /* empty: delete whatever is there */
        s = mg_array_save(c, &c->argv[1], &none, &o.out, MG_T_SET);
    }
    static const char *const ev[] = { [OP_INTER] = "sinterstore", [OP_UNION] = "sunionstore", [OP_DIFF] = "sdiffstore" };
    if (s == FD_OK && o.out.n) MG_NOTIFY_ARG(c, SET, ev[op], 1);
    else if (s == FD_OK && was) MG_NOTIFY_ARG(c, GENERIC, "del", 1);
    if (s == FD_OK && resp_add_int(c->out, (long long)o.out.n)) s = FD_E_NOMEM;
    setop_free(&o);
    return s;
}

int mg_cmd_sinterstore(mg_ctx *c) { return setop_store(c, OP_INTER); }
int mg_cmd_sunionstore(mg_ctx *c) { return setop_store(c, OP_UNION); }
int mg_cmd_sdiffstore(mg_ctx *c)  { return setop_store(c, OP_DIFF); }

int mg_cmd_sintercard(mg_ctx *c)
{
    long long numkeys, limit;
    int replied, st = fd_parse_sintercard(c->argv, c->argc, &numkeys, &limit, c->out, &replied);
    if (st != FD_OK || replied) return st;
    mg_setop o;
    int s = setop_compute(c, 2, (int)numkeys, OP_INTER, limit, &o);
    if (s == FD_OK && resp_add_int(c->out, (long long)o.out.n)) s = FD_E_NOMEM;
    setop_free(&o);
    return s;
}
