/* host.c — the storage layer's calls up to its host (host.h). */
#include "host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static const fd_host default_host = {default_vlog, no_pending_reply, no_pending_error, NULL, NULL, NULL};
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

void fd_pubsub_ready(struct fd_backend *b, int kind, const char *name, size_t len) {
    if (host->pubsub_ready) host->pubsub_ready(b, kind, name, len);
}

/* ---------------------------------------------------------------- keyspace events */

_Atomic int fd_notify_classes;
static fd_notify_sink notify_sink;

void fd_notify_set_sink(fd_notify_sink fn) { notify_sink = fn; }

void fd_notify_set_classes(int flags)
{
    int on = (flags & (FD_NOTIFY_KEYSPACE | FD_NOTIFY_KEYEVENT)) &&
             (flags & ~(FD_NOTIFY_KEYSPACE | FD_NOTIFY_KEYEVENT));
    atomic_store_explicit(&fd_notify_classes, on && notify_sink ? flags : 0, memory_order_relaxed);
}

#define EV_HDR 9   /* class u32, event length u8, key length u32 */

void fd_events_add(fd_events *q, int cls, const char *event, const void *key, size_t klen)
{
    size_t el = strlen(event), need = EV_HDR + el + klen;
    if (el > 255 || klen > FD_EVENTS_MAX || q->len + need > FD_EVENTS_MAX) {
        if (!q->dropped++) fd_log(FD_LOG_WARNING, "keyspace events dropped: more than %u bytes of them in one piece of work",
                                  FD_EVENTS_MAX);
        return;
    }
    if (q->len + need > q->cap) {
        size_t cap = q->cap ? q->cap : 1024;
        while (cap < q->len + need) cap *= 2;
        char *b = realloc(q->buf, cap);
        if (!b) { q->dropped++; return; }
        q->buf = b;
        q->cap = cap;
    }
    unsigned char *p = (unsigned char *)q->buf + q->len;
    uint32_t c = (uint32_t)cls, k = (uint32_t)klen;
    memcpy(p, &c, 4);
    p[4] = (unsigned char)el;
    memcpy(p + 5, &k, 4);
    memcpy(p + EV_HDR, event, el);
    if (klen) memcpy(p + EV_HDR + el, key, klen);
    q->len += need;
}

void fd_events_deliver(fd_events *q)
{
    size_t n = q->len;
    q->len = 0;            /* a sink that raises more (it does not) starts a new queue */
    for (size_t off = 0; off < n;) {
        const unsigned char *p = (const unsigned char *)q->buf + off;
        uint32_t c, k;
        memcpy(&c, p, 4);
        memcpy(&k, p + 5, 4);
        size_t el = p[4];
        if (notify_sink) notify_sink((int)c, (const char *)p + EV_HDR, el, (const char *)p + EV_HDR + el, k);
        off += EV_HDR + el + k;
    }
    if (q->cap > (1u << 20)) fd_events_free(q);
}

void fd_events_free(fd_events *q)
{
    free(q->buf);
    q->buf = NULL;
    q->len = q->cap = 0;
}
