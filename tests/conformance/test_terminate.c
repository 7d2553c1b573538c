/*
 * Conformance: a hostile peer (its own raw frames on a real TCP socket) provokes every
 * Terminate the stack can send; each case asserts the Terminate on the wire (layer,
 * etype, code per RFC 5040 4.8 / RFC 5041 7 / RFC 5044, its M/D/R bits and the echoed
 * DDP segment length, DDP header and RDMA header), the closed stream, the local async
 * event, the QP attributes, the completion of every posted receive, and that memory
 * outside the permitted range (guard bytes, other regions) is untouched.
 */
#include <stdlib.h>

#include "conf.h"
#include "test.h"

#define M UIW_TERM_FLAG_M
#define D UIW_TERM_FLAG_D
#define R UIW_TERM_FLAG_R

#define L_RDMAP UIW_TERM_LAYER_RDMAP
#define L_DDP   UIW_TERM_LAYER_DDP
#define L_LLP   UIW_TERM_LAYER_LLP
#define E_RP    UIW_TERM_RDMAP_REMOTE_PROTECTION
#define E_RO    UIW_TERM_RDMAP_REMOTE_OPERATION
#define E_DT    UIW_TERM_DDP_TAGGED
#define E_DU    UIW_TERM_DDP_UNTAGGED
#define E_MPA   UIW_TERM_LLP_MPA

#define EV_ACC UIW_EVENT_QP_ACCESS_ERR
#define EV_REQ UIW_EVENT_QP_REQ_ERR
#define EV_FAT UIW_EVENT_QP_FATAL
#define FLUSH  (-1)

static uint8_t payload[512];

static uint64_t base(struct conf *c, enum conf_region r)
{
    return (uint64_t)(uintptr_t)c->region[r];
}

/* An RDMA Write of len bytes, one segment. */
static void write_at(struct conf *c, uint32_t stag, uint64_t to, size_t len)
{
    uint8_t h[UIW_DDP_TAGGED_HDR_LEN];
    rawpeer_tagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_WRITE), true, stag, to);
    conf_send(c, h, sizeof(h), payload, len);
}

/* A Read Request for size bytes from (stag, to) into a sink of ours. */
static void read_at(struct conf *c, uint32_t stag, uint64_t to, uint32_t size)
{
    uint8_t h[UIW_DDP_UNTAGGED_HDR_LEN + UIW_RDMAP_READ_REQ_LEN];
    rawpeer_untagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_READ_REQ), true, 0, UIW_DDP_QN_READ_REQ,
                         c->peer.msn[UIW_DDP_QN_READ_REQ]++, 0);
    struct uiw_rdmap_read_req rr = {.sink_stag = 0x1234500 | 0x42,
                                    .sink_to = 0x10000,
                                    .size = size,
                                    .src_stag = stag,
                                    .src_to = to};
    uiw_rdmap_read_req_encode(&rr, h + UIW_DDP_UNTAGGED_HDR_LEN);
    conf_send(c, h, sizeof(h), NULL, 0);
}

/* An untagged segment on any QN/MSN/MO with any control byte. */
static void untagged(struct conf *c, uint8_t ctrl, uint32_t inv, uint32_t qn, uint32_t msn,
                     uint32_t mo, size_t len)
{
    uint8_t h[UIW_DDP_UNTAGGED_HDR_LEN];
    rawpeer_untagged_hdr(h, ctrl, true, inv, qn, msn, mo);
    conf_send(c, h, sizeof(h), payload, len);
}

static void send_msg(struct conf *c, enum uiw_rdmap_opcode op, uint32_t inv, size_t len)
{
    untagged(c, uiw_rdmap_ctrl(op), inv, UIW_DDP_QN_SEND, c->peer.msn[UIW_DDP_QN_SEND]++, 0, len);
}

static uint32_t other_key(uint32_t stag)
{
    return (stag & 0xFFFFFF00u) | ((stag + 0x5Bu) & 0xFFu);
}

/* ---- the hostile frames ---- */

static void p_write_invalid_stag(struct conf *c)
{
    write_at(c, 0x00ABCD00u | 0x11, base(c, R_RW), 16);
}
static void p_write_stag_zero(struct conf *c)
{
    write_at(c, 0, base(c, R_RW), 16);
}
static void p_write_wrong_key(struct conf *c)
{
    write_at(c, other_key(c->mr[R_RW]->rkey), base(c, R_RW), 16);
}
static void p_write_past_end(struct conf *c)
{
    write_at(c, c->mr[R_RW]->rkey, base(c, R_RW) + CONF_REGION_LEN - 8, 16);
}
static void p_write_below_base(struct conf *c)
{
    write_at(c, c->mr[R_RW]->rkey, base(c, R_RW) - 4, 16);
}
static void p_write_other_pd(struct conf *c)
{
    write_at(c, c->mr[R_OTHERPD]->rkey, base(c, R_OTHERPD), 16);
}
static void p_write_to_wrap(struct conf *c)
{
    write_at(c, c->mr[R_RW]->rkey, UINT64_MAX - 7, 16);
}
static void p_write_no_access(struct conf *c)
{
    write_at(c, c->mr[R_NOWRITE]->rkey, base(c, R_NOWRITE), 16);
}
static void p_write_bad_ddp_version(struct conf *c)
{
    uint8_t h[UIW_DDP_TAGGED_HDR_LEN];
    rawpeer_tagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_WRITE), true, c->mr[R_RW]->rkey, base(c, R_RW));
    h[0] = (uint8_t)((h[0] & ~0x03u) | 0x02u); /* DV = 2 */
    conf_send(c, h, sizeof(h), payload, 16);
}
/* A legal Write first (placed), then one to the STag a Send with Invalidate revoked. */
static void p_write_after_remote_invalidate(struct conf *c)
{
    CHECK_EQ(rawpeer_send_write(&c->peer, c->fast_rkey, base(c, R_FAST) + 8, payload, 32), 0);
    conf_expect_written(c, c->region[R_FAST] + 8, payload, 32);
    send_msg(c, UIW_RDMAP_SEND_INV, c->fast_rkey, 8);
    struct uiw_wc wc;
    conf_next_wc(c, &wc);
    CHECK_EQ(wc.wr_id, 100);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(wc.opcode, UIW_WC_RECV);
    CHECK_EQ(wc.byte_len, 8);
    CHECK(wc.wc_flags & UIW_WC_WITH_INV);
    CHECK_EQ(wc.invalidated_rkey, c->fast_rkey);
    conf_expect_written(c, c->region[R_RECV], payload, 8);
    c->wc_done = 1;
    write_at(c, c->fast_rkey, base(c, R_FAST), 16);
}
/* The same, with a second Send with Invalidate of the STag, invalid by then: not an
 * error (delivered as the first), so the Terminate is the Write's. */
static void p_write_after_second_remote_invalidate(struct conf *c)
{
    for (int i = 0; i < 2; i++) {
        send_msg(c, UIW_RDMAP_SEND_INV, c->fast_rkey, 8);
        struct uiw_wc wc;
        conf_next_wc(c, &wc);
        CHECK_EQ(wc.wr_id, 100 + (uint64_t)i);
        CHECK_EQ(wc.status, UIW_WC_SUCCESS);
        CHECK_EQ(wc.byte_len, 8);
        CHECK(wc.wc_flags & UIW_WC_WITH_INV);
        CHECK_EQ(wc.invalidated_rkey, c->fast_rkey);
        conf_expect_written(c, c->region[R_RECV] + (size_t)i * CONF_RECV_LEN, payload, 8);
    }
    c->wc_done = 2;
    write_at(c, c->fast_rkey, base(c, R_FAST), 16);
}
static void p_read_invalid_stag(struct conf *c)
{
    read_at(c, 0x00ABCD00u | 0x22, base(c, R_RW), 16);
}
static void p_read_past_end(struct conf *c)
{
    read_at(c, c->mr[R_RW]->rkey, base(c, R_RW) + CONF_REGION_LEN - 8, 16);
}
static void p_read_no_access(struct conf *c)
{
    read_at(c, c->mr[R_NOREAD]->rkey, base(c, R_NOREAD), 16);
}
static void p_read_other_pd(struct conf *c)
{
    read_at(c, c->mr[R_OTHERPD]->rkey, base(c, R_OTHERPD), 16);
}
static void p_read_to_wrap(struct conf *c)
{
    read_at(c, c->mr[R_RW]->rkey, UINT64_MAX - 7, 16);
}
static void p_send_inv_unknown(struct conf *c)
{
    send_msg(c, UIW_RDMAP_SEND_INV, 0x00ABCD00u | 0x33, 8);
}
static void p_send_inv_not_invalidatable(struct conf *c)
{
    send_msg(c, UIW_RDMAP_SEND_SE_INV, c->mr[R_RW]->rkey, 8);
}
static void p_send_inv_other_pd(struct conf *c)
{
    send_msg(c, UIW_RDMAP_SEND_INV, c->mr[R_OTHERPD]->rkey, 8);
}
static void p_send(struct conf *c)
{
    send_msg(c, UIW_RDMAP_SEND, 0, 8);
}
static void p_send_msn_ahead(struct conf *c)
{
    untagged(c, uiw_rdmap_ctrl(UIW_RDMAP_SEND), 0, UIW_DDP_QN_SEND, 5, 0, 8);
}
static void p_send_msn_repeated(struct conf *c)
{
    send_msg(c, UIW_RDMAP_SEND, 0, 8);
    struct uiw_wc wc;
    conf_next_wc(c, &wc);
    CHECK_EQ(wc.wr_id, 100);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    conf_expect_written(c, c->region[R_RECV], payload, 8);
    c->wc_done = 1;
    untagged(c, uiw_rdmap_ctrl(UIW_RDMAP_SEND), 0, UIW_DDP_QN_SEND, 1, 0, 8);
}
static void p_send_bad_mo(struct conf *c)
{
    untagged(c, uiw_rdmap_ctrl(UIW_RDMAP_SEND), 0, UIW_DDP_QN_SEND, 1, 4096, 8);
}
static void p_send_too_long(struct conf *c)
{
    send_msg(c, UIW_RDMAP_SEND, 0, CONF_RECV_LEN + 44);
}
static void p_send_bad_ddp_version(struct conf *c)
{
    uint8_t h[UIW_DDP_UNTAGGED_HDR_LEN];
    rawpeer_untagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_SEND), true, 0, UIW_DDP_QN_SEND, 1, 0);
    h[0] = (uint8_t)(h[0] & ~0x03u); /* DV = 0 */
    conf_send(c, h, sizeof(h), payload, 8);
}
static void p_bad_qn(struct conf *c)
{
    untagged(c, uiw_rdmap_ctrl(UIW_RDMAP_SEND), 0, 7, 1, 0, 8);
}
static void p_bad_qn_3(struct conf *c)
{
    untagged(c, uiw_rdmap_ctrl(UIW_RDMAP_SEND), 0, 3, 1, 0, 8);
}
static void p_bad_rdmap_version(struct conf *c)
{
    untagged(c, (uint8_t)(2u << 6 | UIW_RDMAP_SEND), 0, UIW_DDP_QN_SEND, 1, 0, 8);
}
static void p_unknown_opcode(struct conf *c)
{
    untagged(c, (uint8_t)(1u << 6 | 0x0F), 0, UIW_DDP_QN_SEND, 1, 0, 8);
}
static void p_send_opcode_tagged(struct conf *c)
{
    uint8_t h[UIW_DDP_TAGGED_HDR_LEN];
    rawpeer_tagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_SEND), true, c->mr[R_RW]->rkey, base(c, R_RW));
    conf_send(c, h, sizeof(h), payload, 16);
}
static void p_write_opcode_untagged(struct conf *c)
{
    untagged(c, uiw_rdmap_ctrl(UIW_RDMAP_WRITE), 0, UIW_DDP_QN_SEND, 1, 0, 8);
}
static void p_unexpected_read_response(struct conf *c)
{
    uint8_t h[UIW_DDP_TAGGED_HDR_LEN];
    rawpeer_tagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_READ_RESP), true, c->mr[R_RW]->rkey,
                       base(c, R_RW));
    conf_send(c, h, sizeof(h), payload, 16);
}
static void p_ddp_reserved_bits(struct conf *c)
{
    uint8_t h[UIW_DDP_UNTAGGED_HDR_LEN];
    rawpeer_untagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_SEND), true, 0, UIW_DDP_QN_SEND, 1, 0);
    h[0] |= 0x08;
    conf_send(c, h, sizeof(h), payload, 8);
}
static void p_rdmap_reserved_bits(struct conf *c)
{
    untagged(c, (uint8_t)(uiw_rdmap_ctrl(UIW_RDMAP_SEND) | 0x20), 0, UIW_DDP_QN_SEND, 1, 0, 8);
}
static void p_read_req_truncated(struct conf *c)
{
    uint8_t h[UIW_DDP_UNTAGGED_HDR_LEN + 20];
    memset(h, 0, sizeof(h));
    rawpeer_untagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_READ_REQ), true, 0, UIW_DDP_QN_READ_REQ, 1, 0);
    conf_send(c, h, sizeof(h), NULL, 0);
    c->sent_hdr = UIW_DDP_UNTAGGED_HDR_LEN;
}
static void p_untagged_truncated(struct conf *c)
{
    /* 16 bytes: a tagged header's worth, but T says untagged (18) */
    uint8_t h[UIW_DDP_UNTAGGED_HDR_LEN];
    rawpeer_untagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_SEND), true, 0, UIW_DDP_QN_SEND, 1, 0);
    conf_send(c, h, 16, NULL, 0);
}
/* A Send FPDU whose CRC field is wrong. */
static void p_crc_error(struct conf *c)
{
    uint8_t h[UIW_DDP_UNTAGGED_HDR_LEN];
    rawpeer_untagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_SEND), true, 0, UIW_DDP_QN_SEND, 1, 0);
    struct uiw_wire_iov v[2] = {{h, sizeof(h)}, {payload, 32}};
    uint8_t f[128];
    ssize_t n = rawpeer_frame(&c->peer, v, 2, f, sizeof(f));
    CHECK(n >= 8); /* length, header, CRC */
    f[n - 2] ^= 0x40;
    CHECK_EQ(rawpeer_write(&c->peer, f, (size_t)n), 0);
    /* The payload may be placed into the posted receive before the CRC is checked (its
     * content is undefined: the receive is flushed); nothing beyond it may change. */
    c->may_write = c->region[R_RECV];
    c->may_len = 32;
}
/* The first FPDU's marker (at stream offset 0) points elsewhere; the CRC is made right. */
static void p_marker_mismatch(struct conf *c)
{
    CHECK(c->peer.markers_tx);
    uint8_t h[UIW_DDP_UNTAGGED_HDR_LEN];
    rawpeer_untagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_SEND), true, 0, UIW_DDP_QN_SEND, 1, 0);
    struct uiw_wire_iov v[2] = {{h, sizeof(h)}, {payload, 32}};
    uint8_t f[128];
    ssize_t n = rawpeer_frame(&c->peer, v, 2, f, sizeof(f));
    CHECK(n > 0);
    CHECK_EQ(f[0] | f[1] | f[2] | f[3], 0); /* marker: reserved 0, FPDUPTR 0 */
    f[3] = 8;
    uint32_t crc = uiw_crc32c(0, f, (size_t)n - 4);
    for (int i = 0; i < 4; i++)
        f[n - 4 + i] = (uint8_t)(crc >> (8 * i));
    CHECK_EQ(rawpeer_write(&c->peer, f, (size_t)n), 0);
}
/* ULPDU_Length 6: no DDP segment is that short. */
static void p_ulpdu_too_short(struct conf *c)
{
    uint8_t f[12] = {0, 6, 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0};
    if (c->peer.crc) {
        uint32_t crc = uiw_crc32c(0, f, 8);
        for (int i = 0; i < 4; i++)
            f[8 + i] = (uint8_t)(crc >> (8 * i));
    }
    CHECK_EQ(rawpeer_write(&c->peer, f, sizeof(f)), 0);
}

/* A two-segment Write: the first is placed, the second runs past the region's end. */
static void p_write_second_segment_past_end(struct conf *c)
{
    uint8_t h[UIW_DDP_TAGGED_HDR_LEN];
    rawpeer_tagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_WRITE), false, c->mr[R_RW]->rkey,
                       base(c, R_RW) + 600);
    struct uiw_wire_iov v[2] = {{h, sizeof(h)}, {payload, 300}};
    CHECK_EQ(rawpeer_send_ulpdu(&c->peer, v, 2), 0);
    conf_expect_written(c, c->region[R_RW] + 600, payload, 300);
    rawpeer_tagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_WRITE), true, c->mr[R_RW]->rkey,
                       base(c, R_RW) + 900);
    conf_send(c, h, sizeof(h), payload + 300, 200);
}
/* Peer-to-peer (RFC 6581): the first message is not the negotiated RTR. */
static void p_send_instead_of_rtr(struct conf *c)
{
    CHECK_EQ(c->rtr_chosen, UIW_CM_RTR_WRITE);
    p_send(c);
}
static void p_write_instead_of_read_rtr(struct conf *c)
{
    CHECK_EQ(c->rtr_chosen, UIW_CM_RTR_READ);
    write_at(c, 0, 0, 0);
}
/* The right RTR (a zero-length Write), then a Write to an unknown STag. */
static void p_rtr_then_invalid_write(struct conf *c)
{
    CHECK_EQ(c->rtr_chosen, UIW_CM_RTR_WRITE);
    CHECK_EQ(rawpeer_send_write(&c->peer, 0, 0, NULL, 0), 0);
    p_write_invalid_stag(c);
}

/* The stack reads 64 bytes into R_RW[0..64); the raw peer answers wrongly. */
static void read_resp(struct conf *c, uint32_t stag, uint64_t to, size_t len)
{
    conf_post_read(c, c->region[R_RW], 64, 0x00C0DE00 | 0x01, 0x2000);
    struct uiw_rdmap_read_req rr;
    conf_recv_read_req(c, &rr);
    CHECK_EQ(rr.size, 64);
    CHECK_EQ(rr.sink_stag, c->mr[R_RW]->lkey);
    CHECK_EQ(rr.sink_to, base(c, R_RW));
    CHECK_EQ(rr.src_stag, 0x00C0DE01);
    CHECK_EQ(rr.src_to, 0x2000);
    uint8_t h[UIW_DDP_TAGGED_HDR_LEN];
    rawpeer_tagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_READ_RESP), true, stag ? stag : rr.sink_stag,
                       to ? to : rr.sink_to);
    conf_send(c, h, sizeof(h), payload, len);
}
/* Our zero-length RTR Read (RFC 6581) answered with 64 bytes: at its own sink (STag 1,
 * TO 0), or, with a Read of ours outstanding, at that Read's sink. */
static void rtr_read_resp(struct conf *c, uint32_t stag, uint64_t to)
{
    CHECK_EQ(c->rtr_chosen, UIW_CM_RTR_READ);
    uint8_t h[UIW_DDP_TAGGED_HDR_LEN];
    rawpeer_tagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_READ_RESP), true, stag, to);
    conf_send(c, h, sizeof(h), payload, 64);
}
static void p_rtr_read_resp_with_data(struct conf *c)
{
    rtr_read_resp(c, c->rtr_rr.sink_stag, c->rtr_rr.sink_to);
}
static void p_rtr_read_resp_into_read_sink(struct conf *c)
{
    conf_post_read(c, c->region[R_RW], 64, 0x00C0DE00 | 0x01, 0x2000);
    struct uiw_rdmap_read_req rr;
    conf_recv_read_req(c, &rr);
    CHECK_EQ(rr.sink_stag, c->mr[R_RW]->lkey);
    rtr_read_resp(c, rr.sink_stag, rr.sink_to);
}
/* A Read Response aimed at another local-write region than the Read's sink. */
static void p_read_resp_other_stag(struct conf *c)
{
    read_resp(c, c->mr[R_NOREAD]->rkey, base(c, R_NOREAD), 64);
}
/* Into the sink's region, but outside the Read's sink buffer. */
static void p_read_resp_outside_sink(struct conf *c)
{
    read_resp(c, 0, base(c, R_RW) + 512, 64);
}
/* More bytes than the Read asked for. */
static void p_read_resp_too_long(struct conf *c)
{
    read_resp(c, 0, 0, 128);
}
/* Fewer bytes than the Read asked for (placed where they were aimed), then Last. */
static void p_read_resp_short(struct conf *c)
{
    read_resp(c, 0, 0, 32);
    conf_expect_written(c, c->region[R_RW], payload, 32);
}
/* A zero-length Read Response for a Read of 64 bytes. */
static void p_read_resp_zero_length(struct conf *c)
{
    read_resp(c, 0, 0, 0);
}
/* A first segment of 16 bytes, then one past a hole of 16. */
static void p_read_resp_hole(struct conf *c)
{
    conf_post_read(c, c->region[R_RW], 64, 0x00C0DE00 | 0x01, 0x2000);
    struct uiw_rdmap_read_req rr;
    conf_recv_read_req(c, &rr);
    uint8_t h[UIW_DDP_TAGGED_HDR_LEN];
    rawpeer_tagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_READ_RESP), false, rr.sink_stag, rr.sink_to);
    struct uiw_wire_iov v[2] = {{h, sizeof(h)}, {payload, 16}};
    CHECK_EQ(rawpeer_send_ulpdu(&c->peer, v, 2), 0);
    conf_expect_written(c, c->region[R_RW], payload, 16);
    rawpeer_tagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_READ_RESP), true, rr.sink_stag, rr.sink_to + 32);
    conf_send(c, h, sizeof(h), payload + 32, 32);
}
/* A Send of two segments with a hole between them: MO 0 (16 bytes), then MO 32. */
static void p_send_hole(struct conf *c)
{
    uint8_t h[UIW_DDP_UNTAGGED_HDR_LEN];
    rawpeer_untagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_SEND), false, 0, UIW_DDP_QN_SEND, 1, 0);
    struct uiw_wire_iov v[2] = {{h, sizeof(h)}, {payload, 16}};
    CHECK_EQ(rawpeer_send_ulpdu(&c->peer, v, 2), 0);
    conf_expect_written(c, c->region[R_RECV], payload, 16);
    untagged(c, uiw_rdmap_ctrl(UIW_RDMAP_SEND), 0, UIW_DDP_QN_SEND, 1, 32, 16);
}
/* A legal Read outstanding when the peer violates protection: the Read is flushed. */
static void p_write_invalid_stag_read_pending(struct conf *c)
{
    conf_post_read(c, c->region[R_RW], 64, 0x00C0DE00 | 0x01, 0x2000);
    struct uiw_rdmap_read_req rr;
    conf_recv_read_req(c, &rr);
    p_write_invalid_stag(c);
}

/* A receive whose SGE names no valid STag: the peer's Send hits a local protection error. */
static void p_send_into_bad_receive(struct conf *c)
{
    struct uiw_sge sge = {
        .addr = (uintptr_t)c->region[R_RECV], .length = 64, .lkey = 0x00FACE00 | 0x07};
    struct uiw_recv_wr wr = {.wr_id = 100, .sg_list = &sge, .num_sge = 1};
    struct uiw_recv_wr *bad = NULL;
    CHECK_EQ(uiw_post_recv(c->qp, &wr, &bad), 0);
    c->nrecv = 1;
    p_send(c);
}

/* ---- the table ---- */

struct conf_case {
    const char *name;
    const struct conf_opts *opts;
    void (*provoke)(struct conf *c);
    struct conf_expect e;
};

/* Connection settings: CRC on unless said otherwise. */
static const struct conf_opts o_crc = {.crc = true};
static const struct conf_opts o_norecv = {.crc = true, .nrecv = -1};
static const struct conf_opts o_markers = {.crc = true, .markers = true};
static const struct conf_opts o_init = {.crc = true, .initiator = true};
static const struct conf_opts o_ipv6 = {.crc = true, .family = AF_INET6};
static const struct conf_opts o_rev1 = {.crc = true, .rev = 1};
static const struct conf_opts o_nocrc = {.crc = false};
static const struct conf_opts o_pmarkers = {.crc = true, .peer_markers = true};
static const struct conf_opts o_rtr_w = {.crc = true, .rtr = UIW_CM_RTR_WRITE};
static const struct conf_opts o_init_rtr_w = {
    .crc = true, .initiator = true, .rtr = UIW_CM_RTR_WRITE};
static const struct conf_opts o_init_rtr_r = {
    .crc = true, .initiator = true, .rtr = UIW_CM_RTR_READ};
static const struct conf_opts o_init_rtr_s = {
    .crc = true, .initiator = true, .rtr = UIW_CM_RTR_SEND};
static const struct conf_opts o_rtr_r = {.crc = true, .rtr = UIW_CM_RTR_READ};
static const struct conf_opts o_init_rtr_r_open = {
    .crc = true, .initiator = true, .rtr = UIW_CM_RTR_READ, .rtr_unanswered = true};

static const struct conf_case cases[] = {
    /* Tagged buffer errors (RFC 5041 7.2, EType 1; RFC 5040 8.1.1). */
    {"write_invalid_stag",
     &o_crc,
     p_write_invalid_stag,
     {L_DDP, E_DT, UIW_TERM_DT_INVALID_STAG, M | D, EV_ACC, FLUSH, true, 0}},
    {"write_stag_zero",
     &o_crc,
     p_write_stag_zero,
     {L_DDP, E_DT, UIW_TERM_DT_INVALID_STAG, M | D, EV_ACC, FLUSH, true, 0}},
    {"write_wrong_key",
     &o_crc,
     p_write_wrong_key,
     {L_DDP, E_DT, UIW_TERM_DT_INVALID_STAG, M | D, EV_ACC, FLUSH, true, 0}},
    {"write_past_end",
     &o_crc,
     p_write_past_end,
     {L_DDP, E_DT, UIW_TERM_DT_BASE_BOUNDS, M | D, EV_ACC, FLUSH, true, 0}},
    {"write_below_base",
     &o_crc,
     p_write_below_base,
     {L_DDP, E_DT, UIW_TERM_DT_BASE_BOUNDS, M | D, EV_ACC, FLUSH, true, 0}},
    {"write_other_pd",
     &o_crc,
     p_write_other_pd,
     {L_DDP, E_DT, UIW_TERM_DT_STAG_NOT_ASSOC, M | D, EV_ACC, FLUSH, true, 0}},
    {"write_to_wrap",
     &o_crc,
     p_write_to_wrap,
     {L_DDP, E_DT, UIW_TERM_DT_TO_WRAP, M | D, EV_ACC, FLUSH, true, 0}},
    /* DDP has no access-rights code: RDMAP Remote Protection 2 (RFC 5040 4.8, 8.1.1). */
    {"write_no_access",
     &o_crc,
     p_write_no_access,
     {L_RDMAP, E_RP, UIW_TERM_RP_ACCESS_RIGHTS, M | D, EV_ACC, FLUSH, true, 0}},
    {"write_second_segment_past_end",
     &o_crc,
     p_write_second_segment_past_end,
     {L_DDP, E_DT, UIW_TERM_DT_BASE_BOUNDS, M | D, EV_ACC, FLUSH, true, 0}},
    {"write_bad_ddp_version",
     &o_crc,
     p_write_bad_ddp_version,
     {L_DDP, E_DT, UIW_TERM_DT_INVALID_VERSION, M | D, EV_REQ, FLUSH, true, 0}},
    {"write_after_remote_invalidate",
     &o_crc,
     p_write_after_remote_invalidate,
     {L_DDP, E_DT, UIW_TERM_DT_INVALID_STAG, M | D, EV_ACC, FLUSH, true, 0}},
    {"write_after_second_remote_invalidate",
     &o_crc,
     p_write_after_second_remote_invalidate,
     {L_DDP, E_DT, UIW_TERM_DT_INVALID_STAG, M | D, EV_ACC, FLUSH, true, 0}},
    /* Read Responses that do not match the Read (RFC 5040 8.1.1: a response may only
     * place into the Data Sink buffer of its request). */
    {"read_resp_other_stag",
     &o_crc,
     p_read_resp_other_stag,
     {L_DDP, E_DT, UIW_TERM_DT_INVALID_STAG, M | D, EV_ACC, FLUSH, true, 0}},
    {"read_resp_outside_sink",
     &o_crc,
     p_read_resp_outside_sink,
     {L_DDP, E_DT, UIW_TERM_DT_BASE_BOUNDS, M | D, EV_ACC, FLUSH, true, 0}},
    {"read_resp_too_long",
     &o_crc,
     p_read_resp_too_long,
     {L_DDP, E_DT, UIW_TERM_DT_BASE_BOUNDS, M | D, EV_ACC, FLUSH, true, 0}},
    /* A Read Response that is short, empty or has a hole (RFC 5041 has no code of its
     * own: Base or Bounds, as Linux siw) would complete the Read with bytes that never
     * arrived. */
    {"read_resp_short",
     &o_crc,
     p_read_resp_short,
     {L_DDP, E_DT, UIW_TERM_DT_BASE_BOUNDS, M | D, EV_REQ, FLUSH, true, UIW_WC_BAD_RESP_ERR}},
    {"read_resp_zero_length",
     &o_crc,
     p_read_resp_zero_length,
     {L_DDP, E_DT, UIW_TERM_DT_BASE_BOUNDS, M | D, EV_REQ, FLUSH, true, UIW_WC_BAD_RESP_ERR}},
    {"read_resp_hole",
     &o_crc,
     p_read_resp_hole,
     {L_DDP, E_DT, UIW_TERM_DT_BASE_BOUNDS, M | D, EV_REQ, FLUSH, true, UIW_WC_BAD_RESP_ERR}},
    /* The response to our zero-length RTR Read carries data: longer than its sink of no
     * bytes (RFC 5041 7.2 / 8.2: Base or Bounds), placed nowhere, even where a Read of
     * ours that follows it would place. */
    {"rtr_read_resp_with_data",
     &o_init_rtr_r_open,
     p_rtr_read_resp_with_data,
     {L_DDP, E_DT, UIW_TERM_DT_BASE_BOUNDS, M | D, EV_ACC, FLUSH, true, 0}},
    {"rtr_read_resp_into_read_sink",
     &o_init_rtr_r_open,
     p_rtr_read_resp_into_read_sink,
     {L_DDP, E_DT, UIW_TERM_DT_BASE_BOUNDS, M | D, EV_ACC, FLUSH, true, UIW_WC_WR_FLUSH_ERR}},
    {"write_invalid_stag_read_pending",
     &o_crc,
     p_write_invalid_stag_read_pending,
     {L_DDP, E_DT, UIW_TERM_DT_INVALID_STAG, M | D, EV_ACC, FLUSH, true, UIW_WC_WR_FLUSH_ERR}},
    /* Read Request source checks: RDMAP Remote Protection with the RDMA header. */
    {"read_invalid_stag",
     &o_crc,
     p_read_invalid_stag,
     {L_RDMAP, E_RP, UIW_TERM_RP_INVALID_STAG, M | D | R, EV_ACC, FLUSH, true, 0}},
    {"read_past_end",
     &o_crc,
     p_read_past_end,
     {L_RDMAP, E_RP, UIW_TERM_RP_BASE_BOUNDS, M | D | R, EV_ACC, FLUSH, true, 0}},
    {"read_no_access",
     &o_crc,
     p_read_no_access,
     {L_RDMAP, E_RP, UIW_TERM_RP_ACCESS_RIGHTS, M | D | R, EV_ACC, FLUSH, true, 0}},
    {"read_other_pd",
     &o_crc,
     p_read_other_pd,
     {L_RDMAP, E_RP, UIW_TERM_RP_STAG_NOT_ASSOC, M | D | R, EV_ACC, FLUSH, true, 0}},
    {"read_to_wrap",
     &o_crc,
     p_read_to_wrap,
     {L_RDMAP, E_RP, UIW_TERM_RP_TO_WRAP, M | D | R, EV_ACC, FLUSH, true, 0}},
    /* Send with Invalidate (RFC 5040 5.3): 'STag cannot be invalidated'. */
    {"send_inv_unknown_stag",
     &o_crc,
     p_send_inv_unknown,
     {L_RDMAP, E_RO, UIW_TERM_RO_CANT_INVALIDATE, M | D, EV_ACC, UIW_WC_LOC_ACCESS_ERR, false, 0}},
    {"send_inv_not_invalidatable",
     &o_crc,
     p_send_inv_not_invalidatable,
     {L_RDMAP, E_RO, UIW_TERM_RO_CANT_INVALIDATE, M | D, EV_ACC, UIW_WC_LOC_ACCESS_ERR, false, 0}},
    /* An STag of another PD (another connection's): Remote Protection, as Linux siw. */
    {"send_inv_other_pd",
     &o_crc,
     p_send_inv_other_pd,
     {L_RDMAP, E_RP, UIW_TERM_RP_CANT_INVALIDATE, M | D, EV_ACC, UIW_WC_LOC_ACCESS_ERR, false, 0}},
    /* Untagged buffer errors (RFC 5041 7.2, EType 2). */
    {"send_no_buffer",
     &o_norecv,
     p_send,
     {L_DDP, E_DU, UIW_TERM_DU_INVALID_MSN_NO_BUF, M | D, EV_REQ, FLUSH, true, 0}},
    /* A multi-segment Send with a hole (RFC 5041 7.2: Invalid MO, as Linux siw). */
    {"send_hole",
     &o_crc,
     p_send_hole,
     {L_DDP, E_DU, UIW_TERM_DU_INVALID_MO, M | D, EV_REQ, FLUSH, true, 0}},
    {"send_msn_ahead",
     &o_crc,
     p_send_msn_ahead,
     {L_DDP, E_DU, UIW_TERM_DU_INVALID_MSN_RANGE, M | D, EV_REQ, FLUSH, true, 0}},
    {"send_msn_repeated",
     &o_crc,
     p_send_msn_repeated,
     {L_DDP, E_DU, UIW_TERM_DU_INVALID_MSN_RANGE, M | D, EV_REQ, FLUSH, true, 0}},
    {"send_bad_mo",
     &o_crc,
     p_send_bad_mo,
     {L_DDP, E_DU, UIW_TERM_DU_INVALID_MO, M | D, EV_REQ, FLUSH, true, 0}},
    {"send_too_long",
     &o_crc,
     p_send_too_long,
     {L_DDP, E_DU, UIW_TERM_DU_MSG_TOO_LONG, M | D, EV_REQ, UIW_WC_LOC_LEN_ERR, true, 0}},
    {"send_bad_ddp_version",
     &o_crc,
     p_send_bad_ddp_version,
     {L_DDP, E_DU, UIW_TERM_DU_INVALID_VERSION, M | D, EV_REQ, FLUSH, true, 0}},
    {"bad_qn",
     &o_crc,
     p_bad_qn,
     {L_DDP, E_DU, UIW_TERM_DU_INVALID_QN, M | D, EV_REQ, FLUSH, true, 0}},
    {"bad_qn_3",
     &o_crc,
     p_bad_qn_3,
     {L_DDP, E_DU, UIW_TERM_DU_INVALID_QN, M | D, EV_REQ, FLUSH, true, 0}},
    /* RDMAP control (RFC 5040 4.8, Remote Operation). */
    {"bad_rdmap_version",
     &o_crc,
     p_bad_rdmap_version,
     {L_RDMAP, E_RO, UIW_TERM_RO_INVALID_VERSION, M | D, EV_REQ, FLUSH, true, 0}},
    {"unknown_opcode",
     &o_crc,
     p_unknown_opcode,
     {L_RDMAP, E_RO, UIW_TERM_RO_UNEXPECTED_OPCODE, M | D, EV_REQ, FLUSH, true, 0}},
    {"send_opcode_tagged",
     &o_crc,
     p_send_opcode_tagged,
     {L_RDMAP, E_RO, UIW_TERM_RO_UNEXPECTED_OPCODE, M | D, EV_REQ, FLUSH, true, 0}},
    {"write_opcode_untagged",
     &o_crc,
     p_write_opcode_untagged,
     {L_RDMAP, E_RO, UIW_TERM_RO_UNEXPECTED_OPCODE, M | D, EV_REQ, FLUSH, true, 0}},
    {"unexpected_read_response",
     &o_crc,
     p_unexpected_read_response,
     {L_RDMAP, E_RO, UIW_TERM_RO_UNEXPECTED_OPCODE, M | D, EV_REQ, FLUSH, true, 0}},
    {"ddp_reserved_bits",
     &o_crc,
     p_ddp_reserved_bits,
     {L_RDMAP, E_RO, UIW_TERM_RO_UNSPECIFIED, M | D, EV_REQ, FLUSH, true, 0}},
    {"rdmap_reserved_bits",
     &o_crc,
     p_rdmap_reserved_bits,
     {L_RDMAP, E_RO, UIW_TERM_RO_UNSPECIFIED, M | D, EV_REQ, FLUSH, true, 0}},
    {"read_req_truncated",
     &o_crc,
     p_read_req_truncated,
     {L_RDMAP, E_RO, UIW_TERM_RO_UNSPECIFIED, M | D, EV_REQ, FLUSH, true, 0}},
    {"untagged_truncated",
     &o_crc,
     p_untagged_truncated,
     {L_RDMAP, E_RO, UIW_TERM_RO_UNSPECIFIED, 0, EV_REQ, FLUSH, true, 0}},
    /* MPA (RFC 5044 4-6). */
    {"crc_error", &o_crc, p_crc_error, {L_LLP, E_MPA, UIW_TERM_MPA_CRC, 0, EV_FAT, FLUSH, true, 0}},
    {"marker_mismatch",
     &o_markers,
     p_marker_mismatch,
     {L_LLP, E_MPA, UIW_TERM_MPA_MARKER, 0, EV_FAT, FLUSH, true, 0}},
    {"ulpdu_too_short",
     &o_crc,
     p_ulpdu_too_short,
     {L_LLP, E_MPA, UIW_TERM_MPA_MARKER, 0, EV_FAT, FLUSH, true, 0}},
    /* RFC 6581 peer-to-peer: MPA error 7, No Matching RTR. */
    {"rtr_send_instead_of_write",
     &o_rtr_w,
     p_send_instead_of_rtr,
     {L_LLP, E_MPA, UIW_TERM_MPA_NO_MATCHING_RTR, 0, EV_FAT, FLUSH, true, 0}},
    {"rtr_write_instead_of_read",
     &o_rtr_r,
     p_write_instead_of_read_rtr,
     {L_LLP, E_MPA, UIW_TERM_MPA_NO_MATCHING_RTR, 0, EV_FAT, FLUSH, true, 0}},
    {"rtr_then_write_invalid_stag",
     &o_rtr_w,
     p_rtr_then_invalid_write,
     {L_DDP, E_DT, UIW_TERM_DT_INVALID_STAG, M | D, EV_ACC, FLUSH, true, 0}},
    /* A local protection error caused by the peer's Send: the receive completes with
     * LOC_PROT_ERR; the stream ends with RDMAP/Remote Operation/catastrophic (local to the
     * stream); the error is local, so no async event is required. */
    {"send_into_bad_receive",
     &o_norecv,
     p_send_into_bad_receive,
     {L_RDMAP, E_RO, UIW_TERM_RO_CATASTROPHIC_STREAM, 0, -1, UIW_WC_LOC_PROT_ERR, true, 0}},
    /* The same rules in other connection settings. */
    {"initiator_rtr_write_then_bad_qn",
     &o_init_rtr_w,
     p_bad_qn,
     {L_DDP, E_DU, UIW_TERM_DU_INVALID_QN, M | D, EV_REQ, FLUSH, true, 0}},
    {"initiator_rtr_read_then_read_no_access",
     &o_init_rtr_r,
     p_read_no_access,
     {L_RDMAP, E_RP, UIW_TERM_RP_ACCESS_RIGHTS, M | D | R, EV_ACC, FLUSH, true, 0}},
    {"initiator_rtr_send_then_send_too_long",
     &o_init_rtr_s,
     p_send_too_long,
     {L_DDP, E_DU, UIW_TERM_DU_MSG_TOO_LONG, M | D, EV_REQ, UIW_WC_LOC_LEN_ERR, true, 0}},
    {"stack_markers_write_invalid_stag",
     &o_pmarkers,
     p_write_invalid_stag,
     {L_DDP, E_DT, UIW_TERM_DT_INVALID_STAG, M | D, EV_ACC, FLUSH, true, 0}},
    {"initiator_write_invalid_stag",
     &o_init,
     p_write_invalid_stag,
     {L_DDP, E_DT, UIW_TERM_DT_INVALID_STAG, M | D, EV_ACC, FLUSH, true, 0}},
    {"initiator_read_other_pd",
     &o_init,
     p_read_other_pd,
     {L_RDMAP, E_RP, UIW_TERM_RP_STAG_NOT_ASSOC, M | D | R, EV_ACC, FLUSH, true, 0}},
    {"ipv6_write_past_end",
     &o_ipv6,
     p_write_past_end,
     {L_DDP, E_DT, UIW_TERM_DT_BASE_BOUNDS, M | D, EV_ACC, FLUSH, true, 0}},
    {"rev1_bad_qn",
     &o_rev1,
     p_bad_qn,
     {L_DDP, E_DU, UIW_TERM_DU_INVALID_QN, M | D, EV_REQ, FLUSH, true, 0}},
    {"nocrc_send_too_long",
     &o_nocrc,
     p_send_too_long,
     {L_DDP, E_DU, UIW_TERM_DU_MSG_TOO_LONG, M | D, EV_REQ, UIW_WC_LOC_LEN_ERR, true, 0}},
    {"markers_write_no_access",
     &o_markers,
     p_write_no_access,
     {L_RDMAP, E_RP, UIW_TERM_RP_ACCESS_RIGHTS, M | D, EV_ACC, FLUSH, true, 0}},
};

static void run_case(const char *name)
{
    const struct conf_case *k = NULL;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (strcmp(cases[i].name, name) == 0)
            k = &cases[i];
    CHECK(k != NULL);
    for (size_t i = 0; i < sizeof(payload); i++)
        payload[i] = (uint8_t)(0x5A + i * 7);
    struct conf *c = calloc(1, sizeof(*c));
    CHECK(c != NULL);
    conf_open(c, k->opts);
    k->provoke(c);
    conf_check_terminate(c, &k->e);
    conf_close(c);
    free(c);
}

/* Tagged buffer errors */
TEST(term_write_invalid_stag)
{
    run_case("write_invalid_stag");
}
TEST(term_write_stag_zero)
{
    run_case("write_stag_zero");
}
TEST(term_write_wrong_key)
{
    run_case("write_wrong_key");
}
TEST(term_write_past_end)
{
    run_case("write_past_end");
}
TEST(term_write_below_base)
{
    run_case("write_below_base");
}
TEST(term_write_other_pd)
{
    run_case("write_other_pd");
}
TEST(term_write_to_wrap)
{
    run_case("write_to_wrap");
}
TEST(term_write_no_access)
{
    run_case("write_no_access");
}
TEST(term_write_second_segment_past_end)
{
    run_case("write_second_segment_past_end");
}
TEST(term_write_bad_ddp_version)
{
    run_case("write_bad_ddp_version");
}
TEST(term_write_after_remote_invalidate)
{
    run_case("write_after_remote_invalidate");
}
TEST(term_write_after_second_remote_invalidate)
{
    run_case("write_after_second_remote_invalidate");
}
/* Read Responses that do not match the Read */
TEST(term_read_resp_other_stag)
{
    run_case("read_resp_other_stag");
}
TEST(term_read_resp_outside_sink)
{
    run_case("read_resp_outside_sink");
}
TEST(term_read_resp_too_long)
{
    run_case("read_resp_too_long");
}
TEST(term_read_resp_short)
{
    run_case("read_resp_short");
}
TEST(term_read_resp_zero_length)
{
    run_case("read_resp_zero_length");
}
TEST(term_read_resp_hole)
{
    run_case("read_resp_hole");
}
TEST(term_send_hole)
{
    run_case("send_hole");
}
TEST(term_rtr_read_resp_with_data)
{
    run_case("rtr_read_resp_with_data");
}
TEST(term_rtr_read_resp_into_read_sink)
{
    run_case("rtr_read_resp_into_read_sink");
}
TEST(term_write_invalid_stag_read_pending)
{
    run_case("write_invalid_stag_read_pending");
}
/* Read Request errors */
TEST(term_read_invalid_stag)
{
    run_case("read_invalid_stag");
}
TEST(term_read_past_end)
{
    run_case("read_past_end");
}
TEST(term_read_no_access)
{
    run_case("read_no_access");
}
TEST(term_read_other_pd)
{
    run_case("read_other_pd");
}
TEST(term_read_to_wrap)
{
    run_case("read_to_wrap");
}
/* Send with Invalidate */
TEST(term_send_inv_unknown_stag)
{
    run_case("send_inv_unknown_stag");
}
TEST(term_send_inv_not_invalidatable)
{
    run_case("send_inv_not_invalidatable");
}
TEST(term_send_inv_other_pd)
{
    run_case("send_inv_other_pd");
}
/* Untagged buffer errors */
TEST(term_send_no_buffer)
{
    run_case("send_no_buffer");
}
TEST(term_send_msn_ahead)
{
    run_case("send_msn_ahead");
}
TEST(term_send_msn_repeated)
{
    run_case("send_msn_repeated");
}
TEST(term_send_bad_mo)
{
    run_case("send_bad_mo");
}
TEST(term_send_too_long)
{
    run_case("send_too_long");
}
TEST(term_send_bad_ddp_version)
{
    run_case("send_bad_ddp_version");
}
TEST(term_bad_qn)
{
    run_case("bad_qn");
}
TEST(term_bad_qn_3)
{
    run_case("bad_qn_3");
}
/* RDMAP control */
TEST(term_bad_rdmap_version)
{
    run_case("bad_rdmap_version");
}
TEST(term_unknown_opcode)
{
    run_case("unknown_opcode");
}
TEST(term_send_opcode_tagged)
{
    run_case("send_opcode_tagged");
}
TEST(term_write_opcode_untagged)
{
    run_case("write_opcode_untagged");
}
TEST(term_unexpected_read_response)
{
    run_case("unexpected_read_response");
}
TEST(term_ddp_reserved_bits)
{
    run_case("ddp_reserved_bits");
}
TEST(term_rdmap_reserved_bits)
{
    run_case("rdmap_reserved_bits");
}
TEST(term_read_req_truncated)
{
    run_case("read_req_truncated");
}
TEST(term_untagged_truncated)
{
    run_case("untagged_truncated");
}
/* MPA */
TEST(term_crc_error)
{
    run_case("crc_error");
}
TEST(term_marker_mismatch)
{
    run_case("marker_mismatch");
}
TEST(term_ulpdu_too_short)
{
    run_case("ulpdu_too_short");
}
/* Peer-to-peer RTR */
TEST(term_rtr_send_instead_of_write)
{
    run_case("rtr_send_instead_of_write");
}
TEST(term_rtr_write_instead_of_read)
{
    run_case("rtr_write_instead_of_read");
}
TEST(term_rtr_then_write_invalid_stag)
{
    run_case("rtr_then_write_invalid_stag");
}
/* Local protection error provoked by a Send */
TEST(term_send_into_bad_receive)
{
    run_case("send_into_bad_receive");
}
/* Other connection settings */
TEST(term_initiator_rtr_write_then_bad_qn)
{
    run_case("initiator_rtr_write_then_bad_qn");
}
TEST(term_initiator_rtr_read_then_read_no_access)
{
    run_case("initiator_rtr_read_then_read_no_access");
}
TEST(term_initiator_rtr_send_then_send_too_long)
{
    run_case("initiator_rtr_send_then_send_too_long");
}
TEST(term_stack_markers_write_invalid_stag)
{
    run_case("stack_markers_write_invalid_stag");
}
TEST(term_initiator_write_invalid_stag)
{
    run_case("initiator_write_invalid_stag");
}
TEST(term_initiator_read_other_pd)
{
    run_case("initiator_read_other_pd");
}
TEST(term_ipv6_write_past_end)
{
    run_case("ipv6_write_past_end");
}
TEST(term_rev1_bad_qn)
{
    run_case("rev1_bad_qn");
}
TEST(term_nocrc_send_too_long)
{
    run_case("nocrc_send_too_long");
}
TEST(term_markers_write_no_access)
{
    run_case("markers_write_no_access");
}
