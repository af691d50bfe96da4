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
} fd_mongo_settings;
enum { FD_MONGO_J_AUTO = 0, FD_MONGO_J_YES = 1, FD_MONGO_J_NO = 2 };   /* j; auto: j:true when durability sync */

extern const fd_option_set fd_mongo_options;

#endif
