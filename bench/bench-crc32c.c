/*
 * CRC32c throughput: uiw_crc32c against a byte-table loop and against ISA-L's
 * crc32_iscsi called directly, side by side in one run, at 64 B, 1 KiB, 64 KiB and 1 MiB.
 * Each figure is the median of 15 runs; each run loops over the buffer for a fixed amount
 * of data, the runs of the three interleaved; the ratios are medians of the per-run ratios
 * (uiw and its baseline measured back to back), which keeps them steady on a busy machine. Target:
 * uiw_crc32c >= 0.9x ISA-L from 1 KiB up.
 *
 * Built with ISA-L, uiw_crc32c is ISA-L itself from 128 bytes up, and that ratio says
 * nothing about a build without it: a second table measures each of the project's own
 * implementations (SSE4.2, which a build without ISA-L uses, the slice-by-8 table and the
 * bytewise loop) the same way, against ISA-L and against the byte table.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uiw/wire.h>

#include "bench_stats.h"
#include "wire/mpa_crc32c.h"

#if defined(UIW_HAVE_ISAL) && UIW_HAVE_ISAL
#include <isa-l/crc.h>
#endif

#define RUNS 15

static uint32_t table[256];

static void table_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
        table[i] = c;
    }
}

static uint32_t crc_table(uint32_t seed, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    uint32_t c = ~seed;
    while (len--)
        c = (c >> 8) ^ table[(c ^ *p++) & 0xFF];
    return ~c;
}

#if defined(UIW_HAVE_ISAL) && UIW_HAVE_ISAL
static uint32_t crc_isal(uint32_t seed, const void *buf, size_t len)
{
    return ~crc32_iscsi((unsigned char *)(uintptr_t)buf, (int)len, ~seed);
}
#endif

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile uint32_t sink;

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

/* One timed pass: GB/s of fn over buf[0..len) for about `bytes` bytes. */
static double pass(crc_fn fn, const uint8_t *buf, size_t len, size_t bytes)
{
    size_t iters = bytes / len ? bytes / len : 1;
    uint32_t c = 0;
    double t0 = now();
    for (size_t i = 0; i < iters; i++)
        c = fn(c, buf, len);
    double t = now() - t0;
    sink = c;
    return (double)(iters * len) / (t > 0 ? t : 1e-9) / 1e9;
}

/* Medians of RUNS runs of each of the n (<= 3) functions, the runs interleaved (uiw,
 * table, ISA-L, uiw, ...) so that clock and load changes hit them alike; ratio[k] is the
 * median of fns[0]'s speed over fns[k]'s, run by run. */
static void measure(const crc_fn *fns, const size_t *bytes, int n, const uint8_t *buf, size_t len,
                    double *med, double *ratio)
{
    double r[3][RUNS], q[3][RUNS];
    for (int k = 0; k < n; k++)
        pass(fns[k], buf, len, bytes[k] / 8); /* warm up */
    for (int run = 0; run < RUNS; run++)
        for (int k = 0; k < n; k++)
            r[k][run] = pass(fns[k], buf, len, bytes[k]);
    for (int k = 0; k < n; k++)
        for (int run = 0; run < RUNS; run++)
            q[k][run] = r[0][run] / r[k][run];
    for (int k = 0; k < n; k++) {
        qsort(r[k], RUNS, sizeof r[k][0], bench_cmp_double);
        qsort(q[k], RUNS, sizeof q[k][0], bench_cmp_double);
        med[k] = r[k][RUNS / 2];
        ratio[k] = q[k][RUNS / 2];
    }
}

/* The project's own implementations (all but "isa-l"), each against ISA-L (when built
 * with it) and the byte table, at every size. */
static void own_impls(const uint8_t *buf, const size_t *sizes, size_t nsizes)
{
    const struct uiw__crc32c_impl *impls;
    size_t n = uiw__crc32c_impls(&impls);
    printf("\nwithout ISA-L: the project's implementations (a build without ISA-L uses the "
           "first), median of %d runs\n",
           RUNS);
    printf("%10s %10s %12s %12s %10s\n", "impl", "size", "GB/s", "/isa-l", "/table");
    for (size_t k = 0; k < n; k++) {
        if (strcmp(impls[k].name, "isa-l") == 0)
            continue;
        if (impls[k].fn(0, "123456789", 9) != 0xE3069283u) {
            printf("%10s: WRONG CRC\n", impls[k].name);
            continue;
        }
        for (size_t s = 0; s < nsizes; s++) {
            size_t len = sizes[s];
            crc_fn fns[3] = {impls[k].fn, crc_table, NULL};
            size_t bytes[3] = {(size_t)16 << 20, (size_t)2 << 20, (size_t)16 << 20};
            int m = 2;
#if defined(UIW_HAVE_ISAL) && UIW_HAVE_ISAL
            fns[m++] = crc_isal;
#endif
            if (strcmp(impls[k].name, "bytewise") == 0)
                bytes[0] = (size_t)2 << 20;
            double med[3] = {0, 0, 0}, ratio[3] = {0, 0, 0};
            measure(fns, bytes, m, buf, len, med, ratio);
            char vs_isal[16] = "-";
            if (m == 3)
                snprintf(vs_isal, sizeof vs_isal, "%.2f", ratio[2]);
            printf("%10s %10zu %12.2f %12s %10.1f\n", impls[k].name, len, med[0], vs_isal,
                   ratio[1]);
        }
    }
}

int main(void)
{
    static const size_t sizes[] = {64, 1024, 64 * 1024, 1024 * 1024};
    uint8_t *buf = malloc(1024 * 1024);
    if (!buf)
        return 1;
    for (size_t i = 0; i < 1024 * 1024; i++)
        buf[i] = (uint8_t)(i * 2654435761u >> 13);
    table_init();
    if (crc_table(0, "123456789", 9) != 0xE3069283u || uiw_crc32c(0, "123456789", 9) != 0xE3069283u)
        return 1;

    printf("bench-crc32c: uiw_crc32c (%s) vs byte table vs ISA-L crc32_iscsi, median of %d runs\n",
           uiw_crc32c_impl(), RUNS);
    printf("%10s %12s %12s %12s %10s %10s\n", "size", "uiw GB/s", "table GB/s", "isa-l GB/s",
           "uiw/isa-l", "uiw/table");
    int met = 1, have_isal = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t len = sizes[s];
        crc_fn fns[3] = {uiw_crc32c, crc_table, NULL};
        size_t bytes[3] = {(size_t)16 << 20, (size_t)2 << 20, (size_t)16 << 20};
        int n = 2;
#if defined(UIW_HAVE_ISAL) && UIW_HAVE_ISAL
        have_isal = 1;
        fns[n++] = crc_isal;
#endif
        double med[3] = {0, 0, 0}, ratio[3] = {0, 0, 0};
        measure(fns, bytes, n, buf, len, med, ratio);
        double u = med[0], t = med[1], i = med[2];
        if (have_isal) {
            printf("%10zu %12.2f %12.2f %12.2f %10.2f %10.1f\n", len, u, t, i, ratio[2], ratio[1]);
            if (len >= 1024 && ratio[2] < 0.9)
                met = 0;
        } else {
            printf("%10zu %12.2f %12.2f %12s %10s %10.1f\n", len, u, t, "-", "-", ratio[1]);
        }
    }
    if (have_isal)
        printf("target uiw_crc32c >= 0.9x ISA-L from 1 KiB up: %s\n", met ? "MET" : "NOT MET");
    else
        printf("target uiw_crc32c >= 0.9x ISA-L from 1 KiB up: not measurable (built without "
               "ISA-L)\n");
    own_impls(buf, sizes, sizeof sizes / sizeof sizes[0]);
    free(buf);
    return 0;
}
