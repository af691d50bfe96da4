/* resp.h — RESP request parsing and reply writing. Pure: no I/O, no sockets.
 *
 * Module prefix: resp_. Nothing here allocates per argument: the parser
 * records each argument as a (pointer, length) slice into the caller's
 * buffer, and grows one argv array (amortised doubling, only as arguments
 * actually arrive — never from a length header alone).
 *
 * Ownership: every resp_arg returned by resp_parse() points into the buffer
 * that was passed to that call, and is valid only until the caller moves,
 * frees or overwrites those bytes (in practice: until the command is
 * executed and the connection compacts its read buffer).
 */
#ifndef FRONTDOOR_RESP_H
#define FRONTDOOR_RESP_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- parser */

typedef struct resp_arg {
    char  *ptr;   /* into the caller's buffer (mutable: inline args are unescaped in place) */
    size_t len;
} resp_arg;

/* An argument equal to `lit` (NUL-terminated), ASCII case-insensitively: the
 * one comparator for command names, subcommands and options. */
static inline int resp_arg_is(const resp_arg *a, const char *lit) {
    size_t i = 0;
    for (; lit[i]; i++) {
        if (i >= a->len) return 0;
        char x = a->ptr[i], y = lit[i];
        if (x >= 'A' && x <= 'Z') x = (char)(x + 32);
        if (y >= 'A' && y <= 'Z') y = (char)(y + 32);
        if (x != y) return 0;
    }
    return i == a->len;
}

/* Limits, as Redis: PROTO_INLINE_MAX_SIZE, proto-max-bulk-len, INT_MAX args,
 * and the CVE-2021-32675 limits for clients that are not authenticated. */
#define RESP_INLINE_MAX          (64 * 1024)
#define RESP_DEFAULT_MAX_BULK    (512LL * 1024 * 1024)
#define RESP_DEFAULT_MAX_ARGS    2147483647LL   /* Redis: INT_MAX; argv grows only as args arrive */
#define RESP_UNAUTH_MAX_ARGS     10
#define RESP_UNAUTH_MAX_BULK     16384

enum resp_status {
    RESP_INCOMPLETE = 0,   /* need more bytes; call again with the same buffer start, extended */
    RESP_COMMAND    = 1,   /* one command parsed: argc/argv filled, *consumed set */
    RESP_EMPTY      = 2,   /* bytes consumed that hold no command (empty inline line, *0, *-1) */
    RESP_ERROR      = -1   /* protocol error: resp_parser_error() has Redis's text; sticky */
};

typedef struct resp_parser {
    /* limits (set by resp_parser_init, may be changed between commands) */
    long long max_bulk;     /* proto-max-bulk-len */
    long long max_args;
    int       unauth;       /* non-zero: the tight pre-AUTH limits apply */

    /* state of the command being parsed; offsets relative to the buffer start */
    int       state;
    long long mb_left;      /* arguments still expected */
    long long bulk_len;     /* -1 while reading a $ header */
    size_t    pos;          /* bytes of the current command already scanned */
    size_t    scan;         /* header line: where the search for its end resumes */
    size_t    avail;        /* buffer length seen by the last resp_parse call */

    /* result: argv[0..argc-1] valid after RESP_COMMAND */
    int       argc;
    resp_arg *argv;
    size_t   *argoff;       /* internal: argument offsets while incomplete */
    int       argv_cap;

    const char *err;        /* static text, e.g. "Protocol error: invalid bulk length" */
    char        errbuf[64]; /* for "Protocol error: expected '$', got 'x'" */
} resp_parser;

void resp_parser_init(resp_parser *p, long long max_bulk);
void resp_parser_free(resp_parser *p);   /* frees argv; the parser may be re-inited */
/* Forget the command in progress and any error; keeps limits and argv memory. */
void resp_parser_reset(resp_parser *p);

/* Parse at most one command from buf[0..len). buf must start at the first
 * byte of the command being parsed (i.e. the caller drops *consumed bytes
 * after each RESP_COMMAND / RESP_EMPTY). On RESP_INCOMPLETE the caller keeps
 * the bytes (it may move them: only offsets are stored) and calls again once
 * more have arrived. Returns enum resp_status. On RESP_ERROR the parser stays
 * in error until resp_parser_reset/init; the caller replies "-ERR <err>" and closes.
 * p->argv/argc are valid until the next resp_parse call (which reuses them).
 * Inline commands are unescaped in place: buf[0..*consumed) is modified.
 * Errors: the texts of Redis 7 networking.c (see resp_parser_error). */
int resp_parse(resp_parser *p, char *buf, size_t len, size_t *consumed);

/* Text of the protocol error, without the "-ERR " prefix
 * ("Protocol error: invalid multibulk length"). NULL when no error. */
const char *resp_parser_error(const resp_parser *p);

/* Bytes the parser still needs before it can make progress: for a bulk it is
 * in the middle of, the rest of that bulk (so the caller can read a big
 * argument with one exact-size buffer growth), counting the 2 bytes of CRLF
 * after it, measured from the len of the last resp_parse call; otherwise 0
 * (unknown). */
size_t resp_parser_want(const resp_parser *p);

/* ---------------------------------------------------------------- writer */

/* A growable output buffer with the client's protocol version. The writer
 * functions append one RESP value (or an aggregate header) and return 0, or
 * -1 when memory could not be grown (the buffer is unchanged then). */
typedef struct resp_out {
    char  *data;
    size_t len, cap;
    int    proto;     /* 2 or 3 (HELLO) */
    /* max-reply-bytes (docs/bounds.md): when limit is not 0, growing the
     * buffer's allocation past limit bytes fails (-1, as out of memory)
     * and sets over. The check is on the growth path only (no cost while
     * the buffer has room); the caller that set limit rewinds the reply
     * and clears both. resp_out_init zeroes them. */
    size_t limit;
    int    over;
} resp_out;

void resp_out_init(resp_out *o, int proto);
void resp_out_free(resp_out *o);
int  resp_out_reserve(resp_out *o, size_t extra);
int  resp_out_raw(resp_out *o, const void *p, size_t n);     /* bytes as is */
/* Put an aggregate header of n elements in front of what was written
 * since mark (elements written before their count was known): kind 'a'
 * array, 's' set, 'm' map (RESP2: arrays of n, n, 2n). 0, or -1 (out of
 * memory or over the limit; nothing changed). */
int  resp_out_insert_header(resp_out *o, size_t mark, int kind, long long n);

int resp_add_simple(resp_out *o, const char *s, size_t n);   /* +s */
int resp_add_status(resp_out *o, const char *s);             /* +s (NUL-terminated) */
int resp_add_error(resp_out *o, const char *s);              /* -s ; s has its code ("ERR ...", "WRONGTYPE ...") ; CR/LF replaced by spaces */
int resp_add_errorf(resp_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Redis 7.0's "-ERR unknown command 'foo', with args beginning with: 'a' 'b' "
 * (name and arguments cut at 128 bytes, as Redis does). */
int resp_add_unknown_command(resp_out *o, int argc, const resp_arg *argv);
int resp_add_int(resp_out *o, long long v);                  /* :v */
int resp_add_bulk(resp_out *o, const void *p, size_t n);     /* $n p */
int resp_add_bulk_cstr(resp_out *o, const char *s);
int resp_add_bulk_ll(resp_out *o, long long v);              /* integer as bulk string */
int resp_add_null(resp_out *o);          /* RESP2 $-1, RESP3 _ */
int resp_add_null_array(resp_out *o);    /* RESP2 *-1, RESP3 _ */
int resp_add_array(resp_out *o, long long n);                /* *n */
int resp_add_map(resp_out *o, long long n);                  /* RESP3 %n ; RESP2 *2n */
int resp_add_set(resp_out *o, long long n);                  /* RESP3 ~n ; RESP2 *n */
int resp_add_push(resp_out *o, long long n);                 /* RESP3 >n ; RESP2 *n */
int resp_add_double(resp_out *o, double d);                  /* RESP3 ,d ; RESP2 bulk, formatted as Redis (%.17g, inf/-inf) */
int resp_add_bool(resp_out *o, int b);                       /* RESP3 #t/#f ; RESP2 :1/:0 */
int resp_add_verbatim(resp_out *o, const char *fmt3, const void *p, size_t n); /* RESP3 =n fmt:... ; RESP2 bulk */

/* Format a double as Redis does for replies and stored values
 * (INCRBYFLOAT uses "%.17Lg"-style human form; see resp_format_double).
 * Writes at most buflen bytes, returns the length. */
int resp_format_double(char *buf, size_t buflen, double d);
/* Exactly Redis ld2string(LD_STR_HUMAN) ("%.17Lf", zeros stripped): what
 * INCRBYFLOAT replies when computed in long double as Redis does. Returns the
 * length, 0 if buf is too small (needs up to 5 KB for huge values). */
int resp_format_ld(char *buf, size_t buflen, long double v);

/* vsnprintf into buf, truncated to fit, then "\r\n": one protocol or INFO
 * line. Returns its length (CRLF included); cap must be at least 3. */
size_t resp_vformat_line(char *buf, size_t cap, const char *fmt, va_list ap);

/* Exactly Redis 7.0's d2string (what ZSCAN shows for a score): an integral
 * value within +-LLONG_MAX/2 as an integer, 0 as "0" or "-0", inf as
 * "inf"/"-inf", anything else "%.17g". Returns the length. */
int resp_format_d2string(char *buf, size_t buflen, double d);

/* Strict parse helpers shared by command handlers (Redis's string2ll /
 * string2ld rules: no spaces, no leading '+', no overflow). 0 on success. */
int resp_str2ll(const char *s, size_t n, long long *out);
int resp_str2ld(const char *s, size_t n, long double *out);
int resp_ll2str(char *buf, size_t buflen, long long v);      /* returns length */
/* Unterminated decimal digits into dst (room for 20 bytes); returns length. */
int resp_ll_fmt(char *dst, long long v);
int resp_u64_fmt(char *dst, unsigned long long v);

/* Redis's glob matching (stringmatchlen): *, ?, [a-z], [^x], \\ escapes.
 * Used by KEYS, SCAN MATCH, CONFIG GET. Returns 1 on match. */
int resp_glob_match(const char *pat, size_t plen, const char *s, size_t slen, int nocase);

#endif
