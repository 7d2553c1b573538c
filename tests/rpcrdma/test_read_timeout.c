/* The server's read timeout: which RDMA Reads count as late. */
#include <stdint.h>

#include "rpcrdma/xprt.h"
#include "test.h"

/* The listener reads the clock once, then walks every call; a worker may post a call's
 * Reads after that, so its start is later than the listener's now. Such a call is not
 * late (unsigned now - start once wrapped to 2^64 - a few ns and tore down healthy
 * connections on a loaded machine). */
TEST(read_timeout_start_after_now_is_not_late)
{
    const uint64_t lim = 30000000000ull; /* 30 s */
    CHECK(!uiw__rr_read_overdue(1000, 1001, lim));
    CHECK(!uiw__rr_read_overdue(1000, UINT64_MAX, lim));
    CHECK(!uiw__rr_read_overdue(1000, 1000, lim));
}

TEST(read_timeout_late_only_beyond_the_limit)
{
    const uint64_t lim = 30000000000ull, t0 = 5000000000ull;
    CHECK(!uiw__rr_read_overdue(t0 + lim, t0, lim));
    CHECK(uiw__rr_read_overdue(t0 + lim + 1, t0, lim));
    CHECK(uiw__rr_read_overdue(UINT64_MAX, 0, lim));
}
