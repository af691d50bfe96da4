/* acl.c — Redis 7.0's ACL users, rules and the ACL command (acl.h). Rules,
 * texts and reply shapes are Redis 7.0's (src/acl.c), written anew. */
#include "acl.h"
#include "sha256.h"
#include "builtin.h"
#include "pubsub.h"
#include "log.h"
#include "config.h"
#include "multi.h"
#include "hooks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#define WORDS ((FD_CMD_COUNT + 63) / 64)
enum { KEY_R = 1, KEY_W = 2 };
enum { SEL_ALLKEYS = 1, SEL_ALLCHANNELS = 2, SEL_FUTURE = 4 };

/* A pattern (keys: perm KEY_R|KEY_W; first arguments: perm = +1 allowed
 * while the command is not, -1 refused while it is; +2/-2 the same set by
 * a category for a subcommand whose categories are not its container's
 * (fd_subcommand_categories), which descriptions leave out; .id its
 * command). */
typedef struct acl_pat {
    char  *s;
    size_t len;
    int    perm, id;
    size_t lit;             /* bytes before the first glob character */
    int    star_tail;       /* the pattern is those bytes and one '*' */
    uint64_t pre8, mask8;   /* its first min(lit, 8) bytes as a word, and their mask (pat_match) */
} acl_pat;
typedef struct acl_pats { acl_pat *v; int n; } acl_pats;

typedef struct acl_sel {
    int      flags;
    uint64_t allowed[WORDS];
    acl_pats keys, chans, fargs;
    /* the key patterns by the first byte of their literal prefix: those of
     * byte b are kidx[kstart[b] .. kstart[b + 1]), those that begin with a
     * glob character kidx[kstart[256] .. keys.n) (built by sel_index;
     * copies of keys.v's entries, sharing their strings) */
    acl_pat *kidx;
    int      kstart[257];
    /* fast_allowed's: the commands it may decide (allowed, one fixed key,
     * nothing else to check), and the "prefix*" or literal patterns of at
     * most 8 bytes of prefix by their first byte, fpat[fstart[b] ..
     * fstart[b + 1]) (built by sel_fast) */
    uint64_t fastcmd[WORDS];
    struct acl_fastpat *fpat;
    int      fstart[257];
} acl_sel;

/* A pattern as fast_allowed tests it: the key's first 8 bytes (zero past its
 * end) masked equal pre, then the length. */
typedef struct acl_fastpat {
    uint64_t pre, mask;
    uint32_t lit;           /* the prefix's length (1..8) */
    uint8_t  perm, star;    /* KEY_R|KEY_W; 1: "prefix*", 0: the literal itself */
} acl_fastpat;

struct px_acl_user {
    char    *name;
    size_t   namelen;
    int      on, nopass;
    int      sanitize;      /* 0, 1 sanitize-payload, 2 skip-sanitize-payload (shown only) */
    char   (*pw)[65];
    int      npw;
    acl_sel *sel;           /* sel[0]: the root selector */
    int      nsel;
    int      unrestricted;  /* root allows every command, key, channel */
    int      one_sel;       /* only the root selector: fast_allowed may decide */
};

/* The users, sorted by name (ACL USERS/LIST order). Bounded by memory
 * only, as Redis: each is created by an administrator's command. */
static px_acl_user **users;
static int nusers, ucap;
static px_acl_user *default_user;

/* ------------------------------------------------------------ helpers */

typedef struct sbuf { char *p; size_t len, cap; } sbuf;

static void sb_add(sbuf *b, const char *s, size_t n) {
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
static void sb_str(sbuf *b, const char *s) { sb_add(b, s, strlen(s)); }
static void sb_trim(sbuf *b) { if (b->len && b->p[b->len - 1] == ' ') b->p[--b->len] = '\0'; }

static char *dupn(const char *s, size_t n) {
    char *p = malloc(n + 1);
    if (p) { memcpy(p, s, n); p[n] = '\0'; }
    return p;
}

static void pats_free(acl_pats *ps) {
    for (int i = 0; i < ps->n; i++) free(ps->v[i].s);
    free(ps->v);
    ps->v = NULL;
    ps->n = 0;
}

static int pats_add(acl_pats *ps, const char *s, size_t len, int perm, int id) {
    acl_pat *v = realloc(ps->v, (size_t)(ps->n + 1) * sizeof *v);
    if (!v) return -1;
    ps->v = v;
    if (!(v[ps->n].s = dupn(s, len))) return -1;
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
        if (pats_add(d, s->v[i].s, s->v[i].len, s->v[i].perm, s->v[i].id)) return -1;
    return 0;
}

static void sel_free(acl_sel *s) {
    pats_free(&s->keys); pats_free(&s->chans); pats_free(&s->fargs);
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

static inline int get_bit(const acl_sel *s, int id) { return (s->allowed[(unsigned)id / 64] >> ((unsigned)id % 64)) & 1; }

/* Allow or refuse one command: its first-argument rules go (Redis's
 * ACLChangeSelectorPerm). */
static void set_cmd(acl_sel *s, int id, int on) {
    if (on) s->allowed[id / 64] |= 1ull << (id % 64);
    else s->allowed[id / 64] &= ~(1ull << (id % 64));
    for (int i = s->fargs.n - 1; i >= 0; i--)
        if (s->fargs.v[i].id == id) pats_del(&s->fargs, i);
}

static int all_commands(const acl_sel *s) {
    for (int id = 0; id < FD_CMD_COUNT; id++)
        if (!get_bit(s, id)) return 0;
    return 1;
}

static void set_farg(acl_sel *s, int id, const char *a, size_t al, int perm) {
    for (int k = s->fargs.n - 1; k >= 0; k--)   /* an earlier rule for this argument goes */
        if (s->fargs.v[k].id == id && s->fargs.v[k].len == al && !strncasecmp(s->fargs.v[k].s, a, al))
            pats_del(&s->fargs, k);
    if (get_bit(s, id) != (perm > 0)) pats_add(&s->fargs, a, al, perm, id);   /* else the bit says it */
}

static void set_category(acl_sel *s, int cat, int on) {
    for (int id = 0; id < FD_CMD_COUNT; id++)
        if (fd_command_categories(fd_command_by_id(id)) >> cat & 1) set_cmd(s, id, on);
    int id;
    const char *sub;
    uint32_t cats;
    for (int i = 0; fd_subcommand_categories(i, &id, &sub, &cats); i++)
        if (cats >> cat & 1) set_farg(s, id, sub, strlen(sub), on ? 2 : -2);
}

static void sel_fast(acl_sel *s);

static void user_refresh(px_acl_user *u) {
    for (int i = 0; i < u->nsel; i++) { sel_index(&u->sel[i]); sel_fast(&u->sel[i]); }
    acl_sel *r = &u->sel[0];
    u->unrestricted = (r->flags & SEL_ALLKEYS) && (r->flags & SEL_ALLCHANNELS) && all_commands(r) && !r->fargs.n;
    u->one_sel = u->nsel == 1;
}

static void user_free(px_acl_user *u) {
    if (!u) return;
    for (int i = 0; i < u->nsel; i++) sel_free(&u->sel[i]);
    free(u->sel);
    free(u->pw);
    free(u->name);
    free(u);
}

static px_acl_user *user_new(const char *name, size_t len) {
    px_acl_user *u = calloc(1, sizeof *u);
    if (!u || !(u->name = dupn(name, len)) || !(u->sel = calloc(1, sizeof *u->sel))) { user_free(u); return NULL; }
    u->namelen = len;
    u->nsel = 1;
    return u;
}

static px_acl_user *user_dup(const px_acl_user *s) {
    px_acl_user *u = calloc(1, sizeof *u);
    if (!u) return NULL;
    *u = *s;
    u->name = dupn(s->name, s->namelen);
    u->pw = s->npw ? malloc((size_t)s->npw * sizeof *u->pw) : NULL;
    if (u->pw) memcpy(u->pw, s->pw, (size_t)s->npw * sizeof *u->pw);
    u->sel = calloc((size_t)s->nsel, sizeof *u->sel);
    int bad = !u->name || (s->npw && !u->pw) || !u->sel;
    u->nsel = 0;
    for (int i = 0; !bad && i < s->nsel; i++, u->nsel++) bad = sel_copy(&u->sel[i], &s->sel[i]);
    if (bad) { user_free(u); return NULL; }
    return u;
}

static px_acl_user *lookup(const char *name, size_t len);

static int find_user(const char *name, size_t len, int *at) {
    int lo = 0, hi = nusers;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        size_t ml = users[mid]->namelen;
        int c = memcmp(users[mid]->name, name, ml < len ? ml : len);
        if (!c) c = ml < len ? -1 : ml > len;
        if (!c) { if (at) *at = mid; return 1; }
        if (c < 0) lo = mid + 1; else hi = mid;
    }
    if (at) *at = lo;
    return 0;
}

px_acl_user *px_acl_lookup(const char *name, size_t len) { px_acl_init(); return lookup(name, len); }

static px_acl_user *lookup(const char *name, size_t len) {
    int at;
    return find_user(name, len, &at) ? users[at] : NULL;
}

static int insert_user(px_acl_user *u) {
    int at;
    find_user(u->name, u->namelen, &at);
    if (nusers == ucap) {
        int cap = ucap ? ucap * 2 : 8;
        px_acl_user **v = realloc(users, (size_t)cap * sizeof *v);
        if (!v) return -1;
        users = v;
        ucap = cap;
    }
    memmove(&users[at + 1], &users[at], (size_t)(nusers - at) * sizeof *users);
    users[at] = u;
    nusers++;
    return 0;
}

/* A user's clients are disconnected (deleted, or its rules changed) as
 * Redis: the current client after its reply, the others now. */
static void kill_clients(px_acl_user *u, px_conn *current) {
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

static int is(const char *op, size_t len, const char *lit) { return strlen(lit) == len && !strncasecmp(op, lit, len); }

/* One selector rule (keys, channels, commands). */
static int sel_rule(acl_sel *s, const char *op, size_t len) {
    if (is(op, len, "allkeys") || (len == 2 && !memcmp(op, "~*", 2))) {
        s->flags |= SEL_ALLKEYS;
        pats_free(&s->keys);
    } else if (is(op, len, "resetkeys")) {
        s->flags &= ~SEL_ALLKEYS;
        pats_free(&s->keys);
    } else if (is(op, len, "allchannels") || (len == 2 && !memcmp(op, "&*", 2))) {
        s->flags |= SEL_ALLCHANNELS;
        pats_free(&s->chans);
    } else if (is(op, len, "resetchannels")) {
        s->flags &= ~SEL_ALLCHANNELS;
        pats_free(&s->chans);
    } else if (is(op, len, "allcommands") || is(op, len, "+@all")) {
        memset(s->allowed, 0xff, sizeof s->allowed);
        s->flags |= SEL_FUTURE;
        pats_free(&s->fargs);
    } else if (is(op, len, "nocommands") || is(op, len, "-@all")) {
        memset(s->allowed, 0, sizeof s->allowed);
        s->flags &= ~SEL_FUTURE;
        pats_free(&s->fargs);
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
        if (pats_add(&s->keys, p, pl, perm, 0)) return E_NOMEM;
    } else if (op[0] == '&') {
        if (s->flags & SEL_ALLCHANNELS) return E_ALLCHANNELS;
        for (int k = 0; k < s->chans.n; k++)
            if (s->chans.v[k].len == len - 1 && !memcmp(s->chans.v[k].s, op + 1, len - 1)) return E_OK;
        if (pats_add(&s->chans, op + 1, len - 1, 0, 0)) return E_NOMEM;
    } else if ((op[0] == '+' || op[0] == '-') && len > 1) {
        int on = op[0] == '+';
        if (op[1] == '@') {
            int cat = fd_category_lookup(op + 2, len - 2);
            if (cat < 0) return E_NOENT;
            set_category(s, cat, on);
            return E_OK;
        }
        const char *bar = memchr(op + 1, '|', len - 1);
        fd_command *cmd = fd_command_lookup(op + 1, bar ? (size_t)(bar - op - 1) : len - 1);
        if (!cmd || cmd->id == FD_CMD_COUNT) return E_NOENT;
        if (!bar) { set_cmd(s, cmd->id, on); return E_OK; }
        const char *a = bar + 1;
        size_t al = len - (size_t)(a - op);
        if (memchr(a, '|', al)) return E_NOENT;
        if (!al) return E_SYNTAX;
        char low[128];
        if (al >= sizeof low) return E_SYNTAX;
        for (size_t k = 0; k < al; k++) low[k] = (char)((a[k] >= 'A' && a[k] <= 'Z') ? a[k] + 32 : a[k]);
        set_farg(s, cmd->id, low, al, on ? 1 : -1);
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

static int add_hash(px_acl_user *u, const char *hex) {
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
    for (int i = 1; i < u->nsel; i++) sel_free(&u->sel[i]);
    u->nsel = 1;
}

static int user_rule(px_acl_user *u, const char *op, size_t len);

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
    if (st != E_OK) { sel_free(&s); return st; }
    acl_sel *v = realloc(u->sel, (size_t)(u->nsel + 1) * sizeof *v);
    if (!v) { sel_free(&s); return E_NOMEM; }
    u->sel = v;
    v[u->nsel++] = s;
    return E_OK;
}

static int user_rule(px_acl_user *u, const char *op, size_t len) {
    if (!len) return E_OK;                       /* an empty rule does nothing */
    if (is(op, len, "on")) u->on = 1;
    else if (is(op, len, "off")) u->on = 0;
    else if (is(op, len, "nopass")) { u->nopass = 1; u->npw = 0; }
    else if (is(op, len, "resetpass")) { u->nopass = 0; u->npw = 0; }
    else if (is(op, len, "skip-sanitize-payload")) u->sanitize = 2;
    else if (is(op, len, "sanitize-payload")) u->sanitize = 1;
    else if (is(op, len, "clearselectors")) clear_selectors(u);
    else if (is(op, len, "reset")) {
        static const char *const steps[] = {"resetpass", "resetkeys", "resetchannels", "off", "sanitize-payload",
                                            "-@all", "clearselectors"};
        for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) user_rule(u, steps[i], strlen(steps[i]));
    } else if (op[0] == '>' || op[0] == '<') {
        char hex[65];
        px_sha256_hex(op + 1, len - 1, hex);
        if (op[0] == '<') return del_hash(u, hex);
        u->nopass = 0;
        return add_hash(u, hex);
    } else if (op[0] == '#' || op[0] == '!') {
        if (!is_hex64(op + 1, len - 1)) return E_HASH;
        char hex[65];
        memcpy(hex, op + 1, 64);
        hex[64] = '\0';
        if (op[0] == '!') return del_hash(u, hex);
        u->nopass = 0;
        return add_hash(u, hex);
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
static int apply_rules(px_acl_user *u, int n, const resp_arg *rules, char *err, size_t errlen) {
    for (int i = 0; i < n; i++) {
        const resp_arg *r = &rules[i];
        int st;
        if (r->len && r->ptr[0] == '(' && r->ptr[r->len - 1] != ')') {
            sbuf b = {0};
            int j = i;
            for (; j < n; j++) {
                if (j > i) sb_add(&b, " ", 1);
                sb_add(&b, rules[j].ptr, rules[j].len);
                if (rules[j].len && rules[j].ptr[rules[j].len - 1] == ')') break;
            }
            if (j == n) {
                snprintf(err, errlen, "ERR Unmatched parenthesis in acl selector starting at '%.*s'.", (int)r->len, r->ptr);
                free(b.p);
                return -1;
            }
            st = b.p ? user_rule(u, b.p, b.len) : E_NOMEM;
            if (st != E_OK) snprintf(err, errlen, "ERR Error in ACL SETUSER modifier '%s': %s", b.p ? b.p : "", err_text[st]);
            free(b.p);
            i = j;
        } else {
            st = user_rule(u, r->ptr, r->len);
            if (st != E_OK)
                snprintf(err, errlen, "ERR Error in ACL SETUSER modifier '%.*s': %s", (int)r->len, r->ptr, err_text[st]);
        }
        if (st != E_OK) return -1;
    }
    user_refresh(u);
    return 0;
}

/* ------------------------------------------------------------ describe */

static void describe_keys(sbuf *b, const acl_sel *s) {
    if (s->flags & SEL_ALLKEYS) { sb_str(b, "~* "); return; }
    for (int i = 0; i < s->keys.n; i++) {
        int p = s->keys.v[i].perm;
        sb_str(b, p == (KEY_R | KEY_W) ? "~" : p == KEY_R ? "%R~" : "%W~");
        sb_add(b, s->keys.v[i].s, s->keys.v[i].len);
        sb_add(b, " ", 1);
    }
}

static void describe_channels(sbuf *b, const acl_sel *s, int with_reset) {
    if (s->flags & SEL_ALLCHANNELS) { sb_str(b, "&* "); return; }
    if (with_reset) sb_str(b, "resetchannels ");
    for (int i = 0; i < s->chans.n; i++) {
        sb_add(b, "&", 1);
        sb_add(b, s->chans.v[i].s, s->chans.v[i].len);
        sb_add(b, " ", 1);
    }
}

/* Redis 7.0's reconstruction: +@all or -@all, the categories that fit
 * best one after another, then single commands (in the table's order) and
 * first arguments. */
static void describe_commands(sbuf *b, const acl_sel *s) {
    int additive = !(s->flags & SEL_FUTURE);
    acl_sel fake = {0}, temp = {0};
    sb_str(b, additive ? "-@all " : "+@all ");
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
                if (fd_command_categories(fd_command_by_id(id)) >> k & 1) { if (get_bit(&temp, id)) on++; else off++; }
            unsigned long diff = additive ? off : on, same = additive ? on : off;
            if (same > diff && (diff < mindiff || (diff == mindiff && same > maxsame))) { best = k; mindiff = diff; maxsame = same; }
        }
        if (best < 0) break;
        set_category(&fake, best, additive);
        set_category(&temp, best, !additive);
        sb_str(b, additive ? "+@" : "-@");
        sb_str(b, fd_category_name(best));
        sb_add(b, " ", 1);
        applied[best] = 1;
    }
    for (int id = 0; id < FD_CMD_COUNT; id++) {
        int ub = get_bit(s, id);
        if (ub != get_bit(&fake, id)) {
            sb_str(b, ub ? "+" : "-");
            sb_str(b, fd_command_by_id(id)->name);
            sb_add(b, " ", 1);
        }
        for (int i = 0; i < s->fargs.n; i++)
            if (s->fargs.v[i].id == id && (s->fargs.v[i].perm == 1 || s->fargs.v[i].perm == -1)) {
                sb_str(b, s->fargs.v[i].perm > 0 ? "+" : "-");
                sb_str(b, fd_command_by_id(id)->name);
                sb_add(b, "|", 1);
                sb_add(b, s->fargs.v[i].s, s->fargs.v[i].len);
                sb_add(b, " ", 1);
            }
    }
    sb_trim(b);
    sel_free(&fake);                      /* the subcommand rules categories set */
    sel_free(&temp);
}

static void describe_selector(sbuf *b, const acl_sel *s) {
    describe_keys(b, s);
    describe_channels(b, s, 1);
    describe_commands(b, s);
}

/* ACL LIST's line (also the aclfile's). */
static void describe_user(sbuf *b, const px_acl_user *u) {
    sb_str(b, "user ");
    sb_add(b, u->name, u->namelen);
    sb_str(b, u->on ? " on " : " off ");
    if (u->nopass) sb_str(b, "nopass ");
    if (u->sanitize) sb_str(b, u->sanitize == 2 ? "skip-sanitize-payload " : "sanitize-payload ");
    for (int i = 0; i < u->npw; i++) { sb_add(b, "#", 1); sb_str(b, u->pw[i]); sb_add(b, " ", 1); }
    describe_selector(b, &u->sel[0]);
    for (int i = 1; i < u->nsel; i++) {
        sb_str(b, " (");
        describe_selector(b, &u->sel[i]);
        sb_add(b, ")", 1);
    }
}

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
enum { LOG_AUTH = 3, LOG_CTX_TOPLEVEL = 0, LOG_CTX_MULTI = 1, LOG_CTX_LUA = 2 };
static log_entry *acllog;
static long long nlog, logcap;

static void log_free(log_entry *e) { free(e->object); free(e->username); free(e->cinfo); }

static void log_trim(void) {
    long long max = px_cfg.acllog_max_len;
    while (nlog > max) log_free(&acllog[--nlog]);
}

static uint64_t now_ms(void) { return (uint64_t)(ev_now(px_srv.loop) * 1000.0); }

static void log_add(px_conn *c, int reason, int context, const char *obj, size_t olen, const char *user, size_t ulen) {
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
            char *ci = dupn(cinfo, strlen(cinfo));
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
    log_entry e = {1, reason, context, dupn(obj, olen), dupn(user, ulen), dupn(cinfo, strlen(cinfo)), now};
    if (!e.object || !e.username || !e.cinfo) { log_free(&e); return; }
    memmove(&acllog[1], &acllog[0], (size_t)nlog * sizeof *acllog);
    acllog[0] = e;
    nlog++;
    log_trim();
}

static void log_denied(px_conn *c, int reason, int context, fd_command *cmd, int argc, resp_arg *argv, int errpos);

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

static int chan_ok(const acl_sel *s, const resp_arg *ch, int literal) {
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

static void cmdinfo_init(void) {
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
    int id = cmd->id, ok = get_bit(s, id);
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
            if (!chan_ok(s, &argv[i], ci->chan == 'P')) { *errpos = i; return PX_ACL_DENIED_CHANNEL; }
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
__attribute__((noinline)) static int user_check(const px_acl_user *u, fd_command *cmd, int argc, resp_arg *argv,
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
        if (cmdinfo[id].simple && get_bit(s, id)) s->fastcmd[id / 64] |= 1ull << (id % 64);
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
    const px_acl_user *u = c->user ? c->user : default_user;
    if (!u || u->unrestricted) return PX_ACL_OK;        /* the hot path: one flag */
    if (fast_allowed(u, cmd, argc, argv)) return PX_ACL_OK;
    return user_check(u, cmd, argc, argv, errpos);
}

int px_acl_restricted(const px_conn *c) {
    const px_acl_user *u = c->user ? c->user : default_user;
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

static void denied_text(char *buf, size_t len, int reason, fd_command *cmd, int argc, resp_arg *argv) {
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
    log_denied(c, reason, c && c->multi ? LOG_CTX_MULTI : LOG_CTX_TOPLEVEL, cmd, argc, argv, errpos);
    char text[256];
    denied_text(text, sizeof text, reason, cmd, argc, argv);
    resp_add_errorf(o, "NOPERM %s", text);
}

int px_acl_exec_check(px_conn *c, resp_out *o, fd_command *cmd, int argc, resp_arg *argv) {
    int pos = 0, why = px_acl_check(c, cmd, argc, argv, &pos);
    if (why == PX_ACL_OK || sort_denied(o, why)) return why;
    log_denied(c, why, LOG_CTX_MULTI, cmd, argc, argv, pos);
    resp_add_errorf(o, "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC "
                       "call. This command is no longer allowed for the following reason: %s",
                    why == PX_ACL_DENIED_CMD ? "no permission to execute the command or subcommand"
                    : why == PX_ACL_DENIED_KEY ? "no permission to touch the specified keys"
                    : "no permission to access one of the channels used as arguments");
    return why;
}

static void log_denied(px_conn *c, int reason, int context, fd_command *cmd, int argc, resp_arg *argv, int errpos) {
    const char *user = px_acl_username(c ? c->user : NULL);
    if (reason == PX_ACL_DENIED_CMD) {
        char name[128];
        full_name(name, sizeof name, cmd, argc, argv);
        log_add(c, reason, context, name, strlen(name), user, strlen(user));
    } else {
        log_add(c, reason, context, argv[errpos].ptr, argv[errpos].len, user, strlen(user));
    }
}

void px_acl_reply_script(px_conn *c, resp_out *o, int reason, fd_command *cmd, int argc, resp_arg *argv, int errpos) {
    if (sort_denied(o, reason)) return;
    log_denied(c, reason, LOG_CTX_LUA, cmd, argc, argv, errpos);
    resp_add_error(o, reason == PX_ACL_DENIED_KEY ? "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments"
                    : reason == PX_ACL_DENIED_CHANNEL ? "ERR The user executing the script can't publish to the channel mentioned in the command"
                    : "ERR The user executing the script can't run this command or subcommand");
}

/* ------------------------------------------------------------ users */

void px_acl_init(void) {
    if (default_user) return;
    cmdinfo_init();
    default_user = user_new("default", 7);
    if (!default_user) { px_log(PX_LOG_WARNING, "ACL: out of memory"); abort(); }
    static const char *const rules[] = {"on", "nopass", "~*", "&*", "+@all"};
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) user_rule(default_user, rules[i], strlen(rules[i]));
    user_refresh(default_user);
    insert_user(default_user);
}

void px_acl_set_requirepass(const char *pass) {
    px_acl_init();
    user_rule(default_user, "resetpass", 9);
    if (pass && pass[0]) {
        char hex[65];
        px_sha256_hex(pass, strlen(pass), hex);
        add_hash(default_user, hex);
    } else {
        user_rule(default_user, "nopass", 6);
    }
}

/* requirepass is the default user's password: a change of the directive
 * (file, CONFIG SET, reload) is applied when next looked at. */
static char *seen_requirepass;
static void sync_requirepass(void) {
    px_acl_init();
    const char *now = px_cfg.requirepass ? px_cfg.requirepass : "";
    if (seen_requirepass && !strcmp(seen_requirepass, now)) return;
    if (!seen_requirepass && !now[0]) { seen_requirepass = dupn("", 0); return; }
    free(seen_requirepass);
    seen_requirepass = dupn(now, strlen(now));
    px_acl_set_requirepass(now);
}

px_acl_user *px_acl_default(void) { px_acl_init(); return default_user; }
int px_acl_default_noauth(void) { sync_requirepass(); return default_user->on && default_user->nopass; }
const char *px_acl_username(const px_acl_user *u) { return u ? u->name : "default"; }

px_acl_user *px_acl_authenticate(px_conn *c, const resp_arg *cmdname, const char *name, size_t nlen, const char *pass,
                                 size_t plen) {
    sync_requirepass();
    px_acl_user *u = lookup(name, nlen);
    int ok = 0;
    if (u && u->on) {
        char hex[65];
        px_sha256_hex(pass, plen, hex);
        ok = u->nopass;
        for (int i = 0; i < u->npw; i++) ok |= !memcmp(u->pw[i], hex, 64);   /* every one compared: no early exit */
    }
    if (ok) return u;
    log_add(c, LOG_AUTH, c && c->multi ? LOG_CTX_MULTI : LOG_CTX_TOPLEVEL, cmdname->ptr, cmdname->len, name, nlen);
    return NULL;
}

static int sub_denied(void *ud, int kind, const char *name, size_t len) {
    const acl_sel *s = ud;
    resp_arg a = {(char *)name, len};   /* only read */
    return !chan_ok(s, &a, kind == 1);   /* a pattern must be one of the user's, literally */
}

/* Redis 7.0 (ACLKillPubsubClientsIfNeeded): after a change of u's rules,
 * its clients subscribed to a channel or pattern its root selector no
 * longer allows are disconnected. */
static void kill_lost_subscribers(px_acl_user *u, px_conn *current) {
    const acl_sel *r = &u->sel[0];
    if (r->flags & SEL_ALLCHANNELS) return;
    for (px_conn *x = px_srv.clients; x; x = x->next) {
        if ((x->user ? x->user : default_user) != u || !x->ps || !px_pubsub_each(x, sub_denied, (void *)r)) continue;
        x->flags |= PX_CONN_CLOSE_AFTER_REPLY;
        if (x->blk || x != current) x->flags |= PX_CONN_CLOSE_ASAP;
        ev_io_stop(px_srv.loop, &x->rio);
        px_conn_touch(x);
    }
}

/* Create or change a user from rules; 0, or -1 with err. Clients of a
 * changed user are disconnected (current: after its reply). */
static int setuser(const char *name, size_t nlen, int n, const resp_arg *rules, px_conn *current, char *err, size_t errlen) {
    px_acl_user *old = lookup(name, nlen);
    px_acl_user *u = old ? user_dup(old) : user_new(name, nlen);
    if (!u) { snprintf(err, errlen, "ERR Out of memory"); return -1; }
    if (apply_rules(u, n, rules, err, errlen)) { user_free(u); return -1; }
    if (!old) {
        if (insert_user(u)) { user_free(u); snprintf(err, errlen, "ERR Out of memory"); return -1; }
        return 0;
    }
    /* swap the contents so that connections keep pointing at old */
    px_acl_user tmp = *old;
    *old = *u;
    *u = tmp;
    user_free(u);
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
                px_acl_user *u = user_new(words[1], strlen(words[1]));
                resp_arg rules[1024];
                for (int i = 2; i < n; i++) { rules[i - 2].ptr = words[i]; rules[i - 2].len = strlen(words[i]); }
                char e2[512];
                px_acl_user **v = u ? realloc(nu, (size_t)(nn + 1) * sizeof *v) : NULL;
                if (!v) { user_free(u); snprintf(e, sizeof e, "%s:%d: Out of memory. ", path, lineno); }
                else {
                    nu = v;
                    nu[nn++] = u;
                    if (apply_rules(u, n - 2, rules, e2, sizeof e2)) {
                        const char *why = strstr(e2, "': ");
                        snprintf(e, sizeof e, "%s:%d: %s. ", path, lineno, why ? why + 3 : e2 + 4);
                    }
                }
            }
        }
        if (e[0]) { bad = 1; sb_str(&errs, e); }
    }
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "%sWARNING: ACL errors detected, no change to the previously active ACL rules was performed",
                 errs.p ? errs.p : "");
        free(errs.p);
        for (int i = 0; i < nn; i++) user_free(nu[i]);
        free(nu);
        return -1;
    }
    free(errs.p);
    /* the old default user takes the file's default (or a new default's rules) */
    px_acl_user *fresh = NULL;
    for (int i = 0; i < nn; i++)
        if (!strcmp(nu[i]->name, "default")) { fresh = nu[i]; memmove(&nu[i], &nu[i + 1], (size_t)(nn - i - 1) * sizeof *nu); nn--; break; }
    if (!fresh) {
        fresh = user_new("default", 7);
        static const char *const rules[] = {"on", "nopass", "~*", "&*", "+@all"};
        for (size_t i = 0; fresh && i < sizeof rules / sizeof rules[0]; i++) user_rule(fresh, rules[i], strlen(rules[i]));
        if (fresh) user_refresh(fresh);
    }
    if (fresh) {
        px_acl_user tmp = *default_user;
        *default_user = *fresh;
        *fresh = tmp;
        user_free(fresh);
    }
    for (int i = 0; i < nusers; i++)
        if (users[i] != default_user) { kill_clients(users[i], current); user_free(users[i]); }
    nusers = 0;
    insert_user(default_user);
    for (int i = 0; i < nn; i++) insert_user(nu[i]);
    free(nu);
    return 0;
}

static int save_file(const char *path) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp-%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    int bad = 0;
    for (int i = 0; i < nusers; i++) {
        sbuf b = {0};
        describe_user(&b, users[i]);
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
    describe_commands(&b, s);
    add_bulk_sb(o, &b);
    resp_add_bulk_cstr(o, "keys");
    describe_keys(&b, s);
    sb_trim(&b);
    add_bulk_sb(o, &b);
    resp_add_bulk_cstr(o, "channels");
    describe_channels(&b, s, 0);
    sb_trim(&b);
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
        px_acl_user *u = lookup(argv[2].ptr, argv[2].len);
        if (!u) { resp_add_null(o); return; }
        reply_getuser(o, u);
    } else if (resp_arg_is(sub, "DELUSER")) {
        ARITY(argc >= 3);
        long long n = 0;
        for (int i = 2; i < argc; i++)
            if (resp_arg_is(&argv[i], "default")) { resp_add_error(o, "ERR The 'default' user cannot be removed"); return; }
        for (int i = 2; i < argc; i++) {
            int at;
            if (!find_user(argv[i].ptr, argv[i].len, &at)) continue;
            px_acl_user *u = users[at];
            memmove(&users[at], &users[at + 1], (size_t)(nusers - at - 1) * sizeof *users);
            nusers--;
            kill_clients(u, c);
            user_free(u);
            n++;
        }
        resp_add_int(o, n);
    } else if (resp_arg_is(sub, "USERS")) {
        ARITY(argc == 2);
        resp_add_array(o, nusers);
        for (int i = 0; i < nusers; i++) resp_add_bulk(o, users[i]->name, users[i]->namelen);
    } else if (resp_arg_is(sub, "LIST")) {
        ARITY(argc == 2);
        resp_add_array(o, nusers);
        for (int i = 0; i < nusers; i++) {
            sbuf b = {0};
            describe_user(&b, users[i]);
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
        px_acl_user *u = lookup(argv[2].ptr, argv[2].len);
        if (!u) { resp_add_errorf(o, "ERR User '%.*s' not found", (int)argv[2].len, argv[2].ptr); return; }
        fd_command *cmd = fd_command_lookup(argv[3].ptr, argv[3].len);
        if (!cmd) { resp_add_errorf(o, "ERR Command '%.*s' not found", (int)argv[3].len, argv[3].ptr); return; }
        int n = argc - 3;
        if ((cmd->arity > 0 && n != cmd->arity) || n < -cmd->arity) {
            resp_add_errorf(o, "ERR wrong number of arguments for '%s' command", cmd->name);
            return;
        }
        int pos = 0, r = user_check(u, cmd, n, &argv[3], &pos);
        if (r == PX_ACL_OK || r == PX_ACL_DENIED_SORT_BY || r == PX_ACL_DENIED_SORT_GET) {   /* the command's own error */
            resp_add_simple(o, "OK", 2);
            return;
        }
        char text[256];
        const resp_arg *what = &argv[3 + pos];
        int wl = (int)(what->len > 128 ? 128 : what->len);
        if (r == PX_ACL_DENIED_KEY) snprintf(text, sizeof text, "This user has no permissions to access the '%.*s' key", wl, what->ptr);
        else if (r == PX_ACL_DENIED_CHANNEL) snprintf(text, sizeof text, "This user has no permissions to access the '%.*s' channel", wl, what->ptr);
        else { denied_text(text, sizeof text, r, cmd, n, &argv[3]); text[0] = 'T'; }
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

/* ------------------------------------------------------------ hook (hooks.h) */

/* The permission check, a gate at "checked": after the core's own checks
 * (known, arity, authenticated), before the RESP2 pub/sub-mode denial and
 * the MULTI queue, as Redis 7.0's processCommand orders them. A refusal
 * inside MULTI flags the transaction (EXECABORT), as Redis's rejectCommand. */
__attribute__((noinline)) static int acl_checked_slow(px_conn *c, const px_acl_user *u, fd_command *cmd, int argc,
                                                     resp_arg *argv) {
    int pos = 0, why = user_check(u, cmd, argc, argv, &pos);
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
    const px_acl_user *u = c->user ? c->user : default_user;
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
