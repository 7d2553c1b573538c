/* End-to-end RDMA over real loopback connections: verbs driven through the cm. */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "io_util.h"
#include "io/io.h"

struct side {
    struct uiw_context *ctx;
    struct uiw_pd *pd;
    struct uiw_cq *cq;
    struct uiw_cm_id *id;
    struct uiw_comp_channel *cc; /* the CQ's completion channel, if it has one */
};

struct link {
    struct uiw_cm_channel *ch;
    struct uiw_cm_id *lid;
    struct side a; /* initiator */
    struct side b; /* responder */
};

/* The contexts link_up opens next are single-threaded (uiw_context_attr.single_threaded;
 * the test's one thread makes every call, and they have no progress thread). */
static bool sides_single;

static void side_open(struct side *s, bool thread, bool channel)
{
    struct uiw_context_attr at;
    uiw_context_attr_init(&at);
    at.progress_thread = thread;
    at.single_threaded = sides_single;
    s->ctx = uiw_open_context(&at);
    CHECK(s->ctx != NULL);
    s->pd = uiw_alloc_pd(s->ctx);
    CHECK(s->pd != NULL);
    s->cc = channel ? uiw_create_comp_channel(s->ctx) : NULL;
    CHECK(!channel || s->cc != NULL);
    s->cq = uiw_create_cq(s->ctx, 512, NULL, s->cc, 0);
    CHECK(s->cq != NULL);
}

static struct uiw_qp_init_attr qp_attr(struct side *s)
{
    struct uiw_qp_init_attr a = {
        .send_cq = s->cq,
        .recv_cq = s->cq,
        .cap = {.max_send_wr = 64,
                .max_recv_wr = 64,
                .max_send_sge = 4,
                .max_recv_sge = 4,
                .max_inline_data = 64},
    };
    return a;
}

/* b's CQ on a completion channel (k->b.cc) if chan_b. */
static void link_up_full(struct link *k, int family, bool ta, bool tb,
                         const struct uiw_conn_param *cp, const struct uiw_conn_param *sp,
                         bool chan_b)
{
    memset(k, 0, sizeof(*k));
    k->ch = uiw_cm_create_channel();
    CHECK(k->ch != NULL);
    side_open(&k->a, ta, false);
    side_open(&k->b, tb, chan_b);
    k->lid = uiw_cm_create_id(k->ch, k->b.ctx, NULL);
    uint16_t port = io_listen(k->lid, family, NULL);
    k->a.id = uiw_cm_create_id(k->ch, k->a.ctx, NULL);
    struct uiw_qp_init_attr qa = qp_attr(&k->a), qb = qp_attr(&k->b);
    CHECK_EQ(uiw_cm_create_qp(k->a.id, k->a.pd, &qa), 0);
    CHECK(k->a.id->qp != NULL);
    struct sockaddr_storage dst = io_addr(family, port);
    CHECK_EQ(uiw_cm_connect(k->a.id, (struct sockaddr *)&dst, cp), 0);
    struct uiw_cm_event *ev = io_expect(k->ch, UIW_CM_EVENT_CONNECT_REQUEST);
    k->b.id = ev->id;
    uiw_cm_ack_event(ev);
    CHECK(k->b.id->verbs == k->b.ctx);
    CHECK_EQ(uiw_cm_create_qp(k->b.id, k->b.pd, &qb), 0);
    CHECK_EQ(uiw_cm_accept(k->b.id, sp), 0);
    ev = io_expect(k->ch, UIW_CM_EVENT_ESTABLISHED);
    CHECK(ev->id == k->b.id);
    uiw_cm_ack_event(ev);
    ev = io_expect(k->ch, UIW_CM_EVENT_ESTABLISHED);
    CHECK(ev->id == k->a.id);
    uiw_cm_ack_event(ev);
}

static void link_up_ex(struct link *k, int family, bool ta, bool tb,
                       const struct uiw_conn_param *cp, const struct uiw_conn_param *sp)
{
    link_up_full(k, family, ta, tb, cp, sp, false);
}

static void link_up(struct link *k, int family)
{
    link_up_ex(k, family, true, true, NULL, NULL);
}

static void side_close(struct side *s)
{
    uiw_cm_destroy_qp(s->id);
    CHECK_EQ(uiw_cm_destroy_id(s->id), 0);
    CHECK_EQ(uiw_destroy_cq(s->cq), 0);
    if (s->cc)
        CHECK_EQ(uiw_destroy_comp_channel(s->cc), 0);
    CHECK_EQ(uiw_dealloc_pd(s->pd), 0);
    CHECK_EQ(uiw_close_context(s->ctx), 0);
}

/* Both DISCONNECTED events (any order). */
static void link_wait_down(struct link *k)
{
    bool seen_a = false, seen_b = false;
    while (!seen_a || !seen_b) {
        struct uiw_cm_event *ev = io_expect(k->ch, UIW_CM_EVENT_DISCONNECTED);
        if (ev->id == k->a.id)
            seen_a = true;
        else if (ev->id == k->b.id)
            seen_b = true;
        else
            CHECK(0);
        uiw_cm_ack_event(ev);
    }
}

static void link_close(struct link *k)
{
    side_close(&k->a);
    side_close(&k->b);
    CHECK_EQ(uiw_cm_destroy_id(k->lid), 0);
    CHECK_EQ(uiw_cm_destroy_channel(k->ch), 0);
}

/* Disconnect (initiator side), wait for both ends, tear everything down. */
static void link_down(struct link *k, bool disconnect)
{
    if (disconnect)
        CHECK_EQ(uiw_cm_disconnect(k->a.id), 0);
    link_wait_down(k);
    link_close(k);
}

/* When set, wait_wc drives the connections of this cm channel too (those of contexts
 * without a progress thread: the peer of the side waited for, serving its Reads). */
static struct uiw_cm_channel *wait_drives;

/* One completion within the bound (progress inline from poll when no thread runs). */
static void wait_wc(struct side *s, struct uiw_wc *wc)
{
    uint64_t end = io_now_ms() + EV_WAIT_MS;
    for (;;) {
        int n = uiw_poll_cq(s->cq, 1, wc);
        CHECK(n >= 0);
        if (n == 1)
            return;
        if (io_now_ms() > end)
            uiw_test_fail(__FILE__, __LINE__, "no completion within %d ms", EV_WAIT_MS);
        struct uiw_cm_event *ev;
        if (wait_drives && uiw_cm_get_event(wait_drives, &ev, 0) == 0)
            uiw_test_fail(__FILE__, __LINE__, "cm event %s", uiw_cm_event_str(ev->event));
        struct pollfd none;
        poll(&none, 0, 1);
    }
}

static void expect_wc(struct side *s, uint64_t wr_id, enum uiw_wc_opcode op, enum uiw_wc_status st,
                      uint32_t len)
{
    struct uiw_wc wc;
    wait_wc(s, &wc);
    if (wc.status != st)
        uiw_test_fail(__FILE__, __LINE__, "wr %llu: status %s (vendor %s), wanted %s",
                      (unsigned long long)wc.wr_id, uiw_wc_status_str(wc.status),
                      uiw_strerror(wc.vendor_err), uiw_wc_status_str(st));
    CHECK_EQ(wc.wr_id, wr_id);
    if (st == UIW_WC_SUCCESS) {
        CHECK_EQ(wc.opcode, op);
        if (op == UIW_WC_RECV || op == UIW_WC_RDMA_READ)
            CHECK_EQ(wc.byte_len, len);
    }
}

static void post_recv(struct side *s, struct uiw_mr *mr, void *buf, uint32_t len, uint64_t id)
{
    struct uiw_sge sge = {.addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey};
    struct uiw_recv_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1}, *bad = NULL;
    CHECK_EQ(uiw_post_recv(s->id->qp, &wr, &bad), 0);
}

static void post_op_ex(struct side *s, enum uiw_wr_opcode op, struct uiw_mr *mr, void *buf,
                       uint32_t len, uint64_t raddr, uint32_t rkey, uint64_t id, unsigned flags,
                       uint32_t inv)
{
    struct uiw_sge sge = {.addr = (uintptr_t)buf, .length = len, .lkey = mr ? mr->lkey : 0};
    struct uiw_send_wr wr = {
        .wr_id = id,
        .sg_list = &sge,
        .num_sge = len ? 1 : 0,
        .opcode = op,
        .send_flags = flags,
        .invalidate_rkey = inv,
    };
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    struct uiw_send_wr *bad = NULL;
    CHECK_EQ(uiw_post_send(s->id->qp, &wr, &bad), 0);
}

static void post_op(struct side *s, enum uiw_wr_opcode op, struct uiw_mr *mr, void *buf,
                    uint32_t len, uint64_t raddr, uint32_t rkey, uint64_t id)
{
    struct uiw_sge sge = {.addr = (uintptr_t)buf, .length = len, .lkey = mr ? mr->lkey : 0};
    struct uiw_send_wr wr = {
        .wr_id = id,
        .sg_list = &sge,
        .num_sge = len ? 1 : 0,
        .opcode = op,
        .send_flags = UIW_SEND_SIGNALED,
    };
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    struct uiw_send_wr *bad = NULL;
    CHECK_EQ(uiw_post_send(s->id->qp, &wr, &bad), 0);
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (uint8_t)(x >> 16);
    }
}

/* Send, RDMA Write and RDMA Read in both directions, small and large. */
static void exercise(struct link *k, size_t big)
{
    struct side *a = &k->a, *b = &k->b;
    uint8_t *abuf = calloc(1, big), *bbuf = calloc(1, big), *abuf2 = calloc(1, big);
    CHECK(abuf && bbuf && abuf2);
    unsigned acc = UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | UIW_ACCESS_REMOTE_READ;
    struct uiw_mr *amr = uiw_reg_mr(a->pd, abuf, big, acc);
    struct uiw_mr *amr2 = uiw_reg_mr(a->pd, abuf2, big, acc);
    struct uiw_mr *bmr = uiw_reg_mr(b->pd, bbuf, big, acc);
    CHECK(amr && amr2 && bmr);

    /* Send a -> b, b -> a. */
    fill(abuf, 100, 1);
    post_recv(b, bmr, bbuf, 4096, 11);
    post_op(a, UIW_WR_SEND, amr, abuf, 100, 0, 0, 1);
    expect_wc(a, 1, UIW_WC_SEND, UIW_WC_SUCCESS, 0);
    expect_wc(b, 11, UIW_WC_RECV, UIW_WC_SUCCESS, 100);
    CHECK_MEM(bbuf, abuf, 100);
    fill(bbuf, 3000, 2);
    post_recv(a, amr2, abuf2, 4096, 12);
    post_op(b, UIW_WR_SEND, bmr, bbuf, 3000, 0, 0, 2);
    expect_wc(b, 2, UIW_WC_SEND, UIW_WC_SUCCESS, 0);
    expect_wc(a, 12, UIW_WC_RECV, UIW_WC_SUCCESS, 3000);
    CHECK_MEM(abuf2, bbuf, 3000);

    /* Large RDMA Write a -> b, then a reads it back into abuf2. */
    fill(abuf, big, 3);
    memset(bbuf, 0, big);
    memset(abuf2, 0, big);
    post_op(a, UIW_WR_RDMA_WRITE, amr, abuf, (uint32_t)big, (uintptr_t)bbuf, bmr->rkey, 3);
    expect_wc(a, 3, UIW_WC_RDMA_WRITE, UIW_WC_SUCCESS, 0);
    post_op(a, UIW_WR_RDMA_READ, amr2, abuf2, (uint32_t)big, (uintptr_t)bbuf, bmr->rkey, 4);
    expect_wc(a, 4, UIW_WC_RDMA_READ, UIW_WC_SUCCESS, (uint32_t)big);
    CHECK_MEM(bbuf, abuf, big);
    CHECK_MEM(abuf2, abuf, big);

    /* And b reads a's memory. */
    fill(abuf, big, 4);
    post_op(b, UIW_WR_RDMA_READ, bmr, bbuf, (uint32_t)big, (uintptr_t)abuf, amr->rkey, 5);
    expect_wc(b, 5, UIW_WC_RDMA_READ, UIW_WC_SUCCESS, (uint32_t)big);
    CHECK_MEM(bbuf, abuf, big);

    /* A last Send a -> b: once it completed at a, a's transmit path has returned from
     * every write that read abuf (Read Responses go out before later Sends). */
    post_recv(b, bmr, bbuf, 4096, 13);
    post_op(a, UIW_WR_SEND, amr2, abuf2, 16, 0, 0, 6);
    expect_wc(a, 6, UIW_WC_SEND, UIW_WC_SUCCESS, 0);
    expect_wc(b, 13, UIW_WC_RECV, UIW_WC_SUCCESS, 16);

    CHECK_EQ(uiw_dereg_mr(amr), 0);
    CHECK_EQ(uiw_dereg_mr(amr2), 0);
    CHECK_EQ(uiw_dereg_mr(bmr), 0);
    free(abuf);
    free(abuf2);
    free(bbuf);
}

TEST(data_ops_ipv4)
{
    struct link k;
    link_up(&k, AF_INET);
    struct uiw_qp_attr qa;
    CHECK_EQ(uiw_query_qp(k.a.id->qp, &qa), 0);
    CHECK_EQ(qa.state, UIW_QPS_RTS);
    CHECK_EQ(qa.mpa_rev, 2);
    exercise(&k, 1 << 20);
    link_down(&k, true);
}

TEST(data_ops_ipv6)
{
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_storage ss = io_addr(AF_INET6, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&ss, sizeof(struct sockaddr_in6)) < 0)
        SKIP("no IPv6 loopback");
    close(fd);
    struct link k;
    link_up(&k, AF_INET6);
    exercise(&k, 256 << 10);
    link_down(&k, true);
}

TEST(data_ops_crc)
{
    struct link k;
    struct uiw_conn_param cp = {IO_DEPTHS, .crc = true};
    link_up_ex(&k, AF_INET, true, true, &cp, NULL);
    struct uiw_qp_attr qa, qb;
    CHECK_EQ(uiw_query_qp(k.a.id->qp, &qa), 0);
    CHECK_EQ(uiw_query_qp(k.b.id->qp, &qb), 0);
    CHECK(qa.crc && qb.crc);
    exercise(&k, 1 << 20);
    link_down(&k, true);
}

TEST(data_ops_markers_both_directions)
{
    struct link k;
    struct uiw_conn_param cp = {IO_DEPTHS, .markers = true, .crc = true},
                          sp = {IO_DEPTHS, .markers = true};
    link_up_ex(&k, AF_INET, true, true, &cp, &sp);
    struct uiw_qp_attr qa, qb;
    CHECK_EQ(uiw_query_qp(k.a.id->qp, &qa), 0);
    CHECK_EQ(uiw_query_qp(k.b.id->qp, &qb), 0);
    CHECK(qa.markers_tx && qa.markers_rx && qb.markers_tx && qb.markers_rx);
    exercise(&k, 300000);
    link_down(&k, true);
}

TEST(data_ops_rev1_both_directions)
{
    struct link k;
    struct uiw_conn_param v1 = {IO_DEPTHS, .mpa_rev = 1};
    link_up_ex(&k, AF_INET, true, true, &v1, NULL); /* Rev 1 initiator */
    struct uiw_qp_attr qa;
    CHECK_EQ(uiw_query_qp(k.b.id->qp, &qa), 0);
    CHECK_EQ(qa.mpa_rev, 1);
    exercise(&k, 100000);
    link_down(&k, true);
    link_up_ex(&k, AF_INET, true, true, NULL, &v1); /* Rev 1 responder */
    CHECK_EQ(uiw_query_qp(k.a.id->qp, &qa), 0);
    CHECK_EQ(qa.mpa_rev, 1);
    exercise(&k, 100000);
    link_down(&k, true);
}

static void rtr_case(uint8_t rtr)
{
    struct link k;
    struct uiw_conn_param cp = {IO_DEPTHS, .peer2peer = true, .rtr = rtr};
    struct uiw_conn_param sp = {IO_DEPTHS, .peer2peer = true, .rtr = rtr};
    link_up_ex(&k, AF_INET, true, true, &cp, &sp);
    struct uiw_cm_conn_info ci;
    CHECK_EQ(uiw_cm_query(k.a.id, &ci), 0);
    CHECK_EQ(ci.rtr, rtr);
    /* The responder speaks first: its Send may only leave after the RTR arrived. */
    uint8_t *x = calloc(1, 4096), *y = calloc(1, 4096);
    unsigned acc = UIW_ACCESS_LOCAL_WRITE;
    struct uiw_mr *xm = uiw_reg_mr(k.a.pd, x, 4096, acc), *ym = uiw_reg_mr(k.b.pd, y, 4096, acc);
    fill(y, 64, 9);
    post_recv(&k.a, xm, x, 4096, 21);
    post_op(&k.b, UIW_WR_SEND, ym, y, 64, 0, 0, 22);
    expect_wc(&k.b, 22, UIW_WC_SEND, UIW_WC_SUCCESS, 0);
    expect_wc(&k.a, 21, UIW_WC_RECV, UIW_WC_SUCCESS, 64);
    CHECK_MEM(x, y, 64);
    uiw_dereg_mr(xm);
    uiw_dereg_mr(ym);
    free(x);
    free(y);
    exercise(&k, 65536);
    link_down(&k, true);
}

TEST(data_peer2peer_rtr)
{
    rtr_case(UIW_CM_RTR_WRITE);
    rtr_case(UIW_CM_RTR_READ);
    rtr_case(UIW_CM_RTR_SEND);
}

/* The responder's application never calls into the stack while the initiator reads its
 * memory: its progress thread serves the Read. The initiator has no progress thread and
 * progresses inline from uiw_poll_cq. */
TEST(data_peer_read_while_app_sleeps)
{
    struct link k;
    link_up_ex(&k, AF_INET, false, true, NULL, NULL);
    size_t n = 2 << 20;
    uint8_t *src = malloc(n), *dst = calloc(1, n);
    fill(src, n, 7);
    struct uiw_mr *sm = uiw_reg_mr(k.b.pd, src, n, UIW_ACCESS_REMOTE_READ);
    struct uiw_mr *dm = uiw_reg_mr(k.a.pd, dst, n, UIW_ACCESS_LOCAL_WRITE);
    CHECK(sm && dm);
    post_op(&k.a, UIW_WR_RDMA_READ, dm, dst, (uint32_t)n, (uintptr_t)src, sm->rkey, 31);
    expect_wc(&k.a, 31, UIW_WC_RDMA_READ, UIW_WC_SUCCESS, (uint32_t)n);
    CHECK_MEM(dst, src, n);
    /* The responder's CQ saw nothing: a Read completes only at the requester. */
    struct uiw_wc wc;
    CHECK_EQ(uiw_poll_cq(k.b.cq, 1, &wc), 0);
    struct uiw_context_stats st;
    CHECK_EQ(uiw_query_context_stats(k.a.ctx, &st), 0);
    CHECK(st.placed_payload_bytes >= n);
    CHECK(st.rx_bytes > n);
    /* b's progress thread may still be returning from the write that sent src: free
     * the memory once the connection is down. */
    CHECK_EQ(uiw_cm_disconnect(k.a.id), 0);
    link_wait_down(&k);
    uiw_dereg_mr(sm);
    uiw_dereg_mr(dm);
    link_close(&k);
    free(src);
    free(dst);
}

/* The responder's application busy-polls (its progress thread then leaves the sockets to
 * it), then stops calling into the stack: its progress thread serves the peer's Read. */
TEST(data_peer_read_after_busy_poll)
{
    struct link k;
    link_up_ex(&k, AF_INET, false, true, NULL, NULL);
    size_t n = 2 << 20;
    uint8_t *src = malloc(n), *dst = calloc(1, n), *msg = calloc(1, 64);
    CHECK(src && dst && msg);
    fill(src, n, 9);
    struct uiw_mr *sm = uiw_reg_mr(k.b.pd, src, n, UIW_ACCESS_REMOTE_READ);
    struct uiw_mr *dm = uiw_reg_mr(k.a.pd, dst, n, UIW_ACCESS_LOCAL_WRITE);
    struct uiw_mr *mm = uiw_reg_mr(k.b.pd, msg, 64, UIW_ACCESS_LOCAL_WRITE);
    CHECK(sm && dm && mm);
    for (int round = 0; round < 3; round++) {
        /* b spins on its CQ (no sleep) until a's Send arrives */
        post_recv(&k.b, mm, msg, 64, 40 + (uint64_t)round);
        post_op(&k.a, UIW_WR_SEND, dm, dst, 64, 0, 0, 50 + (uint64_t)round);
        struct uiw_wc wc;
        uint64_t end = io_now_ms() + EV_WAIT_MS;
        int got;
        while ((got = uiw_poll_cq(k.b.cq, 1, &wc)) == 0)
            CHECK(io_now_ms() < end);
        CHECK_EQ(got, 1);
        CHECK_EQ(wc.wr_id, 40 + (uint64_t)round);
        CHECK_EQ(wc.status, UIW_WC_SUCCESS);
        expect_wc(&k.a, 50 + (uint64_t)round, UIW_WC_SEND, UIW_WC_SUCCESS, 0);
        /* now b's application is away; a reads b's memory */
        memset(dst, 0, n);
        post_op(&k.a, UIW_WR_RDMA_READ, dm, dst, (uint32_t)n, (uintptr_t)src, sm->rkey,
                60 + (uint64_t)round);
        expect_wc(&k.a, 60 + (uint64_t)round, UIW_WC_RDMA_READ, UIW_WC_SUCCESS, (uint32_t)n);
        CHECK_MEM(dst, src, n);
    }
    CHECK_EQ(uiw_cm_disconnect(k.a.id), 0);
    link_wait_down(&k);
    uiw_dereg_mr(sm);
    uiw_dereg_mr(dm);
    uiw_dereg_mr(mm);
    link_close(&k);
    free(src);
    free(dst);
    free(msg);
}

/* A raw MPA initiator (our own frames on a plain socket) that vanishes with a TCP reset:
 * every outstanding work request on our side is flushed, DISCONNECTED reports the reset. */
TEST(data_flush_on_reset)
{
    struct uiw_cm_channel *ch = uiw_cm_create_channel();
    struct side s;
    side_open(&s, true, false);
    struct uiw_cm_id *lid = uiw_cm_create_id(ch, s.ctx, NULL);
    uint16_t port = io_listen(lid, AF_INET, NULL);
    int fd = raw_connect(AF_INET, port);
    struct uiw_mpa_frame rq = {.kind = UIW_MPA_REQUEST, .rev = 1};
    uint8_t buf[64];
    ssize_t fl = uiw_mpa_frame_encode(&rq, buf, sizeof(buf));
    CHECK_EQ(write(fd, buf, (size_t)fl), fl);
    struct uiw_cm_event *ev = io_expect(ch, UIW_CM_EVENT_CONNECT_REQUEST);
    s.id = ev->id;
    uiw_cm_ack_event(ev);
    struct uiw_qp_init_attr qa = qp_attr(&s);
    CHECK_EQ(uiw_cm_create_qp(s.id, s.pd, &qa), 0);
    CHECK_EQ(uiw_cm_accept(s.id, NULL), 0);
    uiw_cm_ack_event(io_expect(ch, UIW_CM_EVENT_ESTABLISHED));
    CHECK_EQ(raw_read(fd, buf, 20, 2000), 20);
    CHECK_MEM(buf, "MPA ID Rep Frame", 16);

    uint8_t *mem = calloc(1, 8192);
    struct uiw_mr *mr = uiw_reg_mr(s.pd, mem, 8192, UIW_ACCESS_LOCAL_WRITE);
    post_recv(&s, mr, mem, 1024, 41);
    post_recv(&s, mr, mem + 1024, 1024, 42);
    post_recv(&s, mr, mem + 2048, 1024, 43);
    /* A Read the raw peer never answers stays outstanding. */
    post_op(&s, UIW_WR_RDMA_READ, mr, mem + 4096, 512, 0x1000, 0x1234, 44);

    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    CHECK_EQ(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
    close(fd); /* RST */

    ev = io_expect(ch, UIW_CM_EVENT_DISCONNECTED);
    CHECK(ev->id == s.id);
    CHECK(ev->status != 0);
    uiw_cm_ack_event(ev);
    bool seen[4] = {false, false, false, false};
    for (int i = 0; i < 4; i++) {
        struct uiw_wc wc;
        wait_wc(&s, &wc);
        CHECK(wc.wr_id >= 41 && wc.wr_id <= 44);
        CHECK(!seen[wc.wr_id - 41]);
        seen[wc.wr_id - 41] = true;
        CHECK(wc.status == UIW_WC_WR_FLUSH_ERR || wc.status == UIW_WC_RETRY_EXC_ERR);
    }
    struct uiw_qp_attr at;
    CHECK_EQ(uiw_query_qp(s.id->qp, &at), 0);
    CHECK_EQ(at.state, UIW_QPS_ERROR);
    /* New work flushes at once. */
    post_recv(&s, mr, mem, 1024, 45);
    expect_wc(&s, 45, UIW_WC_RECV, UIW_WC_WR_FLUSH_ERR, 0);
    uiw_dereg_mr(mr);
    free(mem);
    side_close(&s);
    CHECK_EQ(uiw_cm_destroy_id(lid), 0);
    CHECK_EQ(uiw_cm_destroy_channel(ch), 0);
}

/* Graceful disconnect while Writes are queued: they complete, then DISCONNECTED. */
TEST(data_graceful_disconnect_completes_work)
{
    struct link k;
    link_up(&k, AF_INET);
    size_t n = 1 << 20;
    uint8_t *src = malloc(n), *dst = calloc(1, n);
    fill(src, n, 5);
    struct uiw_mr *sm = uiw_reg_mr(k.a.pd, src, n, UIW_ACCESS_LOCAL_WRITE);
    struct uiw_mr *dm =
        uiw_reg_mr(k.b.pd, dst, n, UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE);
    for (int i = 0; i < 8; i++)
        post_op(&k.a, UIW_WR_RDMA_WRITE, sm, src + i * (n / 8), (uint32_t)(n / 8),
                (uintptr_t)dst + i * (n / 8), dm->rkey, 50 + (uint64_t)i);
    CHECK_EQ(uiw_cm_disconnect(k.a.id), 0);
    for (int i = 0; i < 8; i++)
        expect_wc(&k.a, 50 + (uint64_t)i, UIW_WC_RDMA_WRITE, UIW_WC_SUCCESS, 0);
    link_wait_down(&k);
    CHECK_MEM(dst, src, n);
    uiw_dereg_mr(sm);
    uiw_dereg_mr(dm);
    link_close(&k);
    free(src);
    free(dst);
}

/* Many small Sends in a burst (bulk receive path), posted from another thread. */
struct burst {
    struct side *s;
    struct uiw_mr *mr;
    uint8_t *buf;
};

static void *burst_sender(void *arg)
{
    struct burst *bu = arg;
    for (int i = 0; i < 48; i++)
        post_op(bu->s, UIW_WR_SEND, bu->mr, bu->buf + i * 64, 64, 0, 0, 100 + (uint64_t)i);
    return NULL;
}

TEST(data_small_send_burst)
{
    struct link k;
    link_up(&k, AF_INET);
    uint8_t *tx = malloc(64 * 48), *rx = calloc(64, 48);
    fill(tx, 64 * 48, 8);
    struct uiw_mr *tm = uiw_reg_mr(k.a.pd, tx, 64 * 48, UIW_ACCESS_LOCAL_WRITE);
    struct uiw_mr *rm = uiw_reg_mr(k.b.pd, rx, 64 * 48, UIW_ACCESS_LOCAL_WRITE);
    for (int i = 0; i < 48; i++)
        post_recv(&k.b, rm, rx + i * 64, 64, 200 + (uint64_t)i);
    struct burst bu = {&k.a, tm, tx};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, burst_sender, &bu), 0);
    pthread_join(t, NULL);
    for (int i = 0; i < 48; i++)
        expect_wc(&k.b, 200 + (uint64_t)i, UIW_WC_RECV, UIW_WC_SUCCESS, 64);
    for (int i = 0; i < 48; i++)
        expect_wc(&k.a, 100 + (uint64_t)i, UIW_WC_SEND, UIW_WC_SUCCESS, 0);
    CHECK_MEM(rx, tx, 64 * 48);
    uiw_dereg_mr(tm);
    uiw_dereg_mr(rm);
    free(tx);
    free(rx);
    link_down(&k, true);
}

static uint64_t tx_bytes(struct side *s)
{
    struct uiw_context_stats st;
    CHECK_EQ(uiw_query_context_stats(s->ctx, &st), 0);
    return st.tx_bytes;
}

/* UIW_SEND_MORE holds a list's transmission (no progress thread: nothing else sends it)
 * until uiw_post_send_flush or a list without it; the held WRs keep their order and all
 * complete. */
TEST(data_send_more_waits_for_doorbell)
{
    struct link k;
    link_up_ex(&k, AF_INET, false, false, NULL, NULL);
    uint8_t *tx = malloc(64 * 6), *rx = calloc(64, 6);
    fill(tx, 64 * 6, 9);
    struct uiw_mr *tm = uiw_reg_mr(k.a.pd, tx, 64 * 6, UIW_ACCESS_LOCAL_WRITE);
    struct uiw_mr *rm = uiw_reg_mr(k.b.pd, rx, 64 * 6, UIW_ACCESS_LOCAL_WRITE);
    for (int i = 0; i < 6; i++)
        post_recv(&k.b, rm, rx + i * 64, 64, 200 + (uint64_t)i);
    CHECK_EQ(uiw_post_send_flush(NULL), -EINVAL);
    CHECK_EQ(uiw_post_send_flush(k.a.id->qp), 0); /* nothing held */
    uint64_t t0 = tx_bytes(&k.a);
    for (int i = 0; i < 3; i++)
        post_op_ex(&k.a, UIW_WR_SEND, tm, tx + i * 64, 64, 0, 0, 100 + (uint64_t)i,
                   UIW_SEND_SIGNALED | UIW_SEND_MORE, 0);
    CHECK_EQ(tx_bytes(&k.a), t0);
    CHECK_EQ(uiw_post_send_flush(k.a.id->qp), 0);
    uint64_t t1 = tx_bytes(&k.a);
    CHECK(t1 > t0 + 3 * 64);
    for (int i = 0; i < 3; i++)
        expect_wc(&k.b, 200 + (uint64_t)i, UIW_WC_RECV, UIW_WC_SUCCESS, 64);
    /* held, then a list without the flag: both go at once, in order */
    post_op_ex(&k.a, UIW_WR_SEND, tm, tx + 3 * 64, 64, 0, 0, 103, UIW_SEND_SIGNALED | UIW_SEND_MORE,
               0);
    CHECK_EQ(tx_bytes(&k.a), t1);
    struct uiw_sge sg[2] = {{(uintptr_t)(tx + 4 * 64), 64, tm->lkey},
                            {(uintptr_t)(tx + 5 * 64), 64, tm->lkey}};
    struct uiw_send_wr w[2] = {
        {.wr_id = 104,
         .sg_list = &sg[0],
         .num_sge = 1,
         .opcode = UIW_WR_SEND,
         .send_flags = UIW_SEND_SIGNALED | UIW_SEND_MORE},
        {.wr_id = 105,
         .sg_list = &sg[1],
         .num_sge = 1,
         .opcode = UIW_WR_SEND,
         .send_flags = UIW_SEND_SIGNALED},
    };
    w[0].next = &w[1];
    struct uiw_send_wr *bad = NULL;
    CHECK_EQ(uiw_post_send(k.a.id->qp, w, &bad), 0);
    CHECK(tx_bytes(&k.a) > t1 + 3 * 64);
    for (int i = 3; i < 6; i++)
        expect_wc(&k.b, 200 + (uint64_t)i, UIW_WC_RECV, UIW_WC_SUCCESS, 64);
    for (int i = 0; i < 6; i++)
        expect_wc(&k.a, 100 + (uint64_t)i, UIW_WC_SEND, UIW_WC_SUCCESS, 0);
    CHECK_MEM(rx, tx, 64 * 6);
    uiw_dereg_mr(tm);
    uiw_dereg_mr(rm);
    free(tx);
    free(rx);
    link_down(&k, true);
}

/* Destroying a connected QP closes its connection: the peer's work is flushed. */
TEST(data_destroy_qp_while_connected)
{
    struct link k;
    link_up(&k, AF_INET);
    uint8_t *mem = calloc(1, 4096);
    struct uiw_mr *mr = uiw_reg_mr(k.b.pd, mem, 4096, UIW_ACCESS_LOCAL_WRITE);
    post_recv(&k.b, mr, mem, 1024, 61);
    post_recv(&k.b, mr, mem + 1024, 1024, 62);
    uiw_cm_destroy_qp(k.a.id);
    CHECK(k.a.id->qp == NULL);
    struct uiw_cm_event *ev = io_expect(k.ch, UIW_CM_EVENT_DISCONNECTED);
    CHECK(ev->id == k.b.id);
    uiw_cm_ack_event(ev);
    expect_wc(&k.b, 61, UIW_WC_RECV, UIW_WC_WR_FLUSH_ERR, 0);
    expect_wc(&k.b, 62, UIW_WC_RECV, UIW_WC_WR_FLUSH_ERR, 0);
    struct uiw_qp_attr at;
    CHECK_EQ(uiw_query_qp(k.b.id->qp, &at), 0);
    CHECK_EQ(at.state, UIW_QPS_ERROR);
    uiw_dereg_mr(mr);
    free(mem);
    link_close(&k);
}

static int count_pcaps(const char *dir, const char *needle, size_t nlen)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "ls %s", dir);
    FILE *ls = popen(cmd, "r");
    CHECK(ls != NULL);
    char name[256];
    int n = 0;
    while (fgets(name, sizeof(name), ls)) {
        name[strcspn(name, "\n")] = 0;
        char path[800];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        FILE *f = fopen(path, "rb");
        CHECK(f != NULL);
        static uint8_t buf[1 << 16];
        size_t len = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        CHECK(len > 24);
        CHECK_EQ(buf[0] | buf[1] << 8 | buf[2] << 16 | (uint32_t)buf[3] << 24, 0xa1b2c3d4u);
        bool found = false;
        for (size_t i = 0; i + nlen <= len && !found; i++)
            found = memcmp(buf + i, needle, nlen) == 0;
        CHECK(found);
        unlink(path);
        n++;
    }
    pclose(ls);
    return n;
}

/* Captures: per connection through the parameter, for every connection through
 * UIW_PCAP_DIR; the handshake is in them. */
TEST(data_pcap_capture)
{
    char dir[] = "/tmp/uiw-io-pcap-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    struct link k;
    struct uiw_conn_param cp = {IO_DEPTHS, .pcap_dir = dir};
    link_up_ex(&k, AF_INET, true, true, &cp, NULL);
    exercise(&k, 65536);
    link_down(&k, true);
    CHECK_EQ(count_pcaps(dir, "MPA ID Req Frame", 16), 1);

    CHECK_EQ(setenv("UIW_PCAP_DIR", dir, 1), 0);
    link_up(&k, AF_INET);
    exercise(&k, 4096);
    link_down(&k, true);
    unsetenv("UIW_PCAP_DIR");
    CHECK_EQ(count_pcaps(dir, "MPA ID Rep Frame", 16), 2);
    rmdir(dir);
}

/* RDMA Writes and a Send from a file region over a real connection, the payload handed
 * to TCP by sendfile: a large Write, a Send, a Write that runs past the file's end
 * (zeros there), each landing as the file holds it; the context counts them as sent from
 * a file. With capture: the pcap holds the file's bytes (read again for it). */
static void file_region_ops(const char *pcap_dir)
{
    struct link k;
    struct uiw_conn_param cp = {IO_DEPTHS, .pcap_dir = pcap_dir};
    link_up_ex(&k, AF_INET, true, true, pcap_dir ? &cp : NULL, NULL);
    size_t size = (1u << 20) + 4321, big = 1u << 20;
    char name[] = "/tmp/uiw-io-file-XXXXXX";
    int fd = mkstemp(name);
    CHECK(fd >= 0);
    CHECK_EQ(unlink(name), 0);
    uint8_t *data = malloc(size), *bbuf = calloc(1, big + 4096);
    CHECK(data && bbuf);
    fill(data, size, 21);
    CHECK_EQ(pwrite(fd, data, size, 0), (ssize_t)size);
    /* from byte 321 on, 5000 bytes longer than what the file holds from there */
    size_t rlen = size - 321 + 5000;
    struct uiw_mr *fmr = uiw_reg_mr_file(k.a.pd, fd, 321, rlen);
    CHECK(fmr != NULL);
    CHECK_EQ(close(fd), 0);
    unsigned acc = UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | UIW_ACCESS_REMOTE_READ;
    struct uiw_mr *bmr = uiw_reg_mr(k.b.pd, bbuf, big + 4096, acc);
    CHECK(bmr != NULL);

    post_op(&k.a, UIW_WR_RDMA_WRITE, fmr, NULL, (uint32_t)big, (uintptr_t)bbuf, bmr->rkey, 1);
    expect_wc(&k.a, 1, UIW_WC_RDMA_WRITE, UIW_WC_SUCCESS, 0);
    /* a Send after it, into the region's end: once it arrived, so had the Write */
    post_recv(&k.b, bmr, bbuf + big, 4096, 2);
    post_op(&k.a, UIW_WR_SEND, fmr, (void *)(uintptr_t)100, 3000, 0, 0, 3);
    expect_wc(&k.a, 3, UIW_WC_SEND, UIW_WC_SUCCESS, 0);
    expect_wc(&k.b, 2, UIW_WC_RECV, UIW_WC_SUCCESS, 3000);
    CHECK_MEM(bbuf, data + 321, big);
    CHECK_MEM(bbuf + big, data + 421, 3000);

    /* 1000 bytes of the file's last ones, then 5000 past its end */
    memset(bbuf, 0xEE, 8000);
    post_op(&k.a, UIW_WR_RDMA_WRITE, fmr, (void *)(uintptr_t)(rlen - 6000), 6000, (uintptr_t)bbuf,
            bmr->rkey, 4);
    expect_wc(&k.a, 4, UIW_WC_RDMA_WRITE, UIW_WC_SUCCESS, 0);
    post_recv(&k.b, bmr, bbuf + big, 4096, 5);
    post_op(&k.a, UIW_WR_SEND, fmr, NULL, 8, 0, 0, 6);
    expect_wc(&k.b, 5, UIW_WC_RECV, UIW_WC_SUCCESS, 8);
    expect_wc(&k.a, 6, UIW_WC_SEND, UIW_WC_SUCCESS, 0);
    CHECK_MEM(bbuf, data + size - 1000, 1000);
    static const uint8_t zeros[5000];
    CHECK_MEM(bbuf + 1000, zeros, 5000);
    CHECK_EQ(bbuf[6000], 0xEE);

    struct uiw_context_stats st;
    CHECK_EQ(uiw_query_context_stats(k.a.ctx, &st), 0);
    CHECK_EQ(st.file_payload_bytes, big + 3000 + 6000 + 8);
    CHECK_EQ(uiw_dereg_mr(fmr), 0);
    CHECK_EQ(uiw_dereg_mr(bmr), 0);
    link_down(&k, true);
    if (pcap_dir) /* the Write's first payload bytes, in the one capture (a's) */
        CHECK_EQ(count_pcaps(pcap_dir, (const char *)data + 321 + 100, 32), 1);
    free(data);
    free(bbuf);
}

TEST(data_ops_from_file_region)
{
    file_region_ops(NULL);
}

TEST(data_ops_from_file_region_captured)
{
    char dir[] = "/tmp/uiw-io-fpcap-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    file_region_ops(dir);
    rmdir(dir);
}

static void post_reg(struct side *s, struct uiw_mr *fmr, uint32_t key, void *addr, size_t len,
                     unsigned access, uint64_t id)
{
    struct uiw_send_wr wr = {.wr_id = id, .opcode = UIW_WR_REG_MR, .send_flags = UIW_SEND_SIGNALED};
    wr.wr.reg.mr = fmr;
    wr.wr.reg.key = key;
    wr.wr.reg.addr = addr;
    wr.wr.reg.length = len;
    wr.wr.reg.access = access;
    struct uiw_send_wr *bad = NULL;
    CHECK_EQ(uiw_post_send(s->id->qp, &wr, &bad), 0);
}

static void expect_recv_flags(struct side *s, uint64_t id, uint32_t len, unsigned flags,
                              uint32_t inv)
{
    struct uiw_wc wc;
    wait_wc(s, &wc);
    CHECK_EQ(wc.wr_id, id);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(wc.opcode, UIW_WC_RECV);
    CHECK_EQ(wc.byte_len, len);
    CHECK_EQ(wc.wc_flags, flags);
    if (flags & UIW_WC_WITH_INV)
        CHECK_EQ(wc.invalidated_rkey, inv);
}

/* Every opcode and flag over a real connection: fast-register, 4-SGE Write, inline Send
 * with SE, Send with Invalidate, Send with SE and Invalidate, Local Invalidate, fenced
 * Send after a Read, selective signalling. */
TEST(data_every_opcode)
{
    struct link k;
    struct uiw_conn_param cp = {IO_DEPTHS, .crc = true};
    link_up_ex(&k, AF_INET, true, true, &cp, NULL);
    struct side *a = &k.a, *b = &k.b;
    enum { SZ = 16384 };
    uint8_t *am = calloc(1, SZ), *bm = calloc(1, SZ), *bt = calloc(1, SZ);
    unsigned acc = UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | UIW_ACCESS_REMOTE_READ;
    struct uiw_mr *amr = uiw_reg_mr(a->pd, am, SZ, acc);
    struct uiw_mr *bmr = uiw_reg_mr(b->pd, bm, SZ, acc);
    struct uiw_mr *fmr = uiw_alloc_mr(b->pd, SZ);
    CHECK(amr && bmr && fmr);
    for (int i = 0; i < 8; i++)
        post_recv(b, bmr, bm + 8192 + i * 256, 256, 300 + (uint64_t)i);

    /* Fast-register b's target under a new key. */
    uint32_t k1 = uiw_inc_rkey(fmr->rkey);
    post_reg(b, fmr, k1, bt, SZ, acc, 1);
    expect_wc(b, 1, UIW_WC_REG_MR, UIW_WC_SUCCESS, 0);

    /* RDMA Write gathered from 4 SGEs into it. */
    fill(am, 4000, 11);
    struct uiw_sge sg[4];
    for (int i = 0; i < 4; i++)
        sg[i] = (struct uiw_sge){
            .addr = (uintptr_t)am + (uint64_t)i * 1000, .length = 1000, .lkey = amr->lkey};
    struct uiw_send_wr w = {.wr_id = 2,
                            .sg_list = sg,
                            .num_sge = 4,
                            .opcode = UIW_WR_RDMA_WRITE,
                            .send_flags = UIW_SEND_SIGNALED};
    w.wr.rdma.remote_addr = (uintptr_t)bt + 100;
    w.wr.rdma.rkey = k1;
    struct uiw_send_wr *bad = NULL;
    CHECK_EQ(uiw_post_send(a->id->qp, &w, &bad), 0);
    expect_wc(a, 2, UIW_WC_RDMA_WRITE, UIW_WC_SUCCESS, 0);

    /* Inline Send with Solicited Event: after it arrived the Write is placed too. */
    uint8_t msg[40];
    fill(msg, sizeof(msg), 12);
    post_op_ex(a, UIW_WR_SEND, NULL, msg, sizeof(msg), 0, 0, 3,
               UIW_SEND_SIGNALED | UIW_SEND_INLINE | UIW_SEND_SOLICITED, 0);
    memset(msg, 0, sizeof(msg)); /* inline: the buffer is free again at once */
    expect_wc(a, 3, UIW_WC_SEND, UIW_WC_SUCCESS, 0);
    expect_recv_flags(b, 300, 40, UIW_WC_SOLICITED, 0);
    CHECK_MEM(bt + 100, am, 4000);
    fill(msg, sizeof(msg), 12);
    CHECK_MEM(bm + 8192, msg, 40);

    /* Send with Invalidate of k1. */
    post_op_ex(a, UIW_WR_SEND_WITH_INV, amr, am, 64, 0, 0, 4, UIW_SEND_SIGNALED, k1);
    expect_wc(a, 4, UIW_WC_SEND, UIW_WC_SUCCESS, 0);
    expect_recv_flags(b, 301, 64, UIW_WC_WITH_INV, k1);

    /* Registered again under the next key; Send with SE and Invalidate. */
    uint32_t k2 = uiw_inc_rkey(k1);
    post_reg(b, fmr, k2, bt, SZ, acc, 5);
    expect_wc(b, 5, UIW_WC_REG_MR, UIW_WC_SUCCESS, 0);
    post_op(a, UIW_WR_RDMA_WRITE, amr, am, 512, (uintptr_t)bt, k2, 6);
    expect_wc(a, 6, UIW_WC_RDMA_WRITE, UIW_WC_SUCCESS, 0);
    post_op_ex(a, UIW_WR_SEND_WITH_SE_AND_INV, amr, am, 8, 0, 0, 7, UIW_SEND_SIGNALED, k2);
    expect_wc(a, 7, UIW_WC_SEND, UIW_WC_SUCCESS, 0);
    expect_recv_flags(b, 302, 8, UIW_WC_SOLICITED | UIW_WC_WITH_INV, k2);
    CHECK_MEM(bt, am, 512);

    /* Local Invalidate. */
    uint32_t k3 = uiw_inc_rkey(k2);
    post_reg(b, fmr, k3, bt, SZ, acc, 8);
    expect_wc(b, 8, UIW_WC_REG_MR, UIW_WC_SUCCESS, 0);
    post_op_ex(b, UIW_WR_LOCAL_INV, NULL, NULL, 0, 0, 0, 9, UIW_SEND_SIGNALED, k3);
    expect_wc(b, 9, UIW_WC_LOCAL_INV, UIW_WC_SUCCESS, 0);

    /* Read, then a fenced Send; an unsignalled Send in between completes silently. */
    fill(bm, 4096, 13);
    post_op(a, UIW_WR_RDMA_READ, amr, am + 4096, 4096, (uintptr_t)bm, bmr->rkey, 10);
    post_op_ex(a, UIW_WR_SEND, amr, am, 16, 0, 0, 11, 0, 0);
    post_op_ex(a, UIW_WR_SEND, amr, am + 4096, 32, 0, 0, 12, UIW_SEND_SIGNALED | UIW_SEND_FENCE, 0);
    expect_wc(a, 10, UIW_WC_RDMA_READ, UIW_WC_SUCCESS, 4096);
    expect_wc(a, 12, UIW_WC_SEND, UIW_WC_SUCCESS, 0);
    expect_recv_flags(b, 303, 16, 0, 0);
    expect_recv_flags(b, 304, 32, 0, 0);
    CHECK_MEM(am + 4096, bm, 4096);
    CHECK_MEM(bm + 8192 + 4 * 256, bm, 32); /* the fenced Send carried the read data */
    struct uiw_wc wc;
    CHECK_EQ(uiw_poll_cq(a->cq, 1, &wc), 0);

    CHECK_EQ(uiw_cm_disconnect(k.a.id), 0);
    link_wait_down(&k);
    CHECK_EQ(uiw_dereg_mr(amr), 0);
    CHECK_EQ(uiw_dereg_mr(bmr), 0);
    CHECK_EQ(uiw_dereg_mr(fmr), 0);
    link_close(&k);
    free(am);
    free(bm);
    free(bt);
}

/* A second connection on a link's listener whose responder QP (sid) has its CQ on a
 * completion channel of b's context; cid is a's end, on a's CQ. */
struct chan_conn {
    struct uiw_comp_channel *cc;
    struct uiw_cq *cq;
    struct uiw_cm_id *cid, *sid;
    uint8_t *rb, *sb;
    struct uiw_mr *rm, *sm;
    struct side a; /* a's end, for expect_wc / post_op */
};

static void chan_conn_up(struct link *k, struct chan_conn *x)
{
    memset(x, 0, sizeof(*x));
    x->cc = uiw_create_comp_channel(k->b.ctx);
    CHECK(x->cc != NULL);
    x->cq = uiw_create_cq(k->b.ctx, 64, (void *)0x77, x->cc, 0);
    CHECK(x->cq != NULL);
    x->cid = uiw_cm_create_id(k->ch, k->a.ctx, NULL);
    struct uiw_qp_init_attr qa = qp_attr(&k->a);
    CHECK_EQ(uiw_cm_create_qp(x->cid, k->a.pd, &qa), 0);
    struct sockaddr_storage dst = io_addr(AF_INET, io_port(uiw_cm_get_local_addr(k->lid)));
    CHECK_EQ(uiw_cm_connect(x->cid, (struct sockaddr *)&dst, NULL), 0);
    struct uiw_cm_event *ev = io_expect(k->ch, UIW_CM_EVENT_CONNECT_REQUEST);
    x->sid = ev->id;
    uiw_cm_ack_event(ev);
    struct uiw_qp_init_attr qb = {
        .send_cq = x->cq,
        .recv_cq = x->cq,
        .cap = {.max_send_wr = 32, .max_recv_wr = 32, .max_send_sge = 1, .max_recv_sge = 1}};
    CHECK_EQ(uiw_cm_create_qp(x->sid, k->b.pd, &qb), 0);
    CHECK_EQ(uiw_cm_accept(x->sid, NULL), 0);
    uiw_cm_ack_event(io_expect(k->ch, UIW_CM_EVENT_ESTABLISHED));
    uiw_cm_ack_event(io_expect(k->ch, UIW_CM_EVENT_ESTABLISHED));
    x->rb = calloc(1, 4096);
    x->sb = calloc(1, 4096);
    x->rm = uiw_reg_mr(k->b.pd, x->rb, 4096, UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_READ);
    x->sm = uiw_reg_mr(k->a.pd, x->sb, 4096, UIW_ACCESS_LOCAL_WRITE);
    CHECK(x->rb && x->sb && x->rm && x->sm);
    x->a = (struct side){.ctx = k->a.ctx, .pd = k->a.pd, .cq = k->a.cq, .id = x->cid};
}

static void chan_conn_down(struct link *k, struct chan_conn *x)
{
    CHECK_EQ(uiw_cm_disconnect(x->cid), 0);
    for (int i = 0; i < 2; i++)
        uiw_cm_ack_event(io_expect(k->ch, UIW_CM_EVENT_DISCONNECTED));
    uiw_cm_destroy_qp(x->cid);
    uiw_cm_destroy_qp(x->sid);
    CHECK_EQ(uiw_cm_destroy_id(x->cid), 0);
    CHECK_EQ(uiw_cm_destroy_id(x->sid), 0);
    uiw_dereg_mr(x->rm);
    uiw_dereg_mr(x->sm);
    struct uiw_wc wc;
    while (uiw_poll_cq(x->cq, 1, &wc) > 0)
        ;
    CHECK_EQ(uiw_destroy_cq(x->cq), 0);
    CHECK_EQ(uiw_destroy_comp_channel(x->cc), 0);
    free(x->rb);
    free(x->sb);
}

/* b receives a Send of len bytes (seed) at offset off of its buffer as wr_id id. */
static void chan_send(struct chan_conn *x, uint64_t id, size_t off, uint32_t len)
{
    struct uiw_sge g = {.addr = (uintptr_t)(x->rb + off), .length = len, .lkey = x->rm->lkey};
    struct uiw_recv_wr rw = {.wr_id = id, .sg_list = &g, .num_sge = 1}, *rbad = NULL;
    CHECK_EQ(uiw_post_recv(x->sid->qp, &rw, &rbad), 0);
    fill(x->sb + off, len, (unsigned)id);
    post_op(&x->a, UIW_WR_SEND, x->sm, x->sb + off, len, 0, 0, id);
}

/* b's next completion is the receive id, of len bytes at off; a's Send completed. */
static void chan_expect_recv(struct chan_conn *x, uint64_t id, size_t off, uint32_t len)
{
    struct uiw_wc wc;
    CHECK_EQ(uiw_poll_cq(x->cq, 1, &wc), 1);
    CHECK_EQ(wc.wr_id, id);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(wc.byte_len, len);
    CHECK_MEM(x->rb + off, x->sb + off, len);
    expect_wc(&x->a, id, UIW_WC_SEND, UIW_WC_SUCCESS, 0);
}

/* The completion channel fd wakes a sleeping application when a Send arrives. */
TEST(data_comp_channel_wakeup)
{
    struct link k;
    link_up(&k, AF_INET);
    struct chan_conn x;
    chan_conn_up(&k, &x);
    CHECK_EQ(uiw_req_notify_cq(x.cq, 0), 0);
    struct pollfd pfd = {.fd = uiw_comp_channel_fd(x.cc), .events = POLLIN};
    CHECK_EQ(poll(&pfd, 1, 0), 0); /* nothing yet */
    chan_send(&x, 71, 0, 100);
    CHECK_EQ(poll(&pfd, 1, EV_WAIT_MS), 1); /* b's progress thread delivered it */
    struct uiw_cq *got = NULL;
    void *gctx = NULL;
    CHECK_EQ(uiw_get_cq_event(x.cc, &got, &gctx), 0);
    CHECK(got == x.cq);
    CHECK(gctx == (void *)0x77);
    uiw_ack_cq_events(x.cq, 1);
    chan_expect_recv(&x, 71, 0, 100);
    chan_conn_down(&k, &x);
    link_down(&k, true);
}

/* Wait (bounded) until an application thread sleeps in uiw__loop_wait on l (it counts
 * itself among the waiters before it registers its sockets and sleeps, so whatever is
 * sent from then on reaches it, or is there when it looks). */
static void wait_for_sleeper(struct uiw__loop *l)
{
    uint64_t end = io_now_ms() + EV_WAIT_MS;
    while (atomic_load(&l->waiters) == 0) {
        CHECK(io_now_ms() < end);
        sched_yield();
    }
}

/* Sends message i once the receiving application took messages 0..i-1 (taken == i) and
 * sleeps again: each message arrives while the application sleeps, whatever the load. */
struct later_sends {
    struct chan_conn *x;
    struct uiw__loop *lb; /* the receiver's loop */
    int n;
    atomic_int taken; /* messages the receiving application took */
};

static void *later_sender(void *arg)
{
    struct later_sends *l = arg;
    for (int i = 0; i < l->n; i++) {
        uint64_t end = io_now_ms() + EV_WAIT_MS;
        while (atomic_load(&l->taken) != i) {
            CHECK(io_now_ms() < end);
            sched_yield();
        }
        wait_for_sleeper(l->lb);
        chan_send(l->x, 100 + (uint64_t)i, (size_t)i * 64, 64);
    }
    return NULL;
}

/* A thread asleep in uiw_wait_cq_event does the socket work itself: with no progress
 * thread on b, every Send still raises its event. The time limit and the non-blocking
 * fd give up with -ETIMEDOUT / -EAGAIN. */
TEST(data_cq_event_sleeper_takes_input_itself)
{
    struct link k;
    link_up_ex(&k, AF_INET, true, false, NULL, NULL);
    struct chan_conn x;
    chan_conn_up(&k, &x);
    struct uiw_cq *got = NULL;
    void *gctx = NULL;
    uint64_t t0 = io_now_ms();
    CHECK_EQ(uiw_wait_cq_event(x.cc, 30, &got, &gctx), -ETIMEDOUT);
    CHECK(io_now_ms() - t0 >= 29);
    CHECK_EQ(uiw_wait_cq_event(x.cc, 0, &got, &gctx), -ETIMEDOUT);

    struct later_sends l = {.x = &x, .lb = &uiw__io_of(k.b.ctx)->loop, .n = 20};
    atomic_init(&l.taken, 0);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, later_sender, &l), 0);
    int waits = 0;
    for (int i = 0; i < l.n;) {
        CHECK_EQ(uiw_req_notify_cq(x.cq, 0), 0);
        struct uiw_wc wc;
        while (uiw_poll_cq(x.cq, 1, &wc) == 1) { /* what came before arming raises none */
            CHECK_EQ(wc.wr_id, 100 + (uint64_t)i);
            CHECK_EQ(wc.status, UIW_WC_SUCCESS);
            CHECK_EQ(wc.byte_len, 64);
            CHECK_MEM(x.rb + (size_t)i * 64, x.sb + (size_t)i * 64, 64);
            expect_wc(&x.a, 100 + (uint64_t)i, UIW_WC_SEND, UIW_WC_SUCCESS, 0);
            atomic_store(&l.taken, ++i);
        }
        if (i == l.n)
            break;
        CHECK_EQ(uiw_wait_cq_event(x.cc, EV_WAIT_MS, &got, &gctx), 0);
        CHECK(got == x.cq);
        uiw_ack_cq_events(x.cq, 1);
        /* no event left: the fd is not readable (the one taken needed no eventfd trip) */
        struct pollfd pfd = {.fd = uiw_comp_channel_fd(x.cc), .events = POLLIN};
        CHECK_EQ(poll(&pfd, 1, 0), 0);
        waits++;
    }
    CHECK_EQ(waits, l.n); /* each message arrived while b slept and woke it */
    CHECK_EQ(pthread_join(t, NULL), 0);

    int fl = fcntl(uiw_comp_channel_fd(x.cc), F_GETFL);
    CHECK(fl >= 0);
    CHECK_EQ(fcntl(uiw_comp_channel_fd(x.cc), F_SETFL, fl | O_NONBLOCK), 0);
    CHECK_EQ(uiw_get_cq_event(x.cc, &got, &gctx), -EAGAIN);
    chan_conn_down(&k, &x);
    link_down(&k, true);
}

/* b's application busy-polls until its progress thread only naps (it then leaves the
 * sockets to the application, in naps that grow while the poll lasts), then arms its CQ
 * and sleeps in poll() on the channel fd: arming takes the thread out of its nap, and the
 * thread delivers the Send that follows. */
TEST(data_busy_poll_then_channel_sleep)
{
    struct link k;
    link_up(&k, AF_INET);
    struct chan_conn x;
    chan_conn_up(&k, &x);
    struct uiw__loop *lb = &uiw__io_of(k.b.ctx)->loop;
    /* the busy poll as b's thread judges it is a rate (passes per ms), which a loaded
     * machine may never give this thread: any poll rate counts here */
    atomic_store(&lb->spin_per_ms, 1);
    struct uiw_wc wc;
    uint64_t end = io_now_ms() + EV_WAIT_MS;
    while (!atomic_load(&lb->napping)) {
        CHECK_EQ(uiw_poll_cq(x.cq, 1, &wc), 0);
        CHECK(io_now_ms() < end);
    }
    for (uint64_t t = io_now_ms() + 20; io_now_ms() < t;) /* the naps grow */
        CHECK_EQ(uiw_poll_cq(x.cq, 1, &wc), 0);
    CHECK_EQ(uiw_req_notify_cq(x.cq, 0), 0);
    end = io_now_ms() + EV_WAIT_MS;
    while (atomic_load(&lb->napping))
        CHECK(io_now_ms() < end);
    chan_send(&x, 73, 0, 64);
    struct pollfd pfd = {.fd = uiw_comp_channel_fd(x.cc), .events = POLLIN};
    CHECK_EQ(poll(&pfd, 1, EV_WAIT_MS), 1);
    struct uiw_cq *got = NULL;
    void *gctx = NULL;
    CHECK_EQ(uiw_get_cq_event(x.cc, &got, &gctx), 0);
    CHECK(got == x.cq);
    uiw_ack_cq_events(x.cq, 1);
    chan_expect_recv(&x, 73, 0, 64);
    chan_conn_down(&k, &x);
    link_down(&k, true);
}

/* Once the sleeper has left (and stays away), b's progress thread takes the sockets back:
 * a peer's Read is served while b's application calls nothing. */
TEST(data_peer_read_after_cq_event_sleeper_left)
{
    struct link k;
    link_up(&k, AF_INET);
    struct chan_conn x;
    chan_conn_up(&k, &x);
    /* the Send leaves once b's application is asleep on its armed CQ (sent earlier, it
     * could complete before the arm and raise no event: b would sleep forever) */
    struct later_sends l = {.x = &x, .lb = &uiw__io_of(k.b.ctx)->loop, .n = 1};
    atomic_init(&l.taken, 0);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, later_sender, &l), 0);
    CHECK_EQ(uiw_req_notify_cq(x.cq, 0), 0);
    struct uiw_cq *got = NULL;
    void *gctx = NULL;
    CHECK_EQ(uiw_wait_cq_event(x.cc, EV_WAIT_MS, &got, &gctx), 0);
    CHECK(got == x.cq);
    uiw_ack_cq_events(x.cq, 1);
    CHECK_EQ(pthread_join(t, NULL), 0);
    chan_expect_recv(&x, 100, 0, 64);
    /* b's application makes no more calls; a reads b's buffer */
    fill(x.rb + 1024, 2048, 5);
    post_op(&x.a, UIW_WR_RDMA_READ, x.sm, x.sb + 1024, 2048, (uintptr_t)(x.rb + 1024), x.rm->rkey,
            9);
    expect_wc(&x.a, 9, UIW_WC_RDMA_READ, UIW_WC_SUCCESS, 2048);
    CHECK_MEM(x.sb + 1024, x.rb + 1024, 2048);
    chan_conn_down(&k, &x);
    link_down(&k, true);
}

TEST(data_write_to_invalid_stag_terminates)
{
    struct link k;
    link_up(&k, AF_INET);
    uint8_t *am = calloc(1, 4096), *bm = calloc(1, 4096);
    struct uiw_mr *amr = uiw_reg_mr(k.a.pd, am, 4096, UIW_ACCESS_LOCAL_WRITE);
    struct uiw_mr *bmr = uiw_reg_mr(k.b.pd, bm, 4096, UIW_ACCESS_LOCAL_WRITE);
    post_recv(&k.a, amr, am + 2048, 1024, 81);
    post_recv(&k.b, bmr, bm, 1024, 82);
    /* b's MR allows no remote write: the STag exists but the access is missing. */
    post_op(&k.a, UIW_WR_RDMA_WRITE, amr, am, 256, (uintptr_t)bm, bmr->rkey, 83);
    struct uiw_wc wc;
    bool seen81 = false, seen83 = false;
    for (int i = 0; i < 2; i++) {
        wait_wc(&k.a, &wc);
        if (wc.wr_id == 83) {
            seen83 = true; /* a Write may complete once sent, or fail with the Terminate */
            CHECK(wc.status == UIW_WC_SUCCESS || wc.status == UIW_WC_REM_ACCESS_ERR);
        } else {
            CHECK_EQ(wc.wr_id, 81);
            seen81 = true;
            CHECK_EQ(wc.status, UIW_WC_WR_FLUSH_ERR);
        }
    }
    CHECK(seen81 && seen83);
    expect_wc(&k.b, 82, UIW_WC_RECV, UIW_WC_WR_FLUSH_ERR, 0);
    link_wait_down(&k);
    struct uiw_qp_attr qa, qb;
    CHECK_EQ(uiw_query_qp(k.a.id->qp, &qa), 0);
    CHECK_EQ(uiw_query_qp(k.b.id->qp, &qb), 0);
    CHECK_EQ(qa.state, UIW_QPS_ERROR);
    CHECK_EQ(qb.state, UIW_QPS_ERROR);
    CHECK(qb.term_sent && qa.term_received);
    /* RFC 5040 section 8.1.1: a valid STag without Remote Write access. */
    CHECK_EQ(qb.term_layer, UIW_TERM_LAYER_RDMAP);
    CHECK_EQ(qb.term_etype, UIW_TERM_RDMAP_REMOTE_PROTECTION);
    CHECK_EQ(qb.term_code, UIW_TERM_RP_ACCESS_RIGHTS);
    CHECK_EQ(qa.term_layer, qb.term_layer);
    CHECK_EQ(qa.term_etype, qb.term_etype);
    CHECK_EQ(qa.term_code, qb.term_code);
    uiw_dereg_mr(amr);
    uiw_dereg_mr(bmr);
    link_close(&k);
    free(am);
    free(bm);
}

/* Abortive close by moving the QP to ERROR: a Terminate goes out, both ends flush. */
TEST(data_abortive_close_sends_terminate)
{
    struct link k;
    link_up(&k, AF_INET);
    uint8_t *am = calloc(1, 4096), *bm = calloc(1, 4096);
    struct uiw_mr *amr = uiw_reg_mr(k.a.pd, am, 4096, UIW_ACCESS_LOCAL_WRITE);
    struct uiw_mr *bmr = uiw_reg_mr(k.b.pd, bm, 4096, UIW_ACCESS_LOCAL_WRITE);
    post_recv(&k.a, amr, am, 1024, 91);
    post_recv(&k.b, bmr, bm, 1024, 92);
    CHECK_EQ(uiw_modify_qp_state(k.a.id->qp, UIW_QPS_ERROR), 0);
    expect_wc(&k.a, 91, UIW_WC_RECV, UIW_WC_WR_FLUSH_ERR, 0);
    expect_wc(&k.b, 92, UIW_WC_RECV, UIW_WC_WR_FLUSH_ERR, 0);
    link_wait_down(&k);
    struct uiw_qp_attr qa, qb;
    CHECK_EQ(uiw_query_qp(k.a.id->qp, &qa), 0);
    CHECK_EQ(uiw_query_qp(k.b.id->qp, &qb), 0);
    CHECK_EQ(qa.state, UIW_QPS_ERROR);
    CHECK_EQ(qb.state, UIW_QPS_ERROR);
    CHECK(qa.term_sent);
    CHECK(qb.term_received);
    CHECK_EQ(qb.term_layer, qa.term_layer);
    CHECK_EQ(qb.term_etype, qa.term_etype);
    CHECK_EQ(qb.term_code, qa.term_code);
    struct uiw_context_stats sa, sb;
    CHECK_EQ(uiw_query_context_stats(k.a.ctx, &sa), 0);
    CHECK_EQ(uiw_query_context_stats(k.b.ctx, &sb), 0);
    CHECK_EQ(sa.terminates_sent, 1);
    CHECK_EQ(sb.terminates_received, 1);
    uiw_dereg_mr(amr);
    uiw_dereg_mr(bmr);
    link_close(&k);
    free(am);
    free(bm);
}

/* Many connections on one channel and one context per side, set up concurrently. */
TEST(data_many_connections)
{
    enum { NC = 64 };
    struct uiw_cm_channel *ch = uiw_cm_create_channel();
    struct side a, b;
    side_open(&a, true, false);
    side_open(&b, true, false);
    /* this test accepts one connection at a time: under valgrind the last one waits for
     * its Reply longer than the default handshake timeout, and a listen queue shorter than
     * the connections makes the kernel drop SYNs (retried after seconds): neither is what
     * is tested */
    struct uiw_conn_param slow = {IO_DEPTHS, .timeout_ms = 120000};
    struct uiw_cm_id *lid = uiw_cm_create_id(ch, b.ctx, NULL);
    uint16_t port = io_listen_n(lid, AF_INET, &slow, NC);
    struct uiw_cm_id *cid[NC], *sid[NC];
    struct sockaddr_storage dst = io_addr(AF_INET, port);
    for (int i = 0; i < NC; i++) {
        cid[i] = uiw_cm_create_id(ch, a.ctx, (void *)(uintptr_t)(i + 1));
        struct uiw_qp_init_attr qa = qp_attr(&a);
        CHECK_EQ(uiw_cm_create_qp(cid[i], a.pd, &qa), 0);
        CHECK_EQ(uiw_cm_connect(cid[i], (struct sockaddr *)&dst, &slow), 0);
    }
    int requests = 0, established = 0;
    while (established < 2 * NC) {
        struct uiw_cm_event *ev = NULL;
        CHECK_EQ(uiw_cm_get_event(ch, &ev, EV_WAIT_MS), 0);
        if (ev->event == UIW_CM_EVENT_CONNECT_REQUEST) {
            CHECK(requests < NC);
            sid[requests] = ev->id;
            struct uiw_qp_init_attr qb = qp_attr(&b);
            CHECK_EQ(uiw_cm_create_qp(ev->id, b.pd, &qb), 0);
            CHECK_EQ(uiw_cm_accept(ev->id, NULL), 0);
            requests++;
        } else {
            CHECK_EQ(ev->event, UIW_CM_EVENT_ESTABLISHED);
            established++;
        }
        uiw_cm_ack_event(ev);
    }
    CHECK_EQ(requests, NC);
    uint8_t *tx = calloc(NC, 64), *rx = calloc(NC, 64);
    struct uiw_mr *tm = uiw_reg_mr(a.pd, tx, NC * 64, UIW_ACCESS_LOCAL_WRITE);
    struct uiw_mr *rm = uiw_reg_mr(b.pd, rx, NC * 64, UIW_ACCESS_LOCAL_WRITE);
    /* sid[i] is not necessarily cid[i]'s peer: every receive is posted before any Send. */
    for (int i = 0; i < NC; i++) {
        struct side sb = b;
        sb.id = sid[i];
        post_recv(&sb, rm, rx + i * 64, 64, 1000 + (uint64_t)i);
    }
    for (int i = 0; i < NC; i++) {
        struct side sa = a;
        sa.id = cid[i];
        memset(tx + i * 64, i + 1, 64);
        post_op(&sa, UIW_WR_SEND, tm, tx + i * 64, 64, 0, 0, 2000 + (uint64_t)i);
    }
    for (int i = 0; i < 2 * NC; i++) {
        struct uiw_wc wc;
        wait_wc(i < NC ? &a : &b, &wc);
        if (wc.status != UIW_WC_SUCCESS)
            uiw_test_fail(__FILE__, __LINE__, "wr %llu: %s (%s)", (unsigned long long)wc.wr_id,
                          uiw_wc_status_str(wc.status), uiw_strerror(wc.vendor_err));
    }
    /* Each server-side connection got the whole message of exactly one client. */
    bool seen[NC + 1] = {false};
    for (int i = 0; i < NC; i++) {
        uint8_t v = rx[i * 64];
        CHECK(v >= 1 && v <= NC);
        CHECK(!seen[v]);
        seen[v] = true;
        for (int j = 1; j < 64; j++)
            CHECK_EQ(rx[i * 64 + j], v);
    }
    for (int i = 0; i < NC; i++)
        CHECK_EQ(uiw_cm_disconnect(cid[i]), 0);
    for (int i = 0; i < 2 * NC; i++)
        uiw_cm_ack_event(io_expect(ch, UIW_CM_EVENT_DISCONNECTED));
    for (int i = 0; i < NC; i++) {
        uiw_cm_destroy_qp(cid[i]);
        uiw_cm_destroy_qp(sid[i]);
        CHECK_EQ(uiw_cm_destroy_id(cid[i]), 0);
        CHECK_EQ(uiw_cm_destroy_id(sid[i]), 0);
    }
    uiw_dereg_mr(tm);
    uiw_dereg_mr(rm);
    free(tx);
    free(rx);
    CHECK_EQ(uiw_cm_destroy_id(lid), 0);
    CHECK_EQ(uiw_cm_destroy_channel(ch), 0);
    a.id = b.id = NULL;
    CHECK_EQ(uiw_destroy_cq(a.cq), 0);
    CHECK_EQ(uiw_destroy_cq(b.cq), 0);
    CHECK_EQ(uiw_dealloc_pd(a.pd), 0);
    CHECK_EQ(uiw_dealloc_pd(b.pd), 0);
    CHECK_EQ(uiw_close_context(a.ctx), 0);
    CHECK_EQ(uiw_close_context(b.ctx), 0);
}

/* Contexts without progress threads: the peer's close still surfaces as DISCONNECTED while
 * the application waits in uiw_cm_get_event. */
/* Single-threaded contexts (the application's promise: one thread at a time) run every
 * operation as the others do, with locks that use no atomic instructions. */
TEST(data_ops_single_threaded)
{
    struct link k;
    sides_single = true;
    link_up_ex(&k, AF_INET, false, false, NULL, NULL);
    sides_single = false;
    wait_drives = k.ch; /* both ends progress inline: waiting for one drives the other */
    exercise(&k, 1 << 20);
    wait_drives = NULL;
    link_down(&k, true);
}

/* A progress thread is a second thread: a single-threaded context has none. */
TEST(data_single_threaded_needs_no_progress_thread)
{
    struct uiw_context_attr at;
    uiw_context_attr_init(&at);
    at.single_threaded = true;
    errno = 0;
    CHECK(uiw_open_context(&at) == NULL);
    CHECK_EQ(errno, EINVAL);
    at.progress_thread = false;
    struct uiw_context *ctx = uiw_open_context(&at);
    CHECK(ctx != NULL);
    CHECK_EQ(uiw_close_context(ctx), 0);
}

TEST(data_no_thread_disconnect_reported)
{
    struct link k;
    link_up_ex(&k, AF_INET, false, false, NULL, NULL);
    uint8_t *am = calloc(1, 4096), *bm = calloc(1, 4096);
    struct uiw_mr *amr = uiw_reg_mr(k.a.pd, am, 4096, UIW_ACCESS_LOCAL_WRITE);
    struct uiw_mr *bmr = uiw_reg_mr(k.b.pd, bm, 4096, UIW_ACCESS_LOCAL_WRITE);
    post_recv(&k.a, amr, am, 1024, 95);
    CHECK_EQ(uiw_cm_disconnect(k.b.id), 0); /* the responder closes */
    link_wait_down(&k);
    expect_wc(&k.a, 95, UIW_WC_RECV, UIW_WC_WR_FLUSH_ERR, 0);
    uiw_dereg_mr(amr);
    uiw_dereg_mr(bmr);
    link_close(&k);
    free(am);
    free(bm);
}

/* Small Sends followed by large payloads in the same stream, all queued in the receiver's
 * socket before it reads: its bulk reads of the small FPDUs never pull a large payload into
 * the staging ring, so only the small payloads are copied. */
TEST(data_no_copy_after_small_sends)
{
    enum { NS = 16, SM = 64, BIG = 16384, LS = 8192, NWR = 2 * NS + 3 };
    struct link k;
    link_up_ex(&k, AF_INET, true, false, NULL, NULL); /* b reads only when polled */
    size_t asz = 2 * NS * SM + 2 * BIG + LS, ssz = 2 * NS * SM + LS;
    uint8_t *ab = malloc(asz), *sb = calloc(1, ssz), *wb = calloc(1, 2 * BIG);
    CHECK(ab && sb && wb);
    fill(ab, asz, 21);
    struct uiw_mr *amr = uiw_reg_mr(k.a.pd, ab, asz, UIW_ACCESS_LOCAL_WRITE);
    struct uiw_mr *smr = uiw_reg_mr(k.b.pd, sb, ssz, UIW_ACCESS_LOCAL_WRITE);
    struct uiw_mr *wmr =
        uiw_reg_mr(k.b.pd, wb, 2 * BIG, UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE);
    CHECK(amr && smr && wmr);
    for (int i = 0; i < 2 * NS; i++)
        post_recv(&k.b, smr, sb + i * SM, SM, 200 + (uint64_t)i);
    post_recv(&k.b, smr, sb + 2 * NS * SM, LS, 300);
    uint64_t id = 1;
    for (int half = 0; half < 2; half++) {
        for (int i = 0; i < NS; i++) {
            size_t o = (size_t)(half * NS + i) * SM;
            post_op(&k.a, UIW_WR_SEND, amr, ab + o, SM, 0, 0, id++);
        }
        uint8_t *src = ab + 2 * NS * SM + (size_t)half * BIG;
        post_op(&k.a, UIW_WR_RDMA_WRITE, amr, src, BIG, (uintptr_t)(wb + half * BIG), wmr->rkey,
                id++);
    }
    post_op(&k.a, UIW_WR_SEND, amr, ab + 2 * NS * SM + 2 * BIG, LS, 0, 0, id++);
    /* Let everything reach b's socket first (a's progress thread sends; a completion
     * means the bytes were handed to TCP). Not waiting long only weakens the test. */
    int done = 0;
    uint64_t end = io_now_ms() + 2000;
    while (done < NWR && io_now_ms() < end) {
        struct uiw_wc wc;
        int n = uiw_poll_cq(k.a.cq, 1, &wc);
        CHECK(n >= 0);
        if (n == 1) {
            CHECK_EQ(wc.status, UIW_WC_SUCCESS);
            CHECK_EQ(wc.wr_id, (uint64_t)done + 1);
            done++;
        } else {
            struct pollfd none;
            poll(&none, 0, 1);
        }
    }
    for (int i = 0; i < 2 * NS; i++)
        expect_wc(&k.b, 200 + (uint64_t)i, UIW_WC_RECV, UIW_WC_SUCCESS, SM);
    expect_wc(&k.b, 300, UIW_WC_RECV, UIW_WC_SUCCESS, LS);
    while (done < NWR) {
        struct uiw_wc wc;
        wait_wc(&k.a, &wc);
        CHECK_EQ(wc.status, UIW_WC_SUCCESS);
        CHECK_EQ(wc.wr_id, (uint64_t)done + 1);
        done++;
    }
    CHECK_MEM(sb, ab, ssz - LS);
    CHECK_MEM(sb + 2 * NS * SM, ab + 2 * NS * SM + 2 * BIG, LS);
    CHECK_MEM(wb, ab + 2 * NS * SM, 2 * BIG);
    struct uiw_context_stats st;
    CHECK_EQ(uiw_query_context_stats(k.b.ctx, &st), 0);
    CHECK(st.copied_payload_bytes <= 2 * NS * SM);
    CHECK(st.placed_payload_bytes >= 2 * NS * SM + 2 * BIG + LS);
    CHECK_EQ(uiw_dereg_mr(amr), 0);
    CHECK_EQ(uiw_dereg_mr(smr), 0);
    CHECK_EQ(uiw_dereg_mr(wmr), 0);
    free(ab);
    free(sb);
    free(wb);
    link_down(&k, true);
}

/* A peer that vanishes without a reset (its network goes away, in a network namespace of
 * this test process): TCP_USER_TIMEOUT / keepalive end the connection, every outstanding
 * work request is flushed on both sides, DISCONNECTED reports the error. */
TEST(slow_dead_peer_detected)
{
    int ns = uiw_test_private_net();
    if (ns == -EPERM)
        SKIP("cannot create a network namespace (needs CAP_SYS_ADMIN)");
    CHECK_EQ(ns, 0);
    struct link k;
    struct uiw_conn_param live = {IO_DEPTHS, .keepalive_idle_s = 1, .keepalive_intvl_s = 1,
                                  .keepalive_cnt = 2, .tcp_user_timeout_ms = 1500};
    link_up_ex(&k, AF_INET, true, true, &live, &live);
    uint8_t *am = calloc(1, 4096), *bm = calloc(1, 4096);
    struct uiw_mr *amr = uiw_reg_mr(k.a.pd, am, 4096, UIW_ACCESS_LOCAL_WRITE);
    struct uiw_mr *bmr = uiw_reg_mr(k.b.pd, bm, 4096, UIW_ACCESS_LOCAL_WRITE);
    post_recv(&k.a, amr, am + 2048, 1024, 111);
    post_recv(&k.b, bmr, bm, 1024, 112);
    /* Everything works before. */
    post_op(&k.a, UIW_WR_SEND, amr, am, 32, 0, 0, 113);
    expect_wc(&k.a, 113, UIW_WC_SEND, UIW_WC_SUCCESS, 0);
    expect_wc(&k.b, 112, UIW_WC_RECV, UIW_WC_SUCCESS, 32);
    post_recv(&k.b, bmr, bm, 1024, 114);

    CHECK_EQ(uiw_test_set_lo(0), 0); /* no FIN, no RST: the peer is just gone */
    post_op(&k.a, UIW_WR_SEND, amr, am, 32, 0, 0, 115);
    bool seen_a = false, seen_b = false;
    while (!seen_a || !seen_b) {
        struct uiw_cm_event *ev = io_expect(k.ch, UIW_CM_EVENT_DISCONNECTED);
        CHECK(ev->status < 0);
        if (ev->id == k.a.id)
            seen_a = true;
        else if (ev->id == k.b.id)
            seen_b = true;
        uiw_cm_ack_event(ev);
    }
    struct uiw_wc wc;
    for (int i = 0; i < 2; i++) {
        wait_wc(&k.a, &wc);
        CHECK(wc.wr_id == 111 || wc.wr_id == 115);
        /* A Send completes once TCP took it (iWARP semantics), so 115 may be a success. */
        if (wc.wr_id == 115 && wc.status == UIW_WC_SUCCESS)
            continue;
        if (wc.status != UIW_WC_WR_FLUSH_ERR && wc.status != UIW_WC_RETRY_EXC_ERR)
            uiw_test_fail(__FILE__, __LINE__, "wr %llu: %s (%s)", (unsigned long long)wc.wr_id,
                          uiw_wc_status_str(wc.status), uiw_strerror(wc.vendor_err));
    }
    expect_wc(&k.b, 114, UIW_WC_RECV, UIW_WC_WR_FLUSH_ERR, 0);
    uiw_dereg_mr(amr);
    uiw_dereg_mr(bmr);
    link_close(&k);
    free(am);
    free(bm);
}

/* b (no progress thread) busy-polls its empty CQ until its connection leaves the epoll set
 * (parked: b reads the socket itself on every poll). */
static struct uiw__conn *busy_poll_until_parked(struct link *k)
{
    struct uiw__conn *c = uiw__qp_io(k->b.id->qp);
    CHECK(c != NULL);
    struct uiw_wc wc;
    uint64_t end = io_now_ms() + EV_WAIT_MS;
    while (!c->h.parked) {
        CHECK_EQ(uiw_poll_cq(k->b.cq, 1, &wc), 0);
        CHECK(io_now_ms() < end);
    }
    return c;
}

struct late_send {
    struct side *a;
    struct uiw_mr *mr;
    uint8_t *buf;
    struct uiw__loop *lb; /* the receiver's loop */
};

/* Sends once b's application sleeps in uiw_wait_cq_event (sent before, b's own poll would
 * take it and the sleep would not be tested). */
static void *late_send_fn(void *arg)
{
    struct late_send *l = arg;
    wait_for_sleeper(l->lb);
    post_op(l->a, UIW_WR_SEND, l->mr, l->buf, 64, 0, 0, 7);
    return NULL;
}

/* Parked while b busy-polls with no progress thread; b then sleeps in uiw_wait_cq_event,
 * which registers the socket again, and the Send that arrives meanwhile wakes it. */
TEST(data_parked_socket_then_cq_event_sleep)
{
    struct link k;
    link_up_full(&k, AF_INET, true, false, NULL, NULL, true);
    uint8_t *sb = calloc(1, 64), *rb = calloc(1, 64);
    struct uiw_mr *sm = uiw_reg_mr(k.a.pd, sb, 64, UIW_ACCESS_LOCAL_WRITE);
    struct uiw_mr *rm = uiw_reg_mr(k.b.pd, rb, 64, UIW_ACCESS_LOCAL_WRITE);
    CHECK(sb && rb && sm && rm);
    fill(sb, 64, 3);
    post_recv(&k.b, rm, rb, 64, 8);
    struct uiw__conn *c = busy_poll_until_parked(&k);
    struct late_send l = {.a = &k.a, .mr = sm, .buf = sb, .lb = &uiw__io_of(k.b.ctx)->loop};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, late_send_fn, &l), 0);
    CHECK_EQ(uiw_req_notify_cq(k.b.cq, 0), 0);
    struct uiw_wc wc;
    CHECK_EQ(uiw_poll_cq(k.b.cq, 1, &wc), 0);
    struct uiw_cq *got = NULL;
    void *gctx = NULL;
    CHECK_EQ(uiw_wait_cq_event(k.b.cc, EV_WAIT_MS, &got, &gctx), 0);
    CHECK(got == k.b.cq);
    CHECK(!c->h.parked); /* the sleeper put it back in the set */
    uiw_ack_cq_events(k.b.cq, 1);
    CHECK_EQ(uiw_poll_cq(k.b.cq, 1, &wc), 1);
    CHECK_EQ(wc.wr_id, 8);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(wc.byte_len, 64);
    CHECK_MEM(rb, sb, 64);
    CHECK_EQ(pthread_join(t, NULL), 0);
    expect_wc(&k.a, 7, UIW_WC_SEND, UIW_WC_SUCCESS, 0);
    CHECK_EQ(uiw_cm_disconnect(k.a.id), 0);
    link_wait_down(&k);
    uiw_dereg_mr(sm);
    uiw_dereg_mr(rm);
    link_close(&k);
    free(sb);
    free(rb);
}

/* A parked socket's end is still seen: the peer disconnects while b (no progress thread)
 * waits for cm events, whose inline passes read the parked socket. */
TEST(data_parked_socket_disconnect_reported)
{
    struct link k;
    link_up_ex(&k, AF_INET, true, false, NULL, NULL);
    uint8_t *bm = calloc(1, 4096);
    struct uiw_mr *bmr = uiw_reg_mr(k.b.pd, bm, 4096, UIW_ACCESS_LOCAL_WRITE);
    CHECK(bm && bmr);
    post_recv(&k.b, bmr, bm, 1024, 96);
    busy_poll_until_parked(&k);
    CHECK_EQ(uiw_cm_disconnect(k.a.id), 0);
    link_wait_down(&k);
    expect_wc(&k.b, 96, UIW_WC_RECV, UIW_WC_WR_FLUSH_ERR, 0);
    uiw_dereg_mr(bmr);
    link_close(&k);
    free(bm);
}

/* UIW_LOG=info: one line per event, each naming its connection and QP: the listener, both
 * ends established, the Terminate one side sends and the other receives, both closes. */
TEST(data_log_lines_name_connection_and_qp)
{
    setenv("UIW_LOG", "info", 1);
    FILE *capture = tmpfile();
    CHECK(capture != NULL);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    CHECK(saved >= 0 && dup2(fileno(capture), STDERR_FILENO) >= 0);

    struct link k;
    link_up(&k, AF_INET);
    uint32_t qa_num = uiw_qp_num(k.a.id->qp), qb_num = uiw_qp_num(k.b.id->qp);
    uint8_t *am = calloc(1, 4096), *bm = calloc(1, 4096);
    struct uiw_mr *amr = uiw_reg_mr(k.a.pd, am, 4096, UIW_ACCESS_LOCAL_WRITE);
    struct uiw_mr *bmr = uiw_reg_mr(k.b.pd, bm, 4096, UIW_ACCESS_LOCAL_WRITE);
    /* b's region allows no remote write: b terminates */
    post_op(&k.a, UIW_WR_RDMA_WRITE, amr, am, 256, (uintptr_t)bm, bmr->rkey, 1);
    struct uiw_wc wc;
    wait_wc(&k.a, &wc);
    link_wait_down(&k);

    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    long n = ftell(capture);
    char *t = calloc(1, (size_t)n + 1);
    rewind(capture);
    CHECK_EQ(fread(t, 1, (size_t)n, capture), (size_t)n);
    fclose(capture);

    /* each end's connection number, from its "established" line */
    unsigned ca = 0, cb = 0;
    const char *ea = strstr(t, "established (initiator)"),
               *eb = strstr(t, "established (responder)");
    CHECK(ea != NULL && eb != NULL);
    while (ea > t && ea[-1] != '\n')
        ea--;
    while (eb > t && eb[-1] != '\n')
        eb--;
    CHECK_EQ(sscanf(strstr(ea, " conn "), " conn %u", &ca), 1);
    CHECK_EQ(sscanf(strstr(eb, " conn "), " conn %u", &cb), 1);
    CHECK(ca != cb);
    /* every event in a line naming its connection and QP */
    struct {
        const char *says;
        unsigned conn;
        uint32_t qpn;
    } ev[] = {{"established (initiator)", ca, qa_num}, {"established (responder)", cb, qb_num},
              {": sending Terminate", cb, qb_num},     {"Terminate received: ", ca, qa_num},
              {"connection closed", ca, qa_num},       {"connection closed", cb, qb_num}};
    for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++) {
        char ids[64];
        snprintf(ids, sizeof(ids), " conn %u qp %u: ", ev[i].conn, ev[i].qpn);
        bool found = false;
        for (const char *line = t; line && *line && !found;) {
            const char *end = strchr(line, '\n');
            char one[512];
            snprintf(one, sizeof(one), "%.*s", (int)(end ? end - line : (long)strlen(line)), line);
            found = strstr(one, ev[i].says) && strstr(one, ids);
            line = end ? end + 1 : NULL;
        }
        if (!found)
            uiw_test_fail(__FILE__, __LINE__, "no line with \"%s\" and \"%s\" in:\n%s", ev[i].says,
                          ids, t);
    }
    CHECK(strstr(t, "RDMAP") != NULL || strstr(t, "access") != NULL);
    CHECK(strstr(t, "listening on 127.0.0.1:") != NULL);

    uiw_dereg_mr(amr);
    uiw_dereg_mr(bmr);
    link_close(&k);
    free(am);
    free(bm);
    free(t);
}

/* The source of a Read Response deregistered, poisoned and freed while the response is
 * under way (the reader does not read, so the responder's socket is full): uiw_dereg_mr
 * returns without waiting for the reader (the segment TCP has begun to take goes out from
 * a copy) and drops the rest; the reader gets a prefix of the data, never a poisoned
 * byte, and RDMAP / Remote Protection / Invalid STag. */
struct dereg_job {
    struct uiw_mr *mr;
    uint8_t *buf;
    size_t len;
    atomic_bool done;
};

/* Wait (bounded) until ctx's progress thread has handed FPDU bytes to TCP and then stopped
 * (the reader does not read: its socket and ours are full), so that the response is under
 * way whatever the machine's load. Returns the bytes handed to TCP. */
static uint64_t wait_tx_stalled(struct uiw_context *ctx)
{
    struct uiw_context_stats st;
    uint64_t last = 0, end = io_now_ms() + EV_WAIT_MS;
    int same = 0;
    while (same < 5) {
        CHECK(io_now_ms() < end);
        struct pollfd none;
        poll(&none, 0, 10);
        CHECK_EQ(uiw_query_context_stats(ctx, &st), 0);
        same = st.tx_bytes > 0 && st.tx_bytes == last ? same + 1 : 0;
        last = st.tx_bytes;
    }
    return last;
}

static void *dereg_job_run(void *arg)
{
    struct dereg_job *j = arg;
    CHECK_EQ(uiw_dereg_mr(j->mr), 0);
    memset(j->buf, 0xEE, j->len);
    free(j->buf);
    atomic_store(&j->done, true);
    return NULL;
}

TEST(data_read_source_deregistered_mid_response)
{
    struct link k;
    struct uiw_conn_param cp = {IO_DEPTHS, .crc = true};
    link_up_ex(&k, AF_INET, false, true, &cp, NULL);
    size_t n = 32u << 20;
    uint8_t *src = malloc(n), *sink = calloc(1, n);
    CHECK(src && sink);
    for (size_t i = 0; i < n; i++)
        src[i] = (uint8_t)(i * 7 + 3);
    struct uiw_mr *smr =
        uiw_reg_mr(k.b.pd, src, n, UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_READ);
    struct uiw_mr *dmr = uiw_reg_mr(k.a.pd, sink, n, UIW_ACCESS_LOCAL_WRITE);
    CHECK(smr && dmr);
    post_op(&k.a, UIW_WR_RDMA_READ, dmr, sink, (uint32_t)n, (uintptr_t)src, smr->rkey, 1);
    /* a reads nothing meanwhile (no progress thread, no poll) */
    CHECK(wait_tx_stalled(k.b.ctx) < n);
    struct pollfd none;
    struct dereg_job j = {.mr = smr, .buf = src, .len = n};
    atomic_init(&j.done, false);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, dereg_job_run, &j), 0);
    for (int i = 0; i < 500 && !atomic_load(&j.done); i++)
        poll(&none, 0, 10);
    CHECK(atomic_load(&j.done)); /* while a still reads nothing */
    expect_wc(&k.a, 1, UIW_WC_RDMA_READ, UIW_WC_REM_ACCESS_ERR, 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    size_t got = 0;
    while (got < n && sink[got] == (uint8_t)(got * 7 + 3))
        got++;
    CHECK(got > 0 && got < n);
    for (size_t i = got; i < n; i++)
        if (sink[i] != 0)
            uiw_test_fail(__FILE__, __LINE__, "sink byte %zu is %02x", i, sink[i]);
    struct uiw_qp_attr qa;
    CHECK_EQ(uiw_query_qp(k.a.id->qp, &qa), 0);
    CHECK(qa.term_received);
    CHECK_EQ(qa.term_layer, UIW_TERM_LAYER_RDMAP);
    CHECK_EQ(qa.term_etype, UIW_TERM_RDMAP_REMOTE_PROTECTION);
    CHECK_EQ(qa.term_code, UIW_TERM_RP_INVALID_STAG);
    link_wait_down(&k);
    CHECK_EQ(uiw_dereg_mr(dmr), 0);
    free(sink);
    link_close(&k);
}
