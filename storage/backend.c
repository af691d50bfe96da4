/* backend.c — the table of compiled-in backends (fd_backend_find/names). */
#include <stdio.h>
#include <stdlib.h>
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
extern const fd_backend_ops fd_mongodb_backend;  /* storage/mongodb/mg_backend.c */
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

const char FD_SERVED[] = "served";

const fd_backend_ops *const *fd_backend_list(void) { return fd_backends; }

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

char *fd_backend_coverage_markdown(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    const fd_backend_ops *const *bs = fd_backend_list();
    fprintf(f, "| command | group |");
    for (size_t i = 0; bs[i]; i++) fprintf(f, " %s |", bs[i]->name);
    fprintf(f, "\n|---|---|");
    for (size_t i = 0; bs[i]; i++) fprintf(f, "---|");
    fprintf(f, "\n");
    size_t n;
    const fd_command *t = fd_commands_table(&n);
    for (size_t c = 0; c < n; c++) {
        fprintf(f, "| %s | %s |", t[c].name, t[c].group);
        for (size_t i = 0; bs[i]; i++) {
            const char *why = t[c].family == FD_FAM_PROXY ? "proxy" : bs[i]->support(&t[c]);
            if (why == FD_SERVED) fprintf(f, " yes |");
            else if (!why) fprintf(f, " **missing** |");
            else if (t[c].family == FD_FAM_PROXY) fprintf(f, " (proxy) |");
            else fprintf(f, " no: %s |", why);
        }
        fprintf(f, "\n");
    }
    fclose(f);
    return buf;
}

void fd_reply_unsupported(resp_out *out, const char *name, const char *backend, const char *why) {
    resp_add_errorf(out, "ERR '%s' is not supported by frontdoor's %s backend%s%s", name, backend,
                    why ? ": " : "", why ? why : "");
}
