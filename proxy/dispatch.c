/* dispatch.c — the central checks every command passes (known, arity, auth),
 * then routing: proxy handler, or the backend. Statistics are kept here. */
#include "server.h"
#include "backends.h"
#include "config.h"
#include "../storage/cmdargs.h"
#include "log.h"
#include "blocking.h"
#include "pubsub.h"
#include "multi.h"
#include "scripting.h"
#include "capture.h"   /* capture (issue 17) */
#include "slowlog.h"   /* SLOWLOG, LATENCY, errorstats */

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

/* Where a cluster sends the parts of an atomic unit (px_forward_unit). */
static const resp_arg *forced_route;
/* A detached request's reply also goes here (px_execute_into). */
static void (*capture_hook)(fd_pending *p, const char *reply, size_t len);
static void *capture_ud;

/* One backend (server.h): the A/B layer above (proxy/ab.c) calls it for
 * each side, with a tap for the comparison. */
int px_submit_to(px_backend *be, px_conn *c, resp_out *out, uint64_t client_id, fd_command *cmd,
                 int argc, resp_arg *argv, const char *raw, size_t rawlen, uint64_t *clock, const px_tap *tap) {
    const char *name = cmd ? cmd->name : "";
    fd_request r = {
        .cmd = cmd, .argc = argc, .argv = argv, .out = out,
        .now_ms = px_now_ms(), .is_write = cmd ? (cmd->flags & FD_CMD_WRITE) != 0 : 1,
        .raw = raw, .rawlen = rawlen, .client_id = client_id, .route_key = forced_route,
        .detached = c == NULL,
    };
    if (!be) {
        px_reply_status(out, FD_E_UNAVAILABLE, name);
        if (c && cmd) px_cmdstat_add(&px_cmd_proxy[cmd->id], 0, 1);
        if (tap) tap->fn(tap->ud, NULL, 0, 1);
        return 0;
    }
    if (cmd) {
        const char *why = be->support[cmd->id];
        if (why != FD_SERVED) {
            size_t before = out->len;
            if (why) resp_add_errorf(out, "ERR '%s' is not supported by frontdoor's %s backend: %s",
                                     cmd->name, be->b.ops->name, why);
            else resp_add_unknown_command(out, argc, argv);   /* a bug: test_command_coverage */
            if (c) px_cmdstat_add(&px_cmd_proxy[cmd->id], 0, 1);   /* refused by the proxy: its record */
            if (tap) tap->fn(tap->ud, out->data + before, out->len - before, 0);
            return 0;
        }
    }
    if (cmd && px_cfg.max_reply_bytes > 0) {
        /* a count-driven reply past max-reply-bytes is refused before any
         * backend builds it (a Redis backend would build it and die) */
        long long need = fd_reply_floor(cmd->id, argc, argv);
        if (need > px_cfg.max_reply_bytes) {
            size_t before = out->len;
            fd_add_reply_too_big(out, px_cfg.max_reply_bytes, need);
            if (c) px_cmdstat_add(&px_cmd_proxy[cmd->id], 0, 1);
            if (tap) tap->fn(tap->ud, out->data + before, out->len - before, 0);
            return 0;
        }
    }
    uint64_t ts = *clock;
    if (be->b.ops->async && (r.is_write ? !be->b.writes_inline : !be->b.ops->async_writes)) {
        if (!(r.pending = px_pending_push(c, cmd, ts))) {
            px_reply_status(out, FD_E_NOMEM, name);
            if (tap) tap->fn(tap->ud, NULL, 0, 1);
            return 0;
        }
        r.pending->be = be;
        if (tap) r.pending->tap = *tap;
        r.pending->in_submit = 1;
        if (c) r.pending->slow = px_slowlog_capture(c, cmd, argc, argv);
        be->inflight++;
        if (px_srv.atomic_collect && c) px_atomic_count(r.pending);
        if (capture_hook && !c) { r.pending->on_done = capture_hook; r.pending->ud = capture_ud; }
    }
    size_t before = out->len;
    /* max-reply-bytes: the reply may not grow out past before + the bound
     * (resp.h; an asynchronous backend carries it to its own buffer) */
    size_t limit0 = out->limit;
    if (!limit0 && px_cfg.max_reply_bytes > 0) out->limit = before + (size_t)px_cfg.max_reply_bytes;
    int st = be->b.ops->submit(&be->b, &r);
    out->limit = limit0;
    if (out->over) {
        out->over = 0;
        out->len = before;
        st = fd_add_reply_too_big(out, px_cfg.max_reply_bytes, 0) ? FD_E_NOMEM : FD_OK;
    }
    if (r.is_write && c) c->turn_wrote = 1;
    if (st == FD_PENDING && r.pending) {
        fd_pending *p = r.pending;
        *clock = fd_mono_ns();
        if (p->done) {                       /* answered inside submit: already in place */
            free(p);
            return 2;
        }
        p->in_submit = 0;
        p->t_ret_ns = *clock;
        return 1;
    }
    if (r.pending) {                         /* not taken: the backend did not touch it */
        be->inflight--;
        px_pending_drop(r.pending);
    }
    if (st == FD_PENDING) st = FD_E_INTERNAL;
    if (st != FD_OK) px_reply_status(out, st, name);
    uint64_t te = *clock = fd_mono_ns();
    int is_err = out->len > before && out->data[before] == '-';
    px_backend_record(be, c ? PX_REC_CLIENT : PX_REC_OWN, cmd, te - ts, is_err);   /* the one record update */
    if (be->b.ops->async) px_hist_add(&be->wait_live, te - ts);
    if (tap) tap->fn(tap->ud, out->data + before, out->len - before,
                     st == FD_E_UNAVAILABLE || st == FD_E_TIMEOUT ||
                     px_reply_is_unavailable(out->data + before, out->len - before));
    return 0;
}

int px_forward_unit(px_conn *c, px_backend *be, int argc, resp_arg *argv, const char *raw, size_t rawlen,
                    const resp_arg *route_key, int detached, const px_tap *tap) {
    uint64_t clock = fd_mono_ns();
    forced_route = route_key;
    if (!be) be = px_srv.primary;
    int owed;
    if (detached) {
        resp_out scratch;
        resp_out_init(&scratch, c->out.proto);
        owed = px_submit_to(be, NULL, &scratch, c->id, NULL, argc, argv, raw, rawlen, &clock, tap);
        resp_out_free(&scratch);
    } else {
        owed = px_submit_to(be, c, &c->out, c->id, NULL, argc, argv, raw, rawlen, &clock, tap);
    }
    forced_route = NULL;
    return owed;
}

typedef struct capture { resp_out out; int waiting; } capture;

static void capture_reply(fd_pending *p, const char *reply, size_t len) {
    capture *cp = p->ud;
    resp_out_raw(&cp->out, reply, len);
    cp->waiting = 0;
}

void px_execute_into(px_conn *c, fd_command *cmd, int argc, resp_arg *argv, resp_out *out) {
    c->lastcmd = cmd;
    uint64_t t0 = fd_mono_ns();
    px_handler h = px_handler_of(cmd);
    /* WATCH: a proxy-served write touches its keys as it starts; a backend's
     * decides from its reply below (complete here: multi.h) */
    if (h && (cmd->flags & FD_CMD_WRITE)) px_watch_touch(cmd, argc, argv);
    size_t out0 = out->len;
    if (!h && (cmd->flags & FD_CMD_STREAMKEYS) && px_block_stream_handler(cmd, argc, argv)) {
        /* Redis 7.0 (t_stream.c): a script's XREAD/XREADGROUP may not BLOCK */
        resp_add_errorf(out, "ERR %.*s command is not allowed with BLOCK option from scripts", (int)argv[0].len, argv[0].ptr);
        return;
    }
    if (h) {
        /* a proxy-served command writes to the client's output: lend it the script's */
        resp_out saved = c->out;
        c->out = *out;
        h(c, argc, argv);
        *out = c->out;
        c->out = saved;
        uint64_t ns = fd_mono_ns() - t0;
        px_cmdstat_add(&px_cmd_proxy[cmd->id], ns, 0);
        px_slowlog_after(NULL, cmd, argc, argv, ns, NULL, 0);
        return;
    }
    px_backend *be = px_srv.primary;
    uint64_t clock = t0;
    px_block_signal_cmd(cmd, argc, argv);                /* served once the script has run */
    if (!be || !be->b.ops->async) {
        px_submit_to(be, c, out, c->id, cmd, argc, argv, NULL, 0, &clock, NULL);   /* recorded there */
        px_watch_touch_reply(cmd, argc, argv, out->data + out0, out->len - out0);
        px_slowlog_after(NULL, cmd, argc, argv, clock - t0, NULL, 0);
        return;
    }
    /* asynchronous: a detached request whose reply lands here; the loop
     * runs until it does (the caller holds every other client) */
    capture cp = {.waiting = 1};
    resp_out_init(&cp.out, out->proto);
    capture_hook = capture_reply;
    capture_ud = &cp;
    resp_out scratch;
    resp_out_init(&scratch, out->proto);
    int owed = px_submit_to(be, NULL, &scratch, c->id, cmd, argc, argv, NULL, 0, &clock, NULL);
    capture_hook = NULL;
    capture_ud = NULL;
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
    /* every other client was held while it ran: none ran a command between
     * this write and its touch */
    px_watch_touch_reply(cmd, argc, argv, out->data + out0, out->len - out0);
    /* the backend recorded the detached request as its own: the script's
     * command counts in commandstats through the proxy's record */
    uint64_t ns = fd_mono_ns() - t0;
    px_cmdstat_add(&px_cmd_proxy[cmd->id], ns, 0);
    px_slowlog_after(NULL, cmd, argc, argv, ns, NULL, 0);
}

int px_forward(px_conn *c, fd_command *cmd, int argc, resp_arg *argv, const char *raw, size_t rawlen) {
    uint64_t clock = fd_mono_ns();
    return px_route_submit(c, cmd, argc, argv, raw, rawlen, &clock);
}

void px_dispatch(px_conn *c, int argc, resp_arg *argv, const char *raw, size_t rawlen) {
    PX_CAPTURE_HOOK(c, argc, argv, raw, rawlen);   /* capture (issue 17, proxy/capture.h) */
    fd_command *cmd = fd_command_lookup(argv[0].ptr, argv[0].len);
    size_t out0 = c->out.len;                      /* a rejection's error: errorstats */
    px_srv.total_commands++;
    if (px_srv.script_running && px_script_refuse_busy(c, cmd, argc, argv)) goto rejected;
    if (!cmd) {
        /* a backend that is itself a Redis server answers what we don't know */
        if (px_srv.primary && px_srv.primary->b.ops->passthrough && c->authed) {
            if (c->multi) { px_multi_queue(c, NULL, argc, argv); return; }
            px_forward(c, NULL, argc, argv, raw, rawlen);
            return;
        }
        resp_add_unknown_command(&c->out, argc, argv);
        px_multi_flag_error(c);
        goto rejected;
    }
    if ((cmd->arity > 0 && argc != cmd->arity) || (cmd->arity < 0 && argc < -cmd->arity)) {
        resp_add_errorf(&c->out, "ERR wrong number of arguments for '%s' command", cmd->name);
        px_multi_flag_error(c);
        goto rejected;
    }
    if (!c->authed && !(cmd->flags & FD_CMD_NOAUTH)) {
        resp_add_error(&c->out, "NOAUTH Authentication required.");
        px_multi_flag_error(c);
        goto rejected;
    }
    if (c->ps && px_pubsub_denied(c, cmd)) goto rejected;   /* RESP2 subscribed mode */
    if (c->multi && !(cmd->flags & FD_CMD_IN_MULTI)) {
        px_multi_queue(c, cmd, argc, argv);
        return;
    }
    px_execute(c, cmd, argc, argv, raw, rawlen);
    px_block_after_command();            /* serve the keys this command (or EXEC, a script) made ready */
    return;
rejected:                                /* Redis 7.0: rejected_calls, and the error in errorstats */
    if (cmd) px_rejected_calls[cmd->id]++;
    if (c->out.len > out0 && c->out.data[out0] == '-') px_errorstat_reply(c->out.data + out0, c->out.len - out0);
}

/* The one measurement (backends.h): t0 here, t1 when the reply is ready;
 * the record is updated once — here for a proxy handler, by px_submit_to
 * (or the pending reply's completion) for a backend. */
int px_execute(px_conn *c, fd_command *cmd, int argc, resp_arg *argv, const char *raw, size_t rawlen) {
    c->lastcmd = cmd;
    uint64_t t0 = fd_mono_ns(), t1;
    size_t out0 = c->out.len;
    px_handler h = px_handler_of(cmd);
    if (!h && (cmd->flags & FD_CMD_STREAMKEYS)) h = px_block_stream_handler(cmd, argc, argv);  /* XREAD BLOCK */
    /* WATCH (multi.h): a proxy-served write touches every key it names as
     * it is dispatched; a backend command right after its submit, before
     * any other client runs: from its reply when it was answered inside
     * submit (the embedded backends, also a LevelDB write that changed
     * nothing), every key it names when the reply is owed (asynchronous
     * backends, LevelDB's writer thread) */
    int watch = (cmd->flags & FD_CMD_WRITE) && px_srv.watched_keys;
    if (watch && h) px_watch_touch(cmd, argc, argv);
    int is_err;
    if (h) {
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
        is_err = c->out.len > out0 && c->out.data[out0] == '-';
        px_cmdstat_add(&px_cmd_proxy[cmd->id], t1 - t0, is_err);
        if (px_monitors) px_monitor_feed(c, cmd, argc, argv);
    } else {
        t1 = t0;
        int owed = px_route_submit(c, cmd, argc, argv, raw, rawlen, &t1);   /* records it */
        if (watch) {
            if (owed == 1 || c->out.len < out0) px_watch_touch(cmd, argc, argv);   /* owed: the safe side */
            else px_watch_touch_reply(cmd, argc, argv, c->out.data + out0, c->out.len - out0);
        }
        px_block_signal_cmd(cmd, argc, argv);            /* its keys' waiters will be tried */
        if (px_monitors) px_monitor_feed(c, cmd, argc, argv);
        if (owed) return 1;                              /* measured on completion */
        is_err = c->out.len > out0 && c->out.data[out0] == '-';
    }
    px_slowlog_after(c, cmd, argc, argv, t1 - t0, is_err ? c->out.data + out0 : NULL, c->out.len - out0);
    return 0;
}
