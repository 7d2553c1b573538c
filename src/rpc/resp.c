/*
 * The responder side of the RPC layer: each call gets an SVCXPRT of its own whose ops are
 * ours, so that rpcgen's dispatch routines and libtirpc's svc_getargs(), svc_sendreply(),
 * svc_freeargs() and svcerr_*() run on it unchanged. RPC headers and credentials are
 * checked here (RPC_MISMATCH, AUTH_ERROR, PROG_UNAVAIL, PROG_MISMATCH, GARBAGE_ARGS for a
 * header that does not decode); procedures are the program's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/rpc_internal.h"

static const struct xp_ops svc_ops;
static const struct xp_ops2 svc_ops2;

int uiw__rpc_resp_init(struct uiw__rpc_resp *r, struct uiw__rr_dev *d, uint32_t threshold)
{
    memset(r, 0, sizeof(*r));
    pthread_mutex_init(&r->lock, NULL);
    r->dev = d;
    r->threshold = threshold;
    return 0;
}

void uiw__rpc_resp_fini(struct uiw__rpc_resp *r)
{
    pthread_mutex_destroy(&r->lock);
}

int uiw__rpc_resp_register(struct uiw__rpc_resp *r, rpcprog_t prog, rpcvers_t vers,
                           void (*dispatch)(struct svc_req *, SVCXPRT *))
{
    if (!dispatch)
        return -EINVAL;
    pthread_mutex_lock(&r->lock);
    int e = 0;
    for (unsigned i = 0; i < r->nprogs; i++)
        if (r->progs[i].prog == prog && r->progs[i].vers == vers)
            e = -EEXIST;
    if (!e && r->nprogs == UIW__RPC_MAX_PROGS)
        e = -ENOMEM;
    if (!e)
        r->progs[r->nprogs++] = (struct uiw__rpc_prog){prog, vers, dispatch, NULL};
    pthread_mutex_unlock(&r->lock);
    return e;
}

int uiw__rpc_resp_cached(struct uiw__rpc_resp *r, rpcprog_t prog, rpcvers_t vers,
                         bool (*cached)(rpcproc_t proc))
{
    pthread_mutex_lock(&r->lock);
    int e = -ENOENT;
    for (unsigned i = 0; i < r->nprogs; i++)
        if (r->progs[i].prog == prog && r->progs[i].vers == vers) {
            r->progs[i].cached = cached;
            e = 0;
        }
    pthread_mutex_unlock(&r->lock);
    return e;
}

int uiw__rpc_resp_unregister(struct uiw__rpc_resp *r, rpcprog_t prog, rpcvers_t vers)
{
    pthread_mutex_lock(&r->lock);
    int e = -ENOENT;
    for (unsigned i = 0; i < r->nprogs; i++)
        if (r->progs[i].prog == prog && r->progs[i].vers == vers) {
            r->progs[i] = r->progs[--r->nprogs];
            e = 0;
            break;
        }
    pthread_mutex_unlock(&r->lock);
    return e;
}

void uiw__rpc_resp_ready(struct uiw__rpc_resp *r, struct uiw__rr_call *k)
{
    pthread_mutex_lock(&r->lock);
    k->next = NULL;
    if (r->tail)
        r->tail->next = k;
    else
        r->head = k;
    r->tail = k;
    atomic_fetch_add(&r->nready, 1);
    pthread_mutex_unlock(&r->lock);
}

/* ---------------------------------------------------------------- replies */

/* Encode and send a reply: the call's own (dispatched), or an error of ours before its
 * dispatch. */
static bool send_msg(struct uiw__rpc_scall *s, const struct rpc_msg *msg, bool dispatched)
{
    struct uiw__rr_call *k = &s->k;
    if (s->replied || s->lost)
        return FALSE; /* one reply; a lost one stays as encoded (the cache keeps it) */
    if (uiw__rr_reply_begin(k) != 0)
        return FALSE;
    struct uiw__xs xs;
    uiw__xs_reply_enc(&xs, k, k->no_ddp ? 0 : s->resp->threshold);
    if (!uiw__rpc_enc_reply(&xs.x, k->xid, msg)) {
        uiw__rr_reply_begin(k); /* nothing of it is sent; an error reply may follow */
        return FALSE;
    }
    s->encoded = true;
    /* to be answered REPLY_RESOURCE (Version Two: the call comes back with room for it):
     * kept for the retry, as a call the cache keeps (run_dispatch ends the entry) */
    if (dispatched && s->drc_slot < 0 && s->resp->drc && k->vers == 2 && !k->no_ddp &&
        !uiw__rr_reply_fits(k))
        uiw__drc_claim(s->resp->drc, s);
    /* never waits: a reply without send queue room yet waits on its connection, and
     * results in the caller's memory were copied (uiw__rr_reply_ddp) */
    int r = uiw__rr_reply_send(k);
    if (r < 0) {
        s->lost = true;
        return FALSE;
    }
    s->replied = true;
    /* held for one doorbell only while more calls wait to run (a handler that goes on
     * working after its reply does not hold it meanwhile) */
    if (!atomic_load(&s->resp->nready))
        uiw__rr_plug_flush();
    return TRUE;
}

static void reject(struct uiw__rpc_scall *s, enum accept_stat st, uint32_t lo, uint32_t hi)
{
    struct rpc_msg m;
    memset(&m, 0, sizeof(m));
    m.rm_direction = REPLY;
    m.rm_reply.rp_stat = MSG_ACCEPTED;
    m.acpted_rply.ar_verf = _null_auth;
    m.acpted_rply.ar_stat = st;
    m.acpted_rply.ar_vers.low = lo;
    m.acpted_rply.ar_vers.high = hi;
    send_msg(s, &m, false);
}

static void deny(struct uiw__rpc_scall *s, enum reject_stat st, enum auth_stat why)
{
    struct rpc_msg m;
    memset(&m, 0, sizeof(m));
    m.rm_direction = REPLY;
    m.rm_reply.rp_stat = MSG_DENIED;
    m.rjcted_rply.rj_stat = st;
    if (st == RPC_MISMATCH) {
        m.rjcted_rply.rj_vers.low = UIW__RPC_VERS;
        m.rjcted_rply.rj_vers.high = UIW__RPC_VERS;
    } else {
        m.rjcted_rply.rj_why = why;
    }
    send_msg(s, &m, false);
}

/* ---------------------------------------------------------------- SVCXPRT ops */

static bool_t x_recv(SVCXPRT *x, struct rpc_msg *m)
{
    (void)x;
    (void)m;
    return FALSE;
}

static enum xprt_stat x_stat(SVCXPRT *x)
{
    (void)x;
    return XPRT_IDLE;
}

static bool_t x_getargs(SVCXPRT *x, xdrproc_t xargs, void *argsp)
{
    struct uiw__rpc_scall *s = x->xp_p1;
    struct uiw__xs xs;
    uiw__xs_call_dec(&xs, &s->k, s->args_off);
    return xargs(&xs.x, argsp);
}

static bool_t x_reply(SVCXPRT *x, struct rpc_msg *m)
{
    return send_msg(x->xp_p1, m, true);
}

static bool_t x_freeargs(SVCXPRT *x, xdrproc_t xargs, void *argsp)
{
    struct uiw__rpc_scall *s = x->xp_p1;
    uiw__xs_freeing = &s->k;
    xdr_free(xargs, argsp);
    uiw__xs_freeing = NULL;
    return TRUE;
}

static void x_destroy(SVCXPRT *x)
{
    (void)x;
}

static bool_t x_control(SVCXPRT *x, const u_int rq, void *in)
{
    (void)x;
    (void)rq;
    (void)in;
    return FALSE;
}

static const struct xp_ops svc_ops = {
    .xp_recv = x_recv,
    .xp_stat = x_stat,
    .xp_getargs = x_getargs,
    .xp_reply = x_reply,
    .xp_freeargs = x_freeargs,
    .xp_destroy = x_destroy,
};
static const struct xp_ops2 svc_ops2 = {.xp_control = x_control};

bool uiw_svc_is_rdma(const SVCXPRT *xprt)
{
    return xprt && xprt->xp_ops == &svc_ops;
}

static void xprt_init(struct uiw__rpc_scall *s)
{
    SVCXPRT *x = &s->xprt;
    memset(x, 0, sizeof(*x));
    x->xp_fd = -1;
    x->xp_ops = (struct xp_ops *)(uintptr_t)&svc_ops;
    x->xp_ops2 = (struct xp_ops2 *)(uintptr_t)&svc_ops2;
    x->xp_p1 = s;
    x->xp_verf = _null_auth;
    x->xp_netid = (char *)(uintptr_t) "rdma";
    const struct sockaddr_storage *pa = &s->k.conn->peer;
    s->raddr = *pa;
    size_t alen =
        pa->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    memcpy(&x->xp_raddr, pa, alen < sizeof(x->xp_raddr) ? alen : sizeof(x->xp_raddr));
    x->xp_addrlen = (int)alen;
    x->xp_rtaddr.buf = &s->raddr;
    x->xp_rtaddr.len = (unsigned)alen;
    x->xp_rtaddr.maxlen = sizeof(s->raddr);
    x->xp_port = ntohs(pa->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)pa)->sin6_port
                                                 : ((const struct sockaddr_in *)pa)->sin_port);
}

/* ---------------------------------------------------------------- running a call */

static void run_dispatch(struct uiw__rpc_resp *r, struct uiw__rpc_scall *s,
                         void (*dispatch)(struct svc_req *, SVCXPRT *));

/* Serve s with its cached reply, or run it. */
static void serve_waiter(struct uiw__rpc_resp *r, struct uiw__rpc_scall *w, bool cached,
                         void (*dispatch)(struct svc_req *, SVCXPRT *))
{
    if (cached) {
        UIW__RR_COUNT(w->k.conn->n_drc_hits, 1);
        if (uiw__rr_reply_send(&w->k) >= 0)
            w->replied = true;
        uiw__rr_call_finish(&w->k);
        return;
    }
    run_dispatch(r, w, dispatch);
}

static void run_dispatch(struct uiw__rpc_resp *r, struct uiw__rpc_scall *s,
                         void (*dispatch)(struct svc_req *, SVCXPRT *))
{
    for (;;) {
        dispatch(&s->req, &s->xprt);
        struct uiw__rpc_scall *w = NULL;
        bool cached = false;
        if (r->drc && s->drc_slot >= 0) {
            struct uiw__rr_call *k = &s->k;
            bool ok = s->encoded && k->npush == 0 && !k->wshort;
            w = uiw__drc_done(r->drc, s, ok, &cached);
        }
        uiw__rr_call_finish(&s->k);
        if (!w)
            return;
        if (cached) {
            serve_waiter(r, w, true, dispatch);
            return;
        }
        s = w; /* run the retransmission itself (it now owns the entry) */
    }
}

static void run(struct uiw__rpc_resp *r, struct uiw__rr_call *k)
{
    struct uiw__rpc_scall *s = (struct uiw__rpc_scall *)k;
    s->resp = r;
    s->replied = false;
    s->encoded = false;
    s->lost = false;
    s->drc_slot = -1;
    s->drc_waiter = NULL;
    s->nborrow = 0;
    xprt_init(s);
    struct uiw__xs xs;
    uiw__xs_call_dec(&xs, k, 0);
    if (uiw__rpc_dec_call(&xs.x, &s->hdr) != 0) {
        /* not an RPC call we can read: GARBAGE_ARGS, so the client's credit comes back */
        reject(s, GARBAGE_ARGS, 0, 0);
        goto done;
    }
    s->args_off = uiw__xs_pos(&xs);
    if (s->hdr.rpcvers != UIW__RPC_VERS) {
        deny(s, RPC_MISMATCH, 0);
        goto done;
    }
    struct svc_req *rq = &s->req;
    memset(rq, 0, sizeof(*rq));
    rq->rq_prog = s->hdr.prog;
    rq->rq_vers = s->hdr.vers;
    rq->rq_proc = s->hdr.proc;
    rq->rq_cred = s->hdr.cred;
    rq->rq_xprt = &s->xprt;
    switch (s->hdr.cred.oa_flavor) {
    case AUTH_NONE:
        break;
    case AUTH_SYS:
        if (uiw__rpc_authsys(&s->hdr.cred, &s->sys) != 0) {
            deny(s, AUTH_ERROR, AUTH_BADCRED);
            goto done;
        }
        rq->rq_clntcred = &s->sys.p;
        break;
    default:
        deny(s, AUTH_ERROR, AUTH_BADCRED);
        goto done;
    }
    void (*dispatch)(struct svc_req *, SVCXPRT *) = NULL;
    bool (*cached)(rpcproc_t) = NULL;
    uint32_t lo = UINT32_MAX, hi = 0;
    pthread_mutex_lock(&r->lock);
    for (unsigned i = 0; i < r->nprogs; i++) {
        if (r->progs[i].prog != s->hdr.prog)
            continue;
        if (r->progs[i].vers == s->hdr.vers) {
            dispatch = r->progs[i].dispatch;
            cached = r->progs[i].cached;
        }
        if (r->progs[i].vers < lo)
            lo = (uint32_t)r->progs[i].vers;
        if (r->progs[i].vers > hi)
            hi = (uint32_t)r->progs[i].vers;
    }
    pthread_mutex_unlock(&r->lock);
    if (!dispatch) {
        if (hi == 0 && lo == UINT32_MAX)
            reject(s, PROG_UNAVAIL, 0, 0);
        else
            reject(s, PROG_MISMATCH, lo, hi);
        goto done;
    }
    bool keep = !cached || cached(s->hdr.proc);
    if (r->drc && s->hdr.proc != 0 && (keep || uiw__drc_uncached(r->drc))) {
        switch (uiw__drc_lookup(r->drc, s, keep)) {
        case UIW__DRC_HIT:
            serve_waiter(r, s, true, dispatch);
            return;
        case UIW__DRC_WAIT:
            return; /* the original serves it */
        case UIW__DRC_MISS:
            break;
        }
    }
    run_dispatch(r, s, dispatch);
    return;
done:
    uiw__rr_call_finish(k);
}

bool uiw__rpc_resp_run_one(struct uiw__rpc_resp *r)
{
    pthread_mutex_lock(&r->lock);
    struct uiw__rr_call *k = r->head;
    if (k) {
        r->head = k->next;
        if (!r->head)
            r->tail = NULL;
        atomic_fetch_sub(&r->nready, 1);
        atomic_fetch_add_explicit(&r->ntaken, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&r->lock);
    if (!k)
        return false;
    k->next = NULL;
    run(r, k);
    return true;
}

/* ---------------------------------------------------------------- public helpers */

static struct uiw__rpc_scall *scall_of(SVCXPRT *xprt)
{
    return uiw_svc_is_rdma(xprt) ? xprt->xp_p1 : NULL;
}

void *uiw_svc_getbuf(SVCXPRT *xprt, size_t len)
{
    struct uiw__rpc_scall *s = scall_of(xprt);
    if (s)
        return uiw__rr_call_getbuf(&s->k, len);
    static _Thread_local void *buf;
    static _Thread_local size_t cap;
    if (len > cap) {
        void *p = realloc(buf, len);
        if (!p)
            return NULL;
        buf = p;
        cap = len;
    }
    return buf ? buf : (buf = malloc(1));
}

int uiw_svc_info(SVCXPRT *xprt, struct uiw_rpc_conn_info *info)
{
    struct uiw__rpc_scall *s = scall_of(xprt);
    if (!s || !info)
        return -EINVAL;
    return uiw__rr_conn_info(s->k.conn, info);
}

int uiw_svc_xprt_stats(SVCXPRT *xprt, struct uiw_rpc_xprt_stats *st)
{
    struct uiw__rpc_scall *s = scall_of(xprt);
    if (!s || !st)
        return -EINVAL;
    memset(st, 0, sizeof(*st));
    uiw__rr_conn_stats_add(s->k.conn, st);
    if (uiw__nic_stats(s->k.conn->dev->nic, &st->rnic) != 0)
        memset(&st->rnic, 0, sizeof(st->rnic));
    uiw__rr_dev_mem(s->k.conn->dev, st);
    return 0;
}

int uiw_svc_request_props(SVCXPRT *xprt, struct uiw_rpc_prop_req *req, unsigned n, int timeout_ms)
{
    struct uiw__rpc_scall *s = scall_of(xprt);
    if (!s)
        return -EINVAL;
    return uiw__rr_request_props(s->k.conn, req, n, timeout_ms);
}

int uiw_svc_update_props(SVCXPRT *xprt, const struct uiw_rpc_prop_req *now, unsigned n)
{
    struct uiw__rpc_scall *s = scall_of(xprt);
    if (!s)
        return -EINVAL;
    return uiw__rr_update_props(s->k.conn, now, n);
}

int uiw_svc_disconnect(SVCXPRT *xprt)
{
    struct uiw__rpc_scall *s = scall_of(xprt);
    if (!s)
        return -EINVAL;
    uiw__rr_conn_close(s->k.conn, true);
    return 0;
}
