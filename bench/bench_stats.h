/* The benchmarks' statistics: medians (each figure is the median of repeated runs). */
#ifndef UIW_BENCH_STATS_H
#define UIW_BENCH_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static inline int bench_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (n >= 1; v is sorted in place): the mean of the middle two for
 * an even n. */
static inline double bench_median(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The upper median of v[0..n) (n >= 1; sorted in place). */
static inline uint64_t bench_median_u64(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof(*v), bench_cmp_u64);
    return v[n / 2];
}

#endif
