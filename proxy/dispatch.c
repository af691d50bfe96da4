/* dispatch.c — the central checks every command passes (known, arity, auth),
 * then routing: proxy handler, or the backend. Statistics are kept here. */
#include "server.h"
#include "config.h"
#include "log.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static uint64_t mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

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

void px_dispatch(px_conn *c, int argc, resp_arg *argv) {
    px_command *cmd = px_command_lookup(argv[0].ptr, argv[0].len);
    px_srv.total_commands++;
    if (!cmd) { reply_unknown(c, argc, argv); return; }
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
    uint64_t t0 = mono_us();
    if (cmd->proxy) {
        cmd->proxy(c, argc, argv);
    } else {
        fd_request r = {
            .cmd = cmd, .argc = argc, .argv = argv, .out = &c->out,
            .now_ms = px_now_ms(), .is_write = (cmd->flags & PX_CMD_WRITE) != 0,
        };
        fd_backend *b = &px_srv.backend;
        int st = b->ops ? b->ops->submit(b, &r) : FD_E_UNAVAILABLE;
        if (r.is_write) c->turn_wrote = 1;
        if (st == FD_PENDING) {
            /* No backend completes asynchronously yet; the reply-slot queue
             * arrives with the network backends. */
            st = FD_E_INTERNAL;
        }
        if (st != FD_OK) {
            px_reply_status(&c->out, st, cmd->name);
            cmd->failed++;
        }
    }
    cmd->calls++;
    cmd->usec += mono_us() - t0;
}
