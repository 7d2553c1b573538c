/* A server's bounds on what its clients may hold: connections, Read chunk bytes. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
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

/* Four clients each send a call with 1 MiB of DDP data (a Read chunk) that the procedure
 * holds 100 ms; with max_read_bytes of 1.5 MiB the server pulls one call's chunk at a
 * time (the others wait, their connections served), all answered. The same without the
 * bound (the default, 256 MiB) runs them at once. */
struct sinker {
    uint16_t port;
    u_int most;
};

static void *sink_one(void *arg)
{
    struct sinker *k = arg;
    struct uiw_rpc_clnt_attr ca = {0};
    CLIENT *c = tclnt(k->port, &ca);
    static char data[1u << 20];
    struct tbuf b = {sizeof(data), data};
    CHECK_EQ(clnt_call(c, TP_CONC_SINK, (xdrproc_t)xdr_tbuf, (char *)&b, (xdrproc_t)xdr_u_int,
                       (char *)&k->most, TMO),
             RPC_SUCCESS);
    clnt_destroy(c);
    return NULL;
}

static u_int most_at_once(uint64_t max_read)
{
    struct uiw_rpc_svc_attr sa = {0};
    sa.max_read_bytes = max_read;
    sa.nthreads = 4;
    struct tsrv t;
    tsrv_start(&t, &sa);
    enum { N = 4 };
    pthread_t th[N];
    struct sinker k[N];
    for (int i = 0; i < N; i++) {
        k[i] = (struct sinker){t.port, 0};
        CHECK_EQ(pthread_create(&th[i], NULL, sink_one, &k[i]), 0);
    }
    u_int most = 0;
    for (int i = 0; i < N; i++) {
        CHECK_EQ(pthread_join(th[i], NULL), 0);
        if (k[i].most > most)
            most = k[i].most;
    }
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw_rpc_svc_xprt_stats(t.svc, &st), 0);
    CHECK_EQ(st.rdma_read_bytes, (uint64_t)N << 20); /* each came by a Read chunk */
    tsrv_stop(&t);
    return most;
}

TEST(rpc_max_read_bytes)
{
    u_int bounded = most_at_once(3u << 19);
    printf("calls holding 1 MiB Read chunks at once: %u with max_read_bytes 1.5 MiB\n", bounded);
    CHECK_EQ(bounded, 1u);
}

TEST(rpc_max_read_bytes_default_runs_at_once)
{
    u_int free_run = most_at_once(0);
    printf("calls holding 1 MiB Read chunks at once: %u with the default bound\n", free_run);
    CHECK(free_run >= 2);
}
