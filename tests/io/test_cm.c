/* Connection manager and MPA handshake over real loopback TCP (ids without QPs). */
#include "io_util.h"

struct pair {
    struct uiw_cm_channel *ch;
    struct uiw_cm_id *lid, *cid, *sid; /* listener, client, server side */
    uint16_t port;
    int family;
};

static void pair_open(struct pair *p, int family, const struct uiw_conn_param *lparam)
{
    memset(p, 0, sizeof(*p));
    p->family = family;
    p->ch = uiw_cm_create_channel();
    CHECK(p->ch != NULL);
    CHECK(uiw_cm_channel_fd(p->ch) >= 0);
    p->lid = uiw_cm_create_id(p->ch, NULL, (void *)0x1);
    p->cid = uiw_cm_create_id(p->ch, NULL, (void *)0x2);
    CHECK(p->lid && p->cid);
    p->port = io_listen(p->lid, family, lparam);
}

static void pair_close(struct pair *p)
{
    if (p->sid)
        CHECK_EQ(uiw_cm_destroy_id(p->sid), 0);
    CHECK_EQ(uiw_cm_destroy_id(p->cid), 0);
    CHECK_EQ(uiw_cm_destroy_id(p->lid), 0);
    CHECK_EQ(uiw_cm_destroy_channel(p->ch), 0);
}

/* Connect with cp; the server's CONNECT_REQUEST is checked by the caller through *req
 * (acked by the caller). */
static struct uiw_cm_event *pair_request(struct pair *p, const struct uiw_conn_param *cp)
{
    struct sockaddr_storage dst = io_addr(p->family, p->port);
    CHECK_EQ(uiw_cm_connect(p->cid, (struct sockaddr *)&dst, cp), 0);
    struct uiw_cm_event *ev = io_expect(p->ch, UIW_CM_EVENT_CONNECT_REQUEST);
    CHECK(ev->listen_id == p->lid);
    CHECK(ev->id != p->lid && ev->id != p->cid);
    CHECK(ev->id->context == (void *)0x1); /* inherited from the listener */
    p->sid = ev->id;
    return ev;
}

/* Accept with sp and collect both ESTABLISHED events; returns the client's (acked by
 * the caller). */
static struct uiw_cm_event *pair_accept(struct pair *p, const struct uiw_conn_param *sp)
{
    CHECK_EQ(uiw_cm_accept(p->sid, sp), 0);
    struct uiw_cm_event *a = io_expect(p->ch, UIW_CM_EVENT_ESTABLISHED);
    CHECK(a->id == p->sid);
    CHECK_EQ(uiw_cm_ack_event(a), 0);
    struct uiw_cm_event *b = io_expect(p->ch, UIW_CM_EVENT_ESTABLISHED);
    CHECK(b->id == p->cid);
    return b;
}

static void handshake_basic(int family)
{
    struct pair p;
    pair_open(&p, family, NULL);
    struct uiw_conn_param cp = {
        .private_data = "hello",
        .private_data_len = 5,
        .responder_resources = 8,
        .initiator_depth = 4,
    };
    struct uiw_cm_event *req = pair_request(&p, &cp);
    CHECK_EQ(req->param.private_data_len, 5);
    CHECK_MEM(req->param.private_data, "hello", 5);
    CHECK_EQ(req->param.mpa_rev, 2);
    CHECK_EQ(req->param.responder_resources, 8);
    CHECK_EQ(req->param.initiator_depth, 4);
    CHECK(!req->param.crc && !req->param.markers && !req->param.peer2peer);
    CHECK_EQ(uiw_cm_ack_event(req), 0);

    struct uiw_conn_param sp = {
        .private_data = "world!",
        .private_data_len = 6,
        .responder_resources = 2,
        .initiator_depth = 3,
    };
    struct uiw_cm_event *est = pair_accept(&p, &sp);
    CHECK_EQ(est->param.private_data_len, 6);
    CHECK_MEM(est->param.private_data, "world!", 6);
    CHECK_EQ(est->param.mpa_rev, 2);
    CHECK_EQ(uiw_cm_ack_event(est), 0);

    struct uiw_cm_conn_info ci, si;
    CHECK_EQ(uiw_cm_query(p.cid, &ci), 0);
    CHECK_EQ(uiw_cm_query(p.sid, &si), 0);
    CHECK(ci.initiator && !si.initiator);
    CHECK_EQ(ci.mpa_rev, 2);
    CHECK_EQ(si.mpa_rev, 2);
    CHECK(!ci.crc && !si.crc);
    /* IRD/ORD: each side's ORD at most the other's IRD. */
    CHECK_EQ(si.ird, 2);
    CHECK_EQ(si.ord, 3); /* min(3, client IRD 8) */
    CHECK_EQ(ci.ord, 2); /* lowered to the server's IRD */
    CHECK_EQ(ci.ird, 8);
    CHECK_EQ(ci.peer_ird, 2);
    CHECK_EQ(si.peer_ord, 4);
    CHECK(ci.emss > 0 && ci.mulpdu > 0 && ci.mulpdu < ci.emss);
    CHECK_EQ(ci.mulpdu, uiw_mpa_mulpdu(ci.emss, false));

    /* Both ends see the peer address of the other. */
    CHECK_EQ(io_port(uiw_cm_get_peer_addr(p.sid)), io_port(uiw_cm_get_local_addr(p.cid)));
    CHECK_EQ(io_port(uiw_cm_get_local_addr(p.sid)), p.port);

    /* Orderly disconnect: both sides get DISCONNECTED. */
    CHECK_EQ(uiw_cm_disconnect(p.cid), 0);
    struct uiw_cm_event *d1 = io_expect(p.ch, UIW_CM_EVENT_DISCONNECTED);
    CHECK(d1->id == p.cid);
    uiw_cm_ack_event(d1);
    struct uiw_cm_event *d2 = io_expect(p.ch, UIW_CM_EVENT_DISCONNECTED);
    CHECK(d2->id == p.sid);
    CHECK_EQ(d2->status, 0);
    uiw_cm_ack_event(d2);
    pair_close(&p);
}

TEST(cm_handshake_rev2_ipv4)
{
    handshake_basic(AF_INET);
}

TEST(cm_handshake_rev2_ipv6)
{
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_storage ss = io_addr(AF_INET6, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&ss, sizeof(struct sockaddr_in6)) < 0)
        SKIP("no IPv6 loopback");
    close(fd);
    handshake_basic(AF_INET6);
}

TEST(cm_reject_with_private_data)
{
    struct pair p;
    pair_open(&p, AF_INET, NULL);
    struct uiw_conn_param cp = {.private_data = "knock", .private_data_len = 5};
    uiw_cm_ack_event(pair_request(&p, &cp));
    CHECK_EQ(uiw_cm_reject(p.sid, "go away", 7), 0);
    struct uiw_cm_event *ev = io_expect(p.ch, UIW_CM_EVENT_REJECTED);
    CHECK(ev->id == p.cid);
    CHECK_EQ(ev->status, UIW_E_MPA_REJECTED);
    CHECK_EQ(ev->param.private_data_len, 7);
    CHECK_MEM(ev->param.private_data, "go away", 7);
    uiw_cm_ack_event(ev);
    CHECK_EQ(uiw_cm_query(p.cid, &(struct uiw_cm_conn_info){0}), -ENOTCONN);
    pair_close(&p);
}

/* responder_resources / initiator_depth 0 mean none (as librdmacm; the Linux
 * RPC-over-RDMA client connects with initiator depth 0): offered as 0 and negotiated as
 * 0. UIW_CM_IRD_ORD_DEFAULT (and a NULL parameter) means as many as the QP allows. */
TEST(cm_depth_zero_means_none)
{
    struct pair p;
    pair_open(&p, AF_INET, NULL);
    struct uiw_conn_param cp = {.responder_resources = 0, .initiator_depth = 0};
    struct uiw_cm_event *req = pair_request(&p, &cp);
    CHECK_EQ(req->param.responder_resources, 0);
    CHECK_EQ(req->param.initiator_depth, 0);
    uiw_cm_ack_event(req);
    struct uiw_conn_param sp;
    uiw_conn_param_init(&sp);
    CHECK_EQ(sp.responder_resources, UIW_CM_IRD_ORD_DEFAULT);
    CHECK_EQ(sp.initiator_depth, UIW_CM_IRD_ORD_DEFAULT);
    struct uiw_cm_event *est = pair_accept(&p, &sp);
    CHECK_EQ(est->param.responder_resources, 0);
    CHECK_EQ(est->param.initiator_depth, 0);
    uiw_cm_ack_event(est);
    struct uiw_cm_conn_info ci, si;
    CHECK_EQ(uiw_cm_query(p.cid, &ci), 0);
    CHECK_EQ(uiw_cm_query(p.sid, &si), 0);
    CHECK_EQ(ci.ird, 0);
    CHECK_EQ(ci.ord, 0);
    CHECK_EQ(si.ird, UIW_DEFAULT_IRD_ORD); /* the default: the (QP-less) id's limit */
    CHECK_EQ(si.ord, 0);                   /* at most the client's IRD */
    CHECK_EQ(si.peer_ird, 0);
    CHECK_EQ(si.peer_ord, 0);
    pair_close(&p);

    /* NULL on both sides: every default; a Rev 1 Request states no IRD/ORD */
    pair_open(&p, AF_INET, NULL);
    req = pair_request(&p, NULL);
    CHECK_EQ(req->param.responder_resources, UIW_DEFAULT_IRD_ORD);
    CHECK_EQ(req->param.initiator_depth, UIW_DEFAULT_IRD_ORD);
    uiw_cm_ack_event(req);
    uiw_cm_ack_event(pair_accept(&p, NULL));
    CHECK_EQ(uiw_cm_query(p.cid, &ci), 0);
    CHECK_EQ(ci.ird, UIW_DEFAULT_IRD_ORD);
    CHECK_EQ(ci.ord, UIW_DEFAULT_IRD_ORD);
    pair_close(&p);
    pair_open(&p, AF_INET, NULL);
    struct uiw_conn_param v1 = {.mpa_rev = 1};
    req = pair_request(&p, &v1);
    CHECK_EQ(req->param.responder_resources, UIW_CM_IRD_ORD_DEFAULT);
    CHECK_EQ(req->param.initiator_depth, UIW_CM_IRD_ORD_DEFAULT);
    uiw_cm_ack_event(req);
    uiw_cm_ack_event(pair_accept(&p, NULL));
    CHECK_EQ(uiw_cm_query(p.cid, &ci), 0);
    CHECK_EQ(ci.ird, 0); /* Rev 1: what the application asked for */
    CHECK_EQ(ci.ord, 0);
    pair_close(&p);

    /* depths the IRD/ORD words cannot carry are refused */
    struct uiw_cm_id *id = uiw_cm_create_id(p.ch = uiw_cm_create_channel(), NULL, NULL);
    struct sockaddr_storage dst = io_addr(AF_INET, 1);
    struct uiw_conn_param big = {.initiator_depth = UIW_MPA_V2_IRD_ORD_MASK + 1};
    CHECK_EQ(uiw_cm_connect(id, (struct sockaddr *)&dst, &big), -EINVAL);
    CHECK_EQ(uiw_cm_destroy_id(id), 0);
    CHECK_EQ(uiw_cm_destroy_channel(p.ch), 0);
}

/* Rev 1 initiator, Rev 2 responder: the responder answers Rev 1. */
TEST(cm_rev1_initiator)
{
    struct pair p;
    pair_open(&p, AF_INET, NULL);
    struct uiw_conn_param cp = {.mpa_rev = 1, .private_data = "v1", .private_data_len = 2};
    struct uiw_cm_event *req = pair_request(&p, &cp);
    CHECK_EQ(req->param.mpa_rev, 1);
    CHECK_EQ(req->param.private_data_len, 2);
    CHECK_MEM(req->param.private_data, "v1", 2);
    uiw_cm_ack_event(req);
    struct uiw_cm_event *est = pair_accept(&p, NULL);
    CHECK_EQ(est->param.mpa_rev, 1);
    uiw_cm_ack_event(est);
    struct uiw_cm_conn_info ci, si;
    CHECK_EQ(uiw_cm_query(p.cid, &ci), 0);
    CHECK_EQ(uiw_cm_query(p.sid, &si), 0);
    CHECK_EQ(ci.mpa_rev, 1);
    CHECK_EQ(si.mpa_rev, 1);
    CHECK(!ci.peer2peer && !si.peer2peer);
    pair_close(&p);
}

/* Rev 2 initiator, Rev 1 responder: the initiator falls back to Rev 1. */
TEST(cm_rev1_responder)
{
    struct pair p;
    pair_open(&p, AF_INET, NULL);
    struct uiw_conn_param cp = {.peer2peer = true, .initiator_depth = 4};
    struct uiw_cm_event *req = pair_request(&p, &cp);
    CHECK_EQ(req->param.mpa_rev, 2);
    CHECK(req->param.peer2peer);
    uiw_cm_ack_event(req);
    struct uiw_conn_param sp = {.mpa_rev = 1};
    struct uiw_cm_event *est = pair_accept(&p, &sp);
    CHECK_EQ(est->param.mpa_rev, 1);
    uiw_cm_ack_event(est);
    struct uiw_cm_conn_info ci, si;
    CHECK_EQ(uiw_cm_query(p.cid, &ci), 0);
    CHECK_EQ(uiw_cm_query(p.sid, &si), 0);
    CHECK_EQ(ci.mpa_rev, 1);
    CHECK_EQ(si.mpa_rev, 1);
    CHECK(!ci.peer2peer && ci.rtr == 0); /* no RTR under Rev 1 */
    pair_close(&p);
}

static void crc_case(bool client, bool server)
{
    struct pair p;
    pair_open(&p, AF_INET, NULL);
    struct uiw_conn_param cp = {.crc = client}, sp = {.crc = server};
    struct uiw_cm_event *req = pair_request(&p, &cp);
    CHECK_EQ(req->param.crc, client);
    uiw_cm_ack_event(req);
    uiw_cm_ack_event(pair_accept(&p, &sp));
    struct uiw_cm_conn_info ci, si;
    CHECK_EQ(uiw_cm_query(p.cid, &ci), 0);
    CHECK_EQ(uiw_cm_query(p.sid, &si), 0);
    CHECK_EQ(ci.crc, client || server);
    CHECK_EQ(si.crc, client || server);
    pair_close(&p);
}

TEST(cm_crc_when_either_asks)
{
    crc_case(false, false);
    crc_case(true, false);
    crc_case(false, true);
    crc_case(true, true);
}

TEST(cm_markers_per_direction)
{
    struct pair p;
    pair_open(&p, AF_INET, NULL);
    struct uiw_conn_param cp = {.markers = true};
    struct uiw_cm_event *req = pair_request(&p, &cp);
    CHECK(req->param.markers);
    uiw_cm_ack_event(req);
    uiw_cm_ack_event(pair_accept(&p, NULL));
    struct uiw_cm_conn_info ci, si;
    CHECK_EQ(uiw_cm_query(p.cid, &ci), 0);
    CHECK_EQ(uiw_cm_query(p.sid, &si), 0);
    CHECK(ci.markers_rx && !ci.markers_tx);
    CHECK(si.markers_tx && !si.markers_rx);
    CHECK_EQ(si.mulpdu, uiw_mpa_mulpdu(si.emss, true));
    pair_close(&p);

    /* A responder that refuses markers (as Linux siw) rejects. */
    pair_open(&p, AF_INET, NULL);
    uiw_cm_ack_event(pair_request(&p, &cp));
    struct uiw_conn_param sp = {.reject_markers = true};
    CHECK_EQ(uiw_cm_accept(p.sid, &sp), UIW_E_MPA_MARKERS_UNSUPPORTED);
    struct uiw_cm_event *e1 = NULL, *e2 = NULL;
    CHECK_EQ(uiw_cm_get_event(p.ch, &e1, EV_WAIT_MS), 0);
    CHECK_EQ(uiw_cm_get_event(p.ch, &e2, EV_WAIT_MS), 0);
    struct uiw_cm_event *se = e1->id == p.sid ? e1 : e2, *ce = e1->id == p.sid ? e2 : e1;
    CHECK_EQ(se->event, UIW_CM_EVENT_CONNECT_ERROR);
    CHECK_EQ(se->status, UIW_E_MPA_MARKERS_UNSUPPORTED);
    CHECK_EQ(ce->event, UIW_CM_EVENT_REJECTED);
    uiw_cm_ack_event(e1);
    uiw_cm_ack_event(e2);
    pair_close(&p);
}

TEST(cm_peer2peer_rtr_negotiation)
{
    struct pair p;
    pair_open(&p, AF_INET, NULL);
    struct uiw_conn_param cp = {.peer2peer = true, .rtr = UIW_CM_RTR_READ | UIW_CM_RTR_SEND};
    struct uiw_cm_event *req = pair_request(&p, &cp);
    CHECK(req->param.peer2peer);
    CHECK_EQ(req->param.rtr, UIW_CM_RTR_READ | UIW_CM_RTR_SEND);
    uiw_cm_ack_event(req);
    struct uiw_cm_event *est = pair_accept(&p, NULL); /* default: Write or Read */
    CHECK(est->param.peer2peer);
    CHECK_EQ(est->param.rtr, UIW_CM_RTR_READ);
    uiw_cm_ack_event(est);
    struct uiw_cm_conn_info ci, si;
    CHECK_EQ(uiw_cm_query(p.cid, &ci), 0);
    CHECK_EQ(uiw_cm_query(p.sid, &si), 0);
    CHECK(ci.peer2peer && si.peer2peer);
    CHECK_EQ(ci.rtr, UIW_CM_RTR_READ);
    CHECK_EQ(si.rtr, UIW_CM_RTR_READ);
    pair_close(&p);

    /* Only Send offered, the responder takes Send: Send. */
    pair_open(&p, AF_INET, NULL);
    cp.rtr = UIW_CM_RTR_SEND;
    uiw_cm_ack_event(pair_request(&p, &cp));
    struct uiw_conn_param sp = {.rtr = UIW_CM_RTR_SEND | UIW_CM_RTR_WRITE};
    est = pair_accept(&p, &sp);
    CHECK_EQ(est->param.rtr, UIW_CM_RTR_SEND);
    uiw_cm_ack_event(est);
    pair_close(&p);

    /* No common RTR type: the responder rejects. */
    pair_open(&p, AF_INET, NULL);
    uiw_cm_ack_event(pair_request(&p, &cp));
    CHECK_EQ(uiw_cm_accept(p.sid, NULL), UIW_E_MPA_NO_MATCHING_RTR);
    struct uiw_cm_event *e1 = NULL, *e2 = NULL;
    CHECK_EQ(uiw_cm_get_event(p.ch, &e1, EV_WAIT_MS), 0);
    CHECK_EQ(uiw_cm_get_event(p.ch, &e2, EV_WAIT_MS), 0);
    struct uiw_cm_event *ce = e1->id == p.cid ? e1 : e2;
    CHECK_EQ(ce->event, UIW_CM_EVENT_REJECTED);
    uiw_cm_ack_event(e1);
    uiw_cm_ack_event(e2);
    pair_close(&p);
}

/* The Reply on the wire, read by a raw initiator. */
TEST(cm_reply_bytes_on_the_wire)
{
    struct uiw_cm_channel *ch = uiw_cm_create_channel();
    struct uiw_cm_id *lid = uiw_cm_create_id(ch, NULL, NULL);
    uint16_t port = io_listen(lid, AF_INET, NULL);
    int fd = raw_connect(AF_INET, port);
    struct uiw_mpa_frame rq = {
        .kind = UIW_MPA_REQUEST,
        .flags = UIW_MPA_FLAG_CRC | UIW_MPA_FLAG_ENHANCED,
        .rev = 2,
        .peer2peer = true,
        .rtr_write = true,
        .ird = 5,
        .ord = 7,
        .pd = (const uint8_t *)"abc",
        .pd_len = 3,
    };
    uint8_t buf[600];
    ssize_t n = uiw_mpa_frame_encode(&rq, buf, sizeof(buf));
    CHECK_EQ(n, 20 + 4 + 3);
    CHECK_EQ(write(fd, buf, (size_t)n), n);
    struct uiw_cm_event *ev = io_expect(ch, UIW_CM_EVENT_CONNECT_REQUEST);
    struct uiw_cm_id *sid = ev->id;
    CHECK_EQ(ev->param.responder_resources, 5);
    CHECK_EQ(ev->param.initiator_depth, 7);
    CHECK_EQ(ev->param.rtr, UIW_CM_RTR_WRITE);
    uiw_cm_ack_event(ev);
    struct uiw_conn_param sp = {.responder_resources = 9,
                                .initiator_depth = 6,
                                .private_data = "xy",
                                .private_data_len = 2};
    CHECK_EQ(uiw_cm_accept(sid, &sp), 0);
    uiw_cm_ack_event(io_expect(ch, UIW_CM_EVENT_ESTABLISHED));
    CHECK_EQ(raw_read(fd, buf, 20 + 4 + 2, 2000), 20 + 4 + 2);
    CHECK_MEM(buf, "MPA ID Rep Frame", 16);
    CHECK_EQ(buf[16], UIW_MPA_FLAG_CRC | UIW_MPA_FLAG_ENHANCED); /* C echoed, no M, no R */
    CHECK_EQ(buf[17], 2);
    CHECK_EQ(buf[18] << 8 | buf[19], 6);
    CHECK_EQ(buf[20] << 8 | buf[21], UIW_MPA_V2_PEER2PEER | 9); /* A echoed, IRD 9 */
    CHECK_EQ(buf[22] << 8 | buf[23], UIW_MPA_V2_RTR_WRITE | 5); /* Write RTR, ORD min(6,5) */
    CHECK_MEM(buf + 24, "xy", 2);
    struct uiw_mpa_frame rp;
    CHECK_EQ(uiw_mpa_frame_parse(UIW_MPA_REPLY, buf, 26, 0, &rp), 26);
    close(fd);
    uiw_cm_ack_event(io_expect(ch, UIW_CM_EVENT_DISCONNECTED));
    CHECK_EQ(uiw_cm_destroy_id(sid), 0);
    CHECK_EQ(uiw_cm_destroy_id(lid), 0);
    CHECK_EQ(uiw_cm_destroy_channel(ch), 0);
}

/* Our Request on the wire, read by a raw responder that then answers Rev 1. */
TEST(cm_request_bytes_and_rev1_reply)
{
    uint16_t port;
    int lfd = raw_listen(AF_INET, &port);
    struct uiw_cm_channel *ch = uiw_cm_create_channel();
    struct uiw_cm_id *cid = uiw_cm_create_id(ch, NULL, NULL);
    struct sockaddr_storage dst = io_addr(AF_INET, port);
    struct uiw_conn_param cp = {.private_data = "req",
                                .private_data_len = 3,
                                .markers = true,
                                .responder_resources = 3,
                                .initiator_depth = 2};
    CHECK_EQ(uiw_cm_connect(cid, (struct sockaddr *)&dst, &cp), 0);
    struct uiw_cm_event *ev = NULL;
    int fd = accept(lfd, NULL, NULL);
    CHECK(fd >= 0);
    io_pump_until_readable(ch, fd); /* the channel sends the Request */
    uint8_t buf[64];
    CHECK_EQ(raw_read(fd, buf, 27, 2000), 27);
    CHECK_MEM(buf, "MPA ID Req Frame", 16);
    CHECK_EQ(buf[16], UIW_MPA_FLAG_MARKERS | UIW_MPA_FLAG_ENHANCED);
    CHECK_EQ(buf[17], 2);
    CHECK_EQ(buf[18] << 8 | buf[19], 7);
    CHECK_EQ(buf[20] << 8 | buf[21], 3);
    CHECK_EQ(buf[22] << 8 | buf[23], 2);
    CHECK_MEM(buf + 24, "req", 3);
    /* A Rev 1 responder answers: C set by it, no M. */
    struct uiw_mpa_frame rp = {.kind = UIW_MPA_REPLY,
                               .flags = UIW_MPA_FLAG_CRC,
                               .rev = 1,
                               .pd = (const uint8_t *)"r1",
                               .pd_len = 2};
    ssize_t n = uiw_mpa_frame_encode(&rp, buf, sizeof(buf));
    CHECK_EQ(n, 22);
    CHECK_EQ(write(fd, buf, (size_t)n), n);
    ev = io_expect(ch, UIW_CM_EVENT_ESTABLISHED);
    CHECK_EQ(ev->param.private_data_len, 2);
    CHECK_MEM(ev->param.private_data, "r1", 2);
    uiw_cm_ack_event(ev);
    struct uiw_cm_conn_info ci;
    CHECK_EQ(uiw_cm_query(cid, &ci), 0);
    CHECK_EQ(ci.mpa_rev, 1);
    CHECK(ci.crc && ci.markers_rx && !ci.markers_tx);
    close(fd);
    close(lfd);
    uiw_cm_ack_event(io_expect(ch, UIW_CM_EVENT_DISCONNECTED));
    CHECK_EQ(uiw_cm_destroy_id(cid), 0);
    CHECK_EQ(uiw_cm_destroy_channel(ch), 0);
}

/* The initiator gives up on a raw TCP peer that never replies. */
TEST(cm_handshake_timeout_active)
{
    uint16_t port;
    int lfd = raw_listen(AF_INET, &port);
    struct uiw_cm_channel *ch = uiw_cm_create_channel();
    struct uiw_cm_id *cid = uiw_cm_create_id(ch, NULL, NULL);
    struct sockaddr_storage dst = io_addr(AF_INET, port);
    struct uiw_conn_param cp = {.timeout_ms = 500};
    uint64_t t0 = io_now_ms();
    CHECK_EQ(uiw_cm_connect(cid, (struct sockaddr *)&dst, &cp), 0);
    /* The channel fd wakes up for the timeout by itself. */
    struct pollfd pfd = {.fd = uiw_cm_channel_fd(ch), .events = POLLIN};
    struct uiw_cm_event *ev = NULL;
    int r;
    while ((r = uiw_cm_get_event(ch, &ev, 0)) == -EAGAIN) {
        CHECK(io_now_ms() - t0 < EV_WAIT_MS);
        poll(&pfd, 1, 1000);
    }
    CHECK_EQ(r, 0);
    CHECK_EQ(ev->event, UIW_CM_EVENT_CONNECT_ERROR);
    CHECK_EQ(ev->status, -ETIMEDOUT);
    CHECK(io_now_ms() - t0 >= 450);
    uiw_cm_ack_event(ev);
    /* The raw peer sees the connection closed. */
    int fd = accept(lfd, NULL, NULL);
    CHECK(fd >= 0);
    uint8_t req[20];
    CHECK_EQ(raw_read(fd, req, 20, 2000), 20);
    CHECK(raw_wait_closed(fd, 2000));
    close(fd);
    close(lfd);
    CHECK_EQ(uiw_cm_destroy_id(cid), 0);
    CHECK_EQ(uiw_cm_destroy_channel(ch), 0);
}

/* The responder drops a raw peer that connects and stays silent; no event surfaces. */
TEST(cm_handshake_timeout_passive)
{
    struct uiw_cm_channel *ch = uiw_cm_create_channel();
    struct uiw_cm_id *lid = uiw_cm_create_id(ch, NULL, NULL);
    struct uiw_conn_param lp = {.timeout_ms = 200};
    uint16_t port = io_listen(lid, AF_INET, &lp);
    int fd = raw_connect(AF_INET, port);
    io_pump_until_readable(ch, fd);
    CHECK(raw_wait_closed(fd, 2000));
    close(fd);
    CHECK_EQ(uiw_cm_destroy_id(lid), 0);
    CHECK_EQ(uiw_cm_destroy_channel(ch), 0);
}

/* Garbage instead of a Request: the connection is closed, nothing surfaces. */
TEST(cm_bad_request_dropped)
{
    struct uiw_cm_channel *ch = uiw_cm_create_channel();
    struct uiw_cm_id *lid = uiw_cm_create_id(ch, NULL, NULL);
    uint16_t port = io_listen(lid, AF_INET, NULL);
    int fd = raw_connect(AF_INET, port);
    uint8_t junk[20] = "GET / HTTP/1.1\r\n\r\n";
    CHECK_EQ(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
    io_pump_until_readable(ch, fd);
    CHECK(raw_wait_closed(fd, 2000));
    close(fd);
    CHECK_EQ(uiw_cm_destroy_id(lid), 0);
    CHECK_EQ(uiw_cm_destroy_channel(ch), 0);
}

/* Private data above the responder's cap: refused. */
TEST(cm_private_data_cap)
{
    struct pair p;
    pair_open(&p, AF_INET, NULL); /* cap 256 */
    uint8_t big[300];
    memset(big, 0x5a, sizeof(big));
    struct uiw_conn_param cp = {.private_data = big, .private_data_len = 300};
    struct sockaddr_storage dst = io_addr(AF_INET, p.port);
    CHECK_EQ(uiw_cm_connect(p.cid, (struct sockaddr *)&dst, &cp), 0);
    struct uiw_cm_event *ev = io_expect(p.ch, UIW_CM_EVENT_CONNECT_ERROR);
    CHECK(ev->id == p.cid);
    uiw_cm_ack_event(ev);
    pair_close(&p);

    /* A listener with cap 300 takes it. */
    struct uiw_conn_param lp = {.pd_cap = 300};
    pair_open(&p, AF_INET, &lp);
    ev = pair_request(&p, &cp);
    CHECK_EQ(ev->param.private_data_len, 300);
    CHECK_MEM(ev->param.private_data, big, 300);
    uiw_cm_ack_event(ev);
    pair_close(&p);

    /* More than MPA allows is refused locally. */
    struct uiw_cm_channel *ch = uiw_cm_create_channel();
    struct uiw_cm_id *id = uiw_cm_create_id(ch, NULL, NULL);
    uint8_t huge[UIW_CM_PD_MAX];
    struct uiw_conn_param hp = {.private_data = huge, .private_data_len = UIW_CM_PD_MAX};
    CHECK_EQ(uiw_cm_connect(id, (struct sockaddr *)&dst, &hp), -EINVAL);
    uiw_cm_destroy_id(id);
    uiw_cm_destroy_channel(ch);
}

TEST(cm_unreachable)
{
    uint16_t port;
    int lfd = raw_listen(AF_INET, &port);
    close(lfd); /* nobody listens there now */
    struct uiw_cm_channel *ch = uiw_cm_create_channel();
    struct uiw_cm_id *cid = uiw_cm_create_id(ch, NULL, NULL);
    struct sockaddr_storage dst = io_addr(AF_INET, port);
    int r = uiw_cm_connect(cid, (struct sockaddr *)&dst, NULL);
    if (r == 0) {
        struct uiw_cm_event *ev = io_expect(ch, UIW_CM_EVENT_UNREACHABLE);
        CHECK_EQ(ev->status, -ECONNREFUSED);
        uiw_cm_ack_event(ev);
    } else {
        CHECK_EQ(r, -ECONNREFUSED);
    }
    CHECK_EQ(uiw_cm_destroy_id(cid), 0);
    CHECK_EQ(uiw_cm_destroy_channel(ch), 0);
}

TEST(cm_api_misuse)
{
    struct uiw_cm_channel *ch = uiw_cm_create_channel();
    struct uiw_cm_id *id = uiw_cm_create_id(ch, NULL, NULL);
    CHECK_EQ(uiw_cm_listen(id, 1, NULL), -EINVAL); /* not bound */
    CHECK_EQ(uiw_cm_accept(id, NULL), -EINVAL);
    CHECK_EQ(uiw_cm_reject(id, NULL, 0), -EINVAL);
    CHECK_EQ(uiw_cm_disconnect(id), -ENOTCONN);
    struct uiw_conn_param bad = {.mpa_rev = 3};
    struct sockaddr_storage dst = io_addr(AF_INET, 1);
    CHECK_EQ(uiw_cm_connect(id, (struct sockaddr *)&dst, &bad), -EINVAL);
    CHECK_EQ(uiw_cm_destroy_channel(ch), -EBUSY);
    struct uiw_cm_event *ev;
    CHECK_EQ(uiw_cm_get_event(ch, &ev, 0), -EAGAIN);
    CHECK_STR(uiw_cm_event_str(UIW_CM_EVENT_REJECTED), "UIW_CM_EVENT_REJECTED");
    CHECK_EQ(uiw_cm_destroy_id(id), 0);
    CHECK_EQ(uiw_cm_destroy_channel(ch), 0);
}

/* A Request that trickles in one byte at a time is reassembled. */
TEST(cm_request_in_single_bytes)
{
    struct uiw_cm_channel *ch = uiw_cm_create_channel();
    struct uiw_cm_id *lid = uiw_cm_create_id(ch, NULL, NULL);
    uint16_t port = io_listen(lid, AF_INET, NULL);
    int fd = raw_connect(AF_INET, port);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct uiw_mpa_frame rq = {.kind = UIW_MPA_REQUEST,
                               .flags = UIW_MPA_FLAG_ENHANCED,
                               .rev = 2,
                               .ird = 3,
                               .ord = 3,
                               .pd = (const uint8_t *)"slowly",
                               .pd_len = 6};
    uint8_t buf[64];
    ssize_t n = uiw_mpa_frame_encode(&rq, buf, sizeof(buf));
    CHECK_EQ(n, 30);
    struct uiw_cm_event *ev = NULL;
    for (ssize_t i = 0; i < n; i++) {
        CHECK_EQ(uiw_cm_get_event(ch, &ev, 0), -EAGAIN);
        CHECK_EQ(write(fd, buf + i, 1), 1);
    }
    ev = io_expect(ch, UIW_CM_EVENT_CONNECT_REQUEST);
    CHECK_EQ(ev->param.private_data_len, 6);
    CHECK_MEM(ev->param.private_data, "slowly", 6);
    struct uiw_cm_id *sid = ev->id;
    uiw_cm_ack_event(ev);
    CHECK_EQ(uiw_cm_reject(sid, NULL, 0), 0);
    CHECK_EQ(raw_read(fd, buf, 24, 2000), 24);
    CHECK_MEM(buf, "MPA ID Rep Frame", 16);
    CHECK(buf[16] & UIW_MPA_FLAG_REJECT);
    CHECK(raw_wait_closed(fd, 2000));
    close(fd);
    CHECK_EQ(uiw_cm_destroy_id(sid), 0);
    CHECK_EQ(uiw_cm_destroy_id(lid), 0);
    CHECK_EQ(uiw_cm_destroy_channel(ch), 0);
}
