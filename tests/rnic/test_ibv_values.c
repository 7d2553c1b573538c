/*
 * The verbs' numbers are libibverbs' numbers: work-completion statuses and opcodes,
 * work-request opcodes and async event types equal the ibv_* value of the same name
 * (rdma-core's libibverbs/verbs.h), so a port from ibverbs is a cast. Each value is pinned
 * against the number rdma-core defines and against libibverbs' header itself, a test
 * dependency (libibverbs-dev, which scripts/deps.sh installs): without the header these
 * tests fail, they do not skip the comparison. The values without an ibverbs counterpart
 * must not collide with any ibverbs value.
 */
#include <errno.h>

#include "pair.h"
#include "test.h"

#if defined(__has_include)
#if __has_include(<infiniband/verbs.h>)
#include <infiniband/verbs.h>
#define HAVE_IBV 1
#endif
#endif
#ifndef HAVE_IBV
#define HAVE_IBV 0
#endif

/* name, rdma-core's number */
#define WC_STATUSES(X)                                                                             \
    X(SUCCESS, 0)                                                                                  \
    X(LOC_LEN_ERR, 1)                                                                              \
    X(LOC_QP_OP_ERR, 2)                                                                            \
    X(LOC_PROT_ERR, 4)                                                                             \
    X(WR_FLUSH_ERR, 5)                                                                             \
    X(MW_BIND_ERR, 6)                                                                              \
    X(BAD_RESP_ERR, 7)                                                                             \
    X(LOC_ACCESS_ERR, 8)                                                                           \
    X(REM_INV_REQ_ERR, 9)                                                                          \
    X(REM_ACCESS_ERR, 10)                                                                          \
    X(REM_OP_ERR, 11)                                                                              \
    X(RETRY_EXC_ERR, 12)                                                                           \
    X(FATAL_ERR, 19)                                                                               \
    X(GENERAL_ERR, 21)

#define WC_OPCODES(X)                                                                              \
    X(SEND, 0)                                                                                     \
    X(RDMA_WRITE, 1)                                                                               \
    X(RDMA_READ, 2)                                                                                \
    X(LOCAL_INV, 6)                                                                                \
    X(RECV, 128)

#define WR_OPCODES(X)                                                                              \
    X(RDMA_WRITE, 0)                                                                               \
    X(SEND, 2)                                                                                     \
    X(RDMA_READ, 4)                                                                                \
    X(LOCAL_INV, 7)                                                                                \
    X(SEND_WITH_INV, 9)

#define EVENTS(X)                                                                                  \
    X(CQ_ERR, 0)                                                                                   \
    X(QP_FATAL, 1)                                                                                 \
    X(QP_REQ_ERR, 2)                                                                               \
    X(QP_ACCESS_ERR, 3)                                                                            \
    X(COMM_EST, 4)                                                                                 \
    X(SRQ_LIMIT_REACHED, 15)                                                                       \
    X(QP_LAST_WQE_REACHED, 16)

/* Every value of the ibverbs enums (rdma-core 44 and later), for the collision checks. */
static const int ibv_wc_opcodes[] = {0,   1,   2,   3,   4,   5,   6,   7,   8,   9,
                                     128, 129, 130, 131, 132, 133, 134, 135, 136, 137};
static const int ibv_wr_opcodes[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

/* The comparisons with the header ran: a build without it fails here. */
static void header_compared(void)
{
#if !HAVE_IBV
    uiw_test_fail(__FILE__, __LINE__,
                  "<infiniband/verbs.h> is not installed, so the values were not compared with "
                  "libibverbs' (scripts/deps.sh installs libibverbs-dev)");
#endif
}

static bool in(const int *v, size_t n, int x)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == x)
            return true;
    return false;
}

#define PIN_WC_STATUS(n, v) CHECK_EQ(UIW_WC_##n, v);
#define PIN_WC_OPCODE(n, v) CHECK_EQ(UIW_WC_##n, v);
#define PIN_WR_OPCODE(n, v) CHECK_EQ(UIW_WR_##n, v);
#define PIN_EVENT(n, v)     CHECK_EQ(UIW_EVENT_##n, v);
#if HAVE_IBV
#define HDR_WC_STATUS(n, v) CHECK_EQ(UIW_WC_##n, IBV_WC_##n);
#define HDR_WC_OPCODE(n, v) CHECK_EQ(UIW_WC_##n, IBV_WC_##n);
#define HDR_WR_OPCODE(n, v) CHECK_EQ(UIW_WR_##n, IBV_WR_##n);
#define HDR_EVENT(n, v)     CHECK_EQ(UIW_EVENT_##n, IBV_EVENT_##n);
#endif

TEST(ibv_wc_status_values)
{
    WC_STATUSES(PIN_WC_STATUS)
#if HAVE_IBV
    WC_STATUSES(HDR_WC_STATUS)
#endif
    /* the names follow the values */
    CHECK_STR(uiw_wc_status_str(UIW_WC_REM_ACCESS_ERR), "remote access error");
    CHECK_STR(uiw_wc_status_str((enum uiw_wc_status)3), "unknown"); /* IBV_WC_LOC_EEC_OP_ERR */
    header_compared();
}

TEST(ibv_wc_opcode_values)
{
    WC_OPCODES(PIN_WC_OPCODE)
#if HAVE_IBV
    WC_OPCODES(HDR_WC_OPCODE)
    /* the collision list below covers the header's range */
    CHECK(in(ibv_wc_opcodes, sizeof(ibv_wc_opcodes) / sizeof(int), IBV_WC_ATOMIC_WRITE));
    CHECK(in(ibv_wc_opcodes, sizeof(ibv_wc_opcodes) / sizeof(int), IBV_WC_DRIVER3));
#endif
    /* REG_MR: a send-side value no ibverbs opcode uses, without the receive bit */
    CHECK(!in(ibv_wc_opcodes, sizeof(ibv_wc_opcodes) / sizeof(int), UIW_WC_REG_MR));
    CHECK_EQ(UIW_WC_REG_MR & UIW_WC_RECV, 0);
    header_compared();
}

TEST(ibv_wr_opcode_values)
{
    WR_OPCODES(PIN_WR_OPCODE)
#if HAVE_IBV
    WR_OPCODES(HDR_WR_OPCODE)
    CHECK(in(ibv_wr_opcodes, sizeof(ibv_wr_opcodes) / sizeof(int), IBV_WR_ATOMIC_WRITE));
    CHECK(in(ibv_wr_opcodes, sizeof(ibv_wr_opcodes) / sizeof(int), IBV_WR_DRIVER1));
    CHECK_EQ(UIW_SEND_FENCE, IBV_SEND_FENCE);
    CHECK_EQ(UIW_SEND_SIGNALED, IBV_SEND_SIGNALED);
    CHECK_EQ(UIW_SEND_SOLICITED, IBV_SEND_SOLICITED);
    CHECK_EQ(UIW_SEND_INLINE, IBV_SEND_INLINE);
    CHECK_EQ(UIW_ACCESS_LOCAL_WRITE, IBV_ACCESS_LOCAL_WRITE);
    CHECK_EQ(UIW_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_WRITE);
    CHECK_EQ(UIW_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_READ);
#endif
    const int own[] = {UIW_WR_REG_MR, UIW_WR_SEND_WITH_SE, UIW_WR_SEND_WITH_SE_AND_INV};
    for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
        CHECK(!in(ibv_wr_opcodes, sizeof(ibv_wr_opcodes) / sizeof(int), own[i]));
    header_compared();
}

TEST(ibv_event_type_values)
{
    EVENTS(PIN_EVENT)
#if HAVE_IBV
    EVENTS(HDR_EVENT)
    CHECK((int)UIW_EVENT_CONN_CLOSED > (int)IBV_EVENT_WQ_FATAL);
#endif
    CHECK(UIW_EVENT_CONN_CLOSED > 19 && UIW_EVENT_TERM_RECEIVED > 19); /* IBV_EVENT_WQ_FATAL */
    CHECK_STR(uiw_event_type_str(UIW_EVENT_COMM_EST), "communication established");
    CHECK_STR(uiw_event_type_str(UIW_EVENT_TERM_RECEIVED), "Terminate received");
    header_compared();
}

/* An opcode number ibverbs has and uiw does not (Write with Immediate, Send with
 * Immediate, atomics, Bind MW, TSO) is a malformed work request, not some other operation. */
TEST(ibv_wr_opcode_unknown_rejected)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    struct uiw_mr *a = pair_mr(&p, 0, 64, UIW_ACCESS_LOCAL_WRITE, 1);
    const int unknown[] = {1, 3, 5, 6, 8, 10, 11, 14, 15, 0x21, 0x42, -1};
    for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
        CHECK_EQ(
            pair_post(&p, 0, 1, (enum uiw_wr_opcode)unknown[i], UIW_SEND_SIGNALED, a, 0, 8, 0, 0),
            -EINVAL);
    }
    CHECK_EQ(pair_tx_pending(&p, 0), 0);
    CHECK_EQ(pair_nwc(&p, 0, true), 0);
    /* the known ones still go */
    CHECK_EQ(pair_post(&p, 0, 2, UIW_WR_SEND_WITH_SE, UIW_SEND_SIGNALED, a, 0, 8, 0, 0), 0);
    struct uiw_mr *b = pair_mr(&p, 1, 64, UIW_ACCESS_LOCAL_WRITE, 0);
    pair_post_recv(&p, 1, 7, b, 0, 64);
    pair_pump(&p);
    struct uiw_wc wc = pair_wc(&p, 1, false);
    CHECK_EQ(wc.opcode, UIW_WC_RECV);
    CHECK_EQ(wc.wc_flags, UIW_WC_SOLICITED);
    CHECK_EQ(pair_wc(&p, 0, true).opcode, UIW_WC_SEND);
    pair_mr_free(a);
    pair_mr_free(b);
    pair_free(&p);
}

/* The device attributes: the ibv_device_attr fields uiw reports have their ibv names and
 * types (a port copies them field by field), the capability flags and the SRQ attribute
 * mask take ibverbs' values. */
TEST(ibv_device_attr_fields)
{
    CHECK_EQ(UIW_DEVICE_SRQ_RESIZE, 1 << 13);
    CHECK_EQ(UIW_DEVICE_MEM_MGT_EXTENSIONS, 1 << 21);
    CHECK_EQ(UIW_SRQ_MAX_WR, 1);
    CHECK_EQ(UIW_SRQ_LIMIT, 2);
    struct uiw_context_attr ca;
    uiw_context_attr_init(&ca);
    ca.progress_thread = false;
    struct uiw_context *ctx = uiw__context_alloc(&ca);
    CHECK(ctx);
    struct uiw_device_attr d;
    CHECK_EQ(uiw_query_device(ctx, &d), 0);
    CHECK_EQ(uiw__context_free(ctx), 0);
#if HAVE_IBV
    CHECK_EQ(UIW_DEVICE_SRQ_RESIZE, IBV_DEVICE_SRQ_RESIZE);
    CHECK_EQ(UIW_DEVICE_MEM_MGT_EXTENSIONS, IBV_DEVICE_MEM_MGT_EXTENSIONS);
    CHECK_EQ(UIW_SRQ_MAX_WR, IBV_SRQ_MAX_WR);
    CHECK_EQ(UIW_SRQ_LIMIT, IBV_SRQ_LIMIT);
#define COPY(f)                                                                                    \
    do {                                                                                           \
        _Static_assert(sizeof(d.f) == sizeof(ia.f), #f);                                           \
        ia.f = d.f;                                                                                \
        CHECK(ia.f == d.f);                                                                        \
    } while (0)
    struct ibv_device_attr ia;
    memset(&ia, 0, sizeof(ia));
    COPY(max_mr_size);
    COPY(max_qp);
    COPY(max_qp_wr);
    COPY(device_cap_flags);
    COPY(max_sge);
    COPY(max_sge_rd);
    COPY(max_cq);
    COPY(max_cqe);
    COPY(max_mr);
    COPY(max_pd);
    COPY(max_qp_rd_atom);
    COPY(max_res_rd_atom);
    COPY(max_qp_init_rd_atom);
    COPY(max_srq);
    COPY(max_srq_wr);
    COPY(max_srq_sge);
    struct ibv_srq_attr sa = {0};
    struct uiw_srq_attr us = {.max_wr = 1, .max_sge = 2, .srq_limit = 3};
    sa.max_wr = us.max_wr;
    sa.max_sge = us.max_sge;
    sa.srq_limit = us.srq_limit;
    CHECK_EQ(sizeof(sa), sizeof(us));
#undef COPY
#else
    CHECK(d.max_qp > 0);
#endif
    header_compared();
}
