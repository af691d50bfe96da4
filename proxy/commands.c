/* commands.c — the one command table. A new command is one row here plus its
 * handler (proxy/builtin.c for proxy-served commands, storage/kv/ for the
 * Redis types). Arities, flags and key positions are Redis 7.0's. */
#include "commands.h"
#include "builtin.h"

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

/* name, arity, flags, first/last/step key, proxy handler, kv handler, group, since, summary */
#define PROXY(n, ar, fl, h, grp, since, sum) {n, ar, fl, 0, 0, 0, h, NULL, grp, since, sum, 0, 0, 0, 0}
#define KV(n, ar, fl, f, l, s, h, grp, since, sum) {n, ar, fl, f, l, s, NULL, kv_cmd_##h, grp, since, sum, 0, 0, 0, 0}

static px_command table[] = {
    /* served by the proxy */
    PROXY("ping", -1, F, px_cmd_ping, "connection", "1.0.0", "Returns the server's liveliness response."),
    PROXY("echo", 2, F, px_cmd_echo, "connection", "1.0.0", "Returns the given string."),
    PROXY("quit", -1, F | NA, px_cmd_quit, "connection", "1.0.0", "Closes the connection."),
    PROXY("hello", -1, F | NA, px_cmd_hello, "connection", "6.0.0", "Handshakes with the server."),
    PROXY("auth", -2, F | NA, px_cmd_auth, "connection", "1.0.0", "Authenticates the connection."),
    PROXY("select", 2, F, px_cmd_select, "connection", "1.0.0", "Changes the selected database (frontdoor has database 0 only)."),
    PROXY("command", -1, 0, px_cmd_command, "server", "2.8.13", "Returns detailed information about all commands."),
    PROXY("config", -2, A, px_cmd_config, "server", "2.0.0", "Gets or sets frontdoor's configuration (GET, SET, RESETSTAT, HELP)."),
    PROXY("info", -1, 0, px_info_reply, "server", "1.0.0", "Returns information and statistics about the server."),
    PROXY("client", -2, 0, px_cmd_client, "connection", "2.4.0", "Connection management (ID, SETNAME, GETNAME, LIST, INFO)."),
    PROXY("time", 1, F, px_cmd_time, "server", "2.6.0", "Returns the server time."),
    PROXY("lastsave", 1, F, px_cmd_lastsave, "server", "1.0.0", "Returns the Unix timestamp of the start (frontdoor does not snapshot)."),

    /* strings */
    KV("get", 2, R | F, 1, 1, 1, get, "string", "1.0.0", "Returns the string value of a key."),
    KV("set", -3, W | M, 1, 1, 1, set, "string", "1.0.0", "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist."),
    KV("setnx", 3, W | M | F, 1, 1, 1, setnx, "string", "1.0.0", "Set the string value of a key only when the key doesn't exist."),
    KV("setex", 4, W | M, 1, 1, 1, setex, "string", "2.0.0", "Sets the string value and expiration time of a key."),
    KV("psetex", 4, W | M, 1, 1, 1, psetex, "string", "2.6.0", "Sets both string value and expiration time in milliseconds of a key."),
    KV("getset", 3, W | M | F, 1, 1, 1, getset, "string", "1.0.0", "Returns the previous string value of a key after setting it to a new value."),
    KV("getdel", 2, W | F, 1, 1, 1, getdel, "string", "6.2.0", "Returns the string value of a key after deleting the key."),
    KV("getex", -2, W | F, 1, 1, 1, getex, "string", "6.2.0", "Returns the string value of a key after setting its expiration time."),
    KV("mget", -2, R | F, 1, -1, 1, mget, "string", "1.0.0", "Atomically returns the string values of one or more keys."),
    KV("mset", -3, W | M, 1, -1, 2, mset, "string", "1.0.1", "Atomically creates or modifies the string values of one or more keys."),
    KV("msetnx", -3, W | M, 1, -1, 2, msetnx, "string", "1.0.1", "Atomically modifies the string values of one or more keys only when all keys don't exist."),
    KV("incr", 2, W | M | F, 1, 1, 1, incr, "string", "1.0.0", "Increments the integer value of a key by one."),
    KV("incrby", 3, W | M | F, 1, 1, 1, incrby, "string", "1.0.0", "Increments the integer value of a key by a number."),
    KV("incrbyfloat", 3, W | M | F, 1, 1, 1, incrbyfloat, "string", "2.6.0", "Increment the floating point value of a key by a number."),
    KV("decr", 2, W | M | F, 1, 1, 1, decr, "string", "1.0.0", "Decrements the integer value of a key by one."),
    KV("decrby", 3, W | M | F, 1, 1, 1, decrby, "string", "1.0.0", "Decrements a number from the integer value of a key."),
    KV("append", 3, W | M | F, 1, 1, 1, append, "string", "2.0.0", "Appends a string to the value of a key. Creates the key if it doesn't exist."),
    KV("strlen", 2, R | F, 1, 1, 1, strlen, "string", "2.2.0", "Returns the length of a string value."),
    KV("getrange", 4, R, 1, 1, 1, getrange, "string", "2.4.0", "Returns a substring of the string stored at a key."),
    KV("substr", 4, R, 1, 1, 1, getrange, "string", "1.0.0", "Returns a substring from a string value."),
    KV("setrange", 4, W | M, 1, 1, 1, setrange, "string", "2.2.0", "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist."),

    /* keys */
    KV("del", -2, W, 1, -1, 1, del, "generic", "1.0.0", "Deletes one or more keys."),
    KV("unlink", -2, W | F, 1, -1, 1, del, "generic", "4.0.0", "Asynchronously deletes one or more keys."),
    KV("exists", -2, R | F, 1, -1, 1, exists, "generic", "1.0.0", "Determines whether one or more keys exist."),
    KV("type", 2, R | F, 1, 1, 1, type, "generic", "1.0.0", "Determines the type of value stored at a key."),
    KV("expire", -3, W | F, 1, 1, 1, expire, "generic", "1.0.0", "Sets the expiration time of a key in seconds."),
    KV("pexpire", -3, W | F, 1, 1, 1, pexpire, "generic", "2.6.0", "Sets the expiration time of a key in milliseconds."),
    KV("expireat", -3, W | F, 1, 1, 1, expireat, "generic", "1.2.0", "Sets the expiration time of a key to a Unix timestamp."),
    KV("pexpireat", -3, W | F, 1, 1, 1, pexpireat, "generic", "2.6.0", "Sets the expiration time of a key to a Unix milliseconds timestamp."),
    KV("ttl", 2, R | F, 1, 1, 1, ttl, "generic", "1.0.0", "Returns the expiration time in seconds of a key."),
    KV("pttl", 2, R | F, 1, 1, 1, pttl, "generic", "2.6.0", "Returns the expiration time in milliseconds of a key."),
    KV("expiretime", 2, R | F, 1, 1, 1, expiretime, "generic", "7.0.0", "Returns the expiration time of a key as a Unix timestamp."),
    KV("pexpiretime", 2, R | F, 1, 1, 1, pexpiretime, "generic", "7.0.0", "Returns the expiration time of a key as a Unix milliseconds timestamp."),
    KV("persist", 2, W | F, 1, 1, 1, persist, "generic", "2.2.0", "Removes the expiration time of a key."),
    KV("touch", -2, R | F, 1, -1, 1, touch, "generic", "3.2.1", "Returns the number of existing keys out of those specified."),
    KV("keys", 2, R | KB, 0, 0, 0, keys, "generic", "1.0.0", "Returns all key names that match a pattern."),
    KV("scan", -2, R | KB, 0, 0, 0, scan, "generic", "2.8.0", "Iterates over the key names in the database."),
    KV("rename", 3, W, 1, 2, 1, rename, "generic", "1.0.0", "Renames a key and overwrites the destination."),
    KV("renamenx", 3, W | F, 1, 2, 1, renamenx, "generic", "1.0.0", "Renames a key only when the target key name doesn't exist."),
    KV("randomkey", 1, R | KB, 0, 0, 0, randomkey, "generic", "1.0.0", "Returns a random key name from the database."),

    /* server, over the data */
    KV("dbsize", 1, R | F | KB, 0, 0, 0, dbsize, "server", "1.0.0", "Returns the number of keys in the database."),
    KV("flushdb", -1, W | KB, 0, 0, 0, flushdb, "server", "1.0.0", "Removes all keys from the current database."),
    KV("flushall", -1, W | KB, 0, 0, 0, flushdb, "server", "1.0.0", "Removes all keys from all databases."),
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
        unsigned h = hash_name(table[i].name, strlen(table[i].name)) & (HASH_SIZE - 1);
        while (buckets[h]) h = (h + 1) & (HASH_SIZE - 1);
        buckets[h] = &table[i];
    }
}

px_command *px_command_lookup(const char *name, size_t len) {
    if (len == 0 || len > 32) return NULL;
    unsigned h = hash_name(name, len) & (HASH_SIZE - 1);
    for (px_command *c; (c = buckets[h]) != NULL; h = (h + 1) & (HASH_SIZE - 1))
        if (strlen(c->name) == len && !strncasecmp(c->name, name, len)) return c;
    return NULL;
}

px_command *px_commands_table(size_t *count) {
    *count = NCOMMANDS;
    return table;
}
