/* Connection life: RTR, interleaving, flush on connection loss, graceful and abortive
 * close, CQ notification and overflow, concurrent posting. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteorder.h"
#include "pair.h"
#include "rnic/engine.h"
#include "test.h"

#define RW (UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | UIW_ACCESS_REMOTE_READ)
#define LW UIW_ACCESS_LOCAL_WRITE

static void rtr_case(enum uiw__rtr rtr)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.rtr = rtr;
    pair_init(&p, &o, true);
    struct uiw_mr *b1 = pair_mr(&p, 1, 64, RW, 0);
    struct uiw_mr *b0 = pair_mr(&p, 0, 64, RW, 0);
    pair_post_recv(&p, 0, 1, b0, 0, 64);
    /* the responder (side 1) sends nothing before the RTR arrived */
    CHECK_EQ(pair_post(&p, 1, 1, UIW_WR_SEND, UIW_SEND_SIGNALED, b1, 0, 8, 0, 0), 0);
    CHECK_EQ(pair_tx_pending(&p, 1), 0);
    size_t rtr_len = rtr == UIW__RTR_READ    ? uiw_fpdu_len(46)
                     : rtr == UIW__RTR_WRITE ? uiw_fpdu_len(14)
                                             : uiw_fpdu_len(18);
    CHECK_EQ(pair_tx_pending(&p, 0), rtr_len);
    pair_pump(&p);
    CHECK_EQ(pair_wc(&p, 1, true).status, UIW_WC_SUCCESS);
    CHECK_EQ(pair_wc(&p, 0, false).byte_len, 8);
    /* the RTR produced no completions of its own */
    CHECK_EQ(pair_nwc(&p, 0, true) + pair_nwc(&p, 1, false), 0);
    /* and both stay usable: a Read and a Send the other way */
    pair_post_recv(&p, 1, 2, b1, 0, 64);
    CHECK_EQ(pair_post(&p, 0, 2, UIW_WR_RDMA_READ, UIW_SEND_SIGNALED, b0, 0, 8, (uintptr_t)b1->addr,
                       b1->rkey),
             0);
    CHECK_EQ(pair_post(&p, 0, 3, UIW_WR_SEND, UIW_SEND_SIGNALED, b0, 0, 4, 0, 0), 0);
    pair_pump(&p);
    CHECK_EQ(pair_wc(&p, 0, true).status, UIW_WC_SUCCESS);
    CHECK_EQ(pair_wc(&p, 0, true).status, UIW_WC_SUCCESS);
    CHECK_EQ(pair_wc(&p, 1, false).byte_len, 4);
    pair_mr_free(b0);
    pair_mr_free(b1);
    pair_free(&p);
}

TEST(rtr_zero_length_write)
{
    rtr_case(UIW__RTR_WRITE);
}

TEST(rtr_zero_length_read)
{
    rtr_case(UIW__RTR_READ);
}

TEST(rtr_zero_length_send)
{
    rtr_case(UIW__RTR_SEND);
}

/* Without a negotiated RTR the responder (side 1) still sends nothing before it has
 * validated the initiator's first FPDU (RFC 5044 7.1.2); what it posts meanwhile waits,
 * local operations run. */
TEST(responder_silent_before_first_fpdu)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.crc = true;
    pair_init(&p, &o, true);
    struct uiw_mr *b1 = pair_mr(&p, 1, 64, RW, 0x11);
    struct uiw_mr *b0 = pair_mr(&p, 0, 64, RW, 0);
    struct uiw_mr *fr = uiw_alloc_mr(p.s[1].pd, 64);
    CHECK(fr);
    pair_post_recv(&p, 0, 1, b0, 0, 64);
    pair_post_recv(&p, 1, 2, b1, 32, 32);
    struct uiw_send_wr reg = {.wr_id = 3, .opcode = UIW_WR_REG_MR, .send_flags = UIW_SEND_SIGNALED};
    reg.wr.reg.mr = fr;
    reg.wr.reg.key = fr->rkey;
    reg.wr.reg.addr = b1->addr;
    reg.wr.reg.length = 64;
    reg.wr.reg.access = LW;
    struct uiw_send_wr *bad = NULL;
    CHECK_EQ(uiw_post_send(p.s[1].qp, &reg, &bad), 0);
    CHECK_EQ(pair_post(&p, 1, 4, UIW_WR_SEND, UIW_SEND_SIGNALED, b1, 0, 8, 0, 0), 0);
    CHECK_EQ(pair_post(&p, 1, 5, UIW_WR_RDMA_WRITE, UIW_SEND_SIGNALED, b1, 0, 16,
                       (uintptr_t)b0->addr + 16, b0->rkey),
             0);
    CHECK_EQ(pair_tx_pending(&p, 1), 0);
    CHECK(!(uiw__qp_want(p.s[1].qp) & UIW__WANT_TX));
    struct uiw_wc wc = pair_wc(&p, 1, true); /* the local operation ran */
    CHECK_EQ(wc.wr_id, 3);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(pair_nwc(&p, 1, true), 0);
    /* the initiator's first FPDU releases it */
    CHECK_EQ(pair_post(&p, 0, 6, UIW_WR_SEND, UIW_SEND_SIGNALED, b0, 0, 4, 0, 0), 0);
    pair_pump(&p);
    CHECK_EQ(pair_wc(&p, 1, false).byte_len, 4);
    CHECK_EQ(pair_wc(&p, 1, true).wr_id, 4);
    CHECK_EQ(pair_wc(&p, 1, true).wr_id, 5);
    CHECK_EQ(pair_wc(&p, 0, true).wr_id, 6);
    wc = pair_wc(&p, 0, false);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(wc.byte_len, 8);
    CHECK_MEM((uint8_t *)b0->addr + 16, b1->addr, 16);
    pair_mr_free(b0);
    pair_mr_free(b1);
    CHECK_EQ(uiw_dereg_mr(fr), 0);
    pair_free(&p);
}

/* A held responder that closes sends nothing, a Terminate neither: it closes at once and
 * what it had queued is flushed. */
TEST(responder_close_before_first_fpdu)
{
    for (int graceful = 0; graceful < 2; graceful++) {
        struct pair p;
        struct pair_opts o;
        pair_opts_default(&o);
        pair_init(&p, &o, true);
        struct uiw_mr *b1 = pair_mr(&p, 1, 64, RW, 0);
        CHECK_EQ(pair_post(&p, 1, 1, UIW_WR_SEND, UIW_SEND_SIGNALED, b1, 0, 8, 0, 0), 0);
        if (graceful)
            CHECK_EQ(uiw__qp_close(p.s[1].qp, true), 0);
        else
            CHECK_EQ(uiw_modify_qp_state(p.s[1].qp, UIW_QPS_ERROR), 0);
        CHECK_EQ(pair_tx_pending(&p, 1), 0);
        CHECK(uiw__qp_want(p.s[1].qp) & UIW__WANT_CLOSE);
        uiw__qp_conn_lost(p.s[1].qp, 0);
        struct uiw_wc wc = pair_wc(&p, 1, true);
        CHECK_EQ(wc.wr_id, 1);
        CHECK_EQ(wc.status, UIW_WC_WR_FLUSH_ERR);
        struct uiw_qp_attr a;
        CHECK_EQ(uiw_query_qp(p.s[1].qp, &a), 0);
        CHECK(!a.term_sent);
        CHECK_EQ(p.s[1].cap_len, 0);
        pair_mr_free(b1);
        pair_free(&p);
    }
}

TEST(rtr_mismatch)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.rtr = UIW__RTR_WRITE;
    pair_init(&p, &o, false);
    pair_start(&p);
    /* the initiator's first message is a Send instead of the zero-length Write */
    pair_discard_tx(&p, 0);
    uint8_t ul[18] = {0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0};
    struct uiw_fpdu_tx ftx;
    uiw_fpdu_tx_init(&ftx, false, false);
    uint8_t buf[64];
    struct uiw_wire_iov v = {ul, 18};
    ssize_t len = uiw_fpdu_tx_encode(&ftx, &v, 1, buf, sizeof(buf));
    CHECK_EQ(pair_feed(&p, 1, buf, (size_t)len), UIW_E_RNIC_NO_RTR);
    struct uiw_qp_attr a;
    CHECK_EQ(uiw_query_qp(p.s[1].qp, &a), 0);
    CHECK_EQ(a.state, UIW_QPS_TERMINATE);
    CHECK_EQ(a.term_layer, UIW_TERM_LAYER_LLP);
    CHECK_EQ(a.term_code, UIW_TERM_MPA_NO_MATCHING_RTR);
    CHECK(pair_tx_pending(&p, 1) > 0); /* the Terminate */
    pair_free(&p);
}

TEST(send_interleaves_with_read_response)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    struct uiw_mr *sink = pair_mr(&p, 0, 3000, LW, 0);
    struct uiw_mr *rb = pair_mr(&p, 0, 100, LW, 0);
    pair_post_recv(&p, 0, 9, rb, 0, 100);
    CHECK_EQ(
        pair_post(&p, 0, 1, UIW_WR_RDMA_READ, UIW_SEND_SIGNALED, sink, 0, 3000, 0x1000, 0x4242), 0);
    pair_discard_tx(&p, 0); /* the Read Request went out; we play the responder */
    static uint8_t data[3000];
    for (int i = 0; i < 3000; i++)
        data[i] = (uint8_t)(i * 13);
    struct uiw_fpdu_tx ftx;
    uiw_fpdu_tx_init(&ftx, false, false);
    uint8_t h[18], buf[4096];
    /* Read Response part 1 (not last), a Send, Read Response part 2 (last) */
    for (int step = 0; step < 3; step++) {
        struct uiw_wire_iov v[2];
        if (step == 1) {
            uint8_t s[18] = {0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0};
            memcpy(h, s, 18);
            v[0] = (struct uiw_wire_iov){h, 18};
            v[1] = (struct uiw_wire_iov){"interleaved", 11};
        } else {
            size_t off = step == 0 ? 0 : 1500;
            h[0] = step == 0 ? 0x81 : 0xC1;
            h[1] = 0x42;
            uiw__put_be32(h + 2, sink->lkey);
            uiw__put_be64(h + 6, (uintptr_t)sink->addr + off);
            v[0] = (struct uiw_wire_iov){h, 14};
            v[1] = (struct uiw_wire_iov){data + off, 1500};
        }
        ssize_t len = uiw_fpdu_tx_encode(&ftx, v, 2, buf, sizeof(buf));
        CHECK(len > 0);
        CHECK_EQ(pair_feed(&p, 0, buf, (size_t)len), 0);
        if (step == 1) {
            struct uiw_wc wc = pair_wc(&p, 0, false);
            CHECK_EQ(wc.byte_len, 11);
            CHECK_EQ(pair_nwc(&p, 0, true), 0); /* the Read is not done yet */
        }
    }
    struct uiw_wc wc = pair_wc(&p, 0, true);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(wc.byte_len, 3000);
    CHECK_MEM(sink->addr, data, 3000);
    CHECK_MEM(rb->addr, "interleaved", 11);
    pair_mr_free(sink);
    pair_mr_free(rb);
    pair_free(&p);
}

TEST(conn_lost_flushes_everything)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    struct uiw_mr *b = pair_mr(&p, 0, 4096, RW, 0);
    for (int i = 0; i < 3; i++)
        pair_post_recv(&p, 0, (uint64_t)(100 + i), b, 0, 64);
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_RDMA_READ, 0, b, 0, 64, 0x1000, 0x4242), 0);
    CHECK_EQ(pair_post(&p, 0, 2, UIW_WR_SEND, 0, b, 0, 64, 0, 0), 0);
    CHECK_EQ(pair_post(&p, 0, 3, UIW_WR_RDMA_WRITE, 0, b, 0, 64, 0x1000, 0x4242), 0);
    pair_discard_tx(&p, 0); /* all sent; the Read waits for its response */
    CHECK_EQ(pair_post(&p, 0, 4, UIW_WR_SEND, 0, b, 0, 64, 0, 0), 0); /* not sent */
    uiw__qp_conn_lost(p.s[0].qp, -ECONNRESET);
    struct uiw_wc wc = pair_wc(&p, 0, true);
    CHECK_EQ(wc.wr_id, 1);
    CHECK_EQ(wc.status, UIW_WC_RETRY_EXC_ERR);
    /* 2 and 3 were sent and unsignalled: nothing; 4 is flushed */
    wc = pair_wc(&p, 0, true);
    CHECK_EQ(wc.wr_id, 4);
    CHECK_EQ(wc.status, UIW_WC_WR_FLUSH_ERR);
    for (int i = 0; i < 3; i++) {
        wc = pair_wc(&p, 0, false);
        CHECK_EQ(wc.wr_id, (uint64_t)(100 + i));
        CHECK_EQ(wc.status, UIW_WC_WR_FLUSH_ERR);
    }
    CHECK_EQ(pair_nwc(&p, 0, true) + pair_nwc(&p, 0, false), 0);
    struct uiw_async_event ev;
    CHECK(pair_event(&p, 0, UIW_EVENT_QP_FATAL, &ev));
    CHECK_EQ(ev.code, -ECONNRESET);
    CHECK(pair_event(&p, 0, UIW_EVENT_CONN_CLOSED, &ev));
    CHECK_EQ(uiw__qp_state(p.s[0].qp), UIW_QPS_ERROR);
    CHECK(uiw__qp_want(p.s[0].qp) & UIW__WANT_CLOSE);
    /* idempotent, and later posts flush */
    uiw__qp_conn_lost(p.s[0].qp, -ECONNRESET);
    CHECK(!pair_event(&p, 0, UIW_EVENT_CONN_CLOSED, NULL));
    pair_post_recv(&p, 0, 200, b, 0, 64);
    CHECK_EQ(pair_wc(&p, 0, false).status, UIW_WC_WR_FLUSH_ERR);
    pair_mr_free(b);
    pair_free(&p);
}

TEST(graceful_close_completes_posted_work)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    struct uiw_mr *a = pair_mr(&p, 0, 10000, RW, 1);
    struct uiw_mr *b = pair_mr(&p, 1, 10000, RW, 0);
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_RDMA_WRITE, UIW_SEND_SIGNALED, a, 0, 10000,
                       (uintptr_t)b->addr, b->rkey),
             0);
    CHECK_EQ(pair_post(&p, 0, 2, UIW_WR_RDMA_READ, UIW_SEND_SIGNALED, a, 0, 100, (uintptr_t)b->addr,
                       b->rkey),
             0);
    CHECK_EQ(uiw__qp_close(p.s[0].qp, true), 0);
    CHECK_EQ(uiw__qp_state(p.s[0].qp), UIW_QPS_CLOSING);
    CHECK(!(uiw__qp_want(p.s[0].qp) & UIW__WANT_CLOSE));
    CHECK_EQ(pair_post(&p, 0, 3, UIW_WR_SEND, UIW_SEND_SIGNALED, a, 0, 1, 0, 0), 0);
    pair_pump(&p);
    CHECK_EQ(pair_wc(&p, 0, true).status, UIW_WC_SUCCESS);
    CHECK_EQ(pair_wc(&p, 0, true).status, UIW_WC_SUCCESS);
    CHECK_EQ(pair_wc(&p, 0, true).status, UIW_WC_WR_FLUSH_ERR);
    CHECK(uiw__qp_want(p.s[0].qp) & UIW__WANT_CLOSE);
    CHECK_EQ(((uint8_t *)b->addr)[9999], 1);
    /* io then reports the EOF on both ends */
    uiw__qp_conn_lost(p.s[0].qp, 0);
    uiw__qp_conn_lost(p.s[1].qp, 0);
    CHECK(pair_event(&p, 0, UIW_EVENT_CONN_CLOSED, NULL));
    CHECK(pair_event(&p, 1, UIW_EVENT_CONN_CLOSED, NULL));
    CHECK(!pair_event(&p, 0, UIW_EVENT_QP_FATAL, NULL));
    pair_mr_free(a);
    pair_mr_free(b);
    pair_free(&p);
}

TEST(abortive_close_sends_terminate)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    struct uiw_mr *b = pair_mr(&p, 1, 64, LW, 0);
    pair_post_recv(&p, 1, 5, b, 0, 64);
    CHECK_EQ(uiw_modify_qp_state(p.s[0].qp, UIW_QPS_ERROR), 0);
    pair_pump(&p);
    struct uiw_qp_attr a;
    CHECK_EQ(uiw_query_qp(p.s[1].qp, &a), 0);
    CHECK_EQ(a.state, UIW_QPS_ERROR);
    CHECK(a.term_received);
    CHECK_EQ(a.term_layer, UIW_TERM_LAYER_RDMAP);
    CHECK_EQ(a.term_etype, UIW_TERM_RDMAP_REMOTE_OPERATION);
    CHECK_EQ(a.term_code, UIW_TERM_RO_UNSPECIFIED);
    CHECK_EQ(pair_wc(&p, 1, false).status, UIW_WC_WR_FLUSH_ERR);
    CHECK(uiw__qp_want(p.s[0].qp) & UIW__WANT_CLOSE);
    pair_mr_free(b);
    pair_free(&p);
}

TEST(comp_channel_notify)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.channel = true;
    pair_init(&p, &o, true);
    struct uiw_mr *a = pair_mr(&p, 0, 64, 0, 1);
    struct uiw_mr *b = pair_mr(&p, 1, 256, LW, 0);
    for (int i = 0; i < 4; i++)
        pair_post_recv(&p, 1, (uint64_t)i, b, (size_t)i * 64, 64);
    int fd = uiw_comp_channel_fd(p.s[1].ch);
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    CHECK_EQ(uiw_req_notify_cq(p.s[1].rcq, 1), 0); /* solicited only */
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_SEND, 0, a, 0, 8, 0, 0), 0);
    pair_pump(&p);
    CHECK_EQ(poll(&pfd, 1, 0), 0); /* an unsolicited Send does not wake */
    CHECK_EQ(pair_post(&p, 0, 2, UIW_WR_SEND_WITH_SE, 0, a, 0, 8, 0, 0), 0);
    pair_pump(&p);
    CHECK_EQ(poll(&pfd, 1, 1000), 1);
    struct uiw_cq *cq = NULL;
    void *cqctx = NULL;
    CHECK_EQ(uiw_get_cq_event(p.s[1].ch, &cq, &cqctx), 0);
    CHECK(cq == p.s[1].rcq);
    CHECK_STR((const char *)cqctx, "recv");
    uiw_ack_cq_events(cq, 1);
    CHECK_EQ(poll(&pfd, 1, 0), 0);
    CHECK_EQ(pair_nwc(&p, 1, false), 2);
    /* not armed: no event */
    CHECK_EQ(pair_post(&p, 0, 3, UIW_WR_SEND_WITH_SE, 0, a, 0, 8, 0, 0), 0);
    pair_pump(&p);
    CHECK_EQ(poll(&pfd, 1, 0), 0);
    /* armed for all */
    CHECK_EQ(uiw_req_notify_cq(p.s[1].rcq, 0), 0);
    CHECK_EQ(pair_post(&p, 0, 4, UIW_WR_SEND, 0, a, 0, 8, 0, 0), 0);
    pair_pump(&p);
    CHECK_EQ(poll(&pfd, 1, 1000), 1);
    CHECK_EQ(uiw_get_cq_event(p.s[1].ch, &cq, &cqctx), 0);
    uiw_ack_cq_events(cq, 1);
    CHECK_EQ(pair_nwc(&p, 1, false), 2);
    pair_mr_free(a);
    pair_mr_free(b);
    pair_free(&p);
}

/* A CQ destroyed while another thread takes its event: uiw_destroy_cq answers -EBUSY
 * from the moment the event leaves the channel until it is acknowledged, never frees the
 * CQ under the taker (which then still counts it and acknowledges it). */
struct taker {
    struct uiw_comp_channel *ch;
    atomic_int stop;
    unsigned long taken;
};

static void *take_thread(void *arg)
{
    struct taker *t = arg;
    while (!atomic_load(&t->stop)) {
        struct uiw_cq *cq = NULL;
        void *cqctx = NULL;
        if (uiw_wait_cq_event(t->ch, 0, &cq, &cqctx) == 0) {
            uiw_ack_cq_events(cq, 1);
            t->taken++;
        }
    }
    return NULL;
}

TEST(cq_destroy_races_event_take)
{
    struct uiw_context_attr a;
    uiw_context_attr_init(&a);
    a.progress_thread = false;
    struct uiw_context *ctx = uiw__context_alloc(&a);
    CHECK(ctx);
    struct taker t = {.ch = uiw_create_comp_channel(ctx)};
    CHECK(t.ch);
    atomic_init(&t.stop, 0);
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, take_thread, &t), 0);
    const int rounds = 3000;
    for (int i = 0; i < rounds; i++) {
        struct uiw_cq *cq = uiw_create_cq(ctx, 4, NULL, t.ch, 0);
        CHECK(cq);
        CHECK_EQ(uiw_req_notify_cq(cq, 0), 0);
        struct uiw_wc wc = {.wr_id = (uint64_t)i, .status = UIW_WC_SUCCESS};
        CHECK_EQ(uiw__cq_push(cq, &wc), 0);
        int r;
        while ((r = uiw_destroy_cq(cq)) == -EBUSY)
            sched_yield(); /* the taker's turn (one CPU, or valgrind's one thread at a time) */
        CHECK_EQ(r, 0);
    }
    atomic_store(&t.stop, 1);
    CHECK_EQ(pthread_join(th, NULL), 0);
    CHECK_EQ(t.taken, (unsigned long)rounds); /* every event taken, none after its CQ */
    CHECK_EQ(uiw_destroy_comp_channel(t.ch), 0);
    CHECK_EQ(uiw__context_free(ctx), 0);
}

TEST(cq_overflow_is_reported)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.cqe = 4;
    pair_init(&p, &o, true);
    struct uiw_mr *a = pair_mr(&p, 0, 64, 0, 1);
    struct uiw_mr *b = pair_mr(&p, 1, 64, RW, 0);
    for (int i = 0; i < 6; i++)
        CHECK_EQ(pair_post(&p, 0, (uint64_t)i, UIW_WR_RDMA_WRITE, UIW_SEND_SIGNALED, a, 0, 8,
                           (uintptr_t)b->addr, b->rkey),
                 0);
    pair_pump(&p);
    struct uiw_async_event ev;
    CHECK(pair_event(&p, 0, UIW_EVENT_CQ_ERR, &ev));
    CHECK(ev.cq == p.s[0].scq);
    /* nothing was lost */
    for (int i = 0; i < 6; i++)
        CHECK_EQ(pair_wc(&p, 0, true).wr_id, (uint64_t)i);
    pair_mr_free(a);
    pair_mr_free(b);
    pair_free(&p);
}

struct poster {
    struct pair *p;
    struct uiw_mr *a, *b;
    int base;
};

static void *post_thread(void *arg)
{
    struct poster *t = arg;
    for (int i = 0; i < 200; i++) {
        int r;
        do
            r = pair_post(t->p, 0, (uint64_t)(t->base + i), UIW_WR_RDMA_WRITE, UIW_SEND_SIGNALED,
                          t->a, 0, 8, (uintptr_t)t->b->addr, t->b->rkey);
        while (r == -ENOMEM);
        if (r != 0)
            return (void *)1;
    }
    return NULL;
}

TEST(concurrent_posting)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.sq = 1024;
    o.cqe = 1024;
    pair_init(&p, &o, true);
    struct uiw_mr *a = pair_mr(&p, 0, 64, 0, 1);
    struct uiw_mr *b = pair_mr(&p, 1, 64, RW, 0);
    pthread_t th[4];
    struct poster ps[4];
    for (int i = 0; i < 4; i++) {
        ps[i] = (struct poster){&p, a, b, i * 1000};
        CHECK_EQ(pthread_create(&th[i], NULL, post_thread, &ps[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        void *ret;
        CHECK_EQ(pthread_join(th[i], &ret), 0);
        CHECK(ret == NULL);
    }
    pair_pump(&p);
    int seen[4] = {0};
    for (int i = 0; i < 800; i++) {
        struct uiw_wc wc = pair_wc(&p, 0, true);
        CHECK_EQ(wc.status, UIW_WC_SUCCESS);
        int t = (int)(wc.wr_id / 1000);
        CHECK_EQ(wc.wr_id % 1000, (uint64_t)seen[t]); /* each thread's WRs in order */
        seen[t]++;
    }
    pair_mr_free(a);
    pair_mr_free(b);
    pair_free(&p);
}

TEST(post_errors)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.sq = 2;
    pair_init(&p, &o, false);
    struct uiw_mr *a = pair_mr(&p, 0, 64, LW, 1);
    /* not connected */
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_SEND, 0, a, 0, 8, 0, 0), -ENOTCONN);
    pair_start(&p);
    struct uiw_sge sge[5];
    for (int i = 0; i < 5; i++)
        sge[i] = (struct uiw_sge){(uintptr_t)a->addr, 1, a->lkey};
    struct uiw_send_wr wr = {.wr_id = 1, .sg_list = sge, .num_sge = 5, .opcode = UIW_WR_SEND};
    struct uiw_send_wr *bad = NULL;
    CHECK_EQ(uiw_post_send(p.s[0].qp, &wr, &bad), -EINVAL);
    CHECK(bad == &wr);
    wr.num_sge = 2;
    wr.opcode = UIW_WR_RDMA_READ; /* one sink only */
    CHECK_EQ(uiw_post_send(p.s[0].qp, &wr, &bad), -EINVAL);
    /* queue full: the third of a chain is the bad one */
    struct uiw_send_wr w3 = {.wr_id = 3, .sg_list = sge, .num_sge = 1, .opcode = UIW_WR_SEND};
    struct uiw_send_wr w2 = w3, w1 = w3;
    w1.next = &w2;
    w2.next = &w3;
    CHECK_EQ(uiw_post_send(p.s[0].qp, &w1, &bad), -ENOMEM);
    CHECK(bad == &w3);
    /* STag 0 and index 0 are never valid; keys differ between registrations */
    CHECK((a->lkey >> 8) != 0);
    struct uiw_mr *m2 = uiw_reg_mr(p.s[0].pd, a->addr, 64, 0);
    CHECK(m2);
    CHECK(m2->lkey != a->lkey);
    CHECK_EQ(uiw_dereg_mr(m2), 0);
    CHECK(uiw_reg_mr(p.s[0].pd, a->addr, 64, UIW_ACCESS_REMOTE_WRITE) == NULL);
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(uiw_dealloc_pd(p.s[0].pd), -EBUSY);
    pair_discard_tx(&p, 0);
    pair_nwc(&p, 0, true);
    pair_mr_free(a);
    pair_free(&p);
}

TEST(read_response_outside_sink)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    struct uiw_mr *sink = pair_mr(&p, 0, 200, LW, 0);
    struct uiw_mr *other = pair_mr(&p, 0, 200, LW, 0);
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_RDMA_READ, UIW_SEND_SIGNALED, sink, 0, 100, 0x1000, 0x4242),
             0);
    pair_discard_tx(&p, 0);
    /* a response aimed at another local MR (valid, LOCAL_WRITE): refused */
    uint8_t ul[14 + 8];
    ul[0] = 0xC1;
    ul[1] = 0x42;
    uiw__put_be32(ul + 2, other->lkey);
    uiw__put_be64(ul + 6, (uintptr_t)other->addr);
    memset(ul + 14, 0x66, 8);
    struct uiw_fpdu_tx ftx;
    uiw_fpdu_tx_init(&ftx, false, false);
    uint8_t buf[64];
    struct uiw_wire_iov v = {ul, sizeof(ul)};
    ssize_t len = uiw_fpdu_tx_encode(&ftx, &v, 1, buf, sizeof(buf));
    CHECK_EQ(pair_feed(&p, 0, buf, (size_t)len), UIW_E_RNIC_TAG_STAG_INVALID);
    CHECK_EQ(((uint8_t *)other->addr)[0], 0);
    struct uiw_qp_attr a;
    CHECK_EQ(uiw_query_qp(p.s[0].qp, &a), 0);
    CHECK_EQ(a.term_layer, UIW_TERM_LAYER_DDP);
    CHECK_EQ(a.term_etype, UIW_TERM_DDP_TAGGED);
    CHECK_EQ(a.term_code, UIW_TERM_DT_INVALID_STAG);
    struct uiw_wc wc = pair_wc(&p, 0, true);
    CHECK_EQ(wc.status, UIW_WC_BAD_RESP_ERR);
    CHECK_EQ(wc.vendor_err, UIW_E_RNIC_TAG_STAG_INVALID);
    pair_mr_free(sink);
    pair_mr_free(other);
    pair_free(&p);
}

/* How a Terminate reaches side 0 (the initiator, a Read in progress). */
struct term_case {
    bool preceded; /* an FPDU (a zero-length Write) before it: not the first one */
    enum uiw__rtr rtr;
    bool ambiguous; /* its control word reads validly in both bit orders */
    int wc;         /* the Read's status */
};

static void inject_terminate_ex(const uint8_t *body, size_t n, uint8_t layer, uint8_t etype,
                                uint8_t code, bool siw, const struct term_case *k)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.rtr = k->rtr;
    pair_init(&p, &o, true);
    struct uiw_mr *b = pair_mr(&p, 0, 64, RW, 0);
    pair_post_recv(&p, 0, 1, b, 0, 64);
    CHECK_EQ(pair_post(&p, 0, 2, UIW_WR_RDMA_READ, 0, b, 0, 64, 0x1000, 0x4242), 0);
    pair_discard_tx(&p, 0);
    struct uiw_fpdu_tx ftx;
    uiw_fpdu_tx_init(&ftx, false, false);
    uint8_t buf[128];
    if (k->preceded) {
        const uint8_t w[14] = {0xC1, 0x40, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0};
        struct uiw_wire_iov v = {w, sizeof(w)};
        ssize_t len = uiw_fpdu_tx_encode(&ftx, &v, 1, buf, sizeof(buf));
        CHECK_EQ(pair_feed(&p, 0, buf, (size_t)len), 0);
    }
    uint8_t ul[18 + 64] = {0x41, 0x47, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0};
    memcpy(ul + 18, body, n);
    struct uiw_wire_iov v = {ul, 18 + n};
    ssize_t len = uiw_fpdu_tx_encode(&ftx, &v, 1, buf, sizeof(buf));
    CHECK_EQ(pair_feed(&p, 0, buf, (size_t)len), UIW_E_RNIC_TERM_RECEIVED);
    struct uiw_qp_attr a;
    CHECK_EQ(uiw_query_qp(p.s[0].qp, &a), 0);
    CHECK_EQ(a.state, UIW_QPS_ERROR);
    CHECK(a.term_received);
    CHECK(!a.term_sent);
    CHECK_EQ(a.term_layer, layer);
    CHECK_EQ(a.term_etype, etype);
    CHECK_EQ(a.term_code, code);
    CHECK_EQ(a.term_siw_order, siw);
    CHECK_EQ(a.term_ambiguous, k->ambiguous);
    struct uiw_async_event ev;
    CHECK(pair_event(&p, 0, UIW_EVENT_TERM_RECEIVED, &ev));
    CHECK_EQ(ev.term_layer, layer);
    CHECK_EQ(ev.term_etype, etype);
    CHECK_EQ(ev.term_code, code);
    CHECK_EQ(pair_tx_pending(&p, 0), 0); /* nothing more is sent after a Terminate */
    CHECK(uiw__qp_want(p.s[0].qp) & UIW__WANT_CLOSE);
    struct uiw_wc wc = pair_wc(&p, 0, true);
    CHECK_EQ(wc.status, k->wc); /* the Read in progress */
    CHECK_EQ(pair_wc(&p, 0, false).status, UIW_WC_WR_FLUSH_ERR);
    struct uiw_context_stats st;
    CHECK_EQ(uiw_query_context_stats(p.s[0].ctx, &st), 0);
    CHECK_EQ(st.terminates_received, 1);
    pair_mr_free(b);
    pair_free(&p);
}

static void inject_terminate(const uint8_t *body, size_t n, uint8_t layer, uint8_t etype,
                             uint8_t code, bool siw)
{
    struct term_case k = {.wc = UIW_WC_REM_INV_REQ_ERR};
    inject_terminate_ex(body, n, layer, etype, code, siw, &k);
}

TEST(terminate_received_rfc_order)
{
    const uint8_t body[4] = {0x12, 0x01, 0x00, 0x00}; /* DDP / Untagged / Invalid QN */
    inject_terminate(body, 4, UIW_TERM_LAYER_DDP, UIW_TERM_DDP_UNTAGGED, UIW_TERM_DU_INVALID_QN,
                     false);
}

TEST(terminate_received_siw_order)
{
    const uint8_t body[4] = {0x21, 0x01, 0x00, 0x00}; /* the same, as Linux siw writes it */
    inject_terminate(body, 4, UIW_TERM_LAYER_DDP, UIW_TERM_DDP_UNTAGGED, UIW_TERM_DU_INVALID_QN,
                     true);
}

/* Linux siw writes its RDMAP Invalid Version and Unexpected OpCode Terminates without M/D/R
 * bits as 20 05 00 00 / 20 06 00 00: in RFC order LLP / MPA Local Catastrophic and
 * Insufficient IRD, codes only a connection's startup carries. In the middle of a
 * connection they are read as siw meant them, and the Read in progress fails with a
 * remote operation error. */
TEST(terminate_siw_flagless_words_in_rts)
{
    struct term_case k = {.preceded = true, .ambiguous = true, .wc = UIW_WC_REM_OP_ERR};
    for (uint8_t code = 5; code <= 7; code++) {
        const uint8_t body[4] = {0x20, code, 0x00, 0x00};
        inject_terminate_ex(body, 4, UIW_TERM_LAYER_RDMAP, UIW_TERM_RDMAP_REMOTE_OPERATION, code,
                            true, &k);
    }
}

/* The same words as the peer's first FPDU keep their RFC reading (a startup error), except
 * No Matching RTR where we sent no RTR. */
TEST(terminate_flagless_words_at_startup)
{
    struct term_case k = {.ambiguous = true, .wc = UIW_WC_GENERAL_ERR};
    const uint8_t w5[4] = {0x20, 0x05, 0x00, 0x00}, w6[4] = {0x20, 0x06, 0x00, 0x00},
                  w7[4] = {0x20, 0x07, 0x00, 0x00};
    inject_terminate_ex(w5, 4, UIW_TERM_LAYER_LLP, UIW_TERM_LLP_MPA,
                        UIW_TERM_MPA_LOCAL_CATASTROPHIC, false, &k);
    inject_terminate_ex(w6, 4, UIW_TERM_LAYER_LLP, UIW_TERM_LLP_MPA, UIW_TERM_MPA_INSUFFICIENT_IRD,
                        false, &k);
    k.rtr = UIW__RTR_WRITE;
    inject_terminate_ex(w7, 4, UIW_TERM_LAYER_LLP, UIW_TERM_LLP_MPA, UIW_TERM_MPA_NO_MATCHING_RTR,
                        false, &k);
    k.rtr = UIW__RTR_NONE;
    k.wc = UIW_WC_REM_OP_ERR;
    inject_terminate_ex(w7, 4, UIW_TERM_LAYER_RDMAP, UIW_TERM_RDMAP_REMOTE_OPERATION,
                        UIW_TERM_RO_CATASTROPHIC_STREAM, true, &k);
}

/* A Terminate of the peer's that arrives while the QP is in TERMINATE (it failed locally,
 * its own Terminate has not gone out) still reaches the application; what the peer sent
 * before it is skipped, nothing placed. */
TEST(terminate_received_in_terminate_state)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    struct uiw_mr *b = pair_mr(&p, 0, 64, RW, 0);
    pair_post_recv(&p, 0, 1, b, 0, 64);
    CHECK_EQ(uiw_modify_qp_state(p.s[0].qp, UIW_QPS_ERROR), 0); /* our Terminate, unsent */
    CHECK_EQ(uiw__qp_state(p.s[0].qp), UIW_QPS_TERMINATE);
    struct uiw_async_event ev;
    CHECK(!pair_event(&p, 0, UIW_EVENT_TERM_RECEIVED, &ev));
    /* the peer's stream: a Write into b, a Send, then its Terminate */
    uint8_t w[14 + 32] = {0xC1, 0x40};
    uiw__put_be32(w + 2, b->rkey);
    uiw__put_be64(w + 6, (uintptr_t)b->addr);
    memset(w + 14, 0xAB, 32);
    const uint8_t s[18 + 8] = {0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 2};
    const uint8_t t[18 + 4] = {
        0x41, 0x47, 0, 0, 0, 0, 0, 0,    0,    2,    0,
        0,    0,    1, 0, 0, 0, 0, 0x12, 0x01, 0x00, 0x00}; /* DDP / Untagged / Invalid QN */
    struct uiw_fpdu_tx ftx;
    uiw_fpdu_tx_init(&ftx, false, false);
    uint8_t buf[256];
    size_t n = 0;
    const struct uiw_wire_iov v[3] = {{w, sizeof(w)}, {s, sizeof(s)}, {t, sizeof(t)}};
    for (int i = 0; i < 3; i++) {
        ssize_t k = uiw_fpdu_tx_encode(&ftx, &v[i], 1, buf + n, sizeof(buf) - n);
        CHECK(k > 0);
        n += (size_t)k;
    }
    CHECK_EQ(pair_feed(&p, 0, buf, n), UIW_E_RNIC_TERM_RECEIVED);
    CHECK(pair_event(&p, 0, UIW_EVENT_TERM_RECEIVED, &ev));
    CHECK_EQ(ev.term_layer, UIW_TERM_LAYER_DDP);
    CHECK_EQ(ev.term_etype, UIW_TERM_DDP_UNTAGGED);
    CHECK_EQ(ev.term_code, UIW_TERM_DU_INVALID_QN);
    struct uiw_qp_attr a;
    CHECK_EQ(uiw_query_qp(p.s[0].qp, &a), 0);
    CHECK_EQ(a.state, UIW_QPS_ERROR);
    CHECK(a.term_received);
    CHECK_EQ(a.term_layer, UIW_TERM_LAYER_DDP);
    CHECK_EQ(a.term_etype, UIW_TERM_DDP_UNTAGGED);
    CHECK_EQ(a.term_code, UIW_TERM_DU_INVALID_QN);
    CHECK_EQ(((uint8_t *)b->addr)[0], 0); /* the Write was not placed */
    struct uiw_wc wc = pair_wc(&p, 0, false);
    CHECK_EQ(wc.status, UIW_WC_WR_FLUSH_ERR); /* flushed by the abort, not completed again */
    CHECK_EQ(pair_nwc(&p, 0, false), 0);
    CHECK_EQ(pair_tx_pending(&p, 0), 0); /* nothing sent after the peer's Terminate */
    CHECK(uiw__qp_want(p.s[0].qp) & UIW__WANT_CLOSE);
    struct uiw_context_stats st;
    CHECK_EQ(uiw_query_context_stats(p.s[0].ctx, &st), 0);
    CHECK_EQ(st.terminates_received, 1);
    pair_mr_free(b);
    pair_free(&p);
}

TEST(destroy_connected_qp_flushes)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    struct uiw_mr *b = pair_mr(&p, 0, 64, RW, 0);
    pair_post_recv(&p, 0, 1, b, 0, 64);
    CHECK_EQ(pair_post(&p, 0, 2, UIW_WR_SEND, UIW_SEND_SIGNALED, b, 0, 8, 0, 0), 0);
    CHECK_EQ(uiw_destroy_cq(p.s[0].scq), -EBUSY); /* the QP still uses it */
    CHECK_EQ(uiw_dealloc_pd(p.s[1].pd), -EBUSY);
    CHECK_EQ(uiw_destroy_qp(p.s[0].qp), 0);
    p.s[0].qp = NULL;
    struct uiw_wc wc = pair_wc(&p, 0, true);
    CHECK_EQ(wc.wr_id, 2);
    CHECK_EQ(wc.status, UIW_WC_WR_FLUSH_ERR);
    wc = pair_wc(&p, 0, false);
    CHECK_EQ(wc.wr_id, 1);
    CHECK_EQ(wc.status, UIW_WC_WR_FLUSH_ERR);
    pair_mr_free(b);
    pair_free(&p);
}

TEST(send_not_starved_by_read_response)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    size_t n = 100000;
    struct uiw_mr *src = pair_mr(&p, 1, n, RW, 0x10);
    struct uiw_mr *sink = pair_mr(&p, 0, n, LW, 0);
    struct uiw_mr *rb = pair_mr(&p, 0, 64, LW, 0);
    pair_post_recv(&p, 0, 1, rb, 0, 64);
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_RDMA_READ, UIW_SEND_SIGNALED, sink, 0, (uint32_t)n,
                       (uintptr_t)src->addr, src->rkey),
             0);
    while (pair_pump_dir(&p, 0, SIZE_MAX))
        ;
    CHECK_EQ(pair_post(&p, 1, 2, UIW_WR_SEND, 0, src, 0, 8, 0, 0), 0);
    pair_pump(&p);
    CHECK_EQ(pair_wc(&p, 0, true).status, UIW_WC_SUCCESS);
    CHECK_EQ(pair_wc(&p, 0, false).byte_len, 8);
    /* on the wire, the Send went out among the first Read Response segments */
    struct uiw_fpdu_rx rx;
    uiw_fpdu_rx_init(&rx, false, false, 0);
    static uint8_t ul[65536];
    size_t off = 0;
    int idx = 0, send_at = -1, responses = 0;
    while (off < p.s[1].cap_len) {
        uint16_t ulen = 0;
        bool done = false;
        ssize_t r = uiw_fpdu_rx_feed(&rx, p.s[1].cap + off, p.s[1].cap_len - off, ul, sizeof(ul),
                                     &ulen, &done);
        CHECK(r >= 0);
        off += (size_t)r;
        if (!done)
            continue;
        if ((ul[1] & 0x0F) == UIW_RDMAP_SEND)
            send_at = idx;
        else
            responses++;
        idx++;
    }
    CHECK(responses > 60);
    CHECK(send_at >= 0 && send_at < 4);
    pair_mr_free(src);
    pair_mr_free(sink);
    pair_mr_free(rb);
    pair_free(&p);
}

TEST(queue_indices_wrap)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.sq = 5; /* not a power of two */
    o.rq = 3;
    pair_init(&p, &o, true);
    /* free-running ring indices just below 2^32 */
    for (int d = 0; d < 2; d++) {
        struct uiw_qp *qp = p.s[d].qp;
        qp->sq_head = qp->sq_tx = qp->sq_tail = UINT32_MAX - 6;
        qp->rq_head = qp->rq_tail = UINT32_MAX - 4;
    }
    struct uiw_mr *a = pair_mr(&p, 0, 64, RW, 3);
    struct uiw_mr *b = pair_mr(&p, 1, 64, RW, 0);
    for (int i = 0; i < 20; i++) {
        pair_post_recv(&p, 1, (uint64_t)i, b, 0, 64);
        CHECK_EQ(pair_post(&p, 0, (uint64_t)i, UIW_WR_SEND, UIW_SEND_SIGNALED, a, 0, 8, 0, 0), 0);
        CHECK_EQ(pair_post(&p, 0, 100 + (uint64_t)i, UIW_WR_RDMA_WRITE, 0, a, 0, 8,
                           (uintptr_t)b->addr, b->rkey),
                 0);
        pair_pump(&p);
        struct uiw_wc wc = pair_wc(&p, 0, true);
        CHECK_EQ(wc.wr_id, (uint64_t)i);
        CHECK_EQ(wc.status, UIW_WC_SUCCESS);
        wc = pair_wc(&p, 1, false);
        CHECK_EQ(wc.wr_id, (uint64_t)i);
        CHECK_EQ(wc.byte_len, 8);
    }
    CHECK(p.s[0].qp->sq_tail < 100); /* it did wrap */
    pair_mr_free(a);
    pair_mr_free(b);
    pair_free(&p);
}

/* Asking what the engine wants builds nothing: a Read Request arrived, the responder has
 * its response to build, uiw__qp_want says so and leaves the building (and the CRCs) to
 * uiw__qp_tx_next. */
TEST(want_only_looks)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.crc = true;
    pair_init(&p, &o, true);
    pair_first_fpdu(&p);
    struct uiw_mr *src = pair_mr(&p, 1, 8192, RW, 0x5A);
    struct uiw_mr *sink = pair_mr(&p, 0, 8192, RW, 0);
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_RDMA_READ, UIW_SEND_SIGNALED, sink, 0, 8192,
                       (uintptr_t)src->addr, src->rkey),
             0);
    pair_pump_dir(&p, 0, SIZE_MAX); /* the Request reaches side 1 */
    struct uiw_qp *qp = p.s[1].qp;
    CHECK_EQ(qp->irq_count, 1);
    CHECK(uiw__qp_want(qp) & UIW__WANT_TX);
    CHECK(uiw__qp_want(qp) & UIW__WANT_TX);
    CHECK_EQ(qp->slot_tail, qp->slot_head); /* nothing built */
    CHECK(pair_tx_pending(&p, 1) > 0);
    CHECK(qp->slot_tail != qp->slot_head); /* built by tx_next */
    pair_pump(&p);
    CHECK_EQ(pair_wc(&p, 0, true).status, UIW_WC_SUCCESS);
    CHECK_MEM(sink->addr, src->addr, 8192);
    CHECK(!(uiw__qp_want(qp) & UIW__WANT_TX));
    pair_mr_free(src);
    pair_mr_free(sink);
    pair_free(&p);
}

/* Posting only queues: a Send's FPDU (its copy and CRC included) is built by
 * uiw__qp_tx_next, which io calls from the post when it can; a local operation at the head
 * of the send queue runs at once, so that a REG_MR's STag is valid when the post returns. */
TEST(posting_builds_no_fpdu)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.crc = true;
    pair_init(&p, &o, true);
    pair_first_fpdu(&p);
    struct uiw_qp *qp = p.s[0].qp;
    struct uiw_mr *src = pair_mr(&p, 0, 64, RW, 0x5A);
    struct uiw_mr *dst = pair_mr(&p, 1, 64, RW, 0);
    pair_post_recv(&p, 1, 7, dst, 0, 64);
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_SEND, UIW_SEND_SIGNALED, src, 0, 64, 0, 0), 0);
    CHECK_EQ(qp->slot_tail, qp->slot_head); /* nothing built */
    CHECK(uiw__qp_want(qp) & UIW__WANT_TX);
    CHECK(pair_tx_pending(&p, 0) > 0);
    CHECK(qp->slot_tail != qp->slot_head); /* built by tx_next */
    pair_pump(&p);
    CHECK_EQ(pair_wc(&p, 0, true).status, UIW_WC_SUCCESS);
    CHECK_EQ(pair_wc(&p, 1, false).byte_len, 64);
    CHECK_MEM(dst->addr, src->addr, 64);

    uint8_t *buf = calloc(1, 4096);
    struct uiw_mr *mr = uiw_alloc_mr(p.s[0].pd, 4096);
    CHECK(buf && mr);
    struct uiw_send_wr reg = {.wr_id = 2, .opcode = UIW_WR_REG_MR, .send_flags = UIW_SEND_SIGNALED};
    reg.wr.reg.mr = mr;
    reg.wr.reg.key = uiw_inc_rkey(mr->rkey);
    reg.wr.reg.addr = buf;
    reg.wr.reg.length = 4096;
    reg.wr.reg.access = RW;
    struct uiw_send_wr *bad = NULL;
    CHECK_EQ(uiw_post_send(qp, &reg, &bad), 0);
    struct uiw_wc wc = pair_wc(&p, 0, true); /* complete before any tx_next */
    CHECK_EQ(wc.wr_id, 2);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(qp->slot_tail, qp->slot_head);
    CHECK_EQ(uiw_dereg_mr(mr), 0);
    free(buf);
    pair_mr_free(src);
    pair_mr_free(dst);
    pair_free(&p);
}
