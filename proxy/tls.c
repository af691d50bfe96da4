/* tls.c — the clients' TLS transport (see tls.h). The rules follow Redis
 * 7.0's src/tls.c: default protocols TLSv1.2 and TLSv1.3, no compression, no
 * client renegotiation, partial writes from a moving buffer, a server
 * session cache, tls-auth-clients as SSL_VERIFY_PEER (+ FAIL_IF_NO_PEER_CERT
 * for "yes"), a CA required unless tls-auth-clients is no. */
#include "tls.h"
#include "config.h"
#include "log.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct px_tls_conn {
    SSL *ssl;
    int  established;
    char err[256];
};

static SSL_CTX *server_ctx;   /* the context new connections get (NULL: none) */

/* The oldest queued OpenSSL error as text, or `fallback`; the queue is cleared. */
static void ssl_error_text(char *buf, size_t len, const char *fallback) {
    unsigned long e = ERR_get_error();
    if (e) ERR_error_string_n(e, buf, len);
    else snprintf(buf, len, "%s", fallback);
    ERR_clear_error();
}

static int key_pass_cb(char *buf, int size, int rwflag, void *ud) {
    const char *pass = ud;
    int n = (int)strlen(pass);
    if (n > size) n = size;
    memcpy(buf, pass, (size_t)n);
    return n;
}

/* tls-protocols: a space separated set of TLSv1, TLSv1.1, TLSv1.2, TLSv1.3
 * (case-insensitive, as Redis); "" = TLSv1.2 TLSv1.3. Bits 0..3; -1 if bad. */
static int parse_protocols(const char *s) {
    if (!s || !*s) return (1 << 2) | (1 << 3);
    static const char *const names[] = {"tlsv1", "tlsv1.1", "tlsv1.2", "tlsv1.3"};
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    int bits = 0;
    char *save = NULL;
    for (char *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        int i;
        for (i = 0; i < 4; i++)
            if (!strcasecmp(w, names[i])) break;
        if (i == 4) return -1;
        bits |= 1 << i;
    }
    return bits ? bits : -1;
}

int px_tls_configure(char *err, size_t errlen) {
    const px_settings *s = &px_cfg;
    if (!s->tls_port && !s->tls_cert_file[0]) return 0;
    char why[256];
    if (!s->tls_cert_file[0] || !s->tls_key_file[0]) {
        snprintf(err, errlen, "tls-cert-file and tls-key-file must be set to use TLS");
        return -1;
    }
    if (s->tls_auth_clients != PX_TLS_AUTH_NO && !s->tls_ca_cert_file[0] && !s->tls_ca_cert_dir[0]) {
        snprintf(err, errlen, "Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-auth-clients is enabled!");
        return -1;
    }
    int protos = parse_protocols(s->tls_protocols);
    if (protos < 0) {
        snprintf(err, errlen, "Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.");
        return -1;
    }
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) { ssl_error_text(why, sizeof why, "out of memory"); snprintf(err, errlen, "Failed to create TLS context: %s", why); return -1; }
    long opts = SSL_OP_NO_SSLv2 | SSL_OP_NO_SSLv3 | SSL_OP_NO_COMPRESSION;
#ifdef SSL_OP_NO_CLIENT_RENEGOTIATION
    opts |= SSL_OP_NO_CLIENT_RENEGOTIATION;
#endif
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
    opts |= SSL_OP_IGNORE_UNEXPECTED_EOF;   /* a client closing without close_notify is an EOF, as plain */
#endif
    if (!(protos & 1)) opts |= SSL_OP_NO_TLSv1;
    if (!(protos & 2)) opts |= SSL_OP_NO_TLSv1_1;
    if (!(protos & 4)) opts |= SSL_OP_NO_TLSv1_2;
    if (!(protos & 8)) opts |= SSL_OP_NO_TLSv1_3;
    if (s->tls_prefer_server_ciphers) opts |= SSL_OP_CIPHER_SERVER_PREFERENCE;
    SSL_CTX_set_options(ctx, opts);
    /* partial writes, and a retried write may come from another address
     * (conn->out is compacted and grown between attempts). Not
     * SSL_MODE_RELEASE_BUFFERS: it frees and reallocates the ~17 kB record
     * buffers around every SSL_read/SSL_write (a malloc/free pair of each
     * per call, ~12 % of a request's TLS cost at -P 1); an idle connection
     * gives them back instead (px_tls_idle, from the once-a-second cron) */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    /* read as much as the socket has in one syscall (fewer reads for a
     * pipeline); what is read ahead is invisible to the loop: server.c reads
     * again while px_tls_pending() */
    SSL_CTX_set_read_ahead(ctx, 1);
    if (s->tls_session_caching) {
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
        SSL_CTX_sess_set_cache_size(ctx, (long)s->tls_session_cache_size);
        SSL_CTX_set_timeout(ctx, (long)s->tls_session_cache_timeout);
        SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"frontdoor", 9);
    } else {
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
        SSL_CTX_set_num_tickets(ctx, 0);
    }
    if (s->tls_key_file_pass[0]) {
        SSL_CTX_set_default_passwd_cb(ctx, key_pass_cb);
        SSL_CTX_set_default_passwd_cb_userdata(ctx, s->tls_key_file_pass);
    }
    if (SSL_CTX_use_certificate_chain_file(ctx, s->tls_cert_file) <= 0) {
        ssl_error_text(why, sizeof why, "unreadable");
        snprintf(err, errlen, "Failed to load certificate: %s: %s", s->tls_cert_file, why);
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, s->tls_key_file, SSL_FILETYPE_PEM) <= 0) {
        ssl_error_text(why, sizeof why, "unreadable");
        snprintf(err, errlen, "Failed to load private key: %s: %s", s->tls_key_file, why);
        goto fail;
    }
    if (SSL_CTX_check_private_key(ctx) <= 0) {
        ssl_error_text(why, sizeof why, "does not match the certificate");
        snprintf(err, errlen, "The private key does not match the certificate: %s", why);
        goto fail;
    }
    if ((s->tls_ca_cert_file[0] || s->tls_ca_cert_dir[0]) &&
        SSL_CTX_load_verify_locations(ctx, s->tls_ca_cert_file[0] ? s->tls_ca_cert_file : NULL,
                                      s->tls_ca_cert_dir[0] ? s->tls_ca_cert_dir : NULL) <= 0) {
        ssl_error_text(why, sizeof why, "unreadable");
        snprintf(err, errlen, "Failed to configure CA certificate(s) file/directory: %s", why);
        goto fail;
    }
    if (s->tls_ciphers[0] && !SSL_CTX_set_cipher_list(ctx, s->tls_ciphers)) {
        ssl_error_text(why, sizeof why, "no cipher matches");
        snprintf(err, errlen, "Failed to configure ciphers: %s", why);
        goto fail;
    }
    if (s->tls_ciphersuites[0] && !SSL_CTX_set_ciphersuites(ctx, s->tls_ciphersuites)) {
        ssl_error_text(why, sizeof why, "no ciphersuite matches");
        snprintf(err, errlen, "Failed to configure ciphersuites: %s", why);
        goto fail;
    }
    /* the password is needed only to read the key */
    SSL_CTX_set_default_passwd_cb_userdata(ctx, NULL);
    SSL_CTX_set_default_passwd_cb(ctx, NULL);
    int verify = SSL_VERIFY_NONE;
    if (s->tls_auth_clients == PX_TLS_AUTH_YES) verify = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    else if (s->tls_auth_clients == PX_TLS_AUTH_OPTIONAL) verify = SSL_VERIFY_PEER;
    SSL_CTX_set_verify(ctx, verify, NULL);
    if (server_ctx) SSL_CTX_free(server_ctx);   /* connections hold their own references */
    server_ctx = ctx;
    return 0;
fail:
    SSL_CTX_free(ctx);
    return -1;
}

int px_tls_ready(void) { return server_ctx != NULL; }

void px_tls_shutdown(void) {
    if (server_ctx) SSL_CTX_free(server_ctx);
    server_ctx = NULL;
}

px_tls_conn *px_tls_new(int fd) {
    if (!server_ctx) return NULL;
    px_tls_conn *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->ssl = SSL_new(server_ctx);
    if (!t->ssl || !SSL_set_fd(t->ssl, fd)) {
        if (t->ssl) SSL_free(t->ssl);
        free(t);
        ERR_clear_error();
        return NULL;
    }
    SSL_set_accept_state(t->ssl);
    return t;
}

void px_tls_free(px_tls_conn *t) {
    if (!t) return;
    /* a best-effort close_notify: never waits */
    if (t->established) SSL_shutdown(t->ssl);
    SSL_free(t->ssl);
    ERR_clear_error();
    free(t);
}

/* Map an OpenSSL result (ret <= 0) to PX_TLS_*, recording the error text. */
static int result_of(px_tls_conn *t, int ret) {
    int e = SSL_get_error(t->ssl, ret);
    switch (e) {
    case SSL_ERROR_WANT_READ: return PX_TLS_WANT_READ;
    case SSL_ERROR_WANT_WRITE: return PX_TLS_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN: ERR_clear_error(); return PX_TLS_CLOSED;
    case SSL_ERROR_SYSCALL:
        if (!ERR_peek_error()) {
            snprintf(t->err, sizeof t->err, "%s", ret == 0 || errno == 0 ? "connection closed by peer" : strerror(errno));
            if (ret == 0 || errno == 0 || errno == ECONNRESET) return PX_TLS_CLOSED;
            return PX_TLS_ERROR;
        }
        /* fall through */
    default: {
        long vr = SSL_get_verify_result(t->ssl);
        char why[200];
        ssl_error_text(why, sizeof why, "TLS error");
        if (vr != X509_V_OK)
            snprintf(t->err, sizeof t->err, "%s (certificate: %s)", why, X509_verify_cert_error_string(vr));
        else
            snprintf(t->err, sizeof t->err, "%s", why);
        return PX_TLS_ERROR;
    }
    }
}

int px_tls_handshake(px_tls_conn *t) {
    if (t->established) return PX_TLS_OK;
    ERR_clear_error();
    errno = 0;
    int r = SSL_do_handshake(t->ssl);
    if (r == 1) { t->established = 1; return PX_TLS_OK; }
    int rc = result_of(t, r);
    if (rc == PX_TLS_CLOSED) {
        if (!t->err[0]) snprintf(t->err, sizeof t->err, "connection closed during the handshake");
        rc = PX_TLS_ERROR;
    }
    return rc;
}

int px_tls_established(const px_tls_conn *t) { return t->established; }

/* SSL_get_error needs an empty error queue before the call; clearing it
 * unconditionally (ERR_clear_error walks all its slots) cost ~6 % of a
 * request's TLS work at -P 1, and the queue is almost always empty */
static void err_reset(void) {
    if (ERR_peek_error()) ERR_clear_error();
}

ssize_t px_tls_read(px_tls_conn *t, void *buf, size_t len) {
    err_reset();
    errno = 0;
    int n = SSL_read(t->ssl, buf, len > (size_t)1 << 30 ? 1 << 30 : (int)len);
    if (n > 0) return n;
    return result_of(t, n);
}

ssize_t px_tls_write(px_tls_conn *t, const void *buf, size_t len) {
    err_reset();
    errno = 0;
    int n = SSL_write(t->ssl, buf, len > (size_t)1 << 30 ? 1 << 30 : (int)len);
    if (n > 0) return n;
    return result_of(t, n);
}

/* SSL_has_pending: decrypted bytes (SSL_pending) or whole records read
 * ahead from the socket and not yet processed */
int px_tls_pending(const px_tls_conn *t) { return SSL_has_pending(t->ssl); }

void px_tls_idle(px_tls_conn *t) {
    if (t->established && !SSL_has_pending(t->ssl)) SSL_free_buffers(t->ssl);   /* refused while bytes wait in them */
}

const char *px_tls_error(const px_tls_conn *t) { return t->err[0] ? t->err : "TLS error"; }
