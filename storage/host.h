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
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

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
    /* The relay's own subscription to `name` (kind FD_PS_*) is confirmed by
     * the server: a message published from now on reaches it. The host
     * holds a client's confirmation until then (docs/pubsub.md). */
    void (*pubsub_ready)(struct fd_backend *b, int kind, const char *name, size_t len);
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
void fd_pubsub_ready(struct fd_backend *b, int kind, const char *name, size_t len);

/* ---------------------------------------------------------------- keyspace events
 * notify-keyspace-events (docs/notifications.md). A backend that produces
 * Redis's keyspace events itself (lmdb, leveldb, mongodb) raises each one
 * where Redis's command does (FD_NOTIFY: one call per event site) into a
 * queue of its own (fd_events), and delivers the queue on the loop thread
 * once the work that raised them is committed (fd_events_deliver), in the
 * order they were raised; a failed or aborted piece of work drops its
 * events (fd_events_cut). The host receives them through the sink it
 * registered (fd_notify_set_sink) and publishes them.
 *
 * Classes: Redis 7.0's NOTIFY_* bits (notify.h); FD_NOTIFY_KEYSPACE/KEYEVENT
 * say which channels get them. fd_notify_classes is 0 unless the host wants
 * events (K or E with at least one class): then FD_NOTIFY costs one relaxed
 * load and a branch, and nothing is called. It may be read by any thread
 * (mongodb workers); only the host writes it (fd_notify_set_classes). */
enum {
    FD_NOTIFY_KEYSPACE = 1 << 0,  FD_NOTIFY_KEYEVENT = 1 << 1,  FD_NOTIFY_GENERIC = 1 << 2,
    FD_NOTIFY_STRING   = 1 << 3,  FD_NOTIFY_LIST     = 1 << 4,  FD_NOTIFY_SET     = 1 << 5,
    FD_NOTIFY_HASH     = 1 << 6,  FD_NOTIFY_ZSET     = 1 << 7,  FD_NOTIFY_EXPIRED = 1 << 8,
    FD_NOTIFY_EVICTED  = 1 << 9,  FD_NOTIFY_STREAM   = 1 << 10, FD_NOTIFY_KEY_MISS = 1 << 11,
    FD_NOTIFY_MODULE   = 1 << 13, FD_NOTIFY_NEW      = 1 << 14,
    /* every class letter (fd_backend_ops.notify: what a backend delivers) */
    FD_NOTIFY_CLASSES  = FD_NOTIFY_GENERIC | FD_NOTIFY_STRING | FD_NOTIFY_LIST | FD_NOTIFY_SET | FD_NOTIFY_HASH |
                         FD_NOTIFY_ZSET | FD_NOTIFY_EXPIRED | FD_NOTIFY_EVICTED | FD_NOTIFY_STREAM |
                         FD_NOTIFY_KEY_MISS | FD_NOTIFY_MODULE | FD_NOTIFY_NEW,
};

extern _Atomic int fd_notify_classes;

/* The classes `cls` (one FD_NOTIFY_* type bit) are delivered now. */
#define fd_notify_on(cls) \
    __builtin_expect((atomic_load_explicit(&fd_notify_classes, memory_order_relaxed) & (cls)) != 0, 0)

/* A queue of raised events: records [class u32][event len u8][key len u32]
 * [event][key], at most FD_EVENTS_MAX bytes (a command raising more — a
 * DEL of a million keys with every class on — loses the surplus, counted
 * in fd_events.dropped and logged once per queue). Owned by one backend
 * (or one request); not shared between threads. Zeroed = empty. */
#define FD_EVENTS_MAX (16u << 20)
typedef struct fd_events {
    char    *buf;
    size_t   len, cap;
    uint64_t dropped;
} fd_events;

/* Raise one event of class cls (an FD_NOTIFY_* type bit) on key: queued
 * when fd_notify_on(cls) (the macro tests it inline, the function never
 * runs otherwise). event is a string literal of Redis's name. */
#define FD_NOTIFY(q, cls, event, key, klen) \
    do { if (fd_notify_on(cls)) fd_events_add((q), (cls), (event), (key), (klen)); } while (0)
void fd_events_add(fd_events *q, int cls, const char *event, const void *key, size_t klen);
/* Loop thread: hand every queued event to the sink, in order, then empty q. */
void fd_events_deliver(fd_events *q);
/* Drop the events queued after `mark` (a q->len taken before the work). */
static inline void fd_events_cut(fd_events *q, size_t mark) { if (q->len > mark) q->len = mark; }
/* Free q's memory (q is empty afterwards). */
void fd_events_free(fd_events *q);

/* The host: where events go (cls: the event's class bit; called on the loop
 * thread), and which classes are wanted (the directive's bits; 0 unless K
 * or E is set together with a class). */
typedef void (*fd_notify_sink)(int cls, const char *event, size_t elen, const char *key, size_t klen);
void fd_notify_set_sink(fd_notify_sink fn);
void fd_notify_set_classes(int flags);

#endif
