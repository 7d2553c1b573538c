/* Protection violations and stream errors: the exact Terminate on the wire, the QP
 * states, the async events and the completion statuses on both sides. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteorder.h"
#include "pair.h"
#include "test.h"

#define RW (UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | UIW_ACCESS_REMOTE_READ)
#define LW UIW_ACCESS_LOCAL_WRITE

/* The Terminate side d sent must be: DDP untagged header on QN 2 (MSN 1, MO 0, Last),
 * RDMAP opcode 7, then control bytes in RFC 5040 4.8 order and the optional fields. */
static void check_term(struct pair *p, int d, uint8_t layer, uint8_t etype, uint8_t code,
                       uint8_t hdrct, uint16_t seglen, const uint8_t *ddp, size_t ddplen,
                       const uint8_t *rdma)
{
    uint8_t hdr[18], body[128];
    size_t n = pair_terminate(p, d, hdr, body, sizeof(body));
    CHECK(n > 0);
    static const uint8_t th[18] = {0x41, 0x47, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0};
    CHECK_MEM(hdr, th, 18);
    uint8_t want[128];
    size_t w = 0;
    want[w++] = (uint8_t)(layer << 4 | etype);
    want[w++] = code;
    want[w++] = (uint8_t)(hdrct << 5);
    want[w++] = 0;
    if (hdrct & (UIW_TERM_FLAG_M | UIW_TERM_FLAG_D)) {
        want[w++] = (uint8_t)(seglen >> 8);
        want[w++] = (uint8_t)seglen;
    }
    if (hdrct & UIW_TERM_FLAG_D) {
        memcpy(want + w, ddp, ddplen);
        w += ddplen;
    }
    if (hdrct & UIW_TERM_FLAG_R) {
        memcpy(want + w, rdma, 28);
        w += 28;
    }
    CHECK_EQ(n, w);
    CHECK_MEM(body, want, w);
    struct uiw_qp_attr a;
    CHECK_EQ(uiw_query_qp(p->s[d].qp, &a), 0);
    CHECK_EQ(a.state, UIW_QPS_ERROR);
    CHECK(a.term_sent);
    CHECK_EQ(a.term_layer, layer);
    CHECK_EQ(a.term_etype, etype);
    CHECK_EQ(a.term_code, code);
    CHECK(uiw__qp_want(p->s[d].qp) & UIW__WANT_CLOSE);
    /* the peer decoded it */
    CHECK_EQ(uiw_query_qp(p->s[1 - d].qp, &a), 0);
    CHECK_EQ(a.state, UIW_QPS_ERROR);
    CHECK(a.term_received);
    CHECK_EQ(a.term_layer, layer);
    CHECK_EQ(a.term_etype, etype);
    CHECK_EQ(a.term_code, code);
    struct uiw_async_event ev;
    CHECK(pair_event(p, 1 - d, UIW_EVENT_TERM_RECEIVED, &ev));
    CHECK(ev.qp == p->s[1 - d].qp);
    CHECK_EQ(ev.term_layer, layer);
    CHECK_EQ(ev.term_etype, etype);
    CHECK_EQ(ev.term_code, code);
    CHECK(uiw__qp_want(p->s[1 - d].qp) & UIW__WANT_CLOSE);
}

static void tagged_hdr(uint8_t *b, uint8_t op, uint32_t stag, uint64_t to)
{
    b[0] = 0xC1;
    b[1] = (uint8_t)(0x40 | op);
    uiw__put_be32(b + 2, stag);
    uiw__put_be64(b + 6, to);
}

enum wcase { W_INVALID, W_BOUNDS, W_ACCESS, W_OTHER_PD, W_WRAP, W_KEY };

static void write_violation(enum wcase c, uint8_t layer, uint8_t etype, uint8_t code)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    struct uiw_mr *src = pair_mr(&p, 0, 200, 0, 1);
    struct uiw_mr *dst = pair_mr(&p, 1, 100, c == W_ACCESS ? LW : RW, 0);
    struct uiw_pd *pd2 = uiw_alloc_pd(p.s[1].ctx);
    CHECK(pd2);
    uint8_t *mem2 = malloc(100);
    struct uiw_mr *other = uiw_reg_mr(pd2, mem2, 100, RW);
    CHECK(other);
    uint32_t rkey = dst->rkey;
    uint64_t to = (uintptr_t)dst->addr;
    uint32_t len = 100;
    switch (c) {
    case W_INVALID:
        rkey = 0x00FFFF00; /* index never allocated */
        break;
    case W_KEY:
        rkey = (dst->rkey & ~0xFFu) | ((dst->rkey + 1) & 0xFF); /* right index, wrong key */
        break;
    case W_BOUNDS:
        len = 101;
        break;
    case W_OTHER_PD:
        rkey = other->rkey;
        to = (uintptr_t)mem2;
        break;
    case W_WRAP:
        to = UINT64_MAX - 10;
        break;
    default:
        break;
    }
    /* an outstanding receive on each side, to see it flushed */
    struct uiw_mr *rb0 = pair_mr(&p, 0, 16, LW, 0);
    struct uiw_mr *rb1 = pair_mr(&p, 1, 16, LW, 0);
    pair_post_recv(&p, 0, 100, rb0, 0, 16);
    pair_post_recv(&p, 1, 101, rb1, 0, 16);
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_RDMA_WRITE, UIW_SEND_SIGNALED, src, 0, len, to, rkey), 0);
    pair_pump(&p);
    uint8_t ddp[14];
    tagged_hdr(ddp, 0, rkey, to);
    check_term(&p, 1, layer, etype, code, UIW_TERM_FLAG_M | UIW_TERM_FLAG_D, (uint16_t)(14 + len),
               ddp, 14, NULL);
    /* the data sink reports the access error; nothing was placed */
    struct uiw_async_event ev;
    CHECK(pair_event(&p, 1, UIW_EVENT_QP_ACCESS_ERR, &ev));
    CHECK(ev.qp == p.s[1].qp);
    CHECK_EQ(((uint8_t *)dst->addr)[0], 0);
    /* the Write itself completed when sent; the receives are flushed on both sides */
    CHECK_EQ(pair_wc(&p, 0, true).status, UIW_WC_SUCCESS);
    struct uiw_wc wc = pair_wc(&p, 0, false);
    CHECK_EQ(wc.status, UIW_WC_WR_FLUSH_ERR);
    CHECK_EQ(wc.wr_id, 100);
    wc = pair_wc(&p, 1, false);
    CHECK_EQ(wc.status, UIW_WC_WR_FLUSH_ERR);
    CHECK_EQ(wc.wr_id, 101);
    /* posting after the error flushes at once */
    CHECK_EQ(pair_post(&p, 0, 2, UIW_WR_SEND, 0, src, 0, 1, 0, 0), 0);
    CHECK_EQ(pair_wc(&p, 0, true).status, UIW_WC_WR_FLUSH_ERR);
    CHECK_EQ(pair_tx_pending(&p, 0), 0);
    CHECK_EQ(uiw_dereg_mr(other), 0);
    free(mem2);
    CHECK_EQ(uiw_dealloc_pd(pd2), 0);
    pair_mr_free(src);
    pair_mr_free(dst);
    pair_mr_free(rb0);
    pair_mr_free(rb1);
    pair_free(&p);
}

TEST(write_invalid_stag)
{
    write_violation(W_INVALID, UIW_TERM_LAYER_DDP, UIW_TERM_DDP_TAGGED, UIW_TERM_DT_INVALID_STAG);
}

TEST(write_stale_key)
{
    write_violation(W_KEY, UIW_TERM_LAYER_DDP, UIW_TERM_DDP_TAGGED, UIW_TERM_DT_INVALID_STAG);
}

TEST(write_base_bounds)
{
    write_violation(W_BOUNDS, UIW_TERM_LAYER_DDP, UIW_TERM_DDP_TAGGED, UIW_TERM_DT_BASE_BOUNDS);
}

TEST(write_access_rights)
{
    write_violation(W_ACCESS, UIW_TERM_LAYER_RDMAP, UIW_TERM_RDMAP_REMOTE_PROTECTION,
                    UIW_TERM_RP_ACCESS_RIGHTS);
}

TEST(write_stag_other_pd)
{
    write_violation(W_OTHER_PD, UIW_TERM_LAYER_DDP, UIW_TERM_DDP_TAGGED,
                    UIW_TERM_DT_STAG_NOT_ASSOC);
}

TEST(write_to_wrap)
{
    write_violation(W_WRAP, UIW_TERM_LAYER_DDP, UIW_TERM_DDP_TAGGED, UIW_TERM_DT_TO_WRAP);
}

enum rcase { R_INVALID, R_BOUNDS, R_ACCESS, R_OTHER_PD, R_WRAP };

static void read_violation(enum rcase c, uint8_t code)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    struct uiw_mr *sink = pair_mr(&p, 0, 200, LW, 0);
    struct uiw_mr *src = pair_mr(&p, 1, 100, c == R_ACCESS ? RW & ~UIW_ACCESS_REMOTE_READ : RW, 9);
    struct uiw_pd *pd2 = uiw_alloc_pd(p.s[1].ctx);
    uint8_t *mem2 = malloc(100);
    struct uiw_mr *other = uiw_reg_mr(pd2, mem2, 100, RW);
    CHECK(other);
    uint32_t rkey = src->rkey;
    uint64_t to = (uintptr_t)src->addr;
    uint32_t len = 100;
    if (c == R_INVALID)
        rkey = 0;
    if (c == R_BOUNDS)
        to += 1;
    if (c == R_OTHER_PD) {
        rkey = other->rkey;
        to = (uintptr_t)mem2;
    }
    if (c == R_WRAP)
        to = UINT64_MAX - 50;
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_RDMA_READ, 0, sink, 0, len, to, rkey), 0);
    CHECK_EQ(pair_post(&p, 0, 2, UIW_WR_SEND, UIW_SEND_SIGNALED, sink, 0, 1, 0, 0), 0);
    pair_pump(&p);
    uint8_t ddp[18] = {0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0};
    uint8_t rr[28];
    uiw__put_be32(rr, sink->lkey);
    uiw__put_be64(rr + 4, (uintptr_t)sink->addr);
    uiw__put_be32(rr + 12, len);
    uiw__put_be32(rr + 16, rkey);
    uiw__put_be64(rr + 20, to);
    check_term(&p, 1, UIW_TERM_LAYER_RDMAP, UIW_TERM_RDMAP_REMOTE_PROTECTION, code,
               UIW_TERM_FLAG_M | UIW_TERM_FLAG_D | UIW_TERM_FLAG_R, 46, ddp, 18, rr);
    CHECK(pair_event(&p, 1, UIW_EVENT_QP_ACCESS_ERR, NULL));
    /* the Read fails with a remote access error (always reported), the Send after it
     * completed on the wire but completions are in order: it follows as sent */
    struct uiw_wc wc = pair_wc(&p, 0, true);
    CHECK_EQ(wc.wr_id, 1);
    CHECK_EQ(wc.status, UIW_WC_REM_ACCESS_ERR);
    CHECK_EQ(wc.opcode, UIW_WC_RDMA_READ);
    wc = pair_wc(&p, 0, true);
    CHECK_EQ(wc.wr_id, 2);
    CHECK(wc.status == UIW_WC_SUCCESS || wc.status == UIW_WC_WR_FLUSH_ERR);
    CHECK_EQ(uiw_dereg_mr(other), 0);
    free(mem2);
    CHECK_EQ(uiw_dealloc_pd(pd2), 0);
    pair_mr_free(sink);
    pair_mr_free(src);
    pair_free(&p);
}

TEST(read_invalid_stag)
{
    read_violation(R_INVALID, UIW_TERM_RP_INVALID_STAG);
}

TEST(read_base_bounds)
{
    read_violation(R_BOUNDS, UIW_TERM_RP_BASE_BOUNDS);
}

TEST(read_access_rights)
{
    read_violation(R_ACCESS, UIW_TERM_RP_ACCESS_RIGHTS);
}

TEST(read_stag_other_pd)
{
    read_violation(R_OTHER_PD, UIW_TERM_RP_STAG_NOT_ASSOC);
}

TEST(read_to_wrap)
{
    read_violation(R_WRAP, UIW_TERM_RP_TO_WRAP);
}

static void untagged_hdr(uint8_t *b, uint8_t op, bool last, uint32_t inv, uint32_t qn, uint32_t msn,
                         uint32_t mo)
{
    b[0] = last ? 0x41 : 0x01;
    b[1] = (uint8_t)(0x40 | op);
    uiw__put_be32(b + 2, inv);
    uiw__put_be32(b + 6, qn);
    uiw__put_be32(b + 10, msn);
    uiw__put_be32(b + 14, mo);
}

TEST(send_without_receive)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    struct uiw_mr *src = pair_mr(&p, 0, 64, 0, 1);
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_SEND, UIW_SEND_SIGNALED, src, 0, 20, 0, 0), 0);
    pair_pump(&p);
    uint8_t ddp[18];
    untagged_hdr(ddp, UIW_RDMAP_SEND, true, 0, 0, 1, 0);
    check_term(&p, 1, UIW_TERM_LAYER_DDP, UIW_TERM_DDP_UNTAGGED, UIW_TERM_DU_INVALID_MSN_NO_BUF,
               UIW_TERM_FLAG_M | UIW_TERM_FLAG_D, 38, ddp, 18, NULL);
    CHECK(pair_event(&p, 1, UIW_EVENT_QP_REQ_ERR, NULL));
    pair_mr_free(src);
    pair_free(&p);
}

/* A LOCAL_ANY_PD registration of another PD serves a QP's Sends and receives, never a
 * peer's RDMA Write (its STag is not associated with the stream); it takes no remote
 * access flag, and no fast registration binds it. */
TEST(local_any_pd_serves_local_work_of_every_pd)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    struct uiw_pd *pd0 = uiw_alloc_pd(p.s[0].ctx), *pd1 = uiw_alloc_pd(p.s[1].ctx);
    CHECK(pd0 && pd1);
    uint8_t *b0 = malloc(64), *b1 = calloc(1, 64);
    CHECK(b0 && b1);
    memset(b0, 7, 64);
    errno = 0;
    CHECK(uiw_reg_mr(pd0, b0, 64, UIW_ACCESS_LOCAL_ANY_PD | UIW_ACCESS_REMOTE_READ) == NULL);
    CHECK_EQ(errno, EINVAL);
    struct uiw_mr *src = uiw_reg_mr(pd0, b0, 64, UIW_ACCESS_LOCAL_ANY_PD);
    struct uiw_mr *dst = uiw_reg_mr(pd1, b1, 64, LW | UIW_ACCESS_LOCAL_ANY_PD);
    CHECK(src && dst);
    pair_post_recv(&p, 1, 9, dst, 0, 64);
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_SEND, UIW_SEND_SIGNALED, src, 0, 20, 0, 0), 0);
    pair_pump(&p);
    struct uiw_wc wc = pair_wc(&p, 0, true);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    wc = pair_wc(&p, 1, false);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(wc.byte_len, 20);
    CHECK_EQ(b1[19], 7);
    CHECK_EQ(b1[20], 0);
    /* a peer's RDMA Write into it: not associated with the stream */
    struct uiw_mr *wsrc = pair_mr(&p, 0, 16, 0, 3);
    CHECK_EQ(pair_post(&p, 0, 2, UIW_WR_RDMA_WRITE, 0, wsrc, 0, 16, (uintptr_t)b1, dst->rkey), 0);
    pair_pump(&p);
    struct uiw_qp_attr a;
    CHECK_EQ(uiw_query_qp(p.s[1].qp, &a), 0);
    CHECK(a.term_sent);
    CHECK_EQ(a.term_layer, UIW_TERM_LAYER_DDP);
    CHECK_EQ(a.term_etype, UIW_TERM_DDP_TAGGED);
    CHECK_EQ(a.term_code, UIW_TERM_DT_STAG_NOT_ASSOC);
    CHECK_EQ(b1[0], 7);
    pair_mr_free(wsrc);
    CHECK_EQ(uiw_dereg_mr(src), 0);
    CHECK_EQ(uiw_dereg_mr(dst), 0);
    free(b0);
    free(b1);
    CHECK_EQ(uiw_dealloc_pd(pd0), 0);
    CHECK_EQ(uiw_dealloc_pd(pd1), 0);
    pair_free(&p);
}

TEST(send_too_long)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    struct uiw_mr *src = pair_mr(&p, 0, 64, 0, 1);
    struct uiw_mr *dst = pair_mr(&p, 1, 64, LW, 0);
    pair_post_recv(&p, 1, 7, dst, 0, 16);
    pair_post_recv(&p, 1, 8, dst, 16, 16);
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_SEND_WITH_SE, 0, src, 0, 17, 0, 0), 0);
    pair_pump(&p);
    uint8_t ddp[18];
    untagged_hdr(ddp, UIW_RDMAP_SEND_SE, true, 0, 0, 1, 0);
    check_term(&p, 1, UIW_TERM_LAYER_DDP, UIW_TERM_DDP_UNTAGGED, UIW_TERM_DU_MSG_TOO_LONG,
               UIW_TERM_FLAG_M | UIW_TERM_FLAG_D, 35, ddp, 18, NULL);
    /* the receive it hit: local length error; the next one flushed */
    struct uiw_wc wc = pair_wc(&p, 1, false);
    CHECK_EQ(wc.wr_id, 7);
    CHECK_EQ(wc.status, UIW_WC_LOC_LEN_ERR);
    wc = pair_wc(&p, 1, false);
    CHECK_EQ(wc.wr_id, 8);
    CHECK_EQ(wc.status, UIW_WC_WR_FLUSH_ERR);
    pair_mr_free(src);
    pair_mr_free(dst);
    pair_free(&p);
}

TEST(send_inv_cannot_invalidate)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    struct uiw_mr *src = pair_mr(&p, 0, 64, 0, 1);
    struct uiw_mr *dst = pair_mr(&p, 1, 64, RW, 0); /* uiw_reg_mr: not invalidatable */
    pair_post_recv(&p, 1, 7, dst, 0, 64);
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_SEND_WITH_INV, 0, src, 0, 8, 0, dst->rkey), 0);
    pair_pump(&p);
    uint8_t ddp[18];
    untagged_hdr(ddp, UIW_RDMAP_SEND_INV, true, dst->rkey, 0, 1, 0);
    check_term(&p, 1, UIW_TERM_LAYER_RDMAP, UIW_TERM_RDMAP_REMOTE_OPERATION,
               UIW_TERM_RO_CANT_INVALIDATE, UIW_TERM_FLAG_M | UIW_TERM_FLAG_D, 26, ddp, 18, NULL);
    struct uiw_wc wc = pair_wc(&p, 1, false);
    CHECK_EQ(wc.status, UIW_WC_LOC_ACCESS_ERR);
    /* the STag stays valid for local use */
    CHECK_EQ(dst->rkey, dst->lkey);
    pair_mr_free(src);
    pair_mr_free(dst);
    pair_free(&p);
}

TEST(ird_exceeded)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.ird[1] = 1;
    o.ord[0] = 4; /* the requester exceeds what the responder offered */
    o.max_chunk = 1 << 16;
    pair_init(&p, &o, true);
    struct uiw_mr *sink = pair_mr(&p, 0, 64, LW, 0);
    struct uiw_mr *src = pair_mr(&p, 1, 64, RW, 0);
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pair_post(&p, 0, (uint64_t)i, UIW_WR_RDMA_READ, 0, sink, 0, 8,
                           (uintptr_t)src->addr, src->rkey),
                 0);
    /* both requests reach the responder before it answers */
    size_t n = pair_tx_pending(&p, 0);
    CHECK_EQ(n, 2 * uiw_fpdu_len(46));
    while (pair_pump_dir(&p, 0, SIZE_MAX))
        ;
    pair_pump(&p);
    uint8_t ddp[18];
    untagged_hdr(ddp, UIW_RDMAP_READ_REQ, true, 0, 1, 2, 0);
    uint8_t rr[28];
    uiw__put_be32(rr, sink->lkey);
    uiw__put_be64(rr + 4, (uintptr_t)sink->addr);
    uiw__put_be32(rr + 12, 8);
    uiw__put_be32(rr + 16, src->rkey);
    uiw__put_be64(rr + 20, (uintptr_t)src->addr);
    check_term(&p, 1, UIW_TERM_LAYER_DDP, UIW_TERM_DDP_UNTAGGED, UIW_TERM_DU_INVALID_MSN_NO_BUF,
               UIW_TERM_FLAG_M | UIW_TERM_FLAG_D, 46, ddp, 18, NULL);
    pair_nwc(&p, 0, true);
    pair_mr_free(sink);
    pair_mr_free(src);
    pair_free(&p);
}

static bool is_read_request(const uint8_t *ul, size_t n)
{
    return n >= UIW_DDP_UNTAGGED_HDR_LEN && !(ul[0] & UIW_DDP_FLAG_TAGGED) &&
           uiw__get_be32(ul + 6) == UIW_DDP_QN_READ_REQ;
}

/* ORD 0 negotiated: no Reads. One posted completes locally with a local QP operation
 * error, its Read Request never reaches the wire; the stream ends (as any local work
 * request error) with RDMAP / Remote Operation / Catastrophic, localized. */
TEST(ord_zero_read_fails_locally)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.ord[0] = 0;
    pair_init(&p, &o, true);
    struct uiw_mr *sink = pair_mr(&p, 0, 64, LW, 0);
    struct uiw_mr *src = pair_mr(&p, 1, 64, RW, 0x3C);
    struct uiw_qp_attr a;
    CHECK_EQ(uiw_query_qp(p.s[0].qp, &a), 0);
    CHECK_EQ(a.ord, 0);
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_RDMA_READ, UIW_SEND_SIGNALED, sink, 0, 8,
                       (uintptr_t)src->addr, src->rkey),
             0);
    CHECK_EQ(pair_post(&p, 0, 2, UIW_WR_SEND, UIW_SEND_SIGNALED, sink, 0, 8, 0, 0), 0);
    pair_pump(&p);
    struct uiw_wc wc = pair_wc(&p, 0, true);
    CHECK_EQ(wc.wr_id, 1);
    CHECK_EQ(wc.opcode, UIW_WC_RDMA_READ);
    CHECK_EQ(wc.status, UIW_WC_LOC_QP_OP_ERR);
    CHECK_EQ(wc.vendor_err, UIW_E_RNIC_NO_ORD);
    wc = pair_wc(&p, 0, true);
    CHECK_EQ(wc.wr_id, 2);
    CHECK_EQ(wc.status, UIW_WC_WR_FLUSH_ERR);
    size_t n = 0;
    CHECK(pair_find_ulpdu(&p, 0, is_read_request, &n) == NULL);
    CHECK_EQ(((uint8_t *)sink->addr)[0], 0);
    check_term(&p, 0, UIW_TERM_LAYER_RDMAP, UIW_TERM_RDMAP_REMOTE_OPERATION,
               UIW_TERM_RO_CATASTROPHIC_STREAM, 0, 0, NULL, 0, NULL);
    pair_mr_free(sink);
    pair_mr_free(src);
    pair_free(&p);
}

/* IRD 0 negotiated: a Read Request that arrives anyway overruns it. */
TEST(ird_zero_refuses_read_requests)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.ird[1] = 0;
    pair_init(&p, &o, true);
    struct uiw_mr *sink = pair_mr(&p, 0, 64, LW, 0);
    struct uiw_mr *src = pair_mr(&p, 1, 64, RW, 0x3C);
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_RDMA_READ, 0, sink, 0, 8, (uintptr_t)src->addr, src->rkey),
             0);
    pair_pump(&p);
    uint8_t ddp[18];
    untagged_hdr(ddp, UIW_RDMAP_READ_REQ, true, 0, 1, 1, 0);
    check_term(&p, 1, UIW_TERM_LAYER_DDP, UIW_TERM_DDP_UNTAGGED, UIW_TERM_DU_INVALID_MSN_NO_BUF,
               UIW_TERM_FLAG_M | UIW_TERM_FLAG_D, 46, ddp, 18, NULL);
    CHECK_EQ(((uint8_t *)sink->addr)[0], 0);
    pair_nwc(&p, 0, true);
    pair_mr_free(sink);
    pair_mr_free(src);
    pair_free(&p);
}

/* Frame one ULPDU as the next FPDU of a stream to side d (nothing else sent to it). */
static int inject(struct pair *p, int d, struct uiw_fpdu_tx *ftx, const uint8_t *ul, size_t n)
{
    uint8_t buf[4096];
    struct uiw_wire_iov v = {ul, n};
    ssize_t len = uiw_fpdu_tx_encode(ftx, &v, 1, buf, sizeof(buf));
    CHECK(len > 0);
    return pair_feed(p, d, buf, (size_t)len);
}

static void bad_ulpdu(const uint8_t *ul, size_t n, uint8_t layer, uint8_t etype, uint8_t code,
                      uint8_t hdrct, size_t ddplen)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.crc = true;
    pair_init(&p, &o, true);
    struct uiw_fpdu_tx ftx;
    uiw_fpdu_tx_init(&ftx, true, false);
    int r = inject(&p, 1, &ftx, ul, n);
    CHECK(r < 0);
    CHECK(uiw_error_is_fatal(r));
    pair_pump(&p);
    check_term(&p, 1, layer, etype, code, hdrct, (uint16_t)n, ul, ddplen, NULL);
    pair_free(&p);
}

TEST(bad_ddp_version_untagged)
{
    uint8_t ul[18];
    untagged_hdr(ul, UIW_RDMAP_SEND, true, 0, 0, 1, 0);
    ul[0] = 0x42; /* DV 2 */
    bad_ulpdu(ul, 18, UIW_TERM_LAYER_DDP, UIW_TERM_DDP_UNTAGGED, UIW_TERM_DU_INVALID_VERSION,
              UIW_TERM_FLAG_M | UIW_TERM_FLAG_D, 18);
}

TEST(bad_ddp_version_tagged)
{
    uint8_t ul[14];
    tagged_hdr(ul, 0, 0x1234, 0);
    ul[0] = 0xC2;
    bad_ulpdu(ul, 14, UIW_TERM_LAYER_DDP, UIW_TERM_DDP_TAGGED, UIW_TERM_DT_INVALID_VERSION,
              UIW_TERM_FLAG_M | UIW_TERM_FLAG_D, 14);
}

TEST(bad_rdmap_version)
{
    uint8_t ul[18];
    untagged_hdr(ul, UIW_RDMAP_SEND, true, 0, 0, 1, 0);
    ul[1] = 0x83; /* RDMAP version 2 */
    bad_ulpdu(ul, 18, UIW_TERM_LAYER_RDMAP, UIW_TERM_RDMAP_REMOTE_OPERATION,
              UIW_TERM_RO_INVALID_VERSION, UIW_TERM_FLAG_M | UIW_TERM_FLAG_D, 18);
}

TEST(bad_opcode)
{
    uint8_t ul[18];
    untagged_hdr(ul, 0xF, true, 0, 0, 1, 0);
    bad_ulpdu(ul, 18, UIW_TERM_LAYER_RDMAP, UIW_TERM_RDMAP_REMOTE_OPERATION,
              UIW_TERM_RO_UNEXPECTED_OPCODE, UIW_TERM_FLAG_M | UIW_TERM_FLAG_D, 18);
}

TEST(bad_qn)
{
    uint8_t ul[18];
    untagged_hdr(ul, UIW_RDMAP_SEND, true, 0, 7, 1, 0);
    bad_ulpdu(ul, 18, UIW_TERM_LAYER_DDP, UIW_TERM_DDP_UNTAGGED, UIW_TERM_DU_INVALID_QN,
              UIW_TERM_FLAG_M | UIW_TERM_FLAG_D, 18);
}

TEST(bad_msn_range)
{
    uint8_t ul[18];
    untagged_hdr(ul, UIW_RDMAP_SEND, true, 0, 0, 1000, 0);
    bad_ulpdu(ul, 18, UIW_TERM_LAYER_DDP, UIW_TERM_DDP_UNTAGGED, UIW_TERM_DU_INVALID_MSN_RANGE,
              UIW_TERM_FLAG_M | UIW_TERM_FLAG_D, 18);
}

TEST(unexpected_read_response)
{
    uint8_t ul[14];
    tagged_hdr(ul, UIW_RDMAP_READ_RESP, 0x1234, 0);
    bad_ulpdu(ul, 14, UIW_TERM_LAYER_RDMAP, UIW_TERM_RDMAP_REMOTE_OPERATION,
              UIW_TERM_RO_UNEXPECTED_OPCODE, UIW_TERM_FLAG_M | UIW_TERM_FLAG_D, 14);
}

TEST(crc_error)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.crc = true;
    pair_init(&p, &o, true);
    struct uiw_mr *dst = pair_mr(&p, 1, 64, LW, 0);
    pair_post_recv(&p, 1, 7, dst, 0, 64);
    uint8_t ul[18];
    untagged_hdr(ul, UIW_RDMAP_SEND, true, 0, 0, 1, 0);
    uint8_t buf[64];
    struct uiw_wire_iov v = {ul, 18};
    struct uiw_fpdu_tx ftx;
    uiw_fpdu_tx_init(&ftx, true, false);
    ssize_t len = uiw_fpdu_tx_encode(&ftx, &v, 1, buf, sizeof(buf));
    CHECK(len > 0);
    buf[len - 1] ^= 1;
    CHECK_EQ(pair_feed(&p, 1, buf, (size_t)len), UIW_E_FPDU_CRC);
    pair_pump(&p);
    check_term(&p, 1, UIW_TERM_LAYER_LLP, UIW_TERM_LLP_MPA, UIW_TERM_MPA_CRC, 0, 0, NULL, 0, NULL);
    CHECK(pair_event(&p, 1, UIW_EVENT_QP_FATAL, NULL));
    struct uiw_context_stats st;
    CHECK_EQ(uiw_query_context_stats(p.s[1].ctx, &st), 0);
    CHECK_EQ(st.crc_errors, 1);
    CHECK_EQ(st.terminates_sent, 1);
    /* the receive was not completed as a success: it is flushed */
    CHECK_EQ(pair_wc(&p, 1, false).status, UIW_WC_WR_FLUSH_ERR);
    pair_mr_free(dst);
    pair_free(&p);
}

TEST(local_protection_error)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    struct uiw_mr *src = pair_mr(&p, 0, 64, 0, 1);
    struct uiw_mr *dst = pair_mr(&p, 1, 64, RW, 0);
    struct uiw_sge sge = {(uintptr_t)src->addr, 65, src->lkey}; /* beyond the MR */
    struct uiw_send_wr wr = {
        .wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = UIW_WR_RDMA_WRITE};
    wr.wr.rdma.remote_addr = (uintptr_t)dst->addr;
    wr.wr.rdma.rkey = dst->rkey;
    struct uiw_send_wr wr2 = wr;
    wr2.wr_id = 2;
    wr2.sg_list = &sge;
    wr.next = &wr2;
    struct uiw_send_wr *bad;
    CHECK_EQ(uiw_post_send(p.s[0].qp, &wr, &bad), 0);
    pair_pump(&p);
    struct uiw_wc wc = pair_wc(&p, 0, true);
    CHECK_EQ(wc.wr_id, 1);
    CHECK_EQ(wc.status, UIW_WC_LOC_PROT_ERR);
    wc = pair_wc(&p, 0, true);
    CHECK_EQ(wc.wr_id, 2);
    CHECK_EQ(wc.status, UIW_WC_WR_FLUSH_ERR);
    check_term(&p, 0, UIW_TERM_LAYER_RDMAP, UIW_TERM_RDMAP_REMOTE_OPERATION,
               UIW_TERM_RO_CATASTROPHIC_STREAM, 0, 0, NULL, 0, NULL);
    pair_mr_free(src);
    pair_mr_free(dst);
    pair_free(&p);
}

/* A receive is resolved when it is posted, for as long as the STag table stays as it was:
 * its buffer deregistered before the Send arrives, the Send is refused (a local
 * protection error, nothing written there); any other change of the table only makes it
 * check again. */
TEST(receive_resolved_at_post_rechecked_on_arrival)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.mode = PAIR_IO;
    pair_init(&p, &o, true);
    struct uiw_mr *src = pair_mr(&p, 0, 64, 0, 7);
    struct uiw_mr *dst = pair_mr(&p, 1, 128, LW, 0);
    struct uiw_mr *other = pair_mr(&p, 1, 64, LW, 0);
    /* another STag changes: the posted receive still takes the Send */
    pair_post_recv(&p, 1, 1, dst, 0, 64);
    pair_mr_free(other);
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_SEND, 0, src, 0, 64, 0, 0), 0);
    pair_pump(&p);
    struct uiw_wc wc = pair_wc(&p, 1, false);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_MEM(dst->addr, src->addr, 64);
    /* the receive's own buffer deregistered after the post: refused, untouched */
    uint8_t *buf = dst->addr;
    pair_post_recv(&p, 1, 2, dst, 64, 64);
    CHECK_EQ(uiw_dereg_mr(dst), 0);
    CHECK_EQ(pair_post(&p, 0, 2, UIW_WR_SEND, 0, src, 0, 64, 0, 0), 0);
    pair_pump(&p);
    wc = pair_wc(&p, 1, false);
    CHECK_EQ(wc.wr_id, 2);
    CHECK_EQ(wc.status, UIW_WC_LOC_PROT_ERR);
    for (int i = 64; i < 128; i++)
        CHECK_EQ(buf[i], 0);
    CHECK(uiw__qp_state(p.s[1].qp) != UIW_QPS_RTS);
    free(buf);
    pair_mr_free(src);
    pair_free(&p);
}

/* A region deregistered while a segment is being placed into it: its header checked and
 * part of its payload placed, the rest still on the way (a slow peer can hold it back as
 * long as it likes). Nothing more is written there, and the stream ends as it would have
 * had the header come after the deregistration. In every receive mode. */
enum { MID_LEN = 1000, MID_FIRST = 400 };

static size_t mid_placed(const uint8_t *buf, uint8_t fill)
{
    size_t n = 0;
    while (n < MID_LEN && buf[n] == fill)
        n++;
    return n;
}

/* A pair in receive mode mode whose pump moves exactly what it is asked to. */
static void mid_pair(struct pair *p, int mode)
{
    struct pair_opts o;
    pair_opts_default(&o);
    o.mode = mode;
    o.whole = true;
    o.max_chunk = 1u << 20;
    pair_init(p, &o, true);
}

/* send: a Send into a posted receive, else an RDMA Write into a tagged region. */
static void deregistered_midway(int mode, bool send)
{
    struct pair p;
    mid_pair(&p, mode);
    struct uiw_mr *src = pair_mr(&p, 0, MID_LEN, 0, 7);
    struct uiw_mr *dst = pair_mr(&p, 1, MID_LEN, send ? LW : RW, 0);
    uint8_t *buf = dst->addr;
    uint64_t to = (uintptr_t)buf;
    uint32_t rkey = dst->rkey;
    size_t hl = send ? 18 : 14;
    if (send)
        pair_post_recv(&p, 1, 9, dst, 0, MID_LEN);
    CHECK_EQ(pair_post(&p, 0, 1, send ? UIW_WR_SEND : UIW_WR_RDMA_WRITE, 0, src, 0, MID_LEN,
                       send ? 0 : to, send ? 0 : rkey),
             0);
    CHECK_EQ(pair_pump_dir(&p, 0, 2 + hl + MID_FIRST), 2 + hl + MID_FIRST);
    CHECK_EQ(mid_placed(buf, 7), MID_FIRST); /* the segment's first part is in place */
    CHECK_EQ(uiw_dereg_mr(dst), 0);
    memset(buf, 0xEE, MID_LEN);
    pair_pump(&p);
    CHECK_EQ(mid_placed(buf, 0xEE), MID_LEN);
    if (send) {
        struct uiw_wc wc = pair_wc(&p, 1, false);
        CHECK_EQ(wc.wr_id, 9);
        CHECK_EQ(wc.status, UIW_WC_LOC_PROT_ERR);
        CHECK(uiw__qp_state(p.s[1].qp) != UIW_QPS_RTS);
    } else {
        uint8_t ddp[14];
        tagged_hdr(ddp, 0, rkey, to);
        check_term(&p, 1, UIW_TERM_LAYER_DDP, UIW_TERM_DDP_TAGGED, UIW_TERM_DT_INVALID_STAG,
                   UIW_TERM_FLAG_M | UIW_TERM_FLAG_D, (uint16_t)(14 + MID_LEN), ddp, 14, NULL);
    }
    free(buf);
    pair_mr_free(src);
    pair_free(&p);
}

TEST(write_target_deregistered_midway)
{
    const int modes[] = {PAIR_DIRECT, PAIR_STAGED, PAIR_MIXED, PAIR_IO, PAIR_PEEK};
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        deregistered_midway(modes[i], false);
}

TEST(send_buffer_deregistered_midway)
{
    const int modes[] = {PAIR_DIRECT, PAIR_STAGED, PAIR_MIXED, PAIR_IO, PAIR_PEEK};
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        deregistered_midway(modes[i], true);
}

/* uiw_dereg_mr while io's read into a region is under way (iovecs of rx_next handed out,
 * their read not yet reported by rx_advance): the call waits for the read, returns only
 * after it, however long it is held, and nothing of the segment is placed there after
 * it. */
TEST(dereg_waits_for_a_read_under_way)
{
    struct pair p;
    mid_pair(&p, PAIR_DIRECT);
    struct uiw_mr *src = pair_mr(&p, 0, MID_LEN, 0, 7);
    struct uiw_mr *dst = pair_mr(&p, 1, MID_LEN, RW, 0);
    uint8_t *buf = dst->addr;
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_RDMA_WRITE, 0, src, 0, MID_LEN, (uintptr_t)buf, dst->rkey),
             0);
    CHECK_EQ(pair_pump_dir(&p, 0, 2 + 14), 2 + 14); /* the header: the payload comes next */
    struct iovec iov[8];
    int n = uiw__qp_rx_next(p.s[1].qp, iov, 8);
    CHECK(n >= 1);
    CHECK(iov[0].iov_base == (void *)buf);
    struct pair_dereg d;
    pair_dereg_start(&d, dst, NULL, NULL);
    pair_dereg_held(&d, UIW__DEREG_WAIT_READ); /* the read is still under way */
    memset(buf, 7, MID_FIRST);                 /* what it brings */
    unsigned end = pair_dereg_mark(&d);
    CHECK_EQ(uiw__qp_rx_advance(p.s[1].qp, MID_FIRST), 0);
    pair_dereg_join(&d, end);
    memset(buf, 0xEE, MID_LEN);
    pair_pump(&p); /* the rest of the segment: not placed, the stream ends */
    CHECK_EQ(mid_placed(buf, 0xEE), MID_LEN);
    CHECK(uiw__qp_state(p.s[1].qp) != UIW_QPS_RTS);
    free(buf);
    pair_mr_free(src);
    pair_free(&p);
}

/* A LOCAL_INV the application posts while io's read into the region is under way: the
 * STag is invalid at once, but the LOCAL_INV completes only when io builds again (which it
 * does with none of its reads under way), and nothing of the segment is placed after. */
TEST(local_inv_waits_for_a_read_under_way)
{
    struct pair p;
    mid_pair(&p, PAIR_DIRECT);
    struct uiw_mr *src = pair_mr(&p, 0, MID_LEN, 0, 7);
    uint8_t *buf = calloc(1, MID_LEN);
    CHECK(buf);
    struct uiw_mr *fr = uiw_alloc_mr(p.s[1].pd, MID_LEN);
    CHECK(fr);
    uint32_t key = uiw_inc_rkey(fr->rkey);
    struct uiw_send_wr reg = pair_reg_wr(1, fr, key, buf, MID_LEN, RW);
    struct uiw_send_wr *bad = NULL;
    CHECK_EQ(uiw_post_send(p.s[1].qp, &reg, &bad), 0);
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_RDMA_WRITE, 0, src, 0, MID_LEN, (uintptr_t)buf, key), 0);
    CHECK_EQ(pair_pump_dir(&p, 0, 2 + 14), 2 + 14); /* the header: the payload comes next */
    struct iovec iov[8];
    int n = uiw__qp_rx_next(p.s[1].qp, iov, 8);
    CHECK(n >= 1);
    CHECK(iov[0].iov_base == (void *)buf);
    struct uiw_send_wr inv = {
        .wr_id = 2, .opcode = UIW_WR_LOCAL_INV, .send_flags = UIW_SEND_SIGNALED};
    inv.invalidate_rkey = key;
    CHECK_EQ(uiw_post_send(p.s[1].qp, &inv, &bad), 0);
    CHECK_EQ(pair_nwc(&p, 1, true), 0); /* the read is still under way */
    memset(buf, 7, MID_FIRST);          /* what it brings */
    CHECK_EQ(uiw__qp_rx_advance(p.s[1].qp, MID_FIRST), 0);
    CHECK_EQ(pair_nwc(&p, 1, true), 0); /* no build yet */
    pair_pump_dir(&p, 1, SIZE_MAX);     /* io builds: the read is over */
    struct uiw_wc wc = pair_wc(&p, 1, true);
    CHECK_EQ(wc.wr_id, 2);
    CHECK_EQ(wc.opcode, UIW_WC_LOCAL_INV);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    memset(buf, 0xEE, MID_LEN);
    pair_pump(&p); /* the rest of the segment: not placed, the stream ends */
    CHECK_EQ(mid_placed(buf, 0xEE), MID_LEN);
    CHECK(uiw__qp_state(p.s[1].qp) != UIW_QPS_RTS);
    free(buf);
    CHECK_EQ(uiw_dereg_mr(fr), 0);
    pair_mr_free(src);
    pair_free(&p);
}
