/* acl.h — Redis 7.0's ACL users, enforced by the proxy on every backend
 * (docs/acl.md). Module prefix px_acl_.
 *
 * Users live in one table (loop thread only), sorted by name; each has
 * passwords (SHA-256, never the clear text), on/off, and selectors: the root
 * one plus any "(...)" ones, each with a command bitmap over the command
 * table's ids (+cmd|arg first arguments beside it), key patterns (%R/%W)
 * and channel patterns. A connection points at its user (px_conn.user);
 * deleting a user or changing its rules disconnects its clients, as Redis.
 *
 * Cost: a user whose root selector allows every command, key and channel is
 * "unrestricted" and px_acl_check is one flag test for it.
 */
#ifndef FRONTDOOR_ACL_H
#define FRONTDOOR_ACL_H

#include "server.h"

typedef struct px_acl_user px_acl_user;

/* Why px_acl_check refused (Redis's order: the most relevant wins). */
enum { PX_ACL_OK = 0, PX_ACL_DENIED_CMD = 1, PX_ACL_DENIED_KEY = 2, PX_ACL_DENIED_CHANNEL = 4,
       /* SORT's BY pattern / GET for a user without read access to every key
        * (Redis 7.0's -ERR, not logged) */
       PX_ACL_DENIED_SORT_BY = 5, PX_ACL_DENIED_SORT_GET = 6 };

/* The table with the default user ("on nopass ~* &* +@all", or requirepass's
 * password). Call once at start-up; idempotent. */
void px_acl_init(void);
/* Registers the permission check as a "checked" gate (hooks.h); main.c
 * lists it before the features whose gates must come after it. */
void px_acl_hooks(void);
/* requirepass changed (config): the default user's passwords become it
 * (resetpass >pass, or nopass when empty), as Redis. */
void px_acl_set_requirepass(const char *pass);
/* The default user; is it usable without AUTH (on, nopass)? */
px_acl_user *px_acl_default(void);
int  px_acl_default_noauth(void);
/* The user of that name, or NULL. */
px_acl_user *px_acl_lookup(const char *name, size_t len);
/* The user name (NUL-terminated, owned by the user). */
const char *px_acl_username(const px_acl_user *u);
/* AUTH/HELLO AUTH: the user if (name, pass) authenticates an enabled user,
 * else NULL and an ACL LOG entry for c (may be NULL) naming the command as
 * sent (cmdname). No secret is logged. */
px_acl_user *px_acl_authenticate(px_conn *c, const resp_arg *cmdname, const char *name, size_t nlen, const char *pass,
                                 size_t plen);

/* Is c's user allowed to run cmd with these arguments (command, keys from
 * the table's key positions, channels)? PX_ACL_OK or the reason; *errpos
 * (may be NULL) is the offending argument. Before AUTH commands (NA) are
 * always allowed. An unrestricted user costs one flag test. cmd NULL: a
 * command the table does not know, for a Redis backend to answer: allowed
 * only by a selector with allcommands (+@all), allkeys and allchannels
 * (its keys cannot be told). */
int  px_acl_check(px_conn *c, fd_command *cmd, int argc, resp_arg *argv, int *errpos);
/* Is c's user limited in any way (not every command, key and channel)?
 * Then scripts run in frontdoor's engine on every backend, so that their
 * redis.call is checked (scripting.c). */
int  px_acl_restricted(const px_conn *c);
/* Append the -NOPERM error of a refusal to o (Redis 7.0's texts) and log it
 * in ACL LOG (context: MULTI when c is in one). */
void px_acl_reply_denied(px_conn *c, resp_out *o, int reason, fd_command *cmd, int argc, resp_arg *argv, int errpos);

/* EXEC runs a queued command: c's user's rules are checked again (Redis
 * 7.0's execCommand: they may have changed since it was queued). PX_ACL_OK,
 * or the reason, with the refusal appended to o: "-NOPERM ACLs rules
 * changed between the moment the transaction was accumulated and the EXEC
 * call. ..." (logged in ACL LOG, context multi), or SORT's BY/GET -ERR (not
 * logged, as when SORT runs alone). */
int  px_acl_exec_check(px_conn *c, resp_out *o, fd_command *cmd, int argc, resp_arg *argv);

/* A config-file "user <name> <rules...>" line (argv[0] the name); 0, or
 * -1 with err (Redis's text of the failing rule). */
int  px_acl_config_user(int argc, char **argv, char *err, size_t errlen);
/* Start-up: the aclfile's users, if one is set (an error stops frontdoor,
 * as Redis; "user" lines and an aclfile together are refused). 0 or -1. */
int  px_acl_startup(char *err, size_t errlen);

/* The same refusal inside a script's redis.call (Redis 7.0's script texts). */
void px_acl_reply_script(px_conn *c, resp_out *o, int reason, fd_command *cmd, int argc, resp_arg *argv, int errpos);

#endif
