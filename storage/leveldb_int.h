/* leveldb_int.h — what the LevelDB backend's files share (private to
 * storage/leveldb*.c): its bounds, its state (ld_db, ld_txn, the row
 * cache's rows, seek hints, held replies, batches, cursors) and the
 * functions one file calls in another. leveldb.c's head comment is the
 * design; docs/leveldb.md the long form. Loop thread only, but for what
 * ld_db says the writer and compaction threads touch (under its locks).
 */
#ifndef FRONTDOOR_LEVELDB_INT_H
#define FRONTDOOR_LEVELDB_INT_H

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <dirent.h>
#include <leveldb/c.h>
#include <ev.h>
#include "clock.h"
#include "kv/kv.h"
#include "kv/kv_overlay.h"
#include "datadir.h"
#include "leveldb_settings.h"

#define LD_DEFAULT_CACHE  (64ULL << 20)
#define LD_DEFAULT_WBUF   (16ULL << 20)
#define LD_DEFAULT_FILES  1000
#define LD_BLOOM_BITS     10
#define LD_SLOW_COMMIT_US 100000          /* a commit above this counts as slow */
#define LD_MEMO_MAX       512             /* longest key the base-lookup memo keeps */
#define LD_RC_MIN         (64u << 10)     /* row cache: at least this many bytes */
#define LD_READ_BEHIND    32              /* list elements read ahead downwards (RPOP) */
#define LD_RC_BUCKETS     (1u << 18)      /* row cache hash buckets (power of 2) */
#define LD_MAX_BATCHES    8               /* uncommitted batches (layers) at most */
#define LD_HOLD_BYTES     (256ULL << 20)  /* overlay bytes not yet committed: the bound */
#define LD_HOLD_REPLIES   (1u << 20)      /* write replies held: the bound */
#define LD_STALL_US       2000            /* a write above this counts as writer stall time */
#define LD_POLL_US        5000            /* writer mode: LevelDB's state read at most this often */
#define LD_L0_SLOWDOWN    8               /* LevelDB's kL0_SlowdownWritesTrigger (1 ms per write) */
#define LD_INLINE_BACKOFF_US 500000       /* an inline write that blocked: the writer's for this long */
#define LD_INLINE_TURN_BYTES (32u << 10)  /* turns above this on average: the writer's (the loop's time) */
#define LD_ARENA_BLOCK    4096            /* LevelDB's Arena: block size; bigger than 1/4: own block */

static inline int ov_cmp(const kv_ov_node *n, const char *k, size_t kl)
{
    return kv_overlay_keycmp(kv_ov_key(n), n->klen, k, kl);
}

/* ---------------------------------------------------------------- state */

typedef struct ld_db ld_db;

/* Seek hints. A LevelDB seek steps over every tombstone between its target
 * and the first live record: a range emptied by deletes (a collection being
 * reclaimed 64 records per cron tick, the expiry index after mass expiry)
 * costs more with each tick, O(n^2) in all. A hint [a, b) records that a
 * seek to a landed on b, i.e. LevelDB holds no live record in [a, b); a later
 * seek to k in [a, b) goes straight to b. Deletes keep a hint true; a commit
 * that puts a key in [a, b) drops it. LD_HINTS slots, least recently used
 * replaced. */
#define LD_HINTS 16
typedef struct ld_hint {
    char    *a, *b;
    size_t   al, bl;
    uint64_t used;           /* 0 = free slot */
} ld_hint;

/* The row cache: LevelDB's answer for recently read keys (a value, or
 * "no such key"), so a read of a hot key is a hash lookup instead of
 * leveldb_get's memtable skiplist search (a cache miss per level on a big
 * memtable) and per-level filter probes. The kv layer reads a key's
 * metadata before every write of it (SET, MSET, ...), so writes benefit
 * too. Filled by ld_get's point lookups; kept true at commit (each written
 * key's entry is replaced or dropped); emptied by a FLUSHDB commit or a
 * failed write. Its budget is half the block cache's size (so
 * leveldb-block-cache-size sizes both; 32 MB by default; at least
 * LD_RC_MIN). Entries live in hash chains; over the budget the chains of
 * a sweeping bucket hand are evicted (roughly random eviction). One malloc
 * per entry: the struct, then the key, then the value. */
typedef struct ld_row {
    struct ld_row *next;
    uint64_t hash;
    uint32_t kl, vl;
    int      held;           /* 0: LevelDB has no such key */
} ld_row;
static inline char *row_key(ld_row *r) { return (char *)(r + 1); }
static inline char *row_val(ld_row *r) { return (char *)(r + 1) + r->kl; }

/* A write command's reply held until its commit is stored: bytes
 * [off, off+len) of the holder's rbuf. */
typedef struct ld_held {
    fd_pending *p;
    size_t      off, len;
} ld_held;
typedef struct ld_holds {
    ld_held *held;
    size_t   nheld, capheld;
    char    *rbuf;
    size_t   rlen, rcap;
} ld_holds;

/* Replies to send once a commit is done: moved out of a batch by
 * collect_done, sent by on_wake (never inside end_turn or submit: a reply
 * may make the host run more commands). */
typedef struct ld_answers {
    struct ld_answers *next;
    int      status;         /* FD_OK: the replies; else every one fails with it */
    ld_held *held;
    size_t   nheld;
    char    *rbuf;
} ld_answers;

/* One frozen turn (or several merged turns) on its way into LevelDB. The
 * loop owns the queue db->bq (oldest first) and reads each batch's overlay
 * as a layer above LevelDB until the batch is retired; the writer thread
 * takes the oldest QUEUED batch, writes it, marks it DONE (state under
 * wmu). A QUEUED batch at the tail takes the next turns in (merged), so the
 * queue stays short while a write stalls. */
enum { LB_QUEUED, LB_WRITING, LB_DONE };
typedef struct ld_batch {
    kv_overlay *ov;
    struct ld_batch *fnext;  /* on db->freeq */
    uint64_t  seq;
    int       state;         /* LB_*, under wmu */
    int       status;        /* the write's result (LB_DONE) */
    int       cleared;       /* FLUSHDB: first delete everything LevelDB holds */
    int       collected;     /* its replies moved to db->ans */
    int       fail;          /* not to be written: fail with this (a merge ran out of memory) */
    ld_holds  h;             /* the replies its writes wait with */
    uint64_t  records, write_us, turns;
    uint64_t  arena, logb;   /* memtable and log bytes the write added (write_overlay) */
    char      err[256];      /* LevelDB's error text (writer thread) */
} ld_batch;

typedef struct ld_txn {
    ld_db   *db;
    int      used;
    int      cleared;        /* clear() ran: LevelDB's records are hidden */
    kv_overlay *ov;
    uint64_t stamp;          /* bumped by every write (kv_driver.stamp) */
    int      must_sync;      /* a write reply was released: commit before end_turn returns */
    int      inline_turn;    /* began while be->writes_inline: written before end_turn returns */
    ld_holds h;              /* replies of this turn's writes (kv_driver.hold) */
    char   **reads;          /* leveldb_get results handed out: freed at the next write */
    size_t   nreads, capreads;
    /* The last key looked up in LevelDB and whether LevelDB holds it: valid
     * for the whole transaction, since LevelDB is written only at commit.
     * A delete of the key just read (LPOP/RPOP: read the element, then
     * delete it) then needs no second leveldb_get to know a tombstone is
     * due. memo: 0 none, 1 held, 2 absent. */
    int      memo;
    size_t   memo_kl;
    char     memo_key[LD_MEMO_MAX];
    /* Sequential reads of list elements (LPOP in a pipeline reads head,
     * head+1, ...): a LevelDB iterator kept for the transaction, on
     * the memo key when sit_at. A read of the element next to it is one
     * iterator step instead of a leveldb_get (a memtable search plus every
     * level's filters). */
    leveldb_iterator_t *sit;
    int      sit_at;
} ld_txn;

struct ld_db {
    leveldb_t              *ldb;
    leveldb_options_t      *opts;
    leveldb_cache_t        *cache;
    leveldb_filterpolicy_t *bloom;
    leveldb_readoptions_t  *ropts;
    leveldb_writeoptions_t *wopts;
    char    *dir;
    int      sync;
    int      lockfd;         /* flock'ed: one frontdoor per data folder */
    uint64_t cache_size, wbuf_size;
    int      compression, max_files;
    ld_txn   tx;             /* the one top-level transaction */
    /* statistics */
    uint64_t commits, commit_bytes, commit_records, last_commit_us, max_commit_us;
    uint64_t slow_commits, total_commit_us, max_overlay;
    ld_row **rc;             /* LD_RC_BUCKETS chains, allocated at first use */
    size_t   rc_bytes, rc_entries, rc_hand, rc_budget;
    size_t   rc_sub;         /* entries of element records ('S' keys) */
    uint64_t rc_hits, rc_misses, rc_evicted;
    ld_hint  hints[LD_HINTS];
    uint64_t hint_clock, hint_hits;
    /* after a FLUSHDB: a helper thread compacts the whole key space; after
     * LD_TOMBS_COMPACT scattered deletes, the range they fell in (cwant: 1
     * everything, 2 the range [clo, chi); under cmu) */
    pthread_t       cthread;
    pthread_mutex_t cmu;
    pthread_cond_t  ccv;
    int             cstarted, cwant, cstop, cbusy;
    uint64_t        compactions, range_compactions, range_skipped;
    char           *clo, *chi;
    size_t          clol, chil;
    /* scattered deletes (kv_driver.scattered) since the last range request
     * (loop thread): their count and the range [tlo, thi) they fell in */
    uint64_t        tombs;
    char           *tlo, *thi;
    size_t          tlol, thil;
    char     last_error[256];
    /* asynchronous commits: the writer thread (none without a loop: unit
     * tests commit inline) */
    struct ev_loop *loop;
    ev_async        wake;    /* the writer finished a batch */
    int             async;   /* writer running */
    pthread_t       wthread;
    pthread_mutex_t wmu;
    pthread_cond_t  wcv;     /* the writer waits for work */
    pthread_cond_t  dcv;     /* the loop waits for a batch to be done */
    int             wstop;
    int             widle;   /* the writer waits on wcv (under wmu): only then is a signal needed */
    ld_batch       *bq[LD_MAX_BATCHES];
    int             nb;
    uint64_t        seq;     /* of the last batch queued */
    uint64_t        poison_from, poison_upto;   /* under wmu: see ld_writer() */
    int             poison_status;
    ld_answers     *ans, *ans_tail;
    int             in_wake;
    int             delay_ms; /* test hook: FRONTDOOR_LEVELDB_WRITE_DELAY_MS */
    int             fail_nth; /* test hook: FRONTDOOR_LEVELDB_FAIL_WRITE (the writer's n-th write fails) */
    int             nwritten; /* the writer's writes (thread-private) */
    /* statistics of the asynchronous commits */
    uint64_t held_bytes, held_replies;       /* in batches not yet answered */
    uint64_t merged_turns, sync_turns, commit_failures, failed_replies;
    uint64_t loop_commit_us, loop_commit_max_us;   /* loop-thread time in end_turn's commit */
    uint64_t writer_busy_us, writer_stall_us;
    uint64_t bp_waits, bp_us;                /* waits at the bound */
    uint64_t retire_max_us;                  /* the longest retirement on the loop */
    ld_batch *freeq;                         /* retired batches the writer frees (under wmu) */
    int       nfree;
    uint64_t  lock_wait_max_us;              /* the loop's longest wait for wmu */
    /* inline commits: while no write can stall (inline_poll), a turn is
     * written on the loop as without a writer, its replies not held */
    fd_backend *be;                          /* be->writes_inline: the proxy hands writes no pending */
    int       inline_ok;                     /* LevelDB's state allows an inline commit */
    int       no_inline;                     /* durability sync, test hooks: always the writer */
    uint64_t  mem_est;                       /* estimated bytes of LevelDB's memtable (arena) */
    size_t    ar_rem;                        /* arena_add: what is left of the current arena block */
    unsigned  ar_n;                          /* arena_add: records (the node heights' pattern) */
    uint64_t  arena_sum, logb_sum;           /* memtable vs log bytes of every write: their ratio */
    int64_t   poll_us;                       /* the last inline_poll */
    DIR      *logdir;                        /* the data folder, kept open for inline_poll */
    uint64_t  inline_commits, inline_slow, inline_blocked, polls;
    int64_t   inline_after_us;               /* no inline commit before (a blocked one backs off) */
    uint64_t  turn_bytes_avg;                /* overlay bytes of the turns that wrote (moving average, 1/8) */
};

struct kv_iter {
    ld_txn             *tx;
    leveldb_iterator_t *bi;  /* over LevelDB as it was at iter_open */
    kv_ov_node            *on;  /* overlay side (see the invariants at it_next) */
    uint64_t            gen; /* kv_overlay_gen(tx->ov) when `on` was found */
    int                 dir; /* +1 forwards, -1 backwards, 0 unpositioned */
    int                 valid;
    int                 from_ov;      /* the current record is the overlay's */
    char               *key;          /* copy of the current key */
    size_t              klen, kcap;
};

typedef struct ld_backend {
    kv_store st;             /* first: fd_backend.state points here */
    ld_db    db;
} ld_backend;

/* leveldb.c: the transaction (begin/abort/stamp/hold), LevelDB status texts, the compaction helper, the backend (open, close, INFO, settings) */
int ld_status(ld_db *db, char *err);
int ld_defer_free(ld_txn *x, void *p);
void ld_release_reads(ld_txn *x);
void ld_sit_drop(ld_txn *x);
void ld_txn_end(ld_txn *x);
void ld_request_compaction(ld_db *db);
unsigned long long ld_prop_ull(ld_db *db, const char *name);

/* leveldb_cache.c: the row cache, the base-lookup memo and the seek hints */
uint64_t ld_row_hash(const char *k, size_t kl);
ld_row **ld_row_link(ld_db *db, const char *k, size_t kl, uint64_t h);
void ld_rc_clear(ld_db *db);
void ld_rc_fill(ld_txn *x, const char *k, size_t kl, uint64_t h, const char *v, size_t vl);
void ld_rc_commit(ld_db *db, const kv_overlay *ov);
void ld_rc_prefetch(const ld_db *db, int n, const uint64_t *h);
void ld_memo_note(ld_txn *x, const void *k, size_t kl, int held);
int ld_memo_find(const ld_txn *x, const void *k, size_t kl);
int ld_memo_step(const ld_txn *x, const char *k, size_t kl);
void ld_hints_clear(ld_db *db);
void ld_hints_drop_written(ld_db *db, const kv_overlay *ov);
ld_hint *ld_hint_find(ld_db *db, const char *k, size_t kl);
void ld_hint_note(ld_db *db, ld_hint *h, const char *a, size_t al, const char *b, size_t bl);

/* leveldb_commit.c: commits (held replies, batches, the writer thread, inline commits) */
int ld_holds_push(ld_holds *h, fd_pending *p, const void *reply, size_t len);
void ld_holds_free(ld_holds *h);
void ld_answers_add(ld_db *db, ld_holds *h, int status);
void ld_answers_send(ld_db *db);
void ld_batch_free(ld_batch *b);
void *ld_writer(void *arg);
int ld_retire_done(ld_db *db);
int ld_drain(ld_db *db);
int ld_inline_now(const ld_db *db);
void ld_inline_update(ld_db *db);
void ld_on_wake(struct ev_loop *loop, ev_async *w, int revents);
int ld_commit(void *txn);

/* leveldb_view.c: the layered read view (overlay, uncommitted batches, row cache, LevelDB) and cursors */
int ld_get(void *txn, const void *k, size_t kl, const void **v, size_t *vl);
int ld_put(void *txn, const void *k, size_t kl, const void *v, size_t vl);
int ld_reserve(void *txn, const void *k, size_t kl, size_t vl, void **dst);
int ld_del(void *txn, const void *k, size_t kl);
int ld_drop(void *txn, const void *k, size_t kl);
int ld_get_cached(void *txn, const void *k, size_t kl, const void **v, size_t *vl);
int ld_clear(void *txn);
int ld_iter_open(void *txn, kv_iter **itp);
void ld_iter_close(kv_iter *it);
int ld_seek(kv_iter *it, const void *k, size_t kl);
int ld_seek_le(kv_iter *it, const void *k, size_t kl);
int ld_next(kv_iter *it);
int ld_prev(kv_iter *it);
int ld_cur(kv_iter *it, const void **k, size_t *kl, const void **v, size_t *vl);

/* Room for one more entry in x->reads (the turn's read copies, freed at the
 * next write or the transaction's end). 0, or -1 out of memory. */
static inline int ld_reads_room(ld_txn *x)
{
    if (x->nreads < x->capreads) return 0;
    size_t cap = x->capreads ? x->capreads * 2 : 16;
    char **r = realloc(x->reads, cap * sizeof *r);
    if (!r) return -1;
    x->reads = r;
    x->capreads = cap;
    return 0;
}

#endif
