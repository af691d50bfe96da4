/* dispatch.c — the central checks every command passes (known, arity, auth),
 * then routing: proxy handler, or the backend. Statistics are kept here. */
#include "server.h"
#include "config.h"
#include "log.h"

#include <stdio.h>
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

/* Hand a command to the backend. Returns 1 if its reply is now owed
 * (pending), 0 if it was written (or an error status was). */
static int submit(px_conn *c, px_command *cmd, int argc, resp_arg *argv, const char *raw, size_t rawlen, uint64_t t0) {
    fd_backend *b = &px_srv.backend;
    fd_request r = {
        .cmd = cmd, .argc = argc, .argv = argv, .out = &c->out,
        .now_ms = px_now_ms(), .is_write = cmd ? (cmd->flags & PX_CMD_WRITE) != 0 : 1,
        .raw = raw, .rawlen = rawlen, .client_id = c->id,
    };
    if (!b->ops) { px_reply_status(&c->out, FD_E_UNAVAILABLE, cmd ? cmd->name : ""); return 0; }
    if (b->ops->async && !(r.pending = px_pending_push(c, cmd, t0))) {
        px_reply_status(&c->out, FD_E_NOMEM, cmd ? cmd->name : "");
        return 0;
    }
    int st = b->ops->submit(b, &r);
    if (r.is_write) c->turn_wrote = 1;
    if (st == FD_PENDING) return r.pending ? 1 : (px_reply_status(&c->out, FD_E_INTERNAL, ""), 0);
    if (r.pending) px_pending_drop(r.pending);   /* not taken: the backend did not touch it */
    if (st != FD_OK) {
        px_reply_status(&c->out, st, cmd ? cmd->name : "");
        if (cmd) cmd->failed++;
    }
    return 0;
}

void px_dispatch(px_conn *c, int argc, resp_arg *argv, const char *raw, size_t rawlen) {
    px_command *cmd = px_command_lookup(argv[0].ptr, argv[0].len);
    px_srv.total_commands++;
    if (!cmd) {
        /* a backend that is itself a Redis server answers what we don't know */
        if (px_srv.backend.ops && px_srv.backend.ops->passthrough && c->authed) {
            submit(c, NULL, argc, argv, raw, rawlen, 0);
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
    uint64_t t0 = px_mono_us();
    if (cmd->proxy) cmd->proxy(c, argc, argv);
    else if (submit(c, cmd, argc, argv, raw, rawlen, t0)) return;   /* latency counted on completion */
    cmd->usec += px_mono_us() - t0;
}
