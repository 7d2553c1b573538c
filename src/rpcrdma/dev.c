/*
 * A transport device: the RNIC, pools of registered memory, and the poller that drives the
 * device's connections (one leader at a time; the other threads wait for its rounds).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/compiler.h"
#include "common/pages.h"
#include "rpcrdma/xprt.h"

#define SLAB_BUFS 64
#define BULK_MIN  8192u
#define BULK_KEEP 64 /* pooled buffers kept per class (more are temporary) */
/* A trim keeps one buffer of each class up to this size that has one (at most 2 MiB in
 * all): the first calls after a pause find their buffer's pages in place, not faulted in
 * again (256 page faults for 1 MiB, in the call's latency). */
#define BULK_FLOOR_MAX (1u << 20)
#define SLICE_MS       50 /* longest sleep of the leader (deadlines are rechecked) */
#define BATCH          16
/* A lead left vacant by a worker gone to run calls is taken by a sleeping worker after
 * this long (the calls' replies are late by that much when one of them is slow). */
#define WATCH_NS 500000u
/* How often the leader trims the bulk pool: a pooled buffer is freed when fewer were taken
 * at once since the last trim (a burst's buffers go back to the system) */
#define BULK_TRIM_NS 5000000000ull
/* The spin is skipped after this many waits in a row that it did not end (what they
 * waited for came later: a 1 MiB READ's data the server preads first, the next call of a
 * client reading the last reply), but for one wait in SPIN_PROBE, which learns when what
 * comes comes sooner again. */
#define SPIN_MISSES 4
#define SPIN_PROBE  8
/* After this many slices in a row that brought nothing, the leader sleeps wakeably: on
 * the completion channel and the wake fd only, which leaves the sockets to the RNIC's
 * progress thread. A leader asleep on the sockets (uiw__nic_wait) has that thread look
 * every few milliseconds whether it is still there (100 wake-ups a second of an idle
 * server); one asleep wakeably has it sleep on the sockets alone, and the first message
 * after the pause reaches the leader through it (a hand-off, after IDLE_SLICES * SLICE_MS
 * of nothing). */
#define IDLE_SLICES 4
/* The sleeps of an idle leader, and meanwhile of the workers that do not watch: what
 * comes wakes the leader (its channel, its wake fd), and a worker is woken when the
 * leader leaves to run calls, or when workers are to stop (uiw__rr_dev_interrupt,
 * uiw__rr_dev_wake_all). Within the callers' deadlines. */
#define IDLE_SLICE_MS 1000

struct uiw__rr_slab {
    struct uiw__rr_slab *next;
    uint8_t *mem;
    size_t len; /* mapped */
    int nbufs;
    struct uiw__nic_mr mr;
    struct uiw__rr_ibuf bufs[SLAB_BUFS];
};

uint64_t uiw__rr_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct uiw__rr_dev *uiw__rr_dev_open(const struct uiw__rr_dev_attr *a)
{
    struct uiw__rr_dev *d = calloc(1, sizeof(*d));
    if (!d) {
        errno = ENOMEM;
        return NULL;
    }
    struct uiw__nic_attr na = {.pcap_dir = a->pcap_dir};
    d->nic = uiw__nic_open(&na);
    if (!d->nic) {
        int e = errno;
        free(d);
        errno = e;
        return NULL;
    }
    d->ibuf_size = a->inline_size;
    d->max_msg = a->max_msg;
    d->max_ddp = a->max_ddp;
    d->max_read = a->max_read;
    d->spin_us = a->spin_us;
    d->resident = a->resident;
    uiw__lock_init(&d->pool_lock);
    pthread_mutex_init(&d->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&d->cv, &ca);
    pthread_cond_init(&d->wcv, &ca);
    pthread_condattr_destroy(&ca);
    return d;
}

static void bulk_free_one(struct uiw__rr_bulk *b)
{
    uiw__nic_dereg(&b->mr);
    uiw__pages_free(b->p, b->cap);
    free(b);
}

void uiw__rr_dev_close(struct uiw__rr_dev *d)
{
    if (!d)
        return;
    for (int i = 0; i < UIW__RR_NCLS; i++) {
        while (d->bulk_free[i]) {
            struct uiw__rr_bulk *b = d->bulk_free[i];
            d->bulk_free[i] = b->next;
            bulk_free_one(b);
        }
    }
    while (d->slabs) {
        struct uiw__rr_slab *s = d->slabs;
        d->slabs = s->next;
        uiw__nic_dereg(&s->mr);
        uiw__pages_free(s->mem, s->len);
        free(s);
    }
    uiw__nic_close(d->nic);
    pthread_cond_destroy(&d->cv);
    pthread_cond_destroy(&d->wcv);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

/* ---------------------------------------------------------------- inline buffers */

static int slab_add(struct uiw__rr_dev *d)
{
    struct uiw__rr_slab *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    size_t stride = UIW__RR_HDR_ROOM + d->ibuf_size;
    if (d->resident) {
        /* as many as fill a multiple of 2 MiB (one huge page, where there are some):
         * written now, so that no message waits for a page fault. A connection's
         * receives take their buffers in turn, so its first calls (as many as it posted)
         * would each land in pages never touched. */
        size_t fit = uiw__pages_resident_len(stride) / stride;
        s->nbufs = fit < SLAB_BUFS ? (int)fit : SLAB_BUFS;
        s->len = uiw__pages_resident_len(stride * (size_t)s->nbufs);
        s->mem = uiw__pages_alloc_resident(s->len);
    } else {
        /* untouched until a message lands in a buffer: receives posted and never used (a
         * connection's credits that its peer does not use) cost no memory */
        s->nbufs = SLAB_BUFS;
        s->len = stride * SLAB_BUFS;
        s->mem = uiw__pages_alloc(s->len);
    }
    if (!s->mem) {
        free(s);
        return -ENOMEM;
    }
    int r = uiw__nic_reg(d->nic, s->mem, s->len, UIW__NIC_LOCAL_WRITE, &s->mr);
    if (r) {
        uiw__pages_free(s->mem, s->len);
        free(s);
        return r;
    }
    for (int i = 0; i < s->nbufs; i++) {
        struct uiw__rr_ibuf *b = &s->bufs[i];
        b->data = s->mem + (size_t)i * stride + UIW__RR_HDR_ROOM;
        b->lkey = s->mr.lkey;
        b->resident = d->resident;
        b->next = d->ibuf_free;
        d->ibuf_free = b;
    }
    if (d->resident)
        atomic_fetch_add_explicit(&d->ibuf_resident, (uint32_t)s->nbufs, memory_order_relaxed);
    s->next = d->slabs;
    d->slabs = s;
    return 0;
}

UIW__DATAPATH struct uiw__rr_ibuf *uiw__rr_ibuf_get(struct uiw__rr_dev *d)
{
    uiw__lock_take(&d->pool_lock);
    if (!d->ibuf_free && slab_add(d) != 0) {
        uiw__lock_give(&d->pool_lock);
        return NULL;
    }
    struct uiw__rr_ibuf *b = d->ibuf_free;
    d->ibuf_free = b->next;
    if (++d->ibuf_taken > d->ibuf_peak)
        d->ibuf_peak = d->ibuf_taken;
    if (!b->resident) {
        b->resident = true;
        atomic_fetch_add_explicit(&d->ibuf_resident, 1, memory_order_relaxed);
    }
    uiw__lock_give(&d->pool_lock);
    b->next = NULL;
    b->conn = NULL;
    b->len = 0;
    b->with_inv = false;
    return b;
}

UIW__DATAPATH void uiw__rr_ibuf_put(struct uiw__rr_dev *d, struct uiw__rr_ibuf *b)
{
    if (!b)
        return;
    uiw__lock_take(&d->pool_lock);
    b->next = d->ibuf_free;
    d->ibuf_free = b;
    d->ibuf_taken--;
    uiw__lock_give(&d->pool_lock);
}

void uiw__rr_ibuf_discard(struct uiw__rr_dev *d, struct uiw__rr_ibuf *b)
{
    if (!b->resident)
        return;
    uiw__pages_discard(b->data - UIW__RR_HDR_ROOM, UIW__RR_HDR_ROOM + d->ibuf_size);
    b->resident = false;
    atomic_fetch_sub_explicit(&d->ibuf_resident, 1, memory_order_relaxed);
}

/* The free inline buffers beyond those needed at once since the last trim give their
 * memory back (a burst's replies and receives): they stay pooled and registered, their
 * pages untouched until used again (the list's tail: used last). */
static void ibuf_trim(struct uiw__rr_dev *d)
{
    if (d->resident)
        return; /* kept, as written when made */
    uiw__lock_take(&d->pool_lock);
    uint32_t keep = d->ibuf_peak - d->ibuf_taken;
    d->ibuf_peak = d->ibuf_taken;
    struct uiw__rr_ibuf **pp = &d->ibuf_free;
    for (uint32_t i = 0; *pp && i < keep; i++)
        pp = &(*pp)->next;
    struct uiw__rr_ibuf *cold = *pp;
    *pp = NULL;
    uiw__lock_give(&d->pool_lock);
    if (!cold)
        return;
    for (struct uiw__rr_ibuf *b = cold; b; b = b->next)
        uiw__rr_ibuf_discard(d, b);
    /* back at the end of the list (taken meanwhile: the list's head changed, not its
     * order) */
    uiw__lock_take(&d->pool_lock);
    pp = &d->ibuf_free;
    while (*pp)
        pp = &(*pp)->next;
    *pp = cold;
    uiw__lock_give(&d->pool_lock);
}

/* ---------------------------------------------------------------- bulk buffers */

static int bulk_class(uint32_t len)
{
    uint32_t sz = BULK_MIN;
    for (int c = 0; c < UIW__RR_NCLS; c++, sz <<= 1)
        if (len <= sz)
            return c;
    return -1;
}

static struct uiw__rr_bulk *bulk_new(struct uiw__rr_dev *d, uint32_t cap, int cls)
{
    struct uiw__rr_bulk *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    /* pages of its own, which go back to the system when it is freed (malloc would keep
     * a freed buffer's memory in its arenas, touched) */
    b->p = uiw__pages_alloc(cap);
    if (!b->p) {
        free(b);
        return NULL;
    }
    if (uiw__nic_reg(d->nic, b->p, cap, UIW__NIC_LOCAL_WRITE, &b->mr) != 0) {
        uiw__pages_free(b->p, cap);
        free(b);
        return NULL;
    }
    b->cap = cap;
    b->lkey = b->mr.lkey;
    b->cls = cls;
    return b;
}

/* A pooled buffer of class c taken (pool_lock held). */
static void bulk_took(struct uiw__rr_dev *d, int c)
{
    if (++d->bulk_taken[c] > d->bulk_peak[c])
        d->bulk_peak[c] = d->bulk_taken[c];
}

struct uiw__rr_bulk *uiw__rr_bulk_get(struct uiw__rr_dev *d, uint32_t len)
{
    int c = bulk_class(len);
    if (c >= 0) {
        uiw__lock_take(&d->pool_lock);
        struct uiw__rr_bulk *b = d->bulk_free[c];
        if (b) {
            d->bulk_free[c] = b->next;
            bulk_took(d, c);
            uiw__lock_give(&d->pool_lock);
            b->next = NULL;
            return b;
        }
        bool keep = d->bulk_count[c] < BULK_KEEP;
        if (keep) {
            d->bulk_count[c]++;
            bulk_took(d, c);
        }
        uiw__lock_give(&d->pool_lock);
        b = bulk_new(d, BULK_MIN << c, keep ? c : -1);
        if (!b && keep) {
            uiw__lock_take(&d->pool_lock);
            d->bulk_count[c]--;
            d->bulk_taken[c]--;
            uiw__lock_give(&d->pool_lock);
        }
        return b;
    }
    return bulk_new(d, len, -1);
}

void uiw__rr_bulk_put(struct uiw__rr_dev *d, struct uiw__rr_bulk *b)
{
    if (!b)
        return;
    if (b->cls < 0) {
        bulk_free_one(b);
        return;
    }
    uiw__lock_take(&d->pool_lock);
    b->next = d->bulk_free[b->cls];
    d->bulk_free[b->cls] = b;
    d->bulk_taken[b->cls]--;
    uiw__lock_give(&d->pool_lock);
}

void uiw__rr_bulk_trim(struct uiw__rr_dev *d)
{
    struct uiw__rr_bulk *drop = NULL;
    uiw__lock_take(&d->pool_lock);
    for (int c = 0; c < UIW__RR_NCLS; c++) {
        uint32_t floor = (BULK_MIN << c) <= BULK_FLOOR_MAX ? 1 : 0;
        uint32_t keep = d->bulk_peak[c] > floor ? d->bulk_peak[c] : floor;
        while (d->bulk_free[c] && d->bulk_count[c] > keep) {
            struct uiw__rr_bulk *b = d->bulk_free[c];
            d->bulk_free[c] = b->next;
            d->bulk_count[c]--;
            b->next = drop;
            drop = b;
        }
        d->bulk_peak[c] = d->bulk_taken[c];
    }
    uiw__lock_give(&d->pool_lock);
    while (drop) {
        struct uiw__rr_bulk *b = drop;
        drop = b->next;
        bulk_free_one(b);
    }
    ibuf_trim(d);
}

/* Bytes of the device's inline buffers (every block of them, mapped) and how many of those
 * are resident now (mincore). */
static void ibuf_mem(struct uiw__rr_dev *d, size_t *mapped, size_t *resident)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), m = 0, r = 0;
    unsigned char v[256];
    /* slabs are only added, at the list's head, and freed with the device: the list from
     * its head now is walked without the lock the data path takes */
    uiw__lock_take(&d->pool_lock);
    struct uiw__rr_slab *head = d->slabs;
    uiw__lock_give(&d->pool_lock);
    for (struct uiw__rr_slab *s = head; s; s = s->next) {
        m += s->len;
        for (size_t off = 0; off < s->len; off += sizeof(v) * pg) {
            size_t n = s->len - off < sizeof(v) * pg ? s->len - off : sizeof(v) * pg;
            if (mincore(s->mem + off, n, v) != 0)
                continue;
            for (size_t i = 0; i < (n + pg - 1) / pg; i++)
                r += (v[i] & 1) ? pg : 0;
        }
    }
    *mapped = m;
    *resident = r;
}

void uiw__rr_dev_mem(struct uiw__rr_dev *d, struct uiw_rpc_xprt_stats *st)
{
    size_t m, r;
    ibuf_mem(d, &m, &r);
    st->inline_buffer_bytes = m;
    st->inline_buffer_resident = r;
    uint64_t b = 0;
    uiw__lock_take(&d->pool_lock);
    for (int c = 0; c < UIW__RR_NCLS; c++)
        b += (uint64_t)d->bulk_count[c] * (BULK_MIN << c);
    uiw__lock_give(&d->pool_lock);
    st->bulk_buffer_bytes = b;
}

uint32_t uiw__rr_dev_lkey(struct uiw__rr_dev *d, const void *p, uint32_t len)
{
    uintptr_t a = (uintptr_t)p;
    uint32_t k = 0;
    uiw__lock_take(&d->pool_lock);
    for (struct uiw__rr_slab *s = d->slabs; s && !k; s = s->next)
        if (a >= (uintptr_t)s->mem && a + len <= (uintptr_t)s->mem + s->len)
            k = s->mr.lkey;
    uiw__lock_give(&d->pool_lock);
    return k;
}

/* ---------------------------------------------------------------- fast-register MRs */

struct uiw__rr_mr *uiw__rr_mr_get(struct uiw__rr_conn *c)
{
    uiw__lock_take(&c->mr_lock);
    struct uiw__rr_mr *m = c->mr_free;
    if (m)
        c->mr_free = m->next;
    uiw__lock_give(&c->mr_lock);
    if (!m) {
        m = calloc(1, sizeof(*m));
        if (!m)
            return NULL;
        struct uiw__rr_dev *d = c->dev;
        uint32_t max = d->max_ddp > d->max_msg ? d->max_ddp : d->max_msg;
        if (uiw__nic_frmr(c->nc, max, &m->nmr) != 0) {
            free(m);
            return NULL;
        }
        m->conn = c;
        uiw__lock_take(&c->mr_lock);
        m->all_next = c->mrs_all;
        c->mrs_all = m;
        uiw__lock_give(&c->mr_lock);
    }
    m->next = NULL;
    uiw__rr_conn_get(c);
    return m;
}

void uiw__rr_mr_put(struct uiw__rr_mr *m)
{
    if (!m)
        return;
    struct uiw__rr_conn *c = m->conn;
    uiw__lock_take(&c->mr_lock);
    m->next = c->mr_free;
    c->mr_free = m;
    uiw__lock_give(&c->mr_lock);
    uiw__rr_conn_put(c); /* the last reference frees the pool with c */
}

/* ---------------------------------------------------------------- the poller */

/* The receives a batch of completions used are posted again before any of its calls is
 * handed up: a reply sent for one of them lets the peer send its next call at once, and
 * that call must find a receive (granted credits + the extras are all the slack there is;
 * a pass over several batches that replaced them only at its end left the peer's calls
 * with none, and the RNIC ended the connection with Terminate "no buffer available"). */
static void refill(struct uiw__rr_conn *c, const struct uiw__nic_wc *wc, int n)
{
    uint32_t used = 0;
    bool ok = true;
    for (int i = 0; i < n; i++) {
        const struct uiw__rr_wrid *w = (const struct uiw__rr_wrid *)(uintptr_t)wc[i].wr_id;
        used += w->kind == UIW__RR_WR_RECV;
        ok = ok && wc[i].status == UIW__NIC_WC_OK;
    }
    if (!used)
        return;
    atomic_fetch_sub(&c->rposted, used);
    int st = atomic_load(&c->state);
    if (ok && (st == UIW__RR_C_READY || st == UIW__RR_C_NEGOTIATING) && !atomic_load(&c->closing))
        (void)uiw__rr_post_recvs(c); /* a failure: the end of the pass tries again */
}

static int poll_conn(struct uiw__rr_conn *c)
{
    struct uiw__nic_wc wc[BATCH];
    int total = 0;
    /* what the completions make us send (Reads, queued calls, errors): one doorbell */
    uiw__rr_plug();
    for (;;) {
        int n = uiw__nic_poll(c->nc, wc, BATCH);
        if (n <= 0)
            break;
        refill(c, wc, n);
        for (int i = 0; i < n; i++) {
            if (wc[i].op == UIW__NIC_WC_RECV || wc[i].op == UIW__NIC_WC_READ)
                c->dev->polled_input = true;
            uiw__rr_conn_complete(c, &wc[i]);
        }
        total += n;
        if (n < BATCH)
            break;
    }
    uiw__rr_unplug();
    if (total) {
        int st = atomic_load(&c->state);
        if ((st == UIW__RR_C_READY || st == UIW__RR_C_NEGOTIATING) && !atomic_load(&c->closing))
            uiw__rr_post_recvs(c);
    }
    /* Room may have come without a completion that retries them (a call the upper layer
     * finished after its reply's Send completed, a control message's completion): every
     * pass looks. */
    if (c->read_wait)
        uiw__rr_pull_waiting(c);
    uiw__rr_replies_waiting(c);
    return total;
}

/* Drained connections leave the list (only the leader removes; adders push at the head
 * under the mutex). */
static void reap(struct uiw__rr_dev *d)
{
    pthread_mutex_lock(&d->mu);
    struct uiw__rr_conn **pp = &d->conns;
    struct uiw__rr_conn *gone = NULL;
    while (*pp) {
        struct uiw__rr_conn *c = *pp;
        if (atomic_load(&c->state) == UIW__RR_C_DEAD && c->mark_done &&
            atomic_load(&c->rposted) == 0) {
            atomic_store(&c->state, UIW__RR_C_DRAINED);
            *pp = c->next;
            c->next = gone;
            gone = c;
            d->nconns--;
            if (d->last_active == c)
                d->last_active = NULL;
            continue;
        }
        pp = &c->next;
    }
    pthread_mutex_unlock(&d->mu);
    while (gone) {
        struct uiw__rr_conn *c = gone;
        gone = c->next;
        c->next = NULL;
        if (c->up && c->up->drained)
            c->up->drained(c);
        uiw__rr_conn_put(c); /* the device list's reference */
    }
}

void uiw__rr_dev_count(struct uiw__rr_dev *d, struct uiw__rr_conn *c)
{
    pthread_mutex_lock(&d->mu);
    c->all_next = d->all;
    d->all = c;
    c->on_all = true;
    pthread_mutex_unlock(&d->mu);
}

void uiw__rr_dev_uncount(struct uiw__rr_dev *d, struct uiw__rr_conn *c, bool fold)
{
    pthread_mutex_lock(&d->mu);
    if (c->on_all) {
        struct uiw__rr_conn **pp = &d->all;
        while (*pp != c)
            pp = &(*pp)->all_next;
        *pp = c->all_next;
        c->on_all = false;
        if (fold)
            uiw__rr_conn_stats_add(c, &d->past);
    }
    pthread_mutex_unlock(&d->mu);
}

void uiw__rr_dev_stats(struct uiw__rr_dev *d, struct uiw_rpc_xprt_stats *st)
{
    pthread_mutex_lock(&d->mu);
    *st = d->past;
    for (struct uiw__rr_conn *c = d->all; c; c = c->all_next)
        uiw__rr_conn_stats_add(c, st);
    pthread_mutex_unlock(&d->mu);
    st->sleeps = atomic_load_explicit(&d->n_sleeps, memory_order_relaxed);
    st->spins_skipped = atomic_load_explicit(&d->n_spin_skips, memory_order_relaxed);
    if (uiw__nic_stats(d->nic, &st->rnic) != 0)
        memset(&st->rnic, 0, sizeof(st->rnic));
    uiw__rr_dev_mem(d, st);
}

static int poll_all(struct uiw__rr_dev *d)
{
    pthread_mutex_lock(&d->mu);
    struct uiw__rr_conn *head = d->conns;
    pthread_mutex_unlock(&d->mu);
    int n = 0;
    bool dead = false;
    for (struct uiw__rr_conn *c = head; c; c = c->next) {
        int k = poll_conn(c);
        if (k)
            d->last_active = c;
        n += k;
        if (atomic_load(&c->state) == UIW__RR_C_DEAD)
            dead = true;
    }
    if (dead)
        reap(d);
    return n;
}

/* c (compared, not read: it may be freed) is on the device's list. */
static bool listed(struct uiw__rr_dev *d, const void *c)
{
    pthread_mutex_lock(&d->mu);
    const struct uiw__rr_conn *p = d->conns;
    while (p && p != c)
        p = p->next;
    pthread_mutex_unlock(&d->mu);
    return p != NULL;
}

static void lead(struct uiw__rr_dev *d, uint64_t deadline)
{
    /* the run of empty slices goes on only through another one (below) */
    unsigned idle_run = d->idle_slices;
    d->idle_slices = 0;
    if (poll_all(d) > 0)
        return;
    uint64_t now = uiw__rr_now_ns();
    if (now >= d->bulk_trim_ns) {
        if (d->bulk_trim_ns) {
            uiw__rr_bulk_trim(d);
            pthread_mutex_lock(&d->mu);
            struct uiw__rr_conn *head = d->conns;
            pthread_mutex_unlock(&d->mu);
            for (struct uiw__rr_conn *c = head; c; c = c->next)
                uiw__rr_conn_trim(c);
        }
        d->bulk_trim_ns = now + BULK_TRIM_NS;
    }
    /* A spin that ends in a sleep anyway costs the CPU time it burnt, and on a host with
     * fewer free CPUs than busy threads it keeps the peer that is to answer (its process
     * on this CPU, the server of a loopback mount) off the CPU for as long. */
    bool spins =
        d->spin_us > 0 && (d->spin_misses < SPIN_MISSES || ++d->spin_probe % SPIN_PROBE == 0);
    if (d->spin_us > 0 && !spins)
        UIW__RR_COUNT(d->n_spin_skips, 1);
    if (spins) {
        /* spin_us of idle polling: a spin window in which the RNIC did work (a peer's RDMA
         * Read served from this thread, its Writes placed) is followed by another, so that
         * a requester that spent its spin sending a Read chunk is still polling when the
         * reply comes. The RNIC's counters (every QP's lock) are read once per window, not
         * on every pass. */
        uint64_t spin = (uint64_t)d->spin_us * 1000u, until = now + spin;
        uint64_t act = uiw__nic_activity(d->nic);
        if (deadline && until > deadline)
            until = deadline;
        for (;;) {
            struct uiw__rr_conn *c = d->last_active;
            d->polled_input = false;
            int k = c ? poll_conn(c) : 0;
            if (k > 0 || poll_all(d) > 0) {
                /* what a wait is for came (not only the completion of a Send) */
                if (d->polled_input)
                    d->spin_misses = 0;
                return;
            }
            now = uiw__rr_now_ns();
            if (now < until)
                continue;
            uint64_t a = uiw__nic_activity(d->nic);
            if (a == act || (deadline && now >= deadline)) {
                if (d->spin_misses < SPIN_MISSES)
                    d->spin_misses++;
                break;
            }
            act = a;
            until = deadline && now + spin > deadline ? deadline : now + spin;
        }
    }
    /* arm, look once more, sleep */
    pthread_mutex_lock(&d->mu);
    struct uiw__rr_conn *head = d->conns;
    pthread_mutex_unlock(&d->mu);
    for (struct uiw__rr_conn *c = head; c; c = c->next) {
        if (!c->armed) {
            c->armed = true;
            uiw__nic_arm(c->nc);
        }
    }
    if (poll_all(d) > 0)
        return;
    bool idle = idle_run >= IDLE_SLICES;
    int slice = idle ? IDLE_SLICE_MS : SLICE_MS;
    int ms = slice;
    now = uiw__rr_now_ns();
    if (deadline) {
        uint64_t left = deadline > now ? deadline - now : 0;
        if (left / 1000000u < (uint64_t)ms)
            ms = (int)(left / 1000000u) + 1;
    }
    /* a connection that joined the list since the arming above is armed first */
    if (atomic_exchange(&d->joined, false))
        return;
    void *ctx = NULL;
    /* after the passes above: a call they left waiting for room is counted by now */
    UIW__RR_COUNT(d->n_sleeps, 1);
    /* after an event of a connection not on the list (one about to join it, whose first
     * completion came first and took its CQ's arming), a sleep its join wakes: the leader
     * then arms and polls it; and one after IDLE_SLICES slices of nothing */
    bool wakeable = atomic_load(&d->room_waiters) > 0 || now < d->unlisted_until || idle;
    atomic_store_explicit(&d->lead_idle, idle, memory_order_relaxed);
    atomic_store_explicit(&d->lead_asleep, true, memory_order_relaxed);
    int r = wakeable ? uiw__nic_wait_wakeable(d->nic, ms, &ctx) : uiw__nic_wait(d->nic, ms, &ctx);
    atomic_store_explicit(&d->lead_asleep, false, memory_order_relaxed);
    atomic_store_explicit(&d->lead_idle, false, memory_order_relaxed);
    if (r == -ETIMEDOUT && ms == slice) {
        atomic_fetch_add_explicit(&d->n_slices, 1, memory_order_relaxed);
        d->idle_slices = idle ? IDLE_SLICES : idle_run + 1;
    } else if (r == -ETIMEDOUT) {
        d->idle_slices = idle_run; /* cut short by the caller's deadline: no event either */
    }
    /* a late event can come from a connection reap already took off the list, which its
     * owner may free at any time (a server's on the listener's thread): only one still on
     * the list is looked at, which the list's reference keeps alive (only the leader, this
     * thread, takes one off); last_active, too, names one on the list only */
    if (r == 0 && ctx && listed(d, ctx)) {
        struct uiw__rr_conn *c = ctx;
        c->armed = false;
        poll_conn(c);
        d->last_active = c;
        if (atomic_load(&c->state) == UIW__RR_C_DEAD)
            reap(d);
    } else if (r == 0 && ctx) {
        d->unlisted_until = uiw__rr_now_ns() + (uint64_t)SLICE_MS * 1000000u;
    }
}

static _Thread_local bool leading;

/* Lead one round (mu held, nobody leading; held again on return), then wake the threads
 * waiting for a condition. */
static void lead_round(struct uiw__rr_dev *d, uint64_t deadline)
{
    d->leader = true;
    pthread_mutex_unlock(&d->mu);
    leading = true;
    lead(d, deadline);
    leading = false;
    pthread_mutex_lock(&d->mu);
    d->leader = false;
    d->round++;
    pthread_cond_broadcast(&d->cv);
}

/* Unless a worker watches already (mu held), wake one. */
static void wake_worker(struct uiw__rr_dev *d)
{
    if (d->wsleep && !d->watched)
        pthread_cond_signal(&d->wcv);
}

/* After a round led by a thread that is not a worker (mu held): a worker is to run what
 * it found, if anything, and to lead. */
static void hand_over(struct uiw__rr_dev *d)
{
    d->handed = true;
    wake_worker(d);
}

static struct timespec abs_ts(uint64_t ns)
{
    return (struct timespec){.tv_sec = (time_t)(ns / 1000000000u),
                             .tv_nsec = (long)(ns % 1000000000u)};
}

bool uiw__rr_leading(void)
{
    return leading;
}

int uiw__rr_dev_poll(struct uiw__rr_dev *d)
{
    uiw__rr_plug_flush();
    pthread_mutex_lock(&d->mu);
    if (d->leader) {
        pthread_mutex_unlock(&d->mu);
        return 0;
    }
    d->leader = true;
    pthread_mutex_unlock(&d->mu);
    leading = true;
    int n = poll_all(d);
    leading = false;
    pthread_mutex_lock(&d->mu);
    d->leader = false;
    d->round++;
    pthread_cond_broadcast(&d->cv);
    hand_over(d);
    pthread_mutex_unlock(&d->mu);
    return n;
}

void uiw__rr_dev_kick(struct uiw__rr_dev *d)
{
    pthread_mutex_lock(&d->mu);
    pthread_cond_broadcast(&d->cv);
    if (!d->leader)
        wake_worker(d);
    pthread_mutex_unlock(&d->mu);
}

void uiw__rr_dev_interrupt(struct uiw__rr_dev *d)
{
    uiw__nic_wake(d->nic);
}

void uiw__rr_dev_wake_all(struct uiw__rr_dev *d)
{
    pthread_mutex_lock(&d->mu);
    pthread_cond_broadcast(&d->cv);
    pthread_cond_broadcast(&d->wcv);
    pthread_mutex_unlock(&d->mu);
    uiw__nic_wake(d->nic);
}

int uiw__rr_dev_wait(struct uiw__rr_dev *d, bool (*done)(void *), void *arg, uint64_t deadline)
{
    uiw__rr_plug_flush();
    pthread_mutex_lock(&d->mu);
    for (;;) {
        if (done && done(arg)) {
            pthread_mutex_unlock(&d->mu);
            return 0;
        }
        uint64_t now = uiw__rr_now_ns();
        if (deadline && now >= deadline) {
            pthread_mutex_unlock(&d->mu);
            return -ETIMEDOUT;
        }
        if (!d->leader) {
            lead_round(d, deadline);
            hand_over(d);
            if (!done) {
                pthread_mutex_unlock(&d->mu);
                return 0;
            }
            continue;
        }
        uint64_t until = now + (uint64_t)SLICE_MS * 1000000u;
        if (deadline && deadline < until)
            until = deadline;
        struct timespec ts = abs_ts(until);
        uint64_t r0 = d->round;
        if (pthread_cond_timedwait(&d->cv, &d->mu, &ts) == ETIMEDOUT && until != deadline)
            atomic_fetch_add_explicit(&d->n_slices, 1, memory_order_relaxed);
        if (!done && d->round != r0) {
            pthread_mutex_unlock(&d->mu);
            return 0;
        }
    }
}

/* A worker leaves to run the calls waiting (mu held): with nobody leading, the lead is
 * vacant from now on, and a sleeping worker watches it unless one does already. Nobody is
 * woken to lead beside it: as the TCP server's event thread, the worker runs the calls it
 * found and then polls again, and another takes the lead only when this one is held up
 * (the watcher, after WATCH_NS). A second leader woken at once polls what the first will
 * poll when it is back; on a host with no CPU to spare (the client on the same host, other
 * loads) it takes its CPU time from the threads that make the calls and run them: with
 * one NFS client reading many small files, eight calls in flight, that wake cost a
 * context switch per call and a quarter of the calls per second. */
static void leave_to_run(struct uiw__rr_dev *d)
{
    d->handed = false;
    if (d->leader)
        return;
    d->vacated = uiw__rr_now_ns();
    wake_worker(d);
}

int uiw__rr_dev_work(struct uiw__rr_dev *d, unsigned (*work)(void *), uint64_t (*taken)(void *),
                     void *arg, uint64_t deadline)
{
    uiw__rr_plug_flush();
    pthread_mutex_lock(&d->mu);
    bool woke = false;              /* from a sleep (not back from calls or a round of its own) */
    uint64_t seen = 0, seen_at = 0; /* taken(arg) as last seen changing (or nothing waiting) */
    for (;;) {
        uint64_t now = uiw__rr_now_ns();
        /* A worker back from its calls or a round of its own runs the calls waiting, or
         * takes a vacant lead, at once. One woken from sleep leaves both to the worker
         * that found them or left it (the calls a leader finds are run by the worker that
         * found them: a second would only compete with it for the CPUs), unless that one
         * is held up (the lead vacant WATCH_NS, or calls waiting while none was taken to
         * run for WATCH_NS) or was not a worker (handed). */
        unsigned waiting = work(arg);
        uint64_t t = taken(arg);
        if (!waiting || t != seen) {
            seen = t;
            seen_at = now;
        }
        if (waiting && (!woke || d->handed || now - seen_at >= WATCH_NS)) {
            leave_to_run(d);
            pthread_mutex_unlock(&d->mu);
            return 0;
        }
        if (deadline && now >= deadline) {
            pthread_mutex_unlock(&d->mu);
            return -ETIMEDOUT;
        }
        bool vacant = !d->leader && (!d->vacated || now - d->vacated >= WATCH_NS);
        if (!d->leader && (!woke || vacant)) {
            d->vacated = 0;
            lead_round(d, deadline);
            woke = false;
            continue;
        }
        /* asleep: one worker watches while the device is busy (calls waiting, a lead
         * vacant, or a leader that polls), the others sleep a slice (or until woken), an
         * idle leader's long one while it sleeps as such */
        bool watch = !d->watched && (waiting || !d->leader ||
                                     !atomic_load_explicit(&d->lead_asleep, memory_order_relaxed));
        bool idle = atomic_load_explicit(&d->lead_idle, memory_order_relaxed);
        uint64_t until = now + (uint64_t)(idle ? IDLE_SLICE_MS : SLICE_MS) * 1000000u;
        if (watch) {
            d->watched = true;
            until = now + WATCH_NS;
            if (waiting && seen_at + WATCH_NS < until)
                until = seen_at + WATCH_NS;
            if (!d->leader && d->vacated && d->vacated + WATCH_NS < until)
                until = d->vacated + WATCH_NS;
        }
        if (deadline && deadline < until)
            until = deadline;
        struct timespec ts = abs_ts(until);
        d->wsleep++;
        int r = pthread_cond_timedwait(&d->wcv, &d->mu, &ts);
        d->wsleep--;
        if (watch)
            d->watched = false;
        if (r == 0)
            seen_at = uiw__rr_now_ns(); /* woken to look, not after a while */
        woke = true;
    }
}
