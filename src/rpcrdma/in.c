/*
 * Completions and incoming messages: every receive is decoded and checked before anything
 * above the transport sees it; a header that does not decode or breaks a rule of the
 * protocol gets the RDMA_ERROR the draft / RFC 8166 prescribes (BAD_XDR / ERR_CHUNK,
 * ERR_VERS, INVAL_PROC, INVAL_OPTION). Replies are matched to requests by XID; calls are
 * pulled (Read chunks) and handed to the upper layer; the responder's calls live here
 * until their reply Send completed.
 */
#include <errno.h>
#include <string.h>

#include "common/byteorder.h"
#include "common/compiler.h"
#include "rpcrdma/xprt.h"

struct uiw__rr_req *uiw__rr_xtab_get(struct uiw__rr_conn *c, uint32_t xid);
void uiw__rr_xtab_del(struct uiw__rr_conn *c, struct uiw__rr_req *q);
void uiw__rr_req_replied(struct uiw__rr_conn *c, struct uiw__rr_req *q);

static const uint8_t zero_pad[4];

/* ---------------------------------------------------------------- the call's lifecycle */

/* Count len bytes of Read chunks as held, unless that goes over the device's bound
 * while others are held (a call larger than the bound goes alone). */
static bool read_charge(struct uiw__rr_dev *d, uint64_t len)
{
    if (!d->max_read)
        return true;
    uint64_t held = atomic_load(&d->read_held);
    do {
        if (held && held + len > d->max_read)
            return false;
    } while (!atomic_compare_exchange_weak(&d->read_held, &held, held + len));
    return true;
}

/* The bytes are no longer held: calls waiting for them are retried (the leader's pass). */
static void read_uncharge(struct uiw__rr_dev *d, uint64_t len)
{
    if (!len)
        return;
    atomic_fetch_sub(&d->read_held, len);
    if (!atomic_load(&d->room_waiters) || uiw__rr_leading())
        return;
    uiw__rr_dev_kick(d);
    uiw__nic_wake(d->nic);
}

static void call_release(struct uiw__rr_conn *c, struct uiw__rr_call *k)
{
    struct uiw__rr_dev *d = c->dev;
    read_uncharge(d, k->read_charge);
    k->read_charge = 0;
    uiw__rr_ibuf_put(d, k->ib);
    uiw__rr_ibuf_put(d, k->rib);
    uiw__rr_bulk_put(d, k->rbulk);
    for (uint32_t i = 0; i < k->nbulk; i++)
        uiw__rr_bulk_put(d, k->bulk[i]);
    for (uint32_t i = 0; i < k->ngetbuf; i++)
        uiw__rr_bulk_put(d, k->getbuf[i]);
    for (uint32_t i = 0; i < k->ncopy; i++)
        uiw__rr_bulk_put(d, k->copy[i]);
    uiw__rr_sq_release(c, k->sq_res);
    k->ib = k->rib = NULL;
    k->rbulk = NULL;
    k->nbulk = k->ngetbuf = k->ncopy = 0;
    k->sq_res = 0;
    k->finished = k->sent = false;
    atomic_store(&k->send_done, false);
    uiw__lock_take(&c->lock);
    k->next = c->call_free;
    c->call_free = k;
    uiw__lock_give(&c->lock);
    uiw__rr_conn_put(c); /* the call's reference */
}

/* Release k once both the upper layer finished and its Send (if any) completed. The
 * upper layer's finish and the Send's completion run on different threads: each records
 * its event and tries the claim in one hold of the lock (call_claim_locked). The one that
 * finds every condition met claims k by clearing in_use, and releases it after the hold;
 * the other never touches k after its own hold, since k may be released and taken again
 * by intake by then. */
static bool call_claim_locked(struct uiw__rr_call *k)
{
    bool go =
        k->in_use && k->finished && (!k->sent || atomic_load(&k->send_done)) && k->reads_left == 0;
    if (go)
        k->in_use = false; /* claimed: nobody else releases it */
    return go;
}

void uiw__rr_call_finish(struct uiw__rr_call *k)
{
    struct uiw__rr_conn *c = k->conn;
    uiw__lock_take(&c->lock);
    k->finished = true;
    uiw__rr_call_count_off(c, k); /* never answered (the upper layer dropped it) */
    bool go = call_claim_locked(k);
    uiw__lock_give(&c->lock);
    if (go)
        call_release(c, k);
}

void uiw__rr_call_sent(struct uiw__rr_conn *c, struct uiw__rr_call *k, bool ok)
{
    k->send_status = ok ? 0 : -ENOTCONN;
    atomic_fetch_add(&c->tx_done, 1);
    atomic_fetch_sub(&c->tx_pending, 1);
    uiw__lock_take(&c->lock);
    atomic_store(&k->send_done, true);
    bool go = call_claim_locked(k);
    uiw__lock_give(&c->lock);
    if (go)
        call_release(c, k);
}

void *uiw__rr_call_getbuf(struct uiw__rr_call *k, size_t len)
{
    struct uiw__rr_dev *d = k->conn->dev;
    if (len > d->max_ddp || k->ngetbuf == sizeof(k->getbuf) / sizeof(k->getbuf[0]))
        return NULL;
    struct uiw__rr_bulk *b = uiw__rr_bulk_get(d, len ? (uint32_t)len : 1);
    if (!b)
        return NULL;
    k->getbuf[k->ngetbuf++] = b;
    return b->p;
}

bool uiw__rr_call_owns(const struct uiw__rr_call *k, const void *p)
{
    uintptr_t a = (uintptr_t)p;
    if (k->ib && a >= (uintptr_t)k->ib->data && a < (uintptr_t)k->ib->data + k->ib->len)
        return true;
    for (uint32_t i = 0; i < k->nbulk; i++)
        if (k->bulk[i] && a >= (uintptr_t)k->bulk[i]->p &&
            a < (uintptr_t)k->bulk[i]->p + k->bulk[i]->cap)
            return true;
    return false;
}

/* ---------------------------------------------------------------- responder: intake */

static void reply_error(struct uiw__rr_conn *c, const struct uiw_rpcrdma_hdr *h, uint32_t code)
{
    uiw__rr_send_error(c, h->xid, h->vers, code, NULL);
}

/* Lay the call's RPC message out as pieces of the reassembled XDR stream: inline bytes,
 * then each Read chunk's data (and a zero pad to 4) at its position. Returns 0 or -EPROTO
 * (positions that do not fit the message). */
static int build_pieces(struct uiw__rr_call *k, const uint8_t *src, uint32_t src_len)
{
    uint32_t np = 0, stream = 0, off = 0, b = 0;
    uint32_t i = 0;
    /* the Position-Zero chunk (if any) is the source itself, in bulk[0] */
    if (k->nrsegs && k->rsegs[0].position == 0) {
        while (i < k->nrsegs && k->rsegs[i].position == 0)
            i++;
        b = 1;
    }
    while (i < k->nrsegs) {
        uint32_t pos = k->rsegs[i].position;
        uint32_t len = 0;
        while (i < k->nrsegs && k->rsegs[i].position == pos)
            len += k->rsegs[i].target.length, i++;
        if (pos < stream || pos - stream > src_len - off)
            return -EPROTO;
        uint32_t in = pos - stream;
        if (in) {
            k->pieces[np].p = src + off;
            k->pieces[np].len = in;
            k->pieces[np++].chunk = false;
            off += in;
        }
        if (len) {
            k->pieces[np].p = k->bulk[b]->p;
            k->pieces[np].len = len;
            k->pieces[np++].chunk = true;
        }
        b++;
        uint32_t pad = (4 - (len & 3)) & 3;
        if (pad) {
            k->pieces[np].p = zero_pad;
            k->pieces[np].len = pad;
            k->pieces[np++].chunk = false;
        }
        stream = pos + len + pad;
    }
    if (off < src_len) {
        k->pieces[np].p = src + off;
        k->pieces[np].len = src_len - off;
        k->pieces[np++].chunk = false;
    }
    k->npieces = np;
    uint32_t total = 0;
    for (uint32_t j = 0; j < np; j++)
        total += k->pieces[j].len;
    k->body_len = total;
    return 0;
}

static void call_abort(struct uiw__rr_conn *c, struct uiw__rr_call *k)
{
    uiw__lock_take(&c->lock);
    uiw__rr_call_count_off(c, k);
    k->finished = true;
    bool go = call_claim_locked(k);
    uiw__lock_give(&c->lock);
    if (go)
        call_release(c, k);
}

/* The call's chunks are in: lay it out and hand it up. */
static void call_ready(struct uiw__rr_conn *c, struct uiw__rr_call *k)
{
    const uint8_t *src;
    uint32_t len;
    if (k->proc == UIW_RDMA_NOMSG) {
        uint32_t l0 = 0;
        for (uint32_t i = 0; i < k->nrsegs && k->rsegs[i].position == 0; i++)
            l0 += k->rsegs[i].target.length;
        src = k->bulk[0]->p;
        len = l0;
    } else {
        src = k->ib->data + k->hdr_len;
        len = k->ib->len - k->hdr_len;
    }
    /* the RPC message's xid mirrors rdma_xid */
    if (build_pieces(k, src, len) != 0 || k->body_len < 8 || len < 4 ||
        uiw__get_be32(src) != k->xid) {
        uiw__rr_send_error(c, k->xid, k->vers, UIW_RDMA2_ERR_BAD_XDR, NULL);
        call_abort(c, k);
        return;
    }
    if (c->up && c->up->call_ready)
        c->up->call_ready(c, k);
    else
        call_abort(c, k);
}

/* Post the RDMA Reads of k's Read chunks (false: no send queue room now). */
static bool pull(struct uiw__rr_conn *c, struct uiw__rr_call *k)
{
    struct uiw__rr_dev *d = c->dev;
    enum { MAXR = UIW__RR_MAX_RSEGS };
    struct uiw__nic_send wr[MAXR];
    unsigned n = 0;
    uint64_t total = 0;
    for (uint32_t x = 0; x < k->nrsegs; x++)
        total += k->rsegs[x].target.length;
    /* the server's bound on Read chunk bytes held at once: over it, wait (as for send
     * queue room) until calls holding some are released */
    if (!k->read_charge && !read_charge(d, total))
        return false;
    k->read_charge = total;
    if (!uiw__rr_sq_reserve(c, k->nrsegs))
        return false; /* keeps its charge: it is next once room comes */
    k->sq_res += k->nrsegs;
    uint32_t i = 0, b = 0;
    while (i < k->nrsegs) {
        uint32_t pos = k->rsegs[i].position, j = i;
        uint32_t len = 0;
        while (j < k->nrsegs && k->rsegs[j].position == pos)
            len += k->rsegs[j].target.length, j++;
        struct uiw__rr_bulk *bk = uiw__rr_bulk_get(d, len ? len : 1);
        if (!bk) {
            k->nbulk = b; /* the chunks' buffers taken so far go back at release */
            k->reads_left = 0;
            uiw__rr_send_error(c, k->xid, k->vers,
                               k->vers == 2 ? UIW_RDMA2_ERR_SYSTEM : UIW_RDMA_ERR_CHUNK, NULL);
            call_abort(c, k);
            return true;
        }
        k->bulk[b++] = bk;
        uint32_t off = 0;
        for (; i < j; i++) {
            const struct uiw_rpcrdma_segment *s = &k->rsegs[i].target;
            if (s->length == 0)
                continue;
            memset(&wr[n], 0, sizeof(wr[n]));
            wr[n].wr_id = (uint64_t)(uintptr_t)&c->ignore;
            wr[n].op = UIW__NIC_READ;
            wr[n].nsge = 1;
            wr[n].sge[0].addr = (uint64_t)(uintptr_t)(bk->p + off);
            wr[n].sge[0].len = s->length;
            wr[n].sge[0].lkey = bk->lkey;
            wr[n].raddr = s->offset;
            wr[n].rkey = s->handle;
            n++;
            off += s->length;
        }
    }
    k->nbulk = b;
    if (n == 0) {
        k->reads_left = 0;
        call_ready(c, k);
        return true;
    }
    wr[n - 1].wr_id = (uint64_t)(uintptr_t)k;
    wr[n - 1].signaled = true;
    for (unsigned x = 0; x + 1 < n; x++)
        wr[x].next = &wr[x + 1];
    /* the start first: the listener's thread takes reads_left as saying it is set */
    k->read_start_ns = uiw__rr_now_ns();
    k->reads_left = 1;
    atomic_fetch_add_explicit(&c->n_rchunks, b, memory_order_relaxed);
    uint64_t rbytes = 0;
    for (unsigned x = 0; x < n; x++)
        rbytes += wr[x].sge[0].len;
    UIW__RR_COUNT(c->n_rd_bytes, rbytes);
    if (uiw__rr_post(c, wr) != 0) {
        k->reads_left = 0;
        call_abort(c, k);
    }
    return true;
}

/* Retry calls that found the send queue full; on a dead connection they end (nothing is
 * posted there any more, and the room they wait for may never come back). Each leaves the
 * list before it is pulled: pull hands it on (to the upper layer's queue, or back to the
 * free list), and its next is then another list's link. */
void uiw__rr_pull_waiting(struct uiw__rr_conn *c)
{
    if (!c->read_wait)
        return;
    int st = atomic_load(&c->state);
    bool dead = st == UIW__RR_C_DEAD || st == UIW__RR_C_DRAINED;
    while (c->read_wait) {
        struct uiw__rr_call *k = c->read_wait;
        c->read_wait = k->next;
        k->next = NULL;
        if (dead) {
            call_abort(c, k);
        } else if (!pull(c, k)) {
            k->next = c->read_wait;
            c->read_wait = k;
            return;
        }
    }
    atomic_fetch_sub(&c->dev->room_waiters, 1); /* none left (read_wait_add counted it) */
}

/* k waits for send queue room to pull its Read chunks: a connection with waiting calls
 * counts once among the device's room waiters (before its next retry: poll_conn). */
static void read_wait_add(struct uiw__rr_conn *c, struct uiw__rr_call *k)
{
    k->next = NULL;
    struct uiw__rr_call **pp = &c->read_wait;
    if (!*pp)
        atomic_fetch_add(&c->dev->room_waiters, 1);
    while (*pp)
        pp = &(*pp)->next;
    *pp = k;
}

/* A message came by Send With Invalidate of an STag it had no business naming: one that
 * is not a handle of the call it answers, or any for a call (a requester never invalidates
 * the responder's memory). The RNIC lets a peer name only its own connection's STags (a
 * PD per connection); invalidating one of another call of this connection breaks that
 * call: the connection ends, its calls go again on the next one. */
static void wrong_inv(struct uiw__rr_conn *c, const struct uiw_rpcrdma_hdr *h, uint32_t rkey)
{
    bool call = h->u.chunks.direction == UIW_RPCRDMA_CALL;
    UIW__LOG(UIW__LOG_WARN, c->log_id, c->qpn,
             "RPC-over-RDMA %s (xid 0x%08x) by Send With Invalidate of STag 0x%08x%s: closing "
             "the connection",
             call ? "call" : "reply", h->xid, rkey, call ? "" : ", not one of its call's");
    uiw__rr_conn_died(c, -EPROTO);
}

/* A call (forward on a server, backward on a client). */
static void intake(struct uiw__rr_conn *c, struct uiw__rr_ibuf *ib, const struct uiw_rpcrdma_hdr *h)
{
    const struct uiw_rpcrdma_chunks *ch = &h->u.chunks;
    uint32_t bad = h->vers == 2 ? UIW_RDMA2_ERR_BAD_XDR : UIW_RDMA_ERR_CHUNK;
    bool backward = !c->server;
    if (ib->with_inv) {
        wrong_inv(c, h, ib->inv_rkey);
        goto drop;
    }
    /* a client that advertised BRS NONE takes no backward call (draft 5.2), whatever the
     * server does: refused before the RPC layer sees it, never run, with the permanent
     * error (6.2.4: the requester ends the transaction, and sends it nowhere else) */
    if (backward && h->vers == 2 && c->props.brs == UIW_RDMA2_BKREQSUP_NONE) {
        reply_error(c, h, UIW_RDMA2_ERR_SYSTEM);
        goto drop;
    }
    /* chunks a backward call may not carry: Version One (RFC 8167) or BRS INLINE */
    if (backward && (ch->nreads || ch->nwrites || ch->has_reply || h->proc == UIW_RDMA_NOMSG) &&
        (h->vers == 1 || c->props.brs != UIW_RDMA2_BKREQSUP_GENL)) {
        reply_error(c, h, h->vers == 2 ? UIW_RDMA2_ERR_SYSTEM : UIW_RDMA_ERR_CHUNK);
        goto drop;
    }
    /* Read chunks: positions multiples of 4, one chunk per position, increasing; a
     * Position-Zero chunk only in RDMA_NOMSG (and required there) */
    uint64_t ddp = 0, pos0 = 0;
    uint32_t nchunks = 0;
    for (uint32_t i = 0; i < ch->nreads; i++) {
        uint32_t p = ch->reads[i].position;
        if (p & 3)
            goto bad;
        if (i == 0 || p != ch->reads[i - 1].position) {
            if (i && p < ch->reads[i - 1].position)
                goto bad;
            nchunks++;
        }
        if (p == 0)
            pos0 += ch->reads[i].target.length;
        else
            ddp += ch->reads[i].target.length;
    }
    bool has_pos0 = ch->nreads && ch->reads[0].position == 0;
    if (h->proc == UIW_RDMA_NOMSG && !has_pos0)
        goto bad;
    if (h->proc == UIW_RDMA_MSG && (has_pos0 || ib->len <= h->hdr_len))
        goto bad;
    if (nchunks > UIW__RR_MAX_CHUNKS + (has_pos0 ? 1u : 0u) || ch->nwrites > UIW__RR_MAX_CHUNKS)
        goto bad;
    if (pos0 > c->dev->max_msg || ddp > c->dev->max_ddp) {
        reply_error(c, h, h->vers == 2 ? UIW_RDMA2_ERR_SYSTEM : UIW_RDMA_ERR_CHUNK);
        goto drop;
    }
    /* credits: a requester never has more calls outstanding than granted */
    uiw__lock_take(&c->lock);
    struct uiw__rr_call *k =
        c->active < c->grant + UIW__RR_EXTRA_RECVS / 2 ? uiw__rr_call_take(c) : NULL;
    if (!k) {
        uiw__lock_give(&c->lock);
        atomic_fetch_add_explicit(&c->n_credit_viol, 1, memory_order_relaxed);
        uiw__rr_ibuf_put(c->dev, ib);
        uiw__rr_conn_died(c, -EPROTO);
        return;
    }
    c->active++;
    k->outstanding = true;
    uiw__lock_give(&c->lock);
    UIW__RR_COUNT(c->n_calls_rx, 1);
    uiw__rr_conn_get(c);
    k->next = NULL;
    k->in_use = true;
    k->finished = k->sent = false;
    atomic_store(&k->send_done, false);
    k->xid = h->xid;
    k->vers = h->vers;
    k->proc = h->proc;
    k->credit = h->credit;
    k->backward = backward;
    k->ib = ib;
    k->hdr_len = h->hdr_len;
    k->inv_handle = h->vers == 2 ? ch->inv_handle : 0;
    k->nrsegs = ch->nreads;
    memcpy(k->rsegs, ch->reads, ch->nreads * sizeof(k->rsegs[0]));
    k->nwrites = ch->nwrites;
    for (uint32_t i = 0; i < ch->nwrites; i++) {
        k->wnsegs[i] = ch->writes[i].nsegs;
        memcpy(k->wsegs[i], ch->writes[i].segs, ch->writes[i].nsegs * sizeof(k->wsegs[i][0]));
    }
    k->has_reply = ch->has_reply;
    k->reply_nsegs = ch->has_reply ? ch->reply.nsegs : 0;
    if (ch->has_reply)
        memcpy(k->reply_segs, ch->reply.segs, ch->reply.nsegs * sizeof(k->reply_segs[0]));
    k->nbulk = k->ngetbuf = k->ncopy = 0;
    k->reads_left = 0;
    k->rib = NULL;
    k->rbulk = NULL;
    k->too_small = false;
    /* a backward reply goes with chunks only where this side (the client) said it takes
     * backward calls like forward ones: its own BRS, GENL */
    k->no_ddp = backward && (h->vers == 1 || c->props.brs != UIW_RDMA2_BKREQSUP_GENL);
    k->sq_res = 0;
    k->npush = 0;
    if (k->nrsegs) {
        if (!pull(c, k))
            read_wait_add(c, k);
        return;
    }
    call_ready(c, k);
    return;
bad:
    reply_error(c, h, bad);
drop:
    uiw__rr_ibuf_put(c->dev, ib);
}

/* ---------------------------------------------------------------- requester: replies */

static bool region_is(const struct uiw__rr_region *r, const struct uiw_rpcrdma_segment *s)
{
    return r->mr && s->handle == r->mr->nmr.rkey && s->offset == (uint64_t)(uintptr_t)r->addr &&
           s->length <= r->len;
}

/* The credits of a responder's message (c->lock held). */
static void grant(struct uiw__rr_conn *c, uint32_t credit)
{
    uint32_t g = credit ? credit : 1;
    if (g > c->req_max)
        g = c->req_max;
    c->credits = g;
    c->credits_known = true;
    atomic_store_explicit(&c->credits_seen, g, memory_order_relaxed);
}

/* Mark the MR the peer invalidated with Send With Invalidate: false when rkey is not a
 * handle q advertised. */
static bool remote_inv(struct uiw__rr_conn *c, struct uiw__rr_req *q, uint32_t rkey)
{
    struct uiw__rr_region *all[UIW__RR_MAX_REGIONS];
    unsigned n = uiw__rr_req_regions(q, all);
    for (unsigned i = 0; i < n; i++) {
        struct uiw__rr_mr *m = all[i]->mr;
        if (m && m->nmr.rkey == rkey) {
            if (m->valid)
                UIW__RR_COUNT(c->n_swi_rx, 1);
            m->valid = false;
            return true;
        }
    }
    return false;
}

/* A good reply of q: the bytes its chunks moved (the peer Read all of its Read chunks
 * before replying, and says what it Wrote). */
static void count_reply(struct uiw__rr_conn *c, const struct uiw__rr_req *q, bool long_reply)
{
    uint64_t rd = q->pos0.len, wr = long_reply ? q->body_len : 0;
    for (uint32_t i = 0; i < q->nreads; i++)
        rd += q->reads[i].len;
    for (uint32_t i = 0; i < q->nwrites; i++)
        wr += q->wlen[i];
    UIW__RR_COUNT(c->n_replies_rx, 1);
    UIW__RR_COUNT(c->n_rd_bytes, rd);
    UIW__RR_COUNT(c->n_wr_bytes, wr);
}

static void reply_in(struct uiw__rr_conn *c, struct uiw__rr_ibuf *ib,
                     const struct uiw_rpcrdma_hdr *h)
{
    const struct uiw_rpcrdma_chunks *ch = &h->u.chunks;
    uiw__lock_take(&c->lock);
    struct uiw__rr_req *q = uiw__rr_xtab_get(c, h->xid);
    if (!q || atomic_load(&q->state) != UIW__RR_REQ_SENT) {
        uiw__lock_give(&c->lock);
        uiw__rr_ibuf_put(c->dev, ib);
        return; /* unknown or late: dropped */
    }
    if (ib->with_inv && !remote_inv(c, q, ib->inv_rkey)) {
        uiw__lock_give(&c->lock);
        wrong_inv(c, h, ib->inv_rkey);
        uiw__rr_ibuf_put(c->dev, ib);
        return;
    }
    grant(c, h->credit);
    if (c->inflight)
        c->inflight--;
    uiw__lock_give(&c->lock);
    q->rib = ib;
    q->status = 0;
    memset(q->wlen, 0, sizeof(q->wlen));
    /* what the responder returned must be what we advertised */
    if (ch->nreads || ch->nwrites > q->nwrites)
        goto bad;
    for (uint32_t i = 0; i < ch->nwrites; i++) {
        if (ch->writes[i].nsegs != 1 || !region_is(&q->writes[i], &ch->writes[i].segs[0]))
            goto bad;
        q->wlen[i] = ch->writes[i].segs[0].length;
    }
    if (ch->has_reply) {
        if (ch->reply.nsegs != 1 || !region_is(&q->reply, &ch->reply.segs[0]))
            goto bad;
    }
    if (h->proc == UIW_RDMA_NOMSG) {
        if (!ch->has_reply || !q->reply_buf)
            goto bad;
        q->body = q->reply_buf->p;
        q->body_len = ch->reply.segs[0].length;
    } else {
        q->body = ib->data + h->hdr_len;
        q->body_len = ib->len - h->hdr_len;
    }
    if (q->body_len < 8 || uiw__get_be32(q->body) != q->xid)
        goto bad;
    count_reply(c, q, h->proc == UIW_RDMA_NOMSG);
    goto done;
bad:
    q->status = -EBADMSG; /* a reply that breaks the rules of what was asked */
    q->body = NULL;
    q->body_len = 0;
done:
    uiw__rr_req_replied(c, q);
    uiw__rr_kick_queue(c);
}

static uint32_t pick_vers(const struct uiw__rr_conn *c, uint32_t lo, uint32_t hi)
{
    for (uint32_t v = c->vmax; v >= c->vmin && v >= 1; v--)
        if (v >= lo && v <= hi)
            return v;
    return 0;
}

static void error_in(struct uiw__rr_conn *c, struct uiw__rr_ibuf *ib,
                     const struct uiw_rpcrdma_hdr *h)
{
    const struct uiw_rpcrdma_error *e = &h->u.error;
    uiw__lock_take(&c->lock);
    if (!c->server && c->vers_no_answer && !c->errvers_high && h->xid == c->neg_xid &&
        e->errcode == UIW_RDMA_ERR_VERS) {
        /* the answer to our first message, after we assumed Version One: what the peer
         * speaks is known now; a range without the version assumed ends the connection */
        c->errvers_low = e->vers_low;
        c->errvers_high = e->vers_high;
        bool ok = c->vers >= e->vers_low && c->vers <= e->vers_high;
        uiw__lock_give(&c->lock);
        uiw__rr_ibuf_put(c->dev, ib);
        if (!ok)
            uiw__rr_conn_died(c, -EPROTO);
        return;
    }
    struct uiw__rr_req *q = uiw__rr_xtab_get(c, h->xid);
    bool call = q && atomic_load(&q->state) == UIW__RR_REQ_SENT;
    if (uiw__rr_props_error(c, h, call)) {
        /* the answer to our REQPROP: its caller wakes to the error */
        uiw__lock_give(&c->lock);
        uiw__rr_ibuf_put(c->dev, ib);
        uiw__rr_dev_kick(c->dev);
        return;
    }
    if (!call) {
        uiw__lock_give(&c->lock);
        uiw__rr_ibuf_put(c->dev, ib);
        return;
    }
    /* an error does not set the credit limit before a valid message did (draft section
     * 7): until then the requester has one credit */
    if (c->credits_known)
        grant(c, h->credit);
    if (c->inflight)
        c->inflight--;
    q->rdma_err = e->errcode;
    q->err = *e;
    q->status = -EPROTO;
    if (e->errcode == UIW_RDMA_ERR_VERS) {
        /* the peer speaks other versions: go on in the best common one, send again */
        uint32_t v = pick_vers(c, e->vers_low, e->vers_high);
        if (v && v != c->vers && !q->retried) {
            c->errvers_low = e->vers_low;
            c->errvers_high = e->vers_high;
            c->vers_fallback = true;
            uiw__rr_vers_settled(c, v);
            c->credits = 1;
            c->credits_known = false;
            atomic_store_explicit(&c->credits_seen, 1, memory_order_relaxed);
            q->retried = true;
            q->requeue = true;
        }
    } else if (h->vers == 2 && e->errcode == UIW_RDMA2_ERR_REPLY_RESOURCE && !q->retried) {
        /* send again once, with the same XID and a Reply chunk of the size asked for; not
         * a backward call to an inline-only client, which can be offered no Reply chunk */
        uint32_t base = 1;
        for (uint32_t i = 0; i < q->nwrites; i++)
            base++;
        if (!uiw__rr_req_inline_only(c, q) && (e->segment_index == 0 || e->segment_index >= base)) {
            uint32_t need = e->length_needed;
            if (e->segment_index >= base && q->reply.len && need < q->reply.len)
                need = q->reply.len;
            if (need <= c->dev->max_msg && need > 0) {
                q->reply_max = need;
                uiw__rr_bulk_put(c->dev, q->reply_buf);
                q->reply_buf = NULL;
                q->retried = true;
                q->requeue = true;
            }
        }
        if (!q->requeue)
            q->status = e->segment_index && e->segment_index < base ? -EOVERFLOW : -EMSGSIZE;
    } else if (e->errcode == UIW_RDMA2_ERR_SYSTEM && h->vers == 2) {
        q->status = -EIO;
    }
    if (q->requeue)
        atomic_fetch_add_explicit(&c->n_resent, 1, memory_order_relaxed);
    uiw__lock_give(&c->lock);
    uiw__rr_ibuf_put(c->dev, ib);
    uiw__rr_req_replied(c, q);
    uiw__rr_kick_queue(c);
}

/* ---------------------------------------------------------------- receive */

static void negotiated(struct uiw__rr_conn *c, uint32_t vers)
{
    uiw__lock_take(&c->lock);
    if (atomic_load(&c->state) == UIW__RR_C_NEGOTIATING) {
        uiw__rr_vers_settled(c, vers);
        atomic_store(&c->state, UIW__RR_C_READY);
    }
    uiw__lock_give(&c->lock);
}

/* An RDMA_ERROR came: count it by code, log it. */
static void error_seen(struct uiw__rr_conn *c, const struct uiw_rpcrdma_hdr *h)
{
    uint32_t code = h->u.error.errcode;
    if (code < UIW_RPC_NERR)
        UIW__RR_COUNT(c->n_err_rx[code], 1);
    if (code == UIW_RDMA_ERR_VERS)
        UIW__LOG(UIW__LOG_INFO, c->log_id, c->qpn,
                 "RPC-over-RDMA %s received (xid 0x%08x, version %u): the peer speaks %u..%u",
                 uiw__rr_err_name(h->vers, code), h->xid, h->vers, h->u.error.vers_low,
                 h->u.error.vers_high);
    else
        UIW__LOG(UIW__LOG_WARN, c->log_id, c->qpn,
                 "RPC-over-RDMA %s received (xid 0x%08x, version %u)",
                 uiw__rr_err_name(h->vers, code), h->xid, h->vers);
}

/* Whether this side speaks version v. */
static bool vers_spoken(const struct uiw__rr_conn *c, uint32_t v)
{
    return v >= c->vmin && v <= c->vmax;
}

UIW__DATAPATH static void on_recv(struct uiw__rr_conn *c, struct uiw__rr_ibuf *ib)
{
    struct uiw_rpcrdma_hdr h;
    int r = uiw_rpcrdma_decode(ib->data, ib->len, &h, &c->sp);
    if (r < 0) {
        if (h.nfixed >= 4 && h.proc == UIW_RDMA_ERROR) {
            /* an error we cannot read (an unknown code, cut short): errors come from
             * responders only (draft 6.2.2), and two peers answering each other's errors
             * would go on for ever */
            UIW__LOG(UIW__LOG_WARN, c->log_id, c->qpn,
                     "RPC-over-RDMA error that does not decode (xid 0x%08x, version %u, code "
                     "%u) dropped",
                     h.xid, h.vers, h.u.error.errcode);
            uiw__rr_ibuf_put(c->dev, ib);
            return;
        }
        /* a header we cannot take: the error of the spec, with xid and vers copied; the
         * version comes first (RFC 8166 section 4.5, draft 7.2), so one we do not speak
         * gets ERR_VERS whatever else its header holds */
        uint32_t code = uiw_rpcrdma_wire_error(r, h.vers);
        if (r == UIW_E_RPCRDMA_VERS || (h.nfixed >= 2 && !vers_spoken(c, h.vers)))
            code = UIW_RDMA_ERR_VERS;
        if (h.nfixed >= 2 && code)
            uiw__rr_send_error(c, h.xid, h.vers, code, NULL);
        uiw__rr_ibuf_put(c->dev, ib);
        return;
    }
    if (h.proc == UIW_RDMA_ERROR)
        error_seen(c, &h);
    int st = atomic_load(&c->state);
    if (st == UIW__RR_C_NEGOTIATING) {
        if (h.proc == UIW_RDMA_ERROR && h.u.error.errcode == UIW_RDMA_ERR_VERS) {
            uint32_t v = pick_vers(c, h.u.error.vers_low, h.u.error.vers_high);
            c->errvers_low = h.u.error.vers_low;
            c->errvers_high = h.u.error.vers_high;
            c->vers_fallback = true;
            if (v && v < 2)
                negotiated(c, v);
            else
                uiw__rr_conn_died(c, -EPROTO);
            uiw__rr_ibuf_put(c->dev, ib);
            uiw__rr_dev_kick(c->dev);
            return;
        }
        /* the server's credit limit comes with its first valid message that is not an
         * error (draft section 7): a CONNPROP here, else its first reply */
        if (h.proc == UIW_RDMA2_CONNPROP && h.vers == 2) {
            uiw__rr_props_rx(c, &h);
            uiw__lock_take(&c->lock);
            grant(c, h.credit);
            uiw__lock_give(&c->lock);
        }
        negotiated(c, h.vers);
        uiw__rr_dev_kick(c->dev);
        uiw__rr_kick_queue(c);
        if (h.proc == UIW_RDMA2_CONNPROP || h.proc == UIW_RDMA_ERROR) {
            uiw__rr_ibuf_put(c->dev, ib);
            return;
        }
    }
    /* a version outside our range (a Version One only side receiving Version Two) */
    if (!vers_spoken(c, h.vers)) {
        if (h.proc != UIW_RDMA_ERROR)
            uiw__rr_send_error(c, h.xid, h.vers, UIW_RDMA_ERR_VERS, NULL);
        uiw__rr_ibuf_put(c->dev, ib);
        return;
    }
    if (c->server && c->vers == 0) {
        /* the client's first message settles the connection's version; a Version Two
         * server then sends its properties first (draft 5.3.1) */
        uiw__lock_take(&c->lock);
        uiw__rr_vers_settled(c, h.vers);
        uiw__lock_give(&c->lock);
        if (uiw__log_on(UIW__LOG_INFO)) {
            char a[64];
            UIW__LOG(UIW__LOG_INFO, c->log_id, c->qpn,
                     "RPC-over-RDMA connection from %s: Version %u, %u credits granted",
                     uiw__log_addr((const struct sockaddr *)&c->peer, a, sizeof(a)), h.vers,
                     c->grant);
        }
        if (h.vers == 2)
            uiw__rr_send_connprop(c);
    }
    switch (h.proc) {
    case UIW_RDMA_MSG:
    case UIW_RDMA_NOMSG: {
        uint32_t dir;
        if (h.vers == 2) {
            dir = h.u.chunks.direction;
        } else {
            /* RFC 8167: a backward call is an RDMA_MSG with empty chunk lists whose RPC
             * message says CALL; everything else follows the connection's roles */
            dir = c->server ? UIW_RPCRDMA_CALL : UIW_RPCRDMA_REPLY;
            const struct uiw_rpcrdma_chunks *ch = &h.u.chunks;
            if (h.proc == UIW_RDMA_MSG && !ch->nreads && !ch->nwrites && !ch->has_reply &&
                ib->len >= h.hdr_len + 8) {
                uint32_t mt = uiw__get_be32(ib->data + h.hdr_len + 4);
                if (mt == 0 || mt == 1)
                    dir = mt;
            }
        }
        if (dir == UIW_RPCRDMA_CALL) {
            intake(c, ib, &h);
        } else {
            /* Read chunks appear only in calls: not a valid reply, which fails the call
             * it answers (reply_in); a requester sends no error (draft 6.2.2) */
            if (h.u.chunks.nreads)
                UIW__LOG(UIW__LOG_WARN, c->log_id, c->qpn,
                         "RPC-over-RDMA reply with a Read chunk (xid 0x%08x, version %u) "
                         "refused",
                         h.xid, h.vers);
            reply_in(c, ib, &h);
        }
        return;
    }
    case UIW_RDMA_ERROR:
        error_in(c, ib, &h);
        return;
    case UIW_RDMA2_OPTIONAL:
        /* no optional message type is known here */
        uiw__rr_send_error(c, h.xid, h.vers, UIW_RDMA2_ERR_INVAL_OPTION, NULL);
        uiw__rr_ibuf_put(c->dev, ib);
        return;
    default: /* the property messages */
        uiw__rr_props_rx(c, &h);
        uiw__rr_ibuf_put(c->dev, ib);
        return;
    }
}

/* ---------------------------------------------------------------- completions */

UIW__DATAPATH void uiw__rr_conn_complete(struct uiw__rr_conn *c, const struct uiw__nic_wc *wc)
{
    struct uiw__rr_wrid *w = (struct uiw__rr_wrid *)(uintptr_t)wc->wr_id;
    bool ok = wc->status == UIW__NIC_WC_OK;
    if (wc->status == UIW__NIC_WC_FLUSH)
        uiw__rr_conn_ended(c, 0); /* nothing is posted on a closing connection */
    else if (!ok)
        uiw__rr_conn_died(c, -EIO);
    switch (w->kind) {
    case UIW__RR_WR_RECV: {
        struct uiw__rr_ibuf *ib = (struct uiw__rr_ibuf *)w;
        if (!ok) {
            uiw__rr_ibuf_put(c->dev, ib);
            return;
        }
        ib->len = wc->byte_len;
        if (!ib->resident) { /* a message landed in a buffer given back (uiw__rr_conn_trim) */
            ib->resident = true;
            atomic_fetch_add_explicit(&c->dev->ibuf_resident, 1, memory_order_relaxed);
        }
        UIW__RR_COUNT(c->n_inl_rx, wc->byte_len);
        ib->with_inv = wc->with_inv;
        ib->inv_rkey = wc->inv_rkey;
        on_recv(c, ib);
        return;
    }
    case UIW__RR_WR_CTRL:
        atomic_fetch_add(&c->tx_done, 1);
        atomic_fetch_sub(&c->tx_pending, 1);
        uiw__rr_sq_release(c, 1);
        uiw__rr_ibuf_put(c->dev, (struct uiw__rr_ibuf *)w);
        return;
    case UIW__RR_WR_REQ: {
        struct uiw__rr_req *q = (struct uiw__rr_req *)w;
        if (ok && wc->op == UIW__NIC_WC_LOCAL_INV)
            uiw__rr_req_finish_inv(c, q);
        /* a flushed LOCAL_INV: the orphans reset the MRs */
        return;
    }
    case UIW__RR_WR_CALL: {
        struct uiw__rr_call *k = (struct uiw__rr_call *)w;
        switch (wc->op) {
        case UIW__NIC_WC_READ:
            k->reads_left = 0;
            if (ok)
                call_ready(c, k);
            else
                call_abort(c, k);
            uiw__rr_pull_waiting(c);
            return;
        default: /* the reply's Send */
            uiw__rr_call_sent(c, k, ok);
            uiw__rr_pull_waiting(c);
            return;
        }
    }
    case UIW__RR_WR_MARK:
        c->mark_done = true;
        uiw__rr_pull_waiting(c);    /* the calls still waiting end before the connection drains */
        uiw__rr_replies_waiting(c); /* and the replies that waited for room */
        return;
    default:
        return;
    }
}
