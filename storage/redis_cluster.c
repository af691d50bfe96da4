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
 *
 * Files: this one (state, nodes, the ops), redis_cluster_map.c (slots,
 * the slot map), redis_cluster_route.c (replies, redirections, sending,
 * submit); what they share is redis_cluster_int.h.
 */
#include "redis_cluster_int.h"

#define CL_TICK_MS           20

/* ------------------------------------------------------------ types */








/* ------------------------------------------------------------ nodes */

static cl_node *node_find(cl_backend *b, const char *name) {
    for (cl_node *n = b->nodes; n; n = n->next)
        if (strcmp(n->addr.name, name) == 0) return n;
    return NULL;
}

/* Find or create the node for name; NULL (err set) if it cannot be used. */
cl_node *cl_node_get(cl_backend *b, const char *name, int numeric, char *err, size_t errlen) {
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

int cl_node_up(const cl_node *n) {
    for (int i = 0; i < n->n; i++)
        if (n->conns[i].state == RC_UP) return 1;
    return 0;
}

/* Is any node's connection up or on its way? (No: fail at once, not at the deadline.) */
int cl_any_reachable(const cl_backend *b) {
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
    cl_crc16_init();
    cl_backend *b = calloc(1, sizeof *b);
    if (!b) { snprintf(err, errlen, "out of memory"); return FD_E_NOMEM; }
    for (int s = 0; s < CL_SLOTS; s++) b->slot_group[s] = -1;
    b->sh.loop = cfg->loop;
    b->sh.label = "redis-cluster";
    b->sh.password = rs->password && rs->password[0] ? strdup(rs->password) : NULL;
    b->sh.user = rs->user && rs->user[0] ? strdup(rs->user) : NULL;
    b->sh.db = 0;       /* a cluster has database 0 only */
    b->sh.timeout_ms = cfg->backend_timeout_ms > 0 ? cfg->backend_timeout_ms : 1000;
    b->pool = rc_pool_size(rs->pool_size);
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
        cl_node *n = cl_node_get(b, tok, 0, e, sizeof e);
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
    ev_timer_init(&b->timer, cl_on_timer, CL_TICK_MS / 1000.0, CL_TICK_MS / 1000.0);
    b->timer.data = b;
    ev_timer_start(b->sh.loop, &b->timer);
    cl_refresh_start(b);       /* queued behind the seed's connect */
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
        cl_part_fail(pt, "-ERR backend unavailable (redis-cluster: shutting down)");
    }
    cl_deferred_fail(b, 0);
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
    for (int i = 0; i < b->nmasters; i++) if (cl_node_up(b->masters[i])) up++;
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
    int slot = nk ? cl_key_slot(r->argv[pos[0]].ptr, r->argv[pos[0]].len) : 0;
    for (int i = 1; i < nk; i++)
        if (cl_key_slot(r->argv[pos[i]].ptr, r->argv[pos[i]].len) != slot) {
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
void cl_ks_relays(cl_backend *b) {
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
    cl_ks_relays(b);
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
        cl_node *n = b->map_ok ? b->slots[cl_key_slot(name, len)] : NULL;
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
    return cl_key_slot(key->ptr, key->len);
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
