/* A context's progress engine: uiw_open_context / uiw_close_context and the callbacks
 * the engine calls (struct uiw__io_ops). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "io/io.h"
#include "common/compiler.h"

struct uiw__io *uiw__io_of(struct uiw_context *ctx)
{
    return ctx ? uiw__context_io(ctx) : NULL;
}

/* Doorbell: serve the connections the engine or cm kicked. Runs with loop.lock held, so
 * none of them can be destroyed meanwhile. */
static void io_bell(struct uiw__loop *l, void *arg)
{
    struct uiw__io *io = arg;
    (void)l;
    uiw__lock_take(&io->pend_lock);
    struct uiw__conn *list = io->pending;
    io->pending = NULL;
    uiw__lock_give(&io->pend_lock);
    while (list) {
        /* Still marked queued until taken off, so a kick meanwhile does not relink it. */
        struct uiw__conn *c = list;
        uiw__lock_take(&io->pend_lock);
        list = c->pend_next;
        c->queued = false;
        uiw__lock_give(&io->pend_lock);
        if (c->h.fn)
            uiw__conn_service(c, 0);
    }
}

UIW__DATAPATH static void io_qp_kick(struct uiw_qp *qp, void *io_ctx)
{
    struct uiw__conn *c = uiw__qp_io(qp);
    (void)io_ctx;
    if (c)
        uiw__conn_kick(c);
}

/* Inline progress from uiw_poll_cq: one non-blocking pass if nobody else is making
 * progress. With a single connection, most passes read its socket directly instead of
 * asking epoll first (every 64th pass, a doorbell ring, or a connection waiting for
 * EPOLLOUT or closing takes the full epoll pass; the loop holds only the doorbell and the
 * connections, so the epoll pass is a safety net and each one costs a busy poller about a
 * system call of latency). Once the application keeps polling, the socket is parked
 * (uiw__loop_direct_read): out of the epoll set, so that the peer's segments run no epoll
 * wake-up callback, until some thread sleeps on the set. */
UIW__DATAPATH static void io_progress(struct uiw_context *ctx, void *io_ctx)
{
    struct uiw__io *io = io_ctx;
    struct uiw__loop *l = &io->loop;
    /* a CQ armed while a progress thread runs: the application is about to sleep (it
     * polls once more, for what came before arming); input goes to the thread, or to the
     * application once it sleeps in uiw_wait_cq_event, without a read here first */
    if (l->has_thread && uiw__ctx_waiting(ctx))
        return;
    if (!uiw__lock_try(&l->lock))
        return;
    struct uiw__conn *c = io->conns;
    bool direct = c && !c->next && c->h.fn && c->open && !c->closing && !c->out_blocked &&
                  !atomic_load(&l->kicks) && (++io->probes & 63) != 0;
    int n = direct ? uiw__conn_probe(c) : uiw__loop_pass_locked(l, 0);
    if (direct)
        uiw__loop_direct_read(l, &c->h);    /* a poller's socket leaves the epoll set */
    bool counted = n == 0 && l->has_thread; /* only the progress thread looks at the count */
    uiw__lock_give(&l->lock);
    if (counted)
        atomic_fetch_add_explicit(&l->idle_inline, 1, memory_order_relaxed);
}

UIW__DATAPATH static bool io_qp_send(struct uiw_qp *qp, void *io_ctx)
{
    struct uiw__conn *c = uiw__qp_io(qp);
    (void)io_ctx;
    return c && uiw__conn_send_locked(c);
}

static int io_wait(struct uiw_context *ctx, void *io_ctx, int fd, int timeout_ms)
{
    struct uiw__io *io = io_ctx;
    (void)ctx;
    return uiw__loop_wait(&io->loop, fd, timeout_ms);
}

static void io_armed(struct uiw_context *ctx, void *io_ctx)
{
    struct uiw__io *io = io_ctx;
    (void)ctx;
    uiw__loop_app_sleeps(&io->loop);
}

static bool io_app_waits(void *arg)
{
    const struct uiw__io *io = arg;
    return uiw__ctx_waiting(io->ctx);
}

static void io_qp_destroy(struct uiw_qp *qp, void *io_ctx)
{
    struct uiw__conn *c = uiw__qp_io(qp);
    struct uiw__io *io = io_ctx;
    if (!c)
        return;
    uiw__lock_take(&io->loop.lock);
    void *arg = c->owner_arg;
    uiw__lock_give(&io->loop.lock);
    if (arg)
        c->owner->qp_destroyed(arg, c);
    uiw__conn_destroy(c);
}

static const struct uiw__io_ops io_ops = {
    .qp_kick = io_qp_kick,
    .qp_send = io_qp_send,
    .progress = io_progress,
    .qp_destroy = io_qp_destroy,
    .armed = io_armed,
    .wait = io_wait,
};

struct uiw_context *uiw_open_context(const struct uiw_context_attr *attr)
{
    struct uiw_context_attr def;
    if (!attr) {
        uiw_context_attr_init(&def);
        attr = &def;
    }
    if (attr->single_threaded && attr->progress_thread) {
        errno = EINVAL; /* the progress thread would be a second thread */
        return NULL;
    }
    int err = ENOMEM;
    struct uiw_context *ctx = NULL;
    struct uiw__io *io = calloc(1, sizeof(*io));
    if (!io)
        goto fail;
    if (attr->pcap_dir && !(io->pcap_dir = strdup(attr->pcap_dir)))
        goto fail;
    ctx = uiw__context_alloc(attr);
    if (!ctx) {
        err = errno;
        goto fail;
    }
    io->ctx = ctx;
    uiw__lock_init_plain(&io->pend_lock, attr->single_threaded);
    int r = uiw__loop_init(&io->loop, false);
    if (r < 0)
        goto fail_lock;
    /* one thread at a time: the dispatcher's lock only says whether a pass is under way */
    uiw__lock_init_plain(&io->loop.lock, attr->single_threaded);
    io->loop.on_bell = io_bell;
    io->loop.app_waits = io_app_waits;
    io->loop.bell_arg = io;
    uiw__context_set_io(ctx, &io_ops, io);
    if (attr->progress_thread && (r = uiw__loop_start_thread(&io->loop)) < 0) {
        uiw__context_set_io(ctx, NULL, NULL);
        uiw__loop_fini(&io->loop);
        goto fail_lock;
    }
    return ctx;

fail_lock:
    err = -r;
fail:
    if (ctx)
        uiw__context_free(ctx);
    if (io)
        free(io->pcap_dir);
    free(io);
    errno = err;
    return NULL;
}

int uiw_close_context(struct uiw_context *ctx)
{
    if (!ctx)
        return -EINVAL;
    struct uiw__io *io = uiw__io_of(ctx);
    if (!io)
        return uiw__context_free(ctx);
    uiw__lock_take(&io->loop.lock);
    bool busy = io->conns != NULL;
    uiw__lock_give(&io->loop.lock);
    if (busy)
        return -EBUSY;
    bool thread = io->loop.has_thread;
    uiw__loop_stop_thread(&io->loop);
    int r = uiw__context_free(ctx);
    if (r < 0) {
        if (thread)
            uiw__loop_start_thread(&io->loop);
        return r;
    }
    uiw__loop_fini(&io->loop);
    free(io->pcap_dir);
    free(io);
    return 0;
}
