/*
 * The raw peer tested against itself: two raw peers on a loopback TCP connection do the
 * MPA handshake, exchange FPDUs with CRC and markers in both directions, and a Terminate;
 * corrupted CRCs and markers, timeouts, EOF and malformed Terminates are reported.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rawpeer.h"
#include "test.h"

struct duo {
    struct rawpeer a; /* initiator */
    struct rawpeer b; /* responder */
};

static void duo_open(struct duo *d, bool crc, bool a_wants_markers, bool b_wants_markers)
{
    uint16_t port = 0;
    int lfd = rawpeer_tcp_listen(AF_INET, &port);
    CHECK(lfd >= 0);
    int fa = rawpeer_tcp_connect(AF_INET, port);
    CHECK(fa >= 0);
    int fb = rawpeer_tcp_accept(lfd, 2000);
    CHECK(fb >= 0);
    close(lfd);
    rawpeer_init(&d->a, fa);
    rawpeer_init(&d->b, fb);
    struct uiw_mpa_frame rq = {.kind = UIW_MPA_REQUEST,
                               .flags = UIW_MPA_FLAG_ENHANCED,
                               .rev = 2,
                               .ird = 3,
                               .ord = 5,
                               .pd = (const uint8_t *)"hello",
                               .pd_len = 5};
    if (crc)
        rq.flags |= UIW_MPA_FLAG_CRC;
    if (a_wants_markers)
        rq.flags |= UIW_MPA_FLAG_MARKERS;
    CHECK_EQ(rawpeer_send_frame(&d->a, &rq), 0);
    uint8_t store[600];
    struct uiw_mpa_frame got;
    CHECK_EQ(rawpeer_recv_frame(&d->b, UIW_MPA_REQUEST, &got, store, sizeof(store), 2000),
             20 + 4 + 5);
    CHECK_EQ(got.rev, 2);
    CHECK_EQ(got.ird, 3);
    CHECK_EQ(got.ord, 5);
    CHECK_EQ(got.pd_len, 5);
    CHECK_MEM(got.pd, "hello", 5);
    struct uiw_mpa_frame rp = {
        .kind = UIW_MPA_REPLY, .flags = UIW_MPA_FLAG_ENHANCED, .rev = 2, .ird = 5, .ord = 3};
    if (b_wants_markers)
        rp.flags |= UIW_MPA_FLAG_MARKERS;
    CHECK_EQ(rawpeer_send_frame(&d->b, &rp), 0);
    CHECK_EQ(rawpeer_recv_frame(&d->a, UIW_MPA_REPLY, &got, store, sizeof(store), 2000), 24);
    CHECK_EQ(got.ird, 5);
    rawpeer_start(&d->a, crc, b_wants_markers, a_wants_markers);
    rawpeer_start(&d->b, crc, a_wants_markers, b_wants_markers);
}

static void duo_close(struct duo *d)
{
    rawpeer_close(&d->a, false);
    rawpeer_close(&d->b, false);
}

TEST(rawpeer_selftest_roundtrip)
{
    struct duo d;
    duo_open(&d, true, true, true);
    uint8_t data[1500];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 13 + 1);
    /* A: a Write spanning several marker intervals, a Send with Invalidate, a Read Request */
    CHECK_EQ(rawpeer_send_write(&d.a, 0x12345678, 0x1000, data, sizeof(data)), 0);
    CHECK_EQ(rawpeer_send_send(&d.a, UIW_RDMAP_SEND_INV, 0xABCD0001, data, 100), 0);
    struct uiw_rdmap_read_req rr = {
        .sink_stag = 1, .sink_to = 2, .size = 3, .src_stag = 4, .src_to = 5};
    CHECK_EQ(rawpeer_send_read_req(&d.a, &rr), 0);
    uint8_t u[2048];
    uint16_t len = 0;
    CHECK_EQ(rawpeer_recv_fpdu(&d.b, u, sizeof(u), &len, 2000), 1);
    CHECK_EQ(len, UIW_DDP_TAGGED_HDR_LEN + sizeof(data));
    struct uiw_ddp_hdr h;
    CHECK_EQ(uiw_ddp_hdr_parse(u, len, &h), UIW_DDP_TAGGED_HDR_LEN);
    CHECK(h.tagged && h.last);
    CHECK_EQ(h.stag, 0x12345678);
    CHECK_EQ(h.to, 0x1000);
    CHECK_EQ(uiw_rdmap_ctrl_opcode(h.rdmap_ctrl), UIW_RDMAP_WRITE);
    CHECK_MEM(u + UIW_DDP_TAGGED_HDR_LEN, data, sizeof(data));
    CHECK_EQ(rawpeer_recv_fpdu(&d.b, u, sizeof(u), &len, 2000), 1);
    CHECK_EQ(len, UIW_DDP_UNTAGGED_HDR_LEN + 100);
    CHECK_EQ(uiw_ddp_hdr_parse(u, len, &h), UIW_DDP_UNTAGGED_HDR_LEN);
    CHECK_EQ(h.qn, 0);
    CHECK_EQ(h.msn, 1);
    CHECK_EQ(h.rsvd_ulp, 0xABCD0001);
    CHECK_EQ(uiw_rdmap_check_ctrl(&h), 0);
    CHECK_MEM(u + UIW_DDP_UNTAGGED_HDR_LEN, data, 100);
    CHECK_EQ(rawpeer_recv_fpdu(&d.b, u, sizeof(u), &len, 2000), 1);
    CHECK_EQ(len, UIW_DDP_UNTAGGED_HDR_LEN + UIW_RDMAP_READ_REQ_LEN);
    CHECK_EQ(uiw_ddp_hdr_parse(u, len, &h), UIW_DDP_UNTAGGED_HDR_LEN);
    CHECK_EQ(h.qn, 1);
    CHECK_EQ(h.msn, 1);
    struct uiw_rdmap_read_req rr2;
    CHECK_EQ(uiw_rdmap_read_req_parse(u + UIW_DDP_UNTAGGED_HDR_LEN, 28, &rr2), 28);
    CHECK_EQ(rr2.src_to, 5);

    /* B: one Send, then a Terminate echoing the Read Request's headers */
    CHECK_EQ(rawpeer_send_send(&d.b, UIW_RDMAP_SEND, 0, "x", 1), 0);
    struct uiw_terminate t = {.layer = UIW_TERM_LAYER_RDMAP,
                              .etype = UIW_TERM_RDMAP_REMOTE_PROTECTION,
                              .code = UIW_TERM_RP_INVALID_STAG,
                              .hdrct = UIW_TERM_FLAG_M | UIW_TERM_FLAG_D | UIW_TERM_FLAG_R,
                              .ddp_seg_len = len,
                              .ddp_hdr_len = UIW_DDP_UNTAGGED_HDR_LEN};
    memcpy(t.ddp_hdr, u, UIW_DDP_UNTAGGED_HDR_LEN);
    memcpy(t.rdma_hdr, u + UIW_DDP_UNTAGGED_HDR_LEN, 28);
    uint8_t tb[UIW_DDP_UNTAGGED_HDR_LEN + 64];
    rawpeer_untagged_hdr(tb, uiw_rdmap_ctrl(UIW_RDMAP_TERMINATE), true, 0, UIW_DDP_QN_TERMINATE, 1,
                         0);
    ssize_t tl = uiw_terminate_encode(&t, tb + UIW_DDP_UNTAGGED_HDR_LEN, 64);
    CHECK_EQ(tl, 4 + 2 + 18 + 28);
    struct uiw_wire_iov v = {tb, UIW_DDP_UNTAGGED_HDR_LEN + (size_t)tl};
    CHECK_EQ(rawpeer_send_ulpdu(&d.b, &v, 1), 0);
    rawpeer_close(&d.b, false);

    struct rawpeer_term term;
    CHECK_EQ(rawpeer_expect_terminate(&d.a, &term, 2000), 0);
    CHECK_EQ(term.fpdus_before, 1);
    CHECK_EQ(term.ddp.msn, 1);
    CHECK_EQ(term.t.layer, UIW_TERM_LAYER_RDMAP);
    CHECK_EQ(term.t.etype, UIW_TERM_RDMAP_REMOTE_PROTECTION);
    CHECK_EQ(term.t.code, UIW_TERM_RP_INVALID_STAG);
    CHECK_EQ(term.t.hdrct, UIW_TERM_FLAG_M | UIW_TERM_FLAG_D | UIW_TERM_FLAG_R);
    CHECK_EQ(term.t.ddp_seg_len, len);
    CHECK_MEM(term.t.ddp_hdr, u, UIW_DDP_UNTAGGED_HDR_LEN);
    CHECK_MEM(term.t.rdma_hdr, u + UIW_DDP_UNTAGGED_HDR_LEN, 28);
    CHECK(!term.t.siw_order);
    CHECK_EQ(rawpeer_wait_eof(&d.a, 2000, NULL), 1);
    duo_close(&d);
}

TEST(rawpeer_selftest_bad_crc)
{
    struct duo d;
    duo_open(&d, true, false, false);
    uint8_t h[UIW_DDP_TAGGED_HDR_LEN];
    rawpeer_tagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_WRITE), true, 0x100, 0);
    struct uiw_wire_iov v = {h, sizeof(h)};
    uint8_t f[64];
    ssize_t n = rawpeer_frame(&d.a, &v, 1, f, sizeof(f));
    CHECK_EQ(n, (ssize_t)uiw_fpdu_len(sizeof(h)));
    f[n - 1] ^= 1;
    CHECK_EQ(rawpeer_write(&d.a, f, (size_t)n), 0);
    uint8_t u[64];
    uint16_t len;
    CHECK_EQ(rawpeer_recv_fpdu(&d.b, u, sizeof(u), &len, 2000), UIW_E_FPDU_CRC);
    duo_close(&d);
}

TEST(rawpeer_selftest_bad_marker)
{
    struct duo d;
    duo_open(&d, false, false, true); /* B wants markers: A sends them */
    uint8_t h[UIW_DDP_TAGGED_HDR_LEN];
    rawpeer_tagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_WRITE), true, 0x100, 0);
    struct uiw_wire_iov v = {h, sizeof(h)};
    uint8_t f[64];
    ssize_t n = rawpeer_frame(&d.a, &v, 1, f, sizeof(f));
    CHECK_EQ(n, (ssize_t)uiw_fpdu_len(sizeof(h)) + 4); /* one marker at stream offset 0 */
    CHECK_EQ(f[3], 0);
    f[3] = 4;
    CHECK_EQ(rawpeer_write(&d.a, f, (size_t)n), 0);
    uint8_t u[64];
    uint16_t len;
    CHECK_EQ(rawpeer_recv_fpdu(&d.b, u, sizeof(u), &len, 2000), UIW_E_FPDU_MARKER);
    duo_close(&d);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

TEST(rawpeer_selftest_bounded_waits)
{
    struct duo d;
    duo_open(&d, false, false, false);
    uint8_t u[64];
    uint16_t len;
    uint64_t t0 = now_ms();
    CHECK_EQ(rawpeer_recv_fpdu(&d.b, u, sizeof(u), &len, 100), -ETIMEDOUT);
    CHECK(now_ms() - t0 >= 90);
    CHECK_EQ(rawpeer_wait_eof(&d.b, 50, NULL), 0);
    /* A non-Terminate FPDU, then EOF: no Terminate. */
    CHECK_EQ(rawpeer_send_send(&d.a, UIW_RDMAP_SEND, 0, "abc", 3), 0);
    rawpeer_close(&d.a, false);
    struct rawpeer_term term;
    CHECK_EQ(rawpeer_expect_terminate(&d.b, &term, 2000), -ENODATA);
    CHECK_EQ(term.fpdus_before, 1);
    duo_close(&d);

    /* Bytes before the EOF are reported. */
    duo_open(&d, false, false, false);
    CHECK_EQ(rawpeer_send_send(&d.a, UIW_RDMAP_SEND, 0, "abc", 3), 0);
    rawpeer_close(&d.a, false);
    size_t extra = 0;
    CHECK_EQ(rawpeer_wait_eof(&d.b, 2000, &extra), -EPROTO);
    CHECK_EQ(extra, uiw_fpdu_len(UIW_DDP_UNTAGGED_HDR_LEN + 3));
    duo_close(&d);

    /* A message on QN 2 that is not a Terminate; an FPDU cut short by EOF. */
    duo_open(&d, false, false, false);
    uint8_t b[UIW_DDP_UNTAGGED_HDR_LEN + 4] = {0};
    rawpeer_untagged_hdr(b, uiw_rdmap_ctrl(UIW_RDMAP_SEND), true, 0, UIW_DDP_QN_TERMINATE, 1, 0);
    struct uiw_wire_iov v = {b, sizeof(b)};
    CHECK_EQ(rawpeer_send_ulpdu(&d.a, &v, 1), 0);
    CHECK_EQ(rawpeer_expect_terminate(&d.b, &term, 2000), -EPROTO);
    uint8_t f[64];
    ssize_t n = rawpeer_frame(&d.a, &v, 1, f, sizeof(f));
    CHECK(n > 10);
    CHECK_EQ(rawpeer_write(&d.a, f, 10), 0);
    rawpeer_close(&d.a, false);
    CHECK_EQ(rawpeer_recv_fpdu(&d.b, u, sizeof(u), &len, 2000), -EPIPE);
    duo_close(&d);
}

/* An abortive close is reported as a reset, and only that: an orderly close is an EOF. */
TEST(rawpeer_selftest_reset_seen)
{
    struct duo d;
    duo_open(&d, false, false, false);
    rawpeer_close(&d.a, true);
    uint8_t u[64];
    uint16_t len;
    CHECK_EQ(rawpeer_recv_fpdu(&d.b, u, sizeof(u), &len, 2000), -ECONNRESET);
    duo_close(&d);

    duo_open(&d, false, false, false);
    rawpeer_close(&d.a, false);
    CHECK_EQ(rawpeer_recv_fpdu(&d.b, u, sizeof(u), &len, 2000), 0);
    duo_close(&d);
}
