/* notify.h — keyspace notifications (notify-keyspace-events, docs/
 * notifications.md). Module prefix: px_notify_.
 *
 * The embedded backends and mongodb raise Redis 7.0's events inside their
 * command implementations (storage/host.h: FD_NOTIFY) and deliver them
 * here once their work is committed; this feature publishes each one to
 * frontdoor's own subscribers as Redis's notifyKeyspaceEvent does:
 * `__keyspace@0__:<key>` with the event's name (class K), then
 * `__keyevent@0__:<event>` with the key (class E). Loop thread only.
 */
#ifndef FRONTDOOR_NOTIFY_H
#define FRONTDOOR_NOTIFY_H

/* Register the feature (main.c's px_features[]): the storage layer's sink. */
void px_notify_hooks(void);

#endif
