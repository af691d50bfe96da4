/* config.h — frontdoor's settings: one table of directives serves the config
 * file (redis.conf style), `--name value` on the command line, and
 * CONFIG GET / CONFIG SET at runtime.
 *
 * Module prefix: px_config_. Strings in px_cfg are owned by the config module.
 */
#ifndef FRONTDOOR_CONFIG_H
#define FRONTDOOR_CONFIG_H

#include <stddef.h>
#include "../protocol/resp.h"
#include "../storage/option.h"

/* Everything that says how to open one backend. The running setup has two:
 * px_cfg.be (the primary, directives "backend", "dir", and the rows each backend registers: storage/option.h)
 * and px_cfg.ab (the A/B secondary: the same directives prefixed "ab-", and
 * "ab-secondary" for its backend name). Changing a group at runtime reopens
 * that backend (proxy/backends.c). */
/* notify-keyspace-events classes: Redis 7.0's NOTIFY_* bits (notify.c), so
 * the parsing and CONFIG GET's canonical form are Redis's. "A" is every type
 * class g$lshzxetd (not m, not n). No event is delivered yet: a value that
 * would deliver one (K or E with a class) is refused (docs/notifications.md). */
enum {
    PX_NOTIFY_KEYSPACE = 1 << 0,  /* K */
    PX_NOTIFY_KEYEVENT = 1 << 1,  /* E */
    PX_NOTIFY_GENERIC  = 1 << 2,  /* g */
    PX_NOTIFY_STRING   = 1 << 3,  /* $ */
    PX_NOTIFY_LIST     = 1 << 4,  /* l */
    PX_NOTIFY_SET      = 1 << 5,  /* s */
    PX_NOTIFY_HASH     = 1 << 6,  /* h */
    PX_NOTIFY_ZSET     = 1 << 7,  /* z */
    PX_NOTIFY_EXPIRED  = 1 << 8,  /* x */
    PX_NOTIFY_EVICTED  = 1 << 9,  /* e */
    PX_NOTIFY_STREAM   = 1 << 10, /* t */
    PX_NOTIFY_KEY_MISS = 1 << 11, /* m */
    PX_NOTIFY_LOADED   = 1 << 12, /* module only, no letter */
    PX_NOTIFY_MODULE   = 1 << 13, /* d */
    PX_NOTIFY_NEW      = 1 << 14, /* n */
    PX_NOTIFY_ALL = PX_NOTIFY_GENERIC | PX_NOTIFY_STRING | PX_NOTIFY_LIST | PX_NOTIFY_SET | PX_NOTIFY_HASH |
                    PX_NOTIFY_ZSET | PX_NOTIFY_EXPIRED | PX_NOTIFY_EVICTED | PX_NOTIFY_STREAM | PX_NOTIFY_MODULE,
};

/* Redis's keyspaceEventsStringToFlags: the bits of `classes`, or -1 on a
 * character that is no class. */
int px_notify_parse(const char *classes);
/* Redis's keyspaceEventsFlagsToString into buf (at least 16 bytes): "A" for
 * every type class, then K, E, m; NUL-terminated. */
void px_notify_format(int flags, char *buf, size_t buflen);

typedef struct px_backend_settings {
    char     *backend;               /* "" = none (the secondary's default) */
    char     *dir;
    int       durability;            /* 1 = sync, 0 = nosync */
    long long backend_timeout;       /* ms: a network backend's request fails after this */
    /* the registered backends' own settings (storage/option.h), one struct
     * per option set, laid out by config.c: px_backend_options() */
    _Alignas(16) unsigned char options[FD_OPTION_SETS_MAX][FD_OPTION_SET_BYTES];
} px_backend_settings;

/* The settings struct of `set` (a backend's ops->options) in bs, as the
 * backend's open() takes it; NULL when set is NULL or not registered. */
const void *px_backend_options(const px_backend_settings *bs, const fd_option_set *set);

enum { PX_AB_OFF = 0, PX_AB_SPLIT = 1, PX_AB_MIRROR = 2 };      /* ab_mode */
enum { PX_AB_BY_KEY = 0, PX_AB_BY_CLIENT = 1 };                 /* ab_split_by */
enum { PX_AB_LOG_COUNT = 0, PX_AB_LOG_REPLY = 1, PX_AB_LOG_DIFF = 2 };  /* ab_mismatch_log */
enum { PX_AB_ORDER_DISPATCH = 0, PX_AB_ORDER_PRIMARY = 1 };  /* ab_mirror_order (proxy/ab.h) */

typedef struct px_settings {
    long long port;
    char     *bind;
    char     *unixsocket;
    long long unixsocketperm;
    px_backend_settings be;          /* the primary backend */
    px_backend_settings ab;          /* the A/B secondary ("ab-" directives) */
    int       ab_mode;               /* PX_AB_* */
    double    ab_split_fraction;     /* split: share of keys (or clients) sent to the secondary */
    int       ab_split_by;           /* PX_AB_BY_* */
    int       ab_mirror_writes;      /* mirror: 1 = writes too, 0 = reads only */
    long long ab_mirror_queue;       /* mirror: copies in flight to the secondary before drops */
    char     *ab_log_file;           /* mismatches appended here ("" = none) */
    int       ab_mirror_reads;       /* mirror: 0 = writes only */
    double    ab_mirror_sample;      /* mirror: share of keys mirrored (by key hash; keyless: all) */
    int       ab_mismatch_log;       /* PX_AB_LOG_*: count only, keep both replies, or with the key's diff */
    char     *migrate_state_file;    /* FRONTDOOR MIGRATE's progress ("" = <dir>.migrate-state; proxy/migrate.h) */
    long long metrics_port;          /* Prometheus endpoint (proxy/metrics.h); 0 = off */
    int       metrics_tls;           /* the endpoint speaks TLS (the clients' context, proxy/tls.h) */
    long long ab_stop_after;         /* mirror: stop after this many divergences (0 = never) */
    int       ab_mirror_order;       /* PX_AB_ORDER_*: when a copy on a key with primary writes in flight is sent */
    char     *requirepass;
    char     *aclfile;               /* ACL users' file (proxy/acl.h; "" = none) */
    long long acllog_max_len;        /* ACL LOG entries kept */
    long long maxclients;
    long long timeout;               /* seconds; 0 = never close idle clients */
    long long proto_max_bulk_len;
    long long max_reply_bytes;      /* max-reply-bytes: a reply known to exceed it is refused (cmdargs.h fd_reply_floor) */
    long long client_query_buffer_limit;
    long long client_output_buffer_limit;
    long long pubsub_output_buffer_limit;  /* a subscriber's unsent messages (0 = no limit) */
    long long tcp_backlog;
    int       loglevel;              /* 0 debug, 1 verbose, 2 notice, 3 warning */
    char     *logfile;               /* "" = stderr */
    char     *pidfile;
    long long hz;
    long long busy_reply_threshold;  /* ms a script runs before others get -BUSY (0 = never) */
    char     *config_file;           /* absolute path of the file loaded, or "" */
    /* capture (issue 17, proxy/capture.h) */
    char     *capture_file;          /* "" = off */
    long long capture_max_size;      /* bytes; 0 = no cap */
    double    capture_sample;        /* share of clients recorded */
    /* proxy/slowlog.h */
    long long slowlog_log_slower_than;   /* µs; -1 = off, 0 = every command */
    long long slowlog_max_len;
    long long tracking_table_max_keys;   /* proxy/tracking.h: keys in the tracking table (0 = no limit) */
    long long latency_monitor_threshold; /* ms; 0 = off */
    long long notify_keyspace_events;    /* PX_NOTIFY_* bits (docs/notifications.md); 0 = off */
    int       capture_hash;          /* 1 = keys and values hashed */
    /* TLS for clients (proxy/tls.h) */
    long long tls_port;              /* 0 = no TLS listener */
    char     *tls_cert_file, *tls_key_file, *tls_key_file_pass;
    char     *tls_ca_cert_file, *tls_ca_cert_dir;
    int       tls_auth_clients;      /* PX_TLS_AUTH_*: no, yes, optional */
    char     *tls_protocols;         /* "" = TLSv1.2 TLSv1.3 */
    char     *tls_ciphers, *tls_ciphersuites;   /* "" = OpenSSL's defaults */
    int       tls_prefer_server_ciphers;
    int       tls_session_caching;
    long long tls_session_cache_size, tls_session_cache_timeout;   /* entries, seconds */
    long long tls_handshake_timeout; /* ms a client has to finish its handshake */
} px_settings;
enum { PX_TLS_AUTH_NO = 0, PX_TLS_AUTH_YES = 1, PX_TLS_AUTH_OPTIONAL = 2 };

extern px_settings px_cfg;

/* Set defaults. Must be called once before anything else. */
void px_config_init(void);

/* Parse argv as redis-server does: an optional first argument that does not
 * start with "--" is a config file; "--config FILE" loads a file too;
 * "--name value..." sets a directive (words up to the next "--name" are the
 * value). Returns 0, or -1 with a message naming the directive (and file
 * line) in err. */
int px_config_from_args(int argc, char **argv, char *err, size_t errlen);

/* Load a redis.conf-style file: "directive value" lines, quoted values,
 * '#' comments. 0, or -1 with "FILE:LINE: ..." in err. */
int px_config_load_file(const char *path, char *err, size_t errlen);

/* Set one directive from text, as the file/command line/CONFIG SET do.
 * runtime != 0 refuses directives that cannot change while running.
 * 0, or -1 with the reason in err (without the directive name). */
int px_config_set(const char *name, const char *value, int runtime, char *err, size_t errlen);

/* CONFIG GET: append (name, value) pairs of every directive matching any of
 * the glob patterns, as a map. */
void px_config_get_reply(resp_out *o, int npat, resp_arg *pats);

/* Current value of a directive as text (into buf). -1 if unknown. */
int px_config_format(const char *name, char *buf, size_t buflen);
/* 1 when the directive name[0..len) (any case, "ab-" twins included) is a
 * credential (requirepass, a backend row with FD_OPT_SECRET): the slow log
 * hides its CONFIG SET value as Redis does. */
int px_config_secret(const char *name, size_t len);

/* Which running part a directive belongs to: changing a PX_CFG_PRIMARY one
 * at runtime reopens the primary backend, a PX_CFG_AB one the A/B setup,
 * a PX_CFG_TLS one rebuilds the clients' TLS context (proxy/tls.h).
 * -1 if unknown. */
enum { PX_CFG_OTHER = 0, PX_CFG_PRIMARY = 1, PX_CFG_AB = 2, PX_CFG_TLS = 3 };
int px_config_group(const char *name);

/* Deep copies of the settings (strings duplicated), for rollback. */
void px_settings_copy(px_settings *dst, const px_settings *src);
void px_settings_free(px_settings *s);
/* dst = a deep copy of src (dst's own strings are freed first). */
void px_backend_settings_assign(px_backend_settings *dst, const px_backend_settings *src);
/* 1 if the two backend groups would open the same backend the same way. */
int  px_backend_settings_equal(const px_backend_settings *a, const px_backend_settings *b);

/* SIGHUP: read the command line given at start-up (and so its config file)
 * again, from defaults. Directives that cannot change while running keep
 * their running value (logged). On error px_cfg is left as it was. */
int px_config_reload(char *err, size_t errlen);

/* CONFIG REWRITE: rewrite the config file loaded at start-up with the
 * running values (lines kept in place, comments kept, directives that differ
 * from their defaults and were missing appended). -1 with err. */
int px_config_rewrite(char *err, size_t errlen);

#endif
