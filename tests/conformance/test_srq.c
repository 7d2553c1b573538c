/*
 * Conformance with a shared receive queue: raw peers on several connections whose QPs take
 * their receives from one SRQ. A receive is taken when a Send's first segment arrives and
 * is that connection's from then on; a Send that finds the SRQ empty gets the DDP
 * Terminate "Invalid MSN - no buffer available" on the wire (RFC 5041 7.2) while the other
 * connections go on; the SRQ's limit event marks the take.
 */
#include <poll.h>
#include <stdlib.h>

#include "conf.h"
#include "test.h"

#define M UIW_TERM_FLAG_M
#define D UIW_TERM_FLAG_D

static uint8_t payload[1024];

static void init_payload(void)
{
    for (size_t i = 0; i < sizeof(payload); i++)
        payload[i] = (uint8_t)(0x3C + i * 11);
}

/* One Send segment from a raw peer (MSN of its QN 0 advances on the last one). */
static void send_seg(struct rawpeer *p, bool last, uint32_t mo, const void *data, size_t len)
{
    uint8_t h[UIW_DDP_UNTAGGED_HDR_LEN];
    rawpeer_untagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_SEND), last, 0, UIW_DDP_QN_SEND,
                         p->msn[UIW_DDP_QN_SEND], mo);
    if (last)
        p->msn[UIW_DDP_QN_SEND]++;
    struct uiw_wire_iov v[2] = {{h, sizeof(h)}, {data, len}};
    CHECK_EQ(rawpeer_send_ulpdu(p, v, len ? 2 : 1), 0);
}

static void expect_recv(struct conf *c, uint64_t wr_id, const struct uiw_qp *qp, uint32_t len,
                        const void *data)
{
    struct uiw_wc wc;
    conf_next_wc(c, &wc);
    if (wc.wr_id != wr_id || wc.status != UIW_WC_SUCCESS)
        uiw_test_fail(__FILE__, __LINE__, "receive %llu: %s, expected %llu",
                      (unsigned long long)wc.wr_id, uiw_wc_status_str(wc.status),
                      (unsigned long long)wr_id);
    CHECK_EQ(wc.opcode, UIW_WC_RECV);
    CHECK_EQ(wc.qp_num, uiw_qp_num(qp));
    CHECK_EQ(wc.byte_len, len);
    uint8_t *at = c->region[R_RECV] + (wr_id - 100) * CONF_RECV_LEN;
    CHECK_MEM(at, data, len);
    conf_expect_written(c, at, data, len);
}

/* The main connection's peer sends a whole Send of len bytes that fails its stream with
 * DDP / untagged / code, having taken `taken` SRQ receives (the first with head_status). */
static void send_failing(struct conf *c, size_t len, int taken, uint8_t code, int head_status)
{
    uint8_t h[UIW_DDP_UNTAGGED_HDR_LEN];
    rawpeer_untagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_SEND), true, 0, UIW_DDP_QN_SEND,
                         c->peer.msn[UIW_DDP_QN_SEND]++, 0);
    conf_send(c, h, sizeof(h), payload, len);
    c->srq_taken = taken;
    const struct conf_expect e = {.layer = UIW_TERM_LAYER_DDP,
                                  .etype = UIW_TERM_DDP_UNTAGGED,
                                  .code = code,
                                  .hdrct = M | D,
                                  .async = UIW_EVENT_QP_REQ_ERR,
                                  .head_status = head_status,
                                  .untouched = true};
    conf_check_terminate(c, &e);
}

/* Sends over three connections into one SRQ: the connection whose first segment arrived
 * first holds the oldest receive even though its Send completes last. */
TEST(srq_sends_on_three_connections)
{
    init_payload();
    static const struct conf_opts o = {.crc = true, .srq = true};
    struct conf *c = calloc(1, sizeof(*c));
    struct conf_conn *b = calloc(1, sizeof(*b)), *d = calloc(1, sizeof(*d));
    CHECK(c && b && d);
    conf_open(c, &o); /* 4 receives: wr_id 100..103 */
    conf_connect_more(c, b);
    conf_connect_more(c, d);
    struct uiw_srq_attr at = {.srq_limit = 4};
    CHECK_EQ(uiw_modify_srq(c->srq, &at, UIW_SRQ_LIMIT), 0);
    /* c's first segment takes the oldest receive: the limit event says when */
    send_seg(&c->peer, false, 0, payload, 100);
    struct uiw_async_event ev;
    conf_expect_async(c, UIW_EVENT_SRQ_LIMIT_REACHED, &ev);
    CHECK(ev.srq == c->srq);
    conf_no_wc(c, 20);
    send_seg(&b->peer, true, 0, payload + 200, 60);
    expect_recv(c, 101, b->qp, 60, payload + 200);
    send_seg(&d->peer, true, 0, payload + 300, 0);
    expect_recv(c, 102, d->qp, 0, payload);
    send_seg(&c->peer, true, 100, payload + 100, 50);
    expect_recv(c, 100, c->qp, 150, payload);
    /* d again: the last receive */
    send_seg(&d->peer, true, 0, payload + 400, 256);
    expect_recv(c, 103, d->qp, 256, payload + 400);
    CHECK_EQ(uiw_query_srq(c->srq, &at), 0);
    CHECK_EQ(at.srq_limit, 0);
    conf_no_wc(c, 20);
    for (int i = 0; i < 3; i++) {
        struct uiw_qp *qp = i == 0 ? c->qp : i == 1 ? b->qp : d->qp;
        struct uiw_qp_attr qa;
        CHECK_EQ(uiw_query_qp(qp, &qa), 0);
        CHECK_EQ(qa.state, UIW_QPS_RTS);
        CHECK(!qa.term_sent);
    }
    conf_conn_close(c, b);
    conf_conn_close(c, d);
    conf_close(c);
    free(b);
    free(d);
    free(c);
}

/* The SRQ runs dry: two connections take its two receives, the third connection's Send
 * gets the DDP Terminate for no buffer; the others go on with receives posted later. */
TEST(srq_exhausted_send_terminates)
{
    init_payload();
    static const struct conf_opts o = {.crc = true, .srq = true, .nrecv = 2};
    struct conf *c = calloc(1, sizeof(*c));
    struct conf_conn *b = calloc(1, sizeof(*b)), *d = calloc(1, sizeof(*d));
    CHECK(c && b && d);
    conf_open(c, &o);
    conf_connect_more(c, b);
    conf_connect_more(c, d);
    send_seg(&b->peer, true, 0, payload, 30);
    expect_recv(c, 100, b->qp, 30, payload);
    send_seg(&d->peer, true, 0, payload + 30, 40);
    expect_recv(c, 101, d->qp, 40, payload + 30);
    c->wc_done = 2;
    send_failing(c, 8, 0, UIW_TERM_DU_INVALID_MSN_NO_BUF, -1); /* posts 999 to the SRQ */
    send_seg(&b->peer, true, 0, payload + 100, 16);
    struct uiw_wc wc;
    conf_next_wc(c, &wc);
    CHECK_EQ(wc.wr_id, 999);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(wc.qp_num, uiw_qp_num(b->qp));
    CHECK_MEM(c->region[R_RECV], payload + 100, 16);
    conf_expect_written(c, c->region[R_RECV], payload + 100, 16);
    conf_conn_close(c, b);
    conf_conn_close(c, d);
    conf_close(c);
    free(b);
    free(d);
    free(c);
}

/* A Send longer than the SRQ receive it took: the receive completes on that connection's
 * QP with a local length error, the Terminate is DDP "message too long", and the SRQ's
 * other receives are not flushed. */
TEST(srq_send_too_long_fails_its_receive)
{
    init_payload();
    static const struct conf_opts o = {.crc = true, .srq = true};
    struct conf *c = calloc(1, sizeof(*c));
    CHECK(c);
    conf_open(c, &o);
    send_failing(c, CONF_RECV_LEN + 1, 1, UIW_TERM_DU_MSG_TOO_LONG, UIW_WC_LOC_LEN_ERR);
    conf_close(c);
    free(c);
}
