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

typedef struct px_settings {
    long long port;
    char     *bind;
    char     *unixsocket;
    long long unixsocketperm;
    char     *backend;
    char     *dir;
    int       durability;            /* 1 = sync, 0 = nosync */
    long long lmdb_map_size;
    long long leveldb_block_cache_size;
    long long leveldb_write_buffer_size;
    int       leveldb_compression;   /* 0 snappy, 1 none (FD_LEVELDB_*) */
    long long leveldb_max_open_files;
    char     *redis_address;         /* redis backend: host:port or unix socket path */
    long long redis_pool_size;
    char     *redis_password;
    long long redis_db;
    char     *redis_cluster_seeds;   /* redis-cluster backend: host:port[,host:port...] */
    long long backend_timeout;       /* ms: a network backend's request fails after this */
    char     *mongo_uri;             /* mongodb backend */
    char     *mongo_database;
    long long mongo_workers;         /* 0 = number of cores */
    char     *mongo_w;
    int       mongo_j;               /* FD_MONGO_J_*: auto, yes, no */
    long long mongo_wtimeout;
    char     *requirepass;
    long long maxclients;
    long long timeout;               /* seconds; 0 = never close idle clients */
    long long proto_max_bulk_len;
    long long client_query_buffer_limit;
    long long client_output_buffer_limit;
    long long tcp_backlog;
    int       loglevel;              /* 0 debug, 1 verbose, 2 notice, 3 warning */
    char     *logfile;               /* "" = stderr */
    char     *pidfile;
    long long hz;
    char     *config_file;           /* absolute path of the file loaded, or "" */
} px_settings;

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

#endif
