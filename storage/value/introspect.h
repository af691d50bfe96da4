/* introspect.h — OBJECT and MEMORY (Redis 7.0 object.c) for the backends
 * that serve them (storage/kv/kv_sort.c, storage/mongodb/mg_sort.c): the
 * subcommand parsing, Redis's help texts and error replies, and what
 * frontdoor answers for its own encodings (docs/encoding.md,
 * "Introspection").
 *
 * Module prefix: fd_object / fd_memory. Pure: the caller looks the key up.
 * Replies:
 *   OBJECT ENCODING  a string: what Redis reports for those bytes written by
 *                    SET ("int" canonical 64-bit integer of up to 20 bytes,
 *                    "embstr" up to 44 bytes, "raw"); a collection: Redis's
 *                    general encoding (list "quicklist", hash and set
 *                    "hashtable", sorted set "skiplist"): frontdoor has no
 *                    compact small-collection form;
 *   OBJECT REFCOUNT  1 (nothing is shared);
 *   OBJECT FREQ      Redis's error for "no LFU policy" (none is);
 *   OBJECT IDLETIME  an error: access times are not tracked;
 *   missing key      nil, before any of these.
 */
#ifndef FRONTDOOR_VALUE_INTROSPECT_H
#define FRONTDOOR_VALUE_INTROSPECT_H

#include <stddef.h>
#include "../../protocol/resp.h"

enum { FD_OBJ_ENCODING = 1, FD_OBJ_REFCOUNT, FD_OBJ_IDLETIME, FD_OBJ_FREQ };
/* type hints for fd_object_reply */
enum { FD_OBJ_STRING = 1, FD_OBJ_LIST, FD_OBJ_HASH, FD_OBJ_SET, FD_OBJ_ZSET };

/* OBJECT's subcommand: 1 after writing the whole reply (HELP, arity or
 * unknown-subcommand error), 0 with *sub set (the key is argv[2]), -1 when
 * out could not grow. */
int fd_object_parse(const resp_arg *argv, int argc, resp_out *out, int *sub);
/* The reply of sub for a live key of `type` (string bytes v[0..vl)). 0 / -1. */
int fd_object_reply(int sub, int type, const char *v, size_t vl, resp_out *out);

/* MEMORY's subcommand: 1 after writing the whole reply (HELP, errors: the
 * unserved STATS/DOCTOR/MALLOC-STATS/PURGE, arity, SAMPLES syntax), 0 for
 * USAGE with *samples (0: every element), -1 out of memory. */
int fd_memory_parse(const resp_arg *argv, int argc, resp_out *out, long long *samples);

#endif
