/* struct uiw__lock: mutual exclusion under contention (the futex path), try semantics. */
#include <pthread.h>
#include <stdint.h>

#include "common/lock.h"
#include "test.h"

enum { THREADS = 4, ROUNDS = 200000 };

static struct uiw__lock lk = UIW__LOCK_INIT;
static uint64_t counter; /* plain: only the lock orders the increments */
static uint64_t inside;  /* holders at once, must stay 1 */
static int bad;

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        uiw__lock_take(&lk);
        if (++inside != 1)
            bad = 1;
        counter++;
        if ((i & 1023) == 0) { /* hold it a while now and then: waiters reach the futex */
            for (volatile int k = 0; k < 2000; k++)
                ;
        }
        inside--;
        uiw__lock_give(&lk);
    }
    return NULL;
}

TEST(lock_excludes_under_contention)
{
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, worker, NULL), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    CHECK_EQ(counter, (uint64_t)THREADS * ROUNDS);
    CHECK_EQ(bad, 0);
    CHECK_EQ(atomic_load(&lk.v), 0); /* free, no waiter left marked */
}

static void *try_other(void *arg)
{
    struct uiw__lock *l = arg;
    return (void *)(uintptr_t)uiw__lock_try(l);
}

TEST(lock_try)
{
    struct uiw__lock l;
    uiw__lock_init(&l);
    CHECK(uiw__lock_try(&l));
    CHECK(!uiw__lock_try(&l)); /* not recursive */
    pthread_t t;
    void *got;
    CHECK_EQ(pthread_create(&t, NULL, try_other, &l), 0);
    CHECK_EQ(pthread_join(t, &got), 0);
    CHECK(!(uintptr_t)got); /* held here: another thread cannot take it */
    uiw__lock_give(&l);
    CHECK(uiw__lock_try(&l));
    uiw__lock_give(&l);
    uiw__lock_take(&l);
    uiw__lock_give(&l);
    CHECK_EQ(atomic_load(&l.v), 0);
}

/* A plain lock (one thread at a time) keeps the same state, held or free, so a trylock
 * still says whether a pass is under way; a mutex is not plain. */
TEST(lock_plain)
{
    struct uiw__lock l;
    uiw__lock_init_plain(&l, true);
    CHECK(uiw__lock_plain(&l));
    CHECK(uiw__lock_try(&l));
    CHECK(!uiw__lock_try(&l)); /* held */
    uiw__lock_give(&l);
    CHECK(uiw__lock_try(&l));
    uiw__lock_give(&l);
    uiw__lock_take(&l);
    CHECK(!uiw__lock_try(&l));
    uiw__lock_give(&l);
    CHECK_EQ(atomic_load(&l.v), UIW__LOCK_PLAIN);
    uiw__lock_init_plain(&l, false);
    CHECK(!uiw__lock_plain(&l));
    CHECK(uiw__lock_try(&l));
    CHECK_EQ(atomic_load(&l.v), 1);
    uiw__lock_give(&l);
}
