/* Threads waiting for send queue room wake when another thread frees it, not at the poller's
 * next slice. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "rpcrdma/xprt.h"
#include "test.h"

#define SQ_HEAD 64 /* out.c: entries only the poller's own posts may use */

struct room {
    struct uiw__rr_dev *d;
    struct uiw__rr_conn *c;
    _Atomic bool got, stop;
};

static bool room_for_one(void *arg)
{
    struct room *r = arg;
    return uiw__rr_sq_reserve(r->c, 1);
}

/* A thread waiting for room as the device's room waiters do (a connection whose calls
 * wait to pull, or whose replies wait to go). */
static void *waiter(void *arg)
{
    struct room *r = arg;
    atomic_fetch_add(&r->d->room_waiters, 1);
    atomic_store(&r->got, uiw__rr_dev_wait(r->d, room_for_one, r, 0) == 0);
    atomic_fetch_sub(&r->d->room_waiters, 1);
    return NULL;
}

static bool stopped(void *arg)
{
    struct room *r = arg;
    return atomic_load(&r->stop);
}

/* Another thread leads the device (the waiter sleeps on its condition variable). */
static void *leader(void *arg)
{
    struct room *r = arg;
    uiw__rr_dev_wait(r->d, stopped, r, 0);
    return NULL;
}

/* Whether a thread leads the device now (read under the device's lock). */
static bool is_leading(struct uiw__rr_dev *d)
{
    pthread_mutex_lock(&d->mu);
    bool l = d->leader;
    pthread_mutex_unlock(&d->mu);
    return l;
}

/* A connection whose send queue is full, on a device without connections to poll. */
static void room_setup(struct room *r)
{
    struct uiw__rr_dev_attr da = {.inline_size = 4096, .max_msg = 1u << 20, .max_ddp = 1u << 20};
    r->d = uiw__rr_dev_open(&da);
    CHECK(r->d != NULL);
    r->c = calloc(1, sizeof(*r->c));
    CHECK(r->c != NULL);
    r->c->dev = r->d;
    atomic_init(&r->c->state, UIW__RR_C_READY);
    r->c->sq_depth = SQ_HEAD + 4;
    atomic_init(&r->c->sq_used, 4);
    atomic_init(&r->got, false);
    atomic_init(&r->stop, false);
}

/* Free one entry once the waiter counts itself; it must be woken by that, not by a slice
 * (n_slices counts every sleep that ran its whole 50 ms). */
static void room_free_and_check(struct room *r, pthread_t w)
{
    for (int i = 0; i < 10000000 && atomic_load(&r->d->room_waiters) == 0; i++)
        sched_yield();
    CHECK_EQ(atomic_load(&r->d->room_waiters), 1u);
    uint64_t s0 = atomic_load(&r->d->n_slices);
    uiw__rr_sq_release(r->c, 1);
    CHECK_EQ(pthread_join(w, NULL), 0);
    CHECK(atomic_load(&r->got));
    CHECK_EQ(atomic_load(&r->d->n_slices), s0); /* woken by the room, not the slice */
    CHECK_EQ(atomic_load(&r->d->n_room_wakes), 1u);
    CHECK_EQ(atomic_load(&r->c->sq_used), 4u); /* the waiter holds the entry freed */
}

TEST(room_wakes_the_leader)
{
    struct room r;
    room_setup(&r);
    pthread_t w;
    CHECK_EQ(pthread_create(&w, NULL, waiter, &r), 0);
    /* the waiter leads, asleep in the RNIC: room freed before then would be found by its
     * own look, not woken */
    for (int i = 0; i < 10000000 && !atomic_load(&r.d->lead_asleep); i++)
        sched_yield();
    CHECK(atomic_load(&r.d->lead_asleep));
    room_free_and_check(&r, w);
    free(r.c);
    uiw__rr_dev_close(r.d);
}

TEST(room_wakes_a_waiter_behind_the_leader)
{
    struct room r;
    room_setup(&r);
    pthread_t l, w;
    CHECK_EQ(pthread_create(&l, NULL, leader, &r), 0);
    for (int i = 0; i < 10000000 && !is_leading(r.d); i++)
        sched_yield();
    CHECK_EQ(pthread_create(&w, NULL, waiter, &r), 0);
    room_free_and_check(&r, w);
    atomic_store(&r.stop, true);
    uiw__rr_dev_kick(r.d);
    CHECK_EQ(pthread_join(l, NULL), 0);
    free(r.c);
    uiw__rr_dev_close(r.d);
}
