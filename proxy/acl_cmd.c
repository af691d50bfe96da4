/* acl_cmd.c — ACL LOG (the denials kept, bounded by acllog-max-len), the
 * users of the configuration ("user" lines, requirepass) and of an ACL
 * file (LOAD/SAVE), and the ACL command's subcommands. Private:
 * acl_int.h. */
#include "acl_int.h"

/* ------------------------------------------------------------ ACL LOG */

/* One entry (Redis 7.0's ACL LOG): a refusal like one of the 10 newest
 * entries within 60 s counts in it. Newest first; at most acllog-max-len (trimmed as entries
 * come and when the directive shrinks). */
typedef struct log_entry {
    long long count;
    int       reason, context;      /* PX_ACL_DENIED_* or LOG_AUTH; LOG_CTX_* */
    char     *object, *username, *cinfo;
    uint64_t  ctime_ms;
} log_entry;
static log_entry *acllog;
static long long nlog, logcap;

static void log_free(log_entry *e) { free(e->object); free(e->username); free(e->cinfo); }

static void log_trim(void) {
    long long max = px_cfg.acllog_max_len;
    while (nlog > max) log_free(&acllog[--nlog]);
}

static uint64_t now_ms(void) { return (uint64_t)(ev_now(px_srv.loop) * 1000.0); }

void acl_log_add(px_conn *c, int reason, int context, const char *obj, size_t olen, const char *user, size_t ulen) {
    if (px_cfg.acllog_max_len <= 0) return;
    char cinfo[1024] = "";
    if (c) px_client_line(c, cinfo, sizeof cinfo);
    uint64_t now = now_ms();
    for (long long i = 0; i < nlog && i < 10; i++) {   /* Redis looks at the 10 newest */
        log_entry *e = &acllog[i];
        if (e->reason == reason && e->context == context && strlen(e->object) == olen && !memcmp(e->object, obj, olen) &&
            strlen(e->username) == ulen && !memcmp(e->username, user, ulen) && now - e->ctime_ms < 60000) {
            log_entry x = *e;
            x.count++;
            x.ctime_ms = now;
            char *ci = acl_dupn(cinfo, strlen(cinfo));
            if (ci) { free(x.cinfo); x.cinfo = ci; }
            memmove(&acllog[1], &acllog[0], (size_t)i * sizeof *acllog);   /* to the front */
            acllog[0] = x;
            return;
        }
    }
    if (nlog == logcap) {
        long long cap = logcap ? logcap * 2 : 16;
        log_entry *v = realloc(acllog, (size_t)cap * sizeof *v);
        if (!v) return;
        acllog = v;
        logcap = cap;
    }
    log_entry e = {1, reason, context, acl_dupn(obj, olen), acl_dupn(user, ulen), acl_dupn(cinfo, strlen(cinfo)), now};
    if (!e.object || !e.username || !e.cinfo) { log_free(&e); return; }
    memmove(&acllog[1], &acllog[0], (size_t)nlog * sizeof *acllog);
    acllog[0] = e;
    nlog++;
    log_trim();
}


/* ------------------------------------------------------------ users */

void px_acl_init(void) {
    if (acl_default_user) return;
    acl_cmdinfo_init();
    acl_default_user = acl_user_new("default", 7);
    if (!acl_default_user) { px_log(PX_LOG_WARNING, "ACL: out of memory"); abort(); }
    static const char *const rules[] = {"on", "nopass", "~*", "&*", "+@all"};
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) acl_user_rule(acl_default_user, rules[i], strlen(rules[i]));
    acl_user_refresh(acl_default_user);
    acl_insert_user(acl_default_user);
}

void px_acl_set_requirepass(const char *pass) {
    px_acl_init();
    acl_user_rule(acl_default_user, "resetpass", 9);
    if (pass && pass[0]) {
        char hex[65];
        px_sha256_hex(pass, strlen(pass), hex);
        acl_add_hash(acl_default_user, hex);
    } else {
        acl_user_rule(acl_default_user, "nopass", 6);
    }
}

/* requirepass is the default user's password: a change of the directive
 * (file, CONFIG SET, reload) is applied when next looked at. */
static char *seen_requirepass;
static void sync_requirepass(void) {
    px_acl_init();
    const char *now = px_cfg.requirepass ? px_cfg.requirepass : "";
    if (seen_requirepass && !strcmp(seen_requirepass, now)) return;
    if (!seen_requirepass && !now[0]) { seen_requirepass = acl_dupn("", 0); return; }
    free(seen_requirepass);
    seen_requirepass = acl_dupn(now, strlen(now));
    px_acl_set_requirepass(now);
}

px_acl_user *px_acl_default(void) { px_acl_init(); return acl_default_user; }
int px_acl_default_noauth(void) { sync_requirepass(); return acl_default_user->on && acl_default_user->nopass; }
const char *px_acl_username(const px_acl_user *u) { return u ? u->name : "default"; }

px_acl_user *px_acl_authenticate(px_conn *c, const resp_arg *cmdname, const char *name, size_t nlen, const char *pass,
                                 size_t plen) {
    sync_requirepass();
    px_acl_user *u = acl_lookup(name, nlen);
    int ok = 0;
    if (u && u->on) {
        char hex[65];
        px_sha256_hex(pass, plen, hex);
        ok = u->nopass;
        for (int i = 0; i < u->npw; i++) ok |= !memcmp(u->pw[i], hex, 64);   /* every one compared: no early exit */
    }
    if (ok) return u;
    acl_log_add(c, LOG_AUTH, c && c->multi ? LOG_CTX_MULTI : LOG_CTX_TOPLEVEL, cmdname->ptr, cmdname->len, name, nlen);
    return NULL;
}

static int sub_denied(void *ud, int kind, const char *name, size_t len) {
    const acl_sel *s = ud;
    resp_arg a = {(char *)name, len};   /* only read */
    return !acl_chan_ok(s, &a, kind == 1);   /* a pattern must be one of the user's, literally */
}

/* Redis 7.0 (ACLKillPubsubClientsIfNeeded): after a change of u's rules,
 * its clients subscribed to a channel or pattern its root selector no
 * longer allows are disconnected. */
static void kill_lost_subscribers(px_acl_user *u, px_conn *current) {
    const acl_sel *r = &u->sel[0];
    if (r->flags & SEL_ALLCHANNELS) return;
    for (px_conn *x = px_srv.clients; x; x = x->next) {
        if ((x->user ? x->user : acl_default_user) != u || !x->ps || !px_pubsub_each(x, sub_denied, (void *)r)) continue;
        x->flags |= PX_CONN_CLOSE_AFTER_REPLY;
        if (x->blk || x != current) x->flags |= PX_CONN_CLOSE_ASAP;
        ev_io_stop(px_srv.loop, &x->rio);
        px_conn_touch(x);
    }
}

/* Create or change a user from rules; 0, or -1 with err. Clients of a
 * changed user are disconnected (current: after its reply). */
static int setuser(const char *name, size_t nlen, int n, const resp_arg *rules, px_conn *current, char *err, size_t errlen) {
    px_acl_user *old = acl_lookup(name, nlen);
    px_acl_user *u = old ? acl_user_dup(old) : acl_user_new(name, nlen);
    if (!u) { snprintf(err, errlen, "ERR Out of memory"); return -1; }
    if (acl_apply_rules(u, n, rules, err, errlen)) { acl_user_free(u); return -1; }
    if (!old) {
        if (acl_insert_user(u)) { acl_user_free(u); snprintf(err, errlen, "ERR Out of memory"); return -1; }
        return 0;
    }
    /* swap the contents so that connections keep pointing at old */
    px_acl_user tmp = *old;
    *old = *u;
    *u = tmp;
    acl_user_free(u);
    kill_lost_subscribers(old, current);
    return 0;
}

static int valid_name(const resp_arg *a) {
    for (size_t i = 0; i < a->len; i++)
        if (a->ptr[i] == ' ' || a->ptr[i] == '\0') return 0;   /* Redis: no spaces (and no NUL in ours) */
    return 1;
}

static int config_users;   /* users defined by "user" lines */

int px_acl_config_user(int argc, char **argv, char *err, size_t errlen) {
    px_acl_init();
    if (argc < 1) { snprintf(err, errlen, "'user' needs a name and rules"); return -1; }
    resp_arg rules[argc];
    for (int i = 1; i < argc; i++) { rules[i - 1].ptr = argv[i]; rules[i - 1].len = strlen(argv[i]); }
    resp_arg name = {argv[0], strlen(argv[0])};
    if (!valid_name(&name)) { snprintf(err, errlen, "Usernames can't contain spaces or null characters"); return -1; }
    config_users++;
    char e[512];
    if (setuser(argv[0], strlen(argv[0]), argc - 1, rules, NULL, e, sizeof e)) {
        snprintf(err, errlen, "%s", e + 4);          /* without "ERR " */
        return -1;
    }
    return 0;
}

/* The users of the aclfile (Redis 7.0's ACLLoadFromFile): all or nothing.
 * On success the table is replaced: the default user keeps its object (its
 * clients stay), every other user's clients are disconnected. err gets
 * every line's error, as Redis. */
static int load_file(const char *path, px_conn *current, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) { snprintf(err, errlen, "Error loading ACLs, opening file '%s': %s", path, strerror(errno)); return -1; }
    px_acl_user **nu = NULL;
    int nn = 0, bad = 0, lineno = 0;
    sbuf errs = {0};
    char line[16384];
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *words[1024];
        int n = 0;
        for (char *p = strtok(line, " \t\r\n"); p && n < 1024; p = strtok(NULL, " \t\r\n")) words[n++] = p;
        if (!n) continue;
        char e[600];
        e[0] = '\0';
        if (strcmp(words[0], "user") || n < 2) {
            snprintf(e, sizeof e, "%s:%d should start with user keyword followed by the username. ", path, lineno);
        } else {
            int dup = 0;
            for (int i = 0; i < nn; i++) dup |= !strcmp(nu[i]->name, words[1]);
            if (dup) {
                snprintf(e, sizeof e, "WARNING: Duplicate user '%s' found on line %d. ", words[1], lineno);
            } else {
                px_acl_user *u = acl_user_new(words[1], strlen(words[1]));
                resp_arg rules[1024];
                for (int i = 2; i < n; i++) { rules[i - 2].ptr = words[i]; rules[i - 2].len = strlen(words[i]); }
                char e2[512];
                px_acl_user **v = u ? realloc(nu, (size_t)(nn + 1) * sizeof *v) : NULL;
                if (!v) { acl_user_free(u); snprintf(e, sizeof e, "%s:%d: Out of memory. ", path, lineno); }
                else {
                    nu = v;
                    nu[nn++] = u;
                    if (acl_apply_rules(u, n - 2, rules, e2, sizeof e2)) {
                        const char *why = strstr(e2, "': ");
                        snprintf(e, sizeof e, "%s:%d: %s. ", path, lineno, why ? why + 3 : e2 + 4);
                    }
                }
            }
        }
        if (e[0]) { bad = 1; acl_sb_str(&errs, e); }
    }
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "%sWARNING: ACL errors detected, no change to the previously active ACL rules was performed",
                 errs.p ? errs.p : "");
        free(errs.p);
        for (int i = 0; i < nn; i++) acl_user_free(nu[i]);
        free(nu);
        return -1;
    }
    free(errs.p);
    /* the old default user takes the file's default (or a new default's rules) */
    px_acl_user *fresh = NULL;
    for (int i = 0; i < nn; i++)
        if (!strcmp(nu[i]->name, "default")) { fresh = nu[i]; memmove(&nu[i], &nu[i + 1], (size_t)(nn - i - 1) * sizeof *nu); nn--; break; }
    if (!fresh) {
        fresh = acl_user_new("default", 7);
        static const char *const rules[] = {"on", "nopass", "~*", "&*", "+@all"};
        for (size_t i = 0; fresh && i < sizeof rules / sizeof rules[0]; i++) acl_user_rule(fresh, rules[i], strlen(rules[i]));
        if (fresh) acl_user_refresh(fresh);
    }
    if (fresh) {
        px_acl_user tmp = *acl_default_user;
        *acl_default_user = *fresh;
        *fresh = tmp;
        acl_user_free(fresh);
    }
    for (int i = 0; i < acl_nusers; i++)
        if (acl_users[i] != acl_default_user) { acl_kill_clients(acl_users[i], current); acl_user_free(acl_users[i]); }
    acl_nusers = 0;
    acl_insert_user(acl_default_user);
    for (int i = 0; i < nn; i++) acl_insert_user(nu[i]);
    free(nu);
    return 0;
}

static int save_file(const char *path) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp-%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    int bad = 0;
    for (int i = 0; i < acl_nusers; i++) {
        sbuf b = {0};
        acl_describe_user(&b, acl_users[i]);
        bad |= !b.p || fprintf(f, "%s\n", b.p) < 0;
        free(b.p);
    }
    bad |= fflush(f) != 0 || fsync(fileno(f)) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path)) { unlink(tmp); return -1; }
    return 0;
}

int px_acl_startup(char *err, size_t errlen) {
    px_acl_init();
    sync_requirepass();
    if (!px_cfg.aclfile || !px_cfg.aclfile[0]) return 0;
    if (config_users) {
        snprintf(err, errlen, "Configuring frontdoor with users defined in the config file and at the same time an ACL file path is invalid");
        return -1;
    }
    char e[4096];
    if (load_file(px_cfg.aclfile, NULL, e, sizeof e)) { snprintf(err, errlen, "aclfile: %s", e); return -1; }
    return 0;
}

static const char no_aclfile[] = "ERR This Redis instance is not configured to use an ACL file. You may want to specify "
    "users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file "
    "set) in order to store users in the Redis configuration.";

/* ------------------------------------------------------------ ACL command */

static void add_bulk_sb(resp_out *o, sbuf *b) { resp_add_bulk(o, b->p ? b->p : "", b->len); free(b->p); b->p = NULL; b->len = b->cap = 0; }

static void getuser_selector_fields(resp_out *o, const acl_sel *s) {
    sbuf b = {0};
    resp_add_bulk_cstr(o, "commands");
    acl_describe_commands(&b, s);
    add_bulk_sb(o, &b);
    resp_add_bulk_cstr(o, "keys");
    acl_describe_keys(&b, s);
    acl_sb_trim(&b);
    add_bulk_sb(o, &b);
    resp_add_bulk_cstr(o, "channels");
    acl_describe_channels(&b, s, 0);
    acl_sb_trim(&b);
    add_bulk_sb(o, &b);
}

static void reply_getuser(resp_out *o, const px_acl_user *u) {
    resp_add_map(o, 6);
    resp_add_bulk_cstr(o, "flags");
    resp_add_set(o, 1 + u->nopass + (u->sanitize != 0));
    resp_add_bulk_cstr(o, u->on ? "on" : "off");
    if (u->nopass) resp_add_bulk_cstr(o, "nopass");
    if (u->sanitize) resp_add_bulk_cstr(o, u->sanitize == 2 ? "skip-sanitize-payload" : "sanitize-payload");
    resp_add_bulk_cstr(o, "passwords");
    resp_add_array(o, u->npw);
    for (int i = 0; i < u->npw; i++) resp_add_bulk(o, u->pw[i], 64);
    getuser_selector_fields(o, &u->sel[0]);
    resp_add_bulk_cstr(o, "selectors");
    resp_add_array(o, u->nsel - 1);
    for (int i = 1; i < u->nsel; i++) {
        resp_add_map(o, 3);
        getuser_selector_fields(o, &u->sel[i]);
    }
}


/* Redis's arity error of a subcommand: 'acl|setuser', in lower case. */
static void subcmd_arity(resp_out *o, const resp_arg *sub) {
    char low[64];
    size_t n = sub->len < sizeof low ? sub->len : sizeof low - 1;
    for (size_t i = 0; i < n; i++) low[i] = (char)((sub->ptr[i] >= 'A' && sub->ptr[i] <= 'Z') ? sub->ptr[i] + 32 : sub->ptr[i]);
    resp_add_errorf(o, "ERR wrong number of arguments for 'acl|%.*s' command", (int)n, low);
}

void px_cmd_acl(px_conn *c, int argc, resp_arg *argv) {
    resp_out *o = &c->out;
    resp_arg *sub = &argv[1];
    char err[512];
    sync_requirepass();
#define ARITY(ok) do { if (!(ok)) { subcmd_arity(o, sub); return; } } while (0)
    if (resp_arg_is(sub, "SETUSER")) {
        ARITY(argc >= 3);
        if (!valid_name(&argv[2])) { resp_add_error(o, "ERR Usernames can't contain spaces or null characters"); return; }
        if (setuser(argv[2].ptr, argv[2].len, argc - 3, &argv[3], c, err, sizeof err)) { resp_add_error(o, err); return; }
        resp_add_simple(o, "OK", 2);
    } else if (resp_arg_is(sub, "GETUSER")) {
        ARITY(argc == 3);
        px_acl_user *u = acl_lookup(argv[2].ptr, argv[2].len);
        if (!u) { resp_add_null(o); return; }
        reply_getuser(o, u);
    } else if (resp_arg_is(sub, "DELUSER")) {
        ARITY(argc >= 3);
        long long n = 0;
        for (int i = 2; i < argc; i++)
            if (resp_arg_is(&argv[i], "default")) { resp_add_error(o, "ERR The 'default' user cannot be removed"); return; }
        for (int i = 2; i < argc; i++) {
            int at;
            if (!acl_find_user(argv[i].ptr, argv[i].len, &at)) continue;
            px_acl_user *u = acl_users[at];
            memmove(&acl_users[at], &acl_users[at + 1], (size_t)(acl_nusers - at - 1) * sizeof *acl_users);
            acl_nusers--;
            acl_kill_clients(u, c);
            acl_user_free(u);
            n++;
        }
        resp_add_int(o, n);
    } else if (resp_arg_is(sub, "USERS")) {
        ARITY(argc == 2);
        resp_add_array(o, acl_nusers);
        for (int i = 0; i < acl_nusers; i++) resp_add_bulk(o, acl_users[i]->name, acl_users[i]->namelen);
    } else if (resp_arg_is(sub, "LIST")) {
        ARITY(argc == 2);
        resp_add_array(o, acl_nusers);
        for (int i = 0; i < acl_nusers; i++) {
            sbuf b = {0};
            acl_describe_user(&b, acl_users[i]);
            add_bulk_sb(o, &b);
        }
    } else if (resp_arg_is(sub, "WHOAMI")) {
        ARITY(argc == 2);
        resp_add_bulk_cstr(o, px_acl_username(c->user));
    } else if (resp_arg_is(sub, "CAT")) {
        ARITY(argc == 2 || argc == 3);
        if (argc == 2) {
            resp_add_array(o, FD_CAT_COUNT);
            for (int k = 0; k < FD_CAT_COUNT; k++) resp_add_bulk_cstr(o, fd_category_name(k));
            return;
        }
        int cat = fd_category_lookup(argv[2].ptr, argv[2].len);
        if (cat < 0) { resp_add_errorf(o, "ERR Unknown category '%.*s'", (int)argv[2].len, argv[2].ptr); return; }
        int n = 0;
        for (int id = 0; id < FD_CMD_COUNT; id++) n += fd_command_categories(fd_command_by_id(id)) >> cat & 1;
        resp_add_array(o, n);
        for (int id = 0; id < FD_CMD_COUNT; id++)
            if (fd_command_categories(fd_command_by_id(id)) >> cat & 1) resp_add_bulk_cstr(o, fd_command_by_id(id)->name);
    } else if (resp_arg_is(sub, "GENPASS")) {
        ARITY(argc == 2 || argc == 3);
        long long bits = 256;
        if (argc == 3 && resp_str2ll(argv[2].ptr, argv[2].len, &bits)) {
            resp_add_error(o, "ERR value is not an integer or out of range");
            return;
        }
        if (bits <= 0 || bits > 4096) {
            resp_add_error(o, "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096");
            return;
        }
        unsigned char rnd[512];
        size_t nb = (size_t)(bits + 7) / 8;
        int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        ssize_t got = fd >= 0 ? read(fd, rnd, nb) : -1;
        if (fd >= 0) close(fd);
        if (got != (ssize_t)nb) { resp_add_error(o, "ERR no random source"); return; }
        char hex[1025];
        static const char digits[] = "0123456789abcdef";
        for (size_t i = 0; i < nb; i++) { hex[2 * i] = digits[rnd[i] >> 4]; hex[2 * i + 1] = digits[rnd[i] & 15]; }
        resp_add_bulk(o, hex, (size_t)(bits + 3) / 4);
    } else if (resp_arg_is(sub, "DRYRUN")) {
        ARITY(argc >= 4);
        px_acl_user *u = acl_lookup(argv[2].ptr, argv[2].len);
        if (!u) { resp_add_errorf(o, "ERR User '%.*s' not found", (int)argv[2].len, argv[2].ptr); return; }
        fd_command *cmd = fd_command_lookup(argv[3].ptr, argv[3].len);
        if (!cmd) { resp_add_errorf(o, "ERR Command '%.*s' not found", (int)argv[3].len, argv[3].ptr); return; }
        int n = argc - 3;
        if ((cmd->arity > 0 && n != cmd->arity) || n < -cmd->arity) {
            resp_add_errorf(o, "ERR wrong number of arguments for '%s' command", cmd->name);
            return;
        }
        int pos = 0, r = acl_user_check(u, cmd, n, &argv[3], &pos);
        if (r == PX_ACL_OK || r == PX_ACL_DENIED_SORT_BY || r == PX_ACL_DENIED_SORT_GET) {   /* the command's own error */
            resp_add_simple(o, "OK", 2);
            return;
        }
        char text[256];
        const resp_arg *what = &argv[3 + pos];
        int wl = (int)(what->len > 128 ? 128 : what->len);
        if (r == PX_ACL_DENIED_KEY) snprintf(text, sizeof text, "This user has no permissions to access the '%.*s' key", wl, what->ptr);
        else if (r == PX_ACL_DENIED_CHANNEL) snprintf(text, sizeof text, "This user has no permissions to access the '%.*s' channel", wl, what->ptr);
        else { acl_denied_text(text, sizeof text, r, cmd, n, &argv[3]); text[0] = 'T'; }
        resp_add_bulk_cstr(o, text);
    } else if (resp_arg_is(sub, "SAVE")) {
        ARITY(argc == 2);
        if (!px_cfg.aclfile[0]) { resp_add_error(o, no_aclfile); return; }
        if (save_file(px_cfg.aclfile)) {
            px_log(PX_LOG_WARNING, "ACL SAVE: can't write %s: %s", px_cfg.aclfile, strerror(errno));
            resp_add_error(o, "ERR There was an error trying to save the ACLs. Please check the server logs for more information");
            return;
        }
        resp_add_simple(o, "OK", 2);
    } else if (resp_arg_is(sub, "LOAD")) {
        ARITY(argc == 2);
        if (!px_cfg.aclfile[0]) { resp_add_error(o, no_aclfile); return; }
        char e[4096];
        if (load_file(px_cfg.aclfile, c, e, sizeof e)) { resp_add_errorf(o, "ERR %s", e); return; }
        resp_add_simple(o, "OK", 2);
    } else if (resp_arg_is(sub, "LOG")) {
        ARITY(argc == 2 || argc == 3);
        long long count = 10;
        if (argc == 3) {
            if (resp_arg_is(&argv[2], "RESET")) {
                while (nlog) log_free(&acllog[--nlog]);
                resp_add_simple(o, "OK", 2);
                return;
            }
            if (resp_str2ll(argv[2].ptr, argv[2].len, &count)) {
                resp_add_error(o, "ERR value is not an integer or out of range");
                return;
            }
            if (count < 0) count = 0;
        }
        log_trim();
        static const char *const reasons[] = {"", "command", "key", "auth", "channel"};
        static const char *const contexts[] = {"toplevel", "multi", "lua"};
        long long n = count < nlog ? count : nlog;
        uint64_t now = now_ms();
        resp_add_array(o, n);
        for (long long i = 0; i < n; i++) {
            log_entry *e = &acllog[i];
            resp_add_map(o, 7);
            resp_add_bulk_cstr(o, "count");       resp_add_int(o, e->count);
            resp_add_bulk_cstr(o, "reason");      resp_add_bulk_cstr(o, reasons[e->reason]);
            resp_add_bulk_cstr(o, "context");     resp_add_bulk_cstr(o, contexts[e->context]);
            resp_add_bulk_cstr(o, "object");      resp_add_bulk_cstr(o, e->object);
            resp_add_bulk_cstr(o, "username");    resp_add_bulk_cstr(o, e->username);
            resp_add_bulk_cstr(o, "age-seconds"); resp_add_double(o, (double)(now - e->ctime_ms) / 1000.0);
            resp_add_bulk_cstr(o, "client-info"); resp_add_bulk_cstr(o, e->cinfo);
        }
    } else if (resp_arg_is(sub, "HELP")) {
        static const char *const help[] = {
            "CAT [<category>]", "    List all commands that belong to <category>, or all command categories",
            "    when no category is specified.",
            "DELUSER <username> [<username> ...]", "    Delete a list of users.",
            "DRYRUN <username> <command> [<arg> ...]",
            "    Returns whether the user can execute the given command without executing the command.",
            "GETUSER <username>", "    Get the user's details.",
            "GENPASS [<bits>]", "    Generate a secure 256-bit user password. The optional `bits` argument can",
            "    be used to specify a different size.",
            "LIST", "    Show users details in config file format.",
            "LOAD", "    Reload users from the ACL file.",
            "LOG [<count> | RESET]", "    Show the ACL log entries.",
            "SAVE", "    Save the current config to the ACL file.",
            "SETUSER <username> <attribute> [<attribute> ...]", "    Create or modify a user with the specified attributes.",
            "USERS", "    List all the registered usernames.",
            "WHOAMI", "    Return the current connection username.",
            "HELP", "    Prints this help.",
            NULL};
        px_reply_help(c, "ACL", help);
    } else {
        resp_add_errorf(o, "ERR unknown subcommand '%.*s'. Try ACL HELP.", (int)(sub->len > 128 ? 128 : sub->len), sub->ptr);
    }
#undef ARITY
}
