/* ab_int.h — private to the A/B layer (ab.h), shared by its files; not for
 * other modules. One concern each:
 *   ab.c          routing: the router hook, split choice, what is mirrored,
 *                 the commands kept and handed to a side (px_call)
 *   ab_pair.c     mirrored pairs: race tracking, script bodies, both
 *                 replies recorded and compared (one command or a unit)
 *   ab_outbox.c   the order copies reach the secondary (ab-mirror-order primary)
 *   ab_unit.c     an EXEC mirrored as one unit (px_ab_exec_*)
 *   ab_samples.c  mismatch samples, ab-log-file, INFO ab, the counters
 *                 and the read-only views of ab_report.h
 *   ab_frontdoor.c the FRONTDOOR command (AB, REPORT, HELP...)
 *   ab_diff.c     reply text forms, reply comparison, the key-state diff
 *   ab_report.c   the verdict and FRONTDOOR REPORT JSON (ab_report.h)
 * Everything runs on the loop thread; nothing here is thread-safe. */
#ifndef FRONTDOOR_AB_INT_H
#define FRONTDOOR_AB_INT_H

#include "server.h"
#include "backends.h"
#include "strmap.h"

#include <stdio.h>

#define AB_TEXT_MAX 512        /* bytes of a command or reply kept in a sample */
#define AB_DIFF_MAX 1024       /* bytes of a key diff */

/* A kept mismatch: the command (or unit) as text, both replies, and for a
 * divergence the key's state compared. Every pointer is owned (malloc). */
typedef struct ab_sample {
    long long  ms;             /* wall clock */
    char      *text, *rep[2];
    size_t     len[2];
    char      *diff;           /* the key's state compared (divergences with ab-mismatch-log diff) */
} ab_sample;

typedef struct span { const char *p; size_t n; } span;
int ab_span_cmp(const void *a, const void *b);

/* Printable form: bytes outside 0x20..0x7e as \xHH, quoted when `quote`
 * and the bytes hold blanks or quotes; at most max bytes (then "..."). */
size_t ab_printable(char *out, size_t max, const char *s, size_t n, int quote);
/* One RESP reply as redis-cli shows it, on one line, appended at out[*o]
 * (at most max-1 bytes in all). Returns the reply's bytes read, 0 if malformed. */
size_t ab_reply_text(const char *r, size_t len, char *out, size_t max, size_t *o);
/* Whether two replies of cmd are the same answer: bytes, or for
 * FD_CMD_UNORDERED commands the same elements in any order. */
int ab_replies_equal(const fd_command *cmd, const char *a, size_t al, const char *b, size_t bl);
/* The top-level elements of an aggregate reply (spans into r); count, or -1
 * when r is not an aggregate. *out is malloc'd (free it). */
long long ab_elements(const char *r, size_t len, span **out);

/* ab.c: keep a divergence sample (takes its contents) and log it. */
void ab_keep_divergence(ab_sample *s);

/* ab_diff.c: ask both sides for `key`'s state; once in, the diff text goes
 * into s->diff and s is kept (ab_keep_divergence). Takes s's contents and
 * `key` (malloc'd). Returns -1 (nothing taken) when out of memory. */
int ab_diff_divergence(ab_sample *s, char *key, size_t keylen);
/* FRONTDOOR AB KEY k: the key's state on both sides and what differs, as
 * a pending reply of c. */
void ab_diff_key_cmd(px_conn *c, const resp_arg *key);

#define AB_SAMPLES 32          /* latest divergences kept */
#define AB_RACES 8             /* latest races kept */
#define AB_MAXKEYS 8           /* keys tracked per command; more: tracked as keyless */
#define AB_MIXED UINT64_MAX    /* writes of several clients in flight */
#define AB_SCRIPTS_MAX 4096    /* script bodies remembered for a secondary's NOSCRIPT */
#define AB_NOISE_MIN_PCT 1.0   /* calibration: a command noisier than this (% of its compared reads) is "noisy" */

/* Race tracking. Every key a mirrored command names has an entry while
 * some mirrored command naming it is in flight (from px_ab_begin until both
 * sides answered). A command's mismatch is a race when another client wrote
 * one of its keys in that window: a write of another client was in flight
 * when it began, or began before it ended. `any` stands for every write
 * (keyless reads such as DBSIZE check it), `all` for keyless writes
 * (FLUSHALL: every keyed command checks it). A unit (EXEC, script) tracks
 * the keys of all its commands. */
typedef struct ab_key {
    uint32_t refs;             /* in-flight commands naming it (a map entry is freed at 0) */
    uint32_t wr_inflight;      /* in-flight writes to it */
    uint64_t wr_client;        /* their client, AB_MIXED when several */
    uint64_t last_seq, last_client;   /* the latest write begun, and its client */
    uint64_t other_seq;        /* the latest write begun by a client other than last_client */
} ab_key;

typedef struct ab_ref { ab_key *k; px_strent *e; unsigned char check, write; } ab_ref;

/* A command kept past its dispatch (multi.h px_cmd_copy: argv points into raw,
 * one block owned through argv). */
typedef struct ab_cmd {
    fd_command *cmd;           /* NULL: a command the table does not know (a Redis backend's) */
    int         argc;
    resp_arg   *argv;
    char       *raw;           /* the multibulk bytes (after the argv array, one block) */
    size_t      rawlen;
} ab_cmd;

typedef struct px_ab_pair px_ab_pair;

/* One element of a unit: one queued command's reply on each side. */
typedef struct ab_el {
    char   *rep[2];
    size_t  len[2];
    int     have[2], failed[2];
    int     remote;            /* the secondary runs it (not served by the proxy) */
    int     routed;            /* its primary reply comes through the route (else px_ab_exec_local) */
    struct ab_eltap { px_ab_pair *p; int side, i; } ud[2];
    px_tap  tap[2];
} ab_el;

enum { AB_ONE, AB_EXEC };
enum { AB_WHOLE_ALL = 1, AB_WHOLE_REMOTE = 2 };   /* a side of a unit answered with one EXEC reply */

struct px_ab_pair {
    px_tap      tap[2];        /* what each side's request reports to (px_call) */
    struct px_ab_side { struct px_ab_pair *p; int side; } sides[2];
    fd_command *cmd;           /* the command; a unit: EXEC */
    int         kind;          /* AB_ONE (a command or a script) or AB_EXEC */
    char       *text;          /* the command, printable, truncated */
    char       *rep[2];
    size_t      len[2];
    int         have[2], failed[2];
    int         queued;        /* counted in ab.queued until the secondary answers */
    int         calib;         /* calibration: side 1 is the primary asked again */
    uint64_t    client, seq;   /* the client; its place in the order commands began */
    int         race;          /* another client wrote one of its keys meanwhile */
    int         defer;         /* its copy waits for the primary's reply (in `copy`: ab-mirror-order primary) */
    int         retried;       /* EVALSHA resent as EVAL after the secondary's NOSCRIPT */
    int         retained;      /* a unit on an async secondary holds other clients (multi.h px_atomic_retain) */
    int         proto;
    ab_cmd      copy;          /* the command (a deferred copy, an EVALSHA) */
    char       *key;           /* its first key (for the diff), NULL when keyless */
    size_t      keylen;
    int         nref, refcap;
    ab_ref     *ref;
    /* a unit (AB_EXEC) */
    int         nel, left[2], whole[2], hold;
    int         unit_wait;     /* the unit goes to the secondary when the primary's part is in (ab-mirror-order primary) */
    px_ab_pair *out_next;      /* in the outbox (copies waiting for the loop's top level) */
    ab_cmd     *cmds;
    ab_el      *el;
};

/* The layer's state (defined in ab.c; every ab_*.c reads and writes it on
 * the loop thread). */
typedef struct ab_state {
    uint64_t mirrored, compared, divergences, races, dropped, split_secondary, secondary_errors, queued;
    uint64_t sampled_out, stopped_at_ms, noisy, deferred, noscript_resent, units;
    uint64_t races_by_cmd[FD_CMD_COUNT];
    uint64_t noisy_by_cmd[FD_CMD_COUNT];
    /* calibration: reads asked twice of the primary */
    long long calib_left;
    uint64_t calib_done;
    uint64_t calib_compared[FD_CMD_COUNT], calib_noise[FD_CMD_COUNT];
    ab_sample samples[AB_SAMPLES];
    unsigned  next_sample, nsamples;
    ab_sample race_samples[AB_RACES];
    unsigned  next_race, nraces;
    FILE     *log;
    char     *log_name;
    long long race_log_sec;            /* races logged in this second, and not */
    uint64_t  race_log_n, race_log_skipped;
    /* race tracking */
    px_strmap keys;
    ab_key    any, all;
    uint64_t  seq;
    /* the EXEC running now (px_ab_exec_*): its client, its side, its pair */
    px_conn    *unit_conn;
    px_backend *unit_be;
    px_ab_pair *unit;
    int         unit_cur;
    /* script bodies by SHA1 (a secondary's NOSCRIPT is answered with EVAL) */
    px_strmap   scripts;
} ab_state;
extern ab_state ab;

/* ------------------------------------------------------ ab.c: routing */
/* The first key a command names (scripts: their first declared key), or NULL. */
const resp_arg *ab_first_key_arg(const fd_command *cmd, int argc, const resp_arg *argv);
/* Split: whether the command or unit whose first key is `key` goes to the
 * secondary (counts it). */
int ab_split_to_secondary(px_conn *c, const resp_arg *key);
/* Whether a command or unit (w: may write; key: its first key) is mirrored
 * under the policies; counts what is not. */
int ab_mirror_wanted(int w, const resp_arg *key);
/* A command kept past its dispatch (one block owned by q, ab_cmd_free);
 * -1 when out of memory. */
int ab_cmd_copy(ab_cmd *q, fd_command *cmd, int argc, const resp_arg *argv);
void ab_cmd_free(ab_cmd *q);
/* EVAL & co., SCRIPT, FUNCTION (run by frontdoor's engine on a non-Redis backend). */
int ab_is_script(const fd_command *cmd);
/* Whether a command may write (NULL: unknown, assumed to). */
int ab_may_write(const fd_command *cmd);
/* Printable command text appended at text[o] (at most AB_TEXT_MAX); the new length. */
size_t ab_text_add(char *text, size_t o, int argc, const resp_arg *argv);
/* Hand one side's request to be (see ab.c); 1 when the reply is owed to c. */
int ab_side_submit(px_backend *be, px_conn *c, int detached, uint64_t client, resp_out *out, fd_command *cmd,
                   int argc, resp_arg *argv, const char *raw, size_t rawlen, uint64_t *clock, const px_tap *tap);
/* The client with this id, NULL when it has gone. */
px_conn *ab_conn_by_id(uint64_t id);

/* ------------------------------------------------- ab_pair.c: pairs */
/* A new pair of c for cmd (kind AB_ONE or AB_EXEC), NULL when out of memory. */
px_ab_pair *ab_pair_new(px_conn *c, fd_command *cmd, int kind);
void ab_pair_free(px_ab_pair *p);
/* Track the keys of one command of p for races (a unit: each of its commands). */
void ab_track_cmd(px_ab_pair *p, fd_command *cmd, int argc, resp_arg *argv);
/* Remember a script body by its SHA1 (bounded by AB_SCRIPTS_MAX). */
void ab_remember_script(const resp_arg *body);
/* The secondary's part is in: p's queue slot is released. */
void ab_sec_in(px_ab_pair *p);
/* The tap of one unit element's reply (ud: a struct ab_eltap). */
void ab_on_el(void *ud, const char *reply, size_t len, int failed);
/* Both replies in and nothing held: compare, count, free p. */
void ab_maybe_finish(px_ab_pair *p);
/* A deferred copy goes to the secondary now (may free p). */
void ab_send_copy(px_ab_pair *p);
/* Whether calibration found cmd noisy. */
int ab_is_noisy(const fd_command *cmd);

/* ---------------------------------------- ab_samples.c: samples, logging */
void ab_sample_free(ab_sample *s);
/* A race of p counted and kept (takes p's text and replies). */
void ab_keep_race(px_ab_pair *p);
/* A divergence of p counted, kept and logged per ab-mismatch-log. */
void ab_divergence(px_ab_pair *p);

/* -------------------------------------------------- ab_outbox.c */
/* The primary answered a deferred copy or unit: send it now, or queue it. */
void ab_copy_ready(px_ab_pair *p);
/* p, a unit sent from the outbox, holds every later copy until its
 * secondary replies are in (ab_outbox_unit_done). */
void ab_outbox_hold(px_ab_pair *p);
/* p's secondary part is in (or p goes): the outbox may move on. */
void ab_outbox_unit_done(px_ab_pair *p);

/* -------------------------------------------------- ab_unit.c */
/* A unit held back until the primary's part was in: send it now (may free p). */
void ab_unit_go(px_ab_pair *p);

#endif
