/*
 * The transport's RNIC interface (nic.h) over uiw's verbs and connection manager: the only
 * file of src/rpcrdma and src/rpc that names a uiw_ verb.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <uiw/cm.h>
#include <uiw/verbs.h>

#include "rpcrdma/nic.h"

struct uiw__nic {
    struct uiw_context *ctx;
    struct uiw_pd *pd; /* of the device's registrations (local access, every connection) */
    struct uiw_comp_channel *ch;
    const char *pcap_dir;
    pthread_mutex_t zlock;
    struct uiw__nic_conn *zombies; /* freed connections whose CQ had an event queued */
    int wake_fd;                   /* eventfd of uiw__nic_wake */
};

struct uiw__nic_conn {
    struct uiw__nic *nic;
    void *uctx; /* the transport's connection */
    bool zombie;
    struct uiw__nic_conn *znext;
    struct uiw_cm_channel *cmch; /* active side: the connection's own channel */
    struct uiw_cm_id *id;
    struct uiw_pd *pd; /* the connection's own: its QP and fast-register MRs */
    struct uiw_cq *cq;
    struct uiw_qp *qp;
    bool listener_owned;
    uint8_t peer_pd[256];
    uint16_t peer_pd_len;
};

struct uiw__nic_listener {
    struct uiw__nic *nic;
    struct uiw_cm_channel *ch;
    struct uiw_cm_id *id;
    int wake_fd; /* eventfd of uiw__nic_listener_wake */
    uint8_t pd[UIW_CM_PD_MAX];
};

struct uiw__nic *uiw__nic_open(const struct uiw__nic_attr *a)
{
    struct uiw__nic *n = calloc(1, sizeof(*n));
    if (!n) {
        errno = ENOMEM;
        return NULL;
    }
    struct uiw_context_attr ca;
    uiw_context_attr_init(&ca);
    ca.max_mr = 1u << 16;
    ca.pcap_dir = a ? a->pcap_dir : NULL;
    n->pcap_dir = ca.pcap_dir;
    pthread_mutex_init(&n->zlock, NULL);
    n->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (n->wake_fd < 0)
        goto fail;
    n->ctx = uiw_open_context(&ca);
    if (!n->ctx)
        goto fail;
    n->pd = uiw_alloc_pd(n->ctx);
    if (!n->pd)
        goto fail;
    n->ch = uiw_create_comp_channel(n->ctx);
    if (!n->ch)
        goto fail;
    return n;
fail:;
    int e = errno ? errno : ENOMEM;
    if (n->pd)
        uiw_dealloc_pd(n->pd);
    if (n->ctx)
        uiw_close_context(n->ctx);
    if (n->wake_fd >= 0)
        close(n->wake_fd);
    free(n);
    errno = e;
    return NULL;
}

static void zombies_reap(struct uiw__nic *n);

int uiw__nic_stats(struct uiw__nic *n, struct uiw_context_stats *st)
{
    return uiw_query_context_stats(n->ctx, st);
}

int uiw__nic_close(struct uiw__nic *n)
{
    if (!n)
        return 0;
    zombies_reap(n);
    int r = uiw_destroy_comp_channel(n->ch);
    if (r == 0)
        r = uiw_dealloc_pd(n->pd);
    if (r == 0)
        r = uiw_close_context(n->ctx);
    if (r == 0) {
        close(n->wake_fd);
        pthread_mutex_destroy(&n->zlock);
        free(n);
    }
    return r;
}

/* ---------------------------------------------------------------- memory */

static unsigned access_of(unsigned a)
{
    unsigned u = 0;
    if (a & (UIW__NIC_LOCAL_WRITE | UIW__NIC_REMOTE_WRITE))
        u |= UIW_ACCESS_LOCAL_WRITE;
    if (a & UIW__NIC_REMOTE_WRITE)
        u |= UIW_ACCESS_REMOTE_WRITE;
    if (a & UIW__NIC_REMOTE_READ)
        u |= UIW_ACCESS_REMOTE_READ;
    return u;
}

int uiw__nic_reg(struct uiw__nic *n, void *addr, size_t len, unsigned access,
                 struct uiw__nic_mr *mr)
{
    if (access & (UIW__NIC_REMOTE_WRITE | UIW__NIC_REMOTE_READ))
        return -EINVAL;
    /* registered once, used by the QPs of every connection (each in a PD of its own) */
    struct uiw_mr *m = uiw_reg_mr(n->pd, addr, len, access_of(access) | UIW_ACCESS_LOCAL_ANY_PD);
    if (!m)
        return -errno;
    mr->addr = addr;
    mr->len = len;
    mr->lkey = m->lkey;
    mr->rkey = m->rkey;
    mr->priv = m;
    return 0;
}

static int frmr_in(struct uiw_pd *pd, size_t max_len, struct uiw__nic_mr *mr)
{
    struct uiw_mr *m = uiw_alloc_mr(pd, max_len);
    if (!m)
        return -errno;
    mr->addr = NULL;
    mr->len = max_len;
    mr->lkey = m->lkey;
    mr->rkey = m->rkey;
    mr->priv = m;
    return 0;
}

void uiw__nic_dereg(struct uiw__nic_mr *mr)
{
    if (mr && mr->priv) {
        uiw_dereg_mr(mr->priv);
        mr->priv = NULL;
    }
}

int uiw__nic_frmr(struct uiw__nic_conn *c, size_t max_len, struct uiw__nic_mr *mr)
{
    return frmr_in(c->pd, max_len, mr);
}

int uiw__nic_frmr_reset(struct uiw__nic_mr *mr)
{
    size_t max = mr->len;
    struct uiw_pd *pd = ((struct uiw_mr *)mr->priv)->pd;
    uiw__nic_dereg(mr);
    return frmr_in(pd, max, mr);
}

uint32_t uiw__nic_next_key(uint32_t key)
{
    return uiw_inc_rkey(key);
}

/* ---------------------------------------------------------------- work requests */

static const enum uiw_wr_opcode wr_op[] = {
    [UIW__NIC_SEND] = UIW_WR_SEND,           [UIW__NIC_SEND_INV] = UIW_WR_SEND_WITH_INV,
    [UIW__NIC_WRITE] = UIW_WR_RDMA_WRITE,    [UIW__NIC_READ] = UIW_WR_RDMA_READ,
    [UIW__NIC_LOCAL_INV] = UIW_WR_LOCAL_INV, [UIW__NIC_REG] = UIW_WR_REG_MR,
};

enum { BATCH = 16 };

int uiw__nic_post_send(struct uiw__nic_conn *c, struct uiw__nic_send *wr,
                       struct uiw__nic_send **bad)
{
    struct uiw_send_wr w[BATCH];
    struct uiw_sge sg[BATCH][UIW__NIC_MAX_SGE];
    struct uiw__nic_send *src[BATCH];
    while (wr) {
        int k = 0;
        for (; wr && k < BATCH; wr = wr->next, k++) {
            struct uiw_send_wr *u = &w[k];
            memset(u, 0, sizeof(*u));
            src[k] = wr;
            u->wr_id = wr->wr_id;
            u->opcode = wr_op[wr->op];
            /* a long list goes in pieces: one doorbell for all of them */
            u->send_flags = (wr->signaled ? UIW_SEND_SIGNALED : 0u) |
                            (wr->more || wr->next ? UIW_SEND_MORE : 0u);
            u->num_sge = wr->nsge;
            u->sg_list = sg[k];
            for (int i = 0; i < wr->nsge; i++) {
                sg[k][i].addr = wr->sge[i].addr;
                sg[k][i].length = wr->sge[i].len;
                sg[k][i].lkey = wr->sge[i].lkey;
            }
            u->invalidate_rkey = wr->inv_rkey;
            if (wr->op == UIW__NIC_WRITE || wr->op == UIW__NIC_READ) {
                u->wr.rdma.remote_addr = wr->raddr;
                u->wr.rdma.rkey = wr->rkey;
            } else if (wr->op == UIW__NIC_REG) {
                u->wr.reg.mr = wr->mr->priv;
                u->wr.reg.key = wr->key;
                u->wr.reg.addr = wr->addr;
                u->wr.reg.length = wr->len;
                u->wr.reg.access = access_of(wr->access);
            }
            u->next = NULL;
            if (k)
                w[k - 1].next = u;
        }
        struct uiw_send_wr *ubad = NULL;
        int r = uiw_post_send(c->qp, w, &ubad);
        if (r) {
            if (bad)
                *bad = ubad ? src[ubad - w] : src[0];
            return r;
        }
    }
    return 0;
}

int uiw__nic_post_recv(struct uiw__nic_conn *c, struct uiw__nic_recv *wr)
{
    struct uiw_recv_wr w[BATCH];
    struct uiw_sge sg[BATCH];
    while (wr) {
        int k = 0;
        for (; wr && k < BATCH; wr = wr->next, k++) {
            sg[k].addr = wr->sge.addr;
            sg[k].length = wr->sge.len;
            sg[k].lkey = wr->sge.lkey;
            w[k].wr_id = wr->wr_id;
            w[k].sg_list = &sg[k];
            w[k].num_sge = 1;
            w[k].next = NULL;
            if (k)
                w[k - 1].next = &w[k];
        }
        struct uiw_recv_wr *ubad;
        int r = uiw_post_recv(c->qp, w, &ubad);
        if (r)
            return r;
    }
    return 0;
}

int uiw__nic_discard_recv(struct uiw__nic_conn *c, uint64_t *wr_ids, int max)
{
    return uiw_discard_recv(c->qp, wr_ids, max);
}

static enum uiw__nic_wc_op wc_op(enum uiw_wc_opcode o)
{
    switch (o) {
    case UIW_WC_SEND:
        return UIW__NIC_WC_SEND;
    case UIW_WC_RDMA_WRITE:
        return UIW__NIC_WC_WRITE;
    case UIW_WC_RDMA_READ:
        return UIW__NIC_WC_READ;
    case UIW_WC_LOCAL_INV:
        return UIW__NIC_WC_LOCAL_INV;
    case UIW_WC_REG_MR:
        return UIW__NIC_WC_REG;
    default:
        return UIW__NIC_WC_RECV;
    }
}

void uiw__nic_flush(struct uiw__nic_conn *c)
{
    uiw_post_send_flush(c->qp);
}

int uiw__nic_poll(struct uiw__nic_conn *c, struct uiw__nic_wc *wc, int n)
{
    struct uiw_wc w[BATCH];
    if (n > BATCH)
        n = BATCH;
    int got = uiw_poll_cq(c->cq, n, w);
    for (int i = 0; i < got; i++) {
        wc[i].wr_id = w[i].wr_id;
        wc[i].status = w[i].status == UIW_WC_SUCCESS        ? UIW__NIC_WC_OK
                       : w[i].status == UIW_WC_WR_FLUSH_ERR ? UIW__NIC_WC_FLUSH
                                                            : UIW__NIC_WC_ERROR;
        /* the opcode of a flushed receive is RECV; of a flushed send, its own */
        wc[i].op = wc_op(w[i].opcode);
        wc[i].byte_len = w[i].byte_len;
        wc[i].with_inv = (w[i].wc_flags & UIW_WC_WITH_INV) != 0;
        wc[i].inv_rkey = w[i].invalidated_rkey;
        wc[i].detail = (int)w[i].status;
    }
    return got;
}

int uiw__nic_arm(struct uiw__nic_conn *c)
{
    return uiw_req_notify_cq(c->cq, 0);
}

static void zombie_free(struct uiw__nic *n, struct uiw__nic_conn *z)
{
    pthread_mutex_lock(&n->zlock);
    struct uiw__nic_conn **pp = &n->zombies;
    while (*pp && *pp != z)
        pp = &(*pp)->znext;
    if (*pp)
        *pp = z->znext;
    if (uiw_destroy_cq(z->cq) == 0) {
        pthread_mutex_unlock(&n->zlock);
        free(z);
        return;
    }
    z->znext = n->zombies; /* still busy: keep it */
    n->zombies = z;
    pthread_mutex_unlock(&n->zlock);
}

/* Free the zombies whose queued events can be taken now (no other waiter). */
static void zombies_reap(struct uiw__nic *n)
{
    struct uiw_cq *cq;
    void *ctx;
    while (n->zombies && uiw_wait_cq_event(n->ch, 0, &cq, &ctx) == 0) {
        uiw_ack_cq_events(cq, 1);
        struct uiw__nic_conn *c = ctx;
        if (c->zombie)
            zombie_free(n, c);
    }
    for (;;) {
        pthread_mutex_lock(&n->zlock);
        struct uiw__nic_conn *z = n->zombies;
        pthread_mutex_unlock(&n->zlock);
        if (!z)
            break;
        if (uiw_destroy_cq(z->cq) != 0) {
            /* cannot happen once every event was taken; do not loop forever */
            pthread_mutex_lock(&n->zlock);
            n->zombies = z->znext;
            pthread_mutex_unlock(&n->zlock);
            continue;
        }
        pthread_mutex_lock(&n->zlock);
        n->zombies = z->znext;
        pthread_mutex_unlock(&n->zlock);
        free(z);
    }
}

int uiw__nic_wait(struct uiw__nic *n, int timeout_ms, void **conn_ctx)
{
    struct uiw_cq *cq = NULL; /* set when uiw_wait_cq_event returns 0 */
    void *ctx = NULL;
    int r = uiw_wait_cq_event(n->ch, timeout_ms, &cq, &ctx);
    if (r)
        return r;
    /* acknowledged and read under zlock, as conn_free destroys the CQ: its destroy came
     * first and failed (the event was taken, not acknowledged: c is a zombie, ours to
     * free), or comes after and c is not touched again here */
    struct uiw__nic_conn *c = ctx;
    pthread_mutex_lock(&n->zlock);
    uiw_ack_cq_events(cq, 1);
    bool zombie = c->zombie;
    void *uctx = c->uctx;
    pthread_mutex_unlock(&n->zlock);
    if (zombie) {
        zombie_free(n, c);
        uctx = NULL;
    }
    *conn_ctx = uctx;
    return 0;
}

/* Ring a wake eventfd (async-signal-safe; its counter cannot overflow in practice). */
static void bell_ring(int bell)
{
    uint64_t one = 1;
    ssize_t w = write(bell, &one, sizeof(one));
    (void)w;
}

/* Sleep in one poll() until fd is readable, the wake eventfd bell rang (drained), or
 * timeout_ms (-1: no limit) passed: 1 when woken, 0, or -errno. */
static int sleep_or_bell(int fd, int bell, int timeout_ms)
{
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = bell, .events = POLLIN}};
    if (poll(p, 2, timeout_ms) < 0)
        return -errno;
    if (!p[1].revents)
        return 0;
    uint64_t v;
    if (read(bell, &v, sizeof(v)) < 0 && errno != EAGAIN)
        return -errno;
    return 1;
}

/* The channel's fd and the wake fd in one poll(): the progress thread (on in every context
 * opened here) does the socket work that uiw_wait_cq_event would do itself. */
int uiw__nic_wait_wakeable(struct uiw__nic *n, int timeout_ms, void **conn_ctx)
{
    if (uiw__nic_wait(n, 0, conn_ctx) == 0)
        return 0;
    int r = sleep_or_bell(uiw_comp_channel_fd(n->ch), n->wake_fd, timeout_ms);
    if (r < 0)
        return r;
    if (r)
        return -EINTR;
    return uiw__nic_wait(n, 0, conn_ctx);
}

void uiw__nic_wake(struct uiw__nic *n)
{
    bell_ring(n->wake_fd);
}

uint64_t uiw__nic_activity(struct uiw__nic *n)
{
    struct uiw_context_stats st;
    if (uiw_query_context_stats(n->ctx, &st) != 0)
        return 0;
    return st.tx_bytes + st.rx_bytes;
}

/* ---------------------------------------------------------------- connections */

static void fill_param(struct uiw_conn_param *p, const struct uiw__nic_conn_attr *a,
                       const char *pcap_dir)
{
    memset(p, 0, sizeof(*p));
    p->private_data = a->private_data;
    p->private_data_len = a->private_data_len;
    p->responder_resources = a->ird;
    p->initiator_depth = a->ord;
    p->crc = a->crc;
    p->timeout_ms = a->timeout_ms;
    p->tcp_user_timeout_ms = a->user_timeout_ms;
    p->pcap_dir = a->pcap_dir ? a->pcap_dir : pcap_dir;
}

static struct uiw__nic_conn *conn_new(struct uiw__nic *n, const struct uiw__nic_conn_attr *a)
{
    struct uiw__nic_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->nic = n;
    c->uctx = a->ctx;
    /* a protection domain per connection (as Linux's svcrdma and xprtrdma): a peer's
     * RDMA and Send With Invalidate reach only what its own connection registered */
    c->pd = uiw_alloc_pd(n->ctx);
    if (!c->pd) {
        free(c);
        return NULL;
    }
    int cqe = (int)(a->sq_depth + a->rq_depth + 16);
    c->cq = uiw_create_cq(n->ctx, cqe, c, n->ch, 0);
    if (!c->cq) {
        uiw_dealloc_pd(c->pd);
        free(c);
        return NULL;
    }
    return c;
}

static int conn_qp(struct uiw__nic_conn *c, struct uiw_cm_id *id,
                   const struct uiw__nic_conn_attr *a)
{
    struct uiw_qp_init_attr qa;
    memset(&qa, 0, sizeof(qa));
    qa.qp_context = a->ctx;
    qa.send_cq = c->cq;
    qa.recv_cq = c->cq;
    qa.cap.max_send_wr = a->sq_depth;
    qa.cap.max_recv_wr = a->rq_depth;
    qa.cap.max_send_sge = UIW__NIC_MAX_SGE;
    qa.cap.max_recv_sge = 1;
    qa.max_ird = a->ird;
    qa.max_ord = a->ord;
    int r = uiw_cm_create_qp(id, c->pd, &qa);
    if (r)
        return r;
    c->id = id;
    c->qp = id->qp;
    return 0;
}

static void conn_free(struct uiw__nic_conn *c)
{
    if (c->qp)
        uiw_cm_destroy_qp(c->id);
    c->qp = NULL;
    if (c->id)
        uiw_cm_destroy_id(c->id);
    if (c->cmch) {
        struct uiw_cm_event *ev = NULL; /* set when uiw_cm_get_event returns 0 */
        while (uiw_cm_get_event(c->cmch, &ev, 0) == 0)
            uiw_cm_ack_event(ev);
        uiw_cm_destroy_channel(c->cmch);
    }
    /* its QP is gone, and the transport deregistered its fast-register MRs */
    if (c->pd && uiw_dealloc_pd(c->pd) == 0)
        c->pd = NULL;
    if (c->cq) {
        struct uiw_wc w[BATCH];
        while (uiw_poll_cq(c->cq, BATCH, w) > 0)
            ;
        pthread_mutex_lock(&c->nic->zlock);
        if (uiw_destroy_cq(c->cq) != 0) {
            /* an event of it is queued on the channel: freed when it is taken */
            c->zombie = true;
            c->znext = c->nic->zombies;
            c->nic->zombies = c;
            pthread_mutex_unlock(&c->nic->zlock);
            return;
        }
        pthread_mutex_unlock(&c->nic->zlock);
    }
    free(c);
}

struct uiw__nic_conn *uiw__nic_connect(struct uiw__nic *n, const struct sockaddr *dst,
                                       const struct uiw__nic_conn_attr *a,
                                       int (*pre_recv)(struct uiw__nic_conn *, void *),
                                       void *pre_arg, int *err)
{
    int r = -ENOMEM;
    struct uiw__nic_conn *c = conn_new(n, a);
    if (!c)
        goto out;
    c->cmch = uiw_cm_create_channel();
    struct uiw_cm_id *id = c->cmch ? uiw_cm_create_id(c->cmch, n->ctx, c) : NULL;
    if (!id) {
        r = -errno;
        goto fail;
    }
    c->id = id;
    r = conn_qp(c, id, a);
    if (r)
        goto fail;
    if (pre_recv && (r = pre_recv(c, pre_arg)) != 0)
        goto fail;
    struct uiw_conn_param p;
    fill_param(&p, a, n->pcap_dir);
    r = uiw_cm_connect(id, dst, &p);
    if (r)
        goto fail;
    struct uiw_cm_event *ev = NULL; /* set when uiw_cm_get_event returns 0 */
    int wait = (int)(a->timeout_ms ? a->timeout_ms : 10000) + 1000;
    r = uiw_cm_get_event(c->cmch, &ev, wait);
    if (r == -EAGAIN)
        r = -ETIMEDOUT;
    if (r)
        goto fail;
    switch (ev->event) {
    case UIW_CM_EVENT_ESTABLISHED:
        c->peer_pd_len = ev->param.private_data_len > sizeof(c->peer_pd)
                             ? (uint16_t)sizeof(c->peer_pd)
                             : ev->param.private_data_len;
        if (c->peer_pd_len)
            memcpy(c->peer_pd, ev->param.private_data, c->peer_pd_len);
        r = 0;
        break;
    case UIW_CM_EVENT_REJECTED:
        r = -ECONNREFUSED;
        break;
    case UIW_CM_EVENT_UNREACHABLE:
    case UIW_CM_EVENT_CONNECT_ERROR:
        r = ev->status < 0 ? ev->status : -ECONNREFUSED;
        if (r <= UIW_E_BASE)
            r = -EPROTO;
        break;
    default:
        r = -ECONNRESET;
        break;
    }
    uiw_cm_ack_event(ev);
    if (r)
        goto fail;
    *err = 0;
    return c;
fail:
    if (c)
        conn_free(c);
out:
    *err = r;
    return NULL;
}

struct uiw__nic_listener *uiw__nic_listen(struct uiw__nic *n, const struct sockaddr *addr,
                                          int backlog, uint32_t handshake_ms,
                                          uint32_t user_timeout_ms, int *err)
{
    struct uiw__nic_listener *l = calloc(1, sizeof(*l));
    int r = -ENOMEM;
    if (!l)
        goto fail;
    l->nic = n;
    l->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (l->wake_fd < 0) {
        r = -errno;
        goto fail;
    }
    l->ch = uiw_cm_create_channel();
    l->id = l->ch ? uiw_cm_create_id(l->ch, n->ctx, NULL) : NULL;
    if (!l->id) {
        r = -errno;
        goto fail;
    }
    r = uiw_cm_bind_addr(l->id, addr);
    if (r == 0) {
        struct uiw_conn_param p = {.timeout_ms = handshake_ms,
                                   .tcp_user_timeout_ms = user_timeout_ms};
        r = uiw_cm_listen(l->id, backlog, &p);
    }
    if (r)
        goto fail;
    *err = 0;
    return l;
fail:
    if (l) {
        if (l->id)
            uiw_cm_destroy_id(l->id);
        if (l->ch)
            uiw_cm_destroy_channel(l->ch);
        if (l->wake_fd >= 0)
            close(l->wake_fd);
        free(l);
    }
    *err = r;
    return NULL;
}

uint16_t uiw__nic_listener_port(const struct uiw__nic_listener *l)
{
    const struct sockaddr *sa = uiw_cm_get_local_addr(l->id);
    if (!sa)
        return 0;
    if (sa->sa_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
    return ntohs(((const struct sockaddr_in *)sa)->sin_port);
}

int uiw__nic_listener_fd(const struct uiw__nic_listener *l)
{
    return uiw_cm_channel_fd(l->ch);
}

static void copy_addr(struct sockaddr_storage *out, const struct sockaddr *sa)
{
    memset(out, 0, sizeof(*out));
    if (!sa)
        return;
    memcpy(out, sa,
           sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
}

void uiw__nic_listener_wake(struct uiw__nic_listener *l)
{
    bell_ring(l->wake_fd);
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int uiw__nic_listener_event(struct uiw__nic_listener *l, int timeout_ms, struct uiw__nic_event *out)
{
    uint64_t end = timeout_ms > 0 ? mono_ms() + (uint64_t)timeout_ms : 0;
    for (;;) {
        struct uiw_cm_event *ev = NULL; /* set when uiw_cm_get_event returns 0 */
        int r = uiw_cm_get_event(l->ch, &ev, 0);
        if (r == -EAGAIN) {
            int wait = timeout_ms;
            if (timeout_ms > 0) {
                uint64_t now = mono_ms();
                wait = now >= end ? 0 : (int)(end - now);
            }
            /* the channel's fd: handshake work or events (the context's progress thread
             * drives the connections themselves) */
            if (wait == 0 || sleep_or_bell(uiw_cm_channel_fd(l->ch), l->wake_fd, wait) == 1)
                return -EAGAIN;
            continue;
        }
        if (r)
            return r;
        memset(out, 0, sizeof(*out));
        r = 0;
        switch (ev->event) {
        case UIW_CM_EVENT_CONNECT_REQUEST: {
            uint16_t n = ev->param.private_data_len;
            if (n > sizeof(l->pd))
                n = sizeof(l->pd);
            if (n)
                memcpy(l->pd, ev->param.private_data, n);
            out->type = UIW__NIC_EV_REQUEST;
            out->req = ev->id;
            out->private_data = n ? l->pd : NULL;
            out->private_data_len = n;
            copy_addr(&out->peer, uiw_cm_get_peer_addr(ev->id));
            break;
        }
        case UIW_CM_EVENT_ESTABLISHED:
            out->type = UIW__NIC_EV_ESTABLISHED;
            out->conn = ev->id->context;
            break;
        case UIW_CM_EVENT_DISCONNECTED:
        case UIW_CM_EVENT_CONNECT_ERROR:
            out->type = UIW__NIC_EV_DISCONNECTED;
            out->conn = ev->id->context;
            out->status = ev->event == UIW_CM_EVENT_DISCONNECTED
                              ? ev->status
                              : (ev->status ? ev->status : -ECONNRESET);
            break;
        default:
            r = -EAGAIN;
            break;
        }
        uiw_cm_ack_event(ev);
        if (r == 0 && out->type != UIW__NIC_EV_REQUEST && !out->conn)
            r = -EAGAIN; /* an id we did not accept (rejected, or failed in accept) */
        if (r == 0)
            return 0;
        if (timeout_ms == 0)
            return -EAGAIN;
    }
}

struct uiw__nic_conn *uiw__nic_accept(struct uiw__nic_listener *l, void *req,
                                      const struct uiw__nic_conn_attr *a,
                                      int (*pre_recv)(struct uiw__nic_conn *, void *),
                                      void *pre_arg, int *err)
{
    struct uiw_cm_id *id = req;
    id->verbs = l->nic->ctx;
    int r = -ENOMEM;
    struct uiw__nic_conn *c = conn_new(l->nic, a);
    if (!c)
        goto fail;
    c->listener_owned = true;
    r = conn_qp(c, id, a);
    if (r)
        goto fail;
    if (pre_recv && (r = pre_recv(c, pre_arg)) != 0)
        goto fail;
    id->context = c;
    struct uiw_conn_param p;
    fill_param(&p, a, l->nic->pcap_dir);
    r = uiw_cm_accept(id, &p);
    if (r) {
        id->context = NULL;
        goto fail;
    }
    *err = 0;
    return c;
fail:
    if (c) {
        c->id = id; /* conn_free destroys the id too */
        conn_free(c);
    } else {
        uiw_cm_reject(id, NULL, 0);
        uiw_cm_destroy_id(id);
    }
    *err = r;
    return NULL;
}

void uiw__nic_reject(struct uiw__nic_listener *l, void *req)
{
    (void)l;
    struct uiw_cm_id *id = req;
    uiw_cm_reject(id, NULL, 0);
    uiw_cm_destroy_id(id);
}

void uiw__nic_listener_close(struct uiw__nic_listener *l)
{
    if (!l)
        return;
    uiw_cm_destroy_id(l->id);
    struct uiw_cm_event *ev = NULL; /* set when uiw_cm_get_event returns 0 */
    while (uiw_cm_get_event(l->ch, &ev, 0) == 0) {
        if (ev->event == UIW_CM_EVENT_CONNECT_REQUEST) {
            struct uiw_cm_id *id = ev->id;
            uiw_cm_ack_event(ev);
            uiw_cm_reject(id, NULL, 0);
            uiw_cm_destroy_id(id);
            continue;
        }
        uiw_cm_ack_event(ev);
    }
    uiw_cm_destroy_channel(l->ch);
    close(l->wake_fd);
    free(l);
}

int uiw__nic_conn_info(struct uiw__nic_conn *c, struct uiw__nic_conn_info *info)
{
    memset(info, 0, sizeof(*info));
    copy_addr(&info->local, uiw_cm_get_local_addr(c->id));
    copy_addr(&info->peer, uiw_cm_get_peer_addr(c->id));
    struct uiw_cm_conn_info ci;
    int r = uiw_cm_query(c->id, &ci);
    info->qpn = c->qp ? uiw_qp_num(c->qp) : 0;
    info->log_id = uiw_cm_log_id(c->id);
    if (r == 0) {
        info->crc = ci.crc;
        info->ird = ci.ird;
        info->ord = ci.ord;
    }
    info->peer_pd_len = c->peer_pd_len;
    memcpy(info->peer_pd, c->peer_pd, c->peer_pd_len);
    return r;
}

void *uiw__nic_conn_ctx(const struct uiw__nic_conn *c)
{
    return c->uctx;
}

void uiw__nic_disconnect(struct uiw__nic_conn *c, bool abortive)
{
    if (abortive)
        uiw_modify_qp_state(c->qp, UIW_QPS_ERROR);
    else
        uiw_cm_disconnect(c->id);
}

bool uiw__nic_gone(struct uiw__nic_conn *c)
{
    struct uiw_qp_attr qa;
    if (uiw_query_qp(c->qp, &qa) != 0)
        return true;
    return qa.state != UIW_QPS_RTS;
}

bool uiw__nic_terminated(struct uiw__nic_conn *c)
{
    struct uiw_qp_attr qa;
    if (uiw_query_qp(c->qp, &qa) != 0)
        return false;
    return qa.term_sent || qa.term_received;
}

uint64_t uiw__nic_rx_stalled_ms(struct uiw__nic_conn *c)
{
    return c->qp ? uiw_qp_rx_stalled_ms(c->qp) : 0;
}

void uiw__nic_conn_destroy(struct uiw__nic_conn *c)
{
    if (c)
        conn_free(c);
}
