/* fdl_hist.c — see fdl_hist.h. */
#include "fdl_hist.h"
#include <string.h>

unsigned fdl_hist_index(uint64_t ns) {
    if (ns < FDL_HIST_SUB) return (unsigned)ns;
    unsigned msb = 63u - (unsigned)__builtin_clzll(ns);
    unsigned sub = (unsigned)(ns >> (msb - FDL_HIST_SUB_BITS)) & (FDL_HIST_SUB - 1);
    unsigned i = (msb - FDL_HIST_SUB_BITS + 1) * FDL_HIST_SUB + sub;
    return i < FDL_HIST_BUCKETS ? i : FDL_HIST_BUCKETS - 1;
}

uint64_t fdl_hist_upper(unsigned i) {
    if (i < FDL_HIST_SUB) return i;
    unsigned msb = i / FDL_HIST_SUB + FDL_HIST_SUB_BITS - 1, sub = i % FDL_HIST_SUB;
    return ((uint64_t)(FDL_HIST_SUB + sub + 1) << (msb - FDL_HIST_SUB_BITS)) - 1;
}

void fdl_hist_reset(fdl_hist *h) { memset(h, 0, sizeof *h); }

void fdl_hist_add(fdl_hist *h, uint64_t ns) {
    if (!h->count || ns < h->min_ns) h->min_ns = ns;
    h->count++;
    h->sum_ns += ns;
    if (ns > h->max_ns) h->max_ns = ns;
    h->b[fdl_hist_index(ns)]++;
}

void fdl_hist_merge(fdl_hist *h, const fdl_hist *o) {
    if (!o->count) return;
    if (!h->count || o->min_ns < h->min_ns) h->min_ns = o->min_ns;
    h->count += o->count;
    h->sum_ns += o->sum_ns;
    if (o->max_ns > h->max_ns) h->max_ns = o->max_ns;
    for (unsigned i = 0; i < FDL_HIST_BUCKETS; i++) h->b[i] += o->b[i];
}

uint64_t fdl_hist_quantile(const fdl_hist *h, double q) {
    if (!h->count) return 0;
    uint64_t rank = (uint64_t)(q * (double)h->count + 0.999999), seen = 0;
    if (rank < 1) rank = 1;
    if (rank > h->count) rank = h->count;
    for (unsigned i = 0; i < FDL_HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank) {
            uint64_t u = fdl_hist_upper(i);
            return u < h->max_ns ? u : h->max_ns;
        }
    }
    return h->max_ns;
}
