/* stream_group.c — consumer groups over the stream engine: XGROUP (CREATE,
 * SETID, DESTROY, CREATECONSUMER, DELCONSUMER), XACK, XPENDING, XCLAIM and
 * XAUTOCLAIM, as Redis 7.0's t_stream.c. Private: stream_int.h. */
#include "stream_int.h"

/* ---------------------------------------------------------------- groups & consumers walks */


static int list_cb(void *arg, const uint8_t *sub, size_t sl, const void *v, size_t vl)
{
    list_arg *a = arg;
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 16;
        uint8_t **s2 = realloc(a->subs, cap * sizeof *s2);
        if (!s2) return FD_E_NOMEM;
        a->subs = s2;
        size_t *l2 = realloc(a->sls, cap * sizeof *l2);
        if (!l2) return FD_E_NOMEM;
        a->sls = l2;
        copyv *v2 = realloc(a->vals, cap * sizeof *v2);
        if (!v2) return FD_E_NOMEM;
        a->vals = v2;
        a->cap = cap;
    }
    uint8_t *sp = malloc(sl ? sl : 1), *vp = malloc(vl ? vl : 1);
    if (!sp || !vp) { free(sp); free(vp); return FD_E_NOMEM; }
    if (sl) memcpy(sp, sub, sl);
    if (vl) memcpy(vp, v, vl);
    a->subs[a->n] = sp;
    a->sls[a->n] = sl;
    a->vals[a->n].p = vp;
    a->vals[a->n].n = vl;
    a->n++;
    return a->max && a->n >= a->max ? FD_SW_STOP : FD_SW_NEXT;
}

void sx_list_free(list_arg *a)
{
    for (size_t i = 0; i < a->n; i++) { free(a->subs[i]); free(a->vals[i].p); }
    free(a->subs); free(a->sls); free(a->vals);
    memset(a, 0, sizeof *a);
}

/* Every record under pfx (max 0 = all). */
int sx_list_prefix(sref *s, const uint8_t *pfx, size_t pl, size_t max, list_arg *a)
{
    memset(a, 0, sizeof *a);
    a->max = max;
    int st = IO_WALK(s, pfx, pl, pfx, pl, 0, list_cb, a);
    if (st != FD_OK) sx_list_free(a);
    return st;
}

/* Order a listing of group ('g', name at value + 48) or consumer ('c', at
 * + 16) records by full name: a name longer than 200 bytes is keyed by its
 * prefix and a hash, so key order alone is not name order (Redis's rax is). */
static int name_cmp_at(const copyv *a, const copyv *b, size_t off)
{
    size_t al = a->n > off ? a->n - off : 0, bl = b->n > off ? b->n - off : 0;
    size_t ml = al < bl ? al : bl;
    int r = ml ? memcmp(a->p + off, b->p + off, ml) : 0;
    if (r) return r;
    return al < bl ? -1 : al > bl;
}

static int name_cmp48(const void *x, const void *y) { return name_cmp_at(x, y, 48); }
static int name_cmp16(const void *x, const void *y) { return name_cmp_at(x, y, 16); }

void sx_list_sort_names(list_arg *l, size_t off)
{
    /* only the values are read after a listing of 'g'/'c' records; an
       empty listing has vals NULL, which qsort must not see */
    if (l->n < 2) return;
    qsort(l->vals, l->n, sizeof *l->vals, off == 48 ? name_cmp48 : name_cmp16);
}

/* A consumer's pending entries: its 'q' records counted (not stored, so
 * XACK/XCLAIM need not rewrite the consumer). */
static int count_cb(void *arg, const uint8_t *sub, size_t sl, const void *v, size_t vl)
{
    (void)sub; (void)sl; (void)v; (void)vl;
    (*(long long *)arg)++;
    return FD_SW_NEXT;
}

int sx_cons_pending(sref *s, uint64_t gid, const char *name, size_t nl, long long *n)
{
    uint8_t pfx[FD_SSUB_MAX];
    size_t pl = sx_sk_cpel_pfx(pfx, gid, name, nl);
    *n = 0;
    return IO_WALK(s, pfx, pl, pfx, pl, 0, count_cb, n);
}

/* Delete every record under pfx. */
static int delete_prefix(sref *s, const uint8_t *pfx, size_t pl)
{
    for (;;) {
        list_arg a;
        FD_TRY(sx_list_prefix(s, pfx, pl, 1024, &a));
        size_t n = a.n;
        int st = FD_OK;
        for (size_t i = 0; i < n && st == FD_OK; i++) st = sx_del_ok(IO_DEL(s, a.subs[i], a.sls[i]));
        sx_list_free(&a);
        if (st != FD_OK) return st;
        if (n < 1024) return FD_OK;
    }
}

/* ---------------------------------------------------------------- XGROUP */

int sx_subcmd_arity_err(fd_stream_call *c, const char *full)
{
    return resp_add_errorf(c->out, "ERR wrong number of arguments for '%s' command", full) ? FD_E_NOMEM : FD_OK;
}

int sx_unknown_subcmd(fd_stream_call *c, const char *cmd)
{
    char n[160];
    size_t l = strnlen(c->argv[1].ptr, c->argv[1].len);
    if (l > 128) l = 128;
    memcpy(n, c->argv[1].ptr, l);
    n[l] = 0;
    return resp_add_errorf(c->out, "ERR unknown subcommand '%s'. Try %s HELP.", n, cmd) ? FD_E_NOMEM : FD_OK;
}

int sx_subcmd_syntax_err(fd_stream_call *c, const char *cmd)
{
    char n[160];
    size_t l = strnlen(c->argv[1].ptr, c->argv[1].len);
    if (l > 128) l = 128;
    memcpy(n, c->argv[1].ptr, l);
    n[l] = 0;
    return resp_add_errorf(c->out, "ERR unknown subcommand or wrong number of arguments for '%s'. Try %s HELP.", n, cmd) ? FD_E_NOMEM : FD_OK;
}

int sx_add_help(resp_out *o, const char *const *lines)
{
    long long n = 0;
    while (lines[n]) n++;
    if (resp_add_array(o, n)) return FD_E_NOMEM;
    for (long long i = 0; i < n; i++) if (resp_add_status(o, lines[i])) return FD_E_NOMEM;
    return FD_OK;
}

static const char *const xgroup_help[] = {
    "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
    "HELP",
    "    Prints this help.",
    NULL
};


static int group_destroy(sref *s, sgroup *g)
{
    uint8_t k[FD_SSUB_MAX], p[16];
    size_t kl = sx_sk_group(k, g->name, g->nl);
    FD_TRY(sx_del_ok(IO_DEL(s, k, kl)));
    const char tags[3] = { 'c', 'p', 'q' };
    for (int i = 0; i < 3; i++) {
        p[0] = (uint8_t)tags[i];
        sx_put64(p + 1, g->gid);
        FD_TRY(delete_prefix(s, p, 9));
    }
    s->m.ngroups--;
    return FD_OK;
}

/* streamDelConsumer: its pending entries leave the group; the count. */
static int consumer_delete(sref *s, sgroup *g, scons *cn, long long *pending)
{
    uint8_t pfx[FD_SSUB_MAX];
    size_t pl = sx_sk_cpel_pfx(pfx, g->gid, cn->name, cn->nl);
    *pending = 0;
    for (;;) {
        list_arg a;
        FD_TRY(sx_list_prefix(s, pfx, pl, 1024, &a));
        size_t n = a.n;
        int st = FD_OK;
        for (size_t i = 0; i < n && st == FD_OK; i++) {
            uint8_t pk[32];
            size_t pkl = sx_sk_pel(pk, g->gid, sx_get_id(a.subs[i] + a.sls[i] - 16));
            st = sx_del_ok(IO_DEL(s, pk, pkl));
            if (st == FD_OK) st = sx_del_ok(IO_DEL(s, a.subs[i], a.sls[i]));
            (*pending)++;
            g->pel--;
        }
        sx_list_free(&a);
        if (st != FD_OK) return st;
        if (n < 1024) break;
    }
    uint8_t k[FD_SSUB_MAX];
    size_t kl = sx_sk_cons(k, g->gid, cn->name, cn->nl);
    FD_TRY(sx_del_ok(IO_DEL(s, k, kl)));
    g->consumers--;
    return FD_OK;
}

int fd_stream_xgroup(fd_stream_call *c)
{
    const resp_arg *opt = &c->argv[1];
    /* the command table's subcommands and arities (Redis 7.0) */
    struct { const char *name; int arity; const char *full; } subs[] = {
        {"create", -5, "xgroup|create"}, {"setid", -5, "xgroup|setid"}, {"destroy", 4, "xgroup|destroy"},
        {"createconsumer", 5, "xgroup|createconsumer"}, {"delconsumer", 5, "xgroup|delconsumer"},
        {"help", 2, "xgroup|help"},
    };
    int which = -1;
    for (int i = 0; i < 6; i++) if (resp_arg_is(opt, subs[i].name)) which = i;
    if (which < 0) return sx_unknown_subcmd(c, "XGROUP");
    int ar = subs[which].arity;
    if ((ar > 0 && c->argc != ar) || (ar < 0 && c->argc < -ar)) return sx_subcmd_arity_err(c, subs[which].full);
    if (which == 5) return sx_add_help(c->out, xgroup_help);

    int mkstream = 0;
    long long entries_read = INVALID_READ;
    sref s;
    memset(&s, 0, sizeof s);
    sgroup g;
    int have_group = 0, st = FD_OK;
    const resp_arg *key = &c->argv[2], *gname = &c->argv[3];
    /* CREATE's and SETID's options come first, whatever the key (Redis 7.0's
     * xgroupCommand: before the lookup, the key's type and existence) */
    for (int i = 5; (which == 0 || which == 1) && i < c->argc;) {
        if (which == 0 && resp_arg_is(&c->argv[i], "mkstream")) { mkstream = 1; i++; }
        else if (resp_arg_is(&c->argv[i], "entriesread") && i + 1 < c->argc) {
            if (sx_arg_ll(&c->argv[i + 1], &entries_read) != 0) return FD_E_NOTINT;
            if (entries_read < 0 && entries_read != INVALID_READ)
                return sx_err(c, "ERR value for ENTRIESREAD must be positive or -1");
            i += 2;
        } else return sx_subcmd_syntax_err(c, "XGROUP");
    }
    FD_TRY(sx_s_open(c, key, &s));
    if (!mkstream) {
        if (!s.exists) {
            sx_s_close(&s);
            return sx_err(c, "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.");
        }
    }
    if (s.exists) {
        st = sx_group_get(&s, gname->ptr, gname->len, &g);
        if (st == FD_OK) have_group = 1;
        else if (st != FD_NOTFOUND) goto out;
        st = FD_OK;
    }
    if (!mkstream && !have_group && (which == 1 || which == 3 || which == 4)) {
        st = sx_errf_names(c, "NOGROUP No such consumer group '%.*s' for key name '%.*s'", gname, key);
        goto out;
    }
    if (which == 0) {
        if (c->argc > 8) { st = sx_subcmd_syntax_err(c, "XGROUP"); goto out; }
        sid id;
        if (sx_cstr_is(&c->argv[4], "$")) id = s.exists ? s.m.last : SID_MIN;
        else if (sx_parse_arg_id(&c->argv[4], &id, 0, 1) != 0) { st = sx_err(c, E_INVALID_ID); goto out; }
        if (!s.exists && (st = sx_s_create(c, key, &s)) != FD_OK) goto out;
        if (have_group) { st = sx_err(c, "BUSYGROUP Consumer Group name already exists"); goto out; }
        g.name = gname->ptr; g.nl = gname->len;
        g.gid = s.m.next_gid++;
        g.last = id;
        g.entries_read = entries_read;
        g.pel = g.consumers = 0;
        s.m.ngroups++;
        if ((st = sx_group_put(&s, &g)) == FD_OK && (st = sx_s_save(&s)) == FD_OK)
            st = resp_add_status(c->out, "OK") ? FD_E_NOMEM : FD_OK;
        if (st == FD_OK) EV(c, STREAM, "xgroup-create", key);
    } else if (which == 1) {
        if (c->argc != 5 && c->argc != 7) { st = sx_subcmd_syntax_err(c, "XGROUP"); goto out; }
        sid id;
        if (sx_cstr_is(&c->argv[4], "$")) id = s.m.last;
        else if (sx_parse_arg_id(&c->argv[4], &id, 0, 0) != 0) { st = sx_err(c, E_INVALID_ID); goto out; }
        g.last = id;
        g.entries_read = entries_read;
        if ((st = sx_group_put(&s, &g)) == FD_OK) st = resp_add_status(c->out, "OK") ? FD_E_NOMEM : FD_OK;
        if (st == FD_OK) EV(c, STREAM, "xgroup-setid", key);
    } else if (which == 2) {
        if (have_group) {
            st = group_destroy(&s, &g);
            if (st == FD_OK) st = sx_s_save(&s);
            if (st == FD_OK) st = resp_add_int(c->out, 1) ? FD_E_NOMEM : FD_OK;
            if (st == FD_OK) EV(c, STREAM, "xgroup-destroy", key);
        } else st = resp_add_int(c->out, 0) ? FD_E_NOMEM : FD_OK;
    } else if (which == 3) {
        scons cn;
        int created;
        st = sx_cons_lookup_create(&s, &g, c->argv[4].ptr, c->argv[4].len, &cn, &created);
        if (st == FD_OK && created) {
            st = sx_cons_put(&s, &g, &cn);
            if (st == FD_OK) st = sx_group_put(&s, &g);
        }
        if (st == FD_OK) st = resp_add_int(c->out, created) ? FD_E_NOMEM : FD_OK;
    } else if (which == 4) {
        scons cn;
        long long pending = 0;
        st = sx_cons_get(&s, &g, c->argv[4].ptr, c->argv[4].len, &cn);
        if (st == FD_OK) {
            st = consumer_delete(&s, &g, &cn, &pending);
            if (st == FD_OK) st = sx_group_put(&s, &g);
        } else if (st == FD_NOTFOUND) st = FD_OK;
        if (st == FD_OK) st = resp_add_int(c->out, pending) ? FD_E_NOMEM : FD_OK;
        if (st == FD_OK) EV(c, STREAM, "xgroup-delconsumer", key);
    }
out:
    sx_s_close(&s);
    return st;
}

/* ---------------------------------------------------------------- XACK */

int fd_stream_xack(fd_stream_call *c)
{
    sref s;
    FD_TRY(sx_s_open(c, &c->argv[1], &s));
    sgroup g;
    int st = s.exists ? sx_group_get(&s, c->argv[2].ptr, c->argv[2].len, &g) : FD_NOTFOUND;
    if (st == FD_NOTFOUND) { sx_s_close(&s); return resp_add_int(c->out, 0) ? FD_E_NOMEM : FD_OK; }
    if (st != FD_OK) { sx_s_close(&s); return st; }
    int n = c->argc - 3;
    sid *ids = malloc((size_t)n * sizeof *ids);
    if (!ids) { sx_s_close(&s); return FD_E_NOMEM; }
    for (int j = 0; j < n; j++)
        if (sx_parse_arg_id(&c->argv[3 + j], &ids[j], 0, 1) != 0) { free(ids); sx_s_close(&s); return sx_err(c, E_INVALID_ID); }
    long long acked = 0;
    /* consumers touched: adjust counts per consumer once at the end */
    for (int j = 0; j < n && st == FD_OK; j++) {
        snack nk;
        st = sx_nack_get(&s, &g, ids[j], &nk);
        if (st == FD_NOTFOUND) { st = FD_OK; continue; }
        if (st != FD_OK) break;
        uint8_t k[32];
        size_t kl = sx_sk_pel(k, g.gid, ids[j]);
        st = sx_del_ok(IO_DEL(&s, k, kl));
        if (st == FD_OK) st = sx_cpel_del(&s, &g, nk.cons, nk.cl, ids[j]);
        free(nk.cons);
        g.pel--;
        acked++;
    }
    free(ids);
    if (st == FD_OK && acked) st = sx_group_put(&s, &g);
    sx_s_close(&s);
    if (st != FD_OK) return st;
    return resp_add_int(c->out, acked) ? FD_E_NOMEM : FD_OK;
}

/* ---------------------------------------------------------------- XPENDING */

typedef struct pend_arg {
    sref *s; sgroup *g;
    sid end;
    long long count, minidle, n;
    int by_consumer;
    idlist ids;          /* by_consumer: ids to look up after the walk */
} pend_arg;

static int pend_cb(void *arg, const uint8_t *sub, size_t sl, const void *v, size_t vl)
{
    pend_arg *a = arg;
    if (sl < 16) return FD_E_CORRUPT;
    sid id = sx_get_id(sub + sl - 16);
    if (sx_idcmp(id, a->end) > 0 || a->count == 0) return FD_SW_STOP;
    if (a->by_consumer) return sx_idlist_add(&a->ids, id);
    if (vl < 16) return FD_E_CORRUPT;
    const uint8_t *b = v;
    int64_t dt = (int64_t)sx_get64(b);
    if (a->minidle && a->s->c->now_ms - dt < a->minidle) return FD_SW_NEXT;
    resp_out *o = a->s->c->out;
    int64_t el = a->s->c->now_ms - dt;
    if (el < 0) el = 0;
    if (resp_add_array(o, 4) || sx_add_id(o, id) || resp_add_bulk(o, b + 16, vl - 16) ||
        resp_add_int(o, el) || resp_add_int(o, (long long)sx_get64(b + 8))) return FD_E_NOMEM;
    a->n++;
    a->count--;
    return FD_SW_NEXT;
}

int fd_stream_xpending(fd_stream_call *c)
{
    int justinfo = c->argc == 3;
    sid start = SID_MIN, end = SID_MAX;
    long long count = 0, minidle = 0;
    const resp_arg *cname = NULL;
    if (c->argc != 3 && (c->argc < 6 || c->argc > 9)) return FD_E_SYNTAX;
    if (c->argc >= 6) {
        int si = 3;
        if (resp_arg_is(&c->argv[3], "idle")) {
            if (sx_arg_ll(&c->argv[4], &minidle) != 0) return FD_E_NOTINT;
            if (c->argc < 8) return FD_E_SYNTAX;
            si += 2;
        }
        if (sx_arg_ll(&c->argv[si + 2], &count) != 0) return FD_E_NOTINT;
        if (count < 0) count = 0;
        int sx, ex;
        if (sx_parse_interval(&c->argv[si], &start, &sx, 0) != 0) return sx_err(c, E_INVALID_ID);
        if (sx && sx_id_incr(&start) != 0) return sx_err(c, "ERR invalid start ID for the interval");
        if (sx_parse_interval(&c->argv[si + 1], &end, &ex, UINT64_MAX) != 0) return sx_err(c, E_INVALID_ID);
        if (ex && sx_id_decr(&end) != 0) return sx_err(c, "ERR invalid end ID for the interval");
        if (si + 3 < c->argc) cname = &c->argv[si + 3];
    }
    sref s;
    sgroup g;
    int st, done;
    if ((st = sx_s_open_group(c, &s, &g, &done)) != FD_OK || done) return st;
    resp_out *o = c->out;
    size_t mark = o->len;
    uint8_t pfx[FD_SSUB_MAX], from[FD_SSUB_MAX];
    if (justinfo) {
        if (resp_add_array(o, 4) || resp_add_int(o, (long long)g.pel)) { st = FD_E_NOMEM; goto out; }
        if (g.pel == 0) {
            if (resp_add_null(o) || resp_add_null(o) || resp_add_null_array(o)) st = FD_E_NOMEM;
            goto out;
        }
        pfx[0] = 'p';
        sx_put64(pfx + 1, g.gid);
        one_arg a;
        memcpy(from, pfx, 9);
        sx_put_id(from + 9, SID_MIN);
        if ((st = sx_walk_one(&s, pfx, 9, from, 25, 0, &a)) != FD_OK) goto out;
        sid first = sx_get_id(a.sub + 9);
        free(a.v.p);
        sx_put_id(from + 9, SID_MAX);
        if ((st = sx_walk_one(&s, pfx, 9, from, 25, 1, &a)) != FD_OK) goto out;
        sid last = sx_get_id(a.sub + 9);
        free(a.v.p);
        if (sx_add_id(o, first) || sx_add_id(o, last)) { st = FD_E_NOMEM; goto out; }
        pfx[0] = 'c';
        list_arg l;
        if ((st = sx_list_prefix(&s, pfx, 9, 0, &l)) != FD_OK) goto out;
        sx_list_sort_names(&l, 16);
        size_t m2 = o->len;
        long long nc = 0;
        for (size_t i = 0; i < l.n && st == FD_OK; i++) {
            if (l.vals[i].n < 16) { st = FD_E_CORRUPT; break; }
            long long pel;
            if ((st = sx_cons_pending(&s, g.gid, (const char *)l.vals[i].p + 16, l.vals[i].n - 16, &pel)) != FD_OK) break;
            if (!pel) continue;
            if (resp_add_array(o, 2) || resp_add_bulk(o, l.vals[i].p + 16, l.vals[i].n - 16) ||
                resp_add_bulk_ll(o, (long long)pel)) st = FD_E_NOMEM;
            nc++;
        }
        sx_list_free(&l);
        if (st == FD_OK) st = sx_insert_header(o, m2, 'a', nc);
        goto out;
    }
    pend_arg a = { &s, &g, end, count, minidle, 0, 0, {0} };
    size_t pl;
    if (cname) {
        scons cn;
        st = sx_cons_get(&s, &g, cname->ptr, cname->len, &cn);
        if (st == FD_NOTFOUND) { st = resp_add_array(o, 0) ? FD_E_NOMEM : FD_OK; goto out; }
        if (st != FD_OK) goto out;
        pl = sx_sk_cpel_pfx(pfx, g.gid, cname->ptr, cname->len);
        a.by_consumer = 1;
    } else {
        pfx[0] = 'p';
        sx_put64(pfx + 1, g.gid);
        pl = 9;
    }
    memcpy(from, pfx, pl);
    sx_put_id(from + pl, start);
    if (count) st = IO_WALK(&s, pfx, pl, from, pl + 16, 0, pend_cb, &a);
    if (st == FD_OK && a.by_consumer) {
        for (size_t i = 0; i < a.ids.n && st == FD_OK && a.count; i++) {
            snack nk;
            st = sx_nack_get(&s, &g, a.ids.v[i], &nk);
            if (st == FD_NOTFOUND) { st = FD_OK; continue; }
            if (st != FD_OK) break;
            if (!(minidle && c->now_ms - nk.dtime < minidle)) {
                int64_t el = c->now_ms - nk.dtime;
                if (el < 0) el = 0;
                if (resp_add_array(o, 4) || sx_add_id(o, nk.id) || resp_add_bulk(o, nk.cons, nk.cl) ||
                    resp_add_int(o, el) || resp_add_int(o, (long long)nk.dcount)) st = FD_E_NOMEM;
                a.n++;
                a.count--;
            }
            free(nk.cons);
        }
    }
    free(a.ids.v);
    if (st == FD_OK) st = sx_insert_header(o, mark, 'a', a.n);
out:
    if (st != FD_OK) o->len = mark;
    sx_s_close(&s);
    return st;
}

/* ---------------------------------------------------------------- XCLAIM / XAUTOCLAIM */

/* Give pending entry nk (id) to consumer cn; delivery time and count. */
static int claim_one(sref *s, sgroup *g, scons *cn, snack *nk, int had_owner, int64_t dtime, uint64_t dcount)
{
    int st = FD_OK;
    int same = had_owner && nk->cl == cn->nl && memcmp(nk->cons, cn->name, cn->nl) == 0;
    if (!same) {
        if (had_owner) {
            st = sx_cpel_del(s, g, nk->cons, nk->cl, nk->id);
        }
        if (st == FD_OK) st = sx_cpel_put(s, g, cn->name, cn->nl, nk->id);
        cn->pel++;
    }
    if (st == FD_OK) st = sx_nack_put(s, g, nk->id, dtime, dcount, cn->name, cn->nl);
    return st;
}

/* A pending entry whose stream entry is gone leaves the PEL. */
static int nack_drop(sref *s, sgroup *g, snack *nk, scons *mine)
{
    uint8_t k[32];
    size_t kl = sx_sk_pel(k, g->gid, nk->id);
    int st = sx_del_ok(IO_DEL(s, k, kl));
    if (st == FD_OK) st = sx_cpel_del(s, g, nk->cons, nk->cl, nk->id);
    (void)mine;
    g->pel--;
    return st;
}

/* The claiming consumer's record (seen time; a new consumer). */
static int claimer_flush(sref *s, sgroup *g, scons *cn, int *have)
{
    if (!*have) return FD_OK;
    return sx_cons_put(s, g, cn);
}

int fd_stream_xclaim(fd_stream_call *c)
{
    sref s;
    sgroup g;
    int st, done;
    if ((st = sx_s_open_group(c, &s, &g, &done)) != FD_OK || done) return st;
    long long minidle, retrycount = -1, dtime = -1;
    int force = 0, justid = 0;
    if (sx_arg_ll(&c->argv[4], &minidle) != 0) { sx_s_close(&s); return sx_err(c, "ERR Invalid min-idle-time argument for XCLAIM"); }
    if (minidle < 0) minidle = 0;
    int j;
    sid tmp;
    for (j = 5; j < c->argc; j++) if (sx_parse_arg_id(&c->argv[j], &tmp, 0, 1) != 0) break;
    int last_id_arg = j - 1;
    int64_t now = c->now_ms;
    sid last_id = SID_MIN;
    for (; j < c->argc; j++) {
        int more = c->argc - 1 - j;
        const resp_arg *o = &c->argv[j];
        if (resp_arg_is(o, "force")) force = 1;
        else if (resp_arg_is(o, "justid")) justid = 1;
        else if (resp_arg_is(o, "idle") && more) {
            j++;
            if (sx_arg_ll(&c->argv[j], &dtime) != 0) { sx_s_close(&s); return sx_err(c, "ERR Invalid IDLE option argument for XCLAIM"); }
            dtime = now - dtime;
        } else if (resp_arg_is(o, "time") && more) {
            j++;
            if (sx_arg_ll(&c->argv[j], &dtime) != 0) { sx_s_close(&s); return sx_err(c, "ERR Invalid TIME option argument for XCLAIM"); }
        } else if (resp_arg_is(o, "retrycount") && more) {
            j++;
            if (sx_arg_ll(&c->argv[j], &retrycount) != 0) { sx_s_close(&s); return sx_err(c, "ERR Invalid RETRYCOUNT option argument for XCLAIM"); }
        } else if (resp_arg_is(o, "lastid") && more) {
            j++;
            if (sx_parse_arg_id(&c->argv[j], &last_id, 0, 1) != 0) { sx_s_close(&s); return sx_err(c, E_INVALID_ID); }
        } else {
            char n[256];
            size_t l = strnlen(o->ptr, o->len);
            if (l > sizeof n - 1) l = sizeof n - 1;
            memcpy(n, o->ptr, l);
            n[l] = 0;
            sx_s_close(&s);
            return resp_add_errorf(c->out, "ERR Unrecognized XCLAIM option '%s'", n) ? FD_E_NOMEM : FD_OK;
        }
    }
    int gdirty = 0;
    if (sx_idcmp(last_id, g.last) > 0) { g.last = last_id; gdirty = 1; }
    if (dtime != -1) { if (dtime < 0 || dtime > now) dtime = now; }
    else dtime = now;

    resp_out *o = c->out;
    size_t mark = o->len;
    long long n = 0;
    scons cn;
    int have_cn = 0;
    for (j = 5; j <= last_id_arg && st == FD_OK; j++) {
        sid id;
        sx_parse_arg_id(&c->argv[j], &id, 0, 1);
        snack nk;
        st = sx_nack_get(&s, &g, id, &nk);
        int have_nack = st == FD_OK;
        if (st != FD_OK && st != FD_NOTFOUND) break;
        st = sx_entry_exists(&s, id);
        if (st == FD_NOTFOUND) {
            st = FD_OK;
            if (have_nack) {
                st = nack_drop(&s, &g, &nk, have_cn ? &cn : NULL);
                gdirty = 1;
                free(nk.cons);
            }
            continue;
        }
        if (st != FD_OK) { if (have_nack) free(nk.cons); break; }
        int had_owner = have_nack;
        uint64_t dcount = 0;
        if (force && !have_nack) {
            nk.id = id; nk.cons = NULL; nk.cl = 0; nk.dtime = now; nk.dcount = 1;
            have_nack = 1;
            g.pel++;
            gdirty = 1;
        }
        if (!have_nack) continue;
        if (had_owner && minidle && now - nk.dtime < minidle) { free(nk.cons); continue; }
        if (!have_cn) {
            int created;
            st = sx_cons_lookup_create(&s, &g, c->argv[3].ptr, c->argv[3].len, &cn, &created);
            if (st != FD_OK) { free(nk.cons); break; }
            cn.seen = now;
            have_cn = 1;
            gdirty = 1;
        }
        dcount = nk.dcount;
        if (retrycount >= 0) dcount = (uint64_t)retrycount;
        else if (!justid) dcount++;
        st = claim_one(&s, &g, &cn, &nk, had_owner, dtime, dcount);
        free(nk.cons);
        if (st != FD_OK) break;
        if (justid) { if (sx_add_id(o, id)) st = FD_E_NOMEM; }
        else {
            st = sx_reply_entry_at(&s, id);
            if (st == FD_NOTFOUND) st = resp_add_null_array(o) ? FD_E_NOMEM : FD_OK;
        }
        n++;
    }
    if (st == FD_OK) st = claimer_flush(&s, &g, &cn, &have_cn);
    if (st == FD_OK && gdirty) st = sx_group_put(&s, &g);
    if (st == FD_OK) st = sx_insert_header(o, mark, 'a', n);
    if (st != FD_OK) o->len = mark;
    sx_s_close(&s);
    return st;
}

typedef struct ac_arg { idlist ids; long long max; } ac_arg;

static int ac_cb(void *arg, const uint8_t *sub, size_t sl, const void *v, size_t vl)
{
    (void)v; (void)vl;
    ac_arg *a = arg;
    if (sl != 25) return FD_E_CORRUPT;
    int st = sx_idlist_add(&a->ids, sx_get_id(sub + 9));
    if (st != FD_OK) return st;
    return (long long)a->ids.n >= a->max ? FD_SW_STOP : FD_SW_NEXT;
}

int fd_stream_xautoclaim(fd_stream_call *c)
{
    long long minidle, count = 100;
    const long long attempts_factor = 10;
    sid start;
    int sx, justid = 0;
    if (sx_arg_ll(&c->argv[4], &minidle) != 0) return sx_err(c, "ERR Invalid min-idle-time argument for XAUTOCLAIM");
    if (minidle < 0) minidle = 0;
    if (sx_parse_interval(&c->argv[5], &start, &sx, 0) != 0) return sx_err(c, E_INVALID_ID);
    if (sx && sx_id_incr(&start) != 0) return sx_err(c, "ERR invalid start ID for the interval");
    for (int j = 6; j < c->argc; j++) {
        int more = c->argc - 1 - j;
        if (resp_arg_is(&c->argv[j], "count") && more) {
            long long maxc = LONG_MAX / 16;
            if (sx_arg_ll(&c->argv[j + 1], &count) != 0 || count < 1 || count > maxc) return sx_err(c, "ERR COUNT must be > 0");
            j++;
        } else if (resp_arg_is(&c->argv[j], "justid")) justid = 1;
        else return FD_E_SYNTAX;
    }
    sref s;
    sgroup g;
    int st, done;
    if ((st = sx_s_open_group(c, &s, &g, &done)) != FD_OK || done) return st;
    long long attempts = count * attempts_factor;
    int64_t now = c->now_ms;
    /* the candidates: up to attempts + 1 pending ids from start (the extra one is the cursor) */
    uint8_t pfx[9], from[25];
    pfx[0] = 'p';
    sx_put64(pfx + 1, g.gid);
    memcpy(from, pfx, 9);
    sx_put_id(from + 9, start);
    ac_arg a = { {0}, attempts + 1 };
    st = IO_WALK(&s, pfx, 9, from, 25, 0, ac_cb, &a);
    resp_out *o = c->out;
    size_t mark = o->len;
    idlist deleted = {0};
    long long n = 0;
    size_t i = 0;
    scons cn;
    int have_cn = 0, gdirty = 0;
    if (st == FD_OK && (resp_add_array(o, 3))) st = FD_E_NOMEM;
    size_t cursor_at = o->len;
    size_t claimed_at = o->len;
    while (st == FD_OK && attempts-- && count && i < a.ids.n) {
        sid id = a.ids.v[i++];
        snack nk;
        st = sx_nack_get(&s, &g, id, &nk);
        if (st == FD_NOTFOUND) { st = FD_OK; continue; }
        if (st != FD_OK) break;
        st = sx_entry_exists(&s, id);
        if (st == FD_NOTFOUND) {
            st = nack_drop(&s, &g, &nk, have_cn ? &cn : NULL);
            gdirty = 1;
            free(nk.cons);
            if (st == FD_OK) st = sx_idlist_add(&deleted, id);
            count--;
            continue;
        }
        if (st != FD_OK) { free(nk.cons); break; }
        if (minidle && now - nk.dtime < minidle) { free(nk.cons); continue; }
        if (!have_cn) {
            int created;
            st = sx_cons_lookup_create(&s, &g, c->argv[3].ptr, c->argv[3].len, &cn, &created);
            if (st != FD_OK) { free(nk.cons); break; }
            cn.seen = now;
            have_cn = 1;
            gdirty = 1;
        }
        st = claim_one(&s, &g, &cn, &nk, 1, now, justid ? nk.dcount : nk.dcount + 1);
        free(nk.cons);
        if (st != FD_OK) break;
        if (justid) { if (sx_add_id(o, id)) st = FD_E_NOMEM; }
        else st = sx_reply_entry_at(&s, id);
        n++;
        count--;
    }
    /* the cursor: the next pending id after the last one looked at */
    sid next = SID_MIN;
    if (st == FD_OK) {
        if (i < a.ids.n) next = a.ids.v[i];
    }
    if (st == FD_OK) st = sx_insert_header(o, claimed_at, 'a', n);
    if (st == FD_OK) {
        resp_out h;
        resp_out_init(&h, o->proto);
        if (sx_add_id(&h, next) || resp_out_reserve(o, h.len)) st = FD_E_NOMEM;
        else {
            memmove(o->data + cursor_at + h.len, o->data + cursor_at, o->len - cursor_at);
            memcpy(o->data + cursor_at, h.data, h.len);
            o->len += h.len;
        }
        resp_out_free(&h);
    }
    if (st == FD_OK) {
        if (resp_add_array(o, (long long)deleted.n)) st = FD_E_NOMEM;
        for (size_t k = 0; st == FD_OK && k < deleted.n; k++) if (sx_add_id(o, deleted.v[k])) st = FD_E_NOMEM;
    }
    if (st == FD_OK) st = claimer_flush(&s, &g, &cn, &have_cn);
    if (st == FD_OK && gdirty) st = sx_group_put(&s, &g);
    if (st != FD_OK) o->len = mark;
    free(a.ids.v);
    free(deleted.v);
    sx_s_close(&s);
    return st;
}
