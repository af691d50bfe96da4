/* option.h — a backend's own settings, as rows.
 *
 * Module prefix: fd_option_. A backend that has settings exports one
 * fd_option_set (ops->options): its rows (directive name, type, where the
 * value lands in the backend's own settings struct, default, bounds, enum
 * names) and that struct's size. The host builds its directives from the
 * rows of the registered backends (file, command line, CONFIG GET/SET/
 * REWRITE, and the A/B secondary's "ab-" twins), keeps one settings struct
 * per set for each backend it may open, and passes the backend its own in
 * fd_backend_config.options. Several backends may point at one set (redis
 * and redis-cluster share the redis-* rows); a set is listed once.
 *
 * Value types in the settings struct, by row type:
 *   FD_OPT_INT, FD_OPT_MEM   long long (MEM: "64mb" style units, Redis's memtoll)
 *   FD_OPT_ENUM              int, the index into enums (NULL-terminated)
 *   FD_OPT_STR               char *, owned by the host, never NULL while open()
 *                            runs; valid until the backend is closed
 * Bounds: a set's struct is at most FD_OPTION_SET_BYTES; a host keeps at most
 * FD_OPTION_SETS_MAX sets (checked when the directives are built). */
#ifndef FRONTDOOR_OPTION_H
#define FRONTDOOR_OPTION_H

#include <stddef.h>

typedef enum { FD_OPT_INT, FD_OPT_MEM, FD_OPT_STR, FD_OPT_ENUM } fd_option_type;

typedef struct fd_option {
    const char         *name;     /* the directive, as users write it ("lmdb-map-size") */
    fd_option_type      type;
    size_t              off;      /* offsetof(<the set's struct>, field) */
    const char         *def;      /* default, as text */
    long long           min, max; /* INT/MEM bounds, inclusive */
    const char *const  *enums;    /* ENUM: names, index = stored value */
    int                 flags;    /* FD_OPT_SECRET: a credential, hidden where Redis hides
                                   * CONFIG SET's secrets (the slow log) */
} fd_option;
enum { FD_OPT_SECRET = 1 };

typedef struct fd_option_set {
    const char      *name;        /* for messages ("lmdb", "redis") */
    const fd_option *rows;
    size_t           nrows;
    size_t           size;        /* sizeof the set's struct, <= FD_OPTION_SET_BYTES */
} fd_option_set;

#define FD_OPTION_SET_BYTES 256
#define FD_OPTION_SETS_MAX  8
#define FD_OPTION_ROWS_MAX  64    /* rows over every set */

#define FD_OPTION_SET(name_, rows_, type_) \
    { name_, rows_, sizeof(rows_) / sizeof((rows_)[0]), sizeof(type_) }

#endif
