/*
 * The engine's mutex: one atomic word and a futex (0 free, 1 held, 2 held with waiters).
 *
 * Why not pthread_mutex_t: a ping-pong takes about a dozen locks per message, each
 * uncontended. Here the fast paths are a compare-and-swap and an exchange inlined into
 * the caller; glibc's are calls into two code pages of libc that also read its thread and
 * tuning data (four more pages). On a kernel with page-table isolation and no PCID every
 * system call empties the TLB, so each of those pages costs a page walk on the critical
 * path of every message.
 *
 * Contract: not recursive; released by the thread that holds it; no condition variables.
 * Memory order as a mutex: acquire when taken, release when released.
 *
 * A plain lock (uiw__lock_init_plain) is for an object that one thread at a time uses (a
 * single-threaded context, uiw_context_attr.single_threaded): it keeps the lock's state
 * (held or free: a trylock still fails while the same thread holds it) with plain loads
 * and stores, no atomic read-modify-write and no fence. The word says which kind it is
 * (UIW__LOCK_PLAIN), so the same calls serve both.
 */
#ifndef UIW_COMMON_LOCK_H
#define UIW_COMMON_LOCK_H

#include <stdatomic.h>
#include <stdbool.h>

struct uiw__lock {
    _Atomic int v; /* 0 free, 1 held, 2 held with waiters; | UIW__LOCK_PLAIN: plain */
};

enum { UIW__LOCK_PLAIN = 4 };

#define UIW__LOCK_INIT                                                                             \
    {                                                                                              \
        0                                                                                          \
    }

static inline void uiw__lock_init(struct uiw__lock *l)
{
    atomic_init(&l->v, 0);
}

/* Initialise l as a plain lock if plain (see above), as a mutex otherwise. */
static inline void uiw__lock_init_plain(struct uiw__lock *l, bool plain)
{
    atomic_init(&l->v, plain ? UIW__LOCK_PLAIN : 0);
}

/* The plain lock's state, or 0 for a mutex. */
static inline int uiw__lock_plain(struct uiw__lock *l)
{
    int v = atomic_load_explicit(&l->v, memory_order_relaxed);
    return v & UIW__LOCK_PLAIN ? v : 0;
}

/* Contended paths (lock.c). */
void uiw__lock_wait(struct uiw__lock *l);
void uiw__lock_wake(struct uiw__lock *l);

static inline void uiw__lock_take(struct uiw__lock *l)
{
    if (uiw__lock_plain(l)) {
        atomic_store_explicit(&l->v, UIW__LOCK_PLAIN | 1, memory_order_relaxed);
        return;
    }
    int z = 0;
    if (!atomic_compare_exchange_strong_explicit(&l->v, &z, 1, memory_order_acquire,
                                                 memory_order_relaxed))
        uiw__lock_wait(l);
}

/* Take the lock if it is free: true if taken. */
static inline bool uiw__lock_try(struct uiw__lock *l)
{
    int p = uiw__lock_plain(l);
    if (p) {
        if (p & 1)
            return false;
        atomic_store_explicit(&l->v, UIW__LOCK_PLAIN | 1, memory_order_relaxed);
        return true;
    }
    int z = 0;
    return atomic_compare_exchange_strong_explicit(&l->v, &z, 1, memory_order_acquire,
                                                   memory_order_relaxed);
}

static inline void uiw__lock_give(struct uiw__lock *l)
{
    if (uiw__lock_plain(l)) {
        atomic_store_explicit(&l->v, UIW__LOCK_PLAIN, memory_order_relaxed);
        return;
    }
    if (atomic_exchange_explicit(&l->v, 0, memory_order_release) == 2)
        uiw__lock_wake(l);
}

#endif
