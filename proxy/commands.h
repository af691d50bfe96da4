/* commands.h — the one command table.
 *
 * Every command frontdoor knows is one row: name, arity (negative: at least
 * -arity arguments, the name included), flags, key positions (as Redis's
 * legacy first/last/step), and its handlers: `proxy` when the proxy itself
 * serves it, `kv` when the Redis-types layer implements it for the embedded
 * backends. Arity, authentication and flags are checked once, centrally, in
 * dispatch.c — no handler repeats them.
 */
#ifndef FRONTDOOR_COMMANDS_H
#define FRONTDOOR_COMMANDS_H

#include <stdint.h>
#include <stddef.h>
#include "../protocol/resp.h"
#include "../storage/kv/kv_commands.h"

struct px_conn;

enum {
    PX_CMD_WRITE    = 1 << 0,   /* may modify data */
    PX_CMD_READONLY = 1 << 1,
    PX_CMD_ADMIN    = 1 << 2,
    PX_CMD_FAST     = 1 << 3,
    PX_CMD_NOAUTH   = 1 << 4,   /* allowed before AUTH (AUTH, HELLO, QUIT) */
    PX_CMD_DENYOOM  = 1 << 5,   /* may grow the data set */
    PX_CMD_KEYLESS_BACKEND = 1 << 6, /* goes to the backend but has no key (DBSIZE, SCAN...) */
    /* how A/B mirroring compares two backends' replies (proxy/ab.c) */
    PX_CMD_NONDET   = 1 << 7,   /* random or clock-dependent reply: not compared */
    PX_CMD_UNORDERED = 1 << 8,  /* the reply's elements come in no set order: compared sorted */
    PX_CMD_PAIRS    = 1 << 9,   /* with UNORDERED: elements are (field, value) pairs */
};

/* Served by the proxy: writes one reply to the connection's output. */
typedef void (*px_handler)(struct px_conn *c, int argc, resp_arg *argv);

typedef struct px_command {
    const char *name;        /* lower case */
    int         arity;
    uint32_t    flags;
    int         first_key, last_key, key_step;
    px_handler  proxy;       /* non-NULL: served by the proxy */
    kv_handler  kv;          /* non-NULL: implemented by the embedded backends */
    const char *group;       /* COMMAND DOCS: "string", "generic", "server", ... */
    const char *since;
    const char *summary;
    const char *args;        /* syntax as Redis's help shows it, for COMMAND DOCS (cmddocs.h); NULL = none */
    /* statistics (INFO commandstats) */
    uint64_t    calls, usec, failed;
    uint64_t    ab_compared, ab_mismatches;     /* INFO ab */
    int         id;          /* index in the table */
    size_t      namelen;     /* strlen(name), set at init (lookup compares it first) */
} px_command;

/* Case-insensitive lookup; NULL if unknown. O(1) (hashed at init). */
px_command *px_command_lookup(const char *name, size_t len);
void        px_commands_init(void);
px_command *px_commands_table(size_t *count);

#endif
