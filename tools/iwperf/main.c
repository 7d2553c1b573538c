/*
 * iwperf: perftest-style bandwidth and latency over uiw RDMA (write, read, send), and the
 * same measurements over a raw TCP connection (--tcp) as the baseline.
 */
#include "iwperf.h"

#include <signal.h>

int main(int argc, char **argv)
{
    struct iwp_opts o;
    int rc = iwp_parse_args(&o, argc, argv);
    if (rc != 0)
        return rc > 0 ? 0 : 2; /* help or version printed; a usage error */
    signal(SIGPIPE, SIG_IGN);
    return o.tcp ? iwp_tcp_run(&o) : iwp_rdma_run(&o);
}
