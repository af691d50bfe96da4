/* redis_conn.c — non-blocking RESP connections on the libev loop (see
 * redis_conn.h). Factored out of the redis backend so that the redis and
 * redis-cluster backends share one piece of connection code.
 *
 * Why not hiredis: Debian 12 ships hiredis 0.14.1, whose reply reader has no
 * RESP3 support, and a proxy only needs to know where each reply ends:
 * protocol/resp_scan.h finds that without building any object. */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "clock.h"
#include "redis_conn.h"
#include "redis_settings.h"
#include "backend.h"
#include "host.h"
#include <stdint.h>

#define RC_READ_CHUNK      (64 * 1024)   /* room made before each read */
#define RC_BUF_SHRINK      (1024 * 1024) /* idle buffers above this are freed */
#define RC_BACKOFF_MIN_MS  50
#define RC_BACKOFF_MAX_MS  2000
#define RC_TICK_MS         50            /* deadline checks */
#define RC_READS_PER_EVENT 16

enum { K_CLIENT, K_AUTH, K_SELECT, K_HELLO, K_IGNORE };

/* ------------------------------------------------------------ buffers */

static int obuf_reserve(rc_conn *c, size_t extra) {
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

static void obuf_put(rc_conn *c, const void *p, size_t n) {
    memcpy(c->obuf + c->olen, p, n);
    c->olen += n;
}

/* Bytes of argv encoded as a multibulk (an upper bound). */
static size_t multibulk_len(int argc, const resp_arg *argv) {
    size_t n = 24;
    for (int i = 0; i < argc; i++) n += argv[i].len + 32;   /* "$<20 digits>\r\n" + "\r\n" */
    return n;
}

static void put_multibulk(rc_conn *c, int argc, const resp_arg *argv) {
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

static int q_push(rc_conn *c, rc_reply_fn fn, void *ctx, int kind, int64_t deadline) {
    if (c->qcount == c->qcap) {
        size_t ncap = c->qcap ? c->qcap * 2 : 64;
        rc_slot *nq = malloc(ncap * sizeof *nq);
        if (!nq) return -1;
        for (size_t i = 0; i < c->qcount; i++) nq[i] = c->q[(c->qhead + i) & (c->qcap - 1)];
        free(c->q);
        c->q = nq;
        c->qcap = ncap;
        c->qhead = 0;
    }
    rc_slot *s = &c->q[(c->qhead + c->qcount) & (c->qcap - 1)];
    s->fn = fn;
    s->ctx = ctx;
    s->kind = kind;
    s->deadline = deadline;
    c->qcount++;
    c->qpushed++;
    if (fn) c->qclients++;
    return 0;
}

static rc_slot q_pop(rc_conn *c) {
    rc_slot s = c->q[c->qhead];
    c->qhead = (c->qhead + 1) & (c->qcap - 1);
    c->qcount--;
    c->qpopped++;
    if (s.fn) c->qclients--;
    return s;
}

/* Queue an internal command (AUTH, SELECT, HELLO, ASKING): its reply is consumed here. */
static int queue_internal(rc_conn *c, int kind, int argc, const resp_arg *argv) {
    if (obuf_reserve(c, multibulk_len(argc, argv)) || q_push(c, NULL, NULL, kind, fd_mono_ms() + c->sh->timeout_ms))
        return -1;
    put_multibulk(c, argc, argv);
    return 0;
}

static void mark_dirty(rc_conn *c) {
    if (c->dirty) return;
    c->dirty = 1;
    c->dirty_next = c->sh->dirty;
    c->sh->dirty = c;
}

/* ------------------------------------------------------------ failure */

static void conn_connect(rc_conn *c);

size_t rc_unavailable(const rc_conn *c, char *buf, size_t len) {
    int n = snprintf(buf, len, "-ERR backend unavailable (%s %s: %s)\r\n", c->sh->label, c->addr->name, c->lasterr);
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

static void set_err(rc_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(rc_conn *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->lasterr, sizeof c->lasterr, fmt, ap);
    va_end(ap);
    for (char *p = c->lasterr; *p; p++)
        if (*p == '\r' || *p == '\n') *p = ' ';
}

static void close_socket(rc_conn *c) {
    if (c->ssl) {
        if (c->tls_done) SSL_shutdown(c->ssl);   /* best effort, never waits */
        SSL_free(c->ssl);
        ERR_clear_error();
        c->ssl = NULL;
        c->tls_done = 0;
    }
    if (c->fd >= 0) {
        ev_io_stop(c->sh->loop, &c->rio);
        ev_io_stop(c->sh->loop, &c->wio);
        close(c->fd);
        c->fd = -1;
    }
    c->wio_on = 0;
    c->state = RC_DOWN;
    c->proto = 2;
    c->olen = c->opos = 0;
    c->ilen = c->ipos = 0;
    c->client_id = 0;
    resp_scanner_init(&c->sc);
    if (c->ocap > RC_BUF_SHRINK) { free(c->obuf); c->obuf = NULL; c->ocap = 0; }
    if (c->icap > RC_BUF_SHRINK) { free(c->ibuf); c->ibuf = NULL; c->icap = 0; }
}

/* Complete every queued request with the local error. The connection is
 * already down (state, buffers), so a callback that sends again on it is
 * refused instead of queueing behind the failure. */
static void fail_queue(rc_conn *c) {
    char msg[512];
    size_t ml = rc_unavailable(c, msg, sizeof msg);
    while (c->qcount) {
        rc_slot s = q_pop(c);
        if (s.fn) {
            c->failed++;
            s.fn(s.ctx, msg, ml, 1);
        }
    }
}

/* The connection is unusable: close it, fail every request it holds with the
 * reason in c->lasterr, and schedule a reconnect with backoff. */
static void conn_fail(rc_conn *c) {
    rc_shared *sh = c->sh;
    if (!c->addr->warned && !c->stopped) {   /* a stopped one ends as meant (a drained wait) */
        fd_log(FD_LOG_WARNING, "%s backend %s unavailable: %s (retrying)", sh->label, c->addr->name, c->lasterr);
        c->addr->warned = 1;
    } else {
        fd_log(FD_LOG_VERBOSE, "%s backend %s connection %d: %s", sh->label, c->addr->name, c->idx, c->lasterr);
    }
    close_socket(c);
    if (!c->backoff_ms) c->backoff_ms = RC_BACKOFF_MIN_MS;
    ev_timer_stop(sh->loop, &c->retry);
    if (!c->stopped) {
        ev_timer_set(&c->retry, c->backoff_ms / 1000.0, 0.);
        ev_timer_start(sh->loop, &c->retry);
    }
    c->backoff_ms = c->backoff_ms * 2 > RC_BACKOFF_MAX_MS ? RC_BACKOFF_MAX_MS : c->backoff_ms * 2;
    fail_queue(c);
}

/* ------------------------------------------------------------ writing */

/* ------------------------------------------------------------ TLS */

/* The text of a failed TLS call (ret) into c->lasterr; 0 = it only waits
 * for the socket (*want_write: to be writable). */
static int tls_failed(rc_conn *c, int ret, const char *what, int *want_write) {
    int e = SSL_get_error(c->ssl, ret);
    if (e == SSL_ERROR_WANT_READ) { *want_write = 0; return 0; }
    if (e == SSL_ERROR_WANT_WRITE) { *want_write = 1; return 0; }
    char why[200] = "connection closed";
    unsigned long q = ERR_get_error();
    if (q) ERR_error_string_n(q, why, sizeof why);
    else if (e == SSL_ERROR_SYSCALL && errno) snprintf(why, sizeof why, "%s", strerror(errno));
    ERR_clear_error();
    long vr = SSL_get_verify_result(c->ssl);
    if (vr != X509_V_OK) set_err(c, "%s: %s (certificate: %s)", what, why, X509_verify_cert_error_string(vr));
    else set_err(c, "%s: %s", what, why);
    return -1;
}

/* The socket I/O: plain, or through the connection's SSL. > 0 bytes, 0 at
 * EOF (recv), -1 with errno (EAGAIN: wait; EPROTO: c->lasterr is set). */
static ssize_t sock_recv(rc_conn *c, void *buf, size_t len) {
    if (!c->ssl) return read(c->fd, buf, len);
    ERR_clear_error();
    errno = 0;
    int n = SSL_read(c->ssl, buf, (int)(len > (1u << 30) ? (1u << 30) : len));
    if (n > 0) return n;
    int ww;
    if (SSL_get_error(c->ssl, n) == SSL_ERROR_ZERO_RETURN) return 0;
    if (!tls_failed(c, n, "TLS read", &ww)) {
        if (ww && !c->wio_on) { ev_io_start(c->sh->loop, &c->wio); c->wio_on = 1; }
        errno = EAGAIN;
        return -1;
    }
    errno = EPROTO;
    return -1;
}

static ssize_t sock_send(rc_conn *c, const void *buf, size_t len) {
    if (!c->ssl) return write(c->fd, buf, len);
    ERR_clear_error();
    errno = 0;
    int n = SSL_write(c->ssl, buf, (int)(len > (1u << 30) ? (1u << 30) : len));
    if (n > 0) return n;
    int ww;
    if (!tls_failed(c, n, "TLS write", &ww)) { errno = EAGAIN; return -1; }
    errno = EPROTO;
    return -1;
}

int rc_shared_tls(rc_shared *sh, const char *ca_file, const char *cert_file, const char *key_file,
                  const char *sni, char *err, size_t errlen) {
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    char why[200];
    if (!ctx) { snprintf(err, errlen, "TLS: out of memory"); return -1; }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    int ok = ca_file && ca_file[0] ? SSL_CTX_load_verify_locations(ctx, ca_file, NULL) : SSL_CTX_set_default_verify_paths(ctx);
    if (ok <= 0) goto bad;
    if (cert_file && cert_file[0] && SSL_CTX_use_certificate_chain_file(ctx, cert_file) <= 0) goto bad;
    if (key_file && key_file[0] && SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) <= 0) goto bad;
    sh->tls_ctx = ctx;
    sh->tls_sni = sni && sni[0] ? strdup(sni) : NULL;
    return 0;
bad:
    ERR_error_string_n(ERR_get_error(), why, sizeof why);
    ERR_clear_error();
    snprintf(err, errlen, "TLS to %s: cannot load the CA, certificate or key: %s", sh->label, why);
    SSL_CTX_free(ctx);
    return -1;
}

/* Write obuf[opos..olen). Returns -1 if the connection failed. */
static int conn_write(rc_conn *c) {
    while (c->opos < c->olen) {
        ssize_t n = sock_send(c, c->obuf + c->opos, c->olen - c->opos);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            if (errno != EPROTO) set_err(c, "%s", strerror(errno));
            conn_fail(c);
            return -1;
        }
        c->opos += (size_t)n;
    }
    if (c->opos == c->olen) {
        c->opos = c->olen = 0;
        if (c->ocap > RC_BUF_SHRINK) { free(c->obuf); c->obuf = NULL; c->ocap = 0; }
        if (c->wio_on) { ev_io_stop(c->sh->loop, &c->wio); c->wio_on = 0; }
    } else if (!c->wio_on) {
        ev_io_start(c->sh->loop, &c->wio);
        c->wio_on = 1;
    }
    return 0;
}

/* Advance the TLS handshake (the connection stays RC_CONNECTING, under its
 * connect deadline). 1 when done, 0 when it waits, -1 when it failed. */
static int tls_handshake(rc_conn *c) {
    rc_shared *sh = c->sh;
    if (!c->ssl) {
        SSL *s = SSL_new(sh->tls_ctx);
        if (!s || !SSL_set_fd(s, c->fd)) { if (s) SSL_free(s); set_err(c, "TLS: out of memory"); conn_fail(c); return -1; }
        c->ssl = s;
        if (sh->tls_sni) {
            SSL_set_tlsext_host_name(s, sh->tls_sni);
            SSL_set_hostflags(s, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
            SSL_set1_host(s, sh->tls_sni);
        }
        SSL_set_connect_state(s);
    }
    ERR_clear_error();
    errno = 0;
    int r = SSL_do_handshake(c->ssl);
    if (r == 1) {
        c->tls_done = 1;
        if (c->wio_on) { ev_io_stop(sh->loop, &c->wio); c->wio_on = 0; }
        ev_io_stop(sh->loop, &c->rio);
        return 1;
    }
    int ww;
    if (tls_failed(c, r, "TLS handshake failed", &ww)) {
        conn_fail(c);          /* logs the reason (once as a warning, then verbose) */
        return -1;
    }
    if (ww && !c->wio_on) { ev_io_start(sh->loop, &c->wio); c->wio_on = 1; }
    if (!ww && c->wio_on) { ev_io_stop(sh->loop, &c->wio); c->wio_on = 0; }
    if (!ww) ev_io_start(sh->loop, &c->rio);
    return 0;
}

static void on_connected(rc_conn *c) {
    if (!c->ssl) {
        int err = 0;
        socklen_t el = sizeof err;
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0) err = errno;
        if (err) {
            set_err(c, "%s", strerror(err));
            conn_fail(c);
            return;
        }
    }
    if (c->sh->tls_ctx && !c->tls_done && tls_handshake(c) <= 0) return;
    c->state = RC_UP;
    c->connects++;
    if (c->ever_up) c->reconnects++;
    c->ever_up = 1;
    ev_io_start(c->sh->loop, &c->rio);
    if (c->on_up) c->on_up(c);
    conn_write(c);
}

static void on_write(struct ev_loop *loop, ev_io *w, int revents) {
    rc_conn *c = w->data;
    if (c->state == RC_CONNECTING) {
        ev_io_stop(loop, &c->wio);
        c->wio_on = 0;
        on_connected(c);
        return;
    }
    conn_write(c);
    /* a TLS read that waited for the socket to be writable */
    if (c->ssl && c->state == RC_UP && ev_is_active(&c->rio)) ev_feed_event(loop, &c->rio, EV_READ);
}

/* ------------------------------------------------------------ reading */

/* One complete reply at data[0..len). Returns -1 if the connection failed. */
static int handle_reply(rc_conn *c, const char *data, size_t len) {
    if (c->push && (data[0] == '*' || data[0] == '>')) { c->push(c, data, len); return 0; }
    if (c->push && !c->qcount) return 0;   /* a relay's refused (un)subscribe (e.g. -MOVED): nothing waits for it */
    if (data[0] == '>') return 0;   /* a RESP3 push (no command of ours asks for them): dropped */
    if (!c->qcount) {
        set_err(c, "protocol error: a reply nobody asked for (%.40s)", data);
        conn_fail(c);
        return -1;
    }
    rc_slot s = q_pop(c);
    if (s.kind != K_CLIENT && s.kind != K_IGNORE && data[0] == '-') {
        size_t l = len > 3 ? len - 3 : 0;   /* without the "-" and the CRLF */
        set_err(c, "%s failed: %.*s", s.kind == K_AUTH ? "AUTH" : s.kind == K_SELECT ? "SELECT" : "HELLO",
                (int)(l > 120 ? 120 : l), data + 1);
        fd_log(FD_LOG_WARNING, "%s backend %s: %s", c->sh->label, c->addr->name, c->lasterr);
        if (s.kind == K_HELLO && !c->sh->no_resp3) {
            /* a server without HELLO cannot give RESP3 replies: from now on
             * RESP3 clients get an error instead of breaking the connection
             * for everyone sharing it */
            c->sh->no_resp3 = strdup(c->lasterr);
        }
        c->addr->warned = 1;
        conn_fail(c);       /* the backoff goes on growing: no tight loop on a wrong password */
        return -1;
    }
    c->backoff_ms = 0;
    if (c->addr->warned) {
        fd_log(FD_LOG_NOTICE, "%s backend %s is available again", c->sh->label, c->addr->name);
        c->addr->warned = 0;
    }
    if (s.fn) s.fn(s.ctx, data, len, 0);
    return 0;
}

static void on_read(struct ev_loop *loop, ev_io *w, int revents) {
    rc_conn *c = w->data;
    if (c->state == RC_CONNECTING) { on_connected(c); return; }   /* a TLS handshake waiting to read */
    for (int round = 0; round < RC_READS_PER_EVENT; round++) {
        if (c->icap - c->ilen < RC_READ_CHUNK) {
            if (c->ipos > 0 && c->ipos >= c->ilen / 2) {
                memmove(c->ibuf, c->ibuf + c->ipos, c->ilen - c->ipos);
                c->ilen -= c->ipos;
                c->ipos = 0;
            }
            if (c->icap - c->ilen < RC_READ_CHUNK) {
                size_t ncap = c->icap ? c->icap : RC_READ_CHUNK * 2;
                while (ncap - c->ilen < RC_READ_CHUNK) ncap *= 2;
                char *nb = realloc(c->ibuf, ncap);
                if (!nb) { set_err(c, "out of memory"); conn_fail(c); return; }
                c->ibuf = nb;
                c->icap = ncap;
            }
        }
        size_t room = c->icap - c->ilen;
        ssize_t n = sock_recv(c, c->ibuf + c->ilen, room);
        if (n == 0) { set_err(c, "connection closed by the server"); conn_fail(c); return; }
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            if (errno != EPROTO) set_err(c, "%s", strerror(errno));
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
            /* the callback may queue on this connection (obuf), never touch ibuf */
            size_t at = c->ipos;
            c->ipos += (size_t)r;
            if (handle_reply(c, c->ibuf + at, (size_t)r)) return;
            if (c->state != RC_UP) return;
        }
        if (c->ipos == c->ilen) {
            c->ipos = c->ilen = 0;
            if (c->icap > RC_BUF_SHRINK) { free(c->ibuf); c->ibuf = NULL; c->icap = 0; }
        }
        /* a TLS read returns one record: go on while OpenSSL holds more */
        if ((size_t)n < room && !(c->ssl && SSL_has_pending(c->ssl))) break;
    }
    if (c->ssl && c->state == RC_UP && SSL_has_pending(c->ssl)) ev_feed_event(loop, &c->rio, EV_READ);
}

/* ------------------------------------------------------------ connecting */

static void conn_connect(rc_conn *c) {
    rc_shared *sh = c->sh;
    const rc_addr *a = c->addr;
    c->proto = 2;
    resp_scanner_init(&c->sc);
    c->fd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        set_err(c, "socket: %s", strerror(errno));
        conn_fail(c);
        return;
    }
    if (a->sa.ss_family != AF_UNIX) {
        int one = 1;
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(c->fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    }
    ev_io_set(&c->rio, c->fd, EV_READ);
    ev_io_set(&c->wio, c->fd, EV_WRITE);
    /* the handshake goes first; commands queue behind it */
    if (sh->password && sh->password[0]) {
        resp_arg av[3] = { { "AUTH", 4 }, { sh->user, sh->user ? strlen(sh->user) : 0 },
                           { sh->password, strlen(sh->password) } };
        if (!sh->user) av[1] = av[2];      /* AUTH password: the default user */
        if (queue_internal(c, K_AUTH, sh->user ? 3 : 2, av)) { set_err(c, "out of memory"); conn_fail(c); return; }
    }
    if (sh->db) {
        char dbs[24];
        int l = snprintf(dbs, sizeof dbs, "%d", sh->db);
        resp_arg av[2] = { { "SELECT", 6 }, { dbs, (size_t)l } };
        if (queue_internal(c, K_SELECT, 2, av)) { set_err(c, "out of memory"); conn_fail(c); return; }
    }
    if (sh->notify) {      /* re-applied on every connection (rc_notify_set); its reply is ignored */
        resp_arg av[4] = { { "CONFIG", 6 }, { "SET", 3 }, { "notify-keyspace-events", 22 },
                           { sh->notify, strlen(sh->notify) } };
        if (queue_internal(c, K_IGNORE, 4, av)) { set_err(c, "out of memory"); conn_fail(c); return; }
    }
    c->connect_deadline = fd_mono_ms() + sh->timeout_ms;
    int rc;
    do rc = connect(c->fd, (const struct sockaddr *)&a->sa, a->salen);
    while (rc < 0 && errno == EINTR);
    if (rc == 0) {
        c->state = RC_CONNECTING;
        on_connected(c);
    } else if (errno == EINPROGRESS) {
        c->state = RC_CONNECTING;
        ev_io_start(sh->loop, &c->wio);
        c->wio_on = 1;
    } else {
        set_err(c, "%s", strerror(errno));
        conn_fail(c);
    }
}

static void on_retry(struct ev_loop *loop, ev_timer *w, int revents) {
    rc_conn *c = w->data;
    if (c->state == RC_DOWN && !c->stopped) conn_connect(c);
}

/* Deadlines: a connection whose oldest request (or whose connect) is overdue
 * is stuck: reset it. */
static void on_tick(struct ev_loop *loop, ev_timer *w, int revents) {
    rc_shared *sh = w->data;
    int64_t now = fd_mono_ms();
    rc_conn *next;
    for (rc_conn *c = sh->all; c; c = next) {
        next = c->all_next;     /* callbacks must not destroy connections, but be safe with the order */
        if (c->state == RC_CONNECTING && c->connect_deadline <= now) {
            c->timeouts++;
            set_err(c, "connect timed out after %lld ms", (long long)sh->timeout_ms);
            conn_fail(c);
        } else if (c->state == RC_UP && c->qcount && c->q[c->qhead].deadline <= now) {
            c->timeouts++;
            set_err(c, "no reply within %lld ms", (long long)sh->timeout_ms);
            conn_fail(c);
        }
    }
}

/* ------------------------------------------------------------ API */

int rc_addr_resolve(rc_addr *a, const char *addr, const char *what, int numeric, char *err, size_t errlen) {
    memset(a, 0, sizeof *a);
    snprintf(a->name, sizeof a->name, "%s", addr);
    if (addr[0] == '/') {
        struct sockaddr_un *un = (struct sockaddr_un *)&a->sa;
        if (strlen(addr) >= sizeof un->sun_path) {
            snprintf(err, errlen, "%s: unix socket path too long: %s", what, addr);
            return -1;
        }
        un->sun_family = AF_UNIX;
        strcpy(un->sun_path, addr);
        a->salen = sizeof *un;
        return 0;
    }
    const char *colon = strrchr(addr, ':');
    if (!colon || colon == addr || !colon[1]) {
        snprintf(err, errlen, "%s must be host:port or a unix socket path, got '%s'", what, addr);
        return -1;
    }
    char host[256];
    size_t hl = (size_t)(colon - addr);
    if (hl >= sizeof host) { snprintf(err, errlen, "%s: host name too long", what); return -1; }
    memcpy(host, addr, hl);
    host[hl] = '\0';
    if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {     /* [::1]:6379 */
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = '\0';
    }
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port <= 0 || port > 65535) {
        snprintf(err, errlen, "%s: bad port in '%s'", what, addr);
        return -1;
    }
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | (numeric ? AI_NUMERICHOST : 0);
    int rc = getaddrinfo(host, colon + 1, &hints, &res);
    if (rc || !res) {
        snprintf(err, errlen, "%s: cannot resolve '%s': %s", what, host, gai_strerror(rc));
        return -1;
    }
    memcpy(&a->sa, res->ai_addr, res->ai_addrlen);
    a->salen = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

void rc_shared_init(rc_shared *sh) {
    if (sh->timeout_ms <= 0) sh->timeout_ms = 1000;
    int64_t tick = sh->timeout_ms / 4 < RC_TICK_MS ? (sh->timeout_ms / 4 > 0 ? sh->timeout_ms / 4 : 1) : RC_TICK_MS;
    ev_timer_init(&sh->tick, on_tick, tick / 1000.0, tick / 1000.0);
    sh->tick.data = sh;
    ev_timer_start(sh->loop, &sh->tick);
}

static void blocking_close_all(rc_shared *sh);

void rc_shared_close(rc_shared *sh) {
    blocking_close_all(sh);
    ev_timer_stop(sh->loop, &sh->tick);
    free(sh->no_resp3);
    sh->no_resp3 = NULL;
    if (sh->tls_ctx) SSL_CTX_free(sh->tls_ctx);
    sh->tls_ctx = NULL;
    free(sh->tls_sni);
    sh->tls_sni = NULL;
    free(sh->notify);
    sh->notify = NULL;
}

void rc_notify_set(rc_shared *sh, const char *classes) {
    char *copy = strdup(classes);
    if (!copy) return;
    free(sh->notify);
    sh->notify = copy;
    resp_arg av[4] = { { "CONFIG", 6 }, { "SET", 3 }, { "notify-keyspace-events", 22 }, { copy, strlen(copy) } };
    for (rc_conn *c = sh->all; c; c = c->all_next)   /* connecting ones too: before their first command */
        if (c->state != RC_DOWN && !c->push) rc_send(c, 0, NULL, 0, 4, av, NULL, NULL);
}

void rc_conn_init(rc_conn *c, rc_shared *sh, rc_addr *a, int idx) {
    memset(c, 0, sizeof *c);
    c->sh = sh;
    c->addr = a;
    c->idx = idx;
    c->fd = -1;
    c->state = RC_DOWN;
    c->proto = 2;
    c->hold = idx >= 0;   /* a pooled connection gathers its writes (rc_flush) */
    snprintf(c->lasterr, sizeof c->lasterr, "not connected yet");
    ev_io_init(&c->rio, on_read, -1, EV_READ);
    ev_io_init(&c->wio, on_write, -1, EV_WRITE);
    ev_timer_init(&c->retry, on_retry, 0., 0.);
    c->rio.data = c->wio.data = c->retry.data = c;
    resp_scanner_init(&c->sc);
    c->all_next = sh->all;
    if (sh->all) sh->all->all_prev = c;
    sh->all = c;
    conn_connect(c);
}

void rc_conn_destroy(rc_conn *c) {
    rc_shared *sh = c->sh;
    c->stopped = 1;
    ev_timer_stop(sh->loop, &c->retry);
    close_socket(c);
    snprintf(c->lasterr, sizeof c->lasterr, "shutting down");
    fail_queue(c);
    if (c->dirty) {     /* off the flush list */
        rc_conn **pp = &sh->dirty;
        while (*pp && *pp != c) pp = &(*pp)->dirty_next;
        if (*pp) *pp = c->dirty_next;
        c->dirty = 0;
    }
    if (c->all_prev) c->all_prev->all_next = c->all_next;
    else if (sh->all == c) sh->all = c->all_next;
    if (c->all_next) c->all_next->all_prev = c->all_prev;
    c->all_prev = c->all_next = NULL;
    free(c->q);
    free(c->obuf);
    free(c->ibuf);
    c->q = NULL;
    c->obuf = c->ibuf = NULL;
    c->qcap = c->ocap = c->icap = 0;
}

int rc_send(rc_conn *c, int proto, const char *raw, size_t rawlen, int argc, const resp_arg *argv,
            rc_reply_fn fn, void *ctx) {
    return rc_send_ex(c, proto, raw, rawlen, argc, argv, fn, ctx, c->sh->timeout_ms);
}

int rc_send_ex(rc_conn *c, int proto, const char *raw, size_t rawlen, int argc, const resp_arg *argv,
               rc_reply_fn fn, void *ctx, int64_t timeout_ms) {
    if (c->state == RC_DOWN || c->stopped) return -1;
    if (proto == 0) proto = c->proto;
    size_t need = raw ? rawlen : multibulk_len(argc, argv);
    if (proto != c->proto) need += 32;
    if (obuf_reserve(c, need)) return -1;
    if (proto != c->proto) {
        resp_arg h[2] = { { "HELLO", 5 }, { proto == 3 ? "3" : "2", 1 } };
        if (queue_internal(c, K_HELLO, 2, h)) return -1;
        c->proto = proto;
    }
    if (q_push(c, fn, ctx, fn ? K_CLIENT : K_IGNORE, timeout_ms < 0 ? INT64_MAX : fd_mono_ms() + timeout_ms)) return -1;
    if (raw) obuf_put(c, raw, rawlen);
    else put_multibulk(c, argc, argv);
    mark_dirty(c);
    return 0;
}

static void destroy_zombies(rc_shared *sh) {
    while (sh->zombies) {
        rc_conn *z = sh->zombies;
        sh->zombies = z->pool_next;
        rc_conn_destroy(z);
        free(z);
    }
}

void rc_flush(rc_shared *sh) {
    destroy_zombies(sh);
    rc_conn *c = sh->dirty;
    sh->dirty = NULL;
    while (c) {
        rc_conn *next = c->dirty_next;
        c->dirty_next = NULL;
        if (c->hold && c->state == RC_UP && c->qpopped < c->sent_seq && c->olen - c->opos < RC_HOLD_BYTES) {
            /* held: back on the list at once (where rc_conn_destroy finds
             * it, beside connections a failing write's callbacks mark
             * dirty), written by the flush of the turn its last write's
             * replies are all in */
            c->dirty_next = sh->dirty;
            sh->dirty = c;
            c->holds++;
        } else {
            c->dirty = 0;
            if (c->state == RC_UP && !c->wio_on && c->opos < c->olen) {
                c->sent_seq = c->qpushed;
                conn_write(c);
            }
        }
        c = next;
    }
}

const char *rc_support(const struct fd_command *cmd) {
    (void)cmd;
    return FD_SERVED;
}

/* Why a command cannot go over a shared connection, or NULL. */
const char *rc_refusal(int argc, const resp_arg *argv) {
    const resp_arg *a = &argv[0];
    /* every command passes here: the names below are 4, 5 or 8 bytes long,
     * so the rest (GET, SET...) leave at once (issue 31: this was ~100
     * instructions of string compares per command) */
    if (a->len != 4 && a->len != 5 && a->len != 8) return NULL;
#define IS(s) resp_arg_is(a, s)
    /* blocking pops, XREAD/XREADGROUP BLOCK, (P|S)SUBSCRIBE, MONITOR and
     * RESET are the proxy's (proxy/blocking.c, proxy/pubsub.c): they never
     * come here, but inside a forwarded MULTI block, where Redis does not
     * block */
    if (IS("wait"))
        return "it would block a shared backend connection";
    if (IS("sync") || IS("psync") || IS("replconf"))
        return "it would turn a shared backend connection into a replication link";
    if (IS("copy"))   /* COPY ... DB n names the server's databases, not frontdoor's one */
        for (int i = 3; i + 1 < argc; i++)
            if (resp_arg_is(&argv[i], "db")) {
                long long db;   /* a value that is no int is Redis's own error */
                if (resp_str2ll(argv[i + 1].ptr, argv[i + 1].len, &db) == 0 && db == (int)db)
                    return "its DB option would name the backend server's databases "
                           "(frontdoor exposes one, redis-db there)";
            }
    if (IS("shutdown"))
        return "it would stop the backend server every client shares";
#undef IS
    return NULL;
}


/* ------------------------------------------------------------ blocking commands */

/* What a blocking command takes from its key when served: what a pop
 * served to a client that already left must give back (rc_blocking_cancel). */
enum { RB_NONE, RB_LPOP, RB_RPOP, RB_LMPOP, RB_ZPOP, RB_ZMPOP };

typedef struct rc_blocking {
    rc_shared  *sh;
    rc_conn    *c;
    fd_pending *p;               /* NULL once cancelled: the connection drains */
    int         cancelled;
    int         pops;            /* RB_* */
    int         right;           /* RB_LMPOP: the RIGHT end */
    struct rc_blocking *next;
} rc_blocking;

#define RC_BLOCKING_IDLE_MAX 8

static void blocking_unlink(rc_blocking **list, rc_blocking *x) {
    for (rc_blocking **pp = list; *pp; pp = &(*pp)->next)
        if (*pp == x) { *pp = x->next; return; }
}

/* Give a lent connection back: kept idle if it is sound, else destroyed
 * (later: this may run inside its own callback). */
static void blocking_return(rc_shared *sh, rc_conn *c, int sound) {
    sh->blocking_used--;
    if (sound && c->state == RC_UP && !c->qcount && sh->blocking_nidle < RC_BLOCKING_IDLE_MAX) {
        c->pool_next = sh->blocking_idle;
        sh->blocking_idle = c;
        sh->blocking_nidle++;
        return;
    }
    c->stopped = 1;              /* no reconnect while it waits to be destroyed */
    ev_timer_stop(sh->loop, &c->retry);
    c->pool_next = sh->zombies;
    sh->zombies = c;
}

static void give_back(rc_shared *sh, rc_blocking *x, const char *reply, size_t len);

static void blocking_reply(void *ctx, const char *reply, size_t len, int local) {
    rc_blocking *x = ctx;
    rc_shared *sh = x->sh;
    if (x->cancelled) {
        /* a drained connection (rc_blocking_cancel): the server served the
         * wait before it saw the close; what it popped goes back */
        blocking_unlink(&sh->draining, x);
        if (!local) give_back(sh, x, reply, len);
        sh->blocking_used++;                 /* blocking_return counts it back */
        blocking_return(sh, x->c, !local);
        free(x);
        return;
    }
    blocking_unlink(&sh->blocking, x);
    blocking_return(sh, x->c, !local);
    fd_pending_reply(x->p, reply, len);
    free(x);
}

/* A connection to a for a blocking command (counted in blocking_used), or
 * NULL with *err: the pool is full (refused) or out of memory. */
static rc_conn *blocking_take(rc_shared *sh, rc_addr *a, int *full) {
    int max = sh->blocking_max > 0 ? sh->blocking_max : 64;
    rc_conn *c = NULL;
    *full = 0;
    for (rc_conn **pp = &sh->blocking_idle; *pp; pp = &(*pp)->pool_next) {
        if ((*pp)->addr == a && (*pp)->state == RC_UP) {
            c = *pp;
            *pp = c->pool_next;
            sh->blocking_nidle--;
            break;
        }
    }
    if (!c) {
        if (sh->blocking_used >= max) {
            *full = 1;
            return NULL;
        }
        if (sh->blocking_idle && sh->blocking_used + sh->blocking_nidle >= max) {
            /* make room: an idle one (to another server) goes */
            rc_conn *old = sh->blocking_idle;
            sh->blocking_idle = old->pool_next;
            sh->blocking_nidle--;
            old->pool_next = sh->zombies;
            sh->zombies = old;
        }
        c = calloc(1, sizeof *c);
        if (!c) return NULL;
        rc_conn_init(c, sh, a, -1);
    }
    sh->blocking_used++;
    return c;
}

/* What r's command pops from its key when served (RB_*), and for BLMPOP
 * from which end. */
static int blocking_pops(const struct fd_request *r, int *right) {
    const resp_arg *a = &r->argv[0];
    *right = 0;
    if (resp_arg_is(a, "blpop")) return RB_LPOP;
    if (resp_arg_is(a, "brpop")) return RB_RPOP;
    if (resp_arg_is(a, "bzpopmin") || resp_arg_is(a, "bzpopmax")) return RB_ZPOP;
    if (resp_arg_is(a, "bzmpop")) return RB_ZMPOP;
    if (resp_arg_is(a, "blmpop")) {
        for (int i = 3; i < r->argc; i++)
            if (resp_arg_is(&r->argv[i], "right")) *right = 1;
        return RB_LMPOP;
    }
    return RB_NONE;   /* BLMOVE/BRPOPLPUSH move, XREAD reads, XREADGROUP keeps a PEL */
}

static void got_client_id(void *ctx, const char *reply, size_t len, int local) {
    rc_conn *c = ctx;
    long long id;
    if (local) c->client_id = 0;                  /* the connection failed: asked again on the next one */
    else c->client_id = len > 3 && reply[0] == ':' && !resp_str2ll(reply + 1, len - 3, &id) && id > 0 ? id : -1;
}

int rc_blocking_submit(rc_shared *sh, rc_addr *a, struct fd_request *r) {
    int full;
    rc_conn *c = blocking_take(sh, a, &full);
    if (!c && full) {
        sh->blocking_refused++;
        resp_add_errorf(r->out, "ERR frontdoor's %s backend has no free connection for a blocking command "
                                "(redis-blocking-pool-size %d in use)", sh->label,
                        sh->blocking_max > 0 ? sh->blocking_max : 64);
        return FD_OK;
    }
    if (!c) return FD_E_NOMEM;
    rc_blocking *x = calloc(1, sizeof *x);
    int proto = r->out->proto == 3 ? 3 : 2;
    if (!c->client_id) {     /* what rc_blocking_cancel unblocks it by; asked once per connection */
        resp_arg av[2] = { { "CLIENT", 6 }, { "ID", 2 } };
        c->client_id = -1;
        if (rc_send(c, 0, NULL, 0, 2, av, got_client_id, c)) c->client_id = 0;
    }
    if (!x || rc_send_ex(c, proto, r->raw, r->rawlen, r->argc, r->argv, blocking_reply, x, -1)) {
        char msg[512];
        size_t ml = rc_unavailable(c, msg, sizeof msg);
        free(x);
        blocking_return(sh, c, 0);
        resp_out_raw(r->out, msg, ml);
        return FD_OK;
    }
    x->sh = sh;
    x->c = c;
    x->p = r->pending;
    x->pops = blocking_pops(r, &x->right);
    x->next = sh->blocking;
    sh->blocking = x;
    sh->blocking_total++;
    return FD_PENDING;
}

/* The client of a wait left. The server may already have served the wait
 * (a push on another connection in the same event-loop round as our
 * close): closing the connection would drop the popped element with the
 * reply redis-server had not yet written. So a pop whose connection's
 * CLIENT ID is known is ended by CLIENT UNBLOCK from another connection
 * and its connection is read until it answers: a null (unblocked), or
 * what was popped, which is pushed back where it came from (give_back) —
 * nothing a client's push acknowledged is lost. RC_DRAIN_MS bounds the
 * wait; past it, or without the id, or for a command that pops nothing
 * (BLMOVE moves, XREAD reads, XREADGROUP leaves a PEL), the connection is
 * closed as before. */
#define RC_DRAIN_MS 2000

static void unblock_done(void *ctx, const char *reply, size_t len, int local) {
    rc_conn *c = ctx;
    (void)reply; (void)len;
    blocking_return(c->sh, c, !local);
}

static void blocking_cancel(rc_shared *sh, rc_blocking *x, int drain) {
    rc_conn *c = x->c;
    fd_pending *p = x->p;
    static const char gone[] = "-ERR the blocked client went away\r\n";
    blocking_unlink(&sh->blocking, x);
    x->cancelled = 1;
    x->p = NULL;
    sh->blocking_used--;
    int drained = 0;
    if (drain && c->state == RC_UP && c->client_id > 0 && x->pops != RB_NONE && c->qcount == 1) {
        int full;
        rc_conn *u = blocking_take(sh, c->addr, &full);
        char id[24];
        int idl = snprintf(id, sizeof id, "%lld", c->client_id);
        resp_arg av[3] = { { "CLIENT", 6 }, { "UNBLOCK", 7 }, { id, (size_t)idl } };
        if (u && !rc_send(u, 2, NULL, 0, 3, av, unblock_done, u)) {
            c->q[c->qhead].deadline = fd_mono_ms() + RC_DRAIN_MS;   /* on_tick ends it */
            x->next = sh->draining;
            sh->draining = x;
            drained = 1;
        } else if (u) {
            blocking_return(sh, u, 0);
        }
    }
    if (!drained) {
        c->stopped = 1;          /* no reconnect: it ends with this wait */
        ev_timer_stop(sh->loop, &c->retry);
        snprintf(c->lasterr, sizeof c->lasterr, "the blocked client went away");
        rc_conn_destroy(c);      /* fails x's slot: blocking_reply frees x, c goes to the zombies */
    }
    fd_pending_reply(p, gone, sizeof gone - 1);
}

void rc_blocking_cancel(rc_shared *sh, fd_pending *p) {
    for (rc_blocking *x = sh->blocking; x; x = x->next)
        if (x->p == p) { blocking_cancel(sh, x, 1); return; }
}

/* ---- giving back what a drained wait popped */

/* The next RESP element at *q: its type byte, its count/length (-1: null)
 * and, for a bulk or simple value, its text. 0, or -1 when malformed. */
static int next_elem(const char **q, const char *end, char *type, long long *n, const char **s, size_t *sl) {
    const char *p = *q;
    if (p >= end) return -1;
    *type = *p++;
    const char *eol = memchr(p, '\r', (size_t)(end - p));
    if (!eol || eol + 1 >= end) return -1;
    *s = p;
    *sl = (size_t)(eol - p);
    *n = 0;
    if (*type == '*' || *type == '$' || *type == '%' || *type == '~') {
        if (resp_str2ll(p, (size_t)(eol - p), n)) return -1;
    }
    p = eol + 2;
    if (*type == '$' && *n >= 0) {
        if ((size_t)(end - p) < (size_t)*n + 2) return -1;
        *s = p;
        *sl = (size_t)*n;
        p += *n + 2;
    }
    *q = p;
    return 0;
}

/* One string value (bulk, simple, double or integer) into *a. */
static int next_str(const char **q, const char *end, resp_arg *a) {
    char t; long long n; const char *s; size_t sl;
    if (next_elem(q, end, &t, &n, &s, &sl)) return -1;
    if (t != '$' && t != '+' && t != ',' && t != ':') return -1;
    if (t == '$' && n < 0) return -1;
    a->ptr = (char *)s;      /* read only: rc_send copies it */
    a->len = sl;
    return 0;
}

static void give_back_done(void *ctx, const char *reply, size_t len, int local) {
    rc_conn *c = ctx;
    if (local || (len && reply[0] == '-'))
        fd_log(FD_LOG_WARNING, "%s backend: giving back an element popped for a client that left failed: %.*s",
               c->sh->label, (int)(len > 200 ? 200 : len), reply);
    blocking_return(c->sh, c, !local);
}

static void give_back(rc_shared *sh, rc_blocking *x, const char *reply, size_t len) {
    const char *q = reply, *end = reply + len;
    char t; long long n; const char *s; size_t sl;
    if (next_elem(&q, end, &t, &n, &s, &sl) || t != '*' || n < 2) return;   /* a timeout's null, an error */
    resp_arg key;
    if (next_str(&q, end, &key)) return;
    resp_arg *argv = NULL;
    int argc = 0;
    if (x->pops == RB_LPOP || x->pops == RB_RPOP) {
        if (!(argv = calloc(3, sizeof *argv)) || next_str(&q, end, &argv[2])) goto out;
        argv[0] = x->pops == RB_LPOP ? (resp_arg){ "LPUSH", 5 } : (resp_arg){ "RPUSH", 5 };
        argc = 3;
    } else if (x->pops == RB_ZPOP) {           /* key member score */
        if (!(argv = calloc(4, sizeof *argv)) || next_str(&q, end, &argv[3]) || next_str(&q, end, &argv[2])) goto out;
        argv[0] = (resp_arg){ "ZADD", 4 };
        argc = 4;
    } else {                                   /* key [elements] / key [[member score] ...] */
        if (next_elem(&q, end, &t, &n, &s, &sl) || t != '*' || n < 1 || n > (long long)(len / 2)) return;
        int zs = x->pops == RB_ZMPOP;
        if (!(argv = calloc((size_t)(zs ? 2 * n : n) + 2, sizeof *argv))) return;
        argv[0] = zs ? (resp_arg){ "ZADD", 4 } : x->right ? (resp_arg){ "RPUSH", 5 } : (resp_arg){ "LPUSH", 5 };
        for (long long i = 0; i < n; i++) {
            if (zs) {
                long long m; char tt;
                if (next_elem(&q, end, &tt, &m, &s, &sl) || tt != '*' || m != 2 ||
                    next_str(&q, end, &argv[2 + 2 * i + 1]) || next_str(&q, end, &argv[2 + 2 * i])) goto out;
            } else if (next_str(&q, end, &argv[2 + (n - 1 - i)])) {   /* the first popped goes back last: at the end */
                goto out;
            }
        }
        argc = (int)(zs ? 2 * n : n) + 2;
    }
    argv[1] = key;
    int full;
    rc_conn *c = blocking_take(sh, x->c->addr, &full);
    if (!c || rc_send(c, 2, NULL, 0, argc, argv, give_back_done, c)) {
        fd_log(FD_LOG_WARNING, "%s backend: could not give back what was popped for a client that left (key %.*s)",
               sh->label, (int)(key.len > 100 ? 100 : key.len), key.ptr);
        if (c) blocking_return(sh, c, 0);
    }
out:
    free(argv);
}

static void blocking_close_all(rc_shared *sh) {
    while (sh->blocking) blocking_cancel(sh, sh->blocking, 0);
    while (sh->draining) rc_conn_destroy(sh->draining->c);   /* blocking_reply: a zombie, x freed */
    while (sh->blocking_idle) {
        rc_conn *c = sh->blocking_idle;
        sh->blocking_idle = c->pool_next;
        rc_conn_destroy(c);
        free(c);
    }
    sh->blocking_nidle = 0;
    destroy_zombies(sh);
}

int rc_blocking_uses(const rc_shared *sh, const rc_addr *a) {
    for (const rc_blocking *x = sh->blocking; x; x = x->next) if (x->c->addr == a) return 1;
    for (const rc_conn *c = sh->blocking_idle; c; c = c->pool_next) if (c->addr == a) return 1;
    for (const rc_conn *c = sh->zombies; c; c = c->pool_next) if (c->addr == a) return 1;
    return 0;
}

void rc_blocking_info(const rc_shared *sh, resp_out *o) {
    char line[256];
    int n = snprintf(line, sizeof line,
                     "%s_backend_blocking_in_use:%d\r\n%s_backend_blocking_idle:%d\r\n"
                     "%s_backend_blocking_max:%d\r\n%s_backend_blocking_total:%llu\r\n%s_backend_blocking_refused:%llu\r\n",
                     sh->label, sh->blocking_used, sh->label, sh->blocking_nidle, sh->label,
                     sh->blocking_max > 0 ? sh->blocking_max : 64, sh->label, (unsigned long long)sh->blocking_total,
                     sh->label, (unsigned long long)sh->blocking_refused);
    if (n > 0) resp_out_raw(o, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* ------------------------------------------------------------ pub/sub relay */

/* One bulk string at *p (RESP2 "$n\r\n...\r\n"); 0 or -1. */
static int read_bulk(const char **p, const char *end, const char **s, size_t *n) {
    const char *q = *p;
    if (q >= end || *q != '$') return -1;
    size_t v = 0;
    for (q++; q < end && *q >= '0' && *q <= '9'; q++) v = v * 10 + (size_t)(*q - '0');
    if (end - q < 2 || q[0] != '\r' || (size_t)(end - q - 2) < v + 2) return -1;
    *s = q + 2;
    *n = v;
    *p = q + 2 + v + 2;
    return 0;
}

static void relay_push(rc_conn *c, const char *data, size_t len) {
    const char *p = data + 1, *end = data + len;
    int n = 0;
    for (; p < end && *p >= '0' && *p <= '9'; p++) n = n * 10 + (*p - '0');
    p += 2;
    const char *f[4];
    size_t fl[4];
    if (n < 3 || n > 4) return;                     /* (pong and the like) */
    for (int i = 0; i < n; i++)
        if (read_bulk(&p, end, &f[i], &fl[i])) {
            /* a confirmation (its count is an integer): a subscribe's tells
             * the host the relay holds the name now */
            static const char *const sub[3] = {"subscribe", "psubscribe", "ssubscribe"};   /* FD_PS_* */
            for (int k = 0; i == 2 && n == 3 && k < 3; k++)
                if (fl[0] == strlen(sub[k]) && !memcmp(f[0], sub[k], fl[0])) fd_pubsub_ready(c->user, k, f[1], fl[1]);
            return;
        }
    int kind;
    if (n == 3 && fl[0] == 7 && !memcmp(f[0], "message", 7)) kind = FD_PS_CHANNEL;
    else if (n == 3 && fl[0] == 8 && !memcmp(f[0], "smessage", 8)) kind = FD_PS_SHARD;
    else if (n == 4 && fl[0] == 8 && !memcmp(f[0], "pmessage", 8)) kind = FD_PS_PATTERN;
    else return;
    if (c->relay_keyspace) {
        const char *ch = kind == FD_PS_PATTERN ? f[2] : f[1];
        size_t cl = kind == FD_PS_PATTERN ? fl[2] : fl[1];
        int ks = cl > 11 && (!memcmp(ch, "__keyspace@", 11) || !memcmp(ch, "__keyevent@", 11));
        if (ks != (c->relay_keyspace > 0)) return;
    }
    if (kind == FD_PS_PATTERN) fd_pubsub_message(c->user, kind, f[1], fl[1], f[2], fl[2], f[3], fl[3]);
    else fd_pubsub_message(c->user, kind, NULL, 0, f[1], fl[1], f[2], fl[2]);
}

static void relay_up(rc_conn *c) { fd_pubsub_resync(c->user); }

void rc_relay_init(rc_conn *c, rc_shared *sh, rc_addr *a, struct fd_backend *fb) {
    rc_conn_init(c, sh, a, -1);
    c->user = fb;
    c->push = relay_push;
    c->on_up = relay_up;
    if (c->state == RC_UP) relay_up(c);    /* connected at once (unix socket) */
}

void rc_relay_sub(rc_conn *c, int kind, const char *name, size_t len, int on) {
    static const char *const verbs[3][2] = {{"UNSUBSCRIBE", "SUBSCRIBE"}, {"PUNSUBSCRIBE", "PSUBSCRIBE"},
                                            {"SUNSUBSCRIBE", "SSUBSCRIBE"}};
    if (c->state != RC_UP) return;
    const char *v = verbs[kind][on ? 1 : 0];
    resp_arg av[2] = { { (char *)v, strlen(v) }, { (char *)name, len } };
    if (obuf_reserve(c, multibulk_len(2, av))) return;
    put_multibulk(c, 2, av);
    mark_dirty(c);
}

/* ------------------------------------------------ settings (option.h) */

static const char *const rs_yesno_names[] = {"no", "yes", NULL};
#define RSO(f) offsetof(fd_redis_settings, f)
static const char *const rs_affinity_names[] = {"key", "client", NULL};   /* = FD_REDIS_AFFINITY_* */
static const fd_option rs_rows[] = {
    {"redis-address", FD_OPT_STR, RSO(address), "127.0.0.1:6379", 0, 0, NULL, 0},
    {"redis-blocking-pool-size", FD_OPT_INT, RSO(blocking_pool_size), "64", 1, 100000, NULL, 0},
    {"redis-cluster-seeds", FD_OPT_STR, RSO(cluster_seeds), "", 0, 0, NULL, 0},
    {"redis-db", FD_OPT_INT, RSO(db), "0", 0, 1000000, NULL, 0},
    {"redis-password", FD_OPT_STR, RSO(password), "", 0, 0, NULL, FD_OPT_SECRET},
    {"redis-user", FD_OPT_STR, RSO(user), "", 0, 0, NULL, 0},   /* ACL user upstream (docs/acl.md) */
    {"redis-pool-size", FD_OPT_INT, RSO(pool_size), RC_TEXT(RC_POOL_SIZE), 1, 1024, NULL, 0},
    {"redis-pool-affinity", FD_OPT_ENUM, RSO(pool_affinity), "key", 0, 0, rs_affinity_names, 0},   /* storage/redis.c */
    /* TLS to Redis / Redis Cluster (rc_shared_tls, docs/tls.md) */
    {"redis-tls", FD_OPT_ENUM, RSO(tls), "no", 0, 0, rs_yesno_names, 0},
    {"redis-tls-ca-cert-file", FD_OPT_STR, RSO(tls_ca_cert_file), "", 0, 0, NULL, 0},
    {"redis-tls-cert-file", FD_OPT_STR, RSO(tls_cert_file), "", 0, 0, NULL, 0},
    {"redis-tls-key-file", FD_OPT_STR, RSO(tls_key_file), "", 0, 0, NULL, 0},
    {"redis-tls-sni", FD_OPT_STR, RSO(tls_sni), "", 0, 0, NULL, 0},
};
const fd_option_set fd_redis_options = FD_OPTION_SET("redis", rs_rows, fd_redis_settings);
_Static_assert(sizeof(fd_redis_settings) <= FD_OPTION_SET_BYTES, "redis settings fit a set");
