/* The engine part of a context: STag table storage, async event queue, statistics,
 * and the verbs' name strings. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "rnic/engine.h"

void uiw_context_attr_init(struct uiw_context_attr *attr)
{
    memset(attr, 0, sizeof(*attr));
    attr->progress_thread = true;
    attr->max_mr = 4096;
    attr->max_async = 256;
    attr->max_qp = attr->max_cq = attr->max_srq = attr->max_pd = UIW__MAX_OBJ_DFLT;
}

struct uiw_context *uiw__context_alloc(const struct uiw_context_attr *attr)
{
    struct uiw_context *ctx = calloc(1, sizeof(*ctx));
    if (!ctx) {
        errno = ENOMEM;
        return NULL;
    }
    if (attr)
        ctx->attr = *attr;
    else
        uiw_context_attr_init(&ctx->attr);
    if (ctx->attr.max_mr == 0)
        ctx->attr.max_mr = 4096;
    if (ctx->attr.max_async == 0)
        ctx->attr.max_async = 256;
    uint32_t *lim[UIW__RES_COUNT] = {[UIW__RES_PD] = &ctx->attr.max_pd,
                                     [UIW__RES_CQ] = &ctx->attr.max_cq,
                                     [UIW__RES_QP] = &ctx->attr.max_qp,
                                     [UIW__RES_SRQ] = &ctx->attr.max_srq};
    bool bad = ctx->attr.max_mr >= (1u << 24);
    for (int r = 0; r < UIW__RES_COUNT; r++) {
        if (*lim[r] == 0)
            *lim[r] = UIW__MAX_OBJ_DFLT;
        bad |= *lim[r] > INT_MAX;
        ctx->res_max[r] = *lim[r];
    }
    if (bad) {
        free(ctx);
        errno = EINVAL;
        return NULL;
    }
    ctx->nstags = ctx->attr.max_mr + 1;
    ctx->stags = calloc(ctx->nstags, sizeof(*ctx->stags));
    ctx->aq_cap = ctx->attr.max_async;
    ctx->aq = calloc(ctx->aq_cap, sizeof(*ctx->aq));
    ctx->async_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (!ctx->stags || !ctx->aq || ctx->async_fd < 0) {
        int e = ctx->async_fd < 0 ? errno : ENOMEM;
        if (ctx->async_fd >= 0)
            close(ctx->async_fd);
        free(ctx->stags);
        free(ctx->aq);
        free(ctx);
        errno = e;
        return NULL;
    }
    /* STag indices 1..n handed out in order, those given back first (a scattered order
     * is not needed: the key is what makes a stale STag fail). The table costs memory
     * only as far as it was used: no list is written ahead through it. */
    ctx->free_head = 0;
    ctx->stags_fresh = 1;
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != (ssize_t)sizeof(seed)) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uintptr_t)ctx;
    }
    ctx->rnd = seed | 1;
    bool plain = ctx->attr.single_threaded;
    uiw__lock_init_plain(&ctx->mem_lock, plain);
    atomic_init(&ctx->mem_gen, 1);
    uiw__lock_init_plain(&ctx->async_lock, plain);
    uiw__lock_init_plain(&ctx->qps_lock, plain);
    atomic_init(&ctx->next_qpn, 1);
    atomic_init(&ctx->next_pd, 1);
    atomic_init(&ctx->armed_cqs, 0);
    return ctx;
}

int uiw__context_free(struct uiw_context *ctx)
{
    if (!ctx)
        return -EINVAL;
    if (atomic_load(&ctx->nobjs) != 0)
        return -EBUSY;
    close(ctx->async_fd);
    free(ctx->stags);
    free(ctx->aq);
    free(ctx);
    return 0;
}

void uiw__context_set_io(struct uiw_context *ctx, const struct uiw__io_ops *ops, void *io_ctx)
{
    if (ops)
        ctx->ops = *ops;
    else
        memset(&ctx->ops, 0, sizeof(ctx->ops));
    ctx->io = io_ctx;
}

void *uiw__context_io(const struct uiw_context *ctx)
{
    return ctx->io;
}

const struct uiw_context_attr *uiw__context_attr(const struct uiw_context *ctx)
{
    return &ctx->attr;
}

void uiw__ctx_get(struct uiw_context *ctx)
{
    atomic_fetch_add(&ctx->nobjs, 1);
}

void uiw__ctx_put(struct uiw_context *ctx)
{
    atomic_fetch_sub(&ctx->nobjs, 1);
}

bool uiw__res_take(struct uiw_context *ctx, enum uiw__res r)
{
    if (atomic_fetch_add(&ctx->nres[r], 1) < ctx->res_max[r])
        return true;
    atomic_fetch_sub(&ctx->nres[r], 1);
    return false;
}

void uiw__res_put(struct uiw_context *ctx, enum uiw__res r)
{
    atomic_fetch_sub(&ctx->nres[r], 1);
}

int uiw_query_device(struct uiw_context *ctx, struct uiw_device_attr *a)
{
    if (!ctx || !a)
        return -EINVAL;
    memset(a, 0, sizeof(*a));
    a->max_mr_size = UINT64_MAX; /* a region may cover any range that does not wrap */
    a->max_qp = (int)ctx->res_max[UIW__RES_QP];
    a->max_qp_wr = (int)UIW__MAX_QP_WR;
    a->device_cap_flags = UIW_DEVICE_SRQ_RESIZE | UIW_DEVICE_MEM_MGT_EXTENSIONS;
    a->max_sge = UIW__MAX_SGE;
    a->max_sge_rd = 1;
    a->max_cq = (int)ctx->res_max[UIW__RES_CQ];
    a->max_cqe = UIW__MAX_CQE;
    a->max_mr = (int)ctx->attr.max_mr;
    a->max_pd = (int)ctx->res_max[UIW__RES_PD];
    a->max_qp_rd_atom = UIW__MAX_IRD_ORD;
    uint64_t res = (uint64_t)ctx->res_max[UIW__RES_QP] * UIW__MAX_IRD_ORD;
    a->max_res_rd_atom = res > INT_MAX ? INT_MAX : (int)res;
    a->max_qp_init_rd_atom = UIW__MAX_IRD_ORD;
    a->max_srq = (int)ctx->res_max[UIW__RES_SRQ];
    a->max_srq_wr = (int)UIW__MAX_SRQ_WR;
    a->max_srq_sge = UIW__MAX_SGE;
    a->max_inline_data = UIW__MAX_INLINE;
    a->max_msg_sz = UINT32_MAX; /* a WR's SGEs add up to less than 4 GiB */
    return 0;
}

void uiw__stat_add(struct uiw_context *ctx, enum uiw__stat s, uint64_t n)
{
    if ((unsigned)s < UIW__STAT_COUNT)
        atomic_fetch_add_explicit(&ctx->stats[s], n, memory_order_relaxed);
}

int uiw_query_context_stats(struct uiw_context *ctx, struct uiw_context_stats *st)
{
    if (!ctx || !st)
        return -EINVAL;
    uint64_t sum[UIW__STAT_COUNT];
    for (int i = 0; i < UIW__STAT_COUNT; i++)
        sum[i] = atomic_load_explicit(&ctx->stats[i], memory_order_relaxed);
    uiw__lock_take(&ctx->qps_lock);
    for (struct uiw_qp *qp = ctx->qps; qp; qp = qp->ctx_next) {
        uiw__lock_take(&qp->lock);
        for (int i = 0; i < UIW__STAT_COUNT; i++)
            sum[i] += qp->st[i];
        uiw__lock_give(&qp->lock);
    }
    uiw__lock_give(&ctx->qps_lock);
#define S(i) sum[i]
    st->tx_bytes = S(UIW__STAT_TX_BYTES);
    st->rx_bytes = S(UIW__STAT_RX_BYTES);
    st->tx_fpdus = S(UIW__STAT_TX_FPDUS);
    st->rx_fpdus = S(UIW__STAT_RX_FPDUS);
    st->placed_payload_bytes = S(UIW__STAT_PLACED);
    st->copied_payload_bytes = S(UIW__STAT_COPIED);
    st->terminates_sent = S(UIW__STAT_TERM_SENT);
    st->terminates_received = S(UIW__STAT_TERM_RECV);
    st->crc_errors = S(UIW__STAT_CRC_ERRORS);
    st->async_events_dropped = S(UIW__STAT_ASYNC_DROPPED);
    st->file_payload_bytes = S(UIW__STAT_FILE);
#undef S
    return 0;
}

/* ------------------------------------------------------------------ async events */

void uiw__async_post(struct uiw_context *ctx, const struct uiw_async_event *ev)
{
    uiw__lock_take(&ctx->async_lock);
    if (ctx->aq_count == ctx->aq_cap) {
        uiw__lock_give(&ctx->async_lock);
        uiw__stat_add(ctx, UIW__STAT_ASYNC_DROPPED, 1);
        UIW__LOG(UIW__LOG_ERROR, ev->qp ? ev->qp->cp.conn_id : 0, ev->qp ? ev->qp->qpn : 0,
                 "async event %s dropped: the queue's %u entries are full",
                 uiw_event_type_str(ev->event_type), ctx->aq_cap);
        return;
    }
    ctx->aq[(ctx->aq_head + ctx->aq_count) % ctx->aq_cap] = *ev;
    ctx->aq_count++;
    uiw__lock_give(&ctx->async_lock);
    uint64_t one = 1;
    ssize_t r = write(ctx->async_fd, &one, sizeof(one));
    (void)r;
}

int uiw_async_fd(struct uiw_context *ctx)
{
    return ctx ? ctx->async_fd : -EINVAL;
}

int uiw_get_async_event(struct uiw_context *ctx, struct uiw_async_event *ev)
{
    if (!ctx || !ev)
        return -EINVAL;
    uiw__lock_take(&ctx->async_lock);
    if (ctx->aq_count == 0) {
        uiw__lock_give(&ctx->async_lock);
        return -EAGAIN;
    }
    *ev = ctx->aq[ctx->aq_head];
    ctx->aq_head = (ctx->aq_head + 1) % ctx->aq_cap;
    ctx->aq_count--;
    if (ctx->aq_count == 0) {
        uint64_t v;
        ssize_t r = read(ctx->async_fd, &v, sizeof(v));
        (void)r;
    }
    uiw__lock_give(&ctx->async_lock);
    return 0;
}

void uiw_ack_async_event(struct uiw_async_event *ev)
{
    (void)ev;
}

/* ------------------------------------------------------------------ strings */

const char *uiw_wc_status_str(enum uiw_wc_status status)
{
    switch (status) {
    case UIW_WC_SUCCESS:
        return "success";
    case UIW_WC_LOC_LEN_ERR:
        return "local length error";
    case UIW_WC_LOC_QP_OP_ERR:
        return "local QP operation error";
    case UIW_WC_LOC_PROT_ERR:
        return "local protection error";
    case UIW_WC_WR_FLUSH_ERR:
        return "Work Request Flushed Error";
    case UIW_WC_MW_BIND_ERR:
        return "memory bind operation error";
    case UIW_WC_BAD_RESP_ERR:
        return "bad response error";
    case UIW_WC_LOC_ACCESS_ERR:
        return "local access error";
    case UIW_WC_REM_INV_REQ_ERR:
        return "remote invalid request error";
    case UIW_WC_REM_ACCESS_ERR:
        return "remote access error";
    case UIW_WC_REM_OP_ERR:
        return "remote operation error";
    case UIW_WC_RETRY_EXC_ERR:
        return "transport retry counter exceeded";
    case UIW_WC_FATAL_ERR:
        return "fatal error";
    case UIW_WC_GENERAL_ERR:
        return "general error";
    }
    return "unknown";
}

const char *uiw_qp_state_str(enum uiw_qp_state s)
{
    switch (s) {
    case UIW_QPS_IDLE:
        return "IDLE";
    case UIW_QPS_RTS:
        return "RTS";
    case UIW_QPS_CLOSING:
        return "CLOSING";
    case UIW_QPS_TERMINATE:
        return "TERMINATE";
    case UIW_QPS_ERROR:
        return "ERROR";
    }
    return "unknown";
}

const char *uiw_event_type_str(enum uiw_event_type t)
{
    switch (t) {
    case UIW_EVENT_QP_FATAL:
        return "QP fatal error";
    case UIW_EVENT_QP_REQ_ERR:
        return "QP invalid request error";
    case UIW_EVENT_QP_ACCESS_ERR:
        return "QP access error";
    case UIW_EVENT_COMM_EST:
        return "communication established";
    case UIW_EVENT_CONN_CLOSED:
        return "connection closed";
    case UIW_EVENT_TERM_RECEIVED:
        return "Terminate received";
    case UIW_EVENT_CQ_ERR:
        return "CQ error";
    case UIW_EVENT_SRQ_LIMIT_REACHED:
        return "SRQ limit reached";
    case UIW_EVENT_QP_LAST_WQE_REACHED:
        return "last WQE reached";
    }
    return "unknown";
}
