/* The io event loop: epoll + eventfd doorbell + optional progress thread. */
#include "io/loop.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include "common/compiler.h"

/* Inline passes that found nothing, per millisecond, from which on the application
 * counts as busy polling (once it does, over windows of SPIN_WINDOW_US at least); the
 * progress thread's first and longest nap while it does (each nap doubles the last: the
 * longest bounds how late the thread notices that the polls stopped, unless the
 * application arms a CQ, which wakes it at once). An application that sleeps on a
 * completion channel makes a few such passes per wake-up, far below. */
enum {
    SPIN_PER_MS = 50,
    SPIN_NAP_US = 200,
    SPIN_NAP_MAX_US = 3200,
    SPIN_WINDOW_US = 1000,
    WAITER_CHECK_MS = 10,
    /* direct reads since the last sleep on the set after which a polling application's
     * socket is parked (one that sleeps on its channel makes a few per wake-up, and pays
     * two epoll_ctl calls per sleep when it makes more; one that spins makes this many in
     * some tens of microseconds) */
    PARK_AFTER = 64
};

static void bell_fn(struct uiw__ioh *h, uint32_t events)
{
    (void)events;
    uint64_t v;
    while (read(h->fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
        ;
}

/* Register every parked handler again (lock held). False if one could not be (it stays
 * parked: the caller then sleeps briefly, as if woken, and looks again). */
static bool unpark(struct uiw__loop *l)
{
    bool ok = true;
    for (struct uiw__ioh **pp = &l->parked; *pp;) {
        struct uiw__ioh *h = *pp;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = h};
        if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, h->fd, &ev) < 0) {
            ok = false;
            pp = &h->parked_next;
            continue;
        }
        *pp = h->parked_next;
        h->parked = false;
        h->events = EPOLLIN;
        atomic_fetch_sub(&l->nparked, 1);
    }
    l->direct_reads = 0;
    return ok;
}

/* Unpark before a sleep on the set; the time limit to sleep with (1 ms at most when a
 * handler is still parked). Takes the lock if take, and only if a handler may be parked:
 * the caller made itself known as a sleeper (waiters, or napping false) before, and a
 * parker counts itself in nparked before it looks for sleepers, so at least one of the
 * two sees the other (and a parker holds the lock until it is done). */
static int before_sleep(struct uiw__loop *l, int timeout_ms, bool take)
{
    if (!atomic_load(&l->nparked))
        return timeout_ms;
    if (take)
        uiw__lock_take(&l->lock);
    bool ok = !l->parked || unpark(l);
    if (take)
        uiw__lock_give(&l->lock);
    return ok || (timeout_ms >= 0 && timeout_ms < 1) ? timeout_ms : 1;
}

/* Out of the set and onto the parked list (lock held, h wants EPOLLIN only, counted in
 * nparked by the caller). */
static int park(struct uiw__loop *l, struct uiw__ioh *h)
{
    if (epoll_ctl(l->epfd, EPOLL_CTL_DEL, h->fd, NULL) < 0)
        return -errno;
    h->events = 0;
    h->parked = true;
    h->parked_next = l->parked;
    l->parked = h;
    return 0;
}

int uiw__loop_park(struct uiw__loop *l, struct uiw__ioh *h)
{
    if (h->parked)
        return 0;
    if (h->events != EPOLLIN)
        return -EINVAL;
    atomic_fetch_add(&l->nparked, 1);
    int r = park(l, h);
    if (r < 0)
        atomic_fetch_sub(&l->nparked, 1);
    return r;
}

UIW__DATAPATH void uiw__loop_direct_read(struct uiw__loop *l, struct uiw__ioh *h)
{
    if (++l->direct_reads < PARK_AFTER || h->parked || h->events != EPOLLIN)
        return;
    /* counted first, then no sleeper may be there (before_sleep) */
    atomic_fetch_add(&l->nparked, 1);
    if (atomic_load(&l->waiters) || (l->has_thread && !atomic_load(&l->napping)) ||
        park(l, h) < 0) /* on failure it stays in the set, which is correct too */
        atomic_fetch_sub(&l->nparked, 1);
}

static void unlink_parked(struct uiw__loop *l, struct uiw__ioh *h)
{
    struct uiw__ioh **pp = &l->parked;
    while (*pp != h)
        pp = &(*pp)->parked_next;
    *pp = h->parked_next;
    h->parked = false;
    atomic_fetch_sub(&l->nparked, 1);
}

int uiw__loop_pass_locked(struct uiw__loop *l, int timeout_ms)
{
    struct epoll_event ev[32];
    if (atomic_load(&l->kicks))
        timeout_ms = 0;
    if (timeout_ms != 0 && l->parked)
        timeout_ms = before_sleep(l, timeout_ms, false);
    int n = epoll_wait(l->epfd, ev, 32, timeout_ms);
    if (n < 0)
        return errno == EINTR ? 0 : -errno;
    for (int i = 0; i < n; i++) {
        struct uiw__ioh *h = ev[i].data.ptr;
        h->fn(h, ev[i].events);
    }
    /* the parked handlers are probed as if epoll had found them readable (a handler may
     * unpark or remove itself meanwhile) */
    for (struct uiw__ioh *h = l->parked, *next; h; h = next) {
        next = h->parked_next;
        h->fn(h, EPOLLIN);
        n++;
    }
    if (atomic_exchange(&l->kicks, 0) && l->on_bell)
        l->on_bell(l, l->bell_arg);
    return n;
}

static uint64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void *loop_thread(void *arg)
{
    struct uiw__loop *l = arg;
    unsigned seen = atomic_load(&l->idle_inline);
    uint64_t since = mono_us();
    long nap_us = SPIN_NAP_US;
    bool spinning = false;
    bool app_spins = false;
    while (!atomic_load(&l->stop)) {
        if (!app_spins) {
            uiw__lock_take(&l->lock);
            uiw__loop_pass_locked(l, 0);
            uiw__lock_give(&l->lock);
        } else if (atomic_load(&l->kicks) && uiw__lock_try(&l->lock)) {
            /* the busy poller reads the sockets and sees the doorbell itself: only a ring
             * it has not answered yet, and never waiting for its lock */
            uiw__loop_pass_locked(l, 0);
            uiw__lock_give(&l->lock);
        }
        if (atomic_load(&l->stop))
            break;
        unsigned now_seen = atomic_load(&l->idle_inline);
        uint64_t now = mono_us();
        uint64_t spins = (unsigned)(now_seen - seen), us = now - since;
        /* the rate over a window of SPIN_WINDOW_US at least, once the application spins:
         * a wake-up soon after the last (a doorbell) does not end the busy poll */
        if (!spinning || us >= SPIN_WINDOW_US) {
            uint64_t per_ms = atomic_load_explicit(&l->spin_per_ms, memory_order_relaxed);
            spinning = spins >= 4 && spins * 1000 >= per_ms * (us ? us : 1);
            seen = now_seen;
            since = now;
        }
        /* an application that armed a CQ to sleep on its channel is not spinning, however
         * often it polled before it went to sleep */
        app_spins = spinning && !(l->app_waits && l->app_waits(l->bell_arg));
        atomic_store(&l->napping, app_spins && !atomic_load(&l->waiters));
        if (app_spins) {
            /* an application arming a CQ right now saw napping false and rang no bell:
             * look once more (uiw__loop_app_sleeps stores armed, then loads napping) */
            atomic_thread_fence(memory_order_seq_cst);
            if (l->app_waits && l->app_waits(l->bell_arg)) {
                atomic_store(&l->napping, false);
                app_spins = false;
            }
        }
        if (!app_spins)
            nap_us = SPIN_NAP_US;
        bool rung = atomic_load(&l->kicks) != 0;
        if (rung && !app_spins)
            continue;
        /* Sleep without the lock so that application threads can progress inline. */
        if (rung) {
            /* a ring the busy poller has not answered yet (the doorbell stays readable
             * until a pass drains it): look again after a short nap */
            struct timespec ts = {0, SPIN_NAP_US * 1000L};
            ppoll(NULL, 0, &ts, NULL);
            nap_us = SPIN_NAP_US;
        } else if (atomic_load(&l->waiters)) {
            /* an application thread asleep in uiw__loop_wait watches the sockets; look
             * again now and then, for when it has left */
            struct pollfd pfd = {.fd = l->evfd, .events = POLLIN};
            poll(&pfd, 1, WAITER_CHECK_MS);
        } else if (app_spins) {
            struct pollfd pfd = {.fd = l->evfd, .events = POLLIN};
            struct timespec ts = {0, nap_us * 1000L};
            ppoll(&pfd, 1, &ts, NULL);
            nap_us = nap_us * 2 > SPIN_NAP_MAX_US ? SPIN_NAP_MAX_US : nap_us * 2;
        } else {
            struct pollfd pfd = {.fd = l->epfd, .events = POLLIN};
            poll(&pfd, 1, before_sleep(l, 1000, true));
        }
    }
    return NULL;
}

int uiw__loop_init(struct uiw__loop *l, bool thread)
{
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (l->epfd < 0)
        return -errno;
    l->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (l->evfd < 0) {
        int e = -errno;
        close(l->epfd);
        return e;
    }
    uiw__lock_init(&l->lock);
    atomic_init(&l->stop, false);
    atomic_init(&l->kicks, 0);
    atomic_init(&l->waiters, 0);
    atomic_init(&l->idle_inline, 0);
    atomic_init(&l->napping, false);
    atomic_init(&l->spin_per_ms, SPIN_PER_MS);
    l->direct_reads = 0;
    l->parked = NULL;
    atomic_init(&l->nparked, 0);
    l->on_bell = NULL;
    l->app_waits = NULL;
    l->bell_arg = NULL;
    l->bell.fd = l->evfd;
    l->bell.events = 0;
    l->bell.fn = bell_fn;
    l->bell.parked = false;
    int r = uiw__loop_set(l, &l->bell, EPOLLIN);
    l->has_thread = false;
    if (r == 0 && thread)
        r = uiw__loop_start_thread(l);
    if (r < 0) {
        close(l->evfd);
        close(l->epfd);
    }
    return r;
}

int uiw__loop_start_thread(struct uiw__loop *l)
{
    if (l->has_thread)
        return 0;
    atomic_store(&l->stop, false);
    int r = -pthread_create(&l->thread, NULL, loop_thread, l);
    l->has_thread = r == 0;
    return r;
}

void uiw__loop_stop_thread(struct uiw__loop *l)
{
    if (l->has_thread) {
        atomic_store(&l->stop, true);
        uiw__loop_kick(l);
        pthread_join(l->thread, NULL);
        l->has_thread = false;
    }
}

void uiw__loop_fini(struct uiw__loop *l)
{
    uiw__loop_stop_thread(l);
    close(l->evfd);
    close(l->epfd);
}

int uiw__loop_set(struct uiw__loop *l, struct uiw__ioh *h, uint32_t events)
{
    if (h->parked) {
        if (events == EPOLLIN)
            return 0;
        unlink_parked(l, h);
    }
    struct epoll_event ev = {.events = events, .data.ptr = h};
    int op = h->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (h->events == events && events)
        return 0;
    if (!events) {
        uiw__loop_del(l, h);
        return 0;
    }
    if (epoll_ctl(l->epfd, op, h->fd, &ev) < 0)
        return -errno;
    h->events = events;
    return 0;
}

void uiw__loop_del(struct uiw__loop *l, struct uiw__ioh *h)
{
    if (h->parked)
        unlink_parked(l, h);
    if (h->events) {
        epoll_ctl(l->epfd, EPOLL_CTL_DEL, h->fd, NULL);
        h->events = 0;
    }
}

void uiw__loop_kick(struct uiw__loop *l)
{
    atomic_fetch_add(&l->kicks, 1);
    uint64_t one = 1;
    ssize_t w = write(l->evfd, &one, sizeof(one));
    (void)w;
}

void uiw__loop_app_sleeps(struct uiw__loop *l)
{
    if (atomic_load(&l->napping)) {
        atomic_store(&l->napping, false);
        uiw__loop_kick(l);
    }
}

int uiw__loop_wait(struct uiw__loop *l, int fd, int timeout_ms)
{
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = l->epfd, .events = POLLIN}};
    atomic_fetch_add(&l->waiters, 1); /* before the unpark: no handler is parked again */
    timeout_ms = before_sleep(l, timeout_ms, true);
    int r = poll(p, 2, timeout_ms) < 0 ? -errno : 0;
    if (r == 0 && p[1].revents) {
        uiw__lock_take(&l->lock);
        uiw__loop_pass_locked(l, 0);
        uiw__lock_give(&l->lock);
    }
    atomic_fetch_sub(&l->waiters, 1);
    return r == -EINTR ? 0 : r;
}

int uiw__loop_run(struct uiw__loop *l, int timeout_ms)
{
    uiw__lock_take(&l->lock);
    int n = uiw__loop_pass_locked(l, timeout_ms);
    uiw__lock_give(&l->lock);
    return n;
}

int uiw__loop_try(struct uiw__loop *l)
{
    if (!uiw__lock_try(&l->lock))
        return 0;
    int n = uiw__loop_pass_locked(l, 0);
    uiw__lock_give(&l->lock);
    if (n == 0)
        atomic_fetch_add_explicit(&l->idle_inline, 1, memory_order_relaxed);
    return n;
}
