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

#endif
