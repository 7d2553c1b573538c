#include "rpc/rpc_internal.h"
#include "rpc/svc_hooks.h"
#include "rpcrdma/xprt.h"
#include "rpc_util.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include <uiw/wire.h>

const struct timeval TMO = {10, 0};

static _Atomic unsigned count;
static _Atomic unsigned dropped;
static _Atomic unsigned running, most;

unsigned tsrv_count(void)
{
    return atomic_load(&count);
}

bool_t xdr_none(XDR *x, void *p)
{
    (void)x;
    (void)p;
    return TRUE;
}

bool_t xdr_tbuf(XDR *x, struct tbuf *b)
{
    return xdr_bytes(x, &b->val, &b->len, ~0u);
}

/* the same opaque, decoded with the transport's bytes borrowed */
bool_t xdr_tbuf_borrow(XDR *x, struct tbuf *b)
{
    return uiw_xdr_bytes(x, &b->val, &b->len, ~0u);
}

bool_t xdr_twhere(XDR *x, struct twhere *w)
{
    return xdr_tbuf(x, &w->b) && xdr_u_int(x, &w->tail);
}

/* TP_WHERE's decoding on the server: uiw_xdr_bytes, and whether it borrowed */
struct twhere_dec {
    struct twhere w;
    bool borrowed;
};

static bool_t xdr_twhere_dec(XDR *x, struct twhere_dec *d)
{
    if (!xdr_tbuf_borrow(x, &d->w.b))
        return FALSE;
    if (x->x_op == XDR_DECODE) {
        struct uiw__xs *s = uiw__xs_of(x);
        d->borrowed =
            d->w.b.val && s && s->mode == UIW__XS_CALL_DEC && uiw__rr_call_owns(s->k, d->w.b.val);
    }
    return xdr_u_int(x, &d->w.tail);
}

bool_t xdr_tinfo(XDR *x, struct tinfo *i)
{
    return xdr_u_int(x, &i->vers) && xdr_u_int(x, &i->peer_brs) && xdr_u_int(x, &i->peer_rbsiz) &&
           xdr_u_int(x, &i->credits);
}

bool_t xdr_tpair(XDR *x, struct tpair *p)
{
    return xdr_u_int(x, &p->a) && xdr_u_int(x, &p->b);
}

/* Sleep ms as one more call running; the most seen running at once. */
static unsigned conc_run(unsigned ms)
{
    unsigned now = atomic_fetch_add(&running, 1) + 1;
    unsigned m = atomic_load(&most);
    while (now > m && !atomic_compare_exchange_weak(&most, &m, now))
        ;
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    atomic_fetch_sub(&running, 1);
    return atomic_load(&most);
}

static void tdispatch(struct svc_req *rq, SVCXPRT *x)
{
    switch (rq->rq_proc) {
    case TP_NULL:
        svc_sendreply(x, (xdrproc_t)xdr_none, NULL);
        return;
    case TP_ECHO: {
        struct tbuf b = {0, NULL};
        if (!svc_getargs(x, (xdrproc_t)xdr_tbuf, (char *)&b)) {
            svcerr_decode(x);
            return;
        }
        svc_sendreply(x, (xdrproc_t)xdr_tbuf, (char *)&b);
        svc_freeargs(x, (xdrproc_t)xdr_tbuf, (char *)&b);
        return;
    }
    case TP_COUNT: {
        u_int n = atomic_fetch_add(&count, 1) + 1;
        svc_sendreply(x, (xdrproc_t)xdr_u_int, (char *)&n);
        return;
    }
    case TP_ADD: {
        struct tpair p;
        if (!svc_getargs(x, (xdrproc_t)xdr_tpair, (char *)&p)) {
            svcerr_decode(x);
            return;
        }
        u_int s = p.a + p.b;
        svc_sendreply(x, (xdrproc_t)xdr_u_int, (char *)&s);
        return;
    }
    case TP_SPIN: {
        struct tpair p;
        if (!svc_getargs(x, (xdrproc_t)xdr_tpair, (char *)&p)) {
            svcerr_decode(x);
            return;
        }
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        long us = p.a > 1000 ? 1000 : (long)p.a;
        do
            clock_gettime(CLOCK_MONOTONIC, &t);
        while ((t.tv_sec - t0.tv_sec) * 1000000 + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
        u_int s = p.a + p.b;
        svc_sendreply(x, (xdrproc_t)xdr_u_int, (char *)&s);
        return;
    }
    case TP_WHERE: {
        struct twhere_dec d = {{{0, NULL}, 0}, false};
        if (!svc_getargs(x, (xdrproc_t)xdr_twhere_dec, (char *)&d)) {
            svcerr_decode(x);
            return;
        }
        struct tpair r = {uiw_crc32c(0, d.w.b.val, d.w.b.len),
                          (d.borrowed ? 1u : 0u) | (d.w.tail == TWHERE_TAIL ? 2u : 0u)};
        svc_sendreply(x, (xdrproc_t)xdr_tpair, (char *)&r);
        svc_freeargs(x, (xdrproc_t)xdr_twhere_dec, (char *)&d);
        return;
    }
    case TP_GEN: {
        u_int n;
        if (!svc_getargs(x, (xdrproc_t)xdr_u_int, (char *)&n) || n > (64u << 20)) {
            svcerr_decode(x);
            return;
        }
        struct tbuf b = {n, uiw_svc_getbuf(x, n)};
        if (!b.val) {
            svcerr_systemerr(x);
            return;
        }
        for (u_int i = 0; i < n; i++)
            b.val[i] = (char)(i * 7 + n);
        svc_sendreply(x, (xdrproc_t)xdr_tbuf, (char *)&b);
        return;
    }
    case TP_SINK:
    case TP_CONC_SINK: {
        struct tbuf b = {0, NULL};
        if (!svc_getargs(x, (xdrproc_t)xdr_tbuf_borrow, (char *)&b)) {
            svcerr_decode(x);
            return;
        }
        u_int c = rq->rq_proc == TP_SINK ? uiw_crc32c(0, b.val, b.len) : conc_run(100);
        svc_sendreply(x, (xdrproc_t)xdr_u_int, (char *)&c);
        svc_freeargs(x, (xdrproc_t)xdr_tbuf_borrow, (char *)&b);
        return;
    }
    case TP_DROP: {
        u_int v;
        if (!svc_getargs(x, (xdrproc_t)xdr_u_int, (char *)&v)) {
            svcerr_decode(x);
            return;
        }
        u_int n = atomic_fetch_add(&count, 1) + 1;
        if (atomic_fetch_add(&dropped, 1) == 0)
            uiw_svc_disconnect(x);
        svc_sendreply(x, (xdrproc_t)xdr_u_int, (char *)&n);
        return;
    }
    case TP_SLEEP: {
        u_int ms;
        if (!svc_getargs(x, (xdrproc_t)xdr_u_int, (char *)&ms)) {
            svcerr_decode(x);
            return;
        }
        struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        svc_sendreply(x, (xdrproc_t)xdr_none, NULL);
        return;
    }
    case TP_CALLBACK: {
        u_int v, r = 0;
        if (!svc_getargs(x, (xdrproc_t)xdr_u_int, (char *)&v)) {
            svcerr_decode(x);
            return;
        }
        CLIENT *bc = uiw_svc_bc_create(x, TCBPROG, 1);
        if (!bc) {
            svcerr_systemerr(x);
            return;
        }
        enum clnt_stat st = clnt_call(bc, 1, (xdrproc_t)xdr_u_int, (char *)&v, (xdrproc_t)xdr_u_int,
                                      (char *)&r, TMO);
        clnt_destroy(bc);
        if (st != RPC_SUCCESS)
            r = 0xFFFFFFFFu;
        svc_sendreply(x, (xdrproc_t)xdr_u_int, (char *)&r);
        return;
    }
    case TP_INFO: {
        struct uiw_rpc_conn_info ci;
        struct tinfo ti = {0, 0, 0, 0};
        if (uiw_svc_info(x, &ci) == 0)
            ti = (struct tinfo){ci.vers, ci.peer_brs, ci.peer_rbsiz, ci.credits};
        svc_sendreply(x, (xdrproc_t)xdr_tinfo, (char *)&ti);
        return;
    }
    case TP_CONC: {
        u_int ms;
        if (!svc_getargs(x, (xdrproc_t)xdr_u_int, (char *)&ms)) {
            svcerr_decode(x);
            return;
        }
        u_int r = conc_run(ms);
        svc_sendreply(x, (xdrproc_t)xdr_u_int, (char *)&r);
        return;
    }
    default:
        svcerr_noproc(x);
    }
}

void tsrv_start(struct tsrv *t, const struct uiw_rpc_svc_attr *attr)
{
    tsrv_start_cached(t, attr, NULL);
}

void tsrv_start_cached(struct tsrv *t, const struct uiw_rpc_svc_attr *attr,
                       bool (*cached)(rpcproc_t proc))
{
    struct uiw_rpc_svc_attr a;
    if (attr)
        a = *attr;
    else
        memset(&a, 0, sizeof(a));
    atomic_store(&count, 0);
    atomic_store(&dropped, 0);
    atomic_store(&running, 0);
    atomic_store(&most, 0);
    t->svc = uiw_rpc_svc_create(&a);
    CHECK(t->svc != NULL);
    CHECK_EQ(uiw_rpc_svc_register(t->svc, TPROG, TVERS, tdispatch), 0);
    if (cached)
        CHECK_EQ(uiw__rpc_svc_cached(t->svc, TPROG, TVERS, cached), 0);
    t->port = uiw_rpc_svc_port(t->svc);
    CHECK(t->port != 0);
    CHECK_EQ(uiw_rpc_svc_start(t->svc), 0);
}

void tsrv_stop(struct tsrv *t)
{
    CHECK_EQ(uiw_rpc_svc_destroy(t->svc), 0);
    t->svc = NULL;
}

CLIENT *tclnt(uint16_t port, const struct uiw_rpc_clnt_attr *attr)
{
    CLIENT *c = uiw_rpc_clnt_create("127.0.0.1", port, TPROG, TVERS, attr);
    if (!c)
        uiw_test_fail(__FILE__, __LINE__, "uiw_rpc_clnt_create: %s", strerror(errno));
    return c;
}
