/* An idle server sleeps: what its threads wake up for while no call comes. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rpc_util.h"

enum { MAX_THREADS = 64 };

/* The voluntary context switches (sleeps, each but the last one ended by a wake-up) of
 * every thread of this process so far, by thread id. Returns the count of threads. */
static int sleeps_by_thread(long tid[MAX_THREADS], unsigned long long n[MAX_THREADS])
{
    DIR *d = opendir("/proc/self/task");
    CHECK(d != NULL);
    int k = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && k < MAX_THREADS) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], line[128];
        snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue; /* a thread that ended meanwhile */
        unsigned long long v;
        while (fgets(line, sizeof(line), f))
            if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1) {
                tid[k] = atol(e->d_name);
                n[k++] = v;
            }
        fclose(f);
    }
    closedir(d);
    return k;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* A server of two threads with one client connected and idle: once no call came for a
 * few of its leader's slices, the leader sleeps on its completion channel alone, leaving
 * the sockets to the RNIC's progress thread, which then sleeps on them too, and the
 * leader and the other worker sleep as long as the server's workers may (they look at
 * their stop flag ten times a second). While the leader slept on the sockets, that
 * thread looked every 10 ms whether it was still there; while the leader and the worker
 * slept in slices of 50 ms, each woke 20 times a second. So no thread of this process
 * wakes more than some 10 times in a second of idle, and all of them together some 30
 * times (150 before). */
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
    long tid0[MAX_THREADS], tid1[MAX_THREADS];
    unsigned long long n0[MAX_THREADS], n1[MAX_THREADS];
    int k0 = sleeps_by_thread(tid0, n0);
    sleep_ms(1000);
    int k1 = sleeps_by_thread(tid1, n1);
    CHECK_EQ(clnt_call(c, TP_NULL, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_none, NULL, TMO),
             RPC_SUCCESS);
    clnt_destroy(c);
    tsrv_stop(&t);
    unsigned long long total = 0, most = 0;
    for (int i = 0; i < k1; i++)
        for (int j = 0; j < k0; j++)
            if (tid1[i] == tid0[j]) {
                unsigned long long w = n1[i] - n0[j];
                total += w;
                most = w > most ? w : most;
            }
    if (most > 15 || total >= 60)
        uiw_test_fail(__FILE__, __LINE__,
                      "%llu wake-ups in 1 s of idle, %llu in the busiest thread", total, most);
}
