/* ab_unit.c — an EXEC mirrored as one unit (ab.h px_ab_exec_*, ab_int.h):
 * where it runs, its commands copied, its secondary part sent on that
 * backend's own atomic mechanism. */
#include "ab.h"
#include "ab_int.h"
#include "backends.h"
#include "commands.h"
#include "config.h"
#include "migrate.h"
#include "multi.h"

#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------------ units */

px_backend *px_ab_exec_begin(px_conn *c, int n, const px_unit_cmd *q) {
    ab.unit = NULL;
    ab.unit_cur = -1;
    if (!px_ab_routes()) return px_srv.primary;    /* A/B off: the route is not told about units */
    ab.unit_conn = c;
    ab.unit_be = px_srv.primary;
    const resp_arg *key = NULL;
    int w = 0;
    for (int i = 0; i < n; i++) {
        if (!key) key = ab_first_key_arg(q[i].cmd, q[i].argc, q[i].argv);
        if (ab_may_write(q[i].cmd)) w = 1;
    }
    if (px_cfg.ab_mode == PX_AB_SPLIT) {
        if (ab_split_to_secondary(c, key)) ab.unit_be = px_srv.secondary;
        return ab.unit_be;
    }
    if (!n || !ab_mirror_wanted(w, key)) {
        for (int i = 0; w && i < n; i++) px_migrate_lost(q[i].cmd, q[i].argc, q[i].argv);
        return ab.unit_be;
    }
    px_ab_pair *p = ab_pair_new(c, fd_command_lookup("exec", 4), AB_EXEC);
    if (p && (!(p->cmds = calloc((size_t)n, sizeof *p->cmds)) || !(p->el = calloc((size_t)n, sizeof *p->el)))) {
        ab_pair_free(p);
        p = NULL;
    }
    if (!p) { ab.dropped++; return ab.unit_be; }
    size_t o = (size_t)snprintf(p->text, AB_TEXT_MAX, "MULTI/EXEC:");
    for (int i = 0; i < n; i++) {
        if (ab_cmd_copy(&p->cmds[i], q[i].cmd, q[i].argc, q[i].argv)) {
            p->nel = i;
            ab_pair_free(p);
            ab.dropped++;
            return ab.unit_be;
        }
        ab_el *e = &p->el[i];
        e->remote = !q[i].cmd || !px_handler_of(q[i].cmd);
        for (int s = 0; s < 2; s++) {
            e->ud[s] = (struct ab_eltap){p, s, i};
            e->tap[s] = (px_tap){ab_on_el, &e->ud[s]};
        }
        if (o + 8 < AB_TEXT_MAX) { p->text[o++] = ' '; o = ab_text_add(p->text, o, q[i].argc, q[i].argv); }
        if (i + 1 < n && o + 8 < AB_TEXT_MAX) p->text[o++] = ';', p->text[o] = 0;
    }
    p->nel = n;
    for (int i = 0; i < n; i++) ab_track_cmd(p, p->cmds[i].cmd, p->cmds[i].argc, p->cmds[i].argv);
    p->left[0] = n;
    p->hold = 1;                             /* until px_ab_exec_end sent the secondary's part */
    if (px_srv.primary && px_srv.primary->b.ops->passthrough) p->whole[0] = AB_WHOLE_ALL;
    if (px_srv.secondary->b.ops->async) { p->queued = 1; ab.queued++; }
    ab.mirrored++;
    ab.units++;
    ab.unit = p;
    return ab.unit_be;
}

void px_ab_exec_step(int i) { ab.unit_cur = i; }

void px_ab_exec_local(int i, const char *reply, size_t len) {
    px_ab_pair *p = ab.unit;
    if (!p || p->whole[0] || i < 0 || i >= p->nel || p->el[i].routed) return;
    p->el[i].routed = 1;
    ab_on_el(&p->el[i].ud[0], reply, len, 0);
}

const px_tap *px_ab_exec_tap(void) {
    px_ab_pair *p = ab.unit;
    return p && p->whole[0] ? &p->tap[0] : NULL;
}

/* The unit to the secondary, on its own atomic-unit mechanism: a Redis
 * server gets MULTI, the commands, EXEC as one block on one connection; an
 * embedded store runs them one after the other now (one loop step, one
 * commit); an asynchronous one (mongodb) gets them together and other
 * clients are held until its replies are in (multi.h px_atomic_retain) —
 * or, `deferred` (sent from the outbox when the primary answered), the
 * outbox sends nothing else until then (ab_outbox_hold). */
static void send_unit(px_ab_pair *p, px_conn *c, int deferred) {
    px_backend *sec = px_srv.secondary;
    for (int i = 0; i < p->nel; i++)                 /* a write's copy issued: a migration's copy of its keys is dirty */
        if (p->el[i].remote && ab_may_write(p->cmds[i].cmd)) px_migrate_touch(p->cmds[i].cmd, p->cmds[i].argc, p->cmds[i].argv);
    if (!sec) { ab_sec_in(p); p->failed[1] = p->have[1] = 1; return; }
    int nremote = 0;
    const resp_arg *rk = NULL;
    for (int i = 0; i < p->nel; i++)
        if (p->el[i].remote) {
            nremote++;
            if (!rk) rk = ab_first_key_arg(p->cmds[i].cmd, p->cmds[i].argc, p->cmds[i].argv);
        }
    if (!nremote) { ab_sec_in(p); p->have[1] = 1; return; }
    if (sec->b.ops->passthrough && !c) {
        /* the client left before the primary answered: the block on the
         * connection of its id (a cluster: routed part by part) */
        static resp_arg multi_arg[1] = {{"MULTI", 5}}, exec_arg[1] = {{"EXEC", 4}};
        resp_out scratch;
        resp_out_init(&scratch, p->proto);
        uint64_t clock = fd_mono_ns();
        p->whole[1] = AB_WHOLE_REMOTE;
        /* the unit's remote parts as one MULTI ... EXEC block, copies nobody reads but EXEC's tap */
        px_request q = {.be = sec, .out = &scratch, .client_id = p->client, .argc = 1, .argv = multi_arg,
                        .detached = 1, .clock = &clock};
        px_call(&q);
        for (int i = 0; i < p->nel; i++)
            if (p->el[i].remote) {
                q.argc = p->cmds[i].argc;
                q.argv = p->cmds[i].argv;
                q.raw = p->cmds[i].raw;
                q.rawlen = p->cmds[i].rawlen;
                px_call(&q);
            }
        q.argc = 1;
        q.argv = exec_arg;
        q.raw = NULL;
        q.rawlen = 0;
        q.tap = &p->tap[1];
        px_call(&q);
        resp_out_free(&scratch);
        return;
    }
    if (sec->b.ops->passthrough) {
        static resp_arg multi_arg[1] = {{"MULTI", 5}}, exec_arg[1] = {{"EXEC", 4}};
        p->whole[1] = AB_WHOLE_REMOTE;
        px_forward_unit(c, sec, 1, multi_arg, NULL, 0, rk, 1, NULL);
        for (int i = 0; i < p->nel; i++)
            if (p->el[i].remote)
                px_forward_unit(c, sec, p->cmds[i].argc, p->cmds[i].argv, p->cmds[i].raw, p->cmds[i].rawlen, rk, 1, NULL);
        px_forward_unit(c, sec, 1, exec_arg, NULL, 0, rk, 1, &p->tap[1]);
        return;
    }
    p->left[1] = nremote;
    if (sec->b.ops->async && deferred) ab_outbox_hold(p);     /* later copies wait behind it (ab_outbox.c) */
    else if (sec->b.ops->async && c) { p->retained = 1; px_atomic_retain(c); }
    resp_out scratch;
    resp_out_init(&scratch, p->proto);
    uint64_t clock = fd_mono_ns();
    for (int i = 0; i < p->nel; i++) {
        if (!p->el[i].remote) continue;
        scratch.len = 0;
        ab_cmd *q = &p->cmds[i];
        ab_side_submit(sec, c, 1, p->client, &scratch, q->cmd, q->argc, q->argv, q->raw, q->rawlen, &clock, &p->el[i].tap[1]);
    }
    resp_out_free(&scratch);
}

/* A unit held back until the primary's part was in (ab-mirror-order
 * primary): send it now. */
void ab_unit_go(px_ab_pair *p) {
    p->unit_wait = 0;
    p->hold++;
    send_unit(p, ab_conn_by_id(p->client), 1);
    p->hold--;
    ab_maybe_finish(p);
}

void px_ab_exec_end(px_conn *c) {
    px_ab_pair *p = ab.unit;
    ab.unit = NULL;
    ab.unit_conn = NULL;
    ab.unit_be = NULL;
    ab.unit_cur = -1;
    if (!p) return;
    /* ab-mirror-order primary with a network primary: the unit goes when the
     * primary's part is in, like single copies (through the outbox for a
     * mongodb secondary, which then holds later copies until the unit's
     * replies are in) */
    if (px_cfg.ab_mirror_order == PX_AB_ORDER_PRIMARY && px_srv.primary && px_srv.primary->b.ops->async &&
        px_srv.secondary && !p->have[0]) {
        p->unit_wait = 1;
        ab.deferred++;
        p->hold = 0;
        return;
    }
    send_unit(p, c, 0);
    p->hold = 0;
    ab_maybe_finish(p);
}
