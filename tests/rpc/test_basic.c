/* Calls on loopback: NULL in each version, arguments and results inline. */
#include "rpc_util.h"

static void null_call(uint32_t cvers_max, uint32_t svers_max, uint32_t want)
{
    struct uiw_rpc_svc_attr sa = {0};
    sa.xprt.vers_max = svers_max;
    struct tsrv t;
    tsrv_start(&t, &sa);
    struct uiw_rpc_clnt_attr ca = {0};
    ca.xprt.vers_max = cvers_max;
    ca.no_vers_memory = true;
    CLIENT *c = tclnt(t.port, &ca);
    CHECK_EQ(clnt_call(c, TP_NULL, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_none, NULL, TMO),
             RPC_SUCCESS);
    struct uiw_rpc_conn_info ci;
    CHECK_EQ(uiw_rpc_clnt_info(c, &ci), 0);
    CHECK_EQ(ci.vers, want);
    struct tpair p = {40, 2};
    u_int sum = 0;
    CHECK_EQ(clnt_call(c, TP_ADD, (xdrproc_t)xdr_tpair, (char *)&p, (xdrproc_t)xdr_u_int,
                       (char *)&sum, TMO),
             RPC_SUCCESS);
    CHECK_EQ(sum, 42);
    clnt_destroy(c);
    tsrv_stop(&t);
}

TEST(rpc_null_v2)
{
    null_call(2, 2, 2);
}

TEST(rpc_null_v1_client)
{
    null_call(1, 2, 1);
}

TEST(rpc_null_v1_server)
{
    null_call(2, 1, 1);
}
