/* stream_core.c — the stream engine's records over fd_stream_io: ids and
 * the metadata blob, sub-record keys, reply and argument helpers, group /
 * consumer / pending records, walks, lag accounting, the listpack-node
 * emulation, append and trimming (the layouts: stream.h). Private:
 * stream_int.h. */
#include "stream_int.h"

#define NODE_MAX_ENTRIES 100     /* stream-node-max-entries */
#define NODE_MAX_BYTES   4096    /* stream-node-max-bytes */
#define NAME_INLINE      200

/* ---------------------------------------------------------------- bytes */

void sx_put64(uint8_t *p, uint64_t v) { for (int i = 7; i >= 0; i--) { p[i] = (uint8_t)v; v >>= 8; } }
uint64_t sx_get64(const uint8_t *p) { uint64_t v = 0; for (int i = 0; i < 8; i++) v = (v << 8) | p[i]; return v; }
void sx_put32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v; }
uint32_t sx_get32(const uint8_t *p) { return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]; }
void sx_put_id(uint8_t *p, sid id) { sx_put64(p, id.ms); sx_put64(p + 8, id.seq); }
sid sx_get_id(const uint8_t *p) { sid id = { sx_get64(p), sx_get64(p + 8) }; return id; }

int sx_idcmp(sid a, sid b)
{
    if (a.ms != b.ms) return a.ms > b.ms ? 1 : -1;
    if (a.seq != b.seq) return a.seq > b.seq ? 1 : -1;
    return 0;
}
int sx_id_zero(sid a) { return a.ms == 0 && a.seq == 0; }

int sx_id_incr(sid *id)
{
    if (id->seq == UINT64_MAX) {
        if (id->ms == UINT64_MAX) { id->ms = id->seq = 0; return -1; }
        id->ms++;
        id->seq = 0;
    } else id->seq++;
    return 0;
}

int sx_id_decr(sid *id)
{
    if (id->seq == 0) {
        if (id->ms == 0) { id->ms = id->seq = UINT64_MAX; return -1; }
        id->ms--;
        id->seq = UINT64_MAX;
    } else id->seq--;
    return 0;
}

/* ---------------------------------------------------------------- metadata */


static void meta_dec(const uint8_t *b, smeta *m)
{
    m->length = sx_get64(b);
    m->last = sx_get_id(b + 8);
    m->first = sx_get_id(b + 24);
    m->maxdel = sx_get_id(b + 40);
    m->added = sx_get64(b + 56);
    m->ngroups = sx_get64(b + 64);
    m->next_gid = sx_get64(b + 72);
    m->nnodes = sx_get64(b + 80);
    m->t_start = sx_get_id(b + 88);
    m->t_last = sx_get_id(b + 104);
    m->t_live = sx_get64(b + 120);
    m->t_deleted = sx_get64(b + 128);
    m->t_bytes = sx_get64(b + 136);
    m->t_nf = sx_get64(b + 144);
    m->t_fhash = sx_get64(b + 152);
}

static void meta_enc(uint8_t *b, const smeta *m)
{
    memset(b, 0, FD_SMETA_LEN);
    sx_put64(b, m->length);
    sx_put_id(b + 8, m->last);
    sx_put_id(b + 24, m->first);
    sx_put_id(b + 40, m->maxdel);
    sx_put64(b + 56, m->added);
    sx_put64(b + 64, m->ngroups);
    sx_put64(b + 72, m->next_gid);
    sx_put64(b + 80, m->nnodes);
    sx_put_id(b + 88, m->t_start);
    sx_put_id(b + 104, m->t_last);
    sx_put64(b + 120, m->t_live);
    sx_put64(b + 128, m->t_deleted);
    sx_put64(b + 136, m->t_bytes);
    sx_put64(b + 144, m->t_nf);
    sx_put64(b + 152, m->t_fhash);
}

uint64_t fd_stream_meta_length(const uint8_t *meta) { return sx_get64(meta); }



int sx_s_open(fd_stream_call *c, const resp_arg *key, sref *s)
{
    uint8_t mb[FD_SMETA_LEN];
    memset(s, 0, sizeof *s);
    s->c = c;
    s->key = key;
    int st = c->io->open(c->h, key, &s->sk, mb, &s->exists);
    if (st != FD_OK) return st;
    if (s->exists) meta_dec(mb, &s->m);
    return FD_OK;
}

int sx_s_create(fd_stream_call *c, const resp_arg *key, sref *s)
{
    memset(&s->m, 0, sizeof s->m);
    s->m.next_gid = 1;
    s->c = c;
    int st = c->io->create(c->h, key, &s->sk);
    if (st == FD_OK) s->exists = 1;
    return st;
}

int sx_s_save(sref *s)
{
    uint8_t mb[FD_SMETA_LEN];
    meta_enc(mb, &s->m);
    return s->c->io->save(s->c->h, s->sk, mb);
}

void sx_s_close(sref *s)
{
    if (s->sk) s->c->io->close(s->c->h, s->sk);
    s->sk = NULL;
}

#define IO_GET(s, k, kl, v, vl) (s)->c->io->get((s)->c->h, (s)->sk, k, kl, v, vl)

/* ---------------------------------------------------------------- sub keys */

static uint64_t name_hash(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)p[i]) * 1099511628211ULL;
    h ^= h >> 33; h *= 0xff51afd7ed558ccdULL; h ^= h >> 33;
    return h;
}

static size_t name_enc(uint8_t *out, const char *p, size_t n)
{
    if (n <= NAME_INLINE) { memcpy(out, p, n); return n; }
    memcpy(out, p, NAME_INLINE);
    sx_put64(out + NAME_INLINE, name_hash(p, n));
    return NAME_INLINE + 8;
}

size_t sx_sk_entry(uint8_t *b, sid id) { b[0] = 'x'; sx_put_id(b + 1, id); return 17; }
static size_t sk_node(uint8_t *b, sid id)  { b[0] = 'n'; sx_put_id(b + 1, id); return 17; }
size_t sx_sk_group(uint8_t *b, const char *n, size_t nl) { b[0] = 'g'; return 1 + name_enc(b + 1, n, nl); }
size_t sx_sk_cons(uint8_t *b, uint64_t gid, const char *n, size_t nl)
{
    b[0] = 'c'; sx_put64(b + 1, gid);
    return 9 + name_enc(b + 9, n, nl);
}
size_t sx_sk_pel(uint8_t *b, uint64_t gid, sid id) { b[0] = 'p'; sx_put64(b + 1, gid); sx_put_id(b + 9, id); return 25; }
size_t sx_sk_cpel_pfx(uint8_t *b, uint64_t gid, const char *n, size_t nl)
{
    b[0] = 'q'; sx_put64(b + 1, gid);
    size_t l = name_enc(b + 10, n, nl);
    b[9] = (uint8_t)l;
    return 10 + l;
}

/* ---------------------------------------------------------------- replies */

int sx_add_id(resp_out *o, sid id)
{
    char buf[48];
    int n = snprintf(buf, sizeof buf, "%llu-%llu", (unsigned long long)id.ms, (unsigned long long)id.seq);
    return resp_add_bulk(o, buf, (size_t)n);
}

/* Check an entry blob; *n = its number of field/value pairs. */
int sx_blob_check(const uint8_t *b, size_t bl, uint32_t *n)
{
    if (bl < 4) return FD_E_CORRUPT;
    *n = sx_get32(b);
    size_t off = 4;
    for (uint64_t i = 0; i < 2ULL * *n; i++) {
        if (bl - off < 4) return FD_E_CORRUPT;
        uint32_t l = sx_get32(b + off);
        if (bl - off - 4 < l) return FD_E_CORRUPT;
        off += 4 + l;
    }
    return FD_OK;
}

/* [id, [f, v, ...]] */
int sx_add_entry(resp_out *o, sid id, const uint8_t *b, size_t bl)
{
    uint32_t n;
    int st = sx_blob_check(b, bl, &n);
    if (st != FD_OK) return st;
    if (resp_add_array(o, 2) || sx_add_id(o, id) || resp_add_array(o, 2LL * n)) return FD_E_NOMEM;
    size_t off = 4;
    for (uint64_t i = 0; i < 2ULL * n; i++) {
        uint32_t l = sx_get32(b + off);
        if (resp_add_bulk(o, b + off + 4, l)) return FD_E_NOMEM;
        off += 4 + l;
    }
    return FD_OK;
}

/* The header of an aggregate of n (kind 'a' array, 'm' map) inserted at mark. */
int sx_insert_header(resp_out *o, size_t mark, int kind, long long n)
{
    resp_out h;
    resp_out_init(&h, o->proto);
    int r = kind == 'm' ? resp_add_map(&h, n) : resp_add_array(&h, n);
    if (r == 0) r = resp_out_reserve(o, h.len);
    if (r == 0) {
        memmove(o->data + mark + h.len, o->data + mark, o->len - mark);
        memcpy(o->data + mark, h.data, h.len);
        o->len += h.len;
    }
    resp_out_free(&h);
    return r ? FD_E_NOMEM : FD_OK;
}

int sx_err(fd_stream_call *c, const char *msg)
{
    return resp_add_error(c->out, msg) ? FD_E_NOMEM : FD_OK;
}

/* "-NOGROUP ..." texts carry user names (fmt has two "%.*s"): each stops at
 * a NUL, as Redis's %s, and is not truncated otherwise (Redis's is not). */
int sx_errf_names(fd_stream_call *c, const char *fmt, const resp_arg *a, const resp_arg *b)
{
    int al = (int)strnlen(a->ptr, a->len), bl = (int)strnlen(b->ptr, b->len);
    return resp_add_errorf(c->out, fmt, al, a->ptr, bl, b->ptr) ? FD_E_NOMEM : FD_OK;
}

/* ---------------------------------------------------------------- parsing */


/* Redis's string2ull: a strict integer first (negative: refused), else
 * strtoull's reading (which takes spaces, '+', leading zeros, "-0"). */
static int str2ull(const char *s, unsigned long long *v)
{
    long long ll;
    size_t n = strlen(s);
    if (resp_str2ll(s, n, &ll) == 0) {
        if (ll < 0) return -1;
        *v = (unsigned long long)ll;
        return 0;
    }
    errno = 0;
    char *end = NULL;
    *v = strtoull(s, &end, 10);
    if (errno == EINVAL || errno == ERANGE || !(*s != '\0' && *end == '\0')) return -1;
    return 0;
}

/* streamGenericParseIDOrReply. seq_given: NULL refuses "ms-*". 0 or -1. */
static int parse_id(const char *p, size_t len, sid *id, uint64_t missing_seq, int strict, int *seq_given)
{
    char buf[128];
    if (len > sizeof buf - 1) return -1;
    memcpy(buf, p, len);
    buf[len] = 0;
    if (strict && (buf[0] == '-' || buf[0] == '+') && buf[1] == 0) return -1;
    if (seq_given) *seq_given = 1;
    if (buf[0] == '-' && buf[1] == 0) { *id = SID_MIN; return 0; }
    if (buf[0] == '+' && buf[1] == 0) { *id = SID_MAX; return 0; }
    unsigned long long ms, seq;
    char *dot = strchr(buf, '-');
    if (dot) *dot = 0;
    if (str2ull(buf, &ms) != 0) return -1;
    if (dot) {
        if (seq_given && dot[1] == '*' && dot[2] == 0) {
            seq = 0;
            *seq_given = 0;
        } else if (str2ull(dot + 1, &seq) != 0) return -1;
    } else seq = missing_seq;
    id->ms = ms;
    id->seq = seq;
    return 0;
}

int sx_parse_arg_id(const resp_arg *a, sid *id, uint64_t missing_seq, int strict)
{
    return parse_id(a->ptr, a->len, id, missing_seq, strict, NULL);
}

/* streamParseIntervalIDOrReply: "(" makes the bound exclusive. */
int sx_parse_interval(const resp_arg *a, sid *id, int *ex, uint64_t missing_seq)
{
    *ex = a->len > 1 && a->ptr[0] == '(';
    if (*ex) return parse_id(a->ptr + 1, a->len - 1, id, missing_seq, 1, NULL);
    return parse_id(a->ptr, a->len, id, missing_seq, 0, NULL);
}

/* a's C string (up to a NUL) equals s: Redis's strcmp on sds. */
int sx_cstr_is(const resp_arg *a, const char *s)
{
    size_t n = strlen(s);
    return strnlen(a->ptr, a->len) == n && memcmp(a->ptr, s, n) == 0;
}

int sx_arg_ll(const resp_arg *a, long long *v)
{
    return resp_str2ll(a->ptr, a->len, v);
}

/* ---------------------------------------------------------------- record helpers */



void sx_group_dec(const uint8_t *b, sgroup *g)
{
    g->gid = sx_get64(b);
    g->last = sx_get_id(b + 8);
    g->entries_read = (int64_t)sx_get64(b + 24);
    g->pel = sx_get64(b + 32);
    g->consumers = sx_get64(b + 40);
}

int sx_group_get(sref *s, const char *name, size_t nl, sgroup *g)
{
    uint8_t k[FD_SSUB_MAX];
    size_t kl = sx_sk_group(k, name, nl);
    const void *v; size_t vl;
    int st = IO_GET(s, k, kl, &v, &vl);
    if (st != FD_OK) return st;
    const uint8_t *b = v;
    if (vl < 48 || vl - 48 != nl || (nl && memcmp(b + 48, name, nl) != 0)) return vl < 48 ? FD_E_CORRUPT : FD_NOTFOUND;
    g->name = name; g->nl = nl;
    sx_group_dec(b, g);
    return FD_OK;
}

/* Open argv[1]'s stream and its consumer group argv[2]. FD_OK with *done 0:
 * both are open (sx_s_close(s) after). Otherwise *done is 1, s is closed and
 * the return is the command's: a missing key or group has written
 * "-NOGROUP ..." (FD_OK), a storage error is returned as is. */
int sx_s_open_group(fd_stream_call *c, sref *s, sgroup *g, int *done)
{
    *done = 1;
    FD_TRY(sx_s_open(c, &c->argv[1], s));
    int st = s->exists ? sx_group_get(s, c->argv[2].ptr, c->argv[2].len, g) : FD_NOTFOUND;
    if (st == FD_OK) { *done = 0; return FD_OK; }
    sx_s_close(s);
    if (st != FD_NOTFOUND) return st;
    return sx_errf_names(c, "NOGROUP No such key '%.*s' or consumer group '%.*s'", &c->argv[1], &c->argv[2]);
}

int sx_group_put(sref *s, const sgroup *g)
{
    uint8_t k[FD_SSUB_MAX];
    size_t kl = sx_sk_group(k, g->name, g->nl);
    uint8_t *b = malloc(48 + g->nl);
    if (!b) return FD_E_NOMEM;
    sx_put64(b, g->gid);
    sx_put_id(b + 8, g->last);
    sx_put64(b + 24, (uint64_t)g->entries_read);
    sx_put64(b + 32, g->pel);
    sx_put64(b + 40, g->consumers);
    if (g->nl) memcpy(b + 48, g->name, g->nl);
    int st = IO_PUT(s, k, kl, b, 48 + g->nl);
    free(b);
    return st;
}


int sx_cons_get(sref *s, const sgroup *g, const char *name, size_t nl, scons *cn)
{
    uint8_t k[FD_SSUB_MAX];
    size_t kl = sx_sk_cons(k, g->gid, name, nl);
    const void *v; size_t vl;
    cn->name = name; cn->nl = nl; cn->exists = 0; cn->seen = 0; cn->pel = 0;
    int st = IO_GET(s, k, kl, &v, &vl);
    if (st != FD_OK) return st;
    const uint8_t *b = v;
    if (vl < 16) return FD_E_CORRUPT;
    if (vl - 16 != nl || (nl && memcmp(b + 16, name, nl) != 0)) return FD_NOTFOUND;
    cn->seen = (int64_t)sx_get64(b);
    cn->pel = sx_get64(b + 8);
    cn->exists = 1;
    return FD_OK;
}

int sx_cons_put(sref *s, const sgroup *g, const scons *cn)
{
    uint8_t k[FD_SSUB_MAX];
    size_t kl = sx_sk_cons(k, g->gid, cn->name, cn->nl);
    uint8_t *b = malloc(16 + cn->nl);
    if (!b) return FD_E_NOMEM;
    sx_put64(b, (uint64_t)cn->seen);
    sx_put64(b + 8, cn->pel);
    if (cn->nl) memcpy(b + 16, cn->name, cn->nl);
    int st = IO_PUT(s, k, kl, b, 16 + cn->nl);
    free(b);
    return st;
}

/* Look a consumer up, creating it (seen = now) when missing; *created. */
int sx_cons_lookup_create(sref *s, sgroup *g, const char *name, size_t nl, scons *cn, int *created)
{
    int st = sx_cons_get(s, g, name, nl, cn);
    if (created) *created = 0;
    if (st == FD_NOTFOUND) {
        cn->exists = 1;
        cn->seen = s->c->now_ms;
        cn->pel = 0;
        g->consumers++;
        if (created) *created = 1;
        EV(s->c, STREAM, "xgroup-createconsumer", s->key);   /* Redis's streamCreateConsumer */
        return FD_OK;
    }
    return st;
}


int sx_nack_get(sref *s, const sgroup *g, sid id, snack *n)
{
    uint8_t k[32];
    size_t kl = sx_sk_pel(k, g->gid, id);
    const void *v; size_t vl;
    n->cons = NULL;
    int st = IO_GET(s, k, kl, &v, &vl);
    if (st != FD_OK) return st;
    if (vl < 16) return FD_E_CORRUPT;
    const uint8_t *b = v;
    n->id = id;
    n->dtime = (int64_t)sx_get64(b);
    n->dcount = sx_get64(b + 8);
    n->cl = vl - 16;
    n->cons = malloc(n->cl + 1);
    if (!n->cons) return FD_E_NOMEM;
    memcpy(n->cons, b + 16, n->cl);
    return FD_OK;
}

int sx_nack_put(sref *s, const sgroup *g, sid id, int64_t dtime, uint64_t dcount, const char *cons, size_t cl)
{
    uint8_t k[32];
    size_t kl = sx_sk_pel(k, g->gid, id);
    uint8_t *b = malloc(16 + cl);
    if (!b) return FD_E_NOMEM;
    sx_put64(b, (uint64_t)dtime);
    sx_put64(b + 8, dcount);
    if (cl) memcpy(b + 16, cons, cl);
    int st = IO_PUT(s, k, kl, b, 16 + cl);
    free(b);
    return st;
}

static int cpel_key(uint8_t *k, const sgroup *g, const char *cons, size_t cl, sid id)
{
    size_t l = sx_sk_cpel_pfx(k, g->gid, cons, cl);
    sx_put_id(k + l, id);
    return (int)(l + 16);
}

int sx_cpel_put(sref *s, const sgroup *g, const char *cons, size_t cl, sid id)
{
    uint8_t k[FD_SSUB_MAX];
    int kl = cpel_key(k, g, cons, cl, id);
    return IO_PUT(s, k, (size_t)kl, "", 0);
}

int sx_del_ok(int st) { return st == FD_NOTFOUND ? FD_OK : st; }

int sx_cpel_del(sref *s, const sgroup *g, const char *cons, size_t cl, sid id)
{
    uint8_t k[FD_SSUB_MAX];
    int kl = cpel_key(k, g, cons, cl, id);
    return sx_del_ok(IO_DEL(s, k, (size_t)kl));
}

/* ---------------------------------------------------------------- walks */


int sx_idlist_add(idlist *l, sid id)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 32;
        sid *p = realloc(l->v, cap * sizeof *p);
        if (!p) return FD_E_NOMEM;
        l->v = p;
        l->cap = cap;
    }
    l->v[l->n++] = id;
    return FD_OK;
}


static int one_cb(void *arg, const uint8_t *sub, size_t sl, const void *v, size_t vl)
{
    one_arg *a = arg;
    if (sl > sizeof a->sub) return FD_E_CORRUPT;
    if (sl) memcpy(a->sub, sub, sl);
    a->sl = sl;
    a->v.p = malloc(vl ? vl : 1);
    if (!a->v.p) return FD_E_NOMEM;
    if (vl) memcpy(a->v.p, v, vl);
    a->v.n = vl;
    a->found = 1;
    return FD_SW_STOP;
}

int sx_walk_one(sref *s, const uint8_t *pfx, size_t pl, const uint8_t *from, size_t fl, int rev, one_arg *a)
{
    a->found = 0;
    a->v.p = NULL;
    int st = IO_WALK(s, pfx, pl, from, fl, rev, one_cb, a);
    if (st != FD_OK) { free(a->v.p); a->v.p = NULL; return st; }
    return a->found ? FD_OK : FD_NOTFOUND;
}

/* The first (or, backwards, the last) live entry id: 0-0 and *found 0 when
 * the stream has none (streamLastValidID / the first entry's id). */
static int edge_valid_id(sref *s, int backwards, sid *out, int *found)
{
    uint8_t pfx = 'x', from[17];
    sx_sk_entry(from, backwards ? SID_MAX : SID_MIN);
    one_arg a;
    int st = sx_walk_one(s, &pfx, 1, from, 17, backwards, &a);
    *found = 0;
    if (st == FD_NOTFOUND) { *out = SID_MIN; return FD_OK; }
    if (st != FD_OK) return st;
    *out = sx_get_id(a.sub + 1);
    *found = 1;
    free(a.v.p);
    return FD_OK;
}

int sx_last_valid_id(sref *s, sid *out)
{
    int found;
    return edge_valid_id(s, 1, out, &found);
}

int sx_first_valid_id(sref *s, sid *out, int *found)
{
    return edge_valid_id(s, 0, out, found);
}

int sx_entry_exists(sref *s, sid id)
{
    uint8_t k[17];
    sx_sk_entry(k, id);
    const void *v; size_t vl;
    return IO_GET(s, k, 17, &v, &vl);
}

/* Reply one entry (RAWENTRIES): FD_OK, FD_NOTFOUND (nothing written). */
int sx_reply_entry_at(sref *s, sid id)
{
    uint8_t k[17];
    sx_sk_entry(k, id);
    const void *v; size_t vl;
    int st = IO_GET(s, k, 17, &v, &vl);
    if (st != FD_OK) return st;
    return sx_add_entry(s->c->out, id, v, vl);
}

/* ---------------------------------------------------------------- lag accounting */

int sx_range_has_tombstones(const smeta *m, sid start, sid end)
{
    if (!m->length || sx_id_zero(m->maxdel)) return 0;
    if (sx_idcmp(m->first, m->maxdel) > 0) return 0;
    return sx_idcmp(start, m->maxdel) <= 0 && sx_idcmp(m->maxdel, end) <= 0;
}

long long sx_estimate_distance(const smeta *m, sid id)
{
    if (!m->added) return 0;
    if (!m->length && sx_idcmp(id, m->last) < 1) return (long long)m->added;
    int cl = sx_idcmp(id, m->last);
    if (cl == 0) return (long long)m->added;
    if (cl > 0) return INVALID_READ;
    int cf = sx_idcmp(id, m->first), cx = sx_idcmp(m->maxdel, m->first);
    if (sx_id_zero(m->maxdel) || cx < 0) {
        if (cf < 0) return (long long)(m->added - m->length);
        if (cf == 0) return (long long)(m->added - m->length + 1);
    }
    return INVALID_READ;
}

int sx_reply_lag(resp_out *o, const smeta *m, const sgroup *g)
{
    long long lag = 0;
    int valid = 0;
    if (!m->added) valid = 1;
    else if (g->entries_read != INVALID_READ && !sx_range_has_tombstones(m, g->last, SID_MAX)) {
        lag = (long long)m->added - g->entries_read;
        valid = 1;
    } else {
        long long er = sx_estimate_distance(m, g->last);
        if (er != INVALID_READ) { lag = (long long)m->added - er; valid = 1; }
    }
    return (valid ? resp_add_int(o, lag) : resp_add_null(o)) ? FD_E_NOMEM : FD_OK;
}

/* ---------------------------------------------------------------- listpack size emulation */

static size_t lp_backlen(size_t l)
{
    if (l <= 127) return 1;
    if (l < 16383) return 2;
    if (l < 2097151) return 3;
    if (l < 268435455) return 4;
    return 5;
}

static size_t lp_int_enc(int64_t v)
{
    if (v >= 0 && v <= 127) return 1;
    if (v >= -4096 && v <= 4095) return 2;
    if (v >= -32768 && v <= 32767) return 3;
    if (v >= -8388608 && v <= 8388607) return 4;
    if (v >= -2147483648LL && v <= 2147483647LL) return 5;
    return 9;
}

static size_t lp_int(int64_t v) { size_t e = lp_int_enc(v); return e + lp_backlen(e); }

/* lpStringToInt64: a canonical int64 decimal. */
static int lp_str_int(const char *s, size_t n, int64_t *v)
{
    if (n == 0 || n > 20) return 0;
    long long ll;
    if (resp_str2ll(s, n, &ll) != 0) return 0;
    char buf[32];
    int l = snprintf(buf, sizeof buf, "%lld", ll);
    if ((size_t)l != n || memcmp(buf, s, n) != 0) return 0;
    *v = ll;
    return 1;
}

static size_t lp_str(const char *s, size_t n)
{
    int64_t v;
    if (lp_str_int(s, n, &v)) return lp_int(v);
    size_t e = n < 64 ? 1 + n : n < 4096 ? 2 + n : 5 + n;
    return e + lp_backlen(e);
}


static int is_tail(const sref *s, sid start) { return s->m.nnodes && sx_idcmp(start, s->m.t_start) == 0; }

static int node_dec(sref *s, const uint8_t *sub, size_t sl, copyv v, snode *n)
{
    if (sl != 17 || v.n < 44) return FD_E_CORRUPT;
    n->start = sx_get_id(sub + 1);
    n->live = sx_get64(v.p);
    n->deleted = sx_get64(v.p + 8);
    n->bytes = sx_get64(v.p + 16);
    n->last = sx_get_id(v.p + 24);
    n->nf = sx_get32(v.p + 40);
    n->raw = v;
    if (is_tail(s, n->start)) {
        n->live = s->m.t_live;
        n->deleted = s->m.t_deleted;
        n->bytes = s->m.t_bytes;
        n->last = s->m.t_last;
    }
    return FD_OK;
}

static uint64_t fields_hash_raw(const copyv *raw, uint32_t nf)
{
    uint64_t h = 1469598103934665603ULL;
    size_t off = 44;
    for (uint32_t i = 0; i < nf && raw->n - off >= 4; i++) {
        uint32_t l = sx_get32(raw->p + off);
        if (raw->n - off - 4 < l) break;
        for (size_t j = 0; j < 4 + (size_t)l; j++) h = (h ^ raw->p[off + j]) * 1099511628211ULL;
        off += 4 + l;
    }
    return h;
}

static uint64_t fields_hash_args(const resp_arg *fv, int nf)
{
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < nf; i++) {
        uint8_t lb[4];
        sx_put32(lb, (uint32_t)fv[2 * i].len);
        for (int j = 0; j < 4; j++) h = (h ^ lb[j]) * 1099511628211ULL;
        for (size_t j = 0; j < fv[2 * i].len; j++) h = (h ^ (uint8_t)fv[2 * i].ptr[j]) * 1099511628211ULL;
    }
    return h;
}

void sx_tail_set(sref *s, const snode *n)
{
    s->m.t_start = n->start;
    s->m.t_last = n->last;
    s->m.t_live = n->live;
    s->m.t_deleted = n->deleted;
    s->m.t_bytes = n->bytes;
    s->m.t_nf = n->nf;
    s->m.t_fhash = fields_hash_raw(&n->raw, n->nf);
}

int sx_node_write(sref *s, snode *n)
{
    uint8_t k[17];
    sk_node(k, n->start);
    sx_put64(n->raw.p, n->live);
    sx_put64(n->raw.p + 8, n->deleted);
    sx_put64(n->raw.p + 16, n->bytes);
    sx_put_id(n->raw.p + 24, n->last);
    return IO_PUT(s, k, 17, n->raw.p, n->raw.n);
}

/* Store a node's counters: the tail's go to the metadata only. */
static int node_store(sref *s, snode *n)
{
    if (is_tail(s, n->start)) {
        s->m.t_live = n->live;
        s->m.t_deleted = n->deleted;
        s->m.t_bytes = n->bytes;
        s->m.t_last = n->last;
        return FD_OK;
    }
    return sx_node_write(s, n);
}

/* After the tail node's record was deleted (s->m.nnodes already counts it
 * out): the last remaining node, whose record is up to date, is the tail. */
static int tail_reload(sref *s)
{
    if (!s->m.nnodes) { memset(&s->m.t_start, 0, sizeof s->m.t_start); return FD_OK; }
    uint8_t pfx = 'n', from[17];
    sk_node(from, SID_MAX);
    one_arg a;
    int st = sx_walk_one(s, &pfx, 1, from, 17, 1, &a);
    if (st == FD_NOTFOUND) { s->m.nnodes = 0; return FD_OK; }
    if (st != FD_OK) return st;
    snode n;
    uint64_t keep = s->m.nnodes;
    s->m.nnodes = 0;                       /* decode the record as it is */
    st = node_dec(s, a.sub, a.sl, a.v, &n);
    s->m.nnodes = keep;
    if (st == FD_OK) sx_tail_set(s, &n);
    free(a.v.p);
    return st;
}

/* Delete the record of node n (whole node gone). */
static int node_drop(sref *s, const snode *n)
{
    uint8_t k[17];
    sk_node(k, n->start);
    int was_tail = is_tail(s, n->start);
    int st = sx_del_ok(IO_DEL(s, k, 17));
    if (st != FD_OK) return st;
    s->m.nnodes--;
    return was_tail ? tail_reload(s) : FD_OK;
}

/* The node met first walking from id: backward, the last node starting at
 * or before id; forward, the first starting at or after it. */
static int node_walk(sref *s, sid id, int backward, snode *n)
{
    uint8_t pfx = 'n', from[17];
    sk_node(from, id);
    one_arg a;
    int st = sx_walk_one(s, &pfx, 1, from, 17, backward, &a);
    if (st != FD_OK) return st;
    st = node_dec(s, a.sub, a.sl, a.v, n);
    if (st != FD_OK) free(a.v.p);
    return st;
}

/* The node holding id (the last node starting at or before it). */
static int node_of(sref *s, sid id, snode *n) { return node_walk(s, id, 1, n); }

static int node_first(sref *s, snode *n) { return node_walk(s, SID_MIN, 0, n); }

/* An entry of id left the stream (XDEL, exact trim): its node's counters. */
int sx_node_entry_gone(sref *s, sid id, int allow_drop)
{
    snode n;
    int st = node_of(s, id, &n);
    if (st == FD_NOTFOUND) return FD_OK;
    if (st != FD_OK) return st;
    if (allow_drop && n.live <= 1) {
        st = node_drop(s, &n);
    } else {
        if (n.live) n.live--;
        n.deleted++;
        st = node_store(s, &n);
    }
    free(n.raw.p);
    return st;
}

/* ---------------------------------------------------------------- append */

int sx_append_entry(sref *s, sid id, const resp_arg *fv, int nf)
{
    /* the entry record */
    size_t bl = 4;
    size_t tot = 0;
    for (int i = 0; i < 2 * nf; i++) { bl += 4 + fv[i].len; tot += fv[i].len; }
    uint8_t *b = malloc(bl);
    if (!b) return FD_E_NOMEM;
    sx_put32(b, (uint32_t)nf);
    size_t off = 4;
    for (int i = 0; i < 2 * nf; i++) {
        sx_put32(b + off, (uint32_t)fv[i].len);
        memcpy(b + off + 4, fv[i].ptr, fv[i].len);
        off += 4 + fv[i].len;
    }
    uint8_t k[17];
    sx_sk_entry(k, id);
    int st = IO_PUT(s, k, 17, b, bl);
    free(b);
    if (st != FD_OK) return st;

    /* its listpack node: the tail's state is in the metadata */
    snode n;
    int have = s->m.nnodes > 0, same = 0;
    if (have && (s->m.t_bytes + tot >= NODE_MAX_BYTES || s->m.t_live + s->m.t_deleted >= NODE_MAX_ENTRIES)) {
        /* the tail is full: bring its record up to date, start a new node */
        uint8_t nk[17];
        sk_node(nk, s->m.t_start);
        const void *v; size_t vl;
        st = IO_GET(s, nk, 17, &v, &vl);
        if (st != FD_OK) return st == FD_NOTFOUND ? FD_E_CORRUPT : st;
        if (vl < 44) return FD_E_CORRUPT;
        uint8_t *cp = malloc(vl);
        if (!cp) return FD_E_NOMEM;
        memcpy(cp, v, vl);
        snode old = { .start = s->m.t_start, .last = s->m.t_last, .live = s->m.t_live,
                      .deleted = s->m.t_deleted, .bytes = s->m.t_bytes, .raw = { cp, vl }, .nf = (uint32_t)s->m.t_nf };
        st = sx_node_write(s, &old);
        free(cp);
        if (st != FD_OK) return st;
        have = 0;
    }
    if (!have) {
        size_t rl = 44;
        for (int i = 0; i < nf; i++) rl += 4 + fv[2 * i].len;
        n.raw.p = malloc(rl);
        if (!n.raw.p) return FD_E_NOMEM;
        n.raw.n = rl;
        memset(n.raw.p, 0, 44);
        sx_put32(n.raw.p + 40, (uint32_t)nf);
        off = 44;
        n.bytes = 7 + lp_int(1) + lp_int(0) + lp_int(nf) + lp_int(0);
        for (int i = 0; i < nf; i++) {
            sx_put32(n.raw.p + off, (uint32_t)fv[2 * i].len);
            memcpy(n.raw.p + off + 4, fv[2 * i].ptr, fv[2 * i].len);
            off += 4 + fv[2 * i].len;
            n.bytes += lp_str(fv[2 * i].ptr, fv[2 * i].len);
        }
        n.start = id;
        n.last = id;
        n.live = n.deleted = 0;
        n.nf = (uint32_t)nf;
        st = sx_node_write(s, &n);            /* the master fields, once */
        if (st == FD_OK) sx_tail_set(s, &n);
        free(n.raw.p);
        if (st != FD_OK) return st;
        s->m.nnodes++;
        same = 1;
    } else {
        same = s->m.t_nf == (uint64_t)nf && s->m.t_fhash == fields_hash_args(fv, nf);
    }
    n.start = s->m.t_start;
    size_t eb = lp_int(same ? 2 : 0) + lp_int((int64_t)(id.ms - n.start.ms)) + lp_int((int64_t)(id.seq - n.start.seq));
    if (!same) eb += lp_int(nf);
    for (int i = 0; i < nf; i++) {
        if (!same) eb += lp_str(fv[2 * i].ptr, fv[2 * i].len);
        eb += lp_str(fv[2 * i + 1].ptr, fv[2 * i + 1].len);
    }
    eb += lp_int(nf + 3 + (same ? 0 : nf + 1));
    s->m.t_bytes += eb;
    s->m.t_live++;
    s->m.t_last = id;
    s->m.length++;
    s->m.added++;
    s->m.last = id;
    if (s->m.length == 1) s->m.first = id;
    return FD_OK;
}

/* ---------------------------------------------------------------- trimming */

enum { TRIM_NONE, TRIM_MAXLEN, TRIM_MINID };


/* Collect entry ids of [from, to] (at most max, 0 = all). */
typedef struct coll_arg { idlist *l; sid to; size_t max; } coll_arg;

static int coll_cb(void *arg, const uint8_t *sub, size_t sl, const void *v, size_t vl)
{
    (void)v; (void)vl;
    coll_arg *a = arg;
    if (sl != 17) return FD_E_CORRUPT;
    sid id = sx_get_id(sub + 1);
    if (sx_idcmp(id, a->to) > 0) return FD_SW_STOP;
    int st = sx_idlist_add(a->l, id);
    if (st != FD_OK) return st;
    return a->max && a->l->n >= a->max ? FD_SW_STOP : FD_SW_NEXT;
}

static int collect_entries(sref *s, sid from, sid to, size_t max, idlist *l)
{
    uint8_t pfx = 'x', f[17];
    sx_sk_entry(f, from);
    coll_arg a = { l, to, max };
    return IO_WALK(s, &pfx, 1, f, 17, 0, coll_cb, &a);
}

int sx_del_entry(sref *s, sid id)
{
    uint8_t k[17];
    sx_sk_entry(k, id);
    return sx_del_ok(IO_DEL(s, k, 17));
}

/* streamTrim: the number of entries removed in *deleted. */
int sx_stream_trim(sref *s, const trim_args *t, long long *deleted_out)
{
    long long deleted = 0;
    int st = FD_OK;
    *deleted_out = 0;
    if (t->strategy == TRIM_NONE) return FD_OK;
    for (;;) {
        if (t->strategy == TRIM_MAXLEN && s->m.length <= (uint64_t)t->maxlen) break;
        snode n;
        st = node_first(s, &n);
        if (st == FD_NOTFOUND) { st = FD_OK; break; }
        if (st != FD_OK) return st;
        long long entries = (long long)n.live;
        if (t->limit && deleted + entries > t->limit) { free(n.raw.p); break; }
        int remove_node = t->strategy == TRIM_MAXLEN
            ? s->m.length - (uint64_t)entries >= (uint64_t)t->maxlen
            : sx_idcmp(n.last, t->minid) < 0;
        if (remove_node) {
            idlist l = {0};
            st = collect_entries(s, n.start, n.last, 0, &l);
            for (size_t i = 0; st == FD_OK && i < l.n; i++) st = sx_del_entry(s, l.v[i]);
            free(l.v);
            if (st == FD_OK) st = node_drop(s, &n);
            free(n.raw.p);
            if (st != FD_OK) return st;
            s->m.length -= (uint64_t)entries;
            deleted += entries;
            continue;
        }
        if (t->approx) { free(n.raw.p); break; }
        /* exact: delete entries inside this node from its start */
        idlist l = {0};
        st = collect_entries(s, n.start, n.last, 0, &l);
        long long from_node = 0;
        for (size_t i = 0; st == FD_OK && i < l.n; i++) {
            if (t->strategy == TRIM_MAXLEN ? s->m.length <= (uint64_t)t->maxlen : sx_idcmp(l.v[i], t->minid) >= 0) break;
            st = sx_del_entry(s, l.v[i]);
            from_node++;
            s->m.length--;
        }
        free(l.v);
        if (st == FD_OK && from_node) {
            n.live -= (uint64_t)from_node;
            n.deleted += (uint64_t)from_node;
            st = node_store(s, &n);
        }
        free(n.raw.p);
        if (st != FD_OK) return st;
        deleted += from_node;
        break;
    }
    if (deleted) {
        if (s->m.length == 0) s->m.first = SID_MIN;
        else {
            int found;
            FD_TRY(sx_first_valid_id(s, &s->m.first, &found));
        }
    }
    *deleted_out = deleted;
    return st;
}

/* MAXLEN or MINID at argv[*i] (more arguments follow it): refuse a second
 * strategy, then take an optional "~" (approximate) or "=" before the
 * threshold, leaving *i on the argument before the threshold. 0, or -1 with
 * the error replied. */
static int trim_strategy_start(fd_stream_call *c, trim_args *a, int *i, int more)
{
    if (a->strategy != TRIM_NONE) {
        sx_err(c, "ERR syntax error, MAXLEN and MINID options at the same time are not compatible");
        return -1;
    }
    a->approx = 0;
    const resp_arg *nx = &c->argv[*i + 1];
    if (more >= 2 && sx_cstr_is(nx, "~")) { a->approx = 1; (*i)++; }
    else if (more >= 2 && sx_cstr_is(nx, "=")) (*i)++;
    return 0;
}

/* streamParseAddOrTrimArgsOrReply: the id's position (XADD), or -1 when an
 * error was replied, or -2 - status on a storage/memory failure. */
int sx_parse_add_trim(fd_stream_call *c, trim_args *a, int xadd)
{
    memset(a, 0, sizeof *a);
    a->maxlen = -1;
    int i = 2, limit_given = 0;
    for (; i < c->argc; i++) {
        int more = c->argc - 1 - i;
        const resp_arg *o = &c->argv[i];
        if (xadd && sx_cstr_is(o, "*")) break;
        else if (resp_arg_is(o, "maxlen") && more) {
            if (trim_strategy_start(c, a, &i, more) != 0) return -1;
            if (sx_arg_ll(&c->argv[i + 1], &a->maxlen) != 0) {
                sx_err(c, "ERR value is not an integer or out of range");
                return -1;
            }
            if (a->maxlen < 0) { sx_err(c, "ERR The MAXLEN argument must be >= 0."); return -1; }
            i++;
            a->strategy = TRIM_MAXLEN;
        } else if (resp_arg_is(o, "minid") && more) {
            if (trim_strategy_start(c, a, &i, more) != 0) return -1;
            if (sx_parse_arg_id(&c->argv[i + 1], &a->minid, 0, 1) != 0) { sx_err(c, E_INVALID_ID); return -1; }
            i++;
            a->strategy = TRIM_MINID;
        } else if (resp_arg_is(o, "limit") && more) {
            if (sx_arg_ll(&c->argv[i + 1], &a->limit) != 0) {
                sx_err(c, "ERR value is not an integer or out of range");
                return -1;
            }
            if (a->limit < 0) { sx_err(c, "ERR The LIMIT argument must be >= 0."); return -1; }
            limit_given = 1;
            i++;
        } else if (xadd && resp_arg_is(o, "nomkstream")) {
            a->no_mkstream = 1;
        } else if (xadd) {
            if (parse_id(o->ptr, o->len, &a->id, 0, 1, &a->seq_given) != 0) { sx_err(c, E_INVALID_ID); return -1; }
            a->id_given = 1;
            break;
        } else {
            sx_err(c, "ERR syntax error");
            return -1;
        }
    }
    if (a->limit && a->strategy == TRIM_NONE) {
        sx_err(c, "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy");
        return -1;
    }
    if (!xadd && a->strategy == TRIM_NONE) {
        sx_err(c, "ERR syntax error, XTRIM must be called with a trimming strategy");
        return -1;
    }
    if (limit_given) {
        if (!a->approx) {
            sx_err(c, "ERR syntax error, LIMIT cannot be used without the special ~ option");
            return -1;
        }
    } else {
        a->limit = a->approx ? 100 * NODE_MAX_ENTRIES : 0;
        if (a->approx && (a->limit <= 0 || a->limit > 10000)) a->limit = 10000;
    }
    return i;
}
