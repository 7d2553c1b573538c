/* The device's pool of bulk buffers follows its recent load: buffers taken in a burst go
 * back to the system once the leader has seen them idle for two trims, and so does the
 * memory they held; but for one of each class up to 1 MiB, the buffer the first call
 * after the pause takes (its pages in place). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpcrdma/xprt.h"
#include "test.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(UIW__ASAN) ||         \
    defined(UIW__TSAN)
#define JUDGE_RSS 0
#else
#define JUDGE_RSS 1
#endif

#define BURST 16
#define MIB   (1u << 20)
#define CLS7  7 /* 8 KiB << 7: 1 MiB */
#define CLS8  8 /* 2 MiB */

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    CHECK(f != NULL);
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kib = atol(line + 6);
    fclose(f);
    return kib;
}

static bool never(void *arg)
{
    (void)arg;
    return false;
}

static uint32_t pooled(struct uiw__rr_dev *d, int c)
{
    uiw__lock_take(&d->pool_lock);
    uint32_t n = d->bulk_count[c];
    uiw__lock_give(&d->pool_lock);
    return n;
}

TEST(bulk_pool_gives_back_a_burst)
{
    struct uiw__rr_dev_attr da = {.inline_size = 4096, .max_msg = MIB, .max_ddp = 2 * MIB};
    struct uiw__rr_dev *d = uiw__rr_dev_open(&da);
    CHECK(d != NULL);
    long before = rss_kib();
    struct uiw__rr_bulk *b[BURST];
    for (int i = 0; i < BURST; i++) {
        b[i] = uiw__rr_bulk_get(d, MIB);
        CHECK(b[i] != NULL);
        memset(b[i]->p, 0x5a, MIB); /* resident, as a WRITE's data makes it */
    }
    for (int i = 0; i < BURST; i++)
        uiw__rr_bulk_put(d, b[i]);
    CHECK_EQ(pooled(d, CLS7), (uint32_t)BURST);
    struct uiw__rr_bulk *big = uiw__rr_bulk_get(d, 2 * MIB);
    CHECK(big != NULL);
    uiw__rr_bulk_put(d, big);
    CHECK_EQ(pooled(d, CLS8), 1u);
    long burst = rss_kib();
    /* idle, led by this thread for two trims and a bit (one every 5 s) */
    CHECK_EQ(uiw__rr_dev_wait(d, never, NULL, uiw__rr_now_ns() + 11000000000ull), -ETIMEDOUT);
    /* one buffer of 1 MiB stays, none of 2 MiB; the next 1 MiB call takes the one kept,
     * its pages as they were */
    CHECK_EQ(pooled(d, CLS7), 1u);
    CHECK_EQ(pooled(d, CLS8), 0u);
    struct uiw__rr_bulk *kept = uiw__rr_bulk_get(d, MIB);
    CHECK(kept != NULL);
    CHECK_EQ(pooled(d, CLS7), 1u);
    CHECK_EQ((int)kept->p[MIB - 1], 0x5a);
    uiw__rr_bulk_put(d, kept);
    long after = rss_kib();
    fprintf(stderr, "bulk pool: RSS %ld KiB before, %ld after a burst of %d MiB, %ld idle\n",
            before, burst, BURST, after);
    if (JUDGE_RSS)
        CHECK(after < burst - (BURST - 3) * 1024);
    /* a steady load keeps its buffers: taken again within every trim */
    for (int i = 0; i < 2; i++) {
        b[i] = uiw__rr_bulk_get(d, MIB);
        CHECK(b[i] != NULL);
    }
    uiw__rr_bulk_trim(d);
    uiw__rr_bulk_put(d, b[0]);
    uiw__rr_bulk_put(d, b[1]);
    uiw__rr_bulk_trim(d);
    CHECK_EQ(pooled(d, CLS7), 2u);
    uiw__rr_dev_close(d);
}
