/* lmdb.c — the LMDB backend: a kv_driver over one LMDB environment (the
 * unnamed database of cfg->dir) and `fd_lmdb_backend`, whose submit /
 * end_turn / cron are the generic ones of kv_backend.c.
 *
 * Environment: MDB_NOTLS (transactions are not tied to threads), and
 * MDB_NOSYNC when cfg->sync == 0: commits are written to the file but not
 * fsync'ed — the data survive a crash of the process, while a power loss or
 * OS crash may lose the last commits (LMDB: and may damage the file if the
 * filesystem reorders writes). With sync, each commit (one per event-loop
 * turn that wrote) fsyncs before any reply of that turn is released.
 * The map size is lmdb-map-size (fd_lmdb_settings); a put that does not fit fails with
 * MDB_MAP_FULL, reported as FD_E_OOM.
 *
 * WRITEMAP in nosync mode. Without MDB_WRITEMAP a commit copies every dirty
 * page into a malloc'ed buffer and pwrite()s it: random keys dirty about one
 * 4 KB leaf page each, and that write path was a third of the CPU of a
 * random-key SET (docs/benchmarks.md, issue 19). With WRITEMAP, LMDB copies
 * the page once, straight into the shared file mapping, and a commit writes
 * nothing. Crash safety in nosync mode is unchanged: a commit returns when
 * its pages and its meta page are in the kernel's page cache (the mapping is
 * MAP_SHARED, i.e. the page cache itself), so a kill -9 of frontdoor loses
 * no acknowledged write — the kernel writes those pages back after the
 * process is gone; a power loss or OS crash may lose the last commits, as
 * before (nosync never fsyncs: MDB_NOMETASYNC and MDB_MAPASYNC only change
 * how a sync is done, so they change nothing here and are not set). What
 * WRITEMAP does change: (1) the data file is a sparse file as long as the
 * map; a write into a hole when the disk is full would kill the process
 * with SIGBUS instead of failing the commit with ENOSPC, so the file is
 * preallocated (fallocate) LM_HEADROOM beyond the high-water mark at each
 * turn start, and for a big write's size; (2) a wild pointer write in the
 * process could reach the map (it is writable); (3) LMDB refuses nested
 * transactions, which careful mode (kv_backend.c) needs to fail only the
 * command that hits MAP_FULL. So WRITEMAP is dropped — the environment is
 * reopened without it, between two turns, for the rest of the process's
 * life — once the high-water mark passes LM_WRITEMAP_MAX of the map or a
 * put has hit MAP_FULL. Until then a nested begin answers
 * FD_E_NOTSUPPORTED and the command runs in the turn's transaction: with
 * under half of the map used, only a turn that writes more than the other
 * half (say one value of half the map) could then fail as a whole instead
 * of just the command that does not fit. With sync, WRITEMAP is never used.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <lmdb.h>
#include "kv/kv.h"
#include "bytecmp.h"
#include "datadir.h"
#include "host.h"
#include "lmdb_settings.h"

#define LM_MAX_DEPTH 4
#define LM_DEFAULT_MAP (4ULL << 30)
#define LM_WRITEMAP_MAX 50            /* % of the map: above it, no WRITEMAP */
#define LM_HEADROOM    (32ULL << 20)  /* preallocated beyond the high-water mark */

typedef struct lm_db lm_db;

typedef struct lm_txn {
    MDB_txn    *t;
    lm_db      *db;
    int         used;
    /* The point cursors: every get/put/reserve/del of the transaction goes
     * through one of them (opened at the first use, closed before the
     * end). A put right after a get of the same key — the kv layer's
     * read-then-write — finds the cursor already on the key's leaf page and
     * skips the descent from the root (LMDB's mdb_cursor_set looks at the
     * current page first when the key lies between its first and last
     * keys). pc[1] serves the element records ('S' keys), pc[0] the rest:
     * a collection command alternates between its metadata ('M') and its
     * elements, and with one cursor each switch was a descent (LPOP: four
     * driver calls, three descents; now none while both pages hold). */
    MDB_cursor *pc[2];
} lm_txn;

struct lm_db {
    MDB_env *env;
    MDB_dbi  dbi;
    uint64_t map_size;
    int      sync;
    int      writemap;           /* the environment is open with MDB_WRITEMAP */
    int      drop_wm;           /* MAP_FULL or fallocate failed: drop WRITEMAP */
    uint64_t allocated;          /* bytes of the data file fallocate'd (WRITEMAP) */
    char    *dir;
    int      lockfd;             /* flock'ed: one frontdoor per data folder */
    lm_txn   tx[LM_MAX_DEPTH];   /* the turn transaction and nested ones */
};

struct kv_iter {
    MDB_cursor *c;
    MDB_val     k, v;
};

typedef struct lm_backend {
    kv_store st;                 /* first: fd_backend.state points here */
    lm_db    db;
} lm_backend;

static int lm_status(int rc)
{
    switch (rc) {
    case MDB_SUCCESS:        return FD_OK;
    case MDB_NOTFOUND:       return FD_NOTFOUND;
    case MDB_MAP_FULL:
    case MDB_TXN_FULL:       return FD_E_OOM;
    case MDB_CORRUPTED:
    case MDB_PAGE_NOTFOUND:
    case MDB_INVALID:
    case MDB_VERSION_MISMATCH: return FD_E_CORRUPT;
    case ENOMEM:             return FD_E_NOMEM;
    case MDB_BAD_VALSIZE:
    case MDB_BAD_TXN:
    case EINVAL:             return FD_E_INTERNAL;
    default:                 return FD_E_IO;
    }
}

/* ---------------------------------------------------------------- driver */

static int lm_reopen(lm_db *db, int writemap, char *err, size_t errlen);
static void lm_turn_start(lm_db *db);

static int lm_begin(void *dbp, void *parent, void **txn)
{
    lm_db *db = dbp;
    lm_txn *slot = NULL;
    if (db->writemap) {
        if (parent) return FD_E_NOTSUPPORTED;    /* LMDB: no nested txn with WRITEMAP */
        lm_turn_start(db);
    }
    if (!db->env) return FD_E_IO;
    for (int i = 0; i < LM_MAX_DEPTH; i++)
        if (!db->tx[i].used) { slot = &db->tx[i]; break; }
    if (!slot) return FD_E_INTERNAL;
    int rc = mdb_txn_begin(db->env, parent ? ((lm_txn *)parent)->t : NULL, 0, &slot->t);
    if (rc) return lm_status(rc);
    slot->db = db;
    slot->used = 1;
    *txn = slot;
    return FD_OK;
}

/* The transaction's point cursor for key k (see lm_txn), opened on first
 * use; NULL on failure (*rc set). */
static MDB_cursor *point_cursor(lm_txn *x, const void *k, size_t kl, int *rc)
{
    int i = kl && *(const unsigned char *)k == KV_PFX_SUB;
    if (!x->pc[i] && (*rc = mdb_cursor_open(x->t, x->db->dbi, &x->pc[i])) != 0) x->pc[i] = NULL;
    return x->pc[i];
}

static void point_close(lm_txn *x)
{
    for (int i = 0; i < 2; i++) {
        if (x->pc[i]) mdb_cursor_close(x->pc[i]);
        x->pc[i] = NULL;
    }
}

static int lm_commit(void *txn)
{
    lm_txn *x = txn;
    point_close(x);
    int rc = mdb_txn_commit(x->t);
    if (rc == MDB_MAP_FULL) x->db->drop_wm = 1;
    x->t = NULL;
    x->used = 0;
    return lm_status(rc);
}

static void lm_abort(void *txn)
{
    lm_txn *x = txn;
    point_close(x);
    mdb_txn_abort(x->t);
    x->t = NULL;
    x->used = 0;
}

static int lm_get(void *txn, const void *k, size_t kl, const void **v, size_t *vl)
{
    lm_txn *x = txn;
    int rc = 0;
    MDB_cursor *c = point_cursor(x, k, kl, &rc);
    if (!c) return lm_status(rc);
    MDB_val key = { kl, (void *)k }, val;
    if ((rc = mdb_cursor_get(c, &key, &val, MDB_SET)) != 0) return lm_status(rc);
    *v = val.mv_data;
    *vl = val.mv_size;
    return FD_OK;
}

static int lm_put(void *txn, const void *k, size_t kl, const void *v, size_t vl)
{
    lm_txn *x = txn;
    int rc = 0;
    MDB_cursor *c = point_cursor(x, k, kl, &rc);
    if (!c) return lm_status(rc);
    MDB_val key = { kl, (void *)k }, val = { vl, (void *)v };
    if ((rc = mdb_cursor_put(c, &key, &val, 0)) == MDB_MAP_FULL) x->db->drop_wm = 1;
    return lm_status(rc);
}

static int lm_reserve(void *txn, const void *k, size_t kl, size_t vl, void **dst)
{
    lm_txn *x = txn;
    int rc = 0;
    MDB_cursor *c = point_cursor(x, k, kl, &rc);
    if (!c) return lm_status(rc);
    MDB_val key = { kl, (void *)k }, val = { vl, NULL };
    if ((rc = mdb_cursor_put(c, &key, &val, MDB_RESERVE)) != 0) {
        if (rc == MDB_MAP_FULL) x->db->drop_wm = 1;
        return lm_status(rc);
    }
    *dst = val.mv_data;
    return FD_OK;
}

static int lm_del(void *txn, const void *k, size_t kl)
{
    lm_txn *x = txn;
    int rc = 0;
    MDB_cursor *c = point_cursor(x, k, kl, &rc);
    if (!c) return lm_status(rc);
    MDB_val key = { kl, (void *)k }, val;
    if ((rc = mdb_cursor_get(c, &key, &val, MDB_SET)) != 0) return lm_status(rc);
    return lm_status(mdb_cursor_del(c, 0));
}

static int lm_clear(void *txn)
{
    lm_txn *x = txn;
    point_close(x);                  /* the drop invalidates cursors */
    return lm_status(mdb_drop(x->t, x->db->dbi, 0));
}

static int lm_iter_open(void *txn, kv_iter **it)
{
    lm_txn *x = txn;
    kv_iter *i = malloc(sizeof *i);
    if (!i) return FD_E_NOMEM;
    int rc = mdb_cursor_open(x->t, x->db->dbi, &i->c);
    if (rc) { free(i); return lm_status(rc); }
    *it = i;
    return FD_OK;
}

static void lm_iter_close(kv_iter *it)
{
    mdb_cursor_close(it->c);
    free(it);
}

static int lm_seek(kv_iter *it, const void *k, size_t kl)
{
    if (kl == 0)                  /* LMDB refuses empty keys: the first record */
        return lm_status(mdb_cursor_get(it->c, &it->k, &it->v, MDB_FIRST));
    it->k.mv_size = kl;
    it->k.mv_data = (void *)k;
    return lm_status(mdb_cursor_get(it->c, &it->k, &it->v, MDB_SET_RANGE));
}

static int lm_seek_le(kv_iter *it, const void *k, size_t kl)
{
    if (kl == 0) return FD_NOTFOUND;   /* no record is <= the empty key */
    it->k.mv_size = kl;
    it->k.mv_data = (void *)k;
    int rc = mdb_cursor_get(it->c, &it->k, &it->v, MDB_SET_RANGE);
    if (rc == MDB_NOTFOUND) return lm_status(mdb_cursor_get(it->c, &it->k, &it->v, MDB_LAST));
    if (rc) return lm_status(rc);
    if (it->k.mv_size == kl && memcmp(it->k.mv_data, k, kl) == 0) return FD_OK;
    return lm_status(mdb_cursor_get(it->c, &it->k, &it->v, MDB_PREV));
}

static int lm_next(kv_iter *it)
{
    return lm_status(mdb_cursor_get(it->c, &it->k, &it->v, MDB_NEXT));
}

static int lm_prev(kv_iter *it)
{
    return lm_status(mdb_cursor_get(it->c, &it->k, &it->v, MDB_PREV));
}

static int lm_cur(kv_iter *it, const void **k, size_t *kl, const void **v, size_t *vl)
{
    int rc = mdb_cursor_get(it->c, &it->k, &it->v, MDB_GET_CURRENT);
    if (rc) return lm_status(rc);
    *k = it->k.mv_data; *kl = it->k.mv_size;
    *v = it->v.mv_data; *vl = it->v.mv_size;
    return FD_OK;
}

/* The high-water mark in bytes (pages ever used, free ones included: LMDB
 * reuses them but never gives them back) and the map size; 0 on success. */
static int lm_usage(lm_db *db, uint64_t *used, uint64_t *map)
{
    MDB_envinfo info;
    MDB_stat st;
    if (mdb_env_info(db->env, &info) || mdb_env_stat(db->env, &st)) return -1;
    *used = (uint64_t)(info.me_last_pgno + 1) * st.ms_psize;
    *map = info.me_mapsize;
    return 0;
}

/* WRITEMAP: make sure the data file's blocks exist up to `upto` bytes
 * (capped at the map), so that writing the map never meets a hole on a
 * full disk (SIGBUS). On failure, WRITEMAP is dropped at the next turn. */
static void lm_prealloc(lm_db *db, uint64_t upto, uint64_t map)
{
    if (upto > map) upto = map;
    if (upto <= db->allocated) return;
    int fd;
    if (mdb_env_get_fd(db->env, &fd) || fallocate(fd, 0, (off_t)db->allocated,
                                                  (off_t)(upto - db->allocated)) != 0) {
        db->drop_wm = 1;
        return;
    }
    db->allocated = upto;
}

/* At the start of a turn in WRITEMAP mode (no transaction open): drop
 * WRITEMAP when the map is getting full or a put met MAP_FULL, else keep
 * LM_HEADROOM preallocated beyond the high-water mark. */
static void lm_turn_start(lm_db *db)
{
    uint64_t used, map;
    if (lm_usage(db, &used, &map) != 0) return;
    if (!db->drop_wm && used <= map / 100 * LM_WRITEMAP_MAX && used + LM_HEADROOM / 2 > db->allocated)
        lm_prealloc(db, used + LM_HEADROOM, map);
    if (!db->drop_wm && used <= map / 100 * LM_WRITEMAP_MAX) return;
    for (int i = 0; i < LM_MAX_DEPTH; i++)
        if (db->tx[i].used) return;             /* cannot reopen under a live txn */
    char err[256];
    int full = db->drop_wm;
    if (lm_reopen(db, 0, err, sizeof err) != FD_OK)
        fd_log(FD_LOG_WARNING, "lmdb: %s", err);
    else
        fd_log(FD_LOG_NOTICE, "lmdb: map %llu%% used%s: reopened without MDB_WRITEMAP "
               "(careful mode needs nested transactions)",
               (unsigned long long)(map ? used * 100 / map : 0), full ? " or a write did not fit" : "");
}

/* The high-water mark above 80% of the map, counting `extra` twice (a
 * value can need as many pages again while the old copy lives). In
 * WRITEMAP mode, a big write's pages are preallocated first. */
static int lm_nearly_full(void *dbp, size_t extra)
{
    lm_db *db = dbp;
    uint64_t used, map;
    if (lm_usage(db, &used, &map) != 0) return 1;
    if (db->writemap && extra) lm_prealloc(db, used + 2 * (uint64_t)extra, map);
    return used + 2 * (uint64_t)extra > map / 10 * 8;
}

static const kv_driver lm_driver = {
    .name = "lmdb",
    .begin = lm_begin, .commit = lm_commit, .abort = lm_abort,
    .get = lm_get, .put = lm_put, .reserve = lm_reserve, .del = lm_del, .clear = lm_clear,
    .iter_open = lm_iter_open, .iter_close = lm_iter_close,
    .seek = lm_seek, .seek_le = lm_seek_le, .next = lm_next, .prev = lm_prev, .cur = lm_cur,
    .nearly_full = lm_nearly_full,
};

/* ---------------------------------------------------------------- key order */

/* LMDB's default key order (mdb_cmp_memn: memcmp over the common length,
 * then the shorter key first), computed by fd_bytes_cmp 8 bytes at a time
 * without a call to memcmp. The order is exactly the default one, so the data file stays
 * what any LMDB program reads (mdb_dump, mdb_stat, an older frontdoor):
 * only the cost changes. Keys here share long prefixes ('M' "key:0000000..."
 * or 'S' len enc version 'l'), and the B+tree searches compared them
 * through a function pointer and then a memcmp call: 12 % of a random-key
 * MSET's instructions were memcmp (docs/benchmarks.md, issue 19). */
static int lm_keycmp(const MDB_val *a, const MDB_val *b)
{
    return fd_bytes_cmp(a->mv_data, a->mv_size, b->mv_data, b->mv_size);
}

/* ---------------------------------------------------------------- backend */

/* Open db->env on db->dir: WRITEMAP when `writemap` (nosync only), and
 * the unnamed database. FD_OK, or FD_E_* with err set (db->env NULL). */
static int lm_env_open(lm_db *db, int writemap, char *err, size_t errlen)
{
    unsigned flags = MDB_NOTLS | (db->sync ? 0 : MDB_NOSYNC) | (writemap ? MDB_WRITEMAP : 0);
    int rc = mdb_env_create(&db->env);
    if (rc) db->env = NULL;
    if (!rc) rc = mdb_env_set_mapsize(db->env, (size_t)db->map_size);
    if (!rc) rc = mdb_env_open(db->env, db->dir, flags, 0644);
    if (!rc) {
        MDB_txn *t;
        rc = mdb_txn_begin(db->env, NULL, 0, &t);
        if (!rc) {
            rc = mdb_dbi_open(t, NULL, 0, &db->dbi);
            if (!rc) rc = mdb_set_compare(t, db->dbi, lm_keycmp);   /* before any access */
            if (!rc) rc = mdb_txn_commit(t);
            else mdb_txn_abort(t);
        }
    }
    if (rc) {
        snprintf(err, errlen, "cannot open the LMDB store in '%s': %s", db->dir, mdb_strerror(rc));
        if (db->env) mdb_env_close(db->env);
        db->env = NULL;
        return lm_status(rc) == FD_E_CORRUPT ? FD_E_CORRUPT : FD_E_IO;
    }
    db->writemap = writemap;
    db->allocated = 0;
    return FD_OK;
}

/* Close and reopen the environment in the other mode, between turns. On
 * failure the old mode is tried again (db->env NULL if that fails too:
 * every later begin then fails with FD_E_IO). */
static int lm_reopen(lm_db *db, int writemap, char *err, size_t errlen)
{
    int old = db->writemap;
    mdb_env_close(db->env);
    db->env = NULL;
    int s = lm_env_open(db, writemap, err, errlen);
    if (s != FD_OK) {
        char err2[256];
        lm_env_open(db, old, err2, sizeof err2);
    }
    db->drop_wm = 0;
    return s;
}

static void lm_free(lm_backend *lb)
{
    if (lb->db.env) mdb_env_close(lb->db.env);
    close(lb->db.lockfd);
    free(lb->db.dir);
    free(lb);
}

static int lmdb_open(fd_backend *b, const fd_backend_config *cfg, char *err, size_t errlen)
{
    const char *dir = fd_datadir_name(cfg);
    int ds = fd_datadir_create(dir, err, errlen);
    if (ds != FD_OK) return ds;
    /* A second process writing the same environment would make this loop
     * wait on LMDB's writer lock: refuse it up front. */
    int lockfd;
    if ((ds = fd_datadir_lock(dir, &lockfd, err, errlen)) != FD_OK) return ds;
    lm_backend *lb = calloc(1, sizeof *lb);
    if (!lb || !(lb->db.dir = strdup(dir))) {
        free(lb);
        close(lockfd);
        snprintf(err, errlen, "out of memory");
        return FD_E_NOMEM;
    }
    lm_db *db = &lb->db;
    db->lockfd = lockfd;
    const fd_lmdb_settings *ls = cfg->options;
    db->map_size = ls && ls->map_size ? (uint64_t)ls->map_size : LM_DEFAULT_MAP;
    db->sync = cfg->sync;
    int s = lm_env_open(db, !cfg->sync, err, errlen);
    if (s == FD_OK) s = kv_backend_attach(b, &lb->st, &lm_driver, db, cfg, err, errlen);
    if (s != FD_OK) lm_free(lb);
    return s;
}

static void lmdb_close(fd_backend *b)
{
    lm_backend *lb = b->state;
    if (!lb) return;
    kv_store_free(&lb->st);          /* aborts an uncommitted turn */
    if (!lb->db.sync && lb->db.env) mdb_env_sync(lb->db.env, 1);
    lm_free(lb);
    b->state = NULL;
}

static void lmdb_info(fd_backend *b, resp_out *lines)
{
    lm_backend *lb = b->state;
    MDB_envinfo info;
    MDB_stat st;
    char buf[512];
    if (lb->db.env && mdb_env_info(lb->db.env, &info) == 0 && mdb_env_stat(lb->db.env, &st) == 0) {
        int n = snprintf(buf, sizeof buf,
                         "lmdb_map_size:%llu\r\nlmdb_used_bytes:%llu\r\nlmdb_page_size:%u\r\n"
                         "lmdb_last_txnid:%llu\r\nlmdb_entries:%llu\r\nlmdb_depth:%u\r\n"
                         "lmdb_readers:%u\r\nlmdb_max_readers:%u\r\nlmdb_sync:%s\r\nlmdb_writemap:%s\r\n",
                         (unsigned long long)info.me_mapsize,
                         (unsigned long long)(info.me_last_pgno + 1) * st.ms_psize,
                         st.ms_psize, (unsigned long long)info.me_last_txnid,
                         (unsigned long long)st.ms_entries, st.ms_depth,
                         info.me_numreaders, info.me_maxreaders, lb->db.sync ? "yes" : "no",
                         lb->db.writemap ? "yes" : "no");
        if (n > 0) resp_out_raw(lines, buf, (size_t)n);
    }
    kv_backend_info(&lb->st, lines);
}

/* lmdb's directives (option.h) */
static const fd_option lm_rows[] = {
    {"lmdb-map-size", FD_OPT_MEM, offsetof(fd_lmdb_settings, map_size), "4gb", 1024 * 1024, 1LL << 46, NULL, 0},
};
const fd_option_set fd_lmdb_options = FD_OPTION_SET("lmdb", lm_rows, fd_lmdb_settings);
_Static_assert(sizeof(fd_lmdb_settings) <= FD_OPTION_SET_BYTES, "lmdb settings fit a set");

const fd_backend_ops fd_lmdb_backend = {
    .name     = "lmdb",
    .options  = &fd_lmdb_options,
    .open     = lmdb_open,
    .close    = lmdb_close,
    .submit   = kv_backend_submit,
    .end_turn = kv_backend_end_turn,
    .cron     = kv_backend_cron,
    .aux_get  = kv_backend_aux_get,
    .aux_put  = kv_backend_aux_put,
    .keyspace = kv_backend_keyspace,
    .info     = lmdb_info,
    .support  = kv_backend_support,
    .embedded = 1,
    .notify   = FD_NOTIFY_CLASSES,
};
