/* backend.h — the interface every storage backend implements.
 *
 * Module prefix: fd_backend_. One backend per file or folder in storage/ (lmdb.c,
 * leveldb.c, redis.c, redis_cluster.c, mongodb/). The proxy owns the event loop and calls:
 *
 *   open      once at start-up (and on a live swap);
 *   submit    for every command the command table routes to the backend,
 *             in client request order;
 *   end_turn  once per event-loop turn, after the commands read in that turn
 *             were submitted and BEFORE any of their replies is written to a
 *             socket (embedded backends commit their group transaction here:
 *             no write is acknowledged before it is durable at the configured
 *             setting);
 *   cron      about every 100 ms (active expiry, reclamation);
 *   close     at shutdown (flushes and closes files).
 *
 * Threads: all entry points run on the loop thread. A backend that would
 * block (network without an async API) does its blocking work on its own
 * worker threads and completes requests back on the loop thread.
 */
#ifndef FRONTDOOR_BACKEND_H
#define FRONTDOOR_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include "../protocol/resp.h"
#include "status.h"
#include "host.h"
#include "command.h"
#include "clock.h"
#include "option.h"

struct ev_loop;


/* What the backends need from the configuration. Filled by the proxy from
 * its directive table; strings are owned by the proxy and outlive open(). */
typedef struct fd_backend_config {
    const char *dir;            /* data folder (embedded backends) */
    int         sync;           /* durability: 1 = sync (fsync per group commit), 0 = nosync */
    const void *options;        /* the backend's own settings struct (ops->options: storage/option.h),
                                 * NULL = every row at its zero value (the backend's defaults) */
    long long   max_bulk;       /* proto-max-bulk-len: largest string value allowed */
    /* network backends */
    struct ev_loop *loop;       /* the proxy's libev loop: attach watchers here (loop thread only) */
    long long   backend_timeout_ms;     /* a request unanswered this long fails */
} fd_backend_config;


/* One command handed to a backend.
 * Ownership: argv, raw and out are valid only during submit(). A backend that
 * returns FD_PENDING copies what it needs (raw is exactly what a RESP server
 * expects on the wire) and later completes `pending` exactly once, on the
 * loop thread, with fd_pending_reply or fd_pending_error. */
typedef struct fd_request {
    const struct fd_command *cmd;
    int        argc;
    resp_arg  *argv;
    resp_out  *out;          /* reply sink, with the client's protocol version */
    int64_t    now_ms;       /* wall clock (ms) for expiry decisions */
    int        is_write;     /* the command may modify data */
    const char *raw;         /* the command as received, if it came as multibulk; else NULL */
    size_t     rawlen;
    fd_pending *pending;     /* non-NULL only for backends with ops->async set */
    uint64_t   client_id;    /* the proxy's id of the client (for per-client ordering) */
    const resp_arg *route_key; /* non-NULL: a part of an atomic unit; a sharded backend sends it
                                * where this key lives (MULTI/EXEC blocks on a cluster) */
    int        detached;     /* the reply goes to no client's output buffer (a script's command, an
                              * A/B mirror copy): the host waits for it or drops it, so a backend
                              * must not keep it pending for a later commit (LevelDB) */
    /* Out, set during submit (also when the reply is then owed, e.g. a
     * LevelDB write waiting for its commit): the keys a write left unchanged
     * where its reply does not tell (bit i: the i-th key in fd_command_keys
     * order, i < 32), which Redis 7.0 does not signal (WATCH is not
     * touched for them): SETBIT writing the bit already there, BITFIELD
     * whose SET/INCRBY leave every byte as it was, SMOVE into a destination
     * that had the member. 0 (the default) = any key may have changed. The
     * one way a backend reports "nothing changed" beyond the reply (the TC
     * flag, commands.def, covers replies that tell). */
    unsigned   untouched;
} fd_request;

/* A backend that returned FD_PENDING completes the request later with
 * fd_pending_reply / fd_pending_error (host.h). */

typedef struct fd_backend fd_backend;

typedef struct fd_backend_ops {
    const char *name;                                   /* "lmdb", "leveldb", ... */
    int         async;                                  /* submit may return FD_PENDING */
    int         async_writes;                           /* with async: only write commands get a pending
                                                         * handle (r->pending); reads are answered in submit */
    int         passthrough;                            /* takes commands the table does not know (r->cmd NULL), e.g. a Redis server */
    int         embedded;                               /* keeps its data in `dir` (one process at a time: the folder is locked) */
    int         notify;                                 /* the keyspace event classes it delivers (host.h
                                                         * FD_NOTIFY_* bits; notify-keyspace-events with K/E and
                                                         * another class is refused on a primary without it:
                                                         * docs/notifications.md): the embedded ones raise them
                                                         * through host.h's FD_NOTIFY, a Redis server fires them
                                                         * itself (notify_set) and the relay brings them */
    const fd_option_set *options;                       /* its settings' rows (option.h), NULL = none of its own;
                                                         * open() gets the struct in cfg->options */
    /* 0 or FD_E_*; on failure err gets a human-readable reason. */
    int  (*open)(fd_backend *b, const fd_backend_config *cfg, char *err, size_t errlen);
    void (*close)(fd_backend *b);
    /* FD_OK (reply written to r->out), FD_PENDING, or FD_E_* (nothing written;
     * the proxy replies with fd_strerror). */
    int  (*submit)(fd_backend *b, fd_request *r);
    /* Commit what this turn wrote. FD_OK, or FD_E_* when the group could not be
     * made durable: the proxy then must not deliver this turn's write replies. */
    int  (*end_turn)(fd_backend *b);
    void (*cron)(fd_backend *b, int64_t now_ms);
    /* Number of keys and keys with an expiry (INFO keyspace). May be estimates. */
    void (*keyspace)(fd_backend *b, uint64_t *keys, uint64_t *expires);
    /* Append "name:value\r\n" lines for INFO's backend section. */
    void (*info)(fd_backend *b, resp_out *lines);
    /* Optional: a sentence COMMAND DOCS appends to a command's summary while
     * this backend is the primary — where it behaves unlike Redis (e.g. MSET
     * not atomic across cluster slots). NULL (or a NULL result) = nothing. */
    const char *(*doc_note)(const struct fd_command *cmd);
    /* Required: what this backend does with a DATA command of the table:
     * FD_SERVED, or the reason it refuses it (a sentence; clients get
     * "-ERR '<name>' is not supported by frontdoor's <backend> backend:
     * <reason>", and the README's coverage table shows it). NULL means
     * neither — a bug that tests/unit/test_command_coverage.c fails on. */
    const char *(*support)(const struct fd_command *cmd);
    /* Optional: the reason this backend refuses, from its arguments, a
     * command support() says it serves (a Redis server: WAIT, COPY ... DB n,
     * SHUTDOWN...), or NULL. submit() answers such a command with
     * fd_reply_unsupported at once, even inside a forwarded MULTI block
     * (proxy/multi.c keeps its refusal's place in EXEC's reply). */
    const char *(*refusal)(int argc, const resp_arg *argv);
    /* Optional, for backends that are Redis servers (redis, redis-cluster),
     * which block clients themselves (proxy/blocking.h; the other backends'
     * waiting is the proxy's):
     *   submit_blocking: send a blocking command (BLPOP, BLMOVE, BZPOPMIN...)
     *     on a backend connection of its own, lent from a bounded pool
     *     (redis_blocking_pool_size) for as long as the command waits: no
     *     backend-timeout deadline, the command's own timeout applies.
     *     FD_PENDING; or FD_OK with an error reply written (pool exhausted,
     *     server down) — never a wait for a free connection.
     *   cancel_blocking: the client of a submit_blocking request left (or
     *     was unblocked): its connection is closed, so the server forgets
     *     the wait; `p` is completed with an error the host ignores. */
    int  (*submit_blocking)(fd_backend *b, fd_request *r);
    void (*cancel_blocking)(fd_backend *b, fd_pending *p);
    /* Optional: relay pub/sub through the server (redis, redis-cluster).
     * The proxy keeps the subscribers; the backend keeps ONE subscription
     * per name on the server: on = 1 when the first local subscriber of
     * `name` appears, 0 when the last one leaves. kind: FD_PS_CHANNEL,
     * FD_PS_PATTERN, FD_PS_SHARD. Messages come back through
     * fd_pubsub_message (host.h); after a reconnect the backend asks the host
     * to list every name again (fd_pubsub_resync). */
    void (*pubsub)(fd_backend *b, int kind, const char *name, size_t len, int on);
    /* Optional: the group a key belongs to where keys of one atomic unit
     * must share it (a cluster's hash slot); NULL when any keys may. */
    int (*key_group)(fd_backend *b, const resp_arg *key);
    /* Optional: frontdoor's own records kept in the store beside the data
     * (the FUNCTION libraries, proxy/scripting.c), under a name of at most
     * FD_AUX_NAME_MAX bytes: never seen by the Redis types (SCAN, KEYS,
     * DBSIZE, RANDOMKEY) and kept by FLUSHALL/FLUSHDB. Loop thread only.
     *   aux_get: FD_OK with a malloc'd copy in *v (the caller frees it),
     *     FD_NOTFOUND, or FD_E_*.
     *   aux_put: vl 0 deletes the record. Written in the current turn's
     *     transaction, committed with it (before the turn's replies leave).
     *     FD_OK or FD_E_*. */
    int (*aux_get)(fd_backend *b, const char *name, char **v, size_t *vl);
    int (*aux_put)(fd_backend *b, const char *name, const void *v, size_t vl);
    /* Optional (a Redis server): notify-keyspace-events set through
     * frontdoor, in Redis's canonical form (proxy/config.h
     * px_notify_format): forwarded to the server(s), and again after every
     * reconnect. Called after open when the directive is not "", and on
     * every change. Loop thread. */
    void (*notify_set)(fd_backend *b, const char *classes);
} fd_backend_ops;

#define FD_AUX_NAME_MAX 64

enum { FD_PS_CHANNEL = 0, FD_PS_PATTERN = 1, FD_PS_SHARD = 2 };

/* support()'s answer for a command the backend serves. */
extern const char FD_SERVED[];

struct fd_backend {
    const fd_backend_ops *ops;
    void *state;               /* the backend's own */
    int   turn_writes;         /* writes submitted since the last end_turn */
    int   writes_inline;       /* set by an async_writes backend while its commits run inline
                                * (LevelDB when a write cannot stall): write commands then get no
                                * pending handle either; the backend may change it between turns */
};

/* Look up a compiled-in backend by name; NULL if unknown or not built. */
const fd_backend_ops *fd_backend_find(const char *name);
/* Comma-separated names of the backends built in (for error messages). */
const char *fd_backend_names(void);
/* The backends built in, NULL-terminated. */
const fd_backend_ops *const *fd_backend_list(void);
/* The README's coverage table (command x backend), generated from the
 * command table and each backend's support(): Markdown into a malloc'ed
 * string the caller frees; NULL when out of memory. */
char *fd_backend_coverage_markdown(void);
/* The one refusal of a command a backend does not serve (support()):
 * "-ERR '<name>' is not supported by frontdoor's <backend> backend: <why>"
 * into out (why NULL: the sentence ends after "backend"). */
void fd_reply_unsupported(resp_out *out, const char *name, const char *backend, const char *why);

#endif
