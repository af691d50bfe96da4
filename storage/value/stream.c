/* stream.c — Redis 7.0 stream commands over fd_stream_io (see stream.h):
 * XADD, XTRIM, XDEL, XLEN, XRANGE/XREVRANGE, XREAD/XREADGROUP, XSETID.
 * The rules, reply shapes and error texts follow redis 7.0's t_stream.c
 * (learned from it, written here anew); the sub-record layouts are ours.
 * The engine's other files: stream_int.h. */
#include "stream_int.h"

/* ---------------------------------------------------------------- XADD / XTRIM / XDEL / XLEN */

int fd_stream_xadd(fd_stream_call *c)
{
    trim_args t;
    int idpos = sx_parse_add_trim(c, &t, 1);
    if (idpos < 0) return FD_OK;
    int fpos = idpos + 1;
    if (c->argc - fpos < 2 || (c->argc - fpos) % 2 == 1) {
        return resp_add_errorf(c->out, "ERR wrong number of arguments for '%s' command", "xadd") ? FD_E_NOMEM : FD_OK;
    }
    if (t.id_given && t.seq_given && t.id.ms == 0 && t.id.seq == 0)
        return sx_err(c, "ERR The ID specified in XADD must be greater than 0-0");
    sref s;
    FD_TRY(sx_s_open(c, &c->argv[1], &s));
    int st = FD_OK;
    if (!s.exists) {
        if (t.no_mkstream) { sx_s_close(&s); return resp_add_null(c->out) ? FD_E_NOMEM : FD_OK; }
        if ((st = sx_s_create(c, &c->argv[1], &s)) != FD_OK) { sx_s_close(&s); return st; }
    }
    if (s.m.last.ms == UINT64_MAX && s.m.last.seq == UINT64_MAX) {
        sx_s_close(&s);
        return sx_err(c, "ERR The stream has exhausted the last possible ID, unable to add more items");
    }
    sid id;
    if (t.id_given) {
        if (t.seq_given) id = t.id;
        else if (s.m.last.ms == t.id.ms) {
            if (s.m.last.seq == UINT64_MAX) goto edom;
            id = s.m.last;
            id.seq++;
        } else id = t.id;
    } else {
        uint64_t ms = (uint64_t)c->now_ms;
        if (ms > s.m.last.ms) { id.ms = ms; id.seq = 0; }
        else { id = s.m.last; sx_id_incr(&id); }
    }
    if (sx_idcmp(id, s.m.last) <= 0) goto edom;
    size_t mark = c->out->len;
    st = sx_append_entry(&s, id, c->argv + fpos, (c->argc - fpos) / 2);
    long long trimmed;
    if (st == FD_OK) st = sx_stream_trim(&s, &t, &trimmed);
    if (st == FD_OK) st = sx_s_save(&s);
    if (st == FD_OK && sx_add_id(c->out, id)) st = FD_E_NOMEM;
    if (st == FD_OK) EV(c, STREAM, "xadd", &c->argv[1]);
    if (st == FD_OK && trimmed) EV(c, STREAM, "xtrim", &c->argv[1]);
    if (st != FD_OK) c->out->len = mark;
    sx_s_close(&s);
    return st;
edom:
    /* a stream created by this call stays (as Redis's dbAdd before the append) */
    st = s.m.length == 0 && s.m.added == 0 && s.m.ngroups == 0 ? sx_s_save(&s) : FD_OK;
    sx_s_close(&s);
    if (st != FD_OK) return st;
    return sx_err(c, "ERR The ID specified in XADD is equal or smaller than the target stream top item");
}

int fd_stream_xtrim(fd_stream_call *c)
{
    trim_args t;
    if (sx_parse_add_trim(c, &t, 0) < 0) return FD_OK;
    sref s;
    FD_TRY(sx_s_open(c, &c->argv[1], &s));
    if (!s.exists) return resp_add_int(c->out, 0) ? FD_E_NOMEM : FD_OK;
    long long n;
    int st = sx_stream_trim(&s, &t, &n);
    if (st == FD_OK && n) st = sx_s_save(&s);
    if (st == FD_OK && n) EV(c, STREAM, "xtrim", &c->argv[1]);
    sx_s_close(&s);
    if (st != FD_OK) return st;
    return resp_add_int(c->out, n) ? FD_E_NOMEM : FD_OK;
}

int fd_stream_xlen(fd_stream_call *c)
{
    sref s;
    FD_TRY(sx_s_open(c, &c->argv[1], &s));
    long long n = s.exists ? (long long)s.m.length : 0;
    sx_s_close(&s);
    return resp_add_int(c->out, n) ? FD_E_NOMEM : FD_OK;
}

int fd_stream_xdel(fd_stream_call *c)
{
    sref s;
    FD_TRY(sx_s_open(c, &c->argv[1], &s));
    if (!s.exists) return resp_add_int(c->out, 0) ? FD_E_NOMEM : FD_OK;
    int n = c->argc - 2;
    sid *ids = malloc((size_t)n * sizeof *ids);
    if (!ids) { sx_s_close(&s); return FD_E_NOMEM; }
    for (int j = 0; j < n; j++) {
        if (sx_parse_arg_id(&c->argv[2 + j], &ids[j], 0, 1) != 0) {
            free(ids);
            sx_s_close(&s);
            return sx_err(c, E_INVALID_ID);
        }
    }
    long long deleted = 0;
    int first_entry = 0, st = FD_OK;
    for (int j = 0; j < n && st == FD_OK; j++) {
        st = sx_entry_exists(&s, ids[j]);
        if (st == FD_NOTFOUND) { st = FD_OK; continue; }
        if (st != FD_OK) break;
        if ((st = sx_del_entry(&s, ids[j])) != FD_OK) break;
        if ((st = sx_node_entry_gone(&s, ids[j], 1)) != FD_OK) break;
        s.m.length--;
        if (sx_idcmp(ids[j], s.m.first) == 0) first_entry = 1;
        if (sx_idcmp(ids[j], s.m.maxdel) > 0) s.m.maxdel = ids[j];
        deleted++;
    }
    free(ids);
    if (st == FD_OK && deleted) {
        if (s.m.length == 0) s.m.first = SID_MIN;
        else if (first_entry) { int found; st = sx_first_valid_id(&s, &s.m.first, &found); }
        if (st == FD_OK) st = sx_s_save(&s);
        if (st == FD_OK) EV(c, STREAM, "xdel", &c->argv[1]);
    }
    sx_s_close(&s);
    if (st != FD_OK) return st;
    return resp_add_int(c->out, deleted) ? FD_E_NOMEM : FD_OK;
}

/* ---------------------------------------------------------------- XRANGE */

typedef struct range_arg {
    fd_stream_call *c;
    sid  end;            /* forward: last id; rev: first id */
    int  rev;
    long long count, n;  /* count 0: all */
    int  st;
} range_arg;

static int range_cb(void *arg, const uint8_t *sub, size_t sl, const void *v, size_t vl)
{
    range_arg *a = arg;
    if (sl != 17) return FD_E_CORRUPT;
    sid id = sx_get_id(sub + 1);
    if (a->rev ? sx_idcmp(id, a->end) < 0 : sx_idcmp(id, a->end) > 0) return FD_SW_STOP;
    int st = sx_add_entry(a->c->out, id, v, vl);
    if (st != FD_OK) return st;
    a->n++;
    return a->count && a->n >= a->count ? FD_SW_STOP : FD_SW_NEXT;
}

/* Reply the entries of [start, end] (rev: walking from end down) as an
 * array; count 0 = all. *n = how many. */
int sx_reply_range(sref *s, sid start, sid end, long long count, int rev, long long *n)
{
    resp_out *o = s->c->out;
    size_t mark = o->len;
    range_arg a = { s->c, rev ? start : end, rev, count, 0, 0 };
    int st = FD_OK;
    if (s->exists && sx_idcmp(start, end) <= 0) {
        uint8_t pfx = 'x', f[17];
        sx_sk_entry(f, rev ? end : start);
        st = IO_WALK(s, &pfx, 1, f, 17, rev, range_cb, &a);
    }
    if (st == FD_OK) st = sx_insert_header(o, mark, 'a', a.n);
    if (st != FD_OK) o->len = mark;
    if (n) *n = a.n;
    return st;
}

static int xrange_generic(fd_stream_call *c, int rev)
{
    const resp_arg *sa = rev ? &c->argv[3] : &c->argv[2];
    const resp_arg *ea = rev ? &c->argv[2] : &c->argv[3];
    sid start, end;
    int sx, ex;
    long long count = -1;
    if (sx_parse_interval(sa, &start, &sx, 0) != 0) return sx_err(c, E_INVALID_ID);
    if (sx && sx_id_incr(&start) != 0) return sx_err(c, "ERR invalid start ID for the interval");
    if (sx_parse_interval(ea, &end, &ex, UINT64_MAX) != 0) return sx_err(c, E_INVALID_ID);
    if (ex && sx_id_decr(&end) != 0) return sx_err(c, "ERR invalid end ID for the interval");
    for (int j = 4; j < c->argc; j++) {
        int more = c->argc - j - 1;
        if (resp_arg_is(&c->argv[j], "count") && more >= 1) {
            if (sx_arg_ll(&c->argv[j + 1], &count) != 0) return FD_E_NOTINT;
            if (count < 0) count = 0;
            j++;
        } else return FD_E_SYNTAX;
    }
    sref s;
    FD_TRY(sx_s_open(c, &c->argv[1], &s));
    int st;
    if (!s.exists) st = resp_add_array(c->out, 0) ? FD_E_NOMEM : FD_OK;
    else if (count == 0) st = resp_add_null_array(c->out) ? FD_E_NOMEM : FD_OK;
    else st = sx_reply_range(&s, start, end, count == -1 ? 0 : count, rev, NULL);
    sx_s_close(&s);
    return st;
}

int fd_stream_xrange(fd_stream_call *c)    { return xrange_generic(c, 0); }
int fd_stream_xrevrange(fd_stream_call *c) { return xrange_generic(c, 1); }

/* ---------------------------------------------------------------- XREAD / XREADGROUP */

int fd_stream_would_block(fd_stream_call *c, int nstreams, const uint64_t *ids)
{
    /* The marker proxy/blocking.c turns into a wait (stream.h): the ids the
     * read waits after, `$` already resolved, `>` for a group's new entries. */
    resp_out *o = c->out;
    size_t mark = o->len;
    char buf[48];
    int bad = resp_out_raw(o, "-XBLOCK", 7) != 0;
    for (int i = 0; i < nstreams && !bad; i++) {
        int n = ids[2 * i] == UINT64_MAX && ids[2 * i + 1] == UINT64_MAX
                    ? snprintf(buf, sizeof buf, " >")
                    : snprintf(buf, sizeof buf, " %" PRIu64 "-%" PRIu64, ids[2 * i], ids[2 * i + 1]);
        bad = resp_out_raw(o, buf, (size_t)n) != 0;
    }
    if (!bad) bad = resp_out_raw(o, "\r\n", 2) != 0;
    if (bad) o->len = mark;
    return bad ? FD_E_NOMEM : FD_OK;
}

/* Deliver entries of the group (">"): walk the stream after gt, reply each
 * entry, advance the group, then record the pending entries. */
typedef struct grp_arg {
    fd_stream_call *c;
    sref   *s;
    sgroup *g;
    long long count, n;
    idlist  ids;
} grp_arg;

static int grp_cb(void *arg, const uint8_t *sub, size_t sl, const void *v, size_t vl)
{
    grp_arg *a = arg;
    if (sl != 17) return FD_E_CORRUPT;
    sid id = sx_get_id(sub + 1);
    if (a->g && sx_idcmp(id, a->g->last) > 0) {
        if (a->g->entries_read != INVALID_READ && !sx_range_has_tombstones(&a->s->m, id, SID_MAX))
            a->g->entries_read++;
        else if (a->s->m.added)
            a->g->entries_read = sx_estimate_distance(&a->s->m, id);
        a->g->last = id;
    }
    int st = sx_add_entry(a->c->out, id, v, vl);
    if (st != FD_OK) return st;
    if (a->g && (st = sx_idlist_add(&a->ids, id)) != FD_OK) return st;
    a->n++;
    return a->count && a->n >= a->count ? FD_SW_STOP : FD_SW_NEXT;
}

/* Record the delivery of ids to consumer cn of g (streamReplyWithRange's
 * PEL part): a new pending entry, or one moved from another consumer. */
static int deliver_pel(sref *s, sgroup *g, scons *cn, const idlist *ids)
{
    for (size_t i = 0; i < ids->n; i++) {
        sid id = ids->v[i];
        snack old;
        int st = sx_nack_get(s, g, id, &old);
        if (st == FD_OK) {
            if (old.cl != cn->nl || memcmp(old.cons, cn->name, cn->nl) != 0) {
                st = sx_cpel_del(s, g, old.cons, old.cl, id);
                if (st == FD_OK) st = sx_cpel_put(s, g, cn->name, cn->nl, id);
                cn->pel++;
            }
            free(old.cons);
            if (st == FD_OK) st = sx_nack_put(s, g, id, s->c->now_ms, 1, cn->name, cn->nl);
        } else if (st == FD_NOTFOUND) {
            st = sx_nack_put(s, g, id, s->c->now_ms, 1, cn->name, cn->nl);
            if (st == FD_OK) st = sx_cpel_put(s, g, cn->name, cn->nl, id);
            g->pel++;
            cn->pel++;
        }
        if (st != FD_OK) return st;
    }
    return FD_OK;
}

/* History: the consumer's own pending entries from start. */
typedef struct hist_arg { idlist ids; long long count; } hist_arg;

static int hist_cb(void *arg, const uint8_t *sub, size_t sl, const void *v, size_t vl)
{
    (void)v; (void)vl;
    hist_arg *a = arg;
    if (sl < 16) return FD_E_CORRUPT;
    int st = sx_idlist_add(&a->ids, sx_get_id(sub + sl - 16));
    if (st != FD_OK) return st;
    return a->count && (long long)a->ids.n >= a->count ? FD_SW_STOP : FD_SW_NEXT;
}

static int reply_history(sref *s, sgroup *g, scons *cn, sid start, long long count)
{
    uint8_t pfx[FD_SSUB_MAX], from[FD_SSUB_MAX];
    size_t pl = sx_sk_cpel_pfx(pfx, g->gid, cn->name, cn->nl);
    memcpy(from, pfx, pl);
    sx_put_id(from + pl, start);
    hist_arg a = { {0}, count };
    int st = IO_WALK(s, pfx, pl, from, pl + 16, 0, hist_cb, &a);
    resp_out *o = s->c->out;
    if (st == FD_OK && resp_add_array(o, (long long)a.ids.n)) st = FD_E_NOMEM;
    for (size_t i = 0; st == FD_OK && i < a.ids.n; i++) {
        sid id = a.ids.v[i];
        st = sx_reply_entry_at(s, id);
        if (st == FD_NOTFOUND) {
            st = (resp_add_array(o, 2) || sx_add_id(o, id) || resp_add_null_array(o)) ? FD_E_NOMEM : FD_OK;
        } else if (st == FD_OK) {
            snack n;
            st = sx_nack_get(s, g, id, &n);
            if (st == FD_OK) {
                st = sx_nack_put(s, g, id, s->c->now_ms, n.dcount + 1, n.cons, n.cl);
                free(n.cons);
            } else if (st == FD_NOTFOUND) st = FD_OK;
        }
    }
    free(a.ids.v);
    return st;
}

static int xread_generic(fd_stream_call *c, int group_mode)
{
    long long timeout = -1, count = 0;
    int streams_arg = 0, nstreams = 0, noack = 0;
    const resp_arg *gname = NULL, *cname = NULL;
    for (int i = 1; i < c->argc; i++) {
        int more = c->argc - i - 1;
        const resp_arg *o = &c->argv[i];
        if (resp_arg_is(o, "block") && more) {
            i++;
            long long t;
            if (sx_arg_ll(&c->argv[i], &t) != 0) return sx_err(c, "ERR timeout is not an integer or out of range");
            if (t < 0) return sx_err(c, "ERR timeout is negative");
            timeout = t;
        } else if (resp_arg_is(o, "count") && more) {
            i++;
            if (sx_arg_ll(&c->argv[i], &count) != 0) return FD_E_NOTINT;
            if (count < 0) count = 0;
        } else if (resp_arg_is(o, "streams") && more) {
            streams_arg = i + 1;
            nstreams = c->argc - streams_arg;
            if (nstreams % 2 != 0) {
                /* Redis 7.0 has one text for XREAD and XREADGROUP */
                return resp_add_error(c->out, "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.") ? FD_E_NOMEM : FD_OK;
            }
            nstreams /= 2;
            break;
        } else if (resp_arg_is(o, "group") && more >= 2) {
            if (!group_mode) return sx_err(c, "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.");
            gname = &c->argv[i + 1];
            cname = &c->argv[i + 2];
            i += 2;
        } else if (resp_arg_is(o, "noack")) {
            if (!group_mode) return sx_err(c, "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.");
            noack = 1;
        } else return FD_E_SYNTAX;
    }
    if (streams_arg == 0) return FD_E_SYNTAX;
    if (group_mode && !gname) return sx_err(c, "ERR Missing GROUP option for XREADGROUP");

    sref *ss = calloc((size_t)nstreams, sizeof *ss);
    sid *ids = calloc((size_t)nstreams, sizeof *ids);
    sgroup *gs = calloc((size_t)nstreams, sizeof *gs);
    int st = FD_OK, replied = 0;
    size_t mark = c->out->len;
    if (!ss || !ids || !gs) { st = FD_E_NOMEM; goto done; }
    for (int i = 0; i < nstreams && st == FD_OK; i++) {
        const resp_arg *key = &c->argv[streams_arg + i], *ida = &c->argv[streams_arg + nstreams + i];
        if ((st = sx_s_open(c, key, &ss[i])) != FD_OK) break;
        if (gname) {
            int gs_st = ss[i].exists ? sx_group_get(&ss[i], gname->ptr, gname->len, &gs[i]) : FD_NOTFOUND;
            if (gs_st == FD_NOTFOUND) {
                st = sx_errf_names(c, "NOGROUP No such key '%.*s' or consumer group '%.*s' in XREADGROUP with GROUP option", key, gname);
                replied = 1;
                break;
            }
            if ((st = gs_st) != FD_OK) break;
        }
        if (sx_cstr_is(ida, "$")) {
            if (group_mode) {
                st = sx_err(c, "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.");
                replied = 1;
                break;
            }
            ids[i] = ss[i].exists ? ss[i].m.last : SID_MIN;
            continue;
        } else if (sx_cstr_is(ida, ">")) {
            if (!group_mode) {
                st = sx_err(c, "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.");
                replied = 1;
                break;
            }
            ids[i] = SID_MAX;
            continue;
        }
        if (sx_parse_arg_id(ida, &ids[i], 0, 1) != 0) { st = sx_err(c, E_INVALID_ID); replied = 1; break; }
    }
    if (st != FD_OK || replied) goto done;

    long long served = 0;
    for (int i = 0; i < nstreams && st == FD_OK; i++) {
        /* a key named twice shares its stream and group state (Redis's objects) */
        int j = 0;
        const resp_arg *ki = &c->argv[streams_arg + i];
        while (j < i && !(c->argv[streams_arg + j].len == ki->len && memcmp(c->argv[streams_arg + j].ptr, ki->ptr, ki->len) == 0)) j++;
        sref *s = &ss[j];
        sgroup *g = &gs[j];
        if (!s->exists) continue;
        sid gt = ids[i];
        int sync = 0, history = 0;
        scons cn;
        if (gname) {
            if (gt.ms != UINT64_MAX || gt.seq != UINT64_MAX) { sync = 1; history = 1; }
            else if (s->m.length) {
                sid maxid;
                if ((st = sx_last_valid_id(s, &maxid)) != FD_OK) break;
                if (sx_idcmp(maxid, g->last) > 0) { sync = 1; gt = g->last; }
            }
            if (sync) {      /* the consumer is created (or seen) only when served */
                int created;
                if ((st = sx_cons_lookup_create(s, g, cname->ptr, cname->len, &cn, &created)) != FD_OK) break;
                cn.seen = c->now_ms;
            }
        } else if (s->m.length) {
            sid maxid;
            if ((st = sx_last_valid_id(s, &maxid)) != FD_OK) break;
            if (sx_idcmp(maxid, gt) > 0) sync = 1;
        }
        if (sync) {
            served++;
            sid start = gt;
            sx_id_incr(&start);
            if (c->out->proto == 2 && resp_add_array(c->out, 2)) { st = FD_E_NOMEM; break; }
            if (resp_add_bulk(c->out, c->argv[streams_arg + i].ptr, c->argv[streams_arg + i].len)) { st = FD_E_NOMEM; break; }
            if (history) {
                st = reply_history(s, g, &cn, start, count);
            } else {
                size_t m2 = c->out->len;
                grp_arg a = { c, s, gname ? g : NULL, count, 0, {0} };
                uint8_t pfx = 'x', f[17];
                sx_sk_entry(f, start);
                st = IO_WALK(s, &pfx, 1, f, 17, 0, grp_cb, &a);
                if (st == FD_OK) st = sx_insert_header(c->out, m2, 'a', a.n);
                if (st == FD_OK && gname && !noack) st = deliver_pel(s, g, &cn, &a.ids);
                free(a.ids.v);
            }
        }
        if (st == FD_OK && gname && sync) {
            st = sx_cons_put(s, g, &cn);
            if (st == FD_OK) st = sx_group_put(s, g);
        }
    }
    if (st != FD_OK) goto done;
    if (served) {
        st = sx_insert_header(c->out, mark, c->out->proto == 2 ? 'a' : 'm', served);
        goto done;
    }
    if (timeout != -1) { st = fd_stream_would_block(c, nstreams, &ids[0].ms); goto done; }
    st = resp_add_null_array(c->out) ? FD_E_NOMEM : FD_OK;
done:
    if (st != FD_OK) c->out->len = mark;
    if (ss) for (int i = 0; i < nstreams; i++) sx_s_close(&ss[i]);
    free(ss);
    free(ids);
    free(gs);
    return st;
}

int fd_stream_xread(fd_stream_call *c)      { return xread_generic(c, 0); }
int fd_stream_xreadgroup(fd_stream_call *c) { return xread_generic(c, 1); }

/* ---------------------------------------------------------------- XSETID */

int fd_stream_xsetid(fd_stream_call *c)
{
    sid id, maxdel = SID_MIN;
    long long added = -1;
    if (sx_parse_arg_id(&c->argv[2], &id, 0, 1) != 0) return sx_err(c, E_INVALID_ID);
    for (int i = 3; i < c->argc;) {
        int more = c->argc - 1 - i;
        const resp_arg *o = &c->argv[i];
        if (resp_arg_is(o, "entriesadded") && more) {
            if (sx_arg_ll(&c->argv[i + 1], &added) != 0) return FD_E_NOTINT;
            if (added < 0) return sx_err(c, "ERR entries_added must be positive");
            i += 2;
        } else if (resp_arg_is(o, "maxdeletedid") && more) {
            if (sx_parse_arg_id(&c->argv[i + 1], &maxdel, 0, 1) != 0) return sx_err(c, E_INVALID_ID);
            if (sx_idcmp(id, maxdel) < 0) return sx_err(c, "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id");
            i += 2;
        } else return FD_E_SYNTAX;
    }
    sref s;
    FD_TRY(sx_s_open(c, &c->argv[1], &s));
    if (!s.exists) return FD_E_NOKEY;
    int st = FD_OK;
    if (s.m.length > 0) {
        sid maxid;
        if ((st = sx_last_valid_id(&s, &maxid)) != FD_OK) goto out;
        if (sx_idcmp(id, maxid) < 0) { st = sx_err(c, "ERR The ID specified in XSETID is smaller than the target stream top item"); goto out; }
        if (added != -1 && s.m.length > (uint64_t)added) {
            st = sx_err(c, "ERR The entries_added specified in XSETID is smaller than the target stream length");
            goto out;
        }
    }
    s.m.last = id;
    if (added != -1) s.m.added = (uint64_t)added;
    if (!sx_id_zero(maxdel)) s.m.maxdel = maxdel;
    st = sx_s_save(&s);
    if (st == FD_OK) st = resp_add_status(c->out, "OK") ? FD_E_NOMEM : FD_OK;
    if (st == FD_OK) EV(c, STREAM, "xsetid", &c->argv[1]);
out:
    sx_s_close(&s);
    return st;
}
