/*
 * Outgoing messages: a requester's calls (chunk registration, header, Send), a
 * responder's replies (Write chunk pushes, Reply chunk, Send or Send With Invalidate),
 * RDMA_ERROR and property messages; the send queue's accounting; XID table.
 */
#include <errno.h>
#include <string.h>

#include "common/compiler.h"
#include "rpcrdma/xprt.h"

#define SQ_HEAD 64 /* entries only the poller's own posts may use (errors, markers) */

/* ---------------------------------------------------------------- send queue */

bool uiw__rr_sq_reserve(struct uiw__rr_conn *c, uint32_t n)
{
    uint32_t lim = c->sq_depth - SQ_HEAD;
    uint32_t u = atomic_load(&c->sq_used);
    do {
        if (u + n > lim)
            return false;
    } while (!atomic_compare_exchange_weak(&c->sq_used, &u, u + n));
    return true;
}

static bool sq_reserve_head(struct uiw__rr_conn *c, uint32_t n)
{
    uint32_t u = atomic_load(&c->sq_used);
    do {
        if (u + n > c->sq_depth)
            return false;
    } while (!atomic_compare_exchange_weak(&c->sq_used, &u, u + n));
    return true;
}

void uiw__rr_sq_release(struct uiw__rr_conn *c, uint32_t n)
{
    struct uiw__rr_dev *d = c->dev;
    atomic_fetch_sub(&c->sq_used, n);
    /* seq_cst both: a waiter counts itself, then looks for room (sq_wait, intake) */
    if (!atomic_load(&d->room_waiters) || uiw__rr_leading())
        return; /* the leader's own pass retries its waiters, and its round wakes the rest */
    atomic_fetch_add_explicit(&d->n_room_wakes, 1, memory_order_relaxed);
    uiw__rr_dev_kick(d);
    uiw__nic_wake(d->nic);
}

/* Post on a connection that is not dead. Once uiw__rr_conn_died has posted its marker no
 * work request follows it: every posted one completes before the marker's flush, so a
 * drained connection has nothing left to complete. */
/* A thread's plug: the connections whose sends it holds back for one doorbell. */
#define PLUG_CONNS 4
static _Thread_local struct {
    unsigned depth, n;
    uint64_t since; /* when the first send was held */
    struct uiw__rr_conn *conns[PLUG_CONNS];
} plug;

void uiw__rr_plug(void)
{
    plug.depth++;
}

void uiw__rr_plug_flush(void)
{
    unsigned n = plug.n;
    plug.n = 0;
    for (unsigned i = 0; i < n; i++) {
        uiw__nic_flush(plug.conns[i]->nc);
        uiw__rr_conn_put(plug.conns[i]);
    }
}

void uiw__rr_plug_flush_after(uint64_t ns)
{
    if (plug.n && uiw__rr_now_ns() - plug.since >= ns)
        uiw__rr_plug_flush();
}

void uiw__rr_unplug(void)
{
    if (plug.depth)
        plug.depth--;
    uiw__rr_plug_flush(); /* an inner plug too: its thread may be about to wait */
}

/* Whether the thread's plug holds c's sends (a reference held until the flush). */
static bool plug_holds(struct uiw__rr_conn *c)
{
    if (!plug.depth)
        return false;
    for (unsigned i = 0; i < plug.n; i++)
        if (plug.conns[i] == c)
            return true;
    if (plug.n == PLUG_CONNS)
        return false;
    if (plug.n == 0)
        plug.since = uiw__rr_now_ns();
    uiw__rr_conn_get(c);
    plug.conns[plug.n++] = c;
    return true;
}

int uiw__rr_post(struct uiw__rr_conn *c, struct uiw__nic_send *wr)
{
    if (plug_holds(c)) {
        struct uiw__nic_send *last = wr;
        while (last->next)
            last = last->next;
        last->more = true;
    }
    uiw__lock_take(&c->lock);
    int st = atomic_load(&c->state);
    /* nothing after an orderly close began: the RNIC would flush it at once, and the
     * connection end as lost */
    int r = st == UIW__RR_C_DEAD || st == UIW__RR_C_DRAINED || atomic_load(&c->closing)
                ? -ENOTCONN
                : uiw__nic_post_send(c->nc, wr, NULL);
    uiw__lock_give(&c->lock);
    return r;
}

/* ---------------------------------------------------------------- XID table */

static uint32_t xhash(const struct uiw__rr_conn *c, uint32_t xid)
{
    return (xid * 2654435761u) & c->xtab_mask;
}

static void xtab_put(struct uiw__rr_conn *c, struct uiw__rr_req *q)
{
    uint32_t i = xhash(c, q->xid);
    while (c->xtab[i])
        i = (i + 1) & c->xtab_mask;
    c->xtab[i] = q;
}

struct uiw__rr_req *uiw__rr_xtab_get(struct uiw__rr_conn *c, uint32_t xid);
struct uiw__rr_req *uiw__rr_xtab_get(struct uiw__rr_conn *c, uint32_t xid)
{
    for (uint32_t i = xhash(c, xid); c->xtab[i]; i = (i + 1) & c->xtab_mask)
        if (c->xtab[i]->xid == xid)
            return c->xtab[i];
    return NULL;
}

/* Remove q (backward-shift deletion keeps probe chains whole). */
void uiw__rr_xtab_del(struct uiw__rr_conn *c, struct uiw__rr_req *q);
void uiw__rr_xtab_del(struct uiw__rr_conn *c, struct uiw__rr_req *q)
{
    uint32_t i = xhash(c, q->xid);
    while (c->xtab[i] && c->xtab[i] != q)
        i = (i + 1) & c->xtab_mask;
    if (!c->xtab[i])
        return;
    c->xtab[i] = NULL;
    for (uint32_t j = (i + 1) & c->xtab_mask; c->xtab[j]; j = (j + 1) & c->xtab_mask) {
        uint32_t h = xhash(c, c->xtab[j]->xid);
        /* move entry j back to the hole i if its home h is not in (i, j] */
        bool stays = i <= j ? (h > i && h <= j) : (h > i || h <= j);
        if (!stays) {
            c->xtab[i] = c->xtab[j];
            c->xtab[j] = NULL;
            i = j;
        }
    }
}

/* ---------------------------------------------------------------- control messages */

static int send_ibuf(struct uiw__rr_conn *c, struct uiw__rr_ibuf *b, uint32_t len)
{
    if (!sq_reserve_head(c, 1)) {
        uiw__rr_ibuf_put(c->dev, b);
        return -ENOBUFS;
    }
    b->w.kind = UIW__RR_WR_CTRL;
    struct uiw__nic_send wr = {.wr_id = (uint64_t)(uintptr_t)b,
                               .op = UIW__NIC_SEND,
                               .signaled = true,
                               .nsge = 1,
                               .sge = {{(uint64_t)(uintptr_t)b->data, len, b->lkey}}};
    /* counted before it can arrive, taken back if it cannot go */
    UIW__RR_COUNT(c->n_inl_tx, len);
    atomic_fetch_add(&c->tx_pending, 1);
    int r = uiw__rr_post(c, &wr);
    if (r) {
        UIW__RR_UNCOUNT(c->n_inl_tx, len);
        atomic_fetch_sub(&c->tx_pending, 1);
        uiw__rr_sq_release(c, 1);
        uiw__rr_ibuf_put(c->dev, b);
    }
    return r;
}

int uiw__rr_send_ctrl(struct uiw__rr_conn *c, const struct uiw_rpcrdma_hdr *h)
{
    struct uiw__rr_ibuf *b = uiw__rr_ibuf_get(c->dev);
    if (!b)
        return -ENOMEM;
    int n = uiw_rpcrdma_encode(b->data, c->inline_send, h);
    if (n < 0) {
        uiw__rr_ibuf_put(c->dev, b);
        return n == UIW_E_RPCRDMA_NOSPC ? -EMSGSIZE : n;
    }
    return send_ibuf(c, b, (uint32_t)n);
}

int uiw__rr_send_error(struct uiw__rr_conn *c, uint32_t xid, uint32_t vers, uint32_t errcode,
                       const struct uiw_rpcrdma_error *e)
{
    struct uiw_rpcrdma_error ee;
    if (e)
        ee = *e;
    else
        memset(&ee, 0, sizeof(ee));
    ee.errcode = errcode;
    if (errcode == UIW_RDMA_ERR_VERS) {
        ee.vers_low = c->vmin;
        ee.vers_high = c->vmax;
    }
    struct uiw__rr_ibuf *b = uiw__rr_ibuf_get(c->dev);
    if (!b)
        return -ENOMEM;
    /* a version we do not speak gets the Version Two layout (ERR_VERS is the same in all) */
    uint32_t v = vers == 1 || vers == 2 ? vers : 2;
    int n = uiw_rpcrdma_encode_error(b->data, c->dev->ibuf_size, xid, vers,
                                     uiw__rr_credit_out(c, true), &ee);
    if (n < 0 && v != vers)
        n = uiw_rpcrdma_encode_error(b->data, c->dev->ibuf_size, xid, v,
                                     uiw__rr_credit_out(c, true), &ee);
    if (n < 0) {
        uiw__rr_ibuf_put(c->dev, b);
        return n;
    }
    if (errcode < UIW_RPC_NERR)
        atomic_fetch_add_explicit(&c->n_err_tx[errcode], 1, memory_order_relaxed);
    UIW__LOG(errcode == UIW_RDMA_ERR_VERS ? UIW__LOG_INFO : UIW__LOG_WARN, c->log_id, c->qpn,
             "RPC-over-RDMA %s sent (xid 0x%08x, version %u)", uiw__rr_err_name(v, errcode), xid,
             vers);
    return send_ibuf(c, b, (uint32_t)n);
}

/* ---------------------------------------------------------------- requester */

unsigned uiw__rr_req_regions(struct uiw__rr_req *q, struct uiw__rr_region **all)
{
    unsigned n = 0;
    for (uint32_t i = 0; i < q->nreads; i++)
        all[n++] = &q->reads[i];
    for (uint32_t i = 0; i < q->nwrites; i++)
        all[n++] = &q->writes[i];
    all[n++] = &q->reply;
    all[n++] = &q->pos0;
    return n;
}

/* Return q's MRs to the pool; reset (invalidate at once) those still valid. */
static void drop_mrs(struct uiw__rr_dev *d, struct uiw__rr_req *q)
{
    struct uiw__rr_region *all[UIW__RR_MAX_REGIONS];
    unsigned n = uiw__rr_req_regions(q, all);
    for (unsigned i = 0; i < n; i++) {
        struct uiw__rr_mr *m = all[i]->mr;
        if (!m)
            continue;
        if (m->valid)
            uiw__nic_frmr_reset(&m->nmr);
        m->valid = false;
        uiw__rr_mr_put(m);
        all[i]->mr = NULL;
    }
    memset(&q->pos0, 0, sizeof(q->pos0));
}

int uiw__rr_req_begin(struct uiw__rr_dev *d, struct uiw__rr_req *q)
{
    q->w.kind = UIW__RR_WR_REQ;
    q->ib = uiw__rr_ibuf_get(d);
    if (!q->ib)
        return -ENOMEM;
    q->bulk = NULL;
    q->len = 0;
    q->nreads = q->nwrites = 0;
    q->reply_max = 0;
    memset(&q->reply, 0, sizeof(q->reply));
    memset(&q->pos0, 0, sizeof(q->pos0));
    q->reply_buf = NULL;
    q->rib = NULL;
    q->body = NULL;
    q->body_len = 0;
    q->status = 0;
    q->rdma_err = 0;
    q->abandoned = q->retried = q->requeue = q->no_ddp = false;
    q->inv_pending = 0;
    q->sq_res = 0;
    q->nregs = 0;
    q->conn = NULL;
    atomic_store(&q->state, UIW__RR_REQ_IDLE);
    return 0;
}

int uiw__rr_req_grow(struct uiw__rr_dev *d, struct uiw__rr_req *q, uint32_t need)
{
    if (need > d->max_msg)
        return -EMSGSIZE;
    uint32_t want = need < 2 * uiw__rr_req_cap(d, q) ? 2 * uiw__rr_req_cap(d, q) : need;
    if (want > d->max_msg)
        want = d->max_msg;
    struct uiw__rr_bulk *b = uiw__rr_bulk_get(d, want);
    if (!b)
        return -ENOMEM;
    memcpy(b->p, uiw__rr_req_payload(q), q->len);
    uiw__rr_bulk_put(d, q->bulk);
    q->bulk = b;
    return 0;
}

void uiw__rr_req_release(struct uiw__rr_dev *d, struct uiw__rr_req *q)
{
    drop_mrs(d, q);
    uiw__rr_ibuf_put(d, q->ib);
    uiw__rr_ibuf_put(d, q->rib);
    uiw__rr_bulk_put(d, q->bulk);
    uiw__rr_bulk_put(d, q->reply_buf);
    q->ib = q->rib = NULL;
    q->bulk = q->reply_buf = NULL;
    q->body = NULL;
    atomic_store(&q->state, UIW__RR_REQ_IDLE);
}

static void reg_wr(struct uiw__nic_send *wr, struct uiw__rr_conn *c, struct uiw__rr_mr *m,
                   void *addr, uint32_t len, unsigned access)
{
    memset(wr, 0, sizeof(*wr));
    wr->wr_id = (uint64_t)(uintptr_t)&c->ignore;
    wr->op = UIW__NIC_REG;
    wr->mr = &m->nmr;
    wr->key = uiw__nic_next_key(m->nmr.rkey);
    m->nmr.rkey = wr->key;
    wr->addr = addr;
    wr->len = len;
    wr->access = access;
    m->valid = true;
}

static void seg_of(struct uiw_rpcrdma_segment *s, const struct uiw__rr_region *r)
{
    s->handle = r->mr->nmr.rkey;
    s->length = r->len;
    s->offset = (uint64_t)(uintptr_t)r->addr;
}

/* Build and post q's registrations and Send (q holds a credit, is in the XID table). */
static int post_req(struct uiw__rr_conn *c, struct uiw__rr_req *q)
{
    struct uiw__rr_dev *d = c->dev;
    struct uiw__nic_send wr[UIW__RR_MAX_MR + 1];
    unsigned nwr = 0;
    struct uiw_rpcrdma_hdr h;
    struct uiw_rpcrdma_read_segment rs[UIW__RR_MAX_CHUNKS + 1];
    struct uiw_rpcrdma_write_chunk wc[UIW__RR_MAX_CHUNKS];
    struct uiw_rpcrdma_segment ws[UIW__RR_MAX_CHUNKS], rps;
    uint8_t *payload = uiw__rr_req_payload(q);
    bool peer_inline_only = uiw__rr_req_inline_only(c, q);

    memset(&h, 0, sizeof(h));
    h.xid = q->xid;
    h.vers = c->vers;
    h.credit = uiw__rr_credit_out(c, false);
    h.u.chunks.direction = UIW_RPCRDMA_CALL;
    /* a Reply chunk when asked for and larger than what the peer can send inline; a
     * backward call to an inline-only client, which can be offered none, is not sent when
     * its expected reply cannot come inline */
    bool want_reply = q->reply_max && !uiw__rr_reply_fits_inline(c, q->reply_max);
    if (peer_inline_only && (q->nreads || q->nwrites || want_reply))
        return -EMSGSIZE;
    if (want_reply && !q->reply_buf) {
        if (q->reply_max > d->max_msg)
            return -EMSGSIZE;
        q->reply_buf = uiw__rr_bulk_get(d, q->reply_max);
        if (!q->reply_buf)
            return -ENOMEM;
    }
    /* size of the header without a Position-Zero chunk, to decide on a long call */
    uint32_t nr = 0;
    for (uint32_t i = 0; i < q->nreads; i++)
        rs[nr++].position = q->reads[i].pos;
    h.proc = UIW_RDMA_MSG;
    h.u.chunks.nreads = nr;
    h.u.chunks.reads = rs;
    h.u.chunks.nwrites = q->nwrites;
    h.u.chunks.writes = wc;
    for (uint32_t i = 0; i < q->nwrites; i++) {
        wc[i].nsegs = 1;
        wc[i].segs = &ws[i];
    }
    h.u.chunks.has_reply = want_reply;
    h.u.chunks.reply.nsegs = 1;
    h.u.chunks.reply.segs = &rps;
    int hl = uiw_rpcrdma_encode(NULL, 0, &h);
    if (hl < 0)
        return -EINVAL;
    bool long_call = (uint32_t)hl + q->len > c->inline_send || q->bulk;
    if (long_call) {
        if (peer_inline_only)
            return -EMSGSIZE;
        rs[nr].position = 0;
        memmove(&rs[1], &rs[0], nr * sizeof(rs[0]));
        nr++;
        h.proc = UIW_RDMA_NOMSG;
        h.u.chunks.nreads = nr;
        q->pos0.addr = payload;
        q->pos0.len = q->len;
        q->pos0.pos = 0;
    }
    /* register every region */
    struct uiw__rr_region *reg[UIW__RR_MAX_MR];
    unsigned acc[UIW__RR_MAX_MR];
    unsigned nreg = 0;
    if (long_call)
        reg[nreg] = &q->pos0, acc[nreg++] = UIW__NIC_REMOTE_READ;
    for (uint32_t i = 0; i < q->nreads; i++)
        reg[nreg] = &q->reads[i], acc[nreg++] = UIW__NIC_REMOTE_READ;
    for (uint32_t i = 0; i < q->nwrites; i++)
        reg[nreg] = &q->writes[i], acc[nreg++] = UIW__NIC_REMOTE_WRITE;
    if (want_reply) {
        q->reply.addr = q->reply_buf->p;
        q->reply.len = q->reply_max;
        reg[nreg] = &q->reply, acc[nreg++] = UIW__NIC_REMOTE_WRITE;
    }
    if (!uiw__rr_sq_reserve(c, nreg + 1))
        return -ENOBUFS;
    q->sq_res = nreg + 1;
    for (unsigned i = 0; i < nreg; i++) {
        struct uiw__rr_mr *m = reg[i]->mr ? reg[i]->mr : uiw__rr_mr_get(c);
        if (!m) {
            for (unsigned j = 0; j < i; j++) {
                /* not posted yet: these MRs are still invalid */
                reg[j]->mr->valid = false;
                uiw__rr_mr_put(reg[j]->mr);
                reg[j]->mr = NULL;
            }
            uiw__rr_sq_release(c, q->sq_res);
            q->sq_res = 0;
            return -ENOMEM;
        }
        reg[i]->mr = m;
        reg_wr(&wr[nwr++], c, m, reg[i]->addr, reg[i]->len, acc[i]);
    }
    q->nregs = nreg;
    /* the chunk lists */
    unsigned k = 0;
    if (long_call)
        seg_of(&rs[k++].target, &q->pos0);
    for (uint32_t i = 0; i < q->nreads; i++)
        seg_of(&rs[k++].target, &q->reads[i]);
    for (uint32_t i = 0; i < q->nwrites; i++)
        seg_of(&ws[i], &q->writes[i]);
    if (want_reply)
        seg_of(&rps, &q->reply);
    /* ask for remote invalidation of one handle (Version Two) */
    if (c->vers == 2 && c->swi_ok && nreg)
        h.u.chunks.inv_handle = reg[nreg - 1]->mr->nmr.rkey;
    hl = uiw_rpcrdma_encode(NULL, 0, &h);
    if (hl < 0 || hl > UIW__RR_HDR_ROOM || (uint32_t)hl > c->inline_send) {
        uiw__rr_sq_release(c, q->sq_res);
        q->sq_res = 0;
        for (unsigned i = 0; i < nreg; i++) {
            reg[i]->mr->valid = false;
            uiw__rr_mr_put(reg[i]->mr);
            reg[i]->mr = NULL;
        }
        return -EMSGSIZE;
    }
    uint8_t *hp = q->ib->data - hl;
    uiw_rpcrdma_encode(hp, (size_t)hl, &h);
    struct uiw__nic_send *s = &wr[nwr++];
    memset(s, 0, sizeof(*s));
    s->wr_id = (uint64_t)(uintptr_t)&c->ignore;
    s->op = UIW__NIC_SEND;
    s->nsge = 1;
    s->sge[0].addr = (uint64_t)(uintptr_t)hp;
    s->sge[0].len = (uint32_t)hl + (long_call ? 0 : q->len);
    s->sge[0].lkey = q->ib->lkey;
    for (unsigned i = 0; i + 1 < nwr; i++)
        wr[i].next = &wr[i + 1];
    wr[nwr - 1].next = NULL;
    if (long_call)
        atomic_fetch_add_explicit(&c->n_long, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->n_rchunks, q->nreads, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->n_wchunks, q->nwrites, memory_order_relaxed);
    if (want_reply)
        atomic_fetch_add_explicit(&c->n_replych, 1, memory_order_relaxed);
    uint32_t slen = s->sge[0].len;
    UIW__RR_COUNT(c->n_calls_tx, 1);
    UIW__RR_COUNT(c->n_inl_tx, slen);
    int r = uiw__rr_post(c, wr);
    if (r) {
        UIW__RR_UNCOUNT(c->n_calls_tx, 1);
        UIW__RR_UNCOUNT(c->n_inl_tx, slen);
        return -ENOTCONN; /* the connection is going away: q is an orphan of it */
    }
    return 0;
}

/* One more request holds a credit (c->lock held). */
static inline void inflight_up(struct uiw__rr_conn *c)
{
    c->inflight++;
    if (c->inflight > atomic_load_explicit(&c->max_inflight, memory_order_relaxed))
        atomic_store_explicit(&c->max_inflight, c->inflight, memory_order_relaxed);
}

UIW__DATAPATH int uiw__rr_req_send(struct uiw__rr_conn *c, struct uiw__rr_req *q)
{
    uiw__lock_take(&c->lock);
    int st = atomic_load(&c->state);
    if (st == UIW__RR_C_DEAD || st == UIW__RR_C_DRAINED) {
        uiw__lock_give(&c->lock);
        return -ENOTCONN;
    }
    q->conn = c;
    if (st == UIW__RR_C_NEGOTIATING || c->inflight >= c->credits || c->qhead) {
        if (st == UIW__RR_C_READY)
            UIW__RR_COUNT(c->n_credit_waits, 1);
        atomic_store(&q->state, UIW__RR_REQ_QUEUED);
        q->next = NULL;
        if (c->qtail)
            c->qtail->next = q;
        else
            c->qhead = q;
        c->qtail = q;
        uiw__lock_give(&c->lock);
        return 0;
    }
    inflight_up(c);
    xtab_put(c, q);
    atomic_store(&q->state, UIW__RR_REQ_SENT);
    uiw__lock_give(&c->lock);
    int r = post_req(c, q);
    if (r == -ENOTCONN)
        return 0; /* it is in flight on a connection that died: the orphans take it */
    if (r) {
        uiw__lock_take(&c->lock);
        uiw__rr_xtab_del(c, q);
        c->inflight--;
        atomic_store(&q->state, UIW__RR_REQ_IDLE);
        uiw__lock_give(&c->lock);
        q->conn = NULL;
    }
    return r;
}

/* Send queued requests while credits allow (called when credits come back). */
void uiw__rr_kick_queue(struct uiw__rr_conn *c)
{
    for (;;) {
        uiw__lock_take(&c->lock);
        struct uiw__rr_req *q = c->qhead;
        if (!q || atomic_load(&c->state) != UIW__RR_C_READY || c->inflight >= c->credits) {
            uiw__lock_give(&c->lock);
            return;
        }
        c->qhead = q->next;
        if (!c->qhead)
            c->qtail = NULL;
        q->next = NULL;
        inflight_up(c);
        xtab_put(c, q);
        atomic_store(&q->state, UIW__RR_REQ_SENT);
        uiw__lock_give(&c->lock);
        int r = post_req(c, q);
        if (r && r != -ENOTCONN) {
            /* cannot be sent (too large for this connection, out of memory) */
            uiw__lock_take(&c->lock);
            uiw__rr_xtab_del(c, q);
            c->inflight--;
            uiw__lock_give(&c->lock);
            q->status = r;
            if (c->up && c->up->req_done)
                c->up->req_done(c, q); /* it publishes DONE */
        }
    }
}

bool uiw__rr_req_abandon(struct uiw__rr_conn *c, struct uiw__rr_req *q)
{
    uiw__lock_take(&c->lock);
    int st = atomic_load(&q->state);
    if (st == UIW__RR_REQ_QUEUED) {
        struct uiw__rr_req **pp = &c->qhead, *prev = NULL;
        while (*pp && *pp != q) {
            prev = *pp;
            pp = &(*pp)->next;
        }
        if (!*pp) {
            /* the connection's orphans have it: they hand it back */
            uiw__lock_give(&c->lock);
            return false;
        }
        *pp = q->next;
        if (c->qtail == q)
            c->qtail = prev;
        q->next = NULL;
        q->status = -ETIMEDOUT;
        atomic_store(&q->state, UIW__RR_REQ_DONE);
        uiw__lock_give(&c->lock);
        return true;
    }
    if (st == UIW__RR_REQ_SENT || st == UIW__RR_REQ_INVALIDATING) {
        q->abandoned = true;
        uiw__lock_give(&c->lock);
        /* the peer may still read or write what q advertised: end the connection (its
         * QP stops placing at once); its other calls go again on the next one */
        uiw__rr_conn_died(c, -ETIMEDOUT);
        return false;
    }
    uiw__lock_give(&c->lock);
    return false;
}

struct uiw__rr_req *uiw__rr_conn_orphans(struct uiw__rr_conn *c)
{
    struct uiw__rr_req *head = NULL, **tail = &head;
    uiw__lock_take(&c->lock);
    for (uint32_t i = 0; i <= c->xtab_mask; i++) {
        struct uiw__rr_req *q = c->xtab[i];
        if (!q)
            continue;
        c->xtab[i] = NULL;
        uiw__rr_sq_release(c, q->sq_res);
        q->sq_res = 0;
        *tail = q;
        tail = &q->next;
    }
    *tail = c->qhead;
    c->qhead = c->qtail = NULL;
    c->inflight = 0;
    uiw__lock_give(&c->lock);
    for (struct uiw__rr_req *q = head; q; q = q->next) {
        drop_mrs(c->dev, q);
        q->inv_pending = 0;
        q->conn = NULL;
        if (atomic_load(&q->state) != UIW__RR_REQ_INVALIDATING)
            atomic_store(&q->state, UIW__RR_REQ_IDLE);
    }
    return head;
}

/* Invalidate q's MRs that are still valid (LOCAL_INV, the last signaled); false when none
 * is left to invalidate. */
static bool invalidate(struct uiw__rr_conn *c, struct uiw__rr_req *q)
{
    struct uiw__nic_send wr[UIW__RR_MAX_REGIONS];
    unsigned n = 0;
    struct uiw__rr_region *all[UIW__RR_MAX_REGIONS];
    unsigned na = uiw__rr_req_regions(q, all);
    for (unsigned i = 0; i < na; i++) {
        struct uiw__rr_mr *m = all[i]->mr;
        if (!m || !m->valid)
            continue;
        memset(&wr[n], 0, sizeof(wr[n]));
        wr[n].wr_id = (uint64_t)(uintptr_t)&c->ignore;
        wr[n].op = UIW__NIC_LOCAL_INV;
        wr[n].inv_rkey = m->nmr.rkey;
        n++;
    }
    if (n == 0)
        return false;
    wr[n - 1].wr_id = (uint64_t)(uintptr_t)q;
    wr[n - 1].signaled = true;
    for (unsigned i = 0; i + 1 < n; i++)
        wr[i].next = &wr[i + 1];
    sq_reserve_head(c, n);
    q->sq_res += n;
    q->inv_pending = 1;
    atomic_fetch_add_explicit(&c->n_linv, n, memory_order_relaxed);
    atomic_store(&q->state, UIW__RR_REQ_INVALIDATING);
    if (uiw__rr_post(c, wr) != 0) {
        /* the connection died: the orphans reset these MRs */
        return true;
    }
    return true;
}

/* q is over (reply or error taken): hand it back to the upper layer, or send it again. */
static void req_end(struct uiw__rr_conn *c, struct uiw__rr_req *q)
{
    uiw__lock_take(&c->lock);
    uiw__rr_xtab_del(c, q);
    uiw__rr_sq_release(c, q->sq_res);
    q->sq_res = 0;
    bool again = q->requeue && !q->abandoned;
    if (again) {
        q->requeue = false;
        atomic_store(&q->state, UIW__RR_REQ_QUEUED);
        q->next = c->qhead;
        c->qhead = q;
        if (!c->qtail)
            c->qtail = q;
    }
    uiw__lock_give(&c->lock);
    if (again) {
        /* fresh MRs and buffers on the next send (these are invalid by now) */
        drop_mrs(c->dev, q);
        uiw__rr_ibuf_put(c->dev, q->rib);
        q->rib = NULL;
        uiw__rr_kick_queue(c);
        return;
    }
    if (c->up && c->up->req_done)
        c->up->req_done(c, q); /* it publishes DONE */
}

/* The reply (or error) of q is in: invalidate what is left, then end it. */
void uiw__rr_req_replied(struct uiw__rr_conn *c, struct uiw__rr_req *q);
void uiw__rr_req_replied(struct uiw__rr_conn *c, struct uiw__rr_req *q)
{
    if (invalidate(c, q))
        return; /* ends in uiw__rr_req_finish_inv */
    req_end(c, q);
}

void uiw__rr_req_finish_inv(struct uiw__rr_conn *c, struct uiw__rr_req *q)
{
    struct uiw__rr_region *all[UIW__RR_MAX_REGIONS];
    unsigned na = uiw__rr_req_regions(q, all);
    for (unsigned i = 0; i < na; i++)
        if (all[i]->mr)
            all[i]->mr->valid = false;
    q->inv_pending = 0;
    req_end(c, q);
}

/* ---------------------------------------------------------------- responder */

int uiw__rr_reply_begin(struct uiw__rr_call *k)
{
    struct uiw__rr_dev *d = k->conn->dev;
    if (!k->rib) {
        k->rib = uiw__rr_ibuf_get(d);
        if (!k->rib)
            return -ENOMEM;
    }
    uiw__rr_bulk_put(d, k->rbulk);
    k->rbulk = NULL;
    k->rp = k->rib->data;
    k->rcap = d->ibuf_size;
    k->rlkey = k->rib->lkey;
    k->rlen = 0;
    k->npush = 0;
    memset(k->wused, 0, sizeof(k->wused));
    k->too_small = false;
    k->wshort = false;
    return 0;
}

int uiw__rr_reply_grow(struct uiw__rr_call *k, uint32_t need)
{
    struct uiw__rr_dev *d = k->conn->dev;
    if (need > d->max_msg)
        return -EMSGSIZE;
    uint32_t want = need < 2 * k->rcap ? 2 * k->rcap : need;
    if (want > d->max_msg)
        want = d->max_msg;
    struct uiw__rr_bulk *b = uiw__rr_bulk_get(d, want);
    if (!b)
        return -ENOMEM;
    memcpy(b->p, k->rp, k->rlen);
    uiw__rr_bulk_put(d, k->rbulk);
    k->rbulk = b;
    k->rp = b->p;
    k->rcap = b->cap;
    k->rlkey = b->lkey;
    return 0;
}

void uiw__rr_reply_take(struct uiw__rr_call *k, struct uiw__rr_ibuf **ib, struct uiw__rr_bulk **b)
{
    *ib = NULL;
    *b = NULL;
    if (k->rbulk) {
        *b = k->rbulk;
        k->rbulk = NULL;
    } else {
        *ib = k->rib;
        k->rib = NULL;
    }
    k->rp = NULL;
    k->rlen = k->rcap = 0;
}

int uiw__rr_reply_give(struct uiw__rr_call *k, struct uiw__rr_ibuf *ib, struct uiw__rr_bulk *b,
                       uint32_t len)
{
    struct uiw__rr_dev *d = k->conn->dev;
    if (ib) {
        uiw__rr_ibuf_put(d, k->rib);
        k->rib = ib;
    }
    if (uiw__rr_reply_begin(k) != 0)
        return -ENOMEM; /* no inline buffer for the header: b stays the caller's */
    if (b) {
        k->rbulk = b;
        k->rp = b->p;
        k->rcap = b->cap;
        k->rlkey = b->lkey;
    }
    k->rlen = len;
    return 0;
}

static uint32_t chunk_cap(const struct uiw__rr_call *k, uint32_t i)
{
    uint64_t s = 0;
    for (uint32_t j = 0; j < k->wnsegs[i]; j++)
        s += k->wsegs[i][j].length;
    return s > UINT32_MAX ? UINT32_MAX : (uint32_t)s;
}

/* The lkey of registered memory holding [p, p+len) that belongs to k or the pools. */
static uint32_t src_lkey(struct uiw__rr_call *k, const void *p, uint32_t len)
{
    uintptr_t a = (uintptr_t)p;
    for (uint32_t i = 0; i < k->ngetbuf; i++) {
        const struct uiw__rr_bulk *b = k->getbuf[i];
        if (a >= (uintptr_t)b->p && a + len <= (uintptr_t)b->p + b->cap)
            return b->lkey;
    }
    for (uint32_t i = 0; i < k->nbulk; i++) {
        const struct uiw__rr_bulk *b = k->bulk[i];
        if (b && a >= (uintptr_t)b->p && a + len <= (uintptr_t)b->p + b->cap)
            return b->lkey;
    }
    if (k->rbulk && a >= (uintptr_t)k->rbulk->p &&
        a + len <= (uintptr_t)k->rbulk->p + k->rbulk->cap)
        return k->rbulk->lkey;
    return uiw__rr_dev_lkey(k->conn->dev, p, len);
}

bool uiw__rr_reply_ddp(struct uiw__rr_call *k, const void *src, uint32_t len)
{
    if (k->no_ddp || k->npush >= k->nwrites || k->too_small)
        return false;
    uint32_t i = k->npush;
    uint32_t cap = chunk_cap(k, i);
    if (len > cap) {
        /* the first segment of this chunk that cannot hold its share */
        uint32_t idx = 1, off = 0;
        for (uint32_t j = 0; j < i; j++)
            idx += k->wnsegs[j];
        for (uint32_t j = 0; j < k->wnsegs[i]; j++) {
            if (off + k->wsegs[i][j].length >= len || j + 1 == k->wnsegs[i]) {
                k->short_index = k->wnsegs[i] ? idx + j : 0;
                k->short_needed = len - off;
                break;
            }
            off += k->wsegs[i][j].length;
        }
        if (!k->wnsegs[i]) {
            k->short_index = 0;
            k->short_needed = len;
        }
        k->too_small = true;
        k->wshort = true;
        return true;
    }
    uint32_t lkey = len ? src_lkey(k, src, len) : 1;
    if (!lkey) {
        /* The caller's memory, which is its own again once the reply is encoded: copied
         * into a buffer of the call, which lives until the reply went out. Pushing from
         * the memory itself would hold the caller (a server's worker) until then, for as
         * long as a peer that stops reading likes. Results in registered memory (the
         * call's, uiw_svc_getbuf's, the pools') go without a copy. */
        if (k->ncopy == UIW__RR_MAX_CHUNKS)
            return false;
        struct uiw__rr_bulk *b = uiw__rr_bulk_get(k->conn->dev, len);
        if (!b)
            return false;
        memcpy(b->p, src, len);
        k->copy[k->ncopy++] = b;
        src = b->p;
        lkey = b->lkey;
    }
    k->push[k->npush].src = src;
    k->push[k->npush].len = len;
    k->push[k->npush].lkey = lkey;
    k->push[k->npush].chunk = i;
    k->wused[i] = len;
    k->npush++;
    return true;
}

static bool same_handle(const struct uiw__rr_call *k, uint32_t *handle)
{
    uint32_t h = 0;
    bool any = false;
    for (uint32_t i = 0; i < k->nrsegs; i++) {
        if (any && k->rsegs[i].target.handle != h)
            return false;
        h = k->rsegs[i].target.handle, any = true;
    }
    for (uint32_t i = 0; i < k->nwrites; i++)
        for (uint32_t j = 0; j < k->wnsegs[i]; j++) {
            if (any && k->wsegs[i][j].handle != h)
                return false;
            h = k->wsegs[i][j].handle, any = true;
        }
    for (uint32_t j = 0; k->has_reply && j < k->reply_nsegs; j++) {
        if (any && k->reply_segs[j].handle != h)
            return false;
        h = k->reply_segs[j].handle, any = true;
    }
    *handle = h;
    return any && h != 0;
}

static bool handle_in_call(const struct uiw__rr_call *k, uint32_t handle)
{
    for (uint32_t i = 0; i < k->nrsegs; i++)
        if (k->rsegs[i].target.handle == handle)
            return true;
    for (uint32_t i = 0; i < k->nwrites; i++)
        for (uint32_t j = 0; j < k->wnsegs[i]; j++)
            if (k->wsegs[i][j].handle == handle)
                return true;
    for (uint32_t j = 0; k->has_reply && j < k->reply_nsegs; j++)
        if (k->reply_segs[j].handle == handle)
            return true;
    return false;
}

/* Append RDMA Writes of [src, src+len) over segs (in order); returns the bytes written to
 * each segment in out_len[]. */
static unsigned writes_over(struct uiw__rr_conn *c, struct uiw__nic_send *wr, const uint8_t *src,
                            uint32_t len, uint32_t lkey, const struct uiw_rpcrdma_segment *segs,
                            uint32_t nsegs, uint32_t *out_len)
{
    unsigned n = 0;
    uint32_t off = 0;
    for (uint32_t j = 0; j < nsegs; j++) {
        uint32_t take = len - off < segs[j].length ? len - off : segs[j].length;
        out_len[j] = take;
        if (take == 0)
            continue;
        memset(&wr[n], 0, sizeof(wr[n]));
        wr[n].wr_id = (uint64_t)(uintptr_t)&c->ignore;
        wr[n].op = UIW__NIC_WRITE;
        wr[n].nsge = 1;
        wr[n].sge[0].addr = (uint64_t)(uintptr_t)(src + off);
        wr[n].sge[0].len = take;
        wr[n].sge[0].lkey = lkey;
        wr[n].raddr = segs[j].offset;
        wr[n].rkey = segs[j].handle;
        n++;
        off += take;
    }
    return n;
}

/* No send queue room for k's reply now: it waits on its connection, at the tail (first
 * time) or back at the head (again, from uiw__rr_replies_waiting), and counts as sent so
 * that its call is released only after it went out or the connection ended. Returns 0,
 * or -ENOTCONN on a connection that is gone or closing (nothing is posted there again). */
static int reply_wait(struct uiw__rr_conn *c, struct uiw__rr_call *k, bool again)
{
    uiw__lock_take(&c->lock);
    int st = atomic_load(&c->state);
    if (st == UIW__RR_C_DEAD || st == UIW__RR_C_DRAINED || atomic_load(&c->closing)) {
        uiw__lock_give(&c->lock);
        if (again)
            uiw__rr_call_sent(c, k, false);
        return -ENOTCONN;
    }
    if (!c->reply_wait) {
        atomic_fetch_add(&c->dev->room_waiters, 1);
        atomic_store(&c->replies_wait, true);
    }
    if (again) {
        k->next = c->reply_wait;
        c->reply_wait = k;
        if (!c->reply_wait_tail)
            c->reply_wait_tail = k;
    } else {
        k->next = NULL;
        if (c->reply_wait_tail)
            c->reply_wait_tail->next = k;
        else
            c->reply_wait = k;
        c->reply_wait_tail = k;
        k->sent = true;
        atomic_fetch_add(&c->tx_pending, 1); /* until uiw__rr_call_sent */
    }
    uiw__lock_give(&c->lock);
    /* room may have come meanwhile: the leader looks on its next pass */
    uiw__rr_dev_kick(c->dev);
    return 0;
}

void uiw__rr_replies_waiting(struct uiw__rr_conn *c)
{
    if (!atomic_load(&c->replies_wait))
        return;
    for (;;) {
        uiw__lock_take(&c->lock);
        struct uiw__rr_call *k = c->reply_wait;
        if (k) {
            c->reply_wait = k->next;
            if (!c->reply_wait) {
                c->reply_wait_tail = NULL;
                atomic_store(&c->replies_wait, false);
                atomic_fetch_sub(&c->dev->room_waiters, 1);
            }
        }
        uiw__lock_give(&c->lock);
        if (!k)
            return;
        k->next = NULL;
        int r = uiw__rr_reply_send(k);
        if (r == 0) {
            uiw__lock_take(&c->lock);
            bool back = c->reply_wait == k; /* no room yet: it went back to the head */
            uiw__lock_give(&c->lock);
            if (back)
                return;
        }
    }
}

/* An RDMA_ERROR goes instead of the reply: 1, or the error of sending it. */
static int error_instead(struct uiw__rr_call *k, uint32_t code)
{
    int r = uiw__rr_call_error(k, code);
    return r ? r : 1;
}

bool uiw__rr_reply_fits(const struct uiw__rr_call *k)
{
    if (k->too_small)
        return false;
    /* inline: the header takes at most UIW__RR_HDR_ROOM bytes */
    if (!k->rbulk && k->rlen + UIW__RR_HDR_ROOM <= k->conn->inline_send)
        return true;
    uint64_t cap = 0;
    for (uint32_t j = 0; k->has_reply && j < k->reply_nsegs; j++)
        cap += k->reply_segs[j].length;
    return !k->no_ddp && k->has_reply && cap >= k->rlen;
}

int uiw__rr_reply_send(struct uiw__rr_call *k)
{
    struct uiw__rr_conn *c = k->conn;
    enum {
        MAXW = UIW__RR_MAX_CHUNKS * UIW__RR_MAX_SEGS + UIW__RR_MAX_SEGS + UIW__RR_MAX_CHUNKS + 2
    };
    struct uiw__nic_send wr[MAXW];
    unsigned n = 0;
    struct uiw_rpcrdma_hdr h;
    struct uiw_rpcrdma_write_chunk wc[UIW__RR_MAX_CHUNKS];
    struct uiw_rpcrdma_segment ws[UIW__RR_MAX_CHUNKS][UIW__RR_MAX_SEGS];
    struct uiw_rpcrdma_segment rps[UIW__RR_MAX_SEGS];

    if (k->too_small)
        return error_instead(k, k->vers == 2 ? UIW_RDMA2_ERR_REPLY_RESOURCE : UIW_RDMA_ERR_CHUNK);
    memset(&h, 0, sizeof(h));
    h.xid = k->xid;
    h.vers = k->vers;
    h.credit = uiw__rr_credit_out(c, true);
    h.proc = UIW_RDMA_MSG;
    h.u.chunks.direction = UIW_RPCRDMA_REPLY;
    h.u.chunks.nwrites = k->nwrites;
    h.u.chunks.writes = wc;
    for (uint32_t i = 0; i < k->nwrites; i++) {
        wc[i].nsegs = k->wnsegs[i];
        wc[i].segs = ws[i];
        for (uint32_t j = 0; j < k->wnsegs[i]; j++) {
            ws[i][j] = k->wsegs[i][j];
            ws[i][j].length = 0;
        }
    }
    for (uint32_t i = 0; i < k->npush; i++) {
        struct uiw__rr_push *p = &k->push[i];
        uint32_t lens[UIW__RR_MAX_SEGS];
        n += writes_over(c, &wr[n], p->src, p->len, p->lkey, k->wsegs[p->chunk],
                         k->wnsegs[p->chunk], lens);
        for (uint32_t j = 0; j < k->wnsegs[p->chunk]; j++)
            ws[p->chunk][j].length = lens[j];
    }
    int hl = uiw_rpcrdma_encode(NULL, 0, &h);
    bool inline_ok = hl > 0 && (uint32_t)hl + k->rlen <= c->inline_send && !k->rbulk;
    if (!inline_ok) {
        uint64_t cap = 0;
        for (uint32_t j = 0; k->has_reply && j < k->reply_nsegs; j++)
            cap += k->reply_segs[j].length;
        if (k->no_ddp || !k->has_reply || cap < k->rlen) {
            /* REPLY_RESOURCE: the first Reply chunk segment too short, or none */
            uint32_t idx = 0, need = k->rlen;
            if (k->has_reply && k->reply_nsegs) {
                uint32_t base = 1, off = 0;
                for (uint32_t i = 0; i < k->nwrites; i++)
                    base += k->wnsegs[i];
                for (uint32_t j = 0; j < k->reply_nsegs; j++) {
                    if (off + k->reply_segs[j].length < k->rlen && j + 1 < k->reply_nsegs) {
                        off += k->reply_segs[j].length;
                        continue;
                    }
                    idx = base + j;
                    need = k->rlen - off;
                    break;
                }
            }
            k->short_index = idx;
            k->short_needed = need;
            k->too_small = true;
            return error_instead(k,
                                 k->vers == 2 ? UIW_RDMA2_ERR_REPLY_RESOURCE : UIW_RDMA_ERR_CHUNK);
        }
        uint32_t lens[UIW__RR_MAX_SEGS];
        n += writes_over(c, &wr[n], k->rp, k->rlen, k->rlkey, k->reply_segs, k->reply_nsegs, lens);
        for (uint32_t j = 0; j < k->reply_nsegs; j++) {
            rps[j] = k->reply_segs[j];
            rps[j].length = lens[j];
        }
        h.proc = UIW_RDMA_NOMSG;
        h.u.chunks.has_reply = true;
        h.u.chunks.reply.nsegs = k->reply_nsegs;
        h.u.chunks.reply.segs = rps;
        hl = uiw_rpcrdma_encode(NULL, 0, &h);
    }
    if (hl < 0 || hl > UIW__RR_HDR_ROOM || (uint32_t)hl > c->inline_send)
        return error_instead(k, k->vers == 2 ? UIW_RDMA2_ERR_SYSTEM : UIW_RDMA_ERR_CHUNK);
    /* the header goes right before the inline payload (or alone) */
    uint8_t *hp;
    uint32_t slen, skey;
    if (h.proc == UIW_RDMA_MSG) {
        hp = k->rib->data - hl;
        slen = (uint32_t)hl + k->rlen;
    } else {
        hp = k->rib->data - hl;
        slen = (uint32_t)hl;
    }
    skey = k->rib->lkey;
    uiw_rpcrdma_encode(hp, (size_t)hl, &h);
    struct uiw__nic_send *s = &wr[n++];
    memset(s, 0, sizeof(*s));
    s->wr_id = (uint64_t)(uintptr_t)k;
    s->signaled = true;
    s->op = UIW__NIC_SEND;
    s->nsge = 1;
    s->sge[0].addr = (uint64_t)(uintptr_t)hp;
    s->sge[0].len = slen;
    s->sge[0].lkey = skey;
    uint32_t inv;
    if (k->vers == 2) {
        if (c->swi_ok && k->inv_handle && handle_in_call(k, k->inv_handle)) {
            s->op = UIW__NIC_SEND_INV;
            s->inv_rkey = k->inv_handle;
        }
    } else if (c->peer_swi && same_handle(k, &inv)) {
        s->op = UIW__NIC_SEND_INV;
        s->inv_rkey = inv;
    }
    if (s->op == UIW__NIC_SEND_INV)
        UIW__RR_COUNT(c->n_swi_tx, 1);
    for (unsigned i = 0; i + 1 < n; i++)
        wr[i].next = &wr[i + 1];
    wr[n - 1].next = NULL;
    bool waited = k->sent; /* posted from the connection's wait (uiw__rr_replies_waiting) */
    if (!uiw__rr_sq_reserve(c, n))
        return reply_wait(c, k, waited);
    k->sq_res += n; /* beside the RDMA Reads' entries (pull), released together */
    uiw__lock_take(&c->lock);
    uiw__rr_call_count_off(c, k);
    k->sent = true;
    uiw__lock_give(&c->lock);
    if (!waited)
        atomic_fetch_add(&c->tx_pending, 1); /* until uiw__rr_call_sent */
    if (h.proc == UIW_RDMA_NOMSG)
        atomic_fetch_add_explicit(&c->n_replych, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->n_wchunks, k->npush, memory_order_relaxed);
    uint64_t wbytes = h.proc == UIW_RDMA_NOMSG ? k->rlen : 0;
    for (uint32_t i = 0; i < k->npush; i++)
        wbytes += k->push[i].len;
    /* counted before the requester can hold the reply */
    UIW__RR_COUNT(c->n_replies_tx, 1);
    UIW__RR_COUNT(c->n_wr_bytes, wbytes);
    UIW__RR_COUNT(c->n_inl_tx, slen);
    int r = uiw__rr_post(c, wr);
    if (r) {
        UIW__RR_UNCOUNT(c->n_replies_tx, 1);
        UIW__RR_UNCOUNT(c->n_wr_bytes, wbytes);
        UIW__RR_UNCOUNT(c->n_inl_tx, slen);
        /* refused at once: treat as flushed */
        uiw__rr_call_sent(c, k, false);
        return -ENOTCONN;
    }
    return 0;
}

int uiw__rr_call_error(struct uiw__rr_call *k, uint32_t errcode)
{
    struct uiw__rr_conn *c = k->conn;
    struct uiw_rpcrdma_error e = {
        .errcode = errcode, .segment_index = k->short_index, .length_needed = k->short_needed};
    uiw__lock_take(&c->lock);
    uiw__rr_call_count_off(c, k);
    uiw__lock_give(&c->lock);
    return uiw__rr_send_error(c, k->xid, k->vers, errcode, &e);
}
