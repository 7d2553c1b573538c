/*
 * Connections: settings, RFC 8797 private data, establishment (client connect, server
 * listener), version negotiation (draft section 7), receives kept posted, death and
 * draining, reference counts.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/pages.h"
#include "rpcrdma/xprt.h"

#define SQ_SERVER 2048
#define SQ_HEAD   64 /* send queue entries kept for the poller's own posts */

/* ---------------------------------------------------------------- settings */

int uiw__rr_xprt_defaults(struct uiw_rpc_xprt_attr *a)
{
    if (!a->vers_min)
        a->vers_min = 1;
    if (!a->vers_max)
        a->vers_max = 2;
    if (a->vers_min > a->vers_max || a->vers_max > 2)
        return -EINVAL;
    if (!a->inline_recv)
        a->inline_recv = 4096;
    if (!a->inline_send)
        a->inline_send = 4096;
    if (a->inline_recv < 1024 || a->inline_recv > 262144 || a->inline_recv % 1024 ||
        a->inline_send < 1024 || a->inline_send > 262144)
        return -EINVAL;
    /* a Version Two peer sends up to the default RBSIZ until it has read our CONNPROP, or
     * if it ignores it (receivers must take 4096-byte messages): where Version Two may be
     * spoken, that is the least we receive, and offer */
    if (a->vers_max >= 2 && a->inline_recv < UIW_RPCRDMA_RBSIZ_DEFAULT)
        a->inline_recv = UIW_RPCRDMA_RBSIZ_DEFAULT;
    if (!a->credits)
        a->credits = 128;
    if (a->credits > 1024)
        return -EINVAL;
    if (!a->bc_credits)
        a->bc_credits = 8;
    if (a->bc_credits > 64)
        return -EINVAL;
    if (a->brs > UIW_RPC_BRS_GENL)
        return -EINVAL;
    if (!a->ddp_threshold)
        a->ddp_threshold = 1024;
    if (a->ddp_threshold < 64)
        return -EINVAL;
    if (!a->max_msg)
        a->max_msg = 1u << 20;
    if (!a->max_ddp)
        a->max_ddp = 16u << 20;
    if (a->max_msg < a->inline_recv || a->max_msg > (64u << 20) || a->max_ddp > (256u << 20))
        return -EINVAL;
    if (!a->connect_timeout_ms)
        a->connect_timeout_ms = 10000;
    if (!a->io_timeout_ms)
        a->io_timeout_ms = 60000;
    if (a->io_timeout_ms > INT32_MAX)
        return -EINVAL;
    if (!a->spin_us)
        a->spin_us = 50;
    if (a->nxprops > UIW_RPC_XPROP_MAX)
        return -EINVAL;
    for (unsigned i = 0; i < a->nxprops; i++)
        if (a->xprops[i].which < UIW_RPC_XPROP_MIN || a->xprops[i].len > UIW_RPC_XPROP_DATA)
            return -EINVAL;
    return 0;
}

/* ---------------------------------------------------------------- version memory */

#define VMEM 64
static pthread_mutex_t vmem_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    struct sockaddr_storage sa;
    bool used;
} vmem[VMEM];
static unsigned vmem_next;

static bool same_addr(const struct sockaddr *a, const struct sockaddr_storage *b)
{
    if (a->sa_family != b->ss_family)
        return false;
    if (a->sa_family == AF_INET6) {
        const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
        return x->sin6_port == y->sin6_port &&
               memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr)) == 0;
    }
    const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
    return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
}

bool uiw__rr_vmem_v1(const struct sockaddr *sa)
{
    bool r = false;
    pthread_mutex_lock(&vmem_lock);
    for (unsigned i = 0; i < VMEM && !r; i++)
        r = vmem[i].used && same_addr(sa, &vmem[i].sa);
    pthread_mutex_unlock(&vmem_lock);
    return r;
}

void uiw__rr_vmem_set(const struct sockaddr *sa, bool v1)
{
    pthread_mutex_lock(&vmem_lock);
    unsigned i;
    for (i = 0; i < VMEM; i++)
        if (vmem[i].used && same_addr(sa, &vmem[i].sa))
            break;
    if (i == VMEM && v1) {
        i = vmem_next++ % VMEM;
        memset(&vmem[i].sa, 0, sizeof(vmem[i].sa));
        memcpy(&vmem[i].sa, sa,
               sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                         : sizeof(struct sockaddr_in));
    }
    if (i < VMEM)
        vmem[i].used = v1;
    pthread_mutex_unlock(&vmem_lock);
}

/* ---------------------------------------------------------------- allocation */

static uint32_t pow2_at_least(uint32_t n)
{
    uint32_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

static uint32_t kib_floor(uint32_t n)
{
    n -= n % 1024;
    if (n < UIW_RPCRDMA_CM_SIZE_MIN)
        n = UIW_RPCRDMA_CM_SIZE_MIN;
    if (n > UIW_RPCRDMA_CM_SIZE_MAX)
        n = UIW_RPCRDMA_CM_SIZE_MAX;
    return n;
}

static struct uiw__rr_conn *conn_alloc(struct uiw__rr_dev *d, const struct uiw__rr_conn_attr *a,
                                       bool server)
{
    const struct uiw_rpc_xprt_attr *x = a->xprt;
    struct uiw__rr_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->dev = d;
    c->up = a->up;
    c->owner = a->owner;
    c->server = server;
    atomic_init(&c->refs, 1);
    atomic_init(&c->state, UIW__RR_C_READY);
    uiw__lock_init(&c->lock);
    uiw__lock_init(&c->mr_lock);
    c->vmin = x->vers_min;
    c->vmax = x->vers_max;
    c->inline_recv = x->inline_recv;
    c->send_cap = x->inline_send < d->ibuf_size + 0 ? x->inline_send : d->ibuf_size;
    c->inline_send = 1024;
    c->ddp_threshold = x->ddp_threshold;
    c->swi_ok = !x->no_send_with_invalidate;
    c->credits = 1;
    c->credits_seen = 1;
    c->req_max = server ? x->bc_credits : x->credits;
    c->grant = server ? x->credits : x->bc_credits;
    c->nrecv = x->credits + x->bc_credits + UIW__RR_EXTRA_RECVS;
    c->ncalls = 2 * c->grant + UIW__RR_EXTRA_RECVS;
    c->props.nlocal_x = x->nxprops;
    memcpy(c->props.local_x, x->xprops, x->nxprops * sizeof(x->xprops[0]));
    uint32_t xsz = pow2_at_least(4 * c->req_max);
    c->xtab = calloc(xsz, sizeof(*c->xtab));
    c->xtab_mask = xsz - 1;
    c->call_size = a->up && a->up->call_size ? a->up->call_size : sizeof(struct uiw__rr_call);
    /* ncalls slots (credits twice over: several KiB each) that cost memory only once
     * used: an idle connection has used few of them (uiw__rr_call_take) */
    c->calls = uiw__pages_alloc(c->ncalls * c->call_size);
    if (!c->xtab || !c->calls) {
        free(c->xtab);
        uiw__pages_free(c->calls, c->ncalls * c->call_size);
        free(c);
        return NULL;
    }
    uint32_t req_wrs = c->req_max * (2 + 2 * UIW__RR_MAX_MR);
    c->sq_depth = (server ? SQ_SERVER : 0) + req_wrs + SQ_HEAD;
    c->mark.kind = UIW__RR_WR_MARK;
    c->ignore.kind = UIW__RR_WR_IGNORE;
    c->sp.reads = c->sp_reads;
    c->sp.max_reads = UIW__RR_MAX_RSEGS;
    c->sp.writes = c->sp_writes;
    c->sp.max_writes = UIW__RR_MAX_CHUNKS;
    c->sp.segs = c->sp_segs;
    c->sp.max_segs = (UIW__RR_MAX_CHUNKS + 1) * UIW__RR_MAX_SEGS;
    c->sp.max_segs_per_chunk = UIW__RR_MAX_SEGS;
    c->sp.props = c->sp_props;
    c->sp.max_props = UIW_RPCRDMA_MAX_PROPS;
    c->props.rbsiz = c->inline_recv;
    enum uiw_rpc_brs b = x->brs;
    c->props.brs = b == UIW_RPC_BRS_NONE   ? UIW_RDMA2_BKREQSUP_NONE
                   : b == UIW_RPC_BRS_GENL ? UIW_RDMA2_BKREQSUP_GENL
                                           : UIW_RDMA2_BKREQSUP_INLINE;
    uiw__rr_props_init(c);
    return c;
}

/* Server connections are freed by the listener's thread (their CM id belongs to its
 * event channel, which only that thread reads). */
struct uiw__rr_listener {
    struct uiw__rr_dev *dev;
    struct uiw__nic_listener *nl;
    struct uiw_rpc_xprt_attr xprt;
    struct uiw__rr_conn_attr ca;
    pthread_mutex_t lock;
    struct uiw__rr_conn *dead; /* refs 0: to free */
    struct uiw__rr_conn *live; /* accepted, not yet freed (linked by lnext) */
    uint32_t read_timeout_ms;
    uint32_t nconns; /* admitted and not yet freed (admit, listener_release) */
};

/* An admitted connection is freed, or failed to come up (listener thread). */
static void listener_release(struct uiw__rr_listener *l)
{
    pthread_mutex_lock(&l->lock);
    l->nconns--;
    pthread_mutex_unlock(&l->lock);
    if (l->ca.gone)
        l->ca.gone(l->ca.admit_arg);
}

static void conn_free(struct uiw__rr_conn *c)
{
    uiw__rr_dev_uncount(c->dev, c, true); /* nothing counts on it any more */
    /* every MR is back (each held a reference): gone before the connection's PD */
    while (c->mrs_all) {
        struct uiw__rr_mr *m = c->mrs_all;
        c->mrs_all = m->all_next;
        uiw__nic_dereg(&m->nmr);
        free(m);
    }
    if (c->nc)
        uiw__nic_conn_destroy(c->nc);
    struct uiw__rr_listener *l = c->server ? c->owner_listener : NULL;
    free(c->xtab);
    free(c->discard_ids);
    uiw__pages_free(c->calls, c->ncalls * c->call_size);
    free(c);
    if (l)
        listener_release(l);
}

void uiw__rr_conn_get(struct uiw__rr_conn *c)
{
    atomic_fetch_add(&c->refs, 1);
}

void uiw__rr_conn_put(struct uiw__rr_conn *c)
{
    if (atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    if (c->server && c->owner_listener) {
        struct uiw__rr_listener *l = c->owner_listener;
        pthread_mutex_lock(&l->lock);
        c->next = l->dead;
        l->dead = c;
        /* its thread frees c now, not at its next look (woken under the lock, which
         * uiw__rr_listener_close takes before it frees l) */
        uiw__nic_listener_wake(l->nl);
        pthread_mutex_unlock(&l->lock);
        return;
    }
    conn_free(c);
}

struct uiw__rr_call *uiw__rr_call_take(struct uiw__rr_conn *c)
{
    struct uiw__rr_call *k = c->call_free;
    if (k) {
        c->call_free = k->next;
        return k;
    }
    uint32_t i = atomic_load_explicit(&c->calls_fresh, memory_order_relaxed);
    if (i == c->ncalls)
        return NULL;
    k = (struct uiw__rr_call *)(c->calls + i * c->call_size);
    k->w.kind = UIW__RR_WR_CALL;
    k->conn = c;
    atomic_store_explicit(&c->calls_fresh, i + 1, memory_order_release);
    return k;
}

/* ---------------------------------------------------------------- receives */

int uiw__rr_post_recvs(struct uiw__rr_conn *c)
{
    struct uiw__rr_dev *d = c->dev;
    struct uiw__nic_recv wr[16];
    int r = 0;
    while (atomic_load(&c->rposted) < c->nrecv) {
        uint32_t want = c->nrecv - atomic_load(&c->rposted);
        int n = 0;
        for (; n < 16 && (uint32_t)n < want; n++) {
            struct uiw__rr_ibuf *b = uiw__rr_ibuf_get(d);
            if (!b)
                break;
            b->w.kind = UIW__RR_WR_RECV;
            b->conn = c;
            wr[n].wr_id = (uint64_t)(uintptr_t)b;
            wr[n].sge.addr = (uint64_t)(uintptr_t)b->data;
            wr[n].sge.len = c->inline_recv;
            wr[n].sge.lkey = b->lkey;
            wr[n].next = n + 1 < 16 && (uint32_t)n + 1 < want ? &wr[n + 1] : NULL;
        }
        if (n == 0)
            return -ENOMEM;
        wr[n - 1].next = NULL;
        atomic_fetch_add(&c->rposted, (uint32_t)n);
        r = uiw__nic_post_recv(c->nc, wr);
        if (r) {
            /* nothing of the batch counts (the QP refused it; it is going away) */
            atomic_fetch_sub(&c->rposted, (uint32_t)n);
            for (int i = 0; i < n; i++)
                uiw__rr_ibuf_put(d, (struct uiw__rr_ibuf *)(uintptr_t)wr[i].wr_id);
            return r;
        }
    }
    return r;
}

void uiw__rr_conn_trim(struct uiw__rr_conn *c)
{
    uint64_t rx = atomic_load_explicit(&c->n_inl_rx, memory_order_relaxed);
    bool idle = rx == c->trim_rx;
    c->trim_rx = rx;
    int st = atomic_load(&c->state);
    if (!idle || rx == c->discard_rx || st != UIW__RR_C_READY || atomic_load(&c->closing) ||
        c->dev->resident)
        return;
    /* once per connection (the leader's, every few seconds at most): not per message */
    if (!c->discard_ids && !(c->discard_ids = calloc(c->nrecv, sizeof(*c->discard_ids))))
        return;
    c->discard_rx = rx;
    int n = uiw__nic_discard_recv(c->nc, c->discard_ids, (int)c->nrecv);
    struct uiw__rr_dev *d = c->dev;
    for (int i = 0; i < n; i++) {
        struct uiw__rr_ibuf *b = (struct uiw__rr_ibuf *)(uintptr_t)c->discard_ids[i];
        if (b->resident) {
            b->resident = false;
            atomic_fetch_sub_explicit(&d->ibuf_resident, 1, memory_order_relaxed);
        }
    }
}

static int pre_recv(struct uiw__nic_conn *nc, void *arg)
{
    struct uiw__rr_conn *c = arg;
    c->nc = nc;
    /* the ids of log lines, before a completion can name them */
    struct uiw__nic_conn_info ni;
    uiw__nic_conn_info(nc, &ni);
    c->log_id = ni.log_id;
    c->qpn = ni.qpn;
    int r = uiw__rr_post_recvs(c);
    /* armed, for the first completion's event to wake the leader, but not marked so: the
     * leader drops an event of a connection not on the device's list yet (dev_add), and
     * arms it again once it is */
    if (r == 0)
        uiw__nic_arm(nc);
    return r;
}

static void cm_private(struct uiw__rr_conn *c, uint8_t out[UIW_RPCRDMA_CM_PRIVATE_LEN])
{
    struct uiw_rpcrdma_cm_private p = {
        .magic = UIW_RPCRDMA_CM_PRIVATE_MAGIC,
        .version = UIW_RPCRDMA_CM_PRIVATE_VERSION,
        .remote_invalidation = c->swi_ok,
        .send_size = kib_floor(c->send_cap),
        .recv_size = kib_floor(c->inline_recv),
    };
    uiw_rpcrdma_cm_private_encode(out, UIW_RPCRDMA_CM_PRIVATE_LEN, &p);
}

static void peer_private(struct uiw__rr_conn *c, const void *pd, size_t len)
{
    struct uiw_rpcrdma_cm_private p;
    if (pd && uiw_rpcrdma_cm_private_decode(pd, len, &p) == 0) {
        c->peer_cm = true;
        c->peer_cmp = p;
        c->peer_swi = p.remote_invalidation && c->swi_ok;
    }
}

static void nic_attr(struct uiw__rr_conn *c, const struct uiw_rpc_xprt_attr *x,
                     struct uiw__nic_conn_attr *na, uint8_t *pd)
{
    memset(na, 0, sizeof(*na));
    na->ctx = c;
    na->sq_depth = c->sq_depth;
    na->rq_depth = c->nrecv;
    na->ird = 16;
    na->ord = 16;
    na->crc = x->crc;
    na->timeout_ms = x->connect_timeout_ms;
    na->user_timeout_ms = x->io_timeout_ms;
    na->pcap_dir = x->pcap_dir;
    cm_private(c, pd);
    na->private_data = pd;
    na->private_data_len = UIW_RPCRDMA_CM_PRIVATE_LEN;
}

static void fill_info(struct uiw__rr_conn *c)
{
    struct uiw__nic_conn_info ni;
    if (uiw__nic_conn_info(c->nc, &ni) == 0) {
        c->crc = ni.crc;
        c->ord = ni.ord;
    }
    c->local = ni.local;
    if (!c->server)
        c->peer = ni.peer; /* a server's is known before its first message (accept_one) */
}

static void dev_add(struct uiw__rr_dev *d, struct uiw__rr_conn *c)
{
    uiw__rr_conn_get(c); /* the list's reference */
    pthread_mutex_lock(&d->mu);
    c->next = d->conns;
    d->conns = c;
    d->nconns++;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    atomic_store(&d->joined, true);
    uiw__nic_wake(d->nic);
}

/* ---------------------------------------------------------------- versions */

uint32_t uiw__rr_credit_out(const struct uiw__rr_conn *c, bool reply_dir)
{
    /* a responder's messages carry its grant, a requester's the credits it asks for */
    return reply_dir ? c->grant : c->req_max;
}

void uiw__rr_vers_settled(struct uiw__rr_conn *c, uint32_t vers)
{
    c->vers = vers;
    uiw__rr_props_sizes(c);
}

static bool not_negotiating(void *arg)
{
    struct uiw__rr_conn *c = arg;
    return atomic_load(&c->state) != UIW__RR_C_NEGOTIATING;
}

/* A client's connection settled its version (and how). */
static void log_connected(const struct uiw__rr_conn *c)
{
    if (!uiw__log_on(UIW__LOG_INFO))
        return;
    char a[64];
    const char *peer = uiw__log_addr((const struct sockaddr *)&c->peer, a, sizeof(a));
    const char *how = !c->vers_fallback    ? ""
                      : c->vers_remembered ? " (fallback: this server answered ERR_VERS before)"
                      : c->vers_no_answer  ? " (fallback: no answer to the Version Two message)"
                                           : " (fallback: the server answered ERR_VERS)";
    UIW__LOG(UIW__LOG_INFO, c->log_id, c->qpn,
             "RPC-over-RDMA connection to %s: Version %u%s, %u credits asked, inline %u/%u", peer,
             c->vers, how, c->req_max, c->inline_send, c->inline_recv);
}

struct uiw__rr_conn *uiw__rr_connect(struct uiw__rr_dev *d, const struct sockaddr *dst,
                                     const struct uiw__rr_conn_attr *a, int *err)
{
    const struct uiw_rpc_xprt_attr *x = a->xprt;
    struct uiw__rr_conn *c = conn_alloc(d, a, false);
    if (!c) {
        *err = -ENOMEM;
        return NULL;
    }
    uint8_t pd[UIW_RPCRDMA_CM_PRIVATE_LEN];
    struct uiw__nic_conn_attr na;
    nic_attr(c, x, &na, pd);
    int r;
    struct uiw__nic_conn *nc = uiw__nic_connect(d->nic, dst, &na, pre_recv, c, &r);
    if (!nc) {
        if (c->nc == NULL) {
            free(c->xtab);
            uiw__pages_free(c->calls, c->ncalls * c->call_size);
            free(c);
        } else {
            c->nc = NULL; /* freed by the failed connect */
            free(c->xtab);
            uiw__pages_free(c->calls, c->ncalls * c->call_size);
            free(c);
        }
        *err = r;
        return NULL;
    }
    (void)nc; /* c->nc was set by pre_recv */
    uiw__rr_dev_count(d, c);
    fill_info(c);
    struct uiw__nic_conn_info ni;
    uiw__nic_conn_info(nc, &ni);
    peer_private(c, ni.peer_pd_len ? ni.peer_pd : NULL, ni.peer_pd_len);
    if (!(c->peer_cm && c->peer_cmp.remote_invalidation)) {
        /* Linux's svcrdma (6.1) leaves a receive that completes before it has handled the
         * connection's ESTABLISHED event unprocessed until the next one arrives: a first
         * message sent at once waits for a second that the credits forbid (the Version
         * Two one for the negotiation time, a Version One call until its timeout). A peer
         * that offers no Send With Invalidate in RFC 8797 private data (the kernel does
         * not) gets that moment before our first message. */
        struct timespec ts = {0, UIW__RR_FIRST_SEND_PAUSE_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
    bool remembered = a->remember_vers && uiw__rr_vmem_v1(dst);
    if (c->vmax >= 2 && !remembered) {
        atomic_store(&c->state, UIW__RR_C_NEGOTIATING);
        c->vers = 2;
        c->inline_send = 1024; /* the first message fits a Version One peer */
        dev_add(d, c);
        r = uiw__rr_send_connprop(c);
        if (r == 0) {
            uint64_t wait =
                x->connect_timeout_ms < UIW__RR_NEG_MS ? x->connect_timeout_ms : UIW__RR_NEG_MS;
            uiw__rr_dev_wait(d, not_negotiating, c, uiw__rr_now_ns() + wait * 1000000u);
        }
        uiw__lock_take(&c->lock);
        if (atomic_load(&c->state) == UIW__RR_C_NEGOTIATING) {
            /* no answer: assume Version One (draft 7.2, "initial message lost") */
            if (c->vmin <= 1) {
                c->vers_fallback = true;
                c->vers_no_answer = true;
                uiw__rr_vers_settled(c, 1);
                atomic_store(&c->state, UIW__RR_C_READY);
                if (a->remember_vers)
                    uiw__rr_vmem_set(dst, true);
            } else {
                r = -ETIMEDOUT;
            }
        }
        uiw__lock_give(&c->lock);
        int st = atomic_load(&c->state);
        if (r == 0 && st != UIW__RR_C_READY)
            r = c->dead_reason ? c->dead_reason : -EPROTO;
        if (r) {
            uiw__rr_conn_close(c, true);
            uiw__rr_conn_put(c);
            *err = r;
            return NULL;
        }
        if (c->vers == 1 && a->remember_vers)
            uiw__rr_vmem_set(dst, true);
        else if (c->vers == 2 && a->remember_vers)
            uiw__rr_vmem_set(dst, false);
    } else {
        if (c->vmin > 1 && remembered) {
            uiw__rr_conn_close(c, true);
            uiw__rr_conn_put(c);
            *err = -EPROTO;
            return NULL;
        }
        c->vers_fallback = remembered;
        c->vers_remembered = remembered;
        uiw__rr_vers_settled(c, c->vmax >= 2 && !remembered ? 2 : 1);
        dev_add(d, c);
    }
    log_connected(c);
    *err = 0;
    return c;
}

/* ---------------------------------------------------------------- listener */

struct uiw__rr_listener *uiw__rr_listen(struct uiw__rr_dev *d, const struct sockaddr *addr,
                                        const struct uiw__rr_conn_attr *a, int *err)
{
    struct uiw__rr_listener *l = calloc(1, sizeof(*l));
    if (!l) {
        *err = -ENOMEM;
        return NULL;
    }
    l->dev = d;
    l->xprt = *a->xprt;
    l->ca = *a;
    l->ca.xprt = &l->xprt;
    pthread_mutex_init(&l->lock, NULL);
    l->nl =
        uiw__nic_listen(d->nic, addr, 128, l->xprt.connect_timeout_ms, l->xprt.io_timeout_ms, err);
    if (!l->nl) {
        pthread_mutex_destroy(&l->lock);
        free(l);
        return NULL;
    }
    return l;
}

uint16_t uiw__rr_listener_port(const struct uiw__rr_listener *l)
{
    return uiw__nic_listener_port(l->nl);
}

void uiw__rr_listener_admission(struct uiw__rr_listener *l,
                                bool (*admit)(void *arg, const struct sockaddr *peer),
                                void (*gone)(void *arg), void *arg)
{
    pthread_mutex_lock(&l->lock);
    l->ca.admit = admit;
    l->ca.gone = gone;
    l->ca.admit_arg = arg;
    pthread_mutex_unlock(&l->lock);
}

uint64_t uiw__rr_accept_pause_ns;

/* Whether a connection request may come in: within the listener's limit and admitted by
 * its owner; it counts from then on (listener_release). */
static bool admit(struct uiw__rr_listener *l, const struct uiw__nic_event *ev)
{
    const struct sockaddr *peer = (const struct sockaddr *)&ev->peer;
    pthread_mutex_lock(&l->lock);
    bool over = l->ca.max_conns && l->nconns >= l->ca.max_conns;
    if (!over)
        l->nconns++;
    pthread_mutex_unlock(&l->lock);
    if (over) {
        if (uiw__log_on(UIW__LOG_WARN)) {
            char a[64];
            UIW__LOG(UIW__LOG_WARN, 0, 0,
                     "RPC-over-RDMA connection from %s refused: %u connections are open (the "
                     "server's max_connections)",
                     uiw__log_addr(peer, a, sizeof(a)), l->ca.max_conns);
        }
        return false;
    }
    if (l->ca.admit && !l->ca.admit(l->ca.admit_arg, peer)) {
        pthread_mutex_lock(&l->lock);
        l->nconns--;
        pthread_mutex_unlock(&l->lock);
        return false;
    }
    return true;
}

static void accept_one(struct uiw__rr_listener *l, const struct uiw__nic_event *ev)
{
    struct uiw__rr_dev *d = l->dev;
    /* refused before anything is allocated for it: the connection manager's reject */
    if (!admit(l, ev)) {
        uiw__nic_reject(l->nl, ev->req);
        return;
    }
    struct uiw__rr_conn *c = conn_alloc(d, &l->ca, true);
    if (!c) {
        uiw__nic_reject(l->nl, ev->req);
        listener_release(l);
        return;
    }
    c->owner_listener = l;
    peer_private(c, ev->private_data, ev->private_data_len);
    c->vers = 0;
    /* all the poller reads, before the first message can arrive */
    c->peer = ev->peer;
    uiw__rr_props_sizes(c);
    /* counted before the client can see it accepted: from its MPA Reply on, the client may
     * send, and a poller woken by the connection's CQ may answer, before it is listed */
    uiw__rr_dev_count(d, c);
    uint8_t pd[UIW_RPCRDMA_CM_PRIVATE_LEN];
    struct uiw__nic_conn_attr na;
    nic_attr(c, &l->xprt, &na, pd);
    int r;
    struct uiw__nic_conn *nc = uiw__nic_accept(l->nl, ev->req, &na, pre_recv, c, &r);
    if (!nc) {
        uiw__rr_dev_uncount(d, c, false); /* never came up */
        free(c->xtab);
        uiw__pages_free(c->calls, c->ncalls * c->call_size);
        free(c);
        listener_release(l);
        return;
    }
    /* c->nc was set by pre_recv (the poller may already use it) */
    if (uiw__rr_accept_pause_ns) {
        struct timespec ts = {(time_t)(uiw__rr_accept_pause_ns / 1000000000u),
                              (long)(uiw__rr_accept_pause_ns % 1000000000u)};
        nanosleep(&ts, NULL);
    }
    uiw__lock_take(&c->lock);
    fill_info(c);
    uiw__lock_give(&c->lock);
    pthread_mutex_lock(&l->lock);
    c->lnext = l->live;
    l->live = c;
    pthread_mutex_unlock(&l->lock);
    dev_add(d, c);
}

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)
void uiw__rr_conn_stats_add(struct uiw__rr_conn *c, struct uiw_rpc_xprt_stats *st)
{
    st->connections++;
    st->closed += LD(c->n_closed);
    st->lost += LD(c->n_lost);
    st->calls_sent += LD(c->n_calls_tx);
    st->replies_received += LD(c->n_replies_rx);
    st->retransmits += LD(c->n_resent);
    st->calls_received += LD(c->n_calls_rx);
    st->replies_sent += LD(c->n_replies_tx);
    st->drc_hits += LD(c->n_drc_hits);
    st->remote_invalidations += LD(c->n_swi_rx);
    st->local_invalidations += LD(c->n_linv);
    st->send_with_invalidate += LD(c->n_swi_tx);
    st->credit_violations += LD(c->n_credit_viol);
    uint32_t by = LD(c->credits_seen), to = c->grant; /* grant: set once, at creation */
    uint32_t most = LD(c->max_inflight);
    if (by > st->credits_granted_by_peer)
        st->credits_granted_by_peer = by;
    if (to > st->credits_granted_to_peer)
        st->credits_granted_to_peer = to;
    if (most > st->credits_max_inflight)
        st->credits_max_inflight = most;
    st->credit_waits += LD(c->n_credit_waits);
    st->read_chunks += LD(c->n_rchunks);
    st->write_chunks += LD(c->n_wchunks);
    st->reply_chunks += LD(c->n_replych);
    st->long_calls += LD(c->n_long);
    st->rdma_read_bytes += LD(c->n_rd_bytes);
    st->rdma_write_bytes += LD(c->n_wr_bytes);
    st->inline_bytes_sent += LD(c->n_inl_tx);
    st->inline_bytes_received += LD(c->n_inl_rx);
    for (int i = 0; i < UIW_RPC_NERR; i++) {
        st->errors_sent[i] += LD(c->n_err_tx[i]);
        st->errors_received[i] += LD(c->n_err_rx[i]);
    }
}
#undef LD

static void free_dead(struct uiw__rr_listener *l)
{
    pthread_mutex_lock(&l->lock);
    struct uiw__rr_conn *dead = l->dead;
    l->dead = NULL;
    for (struct uiw__rr_conn *c = dead; c; c = c->next) {
        struct uiw__rr_conn **pp = &l->live;
        while (*pp && *pp != c)
            pp = &(*pp)->lnext;
        if (*pp)
            *pp = c->lnext;
    }
    pthread_mutex_unlock(&l->lock);
    while (dead) {
        struct uiw__rr_conn *c = dead;
        dead = c->next;
        conn_free(c);
    }
}

/* c sends nothing that goes out: messages of ours (replies, RDMA_ERRORs) wait to be
 * posted or to complete, and none completed for lim ns (listener thread, l->lock held). */
static bool io_stalled(struct uiw__rr_conn *c, uint64_t now, uint64_t lim)
{
    uint64_t done = atomic_load(&c->tx_done);
    if (!atomic_load(&c->tx_pending) || done != c->io_watch_done || !c->io_watch_ns) {
        c->io_watch_done = done;
        c->io_watch_ns = now;
        return false;
    }
    return now - c->io_watch_ns > lim;
}

/* Connections whose peer leaves one of our RDMA Reads unanswered too long, takes none
 * of what we send for the io timeout (it stopped reading), or sends part of a message (of
 * an FPDU) and nothing more for the io timeout, the connection left open (the receive
 * side would wait for the rest for ever, and TCP sees nothing wrong), are ended. */
static void read_timeouts(struct uiw__rr_listener *l)
{
    uint64_t now = uiw__rr_now_ns(), lim = (uint64_t)l->ca.read_timeout_ms * 1000000u;
    uint64_t io_lim = (uint64_t)l->ca.xprt->io_timeout_ms * 1000000u;
    pthread_mutex_lock(&l->lock);
    for (struct uiw__rr_conn *c = l->live; c; c = c->lnext) {
        int st = atomic_load(&c->state);
        bool up = st != UIW__RR_C_DEAD && st != UIW__RR_C_DRAINED;
        if (up && io_stalled(c, now, io_lim)) {
            UIW__LOG(UIW__LOG_WARN, c->log_id, c->qpn,
                     "nothing we sent went out for %u ms: closing the connection",
                     l->ca.xprt->io_timeout_ms);
            uiw__rr_conn_died(c, -ETIMEDOUT);
            continue;
        }
        if (up && uiw__nic_rx_stalled_ms(c->nc) > l->ca.xprt->io_timeout_ms) {
            UIW__LOG(UIW__LOG_WARN, c->log_id, c->qpn,
                     "a message's bytes stopped coming for %u ms, part of it received: "
                     "closing the connection",
                     l->ca.xprt->io_timeout_ms);
            uiw__rr_conn_died(c, -ETIMEDOUT);
            continue;
        }
        if (!l->ca.read_timeout_ms)
            continue;
        uint32_t used = atomic_load_explicit(&c->calls_fresh, memory_order_acquire);
        for (uint32_t i = 0; i < used; i++) {
            struct uiw__rr_call *k = (struct uiw__rr_call *)(c->calls + i * c->call_size);
            if (atomic_load_explicit(&k->reads_left, memory_order_acquire) &&
                uiw__rr_read_overdue(
                    now, atomic_load_explicit(&k->read_start_ns, memory_order_relaxed), lim)) {
                UIW__LOG(UIW__LOG_WARN, c->log_id, c->qpn,
                         "an RDMA Read of a call's chunk went unanswered for %u ms: closing "
                         "the connection",
                         l->ca.read_timeout_ms);
                uiw__rr_conn_died(c, -ETIMEDOUT);
                break;
            }
        }
    }
    pthread_mutex_unlock(&l->lock);
}

/* How long the listener may wait before it looks at its connections' timeouts again: a
 * tenth of the shortest, within 10 ms and 1 s; with no connection, as long as it likes
 * (-1). */
static int look_ms(struct uiw__rr_listener *l)
{
    pthread_mutex_lock(&l->lock);
    bool live = l->live != NULL;
    pthread_mutex_unlock(&l->lock);
    if (!live)
        return -1;
    uint32_t t = l->ca.xprt->io_timeout_ms;
    if (l->ca.read_timeout_ms && l->ca.read_timeout_ms < t)
        t = l->ca.read_timeout_ms;
    t /= 10;
    return t < 10 ? 10 : t > 1000 ? 1000 : (int)t;
}

void uiw__rr_listener_wake(struct uiw__rr_listener *l)
{
    uiw__nic_listener_wake(l->nl);
}

int uiw__rr_listener_run(struct uiw__rr_listener *l, int timeout_ms)
{
    free_dead(l);
    read_timeouts(l);
    int look = look_ms(l);
    if (look >= 0 && (timeout_ms < 0 || timeout_ms > look))
        timeout_ms = look;
    struct uiw__nic_event ev;
    int r = uiw__nic_listener_event(l->nl, timeout_ms, &ev);
    if (r == -EAGAIN)
        return 0;
    if (r)
        return r;
    switch (ev.type) {
    case UIW__NIC_EV_REQUEST:
        accept_one(l, &ev);
        break;
    case UIW__NIC_EV_ESTABLISHED:
        break;
    case UIW__NIC_EV_DISCONNECTED: {
        struct uiw__rr_conn *c = uiw__nic_conn_ctx(ev.conn);
        if (c)
            uiw__rr_conn_ended(c, ev.status);
        uiw__rr_dev_kick(l->dev);
        break;
    }
    }
    free_dead(l);
    return 1;
}

void uiw__rr_listener_close(struct uiw__rr_listener *l, void (*drain)(void *arg), void *arg)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->lock);
    for (struct uiw__rr_conn *c = l->live; c; c = c->lnext)
        uiw__rr_conn_close(c, false);
    pthread_mutex_unlock(&l->lock);
    uint64_t now = uiw__rr_now_ns(), until = now + 10000000000u;
    uint64_t grace = now + (uint64_t)UIW__RR_CLOSE_GRACE_MS * 1000000u;
    for (;;) {
        uiw__rr_dev_poll(l->dev);
        if (drain)
            drain(arg);
        free_dead(l);
        pthread_mutex_lock(&l->lock);
        bool empty = l->live == NULL;
        if (!empty && grace && uiw__rr_now_ns() > grace) {
            for (struct uiw__rr_conn *c = l->live; c; c = c->lnext)
                uiw__rr_conn_close(c, true);
            grace = 0;
        }
        pthread_mutex_unlock(&l->lock);
        if (empty || uiw__rr_now_ns() > until)
            break;
        struct uiw__nic_event ev;
        int r = uiw__nic_listener_event(l->nl, 10, &ev);
        if (r == 0 && ev.type == UIW__NIC_EV_REQUEST)
            uiw__nic_reject(l->nl, ev.req);
    }
    uiw__nic_listener_close(l->nl);
    pthread_mutex_destroy(&l->lock);
    free(l);
}

/* ---------------------------------------------------------------- death */

const char *uiw__rr_err_name(uint32_t vers, uint32_t code)
{
    static const char *const v2[] = {"ERR_0",      "ERR_VERS",     "BAD_XDR", "REPLY_RESOURCE",
                                     "INVAL_PROC", "INVAL_OPTION", "SYSTEM"};
    if (code == UIW_RDMA_ERR_CHUNK && vers == 1)
        return "ERR_CHUNK";
    return code < UIW_RPC_NERR ? v2[code] : "unknown error";
}

static void log_death(const struct uiw__rr_conn *c, int reason)
{
    if (!uiw__log_on(UIW__LOG_INFO))
        return;
    char a[64];
    const char *peer = uiw__log_addr((const struct sockaddr *)&c->peer, a, sizeof(a));
    if (c->orderly)
        UIW__LOG(UIW__LOG_INFO, c->log_id, c->qpn, "RPC-over-RDMA connection %s %s closed%s",
                 c->server ? "from" : "to", peer, atomic_load(&c->closing) ? "" : " by the peer");
    else if (reason == -ECONNABORTED)
        UIW__LOG(UIW__LOG_INFO, c->log_id, c->qpn,
                 "RPC-over-RDMA connection %s %s closed abortively", c->server ? "from" : "to",
                 peer);
    else
        UIW__LOG(UIW__LOG_WARN, c->log_id, c->qpn, "RPC-over-RDMA connection %s %s lost: %s",
                 c->server ? "from" : "to", peer, strerror(-reason));
}

/* The connection is over (orderly: closed without a Terminate, its LLP already gone, so
 * the disconnect below sends nothing). */
static void conn_dies(struct uiw__rr_conn *c, int reason, bool orderly)
{
    uiw__lock_take(&c->lock);
    int st = atomic_load(&c->state);
    if (st == UIW__RR_C_DEAD || st == UIW__RR_C_DRAINED) {
        uiw__lock_give(&c->lock);
        return;
    }
    c->dead_reason = reason;
    c->orderly = orderly;
    if (orderly)
        UIW__RR_COUNT(c->n_closed, 1);
    else
        UIW__RR_COUNT(c->n_lost, 1);
    atomic_store(&c->state, UIW__RR_C_DEAD);
    log_death(c, reason);
    uiw__nic_disconnect(c->nc, true);
    /* a marker after everything on the send queue (nothing is posted after it: see
     * uiw__rr_post): its flush says all of it completed */
    struct uiw__nic_send m = {
        .wr_id = (uint64_t)(uintptr_t)&c->mark, .op = UIW__NIC_SEND, .signaled = true};
    if (uiw__nic_post_send(c->nc, &m, NULL) != 0)
        c->mark_done = true;
    c->marked = true;
    uiw__lock_give(&c->lock);
    uiw__rr_dev_kick(c->dev);
}

void uiw__rr_conn_died(struct uiw__rr_conn *c, int reason)
{
    conn_dies(c, reason, false);
}

void uiw__rr_conn_ended(struct uiw__rr_conn *c, int status)
{
    if (status == 0 && !uiw__nic_terminated(c->nc))
        conn_dies(c, atomic_load(&c->closing) ? -ECONNABORTED : -ESHUTDOWN, true);
    else
        conn_dies(c, status ? status : -ECONNRESET, false);
}

void uiw__rr_conn_close(struct uiw__rr_conn *c, bool abortive)
{
    if (!abortive) {
        /* like Linux's xprtrdma (rdma_disconnect, then the queues drain): what is posted
         * goes out, then the LLP closes; the flushes end the connection (conn_ended) */
        uiw__lock_take(&c->lock);
        int st = atomic_load(&c->state);
        bool go = (st == UIW__RR_C_READY || st == UIW__RR_C_NEGOTIATING) &&
                  !atomic_exchange(&c->closing, true);
        uiw__lock_give(&c->lock);
        if (go) {
            uiw__nic_flush(c->nc); /* sends a plug may hold */
            uiw__nic_disconnect(c->nc, false);
            uiw__rr_dev_kick(c->dev);
        }
        if (go || atomic_load(&c->closing))
            return;
    }
    uiw__rr_conn_died(c, -ECONNABORTED);
}

bool uiw__rr_conn_usable(const struct uiw__rr_conn *c)
{
    return atomic_load(&c->state) == UIW__RR_C_READY;
}

int uiw__rr_conn_info(struct uiw__rr_conn *c, struct uiw_rpc_conn_info *info)
{
    memset(info, 0, sizeof(*info));
    uiw__lock_take(&c->lock);
    info->vers = c->vers;
    info->vers_fallback = c->vers_fallback;
    info->vers_remembered = c->vers_remembered;
    info->vers_no_answer = c->vers_no_answer;
    info->errvers_low = c->errvers_low;
    info->errvers_high = c->errvers_high;
    info->credits = c->server ? c->grant : c->credits;
    info->bc_credits = c->server ? c->credits : c->grant;
    info->inline_send = c->inline_send;
    info->inline_recv = c->inline_recv;
    info->peer_cm_private = c->peer_cm;
    info->peer_cm = c->peer_cmp;
    info->peer_connprop = c->props.got_connprop;
    info->peer_rbsiz = c->props.peer_rbsiz;
    info->peer_brs = c->props.peer_brs;
    info->local_rbsiz = c->props.rbsiz;
    info->local_brs = c->props.brs;
    info->remote_invalidation = c->vers == 2 ? c->swi_ok : c->peer_swi;
    info->crc = c->crc;
    info->local = c->local;
    info->peer = c->peer;
    uiw__lock_give(&c->lock);
    return 0;
}
