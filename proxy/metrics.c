/* metrics.c — the Prometheus text endpoint and INFO latencystats (see
 * metrics.h). */
#include "metrics.h"
#include "hooks.h"
#include "tls.h"
#include "ab.h"
#include "migrate.h"
#include "config.h"
#include "log.h"
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_METRICS_LISTENERS 16
static ev_io mlisteners[MAX_METRICS_LISTENERS];
static int nml;
static uint64_t scrapes;

/* ------------------------------------------------------------ rendering */

static void out(resp_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(resp_out *o, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0) resp_out_raw(o, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

static void head(resp_out *o, const char *name, const char *type, const char *help) {
    out(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Prometheus bucket upper edges, in seconds and ns. */
static const char *const le_txt[] = {"1e-06", "2.5e-06", "5e-06", "1e-05", "2.5e-05", "5e-05", "0.0001", "0.00025",
                                     "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25",
                                     "0.5", "1", "2.5", "5", "10"};
static const uint64_t le_ns[] = {1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000,
                                 5000000, 10000000, 25000000, 50000000, 100000000, 250000000, 500000000,
                                 1000000000, 2500000000ull, 5000000000ull, 10000000000ull};
#define NLE (sizeof le_ns / sizeof le_ns[0])

/* One histogram's series; labels: `a="x",b="y"` (no braces). */
static void hist(resp_out *o, const char *name, const char *labels, const px_hist *h) {
    uint64_t cum = 0;
    unsigned i = 0;
    for (unsigned k = 0; k < NLE; k++) {
        while (i < PX_HIST_BUCKETS && px_hist_bucket_upper(i) <= le_ns[k]) cum += h->b[i++];
        out(o, "%s_bucket{%s,le=\"%s\"} %llu\n", name, labels, le_txt[k], (unsigned long long)cum);
    }
    out(o, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, labels, (unsigned long long)h->count);
    out(o, "%s_sum{%s} %.9f\n", name, labels, (double)h->sum_ns / 1e9);
    out(o, "%s_count{%s} %llu\n", name, labels, (unsigned long long)h->count);
}

typedef void (*be_fn)(resp_out *o, const px_backend *be, const char *labels);

static void each_backend(resp_out *o, be_fn fn) {
    char labels[128];
    const px_backend *all[2] = {px_srv.primary, px_srv.secondary};
    for (int i = 0; i < 2; i++) {
        if (!all[i]) continue;
        snprintf(labels, sizeof labels, "role=\"%s\",backend=\"%s\"", i ? "secondary" : "primary", all[i]->b.ops->name);
        fn(o, all[i], labels);
    }
    int n = 0;
    for (const px_backend *d = px_srv.draining; d; d = d->next, n++) {
        snprintf(labels, sizeof labels, "role=\"draining\",backend=\"%s\",draining=\"%d\"", d->b.ops->name, n);
        fn(o, d, labels);
    }
}

static void be_calls(resp_out *o, const px_backend *be, const char *l) { out(o, "frontdoor_backend_calls_total{%s} %llu\n", l, (unsigned long long)be->calls); }
static void be_errors(resp_out *o, const px_backend *be, const char *l) { out(o, "frontdoor_backend_errors_total{%s} %llu\n", l, (unsigned long long)be->errors); }
static void be_inflight(resp_out *o, const px_backend *be, const char *l) { out(o, "frontdoor_backend_inflight{%s} %llu\n", l, (unsigned long long)be->inflight); }
static void be_latency(resp_out *o, const px_backend *be, const char *l) { hist(o, "frontdoor_backend_duration_seconds", l, &be->latency); }
static void be_wait(resp_out *o, const px_backend *be, const char *l) { hist(o, "frontdoor_backend_wait_seconds", l, &be->wait); }
static void be_proxy(resp_out *o, const px_backend *be, const char *l) {
    uint64_t own = be->latency.sum_ns > be->wait.sum_ns ? be->latency.sum_ns - be->wait.sum_ns : 0;
    out(o, "frontdoor_backend_proxy_seconds_total{%s} %.9f\n", l, (double)own / 1e9);
}

void px_metrics_render(resp_out *o) {
    size_t n;
    fd_command *t = fd_commands_table(&n);
    static uint64_t calls[FD_CMD_COUNT], errs[FD_CMD_COUNT];
    static px_hist h;                              /* 2.7 KB: not on the stack */
    for (size_t i = 0; i < n; i++) {
        uint64_t ns;
        px_cmd_sum(t[i].id, &calls[i], &ns, &errs[i]);
    }
    px_backends_refresh();
    head(o, "frontdoor_command_calls_total", "counter", "Commands run, by command (INFO commandstats calls).");
    for (size_t i = 0; i < n; i++)
        if (calls[i]) out(o, "frontdoor_command_calls_total{cmd=\"%s\"} %llu\n", t[i].name, (unsigned long long)calls[i]);
    head(o, "frontdoor_command_errors_total", "counter", "Commands answered with an error (INFO commandstats failed_calls).");
    for (size_t i = 0; i < n; i++)
        if (calls[i]) out(o, "frontdoor_command_errors_total{cmd=\"%s\"} %llu\n", t[i].name, (unsigned long long)errs[i]);
    head(o, "frontdoor_command_duration_seconds", "histogram", "From dispatch until the reply is in the client's buffer (INFO latencystats).");
    for (size_t i = 0; i < n; i++) {
        if (!calls[i]) continue;
        px_cmd_total(t[i].id, &h);
        char l[96];
        snprintf(l, sizeof l, "cmd=\"%s\"", t[i].name);
        hist(o, "frontdoor_command_duration_seconds", l, &h);
    }
    head(o, "frontdoor_backend_calls_total", "counter", "Requests answered by a backend (INFO backends calls).");
    each_backend(o, be_calls);
    head(o, "frontdoor_backend_errors_total", "counter", "Backend replies that were errors.");
    each_backend(o, be_errors);
    head(o, "frontdoor_backend_inflight", "gauge", "Requests handed to a backend and not answered yet.");
    each_backend(o, be_inflight);
    head(o, "frontdoor_backend_duration_seconds", "histogram", "From the hand-over to the backend until the reply is ready (INFO backends p50_us...).");
    each_backend(o, be_latency);
    head(o, "frontdoor_backend_wait_seconds", "histogram", "The part of it spent waiting on the backend (an embedded store: its own work).");
    each_backend(o, be_wait);
    head(o, "frontdoor_backend_proxy_seconds_total", "counter", "The rest: time spent in frontdoor itself on backend requests.");
    each_backend(o, be_proxy);
    head(o, "frontdoor_backend_switches_total", "counter", "Live backend swaps.");
    out(o, "frontdoor_backend_switches_total %llu\n", (unsigned long long)px_srv.switches);
    head(o, "frontdoor_connected_clients", "gauge", "Client connections open.");
    out(o, "frontdoor_connected_clients %llu\n", (unsigned long long)px_srv.nclients);
    head(o, "frontdoor_connections_received_total", "counter", "Client connections accepted.");
    out(o, "frontdoor_connections_received_total %llu\n", (unsigned long long)px_srv.total_connections);
    head(o, "frontdoor_connections_rejected_total", "counter", "Client connections refused (maxclients).");
    out(o, "frontdoor_connections_rejected_total %llu\n", (unsigned long long)px_srv.rejected_connections);
    head(o, "frontdoor_commands_processed_total", "counter", "Commands received.");
    out(o, "frontdoor_commands_processed_total %llu\n", (unsigned long long)px_srv.total_commands);
    px_ab_counts a;
    px_ab_counters(&a);
    head(o, "frontdoor_ab_total", "counter", "A/B: commands mirrored, compared, and how the comparisons ended (INFO ab).");
    const struct { const char *event; uint64_t n; } ev[] = {
        {"mirrored", a.mirrored}, {"compared", a.compared}, {"divergence", a.divergences}, {"race", a.races},
        {"noisy", a.noisy}, {"dropped", a.dropped}, {"secondary_error", a.secondary_errors},
        {"split_secondary", a.split_secondary}, {"sampled_out", a.sampled_out}, {"deferred", a.deferred},
        {"unit", a.units},
    };
    for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++)
        out(o, "frontdoor_ab_total{event=\"%s\"} %llu\n", ev[i].event, (unsigned long long)ev[i].n);
    head(o, "frontdoor_ab_queue", "gauge", "A/B: copies in flight to the secondary.");
    out(o, "frontdoor_ab_queue %llu\n", (unsigned long long)a.queued);
    head(o, "frontdoor_metrics_scrapes_total", "counter", "Pages served by this endpoint (before this one).");
    out(o, "frontdoor_metrics_scrapes_total %llu\n", (unsigned long long)scrapes);
    head(o, "frontdoor_ab_stopped", "gauge", "A/B: 1 when mirroring stopped after ab-stop-after divergences.");
    out(o, "frontdoor_ab_stopped %d\n", a.stopped);
    px_migrate_metrics(o, head, out);            /* issue 30 */
}

void px_metrics_latencystats(resp_out *o) {
    size_t n;
    fd_command *t = fd_commands_table(&n);
    static px_hist h;
    for (size_t i = 0; i < n; i++) {
        uint64_t calls, ns, errs;
        px_cmd_sum(t[i].id, &calls, &ns, &errs);
        if (!calls) continue;
        px_cmd_total(t[i].id, &h);
        out(o, "latency_percentiles_usec_%s:p50=%.3f,p99=%.3f,p99.9=%.3f\r\n", t[i].name,
            px_hist_quantile(&h, 0.5) / 1e3, px_hist_quantile(&h, 0.99) / 1e3, px_hist_quantile(&h, 0.999) / 1e3);
    }
}

/* ------------------------------------------------------------ endpoint */

#define REQ_MAX 8192


typedef struct mconn {
    ev_io    io;
    px_tls_conn *tls;        /* metrics-tls yes: the page is served over TLS */
    char     req[REQ_MAX];
    size_t   rl;
    resp_out resp;
    size_t   off;
    int      writing;
} mconn;

static void mconn_close(struct ev_loop *loop, mconn *m) {
    ev_io_stop(loop, &m->io);
    px_tls_free(m->tls);
    close(m->io.fd);
    resp_out_free(&m->resp);
    free(m);
}

static void respond(mconn *m, const char *status, const char *ctype, const char *body, size_t blen) {
    char h[256];
    int n = snprintf(h, sizeof h, "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
                     status, ctype, blen);
    resp_out_raw(&m->resp, h, (size_t)n);
    if (blen) resp_out_raw(&m->resp, body, blen);
}

/* Wait for the socket to be readable (events EV_READ) or writable. */
static void mconn_wait(struct ev_loop *loop, mconn *m, int events) {
    if (m->io.events == events) return;
    ev_io_stop(loop, &m->io);
    ev_io_set(&m->io, m->io.fd, events);
    ev_io_start(loop, &m->io);
}

static void on_mconn(struct ev_loop *loop, ev_io *w, int revents) {
    mconn *m = (mconn *)w;
    (void)revents;
    if (m->tls && !px_tls_established(m->tls)) {
        int rc = px_tls_handshake(m->tls);
        if (rc == PX_TLS_WANT_READ || rc == PX_TLS_WANT_WRITE) {
            mconn_wait(loop, m, rc == PX_TLS_WANT_READ ? EV_READ : EV_WRITE);
            return;
        }
        if (rc != PX_TLS_OK) { mconn_close(loop, m); return; }
        mconn_wait(loop, m, EV_READ);
    }
    if (!m->writing) {
        ssize_t r;
        if (m->tls) {
            r = px_tls_read(m->tls, m->req + m->rl, sizeof m->req - 1 - m->rl);
            if (r == PX_TLS_WANT_READ || r == PX_TLS_WANT_WRITE) return;
            if (r < 0) { mconn_close(loop, m); return; }
        } else {
            r = read(w->fd, m->req + m->rl, sizeof m->req - 1 - m->rl);
        }
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) { mconn_close(loop, m); return; }
        if (r < 0) return;
        m->rl += (size_t)r;
        m->req[m->rl] = 0;
        if (!strstr(m->req, "\r\n\r\n") && !strstr(m->req, "\n\n")) {
            if (m->rl + 1 < sizeof m->req) return;
            respond(m, "431 Request Header Fields Too Large", "text/plain", "", 0);
        } else if (!strncmp(m->req, "GET /metrics ", 13) || !strncmp(m->req, "GET /metrics?", 13) || !strncmp(m->req, "GET / ", 6)) {
            resp_out body;
            resp_out_init(&body, 2);
            px_metrics_render(&body);
            scrapes++;
            respond(m, "200 OK", "text/plain; version=0.0.4; charset=utf-8", body.data ? body.data : "", body.len);
            resp_out_free(&body);
        } else if (!strncmp(m->req, "GET ", 4)) {
            respond(m, "404 Not Found", "text/plain", "GET /metrics\n", 13);
        } else {
            respond(m, "405 Method Not Allowed", "text/plain", "GET /metrics\n", 13);
        }
        m->writing = 1;
        ev_io_stop(loop, w);
        ev_io_set(w, w->fd, EV_WRITE);
        ev_io_start(loop, w);
        return;
    }
    while (m->off < m->resp.len) {
        if (m->tls) {
            ssize_t k = px_tls_write(m->tls, m->resp.data + m->off, m->resp.len - m->off);
            if (k == PX_TLS_WANT_READ || k == PX_TLS_WANT_WRITE) {
                mconn_wait(loop, m, k == PX_TLS_WANT_READ ? EV_READ : EV_WRITE);
                return;
            }
            if (k <= 0) break;
            m->off += (size_t)k;
            continue;
        }
        ssize_t k = write(w->fd, m->resp.data + m->off, m->resp.len - m->off);
        if (k < 0 && (errno == EAGAIN || errno == EINTR)) return;
        if (k <= 0) break;
        m->off += (size_t)k;
    }
    mconn_close(loop, m);
}

static void on_maccept(struct ev_loop *loop, ev_io *w, int revents) {
    (void)revents;
    for (int i = 0; i < 16; i++) {
        int fd = accept(w->fd, NULL, NULL);
        if (fd < 0) return;
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        mconn *m = calloc(1, sizeof *m);
        if (!m) { close(fd); continue; }
        if (px_cfg.metrics_tls && !(m->tls = px_tls_new(fd))) { free(m); close(fd); continue; }
        resp_out_init(&m->resp, 2);
        ev_io_init(&m->io, on_mconn, fd, EV_READ);
        ev_io_start(loop, &m->io);
    }
}

static int listen_on(const char *host, char *err, size_t errlen) {
    char port[16];
    snprintf(port, sizeof port, "%lld", px_cfg.metrics_port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res, *ai;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc) { snprintf(err, errlen, "metrics-port: bind %s: %s", host, gai_strerror(rc)); return -1; }
    for (ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (ai->ai_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 64) || nml == MAX_METRICS_LISTENERS) {
            int e = errno;
            close(fd);
            snprintf(err, errlen, "can't listen on %s:%lld (metrics-port): %s", host, px_cfg.metrics_port, strerror(e));
            freeaddrinfo(res);
            return -1;
        }
        ev_io_init(&mlisteners[nml], on_maccept, fd, EV_READ);
        ev_io_start(px_srv.loop, &mlisteners[nml]);
        nml++;
    }
    freeaddrinfo(res);
    return 0;
}

int px_metrics_init(char *err, size_t errlen) {
    if (px_cfg.metrics_port <= 0) return 0;
    if (px_cfg.metrics_tls && !px_tls_ready()) {
        snprintf(err, errlen, "metrics-tls yes needs tls-cert-file and tls-key-file (the clients' TLS setup)");
        return -1;
    }
    char binds[1024];
    snprintf(binds, sizeof binds, "%s", px_cfg.bind);
    char *save = NULL;
    for (char *h = strtok_r(binds, " ", &save); h; h = strtok_r(NULL, " ", &save))
        if (listen_on(h, err, errlen)) return -1;
    px_log(PX_LOG_NOTICE, "metrics on port %lld (GET /metrics%s)", px_cfg.metrics_port, px_cfg.metrics_tls ? ", TLS" : "");
    return 0;
}

void px_metrics_shutdown(void) {
    for (int i = 0; i < nml; i++) {
        ev_io_stop(px_srv.loop, &mlisteners[i]);
        close(mlisteners[i].fd);
    }
    nml = 0;
}

void px_metrics_hooks(void) { PX_HOOK_ADD(shutdown, px_metrics_shutdown); }
