/* multi.c — MULTI/EXEC/DISCARD/WATCH/UNWATCH and atomic units (multi.h). */
#include "multi.h"
#include "hooks.h"
#include "ab.h"
#include "builtin.h"
#include "backends.h"
#include "config.h"
#include "log.h"
#include "scripting.h"
#include "acl.h"
#include "../protocol/resp_scan.h"
#include "tracking.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ the queue */

typedef struct px_qcmd {
    fd_command *cmd;           /* NULL: not in the table (a Redis backend's) */
    int         argc;
    resp_arg   *argv;          /* into raw */
    char       *raw;           /* the command as a multibulk */
    size_t      rawlen;
} px_qcmd;

typedef struct px_multi {
    px_qcmd *q;
    int      n, cap;
    size_t   bytes;
    int      aborted;          /* a command was refused while queueing: EXECABORT */
    int      group;            /* the key group (cluster slot) of the keys so far, -1 none */
} px_multi;

static void multi_free(px_multi *m) {
    if (!m) return;
    for (int i = 0; i < m->n; i++) free(m->q[i].raw);
    free(m->q);
    free(m);
}

/* the client whose EXEC runs its queue here, and the queue's length (Redis
 * keeps the client in MULTI until EXEC ends: CLIENT LIST's flags=x multi=n) */
static const px_conn *exec_conn;
static int exec_n;

int px_multi_queued(const px_conn *c) { return c->multi ? c->multi->n : c == exec_conn ? exec_n : -1; }

resp_arg *px_cmd_copy(int argc, const resp_arg *argv, char **raw, size_t *rawlen) {
    size_t need = 32;
    for (int i = 0; i < argc; i++) need += argv[i].len + 24;
    char *buf = malloc((size_t)argc * sizeof(resp_arg) + need);
    if (!buf) return NULL;
    resp_arg *av = (resp_arg *)buf;
    char *p = buf + (size_t)argc * sizeof(resp_arg), *start = p;
    p += sprintf(p, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++) {
        p += sprintf(p, "$%zu\r\n", argv[i].len);
        memcpy(p, argv[i].ptr, argv[i].len);
        av[i].ptr = p;
        av[i].len = argv[i].len;
        p += argv[i].len;
        *p++ = '\r';
        *p++ = '\n';
    }
    *raw = start;
    *rawlen = (size_t)(p - start);
    return av;
}
static const char *qcmd_raw(const px_qcmd *q) { return q->raw + (size_t)q->argc * sizeof(resp_arg); }

void px_multi_flag_error(px_conn *c) {
    if (c->multi) c->multi->aborted = 1;
}

/* The key group of a command's keys on a backend that has groups (a
 * cluster's slots): -1 none, -2 keys of several groups. */
static int keys_group(const fd_command *cmd, int argc, const resp_arg *argv) {
    px_backend *be = px_srv.primary;
    if (!be || !be->b.ops->key_group || !cmd) return -1;
    int pos[64], *pp = pos;
    if (argc > 64 && !(pp = malloc((size_t)argc * sizeof *pp))) return -1;
    int n = fd_command_keys(cmd, argc, argv, pp, argc > 64 ? argc : 64), g = -1;
    for (int i = 0; i < n; i++) {
        int k = be->b.ops->key_group(&be->b, &argv[pp[i]]);
        if (g == -1) g = k;
        else if (k != g) { g = -2; break; }
    }
    if (pp != pos) free(pp);
    return g;
}

void px_multi_queue(px_conn *c, fd_command *cmd, int argc, resp_arg *argv) {
    px_multi *m = c->multi;
    if (cmd && cmd->id == FD_CMD_client && argc > 1 && resp_arg_is(&argv[1], "reply") && px_srv.primary &&
        px_srv.primary->b.ops->passthrough) {
        /* a Redis backend runs the block on its own connection, where
         * CLIENT REPLY would silence frontdoor's link (docs/transactions.md) */
        resp_add_error(&c->out, "ERR CLIENT REPLY inside MULTI is not served on the redis backends");
        m->aborted = 1;
        return;
    }
    int g = keys_group(cmd, argc, argv);
    if (g == -2 || (g >= 0 && m->group >= 0 && g != m->group)) {
        resp_add_error(&c->out, "CROSSSLOT Keys in request don't hash to the same slot");
        m->aborted = 1;
        return;
    }
    if (m->n == m->cap) {
        int ncap = m->cap ? m->cap * 2 : 8;
        px_qcmd *nq = realloc(m->q, (size_t)ncap * sizeof *nq);
        if (!nq) goto oom;
        m->q = nq;
        m->cap = ncap;
    }
    px_qcmd *q = &m->q[m->n];
    char *raw;
    if (!(q->argv = px_cmd_copy(argc, argv, &raw, &q->rawlen))) goto oom;
    q->cmd = cmd;
    q->argc = argc;
    q->raw = (char *)q->argv;  /* the block, freed whole; its bytes: qcmd_raw */
    m->bytes += m->q[m->n].rawlen;
    m->n++;
    if (g >= 0) m->group = g;
    if ((long long)m->bytes > px_cfg.client_query_buffer_limit) {
        /* the queue is input the client sent and we keep: the query buffer's bound */
        px_log(PX_LOG_WARNING, "closing client %llu (%s): its MULTI queue exceeds client-query-buffer-limit",
               (unsigned long long)c->id, c->addr);
        c->flags |= PX_CONN_CLOSE_ASAP;
        px_conn_touch(c);
        return;
    }
    resp_add_status(&c->out, "QUEUED");
    return;
oom:
    resp_add_error(&c->out, PX_OOM_TEXT);
    m->aborted = 1;
}

/* ------------------------------------------------------------ WATCH */

/* Watched keys: a chained hash table of key -> the records of the clients
 * watching it; each client keeps its own list of its records. A record also
 * keeps what the backend said about the key when WATCH ran (its PEXPIRETIME):
 * absent (or already expired), or live with its deadline (0: none). */
enum { W_ASKING, W_ABSENT, W_LIVE };

typedef struct px_watched {
    struct px_watched *next;   /* the client's list */
    struct wentry     *e;
    px_conn           *c;
    int64_t            deadline;   /* unix ms the key expires at (W_LIVE), 0: none */
    int                state;      /* W_ASKING until the backend answered */
} px_watched;

typedef struct wentry {
    struct wentry *next;
    px_watched   **ws;
    int            nws, cap;
    size_t         len;
    char           key[];
} wentry;

#define WBUCKETS 4096
static wentry *wtable[WBUCKETS];
#define wcount px_srv.watched_keys   /* entries: 0 = nothing to do on writes */
static void watch_arm(int on);             /* WATCH's hooks: armed while wcount > 0 */
static void multi_count(int d);            /* clients in MULTI: the queue's gate armed while > 0 */
static size_t nwait;                       /* clients with c->watch_wait */

static unsigned whash(const char *p, size_t n) {
    unsigned h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 16777619u;
    return h & (WBUCKETS - 1);
}

static wentry *wfind(const char *k, size_t n, int create) {
    unsigned h = whash(k, n);
    for (wentry *e = wtable[h]; e; e = e->next)
        if (e->len == n && !memcmp(e->key, k, n)) return e;
    if (!create) return NULL;
    wentry *e = calloc(1, sizeof *e + n);
    if (!e) return NULL;
    memcpy(e->key, k, n);
    e->len = n;
    e->next = wtable[h];
    wtable[h] = e;
    if (wcount++ == 0) watch_arm(1);
    return e;
}

static void wremove(wentry *e, px_watched *w) {
    for (int i = 0; i < e->nws; i++)
        if (e->ws[i] == w) { e->ws[i] = e->ws[--e->nws]; break; }
    if (e->nws) return;
    unsigned h = whash(e->key, e->len);
    for (wentry **pp = &wtable[h]; *pp; pp = &(*pp)->next)
        if (*pp == e) { *pp = e->next; break; }
    free(e->ws);
    free(e);
    if (--wcount == 0) watch_arm(0);
}

static void unwatch_all(px_conn *c) {
    px_watched *w = c->watched;
    while (w) {
        px_watched *next = w->next;
        wremove(w->e, w);
        free(w);
        w = next;
    }
    c->watched = NULL;
    c->watch_dirty = 0;
}

/* flush: FLUSHDB/FLUSHALL, which change only keys that exist (Redis 7.0's
 * touchAllWatchedKeysInDb): a key absent when WATCH ran is still absent
 * unless a write through frontdoor touched it since (the client is then
 * dirty already), so it is skipped; a key not answered yet counts as live. */
static const px_conn *t_skip, *t_only;   /* px_watch_touch_others, px_watch_touch_reply_of */

static void touch_entry(wentry *e, int flush) {
    for (int i = 0; i < e->nws; i++) {
        px_conn *wc = e->ws[i]->c;
        if (wc == t_skip || (t_only && wc != t_only)) continue;
        if (!flush || e->ws[i]->state != W_ABSENT) wc->watch_dirty = 1;
    }
}

static void touch_every(int flush) {
    if (!wcount) return;
    for (int h = 0; h < WBUCKETS; h++)
        for (wentry *e = wtable[h]; e; e = e->next) touch_entry(e, flush);
}

/* Writes that change nothing whatever the data, by their arguments alone
 * (Redis 7.0 does not signal them): SMOVE from a set to itself (t_set.c),
 * BITFIELD with no SET or INCRBY (its read-only path, bitops.c). */
static int unchanged_by_args(const fd_command *cmd, int argc, const resp_arg *argv) {
    if (cmd->id == FD_CMD_smove)
        return argc == 4 && argv[1].len == argv[2].len && !memcmp(argv[1].ptr, argv[2].ptr, argv[1].len);
    if (cmd->id != FD_CMD_bitfield) return 0;
    for (int i = 2; i < argc; i++)
        if (resp_arg_is(&argv[i], "set") || resp_arg_is(&argv[i], "incrby")) return 0;
    return 1;
}

/* untouched: the keys (bit i: the i-th in fd_command_keys order) the
 * backend reported unchanged (fd_request.untouched) */
static void touch_keys(const fd_command *cmd, int argc, const resp_arg *argv, unsigned untouched) {
    if (!wcount || unchanged_by_args(cmd, argc, argv)) return;
    if (cmd->id == FD_CMD_flushdb || cmd->id == FD_CMD_flushall) { touch_every(1); return; }
    int pos[64], *pp = pos;
    if (argc > 64 && !(pp = malloc((size_t)argc * sizeof *pp))) { touch_every(0); return; }
    int n = fd_command_keys(cmd, argc, argv, pp, argc > 64 ? argc : 64);
    /* SORT writes its STORE key only; a first key the row says is only read
     * (K1R without K1W: COPY's source) is not changed either, nor are the
     * sources of a STORE command (KR|K1W: the destination first, the others
     * only read: SINTERSTORE, ZUNIONSTORE, BITOP, PFMERGE...) */
    uint32_t f = cmd->flags;
    int from = cmd->id == FD_CMD_sort || ((f & (FD_CMD_KEY1_R | FD_CMD_KEY1_W)) == FD_CMD_KEY1_R);
    if ((f & FD_CMD_KEY1_W) && (f & (FD_CMD_KEY_R | FD_CMD_KEY_W)) == FD_CMD_KEY_R && n > 1) n = 1;
    for (int i = from; i < n; i++) {
        if (i < 32 && (untouched >> i & 1)) continue;
        wentry *e = wfind(argv[pp[i]].ptr, argv[pp[i]].len, 0);
        if (e) touch_entry(e, 0);
    }
    if (pp != pos) free(pp);
}

void px_watch_touch(const fd_command *cmd, int argc, const resp_arg *argv) { touch_keys(cmd, argc, argv, 0); }

/* An error that says the command failed before changing anything (Redis
 * raises WRONGTYPE, syntax and range errors before modifying), as opposed to
 * a storage or backend failure (fd_strerror's texts), after which part of a
 * change may have been made or the outcome is unknown. */
static int error_before_change(const char *r, size_t len) {
    /* the storage and backend failures of the status space (FD_E_OOM and
     * after, storage/status.h), as px_reply_status writes them */
    for (int s = FD_E_OOM; s < FD_STATUS_COUNT; s++) {
        const char *t = fd_strerror(s);
        size_t n = strcspn(t, "%");          /* up to a "%s" (the command's name) */
        if (len > n && !memcmp(r + 1, t, n)) return 0;
    }
    static const char mongo[] = "-ERR mongodb: ";   /* a MongoDB server error (storage/mongodb/mg_backend.c) */
    return !(len >= sizeof mongo - 1 && !memcmp(r, mongo, sizeof mongo - 1));
}

/* :0, :-1, a null or an empty aggregate, RESP2 or RESP3: "nothing changed" for
 * a FD_CMD_TOUCH_CHANGED command. */
static int reply_is_nothing(const char *r, size_t len) {
    static const char *const nothing[] = {":0\r\n", ":-1\r\n", "$-1\r\n", "*-1\r\n", "_\r\n", "*0\r\n", "~0\r\n", "%0\r\n"};
    for (size_t i = 0; i < sizeof nothing / sizeof *nothing; i++)
        if (len == strlen(nothing[i]) && !memcmp(r, nothing[i], len)) return 1;
    return 0;
}

/* SORT touches its STORE key only (the sorted key is read): an empty result
 * deletes the destination, which changes it only if it existed (Redis 7.0's
 * sortCommandGeneric), hence the flush rule for a :0 reply. */
static void touch_sort_store(int argc, const resp_arg *argv, const char *reply, size_t len) {
    int pos[2];
    int n = fd_command_keys(fd_command_by_id(FD_CMD_sort), argc, argv, pos, 2);
    if (n < 2) return;
    wentry *e = wfind(argv[pos[1]].ptr, argv[pos[1]].len, 0);
    if (e) touch_entry(e, len == 4 && !memcmp(reply, ":0\r\n", 4));
}

void px_watch_touch_others(const fd_command *cmd, int argc, const resp_arg *argv, const px_conn *self) {
    t_skip = self;
    px_watch_touch(cmd, argc, argv);
    t_skip = NULL;
}

void px_watch_touch_reply_of(const fd_command *cmd, int argc, const resp_arg *argv, const char *reply, size_t len,
                             const px_conn *only) {
    t_only = only;
    px_watch_touch_reply(cmd, argc, argv, reply, len, 0);
    t_only = NULL;
}

void px_watch_touch_reply(const fd_command *cmd, int argc, const resp_arg *argv, const char *reply, size_t len,
                          unsigned untouched) {
    if (!wcount || !(cmd->flags & FD_CMD_WRITE)) return;
    if (len && reply[0] == '-' && error_before_change(reply, len)) return;
    if (cmd->id == FD_CMD_sort && (!len || reply[0] != '-')) { touch_sort_store(argc, argv, reply, len); return; }
    if ((cmd->flags & FD_CMD_TOUCH_CHANGED) && reply_is_nothing(reply, len)) {
        /* SET ... GET answers the old value: null when the key was absent,
         * set or not (only NX/XX make the null mean "not set") */
        int get = 0, xx = 0;
        if (cmd->id == FD_CMD_set)
            for (int i = 3; i < argc; i++) {
                if (resp_arg_is(&argv[i], "get")) get = 1;
                else if (resp_arg_is(&argv[i], "xx")) xx = 1;
            }
        if (!get || xx) return;
    }
    touch_keys(cmd, argc, argv, untouched);
}

void px_watch_touch_if_write(const fd_command *cmd, int argc, const resp_arg *argv) {
    if (cmd->flags & FD_CMD_WRITE) px_watch_touch(cmd, argc, argv);
    else if (cmd->id == FD_CMD_eval || cmd->id == FD_CMD_evalsha) px_watch_touch(cmd, argc, argv);
}

void px_watch_touch_all(void) { touch_every(0); }

/* A watched key that was live when WATCH ran and has expired since (Redis
 * 7.0's isWatchedKeyExpired): the same rule and clock as the backends'
 * (expired when the deadline is <= fd_request.now_ms, px_now_ms). */
static int watch_expired(const px_conn *c) {
    int64_t now = px_now_ms();
    for (const px_watched *w = c->watched; w; w = w->next)
        if (w->state == W_LIVE && w->deadline > 0 && w->deadline <= now) return 1;
    return 0;
}

/* One WATCH's questions to the backend: PEXPIRETIME of each newly watched
 * key, through px_call (detached requests, the same table and support
 * checks as a client's). `mark` is WATCH's +OK, owed while an asynchronous
 * backend answers; the client's input waits meanwhile (c->watch_wait). The
 * records are the client's: they are only read while the client lives
 * (mark->conn; closing orphans the mark and frees the records). */
typedef struct watch_ask {
    struct watch_batch *b;
    px_watched         *w;
} watch_ask;

typedef struct watch_batch {
    fd_pending *mark;          /* WATCH's +OK on an asynchronous backend */
    int         left;          /* answers owed, +1 while px_cmd_watch runs */
    int         rio;           /* the client's reads were on */
    watch_ask   ask[];
} watch_batch;

static void watch_answer(px_watched *w, const char *reply, size_t len, int failed) {
    long long v;
    w->state = W_LIVE;         /* unknown (an error, no answer): live without a deadline */
    w->deadline = 0;
    if (failed || len < 4 || reply[0] != ':') return;
    const char *crlf = memchr(reply, '\r', len);
    if (!crlf || resp_str2ll(reply + 1, (size_t)(crlf - reply - 1), &v)) return;
    if (v == -2) w->state = W_ABSENT;
    else if (v > 0) w->deadline = v;
}

/* The last answer of an asynchronous backend: WATCH's +OK at its mark, and
 * the client's pipeline runs on. */
static void watch_batch_done(watch_batch *b) {
    px_conn *c = b->mark->conn;
    int rio = b->rio;
    px_pending_reply(b->mark, "+OK\r\n", 5);
    free(b);
    if (!c) return;            /* the client went away meanwhile */
    if (c->watch_wait) nwait--;
    c->watch_wait = 0;
    if (c->flags & (PX_CONN_CLOSE_AFTER_REPLY | PX_CONN_CLOSE_ASAP)) return;
    if (rio) ev_io_start(px_srv.loop, &c->rio);
    px_conn_process_input(c);  /* what it pipelined after WATCH */
}

static void watch_reply(void *ud, const char *reply, size_t len, int failed) {
    watch_ask *a = ud;
    watch_batch *b = a->b;
    if (!b->mark || b->mark->conn) watch_answer(a->w, reply, len, failed);
    if (--b->left == 0) watch_batch_done(b);   /* 0 only once px_cmd_watch has returned */
}

/* Ask the backend about the keys of c's n newest records (those before
 * `upto` in its list), then answer WATCH: at once when every answer is in
 * (the embedded backends answer inside submit), else at a mark, the
 * client's input held until the last answer (c->watch_wait). */
static void watch_ask_all(px_conn *c, px_watched *upto, int n) {
    px_backend *be = px_srv.primary;
    fd_command *cmd = fd_command_lookup("pexpiretime", 11);
    watch_batch *b = n && be && cmd ? malloc(sizeof *b + (size_t)n * sizeof b->ask[0]) : NULL;
    if (b) {
        b->left = 1;
        b->rio = 0;
        b->mark = be->b.ops->async ? px_pending_push(c, NULL, 0) : NULL;
        if (be->b.ops->async && !b->mark) { free(b); b = NULL; }
    }
    if (!b) {                  /* nobody to ask (or no memory): live, no deadline */
        for (px_watched *w = c->watched; w != upto; w = w->next) watch_answer(w, NULL, 0, 1);
        resp_add_status(&c->out, "OK");
        return;
    }
    int i = 0;
    for (px_watched *w = c->watched; w != upto; w = w->next, i++) {
        resp_arg av[2] = {{"PEXPIRETIME", 11}, {w->e->key, w->e->len}};
        resp_out scratch;
        resp_out_init(&scratch, c->out.proto);
        uint64_t clock = fd_mono_ns();
        px_tap tap = {watch_reply, &b->ask[i]};
        b->ask[i] = (watch_ask){b, w};
        b->left++;
        /* detached (nobody's output): the tap is told every outcome, at once or later */
        px_call(&(px_request){.be = be, .out = &scratch, .client_id = c->id, .cmd = cmd, .argc = 2, .argv = av,
                              .detached = 1, .tap = &tap, .clock = &clock});
        resp_out_free(&scratch);
    }
    if (--b->left > 0) {
        b->rio = ev_is_active(&c->rio);
        if (b->rio) ev_io_stop(px_srv.loop, &c->rio);
        if (!c->watch_wait) nwait++;
        c->watch_wait = 1;     /* px_atomic_hold keeps its later commands */
        px_atomic_arm();
        return;
    }
    if (b->mark) px_pending_reply(b->mark, "+OK\r\n", 5);
    else resp_add_status(&c->out, "OK");
    free(b);
}

void px_cmd_watch(px_conn *c, int argc, resp_arg *argv) {
    if (c->multi) { resp_add_error(&c->out, "ERR WATCH inside MULTI is not allowed"); return; }
    if (c->watch_dirty) { resp_add_status(&c->out, "OK"); return; }   /* Redis 7.0: nothing left to watch for */
    px_watched *before = c->watched;
    int added = 0;
    for (int i = 1; i < argc; i++) {
        int seen = 0;
        for (px_watched *w = c->watched; w; w = w->next)
            if (w->e->len == argv[i].len && !memcmp(w->e->key, argv[i].ptr, argv[i].len)) { seen = 1; break; }
        if (seen) continue;
        wentry *e = wfind(argv[i].ptr, argv[i].len, 1);
        px_watched *w = e ? calloc(1, sizeof *w) : NULL;
        if (e && w && e->nws == e->cap) {
            int ncap = e->cap ? e->cap * 2 : 2;
            px_watched **nw = realloc(e->ws, (size_t)ncap * sizeof *nw);
            if (nw) { e->ws = nw; e->cap = ncap; }
        }
        if (!e || !w || e->nws == e->cap) {
            free(w);
            if (e && !e->nws) wremove(e, NULL);
            /* the keys added so far stay watched: ask about them (as live
             * without a deadline, the conservative side) */
            for (px_watched *x = c->watched; x != before; x = x->next) watch_answer(x, NULL, 0, 1);
            resp_add_error(&c->out, PX_OOM_TEXT);
            return;
        }
        w->e = e;
        w->c = c;
        w->state = W_ASKING;
        e->ws[e->nws++] = w;
        w->next = c->watched;
        c->watched = w;
        added++;
    }
    watch_ask_all(c, before, added);
}

void px_cmd_unwatch(px_conn *c, int argc, resp_arg *argv) {
    unwatch_all(c);
    resp_add_status(&c->out, "OK");
}

/* ------------------------------------------------------------ MULTI/EXEC */

void px_cmd_multi(px_conn *c, int argc, resp_arg *argv) {
    if (c->multi) { resp_add_error(&c->out, "ERR MULTI calls can not be nested"); return; }
    c->multi = calloc(1, sizeof *c->multi);
    if (!c->multi) { resp_add_error(&c->out, PX_OOM_TEXT); return; }
    multi_count(1);
    c->multi->group = -1;
    resp_add_status(&c->out, "OK");
}

void px_cmd_discard(px_conn *c, int argc, resp_arg *argv) {
    if (!c->multi) { resp_add_error(&c->out, "ERR DISCARD without MULTI"); return; }
    px_multi_release(c);
    resp_add_status(&c->out, "OK");
}

void px_multi_release(px_conn *c) {
    if (c->watch_wait) {               /* closed while its WATCH waited (input held: no other way here) */
        c->watch_wait = 0;
        nwait--;
    }
    if (c->multi) multi_count(-1);
    multi_free(c->multi);
    c->multi = NULL;
    unwatch_all(c);
}

/* The first key of the transaction (where a cluster sends the block). */
static const resp_arg *first_key(px_multi *m) {
    for (int i = 0; i < m->n; i++) {
        int pos[1];
        if (m->q[i].cmd && fd_command_keys(m->q[i].cmd, m->q[i].argc, m->q[i].argv, pos, 1) == 1)
            return &m->q[i].argv[pos[0]];
    }
    return NULL;
}

/* The queued commands frontdoor answers itself when a Redis server runs the
 * block, in their slots of EXEC's reply (exec_here, before the block
 * goes), as they are answered outside MULTI:
 *   - its own connection and server commands (the PROXY family's groups
 *     "connection" and "server": CLIENT, CONFIG, INFO, PING, ECHO, TIME,
 *     WAIT, COMMAND, SLOWLOG, LATENCY, LASTSAVE, FRONTDOOR, AUTH, HELLO,
 *     ACL, SELECT, SWAPDB), sent upstream they would act on frontdoor's
 *     shared link or the server's settings; but MONITOR, RESET and QUIT,
 *     which change what the connection is, go in the block as before;
 *   - MOVE (frontdoor's one database), SCRIPT DEBUG (refused: script.h).
 * Scripting, blocking and pub/sub commands go in the block: the server
 * runs them as Redis does inside a transaction. */
static int answered_here(const px_qcmd *q) {
    const fd_command *cmd = q->cmd;
    if (!cmd) return 0;
    if (cmd->id == FD_CMD_script) return q->argc > 1 && resp_arg_is(&q->argv[1], "debug");
    if (cmd->id == FD_CMD_move) return 1;
    if (cmd->family != FD_FAM_PROXY || cmd->id == FD_CMD_monitor || cmd->id == FD_CMD_reset ||
        cmd->id == FD_CMD_quit)
        return 0;
    return !strcmp(cmd->group, "connection") || !strcmp(cmd->group, "server");
}

/* ACL at EXEC (Redis 7.0 execCommand): each queued command is checked
 * again against the user's rules as they are now; a refused one is not run
 * and its slot of EXEC's reply is the refusal (px_acl_exec_check). On a
 * Redis backend, whose block answers EXEC itself, the refused commands are
 * left out of the block, and so are the commands of frontdoor's own users
 * (answered_here); their replies are spliced into the block's. */
typedef struct exec_splice {
    fd_pending *mark;          /* EXEC's place in the client's output */
    px_tap      ab;            /* the A/B tap of the block's reply (fn NULL: none) */
    int         n;             /* queued commands */
    size_t     *off, *len;     /* slot i answered here: errs.data[off[i] .. + len[i]) (len 0: not) */
    resp_out    errs;          /* those replies, back to back */
    int         submitting;    /* the part being submitted (a reply now: refused at submit), -1 none */
    int         refs;          /* taps still to be told: EXEC's and the tapped parts' */
    struct exec_part { struct exec_splice *x; int i; } *parts;   /* the parts' tap data */
} exec_splice;

static void exec_splice_free(exec_splice *x) {
    if (!x) return;
    resp_out_free(&x->errs);
    free(x->off);
    free(x->parts);
    free(x);
}

static void exec_splice_unref(exec_splice *x) {
    if (--x->refs == 0) exec_splice_free(x);
}

/* A forwarded part's reply (+QUEUED, dropped), or, told while it is being
 * submitted, the backend's refusal at submit: kept as its slot. */
static void part_reply(void *ud, const char *reply, size_t len, int failed) {
    (void)failed;
    struct exec_part *pt = ud;
    exec_splice *x = pt->x;
    if (x->submitting == pt->i) {
        x->off[pt->i] = x->errs.len;
        resp_out_raw(&x->errs, reply, len);
        x->len[pt->i] = x->errs.len - x->off[pt->i];
    }
    exec_splice_unref(x);
}

static exec_splice *exec_splice_new(px_conn *c, int n) {
    exec_splice *x = calloc(1, sizeof *x);
    if (x && !(x->off = calloc(2 * (size_t)n + 1, sizeof *x->off))) { free(x); return NULL; }
    if (!x) return NULL;
    x->len = x->off + n;
    x->n = n;
    x->submitting = -1;
    x->refs = 1;
    resp_out_init(&x->errs, c->out.proto);
    return x;
}

/* Check m's commands for c's user now: NULL when every one is allowed (or
 * *oom: no memory to tell), else the refusals, each logged in ACL LOG,
 * with a reply mark pushed on c (exec_splice_reply's; px_cmd_exec drops it
 * when the commands run here). */
static exec_splice *exec_recheck(px_conn *c, px_multi *m, int *oom) {
    exec_splice *x = exec_splice_new(c, m->n);
    if (!x) { *oom = 1; return NULL; }
    for (int i = 0; i < m->n; i++) {
        x->off[i] = x->errs.len;
        px_acl_exec_check(c, &x->errs, m->q[i].cmd, m->q[i].argc, m->q[i].argv);
        x->len[i] = x->errs.len - x->off[i];
    }
    if (!x->errs.len) { exec_splice_free(x); return NULL; }
    /* EXEC's place, in case a Redis server answers it (else dropped at once) */
    if (!(x->mark = px_pending_push(c, NULL, fd_mono_ns()))) { exec_splice_free(x); *oom = 1; return NULL; }
    return x;
}

/* The commands a Redis server must not run in a block: AUTH, HELLO and ACL
 * are about frontdoor's own users (the server would run them on a shared
 * connection, as frontdoor's upstream user); answered here, in their
 * places, by frontdoor's handlers. */

/* 1 when backend b refuses one of m's commands at submit (its ops'
 * refusal(): a Redis server's WAIT, COPY ... DB n, SHUTDOWN...): that
 * refusal is the command's slot of EXEC's reply (part_reply), the command
 * never reaches the block. */
static int may_refuse_at_submit(const px_multi *m, const fd_backend *b) {
    if (!b->ops->refusal) return 0;
    for (int i = 0; i < m->n; i++)
        if (m->q[i].argc && b->ops->refusal(m->q[i].argc, m->q[i].argv)) return 1;
    return 0;
}

/* A passthrough EXEC: run the queued commands answered here (not refused),
 * in their order, before the block goes (x: the refusals or NULL; made if
 * needed, with its mark). x, NULL when none (or out of memory: *oom). */
static exec_splice *exec_here(px_conn *c, px_multi *m, exec_splice *x, int *oom) {
    exec_conn = c;                 /* CLIENT INFO/LIST among them: flags=x multi=n, as in EXEC */
    exec_n = m->n;
    for (int i = 0; i < m->n; i++) {
        px_qcmd *q = &m->q[i];
        if (!answered_here(q) || (x && x->len[i])) continue;
        if (!x) {
            if ((x = exec_splice_new(c, m->n)) && !(x->mark = px_pending_push(c, NULL, fd_mono_ns()))) {
                exec_splice_free(x);
                x = NULL;
            }
            if (!x) { *oom = 1; break; }
        }
        x->off[i] = x->errs.len;
        px_execute_into(c, q->cmd, q->argc, q->argv, &x->errs);
        x->len[i] = x->errs.len - x->off[i];
    }
    exec_conn = NULL;
    return x;
}

/* Does m hold an EVAL, EVALSHA, EVAL_RO or EVALSHA_RO? */
static int queues_script(const px_multi *m) {
    for (int i = 0; i < m->n; i++) {
        const fd_command *cmd = m->q[i].cmd;
        if (cmd && (cmd->id == FD_CMD_eval || cmd->id == FD_CMD_evalsha || cmd->id == FD_CMD_eval_ro ||
                    cmd->id == FD_CMD_evalsha_ro)) return 1;
    }
    return 0;
}

static void exec_splice_reply(void *ud, const char *reply, size_t len, int failed) {
    exec_splice *x = ud;
    resp_out o;
    resp_out_init(&o, x->errs.proto);
    const char *p = reply, *end = reply + len;
    long long ran = 0;
    for (int i = 0; i < x->n; i++) ran += !x->len[i];
    /* the block's reply: an array of one reply per command that ran, else
     * (Redis's EXECABORT, the backend unavailable) passed on as it is */
    int ok = len > 1 && p[0] == '*';
    if (ok) {
        const char *nl = memchr(p, '\n', len);
        ok = nl && strtoll(p + 1, NULL, 10) == ran;
        if (ok) p = nl + 1;
    }
    if (ok) {
        resp_add_array(&o, x->n);
        for (int i = 0; i < x->n && ok; i++) {
            if (x->len[i]) { resp_out_raw(&o, x->errs.data + x->off[i], x->len[i]); continue; }
            resp_scanner sc;
            resp_scanner_init(&sc);
            long long n = resp_scan_reply(&sc, p, (size_t)(end - p));
            if (n <= 0) { ok = 0; break; }
            resp_out_raw(&o, p, (size_t)n);
            p += n;
        }
    }
    if (ok) px_pending_reply(x->mark, o.data, o.len);
    else px_pending_reply(x->mark, reply, len);
    if (x->ab.fn) x->ab.fn(x->ab.ud, reply, len, failed);
    resp_out_free(&o);
    exec_splice_unref(x);
}

/* 1 when the block goes to be as MULTI ... EXEC (a Redis server runs it).
 * A restricted user's script runs in frontdoor's engine, its redis.call
 * checked (docs/acl.md): with one queued, a Redis server does not run the
 * block; the commands run one by one here, other clients held (as on
 * mongodb: atomic against frontdoor's clients). */
static int runs_as_block(const px_backend *be, px_conn *c, const px_multi *m) {
    return be && be->b.ops->passthrough && !(px_acl_restricted(c) && queues_script(m));
}

void px_cmd_exec(px_conn *c, int argc, resp_arg *argv) {
    px_multi *m = c->multi;
    if (!m) { resp_add_error(&c->out, "ERR EXEC without MULTI"); return; }
    if (m->aborted) {
        resp_add_error(&c->out, "EXECABORT Transaction discarded because of previous errors.");
        px_multi_release(c);
        return;
    }
    if (c->watch_dirty || watch_expired(c)) {
        resp_add_null_array(&c->out);
        px_multi_release(c);
        return;
    }
    c->multi = NULL;               /* the queued commands run, not queue again */
    multi_count(-1);
    unwatch_all(c);
    /* ACL, checked again before anything runs or goes out: x holds the
     * refusals (NULL: every command is still allowed, the usual case) */
    int oom = 0;
    exec_splice *x = px_acl_restricted(c) ? exec_recheck(c, m, &oom) : NULL;
    if (oom) {                     /* fail closed: nothing runs */
        resp_add_error(&c->out, PX_OOM_TEXT);
        multi_free(m);
        return;
    }
#define REFUSED(i) (x && x->len[i])
    /* where it runs, and in mirror mode the unit the A/B layer compares
     * (proxy/ab.h): the queued commands that run, as the layer sees them
     * (a Redis primary runs the block without the commands answered here:
     * the unit compared is the block's, so they are left out of it too) */
    px_unit_cmd uq0[16], *uq = m->n <= 16 ? uq0 : malloc((size_t)m->n * sizeof *uq);
    int nq = 0, block = runs_as_block(px_srv.primary, c, m);
    for (int i = 0; uq && i < m->n; i++)
        if (!REFUSED(i) && !(block && answered_here(&m->q[i])))
            uq[nq++] = (px_unit_cmd){m->q[i].cmd, m->q[i].argc, m->q[i].argv};
    px_backend *be = px_ab_exec_begin(c, nq, uq);
    if (uq != uq0) free(uq);
    int passthrough = runs_as_block(be, c, m);
    if (x && !passthrough) {       /* the replies are written here, in order: no mark */
        px_pending_drop(x->mark);
        x->mark = NULL;
    }
    if (passthrough) {
        /* Redis runs it: MULTI, the commands, EXEC as one block on the
         * client's connection; only EXEC's reply is the client's (with the
         * refusals and the commands answered here spliced in:
         * exec_splice_reply) */
        static resp_arg multi_arg[1] = {{"MULTI", 5}};
        const resp_arg *rk = first_key(m);
        x = exec_here(c, m, x, &oom);
        if (!oom && !x && may_refuse_at_submit(m, &be->b)) {
            if (!(x = exec_splice_new(c, m->n))) oom = 1;
            else if (!(x->mark = px_pending_push(c, NULL, fd_mono_ns()))) { exec_splice_free(x); x = NULL; oom = 1; }
        }
        if (!oom && x && !(x->parts = calloc((size_t)m->n, sizeof *x->parts))) oom = 1;
        if (oom) {                 /* the client cannot get its reply */
            if (x) { px_pending_drop(x->mark); exec_splice_free(x); }
            c->flags |= PX_CONN_CLOSE_ASAP;
            px_conn_touch(c);
            px_ab_exec_end(c);
            multi_free(m);
            return;
        }
        px_forward_unit(c, be, 1, multi_arg, NULL, 0, rk, 1, NULL);
        for (int i = 0; i < m->n; i++) {
            if (REFUSED(i)) continue;
            /* the block bypasses px_execute: its writes touch watches here */
            if (m->q[i].cmd) px_watch_touch_if_write(m->q[i].cmd, m->q[i].argc, m->q[i].argv);
            if (!x) {
                px_forward_unit(c, be, m->q[i].argc, m->q[i].argv, qcmd_raw(&m->q[i]), m->q[i].rawlen, rk, 1, NULL);
                continue;
            }
            x->parts[i] = (struct exec_part){x, i};
            px_tap tap = {part_reply, &x->parts[i]};
            x->refs++;
            x->submitting = i;
            px_forward_unit(c, be, m->q[i].argc, m->q[i].argv, qcmd_raw(&m->q[i]), m->q[i].rawlen, rk, 1, &tap);
            x->submitting = -1;
        }
        if (x) {
            const px_tap *ab = px_ab_exec_tap();
            if (ab) x->ab = *ab;
            px_tap tap = {exec_splice_reply, x};
            px_forward_unit(c, be, argc, argv, c->cur_raw, c->cur_rawlen, rk, 1, &tap);   /* x is the tap's now */
        } else {
            px_forward_unit(c, be, argc, argv, c->cur_raw, c->cur_rawlen, rk, 0, px_ab_exec_tap());
        }
        for (int i = 0; i < m->n; i++)      /* invalidations after EXEC's reply (tracking.h) */
            px_tracking_write(c, m->q[i].cmd, m->q[i].argc, m->q[i].argv);
        px_ab_exec_end(c);
        multi_free(m);
        return;
    }
    int async = be && be->b.ops->async;
    resp_add_array(&c->out, m->n);
    if (async) px_atomic_begin(c);
    c->atomic = 1;
    exec_conn = c;
    exec_n = m->n;
    for (int i = 0, j = 0; i < m->n; i++) {
        px_qcmd *q = &m->q[i];
        if (REFUSED(i)) { resp_out_raw(&c->out, x->errs.data + x->off[i], x->len[i]); continue; }
        size_t before = c->out.len;
        px_ab_exec_step(j);
        if (q->cmd) px_execute(c, q->cmd, q->argc, q->argv, qcmd_raw(q), q->rawlen);
        else resp_add_unknown_command(&c->out, q->argc, q->argv);
        px_ab_exec_local(j++, c->out.data + before, c->out.len - before);
    }
#undef REFUSED
    c->atomic = 0;
    exec_conn = NULL;
    px_ab_exec_end(c);             /* the secondary's copy, inside the primary's unit */
    if (async) px_atomic_end();
    exec_splice_free(x);
    multi_free(m);
}

/* ------------------------------------------------------------ atomic units */

void px_atomic_begin(px_conn *c) {
    px_srv.atomic_owner = c;
    px_atomic_arm();
    px_srv.atomic_collect = 1;      /* atomic_left is 0, or counts c's retained A/B unit (px_atomic_retain) */
}

static void atomic_finish(void) {
    px_srv.atomic_owner = NULL;
    px_atomic_resume();
}

void px_atomic_end(void) {
    px_srv.atomic_collect = 0;
    if (px_srv.atomic_left == 0) atomic_finish();
}

static void atomic_done(fd_pending *p, const char *reply, size_t len) {
    (void)p; (void)reply; (void)len;
    if (--px_srv.atomic_left == 0 && !px_srv.atomic_collect) atomic_finish();
}

void px_atomic_count(fd_pending *p) {
    p->on_done = atomic_done;
    px_srv.atomic_left++;
}

void px_atomic_retain(px_conn *c) {
    if (!px_srv.atomic_owner) px_srv.atomic_owner = c;
    px_atomic_arm();
    px_srv.atomic_left++;
}

void px_atomic_release(void) {
    if (px_srv.atomic_left > 0 && --px_srv.atomic_left == 0 && !px_srv.atomic_collect) atomic_finish();
}

void px_atomic_arm(void) { px_hook_arm(held, px_atomic_hold, 1); }

int px_atomic_hold(px_conn *c) {
    if (c->watch_wait) return 1;           /* its WATCH waits for the backend (its reads are off) */
    if (!px_srv.atomic_owner) {
        if (!nwait) px_hook_arm(held, px_atomic_hold, 0);   /* nothing to hold: idle until px_atomic_arm */
        return 0;
    }
    if (px_srv.atomic_owner == c) return 0;
    if (px_script_busy_now()) return 0;    /* px_dispatch answers -BUSY */
    if (!c->held) {
        c->held = 1;
        ev_io_stop(px_srv.loop, &c->rio);
        c->held_next = px_srv.held;
        px_srv.held = c;
    }
    return 1;
}

void px_atomic_resume(void) {
    px_conn *c = px_srv.held;
    px_srv.held = NULL;
    /* oldest first (the list is newest first) */
    px_conn *rev = NULL;
    while (c) { px_conn *n = c->held_next; c->held_next = rev; rev = c; c = n; }
    while (rev) {
        px_conn *n = rev->held_next;
        rev->held_next = NULL;
        rev->held = 0;
        if (!(rev->flags & (PX_CONN_CLOSE_AFTER_REPLY | PX_CONN_CLOSE_ASAP))) {
            ev_io_start(px_srv.loop, &rev->rio);
            px_conn_process_input(rev);
        }
        rev = n;
    }
}

/* ------------------------------------------------------------ hooks (hooks.h) */

/* Between MULTI and EXEC every command but MULTI's own is queued (a
 * passed-through one, cmd NULL, too). */
static int multi_checked(px_conn *c, fd_command *cmd, int argc, resp_arg *argv, const char *raw, size_t rawlen) {
    (void)raw; (void)rawlen;
    if (!c->multi || (cmd && (cmd->flags & FD_CMD_IN_MULTI))) return PX_HOOK_PASS;
    px_multi_queue(c, cmd, argc, argv);
    return PX_HOOK_TAKEN;
}

/* WATCH: a backend's write right after its submit, before any other client
 * runs: from its reply when it was answered inside submit (the embedded
 * backends, also a LevelDB write that changed nothing; a script's, whose
 * reply is always in), every key it names when the reply is owed
 * (asynchronous backends, LevelDB's writer thread). The proxy-served
 * writes touch nothing here: MOVE and SWAPDB change no key (frontdoor's one
 * database: refused, or SWAPDB 0 0), the blocking commands touch from the
 * replies of the pops they run (proxy/blocking.c) */
static void watch_exec_done(const px_exec *e) {
    if (e->handler || !(e->cmd->flags & FD_CMD_WRITE) || !wcount) return;
    if (e->script) px_watch_touch_reply(e->cmd, e->argc, e->argv, e->reply, e->len, e->untouched);
    else if (e->owed == 1 || !e->reply) touch_keys(e->cmd, e->argc, e->argv, e->untouched);   /* owed: the safe side */
    else px_watch_touch_reply(e->cmd, e->argc, e->argv, e->reply, e->len, e->untouched);
}

static void atomic_owed(px_conn *c, fd_pending *p, const fd_command *cmd, int argc, const resp_arg *argv) {
    (void)c; (void)cmd; (void)argc; (void)argv;
    if (px_srv.atomic_collect) px_atomic_count(p);
}

static void watch_arm(int on) {
    px_hook_arm(exec_done, watch_exec_done, on);
}

static size_t nmulti;

static void multi_count(int d) {
    if (d > 0 ? nmulti++ == 0 : --nmulti == 0) px_hook_arm(checked, multi_checked, d > 0);
}

/* A command refused by the core's checks: inside MULTI it flags the
 * transaction; EXEC itself refused (e.g. its arity), in MULTI or not, is
 * Redis 7.0's execCommandAbort: the transaction is discarded and the error
 * becomes "-EXECABORT Transaction discarded because of: <reason>" (the
 * reason without its "ERR " prefix, as Redis's rejectCommandFormat). */
static void multi_refused(px_conn *c, const fd_command *cmd, size_t out0) {
    if (!cmd || cmd->id != FD_CMD_exec) { px_multi_flag_error(c); return; }
    const char *e = c->out.data + out0;
    size_t n = c->out.len - out0;
    if (n < 7 || strncmp(e, "-ERR ", 5) || e[n - 2] != '\r') { px_multi_flag_error(c); return; }
    char why[256];
    snprintf(why, sizeof why, "%.*s", (int)(n - 7), e + 5);
    c->out.len = out0;
    resp_add_errorf(&c->out, "EXECABORT Transaction discarded because of: %s", why);
    px_multi_release(c);
}

void px_multi_hooks(void) {
    PX_HOOK_ADD_IDLE(checked, multi_checked);         /* armed while a client is in MULTI */
    PX_HOOK_ADD(refused, multi_refused);              /* always: a refused EXEC aborts outside MULTI too */
    PX_HOOK_ADD_IDLE(exec_done, watch_exec_done);     /* armed while a key is watched */
    PX_HOOK_ADD(owed, atomic_owed);
    PX_HOOK_ADD_IDLE(held, px_atomic_hold);   /* armed by px_atomic_arm, idles itself when nothing is held */
    PX_HOOK_ADD(closed, px_multi_release);
}
