/*
 * RPC-over-RDMA under bad input: a hostile raw peer (rpcpeer.h) sends the project's
 * server malformed headers, chunks that break the rules or point where it never
 * registered, more calls than its credits, garbage, and Read chunks it never serves; or
 * plays a server that answers the project's client wrongly. Each case checks the exact
 * RDMA_ERROR of the draft / RFC 8166 on the wire, that the stack writes only inside the
 * chunks it was given, and that the server goes on serving others.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uiw/rpc.h>

#include "common/byteorder.h"
#include "rpcpeer.h"
#include "rpc/rpc_internal.h"
#include "rpcrdma/xprt.h"
#include "test.h"

#define PROG 0x20000aa0u
#define WAIT 5000

enum {
    P_NULL = 0,
    P_GEN = 1,
    P_SINK = 2,
    P_SLEEP = 3,
    P_SYSERR = 4,
    P_WHO = 5,
    P_REPLY_SLEEP = 6,
    P_HOLD = 7,
    P_BIG = 8,
    P_REG = 9,
    P_UNREG = 10,
    P_TWO = 11
};

/* P_TWO's result: two opaques (two Write chunks). */
static bool_t xdr_two(XDR *x, struct rpcpeer_blob *b)
{
    return rpcpeer_xdr_blob(x, &b[0]) && rpcpeer_xdr_blob(x, &b[1]);
}

/* P_REG's registration (of one connection at a time) and the memory it covers. */
static struct uiw__rr_mr *reg_mr;
static uint8_t victim[64];

/* P_BIG's result: bytes of the procedure's own memory, not the transport's. */
#define BIG_MAX (15u << 20)
static uint8_t big[BIG_MAX];

/* P_HOLD calls running, and whether they may reply (at most 20 s: a failed test ends). */
static atomic_uint holding;
static atomic_bool hold_released;

static const struct timeval TMO = {10, 0};

#define xnone rpcpeer_xdr_void

static void dispatch(struct svc_req *rq, SVCXPRT *x)
{
    switch (rq->rq_proc) {
    case P_NULL:
        svc_sendreply(x, (xdrproc_t)xnone, NULL);
        return;
    case P_GEN:
        rpcpeer_serve_gen(x, 1u << 22);
        return;
    case P_SINK:
        rpcpeer_serve_sink(x, 1u << 22);
        return;
    case P_SLEEP: {
        struct timespec ts = {0, 200000000L};
        nanosleep(&ts, NULL);
        svc_sendreply(x, (xdrproc_t)xnone, NULL);
        return;
    }
    case P_SYSERR:
        svcerr_systemerr(x);
        return;
    case P_WHO: { /* the caller's AUTH_SYS uid, or ~0 for another flavor */
        u_int uid = ~0u;
        if (rq->rq_cred.oa_flavor == AUTH_SYS && rq->rq_clntcred)
            uid = (u_int)((const struct authsys_parms *)rq->rq_clntcred)->aup_uid;
        svc_sendreply(x, (xdrproc_t)xdr_u_int, (char *)&uid);
        return;
    }
    case P_REPLY_SLEEP: { /* the call ends well after its reply went out */
        svc_sendreply(x, (xdrproc_t)xnone, NULL);
        struct timespec ts = {2, 0};
        nanosleep(&ts, NULL);
        return;
    }
    case P_HOLD: { /* replies once the test lets it */
        atomic_fetch_add(&holding, 1);
        for (int i = 0; i < 20000 && !atomic_load(&hold_released); i++) {
            struct timespec ts = {0, 1000000L};
            nanosleep(&ts, NULL);
        }
        svc_sendreply(x, (xdrproc_t)xnone, NULL);
        return;
    }
    case P_BIG: { /* u_int n -> opaque<> of n bytes from big[] */
        u_int n;
        if (!svc_getargs(x, (xdrproc_t)xdr_u_int, (char *)&n) || n > BIG_MAX) {
            svcerr_decode(x);
            return;
        }
        struct rpcpeer_blob b = {n, (char *)big};
        svc_sendreply(x, (xdrproc_t)rpcpeer_xdr_blob, (char *)&b);
        return;
    }
    case P_TWO: { /* u_int n -> two opaque<> of n bytes, in registered memory */
        u_int n;
        if (!svc_getargs(x, (xdrproc_t)xdr_u_int, (char *)&n) || n > 65536) {
            svcerr_decode(x);
            return;
        }
        struct rpcpeer_blob b[2] = {{n, uiw_svc_getbuf(x, n)}, {n, uiw_svc_getbuf(x, n)}};
        if (!b[0].val || !b[1].val) {
            svcerr_systemerr(x);
            return;
        }
        memset(b[0].val, 1, n);
        memset(b[1].val, 2, n);
        svc_sendreply(x, (xdrproc_t)xdr_two, (char *)b);
        return;
    }
    case P_REG: { /* a registration of the call's connection a peer may write: its STag */
        struct uiw__rr_conn *c = ((struct uiw__rpc_scall *)x->xp_p1)->k.conn;
        u_int stag = 0;
        if (!reg_mr) {
            reg_mr = uiw__rr_mr_get(c);
            CHECK(reg_mr != NULL);
            struct uiw__nic_send wr = {.wr_id = (uint64_t)(uintptr_t)&c->ignore,
                                       .op = UIW__NIC_REG,
                                       .mr = &reg_mr->nmr,
                                       .key = uiw__nic_next_key(reg_mr->nmr.rkey),
                                       .addr = victim,
                                       .len = sizeof(victim),
                                       .access = UIW__NIC_REMOTE_WRITE};
            reg_mr->nmr.rkey = wr.key;
            reg_mr->valid = true;
            CHECK_EQ(uiw__rr_post(c, &wr), 0); /* before the reply, on the same queue */
            stag = wr.key;
        }
        svc_sendreply(x, (xdrproc_t)xdr_u_int, (char *)&stag);
        return;
    }
    case P_UNREG:
        if (reg_mr) {
            uiw__nic_frmr_reset(&reg_mr->nmr);
            reg_mr->valid = false;
            uiw__rr_mr_put(reg_mr);
            reg_mr = NULL;
        }
        svc_sendreply(x, (xdrproc_t)xnone, NULL);
        return;
    default:
        svcerr_noproc(x);
    }
}

struct server {
    struct uiw_rpc_svc *svc;
    uint16_t port;
};

static void server_up_attr(struct server *s, const struct uiw_rpc_svc_attr *a)
{
    s->svc = uiw_rpc_svc_create(a);
    CHECK(s->svc != NULL);
    CHECK_EQ(uiw_rpc_svc_register(s->svc, PROG, 1, dispatch), 0);
    CHECK_EQ(uiw_rpc_svc_start(s->svc), 0);
    s->port = uiw_rpc_svc_port(s->svc);
}

static void server_up(struct server *s, uint32_t vers_max, uint32_t credits, uint32_t read_ms,
                      unsigned nthreads)
{
    struct uiw_rpc_svc_attr a = {0};
    a.xprt.vers_max = vers_max;
    a.xprt.credits = credits;
    a.read_timeout_ms = read_ms;
    a.nthreads = nthreads;
    server_up_attr(s, &a);
}

static void server_down(struct server *s)
{
    CHECK_EQ(uiw_rpc_svc_destroy(s->svc), 0);
}

/* A well-behaved client still gets answers. */
static void still_serves(struct server *s)
{
    CLIENT *c = uiw_rpc_clnt_create("127.0.0.1", s->port, PROG, 1, NULL);
    CHECK(c != NULL);
    CHECK_EQ(clnt_call(c, P_NULL, (xdrproc_t)xnone, NULL, (xdrproc_t)xnone, NULL, TMO),
             RPC_SUCCESS);
    clnt_destroy(c);
}

struct rx {
    uint8_t msg[RPCPEER_MSG_MAX];
    uint32_t len;
    struct uiw_rpcrdma_hdr h;
    struct uiw_rpcrdma_space sp;
    struct uiw_rpcrdma_space_default st;
};

static struct rx *rx_new(void)
{
    struct rx *x = calloc(1, sizeof(*x));
    uiw_rpcrdma_space_init(&x->sp, &x->st);
    return x;
}

static void connect_peer(struct rpcpeer *p, const struct server *s)
{
    CHECK_EQ(rpcpeer_connect(p, s->port, NULL, 0, false), 0);
}

/* A server, a raw peer connected to it, a receive area. */
struct fx {
    struct server s;
    struct rpcpeer p;
    struct rx *x;
};

/* A server running its calls on nthreads threads, and a peer connected to it. */
static struct fx *fx_up_n(uint32_t vers_max, uint32_t credits, uint32_t read_ms, unsigned nthreads)
{
    struct fx *f = calloc(1, sizeof(*f));
    server_up(&f->s, vers_max, credits, read_ms, nthreads);
    connect_peer(&f->p, &f->s);
    f->x = rx_new();
    return f;
}

static struct fx *fx_up(uint32_t vers_max, uint32_t credits, uint32_t read_ms)
{
    return fx_up_n(vers_max, credits, read_ms, 2);
}

static void fx_down(struct fx *f, bool reset)
{
    rpcpeer_close(&f->p, reset);
    free(f->x);
    server_down(&f->s);
    free(f);
}

/* The next message must be an RDMA_ERROR with this code (and the xid / vers copied). */
static void got_error(struct rpcpeer *p, struct rx *x, uint32_t xid, uint32_t vers, uint32_t code)
{
    int r = rpcpeer_recv_hdr(p, x->msg, sizeof(x->msg), &x->len, &x->h, &x->sp, WAIT);
    if (r != 1)
        uiw_test_fail(__FILE__, __LINE__, "no answer: %d", r);
    CHECK_EQ(x->h.proc, UIW_RDMA_ERROR);
    CHECK_EQ(x->h.xid, xid);
    CHECK_EQ(x->h.vers, vers);
    CHECK_EQ(x->h.u.error.errcode, code);
}

/* Send raw bytes, expect that RDMA_ERROR. */
static void expect_error(struct rpcpeer *p, struct rx *x, const void *msg, uint32_t len,
                         uint32_t xid, uint32_t vers, uint32_t code)
{
    CHECK_EQ(rpcpeer_send(p, msg, len), 0);
    got_error(p, x, xid, vers, code);
}

/* A call header of `vers` for xid with read segments rs[0..nrs). */
static struct uiw_rpcrdma_hdr call_hdr(uint32_t xid, uint32_t vers, uint32_t proc,
                                       const struct uiw_rpcrdma_read_segment *rs, uint32_t nrs)
{
    struct uiw_rpcrdma_hdr h = {.xid = xid, .vers = vers, .credit = 4, .proc = proc};
    h.u.chunks.direction = UIW_RPCRDMA_CALL;
    h.u.chunks.nreads = nrs;
    h.u.chunks.reads = (struct uiw_rpcrdma_read_segment *)(uintptr_t)rs;
    return h;
}

/* The XDR of an opaque<>'s length word (its data in a Read chunk right after it). */
static const uint8_t *len_word(uint8_t b[4], uint32_t n)
{
    uiw__put_be32(b, n);
    return b;
}

static uint32_t words(uint8_t *b, const uint32_t *w, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        uiw__put_be32(b + 4 * i, w[i]);
    return 4 * n;
}

/* A NULL call of `vers` is answered by the reply that matches it. */
static void null_served(struct fx *f, uint32_t xid, uint32_t vers)
{
    struct uiw_rpcrdma_hdr h = call_hdr(xid, vers, UIW_RDMA_MSG, NULL, 0);
    CHECK_EQ(rpcpeer_send_call(&f->p, &h, 0, PROG, P_NULL, NULL, 0), 0);
    CHECK_EQ(rpcpeer_recv_hdr(&f->p, f->x->msg, sizeof(f->x->msg), &f->x->len, &f->x->h, &f->x->sp,
                              WAIT),
             1);
    CHECK_EQ(f->x->h.proc, UIW_RDMA_MSG);
    CHECK_EQ(f->x->h.xid, xid);
    CHECK_EQ(f->x->h.vers, vers);
    if (vers == 2)
        CHECK_EQ(f->x->h.u.chunks.direction, UIW_RPCRDMA_REPLY);
    CHECK(f->x->h.credit >= 1);
}

/* ---------------------------------------------------------------- malformed headers */

TEST(rpcrdma_malformed_headers_v2)
{
    struct fx *f = fx_up(2, 0, 0);
    uint8_t b[256];
    /* truncated: xid, vers, credit only -> BAD_XDR before anything else */
    uint32_t n = words(b, (uint32_t[]){0x1111, 2, 8}, 3);
    expect_error(&f->p, f->x, b, n, 0x1111, 2, UIW_RDMA2_ERR_BAD_XDR);
    /* an unknown procedure -> INVAL_PROC */
    n = words(b, (uint32_t[]){0x2222, 2, 8, 10}, 4);
    expect_error(&f->p, f->x, b, n, 0x2222, 2, UIW_RDMA2_ERR_INVAL_PROC);
    /* procedures 2 and 3 do not exist in Version Two */
    n = words(b, (uint32_t[]){0x2223, 2, 8, 3}, 4);
    expect_error(&f->p, f->x, b, n, 0x2223, 2, UIW_RDMA2_ERR_INVAL_PROC);
    /* an unsupported version -> ERR_VERS with our range, vers copied */
    n = words(b, (uint32_t[]){0x3333, 3, 8, 0}, 4);
    expect_error(&f->p, f->x, b, n, 0x3333, 3, UIW_RDMA_ERR_VERS);
    CHECK_EQ(f->x->h.u.error.vers_low, 1);
    CHECK_EQ(f->x->h.u.error.vers_high, 2);
    /* RDMA2_OPTIONAL of a type nobody knows -> INVAL_OPTION */
    n = words(b, (uint32_t[]){0x4444, 2, 8, 5, 1, 77, 0}, 7);
    expect_error(&f->p, f->x, b, n, 0x4444, 2, UIW_RDMA2_ERR_INVAL_OPTION);
    /* a bad discriminator in the read list -> BAD_XDR */
    n = words(b, (uint32_t[]){0x5555, 2, 8, 0, 0, 0, 7}, 7);
    expect_error(&f->p, f->x, b, n, 0x5555, 2, UIW_RDMA2_ERR_BAD_XDR);
    /* a direction that is neither CALL nor REPLY -> BAD_XDR */
    n = words(b, (uint32_t[]){0x5556, 2, 8, 0, 9, 0, 0, 0, 0}, 9);
    expect_error(&f->p, f->x, b, n, 0x5556, 2, UIW_RDMA2_ERR_BAD_XDR);
    /* a known property with an invalid value -> BAD_XDR (RBSIZ below 1024) */
    n = words(b, (uint32_t[]){0x5557, 2, 8, 6, 1, 1, 4, 512, 0}, 9);
    expect_error(&f->p, f->x, b, n, 0x5557, 2, UIW_RDMA2_ERR_BAD_XDR);
    null_served(f, 0x77, 2); /* the connection survives all of it */
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw_rpc_svc_xprt_stats(f->s.svc, &st), 0);
    CHECK_EQ(st.errors_sent[UIW_RDMA2_ERR_BAD_XDR], 4);
    CHECK_EQ(st.errors_sent[UIW_RDMA2_ERR_INVAL_PROC], 2);
    CHECK_EQ(st.errors_sent[UIW_RDMA_ERR_VERS], 1);
    CHECK_EQ(st.errors_sent[UIW_RDMA2_ERR_INVAL_OPTION], 1);
    fx_down(f, false);
}

TEST(rpcrdma_malformed_headers_v1)
{
    struct fx *f = fx_up(2, 0, 0);
    uint8_t b[256];
    /* RDMA_MSGP and RDMA_DONE are not to be used; 7 does not exist: ERR_CHUNK */
    uint32_t n = words(b, (uint32_t[]){0x10, 1, 8, 2, 0, 0, 0, 0, 0}, 9);
    expect_error(&f->p, f->x, b, n, 0x10, 1, UIW_RDMA_ERR_CHUNK);
    n = words(b, (uint32_t[]){0x11, 1, 8, 3}, 4);
    expect_error(&f->p, f->x, b, n, 0x11, 1, UIW_RDMA_ERR_CHUNK);
    n = words(b, (uint32_t[]){0x12, 1, 8, 7}, 4);
    expect_error(&f->p, f->x, b, n, 0x12, 1, UIW_RDMA_ERR_CHUNK);
    /* a write chunk whose segment count overruns the message */
    n = words(b, (uint32_t[]){0x13, 1, 8, 0, 0, 1, 1000}, 7);
    expect_error(&f->p, f->x, b, n, 0x13, 1, UIW_RDMA_ERR_CHUNK);
    fx_down(f, false);
}

/* A Version Two message to a Version One only server: ERR_VERS 1..1 (what the Linux
 * kernel answers too). */
TEST(rpcrdma_vers1_only_server)
{
    struct fx *f = fx_up(1, 0, 0);
    uint8_t b[64];
    uint32_t n = words(b, (uint32_t[]){0xabc, 2, 8, 6, 0, 0}, 6); /* an empty CONNPROP */
    expect_error(&f->p, f->x, b, n, 0xabc, 2, UIW_RDMA_ERR_VERS);
    CHECK_EQ(f->x->h.u.error.vers_low, 1);
    CHECK_EQ(f->x->h.u.error.vers_high, 1);
    fx_down(f, false);
}

/* A Version One only server answers ERR_VERS to a Version Two header before reading the
 * rest of it (RFC 8166 section 4.5, draft 7.2): an unknown procedure, a header cut short
 * and a bad read list get ERR_VERS 1..1, not INVAL_PROC or BAD_XDR. */
TEST(rpcrdma_vers1_only_server_checks_version_first)
{
    struct fx *f = fx_up(1, 0, 0);
    uint8_t b[64];
    uint32_t n = words(b, (uint32_t[]){0xabd, 2, 8, 10}, 4); /* procedure 10 */
    expect_error(&f->p, f->x, b, n, 0xabd, 2, UIW_RDMA_ERR_VERS);
    CHECK_EQ(f->x->h.u.error.vers_low, 1);
    CHECK_EQ(f->x->h.u.error.vers_high, 1);
    n = words(b, (uint32_t[]){0xabe, 2, 8}, 3); /* no procedure */
    expect_error(&f->p, f->x, b, n, 0xabe, 2, UIW_RDMA_ERR_VERS);
    n = words(b, (uint32_t[]){0xabf, 2, 8, 0, 0, 0, 7}, 7); /* read list discriminator 7 */
    expect_error(&f->p, f->x, b, n, 0xabf, 2, UIW_RDMA_ERR_VERS);
    CHECK_EQ(f->x->h.u.error.vers_high, 1);
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw_rpc_svc_xprt_stats(f->s.svc, &st), 0);
    CHECK_EQ(st.errors_sent[UIW_RDMA_ERR_VERS], 3);
    CHECK_EQ(st.errors_sent[UIW_RDMA2_ERR_BAD_XDR], 0);
    CHECK_EQ(st.errors_sent[UIW_RDMA2_ERR_INVAL_PROC], 0);
    null_served(f, 0xac0, 1); /* and a Version One call is served */
    fx_down(f, false);
}

/* Draft 5.3.3: rdma_done, rdma_rejected and rdma_other never overlap. A REQPROP naming
 * RBSIZ twice (2048, which the server could take, then 8192, beyond its buffers) gets one
 * answer for it, rejected, and none in done or other; BRS, named once, is done. */
TEST(rpcrdma_reqprop_property_twice)
{
    struct fx *f = fx_up(2, 0, 0);
    struct uiw_rpcrdma_prop want[3] = {{UIW_RPCRDMA_PROP_RBSIZ, 4, NULL, 2048},
                                       {UIW_RPCRDMA_PROP_BRS, 4, NULL, UIW_RDMA2_BKREQSUP_INLINE},
                                       {UIW_RPCRDMA_PROP_RBSIZ, 4, NULL, 8192}};
    struct uiw_rpcrdma_hdr h = {.xid = 0x6600, .vers = 2, .credit = 4, .proc = UIW_RDMA2_REQPROP};
    h.u.reqprop.want.n = 3;
    h.u.reqprop.want.props = want;
    CHECK_EQ(rpcpeer_send_hdr(&f->p, &h, NULL, 0), 0);
    struct rx *x = f->x;
    CHECK_EQ(rpcpeer_recv_hdr(&f->p, x->msg, sizeof(x->msg), &x->len, &x->h, &x->sp, WAIT), 1);
    CHECK_EQ(x->h.proc, UIW_RDMA2_RESPROP);
    CHECK_EQ(x->h.xid, 0x6600);
    CHECK(!uiw_rpcrdma_subset_has(&x->h.u.resprop.done, UIW_RPCRDMA_PROP_RBSIZ));
    CHECK(uiw_rpcrdma_subset_has(&x->h.u.resprop.rejected, UIW_RPCRDMA_PROP_RBSIZ));
    CHECK(uiw_rpcrdma_propset_find(&x->h.u.resprop.other, UIW_RPCRDMA_PROP_RBSIZ) == NULL);
    CHECK(uiw_rpcrdma_subset_has(&x->h.u.resprop.done, UIW_RPCRDMA_PROP_BRS));
    CHECK(!uiw_rpcrdma_subset_has(&x->h.u.resprop.rejected, UIW_RPCRDMA_PROP_BRS));
    CHECK_EQ(x->h.u.resprop.other.n, 0);
    null_served(f, 0x6601, 2);
    fx_down(f, false);
}

/* ---------------------------------------------------------------- ONC RPC replies */

/* Send an ONC RPC message given as words under an RDMA_MSG header of xid, and return the
 * words of its reply after the xid and REPLY (at most cap of them): their count. */
static uint32_t rpc_exchange(struct fx *f, uint32_t xid, const uint32_t *call, unsigned nw,
                             uint32_t *out, uint32_t cap)
{
    uint8_t b[256];
    uint32_t n = words(b, call, nw);
    struct uiw_rpcrdma_hdr h = call_hdr(xid, 2, UIW_RDMA_MSG, NULL, 0);
    CHECK_EQ(rpcpeer_send_hdr(&f->p, &h, b, n), 0);
    CHECK_EQ(rpcpeer_recv_hdr(&f->p, f->x->msg, sizeof(f->x->msg), &f->x->len, &f->x->h, &f->x->sp,
                              WAIT),
             1);
    CHECK_EQ(f->x->h.proc, UIW_RDMA_MSG);
    CHECK_EQ(f->x->h.xid, xid);
    CHECK_EQ(f->x->h.u.chunks.direction, UIW_RPCRDMA_REPLY);
    const uint8_t *rp = f->x->msg + f->x->h.hdr_len;
    uint32_t len = f->x->len - f->x->h.hdr_len;
    CHECK(len % 4 == 0 && len >= 8 && len / 4 - 2 <= cap);
    CHECK_EQ(uiw__get_be32(rp), xid);
    CHECK_EQ(uiw__get_be32(rp + 4), 1); /* REPLY */
    for (uint32_t i = 0; i < len / 4 - 2; i++)
        out[i] = uiw__get_be32(rp + 8 + 4 * i);
    return len / 4 - 2;
}

/* The reply, after xid and REPLY, is exactly these words. */
#define RPC_REPLY(f, xid, call, ...)                                                               \
    do {                                                                                           \
        const uint32_t want_[] = {__VA_ARGS__};                                                    \
        uint32_t got_[16];                                                                         \
        unsigned n_ = sizeof(want_) / sizeof(want_[0]);                                            \
        CHECK_EQ(rpc_exchange(f, xid, call, sizeof(call) / sizeof(call[0]), got_, 16), n_);        \
        for (unsigned i_ = 0; i_ < n_; i_++)                                                       \
            CHECK_EQ(got_[i_], want_[i_]);                                                         \
    } while (0)

/* Every reply status of RFC 5531 from the server's RPC layer over RPC-over-RDMA: RPC
 * version, credentials, program, version, procedure, arguments, a procedure's own
 * SYSTEM_ERR; AUTH_NONE and AUTH_SYS taken, the AUTH_SYS uid handed to the procedure.
 * Each answer is exact, and the connection goes on. */
TEST(rpcrdma_rpc_reply_errors)
{
    struct fx *f = fx_up(2, 0, 0);
    enum { DENIED = 1, ACCEPTED = 0 };
    /* xid, CALL, rpcvers, prog, vers, proc, cred (flavor, length, body), verf (0, 0) */
    const uint32_t rpcv3[] = {0x100, 0, 3, PROG, 1, P_NULL, 0, 0, 0, 0};
    RPC_REPLY(f, 0x100, rpcv3, DENIED, RPC_MISMATCH, 2, 2);
    const uint32_t dh[] = {0x101, 0, 2, PROG, 1, P_NULL, AUTH_DH, 0, 0, 0};
    RPC_REPLY(f, 0x101, dh, DENIED, AUTH_ERROR, AUTH_BADCRED);
    /* AUTH_SYS whose machine name runs past its body */
    const uint32_t badsys[] = {0x102, 0, 2, PROG, 1, P_NULL, AUTH_SYS, 8, 1, 5, 0, 0};
    RPC_REPLY(f, 0x102, badsys, DENIED, AUTH_ERROR, AUTH_BADCRED);
    const uint32_t prog[] = {0x103, 0, 2, PROG + 1, 1, P_NULL, 0, 0, 0, 0};
    RPC_REPLY(f, 0x103, prog, ACCEPTED, AUTH_NONE, 0, PROG_UNAVAIL);
    const uint32_t vers[] = {0x104, 0, 2, PROG, 2, P_NULL, 0, 0, 0, 0};
    RPC_REPLY(f, 0x104, vers, ACCEPTED, AUTH_NONE, 0, PROG_MISMATCH, 1, 1);
    const uint32_t proc[] = {0x105, 0, 2, PROG, 1, 99, 0, 0, 0, 0};
    RPC_REPLY(f, 0x105, proc, ACCEPTED, AUTH_NONE, 0, PROC_UNAVAIL);
    const uint32_t noargs[] = {0x106, 0, 2, PROG, 1, P_GEN, 0, 0, 0, 0}; /* its u_int missing */
    RPC_REPLY(f, 0x106, noargs, ACCEPTED, AUTH_NONE, 0, GARBAGE_ARGS);
    const uint32_t syserr[] = {0x107, 0, 2, PROG, 1, P_SYSERR, 0, 0, 0, 0};
    RPC_REPLY(f, 0x107, syserr, ACCEPTED, AUTH_NONE, 0, SYSTEM_ERR);
    /* AUTH_SYS: stamp, machine name "test", uid 1234, gid 56, no other gids */
    const uint32_t sys[] = {0x108, 0, 2,           PROG, 1,  P_WHO, AUTH_SYS, 24,
                            1,     4, 0x74657374u, 1234, 56, 0,     0,        0};
    RPC_REPLY(f, 0x108, sys, ACCEPTED, AUTH_NONE, 0, SUCCESS, 1234);
    const uint32_t none[] = {0x109, 0, 2, PROG, 1, P_WHO, 0, 0, 0, 0};
    RPC_REPLY(f, 0x109, none, ACCEPTED, AUTH_NONE, 0, SUCCESS, ~0u);
    fx_down(f, false);
}

/* ---------------------------------------------------------------- chunk rules */

static void call_with_reads(struct rpcpeer *p, struct rx *x, uint32_t vers, uint32_t proc_rdma,
                            const struct uiw_rpcrdma_read_segment *rs, uint32_t nrs,
                            uint32_t rpc_xid, uint32_t code)
{
    struct uiw_rpcrdma_hdr h = call_hdr(0x900, vers, proc_rdma, rs, nrs);
    uint8_t args[4] = {0};
    CHECK_EQ(rpcpeer_send_call(p, &h, rpc_xid, PROG, P_SINK, args, 4), 0);
    got_error(p, x, 0x900, vers, code);
}

static void chunk_rules(uint32_t vers)
{
    uint32_t bad = vers == 2 ? UIW_RDMA2_ERR_BAD_XDR : UIW_RDMA_ERR_CHUNK;
    struct fx *f = fx_up(2, 0, 0);
    static uint8_t mem[4096];
    rpcpeer_region(&f->p, 0x500, mem, sizeof(mem), false, true);
    uint64_t to = (uint64_t)(uintptr_t)mem;
    /* a position that is not a multiple of 4 */
    struct uiw_rpcrdma_read_segment rs[2] = {{42, {0x500, 100, to}}, {0, {0, 0, 0}}};
    call_with_reads(&f->p, f->x, vers, UIW_RDMA_MSG, rs, 1, 0x900, bad);
    /* positions going backwards */
    rs[0] = (struct uiw_rpcrdma_read_segment){44, {0x500, 100, to}};
    rs[1] = (struct uiw_rpcrdma_read_segment){40, {0x500, 100, to}};
    call_with_reads(&f->p, f->x, vers, UIW_RDMA_MSG, rs, 2, 0x900, bad);
    /* RDMA_NOMSG without a Position-Zero chunk */
    rs[0] = (struct uiw_rpcrdma_read_segment){44, {0x500, 100, to}};
    call_with_reads(&f->p, f->x, vers, UIW_RDMA_NOMSG, rs, 1, 0x900, bad);
    /* RDMA_MSG with one */
    rs[0] = (struct uiw_rpcrdma_read_segment){0, {0x500, 100, to}};
    call_with_reads(&f->p, f->x, vers, UIW_RDMA_MSG, rs, 1, 0x900, bad);
    /* an RPC message whose xid is not rdma_xid */
    call_with_reads(&f->p, f->x, vers, UIW_RDMA_MSG, rs, 0, 0x901, bad);
    /* a chunk larger than the server takes: refused before any Read */
    rs[0] = (struct uiw_rpcrdma_read_segment){44, {0x500, 0x40000000u, to}};
    call_with_reads(&f->p, f->x, vers, UIW_RDMA_MSG, rs, 1, 0x900,
                    vers == 2 ? UIW_RDMA2_ERR_SYSTEM : UIW_RDMA_ERR_CHUNK);
    CHECK_EQ(f->p.reads_served, 0);
    fx_down(f, false);
}

TEST(rpcrdma_chunk_rules_v2)
{
    chunk_rules(2);
}

TEST(rpcrdma_chunk_rules_v1)
{
    chunk_rules(1);
}

/* A Read chunk the peer never registered: it answers the server's Read Request with a
 * Terminate; the server drops that connection and serves the others. */
TEST(rpcrdma_read_chunk_outside)
{
    struct fx *f = fx_up(2, 0, 0);
    static uint8_t mem[4096];
    rpcpeer_region(&f->p, 0x500, mem, sizeof(mem), false, true);
    uint8_t lw[4];
    struct uiw_rpcrdma_read_segment rs = {44, {0x777, 2000, (uint64_t)(uintptr_t)mem}};
    struct uiw_rpcrdma_hdr h = call_hdr(0x920, 2, UIW_RDMA_MSG, &rs, 1);
    CHECK_EQ(rpcpeer_send_call(&f->p, &h, 0, PROG, P_SINK, len_word(lw, 2000), 4), 0);
    bool eof = false;
    rpcpeer_pump(&f->p, WAIT, &eof);
    CHECK(eof);
    CHECK_EQ(f->p.reads_served, 0);
    rpcpeer_close(&f->p, true);
    still_serves(&f->s);
    fx_down(f, true);
}

/* A Read chunk it serves, inside what it registered: the call is answered. */
TEST(rpcrdma_read_chunk_served)
{
    struct fx *f = fx_up(2, 0, 0);
    static uint8_t mem[8192];
    for (int i = 0; i < 8192; i++)
        mem[i] = (uint8_t)i;
    rpcpeer_region(&f->p, 0x500, mem, sizeof(mem), false, true);
    /* two segments of one chunk, the second from another part of the region */
    struct uiw_rpcrdma_read_segment rs[2] = {
        {44, {0x500, 3000, (uint64_t)(uintptr_t)mem}},
        {44, {0x500, 2000, (uint64_t)(uintptr_t)(mem + 4000)}}};
    struct uiw_rpcrdma_hdr h = call_hdr(0x930, 2, UIW_RDMA_MSG, rs, 2);
    uint8_t lw[4];
    CHECK_EQ(rpcpeer_send_call(&f->p, &h, 0, PROG, P_SINK, len_word(lw, 5000), 4), 0);
    CHECK_EQ(rpcpeer_recv_hdr(&f->p, f->x->msg, sizeof(f->x->msg), &f->x->len, &f->x->h, &f->x->sp,
                              WAIT),
             1);
    CHECK_EQ(f->x->h.proc, UIW_RDMA_MSG);
    u_int sum = 0;
    for (int i = 0; i < 3000; i++)
        sum += mem[i];
    for (int i = 4000; i < 6000; i++)
        sum += mem[i];
    /* reply: xid, REPLY, ACCEPTED, verf (0, 0), SUCCESS, sum */
    const uint8_t *rp = f->x->msg + f->x->h.hdr_len;
    CHECK_EQ(f->x->len - f->x->h.hdr_len, 28);
    CHECK_EQ(uiw__get_be32(rp + 20), 0);
    CHECK_EQ(uiw__get_be32(rp + 24), sum);
    CHECK_EQ(f->p.reads_served, 2);
    fx_down(f, false);
}

/* ---------------------------------------------------------------- write and reply chunks */

static void gen_call(struct rpcpeer *p, uint32_t xid, uint32_t nbytes,
                     const struct uiw_rpcrdma_write_chunk *wc, uint32_t nwc,
                     const struct uiw_rpcrdma_write_chunk *reply)
{
    struct uiw_rpcrdma_hdr h = call_hdr(xid, 2, UIW_RDMA_MSG, NULL, 0);
    h.u.chunks.nwrites = nwc;
    h.u.chunks.writes = (struct uiw_rpcrdma_write_chunk *)(uintptr_t)wc;
    if (reply) {
        h.u.chunks.has_reply = true;
        h.u.chunks.reply = *reply;
    }
    uint8_t args[4];
    CHECK_EQ(rpcpeer_send_call(p, &h, 0, PROG, P_GEN, len_word(args, nbytes), 4), 0);
}

TEST(rpcrdma_write_chunk_bounds)
{
    struct fx *f = fx_up(2, 0, 0);
    uint8_t *a = calloc(1, 6000 + 64), *b = calloc(1, 8000 + 64);
    /* regions exactly the size advertised: a byte more would be a violation */
    rpcpeer_region(&f->p, 0x600, a, 6000, true, false);
    rpcpeer_region(&f->p, 0x601, b, 8000, true, false);
    struct uiw_rpcrdma_segment segs[2] = {{0x600, 6000, (uint64_t)(uintptr_t)a},
                                          {0x601, 8000, (uint64_t)(uintptr_t)b}};
    struct uiw_rpcrdma_write_chunk wc = {2, segs};
    gen_call(&f->p, 0x940, 10000, &wc, 1, NULL);
    CHECK_EQ(rpcpeer_recv_hdr(&f->p, f->x->msg, sizeof(f->x->msg), &f->x->len, &f->x->h, &f->x->sp,
                              WAIT),
             1);
    CHECK_EQ(f->x->h.proc, UIW_RDMA_MSG);
    CHECK_EQ(f->x->h.u.chunks.nwrites, 1);
    CHECK_EQ(f->x->h.u.chunks.writes[0].nsegs, 2);
    CHECK_EQ(f->x->h.u.chunks.writes[0].segs[0].length, 6000);
    CHECK_EQ(f->x->h.u.chunks.writes[0].segs[1].length, 4000);
    CHECK_EQ(f->x->h.u.chunks.writes[0].segs[0].handle, 0x600);
    CHECK_EQ(f->p.violations, 0);
    CHECK_EQ(f->p.region[0].written, 6000);
    CHECK_EQ(f->p.region[1].written, 4000);
    CHECK_EQ(a[5999], (uint8_t)6000);
    CHECK_EQ(b[3999], (uint8_t)10000);
    CHECK_EQ(b[4000], 0);
    /* the length word is inline, the data and its pad are not */
    const uint8_t *rp = f->x->msg + f->x->h.hdr_len;
    CHECK_EQ(f->x->len - f->x->h.hdr_len, 28);
    CHECK_EQ(uiw__get_be32(rp + 24), 10000);
    /* a chunk too small: REPLY_RESOURCE naming its segment and the length needed */
    struct uiw_rpcrdma_write_chunk small = {1, segs};
    gen_call(&f->p, 0x941, 7000, &small, 1, NULL);
    CHECK_EQ(rpcpeer_recv_hdr(&f->p, f->x->msg, sizeof(f->x->msg), &f->x->len, &f->x->h, &f->x->sp,
                              WAIT),
             1);
    CHECK_EQ(f->x->h.proc, UIW_RDMA_ERROR);
    CHECK_EQ(f->x->h.xid, 0x941);
    CHECK_EQ(f->x->h.u.error.errcode, UIW_RDMA2_ERR_REPLY_RESOURCE);
    CHECK_EQ(f->x->h.u.error.segment_index, 1);
    CHECK_EQ(f->x->h.u.error.length_needed, 7000);
    /* no Reply chunk for a reply too long to go inline: REPLY_RESOURCE, index 0; then a
     * Reply chunk too short: its segment (after the write list's two) */
    gen_call(&f->p, 0x942, 900, NULL, 0, NULL); /* 900 < 1024: inline, fits */
    CHECK_EQ(rpcpeer_recv_hdr(&f->p, f->x->msg, sizeof(f->x->msg), &f->x->len, &f->x->h, &f->x->sp,
                              WAIT),
             1);
    CHECK_EQ(f->x->h.proc, UIW_RDMA_MSG);
    struct uiw_rpcrdma_segment rseg = {0x601, 3000, (uint64_t)(uintptr_t)b};
    struct uiw_rpcrdma_write_chunk rc = {1, &rseg};
    struct uiw_rpcrdma_segment unused[1] = {{0x602, 100, 0}};
    struct uiw_rpcrdma_write_chunk wc0 = {1, unused};
    /* a 1000-byte result with the write chunk too small for it is refused above; here a
     * result below the DDP threshold goes inline even with a chunk offered, and the
     * chunk comes back unused (length 0) */
    gen_call(&f->p, 0x943, 500, &wc0, 1, &rc);
    CHECK_EQ(rpcpeer_recv_hdr(&f->p, f->x->msg, sizeof(f->x->msg), &f->x->len, &f->x->h, &f->x->sp,
                              WAIT),
             1);
    CHECK_EQ(f->x->h.proc, UIW_RDMA_MSG);
    CHECK_EQ(f->x->h.u.chunks.nwrites, 1);
    CHECK_EQ(f->x->h.u.chunks.writes[0].segs[0].length, 0);
    CHECK_EQ(f->p.violations, 0);
    free(a);
    free(b);
    fx_down(f, false);
}

/* Replies answered REPLY_RESOURCE are kept, at most as many as the credits granted, the
 * oldest given up first: with two credits, three such calls leave the last two kept. Sent
 * again with a Reply chunk, the first runs again (no cache hit) and the other two get
 * their kept replies; each lands whole in its chunk. One server thread: a reply is kept
 * once its error is sent, so with two a call could be kept before the one sent ahead of
 * it, and that one would go first. */
TEST(rpcrdma_kept_replies_oldest_goes)
{
    struct fx *f = fx_up_n(2, 2, 0, 1);
    enum { N = 7000, CAP = 8000 };
    uint8_t *a = calloc(1, CAP);
    rpcpeer_region(&f->p, 0x700, a, CAP, true, false);
    struct uiw_rpcrdma_segment rseg = {0x700, CAP, (uint64_t)(uintptr_t)a};
    struct uiw_rpcrdma_write_chunk rc = {1, &rseg};
    for (uint32_t i = 0; i < 3; i++) {
        gen_call(&f->p, 0x980 + i, N, NULL, 0, NULL);
        got_error(&f->p, f->x, 0x980 + i, 2, UIW_RDMA2_ERR_REPLY_RESOURCE);
    }
    struct uiw_rpc_xprt_stats st;
    const uint32_t order[3] = {0x980, 0x982, 0x981}, hits[3] = {0, 1, 2};
    for (int i = 0; i < 3; i++) {
        memset(a, 0, CAP);
        f->p.region[0].written = 0;
        gen_call(&f->p, order[i], N, NULL, 0, &rc);
        CHECK_EQ(rpcpeer_recv_hdr(&f->p, f->x->msg, sizeof(f->x->msg), &f->x->len, &f->x->h,
                                  &f->x->sp, WAIT),
                 1);
        CHECK_EQ(f->x->h.proc, UIW_RDMA_NOMSG);
        CHECK_EQ(f->x->h.xid, order[i]);
        CHECK(f->x->h.u.chunks.has_reply);
        /* xid, REPLY, ACCEPTED, verifier (two words), SUCCESS, the length, the bytes */
        uint32_t len = f->x->h.u.chunks.reply.segs[0].length;
        CHECK_EQ(len, 28 + N);
        CHECK_EQ(f->p.region[0].written, len);
        CHECK_EQ(uiw__get_be32(a), order[i]);
        CHECK_EQ(uiw__get_be32(a + 24), N);
        for (uint32_t k = 0; k < N; k += 331)
            CHECK_EQ(a[28 + k], (uint8_t)(k + 1));
        CHECK_EQ(uiw_rpc_svc_xprt_stats(f->s.svc, &st), 0);
        CHECK_EQ(st.drc_hits, hits[i]);
    }
    CHECK_EQ(f->p.violations, 0);
    free(a);
    fx_down(f, false);
}

/* Chunks whose segments overlap (the same memory named twice): nothing in the spec forbids
 * them, and they are the peer's own memory. The server reads what it was given (twice),
 * writes only inside it, answers, and serves on. */
TEST(rpcrdma_overlapping_chunks)
{
    struct fx *f = fx_up(2, 0, 0);
    static uint8_t mem[4096];
    for (int i = 0; i < 4096; i++)
        mem[i] = (uint8_t)(i * 7);
    rpcpeer_region(&f->p, 0x500, mem, sizeof(mem), false, true);
    /* a Read chunk of two segments over the same bytes [1000, 3000) */
    struct uiw_rpcrdma_read_segment rs[2] = {
        {44, {0x500, 3000, (uint64_t)(uintptr_t)mem}},
        {44, {0x500, 2000, (uint64_t)(uintptr_t)(mem + 1000)}}};
    struct uiw_rpcrdma_hdr h = call_hdr(0x960, 2, UIW_RDMA_MSG, rs, 2);
    uint8_t lw[4];
    CHECK_EQ(rpcpeer_send_call(&f->p, &h, 0, PROG, P_SINK, len_word(lw, 5000), 4), 0);
    CHECK_EQ(rpcpeer_recv_hdr(&f->p, f->x->msg, sizeof(f->x->msg), &f->x->len, &f->x->h, &f->x->sp,
                              WAIT),
             1);
    CHECK_EQ(f->x->h.proc, UIW_RDMA_MSG);
    CHECK_EQ(f->x->h.xid, 0x960);
    u_int sum = 0;
    for (int i = 0; i < 3000; i++)
        sum += mem[i];
    for (int i = 1000; i < 3000; i++)
        sum += mem[i];
    const uint8_t *rp = f->x->msg + f->x->h.hdr_len;
    CHECK_EQ(f->x->len - f->x->h.hdr_len, 28);
    CHECK_EQ(uiw__get_be32(rp + 20), 0);
    CHECK_EQ(uiw__get_be32(rp + 24), sum);
    CHECK_EQ(f->p.reads_served, 2);
    /* a Write chunk of two segments over one region of 8000 bytes, the second starting
     * inside the first; and a Reply chunk over the same region */
    uint8_t *a = calloc(1, 8000);
    rpcpeer_region(&f->p, 0x600, a, 8000, true, false);
    struct uiw_rpcrdma_segment segs[2] = {{0x600, 6000, (uint64_t)(uintptr_t)a},
                                          {0x600, 6000, (uint64_t)(uintptr_t)(a + 2000)}};
    struct uiw_rpcrdma_write_chunk wc = {2, segs};
    struct uiw_rpcrdma_segment rseg = {0x600, 8000, (uint64_t)(uintptr_t)a};
    struct uiw_rpcrdma_write_chunk rc = {1, &rseg};
    gen_call(&f->p, 0x961, 10000, &wc, 1, &rc);
    CHECK_EQ(rpcpeer_recv_hdr(&f->p, f->x->msg, sizeof(f->x->msg), &f->x->len, &f->x->h, &f->x->sp,
                              WAIT),
             1);
    CHECK_EQ(f->x->h.proc, UIW_RDMA_MSG);
    CHECK_EQ(f->x->h.xid, 0x961);
    CHECK_EQ(f->x->h.u.chunks.nwrites, 1);
    CHECK_EQ(f->x->h.u.chunks.writes[0].segs[0].length, 6000);
    CHECK_EQ(f->x->h.u.chunks.writes[0].segs[1].length, 4000);
    CHECK_EQ(f->p.violations, 0);
    /* the second segment's bytes, written after the first's over [2000, 6000) */
    CHECK_EQ(a[2000], (uint8_t)6001);
    CHECK_EQ(a[5999], (uint8_t)10000);
    CHECK_EQ(a[1999], (uint8_t)2000);
    CHECK_EQ(a[6000], 0);
    free(a);
    fx_down(f, false);
}

/* Remote Invalidation by the responder: Version Two replies by Send With Invalidate of
 * rdma_inv_handle when it names a handle of that call, and by a plain Send when it is 0
 * or names a handle the call did not carry (an STag of another RPC is never
 * invalidated for a peer); Version One (RFC 8797) invalidates the call's one handle when
 * the peer's private data allows it, and never when it does not. */
static void gen_inv(struct fx *f, uint32_t vers, uint32_t xid, uint32_t stag, uint8_t *mem,
                    uint32_t inv, bool want_inv)
{
    struct uiw_rpcrdma_segment seg = {stag, 4096, (uint64_t)(uintptr_t)mem};
    struct uiw_rpcrdma_write_chunk wc = {1, &seg};
    struct uiw_rpcrdma_hdr h = call_hdr(xid, vers, UIW_RDMA_MSG, NULL, 0);
    h.u.chunks.nwrites = 1;
    h.u.chunks.writes = &wc;
    h.u.chunks.inv_handle = inv;
    uint8_t args[4];
    CHECK_EQ(rpcpeer_send_call(&f->p, &h, 0, PROG, P_GEN, len_word(args, 3000), 4), 0);
    CHECK_EQ(rpcpeer_recv_hdr(&f->p, f->x->msg, sizeof(f->x->msg), &f->x->len, &f->x->h, &f->x->sp,
                              WAIT),
             1);
    CHECK_EQ(f->x->h.proc, UIW_RDMA_MSG);
    CHECK_EQ(f->x->h.xid, xid);
    CHECK_EQ(f->x->h.u.chunks.writes[0].segs[0].length, 3000);
    CHECK_EQ(f->p.with_inv, want_inv);
    if (want_inv)
        CHECK_EQ(f->p.inv_stag, stag);
}

TEST(rpcrdma_remote_invalidation)
{
    static uint8_t mem[4096];
    struct fx *f = fx_up(2, 0, 0);
    rpcpeer_region(&f->p, 0x610, mem, sizeof(mem), true, false);
    gen_inv(f, 2, 0x970, 0x610, mem, 0x610, true);
    gen_inv(f, 2, 0x971, 0x610, mem, 0, false);
    gen_inv(f, 2, 0x972, 0x610, mem, 0x611, false); /* not a handle of this call */
    CHECK_EQ(f->p.violations, 0);
    fx_down(f, false);
    for (int allow = 0; allow < 2; allow++) {
        struct server s;
        server_up(&s, 2, 0, 0, 2);
        struct uiw_rpcrdma_cm_private pd = {UIW_RPCRDMA_CM_PRIVATE_MAGIC,
                                            UIW_RPCRDMA_CM_PRIVATE_VERSION,
                                            0,
                                            allow != 0,
                                            4096,
                                            4096};
        uint8_t b[UIW_RPCRDMA_CM_PRIVATE_LEN];
        CHECK_EQ(uiw_rpcrdma_cm_private_encode(b, sizeof(b), &pd), 8);
        struct fx g = {.s = s};
        CHECK_EQ(rpcpeer_connect(&g.p, s.port, b, sizeof(b), false), 0);
        g.x = rx_new();
        rpcpeer_region(&g.p, 0x620, mem, sizeof(mem), true, false);
        gen_inv(&g, 1, 0x980, 0x620, mem, 0, allow != 0);
        CHECK_EQ(g.p.violations, 0);
        rpcpeer_close(&g.p, false);
        free(g.x);
        server_down(&s);
    }
}

/* ---------------------------------------------------------------- credits, silence, garbage */

TEST(rpcrdma_credit_violation)
{
    struct fx *f = fx_up(2, 2, 0);
    /* far more calls at once than the 2 credits granted (and the receives behind them) */
    for (uint32_t i = 0; i < 40; i++) {
        struct uiw_rpcrdma_hdr h = call_hdr(0x1000 + i, 1, UIW_RDMA_MSG, NULL, 0);
        if (rpcpeer_send_call(&f->p, &h, 0, PROG, P_SLEEP, NULL, 0) != 0)
            break;
    }
    bool eof = false;
    for (int i = 0; i < 20 && !eof; i++)
        rpcpeer_pump(&f->p, 500, &eof);
    CHECK(eof);
    rpcpeer_close(&f->p, true);
    still_serves(&f->s);
    fx_down(f, true);
}

/* Wait up to WAIT ms for n P_HOLD calls to be running. */
static void held_within(unsigned n)
{
    for (int i = 0; i < WAIT && atomic_load(&holding) < n; i++) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    CHECK_EQ(atomic_load(&holding), n);
}

/* A reply that became an RDMA_ERROR (REPLY_RESOURCE) counts its call off once: the credit
 * limit holds after such replies as before. With two credits, the server takes as many
 * calls at once as its grant and the receives it keeps for property messages allow
 * (UIW__RR_EXTRA_RECVS / 2 more); three calls held running, three answered REPLY_RESOURCE
 * meanwhile, then calls up to the limit are taken and the one beyond it is a credit
 * violation, which ends the connection. (Each such call was once counted off twice, and
 * seven calls on two credits all ran.) */
TEST(rpcrdma_credits_after_error_replies)
{
    enum { GRANT = 2, LIMIT = GRANT + UIW__RR_EXTRA_RECVS / 2, HELD = 3 };
    atomic_store(&holding, 0);
    atomic_store(&hold_released, false);
    struct fx *f = fx_up_n(2, GRANT, 0, LIMIT + 2);
    struct uiw_rpcrdma_hdr h;
    for (uint32_t i = 0; i < HELD; i++) {
        h = call_hdr(0x1100 + i, 2, UIW_RDMA_MSG, NULL, 0);
        CHECK_EQ(rpcpeer_send_call(&f->p, &h, 0, PROG, P_HOLD, NULL, 0), 0);
    }
    held_within(HELD);
    for (uint32_t i = 0; i < 3; i++) {
        gen_call(&f->p, 0x1200 + i, 7000, NULL, 0, NULL); /* no Reply chunk for 7000 bytes */
        got_error(&f->p, f->x, 0x1200 + i, 2, UIW_RDMA2_ERR_REPLY_RESOURCE);
    }
    /* up to the limit: taken */
    for (uint32_t i = HELD; i < LIMIT; i++) {
        h = call_hdr(0x1100 + i, 2, UIW_RDMA_MSG, NULL, 0);
        CHECK_EQ(rpcpeer_send_call(&f->p, &h, 0, PROG, P_HOLD, NULL, 0), 0);
    }
    held_within(LIMIT);
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw_rpc_svc_xprt_stats(f->s.svc, &st), 0);
    CHECK_EQ(st.credit_violations, 0);
    /* one beyond it */
    h = call_hdr(0x1100 + LIMIT, 2, UIW_RDMA_MSG, NULL, 0);
    CHECK_EQ(rpcpeer_send_call(&f->p, &h, 0, PROG, P_HOLD, NULL, 0), 0);
    bool eof = false;
    for (int i = 0; i < 10 && !eof; i++)
        rpcpeer_pump(&f->p, 500, &eof);
    CHECK_EQ(uiw_rpc_svc_xprt_stats(f->s.svc, &st), 0);
    CHECK_EQ(st.credit_violations, 1);
    CHECK(eof);
    CHECK_EQ(atomic_load(&holding), LIMIT); /* the call beyond never ran */
    atomic_store(&hold_released, true);
    rpcpeer_close(&f->p, true);
    still_serves(&f->s);
    fx_down(f, true);
}

TEST(rpcrdma_read_never_answered)
{
    struct fx *f = fx_up(2, 0, 500);
    static uint8_t mem[4096];
    rpcpeer_region(&f->p, 0x500, mem, sizeof(mem), false, true);
    f->p.no_answer = true;
    struct uiw_rpcrdma_read_segment rs = {44, {0x500, 3000, (uint64_t)(uintptr_t)mem}};
    struct uiw_rpcrdma_hdr h = call_hdr(0x950, 2, UIW_RDMA_MSG, &rs, 1);
    uint8_t lw[4];
    CHECK_EQ(rpcpeer_send_call(&f->p, &h, 0, PROG, P_SINK, len_word(lw, 3000), 4), 0);
    /* the server gives up on it after its read timeout, and serves the others meanwhile */
    still_serves(&f->s);
    bool eof = false;
    for (int i = 0; i < 10 && !eof; i++)
        rpcpeer_pump(&f->p, 500, &eof);
    CHECK(eof);
    fx_down(f, true);
}

/* More calls pulling Read chunks than the server's send queue has room for Reads: those
 * beyond wait for room; the peer answers no Read and resets the connection. Every call
 * ends (waiting or not) and returns what it held, and the server serves the others. */
TEST(rpcrdma_reads_beyond_send_queue)
{
    struct fx *f = fx_up(2, 256, 0);
    static uint8_t mem[4096];
    rpcpeer_region(&f->p, 0x500, mem, sizeof(mem), false, true);
    f->p.no_answer = true;
    struct uiw_rpcrdma_read_segment rs[16];
    for (int i = 0; i < 16; i++)
        rs[i] = (struct uiw_rpcrdma_read_segment){44, {0x500, 64, (uint64_t)(uintptr_t)mem}};
    uint8_t lw[4];
    for (uint32_t i = 0; i < 240; i++) { /* 16 Reads each: 3,840 work requests */
        struct uiw_rpcrdma_hdr h = call_hdr(0x2000 + i, 2, UIW_RDMA_MSG, rs, 16);
        CHECK_EQ(rpcpeer_send_call(&f->p, &h, 0, PROG, P_SINK, len_word(lw, 1024), 4), 0);
    }
    bool eof = false;
    rpcpeer_pump(&f->p, 500, &eof);
    CHECK(!eof);
    rpcpeer_close(&f->p, true);
    still_serves(&f->s);
    fx_down(f, true);
}

/* The Read chunks the server has pulled (uiw_rpc_svc_xprt_stats). */
static uint64_t chunks_pulled(struct fx *f)
{
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw_rpc_svc_xprt_stats(f->s.svc, &st), 0);
    return st.read_chunks;
}

/* Wait up to ms for the server to have pulled n Read chunks. */
static bool pulled_within(struct fx *f, uint64_t n, int ms)
{
    for (int i = 0; i < ms / 10 && chunks_pulled(f) < n; i++) {
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    return chunks_pulled(f) >= n;
}

/* A call waiting for send queue room gets it when room comes without a completion to
 * retry it: a call whose reply went out first ends (its handler returns) while nothing
 * completes. The server's send queue takes 2224 work requests for calls (2048 + 8
 * backward credits x 22): the reply and 138 calls of 16 Reads and one of 15, never
 * answered (the Reads beyond the ORD wait on the send queue), take them all. */
TEST(rpcrdma_reads_wait_for_room_freed_without_completion)
{
    struct fx *f = fx_up(2, 256, 0);
    static uint8_t mem[4096];
    rpcpeer_region(&f->p, 0x500, mem, sizeof(mem), false, true);
    uint8_t lw[4];
    struct uiw_rpcrdma_hdr h = call_hdr(0x4000, 2, UIW_RDMA_MSG, NULL, 0);
    CHECK_EQ(rpcpeer_send_call(&f->p, &h, 0, PROG, P_REPLY_SLEEP, NULL, 0), 0);
    CHECK_EQ(rpcpeer_recv_hdr(&f->p, f->x->msg, sizeof(f->x->msg), &f->x->len, &f->x->h, &f->x->sp,
                              WAIT),
             1);
    CHECK_EQ(f->x->h.xid, 0x4000);
    uint64_t base = chunks_pulled(f);
    f->p.no_answer = true;
    struct uiw_rpcrdma_read_segment rs[16];
    for (int i = 0; i < 16; i++)
        rs[i] = (struct uiw_rpcrdma_read_segment){44, {0x500, 64, (uint64_t)(uintptr_t)mem}};
    for (uint32_t i = 0; i < 139; i++) {
        uint32_t n = i < 138 ? 16 : 15;
        h = call_hdr(0x3000 + i, 2, UIW_RDMA_MSG, rs, n);
        CHECK_EQ(rpcpeer_send_call(&f->p, &h, 0, PROG, P_SINK, len_word(lw, 64 * n), 4), 0);
    }
    /* full: this call's Read waits for the room the first call frees when it ends */
    h = call_hdr(0x5000, 2, UIW_RDMA_MSG, rs, 1);
    CHECK_EQ(rpcpeer_send_call(&f->p, &h, 0, PROG, P_SINK, len_word(lw, 64), 4), 0);
    CHECK(pulled_within(f, base + 139, WAIT));
    CHECK_EQ(chunks_pulled(f), base + 139); /* the first call still runs */
    if (!pulled_within(f, base + 140, 5000))
        uiw_test_fail(__FILE__, __LINE__, "the waiting call never pulled its Read chunk");
    fx_down(f, true);
}

TEST(rpcrdma_garbage)
{
    struct server s;
    server_up(&s, 2, 0, 0, 2);
    struct rx *x = rx_new();
    srand(7);
    for (int round = 0; round < 3; round++) {
        struct rpcpeer p;
        connect_peer(&p, &s);
        for (int i = 0; i < 100; i++) {
            uint8_t b[700];
            uint32_t n = (uint32_t)(rand() % (int)sizeof(b));
            for (uint32_t k = 0; k < n; k++)
                b[k] = (uint8_t)rand();
            if (n >= 8 && (i & 1))
                uiw__put_be32(b + 4, 1 + (uint32_t)(rand() & 1)); /* a version we speak */
            if (rpcpeer_send(&p, b, n) != 0)
                break;
            /* whatever comes back is an RDMA_ERROR or the end of the connection */
            int r = rpcpeer_recv_hdr(&p, x->msg, sizeof(x->msg), &x->len, &x->h, &x->sp, 200);
            if (r == 0 || r == -EPROTO)
                break;
            if (r == 1)
                CHECK(x->h.proc == UIW_RDMA_ERROR || x->h.proc == UIW_RDMA2_CONNPROP ||
                      x->h.proc == UIW_RDMA_MSG);
        }
        rpcpeer_close(&p, true);
        still_serves(&s);
    }
    free(x);
    server_down(&s);
}

/* Replies and errors nobody asked for are dropped; the connection goes on. */
TEST(rpcrdma_unsolicited_replies)
{
    struct fx *f = fx_up(2, 0, 0);
    uint8_t b[128];
    uint32_t n = words(b, (uint32_t[]){0x55, 2, 1, 0, 1, 0, 0, 0, 0, 0x55, 1, 0, 0, 0, 0}, 15);
    CHECK_EQ(rpcpeer_send(&f->p, b, n), 0);
    n = words(b, (uint32_t[]){0x56, 2, 1, 4, 6}, 5); /* RDMA2_ERROR / SYSTEM */
    CHECK_EQ(rpcpeer_send(&f->p, b, n), 0);
    n = words(b, (uint32_t[]){0x57, 2, 1, 8, 0, 0, 0}, 7); /* RESPROP with no REQPROP */
    CHECK_EQ(rpcpeer_send(&f->p, b, n), 0);
    struct uiw_rpcrdma_hdr h = call_hdr(0x58, 2, UIW_RDMA_MSG, NULL, 0);
    CHECK_EQ(rpcpeer_send_call(&f->p, &h, 0, PROG, P_NULL, NULL, 0), 0);
    /* the server's CONNPROP first (this peer's first message was Version Two), then the
     * reply, and nothing for the three messages before */
    CHECK_EQ(rpcpeer_recv_hdr(&f->p, f->x->msg, sizeof(f->x->msg), &f->x->len, &f->x->h, &f->x->sp,
                              WAIT),
             1);
    CHECK_EQ(f->p.connprops, 1);
    CHECK_EQ(f->x->h.proc, UIW_RDMA_MSG);
    CHECK_EQ(f->x->h.xid, 0x58);
    fx_down(f, false);
}

/* Draft 6.2.2: errors are sent by responders only. A Version Two REPLY carrying a Read
 * chunk, an RDMA2_ERROR of an unknown code, one cut short and a Version One RDMA_ERROR of
 * a code Version One does not have are dropped without an answer (an error for an error
 * could go back and forth for ever); the next call is answered. */
TEST(rpcrdma_no_error_for_a_reply_or_an_error)
{
    struct fx *f = fx_up(2, 0, 0);
    static uint8_t mem[64];
    struct uiw_rpcrdma_read_segment rs = {0, {0x500, 64, (uint64_t)(uintptr_t)mem}};
    struct uiw_rpcrdma_hdr h = call_hdr(0x7700, 2, UIW_RDMA_MSG, &rs, 1);
    h.u.chunks.direction = UIW_RPCRDMA_REPLY;
    uint8_t b[64];
    uint32_t n = words(b, (uint32_t[]){0x7700, 1, 0, 0, 0, 0}, 6); /* an RPC reply */
    CHECK_EQ(rpcpeer_send_hdr(&f->p, &h, b, n), 0);
    n = words(b, (uint32_t[]){0x7701, 2, 1, 4, 77}, 5);
    CHECK_EQ(rpcpeer_send(&f->p, b, n), 0);
    n = words(b, (uint32_t[]){0x7702, 2, 1, 4, UIW_RDMA2_ERR_REPLY_RESOURCE}, 5);
    CHECK_EQ(rpcpeer_send(&f->p, b, n), 0);
    n = words(b, (uint32_t[]){0x7703, 1, 1, 4, 3}, 5);
    CHECK_EQ(rpcpeer_send(&f->p, b, n), 0);
    null_served(f, 0x7704, 2); /* the first answer is this call's */
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw_rpc_svc_xprt_stats(f->s.svc, &st), 0);
    for (int i = 0; i < UIW_RPC_NERR; i++)
        CHECK_EQ(st.errors_sent[i], 0);
    CHECK_EQ(f->p.reads_served, 0);
    fx_down(f, false);
}

/* A server set to receive 1024 bytes inline still receives, and offers, 4096 where it
 * speaks Version Two: a Version Two peer may send that much without reading its CONNPROP
 * (or RFC 8797 private data). Such a peer's call of 3 KiB inline, after the server's
 * CONNPROP, is answered (it once met a 1024-byte receive and the connection's end). */
TEST(rpcrdma_v2_receives_the_default_size)
{
    struct uiw_rpc_svc_attr a = {0};
    a.xprt.inline_recv = 1024;
    struct fx *f = calloc(1, sizeof(*f));
    server_up_attr(&f->s, &a);
    connect_peer(&f->p, &f->s);
    f->x = rx_new();
    struct uiw_rpcrdma_cm_private pd;
    CHECK_EQ(uiw_rpcrdma_cm_private_decode(f->p.peer_pd, f->p.peer_pd_len, &pd), 0);
    CHECK_EQ(pd.recv_size, 4096);
    f->p.keep_connprop = true;
    struct uiw_rpcrdma_hdr h = call_hdr(0x7800, 2, UIW_RDMA_MSG, NULL, 0);
    CHECK_EQ(rpcpeer_send_call(&f->p, &h, 0, PROG, P_NULL, NULL, 0), 0);
    struct rx *x = f->x;
    CHECK_EQ(rpcpeer_recv_hdr(&f->p, x->msg, sizeof(x->msg), &x->len, &x->h, &x->sp, WAIT), 1);
    CHECK_EQ(x->h.proc, UIW_RDMA2_CONNPROP);
    const struct uiw_rpcrdma_prop *rb =
        uiw_rpcrdma_propset_find(&x->h.u.connprop.start, UIW_RPCRDMA_PROP_RBSIZ);
    CHECK(rb != NULL);
    CHECK_EQ(rb->value, 4096);
    f->p.keep_connprop = false;
    CHECK_EQ(rpcpeer_recv_hdr(&f->p, x->msg, sizeof(x->msg), &x->len, &x->h, &x->sp, WAIT), 1);
    CHECK_EQ(x->h.xid, 0x7800);
    /* opaque<> of 3000 bytes inline: length word, bytes, pad */
    static uint8_t args[4 + 3000];
    uiw__put_be32(args, 3000);
    u_int sum = 0;
    for (int i = 0; i < 3000; i++) {
        args[4 + i] = (uint8_t)(i * 5);
        sum += args[4 + i];
    }
    static uint8_t call[40 + sizeof(args)];
    uint32_t cl = rpcpeer_rpc_call(call, 0x7801, PROG, 1, P_SINK, args, sizeof(args));
    h = call_hdr(0x7801, 2, UIW_RDMA_MSG, NULL, 0);
    CHECK_EQ(rpcpeer_send_hdr(&f->p, &h, call, cl), 0);
    CHECK_EQ(rpcpeer_recv_hdr(&f->p, x->msg, sizeof(x->msg), &x->len, &x->h, &x->sp, WAIT), 1);
    CHECK_EQ(x->h.proc, UIW_RDMA_MSG);
    CHECK_EQ(x->h.xid, 0x7801);
    const uint8_t *rp = x->msg + x->h.hdr_len;
    CHECK_EQ(x->len - x->h.hdr_len, 28);
    CHECK_EQ(uiw__get_be32(rp + 20), 0);
    CHECK_EQ(uiw__get_be32(rp + 24), sum);
    fx_down(f, false);
}

/* ---------------------------------------------------------------- RFC 8797 defaults */

/* A Version One client that sends no connection private data gets RFC 8797's defaults:
 * the server sends it nothing inline above 1024 bytes (a 1528-byte reply goes in the Reply
 * chunk offered, where a client announcing 4096-byte receives gets it inline), and never a
 * Send With Invalidate (the reply to a call with a Write chunk comes by a plain Send, where
 * a client whose private data allows it gets its handle invalidated). */
static void no_pd_call(const struct uiw_rpcrdma_cm_private *pd, uint32_t want_proc, bool want_inv)
{
    struct server s;
    server_up(&s, 2, 0, 0, 2);
    struct fx g = {.s = s};
    uint8_t b[UIW_RPCRDMA_CM_PRIVATE_LEN];
    if (pd)
        CHECK_EQ(uiw_rpcrdma_cm_private_encode(b, sizeof(b), pd), 8);
    CHECK_EQ(rpcpeer_connect(&g.p, s.port, pd ? b : NULL, pd ? sizeof(b) : 0, false), 0);
    g.x = rx_new();
    /* 1500 bytes of result (24 of reply header, 4 of length): no Write chunk offered */
    static uint8_t rmem[4096], wmem[4096];
    rpcpeer_region(&g.p, 0x630, rmem, sizeof(rmem), true, false);
    rpcpeer_region(&g.p, 0x631, wmem, sizeof(wmem), true, false);
    struct uiw_rpcrdma_segment rseg = {0x630, sizeof(rmem), (uint64_t)(uintptr_t)rmem};
    struct uiw_rpcrdma_write_chunk rc = {1, &rseg};
    struct uiw_rpcrdma_hdr h = call_hdr(0x990, 1, UIW_RDMA_MSG, NULL, 0);
    h.u.chunks.has_reply = true;
    h.u.chunks.reply = rc;
    uint8_t args[4];
    CHECK_EQ(rpcpeer_send_call(&g.p, &h, 0, PROG, P_GEN, len_word(args, 1500), 4), 0);
    CHECK_EQ(rpcpeer_recv_hdr(&g.p, g.x->msg, sizeof(g.x->msg), &g.x->len, &g.x->h, &g.x->sp, WAIT),
             1);
    CHECK_EQ(g.x->h.xid, 0x990);
    CHECK_EQ(g.x->h.proc, want_proc);
    if (want_proc == UIW_RDMA_NOMSG) {
        CHECK_EQ(g.x->len, g.x->h.hdr_len); /* the header alone */
        CHECK(g.x->h.u.chunks.has_reply);
        CHECK_EQ(g.x->h.u.chunks.reply.segs[0].length, 1528);
        CHECK_EQ(uiw__get_be32(rmem + 24), 1500);
    } else {
        CHECK_EQ(g.x->len - g.x->h.hdr_len, 1528);
    }
    /* a Write chunk: its handle is the only one of the call (RFC 8797 section 5.2) */
    struct uiw_rpcrdma_segment wseg = {0x631, sizeof(wmem), (uint64_t)(uintptr_t)wmem};
    struct uiw_rpcrdma_write_chunk wc = {1, &wseg};
    h = call_hdr(0x991, 1, UIW_RDMA_MSG, NULL, 0);
    h.u.chunks.nwrites = 1;
    h.u.chunks.writes = &wc;
    CHECK_EQ(rpcpeer_send_call(&g.p, &h, 0, PROG, P_GEN, len_word(args, 3000), 4), 0);
    CHECK_EQ(rpcpeer_recv_hdr(&g.p, g.x->msg, sizeof(g.x->msg), &g.x->len, &g.x->h, &g.x->sp, WAIT),
             1);
    CHECK_EQ(g.x->h.xid, 0x991);
    CHECK_EQ(g.x->h.u.chunks.writes[0].segs[0].length, 3000);
    CHECK_EQ(g.p.with_inv, want_inv);
    CHECK_EQ(g.p.violations, 0);
    rpcpeer_close(&g.p, false);
    free(g.x);
    server_down(&s);
}

TEST(rpcrdma_no_private_data_defaults)
{
    no_pd_call(NULL, UIW_RDMA_NOMSG, false);
    struct uiw_rpcrdma_cm_private pd = {
        UIW_RPCRDMA_CM_PRIVATE_MAGIC, UIW_RPCRDMA_CM_PRIVATE_VERSION, 0, true, 4096, 4096};
    no_pd_call(&pd, UIW_RDMA_MSG, true);
}

/* A call sent the moment the connection is up is answered, and so is every call after it
 * without waiting for the server's poller to end a sleep of its own (50 ms): the event of
 * a connection's first completion could come before the connection was on the poller's
 * list, be dropped with the connection taken for armed, and leave every later call to the
 * end of a sleep (seen on about one connection in six made right after another ended by
 * a Terminate). Over 30 such connections, the first call's and a quiet call's round trips
 * stay under 30 ms on all but one (room for one stall of the machine). */
static uint64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

TEST(rpcrdma_first_call_at_once_then_quiet_calls)
{
    struct server s;
    server_up(&s, 2, 0, 0, 2);
    struct rx *x = rx_new();
    unsigned slow = 0;
    for (uint32_t i = 0; i < 30; i++) {
        struct rpcpeer p;
        connect_peer(&p, &s);
        /* the connection before ends by the peer's Terminate for a Read it refuses */
        struct uiw_rpcrdma_read_segment far = {44, {0x7777, 64, 0x1000}};
        struct uiw_rpcrdma_hdr h = call_hdr(0x900 + i, 1, UIW_RDMA_MSG, &far, 1);
        uint8_t lw[4];
        CHECK_EQ(rpcpeer_send_call(&p, &h, 0, PROG, P_SINK, len_word(lw, 64), 4), 0);
        bool eof = false;
        rpcpeer_pump(&p, 1000, &eof);
        rpcpeer_close(&p, true);
        connect_peer(&p, &s);
        h = call_hdr(0xa00 + i, 1, UIW_RDMA_MSG, NULL, 0);
        uint64_t t0 = mono_us();
        CHECK_EQ(rpcpeer_send_call(&p, &h, 0, PROG, P_NULL, NULL, 0), 0);
        CHECK_EQ(rpcpeer_recv_hdr(&p, x->msg, sizeof(x->msg), &x->len, &x->h, &x->sp, WAIT), 1);
        CHECK_EQ(x->h.xid, 0xa00 + i);
        if (mono_us() - t0 >= 30000)
            slow++;
        struct timespec quiet = {0, 1000000L}; /* the server's poller goes to sleep */
        nanosleep(&quiet, NULL);
        h.xid = 0xb00 + i;
        t0 = mono_us();
        CHECK_EQ(rpcpeer_send_call(&p, &h, 0, PROG, P_NULL, NULL, 0), 0);
        CHECK_EQ(rpcpeer_recv_hdr(&p, x->msg, sizeof(x->msg), &x->len, &x->h, &x->sp, WAIT), 1);
        CHECK_EQ(x->h.xid, 0xb00 + i);
        if (mono_us() - t0 >= 30000)
            slow++;
        rpcpeer_close(&p, true);
    }
    if (slow > 1)
        uiw_test_fail(__FILE__, __LINE__, "%u calls of 60 took 30 ms or more", slow);
    free(x);
    server_down(&s);
}

/* ---------------------------------------------------------------- a peer that stops reading */

/* A peer that asks for two 15 MiB results (pushed from the procedure's own memory into
 * its Write chunks) and then stops reading its socket holds no worker: another client's
 * NULL calls are answered at once, and the stalled connection is closed once it made no
 * progress for io_timeout_ms. Its calls after those have replies of 33 work requests
 * each (two Write chunks of 16 segments), more than its send queue holds behind the
 * stalled ones: those wait on the connection for room, and end with it. */
TEST(rpcrdma_stalled_peer_holds_no_worker)
{
    struct server s;
    struct uiw_rpc_svc_attr a = {0};
    a.xprt.vers_max = 2;
    a.xprt.io_timeout_ms = 1000;
    a.nthreads = 2;
    server_up_attr(&s, &a);
    struct rpcpeer p;
    connect_peer(&p, &s);
    uint8_t *mem[2];
    for (uint32_t i = 0; i < 2; i++) {
        mem[i] = malloc(BIG_MAX);
        CHECK(mem[i] != NULL);
        rpcpeer_region(&p, 0x700 + i, mem[i], BIG_MAX, true, false);
        struct uiw_rpcrdma_segment seg = {0x700 + i, BIG_MAX, (uint64_t)(uintptr_t)mem[i]};
        struct uiw_rpcrdma_write_chunk wc = {1, &seg};
        struct uiw_rpcrdma_hdr h = call_hdr(0xc00 + i, 2, UIW_RDMA_MSG, NULL, 0);
        h.u.chunks.nwrites = 1;
        h.u.chunks.writes = &wc;
        uint8_t args[4];
        CHECK_EQ(rpcpeer_send_call(&p, &h, 0, PROG, P_BIG, len_word(args, BIG_MAX), 4), 0);
    }
    enum { TWO_CALLS = 100, TWO_LEN = 1024, SEG = TWO_LEN / 16 };
    uint8_t *two = malloc(2u * TWO_LEN);
    CHECK(two != NULL);
    rpcpeer_region(&p, 0x710, two, 2u * TWO_LEN, true, false);
    struct uiw_rpcrdma_segment segs[2][16];
    for (uint32_t c = 0; c < 2; c++)
        for (uint32_t j = 0; j < 16; j++)
            segs[c][j] = (struct uiw_rpcrdma_segment){
                0x710, SEG, (uint64_t)(uintptr_t)(two + c * TWO_LEN + j * SEG)};
    struct uiw_rpcrdma_write_chunk wc2[2] = {{16, segs[0]}, {16, segs[1]}};
    for (uint32_t i = 0; i < TWO_CALLS; i++) {
        struct uiw_rpcrdma_hdr h = call_hdr(0xc10 + i, 2, UIW_RDMA_MSG, NULL, 0);
        h.u.chunks.nwrites = 2;
        h.u.chunks.writes = wc2;
        uint8_t args[4];
        CHECK_EQ(rpcpeer_send_call(&p, &h, 0, PROG, P_TWO, len_word(args, TWO_LEN), 4), 0);
    }
    uint64_t t0 = mono_us();
    /* the peer reads nothing from now on; both calls run and their pushes stall */
    struct timespec settle = {0, 300000000L};
    nanosleep(&settle, NULL);
    CLIENT *c = uiw_rpc_clnt_create("127.0.0.1", s.port, PROG, 1, NULL);
    CHECK(c != NULL);
    const struct timeval tmo = {3, 0};
    for (int i = 0; i < 5; i++) {
        uint64_t t = mono_us();
        enum clnt_stat st =
            clnt_call(c, P_NULL, (xdrproc_t)xnone, NULL, (xdrproc_t)xnone, NULL, tmo);
        uint64_t us = mono_us() - t;
        if (st != RPC_SUCCESS || us > 1500000u)
            uiw_test_fail(__FILE__, __LINE__, "NULL call %d: status %d after %llu ms", i, (int)st,
                          (unsigned long long)(us / 1000u));
    }
    /* the stalled connection is closed within its io timeout (and a little) */
    struct uiw_rpc_xprt_stats st;
    for (;;) {
        CHECK_EQ(uiw_rpc_svc_xprt_stats(s.svc, &st), 0);
        if (st.lost + st.closed >= 1 || mono_us() - t0 > 10000000u)
            break;
        struct timespec ts = {0, 20000000L};
        nanosleep(&ts, NULL);
    }
    if (st.lost + st.closed < 1)
        uiw_test_fail(__FILE__, __LINE__, "the stalled connection is still open after 10 s");
    if (mono_us() - t0 < 900000u)
        uiw_test_fail(__FILE__, __LINE__, "the stalled connection was closed after %llu ms",
                      (unsigned long long)((mono_us() - t0) / 1000u));
    CHECK_EQ(clnt_call(c, P_NULL, (xdrproc_t)xnone, NULL, (xdrproc_t)xnone, NULL, tmo),
             RPC_SUCCESS);
    clnt_destroy(c);
    rpcpeer_close(&p, true);
    free(mem[0]);
    free(mem[1]);
    free(two);
    server_down(&s);
}

/* ---------------------------------------------------------------- one connection's STags */

/* Peer B names an STag the server registered for peer A's connection in a Send With
 * Invalidate. Each connection has its own protection domain: the STag is not associated
 * with B's stream, so B gets the RNIC's Terminate (RDMAP / Remote Protection / 'STag
 * cannot be invalidated', as Linux siw), and A's registration stays valid: A's RDMA Write
 * into it lands and A is still served. */
TEST(rpcrdma_send_inv_of_another_connections_stag)
{
    struct server s;
    server_up(&s, 2, 0, 0, 2);
    struct rpcpeer a, b;
    connect_peer(&a, &s);
    connect_peer(&b, &s);
    struct rx *x = rx_new();
    /* A's registration */
    struct uiw_rpcrdma_hdr h = call_hdr(0xd00, 2, UIW_RDMA_MSG, NULL, 0);
    CHECK_EQ(rpcpeer_send_call(&a, &h, 0, PROG, P_REG, NULL, 0), 0);
    CHECK_EQ(rpcpeer_recv_hdr(&a, x->msg, sizeof(x->msg), &x->len, &x->h, &x->sp, WAIT), 1);
    CHECK_EQ(x->h.proc, UIW_RDMA_MSG);
    CHECK_EQ(x->len - x->h.hdr_len, 28);
    uint32_t stag = uiw__get_be32(x->msg + x->h.hdr_len + 24);
    CHECK(stag != 0);
    /* B's NULL call, by Send With Invalidate of A's STag */
    uint8_t msg[512];
    h = call_hdr(0xd01, 2, UIW_RDMA_MSG, NULL, 0);
    int n = uiw_rpcrdma_encode(msg, sizeof(msg), &h);
    CHECK(n > 0);
    n += (int)rpcpeer_rpc_call(msg + n, 0xd01, PROG, 1, P_NULL, NULL, 0);
    CHECK_EQ(rawpeer_send_send(&b.raw, UIW_RDMAP_SEND_INV, stag, msg, (size_t)n), 0);
    struct rawpeer_term t;
    int r = rawpeer_expect_terminate(&b.raw, &t, WAIT);
    if (r != 0)
        uiw_test_fail(__FILE__, __LINE__,
                      "no Terminate for B's Send With Invalidate of A's STag 0x%08x: %d", stag, r);
    CHECK_EQ(t.t.layer, UIW_TERM_LAYER_RDMAP);
    CHECK_EQ(t.t.etype, UIW_TERM_RDMAP_REMOTE_PROTECTION);
    CHECK_EQ(t.t.code, UIW_TERM_RP_CANT_INVALIDATE);
    /* A's registration is still valid: its RDMA Write lands, and A is served */
    uint8_t data[16];
    memset(data, 0x5a, sizeof(data));
    CHECK_EQ(rawpeer_send_write(&a.raw, stag, (uint64_t)(uintptr_t)victim, data, sizeof(data)), 0);
    h = call_hdr(0xd02, 2, UIW_RDMA_MSG, NULL, 0);
    CHECK_EQ(rpcpeer_send_call(&a, &h, 0, PROG, P_NULL, NULL, 0), 0);
    r = rpcpeer_recv_hdr(&a, x->msg, sizeof(x->msg), &x->len, &x->h, &x->sp, WAIT);
    if (r != 1)
        uiw_test_fail(__FILE__, __LINE__, "A not served after its RDMA Write: %d", r);
    CHECK_EQ(x->h.xid, 0xd02);
    CHECK_MEM(victim, data, sizeof(data));
    h = call_hdr(0xd03, 2, UIW_RDMA_MSG, NULL, 0);
    CHECK_EQ(rpcpeer_send_call(&a, &h, 0, PROG, P_UNREG, NULL, 0), 0);
    CHECK_EQ(rpcpeer_recv_hdr(&a, x->msg, sizeof(x->msg), &x->len, &x->h, &x->sp, WAIT), 1);
    CHECK_EQ(x->h.xid, 0xd03);
    rpcpeer_close(&b, true);
    rpcpeer_close(&a, false);
    free(x);
    still_serves(&s);
    server_down(&s);
}

/* A requester never invalidates what the responder registered: a call that comes by Send
 * With Invalidate, even of an STag of its own connection (which the RNIC lets it name),
 * is a protocol error that ends the connection, instead of being served. */
TEST(rpcrdma_call_by_send_inv_ends_the_connection)
{
    struct server s;
    server_up(&s, 2, 0, 0, 2);
    struct rpcpeer a;
    connect_peer(&a, &s);
    struct rx *x = rx_new();
    struct uiw_rpcrdma_hdr h = call_hdr(0xe00, 2, UIW_RDMA_MSG, NULL, 0);
    CHECK_EQ(rpcpeer_send_call(&a, &h, 0, PROG, P_REG, NULL, 0), 0);
    CHECK_EQ(rpcpeer_recv_hdr(&a, x->msg, sizeof(x->msg), &x->len, &x->h, &x->sp, WAIT), 1);
    CHECK_EQ(x->len - x->h.hdr_len, 28);
    uint32_t stag = uiw__get_be32(x->msg + x->h.hdr_len + 24);
    CHECK(stag != 0);
    uint8_t msg[512];
    h = call_hdr(0xe01, 2, UIW_RDMA_MSG, NULL, 0);
    int n = uiw_rpcrdma_encode(msg, sizeof(msg), &h);
    CHECK(n > 0);
    n += (int)rpcpeer_rpc_call(msg + n, 0xe01, PROG, 1, P_NULL, NULL, 0);
    CHECK_EQ(rawpeer_send_send(&a.raw, UIW_RDMAP_SEND_INV, stag, msg, (size_t)n), 0);
    struct rawpeer_term t;
    int r = rawpeer_expect_terminate(&a.raw, &t, WAIT);
    if (r != 0)
        uiw_test_fail(__FILE__, __LINE__, "a call by Send With Invalidate was not refused: %d", r);
    CHECK_EQ(t.fpdus_before, 0); /* no reply before it */
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw_rpc_svc_xprt_stats(s.svc, &st), 0);
    CHECK_EQ(st.lost, 1);
    rpcpeer_close(&a, true);
    /* the registration goes back from another connection */
    struct rpcpeer c;
    connect_peer(&c, &s);
    h = call_hdr(0xe02, 2, UIW_RDMA_MSG, NULL, 0);
    CHECK_EQ(rpcpeer_send_call(&c, &h, 0, PROG, P_UNREG, NULL, 0), 0);
    CHECK_EQ(rpcpeer_recv_hdr(&c, x->msg, sizeof(x->msg), &x->len, &x->h, &x->sp, WAIT), 1);
    CHECK_EQ(x->h.xid, 0xe02);
    rpcpeer_close(&c, false);
    free(x);
    server_down(&s);
}
