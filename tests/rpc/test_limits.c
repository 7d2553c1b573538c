/* A server's bounds on what its clients may hold: connections. */
#include <errno.h>
#include <time.h>

#include "rpc_util.h"

static void null_ok(CLIENT *c)
{
    CHECK_EQ(clnt_call(c, TP_NULL, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_none, NULL, TMO),
             RPC_SUCCESS);
}

/* Connections up to max_connections are served; the next is rejected by the connection
 * manager (ECONNREFUSED) before the server allocates anything for it, and a client that
 * leaves makes room for another. */
TEST(rpc_max_connections)
{
    struct uiw_rpc_svc_attr sa = {0};
    sa.max_connections = 2;
    struct tsrv t;
    tsrv_start(&t, &sa);
    struct uiw_rpc_clnt_attr ca = {0};
    ca.no_reconnect = true;
    CLIENT *a = tclnt(t.port, &ca), *b = tclnt(t.port, &ca);
    null_ok(a);
    null_ok(b);
    for (int i = 0; i < 3; i++) {
        errno = 0;
        CHECK(uiw_rpc_clnt_create("127.0.0.1", t.port, TPROG, TVERS, &ca) == NULL);
        CHECK_EQ(errno, ECONNREFUSED);
    }
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw_rpc_svc_xprt_stats(t.svc, &st), 0);
    CHECK_EQ(st.connections, 2); /* the refused ones never came up */
    null_ok(a);
    null_ok(b);
    clnt_destroy(a);
    /* room once the connection is freed */
    CLIENT *c = NULL;
    for (int i = 0; i < 500 && !c; i++) {
        c = uiw_rpc_clnt_create("127.0.0.1", t.port, TPROG, TVERS, &ca);
        if (!c) {
            CHECK_EQ(errno, ECONNREFUSED);
            struct timespec ts = {0, 10000000L};
            nanosleep(&ts, NULL);
        }
    }
    CHECK(c != NULL);
    null_ok(c);
    null_ok(b);
    clnt_destroy(b);
    clnt_destroy(c);
    tsrv_stop(&t);
}
