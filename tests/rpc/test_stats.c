/* The transport's counters: exact once the client holds a reply. */
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
