/* coll.h — the adapter a store gives the field-collection command layers:
 * hashes (value/hash.c: a field and its value) and sets (value/set.c: a
 * member, its value empty). The commands are written once over it; the
 * store keeps its elements (storage/kv/kv_coll.c: a record per element;
 * storage/mongodb/mg_hash.c, mg_set.c: the document's array or the big
 * layout). One io instance per Redis type: its open() knows the type.
 *
 * Module prefix: fd_coll. No global state; nothing blocks.
 */
#ifndef FRONTDOOR_VALUE_COLL_H
#define FRONTDOOR_VALUE_COLL_H

#include <stddef.h>
#include "../../protocol/resp.h"

/* An open collection: the adapter's state, kept in a buffer of the
 * caller's (no allocation per command). */
#define FD_COLL_HK_BYTES 1024
typedef struct fd_coll_hk { _Alignas(16) unsigned char b[FD_COLL_HK_BYTES]; } fd_coll_hk;

/* A walk callback: an element and its value (a set's: empty), valid during
 * the call. 0 goes on, else the walk stops and returns it. */
typedef int (*fd_coll_walk_fn)(void *arg, const char *f, size_t fl, const char *v, size_t vl);

/* How open() looks the key up. */
enum {
    FD_COLL_AS_CMD = 0,   /* as the command does (a read command: lookupKeyRead, its keymiss) */
    FD_COLL_SOURCE = 1,   /* a STORE form's source: lookupKeyRead whatever the command */
};

/* What a store provides. `h` is the store's per-command handle (its
 * context), `hk` the open collection. Every function returns FD_OK,
 * FD_NOTFOUND where stated, or an FD_E_* status. Memory returned by
 * get/walk is valid until the next put/del. */
typedef struct fd_coll_io {
    /* Open the collection at key (the keymiss event is the store's, `how`
     * above): *exists 0 when there is none (or it expired); FD_E_WRONGTYPE
     * for another type. named: the elements the command names are
     * argv[named], argv[named + step], ... (a store that loads only those
     * may); named < 0: the command reads every element. close() is called
     * after open, whatever it returned. */
    int  (*open)(void *h, const resp_arg *key, int how, int named, int step, fd_coll_hk *hk, int *exists);
    /* Open key as a STORE form's destination: whatever it holds (any type)
     * is replaced at save() by the elements put since (none: the key is
     * deleted). *was 1 when a live key was there; a store may leave it 0
     * unless need_was (it costs a lookup there). NULL: no STORE form. */
    int  (*open_dest)(void *h, const resp_arg *key, int need_was, fd_coll_hk *hk, int *was);
    int  (*get)(void *h, fd_coll_hk *hk, const char *f, size_t fl, const void **v, size_t *vl); /* FD_NOTFOUND */
    /* Set f to v (v is not the store's memory); the collection is created
     * when it did not exist. lasting: f and v stay valid until close (a
     * command argument, or memory the caller keeps; else a buffer of this
     * call's: a store that keeps them must copy). *created 1 when f is new. */
    int  (*put)(void *h, fd_coll_hk *hk, const char *f, size_t fl, const void *v, size_t vl, int lasting,
                int *created);
    /* Remove f: *removed 1 when it was there. */
    int  (*del)(void *h, fd_coll_hk *hk, const char *f, size_t fl, int *removed);
    /* The number of elements (0: none). */
    long long (*count)(void *h, fd_coll_hk *hk);
    /* Every element, in the store's order. */
    int  (*walk)(void *h, fd_coll_hk *hk, fd_coll_walk_fn fn, void *arg);
    /* Store what put/del changed (the key goes when no element is left). */
    int  (*save)(void *h, fd_coll_hk *hk);
    /* After a save: 1 when the key is gone. */
    int  (*gone)(void *h, fd_coll_hk *hk);
    void (*close)(void *h, fd_coll_hk *hk);
    /* A keyspace event of class cls (storage/host.h FD_NOTIFY_*) on key. */
    void (*event)(void *h, int cls, const char *event, const resp_arg *key);
    /* Optional: the command's key number `nth` (0: its first key) was
     * left unchanged by this write (WATCH does not see it touched:
     * fd_request.untouched). */
    void (*untouched)(void *h, int nth);
} fd_coll_io;

/* HDEL / SREM key element...: remove the named elements of the collection
 * at argv[1], reply their number; events: `event` of class cls (host.h
 * FD_NOTIFY_*) when any went, then "del" when the key is gone. FD_OK, or
 * an FD_E_* status (nothing written). */
int fd_coll_remove(const fd_coll_io *io, void *h, int argc, const resp_arg *argv, int cls, const char *event,
                   resp_out *out);

#endif
