/* introspect.c — OBJECT / MEMORY subcommands: see introspect.h. */
#include <stdio.h>
#include <string.h>
#include "introspect.h"

static const char *const object_help[] = {
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
    "    Prints this help.",
    NULL
};

static const char *const memory_help[] = {
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return memory problems reports.",
    "MALLOC-STATS",
    "    Return internal statistics report from the memory allocator.",
    "PURGE",
    "    Attempt to purge dirty pages for reclamation by the allocator.",
    "STATS",
    "    Return information about the memory usage of the server.",
    "USAGE <key> [SAMPLES <count>]",
    "    Return memory in bytes used by <key> and its value. Nested values are",
    "    sampled up to <count> times (default: 5, 0 means sample all).",
    "HELP",
    "    Prints this help.",
    NULL
};

static const char ERR_FREQ[] = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. "
    "Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";
static const char ERR_IDLE[] = "ERR frontdoor does not track key access times (OBJECT IDLETIME)";
static const char ERR_MEMORY_SUB[] = "ERR frontdoor serves MEMORY USAGE and MEMORY HELP only "
    "(the store's own figures are in INFO)";

static int arity_error(resp_out *out, const char *full)
{
    char msg[96];
    snprintf(msg, sizeof msg, "ERR wrong number of arguments for '%s' command", full);
    return resp_add_error(out, msg) ? -1 : 1;
}

/* processCommand's text for a container's unknown subcommand */
static int unknown_sub(resp_out *out, const resp_arg *a, const char *cmd)
{
    char msg[256];
    int n = a->len > 128 ? 128 : (int)a->len;
    snprintf(msg, sizeof msg, "ERR unknown subcommand '%.*s'. Try %s HELP.", n, a->ptr, cmd);
    for (char *q = msg; *q; q++) if (*q == '\r' || *q == '\n') *q = ' ';
    return resp_add_error(out, msg) ? -1 : 1;
}

static int help(resp_out *out, const char *const *lines)
{
    long long n = 0;
    while (lines[n]) n++;
    if (resp_add_array(out, n)) return -1;
    for (long long i = 0; i < n; i++) if (resp_add_status(out, lines[i])) return -1;
    return 1;
}

int fd_object_parse(const resp_arg *argv, int argc, resp_out *out, int *sub)
{
    const resp_arg *a = &argv[1];
    if (resp_arg_is(a, "help")) return argc != 2 ? arity_error(out, "object|help") : help(out, object_help);
    static const struct { const char *name, *full; int sub; } subs[] = {
        { "encoding", "object|encoding", FD_OBJ_ENCODING }, { "refcount", "object|refcount", FD_OBJ_REFCOUNT },
        { "idletime", "object|idletime", FD_OBJ_IDLETIME }, { "freq", "object|freq", FD_OBJ_FREQ },
    };
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        if (!resp_arg_is(a, subs[i].name)) continue;
        if (argc != 3) return arity_error(out, subs[i].full);
        *sub = subs[i].sub;
        return 0;
    }
    return unknown_sub(out, a, "OBJECT");
}

int fd_object_reply(int sub, int type, const char *v, size_t vl, resp_out *out)
{
    const char *enc;
    long long ll;
    switch (sub) {
    case FD_OBJ_REFCOUNT: return resp_add_int(out, 1) ? -1 : 0;
    case FD_OBJ_IDLETIME: return resp_add_error(out, ERR_IDLE) ? -1 : 0;
    case FD_OBJ_FREQ:     return resp_add_error(out, ERR_FREQ) ? -1 : 0;
    default: break;
    }
    switch (type) {
    case FD_OBJ_STRING:
        enc = (vl <= 20 && resp_str2ll(v, vl, &ll) == 0) ? "int" : vl <= 44 ? "embstr" : "raw";
        break;
    case FD_OBJ_LIST: enc = "quicklist"; break;
    case FD_OBJ_ZSET: enc = "skiplist"; break;
    default:          enc = "hashtable"; break;
    }
    return resp_add_bulk(out, enc, strlen(enc)) ? -1 : 0;
}

int fd_memory_parse(const resp_arg *argv, int argc, resp_out *out, long long *samples)
{
    const resp_arg *a = &argv[1];
    if (resp_arg_is(a, "help")) return argc != 2 ? arity_error(out, "memory|help") : help(out, memory_help);
    static const char *const other[] = { "stats", "doctor", "malloc-stats", "purge" };
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        if (!resp_arg_is(a, other[i])) continue;
        if (argc != 2) {
            char full[32];
            snprintf(full, sizeof full, "memory|%s", other[i]);
            return arity_error(out, full);
        }
        return resp_add_error(out, ERR_MEMORY_SUB) ? -1 : 1;
    }
    if (!resp_arg_is(a, "usage")) return unknown_sub(out, a, "MEMORY");
    if (argc < 3) return arity_error(out, "memory|usage");
    *samples = 5;
    for (int j = 3; j < argc; j++) {
        if (resp_arg_is(&argv[j], "samples") && j + 1 < argc) {
            if (resp_str2ll(argv[j + 1].ptr, argv[j + 1].len, samples) != 0)
                return resp_add_error(out, "ERR value is not an integer or out of range") ? -1 : 1;
            if (*samples < 0) return resp_add_error(out, "ERR syntax error") ? -1 : 1;
            j++;
        } else {
            return resp_add_error(out, "ERR syntax error") ? -1 : 1;
        }
    }
    return 0;
}
