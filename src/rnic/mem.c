/*
 * Protection domains and the STag table: STag = 24-bit index << 8 | 8-bit key, the key
 * random per registration, index 0 (hence STag 0..255) never used. Checks follow RFC 5040
 * 8.1.1: valid STag, stream association (PD), TO wrap, base and bounds, access rights.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rnic/engine.h"
#include "common/compiler.h"

struct uiw_pd *uiw_alloc_pd(struct uiw_context *ctx)
{
    if (!ctx) {
        errno = EINVAL;
        return NULL;
    }
    if (!uiw__res_take(ctx, UIW__RES_PD)) {
        errno = ENOMEM;
        return NULL;
    }
    struct uiw__pd *ipd = calloc(1, sizeof(*ipd));
    if (!ipd) {
        uiw__res_put(ctx, UIW__RES_PD);
        errno = ENOMEM;
        return NULL;
    }
    struct uiw_pd *pd = &ipd->pub;
    pd->context = ctx;
    pd->handle = atomic_fetch_add(&ctx->next_pd, 1);
    uiw__ctx_get(ctx);
    return pd;
}

int uiw_dealloc_pd(struct uiw_pd *pd)
{
    if (!pd)
        return -EINVAL;
    struct uiw_context *ctx = pd->context;
    struct uiw__pd *ipd = (struct uiw__pd *)pd;
    if (atomic_load(&ipd->nqp) != 0)
        return -EBUSY;
    uiw__lock_take(&ctx->mem_lock);
    for (uint32_t i = 1; i < ctx->stags_fresh; i++) {
        if (ctx->stags[i].state != UIW__STAG_FREE && ctx->stags[i].pd == pd) {
            uiw__lock_give(&ctx->mem_lock);
            return -EBUSY;
        }
    }
    uiw__lock_give(&ctx->mem_lock);
    uiw__res_put(ctx, UIW__RES_PD);
    uiw__ctx_put(ctx);
    free(ipd);
    return 0;
}

static uint8_t next_key(struct uiw_context *ctx)
{
    /* xorshift64*: keys need to be unpredictable to a peer guessing stale STags, not
     * cryptographic. */
    uint64_t x = ctx->rnd;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    ctx->rnd = x;
    return (uint8_t)((x * 0x2545F4914F6CDD1DULL) >> 56);
}

#define REMOTE (UIW_ACCESS_REMOTE_WRITE | UIW_ACCESS_REMOTE_READ)

static bool access_ok(unsigned access)
{
    if (access & ~(unsigned)(UIW_ACCESS_LOCAL_WRITE | REMOTE | UIW_ACCESS_LOCAL_ANY_PD))
        return false;
    if ((access & UIW_ACCESS_REMOTE_WRITE) && !(access & UIW_ACCESS_LOCAL_WRITE))
        return false;
    if ((access & UIW_ACCESS_LOCAL_ANY_PD) && (access & REMOTE))
        return false;
    return true;
}

/* Keep s->wide, and with it its PD's rw_wide, in step with what a peer may write through
 * the entry (mem_lock held). */
static void stag_track(struct uiw__stag *s)
{
    bool wide = s->state == UIW__STAG_VALID && (s->access & UIW_ACCESS_REMOTE_WRITE) &&
                s->len >= UIW__RX_DIRECT_MIN;
    if (wide != s->wide) {
        atomic_fetch_add_explicit(&((struct uiw__pd *)s->pd)->rw_wide, wide ? 1 : -1,
                                  memory_order_relaxed);
        s->wide = wide;
    }
}

/* A change that can make a valid STag's check fail (mem_lock held): a new table
 * generation, never 0 (the generation of nothing checked yet: a zeroed hit or an
 * unresolved receive never matches). */
static uint32_t gen_bump(struct uiw_context *ctx)
{
    uint32_t g = atomic_load_explicit(&ctx->mem_gen, memory_order_relaxed) + 1;
    g = g ? g : 1;
    /* sequentially consistent: against uiw__qp_stag_pin and rx_next's placing, which
     * publish and then look */
    atomic_store_explicit(&ctx->mem_gen, g, memory_order_seq_cst);
    return g;
}

static struct uiw_mr *mr_new(struct uiw_pd *pd, void *addr, size_t length, unsigned access,
                             bool fastreg)
{
    struct uiw_context *ctx = pd->context;
    struct uiw_mr *mr = calloc(1, sizeof(*mr));
    if (!mr) {
        errno = ENOMEM;
        return NULL;
    }
    uiw__lock_take(&ctx->mem_lock);
    uint32_t idx = ctx->free_head;
    if (idx)
        ctx->free_head = ctx->stags[idx].next_free;
    else if (ctx->stags_fresh < ctx->nstags)
        idx = ctx->stags_fresh++;
    if (idx == 0) {
        uiw__lock_give(&ctx->mem_lock);
        free(mr);
        errno = ENOMEM;
        return NULL;
    }
    struct uiw__stag *s = &ctx->stags[idx];
    s->key = next_key(ctx);
    s->pd = pd;
    s->mr = mr;
    s->fastreg = fastreg;
    if (fastreg) {
        s->state = UIW__STAG_INVALID;
        s->max_len = length;
        s->base = 0;
        s->len = 0;
        s->access = 0;
    } else {
        s->state = UIW__STAG_VALID;
        s->base = (uint64_t)(uintptr_t)addr;
        s->len = length;
        s->max_len = length;
        s->access = (uint8_t)access;
    }
    s->wide = false;
    stag_track(s);
    mr->context = ctx;
    mr->pd = pd;
    mr->addr = fastreg ? NULL : addr;
    mr->length = fastreg ? 0 : length;
    mr->handle = idx;
    mr->lkey = mr->rkey = (idx << 8) | s->key;
    uiw__lock_give(&ctx->mem_lock);
    uiw__ctx_get(ctx);
    return mr;
}

struct uiw_mr *uiw_reg_mr(struct uiw_pd *pd, void *addr, size_t length, unsigned access)
{
    if (!pd || !access_ok(access) || (!addr && length) ||
        (uint64_t)(uintptr_t)addr + length < (uint64_t)(uintptr_t)addr) {
        errno = EINVAL;
        return NULL;
    }
    return mr_new(pd, addr, length, access, false);
}

void uiw__file_src_put(struct uiw__file_src *f)
{
    if (f && atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) == 1) {
        close(f->fd);
        free(f);
    }
}

struct uiw_mr *uiw_reg_mr_file(struct uiw_pd *pd, int fd, uint64_t offset, size_t length)
{
    if (!pd || offset > (uint64_t)INT64_MAX || length > (uint64_t)INT64_MAX - offset) {
        errno = EINVAL;
        return NULL;
    }
    int fl = fcntl(fd, F_GETFL);
    struct stat st;
    if (fl < 0 || (fl & O_ACCMODE) == O_WRONLY || (fl & O_PATH) || fstat(fd, &st) != 0) {
        errno = EBADF;
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) { /* what sendfile reads from */
        errno = EINVAL;
        return NULL;
    }
    struct uiw__file_src *f = malloc(sizeof(*f));
    if (!f) {
        errno = ENOMEM;
        return NULL;
    }
    f->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (f->fd < 0) {
        int e = errno;
        free(f);
        errno = e == EMFILE || e == ENFILE ? ENOMEM : EBADF;
        return NULL;
    }
    atomic_init(&f->refs, 1);
    struct uiw_mr *mr = mr_new(pd, NULL, length, UIW__ACCESS_FILE, false);
    if (!mr) {
        uiw__file_src_put(f);
        return NULL;
    }
    struct uiw_context *ctx = pd->context;
    uiw__lock_take(&ctx->mem_lock);
    ctx->stags[mr->handle].file = f;
    ctx->stags[mr->handle].file_off = offset;
    uiw__lock_give(&ctx->mem_lock);
    return mr;
}

struct uiw_mr *uiw_alloc_mr(struct uiw_pd *pd, size_t max_length)
{
    if (!pd) {
        errno = EINVAL;
        return NULL;
    }
    return mr_new(pd, NULL, max_length, 0, true);
}

void (*uiw__dereg_wait_hook)(struct uiw_context *ctx, enum uiw__dereg_wait what);

int uiw_dereg_mr(struct uiw_mr *mr)
{
    if (!mr)
        return -EINVAL;
    struct uiw_context *ctx = mr->context;
    uiw__lock_take(&ctx->mem_lock);
    struct uiw__stag *s = &ctx->stags[mr->handle];
    if (mr->handle == 0 || mr->handle >= ctx->nstags || s->mr != mr) {
        uiw__lock_give(&ctx->mem_lock);
        return -EINVAL;
    }
    s->state = UIW__STAG_FREE;
    stag_track(s);
    uint32_t gen = gen_bump(ctx);
    s->mr = NULL;
    s->pd = NULL;
    struct uiw__file_src *file = s->file; /* FPDUs built from it hold their own */
    s->file = NULL;
    /* Read Response segments built from it before (seq_cst: see uiw__qp_stag_pin) */
    bool pinned = atomic_load_explicit(&s->pins, memory_order_seq_cst) != 0;
    if (!pinned) {
        s->next_free = ctx->free_head;
        ctx->free_head = mr->handle;
    }
    uiw__lock_give(&ctx->mem_lock);
    uiw__file_src_put(file);
    /* a placement checked before (a read into it under way) ends before the call does */
    uiw__ctx_rx_quiesce(ctx, gen);
    if (pinned) {
        /* the memory may be freed once we return: the segments a QP has not begun to send
         * are dropped (its stream ends), the others are sent from a copy (a peer that
         * stopped reading cannot hold us); the index is reused once they are out */
        uiw__ctx_stag_gone(ctx, mr->handle);
        bool waited = false;
        while (!uiw__ctx_stag_unpin(ctx, mr->handle) ||
               atomic_load_explicit(&s->pins, memory_order_acquire) != 0) {
            if (!waited && uiw__dereg_wait_hook)
                uiw__dereg_wait_hook(ctx, UIW__DEREG_WAIT_SEND);
            waited = true;
            if (ctx->ops.progress)
                ctx->ops.progress(ctx, ctx->io);
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
        }
        uiw__lock_take(&ctx->mem_lock);
        s->next_free = ctx->free_head;
        ctx->free_head = mr->handle;
        uiw__lock_give(&ctx->mem_lock);
    }
    uiw__ctx_put(ctx);
    free(mr);
    return 0;
}

/* The checks of RFC 5040 8.1.1 against one entry (or none). */
UIW__DATAPATH static enum uiw__stag_err stag_verdict(const struct uiw__stag *s,
                                                     const struct uiw_pd *pd, uint32_t stag,
                                                     uint64_t to, uint64_t len, unsigned access)
{
    if ((stag >> 8) == 0 || !s || s->state != UIW__STAG_VALID || s->key != (uint8_t)stag)
        return UIW__STAG_E_INVALID;
    /* a LOCAL_ANY_PD registration serves every PD's local work requests, never a peer */
    if (s->pd != pd && ((s->access & UIW_ACCESS_LOCAL_ANY_PD) == 0 || (access & REMOTE) != 0))
        return UIW__STAG_E_PD;
    if (to + len < to)
        return UIW__STAG_E_WRAP;
    if (to < s->base || to + len > s->base + s->len)
        return UIW__STAG_E_BOUNDS;
    /* (a file region's only for a check that asks for UIW__ACCESS_FILE) */
    if ((s->access & (access | UIW__ACCESS_FILE)) != access)
        return UIW__STAG_E_ACCESS;
    return UIW__STAG_OK;
}

UIW__DATAPATH static enum uiw__stag_err stag_check(struct uiw_context *ctx, const struct uiw_pd *pd,
                                                   uint32_t stag, uint64_t to, uint64_t len,
                                                   unsigned access, struct uiw__stag_hit *hit)
{
    uint32_t idx = stag >> 8;
    uiw__lock_take(&ctx->mem_lock);
    const struct uiw__stag *s = idx < ctx->nstags ? &ctx->stags[idx] : NULL;
    enum uiw__stag_err e = stag_verdict(s, pd, stag, to, len, access);
    if (e == UIW__STAG_OK && hit) {
        hit->stag = stag;
        hit->gen = atomic_load_explicit(&ctx->mem_gen, memory_order_relaxed);
        hit->access = s->access;
        hit->base = s->base;
        hit->len = s->len;
    }
    uiw__lock_give(&ctx->mem_lock);
    return e;
}

/* uiw__qp_stag_check when neither remembered check answers: the table's. */
UIW__DATAPATH UIW__NOINLINE static enum uiw__stag_err qp_stag_miss(struct uiw_qp *qp, uint32_t stag,
                                                                   uint64_t to, uint64_t len,
                                                                   unsigned access, uint8_t **ptr)
{
    struct uiw__stag_hit *h = &qp->stag_hit[qp->stag_hit_next & 1];
    enum uiw__stag_err e = stag_check(qp->ctx, qp->pd, stag, to, len, access, h);
    if (e == UIW__STAG_OK) {
        qp->stag_hit_next++;
        *ptr = (uint8_t *)(uintptr_t)to;
    }
    return e;
}

UIW__DATAPATH enum uiw__stag_err uiw__qp_stag_check(struct uiw_qp *qp, uint32_t stag, uint64_t to,
                                                    uint64_t len, unsigned access, uint8_t **ptr)
{
    uint32_t gen = atomic_load_explicit(&qp->ctx->mem_gen, memory_order_acquire);
    for (int i = 0; i < 2; i++) {
        const struct uiw__stag_hit *h = &qp->stag_hit[i];
        if (h->stag == stag && h->gen == gen && to + len >= to && to >= h->base &&
            to + len <= h->base + h->len && (h->access & (access | UIW__ACCESS_FILE)) == access) {
            *ptr = (uint8_t *)(uintptr_t)to;
            return UIW__STAG_OK;
        }
    }
    return qp_stag_miss(qp, stag, to, len, access, ptr);
}

struct uiw__file_src *uiw__qp_stag_file(struct uiw_qp *qp, uint32_t stag, uint64_t to, uint64_t len,
                                        uint64_t *off)
{
    struct uiw_context *ctx = qp->ctx;
    uint32_t idx = stag >> 8;
    struct uiw__file_src *f = NULL;
    uiw__lock_take(&ctx->mem_lock);
    const struct uiw__stag *s = idx < ctx->nstags ? &ctx->stags[idx] : NULL;
    if (stag_verdict(s, qp->pd, stag, to, len, UIW__ACCESS_FILE) == UIW__STAG_OK && s->file) {
        f = s->file;
        atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
        *off = s->file_off + to;
    }
    uiw__lock_give(&ctx->mem_lock);
    return f;
}

enum uiw__stag_err uiw__qp_stag_pin(struct uiw_qp *qp, uint32_t stag, uint64_t to, uint64_t len,
                                    uint8_t **ptr, uint32_t *idx)
{
    struct uiw_context *ctx = qp->ctx;
    uint32_t i = stag >> 8;
    if (i == 0 || i >= ctx->nstags)
        return UIW__STAG_E_INVALID;
    /* Pin, then check (a generation the pin saw unchanged, or the table): uiw_dereg_mr
     * invalidates (a new generation), then looks for pins; one of the two sees the other. */
    atomic_fetch_add_explicit(&ctx->stags[i].pins, 1, memory_order_seq_cst);
    atomic_thread_fence(memory_order_seq_cst);
    enum uiw__stag_err e = uiw__qp_stag_check(qp, stag, to, len, UIW_ACCESS_REMOTE_READ, ptr);
    if (e != UIW__STAG_OK)
        uiw__stag_unpin(ctx, i);
    *idx = i;
    return e;
}

void uiw__stag_unpin(struct uiw_context *ctx, uint32_t idx)
{
    atomic_fetch_sub_explicit(&ctx->stags[idx].pins, 1, memory_order_release);
}

enum uiw__stag_err uiw__stag_check(struct uiw_context *ctx, const struct uiw_pd *pd, uint32_t stag,
                                   uint64_t to, uint64_t len, unsigned access, uint8_t **ptr)
{
    enum uiw__stag_err e = stag_check(ctx, pd, stag, to, len, access, NULL);
    if (e == UIW__STAG_OK && ptr)
        *ptr = (uint8_t *)(uintptr_t)to;
    return e;
}

int uiw__stag_invalidate(struct uiw_context *ctx, const struct uiw_pd *pd, uint32_t stag,
                         bool refuse_pinned)
{
    uint32_t idx = stag >> 8;
    int r = 0;
    uiw__lock_take(&ctx->mem_lock);
    struct uiw__stag *s = idx < ctx->nstags ? &ctx->stags[idx] : NULL;
    if (idx == 0 || !s || s->state == UIW__STAG_FREE)
        r = -EINVAL;
    else if (s->pd != pd)
        r = -EACCES;
    else if (!s->fastreg)
        r = -EPERM;
    else if (s->state == UIW__STAG_VALID && s->key == (uint8_t)stag && refuse_pinned &&
             atomic_load_explicit(&s->pins, memory_order_acquire) != 0)
        r = -EBUSY;
    else if (s->state == UIW__STAG_VALID && s->key == (uint8_t)stag) {
        s->state = UIW__STAG_INVALID;
        stag_track(s);
        gen_bump(ctx);
    }
    /* else already invalid: invalidated, or bound again under another key since (the
     * binding of the current key stays valid). Nothing to do and no error (RFC 5040
     * 5.3 asks only that the STag be associated with the stream; as Linux siw). */
    uiw__lock_give(&ctx->mem_lock);
    return r;
}

int uiw__stag_fastreg(struct uiw_context *ctx, const struct uiw_pd *pd, struct uiw_mr *mr,
                      uint32_t key, void *addr, size_t len, unsigned access)
{
    int r = 0;
    if (!mr || !access_ok(access) || (access & UIW_ACCESS_LOCAL_ANY_PD) || (!addr && len))
        return -EINVAL;
    uiw__lock_take(&ctx->mem_lock);
    uint32_t idx = mr->handle;
    struct uiw__stag *s = idx && idx < ctx->nstags ? &ctx->stags[idx] : NULL;
    if (!s || s->mr != mr || !s->fastreg || s->state != UIW__STAG_INVALID || s->pd != pd ||
        (key >> 8) != idx || len > s->max_len ||
        (uint64_t)(uintptr_t)addr + len < (uint64_t)(uintptr_t)addr) {
        r = -EINVAL;
    } else {
        s->key = (uint8_t)key;
        s->base = (uint64_t)(uintptr_t)addr;
        s->len = len;
        s->access = (uint8_t)access;
        s->state = UIW__STAG_VALID;
        stag_track(s);
        gen_bump(ctx);
        mr->addr = addr;
        mr->length = len;
        mr->lkey = mr->rkey = key;
    }
    uiw__lock_give(&ctx->mem_lock);
    return r;
}
