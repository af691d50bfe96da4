/* scripting.c — the Lua engine's host (scripting.h). */
#include "scripting.h"
#include "tracking.h"
#include "hooks.h"
#include "acl.h"
#include "script.h"
#include "builtin.h"
#include "backends.h"
#include "config.h"
#include "log.h"
#include "multi.h"
#include "blocking.h"
#include "ab.h"
#include "commands.h"

#include <stdlib.h>
#include "storage/value/rdb.h"

#include <string.h>

/* Why FUNCTION/FCALL are refused on the backends frontdoor's engine serves. */
#define NO_FUNCTIONS "Redis functions are not implemented here (EVAL/EVALSHA scripts are; a redis or " \
                     "redis-cluster backend runs functions)"

static fd_script_engine *engine;
static px_conn *running;          /* the client whose script runs */
static void script_arm(int on);    /* its hooks, armed while a script runs */
static px_backend *target;        /* redis.call's backend when not the primary (an A/B side) */

typedef struct twait { resp_out *out; int waiting; } twait;

static void twait_tap(void *ud, const char *reply, size_t len, int failed) {
    twait *w = ud;
    (void)failed;
    if (len) resp_out_raw(w->out, reply, len);
    else resp_add_error(w->out, "ERR backend unavailable");
    w->waiting = 0;
}

/* redis.call against `target` (an A/B side that is not the primary): a
 * backend command goes to it directly, its one reply into out — on an
 * asynchronous backend the loop runs nested until it is in (other clients
 * are held by the caller). Not counted as a client's command. */
static void target_call(px_conn *c, fd_command *cmd, int argc, resp_arg *argv, resp_out *out) {
    uint64_t clock = fd_mono_ns();
    resp_out scratch;
    resp_out_init(&scratch, out->proto);
    twait w = {out, 1};
    px_tap t = {twait_tap, &w};
    px_call(&(px_request){.be = target, .out = &scratch, .client_id = c->id, .cmd = cmd, .argc = argc, .argv = argv,
                          .detached = 1, .tap = &t, .clock = &clock});
    /* a Redis backend writes its requests at the end of a turn, which does
     * not come while a script runs (server.c): send this one now, and again
     * after each nested turn (a connection may hold its writes until the
     * replies to its last write are in: storage/redis_conn.h) */
    int flush = target->b.ops->passthrough && target->b.ops->end_turn;
    if (w.waiting && flush) target->b.ops->end_turn(&target->b);
    if (w.waiting) {
        int rio = ev_is_active(&c->rio);
        if (rio) ev_io_stop(px_srv.loop, &c->rio);
        while (w.waiting) {
            ev_run(px_srv.loop, EVRUN_ONCE);
            if (w.waiting && flush) target->b.ops->end_turn(&target->b);
        }
        if (rio && !(c->flags & (PX_CONN_CLOSE_AFTER_REPLY | PX_CONN_CLOSE_ASAP))) ev_io_start(px_srv.loop, &c->rio);
    }
    resp_out_free(&scratch);
}

static int host_call(void *ud, int argc, const resp_arg *argv, int resp, int check_only, resp_out *out) {
    (void)ud;
    px_conn *c = running;
    fd_command *cmd = fd_command_lookup(argv[0].ptr, argv[0].len);
    if (check_only) {
        if (!cmd) { resp_add_error(out, "ERR Invalid command passed to redis.acl_check_cmd()"); return 0; }
        resp_add_int(out, px_acl_check(c, cmd, argc, (resp_arg *)argv, NULL) == PX_ACL_OK);
        return 0;
    }
    if (!cmd) { resp_add_error(out, "ERR Unknown Redis command called from script"); return 0; }
    if ((cmd->arity > 0 && argc != cmd->arity) || (cmd->arity < 0 && argc < -cmd->arity)) {
        resp_add_error(out, "ERR Wrong number of args calling Redis command from script");
        return 0;
    }
    if (cmd->flags & FD_CMD_NOSCRIPT) {
        resp_add_error(out, "ERR This Redis command is not allowed from script");
        return 0;
    }
    int acl_pos, acl = px_acl_check(c, cmd, argc, (resp_arg *)argv, &acl_pos);   /* the same check as dispatch's */
    if (acl != PX_ACL_OK) {
        px_acl_reply_script(c, out, acl, cmd, argc, (resp_arg *)argv, acl_pos);
        return 0;
    }
    int write = (cmd->flags & FD_CMD_WRITE) != 0;
    if (write && (fd_script_flags(engine) & FD_SCRIPT_F_NO_WRITES)) {
        resp_add_error(out, "ERR Write commands are not allowed from read-only scripts.");
        return 0;
    }
    out->proto = resp;
    size_t before = out->len;
    if (target && !px_handler_of(cmd)) target_call(c, cmd, argc, (resp_arg *)argv, out);
    else px_execute_into(c, cmd, argc, (resp_arg *)argv, out);
    if (out->len == before) return -1;
    return write && out->data[before] != '-' ? FD_SCRIPT_CALL_WRITE : 0;
}

static void host_busy(void *ud, long long elapsed_ms, int first_call) {
    (void)ud;
    (void)elapsed_ms; (void)first_call;   /* the engine logs "Slow script detected" */
    px_conn *c = running;
    /* serve the others (-BUSY, SCRIPT KILL) without the script's own client;
     * the clients an asynchronous backend's unit held get -BUSY now */
    int rio = ev_is_active(&c->rio);
    if (rio) ev_io_stop(px_srv.loop, &c->rio);
    px_conn *owner = px_srv.atomic_owner;
    px_srv.atomic_owner = NULL;
    px_atomic_resume();
    ev_run(px_srv.loop, EVRUN_NOWAIT);
    px_srv.atomic_owner = owner;
    if (owner) px_atomic_arm();
    if (rio && !(c->flags & (PX_CONN_CLOSE_AFTER_REPLY | PX_CONN_CLOSE_ASAP))) ev_io_start(px_srv.loop, &c->rio);
}

static void host_log(void *ud, int level, const char *msg, size_t len) {
    (void)ud;
    px_log(level, "%.*s", (int)len, msg);
}

/* The FUNCTION libraries in the primary's store (fd_backend_ops.aux_get/
 * aux_put, record "functions"): FUNCTION DUMP's payload, saved after every
 * change, loaded when the engine starts. The Redis backends have no such
 * ops: their servers keep the libraries. */
#define FUNCTIONS_RECORD "functions"

/* 1 while the store could not tell its libraries yet (mongodb: the server
 * has not answered since the start): loading is tried again at each use,
 * and FUNCTION, FCALL and FCALL_RO answer "backend unavailable" meanwhile
 * (a function not found yet would be a wrong answer; saving would
 * overwrite the stored libraries). */
static int functions_unknown;

static void functions_load(fd_script_engine *e) {
    px_backend *be = px_srv.primary;
    functions_unknown = 0;
    if (!be || !be->b.ops->aux_get) return;
    char *v = NULL, err[256];
    size_t vl = 0;
    int s = be->b.ops->aux_get(&be->b, FUNCTIONS_RECORD, &v, &vl);
    if (s == FD_E_UNAVAILABLE) functions_unknown = 1;
    else if (s == FD_OK && fd_script_functions_restore(e, v, vl, err, sizeof err) < 0)
        px_log(PX_LOG_WARNING, "the stored FUNCTION libraries could not be loaded: %s", err);
    else if (s != FD_OK && s != FD_NOTFOUND)
        px_log(PX_LOG_WARNING, "the stored FUNCTION libraries could not be read: %s", fd_strerror(s));
    free(v);
}

/* After FUNCTION LOAD/DELETE/FLUSH/RESTORE changed the libraries. FD_OK or
 * the store's error (the client gets it instead of the command's reply). */
static int functions_save(fd_script_engine *e) {
    px_backend *be = px_srv.primary;
    if (!be || !be->b.ops->aux_put) return FD_OK;
    fd_rdb_buf b = {0};
    size_t libs;
    fd_script_function_count(e, &libs);
    int s = FD_E_NOMEM;
    if (!libs) s = be->b.ops->aux_put(&be->b, FUNCTIONS_RECORD, NULL, 0);
    else if (fd_script_functions_dump(e, &b) == 0) s = be->b.ops->aux_put(&be->b, FUNCTIONS_RECORD, b.p, b.len);
    fd_rdb_buf_free(&b);
    return s;
}

static fd_script_engine *get_engine(void) {
    if (!engine) {
        fd_script_host h = {.call = host_call, .busy = host_busy, .log = host_log};
        engine = fd_script_new(&h);
        if (engine) functions_load(engine);
    } else if (functions_unknown && !fd_script_running(engine)) {
        functions_load(engine);
    }
    return engine;
}

px_conn *px_script_client(void) { return running; }

int px_script_busy_now(void) { return engine && running && fd_script_busy(engine); }

int px_script_body(const resp_arg *sha, const char **body, size_t *len) {
    return engine ? fd_script_body(engine, sha->ptr, sha->len, body, len) : 0;
}

void px_script_shutdown(void) {
    if (engine && !fd_script_running(engine)) fd_script_free(engine);
    engine = NULL;
}

static void kill_done(void *arg, const char *reply, size_t len) { px_pending_reply(arg, reply, len); }

/* Scripts run where the backend is: a Redis server runs its own. SCRIPT KILL
 * and FUNCTION KILL go on a connection of their own (lent as for a blocking command): on the
 * pooled one it would queue behind the busy script it is meant to stop. */
static int forwarded(px_conn *c, int argc, resp_arg *argv) {
    px_backend *be = px_srv.primary;
    if (!be || !be->b.ops->passthrough) return 0;
    fd_command *cmd = fd_command_lookup(argv[0].ptr, argv[0].len);
    if (cmd && (cmd->id == FD_CMD_script || cmd->id == FD_CMD_function) && argc == 2 && resp_arg_is(&argv[1], "kill") &&
        be->b.ops->submit_blocking) {
        fd_pending *mark = px_pending_push(c, cmd, fd_mono_ns());
        if (!mark) { px_reply_status(&c->out, FD_E_NOMEM, cmd->name); return 1; }
        px_call_backend(c, cmd, argc, argv, c->cur_raw, c->cur_rawlen, c->out.proto, 1, kill_done, mark, NULL);
        return 1;
    }
    /* ACL: a restricted user's script runs in frontdoor's engine, where
     * each redis.call is checked (acl.h); the backend's Redis would run it
     * as frontdoor's upstream user */
    if (cmd && (cmd->id == FD_CMD_eval || cmd->id == FD_CMD_evalsha || cmd->id == FD_CMD_eval_ro ||
                cmd->id == FD_CMD_evalsha_ro) && px_acl_restricted(c))
        return 0;
    if (cmd) px_watch_touch_if_write(cmd, argc, argv);   /* its keys, for WATCH (multi.h) */
    px_forward(c, cmd, argc, argv, c->cur_raw, c->cur_rawlen);
    px_tracking_write(c, cmd, argc, argv);               /* its keys' invalidations (tracking.h) */
    return 1;
}

/* Run EVAL & co. (and FCALL, FCALL_RO) in frontdoor's engine against `be` (the primary, or an A/B
 * side: then redis.call goes to it, scripting.h px_script_run_on); the reply
 * into out. On an asynchronous backend every other client is held meanwhile. */
static void run_eval(px_conn *c, px_backend *be, int argc, resp_arg *argv, resp_out *out) {
    fd_script_engine *e = get_engine();
    if (!e) { resp_add_error(out, "ERR the Lua engine could not start (out of memory)"); return; }
    if (fd_script_running(e)) {          /* EVAL from a script is refused before it gets here */
        resp_add_error(out, FD_SCRIPT_BUSY_ERR);
        return;
    }
    fd_script_set_busy_threshold(e, px_cfg.busy_reply_threshold);
    int hold = be && be->b.ops->async && !px_srv.atomic_owner;
    if (hold) {
        px_srv.atomic_owner = c;
        px_atomic_arm();
    }
    int was_atomic = c->atomic;
    c->atomic = 1;
    running = c;
    /* a Redis backend as the primary is reached as a target too: its
     * scripts run here only for a restricted ACL user (forwarded()) */
    target = be != px_srv.primary || (be && be->b.ops->passthrough) ? be : NULL;
    px_srv.script_running = 1;
    script_arm(1);
    fd_command *cmd = fd_command_lookup(argv[0].ptr, argv[0].len);
    int fcall = cmd && (cmd->id == FD_CMD_fcall || cmd->id == FD_CMD_fcall_ro);
    if (fcall ? fd_script_fcall(e, argc, argv, out) : fd_script_eval(e, argc, argv, out)) {
        px_log(PX_LOG_WARNING, "out of memory for a script's reply to client %llu: closing it", (unsigned long long)c->id);
        c->flags |= PX_CONN_CLOSE_ASAP;
    }
    running = NULL;
    target = NULL;
    px_srv.script_running = 0;
    script_arm(0);
    c->atomic = was_atomic;
    if (hold) {
        px_srv.atomic_owner = NULL;
        px_atomic_resume();
    }
}

void px_script_run_on(px_backend *be, px_conn *c, int argc, resp_arg *argv, resp_out *out) {
    fd_command *cmd = fd_command_lookup(argv[0].ptr, argv[0].len);
    if (cmd && cmd->id == FD_CMD_script) {
        fd_script_engine *e = get_engine();
        if (!e) resp_add_error(out, "ERR the Lua engine could not start (out of memory)");
        else fd_script_script_cmd(e, argc, argv, out);
        return;
    }
    if (!cmd || cmd->id == FD_CMD_function) {
        fd_reply_unsupported(out, cmd ? cmd->name : "function", be ? be->b.ops->name : "", NO_FUNCTIONS);
        return;
    }
    run_eval(c, be, argc, argv, out);
}

/* A/B on: the layer (proxy/ab.c) picks the side and runs the copy. The
 * declared keys of a script count as written for WATCH (multi.h). */
static int routed(px_conn *c, int argc, resp_arg *argv) {
    if (!px_ab_routes()) return 0;
    fd_command *cmd = fd_command_lookup(argv[0].ptr, argv[0].len);
    if (!cmd) return 0;
    px_watch_touch_if_write(cmd, argc, argv);
    px_forward(c, cmd, argc, argv, c->cur_raw, c->cur_rawlen);
    return 1;
}

void px_cmd_eval(px_conn *c, int argc, resp_arg *argv) {
    if (routed(c, argc, argv)) return;
    if (forwarded(c, argc, argv)) return;
    run_eval(c, px_srv.primary, argc, argv, &c->out);
}

void px_cmd_script(px_conn *c, int argc, resp_arg *argv) {
    if (argc == 2 && resp_arg_is(&argv[1], "help")) {
        px_reply_help(c, "SCRIPT", fd_script_help_lines);
        return;
    }
    if (resp_arg_is(&argv[1], "debug")) {   /* never to a Redis backend: its debugger would take the shared connection */
        fd_script_debug_cmd(argc, argv, &c->out);
        return;
    }
    if (!(argc == 2 && resp_arg_is(&argv[1], "kill")) && routed(c, argc, argv)) return;
    if (forwarded(c, argc, argv)) return;
    fd_script_engine *e = get_engine();
    if (!e) { resp_add_error(&c->out, "ERR the Lua engine could not start (out of memory)"); return; }
    fd_script_script_cmd(e, argc, argv, &c->out);
}

/* FUNCTION / FCALL / FCALL_RO: on a Redis backend, forwarded (a cluster
 * sends FUNCTION to every master, FCALL by its keys: storage/redis_cluster.c);
 * elsewhere served by frontdoor's engine (script.h, functions). Under A/B
 * the FUNCTION command itself is refused (the two sides' library sets would
 * be one more thing to keep equal); FCALL runs here against the side. */
void px_cmd_function(px_conn *c, int argc, resp_arg *argv) {
    fd_command *cmd = fd_command_lookup(argv[0].ptr, argv[0].len);
    if (cmd && cmd->id == FD_CMD_function && argc == 2 && resp_arg_is(&argv[1], "help")) {
        px_reply_help(c, "FUNCTION", fd_script_function_help_lines);
        return;
    }
    if (routed(c, argc, argv)) return;
    if (forwarded(c, argc, argv)) return;
    fd_script_engine *e = get_engine();
    if (!e) { resp_add_error(&c->out, "ERR the Lua engine could not start (out of memory)"); return; }
    if (functions_unknown) {   /* the libraries are not known yet: no answer rather than a wrong one */
        px_reply_status(&c->out, FD_E_UNAVAILABLE, cmd ? cmd->name : "function");
        return;
    }
    if (cmd && cmd->id == FD_CMD_function) {
        int changed = 0;
        size_t mark = c->out.len;
        if (fd_script_function_cmd(e, argc, argv, &c->out, &changed) < 0) c->flags |= PX_CONN_CLOSE_ASAP;
        int s = changed ? functions_save(e) : FD_OK;
        if (s != FD_OK) {   /* in memory but not stored: say so rather than +OK */
            c->out.len = mark;
            px_reply_status(&c->out, s, "function");
        }
        return;
    }
    run_eval(c, px_srv.primary, argc, argv, &c->out);
}

int px_script_refuse_busy(px_conn *c, const fd_command *cmd, int argc, resp_arg *argv) {
    if (!engine || !running || c == running || !fd_script_busy(engine)) return 0;
    /* Redis 7.0's allowed-while-busy transaction commands (CMD_ALLOW_BUSY):
     * MULTI, DISCARD, WATCH, UNWATCH run (or queue) as usual */
    if (cmd && (cmd->id == FD_CMD_multi || cmd->id == FD_CMD_discard ||
                cmd->id == FD_CMD_watch || cmd->id == FD_CMD_unwatch)) return 0;
    const char *busy = (fd_script_flags(engine) & FD_SCRIPT_F_FUNCTION) ? FD_SCRIPT_BUSY_FN_ERR : FD_SCRIPT_BUSY_ERR;
    if (cmd && cmd->id == FD_CMD_exec) {
        /* refused EXEC discards the transaction and says why (execCommandAbort) */
        resp_add_errorf(&c->out, "EXECABORT Transaction discarded because of: %s", busy);
        px_multi_release(c);
        return 1;
    }
    if (cmd && cmd->id == FD_CMD_script && argc == 2 && resp_arg_is(&argv[1], "kill")) {
        fd_script_kill(engine, &c->out);
        return 1;
    }
    if (cmd && cmd->id == FD_CMD_function && argc == 2 &&
        (resp_arg_is(&argv[1], "kill") || resp_arg_is(&argv[1], "stats"))) {
        int changed;
        fd_script_function_cmd(engine, argc, argv, &c->out, &changed);
        return 1;
    }
    resp_add_error(&c->out, busy);
    px_multi_flag_error(c);            /* a refusal while queueing aborts the EXEC (flagTransaction) */
    return 1;
}

/* ------------------------------------------------------------ hooks (hooks.h) */

static int script_received(px_conn *c, fd_command *cmd, int argc, resp_arg *argv, const char *raw, size_t rawlen) {
    (void)raw; (void)rawlen;
    return px_srv.script_running && px_script_refuse_busy(c, cmd, argc, argv) ? PX_HOOK_REFUSED : PX_HOOK_PASS;
}

/* its script still runs: closed after it */
static int script_close_defer(px_conn *c) { return c == running; }

static void script_arm(int on) {
    px_hook_arm(received, script_received, on);
    px_hook_arm(close_defer, script_close_defer, on);
    px_hook_arm(nested, px_script_client, on);
}

/* all three armed only while a script runs (run_eval) */
void px_scripting_hooks(void) {
    PX_HOOK_ADD_IDLE(received, script_received);
    PX_HOOK_ADD_IDLE(close_defer, script_close_defer);
    PX_HOOK_ADD_IDLE(nested, px_script_client);
}
