/*
 * Completion queues and completion channels. A CQ is a ring of work completions; its
 * physical size is a power of two at least twice the advertised size, so that an
 * overflow of the advertised size is reported (UIW_EVENT_CQ_ERR) without losing the
 * completions that caused it. A channel is an eventfd plus a list of CQs with a pending
 * event.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <time.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rnic/engine.h"
#include "common/pages.h"
#include "common/compiler.h"

struct uiw_comp_channel *uiw_create_comp_channel(struct uiw_context *ctx)
{
    if (!ctx) {
        errno = EINVAL;
        return NULL;
    }
    struct uiw_comp_channel *ch = calloc(1, sizeof(*ch));
    if (!ch) {
        errno = ENOMEM;
        return NULL;
    }
    ch->fd = eventfd(0, EFD_CLOEXEC);
    if (ch->fd < 0) {
        int e = errno;
        free(ch);
        errno = e;
        return NULL;
    }
    ch->ctx = ctx;
    uiw__lock_init_plain(&ch->lock, ctx->attr.single_threaded);
    uiw__ctx_get(ctx);
    return ch;
}

int uiw_comp_channel_fd(const struct uiw_comp_channel *ch)
{
    return ch ? ch->fd : -EINVAL;
}

int uiw_destroy_comp_channel(struct uiw_comp_channel *ch)
{
    if (!ch)
        return -EINVAL;
    if (atomic_load(&ch->ncq) != 0)
        return -EBUSY;
    close(ch->fd);
    uiw__ctx_put(ch->ctx);
    free(ch);
    return 0;
}

struct uiw_cq *uiw_create_cq(struct uiw_context *ctx, int cqe, void *cq_context,
                             struct uiw_comp_channel *channel, int comp_vector)
{
    if (!ctx || cqe < 1 || cqe > UIW__MAX_CQE) {
        errno = EINVAL;
        return NULL;
    }
    if (!uiw__res_take(ctx, UIW__RES_CQ)) {
        errno = ENOMEM;
        return NULL;
    }
    uint32_t cap = 2;
    while (cap < 2u * (uint32_t)cqe)
        cap <<= 1;
    /* the ring right behind the CQ: polling an empty-again CQ starts at ring[0], so a
     * ping-pong touches the page of the CQ and nothing else */
    struct uiw_cq *cq = uiw__pages_alloc(sizeof(*cq) + (size_t)cap * sizeof(struct uiw_wc));
    if (!cq) {
        uiw__res_put(ctx, UIW__RES_CQ);
        errno = ENOMEM;
        return NULL;
    }
    cq->ring = (struct uiw_wc *)(void *)(cq + 1);
    cq->ctx = ctx;
    cq->cap = cap;
    cq->cqe = (uint32_t)cqe;
    cq->cq_context = cq_context;
    cq->channel = channel;
    uiw__lock_init_plain(&cq->lock, ctx->attr.single_threaded);
    if (channel)
        atomic_fetch_add(&channel->ncq, 1);
    uiw__ctx_get(ctx);
    return cq;
}

int uiw_destroy_cq(struct uiw_cq *cq)
{
    if (!cq)
        return -EINVAL;
    if (atomic_load(&cq->nqp) != 0)
        return -EBUSY;
    if (cq->channel) {
        /* both locks: an event leaving the channel is counted as taken in the same hold
         * (chan_take), so that it is either queued or taken-not-acknowledged here */
        struct uiw_comp_channel *ch = cq->channel;
        uiw__lock_take(&ch->lock);
        uiw__lock_take(&cq->lock);
        bool busy = cq->chan_queued || cq->events_done != cq->events_acked;
        uiw__lock_give(&cq->lock);
        uiw__lock_give(&ch->lock);
        if (busy)
            return -EBUSY;
        atomic_fetch_sub(&ch->ncq, 1);
        if (cq->armed)
            atomic_fetch_sub(&cq->ctx->armed_cqs, 1);
    }
    uiw__res_put(cq->ctx, UIW__RES_CQ);
    uiw__ctx_put(cq->ctx);
    uiw__pages_free(cq, sizeof(*cq) + (size_t)cq->cap * sizeof(struct uiw_wc));
    return 0;
}

void *uiw_cq_context(const struct uiw_cq *cq)
{
    return cq ? cq->cq_context : NULL;
}

/* The channel whose events this thread takes itself right after the io wait it is in
 * (uiw_wait_cq_event): what its own pass queues there needs no eventfd round trip. */
static _Thread_local const struct uiw_comp_channel *taking;

/* Make the fd readable (channel lock held). */
static void chan_ring(struct uiw_comp_channel *ch)
{
    uint64_t one = 1;
    ch->signaled = write(ch->fd, &one, sizeof(one)) == (ssize_t)sizeof(one);
}

static void channel_signal(struct uiw_cq *cq)
{
    struct uiw_comp_channel *ch = cq->channel;
    uiw__lock_take(&ch->lock);
    if (!cq->chan_queued) {
        cq->chan_queued = true;
        cq->chan_next = NULL;
        struct uiw_cq **pp = &ch->pending;
        while (*pp)
            pp = &(*pp)->chan_next;
        *pp = cq;
    }
    /* under the lock: the fd is readable exactly while events wait (but for the moment
     * until the thread that queued them takes them, see taking) */
    if (!ch->signaled && taking != ch)
        chan_ring(ch);
    uiw__lock_give(&ch->lock);
}

UIW__DATAPATH int uiw__cq_push(struct uiw_cq *cq, const struct uiw_wc *wc)
{
    bool signal = false, overflow = false;
    int r = 0;
    uiw__lock_take(&cq->lock);
    if (cq->count >= cq->cqe && !cq->overflow_reported) {
        cq->overflow_reported = true;
        overflow = true;
    }
    if (cq->count == cq->cap) {
        r = -ENOSPC;
    } else {
        cq->ring[(cq->head + cq->count) & (cq->cap - 1)] = *wc;
        cq->count++;
        atomic_store_explicit(&cq->avail, cq->count, memory_order_release);
    }
    if (cq->armed == 1 ||
        (cq->armed == 2 && ((wc->wc_flags & UIW_WC_SOLICITED) || wc->status != UIW_WC_SUCCESS))) {
        cq->armed = 0;
        signal = cq->channel != NULL;
        if (signal)
            atomic_fetch_sub(&cq->ctx->armed_cqs, 1);
    }
    uiw__lock_give(&cq->lock);
    if (signal)
        channel_signal(cq);
    if (overflow) {
        struct uiw_async_event ev = {
            .event_type = UIW_EVENT_CQ_ERR, .cq = cq, .code = UIW_E_RNIC_CQ_OVERFLOW};
        uiw__async_post(cq->ctx, &ev);
        r = -ENOSPC;
    }
    return r;
}

UIW__DATAPATH int uiw_poll_cq(struct uiw_cq *cq, int n, struct uiw_wc *wc)
{
    if (!cq || n < 0 || (n > 0 && !wc))
        return -EINVAL;
    struct uiw_context *ctx = cq->ctx;
    int got = 0;
    /* progress only when there is nothing to return (completions first); empty (the spin
     * of a busy poller): no lock; a completion being queued meanwhile is the next poll's */
    if (atomic_load_explicit(&cq->avail, memory_order_acquire) == 0) {
        if (ctx->ops.progress)
            ctx->ops.progress(ctx, ctx->io);
        if (atomic_load_explicit(&cq->avail, memory_order_acquire) == 0)
            return 0;
    }
    uiw__lock_take(&cq->lock);
    while (got < n && cq->count > 0) {
        wc[got++] = cq->ring[cq->head];
        cq->head = (cq->head + 1) & (cq->cap - 1);
        cq->count--;
    }
    if (cq->count == 0)
        cq->head = 0;
    atomic_store_explicit(&cq->avail, cq->count, memory_order_relaxed);
    if (cq->count < cq->cqe)
        cq->overflow_reported = false;
    uiw__lock_give(&cq->lock);
    return got;
}

int uiw_req_notify_cq(struct uiw_cq *cq, int solicited_only)
{
    if (!cq)
        return -EINVAL;
    struct uiw_context *ctx = cq->ctx;
    bool first = false;
    uiw__lock_take(&cq->lock);
    if (!cq->armed && cq->channel)
        first = atomic_fetch_add(&ctx->armed_cqs, 1) == 0;
    cq->armed = solicited_only ? 2 : 1;
    uiw__lock_give(&cq->lock);
    if (first && ctx->ops.armed)
        ctx->ops.armed(ctx, ctx->io);
    return 0;
}

bool uiw__ctx_waiting(struct uiw_context *ctx)
{
    return atomic_load_explicit(&ctx->armed_cqs, memory_order_relaxed) > 0;
}

/* Take the channel's first pending event into *cq (and *cq_context): true if there was
 * one. */
static bool chan_take(struct uiw_comp_channel *ch, struct uiw_cq **cq, void **cq_context)
{
    uiw__lock_take(&ch->lock);
    struct uiw_cq *c = ch->pending;
    if (c) {
        ch->pending = c->chan_next;
        c->chan_queued = false;
        c->chan_next = NULL;
        if (!ch->pending && ch->signaled) {
            /* drain the counter (non-zero: the read does not block) */
            uint64_t v;
            ch->signaled = read(ch->fd, &v, sizeof(v)) != (ssize_t)sizeof(v);
        } else if (ch->pending && !ch->signaled) {
            chan_ring(ch); /* events this thread queued for itself and leaves to others */
        }
        /* counted before the channel lock goes: uiw_destroy_cq sees it queued or taken */
        uiw__lock_take(&c->lock);
        c->events_done++;
        uiw__lock_give(&c->lock);
    }
    uiw__lock_give(&ch->lock);
    if (!c)
        return false;
    *cq = c;
    if (cq_context)
        *cq_context = c->cq_context;
    return true;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int uiw_wait_cq_event(struct uiw_comp_channel *ch, int timeout_ms, struct uiw_cq **cq,
                      void **cq_context)
{
    if (!ch || !cq)
        return -EINVAL;
    struct uiw_context *ctx = ch->ctx;
    int64_t deadline = timeout_ms > 0 ? mono_ms() + timeout_ms : 0;
    for (bool waited = false;; waited = true) {
        if (chan_take(ch, cq, cq_context))
            return 0;
        int left = -1;
        if (timeout_ms == 0) {
            if (waited)
                return -ETIMEDOUT;
            left = 0; /* one look, with progress */
        } else if (timeout_ms > 0) {
            int64_t d = deadline - mono_ms();
            if (d <= 0)
                return -ETIMEDOUT;
            left = d > INT_MAX ? INT_MAX : (int)d;
        }
        int w;
        if (ctx->ops.wait) {
            taking = ch;
            w = ctx->ops.wait(ctx, ctx->io, ch->fd, left);
            taking = NULL;
        } else {
            struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
            w = poll(&pfd, 1, left) < 0 ? -errno : 0;
        }
        if (w < 0 && w != -EINTR)
            return w;
    }
}

int uiw_get_cq_event(struct uiw_comp_channel *ch, struct uiw_cq **cq, void **cq_context)
{
    if (!ch || !cq)
        return -EINVAL;
    if (chan_take(ch, cq, cq_context))
        return 0;
    int fl = fcntl(ch->fd, F_GETFL);
    if (fl < 0)
        return -errno;
    int r = uiw_wait_cq_event(ch, (fl & O_NONBLOCK) ? 0 : -1, cq, cq_context);
    return r == -ETIMEDOUT ? -EAGAIN : r;
}

void uiw_ack_cq_events(struct uiw_cq *cq, unsigned int nevents)
{
    if (!cq)
        return;
    uiw__lock_take(&cq->lock);
    cq->events_acked += nevents;
    uiw__lock_give(&cq->lock);
}
