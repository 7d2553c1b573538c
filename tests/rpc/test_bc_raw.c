/* A server program's own per-connection state and the backward calls it encodes itself
 * (rpc/svc_hooks.h: what uiw-nfsd's NFSv4.1 back channel uses): the data is made once per
 * connection, handed back once when the connection ends; a raw backward call goes out as
 * it was encoded and its reply comes back whole to the function given, in Version One and
 * Version Two; a client that takes no backward calls gets none. */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rpc/svc_hooks.h"
#include "rpc_util.h"

#define RPROG 0x20000779u

/* The server program's data of one connection. */
struct cdata {
    CLIENT *bc;
};

static _Atomic unsigned makes, ends, replies, send_errs;
static _Atomic uint32_t reply_xid, reply_result, reply_len;
static _Atomic int make_errno;

static void *make(void *arg, SVCXPRT *x)
{
    (void)arg;
    atomic_fetch_add(&makes, 1);
    CLIENT *bc = uiw__rpc_svc_bc_raw(x, 4);
    if (!bc) {
        atomic_store(&make_errno, errno);
        return NULL;
    }
    struct cdata *d = calloc(1, sizeof(*d));
    CHECK(d != NULL);
    d->bc = bc;
    return d;
}

static void ended(void *data)
{
    struct cdata *d = data;
    atomic_fetch_add(&ends, 1);
    clnt_destroy(d->bc);
    free(d);
}

/* The reply of the raw call: XID, REPLY, MSG_ACCEPTED, AUTH_NONE verifier, SUCCESS,
 * then the result. */
static void on_reply(void *arg, int status, const void *rep, uint32_t len)
{
    (void)arg;
    if (status != 0) {
        atomic_fetch_add(&send_errs, 1);
        return;
    }
    const uint8_t *p = rep;
    uint32_t w[7];
    CHECK_EQ(len, sizeof(w));
    for (int i = 0; i < 7; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    CHECK_EQ(w[1], REPLY);
    CHECK_EQ(w[2], MSG_ACCEPTED);
    CHECK_EQ(w[5], SUCCESS);
    atomic_store(&reply_xid, w[0]);
    atomic_store(&reply_len, len);
    atomic_store(&reply_result, w[6]);
    atomic_fetch_add(&replies, 1);
}

/* Procedure 1 (u_int v): a raw backward call of TCBPROG procedure 1 with v, XID v + 1000,
 * started on the call's connection; the reply says what starting it returned. */
static void rdispatch(struct svc_req *rq, SVCXPRT *x)
{
    if (rq->rq_proc == 0) {
        svc_sendreply(x, (xdrproc_t)xdr_none, NULL);
        return;
    }
    u_int v;
    if (!svc_getargs(x, (xdrproc_t)xdr_u_int, (char *)&v)) {
        svcerr_decode(x);
        return;
    }
    struct cdata *d = uiw__rpc_svc_conn_data(x, make, NULL);
    int rc = -ENOENT;
    if (d) {
        uint32_t m[11] = {v + 1000, CALL, 2, TCBPROG, 1, 1, AUTH_NONE, 0, AUTH_NONE, 0, v};
        for (int i = 0; i < 11; i++)
            m[i] = htonl(m[i]);
        rc = uiw__rpc_bc_send_raw(d->bc, m, sizeof(m), on_reply, NULL);
    }
    int r = rc;
    svc_sendreply(x, (xdrproc_t)xdr_int, (char *)&r);
}

static void cb_double(struct svc_req *rq, SVCXPRT *x)
{
    u_int v;
    if (rq->rq_proc != 1 || !svc_getargs(x, (xdrproc_t)xdr_u_int, (char *)&v)) {
        svcerr_decode(x);
        return;
    }
    v *= 2;
    svc_sendreply(x, (xdrproc_t)xdr_u_int, (char *)&v);
}

static struct uiw_rpc_svc *server(uint16_t *port)
{
    atomic_store(&makes, 0);
    atomic_store(&ends, 0);
    atomic_store(&replies, 0);
    atomic_store(&send_errs, 0);
    atomic_store(&make_errno, 0);
    struct uiw_rpc_svc_attr sa = {0};
    struct uiw_rpc_svc *s = uiw_rpc_svc_create(&sa);
    CHECK(s != NULL);
    CHECK_EQ(uiw_rpc_svc_register(s, RPROG, 1, rdispatch), 0);
    CHECK_EQ(uiw__rpc_svc_conn_ended(s, ended), 0);
    CHECK_EQ(uiw_rpc_svc_start(s), 0);
    CHECK_EQ(uiw__rpc_svc_conn_ended(s, ended), -EBUSY);
    *port = uiw_rpc_svc_port(s);
    return s;
}

static int start_raw(CLIENT *c, u_int v)
{
    int r = -1;
    CHECK_EQ(clnt_call(c, 1, (xdrproc_t)xdr_u_int, (char *)&v, (xdrproc_t)xdr_int, (char *)&r, TMO),
             RPC_SUCCESS);
    return r;
}

static void wait_for(_Atomic unsigned *n, unsigned want, CLIENT *c)
{
    for (int i = 0; i < 500 && atomic_load(n) < want; i++) {
        if (c)
            uiw_rpc_clnt_poll(c, 10);
        else
            nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    CHECK_EQ(atomic_load(n), want);
}

static void raw_calls(uint32_t vers)
{
    uint16_t port;
    struct uiw_rpc_svc *s = server(&port);
    struct uiw_rpc_clnt_attr ca = {0};
    ca.xprt.vers_max = vers;
    ca.no_vers_memory = true;
    CLIENT *c = uiw_rpc_clnt_create("127.0.0.1", port, RPROG, 1, &ca);
    CHECK(c != NULL);
    CHECK_EQ(uiw_rpc_clnt_bc_register(c, TCBPROG, 1, cb_double), 0);
    CHECK_EQ(start_raw(c, 21), 0);
    wait_for(&replies, 1, c);
    CHECK_EQ(atomic_load(&reply_xid), 1021);
    CHECK_EQ(atomic_load(&reply_result), 42);
    /* the connection's data again: made once */
    CHECK_EQ(start_raw(c, 50), 0);
    wait_for(&replies, 2, c);
    CHECK_EQ(atomic_load(&reply_xid), 1050);
    CHECK_EQ(atomic_load(&reply_result), 100);
    CHECK_EQ(atomic_load(&makes), 1);
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw_rpc_svc_xprt_stats(s, &st), 0);
    CHECK_EQ(st.calls_sent, 2);
    CHECK_EQ(st.replies_received, 2);
    CHECK_EQ(atomic_load(&ends), 0);
    /* the connection ends: its data is handed back, once */
    clnt_destroy(c);
    wait_for(&ends, 1, NULL);
    CHECK_EQ(atomic_load(&send_errs), 0);
    CHECK_EQ(uiw_rpc_svc_destroy(s), 0);
    CHECK_EQ(atomic_load(&ends), 1);
}

TEST(rpc_bc_raw_v2)
{
    raw_calls(2);
}

TEST(rpc_bc_raw_v1)
{
    raw_calls(1);
}

/* A Version Two client whose BRS is NONE: no raw sender is made for it (nothing is sent),
 * and a connection without data ends without the hook. */
TEST(rpc_bc_raw_brs_none)
{
    uint16_t port;
    struct uiw_rpc_svc *s = server(&port);
    struct uiw_rpc_clnt_attr ca = {0};
    ca.xprt.vers_max = 2;
    ca.xprt.brs = UIW_RPC_BRS_NONE;
    ca.no_vers_memory = true;
    CLIENT *c = uiw_rpc_clnt_create("127.0.0.1", port, RPROG, 1, &ca);
    CHECK(c != NULL);
    CHECK_EQ(start_raw(c, 1), -ENOENT);
    CHECK_EQ(atomic_load(&makes), 1);
    CHECK_EQ(atomic_load(&make_errno), EOPNOTSUPP);
    /* make is asked again while it gives nothing */
    CHECK_EQ(start_raw(c, 2), -ENOENT);
    CHECK_EQ(atomic_load(&makes), 2);
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw_rpc_svc_xprt_stats(s, &st), 0);
    CHECK_EQ(st.calls_sent, 0);
    clnt_destroy(c);
    CHECK_EQ(uiw_rpc_svc_destroy(s), 0);
    CHECK_EQ(atomic_load(&ends), 0);
}
