/* dispatch.c — the central checks every command passes (known, arity, auth),
 * then routing: proxy handler, or the backend. Statistics are kept here. */
#include "server.h"
#include "ab.h"
#include "backends.h"
#include "config.h"
#include "log.h"
#include "blocking.h"
#include "pubsub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void px_reply_status(resp_out *o, int status, const char *cmdname) {
    const char *text = fd_strerror(status);
    if (strstr(text, "%s")) {
        char buf[512];
        snprintf(buf, sizeof buf, text, cmdname);   /* texts are ours, with at most one %s */
        resp_add_error(o, buf);
    } else {
        resp_add_error(o, text);
    }
}

/* Hand a command to backend `be`; its reply goes to `out`: c's output, or a
 * scratch buffer for an A/B mirror copy (c NULL: the reply is only recorded
 * in `ab`). Returns 1 if the reply is now owed (pending), 0 if it was
 * written (or an error status was). Every request is accounted to `be`.
 * *clock (ns) is when the request started; it is advanced to the last clock
 * reading taken here, so callers time on from it without reading again. */
static int submit_to(px_backend *be, px_conn *c, resp_out *out, uint64_t client_id, fd_command *cmd,
                     int argc, resp_arg *argv, const char *raw, size_t rawlen, uint64_t *clock,
                     px_ab_pair *ab, int side) {
    const char *name = cmd ? cmd->name : "";
    fd_request r = {
        .cmd = cmd, .argc = argc, .argv = argv, .out = out,
        .now_ms = px_now_ms(), .is_write = cmd ? (cmd->flags & FD_CMD_WRITE) != 0 : 1,
        .raw = raw, .rawlen = rawlen, .client_id = client_id,
    };
    if (!be) {
        px_reply_status(out, FD_E_UNAVAILABLE, name);
        if (ab) px_ab_record(ab, side, NULL, 0, 1);
        return 0;
    }
    if (cmd) {
        const char *why = be->b.ops->support(cmd);
        if (why != FD_SERVED) {
            size_t before = out->len;
            if (why) resp_add_errorf(out, "ERR '%s' is not supported by frontdoor's %s backend: %s",
                                     cmd->name, be->b.ops->name, why);
            else resp_add_unknown_command(out, argc, argv);   /* a bug: test_command_coverage */
            if (c) cmd->failed++;
            if (ab) px_ab_record(ab, side, out->data + before, out->len - before, 0);
            return 0;
        }
    }
    uint64_t ts = *clock;
    if (be->b.ops->async) {
        if (!(r.pending = px_pending_push(c, cmd, ts))) {
            px_reply_status(out, FD_E_NOMEM, name);
            if (ab) px_ab_record(ab, side, NULL, 0, 1);
            return 0;
        }
        r.pending->be = be;
        r.pending->ab = ab;
        r.pending->ab_side = side;
        r.pending->in_submit = 1;
        be->inflight++;
    }
    size_t before = out->len;
    int st = be->b.ops->submit(&be->b, &r);
    if (r.is_write && c) c->turn_wrote = 1;
    if (st == FD_PENDING && r.pending) {
        fd_pending *p = r.pending;
        *clock = fd_mono_ns();
        if (p->done) free(p);                /* answered inside submit: already in place */
        else { p->in_submit = 0; p->t_ret_ns = *clock; }
        return 1;
    }
    if (r.pending) {                         /* not taken: the backend did not touch it */
        be->inflight--;
        px_pending_drop(r.pending);
    }
    if (st == FD_PENDING) st = FD_E_INTERNAL;
    if (st != FD_OK) {
        px_reply_status(out, st, name);
        if (cmd && c) cmd->failed++;
    }
    uint64_t te = *clock = fd_mono_ns();
    int is_err = out->len > before && out->data[before] == '-';
    px_backend_account(be, te - ts, te - ts, is_err);
    if (ab) px_ab_record(ab, side, out->data + before, out->len - before,
                         st == FD_E_UNAVAILABLE || st == FD_E_TIMEOUT ||
                         px_reply_is_unavailable(out->data + before, out->len - before));
    return 0;
}

/* Route a command the command table sends to a backend: the primary, or
 * the secondary in A/B split mode; in mirror mode a copy also goes to the
 * secondary (its reply is compared, never sent). */
static int submit(px_conn *c, fd_command *cmd, int argc, resp_arg *argv, const char *raw, size_t rawlen, uint64_t *clock) {
    px_backend *be = px_srv.primary;
    if (px_cfg.ab_mode == PX_AB_SPLIT && px_srv.secondary && cmd && px_ab_split_to_secondary(c, cmd, argc, argv))
        be = px_srv.secondary;
    px_ab_pair *ab = px_cfg.ab_mode == PX_AB_MIRROR ? px_ab_begin(cmd, argc, argv) : NULL;
    int owed = submit_to(be, c, &c->out, c->id, cmd, argc, argv, raw, rawlen, clock, ab, 0);
    if (ab) {
        resp_out scratch;
        resp_out_init(&scratch, c->out.proto);
        uint64_t copy_clock = *clock;        /* the copy starts when the primary's part ended */
        submit_to(px_srv.secondary, NULL, &scratch, c->id, cmd, argc, argv, raw, rawlen, &copy_clock, ab, 1);
        resp_out_free(&scratch);
    }
    return owed;
}

void px_dispatch(px_conn *c, int argc, resp_arg *argv, const char *raw, size_t rawlen) {
    fd_command *cmd = fd_command_lookup(argv[0].ptr, argv[0].len);
    px_srv.total_commands++;
    if (!cmd) {
        /* a backend that is itself a Redis server answers what we don't know */
        if (px_srv.primary && px_srv.primary->b.ops->passthrough && c->authed) {
            uint64_t clock = fd_mono_ns();
            submit(c, NULL, argc, argv, raw, rawlen, &clock);
            return;
        }
        resp_add_unknown_command(&c->out, argc, argv);
        return;
    }
    if ((cmd->arity > 0 && argc != cmd->arity) || (cmd->arity < 0 && argc < -cmd->arity)) {
        resp_add_errorf(&c->out, "ERR wrong number of arguments for '%s' command", cmd->name);
        cmd->failed++;
        return;
    }
    if (!c->authed && !(cmd->flags & FD_CMD_NOAUTH)) {
        resp_add_error(&c->out, "NOAUTH Authentication required.");
        cmd->failed++;
        return;
    }
    if (c->ps && px_pubsub_denied(c, cmd)) { cmd->failed++; return; }
    c->lastcmd = cmd;
    cmd->calls++;
    uint64_t t0 = fd_mono_ns(), t1;
    px_handler h = px_handler_of(cmd);
    if (h) {
        h(c, argc, argv);
        t1 = fd_mono_ns();
    } else {
        t1 = t0;
        int owed = submit(c, cmd, argc, argv, raw, rawlen, &t1);
        px_block_signal_cmd(cmd, argc, argv);            /* its keys' waiters are tried */
        if (owed) t1 = 0;                                /* latency counted on completion */
    }
    if (t1) cmd->usec += (t1 - t0) / 1000;
    if (px_monitors) px_monitor_feed(c, cmd, argc, argv);
    px_block_after_command();                            /* serve the keys it made ready */
}
