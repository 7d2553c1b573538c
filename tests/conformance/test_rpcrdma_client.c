/*
 * The project's RPC-over-RDMA client against a hostile raw server (rpcpeer.h): the rules
 * of RESPROP (draft 5.3.3), UPDPROP of unchangeable properties, zero credits, replies
 * whose chunks are not those of the call, an STag used after its RPC ended, an ERR_VERS
 * answering the first message after the client assumed Version One.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <uiw/rpc.h>

#include "common/byteorder.h"
#include "rpcpeer.h"
#include "test.h"

#define PROG 0x20000aa1u
#define WAIT 5000
#define XP30 0xFFFFFF30u

static const struct timeval TMO = {5, 0};

#define xnone rpcpeer_xdr_void
#define xblob rpcpeer_xdr_blob
#define blob  rpcpeer_blob

struct script {
    int lfd;
    int step; /* what the raw server did last (read by the test after the join) */
    int fail; /* line of a failed expectation in the raw server, 0 if none */
    bool term_seen;
    atomic_bool call_returned; /* set by the test when the call a step waits for returned */
    struct rpcpeer p;
    struct uiw_rpcrdma_space sp;
    struct uiw_rpcrdma_space_default st;
    uint8_t msg[RPCPEER_MSG_MAX];
    uint32_t len;
    struct uiw_rpcrdma_hdr h;
};

#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            sc->fail = __LINE__;                                                                   \
            return NULL;                                                                           \
        }                                                                                          \
    } while (0)

static int next(struct script *sc)
{
    sc->p.keep_connprop = true;
    return rpcpeer_recv_hdr(&sc->p, sc->msg, sizeof(sc->msg), &sc->len, &sc->h, &sc->sp, WAIT);
}

/* The raw server's CONNPROP: RBSIZ 4096, BRS INLINE, one experimental property; BRS in
 * rdma_nochg. */
static int connprop(struct script *sc, uint32_t credit)
{
    uint8_t x[] = {'x'};
    struct uiw_rpcrdma_prop props[3] = {{UIW_RPCRDMA_PROP_RBSIZ, 4, NULL, 4096},
                                        {UIW_RPCRDMA_PROP_BRS, 4, NULL, UIW_RDMA2_BKREQSUP_INLINE},
                                        {XP30, 1, x, 0}};
    uint8_t w[8];
    uint32_t ids[] = {UIW_RPCRDMA_PROP_BRS};
    struct uiw_rpcrdma_hdr h = {
        .xid = 0x1, .vers = 2, .credit = credit, .proc = UIW_RDMA2_CONNPROP};
    h.u.connprop.start.n = 3;
    h.u.connprop.start.props = props;
    uiw_rpcrdma_subset_build(&h.u.connprop.nochg, w, sizeof(w), ids, 1);
    return rpcpeer_send_hdr(&sc->p, &h, NULL, 0);
}

static int resprop(struct script *sc, uint32_t xid, const uint32_t *done, size_t nd,
                   const uint32_t *rej, size_t nr, const struct uiw_rpcrdma_prop *other, size_t no)
{
    uint8_t wd[8], wr[8];
    struct uiw_rpcrdma_hdr h = {.xid = xid, .vers = 2, .credit = 8, .proc = UIW_RDMA2_RESPROP};
    uiw_rpcrdma_subset_build(&h.u.resprop.done, wd, sizeof(wd), done, nd);
    uiw_rpcrdma_subset_build(&h.u.resprop.rejected, wr, sizeof(wr), rej, nr);
    h.u.resprop.other.n = (uint32_t)no;
    h.u.resprop.other.props = (struct uiw_rpcrdma_prop *)(uintptr_t)other;
    return rpcpeer_send_hdr(&sc->p, &h, NULL, 0);
}

/* An RPC reply (accepted, SUCCESS) with `res` after it, for the call in sc->h, under the
 * transport header h (reply: a Version Two RDMA_MSG granting credit, with the write list
 * wl[0..nw)). */
static int reply_hdr(struct script *sc, const struct uiw_rpcrdma_hdr *h, const void *res,
                     uint32_t rlen)
{
    uint8_t body[128];
    uint32_t w[] = {sc->h.xid, 1, 0, 0, 0, 0};
    for (int i = 0; i < 6; i++)
        uiw__put_be32(body + 4 * i, w[i]);
    if (rlen)
        memcpy(body + 24, res, rlen);
    return rpcpeer_send_hdr(&sc->p, h, body, 24 + rlen);
}

static int reply(struct script *sc, uint32_t credit, const void *res, uint32_t rlen,
                 const struct uiw_rpcrdma_write_chunk *wl, uint32_t nw)
{
    struct uiw_rpcrdma_hdr h = {
        .xid = sc->h.xid, .vers = 2, .credit = credit, .proc = UIW_RDMA_MSG};
    h.u.chunks.direction = UIW_RPCRDMA_REPLY;
    h.u.chunks.nwrites = nw;
    h.u.chunks.writes = (struct uiw_rpcrdma_write_chunk *)(uintptr_t)wl;
    return reply_hdr(sc, &h, res, rlen);
}

static void *props_server(void *arg)
{
    struct script *sc = arg;
    uiw_rpcrdma_space_init(&sc->sp, &sc->st);
    EXPECT(rpcpeer_accept(&sc->p, sc->lfd, NULL, 0, WAIT) == 0);
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA2_CONNPROP && sc->h.vers == 2);
    EXPECT(connprop(sc, 8) == 0);
    sc->step = 1;
    /* REQPROP 1 {RBSIZ, XP30}: RBSIZ both done and rejected (an overlap), XP30 in none,
     * and an rdma_other entry for BRS, which was not asked for */
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA2_REQPROP && sc->h.u.reqprop.want.n == 2);
    uint32_t rb = UIW_RPCRDMA_PROP_RBSIZ;
    struct uiw_rpcrdma_prop brs = {UIW_RPCRDMA_PROP_BRS, 4, NULL, UIW_RDMA2_BKREQSUP_GENL};
    EXPECT(resprop(sc, sc->h.xid, &rb, 1, &rb, 1, &brs, 1) == 0);
    sc->step = 2;
    /* REQPROP 2 {RBSIZ 3072}: another value, 2048 */
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA2_REQPROP);
    struct uiw_rpcrdma_prop o = {UIW_RPCRDMA_PROP_RBSIZ, 4, NULL, 2048};
    EXPECT(resprop(sc, sc->h.xid, NULL, 0, NULL, 0, &o, 1) == 0);
    sc->step = 3;
    /* REQPROP 3: answered with another xid */
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA2_REQPROP);
    EXPECT(resprop(sc, sc->h.xid + 1, &rb, 1, NULL, 0, NULL, 0) == 0);
    sc->step = 4;
    /* a call: first UPDPROP of BRS (declared unchangeable) and RBSIZ 1024, then the reply */
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA_MSG);
    struct uiw_rpcrdma_prop now[2] = {{UIW_RPCRDMA_PROP_BRS, 4, NULL, UIW_RDMA2_BKREQSUP_GENL},
                                      {UIW_RPCRDMA_PROP_RBSIZ, 4, NULL, 1024}};
    struct uiw_rpcrdma_hdr u = {.xid = 0x9, .vers = 2, .credit = 8, .proc = UIW_RDMA2_UPDPROP};
    u.u.updprop.now.n = 2;
    u.u.updprop.now.props = now;
    struct uiw_rpcrdma_hdr call = sc->h;
    EXPECT(rpcpeer_send_hdr(&sc->p, &u, NULL, 0) == 0);
    sc->h = call;
    EXPECT(reply(sc, 8, NULL, 0, NULL, 0) == 0);
    sc->step = 5;
    bool eof = false;
    rpcpeer_pump(&sc->p, WAIT, &eof);
    return NULL;
}

/* A raw server's state of `size` bytes (a struct script first) with a listener of its
 * own on loopback, whose port goes to *port. */
static void *script_new(size_t size, uint16_t *port)
{
    struct script *sc = calloc(1, size);
    CHECK(sc != NULL);
    sc->lfd = rawpeer_tcp_listen(AF_INET, port);
    CHECK(sc->lfd >= 0);
    return sc;
}

/* The raw server's thread ended having met every expectation, at `step`. */
static void script_join(struct script *sc, pthread_t th, int step)
{
    pthread_join(th, NULL);
    CHECK_EQ(sc->fail, 0);
    CHECK_EQ(sc->step, step);
}

static void script_free(struct script *sc)
{
    rpcpeer_close(&sc->p, false);
    close(sc->lfd);
    free(sc);
}

/* The project's client of the raw server on port, with attributes a (NULL: defaults),
 * remembering no server's version and never reconnecting. */
static CLIENT *client_of(uint16_t port, const struct uiw_rpc_clnt_attr *a)
{
    struct uiw_rpc_clnt_attr x = {0};
    if (a)
        x = *a;
    x.no_vers_memory = true;
    x.no_reconnect = true;
    CLIENT *c = uiw_rpc_clnt_create("127.0.0.1", port, PROG, 1, &x);
    CHECK(c != NULL);
    return c;
}

/* Start the script fn of sc's raw server, and connect a client to it. */
static CLIENT *client_to(struct script *sc, uint16_t port, void *(*fn)(void *), pthread_t *th)
{
    CHECK_EQ(pthread_create(th, NULL, fn, sc), 0);
    return client_of(port, NULL);
}

TEST(rpcrdma_client_resprop_rules)
{
    uint16_t port;
    struct script *sc = script_new(sizeof(*sc), &port);
    pthread_t th;
    CLIENT *c = client_to(sc, port, props_server, &th);
    struct uiw_rpc_conn_info ci;
    CHECK_EQ(uiw_rpc_clnt_info(c, &ci), 0);
    CHECK_EQ(ci.vers, 2);
    CHECK(ci.peer_connprop);
    CHECK_EQ(ci.credits, 8);
    char x;
    CHECK_EQ(uiw_rpc_clnt_peer_xprop(c, XP30, &x, 1), 1);
    CHECK_EQ(x, 'x');
    /* BRS is in its rdma_nochg: not to be asked for */
    struct uiw_rpc_prop_req r[2] = {{UIW_RPCRDMA_PROP_BRS, UIW_RDMA2_BKREQSUP_GENL, 0}};
    CHECK_EQ(uiw_rpc_clnt_request_props(c, r, 1, WAIT), -EPERM);
    r[0] = (struct uiw_rpc_prop_req){UIW_RPCRDMA_PROP_RBSIZ, 2048, UIW_RPC_PROP_DONE};
    r[1] = (struct uiw_rpc_prop_req){XP30, 1, UIW_RPC_PROP_DONE};
    CHECK_EQ(uiw_rpc_clnt_request_props(c, r, 2, WAIT), 0);
    CHECK_EQ(r[0].result, UIW_RPC_PROP_REJECTED); /* in done and rejected at once */
    CHECK_EQ(r[1].result, UIW_RPC_PROP_REJECTED); /* in none */
    CHECK_EQ(uiw_rpc_clnt_info(c, &ci), 0);
    CHECK_EQ(ci.peer_rbsiz, 4096);
    CHECK_EQ(ci.peer_brs, UIW_RDMA2_BKREQSUP_INLINE); /* the unasked rdma_other ignored */
    r[0] = (struct uiw_rpc_prop_req){UIW_RPCRDMA_PROP_RBSIZ, 3072, UIW_RPC_PROP_DONE};
    CHECK_EQ(uiw_rpc_clnt_request_props(c, r, 1, WAIT), 0);
    CHECK_EQ(r[0].result, UIW_RPC_PROP_OTHER);
    CHECK_EQ(r[0].value, 2048);
    CHECK_EQ(uiw_rpc_clnt_info(c, &ci), 0);
    CHECK_EQ(ci.peer_rbsiz, 2048);
    CHECK_EQ(ci.inline_send, 2048);
    /* an answer with another xid is no answer */
    r[0] = (struct uiw_rpc_prop_req){UIW_RPCRDMA_PROP_RBSIZ, 1024, UIW_RPC_PROP_DONE};
    CHECK_EQ(uiw_rpc_clnt_request_props(c, r, 1, 500), -ETIMEDOUT);
    /* UPDPROP: RBSIZ taken, BRS (unchangeable) not */
    CHECK_EQ(clnt_call(c, 0, (xdrproc_t)xnone, NULL, (xdrproc_t)xnone, NULL, TMO), RPC_SUCCESS);
    CHECK_EQ(uiw_rpc_clnt_info(c, &ci), 0);
    CHECK_EQ(ci.peer_rbsiz, 1024);
    CHECK_EQ(ci.peer_brs, UIW_RDMA2_BKREQSUP_INLINE);
    clnt_destroy(c);
    script_join(sc, th, 5);
    script_free(sc);
}

/* A raw server that answers three REQPROPs with RDMA2_ERROR (INVAL_OPTION, INVAL_PROC,
 * BAD_XDR) and then a call with its reply. */
static void *reqprop_error_server(void *arg)
{
    static const uint32_t codes[3] = {UIW_RDMA2_ERR_INVAL_OPTION, UIW_RDMA2_ERR_INVAL_PROC,
                                      UIW_RDMA2_ERR_BAD_XDR};
    struct script *sc = arg;
    uiw_rpcrdma_space_init(&sc->sp, &sc->st);
    EXPECT(rpcpeer_accept(&sc->p, sc->lfd, NULL, 0, WAIT) == 0);
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA2_CONNPROP);
    EXPECT(connprop(sc, 8) == 0);
    for (int i = 0; i < 3; i++) {
        EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA2_REQPROP);
        struct uiw_rpcrdma_hdr e = {
            .xid = sc->h.xid, .vers = 2, .credit = 8, .proc = UIW_RDMA_ERROR};
        e.u.error.errcode = codes[i];
        EXPECT(rpcpeer_send_hdr(&sc->p, &e, NULL, 0) == 0);
        sc->step = 1 + i;
    }
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA_MSG);
    EXPECT(reply(sc, 8, NULL, 0, NULL, 0) == 0);
    sc->step = 4;
    return NULL;
}

struct unbounded {
    CLIENT *c;
    struct uiw_rpc_prop_req *r;
    int ret;
    atomic_bool done;
};

static void *unbounded_thread(void *arg)
{
    struct unbounded *u = arg;
    u->ret = uiw_rpc_clnt_request_props(u->c, u->r, 1, -1);
    atomic_store(&u->done, true);
    return NULL;
}

/* uiw_rpc_clnt_request_props of r without a time limit: what it returned, or a failed test
 * if it has not returned within WAIT ms. */
static int request_unbounded(CLIENT *c, struct uiw_rpc_prop_req *r)
{
    struct unbounded u = {c, r, 0, false};
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, unbounded_thread, &u), 0);
    for (int i = 0; i < WAIT && !atomic_load(&u.done); i++) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    if (!atomic_load(&u.done))
        uiw_test_fail(__FILE__, __LINE__,
                      "a property request answered with RDMA2_ERROR still "
                      "waits after %d ms",
                      WAIT);
    pthread_join(th, NULL);
    return u.ret;
}

/* Draft 5.3: a REQPROP answered with RDMA2_ERROR ends at once, even without a time
 * limit: -EOPNOTSUPP when the peer takes no property requests (INVAL_OPTION, or
 * INVAL_PROC), -EPROTO for another error; nothing of the request is applied, and the
 * connection goes on. */
TEST(rpcrdma_client_reqprop_answered_with_error)
{
    uint16_t port;
    struct script *sc = script_new(sizeof(*sc), &port);
    pthread_t th;
    CLIENT *c = client_to(sc, port, reqprop_error_server, &th);
    static const int want[3] = {-EOPNOTSUPP, -EOPNOTSUPP, -EPROTO};
    for (int i = 0; i < 3; i++) {
        struct uiw_rpc_prop_req r = {UIW_RPCRDMA_PROP_RBSIZ, 2048, UIW_RPC_PROP_OTHER};
        CHECK_EQ(request_unbounded(c, &r), want[i]);
        CHECK_EQ(r.result, UIW_RPC_PROP_OTHER); /* untouched */
    }
    struct uiw_rpc_conn_info ci;
    CHECK_EQ(uiw_rpc_clnt_info(c, &ci), 0);
    CHECK_EQ(ci.peer_rbsiz, 4096);
    CHECK_EQ(clnt_call(c, 0, (xdrproc_t)xnone, NULL, (xdrproc_t)xnone, NULL, TMO), RPC_SUCCESS);
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &st), 0);
    CHECK_EQ(st.errors_received[UIW_RDMA2_ERR_INVAL_OPTION], 1);
    CHECK_EQ(st.errors_received[UIW_RDMA2_ERR_INVAL_PROC], 1);
    CHECK_EQ(st.errors_received[UIW_RDMA2_ERR_BAD_XDR], 1);
    script_join(sc, th, 4);
    clnt_destroy(c);
    script_free(sc);
}

static void *bad_reply_server(void *arg)
{
    struct script *sc = arg;
    uiw_rpcrdma_space_init(&sc->sp, &sc->st);
    EXPECT(rpcpeer_accept(&sc->p, sc->lfd, NULL, 0, WAIT) == 0);
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA2_CONNPROP);
    EXPECT(connprop(sc, 8) == 0);
    /* 1: a reply granting 0 credits */
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA_MSG);
    EXPECT(reply(sc, 0, NULL, 0, NULL, 0) == 0);
    sc->step = 1;
    /* 2: a Write chunk returned longer than advertised */
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA_MSG && sc->h.u.chunks.nwrites == 1);
    struct uiw_rpcrdma_segment s = sc->h.u.chunks.writes[0].segs[0];
    s.length += 1000;
    struct uiw_rpcrdma_write_chunk wc = {1, &s};
    uint8_t lw[4];
    uiw__put_be32(lw, 5000);
    EXPECT(reply(sc, 8, lw, 4, &wc, 1) == 0);
    sc->step = 2;
    /* 3: the data written into the chunk, the reply right */
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA_MSG && sc->h.u.chunks.nwrites == 1);
    s = sc->h.u.chunks.writes[0].segs[0];
    EXPECT(s.length == 5000);
    static uint8_t data[5000];
    for (int i = 0; i < 5000; i++)
        data[i] = (uint8_t)(i * 3);
    EXPECT(rawpeer_send_write(&sc->p.raw, s.handle, s.offset, data, 5000) == 0);
    s.length = 5000;
    EXPECT(reply(sc, 8, lw, 4, &wc, 1) == 0);
    sc->step = 3;
    /* once the call has returned (the client invalidated its chunk before it returns), its
     * STag must no longer take a Write */
    for (int i = 0; i < WAIT && !atomic_load(&sc->call_returned); i++) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    EXPECT(atomic_load(&sc->call_returned));
    EXPECT(rawpeer_send_write(&sc->p.raw, s.handle, s.offset, data, 100) == 0);
    struct rawpeer_term t;
    EXPECT(rawpeer_expect_terminate(&sc->p.raw, &t, WAIT) == 0);
    sc->term_seen = true;
    EXPECT(t.t.layer == 1 && t.t.etype == 1 && t.t.code == 0); /* DDP tagged: invalid STag */
    sc->step = 4;
    return NULL;
}

TEST(rpcrdma_client_bad_replies)
{
    uint16_t port;
    struct script *sc = script_new(sizeof(*sc), &port);
    pthread_t th;
    CLIENT *c = client_to(sc, port, bad_reply_server, &th);
    CHECK_EQ(clnt_call(c, 0, (xdrproc_t)xnone, NULL, (xdrproc_t)xnone, NULL, TMO), RPC_SUCCESS);
    struct uiw_rpc_conn_info ci;
    CHECK_EQ(uiw_rpc_clnt_info(c, &ci), 0);
    CHECK_EQ(ci.credits, 1); /* a grant of 0 counts as 1 */
    static char buf[5000];
    struct uiw_rpc_call_opts o = {0};
    o.nresult_bufs = 1;
    o.result_bufs[0] = (struct uiw_rpc_ddp_buf){buf, sizeof(buf)};
    u_int n = 5000;
    struct blob b = {sizeof(buf), buf};
    CHECK_EQ(
        uiw_rpc_call(c, 1, (xdrproc_t)xdr_u_int, (char *)&n, (xdrproc_t)xblob, (char *)&b, TMO, &o),
        RPC_CANTDECODERES);
    b = (struct blob){sizeof(buf), buf};
    CHECK_EQ(
        uiw_rpc_call(c, 1, (xdrproc_t)xdr_u_int, (char *)&n, (xdrproc_t)xblob, (char *)&b, TMO, &o),
        RPC_SUCCESS);
    atomic_store(&sc->call_returned, true);
    CHECK(b.val == buf);
    CHECK_EQ(b.len, 5000);
    CHECK_EQ((uint8_t)buf[4999], (uint8_t)(4999 * 3));
    script_join(sc, th, 4);
    CHECK(sc->term_seen);
    clnt_destroy(c);
    script_free(sc);
}

/* A raw server that sends an RDMA2_ERROR of an unknown code, then answers the client's
 * first call with a REPLY carrying a Read chunk, and its second with a good reply: what
 * comes after each must be the client's next call, never an error. */
static void *reply_with_read_server(void *arg)
{
    struct script *sc = arg;
    uiw_rpcrdma_space_init(&sc->sp, &sc->st);
    EXPECT(rpcpeer_accept(&sc->p, sc->lfd, NULL, 0, WAIT) == 0);
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA2_CONNPROP);
    EXPECT(connprop(sc, 8) == 0);
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA_MSG);
    /* an RDMA2_ERROR of code 77 (the codec encodes none: by hand), for no call */
    uint8_t w[20];
    uint32_t ew[5] = {sc->h.xid + 1000, 2, 8, UIW_RDMA_ERROR, 77};
    for (int i = 0; i < 5; i++)
        uiw__put_be32(w + 4 * i, ew[i]);
    EXPECT(rpcpeer_send(&sc->p, w, sizeof(w)) == 0);
    static uint8_t mem[64];
    struct uiw_rpcrdma_read_segment rs = {0, {0x5200, 64, (uint64_t)(uintptr_t)mem}};
    struct uiw_rpcrdma_hdr r = {.xid = sc->h.xid, .vers = 2, .credit = 8, .proc = UIW_RDMA_MSG};
    r.u.chunks.direction = UIW_RPCRDMA_REPLY;
    r.u.chunks.nreads = 1;
    r.u.chunks.reads = &rs;
    EXPECT(reply_hdr(sc, &r, NULL, 0) == 0);
    sc->step = 1;
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA_MSG);
    EXPECT(reply(sc, 8, NULL, 0, NULL, 0) == 0);
    sc->step = 2;
    return NULL;
}

/* Draft 6.2.2: a requester sends no error. A reply carrying a Read chunk fails its call
 * (RPC_CANTDECODERES) and an error of an unknown code is dropped, neither answered; the
 * connection goes on. */
TEST(rpcrdma_client_answers_no_reply_or_error)
{
    uint16_t port;
    struct script *sc = script_new(sizeof(*sc), &port);
    pthread_t th;
    CLIENT *c = client_to(sc, port, reply_with_read_server, &th);
    CHECK_EQ(clnt_call(c, 0, (xdrproc_t)xnone, NULL, (xdrproc_t)xnone, NULL, TMO),
             RPC_CANTDECODERES);
    CHECK_EQ(clnt_call(c, 0, (xdrproc_t)xnone, NULL, (xdrproc_t)xnone, NULL, TMO), RPC_SUCCESS);
    script_join(sc, th, 2);
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &st), 0);
    for (int i = 0; i < UIW_RPC_NERR; i++)
        CHECK_EQ(st.errors_sent[i], 0);
    CHECK_EQ(st.connections, 1);
    clnt_destroy(c);
    script_free(sc);
}

#define CBPROG 0x20000aa2u

static atomic_int bc_runs;

static void bc_dispatch(struct svc_req *rq, SVCXPRT *x)
{
    (void)rq;
    atomic_fetch_add(&bc_runs, 1);
    svc_sendreply(x, (xdrproc_t)xnone, NULL);
}

/* A raw server that, while the client waits for its call's reply, asks it (REQPROP) to
 * take backward calls with chunks (BRS GENL), then sends it a backward call. */
static void *brs_request_server(void *arg)
{
    struct script *sc = arg;
    uiw_rpcrdma_space_init(&sc->sp, &sc->st);
    EXPECT(rpcpeer_accept(&sc->p, sc->lfd, NULL, 0, WAIT) == 0);
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA2_CONNPROP);
    const struct uiw_rpcrdma_prop *brs =
        uiw_rpcrdma_propset_find(&sc->h.u.connprop.start, UIW_RPCRDMA_PROP_BRS);
    EXPECT(brs && brs->value == UIW_RDMA2_BKREQSUP_NONE);
    EXPECT(connprop(sc, 8) == 0);
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA_MSG);
    struct uiw_rpcrdma_hdr call = sc->h;
    struct uiw_rpcrdma_prop genl = {UIW_RPCRDMA_PROP_BRS, 4, NULL, UIW_RDMA2_BKREQSUP_GENL};
    struct uiw_rpcrdma_hdr q = {.xid = 0x4400, .vers = 2, .credit = 8, .proc = UIW_RDMA2_REQPROP};
    q.u.reqprop.want.n = 1;
    q.u.reqprop.want.props = &genl;
    EXPECT(rpcpeer_send_hdr(&sc->p, &q, NULL, 0) == 0);
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA2_RESPROP && sc->h.xid == 0x4400);
    EXPECT(uiw_rpcrdma_subset_has(&sc->h.u.resprop.rejected, UIW_RPCRDMA_PROP_BRS));
    EXPECT(!uiw_rpcrdma_subset_has(&sc->h.u.resprop.done, UIW_RPCRDMA_PROP_BRS));
    sc->step = 1;
    struct uiw_rpcrdma_hdr bc = {.xid = 0x4401, .vers = 2, .credit = 8, .proc = UIW_RDMA_MSG};
    bc.u.chunks.direction = UIW_RPCRDMA_CALL;
    uint8_t b[64];
    uint32_t bl = rpcpeer_rpc_call(b, bc.xid, CBPROG, 1, 0, NULL, 0);
    EXPECT(rpcpeer_send_hdr(&sc->p, &bc, b, bl) == 0);
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA_ERROR && sc->h.xid == 0x4401);
    EXPECT(sc->h.vers == 2 && sc->h.u.error.errcode == UIW_RDMA2_ERR_SYSTEM);
    sc->step = 2;
    sc->h = call;
    EXPECT(reply(sc, 8, NULL, 0, NULL, 0) == 0);
    sc->step = 3;
    return NULL;
}

/* BRS NONE holds whoever asks: a client that said it takes no backward calls rejects a
 * REQPROP for BRS GENL (it would have taken it, then run the server's backward calls),
 * and refuses the backward call that follows with RDMA2_ERR_SYSTEM, never running it. */
TEST(rpcrdma_client_brs_none_not_raised_on_request)
{
    uint16_t port;
    struct script *sc = script_new(sizeof(*sc), &port);
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, brs_request_server, sc), 0);
    struct uiw_rpc_clnt_attr a = {0};
    a.xprt.brs = UIW_RPC_BRS_NONE;
    CLIENT *c = client_of(port, &a);
    CHECK_EQ(uiw_rpc_clnt_bc_register(c, CBPROG, 1, bc_dispatch), 0);
    atomic_store(&bc_runs, 0);
    enum clnt_stat st = clnt_call(c, 0, (xdrproc_t)xnone, NULL, (xdrproc_t)xnone, NULL, TMO);
    script_join(sc, th, 3);
    CHECK_EQ(st, RPC_SUCCESS);
    CHECK_EQ(atomic_load(&bc_runs), 0);
    struct uiw_rpc_conn_info ci;
    CHECK_EQ(uiw_rpc_clnt_info(c, &ci), 0);
    CHECK_EQ(ci.local_brs, UIW_RDMA2_BKREQSUP_NONE);
    clnt_destroy(c);
    script_free(sc);
}

/* A raw server that answers the client's first call with RDMA2_ERROR / SYSTEM, its
 * second with a reply, and its third never. */
static void *system_server(void *arg)
{
    struct script *sc = arg;
    uiw_rpcrdma_space_init(&sc->sp, &sc->st);
    EXPECT(rpcpeer_accept(&sc->p, sc->lfd, NULL, 0, WAIT) == 0);
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA2_CONNPROP);
    EXPECT(connprop(sc, 8) == 0);
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA_MSG);
    struct uiw_rpcrdma_hdr e = {.xid = sc->h.xid, .vers = 2, .credit = 8, .proc = UIW_RDMA_ERROR};
    e.u.error.errcode = UIW_RDMA2_ERR_SYSTEM;
    EXPECT(rpcpeer_send_hdr(&sc->p, &e, NULL, 0) == 0);
    sc->step = 1;
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA_MSG);
    EXPECT(reply(sc, 8, NULL, 0, NULL, 0) == 0);
    sc->step = 2;
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA_MSG);
    sc->step = 3;
    bool eof = false;
    rpcpeer_pump(&sc->p, 20000, &eof); /* silent, until the client hangs up */
    return NULL;
}

/* Seconds on clock id (CLOCK_MONOTONIC: now_s). */
static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_s(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

/* RDMA2_ERR_SYSTEM fails that call (RPC_SYSTEMERROR, the transport's code in re_lb.s1)
 * and nothing else: the connection goes on; a server that never answers holds a caller
 * no longer than its timeout. */
TEST(rpcrdma_client_system_error_and_silence)
{
    uint16_t port;
    struct script *sc = script_new(sizeof(*sc), &port);
    pthread_t th;
    CLIENT *c = client_to(sc, port, system_server, &th);
    CHECK_EQ(clnt_call(c, 0, (xdrproc_t)xnone, NULL, (xdrproc_t)xnone, NULL, TMO), RPC_SYSTEMERROR);
    struct rpc_err e;
    clnt_geterr(c, &e);
    CHECK_EQ(e.re_status, RPC_SYSTEMERROR);
    CHECK_EQ(e.re_lb.s1, (int32_t)UIW_RDMA2_ERR_SYSTEM);
    CHECK_EQ(clnt_call(c, 0, (xdrproc_t)xnone, NULL, (xdrproc_t)xnone, NULL, TMO), RPC_SUCCESS);
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &st), 0);
    CHECK_EQ(st.errors_received[UIW_RDMA2_ERR_SYSTEM], 1);
    CHECK_EQ(st.retransmits, 0); /* SYSTEM is not retried */
    CHECK_EQ(st.connections, 1); /* no reconnection */
    struct timeval half = {0, 500000};
    double t0 = now_s();
    CHECK_EQ(clnt_call(c, 0, (xdrproc_t)xnone, NULL, (xdrproc_t)xnone, NULL, half), RPC_TIMEDOUT);
    double dt = now_s() - t0;
    if (dt < 0.45 || dt > 3.0)
        uiw_test_fail(__FILE__, __LINE__, "a 0.5 s call ended after %.2f s", dt);
    clnt_destroy(c);
    script_join(sc, th, 3);
    script_free(sc);
}

/* A server slower than the client's wait for the answer to its first message: the client
 * assumes Version One (draft 7.2) and calls in it; the ERR_VERS answering its CONNPROP
 * comes after that, then the reply. `high` is the top of the range the server states. */
struct late {
    struct script sc;
    uint32_t high;
};

static void *late_vers_server(void *arg)
{
    struct late *lt = arg;
    struct script *sc = &lt->sc;
    uiw_rpcrdma_space_init(&sc->sp, &sc->st);
    EXPECT(rpcpeer_accept(&sc->p, sc->lfd, NULL, 0, WAIT) == 0);
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA2_CONNPROP && sc->h.vers == 2);
    uint32_t neg = sc->h.xid;
    sc->step = 1;
    /* unanswered until the client has gone on in Version One */
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA_MSG && sc->h.vers == 1);
    struct uiw_rpcrdma_hdr e = {.xid = neg, .vers = 1, .credit = 8, .proc = UIW_RDMA_ERROR};
    e.u.error.errcode = UIW_RDMA_ERR_VERS;
    e.u.error.vers_low = 1;
    e.u.error.vers_high = lt->high;
    EXPECT(rpcpeer_send_hdr(&sc->p, &e, NULL, 0) == 0);
    sc->step = 2;
    if (lt->high < 1) {
        bool eof = false;
        rpcpeer_pump(&sc->p, 60000, &eof); /* no reply: until the client hangs up */
        sc->step = 3;
        return NULL;
    }
    struct uiw_rpcrdma_hdr r = {.xid = sc->h.xid, .vers = 1, .credit = 8, .proc = UIW_RDMA_MSG};
    EXPECT(reply_hdr(sc, &r, NULL, 0) == 0);
    sc->step = 3;
    bool eof = false;
    rpcpeer_pump(&sc->p, WAIT, &eof);
    return NULL;
}

static CLIENT *late_client(struct late *lt, uint16_t port, pthread_t *th)
{
    CHECK_EQ(pthread_create(th, NULL, late_vers_server, lt), 0);
    struct uiw_rpc_clnt_attr a = {0};
    a.xprt.connect_timeout_ms = 300; /* also the wait for the answer to the first message */
    CLIENT *c = client_of(port, &a);
    struct uiw_rpc_conn_info ci;
    CHECK_EQ(uiw_rpc_clnt_info(c, &ci), 0);
    CHECK_EQ(ci.vers, 1);
    CHECK(ci.vers_fallback);
    CHECK(ci.vers_no_answer);
    CHECK_EQ(ci.errvers_low, 0); /* nothing answered yet */
    CHECK_EQ(ci.errvers_high, 0);
    return c;
}

TEST(rpcrdma_client_late_err_vers)
{
    uint16_t port;
    struct late *lt = script_new(sizeof(*lt), &port);
    lt->high = 1;
    pthread_t th;
    CLIENT *c = late_client(lt, port, &th);
    CHECK_EQ(clnt_call(c, 0, (xdrproc_t)xnone, NULL, (xdrproc_t)xnone, NULL, TMO), RPC_SUCCESS);
    /* the ERR_VERS came before the reply: its range is known */
    struct uiw_rpc_conn_info ci;
    CHECK_EQ(uiw_rpc_clnt_info(c, &ci), 0);
    CHECK_EQ(ci.vers, 1);
    CHECK(ci.vers_fallback && ci.vers_no_answer);
    CHECK_EQ(ci.errvers_low, 1);
    CHECK_EQ(ci.errvers_high, 1);
    clnt_destroy(c);
    script_join(&lt->sc, th, 3);
    script_free(&lt->sc);
}

/* The late ERR_VERS states a range without Version One: the connection ends and the call
 * fails at once instead of waiting out its timeout. */
TEST(rpcrdma_client_late_err_vers_other_range)
{
    uint16_t port;
    struct late *lt = script_new(sizeof(*lt), &port);
    lt->high = 0; /* 1..0: an empty range */
    pthread_t th;
    CLIENT *c = late_client(lt, port, &th);
    struct timeval tmo = {30, 0};
    enum clnt_stat st = clnt_call(c, 0, (xdrproc_t)xnone, NULL, (xdrproc_t)xnone, NULL, tmo);
    CHECK(st != RPC_SUCCESS && st != RPC_TIMEDOUT);
    script_join(&lt->sc, th, 3);
    clnt_destroy(c);
    script_free(&lt->sc);
}

/* RFC 8166 section 3.3.3 / draft 4.2.1: until the responder's first valid non-error
 * message arrives a requester has one credit. A Version One client with four calls queued
 * sends one; after the reply granting 8 the other three follow at once. */
static void *first_credit_server(void *arg)
{
    struct script *sc = arg;
    uiw_rpcrdma_space_init(&sc->sp, &sc->st);
    EXPECT(rpcpeer_accept(&sc->p, sc->lfd, NULL, 0, WAIT) == 0);
    EXPECT(next(sc) == 1 && sc->h.vers == 1 && sc->h.proc == UIW_RDMA_MSG);
    sc->step = 1;
    struct uiw_rpcrdma_hdr first = sc->h;
    /* nothing more may come while the first call is unanswered */
    EXPECT(rpcpeer_recv_hdr(&sc->p, sc->msg, sizeof(sc->msg), &sc->len, &sc->h, &sc->sp, 300) ==
           -ETIMEDOUT);
    sc->step = 2;
    sc->h = first;
    for (int k = 0; k < 4; k++) {
        struct uiw_rpcrdma_hdr r = {.xid = sc->h.xid, .vers = 1, .credit = 8, .proc = UIW_RDMA_MSG};
        EXPECT(reply_hdr(sc, &r, NULL, 0) == 0);
        if (k < 3)
            EXPECT(next(sc) == 1 && sc->h.vers == 1 && sc->h.proc == UIW_RDMA_MSG);
    }
    sc->step = 3;
    bool eof = false;
    rpcpeer_pump(&sc->p, WAIT, &eof);
    return NULL;
}

static void count_done(CLIENT *clnt, void *arg, enum clnt_stat stat, const struct rpc_err *err)
{
    (void)clnt;
    (void)err;
    int *n = arg;
    n[stat == RPC_SUCCESS ? 0 : stat == RPC_SYSTEMERROR ? 1 : 2]++;
}

/* n NULL calls made at once (asynchronous), and waited for: their outcomes are added to
 * out[0] (RPC_SUCCESS), out[1] (RPC_SYSTEMERROR) and out[2] (any other). */
static void null_calls(CLIENT *c, int n, int out[3])
{
    for (int i = 0; i < n; i++)
        CHECK_EQ(uiw_rpc_call_async(c, 0, (xdrproc_t)xnone, NULL, (xdrproc_t)xnone, NULL, TMO, NULL,
                                    count_done, out),
                 0);
    while (uiw_rpc_clnt_pending(c) > 0)
        CHECK(uiw_rpc_clnt_poll(c, WAIT) >= 0);
}

TEST(rpcrdma_client_one_call_until_first_reply)
{
    uint16_t port;
    struct script *sc = script_new(sizeof(*sc), &port);
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, first_credit_server, sc), 0);
    struct uiw_rpc_clnt_attr a = {0};
    a.xprt.vers_max = 1;
    CLIENT *c = client_of(port, &a);
    struct uiw_rpc_conn_info ci;
    CHECK_EQ(uiw_rpc_clnt_info(c, &ci), 0);
    CHECK_EQ(ci.vers, 1);
    CHECK_EQ(ci.credits, 1);
    int n[3] = {0, 0, 0};
    null_calls(c, 4, n);
    CHECK_EQ(n[0], 4);
    CHECK_EQ(uiw_rpc_clnt_info(c, &ci), 0);
    CHECK_EQ(ci.credits, 8);
    clnt_destroy(c);
    script_join(sc, th, 3);
    script_free(sc);
}

/* Draft section 7: the credit limit comes with the server's first valid message that is
 * not an RDMA_ERROR. A server answers the client's CONNPROP with RDMA2_ERROR (it takes no
 * property messages: INVAL_OPTION) and the first call with RDMA2_ERR_SYSTEM, both granting
 * 8: the client goes on in Version Two with one call at a time until the reply to its
 * second call grants 8; the other two then follow at once. */
static void *error_credit_server(void *arg)
{
    struct script *sc = arg;
    uiw_rpcrdma_space_init(&sc->sp, &sc->st);
    EXPECT(rpcpeer_accept(&sc->p, sc->lfd, NULL, 0, WAIT) == 0);
    EXPECT(next(sc) == 1 && sc->h.vers == 2 && sc->h.proc == UIW_RDMA2_CONNPROP);
    struct uiw_rpcrdma_hdr e = {.xid = sc->h.xid, .vers = 2, .credit = 8, .proc = UIW_RDMA_ERROR};
    e.u.error.errcode = UIW_RDMA2_ERR_INVAL_OPTION;
    EXPECT(rpcpeer_send_hdr(&sc->p, &e, NULL, 0) == 0);
    sc->step = 1;
    for (int k = 0; k < 2; k++) {
        EXPECT(next(sc) == 1 && sc->h.vers == 2 && sc->h.proc == UIW_RDMA_MSG);
        struct uiw_rpcrdma_hdr call = sc->h;
        /* nothing more may come while this call is unanswered */
        EXPECT(rpcpeer_recv_hdr(&sc->p, sc->msg, sizeof(sc->msg), &sc->len, &sc->h, &sc->sp, 300) ==
               -ETIMEDOUT);
        sc->h = call;
        if (k == 0) {
            e.xid = call.xid;
            e.u.error.errcode = UIW_RDMA2_ERR_SYSTEM;
            EXPECT(rpcpeer_send_hdr(&sc->p, &e, NULL, 0) == 0);
        } else {
            EXPECT(reply(sc, 8, NULL, 0, NULL, 0) == 0);
        }
        sc->step = 2 + k;
    }
    struct uiw_rpcrdma_hdr calls[2];
    for (int k = 0; k < 2; k++) {
        EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA_MSG);
        calls[k] = sc->h;
    }
    for (int k = 0; k < 2; k++) {
        sc->h = calls[k];
        EXPECT(reply(sc, 8, NULL, 0, NULL, 0) == 0);
    }
    sc->step = 4;
    return NULL;
}

TEST(rpcrdma_client_no_credits_from_errors)
{
    uint16_t port;
    struct script *sc = script_new(sizeof(*sc), &port);
    pthread_t th;
    CLIENT *c = client_to(sc, port, error_credit_server, &th);
    struct uiw_rpc_conn_info ci;
    CHECK_EQ(uiw_rpc_clnt_info(c, &ci), 0);
    CHECK_EQ(ci.vers, 2);
    CHECK_EQ(ci.credits, 1);
    int n[3] = {0, 0, 0};
    null_calls(c, 4, n);
    script_join(sc, th, 4); /* it ends with its last reply */
    CHECK_EQ(n[0], 3);
    CHECK_EQ(n[1], 1);
    CHECK_EQ(uiw_rpc_clnt_info(c, &ci), 0);
    CHECK_EQ(ci.credits, 8);
    clnt_destroy(c);
    script_free(sc);
}

/* Draft section 7: the client's first message is Version Two and at most 1024 bytes, even
 * with the largest CONNPROP it can send (eight experimental properties of 64 bytes) and a
 * first call of 3000 bytes waiting: that call goes only after the answer. Here the answer
 * is ERR_VERS (a Version One server) with no RFC 8797 private data: the client goes on in
 * Version One with the defaults (1024 bytes inline, no remote invalidation), so the call
 * goes as a long call (Position-Zero Read chunk), its Send at most 1024 bytes too. */
static uint32_t first_len, call_len;

static void *first_msg_server(void *arg)
{
    struct script *sc = arg;
    uiw_rpcrdma_space_init(&sc->sp, &sc->st);
    EXPECT(rpcpeer_accept(&sc->p, sc->lfd, NULL, 0, WAIT) == 0);
    EXPECT(next(sc) == 1 && sc->h.vers == 2 && sc->h.proc == UIW_RDMA2_CONNPROP);
    first_len = sc->len;
    struct uiw_rpcrdma_hdr e = {.xid = sc->h.xid, .vers = 2, .credit = 8, .proc = UIW_RDMA_ERROR};
    e.u.error.errcode = UIW_RDMA_ERR_VERS;
    e.u.error.vers_low = 1;
    e.u.error.vers_high = 1;
    EXPECT(rpcpeer_send_hdr(&sc->p, &e, NULL, 0) == 0);
    sc->step = 1;
    EXPECT(next(sc) == 1 && sc->h.vers == 1 && sc->h.proc == UIW_RDMA_NOMSG);
    EXPECT(sc->h.u.chunks.nreads == 1 && sc->h.u.chunks.reads[0].position == 0);
    EXPECT(sc->h.u.chunks.reads[0].target.length > 3000);
    call_len = sc->len;
    struct uiw_rpcrdma_hdr r = {.xid = sc->h.xid, .vers = 1, .credit = 8, .proc = UIW_RDMA_MSG};
    EXPECT(reply_hdr(sc, &r, NULL, 0) == 0);
    sc->step = 2;
    bool eof = false;
    rpcpeer_pump(&sc->p, WAIT, &eof);
    return NULL;
}

TEST(rpcrdma_client_first_message_small)
{
    uint16_t port;
    struct script *sc = script_new(sizeof(*sc), &port);
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, first_msg_server, sc), 0);
    struct uiw_rpc_clnt_attr a = {0};
    a.xprt.ddp_threshold = 1u << 30;
    a.xprt.nxprops = UIW_RPC_XPROP_MAX;
    for (unsigned i = 0; i < UIW_RPC_XPROP_MAX; i++) {
        a.xprt.xprops[i].which = UIW_RPC_XPROP_MIN + i;
        a.xprt.xprops[i].len = UIW_RPC_XPROP_DATA;
        memset(a.xprt.xprops[i].data, 'x', UIW_RPC_XPROP_DATA);
    }
    CLIENT *c = client_of(port, &a);
    struct uiw_rpc_conn_info ci;
    CHECK_EQ(uiw_rpc_clnt_info(c, &ci), 0);
    CHECK_EQ(ci.vers, 1);
    CHECK(ci.vers_fallback);
    CHECK(!ci.peer_cm_private);
    CHECK_EQ(ci.inline_send, 1024);
    CHECK(!ci.remote_invalidation);
    static char buf[3000];
    struct blob b = {sizeof(buf), buf};
    CHECK_EQ(clnt_call(c, 1, (xdrproc_t)xblob, (char *)&b, (xdrproc_t)xnone, NULL, TMO),
             RPC_SUCCESS);
    clnt_destroy(c);
    script_join(sc, th, 2);
    CHECK(first_len > 600); /* the eight properties were in it */
    CHECK(first_len <= 1024);
    CHECK(call_len <= 1024);
    script_free(sc);
}

/* A raw server that pulls the client's Read chunk slowly: one 4 KiB RDMA Read every
 * 4 ms, then the reply at once. */
#define SLOW_READS 30
#define SLOW_PIECE 4096u

static void *slow_pull_server(void *arg)
{
    struct script *sc = arg;
    uiw_rpcrdma_space_init(&sc->sp, &sc->st);
    EXPECT(rpcpeer_accept(&sc->p, sc->lfd, NULL, 0, WAIT) == 0);
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA2_CONNPROP);
    EXPECT(connprop(sc, 8) == 0);
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA_MSG && sc->h.u.chunks.nreads == 1);
    struct uiw_rpcrdma_segment s = sc->h.u.chunks.reads[0].target;
    EXPECT(s.length == SLOW_READS * SLOW_PIECE);
    static uint8_t ulpdu[65536];
    for (uint32_t i = 0; i < SLOW_READS; i++) {
        struct timespec ts = {0, 4000000L};
        nanosleep(&ts, NULL);
        struct uiw_rdmap_read_req rr = {.sink_stag = 0x5100 + i,
                                        .sink_to = 0,
                                        .size = SLOW_PIECE,
                                        .src_stag = s.handle,
                                        .src_to = s.offset + i * SLOW_PIECE};
        EXPECT(rawpeer_send_read_req(&sc->p.raw, &rr) == 0);
        uint32_t got = 0;
        while (got < SLOW_PIECE) {
            uint16_t len = 0;
            EXPECT(rawpeer_recv_fpdu(&sc->p.raw, ulpdu, sizeof(ulpdu), &len, WAIT) == 1);
            EXPECT(len >= UIW_DDP_TAGGED_HDR_LEN);
            got += len - UIW_DDP_TAGGED_HDR_LEN;
        }
        EXPECT(got == SLOW_PIECE);
    }
    sc->step = 1;
    uint8_t res[4];
    uiw__put_be32(res, SLOW_READS * SLOW_PIECE);
    EXPECT(reply(sc, 8, res, 4, NULL, 0) == 0);
    sc->step = 2;
    bool eof = false;
    rpcpeer_pump(&sc->p, WAIT, &eof);
    return NULL;
}

/* The spin counts idle polling only: a caller whose Read chunk the server pulls for far
 * longer than its spin, each piece well within it, is still polling when the reply comes
 * (serving the Reads was the RNIC's work in its thread, not waiting), so it never sleeps. */
TEST(rpcrdma_client_spin_outlasts_a_slow_pull)
{
    uint16_t port;
    struct script *sc = script_new(sizeof(*sc), &port);
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, slow_pull_server, sc), 0);
    struct uiw_rpc_clnt_attr a = {0};
    a.xprt.spin_us = 50000; /* 50 ms: the pull takes 120 ms, a piece 4 */
    CLIENT *c = client_of(port, &a);
    static char buf[SLOW_READS * SLOW_PIECE];
    struct blob b = {sizeof(buf), buf};
    u_int res = 0;
    struct uiw_rpc_xprt_stats s0, s1;
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &s0), 0);
    CHECK_EQ(clnt_call(c, 2, (xdrproc_t)xblob, (char *)&b, (xdrproc_t)xdr_u_int, (char *)&res, TMO),
             RPC_SUCCESS);
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &s1), 0);
    CHECK_EQ(res, sizeof(buf));
    CHECK_EQ(s1.sleeps - s0.sleeps, 0);
    clnt_destroy(c);
    script_join(sc, th, 2);
    script_free(sc);
}

/* A raw server that answers a call by Send With Invalidate of an STag that is not one of
 * the call's (its Write chunk's STag under another key: the RNIC lets it pass, an STag of
 * the connection's own PD invalidated already changes nothing): the client takes no such
 * reply, and ends the connection. */
static void *wrong_inv_server(void *arg)
{
    struct script *sc = arg;
    uiw_rpcrdma_space_init(&sc->sp, &sc->st);
    EXPECT(rpcpeer_accept(&sc->p, sc->lfd, NULL, 0, WAIT) == 0);
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA2_CONNPROP);
    EXPECT(connprop(sc, 8) == 0);
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA_MSG && sc->h.u.chunks.nwrites == 1);
    struct uiw_rpcrdma_segment s = sc->h.u.chunks.writes[0].segs[0];
    uint32_t wrong = (s.handle & ~0xffu) | ((s.handle + 1) & 0xffu);
    struct uiw_rpcrdma_hdr h = {.xid = sc->h.xid, .vers = 2, .credit = 8, .proc = UIW_RDMA_MSG};
    h.u.chunks.direction = UIW_RPCRDMA_REPLY;
    s.length = 0;
    struct uiw_rpcrdma_write_chunk wc = {1, &s};
    h.u.chunks.nwrites = 1;
    h.u.chunks.writes = &wc;
    uint8_t msg[256];
    int n = uiw_rpcrdma_encode(msg, sizeof(msg), &h);
    EXPECT(n > 0);
    uint32_t w[] = {sc->h.xid, 1, 0, 0, 0, 0, 0};
    for (int i = 0; i < 7; i++)
        uiw__put_be32(msg + n + 4 * i, w[i]);
    EXPECT(rawpeer_send_send(&sc->p.raw, UIW_RDMAP_SEND_INV, wrong, msg, (size_t)n + 28) == 0);
    sc->step = 1;
    struct rawpeer_term t;
    EXPECT(rawpeer_expect_terminate(&sc->p.raw, &t, WAIT) == 0);
    sc->term_seen = true;
    sc->step = 2;
    return NULL;
}

TEST(rpcrdma_client_reply_by_send_inv_of_another_stag)
{
    uint16_t port;
    struct script *sc = script_new(sizeof(*sc), &port);
    pthread_t th;
    CLIENT *c = client_to(sc, port, wrong_inv_server, &th);
    static char buf[5000];
    struct uiw_rpc_call_opts o = {0};
    o.nresult_bufs = 1;
    o.result_bufs[0] = (struct uiw_rpc_ddp_buf){buf, sizeof(buf)};
    u_int n = 5000;
    struct blob b = {sizeof(buf), buf};
    CHECK(uiw_rpc_call(c, 1, (xdrproc_t)xdr_u_int, (char *)&n, (xdrproc_t)xblob, (char *)&b, TMO,
                       &o) != RPC_SUCCESS);
    script_join(sc, th, 2);
    CHECK(sc->term_seen);
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &st), 0);
    CHECK_EQ(st.lost, 1);
    clnt_destroy(c);
    script_free(sc);
}

/* A raw server that answers its first SLOW_CALLS calls SLOW_MS late, the next FAST_CALLS
 * at once. */
#define SLOW_CALLS 12
#define FAST_CALLS 24
#define SLOW_MS    30

static void *late_then_prompt_server(void *arg)
{
    struct script *sc = arg;
    uiw_rpcrdma_space_init(&sc->sp, &sc->st);
    EXPECT(rpcpeer_accept(&sc->p, sc->lfd, NULL, 0, WAIT) == 0);
    EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA2_CONNPROP);
    EXPECT(connprop(sc, 8) == 0);
    for (int i = 0; i < SLOW_CALLS + FAST_CALLS; i++) {
        EXPECT(next(sc) == 1 && sc->h.proc == UIW_RDMA_MSG);
        if (i < SLOW_CALLS) {
            struct timespec ts = {0, SLOW_MS * 1000000L};
            nanosleep(&ts, NULL);
        }
        EXPECT(reply(sc, 8, NULL, 0, NULL, 0) == 0);
    }
    sc->step = 1;
    bool eof = false;
    rpcpeer_pump(&sc->p, WAIT, &eof);
    return NULL;
}

/* A caller whose replies keep coming long after its spin stops spinning for them (it
 * sleeps at once, burning no CPU), and spins again once they come within it. */
TEST(rpcrdma_client_spin_skipped_while_replies_come_late)
{
    uint16_t port;
    struct script *sc = script_new(sizeof(*sc), &port);
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, late_then_prompt_server, sc), 0);
    struct uiw_rpc_clnt_attr a = {0};
    a.xprt.spin_us = 10000; /* 10 ms: a late reply comes 30 ms after the call (one sleep
                             * of the leader, shorter than its slice) */
    CLIENT *c = client_of(port, &a);
    struct uiw_rpc_xprt_stats s0, s1, s2, s3;
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &s0), 0);
    double cpu = 0;
    for (int i = 0; i < SLOW_CALLS; i++) {
        /* the last eight: after four spins that the reply outlasted */
        if (i == SLOW_CALLS - 8)
            cpu = clock_s(CLOCK_THREAD_CPUTIME_ID);
        CHECK_EQ(clnt_call(c, 0, (xdrproc_t)xnone, NULL, (xdrproc_t)xnone, NULL, TMO), RPC_SUCCESS);
    }
    cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - cpu;
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &s1), 0);
    CHECK(s1.spins_skipped - s0.spins_skipped >= 3);
    /* eight spins of 10 ms would have taken 80 ms of CPU time; one of them is a probe
     * (one wait in 8 spins), and the rest of a call costs some under a sanitizer on a
     * loaded host */
    CHECK(cpu < 0.05);
    /* prompt replies: within 8 calls one spins and ends with its reply, and spinning
     * goes on (but on a host so loaded that a prompt reply takes longer than the spin
     * now and then: not one call in two skipping it, as the probes alone would) */
    for (int i = 0; i < 8; i++)
        CHECK_EQ(clnt_call(c, 0, (xdrproc_t)xnone, NULL, (xdrproc_t)xnone, NULL, TMO), RPC_SUCCESS);
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &s2), 0);
    for (int i = 8; i < FAST_CALLS; i++)
        CHECK_EQ(clnt_call(c, 0, (xdrproc_t)xnone, NULL, (xdrproc_t)xnone, NULL, TMO), RPC_SUCCESS);
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &s3), 0);
    CHECK(s3.spins_skipped - s2.spins_skipped <= (FAST_CALLS - 8) / 2);
    clnt_destroy(c);
    script_join(sc, th, 1);
    script_free(sc);
}
