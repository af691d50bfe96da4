/* ab_frontdoor.c — the FRONTDOOR command (builtin.h px_cmd_frontdoor):
 * AB [RACES|KEY|CALIBRATE|RESET], REPORT [JSON] (the text report here, the
 * JSON in ab_report.c), MIGRATE and CAPTURE (handed to their modules), HELP. */
#include "ab.h"
#include "ab_int.h"
#include "ab_report.h" /* issue 18: verdict, REPORT JSON */
#include "capture.h" /* capture (issue 17) */
#include "backends.h"
#include "commands.h"
#include "config.h"
#include "migrate.h" /* issue 30 */

#include <stdio.h>
#include <string.h>

static void report_reply(resp_out *t, const char *who, const char *r, size_t len) {
    char line[AB_TEXT_MAX * 2 + 64];
    size_t o = (size_t)snprintf(line, sizeof line, "    %-20s ", who);
    if (!r || !ab_reply_text(r, len, line, sizeof line - 2, &o)) o += (size_t)snprintf(line + o, sizeof line - o, "(truncated)");
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
    px_backends_refresh();                   /* the backends' counters from their records (backends.h) */
    char line[AB_DIFF_MAX + 64];
#define P(...) do { int n_ = snprintf(line, sizeof line, __VA_ARGS__); resp_out_raw(&t, line, (size_t)n_ < sizeof line ? (size_t)n_ : sizeof line - 1); } while (0)
    char verdict[512];
    px_ab_verdict(verdict, sizeof verdict);  /* issue 18: the one-line verdict (ab_report.c) */
    if (verdict[0]) P("verdict: %s\n\n", verdict);
    if (px_cfg.ab_mode == PX_AB_MIRROR) P("A/B mode: mirror (%s mirrored%s; queue %llu of %lld)\n",
        px_cfg.ab_mirror_writes && px_cfg.ab_mirror_reads ? "reads and writes" : px_cfg.ab_mirror_writes ? "writes only" : "reads only",
        ab.stopped_at_ms ? ", STOPPED after ab-stop-after divergences" : "", (unsigned long long)ab.queued, px_cfg.ab_mirror_queue);
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
    P("\nmirrored %llu, compared %llu, identical %llu, divergences %llu, races %llu, noisy %llu, dropped %llu (secondary failed %llu)\n",
      (unsigned long long)ab.mirrored, (unsigned long long)ab.compared,
      (unsigned long long)(ab.compared - ab.divergences - ab.races - ab.noisy), (unsigned long long)ab.divergences,
      (unsigned long long)ab.races, (unsigned long long)ab.noisy, (unsigned long long)ab.dropped,
      (unsigned long long)ab.secondary_errors);
    if (ab.units) P("(of them %llu transactions mirrored as one unit each)\n", (unsigned long long)ab.units);
    P("(a race: the replies differ on a key another client wrote while the command was in flight,\n"
      " so the two stores may have applied the writes in different orders; not a divergence)\n");
    size_t n;
    fd_command *tab = fd_commands_table(&n);
    int any = 0;
    for (size_t i = 0; i < n; i++)
        if (tab[i].ab_mismatches || ab.races_by_cmd[tab[i].id]) {
            if (!any++) P("by command:        divergences      races   compared\n");
            P("  %-16s %11llu %10llu %10llu\n", tab[i].name, (unsigned long long)tab[i].ab_mismatches,
              (unsigned long long)ab.races_by_cmd[tab[i].id], (unsigned long long)tab[i].ab_compared);
        }
    any = 0;
    for (size_t i = 0; i < n; i++)
        if (ab.calib_compared[tab[i].id]) {
            if (!any++) P("noise measured by calibration (reads asked of the primary twice%s):\n"
                          "  command           calibrated      noise      rate  noisy later\n",
                          ab.calib_left ? ", still running" : "");
            P("  %-16s %11llu %10llu %8.1f%% %6s %llu\n", tab[i].name, (unsigned long long)ab.calib_compared[tab[i].id],
              (unsigned long long)ab.calib_noise[tab[i].id],
              100.0 * (double)ab.calib_noise[tab[i].id] / (double)ab.calib_compared[tab[i].id],
              ab_is_noisy(&tab[i]) ? "yes" : "no", (unsigned long long)ab.noisy_by_cmd[tab[i].id]);
        }
    if (!any && ab.calib_left) P("calibration: %lld reads still to ask of the primary twice\n", ab.calib_left);
    const char *pn = px_srv.primary ? px_srv.primary->b.ops->name : "primary";
    const char *sn = px_srv.secondary ? px_srv.secondary->b.ops->name : "secondary";
    char who[2][48];
    snprintf(who[0], sizeof who[0], "primary %s:", pn);
    snprintf(who[1], sizeof who[1], "secondary %s:", sn);
    if (ab.nsamples) P("latest divergences, newest first:\n");
    for (unsigned k = 0; k < ab.nsamples; k++) {
        const ab_sample *s = &ab.samples[(ab.next_sample + AB_SAMPLES - 1 - k) % AB_SAMPLES];
        P("  %s\n", s->text);
        report_reply(&t, who[0], s->rep[0], s->len[0]);
        report_reply(&t, who[1], s->rep[1], s->len[1]);
        if (s->diff) P("    %-20s %s\n", "key now:", s->diff);
    }
    if (ab.nraces) P("latest races, newest first:\n");
    for (unsigned k = 0; k < ab.nraces && k < 3; k++) {
        const ab_sample *s = &ab.race_samples[(ab.next_race + AB_RACES - 1 - k) % AB_RACES];
        P("  %s\n", s->text);
        report_reply(&t, who[0], s->rep[0], s->len[0]);
        report_reply(&t, who[1], s->rep[1], s->len[1]);
    }
#undef P
    resp_add_verbatim(&c->out, "txt", t.data ? t.data : "", t.len);
    resp_out_free(&t);
}

static void ab_reset(void) {
    for (unsigned i = 0; i < AB_SAMPLES; i++) ab_sample_free(&ab.samples[i]);
    for (unsigned i = 0; i < AB_RACES; i++) ab_sample_free(&ab.race_samples[i]);
    ab.next_sample = ab.nsamples = ab.next_race = ab.nraces = 0;
    ab.mirrored = ab.compared = ab.divergences = ab.races = ab.dropped = ab.split_secondary = ab.secondary_errors = 0;
    ab.sampled_out = ab.stopped_at_ms = ab.noisy = ab.deferred = ab.units = ab.noscript_resent = 0;
    memset(ab.races_by_cmd, 0, sizeof ab.races_by_cmd);
    memset(ab.noisy_by_cmd, 0, sizeof ab.noisy_by_cmd);
    size_t n;
    fd_command *t = fd_commands_table(&n);
    for (size_t i = 0; i < n; i++) t[i].ab_compared = t[i].ab_mismatches = 0;
}

static void add_samples(resp_out *o, const ab_sample *ring, unsigned count, unsigned next, unsigned size) {
    resp_add_array(o, count);
    for (unsigned k = 0; k < count; k++) {
        const ab_sample *s = &ring[(next + size - 1 - k) % size];
        resp_add_array(o, 5);
        resp_add_int(o, s->ms);
        resp_add_bulk_cstr(o, s->text);
        resp_add_bulk(o, s->rep[0] ? s->rep[0] : "", s->len[0]);
        resp_add_bulk(o, s->rep[1] ? s->rep[1] : "", s->len[1]);
        if (s->diff) resp_add_bulk_cstr(o, s->diff);
        else resp_add_null(o);
    }
}

/* FRONTDOOR AB KEY k: the key's state on both sides and what differs. */
static void ab_key_cmd(px_conn *c, resp_arg *key) {
    if (px_cfg.ab_mode == PX_AB_OFF || !px_srv.secondary) { resp_add_error(&c->out, "ERR FRONTDOOR AB KEY needs an A/B secondary (ab-mode mirror or split)"); return; }
    ab_diff_key_cmd(c, key);
}

/* FRONTDOOR AB [RESET|RACES|KEY k] | FRONTDOOR REPORT | FRONTDOOR HELP */
void px_cmd_frontdoor(px_conn *c, int argc, resp_arg *argv) {
    resp_out *o = &c->out;
    if (resp_arg_is(&argv[1], "AB") && argc == 2) {
        add_samples(o, ab.samples, ab.nsamples, ab.next_sample, AB_SAMPLES);
    } else if (resp_arg_is(&argv[1], "AB") && argc == 3 && resp_arg_is(&argv[2], "RACES")) {
        add_samples(o, ab.race_samples, ab.nraces, ab.next_race, AB_RACES);
    } else if (resp_arg_is(&argv[1], "AB") && argc == 4 && resp_arg_is(&argv[2], "KEY")) {
        ab_key_cmd(c, &argv[3]);
    } else if (resp_arg_is(&argv[1], "AB") && argc == 4 && resp_arg_is(&argv[2], "CALIBRATE")) {
        long long n;
        if (resp_str2ll(argv[3].ptr, argv[3].len, &n) || n < 0) { resp_add_error(o, "ERR value is out of range, must be positive"); return; }
        if (px_cfg.ab_mode != PX_AB_MIRROR || !px_srv.secondary) { resp_add_error(o, "ERR FRONTDOOR AB CALIBRATE needs ab-mode mirror"); return; }
        if (n > 0) {                       /* a new measurement; 0 ends the running one, keeping it */
            ab.calib_done = 0;
            memset(ab.calib_compared, 0, sizeof ab.calib_compared);
            memset(ab.calib_noise, 0, sizeof ab.calib_noise);
        }
        ab.calib_left = n;
        resp_add_simple(o, "OK", 2);
    } else if (resp_arg_is(&argv[1], "AB") && argc == 3 && resp_arg_is(&argv[2], "RESET")) {
        ab_reset();
        resp_add_simple(o, "OK", 2);
    } else if (resp_arg_is(&argv[1], "REPORT") && argc == 2) {
        report(c);
    } else if (resp_arg_is(&argv[1], "REPORT") && argc == 3 && resp_arg_is(&argv[2], "JSON")) {
        px_ab_report_json(c);                                    /* issue 18 (ab_report.c) */
    } else if (resp_arg_is(&argv[1], "MIGRATE")) {               /* issue 30 (migrate.c) */
        px_migrate_cmd(c, argc, argv);
    } else if (resp_arg_is(&argv[1], "CAPTURE")) {               /* capture (issue 17) */
        px_capture_cmd(c, argc, argv);
    } else if (resp_arg_is(&argv[1], "HELP") && argc == 2) {
        static const char *const help[] = {
            "AB",
            "    The latest A/B divergences, newest first: [unix-ms, command, primary reply, secondary reply, key diff or nil].",
            "AB RACES",
            "    The latest races (replies that differ on a key another client wrote meanwhile), same shape.",
            "AB KEY <key>",
            "    The key's state on the primary and on the secondary, and what differs: [primary, text, secondary, text, diff, text].",
            "AB CALIBRATE <n>",
            "    Ask the next <n> mirrored reads of the primary twice (not of the secondary) and count the mismatches as noise per command (a new measurement; 0 ends the running one and keeps it); afterwards a command noisier than 1% has its mismatches counted as noisy, not as divergences.",
            "AB RESET",
            "    Forget divergences and races, zero the A/B counters (INFO ab), resume a mirror stopped by ab-stop-after.",
            "MIGRATE START [RATE <keys/s>] [BATCH <n>]|STATUS|PAUSE|RESUME|RATE <keys/s>|ABORT|VERIFY [STATUS]|CUTOVER [FORCE]|HELP",
            "    Online migration to the A/B secondary: backfill every key while the mirror applies new writes, verify, cut over (docs/migration.md).",
            "CAPTURE START [<path>]|STOP|STATUS",
            "    Record every command clients send into <path> for fdload --replay (capture-* directives).",
            "REPORT",
            "    A readable report: A/B mode, each backend's calls, errors and latency percentiles, divergences with both replies and the key's diff, races.",
            "REPORT JSON",
            "    The same as one JSON document, with latency per command per side (bench/ab_report.py makes an HTML page of it).",
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
