/* Loss below the stack: in a network namespace of its own (loopback only), iptables'
 * statistic match drops 2 % of the packets at random, and 1 GiB goes by RDMA Write and by
 * RDMA Read (1 MiB messages, CRC on), every message checked: TCP's retransmissions carry
 * it all, and no Terminate and no CRC error is seen. Needs root (network namespaces,
 * iptables): skipped otherwise, failed where root is required (UIW_ROOT_REQUIRED=1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_util.h"
#include "test.h"

static void num_is(const char *j, const char *key, double want)
{
    double v;
    if (!pu_json_num(j, key, 0, &v) || v != want)
        uiw_test_fail(__FILE__, __LINE__, "%s is not %g:\n%s", key, want, j);
}

TEST(fault_loss_rdma_write_read)
{
    uiw_test_lossy_loopback(0.02);
    const char *tests[] = {"write", "read"};
    for (int t = 0; t < 2; t++) {
        long before = uiw_test_dropped();
        const char *opts[] = {"--json", "--stats", "--crc", "-t",       tests[t], "-s",
                              "1M",     "-n",      "1024",  "--verify", NULL};
        const char *sv[] = {"-q", "--crc", NULL};
        char *srv = NULL;
        char *j = pu_pair(sv, opts, NULL, &srv, NULL);
        char v[16];
        CHECK(pu_json_str(j, "verify", 0, v, sizeof(v)));
        CHECK_STR(v, "ok");
        num_is(j, "terminates_sent", 0);
        num_is(j, "terminates_received", 0);
        num_is(j, "crc_errors", 0);
        if (uiw_test_dropped() - before < 100)
            uiw_test_fail(__FILE__, __LINE__, "%s: only %ld packets dropped", tests[t],
                          uiw_test_dropped() - before);
        free(j);
        free(srv);
    }
}
