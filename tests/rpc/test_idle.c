/* An idle server sleeps: what its threads wake up for while no call comes. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rpc_util.h"

/* The voluntary context switches of every thread of this process so far (each one a
 * sleep, so each but the last ended in a wake-up). */
static unsigned long long sleeps_so_far(void)
{
    DIR *d = opendir("/proc/self/task");
    CHECK(d != NULL);
    unsigned long long n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], line[128];
        snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue; /* a thread that ended meanwhile */
        unsigned long long v;
        while (fgets(line, sizeof(line), f))
            if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1)
                n += v;
        fclose(f);
    }
    closedir(d);
    return n;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* A server of two threads with one client connected and idle: once no call came for a
 * few of its leader's slices, the leader sleeps on its completion channel alone and
 * leaves the sockets to the RNIC's progress thread, which then sleeps on them too. While
 * the leader slept on the sockets itself, that thread looked every 10 ms whether it was
 * still there: some 150 wake-ups a second in this process (the progress thread's 100,
 * the two workers' slices, the listener's), against some 50 since. */
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
    unsigned long long before = sleeps_so_far();
    sleep_ms(1000);
    unsigned long long woke = sleeps_so_far() - before;
    CHECK_EQ(clnt_call(c, TP_NULL, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_none, NULL, TMO),
             RPC_SUCCESS);
    clnt_destroy(c);
    tsrv_stop(&t);
    if (woke >= 100)
        uiw_test_fail(__FILE__, __LINE__, "%llu wake-ups in 1 s of idle", woke);
}
