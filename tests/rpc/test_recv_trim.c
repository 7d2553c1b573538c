/* A connection's receive buffers follow its recent load: a burst of large inline calls
 * writes every receive posted for the server's grant (80 of 32 KiB here), and once the
 * connection has been idle for two trims their memory goes back to the system while they
 * stay posted (the credits granted are untouched: a call after the idle time lands in
 * one), as do the reply buffers the burst left in the pool. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uiw/wire.h>

#include "rpc/clnt_hooks.h"
#include "rpc/svc_hooks.h"
#include "rpc_util.h"
#include "rpcrdma/xprt.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(UIW__ASAN) ||         \
    defined(UIW__TSAN)
#define JUDGE_RSS 0
#else
#define JUDGE_RSS 1
#endif

#define INLINE  32768u
#define CREDITS 64u
#define ARG     (28u * 1024u) /* inline: within the 32 KiB receive buffers */

struct sink {
    u_int crc;
    enum clnt_stat st;
    int done;
};

static void sink_done(CLIENT *c, void *arg, enum clnt_stat st, const struct rpc_err *e)
{
    (void)c;
    (void)e;
    struct sink *k = arg;
    k->st = st;
    k->done++;
}

/* CREDITS calls of ARG bytes in flight at once, rounds times; each answered with the
 * CRC of its bytes. */
static void burst(CLIENT *c, struct tbuf *arg, int rounds)
{
    u_int want = uiw_crc32c(0, arg->val, arg->len);
    struct sink k[CREDITS];
    for (int r = 0; r < rounds; r++) {
        memset(k, 0, sizeof(k));
        for (unsigned i = 0; i < CREDITS; i++)
            CHECK_EQ(uiw_rpc_call_async(c, TP_SINK, (xdrproc_t)xdr_tbuf, arg, (xdrproc_t)xdr_u_int,
                                        &k[i].crc, TMO, NULL, sink_done, &k[i]),
                     0);
        while (uiw_rpc_clnt_pending(c))
            CHECK(uiw_rpc_clnt_poll(c, 5000) >= 0);
        for (unsigned i = 0; i < CREDITS; i++) {
            CHECK_EQ(k[i].done, 1);
            CHECK_EQ(k[i].st, RPC_SUCCESS);
            CHECK_EQ(k[i].crc, want);
        }
    }
}

static uint32_t resident(struct uiw__rr_dev *d)
{
    return atomic_load(&d->ibuf_resident);
}

/* A server granting CREDITS, its receive buffers of INLINE bytes. */
static void srv_start(struct tsrv *t)
{
    struct uiw_rpc_svc_attr sa;
    memset(&sa, 0, sizeof(sa));
    sa.xprt.inline_recv = sa.xprt.inline_send = INLINE;
    sa.xprt.credits = CREDITS;
    tsrv_start(t, &sa);
}

/* A client of it whose arguments of ARG bytes go inline, into a receive buffer;
 * resident: xprt.resident. */
static CLIENT *clnt_of(const struct tsrv *t, bool resident)
{
    struct uiw_rpc_clnt_attr ca;
    memset(&ca, 0, sizeof(ca));
    ca.xprt.inline_recv = ca.xprt.inline_send = INLINE;
    ca.xprt.credits = CREDITS;
    ca.xprt.ddp_threshold = INLINE;
    ca.xprt.resident = resident;
    return tclnt(t->port, &ca);
}

TEST(rpc_idle_connection_gives_back_receive_buffers)
{
    struct tsrv t;
    srv_start(&t);
    struct uiw__rr_dev *sd = uiw__rpc_svc_dev(t.svc);
    CLIENT *c = clnt_of(&t, false);
    struct tbuf arg = {ARG, malloc(ARG)};
    CHECK(arg.val != NULL);
    for (u_int i = 0; i < ARG; i++)
        arg.val[i] = (char)(i * 13 + 1);
    long before = uiw_test_vm_kib("VmRSS");
    /* every posted receive written: the server's receives take the calls in turn */
    burst(c, &arg, 4);
    long busy = uiw_test_vm_kib("VmRSS");
    uint32_t r_busy = resident(sd);
    CHECK(r_busy >= CREDITS);
    /* and as the server's counters give it (mincore): every page of those written */
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw_rpc_svc_xprt_stats(t.svc, &st), 0);
    uint64_t m_busy = st.inline_buffer_bytes, b_busy = st.inline_buffer_resident;
    CHECK(b_busy >= (uint64_t)CREDITS * ARG);
    CHECK(b_busy <= m_busy);
    /* idle for two trims and a bit (one every 5 s), led by the server's workers and, on
     * the client, by this thread */
    for (uint64_t end = uiw__rr_now_ns() + 11500000000ull; uiw__rr_now_ns() < end;)
        CHECK(uiw_rpc_clnt_poll(c, 100) >= 0);
    long idle = uiw_test_vm_kib("VmRSS");
    uint32_t r_idle = resident(sd);
    CHECK_EQ(uiw_rpc_svc_xprt_stats(t.svc, &st), 0);
    uint64_t b_idle = st.inline_buffer_resident;
    fprintf(stderr,
            "receive buffers: RSS %ld KiB before, %ld after bursts of %u calls of %u KiB, %ld "
            "idle; the server's inline buffers resident: %u busy, %u idle; in KiB of %" PRIu64
            " mapped: %" PRIu64 " busy, %" PRIu64 " idle\n",
            before, busy, CREDITS, ARG / 1024, idle, r_busy, r_idle, m_busy >> 10, b_busy >> 10,
            b_idle >> 10);
    /* the oldest posted receive (a message may be landing in it) and what the idle
     * connection holds besides (a reply buffer or so) */
    CHECK(r_idle <= 4);
    /* those few, and the pages two neighbouring buffers share (a buffer given back
     * gives the pages wholly its own) */
    CHECK(b_idle <= 8 * (uint64_t)(INLINE + 8192) + (m_busy / INLINE + 1) * 4096);
    CHECK_EQ(st.inline_buffer_bytes, m_busy); /* given back, not unmapped */
    /* the server's 80 receives and the client's calls' buffers: some 4 MiB written */
    if (JUDGE_RSS)
        CHECK(idle < busy - 2048);
    /* the receives are still posted, the credits as granted: another burst is served */
    burst(c, &arg, 2);
    CHECK(resident(sd) >= CREDITS);
    free(arg.val);
    clnt_destroy(c);
    tsrv_stop(&t);
}

/* Two trims of the client's device, as its leader makes them every few seconds: the first
 * notes what each connection received, the second finds it idle. The calling thread is
 * the client's only poller (no progress thread), so it may set when the next trim is. */
static void trim_twice(CLIENT *c, struct uiw__rr_dev *d)
{
    for (int i = 0; i < 2; i++) {
        d->bulk_trim_ns = 1; /* due */
        for (int k = 0; k < 4; k++)
            CHECK(uiw_rpc_clnt_poll(c, 1) >= 0);
    }
}

/* The client's inline buffers, mapped and resident (uiw_rpc_clnt_xprt_stats). */
static void ibuf_mem(CLIENT *c, size_t *mapped, size_t *resident)
{
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &st), 0);
    CHECK(st.inline_buffer_resident <= st.inline_buffer_bytes);
    *mapped = st.inline_buffer_bytes;
    *resident = st.inline_buffer_resident;
}

/* A client made with xprt.resident has every page of its inline buffers resident as soon
 * as it is connected (a connection's receives take their buffers in turn: without it
 * each of its first calls lands in pages never touched), and keeps them through a burst
 * and idle trims; one made without has them untouched until messages land and gives them
 * back when idle. */
TEST(rpc_resident_client_keeps_its_buffers)
{
    struct tsrv t;
    srv_start(&t);
    struct tbuf arg = {ARG, malloc(ARG)};
    CHECK(arg.val != NULL);
    for (u_int i = 0; i < ARG; i++)
        arg.val[i] = (char)(i * 5 + 3);
    for (int res = 1; res >= 0; res--) {
        CLIENT *c = clnt_of(&t, res);
        struct uiw__rr_dev *d = uiw__rpc_clnt_dev(c);
        CHECK(d != NULL);
        CHECK_EQ(clnt_call(c, TP_NULL, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_none, NULL, TMO),
                 RPC_SUCCESS);
        /* bytes mapped and resident, as the client's counters give them: once connected,
         * after bursts, after idle trims */
        size_t m[3], r[3];
        ibuf_mem(c, &m[0], &r[0]);
        /* the receives posted for the credits asked for, and the backward ones */
        CHECK(m[0] >= (size_t)CREDITS * INLINE);
        burst(c, &arg, 2);
        ibuf_mem(c, &m[1], &r[1]);
        trim_twice(c, d);
        ibuf_mem(c, &m[2], &r[2]);
        fprintf(stderr,
                "client %sresident: inline buffers resident / mapped (KiB): %zu / %zu once "
                "connected, %zu / %zu after bursts, %zu / %zu after two idle trims\n",
                res ? "" : "not ", r[0] / 1024, m[0] / 1024, r[1] / 1024, m[1] / 1024, r[2] / 1024,
                m[2] / 1024);
        if (res) {
            for (int i = 0; i < 3; i++)
                CHECK_EQ(r[i], m[i]);
        } else {
            /* a few buffers written (the calls' and replies' so far) */
            CHECK(r[0] < m[0] / 4);
            /* the idle connection's receives given back, as the pool's spares */
            CHECK(r[2] < r[1]);
        }
        clnt_destroy(c);
    }
    free(arg.val);
    tsrv_stop(&t);
}
