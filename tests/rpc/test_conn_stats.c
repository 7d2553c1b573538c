/* uiw_svc_xprt_stats: the counters of the connection of the call being dispatched, as
 * opposed to the server's sum over every connection (uiw_rpc_svc_xprt_stats). */
#include <errno.h>

#include "rpc_util.h"

#define SPROG 0x2000077au

/* Procedure 1: the counters of this call's connection, read inside the dispatch. */
struct cstats {
    u_int rc, connections, calls_received, replies_sent, calls_sent, inline_rx, inline_tx, to_peer,
        rnic_ok;
};
static bool_t xdr_cstats(XDR *x, struct cstats *s)
{
    u_int *f[] = {&s->rc,           &s->connections, &s->calls_received,
                  &s->replies_sent, &s->calls_sent,  &s->inline_rx,
                  &s->inline_tx,    &s->to_peer,     &s->rnic_ok};
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
        if (!xdr_u_int(x, f[i]))
            return FALSE;
    return TRUE;
}

static void sdispatch(struct svc_req *rq, SVCXPRT *x)
{
    if (rq->rq_proc == 0) {
        svc_sendreply(x, (xdrproc_t)xdr_none, NULL);
        return;
    }
    if (rq->rq_proc != 1) {
        svcerr_noproc(x);
        return;
    }
    struct uiw_rpc_xprt_stats st;
    memset(&st, 0xA5, sizeof(st));
    struct cstats c;
    memset(&c, 0, sizeof(c));
    c.rc = (u_int)-uiw_svc_xprt_stats(x, &st);
    c.connections = (u_int)st.connections;
    c.calls_received = (u_int)st.calls_received;
    c.replies_sent = (u_int)st.replies_sent;
    c.calls_sent = (u_int)st.calls_sent;
    c.inline_rx = (u_int)st.inline_bytes_received;
    c.inline_tx = (u_int)st.inline_bytes_sent;
    c.to_peer = st.credits_granted_to_peer;
    /* the RNIC's counters of the server's context: it has carried at least this call */
    c.rnic_ok = st.rnic.rx_fpdus > 0 && st.rnic.rx_bytes >= st.inline_bytes_received;
    svc_sendreply(x, (xdrproc_t)xdr_cstats, (char *)&c);
}

static struct cstats conn_stats(CLIENT *c)
{
    struct cstats s;
    memset(&s, 0, sizeof(s));
    CHECK_EQ(clnt_call(c, 1, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_cstats, (char *)&s, TMO),
             RPC_SUCCESS);
    CHECK_EQ(s.rc, 0);
    return s;
}

static void nulls(CLIENT *c, int n)
{
    for (int i = 0; i < n; i++)
        CHECK_EQ(clnt_call(c, 0, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_none, NULL, TMO),
                 RPC_SUCCESS);
}

/* Two connections to one server: each call sees its own connection's counters (the
 * bytes it received are exactly those its client sent), not the server's sum. */
TEST(rpc_svc_xprt_stats_per_connection)
{
    struct uiw_rpc_svc_attr sa = {0};
    sa.xprt.credits = 24;
    struct tsrv t;
    tsrv_start(&t, &sa);
    CHECK_EQ(uiw_rpc_svc_register(t.svc, SPROG, 1, sdispatch), 0);
    struct uiw_rpc_clnt_attr ca = {0};
    ca.no_vers_memory = true;
    CLIENT *a = uiw_rpc_clnt_create("127.0.0.1", t.port, SPROG, 1, &ca);
    CHECK(a != NULL);
    ca.xprt.vers_max = 1;
    CLIENT *b = uiw_rpc_clnt_create("127.0.0.1", t.port, SPROG, 1, &ca);
    CHECK(b != NULL);
    nulls(a, 3);
    nulls(b, 1);
    struct cstats sa1 = conn_stats(a);
    struct cstats sb1 = conn_stats(b);
    CHECK_EQ(sa1.connections, 1);
    CHECK_EQ(sb1.connections, 1);
    CHECK_EQ(sa1.calls_received, 4); /* three NULLs and this call */
    CHECK_EQ(sa1.replies_sent, 3);
    CHECK_EQ(sb1.calls_received, 2);
    CHECK_EQ(sb1.replies_sent, 1);
    CHECK_EQ(sa1.calls_sent, 0); /* no backward calls */
    CHECK_EQ(sa1.to_peer, 24);
    CHECK(sa1.rnic_ok && sb1.rnic_ok);
    /* every byte a client sent, its connection on the server received (and vice versa,
     * but for the reply then on its way) */
    struct uiw_rpc_xprt_stats xa, xb;
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(a, &xa), 0);
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(b, &xb), 0);
    CHECK_EQ(sa1.inline_rx, xa.inline_bytes_sent);
    CHECK_EQ(sb1.inline_rx, xb.inline_bytes_sent);
    CHECK(xa.inline_bytes_sent != xb.inline_bytes_sent);
    CHECK(xa.inline_bytes_received > sa1.inline_tx);
    /* the server's sum covers both */
    struct uiw_rpc_xprt_stats all;
    CHECK_EQ(uiw_rpc_svc_xprt_stats(t.svc, &all), 0);
    CHECK_EQ(all.connections, 2);
    CHECK_EQ(all.calls_received, 6);
    CHECK_EQ(all.inline_bytes_received, xa.inline_bytes_sent + xb.inline_bytes_sent);
    /* a connection's counters only grow with its own calls */
    nulls(b, 2);
    struct cstats sa2 = conn_stats(a);
    CHECK_EQ(sa2.calls_received, 5);
    CHECK_EQ(sa2.replies_sent, 4);
    /* not one of ours */
    SVCXPRT foreign;
    memset(&foreign, 0, sizeof(foreign));
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw_svc_xprt_stats(&foreign, &st), -EINVAL);
    CHECK_EQ(uiw_svc_xprt_stats(NULL, &st), -EINVAL);
    clnt_destroy(a);
    clnt_destroy(b);
    tsrv_stop(&t);
}
