/* cmdargs.h — option parsing shared by the Redis-types backends (the
 * ordered-KV layer in storage/kv/ and storage/mongodb/), so that every
 * backend accepts and refuses the same arguments, with the same error, in
 * the same order of checks as Redis 7.0.
 *
 * Module prefix: fd_. Pure functions of the arguments: no store access; the
 * callers keep the order in which these are called relative to their own
 * key lookups (e.g. GETEX validates its expiry only for an existing string,
 * HSCAN parses COUNT/MATCH only after the key's type is checked). */
#ifndef FRONTDOOR_CMDARGS_H
#define FRONTDOOR_CMDARGS_H

#include <stdint.h>
#include "../protocol/resp.h"
#include "status.h"

/* An integer argument (string2ll rules): FD_OK, or FD_E_NOTINT. */
int fd_arg_ll(const resp_arg *a, long long *v);

/* Redis's getIntFromObjectOrReply without a message (a DB index: SELECT,
 * MOVE, COPY ... DB): NULL with *v, or the error text ("value is not an
 * integer or out of range", or the int range's). */
const char *fd_arg_int_error(const resp_arg *a, long long *v);

/* ---- SET / GETEX (Redis's parseExtendedStringArgumentsOrReply) */

enum {
    FD_SET_NX = 1 << 0, FD_SET_XX = 1 << 1, FD_SET_GET = 1 << 2, FD_SET_KEEPTTL = 1 << 3,
    FD_SET_PERSIST = 1 << 4,
    FD_SET_EX = 1 << 5, FD_SET_PX = 1 << 6, FD_SET_EXAT = 1 << 7, FD_SET_PXAT = 1 << 8
};

/* Options of SET (is_set) or GETEX from argv[first]: *flags, and *exp the
 * expiry argument (NULL: none). The same option may repeat (last value
 * wins); conflicting ones are FD_E_SYNTAX. */
int fd_parse_set_opts(const resp_arg *argv, int argc, int first, int is_set,
                      int *flags, const resp_arg **exp);

/* Redis's getExpireMillisecondsOrReply: the absolute expiry in ms of the
 * argument a of the unit in flags (FD_SET_EX/PX/EXAT/PXAT). FD_OK,
 * FD_E_NOTINT or FD_E_EXPIRE. */
int fd_set_expire_ms(const resp_arg *a, int flags, int64_t now_ms, int64_t *out);

/* ---- EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT (expireGenericCommand) */

enum { FD_EXPIRE_NX = 1 << 0, FD_EXPIRE_XX = 1 << 1, FD_EXPIRE_GT = 1 << 2, FD_EXPIRE_LT = 1 << 3 };

/* The NX/XX/GT/LT options from argv[first]. 0 with *flags; 1 after writing
 * Redis's error reply to out (unsupported or incompatible options: the
 * command is done); -1 out of memory. */
int fd_parse_expire_opts(const resp_arg *argv, int argc, int first, int *flags, resp_out *out);

/* The absolute expiry in ms of the time argument a, relative to base (0 for
 * the *AT forms), in seconds or ms. FD_OK, FD_E_NOTINT or FD_E_EXPIRE. */
int fd_expire_when(const resp_arg *a, int64_t base, int seconds, long long *when);

/* Do the options refuse to change the expiry cur (0: none) to when? */
int fd_expire_refused(int flags, int64_t cur, long long when);

/* ---- SCAN / HSCAN / SSCAN / ZSCAN */

/* Redis's parseScanCursorOrReply (strtoul: an optional sign, then decimal
 * digits; "-N" wraps around; "" is 0; the text ends at a NUL, as the C
 * string Redis reads). 0, or -1: the caller replies
 * "ERR invalid cursor". */
int fd_parse_cursor(const resp_arg *ca, uint64_t *out);
/* The same for a command: FD_OK with *replied 0 and *cursor; FD_OK with
 * *replied 1 after writing "ERR invalid cursor"; FD_E_NOMEM. */
int fd_scan_cursor(const resp_arg *ca, uint64_t *cursor, resp_out *out, int *replied);

/* COUNT / MATCH (and TYPE when type is not NULL) from argv[first]: *count
 * (default 10), *pat (NULL for none or "*"), *type (NULL: none). FD_OK,
 * FD_E_NOTINT or FD_E_SYNTAX. */
int fd_parse_scan_opts(const resp_arg *argv, int argc, int first, long long *count,
                       const resp_arg **pat, const resp_arg **type);

/* ---- COPY (db.c copyCommand): [DB destination-db] [REPLACE] from argv[3]
 * (frontdoor has database 0 only: any other is Redis's "out of range").
 * FD_OK with *replace and *replied 0; FD_OK with *replied 1 after writing
 * Redis's error (a DB that is not an int or out of range; then, after every
 * option, source = destination: "ERR source and destination objects are
 * the same"); FD_E_NOTINT or FD_E_SYNTAX. Checked in argument order, as
 * Redis. */
int fd_parse_copy_opts(const resp_arg *argv, int argc, int *replace, resp_out *out, int *replied);

/* ---- ranges by rank (LRANGE-style start/end on n elements) */

/* genericZrangebyrankCommand's sanitizing: negative indexes from the end,
 * clamped to [0, n-1]. 0 when the range is empty. */
int fd_rank_range(long long n, long long *start, long long *end);

/* ---- SINTERCARD (t_set.c): numkeys key... [LIMIT limit] */

/* FD_OK with *replied 0 (*numkeys keys from argv[2], *limit, 0 = none);
 * FD_OK with *replied 1 after writing Redis's error; or FD_E_SYNTAX. */
int fd_parse_sintercard(const resp_arg *argv, int argc, long long *numkeys, long long *limit,
                        resp_out *out, int *replied);

/* ---- LMOVE / BLMOVE (t_list.c): the wherefrom, whereto arguments
 * argv[3], argv[4] (LEFT|RIGHT): FD_OK with *from_left, *to_left, or
 * FD_E_SYNTAX. */
int fd_parse_lmove(const resp_arg *argv, int *from_left, int *to_left);

/* ---- LPOS (t_list.c) */

typedef struct fd_lpos {
    long long rank;          /* >= 1: the first match to report, counted from the walk's start */
    int       rev;           /* RANK < 0: walk from the tail */
    long long count;         /* -1: no COUNT (one index or nil); 0: all */
    long long maxlen;        /* 0: no limit */
    int       nolimit;       /* RANK -9223372036854775808: as 7.0, COUNT never stops the walk */
} fd_lpos;

/* LPOS's options from argv[3]. FD_OK with *replied 0; FD_OK with *replied
 * 1 after writing Redis's error (RANK 0, negative COUNT/MAXLEN);
 * FD_E_NOTINT or FD_E_SYNTAX. */
int fd_parse_lpos(const resp_arg *argv, int argc, fd_lpos *o, resp_out *out, int *replied);

/* ---- HRANDFIELD / ZRANDMEMBER key [count [with]] (t_hash.c, t_zset.c),
 * before the key lookup; with is "withvalues" or "withscores". Errors in
 * Redis 7.0's order: count outside -LONG_MAX..LONG_MAX ("ERR value is out
 * of range, value must between ..."), then the syntax, then, with the
 * option, |count| > LONG_MAX/2 ("ERR value is out of range"). FD_OK with
 * *replied 0 (*has_count, *count, *with) or 1 after writing the error;
 * FD_E_NOTINT, FD_E_SYNTAX or FD_E_NOMEM. */
int fd_parse_rand_count(const resp_arg *argv, int argc, const char *with, int *has_count,
                        long long *count, int *withopt, resp_out *out, int *replied);

/* ---- reply bounds (max-reply-bytes, docs/bounds.md)
 *
 * The least number of bytes the reply of the command cmd_id (FD_CMD_*)
 * would take, from its arguments alone, before any key is read: the
 * count-driven replies whose size the data do not bound. HRANDFIELD,
 * SRANDMEMBER and ZRANDMEMBER with a negative count return |count|
 * elements (repeats allowed) whatever the collection's size: at least 6
 * bytes each ("$0\r\n\r\n"), 10 with WITHVALUES / WITHSCORES (a value's
 * least is 4 bytes: a RESP3 double ",0\r\n"). 0 for every other command,
 * and for arguments Redis itself refuses (its error comes first). O(1), no
 * allocation: a switch on cmd_id, then one integer parse. */
long long fd_reply_floor(int cmd_id, int argc, const resp_arg *argv);

/* The refusal of a reply past max-reply-bytes max: "-ERR the reply would
 * exceed max-reply-bytes (<max> bytes)", then ": at least <need> bytes"
 * when need > 0. 0, or -1 out of memory. */
int fd_add_reply_too_big(resp_out *out, long long max, long long need);

/* ---- sorted sets (t_zset.c) */

/* A score argument (Redis's string2d: strtod over the whole argument, no
 * leading space, no overflow, no NaN). 0, or -1: "ERR value is not a valid
 * float". */
int fd_parse_score(const resp_arg *a, double *out);
/* One bound of a score range (zslParseRange): "(" prefix = exclusive (*ex);
 * strtod must reach the end of the C string. 0, or -1 when invalid. */
int fd_parse_score_bound(const resp_arg *a, double *out, int *ex);
/* One bound of a lex range (zslParseLexRange): 1 = "-", 2 = "+", 0 = a
 * string at *s ("[" inclusive, "(" exclusive: *ex); -1 invalid. */
int fd_parse_lex_bound(const resp_arg *a, const char **s, size_t *l, int *ex);

enum { FD_ZADD_NX = 1 << 0, FD_ZADD_XX = 1 << 1, FD_ZADD_CH = 1 << 2, FD_ZADD_INCR = 1 << 3,
       FD_ZADD_GT = 1 << 4, FD_ZADD_LT = 1 << 5 };

/* ZADD's flags from argv[2] (ZINCRBY: is_incr, no flags), then the
 * score-member pairs from *first (*pairs of them, every score checked).
 * FD_OK with *replied 0; FD_OK with *replied 1 after writing Redis's error
 * reply to out (incompatible options); or FD_E_SYNTAX / FD_E_NOTFLOAT /
 * FD_E_NOMEM. */
int fd_parse_zadd(const resp_arg *argv, int argc, int is_incr, int *flags, int *first,
                  int *pairs, resp_out *out, int *replied);

enum { FD_ZR_RANK, FD_ZR_SCORE, FD_ZR_LEX };

/* A range of a sorted set: by rank (start, end as given), by score (min,
 * max, exclusive flags) or by lex (kind 1 "-", 2 "+", 0 a string with
 * exclusive flag); offset/limit (limit < 0: none). */
typedef struct fd_zrange {
    int type, rev, withscores;
    long long start, end;
    double min, max;
    int minex, maxex;
    int lmin_kind, lmax_kind;
    const char *lmin, *lmax;
    size_t lminl, lmaxl;
    long long offset, limit;
} fd_zrange;

/* The range arguments argv[2], argv[3] and (ZRANGE family) the options from
 * argv[4]. type/rev: fixed by the command, or -1 (ZRANGE: chosen by
 * BYSCORE/BYLEX/REV). Same returns as fd_parse_zadd (FD_E_NOTINT for a
 * rank or LIMIT that is not an integer). */
int fd_parse_zrange(const resp_arg *argv, int argc, int type, int rev, fd_zrange *z,
                    resp_out *out, int *replied);

/* Is a score / a member inside z's bounds (score and lex ranges)? */
int fd_zrange_gte_min(const fd_zrange *z, double score, const char *m, size_t ml);
int fd_zrange_lte_max(const fd_zrange *z, double score, const char *m, size_t ml);
/* Can a score or lex range not hold anything (min above max...)? */
int fd_zrange_empty(const fd_zrange *z);

/* Redis's order of members: by bytes, a shorter prefix first. */
int fd_lexcmp(const char *a, size_t al, const char *b, size_t bl);

#endif
