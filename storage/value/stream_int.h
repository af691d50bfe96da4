/* stream_int.h — what the stream engine's files share (private to
 * storage/value/stream*.c; stream.h is the public contract): ids, the
 * metadata blob, an open stream (sref), groups, consumers and pending
 * entries as records, and the functions one file calls in another (prefix
 * sx_). Module layout: stream_core.c (records, walks, node emulation,
 * append, trimming), stream.c (XADD XTRIM XDEL XLEN XRANGE XREAD XSETID),
 * stream_group.c (XGROUP XACK XPENDING XCLAIM XAUTOCLAIM), stream_info.c
 * (XINFO, DUMP/RESTORE payloads). No global state. */
#ifndef FRONTDOOR_STORAGE_VALUE_STREAM_INT_H
#define FRONTDOOR_STORAGE_VALUE_STREAM_INT_H

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

#define INVALID_READ     (-1LL)  /* SCG_INVALID_ENTRIES_READ */

typedef struct smeta {
    uint64_t length;
    sid      last, first, maxdel;
    uint64_t added, ngroups, next_gid, nnodes;
    /* the tail node's live state (its 'n' record is brought up to date
     * only when another node becomes the tail): XADD reads no node record */
    sid      t_start, t_last;
    uint64_t t_live, t_deleted, t_bytes, t_nf, t_fhash;
} smeta;

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

#define IO_PUT(s, k, kl, v, vl) (s)->c->io->put((s)->c->h, (s)->sk, k, kl, v, vl)

#define IO_DEL(s, k, kl)        (s)->c->io->del((s)->c->h, (s)->sk, k, kl)

#define IO_WALK(s, p, pl, f, fl, rev, fn, arg) (s)->c->io->walk((s)->c->h, (s)->sk, p, pl, f, fl, rev, fn, arg)

#define E_INVALID_ID "ERR Invalid stream ID specified as stream command argument"

typedef struct copyv { uint8_t *p; size_t n; } copyv;

/* -- groups */
typedef struct sgroup {
    const char *name; size_t nl;
    uint64_t gid;
    sid      last;
    int64_t  entries_read;
    uint64_t pel, consumers;
} sgroup;

/* -- consumers */
typedef struct scons {
    const char *name; size_t nl;
    int64_t  seen;
    uint64_t pel;
    int      exists;
} scons;

/* -- pending entries */
typedef struct snack {
    sid      id;
    int64_t  dtime;
    uint64_t dcount;
    char    *cons;      /* owned copy */
    size_t   cl;
} snack;

typedef struct idlist { sid *v; size_t n, cap; } idlist;

/* The first (rev 0) or last (rev 1) record under pfx at or after/before
 * from: its sub and value copied. FD_NOTFOUND when none. */
typedef struct one_arg { uint8_t sub[FD_SSUB_MAX]; size_t sl; copyv v; int found; } one_arg;

/* -- node records: live(8) deleted(8) bytes(8) last(16) nfields(4) fields (u32 len + bytes) */
typedef struct snode {
    sid      start, last;
    uint64_t live, deleted, bytes;
    copyv    raw;        /* the whole value (fields at raw.p + 44) */
    uint32_t nf;
} snode;

typedef struct trim_args {
    int       strategy, approx, id_given, seq_given, no_mkstream;
    long long maxlen, limit;
    sid       minid, id;
} trim_args;

typedef struct list_arg { uint8_t **subs; size_t *sls; copyv *vals; size_t n, cap; size_t max; } list_arg;

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

/* storage/value/stream_core.c */
int sx_add_entry(resp_out *o, sid id, const uint8_t *b, size_t bl);
int sx_add_id(resp_out *o, sid id);
int sx_append_entry(sref *s, sid id, const resp_arg *fv, int nf);
int sx_arg_ll(const resp_arg *a, long long *v);
int sx_blob_check(const uint8_t *b, size_t bl, uint32_t *n);
int sx_cons_get(sref *s, const sgroup *g, const char *name, size_t nl, scons *cn);
int sx_cons_lookup_create(sref *s, sgroup *g, const char *name, size_t nl, scons *cn, int *created);
int sx_cons_put(sref *s, const sgroup *g, const scons *cn);
int sx_cpel_del(sref *s, const sgroup *g, const char *cons, size_t cl, sid id);
int sx_cpel_put(sref *s, const sgroup *g, const char *cons, size_t cl, sid id);
int sx_cstr_is(const resp_arg *a, const char *s);
int sx_del_entry(sref *s, sid id);
int sx_del_ok(int st);
int sx_entry_exists(sref *s, sid id);
int sx_err(fd_stream_call *c, const char *msg);
int sx_errf_names(fd_stream_call *c, const char *fmt, const resp_arg *a, const resp_arg *b);
int sx_first_valid_id(sref *s, sid *out, int *found);
int sx_group_get(sref *s, const char *name, size_t nl, sgroup *g);
int sx_group_put(sref *s, const sgroup *g);
int sx_id_decr(sid *id);
int sx_id_incr(sid *id);
int sx_id_zero(sid a);
int sx_idcmp(sid a, sid b);
int sx_idlist_add(idlist *l, sid id);
int sx_insert_header(resp_out *o, size_t mark, int kind, long long n);
int sx_last_valid_id(sref *s, sid *out);
int sx_nack_get(sref *s, const sgroup *g, sid id, snack *n);
int sx_nack_put(sref *s, const sgroup *g, sid id, int64_t dtime, uint64_t dcount, const char *cons, size_t cl);
int sx_node_entry_gone(sref *s, sid id, int allow_drop);
int sx_node_write(sref *s, snode *n);
int sx_parse_add_trim(fd_stream_call *c, trim_args *a, int xadd);
int sx_parse_arg_id(const resp_arg *a, sid *id, uint64_t missing_seq, int strict);
int sx_parse_interval(const resp_arg *a, sid *id, int *ex, uint64_t missing_seq);
int sx_range_has_tombstones(const smeta *m, sid start, sid end);
int sx_reply_entry_at(sref *s, sid id);
int sx_reply_lag(resp_out *o, const smeta *m, const sgroup *g);
int sx_s_create(fd_stream_call *c, const resp_arg *key, sref *s);
int sx_s_open(fd_stream_call *c, const resp_arg *key, sref *s);
int sx_s_open_group(fd_stream_call *c, sref *s, sgroup *g, int *done);
int sx_s_save(sref *s);
int sx_stream_trim(sref *s, const trim_args *t, long long *deleted_out);
int sx_walk_one(sref *s, const uint8_t *pfx, size_t pl, const uint8_t *from, size_t fl, int rev, one_arg *a);
long long sx_estimate_distance(const smeta *m, sid id);
sid sx_get_id(const uint8_t *p);
size_t sx_sk_cons(uint8_t *b, uint64_t gid, const char *n, size_t nl);
size_t sx_sk_cpel_pfx(uint8_t *b, uint64_t gid, const char *n, size_t nl);
size_t sx_sk_entry(uint8_t *b, sid id);
size_t sx_sk_group(uint8_t *b, const char *n, size_t nl);
size_t sx_sk_pel(uint8_t *b, uint64_t gid, sid id);
uint32_t sx_get32(const uint8_t *p);
uint64_t sx_get64(const uint8_t *p);
void sx_group_dec(const uint8_t *b, sgroup *g);
void sx_put32(uint8_t *p, uint32_t v);
void sx_put64(uint8_t *p, uint64_t v);
void sx_put_id(uint8_t *p, sid id);
void sx_s_close(sref *s);
void sx_tail_set(sref *s, const snode *n);

/* storage/value/stream.c */
int sx_reply_range(sref *s, sid start, sid end, long long count, int rev, long long *n);

/* storage/value/stream_group.c */
int sx_add_help(resp_out *o, const char *const *lines);
int sx_cons_pending(sref *s, uint64_t gid, const char *name, size_t nl, long long *n);
int sx_list_prefix(sref *s, const uint8_t *pfx, size_t pl, size_t max, list_arg *a);
int sx_subcmd_arity_err(fd_stream_call *c, const char *full);
int sx_subcmd_syntax_err(fd_stream_call *c, const char *cmd);
int sx_unknown_subcmd(fd_stream_call *c, const char *cmd);
void sx_list_free(list_arg *a);
void sx_list_sort_names(list_arg *l, size_t off);

#endif
