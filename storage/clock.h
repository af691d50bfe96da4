/* clock.h — the one monotonic clock (CLOCK_MONOTONIC) for every layer:
 * latencies, deadlines, budgets. Wall-clock time for expiry comes from the
 * proxy (fd_request.now_ms), never from here. */
#ifndef FRONTDOOR_CLOCK_H
#define FRONTDOOR_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t fd_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static inline int64_t fd_mono_us(void) { return (int64_t)(fd_mono_ns() / 1000u); }
static inline int64_t fd_mono_ms(void) { return (int64_t)(fd_mono_ns() / 1000000u); }

/* Milliseconds to seconds rounded half up, as Redis 7.0's TTL and EXPIRETIME
 * ((ms + 500) / 1000), without that sum's overflow for a deadline near
 * LLONG_MAX (PEXPIREAT k 9223372036854775807: EXPIRETIME is
 * 9223372036854776 there too). */
static inline long long fd_ms_to_s_rounded(long long ms) {
    if (ms < 0) return (ms + 500) / 1000;
    return ms / 1000 + (ms % 1000 >= 500);
}

#endif
