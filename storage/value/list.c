/* list.c — the list commands over fd_list_io (see list.h), with Redis
 * 7.0's semantics, reply shapes, error texts and keyspace events
 * (t_list.c: learned from it, written here anew). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "list.h"
#include "../cmdargs.h"
#include "../status.h"
#include "../host.h"

#define EVENT(cls, name, key) do { if (fd_notify_on(FD_NOTIFY_##cls)) \
                                       io->event(h, FD_NOTIFY_##cls, name, key); } while (0)
#define OUT(expr) ((expr) ? FD_E_NOMEM : FD_OK)

static int done(const fd_list_io *io, void *h, fd_list_lk *lk, int s)
{
    if (io->close) io->close(h, lk);
    return s;
}

/* ---------------------------------------------------------------- push / pop */

int fd_list_push(const fd_list_io *io, void *h, int argc, const resp_arg *argv, int left, int xx, resp_out *out)
{
    const resp_arg *key = &argv[1];
    long long len = 0;
    int quick = 0, s = FD_OK;
    if (io->push_quick) s = io->push_quick(h, key, left, 2, argc, argv, &len, &quick);
    if (s != FD_OK) return s;
    if (!quick) {
        fd_list_lk lk;
        s = io->open(h, key, 0, -1, &lk, &len);
        if (s != FD_OK || (xx && !len)) return done(io, h, &lk, s != FD_OK ? s : OUT(resp_add_int(out, 0)));
        for (int j = 2; j < argc && s == FD_OK; j++) s = io->push(h, &lk, left, argv[j].ptr, argv[j].len);
        if (s == FD_OK) s = io->save(h, &lk);
        done(io, h, &lk, s);
        if (s != FD_OK) return s;
        len += argc - 2;
    }
    if (len > 0) EVENT(LIST, left ? "lpush" : "rpush", key);
    return OUT(resp_add_int(out, len));
}

typedef struct emit_arg { resp_out *out; long long left; } emit_arg;

static int emit_one(void *arg, const char *v, size_t vl)
{
    emit_arg *a = arg;
    if (resp_add_bulk(a->out, v, vl)) return FD_E_NOMEM;
    return --a->left > 0 ? 0 : -1;
}

/* Reply n elements from index idx (rev: counted from the tail) as bulks. */
static int emit(const fd_list_io *io, void *h, fd_list_lk *lk, long long idx, int rev, long long n, resp_out *out)
{
    if (n <= 0) return FD_OK;
    if (io->reply) return io->reply(h, lk, idx, rev, n, out);
    emit_arg a = { out, n };
    int s = io->walk(h, lk, idx, rev, emit_one, &a);
    if (s == -1) return FD_OK;
    return s == FD_OK ? FD_E_CORRUPT : s;          /* the length said there were more */
}

/* Pop count (1 <= count <= len) elements from one end of the open list,
 * replied as bulks (after any header the caller wrote); the events. */
static int pop_elems(const fd_list_io *io, void *h, fd_list_lk *lk, const resp_arg *key, int left,
                     long long count, long long len, resp_out *out)
{
    int s;
    if (count == 1) {
        const void *v; size_t vl;
        s = io->get(h, lk, left ? 0 : len - 1, &v, &vl);
        if (s == FD_OK) s = OUT(resp_add_bulk(out, v, vl));
    } else {
        s = emit(io, h, lk, 0, !left, count, out);
    }
    if (s == FD_OK) s = io->trim(h, lk, left, count);
    if (s == FD_OK) s = io->save(h, lk);
    if (s == FD_OK) {
        EVENT(LIST, left ? "lpop" : "rpop", key);
        if (count == len) EVENT(GENERIC, "del", key);
    }
    return s;
}

int fd_list_pop(const fd_list_io *io, void *h, int argc, const resp_arg *argv, int left, resp_out *out)
{
    long long count = 1;
    int hascount = argc == 3;
    if (argc > 3) return OUT(resp_add_errorf(out, "ERR wrong number of arguments for '%s' command", left ? "lpop" : "rpop"));
    /* getPositiveLongFromObjectOrReply: one text for both errors */
    if (hascount && (resp_str2ll(argv[2].ptr, argv[2].len, &count) != 0 || count < 0)) return FD_E_RANGE_POSITIVE;
    const resp_arg *key = &argv[1];
    if (!hascount && io->pop_quick) {
        int quick = 0, s = io->pop_quick(h, key, left, out, &quick);
        if (s != FD_OK) return s;
        if (quick) {
            EVENT(LIST, left ? "lpop" : "rpop", key);
            if (fd_notify_on(FD_NOTIFY_GENERIC) && io->key_gone && io->key_gone(h, key)) EVENT(GENERIC, "del", key);
            return FD_OK;
        }
    }
    fd_list_lk lk;
    long long len;
    int s = io->open(h, key, 0, -1, &lk, &len);
    if (s != FD_OK) return done(io, h, &lk, s);
    if (!len) return done(io, h, &lk, OUT(hascount ? resp_add_null_array(out) : resp_add_null(out)));
    if (hascount && count == 0) return done(io, h, &lk, OUT(resp_add_array(out, 0)));
    if (count > len) count = len;
    size_t mark = out->len;
    if (hascount && resp_add_array(out, count)) return done(io, h, &lk, FD_E_NOMEM);
    s = pop_elems(io, h, &lk, key, left, count, len, out);
    if (s != FD_OK) out->len = mark;
    return done(io, h, &lk, s);
}

int fd_list_mpop_one(const fd_list_io *io, void *h, const resp_arg *key, int left, long long count,
                     resp_out *out, int *popped)
{
    fd_list_lk lk;
    long long len;
    *popped = 0;
    int s = io->open(h, key, 0, -1, &lk, &len);
    if (s != FD_OK || !len) return done(io, h, &lk, s);
    if (count > len) count = len;
    size_t mark = out->len;
    s = OUT(resp_add_array(out, 2) || resp_add_bulk(out, key->ptr, key->len) || resp_add_array(out, count));
    if (s == FD_OK) s = pop_elems(io, h, &lk, key, left, count, len, out);
    if (s != FD_OK) out->len = mark;
    else *popped = 1;
    return done(io, h, &lk, s);
}

/* ---------------------------------------------------------------- reads */

int fd_list_llen(const fd_list_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    fd_list_lk lk;
    long long len;
    int s = io->open(h, &argv[1], 0, 0, &lk, &len);
    if (s == FD_OK) s = OUT(resp_add_int(out, len));
    return done(io, h, &lk, s);
}

int fd_list_lindex(const fd_list_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    long long idx, len;
    int isint = resp_str2ll(argv[2].ptr, argv[2].len, &idx) == 0;
    fd_list_lk lk;
    int s = isint && idx >= 0 ? io->open(h, &argv[1], idx, 1, &lk, &len) : io->open(h, &argv[1], 0, -1, &lk, &len);
    if (s != FD_OK || !len) return done(io, h, &lk, s != FD_OK ? s : OUT(resp_add_null(out)));
    if (!isint) return done(io, h, &lk, FD_E_NOTINT);
    if (idx < 0) idx += len;
    if (idx < 0 || idx >= len) return done(io, h, &lk, OUT(resp_add_null(out)));
    const void *v; size_t vl;
    s = io->get(h, &lk, idx, &v, &vl);
    if (s == FD_OK) s = OUT(resp_add_bulk(out, v, vl));
    return done(io, h, &lk, s);
}

int fd_list_lrange(const fd_list_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    long long start, end, n;
    if (resp_str2ll(argv[2].ptr, argv[2].len, &start) != 0 || resp_str2ll(argv[3].ptr, argv[3].len, &end) != 0)
        return FD_E_NOTINT;
    fd_list_lk lk;
    /* from the head: those elements; from the tail: the length first */
    int s = start >= 0 && end >= start && end - start < LLONG_MAX ? io->open(h, &argv[1], start, end - start + 1, &lk, &n)
                                                                  : io->open(h, &argv[1], 0, 0, &lk, &n);
    if (s != FD_OK) return done(io, h, &lk, s);
    if (start < 0) start += n;
    if (end < 0) end += n;
    if (start < 0) start = 0;
    if (start > end || start >= n) return done(io, h, &lk, OUT(resp_add_array(out, 0)));
    if (end >= n) end = n - 1;
    long long want = end - start + 1;
    if (io->need && (s = io->need(h, &lk, start, want)) != FD_OK) return done(io, h, &lk, s);
    size_t mark = out->len;
    s = OUT(resp_add_array(out, want));
    if (s == FD_OK) s = emit(io, h, &lk, start, 0, want, out);
    if (s != FD_OK) out->len = mark;
    return done(io, h, &lk, s);
}

typedef struct lpos_arg {
    const resp_arg *el;
    const fd_lpos *o;
    resp_out *out;
    long long n, index, matches, emitted;
} lpos_arg;

static int lpos_one(void *arg, const char *v, size_t vl)
{
    lpos_arg *a = arg;
    const fd_lpos *o = a->o;
    if (o->maxlen && a->index >= o->maxlen) return -1;
    if (vl == a->el->len && memcmp(v, a->el->ptr, vl) == 0 && ++a->matches >= o->rank) {
        if (resp_add_int(a->out, o->rev ? a->n - a->index - 1 : a->index)) return FD_E_NOMEM;
        a->emitted++;
        if (o->count == -1 || (o->count && !o->nolimit && a->emitted >= o->count)) return -1;
    }
    a->index++;
    return 0;
}

int fd_list_lpos(const fd_list_io *io, void *h, int argc, const resp_arg *argv, resp_out *out)
{
    fd_lpos o;
    int replied, s = fd_parse_lpos(argv, argc, &o, out, &replied);
    if (s != FD_OK || replied) return s;
    fd_list_lk lk;
    long long len;
    s = io->open(h, &argv[1], 0, -1, &lk, &len);
    if (s != FD_OK || !len) return done(io, h, &lk, s != FD_OK ? s : OUT(o.count != -1 ? resp_add_array(out, 0)
                                                                                       : resp_add_null(out)));
    size_t mark = out->len;
    lpos_arg a = { &argv[2], &o, out, len, 0, 0, 0 };
    s = io->walk(h, &lk, 0, o.rev, lpos_one, &a);
    if (s == -1) s = FD_OK;
    if (s == FD_OK && o.count != -1) s = OUT(resp_out_insert_header(out, mark, 'a', a.emitted));
    else if (s == FD_OK && !a.emitted) s = OUT(resp_add_null(out));
    if (s != FD_OK) out->len = mark;
    return done(io, h, &lk, s);
}

/* ---------------------------------------------------------------- changes in the middle */

int fd_list_lset(const fd_list_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    fd_list_lk lk;
    long long idx, len;
    int s = io->open(h, &argv[1], 0, -1, &lk, &len);
    if (s == FD_OK && !len) s = FD_E_NOKEY;
    if (s == FD_OK && resp_str2ll(argv[2].ptr, argv[2].len, &idx) != 0) s = FD_E_NOTINT;
    if (s == FD_OK) {
        if (idx < 0) idx += len;
        if (idx < 0 || idx >= len) s = FD_E_INDEX;
    }
    if (s == FD_OK) s = io->set(h, &lk, idx, argv[3].ptr, argv[3].len);
    if (s == FD_OK) s = io->save(h, &lk);
    if (s == FD_OK) {
        EVENT(LIST, "lset", &argv[1]);
        s = OUT(resp_add_status(out, "OK"));
    }
    return done(io, h, &lk, s);
}

int fd_list_ltrim(const fd_list_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    long long start, end, n;
    if (resp_str2ll(argv[2].ptr, argv[2].len, &start) != 0 || resp_str2ll(argv[3].ptr, argv[3].len, &end) != 0)
        return FD_E_NOTINT;
    if (io->ltrim_quick && start == 0 && end >= 0) {
        int quick = 0, s = io->ltrim_quick(h, &argv[1], end, &quick);
        if (s != FD_OK) return s;
        if (quick) {
            EVENT(LIST, "ltrim", &argv[1]);          /* (the list keeps an element) */
            return OUT(resp_add_status(out, "OK"));
        }
    }
    fd_list_lk lk;
    int s = io->open(h, &argv[1], 0, -1, &lk, &n);
    if (s != FD_OK || !n) return done(io, h, &lk, s != FD_OK ? s : OUT(resp_add_status(out, "OK")));
    long long ltrim, rtrim;
    if (start < 0) start += n;
    if (end < 0) end += n;
    if (start < 0) start = 0;
    if (start > end || start >= n) { ltrim = n; rtrim = 0; }
    else {
        if (end >= n) end = n - 1;
        ltrim = start;
        rtrim = n - end - 1;
    }
    if (ltrim) s = io->trim(h, &lk, 1, ltrim);
    if (s == FD_OK && rtrim) s = io->trim(h, &lk, 0, rtrim);
    if (s == FD_OK && ltrim + rtrim) s = io->save(h, &lk);
    if (s == FD_OK) {
        /* Redis raises ltrim on any existing list, trimmed or not */
        EVENT(LIST, "ltrim", &argv[1]);
        if (ltrim + rtrim >= n) EVENT(GENERIC, "del", &argv[1]);
        s = OUT(resp_add_status(out, "OK"));
    }
    return done(io, h, &lk, s);
}

int fd_list_lrem(const fd_list_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    long long toremove, n;
    if (resp_str2ll(argv[2].ptr, argv[2].len, &toremove) != 0) return FD_E_NOTINT;
    fd_list_lk lk;
    int s = io->open(h, &argv[1], 0, -1, &lk, &n);
    if (s != FD_OK || !n) return done(io, h, &lk, s != FD_OK ? s : OUT(resp_add_int(out, 0)));
    int rev = toremove < 0;
    uint64_t limit = toremove == 0 ? UINT64_MAX : rev ? (uint64_t)0 - (uint64_t)toremove : (uint64_t)toremove;
    uint64_t removed = 0;
    s = io->remove(h, &lk, argv[3].ptr, argv[3].len, limit, rev, &removed);
    if (s == FD_OK && removed) s = io->save(h, &lk);
    if (s == FD_OK && removed) {
        EVENT(LIST, "lrem", &argv[1]);
        if (removed == (uint64_t)n) EVENT(GENERIC, "del", &argv[1]);
    }
    if (s == FD_OK) s = OUT(resp_add_int(out, (long long)removed));
    return done(io, h, &lk, s);
}

typedef struct find_arg { const resp_arg *pivot; long long idx; } find_arg;

static int find_one(void *arg, const char *v, size_t vl)
{
    find_arg *a = arg;
    if (vl == a->pivot->len && memcmp(v, a->pivot->ptr, vl) == 0) return -1;
    a->idx++;
    return 0;
}

int fd_list_linsert(const fd_list_io *io, void *h, const resp_arg *argv, resp_out *out)
{
    int after;
    if (resp_arg_is(&argv[2], "after")) after = 1;
    else if (resp_arg_is(&argv[2], "before")) after = 0;
    else return FD_E_SYNTAX;
    fd_list_lk lk;
    long long n;
    int s = io->open(h, &argv[1], 0, -1, &lk, &n);
    if (s != FD_OK || !n) return done(io, h, &lk, s != FD_OK ? s : OUT(resp_add_int(out, 0)));
    find_arg a = { &argv[3], 0 };
    s = io->walk(h, &lk, 0, 0, find_one, &a);
    if (s == FD_OK) return done(io, h, &lk, OUT(resp_add_int(out, -1)));    /* no pivot */
    if (s != -1) return done(io, h, &lk, s);
    s = io->insert(h, &lk, a.idx + after, argv[4].ptr, argv[4].len);
    if (s == FD_OK) s = io->save(h, &lk);
    if (s == FD_OK) {
        EVENT(LIST, "linsert", &argv[1]);
        s = OUT(resp_add_int(out, n + 1));
    }
    return done(io, h, &lk, s);
}

/* ---------------------------------------------------------------- LMOVE */

int fd_list_lmove(const fd_list_io *io, void *h, const resp_arg *argv, int lmove, resp_out *out)
{
    int from_left = 0, to_left = 1;
    if (lmove) {
        int s = fd_parse_lmove(argv, &from_left, &to_left);
        if (s != FD_OK) return s;
    }
    fd_list_lk src, dstb, *dst = &src;
    long long n, dn;
    int s = io->open(h, &argv[1], 0, -1, &src, &n);
    if (s != FD_OK || !n) return done(io, h, &src, s != FD_OK ? s : OUT(resp_add_null(out)));
    int same = argv[1].len == argv[2].len && memcmp(argv[1].ptr, argv[2].ptr, argv[1].len) == 0;
    if (!same) {
        dst = &dstb;
        if ((s = io->open(h, &argv[2], 0, -1, dst, &dn)) != FD_OK) {
            done(io, h, dst, s);
            return done(io, h, &src, s);
        }
    }
    const void *v; size_t vl;
    char *val = NULL;
    s = io->get(h, &src, from_left ? 0 : n - 1, &v, &vl);
    if (s == FD_OK && !(val = malloc(vl ? vl : 1))) s = FD_E_NOMEM;     /* (the element outlives the pop) */
    if (s == FD_OK) memcpy(val, v, vl);
    if (s == FD_OK && !(same && n == 1)) {       /* (a list of one onto itself stays as it is) */
        s = io->trim(h, &src, from_left, 1);
        if (s == FD_OK) s = io->push(h, dst, to_left, val, vl);
        /* the destination first: a store that writes each save on its own loses nothing on a failure */
        if (s == FD_OK) s = io->save(h, dst);
        if (s == FD_OK && !same) s = io->save(h, &src);
    }
    if (s == FD_OK) s = OUT(resp_add_bulk(out, val, vl));
    if (s == FD_OK) {
        /* Redis's lmoveGenericCommand: the push, then the pop, then the source's del */
        EVENT(LIST, to_left ? "lpush" : "rpush", &argv[2]);
        EVENT(LIST, from_left ? "lpop" : "rpop", &argv[1]);
        if (!same && n == 1) EVENT(GENERIC, "del", &argv[1]);
    }
    if (!same) done(io, h, dst, s);
    s = done(io, h, &src, s);
    free(val);
    return s;
}
