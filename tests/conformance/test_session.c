/*
 * Conformance of connection setup and teardown against a hostile peer: MPA Requests and
 * Replies that are garbage, of the wrong revision, over the private-data cap, never
 * completed (handshake timeouts); a peer that stops mid-FPDU and resets or closes (every
 * work request flushed); a peer's own Terminate (decoded and reported, in RFC and in Linux
 * siw bit order); and random DDP/RDMAP headers in well-framed FPDUs (always a defined
 * Terminate, a closed stream, nothing written outside registered memory).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "conf.h"
#include "test.h"

static uint64_t ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A listener on loopback with the given parameters. */
struct lst {
    struct uiw_cm_channel *ch;
    struct uiw_cm_id *lid;
    uint16_t port;
    struct rawpeer peer;
};

static void lst_open(struct lst *l, const struct uiw_conn_param *p)
{
    memset(l, 0, sizeof(*l));
    l->peer.fd = -1;
    l->ch = uiw_cm_create_channel();
    CHECK(l->ch != NULL);
    l->lid = uiw_cm_create_id(l->ch, NULL, NULL);
    CHECK(l->lid != NULL);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK_EQ(uiw_cm_bind_addr(l->lid, (struct sockaddr *)&a), 0);
    CHECK_EQ(uiw_cm_listen(l->lid, 8, p), 0);
    const struct sockaddr_in *la = (const struct sockaddr_in *)uiw_cm_get_local_addr(l->lid);
    l->port = ntohs(la->sin_port);
    int fd = rawpeer_tcp_connect(AF_INET, l->port);
    CHECK(fd >= 0);
    rawpeer_init(&l->peer, fd);
}

static void lst_close(struct lst *l)
{
    rawpeer_close(&l->peer, false);
    CHECK_EQ(uiw_cm_destroy_id(l->lid), 0);
    CHECK_EQ(uiw_cm_destroy_channel(l->ch), 0);
}

/* Drive the channel until the stack closes the raw peer's connection; no CM event may
 * surface meanwhile. Returns the bytes the stack sent before closing (into buf). */
static size_t refused(struct lst *l, uint8_t *buf, size_t cap, int within_ms)
{
    uint64_t t0 = ms_now();
    size_t got = 0;
    for (;;) {
        struct uiw_cm_event *ev = NULL;
        int r = uiw_cm_get_event(l->ch, &ev, 20);
        if (r == 0)
            uiw_test_fail(__FILE__, __LINE__, "unexpected CM event %s (status %d)",
                          uiw_cm_event_str(ev->event), ev->status);
        CHECK_EQ(r, -EAGAIN);
        uint8_t b[600];
        ssize_t n = recv(l->peer.fd, b, sizeof(b), MSG_DONTWAIT);
        if (n > 0) {
            size_t k = got + (size_t)n <= cap ? (size_t)n : cap - got;
            memcpy(buf + got, b, k);
            got += k;
            continue;
        }
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return got;
        CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
        if (ms_now() - t0 > (uint64_t)within_ms)
            uiw_test_fail(__FILE__, __LINE__, "connection not closed within %d ms", within_ms);
    }
}

/* Either nothing came back, or an MPA Reply with the Reject bit (RFC 5044 7.1). */
static void check_no_reply_or_reject(const uint8_t *buf, size_t n)
{
    if (n == 0)
        return;
    struct uiw_mpa_frame f;
    CHECK(uiw_mpa_frame_parse(UIW_MPA_REPLY, buf, n, UIW_MPA_PD_MAX, &f) > 0);
    CHECK(f.flags & UIW_MPA_FLAG_REJECT);
}

static void write_request(struct lst *l, uint8_t flags, uint8_t rev, const void *pd,
                          uint16_t pd_len)
{
    struct uiw_mpa_frame rq = {.kind = UIW_MPA_REQUEST,
                               .flags = flags,
                               .rev = rev,
                               .ird = 4,
                               .ord = 4,
                               .pd = pd,
                               .pd_len = pd_len};
    CHECK_EQ(rawpeer_send_frame(&l->peer, &rq), 0);
}

/* RFC 5044 7.1: a Responder that gets no valid Request in time closes the connection. */
TEST(mpa_silent_initiator_times_out)
{
    struct lst l;
    struct uiw_conn_param p = {.timeout_ms = 300};
    lst_open(&l, &p);
    uint64_t t0 = ms_now();
    uint8_t buf[64];
    CHECK_EQ(refused(&l, buf, sizeof(buf), 3000), 0);
    CHECK(ms_now() - t0 >= 250);
    lst_close(&l);
}

TEST(mpa_partial_request_times_out)
{
    struct lst l;
    struct uiw_conn_param p = {.timeout_ms = 300};
    lst_open(&l, &p);
    CHECK_EQ(rawpeer_write(&l.peer, "MPA ID Req Fr", 13), 0);
    uint8_t buf[64];
    CHECK_EQ(refused(&l, buf, sizeof(buf), 3000), 0);
    lst_close(&l);
}

/* A wrong key is not MPA at all: closed without a Reply. */
TEST(mpa_garbage_request)
{
    struct lst l;
    lst_open(&l, NULL);
    CHECK_EQ(rawpeer_write(&l.peer, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27), 0);
    uint8_t buf[64];
    CHECK_EQ(refused(&l, buf, sizeof(buf), 3000), 0);
    lst_close(&l);
}

TEST(mpa_reply_key_as_request)
{
    struct lst l;
    lst_open(&l, NULL);
    uint8_t f[64];
    struct uiw_mpa_frame rp = {.kind = UIW_MPA_REPLY, .rev = 1};
    ssize_t n = uiw_mpa_frame_encode(&rp, f, sizeof(f));
    CHECK_EQ(n, 20);
    CHECK_EQ(rawpeer_write(&l.peer, f, (size_t)n), 0);
    uint8_t buf[64];
    CHECK_EQ(refused(&l, buf, sizeof(buf), 3000), 0);
    lst_close(&l);
}

TEST(mpa_reject_bit_in_request)
{
    struct lst l;
    lst_open(&l, NULL);
    uint8_t f[64];
    struct uiw_mpa_frame rq = {.kind = UIW_MPA_REQUEST, .rev = 1};
    ssize_t n = uiw_mpa_frame_encode(&rq, f, sizeof(f));
    CHECK_EQ(n, 20);
    f[16] |= UIW_MPA_FLAG_REJECT;
    CHECK_EQ(rawpeer_write(&l.peer, f, (size_t)n), 0);
    uint8_t buf[600];
    size_t got = refused(&l, buf, sizeof(buf), 3000);
    check_no_reply_or_reject(buf, got);
    lst_close(&l);
}

/* RFC 5044 7.1: a revision the Responder cannot interoperate with closes the connection. */
static void bad_rev(uint8_t rev)
{
    struct lst l;
    lst_open(&l, NULL);
    uint8_t f[64];
    struct uiw_mpa_frame rq = {.kind = UIW_MPA_REQUEST, .rev = 1};
    ssize_t n = uiw_mpa_frame_encode(&rq, f, sizeof(f));
    CHECK_EQ(n, 20);
    f[17] = rev;
    CHECK_EQ(rawpeer_write(&l.peer, f, (size_t)n), 0);
    uint8_t buf[600];
    size_t got = refused(&l, buf, sizeof(buf), 3000);
    check_no_reply_or_reject(buf, got);
    lst_close(&l);
}

TEST(mpa_rev3_request)
{
    bad_rev(3);
}

TEST(mpa_rev0_request)
{
    bad_rev(0);
}

/* Private data above the listener's cap (256 by default). */
TEST(mpa_private_data_over_cap)
{
    struct lst l;
    lst_open(&l, NULL);
    uint8_t pd[300];
    memset(pd, 0x6b, sizeof(pd));
    write_request(&l, UIW_MPA_FLAG_ENHANCED, 2, pd, sizeof(pd));
    uint8_t buf[600];
    size_t got = refused(&l, buf, sizeof(buf), 3000);
    check_no_reply_or_reject(buf, got);
    lst_close(&l);
}

/* PD_Length above RFC 5044's 512 even for a listener that takes 512. */
TEST(mpa_private_data_over_512)
{
    struct lst l;
    struct uiw_conn_param p = {.pd_cap = 512};
    lst_open(&l, &p);
    uint8_t f[20 + 600];
    struct uiw_mpa_frame rq = {.kind = UIW_MPA_REQUEST, .rev = 1};
    CHECK_EQ(uiw_mpa_frame_encode(&rq, f, sizeof(f)), 20);
    f[18] = 600 >> 8;
    f[19] = 600 & 0xFF;
    memset(f + 20, 0x33, 600);
    CHECK_EQ(rawpeer_write(&l.peer, f, sizeof(f)), 0);
    uint8_t buf[600];
    size_t got = refused(&l, buf, sizeof(buf), 3000);
    check_no_reply_or_reject(buf, got);
    lst_close(&l);
}

/* Rev 2 with the enhanced bit but no room for the IRD/ORD words. */
TEST(mpa_enhanced_without_ird_ord)
{
    struct lst l;
    lst_open(&l, NULL);
    uint8_t f[22];
    struct uiw_mpa_frame rq = {.kind = UIW_MPA_REQUEST, .rev = 1};
    CHECK_EQ(uiw_mpa_frame_encode(&rq, f, sizeof(f)), 20);
    f[16] = UIW_MPA_FLAG_ENHANCED;
    f[17] = 2;
    f[19] = 2;
    f[20] = f[21] = 0;
    CHECK_EQ(rawpeer_write(&l.peer, f, sizeof(f)), 0);
    uint8_t buf[600];
    size_t got = refused(&l, buf, sizeof(buf), 3000);
    check_no_reply_or_reject(buf, got);
    lst_close(&l);
}

/* A Rev 1 initiator gets a Rev 1 Reply (no IRD/ORD words) and a working stream. */
TEST(mpa_rev1_request_gets_rev1_reply)
{
    struct conf *c = calloc(1, sizeof(*c));
    struct conf_opts o = {.rev = 1, .crc = true};
    conf_open(c, &o);
    CHECK_EQ(c->reply.rev, 1);
    CHECK_EQ(c->reply.flags & UIW_MPA_FLAG_ENHANCED, 0);
    CHECK(c->reply.flags & UIW_MPA_FLAG_CRC);
    CHECK_EQ(c->reply.pd_len, 0);
    static const char msg[] = "rev 1 works";
    CHECK_EQ(rawpeer_send_send(&c->peer, UIW_RDMAP_SEND, 0, msg, sizeof(msg)), 0);
    struct uiw_wc wc;
    conf_next_wc(c, &wc);
    CHECK_EQ(wc.wr_id, 100);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(wc.byte_len, sizeof(msg));
    CHECK_MEM(c->region[R_RECV], msg, sizeof(msg));
    conf_expect_written(c, c->region[R_RECV], msg, sizeof(msg));
    conf_check_memory(c, true);
    conf_close(c);
    free(c);
}

/* Active side: the raw responder accepts TCP, reads the Request and never answers. */
struct act {
    struct uiw_cm_channel *ch;
    struct uiw_cm_id *id;
    int lfd;
    struct rawpeer peer;
    struct uiw_mpa_frame rq;
    uint8_t store[600];
};

static void act_open(struct act *a, uint32_t timeout_ms)
{
    memset(a, 0, sizeof(*a));
    uint16_t port = 0;
    a->lfd = rawpeer_tcp_listen(AF_INET, &port);
    CHECK(a->lfd >= 0);
    a->ch = uiw_cm_create_channel();
    a->id = uiw_cm_create_id(a->ch, NULL, NULL);
    CHECK(a->ch && a->id);
    struct sockaddr_in dst = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct uiw_conn_param cp;
    uiw_conn_param_init(&cp);
    cp.timeout_ms = timeout_ms;
    CHECK_EQ(uiw_cm_connect(a->id, (struct sockaddr *)&dst, &cp), 0);
    int fd = rawpeer_tcp_accept(a->lfd, CONF_WAIT_MS);
    CHECK(fd >= 0);
    rawpeer_init(&a->peer, fd);
    ssize_t n = -ETIMEDOUT;
    uint64_t t0 = ms_now();
    while (n == -ETIMEDOUT && ms_now() - t0 < CONF_WAIT_MS) {
        struct uiw_cm_event *ev = NULL;
        CHECK_EQ(uiw_cm_get_event(a->ch, &ev, 10), -EAGAIN);
        n = rawpeer_recv_frame(&a->peer, UIW_MPA_REQUEST, &a->rq, a->store, sizeof(a->store), 10);
    }
    CHECK(n >= 20);
}

static void act_close(struct act *a)
{
    rawpeer_close(&a->peer, false);
    close(a->lfd);
    CHECK_EQ(uiw_cm_destroy_id(a->id), 0);
    CHECK_EQ(uiw_cm_destroy_channel(a->ch), 0);
}

static struct uiw_cm_event *act_event(struct act *a)
{
    struct uiw_cm_event *ev = NULL;
    int r = uiw_cm_get_event(a->ch, &ev, CONF_WAIT_MS);
    if (r != 0)
        uiw_test_fail(__FILE__, __LINE__, "no CM event: %s", uiw_strerror(r));
    return ev;
}

TEST(mpa_responder_never_replies)
{
    struct act a;
    uint64_t t0 = ms_now();
    act_open(&a, 300);
    struct uiw_cm_event *ev = act_event(&a);
    CHECK_EQ(ev->event, UIW_CM_EVENT_CONNECT_ERROR);
    CHECK_EQ(ev->status, -ETIMEDOUT);
    CHECK(ms_now() - t0 >= 250);
    uiw_cm_ack_event(ev);
    CHECK_EQ(rawpeer_wait_eof(&a.peer, CONF_WAIT_MS, NULL), 1);
    act_close(&a);
}

/* A Reply that is not MPA at all: CONNECT_ERROR with UIW_E_MPA_BAD_KEY, closed. The key
 * decides before anything else, even when bytes 18-19 (PD_Length) would be too long. */
static void garbage_reply(const char *junk)
{
    struct act a;
    act_open(&a, CONF_WAIT_MS);
    CHECK_EQ(rawpeer_write(&a.peer, junk, 20), 0);
    struct uiw_cm_event *ev = act_event(&a);
    CHECK_EQ(ev->event, UIW_CM_EVENT_CONNECT_ERROR);
    if (ev->status != UIW_E_MPA_BAD_KEY)
        uiw_test_fail(__FILE__, __LINE__, "status %s (%d), expected UIW_E_MPA_BAD_KEY",
                      uiw_errname(ev->status), ev->status);
    uiw_cm_ack_event(ev);
    CHECK_EQ(rawpeer_wait_eof(&a.peer, CONF_WAIT_MS, NULL), 1);
    act_close(&a);
}

TEST(mpa_garbage_reply)
{
    garbage_reply("HTTP/1.1 200 OK \0\0\0\0");
}

TEST(mpa_garbage_reply_key_checked_first)
{
    garbage_reply("HTTP/1.1 200 OK\r\n\r\n\r\n");
}

TEST(mpa_reply_of_unknown_rev)
{
    struct act a;
    act_open(&a, CONF_WAIT_MS);
    uint8_t f[20];
    struct uiw_mpa_frame rp = {.kind = UIW_MPA_REPLY, .rev = 1};
    CHECK_EQ(uiw_mpa_frame_encode(&rp, f, sizeof(f)), 20);
    f[17] = 7;
    CHECK_EQ(rawpeer_write(&a.peer, f, sizeof(f)), 0);
    struct uiw_cm_event *ev = act_event(&a);
    CHECK_EQ(ev->event, UIW_CM_EVENT_CONNECT_ERROR);
    CHECK(ev->status <= -1100 && ev->status >= -1199); /* a UIW_E_MPA_* code */
    uiw_cm_ack_event(ev);
    CHECK_EQ(rawpeer_wait_eof(&a.peer, CONF_WAIT_MS, NULL), 1);
    act_close(&a);
}

TEST(mpa_reply_rejects)
{
    struct act a;
    act_open(&a, CONF_WAIT_MS);
    struct uiw_mpa_frame rp = {.kind = UIW_MPA_REPLY,
                               .flags = UIW_MPA_FLAG_REJECT,
                               .rev = 1,
                               .pd = (const uint8_t *)"go away",
                               .pd_len = 7};
    CHECK_EQ(rawpeer_send_frame(&a.peer, &rp), 0);
    struct uiw_cm_event *ev = act_event(&a);
    CHECK_EQ(ev->event, UIW_CM_EVENT_REJECTED);
    CHECK_EQ(ev->status, UIW_E_MPA_REJECTED);
    CHECK_EQ(ev->param.private_data_len, 7);
    CHECK_MEM(ev->param.private_data, "go away", 7);
    uiw_cm_ack_event(ev);
    CHECK_EQ(rawpeer_wait_eof(&a.peer, CONF_WAIT_MS, NULL), 1);
    act_close(&a);
}

/* ---- a peer that vanishes mid-FPDU: everything outstanding is flushed ---- */

static void vanish_mid_fpdu(bool reset, bool tagged)
{
    struct conf *c = calloc(1, sizeof(*c));
    struct conf_opts o = {.crc = true};
    conf_open(c, &o);
    /* An RDMA Read the peer will never answer. */
    struct uiw_sge sge = {
        .addr = (uintptr_t)c->region[R_RW], .length = 64, .lkey = c->mr[R_RW]->lkey};
    struct uiw_send_wr rd = {.wr_id = 55,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = UIW_WR_RDMA_READ,
                             .send_flags = UIW_SEND_SIGNALED};
    rd.wr.rdma.remote_addr = 0x1000;
    rd.wr.rdma.rkey = 0x4242;
    struct uiw_send_wr *bad = NULL;
    CHECK_EQ(uiw_post_send(c->qp, &rd, &bad), 0);
    /* Half an FPDU: a Send of 200 bytes (or a Write of 900) of which 100 arrive. */
    uint8_t pay[900];
    memset(pay, 0x77, sizeof(pay));
    uint8_t h[UIW_DDP_UNTAGGED_HDR_LEN];
    size_t hl;
    struct uiw_wire_iov v[2];
    if (tagged) {
        rawpeer_tagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_WRITE), true, c->mr[R_RW]->rkey,
                           (uintptr_t)c->region[R_RW] + 100);
        hl = UIW_DDP_TAGGED_HDR_LEN;
        v[1].len = 900;
        c->may_write = c->region[R_RW] + 100;
        c->may_len = 900;
    } else {
        rawpeer_untagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_SEND), true, 0, UIW_DDP_QN_SEND, 1, 0);
        hl = UIW_DDP_UNTAGGED_HDR_LEN;
        v[1].len = 200;
        c->may_write = c->region[R_RECV];
        c->may_len = 200;
    }
    v[0].base = h;
    v[0].len = hl;
    v[1].base = pay;
    uint8_t f[1024];
    ssize_t n = rawpeer_frame(&c->peer, v, 2, f, sizeof(f));
    CHECK(n > 100);
    CHECK_EQ(rawpeer_write(&c->peer, f, 100), 0);
    rawpeer_close(&c->peer, reset);
    /* DISCONNECTED with the reason; every WR flushed; the QP in ERROR. */
    struct uiw_cm_event *ev = NULL;
    CHECK_EQ(uiw_cm_get_event(c->ch, &ev, CONF_WAIT_MS), 0);
    CHECK_EQ(ev->event, UIW_CM_EVENT_DISCONNECTED);
    CHECK(ev->id == c->id);
    if (reset)
        CHECK(ev->status != 0);
    uiw_cm_ack_event(ev);
    bool seen_read = false;
    int recvs = 0;
    for (int i = 0; i < c->nrecv + 1; i++) {
        struct uiw_wc wc;
        conf_next_wc(c, &wc);
        if (wc.wr_id == 55) {
            CHECK(!seen_read);
            seen_read = true;
            CHECK(wc.status == UIW_WC_WR_FLUSH_ERR || wc.status == UIW_WC_RETRY_EXC_ERR);
            continue;
        }
        CHECK_EQ(wc.wr_id, 100 + recvs);
        CHECK_EQ(wc.opcode, UIW_WC_RECV);
        CHECK_EQ(wc.status, UIW_WC_WR_FLUSH_ERR);
        recvs++;
    }
    CHECK(seen_read);
    struct uiw_async_event aev;
    conf_expect_async(c, UIW_EVENT_CONN_CLOSED, &aev);
    CHECK(aev.qp == c->qp);
    conf_no_wc(c, 50);
    struct uiw_qp_attr qa;
    CHECK_EQ(uiw_query_qp(c->qp, &qa), 0);
    CHECK_EQ(qa.state, UIW_QPS_ERROR);
    CHECK(!qa.term_received);
    conf_check_memory(c, true);
    c->disconnected = true;
    conf_close(c);
    free(c);
}

TEST(flush_reset_mid_send)
{
    vanish_mid_fpdu(true, false);
}

TEST(flush_reset_mid_write)
{
    vanish_mid_fpdu(true, true);
}

TEST(flush_eof_mid_send)
{
    vanish_mid_fpdu(false, false);
}

/* ---- a peer that stops mid-FPDU, its connection up: the QP tells for how long ---- */

TEST(stall_mid_fpdu_told)
{
    struct conf *c = calloc(1, sizeof(*c));
    struct conf_opts o = {.crc = true};
    conf_open(c, &o);
    CHECK_EQ(uiw_qp_rx_stalled_ms(c->qp), 0u);
    uint8_t pay[200];
    memset(pay, 0x66, sizeof(pay));
    uint8_t h[UIW_DDP_UNTAGGED_HDR_LEN];
    rawpeer_untagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_SEND), true, 0, UIW_DDP_QN_SEND, 1, 0);
    struct uiw_wire_iov v[2] = {{.base = h, .len = sizeof(h)}, {.base = pay, .len = sizeof(pay)}};
    uint8_t f[1024];
    ssize_t n = rawpeer_frame(&c->peer, v, 2, f, sizeof(f));
    CHECK(n > 100);
    CHECK_EQ(rawpeer_write(&c->peer, f, 100), 0);
    /* the stall grows while nothing more comes */
    uint64_t st = 0;
    for (int i = 0; i < 1000 && st < 300; i++) {
        usleep(10000);
        st = uiw_qp_rx_stalled_ms(c->qp);
    }
    CHECK(st >= 300);
    conf_no_wc(c, 10);
    /* the rest of it: the Send completes and nothing is held any more */
    CHECK_EQ(rawpeer_write(&c->peer, f + 100, (size_t)n - 100), 0);
    struct uiw_wc wc;
    conf_next_wc(c, &wc);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(wc.opcode, UIW_WC_RECV);
    CHECK_EQ(wc.byte_len, 200u);
    c->wc_done++;
    conf_expect_written(c, c->region[R_RECV], pay, sizeof(pay));
    for (int i = 0; i < 500 && uiw_qp_rx_stalled_ms(c->qp); i++)
        usleep(1000);
    CHECK_EQ(uiw_qp_rx_stalled_ms(c->qp), 0u);
    conf_close(c);
    free(c);
}

/* ---- the peer's own Terminate: decoded and reported, nothing sent back ---- */

enum peer_term_kind { PT_RFC, PT_SIW, PT_HEADERS, PT_GARBAGE };

static void peer_terminates(enum peer_term_kind kind)
{
    struct conf *c = calloc(1, sizeof(*c));
    struct conf_opts o = {.crc = true};
    conf_open(c, &o);
    /* RDMAP / Remote Protection / Access Rights, no optional headers */
    struct uiw_terminate t = {.layer = UIW_TERM_LAYER_RDMAP,
                              .etype = UIW_TERM_RDMAP_REMOTE_PROTECTION,
                              .code = UIW_TERM_RP_ACCESS_RIGHTS};
    if (kind == PT_HEADERS) { /* DDP / Tagged / Base or Bounds with M and D */
        t.layer = UIW_TERM_LAYER_DDP;
        t.etype = UIW_TERM_DDP_TAGGED;
        t.code = UIW_TERM_DT_BASE_BOUNDS;
        t.hdrct = UIW_TERM_FLAG_M | UIW_TERM_FLAG_D;
        t.ddp_seg_len = 100;
        t.ddp_hdr_len = UIW_DDP_TAGGED_HDR_LEN;
        rawpeer_tagged_hdr(t.ddp_hdr, uiw_rdmap_ctrl(UIW_RDMAP_WRITE), true, 0x4401, 0x9000);
    }
    uint8_t b[UIW_DDP_UNTAGGED_HDR_LEN + 64];
    rawpeer_untagged_hdr(b, uiw_rdmap_ctrl(UIW_RDMAP_TERMINATE), true, 0, UIW_DDP_QN_TERMINATE, 1,
                         0);
    ssize_t n = uiw_terminate_encode(&t, b + UIW_DDP_UNTAGGED_HDR_LEN, 64);
    CHECK(n >= 4);
    if (kind == PT_SIW) { /* EType in the high nibble, Layer in the low one */
        b[UIW_DDP_UNTAGGED_HDR_LEN] = (uint8_t)(t.etype << 4 | t.layer);
        struct uiw_terminate chk;
        CHECK(uiw_terminate_parse(b + UIW_DDP_UNTAGGED_HDR_LEN, 4, &chk) > 0);
        CHECK(chk.siw_order);
        CHECK_EQ(chk.layer, t.layer);
        CHECK_EQ(chk.etype, t.etype);
    }
    if (kind == PT_GARBAGE) { /* layer 9: defined in no order; reported as unspecified */
        b[UIW_DDP_UNTAGGED_HDR_LEN] = 0x99;
        b[UIW_DDP_UNTAGGED_HDR_LEN + 3] = 0xFF;
        t.layer = UIW_TERM_LAYER_RDMAP;
        t.etype = UIW_TERM_RDMAP_REMOTE_OPERATION;
        t.code = UIW_TERM_RO_UNSPECIFIED;
    }
    struct uiw_wire_iov v = {b, UIW_DDP_UNTAGGED_HDR_LEN + (size_t)n};
    CHECK_EQ(rawpeer_send_ulpdu(&c->peer, &v, 1), 0);
    /* RFC 5040 5.4 / 6.2.1: the stack sends nothing more and closes. */
    size_t extra = 0;
    CHECK_EQ(rawpeer_wait_eof(&c->peer, CONF_WAIT_MS, &extra), 1);
    CHECK_EQ(extra, 0);
    struct uiw_async_event ev;
    conf_expect_async(c, UIW_EVENT_TERM_RECEIVED, &ev);
    CHECK(ev.qp == c->qp);
    CHECK_EQ(ev.term_layer, t.layer);
    CHECK_EQ(ev.term_etype, t.etype);
    CHECK_EQ(ev.term_code, t.code);
    struct uiw_qp_attr qa;
    CHECK_EQ(uiw_query_qp(c->qp, &qa), 0);
    CHECK_EQ(qa.state, UIW_QPS_ERROR);
    CHECK(qa.term_received);
    CHECK(!qa.term_sent);
    CHECK_EQ(qa.term_layer, t.layer);
    CHECK_EQ(qa.term_etype, t.etype);
    CHECK_EQ(qa.term_code, t.code);
    for (int i = 0; i < c->nrecv; i++) {
        struct uiw_wc wc;
        conf_next_wc(c, &wc);
        CHECK_EQ(wc.wr_id, 100 + i);
        CHECK_EQ(wc.status, UIW_WC_WR_FLUSH_ERR);
    }
    struct uiw_context_stats st;
    CHECK_EQ(uiw_query_context_stats(c->ctx, &st), 0);
    CHECK_EQ(st.terminates_received, 1);
    CHECK_EQ(st.terminates_sent, 0);
    conf_check_memory(c, true);
    conf_close(c);
    free(c);
}

TEST(peer_terminate_reported)
{
    peer_terminates(PT_RFC);
}

TEST(peer_terminate_siw_order_reported)
{
    peer_terminates(PT_SIW);
}

TEST(peer_terminate_with_headers_reported)
{
    peer_terminates(PT_HEADERS);
}

TEST(peer_terminate_garbage_body_reported)
{
    peer_terminates(PT_GARBAGE);
}

/* ---- random DDP/RDMAP headers in well-framed FPDUs ---- */

static uint64_t rnd_state;
static uint32_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return (uint32_t)rnd_state;
}

/* One random stream; returns 0 when it ended with a Terminate, else how it ended. */
static int random_headers(uint64_t seed)
{
    rnd_state = seed * 0x9E3779B97F4A7C15ull + 1;
    struct conf *c = calloc(1, sizeof(*c));
    struct conf_opts o = {.crc = (seed & 1) != 0,
                          .markers = seed % 3 == 1,
                          .peer_markers = seed % 4 == 1,
                          .initiator = seed % 3 == 2};
    conf_open(c, &o);
    /* Up to 8 FPDUs; each ULPDU 14..300 random bytes, the STag and TO fields sometimes
     * pointed at our real regions so that placement paths run too. */
    for (int k = 0; k < 8; k++) {
        uint8_t u[300];
        size_t len = 14 + rnd() % (sizeof(u) - 14);
        for (size_t i = 0; i < len; i++)
            u[i] = (uint8_t)rnd();
        if (rnd() & 1) {
            u[0] = (uint8_t)((u[0] & 0xC0) | 0x01); /* DV 1, reserved 0 */
            u[1] = (uint8_t)(0x40 | (u[1] & 0x0F)); /* RV 1 */
        }
        if ((u[0] & UIW_DDP_FLAG_TAGGED) && (rnd() & 1)) {
            uint32_t stag = c->mr[rnd() % R_COUNT]->rkey;
            uint64_t to = (uintptr_t)c->region[R_RW] + rnd() % (CONF_REGION_LEN + 64) - 32;
            for (int i = 0; i < 4; i++)
                u[2 + i] = (uint8_t)(stag >> (24 - 8 * i));
            for (int i = 0; i < 8; i++)
                u[6 + i] = (uint8_t)(to >> (56 - 8 * i));
        }
        struct uiw_wire_iov v = {u, len};
        if (rawpeer_send_ulpdu(&c->peer, &v, 1) != 0)
            break; /* the stack may have closed already */
    }
    /* Whatever it was, the stack ends the stream, with a defined Terminate if it sent one;
     * or it accepted everything (then we close). */
    struct rawpeer_term term;
    int r = rawpeer_expect_terminate(&c->peer, &term, CONF_WAIT_MS);
    if (r == 0) {
        CHECK(uiw_terminate_is_valid(term.t.layer, term.t.etype, term.t.code));
        CHECK_EQ(rawpeer_wait_eof(&c->peer, CONF_WAIT_MS, NULL), 1);
        struct uiw_qp_attr qa;
        CHECK_EQ(uiw_query_qp(c->qp, &qa), 0);
        CHECK(qa.term_sent);
        CHECK_EQ(qa.term_layer, term.t.layer);
        CHECK_EQ(qa.term_etype, term.t.etype);
        CHECK_EQ(qa.term_code, term.t.code);
    } else {
        CHECK(r == -ETIMEDOUT || r == -ENODATA || r == -ECONNRESET);
    }
    /* Nothing outside the registered regions changed; regions the peer may write
     * (R_RW, R_NOREAD, R_FAST, the receives) may hold anything. */
    memcpy(c->shadow + (c->region[R_RW] - c->mem), c->region[R_RW], CONF_REGION_LEN);
    memcpy(c->shadow + (c->region[R_NOREAD] - c->mem), c->region[R_NOREAD], CONF_REGION_LEN);
    memcpy(c->shadow + (c->region[R_FAST] - c->mem), c->region[R_FAST], CONF_REGION_LEN);
    memcpy(c->shadow + (c->region[R_RECV] - c->mem), c->region[R_RECV], CONF_REGION_LEN);
    conf_check_memory(c, true);
    conf_close(c);
    free(c);
    return r;
}

/* The seeds are fixed, so the outcome is too: every one of these 24 streams carries a
 * header the stack must refuse, and each ends with a Terminate (checked above to be a
 * defined one, the one the QP reports). A stream that ends otherwise fails the test. */
TEST(random_headers_never_escape)
{
    int terminated = 0;
    for (uint64_t seed = 1; seed <= 24; seed++) {
        int r = random_headers(seed);
        if (r != 0)
            fprintf(stderr, "seed %d: no Terminate (%s)\n", (int)seed, uiw_strerror(r));
        terminated += r == 0;
    }
    CHECK_EQ(terminated, 24);
}

/* ---- what a well-behaved peer may do, seen from the raw peer (positive controls) ---- */

/* RFC 5040 5.2.1: a zero-length Read is not validated and gets a zero-length Response. */
TEST(read_zero_length_not_validated)
{
    struct conf *c = calloc(1, sizeof(*c));
    struct conf_opts o = {.crc = true};
    conf_open(c, &o);
    struct uiw_rdmap_read_req rr = {.sink_stag = 0x777701,
                                    .sink_to = 0xABCDEF,
                                    .size = 0,
                                    .src_stag = 0x00DEAD00 | 0x99,
                                    .src_to = 12345};
    CHECK_EQ(rawpeer_send_read_req(&c->peer, &rr), 0);
    uint8_t u[256];
    uint16_t len = 0;
    CHECK_EQ(rawpeer_recv_fpdu(&c->peer, u, sizeof(u), &len, CONF_WAIT_MS), 1);
    CHECK_EQ(len, UIW_DDP_TAGGED_HDR_LEN);
    struct uiw_ddp_hdr h;
    CHECK_EQ(uiw_ddp_hdr_parse(u, len, &h), UIW_DDP_TAGGED_HDR_LEN);
    CHECK(h.tagged && h.last);
    CHECK_EQ(h.rdmap_ctrl, uiw_rdmap_ctrl(UIW_RDMAP_READ_RESP));
    CHECK_EQ(h.stag, rr.sink_stag);
    CHECK_EQ(h.to, rr.sink_to);
    CHECK_EQ(rawpeer_recv_fpdu(&c->peer, u, sizeof(u), &len, 200), -ETIMEDOUT);
    struct uiw_qp_attr qa;
    CHECK_EQ(uiw_query_qp(c->qp, &qa), 0);
    CHECK_EQ(qa.state, UIW_QPS_RTS);
    CHECK(!qa.term_sent);
    conf_check_memory(c, true);
    conf_close(c);
    free(c);
}

/* A Read Request served from registered memory: the Response carries exactly its bytes,
 * to the sink STag and TO the request named, in order. */
TEST(read_served_from_registered_memory)
{
    struct conf *c = calloc(1, sizeof(*c));
    struct conf_opts o = {.crc = true, .peer_markers = true};
    conf_open(c, &o);
    struct uiw_rdmap_read_req rr = {.sink_stag = 0x123401,
                                    .sink_to = 0x5000,
                                    .size = 700,
                                    .src_stag = c->mr[R_RW]->rkey,
                                    .src_to = (uintptr_t)c->region[R_RW] + 100};
    CHECK_EQ(rawpeer_send_read_req(&c->peer, &rr), 0);
    uint8_t *got = calloc(1, 1024);
    uint32_t have = 0;
    bool last = false;
    while (!last) {
        uint8_t u[2048];
        uint16_t len = 0;
        CHECK_EQ(rawpeer_recv_fpdu(&c->peer, u, sizeof(u), &len, CONF_WAIT_MS), 1);
        struct uiw_ddp_hdr h;
        CHECK_EQ(uiw_ddp_hdr_parse(u, len, &h), UIW_DDP_TAGGED_HDR_LEN);
        CHECK_EQ(h.rdmap_ctrl, uiw_rdmap_ctrl(UIW_RDMAP_READ_RESP));
        CHECK_EQ(h.stag, rr.sink_stag);
        CHECK_EQ(h.to, rr.sink_to + have);
        uint32_t n = len - UIW_DDP_TAGGED_HDR_LEN;
        CHECK(have + n <= rr.size);
        memcpy(got + have, u + UIW_DDP_TAGGED_HDR_LEN, n);
        have += n;
        last = h.last;
    }
    CHECK_EQ(have, rr.size);
    CHECK_MEM(got, c->region[R_RW] + 100, rr.size);
    free(got);
    conf_check_memory(c, true);
    conf_close(c);
    free(c);
}

/* A Write lands exactly where it was aimed; a Send behind it completes (RFC 5040 5.5). */
TEST(write_placed_exactly)
{
    struct conf *c = calloc(1, sizeof(*c));
    struct conf_opts o = {.crc = true, .markers = true};
    conf_open(c, &o);
    uint8_t data[700];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i ^ 0x3C);
    CHECK_EQ(rawpeer_send_write(&c->peer, c->mr[R_RW]->rkey, (uintptr_t)c->region[R_RW] + 10, data,
                                sizeof(data)),
             0);
    CHECK_EQ(
        rawpeer_send_write(&c->peer, c->fast_rkey, (uintptr_t)c->region[R_FAST] + 1000, data, 24),
        0);
    CHECK_EQ(rawpeer_send_send(&c->peer, UIW_RDMAP_SEND_SE, 0, "done", 4), 0);
    struct uiw_wc wc;
    conf_next_wc(c, &wc);
    CHECK_EQ(wc.wr_id, 100);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(wc.byte_len, 4);
    CHECK(wc.wc_flags & UIW_WC_SOLICITED);
    conf_expect_written(c, c->region[R_RW] + 10, data, sizeof(data));
    conf_expect_written(c, c->region[R_FAST] + 1000, data, 24);
    conf_expect_written(c, c->region[R_RECV], "done", 4);
    conf_check_memory(c, true);
    conf_close(c);
    free(c);
}

/* RFC 6581: an initiator offering only an RTR the responder does not accept gets a Reply
 * with the Reject bit, and the connection ends. */
TEST(mpa_no_matching_rtr_rejected)
{
    struct uiw_context *ctx = uiw_open_context(NULL);
    CHECK(ctx != NULL);
    struct uiw_pd *pd = uiw_alloc_pd(ctx);
    struct uiw_cq *cq = uiw_create_cq(ctx, 16, NULL, NULL, 0);
    struct lst l;
    lst_open(&l, NULL);
    struct uiw_mpa_frame rq = {.kind = UIW_MPA_REQUEST,
                               .flags = UIW_MPA_FLAG_ENHANCED,
                               .rev = 2,
                               .peer2peer = true,
                               .rtr_send = true,
                               .ird = 4,
                               .ord = 4};
    CHECK_EQ(rawpeer_send_frame(&l.peer, &rq), 0);
    struct uiw_cm_event *ev = NULL;
    CHECK_EQ(uiw_cm_get_event(l.ch, &ev, CONF_WAIT_MS), 0);
    CHECK_EQ(ev->event, UIW_CM_EVENT_CONNECT_REQUEST);
    CHECK(ev->param.peer2peer);
    CHECK_EQ(ev->param.rtr, UIW_CM_RTR_SEND);
    struct uiw_cm_id *id = ev->id;
    uiw_cm_ack_event(ev);
    id->verbs = ctx;
    struct uiw_qp_init_attr qa = {
        .send_cq = cq,
        .recv_cq = cq,
        .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
    CHECK_EQ(uiw_cm_create_qp(id, pd, &qa), 0);
    struct uiw_conn_param ap = {.peer2peer = true, .rtr = UIW_CM_RTR_WRITE | UIW_CM_RTR_READ};
    CHECK_EQ(uiw_cm_accept(id, &ap), UIW_E_MPA_NO_MATCHING_RTR);
    ev = NULL;
    CHECK_EQ(uiw_cm_get_event(l.ch, &ev, CONF_WAIT_MS), 0);
    CHECK_EQ(ev->event, UIW_CM_EVENT_CONNECT_ERROR);
    CHECK_EQ(ev->status, UIW_E_MPA_NO_MATCHING_RTR);
    uiw_cm_ack_event(ev);
    uint8_t store[600];
    struct uiw_mpa_frame rp;
    CHECK(rawpeer_recv_frame(&l.peer, UIW_MPA_REPLY, &rp, store, sizeof(store), CONF_WAIT_MS) >=
          20);
    CHECK(rp.flags & UIW_MPA_FLAG_REJECT);
    CHECK_EQ(rawpeer_wait_eof(&l.peer, CONF_WAIT_MS, NULL), 1);
    uiw_cm_destroy_qp(id);
    CHECK_EQ(uiw_cm_destroy_id(id), 0);
    lst_close(&l);
    CHECK_EQ(uiw_destroy_cq(cq), 0);
    CHECK_EQ(uiw_dealloc_pd(pd), 0);
    CHECK_EQ(uiw_close_context(ctx), 0);
}

/* RFC 5041 (segmentation: zero-length DDP messages): the STag and TO of a zero-length tagged
 * message are not checked, so a zero-length Write to no STag at all is harmless. */
TEST(write_zero_length_not_validated)
{
    struct conf *c = calloc(1, sizeof(*c));
    struct conf_opts o = {.crc = true};
    conf_open(c, &o);
    CHECK_EQ(rawpeer_send_write(&c->peer, 0x00BEEF00 | 0x5A, UINT64_MAX, NULL, 0), 0);
    CHECK_EQ(rawpeer_send_write(&c->peer, 0, 0, NULL, 0), 0);
    CHECK_EQ(rawpeer_send_send(&c->peer, UIW_RDMAP_SEND, 0, "ok", 2), 0);
    struct uiw_wc wc;
    conf_next_wc(c, &wc);
    CHECK_EQ(wc.wr_id, 100);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(wc.byte_len, 2);
    conf_expect_written(c, c->region[R_RECV], "ok", 2);
    uint8_t u[64];
    uint16_t len = 0;
    CHECK_EQ(rawpeer_recv_fpdu(&c->peer, u, sizeof(u), &len, 100), -ETIMEDOUT);
    struct uiw_qp_attr qa;
    CHECK_EQ(uiw_query_qp(c->qp, &qa), 0);
    CHECK_EQ(qa.state, UIW_QPS_RTS);
    CHECK(!qa.term_sent);
    conf_check_memory(c, true);
    conf_close(c);
    free(c);
}

/* A peer can overflow a small CQ with Sends: the CQ keeps its entries and reports
 * UIW_EVENT_CQ_ERR, the QP fails (RDMAP / Remote Operation / catastrophic error local to
 * the stream on the wire) and nothing is lost silently. */
TEST(cq_overflow_by_peer_sends)
{
    struct conf *c = calloc(1, sizeof(*c));
    struct conf_opts o = {.crc = true, .cq_size = 2};
    conf_open(c, &o);
    CHECK_EQ(c->nrecv, 4);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(rawpeer_send_send(&c->peer, UIW_RDMAP_SEND, 0, "abcd", 4), 0);
    struct rawpeer_term term;
    CHECK_EQ(rawpeer_expect_terminate(&c->peer, &term, CONF_WAIT_MS), 0);
    CHECK_EQ(term.t.layer, UIW_TERM_LAYER_RDMAP);
    CHECK_EQ(term.t.etype, UIW_TERM_RDMAP_REMOTE_OPERATION);
    CHECK_EQ(term.t.code, UIW_TERM_RO_CATASTROPHIC_STREAM);
    CHECK_EQ(term.t.hdrct, 0);
    CHECK_EQ(rawpeer_wait_eof(&c->peer, CONF_WAIT_MS, NULL), 1);
    struct uiw_async_event ev;
    conf_expect_async(c, UIW_EVENT_CQ_ERR, &ev);
    CHECK(ev.cq == c->cq);
    struct uiw_qp_attr qa;
    CHECK_EQ(uiw_query_qp(c->qp, &qa), 0);
    CHECK(qa.state == UIW_QPS_TERMINATE || qa.state == UIW_QPS_ERROR);
    CHECK(qa.term_sent);
    /* the three Sends, then the fourth receive flushed */
    for (int i = 0; i < 4; i++) {
        struct uiw_wc wc;
        conf_next_wc(c, &wc);
        CHECK_EQ(wc.wr_id, 100 + i);
        CHECK_EQ(wc.status, i < 3 ? UIW_WC_SUCCESS : UIW_WC_WR_FLUSH_ERR);
        if (i < 3) {
            CHECK_EQ(wc.byte_len, 4);
            conf_expect_written(c, c->region[R_RECV] + i * CONF_RECV_LEN, "abcd", 4);
        }
    }
    conf_no_wc(c, 50);
    conf_check_memory(c, true);
    conf_close(c);
    free(c);
}

/* RFC 5044 7.1.2: the responder sends no FPDU before it has received and validated the
 * initiator's first one, also without a negotiated RTR (MPA Rev 1; Rev 2 without
 * peer-to-peer, Linux siw's default). A Send posted right after accept waits for it and
 * is not lost. */
static void responder_waits(uint8_t rev)
{
    struct conf *c = calloc(1, sizeof(*c));
    struct conf_opts o = {.crc = true, .rev = rev};
    conf_open(c, &o);
    uint8_t *src = c->region[R_RW];
    memset(src, 0x6B, 24);
    conf_expect_written(c, src, src, 24);
    struct uiw_sge sge = {.addr = (uintptr_t)src, .length = 24, .lkey = c->mr[R_RW]->lkey};
    struct uiw_send_wr wr = {.wr_id = 7,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = UIW_WR_SEND,
                             .send_flags = UIW_SEND_SIGNALED};
    struct uiw_send_wr *bad = NULL;
    CHECK_EQ(uiw_post_send(c->qp, &wr, &bad), 0);
    uint8_t u[128];
    uint16_t len = 0;
    CHECK_EQ(rawpeer_recv_fpdu(&c->peer, u, sizeof(u), &len, 300), -ETIMEDOUT);
    conf_no_wc(c, 50);
    /* the initiator's first FPDU */
    CHECK_EQ(rawpeer_send_send(&c->peer, UIW_RDMAP_SEND, 0, "hi", 2), 0);
    struct uiw_wc wc;
    conf_next_wc(c, &wc);
    CHECK_EQ(wc.wr_id, 100);
    CHECK_EQ(wc.byte_len, 2);
    conf_expect_written(c, c->region[R_RECV], "hi", 2);
    c->wc_done = 1;
    conf_next_wc(c, &wc);
    CHECK_EQ(wc.wr_id, 7);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(rawpeer_recv_fpdu(&c->peer, u, sizeof(u), &len, CONF_WAIT_MS), 1);
    struct uiw_ddp_hdr h;
    CHECK_EQ(uiw_ddp_hdr_parse(u, len, &h), UIW_DDP_UNTAGGED_HDR_LEN);
    CHECK_EQ(h.qn, UIW_DDP_QN_SEND);
    CHECK_EQ(h.msn, 1);
    CHECK_EQ(len, UIW_DDP_UNTAGGED_HDR_LEN + 24);
    CHECK_MEM(u + UIW_DDP_UNTAGGED_HDR_LEN, src, 24);
    conf_check_memory(c, true);
    conf_close(c);
    free(c);
}

TEST(responder_waits_for_first_fpdu_rev1)
{
    responder_waits(1);
}

TEST(responder_waits_for_first_fpdu_rev2)
{
    responder_waits(2);
}

/* The initiator's wake-up Write (cm.h), on with the parameters uiw_conn_param_init sets:
 * the stack sends a Send; a responder that stays silent gets a zero-length RDMA Write
 * (STag 1, TO 0, Last) 50 ms later, then another after twice as long each time, five in
 * all, and nothing more; one that answers after the first gets no second; one that
 * answers before it, or the option turned off (no_wake_write), gets none. */
enum wake_case { WAKE_SILENT, WAKE_ANSWERED, WAKE_ANSWERED_LATE, WAKE_OFF };

/* The next FPDU is a wake-up Write, at least min_ms after t0. */
static void expect_wake(struct conf *c, uint64_t t0, uint64_t min_ms)
{
    uint8_t u[128];
    uint16_t len = 0;
    CHECK_EQ(rawpeer_recv_fpdu(&c->peer, u, sizeof(u), &len, CONF_WAIT_MS), 1);
    CHECK(ms_now() - t0 >= min_ms);
    struct uiw_ddp_hdr h;
    CHECK_EQ(len, UIW_DDP_TAGGED_HDR_LEN);
    CHECK_EQ(uiw_ddp_hdr_parse(u, len, &h), UIW_DDP_TAGGED_HDR_LEN);
    CHECK(h.tagged && h.last);
    CHECK_EQ(h.rdmap_ctrl, uiw_rdmap_ctrl(UIW_RDMAP_WRITE));
    CHECK_EQ(h.stag, 1);
    CHECK_EQ(h.to, 0);
}

/* A signalled Send (wr_id) of the first 16 bytes of R_RW. */
static void post_send16(struct conf *c, uint64_t wr_id)
{
    struct uiw_sge sge = {
        .addr = (uintptr_t)c->region[R_RW], .length = 16, .lkey = c->mr[R_RW]->lkey};
    struct uiw_send_wr wr = {.wr_id = wr_id,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = UIW_WR_SEND,
                             .send_flags = UIW_SEND_SIGNALED};
    struct uiw_send_wr *bad = NULL;
    CHECK_EQ(uiw_post_send(c->qp, &wr, &bad), 0);
}

static void initiator_wake(enum wake_case k)
{
    struct conf *c = calloc(1, sizeof(*c));
    struct conf_opts o = {.crc = true, .initiator = true, .wake = k != WAKE_OFF};
    conf_open(c, &o);
    post_send16(c, 7);
    uint8_t u[128];
    uint16_t len = 0;
    CHECK_EQ(rawpeer_recv_fpdu(&c->peer, u, sizeof(u), &len, CONF_WAIT_MS), 1);
    uint64_t t0 = ms_now();
    CHECK_EQ(len, UIW_DDP_UNTAGGED_HDR_LEN + 16);
    struct uiw_wc wc;
    conf_next_wc(c, &wc);
    CHECK_EQ(wc.wr_id, 7);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    if (k == WAKE_ANSWERED)
        CHECK_EQ(rawpeer_send_write(&c->peer, 1, 0, NULL, 0), 0);
    if (k == WAKE_ANSWERED_LATE) {
        expect_wake(c, t0, 40);
        CHECK_EQ(rawpeer_send_write(&c->peer, 1, 0, NULL, 0), 0);
    }
    if (k == WAKE_SILENT) {
        /* at 50, 150, 350, 750 and 1550 ms (a loaded machine may be later, never earlier) */
        static const uint64_t at[] = {50, 150, 350, 750, 1550};
        for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
            expect_wake(c, t0, at[i] - 10);
    }
    /* nothing more: the next one would be due 1600 ms after the last */
    CHECK_EQ(rawpeer_recv_fpdu(&c->peer, u, sizeof(u), &len, k == WAKE_SILENT ? 2000 : 500),
             -ETIMEDOUT);
    conf_no_wc(c, 10);
    struct uiw_qp_attr qa;
    CHECK_EQ(uiw_query_qp(c->qp, &qa), 0);
    CHECK_EQ(qa.state, UIW_QPS_RTS);
    conf_check_memory(c, true);
    conf_close(c);
    free(c);
}

TEST(initiator_wakes_a_silent_responder)
{
    initiator_wake(WAKE_SILENT);
}

TEST(initiator_no_wake_when_answered)
{
    initiator_wake(WAKE_ANSWERED);
}

TEST(initiator_wakes_until_answered)
{
    initiator_wake(WAKE_ANSWERED_LATE);
}

TEST(initiator_no_wake_when_off)
{
    initiator_wake(WAKE_OFF);
}

/* ---- a graceful close the stack begins: DISCONNECTED once the peer closed too ---- */

/* The stack sends, then disconnects: the peer reads the Send and then the FIN. While the
 * peer keeps its side open (and sends more, which the stack reads and discards), the
 * connection lingers and DISCONNECTED waits: an application that destroys its QP on that
 * event cannot turn the close into a reset that loses what it sent and the peer has not
 * acknowledged yet. The peer's FIN ends the wait, or, from a peer that never closes, a
 * bound of about two seconds. */
static void graceful_close(bool peer_closes)
{
    struct conf *c = calloc(1, sizeof(*c));
    struct conf_opts o = {.crc = true};
    conf_open(c, &o);
    /* the stack may send once it has seen this */
    CHECK_EQ(rawpeer_send_send(&c->peer, UIW_RDMAP_SEND, 0, "first", 5), 0);
    struct uiw_wc wc;
    conf_next_wc(c, &wc);
    CHECK_EQ(wc.opcode, UIW_WC_RECV);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    conf_expect_written(c, c->region[R_RECV], "first", 5);
    post_send16(c, 7);
    CHECK_EQ(uiw_cm_disconnect(c->id), 0);
    uint8_t u[128];
    uint16_t len = 0;
    CHECK_EQ(rawpeer_recv_fpdu(&c->peer, u, sizeof(u), &len, CONF_WAIT_MS), 1);
    CHECK_EQ(len, UIW_DDP_UNTAGGED_HDR_LEN + 16);
    CHECK_EQ(rawpeer_wait_eof(&c->peer, CONF_WAIT_MS, NULL), 1);
    uint64_t t0 = ms_now();
    /* the work completes at the close: the Send, then the other receives flushed */
    conf_next_wc(c, &wc);
    CHECK_EQ(wc.wr_id, 7);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    for (int i = 1; i < c->nrecv; i++) {
        conf_next_wc(c, &wc);
        CHECK_EQ(wc.opcode, UIW_WC_RECV);
        CHECK_EQ(wc.status, UIW_WC_WR_FLUSH_ERR);
    }
    CHECK_EQ(rawpeer_send_send(&c->peer, UIW_RDMAP_SEND, 0, "late", 4), 0);
    struct uiw_cm_event *ev = NULL;
    if (peer_closes) {
        CHECK_EQ(uiw_cm_get_event(c->ch, &ev, 300), -EAGAIN);
        rawpeer_close(&c->peer, false);
    }
    CHECK_EQ(uiw_cm_get_event(c->ch, &ev, CONF_WAIT_MS), 0);
    CHECK_EQ(ev->event, UIW_CM_EVENT_DISCONNECTED);
    CHECK(ev->id == c->id);
    CHECK_EQ(ev->status, 0);
    uiw_cm_ack_event(ev);
    if (!peer_closes)
        CHECK(ms_now() - t0 >= 1500);
    conf_no_wc(c, 50);
    c->disconnected = true;
    conf_close(c);
    free(c);
}

TEST(graceful_close_waits_for_the_peer)
{
    graceful_close(true);
}

TEST(graceful_close_bounded_when_the_peer_stays)
{
    graceful_close(false);
}
