/* host.c — the storage layer's calls up to its host (host.h). */
#include "host.h"

#include <stdio.h>
#include <stdlib.h>

static void default_vlog(int level, const char *fmt, va_list ap) {
    if (level < FD_LOG_NOTICE) return;
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

static void no_pending_reply(fd_pending *p, const void *reply, size_t len) {
    (void)p; (void)reply; (void)len;
    fprintf(stderr, "frontdoor: a backend completed a pending reply without a host (fd_host_set)\n");
    abort();
}

static void no_pending_error(fd_pending *p, int status) {
    (void)status;
    no_pending_reply(p, NULL, 0);
}

static const fd_host default_host = {default_vlog, no_pending_reply, no_pending_error, NULL, NULL};
static const fd_host *host = &default_host;

void fd_host_set(const fd_host *h) { host = h ? h : &default_host; }

void fd_log(int level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    host->vlog(level, fmt, ap);
    va_end(ap);
}

void fd_pending_reply(fd_pending *p, const void *reply, size_t len) { host->pending_reply(p, reply, len); }
void fd_pending_error(fd_pending *p, int status) { host->pending_error(p, status); }

void fd_pubsub_message(struct fd_backend *b, int kind, const char *pattern, size_t plen,
                       const char *channel, size_t clen, const char *msg, size_t mlen) {
    if (host->pubsub_message) host->pubsub_message(b, kind, pattern, plen, channel, clen, msg, mlen);
}

void fd_pubsub_resync(struct fd_backend *b) {
    if (host->pubsub_resync) host->pubsub_resync(b);
}
