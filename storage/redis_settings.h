/* redis_settings.h — the settings the redis and redis-cluster backends share
 * (one option set, rows in storage/redis_conn.c; option.h). */
#ifndef FRONTDOOR_REDIS_SETTINGS_H
#define FRONTDOOR_REDIS_SETTINGS_H

#include "option.h"

typedef struct fd_redis_settings {
    char     *address;              /* redis-address: "host:port" or a unix socket path (redis) */
    char     *cluster_seeds;        /* redis-cluster-seeds: "host:port[,host:port...]" (redis-cluster) */
    long long pool_size;            /* redis-pool-size: backend connections */
    int       pool_affinity;        /* redis-pool-affinity: FD_REDIS_AFFINITY_KEY (a command goes to its
                                     * first key's connection) or _CLIENT (to its client's): storage/redis.c */
    long long blocking_pool_size;   /* redis-blocking-pool-size: connections lent to blocked clients (BLPOP...) */
    char     *password;             /* redis-password: AUTH on connect ("" = none) */
    char     *user;                 /* redis-user: with password, AUTH user password ("" = the default user) */
    long long db;                   /* redis-db: SELECT on connect */
    int       tls;                  /* redis-tls: TLS to the servers (redis_conn.h rc_shared_tls) */
    char     *tls_ca_cert_file, *tls_cert_file, *tls_key_file;
    char     *tls_sni;              /* SNI and the certificate's expected name ("" = not checked) */
} fd_redis_settings;

enum { FD_REDIS_AFFINITY_KEY = 0, FD_REDIS_AFFINITY_CLIENT = 1 };   /* pool_affinity */

extern const fd_option_set fd_redis_options;

#endif
