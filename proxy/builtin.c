/* builtin.c — PING, ECHO, QUIT, HELLO, AUTH, SELECT, COMMAND, CONFIG,
 * CLIENT, TIME: served by the proxy with Redis 7.0's replies and errors. */
#include "builtin.h"
#include "slowlog.h"
#include "blocking.h"
#include "pubsub.h"
#include "multi.h"
#include "cmddocs.h"
#include "backends.h"
#include "../storage/cmdargs.h"
#include "config.h"
#include "tls.h"
#include "log.h"
#include "acl.h"
#include "tracking.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>

/* sub: a known subcommand (short): named in lower case, as Redis's fullname */
static void reply_subcmd_arity(px_conn *c, const char *cmd, resp_arg *sub) {
    char low[32];
    size_t n = sub->len < sizeof low ? sub->len : sizeof low - 1;
    for (size_t i = 0; i < n; i++) low[i] = (char)tolower((unsigned char)sub->ptr[i]);
    resp_add_errorf(&c->out, "ERR wrong number of arguments for '%s|%.*s' command", cmd, (int)n, low);
}

static void reply_unknown_subcmd(px_conn *c, const char *cmd, resp_arg *sub) {
    resp_add_errorf(&c->out, "ERR unknown subcommand '%.*s'. Try %s HELP.", (int)(sub->len > 128 ? 128 : sub->len), sub->ptr, cmd);
}

void px_cmd_ping(px_conn *c, int argc, resp_arg *argv) {
    if (argc > 2) { resp_add_error(&c->out, "ERR wrong number of arguments for 'ping' command"); return; }
    if (c->out.proto == 2 && px_pubsub_count(c)) {      /* RESP2 subscribed mode: ["pong", message] */
        resp_add_array(&c->out, 2);
        resp_add_bulk(&c->out, "pong", 4);
        resp_add_bulk(&c->out, argc == 2 ? argv[1].ptr : "", argc == 2 ? argv[1].len : 0);
        return;
    }
    if (argc == 2) resp_add_bulk(&c->out, argv[1].ptr, argv[1].len);
    else resp_add_simple(&c->out, "PONG", 4);
}

void px_cmd_echo(px_conn *c, int argc, resp_arg *argv) { resp_add_bulk(&c->out, argv[1].ptr, argv[1].len); }

void px_cmd_quit(px_conn *c, int argc, resp_arg *argv) {
    resp_add_simple(&c->out, "OK", 2);
    c->flags |= PX_CONN_CLOSE_AFTER_REPLY;
}

/* The user (user, pass) authenticates (no user: default), or NULL. */
static px_acl_user *check_password(px_conn *c, const resp_arg *cmdname, const resp_arg *user, const resp_arg *pass) {
    if (!user) return px_acl_authenticate(c, cmdname, "default", 7, pass->ptr, pass->len);
    return px_acl_authenticate(c, cmdname, user->ptr, user->len, pass->ptr, pass->len);
}

static const char wrongpass[] = "WRONGPASS invalid username-password pair or user is disabled.";

void px_cmd_auth(px_conn *c, int argc, resp_arg *argv) {
    if (argc > 3) { resp_add_error(&c->out, "ERR syntax error"); return; }
    if (argc == 2 && px_acl_default_noauth()) {
        resp_add_error(&c->out, "ERR AUTH <password> called without any password configured for the default user. "
                                "Are you sure your configuration is correct?");
        return;
    }
    px_acl_user *u = check_password(c, &argv[0], argc == 3 ? &argv[1] : NULL, &argv[argc - 1]);
    if (u) {
        c->authed = 1;
        c->user = u;
        resp_add_simple(&c->out, "OK", 2);
    } else {
        px_log(PX_LOG_VERBOSE, "client %llu (%s): failed AUTH", (unsigned long long)c->id, c->addr);
        resp_add_error(&c->out, wrongpass);
    }
}

/* Client names: printable ASCII without spaces, as Redis. */
static int valid_client_name(const resp_arg *a) {
    for (size_t i = 0; i < a->len; i++)
        if (a->ptr[i] < '!' || a->ptr[i] > '~') return 0;
    return 1;
}

static void set_name(px_conn *c, const resp_arg *a) {
    free(c->name);
    c->name = NULL;
    if (a->len) {
        c->name = malloc(a->len + 1);
        if (c->name) { memcpy(c->name, a->ptr, a->len); c->name[a->len] = '\0'; }
    }
}

void px_cmd_hello(px_conn *c, int argc, resp_arg *argv) {
    long long ver = 0;
    if (argc >= 2) {
        if (resp_str2ll(argv[1].ptr, argv[1].len, &ver)) {
            resp_add_error(&c->out, "ERR Protocol version is not an integer or out of range");
            return;
        }
        if (ver < 2 || ver > 3) { resp_add_error(&c->out, "NOPROTO unsupported protocol version"); return; }
    }
    resp_arg *name = NULL;
    for (int j = 2; j < argc; j++) {
        int more = argc - 1 - j;
        if (resp_arg_is(&argv[j], "AUTH") && more >= 2) {
            /* Redis 7.0 authenticates as it reads the option: a wrong password
             * is reported before a later option's syntax error */
            px_acl_user *u = check_password(c, &argv[0], &argv[j + 1], &argv[j + 2]);
            if (!u) { resp_add_error(&c->out, wrongpass); return; }
            c->authed = 1;
            c->user = u;
            j += 2;
        } else if (resp_arg_is(&argv[j], "SETNAME") && more >= 1) { name = &argv[j + 1]; j++; }
        else {
            resp_add_errorf(&c->out, "ERR Syntax error in HELLO option '%.*s'", (int)argv[j].len, argv[j].ptr);   /* whole, as Redis */
            return;
        }
    }
    if (!c->authed) {
        resp_add_error(&c->out, "NOAUTH HELLO must be called with the client already authenticated, otherwise the "
                                "HELLO AUTH <user> <pass> option can be used to authenticate the client and "
                                "select the RESP protocol version at the same time");
        return;
    }
    if (name) {
        if (!valid_client_name(name)) {
            resp_add_error(&c->out, "ERR Client names cannot contain spaces, newlines or special characters.");
            return;
        }
        set_name(c, name);
    }
    if (ver) c->out.proto = (int)ver;
    resp_add_map(&c->out, 7);
    resp_add_bulk_cstr(&c->out, "server");  resp_add_bulk_cstr(&c->out, "redis");
    resp_add_bulk_cstr(&c->out, "version"); resp_add_bulk_cstr(&c->out, PX_REDIS_COMPAT_VERSION);
    resp_add_bulk_cstr(&c->out, "proto");   resp_add_int(&c->out, c->out.proto);
    resp_add_bulk_cstr(&c->out, "id");      resp_add_int(&c->out, (long long)c->id);
    resp_add_bulk_cstr(&c->out, "mode");    resp_add_bulk_cstr(&c->out, "standalone");
    resp_add_bulk_cstr(&c->out, "role");    resp_add_bulk_cstr(&c->out, "master");
    resp_add_bulk_cstr(&c->out, "modules"); resp_add_array(&c->out, 0);
}

void px_cmd_select(px_conn *c, int argc, resp_arg *argv) {
    long long db;
    const char *e = fd_arg_int_error(&argv[1], &db);
    if (e) { resp_add_error(&c->out, e); return; }
    if (db != 0) { resp_add_error(&c->out, "ERR DB index is out of range"); return; }
    c->db = 0;
    resp_add_simple(&c->out, "OK", 2);
}

void px_cmd_time(px_conn *c, int argc, resp_arg *argv) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    resp_add_array(&c->out, 2);
    resp_add_bulk_ll(&c->out, (long long)tv.tv_sec);
    resp_add_bulk_ll(&c->out, (long long)tv.tv_usec);
}

/* WAIT numreplicas timeout: frontdoor is a server without replicas, on every
 * backend (the client's writes are acknowledged by no replica: a Redis
 * backend's own replicas are not the client's to wait for). Redis 7.0's
 * argument checks and errors; the answer is :0 at once. Divergence: a Redis
 * without replicas asked for numreplicas > 0 outside MULTI sleeps for the
 * timeout (forever for 0) before its :0; frontdoor does not block. */
void px_cmd_wait(px_conn *c, int argc, resp_arg *argv) {
    long long n, ms;
    (void)argc;
    if (resp_str2ll(argv[1].ptr, argv[1].len, &n)) {
        resp_add_error(&c->out, "ERR value is not an integer or out of range");
        return;
    }
    if (resp_str2ll(argv[2].ptr, argv[2].len, &ms)) {
        resp_add_error(&c->out, "ERR timeout is not an integer or out of range");
        return;
    }
    if (ms < 0) {
        resp_add_error(&c->out, "ERR timeout is negative");
        return;
    }
    resp_add_int(&c->out, 0);
}

void px_cmd_lastsave(px_conn *c, int argc, resp_arg *argv) { resp_add_int(&c->out, (long long)px_srv.start_time); }

/* ---------------------------------------------------------------- COMMAND */

static void add_flags(resp_out *o, const fd_command *cmd) {
    static const struct { uint32_t bit; const char *name; } names[] = {
        {FD_CMD_WRITE, "write"}, {FD_CMD_READONLY, "readonly"}, {FD_CMD_DENYOOM, "denyoom"},
        {FD_CMD_ADMIN, "admin"}, {FD_CMD_NOAUTH, "no_auth"}, {FD_CMD_FAST, "fast"},
    };
    int n = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) n += (cmd->flags & names[i].bit) != 0;
    resp_add_set(o, n);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (cmd->flags & names[i].bit) resp_add_status(o, names[i].name);
}

/* Is cmd in the ACL category cat (no '@', any case)? As COMMAND INFO
 * reports them (a container has none: its subcommands do). */
static int command_in_category(const fd_command *cmd, const char *cat, size_t len) {
    int k = fd_category_lookup(cat, len);
    return k >= 0 && (!(cmd->flags & FD_CMD_CONTAINER) || k == FD_CAT_SLOW) && (fd_command_categories(cmd) >> k & 1);
}

/* COMMAND LIST's FILTERBY (Redis 7.0): kind 0 none, 'm' MODULE (frontdoor
 * has no modules: nothing), 'a' ACLCAT, 'p' PATTERN (a glob on the name,
 * any case). */
static int command_listed(const fd_command *cmd, int kind, const resp_arg *arg) {
    switch (kind) {
    case 'm': return 0;
    case 'a': return command_in_category(cmd, arg->ptr, arg->len);
    case 'p': return resp_glob_match(arg->ptr, arg->len, cmd->name, strlen(cmd->name), 1);
    default:  return 1;
    }
}

static void add_command_info(resp_out *o, const fd_command *cmd) {
    resp_add_array(o, 10);
    resp_add_bulk_cstr(o, cmd->name);
    resp_add_int(o, cmd->arity);
    add_flags(o, cmd);
    resp_add_int(o, cmd->first_key);
    resp_add_int(o, cmd->last_key);
    resp_add_int(o, cmd->key_step);
    uint32_t cats = fd_command_categories(cmd);
    if (cmd->flags & FD_CMD_CONTAINER) cats &= 1u << FD_CAT_SLOW;   /* a container: @slow (Redis 7.0) */
    resp_add_set(o, __builtin_popcount(cats));
    for (int k = 0; k < FD_CAT_COUNT; k++)
        if (cats >> k & 1) {
            char cat[32];
            snprintf(cat, sizeof cat, "@%s", fd_category_name(k));
            resp_add_status(o, cat);
        }
    resp_add_array(o, 0);   /* tips */
    resp_add_array(o, 0);   /* key specs (legacy positions above) */
    resp_add_array(o, 0);   /* subcommands */
}

static void add_command_docs(resp_out *o, const fd_command *cmd) {
    int has_args = cmd->args && cmd->args[0];
    resp_add_bulk_cstr(o, cmd->name);
    resp_add_map(o, 3 + has_args);
    const px_backend *be = px_srv.primary;
    const char *note = be && be->b.ops->doc_note ? be->b.ops->doc_note(cmd) : NULL;
    resp_add_bulk_cstr(o, "summary");
    if (note) {
        char buf[1024];
        int l = snprintf(buf, sizeof buf, "%s %s", cmd->summary, note);
        resp_add_bulk(o, buf, l < (int)sizeof buf ? (size_t)l : sizeof buf - 1);
    } else {
        resp_add_bulk_cstr(o, cmd->summary);
    }
    resp_add_bulk_cstr(o, "since");   resp_add_bulk_cstr(o, cmd->since);
    resp_add_bulk_cstr(o, "group");   resp_add_bulk_cstr(o, cmd->group);
    if (has_args) {
        resp_add_bulk_cstr(o, "arguments");
        if (px_docs_add_arguments(o, cmd->args)) resp_add_array(o, 0);   /* test_cmddocs keeps every row valid */
    }
}

/* COMMAND GETKEYS command [arg...]: the keys fd_command_keys finds in the
 * call, with Redis 7.0's errors in its order (arity of GETKEYS, unknown
 * command, keyless command, the call's arity; for a container, HELP has no
 * key and a call without the key is short, but an unknown subcommand is not
 * seen: the table has one row per container). A count of keys (NUMKEYS)
 * below 1 or past the arguments gives no key at all, as Redis's getkeys
 * procedures; no key is an error but for EVAL*'s and FCALL*'s (Redis's
 * NO_MANDATORY_KEYS), which answer an empty array. */
static void command_getkeys(px_conn *c, int argc, resp_arg *argv) {
    if (argc < 4) { resp_add_error(&c->out, "ERR wrong number of arguments for 'command|getkeys' command"); return; }
    const fd_command *cmd = fd_command_lookup(argv[2].ptr, argv[2].len);
    if (!cmd) { resp_add_error(&c->out, "ERR Invalid command specified"); return; }
    uint32_t counted = FD_CMD_NUMKEYS1 | FD_CMD_NUMKEYS2;
    if (cmd->first_key <= 0 && !(cmd->flags & (counted | FD_CMD_STREAMKEYS)) && cmd->id != FD_CMD_sort) {
        resp_add_error(&c->out, "ERR The command has no key arguments");
        return;
    }
    int n = argc - 2;
    /* a container's row stands for its subcommands: HELP has no key, a
     * call that stops before the key is short (the subcommand's arity) */
    if ((cmd->flags & FD_CMD_CONTAINER) && n >= 2 && resp_arg_is(&argv[3], "help")) {
        resp_add_error(&c->out, "ERR The command has no key arguments");
        return;
    }
    if ((cmd->arity > 0 && cmd->arity != n) || n < -cmd->arity ||
        ((cmd->flags & FD_CMD_CONTAINER) && cmd->first_key > 0 && n <= cmd->first_key)) {
        resp_add_error(&c->out, "ERR Invalid number of arguments specified for command");
        return;
    }
    int *pos = malloc((size_t)n * sizeof *pos), k = 0;
    if (!pos) { px_reply_status(&c->out, FD_E_OOM, "command"); return; }
    k = fd_command_keys(cmd, n, argv + 2, pos, n);
    if (cmd->flags & counted) {
        int at = (cmd->flags & FD_CMD_NUMKEYS1) ? 1 : 2;
        long long want;
        if (resp_str2ll(argv[2 + at].ptr, argv[2 + at].len, &want) || want < 1 || want > n - at - 1) k = 0;
    }
    int optional = cmd->id == FD_CMD_eval || cmd->id == FD_CMD_evalsha || cmd->id == FD_CMD_eval_ro ||
                   cmd->id == FD_CMD_evalsha_ro || cmd->id == FD_CMD_fcall || cmd->id == FD_CMD_fcall_ro;
    if (!k && !optional)
        resp_add_error(&c->out, "ERR Invalid arguments specified for command");
    else {
        resp_add_array(&c->out, k);
        for (int i = 0; i < k; i++) resp_add_bulk(&c->out, argv[2 + pos[i]].ptr, argv[2 + pos[i]].len);
    }
    free(pos);
}

void px_cmd_command(px_conn *c, int argc, resp_arg *argv) {
    size_t n;
    fd_command *t = fd_commands_table(&n);
    if (argc == 1) {
        resp_add_array(&c->out, (long long)n);
        for (size_t i = 0; i < n; i++) add_command_info(&c->out, &t[i]);
        return;
    }
    resp_arg *sub = &argv[1];
    if (resp_arg_is(&*sub, "COUNT")) {
        if (argc != 2) { reply_subcmd_arity(c, "command", sub); return; }
        resp_add_int(&c->out, (long long)n);
    } else if (resp_arg_is(&*sub, "INFO")) {
        if (argc == 2) {
            resp_add_array(&c->out, (long long)n);
            for (size_t i = 0; i < n; i++) add_command_info(&c->out, &t[i]);
            return;
        }
        resp_add_array(&c->out, argc - 2);
        for (int i = 2; i < argc; i++) {
            fd_command *cmd = fd_command_lookup(argv[i].ptr, argv[i].len);
            if (cmd) add_command_info(&c->out, cmd);
            else resp_add_null_array(&c->out);
        }
    } else if (resp_arg_is(&*sub, "DOCS")) {
        if (argc == 2) {
            resp_add_map(&c->out, (long long)n);
            for (size_t i = 0; i < n; i++) add_command_docs(&c->out, &t[i]);
            return;
        }
        int found = 0;
        for (int i = 2; i < argc; i++) found += fd_command_lookup(argv[i].ptr, argv[i].len) != NULL;
        resp_add_map(&c->out, found);
        for (int i = 2; i < argc; i++) {
            fd_command *cmd = fd_command_lookup(argv[i].ptr, argv[i].len);
            if (cmd) add_command_docs(&c->out, cmd);
        }
    } else if (resp_arg_is(&*sub, "LIST")) {
        /* [FILTERBY MODULE name | ACLCAT category | PATTERN glob], as 7.0:
         * anything else (or FILTERBY not followed by exactly two more
         * arguments: one filter only) is a syntax error */
        int kind = 0;                 /* 0 none, 'm' module, 'a' aclcat, 'p' pattern */
        const resp_arg *farg = NULL;
        for (int i = 2; i < argc; i += 3) {
            if (!resp_arg_is(&argv[i], "FILTERBY") || argc - 1 - i != 2) {
                resp_add_error(&c->out, "ERR syntax error");
                return;
            }
            if (resp_arg_is(&argv[i + 1], "MODULE")) kind = 'm';
            else if (resp_arg_is(&argv[i + 1], "ACLCAT")) kind = 'a';
            else if (resp_arg_is(&argv[i + 1], "PATTERN")) kind = 'p';
            else { resp_add_error(&c->out, "ERR syntax error"); return; }
            farg = &argv[i + 2];
        }
        long long shown = 0;
        for (int pass = 0; pass < 2; pass++) {    /* count, then the names */
            if (pass) resp_add_array(&c->out, shown);
            for (size_t i = 0; i < n; i++) {
                if (!command_listed(&t[i], kind, farg)) continue;
                if (pass) resp_add_bulk_cstr(&c->out, t[i].name);
                else shown++;
            }
        }
    } else if (resp_arg_is(&*sub, "GETKEYS")) {
        command_getkeys(c, argc, argv);
    } else if (resp_arg_is(&*sub, "HELP")) {
        static const char *const help[] = {
            "(no subcommand)", "    Return details about all commands.",
            "COUNT", "    Return the total number of commands.",
            "DOCS [<command-name> ...]", "    Return documentation details about commands.",
            "GETKEYS <full-command>", "    Return the keys from a full Redis command.",
            "INFO [<command-name> ...]", "    Return details about the given commands, or all of them.",
            "LIST [FILTERBY (MODULE <module-name>|ACLCAT <category>|PATTERN <pattern>)]",
            "    Return a list of all commands, or those the filter selects.",
            "HELP", "    Print this help.", NULL};
        px_reply_help(c, "COMMAND", help);
    } else {
        reply_unknown_subcmd(c, "COMMAND", sub);
    }
}

/* ---------------------------------------------------------------- CONFIG */

void px_cmd_config(px_conn *c, int argc, resp_arg *argv) {
    resp_arg *sub = &argv[1];
    if (resp_arg_is(&*sub, "GET")) {
        if (argc < 3) { reply_subcmd_arity(c, "config", sub); return; }
        px_config_get_reply(&c->out, argc - 2, argv + 2);
    } else if (resp_arg_is(&*sub, "SET")) {
        if (argc < 4 || (argc - 2) % 2) { reply_subcmd_arity(c, "config", sub); return; }
        /* every name is checked before any is set; a bad value stops at that
         * pair and what was set is rolled back, as Redis 7 does */
        char name[128], value[4096], err[512], val[4096];
        int groups = 0, tls_rebuilt = 0;
        for (int i = 2; i < argc; i += 2) {
            snprintf(name, sizeof name, "%.*s", (int)argv[i].len, argv[i].ptr);
            if (px_config_format(name, val, sizeof val) < 0) {
                resp_add_errorf(&c->out, "ERR Unknown option or number of arguments for CONFIG SET - '%s'", name);
                return;
            }
        }
        px_settings old;
        px_settings_copy(&old, &px_cfg);
        for (int i = 2; i < argc; i += 2) {
            snprintf(name, sizeof name, "%.*s", (int)argv[i].len, argv[i].ptr);
            snprintf(value, sizeof value, "%.*s", (int)argv[i + 1].len, argv[i + 1].ptr);
            px_config_format(name, val, sizeof val);
            if (px_config_set(name, value, 1, err, sizeof err)) {
                resp_add_errorf(&c->out, "ERR CONFIG SET failed (possibly related to argument '%s') - %s", name, err);
                goto rollback;
            }
            groups |= 1 << px_config_group(name);
            px_log(PX_LOG_NOTICE, "CONFIG SET %s changed from '%s'", name, val);
        }
        /* a backend's settings apply by reopening it (a live swap); turning
         * A/B off goes first, so the secondary's store can become the primary
         * in the same call */
        /* tls-*: a new context for new connections, as Redis 7.0 (proxy/tls.h) */
        if ((groups & (1 << PX_CFG_TLS)) && (tls_rebuilt = 1) && px_tls_configure(err, sizeof err)) {
            tls_rebuilt = 0;        /* the running context was kept */
            px_log(PX_LOG_WARNING, "Failed to configure TLS: %s", err);
            resp_add_errorf(&c->out, "ERR CONFIG SET failed (possibly related to argument '%s') - Unable to update TLS configuration. Check server logs.", name);
            goto rollback;
        }
        int ab = (groups & (1 << PX_CFG_AB)) != 0, ab_first = ab && px_cfg.ab_mode == PX_AB_OFF;
        if (ab_first && px_backends_ab_apply(err, sizeof err)) {
            resp_add_errorf(&c->out, "ERR CONFIG SET failed: A/B setup unchanged - %s", err);
            goto rollback;
        }
        fd_pending *owed = NULL;
        if (groups & (1 << PX_CFG_PRIMARY)) {
            /* a network backend answers a probe before traffic moves: the
             * reply to this CONFIG SET waits for it (the client's later
             * replies queue behind it, in order); in a spliced EXEC (a
             * lent buffer: proxy/multi.c) +OK at once, the probe's outcome
             * logged, as a SIGHUP's */
            owed = c->out_lent ? NULL : px_pending_push(c, NULL, 0);
            int rc = px_backends_swap(0, owed, err, sizeof err);
            if (rc != 1 && owed) { px_pending_drop(owed); owed = NULL; }
            if (rc < 0) {
                resp_add_errorf(&c->out, "ERR CONFIG SET failed: backend %s not opened, still on %s - %s",
                                px_cfg.be.backend, old.be.backend, err);
                goto rollback;
            }
        }
        if (ab && !ab_first && px_backends_ab_apply(err, sizeof err)) {
            if (owed) {
                /* the swap's reply is owed: keep it, undo only the A/B part */
                px_log(PX_LOG_WARNING, "CONFIG SET: A/B setup unchanged - %s", err);
                px_backend_settings_assign(&px_cfg.ab, &old.ab);
                px_cfg.ab_mode = old.ab_mode;
                px_settings_free(&old);
                return;
            }
            resp_add_errorf(&c->out, "ERR CONFIG SET failed: A/B setup unchanged - %s", err);
            goto rollback;
        }
        px_settings_free(&old);
        if (!owed) resp_add_simple(&c->out, "OK", 2);
        return;
    rollback:
        /* back to the old settings, and the running backends to match them
         * (no-ops for what did not change) */
        px_settings_free(&px_cfg);
        px_cfg = old;
        px_slowlog_apply();                  /* its thresholds too */
        if (px_backends_swap(0, NULL, err, sizeof err) < 0 || px_backends_ab_apply(err, sizeof err))
            px_log(PX_LOG_WARNING, "CONFIG SET rollback: %s", err);
        /* a TLS context built from the undone values goes too */
        if (tls_rebuilt && px_tls_configure(err, sizeof err)) px_log(PX_LOG_WARNING, "CONFIG SET rollback: %s", err);
        return;
    } else if (resp_arg_is(&*sub, "REWRITE")) {
        if (argc != 2) { reply_subcmd_arity(c, "config", sub); return; }
        char err[512];
        if (px_config_rewrite(err, sizeof err)) resp_add_errorf(&c->out, "ERR %s", err);
        else { px_log(PX_LOG_NOTICE, "CONFIG REWRITE executed with success."); resp_add_simple(&c->out, "OK", 2); }
    } else if (resp_arg_is(&*sub, "RESETSTAT")) {
        if (argc != 2) { reply_subcmd_arity(c, "config", sub); return; }
        px_srv.total_commands = px_srv.total_connections = px_srv.rejected_connections = 0;
        px_srv.net_input = px_srv.net_output = 0;
        px_errorstat_reset();                     /* proxy/slowlog.h */
        resp_add_simple(&c->out, "OK", 2);
    } else if (resp_arg_is(&*sub, "HELP")) {
        static const char *const help[] = {
            "GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
            "SET <directive> <value>", "    Set the configuration <directive> to <value>. Backend directives reopen that backend (a live swap).",
            "REWRITE", "    Rewrite the configuration file.",
            "RESETSTAT", "    Reset statistics reported by the INFO command.",
            "HELP", "    Print this help.", NULL};
        px_reply_help(c, "CONFIG", help);
    } else {
        reply_unknown_subcmd(c, "CONFIG", sub);
    }
}

/* ---------------------------------------------------------------- CLIENT */

void px_client_line(px_conn *x, char *buf, size_t len) {
    ev_tstamp now = ev_now(px_srv.loop);
    size_t nsub[3];
    px_pubsub_client_counts(x, nsub);
    int queued = px_multi_queued(x);
    /* flags as Redis 7.0's catClientInfoString, in its order */
    char flags[16], *f = flags;
    const char *tf = px_tracking_list_flags(x);
    if (x->monitor) *f++ = 'O';
    if (nsub[0] + nsub[1] + nsub[2]) *f++ = 'P';
    if (queued >= 0) *f++ = 'x';
    if (x->blk) *f++ = 'b';
    while (*tf) *f++ = *tf++;
    if (x->watch_dirty) *f++ = 'd';
    if (x->flags & PX_CONN_CLOSE_AFTER_REPLY) *f++ = 'c';
    if (x->flags & PX_CONN_CLOSE_ASAP) *f++ = 'A';
    if (f == flags) *f++ = 'N';
    *f = '\0';
    snprintf(buf, len,
             "id=%llu addr=%s laddr=%s fd=%d name=%s age=%lld idle=%lld flags=%s db=%d sub=%zu psub=%zu ssub=%zu "
             "multi=%d qbuf=%zu qbuf-free=%zu argv-mem=0 multi-mem=0 rbs=%zu rbp=%zu obl=%zu oll=0 omem=%zu "
             "tot-mem=%zu events=r cmd=%s%s%s user=%s redir=%lld resp=%d",
             (unsigned long long)x->id, x->addr, x->laddr, x->fd, x->name ? x->name : "",
             (long long)(now - x->created), (long long)(now - x->last_interaction),
             flags, x->db, nsub[0],
             nsub[1], nsub[2], queued,
             x->rlen - x->rpos, x->rcap - x->rlen, x->rcap, x->rlen, x->out.len - x->wpos, x->out.cap,
             sizeof *x + x->rcap + x->out.cap, x->lastcmd ? x->lastcmd->name : "NULL", x->lastsub[0] ? "|" : "",
             x->lastsub, px_acl_username(x->user), px_tracking_redir(x),
             x->out.proto);
}

/* Redis's client types (CLIENT LIST TYPE, CLIENT KILL TYPE): 'n' normal,
 * 'p' pubsub (subscribed to something), 'x' replica or master (frontdoor has
 * no replication links: no client is one); -1 for a name Redis rejects */
static int client_type_by_name(const resp_arg *a) {
    if (resp_arg_is(a, "normal")) return 'n';
    if (resp_arg_is(a, "pubsub")) return 'p';
    if (resp_arg_is(a, "slave") || resp_arg_is(a, "replica") || resp_arg_is(a, "master")) return 'x';
    return -1;
}

static int client_type(px_conn *x) {
    size_t nsub[3];
    px_pubsub_client_counts(x, nsub);
    return nsub[0] + nsub[1] + nsub[2] ? 'p' : 'n';
}

void px_cmd_client(px_conn *c, int argc, resp_arg *argv) {
    resp_arg *sub = &argv[1];
    char line[1024];
    if (resp_arg_is(&*sub, "ID")) {
        if (argc != 2) { reply_subcmd_arity(c, "client", sub); return; }
        resp_add_int(&c->out, (long long)c->id);
    } else if (resp_arg_is(&*sub, "SETNAME")) {
        if (argc != 3) { reply_subcmd_arity(c, "client", sub); return; }
        if (!valid_client_name(&argv[2])) {
            resp_add_error(&c->out, "ERR Client names cannot contain spaces, newlines or special characters.");
            return;
        }
        set_name(c, &argv[2]);
        resp_add_simple(&c->out, "OK", 2);
    } else if (resp_arg_is(&*sub, "GETNAME")) {
        if (argc != 2) { reply_subcmd_arity(c, "client", sub); return; }
        if (c->name) resp_add_bulk_cstr(&c->out, c->name);
        else resp_add_null(&c->out);
    } else if (resp_arg_is(&*sub, "INFO")) {
        if (argc != 2) { reply_subcmd_arity(c, "client", sub); return; }
        px_client_line(c, line, sizeof line);
        size_t l = strlen(line);
        line[l] = '\n';
        resp_add_verbatim(&c->out, "txt", line, l + 1);
    } else if (resp_arg_is(&*sub, "LIST")) {
        /* CLIENT LIST [TYPE type] | [ID id...] (Redis 7.0): every client
         * oldest first, those of a type, or the given ids in argument order */
        int type = -1;
        if (argc == 4 && resp_arg_is(&argv[2], "TYPE")) {
            if ((type = client_type_by_name(&argv[3])) < 0) {
                resp_add_errorf(&c->out, "ERR Unknown client type '%.*s'", (int)argv[3].len, argv[3].ptr);
                return;
            }
        } else if (argc > 3 && resp_arg_is(&argv[2], "ID")) {
            long long id;
            for (int j = 3; j < argc; j++)
                if (resp_str2ll(argv[j].ptr, argv[j].len, &id)) {
                    resp_add_error(&c->out, "ERR Invalid client ID");
                    return;
                }
        } else if (argc != 2) {
            resp_add_error(&c->out, "ERR syntax error");
            return;
        }
        resp_out all;
        resp_out_init(&all, 2);
        if (argc > 3 && type < 0) {
            for (int j = 3; j < argc; j++) {
                long long id = 0;
                resp_str2ll(argv[j].ptr, argv[j].len, &id);
                for (px_conn *x = px_srv.clients; x; x = x->next)
                    if (x->id == (uint64_t)id) {
                        px_client_line(x, line, sizeof line);
                        resp_out_raw(&all, line, strlen(line));
                        resp_out_raw(&all, "\n", 1);
                        break;
                    }
            }
        } else {
            px_conn *x = px_srv.clients;         /* newest first: listed from the oldest, as Redis */
            while (x && x->next) x = x->next;
            for (; x; x = x->prev) {
                if (type >= 0 && client_type(x) != type) continue;
                px_client_line(x, line, sizeof line);
                resp_out_raw(&all, line, strlen(line));
                resp_out_raw(&all, "\n", 1);
            }
        }
        resp_add_verbatim(&c->out, "txt", all.data ? all.data : "", all.len);
        resp_out_free(&all);
    } else if (resp_arg_is(&*sub, "KILL")) {
        /* CLIENT KILL ip:port (old form: may kill the caller; OK or "No
         * such client"), or CLIENT KILL <filter> <value> ... with the filters
         * ID, ADDR, LADDR, TYPE, USER, SKIPME (yes by default): every
         * matching client, counted, as Redis 7.0 */
        int old = argc == 3, skipme = !old, type = -1;     /* client_type's */
        long long id = 0, killed = 0;
        const resp_arg *addr = old ? &argv[2] : NULL, *laddr = NULL;
        px_acl_user *user = NULL;
        for (int i = 2; !old && i < argc; i += 2) {
            if (i + 1 >= argc) { resp_add_error(&c->out, "ERR syntax error"); return; }
            const resp_arg *opt = &argv[i], *val = &argv[i + 1];
            if (resp_arg_is(opt, "ID")) {
                if (resp_str2ll(val->ptr, val->len, &id) || id < 1) {
                    resp_add_error(&c->out, "ERR client-id should be greater than 0");
                    return;
                }
            } else if (resp_arg_is(opt, "TYPE")) {
                if ((type = client_type_by_name(val)) < 0) {
                    resp_add_errorf(&c->out, "ERR Unknown client type '%.*s'", (int)val->len, val->ptr);
                    return;
                }
            } else if (resp_arg_is(opt, "ADDR")) {
                addr = val;
            } else if (resp_arg_is(opt, "LADDR")) {
                laddr = val;
            } else if (resp_arg_is(opt, "USER")) {
                if (!(user = px_acl_lookup(val->ptr, val->len))) {
                    resp_add_errorf(&c->out, "ERR No such user '%.*s'", (int)val->len, val->ptr);
                    return;
                }
            } else if (resp_arg_is(opt, "SKIPME")) {
                if (resp_arg_is(val, "yes")) skipme = 1;
                else if (resp_arg_is(val, "no")) skipme = 0;
                else { resp_add_error(&c->out, "ERR syntax error"); return; }
            } else {
                resp_add_error(&c->out, "ERR syntax error");
                return;
            }
        }
        for (px_conn *x = px_srv.clients; x; x = x->next) {
            if (addr && !(strlen(x->addr) == addr->len && !memcmp(x->addr, addr->ptr, addr->len))) continue;
            if (laddr && !(strlen(x->laddr) == laddr->len && !memcmp(x->laddr, laddr->ptr, laddr->len))) continue;
            if (id && x->id != (uint64_t)id) continue;
            if (user && (x->user ? x->user : px_acl_default()) != user) continue;
            if (type != -1 && client_type(x) != type) continue;
            if (x == c && skipme) continue;
            x->flags |= PX_CONN_CLOSE_AFTER_REPLY;    /* the caller: after this reply */
            if (x->blk) x->flags |= PX_CONN_CLOSE_ASAP;   /* its blocked reply would never come */
            ev_io_stop(px_srv.loop, &x->rio);
            px_conn_touch(x);
            killed++;
        }
        if (old) {
            if (killed) resp_add_simple(&c->out, "OK", 2);
            else resp_add_error(&c->out, "ERR No such client");
        } else {
            resp_add_int(&c->out, killed);
        }
    } else if (resp_arg_is(sub, "UNBLOCK")) {
        /* CLIENT UNBLOCK id [TIMEOUT|ERROR] */
        if (argc != 3 && argc != 4) { reply_subcmd_arity(c, "client", sub); return; }
        long long id;
        if (resp_str2ll(argv[2].ptr, argv[2].len, &id)) {
            resp_add_error(&c->out, "ERR value is not an integer or out of range");
            return;
        }
        int how = 0;
        if (argc == 4) {
            if (resp_arg_is(&argv[3], "ERROR")) how = 1;
            else if (!resp_arg_is(&argv[3], "TIMEOUT")) {
                resp_add_error(&c->out, "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
                return;
            }
        }
        int done = 0;
        for (px_conn *x = px_srv.clients; x; x = x->next)
            if (x->id == (uint64_t)id) { done = px_block_unblock(x, how); break; }
        resp_add_int(&c->out, done);
    } else if (resp_arg_is(sub, "REPLY")) {
        /* CLIENT REPLY ON|OFF|SKIP (Redis 7.0): OFF and SKIP answer nothing,
         * ON answers +OK; SKIP silences the next command (not while OFF) */
        if (argc != 3) { reply_subcmd_arity(c, "client", sub); return; }
        if (resp_arg_is(&argv[2], "ON")) {
            c->reply &= (unsigned char)~(PX_REPLY_OFF | PX_REPLY_SKIP);
            px_conn_mute_stop(c);
            resp_add_simple(&c->out, "OK", 2);
        } else if (resp_arg_is(&argv[2], "OFF")) {
            c->reply |= PX_REPLY_OFF;
            px_conn_mute_start(c);
        } else if (resp_arg_is(&argv[2], "SKIP")) {
            if (!(c->reply & PX_REPLY_OFF)) c->reply |= PX_REPLY_SKIP_NEXT;
        } else {
            resp_add_error(&c->out, "ERR syntax error");
        }
    } else if (resp_arg_is(sub, "TRACKING")) {
        px_tracking_command(c, argc, argv);     /* proxy/tracking.h */
    } else if (resp_arg_is(sub, "GETREDIR")) {
        if (argc != 2) { reply_subcmd_arity(c, "client", sub); return; }
        resp_add_int(&c->out, px_tracking_redir(c));
    } else if (resp_arg_is(sub, "TRACKINGINFO")) {
        if (argc != 2) { reply_subcmd_arity(c, "client", sub); return; }
        px_tracking_info(c);
    } else if (resp_arg_is(sub, "CACHING")) {
        if (argc != 3) { reply_subcmd_arity(c, "client", sub); return; }
        px_tracking_caching(c, &argv[2]);
    } else if (resp_arg_is(sub, "NO-EVICT") || resp_arg_is(sub, "NO-TOUCH")) {
        /* accepted: frontdoor evicts nothing and keeps no LRU/LFU clock */
        if (argc != 3) { reply_subcmd_arity(c, "client", sub); return; }
        if (!resp_arg_is(&argv[2], "ON") && !resp_arg_is(&argv[2], "OFF")) {
            resp_add_error(&c->out, "ERR syntax error");
            return;
        }
        resp_add_simple(&c->out, "OK", 2);
    } else if (resp_arg_is(&*sub, "HELP")) {
        static const char *const help[] = {
            "CACHING (YES|NO)", "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
            "GETREDIR", "    Return the client ID we are redirecting to when tracking is enabled.",
            "GETNAME", "    Return the name of the current connection.",
            "ID", "    Return the ID of the current connection.",
            "INFO", "    Return information about the current client connection.",
            "KILL <ip:port>", "    Kill connection made from <ip:port>.",
            "KILL <option> <value> [<option> <value> [...]]",
            "    Kill connections. Options are:",
            "    * ADDR (<ip:port>|<unixsocket>:0)",
            "      Kill connections made from the specified address",
            "    * LADDR (<ip:port>|<unixsocket>:0)",
            "      Kill connections made to specified local address",
            "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
            "      Kill connections by type.",
            "    * USER <username>",
            "      Kill connections authenticated by <username>.",
            "    * SKIPME (YES|NO)",
            "      Skip killing current connection (default: yes).",
            "LIST [options ...]", "    Return information about client connections. Options:",
            "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)", "      Return clients of specified type.",
            "NO-EVICT (ON|OFF)", "    Protect current client connection from eviction (accepted: frontdoor evicts nothing).",
            "NO-TOUCH (ON|OFF)", "    Will not touch LRU/LFU stats when this mode is on (accepted: no such stats).",
            "REPLY (ON|OFF|SKIP)", "    Control the replies sent to the current connection.",
            "SETNAME <name>", "    Assign the name <name> to the current connection.",
            "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]] [OPTIN] [OPTOUT] [NOLOOP]", "    Control server assisted client side caching.",
            "TRACKINGINFO", "    Report tracking status for the current connection.",
            "UNBLOCK <clientid> [TIMEOUT|ERROR]", "    Unblock the specified blocked client.",
            "HELP", "    Print this help.", NULL};
        px_reply_help(c, "CLIENT", help);
    } else {
        reply_unknown_subcmd(c, "CLIENT", sub);
    }
}

/* RESET: the connection as new (Redis 7.0): subscriptions and MONITOR
 * dropped, RESP2, database 0, no name, authenticated only if no password is
 * required. (A transaction in progress is the MULTI code's to discard.) */
void px_cmd_reset(px_conn *c, int argc, resp_arg *argv) {
    (void)argc; (void)argv;
    px_pubsub_reset(c);
    px_multi_release(c);                 /* a transaction in progress, and the watches */
    px_tracking_off(c);                  /* client-side caching (proxy/tracking.h) */
    /* CLIENT REPLY OFF (and a SKIP queued in a transaction) end; a SKIP
     * in effect still silences this reply, as in Redis 7.0 */
    c->reply &= (unsigned char)~(PX_REPLY_OFF | PX_REPLY_SKIP_NEXT);
    if (!(c->reply & PX_REPLY_SKIP)) px_conn_mute_stop(c);
    c->out.proto = 2;
    c->db = 0;
    free(c->name);
    c->name = NULL;
    c->user = NULL;                      /* the default user */
    c->authed = px_acl_default_noauth();
    resp_add_simple(&c->out, "RESET", 5);
}
