/* ab_report.c — the A/B verdict line and FRONTDOOR REPORT JSON (see
 * ab_report.h). */
#include "ab_report.h"
#include "ab.h"
#include "backends.h"
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* 1234567 -> "1,234,567" */
static const char *grouped(uint64_t v, char *buf, size_t max) {
    char raw[32];
    int n = snprintf(raw, sizeof raw, "%llu", (unsigned long long)v);
    size_t o = 0;
    for (int i = 0; i < n && o + 2 < max; i++) {
        if (i && (n - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = raw[i];
    }
    buf[o] = 0;
    return buf;
}

/* One command's latency on each side (records of backends.h). */
typedef struct side_lat { uint64_t calls, errors; double p50, p99, p999; } side_lat;

static void side_of(const px_backend *be, int id, side_lat *s) {
    static px_hist h;                          /* 2.7 KB: not on the stack */
    memset(s, 0, sizeof *s);
    if (!be) return;
    px_backend_cmd(be, id, &h, &s->errors);
    s->calls = h.count;
    s->p50 = (double)px_hist_quantile(&h, 0.5) / 1e3;
    s->p99 = (double)px_hist_quantile(&h, 0.99) / 1e3;
    s->p999 = (double)px_hist_quantile(&h, 0.999) / 1e3;
}

/* The command whose secondary p99 / primary p99 is the largest; -1 if no
 * command ran on both sides. */
static int worst_p99(double *ratio) {
    int best = -1;
    for (int pass = 0; pass < 2 && best < 0; pass++) {
        uint64_t min = pass ? 1 : PX_AB_VERDICT_MIN_CALLS;
        for (int id = 0; id < FD_CMD_COUNT; id++) {
            side_lat a, b;
            side_of(px_srv.primary, id, &a);
            if (a.calls < min) continue;
            side_of(px_srv.secondary, id, &b);
            if (b.calls < min || a.p99 <= 0 || b.p99 <= 0) continue;
            double r = b.p99 / a.p99;
            if (best < 0 || r > *ratio) { best = id; *ratio = r; }
        }
    }
    return best;
}

static void upper(char *dst, const char *src, size_t max) {
    size_t i = 0;
    for (; src[i] && i + 1 < max; i++) dst[i] = (char)(src[i] >= 'a' && src[i] <= 'z' ? src[i] - 32 : src[i]);
    dst[i] = 0;
}

void px_ab_verdict(char *out, size_t max) {
    out[0] = 0;
    if (px_cfg.ab_mode == PX_AB_OFF || !px_srv.secondary || !px_srv.primary) return;
    px_ab_counts a;
    px_ab_counters(&a);
    const char *sn = px_srv.secondary->b.ops->name;
    size_t o = 0;
#define ADD(...) do { int k_ = snprintf(out + o, o < max ? max - o : 0, __VA_ARGS__); if (k_ > 0) o += (size_t)k_; if (o >= max) o = max - 1; } while (0)
    char g1[32], g2[32], g3[32];
    if (px_cfg.ab_mode == PX_AB_MIRROR) {
        if (!a.compared) ADD("%s: nothing compared yet", sn);
        else {
            uint64_t same = a.compared - a.divergences - a.races;
            /* floor to 2 decimals: 99.999 % reads 99.99 %, never 100 % with a difference */
            double pct = (double)(same * 10000 / a.compared) / 100.0;
            if (same == a.compared) ADD("%s answered 100 %% identically (%s compared)", sn, grouped(a.compared, g1, sizeof g1));
            else ADD("%s answered %.2f %% identically (%s divergence%s, %s race%s of %s compared)", sn, pct,
                     grouped(a.divergences, g1, sizeof g1), a.divergences == 1 ? "" : "s",
                     grouped(a.races, g2, sizeof g2), a.races == 1 ? "" : "s", grouped(a.compared, g3, sizeof g3));
        }
    } else {
        ADD("%s answered %s commands of the split", sn, grouped(a.split_secondary, g1, sizeof g1));
    }
    double r = 0;
    int id = worst_p99(&r);
    if (id >= 0) {
        char name[64];
        upper(name, fd_command_by_id(id)->name, sizeof name);
        if (r >= 1.0) ADD("; %.1f\xc3\x97 slower at p99 on %s", r, name);
        else ADD("; %.1f\xc3\x97 faster at p99 on every command (least on %s)", 1.0 / r, name);
    }
    if (a.dropped) ADD("; %s cop%s dropped", grouped(a.dropped, g1, sizeof g1), a.dropped == 1 ? "y" : "ies");
    if (a.stopped) ADD("; mirroring STOPPED (ab-stop-after)");
#undef ADD
}

/* ------------------------------------------------------------------ JSON */

static void raw(resp_out *o, const char *s) { resp_out_raw(o, s, strlen(s)); }

static void jf(resp_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void jf(resp_out *o, const char *fmt, ...) {
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0) resp_out_raw(o, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* A JSON string (NULL: null). Bytes >= 0x80 pass as they are (the texts are
 * printable ASCII but for the verdict's UTF-8 "×"). */
static void jstr(resp_out *o, const char *s) {
    if (!s) { raw(o, "null"); return; }
    resp_out_raw(o, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') { char e[2] = {'\\', (char)*p}; resp_out_raw(o, e, 2); }
        else if (*p < 0x20) jf(o, "\\u%04x", *p);
        else resp_out_raw(o, (const char *)p, 1);
    }
    resp_out_raw(o, "\"", 1);
}

static void jside(resp_out *o, const side_lat *s) {
    jf(o, "{\"calls\":%llu,\"errors\":%llu,\"p50_us\":%.3f,\"p99_us\":%.3f,\"p999_us\":%.3f}",
       (unsigned long long)s->calls, (unsigned long long)s->errors, s->p50, s->p99, s->p999);
}

static void jbackend(resp_out *o, const char *role, const px_backend *be, int *first) {
    if (!be) return;
    if (!*first) raw(o, ",");
    *first = 0;
    const px_hist *l = &be->latency, *w = &be->wait;
    raw(o, "{\"role\":");
    jstr(o, role);
    raw(o, ",\"backend\":");
    jstr(o, be->b.ops->name);
    jf(o, ",\"calls\":%llu,\"errors\":%llu,\"inflight\":%llu", (unsigned long long)be->calls,
       (unsigned long long)be->errors, (unsigned long long)be->inflight);
    jf(o, ",\"p50_us\":%.3f,\"p99_us\":%.3f,\"p999_us\":%.3f", px_hist_quantile(l, 0.5) / 1e3,
       px_hist_quantile(l, 0.99) / 1e3, px_hist_quantile(l, 0.999) / 1e3);
    jf(o, ",\"wait_p50_us\":%.3f,\"wait_p99_us\":%.3f,\"frontdoor_us_per_call\":%.3f}", px_hist_quantile(w, 0.5) / 1e3,
       px_hist_quantile(w, 0.99) / 1e3, px_backend_frontdoor_us(be));
}

static void jsamples(resp_out *o, int races) {
    raw(o, "[");
    px_ab_sample_view v;
    static char text[2][2048];
    for (unsigned k = 0; px_ab_sample_at(races, k, &v); k++) {
        if (k) raw(o, ",");
        jf(o, "{\"ms\":%lld,\"command\":", v.ms);
        jstr(o, v.text);
        for (int s = 0; s < 2; s++) {
            px_ab_reply_text(v.rep[s], v.len[s], text[s], sizeof text[s]);
            raw(o, s ? ",\"secondary\":" : ",\"primary\":");
            jstr(o, text[s]);
        }
        raw(o, ",\"diff\":");
        jstr(o, v.diff);
        raw(o, "}");
    }
    raw(o, "]");
}

void px_ab_report_json(px_conn *c) {
    static const char *const modes[] = {"off", "split", "mirror"};
    resp_out o;
    resp_out_init(&o, 2);
    px_backends_refresh();
    px_ab_counts a;
    px_ab_counters(&a);
    char verdict[512];
    px_ab_verdict(verdict, sizeof verdict);
    raw(&o, "{\"version\":1,\"mode\":");
    jstr(&o, modes[px_cfg.ab_mode]);
    raw(&o, ",\"primary\":");
    jstr(&o, px_srv.primary ? px_srv.primary->b.ops->name : NULL);
    raw(&o, ",\"secondary\":");
    jstr(&o, px_srv.secondary ? px_srv.secondary->b.ops->name : NULL);
    raw(&o, ",\"verdict\":");
    jstr(&o, verdict);
    jf(&o, ",\"totals\":{\"mirrored\":%llu,\"compared\":%llu,\"identical\":%llu,\"divergences\":%llu,\"races\":%llu,",
       (unsigned long long)a.mirrored, (unsigned long long)a.compared,
       (unsigned long long)(a.compared - a.divergences - a.races), (unsigned long long)a.divergences,
       (unsigned long long)a.races);
    jf(&o, "\"dropped\":%llu,\"secondary_errors\":%llu,\"sampled_out\":%llu,\"split_secondary\":%llu,\"queue\":%llu,\"stopped\":%s}",
       (unsigned long long)a.dropped, (unsigned long long)a.secondary_errors, (unsigned long long)a.sampled_out,
       (unsigned long long)a.split_secondary, (unsigned long long)a.queued, a.stopped ? "true" : "false");
    raw(&o, ",\"backends\":[");
    int first = 1;
    jbackend(&o, "primary", px_srv.primary, &first);
    jbackend(&o, "secondary", px_srv.secondary, &first);
    for (px_backend *d = px_srv.draining; d; d = d->next) jbackend(&o, "draining", d, &first);
    raw(&o, "],\"commands\":[");
    first = 1;
    for (int id = 0; id < FD_CMD_COUNT; id++) {
        fd_command *cmd = fd_command_by_id(id);
        side_lat p, s;
        side_of(px_srv.primary, id, &p);
        side_of(px_srv.secondary, id, &s);
        uint64_t races = px_ab_races_of(id);
        if (!p.calls && !s.calls && !cmd->ab_compared) continue;
        if (!first) raw(&o, ",");
        first = 0;
        raw(&o, "{\"name\":");
        jstr(&o, cmd->name);
        jf(&o, ",\"compared\":%llu,\"identical\":%llu,\"divergences\":%llu,\"races\":%llu,\"primary\":",
           (unsigned long long)cmd->ab_compared, (unsigned long long)(cmd->ab_compared - cmd->ab_mismatches - races),
           (unsigned long long)cmd->ab_mismatches, (unsigned long long)races);
        jside(&o, &p);
        raw(&o, ",\"secondary\":");
        jside(&o, &s);
        raw(&o, "}");
    }
    raw(&o, "],\"divergences\":");
    jsamples(&o, 0);
    raw(&o, ",\"races\":");
    jsamples(&o, 1);
    raw(&o, "}");
    resp_add_bulk(&c->out, o.data ? o.data : "", o.len);
    resp_out_free(&o);
}
