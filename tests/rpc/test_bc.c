/* Backward direction (RFC 8167): the server calls the client during a call of its own. */
#include "rpc_util.h"

static void cb_dispatch(struct svc_req *rq, SVCXPRT *x)
{
    if (rq->rq_proc != 1) {
        svcerr_noproc(x);
        return;
    }
    u_int v;
    if (!svc_getargs(x, (xdrproc_t)xdr_u_int, (char *)&v)) {
        svcerr_decode(x);
        return;
    }
    v *= 2;
    svc_sendreply(x, (xdrproc_t)xdr_u_int, (char *)&v);
}

static void callback(uint32_t vers, enum uiw_rpc_brs brs, enum clnt_stat want)
{
    struct tsrv t;
    tsrv_start(&t, NULL);
    struct uiw_rpc_clnt_attr ca = {0};
    ca.xprt.vers_max = vers;
    ca.xprt.brs = brs;
    ca.no_vers_memory = true;
    CLIENT *c = tclnt(t.port, &ca);
    CHECK_EQ(uiw_rpc_clnt_bc_register(c, TCBPROG, 1, cb_dispatch), 0);
    u_int v = 21, r = 0;
    CHECK_EQ(clnt_call(c, TP_CALLBACK, (xdrproc_t)xdr_u_int, (char *)&v, (xdrproc_t)xdr_u_int,
                       (char *)&r, TMO),
             want);
    if (want == RPC_SUCCESS) {
        CHECK_EQ(r, 42);
        struct uiw_rpc_xprt_stats st;
        CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &st), 0);
        CHECK_EQ(st.calls_received, 1); /* the backward call it served */
        struct uiw_rpc_xprt_stats ss;
        CHECK_EQ(uiw_rpc_svc_xprt_stats(t.svc, &ss), 0);
        CHECK_EQ(ss.calls_sent, 1); /* the backward call it made */
    }
    clnt_destroy(c);
    tsrv_stop(&t);
}

TEST(rpc_callback_v2)
{
    callback(2, UIW_RPC_BRS_DEFAULT, RPC_SUCCESS);
}

TEST(rpc_callback_v1)
{
    callback(1, UIW_RPC_BRS_DEFAULT, RPC_SUCCESS);
}

/* A client that takes no backward calls (BRS NONE): the server cannot call it. */
TEST(rpc_callback_brs_none)
{
    callback(2, UIW_RPC_BRS_NONE, RPC_SYSTEMERROR);
}
