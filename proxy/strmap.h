/* strmap.h — a small hash map from byte strings to caller-owned entries,
 * shared by the blocking-keys table (blocking.c) and the pub/sub broker
 * (pubsub.c). Module prefix: px_strmap_.
 *
 * An entry is allocated by the map with `extra` bytes of zeroed room for the
 * caller's fields (px_strmap_data) and a copy of the name. Chained, power-of-
 * two buckets, grown by doubling at load 1 (never shrunk below 16 buckets).
 * Loop thread only. Out of memory: px_strmap_add returns NULL and changes
 * nothing.
 */
#ifndef FRONTDOOR_STRMAP_H
#define FRONTDOOR_STRMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct px_strent {
    struct px_strent *next;      /* bucket chain */
    uint64_t hash;
    size_t   len;
    char    *name;               /* NUL-terminated copy (len bytes, may hold NULs) */
} px_strent;

typedef struct px_strmap {
    px_strent **b;
    size_t      nb, count;
} px_strmap;

/* The entry for name, or NULL. */
px_strent *px_strmap_get(const px_strmap *m, const char *name, size_t len);
/* The entry for name, created (with `extra` zeroed bytes) if absent; *created
 * says which (may be NULL). NULL when out of memory. */
px_strent *px_strmap_add(px_strmap *m, const char *name, size_t len, size_t extra, int *created);
/* Unlink and free e (which must be in m). */
void       px_strmap_del(px_strmap *m, px_strent *e);
/* The caller's room of an entry. */
static inline void *px_strmap_data(px_strent *e) { return (void *)(e + 1); }
/* Walk: call fn on every entry (fn must not change the map). */
void       px_strmap_each(const px_strmap *m, void (*fn)(px_strent *e, void *arg), void *arg);
/* Free every entry and the buckets. */
void       px_strmap_clear(px_strmap *m);

#endif
