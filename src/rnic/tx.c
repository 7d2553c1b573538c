/*
 * The transmit scheduler: turns the Terminate, the RTR message, Read Responses (served
 * in order, bounded by IRD) and the send queue (in order, obeying fence and ORD) into
 * FPDUs. Each FPDU is a slot: DDP/RDMAP header bytes and framing bytes in engine scratch,
 * payload iovecs straight into registered memory. Sends and Writes complete when their
 * last byte has been handed to TCP; Reads when their response has been placed (rx.c).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteorder.h"
#include "wire/fpdu_fast.h"
#include "wire/hdr.h"
#include "rnic/engine.h"
#include "common/compiler.h"
#include "common/copy.h"
#include "common/pages.h"

/* The rest of Read Response segments whose source was deregistered while TCP had begun
 * to take them (uiw__tx_unpin), sent from here instead; freed with the slots. */
struct tx_bounce {
    struct tx_bounce *next;
    uint8_t data[];
};

struct tx_mem {
    struct uiw_wire_iov *tmp;
    struct tx_bounce *bounce;
};

_Static_assert(offsetof(struct uiw__txslot, hdr) == offsetof(struct uiw__txslot, len) + 2,
               "the MPA length field sits right before the header");

/* The base of a file payload's iovec: an address that is none of the payload's. */
const uint8_t uiw__tx_file_mark[1];

/* A slot's record, rounded up: its iovecs follow. */
#define SLOT_REC ((sizeof(struct uiw__txslot) + 15) & ~(size_t)15)

/* Slot i: a record of the slot, its iovecs and its framing scratch, one after another,
 * so that the slot a ping-pong uses all the time (tx_advance rewinds to slot 0) sits on
 * one page with the scratch. */
UIW__DATAPATH static struct uiw__txslot *slot_at(const struct uiw_qp *qp, uint32_t i)
{
    return (struct uiw__txslot *)(void *)(qp->slot_mem +
                                          (size_t)(i % UIW__TX_SLOTS) * qp->slot_stride);
}

int uiw__tx_alloc(struct uiw_qp *qp)
{
    uiw__tx_free(qp);
    size_t mul = qp->cp.mulpdu;
    /* header + up to 4 payload pieces, framing, and 2 more per marker when markers are on */
    int niov = qp->cp.markers_tx ? uiw_fpdu_tx_iovs(mul, 1 + UIW__MAX_SGE) : 1 + UIW__MAX_SGE + 2;
    size_t scr = uiw_fpdu_tx_scratch(mul);
    scr = (scr + 15) & ~(size_t)15;
    size_t per = SLOT_REC + (size_t)niov * sizeof(struct iovec) + scr;
    per = (per + 63) & ~(size_t)63;
    size_t head = sizeof(struct tx_mem) + (size_t)niov * sizeof(struct uiw_wire_iov);
    /* the slots first, from a page boundary: slot 0, which a ping-pong uses all the time,
     * then lies on one page (each page touched after a system call is a TLB miss) */
    size_t bytes = (per * UIW__TX_SLOTS + head + 4095) & ~(size_t)4095;
    /* zeroed pages: a slot costs memory once used (slot_new sets it up), and a connection
     * that sends little uses few */
    uint8_t *blk = uiw__pages_alloc(bytes);
    if (!blk)
        return -ENOMEM;
    struct tx_mem *tm = (struct tx_mem *)(void *)(blk + per * UIW__TX_SLOTS);
    tm->tmp = (struct uiw_wire_iov *)(void *)(tm + 1);
    tm->bounce = NULL;
    qp->slot_mem = blk;
    qp->slot_stride = per;
    qp->txm = tm;
    qp->iov_per_slot = niov;
    qp->slot_head = qp->slot_tail = qp->slot_given = 0;
    qp->tx_ahead = 0;
    qp->slot_off = 0;
    uiw_fpdu_tx_init(&qp->ftx, qp->cp.crc, qp->cp.markers_tx);
    return 0;
}

UIW__DATAPATH static struct tx_mem *tx_mem(struct uiw_qp *qp)
{
    return qp->txm;
}

void uiw__tx_free(struct uiw_qp *qp)
{
    if (qp->iov_per_slot) {
        uiw__tx_drop_all(qp);
        size_t head =
            sizeof(struct tx_mem) + (size_t)qp->iov_per_slot * sizeof(struct uiw_wire_iov);
        /* the block, tx_mem behind the slots */
        uiw__pages_free(qp->slot_mem,
                        (qp->slot_stride * UIW__TX_SLOTS + head + 4095) & ~(size_t)4095);
        qp->iov_per_slot = 0;
        qp->txm = NULL;
        qp->slot_mem = NULL;
    }
}

UIW__DATAPATH static struct uiw__txslot *slot_new(struct uiw_qp *qp)
{
    if (qp->slot_tail - qp->slot_head >= UIW__TX_SLOTS)
        return NULL;
    /* Build (and checksum) only a little ahead of what TCP takes, so the payload is still
     * in cache when the kernel copies it. */
    if (qp->tx_ahead >= UIW__TX_AHEAD && !qp->term_pending)
        return NULL;
    struct uiw__txslot *s = slot_at(qp, qp->slot_tail);
    s->iov = (struct iovec *)(void *)((uint8_t *)s + SLOT_REC);
    s->scratch = (uint8_t *)(s->iov + qp->iov_per_slot);
    s->has_swqe = false;
    s->terminate = false;
    s->pin = 0;
    s->file = NULL;
    s->niov = 0;
    s->wire_len = 0;
    return s;
}

/* Slot s holds niov iovecs of total wire bytes: queue it. */
UIW__DATAPATH static int slot_done(struct uiw_qp *qp, struct uiw__txslot *s, int niov, size_t total)
{
    s->niov = niov;
    s->wire_len = total;
    qp->tx_ahead += total;
    qp->slot_tail++;
    return 0;
}

/* Slot s holds a header and a small whole payload in s->hdr (hlen + plen bytes, without
 * markers): frame them there (pad and CRC after them) and commit the slot, one iovec
 * (UIW__TX_COPY_MAX). */
UIW__DATAPATH static int slot_seal_copied(struct uiw_qp *qp, struct uiw__txslot *s, size_t hlen,
                                          size_t plen)
{
    struct uiw_wire_iov ul = {s->hdr, hlen + plen};
    int t = uiw__fpdu_tx_seal(&qp->ftx, &ul, 1, s->len, s->hdr + hlen + plen);
    if (t < 0)
        return t;
    uiw__qstat(qp, UIW__STAT_COPIED, plen);
    size_t total = 2 + hlen + plen + (size_t)t;
    s->iov[0].iov_base = s->len;
    s->iov[0].iov_len = total;
    return slot_done(qp, s, 1, total);
}

/* Frame hdr[0..hlen) + the payload ul[1..1+npl) into slot s and commit it (ul[0], the
 * header's entry, is set here: the callers gather the payload in place). whole: the
 * payload is a whole message, which may be copied if small (never a piece of a large
 * one: those stay zero-copy to the last byte). */
UIW__DATAPATH static int slot_commit(struct uiw_qp *qp, struct uiw__txslot *s, size_t hlen,
                                     struct uiw_wire_iov *ul, int npl, bool whole)
{
    const struct uiw_wire_iov *pl = ul + 1;
    ul[0].base = s->hdr;
    ul[0].len = hlen;
    s->ftx_before = qp->ftx;
    size_t plen = 0;
    for (int i = 0; i < npl; i++)
        plen += pl[i].len;
    if (whole && !qp->ftx.markers && plen && plen <= UIW__TX_COPY_MAX &&
        hlen + plen + 7 <= sizeof(s->hdr)) {
        /* small: the whole FPDU in the slot, one iovec (UIW__TX_COPY_MAX) */
        uint8_t *d = s->hdr + hlen;
        for (int i = 0; i < npl; i++) {
            uiw__copy(d, pl[i].base, pl[i].len);
            d += pl[i].len;
        }
        return slot_seal_copied(qp, s, hlen, plen);
    }
    if (!qp->ftx.markers) {
        /* length and header from one iovec (the length field sits right before hdr), the
         * payload, then pad and CRC from the scratch */
        int t = uiw__fpdu_tx_seal(&qp->ftx, ul, 1 + npl, s->len, s->scratch);
        if (t < 0)
            return t;
        s->iov[0].iov_base = s->len;
        s->iov[0].iov_len = 2 + hlen;
        size_t total = 2 + hlen + (size_t)t;
        int k = 1;
        for (int i = 0; i < npl; i++) {
            if (!pl[i].len)
                continue;
            s->iov[k].iov_base = (void *)(uintptr_t)pl[i].base;
            s->iov[k++].iov_len = pl[i].len;
            total += pl[i].len;
        }
        s->iov[k].iov_base = s->scratch;
        s->iov[k++].iov_len = (size_t)t;
        return slot_done(qp, s, k, total);
    }
    struct tx_mem *tm = tx_mem(qp);
    int n = uiw_fpdu_tx_build(&qp->ftx, ul, 1 + npl, s->scratch, tm->tmp, qp->iov_per_slot);
    if (n < 0)
        return n;
    /* The length field alone in front of the header: move it into the slot, right before
     * the header, and send both from one iovec (one fewer for the kernel to walk). */
    int k = 0;
    if (n >= 2 && tm->tmp[0].len == 2 && tm->tmp[1].base == s->hdr) {
        memcpy(s->len, tm->tmp[0].base, 2);
        tm->tmp[1].base = s->len;
        tm->tmp[1].len += 2;
        k = 1;
    }
    size_t total = 0;
    for (int i = k; i < n; i++) {
        s->iov[i - k].iov_base = (void *)(uintptr_t)tm->tmp[i].base;
        s->iov[i - k].iov_len = tm->tmp[i].len;
        total += tm->tmp[i].len;
    }
    return slot_done(qp, s, n - k, total);
}

/* The source of a Read Response went away (deregistered, invalidated, bound again) after
 * its Read Request arrived: the stream ends with the Terminate the Request would have got
 * then (RFC 5040 8.1.1: RDMAP / Remote Protection, Invalid STag for a region gone), with
 * the Request's DDP and RDMA headers. */
UIW__COLD static void rr_fail(struct uiw_qp *qp, const struct uiw__ird *e, int code)
{
    uint8_t ddp[UIW_DDP_UNTAGGED_HDR_LEN], rdma[UIW_RDMAP_READ_REQ_LEN];
    struct uiw_ddp_hdr h = {.last = true,
                            .rdmap_ctrl = uiw_rdmap_ctrl(UIW_RDMAP_READ_REQ),
                            .qn = UIW_DDP_QN_READ_REQ,
                            .msn = e->msn};
    uiw_ddp_hdr_encode(&h, ddp, sizeof(ddp));
    struct uiw_rdmap_read_req rr = {.sink_stag = e->sink_stag,
                                    .sink_to = e->sink_to,
                                    .size = e->size,
                                    .src_stag = e->src_stag,
                                    .src_to = e->src_to};
    uiw_rdmap_read_req_encode(&rr, rdma);
    struct uiw__term_quote q = {.tagged = false,
                                .ddp = ddp,
                                .ddp_len = sizeof(ddp),
                                .seg_len = UIW_DDP_UNTAGGED_HDR_LEN + UIW_RDMAP_READ_REQ_LEN,
                                .rdma = rdma};
    uiw__qp_fail_quoting(qp, code, &q);
}

/* Drop the slots [keep, tail): the framer goes back to where the first was built. */
static void drop_from(struct uiw_qp *qp, uint32_t keep)
{
    if (keep == qp->slot_tail)
        return;
    qp->ftx = slot_at(qp, keep)->ftx_before;
    for (uint32_t i = keep; i != qp->slot_tail; i++) {
        struct uiw__txslot *s = slot_at(qp, i);
        qp->tx_ahead -= s->wire_len;
        if (s->pin)
            uiw__stag_unpin(qp->ctx, s->pin);
        s->pin = 0;
        uiw__file_src_put(s->file);
        s->file = NULL;
    }
    qp->slot_tail = keep;
}

/* The first slot that may be dropped: after the one under way (begun, or given to io). */
static uint32_t first_droppable(const struct uiw_qp *qp)
{
    uint32_t keep = qp->slot_head + (qp->slot_off > 0 && qp->slot_head != qp->slot_tail ? 1 : 0);
    if (qp->slot_given - qp->slot_head > keep - qp->slot_head &&
        qp->slot_given - qp->slot_head <= qp->slot_tail - qp->slot_head)
        keep = qp->slot_given;
    return keep;
}

void uiw__tx_drop_unsent(struct uiw_qp *qp)
{
    if (!qp->iov_per_slot)
        return;
    drop_from(qp, first_droppable(qp));
    for (uint32_t i = qp->slot_head; i != qp->slot_tail; i++)
        slot_at(qp, i)->has_swqe = false;
}

void uiw__tx_drop_all(struct uiw_qp *qp)
{
    if (!qp->iov_per_slot)
        return;
    drop_from(qp, qp->slot_head);
    qp->slot_off = 0;
    qp->slot_head = qp->slot_tail = qp->slot_given = 0;
    struct tx_mem *tm = tx_mem(qp);
    while (tm->bounce) {
        struct tx_bounce *b = tm->bounce;
        tm->bounce = b->next;
        free(b);
    }
}

/* Whether iovec v of slot s points into registered memory (not the slot's own bytes). */
static bool iov_outside(const struct uiw_qp *qp, const struct uiw__txslot *s, const struct iovec *v)
{
    uintptr_t p = (uintptr_t)v->iov_base, lo = (uintptr_t)s;
    return v->iov_len && (p < lo || p >= lo + qp->slot_stride);
}

int uiw__tx_unpin(struct uiw_qp *qp, uint32_t idx)
{
    if (!qp->iov_per_slot || !uiw__tx_pinned(qp, idx, false))
        return 0;
    if (qp->slot_given != qp->slot_head)
        return -EAGAIN; /* io may be reading them right now */
    size_t need = 0;
    for (uint32_t i = qp->slot_head; i != qp->slot_tail; i++) {
        const struct uiw__txslot *s = slot_at(qp, i);
        for (int j = 0; s->pin == idx && j < s->niov; j++)
            need += iov_outside(qp, s, &s->iov[j]) ? s->iov[j].iov_len : 0;
    }
    struct tx_bounce *b = malloc(sizeof(*b) + need);
    if (!b)
        return -ENOMEM;
    uint8_t *d = b->data;
    for (uint32_t i = qp->slot_head; i != qp->slot_tail; i++) {
        struct uiw__txslot *s = slot_at(qp, i);
        if (s->pin != idx)
            continue;
        for (int j = 0; j < s->niov; j++) {
            if (!iov_outside(qp, s, &s->iov[j]))
                continue;
            memcpy(d, s->iov[j].iov_base, s->iov[j].iov_len);
            s->iov[j].iov_base = d;
            d += s->iov[j].iov_len;
        }
        uiw__stag_unpin(qp->ctx, s->pin);
        s->pin = 0;
    }
    struct tx_mem *tm = tx_mem(qp);
    b->next = tm->bounce;
    tm->bounce = b;
    return 0;
}

bool uiw__tx_stag_gone(struct uiw_qp *qp, uint32_t idx)
{
    if (!qp->started || (qp->state != UIW_QPS_RTS && qp->state != UIW_QPS_CLOSING) ||
        !uiw__tx_pinned(qp, idx, true))
        return false;
    if (qp->irq_count && (qp->irq[qp->irq_head].src_stag >> 8) == idx)
        rr_fail(qp, &qp->irq[qp->irq_head], UIW_E_RNIC_READ_STAG_INVALID);
    else /* its Request answered in full: no headers to name it by */
        uiw__qp_fail(qp, UIW_E_RNIC_READ_STAG_INVALID);
    return true;
}

bool uiw__tx_pinned(const struct uiw_qp *qp, uint32_t idx, bool droppable)
{
    if (!qp->iov_per_slot)
        return false;
    for (uint32_t i = droppable ? first_droppable(qp) : qp->slot_head; i != qp->slot_tail; i++)
        if (slot_at(qp, i)->pin == idx)
            return true;
    return false;
}

/* Payload bytes [off, off+len) of a WR's gather list as wire iovecs. */
UIW__DATAPATH static int gather(const struct uiw__swqe *w, uint32_t off, uint32_t len,
                                struct uiw_wire_iov *v)
{
    int n = 0;
    if (w->flags & UIW_SEND_INLINE) {
        if (len) {
            v[0].base = w->inline_buf + off;
            v[0].len = len;
            n = 1;
        }
        return n;
    }
    for (int i = 0; i < w->num_sge && len; i++) {
        uint32_t l = w->sge[i].length;
        if (off >= l) {
            off -= l;
            continue;
        }
        uint32_t k = l - off < len ? l - off : len;
        v[n].base = w->ptr[i] + off;
        v[n].len = k;
        n++;
        len -= k;
        off = 0;
    }
    return n;
}

UIW__DATAPATH static void wr_done(struct uiw_qp *qp, struct uiw__swqe *w, int status, int vendor)
{
    w->state = UIW__SWQE_DONE;
    w->status = status;
    w->vendor_err = vendor;
}

/* SGE i of a Send or Write, which a memory check refused for its access: a file region's
 * (uiw_reg_mr_file), which only a WR of that one SGE on a connection without CRC and
 * markers sends from (its bytes never pass through here), or a refusal. Returns 0 (w->file
 * set; each FPDU takes its file at build) or an engine code. */
UIW__NOINLINE static int resolve_file(struct uiw_qp *qp, struct uiw__swqe *w, int i)
{
    uint8_t *p = NULL;
    if (w->num_sge != 1 || qp->ftx.crc || qp->ftx.markers ||
        uiw__qp_stag_check(qp, w->sge[i].lkey, w->sge[i].addr, w->sge[i].length, UIW__ACCESS_FILE,
                           &p) != UIW__STAG_OK)
        return UIW_E_RNIC_LOCAL_PROT;
    w->ptr[i] = NULL;
    w->file = true;
    return 0;
}

/* Check and resolve the local SGEs of w. Returns 0 or an engine code. */
UIW__DATAPATH static int resolve_sges(struct uiw_qp *qp, struct uiw__swqe *w, unsigned access)
{
    w->file = false;
    if (w->flags & UIW_SEND_INLINE)
        return 0;
    for (int i = 0; i < w->num_sge; i++) {
        uint8_t *p = NULL;
        if (w->sge[i].length == 0) {
            w->ptr[i] = NULL;
            continue;
        }
        enum uiw__stag_err e =
            uiw__qp_stag_check(qp, w->sge[i].lkey, w->sge[i].addr, w->sge[i].length, access, &p);
        if (e == UIW__STAG_E_ACCESS && access == 0)
            return resolve_file(qp, w, i);
        if (e != UIW__STAG_OK)
            return UIW_E_RNIC_LOCAL_PROT;
        w->ptr[i] = p;
    }
    return 0;
}

UIW__DATAPATH static size_t put_untagged(uint8_t *b, uint8_t op, bool last, uint32_t inv,
                                         uint32_t qn, uint32_t msn, uint32_t mo)
{
    struct uiw_ddp_hdr h = {.tagged = false,
                            .last = last,
                            .rdmap_ctrl = uiw_rdmap_ctrl(op),
                            .rsvd_ulp = inv,
                            .qn = qn,
                            .msn = msn,
                            .mo = mo};
    return (size_t)uiw_ddp_hdr_encode(&h, b, UIW_DDP_UNTAGGED_HDR_LEN);
}

UIW__DATAPATH static size_t put_tagged(uint8_t *b, uint8_t op, bool last, uint32_t stag,
                                       uint64_t to)
{
    struct uiw_ddp_hdr h = {
        .tagged = true, .last = last, .rdmap_ctrl = uiw_rdmap_ctrl(op), .stag = stag, .to = to};
    return (size_t)uiw_ddp_hdr_encode(&h, b, UIW_DDP_TAGGED_HDR_LEN);
}

UIW__DATAPATH static uint8_t send_op(const struct uiw__swqe *w)
{
    bool se = w->opcode == UIW_WR_SEND_WITH_SE || w->opcode == UIW_WR_SEND_WITH_SE_AND_INV ||
              (w->flags & UIW_SEND_SOLICITED);
    bool inv = w->opcode == UIW_WR_SEND_WITH_INV || w->opcode == UIW_WR_SEND_WITH_SE_AND_INV;
    if (inv)
        return se ? UIW_RDMAP_SEND_SE_INV : UIW_RDMAP_SEND_INV;
    return se ? UIW_RDMAP_SEND_SE : UIW_RDMAP_SEND;
}

static void build_terminate(struct uiw_qp *qp, struct uiw__txslot *s)
{
    size_t h = put_untagged(s->hdr, UIW_RDMAP_TERMINATE, true, 0, UIW_DDP_QN_TERMINATE, 1, 0);
    ssize_t b = uiw_terminate_encode(&qp->term_out, s->hdr + h, sizeof(s->hdr) - h);
    if (b < 0)
        b = 0;
    struct uiw_wire_iov ul[1];
    if (slot_commit(qp, s, h + (size_t)b, ul, 0, false) == 0)
        s->terminate = true;
}

/* The next segment of the oldest Read Response. Its source is checked again, and pinned
 * until the segment went to TCP: a region deregistered or invalidated since the Request
 * arrived is never read. */
static bool rr_step(struct uiw_qp *qp, struct uiw__txslot *s)
{
    uint16_t mul = qp->cp.mulpdu;
    struct uiw__ird *e = &qp->irq[qp->irq_head];
    uint32_t room = (uint32_t)(mul - UIW_DDP_TAGGED_HDR_LEN);
    uint32_t n = e->size - e->off < room ? e->size - e->off : room;
    bool last = e->off + n == e->size;
    uint8_t *src = NULL;
    uint32_t pin = 0;
    if (n) {
        enum uiw__stag_err err =
            uiw__qp_stag_pin(qp, e->src_stag, e->src_to + e->off, n, &src, &pin);
        if (err != UIW__STAG_OK) {
            /* what was built before goes out first (a LOCAL_INV waits for it) */
            if (uiw__tx_pinned(qp, e->src_stag >> 8, false))
                return false;
            rr_fail(qp, e, uiw__read_code(err));
            return true; /* the Terminate is built next */
        }
    }
    size_t h = put_tagged(s->hdr, UIW_RDMAP_READ_RESP, last, e->sink_stag, e->sink_to + e->off);
    struct uiw_wire_iov ul[2] = {{NULL, 0}, {src, n}};
    if (slot_commit(qp, s, h, ul, n ? 1 : 0, e->size == n) < 0) {
        if (pin)
            uiw__stag_unpin(qp->ctx, pin);
        return false;
    }
    s->pin = pin;
    e->off += n;
    if (last) {
        qp->irq_head = (qp->irq_head + 1) % qp->irq_size;
        qp->irq_count--;
        qp->tx_turn = false; /* the send queue's turn */
    }
    return true;
}

static bool sq_step(struct uiw_qp *qp, struct uiw__txslot *s);

static bool is_local(uint8_t opcode)
{
    return opcode == UIW_WR_LOCAL_INV || opcode == UIW_WR_REG_MR;
}

/* Execute the local operation w at sq_tx (LOCAL_INV or REG_MR). Returns false when it
 * waits: a LOCAL_INV completes once the segments of a Read Response this QP built from the
 * STag before went to TCP (the STag is invalid from the start: no more are built), and,
 * run by the application (not quiet), once io builds again: io may be reading into the
 * region meanwhile, into iovecs checked before (uiw__qp_tx_next: io builds with none of
 * its reads under way). */
static bool sq_local(struct uiw_qp *qp, struct uiw__swqe *w, bool quiet)
{
    int r, st, code;
    if (w->opcode == UIW_WR_LOCAL_INV) {
        r = 0;
        if (w->state == UIW__SWQE_QUEUED) {
            r = uiw__stag_invalidate(qp->ctx, qp->pd, w->inv_rkey, false);
            w->state = UIW__SWQE_TX; /* invalidated */
            w->inv_reads = r == 0;
        }
        if (quiet)
            w->inv_reads = false;
        if (r == 0 && (w->inv_reads || uiw__tx_pinned(qp, w->inv_rkey >> 8, false)))
            return false;
        st = UIW_WC_LOC_PROT_ERR;
        code = UIW_E_RNIC_LOCAL_PROT;
    } else {
        r = uiw__stag_fastreg(qp->ctx, qp->pd, w->reg_mr, w->reg_key, w->reg_addr, w->reg_len,
                              w->reg_access);
        st = UIW_WC_MW_BIND_ERR;
        code = UIW_E_RNIC_LOCAL_OP;
    }
    qp->sq_tx++;
    if (r < 0) {
        wr_done(qp, w, st, code);
        uiw__qp_fail(qp, code);
    } else {
        wr_done(qp, w, UIW_WC_SUCCESS, 0);
    }
    uiw__sq_retire(qp);
    return true;
}

/* The local operation at the head of the send queue, if there is one and it may run now
 * (a send queue completes in order, so one waits behind anything else): true if it ran.
 * quiet: io builds (none of its reads under way), as sq_local says. */
static bool sq_local_step(struct uiw_qp *qp, bool quiet)
{
    while (qp->sq_tx != qp->sq_tail &&
           qp->sq[qp->sq_tx & (qp->sq_size - 1)].state == UIW__SWQE_DONE)
        qp->sq_tx++;
    if (qp->sq_tx == qp->sq_tail)
        return false;
    struct uiw__swqe *w = &qp->sq[qp->sq_tx & (qp->sq_size - 1)];
    if (!is_local(w->opcode) ||
        (w->state == UIW__SWQE_QUEUED && (w->flags & UIW_SEND_FENCE) && qp->orq_count > 0))
        return false;
    return sq_local(qp, w, quiet);
}

/* The send queue's oldest unfinished Send or Write has segments built and more to build. */
UIW__DATAPATH static bool sq_mid(const struct uiw_qp *qp)
{
    if (qp->sq_tx == qp->sq_tail)
        return false;
    const struct uiw__swqe *w = &qp->sq[qp->sq_tx & (qp->sq_size - 1)];
    return w->state == UIW__SWQE_TX && !is_local(w->opcode);
}

/* One step of work; returns false when nothing more can be built now. */
UIW__DATAPATH static bool tx_step(struct uiw_qp *qp)
{
    struct uiw__txslot *s = slot_new(qp);
    if (!s)
        return false;
    if (qp->term_pending) {
        qp->term_pending = false;
        qp->term_queued = true;
        build_terminate(qp, s);
        return false;
    }
    if (qp->term_queued || (qp->state != UIW_QPS_RTS && qp->state != UIW_QPS_CLOSING))
        return false;
    if (qp->tx_hold)
        return sq_local_step(qp, true);    /* nothing on the wire yet: local operations only */
    if (qp->wake_pending && !sq_mid(qp)) { /* uiw__qp_wake: as the zero-length RTR Write */
        qp->wake_pending = false;
        struct uiw_wire_iov ul[1];
        slot_commit(qp, s, put_tagged(s->hdr, UIW_RDMAP_WRITE, true, 1, 0), ul, 0, false);
        return true;
    }
    if (qp->rtr_send_pending) {
        qp->rtr_send_pending = false;
        size_t h;
        if (qp->cp.rtr == UIW__RTR_WRITE) {
            h = put_tagged(s->hdr, UIW_RDMAP_WRITE, true, 1, 0);
        } else if (qp->cp.rtr == UIW__RTR_READ) {
            h = put_untagged(s->hdr, UIW_RDMAP_READ_REQ, true, 0, UIW_DDP_QN_READ_REQ,
                             qp->rreq_msn++, 0);
            struct uiw_rdmap_read_req rr = {
                .sink_stag = 1, .sink_to = 0, .size = 0, .src_stag = 1, .src_to = 0};
            uiw_rdmap_read_req_encode(&rr, s->hdr + h);
            h += UIW_RDMAP_READ_REQ_LEN;
            qp->rtr_read_pending = true;
        } else {
            h = put_untagged(s->hdr, UIW_RDMAP_SEND, true, 0, UIW_DDP_QN_SEND, qp->send_msn++, 0);
        }
        struct uiw_wire_iov ul[1];
        slot_commit(qp, s, h, ul, 0, false);
        return true;
    }
    /* One message at a time: a message begun is finished before another one begins (RFC
     * 5041 5.3: DDP Messages go out in the order they were submitted; Linux siw's receiver
     * drops the stream when a tagged message it is in the middle of is intersected by
     * another one, a Read Response in a Write or the reverse). At each message boundary
     * Read Responses and the send queue take turns, so neither waits longer than one
     * message of the other. Local operations put nothing on the wire: they run meanwhile. */
    if (qp->irq_count && qp->irq[qp->irq_head].off)
        return sq_local_step(qp, true) || rr_step(qp, s);
    if (!sq_mid(qp) && qp->irq_count && qp->tx_turn && rr_step(qp, s))
        return true;
    if (sq_step(qp, s)) {
        qp->tx_turn = true; /* the Read Responses' turn at the next boundary */
        return true;
    }
    return !sq_mid(qp) && qp->irq_count && rr_step(qp, s);
}

UIW__DATAPATH void uiw__tx_run_local(struct uiw_qp *qp)
{
    /* the common post, a Send or Write next to build, looks no further (sq_local_step
     * lies on a page of its own, off the data path) */
    if (qp->sq_tx == qp->sq_tail)
        return;
    const struct uiw__swqe *w = &qp->sq[qp->sq_tx & (qp->sq_size - 1)];
    if (w->state != UIW__SWQE_DONE && !is_local(w->opcode))
        return; /* what sq_local_step would find first */
    if (qp->iov_per_slot && !qp->term_pending && !qp->term_queued && qp->state == UIW_QPS_RTS)
        while (sq_local_step(qp, false))
            ;
}

/* The segment of w's payload [w->off, w->off + n) from its file region, behind the header
 * s->hdr[0..h) (sq_step's, for the rest): the slot's iovec of it marks it for io
 * (uiw__qp_tx_file), the slot holds the file until TCP took it. Returns 0 (built), -1
 * (nothing built now) or 1 (w failed: its region was deregistered since it began, a bad
 * SGE's failure). */
UIW__NOINLINE static int file_segment(struct uiw_qp *qp, struct uiw__txslot *s, struct uiw__swqe *w,
                                      size_t h, uint32_t n)
{
    uint64_t off = 0;
    struct uiw__file_src *f =
        uiw__qp_stag_file(qp, w->sge[0].lkey, w->sge[0].addr + w->off, n, &off);
    if (!f) {
        if (w->off == 0) { /* nothing of it on the wire: the WR fails alone */
            qp->sq_tx++;
            wr_done(qp, w, UIW_WC_LOC_PROT_ERR, UIW_E_RNIC_LOCAL_PROT);
            uiw__qp_fail(qp, UIW_E_RNIC_LOCAL_PROT);
            uiw__sq_retire(qp);
            return 1;
        }
        uiw__qp_fail(qp, UIW_E_RNIC_LOCAL_PROT); /* a message cut short ends the stream */
        return -1;
    }
    struct uiw_wire_iov ul[2] = {{0}, {uiw__tx_file_mark, n}};
    if (slot_commit(qp, s, h, ul, 1, false) < 0) {
        uiw__file_src_put(f);
        return -1;
    }
    s->file = f;
    s->file_off = off;
    uiw__qstat(qp, UIW__STAT_FILE, n);
    return 0;
}

/* The next step of the send queue: a segment, a Read Request or a local operation. */
UIW__DATAPATH static bool sq_step(struct uiw_qp *qp, struct uiw__txslot *s)
{
    uint16_t mul = qp->cp.mulpdu;
    /* the send queue */
    while (qp->sq_tx != qp->sq_tail &&
           qp->sq[qp->sq_tx & (qp->sq_size - 1)].state == UIW__SWQE_DONE)
        qp->sq_tx++;
    if (qp->sq_tx == qp->sq_tail)
        return false;
    uint32_t idx = qp->sq_tx;
    struct uiw__swqe *w = &qp->sq[idx & (qp->sq_size - 1)];
    if (is_local(w->opcode)) {
        if (w->state == UIW__SWQE_QUEUED && (w->flags & UIW_SEND_FENCE) && qp->orq_count > 0)
            return false;
        return sq_local(qp, w, true);
    }
    if (w->state == UIW__SWQE_QUEUED) {
        if ((w->flags & UIW_SEND_FENCE) && qp->orq_count > 0)
            return false;
        int code = 0;
        switch (w->opcode) {
        case UIW_WR_RDMA_READ:
            if (qp->cp.ord == 0) {
                /* no Reads were negotiated: the Read never reaches the wire */
                qp->sq_tx++;
                wr_done(qp, w, UIW_WC_LOC_QP_OP_ERR, UIW_E_RNIC_NO_ORD);
                uiw__qp_fail(qp, UIW_E_RNIC_NO_ORD);
                uiw__sq_retire(qp);
                return true;
            }
            if (qp->orq_count >= qp->cp.ord)
                return false;
            code = resolve_sges(qp, w, UIW_ACCESS_LOCAL_WRITE);
            break;
        default:
            code = resolve_sges(qp, w, 0);
            break;
        }
        if (code) {
            qp->sq_tx++;
            wr_done(qp, w, UIW_WC_LOC_PROT_ERR, code);
            uiw__qp_fail(qp, code);
            uiw__sq_retire(qp);
            return true;
        }
        if (w->opcode == UIW_WR_RDMA_READ) {
            size_t h = put_untagged(s->hdr, UIW_RDMAP_READ_REQ, true, 0, UIW_DDP_QN_READ_REQ,
                                    qp->rreq_msn++, 0);
            struct uiw_rdmap_read_req rr = {
                .sink_stag = w->num_sge ? w->sge[0].lkey : 0,
                .sink_to = w->num_sge ? w->sge[0].addr : 0,
                .size = w->len,
                .src_stag = w->rkey,
                .src_to = w->remote_addr,
            };
            uiw_rdmap_read_req_encode(&rr, s->hdr + h);
            struct uiw_wire_iov ul[1];
            if (slot_commit(qp, s, h + UIW_RDMAP_READ_REQ_LEN, ul, 0, false) < 0)
                return false;
            w->state = UIW__SWQE_WAIT_RESP;
            qp->orq_count++;
            if (w->len >= UIW__RX_DIRECT_MIN)
                uiw__count_add(&qp->orq_wide, 1);
            qp->sq_tx++;
            return true;
        }
        w->state = UIW__SWQE_TX;
        w->off = 0;
        if (w->opcode != UIW_WR_RDMA_WRITE)
            w->msn = qp->send_msn++;
    }
    /* next segment of a Send or Write */
    bool write = w->opcode == UIW_WR_RDMA_WRITE;
    size_t hl = write ? UIW_DDP_TAGGED_HDR_LEN : UIW_DDP_UNTAGGED_HDR_LEN;
    uint32_t room = (uint32_t)(mul - hl);
    uint32_t n = w->len - w->off < room ? w->len - w->off : room;
    bool last = w->off + n == w->len;
    size_t h;
    if (write)
        h = put_tagged(s->hdr, UIW_RDMAP_WRITE, last, w->rkey, w->remote_addr + w->off);
    else
        h = put_untagged(
            s->hdr, send_op(w), last,
            (w->opcode == UIW_WR_SEND_WITH_INV || w->opcode == UIW_WR_SEND_WITH_SE_AND_INV)
                ? w->inv_rkey
                : 0,
            UIW_DDP_QN_SEND, w->msn, w->off);
    if (w->file && n) {
        int r = file_segment(qp, s, w, h, n);
        if (r)
            return r > 0;
    } else {
        struct uiw_wire_iov ul[1 + UIW__MAX_SGE];
        int nv = gather(w, w->off, n, ul + 1);
        if (slot_commit(qp, s, h, ul, nv, w->len == n) < 0)
            return false;
    }
    w->off += n;
    if (last) {
        s->swqe = idx;
        s->has_swqe = true;
        w->state = UIW__SWQE_WAIT_SENT;
        qp->sq_tx++;
    }
    return true;
}

/* The commonest FPDU to build: a Send or Send with Solicited Event that is the only
 * unstarted WR, of a payload small enough to be copied whole behind its header
 * (UIW__TX_COPY_MAX) in one FPDU, from one SGE or inline, on a QP in RTS with nothing
 * else to transmit (no Terminate, RTR message or Read Response) and no markers. Built in
 * the next slot as tx_step, sq_step and slot_commit build it, in a fraction of their
 * steps. False when anything differs: tx_step then builds it (or fails it with its exact
 * status). */
UIW__DATAPATH static bool tx_send_small(struct uiw_qp *qp)
{
    uint32_t idx = qp->sq_tx;
    if (idx + 1 != qp->sq_tail || qp->irq_count || qp->term_pending || qp->term_queued ||
        qp->rtr_send_pending || qp->wake_pending || qp->tx_hold || qp->state != UIW_QPS_RTS ||
        qp->ftx.markers)
        return false;
    struct uiw__swqe *w = &qp->sq[idx & (qp->sq_size - 1)];
    bool inl = (w->flags & UIW_SEND_INLINE) != 0;
    uint32_t len = w->len;
    if (w->state != UIW__SWQE_QUEUED ||
        (w->opcode != UIW_WR_SEND && w->opcode != UIW_WR_SEND_WITH_SE) ||
        ((w->flags & UIW_SEND_FENCE) && qp->orq_count) || len == 0 || len > UIW__TX_COPY_MAX ||
        len + UIW_DDP_UNTAGGED_HDR_LEN > qp->cp.mulpdu || (!inl && w->num_sge != 1))
        return false;
    const uint8_t *src = w->inline_buf;
    if (!inl) {
        uint8_t *p = NULL;
        if (uiw__qp_stag_check(qp, w->sge[0].lkey, w->sge[0].addr, len, 0, &p) != UIW__STAG_OK)
            return false;
        w->ptr[0] = p;
        src = p;
    }
    struct uiw__txslot *s = slot_new(qp);
    if (!s)
        return false;
    w->msn = qp->send_msn;
    /* the header, the payload and the framing, as put_untagged and slot_seal_copied
     * write them */
    uiw__ddp_send_whole_put(s->hdr, send_op(w), w->msn);
    uiw__copy(s->hdr + UIW_DDP_UNTAGGED_HDR_LEN, src, len);
    s->ftx_before = qp->ftx;
    size_t total = uiw__fpdu_tx_seal_whole(&qp->ftx, s->len, UIW_DDP_UNTAGGED_HDR_LEN + len);
    uiw__qstat(qp, UIW__STAT_COPIED, len);
    s->iov[0].iov_base = s->len;
    s->iov[0].iov_len = total;
    slot_done(qp, s, 1, total);
    qp->tx_turn = true; /* as tx_step: the send queue had its turn */
    qp->send_msn++;
    w->off = len;
    s->swqe = idx;
    s->has_swqe = true;
    w->state = UIW__SWQE_WAIT_SENT;
    qp->sq_tx++;
    return true;
}

/* The send queue's next WR to build from (skipping those done already), or NULL. */
static const struct uiw__swqe *sq_next(const struct uiw_qp *qp)
{
    for (uint32_t i = qp->sq_tx; i != qp->sq_tail; i++) {
        const struct uiw__swqe *w = &qp->sq[i & (qp->sq_size - 1)];
        if (w->state != UIW__SWQE_DONE)
            return w;
    }
    return NULL;
}

/* What tx_step and sq_step check before they build, in their order. */
UIW__DATAPATH bool uiw__tx_can_build(const struct uiw_qp *qp)
{
    if (!qp->iov_per_slot || qp->slot_tail - qp->slot_head >= UIW__TX_SLOTS)
        return false; /* slot_new */
    if (qp->term_pending)
        return true;
    if (qp->tx_ahead >= UIW__TX_AHEAD || qp->term_queued ||
        (qp->state != UIW_QPS_RTS && qp->state != UIW_QPS_CLOSING))
        return false;
    const struct uiw__swqe *w = sq_next(qp);
    bool fenced =
        w && w->state == UIW__SWQE_QUEUED && (w->flags & UIW_SEND_FENCE) && qp->orq_count > 0;
    if (qp->tx_hold)
        return w && is_local(w->opcode) && !fenced; /* sq_local_step */
    if (qp->wake_pending || qp->rtr_send_pending || qp->irq_count)
        return true;
    if (!w || fenced)
        return false;
    /* a Read waits for room in the ORD (with no ORD at all it fails, which is a step) */
    return !(w->state == UIW__SWQE_QUEUED && w->opcode == UIW_WR_RDMA_READ && qp->cp.ord &&
             qp->orq_count >= qp->cp.ord);
}

/* Build FPDUs for what can be sent now (QP lock held, not idle, slots allocated): only
 * uiw__qp_tx_next and uiw__qp_tx_next_locked build. A small Send built leaves the QP
 * idle (it was the only unstarted WR, with no Terminate, RTR message, wake-up Write or
 * Read Response waiting): nothing more to look for. */
UIW__DATAPATH static void tx_build(struct uiw_qp *qp)
{
    while (!tx_send_small(qp) && tx_step(qp) && !uiw__tx_idle(qp))
        ;
}

/* Build what can be built now: a few loads when there is nothing (the common case, on
 * every pass of a poller), without a call. */
UIW__DATAPATH static inline void tx_fill(struct uiw_qp *qp)
{
    if (qp->iov_per_slot && !uiw__tx_idle(qp))
        tx_build(qp);
}

int uiw__qp_tx_next(struct uiw_qp *qp, struct iovec *iov, int max)
{
    if (!qp || !iov || max < 1)
        return -EINVAL;
    uiw__lock_take(&qp->lock);
    int n = uiw__qp_tx_next_locked(qp, iov, max);
    uiw__qp_unlock(qp);
    return n;
}

UIW__DATAPATH int uiw__qp_tx_next_locked(struct uiw_qp *qp, struct iovec *iov, int max)
{
    int n = 0;
    qp->tx_file_fd = -1;
    if (qp->iov_per_slot) {
        tx_fill(qp);
        size_t skip = qp->slot_off;
        uint32_t i;
        for (i = qp->slot_head; i != qp->slot_tail && n < max; i++) {
            const struct uiw__txslot *s = slot_at(qp, i);
            for (int j = 0; j < s->niov && n < max; j++) {
                size_t l = s->iov[j].iov_len;
                if (skip >= l) {
                    skip -= l;
                    continue;
                }
                if (s->iov[j].iov_base == uiw__tx_file_mark) {
                    /* a file's bytes: alone, or not yet (after what comes before) */
                    if (n == 0) {
                        iov[0].iov_base = (void *)(uintptr_t)uiw__tx_file_mark;
                        iov[0].iov_len = l - skip;
                        qp->tx_file_fd = s->file->fd;
                        qp->tx_file_off = s->file_off + skip;
                        n = 1;
                    }
                    qp->slot_given = i + 1;
                    return n;
                }
                iov[n].iov_base = (uint8_t *)s->iov[j].iov_base + skip;
                iov[n].iov_len = l - skip;
                skip = 0;
                n++;
            }
        }
        qp->slot_given = i; /* io may read these slots until its tx_advance */
    }
    return n;
}

int uiw__qp_tx_file(const struct uiw_qp *qp, int *fd, uint64_t *off)
{
    if (!qp || qp->tx_file_fd < 0)
        return -ENOENT;
    *fd = qp->tx_file_fd;
    *off = qp->tx_file_off;
    return 0;
}

void uiw__qp_tx_advance(struct uiw_qp *qp, size_t n)
{
    uiw__lock_take(&qp->lock);
    uiw__qp_tx_advance_locked(qp, n);
    uiw__qp_unlock(qp);
}

UIW__DATAPATH void uiw__qp_tx_advance_locked(struct uiw_qp *qp, size_t n)
{
    uiw__qstat(qp, UIW__STAT_TX_BYTES, n);
    while (n && qp->slot_head != qp->slot_tail) {
        struct uiw__txslot *s = slot_at(qp, qp->slot_head);
        size_t rem = s->wire_len - qp->slot_off;
        if (n < rem) {
            qp->slot_off += n;
            break;
        }
        n -= rem;
        qp->slot_off = 0;
        qp->tx_ahead -= s->wire_len;
        qp->slot_head++;
        if (s->pin) {
            uiw__stag_unpin(qp->ctx, s->pin);
            s->pin = 0;
        }
        if (s->file != NULL) {
            uiw__file_src_put(s->file);
            s->file = NULL;
        }
        uiw__qstat(qp, UIW__STAT_TX_FPDUS, 1);
        if (s->has_swqe) {
            struct uiw__swqe *w = &qp->sq[s->swqe & (qp->sq_size - 1)];
            if (w->state == UIW__SWQE_WAIT_SENT)
                wr_done(qp, w, UIW_WC_SUCCESS, 0);
            uiw__sq_retire(qp);
        }
        if (s->terminate) {
            qp->term_sent = true;
            uiw__qstat(qp, UIW__STAT_TERM_SENT, 1);
            qp->state = UIW_QPS_ERROR;
            qp->want_close = true;
        }
    }
    qp->slot_given = qp->slot_head; /* io holds no iovec of ours any more */
    /* All sent: the next FPDU is built in slot 0 again (as the SQ and the CQ rewind) */
    if (qp->slot_head == qp->slot_tail && qp->slot_off == 0)
        qp->slot_head = qp->slot_tail = qp->slot_given = 0;
    uiw__qp_check_close(qp);
}
