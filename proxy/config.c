/* config.c — the directive table and everything that reads or writes it.
 * A directive is one row: {name, type, offset into px_settings, default,
 * bounds, flags}. File, command line and CONFIG GET/SET all go through
 * px_config_set / format_value, so a directive is added in one place. */
#include "config.h"
#include "log.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

px_settings px_cfg;

enum ctype { T_INT, T_MEM, T_STR, T_ENUM, T_CONST };
enum { F_IMMUTABLE = 1 };

typedef struct directive {
    const char *name;
    enum ctype  type;
    size_t      off;          /* into px_settings; unused for T_CONST */
    const char *def;          /* default, as text */
    long long   min, max;
    int         flags;
    const char *const *enums; /* T_ENUM: names, index = stored int value */
} directive;

static const char *const durability_names[] = {"nosync", "sync", NULL};
static const char *const loglevel_names[] = {"debug", "verbose", "notice", "warning", NULL};
static const char *const compression_names[] = {"snappy", "none", NULL};   /* = FD_LEVELDB_* */
static const char *const mongo_j_names[] = {"auto", "yes", "no", NULL};      /* = FD_MONGO_J_* */

#define OFF(f) offsetof(px_settings, f)
#define GB (1024LL * 1024 * 1024)
/* Kept alphabetical: CONFIG GET * lists them in this order. */
static const directive directives[] = {
    {"appendonly", T_CONST, 0, "no", 0, 0, F_IMMUTABLE, NULL},
    {"backend", T_STR, OFF(backend), "lmdb", 0, 0, F_IMMUTABLE, NULL},
    {"backend-timeout", T_INT, OFF(backend_timeout), "1000", 1, 3600000, 0, NULL},
    {"bind", T_STR, OFF(bind), "127.0.0.1", 0, 0, F_IMMUTABLE, NULL},
    {"client-output-buffer-limit", T_MEM, OFF(client_output_buffer_limit), "512mb", 0, LLONG_MAX, 0, NULL},
    {"client-query-buffer-limit", T_MEM, OFF(client_query_buffer_limit), "1gb", 1024 * 1024, LLONG_MAX, 0, NULL},
    {"databases", T_CONST, 0, "1", 0, 0, F_IMMUTABLE, NULL},
    {"dir", T_STR, OFF(dir), "./frontdoor-data", 0, 0, F_IMMUTABLE, NULL},
    {"durability", T_ENUM, OFF(durability), "sync", 0, 0, F_IMMUTABLE, durability_names},
    {"hz", T_INT, OFF(hz), "10", 1, 500, 0, NULL},
    {"leveldb-block-cache-size", T_MEM, OFF(leveldb_block_cache_size), "64mb", 1024 * 1024, 1LL << 40, F_IMMUTABLE, NULL},
    {"leveldb-compression", T_ENUM, OFF(leveldb_compression), "snappy", 0, 0, F_IMMUTABLE, compression_names},
    {"leveldb-max-open-files", T_INT, OFF(leveldb_max_open_files), "1000", 64, 1000000, F_IMMUTABLE, NULL},
    {"leveldb-write-buffer-size", T_MEM, OFF(leveldb_write_buffer_size), "64mb", 64 * 1024, GB, F_IMMUTABLE, NULL},
    {"lmdb-map-size", T_MEM, OFF(lmdb_map_size), "1gb", 1024 * 1024, 1LL << 46, F_IMMUTABLE, NULL},
    {"logfile", T_STR, OFF(logfile), "", 0, 0, F_IMMUTABLE, NULL},
    {"loglevel", T_ENUM, OFF(loglevel), "notice", 0, 0, 0, loglevel_names},
    {"maxclients", T_INT, OFF(maxclients), "10000", 1, 1000000, 0, NULL},
    {"mongo-database", T_STR, OFF(mongo_database), "frontdoor", 0, 0, F_IMMUTABLE, NULL},
    {"mongo-j", T_ENUM, OFF(mongo_j), "auto", 0, 0, F_IMMUTABLE, mongo_j_names},
    {"mongo-uri", T_STR, OFF(mongo_uri), "mongodb://127.0.0.1:27017", 0, 0, F_IMMUTABLE, NULL},
    {"mongo-w", T_STR, OFF(mongo_w), "", 0, 0, F_IMMUTABLE, NULL},
    {"mongo-workers", T_INT, OFF(mongo_workers), "0", 0, 1024, F_IMMUTABLE, NULL},
    {"mongo-wtimeout", T_INT, OFF(mongo_wtimeout), "0", 0, 3600000, F_IMMUTABLE, NULL},
    {"pidfile", T_STR, OFF(pidfile), "", 0, 0, F_IMMUTABLE, NULL},
    {"port", T_INT, OFF(port), "6380", 0, 65535, F_IMMUTABLE, NULL},
    {"proto-max-bulk-len", T_MEM, OFF(proto_max_bulk_len), "512mb", 1024 * 1024, LLONG_MAX, 0, NULL},
    {"redis-address", T_STR, OFF(redis_address), "127.0.0.1:6379", 0, 0, F_IMMUTABLE, NULL},
    {"redis-cluster-seeds", T_STR, OFF(redis_cluster_seeds), "127.0.0.1:7000", 0, 0, F_IMMUTABLE, NULL},
    {"redis-db", T_INT, OFF(redis_db), "0", 0, 1000000, F_IMMUTABLE, NULL},
    {"redis-password", T_STR, OFF(redis_password), "", 0, 0, F_IMMUTABLE, NULL},
    {"redis-pool-size", T_INT, OFF(redis_pool_size), "4", 1, 1024, F_IMMUTABLE, NULL},
    {"requirepass", T_STR, OFF(requirepass), "", 0, 0, 0, NULL},
    {"save", T_CONST, 0, "", 0, 0, F_IMMUTABLE, NULL},
    {"tcp-backlog", T_INT, OFF(tcp_backlog), "511", 0, INT_MAX, F_IMMUTABLE, NULL},
    {"timeout", T_INT, OFF(timeout), "0", 0, INT_MAX, 0, NULL},
    {"unixsocket", T_STR, OFF(unixsocket), "", 0, 0, F_IMMUTABLE, NULL},
    {"unixsocketperm", T_INT, OFF(unixsocketperm), "0", 0, 0777, F_IMMUTABLE, NULL},
};
#define NDIRECTIVES (sizeof(directives) / sizeof(directives[0]))

static const directive *find(const char *name) {
    for (size_t i = 0; i < NDIRECTIVES; i++)
        if (!strcasecmp(directives[i].name, name)) return &directives[i];
    return NULL;
}

/* Redis's memtoll: 1k = 1000, 1kb = 1024, likewise m/mb and g/gb. */
static int parse_mem(const char *s, long long *out) {
    char *end;
    errno = 0;
    if (!*s || isspace((unsigned char)*s)) return -1;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || v < 0) return -1;
    long long mul = 1;
    if (!*end || !strcasecmp(end, "b")) mul = 1;
    else if (!strcasecmp(end, "k")) mul = 1000;
    else if (!strcasecmp(end, "kb")) mul = 1024;
    else if (!strcasecmp(end, "m")) mul = 1000 * 1000;
    else if (!strcasecmp(end, "mb")) mul = 1024 * 1024;
    else if (!strcasecmp(end, "g")) mul = 1000LL * 1000 * 1000;
    else if (!strcasecmp(end, "gb")) mul = GB;
    else return -1;
    if (v > LLONG_MAX / mul) return -1;
    *out = v * mul;
    return 0;
}

static int set_value(const directive *d, const char *value, char *err, size_t errlen) {
    char *base = (char *)&px_cfg;
    long long v;
    switch (d->type) {
    case T_CONST:
        if (strcmp(value, d->def)) {
            snprintf(err, errlen, "frontdoor keeps '%s' at \"%s\" (durability is set with 'durability')", d->name, d->def);
            return -1;
        }
        return 0;
    case T_INT:
    case T_MEM: {
        int bad = d->type == T_MEM ? parse_mem(value, &v) : resp_str2ll(value, strlen(value), &v);
        if (bad) {
            snprintf(err, errlen, "argument couldn't be parsed into an integer%s", d->type == T_MEM ? " (units k, kb, m, mb, g, gb allowed)" : "");
            return -1;
        }
        if (v < d->min || v > d->max) {
            snprintf(err, errlen, "argument must be between %lld and %lld inclusive", d->min, d->max);
            return -1;
        }
        *(long long *)(base + d->off) = v;
        return 0;
    }
    case T_ENUM:
        for (int i = 0; d->enums[i]; i++)
            if (!strcasecmp(d->enums[i], value)) { *(int *)(base + d->off) = i; return 0; }
        snprintf(err, errlen, "argument must be one of:");
        for (int i = 0; d->enums[i]; i++) {
            size_t l = strlen(err);
            snprintf(err + l, errlen - l, " %s", d->enums[i]);
        }
        return -1;
    case T_STR: {
        char *copy = strdup(value);
        if (!copy) { snprintf(err, errlen, "out of memory"); return -1; }
        char **slot = (char **)(base + d->off);
        free(*slot);
        *slot = copy;
        return 0;
    }
    }
    return -1;
}

static int format_value(const directive *d, char *buf, size_t buflen) {
    const char *base = (const char *)&px_cfg;
    switch (d->type) {
    case T_CONST: return snprintf(buf, buflen, "%s", d->def);
    case T_INT:
    case T_MEM: return snprintf(buf, buflen, "%lld", *(const long long *)(base + d->off));
    case T_ENUM: return snprintf(buf, buflen, "%s", d->enums[*(const int *)(base + d->off)]);
    case T_STR: return snprintf(buf, buflen, "%s", *(char *const *)(base + d->off));
    }
    return 0;
}

void px_config_init(void) {
    char err[256];
    for (size_t i = 0; i < NDIRECTIVES; i++)
        if (directives[i].type != T_CONST && set_value(&directives[i], directives[i].def, err, sizeof err))
            px_fatal("bad default for %s: %s", directives[i].name, err);
    free(px_cfg.config_file);
    px_cfg.config_file = strdup("");
}

int px_config_set(const char *name, const char *value, int runtime, char *err, size_t errlen) {
    const directive *d = find(name);
    if (!d) { snprintf(err, errlen, "unknown directive '%s'", name); return -1; }
    if (runtime && (d->flags & F_IMMUTABLE)) { snprintf(err, errlen, "can't set immutable config"); return -1; }
    return set_value(d, value, err, errlen);
}

int px_config_format(const char *name, char *buf, size_t buflen) {
    const directive *d = find(name);
    if (!d) return -1;
    format_value(d, buf, buflen);
    return 0;
}

void px_config_get_reply(resp_out *o, int npat, resp_arg *pats) {
    const directive *hit[NDIRECTIVES];
    size_t n = 0;
    for (size_t i = 0; i < NDIRECTIVES; i++)
        for (int p = 0; p < npat; p++)
            if (resp_glob_match(pats[p].ptr, pats[p].len, directives[i].name, strlen(directives[i].name), 1)) {
                hit[n++] = &directives[i];
                break;
            }
    resp_add_map(o, (long long)n);
    for (size_t i = 0; i < n; i++) {
        char buf[4096];
        int l = format_value(hit[i], buf, sizeof buf);
        resp_add_bulk_cstr(o, hit[i]->name);
        resp_add_bulk(o, buf, (size_t)l < sizeof buf ? (size_t)l : sizeof buf - 1);
    }
}

/* Split a config line into words, redis.conf style: blanks separate words,
 * "double quotes" take \n \r \t \" \\ \xHH escapes, 'single quotes' take \'.
 * Words are written back into line (NUL-terminated in place). Returns the
 * word count, or -1 on unbalanced quotes. */
static int split_line(char *line, char **words, int max) {
    int n = 0;
    char *r = line, *w;
    for (;;) {
        while (*r && isspace((unsigned char)*r)) r++;
        if (!*r) return n;
        if (n == max) return -1;
        words[n++] = w = r;
        int inq = 0, insq = 0;
        for (;;) {
            if (inq) {
                if (!*r) return -1;
                if (r[0] == '\\' && r[1] == 'x' && isxdigit((unsigned char)r[2]) && isxdigit((unsigned char)r[3])) {
                    char hex[3] = {r[2], r[3], 0};
                    *w++ = (char)strtol(hex, NULL, 16);
                    r += 4;
                } else if (r[0] == '\\' && r[1]) {
                    char c = r[1];
                    *w++ = c == 'n' ? '\n' : c == 'r' ? '\r' : c == 't' ? '\t' : c == 'b' ? '\b' : c == 'a' ? '\a' : c;
                    r += 2;
                } else if (*r == '"') {
                    r++;
                    if (*r && !isspace((unsigned char)*r)) return -1;
                    break;
                } else *w++ = *r++;
            } else if (insq) {
                if (!*r) return -1;
                if (r[0] == '\\' && r[1] == '\'') { *w++ = '\''; r += 2; }
                else if (*r == '\'') {
                    r++;
                    if (*r && !isspace((unsigned char)*r)) return -1;
                    break;
                } else *w++ = *r++;
            } else if (!*r || isspace((unsigned char)*r)) {
                break;
            } else if (*r == '"') { inq = 1; r++; }
            else if (*r == '\'') { insq = 1; r++; }
            else *w++ = *r++;
        }
        char *next = *r ? r + 1 : r;
        *w = '\0';
        r = next;
    }
}

/* Join words[from..to) with single spaces into buf (redis-server does this
 * for "--save 900 1" style multi-word values). */
static void join_words(char **words, int from, int to, char *buf, size_t buflen) {
    buf[0] = '\0';
    for (int i = from; i < to; i++) {
        size_t l = strlen(buf);
        snprintf(buf + l, buflen - l, "%s%s", i > from ? " " : "", words[i]);
    }
}

static int apply_words(char **words, int n, char *err, size_t errlen, int depth);

static int load_file_depth(const char *path, char *err, size_t errlen, int depth) {
    if (depth > 4) { snprintf(err, errlen, "%s: config files include each other too deeply", path); return -1; }
    FILE *f = fopen(path, "r");
    if (!f) { snprintf(err, errlen, "can't open config file '%s': %s", path, strerror(errno)); return -1; }
    char line[8192];
    int lineno = 0, rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        size_t l = strlen(line);
        if (l == sizeof line - 1 && line[l - 1] != '\n') {
            snprintf(err, errlen, "%s:%d: line too long", path, lineno);
            rc = -1;
            break;
        }
        char *p = line;
        while (isspace((unsigned char)*p)) p++;
        if (*p == '#' || *p == '\0') continue;
        char orig[256];
        snprintf(orig, sizeof orig, "%.*s", (int)strcspn(p, "\r\n"), p);
        char *words[64];
        int n = split_line(p, words, 64);
        if (n < 0) {
            snprintf(err, errlen, "%s:%d: '%s': unbalanced quotes", path, lineno, orig);
            rc = -1;
            break;
        }
        char e2[512];
        if (n > 0 && apply_words(words, n, e2, sizeof e2, depth)) {
            snprintf(err, errlen, "%s:%d: '%s': %s", path, lineno, orig, e2);
            rc = -1;
            break;
        }
    }
    fclose(f);
    if (!rc && !px_cfg.config_file[0]) {
        char *abs = realpath(path, NULL);
        if (abs) { free(px_cfg.config_file); px_cfg.config_file = abs; }
    }
    return rc;
}

int px_config_load_file(const char *path, char *err, size_t errlen) {
    return load_file_depth(path, err, errlen, 0);
}

static int apply_words(char **words, int n, char *err, size_t errlen, int depth) {
    if (!strcasecmp(words[0], "include") || !strcasecmp(words[0], "config")) {
        if (n != 2) { snprintf(err, errlen, "'%s' takes one file name", words[0]); return -1; }
        return load_file_depth(words[1], err, errlen, depth + 1);
    }
    if (!find(words[0])) { snprintf(err, errlen, "unknown directive '%s'", words[0]); return -1; }
    if (n < 2) { snprintf(err, errlen, "directive '%s' needs a value", words[0]); return -1; }
    char value[4096], e2[256];
    join_words(words, 1, n, value, sizeof value);
    if (px_config_set(words[0], value, 0, e2, sizeof e2)) {
        snprintf(err, errlen, "bad value for '%s': %s", words[0], e2);
        return -1;
    }
    return 0;
}

int px_config_from_args(int argc, char **argv, char *err, size_t errlen) {
    int i = 1;
    if (i < argc && strncmp(argv[i], "--", 2) != 0) {
        if (px_config_load_file(argv[i], err, errlen)) return -1;
        i++;
    }
    while (i < argc) {
        if (strncmp(argv[i], "--", 2) != 0 || !argv[i][2]) {
            snprintf(err, errlen, "unexpected argument '%s' (directives are given as --name value)", argv[i]);
            return -1;
        }
        int j = i + 1;
        while (j < argc && strncmp(argv[j], "--", 2) != 0) j++;
        char *words[64];
        int n = 0;
        words[n++] = argv[i] + 2;
        for (int k = i + 1; k < j && n < 64; k++) words[n++] = argv[k];
        if (n == 1 && j < argc && !strcmp(argv[j], "--")) {} /* no value */
        char e2[512];
        if (apply_words(words, n, e2, sizeof e2, 0)) {
            snprintf(err, errlen, "command line --%s: %s", argv[i] + 2, e2);
            return -1;
        }
        i = j;
    }
    return 0;
}
