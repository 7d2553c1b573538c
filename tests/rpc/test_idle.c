/* An idle server sleeps: what its threads wake up for while no call comes. */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "rpc_util.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* A server of two threads with one client connected and idle: once no call came for a
 * few of its leader's slices, the leader sleeps on its completion channel and its wake fd
 * alone, up to a second at a time, leaving the sockets to the RNIC's progress thread,
 * which then sleeps on them too, and the other worker sleeps as long. The listener's
 * thread looks at its connection's timeouts once a second. No thread wakes five times in
 * a second of idle, but under ThreadSanitizer its background thread. While the leader
 * slept on the sockets, the progress thread looked every 10 ms whether it was still
 * there (150 wake-ups a second in this process); while the leader and the worker slept
 * in slices of 50 ms, or until their stop flag's next look, each woke 10 to 20 times a
 * second (30 to 50 in all); while the listener looked at its stop flag every 100 ms, it
 * woke 10 times. */
TEST(rpc_idle_server_sleeps)
{
    struct uiw_rpc_svc_attr a;
    memset(&a, 0, sizeof(a));
    a.nthreads = 2;
    struct tsrv t;
    tsrv_start(&t, &a);
    CLIENT *c = tclnt(t.port, NULL);
    CHECK_EQ(clnt_call(c, TP_NULL, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_none, NULL, TMO),
             RPC_SUCCESS);
    sleep_ms(500); /* the idle slices pass */
    struct uiw_test_wakeups w = uiw_test_wakeups_over(0, 1000, 4);
    CHECK_EQ(clnt_call(c, TP_NULL, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_none, NULL, TMO),
             RPC_SUCCESS);
    clnt_destroy(c);
    tsrv_stop(&t);
    if (w.most > 15 || w.busy > UIW_TEST_TSAN || w.total >= 40)
        uiw_test_fail(__FILE__, __LINE__,
                      "%llu wake-ups in 1 s of idle, %llu in the busiest thread, %d threads "
                      "woke 5 times or more",
                      w.total, w.most, w.busy);
}

static void *serve(void *arg)
{
    return (void *)(intptr_t)uiw_rpc_svc_run(arg);
}

/* uiw_rpc_svc_stop ends uiw_rpc_svc_run of an idle server at once: its leader sleeps on
 * its channel and its wake fd, which the stop writes, and the first worker to leave wakes
 * the others, which may sleep a second while the server idles. */
TEST(rpc_idle_server_stops_at_once)
{
    struct uiw_rpc_svc_attr a;
    memset(&a, 0, sizeof(a));
    a.nthreads = 3;
    struct uiw_rpc_svc *svc = uiw_rpc_svc_create(&a);
    CHECK(svc != NULL);
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, serve, svc), 0);
    sleep_ms(600); /* idle: the leader sleeps as an idle one, the workers as long */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uiw_rpc_svc_stop(svc);
    void *rc;
    CHECK_EQ(pthread_join(th, &rc), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK_EQ((intptr_t)rc, 0);
    CHECK_EQ(uiw_rpc_svc_destroy(svc), 0);
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    /* well within the idle sleeps' second */
    if (ms >= 500)
        uiw_test_fail(__FILE__, __LINE__, "uiw_rpc_svc_run returned %ld ms after the stop", ms);
}
