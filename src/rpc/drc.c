/*
 * The duplicate-reply cache: a call sent again (after a lost connection, or after
 * REPLY_RESOURCE) is answered with the reply of its first execution instead of running
 * twice. Entries are keyed by XID, program, version, procedure, the transport, the requester's
 * address (without the port: a reconnecting client comes from another one) and a
 * checksum of the call's first bytes, as knfsd keys them; a fixed table with room for
 * one reply each, reused in clock order. A server's forward calls and a client's
 * backward calls each have one; another transport's server (uiw-nfsd's TCP) keeps its
 * calls' replies in it too, as bytes (drc.h): one bound on the memory of both.
 *
 * A reply answered with RDMA2_ERR_REPLY_RESOURCE is sent again, with a larger Reply chunk,
 * whatever its size: one larger than an entry's room is kept in its own buffer (taken
 * from the call, no copy) until the call comes back, at most max_kept of them, the
 * oldest given up first.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uiw/wire.h>

#include "rpc/drc.h"
#include "rpc/rpc_internal.h"

enum { E_FREE = 0, E_BUSY, E_DONE };

struct drc_ent {
    int state;
    struct uiw__drc_key key;
    uint32_t hnext; /* index + 1 of the next entry of the bucket, 0: none */
    uint32_t bucket;
    /* a reply kept in its own buffer (one of them), and its place in `kept` (+ 1) */
    struct uiw__rr_ibuf *kib;
    struct uiw__rr_bulk *kbulk;
    uint32_t kslot;
    void *owner;   /* an RDMA call, or another transport's token */
    bool awaited;  /* a retransmission as bytes waits for this entry's end */
    bool uncached; /* taken by uiw__drc_claim (counted in nuncached while linked) */
    struct uiw__rpc_scall *waiter;
    uint32_t len;
};

struct uiw__drc {
    pthread_mutex_t lock;
    pthread_cond_t ended; /* an entry kept as bytes ended (uiw__drc_end) */
    uint32_t n, max_reply, hmask;
    struct drc_ent *e;
    uint32_t *heads;
    uint8_t *data;
    uint32_t clock;
    struct uiw__rr_dev *dev; /* of the kept buffers */
    uint32_t max_kept, kept_next;
    uint32_t *kept; /* entries holding a buffer (index + 1, 0: none), oldest at kept_next */
    _Atomic uint32_t nuncached; /* linked entries taken by uiw__drc_claim */
    bool ready;
};

struct uiw__drc *uiw__drc_new(uint32_t entries, uint32_t max_reply, uint32_t max_kept,
                              struct uiw__rr_dev *dev)
{
    struct uiw__drc *d = calloc(1, sizeof(*d));
    if (!d)
        return NULL;
    uint32_t h = 1;
    while (h < entries)
        h <<= 1;
    d->n = entries;
    d->max_reply = max_reply;
    d->hmask = h - 1;
    d->dev = dev;
    d->max_kept = max_kept;
    d->e = calloc(entries, sizeof(*d->e));
    d->heads = calloc(h, sizeof(*d->heads));
    d->data = max_reply ? malloc((size_t)entries * max_reply) : NULL;
    d->kept = max_kept ? calloc(max_kept, sizeof(*d->kept)) : NULL;
    if (!d->e || !d->heads || (max_reply && !d->data) || (max_kept && !d->kept)) {
        uiw__drc_free(d);
        return NULL;
    }
    pthread_mutex_init(&d->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&d->ended, &ca);
    pthread_condattr_destroy(&ca);
    d->ready = true;
    return d;
}

static void unkeep(struct uiw__drc *d, struct drc_ent *e)
{
    uiw__rr_ibuf_put(d->dev, e->kib);
    uiw__rr_bulk_put(d->dev, e->kbulk);
    e->kib = NULL;
    e->kbulk = NULL;
    if (e->kslot)
        d->kept[e->kslot - 1] = 0;
    e->kslot = 0;
}

void uiw__drc_free(struct uiw__drc *d)
{
    if (!d)
        return;
    if (d->ready) {
        pthread_mutex_destroy(&d->lock);
        pthread_cond_destroy(&d->ended);
        for (uint32_t i = 0; i < d->n; i++)
            unkeep(d, &d->e[i]);
    }
    free(d->kept);
    free(d->e);
    free(d->heads);
    free(d->data);
    free(d);
}

void uiw__drc_key(struct uiw__drc_key *k, uint8_t xprt, uint32_t xid, uint32_t prog, uint32_t vers,
                  uint32_t proc, const struct sockaddr_storage *peer, const void *start, size_t n)
{
    memset(k, 0, sizeof(*k));
    k->xid = xid;
    k->prog = prog;
    k->vers = vers;
    k->proc = proc;
    k->xprt = xprt;
    k->family = (uint8_t)peer->ss_family;
    if (peer->ss_family == AF_INET6)
        memcpy(k->addr, &((const struct sockaddr_in6 *)peer)->sin6_addr, 16);
    else if (peer->ss_family == AF_INET)
        memcpy(k->addr, &((const struct sockaddr_in *)peer)->sin_addr, 4);
    k->csum = uiw_crc32c(0, start, n > 256 ? 256 : n);
}

static void key_of(const struct uiw__rpc_scall *s, struct uiw__drc_key *k)
{
    /* the call's first bytes after its xid (those of the first piece) */
    const struct uiw__rr_piece *p = &s->k.pieces[0];
    uint32_t n = p->len > 4 ? p->len - 4 : 0;
    uiw__drc_key(k, UIW__DRC_RDMA, s->hdr.xid, s->hdr.prog, s->hdr.vers, s->hdr.proc,
                 &s->k.conn->peer, n ? p->p + 4 : p->p, n);
}

static bool key_eq(const struct drc_ent *e, const struct uiw__drc_key *k)
{
    const struct uiw__drc_key *a = &e->key;
    return a->xid == k->xid && a->prog == k->prog && a->vers == k->vers && a->proc == k->proc &&
           a->csum == k->csum && a->xprt == k->xprt && a->family == k->family &&
           memcmp(a->addr, k->addr, 16) == 0;
}

/* Every bit of the XID moves the bucket: the XIDs of libtirpc's clients and of Linux's
 * are a counter decremented or incremented in network byte order, so a host-order XID's
 * top byte is what changes from one call to the next (its low 24 bits only every 256
 * calls), and a hash of its low bits put a client's calls in a few long chains. */
static uint32_t bucket_of(const struct uiw__drc *d, const struct uiw__drc_key *k)
{
    uint32_t h = k->xid ^ uiw_crc32c(0, k->addr, 16);
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h & d->hmask;
}

uint32_t uiw__drc_longest_chain(struct uiw__drc *d)
{
    uint32_t longest = 0;
    pthread_mutex_lock(&d->lock);
    for (uint32_t b = 0; b <= d->hmask; b++) {
        uint32_t n = 0;
        for (uint32_t i = d->heads[b]; i; i = d->e[i - 1].hnext)
            n++;
        if (n > longest)
            longest = n;
    }
    pthread_mutex_unlock(&d->lock);
    return longest;
}

static void unlink_ent(struct uiw__drc *d, uint32_t idx)
{
    struct drc_ent *e = &d->e[idx];
    uint32_t *pp = &d->heads[e->bucket];
    while (*pp && *pp != idx + 1)
        pp = &d->e[*pp - 1].hnext;
    if (*pp)
        *pp = e->hnext;
    e->hnext = 0;
    e->state = E_FREE;
    unkeep(d, e);
    if (e->uncached) {
        e->uncached = false;
        atomic_fetch_sub_explicit(&d->nuncached, 1, memory_order_relaxed);
    }
}

static void link_ent(struct uiw__drc *d, uint32_t idx, const struct uiw__drc_key *k)
{
    struct drc_ent *e = &d->e[idx];
    e->key = *k;
    e->bucket = bucket_of(d, k);
    e->hnext = d->heads[e->bucket];
    d->heads[e->bucket] = idx + 1;
}

/* Put the cached reply of e into s's reply buffer; a reply kept in its own buffer moves
 * there, and the entry goes. */
static bool fill(struct uiw__drc *d, struct drc_ent *e, struct uiw__rpc_scall *s)
{
    struct uiw__rr_call *k = &s->k;
    if (e->kib || e->kbulk) {
        if (uiw__rr_reply_give(k, e->kib, e->kbulk, e->len) != 0)
            return false;
        e->kib = NULL;
        e->kbulk = NULL;
        unlink_ent(d, (uint32_t)(e - d->e));
        return true;
    }
    if (uiw__rr_reply_begin(k) != 0)
        return false;
    if (e->len > k->rcap && uiw__rr_reply_grow(k, e->len) != 0)
        return false;
    memcpy(k->rp, d->data + (size_t)(e - d->e) * d->max_reply, e->len);
    k->rlen = e->len;
    return true;
}

/* A new entry for k, owned by owner, in clock order, never one whose call still runs: its
 * index, or -1 when every entry's call runs. d->lock held. */
static int claim(struct uiw__drc *d, const struct uiw__drc_key *k, void *owner)
{
    for (uint32_t tries = 0; tries < d->n; tries++) {
        uint32_t idx = d->clock++ % d->n;
        struct drc_ent *e = &d->e[idx];
        if (e->state == E_BUSY)
            continue;
        if (e->state != E_FREE)
            unlink_ent(d, idx);
        link_ent(d, idx, k);
        e->state = E_BUSY;
        e->owner = owner;
        e->waiter = NULL;
        e->awaited = false;
        e->len = 0;
        return (int)idx;
    }
    return -1;
}

enum uiw__drc_verdict uiw__drc_lookup(struct uiw__drc *d, struct uiw__rpc_scall *s, bool claim_miss)
{
    struct uiw__drc_key k;
    key_of(s, &k);
    s->drc_slot = -1;
    pthread_mutex_lock(&d->lock);
    for (uint32_t i = d->heads[bucket_of(d, &k)]; i; i = d->e[i - 1].hnext) {
        struct drc_ent *e = &d->e[i - 1];
        if (!key_eq(e, &k))
            continue;
        if (e->state == E_DONE && fill(d, e, s)) {
            pthread_mutex_unlock(&d->lock);
            return UIW__DRC_HIT;
        }
        if (e->state == E_BUSY) {
            struct uiw__rpc_scall *old = e->waiter;
            e->waiter = s;
            pthread_mutex_unlock(&d->lock);
            if (old)
                uiw__rr_call_finish(&old->k); /* an older retransmission: superseded */
            return UIW__DRC_WAIT;
        }
        break;
    }
    if (claim_miss)
        s->drc_slot = claim(d, &k, s);
    pthread_mutex_unlock(&d->lock);
    return UIW__DRC_MISS;
}

bool uiw__drc_uncached(struct uiw__drc *d)
{
    return atomic_load_explicit(&d->nuncached, memory_order_relaxed) != 0;
}

void uiw__drc_claim(struct uiw__drc *d, struct uiw__rpc_scall *s)
{
    struct uiw__drc_key k;
    key_of(s, &k);
    pthread_mutex_lock(&d->lock);
    uint32_t i = d->heads[bucket_of(d, &k)];
    while (i && !key_eq(&d->e[i - 1], &k))
        i = d->e[i - 1].hnext;
    if (!i)
        s->drc_slot = claim(d, &k, s);
    if (s->drc_slot >= 0) {
        d->e[s->drc_slot].uncached = true;
        atomic_fetch_add_explicit(&d->nuncached, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&d->lock);
}

struct uiw__rpc_scall *uiw__drc_done(struct uiw__drc *d, struct uiw__rpc_scall *s, bool cacheable,
                                     bool *cached)
{
    *cached = false;
    if (s->drc_slot < 0)
        return NULL;
    uint32_t idx = (uint32_t)s->drc_slot;
    s->drc_slot = -1;
    pthread_mutex_lock(&d->lock);
    struct drc_ent *e = &d->e[idx];
    if (e->owner != s) {
        pthread_mutex_unlock(&d->lock);
        return NULL;
    }
    e->owner = NULL;
    struct uiw__rr_call *k = &s->k;
    /* answered REPLY_RESOURCE: the requester may send it again with room for the reply
     * (not one that can offer no Reply chunk: a backward call to an inline-only client) */
    bool resend = k->too_small && !k->wshort && k->vers == 2 && !k->no_ddp;
    if (e->uncached && !resend)
        cacheable = false; /* taken for a REPLY_RESOURCE that did not come */
    if (cacheable && k->rlen <= d->max_reply) {
        memcpy(d->data + (size_t)idx * d->max_reply, k->rp, k->rlen);
        e->len = k->rlen;
        e->state = E_DONE;
    } else if (cacheable && resend && d->max_kept) {
        /* kept in its own buffer, in place of the oldest one kept */
        uint32_t slot = d->kept_next++ % d->max_kept;
        if (d->kept[slot])
            unlink_ent(d, d->kept[slot] - 1);
        e->len = k->rlen;
        uiw__rr_reply_take(k, &e->kib, &e->kbulk);
        e->kslot = slot + 1;
        d->kept[slot] = idx + 1;
        e->state = E_DONE;
    } else {
        e->state = E_FREE; /* unlinked below if no one waits */
    }
    struct uiw__rpc_scall *w = e->waiter;
    e->waiter = NULL;
    if (w) {
        if (e->state == E_DONE && fill(d, e, w)) {
            *cached = true;
        } else {
            /* not cached: the retransmission runs, owning the entry */
            unkeep(d, e);
            e->state = E_BUSY;
            e->owner = w;
            w->drc_slot = (int)idx;
        }
    } else if (e->state == E_FREE) {
        e->state = E_DONE; /* linked: unlink_ent expects a linked entry */
        unlink_ent(d, idx);
    }
    pthread_mutex_unlock(&d->lock);
    return w;
}

/* ---------------------------------------------------------------- as bytes (drc.h) */

struct uiw__drc *uiw__drc_create(uint32_t entries, uint32_t max_reply)
{
    return uiw__drc_new(entries, max_reply, 0, NULL);
}

uint32_t uiw__drc_max_reply(const struct uiw__drc *d)
{
    return d->max_reply;
}

/* The entry of k, or NULL. d->lock held. */
static struct drc_ent *find_ent(struct uiw__drc *d, const struct uiw__drc_key *k)
{
    for (uint32_t i = d->heads[bucket_of(d, k)]; i; i = d->e[i - 1].hnext)
        if (key_eq(&d->e[i - 1], k))
            return &d->e[i - 1];
    return NULL;
}

enum uiw__drc_verdict uiw__drc_begin(struct uiw__drc *d, const struct uiw__drc_key *k, void *owner,
                                     int *slot, void *out, uint32_t cap, uint32_t *len, int wait_ms)
{
    *slot = -1;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += wait_ms / 1000;
    until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&d->lock);
    bool waited = false;
    for (;;) {
        struct drc_ent *e = find_ent(d, k);
        if (e && e->state == E_DONE && !e->kib && !e->kbulk && e->len <= cap) {
            memcpy(out, d->data + (size_t)(e - d->e) * d->max_reply, e->len);
            *len = e->len;
            pthread_mutex_unlock(&d->lock);
            return UIW__DRC_HIT;
        }
        if (!e || e->state != E_BUSY)
            break;
        /* the same call runs now: one retransmission waits for its end, a while */
        if ((e->awaited && !waited) || wait_ms <= 0) {
            pthread_mutex_unlock(&d->lock);
            return UIW__DRC_WAIT;
        }
        e->awaited = true;
        waited = true;
        if (pthread_cond_timedwait(&d->ended, &d->lock, &until) == ETIMEDOUT) {
            e = find_ent(d, k);
            if (e && e->state == E_BUSY) {
                e->awaited = false;
                pthread_mutex_unlock(&d->lock);
                return UIW__DRC_WAIT;
            }
        }
    }
    *slot = claim(d, k, owner);
    pthread_mutex_unlock(&d->lock);
    return UIW__DRC_MISS;
}

void uiw__drc_end(struct uiw__drc *d, int slot, void *owner, const struct iovec *iov, int niov,
                  bool cacheable)
{
    if (slot < 0)
        return;
    uint32_t idx = (uint32_t)slot;
    pthread_mutex_lock(&d->lock);
    struct drc_ent *e = &d->e[idx];
    if (e->state != E_BUSY || e->owner != owner) {
        pthread_mutex_unlock(&d->lock);
        return;
    }
    e->owner = NULL;
    size_t len = 0;
    for (int i = 0; i < niov; i++)
        len += iov[i].iov_len;
    if (cacheable && len <= d->max_reply) {
        uint8_t *p = d->data + (size_t)idx * d->max_reply;
        for (int i = 0; i < niov; i++) {
            memcpy(p, iov[i].iov_base, iov[i].iov_len);
            p += iov[i].iov_len;
        }
        e->len = (uint32_t)len;
        e->state = E_DONE;
    } else {
        unlink_ent(d, idx);
    }
    if (e->awaited) {
        e->awaited = false;
        pthread_cond_broadcast(&d->ended);
    }
    pthread_mutex_unlock(&d->lock);
}
