/* redis_cluster_int.h — what the redis-cluster backend's files share
 * (private to storage/redis_cluster*.c): its bounds, its state (nodes, the
 * slot map, requests in flight) and the functions one file calls in
 * another (prefix cl_). Layout: redis_cluster.c (state, nodes, the ops:
 * open, close, cron, INFO, pub/sub relays), redis_cluster_map.c (hash
 * slots, CLUSTER SLOTS and the slot map's refresh), redis_cluster_route.c
 * (replies and redirections, sending, submit: routing by slot, multi-key
 * and keyless commands). Loop thread only. */
#ifndef FRONTDOOR_STORAGE_REDIS_CLUSTER_INT_H
#define FRONTDOOR_STORAGE_REDIS_CLUSTER_INT_H

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "backend.h"
#include "cmdargs.h"
#include "redis_conn.h"
#include "redis_settings.h"
#include "host.h"

#define CL_SLOTS             16384

#define CL_MAX_REDIRECTS     5

#define CL_REFRESH_MIN_MS    100

#define CL_REFRESH_DOWN_MS   200

#define CL_REFRESH_PERIOD_MS 5000

#define CL_TRYAGAIN_MS       25

#define CL_SCAN_BITS         10      /* node index in the low bits of a SCAN cursor */

typedef struct cl_node {
    rc_addr    addr;
    rc_conn   *conns;
    int        n;
    int        seed;            /* from redis-cluster-seeds: kept for map refreshes */
    int        nslots;          /* slots the map gives it */
    int        master_idx;      /* index in b->masters, -1 if not there */
    uint64_t   forwarded, moved, asked;
    rc_conn   *srelay;          /* pub/sub: this master's shard channels (SSUBSCRIBE) */
    rc_conn   *krelay;          /* pub/sub: this master's keyspace events (ks_relays) */
    struct cl_node *next;
} cl_node;

typedef struct cl_part cl_part;

/* A keyless fan-out that came before the first slot map: sent when it comes. */
typedef struct cl_deferred {
    fd_pending *p;
    int        merge, proto;
    uint64_t   client_id;
    char      *cmd;
    size_t     cmdlen;
    int64_t    deadline;
    struct cl_deferred *next;
} cl_deferred;

typedef struct cl_backend {
    rc_shared  sh;
    int        pool;
    char      *seeds;
    cl_node   *nodes;
    cl_node   *slots[CL_SLOTS];
    cl_node  **masters;         /* the map's masters by lowest slot (fan-out, SCAN) */
    int        nmasters;
    int        map_ok;
    int        refreshing;
    int        need_refresh;
    int        refresh_rr;      /* where the next refresh starts looking */
    cl_node   *refresh_node;
    int64_t    last_refresh, last_map;
    char       maperr[600];
    cl_part   *parked, *parked_tail;
    cl_deferred *deferred, *deferred_tail;
    int        slot_group[CL_SLOTS];   /* scratch for splitting: slot -> group, -1 */
    ev_timer   timer;
    int        closing;
    rc_conn   *relay;           /* pub/sub: channels and patterns (cluster-wide), at one master */
    fd_backend *fb;
    uint64_t   rng;             /* RANDOMKEY's choice of master (xorshift64*) */
    /* statistics */
    uint64_t   forwarded, split, fanout, moved, asked, tryagain, crossslot, refused, failed;
    uint64_t   refreshes, refresh_failures;
} cl_backend;

enum { M_SINGLE, M_MGET, M_OK, M_SUM, M_KEYS, M_FLUSH, M_RANDOM, M_SCAN };

typedef struct cl_req {
    cl_backend *b;
    fd_pending *p;
    int        merge;
    int        proto;
    uint64_t   client_id;
    int        nparts, left;
    int        nkeys;           /* M_MGET: keys of the client's command */
    int       *order;           /* M_MGET: client key index of each part's keys, part by part */
    int        scan_idx;        /* M_SCAN: the master's index */
    cl_part   *parts;
} cl_req;

struct cl_part {
    cl_req    *r;
    char      *cmd;             /* the bytes to send (kept for redirections) */
    size_t     cmdlen;
    int        slot;            /* -1: to `node` (fan-out) */
    cl_node   *node;
    cl_node   *ask;             /* send ASKING + the command here, once */
    int        redirects;
    int        k0, nk;          /* M_MGET: its keys in r->order */
    int64_t    wake, deadline;  /* parked */
    char      *reply;           /* merged kinds: the reply, kept until all are in */
    size_t     replylen;
    int        done;
    cl_part   *park_next;
};

/* storage/redis_cluster.c */
cl_node *cl_node_get(cl_backend *b, const char *name, int numeric, char *err, size_t errlen);
int cl_any_reachable(const cl_backend *b);
int cl_node_up(const cl_node *n);
void cl_ks_relays(cl_backend *b);

/* storage/redis_cluster_map.c */
int cl_key_slot(const char *k, size_t n);
void cl_crc16_init(void);
void cl_on_timer(struct ev_loop *loop, ev_timer *w, int revents);
void cl_refresh_start(cl_backend *b);

/* storage/redis_cluster_route.c */
int cl_is_error(const char *d, size_t n);
int cl_submit(fd_backend *fb, fd_request *r);
void cl_deferred_fail(cl_backend *b, int64_t now);
void cl_deferred_run(cl_backend *b);
void cl_park(cl_part *pt, int64_t wake);
void cl_part_fail(cl_part *pt, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cl_part_send(cl_part *pt);
void cl_set_slot(cl_backend *b, int slot, cl_node *n);

#endif
