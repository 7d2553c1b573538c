/* uiw_query_device: each limit it reports is the one the verbs enforce: a request at the
 * limit succeeds, one beyond it fails (EINVAL, or ENOMEM for a count of the context). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pair.h"
#include "rnic/engine.h"
#include "test.h"

static struct uiw_context *ctx_with(uint32_t max_qp, uint32_t max_cq, uint32_t max_srq,
                                    uint32_t max_pd, uint32_t max_mr)
{
    struct uiw_context_attr a;
    uiw_context_attr_init(&a);
    a.progress_thread = false;
    a.max_qp = max_qp;
    a.max_cq = max_cq;
    a.max_srq = max_srq;
    a.max_pd = max_pd;
    a.max_mr = max_mr;
    return uiw__context_alloc(&a);
}

TEST(device_defaults)
{
    struct uiw_context *ctx = ctx_with(0, 0, 0, 0, 0);
    CHECK(ctx);
    struct uiw_device_attr d;
    CHECK_EQ(uiw_query_device(ctx, &d), 0);
    CHECK_EQ(uiw_query_device(NULL, &d), -EINVAL);
    CHECK_EQ(uiw_query_device(ctx, NULL), -EINVAL);
    CHECK_EQ(d.max_qp, 65536);
    CHECK_EQ(d.max_cq, 65536);
    CHECK_EQ(d.max_srq, 65536);
    CHECK_EQ(d.max_pd, 65536);
    CHECK_EQ(d.max_mr, 4096);
    CHECK_EQ(d.max_qp_wr, 1 << 16);
    CHECK_EQ(d.max_sge, 4);
    CHECK_EQ(d.max_sge_rd, 1);
    CHECK_EQ(d.max_cqe, 1 << 20);
    CHECK_EQ(d.max_qp_rd_atom, 128);
    CHECK_EQ(d.max_qp_init_rd_atom, 128);
    CHECK_EQ(d.max_res_rd_atom, 65536 * 128);
    CHECK_EQ(d.max_srq_wr, 1 << 20);
    CHECK_EQ(d.max_srq_sge, 4);
    CHECK_EQ(d.max_inline_data, 256);
    CHECK_EQ(d.max_msg_sz, UINT32_MAX);
    CHECK(d.max_mr_size == UINT64_MAX);
    CHECK_EQ(d.device_cap_flags, UIW_DEVICE_SRQ_RESIZE | UIW_DEVICE_MEM_MGT_EXTENSIONS);
    CHECK(UIW_DEFAULT_IRD_ORD <= d.max_qp_rd_atom);
    CHECK_EQ(uiw__context_free(ctx), 0);
    /* a limit an int cannot report is refused */
    CHECK(ctx_with((uint32_t)INT_MAX + 1, 0, 0, 0, 0) == NULL);
    CHECK_EQ(errno, EINVAL);
    ctx = ctx_with(0, 0, 0, INT_MAX, 0);
    CHECK(ctx);
    CHECK_EQ(uiw_query_device(ctx, &d), 0);
    CHECK_EQ(d.max_pd, INT_MAX);
    CHECK_EQ(uiw__context_free(ctx), 0);
}

/* The per-QP, per-CQ and per-SRQ limits: at the limit it works, one more is refused. */
TEST(device_object_limits_enforced)
{
    struct uiw_context *ctx = ctx_with(0, 0, 0, 0, 0);
    struct uiw_device_attr d;
    CHECK_EQ(uiw_query_device(ctx, &d), 0);
    struct uiw_pd *pd = uiw_alloc_pd(ctx);
    CHECK(uiw_create_cq(ctx, d.max_cqe + 1, NULL, NULL, 0) == NULL);
    CHECK_EQ(errno, EINVAL);
    struct uiw_cq *cq = uiw_create_cq(ctx, d.max_cqe, NULL, NULL, 0);
    CHECK(cq);
    struct uiw_qp_init_attr good = {.send_cq = cq,
                                    .recv_cq = cq,
                                    .cap = {.max_send_wr = (uint32_t)d.max_qp_wr,
                                            .max_recv_wr = (uint32_t)d.max_qp_wr,
                                            .max_send_sge = (uint32_t)d.max_sge,
                                            .max_recv_sge = (uint32_t)d.max_sge,
                                            .max_inline_data = d.max_inline_data},
                                    .max_ird = (uint16_t)d.max_qp_rd_atom,
                                    .max_ord = (uint16_t)d.max_qp_init_rd_atom};
    struct uiw_qp_init_attr a = good;
    struct uiw_qp *qp = uiw_create_qp(pd, &a);
    CHECK(qp);
    struct uiw_qp_attr qa;
    CHECK_EQ(uiw_query_qp(qp, &qa), 0);
    CHECK_EQ(qa.ird, d.max_qp_rd_atom);
    CHECK_EQ(qa.ord, d.max_qp_init_rd_atom);
    CHECK_EQ(uiw_destroy_qp(qp), 0);
    for (int k = 0; k < 7; k++) {
        a = good;
        switch (k) {
        case 0:
            a.cap.max_send_wr++;
            break;
        case 1:
            a.cap.max_recv_wr++;
            break;
        case 2:
            a.cap.max_send_sge++;
            break;
        case 3:
            a.cap.max_recv_sge++;
            break;
        case 4:
            a.cap.max_inline_data++;
            break;
        case 5:
            a.max_ird++;
            break;
        default:
            a.max_ord++;
            break;
        }
        CHECK(uiw_create_qp(pd, &a) == NULL);
        CHECK_EQ(errno, EINVAL);
    }
    /* an SRQ of max_srq_wr receives with max_srq_sge SGEs each, resizable */
    struct uiw_srq_init_attr sa = {
        .attr = {.max_wr = (uint32_t)d.max_srq_wr + 1, .max_sge = (uint32_t)d.max_srq_sge}};
    CHECK(uiw_create_srq(pd, &sa) == NULL);
    sa.attr.max_wr--;
    sa.attr.max_sge++;
    CHECK(uiw_create_srq(pd, &sa) == NULL);
    sa.attr.max_sge--;
    struct uiw_srq *srq = uiw_create_srq(pd, &sa);
    CHECK(srq);
    struct uiw_srq_attr r = {.max_wr = 8};
    CHECK(d.device_cap_flags & UIW_DEVICE_SRQ_RESIZE);
    CHECK_EQ(uiw_modify_srq(srq, &r, UIW_SRQ_MAX_WR), 0);
    CHECK_EQ(uiw_destroy_srq(srq), 0);
    /* a send WR's bytes: max_msg_sz at most; an RDMA Read: max_sge_rd SGEs */
    a = good;
    a.cap.max_send_wr = 4;
    a.cap.max_recv_wr = 4;
    qp = uiw_create_qp(pd, &a);
    struct uiw__conn_params cp = {.mpa_rev = 2, .mulpdu = 1460, .ird = 1, .ord = 1};
    CHECK_EQ(uiw__qp_start(qp, &cp), 0);
    struct uiw_sge sg[2] = {{0x1000, d.max_msg_sz, 0x100}, {0x1000, 1, 0x100}};
    struct uiw_send_wr w = {.sg_list = sg, .num_sge = 2, .opcode = UIW_WR_SEND};
    struct uiw_send_wr *bad = NULL;
    CHECK_EQ(uiw_post_send(qp, &w, &bad), -EINVAL);
    sg[0].length = 1;
    w.opcode = UIW_WR_RDMA_READ;
    CHECK_EQ(d.max_sge_rd, 1);
    CHECK_EQ(uiw_post_send(qp, &w, &bad), -EINVAL);
    CHECK_EQ(uiw_destroy_qp(qp), 0);
    /* an MR may cover any range that does not wrap */
    struct uiw_mr *mr = uiw_reg_mr(pd, (void *)(uintptr_t)0x1000, (size_t)1 << 46, 0);
    CHECK(mr);
    CHECK_EQ(uiw_dereg_mr(mr), 0);
    CHECK(uiw_reg_mr(pd, (void *)(uintptr_t)0x1000, SIZE_MAX - 0xFFF + 1, 0) == NULL);
    CHECK_EQ(uiw_destroy_cq(cq), 0);
    CHECK_EQ(uiw_dealloc_pd(pd), 0);
    CHECK_EQ(uiw__context_free(ctx), 0);
}

/* The context's counts: max_qp, max_cq, max_srq, max_pd and max_mr objects at once, not
 * one more; a destroyed one frees its place. */
TEST(device_context_counts_enforced)
{
    struct uiw_context *ctx = ctx_with(3, 2, 2, 2, 5);
    CHECK(ctx);
    struct uiw_device_attr d;
    CHECK_EQ(uiw_query_device(ctx, &d), 0);
    CHECK_EQ(d.max_qp, 3);
    CHECK_EQ(d.max_cq, 2);
    CHECK_EQ(d.max_srq, 2);
    CHECK_EQ(d.max_pd, 2);
    CHECK_EQ(d.max_mr, 5);
    CHECK_EQ(d.max_res_rd_atom, 3 * d.max_qp_rd_atom);
    struct uiw_pd *pd[2];
    for (int i = 0; i < 2; i++)
        CHECK((pd[i] = uiw_alloc_pd(ctx)) != NULL);
    CHECK(uiw_alloc_pd(ctx) == NULL);
    CHECK_EQ(errno, ENOMEM);
    CHECK_EQ(uiw_dealloc_pd(pd[1]), 0);
    CHECK((pd[1] = uiw_alloc_pd(ctx)) != NULL);
    struct uiw_cq *cq[2];
    for (int i = 0; i < 2; i++)
        CHECK((cq[i] = uiw_create_cq(ctx, 16, NULL, NULL, 0)) != NULL);
    CHECK(uiw_create_cq(ctx, 16, NULL, NULL, 0) == NULL);
    CHECK_EQ(errno, ENOMEM);
    struct uiw_srq *srq[2];
    struct uiw_srq_init_attr sa = {.attr = {.max_wr = 4}};
    for (int i = 0; i < 2; i++)
        CHECK((srq[i] = uiw_create_srq(pd[0], &sa)) != NULL);
    CHECK(uiw_create_srq(pd[0], &sa) == NULL);
    CHECK_EQ(errno, ENOMEM);
    struct uiw_qp_init_attr qa = {
        .send_cq = cq[0], .recv_cq = cq[1], .cap = {.max_send_wr = 2, .max_recv_wr = 2}};
    struct uiw_qp *qp[3];
    for (int i = 0; i < 3; i++) {
        struct uiw_qp_init_attr a = qa;
        a.srq = i == 2 ? srq[1] : NULL;
        CHECK((qp[i] = uiw_create_qp(pd[i & 1], &a)) != NULL);
    }
    CHECK(uiw_create_qp(pd[0], &qa) == NULL);
    CHECK_EQ(errno, ENOMEM);
    CHECK_EQ(uiw_destroy_qp(qp[0]), 0);
    CHECK((qp[0] = uiw_create_qp(pd[0], &qa)) != NULL);
    static uint8_t mem[64];
    struct uiw_mr *mr[5];
    for (int i = 0; i < 5; i++)
        CHECK((mr[i] = i & 1 ? uiw_alloc_mr(pd[0], 64) : uiw_reg_mr(pd[0], mem, 64, 0)) != NULL);
    CHECK(uiw_reg_mr(pd[0], mem, 64, 0) == NULL);
    CHECK_EQ(errno, ENOMEM);
    for (int i = 0; i < 5; i++)
        CHECK_EQ(uiw_dereg_mr(mr[i]), 0);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(uiw_destroy_qp(qp[i]), 0);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(uiw_destroy_srq(srq[i]), 0);
        CHECK_EQ(uiw_destroy_cq(cq[i]), 0);
    }
    for (int i = 0; i < 2; i++)
        CHECK_EQ(uiw_dealloc_pd(pd[i]), 0);
    CHECK_EQ(uiw__context_free(ctx), 0);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(UIW__ASAN) ||         \
    defined(UIW__TSAN)
#define JUDGE_PAGES 0 /* a sanitizer's allocator may write what it hands out */
#else
#define JUDGE_PAGES 1
#endif

/* Pages of [p, p + n) resident now. */
static size_t resident_pages(const void *p, size_t n)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(pg - 1), hi = (uintptr_t)p + n;
    size_t np = (hi - lo + pg - 1) / pg, r = 0;
    unsigned char *v = malloc(np);
    CHECK(v != NULL);
    CHECK_EQ(mincore((void *)lo, hi - lo, v), 0);
    for (size_t i = 0; i < np; i++)
        r += v[i] & 1;
    free(v);
    return r;
}

/* STags are handed out in order, one given back first; the table (max_mr entries) costs
 * memory only as far as STags were used: a context of a million MRs writes none of it
 * ahead (a uiw-nfs run made a context of 65536 and wrote 3.5 MiB of its table). */
TEST(device_stag_table_used_as_needed)
{
    struct uiw_context *ctx = ctx_with(0, 0, 0, 0, 1u << 20);
    CHECK(ctx);
    size_t bytes = (size_t)ctx->nstags * sizeof(*ctx->stags);
    struct uiw_pd *pd = uiw_alloc_pd(ctx);
    CHECK(pd);
    static char buf[4096];
    struct uiw_mr *mr[3];
    for (int i = 0; i < 3; i++) {
        CHECK((mr[i] = uiw_reg_mr(pd, buf, sizeof(buf), 0)) != NULL);
        CHECK_EQ(mr[i]->handle, (uint32_t)i + 1);
    }
    CHECK_EQ(uiw_dereg_mr(mr[1]), 0);
    CHECK((mr[1] = uiw_reg_mr(pd, buf, sizeof(buf), 0)) != NULL);
    CHECK_EQ(mr[1]->handle, 2u); /* the one given back */
    struct uiw_mr *m4 = uiw_reg_mr(pd, buf, sizeof(buf), 0);
    CHECK(m4 != NULL);
    CHECK_EQ(m4->handle, 4u); /* then the next never used */
    size_t res = resident_pages(ctx->stags, bytes);
    fprintf(stderr, "STag table: %zu KiB, %zu pages resident\n", bytes / 1024, res);
    if (JUDGE_PAGES)
        CHECK(res <= 4);
    CHECK_EQ(uiw_dereg_mr(m4), 0);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(uiw_dereg_mr(mr[i]), 0);
    CHECK_EQ(uiw_dealloc_pd(pd), 0);
    CHECK_EQ(uiw__context_free(ctx), 0);
}
