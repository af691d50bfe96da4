/* acl_rules.c — ACL rules: parsing ACL SETUSER's rules (on/off, passwords,
 * commands and categories, key and channel patterns, selectors, reset)
 * into a user, and describing a user back (ACL LIST, ACL GETUSER), with
 * Redis 7.0's texts. Private: acl_int.h. */
#include "acl_int.h"

/* ------------------------------------------------------------ rules */

enum { E_OK, E_NOENT, E_SYNTAX, E_ALLKEYS, E_ALLCHANNELS, E_NOPASS, E_HASH, E_NOMEM };
static const char *const err_text[] = {
    "OK",
    "Unknown command or category name in ACL",
    "Syntax error",
    "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. "
    "Try 'resetkeys' to start with an empty list of patterns",
    "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. "
    "Try 'resetchannels' to start with an empty list of channels",
    "The password you are trying to remove from the user does not exist",
    "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
    "Out of memory",
};

int acl_is(const char *op, size_t len, const char *lit) { return strlen(lit) == len && !strncasecmp(op, lit, len); }

/* One selector rule (keys, channels, commands). */
static int sel_rule(acl_sel *s, const char *op, size_t len) {
    if (acl_is(op, len, "allkeys") || (len == 2 && !memcmp(op, "~*", 2))) {
        s->flags |= SEL_ALLKEYS;
        acl_pats_free(&s->keys);
    } else if (acl_is(op, len, "resetkeys")) {
        s->flags &= ~SEL_ALLKEYS;
        acl_pats_free(&s->keys);
    } else if (acl_is(op, len, "allchannels") || (len == 2 && !memcmp(op, "&*", 2))) {
        s->flags |= SEL_ALLCHANNELS;
        acl_pats_free(&s->chans);
    } else if (acl_is(op, len, "resetchannels")) {
        s->flags &= ~SEL_ALLCHANNELS;
        acl_pats_free(&s->chans);
    } else if (acl_is(op, len, "allcommands") || acl_is(op, len, "+@all")) {
        memset(s->allowed, 0xff, sizeof s->allowed);
        s->flags |= SEL_FUTURE;
        acl_pats_free(&s->fargs);
    } else if (acl_is(op, len, "nocommands") || acl_is(op, len, "-@all")) {
        memset(s->allowed, 0, sizeof s->allowed);
        s->flags &= ~SEL_FUTURE;
        acl_pats_free(&s->fargs);
    } else if (op[0] == '~' || op[0] == '%') {
        int perm = 0;
        size_t i = 0;
        if (op[0] == '%') {
            for (i = 1; i < len && op[i] != '~'; i++) {
                if (op[i] == 'R' || op[i] == 'r') perm |= KEY_R;
                else if (op[i] == 'W' || op[i] == 'w') perm |= KEY_W;
                else return E_SYNTAX;
            }
            if (!perm || i == len) return E_SYNTAX;
        } else {
            perm = KEY_R | KEY_W;
        }
        if (s->flags & SEL_ALLKEYS) return E_ALLKEYS;
        const char *p = op + i + 1;
        size_t pl = len - i - 1;
        for (int k = 0; k < s->keys.n; k++)
            if (s->keys.v[k].len == pl && !memcmp(s->keys.v[k].s, p, pl)) { s->keys.v[k].perm |= perm; return E_OK; }
        if (acl_pats_add(&s->keys, p, pl, perm, 0)) return E_NOMEM;
    } else if (op[0] == '&') {
        if (s->flags & SEL_ALLCHANNELS) return E_ALLCHANNELS;
        for (int k = 0; k < s->chans.n; k++)
            if (s->chans.v[k].len == len - 1 && !memcmp(s->chans.v[k].s, op + 1, len - 1)) return E_OK;
        if (acl_pats_add(&s->chans, op + 1, len - 1, 0, 0)) return E_NOMEM;
    } else if ((op[0] == '+' || op[0] == '-') && len > 1) {
        int on = op[0] == '+';
        if (op[1] == '@') {
            int cat = fd_category_lookup(op + 2, len - 2);
            if (cat < 0) return E_NOENT;
            acl_set_category(s, cat, on);
            return E_OK;
        }
        const char *bar = memchr(op + 1, '|', len - 1);
        fd_command *cmd = fd_command_lookup(op + 1, bar ? (size_t)(bar - op - 1) : len - 1);
        if (!cmd || cmd->id == FD_CMD_COUNT) return E_NOENT;
        if (!bar) { acl_set_cmd(s, cmd->id, on); return E_OK; }
        const char *a = bar + 1;
        size_t al = len - (size_t)(a - op);
        if (memchr(a, '|', al)) return E_NOENT;
        if (!al) return E_SYNTAX;
        char low[128];
        if (al >= sizeof low) return E_SYNTAX;
        for (size_t k = 0; k < al; k++) low[k] = (char)((a[k] >= 'A' && a[k] <= 'Z') ? a[k] + 32 : a[k]);
        acl_set_farg(s, cmd->id, low, al, on ? 1 : -1);
    } else {
        return E_SYNTAX;
    }
    return E_OK;
}

static int is_hex64(const char *h, size_t len) {
    if (len != 64) return 0;
    for (size_t i = 0; i < len; i++)
        if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f'))) return 0;
    return 1;
}

int acl_add_hash(px_acl_user *u, const char *hex) {
    for (int i = 0; i < u->npw; i++)
        if (!memcmp(u->pw[i], hex, 64)) return E_OK;
    char (*v)[65] = realloc(u->pw, (size_t)(u->npw + 1) * sizeof *v);
    if (!v) return E_NOMEM;
    u->pw = v;
    memcpy(v[u->npw++], hex, 65);
    return E_OK;
}

static int del_hash(px_acl_user *u, const char *hex) {
    for (int i = 0; i < u->npw; i++)
        if (!memcmp(u->pw[i], hex, 64)) {
            memmove(&u->pw[i], &u->pw[i + 1], (size_t)(u->npw - i - 1) * sizeof u->pw[0]);
            u->npw--;
            return E_OK;
        }
    return E_NOPASS;
}

static void clear_selectors(px_acl_user *u) {
    for (int i = 1; i < u->nsel; i++) acl_sel_free(&u->sel[i]);
    u->nsel = 1;
}


/* "(rules...)": a new selector. */
static int add_selector(px_acl_user *u, const char *body, size_t len) {
    acl_sel s = {0};
    int st = E_OK;
    for (size_t i = 0; i < len && st == E_OK;) {
        while (i < len && body[i] == ' ') i++;
        size_t j = i;
        while (j < len && body[j] != ' ') j++;
        if (j > i) st = sel_rule(&s, body + i, j - i);
        i = j;
    }
    if (st != E_OK) { acl_sel_free(&s); return st; }
    acl_sel *v = realloc(u->sel, (size_t)(u->nsel + 1) * sizeof *v);
    if (!v) { acl_sel_free(&s); return E_NOMEM; }
    u->sel = v;
    v[u->nsel++] = s;
    return E_OK;
}

int acl_user_rule(px_acl_user *u, const char *op, size_t len) {
    if (!len) return E_OK;                       /* an empty rule does nothing */
    if (acl_is(op, len, "on")) u->on = 1;
    else if (acl_is(op, len, "off")) u->on = 0;
    else if (acl_is(op, len, "nopass")) { u->nopass = 1; u->npw = 0; }
    else if (acl_is(op, len, "resetpass")) { u->nopass = 0; u->npw = 0; }
    else if (acl_is(op, len, "skip-sanitize-payload")) u->sanitize = 2;
    else if (acl_is(op, len, "sanitize-payload")) u->sanitize = 1;
    else if (acl_is(op, len, "clearselectors")) clear_selectors(u);
    else if (acl_is(op, len, "reset")) {
        static const char *const steps[] = {"resetpass", "resetkeys", "resetchannels", "off", "sanitize-payload",
                                            "-@all", "clearselectors"};
        for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) acl_user_rule(u, steps[i], strlen(steps[i]));
    } else if (op[0] == '>' || op[0] == '<') {
        char hex[65];
        px_sha256_hex(op + 1, len - 1, hex);
        if (op[0] == '<') return del_hash(u, hex);
        u->nopass = 0;
        return acl_add_hash(u, hex);
    } else if (op[0] == '#' || op[0] == '!') {
        if (!is_hex64(op + 1, len - 1)) return E_HASH;
        char hex[65];
        memcpy(hex, op + 1, 64);
        hex[64] = '\0';
        if (op[0] == '!') return del_hash(u, hex);
        u->nopass = 0;
        return acl_add_hash(u, hex);
    } else if (op[0] == '(' && op[len - 1] == ')') {
        return add_selector(u, op + 1, len - 2);
    } else {
        return sel_rule(&u->sel[0], op, len);
    }
    return E_OK;
}

/* Rules given as separate arguments; "(" ... ")" spread over several are
 * joined with spaces, as Redis's ACLMergeSelectorArguments. Applied to a
 * copy: on an error the user is unchanged and err says why (Redis's text). */
int acl_apply_rules(px_acl_user *u, int n, const resp_arg *rules, char *err, size_t errlen) {
    for (int i = 0; i < n; i++) {
        const resp_arg *r = &rules[i];
        int st;
        if (r->len && r->ptr[0] == '(' && r->ptr[r->len - 1] != ')') {
            sbuf b = {0};
            int j = i;
            for (; j < n; j++) {
                if (j > i) acl_sb_add(&b, " ", 1);
                acl_sb_add(&b, rules[j].ptr, rules[j].len);
                if (rules[j].len && rules[j].ptr[rules[j].len - 1] == ')') break;
            }
            if (j == n) {
                snprintf(err, errlen, "ERR Unmatched parenthesis in acl selector starting at '%.*s'.", (int)r->len, r->ptr);
                free(b.p);
                return -1;
            }
            st = b.p ? acl_user_rule(u, b.p, b.len) : E_NOMEM;
            if (st != E_OK) snprintf(err, errlen, "ERR Error in ACL SETUSER modifier '%s': %s", b.p ? b.p : "", err_text[st]);
            free(b.p);
            i = j;
        } else {
            st = acl_user_rule(u, r->ptr, r->len);
            if (st != E_OK)
                snprintf(err, errlen, "ERR Error in ACL SETUSER modifier '%.*s': %s", (int)r->len, r->ptr, err_text[st]);
        }
        if (st != E_OK) return -1;
    }
    acl_user_refresh(u);
    return 0;
}

/* ------------------------------------------------------------ describe */

void acl_describe_keys(sbuf *b, const acl_sel *s) {
    if (s->flags & SEL_ALLKEYS) { acl_sb_str(b, "~* "); return; }
    for (int i = 0; i < s->keys.n; i++) {
        int p = s->keys.v[i].perm;
        acl_sb_str(b, p == (KEY_R | KEY_W) ? "~" : p == KEY_R ? "%R~" : "%W~");
        acl_sb_add(b, s->keys.v[i].s, s->keys.v[i].len);
        acl_sb_add(b, " ", 1);
    }
}

void acl_describe_channels(sbuf *b, const acl_sel *s, int with_reset) {
    if (s->flags & SEL_ALLCHANNELS) { acl_sb_str(b, "&* "); return; }
    if (with_reset) acl_sb_str(b, "resetchannels ");
    for (int i = 0; i < s->chans.n; i++) {
        acl_sb_add(b, "&", 1);
        acl_sb_add(b, s->chans.v[i].s, s->chans.v[i].len);
        acl_sb_add(b, " ", 1);
    }
}

/* Redis 7.0's reconstruction: +@all or -@all, the categories that fit
 * best one after another, then single commands (in the table's order) and
 * first arguments. */
void acl_describe_commands(sbuf *b, const acl_sel *s) {
    int additive = !(s->flags & SEL_FUTURE);
    acl_sel fake = {0}, temp = {0};
    acl_sb_str(b, additive ? "-@all " : "+@all ");
    if (!additive) memset(fake.allowed, 0xff, sizeof fake.allowed);
    memcpy(temp.allowed, s->allowed, sizeof temp.allowed);
    char applied[FD_CAT_COUNT] = {0};
    for (;;) {
        int best = -1;
        unsigned long mindiff = (unsigned long)-1, maxsame = 0;
        for (int k = 0; k < FD_CAT_COUNT; k++) {
            if (applied[k]) continue;
            unsigned long on = 0, off = 0;
            for (int id = 0; id < FD_CMD_COUNT; id++)
                if (fd_command_categories(fd_command_by_id(id)) >> k & 1) { if (acl_get_bit(&temp, id)) on++; else off++; }
            unsigned long diff = additive ? off : on, same = additive ? on : off;
            if (same > diff && (diff < mindiff || (diff == mindiff && same > maxsame))) { best = k; mindiff = diff; maxsame = same; }
        }
        if (best < 0) break;
        acl_set_category(&fake, best, additive);
        acl_set_category(&temp, best, !additive);
        acl_sb_str(b, additive ? "+@" : "-@");
        acl_sb_str(b, fd_category_name(best));
        acl_sb_add(b, " ", 1);
        applied[best] = 1;
    }
    for (int id = 0; id < FD_CMD_COUNT; id++) {
        int ub = acl_get_bit(s, id);
        if (ub != acl_get_bit(&fake, id)) {
            acl_sb_str(b, ub ? "+" : "-");
            acl_sb_str(b, fd_command_by_id(id)->name);
            acl_sb_add(b, " ", 1);
        }
        for (int i = 0; i < s->fargs.n; i++)
            if (s->fargs.v[i].id == id && (s->fargs.v[i].perm == 1 || s->fargs.v[i].perm == -1)) {
                acl_sb_str(b, s->fargs.v[i].perm > 0 ? "+" : "-");
                acl_sb_str(b, fd_command_by_id(id)->name);
                acl_sb_add(b, "|", 1);
                acl_sb_add(b, s->fargs.v[i].s, s->fargs.v[i].len);
                acl_sb_add(b, " ", 1);
            }
    }
    acl_sb_trim(b);
    acl_sel_free(&fake);                      /* the subcommand rules categories set */
    acl_sel_free(&temp);
}

static void describe_selector(sbuf *b, const acl_sel *s) {
    acl_describe_keys(b, s);
    acl_describe_channels(b, s, 1);
    acl_describe_commands(b, s);
}

/* ACL LIST's line (also the aclfile's). */
void acl_describe_user(sbuf *b, const px_acl_user *u) {
    acl_sb_str(b, "user ");
    acl_sb_add(b, u->name, u->namelen);
    acl_sb_str(b, u->on ? " on " : " off ");
    if (u->nopass) acl_sb_str(b, "nopass ");
    if (u->sanitize) acl_sb_str(b, u->sanitize == 2 ? "skip-sanitize-payload " : "sanitize-payload ");
    for (int i = 0; i < u->npw; i++) { acl_sb_add(b, "#", 1); acl_sb_str(b, u->pw[i]); acl_sb_add(b, " ", 1); }
    describe_selector(b, &u->sel[0]);
    for (int i = 1; i < u->nsel; i++) {
        acl_sb_str(b, " (");
        describe_selector(b, &u->sel[i]);
        acl_sb_add(b, ")", 1);
    }
}
