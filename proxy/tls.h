/* tls.h — the clients' TLS transport (OpenSSL), Redis 7.0's tls-* directives.
 * Module prefix: px_tls_.
 *
 * One server SSL_CTX, built from px_cfg's tls-* directives by
 * px_tls_configure(); a connection accepted on tls-port gets an SSL object
 * from the context current at its accept, so CONFIG SET of a certificate
 * (or any tls-* directive) serves new connections with the new context
 * while the existing ones keep theirs (OpenSSL reference-counts it).
 *
 * Everything is non-blocking on the loop thread: px_tls_handshake() and
 * px_tls_read()/px_tls_write() never wait; they report what the socket must
 * become (readable or writable) for the operation to progress. The caller
 * (server.c) owns the socket and the io watchers.
 */
#ifndef FRONTDOOR_TLS_H
#define FRONTDOOR_TLS_H

#include <stddef.h>
#include <sys/types.h>

typedef struct px_tls_conn px_tls_conn;   /* one connection's TLS state (owns its SSL) */

/* Build a new server context from px_cfg (certificate, key, CA, protocols,
 * ciphers, client authentication, session cache) and make it the one new
 * connections get. On error the running context is kept and err says why
 * (the OpenSSL reason included). Nothing is built when tls-port is 0 and no
 * certificate is configured (returns 0). */
int  px_tls_configure(char *err, size_t errlen);
/* 1 when a context exists (tls-port can accept). */
int  px_tls_ready(void);
/* Free the context (shutdown). */
void px_tls_shutdown(void);

/* A new server-side TLS state for accepted socket fd (not yet handshaken);
 * NULL when out of memory or no context. */
px_tls_conn *px_tls_new(int fd);
void         px_tls_free(px_tls_conn *t);   /* the socket is not closed */

/* Results of the calls below. */
enum {
    PX_TLS_OK = 0,
    PX_TLS_WANT_READ = -2,   /* retry when the socket is readable */
    PX_TLS_WANT_WRITE = -3,  /* retry when the socket is writable */
    PX_TLS_CLOSED = -4,      /* the peer closed (close_notify or EOF) */
    PX_TLS_ERROR = -5,       /* failed: px_tls_error() says why */
};

/* Advance the handshake: PX_TLS_OK when done, WANT_READ/WANT_WRITE, or
 * PX_TLS_ERROR (bad certificate, plain text sent, ...). */
int  px_tls_handshake(px_tls_conn *t);
/* 1 once the handshake is done. */
int  px_tls_established(const px_tls_conn *t);
/* Decrypted bytes into buf: > 0 bytes, or PX_TLS_WANT_*, CLOSED, ERROR. */
ssize_t px_tls_read(px_tls_conn *t, void *buf, size_t len);
/* Encrypt and send from buf: > 0 bytes taken (partial writes allowed; the
 * same bytes must be offered again after WANT_*, from any address). */
ssize_t px_tls_write(px_tls_conn *t, const void *buf, size_t len);
/* 1 when bytes wait inside OpenSSL (decrypted, or records read ahead from
 * the socket): no socket event will announce them, the caller reads again
 * without waiting. */
int  px_tls_pending(const px_tls_conn *t);
/* The connection has been idle: give its record buffers (~34 kB) back to
 * the allocator; OpenSSL allocates them again at the next read or write.
 * Nothing happens while bytes wait in them. */
void px_tls_idle(px_tls_conn *t);
/* The last error's text (owned by t, valid until its next call). */
const char *px_tls_error(const px_tls_conn *t);

#endif
