/* dispatch.c — the central checks every command passes (known, arity, auth;
 * the features' gates around them: proxy/hooks.h),
 * then routing: proxy handler, or the backend. Statistics are kept here. */
#include "server.h"
#include "hooks.h"     /* every feature is reached through its hooks */
#include "backends.h"
#include "config.h"
#include "../storage/cmdargs.h"
#include "log.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int px_forward_unit(px_conn *c, px_backend *be, int argc, resp_arg *argv, const char *raw, size_t rawlen,
                    const resp_arg *route_key, int detached, const px_tap *tap) {
    /* a keyless unit still goes to one place, whatever its parts' own
     * routes would be (a cluster: slot 0's master, for every part) */
    static const resp_arg keyless = {"", 0};
    resp_out scratch;
    if (detached) resp_out_init(&scratch, c->out.proto);
    if (!route_key) route_key = &keyless;
    int owed = px_call(&(px_request){
        .be = be ? be : px_srv.primary, .c = detached ? NULL : c, .mark = !detached,
        .out = detached ? &scratch : &c->out, .client_id = c->id, .argc = argc, .argv = argv,
        .raw = raw, .rawlen = rawlen, .route_key = route_key, .detached = detached != 0, .tap = tap,
    });
    if (detached) resp_out_free(&scratch);
    return owed;
}

/* A script's request on an asynchronous backend: its reply, when in. */
typedef struct capture { resp_out out; int waiting; } capture;

static void capture_reply(void *ud, const char *reply, size_t len, int failed) {
    capture *cp = ud;
    (void)failed;
    resp_out_raw(&cp->out, reply, len);
    cp->waiting = 0;
}

/* CLIENT LIST's cmd= (server.h: lastcmd, lastsub): as Redis's c->lastcmd,
 * the command received as looked up (NULL: unknown), whatever follows —
 * refused, queued in MULTI, run; not EXEC's or a script's inner commands */
static void note_lastcmd(px_conn *c, const fd_command *cmd, int argc, const resp_arg *argv) {
    c->lastcmd = cmd;
    c->lastsub[0] = 0;
    if (cmd && (cmd->flags & FD_CMD_CONTAINER) && argc > 1 && argv[1].len < sizeof c->lastsub) {
        for (size_t i = 0; i < argv[1].len; i++) c->lastsub[i] = (char)tolower((unsigned char)argv[1].ptr[i]);
        c->lastsub[argv[1].len] = 0;
    }
}

void px_execute_into(px_conn *c, fd_command *cmd, int argc, resp_arg *argv, resp_out *out) {
    uint64_t t0 = fd_mono_ns();
    px_handler h = px_handler_of(cmd);
    px_exec e = {.c = c, .script = 1, .cmd = cmd, .argc = argc, .argv = argv, .handler = h != NULL};
    size_t out0 = out->len;
    if (!h && (cmd->flags & FD_CMD_STREAMKEYS) && px_hook_handler_of(cmd, argc, argv)) {
        /* Redis 7.0 (t_stream.c): a script's XREAD/XREADGROUP may not BLOCK */
        resp_add_errorf(out, "ERR %.*s command is not allowed with BLOCK option from scripts", (int)argv[0].len, argv[0].ptr);
        return;
    }
    if (h) {
        PX_HOOK_RUN(exec_start, &e);     /* WATCH: a proxy-served write touches its keys as it starts */
        /* a proxy-served command writes to the client's output: lend it the script's */
        resp_out saved = c->out;
        c->out = *out;
        c->out_lent++;                   /* CLIENT REPLY's cut leaves the script's buffer alone */
        h(c, argc, argv);
        c->out_lent--;
        *out = c->out;
        c->out = saved;
        e.ns = fd_mono_ns() - t0;
        px_cmdstat_add(&px_cmd_proxy[cmd->id], e.ns, 0);
        e.reply = out->data + out0;
        e.len = out->len - out0;
        px_hook_exec_done(&e);
        return;
    }
    px_backend *be = px_srv.primary;
    uint64_t clock = t0;
    if (!be || !be->b.ops->async) {
        px_call(&(px_request){.be = be, .c = c, .mark = 1, .out = out, .client_id = c->id, .cmd = cmd,
                              .argc = argc, .argv = argv, .clock = &clock, .untouched = &e.untouched});
        e.ns = clock - t0;
    } else {
        /* asynchronous: a detached request whose reply lands here; the loop
         * runs until it does (the caller holds every other client) */
        capture cp = {.waiting = 1};
        resp_out_init(&cp.out, out->proto);
        resp_out scratch;
        resp_out_init(&scratch, out->proto);
        px_tap tap = {capture_reply, &cp};
        int owed = px_call(&(px_request){.be = be, .out = &scratch, .client_id = c->id, .cmd = cmd,
                                         .argc = argc, .argv = argv, .detached = 1, .tap = &tap, .clock = &clock,
                                         .untouched = &e.untouched});
        if (!owed) resp_out_raw(out, scratch.data, scratch.len);
        else {
            int rio = ev_is_active(&c->rio);
            if (rio) ev_io_stop(px_srv.loop, &c->rio);
            while (cp.waiting) ev_run(px_srv.loop, EVRUN_ONCE);
            if (rio && !(c->flags & (PX_CONN_CLOSE_AFTER_REPLY | PX_CONN_CLOSE_ASAP))) ev_io_start(px_srv.loop, &c->rio);
            resp_out_raw(out, cp.out.data, cp.out.len);
        }
        resp_out_free(&scratch);
        resp_out_free(&cp.out);
        /* the backend recorded the detached request as its own: the script's
         * command counts in commandstats through the proxy's record */
        e.ns = fd_mono_ns() - t0;
        px_cmdstat_add(&px_cmd_proxy[cmd->id], e.ns, 0);
    }
    /* WATCH touches from the reply (every other client was held while it
     * ran: none ran a command between this write and its touch); blocked
     * clients on its keys are served once the script has run */
    e.reply = out->data + out0;
    e.len = out->len - out0;
    px_hook_exec_done(&e);
}

/* A client's backend command: to the router (hooks.h: route) while there
 * is a secondary backend, else straight to the primary. */
static int route(px_conn *c, fd_command *cmd, int argc, resp_arg *argv, const char *raw, size_t rawlen,
                 uint64_t *clock, unsigned *untouched) {
    if (__builtin_expect(px_srv.secondary != NULL, 0) && px_hook.on_route)
        return px_hook.route[__builtin_ctz(px_hook.on_route)](c, cmd, argc, argv, raw, rawlen, clock);
    return px_call(&(px_request){.be = px_srv.primary, .c = c, .mark = 1, .out = &c->out, .client_id = c->id,
                                 .cmd = cmd, .argc = argc, .argv = argv, .raw = raw, .rawlen = rawlen,
                                 .clock = clock, .untouched = untouched});
}

int px_forward(px_conn *c, fd_command *cmd, int argc, resp_arg *argv, const char *raw, size_t rawlen) {
    uint64_t clock = fd_mono_ns();
    return route(c, cmd, argc, argv, raw, rawlen, &clock, NULL);
}

void px_dispatch(px_conn *c, int argc, resp_arg *argv, const char *raw, size_t rawlen) {
    fd_command *cmd = fd_command_lookup(argv[0].ptr, argv[0].len);
    size_t out0 = c->out.len;                      /* a rejection's error: errorstats */
    note_lastcmd(c, cmd, argc, argv);
    px_srv.total_commands++;
    int g = PX_HOOK_GATE(received, c, cmd, argc, argv, raw, rawlen);
    if (g == PX_HOOK_REFUSED) goto rejected;
    if (g == PX_HOOK_TAKEN) return;
    if (!cmd) {
        /* a backend that is itself a Redis server answers what we don't know */
        if (px_srv.primary && px_srv.primary->b.ops->passthrough && c->authed) {
            g = PX_HOOK_GATE(checked, c, NULL, argc, argv, raw, rawlen);
            if (g == PX_HOOK_REFUSED) goto rejected;
            if (g == PX_HOOK_TAKEN) return;
            px_forward(c, NULL, argc, argv, raw, rawlen);
            return;
        }
        resp_add_unknown_command(&c->out, argc, argv);
        goto refused;
    }
    if ((cmd->arity > 0 && argc != cmd->arity) || (cmd->arity < 0 && argc < -cmd->arity)) {
        resp_add_errorf(&c->out, "ERR wrong number of arguments for '%s' command", cmd->name);
        goto refused;
    }
    if (!c->authed && !(cmd->flags & FD_CMD_NOAUTH)) {
        resp_add_error(&c->out, "NOAUTH Authentication required.");
        goto refused;
    }
    g = PX_HOOK_GATE(checked, c, cmd, argc, argv, raw, rawlen);
    if (g == PX_HOOK_REFUSED) goto rejected;
    if (g == PX_HOOK_TAKEN) return;
    px_execute(c, cmd, argc, argv, raw, rawlen);
    PX_HOOK_RUN(after);                  /* e.g. serve the keys this command (or EXEC, a script) made ready */
    return;
refused:                                 /* by the core's own checks */
    PX_HOOK_RUN(refused, c, cmd, out0);
rejected:                                /* e.g. Redis 7.0's rejected_calls, and the error in errorstats */
    PX_HOOK_RUN(rejected, cmd, c->out.data + out0, c->out.len >= out0 ? c->out.len - out0 : 0);
}

/* The one measurement (backends.h): t0 here, t1 when the reply is ready;
 * the record is updated once — here for a proxy handler, by px_call
 * (or the pending reply's completion) for a backend. */
int px_execute(px_conn *c, fd_command *cmd, int argc, resp_arg *argv, const char *raw, size_t rawlen) {
    uint64_t t0 = fd_mono_ns(), t1;
    size_t out0 = c->out.len;
    px_handler h = px_handler_of(cmd);
    if (!h && (cmd->flags & FD_CMD_STREAMKEYS)) h = px_hook_handler_of(cmd, argc, argv);  /* XREAD BLOCK */
    int owed = 0;
    unsigned untouched = 0;
    /* exec_start/exec_done (hooks.h): e.g. WATCH touches a proxy-served
     * write's keys as it is dispatched, a backend command's right after its
     * submit, before any other client runs; the event is built only when a
     * hook will see it */
    if (h) {
        if (PX_HOOK_ARMED(exec_start)) {
            px_exec e = {.c = c, .cmd = cmd, .argc = argc, .argv = argv, .handler = 1};
            PX_HOOK_RUN(exec_start, &e);
        }
        c->cur_raw = raw;
        c->cur_rawlen = rawlen;
        /* max-reply-bytes for a proxy-served reply (a script's, EXEC's, ...) */
        size_t limit0 = c->out.limit;      /* set by an enclosing command: kept */
        if (!limit0 && px_cfg.max_reply_bytes > 0) c->out.limit = out0 + (size_t)px_cfg.max_reply_bytes;
        h(c, argc, argv);
        c->out.limit = limit0;
        if (c->out.over) {
            c->out.over = 0;
            c->out.len = out0;
            fd_add_reply_too_big(&c->out, px_cfg.max_reply_bytes, 0);
        }
        t1 = fd_mono_ns();
        int is_err = c->out.len > out0 && c->out.data[out0] == '-';
        px_cmdstat_add(&px_cmd_proxy[cmd->id], t1 - t0, is_err);
    } else {
        t1 = t0;
        owed = route(c, cmd, argc, argv, raw, rawlen, &t1, &untouched);   /* recorded there */
        if (owed == 2 && c->muting) owed = 1;   /* CLIENT REPLY: dropped, not placed: as owed (hooks) */
    }
    const char *reply = c->out.len >= out0 ? c->out.data + out0 : NULL;
    size_t len = reply ? c->out.len - out0 : 0;
    if (px_hook_exec_due(owed, t1 - t0, reply, len)) {
        px_exec e = {.c = c, .cmd = cmd, .argc = argc, .argv = argv, .handler = h != NULL, .owed = owed,
                     .reply = reply, .len = len, .ns = t1 - t0, .untouched = untouched};
        px_hook_exec_done(&e);
    }
    return owed != 0;                    /* owed: measured on completion */
}
