/*
 * Pooled buffers of the TCP service: small ones for most records and replies, and a
 * bounded number of large ones (a WRITE's record, a READ's payload). A buffer taken is
 * used by one thread at a time and given back whole; idle ones are kept for the next
 * call, as many as were in use at once since the last trim (and one large one at least),
 * and the rest freed.
 *
 * Large buffers are pages of their own, not malloc's: freeing a block that size from
 * malloc raises glibc's threshold for mapping blocks apart (to the size freed), so the
 * next ones come from the calling thread's arena instead, and the pages of one freed
 * there stay resident, as only an arena's top goes back to the system. With buffers
 * trimmed and taken again by one thread after another, the server's resident size grew
 * by about a megabyte a minute under a steady load.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "common/pages.h"
#include "nfs/server.h"

struct uiw__nfs_pool {
    pthread_mutex_t lock;
    pthread_cond_t back; /* a large buffer came back */
    size_t large_cap;
    unsigned large_max;
    struct uiw__nfs_buf *free_small, *free_large;
    unsigned nfree_small, nfree_large;
    unsigned taken_small, taken_large;
    unsigned peak_small, peak_large; /* most taken at once since the last trim */
    unsigned waiting;                /* threads in uiw__nfs_pool_large_wait */
    void (*on_large)(void *);
    void *on_large_arg;
    int owed; /* a uiw__nfs_pool_large failed since the last call of on_large */
    size_t bytes;
};

struct uiw__nfs_pool *uiw__nfs_pool_create(size_t large_cap, unsigned large_max)
{
    struct uiw__nfs_pool *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    pthread_mutex_init(&p->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->back, &ca);
    pthread_condattr_destroy(&ca);
    p->large_cap = large_cap;
    p->large_max = large_max ? large_max : 1;
    return p;
}

static void free_buf(struct uiw__nfs_buf *b)
{
    if (b->large)
        uiw__pages_free(b, sizeof(*b) + b->cap);
    else
        free(b);
}

static void free_list(struct uiw__nfs_buf *b)
{
    while (b) {
        struct uiw__nfs_buf *n = b->next;
        free_buf(b);
        b = n;
    }
}

void uiw__nfs_pool_destroy(struct uiw__nfs_pool *p)
{
    if (!p)
        return;
    free_list(p->free_small);
    free_list(p->free_large);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->back);
    free(p);
}

static struct uiw__nfs_buf *alloc_buf(size_t cap, int large)
{
    struct uiw__nfs_buf *b = large ? uiw__pages_alloc(sizeof(*b) + cap) : malloc(sizeof(*b) + cap);
    if (!b)
        return NULL;
    b->next = NULL;
    b->cap = cap;
    b->large = large;
    return b;
}

struct uiw__nfs_buf *uiw__nfs_pool_small(struct uiw__nfs_pool *p)
{
    pthread_mutex_lock(&p->lock);
    struct uiw__nfs_buf *b = p->free_small;
    if (b) {
        p->free_small = b->next;
        p->nfree_small--;
    }
    p->taken_small++;
    if (p->taken_small > p->peak_small)
        p->peak_small = p->taken_small;
    if (!b)
        p->bytes += sizeof(*b) + UIW__NFS_SMALL;
    pthread_mutex_unlock(&p->lock);
    if (!b) {
        b = alloc_buf(UIW__NFS_SMALL, 0);
        if (!b) {
            pthread_mutex_lock(&p->lock);
            p->taken_small--;
            p->bytes -= sizeof(*b) + UIW__NFS_SMALL;
            pthread_mutex_unlock(&p->lock);
            return NULL;
        }
    }
    b->next = NULL;
    return b;
}

/* Under the lock: a large buffer if one may be taken (new ones allocated outside it:
 * *fresh says so). */
static struct uiw__nfs_buf *take_large(struct uiw__nfs_pool *p, int *fresh)
{
    *fresh = 0;
    if (p->taken_large >= p->large_max)
        return NULL;
    struct uiw__nfs_buf *b = p->free_large;
    if (b) {
        p->free_large = b->next;
        p->nfree_large--;
    } else {
        *fresh = 1;
        p->bytes += sizeof(struct uiw__nfs_buf) + p->large_cap;
    }
    p->taken_large++;
    if (p->taken_large > p->peak_large)
        p->peak_large = p->taken_large;
    return b;
}

static struct uiw__nfs_buf *finish_large(struct uiw__nfs_pool *p, struct uiw__nfs_buf *b, int fresh)
{
    if (fresh) {
        b = alloc_buf(p->large_cap, 1);
        if (!b) {
            pthread_mutex_lock(&p->lock);
            p->taken_large--;
            p->bytes -= sizeof(struct uiw__nfs_buf) + p->large_cap;
            pthread_mutex_unlock(&p->lock);
            return NULL;
        }
    }
    if (b)
        b->next = NULL;
    return b;
}

struct uiw__nfs_buf *uiw__nfs_pool_large(struct uiw__nfs_pool *p)
{
    int fresh;
    pthread_mutex_lock(&p->lock);
    struct uiw__nfs_buf *b = take_large(p, &fresh);
    if (!b && !fresh)
        p->owed = 1;
    pthread_mutex_unlock(&p->lock);
    return finish_large(p, b, fresh);
}

struct uiw__nfs_buf *uiw__nfs_pool_large_wait(struct uiw__nfs_pool *p, int timeout_ms)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    int fresh;
    pthread_mutex_lock(&p->lock);
    struct uiw__nfs_buf *b;
    for (;;) {
        b = take_large(p, &fresh);
        if (b || fresh)
            break;
        p->waiting++;
        int rc = pthread_cond_timedwait(&p->back, &p->lock, &until);
        p->waiting--;
        if (rc == ETIMEDOUT) {
            b = take_large(p, &fresh);
            break;
        }
    }
    pthread_mutex_unlock(&p->lock);
    return finish_large(p, b, fresh);
}

void uiw__nfs_pool_put(struct uiw__nfs_pool *p, struct uiw__nfs_buf *b)
{
    if (!b)
        return;
    void (*cb)(void *) = NULL;
    void *arg = NULL;
    pthread_mutex_lock(&p->lock);
    if (b->large) {
        b->next = p->free_large;
        p->free_large = b;
        p->nfree_large++;
        p->taken_large--;
        if (p->waiting)
            pthread_cond_signal(&p->back);
        if (p->owed && p->on_large) {
            p->owed = 0;
            cb = p->on_large;
            arg = p->on_large_arg;
        }
    } else {
        b->next = p->free_small;
        p->free_small = b;
        p->nfree_small++;
        p->taken_small--;
    }
    pthread_mutex_unlock(&p->lock);
    if (cb)
        cb(arg);
}

void uiw__nfs_pool_on_large(struct uiw__nfs_pool *p, void (*cb)(void *), void *arg)
{
    pthread_mutex_lock(&p->lock);
    p->on_large = cb;
    p->on_large_arg = arg;
    pthread_mutex_unlock(&p->lock);
}

void uiw__nfs_pool_trim(struct uiw__nfs_pool *p)
{
    struct uiw__nfs_buf *drop_small = NULL, *drop_large = NULL;
    pthread_mutex_lock(&p->lock);
    while (p->free_small && p->taken_small + p->nfree_small > p->peak_small) {
        struct uiw__nfs_buf *b = p->free_small;
        p->free_small = b->next;
        p->nfree_small--;
        p->bytes -= sizeof(*b) + UIW__NFS_SMALL;
        b->next = drop_small;
        drop_small = b;
    }
    /* one large buffer kept however idle the pool was: the first large call after a pause
     * finds its pages in place, not faulted in again within its latency */
    unsigned keep_large = p->peak_large > 1 ? p->peak_large : 1;
    while (p->free_large && p->taken_large + p->nfree_large > keep_large) {
        struct uiw__nfs_buf *b = p->free_large;
        p->free_large = b->next;
        p->nfree_large--;
        p->bytes -= sizeof(struct uiw__nfs_buf) + p->large_cap;
        b->next = drop_large;
        drop_large = b;
    }
    p->peak_small = p->taken_small;
    p->peak_large = p->taken_large;
    pthread_mutex_unlock(&p->lock);
    free_list(drop_small);
    free_list(drop_large);
}

unsigned uiw__nfs_pool_large_taken(struct uiw__nfs_pool *p)
{
    pthread_mutex_lock(&p->lock);
    unsigned n = p->taken_large;
    pthread_mutex_unlock(&p->lock);
    return n;
}

size_t uiw__nfs_pool_bytes(struct uiw__nfs_pool *p)
{
    pthread_mutex_lock(&p->lock);
    size_t n = p->bytes;
    pthread_mutex_unlock(&p->lock);
    return n;
}
