/* config.c — the directive table and everything that reads or writes it.
 * A directive is one row: {name, type, offset into px_settings, default,
 * bounds, flags}. File, command line and CONFIG GET/SET all go through
 * px_config_set / format_value, so a directive is added in one place. */
#include "config.h"
#include "log.h"
#include "capture.h"   /* capture (issue 17) */
#include "acl.h"       /* "user" lines (issue 29) */
#include "slowlog.h"   /* the slow log's inline threshold */
#include "backends.h"  /* px_backends_notify: the directive forwarded to a Redis backend */
#include "../storage/backend.h"   /* the registered backends' option rows */

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

px_settings px_cfg;

enum ctype { T_INT, T_MEM, T_STR, T_ENUM, T_CONST, T_DOUBLE, T_OCTAL, T_NOTIFY };   /* T_NOTIFY: notify-keyspace-events' class letters, stored as PX_NOTIFY_* bits */   /* T_OCTAL: an integer in octal (Redis's OCTAL_CONFIG) */
enum {
    F_IMMUTABLE = 1,   /* not at runtime (CONFIG SET); a reload keeps the running value */
    F_BACKEND   = 2,   /* in px_backend_settings: has an "ab-" twin for the secondary */
    F_AB        = 4,   /* an A/B directive: changing it reconfigures A/B */
    F_TLS       = 8,   /* a client TLS directive: changing it rebuilds the SSL_CTX (proxy/tls.h) */
    F_SECRET    = 16,  /* a credential: px_config_secret */
};

typedef struct directive {
    const char *name;
    enum ctype  type;
    size_t      off;          /* into px_settings, or px_backend_settings with F_BACKEND; unused for T_CONST */
    const char *def;          /* default, as text */
    long long   min, max;
    int         flags;
    const char *const *enums; /* T_ENUM: names, index = stored int value */
} directive;

static const char *const durability_names[] = {"nosync", "sync", NULL};
static const char *const loglevel_names[] = {"debug", "verbose", "notice", "warning", NULL};
static const char *const ab_mode_names[] = {"off", "split", "mirror", NULL};  /* = PX_AB_* */
static const char *const ab_by_names[] = {"key", "client", NULL};            /* = PX_AB_BY_* */
static const char *const ab_log_names[] = {"count", "reply", "diff", NULL};   /* = PX_AB_LOG_* */
static const char *const yesno_names[] = {"no", "yes", NULL};
static const char *const ab_order_names[] = {"dispatch", "primary", NULL};   /* = PX_AB_ORDER_* */
static const char *const tls_auth_names[] = {"no", "yes", "optional", NULL}; /* = PX_TLS_AUTH_* */

#define OFF(f) offsetof(px_settings, f)
#define BOFF(f) offsetof(px_backend_settings, f)
#define B F_BACKEND
#define GB (1024LL * 1024 * 1024)
/* Every F_BACKEND row also exists as "ab-<name>" for the A/B secondary
 * ("backend" as "ab-secondary"); CONFIG GET * lists all names sorted. The
 * backends' own rows (storage/option.h) join as F_BACKEND rows when the
 * entries are built (backend_rows). */
static const directive directives[] = {
    {"ab-log-file", T_STR, OFF(ab_log_file), "", 0, 0, F_AB, NULL},
    {"ab-mirror-order", T_ENUM, OFF(ab_mirror_order), "primary", 0, 0, 0, ab_order_names},   /* proxy/ab.h */
    {"ab-mirror-queue", T_INT, OFF(ab_mirror_queue), "10000", 1, 100000000, F_AB, NULL},
    {"ab-mirror-reads", T_ENUM, OFF(ab_mirror_reads), "yes", 0, 0, 0, yesno_names},          /* issue 18 */
    {"ab-mirror-sample", T_DOUBLE, OFF(ab_mirror_sample), "1", 0, 1, 0, NULL},               /* issue 18 */
    {"ab-mirror-writes", T_ENUM, OFF(ab_mirror_writes), "yes", 0, 0, F_AB, yesno_names},
    {"ab-mismatch-log", T_ENUM, OFF(ab_mismatch_log), "diff", 0, 0, 0, ab_log_names},        /* issue 18 */
    {"ab-mode", T_ENUM, OFF(ab_mode), "off", 0, 0, F_AB, ab_mode_names},
    {"ab-split-by", T_ENUM, OFF(ab_split_by), "key", 0, 0, F_AB, ab_by_names},
    {"ab-split-fraction", T_DOUBLE, OFF(ab_split_fraction), "0.5", 0, 1, F_AB, NULL},
    {"ab-stop-after", T_INT, OFF(ab_stop_after), "0", 0, LLONG_MAX, 0, NULL},               /* issue 18 */
    {"appendonly", T_CONST, 0, "no", 0, 0, F_IMMUTABLE, NULL},
    {"backend", T_STR, BOFF(backend), "lmdb", 0, 0, B, NULL},
    {"backend-timeout", T_INT, BOFF(backend_timeout), "1000", 1, 3600000, B, NULL},
    {"bind", T_STR, OFF(bind), "127.0.0.1", 0, 0, F_IMMUTABLE, NULL},
    {"busy-reply-threshold", T_INT, OFF(busy_reply_threshold), "5000", 0, LLONG_MAX, 0, NULL},
    /* capture (issue 17, proxy/capture.h) */
    {"capture-file", T_STR, OFF(capture_file), "", 0, 0, 0, NULL},
    {"capture-hash", T_ENUM, OFF(capture_hash), "no", 0, 0, 0, yesno_names},
    {"capture-max-size", T_MEM, OFF(capture_max_size), "1gb", 0, LLONG_MAX, 0, NULL},
    {"capture-sample", T_DOUBLE, OFF(capture_sample), "1", 0, 1, 0, NULL},
    {"client-output-buffer-limit", T_MEM, OFF(client_output_buffer_limit), "2gb", 0, LLONG_MAX, 0, NULL},
    {"client-query-buffer-limit", T_MEM, OFF(client_query_buffer_limit), "1gb", 1024 * 1024, LLONG_MAX, 0, NULL},
    {"databases", T_CONST, 0, "1", 0, 0, F_IMMUTABLE, NULL},
    {"dir", T_STR, BOFF(dir), "./frontdoor-data", 0, 0, B, NULL},
    {"durability", T_ENUM, BOFF(durability), "sync", 0, 0, B, durability_names},
    {"hz", T_INT, OFF(hz), "10", 1, 500, 0, NULL},
    {"latency-monitor-threshold", T_INT, OFF(latency_monitor_threshold), "0", 0, LLONG_MAX, 0, NULL},  /* slowlog.h */
    {"logfile", T_STR, OFF(logfile), "", 0, 0, F_IMMUTABLE, NULL},
    {"loglevel", T_ENUM, OFF(loglevel), "notice", 0, 0, 0, loglevel_names},
    {"maxclients", T_INT, OFF(maxclients), "10000", 1, 1000000, 0, NULL},
    {"metrics-tls", T_ENUM, OFF(metrics_tls), "no", 0, 0, F_IMMUTABLE, yesno_names},          /* issue 28: the endpoint over TLS */
    {"migrate-state-file", T_STR, OFF(migrate_state_file), "", 0, 0, 0, NULL},   /* proxy/migrate.h; "" = <dir>.migrate-state */
    {"metrics-port", T_INT, OFF(metrics_port), "0", 0, 65535, F_IMMUTABLE, NULL},          /* issue 18: 0 = off */
    {"notify-keyspace-events", T_NOTIFY, OFF(notify_keyspace_events), "", 0, 0, 0, NULL},   /* docs/notifications.md */
    {"pidfile", T_STR, OFF(pidfile), "", 0, 0, F_IMMUTABLE, NULL},
    {"port", T_INT, OFF(port), "6380", 0, 65535, F_IMMUTABLE, NULL},
    {"max-reply-bytes", T_MEM, OFF(max_reply_bytes), "1gb", 1024 * 1024, LLONG_MAX, 0, NULL},
    {"proto-max-bulk-len", T_MEM, OFF(proto_max_bulk_len), "512mb", 1024 * 1024, LLONG_MAX, 0, NULL},
    {"pubsub-output-buffer-limit", T_MEM, OFF(pubsub_output_buffer_limit), "32mb", 0, LLONG_MAX, 0, NULL},
    {"requirepass", T_STR, OFF(requirepass), "", 0, 0, F_SECRET, NULL},
    {"aclfile", T_STR, OFF(aclfile), "", 0, 0, F_IMMUTABLE, NULL},                 /* acl.h */
    {"acllog-max-len", T_INT, OFF(acllog_max_len), "128", 0, LLONG_MAX, 0, NULL},  /* acl.h */
    {"save", T_CONST, 0, "", 0, 0, F_IMMUTABLE, NULL},
    {"slowlog-log-slower-than", T_INT, OFF(slowlog_log_slower_than), "10000", -1, LLONG_MAX, 0, NULL},  /* slowlog.h */
    {"slowlog-max-len", T_INT, OFF(slowlog_max_len), "128", 0, LONG_MAX, 0, NULL},
    {"tcp-backlog", T_INT, OFF(tcp_backlog), "511", 0, INT_MAX, F_IMMUTABLE, NULL},
    {"timeout", T_INT, OFF(timeout), "0", 0, INT_MAX, 0, NULL},
    {"tracking-table-max-keys", T_INT, OFF(tracking_table_max_keys), "1000000", 0, LLONG_MAX, 0, NULL},   /* tracking.h */
    /* TLS for clients (proxy/tls.h, docs/tls.md): Redis 7.0's directives; a
     * change to any of them builds a new SSL_CTX for new connections (F_TLS) */
    {"tls-auth-clients", T_ENUM, OFF(tls_auth_clients), "yes", 0, 0, F_TLS, tls_auth_names},
    {"tls-ca-cert-dir", T_STR, OFF(tls_ca_cert_dir), "", 0, 0, F_TLS, NULL},
    {"tls-ca-cert-file", T_STR, OFF(tls_ca_cert_file), "", 0, 0, F_TLS, NULL},
    {"tls-cert-file", T_STR, OFF(tls_cert_file), "", 0, 0, F_TLS, NULL},
    {"tls-ciphers", T_STR, OFF(tls_ciphers), "", 0, 0, F_TLS, NULL},
    {"tls-ciphersuites", T_STR, OFF(tls_ciphersuites), "", 0, 0, F_TLS, NULL},
    {"tls-handshake-timeout", T_INT, OFF(tls_handshake_timeout), "10000", 1, 3600000, 0, NULL},   /* ms; frontdoor's own */
    {"tls-key-file", T_STR, OFF(tls_key_file), "", 0, 0, F_TLS, NULL},
    {"tls-key-file-pass", T_STR, OFF(tls_key_file_pass), "", 0, 0, F_TLS, NULL},
    {"tls-port", T_INT, OFF(tls_port), "0", 0, 65535, F_IMMUTABLE, NULL},
    {"tls-prefer-server-ciphers", T_ENUM, OFF(tls_prefer_server_ciphers), "no", 0, 0, F_TLS, yesno_names},
    {"tls-protocols", T_STR, OFF(tls_protocols), "", 0, 0, F_TLS, NULL},
    {"tls-session-cache-size", T_INT, OFF(tls_session_cache_size), "20480", 0, INT_MAX, F_TLS, NULL},
    {"tls-session-cache-timeout", T_INT, OFF(tls_session_cache_timeout), "300", 0, INT_MAX, F_TLS, NULL},
    {"tls-session-caching", T_ENUM, OFF(tls_session_caching), "yes", 0, 0, F_TLS, yesno_names},
    {"unixsocket", T_STR, OFF(unixsocket), "", 0, 0, F_IMMUTABLE, NULL},
    {"unixsocketperm", T_OCTAL, OFF(unixsocketperm), "0", 0, 0777, F_IMMUTABLE, NULL},
};
#define NDIRECTIVES (sizeof(directives) / sizeof(directives[0]))

/* The registered backends' rows, as directives into px_backend_settings.options
 * (set k at options[k]); each option set once, however many backends share it. */
static directive backend_rows[FD_OPTION_ROWS_MAX];
static size_t nbackend_rows;
static const fd_option_set *option_sets[FD_OPTION_SETS_MAX];
static size_t noption_sets;
#define NENTRIES_MAX (2 * (NDIRECTIVES + FD_OPTION_ROWS_MAX))

static int set_index(const fd_option_set *set) {
    for (size_t k = 0; k < noption_sets; k++)
        if (option_sets[k] == set) return (int)k;
    return -1;
}

static void build_backend_rows(void) {
    static const enum ctype types[] = {[FD_OPT_INT] = T_INT, [FD_OPT_MEM] = T_MEM, [FD_OPT_STR] = T_STR, [FD_OPT_ENUM] = T_ENUM};
    for (const fd_backend_ops *const *b = fd_backend_list(); *b; b++) {
        const fd_option_set *set = (*b)->options;
        if (!set || set_index(set) >= 0) continue;
        if (noption_sets == FD_OPTION_SETS_MAX || set->size > FD_OPTION_SET_BYTES
            || nbackend_rows + set->nrows > FD_OPTION_ROWS_MAX)
            px_fatal("backend option set '%s' exceeds the bounds of storage/option.h", set->name);
        size_t base = offsetof(px_backend_settings, options) + noption_sets * FD_OPTION_SET_BYTES;
        option_sets[noption_sets++] = set;
        for (size_t i = 0; i < set->nrows; i++) {
            const fd_option *o = &set->rows[i];
            backend_rows[nbackend_rows++] = (directive){o->name, types[o->type], base + o->off, o->def,
                                                        o->min, o->max,
                                                        F_BACKEND | (o->flags & FD_OPT_SECRET ? F_SECRET : 0), o->enums};
        }
    }
}

const void *px_backend_options(const px_backend_settings *bs, const fd_option_set *set) {
    int k = set ? set_index(set) : -1;
    return k < 0 ? NULL : bs->options[k];
}

/* A name as the user sees it: a row, for the primary or the A/B twin. */
typedef struct entry {
    char             name[48];
    const directive *d;
    int              ab;          /* the "ab-" twin of an F_BACKEND row */
} entry;
static entry entries[NENTRIES_MAX];
static size_t nentries;

static int entry_cmp(const void *a, const void *b) {
    return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

static void add_entries(const directive *d) {
    entry *e = &entries[nentries++];
    snprintf(e->name, sizeof e->name, "%s", d->name);
    e->d = d;
    if (d->flags & F_BACKEND) {
        e = &entries[nentries++];
        if (!strcmp(d->name, "backend")) snprintf(e->name, sizeof e->name, "ab-secondary");
        else snprintf(e->name, sizeof e->name, "ab-%s", d->name);
        e->d = d;
        e->ab = 1;
    }
}

static void build_entries(void) {
    if (nentries) return;
    build_backend_rows();
    for (size_t i = 0; i < NDIRECTIVES; i++) add_entries(&directives[i]);
    for (size_t i = 0; i < nbackend_rows; i++) add_entries(&backend_rows[i]);
    qsort(entries, nentries, sizeof entries[0], entry_cmp);
    for (size_t i = 1; i < nentries; i++)        /* a backend's row may not shadow another row */
        if (!strcasecmp(entries[i - 1].name, entries[i].name)) px_fatal("directive '%s' is defined twice", entries[i].name);
}

/* Redis 7.0's alias names (config.c createIntConfig's alias): the same
 * value under a second name for CONFIG GET/SET and the config file; CONFIG
 * GET lists each name a pattern matches, CONFIG REWRITE writes the row's
 * own name. */
static const struct { const char *alias, *name; } aliases[] = {
    {"lua-time-limit", "busy-reply-threshold"},
};
#define NALIASES (sizeof(aliases) / sizeof(aliases[0]))

static const entry *find_row(const char *name) {
    build_entries();
    for (size_t i = 0; i < nentries; i++)
        if (!strcasecmp(entries[i].name, name)) return &entries[i];
    return NULL;
}

static const entry *find(const char *name) {
    for (size_t i = 0; i < NALIASES; i++)
        if (!strcasecmp(aliases[i].alias, name)) return find_row(aliases[i].name);
    return find_row(name);
}

/* Where an entry's value lives in s. */
static char *slot_of(const entry *e, px_settings *s) {
    if (e->d->flags & F_BACKEND) return (char *)(e->ab ? &s->ab : &s->be) + e->d->off;
    return (char *)s + e->d->off;
}

/* The default as text: the secondary has no backend until one is named, and
 * its own data folder. */
static const char *default_of(const entry *e) {
    if (e->ab && !strcmp(e->d->name, "backend")) return "";
    if (e->ab && !strcmp(e->d->name, "dir")) return "./frontdoor-data-ab";
    return e->d->def;
}

int px_notify_parse(const char *classes) {
    static const char letters[] = "AKEg$lshzxetmdn";
    static const int bits[] = {PX_NOTIFY_ALL, PX_NOTIFY_KEYSPACE, PX_NOTIFY_KEYEVENT, PX_NOTIFY_GENERIC,
                               PX_NOTIFY_STRING, PX_NOTIFY_LIST, PX_NOTIFY_SET, PX_NOTIFY_HASH, PX_NOTIFY_ZSET,
                               PX_NOTIFY_EXPIRED, PX_NOTIFY_EVICTED, PX_NOTIFY_STREAM, PX_NOTIFY_KEY_MISS,
                               PX_NOTIFY_MODULE, PX_NOTIFY_NEW};
    int flags = 0;
    for (const char *p = classes; *p; p++) {
        const char *at = strchr(letters, *p);
        if (!at) return -1;
        flags |= bits[at - letters];
    }
    return flags;
}

void px_notify_format(int flags, char *buf, size_t buflen) {
    /* Redis's order; n only outside "A" (as Redis 7.0 prints it) */
    static const char letters[] = "g$lshzxetdn";
    static const int bits[] = {PX_NOTIFY_GENERIC, PX_NOTIFY_STRING, PX_NOTIFY_LIST, PX_NOTIFY_SET, PX_NOTIFY_HASH,
                               PX_NOTIFY_ZSET, PX_NOTIFY_EXPIRED, PX_NOTIFY_EVICTED, PX_NOTIFY_STREAM,
                               PX_NOTIFY_MODULE, PX_NOTIFY_NEW};
    char tmp[32];
    size_t n = 0;
    if ((flags & PX_NOTIFY_ALL) == PX_NOTIFY_ALL) tmp[n++] = 'A';
    else
        for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++)
            if (flags & bits[i]) tmp[n++] = letters[i];
    if (flags & PX_NOTIFY_KEYSPACE) tmp[n++] = 'K';
    if (flags & PX_NOTIFY_KEYEVENT) tmp[n++] = 'E';
    if (flags & PX_NOTIFY_KEY_MISS) tmp[n++] = 'm';
    tmp[n] = '\0';
    snprintf(buf, buflen, "%s", tmp);
}

/* Redis's memtoll: 1k = 1000, 1kb = 1024, likewise m/mb and g/gb. */
static int parse_mem(const char *s, long long *out) {
    char *end;
    errno = 0;
    if (!*s || isspace((unsigned char)*s)) return -1;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || v < 0) return -1;
    long long mul = 1;
    if (!*end || !strcasecmp(end, "b")) mul = 1;
    else if (!strcasecmp(end, "k")) mul = 1000;
    else if (!strcasecmp(end, "kb")) mul = 1024;
    else if (!strcasecmp(end, "m")) mul = 1000 * 1000;
    else if (!strcasecmp(end, "mb")) mul = 1024 * 1024;
    else if (!strcasecmp(end, "g")) mul = 1000LL * 1000 * 1000;
    else if (!strcasecmp(end, "gb")) mul = GB;
    else return -1;
    if (v > LLONG_MAX / mul) return -1;
    *out = v * mul;
    return 0;
}

static int set_value(const entry *e, px_settings *s, const char *value, char *err, size_t errlen) {
    const directive *d = e->d;
    char *slot = slot_of(e, s);
    long long v;
    switch (d->type) {
    case T_CONST:
        if (strcmp(value, d->def)) {
            snprintf(err, errlen, "frontdoor keeps '%s' at \"%s\" (durability is set with 'durability')", d->name, d->def);
            return -1;
        }
        return 0;
    case T_INT:
    case T_OCTAL:
    case T_MEM: {
        char *end;
        int bad = d->type == T_MEM ? parse_mem(value, &v)
                : d->type == T_INT ? resp_str2ll(value, strlen(value), &v)
                : (errno = 0, v = strtoll(value, &end, 8), !*value || *end || errno);
        if (bad) {
            snprintf(err, errlen, "argument couldn't be parsed %s", d->type == T_OCTAL ? "as an octal number"
                     : d->type == T_MEM ? "into an integer (units k, kb, m, mb, g, gb allowed)" : "into an integer");
            return -1;
        }
        if (v < d->min || v > d->max) {
            snprintf(err, errlen, d->type == T_OCTAL ? "argument must be between %llo and %llo inclusive"
                                                     : "argument must be between %lld and %lld inclusive", d->min, d->max);
            return -1;
        }
        *(long long *)slot = v;
        return 0;
    }
    case T_DOUBLE: {
        char *end;
        errno = 0;
        double x = strtod(value, &end);
        if (!*value || *end || errno || x != x) { snprintf(err, errlen, "argument couldn't be parsed into a number"); return -1; }
        if (x < (double)d->min || x > (double)d->max) {
            snprintf(err, errlen, "argument must be between %lld and %lld inclusive", d->min, d->max);
            return -1;
        }
        *(double *)slot = x;
        return 0;
    }
    case T_ENUM:
        for (int i = 0; d->enums[i]; i++)
            if (!strcasecmp(d->enums[i], value)) { *(int *)slot = i; return 0; }
        snprintf(err, errlen, "argument must be one of:");
        for (int i = 0; d->enums[i]; i++) {
            size_t l = strlen(err);
            snprintf(err + l, errlen - l, " %s", d->enums[i]);
        }
        return -1;
    case T_NOTIFY: {
        int f = px_notify_parse(value);
        if (f < 0) { snprintf(err, errlen, "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."); return -1; }
        if ((f & (PX_NOTIFY_KEYSPACE | PX_NOTIFY_KEYEVENT)) && (f & ~(PX_NOTIFY_KEYSPACE | PX_NOTIFY_KEYEVENT))) {
            /* a value that delivers events: only where the primary delivers them */
            const fd_backend_ops *o = fd_backend_find(s->be.backend ? s->be.backend : "");
            int missing = f & ~(PX_NOTIFY_KEYSPACE | PX_NOTIFY_KEYEVENT) & ~(o ? o->notify : 0);
            if (missing) {
                char ml[32], ok[32];
                px_notify_format(missing, ml, sizeof ml);
                px_notify_format(o ? o->notify : 0, ok, sizeof ok);
                if (o && o->notify)
                    snprintf(err, errlen, "frontdoor does not deliver keyspace notifications yet on the %s backend "
                             "for the classes '%s': with K or E, only the classes '%s' are accepted "
                             "(docs/notifications.md)", o->name, ml, ok);
                else
                    snprintf(err, errlen, "frontdoor does not deliver keyspace notifications yet on the %s backend: "
                             "only values that deliver nothing (no K/E, or no class) are accepted "
                             "(docs/notifications.md)", o ? o->name : "configured");
                return -1;
            }
        }
        *(long long *)slot = f;
        if (s == &px_cfg) {
            fd_notify_set_classes(f);   /* what the embedded backends raise (storage/host.h) */
            px_backends_notify(f);      /* what a Redis backend fires itself */
        }
        return 0;
    }
    case T_STR: {
        char *copy = strdup(value);
        if (!copy) { snprintf(err, errlen, "out of memory"); return -1; }
        free(*(char **)slot);
        *(char **)slot = copy;
        return 0;
    }
    }
    return -1;
}

static int format_value(const entry *e, const px_settings *s, char *buf, size_t buflen) {
    const char *slot = slot_of(e, (px_settings *)s);
    switch (e->d->type) {
    case T_CONST: return snprintf(buf, buflen, "%s", e->d->def);
    case T_INT:
    case T_MEM: return snprintf(buf, buflen, "%lld", *(const long long *)slot);
    case T_OCTAL: return snprintf(buf, buflen, "%llo", *(const unsigned long long *)slot);
    case T_DOUBLE: return snprintf(buf, buflen, "%g", *(const double *)slot);
    case T_ENUM: return snprintf(buf, buflen, "%s", e->d->enums[*(const int *)slot]);
    case T_NOTIFY: {
        char f[32];
        px_notify_format((int)*(const long long *)slot, f, sizeof f);
        return snprintf(buf, buflen, "%s", f);
    }
    case T_STR: return snprintf(buf, buflen, "%s", *(char *const *)slot);
    }
    return 0;
}

/* The command line given at start-up, kept for px_config_reload. */
static int saved_argc;
static char **saved_argv;

void px_config_init(void) {
    char err[256];
    build_entries();
    for (size_t i = 0; i < nentries; i++)
        if (entries[i].d->type != T_CONST && set_value(&entries[i], &px_cfg, default_of(&entries[i]), err, sizeof err))
            px_fatal("bad default for %s: %s", entries[i].name, err);
    free(px_cfg.config_file);
    px_cfg.config_file = strdup("");
}

int px_config_set(const char *name, const char *value, int runtime, char *err, size_t errlen) {
    const entry *e = find(name);
    if (!e) { snprintf(err, errlen, "unknown directive '%s'", name); return -1; }
    if (runtime && (e->d->flags & F_IMMUTABLE)) { snprintf(err, errlen, "can't set immutable config"); return -1; }
    int rc = set_value(e, &px_cfg, value, err, errlen);
    if (!rc && !strncasecmp(name, "capture-", 8)) rc = px_capture_apply(err, errlen);   /* capture (issue 17) */
    if (!rc && (!strncasecmp(name, "slowlog-", 8) || !strncasecmp(name, "latency-monitor-", 16)))
        px_slowlog_apply();                      /* the core's inline threshold (hooks.h: exec_slow) */
    return rc;
}

int px_config_secret(const char *name, size_t len) {
    build_entries();
    for (size_t i = 0; i < nentries; i++)
        if ((entries[i].d->flags & F_SECRET) && strlen(entries[i].name) == len && !strncasecmp(entries[i].name, name, len))
            return 1;
    return 0;
}

int px_config_format(const char *name, char *buf, size_t buflen) {
    const entry *e = find(name);
    if (!e) return -1;
    format_value(e, &px_cfg, buf, buflen);
    return 0;
}

int px_config_group(const char *name) {
    const entry *e = find(name);
    if (!e) return -1;
    if (e->ab || (e->d->flags & F_AB)) return PX_CFG_AB;
    if (e->d->flags & F_BACKEND) return PX_CFG_PRIMARY;
    if (e->d->flags & F_TLS) return PX_CFG_TLS;
    return PX_CFG_OTHER;
}

void px_config_get_reply(resp_out *o, int npat, resp_arg *pats) {
    build_entries();
    const entry *hit[NENTRIES_MAX + NALIASES];
    const char *hname[NENTRIES_MAX + NALIASES];
    size_t n = 0;
    for (size_t i = 0; i < nentries + NALIASES; i++) {
        const char *name = i < nentries ? entries[i].name : aliases[i - nentries].alias;
        for (int p = 0; p < npat; p++)
            if (resp_glob_match(pats[p].ptr, pats[p].len, name, strlen(name), 1)) {
                hit[n] = i < nentries ? &entries[i] : find_row(aliases[i - nentries].name);
                hname[n++] = name;
                break;
            }
    }
    resp_add_map(o, (long long)n);
    for (size_t i = 0; i < n; i++) {
        char buf[4096];
        int l = format_value(hit[i], &px_cfg, buf, sizeof buf);
        resp_add_bulk_cstr(o, hname[i]);
        resp_add_bulk(o, buf, (size_t)l < sizeof buf ? (size_t)l : sizeof buf - 1);
    }
}

/* ------------------------------------------------- copies, reload, rewrite */

static void copy_strings(px_settings *dst, const px_settings *src, int dup) {
    for (size_t i = 0; i < nentries; i++) {
        if (entries[i].d->type != T_STR) continue;
        char **d = (char **)slot_of(&entries[i], dst);
        char *const *s = (char *const *)slot_of(&entries[i], (px_settings *)src);
        *d = dup ? strdup(*s ? *s : "") : NULL;
    }
}

void px_settings_copy(px_settings *dst, const px_settings *src) {
    build_entries();
    *dst = *src;
    copy_strings(dst, src, 1);
    dst->config_file = strdup(src->config_file ? src->config_file : "");
}

void px_settings_free(px_settings *s) {
    for (size_t i = 0; i < nentries; i++)
        if (entries[i].d->type == T_STR) {
            char **p = (char **)slot_of(&entries[i], s);
            free(*p);
            *p = NULL;
        }
    free(s->config_file);
    s->config_file = NULL;
}

void px_backend_settings_assign(px_backend_settings *dst, const px_backend_settings *src) {
    build_entries();
    px_settings d = {0}, o = {0};
    d.be = *dst;
    o.be = *src;
    for (size_t i = 0; i < nentries; i++) {
        const entry *e = &entries[i];
        if (!(e->d->flags & F_BACKEND) || e->ab || e->d->type != T_STR) continue;
        char **slot = (char **)slot_of(e, &d);
        free(*slot);
        *slot = strdup(*(char *const *)slot_of(e, &o));
        *(char **)slot_of(e, &o) = *slot;       /* o.be is copied back whole below */
    }
    *dst = o.be;
}

int px_backend_settings_equal(const px_backend_settings *a, const px_backend_settings *b) {
    px_settings x = {0}, y = {0};
    x.be = *a;
    y.be = *b;
    build_entries();
    for (size_t i = 0; i < nentries; i++) {
        const entry *e = &entries[i];
        if (!(e->d->flags & F_BACKEND) || e->ab) continue;
        char va[4096], vb[4096];
        format_value(e, &x, va, sizeof va);
        format_value(e, &y, vb, sizeof vb);
        if (strcmp(va, vb)) return 0;
    }
    return 1;
}

/* Split a config line into words, redis.conf style: blanks separate words,
 * "double quotes" take \n \r \t \" \\ \xHH escapes, 'single quotes' take \'.
 * Words are written back into line (NUL-terminated in place). Returns the
 * word count, or -1 on unbalanced quotes. */
static int split_line(char *line, char **words, int max) {
    int n = 0;
    char *r = line, *w;
    for (;;) {
        while (*r && isspace((unsigned char)*r)) r++;
        if (!*r) return n;
        if (n == max) return -1;
        words[n++] = w = r;
        int inq = 0, insq = 0;
        for (;;) {
            if (inq) {
                if (!*r) return -1;
                if (r[0] == '\\' && r[1] == 'x' && isxdigit((unsigned char)r[2]) && isxdigit((unsigned char)r[3])) {
                    char hex[3] = {r[2], r[3], 0};
                    *w++ = (char)strtol(hex, NULL, 16);
                    r += 4;
                } else if (r[0] == '\\' && r[1]) {
                    char c = r[1];
                    *w++ = c == 'n' ? '\n' : c == 'r' ? '\r' : c == 't' ? '\t' : c == 'b' ? '\b' : c == 'a' ? '\a' : c;
                    r += 2;
                } else if (*r == '"') {
                    r++;
                    if (*r && !isspace((unsigned char)*r)) return -1;
                    break;
                } else *w++ = *r++;
            } else if (insq) {
                if (!*r) return -1;
                if (r[0] == '\\' && r[1] == '\'') { *w++ = '\''; r += 2; }
                else if (*r == '\'') {
                    r++;
                    if (*r && !isspace((unsigned char)*r)) return -1;
                    break;
                } else *w++ = *r++;
            } else if (!*r || isspace((unsigned char)*r)) {
                break;
            } else if (*r == '"') { inq = 1; r++; }
            else if (*r == '\'') { insq = 1; r++; }
            else *w++ = *r++;
        }
        char *next = *r ? r + 1 : r;
        *w = '\0';
        r = next;
    }
}

/* Join words[from..to) with single spaces into buf (redis-server does this
 * for "--save 900 1" style multi-word values). */
static void join_words(char **words, int from, int to, char *buf, size_t buflen) {
    buf[0] = '\0';
    for (int i = from; i < to; i++) {
        size_t l = strlen(buf);
        snprintf(buf + l, buflen - l, "%s%s", i > from ? " " : "", words[i]);
    }
}

static int apply_words(char **words, int n, char *err, size_t errlen, int depth);

static int load_file_depth(const char *path, char *err, size_t errlen, int depth) {
    if (depth > 4) { snprintf(err, errlen, "%s: config files include each other too deeply", path); return -1; }
    FILE *f = fopen(path, "r");
    if (!f) { snprintf(err, errlen, "can't open config file '%s': %s", path, strerror(errno)); return -1; }
    char line[8192];
    int lineno = 0, rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        size_t l = strlen(line);
        if (l == sizeof line - 1 && line[l - 1] != '\n') {
            snprintf(err, errlen, "%s:%d: line too long", path, lineno);
            rc = -1;
            break;
        }
        char *p = line;
        while (isspace((unsigned char)*p)) p++;
        if (*p == '#' || *p == '\0') continue;
        char orig[256];
        snprintf(orig, sizeof orig, "%.*s", (int)strcspn(p, "\r\n"), p);
        char *words[64];
        int n = split_line(p, words, 64);
        if (n < 0) {
            snprintf(err, errlen, "%s:%d: '%s': unbalanced quotes", path, lineno, orig);
            rc = -1;
            break;
        }
        char e2[512];
        if (n > 0 && apply_words(words, n, e2, sizeof e2, depth)) {
            snprintf(err, errlen, "%s:%d: '%s': %s", path, lineno, orig, e2);
            rc = -1;
            break;
        }
    }
    fclose(f);
    if (!rc && !px_cfg.config_file[0]) {
        char *abs = realpath(path, NULL);
        if (abs) { free(px_cfg.config_file); px_cfg.config_file = abs; }
    }
    return rc;
}

int px_config_load_file(const char *path, char *err, size_t errlen) {
    return load_file_depth(path, err, errlen, 0);
}

static int apply_words(char **words, int n, char *err, size_t errlen, int depth) {
    if (!strcasecmp(words[0], "include") || !strcasecmp(words[0], "config")) {
        if (n != 2) { snprintf(err, errlen, "'%s' takes one file name", words[0]); return -1; }
        return load_file_depth(words[1], err, errlen, depth + 1);
    }
    if (!strcasecmp(words[0], "user")) return px_acl_config_user(n - 1, words + 1, err, errlen);   /* acl.h */
    if (!find(words[0])) { snprintf(err, errlen, "unknown directive '%s'", words[0]); return -1; }
    if (n < 2) { snprintf(err, errlen, "directive '%s' needs a value", words[0]); return -1; }
    char value[4096], e2[256];
    join_words(words, 1, n, value, sizeof value);
    if (px_config_set(words[0], value, 0, e2, sizeof e2)) {
        snprintf(err, errlen, "bad value for '%s': %s", words[0], e2);
        return -1;
    }
    return 0;
}

int px_config_from_args(int argc, char **argv, char *err, size_t errlen) {
    saved_argc = argc;
    saved_argv = argv;
    int i = 1;
    if (i < argc && strncmp(argv[i], "--", 2) != 0) {
        if (px_config_load_file(argv[i], err, errlen)) return -1;
        i++;
    }
    while (i < argc) {
        if (strncmp(argv[i], "--", 2) != 0 || !argv[i][2]) {
            snprintf(err, errlen, "unexpected argument '%s' (directives are given as --name value)", argv[i]);
            return -1;
        }
        int j = i + 1;
        while (j < argc && strncmp(argv[j], "--", 2) != 0) j++;
        char *words[64];
        int n = 0;
        words[n++] = argv[i] + 2;
        for (int k = i + 1; k < j && n < 64; k++) words[n++] = argv[k];
        if (n == 1 && j < argc && !strcmp(argv[j], "--")) {} /* no value */
        char e2[512];
        if (apply_words(words, n, e2, sizeof e2, 0)) {
            snprintf(err, errlen, "command line --%s: %s", argv[i] + 2, e2);
            return -1;
        }
        i = j;
    }
    return 0;
}

int px_config_reload(char *err, size_t errlen) {
    if (!saved_argv) { snprintf(err, errlen, "no command line to reload"); return -1; }
    px_settings old;
    px_settings_copy(&old, &px_cfg);
    px_settings_free(&px_cfg);
    memset(&px_cfg, 0, sizeof px_cfg);
    px_config_init();
    char e2[1024];
    if (px_config_from_args(saved_argc, saved_argv, e2, sizeof e2)) {
        snprintf(err, errlen, "%s", e2);
        px_settings_free(&px_cfg);
        px_cfg = old;
        px_slowlog_apply();
        fd_notify_set_classes((int)px_cfg.notify_keyspace_events);
        return -1;
    }
    /* what cannot change while running keeps its running value */
    for (size_t i = 0; i < nentries; i++) {
        const entry *e = &entries[i];
        if (!(e->d->flags & F_IMMUTABLE) || e->d->type == T_CONST) continue;
        char now[4096], was[4096];
        format_value(e, &px_cfg, now, sizeof now);
        format_value(e, &old, was, sizeof was);
        if (strcmp(now, was)) {
            px_log(PX_LOG_WARNING, "reload: '%s' changes only with a restart; keeping \"%s\"", e->name, was);
            set_value(e, &px_cfg, was, e2, sizeof e2);
        }
    }
    px_settings_free(&old);
    px_slowlog_apply();                          /* defaults came back without px_config_set */
    return 0;
}

/* Name of the directive a config line sets ("" if none), lower-cased. */
static void line_directive(const char *line, char *name, size_t len) {
    while (isspace((unsigned char)*line)) line++;
    size_t n = 0;
    if (*line != '#')
        while (line[n] && !isspace((unsigned char)line[n]) && n + 1 < len) { name[n] = (char)tolower((unsigned char)line[n]); n++; }
    name[n] = '\0';
}

/* "name value" with the value quoted when it needs to be. */
static void directive_line(const entry *e, char *out, size_t len) {
    char v[4096], q[8200];
    format_value(e, &px_cfg, v, sizeof v);
    size_t n = 0;
    q[n++] = '"';
    for (const char *p = v; *p && n < sizeof q - 6; p++) {
        unsigned char ch = (unsigned char)*p;
        if (ch == '"' || ch == '\\') { q[n++] = '\\'; q[n++] = (char)ch; }
        else if (ch < 32 || ch > 126) n += (size_t)snprintf(q + n, sizeof q - n, "\\x%02x", ch);
        else q[n++] = (char)ch;
    }
    q[n++] = '"';
    q[n] = '\0';
    snprintf(out, len, "%s %s\n", e->name, q);
}

int px_config_rewrite(char *err, size_t errlen) {
    if (!px_cfg.config_file || !px_cfg.config_file[0]) {
        snprintf(err, errlen, "The server is running without a config file");
        return -1;
    }
    build_entries();
    FILE *in = fopen(px_cfg.config_file, "r");
    if (!in) { snprintf(err, errlen, "Rewriting config file: %s", strerror(errno)); return -1; }
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp-%d", px_cfg.config_file, (int)getpid());
    FILE *out = fopen(tmp, "w");
    if (!out) { fclose(in); snprintf(err, errlen, "Rewriting config file: %s", strerror(errno)); return -1; }
    char written[NENTRIES_MAX] = {0};
    char line[8192], name[64], buf[8400];
    while (fgets(line, sizeof line, in)) {
        line_directive(line, name, sizeof name);
        const entry *e = name[0] ? find(name) : NULL;
        if (!e || e->d->type == T_CONST) { fputs(line, out); continue; }
        size_t idx = (size_t)(e - entries);
        if (written[idx]) continue;            /* later duplicates: the first line holds the value */
        written[idx] = 1;
        directive_line(e, buf, sizeof buf);
        fputs(buf, out);
    }
    fclose(in);
    int header = 0;
    for (size_t i = 0; i < nentries; i++) {
        const entry *e = &entries[i];
        if (written[i] || e->d->type == T_CONST) continue;
        char v[4096];
        format_value(e, &px_cfg, v, sizeof v);
        if (!strcmp(v, default_of(e))) continue;
        if (e->d->type == T_MEM || e->d->type == T_INT || e->d->type == T_OCTAL || e->d->type == T_DOUBLE || e->d->type == T_ENUM || e->d->type == T_NOTIFY) {
            /* compare as values: "64mb" and 67108864 are the same default */
            px_settings dflt = {0};
            char e2[256], dv[4096];
            if (set_value(e, &dflt, default_of(e), e2, sizeof e2) == 0) {
                format_value(e, &dflt, dv, sizeof dv);
                if (!strcmp(v, dv)) continue;
            }
        }
        if (!header++) fputs("# Generated by CONFIG REWRITE\n", out);
        directive_line(e, buf, sizeof buf);
        fputs(buf, out);
    }
    int bad = ferror(out) | (fflush(out) != 0) | (fsync(fileno(out)) != 0);
    bad |= fclose(out) != 0;
    if (bad || rename(tmp, px_cfg.config_file)) {
        snprintf(err, errlen, "Rewriting config file: %s", strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}
