/*
 * Queue pairs: creation, the iWARP QP states (IDLE, RTS, CLOSING, TERMINATE, ERROR),
 * posting, in-order retirement of send work requests, flushing, and the start / close /
 * connection-lost entry points of rnic.h.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "rnic/engine.h"
#include "common/compiler.h"
#include "common/log.h"
#include "common/copy.h"
#include "common/pages.h"

UIW__DATAPATH static void qp_kick(struct uiw_qp *qp)
{
    struct uiw_context *ctx = qp->ctx;
    if (ctx->ops.qp_kick)
        ctx->ops.qp_kick(qp, ctx->io);
}

struct uiw_qp *uiw_create_qp(struct uiw_pd *pd, struct uiw_qp_init_attr *attr)
{
    struct uiw_srq *srq = attr ? attr->srq : NULL;
    if (srq) { /* the receive queue is the SRQ's (as ibv: the RQ caps are ignored) */
        attr->cap.max_recv_wr = 0;
        attr->cap.max_recv_sge = 0;
    }
    if (!pd || !attr || !attr->send_cq || !attr->recv_cq || attr->cap.max_send_wr < 1 ||
        attr->cap.max_send_wr > UIW__MAX_QP_WR || (!srq && attr->cap.max_recv_wr < 1) ||
        attr->cap.max_recv_wr > UIW__MAX_QP_WR || attr->cap.max_send_sge > UIW__MAX_SGE ||
        attr->cap.max_recv_sge > UIW__MAX_SGE || attr->cap.max_inline_data > UIW__MAX_INLINE ||
        attr->max_ird > UIW__MAX_IRD_ORD || attr->max_ord > UIW__MAX_IRD_ORD ||
        attr->send_cq->ctx != pd->context || attr->recv_cq->ctx != pd->context ||
        (srq && srq->ctx != pd->context)) {
        errno = EINVAL;
        return NULL;
    }
    if (!uiw__res_take(pd->context, UIW__RES_QP)) {
        errno = ENOMEM;
        return NULL;
    }
    /* rings of a power of two, so free-running indices stay right when they wrap */
    uint32_t sq_size = 1;
    while (sq_size < attr->cap.max_send_wr)
        sq_size <<= 1;
    /* the send queue right behind the QP: entry 0, which one WR at a time always uses (the
     * SQ rewinds when empty), shares a page with the QP's hot fields */
    size_t qp_bytes = sizeof(struct uiw_qp) + (size_t)sq_size * sizeof(struct uiw__swqe);
    /* in pages of their own, zeroed: an entry costs memory once used (entry 0 mostly) */
    struct uiw_qp *qp = uiw__pages_alloc(qp_bytes);
    if (!qp) {
        uiw__res_put(pd->context, UIW__RES_QP);
        errno = ENOMEM;
        return NULL;
    }
    qp->sq_size = sq_size;
    qp->sq = (struct uiw__swqe *)(void *)(qp + 1);
    qp->ctx = pd->context;
    qp->pd = pd;
    qp->qp_context = attr->qp_context;
    qp->send_cq = attr->send_cq;
    qp->recv_cq = attr->recv_cq;
    attr->cap.max_send_sge = UIW__MAX_SGE;
    if (!srq)
        attr->cap.max_recv_sge = UIW__MAX_SGE;
    qp->cap = attr->cap;
    qp->srq = srq;
    qp->sig_all = attr->sq_sig_all != 0;
    qp->max_ird = attr->max_ird ? attr->max_ird : UIW_DEFAULT_IRD_ORD;
    qp->max_ord = attr->max_ord ? attr->max_ord : UIW_DEFAULT_IRD_ORD;
    qp->rq_size = 1;
    while (qp->rq_size < attr->cap.max_recv_wr)
        qp->rq_size <<= 1;
    qp->irq_size = UIW__MAX_IRD_ORD;
    qp->rq = uiw__pages_alloc(qp->rq_size * sizeof(*qp->rq));
    qp->irq = uiw__pages_alloc(qp->irq_size * sizeof(*qp->irq));
    qp->stage = uiw__pages_alloc(UIW__RX_STAGE_CAP);
    /* an entry's inline buffer is set when a WR is posted in it (uiw_post_send) */
    if (qp->cap.max_inline_data)
        qp->inl = uiw__pages_alloc((size_t)qp->sq_size * qp->cap.max_inline_data);
    if (!qp->rq || !qp->irq || !qp->stage || (qp->cap.max_inline_data && !qp->inl)) {
        uiw__pages_free(qp->rq, qp->rq_size * sizeof(*qp->rq));
        uiw__pages_free(qp->irq, qp->irq_size * sizeof(*qp->irq));
        uiw__pages_free(qp->stage, UIW__RX_STAGE_CAP);
        uiw__pages_free(qp->inl, (size_t)qp->sq_size * qp->cap.max_inline_data);
        uiw__pages_free(qp, qp_bytes);
        uiw__res_put(pd->context, UIW__RES_QP);
        errno = ENOMEM;
        return NULL;
    }
    qp->state = UIW_QPS_IDLE;
    qp->qpn = atomic_fetch_add(&qp->ctx->next_qpn, 1);
    qp->send_msn = qp->rreq_msn = 1;
    qp->rx_send_msn = qp->rx_rreq_msn = 1;
    uiw__lock_init_plain(&qp->lock, qp->ctx->attr.single_threaded);
    atomic_fetch_add(&qp->send_cq->nqp, 1);
    atomic_fetch_add(&qp->recv_cq->nqp, 1);
    atomic_fetch_add(&((struct uiw__pd *)pd)->nqp, 1);
    if (srq)
        atomic_fetch_add(&srq->nqp, 1);
    uiw__ctx_get(qp->ctx);
    uiw__lock_take(&qp->ctx->qps_lock);
    qp->ctx_next = qp->ctx->qps;
    if (qp->ctx_next)
        qp->ctx_next->ctx_prev = qp;
    qp->ctx->qps = qp;
    uiw__lock_give(&qp->ctx->qps_lock);
    return qp;
}

int uiw_destroy_qp(struct uiw_qp *qp)
{
    if (!qp)
        return -EINVAL;
    struct uiw_context *ctx = qp->ctx;
    uiw__lock_take(&qp->lock);
    qp->destroying = true;
    if (qp->started && (qp->state == UIW_QPS_RTS || qp->state == UIW_QPS_CLOSING))
        uiw__qp_fail(qp, UIW_E_RNIC_ABORT); /* queues a Terminate */
    uiw__qp_unlock(qp);
    if (ctx->ops.qp_destroy && qp->io)
        ctx->ops.qp_destroy(qp, ctx->io); /* io sends what it can and closes the socket */
    uiw__lock_take(&qp->lock);
    if (qp->state != UIW_QPS_ERROR && qp->state != UIW_QPS_IDLE) {
        qp->state = UIW_QPS_ERROR;
        uiw__qp_flush(qp);
    }
    uiw__qp_unlock(qp);
    uiw__lock_take(&ctx->qps_lock);
    if (qp->ctx_prev)
        qp->ctx_prev->ctx_next = qp->ctx_next;
    else
        ctx->qps = qp->ctx_next;
    if (qp->ctx_next)
        qp->ctx_next->ctx_prev = qp->ctx_prev;
    uiw__lock_take(&qp->lock);
    uiw__qp_stat_flush(qp);
    uiw__lock_give(&qp->lock);
    uiw__lock_give(&ctx->qps_lock);
    atomic_fetch_sub(&qp->send_cq->nqp, 1);
    atomic_fetch_sub(&qp->recv_cq->nqp, 1);
    atomic_fetch_sub(&((struct uiw__pd *)qp->pd)->nqp, 1);
    if (qp->srq)
        atomic_fetch_sub(&qp->srq->nqp, 1);
    uiw__tx_free(qp);
    uiw__pages_free(qp->inl, (size_t)qp->sq_size * qp->cap.max_inline_data);
    uiw__pages_free(qp->rq, qp->rq_size * sizeof(*qp->rq));
    uiw__pages_free(qp->irq, qp->irq_size * sizeof(*qp->irq));
    uiw__pages_free(qp->stage, UIW__RX_STAGE_CAP);
    uiw__res_put(ctx, UIW__RES_QP);
    uiw__ctx_put(ctx);
    uiw__pages_free(qp, sizeof(struct uiw_qp) + (size_t)qp->sq_size * sizeof(struct uiw__swqe));
    return 0;
}

void *uiw_qp_context(const struct uiw_qp *qp)
{
    return qp ? qp->qp_context : NULL;
}

uint32_t uiw_qp_num(const struct uiw_qp *qp)
{
    return qp ? qp->qpn : 0;
}

int uiw_query_qp(struct uiw_qp *qp, struct uiw_qp_attr *a)
{
    if (!qp || !a)
        return -EINVAL;
    memset(a, 0, sizeof(*a));
    uiw__lock_take(&qp->lock);
    a->state = qp->state;
    a->cap = qp->cap;
    a->qp_num = qp->qpn;
    if (qp->started) {
        a->ird = qp->cp.ird;
        a->ord = qp->cp.ord;
        a->mulpdu = qp->cp.mulpdu;
        a->mpa_rev = qp->cp.mpa_rev;
        a->crc = qp->cp.crc;
        a->markers_tx = qp->cp.markers_tx;
        a->markers_rx = qp->cp.markers_rx;
    } else {
        a->ird = qp->max_ird;
        a->ord = qp->max_ord;
    }
    a->term_sent = qp->term_sent;
    a->term_received = qp->term_received;
    a->term_siw_order = qp->term_received && qp->term_in.siw_order;
    a->term_ambiguous = qp->term_received && qp->term_in.ambiguous;
    a->term_layer = qp->tl;
    a->term_etype = qp->te;
    a->term_code = qp->tc;
    uiw__qp_unlock(qp);
    return 0;
}

struct uiw_context *uiw__qp_context(const struct uiw_qp *qp)
{
    return qp->ctx;
}

void uiw__qp_set_io(struct uiw_qp *qp, void *io_conn)
{
    uiw__lock_take(&qp->lock);
    qp->io = io_conn;
    uiw__qp_unlock(qp);
}

UIW__DATAPATH void *uiw__qp_io(const struct uiw_qp *qp)
{
    return qp->io;
}

void uiw__qp_get_limits(const struct uiw_qp *qp, uint16_t *max_ird, uint16_t *max_ord)
{
    if (max_ird)
        *max_ird = qp->max_ird;
    if (max_ord)
        *max_ord = qp->max_ord;
}

enum uiw_qp_state uiw__qp_state(struct uiw_qp *qp)
{
    uiw__lock_take(&qp->lock);
    enum uiw_qp_state s = qp->state;
    uiw__qp_unlock(qp);
    return s;
}

void uiw__qp_stat_flush(struct uiw_qp *qp)
{
    for (int i = 0; i < UIW__STAT_COUNT; i++) {
        if (qp->st[i]) {
            uiw__stat_add(qp->ctx, (enum uiw__stat)i, qp->st[i]);
            qp->st[i] = 0;
        }
    }
}

void uiw__async(struct uiw_qp *qp, enum uiw_event_type t, int code)
{
    struct uiw_async_event ev = {.event_type = t,
                                 .qp = qp,
                                 .code = code,
                                 .term_layer = qp->tl,
                                 .term_etype = qp->te,
                                 .term_code = qp->tc};
    uiw__async_post(qp->ctx, &ev);
}

/* ---------------------------------------------------------------- start */

int uiw__qp_start(struct uiw_qp *qp, const struct uiw__conn_params *p)
{
    if (!qp || !p || (p->mpa_rev != 1 && p->mpa_rev != 2) ||
        p->mulpdu < UIW_DDP_UNTAGGED_HDR_LEN + UIW_RDMAP_READ_REQ_LEN + 4 || p->rtr > UIW__RTR_READ)
        return -EINVAL;
    uiw__lock_take(&qp->lock);
    if (qp->state != UIW_QPS_IDLE || qp->started) {
        uiw__qp_unlock(qp);
        return -EBUSY;
    }
    qp->cp = *p;
    if (qp->cp.ird > UIW__MAX_IRD_ORD)
        qp->cp.ird = UIW__MAX_IRD_ORD;
    if (qp->cp.ord > UIW__MAX_IRD_ORD)
        qp->cp.ord = UIW__MAX_IRD_ORD;
    int r = uiw__tx_alloc(qp);
    if (r < 0) {
        uiw__qp_unlock(qp);
        return r;
    }
    uiw__rx_init(qp);
    qp->started = true;
    qp->state = UIW_QPS_RTS;
    qp->tx_hold = !p->initiator;
    if (p->rtr != UIW__RTR_NONE) {
        if (p->initiator)
            qp->rtr_send_pending = true;
        else
            qp->rtr_wait_rx = true;
    }
    uiw__async(qp, UIW_EVENT_COMM_EST, 0);
    uiw__qp_unlock(qp);
    return 0;
}

/* ---------------------------------------------------------------- completion */

UIW__DATAPATH static enum uiw_wc_opcode wc_opcode(uint8_t op)
{
    switch (op) {
    case UIW_WR_RDMA_WRITE:
        return UIW_WC_RDMA_WRITE;
    case UIW_WR_RDMA_READ:
        return UIW_WC_RDMA_READ;
    case UIW_WR_LOCAL_INV:
        return UIW_WC_LOCAL_INV;
    case UIW_WR_REG_MR:
        return UIW_WC_REG_MR;
    default:
        return UIW_WC_SEND;
    }
}

UIW__DATAPATH static void push(struct uiw_qp *qp, struct uiw_cq *cq, const struct uiw_wc *wc)
{
    if (uiw__cq_push(cq, wc) < 0 && qp->state != UIW_QPS_ERROR && qp->state != UIW_QPS_TERMINATE &&
        qp->started)
        uiw__qp_fail(qp, UIW_E_RNIC_CQ_OVERFLOW);
}

UIW__DATAPATH void uiw__sq_retire(struct uiw_qp *qp)
{
    while (qp->sq_head != qp->sq_tail) {
        struct uiw__swqe *w = &qp->sq[qp->sq_head & (qp->sq_size - 1)];
        if (w->state != UIW__SWQE_DONE)
            break;
        qp->sq_head++;
        if (w->status != UIW_WC_SUCCESS || (w->flags & UIW_SEND_SIGNALED) || qp->sig_all) {
            struct uiw_wc wc = {.wr_id = w->wr_id,
                                .status = (enum uiw_wc_status)w->status,
                                .opcode = wc_opcode(w->opcode),
                                .byte_len = w->opcode == UIW_WR_RDMA_READ ? w->len : 0,
                                .qp_num = qp->qpn,
                                .vendor_err = w->vendor_err};
            push(qp, qp->send_cq, &wc);
        }
    }
    /* Empty: start again at entry 0, so that one WR at a time always reuses the same
     * (cache- and TLB-warm) entry. No index of a retired WR is kept anywhere. */
    if (qp->sq_head == qp->sq_tail)
        qp->sq_head = qp->sq_tx = qp->sq_tail = 0;
    uiw__qp_check_close(qp);
}

UIW__DATAPATH void uiw__qp_complete_recv(struct uiw_qp *qp, struct uiw__rqe *r, int status,
                                         uint32_t len, unsigned flags, uint32_t inv, int vendor)
{
    /* r is always the RQ head. The status is opaque to the optimiser: with the constant
     * opcode beside it, a constant status (a successful receive's, inlined) makes the
     * compiler load the pair from .rodata, a page the message's path touches for nothing
     * else (a TLB miss after every system call on a kernel with page-table isolation) */
    __asm__("" : "+r"(status));
    struct uiw_wc wc = {.wr_id = r->wr_id,
                        .status = (enum uiw_wc_status)status,
                        .opcode = UIW_WC_RECV,
                        .byte_len = len,
                        .invalidated_rkey = inv,
                        .wc_flags = flags,
                        .qp_num = qp->qpn,
                        .vendor_err = vendor};
    qp->rq_head++;
    if (r->len >= UIW__RX_DIRECT_MIN)
        uiw__count_add(&qp->rq_wide, -1);
    push(qp, qp->recv_cq, &wc);
}

/* Flush every outstanding WR (the caller set the QP state). */
void uiw__qp_flush(struct uiw_qp *qp)
{
    uiw__tx_drop_unsent(qp);
    for (uint32_t i = qp->sq_head; i != qp->sq_tail; i++) {
        struct uiw__swqe *w = &qp->sq[i & (qp->sq_size - 1)];
        if (w->state != UIW__SWQE_DONE) {
            /* a LOCAL_INV done but for its wait (tx.c) succeeded if that is over (one that
             * may still have a read of io's into its region under way is flushed) */
            bool inv_done = w->opcode == UIW_WR_LOCAL_INV && w->state == UIW__SWQE_TX &&
                            !w->inv_reads && !uiw__tx_pinned(qp, w->inv_rkey >> 8, false);
            w->state = UIW__SWQE_DONE;
            w->status = inv_done ? UIW_WC_SUCCESS : UIW_WC_WR_FLUSH_ERR;
        }
    }
    qp->sq_tx = qp->sq_tail;
    qp->orq_count = 0;
    atomic_store_explicit(&qp->orq_wide, 0, memory_order_relaxed);
    qp->rtr_read_pending = false;
    uiw__sq_retire(qp);
    while (qp->rq_head != qp->rq_tail)
        uiw__qp_complete_recv(qp, &qp->rq[qp->rq_head & (qp->rq_size - 1)], UIW_WC_WR_FLUSH_ERR, 0,
                              0, 0, 0);
    qp->irq_count = 0;
    if (qp->srq && !qp->last_wqe_sent && !qp->destroying) {
        /* the receive it took (if any) is flushed; it takes no more from the SRQ */
        qp->last_wqe_sent = true;
        uiw__async(qp, UIW_EVENT_QP_LAST_WQE_REACHED, 0);
    }
}

/* Give the oldest started send WR the status st (if any is in progress). */
static void fail_inflight(struct uiw_qp *qp, int st, int vendor)
{
    for (uint32_t i = qp->sq_head; i != qp->sq_tail; i++) {
        struct uiw__swqe *w = &qp->sq[i & (qp->sq_size - 1)];
        if (w->state == UIW__SWQE_DONE)
            continue;
        if (w->state == UIW__SWQE_QUEUED)
            return;
        w->state = UIW__SWQE_DONE;
        w->status = st;
        w->vendor_err = vendor;
        return;
    }
}

void uiw__qp_fail(struct uiw_qp *qp, int code)
{
    uiw__qp_fail_quoting(qp, code, NULL);
}

void uiw__qp_fail_quoting(struct uiw_qp *qp, int code, const struct uiw__term_quote *q)
{
    if (qp->state == UIW_QPS_TERMINATE || qp->state == UIW_QPS_ERROR)
        return;
    const struct uiw__term_map *m = uiw__term_lookup(code, q ? (int)q->tagged : -1);
    /* the receive side goes on (a Terminate of the peer's may still arrive: rx.c) unless the
     * failure came from it (rx_fail stops it) */
    qp->tl = m->layer;
    qp->te = m->etype;
    qp->tc = m->ecode;
    /* a responder that has validated no FPDU of the initiator sends nothing, a Terminate
     * neither (an error in the initiator's first FPDU released it: rx.c) */
    bool connected = qp->started && !qp->tx_hold;
    if (connected) {
        struct uiw_terminate *t = &qp->term_out;
        memset(t, 0, sizeof(*t));
        t->layer = m->layer;
        t->etype = m->etype;
        t->code = m->ecode;
        if ((m->hdrct & UIW_TERM_FLAG_M) && q && q->ddp) {
            t->hdrct |= UIW_TERM_FLAG_M;
            t->ddp_seg_len = q->seg_len;
        }
        if ((m->hdrct & UIW_TERM_FLAG_D) && q && q->ddp && q->ddp_len <= sizeof(t->ddp_hdr)) {
            t->hdrct |= UIW_TERM_FLAG_D;
            memcpy(t->ddp_hdr, q->ddp, q->ddp_len);
            t->ddp_hdr_len = q->ddp_len;
        }
        if ((m->hdrct & UIW_TERM_FLAG_R) && q && q->rdma) {
            t->hdrct |= UIW_TERM_FLAG_R;
            memcpy(t->rdma_hdr, q->rdma, UIW_RDMAP_READ_REQ_LEN);
        }
        qp->term_pending = true;
        qp->state = UIW_QPS_TERMINATE;
        UIW__LOG(code == UIW_E_RNIC_ABORT ? UIW__LOG_INFO : UIW__LOG_WARN, qp->cp.conn_id, qp->qpn,
                 "%s (%s): sending Terminate %s (layer %u etype %u code %u)", uiw_errname(code),
                 uiw_strerror(code), uiw_terminate_name(m->layer, m->etype, m->ecode), m->layer,
                 m->etype, m->ecode);
    } else {
        qp->state = UIW_QPS_ERROR;
        qp->want_close = true;
        UIW__LOG(UIW__LOG_WARN, qp->cp.conn_id, qp->qpn, "%s (%s): closing, no Terminate (%s)",
                 uiw_errname(code), uiw_strerror(code),
                 qp->started ? "no FPDU of the initiator validated yet" : "not connected");
    }
    if (m->async >= 0)
        uiw__async(qp, (enum uiw_event_type)m->async, code);
    uiw__qp_flush(qp);
}

/* A Terminate from the peer: no more sends (RFC 5040 5.4 / 6.2.1). */
void uiw__qp_term_received(struct uiw_qp *qp, const struct uiw_terminate *t)
{
    if (qp->state == UIW_QPS_ERROR)
        return;
    qp->term_received = true;
    qp->term_in = *t;
    UIW__LOG(UIW__LOG_WARN, qp->cp.conn_id, qp->qpn,
             "Terminate received: %s (layer %u etype %u code %u%s)",
             uiw_terminate_name(t->layer, t->etype, t->code), t->layer, t->etype, t->code,
             t->siw_order ? ", Linux siw's bit order" : "");
    qp->tl = t->layer;
    qp->te = t->etype;
    qp->tc = t->code;
    qp->rx_failed = true;
    uiw__qstat(qp, UIW__STAT_TERM_RECV, 1);
    fail_inflight(qp, uiw__term_remote_status(t), UIW_E_RNIC_TERM_RECEIVED);
    qp->term_pending = false;
    qp->state = UIW_QPS_ERROR;
    qp->want_close = true;
    uiw__async(qp, UIW_EVENT_TERM_RECEIVED, UIW_E_RNIC_TERM_RECEIVED);
    uiw__qp_flush(qp);
}

void uiw__ctx_stag_gone(struct uiw_context *ctx, uint32_t idx)
{
    uiw__lock_take(&ctx->qps_lock);
    for (struct uiw_qp *qp = ctx->qps; qp; qp = qp->ctx_next) {
        uiw__lock_take(&qp->lock);
        /* io has each such QP's TX work pending already (a blocked socket or a kick), which
         * now sends the Terminate */
        uiw__tx_stag_gone(qp, idx);
        uiw__qp_unlock(qp);
    }
    uiw__lock_give(&ctx->qps_lock);
}

void uiw__ctx_rx_quiesce(struct uiw_context *ctx, uint32_t g)
{
    uiw__lock_take(&ctx->qps_lock);
    for (struct uiw_qp *qp = ctx->qps; qp; qp = qp->ctx_next) {
        /* a copy from the staging ring checks and places in one hold of the lock */
        uiw__lock_take(&qp->lock);
        uiw__qp_unlock(qp);
        /* a read of io's into iovecs checked before: it ends in a system call's time */
        for (bool waited = false;; waited = true) {
            uint32_t p = atomic_load_explicit(&qp->rx_placing, memory_order_seq_cst);
            if (p == 0 || (int32_t)(p - g) >= 0)
                break;
            if (!waited && uiw__dereg_wait_hook)
                uiw__dereg_wait_hook(ctx, UIW__DEREG_WAIT_READ);
            sched_yield();
        }
    }
    uiw__lock_give(&ctx->qps_lock);
}

bool uiw__ctx_stag_unpin(struct uiw_context *ctx, uint32_t idx)
{
    bool done = true;
    uiw__lock_take(&ctx->qps_lock);
    for (struct uiw_qp *qp = ctx->qps; qp; qp = qp->ctx_next) {
        uiw__lock_take(&qp->lock);
        done = uiw__tx_unpin(qp, idx) == 0 && done;
        uiw__qp_unlock(qp);
    }
    uiw__lock_give(&ctx->qps_lock);
    return done;
}

int uiw__qp_wake(struct uiw_qp *qp)
{
    uiw__lock_take(&qp->lock);
    int r = 0;
    if (qp->started && qp->cp.initiator &&
        (qp->state == UIW_QPS_RTS || qp->state == UIW_QPS_CLOSING) && qp->ftx.stream_pos > 0 &&
        qp->frx.stream_pos == 0) {
        qp->wake_pending = true;
        r = 1;
    }
    uiw__qp_unlock(qp);
    return r;
}

void uiw__qp_check_close(struct uiw_qp *qp)
{
    /* a held responder can send nothing: what it has queued is flushed with the close */
    if (qp->state == UIW_QPS_CLOSING &&
        (qp->tx_hold ||
         (qp->sq_head == qp->sq_tail && qp->irq_count == 0 && qp->slot_head == qp->slot_tail &&
          !qp->rtr_send_pending && !qp->wake_pending)))
        qp->want_close = true;
}

void uiw__qp_conn_lost(struct uiw_qp *qp, int reason)
{
    uiw__lock_take(&qp->lock);
    if (qp->state == UIW_QPS_ERROR && !qp->started) {
        uiw__qp_unlock(qp);
        return;
    }
    enum uiw_qp_state old = qp->state;
    uiw__tx_drop_all(qp); /* nothing goes out any more: the slot under way neither */
    if (old != UIW_QPS_ERROR) {
        if (reason != 0)
            fail_inflight(qp, UIW_WC_RETRY_EXC_ERR, UIW_E_RNIC_CONN_LOST);
        qp->state = UIW_QPS_ERROR;
        qp->rx_failed = true;
        qp->term_pending = false;
        uiw__qp_flush(qp);
        if (reason != 0 && old == UIW_QPS_RTS)
            uiw__async(qp, UIW_EVENT_QP_FATAL, reason);
    }
    if (qp->started) {
        qp->started = false; /* conn_lost reported once */
        uiw__async(qp, UIW_EVENT_CONN_CLOSED, reason);
    }
    qp->want_close = true;
    uiw__qp_unlock(qp);
}

int uiw__qp_close(struct uiw_qp *qp, bool graceful)
{
    uiw__lock_take(&qp->lock);
    if (qp->state == UIW_QPS_IDLE) {
        uiw__qp_unlock(qp);
        return -EINVAL;
    }
    if (graceful) {
        if (qp->state == UIW_QPS_RTS)
            qp->state = UIW_QPS_CLOSING;
        uiw__qp_check_close(qp);
    } else if (qp->state == UIW_QPS_RTS || qp->state == UIW_QPS_CLOSING) {
        uiw__qp_fail(qp, UIW_E_RNIC_ABORT);
    } else if (qp->state == UIW_QPS_ERROR) {
        qp->want_close = true;
    }
    uiw__qp_unlock(qp);
    return 0;
}

int uiw_modify_qp_state(struct uiw_qp *qp, enum uiw_qp_state state)
{
    if (!qp || state != UIW_QPS_ERROR)
        return -EINVAL;
    uiw__lock_take(&qp->lock);
    if (qp->state == UIW_QPS_IDLE) {
        qp->state = UIW_QPS_ERROR;
        uiw__qp_flush(qp);
    } else if (qp->state == UIW_QPS_RTS || qp->state == UIW_QPS_CLOSING) {
        uiw__qp_fail(qp, UIW_E_RNIC_ABORT);
    }
    uiw__qp_unlock(qp);
    qp_kick(qp);
    return 0;
}

unsigned uiw__qp_want(struct uiw_qp *qp)
{
    uiw__lock_take(&qp->lock);
    unsigned w = uiw__qp_want_locked(qp);
    uiw__qp_unlock(qp);
    return w;
}

UIW__DATAPATH unsigned uiw__qp_want_locked(const struct uiw_qp *qp)
{
    unsigned w = 0;
    if (qp->started && uiw__tx_pending(qp))
        w |= UIW__WANT_TX;
    if (qp->want_close && !(w & UIW__WANT_TX))
        w |= UIW__WANT_CLOSE;
    if (qp->started && !qp->rx_failed && (qp->state == UIW_QPS_RTS || qp->state == UIW_QPS_CLOSING))
        w |= UIW__WANT_RX;
    return w;
}

/* ---------------------------------------------------------------- posting */

UIW__DATAPATH static bool is_send(unsigned op)
{
    return op == UIW_WR_SEND || op == UIW_WR_SEND_WITH_INV || op == UIW_WR_SEND_WITH_SE ||
           op == UIW_WR_SEND_WITH_SE_AND_INV;
}

UIW__DATAPATH static bool known_op(unsigned op)
{
    switch (op) {
    case UIW_WR_RDMA_WRITE:
    case UIW_WR_RDMA_READ:
    case UIW_WR_SEND:
    case UIW_WR_SEND_WITH_INV:
    case UIW_WR_SEND_WITH_SE:
    case UIW_WR_SEND_WITH_SE_AND_INV:
    case UIW_WR_LOCAL_INV:
    case UIW_WR_REG_MR:
        return true;
    default:
        return false;
    }
}

/* The bytes of a WR's n SGEs (at most max of them): -EINVAL if they are too many (or no
 * list) or add up beyond 4 GiB - 1. */
UIW__DATAPATH static int64_t sge_total(const struct uiw_sge *sg, int n, uint32_t max)
{
    if (n < 0 || (uint32_t)n > max || (n && !sg))
        return -EINVAL;
    uint64_t sum = 0;
    for (int i = 0; i < n; i++)
        sum += sg[i].length;
    return sum > UINT32_MAX ? -EINVAL : (int64_t)sum;
}

UIW__DATAPATH static int check_wr(const struct uiw_qp *qp, const struct uiw_send_wr *wr,
                                  uint64_t *total)
{
    int64_t t = sge_total(wr->sg_list, wr->num_sge, qp->cap.max_send_sge);
    if (!known_op(wr->opcode) || t < 0)
        return -EINVAL;
    uint64_t sum = (uint64_t)t;
    if (wr->opcode == UIW_WR_RDMA_READ && wr->num_sge > 1)
        return -EINVAL; /* an iWARP Read has one sink STag */
    if (wr->send_flags & UIW_SEND_INLINE) {
        if (!(is_send(wr->opcode) || wr->opcode == UIW_WR_RDMA_WRITE) ||
            sum > qp->cap.max_inline_data)
            return -EINVAL;
    }
    if (wr->opcode == UIW_WR_REG_MR && !wr->wr.reg.mr)
        return -EINVAL;
    *total = sum;
    return 0;
}

/* Start the transmission of the queued WRs if kick (qp->lock held; released here). A
 * local operation at the head of the queue runs now, while the caller waits (the STag is
 * valid or invalid when the call returns). FPDUs are built by uiw__qp_tx_next_locked
 * only: offered to io under this lock hold (no second lock of the QP on the way to the
 * socket), which builds and sends them now if it can. */
UIW__DATAPATH static void sq_ring(struct uiw_qp *qp, bool kick)
{
    if (kick) {
        qp->tx_held = false;
        uiw__tx_run_local(qp);
    }
    if (kick && qp->iov_per_slot && (qp->slot_head != qp->slot_tail || !uiw__tx_idle(qp)) &&
        qp->ctx->ops.qp_send && qp->ctx->ops.qp_send(qp, qp->ctx->io))
        kick = false;
    uiw__qp_unlock(qp);
    if (kick)
        qp_kick(qp);
}

UIW__DATAPATH int uiw_post_send(struct uiw_qp *qp, struct uiw_send_wr *wr,
                                struct uiw_send_wr **bad_wr)
{
    const struct uiw_send_wr *last = NULL;
    if (!qp || !wr) {
        if (bad_wr)
            *bad_wr = wr;
        return -EINVAL;
    }
    int r = 0;
    bool kick = false;
    uiw__lock_take(&qp->lock);
    for (; wr; wr = wr->next) {
        uint64_t total = 0;
        if (qp->state == UIW_QPS_IDLE) {
            r = -ENOTCONN;
            break;
        }
        r = check_wr(qp, wr, &total);
        if (r < 0)
            break;
        if (qp->sq_tail - qp->sq_head >= qp->cap.max_send_wr) {
            r = -ENOMEM;
            break;
        }
        uint32_t idx = qp->sq_tail & (qp->sq_size - 1);
        struct uiw__swqe *w = &qp->sq[idx];
        /* every field the engine reads for this opcode (no memset of the whole entry:
         * the SGEs past num_sge and the fast-register fields of other opcodes are unread) */
        uint8_t *inl = qp->inl ? qp->inl + (size_t)idx * qp->cap.max_inline_data : NULL;
        w->inline_buf = inl;
        w->state = UIW__SWQE_QUEUED;
        w->off = 0;
        w->msn = 0;
        w->status = 0;
        w->vendor_err = 0;
        w->wr_id = wr->wr_id;
        w->opcode = (uint8_t)wr->opcode;
        w->flags = wr->send_flags;
        w->num_sge = (uint8_t)wr->num_sge;
        w->inv_rkey = wr->invalidate_rkey;
        w->remote_addr = wr->wr.rdma.remote_addr;
        w->rkey = wr->wr.rdma.rkey;
        w->len = (uint32_t)total;
        if (wr->num_sge)
            uiw__copy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(w->sge[0]));
        if (wr->opcode == UIW_WR_REG_MR) {
            w->reg_mr = wr->wr.reg.mr;
            w->reg_key = wr->wr.reg.key;
            w->reg_addr = wr->wr.reg.addr;
            w->reg_len = wr->wr.reg.length;
            w->reg_access = wr->wr.reg.access;
        }
        if ((wr->send_flags & UIW_SEND_INLINE) && total) {
            uint32_t o = 0;
            for (int i = 0; i < wr->num_sge; i++) {
                uiw__copy(inl + o, (const void *)(uintptr_t)wr->sg_list[i].addr,
                          wr->sg_list[i].length);
                o += wr->sg_list[i].length;
            }
            uiw__qstat(qp, UIW__STAT_COPIED, total);
        }
        qp->sq_tail++;
        last = wr;
        if (qp->state != UIW_QPS_RTS) {
            /* CLOSING, TERMINATE, ERROR: flushed at once */
            w->state = UIW__SWQE_DONE;
            w->status = UIW_WC_WR_FLUSH_ERR;
            if (qp->sq_tx == qp->sq_tail - 1)
                qp->sq_tx = qp->sq_tail;
            uiw__sq_retire(qp);
        } else {
            kick = true;
        }
    }
    if (r < 0 && bad_wr)
        *bad_wr = wr;
    /* a list that says more follow waits for their doorbell (unless one failed: then the
     * caller may not post again) */
    if (kick && r == 0 && last && (last->send_flags & UIW_SEND_MORE)) {
        qp->tx_held = true;
        kick = false;
    }
    sq_ring(qp, kick);
    return r;
}

UIW__DATAPATH int uiw_post_send_flush(struct uiw_qp *qp)
{
    if (!qp)
        return -EINVAL;
    uiw__lock_take(&qp->lock);
    /* nothing left to send (a service pass sent it): no pass to start */
    bool held = qp->tx_held && qp->state == UIW_QPS_RTS &&
                (qp->slot_head != qp->slot_tail || !uiw__tx_idle(qp));
    qp->tx_held = false;
    sq_ring(qp, held);
    return 0;
}

UIW__DATAPATH int uiw__rqe_build(struct uiw__rqe *q, const struct uiw_recv_wr *wr, uint32_t max_sge)
{
    int64_t sum = sge_total(wr->sg_list, wr->num_sge, max_sge);
    if (sum < 0)
        return -EINVAL;
    memset(q, 0, sizeof(*q));
    q->wr_id = wr->wr_id;
    q->num_sge = (uint8_t)wr->num_sge;
    q->len = (uint32_t)sum;
    if (wr->num_sge)
        uiw__copy(q->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(q->sge[0]));
    return 0;
}

UIW__DATAPATH int uiw_post_recv(struct uiw_qp *qp, struct uiw_recv_wr *wr,
                                struct uiw_recv_wr **bad_wr)
{
    if (!qp || !wr) {
        if (bad_wr)
            *bad_wr = wr;
        return -EINVAL;
    }
    int r = 0;
    uiw__lock_take(&qp->lock);
    for (; wr; wr = wr->next) {
        struct uiw__rqe e;
        r = qp->srq ? -EINVAL : uiw__rqe_build(&e, wr, qp->cap.max_recv_sge);
        if (r < 0)
            break;
        if (qp->rq_tail - qp->rq_head >= qp->cap.max_recv_wr) {
            r = -ENOMEM;
            break;
        }
        struct uiw__rqe *q = &qp->rq[qp->rq_tail & (qp->rq_size - 1)];
        *q = e;
        if (q->len >= UIW__RX_DIRECT_MIN)
            uiw__count_add(&qp->rq_wide, 1);
        qp->rq_tail++;
        if (qp->state == UIW_QPS_TERMINATE || qp->state == UIW_QPS_ERROR)
            uiw__qp_complete_recv(qp, q, UIW_WC_WR_FLUSH_ERR, 0, 0, 0, 0);
        else
            (void)uiw__rqe_resolve(qp, q); /* ahead; a failure is the placement's to report */
    }
    if (r < 0 && bad_wr)
        *bad_wr = wr;
    uiw__qp_unlock(qp);
    return r;
}

int uiw_discard_recv(struct uiw_qp *qp, uint64_t *wr_ids, int max)
{
    if (!qp || max < 0 || (max && !wr_ids))
        return -EINVAL;
    int n = 0;
    uiw__lock_take(&qp->lock);
    /* the oldest receive is the one a Send may be landing in (io reads into it without
     * the lock, rx_placing); the others take nothing before it completes, and it cannot
     * complete while the lock is held */
    for (uint32_t i = qp->rq_head + 1; !qp->srq && n < max && (int32_t)(qp->rq_tail - i) > 0; i++) {
        struct uiw__rqe *r = &qp->rq[i & (qp->rq_size - 1)];
        if (uiw__rqe_resolve(qp, r) != 0)
            continue; /* not valid memory (the arrival will say so): not ours to touch */
        for (unsigned s = 0; s < r->num_sge; s++)
            uiw__pages_discard(r->ptr[s], r->sge[s].length);
        wr_ids[n++] = r->wr_id;
    }
    uiw__qp_unlock(qp);
    return n;
}
