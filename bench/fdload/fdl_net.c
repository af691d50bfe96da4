/* fdl_net.c — fdload's connections (fdl_net.h). */
#include "fdl_net.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

static void ssl_errstr(char *err, size_t errlen, const char *what) {
    unsigned long e = ERR_get_error();
    char buf[256];
    if (e) ERR_error_string_n(e, buf, sizeof buf);
    else snprintf(buf, sizeof buf, "%s", errno ? strerror(errno) : "unknown error");
    ERR_clear_error();
    snprintf(err, errlen, "%s: %s", what, buf);
}

SSL_CTX *fdl_tls_ctx(const fdl_tls_opts *o, char *err, size_t errlen) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) { ssl_errstr(err, errlen, "SSL_CTX_new"); return NULL; }
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    /* one read syscall for what the socket has (not a header, then a body,
     * per record); what is read ahead is drained while SSL_has_pending */
    SSL_CTX_set_read_ahead(ctx, 1);
    if (o->insecure) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    } else {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        int ok = o->cacert ? SSL_CTX_load_verify_locations(ctx, o->cacert, NULL) : SSL_CTX_set_default_verify_paths(ctx);
        if (ok != 1) { ssl_errstr(err, errlen, o->cacert ? o->cacert : "the system's CAs"); goto fail; }
    }
    if (o->cert || o->key) {
        if (!o->cert || !o->key) { snprintf(err, errlen, "--cert and --key go together"); goto fail; }
        if (SSL_CTX_use_certificate_chain_file(ctx, o->cert) != 1) { ssl_errstr(err, errlen, o->cert); goto fail; }
        if (SSL_CTX_use_PrivateKey_file(ctx, o->key, SSL_FILETYPE_PEM) != 1) { ssl_errstr(err, errlen, o->key); goto fail; }
    }
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

static void lost(fdl_net *n, const char *why) {
    if (n->lost) return;
    n->lost = 1;
    ev_io_stop(n->loop, &n->rio);
    ev_io_stop(n->loop, &n->wio);
    n->on_lost(n, why);
}

/* Write what is queued; the write watcher runs while something is left. */
static void flush(fdl_net *n) {
    while (n->ooff < n->olen) {
        size_t len = n->olen - n->ooff;
        ssize_t w;
        if (n->ssl) {
            int r = SSL_write(n->ssl, n->out + n->ooff, len > 0x7fffffff ? 0x7fffffff : (int)len);
            if (r <= 0) {
                int e = SSL_get_error(n->ssl, r);
                if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) break;   /* WANT_READ: retried after a read */
                char why[300];
                ssl_errstr(why, sizeof why, "SSL_write");
                lost(n, why);
                return;
            }
            w = r;
        } else {
            w = write(n->fd, n->out + n->ooff, len);
            if (w < 0) {
                if (errno == EAGAIN || errno == EINTR) break;
                lost(n, strerror(errno));
                return;
            }
        }
        n->ooff += (size_t)w;
    }
    if (n->ooff == n->olen) {
        n->ooff = n->olen = 0;
        ev_io_stop(n->loop, &n->wio);
    } else {
        ev_io_start(n->loop, &n->wio);
    }
}

static void on_write(struct ev_loop *loop, ev_io *w, int revents) {
    (void)loop; (void)revents;
    flush(w->data);
}

static void on_read(struct ev_loop *loop, ev_io *w, int revents) {
    (void)loop; (void)revents;
    fdl_net *n = w->data;
    static char buf[FDL_NET_READ];
    for (;;) {
        ssize_t r;
        if (n->ssl) {
            /* read while OpenSSL holds bytes (they raise no event); the
             * socket's own are announced by the next (level-triggered) event */
            int k = SSL_read(n->ssl, buf, sizeof buf);
            if (k <= 0) {
                int e = SSL_get_error(n->ssl, k);
                if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) break;
                if (e == SSL_ERROR_ZERO_RETURN) { lost(n, "connection closed by the server"); return; }
                char why[300];
                ssl_errstr(why, sizeof why, "SSL_read");
                lost(n, why);
                return;
            }
            r = k;
        } else {
            r = read(n->fd, buf, sizeof buf);
            if (r < 0) {
                if (errno == EAGAIN || errno == EINTR) break;
                lost(n, strerror(errno));
                return;
            }
            if (r == 0) { lost(n, "connection closed by the server"); return; }
        }
        if (redisReaderFeed(n->rd, buf, (size_t)r) != REDIS_OK) { lost(n, "reply buffer: out of memory"); return; }
        if (n->ssl ? !SSL_has_pending(n->ssl) : r < (ssize_t)sizeof buf) break;   /* nothing more without waiting */
    }
    for (;;) {
        void *reply = NULL;
        if (redisReaderGetReply(n->rd, &reply) != REDIS_OK) { lost(n, n->rd->errstr); return; }
        if (!reply) break;
        n->on_reply(n, reply);
        freeReplyObject(reply);
        if (n->lost) return;
    }
    if (n->ooff < n->olen) flush(n);
}

int fdl_net_open(fdl_net *n, struct ev_loop *loop, const char *host, int port, const char *path,
                 SSL_CTX *ctx, const char *sni, char *err, size_t errlen) {
    void *data = n->data;
    fdl_net_reply_fn *rf = n->on_reply;
    fdl_net_lost_fn *lf = n->on_lost;
    memset(n, 0, sizeof *n);
    n->data = data; n->on_reply = rf; n->on_lost = lf;
    n->fd = -1;
    n->loop = loop;
    if (path) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        if (strlen(path) >= sizeof sa.sun_path) { snprintf(err, errlen, "%s: path too long", path); return -1; }
        memcpy(sa.sun_path, path, strlen(path) + 1);
        n->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (n->fd < 0 || connect(n->fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            goto fail;
        }
    } else {
        char ps[16];
        snprintf(ps, sizeof ps, "%d", port);
        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
        int g = getaddrinfo(host, ps, &hints, &ai);
        if (g) { snprintf(err, errlen, "%s: %s", host, gai_strerror(g)); return -1; }
        int e = 0;
        for (struct addrinfo *a = ai; a; a = a->ai_next) {
            n->fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (n->fd >= 0 && connect(n->fd, a->ai_addr, a->ai_addrlen) == 0) break;
            e = errno;
            if (n->fd >= 0) close(n->fd);
            n->fd = -1;
        }
        freeaddrinfo(ai);
        if (n->fd < 0) { snprintf(err, errlen, "%s", strerror(e)); return -1; }
        int one = 1;
        setsockopt(n->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    if (ctx) {
        n->ssl = SSL_new(ctx);
        if (!n->ssl || SSL_set_fd(n->ssl, n->fd) != 1) { ssl_errstr(err, errlen, "SSL_new"); goto fail; }
        if (sni) {
            SSL_set_tlsext_host_name(n->ssl, sni);
            SSL_set1_host(n->ssl, sni);
        }
        if (SSL_connect(n->ssl) != 1) {   /* blocking: before anything is measured */
            long v = SSL_get_verify_result(n->ssl);
            if (v != X509_V_OK) snprintf(err, errlen, "TLS handshake: certificate verify failed (%s)", X509_verify_cert_error_string(v));
            else ssl_errstr(err, errlen, "TLS handshake");
            goto fail;
        }
    }
    fcntl(n->fd, F_SETFL, fcntl(n->fd, F_GETFL) | O_NONBLOCK);
    n->rd = redisReaderCreate();
    if (!n->rd) { snprintf(err, errlen, "out of memory"); goto fail; }
    ev_io_init(&n->rio, on_read, n->fd, EV_READ);
    ev_io_init(&n->wio, on_write, n->fd, EV_WRITE);
    n->rio.data = n->wio.data = n;
    ev_io_start(loop, &n->rio);
    return 0;
fail:
    if (n->ssl) SSL_free(n->ssl);
    if (n->fd >= 0) close(n->fd);
    n->ssl = NULL;
    n->fd = -1;
    return -1;
}

int fdl_net_send(fdl_net *n, const char *p, size_t len) {
    if (n->lost || n->fd < 0) return -1;
    if (n->olen + len > n->ocap) {
        if (n->ooff) {   /* slide what is left to the front first (the write may resume moved) */
            memmove(n->out, n->out + n->ooff, n->olen - n->ooff);
            n->olen -= n->ooff;
            n->ooff = 0;
        }
        if (n->olen + len > n->ocap) {
            size_t nc = n->ocap ? n->ocap : 16384;
            while (nc < n->olen + len) nc *= 2;
            char *no = realloc(n->out, nc);
            if (!no) { lost(n, "out of memory"); return -1; }
            n->out = no;
            n->ocap = nc;
        }
    }
    memcpy(n->out + n->olen, p, len);
    n->olen += len;
    ev_io_start(n->loop, &n->wio);
    return 0;
}

void fdl_net_close(fdl_net *n) {
    if (n->fd < 0) return;
    ev_io_stop(n->loop, &n->rio);
    ev_io_stop(n->loop, &n->wio);
    if (n->ssl) { if (!n->lost) SSL_shutdown(n->ssl); SSL_free(n->ssl); }
    close(n->fd);
    if (n->rd) redisReaderFree(n->rd);
    free(n->out);
    n->ssl = NULL; n->rd = NULL; n->out = NULL;
    n->fd = -1;
    n->lost = 1;
}
