/* pending.c — replies owed by asynchronous backends, kept in request order.
 *
 * Each pending request marks an offset in its client's output buffer: the
 * replies of later commands (served by the proxy, or by the backend sooner)
 * are appended behind it, and nothing at or after the first marker is sent.
 * When the backend completes a request its reply is inserted at its mark.
 * One mechanism keeps every client's replies in request order whatever the
 * order in which backends complete. */
#include "server.h"
#include "backends.h"
#include "config.h"
#include "log.h"
#include "hooks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

size_t px_conn_sendable(const px_conn *c) { return c->pend_head ? c->pend_head->off : c->out.len; }

void px_conn_out_shifted(px_conn *c, size_t n) {
    if (c->muting) c->mute_from -= n;    /* never before safe (cut at the end of each turn) */
    if (!c->pend_head) return;
    c->pend_head->off -= n;      /* the others are relative to it */
    c->pend_tail->tail_abs -= n;
}

void px_conn_orphan_pending(px_conn *c) {
    for (fd_pending *p = c->pend_head; p; p = p->next) p->conn = NULL;
    c->pend_head = c->pend_tail = NULL;
}

void px_conn_mute_cut(px_conn *c) {
    if (!c->muting || c->out_lent) return;
    size_t m = c->mute_from;
    if (m >= c->out.len) { c->mute_from = c->out.len; return; }
    /* from the newest mark back, those past m move to m: only the silenced
     * command's marks are visited (older ones are at or before m) */
    fd_pending *p = c->pend_tail;
    size_t abs = p ? p->tail_abs : 0;
    if (p && abs > m) p->tail_abs = m;
    while (p && abs > m) {
        size_t prev_abs = p->prev ? abs - p->off : 0;
        p->off = prev_abs > m ? 0 : m - prev_abs;    /* relative (the head's absolute) */
        abs = prev_abs;
        p = p->prev;
    }
    c->out.len = m;
}

fd_pending *px_pending_push(px_conn *c, fd_command *cmd, uint64_t t0_ns) {
    fd_pending *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->cmd = cmd;
    p->t_sub_ns = t0_ns;
    if (!c) return p;                    /* detached: nobody's output */
    p->conn = c;
    p->muted = c->muting && !c->out_lent;
    p->off = c->pend_tail ? c->out.len - c->pend_tail->tail_abs : c->out.len;
    p->tail_abs = c->out.len;
    p->prev = c->pend_tail;
    if (c->pend_tail) c->pend_tail->next = p;
    else c->pend_head = p;
    c->pend_tail = p;
    return p;
}

/* Offset of p's mark in c->out: O(1) for the oldest, which is the usual one
 * to complete (a backend answers a client's commands in order). */
static size_t pending_abs(const px_conn *c, const fd_pending *p) {
    if (p == c->pend_tail) return p->tail_abs;
    size_t abs = 0;
    for (const fd_pending *q = c->pend_head; q; q = q->next) {
        abs += q->off;
        if (q == p) break;
    }
    return abs;
}

/* Take p out of the list; `inserted` bytes were just put at its mark. */
static void unlink_pending(px_conn *c, fd_pending *p, size_t inserted) {
    if (p->next) p->next->off += p->off + inserted;     /* absolute if p was the head */
    if (p == c->pend_tail) {
        if (p->prev) p->prev->tail_abs = p->tail_abs - p->off;
    } else {
        c->pend_tail->tail_abs += inserted;
    }
    if (p->prev) p->prev->next = p->next;
    else c->pend_head = p->next;
    if (p->next) p->next->prev = p->prev;
    else c->pend_tail = p->prev;
}

/* Forget a pending request the backend did not take (submit did not return
 * FD_PENDING). */
void px_pending_drop(fd_pending *p) {
    if (p->conn) unlink_pending(p->conn, p, 0);
    PX_HOOK_RUN(forget, p);
    free(p);
}

static void complete(fd_pending *p, const void *reply, size_t len, int failed);

/* A reply that says the backend could not be reached (not an answer to compare). */
int px_reply_is_unavailable(const void *reply, size_t len) {
    static const char a[] = "-ERR backend unavailable", b[] = "-ERR backend timeout";
    return (len >= sizeof a - 1 && !memcmp(reply, a, sizeof a - 1)) ||
           (len >= sizeof b - 1 && !memcmp(reply, b, sizeof b - 1));
}

void px_pending_reply(fd_pending *p, const void *reply, size_t len) { complete(p, reply, len, 0); }

static void complete(fd_pending *p, const void *reply, size_t len, int failed) {
    uint64_t now = p->be || (p->conn && p->cmd) ? fd_mono_ns() : 0;   /* the one clock read at completion */
    px_conn *c = p->conn;
    int is_err = len && ((const char *)reply)[0] == '-';
    if (p->be) {
        /* the one record update (backends.h): a client's command, or
         * frontdoor's own request (mirror copy, detached, diff read) */
        uint64_t ret = p->in_submit ? now : p->t_ret_ns;   /* completed inside submit: it returns now */
        p->be->inflight--;
        px_backend_record(p->be, c && p->cmd ? PX_REC_CLIENT : PX_REC_OWN, p->cmd, now - p->t_sub_ns, is_err);
        px_hist_add(&p->be->wait_live, now - ret);
    }
    if (p->on_done) p->on_done(p, reply, len);
    if (p->tap.fn) p->tap.fn(p->tap.ud, reply, len, failed || px_reply_is_unavailable(reply, len));
    PX_HOOK_RUN(reply, p, reply, len, now - p->t_sub_ns);
    if (c && ((c->flags & PX_CONN_CLOSE_ASAP) || p->muted)) {
        /* closing without sending more (output limit, out of memory), or
         * the reply of a command silenced by CLIENT REPLY: the reply is
         * dropped, not copied, and the limit is not logged again */
        unlink_pending(c, p, 0);
        if (p->muted) px_conn_touch(c);  /* what queued behind it may go now */
    } else if (c) {
        size_t inserted = 0;
        if (resp_out_reserve(&c->out, len) == 0) {
            size_t abs = pending_abs(c, p);
            char *at = c->out.data + abs;
            memmove(at + len, at, c->out.len - abs);
            memcpy(at, reply, len);
            c->out.len += len;
            inserted = len;
            if (c->muting && c->mute_from >= abs) c->mute_from += len;   /* the silenced bytes moved */
        } else {
            px_log(PX_LOG_WARNING, "out of memory for a reply to client %llu: closing it", (unsigned long long)c->id);
            c->flags |= PX_CONN_CLOSE_ASAP;
        }
        unlink_pending(c, p, inserted);
        px_conn_check_output_limit(c);
        px_conn_touch(c);
    }
    if (p->in_submit) p->done = 1;       /* the submitter frees it */
    else free(p);
}

void px_pending_error(fd_pending *p, int status) {
    resp_out o;
    resp_out_init(&o, 2);
    px_reply_status(&o, status, p->cmd ? p->cmd->name : "");
    complete(p, o.data, o.len, status == FD_E_UNAVAILABLE || status == FD_E_TIMEOUT);
    resp_out_free(&o);
}
