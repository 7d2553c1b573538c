/*
 * The receive side: a resumable parser over the FPDU stream (uiw_fpdu_rx) that tells io
 * where each next run of bytes belongs: framing scratch, the header staging area, or,
 * once the DDP/RDMAP header has been checked (RFC 5040 8.1.1, RFC 5041 7), straight into
 * the target memory: the tagged buffer at STag+TO, or the posted receive at MO. The CRC
 * is computed over the bytes where they were placed. Tagged and untagged messages are
 * tracked separately (every segment carries its own STag/TO or QN/MSN/MO), so a Send may
 * interleave with a multi-segment Read Response. Read Requests and Terminates are acted
 * on only once their FPDU is complete and its CRC checked (RFC 5040 5.5).
 */
#include <errno.h>
#include <string.h>

#include "common/byteorder.h"
#include "wire/fpdu_fast.h"
#include "wire/hdr.h"
#include "rnic/engine.h"
#include "common/compiler.h"
#include "common/copy.h"

/* What one staged read asks for: many small FPDUs. io peeks and lets the engine take
 * (uiw__qp_rx_take), so no large payload lands in the ring, unless no large payload can
 * legally arrive (uiw__qp_rx_narrow); a reader that does not plan gets whatever of a large
 * payload follows copied (and counted). */
#define STAGE_READ UIW__RX_STAGE_CAP

/* What an exact read (UIW__RX_EXACT) may take past the known end of the current FPDU:
 * the next FPDU's length field and the shorter DDP header, never a payload byte. */
#define RX_LOOK (2 + UIW_DDP_TAGGED_HDR_LEN)

/* A peek at an FPDU boundary while small segments flow: the longest small FPDU (length,
 * untagged header, a payload just under UIW__RX_DIRECT_MIN, pad, CRC), so that a large
 * segment that comes instead costs the kernel that much copied, not the whole ring; the
 * whole ring again once a peek that long took nothing but small FPDUs (rx_burst). */
#define RX_PEEK_MIN (2 + UIW_DDP_UNTAGGED_HDR_LEN + UIW__RX_DIRECT_MIN + 3 + 4)

/* A segment whose payload goes straight to memory rather than through the ring. */
static inline bool seg_large(size_t plen, bool last)
{
    return plen >= UIW__RX_DIRECT_MIN || !last;
}

static void seg_reset(struct uiw_qp *qp)
{
    qp->rx_state = UIW__RX_GET_LEN;
    qp->rx_hdr_have = 0;
    qp->rx_hdr_need = UIW_DDP_TAGGED_HDR_LEN;
    qp->rx_hdr_len = 0;
    qp->rx_kind = UIW__RX_NONE;
    qp->rx_plen = 0;
    qp->rx_tgt = NULL;
    qp->rx_rqe = NULL;
}

void uiw__rx_init(struct uiw_qp *qp)
{
    uiw_fpdu_rx_init(&qp->frx, qp->cp.crc, qp->cp.markers_rx, 0);
    qp->rx_failed = false;
    qp->rx_niov = 0;
    qp->rx_has_tail = false;
    qp->rx_small = false; /* until a small segment is seen, read headers exactly */
    qp->rx_burst = false;
    qp->rx_streak = 0;
    qp->rx_exact = 0;
    qp->rx_send_len = 0;
    qp->rx_rresp_got = 0;
    seg_reset(qp);
}

UIW__DATAPATH static bool rx_accepting(const struct uiw_qp *qp)
{
    return qp->started && !qp->rx_failed &&
           (qp->state == UIW_QPS_RTS || qp->state == UIW_QPS_CLOSING);
}

/* Whether the stream is still parsed: to place and deliver while accepting; in TERMINATE
 * after a local failure (our Terminate waits to go out, the peer's stream is intact) only
 * to find a Terminate of the peer's, every other segment skipped and nothing placed. */
static bool rx_parsing(const struct uiw_qp *qp)
{
    return qp->started && !qp->rx_failed &&
           (qp->state == UIW_QPS_RTS || qp->state == UIW_QPS_CLOSING ||
            qp->state == UIW_QPS_TERMINATE);
}

/* The oldest Read waiting for its response, or NULL. */
UIW__DATAPATH static struct uiw__swqe *oldest_read(struct uiw_qp *qp)
{
    for (uint32_t i = qp->sq_head; i != qp->sq_tx; i++) {
        struct uiw__swqe *w = &qp->sq[i & (qp->sq_size - 1)];
        if (w->state == UIW__SWQE_WAIT_RESP)
            return w;
    }
    return NULL;
}

/* Fail the stream because of what the current segment carries. */
UIW__COLD static int rx_fail(struct uiw_qp *qp, int code)
{
    int tagged = qp->rx_hdr_have >= 1 ? ((qp->rx_hdr[0] & UIW_DDP_FLAG_TAGGED) != 0) : -1;
    const struct uiw__term_map *m = uiw__term_lookup(code, tagged);
    if (m->local_status >= 0 && qp->rx_rqe && qp->rq_head != qp->rq_tail &&
        qp->rx_rqe == &qp->rq[qp->rq_head & (qp->rq_size - 1)])
        uiw__qp_complete_recv(qp, qp->rx_rqe, m->local_status, 0, 0, 0, code);
    qp->rx_rqe = NULL;
    if (qp->rx_kind == UIW__RX_RRESP && !qp->rtr_read_pending) {
        /* the Read whose response was bad */
        struct uiw__swqe *w = oldest_read(qp);
        if (w) {
            w->state = UIW__SWQE_DONE;
            w->status = UIW_WC_BAD_RESP_ERR;
            w->vendor_err = code;
        }
    }
    uint8_t hl = 0;
    if (tagged >= 0) {
        hl = tagged ? UIW_DDP_TAGGED_HDR_LEN : UIW_DDP_UNTAGGED_HDR_LEN;
        if (qp->rx_hdr_have < hl)
            hl = 0;
    }
    const uint8_t *rdma = NULL;
    if (tagged == 0 && hl && qp->rx_hdr_have >= UIW_DDP_UNTAGGED_HDR_LEN + UIW_RDMAP_READ_REQ_LEN &&
        uiw__ddp_qn(qp->rx_hdr) == UIW_DDP_QN_READ_REQ)
        rdma = qp->rx_hdr + UIW_DDP_UNTAGGED_HDR_LEN;
    if (code == UIW_E_FPDU_CRC)
        uiw__qstat(qp, UIW__STAT_CRC_ERRORS, 1);
    qp->tx_hold = false; /* the peer sends FPDUs: it may have our Terminate */
    struct uiw__term_quote q = {.tagged = tagged == 1,
                                .ddp = hl ? qp->rx_hdr : NULL,
                                .ddp_len = hl,
                                .seg_len = qp->rx_ulen,
                                .rdma = rdma};
    uiw__qp_fail_quoting(qp, code, tagged >= 0 ? &q : NULL);
    qp->rx_failed = true;
    return code;
}

static int tag_code(enum uiw__stag_err e)
{
    switch (e) {
    case UIW__STAG_E_PD:
        return UIW_E_RNIC_TAG_NOT_ASSOC;
    case UIW__STAG_E_WRAP:
        return UIW_E_RNIC_TAG_TO_WRAP;
    case UIW__STAG_E_BOUNDS:
        return UIW_E_RNIC_TAG_BOUNDS;
    case UIW__STAG_E_ACCESS:
        return UIW_E_RNIC_TAG_ACCESS;
    default:
        return UIW_E_RNIC_TAG_STAG_INVALID;
    }
}

int uiw__read_code(enum uiw__stag_err e)
{
    switch (e) {
    case UIW__STAG_E_PD:
        return UIW_E_RNIC_READ_NOT_ASSOC;
    case UIW__STAG_E_WRAP:
        return UIW_E_RNIC_READ_TO_WRAP;
    case UIW__STAG_E_BOUNDS:
        return UIW_E_RNIC_READ_BOUNDS;
    case UIW__STAG_E_ACCESS:
        return UIW_E_RNIC_READ_ACCESS;
    default:
        return UIW_E_RNIC_READ_STAG_INVALID;
    }
}

/* r's SGEs against pd's STag table at generation gen, through the QP's remembered checks
 * when qp is given (pd is then its PD). */
UIW__DATAPATH static int rqe_resolve(struct uiw_context *ctx, const struct uiw_pd *pd,
                                     struct uiw_qp *qp, struct uiw__rqe *r, uint32_t gen)
{
    for (int i = 0; i < r->num_sge; i++) {
        uint8_t *p = NULL;
        if (r->sge[i].length == 0)
            continue;
        enum uiw__stag_err e = qp ? uiw__qp_stag_check(qp, r->sge[i].lkey, r->sge[i].addr,
                                                       r->sge[i].length, UIW_ACCESS_LOCAL_WRITE, &p)
                                  : uiw__stag_check(ctx, pd, r->sge[i].lkey, r->sge[i].addr,
                                                    r->sge[i].length, UIW_ACCESS_LOCAL_WRITE, &p);
        if (e != UIW__STAG_OK)
            return UIW_E_RNIC_LOCAL_PROT;
        r->ptr[i] = p;
    }
    r->gen = gen;
    return 0;
}

UIW__DATAPATH int uiw__rqe_resolve(struct uiw_qp *qp, struct uiw__rqe *r)
{
    uint32_t gen = atomic_load_explicit(&qp->ctx->mem_gen, memory_order_acquire);
    if (r->gen == gen)
        return 0;
    if (qp->srq && qp->srq->pd != qp->pd) /* an SRQ's receive: the SRQ's PD */
        return rqe_resolve(qp->ctx, qp->srq->pd, NULL, r, gen);
    return rqe_resolve(qp->ctx, qp->pd, qp, r, gen);
}

int uiw__rqe_resolve_pd(struct uiw_context *ctx, const struct uiw_pd *pd, struct uiw__rqe *r)
{
    /* the generation before the checks: a change meanwhile makes the arrival recheck */
    return rqe_resolve(ctx, pd, NULL, r, atomic_load_explicit(&ctx->mem_gen, memory_order_acquire));
}

/* The header is complete: check it and set up placement. Returns 0 or a code. */
UIW__DATAPATH static int hdr_done(struct uiw_qp *qp)
{
    const struct uiw_ddp_hdr *h = &qp->rx_ddp;
    unsigned op = uiw_rdmap_ctrl_opcode(h->rdmap_ctrl);
    qp->rx_state = UIW__RX_GET_DATA;
    qp->rx_plen = qp->rx_ulen - qp->rx_hdr_len;
    if (!rx_accepting(qp) && (h->tagged || h->qn != UIW_DDP_QN_TERMINATE)) {
        qp->rx_kind = UIW__RX_DISCARD; /* the stream failed: only a Terminate matters */
        return 0;
    }
    if (h->tagged) {
        /* the generation before the checks: a change meanwhile makes placement recheck */
        qp->rx_gen = atomic_load_explicit(&qp->ctx->mem_gen, memory_order_acquire);
        if (op == UIW_RDMAP_WRITE) {
            if (qp->rtr_wait_rx) {
                if (qp->cp.rtr != UIW__RTR_WRITE || qp->rx_plen != 0 || !h->last)
                    return UIW_E_RNIC_NO_RTR;
                qp->rtr_wait_rx = false;
                qp->rx_kind = UIW__RX_DISCARD;
                return 0;
            }
            qp->rx_kind = UIW__RX_WRITE;
            if (qp->rx_plen == 0)
                return 0; /* nothing to place, nothing to check (as Linux siw) */
            enum uiw__stag_err e = uiw__qp_stag_check(qp, h->stag, h->to, qp->rx_plen,
                                                      UIW_ACCESS_REMOTE_WRITE, &qp->rx_tgt);
            return e ? tag_code(e) : 0;
        }
        /* Read Response */
        if (qp->rtr_wait_rx)
            return UIW_E_RNIC_NO_RTR;
        qp->rx_kind = UIW__RX_RRESP;
        if (qp->rtr_read_pending) /* our zero-length RTR Read's: a sink of no bytes */
            return qp->rx_plen ? UIW_E_RNIC_TAG_BOUNDS : 0;
        const struct uiw__swqe *w = oldest_read(qp);
        if (!w)
            return UIW_E_RNIC_UNEXPECTED_OP;
        if (qp->rx_plen == 0)
            return 0;
        /* only into the sink this Read named (RFC 5040 5.2.2), then the usual checks */
        if (w->num_sge == 0 || h->stag != w->sge[0].lkey)
            return UIW_E_RNIC_TAG_STAG_INVALID;
        if (h->to < w->sge[0].addr || h->to + qp->rx_plen < h->to ||
            h->to + qp->rx_plen > w->sge[0].addr + w->sge[0].length)
            return UIW_E_RNIC_TAG_BOUNDS;
        /* in order, each segment where the last one ended: no hole (as Linux siw) */
        if (h->to != w->sge[0].addr + qp->rx_rresp_got)
            return UIW_E_RNIC_RRESP_MISMATCH;
        enum uiw__stag_err e = uiw__qp_stag_check(qp, h->stag, h->to, qp->rx_plen,
                                                  UIW_ACCESS_LOCAL_WRITE, &qp->rx_tgt);
        return e ? tag_code(e) : 0;
    }
    switch (h->qn) {
    case UIW_DDP_QN_SEND: {
        if (qp->rtr_wait_rx) {
            if (qp->cp.rtr != UIW__RTR_SEND || qp->rx_plen != 0 || !h->last ||
                h->msn != qp->rx_send_msn)
                return UIW_E_RNIC_NO_RTR;
            qp->rtr_wait_rx = false;
            qp->rx_kind = UIW__RX_DISCARD;
            qp->rx_send_msn++;
            return 0;
        }
        qp->rx_kind = UIW__RX_SEND;
        if (h->msn != qp->rx_send_msn)
            return UIW_E_RNIC_MSN_RANGE;
        if (!uiw__rq_ready(qp))
            return UIW_E_RNIC_MSN_NO_BUF;
        struct uiw__rqe *r = &qp->rq[qp->rq_head & (qp->rq_size - 1)];
        qp->rx_rqe = r;
        int c = uiw__rqe_resolve(qp, r);
        if (c)
            return c;
        /* in order, each segment where the last one ended: a hole (or an overlap) would
         * complete the receive with bytes that never arrived (as Linux siw) */
        if (h->mo != qp->rx_send_len)
            return UIW_E_RNIC_BAD_MO;
        if ((uint64_t)h->mo + qp->rx_plen > r->len)
            return UIW_E_RNIC_MSG_TOO_LONG;
        return 0;
    }
    case UIW_DDP_QN_READ_REQ:
        if (qp->rx_ulen != UIW_DDP_UNTAGGED_HDR_LEN + UIW_RDMAP_READ_REQ_LEN)
            return qp->rx_ulen < UIW_DDP_UNTAGGED_HDR_LEN + UIW_RDMAP_READ_REQ_LEN
                       ? UIW_E_RDMAP_TRUNCATED
                       : UIW_E_RNIC_MSG_TOO_LONG;
        qp->rx_kind = UIW__RX_RREQ;
        qp->rx_plen = 0;
        return 0;
    default: /* Terminate: its body sits in the header staging area */
        qp->rx_kind = UIW__RX_TERM;
        qp->rx_plen = qp->rx_ulen - qp->rx_hdr_len;
        return 0;
    }
}

/* hdr_have reached hdr_need. */
UIW__DATAPATH static int hdr_step(struct uiw_qp *qp)
{
    if (qp->rx_hdr_len == 0) {
        if (qp->rx_hdr[0] & UIW_DDP_FLAG_TAGGED) {
            qp->rx_hdr_len = UIW_DDP_TAGGED_HDR_LEN;
        } else {
            qp->rx_hdr_len = UIW_DDP_UNTAGGED_HDR_LEN;
            if (qp->rx_ulen < UIW_DDP_UNTAGGED_HDR_LEN)
                return UIW_E_DDP_TRUNCATED;
            if (qp->rx_hdr_have < UIW_DDP_UNTAGGED_HDR_LEN) {
                qp->rx_hdr_need = UIW_DDP_UNTAGGED_HDR_LEN;
                return 0;
            }
        }
    }
    if (qp->rx_hdr_have == qp->rx_hdr_len) {
        ssize_t r = uiw_ddp_hdr_parse(qp->rx_hdr, qp->rx_hdr_have, &qp->rx_ddp);
        if (r < 0)
            return (int)r;
        if (!qp->rx_ddp.tagged && qp->rx_ddp.qn > UIW_DDP_QN_TERMINATE)
            return UIW_E_RNIC_BAD_QN;
        int c = uiw_rdmap_check_ctrl(&qp->rx_ddp);
        if (c)
            return c;
        if (!qp->rx_ddp.tagged && qp->rx_ddp.qn == UIW_DDP_QN_READ_REQ) {
            qp->rx_hdr_need = qp->rx_ulen < UIW_DDP_UNTAGGED_HDR_LEN + UIW_RDMAP_READ_REQ_LEN
                                  ? qp->rx_ulen
                                  : UIW_DDP_UNTAGGED_HDR_LEN + UIW_RDMAP_READ_REQ_LEN;
            if (qp->rx_hdr_need > qp->rx_hdr_have)
                return 0;
        } else if (!qp->rx_ddp.tagged && qp->rx_ddp.qn == UIW_DDP_QN_TERMINATE) {
            qp->rx_hdr_need = qp->rx_ulen < UIW__RX_HDR_CAP ? qp->rx_ulen : UIW__RX_HDR_CAP;
            if (qp->rx_hdr_need > qp->rx_hdr_have)
                return 0;
        }
    }
    return hdr_done(qp);
}

static int serve_read_req(struct uiw_qp *qp)
{
    struct uiw_rdmap_read_req rr;
    if (uiw_rdmap_read_req_parse(qp->rx_hdr + UIW_DDP_UNTAGGED_HDR_LEN,
                                 qp->rx_hdr_have - UIW_DDP_UNTAGGED_HDR_LEN, &rr) < 0)
        return UIW_E_RDMAP_TRUNCATED;
    const struct uiw_ddp_hdr *h = &qp->rx_ddp;
    /* the zero-length RTR Read belongs to MPA's startup, not to the negotiated IRD */
    uint32_t ird = qp->cp.ird;
    if (qp->rtr_wait_rx) {
        if (qp->cp.rtr != UIW__RTR_READ || rr.size != 0)
            return UIW_E_RNIC_NO_RTR;
        qp->rtr_wait_rx = false;
        ird = qp->irq_size;
    }
    if (h->msn != qp->rx_rreq_msn)
        return UIW_E_RNIC_MSN_RANGE;
    if (h->mo != 0 || !h->last)
        return UIW_E_RNIC_BAD_MO;
    if (qp->irq_count >= ird || qp->irq_count >= qp->irq_size)
        return UIW_E_RNIC_IRD_EXCEEDED;
    uint8_t *src = NULL;
    if (rr.size) { /* RFC 5040 5.2.1: a zero-length Read is not validated */
        enum uiw__stag_err e =
            uiw__qp_stag_check(qp, rr.src_stag, rr.src_to, rr.size, UIW_ACCESS_REMOTE_READ, &src);
        if (e)
            return uiw__read_code(e);
    }
    /* the source is checked again for each segment (tx.c): it may go away meanwhile */
    struct uiw__ird *e = &qp->irq[(qp->irq_head + qp->irq_count) % qp->irq_size];
    e->sink_stag = rr.sink_stag;
    e->sink_to = rr.sink_to;
    e->size = rr.size;
    e->off = 0;
    e->src_stag = rr.src_stag;
    e->src_to = rr.src_to;
    e->msn = h->msn;
    qp->irq_count++;
    qp->rx_rreq_msn++;
    return 0;
}

/* A Terminate whose control word reads validly in both bit orders (t, read in RFC order):
 * whether the RFC reading is a plausible one. Linux siw writes its RDMAP Invalid Version,
 * Unexpected OpCode and Catastrophic (stream) Terminates, which carry no M/D/R bits, as
 * 20 05 00 00, 20 06 00 00 and 20 07 00 00: in RFC order LLP / MPA Local Catastrophic,
 * Insufficient IRD and No Matching RTR (RFC 6581), which only the startup of a
 * connection carries: the peer's first FPDU, and for No Matching RTR an answer to our
 * RTR. Anywhere else siw's reading is taken. */
static bool term_llp_plausible(const struct uiw_qp *qp, const struct uiw_terminate *t)
{
    if (t->siw_order || t->layer != UIW_TERM_LAYER_LLP || t->etype != UIW_TERM_LLP_MPA ||
        t->code < UIW_TERM_MPA_LOCAL_CATASTROPHIC || t->code > UIW_TERM_MPA_NO_MATCHING_RTR)
        return true;
    if (qp->st[UIW__STAT_RX_FPDUS] != 1) /* counted already: this is the first */
        return false;
    return t->code != UIW_TERM_MPA_NO_MATCHING_RTR ||
           (qp->cp.initiator && qp->cp.rtr != UIW__RTR_NONE);
}

/* The FPDU is complete and its CRC checked: deliver. */
UIW__DATAPATH static int seg_complete(struct uiw_qp *qp)
{
    qp->tx_hold = false; /* an FPDU of the initiator validated: we may send (RFC 5044 7.1.2) */
    uiw__qstat(qp, UIW__STAT_RX_FPDUS, 1);
    if (!rx_accepting(qp) && qp->rx_kind != UIW__RX_TERM) {
        seg_reset(qp); /* the QP failed meanwhile: nothing is delivered */
        return 0;
    }
    qp->rx_small = !seg_large(qp->rx_plen, qp->rx_ddp.last);
    const struct uiw_ddp_hdr *h = &qp->rx_ddp;
    int code = 0;
    switch (qp->rx_kind) {
    case UIW__RX_RRESP:
        if (qp->rtr_read_pending) {
            if (h->last)
                qp->rtr_read_pending = false;
            break;
        }
        qp->rx_rresp_got += qp->rx_plen;
        if (h->last) {
            struct uiw__swqe *w = oldest_read(qp);
            if (w && qp->rx_rresp_got != w->len) {
                code = UIW_E_RNIC_RRESP_MISMATCH; /* short, or zero-length */
                break;
            }
            qp->rx_rresp_got = 0;
            if (w) {
                w->state = UIW__SWQE_DONE;
                w->status = UIW_WC_SUCCESS;
                qp->orq_count--;
                if (w->len >= UIW__RX_DIRECT_MIN)
                    uiw__count_add(&qp->orq_wide, -1);
                uiw__sq_retire(qp);
            }
        }
        break;
    case UIW__RX_SEND: {
        qp->rx_send_len += qp->rx_plen;
        if (!h->last)
            break;
        unsigned op = uiw_rdmap_ctrl_opcode(h->rdmap_ctrl);
        unsigned flags = 0;
        uint32_t inv = 0;
        if (op == UIW_RDMAP_SEND_INV || op == UIW_RDMAP_SEND_SE_INV) {
            /* an STag a Read Response is being sent from cannot be invalidated: the
             * application, told so, could free the memory the response still reads */
            int r = uiw__stag_invalidate(qp->ctx, qp->pd, h->rsvd_ulp, true);
            if (r < 0) {
                /* another PD's STag (another connection's, where each has its own PD):
                 * a protection error, as Linux siw answers it */
                code = r == -EACCES ? UIW_E_RNIC_INV_NOT_ASSOC : UIW_E_RNIC_CANT_INVALIDATE;
                break;
            }
            flags |= UIW_WC_WITH_INV;
            inv = h->rsvd_ulp;
        }
        if (op == UIW_RDMAP_SEND_SE || op == UIW_RDMAP_SEND_SE_INV)
            flags |= UIW_WC_SOLICITED;
        uint32_t len = qp->rx_send_len;
        qp->rx_send_len = 0;
        qp->rx_send_msn++;
        struct uiw__rqe *r = qp->rx_rqe;
        qp->rx_rqe = NULL;
        uiw__qp_complete_recv(qp, r, UIW_WC_SUCCESS, len, flags, inv, 0);
        break;
    }
    case UIW__RX_RREQ:
        code = serve_read_req(qp);
        break;
    case UIW__RX_TERM: {
        struct uiw_terminate t;
        memset(&t, 0, sizeof(t));
        const uint8_t *tb = qp->rx_hdr + UIW_DDP_UNTAGGED_HDR_LEN;
        size_t tl = qp->rx_hdr_have - UIW_DDP_UNTAGGED_HDR_LEN;
        if (uiw_terminate_parse(tb, tl, &t) < 0) {
            t.layer = UIW_TERM_LAYER_RDMAP;
            t.etype = UIW_TERM_RDMAP_REMOTE_OPERATION;
            t.code = UIW_TERM_RO_UNSPECIFIED;
        } else if (t.ambiguous && !term_llp_plausible(qp, &t)) {
            uiw_terminate_parse_order(tb, tl, UIW_TERM_ORDER_SIW, &t);
        }
        seg_reset(qp);
        uiw__qp_term_received(qp, &t);
        return UIW_E_RNIC_TERM_RECEIVED;
    }
    default:
        break;
    }
    if (code)
        return rx_fail(qp, code);
    seg_reset(qp);
    return 0;
}

static int add_tail(struct uiw_qp *qp, int n, int max, bool tail, uint32_t end)
{
    if (!tail || n >= max || end != qp->rx_ulen)
        return n;
    size_t pad = uiw_fpdu_len(qp->rx_ulen) - 2 - qp->rx_ulen - 4;
    size_t next = qp->rx_ddp.tagged ? 2 + UIW_DDP_TAGGED_HDR_LEN : 2 + UIW_DDP_UNTAGGED_HDR_LEN;
    qp->rx_iov[n].iov_base = qp->rx_tail;
    qp->rx_iov[n].iov_len = pad + 4 + next;
    qp->rx_has_tail = true; /* the last iovec */
    return n + 1;
}

/* Where payload bytes [po, po + *left) of the current Send segment go: into qp->rx_iov
 * (at most max entries), across the posted receive's SGEs from MO + po. Returns the
 * count; *left keeps what did not fit in max entries. */
UIW__DATAPATH static int send_iov(struct uiw_qp *qp, uint32_t po, size_t *left, int max)
{
    const struct uiw__rqe *r = qp->rx_rqe;
    uint64_t mo = (uint64_t)qp->rx_ddp.mo + po;
    int n = 0;
    for (int i = 0; i < r->num_sge && *left && n < max; i++) {
        uint32_t l = r->sge[i].length;
        if (mo >= l) {
            mo -= l;
            continue;
        }
        size_t k = l - mo < *left ? l - mo : *left;
        qp->rx_iov[n].iov_base = r->ptr[i] + mo;
        qp->rx_iov[n].iov_len = k;
        n++;
        *left -= k;
        mo = 0;
    }
    return n;
}

/* Before more of the current segment's payload (from po on) is placed: memory was
 * registered or deregistered since its target was checked (a new STag table generation),
 * so check again what is left of it. The first bytes may have been placed long before (a
 * peer can hold the rest back as long as it likes), and nothing may land in memory
 * deregistered meanwhile: the stream then fails with the Terminate the header would have
 * got had it come now. Returns 0, or a code (the stream failed). */
UIW__DATAPATH static int rx_recheck(struct uiw_qp *qp, uint32_t po)
{
    const struct uiw_ddp_hdr *h = &qp->rx_ddp;
    int c = 0;
    if (qp->rx_kind == UIW__RX_SEND && qp->rx_rqe) {
        c = uiw__rqe_resolve(qp, qp->rx_rqe); /* nothing to do while the table is unchanged */
        qp->rx_gen = qp->rx_rqe->gen;
    } else if (qp->rx_kind == UIW__RX_WRITE || qp->rx_kind == UIW__RX_RRESP) {
        /* the generation before the check: a change during it is seen next time */
        uint32_t gen = atomic_load_explicit(&qp->ctx->mem_gen, memory_order_acquire);
        if (gen != qp->rx_gen) {
            uint8_t *p = NULL;
            enum uiw__stag_err e = uiw__qp_stag_check(
                qp, h->stag, h->to + po, qp->rx_plen - po,
                qp->rx_kind == UIW__RX_WRITE ? UIW_ACCESS_REMOTE_WRITE : UIW_ACCESS_LOCAL_WRITE,
                &p);
            if (e)
                c = tag_code(e);
            else
                qp->rx_gen = gen;
        }
    }
    return c ? rx_fail(qp, c) : 0;
}

/* Fill qp->rx_iov (at most max entries) with where the next bytes go. Returns the count,
 * 0 if not accepting. With tail, a payload run that ends the ULPDU is followed by a
 * lookahead iovec for the FPDU's pad and CRC and the next FPDU's length and DDP header, so
 * that one readv per FPDU suffices for a stream of large segments. */
static int rx_prepare(struct uiw_qp *qp, int max, bool tail)
{
    qp->rx_niov = 0;
    qp->rx_has_tail = false;
    if (!rx_parsing(qp))
        return 0;
    enum uiw_fpdu_run kind;
    uint32_t off = 0;
    size_t run = uiw_fpdu_rx_next(&qp->frx, &kind, &off);
    if (kind == UIW_FPDU_RUN_FRAMING) {
        qp->rx_iov[0].iov_base = qp->rx_framing;
        qp->rx_iov[0].iov_len = run < sizeof(qp->rx_framing) ? run : sizeof(qp->rx_framing);
        qp->rx_run = UIW__RX_RUN_FRAMING;
        return qp->rx_niov = 1;
    }
    if (qp->rx_state == UIW__RX_GET_LEN) {
        qp->rx_state = UIW__RX_GET_HDR;
        qp->rx_ulen = uiw_fpdu_rx_ulpdu_len(&qp->frx);
        qp->rx_hdr_need = UIW_DDP_TAGGED_HDR_LEN;
    }
    if (qp->rx_state == UIW__RX_GET_HDR && off < qp->rx_hdr_need) {
        size_t k = qp->rx_hdr_need - off;
        qp->rx_iov[0].iov_base = qp->rx_hdr + off;
        qp->rx_iov[0].iov_len = run < k ? run : k;
        qp->rx_run = UIW__RX_RUN_HDR;
        return qp->rx_niov = 1;
    }
    uint32_t po = off - qp->rx_hdr_len; /* payload offset in this segment */
    qp->rx_run = UIW__RX_RUN_PAYLOAD;
    if (rx_recheck(qp, po))
        return 0; /* the target went away: the stream failed */
    switch (qp->rx_kind) {
    case UIW__RX_WRITE:
    case UIW__RX_RRESP:
        qp->rx_iov[0].iov_base = qp->rx_tgt + po;
        qp->rx_iov[0].iov_len = run;
        return qp->rx_niov = add_tail(qp, 1, max, tail, off + run);
    case UIW__RX_SEND: {
        size_t left = run;
        int n = send_iov(qp, po, &left, max);
        if (left)
            return qp->rx_niov = n; /* max reached: no lookahead */
        return qp->rx_niov = add_tail(qp, n, max, tail, off + run);
    }
    default: /* bytes nobody keeps (skipped segments, an oversized Terminate's tail): read
              * into the staging ring (unused then), taken from a buffer a piece at a time */
        if (tail) {
            qp->rx_iov[0].iov_base = qp->stage;
            qp->rx_iov[0].iov_len = run < UIW__RX_STAGE_CAP ? run : UIW__RX_STAGE_CAP;
        } else {
            qp->rx_iov[0].iov_base = qp->rx_framing;
            qp->rx_iov[0].iov_len = run < sizeof(qp->rx_framing) ? run : sizeof(qp->rx_framing);
        }
        qp->rx_run = UIW__RX_RUN_FRAMING;
        return qp->rx_niov = 1;
    }
}

/* Account n bytes placed into qp->rx_iov. */
static int rx_from_buf(struct uiw_qp *qp, const uint8_t *p, size_t n, size_t *took);

static int rx_account(struct uiw_qp *qp, size_t n)
{
    size_t total = n;
    int tail = qp->rx_has_tail ? qp->rx_niov - 1 : qp->rx_niov; /* the lookahead's index */
    size_t tailk = 0;
    for (int i = 0; i < qp->rx_niov && n; i++) {
        if (i == tail) {
            tailk = n < qp->rx_iov[i].iov_len ? n : qp->rx_iov[i].iov_len;
            break;
        }
        size_t k = qp->rx_iov[i].iov_len < n ? qp->rx_iov[i].iov_len : n;
        n -= k;
        int r = uiw_fpdu_rx_consume(&qp->frx, qp->rx_iov[i].iov_base, k);
        if (r < 0)
            return rx_fail(qp, r);
        if (qp->rx_run == UIW__RX_RUN_HDR) {
            qp->rx_hdr_have = (uint16_t)(qp->rx_hdr_have + k);
            if (qp->rx_hdr_have == qp->rx_hdr_need) {
                int c = hdr_step(qp);
                if (c)
                    return rx_fail(qp, c);
            }
        } else if (qp->rx_run == UIW__RX_RUN_PAYLOAD) {
            uiw__qstat(qp, UIW__STAT_PLACED, k);
        }
        if (r == UIW_FPDU_COMPLETE) {
            if (qp->rx_state != UIW__RX_GET_DATA) /* cannot happen: ULPDUs are at least 14 bytes */
                return rx_fail(qp, UIW_E_RNIC_SHORT_SEGMENT);
            int c = seg_complete(qp);
            if (c)
                return c;
        }
    }
    qp->rx_niov = 0;
    qp->rx_has_tail = false;
    uiw__qstat(qp, UIW__STAT_RX_BYTES, total - tailk); /* rx_from_buf counts the tail */
    if (tailk)
        return rx_from_buf(qp, qp->rx_tail, tailk, NULL);
    return 0;
}

/* The commonest FPDU, whole in a buffer: a small untagged Send or Send with Solicited
 * Event that is its message's only segment (Last, MO 0, the expected MSN, no Invalidate
 * STag, nothing of an earlier segment of it seen), for the first SGE of the posted
 * receive at the head of the RQ, with a good length and CRC. It ends as the other paths
 * would (the same checks passed, the same counters, the receive completed) in a fraction
 * of their steps. Returns the bytes taken, or 0 when anything differs: the other paths
 * take the FPDU then, and answer whatever is wrong with it with its exact Terminate. */
UIW__DATAPATH static size_t rx_send_whole(struct uiw_qp *qp, const uint8_t *p, size_t n)
{
    const uint8_t *h = p + 2;
    if (n < 2 + UIW_DDP_UNTAGGED_HDR_LEN + 4 || qp->rx_state != UIW__RX_GET_LEN ||
        qp->rx_send_len || qp->tx_hold || !rx_accepting(qp))
        return 0;
    size_t ulen = uiw__get_be16(p);
    uint8_t op = h[1];
    if (ulen < UIW_DDP_UNTAGGED_HDR_LEN || ulen - UIW_DDP_UNTAGGED_HDR_LEN >= UIW__RX_DIRECT_MIN ||
        h[0] != (UIW_DDP_FLAG_LAST | UIW_DDP_VERSION) ||
        (op != uiw_rdmap_ctrl(UIW_RDMAP_SEND) && op != uiw_rdmap_ctrl(UIW_RDMAP_SEND_SE)) ||
        uiw__ddp_rsvd_ulp(h) != 0 || uiw__ddp_qn(h) != UIW_DDP_QN_SEND ||
        uiw__ddp_msn(h) != qp->rx_send_msn || uiw__ddp_mo(h) != 0 || !uiw__rq_ready(qp))
        return 0;
    uint32_t plen = (uint32_t)(ulen - UIW_DDP_UNTAGGED_HDR_LEN);
    struct uiw__rqe *r = &qp->rq[qp->rq_head & (qp->rq_size - 1)];
    if (plen > r->len || (plen && plen > r->sge[0].length) || uiw__rqe_resolve(qp, r))
        return 0;
    size_t total = uiw__fpdu_rx_take_whole(&qp->frx, p, n);
    if (!total)
        return 0;
    if (plen)
        uiw__copy(r->ptr[0], h + UIW_DDP_UNTAGGED_HDR_LEN, plen);
    qp->rx_ulen = (uint16_t)ulen;
    qp->rx_small = true;
    qp->rx_send_msn++;
    uiw__qstat(qp, UIW__STAT_RX_FPDUS, 1);
    uiw__qstat(qp, UIW__STAT_COPIED, plen);
    uiw__qstat(qp, UIW__STAT_PLACED, plen);
    uiw__qstat(qp, UIW__STAT_RX_BYTES, total);
    uiw__qp_complete_recv(qp, r, UIW_WC_SUCCESS, plen,
                          op == uiw_rdmap_ctrl(UIW_RDMAP_SEND_SE) ? UIW_WC_SOLICITED : 0, 0, 0);
    return total;
}

/* The common small message, whole in a buffer: an FPDU that starts at p and ends within
 * n bytes, a Send, Write or Read Response, without markers. It takes the same steps in the
 * same order as the resumable path (the length checks, hdr_step, placement, the CRC,
 * seg_complete) without its bookkeeping per run of bytes.
 * With stop_large, a large segment is left to the resumable path (its payload goes
 * straight to memory). Returns the bytes taken, 0 when the resumable path must take them,
 * or a negative code (the stream failed). */
UIW__DATAPATH static long rx_whole(struct uiw_qp *qp, const uint8_t *p, size_t n, bool stop_large)
{
    if (qp->cp.markers_rx || qp->rx_state != UIW__RX_GET_LEN ||
        n < 2 + UIW_DDP_UNTAGGED_HDR_LEN + 4)
        return 0;
    size_t ulen = uiw__get_be16(p);
    size_t total = uiw_fpdu_len(ulen);
    const uint8_t *h = p + 2;
    bool tagged = (h[0] & UIW_DDP_FLAG_TAGGED) != 0;
    size_t hl = tagged ? UIW_DDP_TAGGED_HDR_LEN : UIW_DDP_UNTAGGED_HDR_LEN;
    if (total > n || ulen < hl || (!tagged && uiw__ddp_qn(h) != UIW_DDP_QN_SEND) ||
        (stop_large && seg_large(ulen - hl, (h[0] & UIW_DDP_FLAG_LAST) != 0)))
        return 0;
    int r = uiw__fpdu_rx_start(&qp->frx, p); /* the length checks */
    if (r == 1)
        return 0; /* not at the start of an FPDU */
    if (r < 0)
        return rx_fail(qp, r);
    qp->rx_state = UIW__RX_GET_HDR;
    qp->rx_ulen = (uint16_t)ulen;
    /* both header kinds at once (a fixed size copy, inline): the FPDU is longer than that */
    memcpy(qp->rx_hdr, h, UIW_DDP_UNTAGGED_HDR_LEN);
    qp->rx_hdr_have = qp->rx_hdr_need = (uint16_t)hl;
    int c = hdr_step(qp);
    if (c)
        return rx_fail(qp, c);
    /* the payload where the header says (placed before the CRC is known, as when it
     * arrives in pieces) */
    size_t plen = ulen - hl;
    if (plen && (qp->rx_kind == UIW__RX_WRITE || qp->rx_kind == UIW__RX_RRESP)) {
        uiw__copy(qp->rx_tgt, h + hl, plen);
    } else if (plen && qp->rx_kind == UIW__RX_SEND) {
        size_t left = plen, off = 0;
        int cnt = send_iov(qp, 0, &left, UIW__MAX_SGE);
        for (int i = 0; i < cnt; i++) {
            uiw__copy(qp->rx_iov[i].iov_base, h + hl + off, qp->rx_iov[i].iov_len);
            off += qp->rx_iov[i].iov_len;
        }
        qp->rx_niov = 0;
    } else if (plen) {
        return rx_fail(qp, UIW_E_RNIC_UNEXPECTED_OP); /* cannot happen: checked above */
    }
    uiw__qstat(qp, UIW__STAT_COPIED, plen);
    uiw__qstat(qp, UIW__STAT_PLACED, plen);
    r = uiw__fpdu_rx_rest(&qp->frx, h, total - 2); /* the CRC */
    if (r < 0)
        return rx_fail(qp, r);
    uiw__qstat(qp, UIW__STAT_RX_BYTES, total);
    c = seg_complete(qp);
    return c ? c : (long)total;
}

/* Process n stream bytes held at p (the staging ring or the lookahead): header and
 * framing bytes are moved where the parser keeps them, payload is copied to its target
 * (counted in copied_payload_bytes). With took, stop at the first payload byte of a large
 * segment (it goes straight to memory) and say in *took how many bytes were processed. */
UIW__DATAPATH static int rx_from_buf(struct uiw_qp *qp, const uint8_t *p, size_t n,
                                     size_t *took_out)
{
    int r = 0;
    const uint8_t *p0 = p;
    while (n) {
        size_t f = rx_send_whole(qp, p, n);
        if (f) {
            p += f;
            n -= f;
            continue;
        }
        long w = rx_whole(qp, p, n, took_out != NULL);
        if (w < 0)
            return (int)w;
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        int cnt = rx_prepare(qp, UIW__MAX_SGE + 1, false);
        if (cnt == 0)
            break; /* no longer accepting: the rest is dropped */
        if (took_out && qp->rx_run == UIW__RX_RUN_PAYLOAD &&
            seg_large(qp->rx_plen, qp->rx_ddp.last))
            break;
        size_t took = 0;
        for (int i = 0; i < cnt && took < n; i++) {
            size_t k = qp->rx_iov[i].iov_len < n - took ? qp->rx_iov[i].iov_len : n - took;
            uiw__copy(qp->rx_iov[i].iov_base, p + took, k);
            took += k;
        }
        if (qp->rx_run == UIW__RX_RUN_PAYLOAD)
            uiw__qstat(qp, UIW__STAT_COPIED, took);
        r = rx_account(qp, took);
        if (r < 0)
            break;
        p += took;
        n -= took;
    }
    if (took_out)
        *took_out = (size_t)(p - p0);
    return r;
}

/* Payload iovecs about to go to io, whose read runs without the QP lock: rx_placing holds
 * the generation their target was checked at until io reports the read (rx_advance), so
 * that uiw_dereg_mr, which makes a new generation and then waits for every QP holding an
 * older one, never returns while the read may still write into the region. Published,
 * then the generation looked at again (both sides sequentially consistent: one sees the
 * other): true if none was made meanwhile, else the target is to be checked again. */
static bool rx_placing_set(struct uiw_qp *qp)
{
    atomic_store_explicit(&qp->rx_placing, qp->rx_gen, memory_order_seq_cst);
    return atomic_load_explicit(&qp->ctx->mem_gen, memory_order_seq_cst) == qp->rx_gen;
}

int uiw__qp_rx_next(struct uiw_qp *qp, struct iovec *iov, int max)
{
    if (!qp || !iov || max < 1)
        return -EINVAL;
    uiw__lock_take(&qp->lock);
    int m = max < UIW__MAX_SGE + 1 ? max : UIW__MAX_SGE + 1;
    int n = rx_prepare(qp, m, true);
    while (n > 0 && qp->rx_run == UIW__RX_RUN_PAYLOAD && !rx_placing_set(qp))
        n = rx_prepare(qp, m, true); /* checks the target again (or fails the stream) */
    if (n <= 0 || qp->rx_run != UIW__RX_RUN_PAYLOAD)
        atomic_store_explicit(&qp->rx_placing, 0, memory_order_release);
    for (int i = 0; i < n; i++)
        iov[i] = qp->rx_iov[i];
    uiw__qp_unlock(qp);
    return n;
}

int uiw__qp_rx_advance(struct uiw_qp *qp, size_t n)
{
    if (!qp)
        return -EINVAL;
    uiw__lock_take(&qp->lock);
    /* io's read is over (uiw__ctx_rx_quiesce) */
    atomic_store_explicit(&qp->rx_placing, 0, memory_order_release);
    int r = 0;
    if (qp->rx_niov) {
        size_t tot = 0;
        for (int i = 0; i < qp->rx_niov; i++)
            tot += qp->rx_iov[i].iov_len;
        /* a small payload read whole, and the next FPDU's header with it: small FPDUs
         * may be queueing up back to back (rx_staged counts exact reads alike) */
        bool full = n == tot && qp->rx_has_tail && qp->rx_run == UIW__RX_RUN_PAYLOAD &&
                    !seg_large(qp->rx_plen, qp->rx_ddp.last);
        qp->rx_streak = full ? (uint8_t)(qp->rx_streak + (qp->rx_streak < 2)) : 0;
        qp->rx_burst = qp->rx_streak >= 2;
        if (n > tot)
            r = -EINVAL;
        else
            r = rx_account(qp, n);
    } else if (n) {
        r = -EINVAL;
    }
    uiw__qp_unlock(qp);
    return r;
}

/* No segment that goes straight to memory can legally arrive: no posted receive (its
 * SRQ's included), no Read awaiting its response and no STag a peer may write, of
 * UIW__RX_DIRECT_MIN bytes or more.
 * Read without the QP lock (io's busy poll): the counts are atomics, and a stale answer
 * costs at most a counted copy, never a wrong placement. */
UIW__DATAPATH bool uiw__qp_rx_narrow(const struct uiw_qp *qp)
{
    return atomic_load_explicit(&qp->rq_wide, memory_order_relaxed) == 0 &&
           (!qp->srq || atomic_load_explicit(&qp->srq->rq_wide, memory_order_relaxed) == 0) &&
           atomic_load_explicit(&qp->orq_wide, memory_order_relaxed) == 0 &&
           atomic_load_explicit(&((const struct uiw__pd *)qp->pd)->rw_wide, memory_order_relaxed) ==
               0;
}

/* A Read of UIW__RX_DIRECT_MIN bytes or more awaits its response. Read without the QP
 * lock, as uiw__qp_rx_narrow. */
UIW__DATAPATH bool uiw__qp_rx_wide_read(const struct uiw_qp *qp)
{
    return atomic_load_explicit(&qp->orq_wide, memory_order_relaxed) != 0;
}

/* uiw__qp_rx_stage's advice and, unless UIW__RX_DIRECT, the most bytes the staged read
 * may take (QP lock held, accepting). A payload under way goes straight to memory (a
 * small one with the trailer and the next FPDU's header behind it, in one readv), unless
 * small FPDUs queue up back to back (rx_burst): a peek then takes them. While no large
 * segment can come, one read takes all there is. Otherwise, without markers, what the
 * parser knows of the current FPDU decides: at an FPDU boundary a peek sees what comes
 * when small segments have been flowing and no large Read Response is awaited, else the
 * next length and header are read exactly; a small segment's known rest (not the small
 * last segment of a large message: its payload goes straight too) and the next FPDU's
 * length and header are read exactly, never a payload byte of a large segment. */
UIW__DATAPATH static enum uiw__rx_advice stage_advice(const struct uiw_qp *qp, size_t *cap)
{
    /* only a header checked can have a payload run next (not so after a segment taken
     * whole, the common case): the framer is asked only then */
    bool payload = false;
    if (qp->rx_state == UIW__RX_GET_DATA &&
        (qp->rx_kind == UIW__RX_WRITE || qp->rx_kind == UIW__RX_RRESP ||
         qp->rx_kind == UIW__RX_SEND)) {
        enum uiw_fpdu_run kind;
        uint32_t off = 0;
        size_t run = uiw_fpdu_rx_next(&qp->frx, &kind, &off);
        if (kind == UIW_FPDU_RUN_ULPDU && (run >= UIW__RX_DIRECT_MIN || !qp->rx_ddp.last))
            return UIW__RX_DIRECT; /* a large payload is under way: straight to memory */
        payload = kind == UIW_FPDU_RUN_ULPDU;
    }
    *cap = STAGE_READ;
    if (uiw__qp_rx_narrow(qp))
        return UIW__RX_READ;
    size_t left = uiw__fpdu_rx_left(&qp->frx);
    if (!left) /* markers: large segments flow: headers exactly, payload straight */
        return qp->rx_small ? UIW__RX_PEEK : UIW__RX_DIRECT;
    if (qp->rx_burst)
        return UIW__RX_PEEK;
    if (payload) /* with the trailer and the next header, in one readv */
        return UIW__RX_DIRECT;
    if (qp->rx_state == UIW__RX_GET_LEN && left <= 2) { /* a boundary: the length next */
        if (qp->rx_small && !uiw__qp_rx_wide_read(qp)) {
            *cap = RX_PEEK_MIN;
            return UIW__RX_PEEK;
        }
        *cap = left + UIW_DDP_TAGGED_HDR_LEN;
        return UIW__RX_EXACT;
    }
    if (qp->rx_state != UIW__RX_GET_DATA) {
        if (qp->rx_hdr_have == 0) { /* the length taken (rx_state follows at rx_prepare) */
            *cap = left < UIW_DDP_TAGGED_HDR_LEN ? left : UIW_DDP_TAGGED_HDR_LEN;
            return UIW__RX_EXACT;
        }
        /* untagged, not within a Send, short and last: all of it in the ring */
        if ((qp->rx_hdr[0] & UIW_DDP_FLAG_TAGGED) || qp->rx_send_len ||
            qp->rx_ulen < UIW_DDP_UNTAGGED_HDR_LEN ||
            seg_large(qp->rx_ulen - UIW_DDP_UNTAGGED_HDR_LEN,
                      (qp->rx_hdr[0] & UIW_DDP_FLAG_LAST) != 0))
            return UIW__RX_DIRECT; /* the rest of the header exactly, the payload straight */
    }
    /* the rest of this FPDU belongs in the ring: header, a body, pad and CRC */
    *cap = left + RX_LOOK < STAGE_READ ? left + RX_LOOK : STAGE_READ;
    return UIW__RX_EXACT;
}

/* stage_advice, remembering an exact read's cap (to tell a full one, rx_staged). */
UIW__DATAPATH static enum uiw__rx_advice rx_advise(struct uiw_qp *qp, size_t *cap)
{
    enum uiw__rx_advice a = stage_advice(qp, cap);
    qp->rx_exact = a == UIW__RX_EXACT ? (uint16_t)*cap : 0;
    return a;
}

/* What uiw__qp_want says, plus the staging advice (QP lock held); with cap, what a staged
 * read may take when the advice is to stage. */
UIW__DATAPATH static unsigned rx_want(struct uiw_qp *qp, size_t *cap)
{
    unsigned want = uiw__qp_want_locked(qp);
    if (rx_accepting(qp)) {
        size_t c = 0;
        enum uiw__rx_advice a = rx_advise(qp, &c);
        if (a != UIW__RX_DIRECT) {
            want |= UIW__WANT_STAGE | (a == UIW__RX_READ    ? UIW__WANT_READ
                                       : a == UIW__RX_EXACT ? UIW__WANT_EXACT
                                                            : 0u);
            if (cap)
                *cap = c;
        }
    }
    return want;
}

UIW__DATAPATH int uiw__qp_rx_stage(struct uiw_qp *qp, uint8_t **buf, size_t *cap)
{
    if (!qp || !buf || !cap)
        return -EINVAL;
    uiw__lock_take(&qp->lock);
    int r = -EPIPE;
    if (rx_accepting(qp)) {
        *buf = qp->stage;
        *cap = STAGE_READ;
        r = rx_advise(qp, cap);
    }
    uiw__qp_unlock(qp);
    return r;
}

UIW__DATAPATH int uiw__qp_rx_staged(struct uiw_qp *qp, size_t n, unsigned *want, size_t *cap)
{
    if (!qp || n > UIW__RX_STAGE_CAP)
        return -EINVAL;
    uiw__lock_take(&qp->lock);
    /* exact reads that keep finding the next FPDU there: small FPDUs queue up back to
     * back, a peek of the whole ring takes them with fewer system calls */
    bool full = qp->rx_exact && n == qp->rx_exact;
    qp->rx_streak = full ? (uint8_t)(qp->rx_streak + (qp->rx_streak < 2)) : 0;
    qp->rx_burst = qp->rx_streak >= 2 || (!qp->rx_exact && n >= RX_PEEK_MIN);
    int r = rx_from_buf(qp, qp->stage, n, NULL);
    if (want)
        *want = rx_want(qp, cap);
    uiw__qp_unlock(qp);
    return r;
}

UIW__DATAPATH int uiw__qp_rx_take(struct uiw_qp *qp, size_t n, unsigned *want, size_t *cap)
{
    if (!qp || n > UIW__RX_STAGE_CAP)
        return -EINVAL;
    uiw__lock_take(&qp->lock);
    int r = -EPIPE;
    size_t took = 0;
    if (rx_accepting(qp)) {
        r = rx_from_buf(qp, qp->stage, n, &took);
        if (r == 0)
            r = (int)took;
        qp->rx_burst = r > 0 && took == n && n >= RX_PEEK_MIN;
        qp->rx_streak = 0;
    }
    if (want)
        *want = r > 0 ? rx_want(qp, cap) : uiw__qp_want_locked(qp);
    uiw__qp_unlock(qp);
    return r;
}

void uiw__qp_rx_note(struct uiw_qp *qp, uint64_t (*now_ms)(void))
{
    uiw__lock_take(&qp->lock);
    bool partial = rx_parsing(qp) && uiw__fpdu_rx_partial(&qp->frx);
    uiw__qp_unlock(qp);
    if (partial)
        atomic_store_explicit(&qp->rx_partial_ms, now_ms(), memory_order_relaxed);
    else if (atomic_load_explicit(&qp->rx_partial_ms, memory_order_relaxed))
        atomic_store_explicit(&qp->rx_partial_ms, 0, memory_order_relaxed);
}

uint64_t uiw__qp_rx_partial_since(const struct uiw_qp *qp)
{
    return atomic_load_explicit(&qp->rx_partial_ms, memory_order_relaxed);
}
