/* mg_backend.c — the MongoDB backend's machinery: worker threads, grouped
 * writes, the loop side, fd_mongodb_backend. The data model is in mg.h, the
 * commands in the other mg_*.c files.
 *
 * Threads. libmongoc calls block, so none runs on the loop thread. The loop
 * thread copies each request (argv) and queues it to one of `mongo-workers`
 * threads, chosen by a hash of its key: commands on one key run in order on
 * one thread, so a read-modify-write (GETSET, APPEND, SETRANGE...) is atomic
 * against every other command of this frontdoor. A command on several keys
 * (MSET, DEL a b, RENAME) or on none (KEYS, SCAN, DBSIZE, FLUSHDB) is queued
 * to every worker its keys hash to (all of them when keyless) and runs once
 * all of them reached it (the last to arrive runs it; the others wait): it is
 * ordered with the commands before and after it on each of its keys. No
 * deadlock: the loop thread queues in one global order, so the oldest barrier
 * is always at the head of all its queues. Each worker holds one client of a
 * mongoc_client_pool_t. Results come back through a completion queue and an
 * ev_async on the loop, where fd_pending_reply is called; the proxy's reply
 * marks put each client's replies back in request order (proxy/pending.c).
 *
 * Faults. serverSelectionTimeoutMS, socketTimeoutMS and connectTimeoutMS
 * default to backend-timeout (unless the URI sets them). A loop timer fails
 * every request not answered within backend-timeout with
 * "-ERR backend unavailable (mongodb: ...)"; a worker skips requests whose
 * deadline passed while they waited in its queue (so a timed-out write is
 * not executed late, except the one in flight at the deadline: its outcome
 * is unknown, as with any network store). libmongoc's topology monitor finds
 * the server again when it returns; nothing else is needed to recover.
 * An "admin" thread creates the TTL index (retrying until the server
 * answers), reads buildInfo (INFO shows whether an emulator answered) and
 * counts keys for INFO keyspace every few seconds.
 *
 * Write concern. mongo-w, mongo-j, mongo-wtimeout; mongo-j "auto" follows
 * `durability`: sync -> j:true, nosync -> the URI's/server's default.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mg.h"
#include "../host.h"

#define MG_TICK_MS     20

/* Is a mongoc error one of "the server cannot be reached"? */
static int err_unavailable(const bson_error_t *e)
{
    return e->domain == MONGOC_ERROR_SERVER_SELECTION || e->domain == MONGOC_ERROR_STREAM ||
           e->domain == MONGOC_ERROR_PROTOCOL || e->domain == MONGOC_ERROR_CLIENT;
}

/* ================================================================ table */

/* The handler of each command by id (NULL for the proxy's own). */
#define MG_H_PROXY(impl) NULL
#define MG_H_DATA(impl) mg_cmd_##impl
static const mg_fn handlers[FD_CMD_COUNT] = {
#define CMD(id, ar, fl, f, l, s, fam, impl, ...) [FD_CMD_##id] = MG_H_##fam(impl),
#include "../commands.def"
#undef CMD
};

static const char *mg_support(const struct fd_command *cmd)
{
    return handlers[cmd->id] ? FD_SERVED : NULL;
}

/* ================================================================ workers */

static int ensure_indexes(mongoc_client_t *cl, mg_backend *b, bson_error_t *err)
{
    bson_t cmd = BSON_INITIALIZER, arr, ix, key;
    bson_append_utf8(&cmd, "createIndexes", -1, MG_COLL, -1);
    bson_append_array_begin(&cmd, "indexes", -1, &arr);
    bson_append_document_begin(&arr, "0", -1, &ix);
    bson_append_document_begin(&ix, "key", -1, &key);
    bson_append_int32(&key, "expireAt", -1, 1);
    bson_append_document_end(&ix, &key);
    bson_append_utf8(&ix, "name", -1, "expireAt_ttl", -1);
    bson_append_int32(&ix, "expireAfterSeconds", -1, 0);
    bson_append_document_end(&arr, &ix);
    bson_append_array_end(&cmd, &arr);
    bool ok = mongoc_client_write_command_with_opts(cl, b->dbname, &cmd, NULL, NULL, err);
    bson_destroy(&cmd);
    return ok ? 0 : -1;
}

static void complete(mg_backend *b, mg_req *r)
{
    pthread_mutex_lock(&b->cmu);
    r->next = NULL;
    if (b->ctail) b->ctail->next = r;
    else b->chead = r;
    b->ctail = r;
    pthread_mutex_unlock(&b->cmu);
    ev_async_send(b->loop, &b->async);
}

static void reply_unavailable(resp_out *o, const char *why)
{
    resp_add_errorf(o, "ERR backend unavailable (mongodb: %s)", why);
}

static void execute(mg_backend *b, mongoc_client_t *cl, mongoc_collection_t *coll, mg_req *r)
{
    if (fd_mono_us() > r->deadline_us) { r->skipped = 1; return; }
    mg_ctx c;
    memset(&c, 0, sizeof c);
    c.b = b;
    c.client = cl;
    c.coll = coll;
    c.argc = r->argc;
    c.argv = r->argv;
    c.out = &r->out;
    c.now_ms = r->now_ms;
    c.max_bulk = b->cfg.max_bulk > 0 ? b->cfg.max_bulk : RESP_DEFAULT_MAX_BULK;
    c.ev = &r->ev;
    c.read = r->read;
    size_t mark = r->out.len, evmark = r->ev.len;
    int s = r->fn(&c);
    if (c.bcoll) mongoc_collection_destroy(c.bcoll);
    if (r->out.over) {
        /* past max-reply-bytes: the refusal replaces the reply (a write
         * made is kept, as any write whose reply is lost) */
        r->out.over = 0;
        r->out.len = mark;
        long long max = (long long)r->out.limit;
        r->out.limit = 0;
        s = fd_add_reply_too_big(&r->out, max, 0) ? FD_E_NOMEM : FD_OK;
    }
    if (s == MG_E_MONGO) {
        r->out.len = mark;
        if (err_unavailable(&c.err)) reply_unavailable(&r->out, c.err.message);
        else resp_add_errorf(&r->out, "ERR mongodb: %s (code %u)", c.err.message, c.err.code);
        s = FD_OK;
    } else if (s != FD_OK) {
        r->out.len = mark;
    }
    if (s != FD_OK || (r->out.len > mark && r->out.data[mark] == '-'))
        fd_events_cut(&r->ev, evmark);        /* a failed command: none of its events */
    r->status = s;
}

/* ---------------------------------------------------------------- grouped writes
 *
 * Plain SETs (SET key value: one replaceOne upsert, no read, a reply that
 * does not depend on what was there) that wait one after the other in a
 * worker's queue are sent as one ordered bulk write: one round trip for up
 * to MG_GROUP_MAX of them, in queue order, so every key still sees its
 * commands in order. A bulk stops at its first failing write: that SET
 * gets the server's error, the ones before it +OK, the ones after it run
 * one by one as usual (a driver error counts the same way: the writes the
 * reply counts as done get +OK, the first not done gets the error — its
 * outcome is unknown, as that of a single write in flight). A failure after
 * every write was done (a write concern error) is every SET's error. */

#define MG_GROUP_MAX 64

static int groupable(const mg_req *r)
{
    /* a value past MongoDB's document limit runs alone: mg_write_string
     * refuses it before sending, with the same text whatever the grouping */
    return r->nw == 1 && r->fn == mg_cmd_set && r->argc == 3 && r->argv[2].len <= MG_DOC_MAX;
}

static void group_error(mg_backend *b, mg_req *r, const bson_error_t *e)
{
    r->out.len = 0;
    if (err_unavailable(e)) reply_unavailable(&r->out, e->message);
    else resp_add_errorf(&r->out, "ERR mongodb: %s (code %u)", e->message, e->code);
    r->status = FD_OK;
    atomic_fetch_add(&b->mongo_errors, 1);
}

/* Run the n grouped SETs g[]; each is completed here. */
static void execute_group(mg_backend *b, mongoc_client_t *cl, mongoc_collection_t *coll, mg_req **g, int n)
{
    mg_req *live[MG_GROUP_MAX];
    int k = 0;
    int64_t now = fd_mono_us();
    for (int i = 0; i < n; i++) {
        if (now > g[i]->deadline_us) g[i]->skipped = 1;
        else live[k++] = g[i];
    }
    int done = 0;                  /* live[0 .. done) are answered */
    if (k == 1) {
        execute(b, cl, coll, live[0]);
        done = 1;
    } else if (k > 1) {
        mongoc_bulk_operation_t *bulk = mongoc_collection_create_bulk_operation_with_opts(coll, NULL);
        bson_t opts = BSON_INITIALIZER, reply;
        bson_error_t err;
        bson_append_bool(&opts, "upsert", -1, true);
        int ok = 1;
        for (int i = 0; i < k && ok; i++) {
            bson_t q = BSON_INITIALIZER, d = BSON_INITIALIZER;
            mg_append_key(&q, "_id", live[i]->argv[1].ptr, live[i]->argv[1].len);
            bson_append_utf8(&d, "type", -1, "string", -1);
            mg_append_value(&d, live[i]->argv[2].ptr, live[i]->argv[2].len);
            ok = mongoc_bulk_operation_replace_one_with_opts(bulk, &q, &d, &opts, &err);
            bson_destroy(&q);
            bson_destroy(&d);
        }
        if (ok) {
            atomic_fetch_add(&b->bulk_groups, 1);
            atomic_fetch_add(&b->bulk_grouped, (unsigned long long)k);
        }
        if (!ok) {
            bson_init(&reply);       /* could not even be built: run them one by one */
        } else if (mongoc_bulk_operation_execute(bulk, &reply, &err)) {
            for (int i = 0; i < k; i++) {
                live[i]->status = resp_add_status(&live[i]->out, "OK") ? FD_E_NOMEM : FD_OK;
                FD_NOTIFY(&live[i]->ev, FD_NOTIFY_STRING, "set", live[i]->argv[1].ptr, live[i]->argv[1].len);
            }
            done = k;
        } else {
            bson_iter_t it, we, e;
            uint32_t failed = (uint32_t)k;  /* index of the first failed write, k: none known */
            if (bson_iter_init_find(&it, &reply, "writeErrors") && BSON_ITER_HOLDS_ARRAY(&it) &&
                bson_iter_recurse(&it, &we) && bson_iter_next(&we) && BSON_ITER_HOLDS_DOCUMENT(&we) &&
                bson_iter_recurse(&we, &e) && bson_iter_find(&e, "index") && BSON_ITER_HOLDS_NUMBER(&e)) {
                failed = (uint32_t)bson_iter_as_int64(&e);
            } else {
                /* no server-side write error (one document too large for
                 * the driver, the server lost between batches...): every
                 * replace-upsert done so far was matched or upserted, in
                 * order, so the count is the index of the first one not done */
                int64_t doneops = 0;
                if (bson_iter_init_find(&it, &reply, "nMatched") && BSON_ITER_HOLDS_NUMBER(&it))
                    doneops += bson_iter_as_int64(&it);
                if (bson_iter_init_find(&it, &reply, "nUpserted") && BSON_ITER_HOLDS_NUMBER(&it))
                    doneops += bson_iter_as_int64(&it);
                if (doneops >= 0 && doneops < k) failed = (uint32_t)doneops;
            }
            if (failed < (uint32_t)k) {
                for (uint32_t i = 0; i < failed; i++) {
                    live[i]->status = resp_add_status(&live[i]->out, "OK") ? FD_E_NOMEM : FD_OK;
                    FD_NOTIFY(&live[i]->ev, FD_NOTIFY_STRING, "set", live[i]->argv[1].ptr, live[i]->argv[1].len);
                }
                group_error(b, live[failed], &err);
                done = (int)failed + 1;
            } else {
                for (int i = 0; i < k; i++) group_error(b, live[i], &err);
                done = k;
            }
        }
        bson_destroy(&reply);
        bson_destroy(&opts);
        mongoc_bulk_operation_destroy(bulk);
    }
    for (int i = done; i < k; i++) execute(b, cl, coll, live[i]);
    for (int i = 0; i < n; i++) complete(b, g[i]);
}

static void *worker_main(void *arg)
{
    mg_worker *w = arg;
    mg_backend *b = w->b;
    mongoc_client_t *cl = mongoc_client_pool_pop(b->pool);
    mongoc_collection_t *coll = mongoc_client_get_collection(cl, b->dbname, MG_COLL);
    mongoc_collection_set_write_concern(coll, b->wc);
    for (;;) {
        pthread_mutex_lock(&w->mu);
        while (!w->head && !atomic_load(&b->stop)) pthread_cond_wait(&w->cv, &w->mu);
        if (atomic_load(&b->stop)) { pthread_mutex_unlock(&w->mu); break; }
        mg_node *n = w->head;
        w->head = n->next;
        mg_req *g[MG_GROUP_MAX];
        int ng = 0;
        if (groupable(n->r))
            for (g[ng++] = n->r; w->head && ng < MG_GROUP_MAX && groupable(w->head->r); w->head = w->head->next)
                g[ng++] = w->head->r;
        if (!w->head) w->tail = NULL;
        pthread_mutex_unlock(&w->mu);
        mg_req *r = n->r;
        if (ng > 1) {
            execute_group(b, cl, coll, g, ng);
        } else if (r->nw > 1) {
            pthread_mutex_lock(&r->bmu);
            r->arrived++;
            if (r->arrived < r->nw) {
                while (!r->done && !atomic_load(&b->stop)) pthread_cond_wait(&r->bcv, &r->bmu);
                int last = --r->refs == 0;
                pthread_mutex_unlock(&r->bmu);
                if (last) complete(b, r);
                continue;
            }
            pthread_mutex_unlock(&r->bmu);
            execute(b, cl, coll, r);
            pthread_mutex_lock(&r->bmu);
            r->done = 1;
            pthread_cond_broadcast(&r->bcv);
            int last = --r->refs == 0;
            pthread_mutex_unlock(&r->bmu);
            if (last) complete(b, r);
        } else {
            execute(b, cl, coll, r);
            complete(b, r);
        }
    }
    mongoc_collection_destroy(coll);
    mongoc_client_pool_push(b->pool, cl);
    return NULL;
}

/* ---------------------------------------------------------------- frontdoor's own record */

#define MG_AUX_NAME "functions"   /* the one record (proxy/scripting.c) */

/* Admin thread: read the record once, then store the cache when it changed.
 * Returns 0, or -1 when the server did not answer (retried at the next tick). */
static int aux_sync(mongoc_client_t *cl, mg_backend *b, bson_error_t *err)
{
    mongoc_collection_t *ac = mongoc_client_get_collection(cl, b->dbname, MG_AUX_COLL);
    if (!ac) return -1;
    int rc = 0;
    bson_t q = BSON_INITIALIZER;
    bson_append_utf8(&q, "_id", -1, MG_AUX_NAME, -1);
    pthread_mutex_lock(&b->amu);
    int loaded = b->aux_loaded;
    pthread_mutex_unlock(&b->amu);
    if (!loaded) {
        mongoc_cursor_t *cur = mongoc_collection_find_with_opts(ac, &q, NULL, NULL);
        const bson_t *doc;
        char *val = NULL;
        size_t len = 0;
        int found = 0;
        if (mongoc_cursor_next(cur, &doc)) {
            bson_iter_t it;
            if (bson_iter_init_find(&it, doc, "v") && BSON_ITER_HOLDS_BINARY(&it)) {
                bson_subtype_t st;
                uint32_t bl;
                const uint8_t *bp;
                bson_iter_binary(&it, &st, &bl, &bp);
                if ((val = malloc(bl ? bl : 1))) { memcpy(val, bp, bl); len = bl; found = 1; }
            }
        }
        if (mongoc_cursor_error(cur, err)) rc = -1;
        mongoc_cursor_destroy(cur);
        if (rc == 0) {
            pthread_mutex_lock(&b->amu);
            b->aux_val = found ? val : NULL;
            b->aux_len = len;
            b->aux_loaded = 1;
            pthread_mutex_unlock(&b->amu);
        } else {
            free(val);
        }
    }
    pthread_mutex_lock(&b->amu);
    int dirty = rc == 0 && b->aux_dirty;
    char *val = NULL;
    size_t len = b->aux_len;
    if (dirty && b->aux_val && (val = malloc(len ? len : 1))) memcpy(val, b->aux_val, len);
    int absent = !b->aux_val;
    b->aux_dirty = 0;               /* set again by a later aux_put */
    pthread_mutex_unlock(&b->amu);
    if (dirty && (val || absent)) {
        bool ok;
        if (absent) {
            ok = mongoc_collection_delete_one(ac, &q, NULL, NULL, err);
        } else {
            bson_t u = BSON_INITIALIZER, set, opts = BSON_INITIALIZER;
            bson_append_document_begin(&u, "$set", -1, &set);
            bson_append_binary(&set, "v", -1, BSON_SUBTYPE_BINARY, (const uint8_t *)val, (uint32_t)len);
            bson_append_document_end(&u, &set);
            bson_append_bool(&opts, "upsert", -1, true);
            mongoc_write_concern_append(b->wc, &opts);
            ok = mongoc_collection_update_one(ac, &q, &u, &opts, NULL, err);
            bson_destroy(&u);
            bson_destroy(&opts);
        }
        if (!ok) {                  /* retried at the next tick */
            pthread_mutex_lock(&b->amu);
            b->aux_dirty = 1;
            pthread_mutex_unlock(&b->amu);
            rc = -1;
        }
    } else if (dirty) {             /* no memory for the copy: later */
        pthread_mutex_lock(&b->amu);
        b->aux_dirty = 1;
        pthread_mutex_unlock(&b->amu);
    }
    free(val);
    bson_destroy(&q);
    mongoc_collection_destroy(ac);
    return rc;
}

static int mg_aux_get(fd_backend *be, const char *name, char **v, size_t *vl)
{
    mg_backend *b = be->state;
    if (strcmp(name, MG_AUX_NAME) != 0) return FD_E_INTERNAL;
    int s = FD_OK;
    pthread_mutex_lock(&b->amu);
    if (!b->aux_loaded) s = FD_E_UNAVAILABLE;
    else if (!b->aux_val) s = FD_NOTFOUND;
    else if (!(*v = malloc(b->aux_len ? b->aux_len : 1))) s = FD_E_NOMEM;
    else { memcpy(*v, b->aux_val, b->aux_len); *vl = b->aux_len; }
    pthread_mutex_unlock(&b->amu);
    return s;
}

static int mg_aux_put(fd_backend *be, const char *name, const void *v, size_t vl)
{
    mg_backend *b = be->state;
    if (strcmp(name, MG_AUX_NAME) != 0) return FD_E_INTERNAL;
    char *copy = NULL;
    if (vl && !(copy = malloc(vl))) return FD_E_NOMEM;
    if (vl) memcpy(copy, v, vl);
    int s = FD_OK;
    pthread_mutex_lock(&b->amu);
    if (!b->aux_loaded) {
        s = FD_E_UNAVAILABLE;
        free(copy);
    } else {
        free(b->aux_val);
        b->aux_val = copy;
        b->aux_len = vl;
        b->aux_dirty = 1;
        pthread_cond_signal(&b->acv);
    }
    pthread_mutex_unlock(&b->amu);
    return s;
}

/* The admin thread: TTL index, server identity, key counts for INFO,
 * frontdoor's own record (aux_sync). */
static void *admin_main(void *arg)
{
    mg_backend *b = arg;
    mongoc_client_t *cl = mongoc_client_pool_pop(b->pool);
    mongoc_collection_t *coll = mongoc_client_get_collection(cl, b->dbname, MG_COLL);
    int64_t next_count = 0;
    int logged_down = 0, logged_aux = 0, aux_failed = 0;
    while (!atomic_load(&b->stop)) {
        bson_error_t err;
        if (!atomic_load(&b->indexes_ok)) {
            if (ensure_indexes(cl, b, &err) == 0) {
                atomic_store(&b->indexes_ok, 1);
                bson_t cmd = BSON_INITIALIZER, reply;
                bson_append_int32(&cmd, "buildInfo", -1, 1);
                if (mongoc_client_command_simple(cl, "admin", &cmd, NULL, &reply, &err)) {
                    bson_iter_t it;
                    pthread_mutex_lock(&b->amu);
                    if (bson_iter_init_find(&it, &reply, "version") && BSON_ITER_HOLDS_UTF8(&it))
                        snprintf(b->server_version, sizeof b->server_version, "%s", bson_iter_utf8(&it, NULL));
                    b->server_emulator = bson_iter_init_find(&it, &reply, "emulator") && bson_iter_as_bool(&it);
                    pthread_mutex_unlock(&b->amu);
                    fd_log(FD_LOG_NOTICE, "mongodb: connected to %s, server version %s%s", b->ms.uri,
                           b->server_version, b->server_emulator ? " (an EMULATOR: its figures are not MongoDB's)" : "");
                }
                bson_destroy(&reply);
                bson_destroy(&cmd);
                logged_down = 0;
            } else if (!logged_down) {
                fd_log(FD_LOG_WARNING, "mongodb: %s not reachable yet (%s); commands fail until it is",
                       b->ms.uri, err.message);
                logged_down = 1;
            }
        }
        aux_failed = atomic_load(&b->indexes_ok) && aux_sync(cl, b, &err) < 0;
        if (aux_failed && !logged_aux) {
            fd_log(FD_LOG_WARNING, "mongodb: the FUNCTION libraries could not be read or stored yet (%s); retrying",
                   err.message);
            logged_aux = 1;
        }
        int64_t now = fd_mono_us();
        if (atomic_load(&b->indexes_ok) && now >= next_count) {
            bson_t q = BSON_INITIALIZER, x;
            int64_t keys = mg_count(coll, NULL, &err);
            bson_append_document_begin(&q, "expireAt", -1, &x);
            bson_append_date_time(&x, "$gt", -1, 0);
            bson_append_document_end(&q, &x);
            int64_t ex = mg_count(coll, &q, &err);
            bson_destroy(&q);
            if (keys >= 0) atomic_store(&b->keys, keys);
            if (ex >= 0) atomic_store(&b->expires, ex);
            next_count = now + 5000000;
        }
        pthread_mutex_lock(&b->amu);
        if (!atomic_load(&b->stop) && (!b->aux_dirty || aux_failed)) {   /* aux_put wakes it */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            pthread_cond_timedwait(&b->acv, &b->amu, &ts);
        }
        pthread_mutex_unlock(&b->amu);
    }
    if (atomic_load(&b->indexes_ok)) {   /* a last change not stored yet */
        bson_error_t err;
        aux_sync(cl, b, &err);
    }
    mongoc_collection_destroy(coll);
    mongoc_client_pool_push(b->pool, cl);
    return NULL;
}

/* ================================================================ loop side */

static void free_req(mg_req *r)
{
    resp_out_free(&r->out);
    fd_events_free(&r->ev);
    if (r->nw > 1) {
        pthread_mutex_destroy(&r->bmu);
        pthread_cond_destroy(&r->bcv);
        free(r->nodes);
    }
    free(r->argv);
    free(r);
}

static void inflight_unlink(mg_backend *b, mg_req *r)
{
    if (r->lprev) r->lprev->lnext = r->lnext;
    else b->ihead = r->lnext;
    if (r->lnext) r->lnext->lprev = r->lprev;
    else b->itail = r->lprev;
    r->lprev = r->lnext = NULL;
    b->inflight--;
}

static void timed_out(mg_backend *b, mg_req *r)
{
    if (!r->p) return;
    resp_out o;
    char why[128];
    resp_out_init(&o, r->proto);
    snprintf(why, sizeof why, "no reply within backend-timeout %lld ms", b->cfg.backend_timeout_ms);
    reply_unavailable(&o, why);
    fd_pending_reply(r->p, o.data, o.len);
    resp_out_free(&o);
    r->p = NULL;
    b->timeouts++;
}

/* ---------------------------------------------------------------- events in order
 *
 * Workers run requests on different keys at once, so they complete out of
 * order; their keyspace events go out in submission order (Redis's
 * command order, MULTI/EXEC and scripts included): a request's events wait
 * for those of every request submitted before it. At most MG_HELD_MAX
 * completions wait (a request stuck in a worker): past that, the waiting
 * events go out in order and the stuck request's come when it completes. */
#define MG_HELD_MAX 4096

typedef struct mg_held { uint64_t seq; fd_events ev; struct mg_held *next; } mg_held;

static void events_flush(mg_backend *b)
{
    while (b->held && b->held->seq <= b->ev_next) {
        mg_held *h = b->held;
        b->held = h->next;
        b->nheld--;
        if (h->seq == b->ev_next) b->ev_next++;
        fd_events_deliver(&h->ev);
        fd_events_free(&h->ev);
        free(h);
    }
}

static void events_done(mg_backend *b, mg_req *r)
{
    if (!b->held && !fd_notify_on(FD_NOTIFY_CLASSES)) {   /* off: nothing to order, nothing held */
        b->ev_next = b->seq_next;
        return;
    }
    if (r->seq <= b->ev_next && !b->held) {            /* the usual case: in order */
        if (r->seq == b->ev_next) b->ev_next++;
        fd_events_deliver(&r->ev);
        return;
    }
    if (r->seq < b->ev_next) { fd_events_deliver(&r->ev); return; }   /* given up waiting for it */
    if (r->seq == b->ev_next) {
        b->ev_next++;
        fd_events_deliver(&r->ev);
        events_flush(b);
        return;
    }
    mg_held *h = malloc(sizeof *h);
    if (!h) { fd_events_deliver(&r->ev); return; }    /* out of memory: out of order */
    h->seq = r->seq;
    h->ev = r->ev;
    memset(&r->ev, 0, sizeof r->ev);                   /* moved */
    mg_held **pp = &b->held;
    while (*pp && (*pp)->seq < h->seq) pp = &(*pp)->next;
    h->next = *pp;
    *pp = h;
    if (++b->nheld > MG_HELD_MAX) {                    /* stop waiting for the oldest missing one */
        b->ev_next = b->held->seq;
        events_flush(b);
    }
}

static void on_async(struct ev_loop *loop, ev_async *w, int revents)
{
    mg_backend *b = w->data;
    pthread_mutex_lock(&b->cmu);
    mg_req *r = b->chead;
    b->chead = b->ctail = NULL;
    pthread_mutex_unlock(&b->cmu);
    while (r) {
        mg_req *next = r->next;
        inflight_unlink(b, r);
        events_done(b, r);                    /* the command ran: its events (in order), before its reply */
        if (r->p) {
            if (r->skipped) timed_out(b, r);
            else if (r->status == FD_OK) {
                if (r->out.len && r->out.data[0] == '-') b->errors++;
                fd_pending_reply(r->p, r->out.data, r->out.len);
            } else {
                fd_pending_error(r->p, r->status);
            }
        }
        free_req(r);
        r = next;
    }
}

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
    mg_backend *b = w->data;
    int64_t now = fd_mono_us();
    for (mg_req *r = b->ihead; r && r->deadline_us <= now; r = r->lnext) timed_out(b, r);
    /* timed-out requests stay listed (and allocated) until their worker is done */
}

static void enqueue(mg_worker *w, mg_node *n)
{
    n->next = NULL;
    pthread_mutex_lock(&w->mu);
    if (w->tail) w->tail->next = n;
    else w->head = n;
    w->tail = n;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static int mg_submit(fd_backend *be, fd_request *req)
{
    mg_backend *b = be->state;
    mg_fn fn = req->cmd ? handlers[req->cmd->id] : NULL;
    if (!fn) return FD_E_NOTSUPPORTED;      /* the proxy asked support() first */
    size_t bytes = 0;
    for (int i = 0; i < req->argc; i++) bytes += req->argv[i].len + 1;
    mg_req *r = calloc(1, sizeof *r);
    if (!r) return FD_E_NOMEM;
    r->argv = malloc((size_t)req->argc * sizeof(resp_arg) + bytes);
    if (!r->argv) { free(r); return FD_E_NOMEM; }
    char *p = (char *)(r->argv + req->argc);
    for (int i = 0; i < req->argc; i++) {
        memcpy(p, req->argv[i].ptr, req->argv[i].len);
        p[req->argv[i].len] = '\0';
        r->argv[i].ptr = p;
        r->argv[i].len = req->argv[i].len;
        p += req->argv[i].len + 1;
    }
    r->argc = req->argc;
    r->fn = fn;
    r->name = req->cmd->name;
    r->proto = req->out->proto;
    r->now_ms = req->now_ms;
    r->deadline_us = fd_mono_us() + b->cfg.backend_timeout_ms * 1000;
    r->p = req->pending;
    r->read = !req->is_write;
    resp_out_init(&r->out, r->proto);
    /* max-reply-bytes (resp.h): the bound left in the client's buffer */
    r->out.limit = req->out->limit > req->out->len ? req->out->limit - req->out->len : 0;

    /* the workers this command's keys hash to */
    const fd_command *cmd = req->cmd;
    int nwk = b->nworkers;
    unsigned char *need = calloc((size_t)nwk, 1);
    if (!need) { free(r->argv); free(r); return FD_E_NOMEM; }
    int count = 0;
    /* SORT with BY/GET/STORE reads or writes other keys: every worker */
    int sort_opts = 0;
    if (cmd->id == FD_CMD_sort || cmd->id == FD_CMD_sort_ro)
        for (int i = 2; i < req->argc && !sort_opts; i++)
            sort_opts = resp_arg_is(&req->argv[i], "by") || resp_arg_is(&req->argv[i], "get") ||
                        resp_arg_is(&req->argv[i], "store");
    if ((cmd->flags & FD_CMD_KEYLESS_BACKEND) || cmd->first_key <= 0 || sort_opts) {
        memset(need, 1, (size_t)nwk);
        count = nwk;
    } else {
        int last = cmd->last_key < 0 ? req->argc + cmd->last_key : cmd->last_key;
        int step = cmd->key_step > 0 ? cmd->key_step : 1;
        for (int i = cmd->first_key; i <= last && i < req->argc; i += step) {
            int wi = (int)(mg_hash_key(req->argv[i].ptr, req->argv[i].len) % (uint64_t)nwk);
            if (!need[wi]) { need[wi] = 1; count++; }
        }
        if (!count) { need[0] = 1; count = 1; }
    }
    r->nw = count;
    if (count > 1) {
        r->nodes = calloc((size_t)count, sizeof(mg_node));
        if (!r->nodes) { free(need); free(r->argv); free(r); return FD_E_NOMEM; }
        pthread_mutex_init(&r->bmu, NULL);
        pthread_cond_init(&r->bcv, NULL);
        r->refs = count;
    }
    /* in flight (loop side) */
    r->lprev = b->itail;
    if (b->itail) b->itail->lnext = r;
    else b->ihead = r;
    b->itail = r;
    b->inflight++;
    b->requests++;
    if (req->is_write) be->turn_writes++;
    r->seq = b->seq_next++;                 /* its events go out in this order */
    int k = 0;
    for (int i = 0; i < nwk; i++) {
        if (!need[i]) continue;
        mg_node *n = count > 1 ? &r->nodes[k++] : &r->node1;
        n->r = r;
        enqueue(&b->w[i], n);
    }
    free(need);
    return FD_PENDING;
}

/* ---------------------------------------------------------------- expired events
 *
 * MongoDB's TTL monitor deletes expired documents about once a minute and
 * tells nobody; reads hide them meanwhile. While class x is delivered, cron
 * (hz times a second) has one worker delete up to MG_SWEEP_KEYS documents
 * whose expireAt has passed, each with a delete that matches it only if it
 * still has that deadline passed (a concurrent SET/PERSIST wins), and
 * raise "expired" for each deleted: Redis's active expiry. One sweep in
 * flight at a time; nothing runs while x is off. */
#define MG_SWEEP_KEYS 100

static int sweep(mg_ctx *c)
{
    bson_t q = BSON_INITIALIZER, x, opts = BSON_INITIALIZER, proj;
    bson_append_document_begin(&q, "expireAt", -1, &x);
    bson_append_date_time(&x, "$lte", -1, c->now_ms);
    bson_append_document_end(&q, &x);
    bson_append_int64(&opts, "limit", -1, MG_SWEEP_KEYS);
    bson_append_document_begin(&opts, "projection", -1, &proj);
    bson_append_int32(&proj, "_id", -1, 1);
    bson_append_document_end(&opts, &proj);
    mongoc_cursor_t *cur = mongoc_collection_find_with_opts(c->coll, &q, &opts, NULL);
    const bson_t *doc;
    int s = FD_OK;
    while (s == FD_OK && mongoc_cursor_next(cur, &doc)) {
        bson_iter_t it;
        if (!bson_iter_init_find(&it, doc, "_id") || !BSON_ITER_HOLDS_BINARY(&it)) continue;
        bson_subtype_t st; uint32_t kl; const uint8_t *k;
        bson_iter_binary(&it, &st, &kl, &k);
        bson_t dq = BSON_INITIALIZER, reply;
        bson_append_binary(&dq, "_id", -1, BSON_SUBTYPE_BINARY, k, kl);
        bson_append_document_begin(&dq, "expireAt", -1, &x);
        bson_append_date_time(&x, "$lte", -1, c->now_ms);
        bson_append_document_end(&dq, &x);
        if (!mongoc_collection_delete_one(c->coll, &dq, NULL, &reply, &c->err)) s = mg_fail(c);
        else if (bson_iter_init_find(&it, &reply, "deletedCount") && bson_iter_as_int64(&it) == 1)
            MG_NOTIFY(c, EXPIRED, "expired", (const char *)k, kl);
        bson_destroy(&reply);
        bson_destroy(&dq);
    }
    if (s == FD_OK && mongoc_cursor_error(cur, &c->err)) s = mg_fail(c);
    mongoc_cursor_destroy(cur);
    bson_destroy(&opts);
    bson_destroy(&q);
    return s;
}

static void mg_cron(fd_backend *be, int64_t now_ms)
{
    mg_backend *b = be->state;
    if (!fd_notify_on(FD_NOTIFY_EXPIRED)) return;
    for (mg_req *r = b->ihead; r; r = r->lnext)
        if (r->fn == sweep) return;                 /* the last one is still running */
    mg_req *r = calloc(1, sizeof *r);
    if (!r) return;
    r->argv = calloc(1, sizeof *r->argv);
    if (!r->argv) { free(r); return; }
    r->argv[0].ptr = "sweep";
    r->argv[0].len = 5;
    r->argc = 1;
    r->fn = sweep;
    r->name = "sweep";
    r->proto = 2;
    r->now_ms = now_ms;
    r->deadline_us = fd_mono_us() + b->cfg.backend_timeout_ms * 1000;
    r->nw = 1;
    resp_out_init(&r->out, 2);
    r->lprev = b->itail;
    if (b->itail) b->itail->lnext = r;
    else b->ihead = r;
    b->itail = r;
    b->inflight++;
    r->node1.r = r;
    r->seq = b->seq_next++;
    enqueue(&b->w[0], &r->node1);
}

static int mg_end_turn(fd_backend *be)
{
    be->turn_writes = 0;
    return FD_OK;     /* writes are acknowledged by MongoDB at the write concern */
}

static void mg_keyspace(fd_backend *be, uint64_t *keys, uint64_t *expires)
{
    mg_backend *b = be->state;
    *keys = (uint64_t)atomic_load(&b->keys);
    *expires = (uint64_t)atomic_load(&b->expires);
}

static void mg_info(fd_backend *be, resp_out *lines)
{
    mg_backend *b = be->state;
    char buf[1024], ver[64];
    int emu;
    pthread_mutex_lock(&b->amu);
    snprintf(ver, sizeof ver, "%s", b->server_version[0] ? b->server_version : "unknown");
    emu = b->server_emulator;
    pthread_mutex_unlock(&b->amu);
    int n = snprintf(buf, sizeof buf,
                     "mongodb_database:%s\r\nmongodb_collection:%s\r\nmongodb_workers:%d\r\n"
                     "mongodb_server_version:%s\r\nmongodb_server_emulator:%d\r\n"
                     "mongodb_connected:%d\r\nmongodb_requests:%llu\r\nmongodb_inflight:%lld\r\n"
                     "mongodb_timeouts:%llu\r\nmongodb_error_replies:%llu\r\nmongodb_driver_errors:%llu\r\n"
                     "mongodb_bulk_writes:%llu\r\nmongodb_bulk_grouped_sets:%llu\r\n",
                     b->dbname, MG_COLL, b->nworkers, ver, emu < 0 ? 0 : emu,
                     atomic_load(&b->indexes_ok), b->requests, b->inflight, b->timeouts, b->errors,
                     (unsigned long long)atomic_load(&b->mongo_errors),
                     (unsigned long long)atomic_load(&b->bulk_groups),
                     (unsigned long long)atomic_load(&b->bulk_grouped));
    if (n > 0) resp_out_raw(lines, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* No mongoc_cleanup() here or anywhere: libmongoc runs it once per process
 * (pthread_once), freeing its globals (counters, the SSL state) under every
 * other client. A mongodb backend closing while another is open (an A/B
 * secondary closing as a swap opens the primary) corrupted the heap that
 * way; the process's exit reclaims what it holds. */
static void mg_close(fd_backend *be)
{
    mg_backend *b = be->state;
    if (!b) return;
    atomic_store(&b->stop, 1);
    for (int i = 0; i < b->nworkers; i++) {
        pthread_mutex_lock(&b->w[i].mu);
        pthread_cond_broadcast(&b->w[i].cv);
        pthread_mutex_unlock(&b->w[i].mu);
    }
    /* wake workers waiting at a barrier */
    for (mg_req *r = b->ihead; r; r = r->lnext)
        if (r->nw > 1) {
            pthread_mutex_lock(&r->bmu);
            pthread_cond_broadcast(&r->bcv);
            pthread_mutex_unlock(&r->bmu);
        }
    pthread_mutex_lock(&b->amu);
    pthread_cond_broadcast(&b->acv);
    pthread_mutex_unlock(&b->amu);
    for (int i = 0; i < b->nworkers; i++)
        if (b->w[i].started) pthread_join(b->w[i].th, NULL);
    if (b->admin_started) pthread_join(b->admin, NULL);
    on_async(b->loop, &b->async, 0);          /* what finished */
    /* what never ran: its clients are gone (shutdown) or get an error */
    for (mg_req *r = b->ihead, *next; r; r = next) {
        next = r->lnext;
        if (r->p) fd_pending_error(r->p, FD_E_UNAVAILABLE);
        free_req(r);
    }
    for (int i = 0; i < b->nworkers; i++) {
        pthread_mutex_destroy(&b->w[i].mu);
        pthread_cond_destroy(&b->w[i].cv);
    }
    ev_async_stop(b->loop, &b->async);
    ev_timer_stop(b->loop, &b->tick);
    if (b->pool) mongoc_client_pool_destroy(b->pool);
    if (b->uri) mongoc_uri_destroy(b->uri);
    if (b->wc) mongoc_write_concern_destroy(b->wc);
    free(b->w);
    free(b->aux_val);
    free(b->uri_str);
    free(b->dbname);
    pthread_mutex_destroy(&b->cmu);
    pthread_mutex_destroy(&b->amu);
    for (int k = 0; k < MG_SCANS; k++)
        if (b->scans[k].v) mg_keys_free(b->scans[k].v, b->scans[k].n);
    while (b->held) {
        mg_held *h = b->held;
        b->held = h->next;
        fd_events_free(&h->ev);
        free(h);
    }
    pthread_mutex_destroy(&b->smu);
    pthread_cond_destroy(&b->acv);
    free(b);
    be->state = NULL;
}

/* libmongoc's log lines go to frontdoor's log: errors as warnings, its
 * warnings (a lost connection...) at verbose, the rest dropped. */
static void mongoc_to_fd_log(mongoc_log_level_t level, const char *domain, const char *msg, void *ud)
{
    (void)ud;
    if (level <= MONGOC_LOG_LEVEL_ERROR) fd_log(FD_LOG_WARNING, "libmongoc %s: %s", domain, msg);
    else if (level == MONGOC_LOG_LEVEL_WARNING) fd_log(FD_LOG_VERBOSE, "libmongoc %s: %s", domain, msg);
}

/* mongo-tls-* (mg_settings.h, docs/tls.md): TLS without a URI. Before the pool
 * exists: mongo-tls yes sets the URI's tls=true, and every file named must be
 * readable (errors: a message in err, -1). */
static int mg_tls_uri(mg_backend *b, char *err, size_t errlen) {
    const fd_mongo_settings *ms = &b->ms;
    if (ms->tls == FD_MONGO_YES) mongoc_uri_set_option_as_bool(b->uri, MONGOC_URI_TLS, true);
    const struct { const char *name, *path; } files[] = {
        {"mongo-tls-ca-cert-file", ms->tls_ca_file}, {"mongo-tls-certificate-key-file", ms->tls_pem_file}};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (files[i].path && files[i].path[0] && access(files[i].path, R_OK) != 0) {
            snprintf(err, errlen, "%s %s: %s", files[i].name, files[i].path, strerror(errno));
            return -1;
        }
    return 0;
}

/* After the pool exists, when TLS is on (mongo-tls yes or the URI's tls=true)
 * and a mongo-tls-* directive is set: the pool's mongoc_ssl_opt_t is rebuilt
 * from the URI's tls* options, each overridden by its directive when set
 * (libmongoc replaces the options the URI gave as a whole). */
static void mg_tls_pool(mg_backend *b) {
    const fd_mongo_settings *ms = &b->ms;
    int any = (ms->tls_ca_file && ms->tls_ca_file[0]) || (ms->tls_pem_file && ms->tls_pem_file[0]) ||
              (ms->tls_pem_pwd && ms->tls_pem_pwd[0]) || ms->tls_allow_invalid_hostnames ||
              ms->tls_allow_invalid_certificates;
    if (!any) return;
    if (!mongoc_uri_get_tls(b->uri)) {
        fd_log(FD_LOG_WARNING, "mongodb backend: mongo-tls-* directives are ignored: TLS is off (mongo-tls no, no tls=true in mongo-uri)");
        return;
    }
    const mongoc_uri_t *u = b->uri;
    int insecure = mongoc_uri_get_option_as_bool(u, MONGOC_URI_TLSINSECURE, false);
    mongoc_ssl_opt_t o = *mongoc_ssl_opt_get_default();
    o.ca_file  = ms->tls_ca_file && ms->tls_ca_file[0] ? ms->tls_ca_file : mongoc_uri_get_option_as_utf8(u, MONGOC_URI_TLSCAFILE, NULL);
    o.pem_file = ms->tls_pem_file && ms->tls_pem_file[0] ? ms->tls_pem_file : mongoc_uri_get_option_as_utf8(u, MONGOC_URI_TLSCERTIFICATEKEYFILE, NULL);
    o.pem_pwd  = ms->tls_pem_pwd && ms->tls_pem_pwd[0] ? ms->tls_pem_pwd : mongoc_uri_get_option_as_utf8(u, MONGOC_URI_TLSCERTIFICATEKEYFILEPASSWORD, NULL);
    o.weak_cert_validation = ms->tls_allow_invalid_certificates || insecure ||
                             mongoc_uri_get_option_as_bool(u, MONGOC_URI_TLSALLOWINVALIDCERTIFICATES, false);
    o.allow_invalid_hostname = ms->tls_allow_invalid_hostnames || insecure ||
                               mongoc_uri_get_option_as_bool(u, MONGOC_URI_TLSALLOWINVALIDHOSTNAMES, false);
    mongoc_client_pool_set_ssl_opts(b->pool, &o);   /* copies the strings */
}

static int mg_open(fd_backend *be, const fd_backend_config *cfg, char *err, size_t errlen)
{
    if (!cfg->loop) { snprintf(err, errlen, "no event loop"); return FD_E_INTERNAL; }
    mongoc_log_set_handler(mongoc_to_fd_log, NULL);
    mongoc_init();                       /* once per process (libmongoc runs it once); see mg_close */
    mg_backend *b = calloc(1, sizeof *b);
    if (!b) { snprintf(err, errlen, "out of memory"); return FD_E_NOMEM; }
    b->cfg = *cfg;
    if (cfg->options) b->ms = *(const fd_mongo_settings *)cfg->options;   /* mg_settings.h; else all defaults */
    b->cfg.options = &b->ms;
    b->loop = cfg->loop;
    b->server_emulator = -1;
    pthread_mutex_init(&b->cmu, NULL);
    pthread_mutex_init(&b->amu, NULL);
    pthread_mutex_init(&b->smu, NULL);
    pthread_cond_init(&b->acv, NULL);
    be->state = b;
    const fd_mongo_settings *ms = &b->ms;
    b->uri_str = strdup(ms->uri && ms->uri[0] ? ms->uri : "mongodb://127.0.0.1:27017");
    b->dbname = strdup(ms->database && ms->database[0] ? ms->database : "frontdoor");
    b->ms.uri = b->uri_str;
    long long tmo = cfg->backend_timeout_ms > 0 ? cfg->backend_timeout_ms : 1000;
    b->cfg.backend_timeout_ms = tmo;
    long nproc = sysconf(_SC_NPROCESSORS_ONLN);
    b->nworkers = ms->workers > 0 ? (int)ms->workers : (nproc > 0 ? (int)nproc : 2);

    bson_error_t e;
    b->uri = mongoc_uri_new_with_error(b->uri_str, &e);
    if (!b->uri) {
        snprintf(err, errlen, "bad mongo-uri '%s': %s", b->uri_str, e.message);
        goto fail;
    }
    if (mg_tls_uri(b, err, errlen) != 0) goto fail;
    /* server selection gives up a tenth before the loop's own timer, so
     * that a server it cannot reach is reported with libmongoc's reason
     * (a TLS handshake's certificate error...) rather than tying with that
     * timer's "no reply within backend-timeout" (it did under ASan in CI) */
    if (!mongoc_uri_has_option(b->uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS))
        mongoc_uri_set_option_as_int32(b->uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS,
                                       (int32_t)(tmo > 10 ? tmo - tmo / 10 : tmo));
    if (!mongoc_uri_has_option(b->uri, MONGOC_URI_SOCKETTIMEOUTMS))
        mongoc_uri_set_option_as_int32(b->uri, MONGOC_URI_SOCKETTIMEOUTMS, (int32_t)tmo);
    if (!mongoc_uri_has_option(b->uri, MONGOC_URI_CONNECTTIMEOUTMS))
        mongoc_uri_set_option_as_int32(b->uri, MONGOC_URI_CONNECTTIMEOUTMS, (int32_t)tmo);
    if (!mongoc_uri_has_option(b->uri, MONGOC_URI_HEARTBEATFREQUENCYMS))
        mongoc_uri_set_option_as_int32(b->uri, MONGOC_URI_HEARTBEATFREQUENCYMS, 500);
    if (!mongoc_uri_get_appname(b->uri)) mongoc_uri_set_appname(b->uri, "frontdoor");
    if (!mongoc_uri_has_option(b->uri, MONGOC_URI_MAXPOOLSIZE))
        mongoc_uri_set_option_as_int32(b->uri, MONGOC_URI_MAXPOOLSIZE, b->nworkers + 4);

    /* write concern: the URI's, then the directives that were set */
    b->wc = mongoc_write_concern_copy(mongoc_uri_get_write_concern(b->uri));
    if (ms->w && ms->w[0]) {
        long long wv;
        if (resp_str2ll(ms->w, strlen(ms->w), &wv) == 0) {
            if (wv < 0 || wv > 1000) { snprintf(err, errlen, "mongo-w must be >= 0, 'majority' or a tag"); goto fail; }
            mongoc_write_concern_set_w(b->wc, (int32_t)wv);
        } else if (!strcmp(ms->w, "majority")) {
            mongoc_write_concern_set_w(b->wc, MONGOC_WRITE_CONCERN_W_MAJORITY);
        } else {
            mongoc_write_concern_set_wtag(b->wc, ms->w);
        }
    }
    if (ms->j == FD_MONGO_J_YES || (ms->j == FD_MONGO_J_AUTO && cfg->sync))
        mongoc_write_concern_set_journal(b->wc, true);
    else if (ms->j == FD_MONGO_J_NO)
        mongoc_write_concern_set_journal(b->wc, false);
    if (ms->wtimeout_ms > 0) mongoc_write_concern_set_wtimeout_int64(b->wc, ms->wtimeout_ms);
    if (!mongoc_write_concern_is_valid(b->wc)) {
        snprintf(err, errlen, "invalid write concern (mongo-w %s, mongo-j, mongo-wtimeout)", ms->w ? ms->w : "");
        goto fail;
    }

    b->pool = mongoc_client_pool_new(b->uri);
    if (!b->pool) { snprintf(err, errlen, "cannot create a client pool for '%s'", b->uri_str); goto fail; }
    mongoc_client_pool_set_error_api(b->pool, MONGOC_ERROR_API_VERSION_2);
    mg_tls_pool(b);

    ev_async_init(&b->async, on_async);
    b->async.data = b;
    ev_async_start(b->loop, &b->async);
    double tick = (double)(tmo / 4 < MG_TICK_MS ? (tmo / 4 > 0 ? tmo / 4 : 1) : MG_TICK_MS) / 1000.0;
    ev_timer_init(&b->tick, on_tick, tick, tick);
    b->tick.data = b;
    ev_timer_start(b->loop, &b->tick);

    b->w = calloc((size_t)b->nworkers, sizeof *b->w);
    if (!b->w) { snprintf(err, errlen, "out of memory"); goto fail; }
    for (int i = 0; i < b->nworkers; i++) {
        mg_worker *w = &b->w[i];
        w->b = b;
        w->idx = i;
        pthread_mutex_init(&w->mu, NULL);
        pthread_cond_init(&w->cv, NULL);
    }
    for (int i = 0; i < b->nworkers; i++) {
        if (pthread_create(&b->w[i].th, NULL, worker_main, &b->w[i]) != 0) {
            snprintf(err, errlen, "cannot start worker threads: %s", strerror(errno));
            goto fail;
        }
        b->w[i].started = 1;
    }
    if (pthread_create(&b->admin, NULL, admin_main, b) == 0) b->admin_started = 1;
    fd_log(FD_LOG_NOTICE, "mongodb backend: %s, database %s, %d workers, timeout %lld ms%s",
           b->uri_str, b->dbname, b->nworkers, tmo,
           mongoc_write_concern_get_journal(b->wc) ? ", journaled writes (j:true)" : "");
    return FD_OK;
fail:
    if (ev_is_active(&b->async)) {       /* watchers and maybe threads: close undoes them */
        if (!b->w) b->nworkers = 0;
        mg_close(be);
        return FD_E_UNAVAILABLE;
    }
    if (b->uri) mongoc_uri_destroy(b->uri);
    if (b->wc) mongoc_write_concern_destroy(b->wc);
    free(b->uri_str);
    free(b->dbname);
    free(b->w);
    free(b);
    be->state = NULL;
    return FD_E_UNAVAILABLE;
}

/* mongodb's directives (../option.h) */
static const char *const mg_j_names[] = {"auto", "yes", "no", NULL};   /* = FD_MONGO_J_* */
static const char *const mg_yesno_names[] = {"no", "yes", NULL};       /* = FD_MONGO_NO/YES */
#define MGO(f) offsetof(fd_mongo_settings, f)
static const fd_option mg_rows[] = {
    {"mongo-big-threshold", FD_OPT_INT, MGO(big_threshold), "1000", 1, 1LL << 30, NULL, 0},   /* mg_big.c */
    {"mongo-database", FD_OPT_STR, MGO(database), "frontdoor", 0, 0, NULL, 0},
    {"mongo-j", FD_OPT_ENUM, MGO(j), "auto", 0, 0, mg_j_names, 0},
    {"mongo-tls", FD_OPT_ENUM, MGO(tls), "no", 0, 0, mg_yesno_names, 0},
    {"mongo-tls-allow-invalid-certificates", FD_OPT_ENUM, MGO(tls_allow_invalid_certificates), "no", 0, 0, mg_yesno_names, 0},
    {"mongo-tls-allow-invalid-hostnames", FD_OPT_ENUM, MGO(tls_allow_invalid_hostnames), "no", 0, 0, mg_yesno_names, 0},
    {"mongo-tls-ca-cert-file", FD_OPT_STR, MGO(tls_ca_file), "", 0, 0, NULL, 0},
    {"mongo-tls-certificate-key-file", FD_OPT_STR, MGO(tls_pem_file), "", 0, 0, NULL, 0},
    {"mongo-tls-certificate-key-file-password", FD_OPT_STR, MGO(tls_pem_pwd), "", 0, 0, NULL, FD_OPT_SECRET},
    {"mongo-uri", FD_OPT_STR, MGO(uri), "mongodb://127.0.0.1:27017", 0, 0, NULL, FD_OPT_SECRET},   /* may hold a password */
    {"mongo-w", FD_OPT_STR, MGO(w), "", 0, 0, NULL, 0},
    {"mongo-workers", FD_OPT_INT, MGO(workers), "0", 0, 1024, NULL, 0},
    {"mongo-wtimeout", FD_OPT_INT, MGO(wtimeout_ms), "0", 0, 3600000, NULL, 0},
};
const fd_option_set fd_mongo_options = FD_OPTION_SET("mongodb", mg_rows, fd_mongo_settings);
_Static_assert(sizeof(fd_mongo_settings) <= FD_OPTION_SET_BYTES, "mongodb settings fit a set");

const fd_backend_ops fd_mongodb_backend = {
    .name     = "mongodb",
    .options  = &fd_mongo_options,
    .async    = 1,
    .open     = mg_open,
    .close    = mg_close,
    .submit   = mg_submit,
    .end_turn = mg_end_turn,
    .keyspace = mg_keyspace,
    .cron     = mg_cron,
    .info     = mg_info,
    .support  = mg_support,
    .aux_get  = mg_aux_get,
    .aux_put  = mg_aux_put,
    /* keyspace events raised by the handlers (MG_NOTIFY), delivered with the
     * replies (expired: the cron sweep); not yet keymiss or new */
    .notify   = FD_NOTIFY_GENERIC | FD_NOTIFY_STRING | FD_NOTIFY_LIST | FD_NOTIFY_HASH | FD_NOTIFY_SET |
                FD_NOTIFY_ZSET | FD_NOTIFY_STREAM | FD_NOTIFY_EXPIRED | FD_NOTIFY_EVICTED | FD_NOTIFY_MODULE |
                FD_NOTIFY_KEY_MISS,
};
