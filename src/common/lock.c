/* The contended paths of struct uiw__lock: a short spin, then the futex. */
#include "common/lock.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/compiler.h"

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Holders keep the lock for a few hundred cycles at most: spin about that long before
 * sleeping (the holder may be running on the other core). */
enum { LOCK_SPINS = 100 };

UIW__COLD void uiw__lock_wait(struct uiw__lock *l)
{
    for (int i = 0; i < LOCK_SPINS; i++) {
        cpu_relax();
        int z = 0;
        if (atomic_load_explicit(&l->v, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_weak_explicit(&l->v, &z, 1, memory_order_acquire,
                                                  memory_order_relaxed))
            return;
    }
    /* Mark contended (2) while taking it, so that the holder's release wakes us. */
    while (atomic_exchange_explicit(&l->v, 2, memory_order_acquire) != 0)
        syscall(SYS_futex, &l->v, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
}

UIW__COLD void uiw__lock_wake(struct uiw__lock *l)
{
    syscall(SYS_futex, &l->v, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
