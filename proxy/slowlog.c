/* slowlog.c — SLOWLOG, LATENCY, INFO errorstats, SWAPDB and MOVE
 * (slowlog.h says what is recorded where). */
#include "slowlog.h"
#include "hooks.h"
#include "config.h"
#include "backends.h"
#include "../storage/cmdargs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLOW_MAX_ARGC 32
#define SLOW_MAX_STRING 128

/* ---------------------------------------------------------------- entries */

struct px_slowargs {
    int        argc;
    resp_arg  *argv;           /* into this block */
    char      *addr, *name;    /* into this block */
};

typedef struct slow_entry {
    struct slow_entry *newer, *older;
    long long id, time, usec;
    px_slowargs *args;
} slow_entry;

static slow_entry *newest, *oldest;
static long long slow_len, slow_next_id;

static int slowlog_on(void) { return px_cfg.slowlog_log_slower_than >= 0 && px_cfg.slowlog_max_len > 0; }

/* Redis hides these arguments: AUTH's, HELLO's AUTH pair, CONFIG SET's
 * secrets, ACL SETUSER's name and rules. */
int px_arg_redacted(const fd_command *cmd, int argc, const resp_arg *argv, int j) {
    if (!cmd) return 0;
    if (cmd->id == FD_CMD_auth) return j >= 1;
    if (cmd->id == FD_CMD_acl) return argc >= 3 && j >= 2 && resp_arg_is(&argv[1], "SETUSER");
    if (cmd->id == FD_CMD_hello) {
        for (int i = 2; i + 2 < argc; i++)
            if (resp_arg_is(&argv[i], "AUTH")) { if (j == i + 1 || j == i + 2) return 1; }
        return 0;
    }
    if (cmd->id == FD_CMD_config && argc >= 4 && j >= 3 && j % 2 == 1 && resp_arg_is(&argv[1], "SET")) {
        return px_config_secret(argv[j - 1].ptr, argv[j - 1].len);   /* requirepass, a backend's credentials */
    }
    return 0;
}

/* One argument as kept: its bytes into dst (when not NULL); its size. */
static size_t kept_arg(const fd_command *cmd, int argc, const resp_arg *argv, int j, int n, char *dst) {
    char tail[64];
    const char *head = argv[j].ptr;
    size_t hn = argv[j].len, tn = 0;
    if (n != argc && j == n - 1) {
        head = tail;
        hn = (size_t)snprintf(tail, sizeof tail, "... (%d more arguments)", argc - n + 1);
    } else if (px_arg_redacted(cmd, argc, argv, j)) {
        head = "(redacted)";
        hn = 10;
    } else if (hn > SLOW_MAX_STRING) {
        tn = (size_t)snprintf(tail, sizeof tail, "... (%zu more bytes)", hn - SLOW_MAX_STRING);
        hn = SLOW_MAX_STRING;
    }
    if (dst) {
        memcpy(dst, head, hn);
        if (tn) memcpy(dst + hn, tail, tn);
    }
    return hn + tn;
}

/* Only these commands have arguments px_arg_redacted may hide. */
static int may_redact(const fd_command *cmd) {
    return cmd && (cmd->id == FD_CMD_auth || cmd->id == FD_CMD_acl || cmd->id == FD_CMD_hello ||
                   cmd->id == FD_CMD_config);
}

/* Every pending command's arguments are kept in case it turns out slow:
 * the usual argument (not redacted, not cut) is copied as is, without
 * kept_arg's checks (bench/cg_percmd.sh: ~300 instructions a command on
 * the redis backend, docs/benchmarks.md). */
static px_slowargs *make_args(const px_conn *c, const fd_command *cmd, int argc, const resp_arg *argv) {
    int n = argc > SLOW_MAX_ARGC ? SLOW_MAX_ARGC : argc;
    int plain = n == argc && !may_redact(cmd);
    const char *addr = c ? c->addr : "?:0";
    const char *name = c && c->name ? c->name : "";
    size_t al = strlen(addr), nl = strlen(name);
    size_t bytes = sizeof(px_slowargs) + (size_t)n * sizeof(resp_arg) + al + nl + 2;
    for (int j = 0; j < n; j++)
        bytes += plain && argv[j].len <= SLOW_MAX_STRING ? argv[j].len : kept_arg(cmd, argc, argv, j, n, NULL);
    px_slowargs *a = malloc(bytes);
    if (!a) return NULL;
    a->argc = n;
    a->argv = (resp_arg *)(a + 1);
    char *p = (char *)(a->argv + n);
    for (int j = 0; j < n; j++) {
        a->argv[j].ptr = p;
        if (plain && argv[j].len <= SLOW_MAX_STRING) {
            memcpy(p, argv[j].ptr, argv[j].len);
            a->argv[j].len = argv[j].len;
        } else {
            a->argv[j].len = kept_arg(cmd, argc, argv, j, n, p);
        }
        p += a->argv[j].len;
    }
    a->addr = p;
    memcpy(p, addr, al + 1);
    a->name = p + al + 1;
    memcpy(a->name, name, nl + 1);
    return a;
}

void px_slowlog_free(px_slowargs *a) { free(a); }

static void slow_trim(void) {
    while (slow_len > px_cfg.slowlog_max_len && oldest) {
        slow_entry *e = oldest;
        oldest = e->newer;
        if (oldest) oldest->older = NULL;
        else newest = NULL;
        free(e->args);
        free(e);
        slow_len--;
    }
}

/* Keep `a` (taken) as the newest entry. */
static void slow_push(px_slowargs *a, long long usec) {
    slow_entry *e = malloc(sizeof *e);
    if (!e) { free(a); return; }
    e->id = slow_next_id++;
    e->time = (long long)time(NULL);
    e->usec = usec;
    e->args = a;
    e->newer = NULL;
    e->older = newest;
    if (newest) newest->newer = e;
    else oldest = e;
    newest = e;
    slow_len++;
    slow_trim();
}

static void slow_reset(void) {
    while (oldest) {
        slow_entry *e = oldest;
        oldest = e->newer;
        free(e->args);
        free(e);
    }
    newest = NULL;
    slow_len = 0;
}

/* ---------------------------------------------------------------- latency */

#define LAT_SAMPLES 160
enum { LAT_COMMAND, LAT_FAST, LAT_EVENTS };
static const char *const lat_names[LAT_EVENTS] = {"command", "fast-command"};

typedef struct lat_event {
    int       used;            /* has samples (LATENCY RESET forgets it) */
    struct { long long time, ms; } s[LAT_SAMPLES];
    int       idx;             /* next slot */
    long long max;
} lat_event;
static lat_event lat[LAT_EVENTS];

static void lat_add(int ev, long long ms) {
    lat_event *e = &lat[ev];
    long long now = (long long)time(NULL);
    int prev = (e->idx + LAT_SAMPLES - 1) % LAT_SAMPLES;
    e->used = 1;
    if (ms > e->max) e->max = ms;
    if (e->s[prev].time == now) {              /* one sample per second: its worst */
        if (ms > e->s[prev].ms) e->s[prev].ms = ms;
        return;
    }
    e->s[e->idx].time = now;
    e->s[e->idx].ms = ms;
    e->idx = (e->idx + 1) % LAT_SAMPLES;
}

/* ---------------------------------------------------------------- errorstats */

#define ERRSTAT_MAX 128
typedef struct { char code[32]; uint64_t count; } errstat;
static errstat errstats[ERRSTAT_MAX];
static int nerrstats;
static uint64_t errtotal;
uint64_t px_rejected_calls[FD_CMD_COUNT];

void px_errorstat_reply(const char *s, size_t len) {
    errtotal++;
    if (len && s[0] == '-') { s++; len--; }
    const char *code = "ERR";
    size_t n = 3;
    const char *sp = memchr(s, ' ', len < 31 ? len : 31);
    if (sp && sp > s) { code = s; n = (size_t)(sp - s); }
    for (int i = 0; i < nerrstats; i++)
        if (strlen(errstats[i].code) == n && !memcmp(errstats[i].code, code, n)) { errstats[i].count++; return; }
    if (nerrstats == ERRSTAT_MAX) return;      /* Redis stops adding codes too */
    memcpy(errstats[nerrstats].code, code, n);
    errstats[nerrstats].code[n] = 0;
    errstats[nerrstats++].count = 1;
}

static int errstat_cmp(const void *a, const void *b) { return strcmp(((const errstat *)a)->code, ((const errstat *)b)->code); }

void px_errorstat_info(resp_out *o) {
    qsort(errstats, (size_t)nerrstats, sizeof *errstats, errstat_cmp);
    char buf[128];
    for (int i = 0; i < nerrstats; i++) {
        int n = snprintf(buf, sizeof buf, "errorstat_%s:count=%llu\r\n", errstats[i].code,
                         (unsigned long long)errstats[i].count);
        resp_out_raw(o, buf, (size_t)n);
    }
}

uint64_t px_errorstat_total(void) { return errtotal; }

void px_errorstat_reset(void) {
    px_cmdstats_reset();                          /* commandstats, latencystats (backends.h) */
    nerrstats = 0;
    errtotal = 0;
    memset(px_rejected_calls, 0, sizeof px_rejected_calls);
}

/* ---------------------------------------------------------------- hooks */

static void measured(px_slowargs **keep, const px_conn *c, const fd_command *cmd, int argc,
                     const resp_arg *argv, uint64_t ns) {
    if (cmd && cmd->id == FD_CMD_exec) return;            /* its commands are logged, not it */
    long long usec = (long long)(ns / 1000);
    if (px_cfg.latency_monitor_threshold && usec / 1000 >= px_cfg.latency_monitor_threshold)
        lat_add(cmd && (cmd->flags & FD_CMD_FAST) ? LAT_FAST : LAT_COMMAND, usec / 1000);
    if (!slowlog_on() || usec < px_cfg.slowlog_log_slower_than) return;
    px_slowargs *a = keep ? *keep : make_args(c, cmd, argc, argv);   /* kept: NULL when the log was off */
    if (keep) *keep = NULL;
    if (a) slow_push(a, usec);
}

void px_slowlog_slow(px_conn *c, const fd_command *cmd, int argc, const resp_arg *argv,
                     uint64_t ns, const char *err, size_t errlen) {
    if (c && err) px_errorstat_reply(err, errlen);
    measured(NULL, c, cmd, argc, argv, ns);
}

px_slowargs *px_slowlog_capture(const px_conn *c, const fd_command *cmd, int argc, const resp_arg *argv) {
    if (!c || !slowlog_on() || (cmd && cmd->id == FD_CMD_exec)) return NULL;
    return make_args(c, cmd, argc, argv);
}

void px_slowlog_pending(px_slowargs *a, const fd_command *cmd, int to_client,
                        const char *reply, size_t len, uint64_t ns) {
    if (to_client && len && reply[0] == '-') px_errorstat_reply(reply, len);
    if (to_client || a) measured(&a, NULL, cmd, 0, NULL, ns);   /* a: the client went away meanwhile */
    free(a);
}

/* ---------------------------------------------------------------- SLOWLOG */

static void reply_subcmd_arity(px_conn *c, const char *cmd, const resp_arg *sub) {
    char low[32];                              /* Redis names it by its table name: "slowlog|len" */
    size_t n = sub->len < sizeof low ? sub->len : sizeof low - 1;
    for (size_t i = 0; i < n; i++) low[i] = (char)(sub->ptr[i] >= 'A' && sub->ptr[i] <= 'Z' ? sub->ptr[i] + 32 : sub->ptr[i]);
    resp_add_errorf(&c->out, "ERR wrong number of arguments for '%s|%.*s' command", cmd, (int)n, low);
}

static void reply_unknown_subcmd(px_conn *c, const char *cmd, const resp_arg *sub) {
    resp_add_errorf(&c->out, "ERR unknown subcommand '%.*s'. Try %s HELP.",
                    (int)(sub->len > 128 ? 128 : sub->len), sub->ptr, cmd);
}

void px_cmd_slowlog(px_conn *c, int argc, resp_arg *argv) {
    resp_arg *sub = &argv[1];
    if (resp_arg_is(sub, "GET")) {
        if (argc > 3) {
            resp_add_errorf(&c->out, "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try SLOWLOG HELP.",
                            (int)sub->len, sub->ptr);
            return;
        }
        long long count = 10;
        if (argc == 3) {
            if (resp_str2ll(argv[2].ptr, argv[2].len, &count) || count < -1) {
                resp_add_error(&c->out, "ERR count should be greater than or equal to -1");
                return;
            }
            if (count == -1) count = slow_len;
        }
        long long n = count < slow_len ? count : slow_len;
        resp_add_array(&c->out, n);
        slow_entry *e = newest;
        for (long long i = 0; i < n; i++, e = e->older) {
            resp_add_array(&c->out, 6);
            resp_add_int(&c->out, e->id);
            resp_add_int(&c->out, e->time);
            resp_add_int(&c->out, e->usec);
            resp_add_array(&c->out, e->args->argc);
            for (int j = 0; j < e->args->argc; j++) resp_add_bulk(&c->out, e->args->argv[j].ptr, e->args->argv[j].len);
            resp_add_bulk_cstr(&c->out, e->args->addr);
            resp_add_bulk_cstr(&c->out, e->args->name);
        }
    } else if (resp_arg_is(sub, "LEN")) {
        if (argc != 2) { reply_subcmd_arity(c, "slowlog", sub); return; }
        resp_add_int(&c->out, slow_len);
    } else if (resp_arg_is(sub, "RESET")) {
        if (argc != 2) { reply_subcmd_arity(c, "slowlog", sub); return; }
        slow_reset();
        resp_add_simple(&c->out, "OK", 2);
    } else if (resp_arg_is(sub, "HELP")) {
        if (argc != 2) { reply_subcmd_arity(c, "slowlog", sub); return; }
        static const char *const help[] = {
            "GET [<count>]",
            "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "    Entries are made of:",
            "    id, timestamp, time in microseconds, arguments array, client IP and port,",
            "    client name",
            "LEN", "    Return the length of the slowlog.",
            "RESET", "    Reset the slowlog.",
            "HELP", "    Prints this help.", NULL};
        px_reply_help(c, "SLOWLOG", help);
    } else {
        reply_unknown_subcmd(c, "SLOWLOG", sub);
    }
}

/* ---------------------------------------------------------------- LATENCY */

static int lat_find(const resp_arg *a) {
    for (int i = 0; i < LAT_EVENTS; i++)
        if (a->len == strlen(lat_names[i]) && !memcmp(a->ptr, lat_names[i], a->len)) return i;
    return -1;
}

static void latency_doctor(px_conn *c) {
    char buf[4096];
    size_t n = 0;
    int any = 0;
    if (!px_cfg.latency_monitor_threshold) {
        n = (size_t)snprintf(buf, sizeof buf,
            "Latency monitoring is disabled in this frontdoor instance. You may use "
            "\"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it.\n");
    } else {
        for (int i = 0; i < LAT_EVENTS; i++) {
            lat_event *e = &lat[i];
            if (!e->used) continue;
            long long cnt = 0, sum = 0;
            for (int k = 0; k < LAT_SAMPLES; k++) if (e->s[k].time) { cnt++; sum += e->s[k].ms; }
            if (!cnt) continue;
            if (!any) n += (size_t)snprintf(buf + n, sizeof buf - n,
                "frontdoor measured these latency spikes (commands slower than %lld ms, from dispatch to reply):\n\n",
                px_cfg.latency_monitor_threshold);
            any++;
            n += (size_t)snprintf(buf + n, sizeof buf - n,
                "%d. %s: %lld latency spikes (average %lldms). Worst all time event %lldms.\n",
                any, lat_names[i], cnt, sum / cnt, e->max);
        }
        if (any) n += (size_t)snprintf(buf + n, sizeof buf - n,
            "\nThe time includes the backend's (INFO backends tells the backend's share). "
            "SLOWLOG GET lists the slow commands and their arguments.\n");
        else n = (size_t)snprintf(buf, sizeof buf,
            "No latency spike was observed (threshold %lld ms) since frontdoor started or LATENCY RESET.\n",
            px_cfg.latency_monitor_threshold);
    }
    resp_add_verbatim(&c->out, "txt", buf, n < sizeof buf ? n : sizeof buf - 1);
}

/* One command's distribution as Redis 7.0 gives it: {calls, histogram_usec:
 * {µs: cumulative count}} at power-of-two steps from 1024 ns, only the
 * steps where the count grew. */
static void fill_cdf(px_conn *c, const px_hist *h) {
    long long pairs = 0;
    uint64_t prev = 0, cum = 0;
    unsigned i = 0;
    for (uint64_t edge = 1024; prev < h->count && edge; edge <<= 1) {
        while (i < PX_HIST_BUCKETS && px_hist_bucket_upper(i) < edge) cum += h->b[i++];
        if (cum > prev) pairs++;
        prev = cum;
    }
    resp_add_map(&c->out, 2);
    resp_add_bulk_cstr(&c->out, "calls");
    resp_add_int(&c->out, (long long)h->count);
    resp_add_bulk_cstr(&c->out, "histogram_usec");
    resp_add_map(&c->out, pairs);
    prev = cum = 0;
    i = 0;
    for (uint64_t edge = 1024; prev < h->count && edge; edge <<= 1) {
        while (i < PX_HIST_BUCKETS && px_hist_bucket_upper(i) < edge) cum += h->b[i++];
        if (cum > prev) {
            resp_add_int(&c->out, (long long)(edge / 1000));
            resp_add_int(&c->out, (long long)cum);
        }
        prev = cum;
    }
}

/* LATENCY HISTOGRAM [command ...]: from the commands' records (backends.h);
 * unknown commands and commands never run are left out, as Redis does.
 * Subcommands: Redis 7.0 keeps a record per subcommand and names it
 * "parent|sub" (`config|get`; `LATENCY HISTOGRAM config` lists every
 * subcommand of config that ran, `config|get` that one). frontdoor's
 * command table (storage/commands.def) has no subcommand rows, so its
 * records are per command: a container command (CONFIG, CLIENT, SCRIPT,
 * OBJECT, XINFO ...) is reported under its own name, and a "parent|sub"
 * argument finds nothing (fd_command_lookup knows no '|' names), as Redis
 * finds nothing for "set|get" or "config|nosuch". INFO commandstats and
 * latencystats name them the same way (`cmdstat_config`). */
static void latency_histogram(px_conn *c, int argc, resp_arg *argv) {
    int ids[FD_CMD_COUNT], n = 0;
    static px_hist h;                          /* 2.7 KB: not on the stack */
    if (argc == 2) {
        for (int id = 0; id < FD_CMD_COUNT; id++) {
            uint64_t calls, ns, errs;
            px_cmd_sum(id, &calls, &ns, &errs);
            if (calls) ids[n++] = id;
        }
    } else {
        for (int j = 2; j < argc && n < FD_CMD_COUNT; j++) {
            const fd_command *cmd = fd_command_lookup(argv[j].ptr, argv[j].len);
            uint64_t calls = 0, ns, errs;
            if (cmd) px_cmd_sum(cmd->id, &calls, &ns, &errs);
            if (calls) ids[n++] = cmd->id;
        }
    }
    resp_add_map(&c->out, n);
    for (int k = 0; k < n; k++) {
        resp_add_bulk_cstr(&c->out, fd_command_by_id(ids[k])->name);
        px_cmd_total(ids[k], &h);
        fill_cdf(c, &h);
    }
}

void px_cmd_latency(px_conn *c, int argc, resp_arg *argv) {
    resp_arg *sub = &argv[1];
    if (resp_arg_is(sub, "LATEST")) {
        if (argc != 2) { reply_subcmd_arity(c, "latency", sub); return; }
        int n = 0;
        for (int i = 0; i < LAT_EVENTS; i++) n += lat[i].used;
        resp_add_array(&c->out, n);
        for (int i = 0; i < LAT_EVENTS; i++) {
            if (!lat[i].used) continue;
            int last = (lat[i].idx + LAT_SAMPLES - 1) % LAT_SAMPLES;
            resp_add_array(&c->out, 4);
            resp_add_bulk_cstr(&c->out, lat_names[i]);
            resp_add_int(&c->out, lat[i].s[last].time);
            resp_add_int(&c->out, lat[i].s[last].ms);
            resp_add_int(&c->out, lat[i].max);
        }
    } else if (resp_arg_is(sub, "HISTORY")) {
        if (argc != 3) { reply_subcmd_arity(c, "latency", sub); return; }
        int ev = lat_find(&argv[2]);
        if (ev < 0 || !lat[ev].used) { resp_add_array(&c->out, 0); return; }
        lat_event *e = &lat[ev];
        int n = 0;
        for (int k = 0; k < LAT_SAMPLES; k++) n += e->s[k].time != 0;
        resp_add_array(&c->out, n);
        for (int k = 0; k < LAT_SAMPLES; k++) {
            int j = (e->idx + k) % LAT_SAMPLES;     /* oldest first */
            if (!e->s[j].time) continue;
            resp_add_array(&c->out, 2);
            resp_add_int(&c->out, e->s[j].time);
            resp_add_int(&c->out, e->s[j].ms);
        }
    } else if (resp_arg_is(sub, "RESET")) {
        long long n = 0;
        for (int i = 0; i < LAT_EVENTS; i++) {
            int hit = argc == 2;
            for (int j = 2; j < argc && !hit; j++) hit = lat_find(&argv[j]) == i;
            if (hit && lat[i].used) { memset(&lat[i], 0, sizeof lat[i]); n++; }
        }
        resp_add_int(&c->out, n);
    } else if (resp_arg_is(sub, "DOCTOR")) {
        if (argc != 2) { reply_subcmd_arity(c, "latency", sub); return; }
        latency_doctor(c);
    } else if (resp_arg_is(sub, "GRAPH")) {
        if (argc != 3) { reply_subcmd_arity(c, "latency", sub); return; }
        int ev = lat_find(&argv[2]);
        if (ev < 0 || !lat[ev].used)
            resp_add_errorf(&c->out, "ERR No samples available for event '%.*s'", (int)argv[2].len, argv[2].ptr);
        else
            resp_add_error(&c->out, "ERR LATENCY GRAPH is not supported by frontdoor: use LATENCY HISTORY");
    } else if (resp_arg_is(sub, "HISTOGRAM")) {
        latency_histogram(c, argc, argv);
    } else if (resp_arg_is(sub, "HELP")) {
        if (argc != 2) { reply_subcmd_arity(c, "latency", sub); return; }
        static const char *const help[] = {
            "DOCTOR", "    Return a human readable latency analysis report.",
            "GRAPH <event>", "    Return an ASCII latency graph for the <event> class.",
            "HISTORY <event>", "    Return time-latency samples for the <event> class.",
            "LATEST", "    Return the latest latency samples for all events.",
            "RESET [<event> ...]", "    Reset latency data of one or more <event> classes.",
            "    (default: reset all data for all event classes)",
            "HISTOGRAM [COMMAND ...]",
            "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
            "    If no commands are specified then all histograms are replied.",
            "HELP", "    Prints this help.", NULL};
        px_reply_help(c, "LATENCY", help);
    } else {
        reply_unknown_subcmd(c, "LATENCY", sub);
    }
}

/* ---------------------------------------------------------------- SWAPDB, MOVE */

#define ONE_DB "ERR DB index is out of range (frontdoor has one database (0))"

static int db_index(const resp_arg *a, long long *db) {
    return resp_str2ll(a->ptr, a->len, db) || *db < -2147483648LL || *db > 2147483647LL ? -1 : 0;
}

void px_cmd_swapdb(px_conn *c, int argc, resp_arg *argv) {
    long long a, b;
    if (db_index(&argv[1], &a)) { resp_add_error(&c->out, "ERR invalid first DB index"); return; }
    if (db_index(&argv[2], &b)) { resp_add_error(&c->out, "ERR invalid second DB index"); return; }
    if (a != 0 || b != 0) { resp_add_error(&c->out, ONE_DB); return; }
    resp_add_simple(&c->out, "OK", 2);              /* database 0 with itself: nothing to do */
}

void px_cmd_move(px_conn *c, int argc, resp_arg *argv) {
    long long db;
    const char *e = fd_arg_int_error(&argv[2], &db);
    if (e) { resp_add_error(&c->out, e); return; }
    if (db != 0) { resp_add_error(&c->out, ONE_DB); return; }
    resp_add_error(&c->out, "ERR source and destination objects are the same");
}

/* ------------------------------------------------------------ hooks (hooks.h) */

static void slowlog_exec_done(const px_exec *e) {
    if (e->owed) return;                 /* logged on completion */
    if (e->script) { px_slowlog_after(NULL, e->cmd, e->argc, e->argv, e->ns, NULL, 0); return; }
    int is_err = e->reply && e->len && e->reply[0] == '-';
    px_slowlog_after(e->c, e->cmd, e->argc, e->argv, e->ns, is_err ? e->reply : NULL, e->len);
}

static void slowlog_owed(px_conn *c, fd_pending *p, const fd_command *cmd, int argc, const resp_arg *argv) {
    p->slow = px_slowlog_capture(c, cmd, argc, argv);
}

static void slowlog_reply(fd_pending *p, const char *reply, size_t len, uint64_t ns) {
    px_slowlog_pending(p->slow, p->cmd, p->conn != NULL, reply, len, ns);   /* takes p->slow */
    p->slow = NULL;
}

static void slowlog_forget(fd_pending *p) {
    px_slowlog_free(p->slow);
    p->slow = NULL;
}

/* Redis 7.0: rejected_calls, and the error in errorstats */
static void slowlog_rejected(const fd_command *cmd, const char *reply, size_t len) {
    if (cmd) px_rejected_calls[cmd->id]++;
    if (len && reply[0] == '-') px_errorstat_reply(reply, len);
}

void px_slowlog_apply(void) {
    uint64_t t = UINT64_MAX;                 /* off: errors only (errorstats) */
    if (slowlog_on()) t = (uint64_t)px_cfg.slowlog_log_slower_than * 1000;
    if (px_cfg.latency_monitor_threshold > 0 && (uint64_t)px_cfg.latency_monitor_threshold <= UINT64_MAX / 1000000 &&
        (uint64_t)px_cfg.latency_monitor_threshold * 1000000 < t)
        t = (uint64_t)px_cfg.latency_monitor_threshold * 1000000;
    px_hook.slow_ns = t;
}

void px_slowlog_hooks(void) {
    px_slowlog_apply();
    PX_HOOK_ADD(rejected, slowlog_rejected);
    PX_HOOK_ADD(exec_slow, slowlog_exec_done);   /* the core tests slow_ns inline */
    PX_HOOK_ADD(owed, slowlog_owed);
    PX_HOOK_ADD(reply, slowlog_reply);
    PX_HOOK_ADD(forget, slowlog_forget);
}
