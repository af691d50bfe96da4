/* fdl_net.h — fdload's connections: plain TCP, a unix socket, or TLS
 * (OpenSSL directly: Debian 12's hiredis 0.14 has no SSL), each on the
 * caller's libev loop, replies parsed by hiredis's redisReader.
 *
 * Module prefix: fdl_net_. The connect and the TLS handshake are blocking
 * (they happen before anything is measured); afterwards the socket is
 * non-blocking: fdl_net_send appends to the output buffer and the next
 * writable event flushes it (commands sent in one loop iteration go in one
 * write / one SSL_write, as hiredis's async API did); a readable event reads
 * until the socket (and OpenSSL's own buffer) is empty and hands every
 * complete reply to on_reply, in order. Bounds: the output buffer grows with
 * what the caller sends without waiting (bounded by its --pipeline); one read
 * is FDL_NET_READ bytes. */
#ifndef FDL_NET_H
#define FDL_NET_H

#include <stddef.h>
#include <ev.h>
#include <hiredis/hiredis.h>
#include <openssl/ssl.h>

#define FDL_NET_READ 65536

typedef struct fdl_tls_opts {
    const char *cacert, *cert, *key, *sni;   /* NULL: none (cacert NULL: the system's CAs) */
    int insecure;                            /* no certificate check at all */
} fdl_tls_opts;

/* A client SSL_CTX for these options; NULL and a message in err when a file
 * cannot be loaded. The caller frees it (SSL_CTX_free) after its connections. */
SSL_CTX *fdl_tls_ctx(const fdl_tls_opts *o, char *err, size_t errlen);

struct fdl_net;
/* reply: one complete reply, freed by fdl_net after the call (freeReplyObject) */
typedef void fdl_net_reply_fn(struct fdl_net *n, redisReply *reply);
/* the connection failed or the peer closed it (called once): the watchers
 * are stopped, sends are dropped; the memory stays until fdl_net_close */
typedef void fdl_net_lost_fn(struct fdl_net *n, const char *why);

typedef struct fdl_net {
    int fd;
    SSL *ssl;                         /* NULL: plain */
    struct ev_loop *loop;
    ev_io rio, wio;
    redisReader *rd;
    char *out; size_t olen, ocap, ooff;   /* bytes to send: out[ooff..olen) */
    void *data;                       /* the caller's */
    fdl_net_reply_fn *on_reply;
    fdl_net_lost_fn *on_lost;
    int lost;
} fdl_net;

/* Connect to a unix socket (path non-NULL) or host:port, TLS when ctx is
 * non-NULL (SNI and the name check: sni, when non-NULL), and start reading.
 * 0, or -1 with a message in err (n then holds nothing). */
int fdl_net_open(fdl_net *n, struct ev_loop *loop, const char *host, int port, const char *path,
                 SSL_CTX *ctx, const char *sni, char *err, size_t errlen);
/* Queue len bytes (copied) for the next writable event: 0, or -1 when the
 * connection is lost (nothing queued). */
int fdl_net_send(fdl_net *n, const char *p, size_t len);
/* Stop the watchers, close the socket, free everything; no callback. */
void fdl_net_close(fdl_net *n);

#endif
