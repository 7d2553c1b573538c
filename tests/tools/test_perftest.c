/* iwperf under perftest's names (iw_write_bw ... iw_send_lat): perftest's options with
 * perftest's meanings, its server banner and its JSON report; several QPs; --stats. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf_util.h"
#include "test.h"

#define TOOLS UIW_BINARY_DIR "/tools/"

/* Run `name` as a server (its options, then "-p 0") and as a client (its options, then
 * "-p PORT 127.0.0.1"); both must exit 0. Returns the client's stdout, *srv the server's. */
static char *pair(const char *name, const char *const sopts[], const char *const copts[],
                  char **srv)
{
    char path[256], port[16];
    snprintf(path, sizeof(path), TOOLS "%s", name);
    const char *sargv[24] = {path};
    int n = 1;
    for (int i = 0; sopts[i]; i++)
        sargv[n++] = sopts[i];
    sargv[n++] = "-p";
    sargv[n++] = "0";
    sargv[n] = NULL;
    struct pu_proc s, c;
    snprintf(port, sizeof(port), "%d", pu_server(&s, sargv, NULL));
    const char *cargv[24] = {path};
    n = 1;
    for (int i = 0; copts[i]; i++)
        cargv[n++] = copts[i];
    cargv[n++] = "-p";
    cargv[n++] = port;
    cargv[n++] = "127.0.0.1";
    cargv[n] = NULL;
    pu_start(&c, cargv, NULL);
    int crc = pu_wait(&c, 90), src = pu_wait(&s, 30);
    char *out = pu_stdout(&c);
    *srv = pu_stdout(&s);
    if (crc != 0 || src != 0) {
        char *ce = pu_stderr(&c), *se = pu_stderr(&s);
        uiw_test_fail(__FILE__, __LINE__, "%s: client %d, server %d\nclient:\n%s%s\nserver:\n%s%s",
                      name, crc, src, out, ce, *srv, se);
    }
    pu_cleanup(&c);
    pu_cleanup(&s);
    return out;
}

static char *slurp_file(const char *path)
{
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    char *b = calloc(1, 65536);
    CHECK(b != NULL);
    size_t n = fread(b, 1, 65535, f);
    fclose(f);
    b[n] = 0;
    return b;
}

TEST(perftest_write_bw_banner_and_json)
{
    char json[] = "/tmp/uiw-perftest-XXXXXX";
    int fd = mkstemp(json);
    CHECK(fd >= 0);
    close(fd);
    char opt[64];
    snprintf(opt, sizeof(opt), "--out_json_file=%s", json);
    const char *sopts[] = {NULL};
    const char *copts[] = {"-s", "4096", "-n", "300", "-t", "64", "--out_json", opt, NULL};
    char *srv, *cli = pair("iw_write_bw", sopts, copts, &srv);
    /* perftest's banner, as its server prints it while it waits */
    CHECK(strstr(srv, "\n************************************\n"
                      "* Waiting for client to connect... *\n"
                      "************************************\n") != NULL);
    CHECK(strstr(cli, "RDMA_Write BW Test") != NULL);
    CHECK(strstr(cli, "TX depth      : 64") != NULL); /* -t is the TX depth */
    char *j = slurp_file(json);
    if (!pu_json_valid(j))
        uiw_test_fail(__FILE__, __LINE__, "not JSON:\n%s", j);
    char test[64];
    double v;
    CHECK(pu_json_str(j, "test", 0, test, sizeof(test)));
    CHECK_STR(test, "RDMA_Write_BW_Test");
    CHECK(pu_json_num(j, "Number_of_qps", 0, &v) && v == 1);
    CHECK(pu_json_num(j, "TX_depth", 0, &v) && v == 64);
    CHECK(pu_json_num(j, "MsgSize", 0, &v) && v == 4096);
    CHECK(pu_json_num(j, "n_iterations", 0, &v) && v == 300);
    CHECK(pu_json_num(j, "BW_average", 0, &v) && v > 0);
    CHECK(pu_json_num(j, "BW_peak", 0, &v) && v > 0);
    CHECK(pu_json_num(j, "MsgRate", 0, &v) && v > 0);
    unlink(json);
    free(j);
    free(cli);
    free(srv);
}

TEST(perftest_send_lat_json_keys)
{
    char json[] = "/tmp/uiw-perftest-XXXXXX";
    int fd = mkstemp(json);
    CHECK(fd >= 0);
    close(fd);
    char opt[64];
    snprintf(opt, sizeof(opt), "--out_json_file=%s", json);
    const char *sopts[] = {NULL};
    const char *copts[] = {"-s", "64", "-n", "500", opt, NULL};
    char *srv, *cli = pair("iw_send_lat", sopts, copts, &srv);
    CHECK(strstr(cli, "Send Latency Test") != NULL);
    char *j = slurp_file(json);
    if (!pu_json_valid(j))
        uiw_test_fail(__FILE__, __LINE__, "not JSON:\n%s", j);
    char test[64];
    double v, lo, hi;
    CHECK(pu_json_str(j, "test", 0, test, sizeof(test)));
    CHECK_STR(test, "Send_Latency_Test");
    static const char *const keys[] = {"t_min",   "t_max",         "t_typical",      "t_avg",
                                       "t_stdev", "percentile_99", "percentile_99.9"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (!pu_json_num(j, keys[i], 0, &v) || v < 0)
            uiw_test_fail(__FILE__, __LINE__, "no %s in:\n%s", keys[i], j);
    CHECK(pu_json_num(j, "t_min", 0, &lo) && pu_json_num(j, "t_max", 0, &hi) && lo <= hi);
    CHECK(pu_json_num(j, "n_iterations", 0, &v) && v == 500);
    unlink(json);
    free(j);
    free(cli);
    free(srv);
}

/* -q: several QPs (connections) at once; each size's row sums them. */
TEST(perftest_several_qps)
{
    const char *sopts[] = {NULL};
    const char *copts[] = {"-q", "3", "-s", "65536", "-n", "200", "--verify", NULL};
    char *srv, *cli = pair("iw_write_bw", sopts, copts, &srv);
    CHECK(strstr(cli, "Number of qps   : 3") != NULL);
    CHECK(strstr(srv, "Number of qps   : 3") != NULL);
    /* 3 x 200 Writes in the row, verified on every QP */
    const char *row = strstr(cli, "\n 65536 ");
    CHECK(row != NULL);
    unsigned long bytes = 0, iters = 0;
    CHECK_EQ(sscanf(row, " %lu %lu", &bytes, &iters), 2);
    CHECK_EQ(iters, 600);
    CHECK(strstr(row, "verify ok") != NULL);
    CHECK(strstr(srv, "\n 65536 ") != NULL);
    free(cli);
    free(srv);
}

/* -o sets the outstanding Reads (ORD), -I inline Sends (a QP without inline room would
 * refuse them), --stats the stack's counters. */
TEST(perftest_outs_inline_stats)
{
    const char *sopts[] = {NULL};
    const char *ropts[] = {"-o", "4", "-s", "8192", "-n", "200", "--verify", NULL};
    char *srv, *cli = pair("iw_read_bw", sopts, ropts, &srv);
    CHECK(strstr(cli, "ORD / IRD       : 4 /") != NULL);
    CHECK(strstr(cli, "verify ok") != NULL);
    free(cli);
    free(srv);
    const char *sopts2[] = {"--stats", NULL};
    const char *iopts[] = {"-I", "128", "-s", "100", "-n", "1000", "--stats", "--verify", NULL};
    cli = pair("iw_send_bw", sopts2, iopts, &srv);
    CHECK(strstr(cli, "Max inline    : 128[B]") != NULL);
    CHECK(strstr(cli, "verify ok") != NULL);
    /* the client sent at least the 1000 messages' bytes; the server received them */
    const char *s = strstr(cli, "uiw stack counters (this side)");
    CHECK(s != NULL);
    unsigned long long tx = 0, fpdus = 0;
    CHECK_EQ(sscanf(strstr(s, "sent      :"), "sent      : %llu bytes in %llu FPDUs", &tx, &fpdus),
             2);
    CHECK(tx >= 1000ull * 100 && fpdus >= 1000);
    s = strstr(srv, "uiw stack counters (this side)");
    CHECK(s != NULL);
    unsigned long long rx = 0;
    CHECK_EQ(sscanf(strstr(s, "received  :"), "received  : %llu bytes", &rx), 1);
    CHECK(rx >= 1000ull * 100);
    CHECK(strstr(s, "Terminates: 0 sent, 0 received") != NULL);
    free(cli);
    free(srv);
}

/* iwperf's own dialect keeps its meanings: -t is the test, -q quiet; --qps and --inline. */
TEST(perftest_native_dialect_unchanged)
{
    char *srv;
    const char *sopts[] = {"-q", NULL};
    const char *copts[] = {"-t", "send", "-q", "--qps", "2",      "--inline", "64",
                           "-s", "64",   "-n", "300",   "--json", NULL};
    char *cli = pair("iwperf", sopts, copts, &srv);
    CHECK(pu_json_valid(cli));
    char test[16];
    double v;
    CHECK(pu_json_str(cli, "test", 0, test, sizeof(test)));
    CHECK_STR(test, "send");
    CHECK(pu_json_num(cli, "iterations", 0, &v) && v == 600);
    CHECK(strstr(srv, "Waiting for client") == NULL); /* perftest's banner is perftest's */
    free(cli);
    free(srv);
}
