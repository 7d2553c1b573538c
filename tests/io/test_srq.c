/*
 * A shared receive queue over real loopback connections, the way an RPC server uses it:
 * many connections, one pool of receives; worker threads poll the shared CQ, repost each
 * receive to the SRQ and answer on the request's QP, while the progress thread takes
 * receives from the SRQ for the arriving Sends.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "io_util.h"

enum {
    NC = 8,          /* connections */
    WIN = 2,         /* requests a client has outstanding per connection */
    NREQ = 40,       /* requests per connection */
    SPARE = NC,      /* receives beyond the most that can be in flight */
    RBUF = 64 << 10, /* each receive */
    NRECV = NC * WIN + SPARE,
    NWORK = 2,
};

struct req_hdr {
    uint32_t conn, slot, seq, len, sum; /* slot: the client's, reused after its reply */
};

struct server {
    struct uiw_context *ctx;
    struct uiw_pd *pd;
    struct uiw_cq *cq;
    struct uiw_srq *srq;
    struct uiw_qp *qp[NC];
    uint8_t *rbuf, *sbuf;
    struct uiw_mr *rmr, *smr;
    _Atomic int served, failed;
    _Atomic bool stop;
    _Atomic uint64_t large_bytes; /* payload of requests of 4 KiB and more */
};

static uint32_t sum_of(const uint8_t *p, size_t n)
{
    uint32_t s = 0;
    for (size_t i = 0; i < n; i++)
        s = s * 31 + p[i];
    return s;
}

static void srq_repost(struct server *v, uint64_t slot)
{
    struct uiw_sge sge = {
        .addr = (uintptr_t)(v->rbuf + slot * RBUF), .length = RBUF, .lkey = v->rmr->lkey};
    struct uiw_recv_wr wr = {.wr_id = slot, .sg_list = &sge, .num_sge = 1};
    struct uiw_recv_wr *bad = NULL;
    if (uiw_post_srq_recv(v->srq, &wr, &bad) != 0)
        atomic_fetch_add(&v->failed, 1);
}

/* One worker: a request received into an SRQ slot is checked, the slot reposted, and the
 * reply (its header) sent on the QP the request came over. */
static void *worker(void *arg)
{
    struct server *v = arg;
    while (!atomic_load(&v->stop)) {
        struct uiw_wc wc;
        int n = uiw_poll_cq(v->cq, 1, &wc);
        if (n <= 0) {
            struct pollfd none;
            poll(&none, 0, 1);
            continue;
        }
        if (wc.status != UIW_WC_SUCCESS) {
            fprintf(stderr, "server wr %llu: %s (%s)\n", (unsigned long long)wc.wr_id,
                    uiw_wc_status_str(wc.status), uiw_strerror(wc.vendor_err));
            atomic_fetch_add(&v->failed, 1);
            continue;
        }
        if (wc.opcode != UIW_WC_RECV)
            continue; /* a reply went out */
        uint64_t slot = wc.wr_id;
        struct req_hdr h;
        memcpy(&h, v->rbuf + slot * RBUF, sizeof(h));
        int k = -1;
        for (int i = 0; i < NC; i++)
            if (uiw_qp_num(v->qp[i]) == wc.qp_num)
                k = i;
        bool ok = slot < NRECV && k >= 0 && h.len == wc.byte_len && h.slot < NC * WIN &&
                  h.sum == sum_of(v->rbuf + slot * RBUF + sizeof(h), h.len - sizeof(h));
        if (!ok) {
            fprintf(stderr, "server: bad request in slot %llu (qp %u, %u bytes)\n",
                    (unsigned long long)slot, wc.qp_num, wc.byte_len);
            atomic_fetch_add(&v->failed, 1);
            continue;
        }
        if (h.len >= 4096)
            atomic_fetch_add(&v->large_bytes, h.len);
        /* the reply: the request's header, from the client slot's send buffer (the client
         * reuses the slot only after this reply) */
        memcpy(v->sbuf + h.slot * sizeof(h), &h, sizeof(h));
        srq_repost(v, slot); /* before the reply: the client sends again only after it */
        struct uiw_sge sge = {.addr = (uintptr_t)(v->sbuf + h.slot * sizeof(h)),
                              .length = sizeof(h),
                              .lkey = v->smr->lkey};
        struct uiw_send_wr sw = {
            .wr_id = slot, .sg_list = &sge, .num_sge = 1, .opcode = UIW_WR_SEND};
        struct uiw_send_wr *bad = NULL;
        if (uiw_post_send(v->qp[k], &sw, &bad) != 0)
            atomic_fetch_add(&v->failed, 1);
        atomic_fetch_add(&v->served, 1);
    }
    return NULL;
}

static uint32_t req_len(uint32_t conn, uint32_t seq)
{
    static const uint32_t sizes[] = {24, 100, 900, 4096, 20000, 65536, 1500, 64};
    return sizes[(conn * 3 + seq) % (sizeof(sizes) / sizeof(sizes[0]))];
}

/* Client slot s of connection c sends request seq (its header and a checked pattern). */
static void send_req(struct uiw_qp *qp, struct uiw_mr *mr, uint8_t *cbuf, int c, int s,
                     uint32_t seq)
{
    uint32_t len = req_len((uint32_t)c, seq);
    uint8_t *b = cbuf + (size_t)s * RBUF;
    for (uint32_t j = sizeof(struct req_hdr); j < len; j++)
        b[j] = (uint8_t)(c * 29 + seq * 7 + j);
    struct req_hdr h = {(uint32_t)c, (uint32_t)s, seq, len, 0};
    h.sum = sum_of(b + sizeof(h), len - sizeof(h));
    memcpy(b, &h, sizeof(h));
    struct uiw_sge ss = {.addr = (uintptr_t)b, .length = len, .lkey = mr->lkey};
    struct uiw_send_wr sw = {
        .wr_id = (uint64_t)s, .sg_list = &ss, .num_sge = 1, .opcode = UIW_WR_SEND};
    struct uiw_send_wr *bad = NULL;
    CHECK_EQ(uiw_post_send(qp, &sw, &bad), 0);
}

TEST(srq_rpc_server_many_connections)
{
    struct server *v = calloc(1, sizeof(*v));
    CHECK(v);
    struct uiw_context_attr at;
    uiw_context_attr_init(&at);
    v->ctx = uiw_open_context(&at); /* with its progress thread */
    struct uiw_context *cctx = uiw_open_context(&at);
    CHECK(v->ctx && cctx);
    v->pd = uiw_alloc_pd(v->ctx);
    struct uiw_pd *cpd = uiw_alloc_pd(cctx);
    v->cq = uiw_create_cq(v->ctx, 4 * NRECV, NULL, NULL, 0);
    struct uiw_cq *ccq = uiw_create_cq(cctx, 4 * NC * WIN * 2, NULL, NULL, 0);
    CHECK(v->pd && cpd && v->cq && ccq);
    struct uiw_srq_init_attr sa = {.attr = {.max_wr = NRECV, .max_sge = 1}};
    v->srq = uiw_create_srq(v->pd, &sa);
    CHECK(v->srq);
    v->rbuf = malloc((size_t)NRECV * RBUF);
    v->sbuf = malloc((size_t)NRECV * sizeof(struct req_hdr));
    CHECK(v->rbuf && v->sbuf);
    v->rmr = uiw_reg_mr(v->pd, v->rbuf, (size_t)NRECV * RBUF, UIW_ACCESS_LOCAL_WRITE);
    v->smr = uiw_reg_mr(v->pd, v->sbuf, (size_t)NRECV * sizeof(struct req_hdr), 0);
    CHECK(v->rmr && v->smr);
    for (uint64_t i = 0; i < NRECV; i++)
        srq_repost(v, i);
    CHECK_EQ(atomic_load(&v->failed), 0);

    /* NC connections; the server's QPs on the SRQ, each with a send queue only */
    struct uiw_cm_channel *ch = uiw_cm_create_channel();
    struct uiw_cm_id *lid = uiw_cm_create_id(ch, v->ctx, NULL);
    uint16_t port = io_listen_n(lid, AF_INET, NULL, NC);
    struct sockaddr_storage dst = io_addr(AF_INET, port);
    struct uiw_cm_id *cid[NC], *sid[NC];
    for (int i = 0; i < NC; i++) {
        cid[i] = uiw_cm_create_id(ch, cctx, NULL);
        struct uiw_qp_init_attr qa = {
            .send_cq = ccq, .recv_cq = ccq, .cap = {.max_send_wr = WIN, .max_recv_wr = WIN}};
        CHECK_EQ(uiw_cm_create_qp(cid[i], cpd, &qa), 0);
        CHECK_EQ(uiw_cm_connect(cid[i], (struct sockaddr *)&dst, NULL), 0);
        struct uiw_cm_event *ev = io_expect(ch, UIW_CM_EVENT_CONNECT_REQUEST);
        sid[i] = ev->id;
        uiw_cm_ack_event(ev);
        struct uiw_qp_init_attr sq = {
            .send_cq = v->cq, .recv_cq = v->cq, .srq = v->srq, .cap = {.max_send_wr = 2 * WIN}};
        CHECK_EQ(uiw_cm_create_qp(sid[i], v->pd, &sq), 0);
        v->qp[i] = sid[i]->qp;
        CHECK_EQ(uiw_cm_accept(sid[i], NULL), 0);
        for (int e = 0; e < 2; e++)
            uiw_cm_ack_event(io_expect(ch, UIW_CM_EVENT_ESTABLISHED));
    }
    pthread_t th[NWORK];
    for (int i = 0; i < NWORK; i++)
        CHECK_EQ(pthread_create(&th[i], NULL, worker, v), 0);

    /* clients: WIN requests outstanding per connection, the next after each reply */
    uint8_t *cbuf = malloc((size_t)NC * WIN * RBUF);
    struct req_hdr *reply = calloc((size_t)NC * WIN, sizeof(*reply));
    CHECK(cbuf && reply);
    struct uiw_mr *cmr = uiw_reg_mr(cpd, cbuf, (size_t)NC * WIN * RBUF, 0);
    struct uiw_mr *rmr =
        uiw_reg_mr(cpd, reply, (size_t)NC * WIN * sizeof(*reply), UIW_ACCESS_LOCAL_WRITE);
    CHECK(cmr && rmr);
    uint32_t next_seq[NC] = {0}, done[NC] = {0};
    struct uiw_qp *cqp[NC];
    for (int i = 0; i < NC; i++)
        cqp[i] = cid[i]->qp;
    /* slot s = conn * WIN + w: its send buffer and its reply receive */
    for (int s = 0; s < NC * WIN; s++) {
        struct uiw_sge rs = {
            .addr = (uintptr_t)&reply[s], .length = sizeof(*reply), .lkey = rmr->lkey};
        struct uiw_recv_wr rw = {.wr_id = (uint64_t)s, .sg_list = &rs, .num_sge = 1};
        struct uiw_recv_wr *rbad = NULL;
        CHECK_EQ(uiw_post_recv(cqp[s / WIN], &rw, &rbad), 0);
    }
    int outstanding = 0;
    for (int s = 0; s < NC * WIN; s++) {
        int c = s / WIN;
        send_req(cqp[c], cmr, cbuf, c, s, next_seq[c]++);
        outstanding++;
    }
    uint64_t end = io_now_ms() + 4 * EV_WAIT_MS;
    while (outstanding > 0) {
        CHECK(io_now_ms() < end);
        CHECK_EQ(atomic_load(&v->failed), 0);
        struct uiw_wc wc;
        int n = uiw_poll_cq(ccq, 1, &wc);
        CHECK(n >= 0);
        if (n == 0) {
            struct pollfd none;
            poll(&none, 0, 1);
            continue;
        }
        if (wc.status != UIW_WC_SUCCESS)
            uiw_test_fail(__FILE__, __LINE__, "client wr %llu: %s (%s)",
                          (unsigned long long)wc.wr_id, uiw_wc_status_str(wc.status),
                          uiw_strerror(wc.vendor_err));
        if (wc.opcode != UIW_WC_RECV)
            continue;
        /* the two workers may answer a connection's requests in either order: the reply
         * names the request's slot, the receive it landed in is only a buffer */
        int r = (int)wc.wr_id, c = r / WIN;
        CHECK_EQ(wc.qp_num, uiw_qp_num(cqp[c]));
        struct req_hdr h = reply[r];
        CHECK_EQ(h.conn, (uint32_t)c);
        CHECK_EQ(h.slot / WIN, (uint32_t)c);
        CHECK_EQ(h.len, req_len((uint32_t)c, h.seq));
        int s = (int)h.slot;
        done[c]++;
        outstanding--;
        /* the reply's receive again, then the connection's next request in the slot */
        struct uiw_sge rs = {
            .addr = (uintptr_t)&reply[r], .length = sizeof(*reply), .lkey = rmr->lkey};
        struct uiw_recv_wr rw = {.wr_id = (uint64_t)r, .sg_list = &rs, .num_sge = 1};
        struct uiw_recv_wr *rbad = NULL;
        CHECK_EQ(uiw_post_recv(cqp[c], &rw, &rbad), 0);
        if (next_seq[c] == NREQ)
            continue;
        send_req(cqp[c], cmr, cbuf, c, s, next_seq[c]++);
        outstanding++;
    }
    atomic_store(&v->stop, true);
    for (int i = 0; i < NWORK; i++)
        pthread_join(th[i], NULL);
    CHECK_EQ(atomic_load(&v->failed), 0);
    CHECK_EQ(atomic_load(&v->served), NC * NREQ);
    for (int c = 0; c < NC; c++) {
        CHECK_EQ(done[c], NREQ);
        struct uiw_qp_attr qa;
        CHECK_EQ(uiw_query_qp(v->qp[c], &qa), 0);
        CHECK_EQ(qa.state, UIW_QPS_RTS);
    }
    /* one pool served them all; the large requests were placed without a copy (the SRQ
     * never ran dry of long receives, so no read went through the staging ring) */
    struct uiw_context_stats st;
    CHECK_EQ(uiw_query_context_stats(v->ctx, &st), 0);
    CHECK(atomic_load(&v->large_bytes) > 0);
    CHECK(st.placed_payload_bytes >= atomic_load(&v->large_bytes));
    uint64_t small = 0;
    for (uint32_t c = 0; c < NC; c++)
        for (uint32_t q = 0; q < NREQ; q++)
            if (req_len(c, q) < 4096)
                small += req_len(c, q);
    small += (uint64_t)NC * NREQ * sizeof(struct req_hdr); /* the replies */
    if (st.copied_payload_bytes > small)
        uiw_test_fail(__FILE__, __LINE__, "%llu payload bytes copied, more than the %llu small",
                      (unsigned long long)st.copied_payload_bytes, (unsigned long long)small);

    for (int i = 0; i < NC; i++)
        CHECK_EQ(uiw_cm_disconnect(cid[i]), 0);
    for (int i = 0; i < 2 * NC; i++)
        uiw_cm_ack_event(io_expect(ch, UIW_CM_EVENT_DISCONNECTED));
    CHECK_EQ(uiw_destroy_srq(v->srq), -EBUSY);
    for (int i = 0; i < NC; i++) {
        uiw_cm_destroy_qp(cid[i]);
        uiw_cm_destroy_qp(sid[i]);
        CHECK_EQ(uiw_cm_destroy_id(cid[i]), 0);
        CHECK_EQ(uiw_cm_destroy_id(sid[i]), 0);
    }
    struct uiw_async_event ev;
    int last_wqe = 0;
    while (uiw_get_async_event(v->ctx, &ev) == 0)
        last_wqe += ev.event_type == UIW_EVENT_QP_LAST_WQE_REACHED;
    CHECK_EQ(last_wqe, NC); /* each connection's end, as it left RTS */
    CHECK_EQ(uiw_destroy_srq(v->srq), 0);
    CHECK_EQ(uiw_cm_destroy_id(lid), 0);
    CHECK_EQ(uiw_cm_destroy_channel(ch), 0);
    CHECK_EQ(uiw_dereg_mr(v->rmr), 0);
    CHECK_EQ(uiw_dereg_mr(v->smr), 0);
    CHECK_EQ(uiw_dereg_mr(cmr), 0);
    CHECK_EQ(uiw_dereg_mr(rmr), 0);
    CHECK_EQ(uiw_destroy_cq(v->cq), 0);
    CHECK_EQ(uiw_destroy_cq(ccq), 0);
    CHECK_EQ(uiw_dealloc_pd(v->pd), 0);
    CHECK_EQ(uiw_dealloc_pd(cpd), 0);
    CHECK_EQ(uiw_close_context(v->ctx), 0);
    CHECK_EQ(uiw_close_context(cctx), 0);
    free(v->rbuf);
    free(v->sbuf);
    free(cbuf);
    free(reply);
    free(v);
}
