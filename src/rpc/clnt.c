/*
 * The client: a libtirpc CLIENT whose ops are ours (clnt_call and rpcgen's stubs run on
 * it), one transport device of its own, reconnection with retransmission, a backward-call
 * service, and an optional thread that drives it.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/clnt_hooks.h"
#include "rpc/rpc_internal.h"

/* libtirpc makes its AUTH_NONE singleton without holding its lock over the check, so
 * clients created by several threads at once can each make one (all but one leak): the
 * first is made once, before any client takes it. */
static pthread_once_t authnone_once = PTHREAD_ONCE_INIT;

static void authnone_first(void)
{
    (void)authnone_create();
}

static AUTH *authnone(void)
{
    pthread_once(&authnone_once, authnone_first);
    return authnone_create();
}

struct uiw__clnt {
    CLIENT cl; /* first */
    struct uiw__rpc_caller caller;
    struct uiw__rr_dev *dev;
    bool own_dev;
    struct uiw_rpc_xprt_attr xprt;
    struct uiw_rpc_clnt_attr attr;
    struct sockaddr_storage addr;
    struct uiw__rpc_resp bc;
    struct uiw__rr_upper up;
    pthread_t thread;
    bool has_thread;
    _Atomic bool stop;
    struct uiw__rr_conn *bc_conn; /* a server's backward client: its connection */
};

static const struct clnt_ops clnt_ops;

static struct uiw__clnt *of(CLIENT *cl)
{
    return cl && cl->cl_ops == &clnt_ops ? (struct uiw__clnt *)cl : NULL;
}

/* The last call's error, per thread. */
static _Thread_local struct {
    CLIENT *cl;
    struct rpc_err err;
} last;

/* ---------------------------------------------------------------- transport callbacks */

static void up_call_ready(struct uiw__rr_conn *c, struct uiw__rr_call *k)
{
    struct uiw__clnt *u = c->owner;
    uiw__rpc_resp_ready(&u->bc, k);
}

static void up_req_done(struct uiw__rr_conn *c, struct uiw__rr_req *q)
{
    uiw__rpc_caller_req_done(c, q);
}

static void up_drained(struct uiw__rr_conn *c)
{
    struct uiw__clnt *u = c->owner;
    uiw__rpc_caller_drained(&u->caller, c);
}

static int clnt_connect(struct uiw__rpc_caller *caller, uint64_t deadline)
{
    struct uiw__clnt *u = caller->owner;
    struct uiw_rpc_xprt_attr x = u->xprt;
    if (deadline) {
        uint64_t now = uiw__rr_now_ns();
        uint64_t left_ms = deadline > now ? (deadline - now) / 1000000u + 1 : 1;
        if (left_ms < x.connect_timeout_ms)
            x.connect_timeout_ms = (uint32_t)left_ms;
    }
    struct uiw__rr_conn_attr ca = {
        .xprt = &x, .up = &u->up, .owner = u, .remember_vers = !u->attr.no_vers_memory};
    int r;
    struct uiw__rr_conn *c = uiw__rr_connect(u->dev, (struct sockaddr *)&u->addr, &ca, &r);
    if (!c)
        return r;
    pthread_mutex_lock(&caller->lock);
    struct uiw__rr_conn *old = caller->conn;
    caller->conn = c; /* the creation reference */
    pthread_mutex_unlock(&caller->lock);
    if (old)
        uiw__rr_conn_put(old);
    return 0;
}

/* ---------------------------------------------------------------- ops */

static enum clnt_stat op_call(CLIENT *cl, rpcproc_t proc, xdrproc_t xargs, void *argsp,
                              xdrproc_t xres, void *resp, struct timeval tmo)
{
    struct uiw__clnt *u = of(cl);
    last.cl = cl;
    return uiw__rpc_call(&u->caller, proc, xargs, argsp, xres, resp, tmo, NULL, NULL, NULL,
                         &last.err, NULL);
}

static void op_abort(CLIENT *cl)
{
    (void)cl;
}

static void op_geterr(CLIENT *cl, struct rpc_err *e)
{
    if (last.cl == cl)
        *e = last.err;
    else
        memset(e, 0, sizeof(*e));
}

static bool_t op_freeres(CLIENT *cl, xdrproc_t xres, void *resp)
{
    (void)cl;
    xdr_free(xres, resp);
    return TRUE;
}

static void clnt_free(struct uiw__clnt *u);

static void op_destroy(CLIENT *cl)
{
    struct uiw__clnt *u = of(cl);
    if (u)
        clnt_free(u);
}

static bool_t op_control(CLIENT *cl, u_int rq, void *info)
{
    struct uiw__clnt *u = of(cl);
    struct uiw__rpc_caller *c = &u->caller;
    switch (rq) {
    case CLSET_TIMEOUT:
        if (!info)
            return FALSE;
        c->timeout = *(struct timeval *)info;
        return TRUE;
    case CLGET_TIMEOUT:
        if (!info)
            return FALSE;
        *(struct timeval *)info = c->timeout;
        return TRUE;
    case CLGET_XID:
        *(uint32_t *)info = c->xid;
        return TRUE;
    case CLSET_XID:
        pthread_mutex_lock(&c->lock);
        c->xid = *(uint32_t *)info - 1;
        pthread_mutex_unlock(&c->lock);
        return TRUE;
    case CLGET_VERS:
        *(uint32_t *)info = (uint32_t)c->vers;
        return TRUE;
    case CLSET_VERS:
        c->vers = *(uint32_t *)info;
        return TRUE;
    case CLGET_PROG:
        *(uint32_t *)info = (uint32_t)c->prog;
        return TRUE;
    case CLSET_PROG:
        c->prog = *(uint32_t *)info;
        return TRUE;
    case CLGET_SERVER_ADDR:
        memcpy(info, &u->addr,
               u->addr.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                             : sizeof(struct sockaddr_in));
        return TRUE;
    default:
        return FALSE;
    }
}

static const struct clnt_ops clnt_ops = {
    .cl_call = op_call,
    .cl_abort = op_abort,
    .cl_geterr = op_geterr,
    .cl_freeres = op_freeres,
    .cl_destroy = op_destroy,
    .cl_control = op_control,
};

/* ---------------------------------------------------------------- life */

static void *clnt_thread(void *arg)
{
    struct uiw__clnt *u = arg;
    while (!atomic_load(&u->stop))
        uiw__rpc_caller_poll(&u->caller, 50);
    return NULL;
}

static bool drained_all(void *arg)
{
    struct uiw__clnt *u = arg;
    pthread_mutex_lock(&u->caller.lock);
    bool none = u->caller.conn == NULL;
    pthread_mutex_unlock(&u->caller.lock);
    return none && u->dev->nconns == 0;
}

static void clnt_free(struct uiw__clnt *u)
{
    struct uiw__rpc_caller *c = &u->caller;
    c->closing = true;
    if (u->has_thread) {
        atomic_store(&u->stop, true);
        pthread_join(u->thread, NULL);
    }
    if (u->bc_conn) {
        /* a server's backward client: its calls end with the connection or now */
        uint64_t until = uiw__rr_now_ns() + 10000000000u;
        while (atomic_load(&c->busy) && uiw__rr_now_ns() < until)
            if (uiw__rpc_caller_poll(c, 50) < 0)
                break;
        pthread_mutex_lock(&c->lock);
        struct uiw__rr_conn *k2 = c->conn;
        c->conn = NULL;
        pthread_mutex_unlock(&c->lock);
        if (k2)
            uiw__rr_conn_put(k2);
        uiw__rr_conn_put(u->bc_conn);
    } else {
        /* end the connection, let it drain, fail what is left */
        pthread_mutex_lock(&c->lock);
        struct uiw__rr_conn *k = c->conn;
        if (k)
            uiw__rr_conn_get(k);
        pthread_mutex_unlock(&c->lock);
        uint64_t now = uiw__rr_now_ns();
        if (k) {
            /* orderly: what is posted goes out, the server sees the LLP close (no
             * Terminate); abortive only when the server holds it up past the grace time */
            uiw__rr_conn_close(k, false);
            if (uiw__rr_dev_wait(u->dev, drained_all, u,
                                 now + (uint64_t)UIW__RR_CLOSE_GRACE_MS * 1000000u) != 0)
                uiw__rr_conn_close(k, true);
            uiw__rr_conn_put(k);
        }
        uiw__rr_dev_wait(u->dev, drained_all, u, now + 10000000000u);
        uiw__rpc_caller_run(c);
    }
    if (u->cl.cl_auth)
        AUTH_DESTROY(u->cl.cl_auth);
    uiw__rpc_caller_fini(c);
    uiw__drc_free(u->bc.drc);
    uiw__rpc_resp_fini(&u->bc);
    if (u->own_dev)
        uiw__rr_dev_close(u->dev);
    free(u);
}

static int resolve(const char *host, uint16_t port, struct sockaddr_storage *out)
{
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_family = AF_UNSPEC;
    int r = getaddrinfo(host, NULL, &hints, &ai);
    if (r != 0 || !ai)
        return -EHOSTUNREACH;
    memset(out, 0, sizeof(*out));
    memcpy(out, ai->ai_addr, ai->ai_addrlen);
    if (out->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)out)->sin6_port = htons(port);
    else
        ((struct sockaddr_in *)out)->sin_port = htons(port);
    freeaddrinfo(ai);
    return 0;
}

CLIENT *uiw_rpc_clnt_create(const char *host, uint16_t port, rpcprog_t prog, rpcvers_t vers,
                            const struct uiw_rpc_clnt_attr *attr)
{
    if (!host) {
        errno = EINVAL;
        return NULL;
    }
    struct uiw__clnt *u = calloc(1, sizeof(*u));
    if (!u) {
        errno = ENOMEM;
        return NULL;
    }
    if (attr)
        u->attr = *attr;
    u->xprt = u->attr.xprt;
    int r = uiw__rr_xprt_defaults(&u->xprt);
    if (r == 0)
        r = resolve(host, port ? port : UIW_RPCRDMA_PORT, &u->addr);
    if (r) {
        free(u);
        errno = -r;
        return NULL;
    }
    struct uiw__rr_dev_attr da = {
        .inline_size =
            u->xprt.inline_recv > u->xprt.inline_send ? u->xprt.inline_recv : u->xprt.inline_send,
        .max_msg = u->xprt.max_msg,
        .max_ddp = u->xprt.max_ddp,
        .spin_us = u->xprt.spin_us,
        .pcap_dir = u->xprt.pcap_dir,
        .resident = u->xprt.resident,
    };
    u->dev = uiw__rr_dev_open(&da);
    if (!u->dev) {
        r = -errno;
        free(u);
        errno = -r;
        return NULL;
    }
    u->own_dev = true;
    u->up.call_size = sizeof(struct uiw__rpc_scall);
    u->up.call_ready = up_call_ready;
    u->up.req_done = up_req_done;
    u->up.drained = up_drained;
    uiw__rpc_resp_init(&u->bc, u->dev, u->xprt.ddp_threshold);
    struct uiw__rpc_caller *c = &u->caller;
    if (uiw__rpc_caller_init(c, u->dev, u->xprt.credits) != 0) {
        uiw__rr_dev_close(u->dev);
        free(u);
        errno = ENOMEM;
        return NULL;
    }
    c->owner = u;
    c->connect = clnt_connect;
    c->reconnect = !u->attr.no_reconnect;
    c->prog = prog;
    c->vers = vers;
    c->clnt = &u->cl;
    c->threshold = u->xprt.ddp_threshold;
    c->bc = &u->bc;
    u->cl.cl_ops = (struct clnt_ops *)(uintptr_t)&clnt_ops;
    u->cl.cl_private = u;
    u->cl.cl_netid = (char *)(uintptr_t) "rdma";
    r = clnt_connect(c, 0);
    if (r) {
        c->closing = true;
        uiw__rpc_caller_fini(c);
        uiw__rpc_resp_fini(&u->bc);
        uiw__rr_dev_close(u->dev);
        free(u);
        errno = -r;
        return NULL;
    }
    u->cl.cl_auth = authnone();
    if (u->attr.progress_thread) {
        if (pthread_create(&u->thread, NULL, clnt_thread, u) == 0)
            u->has_thread = true;
    }
    return &u->cl;
}

/* ---------------------------------------------------------------- API */

enum clnt_stat uiw_rpc_call(CLIENT *clnt, rpcproc_t proc, xdrproc_t xargs, void *argp,
                            xdrproc_t xres, void *resp, struct timeval timeout,
                            const struct uiw_rpc_call_opts *opts)
{
    struct uiw__clnt *u = of(clnt);
    if (!u)
        return RPC_FAILED;
    last.cl = clnt;
    return uiw__rpc_call(&u->caller, proc, xargs, argp, xres, resp, timeout, opts, NULL, NULL,
                         &last.err, NULL);
}

int uiw_rpc_call_async(CLIENT *clnt, rpcproc_t proc, xdrproc_t xargs, void *argp, xdrproc_t xres,
                       void *resp, struct timeval timeout, const struct uiw_rpc_call_opts *opts,
                       uiw_rpc_done_fn done, void *arg)
{
    struct uiw__clnt *u = of(clnt);
    if (!u || !done || !xargs)
        return -EINVAL;
    if (u->caller.closing)
        return -ENOTCONN;
    struct rpc_err e;
    int start = 0;
    uiw__rpc_call(&u->caller, proc, xargs, argp, xres, resp, timeout, opts, done, arg, &e, &start);
    return start;
}

int uiw_rpc_clnt_poll(CLIENT *clnt, int timeout_ms)
{
    struct uiw__clnt *u = of(clnt);
    if (!u)
        return -EINVAL;
    return uiw__rpc_caller_poll(&u->caller, timeout_ms);
}

unsigned uiw_rpc_clnt_pending(CLIENT *clnt)
{
    struct uiw__clnt *u = of(clnt);
    return u ? atomic_load(&u->caller.busy) : 0;
}

/* The client's connection, with a reference (a backward client: the one it lives on). */
static struct uiw__rr_conn *conn_ref(struct uiw__clnt *u)
{
    struct uiw__rpc_caller *c = &u->caller;
    pthread_mutex_lock(&c->lock);
    struct uiw__rr_conn *k = u->bc_conn ? u->bc_conn : c->conn;
    if (k)
        uiw__rr_conn_get(k);
    pthread_mutex_unlock(&c->lock);
    return k;
}

/* The connection of clnt with a reference in *k: 0, -EINVAL (not a client of ours) or
 * -ENOTCONN. */
static int conn_of(CLIENT *clnt, struct uiw__rr_conn **k)
{
    struct uiw__clnt *u = of(clnt);
    if (!u)
        return -EINVAL;
    *k = conn_ref(u);
    return *k ? 0 : -ENOTCONN;
}

int uiw__rpc_clnt_set_ddp_threshold(CLIENT *clnt, uint32_t threshold)
{
    struct uiw__clnt *u = of(clnt);
    if (!threshold)
        threshold = 1024;
    if (!u || threshold < 64)
        return -EINVAL;
    u->caller.threshold = threshold;
    return 0;
}

struct uiw__rr_dev *uiw__rpc_clnt_dev(CLIENT *clnt)
{
    struct uiw__clnt *u = of(clnt);
    return u ? u->dev : NULL;
}

int uiw_rpc_clnt_info(CLIENT *clnt, struct uiw_rpc_conn_info *info)
{
    struct uiw__rr_conn *k;
    int r = info ? conn_of(clnt, &k) : -EINVAL;
    if (r == 0) {
        r = uiw__rr_conn_info(k, info);
        uiw__rr_conn_put(k);
    }
    return r;
}

int uiw_rpc_clnt_xprt_stats(CLIENT *clnt, struct uiw_rpc_xprt_stats *st)
{
    struct uiw__clnt *u = of(clnt);
    if (!u || !st)
        return -EINVAL;
    if (u->own_dev) {
        uiw__rr_dev_stats(u->dev, st);
    } else {
        /* a server's backward client: its one connection */
        memset(st, 0, sizeof(*st));
        struct uiw__rr_conn *k = conn_ref(u);
        if (k) {
            uiw__rr_conn_stats_add(k, st);
            uiw__rr_conn_put(k);
        }
        st->sleeps = atomic_load_explicit(&u->dev->n_sleeps, memory_order_relaxed);
        st->spins_skipped = atomic_load_explicit(&u->dev->n_spin_skips, memory_order_relaxed);
        if (uiw__nic_stats(u->dev->nic, &st->rnic) != 0)
            memset(&st->rnic, 0, sizeof(st->rnic));
        uiw__rr_dev_mem(u->dev, st);
    }
    /* calls sent again on a new connection, and timeouts, are the client's to count */
    st->retransmits += atomic_load(&u->caller.n_retrans);
    st->timeouts += atomic_load(&u->caller.n_timeouts);
    return 0;
}

int uiw_rpc_clnt_bc_register(CLIENT *clnt, rpcprog_t prog, rpcvers_t vers,
                             void (*dispatch)(struct svc_req *, SVCXPRT *))
{
    struct uiw__clnt *u = of(clnt);
    if (!u || u->bc_conn)
        return -EINVAL;
    if (!u->bc.drc) {
        /* Backward calls are not sent again on another connection: the cache keeps only
         * the replies answered REPLY_RESOURCE, for the call sent again with a larger Reply
         * chunk, as many as the server may have calls outstanding (set before the program
         * is: a call finds it once it finds the program, both under the table's lock). */
        uint32_t n = u->xprt.bc_credits;
        u->bc.drc = uiw__drc_new(4 * n, 0, n, u->dev);
        if (!u->bc.drc)
            return -ENOMEM;
    }
    return uiw__rpc_resp_register(&u->bc, prog, vers, dispatch);
}

int uiw_rpc_clnt_request_props(CLIENT *clnt, struct uiw_rpc_prop_req *req, unsigned n,
                               int timeout_ms)
{
    struct uiw__rr_conn *k;
    int r = conn_of(clnt, &k);
    if (r == 0) {
        r = uiw__rr_request_props(k, req, n, timeout_ms);
        uiw__rr_conn_put(k);
    }
    return r;
}

int uiw_rpc_clnt_update_props(CLIENT *clnt, const struct uiw_rpc_prop_req *now, unsigned n)
{
    struct uiw__rr_conn *k;
    int r = conn_of(clnt, &k);
    if (r == 0) {
        r = uiw__rr_update_props(k, now, n);
        uiw__rr_conn_put(k);
    }
    return r;
}

int uiw_rpc_clnt_peer_xprop(CLIENT *clnt, uint32_t which, void *buf, size_t cap)
{
    struct uiw__rr_conn *k;
    int r = conn_of(clnt, &k);
    if (r == 0) {
        r = uiw__rr_peer_xprop(k, which, buf, cap);
        uiw__rr_conn_put(k);
    }
    return r;
}

/* ---------------------------------------------------------------- backward clients */

static int bc_connect(struct uiw__rpc_caller *c, uint64_t deadline)
{
    (void)c;
    (void)deadline;
    return -ENOTCONN;
}

CLIENT *uiw__rpc_bc_create(struct uiw__rr_conn *conn, rpcprog_t prog, rpcvers_t vers,
                           uint32_t threshold, unsigned nslots);
CLIENT *uiw__rpc_bc_create(struct uiw__rr_conn *conn, rpcprog_t prog, rpcvers_t vers,
                           uint32_t threshold, unsigned nslots)
{
    struct uiw__clnt *u = calloc(1, sizeof(*u));
    if (!u) {
        errno = ENOMEM;
        return NULL;
    }
    u->dev = conn->dev;
    u->addr = conn->peer;
    struct uiw__rpc_caller *c = &u->caller;
    if (uiw__rpc_caller_init(c, u->dev, nslots ? nslots : conn->req_max) != 0) {
        free(u);
        errno = ENOMEM;
        return NULL;
    }
    uiw__rpc_resp_init(&u->bc, u->dev, threshold);
    uiw__rr_conn_get(conn);
    u->bc_conn = conn;
    uiw__rr_conn_get(conn);
    c->conn = conn;
    c->owner = u;
    c->connect = bc_connect;
    c->reconnect = false;
    c->backward = true;
    c->prog = prog;
    c->vers = vers;
    c->clnt = &u->cl;
    c->threshold = threshold;
    u->cl.cl_ops = (struct clnt_ops *)(uintptr_t)&clnt_ops;
    u->cl.cl_private = u;
    u->cl.cl_netid = (char *)(uintptr_t) "rdma";
    u->cl.cl_auth = authnone();
    return &u->cl;
}

int uiw__rpc_bc_send_raw(CLIENT *bc, const void *msg, uint32_t len, uiw__rpc_raw_fn fn, void *arg)
{
    struct uiw__clnt *u = of(bc);
    if (!u || !u->bc_conn)
        return -EINVAL;
    return uiw__rpc_call_raw(&u->caller, msg, len, fn, arg);
}
