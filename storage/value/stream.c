/* stream.c — Redis 7.0 stream commands over fd_stream_io (see stream.h).
 * The rules, reply shapes and error texts follow redis 7.0's t_stream.c
 * (learned from it, written here anew); the sub-record layouts are ours. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "stream.h"
#include "rdb.h"
#include "../status.h"
#include "../host.h"

typedef struct sid { uint64_t ms, seq; } sid;

static const sid SID_MIN = {0, 0};
static const sid SID_MAX = {UINT64_MAX, UINT64_MAX};

#define NODE_MAX_ENTRIES 100     /* stream-node-max-entries */
#define NODE_MAX_BYTES   4096    /* stream-node-max-bytes */
#define NAME_INLINE      200
#define INVALID_READ     (-1LL)  /* SCG_INVALID_ENTRIES_READ */

/* ---------------------------------------------------------------- bytes */

static void put64(uint8_t *p, uint64_t v) { for (int i = 7; i >= 0; i--) { p[i] = (uint8_t)v; v >>= 8; } }
static uint64_t get64(const uint8_t *p) { uint64_t v = 0; for (int i = 0; i < 8; i++) v = (v << 8) | p[i]; return v; }
static void put32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v; }
static uint32_t get32(const uint8_t *p) { return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]; }
static void put_id(uint8_t *p, sid id) { put64(p, id.ms); put64(p + 8, id.seq); }
static sid get_id(const uint8_t *p) { sid id = { get64(p), get64(p + 8) }; return id; }

static int idcmp(sid a, sid b)
{
    if (a.ms != b.ms) return a.ms > b.ms ? 1 : -1;
    if (a.seq != b.seq) return a.seq > b.seq ? 1 : -1;
    return 0;
}
static int id_zero(sid a) { return a.ms == 0 && a.seq == 0; }

static int id_incr(sid *id)
{
    if (id->seq == UINT64_MAX) {
        if (id->ms == UINT64_MAX) { id->ms = id->seq = 0; return -1; }
        id->ms++;
        id->seq = 0;
    } else id->seq++;
    return 0;
}

static int id_decr(sid *id)
{
    if (id->seq == 0) {
        if (id->ms == 0) { id->ms = id->seq = UINT64_MAX; return -1; }
        id->ms--;
        id->seq = UINT64_MAX;
    } else id->seq--;
    return 0;
}

/* ---------------------------------------------------------------- metadata */

typedef struct smeta {
    uint64_t length;
    sid      last, first, maxdel;
    uint64_t added, ngroups, next_gid, nnodes;
    /* the tail node's live state (its 'n' record is brought up to date
     * only when another node becomes the tail): XADD reads no node record */
    sid      t_start, t_last;
    uint64_t t_live, t_deleted, t_bytes, t_nf, t_fhash;
} smeta;

static void meta_dec(const uint8_t *b, smeta *m)
{
    m->length = get64(b);
    m->last = get_id(b + 8);
    m->first = get_id(b + 24);
    m->maxdel = get_id(b + 40);
    m->added = get64(b + 56);
    m->ngroups = get64(b + 64);
    m->next_gid = get64(b + 72);
    m->nnodes = get64(b + 80);
    m->t_start = get_id(b + 88);
    m->t_last = get_id(b + 104);
    m->t_live = get64(b + 120);
    m->t_deleted = get64(b + 128);
    m->t_bytes = get64(b + 136);
    m->t_nf = get64(b + 144);
    m->t_fhash = get64(b + 152);
}

static void meta_enc(uint8_t *b, const smeta *m)
{
    memset(b, 0, FD_SMETA_LEN);
    put64(b, m->length);
    put_id(b + 8, m->last);
    put_id(b + 24, m->first);
    put_id(b + 40, m->maxdel);
    put64(b + 56, m->added);
    put64(b + 64, m->ngroups);
    put64(b + 72, m->next_gid);
    put64(b + 80, m->nnodes);
    put_id(b + 88, m->t_start);
    put_id(b + 104, m->t_last);
    put64(b + 120, m->t_live);
    put64(b + 128, m->t_deleted);
    put64(b + 136, m->t_bytes);
    put64(b + 144, m->t_nf);
    put64(b + 152, m->t_fhash);
}

uint64_t fd_stream_meta_length(const uint8_t *meta) { return get64(meta); }

/* An open stream. */
typedef struct sref {
    fd_stream_call *c;
    const resp_arg *key;
    void *sk;
    int   exists;
    smeta m;
} sref;

/* Raise a keyspace event on key (fd_stream_io.event). */
#define EV(c, cls, name, key) \
    do { if ((c)->io->event && fd_notify_on(FD_NOTIFY_##cls)) (c)->io->event((c)->h, FD_NOTIFY_##cls, name, key); } while (0)

static int s_open(fd_stream_call *c, const resp_arg *key, sref *s)
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

static int s_create(fd_stream_call *c, const resp_arg *key, sref *s)
{
    memset(&s->m, 0, sizeof s->m);
    s->m.next_gid = 1;
    s->c = c;
    int st = c->io->create(c->h, key, &s->sk);
    if (st == FD_OK) s->exists = 1;
    return st;
}

static int s_save(sref *s)
{
    uint8_t mb[FD_SMETA_LEN];
    meta_enc(mb, &s->m);
    return s->c->io->save(s->c->h, s->sk, mb);
}

static void s_close(sref *s)
{
    if (s->sk) s->c->io->close(s->c->h, s->sk);
    s->sk = NULL;
}

#define IO_GET(s, k, kl, v, vl) (s)->c->io->get((s)->c->h, (s)->sk, k, kl, v, vl)
#define IO_PUT(s, k, kl, v, vl) (s)->c->io->put((s)->c->h, (s)->sk, k, kl, v, vl)
#define IO_DEL(s, k, kl)        (s)->c->io->del((s)->c->h, (s)->sk, k, kl)
#define IO_WALK(s, p, pl, f, fl, rev, fn, arg) (s)->c->io->walk((s)->c->h, (s)->sk, p, pl, f, fl, rev, fn, arg)

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
    put64(out + NAME_INLINE, name_hash(p, n));
    return NAME_INLINE + 8;
}

static size_t sk_entry(uint8_t *b, sid id) { b[0] = 'x'; put_id(b + 1, id); return 17; }
static size_t sk_node(uint8_t *b, sid id)  { b[0] = 'n'; put_id(b + 1, id); return 17; }
static size_t sk_group(uint8_t *b, const char *n, size_t nl) { b[0] = 'g'; return 1 + name_enc(b + 1, n, nl); }
static size_t sk_cons(uint8_t *b, uint64_t gid, const char *n, size_t nl)
{
    b[0] = 'c'; put64(b + 1, gid);
    return 9 + name_enc(b + 9, n, nl);
}
static size_t sk_pel(uint8_t *b, uint64_t gid, sid id) { b[0] = 'p'; put64(b + 1, gid); put_id(b + 9, id); return 25; }
static size_t sk_cpel_pfx(uint8_t *b, uint64_t gid, const char *n, size_t nl)
{
    b[0] = 'q'; put64(b + 1, gid);
    size_t l = name_enc(b + 10, n, nl);
    b[9] = (uint8_t)l;
    return 10 + l;
}

/* ---------------------------------------------------------------- replies */

static int add_id(resp_out *o, sid id)
{
    char buf[48];
    int n = snprintf(buf, sizeof buf, "%llu-%llu", (unsigned long long)id.ms, (unsigned long long)id.seq);
    return resp_add_bulk(o, buf, (size_t)n);
}

/* Check an entry blob; *n = its number of field/value pairs. */
static int blob_check(const uint8_t *b, size_t bl, uint32_t *n)
{
    if (bl < 4) return FD_E_CORRUPT;
    *n = get32(b);
    size_t off = 4;
    for (uint64_t i = 0; i < 2ULL * *n; i++) {
        if (bl - off < 4) return FD_E_CORRUPT;
        uint32_t l = get32(b + off);
        if (bl - off - 4 < l) return FD_E_CORRUPT;
        off += 4 + l;
    }
    return FD_OK;
}

/* [id, [f, v, ...]] */
static int add_entry(resp_out *o, sid id, const uint8_t *b, size_t bl)
{
    uint32_t n;
    int st = blob_check(b, bl, &n);
    if (st != FD_OK) return st;
    if (resp_add_array(o, 2) || add_id(o, id) || resp_add_array(o, 2LL * n)) return FD_E_NOMEM;
    size_t off = 4;
    for (uint64_t i = 0; i < 2ULL * n; i++) {
        uint32_t l = get32(b + off);
        if (resp_add_bulk(o, b + off + 4, l)) return FD_E_NOMEM;
        off += 4 + l;
    }
    return FD_OK;
}

/* The header of an aggregate of n (kind 'a' array, 'm' map) inserted at mark. */
static int insert_header(resp_out *o, size_t mark, int kind, long long n)
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

static int err(fd_stream_call *c, const char *msg)
{
    return resp_add_error(c->out, msg) ? FD_E_NOMEM : FD_OK;
}

/* "-NOGROUP ..." texts carry user names (fmt has two "%.*s"): each stops at
 * a NUL, as Redis's %s, and is not truncated otherwise (Redis's is not). */
static int errf_names(fd_stream_call *c, const char *fmt, const resp_arg *a, const resp_arg *b)
{
    int al = (int)strnlen(a->ptr, a->len), bl = (int)strnlen(b->ptr, b->len);
    return resp_add_errorf(c->out, fmt, al, a->ptr, bl, b->ptr) ? FD_E_NOMEM : FD_OK;
}

/* ---------------------------------------------------------------- parsing */

#define E_INVALID_ID "ERR Invalid stream ID specified as stream command argument"

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

static int parse_arg_id(const resp_arg *a, sid *id, uint64_t missing_seq, int strict)
{
    return parse_id(a->ptr, a->len, id, missing_seq, strict, NULL);
}

/* streamParseIntervalIDOrReply: "(" makes the bound exclusive. */
static int parse_interval(const resp_arg *a, sid *id, int *ex, uint64_t missing_seq)
{
    *ex = a->len > 1 && a->ptr[0] == '(';
    if (*ex) return parse_id(a->ptr + 1, a->len - 1, id, missing_seq, 1, NULL);
    return parse_id(a->ptr, a->len, id, missing_seq, 0, NULL);
}

/* a's C string (up to a NUL) equals s: Redis's strcmp on sds. */
static int cstr_is(const resp_arg *a, const char *s)
{
    size_t n = strlen(s);
    return strnlen(a->ptr, a->len) == n && memcmp(a->ptr, s, n) == 0;
}

static int arg_ll(const resp_arg *a, long long *v)
{
    return resp_str2ll(a->ptr, a->len, v);
}

/* ---------------------------------------------------------------- record helpers */

typedef struct copyv { uint8_t *p; size_t n; } copyv;

/* -- groups */
typedef struct sgroup {
    const char *name; size_t nl;
    uint64_t gid;
    sid      last;
    int64_t  entries_read;
    uint64_t pel, consumers;
} sgroup;

static void group_dec(const uint8_t *b, sgroup *g)
{
    g->gid = get64(b);
    g->last = get_id(b + 8);
    g->entries_read = (int64_t)get64(b + 24);
    g->pel = get64(b + 32);
    g->consumers = get64(b + 40);
}

static int group_get(sref *s, const char *name, size_t nl, sgroup *g)
{
    uint8_t k[FD_SSUB_MAX];
    size_t kl = sk_group(k, name, nl);
    const void *v; size_t vl;
    int st = IO_GET(s, k, kl, &v, &vl);
    if (st != FD_OK) return st;
    const uint8_t *b = v;
    if (vl < 48 || vl - 48 != nl || (nl && memcmp(b + 48, name, nl) != 0)) return vl < 48 ? FD_E_CORRUPT : FD_NOTFOUND;
    g->name = name; g->nl = nl;
    group_dec(b, g);
    return FD_OK;
}

/* Open argv[1]'s stream and its consumer group argv[2]. FD_OK with *done 0:
 * both are open (s_close(s) after). Otherwise *done is 1, s is closed and
 * the return is the command's: a missing key or group has written
 * "-NOGROUP ..." (FD_OK), a storage error is returned as is. */
static int s_open_group(fd_stream_call *c, sref *s, sgroup *g, int *done)
{
    *done = 1;
    FD_TRY(s_open(c, &c->argv[1], s));
    int st = s->exists ? group_get(s, c->argv[2].ptr, c->argv[2].len, g) : FD_NOTFOUND;
    if (st == FD_OK) { *done = 0; return FD_OK; }
    s_close(s);
    if (st != FD_NOTFOUND) return st;
    return errf_names(c, "NOGROUP No such key '%.*s' or consumer group '%.*s'", &c->argv[1], &c->argv[2]);
}

static int group_put(sref *s, const sgroup *g)
{
    uint8_t k[FD_SSUB_MAX];
    size_t kl = sk_group(k, g->name, g->nl);
    uint8_t *b = malloc(48 + g->nl);
    if (!b) return FD_E_NOMEM;
    put64(b, g->gid);
    put_id(b + 8, g->last);
    put64(b + 24, (uint64_t)g->entries_read);
    put64(b + 32, g->pel);
    put64(b + 40, g->consumers);
    if (g->nl) memcpy(b + 48, g->name, g->nl);
    int st = IO_PUT(s, k, kl, b, 48 + g->nl);
    free(b);
    return st;
}

/* -- consumers */
typedef struct scons {
    const char *name; size_t nl;
    int64_t  seen;
    uint64_t pel;
    int      exists;
} scons;

static int cons_get(sref *s, const sgroup *g, const char *name, size_t nl, scons *cn)
{
    uint8_t k[FD_SSUB_MAX];
    size_t kl = sk_cons(k, g->gid, name, nl);
    const void *v; size_t vl;
    cn->name = name; cn->nl = nl; cn->exists = 0; cn->seen = 0; cn->pel = 0;
    int st = IO_GET(s, k, kl, &v, &vl);
    if (st != FD_OK) return st;
    const uint8_t *b = v;
    if (vl < 16) return FD_E_CORRUPT;
    if (vl - 16 != nl || (nl && memcmp(b + 16, name, nl) != 0)) return FD_NOTFOUND;
    cn->seen = (int64_t)get64(b);
    cn->pel = get64(b + 8);
    cn->exists = 1;
    return FD_OK;
}

static int cons_put(sref *s, const sgroup *g, const scons *cn)
{
    uint8_t k[FD_SSUB_MAX];
    size_t kl = sk_cons(k, g->gid, cn->name, cn->nl);
    uint8_t *b = malloc(16 + cn->nl);
    if (!b) return FD_E_NOMEM;
    put64(b, (uint64_t)cn->seen);
    put64(b + 8, cn->pel);
    if (cn->nl) memcpy(b + 16, cn->name, cn->nl);
    int st = IO_PUT(s, k, kl, b, 16 + cn->nl);
    free(b);
    return st;
}

/* Look a consumer up, creating it (seen = now) when missing; *created. */
static int cons_lookup_create(sref *s, sgroup *g, const char *name, size_t nl, scons *cn, int *created)
{
    int st = cons_get(s, g, name, nl, cn);
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

/* -- pending entries */
typedef struct snack {
    sid      id;
    int64_t  dtime;
    uint64_t dcount;
    char    *cons;      /* owned copy */
    size_t   cl;
} snack;

static int nack_get(sref *s, const sgroup *g, sid id, snack *n)
{
    uint8_t k[32];
    size_t kl = sk_pel(k, g->gid, id);
    const void *v; size_t vl;
    n->cons = NULL;
    int st = IO_GET(s, k, kl, &v, &vl);
    if (st != FD_OK) return st;
    if (vl < 16) return FD_E_CORRUPT;
    const uint8_t *b = v;
    n->id = id;
    n->dtime = (int64_t)get64(b);
    n->dcount = get64(b + 8);
    n->cl = vl - 16;
    n->cons = malloc(n->cl + 1);
    if (!n->cons) return FD_E_NOMEM;
    memcpy(n->cons, b + 16, n->cl);
    return FD_OK;
}

static int nack_put(sref *s, const sgroup *g, sid id, int64_t dtime, uint64_t dcount, const char *cons, size_t cl)
{
    uint8_t k[32];
    size_t kl = sk_pel(k, g->gid, id);
    uint8_t *b = malloc(16 + cl);
    if (!b) return FD_E_NOMEM;
    put64(b, (uint64_t)dtime);
    put64(b + 8, dcount);
    if (cl) memcpy(b + 16, cons, cl);
    int st = IO_PUT(s, k, kl, b, 16 + cl);
    free(b);
    return st;
}

static int cpel_key(uint8_t *k, const sgroup *g, const char *cons, size_t cl, sid id)
{
    size_t l = sk_cpel_pfx(k, g->gid, cons, cl);
    put_id(k + l, id);
    return (int)(l + 16);
}

static int cpel_put(sref *s, const sgroup *g, const char *cons, size_t cl, sid id)
{
    uint8_t k[FD_SSUB_MAX];
    int kl = cpel_key(k, g, cons, cl, id);
    return IO_PUT(s, k, (size_t)kl, "", 0);
}

static int del_ok(int st) { return st == FD_NOTFOUND ? FD_OK : st; }

static int cpel_del(sref *s, const sgroup *g, const char *cons, size_t cl, sid id)
{
    uint8_t k[FD_SSUB_MAX];
    int kl = cpel_key(k, g, cons, cl, id);
    return del_ok(IO_DEL(s, k, (size_t)kl));
}

/* ---------------------------------------------------------------- walks */

typedef struct idlist { sid *v; size_t n, cap; } idlist;

static int idlist_add(idlist *l, sid id)
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

/* The first (rev 0) or last (rev 1) record under pfx at or after/before
 * from: its sub and value copied. FD_NOTFOUND when none. */
typedef struct one_arg { uint8_t sub[FD_SSUB_MAX]; size_t sl; copyv v; int found; } one_arg;

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

static int walk_one(sref *s, const uint8_t *pfx, size_t pl, const uint8_t *from, size_t fl, int rev, one_arg *a)
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
    sk_entry(from, backwards ? SID_MAX : SID_MIN);
    one_arg a;
    int st = walk_one(s, &pfx, 1, from, 17, backwards, &a);
    *found = 0;
    if (st == FD_NOTFOUND) { *out = SID_MIN; return FD_OK; }
    if (st != FD_OK) return st;
    *out = get_id(a.sub + 1);
    *found = 1;
    free(a.v.p);
    return FD_OK;
}

static int last_valid_id(sref *s, sid *out)
{
    int found;
    return edge_valid_id(s, 1, out, &found);
}

static int first_valid_id(sref *s, sid *out, int *found)
{
    return edge_valid_id(s, 0, out, found);
}

static int entry_exists(sref *s, sid id)
{
    uint8_t k[17];
    sk_entry(k, id);
    const void *v; size_t vl;
    return IO_GET(s, k, 17, &v, &vl);
}

/* Reply one entry (RAWENTRIES): FD_OK, FD_NOTFOUND (nothing written). */
static int reply_entry_at(sref *s, sid id)
{
    uint8_t k[17];
    sk_entry(k, id);
    const void *v; size_t vl;
    int st = IO_GET(s, k, 17, &v, &vl);
    if (st != FD_OK) return st;
    return add_entry(s->c->out, id, v, vl);
}

/* ---------------------------------------------------------------- lag accounting */

static int range_has_tombstones(const smeta *m, sid start, sid end)
{
    if (!m->length || id_zero(m->maxdel)) return 0;
    if (idcmp(m->first, m->maxdel) > 0) return 0;
    return idcmp(start, m->maxdel) <= 0 && idcmp(m->maxdel, end) <= 0;
}

static long long estimate_distance(const smeta *m, sid id)
{
    if (!m->added) return 0;
    if (!m->length && idcmp(id, m->last) < 1) return (long long)m->added;
    int cl = idcmp(id, m->last);
    if (cl == 0) return (long long)m->added;
    if (cl > 0) return INVALID_READ;
    int cf = idcmp(id, m->first), cx = idcmp(m->maxdel, m->first);
    if (id_zero(m->maxdel) || cx < 0) {
        if (cf < 0) return (long long)(m->added - m->length);
        if (cf == 0) return (long long)(m->added - m->length + 1);
    }
    return INVALID_READ;
}

static int reply_lag(resp_out *o, const smeta *m, const sgroup *g)
{
    long long lag = 0;
    int valid = 0;
    if (!m->added) valid = 1;
    else if (g->entries_read != INVALID_READ && !range_has_tombstones(m, g->last, SID_MAX)) {
        lag = (long long)m->added - g->entries_read;
        valid = 1;
    } else {
        long long er = estimate_distance(m, g->last);
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

/* -- node records: live(8) deleted(8) bytes(8) last(16) nfields(4) fields (u32 len + bytes) */
typedef struct snode {
    sid      start, last;
    uint64_t live, deleted, bytes;
    copyv    raw;        /* the whole value (fields at raw.p + 44) */
    uint32_t nf;
} snode;

static int is_tail(const sref *s, sid start) { return s->m.nnodes && idcmp(start, s->m.t_start) == 0; }

static int node_dec(sref *s, const uint8_t *sub, size_t sl, copyv v, snode *n)
{
    if (sl != 17 || v.n < 44) return FD_E_CORRUPT;
    n->start = get_id(sub + 1);
    n->live = get64(v.p);
    n->deleted = get64(v.p + 8);
    n->bytes = get64(v.p + 16);
    n->last = get_id(v.p + 24);
    n->nf = get32(v.p + 40);
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
        uint32_t l = get32(raw->p + off);
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
        put32(lb, (uint32_t)fv[2 * i].len);
        for (int j = 0; j < 4; j++) h = (h ^ lb[j]) * 1099511628211ULL;
        for (size_t j = 0; j < fv[2 * i].len; j++) h = (h ^ (uint8_t)fv[2 * i].ptr[j]) * 1099511628211ULL;
    }
    return h;
}

static void tail_set(sref *s, const snode *n)
{
    s->m.t_start = n->start;
    s->m.t_last = n->last;
    s->m.t_live = n->live;
    s->m.t_deleted = n->deleted;
    s->m.t_bytes = n->bytes;
    s->m.t_nf = n->nf;
    s->m.t_fhash = fields_hash_raw(&n->raw, n->nf);
}

static int node_write(sref *s, snode *n)
{
    uint8_t k[17];
    sk_node(k, n->start);
    put64(n->raw.p, n->live);
    put64(n->raw.p + 8, n->deleted);
    put64(n->raw.p + 16, n->bytes);
    put_id(n->raw.p + 24, n->last);
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
    return node_write(s, n);
}

/* After the tail node's record was deleted (s->m.nnodes already counts it
 * out): the last remaining node, whose record is up to date, is the tail. */
static int tail_reload(sref *s)
{
    if (!s->m.nnodes) { memset(&s->m.t_start, 0, sizeof s->m.t_start); return FD_OK; }
    uint8_t pfx = 'n', from[17];
    sk_node(from, SID_MAX);
    one_arg a;
    int st = walk_one(s, &pfx, 1, from, 17, 1, &a);
    if (st == FD_NOTFOUND) { s->m.nnodes = 0; return FD_OK; }
    if (st != FD_OK) return st;
    snode n;
    uint64_t keep = s->m.nnodes;
    s->m.nnodes = 0;                       /* decode the record as it is */
    st = node_dec(s, a.sub, a.sl, a.v, &n);
    s->m.nnodes = keep;
    if (st == FD_OK) tail_set(s, &n);
    free(a.v.p);
    return st;
}

/* Delete the record of node n (whole node gone). */
static int node_drop(sref *s, const snode *n)
{
    uint8_t k[17];
    sk_node(k, n->start);
    int was_tail = is_tail(s, n->start);
    int st = del_ok(IO_DEL(s, k, 17));
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
    int st = walk_one(s, &pfx, 1, from, 17, backward, &a);
    if (st != FD_OK) return st;
    st = node_dec(s, a.sub, a.sl, a.v, n);
    if (st != FD_OK) free(a.v.p);
    return st;
}

/* The node holding id (the last node starting at or before it). */
static int node_of(sref *s, sid id, snode *n) { return node_walk(s, id, 1, n); }

static int node_first(sref *s, snode *n) { return node_walk(s, SID_MIN, 0, n); }

/* An entry of id left the stream (XDEL, exact trim): its node's counters. */
static int node_entry_gone(sref *s, sid id, int allow_drop)
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

static int append_entry(sref *s, sid id, const resp_arg *fv, int nf)
{
    /* the entry record */
    size_t bl = 4;
    size_t tot = 0;
    for (int i = 0; i < 2 * nf; i++) { bl += 4 + fv[i].len; tot += fv[i].len; }
    uint8_t *b = malloc(bl);
    if (!b) return FD_E_NOMEM;
    put32(b, (uint32_t)nf);
    size_t off = 4;
    for (int i = 0; i < 2 * nf; i++) {
        put32(b + off, (uint32_t)fv[i].len);
        memcpy(b + off + 4, fv[i].ptr, fv[i].len);
        off += 4 + fv[i].len;
    }
    uint8_t k[17];
    sk_entry(k, id);
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
        st = node_write(s, &old);
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
        put32(n.raw.p + 40, (uint32_t)nf);
        off = 44;
        n.bytes = 7 + lp_int(1) + lp_int(0) + lp_int(nf) + lp_int(0);
        for (int i = 0; i < nf; i++) {
            put32(n.raw.p + off, (uint32_t)fv[2 * i].len);
            memcpy(n.raw.p + off + 4, fv[2 * i].ptr, fv[2 * i].len);
            off += 4 + fv[2 * i].len;
            n.bytes += lp_str(fv[2 * i].ptr, fv[2 * i].len);
        }
        n.start = id;
        n.last = id;
        n.live = n.deleted = 0;
        n.nf = (uint32_t)nf;
        st = node_write(s, &n);            /* the master fields, once */
        if (st == FD_OK) tail_set(s, &n);
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

typedef struct trim_args {
    int       strategy, approx, id_given, seq_given, no_mkstream;
    long long maxlen, limit;
    sid       minid, id;
} trim_args;

/* Collect entry ids of [from, to] (at most max, 0 = all). */
typedef struct coll_arg { idlist *l; sid to; size_t max; } coll_arg;

static int coll_cb(void *arg, const uint8_t *sub, size_t sl, const void *v, size_t vl)
{
    (void)v; (void)vl;
    coll_arg *a = arg;
    if (sl != 17) return FD_E_CORRUPT;
    sid id = get_id(sub + 1);
    if (idcmp(id, a->to) > 0) return FD_SW_STOP;
    int st = idlist_add(a->l, id);
    if (st != FD_OK) return st;
    return a->max && a->l->n >= a->max ? FD_SW_STOP : FD_SW_NEXT;
}

static int collect_entries(sref *s, sid from, sid to, size_t max, idlist *l)
{
    uint8_t pfx = 'x', f[17];
    sk_entry(f, from);
    coll_arg a = { l, to, max };
    return IO_WALK(s, &pfx, 1, f, 17, 0, coll_cb, &a);
}

static int del_entry(sref *s, sid id)
{
    uint8_t k[17];
    sk_entry(k, id);
    return del_ok(IO_DEL(s, k, 17));
}

/* streamTrim: the number of entries removed in *deleted. */
static int stream_trim(sref *s, const trim_args *t, long long *deleted_out)
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
            : idcmp(n.last, t->minid) < 0;
        if (remove_node) {
            idlist l = {0};
            st = collect_entries(s, n.start, n.last, 0, &l);
            for (size_t i = 0; st == FD_OK && i < l.n; i++) st = del_entry(s, l.v[i]);
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
            if (t->strategy == TRIM_MAXLEN ? s->m.length <= (uint64_t)t->maxlen : idcmp(l.v[i], t->minid) >= 0) break;
            st = del_entry(s, l.v[i]);
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
            FD_TRY(first_valid_id(s, &s->m.first, &found));
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
        err(c, "ERR syntax error, MAXLEN and MINID options at the same time are not compatible");
        return -1;
    }
    a->approx = 0;
    const resp_arg *nx = &c->argv[*i + 1];
    if (more >= 2 && cstr_is(nx, "~")) { a->approx = 1; (*i)++; }
    else if (more >= 2 && cstr_is(nx, "=")) (*i)++;
    return 0;
}

/* streamParseAddOrTrimArgsOrReply: the id's position (XADD), or -1 when an
 * error was replied, or -2 - status on a storage/memory failure. */
static int parse_add_trim(fd_stream_call *c, trim_args *a, int xadd)
{
    memset(a, 0, sizeof *a);
    a->maxlen = -1;
    int i = 2, limit_given = 0;
    for (; i < c->argc; i++) {
        int more = c->argc - 1 - i;
        const resp_arg *o = &c->argv[i];
        if (xadd && cstr_is(o, "*")) break;
        else if (resp_arg_is(o, "maxlen") && more) {
            if (trim_strategy_start(c, a, &i, more) != 0) return -1;
            if (arg_ll(&c->argv[i + 1], &a->maxlen) != 0) {
                err(c, "ERR value is not an integer or out of range");
                return -1;
            }
            if (a->maxlen < 0) { err(c, "ERR The MAXLEN argument must be >= 0."); return -1; }
            i++;
            a->strategy = TRIM_MAXLEN;
        } else if (resp_arg_is(o, "minid") && more) {
            if (trim_strategy_start(c, a, &i, more) != 0) return -1;
            if (parse_arg_id(&c->argv[i + 1], &a->minid, 0, 1) != 0) { err(c, E_INVALID_ID); return -1; }
            i++;
            a->strategy = TRIM_MINID;
        } else if (resp_arg_is(o, "limit") && more) {
            if (arg_ll(&c->argv[i + 1], &a->limit) != 0) {
                err(c, "ERR value is not an integer or out of range");
                return -1;
            }
            if (a->limit < 0) { err(c, "ERR The LIMIT argument must be >= 0."); return -1; }
            limit_given = 1;
            i++;
        } else if (xadd && resp_arg_is(o, "nomkstream")) {
            a->no_mkstream = 1;
        } else if (xadd) {
            if (parse_id(o->ptr, o->len, &a->id, 0, 1, &a->seq_given) != 0) { err(c, E_INVALID_ID); return -1; }
            a->id_given = 1;
            break;
        } else {
            err(c, "ERR syntax error");
            return -1;
        }
    }
    if (a->limit && a->strategy == TRIM_NONE) {
        err(c, "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy");
        return -1;
    }
    if (!xadd && a->strategy == TRIM_NONE) {
        err(c, "ERR syntax error, XTRIM must be called with a trimming strategy");
        return -1;
    }
    if (limit_given) {
        if (!a->approx) {
            err(c, "ERR syntax error, LIMIT cannot be used without the special ~ option");
            return -1;
        }
    } else {
        a->limit = a->approx ? 100 * NODE_MAX_ENTRIES : 0;
        if (a->approx && (a->limit <= 0 || a->limit > 10000)) a->limit = 10000;
    }
    return i;
}

/* ---------------------------------------------------------------- XADD / XTRIM / XDEL / XLEN */

int fd_stream_xadd(fd_stream_call *c)
{
    trim_args t;
    int idpos = parse_add_trim(c, &t, 1);
    if (idpos < 0) return FD_OK;
    int fpos = idpos + 1;
    if (c->argc - fpos < 2 || (c->argc - fpos) % 2 == 1) {
        return resp_add_errorf(c->out, "ERR wrong number of arguments for '%s' command", "xadd") ? FD_E_NOMEM : FD_OK;
    }
    if (t.id_given && t.seq_given && t.id.ms == 0 && t.id.seq == 0)
        return err(c, "ERR The ID specified in XADD must be greater than 0-0");
    sref s;
    FD_TRY(s_open(c, &c->argv[1], &s));
    int st = FD_OK;
    if (!s.exists) {
        if (t.no_mkstream) { s_close(&s); return resp_add_null(c->out) ? FD_E_NOMEM : FD_OK; }
        if ((st = s_create(c, &c->argv[1], &s)) != FD_OK) { s_close(&s); return st; }
    }
    if (s.m.last.ms == UINT64_MAX && s.m.last.seq == UINT64_MAX) {
        s_close(&s);
        return err(c, "ERR The stream has exhausted the last possible ID, unable to add more items");
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
        else { id = s.m.last; id_incr(&id); }
    }
    if (idcmp(id, s.m.last) <= 0) goto edom;
    size_t mark = c->out->len;
    st = append_entry(&s, id, c->argv + fpos, (c->argc - fpos) / 2);
    long long trimmed;
    if (st == FD_OK) st = stream_trim(&s, &t, &trimmed);
    if (st == FD_OK) st = s_save(&s);
    if (st == FD_OK && add_id(c->out, id)) st = FD_E_NOMEM;
    if (st == FD_OK) EV(c, STREAM, "xadd", &c->argv[1]);
    if (st == FD_OK && trimmed) EV(c, STREAM, "xtrim", &c->argv[1]);
    if (st != FD_OK) c->out->len = mark;
    s_close(&s);
    return st;
edom:
    /* a stream created by this call stays (as Redis's dbAdd before the append) */
    st = s.m.length == 0 && s.m.added == 0 && s.m.ngroups == 0 ? s_save(&s) : FD_OK;
    s_close(&s);
    if (st != FD_OK) return st;
    return err(c, "ERR The ID specified in XADD is equal or smaller than the target stream top item");
}

int fd_stream_xtrim(fd_stream_call *c)
{
    trim_args t;
    if (parse_add_trim(c, &t, 0) < 0) return FD_OK;
    sref s;
    FD_TRY(s_open(c, &c->argv[1], &s));
    if (!s.exists) return resp_add_int(c->out, 0) ? FD_E_NOMEM : FD_OK;
    long long n;
    int st = stream_trim(&s, &t, &n);
    if (st == FD_OK && n) st = s_save(&s);
    if (st == FD_OK && n) EV(c, STREAM, "xtrim", &c->argv[1]);
    s_close(&s);
    if (st != FD_OK) return st;
    return resp_add_int(c->out, n) ? FD_E_NOMEM : FD_OK;
}

int fd_stream_xlen(fd_stream_call *c)
{
    sref s;
    FD_TRY(s_open(c, &c->argv[1], &s));
    long long n = s.exists ? (long long)s.m.length : 0;
    s_close(&s);
    return resp_add_int(c->out, n) ? FD_E_NOMEM : FD_OK;
}

int fd_stream_xdel(fd_stream_call *c)
{
    sref s;
    FD_TRY(s_open(c, &c->argv[1], &s));
    if (!s.exists) return resp_add_int(c->out, 0) ? FD_E_NOMEM : FD_OK;
    int n = c->argc - 2;
    sid *ids = malloc((size_t)n * sizeof *ids);
    if (!ids) { s_close(&s); return FD_E_NOMEM; }
    for (int j = 0; j < n; j++) {
        if (parse_arg_id(&c->argv[2 + j], &ids[j], 0, 1) != 0) {
            free(ids);
            s_close(&s);
            return err(c, E_INVALID_ID);
        }
    }
    long long deleted = 0;
    int first_entry = 0, st = FD_OK;
    for (int j = 0; j < n && st == FD_OK; j++) {
        st = entry_exists(&s, ids[j]);
        if (st == FD_NOTFOUND) { st = FD_OK; continue; }
        if (st != FD_OK) break;
        if ((st = del_entry(&s, ids[j])) != FD_OK) break;
        if ((st = node_entry_gone(&s, ids[j], 1)) != FD_OK) break;
        s.m.length--;
        if (idcmp(ids[j], s.m.first) == 0) first_entry = 1;
        if (idcmp(ids[j], s.m.maxdel) > 0) s.m.maxdel = ids[j];
        deleted++;
    }
    free(ids);
    if (st == FD_OK && deleted) {
        if (s.m.length == 0) s.m.first = SID_MIN;
        else if (first_entry) { int found; st = first_valid_id(&s, &s.m.first, &found); }
        if (st == FD_OK) st = s_save(&s);
        if (st == FD_OK) EV(c, STREAM, "xdel", &c->argv[1]);
    }
    s_close(&s);
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
    sid id = get_id(sub + 1);
    if (a->rev ? idcmp(id, a->end) < 0 : idcmp(id, a->end) > 0) return FD_SW_STOP;
    int st = add_entry(a->c->out, id, v, vl);
    if (st != FD_OK) return st;
    a->n++;
    return a->count && a->n >= a->count ? FD_SW_STOP : FD_SW_NEXT;
}

/* Reply the entries of [start, end] (rev: walking from end down) as an
 * array; count 0 = all. *n = how many. */
static int reply_range(sref *s, sid start, sid end, long long count, int rev, long long *n)
{
    resp_out *o = s->c->out;
    size_t mark = o->len;
    range_arg a = { s->c, rev ? start : end, rev, count, 0, 0 };
    int st = FD_OK;
    if (s->exists && idcmp(start, end) <= 0) {
        uint8_t pfx = 'x', f[17];
        sk_entry(f, rev ? end : start);
        st = IO_WALK(s, &pfx, 1, f, 17, rev, range_cb, &a);
    }
    if (st == FD_OK) st = insert_header(o, mark, 'a', a.n);
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
    if (parse_interval(sa, &start, &sx, 0) != 0) return err(c, E_INVALID_ID);
    if (sx && id_incr(&start) != 0) return err(c, "ERR invalid start ID for the interval");
    if (parse_interval(ea, &end, &ex, UINT64_MAX) != 0) return err(c, E_INVALID_ID);
    if (ex && id_decr(&end) != 0) return err(c, "ERR invalid end ID for the interval");
    for (int j = 4; j < c->argc; j++) {
        int more = c->argc - j - 1;
        if (resp_arg_is(&c->argv[j], "count") && more >= 1) {
            if (arg_ll(&c->argv[j + 1], &count) != 0) return FD_E_NOTINT;
            if (count < 0) count = 0;
            j++;
        } else return FD_E_SYNTAX;
    }
    sref s;
    FD_TRY(s_open(c, &c->argv[1], &s));
    int st;
    if (!s.exists) st = resp_add_array(c->out, 0) ? FD_E_NOMEM : FD_OK;
    else if (count == 0) st = resp_add_null_array(c->out) ? FD_E_NOMEM : FD_OK;
    else st = reply_range(&s, start, end, count == -1 ? 0 : count, rev, NULL);
    s_close(&s);
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
    sid id = get_id(sub + 1);
    if (a->g && idcmp(id, a->g->last) > 0) {
        if (a->g->entries_read != INVALID_READ && !range_has_tombstones(&a->s->m, id, SID_MAX))
            a->g->entries_read++;
        else if (a->s->m.added)
            a->g->entries_read = estimate_distance(&a->s->m, id);
        a->g->last = id;
    }
    int st = add_entry(a->c->out, id, v, vl);
    if (st != FD_OK) return st;
    if (a->g && (st = idlist_add(&a->ids, id)) != FD_OK) return st;
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
        int st = nack_get(s, g, id, &old);
        if (st == FD_OK) {
            if (old.cl != cn->nl || memcmp(old.cons, cn->name, cn->nl) != 0) {
                st = cpel_del(s, g, old.cons, old.cl, id);
                if (st == FD_OK) st = cpel_put(s, g, cn->name, cn->nl, id);
                cn->pel++;
            }
            free(old.cons);
            if (st == FD_OK) st = nack_put(s, g, id, s->c->now_ms, 1, cn->name, cn->nl);
        } else if (st == FD_NOTFOUND) {
            st = nack_put(s, g, id, s->c->now_ms, 1, cn->name, cn->nl);
            if (st == FD_OK) st = cpel_put(s, g, cn->name, cn->nl, id);
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
    int st = idlist_add(&a->ids, get_id(sub + sl - 16));
    if (st != FD_OK) return st;
    return a->count && (long long)a->ids.n >= a->count ? FD_SW_STOP : FD_SW_NEXT;
}

static int reply_history(sref *s, sgroup *g, scons *cn, sid start, long long count)
{
    uint8_t pfx[FD_SSUB_MAX], from[FD_SSUB_MAX];
    size_t pl = sk_cpel_pfx(pfx, g->gid, cn->name, cn->nl);
    memcpy(from, pfx, pl);
    put_id(from + pl, start);
    hist_arg a = { {0}, count };
    int st = IO_WALK(s, pfx, pl, from, pl + 16, 0, hist_cb, &a);
    resp_out *o = s->c->out;
    if (st == FD_OK && resp_add_array(o, (long long)a.ids.n)) st = FD_E_NOMEM;
    for (size_t i = 0; st == FD_OK && i < a.ids.n; i++) {
        sid id = a.ids.v[i];
        st = reply_entry_at(s, id);
        if (st == FD_NOTFOUND) {
            st = (resp_add_array(o, 2) || add_id(o, id) || resp_add_null_array(o)) ? FD_E_NOMEM : FD_OK;
        } else if (st == FD_OK) {
            snack n;
            st = nack_get(s, g, id, &n);
            if (st == FD_OK) {
                st = nack_put(s, g, id, s->c->now_ms, n.dcount + 1, n.cons, n.cl);
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
            if (arg_ll(&c->argv[i], &t) != 0) return err(c, "ERR timeout is not an integer or out of range");
            if (t < 0) return err(c, "ERR timeout is negative");
            timeout = t;
        } else if (resp_arg_is(o, "count") && more) {
            i++;
            if (arg_ll(&c->argv[i], &count) != 0) return FD_E_NOTINT;
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
            if (!group_mode) return err(c, "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.");
            gname = &c->argv[i + 1];
            cname = &c->argv[i + 2];
            i += 2;
        } else if (resp_arg_is(o, "noack")) {
            if (!group_mode) return err(c, "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.");
            noack = 1;
        } else return FD_E_SYNTAX;
    }
    if (streams_arg == 0) return FD_E_SYNTAX;
    if (group_mode && !gname) return err(c, "ERR Missing GROUP option for XREADGROUP");

    sref *ss = calloc((size_t)nstreams, sizeof *ss);
    sid *ids = calloc((size_t)nstreams, sizeof *ids);
    sgroup *gs = calloc((size_t)nstreams, sizeof *gs);
    int st = FD_OK, replied = 0;
    size_t mark = c->out->len;
    if (!ss || !ids || !gs) { st = FD_E_NOMEM; goto done; }
    for (int i = 0; i < nstreams && st == FD_OK; i++) {
        const resp_arg *key = &c->argv[streams_arg + i], *ida = &c->argv[streams_arg + nstreams + i];
        if ((st = s_open(c, key, &ss[i])) != FD_OK) break;
        if (gname) {
            int gs_st = ss[i].exists ? group_get(&ss[i], gname->ptr, gname->len, &gs[i]) : FD_NOTFOUND;
            if (gs_st == FD_NOTFOUND) {
                st = errf_names(c, "NOGROUP No such key '%.*s' or consumer group '%.*s' in XREADGROUP with GROUP option", key, gname);
                replied = 1;
                break;
            }
            if ((st = gs_st) != FD_OK) break;
        }
        if (cstr_is(ida, "$")) {
            if (group_mode) {
                st = err(c, "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.");
                replied = 1;
                break;
            }
            ids[i] = ss[i].exists ? ss[i].m.last : SID_MIN;
            continue;
        } else if (cstr_is(ida, ">")) {
            if (!group_mode) {
                st = err(c, "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.");
                replied = 1;
                break;
            }
            ids[i] = SID_MAX;
            continue;
        }
        if (parse_arg_id(ida, &ids[i], 0, 1) != 0) { st = err(c, E_INVALID_ID); replied = 1; break; }
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
                if ((st = last_valid_id(s, &maxid)) != FD_OK) break;
                if (idcmp(maxid, g->last) > 0) { sync = 1; gt = g->last; }
            }
            if (sync) {      /* the consumer is created (or seen) only when served */
                int created;
                if ((st = cons_lookup_create(s, g, cname->ptr, cname->len, &cn, &created)) != FD_OK) break;
                cn.seen = c->now_ms;
            }
        } else if (s->m.length) {
            sid maxid;
            if ((st = last_valid_id(s, &maxid)) != FD_OK) break;
            if (idcmp(maxid, gt) > 0) sync = 1;
        }
        if (sync) {
            served++;
            sid start = gt;
            id_incr(&start);
            if (c->out->proto == 2 && resp_add_array(c->out, 2)) { st = FD_E_NOMEM; break; }
            if (resp_add_bulk(c->out, c->argv[streams_arg + i].ptr, c->argv[streams_arg + i].len)) { st = FD_E_NOMEM; break; }
            if (history) {
                st = reply_history(s, g, &cn, start, count);
            } else {
                size_t m2 = c->out->len;
                grp_arg a = { c, s, gname ? g : NULL, count, 0, {0} };
                uint8_t pfx = 'x', f[17];
                sk_entry(f, start);
                st = IO_WALK(s, &pfx, 1, f, 17, 0, grp_cb, &a);
                if (st == FD_OK) st = insert_header(c->out, m2, 'a', a.n);
                if (st == FD_OK && gname && !noack) st = deliver_pel(s, g, &cn, &a.ids);
                free(a.ids.v);
            }
        }
        if (st == FD_OK && gname && sync) {
            st = cons_put(s, g, &cn);
            if (st == FD_OK) st = group_put(s, g);
        }
    }
    if (st != FD_OK) goto done;
    if (served) {
        st = insert_header(c->out, mark, c->out->proto == 2 ? 'a' : 'm', served);
        goto done;
    }
    if (timeout != -1) { st = fd_stream_would_block(c, nstreams, &ids[0].ms); goto done; }
    st = resp_add_null_array(c->out) ? FD_E_NOMEM : FD_OK;
done:
    if (st != FD_OK) c->out->len = mark;
    if (ss) for (int i = 0; i < nstreams; i++) s_close(&ss[i]);
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
    if (parse_arg_id(&c->argv[2], &id, 0, 1) != 0) return err(c, E_INVALID_ID);
    for (int i = 3; i < c->argc;) {
        int more = c->argc - 1 - i;
        const resp_arg *o = &c->argv[i];
        if (resp_arg_is(o, "entriesadded") && more) {
            if (arg_ll(&c->argv[i + 1], &added) != 0) return FD_E_NOTINT;
            if (added < 0) return err(c, "ERR entries_added must be positive");
            i += 2;
        } else if (resp_arg_is(o, "maxdeletedid") && more) {
            if (parse_arg_id(&c->argv[i + 1], &maxdel, 0, 1) != 0) return err(c, E_INVALID_ID);
            if (idcmp(id, maxdel) < 0) return err(c, "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id");
            i += 2;
        } else return FD_E_SYNTAX;
    }
    sref s;
    FD_TRY(s_open(c, &c->argv[1], &s));
    if (!s.exists) return FD_E_NOKEY;
    int st = FD_OK;
    if (s.m.length > 0) {
        sid maxid;
        if ((st = last_valid_id(&s, &maxid)) != FD_OK) goto out;
        if (idcmp(id, maxid) < 0) { st = err(c, "ERR The ID specified in XSETID is smaller than the target stream top item"); goto out; }
        if (added != -1 && s.m.length > (uint64_t)added) {
            st = err(c, "ERR The entries_added specified in XSETID is smaller than the target stream length");
            goto out;
        }
    }
    s.m.last = id;
    if (added != -1) s.m.added = (uint64_t)added;
    if (!id_zero(maxdel)) s.m.maxdel = maxdel;
    st = s_save(&s);
    if (st == FD_OK) st = resp_add_status(c->out, "OK") ? FD_E_NOMEM : FD_OK;
    if (st == FD_OK) EV(c, STREAM, "xsetid", &c->argv[1]);
out:
    s_close(&s);
    return st;
}

/* ---------------------------------------------------------------- groups & consumers walks */

typedef struct list_arg { uint8_t **subs; size_t *sls; copyv *vals; size_t n, cap; size_t max; } list_arg;

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

static void list_free(list_arg *a)
{
    for (size_t i = 0; i < a->n; i++) { free(a->subs[i]); free(a->vals[i].p); }
    free(a->subs); free(a->sls); free(a->vals);
    memset(a, 0, sizeof *a);
}

/* Every record under pfx (max 0 = all). */
static int list_prefix(sref *s, const uint8_t *pfx, size_t pl, size_t max, list_arg *a)
{
    memset(a, 0, sizeof *a);
    a->max = max;
    int st = IO_WALK(s, pfx, pl, pfx, pl, 0, list_cb, a);
    if (st != FD_OK) list_free(a);
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

static void list_sort_names(list_arg *l, size_t off)
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

static int cons_pending(sref *s, uint64_t gid, const char *name, size_t nl, long long *n)
{
    uint8_t pfx[FD_SSUB_MAX];
    size_t pl = sk_cpel_pfx(pfx, gid, name, nl);
    *n = 0;
    return IO_WALK(s, pfx, pl, pfx, pl, 0, count_cb, n);
}

/* Delete every record under pfx. */
static int delete_prefix(sref *s, const uint8_t *pfx, size_t pl)
{
    for (;;) {
        list_arg a;
        FD_TRY(list_prefix(s, pfx, pl, 1024, &a));
        size_t n = a.n;
        int st = FD_OK;
        for (size_t i = 0; i < n && st == FD_OK; i++) st = del_ok(IO_DEL(s, a.subs[i], a.sls[i]));
        list_free(&a);
        if (st != FD_OK) return st;
        if (n < 1024) return FD_OK;
    }
}

/* ---------------------------------------------------------------- XGROUP */

static int subcmd_arity_err(fd_stream_call *c, const char *full)
{
    return resp_add_errorf(c->out, "ERR wrong number of arguments for '%s' command", full) ? FD_E_NOMEM : FD_OK;
}

static int unknown_subcmd(fd_stream_call *c, const char *cmd)
{
    char n[160];
    size_t l = strnlen(c->argv[1].ptr, c->argv[1].len);
    if (l > 128) l = 128;
    memcpy(n, c->argv[1].ptr, l);
    n[l] = 0;
    return resp_add_errorf(c->out, "ERR unknown subcommand '%s'. Try %s HELP.", n, cmd) ? FD_E_NOMEM : FD_OK;
}

static int subcmd_syntax_err(fd_stream_call *c, const char *cmd)
{
    char n[160];
    size_t l = strnlen(c->argv[1].ptr, c->argv[1].len);
    if (l > 128) l = 128;
    memcpy(n, c->argv[1].ptr, l);
    n[l] = 0;
    return resp_add_errorf(c->out, "ERR unknown subcommand or wrong number of arguments for '%s'. Try %s HELP.", n, cmd) ? FD_E_NOMEM : FD_OK;
}

static int add_help(resp_out *o, const char *const *lines)
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

static const char *const xinfo_help[] = {
    "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
    "HELP",
    "    Prints this help.",
    NULL
};

static int group_destroy(sref *s, sgroup *g)
{
    uint8_t k[FD_SSUB_MAX], p[16];
    size_t kl = sk_group(k, g->name, g->nl);
    FD_TRY(del_ok(IO_DEL(s, k, kl)));
    const char tags[3] = { 'c', 'p', 'q' };
    for (int i = 0; i < 3; i++) {
        p[0] = (uint8_t)tags[i];
        put64(p + 1, g->gid);
        FD_TRY(delete_prefix(s, p, 9));
    }
    s->m.ngroups--;
    return FD_OK;
}

/* streamDelConsumer: its pending entries leave the group; the count. */
static int consumer_delete(sref *s, sgroup *g, scons *cn, long long *pending)
{
    uint8_t pfx[FD_SSUB_MAX];
    size_t pl = sk_cpel_pfx(pfx, g->gid, cn->name, cn->nl);
    *pending = 0;
    for (;;) {
        list_arg a;
        FD_TRY(list_prefix(s, pfx, pl, 1024, &a));
        size_t n = a.n;
        int st = FD_OK;
        for (size_t i = 0; i < n && st == FD_OK; i++) {
            uint8_t pk[32];
            size_t pkl = sk_pel(pk, g->gid, get_id(a.subs[i] + a.sls[i] - 16));
            st = del_ok(IO_DEL(s, pk, pkl));
            if (st == FD_OK) st = del_ok(IO_DEL(s, a.subs[i], a.sls[i]));
            (*pending)++;
            g->pel--;
        }
        list_free(&a);
        if (st != FD_OK) return st;
        if (n < 1024) break;
    }
    uint8_t k[FD_SSUB_MAX];
    size_t kl = sk_cons(k, g->gid, cn->name, cn->nl);
    FD_TRY(del_ok(IO_DEL(s, k, kl)));
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
    if (which < 0) return unknown_subcmd(c, "XGROUP");
    int ar = subs[which].arity;
    if ((ar > 0 && c->argc != ar) || (ar < 0 && c->argc < -ar)) return subcmd_arity_err(c, subs[which].full);
    if (which == 5) return add_help(c->out, xgroup_help);

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
            if (arg_ll(&c->argv[i + 1], &entries_read) != 0) return FD_E_NOTINT;
            if (entries_read < 0 && entries_read != INVALID_READ)
                return err(c, "ERR value for ENTRIESREAD must be positive or -1");
            i += 2;
        } else return subcmd_syntax_err(c, "XGROUP");
    }
    FD_TRY(s_open(c, key, &s));
    if (!mkstream) {
        if (!s.exists) {
            s_close(&s);
            return err(c, "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.");
        }
    }
    if (s.exists) {
        st = group_get(&s, gname->ptr, gname->len, &g);
        if (st == FD_OK) have_group = 1;
        else if (st != FD_NOTFOUND) goto out;
        st = FD_OK;
    }
    if (!mkstream && !have_group && (which == 1 || which == 3 || which == 4)) {
        st = errf_names(c, "NOGROUP No such consumer group '%.*s' for key name '%.*s'", gname, key);
        goto out;
    }
    if (which == 0) {
        if (c->argc > 8) { st = subcmd_syntax_err(c, "XGROUP"); goto out; }
        sid id;
        if (cstr_is(&c->argv[4], "$")) id = s.exists ? s.m.last : SID_MIN;
        else if (parse_arg_id(&c->argv[4], &id, 0, 1) != 0) { st = err(c, E_INVALID_ID); goto out; }
        if (!s.exists && (st = s_create(c, key, &s)) != FD_OK) goto out;
        if (have_group) { st = err(c, "BUSYGROUP Consumer Group name already exists"); goto out; }
        g.name = gname->ptr; g.nl = gname->len;
        g.gid = s.m.next_gid++;
        g.last = id;
        g.entries_read = entries_read;
        g.pel = g.consumers = 0;
        s.m.ngroups++;
        if ((st = group_put(&s, &g)) == FD_OK && (st = s_save(&s)) == FD_OK)
            st = resp_add_status(c->out, "OK") ? FD_E_NOMEM : FD_OK;
        if (st == FD_OK) EV(c, STREAM, "xgroup-create", key);
    } else if (which == 1) {
        if (c->argc != 5 && c->argc != 7) { st = subcmd_syntax_err(c, "XGROUP"); goto out; }
        sid id;
        if (cstr_is(&c->argv[4], "$")) id = s.m.last;
        else if (parse_arg_id(&c->argv[4], &id, 0, 0) != 0) { st = err(c, E_INVALID_ID); goto out; }
        g.last = id;
        g.entries_read = entries_read;
        if ((st = group_put(&s, &g)) == FD_OK) st = resp_add_status(c->out, "OK") ? FD_E_NOMEM : FD_OK;
        if (st == FD_OK) EV(c, STREAM, "xgroup-setid", key);
    } else if (which == 2) {
        if (have_group) {
            st = group_destroy(&s, &g);
            if (st == FD_OK) st = s_save(&s);
            if (st == FD_OK) st = resp_add_int(c->out, 1) ? FD_E_NOMEM : FD_OK;
            if (st == FD_OK) EV(c, STREAM, "xgroup-destroy", key);
        } else st = resp_add_int(c->out, 0) ? FD_E_NOMEM : FD_OK;
    } else if (which == 3) {
        scons cn;
        int created;
        st = cons_lookup_create(&s, &g, c->argv[4].ptr, c->argv[4].len, &cn, &created);
        if (st == FD_OK && created) {
            st = cons_put(&s, &g, &cn);
            if (st == FD_OK) st = group_put(&s, &g);
        }
        if (st == FD_OK) st = resp_add_int(c->out, created) ? FD_E_NOMEM : FD_OK;
    } else if (which == 4) {
        scons cn;
        long long pending = 0;
        st = cons_get(&s, &g, c->argv[4].ptr, c->argv[4].len, &cn);
        if (st == FD_OK) {
            st = consumer_delete(&s, &g, &cn, &pending);
            if (st == FD_OK) st = group_put(&s, &g);
        } else if (st == FD_NOTFOUND) st = FD_OK;
        if (st == FD_OK) st = resp_add_int(c->out, pending) ? FD_E_NOMEM : FD_OK;
        if (st == FD_OK) EV(c, STREAM, "xgroup-delconsumer", key);
    }
out:
    s_close(&s);
    return st;
}

/* ---------------------------------------------------------------- XACK */

int fd_stream_xack(fd_stream_call *c)
{
    sref s;
    FD_TRY(s_open(c, &c->argv[1], &s));
    sgroup g;
    int st = s.exists ? group_get(&s, c->argv[2].ptr, c->argv[2].len, &g) : FD_NOTFOUND;
    if (st == FD_NOTFOUND) { s_close(&s); return resp_add_int(c->out, 0) ? FD_E_NOMEM : FD_OK; }
    if (st != FD_OK) { s_close(&s); return st; }
    int n = c->argc - 3;
    sid *ids = malloc((size_t)n * sizeof *ids);
    if (!ids) { s_close(&s); return FD_E_NOMEM; }
    for (int j = 0; j < n; j++)
        if (parse_arg_id(&c->argv[3 + j], &ids[j], 0, 1) != 0) { free(ids); s_close(&s); return err(c, E_INVALID_ID); }
    long long acked = 0;
    /* consumers touched: adjust counts per consumer once at the end */
    for (int j = 0; j < n && st == FD_OK; j++) {
        snack nk;
        st = nack_get(&s, &g, ids[j], &nk);
        if (st == FD_NOTFOUND) { st = FD_OK; continue; }
        if (st != FD_OK) break;
        uint8_t k[32];
        size_t kl = sk_pel(k, g.gid, ids[j]);
        st = del_ok(IO_DEL(&s, k, kl));
        if (st == FD_OK) st = cpel_del(&s, &g, nk.cons, nk.cl, ids[j]);
        free(nk.cons);
        g.pel--;
        acked++;
    }
    free(ids);
    if (st == FD_OK && acked) st = group_put(&s, &g);
    s_close(&s);
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
    sid id = get_id(sub + sl - 16);
    if (idcmp(id, a->end) > 0 || a->count == 0) return FD_SW_STOP;
    if (a->by_consumer) return idlist_add(&a->ids, id);
    if (vl < 16) return FD_E_CORRUPT;
    const uint8_t *b = v;
    int64_t dt = (int64_t)get64(b);
    if (a->minidle && a->s->c->now_ms - dt < a->minidle) return FD_SW_NEXT;
    resp_out *o = a->s->c->out;
    int64_t el = a->s->c->now_ms - dt;
    if (el < 0) el = 0;
    if (resp_add_array(o, 4) || add_id(o, id) || resp_add_bulk(o, b + 16, vl - 16) ||
        resp_add_int(o, el) || resp_add_int(o, (long long)get64(b + 8))) return FD_E_NOMEM;
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
            if (arg_ll(&c->argv[4], &minidle) != 0) return FD_E_NOTINT;
            if (c->argc < 8) return FD_E_SYNTAX;
            si += 2;
        }
        if (arg_ll(&c->argv[si + 2], &count) != 0) return FD_E_NOTINT;
        if (count < 0) count = 0;
        int sx, ex;
        if (parse_interval(&c->argv[si], &start, &sx, 0) != 0) return err(c, E_INVALID_ID);
        if (sx && id_incr(&start) != 0) return err(c, "ERR invalid start ID for the interval");
        if (parse_interval(&c->argv[si + 1], &end, &ex, UINT64_MAX) != 0) return err(c, E_INVALID_ID);
        if (ex && id_decr(&end) != 0) return err(c, "ERR invalid end ID for the interval");
        if (si + 3 < c->argc) cname = &c->argv[si + 3];
    }
    sref s;
    sgroup g;
    int st, done;
    if ((st = s_open_group(c, &s, &g, &done)) != FD_OK || done) return st;
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
        put64(pfx + 1, g.gid);
        one_arg a;
        memcpy(from, pfx, 9);
        put_id(from + 9, SID_MIN);
        if ((st = walk_one(&s, pfx, 9, from, 25, 0, &a)) != FD_OK) goto out;
        sid first = get_id(a.sub + 9);
        free(a.v.p);
        put_id(from + 9, SID_MAX);
        if ((st = walk_one(&s, pfx, 9, from, 25, 1, &a)) != FD_OK) goto out;
        sid last = get_id(a.sub + 9);
        free(a.v.p);
        if (add_id(o, first) || add_id(o, last)) { st = FD_E_NOMEM; goto out; }
        pfx[0] = 'c';
        list_arg l;
        if ((st = list_prefix(&s, pfx, 9, 0, &l)) != FD_OK) goto out;
        list_sort_names(&l, 16);
        size_t m2 = o->len;
        long long nc = 0;
        for (size_t i = 0; i < l.n && st == FD_OK; i++) {
            if (l.vals[i].n < 16) { st = FD_E_CORRUPT; break; }
            long long pel;
            if ((st = cons_pending(&s, g.gid, (const char *)l.vals[i].p + 16, l.vals[i].n - 16, &pel)) != FD_OK) break;
            if (!pel) continue;
            if (resp_add_array(o, 2) || resp_add_bulk(o, l.vals[i].p + 16, l.vals[i].n - 16) ||
                resp_add_bulk_ll(o, (long long)pel)) st = FD_E_NOMEM;
            nc++;
        }
        list_free(&l);
        if (st == FD_OK) st = insert_header(o, m2, 'a', nc);
        goto out;
    }
    pend_arg a = { &s, &g, end, count, minidle, 0, 0, {0} };
    size_t pl;
    if (cname) {
        scons cn;
        st = cons_get(&s, &g, cname->ptr, cname->len, &cn);
        if (st == FD_NOTFOUND) { st = resp_add_array(o, 0) ? FD_E_NOMEM : FD_OK; goto out; }
        if (st != FD_OK) goto out;
        pl = sk_cpel_pfx(pfx, g.gid, cname->ptr, cname->len);
        a.by_consumer = 1;
    } else {
        pfx[0] = 'p';
        put64(pfx + 1, g.gid);
        pl = 9;
    }
    memcpy(from, pfx, pl);
    put_id(from + pl, start);
    if (count) st = IO_WALK(&s, pfx, pl, from, pl + 16, 0, pend_cb, &a);
    if (st == FD_OK && a.by_consumer) {
        for (size_t i = 0; i < a.ids.n && st == FD_OK && a.count; i++) {
            snack nk;
            st = nack_get(&s, &g, a.ids.v[i], &nk);
            if (st == FD_NOTFOUND) { st = FD_OK; continue; }
            if (st != FD_OK) break;
            if (!(minidle && c->now_ms - nk.dtime < minidle)) {
                int64_t el = c->now_ms - nk.dtime;
                if (el < 0) el = 0;
                if (resp_add_array(o, 4) || add_id(o, nk.id) || resp_add_bulk(o, nk.cons, nk.cl) ||
                    resp_add_int(o, el) || resp_add_int(o, (long long)nk.dcount)) st = FD_E_NOMEM;
                a.n++;
                a.count--;
            }
            free(nk.cons);
        }
    }
    free(a.ids.v);
    if (st == FD_OK) st = insert_header(o, mark, 'a', a.n);
out:
    if (st != FD_OK) o->len = mark;
    s_close(&s);
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
            st = cpel_del(s, g, nk->cons, nk->cl, nk->id);
        }
        if (st == FD_OK) st = cpel_put(s, g, cn->name, cn->nl, nk->id);
        cn->pel++;
    }
    if (st == FD_OK) st = nack_put(s, g, nk->id, dtime, dcount, cn->name, cn->nl);
    return st;
}

/* A pending entry whose stream entry is gone leaves the PEL. */
static int nack_drop(sref *s, sgroup *g, snack *nk, scons *mine)
{
    uint8_t k[32];
    size_t kl = sk_pel(k, g->gid, nk->id);
    int st = del_ok(IO_DEL(s, k, kl));
    if (st == FD_OK) st = cpel_del(s, g, nk->cons, nk->cl, nk->id);
    (void)mine;
    g->pel--;
    return st;
}

/* The claiming consumer's record (seen time; a new consumer). */
static int claimer_flush(sref *s, sgroup *g, scons *cn, int *have)
{
    if (!*have) return FD_OK;
    return cons_put(s, g, cn);
}

int fd_stream_xclaim(fd_stream_call *c)
{
    sref s;
    sgroup g;
    int st, done;
    if ((st = s_open_group(c, &s, &g, &done)) != FD_OK || done) return st;
    long long minidle, retrycount = -1, dtime = -1;
    int force = 0, justid = 0;
    if (arg_ll(&c->argv[4], &minidle) != 0) { s_close(&s); return err(c, "ERR Invalid min-idle-time argument for XCLAIM"); }
    if (minidle < 0) minidle = 0;
    int j;
    sid tmp;
    for (j = 5; j < c->argc; j++) if (parse_arg_id(&c->argv[j], &tmp, 0, 1) != 0) break;
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
            if (arg_ll(&c->argv[j], &dtime) != 0) { s_close(&s); return err(c, "ERR Invalid IDLE option argument for XCLAIM"); }
            dtime = now - dtime;
        } else if (resp_arg_is(o, "time") && more) {
            j++;
            if (arg_ll(&c->argv[j], &dtime) != 0) { s_close(&s); return err(c, "ERR Invalid TIME option argument for XCLAIM"); }
        } else if (resp_arg_is(o, "retrycount") && more) {
            j++;
            if (arg_ll(&c->argv[j], &retrycount) != 0) { s_close(&s); return err(c, "ERR Invalid RETRYCOUNT option argument for XCLAIM"); }
        } else if (resp_arg_is(o, "lastid") && more) {
            j++;
            if (parse_arg_id(&c->argv[j], &last_id, 0, 1) != 0) { s_close(&s); return err(c, E_INVALID_ID); }
        } else {
            char n[256];
            size_t l = strnlen(o->ptr, o->len);
            if (l > sizeof n - 1) l = sizeof n - 1;
            memcpy(n, o->ptr, l);
            n[l] = 0;
            s_close(&s);
            return resp_add_errorf(c->out, "ERR Unrecognized XCLAIM option '%s'", n) ? FD_E_NOMEM : FD_OK;
        }
    }
    int gdirty = 0;
    if (idcmp(last_id, g.last) > 0) { g.last = last_id; gdirty = 1; }
    if (dtime != -1) { if (dtime < 0 || dtime > now) dtime = now; }
    else dtime = now;

    resp_out *o = c->out;
    size_t mark = o->len;
    long long n = 0;
    scons cn;
    int have_cn = 0;
    for (j = 5; j <= last_id_arg && st == FD_OK; j++) {
        sid id;
        parse_arg_id(&c->argv[j], &id, 0, 1);
        snack nk;
        st = nack_get(&s, &g, id, &nk);
        int have_nack = st == FD_OK;
        if (st != FD_OK && st != FD_NOTFOUND) break;
        st = entry_exists(&s, id);
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
            st = cons_lookup_create(&s, &g, c->argv[3].ptr, c->argv[3].len, &cn, &created);
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
        if (justid) { if (add_id(o, id)) st = FD_E_NOMEM; }
        else {
            st = reply_entry_at(&s, id);
            if (st == FD_NOTFOUND) st = resp_add_null_array(o) ? FD_E_NOMEM : FD_OK;
        }
        n++;
    }
    if (st == FD_OK) st = claimer_flush(&s, &g, &cn, &have_cn);
    if (st == FD_OK && gdirty) st = group_put(&s, &g);
    if (st == FD_OK) st = insert_header(o, mark, 'a', n);
    if (st != FD_OK) o->len = mark;
    s_close(&s);
    return st;
}

typedef struct ac_arg { idlist ids; long long max; } ac_arg;

static int ac_cb(void *arg, const uint8_t *sub, size_t sl, const void *v, size_t vl)
{
    (void)v; (void)vl;
    ac_arg *a = arg;
    if (sl != 25) return FD_E_CORRUPT;
    int st = idlist_add(&a->ids, get_id(sub + 9));
    if (st != FD_OK) return st;
    return (long long)a->ids.n >= a->max ? FD_SW_STOP : FD_SW_NEXT;
}

int fd_stream_xautoclaim(fd_stream_call *c)
{
    long long minidle, count = 100;
    const long long attempts_factor = 10;
    sid start;
    int sx, justid = 0;
    if (arg_ll(&c->argv[4], &minidle) != 0) return err(c, "ERR Invalid min-idle-time argument for XAUTOCLAIM");
    if (minidle < 0) minidle = 0;
    if (parse_interval(&c->argv[5], &start, &sx, 0) != 0) return err(c, E_INVALID_ID);
    if (sx && id_incr(&start) != 0) return err(c, "ERR invalid start ID for the interval");
    for (int j = 6; j < c->argc; j++) {
        int more = c->argc - 1 - j;
        if (resp_arg_is(&c->argv[j], "count") && more) {
            long long maxc = LONG_MAX / 16;
            if (arg_ll(&c->argv[j + 1], &count) != 0 || count < 1 || count > maxc) return err(c, "ERR COUNT must be > 0");
            j++;
        } else if (resp_arg_is(&c->argv[j], "justid")) justid = 1;
        else return FD_E_SYNTAX;
    }
    sref s;
    sgroup g;
    int st, done;
    if ((st = s_open_group(c, &s, &g, &done)) != FD_OK || done) return st;
    long long attempts = count * attempts_factor;
    int64_t now = c->now_ms;
    /* the candidates: up to attempts + 1 pending ids from start (the extra one is the cursor) */
    uint8_t pfx[9], from[25];
    pfx[0] = 'p';
    put64(pfx + 1, g.gid);
    memcpy(from, pfx, 9);
    put_id(from + 9, start);
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
        st = nack_get(&s, &g, id, &nk);
        if (st == FD_NOTFOUND) { st = FD_OK; continue; }
        if (st != FD_OK) break;
        st = entry_exists(&s, id);
        if (st == FD_NOTFOUND) {
            st = nack_drop(&s, &g, &nk, have_cn ? &cn : NULL);
            gdirty = 1;
            free(nk.cons);
            if (st == FD_OK) st = idlist_add(&deleted, id);
            count--;
            continue;
        }
        if (st != FD_OK) { free(nk.cons); break; }
        if (minidle && now - nk.dtime < minidle) { free(nk.cons); continue; }
        if (!have_cn) {
            int created;
            st = cons_lookup_create(&s, &g, c->argv[3].ptr, c->argv[3].len, &cn, &created);
            if (st != FD_OK) { free(nk.cons); break; }
            cn.seen = now;
            have_cn = 1;
            gdirty = 1;
        }
        st = claim_one(&s, &g, &cn, &nk, 1, now, justid ? nk.dcount : nk.dcount + 1);
        free(nk.cons);
        if (st != FD_OK) break;
        if (justid) { if (add_id(o, id)) st = FD_E_NOMEM; }
        else st = reply_entry_at(&s, id);
        n++;
        count--;
    }
    /* the cursor: the next pending id after the last one looked at */
    sid next = SID_MIN;
    if (st == FD_OK) {
        if (i < a.ids.n) next = a.ids.v[i];
    }
    if (st == FD_OK) st = insert_header(o, claimed_at, 'a', n);
    if (st == FD_OK) {
        resp_out h;
        resp_out_init(&h, o->proto);
        if (add_id(&h, next) || resp_out_reserve(o, h.len)) st = FD_E_NOMEM;
        else {
            memmove(o->data + cursor_at + h.len, o->data + cursor_at, o->len - cursor_at);
            memcpy(o->data + cursor_at, h.data, h.len);
            o->len += h.len;
        }
        resp_out_free(&h);
    }
    if (st == FD_OK) {
        if (resp_add_array(o, (long long)deleted.n)) st = FD_E_NOMEM;
        for (size_t k = 0; st == FD_OK && k < deleted.n; k++) if (add_id(o, deleted.v[k])) st = FD_E_NOMEM;
    }
    if (st == FD_OK) st = claimer_flush(&s, &g, &cn, &have_cn);
    if (st == FD_OK && gdirty) st = group_put(&s, &g);
    if (st != FD_OK) o->len = mark;
    free(a.ids.v);
    free(deleted.v);
    s_close(&s);
    return st;
}

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
    FD_TRY(list_prefix(s, &pfx, 1, 0, &l));
    if (l.n == 0) { *out = 1; list_free(&l); return FD_OK; }
    uint8_t (*k)[16] = malloc(l.n * 16);
    if (!k) { list_free(&l); return FD_E_NOMEM; }
    for (size_t i = 0; i < l.n; i++) memcpy(k[i], l.subs[i] + 1, 16);
    *out = rax_nodes(k, 0, l.n, 0);
    free(k);
    list_free(&l);
    return FD_OK;
}

/* The first (rev 0) or last entry as [id, [f, v...]], or a null. */
static int reply_edge(sref *s, int rev)
{
    uint8_t pfx = 'x', from[17];
    sk_entry(from, rev ? SID_MAX : SID_MIN);
    one_arg a;
    int st = walk_one(s, &pfx, 1, from, 17, rev, &a);
    if (st == FD_NOTFOUND) return resp_add_null(s->c->out) ? FD_E_NOMEM : FD_OK;
    if (st != FD_OK) return st;
    st = add_entry(s->c->out, get_id(a.sub + 1), a.v.p, a.v.n);
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
        if (!resp_arg_is(&argv[0], "full")) return subcmd_syntax_err(c, "XINFO");
        if (argc == 3) {
            if (!resp_arg_is(&argv[1], "count")) return subcmd_syntax_err(c, "XINFO");
            if (arg_ll(&argv[2], &count) != 0) return FD_E_NOTINT;
            if (count < 0) count = 10;
        }
    } else return subcmd_syntax_err(c, "XINFO");
    resp_out *o = c->out;
    long long tn;
    FD_TRY(tree_nodes(s, &tn));
    const smeta *m = &s->m;
    if (resp_add_map(o, full ? 9 : 10) ||
        resp_add_bulk_cstr(o, "length") || resp_add_int(o, (long long)m->length) ||
        resp_add_bulk_cstr(o, "radix-tree-keys") || resp_add_int(o, (long long)m->nnodes) ||
        resp_add_bulk_cstr(o, "radix-tree-nodes") || resp_add_int(o, tn) ||
        resp_add_bulk_cstr(o, "last-generated-id") || add_id(o, m->last) ||
        resp_add_bulk_cstr(o, "max-deleted-entry-id") || add_id(o, m->maxdel) ||
        resp_add_bulk_cstr(o, "entries-added") || resp_add_int(o, (long long)m->added) ||
        resp_add_bulk_cstr(o, "recorded-first-entry-id") || add_id(o, m->first)) return FD_E_NOMEM;
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
    FD_TRY(reply_range(s, SID_MIN, SID_MAX, count, 0, NULL));
    if (resp_add_bulk_cstr(o, "groups")) return FD_E_NOMEM;
    uint8_t gp = 'g';
    list_arg gl;
    FD_TRY(list_prefix(s, &gp, 1, 0, &gl));
    list_sort_names(&gl, 48);
    st = resp_add_array(o, (long long)gl.n) ? FD_E_NOMEM : FD_OK;
    for (size_t i = 0; st == FD_OK && i < gl.n; i++) {
        if (gl.vals[i].n < 48) { st = FD_E_CORRUPT; break; }
        sgroup g;
        group_dec(gl.vals[i].p, &g);
        g.name = (const char *)gl.vals[i].p + 48;
        g.nl = gl.vals[i].n - 48;
        if (resp_add_map(o, 7) || resp_add_bulk_cstr(o, "name") || resp_add_bulk(o, g.name, g.nl) ||
            resp_add_bulk_cstr(o, "last-delivered-id") || add_id(o, g.last) ||
            resp_add_bulk_cstr(o, "entries-read") ||
            (g.entries_read != INVALID_READ ? resp_add_int(o, g.entries_read) : resp_add_null(o)) ||
            resp_add_bulk_cstr(o, "lag")) { st = FD_E_NOMEM; break; }
        if ((st = reply_lag(o, m, &g)) != FD_OK) break;
        if (resp_add_bulk_cstr(o, "pel-count") || resp_add_int(o, (long long)g.pel) ||
            resp_add_bulk_cstr(o, "pending")) { st = FD_E_NOMEM; break; }
        uint8_t pp[9];
        pp[0] = 'p';
        put64(pp + 1, g.gid);
        list_arg pl;
        if ((st = list_prefix(s, pp, 9, (size_t)count, &pl)) != FD_OK) break;
        if (resp_add_array(o, (long long)pl.n)) st = FD_E_NOMEM;
        for (size_t k = 0; st == FD_OK && k < pl.n; k++) {
            const uint8_t *v = pl.vals[k].p;
            if (pl.vals[k].n < 16) { st = FD_E_CORRUPT; break; }
            if (resp_add_array(o, 4) || add_id(o, get_id(pl.subs[k] + 9)) || resp_add_bulk(o, v + 16, pl.vals[k].n - 16) ||
                resp_add_int(o, (long long)get64(v)) || resp_add_int(o, (long long)get64(v + 8))) st = FD_E_NOMEM;
        }
        list_free(&pl);
        if (st != FD_OK) break;
        if (resp_add_bulk_cstr(o, "consumers")) { st = FD_E_NOMEM; break; }
        pp[0] = 'c';
        list_arg cl;
        if ((st = list_prefix(s, pp, 9, 0, &cl)) != FD_OK) break;
        list_sort_names(&cl, 16);
        if (resp_add_array(o, (long long)cl.n)) st = FD_E_NOMEM;
        for (size_t k = 0; st == FD_OK && k < cl.n; k++) {
            const uint8_t *v = cl.vals[k].p;
            if (cl.vals[k].n < 16) { st = FD_E_CORRUPT; break; }
            const char *cn = (const char *)v + 16;
            size_t cnl = cl.vals[k].n - 16;
            long long pel;
            if ((st = cons_pending(s, g.gid, cn, cnl, &pel)) != FD_OK) break;
            if (resp_add_map(o, 4) || resp_add_bulk_cstr(o, "name") || resp_add_bulk(o, cn, cnl) ||
                resp_add_bulk_cstr(o, "seen-time") || resp_add_int(o, (long long)get64(v)) ||
                resp_add_bulk_cstr(o, "pel-count") || resp_add_int(o, pel) ||
                resp_add_bulk_cstr(o, "pending")) { st = FD_E_NOMEM; break; }
            uint8_t qp[FD_SSUB_MAX];
            size_t ql = sk_cpel_pfx(qp, g.gid, cn, cnl);
            list_arg ql2;
            if ((st = list_prefix(s, qp, ql, (size_t)count, &ql2)) != FD_OK) break;
            if (resp_add_array(o, (long long)ql2.n)) st = FD_E_NOMEM;
            for (size_t q = 0; st == FD_OK && q < ql2.n; q++) {
                sid id = get_id(ql2.subs[q] + ql2.sls[q] - 16);
                snack nk;
                st = nack_get(s, &g, id, &nk);
                if (st != FD_OK) { if (st == FD_NOTFOUND) st = FD_E_CORRUPT; break; }
                if (resp_add_array(o, 3) || add_id(o, id) || resp_add_int(o, nk.dtime) || resp_add_int(o, (long long)nk.dcount))
                    st = FD_E_NOMEM;
                free(nk.cons);
            }
            list_free(&ql2);
        }
        list_free(&cl);
    }
    list_free(&gl);
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
    if (which < 0) return unknown_subcmd(c, "XINFO");
    int ar = subs[which].arity;
    if ((ar > 0 && c->argc != ar) || (ar < 0 && c->argc < -ar)) return subcmd_arity_err(c, subs[which].full);
    if (which == 3) return add_help(c->out, xinfo_help);
    sref s;
    FD_TRY(s_open(c, &c->argv[2], &s));
    if (!s.exists) return FD_E_NOKEY;
    resp_out *o = c->out;
    size_t mark = o->len;
    int st = FD_OK;
    if (which == 0) {
        sgroup g;
        st = group_get(&s, c->argv[3].ptr, c->argv[3].len, &g);
        if (st == FD_NOTFOUND) {
            st = errf_names(c, "NOGROUP No such consumer group '%.*s' for key name '%.*s'", &c->argv[3], &c->argv[2]);
            goto out;
        }
        if (st != FD_OK) goto out;
        uint8_t pp[9];
        pp[0] = 'c';
        put64(pp + 1, g.gid);
        list_arg cl;
        if ((st = list_prefix(&s, pp, 9, 0, &cl)) != FD_OK) goto out;
        list_sort_names(&cl, 16);
        if (resp_add_array(o, (long long)cl.n)) st = FD_E_NOMEM;
        for (size_t k = 0; st == FD_OK && k < cl.n; k++) {
            const uint8_t *v = cl.vals[k].p;
            if (cl.vals[k].n < 16) { st = FD_E_CORRUPT; break; }
            long long idle = c->now_ms - (int64_t)get64(v), pel;
            if (idle < 0) idle = 0;
            if ((st = cons_pending(&s, g.gid, (const char *)v + 16, cl.vals[k].n - 16, &pel)) != FD_OK) break;
            if (resp_add_map(o, 3) || resp_add_bulk_cstr(o, "name") || resp_add_bulk(o, v + 16, cl.vals[k].n - 16) ||
                resp_add_bulk_cstr(o, "pending") || resp_add_int(o, pel) ||
                resp_add_bulk_cstr(o, "idle") || resp_add_int(o, idle)) st = FD_E_NOMEM;
        }
        list_free(&cl);
    } else if (which == 1) {
        uint8_t gp = 'g';
        list_arg gl;
        if ((st = list_prefix(&s, &gp, 1, 0, &gl)) != FD_OK) goto out;
        list_sort_names(&gl, 48);
        if (resp_add_array(o, (long long)gl.n)) st = FD_E_NOMEM;
        for (size_t i = 0; st == FD_OK && i < gl.n; i++) {
            if (gl.vals[i].n < 48) { st = FD_E_CORRUPT; break; }
            sgroup g;
            group_dec(gl.vals[i].p, &g);
            if (resp_add_map(o, 6) || resp_add_bulk_cstr(o, "name") || resp_add_bulk(o, gl.vals[i].p + 48, gl.vals[i].n - 48) ||
                resp_add_bulk_cstr(o, "consumers") || resp_add_int(o, (long long)g.consumers) ||
                resp_add_bulk_cstr(o, "pending") || resp_add_int(o, (long long)g.pel) ||
                resp_add_bulk_cstr(o, "last-delivered-id") || add_id(o, g.last) ||
                resp_add_bulk_cstr(o, "entries-read") ||
                (g.entries_read != INVALID_READ ? resp_add_int(o, g.entries_read) : resp_add_null(o)) ||
                resp_add_bulk_cstr(o, "lag")) { st = FD_E_NOMEM; break; }
            st = reply_lag(o, &s.m, &g);
        }
        list_free(&gl);
    } else {
        st = xinfo_stream(c, &s);
    }
out:
    if (st != FD_OK) o->len = mark;
    s_close(&s);
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
        uint32_t l = get32(raw->p + off);
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
    group_dec(gv->p, &g);
    g.name = (const char *)gv->p + 48;
    g.nl = gv->n - 48;
    uint8_t pfx[FD_SSUB_MAX];
    pfx[0] = 'p';
    put64(pfx + 1, g.gid);
    list_arg pel, cons;
    memset(&cons, 0, sizeof cons);
    int st = list_prefix(s, pfx, 9, 0, &pel);
    if (st != FD_OK) return st;
    st = fd_rdb_stream_group(out, g.name, g.nl, to_rsid(g.last), g.entries_read, pel.n);
    for (size_t i = 0; i < pel.n && st == FD_OK; i++) {
        if (pel.sls[i] != 25 || pel.vals[i].n < 16) { st = FD_E_CORRUPT; break; }
        st = fd_rdb_stream_nack(out, to_rsid(get_id(pel.subs[i] + 9)), (int64_t)get64(pel.vals[i].p),
                                get64(pel.vals[i].p + 8));
    }
    pfx[0] = 'c';
    if (st == FD_OK) st = list_prefix(s, pfx, 9, 0, &cons);
    if (st == FD_OK) {
        list_sort_names(&cons, 16);
        st = fd_rdb_stream_consumers(out, cons.n);
    }
    for (size_t i = 0; i < cons.n && st == FD_OK; i++) {
        const copyv *cv = &cons.vals[i];
        if (cv->n < 16) { st = FD_E_CORRUPT; break; }
        const char *name = (const char *)cv->p + 16;
        size_t nl = cv->n - 16;
        uint8_t qp[FD_SSUB_MAX];
        size_t ql = sk_cpel_pfx(qp, g.gid, name, nl);
        list_arg q;
        if ((st = list_prefix(s, qp, ql, 0, &q)) != FD_OK) break;
        st = fd_rdb_stream_consumer(out, name, nl, (int64_t)get64(cv->p), q.n);
        for (size_t k = 0; k < q.n && st == FD_OK; k++)
            st = q.sls[k] == ql + 16 ? fd_rdb_stream_cpel(out, to_rsid(get_id(q.subs[k] + ql))) : FD_E_CORRUPT;
        list_free(&q);
    }
    list_free(&pel);
    list_free(&cons);
    return st;
}

int fd_stream_dump(fd_stream_call *c, const resp_arg *key, fd_rdb_buf *out)
{
    sref s;
    FD_TRY(s_open(c, key, &s));
    if (!s.exists) { s_close(&s); return FD_NOTFOUND; }
    list_arg nodes, ents, groups;
    memset(&ents, 0, sizeof ents);
    memset(&groups, 0, sizeof groups);
    fd_rdb_item *fv = NULL, *mf = NULL;
    fd_rdb_sentry *se = NULL;
    size_t *first = NULL;
    uint8_t pn = 'n', px = 'x', pg = 'g';
    int st = list_prefix(&s, &pn, 1, 0, &nodes);
    if (st == FD_OK) st = list_prefix(&s, &px, 1, 0, &ents);
    if (st == FD_OK) st = list_prefix(&s, &pg, 1, 0, &groups);
    /* the entries, then each node's first entry (first[k]..first[k+1]) */
    size_t nfv = 0, maxmf = 0;
    for (size_t i = 0; i < ents.n && st == FD_OK; i++) {
        uint32_t n;
        if (ents.sls[i] != 17 || (st = blob_check(ents.vals[i].p, ents.vals[i].n, &n)) != FD_OK) {
            st = FD_E_CORRUPT;
            break;
        }
        nfv += n;
    }
    for (size_t k = 0; k < nodes.n && st == FD_OK; k++) {
        if (nodes.sls[k] != 17 || nodes.vals[k].n < 44) { st = FD_E_CORRUPT; break; }
        uint32_t nf = get32(nodes.vals[k].p + 40);
        if (nf > maxmf) maxmf = nf;
    }
    if (st == FD_OK && (!(fv = calloc(nfv + 1, sizeof *fv)) || !(se = calloc(ents.n + 1, sizeof *se)) ||
                        !(mf = calloc(maxmf + 1, sizeof *mf)) || !(first = calloc(nodes.n + 1, sizeof *first))))
        st = FD_E_NOMEM;
    size_t used = 0, live_nodes = 0;
    for (size_t i = 0; i < ents.n && st == FD_OK; i++) {
        const uint8_t *b = ents.vals[i].p;
        uint32_t n = get32(b);
        size_t off = 4;
        se[i].id = to_rsid(get_id(ents.subs[i] + 1));
        se[i].fv = fv + used;
        se[i].nf = n;
        for (uint32_t f = 0; f < n; f++) {
            uint32_t fl = get32(b + off), vl = get32(b + off + 4 + fl);
            fv[used++] = (fd_rdb_item){ (const char *)b + off + 4, fl, (const char *)b + off + 8 + fl, vl, 0 };
            off += 8 + (size_t)fl + vl;
        }
    }
    for (size_t k = 0, i = 0; k < nodes.n && st == FD_OK; k++) {
        sid start = get_id(nodes.subs[k] + 1);
        if (i < ents.n && idcmp(from_rsid(se[i].id), start) < 0) { st = FD_E_CORRUPT; break; }  /* no node */
        first[k] = i;
        sid next = k + 1 < nodes.n ? get_id(nodes.subs[k + 1] + 1) : SID_MAX;
        while (i < ents.n && (k + 1 == nodes.n || idcmp(from_rsid(se[i].id), next) < 0)) i++;
        if (i > first[k]) live_nodes++;
        if (k + 1 == nodes.n) first[nodes.n] = i;
    }
    if (st == FD_OK && !nodes.n && ents.n) st = FD_E_CORRUPT;
    if (st == FD_OK) st = fd_rdb_stream_begin(out, live_nodes);
    for (size_t k = 0; k < nodes.n && st == FD_OK; k++) {
        size_t n = first[k + 1] - first[k];
        uint32_t nmf = get32(nodes.vals[k].p + 40);
        if (!n) continue;
        if ((st = node_fields(&nodes.vals[k], mf, nmf)) != FD_OK) break;
        st = fd_rdb_stream_node(out, to_rsid(get_id(nodes.subs[k] + 1)), mf, nmf, se + first[k], n);
    }
    if (st == FD_OK) {
        fd_rdb_stream_info m = { 0, s.m.length, s.m.added, groups.n, to_rsid(s.m.last), to_rsid(s.m.first),
                                 to_rsid(s.m.maxdel) };
        st = fd_rdb_stream_info_put(out, &m);
    }
    if (st == FD_OK) list_sort_names(&groups, 48);
    for (size_t g = 0; g < groups.n && st == FD_OK; g++)
        st = groups.vals[g].n < 48 ? FD_E_CORRUPT : dump_group(&s, &groups.vals[g], out);
    if (st == FD_OK) st = fd_rdb_footer(out);
    free(fv);
    free(se);
    free(mf);
    free(first);
    list_free(&nodes);
    list_free(&ents);
    list_free(&groups);
    s_close(&s);
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
    put32(b, (uint32_t)nf);
    size_t off = 4;
    for (size_t i = 0; i < nf; i++) {
        put32(b + off, (uint32_t)fv[i].n);
        if (fv[i].n) memcpy(b + off + 4, fv[i].p, fv[i].n);
        off += 4 + fv[i].n;
        put32(b + off, (uint32_t)fv[i].vn);
        if (fv[i].vn) memcpy(b + off + 4, fv[i].v, fv[i].vn);
        off += 4 + fv[i].vn;
    }
    sk_entry(k, from_rsid(id));
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
    put32(n.raw.p + 40, (uint32_t)nmf);
    size_t off = 44;
    for (size_t i = 0; i < nmf; i++) {
        put32(n.raw.p + off, (uint32_t)mf[i].n);
        if (mf[i].n) memcpy(n.raw.p + off + 4, mf[i].p, mf[i].n);
        off += 4 + mf[i].n;
    }
    int st = node_write(r->s, &n);        /* every record exact; the last node is the tail */
    if (st == FD_OK) {
        tail_set(r->s, &n);
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
    return group_put(r->s, &r->g);
}

static int rst_consumer(void *ctx, const char *name, size_t nl, int64_t seen_ms, uint64_t npel)
{
    rst_ctx *r = ctx;
    FD_TRY(dup_name(&r->cname, name, nl));
    r->cl = nl;
    scons cn = { r->cname, nl, seen_ms, npel, 1 };
    return cons_put(r->s, &r->g, &cn);
}

static int rst_nack(void *ctx, fd_rdb_sid id, int64_t delivery_ms, uint64_t count)
{
    rst_ctx *r = ctx;
    FD_TRY(nack_put(r->s, &r->g, from_rsid(id), delivery_ms, count, r->cname, r->cl));
    return cpel_put(r->s, &r->g, r->cname, r->cl, from_rsid(id));
}

int fd_stream_restore(fd_stream_call *c, const resp_arg *key, const void *p, size_t len)
{
    sref s;
    memset(&s, 0, sizeof s);
    FD_TRY(s_create(c, key, &s));
    rst_ctx r;
    memset(&r, 0, sizeof r);
    r.s = &s;
    fd_rdb_stream_sink sk = { &r, rst_entry, rst_node, rst_info, rst_group, rst_consumer, rst_nack };
    int st = fd_rdb_stream_load(p, len, &sk);
    if (st == -1) st = FD_E_CORRUPT;       /* checked before: the payload changed? */
    if (st == FD_OK) st = s_save(&s);
    free(r.gname);
    free(r.cname);
    s_close(&s);
    return st;
}
