/* slowlog.h — SLOWLOG, LATENCY and INFO errorstats. Module prefixes:
 * px_slowlog_, px_latency_, px_errorstat_.
 *
 * They read the one measurement of a command (proxy/backends.h): the span
 * and the error flag the code that updated the command's record has at
 * hand, from dispatch until the reply is in the client's buffer (the span
 * commandstats' usec counts). Where:
 *   - proxy/dispatch.c px_execute: a command answered at once (proxy
 *     handler or synchronous backend): the core's exec_slow hook point
 *     (hooks.h) calls in only when it took px_hook.slow_ns or more (kept
 *     by px_slowlog_apply) or failed, then px_slowlog_after();
 *   - px_submit_to: an asynchronous backend's request gets a copy of its
 *     arguments (px_slowlog_capture, only while the slow log is on), and
 *     proxy/pending.c's completion calls px_slowlog_pending();
 *   - px_execute_into (scripts' redis.call): logged as Redis logs them, with
 *     client "?:0" and no name;
 *   - px_dispatch's rejections (unknown command, arity, NOAUTH, ...):
 *     px_errorstat_reply() and px_rejected_calls.
 *
 * What Redis 7.0 does and we do too: an entry is [id, unix time, duration
 * µs, args (at most 32; the 32nd says "... (N more arguments)"; each cut at
 * 128 bytes with "... (N more bytes)"), "ip:port", client name]; AUTH's,
 * HELLO AUTH's and CONFIG SET requirepass's secrets are "(redacted)"; EXEC
 * is not logged (its commands are); slowlog-log-slower-than < 0 or
 * slowlog-max-len 0 turns it off. The latency monitor keeps, per event
 * ("command", "fast-command" for FD_CMD_FAST commands), 160 one-per-second
 * samples of durations >= latency-monitor-threshold ms (0 = off).
 * LATENCY HISTOGRAM answers from the commands' records (Redis's shape:
 * per command, calls and cumulative counts at power-of-two µs).
 * Errorstats: every error reply sent to a client counts under its first
 * word (the code, "ERR" when it has none within 32 bytes); at most 128
 * distinct codes are kept (later new codes count only in the total).
 */
#ifndef FRONTDOOR_SLOWLOG_H
#define FRONTDOOR_SLOWLOG_H

#include "server.h"
#include "config.h"

/* A copy of one command's arguments, cut and redacted as an entry keeps
 * them, with its client's address and name. Owned by whoever holds it. */
typedef struct px_slowargs px_slowargs;

/* The slow log's and the latency monitor's thresholds changed (start-up,
 * CONFIG SET): px_hook.slow_ns, the least duration worth a call. */
void px_slowlog_apply(void);
/* The slow part of px_slowlog_after: always safe to call. */
void px_slowlog_slow(px_conn *c, const fd_command *cmd, int argc, const resp_arg *argv,
                     uint64_t ns, const char *err, size_t errlen);
/* A command that completed now, `ns` after it was dispatched; c NULL: a
 * script's command. `err`: its reply when it is an error sent to a client
 * (errorstats counts it), else NULL. */
static inline void px_slowlog_after(px_conn *c, const fd_command *cmd, int argc, const resp_arg *argv,
                                    uint64_t ns, const char *err, size_t errlen) {
    if (__builtin_expect(err != NULL || (long long)(ns / 1000) >= px_cfg.slowlog_log_slower_than ||
                         (px_cfg.latency_monitor_threshold && (long long)(ns / 1000000) >= px_cfg.latency_monitor_threshold), 0))
        px_slowlog_slow(c, cmd, argc, argv, ns, err, errlen);
}
/* The arguments of a request whose reply will come later: NULL when the
 * slow log is off (nothing to keep), when cmd is EXEC, or out of memory. */
px_slowargs *px_slowlog_capture(const px_conn *c, const fd_command *cmd, int argc, const resp_arg *argv);
/* An asynchronous request completed with `reply` (to a client: its
 * errorstats count), `ns` after dispatch; takes `a` (may be NULL). */
void px_slowlog_pending(px_slowargs *a, const fd_command *cmd, int to_client,
                        const char *reply, size_t len, uint64_t ns);
void px_slowlog_free(px_slowargs *a);

/* One error reply ("-CODE text\r\n" or the text without '-') sent to a
 * client. */
void px_errorstat_reply(const char *reply, size_t len);
/* INFO errorstats lines ("errorstat_<CODE>:count=N", sorted) into o. */
void px_errorstat_info(resp_out *o);
/* INFO stats' total_error_replies. */
uint64_t px_errorstat_total(void);
/* CONFIG RESETSTAT's part: errorstats, rejected calls and the commands' client
 * records (commandstats, latencystats: px_cmdstats_reset, backends.h). */
void px_errorstat_reset(void);
/* Per command: rejected before running (arity, NOAUTH, ...): commandstats'
 * rejected_calls. */
extern uint64_t px_rejected_calls[FD_CMD_COUNT];

/* The handlers: family PROXY rows of commands.def (prototypes in commands.h). */

/* Register this feature's hooks (hooks.h): main.c, once at start-up. */
void px_slowlog_hooks(void);

/* Is argument j of this call a secret Redis shows as "(redacted)" in
 * SLOWLOG and MONITOR (AUTH's, HELLO's AUTH pair, CONFIG SET's secrets,
 * ACL SETUSER's name and rules)? */
int px_arg_redacted(const fd_command *cmd, int argc, const resp_arg *argv, int j);

#endif
