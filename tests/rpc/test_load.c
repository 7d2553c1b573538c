/* Many calls in flight: asynchronous calls beyond the credits, the server's grant
 * honoured, many threads on one client. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uiw/wire.h>

#include "rpc_util.h"
#include "rpc/clnt_hooks.h"
#include "rpcrdma/xprt.h"

struct acall {
    struct tpair p;
    u_int sum;
    enum clnt_stat st;
    int done;
};

static void adone(CLIENT *c, void *arg, enum clnt_stat st, const struct rpc_err *e)
{
    (void)c;
    (void)e;
    struct acall *a = arg;
    a->st = st;
    a->done++;
}

TEST(rpc_async_many)
{
    struct tsrv t;
    tsrv_start(&t, NULL);
    CLIENT *c = tclnt(t.port, NULL);
    enum { N = 1000 };
    struct acall *a = calloc(N, sizeof(*a));
    for (int i = 0; i < N; i++) {
        a[i].p = (struct tpair){(u_int)i, 1000000u};
        CHECK_EQ(uiw_rpc_call_async(c, TP_ADD, (xdrproc_t)xdr_tpair, &a[i].p, (xdrproc_t)xdr_u_int,
                                    &a[i].sum, TMO, NULL, adone, &a[i]),
                 0);
    }
    while (uiw_rpc_clnt_pending(c))
        CHECK(uiw_rpc_clnt_poll(c, 5000) >= 0);
    for (int i = 0; i < N; i++) {
        CHECK_EQ(a[i].done, 1);
        CHECK_EQ(a[i].st, RPC_SUCCESS);
        CHECK_EQ(a[i].sum, (u_int)i + 1000000u);
    }
    /* the grant when neither side sets credits: 128 (rpc.h, uiw_rpc_xprt_attr.credits) */
    struct uiw_rpc_conn_info ci;
    CHECK_EQ(uiw_rpc_clnt_info(c, &ci), 0);
    CHECK_EQ(ci.credits, 128);
    free(a);
    clnt_destroy(c);
    tsrv_stop(&t);
}

struct chain {
    CLIENT *c;
    struct tpair p;
    u_int sum;
    int left, bad, *nsync;
};

static void chain_done(CLIENT *c, void *arg, enum clnt_stat st, const struct rpc_err *e)
{
    (void)e;
    struct chain *k = arg;
    if (st != RPC_SUCCESS || k->sum != k->p.a + k->p.b) {
        k->bad++;
        return;
    }
    if (k->left % 8 == 0) {
        /* a synchronous call from a callback, behind the calls the callbacks before it
         * started (which its thread holds for one doorbell): it is answered */
        struct tpair p = {7, (u_int)k->left};
        u_int s = 0;
        if (clnt_call(c, TP_ADD, (xdrproc_t)xdr_tpair, (char *)&p, (xdrproc_t)xdr_u_int, (char *)&s,
                      TMO) != RPC_SUCCESS ||
            s != 7u + (u_int)k->left)
            k->bad++;
        (*k->nsync)++;
    }
    if (--k->left <= 0)
        return;
    k->p.b++;
    if (uiw_rpc_call_async(c, TP_ADD, (xdrproc_t)xdr_tpair, &k->p, (xdrproc_t)xdr_u_int, &k->sum,
                           TMO, NULL, chain_done, k) != 0)
        k->bad++;
}

/* Callbacks start the next calls (sent together when the batch of callbacks ends) and
 * make synchronous calls of their own: every call is answered. */
TEST(rpc_async_calls_started_by_callbacks)
{
    struct tsrv t;
    tsrv_start(&t, NULL);
    CLIENT *c = tclnt(t.port, NULL);
    enum { N = 32, ROUNDS = 40 };
    struct chain k[N];
    int nsync = 0;
    for (int i = 0; i < N; i++) {
        k[i] = (struct chain){.c = c, .p = {(u_int)i, 0}, .left = ROUNDS, .nsync = &nsync};
        CHECK_EQ(uiw_rpc_call_async(c, TP_ADD, (xdrproc_t)xdr_tpair, &k[i].p, (xdrproc_t)xdr_u_int,
                                    &k[i].sum, TMO, NULL, chain_done, &k[i]),
                 0);
    }
    while (uiw_rpc_clnt_pending(c))
        CHECK(uiw_rpc_clnt_poll(c, 5000) >= 0);
    for (int i = 0; i < N; i++) {
        CHECK_EQ(k[i].bad, 0);
        CHECK_EQ(k[i].left, 0);
    }
    CHECK_EQ(nsync, N * ROUNDS / 8);
    clnt_destroy(c);
    tsrv_stop(&t);
}

/* Calls started under uiw__rpc_clnt_plug outside any callback wait for the unplug or a
 * wait of the thread's own (on an idle connection: nothing else sends them), and every
 * one is answered. */
TEST(rpc_async_calls_held_by_plug)
{
    struct tsrv t;
    tsrv_start(&t, NULL);
    CLIENT *c = tclnt(t.port, NULL);
    enum { N = 8 };
    struct acall a[N];
    memset(a, 0, sizeof(a));
    unsigned before = tsrv_count();
    uiw__rpc_clnt_plug();
    for (int i = 0; i < N; i++)
        CHECK_EQ(uiw_rpc_call_async(c, TP_COUNT, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_u_int,
                                    &a[i].sum, TMO, NULL, adone, &a[i]),
                 0);
    nanosleep(&(struct timespec){0, 100000000}, NULL);
    CHECK_EQ(tsrv_count(), before); /* held: not one sent */
    /* a plugged thread that waits sends what it holds first: the batch with this one (the
     * server's threads run them in any order) */
    u_int n = 0;
    CHECK_EQ(
        clnt_call(c, TP_COUNT, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_u_int, (char *)&n, TMO),
        RPC_SUCCESS);
    CHECK(n > before && n <= before + N + 1);
    /* and what it starts after that goes at the unplug at the latest */
    struct acall last;
    memset(&last, 0, sizeof(last));
    CHECK_EQ(uiw_rpc_call_async(c, TP_COUNT, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_u_int,
                                &last.sum, TMO, NULL, adone, &last),
             0);
    uiw__rpc_clnt_unplug();
    while (uiw_rpc_clnt_pending(c))
        CHECK(uiw_rpc_clnt_poll(c, 5000) >= 0);
    CHECK_EQ(last.done, 1);
    CHECK_EQ(last.st, RPC_SUCCESS);
    CHECK(last.sum > before && last.sum <= before + N + 2);
    CHECK_EQ(tsrv_count(), before + N + 2); /* each ran once */
    for (int i = 0; i < N; i++) {
        CHECK_EQ(a[i].done, 1);
        CHECK_EQ(a[i].st, RPC_SUCCESS);
        CHECK(a[i].sum > before && a[i].sum <= before + N + 2);
    }
    clnt_destroy(c);
    tsrv_stop(&t);
}

/* The server grants 4 credits: never more than 4 of its calls run at once. */
TEST(rpc_credit_limit)
{
    struct uiw_rpc_svc_attr sa = {0};
    sa.xprt.credits = 4;
    sa.nthreads = 8;
    struct tsrv t;
    tsrv_start(&t, &sa);
    CLIENT *c = tclnt(t.port, NULL);
    enum { N = 32 };
    struct acall a[N];
    u_int ms = 30;
    memset(a, 0, sizeof(a));
    for (int i = 0; i < N; i++)
        CHECK_EQ(uiw_rpc_call_async(c, TP_CONC, (xdrproc_t)xdr_u_int, &ms, (xdrproc_t)xdr_u_int,
                                    &a[i].sum, TMO, NULL, adone, &a[i]),
                 0);
    while (uiw_rpc_clnt_pending(c))
        CHECK(uiw_rpc_clnt_poll(c, 5000) >= 0);
    u_int most = 0;
    for (int i = 0; i < N; i++) {
        CHECK_EQ(a[i].st, RPC_SUCCESS);
        if (a[i].sum > most)
            most = a[i].sum;
    }
    CHECK(most >= 2);
    CHECK(most <= 4);
    struct uiw_rpc_conn_info ci;
    CHECK_EQ(uiw_rpc_clnt_info(c, &ci), 0);
    CHECK_EQ(ci.credits, 4);
    clnt_destroy(c);
    tsrv_stop(&t);
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A slow call holds up only its own thread: with two workers, a call that comes while one
 * of them runs a call for seconds is polled for and run by the other meanwhile (the
 * worker that found the slow call left the lead to run it, and the other takes it). */
TEST(rpc_slow_call_holds_up_only_its_thread)
{
    struct uiw_rpc_svc_attr sa = {0};
    sa.nthreads = 2;
    struct tsrv t;
    tsrv_start(&t, &sa);
    CLIENT *c = tclnt(t.port, NULL);
    struct acall slow;
    memset(&slow, 0, sizeof(slow));
    u_int ms = 3000, quick = 1, most = 0;
    CHECK_EQ(uiw_rpc_call_async(c, TP_CONC, (xdrproc_t)xdr_u_int, &ms, (xdrproc_t)xdr_u_int,
                                &slow.sum, TMO, NULL, adone, &slow),
             0);
    struct timespec pause = {0, 200000000L}; /* the slow call reaches the server and runs */
    nanosleep(&pause, NULL);
    uint64_t t0 = mono_ms();
    for (int i = 0; i < 10; i++) {
        CHECK_EQ(clnt_call(c, TP_CONC, (xdrproc_t)xdr_u_int, (char *)&quick, (xdrproc_t)xdr_u_int,
                           (char *)&most, TMO),
                 RPC_SUCCESS);
        CHECK_EQ(most, 2); /* it ran beside the slow call */
    }
    CHECK(mono_ms() - t0 < 1500);
    CHECK_EQ(slow.done, 0);
    while (uiw_rpc_clnt_pending(c))
        CHECK(uiw_rpc_clnt_poll(c, 5000) >= 0);
    CHECK_EQ(slow.done, 1);
    CHECK_EQ(slow.st, RPC_SUCCESS);
    clnt_destroy(c);
    tsrv_stop(&t);
}

/* The quickest of four connections, each made and then called once (NULL). */
static uint64_t first_call_ms(uint16_t port)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 4; i++) {
        uint64_t t0 = mono_ms();
        CLIENT *c = tclnt(port, NULL);
        CHECK_EQ(clnt_call(c, TP_NULL, (xdrproc_t)xdr_none, NULL, (xdrproc_t)xdr_none, NULL, TMO),
                 RPC_SUCCESS);
        uint64_t took = mono_ms() - t0;
        if (took < best)
            best = took;
        clnt_destroy(c);
    }
    return best;
}

/* The listener's thread is held up for 10 ms between accepting a connection and listing it
 * for polling, while the client's first call has already come: the server's poller, woken
 * by that call before the connection was listed, is woken again when it is listed, and the
 * call is answered then, not at the end of the poller's next sleep (50 ms after it began).
 * Against the same calls without the hold-up, in the same run (sanitizers slow both). */
TEST(rpc_first_call_answered_when_the_listener_lists_it)
{
    struct tsrv t;
    tsrv_start(&t, NULL);
    uint64_t quick = first_call_ms(t.port);
    uiw__rr_accept_pause_ns = 10000000u; /* 10 ms */
    uint64_t held = first_call_ms(t.port);
    uiw__rr_accept_pause_ns = 0;
    tsrv_stop(&t);
    CHECK(held >= 10);
    CHECK(held < quick + 30);
}

struct worker {
    CLIENT *c;
    int id;
    int ok;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    char *buf = malloc(65536), *back = calloc(1, 65536);
    for (int i = 0; i < 100; i++) {
        struct tpair p = {(u_int)w->id, (u_int)i};
        u_int s = 0;
        if (clnt_call(w->c, TP_ADD, (xdrproc_t)xdr_tpair, (char *)&p, (xdrproc_t)xdr_u_int,
                      (char *)&s, TMO) != RPC_SUCCESS ||
            s != p.a + p.b)
            goto out;
        u_int n = (u_int)(1000 + i * 600 + w->id);
        memset(buf, w->id + i, n);
        struct tbuf a = {n, buf}, r = {n, back};
        struct uiw_rpc_call_opts o = {0};
        o.nresult_bufs = 1;
        o.result_bufs[0] = (struct uiw_rpc_ddp_buf){back, 65536};
        if (uiw_rpc_call(w->c, TP_ECHO, (xdrproc_t)xdr_tbuf, (char *)&a, (xdrproc_t)xdr_tbuf,
                         (char *)&r, TMO, &o) != RPC_SUCCESS ||
            r.len != n || memcmp(back, buf, n) != 0)
            goto out;
    }
    w->ok = 1;
out:
    free(buf);
    free(back);
    return NULL;
}

TEST(rpc_threads)
{
    struct tsrv t;
    tsrv_start(&t, NULL);
    CLIENT *c = tclnt(t.port, NULL);
    enum { T = 8 };
    pthread_t th[T];
    struct worker w[T];
    for (int i = 0; i < T; i++) {
        w[i] = (struct worker){c, i, 0};
        CHECK_EQ(pthread_create(&th[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        CHECK(w[i].ok);
    }
    clnt_destroy(c);
    tsrv_stop(&t);
}

struct window {
    CLIENT *c;
    struct tpair p;
    u_int sum;
    int bad;
    _Atomic long *left;
};

static void window_done(CLIENT *c, void *arg, enum clnt_stat st, const struct rpc_err *e)
{
    (void)e;
    struct window *w = arg;
    if (st != RPC_SUCCESS || w->sum != w->p.a + w->p.b) {
        w->bad++;
        return;
    }
    if (atomic_fetch_sub(w->left, 1) <= 0)
        return;
    w->p.b++;
    if (uiw_rpc_call_async(c, TP_SPIN, (xdrproc_t)xdr_tpair, &w->p, (xdrproc_t)xdr_u_int, &w->sum,
                           TMO, NULL, window_done, w) != 0)
        w->bad++;
}

/* A client that keeps every credit in use (each reply starts the next call at once) on
 * a server whose threads reply while its poller is still taking completions: each call
 * finds a receive posted. The receives a pass of the poller used were once posted again
 * only at the pass's end, after replies to its first calls had gone out, so calls sent
 * for those replies found none and the server's RNIC ended the connection (Terminate
 * "no buffer available"; the client reconnected and resent). */
TEST(rpc_full_window_never_finds_receives_missing)
{
    struct uiw_rpc_svc_attr sa;
    memset(&sa, 0, sizeof(sa));
    sa.xprt.credits = 64;
    sa.nthreads = 4;
    struct tsrv t;
    tsrv_start(&t, &sa);
    CLIENT *c = tclnt(t.port, NULL);
    enum { N = 64 };
    _Atomic long left = 100000;
    struct window w[N];
    for (int i = 0; i < N; i++) {
        w[i] = (struct window){.c = c, .p = {10, (u_int)i << 20}, .left = &left};
        CHECK_EQ(uiw_rpc_call_async(c, TP_SPIN, (xdrproc_t)xdr_tpair, &w[i].p, (xdrproc_t)xdr_u_int,
                                    &w[i].sum, TMO, NULL, window_done, &w[i]),
                 0);
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (uiw_rpc_clnt_pending(c)) {
        CHECK(uiw_rpc_clnt_poll(c, 5000) >= 0);
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec >= 2)
            atomic_store(&left, 0); /* enough on a slow machine: let the window drain */
    }
    for (int i = 0; i < N; i++)
        CHECK_EQ(w[i].bad, 0);
    struct uiw_rpc_xprt_stats cs, ss;
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &cs), 0);
    CHECK_EQ(uiw_rpc_svc_xprt_stats(t.svc, &ss), 0);
    CHECK_EQ(cs.credits_max_inflight, 64);
    CHECK_EQ(cs.connections, 1);
    CHECK_EQ(cs.lost, 0);
    CHECK_EQ(cs.retransmits, 0);
    CHECK_EQ(ss.rnic.terminates_sent, 0);
    clnt_destroy(c);
    tsrv_stop(&t);
}
