/* resp_parser.c — incremental, in-place RESP request parser.
 *
 * Two request forms, chosen by the first byte as Redis does: '*' starts a
 * multibulk request (*N\r\n then N times $len\r\n<len bytes>\r\n), anything
 * else is an inline command (one line, split by sdssplitargs rules).
 *
 * State survives between calls so no byte is looked at twice: `pos` is where
 * the current header or bulk starts, `scan` where the search for the end of
 * a header line resumes, `bulk_len` the length of the bulk being read. While
 * a command is incomplete only offsets are kept (argoff[]), so the caller may
 * move its buffer; pointers are made on RESP_COMMAND.
 *
 * Errors and limits are those of Redis 7.0 processInlineBuffer /
 * processMultibulkBuffer. One deliberate difference: Redis applies its 64 KB
 * line limits to whatever happens to be buffered, so whether a long line is
 * refused depends on read sizes. Here a line is refused exactly when no
 * terminator occurs within its first 64 KB + 1 bytes (lines Redis accepts
 * whatever the reads are, are accepted), so the outcome never depends on how
 * the input was split. Also, a NUL byte is an ordinary byte here (Redis's
 * strchr/C-string handling stops at it).
 */
#include "protocol/resp.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    ST_START = 0,     /* nothing of the next command seen */
    ST_INLINE,        /* looking for the '\n' of an inline line */
    ST_MB_COUNT,      /* looking for the '\r' ending "*N" */
    ST_BULK_HDR,      /* looking for the '\r' ending "$len" (line starts at pos) */
    ST_BULK_DATA,     /* waiting for bulk_len + 2 bytes at pos */
    ST_ERROR          /* sticky */
};

void resp_parser_init(resp_parser *p, long long max_bulk) {
    memset(p, 0, sizeof *p);
    p->max_bulk = max_bulk > 0 ? max_bulk : RESP_DEFAULT_MAX_BULK;
    p->max_args = RESP_DEFAULT_MAX_ARGS;
    p->bulk_len = -1;
    p->state = ST_START;
}

void resp_parser_free(resp_parser *p) {
    free(p->argv);
    free(p->argoff);
    p->argv = NULL;
    p->argoff = NULL;
    p->argv_cap = 0;
    p->argc = 0;
}

void resp_parser_reset(resp_parser *p) {
    p->state = ST_START;
    p->mb_left = 0;
    p->bulk_len = -1;
    p->pos = p->scan = p->avail = 0;
    p->argc = 0;
    p->err = NULL;
    p->errbuf[0] = '\0';
}

const char *resp_parser_error(const resp_parser *p) {
    return p->state == ST_ERROR ? p->err : NULL;
}

size_t resp_parser_want(const resp_parser *p) {
    if (p->state != ST_BULK_DATA) return 0;
    size_t need = p->pos + (size_t)p->bulk_len + 2;
    return need > p->avail ? need - p->avail : 0;
}

static int fail(resp_parser *p, const char *msg) {
    p->state = ST_ERROR;
    p->err = msg;
    return RESP_ERROR;
}

/* Room for argc + 1 arguments: doubling, so O(1) amortised per argument. */
static int grow(resp_parser *p) {
    if (p->argc < p->argv_cap) return 0;
    if (p->argv_cap >= INT_MAX) return -1;
    int cap = p->argv_cap ? (p->argv_cap > INT_MAX / 2 ? INT_MAX : p->argv_cap * 2) : 8;
    resp_arg *nv = realloc(p->argv, (size_t)cap * sizeof *nv);
    if (!nv) return -1;
    p->argv = nv;
    size_t *no = realloc(p->argoff, (size_t)cap * sizeof *no);
    if (!no) return -1;
    p->argoff = no;
    p->argv_cap = cap;
    return 0;
}

/* Find the byte c in the line starting at `start`, resuming at p->scan and
 * looking no further than RESP_INLINE_MAX + 2 bytes into the line. As Redis:
 * more than 64 KB buffered without a newline is an error, but a 64 KB line
 * whose CRLF has arrived is accepted. Returns its offset, or (size_t)-1 with p->scan advanced.
 * *too_big is set when the line has no c within the limit (and the limit is
 * buffered). */
static size_t find_eol(resp_parser *p, const char *buf, size_t len, size_t start, char c, int *too_big) {
    size_t limit = start + RESP_INLINE_MAX + 2;
    if (limit > len) limit = len;
    *too_big = 0;
    if (len <= start) return (size_t)-1;          /* (a caller that shrank the buffer) */
    if (p->scan < start) p->scan = start;
    if (p->scan < limit) {
        const char *hit = memchr(buf + p->scan, c, limit - p->scan);
        if (hit) return (size_t)(hit - buf);
        p->scan = limit;
    }
    if (len - start > RESP_INLINE_MAX) *too_big = 1;
    return (size_t)-1;
}

static int is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Split line[0..n) into arguments by Redis sdssplitargs rules, unescaping in
 * place (the output never outruns the input). Fills p->argv/argc. Returns 0,
 * -1 on unbalanced quotes, -2 when argv cannot grow. */
static int split_inline(resp_parser *p, char *line, size_t n) {
    size_t r = 0, w = 0;

    for (;;) {
        while (r < n && is_space(line[r])) r++;
        if (r == n) return 0;
        size_t tok = w;
        int inq = 0, insq = 0, done = 0;
        while (!done) {
            /* r == n plays the role of sdssplitargs's terminating NUL */
            if (inq) {
                if (r == n) return -1;
                if (line[r] == '\\' && r + 3 < n && line[r + 1] == 'x' &&
                    hexval(line[r + 2]) >= 0 && hexval(line[r + 3]) >= 0) {
                    line[w++] = (char)(hexval(line[r + 2]) * 16 + hexval(line[r + 3]));
                    r += 3;
                } else if (line[r] == '\\' && r + 1 < n) {
                    char c;
                    r++;
                    switch (line[r]) {
                    case 'n': c = '\n'; break;
                    case 'r': c = '\r'; break;
                    case 't': c = '\t'; break;
                    case 'b': c = '\b'; break;
                    case 'a': c = '\a'; break;
                    default:  c = line[r]; break;
                    }
                    line[w++] = c;
                } else if (line[r] == '"') {
                    /* the closing quote must be followed by a space or nothing */
                    if (r + 1 < n && !is_space(line[r + 1])) return -1;
                    done = 1;
                } else {
                    line[w++] = line[r];
                }
            } else if (insq) {
                if (r == n) return -1;
                if (line[r] == '\\' && r + 1 < n && line[r + 1] == '\'') {
                    r++;
                    line[w++] = '\'';
                } else if (line[r] == '\'') {
                    if (r + 1 < n && !is_space(line[r + 1])) return -1;
                    done = 1;
                } else {
                    line[w++] = line[r];
                }
            } else if (r == n) {
                done = 1;
            } else {
                switch (line[r]) {
                case ' ': case '\n': case '\r': case '\t':
                    done = 1;
                    break;
                case '"':  inq = 1; break;
                case '\'': insq = 1; break;
                default:   line[w++] = line[r]; break;
                }
            }
            if (r < n) r++;
        }
        if (grow(p) < 0) return -2;
        p->argv[p->argc].ptr = line + tok;
        p->argv[p->argc].len = w - tok;
        p->argc++;
    }
}

/* Reset the per-command state after a command (or an empty one) ended at
 * p->pos; reports the consumed bytes. */
static int finish(resp_parser *p, size_t *consumed, int status) {
    *consumed = p->pos;
    p->state = ST_START;
    p->mb_left = 0;
    p->bulk_len = -1;
    p->pos = p->scan = 0;
    return status;
}

static int parse_inline(resp_parser *p, char *buf, size_t len, size_t *consumed) {
    int too_big;
    size_t nl = find_eol(p, buf, len, 0, '\n', &too_big);
    if (nl == (size_t)-1)
        return too_big ? fail(p, "Protocol error: too big inline request") : RESP_INCOMPLETE;
    size_t n = nl;
    if (n > 0 && buf[n - 1] == '\r') n--;
    int rc = split_inline(p, buf, n);
    if (rc == -1) { p->argc = 0; return fail(p, "Protocol error: unbalanced quotes in request"); }
    if (rc == -2) { p->argc = 0; return fail(p, "Protocol error: out of memory"); }
    p->pos = nl + 1;
    return finish(p, consumed, p->argc ? RESP_COMMAND : RESP_EMPTY);
}

static int parse_multibulk(resp_parser *p, char *buf, size_t len, size_t *consumed) {
    int too_big;
    long long ll;

    if (p->state == ST_MB_COUNT) {
        size_t cr = find_eol(p, buf, len, 0, '\r', &too_big);
        if (cr == (size_t)-1)
            return too_big ? fail(p, "Protocol error: too big mbulk count string") : RESP_INCOMPLETE;
        if (cr + 1 >= len) {            /* the byte after '\r' (not checked) must be here */
            p->scan = cr;
            return RESP_INCOMPLETE;
        }
        if (resp_str2ll(buf + 1, cr - 1, &ll) != 0 || ll > INT_MAX || ll > p->max_args)
            return fail(p, "Protocol error: invalid multibulk length");
        if (ll > RESP_UNAUTH_MAX_ARGS && p->unauth)
            return fail(p, "Protocol error: unauthenticated multibulk length");
        p->pos = cr + 2;
        if (ll <= 0) return finish(p, consumed, RESP_EMPTY);
        p->mb_left = ll;
        p->bulk_len = -1;
        p->scan = p->pos;
        p->state = ST_BULK_HDR;
    }

    while (p->mb_left > 0) {
        if (p->state == ST_BULK_HDR) {
            size_t cr = find_eol(p, buf, len, p->pos, '\r', &too_big);
            if (cr == (size_t)-1)
                return too_big ? fail(p, "Protocol error: too big bulk count string") : RESP_INCOMPLETE;
            if (cr + 1 >= len) {
                p->scan = cr;
                return RESP_INCOMPLETE;
            }
            if (buf[p->pos] != '$') {
                char c = buf[p->pos];
                if (c == '\r' || c == '\n') c = ' ';   /* Redis maps CR/LF in error texts to spaces */
                snprintf(p->errbuf, sizeof p->errbuf, "Protocol error: expected '$', got '%c'", c);
                return fail(p, p->errbuf);
            }
            if (resp_str2ll(buf + p->pos + 1, cr - p->pos - 1, &ll) != 0 || ll < 0 || ll > p->max_bulk)
                return fail(p, "Protocol error: invalid bulk length");
            if (ll > RESP_UNAUTH_MAX_BULK && p->unauth)
                return fail(p, "Protocol error: unauthenticated bulk length");
            p->pos = cr + 2;
            p->bulk_len = ll;
            p->state = ST_BULK_DATA;
        }
        /* ST_BULK_DATA: the data and the 2 bytes after it (CRLF, not checked) */
        if (len < p->pos || len - p->pos < (size_t)p->bulk_len + 2) return RESP_INCOMPLETE;
        if (grow(p) < 0) return fail(p, "Protocol error: out of memory");
        p->argoff[p->argc] = p->pos;
        p->argv[p->argc].len = (size_t)p->bulk_len;
        p->argc++;
        p->pos += (size_t)p->bulk_len + 2;
        p->bulk_len = -1;
        p->mb_left--;
        p->scan = p->pos;
        p->state = ST_BULK_HDR;
    }
    for (int i = 0; i < p->argc; i++) p->argv[i].ptr = buf + p->argoff[i];
    return finish(p, consumed, RESP_COMMAND);
}

int resp_parse(resp_parser *p, char *buf, size_t len, size_t *consumed) {
    *consumed = 0;
    if (p->state == ST_ERROR) return RESP_ERROR;
    if (p->state == ST_START) {
        p->argc = 0;
        p->pos = p->scan = 0;
        p->bulk_len = -1;
        p->mb_left = 0;
        if (len == 0) {
            p->avail = 0;
            return RESP_INCOMPLETE;
        }
        p->state = buf[0] == '*' ? ST_MB_COUNT : ST_INLINE;
    }
    p->avail = len;
    if (p->state == ST_INLINE) return parse_inline(p, buf, len, consumed);
    return parse_multibulk(p, buf, len, consumed);
}
