/* ab.c — A/B split and mirror: routing decisions, reply comparison,
 * mismatch samples, INFO ab and the FRONTDOOR command (see ab.h). */
#include "ab.h"
#include "builtin.h"
#include "capture.h"   /* capture (issue 17) */
#include "backends.h"
#include "config.h"
#include "log.h"
#include "../protocol/resp_scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>

#define AB_SAMPLES 32          /* latest mismatches kept */
#define AB_TEXT_MAX 512        /* bytes of a command or reply kept in a sample */

struct px_ab_pair {
    fd_command *cmd;
    char       *text;          /* the command, printable, truncated */
    char       *rep[2];
    size_t      len[2];
    int         have[2], failed[2];
    int         queued;        /* counted in ab.queued until the secondary answers */
};

typedef struct ab_sample {
    long long  ms;             /* wall clock */
    char      *text, *rep[2];
    size_t     len[2];
} ab_sample;

static struct {
    uint64_t mirrored, compared, mismatches, dropped, split_secondary, secondary_errors, queued;
    ab_sample samples[AB_SAMPLES];
    unsigned  next_sample, nsamples;
    FILE     *log;
    char     *log_name;
} ab;

/* ---------------------------------------------------------------- split */

static uint64_t fnv1a(const void *p, size_t n, uint64_t h) {
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

/* A well-mixed 64-bit hash (FNV-1a then a finaliser), as a fraction in [0,1). */
static double unit_hash(const void *p, size_t n) {
    uint64_t h = fnv1a(p, n, 1469598103934665603ull);
    h ^= h >> 33; h *= 0xff51afd7ed558ccdull; h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53ull; h ^= h >> 33;
    return (double)(h >> 11) / 9007199254740992.0;
}

int px_ab_split_to_secondary(px_conn *c, const fd_command *cmd, int argc, resp_arg *argv) {
    double u;
    if (px_cfg.ab_split_by == PX_AB_BY_CLIENT) {
        u = unit_hash(&c->id, sizeof c->id);
    } else {
        if (!cmd || cmd->first_key <= 0 || cmd->first_key >= argc) return 0;   /* keyless: primary */
        u = unit_hash(argv[cmd->first_key].ptr, argv[cmd->first_key].len);
    }
    if (u >= px_cfg.ab_split_fraction) return 0;
    ab.split_secondary++;
    return 1;
}

/* --------------------------------------------------------------- mirror */

/* Printable form: bytes outside 0x20..0x7e as \xHH, arguments quoted when
 * they contain blanks or quotes; at most max bytes (then "..."). */
static size_t printable(char *out, size_t max, const char *s, size_t n, int quote) {
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

px_ab_pair *px_ab_begin(fd_command *cmd, int argc, resp_arg *argv) {
    px_backend *sec = px_srv.secondary;
    if (px_cfg.ab_mode != PX_AB_MIRROR || !sec || !cmd) return NULL;
    if ((cmd->flags & FD_CMD_WRITE) && !px_cfg.ab_mirror_writes) return NULL;
    if (sec->b.ops->async && (long long)ab.queued >= px_cfg.ab_mirror_queue) { ab.dropped++; return NULL; }
    px_ab_pair *p = calloc(1, sizeof *p);
    char *text = malloc(AB_TEXT_MAX + 8);
    if (!p || !text) { free(p); free(text); ab.dropped++; return NULL; }
    if (sec->b.ops->async) { p->queued = 1; ab.queued++; }
    size_t o = 0;
    for (int i = 0; i < argc && o + 8 < AB_TEXT_MAX; i++) {
        if (i) text[o++] = ' ';
        o += printable(text + o, AB_TEXT_MAX - o, argv[i].ptr, argv[i].len, 1);
    }
    text[o] = '\0';
    p->cmd = cmd;
    p->text = text;
    ab.mirrored++;
    return p;
}

typedef struct span { const char *p; size_t n; } span;

static int span_cmp(const void *a, const void *b) {
    const span *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->p, y->p, n);
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* Split an aggregate reply into its top-level elements (pairs of elements
 * when `pairs`), sorted. Returns the count, or -1 when the reply is not an
 * aggregate or cannot be split (then it is compared as bytes). */
static long long sorted_elements(const char *r, size_t len, int pairs, span **out) {
    if (len < 4 || (r[0] != '*' && r[0] != '%' && r[0] != '~')) return -1;
    const char *nl = memchr(r, '\n', len);
    if (!nl) return -1;
    long long n = strtoll(r + 1, NULL, 10);
    if (n < 0) return -1;
    if (r[0] == '%') pairs = 1, n *= 2;                 /* a RESP3 map: key, value, ... */
    if (pairs && n % 2) return -1;
    long long m = pairs ? n / 2 : n;
    span *v = calloc((size_t)(m ? m : 1), sizeof *v);
    if (!v) return -1;
    size_t pos = (size_t)(nl - r) + 1;
    for (long long i = 0; i < n; i++) {
        resp_scanner sc;
        resp_scanner_init(&sc);
        long long l = resp_scan_reply(&sc, r + pos, len - pos);
        if (l <= 0) { free(v); return -1; }
        if (pairs && (i & 1)) v[i / 2].n += (size_t)l;
        else v[pairs ? i / 2 : i] = (span){r + pos, (size_t)l};
        pos += (size_t)l;
    }
    qsort(v, (size_t)m, sizeof *v, span_cmp);
    *out = v;
    return m;
}

static int replies_equal(const fd_command *cmd, const char *a, size_t al, const char *b, size_t bl) {
    if (al == bl && !memcmp(a, b, al)) return 1;
    if (!(cmd->flags & FD_CMD_UNORDERED)) return 0;
    span *x = NULL, *y = NULL;
    int pairs = (cmd->flags & FD_CMD_PAIRS) != 0;
    long long nx = sorted_elements(a, al, pairs, &x), ny = sorted_elements(b, bl, pairs, &y);
    int eq = nx >= 0 && nx == ny && a[0] == b[0];
    for (long long i = 0; eq && i < nx; i++) eq = span_cmp(&x[i], &y[i]) == 0;
    free(x);
    free(y);
    return eq;
}

static void log_mismatch(const ab_sample *s) {
    if (!px_cfg.ab_log_file[0]) return;
    if (!ab.log || !ab.log_name || strcmp(ab.log_name, px_cfg.ab_log_file)) {
        if (ab.log) fclose(ab.log);
        free(ab.log_name);
        ab.log = fopen(px_cfg.ab_log_file, "a");
        ab.log_name = strdup(px_cfg.ab_log_file);
        if (!ab.log) { px_log(PX_LOG_WARNING, "ab-log-file %s: cannot open", px_cfg.ab_log_file); return; }
    }
    char a[AB_TEXT_MAX + 8], b[AB_TEXT_MAX + 8];
    size_t al = printable(a, AB_TEXT_MAX, s->rep[0], s->len[0], 0);
    size_t bl = printable(b, AB_TEXT_MAX, s->rep[1], s->len[1], 0);
    fprintf(ab.log, "%lld mismatch: %s\n  %s: %.*s\n  %s: %.*s\n", s->ms, s->text,
            px_srv.primary ? px_srv.primary->own.be.backend : "primary", (int)al, a,
            px_srv.secondary ? px_srv.secondary->own.be.backend : "secondary", (int)bl, b);
    fflush(ab.log);
}

static void sample_free(ab_sample *s) {
    free(s->text);
    free(s->rep[0]);
    free(s->rep[1]);
    memset(s, 0, sizeof *s);
}

static void keep_sample(px_ab_pair *p) {
    ab_sample *s = &ab.samples[ab.next_sample];
    sample_free(s);
    struct timeval tv;
    gettimeofday(&tv, NULL);
    s->ms = (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
    s->text = p->text;
    p->text = NULL;
    for (int i = 0; i < 2; i++) {
        size_t n = p->len[i] < AB_TEXT_MAX ? p->len[i] : AB_TEXT_MAX;
        s->rep[i] = p->rep[i];
        s->len[i] = n;
        p->rep[i] = NULL;
    }
    ab.next_sample = (ab.next_sample + 1) % AB_SAMPLES;
    if (ab.nsamples < AB_SAMPLES) ab.nsamples++;
    log_mismatch(s);
}

void px_ab_record(px_ab_pair *p, int side, const char *reply, size_t len, int failed) {
    if (!p) return;
    if (side == 1 && p->queued) { p->queued = 0; ab.queued--; }
    p->have[side] = 1;
    p->failed[side] = failed;
    if (!failed && (p->rep[side] = malloc(len ? len : 1)) != NULL) {
        memcpy(p->rep[side], reply, len);
        p->len[side] = len;
    }
    if (!p->have[0] || !p->have[1]) return;
    if (p->failed[1]) { ab.dropped++; ab.secondary_errors++; }
    else if (!p->failed[0] && p->rep[0] && p->rep[1] && !(p->cmd->flags & FD_CMD_NONDET)) {
        ab.compared++;
        p->cmd->ab_compared++;
        if (!replies_equal(p->cmd, p->rep[0], p->len[0], p->rep[1], p->len[1])) {
            ab.mismatches++;
            p->cmd->ab_mismatches++;
            keep_sample(p);
        }
    }
    free(p->text);
    free(p->rep[0]);
    free(p->rep[1]);
    free(p);
}

/* ---------------------------------------------------------------- reports */

static const char *const mode_names[] = {"off", "split", "mirror"};

void px_ab_info(resp_out *o) {
    char buf[256];
#define L(...) do { int n_ = snprintf(buf, sizeof buf, __VA_ARGS__); resp_out_raw(o, buf, (size_t)n_ < sizeof buf ? (size_t)n_ : sizeof buf - 1); } while (0)
    L("ab_mode:%s\r\n", mode_names[px_cfg.ab_mode]);
    L("ab_primary:%s\r\n", px_srv.primary ? px_srv.primary->own.be.backend : "");
    L("ab_secondary:%s\r\n", px_srv.secondary ? px_srv.secondary->own.be.backend : "");
    L("ab_split_by:%s\r\n", px_cfg.ab_split_by == PX_AB_BY_CLIENT ? "client" : "key");
    L("ab_split_fraction:%g\r\n", px_cfg.ab_split_fraction);
    L("ab_mirror_writes:%s\r\n", px_cfg.ab_mirror_writes ? "yes" : "no");
    L("ab_mirrored:%llu\r\n", (unsigned long long)ab.mirrored);
    L("ab_compared:%llu\r\n", (unsigned long long)ab.compared);
    L("ab_mismatches:%llu\r\n", (unsigned long long)ab.mismatches);
    L("ab_dropped:%llu\r\n", (unsigned long long)ab.dropped);
    L("ab_secondary_errors:%llu\r\n", (unsigned long long)ab.secondary_errors);
    L("ab_queue:%llu\r\n", (unsigned long long)ab.queued);
    L("ab_split_secondary:%llu\r\n", (unsigned long long)ab.split_secondary);
    size_t n;
    fd_command *t = fd_commands_table(&n);
    for (size_t i = 0; i < n; i++)
        if (t[i].ab_compared)
            L("ab_cmd_%s:compared=%llu,mismatches=%llu\r\n", t[i].name,
              (unsigned long long)t[i].ab_compared, (unsigned long long)t[i].ab_mismatches);
#undef L
}

/* ---------------------------------------------------------- FRONTDOOR REPORT */

/* One RESP reply as redis-cli shows it, on one line: "text", (nil),
 * (integer) 3, (error) ERR ..., [a, b] for aggregates. Returns bytes read
 * from r (0 if malformed); appends at most max-1 bytes to out. */
static size_t reply_text(const char *r, size_t len, char *out, size_t max, size_t *o) {
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
        size_t bl = printable(buf, sizeof buf - 2, r + hl, (size_t)n, 0);
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
            size_t used = reply_text(r + pos, len - pos, out, max, o);
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

static void report_reply(resp_out *t, const char *who, const char *r, size_t len) {
    char line[AB_TEXT_MAX * 2 + 64];
    size_t o = (size_t)snprintf(line, sizeof line, "    %-20s ", who);
    if (!r || !reply_text(r, len, line, sizeof line - 2, &o)) o += (size_t)snprintf(line + o, sizeof line - o, "(truncated)");
    if (o > sizeof line - 2) o = sizeof line - 2;
    line[o++] = '\n';
    resp_out_raw(t, line, o);
}

static void report_backend(resp_out *t, const char *label, const px_backend *be) {
    char line[512];
    const px_hist *l = &be->latency, *w = &be->wait;
    double fd = px_backend_frontdoor_us(be);
    int n = snprintf(line, sizeof line, "%-10s %-9s %10llu %8llu %9.1f %9.1f %9.1f %9.1f %9.1f %9.2f\n", label, be->b.ops->name,
                     (unsigned long long)be->calls, (unsigned long long)be->errors,
                     px_hist_quantile(l, 0.5) / 1e3, px_hist_quantile(l, 0.99) / 1e3, px_hist_quantile(l, 0.999) / 1e3,
                     px_hist_quantile(w, 0.5) / 1e3, px_hist_quantile(w, 0.99) / 1e3, fd);
    resp_out_raw(t, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* FRONTDOOR REPORT: the A/B state and the backends' latencies as a text a
 * person reads (redis-cli FRONTDOOR REPORT). */
static void report(px_conn *c) {
    resp_out t;
    resp_out_init(&t, 2);
    char line[1024];
#define P(...) do { int n_ = snprintf(line, sizeof line, __VA_ARGS__); resp_out_raw(&t, line, (size_t)n_ < sizeof line ? (size_t)n_ : sizeof line - 1); } while (0)
    if (px_cfg.ab_mode == PX_AB_MIRROR) P("A/B mode: mirror (%s mirrored; queue %llu of %lld)\n", px_cfg.ab_mirror_writes ? "reads and writes" : "reads only", (unsigned long long)ab.queued, px_cfg.ab_mirror_queue);
    else if (px_cfg.ab_mode == PX_AB_SPLIT) P("A/B mode: split by %s, %.1f%% to the secondary\n", px_cfg.ab_split_by == PX_AB_BY_CLIENT ? "client" : "key", px_cfg.ab_split_fraction * 100);
    else P("A/B mode: off\n");
    P("backend swaps: %llu\n\n", (unsigned long long)px_srv.switches);
    P("latency in microseconds: total = from the hand-over to the backend until the reply is ready;\n"
      "wait = waiting on the backend (an embedded store: its own work); frontdoor = total - wait, per call\n");
    P("%-10s %-9s %10s %8s %9s %9s %9s %9s %9s %9s\n", "role", "backend", "calls", "errors", "p50", "p99", "p99.9", "wait p50", "wait p99", "frontdoor");
    if (px_srv.primary) report_backend(&t, "primary", px_srv.primary);
    if (px_srv.secondary) report_backend(&t, "secondary", px_srv.secondary);
    for (px_backend *d = px_srv.draining; d; d = d->next) report_backend(&t, "draining", d);
    if (px_cfg.ab_mode == PX_AB_SPLIT) P("\nsent to the secondary: %llu\n", (unsigned long long)ab.split_secondary);
    P("\nmirrored %llu, compared %llu, mismatches %llu, dropped %llu (secondary failed %llu)\n",
      (unsigned long long)ab.mirrored, (unsigned long long)ab.compared, (unsigned long long)ab.mismatches,
      (unsigned long long)ab.dropped, (unsigned long long)ab.secondary_errors);
    size_t n;
    fd_command *tab = fd_commands_table(&n);
    int any = 0;
    for (size_t i = 0; i < n; i++)
        if (tab[i].ab_mismatches) {
            if (!any++) P("mismatches by command:\n");
            P("  %-16s %llu of %llu compared\n", tab[i].name, (unsigned long long)tab[i].ab_mismatches, (unsigned long long)tab[i].ab_compared);
        }
    if (ab.nsamples) P("latest mismatches, newest first:\n");
    const char *pn = px_srv.primary ? px_srv.primary->b.ops->name : "primary";
    const char *sn = px_srv.secondary ? px_srv.secondary->b.ops->name : "secondary";
    char who[2][48];
    snprintf(who[0], sizeof who[0], "primary %s:", pn);
    snprintf(who[1], sizeof who[1], "secondary %s:", sn);
    for (unsigned k = 0; k < ab.nsamples; k++) {
        const ab_sample *s = &ab.samples[(ab.next_sample + AB_SAMPLES - 1 - k) % AB_SAMPLES];
        P("  %s\n", s->text);
        report_reply(&t, who[0], s->rep[0], s->len[0]);
        report_reply(&t, who[1], s->rep[1], s->len[1]);
    }
#undef P
    resp_add_verbatim(&c->out, "txt", t.data ? t.data : "", t.len);
    resp_out_free(&t);
}

static void ab_reset(void) {
    for (unsigned i = 0; i < AB_SAMPLES; i++) sample_free(&ab.samples[i]);
    ab.next_sample = ab.nsamples = 0;
    ab.mirrored = ab.compared = ab.mismatches = ab.dropped = ab.split_secondary = ab.secondary_errors = 0;
    size_t n;
    fd_command *t = fd_commands_table(&n);
    for (size_t i = 0; i < n; i++) t[i].ab_compared = t[i].ab_mismatches = 0;
}

/* FRONTDOOR AB [RESET] | FRONTDOOR REPORT | FRONTDOOR HELP */
void px_cmd_frontdoor(px_conn *c, int argc, resp_arg *argv) {
    resp_out *o = &c->out;
    if (resp_arg_is(&argv[1], "AB") && argc == 2) {
        /* the latest mismatches, newest first: [unix-ms, command, primary reply, secondary reply] */
        resp_add_array(o, ab.nsamples);
        for (unsigned k = 0; k < ab.nsamples; k++) {
            const ab_sample *s = &ab.samples[(ab.next_sample + AB_SAMPLES - 1 - k) % AB_SAMPLES];
            resp_add_array(o, 4);
            resp_add_int(o, s->ms);
            resp_add_bulk_cstr(o, s->text);
            resp_add_bulk(o, s->rep[0] ? s->rep[0] : "", s->len[0]);
            resp_add_bulk(o, s->rep[1] ? s->rep[1] : "", s->len[1]);
        }
    } else if (resp_arg_is(&argv[1], "AB") && argc == 3 && resp_arg_is(&argv[2], "RESET")) {
        ab_reset();
        resp_add_simple(o, "OK", 2);
    } else if (resp_arg_is(&argv[1], "REPORT") && argc == 2) {
        report(c);
    } else if (resp_arg_is(&argv[1], "CAPTURE")) {               /* capture (issue 17) */
        px_capture_cmd(c, argc, argv);
    } else if (resp_arg_is(&argv[1], "HELP") && argc == 2) {
        static const char *const help[] = {
            "AB",
            "    The latest A/B mismatches, newest first: [unix-ms, command, primary reply, secondary reply].",
            "AB RESET",
            "    Forget the mismatches and zero the A/B counters (INFO ab).",
            "CAPTURE START [<path>]|STOP|STATUS",
            "    Record every command clients send into <path> for fdload --replay (capture-* directives).",
            "REPORT",
            "    A readable report: A/B mode, each backend's calls, errors and latency percentiles, mismatches with both replies.",
            "HELP",
            "    Print this help.",
            NULL,
        };
        px_reply_help(c, "FRONTDOOR", help);
    } else {
        resp_add_errorf(o, "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try FRONTDOOR HELP.",
                        (int)(argv[1].len > 64 ? 64 : argv[1].len), argv[1].ptr);
    }
}
