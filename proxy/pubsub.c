/* pubsub.c — the pub/sub broker and MONITOR (see pubsub.h). Loop thread only. */
#include "pubsub.h"
#include "hooks.h"
#include "slowlog.h"   /* px_arg_redacted */
#include "backends.h"
#include "blocking.h"
#include "builtin.h"
#include "config.h"
#include "log.h"
#include "strmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <ev.h>

enum { PS_NKINDS = 3 };          /* FD_PS_CHANNEL, FD_PS_PATTERN, FD_PS_SHARD */

typedef struct ps_chan ps_chan;

/* One client's subscription to one name: a node in the name's list. */
typedef struct ps_sub {
    px_conn       *c;
    ps_chan       *ch;
    struct ps_sub *prev, *next;
} ps_sub;

typedef struct ps_wait ps_wait;

/* A name with subscribers (the map entry's data). */
struct ps_chan {
    px_strent *e;
    ps_sub    *head, *tail;
    size_t     n;
    int        held;             /* a relay's subscription to it is not confirmed yet */
    ps_wait   *waiting, **wtail; /* the confirmations held until it is (oldest first), its end */
};

/* A subscribe confirmation held at a reply mark until the relay holds the
 * name (docs/pubsub.md, "Subscribing through a relay"): in its name's list
 * and, by deadline, in one list of all. */
struct ps_wait {
    ps_wait   *next_in_chan;
    ps_wait   *prev, *next;      /* all waits, oldest (first deadline) first */
    ps_chan   *ch;
    fd_pending *mark;
    int64_t    deadline_ms;
    size_t     len;
    char       data[];           /* the confirmation */
};

/* A client's subscriptions, per kind, in subscription order. */
struct px_ps {
    ps_sub **subs[PS_NKINDS];
    size_t   n[PS_NKINDS], cap[PS_NKINDS];
};

static px_strmap names[PS_NKINDS];
uint64_t px_monitors;
static px_conn **mons;           /* the MONITOR clients (px_monitors of them) */
static size_t nps;               /* clients with c->ps: pub/sub's hooks are armed while nonzero */
static void monitor_exec_done(const px_exec *e);
static int pubsub_checked(px_conn *c, fd_command *cmd, int argc, resp_arg *argv, const char *raw, size_t rawlen);
static int pubsub_busy(px_conn *c);
static void ps_arm(int on) {
    px_hook_arm(checked, pubsub_checked, on);
    px_hook_arm(busy, pubsub_busy, on);
}
static size_t capmons;

static const char *const kind_sub[PS_NKINDS] = {"subscribe", "psubscribe", "ssubscribe"};
static const char *const kind_unsub[PS_NKINDS] = {"unsubscribe", "punsubscribe", "sunsubscribe"};

int px_pubsub_each(const px_conn *c, int (*fn)(void *ud, int kind, const char *name, size_t len), void *ud) {
    if (!c->ps) return 0;
    for (int k = 0; k < PS_NKINDS; k++)
        for (size_t i = 0; i < c->ps->n[k]; i++) {
            const px_strent *e = c->ps->subs[k][i]->ch->e;
            int r = fn(ud, k, e->name, e->len);
            if (r) return r;
        }
    return 0;
}

void px_pubsub_stats(uint64_t *channels, uint64_t *patterns, uint64_t *shard) {
    *channels = names[FD_PS_CHANNEL].count;
    *patterns = names[FD_PS_PATTERN].count;
    *shard = names[FD_PS_SHARD].count;
}

size_t px_pubsub_count(const px_conn *c) {
    if (!c->ps) return 0;
    return c->ps->n[0] + c->ps->n[1] + c->ps->n[2];
}

void px_pubsub_client_counts(const px_conn *c, size_t n[3]) {
    for (int k = 0; k < PS_NKINDS; k++) n[k] = c->ps ? c->ps->n[k] : 0;
}

/* The count a (un)subscribe confirmation carries: shard channels count
 * apart from channels + patterns, as in Redis 7.0. */
static long long confirm_count(const px_conn *c, int kind) {
    if (!c->ps) return 0;
    return kind == FD_PS_SHARD ? (long long)c->ps->n[FD_PS_SHARD] : (long long)(c->ps->n[0] + c->ps->n[1]);
}

static px_backend *relay(void) {
    px_backend *be = px_srv.primary;
    return be && be->b.ops->pubsub ? be : NULL;
}

/* ------------------------------------------------------------ held confirmations */

static ps_wait *wait_head, *wait_tail;
static ev_timer wait_timer;
static int wait_timer_on;

static void wait_unlink(ps_wait *w) {
    if (w->prev) w->prev->next = w->next;
    else wait_head = w->next;
    if (w->next) w->next->prev = w->prev;
    else wait_tail = w->prev;
    if (!wait_head && wait_timer_on) {
        ev_timer_stop(px_srv.loop, &wait_timer);
        wait_timer_on = 0;
    }
}

/* Every confirmation held for pc goes out (in the clients' output order:
 * each at its mark); pc is not held any more. */
static void chan_release(ps_chan *pc) {
    pc->held = 0;
    for (ps_wait *w = pc->waiting, *next; w; w = next) {
        next = w->next_in_chan;
        wait_unlink(w);
        px_pending_reply(w->mark, w->data, w->len);
        free(w);
    }
    pc->waiting = NULL;
}

/* The bound: a relay that has not confirmed a name within backend-timeout
 * (down, or slow) releases what waits for it, logged; its subscription is
 * made when it comes back (resync), messages meanwhile are not relayed. */
static void on_wait_timer(struct ev_loop *loop, ev_timer *t, int revents) {
    (void)loop; (void)t; (void)revents;
    int64_t now = px_now_ms();
    while (wait_head && wait_head->deadline_ms <= now) {
        ps_chan *pc = wait_head->ch;
        px_log(PX_LOG_WARNING, "pub/sub: the backend's relay did not confirm '%.*s' within backend-timeout "
               "(%lld ms): subscribe confirmed anyway, messages published before the relay subscribes are lost",
               (int)(pc->e->len > 200 ? 200 : pc->e->len), pc->e->name, px_cfg.be.backend_timeout);
        chan_release(pc);
    }
}

/* Hold c's confirmation (o: its bytes) until pc's relay subscription is
 * confirmed. 0, or -1 (out of memory: the caller writes it now). */
static int chan_hold(px_conn *c, ps_chan *pc, const resp_out *o) {
    ps_wait *w = malloc(sizeof *w + o->len);
    if (!w) return -1;
    if (!(w->mark = px_pending_push(c, NULL, 0))) { free(w); return -1; }
    memcpy(w->data, o->data, o->len);
    w->len = o->len;
    w->ch = pc;
    w->deadline_ms = px_now_ms() + px_cfg.be.backend_timeout;
    w->next_in_chan = NULL;
    if (!pc->waiting) pc->wtail = &pc->waiting;
    *pc->wtail = w;
    pc->wtail = &w->next_in_chan;
    w->next = NULL;
    w->prev = wait_tail;
    if (wait_tail) wait_tail->next = w;
    else wait_head = w;
    wait_tail = w;
    if (!wait_timer_on) {
        ev_timer_init(&wait_timer, on_wait_timer, 0.05, 0.05);
        ev_timer_start(px_srv.loop, &wait_timer);
        wait_timer_on = 1;
    }
    return 0;
}

void px_pubsub_backend_ready(struct fd_backend *b, int kind, const char *name, size_t len) {
    px_backend *be = relay();
    if (!be || &be->b != b || kind < 0 || kind >= PS_NKINDS) return;
    px_strent *e = px_strmap_get(&names[kind], name, len);
    if (e) chan_release(px_strmap_data(e));
}

/* ------------------------------------------------------------ delivery */

/* One message into c's output; a subscriber over its limit is closed. */
static void push_message(px_conn *c, const char *type, const char *pat, size_t plen, const char *ch, size_t clen,
                         const char *msg, size_t mlen) {
    if (c->flags & PX_CONN_CLOSE_ASAP) return;
    px_conn_push_begin(c);               /* sent whatever CLIENT REPLY says */
    resp_add_push(&c->out, pat ? 4 : 3);
    resp_add_bulk(&c->out, type, strlen(type));
    if (pat) resp_add_bulk(&c->out, pat, plen);
    resp_add_bulk(&c->out, ch, clen);
    resp_add_bulk(&c->out, msg, mlen);
    px_conn_push_end(c);
    size_t unsent = c->out.len - c->wpos;
    if (px_cfg.pubsub_output_buffer_limit > 0 && (long long)unsent > px_cfg.pubsub_output_buffer_limit) {
        px_log(PX_LOG_WARNING, "closing subscriber %llu (%s) for overcoming of output buffer limits (pubsub class, %zu bytes)",
               (unsigned long long)c->id, c->addr, unsent);
        c->flags |= PX_CONN_CLOSE_ASAP;
    }
    px_conn_check_output_limit(c);
    px_conn_touch(c);
}

static long long deliver_exact(int kind, const char *ch, size_t clen, const char *msg, size_t mlen) {
    px_strent *e = px_strmap_get(&names[kind], ch, clen);
    if (!e) return 0;
    ps_chan *pc = px_strmap_data(e);
    long long n = 0;
    for (ps_sub *s = pc->head; s; s = s->next, n++)
        push_message(s->c, kind == FD_PS_SHARD ? "smessage" : "message", NULL, 0, ch, clen, msg, mlen);
    return n;
}

static long long deliver_pattern(ps_chan *pc, const char *ch, size_t clen, const char *msg, size_t mlen) {
    long long n = 0;
    for (ps_sub *s = pc->head; s; s = s->next, n++)
        push_message(s->c, "pmessage", pc->e->name, pc->e->len, ch, clen, msg, mlen);
    return n;
}

typedef struct { const char *ch, *msg; size_t clen, mlen; long long n; } pat_walk;

static void pat_each(px_strent *e, void *arg) {
    pat_walk *w = arg;
    if (resp_glob_match(e->name, e->len, w->ch, w->clen, 0))
        w->n += deliver_pattern(px_strmap_data(e), w->ch, w->clen, w->msg, w->mlen);
}

/* PUBLISH here: channel subscribers, then every matching pattern's. */
static long long publish_local(const char *ch, size_t clen, const char *msg, size_t mlen) {
    long long n = deliver_exact(FD_PS_CHANNEL, ch, clen, msg, mlen);
    if (names[FD_PS_PATTERN].count) {
        pat_walk w = { ch, msg, clen, mlen, 0 };
        px_strmap_each(&names[FD_PS_PATTERN], pat_each, &w);
        n += w.n;
    }
    return n;
}

long long px_pubsub_publish_local(const char *ch, size_t clen, const char *msg, size_t mlen) {
    return publish_local(ch, clen, msg, mlen);
}

void px_pubsub_backend_message(struct fd_backend *b, int kind, const char *pattern, size_t plen,
                               const char *channel, size_t clen, const char *msg, size_t mlen) {
    px_backend *be = relay();
    if (!be || &be->b != b) return;      /* a swapped-out backend's late message */
    if (kind == FD_PS_PATTERN) {
        px_strent *e = px_strmap_get(&names[FD_PS_PATTERN], pattern, plen);
        if (e) deliver_pattern(px_strmap_data(e), channel, clen, msg, mlen);
    } else {
        deliver_exact(kind, channel, clen, msg, mlen);
    }
}

typedef struct { px_backend *be; int kind; } resync_walk;

static void resync_each(px_strent *e, void *arg) {
    resync_walk *w = arg;
    ((ps_chan *)px_strmap_data(e))->held = 1;    /* until the relay confirms it again */
    w->be->b.ops->pubsub(&w->be->b, w->kind, e->name, e->len, 1);
}

void px_pubsub_backend_resync(struct fd_backend *b) {
    px_backend *be = relay();
    if (!be || &be->b != b) return;
    for (int k = 0; k < PS_NKINDS; k++) {
        resync_walk w = { be, k };
        px_strmap_each(&names[k], resync_each, &w);
    }
}

/* ------------------------------------------------------------ subscriptions */

static ps_sub *find_sub(px_conn *c, int kind, const char *name, size_t len, size_t *idx) {
    if (!c->ps) return NULL;
    for (size_t i = 0; i < c->ps->n[kind]; i++) {
        ps_sub *s = c->ps->subs[kind][i];
        if (s->ch->e->len == len && !memcmp(s->ch->e->name, name, len)) { if (idx) *idx = i; return s; }
    }
    return NULL;
}

/* 1 added, 0 already there, -1 out of memory. */
static int add_sub(px_conn *c, int kind, const char *name, size_t len) {
    if (!c->ps) {
        if (!(c->ps = calloc(1, sizeof *c->ps))) return -1;
        if (nps++ == 0) ps_arm(1);
    }
    if (find_sub(c, kind, name, len, NULL)) return 0;
    struct px_ps *ps = c->ps;
    if (ps->n[kind] == ps->cap[kind]) {
        size_t ncap = ps->cap[kind] ? ps->cap[kind] * 2 : 4;
        ps_sub **ns = realloc(ps->subs[kind], ncap * sizeof *ns);
        if (!ns) return -1;
        ps->subs[kind] = ns;
        ps->cap[kind] = ncap;
    }
    ps_sub *s = calloc(1, sizeof *s);
    int created;
    px_strent *e = s ? px_strmap_add(&names[kind], name, len, sizeof(ps_chan), &created) : NULL;
    if (!e) { free(s); return -1; }
    ps_chan *pc = px_strmap_data(e);
    pc->e = e;
    s->c = c;
    s->ch = pc;
    s->prev = pc->tail;
    if (pc->tail) pc->tail->next = s;
    else pc->head = s;
    pc->tail = s;
    pc->n++;
    ps->subs[kind][ps->n[kind]++] = s;
    if (created) {
        px_backend *be = relay();
        pc->held = be != NULL;
        pc->waiting = NULL;
        if (be) be->b.ops->pubsub(&be->b, kind, name, len, 1);
    }
    return 1;
}

static void del_sub(px_conn *c, int kind, size_t idx) {
    struct px_ps *ps = c->ps;
    ps_sub *s = ps->subs[kind][idx];
    memmove(&ps->subs[kind][idx], &ps->subs[kind][idx + 1], (ps->n[kind] - idx - 1) * sizeof *ps->subs[kind]);
    ps->n[kind]--;
    ps_chan *pc = s->ch;
    if (s->prev) s->prev->next = s->next;
    else pc->head = s->next;
    if (s->next) s->next->prev = s->prev;
    else pc->tail = s->prev;
    pc->n--;
    free(s);
    if (!pc->head) {
        chan_release(pc);        /* (its subscribers left while it waited) */
        px_backend *be = relay();
        if (be) be->b.ops->pubsub(&be->b, kind, pc->e->name, pc->e->len, 0);
        px_strmap_del(&names[kind], pc->e);
    }
}

/* A (un)subscribe confirmation: a push, sent whatever CLIENT REPLY says
 * (Redis 7.0, RESP2 included). */
/* 0, or -1 out of memory (o then holds part of it) */
static int confirm_into(resp_out *o, const px_conn *c, const char *what, const char *name, size_t len, int kind) {
    return resp_add_push(o, 3) || resp_add_bulk(o, what, strlen(what)) ||
           (name ? resp_add_bulk(o, name, len) : resp_add_null(o)) || resp_add_int(o, confirm_count(c, kind));
}

static void confirm(px_conn *c, const char *what, const char *name, size_t len, int kind) {
    px_conn_push_begin(c);
    (void)confirm_into(&c->out, c, what, name, len, kind);   /* out of memory: the output's own handling */
    px_conn_push_end(c);
}

/* A name the relay does not hold yet (a Redis backend): the confirmation
 * waits for the relay's (chan_hold), so that a message published after the
 * client got it reaches the client, as Redis guarantees. Not for a client
 * silenced by CLIENT REPLY (its confirmation is written now, as a push) nor
 * inside a lent buffer (a script, an EXEC answered here). */
static void subscribe(px_conn *c, int argc, resp_arg *argv, int kind) {
    for (int i = 1; i < argc; i++) {
        if (add_sub(c, kind, argv[i].ptr, argv[i].len) < 0) {
            resp_add_error(&c->out, PX_OOM_TEXT);
            return;
        }
        ps_chan *pc = px_strmap_data(px_strmap_get(&names[kind], argv[i].ptr, argv[i].len));
        if (pc->held && !c->muting && !c->out_lent) {
            resp_out o;
            resp_out_init(&o, c->out.proto);
            int held = confirm_into(&o, c, kind_sub[kind], argv[i].ptr, argv[i].len, kind) == 0 &&
                       chan_hold(c, pc, &o) == 0;
            resp_out_free(&o);
            if (held) continue;
        }
        confirm(c, kind_sub[kind], argv[i].ptr, argv[i].len, kind);
    }
}

static void unsubscribe(px_conn *c, int argc, resp_arg *argv, int kind) {
    if (argc == 1) {
        if (!c->ps || !c->ps->n[kind]) {
            confirm(c, kind_unsub[kind], NULL, 0, kind);
            return;
        }
        /* the newest first keeps the array moves O(1) */
        while (c->ps->n[kind]) {
            size_t i = c->ps->n[kind] - 1;
            ps_sub *s = c->ps->subs[kind][i];
            char *name = s->ch->e->name;
            size_t len = s->ch->e->len;
            char small[256], *copy = len < sizeof small ? small : malloc(len);
            if (!copy) { resp_add_error(&c->out, PX_OOM_TEXT); return; }
            memcpy(copy, name, len);
            del_sub(c, kind, i);
            confirm(c, kind_unsub[kind], copy, len, kind);
            if (copy != small) free(copy);
        }
        return;
    }
    for (int i = 1; i < argc; i++) {
        size_t idx;
        if (find_sub(c, kind, argv[i].ptr, argv[i].len, &idx)) del_sub(c, kind, idx);
        confirm(c, kind_unsub[kind], argv[i].ptr, argv[i].len, kind);
    }
}

void px_cmd_subscribe(px_conn *c, int argc, resp_arg *argv) { subscribe(c, argc, argv, FD_PS_CHANNEL); }
void px_cmd_psubscribe(px_conn *c, int argc, resp_arg *argv) { subscribe(c, argc, argv, FD_PS_PATTERN); }
void px_cmd_ssubscribe(px_conn *c, int argc, resp_arg *argv) { subscribe(c, argc, argv, FD_PS_SHARD); }
void px_cmd_unsubscribe(px_conn *c, int argc, resp_arg *argv) { unsubscribe(c, argc, argv, FD_PS_CHANNEL); }
void px_cmd_punsubscribe(px_conn *c, int argc, resp_arg *argv) { unsubscribe(c, argc, argv, FD_PS_PATTERN); }
void px_cmd_sunsubscribe(px_conn *c, int argc, resp_arg *argv) { unsubscribe(c, argc, argv, FD_PS_SHARD); }

void px_pubsub_reset(px_conn *c) {
    if (c->monitor) {
        c->monitor = 0;
        for (size_t i = 0; i < px_monitors; i++)
            if (mons[i] == c) { mons[i] = mons[--px_monitors]; break; }
        if (!px_monitors) px_hook_arm(exec_done, monitor_exec_done, 0);
    }
    if (!c->ps) return;
    for (int k = 0; k < PS_NKINDS; k++) {
        while (c->ps->n[k]) del_sub(c, k, c->ps->n[k] - 1);
        free(c->ps->subs[k]);
    }
    free(c->ps);
    c->ps = NULL;
    if (--nps == 0) ps_arm(0);
}

void px_pubsub_conn_closed(px_conn *c) { px_pubsub_reset(c); }

int px_pubsub_denied(px_conn *c, const fd_command *cmd) {
    if (c->out.proto != 2 || !px_pubsub_count(c)) return 0;
    switch (cmd->id) {
    case FD_CMD_subscribe: case FD_CMD_psubscribe: case FD_CMD_ssubscribe:
    case FD_CMD_unsubscribe: case FD_CMD_punsubscribe: case FD_CMD_sunsubscribe:
    case FD_CMD_ping: case FD_CMD_quit: case FD_CMD_reset:
        return 0;
    default:
        resp_add_errorf(&c->out, "ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / "
                                 "RESET are allowed in this context", cmd->name);
        return 1;
    }
}

/* ------------------------------------------------------------ PUBLISH */

/* ---- counts through a relaying backend (docs/pubsub.md, "Counts")
 *
 * The server counts the relay once per name it holds (a channel, each
 * matching pattern), not frontdoor's subscribers behind it. A count is
 * turned into a redis-server's: this frontdoor's subscribers, plus what the
 * server counted beyond the relay (clients connected to it directly). */

/* `<type><integer>\r\n` at *p (advanced past it); -1 if not that. */
static int scan_int_line(const char **p, const char *end, char type, long long *v) {
    const char *q = *p;
    if (q >= end || *q != type) return -1;
    const char *cr = memchr(q, '\r', (size_t)(end - q));
    if (!cr || cr + 1 >= end || cr[1] != '\n' || resp_str2ll(q + 1, (size_t)(cr - q - 1), v)) return -1;
    *p = cr + 2;
    return 0;
}

/* A bulk at *p: its bytes (advanced past it); -1 if not a bulk. */
static int scan_bulk(const char **p, const char *end, const char **s, size_t *n) {
    long long len;
    if (scan_int_line(p, end, '$', &len) || len < 0 || end - *p < len + 2) return -1;
    *s = *p;
    *n = (size_t)len;
    *p += len + 2;
    return 0;
}

static long long beyond_relay(long long server, long long relayed) {
    return server > relayed ? server - relayed : 0;
}

/* The receivers here of a message on channel ch, and how many of the
 * relay's subscriptions the server counts for it (the channel, each
 * matching pattern). */
typedef struct { const char *ch; size_t clen; long long local, relayed; } count_walk;

static void count_pat(px_strent *e, void *arg) {
    count_walk *w = arg;
    if (!resp_glob_match(e->name, e->len, w->ch, w->clen, 0)) return;
    w->local += (long long)((ps_chan *)px_strmap_data(e))->n;
    w->relayed++;
}

/* An adjusted count: the reply owed at `mark` when the server's comes. */
typedef struct pub_adjust {
    fd_pending *mark;
    int         sub;            /* PUBSUB subcommand: 0 PUBLISH/SPUBLISH, 1 NUMSUB/SHARDNUMSUB, 2 NUMPAT, 3 (SHARD)CHANNELS */
    int         kind;           /* FD_PS_* */
    long long   local, relayed; /* PUBLISH: receivers here, relay subscriptions the server counts; NUMPAT: local */
    const resp_arg *pat;        /* CHANNELS: its pattern (copied below) or NULL */
    resp_arg    patbuf;
} pub_adjust;

static void adjusted_numsub(pub_adjust *a, const char *reply, size_t len, resp_out *o);
static void adjusted_channels(pub_adjust *a, const char *reply, size_t len, resp_out *o);

static void adjust_done(void *arg, const char *reply, size_t len) {
    pub_adjust *a = arg;
    resp_out o;
    resp_out_init(&o, 2);
    long long n;
    const char *p = reply, *end = reply + len;
    if (len && reply[0] != '-') {
        if (a->sub == 0 && !scan_int_line(&p, end, ':', &n))
            resp_add_int(&o, a->local + beyond_relay(n, a->relayed));
        else if (a->sub == 2 && !scan_int_line(&p, end, ':', &n))
            resp_add_int(&o, n > a->local ? n : a->local);   /* the union of the unique patterns */
        else if (a->sub == 1)
            adjusted_numsub(a, reply, len, &o);
        else if (a->sub == 3)
            adjusted_channels(a, reply, len, &o);
    }
    if (o.len) px_pending_reply(a->mark, o.data, o.len);
    else px_pending_reply(a->mark, reply, len);          /* an error, or not the expected shape: as is */
    resp_out_free(&o);
    free(a->patbuf.ptr);
    free(a);
}

/* Send the command to the server; its reply, adjusted, at c's mark. */
static void forward_adjusted(px_conn *c, const fd_command *cmd, int argc, resp_arg *argv, pub_adjust *a) {
    fd_pending *m = px_pending_push(c, NULL, fd_mono_ns());
    if (!m) { free(a); resp_add_error(&c->out, PX_OOM_TEXT); return; }
    a->mark = m;
    px_call_backend(c, cmd, argc, argv, NULL, 0, c->out.proto, 0, adjust_done, a, NULL);
}

void px_cmd_publish(px_conn *c, int argc, resp_arg *argv) {
    if (relay()) {
        pub_adjust *a = calloc(1, sizeof *a);
        if (!a) { resp_add_error(&c->out, PX_OOM_TEXT); return; }
        count_walk w = { argv[1].ptr, argv[1].len, 0, 0 };
        px_strent *e = px_strmap_get(&names[FD_PS_CHANNEL], argv[1].ptr, argv[1].len);
        if (e) { w.local = (long long)((ps_chan *)px_strmap_data(e))->n; w.relayed = 1; }
        if (names[FD_PS_PATTERN].count) px_strmap_each(&names[FD_PS_PATTERN], count_pat, &w);
        a->local = w.local;
        a->relayed = w.relayed;
        forward_adjusted(c, fd_command_by_id(FD_CMD_publish), argc, argv, a);
        return;
    }
    resp_add_int(&c->out, publish_local(argv[1].ptr, argv[1].len, argv[2].ptr, argv[2].len));
}

void px_cmd_spublish(px_conn *c, int argc, resp_arg *argv) {
    if (relay()) {
        pub_adjust *a = calloc(1, sizeof *a);
        if (!a) { resp_add_error(&c->out, PX_OOM_TEXT); return; }
        px_strent *e = px_strmap_get(&names[FD_PS_SHARD], argv[1].ptr, argv[1].len);
        a->local = e ? (long long)((ps_chan *)px_strmap_data(e))->n : 0;
        a->relayed = e ? 1 : 0;
        forward_adjusted(c, fd_command_by_id(FD_CMD_spublish), argc, argv, a);
        return;
    }
    resp_add_int(&c->out, deliver_exact(FD_PS_SHARD, argv[1].ptr, argv[1].len, argv[2].ptr, argv[2].len));
}

/* ------------------------------------------------------------ PUBSUB */

typedef struct { const resp_arg *pat; resp_out *o; long long n; } chan_walk;

static void chan_each(px_strent *e, void *arg) {
    chan_walk *w = arg;
    if (w->pat && !resp_glob_match(w->pat->ptr, w->pat->len, e->name, e->len, 0)) return;
    resp_add_bulk(w->o, e->name, e->len);
    w->n++;
}

static void list_names(px_conn *c, int kind, const resp_arg *pat) {
    resp_out tmp;
    resp_out_init(&tmp, c->out.proto);
    chan_walk w = { pat, &tmp, 0 };
    px_strmap_each(&names[kind], chan_each, &w);
    resp_add_array(&c->out, w.n);
    if (tmp.len) resp_out_raw(&c->out, tmp.data, tmp.len);
    resp_out_free(&tmp);
}

static long long local_subs(int kind, const char *name, size_t len) {
    px_strent *e = px_strmap_get(&names[kind], name, len);
    return e ? (long long)((ps_chan *)px_strmap_data(e))->n : 0;
}

static void numsub(px_conn *c, int kind, int argc, resp_arg *argv) {
    resp_add_array(&c->out, (long long)(argc - 2) * 2);
    for (int i = 2; i < argc; i++) {
        resp_add_bulk(&c->out, argv[i].ptr, argv[i].len);
        resp_add_int(&c->out, local_subs(kind, argv[i].ptr, argv[i].len));
    }
}

/* The server's [name, count, ...]: each count is this frontdoor's
 * subscribers plus the server's beyond the relay (which holds the name
 * once when a subscriber here does). Nothing written if not that shape. */
static void adjusted_numsub(pub_adjust *a, const char *reply, size_t len, resp_out *o) {
    const char *p = reply, *end = reply + len;
    long long n;
    if (scan_int_line(&p, end, '*', &n) || n < 0 || n % 2) return;
    resp_add_array(o, n);
    for (long long i = 0; i < n; i += 2) {
        const char *name;
        size_t nl;
        long long server;
        if (scan_bulk(&p, end, &name, &nl) || scan_int_line(&p, end, ':', &server)) { o->len = 0; return; }
        long long here = local_subs(a->kind, name, nl);
        resp_add_bulk(o, name, nl);
        resp_add_int(o, here + beyond_relay(server, here > 0));
    }
}

/* The server's channel list (the relay's, which are this frontdoor's, and
 * its direct clients'), with this frontdoor's that it does not list (a
 * subscription the relay has not made yet). Nothing written if not that
 * shape, or out of memory (the server's list goes as is). */
typedef struct { px_strmap *seen; resp_out *o; const resp_arg *pat; long long n; } union_walk;

static void union_each(px_strent *e, void *arg) {
    union_walk *w = arg;
    if (w->pat && !resp_glob_match(w->pat->ptr, w->pat->len, e->name, e->len, 0)) return;
    if (px_strmap_get(w->seen, e->name, e->len)) return;
    resp_add_bulk(w->o, e->name, e->len);
    w->n++;
}

static void adjusted_channels(pub_adjust *a, const char *reply, size_t len, resp_out *o) {
    const char *p = reply, *end = reply + len;
    long long n;
    if (scan_int_line(&p, end, '*', &n) || n < 0) return;
    const char *items = p;
    px_strmap seen = {0};
    for (long long i = 0; i < n; i++) {
        const char *s;
        size_t sl;
        if (scan_bulk(&p, end, &s, &sl) || !px_strmap_add(&seen, s, sl, 0, NULL)) { px_strmap_clear(&seen); return; }
    }
    resp_out extra;
    resp_out_init(&extra, 2);
    union_walk w = { &seen, &extra, a->pat, 0 };
    px_strmap_each(&names[a->kind], union_each, &w);
    px_strmap_clear(&seen);
    resp_add_array(o, n + w.n);
    resp_out_raw(o, items, (size_t)(p - items));
    if (extra.len) resp_out_raw(o, extra.data, extra.len);
    resp_out_free(&extra);
}

/* PUBSUB through a relaying backend: its answer, adjusted (above). */
static void pubsub_forward(px_conn *c, int argc, resp_arg *argv, int sub, int kind) {
    pub_adjust *a = calloc(1, sizeof *a);
    if (!a) { resp_add_error(&c->out, PX_OOM_TEXT); return; }
    a->sub = sub;
    a->kind = kind;
    a->local = (long long)names[FD_PS_PATTERN].count;
    if (sub == 3 && argc == 3) {
        if (!(a->patbuf.ptr = malloc(argv[2].len ? argv[2].len : 1))) { free(a); resp_add_error(&c->out, PX_OOM_TEXT); return; }
        memcpy(a->patbuf.ptr, argv[2].ptr, argv[2].len);
        a->patbuf.len = argv[2].len;
        a->pat = &a->patbuf;
    }
    forward_adjusted(c, fd_command_by_id(FD_CMD_pubsub), argc, argv, a);
}

void px_cmd_pubsub(px_conn *c, int argc, resp_arg *argv) {
    resp_arg *sub = &argv[1];
    if (resp_arg_is(sub, "help") && argc == 2) {
        static const char *const help[] = {
            "CHANNELS [<pattern>]",
            "    Return the currently active channels matching a <pattern> (default: '*').",
            "NUMPAT", "    Return number of subscriptions to patterns.",
            "NUMSUB [<channel> ...]",
            "    Return the number of subscribers for the specified channels, excluding",
            "    pattern subscriptions(default: no channels).",
            "SHARDCHANNELS [<pattern>]",
            "    Return the currently active shard level channels matching a <pattern> (default: '*').",
            "SHARDNUMSUB [<shardchannel> ...]",
            "    Return the number of subscribers for the specified shard level channel(s)",
            "HELP", "    Prints this help.", NULL};
        resp_add_array(&c->out, 14);
        resp_add_status(&c->out, "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
        for (int i = 0; help[i]; i++) resp_add_status(&c->out, help[i]);
    } else if (resp_arg_is(sub, "channels") && argc <= 3) {
        if (relay()) pubsub_forward(c, argc, argv, 3, FD_PS_CHANNEL);
        else list_names(c, FD_PS_CHANNEL, argc == 3 ? &argv[2] : NULL);
    } else if (resp_arg_is(sub, "shardchannels") && argc <= 3) {
        if (relay()) pubsub_forward(c, argc, argv, 3, FD_PS_SHARD);
        else list_names(c, FD_PS_SHARD, argc == 3 ? &argv[2] : NULL);
    } else if (resp_arg_is(sub, "numsub")) {
        if (relay()) pubsub_forward(c, argc, argv, 1, FD_PS_CHANNEL);
        else numsub(c, FD_PS_CHANNEL, argc, argv);
    } else if (resp_arg_is(sub, "shardnumsub")) {
        if (relay()) pubsub_forward(c, argc, argv, 1, FD_PS_SHARD);
        else numsub(c, FD_PS_SHARD, argc, argv);
    } else if (resp_arg_is(sub, "numpat")) {
        if (argc != 2) { resp_add_error(&c->out, "ERR wrong number of arguments for 'pubsub|numpat' command"); return; }
        if (relay()) pubsub_forward(c, argc, argv, 2, FD_PS_PATTERN);
        else resp_add_int(&c->out, (long long)names[FD_PS_PATTERN].count);
    } else if (resp_arg_is(sub, "channels") || resp_arg_is(sub, "shardchannels") || resp_arg_is(sub, "help")) {
        resp_add_errorf(&c->out, "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try PUBSUB HELP.",
                        (int)(sub->len > 128 ? 128 : sub->len), sub->ptr);
    } else {
        resp_add_errorf(&c->out, "ERR unknown subcommand '%.*s'. Try PUBSUB HELP.",
                        (int)(sub->len > 128 ? 128 : sub->len), sub->ptr);
    }
}

/* ------------------------------------------------------------ MONITOR */

void px_cmd_monitor(px_conn *c, int argc, resp_arg *argv) {
    (void)argc; (void)argv;
    if (!c->monitor) {
        if (px_monitors == capmons) {
            size_t n = capmons ? capmons * 2 : 8;
            px_conn **m = realloc(mons, n * sizeof *m);
            if (!m) { resp_add_error(&c->out, PX_OOM_TEXT); return; }
            mons = m;
            capmons = n;
        }
        mons[px_monitors++] = c;
        c->monitor = 1;
        px_hook_arm(exec_done, monitor_exec_done, 1);   /* fed only while a monitor exists */
    }
    resp_add_simple(&c->out, "OK", 2);
}

/* Redis's sdscatrepr: "..." with \\ \" \n \r \t \a \b and \xHH escapes. */
static void add_repr(resp_out *o, const char *p, size_t n) {
    resp_out_raw(o, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        char esc[8];
        switch (ch) {
        case '\\': resp_out_raw(o, "\\\\", 2); break;
        case '"': resp_out_raw(o, "\\\"", 2); break;
        case '\n': resp_out_raw(o, "\\n", 2); break;
        case '\r': resp_out_raw(o, "\\r", 2); break;
        case '\t': resp_out_raw(o, "\\t", 2); break;
        case '\a': resp_out_raw(o, "\\a", 2); break;
        case '\b': resp_out_raw(o, "\\b", 2); break;
        default:
            if (ch >= 32 && ch < 127) resp_out_raw(o, p + i, 1);
            else { snprintf(esc, sizeof esc, "\\x%02x", ch); resp_out_raw(o, esc, 4); }
        }
    }
    resp_out_raw(o, "\"", 1);
}

void px_monitor_feed(px_conn *c, const fd_command *cmd, int argc, const resp_arg *argv) {
    if (!px_monitors || (cmd && (cmd->flags & FD_CMD_ADMIN))) return;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    resp_out line;
    resp_out_init(&line, 2);
    char head[160];
    int hl = snprintf(head, sizeof head, "+%ld.%06ld [%d %s%s] ", (long)tv.tv_sec, (long)tv.tv_usec, c->db,
                      (c->flags & PX_CONN_UNIX) ? "unix:" : "", (c->flags & PX_CONN_UNIX) ? px_cfg.unixsocket : c->addr);
    resp_out_raw(&line, head, (size_t)(hl < (int)sizeof head ? hl : (int)sizeof head - 1));
    for (int i = 0; i < argc; i++) {
        if (i) resp_out_raw(&line, " ", 1);
        if (px_arg_redacted(cmd, argc, argv, i)) resp_out_raw(&line, "\"(redacted)\"", 12);   /* no secret */
        else add_repr(&line, argv[i].ptr, argv[i].len);
    }
    resp_out_raw(&line, "\r\n", 2);
    for (size_t i = 0; i < px_monitors; i++) {
        px_conn *m = mons[i];
        /* a monitor silenced by CLIENT REPLY OFF/SKIP gets nothing (Redis 7.0) */
        if ((m->flags & PX_CONN_CLOSE_ASAP) || (m->reply & (PX_REPLY_OFF | PX_REPLY_SKIP))) continue;
        resp_out_raw(&m->out, line.data, line.len);
        px_conn_check_output_limit(m);
        px_conn_touch(m);
    }
    resp_out_free(&line);
}

/* ------------------------------------------------------------ hooks (hooks.h) */

static int pubsub_checked(px_conn *c, fd_command *cmd, int argc, resp_arg *argv, const char *raw, size_t rawlen) {
    (void)argc; (void)argv; (void)raw; (void)rawlen;
    return c->ps && cmd && px_pubsub_denied(c, cmd) ? PX_HOOK_REFUSED : PX_HOOK_PASS;   /* RESP2 subscribed mode */
}

static void monitor_exec_done(const px_exec *e) {
    if (!e->script && px_monitors) px_monitor_feed(e->c, e->cmd, e->argc, e->argv);
}

/* subscribers are not idle (as in Redis) */
static int pubsub_busy(px_conn *c) { return px_pubsub_count(c) != 0; }

void px_pubsub_hooks(void) {
    PX_HOOK_ADD_IDLE(checked, pubsub_checked);     /* armed while a client has subscriptions (c->ps) */
    PX_HOOK_ADD_IDLE(exec_done, monitor_exec_done);   /* armed while a monitor exists */
    PX_HOOK_ADD(closed, px_pubsub_conn_closed);
    PX_HOOK_ADD_IDLE(busy, pubsub_busy);           /* as checked */
}
