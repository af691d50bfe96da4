/* rdb.h — DUMP / RESTORE payloads in Redis 7.0's serialization format, for
 * every Redis-types backend (storage/kv/, storage/mongodb/).
 *
 * A payload is: one RDB type byte, the value in that type's RDB encoding,
 * the RDB version (10) as 2 bytes little-endian, and the CRC-64 (Jones
 * polynomial, reflected, as Redis's crc64.c) of everything before it, as 8
 * bytes little-endian.
 *
 * fd_rdb_dump picks the encoding redis-server 7.0 would hold for a value
 * built by the obvious commands with the default configuration (SET; RPUSH
 * in order; SADD; HSET in the order given; ZADD), so its bytes equal
 * redis-server's DUMP of that value where 7.0's choice is deterministic:
 *   string  int (-2^31..2^31-1 in canonical form) / raw / LZF (len > 20)
 *   list    quicklist 2 of listpacks, nodes cut at 8 KB (list-max-listpack-size -2)
 *   set     intset (all integers, <= 512), else hashtable (member order: the caller's)
 *   hash    listpack (<= 128 pairs, fields and values <= 64 bytes), else hashtable
 *   zset    listpack (<= 128, members <= 64 bytes), else skiplist (scores binary)
 * (hashtable orders depend on Redis's random hash seed: those payloads are
 * valid but cannot be byte-identical.)
 *
 * fd_rdb_load accepts what redis-server 7.0 DUMPs and the older encodings
 * it RESTOREs: linked list, ziplist lists/hashes/zsets, quicklist of
 * ziplists, zipmap, intset, string-encoded zset scores. Streams and module
 * values are "Bad data format" (frontdoor has no such types).
 *
 * Module prefix: fd_rdb_. Pure: no store access, no I/O. */
#ifndef FRONTDOOR_VALUE_RDB_H
#define FRONTDOOR_VALUE_RDB_H

#include <stddef.h>
#include <stdint.h>
#include "../../protocol/resp.h"

#define FD_RDB_VERSION 10

/* Redis's crc64 (crc-64-jones, reflected, init 0 — pass 0 to start):
 * crc64(0, "123456789") == 0xe9c6d914c4b8d9ca. */
uint64_t fd_crc64(uint64_t crc, const void *p, size_t n);

/* LZF as Redis's lzf_c.c / lzf_d.c (HLOG 16, VERY_FAST, a zeroed hash
 * table). Compress: the output length, 0 when it does not fit out_len.
 * Decompress: the output length, 0 on corrupt input or too small out. */
size_t fd_lzf_compress(const void *in, size_t in_len, void *out, size_t out_len);
size_t fd_lzf_decompress(const void *in, size_t in_len, void *out, size_t out_len);

/* ---------------------------------------------------------------- values */

enum fd_rdb_vtype { FD_RDB_STRING, FD_RDB_LIST, FD_RDB_SET, FD_RDB_ZSET, FD_RDB_HASH, FD_RDB_STREAM };

/* One element of a value: string (one item: p), list element / set member
 * (p), hash pair (p = field, v = value), zset entry (p = member, score). */
typedef struct fd_rdb_item {
    const char *p;
    size_t n;
    const char *v;
    size_t vn;
    double score;
} fd_rdb_item;

/* A growable byte buffer (the payload). */
typedef struct fd_rdb_buf {
    unsigned char *p;
    size_t len, cap;
} fd_rdb_buf;
void fd_rdb_buf_free(fd_rdb_buf *b);

/* DUMP: the payload of a value of type (enum fd_rdb_vtype) made of items
 * [0, n) appended to out (list: head to tail; hash: insertion order; zset:
 * ascending by score then member bytes, as ZRANGE). FD_OK, FD_E_NOMEM, or
 * FD_E_INTERNAL for an unknown type or a string with n != 1. */
int fd_rdb_dump(int type, const fd_rdb_item *items, size_t n, fd_rdb_buf *out);

/* RESTORE's verifyDumpPayload: 0 when the footer's version is <= 10 and the
 * CRC matches; -1: reply "ERR DUMP payload version or checksum are wrong". */
int fd_rdb_verify(const void *p, size_t len);

/* Called by fd_rdb_load for each element (the pointers are valid during the
 * call only). Non-zero stops the load and is returned. */
typedef int (*fd_rdb_item_fn)(void *ctx, int type, const fd_rdb_item *it);

/* RESTORE's decoding of a verified payload (footer included in len): *type,
 * then fn for every element in the stored order (zset: any order; scores as
 * stored). A stream is checked whole (fd_rdb_stream_load's rules), fn is not
 * called, *type is FD_RDB_STREAM: read it with fd_rdb_stream_load. fn may be NULL: validation only (do that first when the backend
 * cannot undo partial writes). Returns 0; -1 "ERR Bad data format" (corrupt,
 * truncated, unsupported type, an empty aggregate, a duplicate set member /
 * hash field / zset member, a NaN score); FD_E_NOMEM; or fn's return. */
int fd_rdb_load(const void *p, size_t len, int *type, fd_rdb_item_fn fn, void *ctx);

/* ---------------------------------------------------------------- streams */

/* Redis 7.0's RDB_TYPE_STREAM_LISTPACKS_2 (19): the listpack nodes of the
 * stream's radix tree (key: the node's master id, 16 bytes big-endian;
 * value: a listpack laid out as t_stream.c's: master entry "count deleted
 * nfields field... 0", then per entry "flags ms-delta seq-delta [nfields]
 * [field] value ... lp-count", flags 1 deleted, 2 same fields as the
 * master), then length, last id, first id, max deleted id, entries added,
 * the consumer groups (name, last id, entries read, PEL: raw id, delivery
 * time (8 bytes LE), delivery count; consumers: name, seen time, PEL ids).
 * Times are ms since the epoch. */
typedef struct fd_rdb_sid { uint64_t ms, seq; } fd_rdb_sid;

/* an entry: fv[i].p/.n the field, fv[i].v/.vn its value */
typedef struct fd_rdb_sentry {
    fd_rdb_sid id;
    const fd_rdb_item *fv;
    size_t nf;
} fd_rdb_sentry;

typedef struct fd_rdb_stream_info {
    uint64_t nodes;         /* the listpack count (read only: the writer takes it in begin) */
    uint64_t length, added, groups;
    fd_rdb_sid last, first, maxdel;
} fd_rdb_stream_info;

/* DUMP of a stream, in this order (each FD_OK or FD_E_NOMEM): begin (type
 * byte, node count); node for each node in id order (master: the node's key
 * and first entry's id; mf: the master fields; e: its live entries in id
 * order, n >= 1; an entry whose fields equal mf is written as SAMEFIELDS,
 * so with stream-node-max-bytes/-entries' cuts the bytes are redis-server's;
 * the deleted count is 0: deleted entries are not written); info_put; per
 * group in name order: group, its nacks in id order, consumers (their
 * count), per consumer in name order: consumer, cpel for each of its ids in
 * id order; then fd_rdb_footer. out must start empty (the CRC covers it). */
int fd_rdb_stream_begin(fd_rdb_buf *out, uint64_t nodes);
int fd_rdb_stream_node(fd_rdb_buf *out, fd_rdb_sid master, const fd_rdb_item *mf, size_t nmf,
                       const fd_rdb_sentry *e, size_t n);
int fd_rdb_stream_info_put(fd_rdb_buf *out, const fd_rdb_stream_info *m);
int fd_rdb_stream_group(fd_rdb_buf *out, const char *name, size_t nl, fd_rdb_sid last, int64_t entries_read,
                        uint64_t npel);
int fd_rdb_stream_nack(fd_rdb_buf *out, fd_rdb_sid id, int64_t delivery_ms, uint64_t count);
int fd_rdb_stream_consumers(fd_rdb_buf *out, uint64_t n);
int fd_rdb_stream_consumer(fd_rdb_buf *out, const char *name, size_t nl, int64_t seen_ms, uint64_t npel);
int fd_rdb_stream_cpel(fd_rdb_buf *out, fd_rdb_sid id);

/* RESTORE of a stream: the callbacks in payload order (pointers valid
 * during the call only; a non-zero return stops the load and is returned):
 * entry for each live entry (ids strictly increasing), node after its
 * entries (live/deleted counts, the listpack's byte size, the node's last
 * id, deleted entries included), info after the nodes, then per group:
 * group (its PEL and consumer counts), and per consumer: consumer then nack
 * for each of its pending entries (the delivery time and count from the
 * group's PEL). */
typedef struct fd_rdb_stream_sink {
    void *ctx;
    int (*entry)(void *ctx, fd_rdb_sid id, const fd_rdb_item *fv, size_t nf);
    int (*node)(void *ctx, fd_rdb_sid master, const fd_rdb_item *mf, size_t nmf, uint64_t live,
                uint64_t deleted, size_t lp_bytes, fd_rdb_sid last);
    int (*info)(void *ctx, const fd_rdb_stream_info *m);
    int (*group)(void *ctx, const char *name, size_t nl, fd_rdb_sid last, int64_t entries_read, uint64_t npel,
                 uint64_t nconsumers);
    int (*consumer)(void *ctx, const char *name, size_t nl, int64_t seen_ms, uint64_t npel);
    int (*nack)(void *ctx, fd_rdb_sid id, int64_t delivery_ms, uint64_t count);
} fd_rdb_stream_sink;

/* Decode a verified stream payload into sk (NULL: check only). 0; -1 "Bad
 * data format": truncated, a bad listpack or LZF string, a node key not 16
 * bytes or not increasing, master counters that disagree with the entries,
 * a node without a live entry, entry ids not increasing or past the last
 * id, a length that is not the live entries', a duplicate group or consumer
 * name, a PEL not in id order, a consumer's id missing from its group's PEL
 * or claimed twice, a nack no consumer owns; FD_E_NOMEM; or sk's status. */
int fd_rdb_stream_load(const void *p, size_t len, const fd_rdb_stream_sink *sk);

/* ---------------------------------------------------------------- RESTORE arguments */

typedef struct fd_restore_opts {
    int replace, absttl;
    long long idletime;     /* -1: none */
    long long freq;         /* -1: none */
} fd_restore_opts;

/* RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f]: the
 * options from argv[4], checked first as Redis does. FD_OK with *replied 0;
 * FD_OK with *replied 1 after writing the error ("ERR Invalid IDLETIME
 * value, must be >= 0", "ERR Invalid FREQ value, must be >= 0 and <= 255");
 * FD_E_SYNTAX / FD_E_NOTINT; FD_E_NOMEM.
 * Redis's order after this: the BUSYKEY check (without REPLACE, an existing
 * key: reply FD_RDB_BUSYKEY), then fd_restore_ttl, then fd_rdb_verify, then
 * fd_rdb_load. */
int fd_parse_restore(const resp_arg *argv, int argc, fd_restore_opts *o, resp_out *out, int *replied);
#define FD_RDB_BUSYKEY "BUSYKEY Target key name already exists."
/* The TTL argument: FD_OK with *ttl; FD_E_NOTINT; or FD_OK with *replied 1
 * after "ERR Invalid TTL value, must be >= 0". */
int fd_restore_ttl(const resp_arg *a, long long *ttl, resp_out *out, int *replied);
/* For a backend, RESTORE's steps after the BUSYKEY check, in Redis's order:
 * fd_restore_ttl (argv[2]); fd_rdb_verify of the payload argv[3] ("ERR DUMP
 * payload version or checksum are wrong"); a first fd_rdb_load into fn/ctx
 * (fn NULL: a check only; "ERR Bad data format"), giving *type; then the
 * absolute expiry *ttl (0: none; relative TTLs from now_ms) and *expired
 * when it has passed (the caller then only deletes the old key and replies
 * +OK). FD_OK with *replied 0; FD_OK with *replied 1 after writing Redis's
 * error; FD_E_NOTINT; or the status fn returned. */
int fd_restore_prepare(const resp_arg *argv, const fd_restore_opts *o, long long now_ms,
                       fd_rdb_item_fn fn, void *ctx, int *type, long long *ttl, int *expired,
                       resp_out *out, int *replied);

/* ---------------------------------------------------------------- FUNCTION DUMP / RESTORE */

/* A FUNCTION DUMP payload as redis-server 7.0 writes it: for each library
 * its code (shebang included) as RDB_OPCODE_FUNCTION2 (0xF5) + an RDB
 * string (LZF past 20 bytes as rdbSaveRawString), then the footer (version,
 * CRC-64). fd_rdb_function_add appends one library; fd_rdb_footer closes
 * the payload. FD_OK or FD_E_NOMEM. */
int fd_rdb_function_add(fd_rdb_buf *out, const char *code, size_t len);
int fd_rdb_footer(fd_rdb_buf *out);

/* FUNCTION RESTORE's reading of a payload already checked by fd_rdb_verify:
 * fn(ctx, code, len) for each library's code in order (code valid during the
 * call only). 0; 1 "given type is not a function" (another opcode, e.g. the
 * 7.0-rc RDB_OPCODE_FUNCTION, which frontdoor does not read); -1 corrupt or
 * truncated ("failed loading the given functions payload"); FD_E_NOMEM; or
 * fn's non-zero return. */
typedef int (*fd_rdb_function_fn)(void *ctx, const char *code, size_t len);
int fd_rdb_functions_load(const void *p, size_t len, fd_rdb_function_fn fn, void *ctx);

#endif
