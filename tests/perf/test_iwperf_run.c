/*
 * iwperf end to end on loopback: a server and a client process per test, small sizes and
 * iteration counts. Checks the exit codes, the tables / JSON both sides print, the
 * iteration counts, --verify, the negotiated connection settings, and (tshark) the wire.
 */
#include "perf_util.h"
#include "test.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static const char iwp_bw_columns_text[] =
    " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]";

/* Run a client with opts (JSON output added) against a fresh server; check the common
 * facts and return the client's JSON. */
static char *json_run(const char *const opts[], const char *server_env, char **server_out)
{
    const char *cv[40];
    int n = 0;
    cv[n++] = "--json";
    for (int i = 0; opts[i]; i++)
        cv[n++] = opts[i];
    cv[n] = NULL;
    /* the server mirrors the options that are not the client's to tell it (and the value
     * of --tcp-write) */
    static const char *const mirrored[] = {"--tcp", "-e",          "--no-thread", "--thread",
                                           "-6",    "--busy-poll", "--tcp-write"};
    const char *sv[12] = {"-q"};
    int ns = 1;
    for (int i = 0; opts[i]; i++)
        for (int k = 0; k < 7; k++)
            if (strcmp(opts[i], mirrored[k]) == 0) {
                sv[ns++] = mirrored[k];
                if (k == 6 && opts[i + 1])
                    sv[ns++] = opts[i + 1];
            }
    sv[ns] = NULL;
    char *out = pu_pair(sv, cv, server_env, server_out, NULL);
    if (!pu_json_valid(out))
        uiw_test_fail(__FILE__, __LINE__, "iwperf --json printed no valid JSON:\n%s", out);
    return out;
}

static double num(const char *doc, const char *key, int nth)
{
    double v;
    if (!pu_json_num(doc, key, nth, &v))
        uiw_test_fail(__FILE__, __LINE__, "no number \"%s\" #%d in\n%s", key, nth, doc);
    return v;
}

static void check_str(const char *doc, const char *key, int nth, const char *want)
{
    char s[64];
    if (!pu_json_str(doc, key, nth, s, sizeof(s)) || strcmp(s, want) != 0)
        uiw_test_fail(__FILE__, __LINE__, "\"%s\" #%d is not \"%s\" in\n%s", key, nth, want, doc);
}

/* A bandwidth run: iterations, positive bandwidth, verify ok; the server prints the row. */
static void bw_case_with(const char *test, const char *size, const char *const more[]);

static void bw_case(const char *test, const char *size, const char *extra)
{
    const char *more[] = {extra, NULL};
    bw_case_with(test, size, more);
}

static void bw_case_with(const char *test, const char *size, const char *const more[])
{
    const char *opts[16] = {"-t", test, "-s", size, "-n", "50", "--verify"};
    int no = 7;
    for (int i = 0; more[i]; i++)
        opts[no++] = more[i];
    opts[no] = NULL;
    const char *extra = more[0];
    char *srv = NULL;
    char *j = json_run(opts, NULL, &srv);
    check_str(j, "test", 0, test);
    check_str(j, "mode", 0, "bw");
    check_str(j, "transport", 0, extra && strcmp(extra, "--tcp") == 0 ? "tcp" : "uiw");
    CHECK_EQ(num(j, "bytes", 0), strtoull(size, NULL, 10));
    CHECK_EQ(num(j, "iterations", 0), 50);
    CHECK(num(j, "bw_avg_mib", 0) > 0);
    CHECK(num(j, "bw_peak_mib", 0) >= num(j, "bw_avg_mib", 0));
    CHECK(num(j, "msg_rate_mpps", 0) > 0);
    check_str(j, "verify", 0, "ok");
    /* the server printed the same row in its table */
    CHECK(strstr(srv, "BW peak[MiB/sec]") != NULL);
    char row[64];
    snprintf(row, sizeof(row), " %-10s 50 ", size);
    if (!strstr(srv, row))
        uiw_test_fail(__FILE__, __LINE__, "server table lacks '%s':\n%s", row, srv);
    CHECK(strstr(srv, "verify ok") != NULL);
    free(j);
    free(srv);
}

static void lat_case(const char *test, const char *size, const char *extra)
{
    const char *opts[] = {"-t", test, "--lat", "-s", size, "-n", "200", "--verify", extra, NULL};
    char *j = json_run(opts, NULL, NULL);
    check_str(j, "mode", 0, "lat");
    CHECK_EQ(num(j, "iterations", 0), 200);
    double mn = num(j, "t_min_us", 0), typ = num(j, "t_typical_us", 0), mx = num(j, "t_max_us", 0);
    double p99 = num(j, "p99_us", 0), p999 = num(j, "p999_us", 0), avg = num(j, "t_avg_us", 0);
    CHECK(mn > 0);
    CHECK(mn <= typ && typ <= p99 && p99 <= p999 && p999 <= mx);
    CHECK(mn <= avg && avg <= mx);
    CHECK(num(j, "t_stdev_us", 0) >= 0);
    check_str(j, "verify", 0, "ok");
    free(j);
}

/* ---- the raw TCP baseline ------------------------------------------------------------- */

TEST(tcp_baseline_bw)
{
    bw_case("write", "65536", "--tcp");
    bw_case("read", "65536", "--tcp");
    bw_case("send", "1000", "--tcp");
}

/* The strong baseline: both ends spin on non-blocking calls, and send() takes at most
 * --tcp-write bytes (here a size that divides no message, so messages straddle calls). */
TEST(tcp_baseline_polling_small_writes)
{
    const char *more[] = {"--tcp", "--busy-poll", "--tcp-write", "1000", NULL};
    bw_case_with("write", "65536", more);
    bw_case_with("read", "65536", more);
    bw_case_with("send", "1500", more);
}

TEST(tcp_baseline_lat)
{
    lat_case("send", "64", "--tcp");
    lat_case("write", "4096", "--tcp");
}

/* ---- RDMA over uiw ---------------------------------------------------------------------- */

TEST(write_bw)
{
    bw_case("write", "65536", NULL);
}

TEST(read_bw)
{
    bw_case("read", "65536", NULL);
}

TEST(send_bw)
{
    bw_case("send", "4096", NULL);
}

TEST(send_bw_small_credits)
{
    /* more Sends than the server has receives: the credits must pace the client */
    const char *sv[] = {"-q", "--rx-depth", "8", NULL};
    char *out = pu_pair(sv,
                        (const char *const[]){"--json", "-t", "send", "-s", "100", "-n", "1000",
                                              "--verify", "--tx-depth", "64", NULL},
                        NULL, NULL, NULL);
    CHECK(pu_json_valid(out));
    CHECK_EQ(num(out, "iterations", 0), 1000);
    check_str(out, "verify", 0, "ok");
    free(out);
}

TEST(write_lat)
{
    lat_case("write", "64", NULL);
}

TEST(read_lat)
{
    lat_case("read", "64", NULL);
}

TEST(send_lat)
{
    lat_case("send", "64", NULL);
}

/* CQ moderation (-Q): one Send or Write in N signalled, the client's last always (its
 * completion ends the phase), whether the phase counts iterations (a last that is no
 * multiple of N) or runs for a time; every one with -Q 1. */
TEST(lat_cq_moderation)
{
    static const char *const tests[] = {"send", "write"};
    for (int t = 0; t < 2; t++) {
        const char *n[] = {"-t",  tests[t], "--lat", "-s",       "64", "-n",
                           "157", "-Q",     "10",    "--verify", NULL};
        char *j = json_run(n, NULL, NULL);
        CHECK_EQ(num(j, "iterations", 0), 157);
        check_str(j, "verify", 0, "ok");
        free(j);
        const char *d[] = {"-t",  tests[t], "--lat", "-s",       "64", "-D",
                           "0.2", "-Q",     "7",     "--verify", NULL};
        j = json_run(d, NULL, NULL);
        CHECK(num(j, "iterations", 0) > 0);
        check_str(j, "verify", 0, "ok");
        free(j);
        const char *e[] = {"-t", tests[t], "--lat", "-s", "64", "-n", "20", "-Q", "1", NULL};
        j = json_run(e, NULL, NULL);
        CHECK_EQ(num(j, "iterations", 0), 20);
        free(j);
    }
}

TEST(crc)
{
    const char *opts[] = {"-t", "write", "-s", "200000", "-n", "20", "--crc", "--verify", NULL};
    char *j = json_run(opts, NULL, NULL);
    CHECK(strstr(j, "\"crc\": true") != NULL);
    check_str(j, "verify", 0, "ok");
    free(j);
}

TEST(mpa_rev1)
{
    const char *opts[] = {"-t", "send",      "-s", "3000",     "-n",
                          "30", "--mpa-rev", "1",  "--verify", NULL};
    char *j = json_run(opts, NULL, NULL);
    CHECK_EQ(num(j, "mpa_rev", 0), 1);
    check_str(j, "verify", 0, "ok");
    free(j);
}

TEST(markers)
{
    const char *opts[] = {"-t", "write",     "-s",       "100000", "-n",
                          "20", "--markers", "--verify", "--crc",  NULL};
    char *j = json_run(opts, NULL, NULL);
    CHECK(strstr(j, "\"markers\": true") != NULL);
    check_str(j, "verify", 0, "ok");
    free(j);
}

TEST(verify_all_sizes)
{
    /* -a: 2 B .. 8 MiB, every size checked, each direction */
    const char *tests[] = {"write", "read", "send"};
    for (int t = 0; t < 3; t++) {
        const char *opts[] = {"-t", tests[t], "-a", "-n", "3", "--verify", NULL};
        char *j = json_run(opts, NULL, NULL);
        for (int i = 0; i < 23; i++) {
            CHECK_EQ(num(j, "bytes", i), 2ull << i);
            CHECK_EQ(num(j, "iterations", i), 3);
            check_str(j, "verify", i, "ok");
        }
        free(j);
    }
}

TEST(verify_all_sizes_latency)
{
    /* ping-pong: every ping and pong checked, also when later control messages land in
     * the receive buffers next to them (sizes above one 128-byte slot) */
    const char *tests[] = {"write", "read", "send"};
    for (int t = 0; t < 3; t++) {
        const char *opts[] = {"-t", tests[t], "--lat", "-a", "-n", "3", "--verify", NULL};
        char *j = json_run(opts, NULL, NULL);
        for (int i = 0; i < 23; i++) {
            CHECK_EQ(num(j, "bytes", i), 2ull << i);
            check_str(j, "verify", i, "ok");
        }
        free(j);
    }
}

/* --verify checks every message, not only the last: with IWPERF_VERIFY_SELFTEST=2 the
 * sending side (both processes get it) gives the third message of the phase the fourth's
 * pattern (an RDMA Read server its third source slot), and every test, bandwidth and
 * latency, RDMA and TCP, must then fail its check (exit status 1, a runtime failure) and
 * report it. */
TEST(verify_every_message)
{
    CHECK_EQ(setenv("IWPERF_VERIFY_SELFTEST", "2", 1), 0);
    const char *tests[] = {"write", "read", "send"};
    for (int t = 0; t < 3; t++)
        for (int k = 0; k < 4; k++) {
            bool tcp = k & 1, lat = k & 2;
            const char *opts[12] = {"--json", "-t", tests[t], "-s", "3000", "-n", "20", "--verify"};
            const char *sv[4] = {"-q"};
            int no = 8;
            if (tcp) {
                opts[no++] = "--tcp";
                sv[1] = "--tcp";
            }
            if (lat)
                opts[no++] = "--lat";
            opts[no] = NULL;
            int rc = 0;
            char *srv = NULL;
            char *j = pu_pair(sv, opts, NULL, &srv, &rc);
            if (rc != 1)
                uiw_test_fail(__FILE__, __LINE__, "%s%s%s: exit status %d, not 1:\n%s", tests[t],
                              tcp ? " --tcp" : "", lat ? " --lat" : "", rc, j);
            check_str(j, "verify", 0, "fail");
            CHECK(strstr(srv, "VERIFY FAILED") != NULL);
            free(j);
            free(srv);
        }
    /* and each QP of several: every connection checks its own messages */
    const char *qopts[] = {"--json", "-s", "3000", "-n", "20", "--verify", "--qps", "2", NULL};
    const char *qsv[] = {"-q", NULL};
    int rc = 0;
    char *srv = NULL;
    char *j = pu_pair(qsv, qopts, NULL, &srv, &rc);
    CHECK_EQ(rc, 1);
    check_str(j, "verify", 0, "fail");
    CHECK(strstr(srv, "VERIFY FAILED") != NULL);
    free(j);
    free(srv);
    unsetenv("IWPERF_VERIFY_SELFTEST");
}

TEST(duration_and_tables)
{
    /* -D: the client counts what it did in the time; the table has the perftest columns */
    const char *cv[] = {"-t", "write", "-s", "8192", "-D", "0.3", "--report_gbits", NULL};
    char *srv = NULL;
    char *out = pu_pair((const char *const[]){NULL}, cv, NULL, &srv, NULL);
    CHECK(strstr(out, "RDMA_Write BW Test") != NULL);
    CHECK(strstr(out, " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   "
                      "MsgRate[Mpps]") != NULL);
    const char *row = strstr(out, "\n 8192 ");
    CHECK(row != NULL);
    unsigned long long it = strtoull(row + 7, NULL, 10);
    CHECK(it > 0);
    CHECK(strstr(srv, "\n 8192 ") != NULL);
    free(out);
    free(srv);
    const char *lv[] = {"-t", "send", "--lat", "-s", "2", "-n", "100", NULL};
    out = pu_pair((const char *const[]){NULL}, lv, NULL, NULL, NULL);
    CHECK(strstr(out, "Send Latency Test") != NULL);
    CHECK(strstr(out, " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    "
                      "t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% "
                      "percentile[usec]") != NULL);
    CHECK(strstr(out, "\n 2       100 ") != NULL);
    free(out);
}

TEST(json_output_parse)
{
    const char *opts[] = {"-t", "read", "-s", "4096", "-n", "40", "--tx-depth", "8", NULL};
    char *srv = NULL;
    char *j = json_run(opts, NULL, &srv);
    check_str(j, "tool", 0, "iwperf");
    check_str(j, "role", 0, "client");
    check_str(j, "test", 0, "read");
    CHECK_EQ(num(j, "tx_depth", 0), 8);
    CHECK(num(j, "ord", 0) >= 1 && num(j, "ird", 0) >= 1);
    CHECK_EQ(num(j, "mpa_rev", 0), 2);
    CHECK(num(j, "mulpdu", 0) > 0);
    CHECK(num(j, "seconds", 0) > 0);
    CHECK(num(j, "bw_avg_gbits", 0) > 0);
    double copied;
    CHECK(pu_json_num(j, "copied_payload_bytes", 0, &copied)); /* the stack's statistic */
    check_str(j, "verify", 0, "off");
    /* the server's table (no --json on its command line) */
    CHECK(strstr(srv, iwp_bw_columns_text) != NULL);
    free(j);
    free(srv);
}

TEST(progress_modes)
{
    /* the application sleeping on the completion channel (-e), and no progress thread */
    const char *ev[] = {"-t", "send", "-s", "5000", "-n", "300", "-e", "--verify", NULL};
    char *j = json_run(ev, NULL, NULL);
    CHECK_EQ(num(j, "iterations", 0), 300);
    check_str(j, "verify", 0, "ok");
    free(j);
    const char *evl[] = {"-t", "read", "--lat", "-s", "100", "-n", "100", "-e", "--verify", NULL};
    j = json_run(evl, NULL, NULL);
    CHECK_EQ(num(j, "iterations", 0), 100);
    check_str(j, "verify", 0, "ok");
    free(j);
    const char *nt[] = {"-t", "write", "-s", "100000", "-n", "50", "--no-thread", "--verify", NULL};
    j = json_run(nt, NULL, NULL);
    CHECK_EQ(num(j, "iterations", 0), 50);
    check_str(j, "verify", 0, "ok");
    free(j);
}

TEST(ipv6)
{
    /* pu_pair connects to 127.0.0.1: this pair runs by hand on ::1 */
    char port[16];
    const char *s_argv[] = {pu_iwperf(), "-p", "0", "-q", "-6", NULL};
    struct pu_proc ps, pc;
    snprintf(port, sizeof(port), "%d", pu_server(&ps, s_argv, NULL));
    const char *c_argv[] = {pu_iwperf(), "-p", port, "--json", "-t",       "send", "--lat",
                            "-s",        "32", "-n", "50",     "--verify", "::1",  NULL};
    pu_start(&pc, c_argv, NULL);
    int crc = pu_wait(&pc, 60), src = pu_wait(&ps, 15);
    char *j = pu_stdout(&pc);
    if (crc != 0 || src != 0) {
        char *e1 = pu_stderr(&pc), *e2 = pu_stderr(&ps);
        fprintf(stderr, "client %d: %s%s\nserver %d: %s\n", crc, j, e1, src, e2);
        free(e1);
        free(e2);
    }
    pu_cleanup(&pc);
    pu_cleanup(&ps);
    CHECK_EQ(crc, 0);
    CHECK_EQ(src, 0);
    CHECK(pu_json_valid(j));
    CHECK_EQ(num(j, "iterations", 0), 50);
    check_str(j, "verify", 0, "ok");
    free(j);
}

/* ---- tshark decodes a captured run ---------------------------------------------------- */

/* iwperf's traffic is not RPC-over-RDMA: the tshark calls disable that dissector, whose
 * heuristic (Wireshark 4.0) raises an exception on a zero-length Send payload and so marks
 * iwperf's zero-length STOP Send as malformed. */

static char *run_cmd(const char *cmd)
{
    const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    struct pu_proc p;
    pu_start(&p, argv, NULL);
    int rc = pu_wait(&p, 120);
    char *out = pu_stdout(&p);
    if (rc != 0) {
        char *err = pu_stderr(&p);
        uiw_test_fail(__FILE__, __LINE__, "'%s' failed (%d):\n%s%s", cmd, rc, out, err);
    }
    pu_cleanup(&p);
    return out;
}

static const char *tshark_bin(void)
{
#ifdef TSHARK_BIN
    return TSHARK_BIN;
#else
    return "tshark";
#endif
}

static char *tshark(const char *pcap, const char *filter, const char *fields)
{
    char ef[256] = "", cmd[1024];
    size_t o = 0;
    for (const char *p = fields; *p;) { /* "a b" -> " -e a -e b" */
        size_t n = strcspn(p, " ");
        if (n) {
            int k = snprintf(ef + o, sizeof(ef) - o, " -e %.*s", (int)n, p);
            CHECK(k > 0 && (size_t)k < sizeof(ef) - o);
            o += (size_t)k;
        }
        p += n;
        while (*p == ' ')
            p++;
    }
    snprintf(cmd, sizeof(cmd),
             "%s -n -r '%s' --disable-protocol rpcordma -Y '%s' -T fields -E separator='|' -E "
             "occurrence=a "
             "-E aggregator=',' %s 2>/dev/null",
             tshark_bin(), pcap, filter, ef);
    return run_cmd(cmd);
}

static void capture_run(const char *dir, const char *test, char *pcap, size_t cap)
{
    char env[300];
    snprintf(env, sizeof(env), "UIW_PCAP_DIR=%s", dir);
    const char *opts[] = {"-t", test, "-s", "70000", "-n", "6", "--crc", "--verify", NULL};
    char *j = json_run(opts, env, NULL);
    check_str(j, "verify", 0, "ok");
    free(j);
    /* the server process wrote one capture */
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)) != NULL)
        if (strstr(e->d_name, ".pcap")) {
            snprintf(pcap, cap, "%s/%s", dir, e->d_name);
            n++;
        }
    closedir(d);
    CHECK_EQ(n, 1);
}

/* Field k (0-based, '|' separated) of a tshark fields line: [*f, *e). */
static bool field(const char *line, int k, const char **f, const char **e)
{
    const char *p = line;
    for (int i = 0; i < k; i++) {
        p = strpbrk(p, "|\n");
        if (!p || *p == '\n')
            return false;
        p++;
    }
    *f = p;
    *e = p + strcspn(p, "|\n");
    return true;
}

/* Sum and count of the comma-separated numbers in [f, e). */
static unsigned long long field_sum(const char *f, const char *e, int *count)
{
    unsigned long long sum = 0;
    while (f < e) {
        char *end;
        unsigned long long v = strtoull(f, &end, 0);
        if (end == f || end > e)
            break;
        sum += v;
        (*count)++;
        f = end + (end < e && *end == ',');
    }
    return sum;
}

static void check_capture(const char *pcap, const char *test)
{
    /* one pass over every frame; per line: 0 tcp.len, 1 Request key, 2 Reply key, 3 C flag,
     * 4 R flag, 5 rev, 6 PD length, 7 ULPDU lengths, 8 pads, 9 opcodes */
    char *o = tshark(pcap, "tcp",
                     "tcp.len iwarp_mpa.key.req iwarp_mpa.key.rep iwarp_mpa.crc_flag "
                     "iwarp_mpa.rej_flag iwarp_mpa.rev iwarp_mpa.pdlength iwarp_mpa.ulpdulength "
                     "iwarp_mpa.pad iwarp_rdma.opcode");
    int nreq = 0, nrep = 0, nfpdu = 0, seen[16] = {0};
    unsigned long long tcpbytes = 0, ulp = 0, padbytes = 0, pd = 0;
    for (const char *line = o; *line; line = strchr(line, '\n') + 1) {
        const char *f, *e;
        int n = 0;
        CHECK(field(line, 9, &f, &e));
        tcpbytes += field(line, 0, &f, &e) ? field_sum(f, e, &n) : 0;
        if (field(line, 1, &f, &e) && e > f) { /* the MPA Request: CRC asked for, Rev 2 */
            nreq++;
            CHECK(field(line, 3, &f, &e) && strncmp(f, "1|", 2) == 0);
            CHECK(field(line, 5, &f, &e) && strncmp(f, "2|", 2) == 0);
        }
        if (field(line, 2, &f, &e) && e > f) { /* the MPA Reply: accepted, Rev 2 */
            nrep++;
            CHECK(field(line, 4, &f, &e) && strncmp(f, "0|", 2) == 0);
            CHECK(field(line, 5, &f, &e) && strncmp(f, "2|", 2) == 0);
        }
        n = 0;
        if (field(line, 6, &f, &e))
            pd += field_sum(f, e, &n);
        n = 0;
        if (field(line, 7, &f, &e))
            ulp += field_sum(f, e, &n);
        nfpdu += n;
        if (field(line, 8, &f, &e)) /* pad bytes as hex, occurrences comma-separated */
            for (; f < e; f++)
                padbytes += *f != ',';
        n = 0;
        if (field(line, 9, &f, &e))
            while (f < e) {
                char *end;
                unsigned long v = strtoul(f, &end, 0);
                if (end == f)
                    break;
                if (v < 16)
                    seen[v]++;
                f = end + (end < e && *end == ',');
            }
        if (!strchr(line, '\n'))
            break;
    }
    free(o);
    CHECK_EQ(nreq, 1);
    CHECK_EQ(nrep, 1);
    CHECK(nfpdu > 12);
    /* every FPDU decoded: the two frames (20 bytes + private data) and the FPDUs (2 + ULPDU
     * + pad + CRC) account for every TCP payload byte of the capture */
    CHECK_EQ(tcpbytes, 2 * 20 + pd + ulp + 6ull * (unsigned)nfpdu + padbytes / 2);
    /* "Good CRC32" on each FPDU, none bad, nothing malformed */
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "%s -n -r '%s' --disable-protocol rpcordma -V 2>/dev/null",
             tshark_bin(), pcap);
    o = run_cmd(cmd);
    CHECK_EQ(pu_count(o, "Good CRC32"), nfpdu);
    CHECK_EQ(pu_count(o, "Bad CRC32"), 0);
    CHECK_EQ(pu_count(o, "Malformed"), 0);
    free(o);
    /* the opcodes of the run: control Sends (3) always; Writes (0), or Read Requests (1)
     * and Read Responses (2) */
    CHECK(seen[3] > 0);
    if (strcmp(test, "write") == 0) {
        CHECK(seen[0] > 0);
        CHECK_EQ(seen[1] + seen[2], 0);
    } else {
        CHECK_EQ(seen[1], 6); /* one Read Request per Read */
        CHECK(seen[2] >= 6);
    }
    CHECK_EQ(seen[7], 0); /* no Terminate */
}

static void tshark_case(const char *test)
{
    if (access(tshark_bin(), X_OK) != 0)
        SKIP("tshark not installed");
    char dir[] = "/tmp/uiw-perf-pcap-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char pcap[512];
    capture_run(dir, test, pcap, sizeof(pcap));
    check_capture(pcap, test);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    free(run_cmd(cmd));
}

TEST(tshark_write_capture)
{
    tshark_case("write");
}

TEST(tshark_read_capture)
{
    tshark_case("read");
}
