/* commands.c — the one command table. A new command is one row here plus its
 * handler (proxy/builtin.c for proxy-served commands, storage/kv/ for the
 * Redis types). Arities, flags and key positions are Redis 7.0's. */
#include "commands.h"
#include "builtin.h"
#include "ab.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#define W  PX_CMD_WRITE
#define R  PX_CMD_READONLY
#define A  PX_CMD_ADMIN
#define F  PX_CMD_FAST
#define NA PX_CMD_NOAUTH
#define M  PX_CMD_DENYOOM
#define KB PX_CMD_KEYLESS_BACKEND
#define ND PX_CMD_NONDET
#define UO PX_CMD_UNORDERED
#define PR (PX_CMD_UNORDERED | PX_CMD_PAIRS)

/* name, arity, flags, first/last/step key, proxy handler, kv handler, group,
 * since, summary, and optionally the syntax line (see cmddocs.h) */
#define PROXY(n, ar, fl, h, grp, since_, ...) \
    {.name = n, .arity = ar, .flags = fl, .proxy = h, .group = grp, .since = since_, .summary = __VA_ARGS__}
#define KV(n, ar, fl, f, l, s, h, grp, since_, ...) \
    {.name = n, .arity = ar, .flags = fl, .first_key = f, .last_key = l, .key_step = s, .kv = kv_cmd_##h, \
     .group = grp, .since = since_, .summary = __VA_ARGS__}

static px_command table[] = {
    /* served by the proxy */
    PROXY("ping", -1, F, px_cmd_ping, "connection", "1.0.0", "Returns the server's liveliness response.", "[message]"),
    PROXY("echo", 2, F, px_cmd_echo, "connection", "1.0.0", "Returns the given string.", "message"),
    PROXY("quit", -1, F | NA, px_cmd_quit, "connection", "1.0.0", "Closes the connection."),
    PROXY("hello", -1, F | NA, px_cmd_hello, "connection", "6.0.0", "Handshakes with the server.", "[protover [AUTH username password] [SETNAME clientname]]"),
    PROXY("auth", -2, F | NA, px_cmd_auth, "connection", "1.0.0", "Authenticates the connection.", "[username] password"),
    PROXY("select", 2, F, px_cmd_select, "connection", "1.0.0", "Changes the selected database (frontdoor has database 0 only).", "index"),
    PROXY("command", -1, 0, px_cmd_command, "server", "2.8.13", "Returns detailed information about all commands."),
    PROXY("config", -2, A, px_cmd_config, "server", "2.0.0", "Gets or sets frontdoor's configuration (GET, SET, RESETSTAT, HELP).", "subcommand [arg...]"),
    PROXY("info", -1, 0, px_info_reply, "server", "1.0.0", "Returns information and statistics about the server.", "[section...]"),
    PROXY("client", -2, 0, px_cmd_client, "connection", "2.4.0", "Connection management (ID, SETNAME, GETNAME, LIST, INFO).", "subcommand [arg...]"),
    PROXY("time", 1, F, px_cmd_time, "server", "2.6.0", "Returns the server time."),
    PROXY("frontdoor", -2, A, px_cmd_frontdoor, "server", "0.1.0", "frontdoor's own reports (REPORT: A/B and backend latencies as text; AB: the latest A/B mismatches; AB RESET; HELP).", "subcommand [arg...]"),
    PROXY("lastsave", 1, F, px_cmd_lastsave, "server", "1.0.0", "Returns the Unix timestamp of the start (frontdoor does not snapshot)."),

    /* strings */
    KV("get", 2, R | F, 1, 1, 1, get, "string", "1.0.0", "Returns the string value of a key.", "key"),
    KV("set", -3, W | M, 1, 1, 1, set, "string", "1.0.0", "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", "key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]"),
    KV("setnx", 3, W | M | F, 1, 1, 1, setnx, "string", "1.0.0", "Set the string value of a key only when the key doesn't exist.", "key value"),
    KV("setex", 4, W | M, 1, 1, 1, setex, "string", "2.0.0", "Sets the string value and expiration time of a key.", "key seconds value"),
    KV("psetex", 4, W | M, 1, 1, 1, psetex, "string", "2.6.0", "Sets both string value and expiration time in milliseconds of a key.", "key milliseconds value"),
    KV("getset", 3, W | M | F, 1, 1, 1, getset, "string", "1.0.0", "Returns the previous string value of a key after setting it to a new value.", "key value"),
    KV("getdel", 2, W | F, 1, 1, 1, getdel, "string", "6.2.0", "Returns the string value of a key after deleting the key.", "key"),
    KV("getex", -2, W | F, 1, 1, 1, getex, "string", "6.2.0", "Returns the string value of a key after setting its expiration time.", "key [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|PERSIST]"),
    KV("mget", -2, R | F, 1, -1, 1, mget, "string", "1.0.0", "Atomically returns the string values of one or more keys.", "key..."),
    KV("mset", -3, W | M, 1, -1, 2, mset, "string", "1.0.1", "Atomically creates or modifies the string values of one or more keys.", "(key value)..."),
    KV("msetnx", -3, W | M, 1, -1, 2, msetnx, "string", "1.0.1", "Atomically modifies the string values of one or more keys only when all keys don't exist.", "(key value)..."),
    KV("incr", 2, W | M | F, 1, 1, 1, incr, "string", "1.0.0", "Increments the integer value of a key by one.", "key"),
    KV("incrby", 3, W | M | F, 1, 1, 1, incrby, "string", "1.0.0", "Increments the integer value of a key by a number.", "key increment"),
    KV("incrbyfloat", 3, W | M | F, 1, 1, 1, incrbyfloat, "string", "2.6.0", "Increment the floating point value of a key by a number.", "key increment"),
    KV("decr", 2, W | M | F, 1, 1, 1, decr, "string", "1.0.0", "Decrements the integer value of a key by one.", "key"),
    KV("decrby", 3, W | M | F, 1, 1, 1, decrby, "string", "1.0.0", "Decrements a number from the integer value of a key.", "key decrement"),
    KV("append", 3, W | M | F, 1, 1, 1, append, "string", "2.0.0", "Appends a string to the value of a key. Creates the key if it doesn't exist.", "key value"),
    KV("strlen", 2, R | F, 1, 1, 1, strlen, "string", "2.2.0", "Returns the length of a string value.", "key"),
    KV("getrange", 4, R, 1, 1, 1, getrange, "string", "2.4.0", "Returns a substring of the string stored at a key.", "key start end"),
    KV("substr", 4, R, 1, 1, 1, getrange, "string", "1.0.0", "Returns a substring from a string value.", "key start end"),
    KV("setrange", 4, W | M, 1, 1, 1, setrange, "string", "2.2.0", "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.", "key offset value"),

    /* keys */
    KV("del", -2, W, 1, -1, 1, del, "generic", "1.0.0", "Deletes one or more keys.", "key..."),
    KV("unlink", -2, W | F, 1, -1, 1, del, "generic", "4.0.0", "Asynchronously deletes one or more keys.", "key..."),
    KV("exists", -2, R | F, 1, -1, 1, exists, "generic", "1.0.0", "Determines whether one or more keys exist.", "key..."),
    KV("type", 2, R | F, 1, 1, 1, type, "generic", "1.0.0", "Determines the type of value stored at a key.", "key"),
    KV("expire", -3, W | F, 1, 1, 1, expire, "generic", "1.0.0", "Sets the expiration time of a key in seconds.", "key seconds [NX|XX|GT|LT]"),
    KV("pexpire", -3, W | F, 1, 1, 1, pexpire, "generic", "2.6.0", "Sets the expiration time of a key in milliseconds.", "key milliseconds [NX|XX|GT|LT]"),
    KV("expireat", -3, W | F, 1, 1, 1, expireat, "generic", "1.2.0", "Sets the expiration time of a key to a Unix timestamp.", "key unix-time-seconds [NX|XX|GT|LT]"),
    KV("pexpireat", -3, W | F, 1, 1, 1, pexpireat, "generic", "2.6.0", "Sets the expiration time of a key to a Unix milliseconds timestamp.", "key unix-time-milliseconds [NX|XX|GT|LT]"),
    KV("ttl", 2, R | F | ND, 1, 1, 1, ttl, "generic", "1.0.0", "Returns the expiration time in seconds of a key.", "key"),
    KV("pttl", 2, R | F | ND, 1, 1, 1, pttl, "generic", "2.6.0", "Returns the expiration time in milliseconds of a key.", "key"),
    KV("expiretime", 2, R | F, 1, 1, 1, expiretime, "generic", "7.0.0", "Returns the expiration time of a key as a Unix timestamp.", "key"),
    KV("pexpiretime", 2, R | F, 1, 1, 1, pexpiretime, "generic", "7.0.0", "Returns the expiration time of a key as a Unix milliseconds timestamp.", "key"),
    KV("persist", 2, W | F, 1, 1, 1, persist, "generic", "2.2.0", "Removes the expiration time of a key.", "key"),
    KV("touch", -2, R | F, 1, -1, 1, touch, "generic", "3.2.1", "Returns the number of existing keys out of those specified.", "key..."),
    KV("keys", 2, R | KB | UO, 0, 0, 0, keys, "generic", "1.0.0", "Returns all key names that match a pattern.", "pattern"),
    KV("scan", -2, R | KB | ND, 0, 0, 0, scan, "generic", "2.8.0", "Iterates over the key names in the database.", "cursor [MATCH pattern] [COUNT count] [TYPE type]"),
    KV("rename", 3, W, 1, 2, 1, rename, "generic", "1.0.0", "Renames a key and overwrites the destination.", "key newkey"),
    KV("renamenx", 3, W | F, 1, 2, 1, renamenx, "generic", "1.0.0", "Renames a key only when the target key name doesn't exist.", "key newkey"),
    KV("randomkey", 1, R | KB | ND, 0, 0, 0, randomkey, "generic", "1.0.0", "Returns a random key name from the database."),

    /* lists */
    KV("lpush", -3, W | M | F, 1, 1, 1, lpush, "list", "1.0.0", "Prepend one or multiple elements to a list"),
    KV("rpush", -3, W | M | F, 1, 1, 1, rpush, "list", "1.0.0", "Append one or multiple elements to a list"),
    KV("lpushx", -3, W | M | F, 1, 1, 1, lpushx, "list", "2.2.0", "Prepend an element to a list, only if the list exists"),
    KV("rpushx", -3, W | M | F, 1, 1, 1, rpushx, "list", "2.2.0", "Append an element to a list, only if the list exists"),
    KV("lpop", -2, W | F, 1, 1, 1, lpop, "list", "1.0.0", "Remove and get the first elements in a list"),
    KV("rpop", -2, W | F, 1, 1, 1, rpop, "list", "1.0.0", "Remove and get the last elements in a list"),
    KV("llen", 2, R | F, 1, 1, 1, llen, "list", "1.0.0", "Get the length of a list"),
    KV("lrange", 4, R, 1, 1, 1, lrange, "list", "1.0.0", "Get a range of elements from a list"),
    KV("lindex", 3, R, 1, 1, 1, lindex, "list", "1.0.0", "Get an element from a list by its index"),
    KV("lset", 4, W | M, 1, 1, 1, lset, "list", "1.0.0", "Set the value of an element in a list by its index"),
    KV("ltrim", 4, W, 1, 1, 1, ltrim, "list", "1.0.0", "Trim a list to the specified range"),
    KV("lrem", 4, W, 1, 1, 1, lrem, "list", "1.0.0", "Remove elements from a list"),
    KV("linsert", 5, W | M, 1, 1, 1, linsert, "list", "2.2.0", "Insert an element before or after another element in a list"),
    KV("lpos", -3, R, 1, 1, 1, lpos, "list", "6.0.6", "Return the index of matching elements on a list"),
    KV("rpoplpush", 3, W | M, 1, 2, 1, rpoplpush, "list", "1.2.0", "Remove the last element in a list, prepend it to another list and return it"),
    KV("lmove", 5, W | M, 1, 2, 1, lmove, "list", "6.2.0", "Pop an element from a list, push it to another list and return it"),

    /* hashes */
    KV("hset", -4, W | M | F, 1, 1, 1, hset, "hash", "2.0.0", "Set the string value of a hash field"),
    KV("hsetnx", 4, W | M | F, 1, 1, 1, hsetnx, "hash", "2.0.0", "Set the value of a hash field, only if the field does not exist"),
    KV("hmset", -4, W | M | F, 1, 1, 1, hmset, "hash", "2.0.0", "Set multiple hash fields to multiple values"),
    KV("hget", 3, R | F, 1, 1, 1, hget, "hash", "2.0.0", "Get the value of a hash field"),
    KV("hmget", -3, R | F, 1, 1, 1, hmget, "hash", "2.0.0", "Get the values of all the given hash fields"),
    KV("hdel", -3, W | F, 1, 1, 1, hdel, "hash", "2.0.0", "Delete one or more hash fields"),
    KV("hlen", 2, R | F, 1, 1, 1, hlen, "hash", "2.0.0", "Get the number of fields in a hash"),
    KV("hexists", 3, R | F, 1, 1, 1, hexists, "hash", "2.0.0", "Determine if a hash field exists"),
    KV("hgetall", 2, R | PR, 1, 1, 1, hgetall, "hash", "2.0.0", "Get all the fields and values in a hash"),
    KV("hkeys", 2, R | UO, 1, 1, 1, hkeys, "hash", "2.0.0", "Get all the fields in a hash"),
    KV("hvals", 2, R | UO, 1, 1, 1, hvals, "hash", "2.0.0", "Get all the values in a hash"),
    KV("hincrby", 4, W | M | F, 1, 1, 1, hincrby, "hash", "2.0.0", "Increment the integer value of a hash field by the given number"),
    KV("hincrbyfloat", 4, W | M | F, 1, 1, 1, hincrbyfloat, "hash", "2.6.0", "Increment the float value of a hash field by the given amount"),
    KV("hstrlen", 3, R | F, 1, 1, 1, hstrlen, "hash", "3.2.0", "Get the length of the value of a hash field"),
    KV("hscan", -3, R | ND, 1, 1, 1, hscan, "hash", "2.8.0", "Incrementally iterate hash fields and associated values"),
    KV("hrandfield", -2, R | ND, 1, 1, 1, hrandfield, "hash", "6.2.0", "Get one or multiple random fields from a hash"),

    /* sets */
    KV("sadd", -3, W | M | F, 1, 1, 1, sadd, "set", "1.0.0", "Add one or more members to a set"),
    KV("srem", -3, W | F, 1, 1, 1, srem, "set", "1.0.0", "Remove one or more members from a set"),
    KV("spop", -2, W | F | ND, 1, 1, 1, spop, "set", "1.0.0", "Remove and return one or multiple random members from a set"),
    KV("srandmember", -2, R | ND, 1, 1, 1, srandmember, "set", "1.0.0", "Get one or multiple random members from a set"),
    KV("smembers", 2, R | UO, 1, 1, 1, smembers, "set", "1.0.0", "Get all the members in a set"),
    KV("sismember", 3, R | F, 1, 1, 1, sismember, "set", "1.0.0", "Determine if a given value is a member of a set"),
    KV("smismember", -3, R | F, 1, 1, 1, smismember, "set", "6.2.0", "Returns the membership associated with the given elements for a set"),
    KV("scard", 2, R | F, 1, 1, 1, scard, "set", "1.0.0", "Get the number of members in a set"),
    KV("smove", 4, W | F, 1, 2, 1, smove, "set", "1.0.0", "Move a member from one set to another"),
    KV("sinter", -2, R | UO, 1, -1, 1, sinter, "set", "1.0.0", "Intersect multiple sets"),
    KV("sunion", -2, R | UO, 1, -1, 1, sunion, "set", "1.0.0", "Add multiple sets"),
    KV("sdiff", -2, R | UO, 1, -1, 1, sdiff, "set", "1.0.0", "Subtract multiple sets"),
    KV("sinterstore", -3, W | M, 1, -1, 1, sinterstore, "set", "1.0.0", "Intersect multiple sets and store the resulting set in a key"),
    KV("sunionstore", -3, W | M, 1, -1, 1, sunionstore, "set", "1.0.0", "Add multiple sets and store the resulting set in a key"),
    KV("sdiffstore", -3, W | M, 1, -1, 1, sdiffstore, "set", "1.0.0", "Subtract multiple sets and store the resulting set in a key"),
    KV("sintercard", -3, R, 0, 0, 0, sintercard, "set", "7.0.0", "Intersect multiple sets and return the cardinality of the result"),
    KV("sscan", -3, R | ND, 1, 1, 1, sscan, "set", "2.8.0", "Incrementally iterate Set elements"),

    /* sorted sets */
    KV("zadd", -4, W | M | F, 1, 1, 1, zadd, "sorted-set", "1.2.0", "Add one or more members to a sorted set, or update its score if it already exists"),
    KV("zincrby", 4, W | M | F, 1, 1, 1, zincrby, "sorted-set", "1.2.0", "Increment the score of a member in a sorted set"),
    KV("zrem", -3, W | F, 1, 1, 1, zrem, "sorted-set", "1.2.0", "Remove one or more members from a sorted set"),
    KV("zscore", 3, R | F, 1, 1, 1, zscore, "sorted-set", "1.2.0", "Get the score associated with the given member in a sorted set"),
    KV("zmscore", -3, R | F, 1, 1, 1, zmscore, "sorted-set", "6.2.0", "Get the score associated with the given members in a sorted set"),
    KV("zcard", 2, R | F, 1, 1, 1, zcard, "sorted-set", "1.2.0", "Get the number of members in a sorted set"),
    KV("zcount", 4, R | F, 1, 1, 1, zcount, "sorted-set", "2.0.0", "Count the members in a sorted set with scores within the given values"),
    KV("zlexcount", 4, R | F, 1, 1, 1, zlexcount, "sorted-set", "2.8.9", "Count the number of members in a sorted set between a given lexicographical range"),
    KV("zrank", 3, R | F, 1, 1, 1, zrank, "sorted-set", "2.0.0", "Determine the index of a member in a sorted set"),
    KV("zrevrank", 3, R | F, 1, 1, 1, zrevrank, "sorted-set", "2.0.0", "Determine the index of a member in a sorted set, with scores ordered from high to low"),
    KV("zrange", -4, R, 1, 1, 1, zrange, "sorted-set", "1.2.0", "Return a range of members in a sorted set"),
    KV("zrevrange", -4, R, 1, 1, 1, zrevrange, "sorted-set", "1.2.0", "Return a range of members in a sorted set, by index, with scores ordered from high to low"),
    KV("zrangebyscore", -4, R, 1, 1, 1, zrangebyscore, "sorted-set", "1.0.5", "Return a range of members in a sorted set, by score"),
    KV("zrevrangebyscore", -4, R, 1, 1, 1, zrevrangebyscore, "sorted-set", "2.2.0", "Return a range of members in a sorted set, by score, with scores ordered from high to low"),
    KV("zrangebylex", -4, R, 1, 1, 1, zrangebylex, "sorted-set", "2.8.9", "Return a range of members in a sorted set, by lexicographical range"),
    KV("zrevrangebylex", -4, R, 1, 1, 1, zrevrangebylex, "sorted-set", "2.8.9", "Return a range of members in a sorted set, by lexicographical range, ordered from higher to lower strings."),
    KV("zpopmin", -2, W | F, 1, 1, 1, zpopmin, "sorted-set", "5.0.0", "Remove and return members with the lowest scores in a sorted set"),
    KV("zpopmax", -2, W | F, 1, 1, 1, zpopmax, "sorted-set", "5.0.0", "Remove and return members with the highest scores in a sorted set"),
    KV("zremrangebyrank", 4, W, 1, 1, 1, zremrangebyrank, "sorted-set", "2.0.0", "Remove all members in a sorted set within the given indexes"),
    KV("zremrangebyscore", 4, W, 1, 1, 1, zremrangebyscore, "sorted-set", "1.2.0", "Remove all members in a sorted set within the given scores"),
    KV("zremrangebylex", 4, W, 1, 1, 1, zremrangebylex, "sorted-set", "2.8.9", "Remove all members in a sorted set between the given lexicographical range"),
    KV("zscan", -3, R | ND, 1, 1, 1, zscan, "sorted-set", "2.8.0", "Incrementally iterate sorted sets elements and associated scores"),

    /* server, over the data */
    KV("dbsize", 1, R | F | KB, 0, 0, 0, dbsize, "server", "1.0.0", "Returns the number of keys in the database."),
    KV("flushdb", -1, W | KB, 0, 0, 0, flushdb, "server", "1.0.0", "Removes all keys from the current database.", "[ASYNC|SYNC]"),
    KV("flushall", -1, W | KB, 0, 0, 0, flushdb, "server", "1.0.0", "Removes all keys from all databases.", "[ASYNC|SYNC]"),
};

#define NCOMMANDS (sizeof(table) / sizeof(table[0]))
#define HASH_SIZE 512   /* power of two, > 2x the table */
static px_command *buckets[HASH_SIZE];

static unsigned hash_name(const char *s, size_t n) {
    unsigned h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)tolower((unsigned char)s[i])) * 16777619u;
    return h;
}

void px_commands_init(void) {
    for (size_t i = 0; i < NCOMMANDS; i++) {
        table[i].id = (int)i;
        table[i].namelen = strlen(table[i].name);
        unsigned h = hash_name(table[i].name, table[i].namelen) & (HASH_SIZE - 1);
        while (buckets[h]) h = (h + 1) & (HASH_SIZE - 1);
        buckets[h] = &table[i];
    }
}

px_command *px_command_lookup(const char *name, size_t len) {
    if (len == 0 || len > 32) return NULL;
    unsigned h = hash_name(name, len) & (HASH_SIZE - 1);
    for (px_command *c; (c = buckets[h]) != NULL; h = (h + 1) & (HASH_SIZE - 1))
        if (c->namelen == len && !strncasecmp(c->name, name, len)) return c;
    return NULL;
}

px_command *px_commands_table(size_t *count) {
    *count = NCOMMANDS;
    return table;
}
