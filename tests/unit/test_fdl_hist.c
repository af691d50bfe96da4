/* fdload's latency histogram (bench/fdload/fdl_hist.c): every value falls in
 * the bucket whose upper edge is the first at or above it, buckets are
 * contiguous, a quantile is within the bucket resolution (1/32) of the exact
 * order statistic, merge adds, max/min/count/sum are exact. The source is
 * compiled in here: fdload is its own executable, not part of fd_proxy. */
#include "test.h"
#include "../../bench/fdload/fdl_hist.c"

#include <stdlib.h>

static int cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(void) {
    /* buckets: contiguous, monotonic, index(upper(i)) == i */
    int contiguous = 1, roundtrip = 1;
    for (unsigned i = 0; i < FDL_HIST_BUCKETS - 1; i++) {
        /* the value after the previous bucket's upper edge starts this one */
        if (i && (fdl_hist_index(fdl_hist_upper(i - 1) + 1) != i || fdl_hist_upper(i) <= fdl_hist_upper(i - 1))) contiguous = 0;
        if (fdl_hist_index(fdl_hist_upper(i)) != i) roundtrip = 0;
    }
    CHECK(contiguous);
    CHECK(roundtrip);
    CHECK(fdl_hist_index(0) == 0 && fdl_hist_index(31) == 31 && fdl_hist_index(32) == 32);
    CHECK(fdl_hist_index(~0ULL) == FDL_HIST_BUCKETS - 1);
    /* relative width of a bucket: at most 1/32 of its lower edge */
    int narrow = 1;
    for (unsigned i = FDL_HIST_SUB + 1; i < FDL_HIST_BUCKETS - 1; i++) {
        uint64_t lo = fdl_hist_upper(i - 1) + 1, hi = fdl_hist_upper(i);
        if ((double)(hi - lo + 1) > (double)lo / 32.0 + 1) narrow = 0;
    }
    CHECK(narrow);

    /* quantiles against the exact order statistics of random log-spread data */
    enum { N = 100000 };
    static uint64_t v[N];
    static fdl_hist h, a, b;
    fdl_hist_reset(&h); fdl_hist_reset(&a); fdl_hist_reset(&b);
    uint64_t x = 88172645463325252ULL, sum = 0, mx = 0, mn = ~0ULL;
    for (int i = 0; i < N; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        v[i] = (x % 1000) << (x >> 60);          /* 0 .. ~32 ms, across powers of two */
        fdl_hist_add(&h, v[i]);
        fdl_hist_add(i % 2 ? &a : &b, v[i]);
        sum += v[i];
        if (v[i] > mx) mx = v[i];
        if (v[i] < mn) mn = v[i];
    }
    qsort(v, N, sizeof v[0], cmp);
    const double qs[] = {0.5, 0.9, 0.99, 0.999, 0.9999};
    int close = 1;
    for (int k = 0; k < 5; k++) {
        uint64_t exact = v[(size_t)(qs[k] * N + 0.999999) - 1], got = fdl_hist_quantile(&h, qs[k]);
        if (got < exact || (double)got > (double)exact * (1 + 1.0 / 32) + 1) {
            close = 0;
            fprintf(stderr, "q %.4f: exact %llu got %llu\n", qs[k], (unsigned long long)exact, (unsigned long long)got);
        }
    }
    CHECK(close);
    CHECK(h.count == N && h.sum_ns == sum && h.max_ns == mx && h.min_ns == mn);
    CHECK(fdl_hist_quantile(&h, 1.0) == mx);
    fdl_hist_merge(&a, &b);
    CHECK(a.count == h.count && a.sum_ns == h.sum_ns && a.max_ns == h.max_ns && a.min_ns == h.min_ns);
    CHECK(memcmp(a.b, h.b, sizeof a.b) == 0);
    fdl_hist_reset(&b);
    CHECK(fdl_hist_quantile(&b, 0.99) == 0);
    return TEST_DONE();
}
