/* fdl_hist.h — fdload's latency histogram: log-linear, the layout of
 * frontdoor's px_hist (proxy/backends.h) with 32 sub-buckets per power of
 * two instead of 16 (resolution ~3 %), 0 ns .. 2^41 ns (~36 min; larger
 * values land in the last bucket, max_ns stays exact). Fixed size, no
 * allocation: add is O(1), a quantile is one pass over the buckets. */
#ifndef FDL_HIST_H
#define FDL_HIST_H

#include <stdint.h>

#define FDL_HIST_SUB_BITS 5
#define FDL_HIST_SUB (1u << FDL_HIST_SUB_BITS)
#define FDL_HIST_BUCKETS (38u * FDL_HIST_SUB)

typedef struct fdl_hist {
    uint64_t count, sum_ns, max_ns, min_ns;
    uint64_t b[FDL_HIST_BUCKETS];
} fdl_hist;

void     fdl_hist_reset(fdl_hist *h);
void     fdl_hist_add(fdl_hist *h, uint64_t ns);
/* h += o */
void     fdl_hist_merge(fdl_hist *h, const fdl_hist *o);
/* The value at quantile q (0..1), ns: the upper edge of its bucket, capped
 * at max_ns. 0 for an empty histogram. */
uint64_t fdl_hist_quantile(const fdl_hist *h, double q);
/* Bucket i's largest value (ns). */
uint64_t fdl_hist_upper(unsigned i);
/* Bucket index of a value. */
unsigned fdl_hist_index(uint64_t ns);

#endif
