/* rpcrdma-bench --loopback: every test over RPC-over-RDMA (both versions) against libtirpc's
 * TCP and raw TCP, the JSON lines the issue names, the ratios; usage errors. The figures
 * themselves are the benchmark's business, not a test's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "test.h"

#define BENCH UIW_BINARY_DIR "/tools/rpcrdma-bench"

static void bench(const char *t, const char *vers, const char *inflight, struct tool_run *r)
{
    tool_run(BENCH,
             (const char *[]){"rpcrdma-bench", "--loopback", "--compare-tcp", "--json", "-t", t,
                              "-s", "1M", "-D", "0.2", "-r", "2", "--vers", vers, "--inflight",
                              inflight, NULL},
             "", 0, 120, r);
    if (r->status != 0)
        uiw_test_fail(__FILE__, __LINE__, "rpcrdma-bench -t %s: %d\n%s%s", t, r->status, r->out,
                      r->err);
}

/* A JSON line of the bench's output that starts with `head`: its value of `key`. */
static double field(const char *out, const char *head, const char *key)
{
    const char *l = strstr(out, head);
    if (!l)
        uiw_test_fail(__FILE__, __LINE__, "no line %s in:\n%s", head, out);
    char k[64];
    snprintf(k, sizeof(k), "\"%s\":", key);
    const char *p = strstr(l, k), *eol = strchr(l, '\n');
    CHECK(p && (!eol || p < eol));
    return strtod(p + strlen(k), NULL);
}

TEST(rpcrdma_bench_loopback)
{
    struct tool_run r;
    bench("read", "2", "1", &r);
    const char *h = "{\"test\":\"read\",\"size\":1048576,\"transport\":\"rdma-v2\",\"inflight\":1,";
    CHECK(field(r.out, h, "calls_per_sec") > 0);
    CHECK(field(r.out, h, "gbytes_per_sec") > 0);
    CHECK(field(r.out, h, "p50_us") > 0);
    CHECK(field(r.out, h, "p99_us") >= field(r.out, h, "p50_us"));
    h = "{\"test\":\"read\",\"size\":1048576,\"transport\":\"tcp\",\"inflight\":1,";
    CHECK(field(r.out, h, "calls_per_sec") > 0);
    h = "{\"test\":\"read\",\"size\":1048576,\"transport\":\"raw-tcp\",\"inflight\":1,";
    CHECK(field(r.out, h, "gbytes_per_sec") > 0);
    CHECK(field(r.out,
                "{\"test\":\"read\",\"size\":1048576,\"ratio\":\"rate\",\"inflight\":1,"
                "\"vs\":\"tcp\",",
                "value") > 0);
    CHECK(field(r.out,
                "{\"test\":\"read\",\"size\":1048576,\"ratio\":\"bandwidth\",\"inflight\":1,"
                "\"vs\":\"raw-tcp\",",
                "value") > 0);
    tool_run_free(&r);
    bench("write", "1", "4", &r);
    h = "{\"test\":\"write\",\"size\":1048576,\"transport\":\"rdma-v1\",\"inflight\":4,";
    CHECK(field(r.out, h, "gbytes_per_sec") > 0);
    tool_run_free(&r);
    bench("null", "2", "16", &r);
    h = "{\"test\":\"null\",\"size\":0,\"transport\":\"rdma-v2\",\"inflight\":16,";
    CHECK(field(r.out, h, "calls_per_sec") > 0);
    CHECK(field(r.out, "{\"test\":\"null\",\"size\":0,\"ratio\":\"rate\",\"inflight\":16,",
                "value") > 0);
    tool_run_free(&r);
    bench("null", "2", "1", &r);
    CHECK(field(r.out, "{\"test\":\"null\",\"size\":0,\"ratio\":\"round_trip\",\"inflight\":1,",
                "value") > 0);
    tool_run_free(&r);
}

TEST(rpcrdma_bench_usage)
{
    static const char *const bad[][4] = {{"-t", "nope", NULL},
                                         {"--vers", "3", NULL},
                                         {"-s", "0", NULL},
                                         {"--loopback", "127.0.0.1", NULL},
                                         {"-D", "-1", NULL}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct tool_run r;
        tool_run(BENCH, (const char *[]){"rpcrdma-bench", bad[i][0], bad[i][1], NULL}, "", 0, 30,
                 &r);
        CHECK_EQ(r.status, 2);
        CHECK(strstr(r.err, "usage: rpcrdma-bench") != NULL);
        tool_run_free(&r);
    }
}
