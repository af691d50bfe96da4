/* info.c — INFO: server, clients, memory, persistence, stats, backend,
 * commandstats, keyspace. Field names are Redis's where Redis has them, so
 * tools that read INFO keep working. commandstats/latencystats are per
 * command of the table: Redis 7.0's per-subcommand lines (`cmdstat_config|get`)
 * have no counterpart, the table has no subcommand rows (`cmdstat_config`). */
#include "builtin.h"
#include "blocking.h"
#include "pubsub.h"
#include "ab.h"
#include "migrate.h"
#include "backends.h"
#include "config.h"
#include "metrics.h"
#include "slowlog.h"
#include "tracking.h"

#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

static void line(resp_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(resp_out *o, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    size_t n = resp_vformat_line(buf, sizeof buf, fmt, ap);
    va_end(ap);
    resp_out_raw(o, buf, n);
}

static size_t rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, rss = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
        fclose(f);
    }
    return (size_t)rss * (size_t)sysconf(_SC_PAGESIZE);
}

static int wants(int argc, resp_arg *argv, const char *section, int in_default) {
    if (argc == 1) return in_default;
    for (int i = 1; i < argc; i++) {
        if (argv[i].len == strlen(section) && !strncasecmp(argv[i].ptr, section, argv[i].len)) return 1;
        if ((argv[i].len == 3 && !strncasecmp(argv[i].ptr, "all", 3)) ||
            (argv[i].len == 10 && !strncasecmp(argv[i].ptr, "everything", 10))) return 1;
        if (argv[i].len == 7 && !strncasecmp(argv[i].ptr, "default", 7) && in_default) return 1;
    }
    return 0;
}

/* One backend's counters, machine-readable (the bench and tests read it):
 * latency = hand-over to reply placed; wait = waiting on the backend (an
 * embedded store: its own work); fd = latency - wait, frontdoor's part. */
static void backend_line(resp_out *o, const px_backend *be) {
    const px_hist *l = &be->latency, *w = &be->wait;
    double us = 1e-3;
    line(o, "be_%s:name=%s,opened_at=%lld,calls=%llu,errors=%llu,inflight=%llu,"
            "p50_us=%.1f,p99_us=%.1f,p999_us=%.1f,max_us=%.1f,wait_p50_us=%.1f,wait_p99_us=%.1f,wait_p999_us=%.1f,"
            "usec=%.3f,wait_usec=%.3f,fd_usec_per_call=%.2f,wait_usec_per_call=%.2f",
         be->role, be->b.ops->name, (long long)be->opened_at, (unsigned long long)be->calls,
         (unsigned long long)be->errors, (unsigned long long)be->inflight,
         px_hist_quantile(l, 0.5) * us, px_hist_quantile(l, 0.99) * us, px_hist_quantile(l, 0.999) * us, l->max_ns * us,
         px_hist_quantile(w, 0.5) * us, px_hist_quantile(w, 0.99) * us, px_hist_quantile(w, 0.999) * us,
         l->sum_ns * us, w->sum_ns * us,
         px_backend_frontdoor_us(be),
         w->count ? (double)w->sum_ns * us / (double)w->count : 0.0);
}

void px_cmd_info(px_conn *c, int argc, resp_arg *argv) {
    resp_out o;
    resp_out_init(&o, 2);
    time_t uptime = time(NULL) - px_srv.start_time;
    int first = 1;
#define SECTION(name) do { if (!first) resp_out_raw(&o, "\r\n", 2); first = 0; line(&o, "# %s", name); } while (0)

    if (wants(argc, argv, "server", 1)) {
        struct utsname u;
        uname(&u);
        SECTION("Server");
        line(&o, "redis_version:%s", PX_REDIS_COMPAT_VERSION);
        line(&o, "frontdoor_version:%s", PX_VERSION);
        line(&o, "redis_mode:standalone");
        line(&o, "os:%s %s %s", u.sysname, u.release, u.machine);
        line(&o, "arch_bits:%d", (int)(sizeof(void *) * 8));
        line(&o, "multiplexing_api:libev");
        line(&o, "process_id:%d", (int)getpid());
        line(&o, "tcp_port:%lld", px_cfg.port);
        line(&o, "uptime_in_seconds:%lld", (long long)uptime);
        line(&o, "uptime_in_days:%lld", (long long)uptime / 86400);
        line(&o, "hz:%lld", px_cfg.hz);
        line(&o, "config_file:%s", px_cfg.config_file);
        line(&o, "backend:%s", px_srv.primary ? px_srv.primary->b.ops->name : "none");
        line(&o, "durability:%s", px_srv.primary && px_srv.primary->own.be.durability ? "sync" : "nosync");
    }
    if (wants(argc, argv, "clients", 1)) {
        SECTION("Clients");
        line(&o, "connected_clients:%llu", (unsigned long long)px_srv.nclients);
        line(&o, "maxclients:%lld", px_cfg.maxclients);
        line(&o, "blocked_clients:%llu", (unsigned long long)px_block_count());
        line(&o, "tracking_clients:%zu", px_tracking_clients());
    }
    if (wants(argc, argv, "memory", 1)) {
        struct mallinfo2 mi = mallinfo2();
        size_t rss = rss_bytes();
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        SECTION("Memory");
        line(&o, "used_memory:%zu", mi.uordblks + mi.hblkhd);
        line(&o, "used_memory_rss:%zu", rss);
        line(&o, "used_memory_peak_rss:%ld", ru.ru_maxrss * 1024L);
        line(&o, "maxmemory:0");
    }
    if (wants(argc, argv, "persistence", 1)) {
        SECTION("Persistence");
        line(&o, "loading:0");
        line(&o, "rdb_changes_since_last_save:0");
        line(&o, "aof_enabled:0");
        line(&o, "failed_commits:%llu", (unsigned long long)px_srv.failed_commits);
    }
    if (wants(argc, argv, "stats", 1)) {
        SECTION("Stats");
        line(&o, "total_connections_received:%llu", (unsigned long long)px_srv.total_connections);
        line(&o, "total_commands_processed:%llu", (unsigned long long)px_srv.total_commands);
        line(&o, "instantaneous_ops_per_sec:%.0f", px_srv.ops_per_sec);
        line(&o, "total_net_input_bytes:%llu", (unsigned long long)px_srv.net_input);
        line(&o, "total_net_output_bytes:%llu", (unsigned long long)px_srv.net_output);
        line(&o, "rejected_connections:%llu", (unsigned long long)px_srv.rejected_connections);
        uint64_t psc, psp, pss;
        px_pubsub_stats(&psc, &psp, &pss);
        line(&o, "pubsub_channels:%llu", (unsigned long long)psc);
        line(&o, "pubsub_patterns:%llu", (unsigned long long)psp);
        line(&o, "pubsubshard_channels:%llu", (unsigned long long)pss);
        line(&o, "event_loop_turns:%llu", (unsigned long long)px_srv.turns);
        line(&o, "tracking_total_keys:%zu", px_tracking_keys());
        line(&o, "tracking_total_items:%zu", px_tracking_items());
        line(&o, "tracking_total_prefixes:%zu", px_tracking_prefixes());
        line(&o, "total_error_replies:%llu", (unsigned long long)px_errorstat_total());
    }
    if (wants(argc, argv, "cpu", 1)) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        SECTION("CPU");
        line(&o, "used_cpu_sys:%ld.%06ld", (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec);
        line(&o, "used_cpu_user:%ld.%06ld", (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec);
    }
    if (wants(argc, argv, "backend", 1) && px_srv.primary) {
        SECTION("Backend");
        line(&o, "backend_name:%s", px_srv.primary->b.ops->name);
        if (px_srv.primary->b.ops->info) px_srv.primary->b.ops->info(&px_srv.primary->b, &o);
    }
    if (wants(argc, argv, "backends", 1)) {
        SECTION("Backends");
        line(&o, "backend_primary:%s", px_srv.primary ? px_srv.primary->b.ops->name : "none");
        line(&o, "backend_secondary:%s", px_srv.secondary ? px_srv.secondary->b.ops->name : "");
        line(&o, "backend_switches:%llu", (unsigned long long)px_srv.switches);
        line(&o, "backend_switched_at:%lld", (long long)px_srv.switched_at);
        int ndrain = 0;
        for (px_backend *d = px_srv.draining; d; d = d->next) ndrain++;
        line(&o, "backend_draining:%d", ndrain);
        px_backends_refresh();                   /* the snapshot of the records (backends.h) */
        px_backend *all[2] = {px_srv.primary, px_srv.secondary};
        for (int i = 0; i < 2; i++) if (all[i]) backend_line(&o, all[i]);
        for (px_backend *d = px_srv.draining; d; d = d->next) backend_line(&o, d);
    }
    if (wants(argc, argv, "ab", 1)) {
        SECTION("AB");
        px_ab_info(&o);
    }
    if (wants(argc, argv, "migrate", 1)) {      /* issue 30 */
        SECTION("Migrate");
        px_migrate_info(&o);
    }
    if (wants(argc, argv, "commandstats", 0)) {
        SECTION("Commandstats");
        size_t n;
        fd_command *t = fd_commands_table(&n);
        for (size_t i = 0; i < n; i++) {
            uint64_t calls, ns, failed;              /* the commands' records (backends.h) */
            px_cmd_sum(t[i].id, &calls, &ns, &failed);
            if (!calls && !failed && !px_rejected_calls[i]) continue;
            unsigned long long usec = ns / 1000;
            line(&o, "cmdstat_%s:calls=%llu,usec=%llu,usec_per_call=%.2f,rejected_calls=%llu,failed_calls=%llu",
                 t[i].name, (unsigned long long)calls, usec,
                 calls ? (double)usec / (double)calls : 0.0, (unsigned long long)px_rejected_calls[i],
                 (unsigned long long)failed);
        }
    }
    if (wants(argc, argv, "latencystats", 0)) {
        SECTION("Latencystats");
        px_metrics_latencystats(&o);
    }
    if (wants(argc, argv, "errorstats", 1)) {
        SECTION("Errorstats");
        px_errorstat_info(&o);
    }
    if (wants(argc, argv, "keyspace", 1)) {
        SECTION("Keyspace");
        uint64_t keys = 0, expires = 0;
        if (px_srv.primary && px_srv.primary->b.ops->keyspace) px_srv.primary->b.ops->keyspace(&px_srv.primary->b, &keys, &expires);
        if (keys) line(&o, "db0:keys=%llu,expires=%llu,avg_ttl=0", (unsigned long long)keys, (unsigned long long)expires);
    }
#undef SECTION
    resp_add_verbatim(&c->out, "txt", o.data ? o.data : "", o.len);
    resp_out_free(&o);
}
