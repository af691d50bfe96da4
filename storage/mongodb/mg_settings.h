/* mg_settings.h — the MongoDB backend's settings (rows in mg_backend.c; ../option.h). */
#ifndef FRONTDOOR_MG_SETTINGS_H
#define FRONTDOOR_MG_SETTINGS_H

#include "../option.h"

typedef struct fd_mongo_settings {
    char     *uri;            /* mongo-uri: passed to libmongoc as is */
    char     *database;       /* mongo-database */
    long long workers;        /* mongo-workers: 0 = number of cores */
    char     *w;              /* mongo-w: write concern w: "" (URI/server default), a number, "majority" or a tag */
    int       j;              /* mongo-j: FD_MONGO_J_* */
    long long wtimeout_ms;    /* mongo-wtimeout: 0 = none */
    long long big_threshold;  /* mongo-big-threshold: a collection of more members: one document each (0 = 1000) */
    /* TLS without a URI (docs/tls.md): mapped to libmongoc's mongoc_ssl_opt_t; a
     * directive that is set wins over the URI's matching tls* option */
    int       tls;                    /* mongo-tls: FD_MONGO_NO/YES; yes = the URI's tls=true */
    char     *tls_ca_file;            /* mongo-tls-ca-cert-file: ca_file ("" = the URI's / system CAs) */
    char     *tls_pem_file;           /* mongo-tls-certificate-key-file: pem_file, certificate + key in one PEM */
    char     *tls_pem_pwd;            /* mongo-tls-certificate-key-file-password: pem_pwd (a secret) */
    int       tls_allow_invalid_hostnames;     /* mongo-tls-allow-invalid-hostnames: allow_invalid_hostname */
    int       tls_allow_invalid_certificates;  /* mongo-tls-allow-invalid-certificates: weak_cert_validation */
} fd_mongo_settings;
enum { FD_MONGO_J_AUTO = 0, FD_MONGO_J_YES = 1, FD_MONGO_J_NO = 2 };   /* j; auto: j:true when durability sync */
enum { FD_MONGO_NO = 0, FD_MONGO_YES = 1 };                           /* the yes/no rows */

extern const fd_option_set fd_mongo_options;

#endif
