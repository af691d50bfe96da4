/* ab_samples.c — what the A/B layer keeps of its mismatches (ab_int.h):
 * divergence and race samples (bounded rings AB_SAMPLES, AB_RACES),
 * ab-log-file, INFO ab, the counters (px_ab_counters) and the read-only
 * views ab_report.h declares. */
#include "ab.h"
#include "ab_int.h"
#include "ab_report.h"
#include "backends.h"
#include "commands.h"
#include "config.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

/* ------------------------------------------------------ samples and logging */

void ab_sample_free(ab_sample *s) {
    free(s->text);
    free(s->rep[0]);
    free(s->rep[1]);
    free(s->diff);
    memset(s, 0, sizeof *s);
}

static const char *side_name(int side) {
    px_backend *be = side ? px_srv.secondary : px_srv.primary;
    return be ? be->own.be.backend : side ? "secondary" : "primary";
}

static void log_line(const char *kind, const ab_sample *s) {
    if (!px_cfg.ab_log_file[0]) return;
    if (!ab.log || !ab.log_name || strcmp(ab.log_name, px_cfg.ab_log_file)) {
        if (ab.log) fclose(ab.log);
        free(ab.log_name);
        ab.log = fopen(px_cfg.ab_log_file, "a");
        ab.log_name = strdup(px_cfg.ab_log_file);
        if (!ab.log) { px_log(PX_LOG_WARNING, "ab-log-file %s: cannot open", px_cfg.ab_log_file); return; }
    }
    fprintf(ab.log, "%lld %s: %s\n", s->ms, kind, s->text);
    for (int i = 0; i < 2; i++) {
        char line[AB_TEXT_MAX * 2];
        size_t o = 0;
        line[0] = 0;
        if (!s->rep[i] || !ab_reply_text(s->rep[i], s->len[i], line, sizeof line - 16, &o))
            snprintf(line + o, sizeof line - o, "%s(truncated)", o ? " ... " : "");
        fprintf(ab.log, "  %s %s: %s\n", i ? "secondary" : "primary", side_name(i), line);
    }
    if (s->diff) fprintf(ab.log, "  diff: %s\n", s->diff);
    fflush(ab.log);
}

/* Move p's command and replies into a sample (p keeps none of them). */
static void take_sample(ab_sample *s, px_ab_pair *p) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    s->ms = (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
    s->text = p->text;
    p->text = NULL;
    for (int i = 0; i < 2; i++) {
        s->rep[i] = p->rep[i];
        s->len[i] = p->len[i] < AB_TEXT_MAX ? p->len[i] : AB_TEXT_MAX;
        p->rep[i] = NULL;
    }
}

void ab_keep_divergence(ab_sample *src) {
    ab_sample *s = &ab.samples[ab.next_sample];
    ab_sample_free(s);
    *s = *src;
    memset(src, 0, sizeof *src);
    ab.next_sample = (ab.next_sample + 1) % AB_SAMPLES;
    if (ab.nsamples < AB_SAMPLES) ab.nsamples++;
    log_line("divergence", s);
}

/* Races come in bursts on hot keys: ab-log-file gets at most AB_RACE_LOG a
 * second, then one line counting the rest. */
#define AB_RACE_LOG 10
void ab_keep_race(px_ab_pair *p) {
    ab_sample *s = &ab.race_samples[ab.next_race];
    ab_sample_free(s);
    take_sample(s, p);
    ab.next_race = (ab.next_race + 1) % AB_RACES;
    if (ab.nraces < AB_RACES) ab.nraces++;
    long long sec = s->ms / 1000;
    if (sec != ab.race_log_sec) {
        if (ab.race_log_skipped && ab.log && px_cfg.ab_log_file[0]) {
            fprintf(ab.log, "%lld races: %llu more not logged in that second (INFO ab counts them all)\n",
                    ab.race_log_sec * 1000 + 999, (unsigned long long)ab.race_log_skipped);
        }
        ab.race_log_sec = sec;
        ab.race_log_n = 0;
        ab.race_log_skipped = 0;
    }
    if (ab.race_log_n++ < AB_RACE_LOG) log_line("race", s);
    else ab.race_log_skipped++;
}


void ab_divergence(px_ab_pair *p) {
    ab.divergences++;
    p->cmd->ab_mismatches++;
    if (px_cfg.ab_stop_after > 0 && ab.divergences >= (uint64_t)px_cfg.ab_stop_after && !ab.stopped_at_ms) {
        ab.stopped_at_ms = (uint64_t)px_now_ms();
        px_log(PX_LOG_WARNING, "A/B: %llu divergences (ab-stop-after): mirroring stopped; FRONTDOOR AB RESET resumes it",
               (unsigned long long)ab.divergences);
    }
    if (px_cfg.ab_mismatch_log == PX_AB_LOG_COUNT) return;
    ab_sample s = {0};
    take_sample(&s, p);
    if (px_cfg.ab_mismatch_log == PX_AB_LOG_DIFF && p->key && ab_diff_divergence(&s, p->key, p->keylen) == 0) {
        p->key = NULL;
        return;
    }
    ab_keep_divergence(&s);
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
    L("ab_mirror_reads:%s\r\n", px_cfg.ab_mirror_reads ? "yes" : "no");
    L("ab_mirror_sample:%g\r\n", px_cfg.ab_mirror_sample);
    L("ab_mirrored:%llu\r\n", (unsigned long long)ab.mirrored);
    L("ab_sampled_out:%llu\r\n", (unsigned long long)ab.sampled_out);
    L("ab_compared:%llu\r\n", (unsigned long long)ab.compared);
    L("ab_mismatches:%llu\r\n", (unsigned long long)(ab.divergences + ab.races));
    L("ab_divergences:%llu\r\n", (unsigned long long)ab.divergences);
    L("ab_races:%llu\r\n", (unsigned long long)ab.races);
    L("ab_stopped:%s\r\n", ab.stopped_at_ms ? "yes" : "no");
    L("ab_dropped:%llu\r\n", (unsigned long long)ab.dropped);
    L("ab_secondary_errors:%llu\r\n", (unsigned long long)ab.secondary_errors);
    L("ab_queue:%llu\r\n", (unsigned long long)ab.queued);
    L("ab_split_secondary:%llu\r\n", (unsigned long long)ab.split_secondary);
    L("ab_mirror_order:%s\r\n", px_cfg.ab_mirror_order == PX_AB_ORDER_PRIMARY ? "primary" : "dispatch");
    L("ab_deferred:%llu\r\n", (unsigned long long)ab.deferred);
    L("ab_units:%llu\r\n", (unsigned long long)ab.units);
    L("ab_noscript_resent:%llu\r\n", (unsigned long long)ab.noscript_resent);
    L("ab_noisy:%llu\r\n", (unsigned long long)ab.noisy);
    L("ab_calibrate_left:%lld\r\n", ab.calib_left);
    L("ab_calibrated:%llu\r\n", (unsigned long long)ab.calib_done);
    size_t n;
    fd_command *t = fd_commands_table(&n);
    for (size_t i = 0; i < n; i++)
        if (t[i].ab_compared || ab.noisy_by_cmd[t[i].id])
            L("ab_cmd_%s:compared=%llu,divergences=%llu,races=%llu,noisy=%llu\r\n", t[i].name,
              (unsigned long long)t[i].ab_compared, (unsigned long long)t[i].ab_mismatches,
              (unsigned long long)ab.races_by_cmd[t[i].id], (unsigned long long)ab.noisy_by_cmd[t[i].id]);
    for (size_t i = 0; i < n; i++)
        if (ab.calib_compared[t[i].id])
            L("ab_noise_%s:calibrated=%llu,noise=%llu,noisy=%s\r\n", t[i].name,
              (unsigned long long)ab.calib_compared[t[i].id], (unsigned long long)ab.calib_noise[t[i].id],
              ab_is_noisy(&t[i]) ? "yes" : "no");
#undef L
}

void px_ab_counters(px_ab_counts *o) {
    *o = (px_ab_counts){ab.mirrored, ab.compared, ab.divergences, ab.races, ab.dropped, ab.secondary_errors,
                        ab.queued, ab.split_secondary, ab.sampled_out, ab.stopped_at_ms != 0,
                        ab.noisy, ab.deferred, ab.units, ab.calib_left};
}

/* Read-only views for proxy/ab_report.c (ab_report.h). */
int px_ab_sample_at(int races, unsigned k, px_ab_sample_view *v) {
    unsigned n = races ? ab.nraces : ab.nsamples, size = races ? AB_RACES : AB_SAMPLES;
    if (k >= n) return 0;
    const ab_sample *s = races ? &ab.race_samples[(ab.next_race + size - 1 - k) % size]
                               : &ab.samples[(ab.next_sample + size - 1 - k) % size];
    *v = (px_ab_sample_view){s->ms, s->text, {s->rep[0], s->rep[1]}, {s->len[0], s->len[1]}, s->diff};
    return 1;
}
uint64_t px_ab_races_of(int id) { return ab.races_by_cmd[id]; }
void px_ab_reply_text(const char *r, size_t len, char *out, size_t max) {
    size_t o = 0;
    out[0] = 0;
    if (!r || !ab_reply_text(r, len, out, max, &o)) snprintf(out, max, "(truncated)");
}
