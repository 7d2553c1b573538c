/*
 * Shared receive queues: a ring of receives, resolved against the SRQ's PD when posted,
 * that the QPs created on it take from, oldest first, when a Send needs a receive
 * (uiw__srq_take, from the receive path). The taken receive moves into the QP's own
 * receive queue of one entry, so that placement, completion, errors and flushing treat it
 * as a receive posted to the QP; the limit event fires on the take that leaves fewer than
 * the armed limit.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rnic/engine.h"
#include "common/compiler.h"

/* Entries are read only once posted (whole): the ring needs no clearing, so a large SRQ
 * costs its memory only as it fills. */
static struct uiw__rqe *ring_alloc(uint32_t size)
{
    return aligned_alloc(_Alignof(struct uiw__rqe), (size_t)size * sizeof(struct uiw__rqe));
}

static uint32_t ring_size(uint32_t max_wr)
{
    uint32_t size = 1;
    while (size < max_wr)
        size <<= 1;
    return size;
}

struct uiw_srq *uiw_create_srq(struct uiw_pd *pd, struct uiw_srq_init_attr *attr)
{
    if (!pd || !attr || attr->attr.max_wr < 1 || attr->attr.max_wr > UIW__MAX_SRQ_WR ||
        attr->attr.max_sge > UIW__MAX_SGE || attr->attr.srq_limit > attr->attr.max_wr) {
        errno = EINVAL;
        return NULL;
    }
    struct uiw_context *ctx = pd->context;
    if (!uiw__res_take(ctx, UIW__RES_SRQ)) {
        errno = ENOMEM;
        return NULL;
    }
    struct uiw_srq *srq = calloc(1, sizeof(*srq));
    uint32_t size = ring_size(attr->attr.max_wr);
    struct uiw__rqe *rq = srq ? ring_alloc(size) : NULL;
    if (!rq) {
        free(srq);
        uiw__res_put(ctx, UIW__RES_SRQ);
        errno = ENOMEM;
        return NULL;
    }
    attr->attr.max_sge = UIW__MAX_SGE;
    uiw__lock_init_plain(&srq->lock, ctx->attr.single_threaded);
    srq->ctx = ctx;
    srq->pd = pd;
    srq->srq_context = attr->srq_context;
    srq->rq = rq;
    srq->size = size;
    srq->max_wr = attr->attr.max_wr;
    srq->max_sge = attr->attr.max_sge;
    srq->limit = attr->attr.srq_limit;
    atomic_fetch_add(&((struct uiw__pd *)pd)->nqp, 1);
    uiw__ctx_get(ctx);
    return srq;
}

int uiw_destroy_srq(struct uiw_srq *srq)
{
    if (!srq)
        return -EINVAL;
    if (atomic_load(&srq->nqp) != 0)
        return -EBUSY;
    struct uiw_context *ctx = srq->ctx;
    atomic_fetch_sub(&((struct uiw__pd *)srq->pd)->nqp, 1);
    uiw__res_put(ctx, UIW__RES_SRQ);
    free(srq->rq);
    free(srq);
    uiw__ctx_put(ctx);
    return 0;
}

void *uiw_srq_context(const struct uiw_srq *srq)
{
    return srq ? srq->srq_context : NULL;
}

int uiw_query_srq(struct uiw_srq *srq, struct uiw_srq_attr *attr)
{
    if (!srq || !attr)
        return -EINVAL;
    uiw__lock_take(&srq->lock);
    attr->max_wr = srq->max_wr;
    attr->max_sge = srq->max_sge;
    attr->srq_limit = srq->limit;
    uiw__lock_give(&srq->lock);
    return 0;
}

int uiw_modify_srq(struct uiw_srq *srq, struct uiw_srq_attr *attr, int mask)
{
    if (!srq || !attr || (mask & ~(UIW_SRQ_MAX_WR | UIW_SRQ_LIMIT)))
        return -EINVAL;
    struct uiw__rqe *fresh = NULL;
    uint32_t size = 0;
    if (mask & UIW_SRQ_MAX_WR) {
        if (attr->max_wr < 1 || attr->max_wr > UIW__MAX_SRQ_WR)
            return -EINVAL;
        size = ring_size(attr->max_wr);
        fresh = ring_alloc(size);
        if (!fresh)
            return -ENOMEM;
    }
    uiw__lock_take(&srq->lock);
    uint32_t max_wr = (mask & UIW_SRQ_MAX_WR) ? attr->max_wr : srq->max_wr;
    uint32_t limit = (mask & UIW_SRQ_LIMIT) ? attr->srq_limit : srq->limit;
    if (max_wr < srq->tail - srq->head || limit > max_wr) {
        uiw__lock_give(&srq->lock);
        free(fresh);
        return -EINVAL;
    }
    if (fresh) {
        uint32_t n = 0;
        for (uint32_t i = srq->head; i != srq->tail; i++)
            fresh[n++] = srq->rq[i & (srq->size - 1)];
        struct uiw__rqe *old = srq->rq;
        srq->rq = fresh;
        srq->size = size;
        srq->head = 0;
        srq->tail = n;
        srq->max_wr = max_wr;
        fresh = old; /* freed below, out of the lock */
    }
    srq->limit = limit;
    uiw__lock_give(&srq->lock);
    free(fresh);
    return 0;
}

UIW__DATAPATH int uiw_post_srq_recv(struct uiw_srq *srq, struct uiw_recv_wr *wr,
                                    struct uiw_recv_wr **bad_wr)
{
    if (!srq || !wr) {
        if (bad_wr)
            *bad_wr = wr;
        return -EINVAL;
    }
    int r = 0;
    for (; wr; wr = wr->next) {
        /* built and resolved outside the SRQ's lock, which only guards the ring */
        struct uiw__rqe q;
        r = uiw__rqe_build(&q, wr, srq->max_sge);
        if (r < 0)
            break;
        (void)uiw__rqe_resolve_pd(srq->ctx, srq->pd, &q); /* a failure is the placement's */
        uiw__lock_take(&srq->lock);
        if (srq->tail - srq->head >= srq->max_wr) {
            uiw__lock_give(&srq->lock);
            r = -ENOMEM;
            break;
        }
        srq->rq[srq->tail & (srq->size - 1)] = q;
        srq->tail++;
        if (q.len >= UIW__RX_DIRECT_MIN)
            uiw__count_add(&srq->rq_wide, 1);
        uiw__lock_give(&srq->lock);
    }
    if (r < 0 && bad_wr)
        *bad_wr = wr;
    return r;
}

UIW__DATAPATH bool uiw__srq_take(struct uiw_qp *qp)
{
    struct uiw_srq *srq = qp->srq;
    struct uiw__rqe *dst = &qp->rq[qp->rq_tail & (qp->rq_size - 1)];
    uiw__lock_take(&srq->lock);
    if (srq->head == srq->tail) {
        uiw__lock_give(&srq->lock);
        return false;
    }
    *dst = srq->rq[srq->head & (srq->size - 1)];
    srq->head++;
    bool wide = dst->len >= UIW__RX_DIRECT_MIN;
    if (wide)
        uiw__count_add(&srq->rq_wide, -1);
    bool fire = srq->limit && srq->tail - srq->head < srq->limit;
    if (fire)
        srq->limit = 0;
    uiw__lock_give(&srq->lock);
    qp->rq_tail++;
    if (wide)
        uiw__count_add(&qp->rq_wide, 1);
    if (fire) {
        struct uiw_async_event ev = {.event_type = UIW_EVENT_SRQ_LIMIT_REACHED, .srq = srq};
        uiw__async_post(qp->ctx, &ev);
    }
    return true;
}
