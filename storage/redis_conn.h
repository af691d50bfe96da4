/* redis_conn.h — non-blocking RESP connections to Redis servers on the
 * proxy's libev loop, shared by the redis backend (storage/redis.c) and the
 * redis-cluster backend (storage/redis_cluster.c). Module prefix: rc_.
 *
 * One connection: a non-blocking connect, an output buffer written once per
 * loop turn (rc_flush, from the backend's end_turn), an input buffer whose
 * replies are split with resp_scan_reply and handed, in order, to the
 * callbacks of the in-flight FIFO. Nothing is parsed or re-encoded.
 *
 *   - Handshake: AUTH and SELECT (when set) are queued first on every new
 *     connection; their replies are consumed here. An error reply fails the
 *     connection.
 *   - RESP3: rc_send's `proto` says which protocol the reply must be in; when
 *     it differs from the connection's, an internal HELLO 3 (or HELLO 2) is
 *     queued first. A server that refuses HELLO sets sh->no_resp3.
 *   - Deadlines: every in-flight request carries one (sh->timeout_ms); a
 *     timer resets a connection whose oldest request, or whose connect, is
 *     overdue.
 *   - Failure (EOF, reset, protocol error, timeout): every in-flight request
 *     is completed with "-ERR backend unavailable (LABEL ADDR: reason)" and
 *     local = 1; the connection reconnects with exponential backoff (50 ms
 *     doubling to 2 s, back to 50 ms after the first good reply). rc_send on
 *     a connection that is down fails at once (the caller replies with
 *     rc_unavailable's text).
 *
 * Threads: loop thread only. Ownership: a callback's reply bytes are valid
 * only during the callback. A callback may call rc_send (on any connection,
 * including the one completing), but must not destroy connections.
 */
#ifndef FRONTDOOR_REDIS_CONN_H
#define FRONTDOOR_REDIS_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <ev.h>

#include "../protocol/resp.h"
#include "../protocol/resp_scan.h"

struct fd_command;
struct fd_request;
struct fd_backend;
typedef struct fd_pending fd_pending;

/* A request's reply (one whole RESP reply). local = 1: not from the server
 * but "-ERR backend unavailable (...)" made here (the connection failed, the
 * deadline passed, or the connection is being destroyed). */
typedef void (*rc_reply_fn)(void *ctx, const char *reply, size_t len, int local);

/* A server address, owned by the caller; its connections point to it. */
typedef struct rc_addr {
    char       name[256];        /* as given ("host:port" or a unix socket path) */
    struct sockaddr_storage sa;
    socklen_t  salen;
    int        warned;           /* a "backend unavailable" warning is standing */
} rc_addr;

typedef struct rc_conn rc_conn;

/* What a backend's connections share. Fill the settings, then rc_shared_init. */
typedef struct rc_shared {
    struct ev_loop *loop;
    const char *label;           /* "redis", "redis-cluster": in logs and error texts */
    char       *password;        /* AUTH on connect (NULL = none); owned by the caller */
    char       *user;            /* AUTH user password when set (NULL = the default user); owned by the caller */
    int         db;              /* SELECT on connect when not 0 */
    int64_t     timeout_ms;
    /* state */
    char       *no_resp3;        /* the server refused HELLO 3: why (for RESP3 clients) */
    rc_conn    *all;             /* every live connection (deadline checks) */
    rc_conn    *dirty;           /* connections with commands to write this turn */
    ev_timer    tick;
    /* connections lent to blocking commands (rc_blocking_submit) */
    int         blocking_max;    /* at most this many lent at once (0 = 64) */
    int         blocking_used;
    rc_conn    *blocking_idle;   /* returned, kept for the next (a few) */
    int         blocking_nidle;
    rc_conn    *zombies;         /* to destroy outside their callbacks (rc_flush) */
    struct rc_blocking *blocking; /* in flight */
    struct rc_blocking *draining; /* cancelled, read until closed (rc_blocking_cancel) */
    uint64_t    blocking_total, blocking_refused;
    /* TLS to the servers (rc_shared_tls; NULL = plain): an SSL_CTX */
    void       *tls_ctx;
    char       *tls_sni;         /* sent as SNI and checked as the certificate's name (NULL = not checked) */
    /* notify-keyspace-events forwarded to the servers (rc_notify_set; NULL:
     * never set through frontdoor, the servers' own setting stands) */
    char       *notify;
} rc_shared;

/* TLS for every connection of sh (call before the first connect): the
 * servers' certificates must chain to ca_file (NULL/"": the system's CAs);
 * cert_file/key_file: a client certificate (NULL/"": none); sni: sent as
 * SNI and verified as the certificate's host name (NULL/"": neither). The
 * TLS handshake is part of the connect (sh->timeout_ms bounds both); a
 * failed one (untrusted, expired, wrong name) fails the connection with
 * "TLS handshake failed: ... certificate ..." in the unavailable error.
 * -1 with err when the files cannot be loaded. rc_shared_close frees it. */
int  rc_shared_tls(rc_shared *sh, const char *ca_file, const char *cert_file, const char *key_file,
                   const char *sni, char *err, size_t errlen);

enum { RC_DOWN, RC_CONNECTING, RC_UP };

typedef struct rc_slot {
    rc_reply_fn fn;             /* NULL: internal (AUTH, SELECT, HELLO, ignored) */
    void       *ctx;
    int64_t     deadline;       /* monotonic ms */
    int         kind;
} rc_slot;

struct rc_conn {
    rc_shared *sh;
    rc_addr   *addr;
    int        idx;             /* for logs */
    int        fd;
    void      *ssl;             /* SSL * when sh->tls_ctx (NULL until the TCP connect is done) */
    int        tls_done;        /* its handshake is done */
    int        state;
    int        proto;           /* protocol in effect after the last queued command */
    int        ever_up;
    int        wio_on;
    int        dirty;
    int        stopped;         /* no reconnects (being destroyed) */
    rc_conn   *dirty_next, *all_prev, *all_next;
    int64_t    connect_deadline;
    int        backoff_ms;
    ev_io      rio, wio;
    ev_timer   retry;
    char      *obuf;            /* not yet written: obuf[opos..olen) */
    size_t     olen, ocap, opos;
    char      *ibuf;            /* read: ibuf[ipos..ilen) */
    size_t     ilen, icap, ipos;
    resp_scanner sc;
    rc_slot   *q;               /* in-flight FIFO: ring of qcap (power of two) */
    size_t     qhead, qcount, qcap;
    size_t     qclients;        /* slots with a callback */
    uint64_t   qpushed, qpopped; /* slots ever queued / completed (monotonic, never reset): a
                                  * request queued when qpushed became n is done once qpopped >= n
                                  * (the redis backend's key-affine routing, storage/redis.c) */
    char       lasterr[160];
    /* statistics */
    uint64_t   failed, connects, reconnects, timeouts;
    long long  client_id;       /* the server's CLIENT ID of a blocking connection (0: not known yet) */
    void      *user;            /* the owner's */
    /* a relay connection (rc_relay_init): every '*' or '>' reply is a pub/sub
     * event for `push`, never the answer to a request */
    void     (*push)(rc_conn *c, const char *data, size_t len);
    void     (*on_up)(rc_conn *c);  /* called each time the connection is up */
    /* a relay's filter on keyspace events (channels "__keyspace@..." and
     * "__keyevent@..."): 0 passes every message, 1 only those, -1 every
     * message but those (a cluster's node-local events: rc_relay_init) */
    int        relay_keyspace;
    rc_conn   *pool_next;       /* blocking_idle / zombies list */
    /* write gathering (rc_flush), on pooled connections: a turn's requests
     * wait while the requests of the connection's last write still wait for
     * replies, and go out together in the turn those are all in — or at once
     * when RC_HOLD_BYTES are waiting. Nagle's rule, one level up: a lone
     * client (nothing in flight) is never delayed; under load Redis gets one
     * large batch per round trip instead of many small ones (issue 31: its
     * CPU per request falls 2-3x on shared cores). A request waits at most
     * until the replies before it on its connection, which Redis answers in
     * order anyway. */
    int        hold;
    uint64_t   sent_seq;        /* qpushed when obuf was last handed to the kernel */
    uint64_t   holds;           /* flushes that held this connection's writes */
};

/* Bytes a held connection gathers at most before it writes anyway. */
#define RC_HOLD_BYTES 16384

/* redis-pool-size's default, stated once: the option row (as text) and both
 * backends' pool when opened without settings (rc_pool_size). */
#define RC_POOL_SIZE 1
#define RC_TEXT_(x) #x
#define RC_TEXT(x) RC_TEXT_(x)
static inline int rc_pool_size(long long set) { return set > 0 ? (int)set : RC_POOL_SIZE; }

int64_t rc_mono_ms(void);

/* "host:port", "[v6]:port" or "/unix/path" into a. A host name is resolved
 * here, once (getaddrinfo may block: only at open); numeric = 1 accepts IP
 * addresses only (never blocks: for addresses learnt at run time). what
 * names the directive in errors. -1 with err on failure. */
int  rc_addr_resolve(rc_addr *a, const char *name, const char *what, int numeric, char *err, size_t errlen);

void rc_shared_init(rc_shared *sh);   /* starts the deadline timer */
void rc_shared_close(rc_shared *sh);  /* stops it (destroy the connections first) */

/* Set up c for address a and start connecting. idx: c's place in its
 * backend's pool (logs), or -1 for a connection of its own (a blocking
 * command's, a relay). A pooled connection gathers its writes (hold, below). */
void rc_conn_init(rc_conn *c, rc_shared *sh, rc_addr *a, int idx);
/* Complete every in-flight request (local error), close, free the buffers;
 * c's memory stays the caller's. Not from inside one of c's callbacks. */
void rc_conn_destroy(rc_conn *c);

/* Queue a command: raw (the exact multibulk bytes) if not NULL, else argv
 * encoded. proto 2 or 3: the reply's protocol (a HELLO is queued first if
 * the connection is on the other); 0: whatever the connection is on.
 * fn may be NULL (reply ignored, errors included: e.g. ASKING).
 * 0, or -1 if the connection is down (nothing queued) or out of memory. */
int  rc_send(rc_conn *c, int proto, const char *raw, size_t rawlen, int argc, const resp_arg *argv,
             rc_reply_fn fn, void *ctx);

/* rc_send with a deadline of timeout_ms (< 0: none, for blocking commands). */
int  rc_send_ex(rc_conn *c, int proto, const char *raw, size_t rawlen, int argc, const resp_arg *argv,
                rc_reply_fn fn, void *ctx, int64_t timeout_ms);

/* Blocking commands (BLPOP...): r goes to address a on a connection of its
 * own, lent from a pool of at most sh->blocking_max, with no deadline; the
 * reply completes r->pending and the connection is returned (kept idle for
 * the next one, or closed). Returns FD_PENDING, or FD_OK with an error reply
 * written to r->out when the pool is exhausted or the server is down. */
int  rc_blocking_submit(rc_shared *sh, rc_addr *a, struct fd_request *r);
/* The client of a rc_blocking_submit request went away: close its
 * connection (the server forgets the wait); p is completed with an error. */
void rc_blocking_cancel(rc_shared *sh, fd_pending *p);
/* 1 if a lent, idle or closing connection still points to a (its owner
 * must keep a). */
int  rc_blocking_uses(const rc_shared *sh, const rc_addr *a);
/* INFO lines of the lent connections ("<label>_blocking_...:n"). */
void rc_blocking_info(const rc_shared *sh, resp_out *o);

/* notify-keyspace-events `classes` on the servers of sh: CONFIG SET on
 * every connection up or connecting now, ahead of any command sent on it
 * afterwards (its reply ignored: a server refusing
 * CONFIG keeps its own setting), and again as part of the handshake of
 * every connection made from now on (so a restarted server, or a cluster
 * node met later, gets it). Loop thread. */
void rc_notify_set(rc_shared *sh, const char *classes);

/* A pub/sub relay: c connects to a, and every message it receives
 * (message, pmessage, smessage) is handed to fd_pubsub_message for fb;
 * each time it is up, fd_pubsub_resync(fb) has the host subscribe again. */
void rc_relay_init(rc_conn *c, rc_shared *sh, rc_addr *a, struct fd_backend *fb);
/* (Un)subscribe on a relay: kind FD_PS_*, on 1 / 0. Nothing happens while
 * it is down (the resync on reconnect covers it). */
void rc_relay_sub(rc_conn *c, int kind, const char *name, size_t len, int on);

/* Write what every dirty connection queued (once per loop turn). */
void rc_flush(rc_shared *sh);

/* "-ERR backend unavailable (LABEL ADDR: reason)\r\n" into buf; its length. */
size_t rc_unavailable(const rc_conn *c, char *buf, size_t len);

/* Why a command cannot go over a connection shared by many clients
 * (blocking commands, pub/sub, transactions, RESET, replication, SHUTDOWN),
 * or NULL. */
const char *rc_refusal(int argc, const resp_arg *argv);
/* support() of the Redis backends: a Redis server serves every command of
 * the table (they are forwarded). */
const char *rc_support(const struct fd_command *cmd);

/* Requests waiting for a reply (callbacks only). */
static inline size_t rc_inflight(const rc_conn *c) { return c->qclients; }
/* The sequence number of the request rc_send last queued on c (see qpushed),
 * and whether the request of sequence seq is still waiting for its reply. */
static inline uint64_t rc_last_seq(const rc_conn *c) { return c->qpushed; }
static inline int rc_seq_pending(const rc_conn *c, uint64_t seq) { return c->qpopped < seq; }

#endif
