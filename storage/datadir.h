/* datadir.h — the data folder of the embedded backends (storage/lmdb.c,
 * storage/leveldb.c): its name, its creation and its lock, with the same
 * messages whatever the engine. Module prefix: fd_datadir_. */
#ifndef FRONTDOOR_DATADIR_H
#define FRONTDOOR_DATADIR_H

#include <stddef.h>
#include "backend.h"

/* cfg->dir, or "frontdoor-data" when unset or empty. */
const char *fd_datadir_name(const fd_backend_config *cfg);

/* mkdir -p dir. FD_OK, or FD_E_IO with the reason in err. */
int fd_datadir_create(const char *dir, char *err, size_t errlen);

/* Take dir/frontdoor.lock (flock, exclusive, non-blocking): a second process
 * on the same folder is refused up front. FD_OK with the open descriptor in
 * *lockfd (the caller closes it), or FD_E_IO with the reason in err. */
int fd_datadir_lock(const char *dir, int *lockfd, char *err, size_t errlen);

#endif
