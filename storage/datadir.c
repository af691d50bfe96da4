/* datadir.c — the data folder of the embedded backends: see datadir.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "datadir.h"

const char *fd_datadir_name(const fd_backend_config *cfg)
{
    return cfg->dir && *cfg->dir ? cfg->dir : "frontdoor-data";
}

/* mkdir -p; 0 or -1 with errno. */
static int mkdirs(const char *dir)
{
    char path[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof path) { errno = ENAMETOOLONG; return -1; }
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] == '/' || path[i] == '\0') {
            char ch = path[i];
            path[i] = '\0';
            if (mkdir(path, 0755) != 0 && errno != EEXIST) return -1;
            path[i] = ch;
        }
    }
    struct stat sb;
    if (stat(dir, &sb) != 0) return -1;
    if (!S_ISDIR(sb.st_mode)) { errno = ENOTDIR; return -1; }
    return 0;
}

int fd_datadir_create(const char *dir, char *err, size_t errlen)
{
    if (mkdirs(dir) == 0) return FD_OK;
    snprintf(err, errlen, "cannot create the data folder '%s': %s", dir, strerror(errno));
    return FD_E_IO;
}

int fd_datadir_lock(const char *dir, int *lockfd, char *err, size_t errlen)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/frontdoor.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create '%s': %s", path, strerror(errno));
        return FD_E_IO;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        snprintf(err, errlen, "the data folder '%s' is in use by another process", dir);
        close(fd);
        return FD_E_IO;
    }
    *lockfd = fd;
    return FD_OK;
}
