/* acl.c — Redis 7.0's ACL users, rules and the ACL command (acl.h). Rules,
 * texts and reply shapes are Redis 7.0's (src/acl.c), written anew.
 * Files: this one (state, the check, hooks), acl_rules.c, acl_cmd.c; what
 * they share is acl_int.h. */
#include "acl_int.h"

/* The users, sorted by name (ACL USERS/LIST order). Bounded by memory
 * only, as Redis: each is created by an administrator's command. */
px_acl_user **acl_users;
int acl_nusers, acl_ucap;
px_acl_user *acl_default_user;

/* ------------------------------------------------------------ helpers */


void acl_sb_add(sbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return;                  /* out of memory: truncated text */
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}
void acl_sb_str(sbuf *b, const char *s) { acl_sb_add(b, s, strlen(s)); }
void acl_sb_trim(sbuf *b) { if (b->len && b->p[b->len - 1] == ' ') b->p[--b->len] = '\0'; }

char *acl_dupn(const char *s, size_t n) {
    char *p = malloc(n + 1);
    if (p) { memcpy(p, s, n); p[n] = '\0'; }
    return p;
}

void acl_pats_free(acl_pats *ps) {
    for (int i = 0; i < ps->n; i++) free(ps->v[i].s);
    free(ps->v);
    ps->v = NULL;
    ps->n = 0;
}

int acl_pats_add(acl_pats *ps, const char *s, size_t len, int perm, int id) {
    acl_pat *v = realloc(ps->v, (size_t)(ps->n + 1) * sizeof *v);
    if (!v) return -1;
    ps->v = v;
    if (!(v[ps->n].s = acl_dupn(s, len))) return -1;
    v[ps->n].len = len;
    v[ps->n].perm = perm;
    v[ps->n].id = id;
    size_t lit = 0;
    while (lit < len && !strchr("*?[\\", s[lit])) lit++;
    v[ps->n].lit = lit;
    v[ps->n].star_tail = lit + 1 == len && s[lit] == '*';
    unsigned char b[8] = {0}, m[8] = {0};
    for (size_t i = 0; i < lit && i < 8; i++) { b[i] = (unsigned char)s[i]; m[i] = 0xff; }
    memcpy(&v[ps->n].pre8, b, 8);
    memcpy(&v[ps->n].mask8, m, 8);
    ps->n++;
    return 0;
}

/* Does name match p? The literal prefix first (most patterns reject
 * there); "prefix*" needs nothing more. */
__attribute__((always_inline)) static inline int pat_match(const acl_pat *p, const char *name, size_t len) {
    if (len < p->lit) return 0;
    size_t i = 0;
    if (len >= 8) {                       /* the first 8 bytes of the prefix in one compare */
        uint64_t w;
        memcpy(&w, name, 8);
        if ((w & p->mask8) != p->pre8) return 0;
        i = 8;
    }
    for (; i < p->lit; i++)               /* short names, long prefixes: no call */
        if (p->s[i] != name[i]) return 0;
    if (p->star_tail) return 1;
    if (p->lit == p->len) return len == p->len;
    return resp_glob_match(p->s, p->len, name, len, 0);
}

static void pats_del(acl_pats *ps, int i) {
    free(ps->v[i].s);
    memmove(&ps->v[i], &ps->v[i + 1], (size_t)(ps->n - i - 1) * sizeof ps->v[0]);
    ps->n--;
}

static int pats_copy(acl_pats *d, const acl_pats *s) {
    d->v = NULL;
    d->n = 0;
    for (int i = 0; i < s->n; i++)
        if (acl_pats_add(d, s->v[i].s, s->v[i].len, s->v[i].perm, s->v[i].id)) return -1;
    return 0;
}

void acl_sel_free(acl_sel *s) {
    acl_pats_free(&s->keys); acl_pats_free(&s->chans); acl_pats_free(&s->fargs);
    free(s->kidx);
    s->kidx = NULL;
    free(s->fpat);
    s->fpat = NULL;
}

/* Build the first-byte index of the key patterns (after any change). */
static void sel_index(acl_sel *s) {
    free(s->kidx);
    s->kidx = s->keys.n ? malloc((size_t)s->keys.n * sizeof *s->kidx) : NULL;
    memset(s->kstart, 0, sizeof s->kstart);
    if (!s->kidx) return;                 /* none, or out of memory: key_ok scans them all */
    int count[257] = {0};
    for (int i = 0; i < s->keys.n; i++) count[s->keys.v[i].lit ? (unsigned char)s->keys.v[i].s[0] : 256]++;
    int at = 0;
    for (int b = 0; b < 257; b++) { s->kstart[b] = at; at += count[b]; }
    int fill[257];
    memcpy(fill, s->kstart, sizeof fill);
    for (int i = 0; i < s->keys.n; i++) s->kidx[fill[s->keys.v[i].lit ? (unsigned char)s->keys.v[i].s[0] : 256]++] = s->keys.v[i];
}

static int sel_copy(acl_sel *d, const acl_sel *s) {
    *d = *s;
    d->kidx = NULL;                       /* rebuilt by user_refresh */
    d->fpat = NULL;
    return pats_copy(&d->keys, &s->keys) | pats_copy(&d->chans, &s->chans) | pats_copy(&d->fargs, &s->fargs);
}

int acl_get_bit(const acl_sel *s, int id) { return (s->allowed[(unsigned)id / 64] >> ((unsigned)id % 64)) & 1; }

/* Allow or refuse one command: its first-argument rules go (Redis's
 * ACLChangeSelectorPerm). */
void acl_set_cmd(acl_sel *s, int id, int on) {
    if (on) s->allowed[id / 64] |= 1ull << (id % 64);
    else s->allowed[id / 64] &= ~(1ull << (id % 64));
    for (int i = s->fargs.n - 1; i >= 0; i--)
        if (s->fargs.v[i].id == id) pats_del(&s->fargs, i);
}

static int all_commands(const acl_sel *s) {
    for (int id = 0; id < FD_CMD_COUNT; id++)
        if (!acl_get_bit(s, id)) return 0;
    return 1;
}

void acl_set_farg(acl_sel *s, int id, const char *a, size_t al, int perm) {
    for (int k = s->fargs.n - 1; k >= 0; k--)   /* an earlier rule for this argument goes */
        if (s->fargs.v[k].id == id && s->fargs.v[k].len == al && !strncasecmp(s->fargs.v[k].s, a, al))
            pats_del(&s->fargs, k);
    if (acl_get_bit(s, id) != (perm > 0)) acl_pats_add(&s->fargs, a, al, perm, id);   /* else the bit says it */
}

void acl_set_category(acl_sel *s, int cat, int on) {
    for (int id = 0; id < FD_CMD_COUNT; id++)
        if (fd_command_categories(fd_command_by_id(id)) >> cat & 1) acl_set_cmd(s, id, on);
    int id;
    const char *sub;
    uint32_t cats;
    for (int i = 0; fd_subcommand_categories(i, &id, &sub, &cats); i++)
        if (cats >> cat & 1) acl_set_farg(s, id, sub, strlen(sub), on ? 2 : -2);
}

static void sel_fast(acl_sel *s);

void acl_user_refresh(px_acl_user *u) {
    for (int i = 0; i < u->nsel; i++) { sel_index(&u->sel[i]); sel_fast(&u->sel[i]); }
    acl_sel *r = &u->sel[0];
    u->unrestricted = (r->flags & SEL_ALLKEYS) && (r->flags & SEL_ALLCHANNELS) && all_commands(r) && !r->fargs.n;
    u->one_sel = u->nsel == 1;
}

void acl_user_free(px_acl_user *u) {
    if (!u) return;
    for (int i = 0; i < u->nsel; i++) acl_sel_free(&u->sel[i]);
    free(u->sel);
    free(u->pw);
    free(u->name);
    free(u);
}

px_acl_user *acl_user_new(const char *name, size_t len) {
    px_acl_user *u = calloc(1, sizeof *u);
    if (!u || !(u->name = acl_dupn(name, len)) || !(u->sel = calloc(1, sizeof *u->sel))) { acl_user_free(u); return NULL; }
    u->namelen = len;
    u->nsel = 1;
    return u;
}

px_acl_user *acl_user_dup(const px_acl_user *s) {
    px_acl_user *u = calloc(1, sizeof *u);
    if (!u) return NULL;
    *u = *s;
    u->name = acl_dupn(s->name, s->namelen);
    u->pw = s->npw ? malloc((size_t)s->npw * sizeof *u->pw) : NULL;
    if (u->pw) memcpy(u->pw, s->pw, (size_t)s->npw * sizeof *u->pw);
    u->sel = calloc((size_t)s->nsel, sizeof *u->sel);
    int bad = !u->name || (s->npw && !u->pw) || !u->sel;
    u->nsel = 0;
    for (int i = 0; !bad && i < s->nsel; i++, u->nsel++) bad = sel_copy(&u->sel[i], &s->sel[i]);
    if (bad) { acl_user_free(u); return NULL; }
    return u;
}


int acl_find_user(const char *name, size_t len, int *at) {
    int lo = 0, hi = acl_nusers;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        size_t ml = acl_users[mid]->namelen;
        int c = memcmp(acl_users[mid]->name, name, ml < len ? ml : len);
        if (!c) c = ml < len ? -1 : ml > len;
        if (!c) { if (at) *at = mid; return 1; }
        if (c < 0) lo = mid + 1; else hi = mid;
    }
    if (at) *at = lo;
    return 0;
}

px_acl_user *px_acl_lookup(const char *name, size_t len) { px_acl_init(); return acl_lookup(name, len); }

px_acl_user *acl_lookup(const char *name, size_t len) {
    int at;
    return acl_find_user(name, len, &at) ? acl_users[at] : NULL;
}

int acl_insert_user(px_acl_user *u) {
    int at;
    acl_find_user(u->name, u->namelen, &at);
    if (acl_nusers == acl_ucap) {
        int cap = acl_ucap ? acl_ucap * 2 : 8;
        px_acl_user **v = realloc(acl_users, (size_t)cap * sizeof *v);
        if (!v) return -1;
        acl_users = v;
        acl_ucap = cap;
    }
    memmove(&acl_users[at + 1], &acl_users[at], (size_t)(acl_nusers - at) * sizeof *acl_users);
    acl_users[at] = u;
    acl_nusers++;
    return 0;
}

/* A user's clients are disconnected (deleted, or its rules changed) as
 * Redis: the current client after its reply, the others now. */
void acl_kill_clients(px_acl_user *u, px_conn *current) {
    for (px_conn *x = px_srv.clients; x; x = x->next) {
        if (x->user != u) continue;
        x->user = NULL;                  /* the default user, not authenticated */
        x->authed = 0;
        x->flags |= PX_CONN_CLOSE_AFTER_REPLY;   /* as CLIENT KILL: after what it is owed */
        if (x->blk || x != current) x->flags |= PX_CONN_CLOSE_ASAP;
        ev_io_stop(px_srv.loop, &x->rio);
        px_conn_touch(x);
    }
}

/* ------------------------------------------------------------ check */

/* Does a pattern of s with (at least) need match key k? The patterns whose
 * prefix starts with the key's first byte, then those that start with a
 * glob character (sel_index); without the index (out of memory) all. */
__attribute__((always_inline)) static inline int key_ok(const acl_sel *s, const resp_arg *k, int need) {
    if (__builtin_expect(!s->kidx, 0)) {
        for (int i = 0; i < s->keys.n; i++) {
            const acl_pat *p = &s->keys.v[i];
            if ((p->perm & need) == need && pat_match(p, k->ptr, k->len)) return 1;
        }
        return 0;
    }
    if (k->len) {
        int b = (unsigned char)k->ptr[0];
        for (int j = s->kstart[b], end = s->kstart[b + 1]; j < end; j++) {
            const acl_pat *p = &s->kidx[j];
            if ((p->perm & need) == need && pat_match(p, k->ptr, k->len)) return 1;
        }
    }
    for (int j = s->kstart[256]; j < s->keys.n; j++) {
        const acl_pat *p = &s->kidx[j];
        if ((p->perm & need) == need && pat_match(p, k->ptr, k->len)) return 1;
    }
    return 0;
}

int acl_chan_ok(const acl_sel *s, const resp_arg *ch, int literal) {
    for (int i = 0; i < s->chans.n; i++) {
        const acl_pat *p = &s->chans.v[i];
        if (literal ? (p->len == ch->len && !memcmp(p->s, ch->ptr, ch->len))
                    : pat_match(p, ch->ptr, ch->len)) return 1;
    }
    return 0;
}

/* What the check needs of each command, computed once from the table. */
typedef struct acl_cmdinfo {
    unsigned char need1;     /* KEY_R / KEY_W of its first key (fd_command_key_need) */
    unsigned char need;      /* of its other keys */
    unsigned char chan;      /* 0, or 'p' PUBLISH/SPUBLISH, 's' (S)SUBSCRIBE, 'P' PSUBSCRIBE, 'u' SUNSUBSCRIBE */
    unsigned char varneed;   /* its arguments past argv[varneed - 1] may change its first key's need:
                              * special_need (SET 3, BITFIELD 1; 0 never) */
    unsigned char kwkeys;    /* keys at a keyword: keyword_keys (SORT, GEORADIUS...) */
    unsigned char simple;    /* one fixed key and nothing else to check: px_acl_check's fast path */
    short         one_key;   /* the position of its only key (fixed), or 0: fd_command_keys */
} acl_cmdinfo;
static acl_cmdinfo cmdinfo[FD_CMD_COUNT];

void acl_cmdinfo_init(void) {
    for (int id = 0; id < FD_CMD_COUNT; id++) {
        const fd_command *c = fd_command_by_id(id);
        acl_cmdinfo *ci = &cmdinfo[id];
        ci->need1 = (unsigned char)fd_command_key_need(c, 1);
        ci->need = (unsigned char)fd_command_key_need(c, 0);
        ci->chan = (id == FD_CMD_publish || id == FD_CMD_spublish) ? 'p'
                 : (id == FD_CMD_subscribe || id == FD_CMD_ssubscribe) ? 's'
                 : id == FD_CMD_psubscribe ? 'P' : id == FD_CMD_sunsubscribe ? 'u' : 0;
        ci->varneed = id == FD_CMD_set ? 3 : id == FD_CMD_bitfield ? 1 : 0;
        ci->kwkeys = id == FD_CMD_sort || id == FD_CMD_georadius || id == FD_CMD_georadiusbymember;
        if (c->first_key > 0 && c->last_key == c->first_key &&
            !(c->flags & (FD_CMD_NUMKEYS1 | FD_CMD_NUMKEYS2 | FD_CMD_STREAMKEYS)))
            ci->one_key = (short)c->first_key;
        ci->simple = ci->one_key && !ci->kwkeys && !ci->chan && !(c->flags & FD_CMD_NOAUTH) && id != FD_CMD_sort_ro;
    }
}

/* Redis 7.0's variable key flags (commands.def's header): the first key's
 * need as the arguments make it — SET with a GET argument: RW (setGetKeys);
 * BITFIELD with only GET and OVERFLOW: R (bitfieldGetKeys) — else the
 * table's (need). */
static inline int special_need(int id, int argc, const resp_arg *argv, int need) {
    if (id == FD_CMD_set) {
        for (int i = 3; i < argc; i++)
            if (resp_arg_is(&argv[i], "GET")) return KEY_R | KEY_W;
    } else if (id == FD_CMD_bitfield) {
        for (int i = 2; i < argc; i++) {
            int left = argc - i - 1;
            if (resp_arg_is(&argv[i], "GET") && left >= 2) i += 2;
            else if (resp_arg_is(&argv[i], "OVERFLOW") && left >= 1) i += 1;
            else return need;             /* SET, INCRBY or an error: the table's RW */
        }
        return KEY_R;
    }
    return need;
}

/* Redis 7.0's keys found at a keyword, each needing W: SORT's destination
 * (the last STORE, as sortGetKeys reads the options), GEORADIUS's and
 * GEORADIUSBYMEMBER's STORE and STOREDIST (the first of each from argv[6],
 * argv[5] for BYMEMBER: their key specs). Their positions in pos; the count (at most 2). */
static int keyword_keys(int id, int argc, const resp_arg *argv, int pos[2]) {
    int n = 0;
    if (id == FD_CMD_sort) {
        for (int i = 2; i < argc; i++) {
            if (resp_arg_is(&argv[i], "LIMIT")) i += 2;
            else if (resp_arg_is(&argv[i], "GET") || resp_arg_is(&argv[i], "BY")) i += 1;
            else if (resp_arg_is(&argv[i], "STORE") && i + 1 < argc) { pos[0] = i + 1; n = 1; }
        }
    } else if (id == FD_CMD_georadius || id == FD_CMD_georadiusbymember) {
        static const char *const kw[2] = {"STORE", "STOREDIST"};
        int from = id == FD_CMD_georadius ? 6 : 5;   /* after the fixed arguments */
        for (int k = 0; k < 2; k++)
            for (int i = from; i < argc - 1; i++)
                if (resp_arg_is(&argv[i], kw[k])) { pos[n++] = i + 1; break; }
    }
    return n;
}

static int sel_check(const acl_sel *s, fd_command *cmd, int argc, resp_arg *argv, int *errpos) {
    int id = cmd->id, ok = acl_get_bit(s, id);
    for (int i = 0; i < s->fargs.n; i++) {   /* usually none */
        const acl_pat *p = &s->fargs.v[i];
        if (p->id == id && argc > 1 && p->len == argv[1].len && !strncasecmp(p->s, argv[1].ptr, p->len)) ok = p->perm > 0;
    }
    if (!ok) { *errpos = 0; return PX_ACL_DENIED_CMD; }
    const acl_cmdinfo *ci = &cmdinfo[id];
    if (!(s->flags & SEL_ALLKEYS) && !ci->chan) {
        int need1 = ci->varneed && argc > ci->varneed ? special_need(id, argc, argv, ci->need1) : ci->need1;
        if (ci->one_key) {                                   /* most commands: one key, no list */
            if (ci->one_key < argc && !key_ok(s, &argv[ci->one_key], need1)) { *errpos = ci->one_key; return PX_ACL_DENIED_KEY; }
        } else {
            int small[64], *pos = small;
            int n = fd_command_keys(cmd, argc, argv, pos, 64);
            if (n == 64 && argc > 64) {
                if (!(pos = malloc((size_t)argc * sizeof *pos))) { *errpos = 0; return PX_ACL_DENIED_KEY; }   /* fail closed */
                n = fd_command_keys(cmd, argc, argv, pos, argc);
            }
            int denied = 0;
            for (int i = 0; i < n && !denied; i++)
                if (!key_ok(s, &argv[pos[i]], i ? ci->need : need1)) { *errpos = pos[i]; denied = 1; }
            if (pos != small) free(pos);
            if (denied) return PX_ACL_DENIED_KEY;
        }
        if (ci->kwkeys) {
            int kp[2], n = keyword_keys(id, argc, argv, kp);
            for (int i = 0; i < n; i++)
                if (!key_ok(s, &argv[kp[i]], KEY_W)) { *errpos = kp[i]; return PX_ACL_DENIED_KEY; }
        }
    }
    if (!(s->flags & SEL_ALLCHANNELS) && ci->chan && ci->chan != 'u') {
        int last = ci->chan == 'p' ? 1 : argc - 1;
        for (int i = 1; i <= last && i < argc; i++)
            if (!acl_chan_ok(s, &argv[i], ci->chan == 'P')) { *errpos = i; return PX_ACL_DENIED_CHANNEL; }
    }
    return PX_ACL_OK;
}

/* Can s read every key (allkeys, or a "*" pattern with R)? */
static int full_read(const acl_sel *s) {
    if (s->flags & SEL_ALLKEYS) return 1;
    for (int i = 0; i < s->keys.n; i++)
        if (s->keys.v[i].len == 1 && s->keys.v[i].s[0] == '*' && (s->keys.v[i].perm & KEY_R)) return 1;
    return 0;
}

/* SORT's first BY <pattern with *> or GET, as Redis's parser meets them
 * (LIMIT takes 2, STORE 1); 0 if none. */
static int sort_needs_all_keys(int argc, resp_arg *argv, int *errpos) {
    for (int j = 2; j < argc; j++) {
        int left = argc - j - 1;
        if (resp_arg_is(&argv[j], "LIMIT") && left >= 2) j += 2;
        else if (resp_arg_is(&argv[j], "STORE") && left >= 1) j++;
        else if (resp_arg_is(&argv[j], "BY") && left >= 1) {
            if (memchr(argv[j + 1].ptr, '*', argv[j + 1].len)) { *errpos = j; return PX_ACL_DENIED_SORT_BY; }
            j++;
        } else if (resp_arg_is(&argv[j], "GET") && left >= 1) { *errpos = j; return PX_ACL_DENIED_SORT_GET; }
    }
    return 0;
}

/* The whole check (px_acl_check's slow path, out of line: the fast path
 * stays small). */
__attribute__((noinline)) int acl_user_check(const px_acl_user *u, fd_command *cmd, int argc, resp_arg *argv,
                                               int *errpos) {
    if (u->unrestricted) return PX_ACL_OK;
    if (!cmd) {                           /* unknown to the table (a Redis backend's) */
        if (errpos) *errpos = 0;
        for (int i = 0; i < u->nsel; i++) {
            int f = u->sel[i].flags;
            if ((f & SEL_FUTURE) && (f & SEL_ALLKEYS) && (f & SEL_ALLCHANNELS)) return PX_ACL_OK;
        }
        return PX_ACL_DENIED_CMD;
    }
    if (cmd->flags & FD_CMD_NOAUTH) return PX_ACL_OK;
    if (u->nsel == 1 && cmd->id != FD_CMD_sort && cmd->id != FD_CMD_sort_ro) {   /* the usual case */
        int pos = 0, r = sel_check(&u->sel[0], cmd, argc, argv, &pos);
        if (errpos) *errpos = pos;
        return r;
    }
    int relevant = PX_ACL_DENIED_CMD, last = 0;
    if (cmd->id == FD_CMD_sort || cmd->id == FD_CMD_sort_ro) {
        int pos = 0, sortr = sort_needs_all_keys(argc, argv, &pos), any = 0;
        for (int i = 0; sortr && i < u->nsel; i++) {
            int p2 = 0;
            if (sel_check(&u->sel[i], cmd, argc, argv, &p2) != PX_ACL_OK) continue;
            any = 1;
            if (full_read(&u->sel[i])) return PX_ACL_OK;
        }
        if (any) {                        /* allowed, but not the patterns */
            if (errpos) *errpos = pos;
            return sortr;
        }
    }
    for (int i = 0; i < u->nsel; i++) {
        int pos = 0, r = sel_check(&u->sel[i], cmd, argc, argv, &pos);
        if (r == PX_ACL_OK) return PX_ACL_OK;
        if (r > relevant || (r == relevant && pos > last)) { relevant = r; last = pos; }
    }
    if (errpos) *errpos = last;
    return relevant;
}

static void sel_fast(acl_sel *s) {
    free(s->fpat);
    s->fpat = NULL;
    memset(s->fstart, 0, sizeof s->fstart);
    memset(s->fastcmd, 0, sizeof s->fastcmd);
    if (!s->kidx && s->keys.n) return;    /* out of memory: the slow path for all */
    for (int id = 0; id < FD_CMD_COUNT; id++)
        if (cmdinfo[id].simple && acl_get_bit(s, id)) s->fastcmd[id / 64] |= 1ull << (id % 64);
    for (int i = 0; i < s->fargs.n; i++)  /* a command with first-argument rules: the full check */
        s->fastcmd[s->fargs.v[i].id / 64] &= ~(1ull << (s->fargs.v[i].id % 64));
    int n = 0;
    for (int i = 0; i < s->kstart[256]; i++) {
        const acl_pat *p = &s->kidx[i];
        n += p->lit <= 8 && (p->star_tail || p->lit == p->len);
    }
    if (n && !(s->fpat = malloc((size_t)n * sizeof *s->fpat))) { memset(s->fastcmd, 0, sizeof s->fastcmd); return; }
    int at = 0;
    for (int b = 0; b < 256; b++) {
        s->fstart[b] = at;
        for (int i = s->kstart[b]; i < s->kstart[b + 1]; i++) {
            const acl_pat *p = &s->kidx[i];
            if (p->lit > 8 || !(p->star_tail || p->lit == p->len)) continue;
            s->fpat[at++] = (acl_fastpat){p->pre8, p->mask8, (uint32_t)p->lit, (uint8_t)p->perm, (uint8_t)p->star_tail};
        }
    }
    s->fstart[256] = at;
}

/* The usual case of a restricted user, decided without user_check and
 * without a call: one selector, a command it may decide (sel_fast:
 * allowed, no first-argument rules, one fixed key, nothing else to check;
 * not SET ... GET's variable need), its key matched by a "prefix*" or
 * literal pattern of at most 8 bytes. 1: allowed; 0: ask user_check
 * (which also says why and where a refusal is). */
__attribute__((always_inline)) static inline int fast_allowed(const px_acl_user *u, const fd_command *cmd, int argc,
                                                              resp_arg *argv) {
    if (!u->one_sel || !cmd) return 0;
    const acl_sel *r = u->sel;
    unsigned id = (unsigned)cmd->id;
    if (!((r->fastcmd[id / 64] >> (id % 64)) & 1)) return 0;
    const acl_cmdinfo *ci = &cmdinfo[id];
    if (ci->one_key >= argc || (ci->varneed && argc > ci->varneed)) return 0;
    if (r->flags & SEL_ALLKEYS) return 1;
    const resp_arg *k = &argv[ci->one_key];
    if (!k->len) return 0;
    uint64_t w;
    if (k->len >= 8) {
        memcpy(&w, k->ptr, 8);
    } else {                              /* as pre: the bytes in memory order, zeros after */
        unsigned char kb[8] = {0};
        for (size_t i = 0; i < k->len; i++) kb[i] = (unsigned char)k->ptr[i];
        memcpy(&w, kb, 8);
    }
    unsigned b = (unsigned char)k->ptr[0];
    int need = ci->need1;
    for (const acl_fastpat *p = r->fpat + r->fstart[b], *end = r->fpat + r->fstart[b + 1]; p < end; p++)
        if ((p->perm & need) == need && (w & p->mask) == p->pre && k->len >= p->lit && (p->star || k->len == p->lit))
            return 1;
    return 0;
}

int px_acl_check(px_conn *c, fd_command *cmd, int argc, resp_arg *argv, int *errpos) {
    const px_acl_user *u = c->user ? c->user : acl_default_user;
    if (!u || u->unrestricted) return PX_ACL_OK;        /* the hot path: one flag */
    if (fast_allowed(u, cmd, argc, argv)) return PX_ACL_OK;
    return acl_user_check(u, cmd, argc, argv, errpos);
}

int px_acl_restricted(const px_conn *c) {
    const px_acl_user *u = c->user ? c->user : acl_default_user;
    return u && !u->unrestricted;
}

/* The command's name as Redis reports it: "config|get" for a container;
 * a command the table does not know by its name, in lower case. */
static void full_name(char *buf, size_t len, fd_command *cmd, int argc, resp_arg *argv) {
    if (!cmd) {
        int n = snprintf(buf, len, "%.*s", (int)(argv[0].len > 64 ? 64 : argv[0].len), argv[0].ptr);
        for (int i = 0; i < n && (size_t)i < len; i++)
            if (buf[i] >= 'A' && buf[i] <= 'Z') buf[i] += 32;
    } else if ((cmd->flags & FD_CMD_CONTAINER) && argc > 1) {
        int n = snprintf(buf, len, "%s|%.*s", cmd->name, (int)(argv[1].len > 64 ? 64 : argv[1].len), argv[1].ptr);
        for (int i = (int)cmd->namelen; i < n && (size_t)i < len; i++)
            if (buf[i] >= 'A' && buf[i] <= 'Z') buf[i] += 32;
    } else {
        snprintf(buf, len, "%s", cmd->name);
    }
}

void acl_denied_text(char *buf, size_t len, int reason, fd_command *cmd, int argc, resp_arg *argv) {
    char name[128];
    full_name(name, sizeof name, cmd, argc, argv);
    if (reason == PX_ACL_DENIED_KEY) snprintf(buf, len, "this user has no permissions to access one of the keys used as arguments");
    else if (reason == PX_ACL_DENIED_CHANNEL) snprintf(buf, len, "this user has no permissions to access one of the channels used as arguments");
    else snprintf(buf, len, "this user has no permissions to run the '%s' command", name);
}

static int sort_denied(resp_out *o, int reason) {
    if (reason != PX_ACL_DENIED_SORT_BY && reason != PX_ACL_DENIED_SORT_GET) return 0;
    resp_add_errorf(o, "ERR %s option of SORT denied due to insufficient ACL permissions.",
                    reason == PX_ACL_DENIED_SORT_BY ? "BY" : "GET");
    return 1;
}

void px_acl_reply_denied(px_conn *c, resp_out *o, int reason, fd_command *cmd, int argc, resp_arg *argv, int errpos) {
    if (sort_denied(o, reason)) return;
    acl_log_denied(c, reason, c && c->multi ? LOG_CTX_MULTI : LOG_CTX_TOPLEVEL, cmd, argc, argv, errpos);
    char text[256];
    acl_denied_text(text, sizeof text, reason, cmd, argc, argv);
    resp_add_errorf(o, "NOPERM %s", text);
}

int px_acl_exec_check(px_conn *c, resp_out *o, fd_command *cmd, int argc, resp_arg *argv) {
    int pos = 0, why = px_acl_check(c, cmd, argc, argv, &pos);
    if (why == PX_ACL_OK || sort_denied(o, why)) return why;
    acl_log_denied(c, why, LOG_CTX_MULTI, cmd, argc, argv, pos);
    resp_add_errorf(o, "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC "
                       "call. This command is no longer allowed for the following reason: %s",
                    why == PX_ACL_DENIED_CMD ? "no permission to execute the command or subcommand"
                    : why == PX_ACL_DENIED_KEY ? "no permission to touch the specified keys"
                    : "no permission to access one of the channels used as arguments");
    return why;
}

void acl_log_denied(px_conn *c, int reason, int context, fd_command *cmd, int argc, resp_arg *argv, int errpos) {
    const char *user = px_acl_username(c ? c->user : NULL);
    if (reason == PX_ACL_DENIED_CMD) {
        char name[128];
        full_name(name, sizeof name, cmd, argc, argv);
        acl_log_add(c, reason, context, name, strlen(name), user, strlen(user));
    } else {
        acl_log_add(c, reason, context, argv[errpos].ptr, argv[errpos].len, user, strlen(user));
    }
}

void px_acl_reply_script(px_conn *c, resp_out *o, int reason, fd_command *cmd, int argc, resp_arg *argv, int errpos) {
    if (sort_denied(o, reason)) return;
    acl_log_denied(c, reason, LOG_CTX_LUA, cmd, argc, argv, errpos);
    resp_add_error(o, reason == PX_ACL_DENIED_KEY ? "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments"
                    : reason == PX_ACL_DENIED_CHANNEL ? "ERR The user executing the script can't publish to the channel mentioned in the command"
                    : "ERR The user executing the script can't run this command or subcommand");
}

/* ------------------------------------------------------------ hook (hooks.h) */

/* The permission check, a gate at "checked": after the core's own checks
 * (known, arity, authenticated), before the RESP2 pub/sub-mode denial and
 * the MULTI queue, as Redis 7.0's processCommand orders them. A refusal
 * inside MULTI flags the transaction (EXECABORT), as Redis's rejectCommand. */
__attribute__((noinline)) static int acl_checked_slow(px_conn *c, const px_acl_user *u, fd_command *cmd, int argc,
                                                     resp_arg *argv) {
    int pos = 0, why = acl_user_check(u, cmd, argc, argv, &pos);
    if (why == PX_ACL_OK) return PX_HOOK_PASS;
    /* SORT's BY/GET are refused when SORT runs (Redis's sortCommand): in
     * MULTI it is queued and EXEC's check answers its slot */
    if (c->multi && (why == PX_ACL_DENIED_SORT_BY || why == PX_ACL_DENIED_SORT_GET)) return PX_HOOK_PASS;
    px_acl_reply_denied(c, &c->out, why, cmd, argc, argv, pos);
    px_multi_flag_error(c);
    return PX_HOOK_REFUSED;
}

static int acl_checked(px_conn *c, fd_command *cmd, int argc, resp_arg *argv, const char *raw, size_t rawlen) {
    (void)raw; (void)rawlen;
    const px_acl_user *u = c->user ? c->user : acl_default_user;
    if (__builtin_expect(!u || u->unrestricted, 1)) return PX_HOOK_PASS;   /* one flag */
    if (fast_allowed(u, cmd, argc, argv)) return PX_HOOK_PASS;
    return acl_checked_slow(c, u, cmd, argc, argv);
}

/* A new connection starts authenticated as the default user when that user
 * is on and needs no password (Redis 7.0: authRequired). */
static void acl_opened(px_conn *c) { c->authed = px_acl_default_noauth(); }

void px_acl_hooks(void) {
    PX_HOOK_ADD(checked, acl_checked);
    PX_HOOK_ADD(opened, acl_opened);
}
