/* leveldb.c — the LevelDB backend: a kv_driver over one LevelDB database
 * (cfg->dir) and `fd_leveldb_backend`, whose submit / end_turn / cron are the
 * generic ones of kv_backend.c. docs/leveldb.md is the long form.
 *
 * LevelDB has no transactions, and its reads do not see a WriteBatch that is
 * not yet written. The turn's transaction is therefore an in-memory OVERLAY:
 * a skiplist of key -> value | tombstone holding every write of the turn
 * (storage/kv/kv_overlay.h).
 *   - get() looks in the overlay first, then in LevelDB;
 *   - a cursor merges a LevelDB iterator with the overlay (overlay wins on
 *     equal keys, tombstones hide keys), forwards and backwards; it sees
 *     writes made after it was positioned (as an LMDB cursor does);
 *   - clear() (FLUSHDB) empties the overlay and hides all of LevelDB;
 *   - commit = ONE leveldb_write of a WriteBatch built from the overlay (all
 *     of LevelDB's keys deleted first after a clear), with WriteOptions.sync
 *     when cfg->sync: one write + one fsync per event-loop turn (group
 *     commit); a turn that wrote nothing writes nothing. The write runs on
 *     a writer thread ("commits" below): the frozen overlay stays a read
 *     layer until it is stored, and the replies of its writes wait
 *     (FD_PENDING, the backend is ops->async) — unless it cannot stall and
 *     the turn is light: then on the loop ("inline commits" below);
 *   - abort = drop the overlay.
 * Only the writer thread writes the database while a turn is open (the
 * loop writes inline only at the end of a turn, with nothing at the
 * writer), and only keys of overlays still layered above it, so reads need
 * no snapshot: for every other key
 * LevelDB is unchanged while a turn is open.
 * No nested transactions (begin(parent) is FD_E_NOTSUPPORTED, nearly_full is
 * NULL): a write to the overlay can only fail on malloc, so careful mode has
 * nothing to protect.
 */
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
#define LD_DEFAULT_WBUF   (64ULL << 20)
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

static int ov_cmp(const kv_ov_node *n, const char *k, size_t kl)
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
    /* after a FLUSHDB: a helper thread compacts the whole key space */
    pthread_t       cthread;
    pthread_mutex_t cmu;
    pthread_cond_t  ccv;
    int             cstarted, cwant, cstop, cbusy;
    uint64_t        compactions;
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
    uint64_t        poison_from, poison_upto;   /* under wmu: see writer() */
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

/* LevelDB reports errors as Status::ToString() text. Keeps the text for
 * INFO (leveldb_last_error) and frees it. */
static int ld_status(ld_db *db, char *err)
{
    if (!err) return FD_OK;
    int s = FD_E_IO;
    if (strncmp(err, "Corruption:", 11) == 0) s = FD_E_CORRUPT;
    else if (strncmp(err, "Invalid argument:", 17) == 0 || strncmp(err, "Not implemented:", 16) == 0)
        s = FD_E_INTERNAL;
    if (db) snprintf(db->last_error, sizeof db->last_error, "%s", err);
    leveldb_free(err);
    return s;
}

/* Free p (malloc'ed) with the turn's reads: at the next write or the
 * transaction's end. */
static int defer_free(ld_txn *x, void *p)
{
    if (x->nreads == x->capreads) {
        size_t cap = x->capreads ? x->capreads * 2 : 16;
        char **r = realloc(x->reads, cap * sizeof *r);
        if (!r) return FD_E_NOMEM;
        x->reads = r;
        x->capreads = cap;
    }
    x->reads[x->nreads++] = p;
    return FD_OK;
}

static void release_reads(ld_txn *x)
{
    for (size_t i = 0; i < x->nreads; i++) leveldb_free(x->reads[i]);
    x->nreads = 0;
    if (x->capreads > 64) {
        free(x->reads);
        x->reads = NULL;
        x->capreads = 0;
    }
}

static uint64_t row_hash(const char *k, size_t kl)
{
    uint64_t h = 0xcbf29ce484222325ULL;          /* FNV-1a */
    for (size_t i = 0; i < kl; i++) h = (h ^ (uint8_t)k[i]) * 0x100000001b3ULL;
    return h ^ (h >> 29);
}

static size_t row_cost(const ld_row *r) { return sizeof *r + r->kl + r->vl + 16; }
static int row_is_sub(ld_row *r) { return r->kl && row_key(r)[0] == KV_PFX_SUB; }

/* Account for r entering (+1) or leaving (-1) the cache. */
static void row_count(ld_db *db, ld_row *r, int d)
{
    size_t c = row_cost(r);
    db->rc_bytes = d > 0 ? db->rc_bytes + c : db->rc_bytes - c;
    db->rc_entries += (size_t)(ssize_t)d;
    if (row_is_sub(r)) db->rc_sub += (size_t)(ssize_t)d;
}

/* The address of the link to k's entry in its chain (*link NULL: none). */
static ld_row **row_link(ld_db *db, const char *k, size_t kl, uint64_t h)
{
    ld_row **l = &db->rc[h & (LD_RC_BUCKETS - 1)];
    for (; *l; l = &(*l)->next) {
        ld_row *r = *l;
        if (r->hash == h && r->kl == kl && memcmp(row_key(r), k, kl) == 0) break;
    }
    return l;
}

static void rc_clear(ld_db *db)
{
    if (!db->rc) return;
    for (size_t i = 0; i < LD_RC_BUCKETS; i++) {
        for (ld_row *r = db->rc[i], *nx; r; r = nx) { nx = r->next; free(r); }
        db->rc[i] = NULL;
    }
    db->rc_bytes = db->rc_entries = db->rc_sub = 0;
}

static int defer_free(ld_txn *x, void *p);

/* Remember LevelDB's answer for k (v NULL: no such key), read in
 * transaction x. Entries evicted to make room may have been handed out by
 * ld_get in this turn: they are freed with the turn's reads. Best effort:
 * out of memory leaves the cache as it was. */
static void rc_fill(ld_txn *x, const char *k, size_t kl, uint64_t h, const char *v, size_t vl)
{
    ld_db *db = x->db;
    if (kl > UINT32_MAX || vl > UINT32_MAX) return;
    if (!db->rc && !(db->rc = calloc(LD_RC_BUCKETS, sizeof *db->rc))) return;
    size_t cost = sizeof(ld_row) + kl + vl + 16;
    if (cost > db->rc_budget / 64) return;             /* big values: not worth the room */
    while (db->rc_bytes + cost > db->rc_budget) {
        ld_row **b = &db->rc[db->rc_hand++ & (LD_RC_BUCKETS - 1)];
        while (*b) {
            ld_row *r = *b;
            if (defer_free(x, r) != FD_OK) return;
            *b = r->next;
            row_count(db, r, -1);
            db->rc_evicted++;
        }
    }
    ld_row *r = malloc(cost - 16);
    if (!r) return;
    r->hash = h;
    r->kl = (uint32_t)kl;
    r->vl = (uint32_t)vl;
    r->held = v != NULL;
    memcpy(row_key(r), k, kl);
    if (vl) memcpy(row_val(r), v, vl);
    ld_row **b = &db->rc[h & (LD_RC_BUCKETS - 1)];
    r->next = *b;
    *b = r;
    row_count(db, r, 1);
}

/* After a successful commit of x: every written key's entry is replaced by
 * the new value or dropped (a delete). Runs between turns: nothing handed
 * out is live. */
static void rc_commit(ld_db *db, const kv_overlay *ov)
{
    if (!db->rc || !db->rc_entries) return;
    for (kv_ov_node *n = kv_overlay_first(ov); n; n = kv_ov_next(n)) {
        const char *k = kv_ov_key(n);
        /* element writes (LPUSH, HSET...) skip the lookup (a cache miss
         * on the bucket array) while no element record is cached */
        if (!db->rc_sub && n->klen && k[0] == KV_PFX_SUB) continue;
        uint64_t h = row_hash(k, n->klen);
        ld_row **l = row_link(db, k, n->klen, h);
        ld_row *r = *l;
        if (!r) continue;
        if (!n->dead && r->vl == n->vlen) {          /* same size: in place */
            r->held = 1;
            if (n->vlen) memcpy(row_val(r), n->val, n->vlen);
            continue;
        }
        *l = r->next;
        row_count(db, r, -1);
        if (!n->dead && sizeof *r + n->klen + n->vlen + 16 <= db->rc_budget / 64) {
            ld_row *nr = malloc(sizeof *nr + n->klen + n->vlen);
            if (nr) {
                *nr = *r;
                nr->vl = (uint32_t)n->vlen;
                nr->held = 1;
                memcpy(row_key(nr), k, n->klen);
                if (n->vlen) memcpy(row_val(nr), n->val, n->vlen);
                nr->next = *l;
                *l = nr;
                row_count(db, nr, 1);
            }
        }
        free(r);
    }
}

static void memo_note(ld_txn *x, const void *k, size_t kl, int held)
{
    x->sit_at = 0;
    if (kl > LD_MEMO_MAX) { x->memo = 0; return; }
    memcpy(x->memo_key, k, kl);
    x->memo_kl = kl;
    x->memo = held ? 1 : 2;
}

/* 1 LevelDB holds k, 0 it does not, -1 unknown (ask LevelDB). */
static int memo_find(const ld_txn *x, const void *k, size_t kl)
{
    if (!x->memo || x->memo_kl != kl || memcmp(x->memo_key, k, kl) != 0) return -1;
    return x->memo == 1;
}

/* 1 when k is the list element after the memo key (same list, sequence
 * number one higher), -1 when it is the one before, else 0. Only a hint
 * for the read path: any answer is correct, a wrong one costs a step.
 * Going down (RPOP) does not step the iterator backwards: LevelDB's Prev
 * searches the memtable again (its skiplist has no back links; measured
 * 14.5k against 11.6k instructions per RPOP); ld_get reads the
 * LD_READ_BEHIND elements below k forwards into the row cache instead. */
static int memo_step(const ld_txn *x, const char *k, size_t kl)
{
    const char *m = x->memo_key;
    if (x->memo != 1 || x->memo_kl != kl || kl < 11 || k[0] != KV_PFX_SUB ||
        k[kl - 9] != KV_TAG_LIST || memcmp(m, k, kl - 8) != 0) return 0;
    uint64_t a = kv_get_u64((const uint8_t *)m + kl - 8), b = kv_get_u64((const uint8_t *)k + kl - 8);
    return b == a + 1 ? 1 : a == b + 1 ? -1 : 0;
}

static void sit_drop(ld_txn *x)
{
    if (x->sit) leveldb_iter_destroy(x->sit);
    x->sit = NULL;
    x->sit_at = 0;
}

static void txn_end(ld_txn *x)
{
    x->memo = 0;
    sit_drop(x);
    release_reads(x);
    kv_overlay_clear(x->ov);
    x->cleared = 0;
    x->must_sync = 0;
    x->used = 0;
}

/* FLUSHDB leaves a tombstone for every record. Until compactions drop them,
 * every seek into a deleted range (cron's seek to the expiry index, KEYS,
 * SCAN) steps over all of them: slow, on the loop thread. So after a clear
 * is committed a helper thread runs leveldb_compact_range over everything
 * (requests made meanwhile are merged into one more run); the loop goes on
 * serving. */
static void *compactor(void *arg)
{
    ld_db *db = arg;
    pthread_mutex_lock(&db->cmu);
    for (;;) {
        while (!db->cwant && !db->cstop) pthread_cond_wait(&db->ccv, &db->cmu);
        if (db->cstop) break;
        db->cwant = 0;
        db->cbusy = 1;
        pthread_mutex_unlock(&db->cmu);
        leveldb_compact_range(db->ldb, NULL, 0, NULL, 0);
        pthread_mutex_lock(&db->cmu);
        db->cbusy = 0;
        db->compactions++;
    }
    pthread_mutex_unlock(&db->cmu);
    return NULL;
}

static void request_compaction(ld_db *db)
{
    /* compact_range switches the memtable and waits for its flush, holding
     * LevelDB's write queue: a write behind it would wait too */
    db->inline_ok = 0;
    if (!db->cstarted) {
        if (pthread_mutex_init(&db->cmu, NULL) != 0) return;
        if (pthread_cond_init(&db->ccv, NULL) != 0) { pthread_mutex_destroy(&db->cmu); return; }
        if (pthread_create(&db->cthread, NULL, compactor, db) != 0) {
            pthread_cond_destroy(&db->ccv);
            pthread_mutex_destroy(&db->cmu);
            return;                  /* no helper: LevelDB compacts in its own time */
        }
        db->cstarted = 1;
    }
    pthread_mutex_lock(&db->cmu);
    db->cwant = 1;
    pthread_cond_signal(&db->ccv);
    pthread_mutex_unlock(&db->cmu);
}

static void hint_free(ld_hint *h)
{
    free(h->a);
    free(h->b);
    memset(h, 0, sizeof *h);
}

static void hints_clear(ld_db *db)
{
    for (int i = 0; i < LD_HINTS; i++) hint_free(&db->hints[i]);
}

/* After a commit: a hint whose range received a live record is wrong now. */
static void hints_drop_written(ld_db *db, const kv_overlay *ov)
{
    for (int i = 0; i < LD_HINTS; i++) {
        ld_hint *h = &db->hints[i];
        if (!h->used) continue;
        for (kv_ov_node *n = kv_overlay_seek(ov, h->a, h->al, 0); n && ov_cmp(n, h->b, h->bl) < 0; n = kv_ov_next(n))
            if (!n->dead) { hint_free(h); break; }
    }
}

/* The hint containing k, or NULL. */
static ld_hint *hint_find(ld_db *db, const char *k, size_t kl)
{
    for (int i = 0; i < LD_HINTS; i++) {
        ld_hint *h = &db->hints[i];
        if (h->used && kv_overlay_keycmp(h->a, h->al, k, kl) <= 0 && kv_overlay_keycmp(k, kl, h->b, h->bl) < 0) return h;
    }
    return NULL;
}

/* A seek to a landed on b: [a, b) holds no live record. h: the hint that
 * was used (extended), else a new one replaces the least recently used. */
static void hint_note(ld_db *db, ld_hint *h, const char *a, size_t al, const char *b, size_t bl)
{
    if (kv_overlay_keycmp(a, al, b, bl) >= 0) return;
    if (!h) {
        h = &db->hints[0];
        for (int i = 1; i < LD_HINTS && h->used; i++)
            if (db->hints[i].used < h->used) h = &db->hints[i];
        hint_free(h);
        h->a = malloc(al ? al : 1);
        if (!h->a) return;
        if (al) memcpy(h->a, a, al);
        h->al = al;
    }
    char *nb = malloc(bl ? bl : 1);
    if (!nb) { hint_free(h); return; }
    if (bl) memcpy(nb, b, bl);
    free(h->b);
    h->b = nb;
    h->bl = bl;
    h->used = ++db->hint_clock;
}

/* ---------------------------------------------------------------- driver */

/* ---------------------------------------------------------------- commits
 *
 * Asynchronous commit (docs/leveldb.md, "Commits off the loop thread").
 * end_turn freezes the turn's overlay into a batch (or merges it into the
 * batch still waiting at the queue's tail) and returns; the writer thread
 * writes batches in order, one leveldb_write each. Until a batch is retired
 * its overlay is a layer of every read (newest first, then LevelDB). The
 * replies of the writes it holds are completed (fd_pending_reply) when the
 * write is done, from the ev_async callback. Retirement (row cache, seek
 * hints, statistics, freeing) happens on the loop thread only while no
 * transaction is open, so the layers a transaction reads never change
 * under it: memos, read iterators and cursors stay true for its duration.
 *
 * A failed write fails the replies its batch holds, and every batch frozen
 * before the loop saw the failure (they may have read the lost data): see
 * writer(). A turn that released a write reply (a script), FLUSHDB, and any
 * commit without a loop (unit tests) are written before end_turn returns. */

static int holds_push(ld_holds *h, fd_pending *p, const void *reply, size_t len)
{
    if (h->nheld == h->capheld) {
        size_t cap = h->capheld ? h->capheld * 2 : 16;
        ld_held *n = realloc(h->held, cap * sizeof *n);
        if (!n) return FD_E_NOMEM;
        h->held = n;
        h->capheld = cap;
    }
    if (h->rlen + len > h->rcap) {
        size_t cap = h->rcap ? h->rcap : 256;
        while (cap < h->rlen + len) cap *= 2;
        char *n = realloc(h->rbuf, cap);
        if (!n) return FD_E_NOMEM;
        h->rbuf = n;
        h->rcap = cap;
    }
    if (len) memcpy(h->rbuf + h->rlen, reply, len);
    h->held[h->nheld++] = (ld_held){p, h->rlen, len};
    h->rlen += len;
    return FD_OK;
}

/* Append src's replies to dst (src emptied). */
static int holds_move(ld_holds *dst, ld_holds *src)
{
    if (!dst->nheld) {
        ld_holds t = *dst;
        *dst = *src;
        *src = t;
        src->nheld = src->rlen = 0;
        return FD_OK;
    }
    for (size_t i = 0; i < src->nheld; i++)
        if (holds_push(dst, src->held[i].p, src->rbuf + src->held[i].off, src->held[i].len) != FD_OK) {
            /* what did not move fails now */
            for (size_t j = i; j < src->nheld; j++) src->held[j - i] = src->held[j];
            src->nheld -= i;
            return FD_E_NOMEM;
        }
    src->nheld = src->rlen = 0;
    return FD_OK;
}

static void holds_free(ld_holds *h)
{
    free(h->held);
    free(h->rbuf);
    memset(h, 0, sizeof *h);
}

/* Queue h's replies for on_wake with `status` (h emptied). */
static void answers_add(ld_db *db, ld_holds *h, int status)
{
    if (!h->nheld) return;
    ld_answers *a = calloc(1, sizeof *a);
    if (!a) {
        /* cannot even queue: complete them now (the host copes) */
        for (size_t i = 0; i < h->nheld; i++) fd_pending_error(h->held[i].p, FD_E_NOMEM);
        h->nheld = h->rlen = 0;
        return;
    }
    a->status = status;
    a->held = h->held;
    a->nheld = h->nheld;
    a->rbuf = h->rbuf;
    memset(h, 0, sizeof *h);
    if (db->ans_tail) db->ans_tail->next = a;
    else db->ans = a;
    db->ans_tail = a;
    if (db->async && !db->in_wake) ev_async_send(db->loop, &db->wake);
}

/* Complete every queued reply (loop thread, outside submit/end_turn). */
static void answers_send(ld_db *db)
{
    while (db->ans) {
        ld_answers *a = db->ans;
        db->ans = db->ans_tail = NULL;
        while (a) {
            ld_answers *nx = a->next;
            for (size_t i = 0; i < a->nheld; i++) {
                if (a->status == FD_OK) fd_pending_reply(a->held[i].p, a->rbuf + a->held[i].off, a->held[i].len);
                else { fd_pending_error(a->held[i].p, a->status); db->failed_replies++; }
            }
            free(a->held);
            free(a->rbuf);
            free(a);
            a = nx;
        }
    }
}

static void batch_free(ld_batch *b)
{
    kv_overlay_free(b->ov);
    holds_free(&b->h);
    free(b);
}

/* Length of x as a varint32/64 (LevelDB's encoding). */
static inline size_t varint_len(uint64_t x)
{
    if (x < 128) return 1;
    size_t n = 2;
    for (x >>= 14; x; x >>= 7) n++;
    return n;
}

/* The bytes LevelDB's memtable arena grows by for one record of an entry
 * of e bytes: MemTable::Add allocates the entry, then the skiplist node
 * (8-aligned, 16 + 8 per extra level: 1/4 of the nodes have 2 levels or
 * more, a mean of 18.7 bytes; here 16 twice, then 24). Arena::Allocate
 * takes it from the current 4 KB block, or starts a new one (the rest is
 * wasted), or gives a request above 1 KB a block of its own; each block
 * counts its size plus a pointer (Arena::MemoryUsage). Simulated, so the
 * estimate includes the waste (25% with 1 KB entries). Called by whoever
 * writes (the writer thread or the loop, never both at once). */
static inline uint64_t arena_alloc(ld_db *db, size_t n)
{
    if (n <= db->ar_rem) { db->ar_rem -= n; return 0; }
    if (n > LD_ARENA_BLOCK / 4) return n + sizeof(char *);
    db->ar_rem = LD_ARENA_BLOCK - n;
    return LD_ARENA_BLOCK + sizeof(char *);
}

static inline uint64_t arena_add(ld_db *db, size_t e)
{
    uint64_t a = arena_alloc(db, e);
    size_t pad = (LD_ARENA_BLOCK - db->ar_rem) & 7;   /* the node is 8-aligned */
    size_t node = ++db->ar_n % 3 ? 16 : 24;
    return a + arena_alloc(db, pad + node);
}

/* Append one record to wb, adding to *arena the bytes LevelDB's memtable
 * will use for it (arena_add of its entry: varint lengths, key, 8-byte
 * tag, value) and to *logb its bytes in the log (the entry less the tag
 * plus a type byte, to a byte). */
static inline void wb_add(ld_db *db, leveldb_writebatch_t *wb, const char *k, size_t kl, const char *v, size_t vl,
                   int del, uint64_t *arena, uint64_t *logb)
{
    if (del) leveldb_writebatch_delete(wb, k, kl);
    else leveldb_writebatch_put(wb, k, kl, v, vl);
    size_t e = varint_len(kl + 8) + kl + 8 + varint_len(vl) + vl;
    *arena += arena_add(db, e);
    *logb += e - 7;
}

/* One leveldb_write of overlay ov (after a clear: first a delete of every
 * record LevelDB holds). Sets *records, and *arena / *logb (wb_add; the log
 * also gets a 12-byte batch header and a 7-byte header per 32 KB block).
 * Only reads ov and LevelDB. FD_OK or FD_E_*, LevelDB's text in errbuf. */
static int write_overlay(ld_db *db, const kv_overlay *ov, int cleared, uint64_t *records,
                         uint64_t *arena, uint64_t *logb, char *errbuf, size_t errlen)
{
    if (db->delay_ms > 0) {                  /* test hook: a slow write */
        struct timespec ts = {db->delay_ms / 1000, (long)(db->delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    leveldb_writebatch_t *wb = leveldb_writebatch_create();
    uint64_t n = 0, a = 0, l = 12;
    char *err = NULL;
    if (cleared) {
        /* FLUSHDB: every record LevelDB holds goes, in the same batch */
        leveldb_iterator_t *it = leveldb_create_iterator(db->ldb, db->ropts);
        for (leveldb_iter_seek_to_first(it); leveldb_iter_valid(it); leveldb_iter_next(it)) {
            size_t kl;
            const char *k = leveldb_iter_key(it, &kl);
            wb_add(db, wb, k, kl, NULL, 0, 1, &a, &l);
            n++;
        }
        leveldb_iter_get_error(it, &err);
        leveldb_iter_destroy(it);
    }
    if (!err) {
        for (kv_ov_node *nd = kv_overlay_first(ov); nd; nd = kv_ov_next(nd)) {
            wb_add(db, wb, kv_ov_key(nd), nd->klen, nd->val ? nd->val : "", nd->vlen, nd->dead, &a, &l);
            n++;
        }
        leveldb_write(db->ldb, db->wopts, wb, &err);
    }
    leveldb_writebatch_destroy(wb);
    *records = n;
    *arena = a;
    *logb = l + 7 * (1 + l / 32768);
    if (err) snprintf(errbuf, errlen, "%s", err);
    return ld_status(NULL, err);
}

/* Write batch b into LevelDB (the writer thread). */
static int batch_write(ld_db *db, ld_batch *b)
{
    int64_t t0 = fd_mono_us();
    if (db->fail_nth && db->async && ++db->nwritten == db->fail_nth) {
        snprintf(b->err, sizeof b->err, "IO error: injected (FRONTDOOR_LEVELDB_FAIL_WRITE)");
        b->write_us = 0;
        return FD_E_IO;
    }
    int s = write_overlay(db, b->ov, b->cleared, &b->records, &b->arena, &b->logb, b->err, sizeof b->err);
    b->write_us = (uint64_t)(fd_mono_us() - t0);
    return s;
}

/* The writer thread. A failed write (batch F) poisons the queue: every
 * later batch up to poison_upto fails unwritten, since its turns may have
 * read F's data. poison_upto is the last batch queued when the loop retired
 * F (no transaction open then: later turns never saw F); the first batch
 * after it is written again and clears the poison. */
static void *writer(void *arg)
{
    ld_db *db = arg;
    pthread_mutex_lock(&db->wmu);
    for (;;) {
        ld_batch *b = NULL;
        for (int i = 0; i < db->nb; i++)
            if (db->bq[i]->state == LB_QUEUED) { b = db->bq[i]; break; }
        if (db->freeq && (!b || db->nfree > 64)) {
            /* retired batches: freeing a big overlay is the writer's work, not the loop's */
            ld_batch *f = db->freeq;
            db->freeq = NULL;
            db->nfree = 0;
            pthread_mutex_unlock(&db->wmu);
            while (f) { ld_batch *nx = f->fnext; batch_free(f); f = nx; }
            pthread_mutex_lock(&db->wmu);
            continue;
        }
        if (!b) {
            if (db->wstop) break;
            db->widle = 1;
            pthread_cond_wait(&db->wcv, &db->wmu);
            db->widle = 0;
            continue;
        }
        b->state = LB_WRITING;
        int skip = 0;
        if (db->poison_from) {
            if (b->seq <= db->poison_upto) skip = db->poison_status;
            else db->poison_from = 0;
        }
        pthread_mutex_unlock(&db->wmu);
        int s = b->fail ? b->fail : skip ? skip : batch_write(db, b);
        pthread_mutex_lock(&db->wmu);
        if (s != FD_OK && !db->poison_from) {
            db->poison_from = b->seq;
            db->poison_upto = UINT64_MAX;
            db->poison_status = s;
        }
        b->status = s;
        b->state = LB_DONE;
        pthread_cond_broadcast(&db->dcv);
        pthread_mutex_unlock(&db->wmu);
        ev_async_send(db->loop, &db->wake);
        pthread_mutex_lock(&db->wmu);
    }
    pthread_mutex_unlock(&db->wmu);
    return NULL;
}

/* Move the replies of every finished batch to db->ans (loop thread). */
static void collect_done(ld_db *db)
{
    if (!db->nb) return;
    pthread_mutex_lock(&db->wmu);
    for (int i = 0; i < db->nb; i++) {
        ld_batch *b = db->bq[i];
        if (b->state != LB_DONE || b->collected) continue;
        b->collected = 1;
        db->held_replies -= b->h.nheld;
        if (b->status != FD_OK) {
            if (!b->err[0]) snprintf(b->err, sizeof b->err, "%s", fd_strerror(b->status));
            db->commit_failures++;
        }
        answers_add(db, &b->h, b->status);
    }
    pthread_mutex_unlock(&db->wmu);
}

/* Apply a written batch to the loop's state and free it. */
static void batch_retire(ld_db *db, ld_batch *b)
{
    uint64_t bytes = kv_overlay_bytes(b->ov);
    db->held_bytes -= bytes;
    if (b->status == FD_OK) {
        hints_drop_written(db, b->ov);
        if (b->cleared) { rc_clear(db); request_compaction(db); }
        else rc_commit(db, b->ov);
        db->commits++;
        db->arena_sum += b->arena;
        db->logb_sum += b->logb;
        db->commit_records += b->records;
        db->commit_bytes += bytes;
        db->last_commit_us = b->write_us;
        db->total_commit_us += b->write_us;
        if (b->write_us > db->max_commit_us) db->max_commit_us = b->write_us;
        if (b->write_us > LD_SLOW_COMMIT_US) db->slow_commits++;
        if (b->write_us > LD_STALL_US) db->writer_stall_us += b->write_us;
    } else {
        /* LevelDB's state is unknown: forget what was learnt of it */
        hints_clear(db);
        rc_clear(db);
        if (b->err[0]) snprintf(db->last_error, sizeof db->last_error, "%s", b->err);
        pthread_mutex_lock(&db->wmu);
        if (db->poison_from && db->poison_upto == UINT64_MAX) db->poison_upto = db->seq;
        pthread_mutex_unlock(&db->wmu);
    }
    db->writer_busy_us += b->write_us;
    holds_free(&b->h);
    if (db->async) {
        pthread_mutex_lock(&db->wmu);
        b->fnext = db->freeq;
        db->freeq = b;
        db->nfree++;
        /* no wake-up: the writer frees them before its next wait (a signal
         * per batch made the writer preempt the loop) */
        pthread_mutex_unlock(&db->wmu);
    } else {
        batch_free(b);
    }
}

/* Retire the finished batches at the head of the queue. Only while no
 * transaction is open. Returns the first failed status retired, or FD_OK. */
static int retire_done(ld_db *db)
{
    int failed = FD_OK;
    if (!db->nb || db->tx.used) return FD_OK;
    int64_t t0 = fd_mono_us();
    collect_done(db);
    /* out of the queue first: the writer scans it, and frees what it is handed */
    ld_batch *done[LD_MAX_BATCHES];
    int k = 0;
    pthread_mutex_lock(&db->wmu);
    /* collected only: a batch done since collect_done still owes its replies */
    while (k < db->nb && db->bq[k]->state == LB_DONE && db->bq[k]->collected) { done[k] = db->bq[k]; k++; }
    if (k) {
        memmove(db->bq, db->bq + k, (size_t)(db->nb - k) * sizeof *db->bq);
        db->nb -= k;
    }
    pthread_mutex_unlock(&db->wmu);
    if (k) {
        for (int i = 0; i < k; i++) {
            if (done[i]->status != FD_OK && failed == FD_OK) failed = done[i]->status;
            batch_retire(db, done[i]);
        }
        uint64_t us = (uint64_t)(fd_mono_us() - t0);
        if (us > db->retire_max_us) db->retire_max_us = us;
    }
    return failed;
}

/* Wait until the writer finished one more batch (loop thread). */
static void wait_progress(ld_db *db)
{
    pthread_mutex_lock(&db->wmu);
    for (;;) {
        int k = 0;
        while (k < db->nb && db->bq[k]->state == LB_DONE) k++;
        if (k > 0 || !db->nb) break;
        pthread_cond_wait(&db->dcv, &db->wmu);
    }
    pthread_mutex_unlock(&db->wmu);
}

/* Every batch written and retired. The first failure among them, or FD_OK. */
static int drain(ld_db *db)
{
    int failed = FD_OK;
    while (db->nb) {
        int s = retire_done(db);
        if (s != FD_OK && failed == FD_OK) failed = s;
        if (db->nb) wait_progress(db);
    }
    return failed;
}

/* ---------------------------------------------------------------- inline commits
 *
 * A turn goes to the writer thread only because leveldb_write MAY stall.
 * It blocks only in MakeRoomForWrite, evaluated once before the batch goes
 * in: with >= 8 level-0 files (1 ms sleep), >= 12 (wait), or a memtable
 * above write_buffer_size (then a switch; a wait if the previous memtable
 * is still being flushed). So while nothing is in flight at the writer, L0
 * (plus the flush in progress) is below 8 and the memtable is below
 * write_buffer_size less a margin for the estimate, a turn is written on
 * the loop as without a writer: its write replies are not held, the proxy
 * hands them no pending handle at all (be->writes_inline). Those conditions
 * can only stop holding through a write: the memtable grows by what we
 * write (mem_est counts it), level 0 grows only by a flush, which follows
 * a switch. Once a turn went to the writer, every later one does until the
 * writer has nothing left (order), then inline_poll reads LevelDB's state
 * again. LevelDB says nothing about its memtable alone
 * ("approximate-memory-usage" includes the block cache), so the poll
 * estimates it from the current log file: the memtable holds exactly the
 * writes in it, at the memtable/log byte ratio of every write so far; a
 * second log file means a flush in progress. */

static unsigned long long ld_prop_ull(ld_db *db, const char *name);

/* A memtable estimated at est bytes is below LevelDB's write buffer by
 * more than the estimate's error (1/16 of it): no write can switch it. */
static int memtable_has_room(const ld_db *db, uint64_t est)
{
    return est + db->wbuf_size / 16 < db->wbuf_size;
}

/* Read LevelDB's state (writer mode, nothing in flight): inline_ok when no
 * write can stall. At most every LD_POLL_US. */
static void inline_poll(ld_db *db)
{
    int64_t now = fd_mono_us();
    if (now - db->poll_us < LD_POLL_US || now < db->inline_after_us) return;
    db->poll_us = now;
    db->polls++;
    if (db->cstarted) {
        pthread_mutex_lock(&db->cmu);
        int busy = db->cwant || db->cbusy;
        pthread_mutex_unlock(&db->cmu);
        if (busy) return;
    }
    int l0 = (int)ld_prop_ull(db, "leveldb.num-files-at-level0");
    if (l0 >= LD_L0_SLOWDOWN - 1) return;
    /* kept open: opendir's 32 KB buffer is a malloc that consolidates the heap */
    if (db->logdir) rewinddir(db->logdir);
    else if (!(db->logdir = opendir(db->dir))) return;
    DIR *d = db->logdir;
    int nlogs = 0;
    unsigned long long maxn = 0;
    char name[64] = "";
    for (struct dirent *de; (de = readdir(d)); ) {
        size_t n = strlen(de->d_name);
        char *end;
        if (n < 5 || n >= sizeof name || strcmp(de->d_name + n - 4, ".log") != 0) continue;
        unsigned long long num = strtoull(de->d_name, &end, 10);
        if (end != de->d_name + n - 4) continue;
        nlogs++;
        if (num >= maxn) { maxn = num; memcpy(name, de->d_name, n + 1); }
    }
    /* two logs: the previous memtable is being flushed (one more L0 file) */
    if (nlogs < 1 || nlogs > 2 || l0 + nlogs - 1 >= LD_L0_SLOWDOWN) return;
    char path[4200];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", db->dir, name);
    if (stat(path, &sb) != 0) return;
    double ratio = db->logb_sum >= (1u << 20) ? (double)db->arena_sum / (double)db->logb_sum : 4.0;
    uint64_t est = (uint64_t)((double)sb.st_size * ratio);
    if (!memtable_has_room(db, est)) return;
    db->mem_est = est;
    db->inline_ok = 1;
}

/* A turn written now goes inline: allowed (inline_poll), nothing at the
 * writer, and the turns are small (a heavy write stream, LD_INLINE_TURN_BYTES
 * a turn and more, costs the loop more time than the writer's hand-over:
 * the writer writes it on the other core while the loop serves). */
static int inline_now(const ld_db *db)
{
    return db->inline_ok && !db->nb && db->turn_bytes_avg < LD_INLINE_TURN_BYTES;
}

/* The proxy's flag for the next requests: inline while allowed and nothing
 * is at the writer. Called between turns only. */
static void inline_update(ld_db *db)
{
    if (!db->be) return;
    if (!db->inline_ok && !db->nb && db->async && !db->no_inline &&
        db->turn_bytes_avg < LD_INLINE_TURN_BYTES)    /* (else the poll could not make it inline) */
        inline_poll(db);
    db->be->writes_inline = inline_now(db);
}

/* The loop thread's voluntary context switches so far: a write that made
 * it sleep (a lock held by LevelDB's compaction, the kernel's writeback)
 * adds one; a preemption does not. */
static long thread_sleeps(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nvcsw : 0;
}

/* Write x's overlay on the loop thread, as without a writer (nothing is in
 * flight: the caller drained the queue). Its held replies (if any) complete
 * after it. */
static int commit_inline(ld_db *db, ld_txn *x)
{
    int64_t t0 = fd_mono_us();
    long v0 = db->async ? thread_sleeps() : 0;
    uint64_t records = 0, arena = 0, logb = 0;
    char err[256] = "";
    int s = write_overlay(db, x->ov, x->cleared, &records, &arena, &logb, err, sizeof err);
    uint64_t us = (uint64_t)(fd_mono_us() - t0);
    if (s == FD_OK) {
        hints_drop_written(db, x->ov);
        if (x->cleared) { rc_clear(db); request_compaction(db); }
        else rc_commit(db, x->ov);
        db->commits++;
        db->commit_records += records;
        db->commit_bytes += kv_overlay_bytes(x->ov);
        db->last_commit_us = us;
        db->total_commit_us += us;
        if (us > db->max_commit_us) db->max_commit_us = us;
        if (us > LD_SLOW_COMMIT_US) db->slow_commits++;
        db->arena_sum += arena;
        db->logb_sum += logb;
        db->mem_est += arena;
    } else {
        /* LevelDB's state is unknown: forget what was learnt of it */
        hints_clear(db);
        rc_clear(db);
        db->commit_failures++;
        snprintf(db->last_error, sizeof db->last_error, "%s", err[0] ? err : fd_strerror(s));
    }
    if (db->async) {
        db->inline_commits++;
        if (!memtable_has_room(db, db->mem_est)) db->inline_ok = 0;   /* the switch is the writer's */
        /* slow, and it slept: LevelDB (a lock its compaction holds, a stall)
         * or the kernel (writeback) made the loop wait. Back to the writer
         * for a while; preempted only: stay (the writer would not help) */
        if (us > LD_STALL_US) {
            db->inline_slow++;
            if (thread_sleeps() != v0) {
                db->inline_blocked++;
                db->writer_stall_us += us;
                db->inline_ok = 0;
                db->inline_after_us = fd_mono_us() + LD_INLINE_BACKOFF_US;
            }
        }
    }
    answers_add(db, &x->h, s);
    txn_end(x);
    return s;
}

static void on_wake(struct ev_loop *loop, ev_async *w, int revents)
{
    (void)loop; (void)revents;
    ld_db *db = w->data;
    db->in_wake = 1;
    if (db->tx.used) collect_done(db);
    else { retire_done(db); inline_update(db); }
    db->in_wake = 0;
    answers_send(db);
}

static int ld_begin(void *dbp, void *parent, void **txn)
{
    ld_db *db = dbp;
    if (parent) return FD_E_NOTSUPPORTED;
    if (db->tx.used) return FD_E_INTERNAL;
    if (db->nb) retire_done(db);
    if (!db->tx.ov && !(db->tx.ov = kv_overlay_new())) return FD_E_NOMEM;
    db->tx.db = db;
    db->tx.used = 1;
    db->tx.cleared = 0;
    db->tx.must_sync = 0;
    db->tx.inline_turn = db->be && db->be->writes_inline;
    *txn = &db->tx;
    return FD_OK;
}

static void ld_abort(void *txn)
{
    ld_txn *x = txn;
    answers_add(x->db, &x->h, FD_E_IO);      /* their writes are not made */
    txn_end(x);
}

static uint64_t ld_stamp(void *txn)
{
    return ((ld_txn *)txn)->stamp;
}

static int ld_hold(void *txn, fd_pending *p, const void *reply, size_t len)
{
    ld_txn *x = txn;
    if (!p || !x->db->async) { x->must_sync = 1; return p ? FD_E_NOTSUPPORTED : FD_OK; }
    return holds_push(&x->h, p, reply, len);
}

/* Merge overlay src into dst (the newer src wins). */
static int overlay_merge(kv_overlay *dst, const kv_overlay *src)
{
    for (kv_ov_node *n = kv_overlay_first(src); n; n = kv_ov_next(n)) {
        int s = n->dead ? kv_overlay_del(dst, kv_ov_key(n), n->klen)
                        : kv_overlay_put(dst, kv_ov_key(n), n->klen, n->val, n->vlen, NULL);
        if (s != FD_OK) return s;
    }
    return FD_OK;
}

/* Loop-thread time in end_turn's commit (INFO). */
static void loop_commit_time(ld_db *db, int64_t t0)
{
    if (!db->async) return;                  /* (not the format stamp written at open) */
    uint64_t us = (uint64_t)(fd_mono_us() - t0);
    db->loop_commit_us += us;
    if (us > db->loop_commit_max_us) db->loop_commit_max_us = us;
}

/* The end of a turn. Written here, on the loop (commit_inline), while no
 * write can stall and nothing is at the writer; also (after waiting for
 * the writer) when a reply was released, after a clear, and without a
 * writer. Otherwise x's writes become a batch for the writer (merged into
 * the one waiting at the tail, if any). */
static int ld_commit(void *txn)
{
    ld_txn *x = txn;
    ld_db *db = x->db;
    if (kv_overlay_count(x->ov) == 0 && !x->cleared) {
        answers_add(db, &x->h, FD_OK);       /* (nothing held: a hold needs a write) */
        txn_end(x);
        if (db->nb) retire_done(db);
        inline_update(db);
        return FD_OK;
    }
    int64_t t0 = fd_mono_us();
    if (kv_overlay_count(x->ov) > db->max_overlay) db->max_overlay = kv_overlay_count(x->ov);
    uint64_t tb = kv_overlay_bytes(x->ov);
    db->turn_bytes_avg = db->turn_bytes_avg - db->turn_bytes_avg / 8 + tb / 8;
    int inl = inline_now(db);
    if (!db->async || inl || x->inline_turn || x->cleared || x->must_sync) {
        int s = FD_OK;
        if (db->async && !inl && !x->inline_turn) db->sync_turns++;
        if (db->nb) {
            /* in order: what the writer holds goes first (x is not read any more) */
            x->used = 0;
            s = drain(db);
            x->used = 1;
        }
        if (s != FD_OK) {
            /* x may have read what was lost */
            answers_add(db, &x->h, s);
            txn_end(x);
        } else {
            s = commit_inline(db, x);
        }
        loop_commit_time(db, t0);
        inline_update(db);
        return s;
    }
    int s = FD_OK;
    ld_batch *tail = NULL;
    db->inline_ok = 0;                       /* what the writer writes is not counted: poll again */
    if (db->nb) {
        int64_t tl = fd_mono_us();
        pthread_mutex_lock(&db->wmu);        /* the writer cannot take it while we merge */
        uint64_t lw = (uint64_t)(fd_mono_us() - tl);
        if (lw > db->lock_wait_max_us) db->lock_wait_max_us = lw;
        if (db->bq[db->nb - 1]->state == LB_QUEUED) tail = db->bq[db->nb - 1];
        if (tail) {
            uint64_t before = kv_overlay_bytes(tail->ov);
            s = overlay_merge(tail->ov, x->ov);
            db->held_bytes += kv_overlay_bytes(tail->ov) - before;
            size_t nh = x->h.nheld;
            if (s == FD_OK) s = holds_move(&tail->h, &x->h);
            db->held_replies += nh - x->h.nheld;
            if (s != FD_OK) tail->fail = s;     /* half merged: the writer must not write it */
            tail->turns++;
            db->merged_turns++;
        }
        pthread_mutex_unlock(&db->wmu);
    }
    if (s != FD_OK) {
        /* the tail is half merged: the writer fails it (and the queue after it) */
        answers_add(db, &x->h, s);
        txn_end(x);
        inline_update(db);
        return s;
    }
    if (!tail) {
        ld_batch *b = calloc(1, sizeof *b);
        kv_overlay *fresh = b ? kv_overlay_new() : NULL;
        if (!fresh) {
            free(b);
            answers_add(db, &x->h, FD_E_NOMEM);
            txn_end(x);
            inline_update(db);
            return FD_E_NOMEM;
        }
        b->ov = x->ov;
        x->ov = fresh;
        b->turns = 1;
        b->h = x->h;
        memset(&x->h, 0, sizeof x->h);
        db->held_bytes += kv_overlay_bytes(b->ov);
        db->held_replies += b->h.nheld;
        while (db->nb == LD_MAX_BATCHES) {
            txn_end(x);                      /* (retire needs no open transaction) */
            retire_done(db);
            if (db->nb == LD_MAX_BATCHES) wait_progress(db);
        }
        pthread_mutex_lock(&db->wmu);
        b->seq = ++db->seq;
        b->state = LB_QUEUED;
        db->bq[db->nb++] = b;
        if (db->widle) pthread_cond_signal(&db->wcv);
        pthread_mutex_unlock(&db->wmu);
    }
    txn_end(x);
    /* the bound: wait for the writer rather than hold more */
    int waited = 0;
    int64_t tw = 0;
    while (db->nb && (db->held_bytes > LD_HOLD_BYTES || db->held_replies > LD_HOLD_REPLIES)) {
        if (!waited) { waited = 1; tw = fd_mono_us(); db->bp_waits++; }
        retire_done(db);
        if (db->nb && (db->held_bytes > LD_HOLD_BYTES || db->held_replies > LD_HOLD_REPLIES))
            wait_progress(db);
    }
    if (waited) db->bp_us += (uint64_t)(fd_mono_us() - tw);
    retire_done(db);
    loop_commit_time(db, t0);
    inline_update(db);
    return s;
}

static const char empty_val[1];

/* The newest uncommitted batch's entry of k, or NULL. */
static kv_ov_node *layer_get(ld_db *db, const void *k, size_t kl)
{
    for (int i = db->nb - 1; i >= 0; i--) {
        kv_ov_node *n = kv_overlay_get(db->bq[i]->ov, k, kl);
        if (n) return n;
    }
    return NULL;
}

/* The overlay side of a cursor: the turn's overlay over the uncommitted
 * batches (newest first; none after a clear in this turn). For each key the
 * newest layer's entry stands for it. Layers do not change while a
 * transaction is open (retirement waits for its end), so an entry pointer
 * stays valid while the turn overlay's generation does. */
static kv_ov_node *vw_seek(const ld_txn *x, const void *k, size_t kl, int strict)
{
    kv_ov_node *best = kv_overlay_seek(x->ov, k, kl, strict);
    if (x->cleared) return best;
    for (int i = x->db->nb - 1; i >= 0; i--) {
        kv_ov_node *n = kv_overlay_seek(x->db->bq[i]->ov, k, kl, strict);
        if (n && (!best || ov_cmp(n, kv_ov_key(best), best->klen) < 0)) best = n;
    }
    return best;
}

static kv_ov_node *vw_seek_le(const ld_txn *x, const void *k, size_t kl, int strict)
{
    kv_ov_node *best = kv_overlay_seek_le(x->ov, k, kl, strict);
    if (x->cleared) return best;
    for (int i = x->db->nb - 1; i >= 0; i--) {
        kv_ov_node *n = kv_overlay_seek_le(x->db->bq[i]->ov, k, kl, strict);
        if (n && (!best || ov_cmp(n, kv_ov_key(best), best->klen) > 0)) best = n;
    }
    return best;
}

static kv_ov_node *vw_next(const ld_txn *x, const kv_ov_node *n)
{
    if (!x->db->nb || x->cleared) return kv_ov_next(n);
    return vw_seek(x, kv_ov_key(n), n->klen, 1);
}

static kv_ov_node *vw_prev(const ld_txn *x, const kv_ov_node *n)
{
    return vw_seek_le(x, kv_ov_key(n), n->klen, 1);
}

static kv_ov_node *vw_get(ld_txn *x, const void *k, size_t kl)
{
    kv_ov_node *n = kv_overlay_get(x->ov, k, kl);
    if (n || x->cleared || !x->db->nb) return n;
    return layer_get(x->db, k, kl);
}

static ld_row *const no_row = NULL;

/* row_link that also works before the cache exists. */
static ld_row *const *row_link_or_null(ld_db *db, const char *k, size_t kl, uint64_t h)
{
    return db->rc ? row_link(db, k, kl, h) : &no_row;
}

/* RPOP in a pipeline reads tail, tail-1, ...: on a read of the element
 * below the memo key that the row cache lacks, put k and the
 * LD_READ_BEHIND - 1 elements below it (those LevelDB holds and the cache
 * lacks) into the row cache, read forwards with one seek of the
 * transaction's iterator. The following reads are cache hits. */
static int read_behind(ld_txn *x, const char *k, size_t kl)
{
    ld_db *db = x->db;
    char from[LD_MEMO_MAX];
    uint64_t seq = kv_get_u64((const uint8_t *)k + kl - 8);
    memcpy(from, k, kl - 8);
    kv_put_u64((uint8_t *)from + kl - 8, seq >= LD_READ_BEHIND - 1 ? seq - (LD_READ_BEHIND - 1) : 0);
    leveldb_iterator_t *it = x->sit;
    if (!it && !(it = x->sit = leveldb_create_iterator(db->ldb, db->ropts))) return FD_E_NOMEM;
    x->sit_at = 0;
    if (!db->rc && !(db->rc = calloc(LD_RC_BUCKETS, sizeof *db->rc))) return FD_OK;
    for (leveldb_iter_seek(it, from, kl); leveldb_iter_valid(it); leveldb_iter_next(it)) {
        size_t bl, vl;
        const char *bk = leveldb_iter_key(it, &bl);
        if (bl != kl || memcmp(bk, k, kl - 8) != 0 || kv_overlay_keycmp(bk, bl, k, kl) > 0) break;
        uint64_t h = row_hash(bk, bl);
        if (*row_link(db, bk, bl, h)) continue;
        const char *v = leveldb_iter_value(it, &vl);
        rc_fill(x, bk, bl, h, v, vl);
    }
    char *err = NULL;
    leveldb_iter_get_error(it, &err);
    if (err) { sit_drop(x); return ld_status(db, err); }
    return FD_OK;
}

/* ld_get's LevelDB read of k, the element after the memo key, through the
 * transaction's iterator: one step when it stands on the memo key, else a
 * seek that leaves it on k. The value is copied (the iterator moves on)
 * and freed with the turn's reads. */
static int sit_get(ld_txn *x, const char *k, size_t kl, const void **v, size_t *vl)
{
    leveldb_iterator_t *it = x->sit;
    if (it && x->sit_at) {
        leveldb_iter_next(it);
    } else {
        if (!it && !(it = x->sit = leveldb_create_iterator(x->db->ldb, x->db->ropts))) return FD_E_NOMEM;
        leveldb_iter_seek(it, k, kl);
    }
    int c = 1;
    size_t bl = 0, len = 0;
    if (leveldb_iter_valid(it)) {
        const char *bk = leveldb_iter_key(it, &bl);
        c = kv_overlay_keycmp(bk, bl, k, kl);
    } else {
        char *err = NULL;
        leveldb_iter_get_error(it, &err);
        if (err) { sit_drop(x); return ld_status(x->db, err); }
    }
    memo_note(x, k, kl, c == 0);             /* clears sit_at */
    if (c != 0) return FD_NOTFOUND;          /* LevelDB has nothing between */
    const char *val = leveldb_iter_value(it, &len);
    char *copy = malloc(len ? len : 1);
    if (!copy) return FD_E_NOMEM;
    if (len) memcpy(copy, val, len);
    if (defer_free(x, copy) != FD_OK) { free(copy); return FD_E_NOMEM; }   /* freed with the reads */
    x->sit_at = 1;
    *v = copy;
    *vl = len;
    return FD_OK;
}

static int ld_get(void *txn, const void *k, size_t kl, const void **v, size_t *vl)
{
    ld_txn *x = txn;
    kv_ov_node *n = kv_overlay_get(x->ov, k, kl);
    if (n) {
        if (n->dead) return FD_NOTFOUND;
        *v = n->val ? n->val : empty_val;
        *vl = n->vlen;
        return FD_OK;
    }
    if (x->cleared) return FD_NOTFOUND;
    if (x->db->nb && (n = layer_get(x->db, k, kl))) {
        if (n->dead) return FD_NOTFOUND;
        *v = n->val ? n->val : empty_val;
        *vl = n->vlen;
        return FD_OK;
    }
    if (x->nreads == x->capreads) {
        size_t cap = x->capreads ? x->capreads * 2 : 16;
        char **r = realloc(x->reads, cap * sizeof *r);
        if (!r) return FD_E_NOMEM;
        x->reads = r;
        x->capreads = cap;
    }
    int step = memo_step(x, k, kl);
    if (step > 0) return sit_get(x, k, kl, v, vl);
    ld_db *db = x->db;
    uint64_t h = row_hash(k, kl);
    if (step < 0 && !*row_link_or_null(db, k, kl, h)) {
        int s = read_behind(x, k, kl);
        if (s != FD_OK) return s;
    }
    if (db->rc_entries) {
        ld_row *r = *row_link(db, k, kl, h);
        if (r) {
            db->rc_hits++;
            memo_note(x, k, kl, r->held);
            if (!r->held) return FD_NOTFOUND;
            *v = row_val(r);
            *vl = r->vl;
            return FD_OK;
        }
    }
    db->rc_misses++;
    char *err = NULL;
    size_t len = 0;
    char *val = leveldb_get(db->ldb, db->ropts, k, kl, &len, &err);
    if (err) { leveldb_free(val); return ld_status(db, err); }
    memo_note(x, k, kl, val != NULL);
    /* kept with the turn's reads (read_behind/rc_fill may have used the
     * room made above: defer_free grows it) */
    if (val && defer_free(x, val) != FD_OK) { leveldb_free(val); return FD_E_NOMEM; }
    rc_fill(x, k, kl, h, val, len);
    if (!val) return FD_NOTFOUND;
    *v = val;
    *vl = len;
    return FD_OK;
}

static int ld_put(void *txn, const void *k, size_t kl, const void *v, size_t vl)
{
    ld_txn *x = txn;
    if (kl > UINT32_MAX) return FD_E_INTERNAL;
    /* v may be this node's own value or a get() result: copy, then release */
    int s = kv_overlay_put(x->ov, k, kl, v, vl, NULL);
    release_reads(x);
    x->stamp++;
    return s;
}

static int ld_reserve(void *txn, const void *k, size_t kl, size_t vl, void **dst)
{
    ld_txn *x = txn;
    kv_ov_node *n;
    if (kl > UINT32_MAX) return FD_E_INTERNAL;
    int s = kv_overlay_put(x->ov, k, kl, NULL, vl, &n);
    release_reads(x);
    x->stamp++;
    if (s != FD_OK) return s;
    *dst = n->val;
    return FD_OK;
}

static int ld_del(void *txn, const void *k, size_t kl)
{
    ld_txn *x = txn;
    kv_ov_node *n = kv_overlay_get(x->ov, k, kl);
    if (n) {
        if (n->dead) return FD_NOTFOUND;
        kv_overlay_kill(x->ov, n);
    } else {
        if (x->cleared) return FD_NOTFOUND;
        /* only a record LevelDB (or an uncommitted batch) holds needs a tombstone */
        kv_ov_node *ln = layer_get(x->db, k, kl);
        int held = ln ? !ln->dead : memo_find(x, k, kl);
        if (held < 0) {
            char *err = NULL;
            size_t len = 0;
            char *val = leveldb_get(x->db->ldb, x->db->ropts, k, kl, &len, &err);
            if (err) { leveldb_free(val); return ld_status(x->db, err); }
            held = val != NULL;
            leveldb_free(val);
            memo_note(x, k, kl, held);
        }
        if (!held) return FD_NOTFOUND;
        int s = kv_overlay_del(x->ov, k, kl);
        if (s != FD_OK) return s;
    }
    release_reads(x);
    x->stamp++;
    return FD_OK;
}

static int ld_clear(void *txn)
{
    ld_txn *x = txn;
    x->memo = 0;
    sit_drop(x);
    kv_overlay_clear(x->ov);
    x->cleared = 1;
    release_reads(x);
    x->stamp++;
    return FD_OK;
}

/* ---------------------------------------------------------------- cursors
 *
 * A cursor is the merge of `bi` (LevelDB) and the overlay. Its position is
 * the copy of the current key; the overlay side is re-found by key whenever
 * the overlay's structure changed since (kv_overlay_gen), so writes made while
 * a cursor is open are seen and freed nodes are never touched.
 * Invariants between moves, where cur is the current key:
 *   forwards:  bi is at the first LevelDB key >= cur (or invalid);
 *              on is the first overlay node >= cur (or NULL);
 *   backwards: bi is at the last LevelDB key <= cur (or invalid);
 *              on is the last overlay node <= cur (or NULL).
 * On equal keys the overlay wins; a tombstone hides the key. */

static int ld_iter_open(void *txn, kv_iter **itp)
{
    ld_txn *x = txn;
    kv_iter *it = calloc(1, sizeof *it);
    if (!it) return FD_E_NOMEM;
    it->tx = x;
    it->bi = leveldb_create_iterator(x->db->ldb, x->db->ropts);
    if (!it->bi) { free(it); return FD_E_NOMEM; }
    *itp = it;
    return FD_OK;
}

static void ld_iter_close(kv_iter *it)
{
    leveldb_iter_destroy(it->bi);
    free(it->key);
    free(it);
}

static int base_valid(const kv_iter *it)
{
    return !it->tx->cleared && leveldb_iter_valid(it->bi);
}

static int base_at(const kv_iter *it, const char *k, size_t kl)
{
    if (!base_valid(it)) return 0;
    size_t bl;
    const char *bk = leveldb_iter_key(it->bi, &bl);
    return kv_overlay_keycmp(bk, bl, k, kl) == 0;
}

static int set_cur(kv_iter *it, const char *k, size_t kl, int from_ov)
{
    if (kl > it->kcap) {
        size_t cap = kl < 64 ? 64 : kl * 2;
        char *nk = realloc(it->key, cap);
        if (!nk) { it->valid = 0; return FD_E_NOMEM; }
        it->key = nk;
        it->kcap = cap;
    }
    if (kl) memcpy(it->key, k, kl);
    it->klen = kl;
    it->from_ov = from_ov;
    it->valid = 1;
    return FD_OK;
}

/* Nothing more on the LevelDB side: an error, or simply the end. */
static int base_end_status(kv_iter *it)
{
    char *err = NULL;
    leveldb_iter_get_error(it->bi, &err);
    return ld_status(it->tx->db, err);
}

static int resolve_fwd(kv_iter *it)
{
    it->dir = 1;
    it->gen = kv_overlay_gen(it->tx->ov);
    for (;;) {
        int bv = base_valid(it);
        kv_ov_node *o = it->on;
        if (!bv && !it->tx->cleared) {
            int s = base_end_status(it);
            if (s != FD_OK) { it->valid = 0; return s; }
        }
        if (!bv && !o) { it->valid = 0; return FD_NOTFOUND; }
        size_t bl = 0;
        const char *bk = bv ? leveldb_iter_key(it->bi, &bl) : NULL;
        int c = !bv ? 1 : !o ? -1 : kv_overlay_keycmp(bk, bl, kv_ov_key(o), o->klen);
        if (c < 0) return set_cur(it, bk, bl, 0);
        if (o->dead) {
            if (c == 0) leveldb_iter_next(it->bi);
            it->on = vw_next(it->tx, o);
            continue;
        }
        return set_cur(it, kv_ov_key(o), o->klen, 1);
    }
}

static int resolve_bwd(kv_iter *it)
{
    it->dir = -1;
    it->gen = kv_overlay_gen(it->tx->ov);
    for (;;) {
        int bv = base_valid(it);
        kv_ov_node *o = it->on;
        if (!bv && !it->tx->cleared) {
            int s = base_end_status(it);
            if (s != FD_OK) { it->valid = 0; return s; }
        }
        if (!bv && !o) { it->valid = 0; return FD_NOTFOUND; }
        size_t bl = 0;
        const char *bk = bv ? leveldb_iter_key(it->bi, &bl) : NULL;
        int c = !bv ? -1 : !o ? 1 : kv_overlay_keycmp(bk, bl, kv_ov_key(o), o->klen);
        if (c > 0) return set_cur(it, bk, bl, 0);
        if (o->dead) {
            if (c == 0) leveldb_iter_prev(it->bi);
            it->on = vw_prev(it->tx, o);
            continue;
        }
        return set_cur(it, kv_ov_key(o), o->klen, 1);
    }
}

static int ld_seek(kv_iter *it, const void *k, size_t kl)
{
    ld_db *db = it->tx->db;
    ld_hint *h = it->tx->cleared ? NULL : hint_find(db, k, kl);
    if (h) {
        db->hint_hits++;
        leveldb_iter_seek(it->bi, h->b, h->bl);
    } else {
        leveldb_iter_seek(it->bi, k, kl);
    }
    if (!it->tx->cleared && leveldb_iter_valid(it->bi)) {
        size_t bl;
        const char *bk = leveldb_iter_key(it->bi, &bl);
        if (h) hint_note(db, h, h->a, h->al, bk, bl);
        else hint_note(db, NULL, k, kl, bk, bl);
    }
    it->on = vw_seek(it->tx, k, kl, 0);
    return resolve_fwd(it);
}

static int ld_seek_le(kv_iter *it, const void *k, size_t kl)
{
    leveldb_iter_seek(it->bi, k, kl);
    if (leveldb_iter_valid(it->bi)) {
        if (!base_at(it, k, kl)) leveldb_iter_prev(it->bi);
    } else {
        leveldb_iter_seek_to_last(it->bi);
    }
    it->on = vw_seek_le(it->tx, k, kl, 0);
    return resolve_bwd(it);
}

static int ld_next(kv_iter *it)
{
    if (!it->valid) return FD_NOTFOUND;
    const char *k = it->key;
    size_t kl = it->klen;
    kv_overlay *ov = it->tx->ov;
    if (it->dir == 1) {
        /* a record of LevelDB's own is where bi stands: no need to compare */
        if (!it->from_ov ? base_valid(it) : base_at(it, k, kl)) leveldb_iter_next(it->bi);
        if (it->gen != kv_overlay_gen(ov)) it->on = vw_seek(it->tx, k, kl, 1);
        else if (it->on && ov_cmp(it->on, k, kl) == 0) it->on = vw_next(it->tx, it->on);
    } else {
        leveldb_iter_seek(it->bi, k, kl);
        if (base_at(it, k, kl)) leveldb_iter_next(it->bi);
        it->on = vw_seek(it->tx, k, kl, 1);
    }
    return resolve_fwd(it);
}

static int ld_prev(kv_iter *it)
{
    if (!it->valid) return FD_NOTFOUND;
    const char *k = it->key;
    size_t kl = it->klen;
    kv_overlay *ov = it->tx->ov;
    if (it->dir == -1) {
        if (!it->from_ov ? base_valid(it) : base_at(it, k, kl)) leveldb_iter_prev(it->bi);
        if (it->gen != kv_overlay_gen(ov) || (it->on && ov_cmp(it->on, k, kl) == 0))
            it->on = vw_seek_le(it->tx, k, kl, 1);
    } else {
        leveldb_iter_seek(it->bi, k, kl);
        if (leveldb_iter_valid(it->bi)) leveldb_iter_prev(it->bi);   /* last < k */
        else leveldb_iter_seek_to_last(it->bi);
        it->on = vw_seek_le(it->tx, k, kl, 1);
    }
    return resolve_bwd(it);
}

static int ld_cur(kv_iter *it, const void **k, size_t *kl, const void **v, size_t *vl)
{
    if (!it->valid) return FD_NOTFOUND;
    if (it->gen != kv_overlay_gen(it->tx->ov)) {
        /* written since the cursor got here: the overlay may now hold (or,
         * after a clear, no longer hold) this key. `on` at the key itself
         * satisfies the invariants of both directions. */
        kv_ov_node *n = vw_get(it->tx, it->key, it->klen);
        if (n || it->from_ov) {
            it->on = n;
            it->gen = kv_overlay_gen(it->tx->ov);
            it->from_ov = 1;
        }
    }
    if (it->from_ov) {
        kv_ov_node *n = it->on;
        if (!n || n->dead) return FD_NOTFOUND;   /* deleted under the cursor */
        *v = n->val ? n->val : empty_val;
        *vl = n->vlen;
    } else {
        if (!base_valid(it)) return FD_NOTFOUND;  /* cleared under the cursor */
        *v = leveldb_iter_value(it->bi, vl);
    }
    *k = it->key;
    *kl = it->klen;
    return FD_OK;
}

static const kv_driver ld_driver = {
    .name = "leveldb",
    .begin = ld_begin, .commit = ld_commit, .abort = ld_abort,
    .get = ld_get, .put = ld_put, .reserve = ld_reserve, .del = ld_del, .clear = ld_clear,
    .iter_open = ld_iter_open, .iter_close = ld_iter_close,
    .seek = ld_seek, .seek_le = ld_seek_le, .next = ld_next, .prev = ld_prev, .cur = ld_cur,
    .nearly_full = NULL,     /* no nested transactions: see the top of the file */
    .stamp = ld_stamp, .hold = ld_hold,
};

/* ---------------------------------------------------------------- backend */

/* Stop the writer after it wrote everything queued; send what is owed. */
static void writer_stop(ld_db *db)
{
    if (!db->async) return;
    drain(db);
    pthread_mutex_lock(&db->wmu);
    db->wstop = 1;
    pthread_cond_signal(&db->wcv);
    pthread_mutex_unlock(&db->wmu);
    pthread_join(db->wthread, NULL);
    ev_async_stop(db->loop, &db->wake);
    db->async = 0;
    while (db->freeq) { ld_batch *nx = db->freeq->fnext; batch_free(db->freeq); db->freeq = nx; }
    answers_send(db);
}

static void ld_release(ld_db *db)
{
    writer_stop(db);
    drain(db);                       /* (no writer: nothing can be queued) */
    answers_send(db);
    pthread_cond_destroy(&db->wcv);
    pthread_cond_destroy(&db->dcv);
    pthread_mutex_destroy(&db->wmu);
    hints_clear(db);
    rc_clear(db);
    free(db->rc);
    db->rc = NULL;
    if (db->logdir) closedir(db->logdir);
    db->logdir = NULL;
    if (db->cstarted) {              /* waits for a compaction in progress */
        pthread_mutex_lock(&db->cmu);
        db->cstop = 1;
        pthread_cond_signal(&db->ccv);
        pthread_mutex_unlock(&db->cmu);
        pthread_join(db->cthread, NULL);
        pthread_cond_destroy(&db->ccv);
        pthread_mutex_destroy(&db->cmu);
        db->cstarted = 0;
    }
    if (db->ldb) leveldb_close(db->ldb);
    if (db->opts) leveldb_options_destroy(db->opts);
    if (db->cache) leveldb_cache_destroy(db->cache);
    if (db->bloom) leveldb_filterpolicy_destroy(db->bloom);
    if (db->ropts) leveldb_readoptions_destroy(db->ropts);
    if (db->wopts) leveldb_writeoptions_destroy(db->wopts);
    kv_overlay_free(db->tx.ov);
    db->tx.ov = NULL;
    holds_free(&db->tx.h);
    free(db->tx.reads);
    free(db->dir);
    if (db->lockfd >= 0) close(db->lockfd);
}

static int leveldb_backend_open(fd_backend *b, const fd_backend_config *cfg, char *err, size_t errlen)
{
    const char *dir = fd_datadir_name(cfg);
    int ds = fd_datadir_create(dir, err, errlen);
    if (ds != FD_OK) return ds;
    char path[4200];
    /* the LMDB backend's files: this folder belongs to another engine */
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    if (access(path, F_OK) == 0) {
        snprintf(err, errlen, "the data folder '%s' holds an LMDB store (data.mdb): "
                 "use 'backend lmdb', or another 'dir' for leveldb", dir);
        return FD_E_IO;
    }
    /* LevelDB's own LOCK refuses a second process too; frontdoor.lock gives
     * the same message as the LMDB backend and covers mixed engines. */
    int lockfd;
    if ((ds = fd_datadir_lock(dir, &lockfd, err, errlen)) != FD_OK) return ds;
    ld_backend *lb = calloc(1, sizeof *lb);
    if (!lb) { close(lockfd); snprintf(err, errlen, "out of memory"); return FD_E_NOMEM; }
    ld_db *db = &lb->db;
    db->lockfd = lockfd;
    pthread_mutex_init(&db->wmu, NULL);
    pthread_cond_init(&db->wcv, NULL);
    pthread_cond_init(&db->dcv, NULL);

    db->sync = cfg->sync;
    static const fd_leveldb_settings none;
    const fd_leveldb_settings *ls = cfg->options ? cfg->options : &none;
    db->cache_size = ls->block_cache_size ? (uint64_t)ls->block_cache_size : LD_DEFAULT_CACHE;
    db->wbuf_size = ls->write_buffer_size ? (uint64_t)ls->write_buffer_size : LD_DEFAULT_WBUF;
    db->rc_budget = db->cache_size / 2 > LD_RC_MIN ? (size_t)(db->cache_size / 2) : LD_RC_MIN;
    db->compression = ls->compression;
    db->max_files = ls->max_open_files > 0 ? (int)ls->max_open_files : LD_DEFAULT_FILES;
    db->dir = strdup(dir);
    db->opts = leveldb_options_create();
    db->cache = leveldb_cache_create_lru((size_t)db->cache_size);
    db->bloom = leveldb_filterpolicy_create_bloom(LD_BLOOM_BITS);
    db->ropts = leveldb_readoptions_create();
    db->wopts = leveldb_writeoptions_create();
    if (!db->dir || !db->opts || !db->cache || !db->bloom || !db->ropts || !db->wopts ||
        !(db->tx.ov = kv_overlay_new())) {
        ld_release(db);
        free(lb);
        snprintf(err, errlen, "out of memory");
        return FD_E_NOMEM;
    }
    leveldb_options_set_create_if_missing(db->opts, 1);
    leveldb_options_set_cache(db->opts, db->cache);
    leveldb_options_set_filter_policy(db->opts, db->bloom);
    leveldb_options_set_write_buffer_size(db->opts, (size_t)db->wbuf_size);
    leveldb_options_set_max_open_files(db->opts, db->max_files);
    leveldb_options_set_compression(db->opts, db->compression == FD_LEVELDB_SNAPPY
                                    ? leveldb_snappy_compression : leveldb_no_compression);
    leveldb_writeoptions_set_sync(db->wopts, (uint8_t)(cfg->sync != 0));
    char *lerr = NULL;
    db->ldb = leveldb_open(db->opts, dir, &lerr);
    if (lerr || !db->ldb) {
        int s = lerr && strncmp(lerr, "Corruption:", 11) == 0 ? FD_E_CORRUPT : FD_E_IO;
        if (lerr && strstr(lerr, "LOCK"))
            snprintf(err, errlen, "the data folder '%s' is in use by another process (%s)", dir, lerr);
        else
            snprintf(err, errlen, "cannot open the LevelDB store in '%s': %s", dir,
                     lerr ? lerr : "unknown error");
        leveldb_free(lerr);
        db->ldb = NULL;
        ld_release(db);
        free(lb);
        return s;
    }
    int s = kv_backend_attach(b, &lb->st, &ld_driver, db, cfg, err, errlen);
    if (s != FD_OK) {
        ld_release(db);
        free(lb);
        return s;
    }
    /* test hooks of tests/integration/test_leveldb_async.py: a slow or a
     * failing writer */
    const char *hook = getenv("FRONTDOOR_LEVELDB_WRITE_DELAY_MS");
    db->delay_ms = hook ? atoi(hook) : 0;
    hook = getenv("FRONTDOOR_LEVELDB_FAIL_WRITE");
    db->fail_nth = hook ? atoi(hook) : 0;
    hook = getenv("FRONTDOOR_LEVELDB_INLINE");
    db->no_inline = cfg->sync || db->delay_ms > 0 || db->fail_nth > 0 || (hook && atoi(hook) == 0);
    db->be = b;
    if (cfg->loop) {
        /* the writer thread; without a loop (unit tests) commits are inline */
        db->loop = cfg->loop;
        ev_async_init(&db->wake, on_wake);
        db->wake.data = db;
        ev_async_start(db->loop, &db->wake);
        if (pthread_create(&db->wthread, NULL, writer, db) == 0) db->async = 1;
        else ev_async_stop(db->loop, &db->wake);
        inline_update(db);
    }
    return s;
}

static void leveldb_backend_close(fd_backend *b)
{
    ld_backend *lb = b->state;
    if (!lb) return;
    kv_store_free(&lb->st);          /* aborts an uncommitted turn */
    writer_stop(&lb->db);            /* what is queued is written first */
    if (!lb->db.sync) {
        /* nosync: make the log durable once, at shutdown (an empty synced
         * write fsyncs LevelDB's log) */
        leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
        leveldb_writebatch_t *wb = leveldb_writebatch_create();
        char *e = NULL;
        leveldb_writeoptions_set_sync(wo, 1);
        leveldb_write(lb->db.ldb, wo, wb, &e);
        leveldb_free(e);
        leveldb_writebatch_destroy(wb);
        leveldb_writeoptions_destroy(wo);
    }
    ld_release(&lb->db);
    free(lb);
    b->state = NULL;
}

static unsigned long long ld_prop_ull(ld_db *db, const char *name)
{
    char *v = leveldb_property_value(db->ldb, name);
    unsigned long long n = v ? strtoull(v, NULL, 10) : 0;
    leveldb_free(v);
    return n;
}

static uint64_t leveldb_compactions_done(ld_db *db)
{
    if (!db->cstarted) return 0;
    pthread_mutex_lock(&db->cmu);
    uint64_t n = db->compactions;
    pthread_mutex_unlock(&db->cmu);
    return n;
}

/* LevelDB's compaction table (property "leveldb.stats": per level, files,
 * size, time, MB read and written by compactions, memtable flushes
 * included), summed over the levels. LevelDB does not count compactions. */
typedef struct ld_cstats { double secs, read_mb, write_mb; } ld_cstats;
static void compaction_stats(ld_db *db, ld_cstats *cs)
{
    memset(cs, 0, sizeof *cs);
    char *v = leveldb_property_value(db->ldb, "leveldb.stats");
    if (v) {
        for (char *line = strtok(v, "\n"); line; line = strtok(NULL, "\n")) {
            int lvl, files;
            double size, secs, rd, wr;
            if (sscanf(line, " %d %d %lf %lf %lf %lf", &lvl, &files, &size, &secs, &rd, &wr) == 6) {
                cs->secs += secs;
                cs->read_mb += rd;
                cs->write_mb += wr;
            }
        }
        leveldb_free(v);
    }
}

static void leveldb_backend_info(fd_backend *b, resp_out *lines)
{
    ld_backend *lb = b->state;
    ld_db *db = &lb->db;
    char buf[4096];
    char files[128];
    ld_cstats cs;
    compaction_stats(db, &cs);
    int fl = 0;
    for (int lvl = 0; lvl < 7; lvl++) {
        char name[64];
        snprintf(name, sizeof name, "leveldb.num-files-at-level%d", lvl);
        fl += snprintf(files + fl, sizeof files - (size_t)fl, "%s%llu", lvl ? "," : "", ld_prop_ull(db, name));
        if (fl >= (int)sizeof files) break;
    }
    int n = snprintf(buf, sizeof buf,
                     "leveldb_version:%d.%d\r\nleveldb_sync:%s\r\nleveldb_block_cache_size:%llu\r\n"
                     "leveldb_write_buffer_size:%llu\r\nleveldb_compression:%s\r\n"
                     "leveldb_max_open_files:%d\r\nleveldb_approximate_memory_usage:%llu\r\n"
                     "leveldb_files_per_level:%s\r\n"
                     "leveldb_commits:%llu\r\nleveldb_commit_records:%llu\r\nleveldb_commit_bytes:%llu\r\n"
                     "leveldb_last_commit_us:%llu\r\nleveldb_max_commit_us:%llu\r\n"
                     "leveldb_avg_commit_us:%llu\r\nleveldb_slow_commits:%llu\r\n"
                     "leveldb_max_turn_records:%llu\r\nleveldb_seek_hint_hits:%llu\r\n"
                     "leveldb_flush_compactions:%llu\r\n"
                     "leveldb_row_cache_entries:%llu\r\nleveldb_row_cache_bytes:%llu\r\n"
                     "leveldb_row_cache_hits:%llu\r\nleveldb_row_cache_misses:%llu\r\n"
                     "leveldb_row_cache_evicted:%llu\r\n"
                     "leveldb_async_commit:%s\r\nleveldb_commits_in_flight:%d\r\n"
                     "leveldb_held_replies:%llu\r\nleveldb_held_bytes:%llu\r\n"
                     "leveldb_merged_turns:%llu\r\nleveldb_sync_turns:%llu\r\n"
                     "leveldb_loop_commit_us_total:%llu\r\nleveldb_loop_commit_us_max:%llu\r\n"
                     "leveldb_loop_retire_us_max:%llu\r\nleveldb_loop_lock_wait_us_max:%llu\r\n"
                     "leveldb_writer_busy_us:%llu\r\nleveldb_writer_stall_us:%llu\r\n"
                     "leveldb_backpressure_waits:%llu\r\nleveldb_backpressure_us:%llu\r\n"
                     "leveldb_commit_failures:%llu\r\nleveldb_failed_replies:%llu\r\n"
                     "leveldb_inline_mode:%s\r\nleveldb_inline_commits:%llu\r\n"
                     "leveldb_inline_slow:%llu\r\nleveldb_inline_blocked:%llu\r\n"
                     "leveldb_inline_polls:%llu\r\n"
                     "leveldb_memtable_estimate:%llu\r\n"
                     "leveldb_compaction_ms:%llu\r\n"
                     "leveldb_compaction_read_mb:%llu\r\nleveldb_compaction_write_mb:%llu\r\n"
                     "leveldb_last_error:%s\r\n",
                     leveldb_major_version(), leveldb_minor_version(), db->sync ? "yes" : "no",
                     (unsigned long long)db->cache_size, (unsigned long long)db->wbuf_size,
                     db->compression == FD_LEVELDB_SNAPPY ? "snappy" : "none", db->max_files,
                     ld_prop_ull(db, "leveldb.approximate-memory-usage"), files,
                     (unsigned long long)db->commits, (unsigned long long)db->commit_records,
                     (unsigned long long)db->commit_bytes, (unsigned long long)db->last_commit_us,
                     (unsigned long long)db->max_commit_us,
                     (unsigned long long)(db->commits ? db->total_commit_us / db->commits : 0),
                     (unsigned long long)db->slow_commits, (unsigned long long)db->max_overlay, (unsigned long long)db->hint_hits,
                     (unsigned long long)leveldb_compactions_done(db),
                     (unsigned long long)db->rc_entries, (unsigned long long)db->rc_bytes,
                     (unsigned long long)db->rc_hits, (unsigned long long)db->rc_misses,
                     (unsigned long long)db->rc_evicted,
                     db->async ? "yes" : "no", db->nb,
                     (unsigned long long)db->held_replies, (unsigned long long)db->held_bytes,
                     (unsigned long long)db->merged_turns, (unsigned long long)db->sync_turns,
                     (unsigned long long)db->loop_commit_us, (unsigned long long)db->loop_commit_max_us,
                     (unsigned long long)db->retire_max_us, (unsigned long long)db->lock_wait_max_us,
                     (unsigned long long)db->writer_busy_us, (unsigned long long)db->writer_stall_us,
                     (unsigned long long)db->bp_waits, (unsigned long long)db->bp_us,
                     (unsigned long long)db->commit_failures, (unsigned long long)db->failed_replies,
                     inline_now(db) ? "yes" : "no", (unsigned long long)db->inline_commits,
                     (unsigned long long)db->inline_slow, (unsigned long long)db->inline_blocked,
                     (unsigned long long)db->polls,
                     (unsigned long long)db->mem_est,
                     (unsigned long long)(cs.secs * 1000),
                     (unsigned long long)cs.read_mb, (unsigned long long)cs.write_mb,
                     db->last_error);
    if (n > 0) resp_out_raw(lines, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
    kv_backend_info(&lb->st, lines);
}

/* leveldb's directives (option.h) */
static const char *const ld_compression_names[] = {"snappy", "none", NULL};   /* = FD_LEVELDB_* */
#define LDO(f) offsetof(fd_leveldb_settings, f)
static const fd_option ld_rows[] = {
    {"leveldb-block-cache-size", FD_OPT_MEM, LDO(block_cache_size), "64mb", 1024 * 1024, 1LL << 40, NULL, 0},
    {"leveldb-compression", FD_OPT_ENUM, LDO(compression), "snappy", 0, 0, ld_compression_names, 0},
    {"leveldb-max-open-files", FD_OPT_INT, LDO(max_open_files), "1000", 64, 1000000, NULL, 0},
    {"leveldb-write-buffer-size", FD_OPT_MEM, LDO(write_buffer_size), "64mb", 64 * 1024, 1024LL * 1024 * 1024, NULL, 0},
};
const fd_option_set fd_leveldb_options = FD_OPTION_SET("leveldb", ld_rows, fd_leveldb_settings);
_Static_assert(sizeof(fd_leveldb_settings) <= FD_OPTION_SET_BYTES, "leveldb settings fit a set");

const fd_backend_ops fd_leveldb_backend = {
    .name     = "leveldb",
    .options  = &fd_leveldb_options,
    .open     = leveldb_backend_open,
    .close    = leveldb_backend_close,
    .submit   = kv_backend_submit,
    .end_turn = kv_backend_end_turn,
    .cron     = kv_backend_cron,
    .aux_get  = kv_backend_aux_get,
    .aux_put  = kv_backend_aux_put,
    .keyspace = kv_backend_keyspace,
    .info     = leveldb_backend_info,
    .support  = kv_backend_support,
    .embedded = 1,
    .notify   = FD_NOTIFY_CLASSES,
    .async    = 1,               /* write replies wait for their commit (writer thread) */
    .async_writes = 1,           /* reads never wait: no pending handle for them */
};
