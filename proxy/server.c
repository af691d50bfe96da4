/* server.c — libev loop, listeners, connection I/O, end-of-turn commit and
 * flush. The only file that touches client sockets (metrics.c accepts its
 * own scrapes). Knows no feature: they join through proxy/hooks.h. */
#include "server.h"
#include "hooks.h"     /* every feature is reached through its hooks */
#include "backends.h"
#include "config.h"
#include "log.h"
#include "tls.h"       /* the connections' transport: plain or TLS */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

px_server px_srv;

#define READ_CHUNK (16 * 1024)
#define MAX_LISTENERS 16
#define BUF_SHRINK (64 * 1024)        /* idle buffers above this are freed */

static ev_io listeners[MAX_LISTENERS];
static int nlisteners;
static ev_prepare turn_watcher;
static ev_timer cron_timer;
static ev_signal sig_term, sig_int, sig_hup;

int64_t px_now_ms(void) { return (int64_t)(ev_now(px_srv.loop) * 1000.0); }

/* ------------------------------------------------------------ connections */

static void on_read(struct ev_loop *loop, ev_io *w, int revents);
static void on_write(struct ev_loop *loop, ev_io *w, int revents);
static char px_tls_listener_tag;         /* listener ev_io.data: accepts TLS clients */

void px_conn_touch(px_conn *c) {
    if (c->in_turn) return;
    c->in_turn = 1;
    c->turn_next = px_srv.turn;
    px_srv.turn = c;
}

static void unlink_turn(px_conn *c) {
    if (!c->in_turn) return;
    for (px_conn **pp = &px_srv.turn; *pp; pp = &(*pp)->turn_next)
        if (*pp == c) { *pp = c->turn_next; break; }
    c->in_turn = 0;
}

void px_conn_close(px_conn *c) {
    if (PX_HOOK_TEST(close_defer, c)) {   /* in use (a script's): close after it */
        ev_io_stop(px_srv.loop, &c->rio);
        ev_io_stop(px_srv.loop, &c->wio);
        c->flags |= PX_CONN_CLOSE_ASAP;
        px_conn_touch(c);
        return;
    }
    ev_io_stop(px_srv.loop, &c->rio);
    ev_io_stop(px_srv.loop, &c->wio);
    px_tls_free(c->tls);
    close(c->fd);
    unlink_turn(c);
    PX_HOOK_RUN(closed, c);
    px_conn_orphan_pending(c);
    if (c->held)
        for (px_conn **pp = &px_srv.held; *pp; pp = &(*pp)->held_next)
            if (*pp == c) { *pp = c->held_next; break; }
    if (c->prev) c->prev->next = c->next;
    else px_srv.clients = c->next;
    if (c->next) c->next->prev = c->prev;
    px_srv.nclients--;
    resp_parser_free(&c->parser);
    resp_out_free(&c->out);
    free(c->rbuf);
    free(c->name);
    free(c);
}

static void sockaddr_text(const struct sockaddr_storage *ss, char *buf, size_t len) {
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *s = (const void *)ss;
        inet_ntop(AF_INET, &s->sin_addr, host, sizeof host);
        port = ntohs(s->sin_port);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *s = (const void *)ss;
        inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof host);
        port = ntohs(s->sin6_port);
    } else {
        snprintf(buf, len, "%s:0", px_cfg.unixsocket);
        return;
    }
    snprintf(buf, len, "%s:%d", host, port);
}

/* ---------------------------------------------------- transport seam
 * A connection's bytes go through conn_recv/conn_send: plain read/write, or
 * TLS (proxy/tls.h). Both return > 0 bytes, 0 at the peer's EOF (recv), or
 * -1 with errno: EAGAIN when the socket must become ready first (a TLS read
 * that needs the socket writable starts the write watcher itself). */
static ssize_t conn_recv(px_conn *c, void *buf, size_t len) {
    if (!c->tls) return read(c->fd, buf, len);
    ssize_t n = px_tls_read(c->tls, buf, len);
    if (n > 0) return n;
    switch (n) {
    case PX_TLS_WANT_WRITE:
        c->tls_read_wants_write = 1;
        ev_io_start(px_srv.loop, &c->wio);
        /* fall through */
    case PX_TLS_WANT_READ: errno = EAGAIN; return -1;
    case PX_TLS_CLOSED: return 0;
    default:
        px_log(PX_LOG_VERBOSE, "client %llu TLS read error: %s", (unsigned long long)c->id, px_tls_error(c->tls));
        errno = EPROTO;
        return -1;
    }
}

static ssize_t conn_send(px_conn *c, const void *buf, size_t len) {
    if (!c->tls) return write(c->fd, buf, len);
    ssize_t n = px_tls_write(c->tls, buf, len);
    if (n > 0) return n;
    /* WANT_READ (renegotiation, refused by the context) is retried on the
     * next write event like WANT_WRITE */
    if (n == PX_TLS_WANT_READ || n == PX_TLS_WANT_WRITE) { errno = EAGAIN; return -1; }
    if (n == PX_TLS_ERROR)
        px_log(PX_LOG_VERBOSE, "client %llu TLS write error: %s", (unsigned long long)c->id, px_tls_error(c->tls));
    errno = EPIPE;
    return -1;
}

/* Decrypted bytes wait inside OpenSSL: no socket event will come for them,
 * so the read callback is queued again in this loop iteration. */
static void conn_recheck_pending(px_conn *c) {
    if (c->tls && ev_is_active(&c->rio) && px_tls_established(c->tls) && px_tls_pending(c->tls))
        ev_feed_event(px_srv.loop, &c->rio, EV_READ);
}

/* Advance a TLS handshake from a socket event; never blocks. A failed one
 * (plain text, bad or missing client certificate, ...) closes the client. */
static void conn_handshake(px_conn *c) {
    int rc = px_tls_handshake(c->tls);
    if (rc == PX_TLS_WANT_WRITE) { ev_io_start(px_srv.loop, &c->wio); return; }
    ev_io_stop(px_srv.loop, &c->wio);
    if (rc == PX_TLS_WANT_READ) return;
    if (rc != PX_TLS_OK) {
        px_log(PX_LOG_VERBOSE, "Error accepting a client connection: %s (addr=%s)", px_tls_error(c->tls), c->addr);
        px_conn_close(c);
        return;
    }
    c->last_interaction = ev_now(px_srv.loop);
    /* the client's first command may have come with the handshake's last flight */
    ev_feed_event(px_srv.loop, &c->rio, EV_READ);
}

static void on_accept(struct ev_loop *loop, ev_io *w, int revents) {
    for (int i = 0; i < 256; i++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd = accept4(w->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                px_log(PX_LOG_WARNING, "accept: %s", strerror(errno));
            return;
        }
        px_srv.total_connections++;
        if ((long long)px_srv.nclients >= px_cfg.maxclients) {
            static const char msg[] = "-ERR max number of clients reached\r\n";
            if (write(fd, msg, sizeof msg - 1) < 0) {}
            close(fd);
            px_srv.rejected_connections++;
            continue;
        }
        int one = 1;
        if (ss.ss_family != AF_UNIX) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        px_conn *c = calloc(1, sizeof *c);
        if (!c) { close(fd); continue; }
        c->fd = fd;
        if (w->data == &px_tls_listener_tag && !(c->tls = px_tls_new(fd))) {
            px_log(PX_LOG_WARNING, "accept: no TLS state for a new client (out of memory)");
            close(fd);
            free(c);
            continue;
        }
        c->id = ++px_srv.next_id;
        if (ss.ss_family == AF_UNIX) c->flags |= PX_CONN_UNIX;
        sockaddr_text(&ss, c->addr, sizeof c->addr);
        struct sockaddr_storage ls;
        socklen_t ll = sizeof ls;
        if (getsockname(fd, (struct sockaddr *)&ls, &ll) == 0) sockaddr_text(&ls, c->laddr, sizeof c->laddr);
        resp_parser_init(&c->parser, px_cfg.proto_max_bulk_len);
        resp_out_init(&c->out, 2);
        c->authed = !px_cfg.requirepass[0];   /* a hook may decide otherwise (ACL) */
        c->created = c->last_interaction = ev_now(loop);
        ev_io_init(&c->rio, on_read, fd, EV_READ);
        ev_io_init(&c->wio, on_write, fd, EV_WRITE);
        c->rio.data = c->wio.data = c;
        ev_io_start(loop, &c->rio);
        c->next = px_srv.clients;
        if (c->next) c->next->prev = c;
        px_srv.clients = c;
        px_srv.nclients++;
        PX_HOOK_RUN(opened, c);
    }
}

/* Send out.data[wpos..safe). Returns -1 if the connection was closed. */
static int conn_write(px_conn *c) {
    while (c->wpos < c->safe) {
        ssize_t n = conn_send(c, c->out.data + c->wpos, c->safe - c->wpos);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            px_log(PX_LOG_VERBOSE, "client %llu write error: %s", (unsigned long long)c->id, strerror(errno));
            px_conn_close(c);
            return -1;
        }
        c->wpos += (size_t)n;
        px_srv.net_output += (uint64_t)n;
    }
    if (c->wpos == c->out.len) {
        px_conn_out_shifted(c, c->wpos);
        c->wpos = c->safe = c->out.len = 0;
        if (c->out.cap > BUF_SHRINK) { resp_out_free(&c->out); resp_out_init(&c->out, c->out.proto); }
    } else if (c->wpos > c->out.len / 2 && c->wpos > 4096) {
        memmove(c->out.data, c->out.data + c->wpos, c->out.len - c->wpos);
        px_conn_out_shifted(c, c->wpos);
        c->out.len -= c->wpos;
        c->safe -= c->wpos;
        c->wpos = 0;
    }
    if (c->wpos < c->safe) {
        ev_io_start(px_srv.loop, &c->wio);
    } else {
        ev_io_stop(px_srv.loop, &c->wio);
        if ((c->flags & PX_CONN_CLOSE_AFTER_REPLY) && c->out.len == 0 && !c->pend_head) {
            px_conn_close(c);
            return -1;
        }
    }
    return 0;
}

static void on_write(struct ev_loop *loop, ev_io *w, int revents) {
    px_conn *c = w->data;
    if (c->tls && !px_tls_established(c->tls)) { conn_handshake(c); return; }
    if (c->tls_read_wants_write) {
        c->tls_read_wants_write = 0;
        if (c->wpos >= c->safe) ev_io_stop(loop, &c->wio);
        if (ev_is_active(&c->rio)) ev_feed_event(loop, &c->rio, EV_READ);
        if (c->wpos >= c->safe) return;
    }
    conn_write(c);
}

void px_conn_check_output_limit(px_conn *c) {
    if (!px_cfg.client_output_buffer_limit || (c->flags & PX_CONN_CLOSE_ASAP)) return;
    if ((long long)(c->out.len - c->wpos) > px_cfg.client_output_buffer_limit) {
        px_log(PX_LOG_WARNING, "closing client %llu (%s) for overcoming of output buffer limits (%zu bytes)",
               (unsigned long long)c->id, c->addr, c->out.len - c->wpos);
        c->flags |= PX_CONN_CLOSE_ASAP;
    }
}

/* A top-level command is answered (Redis's resetClient): the bytes it was
 * silenced for are dropped, and CLIENT REPLY SKIP moves on to the next
 * command. */
static void reply_done(px_conn *c) {
    px_conn_mute_stop(c);
    c->reply &= (unsigned char)~PX_REPLY_SKIP;
    if (c->reply & PX_REPLY_SKIP_NEXT) c->reply = (unsigned char)((c->reply & ~PX_REPLY_SKIP_NEXT) | PX_REPLY_SKIP);
}

/* Parse and run every complete command in the read buffer. */
static void process_input(px_conn *c) {
    while (!c->blk && !PX_HOOK_TEST(held, c) && !(c->flags & (PX_CONN_CLOSE_AFTER_REPLY | PX_CONN_CLOSE_ASAP)) && c->rpos < c->rlen) {
        c->parser.max_bulk = px_cfg.proto_max_bulk_len;
        c->parser.unauth = !c->authed;
        size_t consumed = 0;
        /* the form is the command's first byte, as the parser decides it; read
         * it before parsing: an inline line is unescaped in place and may then
         * start with '*' (raw would wrongly hand the rewritten line on) */
        int multibulk = c->rbuf[c->rpos] == '*';
        int rc = resp_parse(&c->parser, c->rbuf + c->rpos, c->rlen - c->rpos, &consumed);
        if (rc == RESP_INCOMPLETE) break;
        if (rc == RESP_ERROR) {
            const char *e = resp_parser_error(&c->parser);
            px_log(PX_LOG_VERBOSE, "client %llu (%s): %s", (unsigned long long)c->id, c->addr, e);
            if (!(c->reply & (PX_REPLY_OFF | PX_REPLY_SKIP))) resp_add_errorf(&c->out, "ERR %s", e);   /* CLIENT REPLY */
            c->flags |= PX_CONN_CLOSE_AFTER_REPLY;
            c->rpos = c->rlen;
            break;
        }
        if (rc == RESP_COMMAND) {
            /* a silenced blocking command answered since (blk_finish) whose
             * resume has not run yet: it is done before the next command, so
             * its silence does not cover that command's reply */
            if (__builtin_expect(c->reply_blocked, 0) && !c->blk) { c->reply_blocked = 0; reply_done(c); }
            if (__builtin_expect(c->reply != 0, 0) && (c->reply & (PX_REPLY_OFF | PX_REPLY_SKIP)))
                px_conn_mute_start(c);               /* CLIENT REPLY OFF / SKIP */
            px_dispatch(c, c->parser.argc, c->parser.argv,
                        multibulk ? c->rbuf + c->rpos : NULL, consumed);
            if (__builtin_expect(c->reply != 0 || c->muting, 0)) {
                if (c->blk) c->reply_blocked = 1;   /* answered later: px_conn_resume */
                else reply_done(c);
            }
        }
        c->rpos += consumed;
        /* checked after every reply, as Redis does, so one read's pipeline
         * cannot pile up more than one reply beyond the limit */
        px_conn_check_output_limit(c);
    }
    if (c->rpos == c->rlen) {
        c->rpos = c->rlen = 0;
        if (c->rcap > BUF_SHRINK) { free(c->rbuf); c->rbuf = NULL; c->rcap = 0; }
    } else if (c->rpos > 0) {
        memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
        c->rlen -= c->rpos;
        c->rpos = 0;
    }
    if (c->out.len > c->safe || (c->flags & (PX_CONN_CLOSE_AFTER_REPLY | PX_CONN_CLOSE_ASAP))) px_conn_touch(c);
}

void px_conn_resume(px_conn *c) {
    if (c->reply_blocked && !c->blk) {   /* the blocked command is answered */
        c->reply_blocked = 0;
        reply_done(c);
    }
    if (!c->blk && c->rpos < c->rlen) process_input(c);
    conn_recheck_pending(c);
    px_conn_touch(c);
}
void px_conn_process_input(px_conn *c) { process_input(c); }

static void on_read(struct ev_loop *loop, ev_io *w, int revents) {
    px_conn *c = w->data;
    if (c->tls && !px_tls_established(c->tls)) { conn_handshake(c); return; }
    /* Room for the next read. A big bulk in progress grows the buffer by
     * doubling what has arrived (capped at what the bulk still needs), never
     * straight to the size its header announces: memory follows the bytes
     * actually received, and the copies stay amortised O(n). */
    size_t want = resp_parser_want(&c->parser);
    size_t chunk = READ_CHUNK;
    /* A client with nothing kept reads into one shared buffer and keeps only
     * what is left unparsed: idle clients (10,000 subscribers) hold no read
     * buffer. Nothing points into rbuf after process_input (it compacts). */
    static char scratch[READ_CHUNK];
    int shared = !c->rbuf && want <= READ_CHUNK;
    if (shared) {
        c->rbuf = scratch;
        c->rcap = READ_CHUNK;
        c->rlen = c->rpos = 0;
    }
    if (want > chunk) {
        size_t grow = c->rlen > chunk ? c->rlen : chunk;
        chunk = want < grow ? want : grow;
    }
    if (c->rcap - c->rlen < chunk) {
        size_t ncap = c->rcap ? c->rcap : READ_CHUNK;
        while (ncap - c->rlen < chunk) ncap *= 2;
        char *nb = realloc(c->rbuf, ncap);
        if (!nb) { px_log(PX_LOG_WARNING, "out of memory reading from client %llu", (unsigned long long)c->id); px_conn_close(c); return; }
        c->rbuf = nb;
        c->rcap = ncap;
    }
    ssize_t n = conn_recv(c, c->rbuf + c->rlen, c->rcap - c->rlen);
    if (n <= 0 && shared) { c->rbuf = NULL; c->rcap = 0; }
    if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
        if (n == 0 && !c->blk && (c->pend_head || c->wpos < c->out.len)) {
            /* half-close with replies still owed by an asynchronous backend,
             * or completed in this same loop turn and not yet sent: deliver
             * them (a server answering synchronously would have sent them
             * before it saw the EOF), then close */
            ev_io_stop(loop, &c->rio);
            c->flags |= PX_CONN_CLOSE_AFTER_REPLY;
            c->rpos = c->rlen = 0;
            px_conn_touch(c);
            return;
        }
        px_conn_close(c);
        return;
    }
    c->rlen += (size_t)n;
    px_srv.net_input += (uint64_t)n;
    c->last_interaction = ev_now(loop);
    process_input(c);
    if (shared) {
        char *own = NULL;
        if (c->rlen > c->rpos && !(own = malloc(READ_CHUNK))) {
            px_log(PX_LOG_WARNING, "out of memory reading from client %llu", (unsigned long long)c->id);
            c->rbuf = NULL;
            c->rcap = c->rlen = c->rpos = 0;
            px_conn_close(c);
            return;
        }
        if (own) memcpy(own, c->rbuf + c->rpos, c->rlen - c->rpos);
        c->rlen -= c->rpos;
        c->rpos = 0;
        c->rbuf = own;
        c->rcap = own ? READ_CHUNK : 0;
    }
    if ((long long)(c->rlen - c->rpos) > px_cfg.client_query_buffer_limit) {
        px_log(PX_LOG_WARNING, "closing client %llu (%s) that reached max query buffer length (%zu bytes)",
               (unsigned long long)c->id, c->addr, c->rlen - c->rpos);
        c->flags |= PX_CONN_CLOSE_ASAP;
        px_conn_touch(c);
    }
    if (c->flags & (PX_CONN_CLOSE_AFTER_REPLY | PX_CONN_CLOSE_ASAP)) ev_io_stop(loop, &c->rio);
    conn_recheck_pending(c);
}

/* -------------------------------------------------------- end of a turn */

/* Runs before the loop blocks: commit the turn's writes, then release the
 * replies. A failed commit means this turn's write replies are false: the
 * clients that got them are disconnected instead (nothing is acknowledged
 * that is not stored). */
static void on_turn_end(struct ev_loop *loop, ev_prepare *w, int revents) {
    px_conn *sc = px_hook_nested_owner();
    if (sc) {
        /* the loop runs nested inside a script (hooks.h): no commit
         * mid-script; send only the replies that wait for none (-BUSY) */
        for (px_conn **pp = &px_srv.turn; *pp;) {
            px_conn *c = *pp;
            if (c == sc || c->turn_wrote || (c->flags & PX_CONN_CLOSE_ASAP)) { pp = &c->turn_next; continue; }
            *pp = c->turn_next;
            c->in_turn = 0;
            c->turn_next = NULL;
            if (c->muting) px_conn_mute_cut(c);   /* nothing silenced goes out */
            c->safe = px_conn_sendable(c);
            conn_write(c);
        }
        return;
    }
    px_srv.turns++;
    PX_HOOK_RUN(turn_start);
    int st = px_backends_commit_before_flush();
    if (st != FD_OK) {
        px_srv.failed_commits++;
        px_log(PX_LOG_WARNING, "commit failed: %s; closing the clients whose writes it held", fd_strerror(st));
    }
    px_conn *c = px_srv.turn;
    px_srv.turn = NULL;
    while (c) {
        px_conn *next = c->turn_next;
        c->in_turn = 0;
        c->turn_next = NULL;
        if ((st != FD_OK && c->turn_wrote) || (c->flags & PX_CONN_CLOSE_ASAP)) {
            px_conn_close(c);
        } else {
            c->turn_wrote = 0;
            if (c->muting) px_conn_mute_cut(c);   /* nothing silenced goes out (a blocked command's) */
            c->safe = px_conn_sendable(c);
            conn_write(c);
        }
        c = next;
    }
    px_backends_after_flush();
}

static void on_cron(struct ev_loop *loop, ev_timer *w, int revents) {
    ev_tstamp now = ev_now(loop);
    px_backends_cron(px_now_ms());
    static ev_tstamp last_clients;
    if (now - last_clients >= 1.0) {
        last_clients = now;
        for (px_conn *c = px_srv.clients, *next; c; c = next) {
            next = c->next;
            /* a stalled TLS handshake holds only its own slot, this long */
            if (c->tls && !px_tls_established(c->tls) &&
                (now - c->created) * 1000.0 > (double)px_cfg.tls_handshake_timeout) {
                px_log(PX_LOG_VERBOSE, "closing client %llu (%s): TLS handshake timeout", (unsigned long long)c->id, c->addr);
                px_conn_close(c);
            } else if (c->tls && now - c->last_interaction >= 1.0) {
                px_tls_idle(c->tls);   /* an idle TLS client keeps no record buffers */
            }
        }
        if (px_cfg.timeout > 0) {
            for (px_conn *c = px_srv.clients, *next; c; c = next) {
                next = c->next;
                /* blocked clients and subscribers are not idle (as in Redis),
                 * nor one held behind another's atomic unit: it sent a
                 * command that waits (Redis would not run its cron then) */
                if (now - c->last_interaction > (double)px_cfg.timeout && c->wpos == c->out.len && !c->pend_head &&
                    !c->blk && !c->held && !PX_HOOK_TEST(busy, c)) {
                    px_log(PX_LOG_VERBOSE, "closing idle client %llu", (unsigned long long)c->id);
                    px_conn_close(c);
                }
            }
        }
        double dt = now - px_srv.ops_sample_time;
        if (dt > 0) px_srv.ops_per_sec = (double)(px_srv.total_commands - px_srv.ops_sample_cmds) / dt;
        px_srv.ops_sample_cmds = px_srv.total_commands;
        px_srv.ops_sample_time = now;
    }
    w->repeat = 1.0 / (double)px_cfg.hz;
    ev_timer_again(loop, w);
}

void px_server_reload(void) {
    px_settings old;
    px_settings_copy(&old, &px_cfg);
    char err[1024];
    if (px_config_reload(err, sizeof err)) {
        px_log(PX_LOG_WARNING, "reload failed, keeping the running configuration: %s", err);
        px_settings_free(&old);
        return;
    }
    int rc = px_backends_swap(0, NULL, err, sizeof err);
    if (rc < 0) {
        px_log(PX_LOG_WARNING, "reload: keeping backend %s: %s", old.be.backend, err);
        px_backend_settings_assign(&px_cfg.be, &old.be);
    } else if (rc == 1) {
        px_log(PX_LOG_NOTICE, "reload: waiting for backend %s to answer before moving traffic to it", px_cfg.be.backend);
    }
    if (px_backends_ab_apply(err, sizeof err)) {
        px_log(PX_LOG_WARNING, "reload: keeping the A/B setup: %s", err);
        px_backend_settings_assign(&px_cfg.ab, &old.ab);
        px_cfg.ab_mode = old.ab_mode;
    }
    px_log(PX_LOG_NOTICE, "configuration reloaded (backend %s, ab-mode %s)", px_cfg.be.backend,
           px_cfg.ab_mode == PX_AB_MIRROR ? "mirror" : px_cfg.ab_mode == PX_AB_SPLIT ? "split" : "off");
    px_settings_free(&old);
}

static void on_hup(struct ev_loop *loop, ev_signal *w, int revents) {
    px_log(PX_LOG_NOTICE, "received SIGHUP, reloading the configuration");
    px_server_reload();
}

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents) {
    px_log(PX_LOG_WARNING, "received %s, shutting down", w->signum == SIGINT ? "SIGINT" : "SIGTERM");
    ev_break(loop, EVBREAK_ALL);
}

/* ------------------------------------------------------------ listeners */

static int add_listener(int fd, int tls, char *err, size_t errlen) {
    if (nlisteners == MAX_LISTENERS) { snprintf(err, errlen, "too many listeners"); close(fd); return -1; }
    ev_io_init(&listeners[nlisteners], on_accept, fd, EV_READ);
    listeners[nlisteners].data = tls ? &px_tls_listener_tag : NULL;
    ev_io_start(px_srv.loop, &listeners[nlisteners]);
    nlisteners++;
    return 0;
}

static int listen_tcp(const char *host, long long portnum, int tls, char *err, size_t errlen) {
    struct addrinfo hints = {0}, *res, *ai;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST;
    char port[16];
    snprintf(port, sizeof port, "%lld", portnum);
    const char *h = host;
    int ipv6_opt = 0;
    if (h[0] == '-') { h++; ipv6_opt = 1; }  /* "-::1": optional, as redis */
    int rc = getaddrinfo(!strcmp(h, "*") ? NULL : h, port, &hints, &res);
    if (rc) { snprintf(err, errlen, "bind %s: %s", host, gai_strerror(rc)); return -1; }
    for (ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (ai->ai_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, (int)px_cfg.tcp_backlog)) {
            int e = errno;
            close(fd);
            if (ipv6_opt) continue;
            snprintf(err, errlen, "can't listen on %s:%lld: %s", host, portnum, strerror(e));
            freeaddrinfo(res);
            return -1;
        }
        if (add_listener(fd, tls, err, errlen)) { freeaddrinfo(res); return -1; }
    }
    freeaddrinfo(res);
    return 0;
}

static int listen_unix(const char *path, char *err, size_t errlen) {
    struct sockaddr_un sa = {0};
    if (strlen(path) >= sizeof sa.sun_path) { snprintf(err, errlen, "unixsocket path too long: %s", path); return -1; }
    sa.sun_family = AF_UNIX;
    strcpy(sa.sun_path, path);
    unlink(path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) || listen(fd, (int)px_cfg.tcp_backlog)) {
        snprintf(err, errlen, "can't listen on unix socket %s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    if (px_cfg.unixsocketperm) chmod(path, (mode_t)px_cfg.unixsocketperm);
    return add_listener(fd, 0, err, errlen);
}

int px_server_init(char *err, size_t errlen) {
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl;
    rlim_t need = (rlim_t)px_cfg.maxclients + 64;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < need) {
        rl.rlim_cur = need < rl.rlim_max ? need : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        if (rl.rlim_cur < need)
            px_log(PX_LOG_WARNING, "open files limit %llu is below maxclients %lld + 64",
                   (unsigned long long)rl.rlim_cur, px_cfg.maxclients);
    }
    px_srv.loop = EV_DEFAULT;
    px_srv.start_time = time(NULL);
    px_srv.ops_sample_time = ev_now(px_srv.loop);

    if (px_backends_init(err, errlen)) return -1;

    /* bind: one or more addresses separated by spaces, as redis.conf */
    char binds[1024];
    snprintf(binds, sizeof binds, "%s", px_cfg.bind);
    if (px_tls_configure(err, errlen)) return -1;      /* tls-* directives (proxy/tls.h) */
    char *save = NULL;
    for (char *h = strtok_r(binds, " ", &save); h; h = strtok_r(NULL, " ", &save)) {
        if (px_cfg.port > 0 && listen_tcp(h, px_cfg.port, 0, err, errlen)) return -1;
        if (px_cfg.tls_port > 0 && listen_tcp(h, px_cfg.tls_port, 1, err, errlen)) return -1;
    }
    if (px_cfg.unixsocket[0] && listen_unix(px_cfg.unixsocket, err, errlen)) return -1;
    if (nlisteners == 0) { snprintf(err, errlen, "nothing to listen on (port 0, tls-port 0 and no unixsocket)"); return -1; }

    ev_prepare_init(&turn_watcher, on_turn_end);
    ev_prepare_start(px_srv.loop, &turn_watcher);
    ev_init(&cron_timer, on_cron);
    cron_timer.repeat = 1.0 / (double)px_cfg.hz;
    ev_timer_again(px_srv.loop, &cron_timer);
    ev_signal_init(&sig_term, on_signal, SIGTERM);
    ev_signal_init(&sig_int, on_signal, SIGINT);
    ev_signal_start(px_srv.loop, &sig_term);
    ev_signal_start(px_srv.loop, &sig_int);
    ev_signal_init(&sig_hup, on_hup, SIGHUP);
    ev_signal_start(px_srv.loop, &sig_hup);
    return 0;
}

void px_server_run(void) { ev_run(px_srv.loop, 0); }
void px_server_stop(void) { ev_break(px_srv.loop, EVBREAK_ALL); }

void px_server_shutdown(void) {
    /* Commit and deliver what was answered; then close everything. */
    on_turn_end(px_srv.loop, &turn_watcher, 0);
    while (px_srv.clients) px_conn_close(px_srv.clients);
    for (int i = 0; i < nlisteners; i++) {
        ev_io_stop(px_srv.loop, &listeners[i]);
        close(listeners[i].fd);
    }
    nlisteners = 0;
    PX_HOOK_RUN(shutdown);
    px_tls_shutdown();
    if (px_cfg.unixsocket[0]) unlink(px_cfg.unixsocket);
    /* replies still owed by asynchronous backends are dropped with their clients */
    px_backends_shutdown();
}
