/* call.c — the one call primitive: every request to a backend (a client's
 * command, a mirror copy, an atomic unit's part, a script's detached
 * request, a blocking command's retry, frontdoor's own reads, the swap
 * probe) goes through px_call (server.h). */
#include "server.h"
#include "hooks.h"
#include "backends.h"
#include "../storage/cmdargs.h"   /* fd_reply_floor, fd_add_reply_too_big */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tell the request's tap the reply written at out[before..]. */
static inline void tell(const px_request *q, size_t before, int failed) {
    if (q->tap) q->tap->fn(q->tap->ud, q->out->data ? q->out->data + before : "", q->out->len - before, failed);
}

/* A command's name for an error's text (computed there, not on a success's way). */
static inline const char *cmd_name(const fd_command *cmd) { return cmd ? cmd->name : ""; }

int px_call(const px_request *q) {
    px_backend *be = q->be;
    px_conn *mc = q->mark ? q->c : NULL;      /* the client whose output gets the reply */
    resp_out *out = q->out;
    fd_command *cmd = q->cmd;
    uint64_t own_clock, *clock = q->clock;
    if (!clock) { own_clock = fd_mono_ns(); clock = &own_clock; }
    size_t before = out->len;
    if (q->handle) *q->handle = NULL;
    if (!be || (q->blocking && !be->b.ops->submit_blocking)) {
        px_reply_status(out, FD_E_UNAVAILABLE, cmd_name(cmd));
        if (mc && cmd) px_cmdstat_add(&px_cmd_proxy[cmd->id], 0, 1);
        tell(q, before, 1);
        return 0;
    }
    if (cmd && !q->unchecked) {
        const char *why = be->support[cmd->id];
        if (why != FD_SERVED) {
            if (why) fd_reply_unsupported(out, cmd->name, be->b.ops->name, why);
            else resp_add_unknown_command(out, q->argc, q->argv);   /* a bug: test_command_coverage */
            if (mc) px_cmdstat_add(&px_cmd_proxy[cmd->id], 0, 1);   /* refused by the proxy: its record */
            tell(q, before, 0);
            return 0;
        }
    }
    if (cmd && px_cfg.max_reply_bytes > 0) {
        /* a count-driven reply past max-reply-bytes is refused before any
         * backend builds it (a Redis backend would build it and die) */
        long long need = fd_reply_floor(cmd->id, q->argc, q->argv);
        if (need > px_cfg.max_reply_bytes) {
            fd_add_reply_too_big(out, px_cfg.max_reply_bytes, need);
            if (mc) px_cmdstat_add(&px_cmd_proxy[cmd->id], 0, 1);
            tell(q, before, 0);
            return 0;
        }
    }
    fd_request r = {
        .cmd = cmd, .argc = q->argc, .argv = q->argv, .out = out,
        .now_ms = px_now_ms(), .is_write = cmd ? (cmd->flags & FD_CMD_WRITE) != 0 : 1,
        .raw = q->raw, .rawlen = q->rawlen, .client_id = q->client_id, .route_key = q->route_key,
        .detached = q->detached,
    };
    const fd_command *rec = q->misc ? NULL : cmd;   /* the record it is counted in (NULL: be->misc) */
    uint64_t ts = *clock;
    if (be->b.ops->async && (r.is_write ? !be->b.writes_inline : !be->b.ops->async_writes)) {
        if (!(r.pending = px_pending_push(mc, (fd_command *)rec, ts))) {
            px_reply_status(out, FD_E_NOMEM, cmd_name(cmd));
            tell(q, before, 1);
            return 0;
        }
        r.pending->be = be;
        if (q->tap) r.pending->tap = *q->tap;
        r.pending->in_submit = 1;
        be->inflight++;
        if (mc) PX_HOOK_RUN(owed, mc, r.pending, cmd, q->argc, q->argv);
    }
    /* max-reply-bytes: the reply may not grow out past before + the bound
     * (resp.h; an asynchronous backend carries it to its own buffer) */
    size_t limit0 = out->limit;
    if (!limit0 && px_cfg.max_reply_bytes > 0) out->limit = before + (size_t)px_cfg.max_reply_bytes;
    int st = q->blocking ? be->b.ops->submit_blocking(&be->b, &r) : be->b.ops->submit(&be->b, &r);
    if (q->untouched) *q->untouched = st == FD_OK || st == FD_PENDING ? r.untouched : 0;
    out->limit = limit0;
    if (out->over) {
        out->over = 0;
        out->len = before;
        st = fd_add_reply_too_big(out, px_cfg.max_reply_bytes, 0) ? FD_E_NOMEM : FD_OK;
    }
    if (r.is_write && q->c) q->c->turn_wrote = 1;
    if (st == FD_PENDING && r.pending) {
        fd_pending *p = r.pending;
        *clock = fd_mono_ns();
        if (p->done) {                       /* answered inside submit: already told and placed */
            free(p);
            return 2;
        }
        p->in_submit = 0;
        p->t_ret_ns = *clock;
        if (q->handle) *q->handle = p;
        return 1;
    }
    if (r.pending) {                         /* not taken: the backend did not touch it */
        be->inflight--;
        px_pending_drop(r.pending);
    }
    if (st == FD_PENDING) st = FD_E_INTERNAL;
    if (st != FD_OK) px_reply_status(out, st, cmd_name(cmd));
    uint64_t te = *clock = fd_mono_ns();
    int is_err = out->len > before && out->data[before] == '-';
    px_backend_record(be, mc ? PX_REC_CLIENT : PX_REC_OWN, rec, te - ts, is_err);   /* the one record update */
    if (be->b.ops->async) px_hist_add(&be->wait_live, te - ts);
    if (q->tap)                              /* the failure test only for a tap */
        tell(q, before, st == FD_E_UNAVAILABLE || st == FD_E_TIMEOUT ||
                        px_reply_is_unavailable(out->data + before, out->len - before));
    return 0;
}

typedef struct reply_ctx { px_reply_fn fn; void *ud; } reply_ctx;

static void reply_tap(void *ud, const char *reply, size_t len, int failed) {
    reply_ctx *x = ud;
    (void)failed;
    x->fn(x->ud, reply ? reply : "", len);
    free(x);
}

void px_call_reply(const px_request *q, int proto, px_reply_fn fn, void *ud) {
    reply_ctx *x = malloc(sizeof *x);
    resp_out o;
    resp_out_init(&o, proto);
    if (!x) {
        px_reply_status(&o, FD_E_NOMEM, q->cmd ? q->cmd->name : "");
        fn(ud, o.data, o.len);
        resp_out_free(&o);
        return;
    }
    *x = (reply_ctx){fn, ud};
    px_tap tap = {reply_tap, x};
    px_request r = *q;
    r.out = &o;
    r.tap = &tap;
    px_call(&r);
    resp_out_free(&o);
}

void px_call_backend(px_conn *c, const fd_command *cmd, int argc, resp_arg *argv, const char *raw,
                     size_t rawlen, int proto, int blocking, px_reply_fn done, void *arg, fd_pending **handle) {
    px_call_reply(&(px_request){.be = px_srv.primary, .c = c, .client_id = c ? c->id : 0, .cmd = (fd_command *)cmd,
                                .argc = argc, .argv = argv, .raw = raw, .rawlen = rawlen, .blocking = blocking != 0,
                                .unchecked = 1, .misc = 1, .handle = handle},
                  proto, done, arg);
}
