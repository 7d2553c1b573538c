/*
 * Internal: the io layer's event loop. One epoll set, an eventfd doorbell, and an
 * optional progress thread. A handler is a struct uiw__ioh embedded in its owner; its
 * callback runs with the loop's progress lock held (one dispatcher at a time), so the
 * callbacks of one loop never race each other.
 *
 * Inline progress: uiw__loop_try runs one non-blocking pass if nobody else is
 * dispatching (trylock), so an application busy-polling does the I/O itself. While it
 * does (inline passes that find nothing come fast), the progress thread stops waiting on
 * the sockets and only watches the doorbell, in short naps, so that arriving data does
 * not wake it to race the application for the same bytes (a thread hand-off per
 * message); once the inline passes stop, it waits on the sockets again. The naps grow
 * (doubling, within bounds) while the busy poll lasts, since each wake-up of the thread
 * takes a CPU from a spinning application for a moment; an application that arms a CQ to
 * sleep wakes the thread at once (uiw__loop_app_sleeps).
 */
#ifndef UIW_IO_LOOP_H
#define UIW_IO_LOOP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/lock.h"

struct uiw__ioh;
typedef void (*uiw__ioh_fn)(struct uiw__ioh *h, uint32_t events);

struct uiw__ioh {
    int fd;
    uint32_t events; /* EPOLL* currently registered, 0 if not registered */
    uiw__ioh_fn fn;
    bool parked;                  /* out of the epoll set, probed by every pass instead */
    struct uiw__ioh *parked_next; /* the loop's parked list (guarded by the loop's lock) */
};

struct uiw__loop {
    int epfd;
    int evfd; /* doorbell: written by uiw__loop_kick, drained by the dispatcher */
    struct uiw__ioh bell;
    struct uiw__lock lock; /* progress lock: held while dispatching */
    pthread_t thread;
    bool has_thread;
    atomic_bool stop;
    atomic_uint kicks;       /* doorbell rings not yet seen by a dispatcher */
    atomic_uint idle_inline; /* uiw__loop_try passes that found nothing (wraps) */
    atomic_uint waiters;     /* application threads asleep in uiw__loop_wait */
    atomic_bool napping;     /* the progress thread naps (the application busy-polls) */
    atomic_uint spin_per_ms; /* idle inline passes per ms that make a busy poll (SPIN_PER_MS;
                                a test lowers it to stage one on a loaded machine) */
    void (*on_bell)(struct uiw__loop *l, void *arg); /* run on each pass after a kick */
    bool (*app_waits)(void *arg); /* the application sleeps on an event (bell_arg); NULL: no */
    void *bell_arg;
    struct uiw__ioh *parked; /* handlers out of the epoll set (guarded by lock) */
    unsigned direct_reads;   /* direct reads since the last unpark (lock held) */
    atomic_int nparked;      /* handlers on the parked list (read without the lock) */
};

/* An application thread sleeps until fd is readable (its completion channel) or
 * timeout_ms (-1: no limit) passed, watching the loop's sockets too and dispatching their
 * work itself when they wake it (one pass), so that input reaches it with no hand-off
 * from the progress thread, which meanwhile leaves the sockets to it (and looks again
 * every few milliseconds, for when it has left). Returns after one wake-up: 0 or -errno. */
int uiw__loop_wait(struct uiw__loop *l, int fd, int timeout_ms);
/* The application is about to sleep on an event: a progress thread that naps (its naps
 * grow while the busy poll lasts) wakes now to watch the sockets. */
void uiw__loop_app_sleeps(struct uiw__loop *l);

/* Returns 0 or -errno. The thread (if asked) starts at once. */
int uiw__loop_init(struct uiw__loop *l, bool thread);
/* Start / stop the progress thread later (0 or -errno; stop waits for it). */
int uiw__loop_start_thread(struct uiw__loop *l);
void uiw__loop_stop_thread(struct uiw__loop *l);
/* Stops the thread, closes the fds. Handlers must be removed before. */
void uiw__loop_fini(struct uiw__loop *l);

/* Register, change or remove a handler (events: EPOLLIN | EPOLLOUT | ...; level
 * triggered). Safe from any thread; on a parked handler (below) only with the lock
 * held. A parked handler set to EPOLLIN alone stays parked; to anything else it is
 * registered again. */
int uiw__loop_set(struct uiw__loop *l, struct uiw__ioh *h, uint32_t events);
void uiw__loop_del(struct uiw__loop *l, struct uiw__ioh *h);

/* Parking, for a socket that a busy-polling thread reads directly anyway: take h (which
 * wants EPOLLIN only) out of the epoll set; every pass then calls h->fn(h, EPOLLIN)
 * itself instead of asking epoll. While a socket sits in an epoll set, every segment that
 * reaches it runs the set's wake-up callback inside the sender's system call (on loopback,
 * the peer's send()); out of the set, nothing runs there. Every thread that is about to
 * sleep on the set (the progress thread, uiw__loop_wait, a pass that may block) registers
 * the parked handlers again first, and a level-triggered registration reports what is
 * already readable, so no input is missed. Returns 0, -EINVAL (h wants more than
 * EPOLLIN) or -errno (it then stays in the set). lock held. */
int uiw__loop_park(struct uiw__loop *l, struct uiw__ioh *h);
/* A polling application read h directly (lock held, h wanting EPOLLIN only): after enough
 * such reads since the last sleep on the set, and while no thread may sleep on it (no
 * progress thread, or one napping while the application spins; nobody in
 * uiw__loop_wait), h is parked. */
void uiw__loop_direct_read(struct uiw__loop *l, struct uiw__ioh *h);

/* Ring the doorbell: the dispatcher (thread or a blocked uiw__loop_run) wakes. */
void uiw__loop_kick(struct uiw__loop *l);

/* One blocking pass (waits at most timeout_ms; -1 forever) taking the progress lock.
 * Returns the number of handlers dispatched, or -errno. */
int uiw__loop_run(struct uiw__loop *l, int timeout_ms);
/* One non-blocking pass if the progress lock is free; returns handlers dispatched, or 0. */
int uiw__loop_try(struct uiw__loop *l);
/* The same with the progress lock already held by the caller. */
int uiw__loop_pass_locked(struct uiw__loop *l, int timeout_ms);

#endif
