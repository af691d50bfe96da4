/* ab.c — the A/B layer's routing (see ab.h, ab_int.h): the router hook
 * that dispatch calls while a secondary is open, the split choice, what is
 * mirrored (policies, calibration), the layer's state, and the commands kept
 * and handed to a side (px_call, or frontdoor's script engine). The other
 * concerns are in ab_pair.c, ab_outbox.c, ab_unit.c, ab_samples.c,
 * ab_frontdoor.c, ab_diff.c and ab_report.c. */
#include "ab.h"
#include "ab_int.h"
#include "hooks.h"
#include "backends.h"
#include "commands.h"
#include "config.h"
#include "migrate.h" /* issue 30: the backfill's dirty keys */
#include "multi.h"
#include "scripting.h"

#include <stdlib.h>
#include <string.h>

ab_state ab;

/* ---------------------------------------------------------------- split */

static uint64_t fnv1a(const void *p, size_t n, uint64_t h) {
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

/* A well-mixed 64-bit hash (FNV-1a then a finaliser), as a fraction in [0,1). */
static double unit_hash(const void *p, size_t n) {
    uint64_t h = fnv1a(p, n, 1469598103934665603ull);
    h ^= h >> 33; h *= 0xff51afd7ed558ccdull; h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53ull; h ^= h >> 33;
    return (double)(h >> 11) / 9007199254740992.0;
}

/* The first key a command names (scripts: their first declared key), or NULL. */
const resp_arg *ab_first_key_arg(const fd_command *cmd, int argc, const resp_arg *argv) {
    int pos[1];
    if (!cmd || fd_command_keys(cmd, argc, argv, pos, 1) < 1) return NULL;
    return &argv[pos[0]];
}

/* Split: whether the command (or unit) whose first key is `key` goes to the
 * secondary (by that key, or by the client with ab-split-by client). */
int ab_split_to_secondary(px_conn *c, const resp_arg *key) {
    double u;
    if (px_cfg.ab_split_by == PX_AB_BY_CLIENT) u = unit_hash(&c->id, sizeof c->id);
    else if (!key) return 0;                               /* keyless: primary */
    else u = unit_hash(key->ptr, key->len);
    if (u >= px_cfg.ab_split_fraction) return 0;
    ab.split_secondary++;
    return 1;
}

/* ----------------------------------------------------------- commands kept */

/* Copy a command (multi.h px_cmd_copy: one block, freed by cmd_free). */
int ab_cmd_copy(ab_cmd *q, fd_command *cmd, int argc, const resp_arg *argv) {
    char *raw;
    size_t rawlen;
    resp_arg *av = px_cmd_copy(argc, argv, &raw, &rawlen);
    if (!av) return -1;
    *q = (ab_cmd){cmd, argc, av, raw, rawlen};
    return 0;
}

void ab_cmd_free(ab_cmd *q) {
    free(q->argv);
    memset(q, 0, sizeof *q);
}

/* EVAL & co., SCRIPT, FUNCTION: run by frontdoor's engine on a backend that
 * is not a Redis server (scripting.h px_script_run_on). */
int ab_is_script(const fd_command *cmd) {
    switch (cmd->id) {
    case FD_CMD_eval: case FD_CMD_evalsha: case FD_CMD_eval_ro: case FD_CMD_evalsha_ro:
    case FD_CMD_fcall: case FD_CMD_fcall_ro: case FD_CMD_script: case FD_CMD_function:
        return 1;
    default:
        return 0;
    }
}

/* Whether a command may write (mirror policies, race tracking): a script
 * may, unless it is a _RO one. */
int ab_may_write(const fd_command *cmd) {
    if (!cmd) return 1;                            /* unknown to the table: assume it writes */
    if (cmd->flags & FD_CMD_WRITE) return 1;
    return cmd->id == FD_CMD_eval || cmd->id == FD_CMD_evalsha || cmd->id == FD_CMD_fcall || cmd->id == FD_CMD_function;
}

/* Printable command text appended at text[o] (at most AB_TEXT_MAX). */
size_t ab_text_add(char *text, size_t o, int argc, const resp_arg *argv) {
    for (int i = 0; i < argc && o + 8 < AB_TEXT_MAX; i++) {
        if (i) text[o++] = ' ';
        o += ab_printable(text + o, AB_TEXT_MAX - o, argv[i].ptr, argv[i].len, 1);
    }
    text[o] = '\0';
    return o;
}

/* Hand one side's request to `be`. A script command on a backend that is
 * not a Redis server runs in frontdoor's engine against it (synchronously);
 * anything else is px_call. detached: the reply goes to `out` only (a
 * copy); c may then be NULL (not for scripts). Returns 1 when the reply is
 * owed to c. */
int ab_side_submit(px_backend *be, px_conn *c, int detached, uint64_t client, resp_out *out, fd_command *cmd,
                       int argc, resp_arg *argv, const char *raw, size_t rawlen, uint64_t *clock, const px_tap *tap) {
    if (detached && be && be == px_srv.secondary && ab_may_write(cmd)) px_migrate_touch(cmd, argc, argv);
    if (cmd && be && c && ab_is_script(cmd) && !be->b.ops->passthrough) {
        size_t before = out->len;
        px_script_run_on(be, c, argc, argv, out);
        *clock = fd_mono_ns();
        if (tap) tap->fn(tap->ud, out->data + before, out->len - before, 0);
        return 0;
    }
    return px_call(&(px_request){.be = be, .c = detached ? NULL : c, .mark = !detached && c, .out = out,
                                 .client_id = client, .cmd = cmd, .argc = argc, .argv = argv, .raw = raw,
                                 .rawlen = rawlen, .detached = detached || !c, .tap = tap, .clock = clock});
}

/* The client with this id, NULL when it has gone (a copy sent later, when
 * the primary answered: frontdoor's engine runs a script for a client). */
px_conn *ab_conn_by_id(uint64_t id) {
    for (px_conn *c = px_srv.clients; c; c = c->next)
        if (c->id == id) return c;
    return NULL;
}

/* Whether a command or unit (w: it may write; key: its first key) is
 * mirrored under the policies; counts what is not. */
int ab_mirror_wanted(int w, const resp_arg *key) {
    px_backend *sec = px_srv.secondary;
    if (px_cfg.ab_mode != PX_AB_MIRROR || !sec || ab.stopped_at_ms) return 0;
    if (w ? !px_cfg.ab_mirror_writes : !px_cfg.ab_mirror_reads) return 0;
    if (px_cfg.ab_mirror_sample < 1.0 && key && unit_hash(key->ptr, key->len) >= px_cfg.ab_mirror_sample) {
        ab.sampled_out++;                          /* by key: a key is always or never mirrored */
        return 0;
    }
    if (sec->b.ops->async && (long long)ab.queued >= px_cfg.ab_mirror_queue) { ab.dropped++; return 0; }
    return 1;
}

/* A mirrored command (or a calibration read) begins: its pair, or NULL. */
static px_ab_pair *px_ab_begin(px_conn *c, fd_command *cmd, int argc, resp_arg *argv) {
    if (px_cfg.ab_mode != PX_AB_MIRROR || !px_srv.secondary || !cmd || ab.stopped_at_ms) return NULL;
    int w = ab_may_write(cmd);
    int calib = !w && ab.calib_left > 0 && (!ab_is_script(cmd) || cmd->id == FD_CMD_eval_ro || cmd->id == FD_CMD_evalsha_ro);
    if (!calib && !ab_mirror_wanted(w, ab_first_key_arg(cmd, argc, argv))) {
        if (w) px_migrate_lost(cmd, argc, argv);   /* dropped (a full queue): a migration copies its keys again */
        return NULL;
    }
    px_ab_pair *p = ab_pair_new(c, cmd, AB_ONE);
    if (!p) { ab.dropped++; if (w) px_migrate_lost(cmd, argc, argv); return NULL; }
    if (calib) {
        p->calib = 1;
        ab.calib_left--;
    } else {
        if (px_srv.secondary->b.ops->async) { p->queued = 1; ab.queued++; }
        ab.mirrored++;
    }
    ab_text_add(p->text, 0, argc, argv);
    ab_track_cmd(p, cmd, argc, argv);
    if ((cmd->id == FD_CMD_eval || cmd->id == FD_CMD_eval_ro) && argc > 1) ab_remember_script(&argv[1]);
    if (cmd->id == FD_CMD_script && argc > 2 && resp_arg_is(&argv[1], "load")) ab_remember_script(&argv[2]);
    if (cmd->id == FD_CMD_evalsha || cmd->id == FD_CMD_evalsha_ro) ab_cmd_copy(&p->copy, cmd, argc, argv);  /* for NOSCRIPT */
    return p;
}

/* ------------------------------------------------------------- the layer */

/* The router (hooks.h: route): while a secondary is open dispatch hands
 * every backend command here; A/B lives entirely below this line. */
static int ab_route(px_conn *c, fd_command *cmd, int argc, resp_arg *argv, const char *raw, size_t rawlen,
                    uint64_t *clock) {
    if (ab.unit_conn && ab.unit_conn == c) {
        /* a command of the EXEC running now: to the unit's side; in mirror
         * mode its primary reply is the unit's element (the unit goes to
         * the secondary whole, px_ab_exec_end) */
        px_ab_pair *p = ab.unit;
        const px_tap *tap = NULL;
        if (p && !p->whole[0] && ab.unit_cur >= 0 && ab.unit_cur < p->nel && !p->el[ab.unit_cur].routed) {
            p->el[ab.unit_cur].routed = 1;
            tap = &p->el[ab.unit_cur].tap[0];
        }
        return ab_side_submit(ab.unit_be, c, 0, c->id, &c->out, cmd, argc, argv, raw, rawlen, clock, tap);
    }
    if (px_cfg.ab_mode == PX_AB_OFF || !px_srv.secondary || !cmd)
        return px_call(&(px_request){.be = px_srv.primary, .c = c, .mark = 1, .out = &c->out, .client_id = c->id,
                                     .cmd = cmd, .argc = argc, .argv = argv, .raw = raw, .rawlen = rawlen,
                                     .clock = clock});
    if (px_cfg.ab_mode == PX_AB_SPLIT) {
        px_backend *be = ab_split_to_secondary(c, ab_first_key_arg(cmd, argc, argv)) ? px_srv.secondary : px_srv.primary;
        return ab_side_submit(be, c, 0, c->id, &c->out, cmd, argc, argv, raw, rawlen, clock, NULL);
    }
    px_ab_pair *p = px_ab_begin(c, cmd, argc, argv);
    if (!p) return ab_side_submit(px_srv.primary, c, 0, c->id, &c->out, cmd, argc, argv, raw, rawlen, clock, NULL);
    /* ab-mirror-order primary: with a network primary the copy goes when
     * the primary's reply arrives, so the secondary gets the writes of
     * different clients in the order the primary acknowledged them (which
     * is the order it ran them, but for replies of one redis-server turn:
     * docs/ab-testing.md); with an embedded primary the primary has run the
     * command already. A script too (one frontdoor's engine runs against a
     * mongodb secondary goes through the outbox, ab_copy_ready). */
    int defer = !p->calib && px_cfg.ab_mirror_order == PX_AB_ORDER_PRIMARY && px_srv.primary && px_srv.primary->b.ops->async &&
                (p->copy.argv || ab_cmd_copy(&p->copy, cmd, argc, argv) == 0);
    p->defer = defer;
    if (defer) ab.deferred++;
    px_tap tap1 = p->tap[1];                 /* p is freed by the second answer: never read p after it */
    px_backend *other = p->calib ? px_srv.primary : px_srv.secondary;
    int owed = ab_side_submit(px_srv.primary, c, 0, c->id, &c->out, cmd, argc, argv, raw, rawlen, clock, &p->tap[0]);
    if (defer) return owed;                  /* sent by ab_pair.c when the primary answers */
    resp_out scratch;
    resp_out_init(&scratch, c->out.proto);
    uint64_t copy_clock = *clock;            /* the copy starts when the primary's part ended */
    ab_side_submit(other, c, 1, c->id, &scratch, cmd, argc, argv, raw, rawlen, &copy_clock, &tap1);
    resp_out_free(&scratch);
    return owed;
}

int px_ab_routes(void) { return px_cfg.ab_mode != PX_AB_OFF && px_srv.secondary != NULL; }

/* ------------------------------------------------------------ hooks (hooks.h) */

void px_ab_hooks(void) { PX_HOOK_ADD(route, ab_route); }
