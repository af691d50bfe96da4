/* ab_diff.c — the A/B layer's text and comparison: replies as text,
 * whether two replies are the same answer, and the key-state diff of a
 * divergence (FRONTDOOR AB KEY). See ab_int.h. */
#include "ab_int.h"
#include "backends.h"
#include "../protocol/resp_scan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ text forms */

/* Printable form: bytes outside 0x20..0x7e as \xHH, arguments quoted when
 * they contain blanks or quotes; at most max bytes (then "..."). */
size_t ab_printable(char *out, size_t max, const char *s, size_t n, int quote) {
    size_t o = 0;
    int q = quote && (n == 0 || memchr(s, ' ', n) || memchr(s, '"', n));
    if (q && o < max) out[o++] = '"';
    for (size_t i = 0; i < n && o + 5 < max; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '\r') { out[o++] = '\\'; out[o++] = 'r'; }
        else if (ch == '\n') { out[o++] = '\\'; out[o++] = 'n'; }
        else if (ch == '"' || ch == '\\') { out[o++] = '\\'; out[o++] = (char)ch; }
        else if (ch < 32 || ch > 126) o += (size_t)snprintf(out + o, max - o, "\\x%02x", ch);
        else out[o++] = (char)ch;
        if (o + 5 >= max && i + 1 < n) { memcpy(out + o, "...", 3); o += 3; break; }
    }
    if (q && o < max) out[o++] = '"';
    return o;
}


int ab_span_cmp(const void *a, const void *b) {
    const span *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->p, y->p, n);
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

long long ab_elements(const char *r, size_t len, span **out) {
    *out = NULL;
    if (len < 4 || (r[0] != '*' && r[0] != '%' && r[0] != '~')) return -1;
    const char *nl = memchr(r, '\n', len);
    if (!nl) return -1;
    long long n = strtoll(r + 1, NULL, 10);
    if (n < 0) return -1;
    if (r[0] == '%') n *= 2;
    span *v = calloc((size_t)(n ? n : 1), sizeof *v);
    if (!v) return -1;
    size_t pos = (size_t)(nl - r) + 1;
    for (long long i = 0; i < n; i++) {
        resp_scanner sc;
        resp_scanner_init(&sc);
        long long l = resp_scan_reply(&sc, r + pos, len - pos);
        if (l <= 0) { free(v); return -1; }
        v[i] = (span){r + pos, (size_t)l};
        pos += (size_t)l;
    }
    *out = v;
    return n;
}

/* Split an aggregate reply into its top-level elements (pairs of elements
 * when `pairs`), sorted. Returns the count, or -1 when the reply is not an
 * aggregate or cannot be split (then it is compared as bytes). */
static long long sorted_elements(const char *r, size_t len, int pairs, span **out) {
    span *v;
    long long n = ab_elements(r, len, &v), m = n;
    if (n < 0) return -1;
    if (r[0] == '%') pairs = 1;                         /* a RESP3 map: key, value, ... */
    if (pairs) {
        if (n % 2) { free(v); return -1; }
        m = n / 2;
        for (long long i = 0; i < m; i++)               /* a pair: two adjacent spans as one */
            v[i] = (span){v[2 * i].p, v[2 * i].n + v[2 * i + 1].n};
    }
    qsort(v, (size_t)m, sizeof *v, ab_span_cmp);
    *out = v;
    return m;
}

int ab_replies_equal(const fd_command *cmd, const char *a, size_t al, const char *b, size_t bl) {
    if (al == bl && !memcmp(a, b, al)) return 1;
    if (!(cmd->flags & FD_CMD_UNORDERED)) return 0;
    span *x = NULL, *y = NULL;
    int pairs = (cmd->flags & FD_CMD_PAIRS) != 0;
    long long nx = sorted_elements(a, al, pairs, &x), ny = sorted_elements(b, bl, pairs, &y);
    int eq = nx >= 0 && nx == ny && a[0] == b[0];
    for (long long i = 0; eq && i < nx; i++) eq = ab_span_cmp(&x[i], &y[i]) == 0;
    free(x);
    free(y);
    return eq;
}

/* One RESP reply as redis-cli shows it, on one line: "text", (nil),
 * (integer) 3, (error) ERR ..., [a, b] for aggregates. Returns bytes read
 * from r (0 if malformed); appends at most max-1 bytes to out. */
size_t ab_reply_text(const char *r, size_t len, char *out, size_t max, size_t *o) {
#define PUT(str, n) do { size_t n_ = (n); if (*o + n_ >= max) n_ = max - 1 - *o; memcpy(out + *o, str, n_); *o += n_; out[*o] = 0; } while (0)
    if (len < 3) return 0;
    const char *nl = memchr(r, '\n', len);
    if (!nl || nl == r || nl[-1] != '\r') return 0;
    size_t hl = (size_t)(nl - r) + 1;           /* header with CRLF */
    const char *v = r + 1;
    size_t vl = hl - 3;
    long long n = strtoll(v, NULL, 10);
    char tmp[64];
    switch (r[0]) {
    case '+': PUT(v, vl); return hl;
    case '-': PUT("(error) ", 8); PUT(v, vl); return hl;
    case ':': PUT("(integer) ", 10); PUT(v, vl); return hl;
    case ',': PUT("(double) ", 9); PUT(v, vl); return hl;
    case '#': PUT(v[0] == 't' ? "(true)" : "(false)", v[0] == 't' ? 6 : 7); return hl;
    case '_': PUT("(nil)", 5); return hl;
    case '$': case '=': {
        if (n < 0) { PUT("(nil)", 5); return hl; }
        if (hl + (size_t)n + 2 > len) return 0;
        char buf[AB_TEXT_MAX + 8];
        size_t bl = ab_printable(buf, sizeof buf - 2, r + hl, (size_t)n, 0);
        PUT("\"", 1); PUT(buf, bl); PUT("\"", 1);
        return hl + (size_t)n + 2;
    }
    case '*': case '~': case '>': case '%': {
        if (n < 0) { PUT("(nil)", 5); return hl; }
        long long elems = r[0] == '%' ? 2 * n : n;
        size_t pos = hl;
        PUT(r[0] == '%' ? "{" : "[", 1);
        for (long long i = 0; i < elems; i++) {
            if (i) PUT(r[0] == '%' && (i & 1) ? ": " : ", ", 2);
            size_t used = ab_reply_text(r + pos, len - pos, out, max, o);
            if (!used) return 0;
            pos += used;
        }
        PUT(r[0] == '%' ? "}" : "]", 1);
        return pos;
    }
    default:
        snprintf(tmp, sizeof tmp, "(%zu bytes)", len);
        PUT(tmp, strlen(tmp));
        return len;
    }
#undef PUT
}


/* ------------------------------------------------------------ key state */

/* The state of one key, asked of both sides at once: its type, its PTTL and
 * every type's full read (the reads of the other types answer WRONGTYPE and
 * are ignored). Streams and modules' types show as their type only. */
enum { ST_TYPE, ST_PTTL, ST_GET, ST_LRANGE, ST_HGETALL, ST_SMEMBERS, ST_ZRANGE, ST_N };

typedef struct ab_state_job ab_state_job;
typedef struct ab_call_ud { ab_state_job *j; int side, idx; } ab_call_ud;

struct ab_state_job {
    char       *key;
    size_t      keylen;
    char       *st[2][ST_N];
    size_t      stl[2][ST_N];
    ab_call_ud  ud[2][ST_N];
    int         phase;         /* 0: TYPE and PTTL asked; 1: the value's read */
    int         left;          /* answers still owed in this phase (+1 while the calls are issued) */
    ab_sample   s;             /* a divergence: kept once the diff is in */
    fd_pending *reply;         /* FRONTDOOR AB KEY: the client's reply owed */
    int         proto;
};

static void job_free(ab_state_job *j) {
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < ST_N; i++) free(j->st[s][i]);
    free(j->key);
    free(j);
}

/* A simple or integer reply's text ("+list" -> list, ":12" -> 12); "" otherwise. */
static void line_of(const char *r, size_t len, char *out, size_t max) {
    out[0] = 0;
    if (!r || len < 3 || (r[0] != '+' && r[0] != ':')) return;
    const char *nl = memchr(r, '\r', len);
    size_t n = nl ? (size_t)(nl - r) - 1 : 0;
    if (n >= max) n = max - 1;
    memcpy(out, r + 1, n);
    out[n] = 0;
}

/* The bulk strings of a flat RESP2 array (or one bulk string: a 1-element
 * list); spans into r. Count, or -1 when r is neither. */
static long long bulks(const char *r, size_t len, span **out) {
    *out = NULL;
    if (!r || len < 4) return -1;
    const char *end = r + len, *p = r;
    long long n = 1;
    if (r[0] == '*') {
        n = strtoll(r + 1, NULL, 10);
        const char *nl = memchr(r, '\n', len);
        if (n < 0 || !nl) return -1;
        p = nl + 1;
    } else if (r[0] != '$') return -1;
    span *v = calloc((size_t)(n ? n : 1), sizeof *v);
    if (!v) return -1;
    for (long long i = 0; i < n; i++) {
        const char *nl = p < end ? memchr(p, '\n', (size_t)(end - p)) : NULL;
        if (!nl || p[0] != '$') { free(v); return -1; }
        long long l = strtoll(p + 1, NULL, 10);
        if (l < 0) { free(v); if (r[0] == '$') return 0; return -1; }
        if (nl + 1 + l + 2 > end) { free(v); return -1; }
        v[i] = (span){nl + 1, (size_t)l};
        p = nl + 1 + l + 2;
    }
    *out = v;
    return n;
}

typedef struct txt { char *b; size_t n, max; } txt;

static void addf(txt *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void addf(txt *t, const char *fmt, ...) {
    if (t->n + 1 >= t->max) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t->b + t->n, t->max - t->n, fmt, ap);
    va_end(ap);
    if (k > 0) t->n += (size_t)k < t->max - t->n ? (size_t)k : t->max - t->n - 1;
}

static void addq(txt *t, span s) {
    char buf[96];
    size_t n = ab_printable(buf, 64, s.p, s.n, 0);
    addf(t, "\"%.*s\"", (int)n, buf);
}

static int span_eq(span a, span b) { return a.n == b.n && !memcmp(a.p, b.p, a.n); }

/* Sort pairs (name, value) by name: v holds 2n spans. */
static int pair_cmp(const void *a, const void *b) { return ab_span_cmp(a, b); }

/* Set/hash/zset: names only on one side, and (with values) names whose
 * values differ. */
static void diff_named(txt *t, const char *what, const char *vname, span *a, long long na, span *b, long long nb, int pairs) {
    size_t w = pairs ? 2 : 1;
    qsort(a, (size_t)na, w * sizeof *a, pair_cmp);
    qsort(b, (size_t)nb, w * sizeof *b, pair_cmp);
    int shown = 0;
    long long i = 0, j = 0;
    if (na != nb) addf(t, "%s: %lld vs %lld %s; ", what, na, nb, pairs ? (vname[0] == 'v' ? "fields" : "members") : "members");
    while ((i < na || j < nb) && shown < 6) {
        int c = i >= na ? 1 : j >= nb ? -1 : ab_span_cmp(&a[i * (long long)w], &b[j * (long long)w]);
        if (c < 0) { addf(t, "%s ", what); addq(t, a[i * (long long)w]); addf(t, " only on the primary; "); i++; shown++; }
        else if (c > 0) { addf(t, "%s ", what); addq(t, b[j * (long long)w]); addf(t, " only on the secondary; "); j++; shown++; }
        else {
            if (pairs && !span_eq(a[i * 2 + 1], b[j * 2 + 1])) {
                addf(t, "%s ", what); addq(t, a[i * 2]); addf(t, " %s: ", vname);
                addq(t, a[i * 2 + 1]); addf(t, " vs "); addq(t, b[j * 2 + 1]); addf(t, "; ");
                shown++;
            }
            i++, j++;
        }
    }
    if (shown == 6) addf(t, "...; ");
}

static int read_of(const char *type);

/* Readable summary of a key's state on one side, into t. */
static void state_text(txt *t, ab_state_job *j, int s) {
    char type[32], ttl[32];
    line_of(j->st[s][ST_TYPE], j->stl[s][ST_TYPE], type, sizeof type);
    line_of(j->st[s][ST_PTTL], j->stl[s][ST_PTTL], ttl, sizeof ttl);
    if (!type[0]) {                               /* the side could not answer */
        char buf[128];
        size_t n = j->st[s][ST_TYPE] ? ab_printable(buf, 100, j->st[s][ST_TYPE], j->stl[s][ST_TYPE], 0) : 0;
        addf(t, "(no answer: %.*s)", (int)n, buf);
        return;
    }
    addf(t, "type %s", type);
    if (!strcmp(type, "none")) return;
    long long ms = strtoll(ttl, NULL, 10);
    if (ms >= 0) addf(t, ", ttl %lld ms", ms); else addf(t, ", no ttl");
    int idx = read_of(type);
    if (idx < 0) return;
    if (idx != ST_GET) {
        span *v = NULL;
        long long n = bulks(j->st[s][idx], j->stl[s][idx], &v);
        free(v);
        if (n >= 0) addf(t, ", %lld %s", idx == ST_HGETALL || idx == ST_ZRANGE ? n / 2 : n,
                         idx == ST_HGETALL ? "fields" : idx == ST_LRANGE ? "elements" : "members");
    }
    char line[AB_TEXT_MAX + 8];
    size_t o = 0;
    line[0] = 0;
    if (ab_reply_text(j->st[s][idx], j->stl[s][idx], line, sizeof line, &o)) addf(t, ", %s", line);
}

/* What differs between the two sides' states of the key, into t. */
static void diff_text(txt *t, ab_state_job *j) {
    char type[2][32], ttl[2][32];
    for (int s = 0; s < 2; s++) {
        line_of(j->st[s][ST_TYPE], j->stl[s][ST_TYPE], type[s], sizeof type[s]);
        line_of(j->st[s][ST_PTTL], j->stl[s][ST_PTTL], ttl[s], sizeof ttl[s]);
    }
    size_t start = t->n;
    if (!type[0][0] || !type[1][0]) { addf(t, "cannot tell: a side did not answer"); return; }
    if (strcmp(type[0], type[1])) {
        if (!strcmp(type[1], "none")) addf(t, "the key exists only on the primary (a %s)", type[0]);
        else if (!strcmp(type[0], "none")) addf(t, "the key exists only on the secondary (a %s)", type[1]);
        else addf(t, "type: %s on the primary, %s on the secondary", type[0], type[1]);
        return;
    }
    if (!strcmp(type[0], "none")) { addf(t, "the key exists on neither side now"); return; }
    long long ms0 = strtoll(ttl[0], NULL, 10), ms1 = strtoll(ttl[1], NULL, 10);
    if ((ms0 < 0) != (ms1 < 0)) {
        addf(t, "TTL: ");
        if (ms0 < 0) addf(t, "none"); else addf(t, "%lld ms", ms0);
        addf(t, " on the primary, ");
        if (ms1 < 0) addf(t, "none"); else addf(t, "%lld ms", ms1);
        addf(t, " on the secondary; ");
    } else if (ms0 >= 0 && llabs(ms0 - ms1) > 1000) {
        addf(t, "TTL: %lld ms on the primary, %lld ms on the secondary; ", ms0, ms1);
    }
    const char *ty = type[0];
    int idx = read_of(ty);
    span *a = NULL, *b = NULL;
    long long na = idx < 0 ? -1 : bulks(j->st[0][idx], j->stl[0][idx], &a);
    long long nb = idx < 0 ? -1 : bulks(j->st[1][idx], j->stl[1][idx], &b);
    if (idx >= 0 && (na < 0 || nb < 0)) addf(t, "%s: cannot read its value on both sides; ", ty);
    else if (idx == ST_GET && (na != 1 || nb != 1)) addf(t, "the string changed while it was read; ");   /* deleted between TYPE and GET */
    else if (idx == ST_GET) {
        if (!span_eq(a[0], b[0])) {
            size_t k = 0;
            while (k < a[0].n && k < b[0].n && a[0].p[k] == b[0].p[k]) k++;
            addf(t, "string value: "); addq(t, a[0]); addf(t, " (%zu bytes) on the primary, ", a[0].n);
            addq(t, b[0]); addf(t, " (%zu bytes) on the secondary, first difference at byte %zu; ", b[0].n, k);
        }
    } else if (idx == ST_LRANGE) {
        long long k = 0;
        while (k < na && k < nb && span_eq(a[k], b[k])) k++;
        if (na != nb) addf(t, "list length: %lld on the primary, %lld on the secondary; ", na, nb);
        if (k < na || k < nb) {
            addf(t, "list element %lld: ", k);
            if (k < na) addq(t, a[k]); else addf(t, "(none)");
            addf(t, " vs ");
            if (k < nb) addq(t, b[k]); else addf(t, "(none)");
            addf(t, "; ");
        }
    } else if (idx == ST_HGETALL) {
        diff_named(t, "field", "value", a, na / 2, b, nb / 2, 1);
    } else if (idx == ST_SMEMBERS) {
        diff_named(t, "member", "", a, na, b, nb, 0);
    } else if (idx == ST_ZRANGE) {
        diff_named(t, "member", "score", a, na / 2, b, nb / 2, 1);
    }
    free(a);
    free(b);
    if (t->n == start) addf(t, "the %s is identical on both sides now (it changed since, or the replies differ on equal data)", ty);
    else if (t->n >= 2 && t->b[t->n - 2] == ';') t->b[t->n -= 2] = 0;
}

static void job_done(ab_state_job *j) {
    char d[AB_DIFF_MAX];
    txt t = {d, 0, sizeof d};
    d[0] = 0;
    diff_text(&t, j);
    if (j->reply) {                           /* FRONTDOOR AB KEY */
        resp_out o;
        resp_out_init(&o, j->proto);
        char buf[2][AB_TEXT_MAX * 2];
        for (int s = 0; s < 2; s++) {
            txt st = {buf[s], 0, sizeof buf[s]};
            buf[s][0] = 0;
            state_text(&st, j, s);
        }
        resp_add_array(&o, 6);
        resp_add_bulk_cstr(&o, "primary");
        resp_add_bulk_cstr(&o, buf[0]);
        resp_add_bulk_cstr(&o, "secondary");
        resp_add_bulk_cstr(&o, buf[1]);
        resp_add_bulk_cstr(&o, "diff");
        resp_add_bulk_cstr(&o, d);
        px_pending_reply(j->reply, o.data, o.len);
        resp_out_free(&o);
    } else {
        j->s.diff = strdup(d);
        ab_keep_divergence(&j->s);
    }
    job_free(j);
}

static void job_step(ab_state_job *j);

static void on_state(void *ud, const char *reply, size_t len) {
    ab_call_ud *u = ud;
    ab_state_job *j = u->j;
    if ((j->st[u->side][u->idx] = malloc(len ? len : 1)) != NULL) {
        memcpy(j->st[u->side][u->idx], reply, len);
        j->stl[u->side][u->idx] = len;
    }
    if (--j->left == 0) job_step(j);
}

static int read_of(const char *type) {
    return !strcmp(type, "string") ? ST_GET : !strcmp(type, "list") ? ST_LRANGE : !strcmp(type, "hash") ? ST_HGETALL :
           !strcmp(type, "set") ? ST_SMEMBERS : !strcmp(type, "zset") ? ST_ZRANGE : -1;
}

/* Ask both sides for the key's state in two steps: TYPE and PTTL, then the
 * read that fits each side's type (no WRONGTYPE errors in the backends'
 * counters); job_done runs once all is in. */
static void job_calls(ab_state_job *j, int phase) {
    static char c_type[] = "TYPE", c_pttl[] = "PTTL", c_get[] = "GET", c_lrange[] = "LRANGE", c_hgetall[] = "HGETALL",
                c_smembers[] = "SMEMBERS", c_zrange[] = "ZRANGE", c_0[] = "0", c_m1[] = "-1", c_ws[] = "WITHSCORES";
    resp_arg k = {j->key, j->keylen};
    resp_arg calls[ST_N][5] = {
        {{c_type, 4}, k}, {{c_pttl, 4}, k}, {{c_get, 3}, k}, {{c_lrange, 6}, k, {c_0, 1}, {c_m1, 2}},
        {{c_hgetall, 7}, k}, {{c_smembers, 8}, k}, {{c_zrange, 6}, k, {c_0, 1}, {c_m1, 2}, {c_ws, 10}},
    };
    static const int argc[ST_N] = {2, 2, 2, 4, 2, 2, 5};
    int todo[2][2], n[2] = {0, 0};
    for (int s = 0; s < 2; s++) {
        if (phase == 0) { todo[s][n[s]++] = ST_TYPE; todo[s][n[s]++] = ST_PTTL; continue; }
        char type[32];
        line_of(j->st[s][ST_TYPE], j->stl[s][ST_TYPE], type, sizeof type);
        int r = read_of(type);
        if (r >= 0) todo[s][n[s]++] = r;
    }
    j->phase = phase;
    j->left = n[0] + n[1] + 1;
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < n[s]; i++) {
            int c = todo[s][i];
            j->ud[s][c] = (ab_call_ud){j, s, c};
            px_backend_call(s ? px_srv.secondary : px_srv.primary, argc[c], calls[c], on_state, &j->ud[s][c]);
        }
    if (--j->left == 0) job_step(j);
}

static void job_step(ab_state_job *j) {
    if (j->phase == 0) job_calls(j, 1);
    else job_done(j);
}

static void job_start(ab_state_job *j) { job_calls(j, 0); }

int ab_diff_divergence(ab_sample *s, char *key, size_t keylen) {
    ab_state_job *j = px_srv.secondary ? calloc(1, sizeof *j) : NULL;
    if (!j) return -1;
    j->s = *s;
    memset(s, 0, sizeof *s);
    j->key = key;
    j->keylen = keylen;
    job_start(j);
    return 0;
}

void ab_diff_key_cmd(px_conn *c, const resp_arg *key) {
    ab_state_job *j = calloc(1, sizeof *j);
    char *k = malloc(key->len + 1);
    fd_pending *p = j && k ? px_pending_push(c, NULL, fd_mono_ns()) : NULL;
    if (!p) { free(j); free(k); resp_add_error(&c->out, "ERR out of memory"); return; }
    memcpy(k, key->ptr, key->len);
    k[key->len] = 0;
    j->key = k;
    j->keylen = key->len;
    j->reply = p;
    j->proto = c->out.proto;
    job_start(j);
}

