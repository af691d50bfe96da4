/* command.h — the command descriptor and the one command table.
 *
 * Module prefix: fd_command / FD_CMD_. Every command frontdoor knows is one
 * row of storage/commands.def; this header turns the rows into
 *   - an id per command (FD_CMD_get, ...: dense, 0..FD_CMD_COUNT-1), by
 *     which every family looks its handler up in O(1);
 *   - one fd_command descriptor per row (name, arity, flags, key positions,
 *     family, cluster routing, documentation);
 *   - a case-insensitive lookup by name (O(1), hashed at init).
 * It lives in storage/ because both layers need it: the proxy checks and
 * routes by it, the backends dispatch and route (cluster) by it. It includes
 * nothing from proxy/.
 *
 * Arity, authentication and flags are checked once, centrally, by the proxy
 * (proxy/dispatch.c) — no handler repeats them.
 */
#ifndef FRONTDOOR_COMMAND_H
#define FRONTDOOR_COMMAND_H

#include <stddef.h>
#include <stdint.h>
#include "../protocol/resp.h"

enum {
    FD_CMD_WRITE    = 1 << 0,   /* may modify data */
    FD_CMD_READONLY = 1 << 1,
    FD_CMD_ADMIN    = 1 << 2,
    FD_CMD_FAST     = 1 << 3,
    FD_CMD_NOAUTH   = 1 << 4,   /* allowed before AUTH (AUTH, HELLO, QUIT) */
    FD_CMD_DENYOOM  = 1 << 5,   /* may grow the data set */
    FD_CMD_KEYLESS_BACKEND = 1 << 6, /* goes to the backend but has no key (DBSIZE, SCAN...) */
    /* how A/B mirroring compares two backends' replies (proxy/ab.c) */
    FD_CMD_NONDET   = 1 << 7,   /* random or clock-dependent reply: not compared */
    FD_CMD_UNORDERED = 1 << 8,  /* the reply's elements come in no set order: compared sorted */
    FD_CMD_PAIRS    = 1 << 9,   /* with UNORDERED: elements are (field, value) pairs */
    /* keys counted by an argument: argv[1] (NUMKEYS1) or argv[2] (NUMKEYS2)
     * says how many keys follow it (after the fixed first..last ones, if any) */
    FD_CMD_NUMKEYS1 = 1 << 10,
    FD_CMD_NUMKEYS2 = 1 << 11,
    FD_CMD_NOSCRIPT = 1 << 12,  /* not allowed from a script (MULTI, EVAL, WATCH...) */
    FD_CMD_IN_MULTI = 1 << 13,  /* inside MULTI it runs at once instead of being queued (EXEC, DISCARD, MULTI, WATCH) */
    /* the keys are the first half of the arguments after STREAMS (XREAD, XREADGROUP) */
    FD_CMD_STREAMKEYS = 1 << 14,
    /* WATCH (proxy/multi.c px_watch_touch_reply): the command changes its keys
     * only when its reply says so. A reply of :0, :-1 (LINSERT's missing
     * pivot; no flagged command answers it after a change), a null ($-1, *-1, _) or an
     * empty array/set/map (*0, ~0, %0) means Redis 7.0 did not call
     * signalModifiedKey for any of its keys; any other reply counts as a change
     * of every key (a superset of Redis's). Exception: SET with GET, whose
     * null reply only says the key was absent (flagged for NX/XX). */
    FD_CMD_TOUCH_CHANGED = 1 << 15,
    /* ACL categories Redis 7.0 gives beyond those derived from the row
     * (commands.def's header; fd_command_categories) */
    FD_CMD_CAT_ADMIN      = 1 << 16,
    FD_CMD_CAT_DANGEROUS  = 1 << 17,
    FD_CMD_CAT_KEYSPACE   = 1 << 18,
    FD_CMD_CAT_BLOCKING   = 1 << 19,
    FD_CMD_CAT_CONNECTION = 1 << 20,
    FD_CMD_CAT_SORT       = 1 << 21,   /* @list @set @sortedset, not the group's */
    FD_CMD_CONTAINER      = 1 << 22,   /* subcommands carry the categories (COMMAND INFO: none) */
    /* what ACL needs of the keys, when not what the row's W/R says
     * (commands.def's header; fd_command_key_need) */
    FD_CMD_KEY_R          = 1 << 23,   /* the keys need read */
    FD_CMD_KEY_W          = 1 << 24,   /* the keys need write */
    FD_CMD_KEY_NONE       = 1 << 25,   /* the keys need neither (any pattern grants them) */
    FD_CMD_KEY1_R         = 1 << 26,   /* the first key needs read ... */
    FD_CMD_KEY1_W         = 1 << 27,   /* ... and/or write, unlike the others */
};

/* ACL key permissions (fd_command_key_need). */
enum { FD_KEY_NEED_R = 1, FD_KEY_NEED_W = 2 };

/* Redis 7.0's ACL categories, in its order (ACL CAT, COMMAND INFO). */
enum fd_acl_category {
    FD_CAT_KEYSPACE, FD_CAT_READ, FD_CAT_WRITE, FD_CAT_SET, FD_CAT_SORTEDSET, FD_CAT_LIST,
    FD_CAT_HASH, FD_CAT_STRING, FD_CAT_BITMAP, FD_CAT_HYPERLOGLOG, FD_CAT_GEO, FD_CAT_STREAM,
    FD_CAT_PUBSUB, FD_CAT_ADMIN, FD_CAT_FAST, FD_CAT_SLOW, FD_CAT_BLOCKING, FD_CAT_DANGEROUS,
    FD_CAT_CONNECTION, FD_CAT_TRANSACTION, FD_CAT_SCRIPTING,
    FD_CAT_COUNT
};

/* Who serves a command. */
enum fd_family {
    FD_FAM_PROXY = 0,           /* the proxy itself (proxy/builtin.c, ...) */
    FD_FAM_DATA  = 1,           /* the backend (each family's handler by id) */
};

/* How the redis-cluster backend routes a DATA command. */
enum fd_cluster_route {
    FD_CL_NONE = 0,             /* not routed (served by the proxy) */
    FD_CL_KEYED,                /* to the master of its keys' slot; CROSSSLOT if they differ; keyless: any master */
    FD_CL_ANY,                  /* keyless: any master (the client's, to keep its order) */
    FD_CL_SPLIT_SUM,            /* split per slot (key_step apart), integer replies summed (DEL, EXISTS) */
    FD_CL_SPLIT_MGET,           /* split per slot, the values put back in the keys' order (MGET) */
    FD_CL_SPLIT_OK,             /* split per slot, +OK or the first error (MSET) */
    FD_CL_FAN_SUM,              /* to every master, integers summed (DBSIZE) */
    FD_CL_FAN_FLUSH,            /* to every master, +OK or the first error (FLUSHDB) */
    FD_CL_FAN_KEYS,             /* to every master, arrays concatenated (KEYS) */
    FD_CL_FAN_RANDOM,           /* to every master, the first non-nil (RANDOMKEY) */
    FD_CL_SCAN,                 /* walks the masters with a composite cursor (SCAN) */
};

/* The ids: FD_CMD_<id> for every row of commands.def. */
#define FD_CMD_ID(id, ...) FD_CMD_##id,
enum fd_command_id {
#define CMD FD_CMD_ID
#include "commands.def"
#undef CMD
    FD_CMD_COUNT
};
#undef FD_CMD_ID

/* One row. The table is static; the counters at the end are the proxy's
 * statistics of the command (INFO commandstats, INFO ab), kept beside it so
 * that a command is one object. */
typedef struct fd_command {
    const char *name;        /* lower case */
    int         arity;
    uint32_t    flags;       /* FD_CMD_* */
    int         first_key, last_key, key_step;
    int         family;      /* enum fd_family */
    int         cluster;     /* enum fd_cluster_route */
    const char *group;       /* COMMAND DOCS: "string", "generic", "server", ... */
    const char *since;
    const char *summary;
    const char *args;        /* syntax as Redis's help shows it; NULL = none */
    int         id;          /* enum fd_command_id: index in the table */
    size_t      namelen;     /* strlen(name) */
    /* A/B statistics, kept by the proxy (loop thread only); per-command
     * calls and latency are the proxy's records (proxy/backends.h) */
    uint64_t    ab_compared, ab_mismatches;
} fd_command;

/* The name of category cat (0 <= cat < FD_CAT_COUNT), without '@'. */
const char *fd_category_name(int cat);
/* The category of a name (no '@', any case), or -1. */
int         fd_category_lookup(const char *name, size_t len);
/* cmd's ACL categories, a bit (1u << FD_CAT_*) each: derived from the row
 * and its C_* tokens (commands.def's header). For a container (SUB) these
 * are what ACL applies to its subcommands; COMMAND INFO shows none. Pure. */
uint32_t    fd_command_categories(const fd_command *cmd);
/* What ACL permission a key of cmd needs, from Redis 7.0's key specs as
 * the row states them (commands.def's header): FD_KEY_NEED_R and/or
 * FD_KEY_NEED_W, 0 none. first: the command's first key (fd_command_keys'
 * first), else any other. Pure. */
int         fd_command_key_need(const fd_command *cmd, int first);

/* A container's subcommands whose categories are not the row's (ACL
 * SETUSER, CLIENT KILL...: @admin @dangerous): the i-th such exception, 0
 * past the end; *id the container, *sub its lower-case name, *cats its
 * categories. */
int         fd_subcommand_categories(int i, int *id, const char **sub, uint32_t *cats);

/* Build the name hash (idempotent; call once at start-up, before any
 * lookup — fd_command_lookup also builds it on first use). */
void        fd_commands_init(void);
/* Case-insensitive lookup; NULL if unknown. O(1). */
fd_command *fd_command_lookup(const char *name, size_t len);
/* The whole table, in commands.def order (index = id). */
fd_command *fd_commands_table(size_t *count);
/* The row of an id (0 <= id < FD_CMD_COUNT). */
fd_command *fd_command_by_id(int id);

/* The key positions of one call of cmd: at most max argument indexes into
 * pos, in order (Redis's first/last/step; last -1 = the last argument).
 * With FD_CMD_NUMKEYS*, the counted keys follow (a count that is not a
 * non-negative integer counts none; the command's handler reports it).
 * SORT adds the key of its last STORE (Redis's sortGetKeys), GEORADIUS and
 * GEORADIUSBYMEMBER those of their first STORE and first STOREDIST (their
 * key specs).
 * Returns how many; keyless commands have none. */
int fd_command_keys(const fd_command *cmd, int argc, const resp_arg *argv, int *pos, int max);

#endif
