/* dispatch.c — the central checks every command passes (known, arity, auth),
 * then routing: proxy handler, or the backend. Statistics are kept here. */
#include "server.h"
#include "ab.h"
#include "backends.h"
#include "config.h"
#include "log.h"
#include "capture.h"   /* capture (issue 17) */

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

/* "-ERR unknown command 'foo', with args beginning with: 'a' 'b' " as Redis 7.0 */
static void reply_unknown(px_conn *c, int argc, resp_arg *argv) {
    char args[512];
    size_t al = 0;
    args[0] = '\0';
    for (int i = 1; i < argc && al < 128; i++) {
        int room = 128 - (int)al;
        int n = snprintf(args + al, sizeof args - al, "'%.*s' ", (int)(argv[i].len < (size_t)room ? argv[i].len : (size_t)room), argv[i].ptr);
        if (n > 0) al += (size_t)n;
        if (al >= sizeof args) { al = sizeof args - 1; break; }
    }
    resp_add_errorf(&c->out, "ERR unknown command '%.*s', with args beginning with: %s",
                    (int)(argv[0].len > 128 ? 128 : argv[0].len), argv[0].ptr, args);
}

/* Hand a command to backend `be`; its reply goes to `out`: c's output, or a
 * scratch buffer for an A/B mirror copy (c NULL: the reply is only recorded
 * in `ab`). Returns 1 if the reply is now owed (pending), 0 if it was
 * written (or an error status was). Every request is accounted to `be`.
 * *clock (ns) is when the request started; it is advanced to the last clock
 * reading taken here, so callers time on from it without reading again. */
static int submit_to(px_backend *be, px_conn *c, resp_out *out, uint64_t client_id, px_command *cmd,
                     int argc, resp_arg *argv, const char *raw, size_t rawlen, uint64_t *clock,
                     px_ab_pair *ab, int side) {
    const char *name = cmd ? cmd->name : "";
    fd_request r = {
        .cmd = cmd, .argc = argc, .argv = argv, .out = out,
        .now_ms = px_now_ms(), .is_write = cmd ? (cmd->flags & PX_CMD_WRITE) != 0 : 1,
        .raw = raw, .rawlen = rawlen, .client_id = client_id,
    };
    if (!be) {
        px_reply_status(out, FD_E_UNAVAILABLE, name);
        if (ab) px_ab_record(ab, side, NULL, 0, 1);
        return 0;
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
        *clock = px_mono_ns();
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
    uint64_t te = *clock = px_mono_ns();
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
static int submit(px_conn *c, px_command *cmd, int argc, resp_arg *argv, const char *raw, size_t rawlen, uint64_t *clock) {
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
    PX_CAPTURE_HOOK(c, argc, argv, raw, rawlen);   /* capture (issue 17, proxy/capture.h) */
    px_command *cmd = px_command_lookup(argv[0].ptr, argv[0].len);
    px_srv.total_commands++;
    if (!cmd) {
        /* a backend that is itself a Redis server answers what we don't know */
        if (px_srv.primary && px_srv.primary->b.ops->passthrough && c->authed) {
            uint64_t clock = px_mono_ns();
            submit(c, NULL, argc, argv, raw, rawlen, &clock);
            return;
        }
        reply_unknown(c, argc, argv);
        return;
    }
    if ((cmd->arity > 0 && argc != cmd->arity) || (cmd->arity < 0 && argc < -cmd->arity)) {
        resp_add_errorf(&c->out, "ERR wrong number of arguments for '%s' command", cmd->name);
        cmd->failed++;
        return;
    }
    if (!c->authed && !(cmd->flags & PX_CMD_NOAUTH)) {
        resp_add_error(&c->out, "NOAUTH Authentication required.");
        cmd->failed++;
        return;
    }
    c->lastcmd = cmd;
    cmd->calls++;
    uint64_t t0 = px_mono_ns(), t1;
    if (cmd->proxy) {
        cmd->proxy(c, argc, argv);
        t1 = px_mono_ns();
    } else {
        t1 = t0;
        if (submit(c, cmd, argc, argv, raw, rawlen, &t1)) return;   /* latency counted on completion */
    }
    cmd->usec += (t1 - t0) / 1000;
}
