/* stream_info.c — XINFO STREAM/GROUPS/CONSUMERS, and a stream's DUMP /
 * RESTORE payload (RDB type 19, storage/value/rdb.h). Private:
 * stream_int.h. */
#include "stream_int.h"

/* ---------------------------------------------------------------- XINFO */

/* rax node count of a set of sorted 16-byte keys (Redis's radix-tree-nodes). */
static long long rax_nodes(uint8_t (*k)[16], size_t lo, size_t hi, int depth)
{
    if (depth == 16) return 1;
    int lcp = 0;
    while (depth + lcp < 16 && k[lo][depth + lcp] == k[hi - 1][depth + lcp]) lcp++;
    if (lcp > 0) return 1 + rax_nodes(k, lo, hi, depth + lcp);
    long long n = 1;
    size_t i = lo;
    while (i < hi) {
        size_t e = i;
        while (e < hi && k[e][depth] == k[i][depth]) e++;
        n += rax_nodes(k, i, e, depth + 1);
        i = e;
    }
    return n;
}

static int tree_nodes(sref *s, long long *out)
{
    uint8_t pfx = 'n';
    list_arg l;
    FD_TRY(sx_list_prefix(s, &pfx, 1, 0, &l));
    if (l.n == 0) { *out = 1; sx_list_free(&l); return FD_OK; }
    uint8_t (*k)[16] = malloc(l.n * 16);
    if (!k) { sx_list_free(&l); return FD_E_NOMEM; }
    for (size_t i = 0; i < l.n; i++) memcpy(k[i], l.subs[i] + 1, 16);
    *out = rax_nodes(k, 0, l.n, 0);
    free(k);
    sx_list_free(&l);
    return FD_OK;
}

/* The first (rev 0) or last entry as [id, [f, v...]], or a null. */
static int reply_edge(sref *s, int rev)
{
    uint8_t pfx = 'x', from[17];
    sx_sk_entry(from, rev ? SID_MAX : SID_MIN);
    one_arg a;
    int st = sx_walk_one(s, &pfx, 1, from, 17, rev, &a);
    if (st == FD_NOTFOUND) return resp_add_null(s->c->out) ? FD_E_NOMEM : FD_OK;
    if (st != FD_OK) return st;
    st = sx_add_entry(s->c->out, sx_get_id(a.sub + 1), a.v.p, a.v.n);
    free(a.v.p);
    return st;
}

static int xinfo_stream(fd_stream_call *c, sref *s)
{
    int full = 1;
    long long count = 10;
    int argc = c->argc - 3;
    resp_arg *argv = c->argv + 3;
    if (argc == 0) full = 0;
    else if (argc == 1 || argc == 3) {
        if (!resp_arg_is(&argv[0], "full")) return sx_subcmd_syntax_err(c, "XINFO");
        if (argc == 3) {
            if (!resp_arg_is(&argv[1], "count")) return sx_subcmd_syntax_err(c, "XINFO");
            if (sx_arg_ll(&argv[2], &count) != 0) return FD_E_NOTINT;
            if (count < 0) count = 10;
        }
    } else return sx_subcmd_syntax_err(c, "XINFO");
    resp_out *o = c->out;
    long long tn;
    FD_TRY(tree_nodes(s, &tn));
    const smeta *m = &s->m;
    if (resp_add_map(o, full ? 9 : 10) ||
        resp_add_bulk_cstr(o, "length") || resp_add_int(o, (long long)m->length) ||
        resp_add_bulk_cstr(o, "radix-tree-keys") || resp_add_int(o, (long long)m->nnodes) ||
        resp_add_bulk_cstr(o, "radix-tree-nodes") || resp_add_int(o, tn) ||
        resp_add_bulk_cstr(o, "last-generated-id") || sx_add_id(o, m->last) ||
        resp_add_bulk_cstr(o, "max-deleted-entry-id") || sx_add_id(o, m->maxdel) ||
        resp_add_bulk_cstr(o, "entries-added") || resp_add_int(o, (long long)m->added) ||
        resp_add_bulk_cstr(o, "recorded-first-entry-id") || sx_add_id(o, m->first)) return FD_E_NOMEM;
    int st;
    if (!full) {
        if (resp_add_bulk_cstr(o, "groups") || resp_add_int(o, (long long)m->ngroups) ||
            resp_add_bulk_cstr(o, "first-entry")) return FD_E_NOMEM;
        FD_TRY(reply_edge(s, 0));
        if (resp_add_bulk_cstr(o, "last-entry")) return FD_E_NOMEM;
        FD_TRY(reply_edge(s, 1));
        return FD_OK;
    }
    if (resp_add_bulk_cstr(o, "entries")) return FD_E_NOMEM;
    FD_TRY(sx_reply_range(s, SID_MIN, SID_MAX, count, 0, NULL));
    if (resp_add_bulk_cstr(o, "groups")) return FD_E_NOMEM;
    uint8_t gp = 'g';
    list_arg gl;
    FD_TRY(sx_list_prefix(s, &gp, 1, 0, &gl));
    sx_list_sort_names(&gl, 48);
    st = resp_add_array(o, (long long)gl.n) ? FD_E_NOMEM : FD_OK;
    for (size_t i = 0; st == FD_OK && i < gl.n; i++) {
        if (gl.vals[i].n < 48) { st = FD_E_CORRUPT; break; }
        sgroup g;
        sx_group_dec(gl.vals[i].p, &g);
        g.name = (const char *)gl.vals[i].p + 48;
        g.nl = gl.vals[i].n - 48;
        if (resp_add_map(o, 7) || resp_add_bulk_cstr(o, "name") || resp_add_bulk(o, g.name, g.nl) ||
            resp_add_bulk_cstr(o, "last-delivered-id") || sx_add_id(o, g.last) ||
            resp_add_bulk_cstr(o, "entries-read") ||
            (g.entries_read != INVALID_READ ? resp_add_int(o, g.entries_read) : resp_add_null(o)) ||
            resp_add_bulk_cstr(o, "lag")) { st = FD_E_NOMEM; break; }
        if ((st = sx_reply_lag(o, m, &g)) != FD_OK) break;
        if (resp_add_bulk_cstr(o, "pel-count") || resp_add_int(o, (long long)g.pel) ||
            resp_add_bulk_cstr(o, "pending")) { st = FD_E_NOMEM; break; }
        uint8_t pp[9];
        pp[0] = 'p';
        sx_put64(pp + 1, g.gid);
        list_arg pl;
        if ((st = sx_list_prefix(s, pp, 9, (size_t)count, &pl)) != FD_OK) break;
        if (resp_add_array(o, (long long)pl.n)) st = FD_E_NOMEM;
        for (size_t k = 0; st == FD_OK && k < pl.n; k++) {
            const uint8_t *v = pl.vals[k].p;
            if (pl.vals[k].n < 16) { st = FD_E_CORRUPT; break; }
            if (resp_add_array(o, 4) || sx_add_id(o, sx_get_id(pl.subs[k] + 9)) || resp_add_bulk(o, v + 16, pl.vals[k].n - 16) ||
                resp_add_int(o, (long long)sx_get64(v)) || resp_add_int(o, (long long)sx_get64(v + 8))) st = FD_E_NOMEM;
        }
        sx_list_free(&pl);
        if (st != FD_OK) break;
        if (resp_add_bulk_cstr(o, "consumers")) { st = FD_E_NOMEM; break; }
        pp[0] = 'c';
        list_arg cl;
        if ((st = sx_list_prefix(s, pp, 9, 0, &cl)) != FD_OK) break;
        sx_list_sort_names(&cl, 16);
        if (resp_add_array(o, (long long)cl.n)) st = FD_E_NOMEM;
        for (size_t k = 0; st == FD_OK && k < cl.n; k++) {
            const uint8_t *v = cl.vals[k].p;
            if (cl.vals[k].n < 16) { st = FD_E_CORRUPT; break; }
            const char *cn = (const char *)v + 16;
            size_t cnl = cl.vals[k].n - 16;
            long long pel;
            if ((st = sx_cons_pending(s, g.gid, cn, cnl, &pel)) != FD_OK) break;
            if (resp_add_map(o, 4) || resp_add_bulk_cstr(o, "name") || resp_add_bulk(o, cn, cnl) ||
                resp_add_bulk_cstr(o, "seen-time") || resp_add_int(o, (long long)sx_get64(v)) ||
                resp_add_bulk_cstr(o, "pel-count") || resp_add_int(o, pel) ||
                resp_add_bulk_cstr(o, "pending")) { st = FD_E_NOMEM; break; }
            uint8_t qp[FD_SSUB_MAX];
            size_t ql = sx_sk_cpel_pfx(qp, g.gid, cn, cnl);
            list_arg ql2;
            if ((st = sx_list_prefix(s, qp, ql, (size_t)count, &ql2)) != FD_OK) break;
            if (resp_add_array(o, (long long)ql2.n)) st = FD_E_NOMEM;
            for (size_t q = 0; st == FD_OK && q < ql2.n; q++) {
                sid id = sx_get_id(ql2.subs[q] + ql2.sls[q] - 16);
                snack nk;
                st = sx_nack_get(s, &g, id, &nk);
                if (st != FD_OK) { if (st == FD_NOTFOUND) st = FD_E_CORRUPT; break; }
                if (resp_add_array(o, 3) || sx_add_id(o, id) || resp_add_int(o, nk.dtime) || resp_add_int(o, (long long)nk.dcount))
                    st = FD_E_NOMEM;
                free(nk.cons);
            }
            sx_list_free(&ql2);
        }
        sx_list_free(&cl);
    }
    sx_list_free(&gl);
    return st;
}

int fd_stream_xinfo(fd_stream_call *c)
{
    const resp_arg *opt = &c->argv[1];
    struct { const char *name; int arity; const char *full; } subs[] = {
        {"consumers", 4, "xinfo|consumers"}, {"groups", 3, "xinfo|groups"},
        {"stream", -3, "xinfo|stream"}, {"help", 2, "xinfo|help"},
    };
    int which = -1;
    for (int i = 0; i < 4; i++) if (resp_arg_is(opt, subs[i].name)) which = i;
    if (which < 0) return sx_unknown_subcmd(c, "XINFO");
    int ar = subs[which].arity;
    if ((ar > 0 && c->argc != ar) || (ar < 0 && c->argc < -ar)) return sx_subcmd_arity_err(c, subs[which].full);
    if (which == 3) return sx_add_help(c->out, xinfo_help);
    sref s;
    FD_TRY(sx_s_open(c, &c->argv[2], &s));
    if (!s.exists) return FD_E_NOKEY;
    resp_out *o = c->out;
    size_t mark = o->len;
    int st = FD_OK;
    if (which == 0) {
        sgroup g;
        st = sx_group_get(&s, c->argv[3].ptr, c->argv[3].len, &g);
        if (st == FD_NOTFOUND) {
            st = sx_errf_names(c, "NOGROUP No such consumer group '%.*s' for key name '%.*s'", &c->argv[3], &c->argv[2]);
            goto out;
        }
        if (st != FD_OK) goto out;
        uint8_t pp[9];
        pp[0] = 'c';
        sx_put64(pp + 1, g.gid);
        list_arg cl;
        if ((st = sx_list_prefix(&s, pp, 9, 0, &cl)) != FD_OK) goto out;
        sx_list_sort_names(&cl, 16);
        if (resp_add_array(o, (long long)cl.n)) st = FD_E_NOMEM;
        for (size_t k = 0; st == FD_OK && k < cl.n; k++) {
            const uint8_t *v = cl.vals[k].p;
            if (cl.vals[k].n < 16) { st = FD_E_CORRUPT; break; }
            long long idle = c->now_ms - (int64_t)sx_get64(v), pel;
            if (idle < 0) idle = 0;
            if ((st = sx_cons_pending(&s, g.gid, (const char *)v + 16, cl.vals[k].n - 16, &pel)) != FD_OK) break;
            if (resp_add_map(o, 3) || resp_add_bulk_cstr(o, "name") || resp_add_bulk(o, v + 16, cl.vals[k].n - 16) ||
                resp_add_bulk_cstr(o, "pending") || resp_add_int(o, pel) ||
                resp_add_bulk_cstr(o, "idle") || resp_add_int(o, idle)) st = FD_E_NOMEM;
        }
        sx_list_free(&cl);
    } else if (which == 1) {
        uint8_t gp = 'g';
        list_arg gl;
        if ((st = sx_list_prefix(&s, &gp, 1, 0, &gl)) != FD_OK) goto out;
        sx_list_sort_names(&gl, 48);
        if (resp_add_array(o, (long long)gl.n)) st = FD_E_NOMEM;
        for (size_t i = 0; st == FD_OK && i < gl.n; i++) {
            if (gl.vals[i].n < 48) { st = FD_E_CORRUPT; break; }
            sgroup g;
            sx_group_dec(gl.vals[i].p, &g);
            if (resp_add_map(o, 6) || resp_add_bulk_cstr(o, "name") || resp_add_bulk(o, gl.vals[i].p + 48, gl.vals[i].n - 48) ||
                resp_add_bulk_cstr(o, "consumers") || resp_add_int(o, (long long)g.consumers) ||
                resp_add_bulk_cstr(o, "pending") || resp_add_int(o, (long long)g.pel) ||
                resp_add_bulk_cstr(o, "last-delivered-id") || sx_add_id(o, g.last) ||
                resp_add_bulk_cstr(o, "entries-read") ||
                (g.entries_read != INVALID_READ ? resp_add_int(o, g.entries_read) : resp_add_null(o)) ||
                resp_add_bulk_cstr(o, "lag")) { st = FD_E_NOMEM; break; }
            st = sx_reply_lag(o, &s.m, &g);
        }
        sx_list_free(&gl);
    } else {
        st = xinfo_stream(c, &s);
    }
out:
    if (st != FD_OK) o->len = mark;
    sx_s_close(&s);
    return st;
}

/* ---------------------------------------------------------------- DUMP / RESTORE */

static fd_rdb_sid to_rsid(sid id) { fd_rdb_sid r = { id.ms, id.seq }; return r; }
static sid from_rsid(fd_rdb_sid id) { sid r = { id.ms, id.seq }; return r; }

/* The master fields of a node record (after its 44-byte header) into mf. */
static int node_fields(const copyv *raw, fd_rdb_item *mf, uint32_t nf)
{
    size_t off = 44;
    for (uint32_t i = 0; i < nf; i++) {
        if (raw->n - off < 4) return FD_E_CORRUPT;
        uint32_t l = sx_get32(raw->p + off);
        if (raw->n - off - 4 < l) return FD_E_CORRUPT;
        mf[i] = (fd_rdb_item){ (const char *)raw->p + off + 4, l, NULL, 0, 0 };
        off += 4 + l;
    }
    return FD_OK;
}

/* One group's part of the payload: its PEL, its consumers by name, each
 * with its pending ids. */
static int dump_group(sref *s, const copyv *gv, fd_rdb_buf *out)
{
    sgroup g;
    sx_group_dec(gv->p, &g);
    g.name = (const char *)gv->p + 48;
    g.nl = gv->n - 48;
    uint8_t pfx[FD_SSUB_MAX];
    pfx[0] = 'p';
    sx_put64(pfx + 1, g.gid);
    list_arg pel, cons;
    memset(&cons, 0, sizeof cons);
    int st = sx_list_prefix(s, pfx, 9, 0, &pel);
    if (st != FD_OK) return st;
    st = fd_rdb_stream_group(out, g.name, g.nl, to_rsid(g.last), g.entries_read, pel.n);
    for (size_t i = 0; i < pel.n && st == FD_OK; i++) {
        if (pel.sls[i] != 25 || pel.vals[i].n < 16) { st = FD_E_CORRUPT; break; }
        st = fd_rdb_stream_nack(out, to_rsid(sx_get_id(pel.subs[i] + 9)), (int64_t)sx_get64(pel.vals[i].p),
                                sx_get64(pel.vals[i].p + 8));
    }
    pfx[0] = 'c';
    if (st == FD_OK) st = sx_list_prefix(s, pfx, 9, 0, &cons);
    if (st == FD_OK) {
        sx_list_sort_names(&cons, 16);
        st = fd_rdb_stream_consumers(out, cons.n);
    }
    for (size_t i = 0; i < cons.n && st == FD_OK; i++) {
        const copyv *cv = &cons.vals[i];
        if (cv->n < 16) { st = FD_E_CORRUPT; break; }
        const char *name = (const char *)cv->p + 16;
        size_t nl = cv->n - 16;
        uint8_t qp[FD_SSUB_MAX];
        size_t ql = sx_sk_cpel_pfx(qp, g.gid, name, nl);
        list_arg q;
        if ((st = sx_list_prefix(s, qp, ql, 0, &q)) != FD_OK) break;
        st = fd_rdb_stream_consumer(out, name, nl, (int64_t)sx_get64(cv->p), q.n);
        for (size_t k = 0; k < q.n && st == FD_OK; k++)
            st = q.sls[k] == ql + 16 ? fd_rdb_stream_cpel(out, to_rsid(sx_get_id(q.subs[k] + ql))) : FD_E_CORRUPT;
        sx_list_free(&q);
    }
    sx_list_free(&pel);
    sx_list_free(&cons);
    return st;
}

int fd_stream_dump(fd_stream_call *c, const resp_arg *key, fd_rdb_buf *out)
{
    sref s;
    FD_TRY(sx_s_open(c, key, &s));
    if (!s.exists) { sx_s_close(&s); return FD_NOTFOUND; }
    list_arg nodes, ents, groups;
    memset(&ents, 0, sizeof ents);
    memset(&groups, 0, sizeof groups);
    fd_rdb_item *fv = NULL, *mf = NULL;
    fd_rdb_sentry *se = NULL;
    size_t *first = NULL;
    uint8_t pn = 'n', px = 'x', pg = 'g';
    int st = sx_list_prefix(&s, &pn, 1, 0, &nodes);
    if (st == FD_OK) st = sx_list_prefix(&s, &px, 1, 0, &ents);
    if (st == FD_OK) st = sx_list_prefix(&s, &pg, 1, 0, &groups);
    /* the entries, then each node's first entry (first[k]..first[k+1]) */
    size_t nfv = 0, maxmf = 0;
    for (size_t i = 0; i < ents.n && st == FD_OK; i++) {
        uint32_t n;
        if (ents.sls[i] != 17 || (st = sx_blob_check(ents.vals[i].p, ents.vals[i].n, &n)) != FD_OK) {
            st = FD_E_CORRUPT;
            break;
        }
        nfv += n;
    }
    for (size_t k = 0; k < nodes.n && st == FD_OK; k++) {
        if (nodes.sls[k] != 17 || nodes.vals[k].n < 44) { st = FD_E_CORRUPT; break; }
        uint32_t nf = sx_get32(nodes.vals[k].p + 40);
        if (nf > maxmf) maxmf = nf;
    }
    if (st == FD_OK && (!(fv = calloc(nfv + 1, sizeof *fv)) || !(se = calloc(ents.n + 1, sizeof *se)) ||
                        !(mf = calloc(maxmf + 1, sizeof *mf)) || !(first = calloc(nodes.n + 1, sizeof *first))))
        st = FD_E_NOMEM;
    size_t used = 0, live_nodes = 0;
    for (size_t i = 0; i < ents.n && st == FD_OK; i++) {
        const uint8_t *b = ents.vals[i].p;
        uint32_t n = sx_get32(b);
        size_t off = 4;
        se[i].id = to_rsid(sx_get_id(ents.subs[i] + 1));
        se[i].fv = fv + used;
        se[i].nf = n;
        for (uint32_t f = 0; f < n; f++) {
            uint32_t fl = sx_get32(b + off), vl = sx_get32(b + off + 4 + fl);
            fv[used++] = (fd_rdb_item){ (const char *)b + off + 4, fl, (const char *)b + off + 8 + fl, vl, 0 };
            off += 8 + (size_t)fl + vl;
        }
    }
    for (size_t k = 0, i = 0; k < nodes.n && st == FD_OK; k++) {
        sid start = sx_get_id(nodes.subs[k] + 1);
        if (i < ents.n && sx_idcmp(from_rsid(se[i].id), start) < 0) { st = FD_E_CORRUPT; break; }  /* no node */
        first[k] = i;
        sid next = k + 1 < nodes.n ? sx_get_id(nodes.subs[k + 1] + 1) : SID_MAX;
        while (i < ents.n && (k + 1 == nodes.n || sx_idcmp(from_rsid(se[i].id), next) < 0)) i++;
        if (i > first[k]) live_nodes++;
        if (k + 1 == nodes.n) first[nodes.n] = i;
    }
    if (st == FD_OK && !nodes.n && ents.n) st = FD_E_CORRUPT;
    if (st == FD_OK) st = fd_rdb_stream_begin(out, live_nodes);
    for (size_t k = 0; k < nodes.n && st == FD_OK; k++) {
        size_t n = first[k + 1] - first[k];
        uint32_t nmf = sx_get32(nodes.vals[k].p + 40);
        if (!n) continue;
        if ((st = node_fields(&nodes.vals[k], mf, nmf)) != FD_OK) break;
        st = fd_rdb_stream_node(out, to_rsid(sx_get_id(nodes.subs[k] + 1)), mf, nmf, se + first[k], n);
    }
    if (st == FD_OK) {
        fd_rdb_stream_info m = { 0, s.m.length, s.m.added, groups.n, to_rsid(s.m.last), to_rsid(s.m.first),
                                 to_rsid(s.m.maxdel) };
        st = fd_rdb_stream_info_put(out, &m);
    }
    if (st == FD_OK) sx_list_sort_names(&groups, 48);
    for (size_t g = 0; g < groups.n && st == FD_OK; g++)
        st = groups.vals[g].n < 48 ? FD_E_CORRUPT : dump_group(&s, &groups.vals[g], out);
    if (st == FD_OK) st = fd_rdb_footer(out);
    free(fv);
    free(se);
    free(mf);
    free(first);
    sx_list_free(&nodes);
    sx_list_free(&ents);
    sx_list_free(&groups);
    sx_s_close(&s);
    return st;
}

/* RESTORE's writer: the records of one stream being created */
typedef struct rst_ctx {
    sref    *s;
    sgroup   g;
    char    *gname, *cname;   /* owned copies */
    size_t   cl;
} rst_ctx;

static int rst_entry(void *ctx, fd_rdb_sid id, const fd_rdb_item *fv, size_t nf)
{
    rst_ctx *r = ctx;
    size_t bl = 4;
    for (size_t i = 0; i < nf; i++) bl += 8 + fv[i].n + fv[i].vn;
    uint8_t *b = malloc(bl), k[17];
    if (!b) return FD_E_NOMEM;
    sx_put32(b, (uint32_t)nf);
    size_t off = 4;
    for (size_t i = 0; i < nf; i++) {
        sx_put32(b + off, (uint32_t)fv[i].n);
        if (fv[i].n) memcpy(b + off + 4, fv[i].p, fv[i].n);
        off += 4 + fv[i].n;
        sx_put32(b + off, (uint32_t)fv[i].vn);
        if (fv[i].vn) memcpy(b + off + 4, fv[i].v, fv[i].vn);
        off += 4 + fv[i].vn;
    }
    sx_sk_entry(k, from_rsid(id));
    int st = IO_PUT(r->s, k, 17, b, bl);
    free(b);
    return st;
}

static int rst_node(void *ctx, fd_rdb_sid master, const fd_rdb_item *mf, size_t nmf, uint64_t live,
                    uint64_t deleted, size_t lp_bytes, fd_rdb_sid last)
{
    rst_ctx *r = ctx;
    size_t rl = 44;
    for (size_t i = 0; i < nmf; i++) rl += 4 + mf[i].n;
    snode n = { .start = from_rsid(master), .last = from_rsid(last), .live = live, .deleted = deleted,
                .bytes = lp_bytes, .nf = (uint32_t)nmf };
    if (!(n.raw.p = calloc(1, rl))) return FD_E_NOMEM;
    n.raw.n = rl;
    sx_put32(n.raw.p + 40, (uint32_t)nmf);
    size_t off = 44;
    for (size_t i = 0; i < nmf; i++) {
        sx_put32(n.raw.p + off, (uint32_t)mf[i].n);
        if (mf[i].n) memcpy(n.raw.p + off + 4, mf[i].p, mf[i].n);
        off += 4 + mf[i].n;
    }
    int st = sx_node_write(r->s, &n);        /* every record exact; the last node is the tail */
    if (st == FD_OK) {
        sx_tail_set(r->s, &n);
        r->s->m.nnodes++;
    }
    free(n.raw.p);
    return st;
}

static int rst_info(void *ctx, const fd_rdb_stream_info *m)
{
    rst_ctx *r = ctx;
    r->s->m.length = m->length;
    r->s->m.added = m->added;
    r->s->m.last = from_rsid(m->last);
    r->s->m.first = from_rsid(m->first);
    r->s->m.maxdel = from_rsid(m->maxdel);
    return FD_OK;
}

static int dup_name(char **dst, const char *p, size_t n)
{
    free(*dst);
    if (!(*dst = malloc(n ? n : 1))) return FD_E_NOMEM;
    if (n) memcpy(*dst, p, n);
    return FD_OK;
}

static int rst_group(void *ctx, const char *name, size_t nl, fd_rdb_sid last, int64_t entries_read,
                     uint64_t npel, uint64_t nconsumers)
{
    rst_ctx *r = ctx;
    FD_TRY(dup_name(&r->gname, name, nl));
    r->g = (sgroup){ r->gname, nl, r->s->m.next_gid++, from_rsid(last), entries_read, npel, nconsumers };
    r->s->m.ngroups++;
    return sx_group_put(r->s, &r->g);
}

static int rst_consumer(void *ctx, const char *name, size_t nl, int64_t seen_ms, uint64_t npel)
{
    rst_ctx *r = ctx;
    FD_TRY(dup_name(&r->cname, name, nl));
    r->cl = nl;
    scons cn = { r->cname, nl, seen_ms, npel, 1 };
    return sx_cons_put(r->s, &r->g, &cn);
}

static int rst_nack(void *ctx, fd_rdb_sid id, int64_t delivery_ms, uint64_t count)
{
    rst_ctx *r = ctx;
    FD_TRY(sx_nack_put(r->s, &r->g, from_rsid(id), delivery_ms, count, r->cname, r->cl));
    return sx_cpel_put(r->s, &r->g, r->cname, r->cl, from_rsid(id));
}

int fd_stream_restore(fd_stream_call *c, const resp_arg *key, const void *p, size_t len)
{
    sref s;
    memset(&s, 0, sizeof s);
    FD_TRY(sx_s_create(c, key, &s));
    rst_ctx r;
    memset(&r, 0, sizeof r);
    r.s = &s;
    fd_rdb_stream_sink sk = { &r, rst_entry, rst_node, rst_info, rst_group, rst_consumer, rst_nack };
    int st = fd_rdb_stream_load(p, len, &sk);
    if (st == -1) st = FD_E_CORRUPT;       /* checked before: the payload changed? */
    if (st == FD_OK) st = sx_s_save(&s);
    free(r.gname);
    free(r.cname);
    sx_s_close(&s);
    return st;
}
