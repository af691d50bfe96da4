/* stream.h — Redis 7.0 streams over any ordered sub-record store: the
 * command semantics, reply shapes and error texts of t_stream.c written
 * once, driven by the embedded backends (storage/kv/kv_stream.c) and the
 * MongoDB backend (storage/mongodb/mg_stream.c) through fd_stream_io.
 *
 * A stream is a key with a fixed-size metadata blob (FD_SMETA_LEN bytes,
 * kept by the backend with the key) and sub-records: byte-string keys
 * ("subs") under the key, ordered by memcmp, with byte-string values. The
 * engine defines every sub-record layout (docs/encoding.md, "Streams"):
 *
 *   'x' id(16 BE)                          -> entry: u32 n, then 2n (u32 len, bytes) fields/values
 *   'n' id(16 BE)                          -> listpack node emulation (see below)
 *   'g' name'                              -> group: gid(8) last(16) entries_read(8) pel(8) consumers(8) name
 *   'c' gid(8) name'                       -> consumer: seen(8) pel(8) name
 *   'p' gid(8) id(16)                      -> pending entry: delivery_time(8) count(8) consumer name
 *   'q' gid(8) len(1) name' id(16)         -> ""  (a consumer's pending entries, in id order)
 *
 * name' is the name when at most 200 bytes, else its first 200 bytes and a
 * 64-bit hash (the full name is in the value). ids are ms(8 BE) seq(8 BE),
 * so byte order is id order: appends and range reads are cursor walks.
 *
 * Nodes: Redis keeps entries in listpacks of at most 100 entries / 4096
 * bytes and `~` trimming removes whole listpacks only; XINFO shows their
 * number. The engine keeps one 'n' record per emulated listpack (first id,
 * live and deleted counts, its exact listpack byte size, its last id and
 * master fields), so MAXLEN/MINID `~` and radix-tree-keys match Redis.
 *
 * Module prefix: fd_stream_. No global state.
 */
#ifndef FRONTDOOR_VALUE_STREAM_H
#define FRONTDOOR_VALUE_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include "../../protocol/resp.h"

#define FD_SMETA_LEN  176        /* bytes of the metadata blob */
#define FD_SSUB_MAX   240        /* longest sub-record key */

/* A walk callback: the record's sub and value (valid only during the
 * call). Returns FD_SW_NEXT to go on, FD_SW_STOP to end the walk, or an
 * FD_E_* status (the walk ends and returns it). */
#define FD_SW_NEXT 0
#define FD_SW_STOP (-1)
typedef int (*fd_swalk_fn)(void *arg, const uint8_t *sub, size_t sl, const void *v, size_t vl);

/* What a backend provides. `h` is the backend's per-command handle, `sk`
 * one open stream key. Every function returns FD_OK, FD_NOTFOUND where
 * stated, or an FD_E_* status. Memory returned by get()/walk() is valid
 * until the next write (copy it first). */
typedef struct fd_stream_io {
    /* Open the stream at key: *exists = 0 when there is none (or it expired;
     * *sk is then NULL), FD_E_WRONGTYPE when the key holds another type;
     * else *sk and the metadata blob in meta. */
    int  (*open)(void *h, const resp_arg *key, void **sk, uint8_t *meta, int *exists);
    /* Create an empty stream at key (not stored until save). */
    int  (*create)(void *h, const resp_arg *key, void **sk);
    /* Store the metadata (creating the key when new). */
    int  (*save)(void *h, void *sk, const uint8_t *meta);
    int  (*get)(void *h, void *sk, const uint8_t *sub, size_t sl, const void **v, size_t *vl); /* FD_NOTFOUND */
    int  (*put)(void *h, void *sk, const uint8_t *sub, size_t sl, const void *v, size_t vl);
    int  (*del)(void *h, void *sk, const uint8_t *sub, size_t sl);
    /* Walk the records whose sub starts with pfx: forward from the first
     * sub >= from, or (rev) backward from the last sub <= from followed by
     * 0xff bytes. from starts with pfx. */
    int  (*walk)(void *h, void *sk, const uint8_t *pfx, size_t pl, const uint8_t *from, size_t fl,
                 int rev, fd_swalk_fn fn, void *arg);
    void (*close)(void *h, void *sk);
    /* A keyspace event of class cls (storage/host.h FD_NOTIFY_*: Redis's
     * name, raised where Redis's t_stream.c raises it) on key; called only
     * while fd_notify_on(cls). NULL: the backend delivers none. */
    void (*event)(void *h, int cls, const char *event, const resp_arg *key);
} fd_stream_io;

/* One command call. */
typedef struct fd_stream_call {
    const fd_stream_io *io;
    void      *h;
    int        argc;
    resp_arg  *argv;
    resp_out  *out;
    int64_t    now_ms;
} fd_stream_call;

/* The commands. Each writes exactly one reply and returns FD_OK, or writes
 * nothing and returns an FD_E_* status (WRONGTYPE, syntax, storage...).
 * Arity was checked by the proxy (commands.def); XGROUP/XINFO check their
 * subcommands' arities as Redis's command table does. */
int fd_stream_xadd(fd_stream_call *c);
int fd_stream_xrange(fd_stream_call *c);
int fd_stream_xrevrange(fd_stream_call *c);
int fd_stream_xlen(fd_stream_call *c);
int fd_stream_xdel(fd_stream_call *c);
int fd_stream_xtrim(fd_stream_call *c);
int fd_stream_xread(fd_stream_call *c);
int fd_stream_xreadgroup(fd_stream_call *c);
int fd_stream_xsetid(fd_stream_call *c);
int fd_stream_xinfo(fd_stream_call *c);
int fd_stream_xgroup(fd_stream_call *c);
int fd_stream_xack(fd_stream_call *c);
int fd_stream_xpending(fd_stream_call *c);
int fd_stream_xclaim(fd_stream_call *c);
int fd_stream_xautoclaim(fd_stream_call *c);

/* XREAD/XREADGROUP BLOCK when nothing can be served at once: the one place
 * that decides what happens. Writes the marker reply
 * "-XBLOCK <id> <id>...\r\n" (one id per stream, in order: `$` resolved to
 * the stream's last id at this moment, "0-0" for a missing stream, ">" for
 * a group's new entries), which proxy/blocking.c turns into a wait and never
 * lets reach a client. ids: 2 * nstreams uint64 (ms, seq pairs;
 * UINT64_MAX, UINT64_MAX = ">"). FD_OK, or FD_E_NOMEM with nothing written. */
int fd_stream_would_block(fd_stream_call *c, int nstreams, const uint64_t *ids);

/* DUMP of the stream at key (its groups, consumers and PELs included)
 * into out (empty), in Redis 7.0's payload format (rdb.h, "Streams"): FD_OK;
 * FD_NOTFOUND when key holds no stream; an FD_E_* status. O(size). */
struct fd_rdb_buf;
int fd_stream_dump(fd_stream_call *c, const resp_arg *key, struct fd_rdb_buf *out);

/* RESTORE: create the stream at key (which must not exist: the caller
 * deleted it) from a payload fd_rdb_load has already checked (type
 * FD_RDB_STREAM). FD_OK, or an FD_E_* status (the backend's write
 * transaction then fails whole). No TTL: the caller sets it after. */
int fd_stream_restore(fd_stream_call *c, const resp_arg *key, const void *p, size_t len);

/* The metadata's length field (for a backend that keeps it visible). */
uint64_t fd_stream_meta_length(const uint8_t *meta);

#endif
