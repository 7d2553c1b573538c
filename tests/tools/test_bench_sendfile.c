/* bench-sendfile, a short run: it moves data both ways it compares (the file region's
 * sends counted as such, or it fails), every figure is positive, and each ratio printed
 * is the quotient of the medians it names, file region over pread + Write. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "test.h"

/* The number after "key": within the object that starts at the first `in` of s. */
static double num_in(const char *s, const char *in, const char *key)
{
    const char *o = s;
    if (in && !(o = strstr(s, in)))
        uiw_test_fail(__FILE__, __LINE__, "no %s in:\n%s", in, s);
    char k[64];
    snprintf(k, sizeof(k), "\"%s\":", key);
    const char *p = strstr(o, k);
    if (!p)
        uiw_test_fail(__FILE__, __LINE__, "no %s in:\n%s", key, o);
    return strtod(p + strlen(k), NULL);
}

static void quotient(const char *what, double ratio, double num, double den)
{
    CHECK(num > 0 && den > 0);
    double q = num / den;
    if (ratio < q * 0.99 - 0.002 || ratio > q * 1.01 + 0.002)
        uiw_test_fail(__FILE__, __LINE__, "%s: ratio %.4f, figures %.4f / %.4f = %.4f", what, ratio,
                      num, den, q);
}

TEST(bench_sendfile_ratios)
{
#ifndef UIW_BENCH_SENDFILE
    SKIP("built without the benchmarks (UIW_BENCH=OFF)");
#define UIW_BENCH_SENDFILE ""
#endif
    struct tool_run r;
    tool_run(UIW_BENCH_SENDFILE,
             (const char *[]){"bench-sendfile", "--json", "-r", "3", "-b", "256K", "-s", "1M", "-n",
                              "8M", NULL},
             "", 0, 120, &r);
    if (r.status != 0)
        uiw_test_fail(__FILE__, __LINE__, "bench-sendfile: %d\n%s%s", r.status, r.out, r.err);
    CHECK(
        strstr(r.out, "{\"bench\":\"sendfile\",\"rounds\":3,\"block\":262144,\"bytes\":8388608,") ==
        r.out);
    double pc = num_in(r.out, "\"pread\":", "cpu_s_per_gib"),
           ps = num_in(r.out, "\"pread\":", "send_cpu_s_per_gib"),
           pr = num_in(r.out, "\"pread\":", "gbytes_per_sec"),
           fc = num_in(r.out, "\"file\":", "cpu_s_per_gib"),
           fs = num_in(r.out, "\"file\":", "send_cpu_s_per_gib"),
           fr = num_in(r.out, "\"file\":", "gbytes_per_sec");
    CHECK(ps > 0 && ps <= pc && fs > 0 && fs <= fc);
    quotient("CPU per GiB", num_in(r.out, NULL, "ratio_cpu"), fc, pc);
    quotient("the sender's CPU per GiB", num_in(r.out, NULL, "ratio_send_cpu"), fs, ps);
    quotient("GB/s", num_in(r.out, NULL, "ratio_rate"), fr, pr);
    tool_run_free(&r);
}
