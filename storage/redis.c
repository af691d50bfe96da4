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
 *   - A pool of `redis-pool-size` connections, shared by the clients.
 *     `redis-pool-affinity key` (the default): a command goes to the
 *     connection of its first key (a hash of the key modulo the pool size),
 *     so every command on one key reaches Redis over one connection, in the
 *     order frontdoor submitted it, and Redis's replies on that key come back
 *     in the order it ran them (an A/B mirror then sees the primary's true
 *     per-key order: docs/ab-testing.md "Order"). A client's own order comes
 *     first: while a client still has a request in flight on connection c,
 *     its next command follows it to c whatever its key (so a pipeline that
 *     mixes keys keeps its order; only those commands may leave their key's
 *     connection). A keyless command goes to the client's connection while
 *     it has one in flight, else to client id % pool size. Each client's
 *     last (connection, request sequence) is kept in a small open-addressing
 *     table (rb_client) that holds at most the clients with a request in
 *     flight plus the idle ones not yet purged; it is rebuilt, without the
 *     idle ones, when half full: O(1) per command, no allocation but its
 *     growth. `redis-pool-affinity client`: each client is pinned to one
 *     connection (client id % pool size), as before issue 30.
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
 *     WAIT (would block it; blocking pops and XREAD/XREADGROUP BLOCK go to a
 *     connection of their own, proxy/blocking.c),
 *     (P|S)SUBSCRIBE/MONITOR (would turn it into a push stream),
 *     MULTI/EXEC/DISCARD/WATCH/UNWATCH (a transaction would take other
 *     clients' commands in), RESET, and SYNC/PSYNC/REPLCONF/SHUTDOWN. A
 *     dedicated-connection mode for these is a later improvement.
 *   Everything else is forwarded, including commands frontdoor's table does
 *   not know (ops.passthrough).
 *
 * Faults (the connection code, shared with the redis-cluster backend, is in
 * redis_conn.c). Every in-flight request has a deadline (backend-timeout,
 * 1000 ms by default) checked by a timer every 50 ms: a connection whose oldest
 * request is overdue (Redis stuck, or a connect that hangs) is reset and all
 * its in-flight requests fail with "-ERR backend unavailable (redis ADDR:
 * reason)". A lost or refused connection fails its requests at once, and new
 * commands on a connection that is down fail at once with the same error.
 * Reconnection uses exponential backoff (50 ms doubling to 2 s, back to 50 ms
 * after the first good reply); service resumes by itself. A request that
 * timed out may still be executed by Redis later (it was sent): the error
 * means "unknown outcome", as with any proxy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backend.h"
#include "redis_conn.h"
#include "redis_settings.h"
#include "host.h"
#include "value/rdb.h"

/* A client's latest request: on conns[conn], sequence seq (rc_last_seq). */
typedef struct rb_client {
    uint64_t id;                /* 0: an empty slot */
    int      conn;
    uint64_t seq;
} rb_client;

typedef struct rb_backend {
    rc_shared  sh;
    rc_addr    addr;
    int        n;
    rc_conn   *conns;
    rc_conn   *relay;           /* pub/sub: one connection subscribed to every local name */
    int        by_key;          /* redis-pool-affinity key, over more than one connection */
    int        key_cfg;         /* redis-pool-affinity key as set (INFO shows the setting) */
    rb_client *cl;              /* key affinity: clients' latest requests (capacity clcap, a power of two) */
    size_t     clcap, clused;
    fd_backend *fb;
    /* statistics */
    uint64_t   forwarded, refused, failed;   /* failed: refused at submit (the connections count the rest) */
} rb_backend;

/* A reply (or the connection's "backend unavailable", counted per connection). */
static void rb_reply(void *ctx, const char *reply, size_t len, int local) {
    fd_pending_reply(ctx, reply, len);
}

static void rb_close(fd_backend *fb);

static int rb_open(fd_backend *fb, const fd_backend_config *cfg, char *err, size_t errlen) {
    static const fd_redis_settings none;
    const fd_redis_settings *rs = cfg->options ? cfg->options : &none;   /* redis_settings.h */
    if (!cfg->loop) { snprintf(err, errlen, "no event loop"); return FD_E_INTERNAL; }
    rb_backend *b = calloc(1, sizeof *b);
    if (!b) { snprintf(err, errlen, "out of memory"); return FD_E_NOMEM; }
    const char *addr = rs->address && rs->address[0] ? rs->address : "127.0.0.1:6379";
    if (rc_addr_resolve(&b->addr, addr, "redis-address", 0, err, errlen)) { free(b); return FD_E_INTERNAL; }
    b->sh.loop = cfg->loop;
    b->sh.label = "redis";
    b->sh.password = rs->password && rs->password[0] ? strdup(rs->password) : NULL;
    b->sh.user = rs->user && rs->user[0] ? strdup(rs->user) : NULL;
    b->sh.db = (int)rs->db;
    b->sh.timeout_ms = cfg->backend_timeout_ms > 0 ? cfg->backend_timeout_ms : 1000;
    b->sh.blocking_max = (int)rs->blocking_pool_size;
    b->fb = fb;
    b->n = rc_pool_size(rs->pool_size);
    b->key_cfg = rs->pool_affinity == FD_REDIS_AFFINITY_KEY;
    b->by_key = b->key_cfg && b->n > 1;   /* one connection: every order is kept anyway */
    b->conns = calloc((size_t)b->n, sizeof *b->conns);
    if (!b->conns) { free(b->sh.password); free(b->sh.user); free(b); snprintf(err, errlen, "out of memory"); return FD_E_NOMEM; }
    if (rs->tls && rc_shared_tls(&b->sh, rs->tls_ca_cert_file, rs->tls_cert_file,
                                        rs->tls_key_file, rs->tls_sni, err, errlen)) {
        free(b->conns); free(b->sh.password); free(b->sh.user); free(b);
        return FD_E_INTERNAL;
    }
    fb->state = b;
    rc_shared_init(&b->sh);
    /* a backend that is not reachable yet is not fatal: clients get errors
     * until it comes up (the connection code logs the warning) */
    for (int i = 0; i < b->n; i++) rc_conn_init(&b->conns[i], &b->sh, &b->addr, i);
    /* the pub/sub relay connects now, not at the first SUBSCRIBE: a client's
     * confirmation is sent at once, and a relay still connecting then would
     * miss what another client publishes right after it (docs/pubsub.md) */
    if ((b->relay = calloc(1, sizeof *b->relay))) rc_relay_init(b->relay, &b->sh, &b->addr, b->fb);
    return FD_OK;
}

static void rb_close(fd_backend *fb) {
    rb_backend *b = fb->state;
    if (!b) return;
    for (int i = 0; i < b->n; i++) rc_conn_destroy(&b->conns[i]);
    if (b->relay) { rc_conn_destroy(b->relay); free(b->relay); }
    rc_shared_close(&b->sh);
    free(b->conns);
    free(b->cl);
    free(b->sh.password);
    free(b->sh.user);
    free(b);
    fb->state = NULL;
}

static size_t cl_home(const rb_backend *b, uint64_t id) {
    uint64_t h = id * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 17) & (b->clcap - 1);
}

/* The slot of client id (or the empty slot where it would go); NULL when
 * the table has none yet. */
static rb_client *cl_find(rb_backend *b, uint64_t id) {
    if (!b->clcap) return NULL;
    for (size_t i = cl_home(b, id);; i = (i + 1) & (b->clcap - 1))
        if (b->cl[i].id == id || !b->cl[i].id) return &b->cl[i];
}

/* Room for one more client: when half full, rebuild without the clients
 * that have nothing in flight (doubling while still a quarter full). -1 out
 * of memory. */
static int cl_reserve(rb_backend *b) {
    if (b->clcap && (b->clused + 1) * 2 <= b->clcap) return 0;
    size_t live = 0;
    for (size_t i = 0; i < b->clcap; i++)
        if (b->cl[i].id && rc_seq_pending(&b->conns[b->cl[i].conn], b->cl[i].seq)) live++;
    size_t cap = 64;
    while ((live + 1) * 4 > cap) cap *= 2;
    rb_client *nc = calloc(cap, sizeof *nc), *old = b->cl;
    if (!nc) return -1;
    size_t oldcap = b->clcap;
    b->cl = nc;
    b->clcap = cap;
    b->clused = 0;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].id && rc_seq_pending(&b->conns[old[i].conn], old[i].seq)) {
            *cl_find(b, old[i].id) = old[i];
            b->clused++;
        }
    free(old);
    return 0;
}

/* The connection for r (the header's "Data path"); *slot: the client's
 * record to update once sent (NULL: none kept). */
static int rb_pick(rb_backend *b, const fd_request *r, rb_client **slot) {
    *slot = NULL;
    int home = (int)(r->client_id % (uint64_t)b->n);
    if (!b->by_key) return home;
    int pos[1], k = -1;
    if (r->cmd && fd_command_keys(r->cmd, r->argc, r->argv, pos, 1) >= 1)
        k = (int)(fd_crc64(0, r->argv[pos[0]].ptr, r->argv[pos[0]].len) % (uint64_t)b->n);
    if (!r->client_id) return k >= 0 ? k : home;          /* frontdoor's own request: no order to keep */
    rb_client *e = cl_find(b, r->client_id);
    if (e && e->id && rc_seq_pending(&b->conns[e->conn], e->seq)) { *slot = e; return e->conn; }
    if (!e || !e->id) {
        if (cl_reserve(b)) return home;                  /* out of memory: nothing recorded, the client's
                                                          * connection keeps its order as before */
        e = cl_find(b, r->client_id);
    }
    *slot = e;
    return k >= 0 ? k : home;
}

static int rb_submit(fd_backend *fb, fd_request *r) {
    rb_backend *b = fb->state;
    const char *why = rc_refusal(r->argc, r->argv);
    if (why) {
        char name[64];
        size_t l = r->argv[0].len < sizeof name - 1 ? r->argv[0].len : sizeof name - 1;
        for (size_t i = 0; i < l; i++) {
            char ch = r->argv[0].ptr[i];
            name[i] = (char)((ch >= 'A' && ch <= 'Z') ? ch + 32 : ch);
        }
        name[l] = '\0';
        b->refused++;
        fd_reply_unsupported(r->out, name, "redis", why);
        return FD_OK;
    }
    rb_client *rec;
    int ci = rb_pick(b, r, &rec);
    rc_conn *c = &b->conns[ci];
    if (c->state == RC_DOWN) {
        char msg[512];
        size_t ml = rc_unavailable(c, msg, sizeof msg);
        b->failed++;
        resp_out_raw(r->out, msg, ml);
        return FD_OK;
    }
    int proto = r->out->proto == 3 ? 3 : 2;
    if (proto == 3 && b->sh.no_resp3) {
        resp_add_errorf(r->out, "ERR RESP3 is not available through frontdoor's redis backend (redis %s: %s)",
                        b->addr.name, b->sh.no_resp3);
        return FD_OK;
    }
    if (rc_send(c, proto, r->raw, r->rawlen, r->argc, r->argv, rb_reply, r->pending)) return FD_E_NOMEM;
    if (rec) {
        if (!rec->id) { rec->id = r->client_id; b->clused++; }
        rec->conn = ci;
        rec->seq = rc_last_seq(c);
    }
    b->forwarded++;
    return FD_PENDING;
}

/* Blocking commands: a connection of their own (redis_conn.c). */
static int rb_submit_blocking(fd_backend *fb, fd_request *r) {
    rb_backend *b = fb->state;
    if (r->out->proto == 3 && b->sh.no_resp3) {
        resp_add_errorf(r->out, "ERR RESP3 is not available through frontdoor's redis backend (redis %s: %s)",
                        b->addr.name, b->sh.no_resp3);
        return FD_OK;
    }
    return rc_blocking_submit(&b->sh, &b->addr, r);
}

static void rb_cancel_blocking(fd_backend *fb, fd_pending *p) {
    rb_backend *b = fb->state;
    rc_blocking_cancel(&b->sh, p);
}

/* Pub/sub: the relay connection carries the union of the local names. */
static void rb_pubsub(fd_backend *fb, int kind, const char *name, size_t len, int on) {
    rb_backend *b = fb->state;
    if (!b->relay) {
        if (!on || !(b->relay = calloc(1, sizeof *b->relay))) return;
        rc_relay_init(b->relay, &b->sh, &b->addr, b->fb);   /* subscribes everything once up */
        return;
    }
    rc_relay_sub(b->relay, kind, name, len, on);
}

/* notify-keyspace-events set through frontdoor: the server fires the
 * events, the relay brings them to the subscribers. */
static void rb_notify_set(fd_backend *fb, const char *classes) {
    rb_backend *b = fb->state;
    rc_notify_set(&b->sh, classes);
}

/* Once per loop turn: one write per connection that got commands. */
static int rb_end_turn(fd_backend *fb) {
    rb_backend *b = fb->state;
    rc_flush(&b->sh);
    return FD_OK;
}

static void rb_info(fd_backend *fb, resp_out *o) {
    rb_backend *b = fb->state;
    char line[768];
    int up = 0;
    uint64_t inflight = 0, connects = 0, reconnects = 0, timeouts = 0, failed = b->failed, held = 0;
    for (int i = 0; i < b->n; i++) {
        const rc_conn *c = &b->conns[i];
        if (c->state == RC_UP) up++;
        held += c->holds;
        inflight += rc_inflight(c);
        connects += c->connects;
        reconnects += c->reconnects;
        timeouts += c->timeouts;
        failed += c->failed;
    }
    int n = snprintf(line, sizeof line,
                     "redis_backend_address:%s\r\n"
                     "redis_backend_pool_size:%d\r\n"
                     "redis_backend_pool_affinity:%s\r\n"
                     "redis_backend_connections_up:%d\r\n"
                     "redis_backend_inflight:%llu\r\n"
                     "redis_backend_forwarded:%llu\r\n"
                     "redis_backend_refused:%llu\r\n"
                     "redis_backend_failed:%llu\r\n"
                     "redis_backend_connects:%llu\r\n"
                     "redis_backend_reconnects:%llu\r\n"
                     "redis_backend_timeouts:%llu\r\n"
                     "redis_backend_timeout_ms:%lld\r\n"
                     "redis_backend_writes_held:%llu\r\n",
                     b->addr.name, b->n, b->key_cfg ? "key" : "client", up, (unsigned long long)inflight, (unsigned long long)b->forwarded,
                     (unsigned long long)b->refused, (unsigned long long)failed,
                     (unsigned long long)connects, (unsigned long long)reconnects,
                     (unsigned long long)timeouts, (long long)b->sh.timeout_ms, (unsigned long long)held);
    if (n > 0) resp_out_raw(o, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    rc_blocking_info(&b->sh, o);
    n = snprintf(line, sizeof line, "redis_backend_pubsub_relay:%s\r\n",
                 !b->relay ? "none" : b->relay->state == RC_UP ? "up" : "down");
    if (n > 0) resp_out_raw(o, line, (size_t)n);
}

const fd_backend_ops fd_redis_backend = {
    .name = "redis",
    .async = 1,
    .passthrough = 1,
    .options = &fd_redis_options,
    .open = rb_open,
    .close = rb_close,
    .submit = rb_submit,
    .end_turn = rb_end_turn,
    .cron = NULL,
    .keyspace = NULL,
    .info = rb_info,
    .support = rc_support,
    .refusal = rc_refusal,
    .submit_blocking = rb_submit_blocking,
    .cancel_blocking = rb_cancel_blocking,
    .pubsub = rb_pubsub,
    .notify = FD_NOTIFY_CLASSES,
    .notify_set = rb_notify_set,
};
