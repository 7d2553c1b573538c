/* iwperf's statistics, options, control messages and report formats. */
#include "iwperf.h"
#include "perf_util.h"
#include "test.h"

#include <math.h>
#include <unistd.h>

static bool near(double a, double b)
{
    return fabs(a - b) <= 1e-6 * (fabs(b) > 1 ? fabs(b) : 1);
}

TEST(stats_latency_summary)
{
    /* 1..1000 us in a scrambled order, summarised as they are (scale 1) */
    uint64_t v[1000];
    for (int i = 0; i < 1000; i++)
        v[i] = (uint64_t)((i * 337) % 1000 + 1) * 1000;
    struct iwp_lat_stats s;
    iwp_lat_summarise(v, 1000, 1.0, &s);
    CHECK(near(s.t_min, 1));
    CHECK(near(s.t_max, 1000));
    CHECK(near(s.t_typical, 500.5)); /* median of an even count: mean of the middle two */
    CHECK(near(s.t_avg, 500.5));
    CHECK(near(s.p99, 990)); /* nearest rank: ceil(0.99 * 1000) = 990th */
    CHECK(near(s.p999, 999));
    /* sample standard deviation of 1..n: sqrt(n (n + 1) / 12) */
    CHECK(fabs(s.t_stdev - sqrt(1000.0 * 1001.0 / 12.0)) < 1e-6);
    for (int i = 1; i < 1000; i++)
        CHECK(v[i - 1] <= v[i]); /* sorted in place */
}

TEST(stats_half_round_trip_and_small_counts)
{
    uint64_t v[3] = {3000, 1000, 2000};
    struct iwp_lat_stats s;
    iwp_lat_summarise(v, 3, 0.5, &s);
    CHECK(near(s.t_min, 0.5));
    CHECK(near(s.t_max, 1.5));
    CHECK(near(s.t_typical, 1.0));
    CHECK(near(s.t_avg, 1.0));
    CHECK(near(s.t_stdev, 0.5));
    CHECK(near(s.p99, 1.5));
    uint64_t one = 7000;
    iwp_lat_summarise(&one, 1, 1.0, &s);
    CHECK(near(s.t_min, 7) && near(s.t_max, 7) && near(s.t_stdev, 0) && near(s.p999, 7));
    uint64_t sorted[200];
    for (int i = 0; i < 200; i++)
        sorted[i] = (uint64_t)i + 1;
    CHECK_EQ(iwp_percentile(sorted, 200, 50), 100);
    CHECK_EQ(iwp_percentile(sorted, 200, 99), 198);
    CHECK_EQ(iwp_percentile(sorted, 200, 99.9), 200); /* ceil(199.8) */
    CHECK_EQ(iwp_percentile(sorted, 200, 100), 200);
    CHECK_EQ(iwp_percentile(sorted, 200, 0.1), 1);
}

TEST(stats_bw_meter_peak)
{
    struct iwp_bw_meter m;
    iwp_bw_start(&m, 0, 1000000);
    iwp_bw_update(&m, 500000, 1000); /* window not over yet: ignored */
    CHECK(m.peak == 0);
    iwp_bw_update(&m, 1000000, 1000000);  /* 1 MB in 1 ms = 1e9 B/s */
    iwp_bw_update(&m, 3000000, 2000000);  /* 1 MB in 2 ms */
    iwp_bw_update(&m, 4000000, 4000000);  /* 2 MB in 1 ms: the peak */
    iwp_bw_update(&m, 10000000, 5000000); /* slower */
    CHECK(near(m.peak, 2e9));
}

TEST(samples_grow)
{
    struct iwp_samples s = {0};
    for (uint64_t i = 0; i < 10000; i++)
        CHECK_EQ(iwp_samples_push(&s, i), 0);
    CHECK_EQ(s.n, 10000);
    CHECK_EQ(s.v[9999], 9999);
    iwp_samples_free(&s);
    CHECK(s.v == NULL && s.n == 0);
}

TEST(args_defaults_and_options)
{
    struct iwp_opts o;
    char *a1[] = {"iwperf", NULL};
    CHECK_EQ(iwp_parse_args(&o, 1, a1), 0);
    CHECK(o.host == NULL && o.test == IWP_WRITE && !o.lat && o.size == 65536);
    CHECK_EQ(o.iters, IWP_DEFAULT_BW_ITERS);
    CHECK_EQ(o.port, IWP_DEFAULT_PORT);
    CHECK_EQ(o.mpa_rev, 2);
    CHECK_EQ(o.tx_depth, 128);
    CHECK_EQ(o.cq_mod, 100); /* perftest's default CQ moderation */

    char *a2[] = {"iwperf",    "-t",         "read",  "-s",        "1M",
                  "-n",        "77",         "--crc", "--mpa-rev", "1",
                  "--markers", "--tx-depth", "32",    "--verify",  "--report_gbits",
                  "--json",    "-p",         "4000",  "::1",       NULL};
    CHECK_EQ(iwp_parse_args(&o, 19, a2), 0);
    CHECK(o.test == IWP_READ && o.size == 1048576 && o.iters == 77 && o.crc && o.mpa_rev == 1);
    CHECK(o.markers && o.tx_depth == 32 && o.verify && o.gbits && o.json && o.port == 4000);
    CHECK_STR(o.host, "::1");

    CHECK(!o.tcp && !o.busy_poll && o.tcp_write == 0);

    /* the progress mode: a thread only where the CPUs leave room for it, unless told */
    CHECK_EQ(iwp_parse_args(&o, 1, a1), 0);
    CHECK_EQ(o.no_thread, sysconf(_SC_NPROCESSORS_ONLN) < IWP_THREAD_MIN_CPUS);
    char *th[] = {"iwperf", "--thread", NULL};
    CHECK_EQ(iwp_parse_args(&o, 2, th), 0);
    CHECK(!o.no_thread);
    char *ev[] = {"iwperf", "-e", NULL};
    CHECK_EQ(iwp_parse_args(&o, 2, ev), 0);
    CHECK(!o.no_thread && o.events);
    char *nt[] = {"iwperf", "--no-thread", NULL};
    CHECK_EQ(iwp_parse_args(&o, 2, nt), 0);
    CHECK(o.no_thread);
    char *both[] = {"iwperf", "--thread", "--no-thread", NULL};
    CHECK(iwp_parse_args(&o, 3, both) != 0);
    char *t1[] = {"iwperf", "--tcp", "--busy-poll", "--tcp-write", "64K", NULL};
    CHECK_EQ(iwp_parse_args(&o, 5, t1), 0);
    CHECK(o.tcp && o.busy_poll && o.tcp_write == 65536);

    char *a3[] = {"iwperf", "--lat", "-t", "send", "-D", "2.5", "10.0.0.1", NULL};
    CHECK_EQ(iwp_parse_args(&o, 7, a3), 0);
    CHECK(o.lat && o.test == IWP_SEND && o.size == 2 && o.iters == 0 && near(o.duration, 2.5));

    /* CQ moderation: one completion in N, never fewer than one per send queue */
    char *q1[] = {"iwperf", "--lat", "-Q", "1", NULL};
    CHECK_EQ(iwp_parse_args(&o, 4, q1), 0);
    CHECK_EQ(o.cq_mod, 1);
    char *q2[] = {"iwperf", "--cq-mod", "500", "--tx-depth", "64", NULL};
    CHECK_EQ(iwp_parse_args(&o, 5, q2), 0);
    CHECK_EQ(o.cq_mod, 64);

    char *a4[] = {"iwperf", "--lat", "-a", "h", NULL};
    CHECK_EQ(iwp_parse_args(&o, 4, a4), 0);
    CHECK_EQ(o.iters, IWP_DEFAULT_LAT_ITERS);
    uint64_t sizes[32];
    int n = iwp_sizes(&o, sizes, 32);
    CHECK_EQ(n, 23); /* 2 B .. 8 MiB */
    CHECK_EQ(sizes[0], 2);
    CHECK_EQ(sizes[22], 8u << 20);
    CHECK_EQ(iwp_max_size(&o), 8u << 20);
}

TEST(args_errors)
{
    struct iwp_opts o;
    char *bad[][5] = {
        {"iwperf", "-t", "atomic", NULL},     {"iwperf", "-s", "0", NULL},
        {"iwperf", "-s", "12Q", NULL},        {"iwperf", "--mpa-rev", "3", NULL},
        {"iwperf", "-a", "-s", "4", NULL},    {"iwperf", "-D", "1", "-n", "5"},
        {"iwperf", "--bogus", NULL},          {"iwperf", "a", "b", NULL},
        {"iwperf", "-p", "70000", NULL},      {"iwperf", "--tx-depth", "0", NULL},
        {"iwperf", "-Q", "0", NULL},          {"iwperf", "-n", NULL},
        {"iwperf", "--tcp-write", "0", NULL}, {"iwperf", "--tcp-write", "2G", NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int argc = 0;
        while (argc < 5 && bad[i][argc])
            argc++;
        if (iwp_parse_args(&o, argc, bad[i]) != -1)
            uiw_test_fail(__FILE__, __LINE__, "accepted bad command line %zu", i);
    }
    uint64_t v;
    CHECK(iwp_parse_size("64K", &v) == 0 && v == 65536);
    CHECK(iwp_parse_size("8m", &v) == 0 && v == 8u << 20);
    CHECK(iwp_parse_size("1G", &v) == 0 && v == 1u << 30);
    CHECK(iwp_parse_size("-1", &v) < 0);
}

TEST(ctrl_and_private_data_codec)
{
    struct iwp_ctrl c = {.type = IWP_C_RESULT}, d;
    for (int i = 0; i < IWP_CTRL_NV; i++)
        c.v[i] = 0x0102030405060708ull * (uint64_t)(i + 1);
    uint8_t b[IWP_CTRL_LEN];
    iwp_ctrl_encode(&c, b);
    CHECK_EQ(b[0], 0x69); /* magic "iwpf", big-endian */
    CHECK_EQ(b[3], 0x66);
    CHECK_EQ(iwp_ctrl_decode(b, &d), 0);
    CHECK_EQ(d.type, IWP_C_RESULT);
    CHECK_MEM(d.v, c.v, sizeof(c.v));
    b[0] ^= 1;
    CHECK_EQ(iwp_ctrl_decode(b, &d), -1);

    struct iwp_result r = {.bytes = 4096,
                           .iters = 1000,
                           .seconds = 0.25,
                           .bw_peak = 3e9,
                           .bw_avg = 2.5e9,
                           .msg_rate = 4e5,
                           .verify = IWP_VERIFY_OK,
                           .copied = 12,
                           .copied_known = true};
    r.lat.t_min = 1.5;
    r.lat.p999 = 9.25;
    struct iwp_result r2;
    iwp_result_to_ctrl(&r, &c);
    iwp_ctrl_encode(&c, b);
    CHECK_EQ(iwp_ctrl_decode(b, &d), 0);
    iwp_result_from_ctrl(&d, &r2);
    CHECK(r2.bytes == 4096 && r2.iters == 1000 && r2.seconds == 0.25 && r2.bw_peak == 3e9);
    CHECK(r2.bw_avg == 2.5e9 && r2.msg_rate == 4e5 && r2.lat.t_min == 1.5 && r2.lat.p999 == 9.25);
    CHECK(r2.verify == IWP_VERIFY_OK && r2.copied == 12 && r2.copied_known);

    struct iwp_pd p = {.test = IWP_SEND,
                       .flags = 3,
                       .max_size = 1u << 23,
                       .addr = 0x7f0012345000ull,
                       .rkey = 0xABCDEF01u,
                       .credits = 256},
                  q;
    uint8_t pb[IWP_PD_LEN];
    iwp_pd_encode(&p, pb);
    CHECK_EQ(iwp_pd_decode(pb, sizeof(pb), &q), 0);
    CHECK(q.test == p.test && q.flags == 3 && q.max_size == p.max_size && q.addr == p.addr);
    CHECK(q.rkey == p.rkey && q.credits == 256);
    CHECK_EQ(iwp_pd_decode(pb, IWP_PD_LEN - 1, &q), -1);
}

TEST(pattern_and_checksum)
{
    static uint8_t a[70000], b[70000];
    iwp_fill_pattern(a, sizeof(a), 1);
    iwp_fill_pattern(b, 1000, 1);
    CHECK_MEM(a, b, 1000); /* depends on the offset only */
    iwp_fill_pattern(b, sizeof(b), 2);
    CHECK(memcmp(a, b, sizeof(a)) != 0);
    /* not periodic at 256 or 4096 */
    CHECK(memcmp(a, a + 256, 256) != 0);
    CHECK(memcmp(a, a + 4096, 4096) != 0);
    uint64_t h = iwp_checksum(a, sizeof(a));
    CHECK_EQ(h, iwp_checksum(a, sizeof(a)));
    for (size_t pos = 0; pos < sizeof(a); pos += 9973) {
        a[pos] ^= 0x10; /* any flipped byte changes it */
        CHECK(iwp_checksum(a, sizeof(a)) != h);
        a[pos] ^= 0x10;
    }
    CHECK(iwp_checksum(a, 1000) != iwp_checksum(a, 1001));
}

/* --verify's per-message patterns: a message's own, a prefix of a longer one's, any byte
 * changed caught, and no two messages alike. */
TEST(message_patterns)
{
    static uint8_t a[4099], b[4099];
    iwp_fill_msg(a, sizeof(a), 1, 7);
    CHECK(iwp_check_msg(a, sizeof(a), 1, 7));
    CHECK(iwp_check_msg(a, 1001, 1, 7)); /* a prefix */
    CHECK(!iwp_check_msg(a, sizeof(a), 1, 8));
    CHECK(!iwp_check_msg(a, sizeof(a), 2, 7));
    iwp_fill_msg(b, sizeof(b), 1, 8);
    for (size_t k = 0; k + 8 <= sizeof(a); k += 8)
        CHECK(memcmp(a + k, b + k, 8) != 0); /* every word differs from the next message's */
    for (size_t pos = 0; pos < sizeof(a); pos += 511) {
        a[pos] ^= 1;
        CHECK(!iwp_check_msg(a, sizeof(a), 1, 7));
        a[pos] ^= 1;
    }
    CHECK(iwp_check_msg(a, 0, 1, 7) && iwp_check_msg(a, 3, 1, 7));
    /* the self-test hook: message 5 gets message 6's pattern */
    iwp_verify_selftest(5);
    iwp_fill_msg(a, 100, 1, 5);
    CHECK(!iwp_check_msg(a, 100, 1, 5) && iwp_check_msg(a, 100, 1, 6));
    iwp_verify_selftest(UINT64_MAX);
}

static char *report_text(struct iwp_opts *o, const struct iwp_result *rows, int n)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f != NULL);
    struct iwp_report r;
    iwp_report_init(&r, o, "client", f);
    r.mpa_rev = 2;
    r.crc = true;
    r.ird = r.ord = 16;
    r.mulpdu = 1448;
    iwp_report_header(&r);
    for (int i = 0; i < n; i++)
        iwp_report_row(&r, &rows[i]);
    iwp_report_finish(&r);
    fclose(f);
    return buf;
}

TEST(report_tables)
{
    struct iwp_opts o;
    char *a[] = {"iwperf", NULL};
    CHECK_EQ(iwp_parse_args(&o, 1, a), 0);
    struct iwp_result rows[2] = {
        {.bytes = 65536,
         .iters = 5000,
         .bw_peak = 2.0 * 1048576 * 1000,
         .bw_avg = 1048576.0 * 1500,
         .msg_rate = 24000},
        {.bytes = 1048576,
         .iters = 100,
         .bw_peak = 1048576.0 * 3000,
         .bw_avg = 1048576.0 * 2500,
         .msg_rate = 2500,
         .verify = IWP_VERIFY_OK},
    };
    char *t = report_text(&o, rows, 2);
    CHECK(strstr(t, "RDMA_Write BW Test") != NULL);
    CHECK(strstr(t, " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   "
                    "MsgRate[Mpps]\n") != NULL);
    CHECK(strstr(t, " 65536      5000           2000.00             1500.00              "
                    "0.024000") != NULL);
    CHECK(strstr(t, "verify ok") != NULL);
    CHECK(strstr(t, "CRC32c        : ON") != NULL);
    free(t);

    o.gbits = true; /* 2000 MiB/s = 16.78 Gb/s */
    t = report_text(&o, rows, 1);
    CHECK(strstr(t, "BW peak[Gb/sec]    BW average[Gb/sec]") != NULL);
    CHECK(strstr(t, "16.78") != NULL);
    free(t);

    o.lat = true;
    struct iwp_result l = {.bytes = 2, .iters = 1000};
    l.lat = (struct iwp_lat_stats){1.25, 9.5, 1.5, 1.75, 0.5, 4.25, 9.0};
    t = report_text(&o, &l, 1);
    CHECK(strstr(t, "RDMA_Write Latency Test") != NULL);
    CHECK(strstr(t, iwp_lat_columns()) != NULL);
    CHECK(strstr(t, "t_typical[usec]") && strstr(t, "99.9% percentile[usec]"));
    CHECK(strstr(t, " 2       1000         1.25           9.50         1.50               1.75"
                    "           0.50            4.25                   9.00") != NULL);
    free(t);
}

TEST(report_json)
{
    struct iwp_opts o;
    char *a[] = {"iwperf", "--json", "-t", "send", NULL};
    CHECK_EQ(iwp_parse_args(&o, 4, a), 0);
    struct iwp_result rows[2] = {
        {.bytes = 2,
         .iters = 10,
         .bw_avg = 1048576.0,
         .bw_peak = 2097152.0,
         .copied_known = true,
         .copied = 20},
        {.bytes = 4, .iters = 10, .verify = IWP_VERIFY_FAIL},
    };
    char *t = report_text(&o, rows, 2);
    CHECK(pu_json_valid(t));
    CHECK(strstr(t, "#bytes") == NULL); /* no table with --json */
    char s[32];
    double v;
    CHECK(pu_json_str(t, "test", 0, s, sizeof(s)) && strcmp(s, "send") == 0);
    CHECK(pu_json_str(t, "mode", 0, s, sizeof(s)) && strcmp(s, "bw") == 0);
    /* the progress mode that ran (the default follows the CPUs: whichever it chose) */
    CHECK(pu_json_str(t, "progress", 0, s, sizeof(s)) &&
          strcmp(s, o.no_thread ? "inline" : "thread") == 0);
    CHECK(pu_json_num(t, "bytes", 1, &v) && v == 4);
    CHECK(pu_json_num(t, "bw_avg_mib", 0, &v) && near(v, 1.0));
    CHECK(pu_json_num(t, "bw_peak_mib", 0, &v) && near(v, 2.0));
    CHECK(pu_json_num(t, "copied_payload_bytes", 0, &v) && v == 20);
    CHECK(!pu_json_num(t, "copied_payload_bytes", 1, &v)); /* null: unknown */
    CHECK(pu_json_str(t, "verify", 1, s, sizeof(s)) && strcmp(s, "fail") == 0);
    free(t);
    /* the checker itself rejects broken documents */
    CHECK(!pu_json_valid("{\"a\": 1,}"));
    CHECK(!pu_json_valid("{\"a\" 1}"));
    CHECK(!pu_json_valid("[1, 2] x"));
    CHECK(pu_json_valid(" {\"a\": [1, -2.5e3, true, null, \"x\\n\"]} "));
}
