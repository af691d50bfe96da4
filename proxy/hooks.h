/* hooks.h — the points where features join the core. Module prefix: px_hook.
 *
 * The core (server.c, dispatch.c, pending.c, backends.c) knows no feature:
 * it calls the functions registered here, at fixed points of a command's and
 * a connection's life. A feature (capture, scripting, pub/sub, MULTI/WATCH,
 * blocking commands, the slow log, metrics, ACL later) registers its hooks
 * once, from its own px_<feature>_hooks(), which main.c calls in one list
 * before the server starts. Nothing is registered or removed afterwards
 * (hooks are armed and idled: below).
 *
 * Armed and idle hooks: a hook runs only while it is armed. PX_HOOK_ADD
 * registers a hook armed for good; PX_HOOK_ADD_IDLE registers it idle, and
 * its feature arms it with px_hook_arm(point, fn, 1) when it comes into use
 * (the first monitor, the first watched key, a capture started, a client
 * blocked...) and idles it with px_hook_arm(point, fn, 0) when it is no
 * longer in use. Each point keeps a bitmask of its armed hooks (bit i: the
 * i-th registered); the core tests it inline before any walk, so a point
 * whose hooks are all idle costs one predictable branch and no call.
 * A walk runs the hooks armed when it began: a hook armed or idled by an
 * earlier hook of the same walk takes effect at the next walk (so an idle
 * hook must still test its own state: it may run once after it idled).
 *
 * Contract for every hook:
 * - Hooks of one point run in registration order (main.c's list). At a
 *   gate point (received, checked) the first hook that does not return
 *   PX_HOOK_PASS ends the walk; at every other point all of them run, and
 *   none may depend on another's having run first.
 * - Arguments (argv, raw, reply) are borrowed: valid only during the call;
 *   a hook that keeps one copies it. A hook never frees them.
 * - A hook runs on the loop thread and must not block.
 * - Each point holds at most PX_HOOKS_MAX hooks: registering more aborts
 *   at start-up (a build-time list, not a runtime condition).
 */
#ifndef FRONTDOOR_HOOKS_H
#define FRONTDOOR_HOOKS_H

#include "server.h"
#include "commands.h"

/* What a gate hook did with the command. */
enum {
    PX_HOOK_PASS    = 0,   /* nothing: the core goes on */
    PX_HOOK_TAKEN   = 1,   /* answered or kept (MULTI queue): the core stops, not a rejection */
    PX_HOOK_REFUSED = 2,   /* answered with a refusal: counted in rejected_calls and errorstats */
};

#define PX_HOOKS_MAX 8   /* fits the points' armed bitmasks (unsigned) */

/* One command run (px_execute, or a script's px_execute_into). */
typedef struct px_exec {
    px_conn          *c;        /* the client (for a script's command: the script's caller) */
    int               script;   /* run by a script: its reply goes to the script, not c */
    const fd_command *cmd;
    int               argc;
    const resp_arg   *argv;
    int               handler;  /* served by a proxy handler (else by a backend) */
    int               owed;     /* exec_done: px_submit_to's result (1: the reply is owed) */
    const char       *reply;    /* exec_done: the reply when in place (NULL: unknown) */
    size_t            len;
    uint64_t          ns;       /* exec_done: how long it took (when not owed) */
    unsigned          untouched; /* exec_done: the keys the write left unchanged (fd_request.untouched,
                                  * known at submit even when the reply is owed) */
} px_exec;

/* cmd NULL: not in the command table (received), or passed through to a
 * Redis backend (checked). */
typedef int        (*px_hook_gate)(px_conn *c, fd_command *cmd, int argc, resp_arg *argv,
                                   const char *raw, size_t rawlen);
typedef void       (*px_hook_exec)(const px_exec *e);
typedef void       (*px_hook_reject)(const fd_command *cmd, const char *reply, size_t len);
typedef px_handler (*px_hook_handler)(const fd_command *cmd, int argc, const resp_arg *argv);
typedef void       (*px_hook_owed)(px_conn *c, fd_pending *p, const fd_command *cmd, int argc,
                                   const resp_arg *argv);
typedef void       (*px_hook_reply)(fd_pending *p, const char *reply, size_t len, uint64_t ns);
typedef void       (*px_hook_pending)(fd_pending *p);
typedef int        (*px_hook_test)(px_conn *c);
typedef void       (*px_hook_conn)(px_conn *c);
/* refused: the command (NULL when unknown) and where its error starts in
 * c->out; the hook may rewrite the error from there on */
typedef void       (*px_hook_refused)(px_conn *c, const fd_command *cmd, size_t out0);
typedef px_conn   *(*px_hook_owner)(void);
typedef void       (*px_hook_void)(void);
typedef int        (*px_hook_route)(px_conn *c, fd_command *cmd, int argc, resp_arg *argv,
                                    const char *raw, size_t rawlen, uint64_t *clock);

typedef struct px_hooks {
#define PX_HOOK_POINT(type, name) type name[PX_HOOKS_MAX]; int n_##name; unsigned on_##name;
    /* px_dispatch: a command as received, looked up, before the core's checks
     * (capture, script-busy) */
    PX_HOOK_POINT(px_hook_gate, received)
    /* px_dispatch: a command that passed known/arity/auth, before it runs
     * (pub/sub mode denial, MULTI queue; ACL) */
    PX_HOOK_POINT(px_hook_gate, checked)
    /* px_dispatch: the core refused the command (unknown, arity, NOAUTH) */
    PX_HOOK_POINT(px_hook_refused, refused)
    /* px_dispatch: a command was rejected (by the core or a gate); cmd
     * NULL when unknown; reply: what the client got (an error, or not) */
    PX_HOOK_POINT(px_hook_reject, rejected)
    /* a proxy handler for a command the table leaves to the backend (XREAD
     * BLOCK); the first non-NULL answer wins */
    PX_HOOK_POINT(px_hook_handler, handler)
    /* before a proxy handler runs a command (not called for a backend's) */
    PX_HOOK_POINT(px_hook_exec, exec_start)
    /* after a command ran or was submitted */
    PX_HOOK_POINT(px_hook_exec, exec_done)
    /* after a command ran (not owed) that took px_hook.slow_ns or more, or
     * whose reply is an error (a slow log keeps slow_ns up to date) */
    PX_HOOK_POINT(px_hook_exec, exec_slow)
    /* px_dispatch: after a client's command, whatever became of it */
    PX_HOOK_POINT(px_hook_void, after)
    /* a client's command got a pending reply (before submit) */
    PX_HOOK_POINT(px_hook_owed, owed)
    /* a pending reply arrived (before it is placed; p->conn may be NULL);
     * ns: since it was dispatched */
    PX_HOOK_POINT(px_hook_reply, reply)
    /* a pending reply is forgotten without a reply (the backend did not take it) */
    PX_HOOK_POINT(px_hook_pending, forget)
    /* a client connection was accepted, before its first read (e.g. the
     * ACL's default user decides whether it starts authenticated) */
    PX_HOOK_POINT(px_hook_conn, opened)
    /* px_conn_close: nonzero defers the close (the connection is in use) */
    PX_HOOK_POINT(px_hook_test, close_defer)
    /* px_conn_close: the connection goes (before its pending replies are orphaned) */
    PX_HOOK_POINT(px_hook_conn, closed)
    /* nonzero: the client's input is not processed now (held) */
    PX_HOOK_POINT(px_hook_test, held)
    /* nonzero: an idle client is not idle (the timeout directive spares it) */
    PX_HOOK_POINT(px_hook_test, busy)
    /* the client whose command runs the loop nested (a script), or NULL */
    PX_HOOK_POINT(px_hook_owner, nested)
    /* end of a loop turn, before the commit (not in a nested turn) */
    PX_HOOK_POINT(px_hook_void, turn_start)
    /* the router of a client's backend command while a secondary backend
     * is open (the A/B layer): the first registered takes it, with
     * px_call's contract for the client's reply. No secondary, or no
     * router: the core hands it to the primary itself. */
    PX_HOOK_POINT(px_hook_route, route)
    /* px_server_shutdown, once the listeners are closed */
    PX_HOOK_POINT(px_hook_void, shutdown)
#undef PX_HOOK_POINT
    uint64_t slow_ns;   /* exec_slow's threshold (UINT64_MAX: errors only) */
} px_hooks;

extern px_hooks px_hook;

/* Start-up: more than PX_HOOKS_MAX hooks at one point (a bug): abort. */
void px_hook_overflow(const char *point);

/* Register fn at a point, armed for good (its type is checked by the
 * assignment). */
#define PX_HOOK_ADD(point, fn) do {                                        \
        if (px_hook.n_##point >= PX_HOOKS_MAX) px_hook_overflow(#point);   \
        px_hook.on_##point |= 1u << px_hook.n_##point;                      \
        px_hook.point[px_hook.n_##point++] = (fn);                          \
    } while (0)

/* Register fn at a point, idle until px_hook_arm(point, fn, 1). */
#define PX_HOOK_ADD_IDLE(point, fn) do {                                   \
        if (px_hook.n_##point >= PX_HOOKS_MAX) px_hook_overflow(#point);   \
        px_hook.point[px_hook.n_##point++] = (fn);                          \
    } while (0)

/* Arm (on nonzero) or idle a registered hook; idempotent; a hook not
 * registered at that point: nothing. Cheap, but meant for a feature's state
 * changes (0 -> 1 user, 1 -> 0), not for every command. */
#define px_hook_arm(point, fn, on) do {                                    \
        for (int px_i_ = 0; px_i_ < px_hook.n_##point; px_i_++)            \
            if (px_hook.point[px_i_] == (fn)) {                             \
                if (on) px_hook.on_##point |= 1u << px_i_;                  \
                else px_hook.on_##point &= ~(1u << px_i_);                  \
            }                                                               \
    } while (0)

/* Any hook armed at a point (one load and a branch). */
#define PX_HOOK_ARMED(point) __builtin_expect(px_hook.on_##point != 0, 0)

/* Call every armed hook of a point with the given arguments. */
#define PX_HOOK_RUN(point, ...) do {                                       \
        if (PX_HOOK_ARMED(point))                                           \
            for (unsigned px_m_ = px_hook.on_##point; px_m_; px_m_ &= px_m_ - 1) \
                px_hook.point[__builtin_ctz(px_m_)](__VA_ARGS__);           \
    } while (0)

/* A gate point: the first result other than PX_HOOK_PASS, or PX_HOOK_PASS. */
#define PX_HOOK_GATE(point, c, cmd, argc, argv, raw, rawlen)               \
    (PX_HOOK_ARMED(point) ? px_hook_gate_run(px_hook.point, px_hook.on_##point, c, cmd, argc, argv, raw, rawlen) \
                          : PX_HOOK_PASS)
static inline int px_hook_gate_run(px_hook_gate *list, unsigned on, px_conn *c, fd_command *cmd, int argc,
                                   resp_arg *argv, const char *raw, size_t rawlen) {
    for (; on; on &= on - 1) {
        int r = list[__builtin_ctz(on)](c, cmd, argc, argv, raw, rawlen);
        if (r != PX_HOOK_PASS) return r;
    }
    return PX_HOOK_PASS;
}

/* A test point: any armed hook answers nonzero. */
#define PX_HOOK_TEST(point, c) (PX_HOOK_ARMED(point) && px_hook_test_any(px_hook.point, px_hook.on_##point, c))
static inline int px_hook_test_any(px_hook_test *list, unsigned on, px_conn *c) {
    for (; on; on &= on - 1)
        if (list[__builtin_ctz(on)](c)) return 1;
    return 0;
}

static inline px_handler px_hook_handler_of(const fd_command *cmd, int argc, const resp_arg *argv) {
    for (unsigned on = px_hook.on_handler; on; on &= on - 1) {
        px_handler h = px_hook.handler[__builtin_ctz(on)](cmd, argc, argv);
        if (h) return h;
    }
    return NULL;
}

static inline px_conn *px_hook_nested_owner(void) {
    for (unsigned on = px_hook.on_nested; on; on &= on - 1) {
        px_conn *o = px_hook.nested[__builtin_ctz(on)]();
        if (o) return o;
    }
    return NULL;
}

/* exec_slow is due: not owed, and slow (px_hook.slow_ns) or an error reply. */
static inline int px_hook_slow_due(int owed, uint64_t ns, const char *reply, size_t len) {
    return PX_HOOK_ARMED(exec_slow) && !owed &&
           __builtin_expect(ns >= px_hook.slow_ns || (len && reply[0] == '-'), 0);
}

/* A hook will see this command's exec_done/exec_slow (else the caller need
 * not even build the px_exec). */
static inline int px_hook_exec_due(int owed, uint64_t ns, const char *reply, size_t len) {
    return PX_HOOK_ARMED(exec_done) || px_hook_slow_due(owed, ns, reply, len);
}

/* exec_done, then exec_slow when the command (not owed) was slow or failed:
 * the threshold test is here, inline, so a fast success calls nothing. */
static inline void px_hook_exec_done(const px_exec *e) {
    PX_HOOK_RUN(exec_done, e);
    if (px_hook_slow_due(e->owed, e->ns, e->reply, e->len)) PX_HOOK_RUN(exec_slow, e);
}

#endif
