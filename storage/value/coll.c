/* coll.c — the command bodies hashes and sets share over fd_coll_io
 * (see coll.h). */
#include "coll.h"
#include "../status.h"
#include "../host.h"

int fd_coll_remove(const fd_coll_io *io, void *h, int argc, const resp_arg *argv, int cls, const char *event,
                   resp_out *out)
{
    fd_coll_hk hk;
    int exists, s = io->open(h, &argv[1], FD_COLL_AS_CMD, 2, 1, &hk, &exists);
    long long n = 0;
    for (int j = 2; j < argc && s == FD_OK && exists; j++) {
        int r = 0;
        s = io->del(h, &hk, argv[j].ptr, argv[j].len, &r);
        n += r;
    }
    if (s == FD_OK && n) s = io->save(h, &hk);
    if (s == FD_OK && n && io->event) {
        if (fd_notify_on(cls)) io->event(h, cls, event, &argv[1]);
        if (fd_notify_on(FD_NOTIFY_GENERIC) && io->gone(h, &hk)) io->event(h, FD_NOTIFY_GENERIC, "del", &argv[1]);
    }
    if (s == FD_OK && resp_add_int(out, n)) s = FD_E_NOMEM;
    io->close(h, &hk);
    return s;
}
