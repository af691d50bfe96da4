/* blocking.c — blocking commands: the blocked-keys table, wake-ups, timeouts
 * (see blocking.h). Loop thread only. */
#include "blocking.h"
#include "hooks.h"
#include "backends.h"
#include "config.h"
#include "log.h"
#include "multi.h"
#include "strmap.h"
#include "../protocol/resp_scan.h"
#include "../storage/value/zsetops.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Which non-blocking twin a blocking command runs. */
enum { K_LPOP, K_RPOP, K_ZMIN, K_ZMAX, K_LMOVE, K_RPOPLPUSH, K_LMPOP, K_ZMPOP, K_XREAD, K_XGROUP };
#define IS_STREAM(kind) ((kind) == K_XREAD || (kind) == K_XGROUP)

typedef struct bkey bkey;
typedef struct px_blk px_blk;

/* A waiter in one key's FIFO. */
typedef struct bnode {
    bkey         *k;
    px_blk       *b;
    struct bnode *prev, *next;
} bnode;

/* A key with waiters (the blocked-keys table's entry data). */
struct bkey {
    px_strent *e;                /* its entry: the name */
    bnode     *head, *tail;
    bkey      *ready_next;
    int        in_ready;         /* in the ready list */
    int        busy;             /* a wake-up try on it is in flight (async backend) */
    int        dirty;            /* written while busy: try again after */
    int        has_resume;       /* the next wake-up try starts at resume (NULL: none left) */
    bnode     *resume;           /* stream waiters: every one is tried, not only the head */
    int        in_service;       /* serve_ready is serving it: freed only once it returns */
};

struct px_blk {
    px_conn     *c;              /* NULL once the client left */
    int          kind;
    const fd_command *twin;      /* the non-blocking command tried */
    int          argc;
    resp_arg    *argv;           /* a copy of the command (buf) */
    char        *buf;
    resp_arg    *tw;             /* room for the twin's argv */
    int          twn;            /* the twin's argc in a try */
    int         *try_inline;     /* run_try's flag: set when the try is answered inside its submit */
    int          kfirst, nkeys;  /* argv indexes of the keys */
    int          proto;
    int64_t      deadline;       /* ms; 0 = none */
    ev_timer     timer;
    fd_pending  *mark;           /* where the reply goes in c->out (NULL: written at once) */
    fd_pending  *remote;         /* redis backends: in flight on a connection of its own */
    bnode       *nodes;
    int          nnodes;
    int          counted;        /* in nblocked */
    px_blk      *settle_next;    /* settling (block_after_first): not yet counted */
    px_blk     **settle_pprev;   /* NULL: not settling */
    int          trying;         /* a try is in flight */
    int          try_initial;    /* the try is of the first sequence (else a wake-up) */
    int          seq;            /* first sequence: index of the key tried */
    bkey        *try_key;        /* wake-up try: its key */
    int          dirty;          /* a key of ours was written during the first sequence */
    int          unblock;        /* 0, or CLIENT UNBLOCK's how + 1 (decided when the try ends) */
    int          timed_out;      /* the timer fired during a try */
    int          atomic;         /* inside MULTI/EXEC or a script: never blocks */
    /* XREAD / XREADGROUP: the ids waited after (one per stream, from the
     * storage's -XBLOCK marker), COUNT of a wake-up read, GROUP's index */
    resp_arg    *xid;
    char        *xidbuf;
    char         xcount[24];
    int          xgroup, xnoack;
};

static px_strmap keys;           /* key -> bkey */
static bkey *ready_head, *ready_tail;
static int serving;
static uint64_t nblocked;
static px_blk *settling;         /* waiters whose keys are looked at once more */
static px_conn **resumes;        /* clients answered: their later commands run at the turn's end */
static size_t nresumes, capresumes;

uint64_t px_block_count(void) { return nblocked; }


/* ------------------------------------------------------------ helpers */

static int is_null_reply(const char *r, size_t len) {
    return (len == 5 && (!memcmp(r, "$-1\r\n", 5) || !memcmp(r, "*-1\r\n", 5))) ||
           (len == 3 && !memcmp(r, "_\r\n", 3)) || (len == 4 && !memcmp(r, "*0\r\n", 4));
}

/* WATCH (multi.h): a pop changed its keys unless its reply is a null
 * (nothing to pop, a timeout) or an error raised before any change, as
 * Redis 7.0 signals only the keys it popped from or pushed to. Touches the
 * clients `only` (NULL: every client). */
static void watch_outcome(const fd_command *cmd, int argc, const resp_arg *argv, const char *reply, size_t len,
                          const px_conn *only) {
    if (!is_null_reply(reply, len)) px_watch_touch_reply_of(cmd, argc, argv, reply, len, only);
}

/* now + ms, saturated: a timeout Redis 7.0 accepts but whose deadline would
 * overflow (BLPOP k 9223372036854775, XREAD BLOCK 9223372036854775807)
 * blocks as good as forever, as it does there. ms > 0. */
static int64_t deadline_after(long long ms) {
    long long now = px_now_ms();
    return ms > LLONG_MAX - now ? LLONG_MAX : now + ms;
}

/* Redis 7.0's timeout argument (seconds, fractional): the deadline in ms
 * (0 = forever), or -1 with the error written. As timeout.c: the seconds
 * times 1000 rounded *up* (0.0001 is 1 ms, not 0 = forever; -0.0001 is 0),
 * converted as x86 converts (inf and 1e300 overflow to LLONG_MIN: "timeout
 * is negative"). */
static int parse_timeout(px_conn *c, const resp_arg *a, int64_t *deadline) {
    long double ld;
    if (resp_str2ld(a->ptr, a->len, &ld) || isnan(ld)) {
        resp_add_error(&c->out, "ERR timeout is not a float or out of range");
        return -1;
    }
    long double ms = ceill(ld * 1000.0L);
    long long t = (ms >= -0x1p63L && ms < 0x1p63L) ? (long long)ms : LLONG_MIN;   /* x86's overflow */
    if (t < 0) {
        resp_add_error(&c->out, "ERR timeout is negative");
        return -1;
    }
    *deadline = t > 0 ? deadline_after(t) : 0;
    return 0;
}

static void block_exec_done(const px_exec *e);

/* The hooks on every command and turn are armed only while some client
 * waits on a key (keys.count; ready keys are among them) or a resume is
 * due: otherwise they would find nothing to do. */
static void blk_arm(void) {
    int waiting = keys.count != 0;
    px_hook_arm(exec_done, block_exec_done, waiting);
    px_hook_arm(after, px_block_after_command, waiting);
    px_hook_arm(turn_start, px_block_run_resumes, waiting || nresumes);
}

static void resume_later(px_conn *c) {
    if (nresumes == capresumes) {
        size_t n = capresumes ? capresumes * 2 : 16;
        px_conn **r = realloc(resumes, n * sizeof *r);
        if (!r) return;          /* its input waits for its next read event */
        resumes = r;
        capresumes = n;
    }
    resumes[nresumes++] = c;
    blk_arm();
}

void px_block_run_resumes(void) {
    px_block_after_command();            /* keys left ready by an atomic unit that ended since */
    for (size_t i = 0; i < nresumes; i++) {
        px_conn *c = resumes[i];
        if (c) px_conn_resume(c);            /* may add more: the loop sees them */
    }
    nresumes = 0;
    blk_arm();
}

/* ------------------------------------------------------------ the table */

static void maybe_free_key(bkey *k) {
    if (k->head || k->busy || k->in_ready || k->in_service) return;
    px_strmap_del(&keys, k->e);
    if (!keys.count) blk_arm();
}

static void make_ready(bkey *k) {
    if (k->in_ready) return;
    k->in_ready = 1;
    k->ready_next = NULL;
    if (ready_tail) ready_tail->ready_next = k;
    else ready_head = k;
    ready_tail = k;
}

/* k goes on serving its next waiter before any other ready key, as Redis
 * 7.0 serves every client blocked on one ready key (while it has elements)
 * before the next key (serveClientsBlockedOn*Key); keys signalled meanwhile
 * wait behind. */
static void make_ready_first(bkey *k) {
    if (k->in_ready) return;
    k->in_ready = 1;
    k->ready_next = ready_head;
    ready_head = k;
    if (!ready_tail) ready_tail = k;
}

/* k was written: tried now, or again after the try in flight. */
static void signal_bkey(bkey *k) {
    if (k->busy) k->dirty = 1;
    else make_ready(k);
}

static void signal_key(const char *name, size_t len) {
    px_strent *e = px_strmap_get(&keys, name, len);
    if (e) signal_bkey(px_strmap_data(e));
}

static void signal_each(px_strent *e, void *arg) {
    (void)arg;
    signal_bkey(px_strmap_data(e));
}

void px_block_signal_cmd(const fd_command *cmd, int argc, const resp_arg *argv) {
    if (!keys.count || !cmd || !(cmd->flags & FD_CMD_WRITE)) return;
    if (cmd->id == FD_CMD_flushall || cmd->id == FD_CMD_flushdb) {
        /* every key is gone: each waited-on key is tried again (a pop
         * misses and keeps waiting; XREADGROUP ends with -UNBLOCKED, as
         * Redis 7.0's scanDatabaseForDeletedStreams) */
        px_strmap_each(&keys, signal_each, NULL);
        return;
    }
    int pos[64];
    int n = fd_command_keys(cmd, argc, argv, pos, 64);
    for (int i = 0; i < n; i++) signal_key(argv[pos[i]].ptr, argv[pos[i]].len);
}

/* Put b at the tail of each of its keys' FIFOs (once per distinct key). */
static int blk_register(px_blk *b) {
    if (b->nodes) return 0;
    b->nodes = calloc((size_t)b->nkeys, sizeof *b->nodes);
    if (!b->nodes) return -1;
    for (int i = 0; i < b->nkeys; i++) {
        const resp_arg *a = &b->argv[b->kfirst + i];
        int created;
        px_strent *e = px_strmap_add(&keys, a->ptr, a->len, sizeof(bkey), &created);
        if (!e) return -1;
        if (created && keys.count == 1) blk_arm();
        bkey *k = px_strmap_data(e);
        k->e = e;
        int dup = 0;
        for (bnode *n = k->tail; n && !dup; n = n->prev) dup = n->b == b;
        if (dup) continue;
        bnode *n = &b->nodes[b->nnodes++];
        n->k = k;
        n->b = b;
        n->prev = k->tail;
        if (k->tail) k->tail->next = n;
        else k->head = n;
        k->tail = n;
    }
    return 0;
}

static void blk_unregister(px_blk *b) {
    for (int i = 0; i < b->nnodes; i++) {
        bnode *n = &b->nodes[i];
        bkey *k = n->k;
        if (k->resume == n) k->resume = n->next;
        if (n->prev) n->prev->next = n->next;
        else k->head = n->next;
        if (n->next) n->next->prev = n->prev;
        else k->tail = n->prev;
        maybe_free_key(k);
    }
    free(b->nodes);
    b->nodes = NULL;
    b->nnodes = 0;
}

static void settle_add(px_blk *b) {
    b->settle_next = settling;
    if (settling) settling->settle_pprev = &b->settle_next;
    b->settle_pprev = &settling;
    settling = b;
}

static void settle_del(px_blk *b) {
    if (!b->settle_pprev) return;
    *b->settle_pprev = b->settle_next;
    if (b->settle_next) b->settle_next->settle_pprev = b->settle_pprev;
    b->settle_next = NULL;
    b->settle_pprev = NULL;
}

static void blk_free(px_blk *b) {
    settle_del(b);
    blk_unregister(b);
    ev_timer_stop(px_srv.loop, &b->timer);
    if (b->counted) nblocked--;
    free(b->xid);
    free(b->xidbuf);
    free(b->buf);
    free(b);
}

/* The blocking command whose first try runs inside its handler (compared,
 * never dereferenced): answered there, its client's input loop goes on by
 * itself; answered later (it blocked, or an asynchronous backend's first
 * try), its input waited and is resumed. */
static const px_blk *first_running;

/* The command is answered: the reply goes at its mark (or straight into
 * c->out), the client's later commands run at the end of the turn. */
static void blk_finish(px_blk *b, const char *reply, size_t len) {
    px_conn *c = b->c;
    if (c) {
        if (b->mark) px_pending_reply(b->mark, reply, len);
        else resp_out_raw(&c->out, reply, len);
        b->mark = NULL;
        c->blk = NULL;
        if (b->counted || b != first_running) resume_later(c);   /* its input waited */
        px_conn_touch(c);
    }
    blk_free(b);
}

static void finish_null(px_blk *b, int timeout) {
    /* a timeout replies a null array whatever the command; a non-blocking
     * run (MULTI) of BLMOVE/BRPOPLPUSH a null bulk, as Redis */
    const char *r;
    if (!timeout && (b->kind == K_LMOVE || b->kind == K_RPOPLPUSH)) r = b->proto == 3 ? "_\r\n" : "$-1\r\n";
    else r = b->proto == 3 ? "_\r\n" : "*-1\r\n";
    blk_finish(b, r, strlen(r));
}

static void finish_unblocked(px_blk *b) {
    if (b->unblock == 2) {
        static const char e[] = "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n";
        blk_finish(b, e, sizeof e - 1);
    } else {
        finish_null(b, 1);
    }
}

/* The twin's reply, made the blocking command's. */
static void finish_served(px_blk *b, const resp_arg *key, const char *reply, size_t len) {
    if (reply[0] == '-' || (b->kind != K_LPOP && b->kind != K_RPOP && b->kind != K_ZMIN && b->kind != K_ZMAX)) {
        blk_finish(b, reply, len);
        return;
    }
    resp_out o;
    resp_out_init(&o, b->proto);
    int zpop = b->kind == K_ZMIN || b->kind == K_ZMAX;
    resp_add_array(&o, zpop ? 3 : 2);
    resp_add_bulk(&o, key->ptr, key->len);
    if (zpop && len > 4) resp_out_raw(&o, reply + 4, len - 4);   /* past "*2\r\n" */
    else resp_out_raw(&o, reply, len);
    blk_finish(b, o.data, o.len);
    resp_out_free(&o);
}

/* ------------------------------------------------------------ tries */

static void on_try(void *arg, const char *reply, size_t len);
static void serve_ready(void);

/* Inside EXEC or a script the command never blocks and its reply must be in
 * before the handler returns (a script reads it at once): an asynchronous
 * backend's try is waited for by running the loop, as the transaction code
 * does for its own commands (every other client is held meanwhile). */
typedef struct sync_wait { int waiting; px_reply_fn fn; void *arg; } sync_wait;

static void sync_done(void *arg, const char *reply, size_t len) {
    sync_wait *w = arg;
    w->waiting = 0;
    w->fn(w->arg, reply, len);
}

/* Run the twin on one key (argv index ki), or, for LMPOP/ZMPOP's first
 * try, on all of them (ki < 0). */
static void run_try(px_blk *b, int ki) {
    resp_arg *t = b->tw;
    int n = 0;
    switch (b->kind) {
    case K_LPOP: case K_RPOP: case K_ZMIN: case K_ZMAX:
        t[n++] = (resp_arg){ (char *)b->twin->name, b->twin->namelen };
        t[n++] = b->argv[ki];
        break;
    case K_LMOVE:                                  /* BLMOVE src dst wf wt timeout */
        t[n++] = (resp_arg){ (char *)"lmove", 5 };
        for (int i = 1; i <= 4; i++) t[n++] = b->argv[i];
        break;
    case K_RPOPLPUSH:
        t[n++] = (resp_arg){ (char *)"rpoplpush", 9 };
        t[n++] = b->argv[1];
        t[n++] = b->argv[2];
        break;
    case K_XREAD: case K_XGROUP:
        if (ki < 0) {                              /* the first try: the command as received */
            for (int i = 0; i < b->argc; i++) t[n++] = b->argv[i];
            break;
        }
        /* a wake-up: that stream alone, after the id waited for (Redis's COUNT) */
        t[n++] = b->argv[0];
        if (b->kind == K_XGROUP) {
            t[n++] = (resp_arg){ (char *)"GROUP", 5 };
            t[n++] = b->argv[b->xgroup];
            t[n++] = b->argv[b->xgroup + 1];
        }
        t[n++] = (resp_arg){ (char *)"COUNT", 5 };
        t[n++] = (resp_arg){ b->xcount, strlen(b->xcount) };
        if (b->xnoack) t[n++] = (resp_arg){ (char *)"NOACK", 5 };
        t[n++] = (resp_arg){ (char *)"STREAMS", 7 };
        t[n++] = b->argv[ki];
        t[n++] = b->xid[ki - b->kfirst];
        break;
    default:                                       /* B?MPOP timeout numkeys key... rest */
        t[n++] = (resp_arg){ (char *)b->twin->name, b->twin->namelen };
        if (ki < 0) {
            for (int i = 2; i < b->argc; i++) t[n++] = b->argv[i];
        } else {
            t[n++] = (resp_arg){ (char *)"1", 1 };
            t[n++] = b->argv[ki];
            for (int i = b->kfirst + b->nkeys; i < b->argc; i++) t[n++] = b->argv[i];
        }
        break;
    }
    b->trying = 1;
    b->twn = n;
    /* WATCH: a reply in at once, or inside EXEC or a script (every other
     * client is held until it is in), decides for every watcher (on_try);
     * an owed one marks the other watchers now (b may be freed by then:
     * the flag is ours) */
    int in = 0;
    b->try_inline = &in;
    px_conn *c = b->c;
    if (b->atomic) {
        sync_wait w = { 1, on_try, b };
        px_call_backend(b->c, b->twin, n, t, NULL, 0, b->proto, 0, sync_done, &w, NULL);
        while (w.waiting) ev_run(px_srv.loop, EVRUN_ONCE);
        return;
    }
    px_call_backend(b->c, b->twin, n, t, NULL, 0, b->proto, 0, on_try, b, NULL);
    if (!in) {
        b->try_inline = NULL;
        px_watch_touch_others(b->twin, n, t, c);
    }
}

/* The first sequence: key after key until one answers. */
static void first_try(px_blk *b) {
    b->try_initial = 1;
    b->seq = 0;
    run_try(b, (b->kind == K_LMPOP || b->kind == K_ZMPOP || IS_STREAM(b->kind)) ? -1 : b->kfirst);
}

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)loop; (void)revents;
    px_blk *b = w->data;
    if (b->trying) { b->timed_out = 1; return; }
    finish_null(b, 1);
}

/* Every key was empty: wait (or, when it cannot block, answer null).
 * count: b is in blocked_clients from now (else once it has settled).
 * 1: b waits; 0: b was answered (and freed). */
static int block_or_null(px_blk *b, int count) {
    if (b->atomic) { finish_null(b, 0); return 0; }
    if (b->unblock) { finish_unblocked(b); return 0; }
    if (b->timed_out) { finish_null(b, 1); return 0; }
    if (b->kind == K_LMPOP || b->kind == K_ZMPOP) {
        /* the twin accepted the arguments: the keys are known now */
        long long nk = 0;
        resp_str2ll(b->argv[2].ptr, b->argv[2].len, &nk);
        b->kfirst = 3;
        b->nkeys = (int)nk;
    }
    if (!b->mark && b->c) {
        b->mark = px_pending_push(b->c, NULL, fd_mono_ns());
        if (!b->mark) b->c->flags |= PX_CONN_CLOSE_ASAP;   /* out of memory */
    }
    if (blk_register(b)) {
        static const char e[] = PX_OOM_REPLY;
        blk_finish(b, e, sizeof e - 1);
        return 0;
    }
    if (count && !b->counted) { b->counted = 1; nblocked++; }
    if (b->deadline > 0 && !ev_is_active(&b->timer)) {
        double s = (double)(b->deadline - px_now_ms()) / 1000.0;
        ev_timer_set(&b->timer, s > 0 ? s : 0.0, 0.);
        ev_timer_start(px_srv.loop, &b->timer);
    }
    return 1;
}

/* ------------------------------------------------------------ streams */

/* The storage's "-XBLOCK <id>..." reply (storage/value/stream.h). */
static int is_xblock(const char *r, size_t len) {
    return len >= 9 && !memcmp(r, "-XBLOCK", 7) && (r[7] == ' ' || r[7] == '\r');
}

/* After the marker: the streams (keys), the ids waited after, the wake-up
 * read's COUNT (Redis: COUNT, else 1000), GROUP's place, the deadline (BLOCK
 * ms; 0 = forever). The storage checked the arguments. 0, or -1 (memory). */
static int stream_setup(px_blk *b, const char *r, size_t len) {
    int sa = 0;
    long long ms = 0, count = 0;
    for (int i = 1; i < b->argc; i++) {
        const resp_arg *a = &b->argv[i];
        int more = b->argc - i - 1;
        if (resp_arg_is(a, "block") && more) { i++; resp_str2ll(b->argv[i].ptr, b->argv[i].len, &ms); }
        else if (resp_arg_is(a, "count") && more) { i++; resp_str2ll(b->argv[i].ptr, b->argv[i].len, &count); }
        else if (resp_arg_is(a, "streams") && more) { sa = i + 1; break; }
        else if (resp_arg_is(a, "group") && more >= 2) { b->xgroup = i + 1; i += 2; }
        else if (resp_arg_is(a, "noack")) b->xnoack = 1;
    }
    if (!sa) return -1;
    b->kfirst = sa;
    b->nkeys = (b->argc - sa) / 2;
    snprintf(b->xcount, sizeof b->xcount, "%lld", count > 0 ? count : 1000);
    b->deadline = ms > 0 ? deadline_after(ms) : 0;
    b->xidbuf = malloc(len + 1);
    b->xid = calloc((size_t)b->nkeys + 1, sizeof *b->xid);
    if (!b->xidbuf || !b->xid) return -1;
    memcpy(b->xidbuf, r, len);
    b->xidbuf[len] = '\0';
    char *p = b->xidbuf + 7, *end = b->xidbuf + len;
    int n = 0;
    while (p < end && *p == ' ' && n < b->nkeys) {
        char *q = ++p;
        while (q < end && *q != ' ' && *q != '\r') q++;
        b->xid[n++] = (resp_arg){ p, (size_t)(q - p) };
        p = q;
    }
    return n == b->nkeys ? 0 : -1;
}

/* b's place in k's FIFO: the waiter after it (NULL: none, or not there). */
static bnode *node_after(px_blk *b, bkey *k) {
    for (int i = 0; i < b->nnodes; i++)
        if (b->nodes[i].k == k) return b->nodes[i].next;
    return NULL;
}

/* A wake-up try on k ended: the next waiter is tried when it may be served
 * too (a stream read does not consume the entries: every waiter whose id
 * is older is served), or from the head when k was written meanwhile. */
static void wake_end(bkey *k, bnode *next, int go_on) {
    if (k->dirty) {
        k->dirty = 0;
        k->has_resume = 0;
        k->resume = NULL;
        make_ready(k);
    } else if (go_on && next) {
        k->has_resume = 1;
        k->resume = next;
        make_ready_first(k);
    }
    k->busy = 0;
    maybe_free_key(k);
}

/* A waiter that was in a try on another key when one of its keys was
 * ready (serve_key passed it by, marking it dirty): its other keys are
 * looked at again, so that the next waiters there are served (b itself,
 * when still waiting, or after it). */
static void recheck_keys(px_blk *b, bkey *except) {
    if (!b->dirty) return;
    b->dirty = 0;
    for (int i = 0; i < b->nnodes; i++)
        if (b->nodes[i].k != except) make_ready(b->nodes[i].k);
}

static void finish_error(px_blk *b, const char *e) { blk_finish(b, e, strlen(e)); }

/* XREADGROUP woken to -NOGROUP: Redis tells a deleted key from a deleted
 * group (blocked.c): EXISTS decides. */
static void on_gone(void *arg, const char *reply, size_t len) {
    px_blk *b = arg;
    b->trying = 0;
    bkey *k = b->try_key;
    b->try_key = NULL;
    bnode *next = node_after(b, k);
    if (!b->c) blk_free(b);
    else if (len >= 2 && reply[0] == ':' && reply[1] != '0')
        finish_error(b, "-NOGROUP the consumer group this client was blocked on no longer exists\r\n");
    else
        finish_error(b, "-UNBLOCKED the stream key no longer exists\r\n");
    wake_end(k, next, 1);
    serve_ready();
}

/* BLMOVE / BRPOPLPUSH woken to -WRONGTYPE: when its source is a list, the
 * destination is what is wrong, and Redis answers the error (the element
 * stays in the source, blocked.c / t_list.c); a source that is no list
 * keeps it waiting (Redis would not have served it). */
static void on_src_type(void *arg, const char *reply, size_t len) {
    px_blk *b = arg;
    b->trying = 0;
    bkey *k = b->try_key;
    b->try_key = NULL;
    bnode *next = node_after(b, k);
    int ended = 1;
    if (!b->c) {
        blk_free(b);
    } else if (len == 7 && !memcmp(reply, "+list\r\n", 7)) {
        char e[96];
        int n = snprintf(e, sizeof e, "-%s\r\n", fd_strerror(FD_E_WRONGTYPE));
        blk_finish(b, e, (size_t)n);
    } else if (b->unblock) {
        finish_unblocked(b);
    } else if (b->timed_out) {
        finish_null(b, 1);
    } else {
        ended = 0;
    }
    wake_end(k, next, ended);
    serve_ready();
}

/* The restore below is done: the key has its elements back, so its other
 * waiters may be served. arg: the key's name (malloc'ed, NUL-terminated). */
static void on_restored(void *arg, const char *reply, size_t len) {
    char *key = arg;
    if (len && reply[0] == '-')
        px_log(PX_LOG_WARNING, "a blocking pop's elements could not be put back on '%s': %.*s",
               key, (int)(len > 200 ? 200 : len - 2), reply + 1);
    signal_key(key, strlen(key));
    free(key);
    serve_ready();
}

/* The client left while its try was in flight and the try popped: Redis
 * would have unblocked it before popping, so what was popped goes back where
 * it came from (the head or tail it left, in its order; a sorted set's
 * members with their scores) rather than being lost. Another client's
 * command may run in between on an asynchronous backend: the elements are
 * kept, their place then is that of a push after it. BLMOVE/BRPOPLPUSH
 * moved the element to the destination (kept there); XREAD changes nothing
 * and XREADGROUP's entries stay in the group's pending list (XCLAIM). */
static void restore_popped(px_blk *b, const char *reply, size_t len) {
    const char *name;
    const resp_arg *key = NULL;
    int zset = b->kind == K_ZMIN || b->kind == K_ZMAX || b->kind == K_ZMPOP;
    switch (b->kind) {
    case K_LPOP: name = "lpush"; key = &b->tw[1]; break;
    case K_RPOP: name = "rpush"; key = &b->tw[1]; break;
    case K_ZMIN: case K_ZMAX: name = "zadd"; key = &b->tw[1]; break;
    case K_ZMPOP: name = "zadd"; break;
    case K_LMOVE: case K_RPOPLPUSH:
        px_log(PX_LOG_NOTICE, "a client left while its blocking %s was served: the element stays on '%s'",
               b->twin->name, b->argv[2].ptr);
        return;
    case K_LMPOP: {                                /* BLMPOP timeout numkeys key... LEFT|RIGHT */
        long long nk;
        if (resp_str2ll(b->argv[2].ptr, b->argv[2].len, &nk) || nk < 1 || 3 + nk >= b->argc) return;
        name = resp_arg_is(&b->argv[3 + nk], "left") ? "lpush" : "rpush";
        break;
    }
    default: return;
    }
    const fd_command *cmd = fd_command_lookup(name, strlen(name));
    size_t n = 0;
    const char *p = reply, *end = reply + len, *s;
    size_t sl;
    while (resp_reply_next_scalar(&p, end, &s, &sl) == 1) n++;
    resp_arg *v = cmd ? malloc((n + 2) * sizeof *v) : NULL;
    char *kname = NULL;
    if (v) {
        int argc = 0;
        v[argc++] = (resp_arg){ (char *)name, strlen(name) };
        p = reply;
        if (key) v[argc++] = *key;
        size_t first = (size_t)argc;
        while (resp_reply_next_scalar(&p, end, &s, &sl) == 1) v[argc++] = (resp_arg){ (char *)s, sl };
        /* lists: popped in order from one end, pushed back in reverse;
         * sorted sets: member, score pairs become ZADD's score, member */
        size_t from = key ? first : first + 1, cnt = (size_t)argc - from;
        if (!zset)
            for (size_t i = 0; i < cnt / 2; i++) {
                resp_arg t = v[from + i]; v[from + i] = v[argc - 1 - i]; v[argc - 1 - i] = t;
            }
        else
            for (size_t i = from; i + 1 < (size_t)argc; i += 2) {
                resp_arg t = v[i]; v[i] = v[i + 1]; v[i + 1] = t;
            }
        const resp_arg *kk = key ? key : &v[first];
        if (cnt && (!zset || cnt % 2 == 0) && (kname = malloc(kk->len + 1))) {
            memcpy(kname, kk->ptr, kk->len);
            kname[kk->len] = '\0';
            px_log(PX_LOG_NOTICE, "a client left while its blocking %s was served: %zu element(s) put back on '%s'",
                   b->twin->name, zset ? cnt / 2 : cnt, kname);
            px_call_backend(NULL, cmd, argc, v, NULL, 0, 2, 0, on_restored, kname, NULL);
        }
    }
    if (!kname) px_log(PX_LOG_WARNING, "a client left while its blocking %s was served: its reply is lost", b->twin->name);
    free(v);
}

/* The first sequence found nothing: b waits. On an asynchronous backend a
 * write submitted while that sequence was in flight ran after it, and its
 * signal found no waiter yet (b is in its keys' FIFOs only from now): its
 * keys are tried once more, or that write's wake-up would be lost. Until
 * those tries are over b is *settling*: a write that comes in meanwhile may
 * be served as one that ran before b blocked (b tries its keys in its own
 * order, not in the order they were signalled), so b is not yet counted in
 * blocked_clients (settle_count); CLIENT UNBLOCK reaches it already. */
static void block_after_first(px_blk *b) {
    px_backend *be = px_srv.primary;
    int settle = be && be->b.ops->async;
    if (!block_or_null(b, !settle) || !settle) return;
    settle_add(b);
    for (int i = 0; i < b->nnodes; i++) make_ready(b->nodes[i].k);
}

/* b has settled when no try of its own is in flight and none of its keys
 * has one in flight, is ready, was written meanwhile (dirty) or waits on a
 * first waiter that is trying (it looks again when that try ends). */
static int settled(const px_blk *b) {
    if (b->trying) return 0;
    for (int i = 0; i < b->nnodes; i++) {
        const bkey *k = b->nodes[i].k;
        if (k->busy || k->in_ready || k->dirty || (k->head && k->head->b->trying)) return 0;
    }
    return 1;
}

/* The settled waiters are counted from now: a client that INFO counts as
 * blocked is served as Redis serves the blocked ones. */
static void settle_count(void) {
    for (px_blk *b = settling, *next; b; b = next) {
        next = b->settle_next;
        if (!settled(b)) continue;
        settle_del(b);
        b->counted = 1;
        nblocked++;
    }
}

static void on_try(void *arg, const char *reply, size_t len) {
    px_blk *b = arg;
    b->trying = 0;
    if (b->try_inline) {                            /* answered inside its submit */
        *b->try_inline = 1;
        b->try_inline = NULL;
        watch_outcome(b->twin, b->twn, b->tw, reply, len, NULL);
    } else if (b->c) {                              /* owed: the others were marked at submit */
        watch_outcome(b->twin, b->twn, b->tw, reply, len, b->c);
    }
    int atomic = b->atomic;
    bkey *k = b->try_initial ? NULL : b->try_key;   /* stays busy (not freed) until the end */
    b->try_key = NULL;
    int err = len && reply[0] == '-';
    int served = !is_null_reply(reply, len) && !err;
    if (served && b->c && (b->kind == K_LMOVE || b->kind == K_RPOPLPUSH))
        signal_key(b->argv[2].ptr, b->argv[2].len);  /* it pushed onto dst */
    if (!b->c) {                                    /* the client left meanwhile */
        if (served && !is_xblock(reply, len)) restore_popped(b, reply, len);
        int stream = IS_STREAM(b->kind);
        blk_free(b);
        if (k) wake_end(k, k->head, stream);        /* the others on k are still owed their try */
        if (!atomic) serve_ready();
        return;
    }
    if (b->try_initial && IS_STREAM(b->kind)) {
        if (!is_xblock(reply, len)) {
            blk_finish(b, reply, len);              /* served at once, or an error */
        } else if (stream_setup(b, reply, len)) {
            finish_error(b, PX_OOM_REPLY);
        } else {
            block_after_first(b);
        }
    } else if (b->try_initial) {
        if (err || !is_null_reply(reply, len)) {
            finish_served(b, &b->argv[b->kfirst + b->seq], reply, len);
        } else if (b->kind != K_LMPOP && b->kind != K_ZMPOP && b->kind != K_LMOVE && b->kind != K_RPOPLPUSH &&
                   ++b->seq < b->nkeys) {
            run_try(b, b->kfirst + b->seq);
            return;
        } else if (b->dirty && !b->atomic) {
            b->dirty = 0;
            first_try(b);
            return;
        } else {
            block_after_first(b);
        }
    } else {
        /* a wake-up: a WRONGTYPE or a miss leaves it waiting, as in Redis
         * (but XREADGROUP: its key deleted or its group destroyed ends it) */
        bnode *next = node_after(b, k);
        int stream = IS_STREAM(b->kind) || (next && IS_STREAM(next->b->kind));
        if (served) {
            recheck_keys(b, k);
            finish_served(b, &(resp_arg){ k->e->name, k->e->len }, reply, len);
        } else if (b->kind == K_XGROUP && err && len >= 9 && !memcmp(reply, "-NOGROUP ", 9)) {
            static const resp_arg ex = { (char *)"exists", 6 };
            b->tw[0] = ex;
            b->tw[1] = (resp_arg){ k->e->name, k->e->len };
            b->trying = 1;
            b->try_key = k;
            px_call_backend(b->c, fd_command_lookup("exists", 6), 2, b->tw, NULL, 0, b->proto, 0, on_gone, b, NULL);
            return;
        } else if ((b->kind == K_LMOVE || b->kind == K_RPOPLPUSH) && err && len >= 10 &&
                   !memcmp(reply, "-WRONGTYPE", 10)) {
            static const resp_arg ty = { (char *)"type", 4 };
            b->tw[0] = ty;
            b->tw[1] = (resp_arg){ k->e->name, k->e->len };
            b->trying = 1;
            b->try_key = k;
            px_call_backend(b->c, fd_command_lookup("type", 4), 2, b->tw, NULL, 0, b->proto, 0, on_src_type, b, NULL);
            return;
        } else if (b->kind == K_XGROUP && err && len >= 10 && !memcmp(reply, "-WRONGTYPE", 10)) {
            finish_error(b, "-UNBLOCKED the stream key no longer exists\r\n");
        } else if (b->unblock) {
            finish_unblocked(b);
        } else if (b->timed_out) {
            finish_null(b, 1);
        } else {
            recheck_keys(b, k);
        }
        wake_end(k, next, served || stream);
        k = NULL;
    }
    if (k) { k->busy = 0; maybe_free_key(k); }
    if (!atomic) serve_ready();         /* (an EXEC's ready keys are served after it) */
}

/* The first waiter of k (or, going on through a stream's waiters, the one
 * after the last tried) is tried on k. */
static void serve_key(bkey *k) {
    if (k->busy) { k->dirty = 1; return; }
    bnode *n = k->has_resume ? k->resume : k->head;
    k->has_resume = 0;
    k->resume = NULL;
    while (n && n->b->trying && IS_STREAM(n->b->kind)) { n->b->dirty = 1; n = n->next; }
    if (!n) return;
    px_blk *b = n->b;
    if (b->trying) { b->dirty = 1; return; }        /* in its first sequence: it will look again */
    k->busy = 1;
    b->try_initial = 0;
    b->try_key = k;
    int ki = -1;
    for (int i = 0; i < b->nkeys; i++) {
        const resp_arg *a = &b->argv[b->kfirst + i];
        if (a->len == k->e->len && !memcmp(a->ptr, k->e->name, a->len)) { ki = b->kfirst + i; break; }
    }
    run_try(b, ki);
}

static void serve_ready(void) {
    /* never inside a transaction or script (an asynchronous backend's unit
     * runs the loop until its replies are in): after it */
    if (serving || px_srv.atomic_owner) return;
    serving = 1;
    while (ready_head) {
        bkey *k = ready_head;
        ready_head = k->ready_next;
        if (!ready_head) ready_tail = NULL;
        k->in_ready = 0;
        k->ready_next = NULL;
        k->in_service = 1;               /* a synchronous try may end (and free) it inside */
        serve_key(k);
        k->in_service = 0;
        maybe_free_key(k);
    }
    serving = 0;
    if (settling) settle_count();
}

void px_block_after_command(void) {
    if (ready_head) serve_ready();
    else if (settling) settle_count();   /* a try that ended inside an atomic unit left it uncounted */
}

/* ------------------------------------------------------------ the commands */

static void on_remote(void *arg, const char *reply, size_t len) {
    px_blk *b = arg;
    b->remote = NULL;
    if (!b->c) { blk_free(b); return; }
    /* WATCH: the others were marked at submit (block_command) */
    watch_outcome(fd_command_lookup(b->argv[0].ptr, b->argv[0].len), b->argc, b->argv, reply, len, b->c);
    if (b->unblock) finish_unblocked(b);
    else blk_finish(b, reply, len);
}

static void block_command(px_conn *c, int argc, resp_arg *argv, int kind, int tpos, const char *twin) {
    if (kind == K_LMOVE) {
        for (int i = 3; i <= 4; i++)
            if (!resp_arg_is(&argv[i], "left") && !resp_arg_is(&argv[i], "right")) {
                resp_add_error(&c->out, "ERR syntax error");
                return;
            }
    }
    if (kind == K_LMPOP || kind == K_ZMPOP) {
        /* Redis 7.0 reads numkeys, the end and COUNT before the timeout
         * (lmpopGenericCommand, zmpopGenericCommand): their errors first,
         * and never a node's -MOVED for a count that names no key */
        long long nk, count;
        int where, replied;
        int s = fd_mpop_parse(argv, argc, 2, kind == K_ZMPOP, &nk, &where, &count, &c->out, &replied);
        if (s == FD_E_SYNTAX) resp_add_error(&c->out, "ERR syntax error");
        else if (s != FD_OK) resp_add_error(&c->out, PX_OOM_TEXT);
        if (s != FD_OK || replied) return;
    }
    int64_t deadline = 0;                          /* streams: known from the storage's marker */
    if (tpos >= 0 && parse_timeout(c, &argv[tpos], &deadline)) return;
    const fd_command *tw = fd_command_lookup(twin, strlen(twin));
    px_backend *be = px_srv.primary;
    int remote = be && be->b.ops->submit_blocking;
    if (!tw && !remote) {
        resp_add_errorf(&c->out, "ERR '%.*s' needs %s, which this frontdoor does not have",
                        (int)argv[0].len, argv[0].ptr, twin);
        return;
    }
    /* one allocation: the block, the argv copies, the twin's argv */
    size_t bytes = 0;
    for (int i = 0; i < argc; i++) bytes += argv[i].len + 1;
    px_blk *b = calloc(1, sizeof *b);
    char *buf = b ? malloc(bytes + (size_t)(2 * argc + 4) * sizeof(resp_arg)) : NULL;
    if (!buf) {
        free(b);
        resp_add_error(&c->out, PX_OOM_TEXT);
        return;
    }
    b->buf = buf;
    b->argv = (resp_arg *)buf;
    b->tw = b->argv + argc;
    char *p = (char *)(b->tw + argc + 4);
    for (int i = 0; i < argc; i++) {
        memcpy(p, argv[i].ptr, argv[i].len);
        p[argv[i].len] = '\0';
        b->argv[i] = (resp_arg){ p, argv[i].len };
        p += argv[i].len + 1;
    }
    b->c = c;
    b->kind = kind;
    b->twin = tw;
    b->argc = argc;
    b->proto = c->out.proto;
    b->deadline = deadline;
    b->atomic = c->atomic;
    ev_init(&b->timer, on_timer);
    b->timer.data = b;
    switch (kind) {
    case K_LMOVE: case K_RPOPLPUSH: b->kfirst = 1; b->nkeys = 1; break;
    case K_LMPOP: case K_ZMPOP: b->kfirst = 3; b->nkeys = 0; break;  /* known once the twin accepted them */
    case K_XREAD: case K_XGROUP: b->kfirst = 0; b->nkeys = 0; break;   /* known from the marker */
    default: b->kfirst = 1; b->nkeys = argc - 2; break;
    }
    c->blk = b;
    if (remote) {
        /* the server waits; inside a transaction or script it does not */
        b->mark = px_pending_push(c, NULL, fd_mono_ns());
        if (!b->mark) { c->blk = NULL; blk_free(b); resp_add_error(&c->out, PX_OOM_TEXT); return; }
        if (!b->atomic) { b->counted = 1; nblocked++; }
        const fd_command *self = fd_command_lookup(argv[0].ptr, argv[0].len);
        /* always a connection of its own: even where the server would not
         * block (a script), a shared connection must never risk it */
        px_watch_touch_others(self, b->argc, b->argv, c);   /* owed: the safe side for the others */
        px_call_backend(c, self, b->argc, b->argv, NULL, 0, b->proto, 1, on_remote, b, &b->remote);
        return;
    }
    if (be && be->b.ops->async) {
        b->mark = px_pending_push(c, NULL, fd_mono_ns());
        if (!b->mark) { c->blk = NULL; blk_free(b); resp_add_error(&c->out, PX_OOM_TEXT); return; }
    }
    first_running = b;
    first_try(b);                        /* may answer and free b */
    first_running = NULL;
}

void px_cmd_blpop(px_conn *c, int argc, resp_arg *argv) { block_command(c, argc, argv, K_LPOP, argc - 1, "lpop"); }
void px_cmd_brpop(px_conn *c, int argc, resp_arg *argv) { block_command(c, argc, argv, K_RPOP, argc - 1, "rpop"); }
void px_cmd_bzpopmin(px_conn *c, int argc, resp_arg *argv) { block_command(c, argc, argv, K_ZMIN, argc - 1, "zpopmin"); }
void px_cmd_bzpopmax(px_conn *c, int argc, resp_arg *argv) { block_command(c, argc, argv, K_ZMAX, argc - 1, "zpopmax"); }
void px_cmd_blmove(px_conn *c, int argc, resp_arg *argv) { block_command(c, argc, argv, K_LMOVE, 5, "lmove"); }
void px_cmd_brpoplpush(px_conn *c, int argc, resp_arg *argv) { block_command(c, argc, argv, K_RPOPLPUSH, 3, "rpoplpush"); }
void px_cmd_blmpop(px_conn *c, int argc, resp_arg *argv) { block_command(c, argc, argv, K_LMPOP, 1, "lmpop"); }
void px_cmd_bzmpop(px_conn *c, int argc, resp_arg *argv) { block_command(c, argc, argv, K_ZMPOP, 1, "zmpop"); }

static void xread_block(px_conn *c, int argc, resp_arg *argv) { block_command(c, argc, argv, K_XREAD, -1, "xread"); }
static void xreadgroup_block(px_conn *c, int argc, resp_arg *argv) {
    block_command(c, argc, argv, K_XGROUP, -1, "xreadgroup");
}

px_handler px_block_stream_handler(const fd_command *cmd, int argc, const resp_arg *argv) {
    int group = cmd->id == FD_CMD_xreadgroup;
    if (!group && cmd->id != FD_CMD_xread) return NULL;
    /* the options as the storage reads them (stream.c), up to STREAMS */
    for (int i = 1; i < argc; i++) {
        const resp_arg *a = &argv[i];
        int more = argc - i - 1;
        if (resp_arg_is(a, "block") && more) return group ? xreadgroup_block : xread_block;
        if (resp_arg_is(a, "count") && more) i++;
        else if (resp_arg_is(a, "group") && more >= 2) i += 2;
        else if (!resp_arg_is(a, "noack")) return NULL;   /* STREAMS, or an error the storage replies */
    }
    return NULL;
}

/* ------------------------------------------------------------ clients */

void px_block_conn_closed(px_conn *c) {
    for (size_t i = 0; i < nresumes; i++)
        if (resumes[i] == c) resumes[i] = NULL;
    px_blk *b = c->blk;
    if (!b) return;
    c->blk = NULL;
    b->c = NULL;
    if (b->mark) { px_pending_drop(b->mark); b->mark = NULL; }
    if (b->remote) {
        px_backend *be = px_srv.primary;
        fd_pending *p = b->remote;
        /* completes p (on_remote frees b): the server forgets the wait */
        if (be && be->b.ops->cancel_blocking) be->b.ops->cancel_blocking(&be->b, p);
        return;
    }
    if (b->trying) { blk_unregister(b); return; }   /* freed when the try ends */
    blk_free(b);
}

int px_block_unblock(px_conn *c, int how) {
    px_blk *b = c->blk;
    if (!b || b->atomic || !(b->counted || b->settle_pprev)) return 0;
    b->unblock = how + 1;
    if (b->remote) {
        px_backend *be = px_srv.primary;
        if (be && be->b.ops->cancel_blocking) be->b.ops->cancel_blocking(&be->b, b->remote);
        return 1;
    }
    if (b->trying) return 1;                        /* decided when the try ends */
    finish_unblocked(b);
    return 1;
}

/* ------------------------------------------------------------ hooks (hooks.h) */

/* a backend's write: its keys' waiters will be tried (after the command) */
static void block_exec_done(const px_exec *e) {
    if (!e->handler) px_block_signal_cmd(e->cmd, e->argc, e->argv);
}

void px_blocking_hooks(void) {
    PX_HOOK_ADD(handler, px_block_stream_handler);
    PX_HOOK_ADD_IDLE(exec_done, block_exec_done);       /* these three: blk_arm */
    PX_HOOK_ADD_IDLE(after, px_block_after_command);
    PX_HOOK_ADD_IDLE(turn_start, px_block_run_resumes);   /* clients answered after blocking: their next commands */
    PX_HOOK_ADD(closed, px_block_conn_closed);
}
