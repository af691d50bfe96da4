/* redis.c — the Redis backend: frontdoor forwards commands to a real Redis
 * server (or anything speaking RESP) and passes its replies back byte for
 * byte. Selected with `backend redis`; settings redis-address ("host:port"
 * or a unix socket path starting with '/'), redis-pool-size, redis-password,
 * redis-db, backend-timeout.
 *
 * Why not hiredis. Debian 12 ships hiredis 0.14.1, whose reply reader has no
 * RESP3 support: the replies of a client that said HELLO 3 (maps, doubles,
 * `_` nulls, ...) would fail to parse. And parsing is not needed anyway: a
 * proxy only has to know where each reply ends. So the connections are
 * written directly on frontdoor's libev loop, and protocol/resp_scan.h finds
 * reply boundaries in the server's byte stream without building any object.
 * Nothing is re-encoded in either direction.
 *
 * Data path.
 *   - A pool of `redis-pool-size` connections. Each client is pinned to one
 *     (client id % pool size), so its commands reach Redis in its order; many
 *     clients share a connection.
 *   - submit() appends the command's bytes as received (fd_request.raw; an
 *     inline command is encoded as a multibulk from argv) to the connection's
 *     output buffer and records the request at the tail of the connection's
 *     in-flight FIFO. end_turn() — once per loop turn, after every command
 *     read in the turn was submitted — writes each dirty connection's buffer
 *     with one write(): a burst from 50 clients becomes a few large writes.
 *   - Replies are read in large chunks, split with resp_scan_reply and each
 *     handed to the oldest in-flight request of that connection (Redis
 *     answers a connection's commands in order) with fd_pending_reply; the
 *     proxy inserts it at the client's reply mark (proxy/pending.c), so each
 *     client's replies stay in its request order whatever the connection.
 *   - RESP3. The connection's protocol follows the clients that use it: before
 *     a command of a client whose protocol (r->out->proto) differs from the
 *     connection's current one, an internal `HELLO 3` (or `HELLO 2`) is
 *     queued and its reply consumed. All commands of a client stay on ONE
 *     backend connection, so its commands keep their order at Redis even
 *     across a HELLO that switches protocol mid-pipeline. When all clients
 *     use the same protocol (the common case) no HELLO is ever sent.
 *   - On connect: AUTH redis-password and SELECT redis-db when set, queued
 *     before anything else; their replies are consumed internally, an error
 *     is logged and fails the connection.
 *
 * What is not forwarded.
 *   - Proxy-served commands (PING, INFO, CONFIG, COMMAND, HELLO, CLIENT,
 *     SELECT, AUTH, QUIT, TIME, ...): the command table routes them before the
 *     backend, so they answer promptly even when Redis is slow.
 *   - Commands that would break a shared connection get an error naming why:
 *     blocking pops and XREAD/XREADGROUP with BLOCK, WAIT (would block it),
 *     (P|S)SUBSCRIBE/MONITOR (would turn it into a push stream),
 *     MULTI/EXEC/DISCARD/WATCH/UNWATCH (a transaction would take other
 *     clients' commands in), RESET, and SYNC/PSYNC/REPLCONF/SHUTDOWN. A
 *     dedicated-connection mode for these is a later improvement.
 *   Everything else is forwarded, including commands frontdoor's table does
 *   not know (ops.passthrough).
 *
 * Faults. Every in-flight request has a deadline (backend-timeout, 1000 ms by
 * default) checked by a timer every RB_TICK_MS: a connection whose oldest
 * request is overdue (Redis stuck, or a connect that hangs) is reset and all
 * its in-flight requests fail with "-ERR backend unavailable (redis ADDR:
 * reason)". A lost or refused connection fails its requests at once, and new
 * commands on a connection that is down fail at once with the same error.
 * Reconnection uses exponential backoff (50 ms doubling to 2 s, back to 50 ms
 * after the first good reply); service resumes by itself. A request that
 * timed out may still be executed by Redis later (it was sent): the error
 * means "unknown outcome", as with any proxy.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <ev.h>

#include "backend.h"
#include "../protocol/resp_scan.h"
#include "../proxy/log.h"

#define RB_READ_CHUNK     (64 * 1024)   /* room made before each read */
#define RB_BUF_SHRINK     (1024 * 1024) /* idle buffers above this are freed */
#define RB_BACKOFF_MIN_MS 50
#define RB_BACKOFF_MAX_MS 2000
#define RB_TICK_MS        50            /* deadline checks */
#define RB_READS_PER_EVENT 16

enum { RB_DOWN, RB_CONNECTING, RB_UP };
enum { SLOT_CLIENT, SLOT_AUTH, SLOT_SELECT, SLOT_HELLO };

typedef struct rb_slot {
    fd_pending *p;          /* SLOT_CLIENT: the client's reply mark */
    int64_t     deadline;   /* monotonic ms */
    int         kind;
} rb_slot;

struct rb_backend;

typedef struct rb_conn {
    struct rb_backend *b;
    int        idx;
    int        fd;
    int        state;
    int        proto;           /* protocol in effect after the last queued command */
    int        ever_up;
    int        wio_on;
    int        dirty;           /* on the backend's flush list */
    struct rb_conn *dirty_next;
    int64_t    connect_deadline;
    int        backoff_ms;
    ev_io      rio, wio;
    ev_timer   retry;
    /* commands not yet written: obuf[opos..olen) */
    char      *obuf;
    size_t     olen, ocap, opos;
    /* bytes read: ibuf[ipos..ilen), the reply being scanned starts at ipos */
    char      *ibuf;
    size_t     ilen, icap, ipos;
    resp_scanner sc;
    /* in-flight FIFO: a ring of qcap (a power of two) slots */
    rb_slot   *q;
    size_t     qhead, qcount, qcap;
    char       lasterr[160];
} rb_conn;

typedef struct rb_backend {
    struct ev_loop *loop;
    char       addr[256];
    struct sockaddr_storage sa;
    socklen_t  salen;
    char      *password;
    int        db;
    int64_t    timeout_ms;
    int        n;
    rb_conn   *conns;
    rb_conn   *dirty;
    ev_timer   tick;
    int        warned;          /* a "backend unreachable" warning is standing */
    char      *no_resp3;        /* the server refused HELLO 3 (pre-6 Redis): why, for RESP3 clients */
    /* statistics */
    uint64_t   forwarded, refused, failed, reconnects, timeouts, connects;
} rb_backend;

static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------ buffers */

static int obuf_reserve(rb_conn *c, size_t extra) {
    if (c->ocap - c->olen >= extra) return 0;
    if (c->opos > 0 && c->opos >= c->olen / 2) {      /* reclaim the written part first */
        memmove(c->obuf, c->obuf + c->opos, c->olen - c->opos);
        c->olen -= c->opos;
        c->opos = 0;
        if (c->ocap - c->olen >= extra) return 0;
    }
    size_t ncap = c->ocap ? c->ocap : 16384;
    while (ncap - c->olen < extra) ncap *= 2;
    char *nb = realloc(c->obuf, ncap);
    if (!nb) return -1;
    c->obuf = nb;
    c->ocap = ncap;
    return 0;
}

static void obuf_put(rb_conn *c, const void *p, size_t n) {
    memcpy(c->obuf + c->olen, p, n);
    c->olen += n;
}

/* Bytes of argv encoded as a multibulk. */
static size_t multibulk_len(int argc, const resp_arg *argv) {
    size_t n = 24;
    for (int i = 0; i < argc; i++) n += argv[i].len + 32;   /* "$<20 digits>\r\n" + "\r\n" */
    return n;
}

static void put_multibulk(rb_conn *c, int argc, const resp_arg *argv) {
    char h[32];
    int l = snprintf(h, sizeof h, "*%d\r\n", argc);
    obuf_put(c, h, (size_t)l);
    for (int i = 0; i < argc; i++) {
        l = snprintf(h, sizeof h, "$%zu\r\n", argv[i].len);
        obuf_put(c, h, (size_t)l);
        obuf_put(c, argv[i].ptr, argv[i].len);
        obuf_put(c, "\r\n", 2);
    }
}

static int q_push(rb_conn *c, fd_pending *p, int kind, int64_t deadline) {
    if (c->qcount == c->qcap) {
        size_t ncap = c->qcap ? c->qcap * 2 : 64;
        rb_slot *nq = malloc(ncap * sizeof *nq);
        if (!nq) return -1;
        for (size_t i = 0; i < c->qcount; i++) nq[i] = c->q[(c->qhead + i) & (c->qcap - 1)];
        free(c->q);
        c->q = nq;
        c->qcap = ncap;
        c->qhead = 0;
    }
    rb_slot *s = &c->q[(c->qhead + c->qcount) & (c->qcap - 1)];
    s->p = p;
    s->kind = kind;
    s->deadline = deadline;
    c->qcount++;
    return 0;
}

static rb_slot q_pop(rb_conn *c) {
    rb_slot s = c->q[c->qhead];
    c->qhead = (c->qhead + 1) & (c->qcap - 1);
    c->qcount--;
    return s;
}

/* Queue an internal command (AUTH, SELECT, HELLO): its reply is consumed here. */
static int queue_internal(rb_conn *c, int kind, int argc, const resp_arg *argv) {
    if (obuf_reserve(c, multibulk_len(argc, argv)) || q_push(c, NULL, kind, mono_ms() + c->b->timeout_ms)) return -1;
    put_multibulk(c, argc, argv);
    return 0;
}

static int queue_hello(rb_conn *c, int proto) {
    resp_arg a[2] = { { "HELLO", 5 }, { proto == 3 ? "3" : "2", 1 } };
    if (queue_internal(c, SLOT_HELLO, 2, a)) return -1;
    c->proto = proto;
    return 0;
}

static void mark_dirty(rb_conn *c) {
    if (c->dirty) return;
    c->dirty = 1;
    c->dirty_next = c->b->dirty;
    c->b->dirty = c;
}

/* ------------------------------------------------------------ failure */

static void conn_connect(rb_conn *c);

/* "-ERR backend unavailable (redis ADDR: reason)\r\n" into buf. */
static size_t unavailable_reply(const rb_conn *c, char *buf, size_t len) {
    int n = snprintf(buf, len, "-ERR backend unavailable (redis %s: %s)\r\n", c->b->addr, c->lasterr);
    if (n < 0) return 0;
    if ((size_t)n >= len) {
        n = (int)len - 1;
        buf[n - 3] = ')';
        buf[n - 2] = '\r';
        buf[n - 1] = '\n';
        buf[n] = '\0';
    }
    return (size_t)n;
}

static void set_err(rb_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(rb_conn *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->lasterr, sizeof c->lasterr, fmt, ap);
    va_end(ap);
    for (char *p = c->lasterr; *p; p++)
        if (*p == '\r' || *p == '\n') *p = ' ';
}

/* The connection is unusable: close it, fail every request it holds with the
 * reason in c->lasterr, and schedule a reconnect with backoff. */
static void conn_fail(rb_conn *c) {
    rb_backend *b = c->b;
    if (!b->warned) {
        px_log(PX_LOG_WARNING, "redis backend %s unavailable: %s (retrying)", b->addr, c->lasterr);
        b->warned = 1;
    } else {
        px_log(PX_LOG_VERBOSE, "redis backend %s connection %d: %s", b->addr, c->idx, c->lasterr);
    }
    if (c->fd >= 0) {
        ev_io_stop(b->loop, &c->rio);
        ev_io_stop(b->loop, &c->wio);
        close(c->fd);
        c->fd = -1;
    }
    c->wio_on = 0;
    c->state = RB_DOWN;
    c->proto = 2;
    c->olen = c->opos = 0;
    c->ilen = c->ipos = 0;
    resp_scanner_init(&c->sc);
    if (c->ocap > RB_BUF_SHRINK) { free(c->obuf); c->obuf = NULL; c->ocap = 0; }
    if (c->icap > RB_BUF_SHRINK) { free(c->ibuf); c->ibuf = NULL; c->icap = 0; }
    char msg[512];
    size_t ml = unavailable_reply(c, msg, sizeof msg);
    while (c->qcount) {
        rb_slot s = q_pop(c);
        if (s.kind == SLOT_CLIENT) {
            b->failed++;
            fd_pending_reply(s.p, msg, ml);
        }
    }
    if (!c->backoff_ms) c->backoff_ms = RB_BACKOFF_MIN_MS;
    ev_timer_stop(b->loop, &c->retry);
    ev_timer_set(&c->retry, c->backoff_ms / 1000.0, 0.);
    ev_timer_start(b->loop, &c->retry);
    c->backoff_ms = c->backoff_ms * 2 > RB_BACKOFF_MAX_MS ? RB_BACKOFF_MAX_MS : c->backoff_ms * 2;
}

/* ------------------------------------------------------------ writing */

/* Write obuf[opos..olen). Returns -1 if the connection failed. */
static int conn_write(rb_conn *c) {
    while (c->opos < c->olen) {
        ssize_t n = write(c->fd, c->obuf + c->opos, c->olen - c->opos);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            set_err(c, "%s", strerror(errno));
            conn_fail(c);
            return -1;
        }
        c->opos += (size_t)n;
    }
    if (c->opos == c->olen) {
        c->opos = c->olen = 0;
        if (c->ocap > RB_BUF_SHRINK) { free(c->obuf); c->obuf = NULL; c->ocap = 0; }
        if (c->wio_on) { ev_io_stop(c->b->loop, &c->wio); c->wio_on = 0; }
    } else if (!c->wio_on) {
        ev_io_start(c->b->loop, &c->wio);
        c->wio_on = 1;
    }
    return 0;
}

static void on_connected(rb_conn *c) {
    int err = 0;
    socklen_t el = sizeof err;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0) err = errno;
    if (err) {
        set_err(c, "%s", strerror(err));
        conn_fail(c);
        return;
    }
    c->state = RB_UP;
    c->b->connects++;
    if (c->ever_up) c->b->reconnects++;
    c->ever_up = 1;
    ev_io_start(c->b->loop, &c->rio);
    conn_write(c);
}

static void on_write(struct ev_loop *loop, ev_io *w, int revents) {
    rb_conn *c = w->data;
    if (c->state == RB_CONNECTING) {
        ev_io_stop(loop, &c->wio);
        c->wio_on = 0;
        on_connected(c);
        return;
    }
    conn_write(c);
}

/* ------------------------------------------------------------ reading */

/* One complete reply at data[0..len). Returns -1 if the connection failed. */
static int handle_reply(rb_conn *c, const char *data, size_t len) {
    if (data[0] == '>') return 0;   /* a RESP3 push (no command of ours asks for them): dropped */
    if (!c->qcount) {
        set_err(c, "protocol error: a reply nobody asked for (%.40s)", data);
        conn_fail(c);
        return -1;
    }
    rb_slot s = q_pop(c);
    if (s.kind != SLOT_CLIENT && data[0] == '-') {
        size_t l = len > 3 ? len - 3 : 0;   /* without the "-" and the CRLF */
        set_err(c, "%s failed: %.*s", s.kind == SLOT_AUTH ? "AUTH" : s.kind == SLOT_SELECT ? "SELECT" : "HELLO",
                (int)(l > 120 ? 120 : l), data + 1);
        px_log(PX_LOG_WARNING, "redis backend %s: %s", c->b->addr, c->lasterr);
        if (s.kind == SLOT_HELLO && !c->b->no_resp3) {
            /* a server without HELLO cannot give RESP3 replies: from now on
             * RESP3 clients get an error instead of breaking the connection
             * for everyone sharing it */
            c->b->no_resp3 = strdup(c->lasterr);
        }
        c->b->warned = 1;
        conn_fail(c);       /* the backoff goes on growing: no tight loop on a wrong password */
        return -1;
    }
    c->backoff_ms = 0;
    if (c->b->warned) {
        px_log(PX_LOG_NOTICE, "redis backend %s is available again", c->b->addr);
        c->b->warned = 0;
    }
    if (s.kind == SLOT_CLIENT) fd_pending_reply(s.p, data, len);
    return 0;
}

static void on_read(struct ev_loop *loop, ev_io *w, int revents) {
    rb_conn *c = w->data;
    for (int round = 0; round < RB_READS_PER_EVENT; round++) {
        if (c->icap - c->ilen < RB_READ_CHUNK) {
            if (c->ipos > 0 && c->ipos >= c->ilen / 2) {
                memmove(c->ibuf, c->ibuf + c->ipos, c->ilen - c->ipos);
                c->ilen -= c->ipos;
                c->ipos = 0;
            }
            if (c->icap - c->ilen < RB_READ_CHUNK) {
                size_t ncap = c->icap ? c->icap : RB_READ_CHUNK * 2;
                while (ncap - c->ilen < RB_READ_CHUNK) ncap *= 2;
                char *nb = realloc(c->ibuf, ncap);
                if (!nb) { set_err(c, "out of memory"); conn_fail(c); return; }
                c->ibuf = nb;
                c->icap = ncap;
            }
        }
        size_t room = c->icap - c->ilen;
        ssize_t n = read(c->fd, c->ibuf + c->ilen, room);
        if (n == 0) { set_err(c, "connection closed by the server"); conn_fail(c); return; }
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            set_err(c, "%s", strerror(errno));
            conn_fail(c);
            return;
        }
        c->ilen += (size_t)n;
        while (c->ipos < c->ilen) {
            long long r = resp_scan_reply(&c->sc, c->ibuf + c->ipos, c->ilen - c->ipos);
            if (r == 0) break;
            if (r < 0) {
                set_err(c, "protocol error in the server's replies: %s", c->sc.err ? c->sc.err : "?");
                conn_fail(c);
                return;
            }
            if (handle_reply(c, c->ibuf + c->ipos, (size_t)r)) return;
            c->ipos += (size_t)r;
        }
        if (c->ipos == c->ilen) {
            c->ipos = c->ilen = 0;
            if (c->icap > RB_BUF_SHRINK) { free(c->ibuf); c->ibuf = NULL; c->icap = 0; }
        }
        if ((size_t)n < room) break;
    }
}

/* ------------------------------------------------------------ connecting */

static void conn_connect(rb_conn *c) {
    rb_backend *b = c->b;
    c->proto = 2;
    resp_scanner_init(&c->sc);
    c->fd = socket(b->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        set_err(c, "socket: %s", strerror(errno));
        conn_fail(c);
        return;
    }
    if (b->sa.ss_family != AF_UNIX) {
        int one = 1;
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(c->fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    }
    ev_io_set(&c->rio, c->fd, EV_READ);
    ev_io_set(&c->wio, c->fd, EV_WRITE);
    /* the handshake goes first; commands queue behind it */
    if (b->password && b->password[0]) {
        resp_arg a[2] = { { "AUTH", 4 }, { b->password, strlen(b->password) } };
        if (queue_internal(c, SLOT_AUTH, 2, a)) { set_err(c, "out of memory"); conn_fail(c); return; }
    }
    if (b->db) {
        char dbs[24];
        int l = snprintf(dbs, sizeof dbs, "%d", b->db);
        resp_arg a[2] = { { "SELECT", 6 }, { dbs, (size_t)l } };
        if (queue_internal(c, SLOT_SELECT, 2, a)) { set_err(c, "out of memory"); conn_fail(c); return; }
    }
    c->connect_deadline = mono_ms() + b->timeout_ms;
    int rc;
    do rc = connect(c->fd, (struct sockaddr *)&b->sa, b->salen);
    while (rc < 0 && errno == EINTR);
    if (rc == 0) {
        c->state = RB_CONNECTING;
        on_connected(c);
    } else if (errno == EINPROGRESS) {
        c->state = RB_CONNECTING;
        ev_io_start(b->loop, &c->wio);
        c->wio_on = 1;
    } else {
        set_err(c, "%s", strerror(errno));
        conn_fail(c);
    }
}

static void on_retry(struct ev_loop *loop, ev_timer *w, int revents) {
    rb_conn *c = w->data;
    if (c->state == RB_DOWN) conn_connect(c);
}

/* Deadlines: a connection whose oldest request (or whose connect) is overdue
 * is stuck: reset it. */
static void on_tick(struct ev_loop *loop, ev_timer *w, int revents) {
    rb_backend *b = w->data;
    int64_t now = mono_ms();
    for (int i = 0; i < b->n; i++) {
        rb_conn *c = &b->conns[i];
        if (c->state == RB_CONNECTING && c->connect_deadline <= now) {
            b->timeouts++;
            set_err(c, "connect timed out after %lld ms", (long long)b->timeout_ms);
            conn_fail(c);
        } else if (c->state == RB_UP && c->qcount && c->q[c->qhead].deadline <= now) {
            b->timeouts++;
            set_err(c, "no reply within %lld ms", (long long)b->timeout_ms);
            conn_fail(c);
        }
    }
}

/* ------------------------------------------------------------ the ops */

/* "host:port" or "/path/to/socket" into b->sa. */
static int resolve(rb_backend *b, const char *addr, char *err, size_t errlen) {
    memset(&b->sa, 0, sizeof b->sa);
    if (addr[0] == '/') {
        struct sockaddr_un *un = (struct sockaddr_un *)&b->sa;
        if (strlen(addr) >= sizeof un->sun_path) {
            snprintf(err, errlen, "redis-address: unix socket path too long: %s", addr);
            return -1;
        }
        un->sun_family = AF_UNIX;
        strcpy(un->sun_path, addr);
        b->salen = sizeof *un;
        return 0;
    }
    const char *colon = strrchr(addr, ':');
    if (!colon || colon == addr || !colon[1]) {
        snprintf(err, errlen, "redis-address must be host:port or a unix socket path, got '%s'", addr);
        return -1;
    }
    char host[256];
    size_t hl = (size_t)(colon - addr);
    if (hl >= sizeof host) { snprintf(err, errlen, "redis-address: host name too long"); return -1; }
    memcpy(host, addr, hl);
    host[hl] = '\0';
    if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {     /* [::1]:6379 */
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = '\0';
    }
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port <= 0 || port > 65535) {
        snprintf(err, errlen, "redis-address: bad port in '%s'", addr);
        return -1;
    }
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, colon + 1, &hints, &res);
    if (rc || !res) {
        snprintf(err, errlen, "redis-address: cannot resolve '%s': %s", host, gai_strerror(rc));
        return -1;
    }
    memcpy(&b->sa, res->ai_addr, res->ai_addrlen);
    b->salen = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

static void rb_close(fd_backend *fb);

static int rb_open(fd_backend *fb, const fd_backend_config *cfg, char *err, size_t errlen) {
    if (!cfg->loop) { snprintf(err, errlen, "no event loop"); return FD_E_INTERNAL; }
    rb_backend *b = calloc(1, sizeof *b);
    if (!b) { snprintf(err, errlen, "out of memory"); return FD_E_NOMEM; }
    const char *addr = cfg->redis_address && cfg->redis_address[0] ? cfg->redis_address : "127.0.0.1:6379";
    snprintf(b->addr, sizeof b->addr, "%s", addr);
    if (resolve(b, addr, err, errlen)) { free(b); return FD_E_INTERNAL; }
    b->loop = cfg->loop;
    b->password = cfg->redis_password && cfg->redis_password[0] ? strdup(cfg->redis_password) : NULL;
    b->db = cfg->redis_db;
    b->timeout_ms = cfg->backend_timeout_ms > 0 ? cfg->backend_timeout_ms : 1000;
    b->n = cfg->redis_pool_size > 0 ? cfg->redis_pool_size : 4;
    b->conns = calloc((size_t)b->n, sizeof *b->conns);
    if (!b->conns) { free(b->password); free(b); snprintf(err, errlen, "out of memory"); return FD_E_NOMEM; }
    fb->state = b;
    int64_t tick = b->timeout_ms / 4 < RB_TICK_MS ? (b->timeout_ms / 4 > 0 ? b->timeout_ms / 4 : 1) : RB_TICK_MS;
    ev_timer_init(&b->tick, on_tick, tick / 1000.0, tick / 1000.0);
    b->tick.data = b;
    ev_timer_start(b->loop, &b->tick);
    for (int i = 0; i < b->n; i++) {
        rb_conn *c = &b->conns[i];
        c->b = b;
        c->idx = i;
        c->fd = -1;
        c->state = RB_DOWN;
        c->proto = 2;
        snprintf(c->lasterr, sizeof c->lasterr, "not connected yet");
        ev_io_init(&c->rio, on_read, -1, EV_READ);
        ev_io_init(&c->wio, on_write, -1, EV_WRITE);
        ev_timer_init(&c->retry, on_retry, 0., 0.);
        c->rio.data = c->wio.data = c->retry.data = c;
        resp_scanner_init(&c->sc);
    }
    for (int i = 0; i < b->n; i++) conn_connect(&b->conns[i]);
    /* a backend that is not reachable yet is not fatal: clients get errors
     * until it comes up (conn_fail logged the warning) */
    return FD_OK;
}

static void rb_close(fd_backend *fb) {
    rb_backend *b = fb->state;
    if (!b) return;
    ev_timer_stop(b->loop, &b->tick);
    for (int i = 0; i < b->n; i++) {
        rb_conn *c = &b->conns[i];
        ev_timer_stop(b->loop, &c->retry);
        if (c->fd >= 0) {
            ev_io_stop(b->loop, &c->rio);
            ev_io_stop(b->loop, &c->wio);
            close(c->fd);
            c->fd = -1;
        }
        while (c->qcount) {
            rb_slot s = q_pop(c);
            if (s.kind == SLOT_CLIENT) fd_pending_error(s.p, FD_E_UNAVAILABLE);
        }
        free(c->q);
        free(c->obuf);
        free(c->ibuf);
    }
    free(b->conns);
    free(b->no_resp3);
    free(b->password);
    free(b);
    fb->state = NULL;
}

/* Why a command cannot go over a shared connection, or NULL. */
static const char *refusal(const fd_request *r) {
    const resp_arg *a = &r->argv[0];
#define IS(s) (a->len == sizeof(s) - 1 && strncasecmp(a->ptr, s, sizeof(s) - 1) == 0)
    if (IS("blpop") || IS("brpop") || IS("brpoplpush") || IS("blmove") || IS("blmpop") ||
        IS("bzpopmin") || IS("bzpopmax") || IS("bzmpop") || IS("wait"))
        return "it would block a shared backend connection";
    if (IS("xread") || IS("xreadgroup")) {
        for (int i = 1; i < r->argc; i++) {
            const resp_arg *x = &r->argv[i];
            if (x->len == 7 && strncasecmp(x->ptr, "streams", 7) == 0) break;
            if (x->len == 5 && strncasecmp(x->ptr, "block", 5) == 0)
                return "it would block a shared backend connection";
        }
        return NULL;
    }
    if (IS("subscribe") || IS("psubscribe") || IS("ssubscribe") || IS("unsubscribe") ||
        IS("punsubscribe") || IS("sunsubscribe") || IS("monitor"))
        return "it would turn a shared backend connection into a message stream";
    if (IS("multi") || IS("exec") || IS("discard") || IS("watch") || IS("unwatch"))
        return "a transaction would take in other clients' commands on a shared backend connection";
    if (IS("reset"))
        return "it would reset a shared backend connection";
    if (IS("sync") || IS("psync") || IS("replconf"))
        return "it would turn a shared backend connection into a replication link";
    if (IS("shutdown"))
        return "it would stop the backend server every client shares";
#undef IS
    return NULL;
}

static int rb_submit(fd_backend *fb, fd_request *r) {
    rb_backend *b = fb->state;
    const char *why = refusal(r);
    if (why) {
        char name[64];
        size_t l = r->argv[0].len < sizeof name - 1 ? r->argv[0].len : sizeof name - 1;
        for (size_t i = 0; i < l; i++) {
            char ch = r->argv[0].ptr[i];
            name[i] = (char)((ch >= 'A' && ch <= 'Z') ? ch + 32 : ch);
        }
        name[l] = '\0';
        b->refused++;
        resp_add_errorf(r->out, "ERR '%s' is not supported by frontdoor's redis backend: %s", name, why);
        return FD_OK;
    }
    rb_conn *c = &b->conns[r->client_id % (uint64_t)b->n];
    if (c->state == RB_DOWN) {
        char msg[512];
        size_t ml = unavailable_reply(c, msg, sizeof msg);
        b->failed++;
        resp_out_raw(r->out, msg, ml);
        return FD_OK;
    }
    int proto = r->out->proto == 3 ? 3 : 2;
    if (proto == 3 && b->no_resp3) {
        resp_add_errorf(r->out, "ERR RESP3 is not available through frontdoor's redis backend (redis %s: %s)",
                        b->addr, b->no_resp3);
        return FD_OK;
    }
    size_t need = r->raw ? r->rawlen : multibulk_len(r->argc, r->argv);
    if (proto != c->proto) need += 32;
    if (obuf_reserve(c, need)) return FD_E_NOMEM;
    if (proto != c->proto && queue_hello(c, proto)) return FD_E_NOMEM;
    if (q_push(c, r->pending, SLOT_CLIENT, mono_ms() + b->timeout_ms)) return FD_E_NOMEM;
    if (r->raw) obuf_put(c, r->raw, r->rawlen);
    else put_multibulk(c, r->argc, r->argv);
    b->forwarded++;
    mark_dirty(c);
    return FD_PENDING;
}

/* Once per loop turn: one write per connection that got commands. */
static int rb_end_turn(fd_backend *fb) {
    rb_backend *b = fb->state;
    rb_conn *c = b->dirty;
    b->dirty = NULL;
    while (c) {
        rb_conn *next = c->dirty_next;
        c->dirty = 0;
        c->dirty_next = NULL;
        if (c->state == RB_UP && !c->wio_on && c->opos < c->olen) conn_write(c);
        c = next;
    }
    return FD_OK;
}

static void rb_info(fd_backend *fb, resp_out *o) {
    rb_backend *b = fb->state;
    char line[512];
    int up = 0;
    uint64_t inflight = 0;
    for (int i = 0; i < b->n; i++) {
        if (b->conns[i].state == RB_UP) up++;
        for (size_t k = 0; k < b->conns[i].qcount; k++)
            if (b->conns[i].q[(b->conns[i].qhead + k) & (b->conns[i].qcap - 1)].kind == SLOT_CLIENT) inflight++;
    }
    int n = snprintf(line, sizeof line,
                     "redis_backend_address:%s\r\n"
                     "redis_backend_pool_size:%d\r\n"
                     "redis_backend_connections_up:%d\r\n"
                     "redis_backend_inflight:%llu\r\n"
                     "redis_backend_forwarded:%llu\r\n"
                     "redis_backend_refused:%llu\r\n"
                     "redis_backend_failed:%llu\r\n"
                     "redis_backend_connects:%llu\r\n"
                     "redis_backend_reconnects:%llu\r\n"
                     "redis_backend_timeouts:%llu\r\n"
                     "redis_backend_timeout_ms:%lld\r\n",
                     b->addr, b->n, up, (unsigned long long)inflight, (unsigned long long)b->forwarded,
                     (unsigned long long)b->refused, (unsigned long long)b->failed,
                     (unsigned long long)b->connects, (unsigned long long)b->reconnects,
                     (unsigned long long)b->timeouts, (long long)b->timeout_ms);
    if (n > 0) resp_out_raw(o, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

const fd_backend_ops fd_redis_backend = {
    .name = "redis",
    .async = 1,
    .passthrough = 1,
    .open = rb_open,
    .close = rb_close,
    .submit = rb_submit,
    .end_turn = rb_end_turn,
    .cron = NULL,
    .keyspace = NULL,
    .info = rb_info,
};
