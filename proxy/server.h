/* server.h — the event loop, listeners, connections and the end-of-turn
 * flush. Module prefix: px_.
 *
 * A command's life: on_read() fills conn->rbuf → resp_parse() yields argv
 * slices into rbuf → px_dispatch() checks it against the command table and
 * runs it (proxy handler, or backend submit) → the reply is appended to
 * conn->out. Nothing is written to a socket until the end of the loop turn
 * (ev_prepare): the backend commits the turn's writes first (group commit),
 * then every connection touched in the turn is flushed. Bytes of conn->out
 * beyond conn->safe belong to commands whose writes are not yet committed and
 * are never sent.
 */
#ifndef FRONTDOOR_SERVER_H
#define FRONTDOOR_SERVER_H

#include <ev.h>
#include <stdint.h>
#include <time.h>
#include "../protocol/resp.h"
#include "../storage/backend.h"
#include "commands.h"

enum {
    PX_CONN_CLOSE_AFTER_REPLY = 1 << 0,  /* QUIT, protocol error: close once out is sent */
    PX_CONN_CLOSE_ASAP        = 1 << 1,  /* limit exceeded: close without sending more */
    PX_CONN_UNIX              = 1 << 2,
};

typedef struct px_conn {
    int        fd;
    /* transport: NULL = plain socket I/O; else TLS (proxy/tls.h), reads and
     * writes go through it (server.c conn_recv/conn_send) */
    struct px_tls_conn *tls;
    int        tls_read_wants_write;     /* a TLS read waits for the socket to be writable */
    uint64_t   id;
    int        flags;
    ev_io      rio, wio;
    /* input: unparsed bytes are rbuf[rpos..rlen) */
    char      *rbuf;
    size_t     rlen, rcap, rpos;
    resp_parser parser;
    /* output: out.data[wpos..safe) may be sent now; [safe..out.len) waits for commit */
    resp_out   out;
    size_t     wpos, safe;
    /* session */
    int        authed;
    struct px_acl_user *user;            /* proxy/acl.h: NULL = default */
    int        db;
    char      *name;
    char       addr[64], laddr[64];
    ev_tstamp  created, last_interaction;
    /* the last command run at top level (not EXEC's or a script's inner
     * ones, as Redis's c->lastcmd) and, for a container, its subcommand as
     * received, lower-cased ("" if none or longer than fits): CLIENT LIST's
     * cmd=parent|sub */
    const fd_command *lastcmd;
    char       lastsub[32];
    /* lists: all connections; connections touched in this turn */
    struct px_conn *prev, *next;
    struct px_conn *turn_next;
    int        in_turn;
    int        turn_wrote;               /* a backend write was submitted this turn */
    /* replies a backend owes, oldest first; each marks where in `out` its
     * reply goes (nothing at or after the first is sent before it arrives) */
    struct fd_pending *pend_head, *pend_tail;
    /* blocking commands and pub/sub (proxy/blocking.h, proxy/pubsub.h) */
    struct px_blk *blk;                  /* a blocking command in progress: input is not processed */
    struct px_ps  *ps;                   /* subscriptions (NULL: none ever) */
    int        monitor;                  /* MONITOR: gets every command */
    /* transactions (multi.c): the queue between MULTI and EXEC, the keys
     * this client WATCHes and whether one of them changed */
    struct px_multi *multi;
    struct px_watched *watched;
    int        watch_dirty;
    int        watch_wait;               /* WATCH waits for its keys' expiry times: input not processed */
    int        atomic;                   /* running EXEC or a script: blocking commands do not block */
    /* held while another client's transaction or script is atomic (multi.c) */
    int        held;
    struct px_conn *held_next;
    /* the command being dispatched, as received (for forwarding it) */
    const char *cur_raw;
    size_t     cur_rawlen;
    /* CLIENT REPLY (Redis 7.0 networking.c): `reply` holds PX_REPLY_* bits.
     * While a silenced command is in progress (muting: from its dispatch
     * until it is answered, a blocked one included), the bytes it adds from
     * mute_from on are dropped (px_conn_mute_cut) and the replies it owes
     * are consumed from the backend and dropped (fd_pending.muted); pushes
     * are kept (px_conn_push_begin/end). out_lent: c->out is a script's
     * buffer for the moment (px_execute_into): nothing is cut. */
    unsigned char reply;
    unsigned char muting;
    unsigned char out_lent;
    unsigned char reply_blocked;         /* a command run while muting or SKIP blocked: done at its answer */
    size_t     mute_from;
} px_conn;

enum {
    PX_REPLY_OFF       = 1 << 0,         /* CLIENT REPLY OFF: every reply dropped until ON */
    PX_REPLY_SKIP      = 1 << 1,         /* the command in progress is not answered */
    PX_REPLY_SKIP_NEXT = 1 << 2,         /* CLIENT REPLY SKIP ran: the next command is not answered */
};

/* An observer of one request's reply (px_submit_to): fn(ud, reply, len,
 * failed) once, when the reply is known; failed: the backend could not
 * answer (unavailable, timeout: not an answer to compare). The reply is
 * valid only during the call. */
typedef struct px_tap {
    void (*fn)(void *ud, const char *reply, size_t len, int failed);
    void  *ud;
} px_tap;

/* A reply owed by an asynchronous backend (storage/backend.h). Owned by the
 * proxy; freed when the backend completes it. `conn` is NULL once the client
 * has gone (the reply is then dropped). */
struct fd_pending {
    px_conn           *conn;
    /* Where the reply goes in conn->out. Delta-encoded so that completing,
     * dropping or sending is O(1) however deep the pipeline: the oldest
     * (pend_head) holds an offset in conn->out, every other one the bytes
     * after the previous one's mark; tail_abs is the absolute offset, kept
     * for pend_tail only (a new mark is placed after it). */
    size_t             off;
    size_t             tail_abs;
    struct fd_pending *prev, *next;
    fd_command        *cmd;              /* NULL for a passthrough command */
    struct px_backend *be;               /* the backend that owes it (its counters) */
    uint64_t           t_sub_ns, t_ret_ns; /* dispatched (commandstats and backend latency) / submit returned */
    px_tap             tap;              /* also told the reply (the A/B layer's comparison), if set */
    int                in_submit;        /* completed inside submit: freed by the caller */
    int                done;
    /* called with the reply when it arrives (before it is placed; conn may be NULL) */
    void             (*on_done)(fd_pending *p, const char *reply, size_t len);
    void              *ud;               /* on_done's */
    struct px_slowargs *slow;            /* its arguments for the slow log (proxy/slowlog.h), or NULL */
    int                muted;            /* owed to a silenced command (CLIENT REPLY): consumed, not placed */
};

typedef struct px_server {
    struct ev_loop *loop;
    struct px_backend *primary;          /* proxy/backends.h */
    struct px_backend *secondary;        /* A/B (NULL when ab-mode off) */
    struct px_backend *draining;         /* swapped out, finishing their requests */
    uint64_t        switches;            /* live backend swaps */
    time_t          switched_at;
    px_conn        *clients;             /* doubly linked */
    /* an atomic unit in progress on an asynchronous backend (multi.c):
     * other clients' commands wait until its replies are in */
    px_conn        *atomic_owner;
    int             atomic_collect;      /* submits now count into atomic_left */
    long            atomic_left;         /* replies of the unit still owed */
    px_conn        *held;                /* clients waiting for the unit (singly linked) */
    long            watched_keys;        /* keys some client WATCHes (0: writes skip the check) */
    int             script_running;      /* a Lua script runs (other clients may get -BUSY) */
    px_conn        *turn;                /* touched this turn (singly linked) */
    uint64_t        nclients, next_id;
    /* stats (INFO) */
    time_t          start_time;
    uint64_t        total_connections, rejected_connections, total_commands;
    uint64_t        net_input, net_output, turns, failed_commits;
    uint64_t        ops_sample_cmds; ev_tstamp ops_sample_time; double ops_per_sec;
} px_server;

extern px_server px_srv;

/* Start listening and open the backend; -1 with err on failure. */
int  px_server_init(char *err, size_t errlen);
/* SIGHUP: reload the configuration; a failed reload keeps the running setup. */
void px_server_reload(void);
void px_server_run(void);          /* until SIGTERM/SIGINT or px_server_stop */
void px_server_stop(void);
void px_server_shutdown(void);     /* commit, close backend, listeners, files */

/* The connection's output goes out at the end of this turn. */
void px_conn_touch(px_conn *c);
/* Unsent output over client-output-buffer-limit: mark the client to be
 * closed (logged once). Checked after every reply. */
void px_conn_check_output_limit(px_conn *c);
/* CLIENT REPLY: drop the bytes c->out holds from c->mute_from on (the
 * silenced command's so far), moving the reply marks past it back to it
 * (they are the silenced command's: dropped when they arrive). Nothing
 * while c is not muting or its output is lent. pending.c. */
void px_conn_mute_cut(px_conn *c);
/* A push (a pub/sub message or confirmation, an invalidation) is written
 * between these two: Redis 7.0 sends it whatever CLIENT REPLY says
 * (CLIENT_PUSHING). Cheap when c is not muting. */
static inline void px_conn_push_begin(px_conn *c) { if (c->muting) px_conn_mute_cut(c); }
static inline void px_conn_push_end(px_conn *c) { if (c->muting && !c->out_lent) c->mute_from = c->out.len; }
/* Start silencing c's command in progress from the end of its output
 * (CLIENT REPLY OFF, or a command dispatched while OFF or SKIP). */
static inline void px_conn_mute_start(px_conn *c) {
    if (!c->muting && !c->out_lent) { c->muting = 1; c->mute_from = c->out.len; }
}
/* Stop silencing: the bytes silenced so far are dropped first. */
static inline void px_conn_mute_stop(px_conn *c) {
    if (c->muting) { px_conn_mute_cut(c); c->muting = 0; }
}
/* Close now (the reply may be lost). */
void px_conn_close(px_conn *c);
/* A client whose blocking command ended: run the commands it sent meanwhile. */
void px_conn_resume(px_conn *c);

/* dispatch.c: run one parsed command. raw/rawlen: the command's bytes as
 * received when it came as multibulk (NULL for inline commands). */
void px_dispatch(px_conn *c, int argc, resp_arg *argv, const char *raw, size_t rawlen);
/* Run a command that passed the checks (known, arity, auth) — from
 * px_dispatch, EXEC and scripts — with its statistics. The reply goes to
 * c->out (or is owed there: returns 1). */
int  px_execute(px_conn *c, fd_command *cmd, int argc, resp_arg *argv, const char *raw, size_t rawlen);
/* Hand a command to the primary backend as a client's command would go
 * (A/B included); cmd NULL: passed through to a Redis backend. Returns 1
 * when the reply is owed. */
int  px_forward(px_conn *c, fd_command *cmd, int argc, resp_arg *argv, const char *raw, size_t rawlen);
/* Redis's reply to a command refused for want of memory (frontdoor's own
 * allocations failed): the text for resp_add_error, and the whole reply. */
#define PX_OOM_TEXT "OOM command not allowed when used memory > 'maxmemory'."
#define PX_OOM_REPLY "-" PX_OOM_TEXT "\r\n"

/* call.c: one request to one backend — the one way the proxy hands a
 * command over (a client's command, an A/B copy, an atomic unit's part, a
 * script's request, a blocking retry, frontdoor's own reads, the swap
 * probe). Everything it needs travels in the request; it is read only
 * during px_call (argv, raw and out are borrowed likewise). */
typedef struct px_request {
    struct px_backend *be;       /* NULL: unavailable (the reply says so) */
    px_conn        *c;           /* the client it runs for (its turn_wrote), or NULL */
    unsigned        mark : 1;    /* the reply is c's: owed at a mark in c's output, counted as c's command */
    unsigned        detached : 1;   /* nobody's output: the backend must not hold it for a commit */
    unsigned        blocking : 1;   /* on a backend connection of its own (submit_blocking) */
    unsigned        unchecked : 1;  /* do not consult the backend's support table */
    unsigned        misc : 1;    /* counted without its command (be->misc: blocking retries) */
    resp_out       *out;         /* where a reply given at once goes (c's output, or a scratch) */
    uint64_t        client_id;   /* the backend's per-client ordering */
    fd_command     *cmd;         /* NULL: passed through (not in the table) */
    int             argc;
    resp_arg       *argv;
    const char     *raw;         /* as received (multibulk), or NULL */
    size_t          rawlen;
    const resp_arg *route_key;   /* a part of an atomic unit: where a cluster sends it (NULL: by its keys) */
    const px_tap   *tap;         /* told the reply once: at once, or when the owed reply arrives */
    fd_pending    **handle;      /* set to the pending reply while it is owed (else NULL) */
    uint64_t       *clock;       /* ns: in, when it started; out, the last reading. NULL: now */
    unsigned       *untouched;   /* out (may be NULL): the backend's fd_request.untouched (set
                                  * during submit, even when the reply is then owed), else 0 */
} px_request;

/* Hand q over. A reply given at once is written to q->out (with c and
 * mark: c's output) and told to the tap; an owed one goes to its mark (or
 * nowhere) and to the tap when it arrives. Every request is accounted to
 * q->be once. Returns 0 when the reply was written, 1 when it is owed, 2
 * when an owed reply was completed inside submit (in place: with a mark,
 * the last bytes of c's output; measured and logged by the completion). */
int  px_call(const px_request *q);
/* A reply handed to a callback: fn(ud, reply, len) exactly once, possibly
 * before this returns (the reply is valid only during fn); proto: the
 * reply's protocol. q->out and q->tap are px_call_reply's own. */
typedef void (*px_reply_fn)(void *ud, const char *reply, size_t len);
void px_call_reply(const px_request *q, int proto, px_reply_fn fn, void *ud);
/* Run one command on the primary outside any client's pipeline: the reply
 * (whole RESP, protocol `proto`) goes to done(arg, reply, len) — inside
 * this call for an embedded backend, later for an asynchronous one (then
 * *handle, if given, is the request's pending handle until done runs). A
 * backend error status is turned into its error reply. `blocking` uses the
 * backend's submit_blocking. c (may be NULL) is the client the reply is for
 * (its writes must be committed before its replies go). Not mirrored;
 * accounted without its command (be->misc), the support table not
 * consulted (blocking retries, PUBSUB counts, SCRIPT KILL). */
void px_call_backend(px_conn *c, const fd_command *cmd, int argc, resp_arg *argv, const char *raw,
                     size_t rawlen, int proto, int blocking, px_reply_fn done, void *arg, fd_pending **handle);
/* One part of an atomic unit for a Redis backend (MULTI ... EXEC as one
 * block on the client's backend connection): route_key says where a cluster
 * sends it (NULL: a keyless unit, all its parts to slot 0's master); detached: its reply is dropped (the client got
 * +QUEUED already), else it is the client's; tap (may be NULL) is told it.
 * be: the backend (NULL: the primary; the A/B layer sends a unit's copy to
 * the secondary). Returns 1 when owed. */
int  px_forward_unit(px_conn *c, struct px_backend *be, int argc, resp_arg *argv, const char *raw, size_t rawlen,
                     const resp_arg *route_key, int detached, const px_tap *tap);
/* Run a checked command for a script (redis.call): its one reply goes to
 * `out` (the script's protocol), synchronously — on an asynchronous backend
 * the loop runs nested until the reply is in, other clients held. */
void px_execute_into(px_conn *c, fd_command *cmd, int argc, resp_arg *argv, resp_out *out);
/* server.c: parse and run what the client sent (after it was held). */
void px_conn_process_input(px_conn *c);
/* Where `out` may be sent up to once the turn's writes are committed. */
size_t px_conn_sendable(const px_conn *c);
/* Bytes were removed from the front of c->out: move the reply markers. */
void px_conn_out_shifted(px_conn *c, size_t n);
/* The client is gone: orphan its pending replies. */
void px_conn_orphan_pending(px_conn *c);
/* pending.c: a reply mark at the end of c->out; NULL when out of memory.
 * With c NULL: a reply nobody reads (an A/B mirror copy). */
fd_pending *px_pending_push(px_conn *c, fd_command *cmd, uint64_t t0_ns);
uint64_t    px_mono_ns(void);
int         px_reply_is_unavailable(const void *reply, size_t len);
void        px_pending_drop(fd_pending *p);
/* The host's completion of a pending reply (storage/host.h: fd_host). */
void        px_pending_reply(fd_pending *p, const void *reply, size_t len);
void        px_pending_error(fd_pending *p, int status);
/* Current wall clock in ms (cached per loop turn by libev). */
int64_t px_now_ms(void);

/* reply.c: an error reply from a status code (storage/status.h), "%s" in
 * its text formatted with the command name. */
void px_reply_status(resp_out *o, int status, const char *cmdname);
/* reply.c: the reply to "<CMD> HELP": Redis's heading, then `lines`
 * (NULL-terminated), one status line each. */
void px_reply_help(px_conn *c, const char *cmd, const char *const *lines);

#endif
