/* main.c — frontdoor: a Redis-protocol front door to Redis, MongoDB, LevelDB
 * and LMDB. Usage: frontdoor [config-file] [--directive value ...] */
#include "ab.h"
#include "builtin.h"
#include "capture.h"
#include "config.h"
#include "acl.h"
#include "hooks.h"
#include "log.h"
#include "metrics.h"
#include "migrate.h"
#include "multi.h"
#include "pubsub.h"
#include "notify.h"
#include "blocking.h"
#include "scripting.h"
#include "server.h"
#include "slowlog.h"
#include "tracking.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(void) {
    fprintf(stderr,
            "Usage: frontdoor [/path/to/frontdoor.conf] [--directive value ...]\n"
            "       frontdoor --version | --help | --coverage (the command x backend table, Markdown)\n\n"
            "Examples:\n"
            "       frontdoor                                (LMDB in ./frontdoor-data, port 6380)\n"
            "       frontdoor conf/frontdoor.conf\n"
            "       frontdoor --port 7777 --durability nosync\n"
            "       frontdoor --config conf/frontdoor.conf --loglevel verbose\n");
}

/* The features, each registering its hooks (proxy/hooks.h); at a point
 * the hooks run in this order (only the gates' order matters: capture sees
 * every command, script-busy refuses before the checks; the ACL check, then
 * pub/sub-mode denial, before the MULTI queue: Redis 7.0's order). */
static void (*const px_features[])(void) = {
    px_capture_hooks, px_acl_hooks, px_scripting_hooks, px_pubsub_hooks, px_multi_hooks,
    px_blocking_hooks, px_slowlog_hooks, px_metrics_hooks, px_ab_hooks, px_tracking_hooks,
    px_notify_hooks,
};

/* glibc's malloc arenas, set before any thread exists (docs/robustness.md,
 * "Memory: malloc arenas"): by default every thread that allocates (the
 * MongoDB backend's workers, LevelDB's writer and compactor) gets an arena of
 * its own, up to 8 per core, and an arena gives memory back only from its
 * top, so what a burst leaves behind stays resident. PX_MALLOC_ARENAS
 * arenas are shared by all threads instead. The MALLOC_ARENA_MAX variable
 * (or GLIBC_TUNABLES' glibc.malloc.arena_max) in frontdoor's environment
 * wins: this is left alone then. */
#define PX_MALLOC_ARENAS 1
static void malloc_arenas(void) {
#ifdef M_ARENA_MAX
    const char *t = getenv("GLIBC_TUNABLES");
    if (getenv("MALLOC_ARENA_MAX") || (t && strstr(t, "arena_max"))) return;
    mallopt(M_ARENA_MAX, PX_MALLOC_ARENAS);
#endif
}

int main(int argc, char **argv) {
    malloc_arenas();                          /* first: no thread exists yet */
    if (argc == 2 && !strcmp(argv[1], "--coverage")) {   /* the README's command x backend table */
        char *md = fd_backend_coverage_markdown();
        if (!md) return 1;
        fputs(md, stdout);
        free(md);
        return 0;
    }
    if (argc == 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-v"))) {
        printf("frontdoor v=%s redis-compat=%s\n", PX_VERSION, PX_REDIS_COMPAT_VERSION);
        return 0;
    }
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage();
        return 0;
    }
    px_config_init();
    char err[1024];
    if (px_config_from_args(argc, argv, err, sizeof err)) {
        fprintf(stderr, "frontdoor: %s\n", err);
        return 1;
    }
    px_log_open();
    static const fd_host host = {px_vlog, px_pending_reply, px_pending_error,
                                 px_pubsub_backend_message, px_pubsub_backend_resync,
                                 px_pubsub_backend_ready};
    fd_host_set(&host);
    fd_commands_init();
    for (size_t i = 0; i < sizeof px_features / sizeof px_features[0]; i++) px_features[i]();
    if (px_acl_startup(err, sizeof err)) {   /* aclfile (proxy/acl.h) */
        fprintf(stderr, "frontdoor: %s\n", err);
        return 1;
    }
    if (px_server_init(err, sizeof err) || px_metrics_init(err, sizeof err)) {   /* metrics-port (issue 18) */
        px_log(PX_LOG_WARNING, "%s", err);
        return 1;
    }
    if (px_cfg.pidfile[0]) {
        FILE *f = fopen(px_cfg.pidfile, "w");
        if (f) { fprintf(f, "%d\n", (int)getpid()); fclose(f); }
        else px_log(PX_LOG_WARNING, "can't write pidfile %s: %s", px_cfg.pidfile, strerror(errno));
    }
    px_log(PX_LOG_NOTICE, "frontdoor %s ready: backend %s (durability %s), data in %s, listening on %s:%lld%s%s",
           PX_VERSION, px_cfg.be.backend, px_cfg.be.durability ? "sync" : "nosync", px_cfg.be.dir,
           px_cfg.bind, px_cfg.port, px_cfg.unixsocket[0] ? " and " : "", px_cfg.unixsocket);
    px_migrate_init();                        /* a backfill under way before a restart resumes (issue 30) */
    px_server_run();
    px_server_shutdown();
    if (px_cfg.pidfile[0]) unlink(px_cfg.pidfile);
    px_log(PX_LOG_NOTICE, "frontdoor is now ready to exit, bye bye...");
    return 0;
}
