/* Backward direction (RFC 8167): the server calls the client during a call of its own;
 * backward credits, and the Backward Request Support property (Version Two). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include <uiw/wire.h>

#include "rpc/rpc_internal.h"
#include "rpc_util.h"

/* The argument of TCBPROG procedure 1 (false after answering an error). */
static bool cb_arg(struct svc_req *rq, SVCXPRT *x, u_int *v)
{
    if (rq->rq_proc != 1) {
        svcerr_noproc(x);
        return false;
    }
    if (!svc_getargs(x, (xdrproc_t)xdr_u_int, (char *)v)) {
        svcerr_decode(x);
        return false;
    }
    return true;
}

static void cb_dispatch(struct svc_req *rq, SVCXPRT *x)
{
    u_int v;
    if (!cb_arg(rq, x, &v))
        return;
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

/* The client's handler of a backward call makes a forward call of its own, on a second
 * connection to the same server, before it answers: the server's worker waiting for the
 * backward reply polls the device meanwhile, and the forward call it finds must be run by
 * another worker (two here) at once, or neither call ends until a wait of a worker does. */
static CLIENT *nested_clnt;

static void cb_nested(struct svc_req *rq, SVCXPRT *x)
{
    u_int v;
    if (!cb_arg(rq, x, &v))
        return;
    struct tpair p = {v, 1000};
    u_int sum = 0;
    if (clnt_call(nested_clnt, TP_ADD, (xdrproc_t)xdr_tpair, (char *)&p, (xdrproc_t)xdr_u_int,
                  (char *)&sum, TMO) != RPC_SUCCESS)
        sum = 0;
    svc_sendreply(x, (xdrproc_t)xdr_u_int, (char *)&sum);
}

TEST(rpc_callback_makes_a_forward_call)
{
    struct uiw_rpc_svc_attr sa = {0};
    sa.nthreads = 2;
    struct tsrv t;
    tsrv_start(&t, &sa);
    CLIENT *c = tclnt(t.port, NULL);
    nested_clnt = tclnt(t.port, NULL);
    CHECK_EQ(uiw_rpc_clnt_bc_register(c, TCBPROG, 1, cb_nested), 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (u_int i = 0; i < 20; i++) {
        u_int v = i, r = 0;
        CHECK_EQ(clnt_call(c, TP_CALLBACK, (xdrproc_t)xdr_u_int, (char *)&v, (xdrproc_t)xdr_u_int,
                           (char *)&r, TMO),
                 RPC_SUCCESS);
        CHECK_EQ(r, i + 1000);
    }
    /* at once, not when the waiting worker's wait ends (100 ms each) */
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 1500);
    clnt_destroy(nested_clnt);
    clnt_destroy(c);
    tsrv_stop(&t);
}

/* ---------------------------------------------------------------- credits and BRS */

/* A second program of the test server: backward calls made on request. */
#define BPROG 0x20000779u
enum { BP_BURST = 1, BP_BC = 2 };

/* TCBPROG procedure 2: {reply_len, data<>} -> {CRC32c of data, out<reply_len>}, out[i] =
 * i * 5 + reply_len; the client counts its executions. */
static _Atomic unsigned cb_runs;

struct cbargs {
    u_int reply_len;
    struct tbuf data;
};
static bool_t xdr_cbargs(XDR *x, struct cbargs *a)
{
    return xdr_u_int(x, &a->reply_len) && xdr_tbuf(x, &a->data);
}
struct cbres {
    u_int crc;
    struct tbuf out;
};
static bool_t xdr_cbres(XDR *x, struct cbres *r)
{
    return xdr_u_int(x, &r->crc) && xdr_tbuf(x, &r->out);
}

static void cb_blob(SVCXPRT *x)
{
    atomic_fetch_add(&cb_runs, 1);
    struct cbargs a = {0, {0, NULL}};
    if (!svc_getargs(x, (xdrproc_t)xdr_cbargs, (char *)&a)) {
        svcerr_decode(x);
        return;
    }
    struct cbres r = {uiw_crc32c(0, a.data.val, a.data.len),
                      {a.reply_len, malloc(a.reply_len + 1)}};
    for (u_int i = 0; i < a.reply_len; i++)
        r.out.val[i] = (char)(i * 5 + a.reply_len);
    svc_sendreply(x, (xdrproc_t)xdr_cbres, (char *)&r);
    free(r.out.val);
    svc_freeargs(x, (xdrproc_t)xdr_cbargs, (char *)&a);
}

static void cb_dispatch2(struct svc_req *rq, SVCXPRT *x)
{
    if (rq->rq_proc == 2)
        cb_blob(x);
    else
        cb_dispatch(rq, x);
}

/* BP_BURST: n backward calls (procedure 1) started at once on this call's connection,
 * while the client drives nothing (see burst_wait); then what the server saw. */
struct burst {
    u_int ok;                                    /* backward calls answered rightly */
    u_int credits, bc_credits;                   /* uiw_svc_info */
    u_int by_peer, to_peer, max_inflight, waits; /* uiw_svc_xprt_stats */
    u_int calls_sent, replies_received, calls_received, replies_sent;
};
static bool_t xdr_burst(XDR *x, struct burst *b)
{
    u_int *f[] = {
        &b->ok,           &b->credits, &b->bc_credits, &b->by_peer,          &b->to_peer,
        &b->max_inflight, &b->waits,   &b->calls_sent, &b->replies_received, &b->calls_received,
        &b->replies_sent};
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
        if (!xdr_u_int(x, f[i]))
            return FALSE;
    return TRUE;
}

static pthread_mutex_t burst_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t burst_cv = PTHREAD_COND_INITIALIZER;
static bool burst_started;

struct bslot {
    u_int v, r;
    _Atomic int done;
    enum clnt_stat st;
};

static void burst_done(CLIENT *clnt, void *arg, enum clnt_stat stat, const struct rpc_err *err)
{
    (void)clnt;
    (void)err;
    struct bslot *s = arg;
    s->st = stat;
    atomic_store(&s->done, 1);
}

static void bp_burst(SVCXPRT *x)
{
    u_int n;
    if (!svc_getargs(x, (xdrproc_t)xdr_u_int, (char *)&n) || n > 16) {
        svcerr_decode(x);
        return;
    }
    struct burst b;
    memset(&b, 0, sizeof(b));
    CLIENT *bc = uiw_svc_bc_create(x, TCBPROG, 1);
    struct bslot s[16];
    for (u_int i = 0; bc && i < n; i++) {
        s[i] = (struct bslot){i + 1, 0, 0, RPC_FAILED};
        if (uiw_rpc_call_async(bc, 1, (xdrproc_t)xdr_u_int, (char *)&s[i].v, (xdrproc_t)xdr_u_int,
                               (char *)&s[i].r, TMO, NULL, burst_done, &s[i]) != 0)
            atomic_store(&s[i].done, 1);
    }
    pthread_mutex_lock(&burst_mu);
    burst_started = true;
    pthread_cond_broadcast(&burst_cv);
    pthread_mutex_unlock(&burst_mu);
    for (int k = 0; bc && k < 200 && uiw_rpc_clnt_pending(bc) > 0; k++)
        uiw_rpc_clnt_poll(bc, 100);
    for (u_int i = 0; bc && i < n; i++)
        b.ok += atomic_load(&s[i].done) && s[i].st == RPC_SUCCESS && s[i].r == 2 * s[i].v;
    if (bc)
        clnt_destroy(bc);
    struct uiw_rpc_conn_info ci;
    struct uiw_rpc_xprt_stats st;
    if (uiw_svc_info(x, &ci) == 0 && uiw_svc_xprt_stats(x, &st) == 0) {
        b.credits = ci.credits;
        b.bc_credits = ci.bc_credits;
        b.by_peer = st.credits_granted_by_peer;
        b.to_peer = st.credits_granted_to_peer;
        b.max_inflight = st.credits_max_inflight;
        b.waits = (u_int)st.credit_waits;
        b.calls_sent = (u_int)st.calls_sent;
        b.replies_received = (u_int)st.replies_received;
        b.calls_received = (u_int)st.calls_received;
        b.replies_sent = (u_int)st.replies_sent;
    }
    svc_sendreply(x, (xdrproc_t)xdr_burst, (char *)&b);
}

/* BP_BC {arg_len, reply_len, reply_max, mode}: one backward call of TCBPROG procedure 2
 * with arg_len bytes of arguments, asking for reply_len bytes back (uiw_rpc_call with
 * reply_max); what happened, and what it added to the connection's counters. mode:
 * BC_NEW, a CLIENT of its own; BC_DEAF, the same from a server that ignored the client's
 * BRS (it takes it for the default); BC_KEEP, a CLIENT kept after the call; BC_KEPT, the
 * call on the kept CLIENT (then destroyed), made during an earlier call. */
enum { BC_NEW, BC_DEAF, BC_KEEP, BC_KEPT };
static CLIENT *kept_bc;
struct bcreq {
    u_int arg_len, reply_len, reply_max, mode;
};
static bool_t xdr_bcreq(XDR *x, struct bcreq *q)
{
    return xdr_u_int(x, &q->arg_len) && xdr_u_int(x, &q->reply_len) &&
           xdr_u_int(x, &q->reply_max) && xdr_u_int(x, &q->mode);
}
struct bcout {
    u_int create_errno, stat, rdma_err, ok;
    u_int calls_sent, read_chunks, long_calls, reply_chunks, retransmits, err_rx;
};
static bool_t xdr_bcout(XDR *x, struct bcout *o)
{
    u_int *f[] = {&o->create_errno, &o->stat,        &o->rdma_err,   &o->ok,
                  &o->calls_sent,   &o->read_chunks, &o->long_calls, &o->reply_chunks,
                  &o->retransmits,  &o->err_rx};
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
        if (!xdr_u_int(x, f[i]))
            return FALSE;
    return TRUE;
}

static void bp_bc(SVCXPRT *x)
{
    struct bcreq q;
    if (!svc_getargs(x, (xdrproc_t)xdr_bcreq, (char *)&q) || q.arg_len > (1u << 20) ||
        q.reply_len > (1u << 20)) {
        svcerr_decode(x);
        return;
    }
    struct bcout o;
    memset(&o, 0, sizeof(o));
    struct uiw_rpc_xprt_stats s0, s1;
    memset(&s0, 0, sizeof(s0));
    memset(&s1, 0, sizeof(s1));
    uiw_svc_xprt_stats(x, &s0);
    if (q.mode == BC_DEAF) {
        struct uiw__rr_conn *k = ((struct uiw__rpc_scall *)x->xp_p1)->k.conn;
        uiw__lock_take(&k->lock);
        k->props.peer_brs = UIW_RDMA2_BKREQSUP_INLINE;
        uiw__lock_give(&k->lock);
    }
    errno = 0;
    CLIENT *bc = q.mode == BC_KEPT ? kept_bc : uiw_svc_bc_create(x, TCBPROG, 1);
    o.create_errno = bc ? 0 : (u_int)errno;
    if (bc) {
        struct cbargs a = {q.reply_len, {q.arg_len, malloc(q.arg_len + 1)}};
        for (u_int i = 0; i < q.arg_len; i++)
            a.data.val[i] = (char)(i * 3);
        struct cbres r = {0, {0, NULL}};
        struct uiw_rpc_call_opts opts = {0};
        opts.reply_max = q.reply_max;
        enum clnt_stat st = uiw_rpc_call(bc, 2, (xdrproc_t)xdr_cbargs, (char *)&a,
                                         (xdrproc_t)xdr_cbres, (char *)&r, TMO, &opts);
        o.stat = (u_int)st;
        if (st == RPC_SUCCESS) {
            o.ok = r.crc == uiw_crc32c(0, a.data.val, q.arg_len) && r.out.len == q.reply_len;
            for (u_int i = 0; o.ok && i < q.reply_len; i++)
                o.ok = (uint8_t)r.out.val[i] == (uint8_t)(i * 5 + q.reply_len);
            clnt_freeres(bc, (xdrproc_t)xdr_cbres, (char *)&r);
        } else {
            struct rpc_err e;
            clnt_geterr(bc, &e);
            o.rdma_err = (u_int)e.re_lb.s1;
        }
        free(a.data.val);
        if (q.mode == BC_KEEP)
            kept_bc = bc;
        else
            clnt_destroy(bc);
        if (q.mode == BC_KEPT)
            kept_bc = NULL;
    }
    uiw_svc_xprt_stats(x, &s1);
    o.calls_sent = (u_int)(s1.calls_sent - s0.calls_sent);
    o.read_chunks = (u_int)(s1.read_chunks - s0.read_chunks);
    o.long_calls = (u_int)(s1.long_calls - s0.long_calls);
    o.reply_chunks = (u_int)(s1.reply_chunks - s0.reply_chunks);
    o.retransmits = (u_int)(s1.retransmits - s0.retransmits);
    o.err_rx = 0;
    for (int i = 0; i < UIW_RPC_NERR; i++)
        o.err_rx += (u_int)(s1.errors_received[i] - s0.errors_received[i]);
    svc_sendreply(x, (xdrproc_t)xdr_bcout, (char *)&o);
}

static void bdispatch(struct svc_req *rq, SVCXPRT *x)
{
    switch (rq->rq_proc) {
    case 0:
        svc_sendreply(x, (xdrproc_t)xdr_none, NULL);
        return;
    case BP_BURST:
        bp_burst(x);
        return;
    case BP_BC:
        bp_bc(x);
        return;
    default:
        svcerr_noproc(x);
    }
}

static CLIENT *bclient(const struct tsrv *t, const struct uiw_rpc_clnt_attr *ca)
{
    CHECK_EQ(uiw_rpc_svc_register(t->svc, BPROG, 1, bdispatch), 0);
    CLIENT *c = uiw_rpc_clnt_create("127.0.0.1", t->port, BPROG, 1, ca);
    CHECK(c != NULL);
    CHECK_EQ(uiw_rpc_clnt_bc_register(c, TCBPROG, 1, cb_dispatch2), 0);
    return c;
}

/* Backward credits (RFC 8167 section 4, the draft's rdma_direction) are their own: the
 * client grants the server 3 backward calls, the server asks for 8 of them and grants 16
 * forward calls to a client that asks for 32. Eight backward calls started at once,
 * while the client serves nothing, go one at a time until the first reply (RFC 8166
 * 4.3.1), then never more than 3 in flight; the forward credits stay 16 on both sides
 * and still let 16 forward calls be in flight. */
static void bc_credits(uint32_t vers)
{
    struct uiw_rpc_svc_attr sa = {0};
    sa.xprt.credits = 16;
    sa.xprt.bc_credits = 8;
    struct tsrv t;
    tsrv_start(&t, &sa);
    struct uiw_rpc_clnt_attr ca = {0};
    ca.xprt.vers_max = vers;
    ca.xprt.credits = 32;
    ca.xprt.bc_credits = 3;
    ca.no_vers_memory = true;
    CLIENT *c = bclient(&t, &ca);
    CHECK_EQ(clnt_call(c, 0, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_none, NULL, TMO),
             RPC_SUCCESS);
    struct uiw_rpc_conn_info ci;
    CHECK_EQ(uiw_rpc_clnt_info(c, &ci), 0);
    CHECK_EQ(ci.vers, vers);
    CHECK_EQ(ci.credits, 16);   /* forward: the server's grant */
    CHECK_EQ(ci.bc_credits, 3); /* backward: the client's grant */

    atomic_store(&cb_runs, 0);
    burst_started = false;
    u_int n = 8;
    struct burst b;
    memset(&b, 0, sizeof(b));
    struct bslot fs = {0, 0, 0, RPC_FAILED};
    CHECK_EQ(uiw_rpc_call_async(c, BP_BURST, (xdrproc_t)xdr_u_int, (char *)&n, (xdrproc_t)xdr_burst,
                                (char *)&b, TMO, NULL, burst_done, &fs),
             0);
    /* the client drives nothing until the server has started all eight */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&burst_mu);
    while (!burst_started)
        if (pthread_cond_timedwait(&burst_cv, &burst_mu, &until) != 0)
            break;
    bool started = burst_started;
    pthread_mutex_unlock(&burst_mu);
    CHECK(started);
    for (int k = 0; k < 200 && uiw_rpc_clnt_pending(c) > 0; k++)
        CHECK(uiw_rpc_clnt_poll(c, 100) >= 0);
    CHECK(atomic_load(&fs.done));
    CHECK_EQ(fs.st, RPC_SUCCESS);
    CHECK_EQ(b.ok, 8);
    /* the server's view of its connection */
    CHECK_EQ(b.credits, 16);   /* forward grant, unchanged by the backward traffic */
    CHECK_EQ(b.bc_credits, 3); /* backward: the client's grant, not its forward ask */
    CHECK_EQ(b.by_peer, 3);
    CHECK_EQ(b.to_peer, 16);
    CHECK_EQ(b.max_inflight, 3); /* never more backward calls than granted ... */
    CHECK_EQ(b.waits, 7);        /* ... the first alone, the other seven waited */
    CHECK_EQ(b.calls_sent, 8);
    CHECK_EQ(b.replies_received, 8);
    CHECK_EQ(b.calls_received, 2); /* forward: NULL and BP_BURST */
    CHECK_EQ(b.replies_sent, 1);
    /* the client's */
    CHECK_EQ(uiw_rpc_clnt_info(c, &ci), 0);
    CHECK_EQ(ci.credits, 16); /* not the 8 the server's backward calls ask for */
    CHECK_EQ(ci.bc_credits, 3);
    struct uiw_rpc_xprt_stats xs;
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &xs), 0);
    CHECK_EQ(xs.credits_granted_by_peer, 16);
    CHECK_EQ(xs.credits_granted_to_peer, 3);
    CHECK_EQ(xs.calls_received, 8); /* backward */
    CHECK_EQ(xs.replies_sent, 8);
    CHECK_EQ(xs.calls_sent, 2);
    CHECK_EQ(xs.credits_max_inflight, 1);
    CHECK_EQ(xs.credit_waits, 0);
    /* forward calls still have their 16 credits: 20 at once, 16 in flight, 4 wait */
    struct bslot f[20];
    for (int i = 0; i < 20; i++) {
        f[i] = (struct bslot){0, 0, 0, RPC_FAILED};
        CHECK_EQ(uiw_rpc_call_async(c, 0, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_none, NULL, TMO,
                                    NULL, burst_done, &f[i]),
                 0);
    }
    for (int k = 0; k < 200 && uiw_rpc_clnt_pending(c) > 0; k++)
        CHECK(uiw_rpc_clnt_poll(c, 100) >= 0);
    for (int i = 0; i < 20; i++)
        CHECK_EQ(f[i].st, RPC_SUCCESS);
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &xs), 0);
    CHECK_EQ(xs.credits_max_inflight, 16);
    CHECK_EQ(xs.credit_waits, 4);
    clnt_destroy(c);
    tsrv_stop(&t);
}

TEST(rpc_callback_credits_v2)
{
    bc_credits(2);
}

TEST(rpc_callback_credits_v1)
{
    bc_credits(1);
}

/* ---------------------------------------------------------------- BRS */

static struct bcout bc_mode(CLIENT *c, u_int arg_len, u_int reply_len, u_int reply_max, u_int mode)
{
    struct bcreq q = {arg_len, reply_len, reply_max, mode};
    struct bcout o;
    memset(&o, 0, sizeof(o));
    CHECK_EQ(clnt_call(c, BP_BC, (xdrproc_t)xdr_bcreq, (char *)&q, (xdrproc_t)xdr_bcout, (char *)&o,
                       TMO),
             RPC_SUCCESS);
    return o;
}

static struct bcout bc_once(CLIENT *c, u_int arg_len, u_int reply_len, u_int reply_max)
{
    return bc_mode(c, arg_len, reply_len, reply_max, BC_NEW);
}

static unsigned client_bc_calls(CLIENT *c)
{
    struct uiw_rpc_xprt_stats xs;
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &xs), 0);
    return (unsigned)xs.calls_received;
}

static CLIENT *brs_client(struct tsrv *t, enum uiw_rpc_brs brs, uint32_t want_brs)
{
    tsrv_start(t, NULL);
    struct uiw_rpc_clnt_attr ca = {0};
    ca.xprt.brs = brs;
    ca.no_vers_memory = true;
    CLIENT *c = bclient(t, &ca);
    struct uiw_rpc_conn_info ci;
    CHECK_EQ(uiw_rpc_clnt_info(c, &ci), 0);
    CHECK_EQ(ci.vers, 2);
    CHECK_EQ(ci.local_brs, want_brs);
    atomic_store(&cb_runs, 0);
    return c;
}

/* The server's inline limit toward the client is the client's 4096-byte receive buffer
 * (RBSIZ): 2000 bytes of arguments fit (and are DDP-eligible: the threshold is 1024),
 * 6000 do not. */

/* What a backward call of bc_once did: its outcome, the calls it put on the wire, the
 * Read chunks they carried, and the client's executions of procedure 2 so far. */
#define WANT(o, st_, sent_, reads_, runs_)                                                         \
    do {                                                                                           \
        CHECK_EQ((o).stat, (st_));                                                                 \
        CHECK((st_) != RPC_SUCCESS || (o).ok);                                                     \
        CHECK_EQ((o).calls_sent, (sent_));                                                         \
        CHECK_EQ((o).read_chunks, (reads_));                                                       \
        CHECK_EQ(atomic_load(&cb_runs), (runs_));                                                  \
    } while (0)
/* ... and the RPC-over-RDMA error it ended with, errors received, calls sent again. */
#define WANT_ERR(o, rdma_err_, err_rx_, resent_)                                                   \
    do {                                                                                           \
        CHECK_EQ((o).rdma_err, (rdma_err_));                                                       \
        CHECK_EQ((o).err_rx, (err_rx_));                                                           \
        CHECK_EQ((o).retransmits, (resent_));                                                      \
    } while (0)

/* BRS NONE: the server never calls back (uiw_svc_bc_create refuses: nothing is sent). */
TEST(rpc_brs_none)
{
    struct tsrv t;
    CLIENT *c = brs_client(&t, UIW_RPC_BRS_NONE, UIW_RDMA2_BKREQSUP_NONE);
    struct bcout o = bc_once(c, 8, 8, 0);
    CHECK_EQ(o.create_errno, EOPNOTSUPP);
    CHECK_EQ(o.calls_sent, 0);
    CHECK_EQ(atomic_load(&cb_runs), 0);
    CHECK_EQ(client_bc_calls(c), 0);
    struct uiw_rpc_xprt_stats ss;
    CHECK_EQ(uiw_rpc_svc_xprt_stats(t.svc, &ss), 0);
    CHECK_EQ(ss.calls_sent, 0); /* no backward call */
    clnt_destroy(c);
    tsrv_stop(&t);
}

/* BRS NONE, and a server that calls back anyway: the client refuses the call before its
 * RPC layer sees it, with RDMA2_ERR_SYSTEM (the permanent error: the server ends the
 * call, RPC_SYSTEMERROR); it never runs, and the connection goes on. */
TEST(rpc_brs_none_refused)
{
    struct tsrv t;
    CLIENT *c = brs_client(&t, UIW_RPC_BRS_NONE, UIW_RDMA2_BKREQSUP_NONE);
    struct bcout o = bc_mode(c, 8, 8, 0, BC_DEAF);
    CHECK_EQ(o.create_errno, 0);
    WANT(o, RPC_SYSTEMERROR, 1, 0, 0);
    WANT_ERR(o, UIW_RDMA2_ERR_SYSTEM, 1, 0);
    CHECK_EQ(client_bc_calls(c), 0);
    struct uiw_rpc_xprt_stats xs;
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &xs), 0);
    CHECK_EQ(xs.replies_sent, 0);
    o = bc_mode(c, 8, 8, 0, BC_DEAF); /* again: the same answer */
    WANT(o, RPC_SYSTEMERROR, 1, 0, 0);
    CHECK_EQ(clnt_call(c, 0, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_none, NULL, TMO),
             RPC_SUCCESS);
    clnt_destroy(c);
    tsrv_stop(&t);
}

/* A client that turns its BRS to NONE (UPDPROP) after the server made a backward-call
 * CLIENT: the CLIENT's next call is not sent (RPC_CANTSEND, EOPNOTSUPP), as if the
 * client had said NONE from the start; nothing reaches the client. */
TEST(rpc_brs_none_by_update)
{
    struct tsrv t;
    CLIENT *c = brs_client(&t, UIW_RPC_BRS_DEFAULT, UIW_RDMA2_BKREQSUP_INLINE);
    struct bcout o = bc_mode(c, 8, 8, 0, BC_KEEP);
    CHECK_EQ(o.create_errno, 0);
    WANT(o, RPC_SUCCESS, 1, 0, 1);
    struct uiw_rpc_prop_req none = {.which = UIW_RPCRDMA_PROP_BRS,
                                    .value = UIW_RDMA2_BKREQSUP_NONE};
    CHECK_EQ(uiw_rpc_clnt_update_props(c, &none, 1), 0);
    /* the UPDPROP goes ahead of this call on the connection: the server has it by then */
    o = bc_mode(c, 8, 8, 0, BC_KEPT);
    WANT(o, RPC_CANTSEND, 0, 0, 1);
    CHECK_EQ(o.err_rx, 0);
    CHECK_EQ(client_bc_calls(c), 1);
    o = bc_once(c, 8, 8, 0); /* a new CLIENT: refused at its making */
    CHECK_EQ(o.create_errno, EOPNOTSUPP);
    CHECK_EQ(o.calls_sent, 0);
    CHECK_EQ(clnt_call(c, 0, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_none, NULL, TMO),
             RPC_SUCCESS);
    clnt_destroy(c);
    tsrv_stop(&t);
}

/* BRS INLINE (the default): backward calls and their replies go inline only, never with
 * chunks (draft section 5.2: "backward requests inline only"). DDP-eligible arguments
 * that fit go inline; a call that does not fit is not sent (RPC_CANTSEND); a reply that
 * does not fit has no Reply chunk to go in: the client answers RDMA2_ERR_REPLY_RESOURCE
 * and the call fails, run once and not sent again (the server cannot offer the Reply
 * chunk a retry would need). A call whose expected reply (reply_max) can come inline
 * within the server's 4096-byte receive buffers goes, without a Reply chunk; one that
 * would need a Reply chunk is not sent. */
TEST(rpc_brs_inline)
{
    struct tsrv t;
    CLIENT *c = brs_client(&t, UIW_RPC_BRS_DEFAULT, UIW_RDMA2_BKREQSUP_INLINE);
    struct bcout o = bc_once(c, 2000, 100, 0);
    CHECK_EQ(o.create_errno, 0);
    WANT(o, RPC_SUCCESS, 1, 0, 1);
    CHECK_EQ(o.long_calls, 0);
    o = bc_once(c, 6000, 100, 0); /* arguments too large to go inline */
    WANT(o, RPC_CANTSEND, 0, 0, 1);
    o = bc_once(c, 8, 6000, 0); /* a reply too large to come inline */
    WANT(o, RPC_CANTSEND, 1, 0, 2);
    CHECK_EQ(o.rdma_err, UIW_RDMA2_ERR_REPLY_RESOURCE);
    CHECK_EQ(o.err_rx, 1);
    CHECK_EQ(o.retransmits, 0);
    CHECK_EQ(o.reply_chunks, 0);
    o = bc_once(c, 8, 6000, 8192); /* a Reply chunk asked for */
    WANT(o, RPC_CANTSEND, 0, 0, 2);
    o = bc_once(c, 8, 100, 512); /* an expected reply that comes inline */
    WANT(o, RPC_SUCCESS, 1, 0, 3);
    CHECK_EQ(o.reply_chunks, 0);
    CHECK_EQ(o.err_rx, 0);
    o = bc_once(c, 8, 3000, 4032); /* the largest that can: 64 bytes left for its header */
    WANT(o, RPC_SUCCESS, 1, 0, 4);
    CHECK_EQ(o.reply_chunks, 0);
    o = bc_once(c, 8, 100, 4033); /* one byte more would need a Reply chunk */
    WANT(o, RPC_CANTSEND, 0, 0, 4);
    CHECK_EQ(client_bc_calls(c), 4);
    clnt_destroy(c);
    tsrv_stop(&t);
}

/* BRS GENL: backward calls move data as forward ones do: DDP-eligible arguments in a
 * Read chunk, a reply in the Reply chunk offered. A reply larger than the Reply chunk
 * offered gets RDMA2_ERR_REPLY_RESOURCE; the server sends the call again with a chunk of
 * the size asked for, and the client answers it with the reply it kept, without running
 * the call a second time (as a server's duplicate-reply cache does for forward calls). */
TEST(rpc_brs_genl)
{
    struct tsrv t;
    CLIENT *c = brs_client(&t, UIW_RPC_BRS_GENL, UIW_RDMA2_BKREQSUP_GENL);
    struct bcout o = bc_once(c, 2000, 100, 0);
    WANT(o, RPC_SUCCESS, 1, 1, 1);
    o = bc_once(c, 6000, 100, 0);
    WANT(o, RPC_SUCCESS, 1, 1, 2);
    o = bc_once(c, 8, 6000, 8192);
    WANT(o, RPC_SUCCESS, 1, 0, 3);
    CHECK_EQ(o.reply_chunks, 1);
    CHECK_EQ(o.err_rx, 0);
    CHECK_EQ(client_bc_calls(c), 3);
    o = bc_once(c, 8, 20000, 8192); /* a reply larger than the Reply chunk offered */
    WANT(o, RPC_SUCCESS, 2, 0, 4);  /* sent twice, run once */
    WANT_ERR(o, 0, 1, 1);
    CHECK_EQ(client_bc_calls(c), 5);
    struct uiw_rpc_xprt_stats xs;
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &xs), 0);
    CHECK_EQ(xs.drc_hits, 1);
    CHECK_EQ(xs.errors_sent[UIW_RDMA2_ERR_REPLY_RESOURCE], 1);
    o = bc_once(c, 8, 300, 0); /* and the connection goes on */
    WANT(o, RPC_SUCCESS, 1, 0, 5);
    clnt_destroy(c);
    tsrv_stop(&t);
}
