/* Version Two transport properties on loopback: CONNPROP at connection, REQPROP answered
 * by RESPROP (done, other, rejected), UPDPROP, experimental properties, and the limits
 * of the API. */
#include <errno.h>
#include <stdlib.h>

#include <uiw/wire.h>

#include "rpc_util.h"

#define XID_SRV 0xFFFFFF10u
#define XID_ABS 0xFFFFFF20u

TEST(rpc_props_connprop_and_reqprop)
{
    struct uiw_rpc_svc_attr sa = {0};
    sa.xprt.nxprops = 1;
    sa.xprt.xprops[0].which = XID_SRV;
    sa.xprt.xprops[0].len = 8;
    memcpy(sa.xprt.xprops[0].data, "uiw-test", 8);
    struct tsrv t;
    tsrv_start(&t, &sa);
    struct uiw_rpc_clnt_attr ca = {0};
    ca.no_vers_memory = true;
    ca.xprt.ddp_threshold = 1u << 30;
    CLIENT *c = tclnt(t.port, &ca);
    struct uiw_rpc_conn_info ci;
    CHECK_EQ(uiw_rpc_clnt_info(c, &ci), 0);
    CHECK_EQ(ci.vers, 2);
    CHECK(ci.peer_connprop);
    CHECK_EQ(ci.peer_rbsiz, 4096);
    CHECK_EQ(ci.peer_brs, UIW_RDMA2_BKREQSUP_INLINE);
    CHECK_EQ(ci.inline_send, 4096);
    char buf[16];
    CHECK_EQ(uiw_rpc_clnt_peer_xprop(c, XID_SRV, buf, sizeof(buf)), 8);
    CHECK_MEM(buf, "uiw-test", 8);
    CHECK_EQ(uiw_rpc_clnt_peer_xprop(c, XID_ABS, buf, sizeof(buf)), -ENOENT);

    /* a smaller receive size: done; calls now become long above it */
    struct uiw_rpc_prop_req r = {UIW_RPCRDMA_PROP_RBSIZ, 2048, 99};
    CHECK_EQ(uiw_rpc_clnt_request_props(c, &r, 1, 5000), 0);
    CHECK_EQ(r.result, UIW_RPC_PROP_DONE);
    CHECK_EQ(uiw_rpc_clnt_info(c, &ci), 0);
    CHECK_EQ(ci.peer_rbsiz, 2048);
    CHECK_EQ(ci.inline_send, 2048);
    u_int n = 3000, crc = 0;
    struct tbuf a = {n, malloc(n)};
    memset(a.val, 0x5A, n);
    CHECK_EQ(clnt_call(c, TP_SINK, (xdrproc_t)xdr_tbuf, (char *)&a, (xdrproc_t)xdr_u_int,
                       (char *)&crc, TMO),
             RPC_SUCCESS);
    CHECK_EQ(crc, uiw_crc32c(0, a.val, n));
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &st), 0);
    CHECK_EQ(st.long_calls, 1);

    /* more than its buffers hold: another value (what it has) */
    r = (struct uiw_rpc_prop_req){UIW_RPCRDMA_PROP_RBSIZ, 8192, 99};
    CHECK_EQ(uiw_rpc_clnt_request_props(c, &r, 1, 5000), 0);
    CHECK_EQ(r.result, UIW_RPC_PROP_OTHER);
    CHECK_EQ(r.value, 4096);
    CHECK_EQ(uiw_rpc_clnt_info(c, &ci), 0);
    CHECK_EQ(ci.peer_rbsiz, 4096);
    /* and again: nothing left to give */
    r = (struct uiw_rpc_prop_req){UIW_RPCRDMA_PROP_RBSIZ, 8192, 99};
    CHECK_EQ(uiw_rpc_clnt_request_props(c, &r, 1, 5000), 0);
    CHECK_EQ(r.result, UIW_RPC_PROP_REJECTED);

    /* an experimental property it announced: not changed on request */
    r = (struct uiw_rpc_prop_req){XID_SRV, 1, 99};
    CHECK_EQ(uiw_rpc_clnt_request_props(c, &r, 1, 5000), 0);
    CHECK_EQ(r.result, UIW_RPC_PROP_REJECTED);
    /* one it did not announce may not be asked for (5.3.1) */
    r = (struct uiw_rpc_prop_req){XID_ABS, 1, 99};
    CHECK_EQ(uiw_rpc_clnt_request_props(c, &r, 1, 5000), -EPERM);

    /* UPDPROP of ours: the server sees it */
    struct uiw_rpc_prop_req u = {UIW_RPCRDMA_PROP_BRS, UIW_RDMA2_BKREQSUP_GENL, 0};
    CHECK_EQ(uiw_rpc_clnt_update_props(c, &u, 1), 0);
    struct tinfo ti;
    CHECK_EQ(
        clnt_call(c, TP_INFO, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_tinfo, (char *)&ti, TMO),
        RPC_SUCCESS);
    CHECK_EQ(ti.vers, 2);
    CHECK_EQ(ti.peer_brs, UIW_RDMA2_BKREQSUP_GENL);
    CHECK_EQ(ti.peer_rbsiz, 4096);
    /* our receive size only grows up to our buffers, and never shrinks unasked */
    u = (struct uiw_rpc_prop_req){UIW_RPCRDMA_PROP_RBSIZ, 8192, 0};
    CHECK_EQ(uiw_rpc_clnt_update_props(c, &u, 1), -EINVAL);
    u = (struct uiw_rpc_prop_req){UIW_RPCRDMA_PROP_RBSIZ, 2048, 0};
    CHECK_EQ(uiw_rpc_clnt_update_props(c, &u, 1), -EINVAL);
    free(a.val);
    clnt_destroy(c);
    tsrv_stop(&t);
}

TEST(rpc_props_not_in_v1)
{
    struct tsrv t;
    tsrv_start(&t, NULL);
    struct uiw_rpc_clnt_attr ca = {0};
    ca.xprt.vers_max = 1;
    CLIENT *c = tclnt(t.port, &ca);
    struct uiw_rpc_prop_req r = {UIW_RPCRDMA_PROP_RBSIZ, 2048, 0};
    CHECK_EQ(uiw_rpc_clnt_request_props(c, &r, 1, 1000), -EPROTONOSUPPORT);
    CHECK_EQ(uiw_rpc_clnt_update_props(c, &r, 1), -EPROTONOSUPPORT);
    struct uiw_rpc_conn_info ci;
    CHECK_EQ(uiw_rpc_clnt_info(c, &ci), 0);
    CHECK_EQ(ci.vers, 1);
    CHECK(!ci.peer_connprop);
    CHECK(ci.peer_cm_private);
    CHECK_EQ(ci.peer_cm.recv_size, 4096);
    CHECK_EQ(ci.inline_send, 4096);
    clnt_destroy(c);
    tsrv_stop(&t);
}
