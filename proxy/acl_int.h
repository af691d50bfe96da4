/* acl_int.h — what the ACL files share (private to proxy/acl*.c; acl.h is
 * the contract): a user, its selectors and patterns, the users' list, and
 * the functions one file calls in another (prefix acl_). Layout: acl.c
 * (the users' state, the permission check on every command: the hot path,
 * its helpers kept with it; the hooks), acl_rules.c (ACL SETUSER rules and
 * their description, ACL GETUSER/LIST texts), acl_cmd.c (ACL LOG, users
 * from the configuration and ACL files, the ACL command). Loop thread. */
#ifndef FRONTDOOR_PROXY_ACL_INT_H
#define FRONTDOOR_PROXY_ACL_INT_H

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

typedef struct sbuf { char *p; size_t len, cap; } sbuf;

enum { LOG_AUTH = 3, LOG_CTX_TOPLEVEL = 0, LOG_CTX_MULTI = 1, LOG_CTX_LUA = 2 };

/* proxy/acl.c */
char *acl_dupn(const char *s, size_t n);
int acl_chan_ok(const acl_sel *s, const resp_arg *ch, int literal);
int acl_find_user(const char *name, size_t len, int *at);
int acl_get_bit(const acl_sel *s, int id);
int acl_insert_user(px_acl_user *u);
int acl_pats_add(acl_pats *ps, const char *s, size_t len, int perm, int id);
px_acl_user *acl_lookup(const char *name, size_t len);
px_acl_user *acl_user_dup(const px_acl_user *s);
px_acl_user *acl_user_new(const char *name, size_t len);
void acl_cmdinfo_init(void);
void acl_denied_text(char *buf, size_t len, int reason, fd_command *cmd, int argc, resp_arg *argv);
void acl_kill_clients(px_acl_user *u, px_conn *current);
void acl_log_denied(px_conn *c, int reason, int context, fd_command *cmd, int argc, resp_arg *argv, int errpos);
void acl_pats_free(acl_pats *ps);
void acl_sb_add(sbuf *b, const char *s, size_t n);
void acl_sb_str(sbuf *b, const char *s);
void acl_sb_trim(sbuf *b);
void acl_sel_free(acl_sel *s);
void acl_set_category(acl_sel *s, int cat, int on);
void acl_set_cmd(acl_sel *s, int id, int on);
void acl_set_farg(acl_sel *s, int id, const char *a, size_t al, int perm);
void acl_user_free(px_acl_user *u);
void acl_user_refresh(px_acl_user *u);

/* proxy/acl_rules.c */
int acl_add_hash(px_acl_user *u, const char *hex);
int acl_apply_rules(px_acl_user *u, int n, const resp_arg *rules, char *err, size_t errlen);
int acl_is(const char *op, size_t len, const char *lit);
int acl_user_rule(px_acl_user *u, const char *op, size_t len);
void acl_describe_channels(sbuf *b, const acl_sel *s, int with_reset);
void acl_describe_commands(sbuf *b, const acl_sel *s);
void acl_describe_keys(sbuf *b, const acl_sel *s);
void acl_describe_user(sbuf *b, const px_acl_user *u);

/* proxy/acl_cmd.c */
void acl_log_add(px_conn *c, int reason, int context, const char *obj, size_t olen, const char *user, size_t ulen);

/* acl.c: the users, sorted by name; the default user */
extern px_acl_user **acl_users;
extern int acl_nusers, acl_ucap;
extern px_acl_user *acl_default_user;
/* acl.c: a command against u's selectors (the slow path of the check):
 * 0 allowed, else a PX_ACL_DENIED_* reason, *errpos the argument refused */
int acl_user_check(const px_acl_user *u, fd_command *cmd, int argc, resp_arg *argv, int *errpos);

#endif
