/*
 * The server: a listener thread accepting RPC-over-RDMA connections, and worker threads
 * that take turns polling the connections and run the calls that come in (a slow call
 * holds up only its own thread).
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/rpc_internal.h"
#include "rpc/svc_hooks.h"

struct uiw_rpc_svc {
    struct uiw__rr_dev *dev;
    struct uiw__rr_listener *l;
    struct uiw__rpc_resp resp;
    struct uiw__rr_upper up;
    struct uiw_rpc_svc_attr attr;
    struct uiw_rpc_xprt_attr xprt;
    uint16_t port;
    _Atomic bool stop;
    _Atomic bool running;
    pthread_t cm;
    bool has_cm;
    pthread_t *workers;
    unsigned nworkers;
    /* the program's data of each connection (uiw__rpc_svc_conn_data) */
    pthread_mutex_t data_lock;
    void (*data_ended)(void *data);
};

CLIENT *uiw__rpc_bc_create(struct uiw__rr_conn *conn, rpcprog_t prog, rpcvers_t vers,
                           uint32_t threshold, unsigned nslots);

/* ---------------------------------------------------------------- transport callbacks */

static void up_call_ready(struct uiw__rr_conn *c, struct uiw__rr_call *k)
{
    struct uiw_rpc_svc *s = c->owner;
    uiw__rpc_resp_ready(&s->resp, k);
}

static void up_req_done(struct uiw__rr_conn *c, struct uiw__rr_req *q)
{
    uiw__rpc_caller_req_done(c, q);
}

static void up_drained(struct uiw__rr_conn *c)
{
    /* backward calls in flight fail, then the program's data of it goes (no more is
     * made for it); the server's reference goes */
    uiw__rpc_caller_drained(NULL, c);
    struct uiw_rpc_svc *s = c->owner;
    pthread_mutex_lock(&s->data_lock);
    void *d = c->svc_data;
    c->svc_data = NULL;
    c->svc_data_ended = true;
    pthread_mutex_unlock(&s->data_lock);
    if (d && s->data_ended)
        s->data_ended(d);
    uiw__rr_conn_put(c);
}

/* ---------------------------------------------------------------- threads */

static unsigned work(void *arg)
{
    struct uiw_rpc_svc *s = arg;
    return atomic_load(&s->stop) ? 1 : atomic_load(&s->resp.nready);
}

static uint64_t taken(void *arg)
{
    struct uiw_rpc_svc *s = arg;
    return atomic_load_explicit(&s->resp.ntaken, memory_order_relaxed);
}

/* Replies of calls run back to back go out together (one system call) while more calls
 * wait to run (see send_msg), unless the oldest has waited this long: a slow call after
 * fast ones delays their replies by no more than its own run. */
#define REPLY_HOLD_NS 20000u

static void *worker(void *arg)
{
    struct uiw_rpc_svc *s = arg;
    while (!atomic_load(&s->stop)) {
        uiw__rr_plug();
        while (uiw__rpc_resp_run_one(&s->resp))
            uiw__rr_plug_flush_after(REPLY_HOLD_NS);
        uiw__rr_unplug();
        uiw__rr_dev_work(s->dev, work, taken, s, 0);
    }
    /* the others, asleep in the device (an idle one sleeps up to a second), stop now */
    uiw__rr_dev_wake_all(s->dev);
    return NULL;
}

static void *cm_thread(void *arg)
{
    struct uiw_rpc_svc *s = arg;
    /* it sleeps until a connection comes or goes, its next look at the connections'
     * timeouts, or the stop wakes it */
    while (!atomic_load(&s->stop))
        uiw__rr_listener_run(s->l, -1);
    return NULL;
}

/* ---------------------------------------------------------------- API */

struct uiw_rpc_svc *uiw_rpc_svc_create(const struct uiw_rpc_svc_attr *attr)
{
    struct uiw_rpc_svc *s = calloc(1, sizeof(*s));
    if (!s) {
        errno = ENOMEM;
        return NULL;
    }
    if (attr)
        s->attr = *attr;
    s->xprt = s->attr.xprt;
    int r = uiw__rr_xprt_defaults(&s->xprt);
    if (r) {
        free(s);
        errno = -r;
        return NULL;
    }
    if (!s->attr.nthreads)
        s->attr.nthreads = 4;
    if (!s->attr.drc_entries)
        s->attr.drc_entries = 1024;
    if (!s->attr.drc_max_reply)
        s->attr.drc_max_reply = 4096;
    if (!s->attr.read_timeout_ms)
        s->attr.read_timeout_ms = 30000;
    if (!s->attr.max_read_bytes)
        s->attr.max_read_bytes = 256u << 20;
    struct uiw__rr_dev_attr da = {
        .inline_size =
            s->xprt.inline_recv > s->xprt.inline_send ? s->xprt.inline_recv : s->xprt.inline_send,
        .max_msg = s->xprt.max_msg,
        .max_ddp = s->xprt.max_ddp,
        .spin_us = s->xprt.spin_us,
        .pcap_dir = s->xprt.pcap_dir,
        .max_read = s->attr.max_read_bytes,
        .resident = s->xprt.resident,
    };
    s->dev = uiw__rr_dev_open(&da);
    if (!s->dev) {
        r = errno;
        free(s);
        errno = r;
        return NULL;
    }
    uiw__rpc_resp_init(&s->resp, s->dev, s->xprt.ddp_threshold);
    if (!s->attr.no_drc) {
        /* replies answered REPLY_RESOURCE kept whatever their size: as many as a client
         * may have calls outstanding */
        s->resp.drc =
            uiw__drc_new(s->attr.drc_entries, s->attr.drc_max_reply, s->xprt.credits, s->dev);
        if (!s->resp.drc) {
            uiw__rpc_resp_fini(&s->resp);
            uiw__rr_dev_close(s->dev);
            free(s);
            errno = ENOMEM;
            return NULL;
        }
    }
    s->up.call_size = sizeof(struct uiw__rpc_scall);
    s->up.call_ready = up_call_ready;
    s->up.req_done = up_req_done;
    s->up.drained = up_drained;
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    if (s->attr.addr) {
        memcpy(&ss, s->attr.addr,
               s->attr.addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                   : sizeof(struct sockaddr_in));
    } else {
        ss.ss_family = AF_INET;
    }
    if (ss.ss_family == AF_INET6)
        ((struct sockaddr_in6 *)&ss)->sin6_port = htons(s->attr.port);
    else
        ((struct sockaddr_in *)&ss)->sin_port = htons(s->attr.port);
    struct uiw__rr_conn_attr ca = {.xprt = &s->xprt,
                                   .up = &s->up,
                                   .owner = s,
                                   .read_timeout_ms = s->attr.read_timeout_ms,
                                   .max_conns = s->attr.max_connections};
    s->l = uiw__rr_listen(s->dev, (struct sockaddr *)&ss, &ca, &r);
    if (!s->l) {
        uiw__drc_free(s->resp.drc);
        uiw__rpc_resp_fini(&s->resp);
        uiw__rr_dev_close(s->dev);
        free(s);
        errno = -r;
        return NULL;
    }
    s->port = uiw__rr_listener_port(s->l);
    pthread_mutex_init(&s->data_lock, NULL);
    return s;
}

uint16_t uiw_rpc_svc_port(const struct uiw_rpc_svc *svc)
{
    return svc ? svc->port : 0;
}

int uiw_rpc_svc_register(struct uiw_rpc_svc *svc, rpcprog_t prog, rpcvers_t vers,
                         void (*dispatch)(struct svc_req *, SVCXPRT *))
{
    if (!svc)
        return -EINVAL;
    return uiw__rpc_resp_register(&svc->resp, prog, vers, dispatch);
}

int uiw__rpc_svc_cached(struct uiw_rpc_svc *svc, rpcprog_t prog, rpcvers_t vers,
                        bool (*cached)(rpcproc_t proc))
{
    if (!svc)
        return -EINVAL;
    if (atomic_load(&svc->running))
        return -EBUSY;
    return uiw__rpc_resp_cached(&svc->resp, prog, vers, cached);
}

int uiw_rpc_svc_unregister(struct uiw_rpc_svc *svc, rpcprog_t prog, rpcvers_t vers)
{
    if (!svc)
        return -EINVAL;
    return uiw__rpc_resp_unregister(&svc->resp, prog, vers);
}

static int start(struct uiw_rpc_svc *s, unsigned nworkers)
{
    if (atomic_exchange(&s->running, true))
        return -EBUSY;
    atomic_store(&s->stop, false);
    if (pthread_create(&s->cm, NULL, cm_thread, s) != 0) {
        atomic_store(&s->running, false);
        return -EAGAIN;
    }
    s->has_cm = true;
    s->workers = calloc(nworkers ? nworkers : 1, sizeof(*s->workers));
    if (!s->workers)
        return -ENOMEM;
    for (unsigned i = 0; i < nworkers; i++) {
        if (pthread_create(&s->workers[i], NULL, worker, s) != 0)
            break;
        s->nworkers++;
    }
    return 0;
}

static void join(struct uiw_rpc_svc *s)
{
    for (unsigned i = 0; i < s->nworkers; i++)
        pthread_join(s->workers[i], NULL);
    s->nworkers = 0;
    free(s->workers);
    s->workers = NULL;
    if (s->has_cm)
        pthread_join(s->cm, NULL);
    s->has_cm = false;
    atomic_store(&s->running, false);
}

int uiw_rpc_svc_start(struct uiw_rpc_svc *svc)
{
    if (!svc)
        return -EINVAL;
    return start(svc, svc->attr.nthreads);
}

int uiw_rpc_svc_run(struct uiw_rpc_svc *svc)
{
    if (!svc)
        return -EINVAL;
    int r = start(svc, svc->attr.nthreads - 1);
    if (r)
        return r;
    worker(svc);
    join(svc);
    return 0;
}

void uiw_rpc_svc_stop(struct uiw_rpc_svc *svc)
{
    if (svc) {
        atomic_store(&svc->stop, true);
        uiw__rr_dev_interrupt(svc->dev); /* a write to an eventfd */
        uiw__rr_listener_wake(svc->l);   /* another */
    }
}

static void run_queued(void *arg)
{
    while (uiw__rpc_resp_run_one(arg))
        ;
}

int uiw_rpc_svc_destroy(struct uiw_rpc_svc *svc)
{
    if (!svc)
        return 0;
    atomic_store(&svc->stop, true);
    uiw__rr_dev_wake_all(svc->dev);
    uiw__rr_listener_wake(svc->l);
    if (atomic_load(&svc->running))
        join(svc);
    /* close every connection; the calls still queued run meanwhile (each holds its
     * connection), answered while their connection lasts */
    uiw__rr_listener_close(svc->l, run_queued, &svc->resp);
    while (uiw__rpc_resp_run_one(&svc->resp))
        ;
    uiw__drc_free(svc->resp.drc);
    uiw__rpc_resp_fini(&svc->resp);
    uiw__rr_dev_close(svc->dev);
    pthread_mutex_destroy(&svc->data_lock);
    free(svc);
    return 0;
}

int uiw_rpc_svc_xprt_stats(const struct uiw_rpc_svc *svc, struct uiw_rpc_xprt_stats *st)
{
    if (!svc || !st)
        return -EINVAL;
    uiw__rr_dev_stats(svc->dev, st);
    return 0;
}

/* The connection of xprt's call, for backward calls: NULL + errno (EINVAL: a foreign
 * transport; EOPNOTSUPP: its client takes no backward calls). */
static struct uiw__rr_conn *bc_conn(SVCXPRT *xprt)
{
    if (!uiw_svc_is_rdma(xprt)) {
        errno = EINVAL;
        return NULL;
    }
    struct uiw__rpc_scall *s = xprt->xp_p1;
    if (!uiw__rr_peer_takes_calls(s->k.conn)) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    return s->k.conn;
}

CLIENT *uiw_svc_bc_create(SVCXPRT *xprt, rpcprog_t prog, rpcvers_t vers)
{
    struct uiw__rr_conn *c = bc_conn(xprt);
    if (!c)
        return NULL;
    struct uiw__rpc_scall *s = xprt->xp_p1;
    return uiw__rpc_bc_create(c, prog, vers, s->resp->threshold, 0);
}

CLIENT *uiw__rpc_svc_bc_raw(SVCXPRT *xprt, unsigned max_calls)
{
    struct uiw__rr_conn *c = max_calls ? bc_conn(xprt) : NULL;
    if (!max_calls)
        errno = EINVAL;
    /* raw calls carry no DDP data: the program and version are in their messages */
    return c ? uiw__rpc_bc_create(c, 0, 0, 0, max_calls) : NULL;
}

void *uiw__rpc_svc_conn_data(SVCXPRT *xprt, void *(*make)(void *arg, SVCXPRT *xprt), void *arg)
{
    if (!uiw_svc_is_rdma(xprt))
        return NULL;
    struct uiw__rpc_scall *k = xprt->xp_p1;
    struct uiw__rr_conn *c = k->k.conn;
    struct uiw_rpc_svc *s = c->owner;
    pthread_mutex_lock(&s->data_lock);
    void *d = c->svc_data;
    if (!d && !c->svc_data_ended && make)
        d = c->svc_data = make(arg, xprt);
    pthread_mutex_unlock(&s->data_lock);
    return d;
}

int uiw__rpc_svc_conn_ended(struct uiw_rpc_svc *svc, void (*ended)(void *data))
{
    if (!svc)
        return -EINVAL;
    if (atomic_load(&svc->running))
        return -EBUSY;
    svc->data_ended = ended;
    return 0;
}

struct uiw__rr_dev *uiw__rpc_svc_dev(struct uiw_rpc_svc *svc)
{
    return svc->dev;
}

int uiw__rpc_svc_admission(struct uiw_rpc_svc *svc,
                           bool (*admit)(void *arg, const struct sockaddr *peer),
                           void (*gone)(void *arg), void *arg)
{
    if (!svc)
        return -EINVAL;
    if (atomic_load(&svc->running))
        return -EBUSY;
    uiw__rr_listener_admission(svc->l, admit, gone, arg);
    return 0;
}

struct uiw__drc *uiw__rpc_svc_drc(struct uiw_rpc_svc *svc)
{
    return svc ? svc->resp.drc : NULL;
}
