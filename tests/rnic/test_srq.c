/* Shared receive queues: QPs taking their receives from one SRQ, in every receive mode;
 * the receive a QP took belongs to it (completion, errors, flush); an empty SRQ answers a
 * Send with the DDP Terminate for no buffer; the limit event fires once per arm; the
 * verbs' bounds. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pair.h"
#include "rnic/engine.h"
#include "test.h"

#define LW UIW_ACCESS_LOCAL_WRITE

/* The server side several pairs share: one context, PD and SRQ. */
struct srv {
    struct uiw_context *ctx;
    struct uiw_pd *pd;
    struct uiw_srq *srq;
};

static void srv_open(struct srv *v, uint32_t max_wr)
{
    struct uiw_context_attr a;
    uiw_context_attr_init(&a);
    a.progress_thread = false;
    v->ctx = uiw__context_alloc(&a);
    CHECK(v->ctx);
    v->pd = uiw_alloc_pd(v->ctx);
    CHECK(v->pd);
    struct uiw_srq_init_attr sa = {.srq_context = v, .attr = {.max_wr = max_wr, .max_sge = 2}};
    v->srq = uiw_create_srq(v->pd, &sa);
    CHECK(v->srq);
    CHECK_EQ(sa.attr.max_sge, 4); /* adjusted up to what it provides */
    CHECK(uiw_srq_context(v->srq) == v);
}

static void srv_close(struct srv *v)
{
    CHECK_EQ(uiw_destroy_srq(v->srq), 0);
    CHECK_EQ(uiw_dealloc_pd(v->pd), 0);
    CHECK_EQ(uiw__context_free(v->ctx), 0);
}

static void pair_on(struct pair *p, struct srv *v, uint64_t seed, int mode, uint16_t mulpdu)
{
    struct pair_opts o;
    pair_opts_default(&o);
    o.seed = seed;
    o.mode = mode;
    o.mulpdu = mulpdu;
    o.srq1_ctx = v->ctx;
    o.srq1_pd = v->pd;
    o.srq1 = v->srq;
    pair_init(p, &o, true);
}

static void srq_post(struct uiw_srq *srq, uint64_t id, struct uiw_mr *mr, size_t off, uint32_t len)
{
    struct uiw_sge sge = {.addr = (uintptr_t)mr->addr + off, .length = len, .lkey = mr->lkey};
    struct uiw_recv_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1};
    struct uiw_recv_wr *bad = NULL;
    CHECK_EQ(uiw_post_srq_recv(srq, &wr, &bad), 0);
}

static void fill(void *p, size_t n, unsigned seed)
{
    uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

/* The next async event of the shared context, which must be of type t. */
static struct uiw_async_event next_event(struct uiw_context *ctx, enum uiw_event_type t)
{
    struct uiw_async_event ev;
    int r = uiw_get_async_event(ctx, &ev);
    if (r != 0)
        uiw_test_fail(__FILE__, __LINE__, "no async event (wanted %s)", uiw_event_type_str(t));
    if (ev.event_type != t)
        uiw_test_fail(__FILE__, __LINE__, "async event %s, wanted %s",
                      uiw_event_type_str(ev.event_type), uiw_event_type_str(t));
    return ev;
}

static void no_event(struct uiw_context *ctx)
{
    struct uiw_async_event ev;
    int r = uiw_get_async_event(ctx, &ev);
    if (r == 0)
        uiw_test_fail(__FILE__, __LINE__, "unexpected async event %s",
                      uiw_event_type_str(ev.event_type));
    CHECK_EQ(r, -EAGAIN);
}

/* Side d's Terminate is DDP / untagged buffer / code. */
static void expect_term(struct pair *p, int d, uint8_t code)
{
    uint8_t hdr[18], body[128];
    size_t n = pair_terminate(p, d, hdr, body, sizeof(body));
    CHECK(n > 0);
    struct uiw_terminate t;
    CHECK(uiw_terminate_parse(body, n, &t) > 0);
    CHECK_EQ(t.layer, UIW_TERM_LAYER_DDP);
    CHECK_EQ(t.etype, UIW_TERM_DDP_UNTAGGED);
    CHECK_EQ(t.code, code);
    struct uiw_qp_attr a;
    CHECK_EQ(uiw_query_qp(p->s[d].qp, &a), 0);
    CHECK(a.term_sent);
    CHECK_EQ(a.term_code, code);
}

/* Sends of every shape into SRQ receives, in every receive mode: the receive is the SRQ's
 * oldest, its completion names the QP, the bytes land across its SGEs. */
TEST(srq_sends_every_mode)
{
    for (int mode = PAIR_DIRECT; mode <= PAIR_PEEK; mode++) {
        struct pair p;
        struct pair_opts o;
        pair_opts_default(&o);
        o.mode = mode;
        o.seed = 77 + (uint64_t)mode;
        o.srq1_wr = 8;
        pair_init(&p, &o, true);
        struct uiw_qp_attr qa;
        CHECK_EQ(uiw_query_qp(p.s[1].qp, &qa), 0);
        CHECK_EQ(qa.cap.max_recv_wr, 0);
        CHECK_EQ(qa.cap.max_recv_sge, 0);
        struct uiw_mr *src = pair_mr(&p, 0, 1 << 16, 0, 0);
        struct uiw_mr *dst = pair_mr(&p, 1, 1 << 16, LW, 0xEE);
        fill(src->addr, 1 << 16, (unsigned)mode);
        /* a receive posted to the QP itself is refused: its receives are the SRQ's */
        struct uiw_sge sge[2] = {{(uintptr_t)dst->addr, 64, dst->lkey},
                                 {(uintptr_t)dst->addr + 8192, 8192, dst->lkey}};
        struct uiw_recv_wr rw = {.wr_id = 1, .sg_list = sge, .num_sge = 1};
        struct uiw_recv_wr *bad = NULL;
        CHECK_EQ(uiw_post_recv(p.s[1].qp, &rw, &bad), -EINVAL);
        CHECK(bad == &rw);
        /* 1: 64 bytes; 2: 4096 + 8192 across two SGEs; 3: zero bytes; 4: 2000 bytes */
        rw.wr_id = 1;
        struct uiw_recv_wr r2 = {.wr_id = 2, .sg_list = sge, .num_sge = 2};
        sge[0] = (struct uiw_sge){(uintptr_t)dst->addr + 4096, 4096, dst->lkey};
        struct uiw_sge s1 = {(uintptr_t)dst->addr, 64, dst->lkey};
        struct uiw_sge s3 = {(uintptr_t)dst->addr + 20000, 16, dst->lkey};
        struct uiw_sge s4 = {(uintptr_t)dst->addr + 30000, 2000, dst->lkey};
        struct uiw_recv_wr r1 = {.wr_id = 1, .sg_list = &s1, .num_sge = 1, .next = &r2};
        struct uiw_recv_wr r3 = {.wr_id = 3, .sg_list = &s3, .num_sge = 1};
        struct uiw_recv_wr r4 = {.wr_id = 4, .sg_list = &s4, .num_sge = 1};
        r2.next = &r3;
        r3.next = &r4;
        CHECK_EQ(uiw_post_srq_recv(p.s[1].srq, &r1, &bad), 0);
        CHECK_EQ(pair_post(&p, 0, 11, UIW_WR_SEND, UIW_SEND_SIGNALED, src, 0, 64, 0, 0), 0);
        CHECK_EQ(
            pair_post(&p, 0, 12, UIW_WR_SEND_WITH_SE, UIW_SEND_SIGNALED, src, 100, 12288, 0, 0), 0);
        CHECK_EQ(pair_post(&p, 0, 13, UIW_WR_SEND, UIW_SEND_SIGNALED, NULL, 0, 0, 0, 0), 0);
        CHECK_EQ(pair_post(&p, 0, 14, UIW_WR_SEND, UIW_SEND_SIGNALED, src, 50000, 2000, 0, 0), 0);
        pair_pump(&p);
        const uint32_t lens[4] = {64, 12288, 0, 2000};
        for (int i = 0; i < 4; i++) {
            struct uiw_wc wc = pair_wc(&p, 1, false);
            CHECK_EQ(wc.status, UIW_WC_SUCCESS);
            CHECK_EQ(wc.opcode, UIW_WC_RECV);
            CHECK_EQ(wc.wr_id, i + 1);
            CHECK_EQ(wc.byte_len, lens[i]);
            CHECK_EQ(wc.qp_num, uiw_qp_num(p.s[1].qp));
            CHECK_EQ(wc.wc_flags, i == 1 ? UIW_WC_SOLICITED : 0);
            CHECK_EQ(pair_wc(&p, 0, true).wr_id, 11 + i);
        }
        uint8_t *d = dst->addr, *s = src->addr;
        CHECK_MEM(d, s, 64);
        CHECK_MEM(d + 4096, s + 100, 4096);
        CHECK_MEM(d + 8192, s + 4196, 8192);
        CHECK_MEM(d + 30000, s + 50000, 2000);
        CHECK_EQ(d[64], 0xEE);
        CHECK_EQ(d[20000], 0xEE);
        CHECK_EQ(uiw__qp_state(p.s[1].qp), UIW_QPS_RTS);
        pair_mr_free(src);
        pair_mr_free(dst);
        pair_free(&p);
    }
}

/* Sends arriving on three QPs that share one SRQ: each takes the SRQ's oldest receive when
 * its Send arrives, completes it on its own recv CQ under its own qp_num. */
TEST(srq_shared_by_three_qps)
{
    struct srv v;
    srv_open(&v, 32);
    enum { NP = 3, NMSG = 12 };
    struct pair p[NP];
    for (int k = 0; k < NP; k++)
        pair_on(&p[k], &v, 1000 + (uint64_t)k, k == 0 ? PAIR_IO : PAIR_MIXED, 1460);
    uint8_t *rbuf = malloc(NMSG * 4096);
    CHECK(rbuf);
    memset(rbuf, 0, NMSG * 4096);
    struct uiw_mr *rmr = uiw_reg_mr(v.pd, rbuf, NMSG * 4096, LW);
    CHECK(rmr);
    for (int i = 0; i < NMSG; i++)
        srq_post(v.srq, 100 + (uint64_t)i, rmr, (size_t)i * 4096, 4096);
    struct uiw_mr *src[NP];
    for (int k = 0; k < NP; k++) {
        src[k] = pair_mr(&p[k], 0, 4096 * NMSG, 0, 0);
        fill(src[k]->addr, 4096 * NMSG, 10 + (unsigned)k);
    }
    /* arrival order: message i comes over QP i % NP (any size, some large) */
    for (int i = 0; i < NMSG; i++) {
        int k = i % NP;
        uint32_t len = (uint32_t)(i % 4 == 3 ? 4096 : 10 + i * 37);
        CHECK_EQ(
            pair_post(&p[k], 0, (uint64_t)i, UIW_WR_SEND, 0, src[k], (size_t)i * 4096, len, 0, 0),
            0);
        pair_pump(&p[k]);
        struct uiw_wc wc = pair_wc(&p[k], 1, false);
        CHECK_EQ(wc.status, UIW_WC_SUCCESS);
        CHECK_EQ(wc.wr_id, 100 + i);
        CHECK_EQ(wc.qp_num, uiw_qp_num(p[k].s[1].qp));
        CHECK_EQ(wc.byte_len, len);
        CHECK_MEM(rbuf + (size_t)i * 4096, (uint8_t *)src[k]->addr + (size_t)i * 4096, len);
        for (int j = 0; j < NP; j++)
            CHECK_EQ(pair_nwc(&p[j], 1, false), 0);
    }
    no_event(v.ctx);
    for (int k = 0; k < NP; k++) {
        pair_mr_free(src[k]);
        CHECK_EQ(uiw_destroy_srq(v.srq), -EBUSY);
        pair_free(&p[k]);
    }
    CHECK_EQ(uiw_dereg_mr(rmr), 0);
    free(rbuf);
    srv_close(&v);
}

/* An empty SRQ: the Send that finds no receive ends its stream with DDP / untagged /
 * "Invalid MSN - no buffer available"; nothing is flushed out of the SRQ, and another QP
 * on it goes on with the receives posted afterwards. */
TEST(srq_empty_send_terminates)
{
    struct srv v;
    srv_open(&v, 4);
    struct pair a, b;
    pair_on(&a, &v, 5, PAIR_MIXED, 1460);
    pair_on(&b, &v, 6, PAIR_IO, 1460);
    uint8_t rbuf[512];
    struct uiw_mr *rmr = uiw_reg_mr(v.pd, rbuf, sizeof(rbuf), LW);
    CHECK(rmr);
    struct uiw_mr *sa = pair_mr(&a, 0, 64, 0, 1), *sb = pair_mr(&b, 0, 64, 0, 2);
    srq_post(v.srq, 1, rmr, 0, 128);
    CHECK_EQ(pair_post(&a, 0, 1, UIW_WR_SEND, 0, sa, 0, 20, 0, 0), 0);
    pair_pump(&a);
    CHECK_EQ(pair_wc(&a, 1, false).wr_id, 1);
    /* b's Send finds the SRQ empty */
    CHECK_EQ(pair_post(&b, 0, 1, UIW_WR_SEND, UIW_SEND_SIGNALED, sb, 0, 20, 0, 0), 0);
    pair_pump(&b);
    expect_term(&b, 1, UIW_TERM_DU_INVALID_MSN_NO_BUF);
    struct uiw_async_event ev = next_event(v.ctx, UIW_EVENT_QP_REQ_ERR);
    CHECK(ev.qp == b.s[1].qp);
    ev = next_event(v.ctx, UIW_EVENT_QP_LAST_WQE_REACHED);
    CHECK(ev.qp == b.s[1].qp);
    no_event(v.ctx);
    CHECK_EQ(pair_nwc(&b, 1, false), 0); /* it had taken nothing */
    /* the SRQ is whole: a's next Sends take the receives posted now */
    srq_post(v.srq, 2, rmr, 128, 128);
    srq_post(v.srq, 3, rmr, 256, 128);
    CHECK_EQ(pair_nwc(&b, 1, false), 0);
    CHECK_EQ(pair_post(&a, 0, 2, UIW_WR_SEND, 0, sa, 0, 30, 0, 0), 0);
    pair_pump(&a);
    struct uiw_wc wc = pair_wc(&a, 1, false);
    CHECK_EQ(wc.wr_id, 2);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(wc.byte_len, 30);
    CHECK_EQ(uiw__qp_state(a.s[1].qp), UIW_QPS_RTS);
    pair_mr_free(sa);
    pair_mr_free(sb);
    pair_free(&a);
    pair_free(&b);
    no_event(v.ctx); /* destroying a QP queues nothing about it */
    CHECK_EQ(uiw_dereg_mr(rmr), 0);
    srv_close(&v);
}

/* The limit fires once per arm: on the take that leaves fewer receives than the limit,
 * never on a post; the SRQ then reads as disarmed until armed again. */
TEST(srq_limit_event_once_per_arm)
{
    struct srv v;
    srv_open(&v, 8);
    struct pair p;
    pair_on(&p, &v, 9, PAIR_MIXED, 1460);
    uint8_t rbuf[16 * 64];
    struct uiw_mr *rmr = uiw_reg_mr(v.pd, rbuf, sizeof(rbuf), LW);
    struct uiw_mr *src = pair_mr(&p, 0, 64, 0, 3);
    struct uiw_srq_attr at = {.srq_limit = 9};
    CHECK_EQ(uiw_modify_srq(v.srq, &at, UIW_SRQ_LIMIT), -EINVAL); /* above max_wr */
    CHECK_EQ(uiw_modify_srq(v.srq, &at, 1 << 2), -EINVAL);        /* an unknown bit */
    at.srq_limit = 3;
    CHECK_EQ(uiw_modify_srq(v.srq, &at, UIW_SRQ_LIMIT), 0);
    CHECK_EQ(uiw_query_srq(v.srq, &at), 0);
    CHECK_EQ(at.srq_limit, 3);
    CHECK_EQ(at.max_wr, 8);
    uint64_t id = 0;
    for (int i = 0; i < 8; i++)
        srq_post(v.srq, id++, rmr, (size_t)i * 64, 64);
    no_event(v.ctx);
    /* 8 -> 3 left: not below the limit yet */
    uint64_t sent = 0;
    for (int i = 0; i < 5; i++)
        CHECK_EQ(pair_post(&p, 0, sent++, UIW_WR_SEND, 0, src, 0, 8, 0, 0), 0);
    pair_pump(&p);
    CHECK_EQ(pair_nwc(&p, 1, false), 5);
    no_event(v.ctx);
    /* the take that leaves 2 fires, once */
    CHECK_EQ(pair_post(&p, 0, sent++, UIW_WR_SEND, 0, src, 0, 8, 0, 0), 0);
    pair_pump(&p);
    struct uiw_async_event ev = next_event(v.ctx, UIW_EVENT_SRQ_LIMIT_REACHED);
    CHECK(ev.srq == v.srq);
    CHECK(ev.qp == NULL);
    CHECK_STR(uiw_event_type_str(ev.event_type), "SRQ limit reached");
    CHECK_EQ(uiw_query_srq(v.srq, &at), 0);
    CHECK_EQ(at.srq_limit, 0);
    CHECK_EQ(pair_post(&p, 0, sent++, UIW_WR_SEND, 0, src, 0, 8, 0, 0), 0);
    pair_pump(&p);
    CHECK_EQ(pair_nwc(&p, 1, false), 2);
    no_event(v.ctx); /* 1 left, but disarmed */
    /* refill to 8: posting never fires; armed at 6, the take that leaves 5 fires */
    for (int i = 0; i < 7; i++)
        srq_post(v.srq, id++, rmr, (size_t)(8 + i) * 64, 64);
    at.srq_limit = 6;
    CHECK_EQ(uiw_modify_srq(v.srq, &at, UIW_SRQ_LIMIT), 0);
    no_event(v.ctx);
    CHECK_EQ(pair_post(&p, 0, sent++, UIW_WR_SEND, 0, src, 0, 8, 0, 0), 0);
    CHECK_EQ(pair_post(&p, 0, sent++, UIW_WR_SEND, 0, src, 0, 8, 0, 0), 0);
    pair_pump(&p);
    CHECK_EQ(pair_nwc(&p, 1, false), 2);
    no_event(v.ctx); /* 6 left */
    CHECK_EQ(pair_post(&p, 0, sent++, UIW_WR_SEND, 0, src, 0, 8, 0, 0), 0);
    CHECK_EQ(pair_post(&p, 0, sent++, UIW_WR_SEND, 0, src, 0, 8, 0, 0), 0);
    pair_pump(&p);
    CHECK_EQ(pair_nwc(&p, 1, false), 2);
    ev = next_event(v.ctx, UIW_EVENT_SRQ_LIMIT_REACHED);
    CHECK(ev.srq == v.srq);
    no_event(v.ctx);
    /* disarming by hand: no event */
    at.srq_limit = 4;
    CHECK_EQ(uiw_modify_srq(v.srq, &at, UIW_SRQ_LIMIT), 0);
    at.srq_limit = 0;
    CHECK_EQ(uiw_modify_srq(v.srq, &at, UIW_SRQ_LIMIT), 0);
    CHECK_EQ(pair_post(&p, 0, sent++, UIW_WR_SEND, 0, src, 0, 8, 0, 0), 0);
    pair_pump(&p);
    CHECK_EQ(pair_nwc(&p, 1, false), 1);
    no_event(v.ctx);
    pair_mr_free(src);
    pair_free(&p);
    CHECK_EQ(uiw_dereg_mr(rmr), 0);
    srv_close(&v);
}

/* A limit armed at creation (srq_limit in the init attributes) fires the same way. */
TEST(srq_limit_armed_at_create)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, false);
    struct uiw_srq_init_attr sa = {.attr = {.max_wr = 4, .max_sge = 1, .srq_limit = 5}};
    CHECK(uiw_create_srq(p.s[1].pd, &sa) == NULL);
    CHECK_EQ(errno, EINVAL);
    sa.attr.srq_limit = 2;
    struct uiw_srq *srq = uiw_create_srq(p.s[1].pd, &sa);
    CHECK(srq);
    struct uiw_srq_attr at;
    CHECK_EQ(uiw_query_srq(srq, &at), 0);
    CHECK_EQ(at.srq_limit, 2);
    struct uiw_pd *pd = p.s[1].pd;
    struct uiw_mr *m = pair_mr(&p, 1, 256, LW, 0);
    struct uiw_qp_init_attr qa = {.send_cq = p.s[1].scq,
                                  .recv_cq = p.s[1].rcq,
                                  .srq = srq,
                                  .cap = {.max_send_wr = 4, .max_recv_wr = 99999}};
    struct uiw_qp *qp = uiw_create_qp(pd, &qa); /* the RQ caps are ignored */
    CHECK(qp);
    CHECK_EQ(qa.cap.max_recv_wr, 0);
    for (int i = 0; i < 3; i++)
        srq_post(srq, (uint64_t)i, m, (size_t)i * 64, 64);
    struct uiw_srq_init_attr other = {.attr = {.max_wr = 1}};
    struct uiw_srq *srq2 = uiw_create_srq(pd, &other);
    CHECK(srq2);
    /* swap the pair's QP for one on the SRQ and start it */
    CHECK_EQ(uiw_destroy_qp(p.s[1].qp), 0);
    p.s[1].qp = qp;
    pair_start(&p);
    struct uiw_mr *src = pair_mr(&p, 0, 64, 0, 4);
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_SEND, 0, src, 0, 8, 0, 0), 0);
    pair_pump(&p);
    CHECK_EQ(pair_nwc(&p, 1, false), 1);
    struct uiw_async_event ev;
    CHECK(!pair_event(&p, 1, UIW_EVENT_SRQ_LIMIT_REACHED, &ev)); /* 2 left */
    CHECK_EQ(pair_post(&p, 0, 2, UIW_WR_SEND, 0, src, 0, 8, 0, 0), 0);
    pair_pump(&p);
    CHECK_EQ(pair_nwc(&p, 1, false), 1);
    CHECK(pair_event(&p, 1, UIW_EVENT_SRQ_LIMIT_REACHED, &ev)); /* 1 left */
    CHECK(ev.srq == srq);
    /* in use: the SRQ and its PD stay */
    CHECK_EQ(uiw_destroy_srq(srq), -EBUSY);
    CHECK_EQ(uiw_destroy_srq(srq2), 0);
    pair_mr_free(src);
    pair_mr_free(m);
    CHECK_EQ(uiw_dealloc_pd(pd), -EBUSY);
    CHECK_EQ(uiw_destroy_qp(p.s[1].qp), 0);
    p.s[1].qp = NULL;
    CHECK_EQ(uiw_dealloc_pd(pd), -EBUSY); /* the SRQ uses it */
    CHECK_EQ(uiw_destroy_srq(srq), 0);    /* its last receive is dropped */
    pair_free(&p);
}

/* The receive a QP took for a Send under way is that QP's: flushed to its recv CQ when it
 * fails before the Send's last segment, while the SRQ's other receives stay for the other
 * QPs; a Send too long for the receive completes it with a local length error. */
TEST(srq_taken_receive_flushed_or_failed_on_its_qp)
{
    struct srv v;
    srv_open(&v, 8);
    struct pair a, b;
    pair_on(&a, &v, 21, PAIR_DIRECT, 200);
    pair_on(&b, &v, 22, PAIR_MIXED, 1460);
    uint8_t *rbuf = calloc(1, 8192);
    struct uiw_mr *rmr = uiw_reg_mr(v.pd, rbuf, 8192, LW);
    struct uiw_mr *sa = pair_mr(&a, 0, 4096, 0, 5), *sb = pair_mr(&b, 0, 4096, 0, 6);
    srq_post(v.srq, 1, rmr, 0, 2048);
    srq_post(v.srq, 2, rmr, 2048, 2048);
    srq_post(v.srq, 3, rmr, 4096, 100);
    /* a's 2000-byte Send in segments of about 180 bytes: only the first ones arrive */
    CHECK_EQ(pair_post(&a, 0, 1, UIW_WR_SEND, 0, sa, 0, 2000, 0, 0), 0);
    pair_pump_dir(&a, 0, 500);
    CHECK_EQ(pair_nwc(&a, 1, false), 0);
    CHECK_EQ(uiw_modify_qp_state(a.s[1].qp, UIW_QPS_ERROR), 0);
    struct uiw_wc wc = pair_wc(&a, 1, false);
    CHECK_EQ(wc.wr_id, 1);
    CHECK_EQ(wc.status, UIW_WC_WR_FLUSH_ERR);
    CHECK_EQ(wc.qp_num, uiw_qp_num(a.s[1].qp));
    CHECK_EQ(pair_nwc(&a, 1, false), 0);
    struct uiw_async_event ev = next_event(v.ctx, UIW_EVENT_QP_LAST_WQE_REACHED);
    CHECK(ev.qp == a.s[1].qp);
    no_event(v.ctx);
    /* b takes the next one */
    fill(sb->addr, 4096, 9);
    CHECK_EQ(pair_post(&b, 0, 1, UIW_WR_SEND, 0, sb, 0, 1500, 0, 0), 0);
    pair_pump(&b);
    wc = pair_wc(&b, 1, false);
    CHECK_EQ(wc.wr_id, 2);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_MEM(rbuf + 2048, sb->addr, 1500);
    /* and the last, too short for its Send: LOC_LEN_ERR on b, Terminate "message too long" */
    CHECK_EQ(pair_post(&b, 0, 2, UIW_WR_SEND, 0, sb, 0, 101, 0, 0), 0);
    pair_pump(&b);
    wc = pair_wc(&b, 1, false);
    CHECK_EQ(wc.wr_id, 3);
    CHECK_EQ(wc.status, UIW_WC_LOC_LEN_ERR);
    CHECK_EQ(wc.qp_num, uiw_qp_num(b.s[1].qp));
    CHECK_EQ(pair_nwc(&b, 1, false), 0);
    expect_term(&b, 1, UIW_TERM_DU_MSG_TOO_LONG);
    next_event(v.ctx, UIW_EVENT_QP_REQ_ERR);
    ev = next_event(v.ctx, UIW_EVENT_QP_LAST_WQE_REACHED);
    CHECK(ev.qp == b.s[1].qp);
    pair_discard_tx(&a, 1);
    pair_mr_free(sa);
    pair_mr_free(sb);
    pair_free(&a);
    pair_free(&b);
    CHECK_EQ(uiw_dereg_mr(rmr), 0);
    free(rbuf);
    srv_close(&v);
}

/* Receives of an SRQ in another PD than the QP's are checked against the SRQ's PD, also
 * when the STag table changed between the post and the Send's arrival. */
TEST(srq_receives_use_the_srq_pd)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, false);
    struct uiw_pd *pd2 = uiw_alloc_pd(p.s[1].ctx);
    CHECK(pd2);
    struct uiw_srq_init_attr sa = {.attr = {.max_wr = 4}};
    struct uiw_srq *srq = uiw_create_srq(pd2, &sa);
    CHECK(srq);
    struct uiw_qp_init_attr qa = {
        .send_cq = p.s[1].scq, .recv_cq = p.s[1].rcq, .srq = srq, .cap = {.max_send_wr = 4}};
    CHECK_EQ(uiw_destroy_qp(p.s[1].qp), 0);
    p.s[1].qp = uiw_create_qp(p.s[1].pd, &qa);
    CHECK(p.s[1].qp);
    pair_start(&p);
    uint8_t rbuf[256] = {0};
    struct uiw_mr *rmr = uiw_reg_mr(pd2, rbuf, sizeof(rbuf), LW);
    struct uiw_mr *other = uiw_reg_mr(pd2, rbuf, 16, LW);
    srq_post(srq, 1, rmr, 0, 128);
    srq_post(srq, 2, rmr, 128, 128);
    struct uiw_mr *src = pair_mr(&p, 0, 64, 0, 0x5A);
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_SEND, 0, src, 0, 40, 0, 0), 0);
    pair_pump(&p);
    CHECK_EQ(pair_wc(&p, 1, false).status, UIW_WC_SUCCESS);
    CHECK_EQ(rbuf[39], 0x5A);
    CHECK_EQ(uiw_dereg_mr(other), 0); /* the table changes: the next receive is rechecked */
    CHECK_EQ(pair_post(&p, 0, 2, UIW_WR_SEND, 0, src, 0, 50, 0, 0), 0);
    pair_pump(&p);
    struct uiw_wc wc = pair_wc(&p, 1, false);
    CHECK_EQ(wc.wr_id, 2);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(rbuf[128 + 49], 0x5A);
    CHECK_EQ(uiw__qp_state(p.s[1].qp), UIW_QPS_RTS);
    pair_mr_free(src);
    CHECK_EQ(uiw_destroy_qp(p.s[1].qp), 0);
    p.s[1].qp = NULL;
    CHECK_EQ(uiw_dereg_mr(rmr), 0);
    CHECK_EQ(uiw_destroy_srq(srq), 0);
    CHECK_EQ(uiw_dealloc_pd(pd2), 0);
    pair_free(&p);
}

/* A receive whose memory was deregistered after the post is refused when a Send needs it:
 * LOC_PROT_ERR on the QP that took it. */
TEST(srq_receive_deregistered_after_post)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.srq1_wr = 4;
    pair_init(&p, &o, true);
    struct uiw_mr *dst = pair_mr(&p, 1, 256, LW, 0);
    struct uiw_mr *src = pair_mr(&p, 0, 64, 0, 1);
    pair_post_recv(&p, 1, 7, dst, 0, 128);
    void *mem = dst->addr;
    CHECK_EQ(uiw_dereg_mr(dst), 0);
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_SEND, 0, src, 0, 20, 0, 0), 0);
    pair_pump(&p);
    struct uiw_wc wc = pair_wc(&p, 1, false);
    CHECK_EQ(wc.wr_id, 7);
    CHECK_EQ(wc.status, UIW_WC_LOC_PROT_ERR);
    CHECK(uiw__qp_state(p.s[1].qp) == UIW_QPS_ERROR);
    free(mem);
    pair_mr_free(src);
    pair_free(&p);
}

/* Posting: bad SGE counts and a full SRQ fail at the right WR; a resize keeps the
 * receives in order and never drops below what the SRQ holds. */
TEST(srq_post_bounds_and_resize)
{
    struct srv v;
    srv_open(&v, 3);
    uint8_t rbuf[1024];
    struct uiw_mr *rmr = uiw_reg_mr(v.pd, rbuf, sizeof(rbuf), LW);
    struct uiw_sge sge[5];
    for (int i = 0; i < 5; i++)
        sge[i] = (struct uiw_sge){(uintptr_t)rbuf + (size_t)i * 8, 8, rmr->lkey};
    struct uiw_recv_wr w[5];
    for (int i = 0; i < 5; i++)
        w[i] = (struct uiw_recv_wr){.wr_id = (uint64_t)i + 1,
                                    .sg_list = sge,
                                    .num_sge = 1,
                                    .next = i < 4 ? &w[i + 1] : NULL};
    struct uiw_recv_wr *bad = NULL;
    w[1].num_sge = 5;
    CHECK_EQ(uiw_post_srq_recv(v.srq, &w[0], &bad), -EINVAL);
    CHECK(bad == &w[1]);
    w[1].num_sge = 4; /* w0 is in: w1 and w2 fill it */
    CHECK_EQ(uiw_post_srq_recv(v.srq, &w[1], &bad), -ENOMEM);
    CHECK(bad == &w[3]);
    struct uiw_srq_attr at = {.max_wr = 2};
    CHECK_EQ(uiw_modify_srq(v.srq, &at, UIW_SRQ_MAX_WR), -EINVAL); /* it holds 3 */
    at.max_wr = (1u << 20) + 1;
    CHECK_EQ(uiw_modify_srq(v.srq, &at, UIW_SRQ_MAX_WR), -EINVAL);
    at.max_wr = 6;
    CHECK_EQ(uiw_modify_srq(v.srq, &at, UIW_SRQ_MAX_WR), 0);
    CHECK_EQ(uiw_query_srq(v.srq, &at), 0);
    CHECK_EQ(at.max_wr, 6);
    w[4].next = NULL;
    w[3].next = NULL;
    CHECK_EQ(uiw_post_srq_recv(v.srq, &w[4], &bad), 0);
    CHECK_EQ(uiw_post_srq_recv(v.srq, &w[0], &bad), -ENOMEM); /* w0, w1 fill it */
    CHECK(bad == &w[2]);
    /* in posting order across the resize */
    struct pair p;
    pair_on(&p, &v, 3, PAIR_STAGED, 1460);
    struct uiw_mr *src = pair_mr(&p, 0, 64, 0, 1);
    const uint64_t order[6] = {1, 2, 3, 5, 1, 2};
    for (int i = 0; i < 6; i++) {
        CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_SEND, 0, src, 0, 8, 0, 0), 0);
        pair_pump(&p);
        struct uiw_wc wc = pair_wc(&p, 1, false);
        CHECK_EQ(wc.wr_id, order[i]);
    }
    pair_mr_free(src);
    pair_free(&p);
    struct uiw_srq_init_attr bad_attr = {.attr = {.max_wr = 0}};
    CHECK(uiw_create_srq(v.pd, &bad_attr) == NULL);
    bad_attr.attr.max_wr = 4;
    bad_attr.attr.max_sge = 5;
    CHECK(uiw_create_srq(v.pd, &bad_attr) == NULL);
    CHECK_EQ(uiw_dereg_mr(rmr), 0);
    srv_close(&v);
}

/* The staging decision sees the SRQ: a long receive there means a long Send may come
 * (read it straight into memory), small ones only that small Sends can. */
TEST(srq_rx_narrow_counts_srq_receives)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.srq1_wr = 4;
    pair_init(&p, &o, true);
    struct uiw_mr *m = pair_mr(&p, 1, 8192, LW, 0);
    CHECK(uiw__qp_rx_narrow(p.s[1].qp));
    pair_post_recv(&p, 1, 1, m, 0, 512);
    CHECK(uiw__qp_rx_narrow(p.s[1].qp));
    pair_post_recv(&p, 1, 2, m, 512, 4096);
    CHECK(!uiw__qp_rx_narrow(p.s[1].qp));
    struct uiw_mr *src = pair_mr(&p, 0, 8192, 0, 1);
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_SEND, 0, src, 0, 100, 0, 0), 0);
    CHECK_EQ(pair_post(&p, 0, 2, UIW_WR_SEND, 0, src, 0, 4000, 0, 0), 0);
    pair_pump(&p);
    CHECK_EQ(pair_nwc(&p, 1, false), 2);
    CHECK(uiw__qp_rx_narrow(p.s[1].qp));
    pair_mr_free(src);
    pair_mr_free(m);
    pair_free(&p);
}
