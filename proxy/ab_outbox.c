/* ab_outbox.c — the order copies reach the secondary with
 * ab-mirror-order primary (ab_int.h): copies sent when the primary
 * answered, queued while a script copy runs the loop nested or a unit's
 * replies are awaited. */
#include "ab.h"
#include "ab_int.h"
#include "backends.h"
#include "config.h"

/* The outbox (ab-mirror-order primary). A script that frontdoor's engine
 * runs against an asynchronous secondary (mongodb) waits for each
 * redis.call with the loop running nested, which it must not do inside the
 * primary's reply callback (that backend's read or completion handler is
 * mid-way). Such a copy waits here until the loop is at its top level
 * (outbox_run, before the loop blocks); every copy whose primary answers
 * after it, and every copy that answers while a script copy runs, queues
 * behind it, so the secondary still gets them in the primary's order.
 * A transaction (unit) for such a secondary goes the same way (its queued
 * commands may be scripts), and until all its replies are in (`unit`)
 * nothing else leaves the outbox: the copies the primary answers meanwhile
 * wait behind it, so the secondary runs the unit whole, as multi.h's hold
 * does for copies sent at dispatch (px_atomic_retain). */
static struct {
    px_ab_pair *head, *tail;
    int         running;       /* a script copy runs (nested loop) */
    px_ab_pair *unit;          /* a unit sent from here whose secondary replies are not all in */
    ev_prepare  w;
} outbox;

static int runs_nested(const px_ab_pair *p) {
    px_backend *sec = px_srv.secondary;
    return sec && !sec->b.ops->passthrough && sec->b.ops->async &&
           ((p->kind == AB_ONE && ab_is_script(p->cmd)) || p->kind == AB_EXEC);
}

void ab_outbox_hold(px_ab_pair *p) { outbox.unit = p; }

/* p's secondary part is in (or p goes): the outbox may move on. */
void ab_outbox_unit_done(px_ab_pair *p) {
    if (outbox.unit == p) outbox.unit = NULL;
}

static void outbox_run(struct ev_loop *loop, ev_prepare *w, int revents) {
    (void)revents;
    if (ev_depth(loop) > 1 || outbox.running) return;          /* nested: a script waits; later */
    while (outbox.head && !outbox.unit) {
        px_ab_pair *p = outbox.head;
        if (!(outbox.head = p->out_next)) outbox.tail = NULL;
        p->out_next = NULL;
        int nested = runs_nested(p);
        outbox.running = nested;
        if (p->unit_wait) ab_unit_go(p);                         /* may free p */
        else ab_send_copy(p);                                    /* may free p */
        outbox.running = 0;
    }
    if (!outbox.head) ev_prepare_stop(loop, w);               /* else a unit's replies are awaited */
}

/* The primary answered a deferred copy or unit: send it now, or queue it. */
void ab_copy_ready(px_ab_pair *p) {
    if (!outbox.head && !outbox.running && !outbox.unit && !runs_nested(p)) {
        if (p->unit_wait) ab_unit_go(p);
        else ab_send_copy(p);
        return;
    }
    if (outbox.tail) outbox.tail->out_next = p;
    else outbox.head = p;
    outbox.tail = p;
    if (!ev_is_active(&outbox.w)) {
        ev_prepare_init(&outbox.w, outbox_run);
        ev_prepare_start(px_srv.loop, &outbox.w);
    }
}
