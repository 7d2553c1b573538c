/* rpcrdma-bench --loopback: every test over RPC-over-RDMA (both versions) against libtirpc's
 * TCP and raw TCP, the JSON lines the issue names, the ratios; usage errors. The figures
 * themselves are the benchmark's business, not a test's. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "interop.h"
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

/* What tshark sees in a capture of rpcrdma-bench: RPC-over-RDMA headers, those of another
 * version than 1, RDMA_ERRORs, calls of procedure proc of rbench.x, and of those (or of
 * the headers) the ones with a Read list and with a Write list. */
struct seen {
    int rpcrdma, not_v1, errors, calls, read_lists, write_lists;
};

static void look(const char *pcap, unsigned proc, struct seen *s)
{
    memset(s, 0, sizeof(*s));
    char *o = it_tshark_fields(pcap, "rpcordma || rpc",
                               "rpcordma.version rpcordma.msg_type rpcordma.reads_count "
                               "rpcordma.writes_count rpc.msgtyp rpc.program rpc.procedure");
    char *save = NULL;
    for (char *l = strtok_r(o, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        char *f[7], *p = l;
        for (int i = 0; i < 7; i++) {
            f[i] = p;
            p += strcspn(p, "|");
            if (*p)
                *p++ = 0;
        }
        /* one message a frame (one call in flight): the first value of each field */
        bool call = *f[4] && atoi(f[4]) == 0 && strtoul(f[5], NULL, 10) == 0x20000b0eu &&
                    strtoul(f[6], NULL, 10) == proc;
        if (*f[0]) {
            s->rpcrdma++;
            s->not_v1 += atoi(f[0]) != 1;
            s->errors += atoi(f[1]) == 4;
            s->read_lists += atoi(f[1]) == 0 && atoi(f[2]) > 0;
        }
        s->calls += call;
        s->write_lists += call && atoi(f[3]) > 0;
    }
    free(o);
}

/* A Version One capture of rpcrdma-bench on loopback, decoded by tshark (an independent
 * RPC-over-RDMA Version One dissector): RPC-over-RDMA with the ONC RPC calls and replies
 * inside, every call's XID answered, each 1 MiB WRITE call with a Read list and each
 * 1 MiB READ call with a Write list, nothing malformed. */
TEST(rpcrdma_bench_v1_capture_tshark)
{
    if (!it_tshark())
        SKIP("tshark is not installed");
    /* rbench.x is no program Wireshark knows: have its RPC layer dissect it anyway */
    it_tshark_prefs("-o rpc.dissect_unknown_programs:TRUE");
    char dir[512];
    it_tmpdir(dir, sizeof(dir), "rbcap");
    static const char *const test[] = {"write", "read"};
    for (unsigned i = 0; i < 2; i++) {
        char sub[600], cmd[2048], *o = NULL;
        snprintf(sub, sizeof(sub), "%s/%s", dir, test[i]);
        CHECK_EQ(mkdir(sub, 0700), 0);
        /* the client is the process the shell becomes: its captures carry the shell's pid
         * (the server process, killed at the end, may leave its capture unfinished) */
        snprintf(cmd, sizeof(cmd),
                 "echo $$; UIW_PCAP_DIR='%s'; export UIW_PCAP_DIR; exec '%s' --loopback "
                 "--vers 1 -t %s -s 1M -D 0.02 -r 1 --json",
                 sub, BENCH, test[i]);
        int rc = it_run(cmd, 1, 120, &o);
        if (rc != 0)
            uiw_test_fail(__FILE__, __LINE__, "rpcrdma-bench -t %s: %d\n%s", test[i], rc, o);
        CHECK(strstr(o, "\"transport\":\"rdma-v1\"") != NULL);
        long pid = strtol(o, NULL, 10);
        CHECK(pid > 0);
        free(o);
        snprintf(cmd, sizeof(cmd), "ls '%s'/uiw-%ld-*.pcap", sub, pid);
        CHECK_EQ(it_run(cmd, 0, 10, &o), 0);
        CHECK_EQ(it_nlines(o), 1);
        o[strcspn(o, "\n")] = 0;
        struct seen s;
        look(o, i == 0 ? 2 : 1, &s); /* RB_WRITE is procedure 2, RB_READ 1 */
        CHECK(s.rpcrdma > 0);
        CHECK_EQ(s.not_v1, 0);
        CHECK_EQ(s.errors, 0);
        CHECK(s.calls >= 1);
        if (i == 0) {
            /* tshark shows a call whose argument came by RDMA Read in the frame that
             * completes the Read: it is the headers that carry the Read lists */
            CHECK_EQ(s.read_lists, s.calls);
            CHECK_EQ(s.write_lists, 0);
        } else {
            CHECK_EQ(s.write_lists, s.calls);
            CHECK_EQ(s.read_lists, 0);
        }
        CHECK(it_rpc_calls_answered(o) >= s.calls);
        CHECK_EQ(it_tshark_malformed(o, NULL), 0);
        free(o);
    }
    it_tshark_prefs(NULL);
    it_rmtree(dir);
}

/* --client-threads: synchronous calls from several threads on one CLIENT, over both
 * transports, and their rate compared (a round trip means nothing with several callers);
 * not together with --inflight. */
TEST(rpcrdma_bench_client_threads)
{
    struct tool_run r;
    tool_run(BENCH,
             (const char *[]){"rpcrdma-bench", "--loopback", "--compare-tcp", "--json", "-t",
                              "null", "-D", "0.2", "-r", "1", "--client-threads", "3", NULL},
             "", 0, 120, &r);
    CHECK_EQ(r.status, 0);
    const char *h = "{\"test\":\"null\",\"size\":0,\"transport\":\"rdma-v2\",\"inflight\":1,";
    CHECK_EQ(field(r.out, h, "client_threads"), 3);
    CHECK(field(r.out, h, "calls_per_sec") > 0);
    h = "{\"test\":\"null\",\"size\":0,\"transport\":\"tcp\",\"inflight\":1,";
    CHECK_EQ(field(r.out, h, "client_threads"), 3);
    CHECK(field(r.out, h, "calls_per_sec") > 0);
    h = "{\"test\":\"null\",\"size\":0,\"ratio\":\"rate\",\"inflight\":1,\"vs\":\"tcp\",";
    CHECK(field(r.out, h, "value") > 0);
    CHECK_EQ(field(r.out, h, "client_threads"), 3);
    tool_run_free(&r);
    tool_run(BENCH,
             (const char *[]){"rpcrdma-bench", "--loopback", "--inflight", "2", "--client-threads",
                              "2", NULL},
             "", 0, 30, &r);
    CHECK_EQ(r.status, 2);
    tool_run_free(&r);
}

TEST(rpcrdma_bench_usage)
{
    static const char *const bad[][4] = {
        {"-t", "nope", NULL},
        {"--vers", "3", NULL},
        {"-s", "0", NULL},
        {"--loopback", "127.0.0.1", NULL},
        {"-D", "-1", NULL},
        {"--threads", "0", NULL},
        {"--client-threads", "0", NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct tool_run r;
        tool_run(BENCH, (const char *[]){"rpcrdma-bench", bad[i][0], bad[i][1], NULL}, "", 0, 30,
                 &r);
        CHECK_EQ(r.status, 2);
        CHECK(strstr(r.err, "usage: rpcrdma-bench") != NULL);
        tool_run_free(&r);
    }
}

/* --stats: the client's and the server's counters, in JSON; they agree with each other and
 * with what a READ of 1 MiB moves (one Write chunk each, its bytes by RDMA Write, none of
 * them copied). */
TEST(rpcrdma_bench_stats)
{
    struct tool_run r;
    tool_run(BENCH,
             (const char *[]){"rpcrdma-bench", "--loopback", "--json", "--stats", "-t", "read",
                              "-s", "1M", "-D", "0.2", "-r", "1", NULL},
             "", 0, 120, &r);
    CHECK_EQ(r.status, 0);
    const char *c = "{\"role\":\"client\",\"stats\":", *s = "{\"role\":\"server\",\"stats\":";
    double calls = field(r.out, c, "calls_sent");
    CHECK(calls >= 1);
    CHECK_EQ(field(r.out, c, "replies_received"), calls);
    CHECK_EQ(field(r.out, c, "write_chunks"), calls);
    CHECK_EQ(field(r.out, c, "read_chunks"), 0);
    CHECK_EQ(field(r.out, c, "rdma_write_bytes"), calls * 1048576);
    CHECK_EQ(field(r.out, c, "retransmits"), 0);
    CHECK_EQ(field(r.out, c, "connections"), 1);
    CHECK_EQ(field(r.out, c, "credits_granted_by_peer"), 128); /* the server's default grant */
    CHECK_EQ(field(r.out, c, "credits_max_inflight"), 1);      /* synchronous calls */
    /* the RNIC placed the data: no payload copy beyond the inline messages */
    CHECK(field(r.out, c, "placed_payload_bytes") >= calls * 1048576);
    CHECK(field(r.out, c, "copied_payload_bytes") <=
          field(r.out, c, "inline_bytes_received") + field(r.out, c, "inline_bytes_sent"));
    CHECK_EQ(field(r.out, c, "crc_errors"), 0);
    /* the server saw the same */
    CHECK_EQ(field(r.out, s, "calls_received"), calls);
    CHECK_EQ(field(r.out, s, "replies_sent"), calls);
    CHECK_EQ(field(r.out, s, "write_chunks"), calls);
    CHECK_EQ(field(r.out, s, "rdma_write_bytes"), calls * 1048576);
    CHECK_EQ(field(r.out, s, "credits_granted_to_peer"), 128);
    CHECK_EQ(field(r.out, s, "inline_bytes_received"), field(r.out, c, "inline_bytes_sent"));
    tool_run_free(&r);

    /* text: iwperf's layout, both layers */
    tool_run(BENCH,
             (const char *[]){"rpcrdma-bench", "--loopback", "--stats", "-t", "null", "-D", "0.1",
                              "-r", "1", NULL},
             "", 0, 120, &r);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, " uiw RPC-over-RDMA counters (client)\n   calls      : ") != NULL);
    CHECK(strstr(r.out, " uiw RPC-over-RDMA counters (server)\n") != NULL);
    CHECK(strstr(r.out, " uiw stack counters (client)\n   sent      : ") != NULL);
    CHECK(strstr(r.out, "   errors     : sent none; received none\n") != NULL);
    tool_run_free(&r);
}

/* bench-rpcrdma-xdr counts libtirpc's allocations (its own check of a known one passes,
 * and decoding chunk lists allocates on that side), none of the codec's, and each ratio
 * is the quotient of the two times it prints. */
TEST(bench_xdr_counts_both_sides)
{
#ifndef UIW_BENCH_XDR
    SKIP("built without the benchmarks (UIW_BENCH=OFF)");
#define UIW_BENCH_XDR ""
#endif
    struct tool_run r;
    tool_run(UIW_BENCH_XDR, (const char *[]){"bench-rpcrdma-xdr", "2000", "3", NULL}, "", 0, 120,
             &r);
    if (r.status != 0 && r.status != 1)
        uiw_test_fail(__FILE__, __LINE__, "bench-rpcrdma-xdr: %d\n%s%s", r.status, r.out, r.err);
    CHECK(strstr(r.err, "does not see") == NULL);
    const char *cases[] = {"v1 MSG, 1 Read chunk", "v2 MSG, 1 Read chunk",
                           "v2 MSG, 1 Write chunk x 4 segs", "v2 CONNPROP, 2 properties"};
    for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *l = strstr(r.out, cases[i]);
        if (!l)
            uiw_test_fail(__FILE__, __LINE__, "no line %s in:\n%s", cases[i], r.out);
        double tu, tt, au, at, ratio;
        CHECK_EQ(sscanf(l + strlen(cases[i]), "%lf %lf %lf %lf %lfx", &tu, &tt, &au, &at, &ratio),
                 5);
        CHECK(tu > 0 && tt > 0);
        CHECK(au == 0);
        CHECK(at >= 1);
        double q = tt / tu;
        if (ratio < q * 0.95 - 0.05 || ratio > q * 1.05 + 0.05)
            uiw_test_fail(__FILE__, __LINE__, "%s: ratio %.1f, times %.1f / %.1f", cases[i], ratio,
                          tt, tu);
    }
    tool_run_free(&r);
}

static void quotient(const char *what, double ratio, double num, double den)
{
    CHECK(num > 0 && den > 0);
    double q = num / den;
    if (ratio < q * 0.99 - 0.002 || ratio > q * 1.01 + 0.002)
        uiw_test_fail(__FILE__, __LINE__, "%s: ratio %.3f, figures %.1f / %.1f = %.3f", what, ratio,
                      num, den, q);
}

/* bench-nfs run with argv (skipped in a build without the benchmarks); it must exit 0. */
static void bench_nfs(const char *const *argv, struct tool_run *r)
{
#ifdef UIW_BENCH_NFS
    tool_run(UIW_BENCH_NFS, argv, "", 0, 120, r);
    if (r->status != 0)
        uiw_test_fail(__FILE__, __LINE__, "bench-nfs: %d\n%s%s", r->status, r->out, r->err);
#else
    (void)argv;
    (void)r;
    SKIP("built without the benchmarks (UIW_BENCH=OFF)");
#endif
}

/* bench-nfs compares like with like: GETATTR one call at a time on both transports and N
 * in flight on both (libnfs pipelining over TCP), NFSv4.1 against NFSv3 on one transport,
 * and each ratio it prints is RDMA's figure over TCP's (NFSv4.1's over NFSv3's) (with one
 * repetition, the median is that repetition's); the many small files' ratios are those of the files
 * per second printed with them. */
TEST(bench_nfs_fair_ratios)
{
    struct tool_run r;
    bench_nfs((const char *[]){"bench-nfs", "-r", "1", "-s", "4M", "-D", "0.3", "--inflight", "64",
                               "--calls", "50", "--files", "32", "--json", NULL},
              &r);
    const char *rep = "{\"rep\":0,", *ratio = "{\"ratio\":";
    const char *r0 = strstr(r.out, rep);
    CHECK(r0 != NULL);
    const char *w = strstr(r0, "\"write_mbs\":"), *rd = strstr(r0, "\"read_mbs\":");
    CHECK(w && rd);
    quotient("write", field(r.out, ratio, "write_1MiB"), field(w, "{", "rdma"),
             field(w, "{", "tcp"));
    quotient("read", field(r.out, ratio, "read_1MiB"), field(rd, "{", "rdma"),
             field(rd, "{", "tcp"));
    quotient("getattr one in flight", field(r.out, ratio, "getattr_1"), field(r.out, rep, "rdma_1"),
             field(r.out, rep, "tcp_1"));
    quotient("getattr N in flight", field(r.out, ratio, "getattr_n"), field(r.out, rep, "rdma_n"),
             field(r.out, rep, "tcp_libnfs_n"));
    CHECK_EQ(field(r.out, ratio, "inflight"), 64);
    /* NFSv4.1 over NFSv3 on the same server over RDMA: each ratio the quotient printed */
    const char *n4 = "{\"nfs4_rep\":0,", *r4 = "{\"ratio_v41_v3\":";
    const char *n4w = strstr(r.out, n4);
    CHECK(n4w != NULL);
    const char *keys4[3][2] = {{"write_1MiB", "\"write_mbs\":"},
                               {"read_1MiB", "\"read_mbs\":"},
                               {"getattr_n", "\"getattr_n_cps\":"}};
    for (int i = 0; i < 3; i++) {
        const char *at = strstr(n4w, keys4[i][1]);
        CHECK(at != NULL);
        quotient(keys4[i][0], field(r.out, r4, keys4[i][0]), field(at, "{", "v41"),
                 field(at, "{", "v3"));
    }
    /* CPU per GiB moved, client and server: RDMA's over TCP's, for each kind of call */
    CHECK(strstr(r.out, "\"cpu_s_per_gib\":{\"write_1MiB\":{\"tcp\":") != NULL);
    static const char *const kinds[] = {"write_1MiB", "read_1MiB", "write_4KiB", "read_4KiB"};
    for (int i = 0; i < 4; i++) {
        char line[96];
        snprintf(line, sizeof(line), "{\"cpu_s_per_gib\":{\"test\":\"%s\",", kinds[i]);
        CHECK(strstr(r.out, line) != NULL);
        quotient(kinds[i], field(r.out, line, "ratio"), field(r.out, line, "rdma"),
                 field(r.out, line, "tcp"));
    }
    /* the inline crossover of Version Two: inline's figure over the chunks' at each size */
    for (unsigned sz = 4096; sz <= 65536; sz *= 2) {
        char line[64];
        snprintf(line, sizeof(line), "{\"inline_v2\":{\"size\":%u,", sz);
        CHECK(strstr(r.out, line) != NULL);
        quotient(line, field(r.out, line, "ratio"), field(r.out, line, "inline"),
                 field(r.out, line, "chunks"));
    }
    const char *cr = "{\"creates_per_sec\":";
    quotient("creates", field(r.out, cr, "ratio"), field(r.out, cr, "sync"),
             field(r.out, cr, "async"));
    /* many small files: --parallel 8 over 1 on each transport, RDMA over TCP at 8, put and
     * get, each the quotient of the files per second printed */
    const char *fr = "{\"files_ratio\":{\"files\":32,";
    const char *fp = strstr(r.out, "{\"files_rep\":0,\"files\":32,\"put_fps\":");
    CHECK(fp != NULL);
    const char *gp = strstr(fp, "\"get_fps\":");
    CHECK(gp != NULL);
    const char *kinds2[2] = {"put", "get"}, *at[2] = {fp, gp};
    for (int i = 0; i < 2; i++) {
        char k[32];
        snprintf(k, sizeof(k), "%s_p8_p1_rdma", kinds2[i]);
        quotient(k, field(r.out, fr, k), field(at[i], "{", "rdma_8"), field(at[i], "{", "rdma_1"));
        snprintf(k, sizeof(k), "%s_p8_p1_tcp", kinds2[i]);
        quotient(k, field(r.out, fr, k), field(at[i], "{", "tcp_8"), field(at[i], "{", "tcp_1"));
        snprintf(k, sizeof(k), "%s_rdma_tcp_p8", kinds2[i]);
        quotient(k, field(r.out, fr, k), field(at[i], "{", "rdma_8"), field(at[i], "{", "tcp_8"));
    }
    tool_run_free(&r);
}

/* The quotient of two figures of the line that starts with head (its object obj). */
static double rep_quotient(const char *out, const char *head, const char *obj, const char *num,
                           const char *den)
{
    const char *l = strstr(out, head);
    if (!l)
        uiw_test_fail(__FILE__, __LINE__, "no line %s in:\n%s", head, out);
    const char *o = strstr(l, obj);
    CHECK(o != NULL);
    double n = field(o, "{", num), d = field(o, "{", den);
    CHECK(n > 0 && d > 0);
    return n / d;
}

/* bench-nfs runs each repetition in the reverse order of the one before (RDMA's runs before
 * TCP's, NFSv4.1's before NFSv3's), and its ratios are the medians of both repetitions'. */
TEST(bench_nfs_alternates_order)
{
    struct tool_run r;
    bench_nfs((const char *[]){"bench-nfs", "-r", "2", "-s", "1M", "-D", "0.1", "--inflight", "8",
                               "--calls", "10", "--files", "8", "--json", NULL},
              &r);
    CHECK(strstr(r.out, "{\"rep\":0,\"first\":\"tcp\",") != NULL);
    CHECK(strstr(r.out, "{\"rep\":1,\"first\":\"rdma\",") != NULL);
    CHECK(strstr(r.out, "{\"nfs4_rep\":0,\"first\":\"v3\",") != NULL);
    CHECK(strstr(r.out, "{\"nfs4_rep\":1,\"first\":\"v41\",") != NULL);
    const char *ratio = "{\"ratio\":";
    double w0 = rep_quotient(r.out, "{\"rep\":0,", "\"write_mbs\":", "rdma", "tcp"),
           w1 = rep_quotient(r.out, "{\"rep\":1,", "\"write_mbs\":", "rdma", "tcp");
    quotient("write, median of two", field(r.out, ratio, "write_1MiB"), w0 + w1, 2);
    double g0 = rep_quotient(r.out, "{\"nfs4_rep\":0,", "\"getattr_n_cps\":", "v41", "v3"),
           g1 = rep_quotient(r.out, "{\"nfs4_rep\":1,", "\"getattr_n_cps\":", "v41", "v3");
    quotient("NFSv4.1 getattr, median of two", field(r.out, "{\"ratio_v41_v3\":", "getattr_n"),
             g0 + g1, 2);
    tool_run_free(&r);
}
