/* notify.c — keyspace notifications: publish the events the backends
 * raise (see notify.h). */
#include "notify.h"
#include "config.h"
#include "pubsub.h"
#include "../storage/host.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

_Static_assert((int)PX_NOTIFY_KEYSPACE == (int)FD_NOTIFY_KEYSPACE && (int)PX_NOTIFY_KEYEVENT == (int)FD_NOTIFY_KEYEVENT &&
               (int)PX_NOTIFY_GENERIC == (int)FD_NOTIFY_GENERIC && (int)PX_NOTIFY_EXPIRED == (int)FD_NOTIFY_EXPIRED &&
               (int)PX_NOTIFY_STREAM == (int)FD_NOTIFY_STREAM && (int)PX_NOTIFY_KEY_MISS == (int)FD_NOTIFY_KEY_MISS &&
               (int)PX_NOTIFY_NEW == (int)FD_NOTIFY_NEW, "the directive's bits are storage's event classes");

/* Longest channel built on the stack; a longer key takes the heap. */
#define CH_STACK 512

static void publish(const char *prefix, size_t plen, const char *name, size_t nlen, const char *msg, size_t mlen) {
    char stack[CH_STACK], *ch = plen + nlen <= sizeof stack ? stack : malloc(plen + nlen);
    if (!ch) return;                      /* out of memory: the event is lost (as a dropped one) */
    memcpy(ch, prefix, plen);
    memcpy(ch + plen, name, nlen);
    px_pubsub_publish_local(ch, plen + nlen, msg, mlen);
    if (ch != stack) free(ch);
}

/* Redis's notifyKeyspaceEvent: keyspace channel first, then keyevent
 * (frontdoor has database 0 only). */
static void sink(int cls, const char *event, size_t elen, const char *key, size_t klen) {
    int flags = atomic_load_explicit(&fd_notify_classes, memory_order_relaxed);
    if (!(flags & cls)) return;           /* the directive changed since it was raised */
    static const char ks[] = "__keyspace@0__:", ke[] = "__keyevent@0__:";
    if (flags & FD_NOTIFY_KEYSPACE) publish(ks, sizeof ks - 1, key, klen, event, elen);
    if (flags & FD_NOTIFY_KEYEVENT) publish(ke, sizeof ke - 1, event, elen, key, klen);
}

void px_notify_hooks(void) {
    fd_notify_set_sink(sink);
    fd_notify_set_classes((int)px_cfg.notify_keyspace_events);
}
