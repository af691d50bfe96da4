/* backend.c — the table of compiled-in backends (fd_backend_find/names). */
#include <string.h>
#include "backend.h"

#ifdef FRONTDOOR_WITH_LMDB
extern const fd_backend_ops fd_lmdb_backend;     /* storage/lmdb.c */
#endif
#ifdef FRONTDOOR_WITH_LEVELDB
extern const fd_backend_ops fd_leveldb_backend;  /* storage/leveldb.c */
#endif
#ifdef FRONTDOOR_WITH_REDIS
extern const fd_backend_ops fd_redis_backend;    /* storage/redis.c */
extern const fd_backend_ops fd_redis_cluster_backend;   /* storage/redis_cluster.c */
#endif
#ifdef FRONTDOOR_WITH_MONGODB
extern const fd_backend_ops fd_mongodb_backend;  /* storage/mongodb.c */
#endif

static const fd_backend_ops *const fd_backends[] = {
#ifdef FRONTDOOR_WITH_LMDB
    &fd_lmdb_backend,
#endif
#ifdef FRONTDOOR_WITH_LEVELDB
    &fd_leveldb_backend,
#endif
#ifdef FRONTDOOR_WITH_REDIS
    &fd_redis_backend,
    &fd_redis_cluster_backend,
#endif
#ifdef FRONTDOOR_WITH_MONGODB
    &fd_mongodb_backend,
#endif
    NULL
};

const fd_backend_ops *fd_backend_find(const char *name)
{
    if (!name) return NULL;
    for (size_t i = 0; fd_backends[i]; i++)
        if (strcmp(fd_backends[i]->name, name) == 0) return fd_backends[i];
    return NULL;
}

const char *fd_backend_names(void)
{
    static char names[256];
    if (!names[0]) {
        size_t n = 0;
        for (size_t i = 0; fd_backends[i]; i++) {
            size_t l = strlen(fd_backends[i]->name);
            if (n + l + 3 > sizeof names) break;
            if (n) { names[n++] = ','; names[n++] = ' '; }
            memcpy(names + n, fd_backends[i]->name, l);
            n += l;
        }
        names[n] = '\0';
    }
    return names;
}
