/* redis_cluster_map.c — hash slots (CRC16, hash tags) and the slot map:
 * CLUSTER SLOTS asked of a node, the map rebuilt, refreshed on MOVED, on a
 * node down and periodically. Private: redis_cluster_int.h. */
#include "redis_cluster_int.h"

/* ------------------------------------------------------------ hash slots */

static uint16_t crc16tab[256];

void cl_crc16_init(void) {
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
int cl_key_slot(const char *k, size_t n) {
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
        cl_node *n = cl_node_get(b, name, 1, err, errlen);
        if (!n) return -1;
        for (long long s = lo; s <= hi; s++) { if (!ns[s]) covered++; ns[s] = n; }
    }
    if (covered == 0) { snprintf(err, errlen, "CLUSTER SLOTS: no slot is served (cluster not created yet?)"); return -1; }
    for (int s = 0; s < CL_SLOTS; s++) cl_set_slot(b, s, ns[s]);
    masters_rebuild(b);
    return 0;
bad:
    snprintf(err, errlen, "CLUSTER SLOTS: unexpected reply shape");
    return -1;
}

static void wake_parked(cl_backend *b, int all_waiting_for_map);


/* No slot map could be had: the requests waiting for one fail now. */
static void fail_parked(cl_backend *b) {
    cl_deferred_fail(b, 0);
    cl_part *list = b->parked;
    b->parked = b->parked_tail = NULL;
    while (list) {
        cl_part *pt = list;
        list = pt->park_next;
        cl_part_fail(pt, "-ERR backend unavailable (redis-cluster: no slot map: %s)", b->maperr);
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
    cl_ks_relays(b);                             /* one keyspace relay per master (and the filter) */
    if (resync) fd_pubsub_resync(b->fb);
}

static void on_slots(void *ctx, const char *d, size_t n, int local) {
    cl_backend *b = ctx;
    b->refreshing = 0;
    if (b->closing) return;
    char err[300];
    const char *from = b->refresh_node ? b->refresh_node->addr.name : "?";
    if (local || cl_is_error(d, n)) {
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
    cl_deferred_run(b);
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
void cl_refresh_start(cl_backend *b) {
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
            if (pass == 0 && !(n->nslots && cl_node_up(n))) continue;
            if (pass == 1 && !cl_node_up(n)) continue;
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
            cl_part_send(pt);
        } else if (pt->deadline <= now) {
            if (!b->map_ok)
                cl_part_fail(pt, "-ERR backend unavailable (redis-cluster: no slot map%s%s)",
                          b->maperr[0] ? ": " : " yet", b->maperr);
            else
                cl_part_fail(pt, "-ERR backend unavailable (redis-cluster: slot %d still migrating after %lld ms)",
                          pt->slot, (long long)b->sh.timeout_ms);
        } else {
            cl_park(pt, pt->wake);
        }
    }
    (void)map_now;
}

void cl_on_timer(struct ev_loop *loop, ev_timer *w, int revents) {
    cl_backend *b = w->data;
    int64_t now = fd_mono_ms();
    if (b->parked) wake_parked(b, 0);
    if (b->deferred) cl_deferred_fail(b, now);
    if (!b->refreshing) {
        int down = 0;
        for (int i = 0; i < b->nmasters; i++) if (!cl_node_up(b->masters[i])) down = 1;
        int64_t since = now - b->last_refresh;
        if ((b->need_refresh && since >= CL_REFRESH_MIN_MS) || (down && since >= CL_REFRESH_DOWN_MS) ||
            since >= CL_REFRESH_PERIOD_MS)
            cl_refresh_start(b);
    }
}
