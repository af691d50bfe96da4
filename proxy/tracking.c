/* tracking.c — client-side caching (tracking.h). */
#include "tracking.h"
#include "hooks.h"
#include "strmap.h"
#include "pubsub.h"

#include <stdlib.h>
#include <string.h>

/* A tracking client. */
typedef struct tclient {
    px_conn *c;
    int      noloop;
    uint64_t redir;      /* REDIRECT's client id, or 0 */
    int      optin, optout;
    int      caching;    /* CLIENT CACHING yes (OPTIN) / no (OPTOUT) for the next command */
} tclient;

static tclient *tc;          /* the tracking clients (grown by doubling) */
static size_t   ntc, captc;

/* A tracked key: the ids of the clients that read it. */
typedef struct tkey {
    uint64_t *ids;
    size_t    n, cap;
} tkey;

static px_strmap keys;
static size_t    nitems;     /* (key, client) pairs in keys: INFO's tracking_total_items */

static void track_exec_done(const px_exec *e);
static void track_closed(px_conn *c);

static tclient *find(const px_conn *c) {
    for (size_t i = 0; i < ntc; i++)
        if (tc[i].c == c) return &tc[i];
    return NULL;
}

static tclient *find_id(uint64_t id) {
    for (size_t i = 0; i < ntc; i++)
        if (tc[i].c->id == id) return &tc[i];
    return NULL;
}

static void arm(int on) {
    px_hook_arm(exec_done, track_exec_done, on);
    px_hook_arm(closed, track_closed, on);
}

static px_conn *conn_by_id(uint64_t id) {
    for (px_conn *x = px_srv.clients; x; x = x->next)
        if (x->id == id) return x;
    return NULL;
}

/* One invalidation (key NULL: the null invalidate of a flush) for t, as
 * Redis 7.0's sendTrackingMessage: to its REDIRECT client when it has one
 * (gone: t gets `tracking-redir-broken` in RESP3), as a RESP3 push, or as a
 * `message` on __redis__:invalidate to a RESP2 redirect target in pub/sub
 * mode; else nothing. */
static void send_invalidate(const tclient *t, const char *key, size_t len) {
    px_conn *c = t->c;
    int redirected = 0;
    if (t->redir) {
        px_conn *r = conn_by_id(t->redir);
        if (!r) {
            if (c->out.proto >= 3 && !(c->flags & PX_CONN_CLOSE_ASAP)) {
                resp_add_push(&c->out, 2);
                resp_add_bulk(&c->out, "tracking-redir-broken", 21);
                resp_add_int(&c->out, (long long)t->redir);
                px_conn_touch(c);
            }
            return;
        }
        c = r, redirected = 1;
    }
    if (c->flags & PX_CONN_CLOSE_ASAP) return;
    if (c->out.proto >= 3) {
        resp_add_push(&c->out, 2);
        resp_add_bulk(&c->out, "invalidate", 10);
    } else if (redirected && px_pubsub_count(c)) {
        resp_add_push(&c->out, 3);
        resp_add_bulk(&c->out, "message", 7);
        resp_add_bulk(&c->out, "__redis__:invalidate", 20);
    } else {
        return;
    }
    if (key) {
        resp_add_array(&c->out, 1);
        resp_add_bulk(&c->out, key, len);
    } else {
        resp_add_null(&c->out);
    }
    px_conn_check_output_limit(c);
    px_conn_touch(c);
}

/* Send the key's invalidations (sparing `writer` when it asked NOLOOP) and forget it. */
static void invalidate_entry(px_strent *e, const px_conn *writer) {
    tkey *k = px_strmap_data(e);
    for (size_t i = 0; i < k->n; i++) {
        tclient *t = find_id(k->ids[i]);
        if (t && !(t->noloop && t->c == writer)) send_invalidate(t, e->name, e->len);
    }
    nitems -= k->n;
    free(k->ids);
    px_strmap_del(&keys, e);
}

static void free_entry(px_strent *e, void *arg) {
    (void)arg;
    free(((tkey *)px_strmap_data(e))->ids);
}

static void forget_all(void) {
    px_strmap_each(&keys, free_entry, NULL);
    px_strmap_clear(&keys);
    nitems = 0;
}

/* Remember that c read key (out of memory: the key is not remembered). */
static void remember(const px_conn *c, const char *key, size_t len) {
    if (keys.count >= PX_TRACKING_MAX_KEYS && !px_strmap_get(&keys, key, len)) {
        for (size_t b = 0; b < keys.nb; b++)     /* evict one key, with its invalidation */
            if (keys.b[b]) { invalidate_entry(keys.b[b], NULL); break; }
    }
    px_strent *e = px_strmap_add(&keys, key, len, sizeof(tkey), NULL);
    if (!e) return;
    tkey *k = px_strmap_data(e);
    for (size_t i = 0; i < k->n; i++)
        if (k->ids[i] == c->id) return;
    if (k->n == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 2;
        uint64_t *ids = realloc(k->ids, cap * sizeof *ids);
        if (!ids) return;
        k->ids = ids, k->cap = cap;
    }
    k->ids[k->n++] = c->id;
    nitems++;
}

/* Every command run: a tracking client's read remembers its keys; any
 * write invalidates its keys (all of them: the safe side). */
static void track_exec_done(const px_exec *e) {
    if (!ntc || !e->cmd) return;
    const fd_command *cmd = e->cmd;
    int write = (cmd->flags & FD_CMD_WRITE) != 0, track = 0;
    tclient *t = find(e->c);          /* a script's command: its caller's */
    if (t) {
        track = t->optin ? t->caching : t->optout ? !t->caching : 1;
        if (!e->script && cmd->id != FD_CMD_client) t->caching = 0;   /* CLIENT CACHING: one command */
    }
    if (write && (cmd->id == FD_CMD_flushdb || cmd->id == FD_CMD_flushall)) {
        if (e->reply && e->len && e->reply[0] == '-') return;
        for (size_t i = 0; i < ntc; i++) send_invalidate(&tc[i], NULL, 0);
        forget_all();
        return;
    }
    if (!write && (!(cmd->flags & FD_CMD_READONLY) || !track)) return;
    int pos[64], *pp = pos, max = e->argc > 64 ? e->argc : 64;
    if (e->argc > 64 && !(pp = malloc((size_t)e->argc * sizeof *pp))) return;
    int n = fd_command_keys(cmd, e->argc, e->argv, pp, max);
    for (int i = 0; i < n; i++) {
        const resp_arg *a = &e->argv[pp[i]];
        if (write) {
            px_strent *k = px_strmap_get(&keys, a->ptr, a->len);
            if (k) invalidate_entry(k, e->c);
        } else {
            remember(e->c, a->ptr, a->len);
        }
    }
    if (pp != pos) free(pp);
}

void px_tracking_off(px_conn *c) {
    tclient *t = find(c);
    if (!t) return;
    *t = tc[--ntc];             /* its ids left in keys are skipped (find_id) */
    if (!ntc) { forget_all(); arm(0); }
}

static void track_closed(px_conn *c) { px_tracking_off(c); }

void px_tracking_command(px_conn *c, int argc, const resp_arg *argv) {
    if (argc < 3) { resp_add_error(&c->out, "ERR wrong number of arguments for 'client|tracking' command"); return; }
    int noloop = 0, optin = 0, optout = 0;
    long long redir = 0;
    for (int i = 3; i < argc; i++) {
        if (resp_arg_is(&argv[i], "REDIRECT") && i + 1 < argc) {
            i++;
            if (redir) { resp_add_error(&c->out, "ERR A client can only redirect to a single other client"); return; }
            if (resp_str2ll(argv[i].ptr, argv[i].len, &redir)) {
                resp_add_error(&c->out, "ERR value is not an integer or out of range");
                return;
            }
            if (redir <= 0 || !conn_by_id((uint64_t)redir)) {
                resp_add_error(&c->out, "ERR The client ID you want redirect to does not exist");
                return;
            }
        } else if (resp_arg_is(&argv[i], "NOLOOP")) {
            noloop = 1;
        } else if (resp_arg_is(&argv[i], "OPTIN")) {
            optin = 1;
        } else if (resp_arg_is(&argv[i], "OPTOUT")) {
            optout = 1;
        } else if (resp_arg_is(&argv[i], "BCAST") || (resp_arg_is(&argv[i], "PREFIX") && i + 1 < argc)) {
            resp_add_errorf(&c->out, "ERR CLIENT TRACKING %.*s is not served by frontdoor yet",
                            (int)argv[i].len, argv[i].ptr);
            return;
        } else {
            resp_add_error(&c->out, "ERR syntax error");
            return;
        }
    }
    if (resp_arg_is(&argv[2], "ON")) {
        tclient *t = find(c);
        if (optin && optout) { resp_add_error(&c->out, "ERR You can't specify both OPTIN mode and OPTOUT mode"); return; }
        if (t && ((optin && t->optout) || (optout && t->optin))) {
            resp_add_error(&c->out, "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this "
                                    "client, and then re-enabling it with a different mode.");
            return;
        }
        if (!t) {
            if (ntc == captc) {
                size_t cap = captc ? captc * 2 : 8;
                tclient *n = realloc(tc, cap * sizeof *n);
                if (!n) { resp_add_error(&c->out, "ERR out of memory"); return; }
                tc = n, captc = cap;
            }
            t = &tc[ntc++];
            *t = (tclient){.c = c};
            if (ntc == 1) arm(1);
        }
        t->noloop = noloop;
        t->redir = (uint64_t)redir;
        t->optin = optin, t->optout = optout;
    } else if (resp_arg_is(&argv[2], "OFF")) {
        px_tracking_off(c);
    } else {
        resp_add_error(&c->out, "ERR syntax error");
        return;
    }
    resp_add_simple(&c->out, "OK", 2);
}

long long px_tracking_redir(const px_conn *c) {
    const tclient *t = find(c);
    return t ? (long long)t->redir : -1;
}

void px_tracking_info(px_conn *c) {
    const tclient *t = find(c);
    const char *flags[5];
    int n = 0;
    flags[n++] = t ? "on" : "off";
    if (t && t->optin) flags[n++] = "optin";
    if (t && t->optin && t->caching) flags[n++] = "caching-yes";
    if (t && t->optout) flags[n++] = "optout";
    if (t && t->optout && t->caching) flags[n++] = "caching-no";
    if (t && t->noloop) flags[n++] = "noloop";
    resp_add_map(&c->out, 3);
    resp_add_bulk_cstr(&c->out, "flags");
    resp_add_set(&c->out, n);
    for (int i = 0; i < n; i++) resp_add_bulk_cstr(&c->out, flags[i]);
    resp_add_bulk_cstr(&c->out, "redirect");
    resp_add_int(&c->out, px_tracking_redir(c));
    resp_add_bulk_cstr(&c->out, "prefixes");
    resp_add_array(&c->out, 0);
}

void px_tracking_caching(px_conn *c, const resp_arg *arg) {
    tclient *t = find(c);
    if (!t || (!t->optin && !t->optout)) {
        resp_add_error(&c->out, "ERR CLIENT CACHING can be called only when the client is in tracking mode with "
                                "OPTIN or OPTOUT mode enabled");
        return;
    }
    if (resp_arg_is(arg, "yes")) {
        if (!t->optin) {
            resp_add_error(&c->out, "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.");
            return;
        }
    } else if (resp_arg_is(arg, "no")) {
        if (!t->optout) {
            resp_add_error(&c->out, "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.");
            return;
        }
    } else {
        resp_add_error(&c->out, "ERR syntax error");
        return;
    }
    t->caching = 1;
    resp_add_simple(&c->out, "OK", 2);
}

size_t px_tracking_clients(void) { return ntc; }
size_t px_tracking_keys(void) { return keys.count; }
size_t px_tracking_items(void) { return nitems; }

void px_tracking_hooks(void) {
    PX_HOOK_ADD_IDLE(exec_done, track_exec_done);   /* both armed while a client tracks */
    PX_HOOK_ADD_IDLE(closed, track_closed);
}
