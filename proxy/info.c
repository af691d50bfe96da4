/* info.c — INFO: server, clients, memory, persistence, stats, backend,
 * commandstats, keyspace. Field names are Redis's where Redis has them, so
 * tools that read INFO keep working. */
#include "builtin.h"
#include "config.h"

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
    int n = vsnprintf(buf, sizeof buf - 2, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n > sizeof buf - 3) n = (int)sizeof buf - 3;
    buf[n++] = '\r';
    buf[n++] = '\n';
    resp_out_raw(o, buf, (size_t)n);
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

void px_info_reply(px_conn *c, int argc, resp_arg *argv) {
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
        line(&o, "backend:%s", px_srv.backend.ops ? px_srv.backend.ops->name : "none");
        line(&o, "durability:%s", px_cfg.durability ? "sync" : "nosync");
    }
    if (wants(argc, argv, "clients", 1)) {
        SECTION("Clients");
        line(&o, "connected_clients:%llu", (unsigned long long)px_srv.nclients);
        line(&o, "maxclients:%lld", px_cfg.maxclients);
        line(&o, "blocked_clients:0");
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
        line(&o, "event_loop_turns:%llu", (unsigned long long)px_srv.turns);
    }
    if (wants(argc, argv, "cpu", 1)) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        SECTION("CPU");
        line(&o, "used_cpu_sys:%ld.%06ld", (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec);
        line(&o, "used_cpu_user:%ld.%06ld", (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec);
    }
    if (wants(argc, argv, "backend", 1) && px_srv.backend.ops) {
        SECTION("Backend");
        line(&o, "backend_name:%s", px_srv.backend.ops->name);
        if (px_srv.backend.ops->info) px_srv.backend.ops->info(&px_srv.backend, &o);
    }
    if (wants(argc, argv, "commandstats", 0)) {
        SECTION("Commandstats");
        size_t n;
        px_command *t = px_commands_table(&n);
        for (size_t i = 0; i < n; i++) {
            if (!t[i].calls) continue;
            line(&o, "cmdstat_%s:calls=%llu,usec=%llu,usec_per_call=%.2f,rejected_calls=0,failed_calls=%llu",
                 t[i].name, (unsigned long long)t[i].calls, (unsigned long long)t[i].usec,
                 (double)t[i].usec / (double)t[i].calls, (unsigned long long)t[i].failed);
        }
    }
    if (wants(argc, argv, "keyspace", 1)) {
        SECTION("Keyspace");
        uint64_t keys = 0, expires = 0;
        if (px_srv.backend.ops && px_srv.backend.ops->keyspace) px_srv.backend.ops->keyspace(&px_srv.backend, &keys, &expires);
        if (keys) line(&o, "db0:keys=%llu,expires=%llu,avg_ttl=0", (unsigned long long)keys, (unsigned long long)expires);
    }
#undef SECTION
    resp_add_verbatim(&c->out, "txt", o.data ? o.data : "", o.len);
    resp_out_free(&o);
}
