/* Lost connections: retransmission with the same XID on a new connection answered from
 * the duplicate-reply cache, timeouts, a server that went away. */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "rpc_util.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void lost(uint32_t vers)
{
    struct tsrv t;
    tsrv_start(&t, NULL);
    struct uiw_rpc_clnt_attr ca = {0};
    ca.xprt.vers_max = vers;
    ca.no_vers_memory = true;
    CLIENT *c = tclnt(t.port, &ca);
    u_int v = 5, n = 0;
    /* the server runs the call, then drops the connection before its reply goes out */
    CHECK_EQ(clnt_call(c, TP_DROP, (xdrproc_t)xdr_u_int, (char *)&v, (xdrproc_t)xdr_u_int,
                       (char *)&n, TMO),
             RPC_SUCCESS);
    CHECK_EQ(n, 1);             /* the first execution's reply */
    CHECK_EQ(tsrv_count(), 1u); /* ran once */
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &st), 0);
    CHECK_EQ(st.connections, 2); /* one reconnection */
    CHECK(st.retransmits >= 1);
    /* the transport's counters, over both connections: the call went twice, its
     * retransmission was answered from the cache */
    struct uiw_rpc_xprt_stats xc, xs;
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &xc), 0);
    CHECK_EQ(xc.connections, 2);
    CHECK_EQ(xc.calls_sent, 2);
    CHECK_EQ(xc.retransmits, 1);
    CHECK_EQ(xc.replies_received, 1);
    CHECK(xc.rnic.tx_fpdus >= 2);
    /* the server's counters are exact once the client holds the reply: its connection
     * was counted before the client could see it accepted, its reply before it went */
    CHECK_EQ(uiw_rpc_svc_xprt_stats(t.svc, &xs), 0);
    CHECK_EQ(xs.connections, 2);
    CHECK_EQ(xs.calls_received, 2);
    CHECK_EQ(xs.drc_hits, 1);
    CHECK_EQ(xs.replies_sent, 1); /* the first reply was never sent */
    /* and the connection works on */
    CHECK_EQ(
        clnt_call(c, TP_COUNT, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_u_int, (char *)&n, TMO),
        RPC_SUCCESS);
    CHECK_EQ(n, 2);
    clnt_destroy(c);
    tsrv_stop(&t);
}

static bool count_cached(rpcproc_t proc)
{
    return proc == TP_COUNT;
}

static bool drop_cached(rpcproc_t proc)
{
    return proc == TP_DROP;
}

/* TP_DROP's call sent again on a new connection after its first run: the runs the server
 * made, and its cache's hits. */
static void drop_again(bool (*cached)(rpcproc_t), u_int runs, uint64_t hits)
{
    struct tsrv t;
    tsrv_start_cached(&t, NULL, cached);
    struct uiw_rpc_clnt_attr ca = {0};
    ca.no_vers_memory = true;
    CLIENT *c = tclnt(t.port, &ca);
    u_int v = 5, n = 0;
    CHECK_EQ(clnt_call(c, TP_DROP, (xdrproc_t)xdr_u_int, (char *)&v, (xdrproc_t)xdr_u_int,
                       (char *)&n, TMO),
             RPC_SUCCESS);
    CHECK_EQ(n, runs); /* the reply of the last run */
    CHECK_EQ(tsrv_count(), runs);
    struct uiw_rpc_xprt_stats xs;
    CHECK_EQ(uiw_rpc_svc_xprt_stats(t.svc, &xs), 0);
    CHECK_EQ(xs.connections, 2);
    CHECK_EQ(xs.calls_received, 2);
    CHECK_EQ(xs.drc_hits, hits);
    clnt_destroy(c);
    tsrv_stop(&t);
}

/* A procedure the program says the cache does not keep (as uiw-nfsd says of NFSv3's
 * GETATTR and of every NFSv4.1 COMPOUND) runs again when its call comes again; one it
 * says it keeps is answered from the cache. */
TEST(rpc_drc_keeps_only_what_the_program_says)
{
    drop_again(count_cached, 2, 0);
    drop_again(drop_cached, 1, 1);
}

TEST(rpc_lost_connection_drc_v2)
{
    lost(2);
}

TEST(rpc_lost_connection_drc_v1)
{
    lost(1);
}

TEST(rpc_no_reconnect)
{
    struct tsrv t;
    tsrv_start(&t, NULL);
    struct uiw_rpc_clnt_attr ca = {0};
    ca.no_reconnect = true;
    CLIENT *c = tclnt(t.port, &ca);
    u_int v = 5, n = 0;
    CHECK_EQ(clnt_call(c, TP_DROP, (xdrproc_t)xdr_u_int, (char *)&v, (xdrproc_t)xdr_u_int,
                       (char *)&n, TMO),
             RPC_CANTRECV);
    clnt_destroy(c);
    tsrv_stop(&t);
}

TEST(rpc_timeout)
{
    struct tsrv t;
    tsrv_start(&t, NULL);
    CLIENT *c = tclnt(t.port, NULL);
    u_int ms = 3000;
    struct timeval half = {0, 500000};
    double t0 = now_s();
    CHECK_EQ(
        clnt_call(c, TP_SLEEP, (xdrproc_t)xdr_u_int, (char *)&ms, (xdrproc_t)xdr_none, NULL, half),
        RPC_TIMEDOUT);
    double dt = now_s() - t0;
    CHECK(dt >= 0.45 && dt < 2.0);
    struct rpc_err e;
    clnt_geterr(c, &e);
    CHECK_EQ(e.re_status, RPC_TIMEDOUT);
    /* the next call goes (on a new connection: the old one was reset for the STags it
     * advertised) */
    CHECK_EQ(clnt_call(c, TP_NULL, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_none, NULL, TMO),
             RPC_SUCCESS);
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &st), 0);
    CHECK_EQ(st.timeouts, 1);
    clnt_destroy(c);
    tsrv_stop(&t);
}

TEST(rpc_server_gone)
{
    struct tsrv t;
    tsrv_start(&t, NULL);
    CLIENT *c = tclnt(t.port, NULL);
    CHECK_EQ(clnt_call(c, TP_NULL, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_none, NULL, TMO),
             RPC_SUCCESS);
    tsrv_stop(&t);
    struct timeval two = {2, 0};
    double t0 = now_s();
    enum clnt_stat st =
        clnt_call(c, TP_NULL, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_none, NULL, two);
    double dt = now_s() - t0;
    CHECK(st != RPC_SUCCESS);
    CHECK(dt < 4.0);
    clnt_destroy(c);
}

/* Asynchronous calls that time out while two threads drive the client (each polls, as
 * the threads of an application without a progress thread do): each call's callback
 * runs exactly once, with RPC_TIMEDOUT, whichever thread finds it expired. */
#define EXPIRING 8

struct expiring {
    atomic_int runs;
    atomic_int timedout;
};

static void expiring_done(CLIENT *clnt, void *arg, enum clnt_stat stat, const struct rpc_err *err)
{
    (void)clnt;
    (void)err;
    struct expiring *x = arg;
    atomic_fetch_add(&x->runs, 1);
    if (stat == RPC_TIMEDOUT)
        atomic_fetch_add(&x->timedout, 1);
}

struct driver {
    CLIENT *c;
    atomic_bool stop;
};

static void *drive(void *arg)
{
    struct driver *d = arg;
    while (!atomic_load(&d->stop))
        uiw_rpc_clnt_poll(d->c, 5);
    return NULL;
}

TEST(rpc_async_timeouts_two_drivers)
{
    struct tsrv t;
    tsrv_start(&t, NULL);
    CLIENT *c = tclnt(t.port, NULL);
    static struct expiring x[EXPIRING];
    u_int ms = 500;
    struct timeval short_tmo = {0, 100000};
    for (int i = 0; i < EXPIRING; i++) {
        atomic_init(&x[i].runs, 0);
        atomic_init(&x[i].timedout, 0);
        CHECK_EQ(uiw_rpc_call_async(c, TP_SLEEP, (xdrproc_t)xdr_u_int, &ms, (xdrproc_t)xdr_none,
                                    NULL, short_tmo, NULL, expiring_done, &x[i]),
                 0);
    }
    struct driver d = {.c = c};
    atomic_init(&d.stop, false);
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_create(&th[i], NULL, drive, &d), 0);
    double t0 = now_s();
    for (int i = 0; i < EXPIRING; i++)
        while (atomic_load(&x[i].runs) == 0 && now_s() - t0 < 10)
            usleep(1000);
    usleep(300000); /* time for a second run, if there were one */
    atomic_store(&d.stop, true);
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < EXPIRING; i++) {
        CHECK_EQ(atomic_load(&x[i].runs), 1);
        CHECK_EQ(atomic_load(&x[i].timedout), 1);
    }
    clnt_destroy(c);
    tsrv_stop(&t);
}
