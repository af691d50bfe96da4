/* sort.h — SORT and SORT_RO (Redis 7.0 sort.c) as pure functions: option
 * parsing, the BY/GET pattern substitution, the sorting rules and the
 * reply, over a collection the caller has loaded and a fetch callback for
 * the keys the patterns name.
 *
 * Module prefix: fd_sort. No storage access: the backend (storage/kv/
 * kv_sort.c, storage/mongodb/mg_sort.c) does, in Redis's order:
 *   1. fd_sort_parse (errors: "ERR value is not an integer or out of range"
 *      for a LIMIT that is not an integer, "ERR syntax error" for anything
 *      else, STORE in SORT_RO included); nothing else is checked first;
 *   2. look the key up: another type than list/set/zset is WRONGTYPE; a
 *      missing key is an empty list;
 *   3. load its elements in their native order (list: head to tail; sorted
 *      set: by score then member; set: the store's order) as copies;
 *   4. fd_sort_exec, which fetches BY/GET values through the callback and
 *      writes the reply, or (STORE) returns the list to store: the caller
 *      then replaces destination by it (a list; its TTL goes) or deletes
 *      destination when it is empty, and replies :n.
 * Sorting rules (sortCompare): numeric by default (strtod of the whole
 * value; a missing BY key counts 0; a value that is not a double makes the
 * reply "ERR One or more scores can't be converted into double"), ties
 * broken by the elements' bytes; ALPHA compares bytes (Redis: strcoll, the
 * same in the C / C.UTF-8 locales it runs under); with ALPHA and BY a
 * missing BY value sorts first. BY without '*' ("nosort") keeps the native
 * order (DESC reverses a list or sorted set), except that a set with STORE
 * is then sorted ALPHA so the stored list is deterministic.
 */
#ifndef FRONTDOOR_VALUE_SORT_H
#define FRONTDOOR_VALUE_SORT_H

#include <stddef.h>
#include "../../protocol/resp.h"

typedef struct fd_sort {
    int desc, alpha, dontsort;
    long long lstart, lcount;     /* LIMIT (0, -1: none) */
    const resp_arg *by, *store;   /* NULL: none */
    int *gets;                    /* caller's array of argc ints: argv indexes of GET patterns */
    int ngets;
} fd_sort;

/* Parse argv[2..argc) into o (o->gets set by the caller). ro: SORT_RO.
 * NULL or Redis's error text. */
const char *fd_sort_parse(const resp_arg *argv, int argc, int ro, fd_sort *o);

/* Step 1 for a backend: o->gets allocated (argc ints, fd_sort_end frees
 * it) and argv parsed as fd_sort_parse; a parse error is written to out
 * with *replied 1 (the command is done). FD_OK or FD_E_NOMEM (o->gets is
 * then NULL). fd_sort_end is safe after either. */
int  fd_sort_begin(const resp_arg *argv, int argc, int ro, fd_sort *o, resp_out *out, int *replied);
void fd_sort_end(fd_sort *o);

enum { FD_SORT_LIST, FD_SORT_SET, FD_SORT_ZSET };

typedef struct fd_sort_elem { const char *p; size_t l; } fd_sort_elem;

/* Fetch the value a pattern names: the string at key[0..kl), or with
 * field != NULL the field of the hash at key. 1 with *v, *vl (valid until
 * the next call), 0 when missing or of another type, or -status (FD_E_*)
 * on a storage failure. */
typedef int (*fd_sort_fetch)(void *ud, const char *key, size_t kl, const char *field, size_t fl,
                             const char **v, size_t *vl);

/* The pattern substitution (lookupKeyByPattern). Returns 2 for "#" (the
 * element itself), 1 with the key built in key[0..*kl) (room: pattern
 * length + sl), the hash field in *field, *fl (NULL: a string lookup), 0 when the pattern
 * has no '*' (nothing found). */
int fd_sort_pattern(const resp_arg *pat, const char *sub, size_t sl, char *key, size_t *kl,
                    const char **field, size_t *fl);

/* The stored result of SORT ... STORE: n items as u32 length + bytes. */
typedef struct fd_sort_result { char *p; size_t len, cap; long long n; } fd_sort_result;
/* Walk: *off starts at 0; 1 with the item, 0 at the end. */
int  fd_sort_result_next(const fd_sort_result *r, size_t *off, const char **p, size_t *l);
void fd_sort_result_free(fd_sort_result *r);

/* Sort the n elements of a collection of `type` as o says and write the
 * reply to out (an array; or Redis's conversion error), or with o->store
 * fill *res (nothing is written: the caller stores and replies :res->n;
 * on the conversion error *replied is set and the error is written).
 * Returns FD_OK (*replied: 1 when out holds the whole reply), FD_E_NOMEM,
 * or a fetch failure's status (out is then cut back). */
int fd_sort_exec(const fd_sort *o, const resp_arg *argv, int type, fd_sort_elem *elems, size_t n,
                 fd_sort_fetch fetch, void *ud, resp_out *out, fd_sort_result *res, int *replied);

/* The whole command over a backend (steps 1 to 4 above, the reply or the
 * STORE and :n): what a store gives it. ud is the backend's per-command
 * context. */
typedef struct fd_sort_io {
    /* Steps 2 and 3: look key up (Redis's lookupKeyRead: a keymiss event)
     * and load its elements: *type, and *el (malloc'd, n of them, freed by
     * fd_sort_cmd; NULL when n is 0) pointing into memory held by *hold
     * until release(*hold); *hold is also fetch's ud. FD_E_WRONGTYPE for
     * another type than list/set/zset. *hold starts NULL and is released
     * when set, also after a failure. */
    int  (*load)(void *ud, const resp_arg *key, void **hold, int *type, fd_sort_elem **el, size_t *n);
    fd_sort_fetch fetch;
    void (*release)(void *hold);
    /* STORE: replace dst by a list of r's items (no TTL), or delete it when
     * r is empty, raising Redis's events ("sortstore", or "del"). */
    int  (*store)(void *ud, const resp_arg *dst, const fd_sort_result *r);
} fd_sort_io;

/* SORT (ro 0) or SORT_RO (ro 1) over io: the reply written to out. FD_OK,
 * or an FD_E_* status for the caller's error reply. */
int fd_sort_cmd(const fd_sort_io *io, void *ud, const resp_arg *argv, int argc, int ro, resp_out *out);

#endif
