/* The uiw side of the conformance tests (see conf.h). */
#include "conf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

static uint64_t conf_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static struct uiw_cm_event *expect_cm(struct uiw_cm_channel *ch, enum uiw_cm_event_type t)
{
    struct uiw_cm_event *ev = NULL;
    int r = uiw_cm_get_event(ch, &ev, CONF_WAIT_MS);
    if (r != 0)
        uiw_test_fail(__FILE__, __LINE__, "no CM event (wanted %s): %s", uiw_cm_event_str(t),
                      uiw_strerror(r));
    if (ev->event != t)
        uiw_test_fail(__FILE__, __LINE__, "CM event %s (status %d %s), wanted %s",
                      uiw_cm_event_str(ev->event), ev->status, uiw_strerror(ev->status),
                      uiw_cm_event_str(t));
    return ev;
}

static struct sockaddr_storage loop_addr(int family, uint16_t port)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    if (family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        a->sin6_port = htons(port);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a->sin_port = htons(port);
    }
    return ss;
}

static uint16_t sa_port(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
    return ntohs(((const struct sockaddr_in *)sa)->sin_port);
}

static void setup_memory(struct conf *c)
{
    c->mem_len = CONF_GUARD_LEN + R_COUNT * (CONF_REGION_LEN + CONF_GUARD_LEN);
    c->mem = malloc(c->mem_len);
    c->shadow = malloc(c->mem_len);
    CHECK(c->mem && c->shadow);
    for (size_t i = 0; i < c->mem_len; i++)
        c->mem[i] = (uint8_t)(0xA5 ^ (i * 31) ^ (i >> 8));
    memcpy(c->shadow, c->mem, c->mem_len);
    for (int i = 0; i < R_COUNT; i++)
        c->region[i] = c->mem + CONF_GUARD_LEN + (size_t)i * (CONF_REGION_LEN + CONF_GUARD_LEN);
    const unsigned lw = UIW_ACCESS_LOCAL_WRITE, rw = UIW_ACCESS_REMOTE_WRITE,
                   rr = UIW_ACCESS_REMOTE_READ;
    c->mr[R_RW] = uiw_reg_mr(c->pd, c->region[R_RW], CONF_REGION_LEN, lw | rw | rr);
    c->mr[R_NOWRITE] = uiw_reg_mr(c->pd, c->region[R_NOWRITE], CONF_REGION_LEN, lw | rr);
    c->mr[R_NOREAD] = uiw_reg_mr(c->pd, c->region[R_NOREAD], CONF_REGION_LEN, lw | rw);
    c->mr[R_OTHERPD] = uiw_reg_mr(c->pd2, c->region[R_OTHERPD], CONF_REGION_LEN, lw | rw | rr);
    c->mr[R_RECV] = uiw_reg_mr(c->pd, c->region[R_RECV], CONF_REGION_LEN, lw);
    c->mr[R_FAST] = uiw_alloc_mr(c->pd, CONF_REGION_LEN);
    for (int i = 0; i < R_COUNT; i++)
        CHECK(c->mr[i] != NULL);
}

static void post_receives(struct conf *c)
{
    for (int i = 0; i < c->nrecv; i++) {
        struct uiw_sge sge = {.addr = (uintptr_t)(c->region[R_RECV] + i * CONF_RECV_LEN),
                              .length = CONF_RECV_LEN,
                              .lkey = c->mr[R_RECV]->lkey};
        struct uiw_recv_wr wr = {.wr_id = 100 + (uint64_t)i, .sg_list = &sge, .num_sge = 1};
        struct uiw_recv_wr *bad = NULL;
        if (c->srq)
            CHECK_EQ(uiw_post_srq_recv(c->srq, &wr, &bad), 0);
        else
            CHECK_EQ(uiw_post_recv(c->qp, &wr, &bad), 0);
    }
}

/* Bind R_FAST to its memory with all remote access (a REG_MR work request). */
static void fast_register(struct conf *c)
{
    c->fast_rkey = uiw_inc_rkey(c->mr[R_FAST]->rkey);
    struct uiw_send_wr reg = {.wr_id = 7, .opcode = UIW_WR_REG_MR, .send_flags = UIW_SEND_SIGNALED};
    reg.wr.reg.mr = c->mr[R_FAST];
    reg.wr.reg.key = c->fast_rkey;
    reg.wr.reg.addr = c->region[R_FAST];
    reg.wr.reg.length = CONF_REGION_LEN;
    reg.wr.reg.access = UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | UIW_ACCESS_REMOTE_READ;
    struct uiw_send_wr *bad = NULL;
    CHECK_EQ(uiw_post_send(c->qp, &reg, &bad), 0);
    struct uiw_wc wc;
    conf_next_wc(c, &wc);
    CHECK_EQ(wc.wr_id, 7);
    CHECK_EQ(wc.opcode, UIW_WC_REG_MR);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
}

static struct uiw_qp_init_attr qp_attr(struct conf *c)
{
    struct uiw_qp_init_attr a = {
        .send_cq = c->cq,
        .recv_cq = c->cq,
        .srq = c->srq,
        .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 4, .max_recv_sge = 4},
        .max_ird = 4,
        .max_ord = 4,
    };
    return a;
}

/* A raw peer connects to the listener; the stack accepts with a QP of qp_attr. */
static void responder_accept(struct conf *c, struct rawpeer *peer, struct uiw_cm_id **id,
                             struct uiw_qp **qp, struct uiw_mpa_frame *reply, uint8_t *store,
                             size_t store_len)
{
    uint16_t port = sa_port(uiw_cm_get_local_addr(c->lid));
    int fd = rawpeer_tcp_connect(c->o.family, port);
    CHECK(fd >= 0);
    rawpeer_init(peer, fd);
    struct uiw_mpa_frame rq = {.kind = UIW_MPA_REQUEST, .rev = c->o.rev, .ird = 4, .ord = 4};
    if (c->o.crc)
        rq.flags |= UIW_MPA_FLAG_CRC;
    if (c->o.rev == 2)
        rq.flags |= UIW_MPA_FLAG_ENHANCED;
    if (c->o.peer_markers)
        rq.flags |= UIW_MPA_FLAG_MARKERS;
    if (c->o.rtr) {
        rq.peer2peer = true;
        rq.rtr_send = c->o.rtr & UIW_CM_RTR_SEND;
        rq.rtr_write = c->o.rtr & UIW_CM_RTR_WRITE;
        rq.rtr_read = c->o.rtr & UIW_CM_RTR_READ;
    }
    CHECK_EQ(rawpeer_send_frame(peer, &rq), 0);
    struct uiw_cm_event *ev = expect_cm(c->ch, UIW_CM_EVENT_CONNECT_REQUEST);
    *id = ev->id;
    CHECK_EQ(ev->param.mpa_rev, c->o.rev);
    uiw_cm_ack_event(ev);
    struct uiw_qp_init_attr qa = qp_attr(c);
    CHECK_EQ(uiw_cm_create_qp(*id, c->pd, &qa), 0);
    *qp = (*id)->qp;
    CHECK(*qp != NULL);
    struct uiw_conn_param ap;
    uiw_conn_param_init(&ap);
    ap.markers = c->o.markers;
    ap.peer2peer = c->o.rtr != 0;
    ap.rtr = c->o.rtr;
    CHECK_EQ(uiw_cm_accept(*id, &ap), 0);
    uiw_cm_ack_event(expect_cm(c->ch, UIW_CM_EVENT_ESTABLISHED));
    ssize_t n = rawpeer_recv_frame(peer, UIW_MPA_REPLY, reply, store, store_len, CONF_WAIT_MS);
    if (n < 0)
        uiw_test_fail(__FILE__, __LINE__, "no MPA Reply: %s", uiw_strerror((int)n));
    CHECK_EQ(reply->rev, c->o.rev);
    CHECK_EQ(reply->flags & UIW_MPA_FLAG_REJECT, 0);
    CHECK_EQ(!!(reply->flags & UIW_MPA_FLAG_MARKERS), c->o.markers);
    if (c->o.rtr) {
        CHECK(reply->peer2peer);
        c->rtr_chosen = (uint8_t)((reply->rtr_send ? UIW_CM_RTR_SEND : 0) |
                                  (reply->rtr_write ? UIW_CM_RTR_WRITE : 0) |
                                  (reply->rtr_read ? UIW_CM_RTR_READ : 0));
        CHECK(c->rtr_chosen == UIW_CM_RTR_SEND || c->rtr_chosen == UIW_CM_RTR_WRITE ||
              c->rtr_chosen == UIW_CM_RTR_READ);
        CHECK_EQ(c->rtr_chosen & ~c->o.rtr, 0);
    }
    bool crc = c->o.crc || (reply->flags & UIW_MPA_FLAG_CRC);
    rawpeer_start(peer, crc, (reply->flags & UIW_MPA_FLAG_MARKERS) != 0, c->o.peer_markers);
}

static void open_responder(struct conf *c)
{
    c->lid = uiw_cm_create_id(c->ch, c->ctx, NULL);
    CHECK(c->lid != NULL);
    struct sockaddr_storage ss = loop_addr(c->o.family, 0);
    CHECK_EQ(uiw_cm_bind_addr(c->lid, (struct sockaddr *)&ss), 0);
    CHECK_EQ(uiw_cm_listen(c->lid, 8, NULL), 0);
    responder_accept(c, &c->peer, &c->id, &c->qp, &c->reply, c->frame_store,
                     sizeof(c->frame_store));
}

/* RFC 6581: the initiator's first FPDU is the zero-length message chosen as RTR. */
static void expect_rtr(struct conf *c)
{
    uint8_t u[128];
    uint16_t len = 0;
    CHECK_EQ(rawpeer_recv_fpdu(&c->peer, u, sizeof(u), &len, CONF_WAIT_MS), 1);
    struct uiw_ddp_hdr h;
    ssize_t hl = uiw_ddp_hdr_parse(u, len, &h);
    CHECK(hl > 0);
    CHECK(h.last);
    if (c->rtr_chosen == UIW_CM_RTR_WRITE) {
        CHECK(h.tagged);
        CHECK_EQ(h.rdmap_ctrl, uiw_rdmap_ctrl(UIW_RDMAP_WRITE));
        CHECK_EQ(len, UIW_DDP_TAGGED_HDR_LEN);
    } else if (c->rtr_chosen == UIW_CM_RTR_SEND) {
        CHECK(!h.tagged);
        CHECK_EQ(h.qn, UIW_DDP_QN_SEND);
        CHECK_EQ(h.msn, 1);
        CHECK_EQ(h.rdmap_ctrl, uiw_rdmap_ctrl(UIW_RDMAP_SEND));
        CHECK_EQ(len, UIW_DDP_UNTAGGED_HDR_LEN);
    } else {
        CHECK(!h.tagged);
        CHECK_EQ(h.qn, UIW_DDP_QN_READ_REQ);
        CHECK_EQ(len, UIW_DDP_UNTAGGED_HDR_LEN + UIW_RDMAP_READ_REQ_LEN);
        struct uiw_rdmap_read_req rr;
        CHECK_EQ(uiw_rdmap_read_req_parse(u + hl, len - (size_t)hl, &rr), UIW_RDMAP_READ_REQ_LEN);
        CHECK_EQ(rr.size, 0);
        c->rtr_rr = rr;
        if (c->o.rtr_unanswered)
            return;
        /* answered by a zero-length Read Response */
        uint8_t r[UIW_DDP_TAGGED_HDR_LEN];
        rawpeer_tagged_hdr(r, uiw_rdmap_ctrl(UIW_RDMAP_READ_RESP), true, rr.sink_stag, rr.sink_to);
        struct uiw_wire_iov v = {r, sizeof(r)};
        CHECK_EQ(rawpeer_send_ulpdu(&c->peer, &v, 1), 0);
    }
}

static void open_initiator(struct conf *c)
{
    uint16_t port = 0;
    c->lfd = rawpeer_tcp_listen(c->o.family, &port);
    CHECK(c->lfd >= 0);
    c->id = uiw_cm_create_id(c->ch, c->ctx, NULL);
    CHECK(c->id != NULL);
    struct uiw_qp_init_attr qa = qp_attr(c);
    CHECK_EQ(uiw_cm_create_qp(c->id, c->pd, &qa), 0);
    c->qp = c->id->qp;
    struct sockaddr_storage dst = loop_addr(c->o.family, port);
    struct uiw_conn_param cp;
    uiw_conn_param_init(&cp);
    cp.markers = c->o.markers;
    cp.mpa_rev = c->o.rev;
    cp.timeout_ms = CONF_WAIT_MS;
    cp.peer2peer = c->o.rtr != 0;
    cp.rtr = c->o.rtr;
    if (!c->o.wake)
        cp.no_wake_write = true; /* else as uiw_conn_param_init left it: on by default */
    CHECK_EQ(uiw_cm_connect(c->id, (struct sockaddr *)&dst, &cp), 0);
    int fd = rawpeer_tcp_accept(c->lfd, CONF_WAIT_MS);
    CHECK(fd >= 0);
    rawpeer_init(&c->peer, fd);
    /* The Request goes out while the channel does its work. */
    struct uiw_mpa_frame rq;
    ssize_t n = -ETIMEDOUT;
    uint64_t t0 = conf_now_ms();
    while (n == -ETIMEDOUT && conf_now_ms() - t0 < CONF_WAIT_MS) {
        struct uiw_cm_event *ev = NULL;
        if (uiw_cm_get_event(c->ch, &ev, 20) == 0)
            uiw_test_fail(__FILE__, __LINE__, "unexpected CM event %s (status %d)",
                          uiw_cm_event_str(ev->event), ev->status);
        n = rawpeer_recv_frame(&c->peer, UIW_MPA_REQUEST, &rq, c->frame_store,
                               sizeof(c->frame_store), 20);
    }
    if (n < 0)
        uiw_test_fail(__FILE__, __LINE__, "no MPA Request: %s", uiw_strerror((int)n));
    CHECK_EQ(rq.rev, c->o.rev);
    CHECK_EQ(!!(rq.flags & UIW_MPA_FLAG_MARKERS), c->o.markers);
    struct uiw_mpa_frame rp = {.kind = UIW_MPA_REPLY, .rev = c->o.rev, .ird = 4, .ord = 4};
    if (c->o.crc)
        rp.flags |= UIW_MPA_FLAG_CRC;
    if (c->o.rev == 2)
        rp.flags |= UIW_MPA_FLAG_ENHANCED;
    if (c->o.peer_markers)
        rp.flags |= UIW_MPA_FLAG_MARKERS;
    if (c->o.rtr) { /* pick one offered RTR, Write first (as Linux siw) */
        CHECK(rq.peer2peer);
        rp.peer2peer = true;
        if (rq.rtr_write)
            c->rtr_chosen = UIW_CM_RTR_WRITE;
        else if (rq.rtr_read)
            c->rtr_chosen = UIW_CM_RTR_READ;
        else
            c->rtr_chosen = UIW_CM_RTR_SEND;
        CHECK(c->o.rtr & c->rtr_chosen);
        rp.rtr_write = c->rtr_chosen == UIW_CM_RTR_WRITE;
        rp.rtr_read = c->rtr_chosen == UIW_CM_RTR_READ;
        rp.rtr_send = c->rtr_chosen == UIW_CM_RTR_SEND;
    }
    CHECK_EQ(rawpeer_send_frame(&c->peer, &rp), 0);
    uiw_cm_ack_event(expect_cm(c->ch, UIW_CM_EVENT_ESTABLISHED));
    bool crc = c->o.crc || (rq.flags & UIW_MPA_FLAG_CRC);
    rawpeer_start(&c->peer, crc, (rq.flags & UIW_MPA_FLAG_MARKERS) != 0, c->o.peer_markers);
    if (c->rtr_chosen)
        expect_rtr(c);
}

void conf_open(struct conf *c, const struct conf_opts *o)
{
    memset(c, 0, sizeof(*c));
    c->o = *o;
    if (!c->o.family)
        c->o.family = AF_INET;
    if (!c->o.rev)
        c->o.rev = 2;
    c->nrecv = o->nrecv < 0 ? 0 : o->nrecv == 0 ? CONF_DEFAULT_RCV : o->nrecv;
    CHECK(c->nrecv * CONF_RECV_LEN <= CONF_REGION_LEN);
    c->lfd = -1;
    c->peer.fd = -1;
    struct uiw_context_attr at;
    uiw_context_attr_init(&at);
    at.progress_thread = !o->no_progress;
    c->ctx = uiw_open_context(&at);
    CHECK(c->ctx != NULL);
    c->pd = uiw_alloc_pd(c->ctx);
    c->pd2 = uiw_alloc_pd(c->ctx);
    CHECK(c->pd && c->pd2);
    c->cq = uiw_create_cq(c->ctx, o->cq_size ? o->cq_size : 256, NULL, NULL, 0);
    CHECK(c->cq != NULL);
    setup_memory(c);
    if (o->srq) {
        struct uiw_srq_init_attr sa = {.attr = {.max_wr = 16, .max_sge = 4}};
        c->srq = uiw_create_srq(c->pd, &sa);
        CHECK(c->srq != NULL);
    }
    c->ch = uiw_cm_create_channel();
    CHECK(c->ch != NULL);
    if (c->o.initiator)
        open_initiator(c);
    else
        open_responder(c);
    /* A peer-to-peer responder holds its send queue until the RTR arrives (RFC 6581), the
     * fast registration included: R_FAST stays unbound there. */
    if (!c->o.rtr || c->o.initiator)
        fast_register(c);
    post_receives(c);
    struct uiw_qp_attr qa;
    CHECK_EQ(uiw_query_qp(c->qp, &qa), 0);
    CHECK_EQ(qa.state, UIW_QPS_RTS);
    CHECK_EQ(qa.mpa_rev, c->o.rev);
    CHECK_EQ(qa.crc, c->peer.crc);
    CHECK_EQ(qa.markers_rx, c->peer.markers_tx);
    CHECK_EQ(qa.markers_tx, c->peer.markers_rx);
    CHECK(!qa.term_sent && !qa.term_received);
}

void conf_connect_more(struct conf *c, struct conf_conn *x)
{
    CHECK(c->lid != NULL && !c->o.rtr);
    memset(x, 0, sizeof(*x));
    responder_accept(c, &x->peer, &x->id, &x->qp, &x->reply, x->frame_store,
                     sizeof(x->frame_store));
}

void conf_conn_close(struct conf *c, struct conf_conn *x)
{
    rawpeer_close(&x->peer, false);
    for (;;) { /* its DISCONNECTED (the main connection's may come first) */
        struct uiw_cm_event *ev = expect_cm(c->ch, UIW_CM_EVENT_DISCONNECTED);
        bool mine = ev->id == x->id;
        if (ev->id == c->id)
            c->disconnected = true;
        uiw_cm_ack_event(ev);
        if (mine)
            break;
    }
    uiw_cm_destroy_qp(x->id);
    CHECK_EQ(uiw_cm_destroy_id(x->id), 0);
}

void conf_close(struct conf *c)
{
    conf_check_memory(c, false);
    rawpeer_close(&c->peer, false);
    /* The connection ends (the stack closed it, or our close reaches it). */
    uint64_t t0 = conf_now_ms();
    while (!c->disconnected) {
        struct uiw_cm_event *ev = NULL;
        int r = uiw_cm_get_event(c->ch, &ev, 100);
        if (r == 0) {
            enum uiw_cm_event_type t = ev->event;
            uiw_cm_ack_event(ev);
            if (t == UIW_CM_EVENT_DISCONNECTED)
                break;
            continue;
        }
        if (conf_now_ms() - t0 > CONF_WAIT_MS)
            uiw_test_fail(__FILE__, __LINE__, "no DISCONNECTED event");
    }
    uiw_cm_destroy_qp(c->id);
    CHECK_EQ(uiw_cm_destroy_id(c->id), 0);
    if (c->srq)
        CHECK_EQ(uiw_destroy_srq(c->srq), 0);
    if (c->lid)
        CHECK_EQ(uiw_cm_destroy_id(c->lid), 0);
    CHECK_EQ(uiw_cm_destroy_channel(c->ch), 0);
    if (c->lfd >= 0)
        close(c->lfd);
    for (int i = 0; i < R_COUNT; i++)
        CHECK_EQ(uiw_dereg_mr(c->mr[i]), 0);
    struct uiw_async_event ev;
    while (uiw_get_async_event(c->ctx, &ev) == 0)
        uiw_ack_async_event(&ev);
    CHECK_EQ(uiw_destroy_cq(c->cq), 0);
    CHECK_EQ(uiw_dealloc_pd(c->pd), 0);
    CHECK_EQ(uiw_dealloc_pd(c->pd2), 0);
    CHECK_EQ(uiw_close_context(c->ctx), 0);
    free(c->mem);
    free(c->shadow);
}

void conf_expect_written(struct conf *c, const void *p, const void *data, size_t n)
{
    const uint8_t *b = p;
    CHECK(b >= c->mem && b + n <= c->mem + c->mem_len);
    memcpy(c->shadow + (b - c->mem), data, n);
}

void conf_check_memory(struct conf *c, bool regions_too)
{
    if (c->may_write) {
        CHECK(c->may_write >= c->mem && c->may_write + c->may_len <= c->mem + c->mem_len);
        memcpy(c->shadow + (c->may_write - c->mem), c->may_write, c->may_len);
    }
    for (int i = 0; i <= R_COUNT; i++) {
        size_t g = (size_t)i * (CONF_REGION_LEN + CONF_GUARD_LEN);
        if (memcmp(c->mem + g, c->shadow + g, CONF_GUARD_LEN) != 0) {
            uiw_test_hexdiff(c->mem + g, c->shadow + g, CONF_GUARD_LEN);
            uiw_test_fail(__FILE__, __LINE__, "guard bytes before region %d overwritten", i);
        }
        if (regions_too && i < R_COUNT &&
            memcmp(c->region[i], c->shadow + (c->region[i] - c->mem), CONF_REGION_LEN) != 0)
            uiw_test_fail(__FILE__, __LINE__, "region %d was written", i);
    }
}

void conf_post_read(struct conf *c, uint8_t *sink, uint32_t len, uint32_t rkey, uint64_t rto)
{
    int r = -1;
    for (int i = 0; i < R_COUNT; i++)
        if (sink >= c->region[i] && sink + len <= c->region[i] + CONF_REGION_LEN)
            r = i;
    CHECK(r >= 0);
    /* a responder sends nothing before the initiator's first FPDU (RFC 5044 7.1.2): the
     * raw initiator speaks first, with a zero-length Write, if it has not yet */
    if (!c->o.initiator && c->peer.tx.stream_pos == 0)
        CHECK_EQ(rawpeer_send_write(&c->peer, 1, 0, NULL, 0), 0);
    struct uiw_sge sge = {.addr = (uintptr_t)sink, .length = len, .lkey = c->mr[r]->lkey};
    struct uiw_send_wr wr = {.wr_id = 55,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = UIW_WR_RDMA_READ,
                             .send_flags = UIW_SEND_SIGNALED};
    wr.wr.rdma.remote_addr = rto;
    wr.wr.rdma.rkey = rkey;
    struct uiw_send_wr *bad = NULL;
    CHECK_EQ(uiw_post_send(c->qp, &wr, &bad), 0);
    c->read_posted = true;
}

void conf_recv_read_req(struct conf *c, struct uiw_rdmap_read_req *rr)
{
    uint8_t u[256];
    uint16_t len = 0;
    CHECK_EQ(rawpeer_recv_fpdu(&c->peer, u, sizeof(u), &len, CONF_WAIT_MS), 1);
    CHECK_EQ(len, UIW_DDP_UNTAGGED_HDR_LEN + UIW_RDMAP_READ_REQ_LEN);
    struct uiw_ddp_hdr h;
    CHECK_EQ(uiw_ddp_hdr_parse(u, len, &h), UIW_DDP_UNTAGGED_HDR_LEN);
    CHECK(!h.tagged && h.last);
    CHECK_EQ(h.qn, UIW_DDP_QN_READ_REQ);
    CHECK_EQ(h.mo, 0);
    CHECK_EQ(h.rdmap_ctrl, uiw_rdmap_ctrl(UIW_RDMAP_READ_REQ));
    CHECK_EQ(uiw_rdmap_read_req_parse(u + UIW_DDP_UNTAGGED_HDR_LEN, UIW_RDMAP_READ_REQ_LEN, rr),
             UIW_RDMAP_READ_REQ_LEN);
}

void conf_send(struct conf *c, const uint8_t *hdr, size_t hdr_len, const void *payload, size_t plen)
{
    CHECK(hdr_len <= sizeof(c->sent));
    memcpy(c->sent, hdr, hdr_len);
    c->sent_len = (uint16_t)(hdr_len + plen);
    c->sent_hdr = (uint8_t)(hdr_len >= UIW_DDP_UNTAGGED_HDR_LEN && !(hdr[0] & UIW_DDP_FLAG_TAGGED)
                                ? UIW_DDP_UNTAGGED_HDR_LEN
                                : UIW_DDP_TAGGED_HDR_LEN);
    struct uiw_wire_iov v[2] = {{hdr, hdr_len}, {payload, plen}};
    CHECK_EQ(rawpeer_send_ulpdu(&c->peer, v, plen ? 2 : 1), 0);
}

void conf_expect_async(struct conf *c, enum uiw_event_type type, struct uiw_async_event *out)
{
    uint64_t t0 = conf_now_ms();
    char seen[256] = "";
    for (;;) {
        struct uiw_async_event ev;
        int r = uiw_get_async_event(c->ctx, &ev);
        if (r == 0) {
            struct uiw_async_event copy = ev;
            uiw_ack_async_event(&ev);
            if (copy.event_type == type) {
                *out = copy;
                return;
            }
            size_t l = strlen(seen);
            snprintf(seen + l, sizeof(seen) - l, " %s", uiw_event_type_str(copy.event_type));
            continue;
        }
        CHECK_EQ(r, -EAGAIN);
        uint64_t el = conf_now_ms() - t0;
        if (el > CONF_WAIT_MS)
            uiw_test_fail(__FILE__, __LINE__, "no async event %s (saw:%s)",
                          uiw_event_type_str(type), seen);
        struct pollfd pf = {.fd = uiw_async_fd(c->ctx), .events = POLLIN};
        poll(&pf, 1, 50);
    }
}

void conf_next_wc(struct conf *c, struct uiw_wc *wc)
{
    uint64_t t0 = conf_now_ms();
    for (;;) {
        int n = uiw_poll_cq(c->cq, 1, wc);
        CHECK(n >= 0);
        if (n == 1)
            return;
        if (conf_now_ms() - t0 > CONF_WAIT_MS)
            uiw_test_fail(__FILE__, __LINE__, "no completion within %d ms", CONF_WAIT_MS);
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

void conf_no_wc(struct conf *c, int ms)
{
    uint64_t t0 = conf_now_ms();
    while (conf_now_ms() - t0 < (uint64_t)ms) {
        struct uiw_wc wc;
        int n = uiw_poll_cq(c->cq, 1, &wc);
        CHECK(n >= 0);
        if (n)
            uiw_test_fail(__FILE__, __LINE__, "unexpected completion wr_id %llu status %s",
                          (unsigned long long)wc.wr_id, uiw_wc_status_str(wc.status));
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

void conf_check_terminate(struct conf *c, const struct conf_expect *e)
{
    struct rawpeer_term term;
    int r = rawpeer_expect_terminate(&c->peer, &term, CONF_WAIT_MS);
    if (r != 0)
        uiw_test_fail(__FILE__, __LINE__, "no Terminate on the wire: %d (%s)", r, uiw_strerror(r));
    const struct uiw_terminate *t = &term.t;
    const char *got = uiw_terminate_name(t->layer, t->etype, t->code);
    const char *want = uiw_terminate_name(e->layer, e->etype, e->code);
    if (t->layer != e->layer || t->etype != e->etype || t->code != e->code)
        uiw_test_fail(__FILE__, __LINE__, "Terminate %u/%u/0x%02x (%s), expected %u/%u/0x%02x (%s)",
                      t->layer, t->etype, t->code, got ? got : "?", e->layer, e->etype, e->code,
                      want ? want : "?");
    CHECK(!t->siw_order);
    CHECK_EQ(term.ddp.msn, 1); /* the first (and only) message on QN 2 */
    CHECK_EQ(term.ddp.rsvd_ulp, 0);
    if (t->hdrct != e->hdrct)
        uiw_test_fail(__FILE__, __LINE__, "Terminate hdrct M%d D%d R%d, expected M%d D%d R%d",
                      !!(t->hdrct & UIW_TERM_FLAG_M), !!(t->hdrct & UIW_TERM_FLAG_D),
                      !!(t->hdrct & UIW_TERM_FLAG_R), !!(e->hdrct & UIW_TERM_FLAG_M),
                      !!(e->hdrct & UIW_TERM_FLAG_D), !!(e->hdrct & UIW_TERM_FLAG_R));
    if (t->hdrct & UIW_TERM_FLAG_M)
        CHECK_EQ(t->ddp_seg_len, c->sent_len);
    if (t->hdrct & UIW_TERM_FLAG_D) {
        CHECK_EQ(t->ddp_hdr_len, c->sent_hdr);
        CHECK_MEM(t->ddp_hdr, c->sent, c->sent_hdr);
    }
    if (t->hdrct & UIW_TERM_FLAG_R) {
        CHECK_EQ(t->rdma_hdr_len, UIW_RDMAP_READ_REQ_LEN);
        CHECK_MEM(t->rdma_hdr, c->sent + UIW_DDP_UNTAGGED_HDR_LEN, UIW_RDMAP_READ_REQ_LEN);
    }
    /* Nothing follows the Terminate; the stream is closed. */
    size_t extra = 0;
    r = rawpeer_wait_eof(&c->peer, CONF_WAIT_MS, &extra);
    if (r != 1)
        uiw_test_fail(__FILE__, __LINE__,
                      "stream not closed after the Terminate: %d (%zu more bytes)", r, extra);
    /* The local side learns it. */
    if (e->async >= 0) {
        struct uiw_async_event ev;
        conf_expect_async(c, (enum uiw_event_type)e->async, &ev);
        CHECK(ev.qp == c->qp);
        CHECK_EQ(ev.term_layer, e->layer);
        CHECK_EQ(ev.term_etype, e->etype);
        CHECK_EQ(ev.term_code, e->code);
        CHECK(ev.code != 0);
    }
    struct uiw_qp_attr qa;
    CHECK_EQ(uiw_query_qp(c->qp, &qa), 0);
    CHECK(qa.state == UIW_QPS_TERMINATE || qa.state == UIW_QPS_ERROR);
    CHECK(qa.term_sent);
    CHECK(!qa.term_received);
    CHECK_EQ(qa.term_layer, e->layer);
    CHECK_EQ(qa.term_etype, e->etype);
    CHECK_EQ(qa.term_code, e->code);
    /* Every receive still posted completes: the oldest maybe with the error, the rest
     * flushed, in order; an outstanding RDMA Read (wr_id 55) completes with an error. On
     * an SRQ only those the QP took: the SRQ keeps the others. */
    int next = c->wc_done, reads = 0;
    int recvs = c->srq ? c->srq_taken : c->nrecv - c->wc_done;
    for (int k = 0; k < recvs + (c->read_posted ? 1 : 0); k++) {
        struct uiw_wc wc;
        conf_next_wc(c, &wc);
        if (wc.opcode != UIW_WC_RECV) {
            CHECK(c->read_posted);
            CHECK_EQ(wc.wr_id, 55);
            CHECK_EQ(wc.opcode, UIW_WC_RDMA_READ);
            if (e->read_status > 0 && (int)wc.status != e->read_status)
                uiw_test_fail(__FILE__, __LINE__, "RDMA Read completed with %s, expected %s",
                              uiw_wc_status_str(wc.status),
                              uiw_wc_status_str((enum uiw_wc_status)e->read_status));
            CHECK(wc.status != UIW_WC_SUCCESS);
            reads++;
            continue;
        }
        int i = next++;
        CHECK_EQ(wc.wr_id, 100 + i);
        int want_st = i == c->wc_done && e->head_status >= 0 ? e->head_status : UIW_WC_WR_FLUSH_ERR;
        if ((int)wc.status != want_st)
            uiw_test_fail(__FILE__, __LINE__, "receive %d completed with %s, expected %s", i,
                          uiw_wc_status_str(wc.status),
                          uiw_wc_status_str((enum uiw_wc_status)want_st));
    }
    CHECK_EQ(reads, c->read_posted ? 1 : 0);
    conf_no_wc(c, 50);
    /* Later work flushes at once; an SRQ's receive is not the failed QP's. */
    struct uiw_sge sge = {
        .addr = (uintptr_t)c->region[R_RECV], .length = 16, .lkey = c->mr[R_RECV]->lkey};
    struct uiw_recv_wr wr = {.wr_id = 999, .sg_list = &sge, .num_sge = 1};
    struct uiw_recv_wr *bad = NULL;
    if (c->srq) {
        struct uiw_async_event ev;
        conf_expect_async(c, UIW_EVENT_QP_LAST_WQE_REACHED, &ev);
        CHECK(ev.qp == c->qp);
        CHECK_EQ(uiw_post_recv(c->qp, &wr, &bad), -EINVAL);
        CHECK_EQ(uiw_post_srq_recv(c->srq, &wr, &bad), 0);
        conf_no_wc(c, 50);
    } else {
        CHECK_EQ(uiw_post_recv(c->qp, &wr, &bad), 0);
        struct uiw_wc wc;
        conf_next_wc(c, &wc);
        CHECK_EQ(wc.wr_id, 999);
        CHECK_EQ(wc.status, UIW_WC_WR_FLUSH_ERR);
    }
    struct uiw_context_stats st;
    CHECK_EQ(uiw_query_context_stats(c->ctx, &st), 0);
    CHECK_EQ(st.terminates_sent, 1);
    CHECK_EQ(st.terminates_received, 0);
    conf_check_memory(c, e->untouched);
}
