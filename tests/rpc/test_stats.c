/* The transport's counters: exact once the client holds a reply. */
#include <time.h>

#include "rpc_util.h"
#include "rpcrdma/xprt.h"

/* The listener's thread is descheduled between accepting a connection and listing it for
 * polling, while a poller woken by the connection's CQ answers the client's calls: the
 * server's counters still hold the connection and its calls as soon as the client holds
 * the replies (they once read 0 connections here). */
TEST(rpc_stats_exact_while_listener_lags)
{
    uiw__rr_accept_pause_ns = 300000000u; /* 300 ms */
    struct tsrv t;
    tsrv_start(&t, NULL);
    CLIENT *c = tclnt(t.port, NULL);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(clnt_call(c, TP_NULL, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_none, NULL, TMO),
                 RPC_SUCCESS);
    struct uiw_rpc_xprt_stats xs;
    CHECK_EQ(uiw_rpc_svc_xprt_stats(t.svc, &xs), 0);
    CHECK_EQ(xs.connections, 1);
    CHECK_EQ(xs.calls_received, 3);
    CHECK_EQ(xs.replies_sent, 3);
    clnt_destroy(c);
    tsrv_stop(&t);
    uiw__rr_accept_pause_ns = 0;
}

/* Connections come and go: every one counted, and nothing of a closed one lost. */
TEST(rpc_stats_keep_closed_connections)
{
    struct tsrv t;
    tsrv_start(&t, NULL);
    for (unsigned i = 1; i <= 4; i++) {
        CLIENT *c = tclnt(t.port, NULL);
        CHECK_EQ(clnt_call(c, TP_NULL, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_none, NULL, TMO),
                 RPC_SUCCESS);
        struct uiw_rpc_xprt_stats xs;
        CHECK_EQ(uiw_rpc_svc_xprt_stats(t.svc, &xs), 0);
        CHECK_EQ(xs.connections, i);
        CHECK_EQ(xs.calls_received, i);
        CHECK_EQ(xs.replies_sent, i);
        clnt_destroy(c);
    }
    tsrv_stop(&t);
}

/* Poll a server's counters until n connections have ended (the server learns of a close
 * on its own threads): bounded, the counters are then checked. */
static void ended(struct tsrv *t, struct uiw_rpc_xprt_stats *xs, uint64_t n)
{
    for (int i = 0; i < 10000; i++) {
        CHECK_EQ(uiw_rpc_svc_xprt_stats(t->svc, xs), 0);
        if (xs->closed + xs->lost >= n)
            return;
        struct timespec ms = {0, 1000000L};
        nanosleep(&ms, NULL);
    }
}

/* clnt_destroy closes in order: no Terminate on the wire (it once ended every connection
 * with one, Remote Operation / Unspecified, before the FIN), and the server sees an
 * orderly disconnect. */
TEST(rpc_destroy_closes_in_order)
{
    struct tsrv t;
    tsrv_start(&t, NULL);
    for (unsigned i = 1; i <= 2; i++) {
        struct uiw_rpc_clnt_attr ca = {0};
        ca.xprt.vers_max = i; /* Version One, then Two */
        ca.no_vers_memory = true;
        CLIENT *c = tclnt(t.port, &ca);
        CHECK_EQ(clnt_call(c, TP_NULL, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_none, NULL, TMO),
                 RPC_SUCCESS);
        struct uiw_rpc_xprt_stats xc;
        CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &xc), 0);
        CHECK_EQ(xc.closed + xc.lost, 0u);
        clnt_destroy(c);
        struct uiw_rpc_xprt_stats xs;
        ended(&t, &xs, i);
        CHECK_EQ(xs.connections, i);
        CHECK_EQ(xs.closed, i);
        CHECK_EQ(xs.lost, 0u);
        CHECK_EQ(xs.rnic.terminates_received, 0u);
        CHECK_EQ(xs.rnic.terminates_sent, 0u);
    }
    tsrv_stop(&t);
}

/* A server going away closes its connections in order too: its client sees the close, no
 * Terminate, and goes on with a new connection when it calls again. */
TEST(rpc_svc_destroy_closes_in_order)
{
    struct tsrv t;
    tsrv_start(&t, NULL);
    CLIENT *c = tclnt(t.port, NULL);
    CHECK_EQ(clnt_call(c, TP_NULL, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_none, NULL, TMO),
             RPC_SUCCESS);
    tsrv_stop(&t);
    struct uiw_rpc_xprt_stats xc;
    for (int i = 0; i < 10000; i++) {
        uiw_rpc_clnt_poll(c, 1); /* the client learns of it when driven */
        CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &xc), 0);
        if (xc.closed + xc.lost >= 1)
            break;
    }
    CHECK_EQ(xc.closed, 1u);
    CHECK_EQ(xc.lost, 0u);
    CHECK_EQ(xc.rnic.terminates_received, 0u);
    CHECK_EQ(xc.rnic.terminates_sent, 0u);
    clnt_destroy(c);
}

/* Calls still queued when the server is destroyed hold their connection until they run:
 * the destroy runs them while it waits for the connections to go (it once waited its
 * whole 10 s bound for them, then freed the listener under them). */
static void counted(CLIENT *clnt, void *arg, enum clnt_stat stat, const struct rpc_err *err)
{
    (void)clnt;
    (void)stat;
    (void)err;
    (*(int *)arg)++;
}

TEST(rpc_svc_destroy_runs_queued_calls)
{
    struct tsrv t;
    struct uiw_rpc_svc_attr sa = {.nthreads = 1}; /* one runs, the others wait */
    tsrv_start(&t, &sa);
    CLIENT *c = tclnt(t.port, NULL);
    u_int ms = 200;
    int ended = 0;
    struct timeval long_tmo = {60, 0};
    for (int i = 0; i < 4; i++)
        CHECK_EQ(uiw_rpc_call_async(c, TP_SLEEP, (xdrproc_t)xdr_u_int, &ms, (xdrproc_t)xdr_none,
                                    NULL, long_tmo, NULL, counted, &ended),
                 0);
    /* the server's one thread runs the first; the others are taken in as it stops */
    struct uiw_rpc_xprt_stats xs = {0};
    for (int i = 0; i < 5000 && xs.calls_received < 1; i++) {
        uiw_rpc_clnt_poll(c, 1);
        CHECK_EQ(uiw_rpc_svc_xprt_stats(t.svc, &xs), 0);
    }
    CHECK(xs.calls_received >= 1);
    CHECK_EQ(ended, 0);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    tsrv_stop(&t);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double took = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    CHECK(took < 5.0); /* four 200 ms calls; the bound it once waited out is 10 s */
    clnt_destroy(c);
}

/* The abortive close stays for errors: a server dropping a connection (uiw_svc_disconnect)
 * sends a Terminate, and both sides count the connection lost. */
TEST(rpc_disconnect_is_abortive)
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
    struct uiw_rpc_xprt_stats xs, xc;
    ended(&t, &xs, 1);
    /* the connection counts as lost as its Terminate is handed to the RNIC, which counts it
     * when it goes out: wait for that too (bounded; a Terminate never sent still fails) */
    for (int i = 0; i < 5000 && xs.rnic.terminates_sent == 0; i++) {
        struct timespec ms = {0, 1000000L};
        nanosleep(&ms, NULL);
        CHECK_EQ(uiw_rpc_svc_xprt_stats(t.svc, &xs), 0);
    }
    CHECK_EQ(xs.lost, 1u);
    CHECK_EQ(xs.closed, 0u);
    CHECK_EQ(xs.rnic.terminates_sent, 1u);
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &xc), 0);
    CHECK_EQ(xc.lost, 1u);
    clnt_destroy(c);
    tsrv_stop(&t);
}

/* Connections come and go while the server's poller sleeps on its completion channel
 * (no spin): a connection's last completions can wake it after it took that connection
 * off its list and the listener's thread freed it. Every connection is counted and every
 * call answered; a read of freed memory, should the timing line up, fails the sanitizer
 * builds. */
TEST(rpc_churn_with_sleeping_poller)
{
    struct uiw_rpc_svc_attr sa = {0};
    sa.xprt.spin_us = -1;
    struct tsrv t;
    tsrv_start(&t, &sa);
    struct uiw_rpc_clnt_attr ca = {0};
    ca.xprt.spin_us = -1;
    const unsigned rounds = 40;
    for (unsigned i = 0; i < rounds; i++) {
        CLIENT *c = tclnt(t.port, &ca);
        CHECK_EQ(clnt_call(c, TP_NULL, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_none, NULL, TMO),
                 RPC_SUCCESS);
        clnt_destroy(c);
    }
    struct uiw_rpc_xprt_stats xs;
    ended(&t, &xs, rounds);
    CHECK_EQ(xs.connections, rounds);
    CHECK_EQ(xs.calls_received, rounds);
    CHECK_EQ(xs.replies_sent, rounds);
    CHECK_EQ(xs.closed + xs.lost, rounds);
    tsrv_stop(&t);
}
