/* redis_cluster.c — the redis-cluster backend: one frontdoor port in front of
 * a whole Redis Cluster. Selected with `backend redis-cluster`; settings
 * redis-cluster-seeds ("host:port[,host:port...]"), redis-pool-size (backend
 * connections per master), redis-password, backend-timeout.
 * See docs/redis-cluster.md.
 *
 * The connections are storage/redis_conn.c's, as in the redis backend (not
 * hiredis: Debian 12's 0.14.1 cannot read RESP3 replies).
 *
 * Routing.
 *   - The slot map comes from CLUSTER SLOTS (asked of a seed, then of any
 *     master that is up): slot -> master. Each master gets a pool of
 *     connections; a client is pinned to connection (client id % pool) of
 *     every master, so its commands reach each master in its order.
 *   - A command goes to the master of its key's hash slot (CRC16 of the key,
 *     or of the part between the first '{' and the next '}' when that is not
 *     empty). Key positions come from the command table (first/last/step);
 *     for commands the table does not know, from a short list here
 *     (numkeys commands, EVAL/FCALL, XREAD, BITOP) or else the first
 *     argument. A wrong guess costs one redirection, never a wrong answer.
 *   - Keys in different slots: MGET, MSET, DEL, UNLINK, EXISTS and TOUCH are
 *     split into one command per slot, sent at once, and the replies merged in
 *     the client's order (MSET is then not atomic across slots). Any other
 *     table command whose keys span slots gets Redis's
 *     "-CROSSSLOT Keys in request don't hash to the same slot"; commands the
 *     table does not know are checked by Redis itself, which answers the same.
 *   - DBSIZE, FLUSHALL, FLUSHDB, KEYS and RANDOMKEY go to every master and
 *     are merged (sum, first error or OK, concatenation, first key found).
 *     SCAN walks the masters in slot order; the cursor given to the client is
 *     (the master's cursor << 10) | the master's index.
 *
 * Redirections, never passed to the client.
 *   - -MOVED slot addr: the slot now belongs to addr: the map is updated, the
 *     command sent there, and a full map refresh is scheduled.
 *   - -ASK slot addr: ASKING then the command to addr, map unchanged.
 *   - -TRYAGAIN (a multi-key command during a slot migration): sent again
 *     25 ms later, until backend-timeout.
 *   At most CL_MAX_REDIRECTS per command; then "backend unavailable".
 *
 * Faults. A request whose master's connection is down, fails or times out
 * gets "-ERR backend unavailable (redis-cluster ADDR: reason)" at once (as in
 * the redis backend) and the map is refreshed (at most every
 * CL_REFRESH_MIN_MS, and every CL_REFRESH_DOWN_MS while a master is
 * unreachable), so once a replica is promoted traffic goes to it. The map is
 * also refreshed every CL_REFRESH_PERIOD_MS. Until the first map is known,
 * keyed commands wait for it (up to backend-timeout); keyless fan-outs get
 * "backend unavailable (... no slot map yet ...)".
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "backend.h"
#include "cmdargs.h"
#include "redis_conn.h"
#include "redis_settings.h"
#include "host.h"

#define CL_SLOTS             16384
#define CL_MAX_REDIRECTS     5
#define CL_TICK_MS           20
#define CL_REFRESH_MIN_MS    100
#define CL_REFRESH_DOWN_MS   200
#define CL_REFRESH_PERIOD_MS 5000
#define CL_TRYAGAIN_MS       25
#define CL_SCAN_BITS         10      /* node index in the low bits of a SCAN cursor */

/* ------------------------------------------------------------ hash slots */

static uint16_t crc16tab[256];

static void crc16_init(void) {
    for (int i = 0; i < 256; i++) {     /* CRC-16/XMODEM, polynomial 0x1021, as Redis Cluster */
        uint16_t c = (uint16_t)(i << 8);
        for (int k = 0; k < 8; k++) c = (uint16_t)(c & 0x8000 ? (c << 1) ^ 0x1021 : c << 1);
        crc16tab[i] = c;
    }
}

static uint16_t crc16(const char *p, size_t n) {
    uint16_t crc = 0;
    for (size_t i = 0; i < n; i++) crc = (uint16_t)((crc << 8) ^ crc16tab[((crc >> 8) ^ (unsigned char)p[i]) & 0xff]);
    return crc;
}

/* Redis's keyHashSlot: the part between the first '{' and the next '}' when
 * it is not empty, else the whole key. */
static int key_slot(const char *k, size_t n) {
    size_t s, e;
    for (s = 0; s < n; s++)
        if (k[s] == '{') break;
    if (s < n) {
        for (e = s + 1; e < n; e++)
            if (k[e] == '}') break;
        if (e < n && e != s + 1) return crc16(k + s + 1, e - s - 1) & (CL_SLOTS - 1);
    }
    return crc16(k, n) & (CL_SLOTS - 1);
}

/* ------------------------------------------------------------ types */

typedef struct cl_node {
    rc_addr    addr;
    rc_conn   *conns;
    int        n;
    int        seed;            /* from redis-cluster-seeds: kept for map refreshes */
    int        nslots;          /* slots the map gives it */
    int        master_idx;      /* index in b->masters, -1 if not there */
    uint64_t   forwarded, moved, asked;
    rc_conn   *srelay;          /* pub/sub: this master's shard channels (SSUBSCRIBE) */
    rc_conn   *krelay;          /* pub/sub: this master's keyspace events (ks_relays) */
    struct cl_node *next;
} cl_node;

typedef struct cl_part cl_part;

/* A keyless fan-out that came before the first slot map: sent when it comes. */
typedef struct cl_deferred {
    fd_pending *p;
    int        merge, proto;
    uint64_t   client_id;
    char      *cmd;
    size_t     cmdlen;
    int64_t    deadline;
    struct cl_deferred *next;
} cl_deferred;

typedef struct cl_backend {
    rc_shared  sh;
    int        pool;
    char      *seeds;
    cl_node   *nodes;
    cl_node   *slots[CL_SLOTS];
    cl_node  **masters;         /* the map's masters by lowest slot (fan-out, SCAN) */
    int        nmasters;
    int        map_ok;
    int        refreshing;
    int        need_refresh;
    int        refresh_rr;      /* where the next refresh starts looking */
    cl_node   *refresh_node;
    int64_t    last_refresh, last_map;
    char       maperr[600];
    cl_part   *parked, *parked_tail;
    cl_deferred *deferred, *deferred_tail;
    int        slot_group[CL_SLOTS];   /* scratch for splitting: slot -> group, -1 */
    ev_timer   timer;
    int        closing;
    rc_conn   *relay;           /* pub/sub: channels and patterns (cluster-wide), at one master */
    fd_backend *fb;
    uint64_t   rng;             /* RANDOMKEY's choice of master (xorshift64*) */
    /* statistics */
    uint64_t   forwarded, split, fanout, moved, asked, tryagain, crossslot, refused, failed;
    uint64_t   refreshes, refresh_failures;
} cl_backend;

enum { M_SINGLE, M_MGET, M_OK, M_SUM, M_KEYS, M_FLUSH, M_RANDOM, M_SCAN };

typedef struct cl_req {
    cl_backend *b;
    fd_pending *p;
    int        merge;
    int        proto;
    uint64_t   client_id;
    int        nparts, left;
    int        nkeys;           /* M_MGET: keys of the client's command */
    int       *order;           /* M_MGET: client key index of each part's keys, part by part */
    int        scan_idx;        /* M_SCAN: the master's index */
    cl_part   *parts;
} cl_req;

struct cl_part {
    cl_req    *r;
    char      *cmd;             /* the bytes to send (kept for redirections) */
    size_t     cmdlen;
    int        slot;            /* -1: to `node` (fan-out) */
    cl_node   *node;
    cl_node   *ask;             /* send ASKING + the command here, once */
    int        redirects;
    int        k0, nk;          /* M_MGET: its keys in r->order */
    int64_t    wake, deadline;  /* parked */
    char      *reply;           /* merged kinds: the reply, kept until all are in */
    size_t     replylen;
    int        done;
    cl_part   *park_next;
};

/* ------------------------------------------------------------ nodes */

static cl_node *node_find(cl_backend *b, const char *name) {
    for (cl_node *n = b->nodes; n; n = n->next)
        if (strcmp(n->addr.name, name) == 0) return n;
    return NULL;
}

/* Find or create the node for name; NULL (err set) if it cannot be used. */
static cl_node *node_get(cl_backend *b, const char *name, int numeric, char *err, size_t errlen) {
    cl_node *n = node_find(b, name);
    if (n) return n;
    n = calloc(1, sizeof *n);
    if (!n) { snprintf(err, errlen, "out of memory"); return NULL; }
    if (rc_addr_resolve(&n->addr, name, "redis-cluster node", numeric, err, errlen)) { free(n); return NULL; }
    n->conns = calloc((size_t)b->pool, sizeof *n->conns);
    if (!n->conns) { free(n); snprintf(err, errlen, "out of memory"); return NULL; }
    n->n = b->pool;
    n->master_idx = -1;
    n->next = b->nodes;
    b->nodes = n;
    for (int i = 0; i < n->n; i++) rc_conn_init(&n->conns[i], &b->sh, &n->addr, i);
    return n;
}

static size_t node_inflight(const cl_node *n) {
    size_t q = 0;
    for (int i = 0; i < n->n; i++) q += rc_inflight(&n->conns[i]);
    return q;
}

static int node_up(const cl_node *n) {
    for (int i = 0; i < n->n; i++)
        if (n->conns[i].state == RC_UP) return 1;
    return 0;
}

/* Is any node's connection up or on its way? (No: fail at once, not at the deadline.) */
static int any_reachable(const cl_backend *b) {
    for (const cl_node *n = b->nodes; n; n = n->next)
        for (int i = 0; i < n->n; i++)
            if (n->conns[i].state != RC_DOWN) return 1;
    return 0;
}

static void node_free(cl_node *n) {
    if (n->srelay) { rc_conn_destroy(n->srelay); free(n->srelay); }
    if (n->krelay) { rc_conn_destroy(n->krelay); free(n->krelay); }
    for (int i = 0; i < n->n; i++) rc_conn_destroy(&n->conns[i]);
    free(n->conns);
    free(n);
}

/* Nodes the map no longer uses, with nothing in flight: closed (from the
 * timer, never inside a connection's callback). */
static void nodes_gc(cl_backend *b) {
    cl_node **pp = &b->nodes;
    while (*pp) {
        cl_node *n = *pp;
        if (!n->seed && n->nslots == 0 && n->master_idx < 0 && node_inflight(n) == 0 &&
            !rc_blocking_uses(&b->sh, &n->addr) && !(b->relay && b->relay->addr == &n->addr)) {
            *pp = n->next;
            fd_log(FD_LOG_VERBOSE, "redis-cluster: node %s left the slot map: closing its connections", n->addr.name);
            node_free(n);
        } else {
            pp = &n->next;
        }
    }
}

/* ------------------------------------------------------------ replies */

static void req_free(cl_req *r) {
    for (int i = 0; i < r->nparts; i++) {
        free(r->parts[i].reply);
        if (r->parts[i].cmd != (char *)(r->parts + r->nparts)) free(r->parts[i].cmd);
    }
    free(r->order);
    free(r);
}

static int is_error(const char *d, size_t n) { return n && (d[0] == '-' || d[0] == '!'); }

/* Elements of an array reply: the offset after its header line and the count. */
static int array_body(const char *d, size_t n, size_t *body, long long *count) {
    if (n < 4 || (d[0] != '*' && d[0] != '~')) return -1;
    const char *e = memchr(d, '\r', n);
    if (!e) return -1;
    char *end;
    long long c = strtoll(d + 1, &end, 10);
    if (end != e) return -1;
    *body = (size_t)(e - d) + 2;
    *count = c < 0 ? 0 : c;
    return 0;
}

static void reply_and_free(cl_req *r, const char *d, size_t n) {
    if (r->p) fd_pending_reply(r->p, d, n);
    r->p = NULL;
    req_free(r);
}

static void reply_err_and_free(cl_req *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reply_err_and_free(cl_req *r, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    size_t n = resp_vformat_line(msg, sizeof msg, fmt, ap);
    va_end(ap);
    r->b->failed++;
    reply_and_free(r, msg, n);
}

static void part_send(cl_part *pt);

/* SCAN moves on to the next master: its cursor argument (at pt->k0)
 * becomes 0. -1 when out of memory. */
static int scan_cursor_zero(cl_part *pt) {
    const char *at = pt->cmd + pt->k0;
    size_t l = (size_t)strtoul(at + 1, NULL, 10);
    const char *after = strchr(at, '\n') + 1 + l + 2;
    size_t tail = pt->cmdlen - (size_t)(after - pt->cmd);
    char *nc = malloc((size_t)pt->k0 + 7 + tail);
    if (!nc) return -1;
    memcpy(nc, pt->cmd, (size_t)pt->k0);
    memcpy(nc + pt->k0, "$1\r\n0\r\n", 7);
    memcpy(nc + pt->k0 + 7, after, tail);
    free(pt->cmd);
    pt->cmd = nc;
    pt->cmdlen = (size_t)pt->k0 + 7 + tail;
    return 0;
}

/* Every part has its reply: merge them into the client's one. */
/* xorshift64* of the backend (RANDOMKEY's choice of master). */
static uint64_t cl_rand(cl_backend *b)
{
    uint64_t x = b->rng;
    x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
    b->rng = x;
    return x * 0x2545f4914f6cdd1dULL;
}

static void req_merge(cl_req *r) {
    cl_backend *b = r->b;
    for (int i = 0; i < r->nparts; i++)     /* the first error, in part order */
        if (is_error(r->parts[i].reply, r->parts[i].replylen)) {
            if (r->merge == M_RANDOM) continue;
            reply_and_free(r, r->parts[i].reply, r->parts[i].replylen);
            return;
        }
    resp_out o;
    resp_out_init(&o, r->proto);
    switch (r->merge) {
    case M_OK:
    case M_FLUSH:
        resp_out_raw(&o, r->parts[0].reply, r->parts[0].replylen);
        break;
    case M_SUM: {
        long long sum = 0;
        for (int i = 0; i < r->nparts; i++) {
            const cl_part *pt = &r->parts[i];
            if (pt->replylen < 3 || pt->reply[0] != ':') goto bad;
            sum += strtoll(pt->reply + 1, NULL, 10);
        }
        resp_add_int(&o, sum);
        break;
    }
    case M_KEYS: {
        long long total = 0, c;
        size_t body;
        for (int i = 0; i < r->nparts; i++) {
            if (array_body(r->parts[i].reply, r->parts[i].replylen, &body, &c)) goto bad;
            total += c;
        }
        resp_add_array(&o, total);
        for (int i = 0; i < r->nparts; i++) {
            array_body(r->parts[i].reply, r->parts[i].replylen, &body, &c);
            resp_out_raw(&o, r->parts[i].reply + body, r->parts[i].replylen - body);
        }
        break;
    }
    case M_RANDOM: {
        /* every master answered with one of its keys (or nil): take one of
         * the keys uniformly (reservoir of one over the non-nil parts). Not
         * weighted by each master's key count (that would cost a DBSIZE per
         * master per call); the slots spread keys evenly over the masters */
        const cl_part *hit = NULL;
        int seen = 0;
        for (int k = 0; k < r->nparts; k++) {
            const cl_part *pt = &r->parts[k];
            if (pt->replylen > 1 && pt->reply[0] == '$' && pt->reply[1] != '-' &&
                cl_rand(b) % (uint64_t)++seen == 0) hit = pt;
        }
        if (!hit) hit = &r->parts[0];
        if (is_error(hit->reply, hit->replylen)) {
            reply_and_free(r, hit->reply, hit->replylen);
            resp_out_free(&o);
            return;
        }
        resp_out_raw(&o, hit->reply, hit->replylen);
        break;
    }
    case M_MGET: {
        const char **el = calloc((size_t)r->nkeys, sizeof *el);
        size_t *ell = calloc((size_t)r->nkeys, sizeof *ell);
        if (!el || !ell) { free(el); free(ell); goto bad; }
        int ok = 1;
        for (int i = 0; i < r->nparts && ok; i++) {
            const cl_part *pt = &r->parts[i];
            long long c;
            size_t pos;
            if (array_body(pt->reply, pt->replylen, &pos, &c) || c != pt->nk) { ok = 0; break; }
            for (int j = 0; j < pt->nk; j++) {
                resp_scanner sc;
                resp_scanner_init(&sc);
                long long l = resp_scan_reply(&sc, pt->reply + pos, pt->replylen - pos);
                if (l <= 0) { ok = 0; break; }
                int k = r->order[pt->k0 + j];
                el[k] = pt->reply + pos;
                ell[k] = (size_t)l;
                pos += (size_t)l;
            }
        }
        if (ok) {
            resp_add_array(&o, r->nkeys);
            for (int k = 0; k < r->nkeys; k++) resp_out_raw(&o, el[k], ell[k]);
        }
        free(el);
        free(ell);
        if (!ok) goto bad;
        break;
    }
    case M_SCAN: {
        /* *2 $n cursor <array>: the node's cursor becomes the client's */
        const cl_part *pt = &r->parts[0];
        const char *d = pt->reply;
        size_t n = pt->replylen, body;
        long long c;
        if (array_body(d, n, &body, &c) || c != 2 || body >= n || d[body] != '$') goto bad;
        const char *nl = memchr(d + body, '\n', n - body);
        if (!nl) goto bad;
        size_t clen = (size_t)strtoull(d + body + 1, NULL, 10);
        const char *cs = nl + 1;
        if ((size_t)(cs - d) + clen + 2 > n) goto bad;
        unsigned long long nc = strtoull(cs, NULL, 10), out;
        const char *rest = cs + clen + 2;
        if (nc == 0 && r->scan_idx + 1 < b->nmasters && (size_t)(d + n - rest) >= 4 && memcmp(rest + 1, "0\r\n", 3) == 0) {
            /* this master is done and gave nothing: ask the next one now
             * (a SCAN never answers "nothing, continue" for a whole master) */
            cl_part *p0 = &r->parts[0];
            free(p0->reply);
            p0->reply = NULL;
            p0->done = 0;
            r->left = 1;
            r->scan_idx++;
            p0->node = b->masters[r->scan_idx];
            if (scan_cursor_zero(p0)) { resp_out_free(&o); goto bad_nomem; }
            resp_out_free(&o);
            part_send(p0);
            return;
        }
        if (nc) {
            if (nc >> (64 - CL_SCAN_BITS)) goto bad;
            out = (nc << CL_SCAN_BITS) | (unsigned long long)r->scan_idx;
        } else {
            out = r->scan_idx + 1 < b->nmasters ? (unsigned long long)(r->scan_idx + 1) : 0;
        }
        char num[32];
        int nl2 = snprintf(num, sizeof num, "%llu", out);
        resp_add_array(&o, 2);
        resp_add_bulk(&o, num, (size_t)nl2);
        resp_out_raw(&o, rest, (size_t)(d + n - rest));
        break;
    }
    default:
        goto bad;
    }
    if (r->p) fd_pending_reply(r->p, o.data, o.len);
    r->p = NULL;
    resp_out_free(&o);
    req_free(r);
    return;
bad:
    resp_out_free(&o);
    reply_err_and_free(r, "-ERR backend unavailable (redis-cluster: unexpected reply shape from a node)");
    return;
bad_nomem:
    reply_err_and_free(r, "-ERR out of memory");
}

/* A part is answered (reply bytes valid only now). */
static void part_done(cl_part *pt, const char *d, size_t n) {
    cl_req *r = pt->r;
    if (r->merge == M_SINGLE) {
        reply_and_free(r, d, n);
        return;
    }
    pt->reply = malloc(n ? n : 1);
    if (pt->reply) { memcpy(pt->reply, d, n); pt->replylen = n; }
    else { pt->reply = strdup("-ERR out of memory\r\n"); pt->replylen = pt->reply ? strlen(pt->reply) : 0; }
    pt->done = 1;
    if (--r->left == 0) req_merge(r);
}

static void part_fail(cl_part *pt, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void part_fail(cl_part *pt, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    size_t n = resp_vformat_line(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pt->r->b->failed++;
    part_done(pt, msg, n);
}

/* ------------------------------------------------------------ sending */

static void refresh_start(cl_backend *b);

static void park(cl_part *pt, int64_t wake) {
    cl_backend *b = pt->r->b;
    pt->wake = wake;
    if (!pt->deadline) pt->deadline = fd_mono_ms() + b->sh.timeout_ms;
    pt->park_next = NULL;
    if (b->parked_tail) b->parked_tail->park_next = pt;
    else b->parked = pt;
    b->parked_tail = pt;
}

static void want_refresh(cl_backend *b) {
    b->need_refresh = 1;
    if (!b->refreshing && fd_mono_ms() - b->last_refresh >= CL_REFRESH_MIN_MS) refresh_start(b);
}

/* "MOVED 3999 127.0.0.1:6381" / "ASK ...": slot and address. */
static int parse_redirect(const char *d, size_t n, const cl_node *from, int *slot, char *addr, size_t alen) {
    const char *sp = memchr(d, ' ', n);
    if (!sp) return -1;
    char *end;
    long s = strtol(sp + 1, &end, 10);
    if (*end != ' ' || s < 0 || s >= CL_SLOTS) return -1;
    const char *a = end + 1, *e = memchr(a, '\r', (size_t)(d + n - a));
    if (!e || e == a) return -1;
    size_t l = (size_t)(e - a);
    if (a[0] == ':' && from) {      /* ":port": the node does not know its IP: the host we asked */
        const char *colon = strrchr(from->addr.name, ':');
        size_t hl = colon ? (size_t)(colon - from->addr.name) : 0;
        if (hl + l + 1 > alen) return -1;
        memcpy(addr, from->addr.name, hl);
        memcpy(addr + hl, a, l);
        addr[hl + l] = '\0';
    } else {
        if (l + 1 > alen) return -1;
        memcpy(addr, a, l);
        addr[l] = '\0';
    }
    *slot = (int)s;
    return 0;
}

static void set_slot(cl_backend *b, int slot, cl_node *n) {
    if (b->slots[slot] == n) return;
    if (b->slots[slot]) b->slots[slot]->nslots--;
    b->slots[slot] = n;
    if (n) n->nslots++;
}

static void on_part_reply(void *ctx, const char *d, size_t n, int local) {
    cl_part *pt = ctx;
    cl_req *r = pt->r;
    cl_backend *b = r->b;
    if (b->closing) { part_done(pt, d, n); return; }
    if (local) {            /* the node's connection failed or timed out */
        b->failed++;
        want_refresh(b);
        part_done(pt, d, n);
        return;
    }
    if (n > 4 && d[0] == '-') {
        int moved = n > 7 && memcmp(d, "-MOVED ", 7) == 0;
        int ask = !moved && n > 5 && memcmp(d, "-ASK ", 5) == 0;
        if (moved || ask) {
            int slot;
            char addr[300], err[300];
            cl_node *from = pt->slot >= 0 ? b->slots[pt->slot] : pt->node;
            if (parse_redirect(d + 1, n - 1, from, &slot, addr, sizeof addr)) { part_done(pt, d, n); return; }
            if (++pt->redirects > CL_MAX_REDIRECTS) {
                part_fail(pt, "-ERR backend unavailable (redis-cluster: more than %d redirections for slot %d, last to %s)",
                          CL_MAX_REDIRECTS, slot, addr);
                return;
            }
            cl_node *to = node_get(b, addr, 1, err, sizeof err);
            if (!to) { part_fail(pt, "-ERR backend unavailable (redis-cluster: redirected to %s: %s)", addr, err); return; }
            if (moved) {
                b->moved++;
                to->moved++;
                set_slot(b, slot, to);
                if (pt->slot < 0) pt->node = to;
                want_refresh(b);
            } else {
                b->asked++;
                to->asked++;
                pt->ask = to;
            }
            part_send(pt);
            return;
        }
        if (n > 9 && memcmp(d, "-TRYAGAIN", 9) == 0 && pt->slot >= 0) {
            int64_t now = fd_mono_ms();
            if (!pt->deadline) pt->deadline = now + b->sh.timeout_ms;
            if (now + CL_TRYAGAIN_MS < pt->deadline) {
                b->tryagain++;
                park(pt, now + CL_TRYAGAIN_MS);
                return;
            }
            /* retried until backend-timeout: the documented error, not the
             * cluster's own TRYAGAIN (the same text as a parked part's) */
            part_fail(pt, "-ERR backend unavailable (redis-cluster: slot %d still migrating after %lld ms)",
                      pt->slot, (long long)b->sh.timeout_ms);
            return;
        }
    }
    part_done(pt, d, n);
}

/* Send (or park) a part on the connection its client uses on its node. */
static void part_send(cl_part *pt) {
    cl_req *r = pt->r;
    cl_backend *b = r->b;
    cl_node *n = pt->ask ? pt->ask : pt->slot >= 0 ? b->slots[pt->slot] : pt->node;
    if (!n) {
        if (!b->map_ok && any_reachable(b)) { park(pt, 0); want_refresh(b); return; }   /* waits for the first map */
        if (!b->map_ok) {
            part_fail(pt, "-ERR backend unavailable (redis-cluster: no slot map%s%s)", b->maperr[0] ? ": " : " yet", b->maperr);
            return;
        }
        want_refresh(b);
        part_fail(pt, "-ERR backend unavailable (redis-cluster: hash slot %d is not served by any node)", pt->slot);
        return;
    }
    rc_conn *c = &n->conns[r->client_id % (uint64_t)n->n];
    if (pt->ask) {
        static const resp_arg asking[1] = { { "ASKING", 6 } };
        pt->ask = NULL;
        if (rc_send(c, r->proto, NULL, 0, 1, asking, NULL, NULL) == 0 &&
            rc_send(c, r->proto, pt->cmd, pt->cmdlen, 0, NULL, on_part_reply, pt) == 0) {
            n->forwarded++;
            return;
        }
    } else if (rc_send(c, r->proto, pt->cmd, pt->cmdlen, 0, NULL, on_part_reply, pt) == 0) {
        n->forwarded++;
        return;
    }
    char msg[512];
    size_t ml = rc_unavailable(c, msg, sizeof msg);
    b->failed++;
    want_refresh(b);
    part_done(pt, msg, ml);
}

/* ------------------------------------------------------------ the slot map */

/* A tiny reader of one reply, enough for CLUSTER SLOTS. */
typedef struct rd { const char *p, *end; } rd;

static int rd_head(rd *x, char *type, long long *v) {
    if (x->p >= x->end) return -1;
    const char *e = memchr(x->p, '\r', (size_t)(x->end - x->p));
    if (!e || e + 1 >= x->end) return -1;
    *type = x->p[0];
    *v = strtoll(x->p + 1, NULL, 10);
    x->p = e + 2;
    return 0;
}

static int rd_skip(rd *x) {
    resp_scanner sc;
    resp_scanner_init(&sc);
    long long l = resp_scan_reply(&sc, x->p, (size_t)(x->end - x->p));
    if (l <= 0) return -1;
    x->p += l;
    return 0;
}

static int rd_str(rd *x, const char **s, size_t *len) {
    char t;
    long long v;
    const char *start = x->p;
    if (rd_head(x, &t, &v)) return -1;
    if (t == '+') { *s = start + 1; *len = (size_t)(x->p - 2 - start - 1); return 0; }
    if (t != '$' || v < 0 || x->p + v + 2 > x->end) return -1;
    *s = x->p;
    *len = (size_t)v;
    x->p += v + 2;
    return 0;
}

static void masters_rebuild(cl_backend *b) {
    for (cl_node *n = b->nodes; n; n = n->next) n->master_idx = -1;
    int cnt = 0;
    for (cl_node *n = b->nodes; n; n = n->next) if (n->nslots) cnt++;
    cl_node **m = calloc((size_t)(cnt ? cnt : 1), sizeof *m);
    if (!m) return;
    int k = 0;
    for (int s = 0; s < CL_SLOTS; s++) {        /* by lowest slot: stable while the topology is */
        cl_node *n = b->slots[s];
        if (n && n->master_idx < 0 && k < cnt) { n->master_idx = k; m[k++] = n; }
    }
    free(b->masters);
    b->masters = m;
    b->nmasters = k;
}

/* Apply a CLUSTER SLOTS reply: *N of [start, end, [ip, port, id, ...], replicas...]. */
static int apply_slots(cl_backend *b, const char *d, size_t len, char *err, size_t errlen) {
    rd x = { d, d + len };
    char t;
    long long nent;
    if (rd_head(&x, &t, &nent) || t != '*') { snprintf(err, errlen, "CLUSTER SLOTS: not an array"); return -1; }
    static cl_node *ns[CL_SLOTS];
    memset(ns, 0, sizeof ns);
    int covered = 0;
    for (long long i = 0; i < nent; i++) {
        long long ne, lo, hi, nf;
        if (rd_head(&x, &t, &ne) || t != '*' || ne < 3) goto bad;
        if (rd_head(&x, &t, &lo) || t != ':' || rd_head(&x, &t, &hi) || t != ':') goto bad;
        if (rd_head(&x, &t, &nf) || t != '*' || nf < 2) goto bad;
        const char *ip;
        size_t iplen;
        long long port;
        if (rd_str(&x, &ip, &iplen) || rd_head(&x, &t, &port) || t != ':') goto bad;
        for (long long f = 2; f < nf; f++) if (rd_skip(&x)) goto bad;
        for (long long f = 3; f < ne; f++) if (rd_skip(&x)) goto bad;    /* replicas */
        if (lo < 0 || hi >= CL_SLOTS || lo > hi) goto bad;
        char name[300];
        if (iplen == 0 || (iplen == 1 && ip[0] == '?')) {      /* unknown IP: the host we asked */
            const char *h = b->refresh_node ? b->refresh_node->addr.name : "127.0.0.1:0";
            const char *colon = strrchr(h, ':');
            snprintf(name, sizeof name, "%.*s:%lld", (int)(colon ? colon - h : 0), h, port);
        } else if (memchr(ip, ':', iplen)) {
            snprintf(name, sizeof name, "[%.*s]:%lld", (int)iplen, ip, port);
        } else {
            snprintf(name, sizeof name, "%.*s:%lld", (int)iplen, ip, port);
        }
        cl_node *n = node_get(b, name, 1, err, errlen);
        if (!n) return -1;
        for (long long s = lo; s <= hi; s++) { if (!ns[s]) covered++; ns[s] = n; }
    }
    if (covered == 0) { snprintf(err, errlen, "CLUSTER SLOTS: no slot is served (cluster not created yet?)"); return -1; }
    for (int s = 0; s < CL_SLOTS; s++) set_slot(b, s, ns[s]);
    masters_rebuild(b);
    return 0;
bad:
    snprintf(err, errlen, "CLUSTER SLOTS: unexpected reply shape");
    return -1;
}

static void wake_parked(cl_backend *b, int all_waiting_for_map);
static void deferred_run(cl_backend *b);

static void deferred_fail(cl_backend *b, int64_t now);

/* No slot map could be had: the requests waiting for one fail now. */
static void fail_parked(cl_backend *b) {
    deferred_fail(b, 0);
    cl_part *list = b->parked;
    b->parked = b->parked_tail = NULL;
    while (list) {
        cl_part *pt = list;
        list = pt->park_next;
        part_fail(pt, "-ERR backend unavailable (redis-cluster: no slot map: %s)", b->maperr);
    }
}

/* The channel relay follows the map: PUBLISH reaches every node of a
 * cluster, so any live node serves it, but the node it started at may be
 * gone for good (a master killed, its replica promoted). When a new map
 * comes while the relay is not up and its node is no longer a master, it
 * moves to the map's first master; the host subscribes every channel and
 * pattern again once it is up (fd_pubsub_resync). Messages published while
 * no relay was up are not seen, as by a Redis client that reconnects.
 * A node with shard relays that is no longer a master loses them, and the
 * host subscribes everything again (fd_pubsub_resync): each shard channel
 * then goes to its slot's new master. (A slot moved between two live
 * masters by resharding: Redis 7.0 itself tells the subscribers
 * `sunsubscribe`; not followed here.) */
static void ks_relays(cl_backend *b);

static void relay_follow(cl_backend *b) {
    if (!b->nmasters) return;
    /* the channel relay connects with the first map, not at the first
     * SUBSCRIBE (see storage/redis.c rb_open: a confirmation is sent at once) */
    if (!b->relay && (b->relay = calloc(1, sizeof *b->relay)))
        rc_relay_init(b->relay, &b->sh, &b->masters[0]->addr, b->fb);
    /* shard relays of nodes that are masters no more: dropped, and every
     * subscription is made again, each shard channel at its slot's master */
    int resync = 0;
    for (cl_node *n = b->nodes; n; n = n->next)
        if (n->srelay && n->master_idx < 0) {
            fd_log(FD_LOG_NOTICE, "redis-cluster: %s is not a master any more: its shard channels move", n->addr.name);
            rc_conn_destroy(n->srelay);
            free(n->srelay);
            n->srelay = NULL;
            resync = 1;
        }
    if (b->relay && b->relay->state != RC_UP) {
        int master = 0;
        for (int i = 0; i < b->nmasters && !master; i++) master = b->relay->addr == &b->masters[i]->addr;
        if (!master) {                         /* (a master comes back: it stays) */
            rc_addr *to = &b->masters[0]->addr;
            fd_log(FD_LOG_NOTICE, "redis-cluster: pub/sub relay moves from %s (not a master any more) to %s",
                   b->relay->addr->name, to->name);
            rc_conn_destroy(b->relay);
            memset(b->relay, 0, sizeof *b->relay);
            rc_relay_init(b->relay, &b->sh, to, b->fb);   /* resyncs once up */
        }
    }
    ks_relays(b);                             /* one keyspace relay per master (and the filter) */
    if (resync) fd_pubsub_resync(b->fb);
}

static void on_slots(void *ctx, const char *d, size_t n, int local) {
    cl_backend *b = ctx;
    b->refreshing = 0;
    if (b->closing) return;
    char err[300];
    const char *from = b->refresh_node ? b->refresh_node->addr.name : "?";
    if (local || is_error(d, n)) {
        /* local: "-ERR backend unavailable (redis-cluster ADDR: reason)": keep "reason" */
        const char *t = d + 1, *e = d + (n > 2 ? n - 2 : 0);
        if (local) {
            const char *c = memchr(t, ':', (size_t)(e - t));
            if (c) c = memchr(c + 1, ':', (size_t)(e - c - 1));
            if (c && c + 2 < e) t = c + 2;
            if (e > t && e[-1] == ')') e--;
        }
        snprintf(err, sizeof err, "%.*s", (int)(e - t > 150 ? 150 : e - t), t);
        goto failed;
    }
    if (apply_slots(b, d, n, err, sizeof err)) goto failed;
    if (!b->map_ok || b->maperr[0])
        fd_log(FD_LOG_NOTICE, "redis-cluster: slot map from %s: %d masters", from, b->nmasters);
    b->map_ok = 1;
    b->maperr[0] = '\0';
    b->need_refresh = 0;
    b->last_map = fd_mono_ms();
    wake_parked(b, 1);
    deferred_run(b);
    relay_follow(b);
    return;
failed:
    b->refresh_failures++;
    b->refresh_rr++;
    b->need_refresh = 1;
    if (strcmp(b->maperr, err) != 0)
        fd_log(FD_LOG_WARNING, "redis-cluster: slot map refresh from %s failed: %s", from, err);
    snprintf(b->maperr, sizeof b->maperr, "%s: %s", from, err);
    if (!b->map_ok) fail_parked(b);     /* no map to wait for: say so now, not at the deadline */
}

/* Ask one node (masters first, then seeds; an up connection preferred) for
 * the slot map. */
static void refresh_start(cl_backend *b) {
    if (b->refreshing || b->closing) return;
    b->last_refresh = fd_mono_ms();
    int cnt = 0;
    for (cl_node *n = b->nodes; n; n = n->next) cnt++;
    if (!cnt) return;
    cl_node *pick = NULL;
    for (int pass = 0; pass < 3 && !pick; pass++) {
        for (int i = 0; i < cnt && !pick; i++) {
            int want = (b->refresh_rr + i) % cnt;
            cl_node *n = b->nodes;
            for (int j = 0; j < want; j++) n = n->next;
            if (pass == 0 && !(n->nslots && node_up(n))) continue;
            if (pass == 1 && !node_up(n)) continue;
            if (pass == 2 && n->conns[0].state == RC_DOWN) continue;
            pick = n;
        }
    }
    if (!pick) {
        b->need_refresh = 1;
        if (!b->maperr[0]) snprintf(b->maperr, sizeof b->maperr, "no node reachable");
        return;
    }
    rc_conn *c = &pick->conns[0];
    for (int i = 0; i < pick->n; i++) if (pick->conns[i].state == RC_UP) { c = &pick->conns[i]; break; }
    static const resp_arg cs[2] = { { "CLUSTER", 7 }, { "SLOTS", 5 } };
    if (rc_send(c, 0, NULL, 0, 2, cs, on_slots, b)) { b->need_refresh = 1; return; }
    b->refreshing = 1;
    b->refresh_node = pick;
    b->refreshes++;
}

static void wake_parked(cl_backend *b, int map_now) {
    int64_t now = fd_mono_ms();
    cl_part *list = b->parked;
    b->parked = b->parked_tail = NULL;
    while (list) {
        cl_part *pt = list;
        list = pt->park_next;
        pt->park_next = NULL;
        if (b->map_ok && pt->wake <= now) {
            part_send(pt);
        } else if (pt->deadline <= now) {
            if (!b->map_ok)
                part_fail(pt, "-ERR backend unavailable (redis-cluster: no slot map%s%s)",
                          b->maperr[0] ? ": " : " yet", b->maperr);
            else
                part_fail(pt, "-ERR backend unavailable (redis-cluster: slot %d still migrating after %lld ms)",
                          pt->slot, (long long)b->sh.timeout_ms);
        } else {
            park(pt, pt->wake);
        }
    }
    (void)map_now;
}

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents) {
    cl_backend *b = w->data;
    int64_t now = fd_mono_ms();
    if (b->parked) wake_parked(b, 0);
    if (b->deferred) deferred_fail(b, now);
    if (!b->refreshing) {
        int down = 0;
        for (int i = 0; i < b->nmasters; i++) if (!node_up(b->masters[i])) down = 1;
        int64_t since = now - b->last_refresh;
        if ((b->need_refresh && since >= CL_REFRESH_MIN_MS) || (down && since >= CL_REFRESH_DOWN_MS) ||
            since >= CL_REFRESH_PERIOD_MS)
            refresh_start(b);
    }
}

/* ------------------------------------------------------------ submit */

static char *encode_cmd(int argc, const resp_arg *argv, size_t *len) {
    size_t n = 24;
    for (int i = 0; i < argc; i++) n += argv[i].len + 32;
    char *buf = malloc(n), *p = buf;
    if (!buf) return NULL;
    p += sprintf(p, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++) {
        p += sprintf(p, "$%zu\r\n", argv[i].len);
        memcpy(p, argv[i].ptr, argv[i].len);
        p += argv[i].len;
        *p++ = '\r';
        *p++ = '\n';
    }
    *len = (size_t)(p - buf);
    return buf;
}


/* The key positions of a command: up to max of them into pos; the count.
 * A command of the table has them in its row (fd_command_keys); one the
 * table does not know (passed through) by a few known shapes, else the
 * first argument. */
static int key_positions(const fd_request *r, int *pos, int max) {
    const resp_arg *a = r->argv;
    int argc = r->argc, n = 0;
    int numkeys_at = 0, first = 0;
    if (r->cmd) return fd_command_keys(r->cmd, argc, a, pos, max);
    if (resp_arg_is(&a[0], "zinter") || resp_arg_is(&a[0], "zunion") ||
        resp_arg_is(&a[0], "zdiff") || resp_arg_is(&a[0], "zintercard") || resp_arg_is(&a[0], "lmpop") || resp_arg_is(&a[0], "zmpop"))
        numkeys_at = 1;
    else if (resp_arg_is(&a[0], "eval") || resp_arg_is(&a[0], "evalsha") || resp_arg_is(&a[0], "eval_ro") ||
             resp_arg_is(&a[0], "evalsha_ro") || resp_arg_is(&a[0], "fcall") || resp_arg_is(&a[0], "fcall_ro"))
        numkeys_at = 2;
    else if (resp_arg_is(&a[0], "zunionstore") || resp_arg_is(&a[0], "zinterstore") || resp_arg_is(&a[0], "zdiffstore")) {
        if (argc > 1 && max > 0) pos[n++] = 1;
        numkeys_at = 2;
    }
    if (numkeys_at) {
        if (argc <= numkeys_at) return n;
        long long k = strtoll(a[numkeys_at].ptr, NULL, 10);
        for (long long i = 0; i < k && numkeys_at + 1 + i < argc && n < max; i++) pos[n++] = (int)(numkeys_at + 1 + i);
        return n;
    }
    /* not in the table: a few known shapes, else the first argument */
    if (resp_arg_is(&a[0], "xread") || resp_arg_is(&a[0], "xreadgroup")) {
        for (int i = 1; i < argc; i++)
            if (resp_arg_is(&a[i], "streams")) { first = i + 1; break; }
        if (first && first < argc && max > 0) pos[n++] = first;
        return n;
    }
    if (resp_arg_is(&a[0], "bitop")) first = 2;
    else if (resp_arg_is(&a[0], "object") || resp_arg_is(&a[0], "memory") || resp_arg_is(&a[0], "xinfo") ||
             resp_arg_is(&a[0], "xgroup")) first = 2;
    else first = 1;
    if (first < argc && max > 0) pos[n++] = first;
    return n;
}

static cl_req *req_alloc(cl_backend *b, fd_pending *p, int merge, int proto, uint64_t client_id, int nparts,
                         size_t inline_bytes) {
    cl_req *q = calloc(1, sizeof *q + (size_t)nparts * sizeof(cl_part) + inline_bytes);
    if (!q) return NULL;
    q->b = b;
    q->p = p;
    q->merge = merge;
    q->proto = proto;
    q->client_id = client_id;
    q->nparts = q->left = nparts;
    q->parts = (cl_part *)(q + 1);
    for (int i = 0; i < nparts; i++) { q->parts[i].r = q; q->parts[i].slot = -1; }
    return q;
}

static cl_req *req_new(cl_backend *b, fd_request *r, int merge, int nparts, size_t inline_bytes) {
    return req_alloc(b, r->pending, merge, r->out->proto == 3 ? 3 : 2, r->client_id, nparts, inline_bytes);
}


/* One command to one slot, bytes as received. */
static int submit_single(cl_backend *b, fd_request *r, int slot, cl_node *node) {
    size_t len = r->raw ? r->rawlen : 0;
    cl_req *q = req_new(b, r, M_SINGLE, 1, len);
    if (!q) return FD_E_NOMEM;
    cl_part *pt = &q->parts[0];
    if (r->raw) {
        pt->cmd = (char *)(q->parts + 1);
        memcpy(pt->cmd, r->raw, len);
        pt->cmdlen = len;
    } else if (!(pt->cmd = encode_cmd(r->argc, r->argv, &pt->cmdlen))) {
        free(q);
        return FD_E_NOMEM;
    }
    pt->slot = slot;
    pt->node = node;
    b->forwarded++;
    part_send(pt);
    return FD_PENDING;
}

/* MGET, DEL, UNLINK, EXISTS, TOUCH (step 1) and MSET (step 2) over several
 * slots: one command per slot, merged in the client's order. */
static int submit_split(cl_backend *b, fd_request *r, int step, int merge) {
    int nkeys = (r->argc - 1) / step;
    int *slot = malloc((size_t)nkeys * sizeof *slot);
    int *order = malloc((size_t)nkeys * sizeof *order);
    if (!slot || !order) { free(slot); free(order); return FD_E_NOMEM; }
    int ngroups = 0;
    int *gsize = calloc((size_t)nkeys, sizeof *gsize), *gslot = calloc((size_t)nkeys, sizeof *gslot);
    if (!gsize || !gslot) { free(slot); free(order); free(gsize); free(gslot); return FD_E_NOMEM; }
    for (int k = 0; k < nkeys; k++) {
        const resp_arg *key = &r->argv[1 + k * step];
        int s = key_slot(key->ptr, key->len);
        slot[k] = s;
        if (b->slot_group[s] < 0) { b->slot_group[s] = ngroups; gslot[ngroups++] = s; }
        gsize[b->slot_group[s]]++;
    }
    cl_req *q = req_new(b, r, merge, ngroups, 0);
    int rc = FD_E_NOMEM;
    if (!q) goto out;
    /* keys of each group, in the client's order */
    int *start = calloc((size_t)ngroups, sizeof *start);
    if (!start) { free(q); q = NULL; goto out; }
    for (int g = 1; g < ngroups; g++) start[g] = start[g - 1] + gsize[g - 1];
    int *fill = calloc((size_t)ngroups, sizeof *fill);
    if (!fill) { free(start); free(q); q = NULL; goto out; }
    for (int k = 0; k < nkeys; k++) {
        int g = b->slot_group[slot[k]];
        order[start[g] + fill[g]++] = k;
    }
    q->order = order;
    q->nkeys = nkeys;
    order = NULL;
    int ok = 1;
    for (int g = 0; g < ngroups && ok; g++) {
        cl_part *pt = &q->parts[g];
        pt->slot = gslot[g];
        pt->k0 = start[g];
        pt->nk = gsize[g];
        int argc = 1 + gsize[g] * step;
        resp_arg *av = malloc((size_t)argc * sizeof *av);
        if (!av) { ok = 0; break; }
        av[0] = r->argv[0];
        for (int j = 0; j < gsize[g]; j++) {
            int k = q->order[start[g] + j];
            for (int t = 0; t < step; t++) av[1 + j * step + t] = r->argv[1 + k * step + t];
        }
        pt->cmd = encode_cmd(argc, av, &pt->cmdlen);
        free(av);
        if (!pt->cmd) ok = 0;
    }
    free(start);
    free(fill);
    if (!ok) { req_free(q); q = NULL; goto out; }
    b->forwarded++;
    b->split++;
    rc = FD_PENDING;
out:
    for (int k = 0; k < nkeys; k++) b->slot_group[slot[k]] = -1;
    free(slot);
    free(order);
    free(gsize);
    free(gslot);
    if (q) {
        int n = q->nparts;
        for (int g = 0; g < n; g++) part_send(&q->parts[g]);   /* q may be freed by the last */
    }
    return rc;
}

/* Keyless commands over every master. */
/* The command (cmd, copied) to every master of the map. */
static int fanout_start(cl_backend *b, fd_pending *p, int merge, int proto, uint64_t client_id,
                        const char *cmd, size_t cmdlen) {
    int n = b->nmasters;
    cl_req *q = req_alloc(b, p, merge, proto, client_id, n, 0);
    if (!q) return FD_E_NOMEM;
    for (int i = 0; i < n; i++) {
        cl_part *pt = &q->parts[i];
        pt->node = b->masters[i];
        if (!(pt->cmd = malloc(cmdlen))) { req_free(q); return FD_E_NOMEM; }
        memcpy(pt->cmd, cmd, cmdlen);
        pt->cmdlen = cmdlen;
    }
    b->forwarded++;
    b->fanout++;
    for (int i = 0; i < n; i++) part_send(&q->parts[i]);   /* q may be freed by the last */
    return FD_PENDING;
}

/* The first map is here: the fan-outs that waited for it go. */
static void deferred_run(cl_backend *b) {
    cl_deferred *d = b->deferred;
    b->deferred = b->deferred_tail = NULL;
    while (d) {
        cl_deferred *next = d->next;
        if (!b->nmasters || fanout_start(b, d->p, d->merge, d->proto, d->client_id, d->cmd, d->cmdlen) != FD_PENDING) {
            static const char oom[] = "-ERR backend unavailable (redis-cluster: no master to send to, or out of memory)\r\n";
            b->failed++;
            fd_pending_reply(d->p, oom, sizeof oom - 1);
        }
        free(d->cmd);
        free(d);
        d = next;
    }
}

/* Fan-outs still waiting for a map at `now` (0: all of them) fail. */
static void deferred_fail(cl_backend *b, int64_t now) {
    cl_deferred **pp = &b->deferred;
    b->deferred_tail = NULL;
    while (*pp) {
        cl_deferred *d = *pp;
        if (now && d->deadline > now) {
            b->deferred_tail = d;
            pp = &d->next;
            continue;
        }
        *pp = d->next;
        char msg[800];
        int n = snprintf(msg, sizeof msg, "-ERR backend unavailable (redis-cluster: no slot map%s%s)\r\n",
                         b->maperr[0] ? ": " : " yet", b->maperr);
        if (n < 0 || (size_t)n >= sizeof msg) n = (int)strlen(strcpy(msg, "-ERR backend unavailable (redis-cluster: no slot map)\r\n"));
        b->failed++;
        fd_pending_reply(d->p, msg, (size_t)n);
        free(d->cmd);
        free(d);
    }
}

static int submit_fanout(cl_backend *b, fd_request *r, int merge) {
    size_t len;
    char *cmd = encode_cmd(r->argc, r->argv, &len);
    if (!cmd) return FD_E_NOMEM;
    if (b->map_ok && b->nmasters) {
        int rc = fanout_start(b, r->pending, merge, r->out->proto == 3 ? 3 : 2, r->client_id, cmd, len);
        free(cmd);
        return rc;
    }
    if (!any_reachable(b)) {
        free(cmd);
        b->failed++;
        resp_add_errorf(r->out, "ERR backend unavailable (redis-cluster: no slot map%s%s)",
                        b->maperr[0] ? ": " : " yet", b->maperr);
        return FD_OK;
    }
    /* no map yet (just started): wait for it, up to backend-timeout */
    cl_deferred *d = calloc(1, sizeof *d);
    if (!d) { free(cmd); return FD_E_NOMEM; }
    d->p = r->pending;
    d->merge = merge;
    d->proto = r->out->proto == 3 ? 3 : 2;
    d->client_id = r->client_id;
    d->cmd = cmd;
    d->cmdlen = len;
    d->deadline = fd_mono_ms() + b->sh.timeout_ms;
    if (b->deferred_tail) b->deferred_tail->next = d;
    else b->deferred = d;
    b->deferred_tail = d;
    want_refresh(b);
    return FD_PENDING;
}

/* SCAN cursor [options]: the cursor names a master and its own cursor. */
static int submit_scan(cl_backend *b, fd_request *r) {
    if (!b->map_ok || !b->nmasters) {
        b->failed++;
        resp_add_errorf(r->out, "ERR backend unavailable (redis-cluster: no slot map%s%s)",
                        b->maperr[0] ? ": " : " yet", b->maperr);
        return FD_OK;
    }
    /* Redis 7.0's parseScanCursorOrReply: strtoul, no leading space, no
     * trailing bytes, no overflow ("-1" and "" are cursors there too) */
    char tmp[32];
    size_t cl = strnlen(r->argv[1].ptr, r->argv[1].len);    /* a C string there */
    char *end;
    if (cl >= sizeof tmp) goto invalid;
    memcpy(tmp, r->argv[1].ptr, cl);
    tmp[cl] = '\0';
    if (isspace((unsigned char)tmp[0])) goto invalid;
    errno = 0;
    unsigned long long c = strtoull(tmp, &end, 10);
    if (*end || errno == ERANGE) goto invalid;
    /* the options, as Redis checks them before answering (a cursor past the
     * map's masters is answered here, without a node to check them) */
    long long count;
    const resp_arg *pat, *type;
    int so = fd_parse_scan_opts(r->argv, r->argc, 2, &count, &pat, &type);
    if (so != FD_OK) {
        resp_add_error(r->out, fd_strerror(so));
        return FD_OK;
    }
    int idx = (int)(c & ((1u << CL_SCAN_BITS) - 1));
    unsigned long long nc = c >> CL_SCAN_BITS;
    if (idx >= b->nmasters) {       /* a cursor from an older, larger map: done */
        resp_add_array(r->out, 2);
        resp_add_bulk(r->out, "0", 1);
        resp_add_array(r->out, 0);
        return FD_OK;
    }
    cl_req *q = req_new(b, r, M_SCAN, 1, 0);
    if (!q) return FD_E_NOMEM;
    q->scan_idx = idx;
    char num[32];
    int nl = snprintf(num, sizeof num, "%llu", nc);
    resp_arg *av = malloc((size_t)r->argc * sizeof *av);
    if (!av) { free(q); return FD_E_NOMEM; }
    memcpy(av, r->argv, (size_t)r->argc * sizeof *av);
    av[1].ptr = num;
    av[1].len = (size_t)nl;
    cl_part *pt = &q->parts[0];
    pt->node = b->masters[idx];
    pt->cmd = encode_cmd(r->argc, av, &pt->cmdlen);
    free(av);
    if (!pt->cmd) { free(q); return FD_E_NOMEM; }
    /* where the cursor argument starts ("*N\r\n$L\r\nSCAN\r\n" then it):
     * scan_cursor_zero rewrites it for the next master */
    {
        const char *p = strchr(pt->cmd, '\n') + 1;        /* after *N */
        p = strchr(p, '\n') + 1;                          /* after $L */
        p += r->argv[0].len + 2;                          /* after the name */
        pt->k0 = (int)(p - pt->cmd);
    }
    b->forwarded++;
    part_send(pt);
    return FD_PENDING;
invalid:
    resp_add_error(r->out, "ERR invalid cursor");
    return FD_OK;
}

static int cl_route(cl_backend *b, fd_request *r, const int *pos, int nk, int split_step, int merge);

static int cl_submit(fd_backend *fb, fd_request *r) {
    cl_backend *b = fb->state;
    const resp_arg *a = r->argv;
    const char *why = rc_refusal(r->argc, r->argv);
    if (why) {
        char name[64];
        size_t l = a[0].len < sizeof name - 1 ? a[0].len : sizeof name - 1;
        for (size_t i = 0; i < l; i++) {
            char ch = a[0].ptr[i];
            name[i] = (char)((ch >= 'A' && ch <= 'Z') ? ch + 32 : ch);
        }
        name[l] = '\0';
        b->refused++;
        fd_reply_unsupported(r->out, name, "redis-cluster", why);
        return FD_OK;
    }
    if (r->out->proto == 3 && b->sh.no_resp3) {
        resp_add_errorf(r->out, "ERR RESP3 is not available through frontdoor's redis-cluster backend (%s)",
                        b->sh.no_resp3);
        return FD_OK;
    }
    if (r->route_key)       /* a part of a MULTI/EXEC block: where its keys live */
        return submit_single(b, r, key_slot(r->route_key->ptr, r->route_key->len), NULL);
    /* SCRIPT LOAD/FLUSH reach every master: an EVALSHA goes to its keys' one.
     * FUNCTION LOAD/DELETE/FLUSH/RESTORE likewise (what Redis Cluster clients
     * do: every master holds the libraries; an FCALL goes to its keys' one);
     * LIST/DUMP/STATS/KILL ask one master. */
    if (r->cmd && r->cmd->id == FD_CMD_script && r->argc >= 2 &&
        (resp_arg_is(&a[1], "load") || resp_arg_is(&a[1], "flush")))
        return submit_fanout(b, r, M_FLUSH);
    if (r->cmd && r->cmd->id == FD_CMD_function && r->argc >= 2 &&
        (resp_arg_is(&a[1], "load") || resp_arg_is(&a[1], "delete") || resp_arg_is(&a[1], "flush") ||
         resp_arg_is(&a[1], "restore")))
        return submit_fanout(b, r, M_FLUSH);
    int split_step = 0, merge = M_SUM;
    switch (r->cmd ? r->cmd->cluster : FD_CL_KEYED) {
    case FD_CL_FAN_SUM:    return submit_fanout(b, r, M_SUM);
    case FD_CL_FAN_FLUSH:  return submit_fanout(b, r, M_FLUSH);
    case FD_CL_FAN_KEYS:   return submit_fanout(b, r, M_KEYS);
    case FD_CL_FAN_RANDOM: return submit_fanout(b, r, M_RANDOM);
    case FD_CL_SCAN:       return submit_scan(b, r);
    case FD_CL_SPLIT_MGET: split_step = r->cmd->key_step, merge = M_MGET; break;
    case FD_CL_SPLIT_OK:   split_step = r->cmd->key_step, merge = M_OK; break;
    case FD_CL_SPLIT_SUM:  split_step = r->cmd->key_step; break;
    default: break;
    }
    int pos_small[64], *pos = pos_small;
    if (r->argc > 64 && !(pos = malloc((size_t)r->argc * sizeof *pos))) return FD_E_NOMEM;
    int nk = key_positions(r, pos, r->argc > 64 ? r->argc : 64);
    int rc = cl_route(b, r, pos, nk, split_step, merge);
    if (pos != pos_small) free(pos);
    return rc;
}

/* cl_submit's routing once the keys are known (pos[0..nk)). */
static int cl_route(cl_backend *b, fd_request *r, const int *pos, int nk, int split_step, int merge) {
    const resp_arg *a = r->argv;
    int slot = -1, cross = 0;
    if (split_step) {
        if ((r->argc - 1) % split_step) {   /* MSET k v k: a single server's error, not the cluster's CROSSSLOT */
            resp_add_errorf(r->out, "ERR wrong number of arguments for '%s' command", r->cmd->name);
            return FD_OK;
        }
        slot = key_slot(a[1].ptr, a[1].len);
        for (int i = 1 + split_step; i < r->argc; i += split_step)
            if (key_slot(a[i].ptr, a[i].len) != slot) return submit_split(b, r, split_step, merge);
        return submit_single(b, r, slot, NULL);
    }
    if (nk > 0) {
        slot = key_slot(a[pos[0]].ptr, a[pos[0]].len);
        if (r->cmd) {       /* table commands: CROSSSLOT here (Redis checks the others itself) */
            for (int i = 1; i < nk; i++)
                if (key_slot(a[pos[i]].ptr, a[pos[i]].len) != slot) cross = 1;
            if (cross) {
                b->crossslot++;
                resp_add_error(r->out, "CROSSSLOT Keys in request don't hash to the same slot");
                return FD_OK;
            }
        }
        return submit_single(b, r, slot, NULL);
    }
    /* no key: any master (the client's, so that its keyless commands keep their order) */
    if (b->map_ok && b->nmasters) return submit_single(b, r, -1, b->masters[r->client_id % (uint64_t)b->nmasters]);
    return submit_single(b, r, 0, NULL);    /* waits for the map with slot 0's */
}

/* ------------------------------------------------------------ the ops */

static void cl_close(fd_backend *fb);

static int cl_open(fd_backend *fb, const fd_backend_config *cfg, char *err, size_t errlen) {
    static const fd_redis_settings none;
    const fd_redis_settings *rs = cfg->options ? cfg->options : &none;   /* redis_settings.h */
    if (!cfg->loop) { snprintf(err, errlen, "no event loop"); return FD_E_INTERNAL; }
    if (!rs->cluster_seeds || !rs->cluster_seeds[0]) {
        snprintf(err, errlen, "backend redis-cluster needs redis-cluster-seeds host:port[,host:port...]");
        return FD_E_INTERNAL;
    }
    crc16_init();
    cl_backend *b = calloc(1, sizeof *b);
    if (!b) { snprintf(err, errlen, "out of memory"); return FD_E_NOMEM; }
    for (int s = 0; s < CL_SLOTS; s++) b->slot_group[s] = -1;
    b->sh.loop = cfg->loop;
    b->sh.label = "redis-cluster";
    b->sh.password = rs->password && rs->password[0] ? strdup(rs->password) : NULL;
    b->sh.user = rs->user && rs->user[0] ? strdup(rs->user) : NULL;
    b->sh.db = 0;       /* a cluster has database 0 only */
    b->sh.timeout_ms = cfg->backend_timeout_ms > 0 ? cfg->backend_timeout_ms : 1000;
    b->pool = rs->pool_size > 0 ? (int)rs->pool_size : 4;
    b->sh.blocking_max = (int)rs->blocking_pool_size;
    b->fb = fb;
    b->rng = 0x9e3779b97f4a7c15ULL ^ ((uint64_t)time(NULL) << 32) ^ (uint64_t)fd_mono_ms() ^ ((uint64_t)(uintptr_t)b << 16);
    if (!b->rng) b->rng = 1;
    b->seeds = strdup(rs->cluster_seeds);
    fb->state = b;
    if (!b->seeds) { cl_close(fb); snprintf(err, errlen, "out of memory"); return FD_E_NOMEM; }
    rc_shared_init(&b->sh);
    /* TLS to every node (a cluster with tls-cluster yes announces its TLS
     * ports: MOVED/ASK and CLUSTER SLOTS name them) */
    if (rs->tls && rc_shared_tls(&b->sh, rs->tls_ca_cert_file, rs->tls_cert_file,
                                        rs->tls_key_file, rs->tls_sni, err, errlen)) {
        cl_close(fb);
        return FD_E_INTERNAL;
    }
    /* every seed is resolved now (host names allowed: this is start-up) */
    char *list = strdup(b->seeds), *save = NULL;
    if (!list) { cl_close(fb); snprintf(err, errlen, "out of memory"); return FD_E_NOMEM; }
    for (char *tok = strtok_r(list, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        char e[300];
        cl_node *n = node_get(b, tok, 0, e, sizeof e);
        if (!n) {
            snprintf(err, errlen, "redis-cluster-seeds: %s", e);
            free(list);
            cl_close(fb);
            return FD_E_INTERNAL;
        }
        n->seed = 1;
    }
    free(list);
    if (!b->nodes) { cl_close(fb); snprintf(err, errlen, "redis-cluster-seeds: no address in '%s'", rs->cluster_seeds); return FD_E_INTERNAL; }
    ev_timer_init(&b->timer, on_timer, CL_TICK_MS / 1000.0, CL_TICK_MS / 1000.0);
    b->timer.data = b;
    ev_timer_start(b->sh.loop, &b->timer);
    refresh_start(b);       /* queued behind the seed's connect */
    return FD_OK;
}

static void cl_close(fd_backend *fb) {
    cl_backend *b = fb->state;
    if (!b) return;
    b->closing = 1;
    ev_timer_stop(b->sh.loop, &b->timer);
    while (b->parked) {
        cl_part *pt = b->parked;
        b->parked = pt->park_next;
        if (!b->parked) b->parked_tail = NULL;
        part_fail(pt, "-ERR backend unavailable (redis-cluster: shutting down)");
    }
    deferred_fail(b, 0);
    if (b->relay) { rc_conn_destroy(b->relay); free(b->relay); b->relay = NULL; }
    rc_shared_close(&b->sh);    /* lent connections first: they point into the nodes */
    while (b->nodes) {
        cl_node *n = b->nodes;
        b->nodes = n->next;
        node_free(n);
    }
    free(b->masters);
    free(b->sh.password);
    free(b->sh.user);
    free(b->seeds);
    free(b);
    fb->state = NULL;
}

static int cl_end_turn(fd_backend *fb) {
    cl_backend *b = fb->state;
    rc_flush(&b->sh);
    return FD_OK;
}

static void cl_cron(fd_backend *fb, int64_t now_ms) {
    cl_backend *b = fb->state;
    nodes_gc(b);
}

static void cl_info(fd_backend *fb, resp_out *o) {
    cl_backend *b = fb->state;
    char line[1024];
    int covered = 0, nodes = 0, up = 0;
    uint64_t inflight = 0;
    for (int s = 0; s < CL_SLOTS; s++) if (b->slots[s]) covered++;
    for (cl_node *n = b->nodes; n; n = n->next) {
        nodes++;
        inflight += node_inflight(n);
    }
    for (int i = 0; i < b->nmasters; i++) if (node_up(b->masters[i])) up++;
    int k = snprintf(line, sizeof line,
                     "redis_cluster_seeds:%s\r\n"
                     "redis_cluster_map:%s\r\n"
                     "redis_cluster_map_error:%s\r\n"
                     "redis_cluster_masters:%d\r\n"
                     "redis_cluster_masters_up:%d\r\n"
                     "redis_cluster_nodes_connected_to:%d\r\n"
                     "redis_cluster_slots_covered:%d\r\n"
                     "redis_cluster_pool_size:%d\r\n"
                     "redis_cluster_inflight:%llu\r\n"
                     "redis_cluster_forwarded:%llu\r\n"
                     "redis_cluster_split:%llu\r\n"
                     "redis_cluster_fanout:%llu\r\n"
                     "redis_cluster_moved:%llu\r\n"
                     "redis_cluster_ask:%llu\r\n"
                     "redis_cluster_tryagain:%llu\r\n"
                     "redis_cluster_crossslot:%llu\r\n"
                     "redis_cluster_refused:%llu\r\n"
                     "redis_cluster_failed:%llu\r\n"
                     "redis_cluster_refreshes:%llu\r\n"
                     "redis_cluster_refresh_failures:%llu\r\n"
                     "redis_cluster_timeout_ms:%lld\r\n",
                     b->seeds, b->map_ok ? "ok" : "none", b->maperr, b->nmasters, up, nodes, covered, b->pool,
                     (unsigned long long)inflight, (unsigned long long)b->forwarded, (unsigned long long)b->split,
                     (unsigned long long)b->fanout, (unsigned long long)b->moved, (unsigned long long)b->asked,
                     (unsigned long long)b->tryagain, (unsigned long long)b->crossslot,
                     (unsigned long long)b->refused, (unsigned long long)b->failed,
                     (unsigned long long)b->refreshes, (unsigned long long)b->refresh_failures,
                     (long long)b->sh.timeout_ms);
    if (k > 0) resp_out_raw(o, line, (size_t)k < sizeof line ? (size_t)k : sizeof line - 1);
    for (int i = 0; i < b->nmasters; i++) {
        const cl_node *n = b->masters[i];
        int cu = 0;
        uint64_t failed = 0, connects = 0, timeouts = 0;
        for (int j = 0; j < n->n; j++) {
            if (n->conns[j].state == RC_UP) cu++;
            failed += n->conns[j].failed;
            connects += n->conns[j].connects;
            timeouts += n->conns[j].timeouts;
        }
        k = snprintf(line, sizeof line,
                     "redis_cluster_master%d:addr=%s,slots=%d,connections_up=%d,inflight=%llu,forwarded=%llu,"
                     "moved_to=%llu,ask_to=%llu,failed=%llu,connects=%llu,timeouts=%llu\r\n",
                     i, n->addr.name, n->nslots, cu, (unsigned long long)node_inflight(n),
                     (unsigned long long)n->forwarded, (unsigned long long)n->moved, (unsigned long long)n->asked,
                     (unsigned long long)failed, (unsigned long long)connects, (unsigned long long)timeouts);
        if (k > 0) resp_out_raw(o, line, (size_t)k < sizeof line ? (size_t)k : sizeof line - 1);
    }
    rc_blocking_info(&b->sh, o);
    k = snprintf(line, sizeof line, "redis-cluster_backend_pubsub_relay:%s%s%s\r\n",
                 !b->relay ? "none" : b->relay->state == RC_UP ? "up" : "down",
                 b->relay ? "," : "", b->relay ? b->relay->addr->name : "");
    if (k > 0) resp_out_raw(o, line, (size_t)k);
}

/* Blocking commands: a connection of their own to the master of their
 * keys' slot (all keys in one slot, else -CROSSSLOT). A redirection met
 * while it waits is passed on as Redis sends it. */
static int cl_submit_blocking(fd_backend *fb, fd_request *r) {
    cl_backend *b = fb->state;
    if (r->out->proto == 3 && b->sh.no_resp3) {
        resp_add_errorf(r->out, "ERR RESP3 is not available through frontdoor's redis-cluster backend (%s)", b->sh.no_resp3);
        return FD_OK;
    }
    int pos[64];
    int nk = r->cmd ? fd_command_keys(r->cmd, r->argc, r->argv, pos, 64) : 0;
    int slot = nk ? key_slot(r->argv[pos[0]].ptr, r->argv[pos[0]].len) : 0;
    for (int i = 1; i < nk; i++)
        if (key_slot(r->argv[pos[i]].ptr, r->argv[pos[i]].len) != slot) {
            b->crossslot++;
            resp_add_error(r->out, "CROSSSLOT Keys in request don't hash to the same slot");
            return FD_OK;
        }
    cl_node *n = b->map_ok ? b->slots[slot] : NULL;
    if (!n) {
        resp_add_errorf(r->out, "ERR backend unavailable (redis-cluster: no master for slot %d yet%s%s)", slot,
                        b->maperr[0] ? ": " : "", b->maperr);
        return FD_OK;
    }
    return rc_blocking_submit(&b->sh, &n->addr, r);
}

static void cl_cancel_blocking(fd_backend *fb, fd_pending *p) {
    cl_backend *b = fb->state;
    rc_blocking_cancel(&b->sh, p);
}

/* Keyspace events are node-local in a Redis Cluster (each master fires its
 * own keys'), while PUBLISH reaches every node. So while
 * notify-keyspace-events is set through frontdoor (b->sh.notify delivers
 * events), every master has a keyspace relay (krelay) that passes only the
 * "__keyspace@"/"__keyevent@" messages of the names that may carry them
 * (those channels, and every pattern), and the channel relay passes every
 * message but those: each event reaches the subscribers once, from the
 * node that fired it. (A PUBLISH made by hand to a "__keyspace@..."
 * channel reaches them once per master.) */
static int ks_managed(const cl_backend *b) {
    const char *f = b->sh.notify;
    return f && (strchr(f, 'K') || strchr(f, 'E')) && strpbrk(f, "Ag$lshzxetdmn");
}

static int ks_name(int kind, const char *name, size_t len) {
    if (kind == FD_PS_PATTERN) return 1;
    return kind == FD_PS_CHANNEL && len > 11 && (!memcmp(name, "__keyspace@", 11) || !memcmp(name, "__keyevent@", 11));
}

/* The keyspace relays the map and the directive call for: one per master
 * while managed (a new one subscribes everything once up: the resync),
 * none otherwise; the channel relay's filter to match. */
static void ks_relays(cl_backend *b) {
    int on = ks_managed(b);
    if (b->relay) b->relay->relay_keyspace = on ? -1 : 0;
    for (cl_node *n = b->nodes; n; n = n->next) {
        int want = on && n->master_idx >= 0;
        if (n->krelay && !want) {
            rc_conn_destroy(n->krelay);
            free(n->krelay);
            n->krelay = NULL;
        } else if (!n->krelay && want && (n->krelay = calloc(1, sizeof *n->krelay))) {
            rc_relay_init(n->krelay, &b->sh, &n->addr, b->fb);
            n->krelay->relay_keyspace = 1;
        }
    }
}

static void cl_notify_set(fd_backend *fb, const char *classes) {
    cl_backend *b = fb->state;
    rc_notify_set(&b->sh, classes);     /* every node: now, and in every new connection's handshake */
    ks_relays(b);
}

/* Pub/sub. Channels and patterns are cluster-wide in Redis Cluster (a
 * PUBLISH reaches every node): one relay at one master carries them all.
 * Shard channels live at their slot's master: one relay per master. */
static void cl_pubsub(fd_backend *fb, int kind, const char *name, size_t len, int on) {
    cl_backend *b = fb->state;
    rc_conn **relay;
    rc_addr *addr;
    if (ks_name(kind, name, len))
        for (cl_node *n = b->nodes; n; n = n->next)
            if (n->krelay) rc_relay_sub(n->krelay, kind, name, len, on);
    if (kind == FD_PS_SHARD) {
        cl_node *n = b->map_ok ? b->slots[key_slot(name, len)] : NULL;
        if (!n) return;                        /* no map yet: the resync when a relay comes up covers it */
        relay = &n->srelay;
        addr = &n->addr;
    } else {
        relay = &b->relay;
        addr = b->map_ok && b->nmasters ? &b->masters[0]->addr : &b->nodes->addr;
    }
    if (!*relay) {
        if (!on || !(*relay = calloc(1, sizeof **relay))) return;
        rc_relay_init(*relay, &b->sh, addr, b->fb);   /* subscribes everything once up */
        if (kind != FD_PS_SHARD) (*relay)->relay_keyspace = ks_managed(b) ? -1 : 0;
        return;
    }
    rc_relay_sub(*relay, kind, name, len, on);
}

/* COMMAND DOCS, while this backend is the primary: where a command behaves
 * unlike on one Redis. */
static const char *cl_doc_note(const struct fd_command *cmd) {
    switch (cmd->cluster) {
    case FD_CL_SPLIT_OK:
        return "(redis-cluster backend: keys in different hash slots are set by one MSET per slot, so the whole is not atomic.)";
    case FD_CL_SPLIT_MGET: case FD_CL_SPLIT_SUM:
        return "(redis-cluster backend: keys in different hash slots are sent per slot and the replies merged; not atomic across slots.)";
    case FD_CL_FAN_SUM: case FD_CL_FAN_FLUSH: case FD_CL_FAN_KEYS: case FD_CL_FAN_RANDOM: case FD_CL_SCAN:
        return "(redis-cluster backend: sent to every master and the replies merged.)";
    default: break;
    }
    if (cmd->last_key != cmd->first_key || (cmd->flags & (FD_CMD_NUMKEYS1 | FD_CMD_NUMKEYS2)))
        return "(redis-cluster backend: all keys must hash to one slot, else -CROSSSLOT.)";
    return NULL;
}

static int cl_key_group(fd_backend *fb, const resp_arg *key) {
    (void)fb;
    return key_slot(key->ptr, key->len);
}

const fd_backend_ops fd_redis_cluster_backend = {
    .name = "redis-cluster",
    .async = 1,
    .passthrough = 1,
    .options = &fd_redis_options,
    .open = cl_open,
    .close = cl_close,
    .submit = cl_submit,
    .end_turn = cl_end_turn,
    .cron = cl_cron,
    .keyspace = NULL,
    .info = cl_info,
    .support = rc_support,
    .refusal = rc_refusal,
    .key_group = cl_key_group,
    .doc_note = cl_doc_note,
    .submit_blocking = cl_submit_blocking,
    .cancel_blocking = cl_cancel_blocking,
    .pubsub = cl_pubsub,
    .notify = FD_NOTIFY_CLASSES,
    .notify_set = cl_notify_set,
};
