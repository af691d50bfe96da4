/* redis_cluster_route.c — a request's way through the cluster: reading the
 * nodes' replies (MOVED, ASK, TRYAGAIN, CLUSTERDOWN redirections),
 * sending to a node, and submit (routing by slot; commands over several
 * slots split and their replies merged; keyless commands to every master
 * or one). Private: redis_cluster_int.h. */
#include "redis_cluster_int.h"

/* ------------------------------------------------------------ replies */

static void req_free(cl_req *r) {
    for (int i = 0; i < r->nparts; i++) {
        free(r->parts[i].reply);
        if (r->parts[i].cmd != (char *)(r->parts + r->nparts)) free(r->parts[i].cmd);
    }
    free(r->order);
    free(r);
}

int cl_is_error(const char *d, size_t n) { return n && (d[0] == '-' || d[0] == '!'); }

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
        if (cl_is_error(r->parts[i].reply, r->parts[i].replylen)) {
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
        if (cl_is_error(hit->reply, hit->replylen)) {
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
            cl_part_send(p0);
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

void cl_part_fail(cl_part *pt, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    size_t n = resp_vformat_line(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pt->r->b->failed++;
    part_done(pt, msg, n);
}

/* ------------------------------------------------------------ sending */


void cl_park(cl_part *pt, int64_t wake) {
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
    if (!b->refreshing && fd_mono_ms() - b->last_refresh >= CL_REFRESH_MIN_MS) cl_refresh_start(b);
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

void cl_set_slot(cl_backend *b, int slot, cl_node *n) {
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
                cl_part_fail(pt, "-ERR backend unavailable (redis-cluster: more than %d redirections for slot %d, last to %s)",
                          CL_MAX_REDIRECTS, slot, addr);
                return;
            }
            cl_node *to = cl_node_get(b, addr, 1, err, sizeof err);
            if (!to) { cl_part_fail(pt, "-ERR backend unavailable (redis-cluster: redirected to %s: %s)", addr, err); return; }
            if (moved) {
                b->moved++;
                to->moved++;
                cl_set_slot(b, slot, to);
                if (pt->slot < 0) pt->node = to;
                want_refresh(b);
            } else {
                b->asked++;
                to->asked++;
                pt->ask = to;
            }
            cl_part_send(pt);
            return;
        }
        if (n > 9 && memcmp(d, "-TRYAGAIN", 9) == 0 && pt->slot >= 0) {
            int64_t now = fd_mono_ms();
            if (!pt->deadline) pt->deadline = now + b->sh.timeout_ms;
            if (now + CL_TRYAGAIN_MS < pt->deadline) {
                b->tryagain++;
                cl_park(pt, now + CL_TRYAGAIN_MS);
                return;
            }
            /* retried until backend-timeout: the documented error, not the
             * cluster's own TRYAGAIN (the same text as a parked part's) */
            cl_part_fail(pt, "-ERR backend unavailable (redis-cluster: slot %d still migrating after %lld ms)",
                      pt->slot, (long long)b->sh.timeout_ms);
            return;
        }
    }
    part_done(pt, d, n);
}

/* Send (or park) a part on the connection its client uses on its node. */
void cl_part_send(cl_part *pt) {
    cl_req *r = pt->r;
    cl_backend *b = r->b;
    cl_node *n = pt->ask ? pt->ask : pt->slot >= 0 ? b->slots[pt->slot] : pt->node;
    if (!n) {
        if (!b->map_ok && cl_any_reachable(b)) { cl_park(pt, 0); want_refresh(b); return; }   /* waits for the first map */
        if (!b->map_ok) {
            cl_part_fail(pt, "-ERR backend unavailable (redis-cluster: no slot map%s%s)", b->maperr[0] ? ": " : " yet", b->maperr);
            return;
        }
        want_refresh(b);
        cl_part_fail(pt, "-ERR backend unavailable (redis-cluster: hash slot %d is not served by any node)", pt->slot);
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
    cl_part_send(pt);
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
        int s = cl_key_slot(key->ptr, key->len);
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
        for (int g = 0; g < n; g++) cl_part_send(&q->parts[g]);   /* q may be freed by the last */
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
    for (int i = 0; i < n; i++) cl_part_send(&q->parts[i]);   /* q may be freed by the last */
    return FD_PENDING;
}

/* The first map is here: the fan-outs that waited for it go. */
void cl_deferred_run(cl_backend *b) {
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
void cl_deferred_fail(cl_backend *b, int64_t now) {
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
    if (!cl_any_reachable(b)) {
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
    cl_part_send(pt);
    return FD_PENDING;
invalid:
    resp_add_error(r->out, "ERR invalid cursor");
    return FD_OK;
}

static int cl_route(cl_backend *b, fd_request *r, const int *pos, int nk, int split_step, int merge);

int cl_submit(fd_backend *fb, fd_request *r) {
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
        return submit_single(b, r, cl_key_slot(r->route_key->ptr, r->route_key->len), NULL);
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
        slot = cl_key_slot(a[1].ptr, a[1].len);
        for (int i = 1 + split_step; i < r->argc; i += split_step)
            if (cl_key_slot(a[i].ptr, a[i].len) != slot) return submit_split(b, r, split_step, merge);
        return submit_single(b, r, slot, NULL);
    }
    if (nk > 0) {
        slot = cl_key_slot(a[pos[0]].ptr, a[pos[0]].len);
        if (r->cmd) {       /* table commands: CROSSSLOT here (Redis checks the others itself) */
            for (int i = 1; i < nk; i++)
                if (cl_key_slot(a[pos[i]].ptr, a[pos[i]].len) != slot) cross = 1;
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
