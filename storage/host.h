/* host.h — what the storage layer needs from whoever hosts it.
 *
 * storage/ includes nothing from proxy/: the two things a backend needs from
 * above — a log, and a way to hand in a reply it owed (FD_PENDING) — come
 * through this table, which the host (the proxy's main, or a unit test)
 * registers once at start-up with fd_host_set(). Until then the defaults
 * apply: log lines go to stderr, and completing a pending reply is a bug
 * (only a host that hands out fd_pending handles receives them).
 *
 * Threads: fd_log may be called from any thread (backends' workers too) if
 * the host's log function is thread-safe (the proxy's writes one line with
 * one stdio call). fd_pending_* are called on the loop thread only.
 */
#ifndef FRONTDOOR_HOST_H
#define FRONTDOOR_HOST_H

#include <stdarg.h>
#include <stddef.h>

enum { FD_LOG_DEBUG, FD_LOG_VERBOSE, FD_LOG_NOTICE, FD_LOG_WARNING };

typedef struct fd_pending fd_pending;
struct fd_backend;   /* a reply the host waits for (backend.h) */

typedef struct fd_host {
    /* Write one log line at `level` (FD_LOG_*); the host filters by level. */
    void (*vlog)(int level, const char *fmt, va_list ap);
    /* Complete a pending request with one whole RESP reply (copied), or with
     * an error status (the host writes fd_strerror's text). After either
     * call the handle is gone. */
    void (*pending_reply)(fd_pending *p, const void *reply, size_t len);
    void (*pending_error)(fd_pending *p, int status);
    /* Pub/sub relayed by a backend (backend.h: ops->pubsub): a message
     * published on `channel` (kind FD_PS_CHANNEL, or FD_PS_SHARD), or one
     * matching `pattern` (FD_PS_PATTERN; pattern NULL otherwise). Copied. */
    void (*pubsub_message)(struct fd_backend *b, int kind, const char *pattern, size_t plen,
                           const char *channel, size_t clen, const char *msg, size_t mlen);
    /* The backend's relay connection (re)connected: the host calls
     * ops->pubsub(on = 1) again for every name it has subscribers for. */
    void (*pubsub_resync)(struct fd_backend *b);
} fd_host;

/* Register the host (the table must outlive every backend). */
void fd_host_set(const fd_host *h);

/* Log through the host. */
void fd_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Complete a pending request through the host (see fd_host). Safe when the
 * client has disconnected meanwhile. */
void fd_pending_reply(fd_pending *p, const void *reply, size_t len);
void fd_pending_error(fd_pending *p, int status);
/* Pub/sub through the host (see fd_host; no-ops without one). */
void fd_pubsub_message(struct fd_backend *b, int kind, const char *pattern, size_t plen,
                       const char *channel, size_t clen, const char *msg, size_t mlen);
void fd_pubsub_resync(struct fd_backend *b);

#endif
