/*
 * Fuzz the RNIC engine's receive path: random stream bytes go to an engine QP in RTS
 * that has a registered MR, posted receives and an outstanding Read, split at random
 * points, through both the direct (rx_next/rx_advance) and the staged (rx_stage/staged)
 * paths, with the transmit side drained as it goes. Besides ASan/UBSan, the harness checks
 * that nothing is written outside the MR: the MR sits between two guard areas in a
 * mapping at a fixed address, and its STag key is pinned, so inputs can aim at it
 * (STag 0x0000015A, TO 0x3A0000001000 .. 0x3A0000002000).
 *
 * Input: byte 0 options (bit 0 CRC, bit 1 markers, bits 2-3 RTR type, bit 4 initiator,
 * bit 5 staged receive, bit 6 mixed, bit 7 the receives in an SRQ the QP takes them from),
 * byte 1 seeds the split sizes and MULPDU, then the stream.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "rnic/engine.h"

#define REGION_ADDR ((void *)0x3A0000000000ULL)
#define PAGE        4096
#define GUARD       0xA5

static uint8_t *region;

static void drain_tx(struct uiw_qp *qp)
{
    for (int i = 0; i < 64; i++) {
        struct iovec iov[32];
        int n = uiw__qp_tx_next(qp, iov, 32);
        if (n <= 0)
            return;
        size_t t = 0;
        for (int j = 0; j < n; j++)
            t += iov[j].iov_len;
        uiw__qp_tx_advance(qp, t);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!region) {
        /* the corpus aims at this address: anywhere else, every input would miss the MR and
         * the run would test nothing while it looked fine */
        region = mmap(REGION_ADDR, 3 * PAGE, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (region != REGION_ADDR) {
            fprintf(stderr, "fuzz-rnic_rx: cannot map the MR at its fixed address %p (%s)\n",
                    REGION_ADDR, region == MAP_FAILED ? strerror(errno) : "placed elsewhere");
            abort();
        }
    }
    if (size < 2)
        return 0;
    uint8_t opt = data[0], seed = data[1];
    data += 2;
    size -= 2;
    memset(region, GUARD, PAGE);
    memset(region + PAGE, 0, PAGE);
    memset(region + 2 * PAGE, GUARD, PAGE);

    struct uiw_context_attr ca;
    uiw_context_attr_init(&ca);
    ca.progress_thread = false;
    ca.max_mr = 16;
    struct uiw_context *ctx = uiw__context_alloc(&ca);
    struct uiw_pd *pd = uiw_alloc_pd(ctx);
    struct uiw_cq *cq = uiw_create_cq(ctx, 64, NULL, NULL, 0);
    struct uiw_srq_init_attr sa = {.attr = {.max_wr = 4, .max_sge = 2}};
    struct uiw_srq *srq = (opt & 128) ? uiw_create_srq(pd, &sa) : NULL;
    if ((opt & 128) && !srq)
        abort();
    struct uiw_qp_init_attr qa = {
        .send_cq = cq,
        .recv_cq = cq,
        .srq = srq,
        .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_inline_data = 64},
        .max_ird = 4,
        .max_ord = 4};
    struct uiw_qp *qp = uiw_create_qp(pd, &qa);
    struct uiw_mr *mr =
        uiw_reg_mr(pd, region + PAGE, PAGE,
                   UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | UIW_ACCESS_REMOTE_READ);
    struct uiw_mr *fr = uiw_alloc_mr(pd, PAGE);
    if (!ctx || !pd || !cq || !qp || !mr || !fr)
        abort();
    /* pin the keys so inputs can name the STags: 0x15A (mr), 0x25A (fr after REG_MR) */
    ctx->stags[mr->handle].key = 0x5A;
    mr->lkey = mr->rkey = (mr->handle << 8) | 0x5A;
    ctx->stags[fr->handle].key = 0x59;
    fr->lkey = fr->rkey = (fr->handle << 8) | 0x59;

    struct uiw__conn_params cp = {
        .mpa_rev = 2,
        .crc = opt & 1,
        .markers_tx = (opt & 2) != 0,
        .markers_rx = (opt & 2) != 0,
        .mulpdu = (uint16_t)(128 + seed * 16),
        .ird = 4,
        .ord = 4,
        .rtr = (enum uiw__rtr)((opt >> 2) & 3),
        .initiator = (opt & 16) != 0,
    };
    if (uiw__qp_start(qp, &cp) != 0)
        abort();
    uint64_t base = (uintptr_t)mr->addr;
    for (int i = 0; i < 4; i++) {
        struct uiw_sge sge[2] = {{base + (uint64_t)i * 1000, 300, mr->lkey},
                                 {base + (uint64_t)i * 1000 + 400, 600, mr->lkey}};
        struct uiw_recv_wr rw = {.wr_id = (uint64_t)i, .sg_list = sge, .num_sge = 1 + (i & 1)};
        struct uiw_recv_wr *bad;
        if (srq)
            uiw_post_srq_recv(srq, &rw, &bad);
        else
            uiw_post_recv(qp, &rw, &bad);
    }
    struct uiw_send_wr reg = {.wr_id = 10, .opcode = UIW_WR_REG_MR};
    reg.wr.reg.mr = fr;
    reg.wr.reg.key = (fr->handle << 8) | 0x5A;
    reg.wr.reg.addr = region + PAGE + 2048;
    reg.wr.reg.length = 1024;
    reg.wr.reg.access = UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE;
    struct uiw_sge rs = {base + 3000, 500, mr->lkey};
    struct uiw_send_wr rd = {.wr_id = 11, .sg_list = &rs, .num_sge = 1, .opcode = UIW_WR_RDMA_READ};
    rd.wr.rdma.remote_addr = 0x1000;
    rd.wr.rdma.rkey = 0x1234;
    reg.next = &rd;
    struct uiw_send_wr *bad;
    uiw_post_send(qp, &reg, &bad);
    drain_tx(qp);

    uint32_t x = 0x9E3779B9u ^ seed;
    int mode = (opt >> 5) & 3; /* 0 direct, 1 staged, 2/3 mixed */
    while (size) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        size_t chunk = 1 + x % (size < 700 ? size : 700);
        bool staged = mode == 1 || (mode >= 2 && (x & 0x100));
        int r;
        if (staged) {
            uint8_t *buf;
            size_t cap;
            r = uiw__qp_rx_stage(qp, &buf, &cap);
            if (r < 0)
                break;
            bool ring = r == UIW__RX_PEEK || r == UIW__RX_READ || r == UIW__RX_EXACT;
            if (ring && (x & 0x200)) { /* peek, let the engine take what is small */
                size_t m = chunk < cap ? chunk : cap;
                memcpy(buf, data, m);
                r = uiw__qp_rx_take(qp, m, NULL, NULL);
                if (r == -EINVAL || r > (int)m)
                    abort();
                if (r < 0 && r != -EPIPE) {
                    drain_tx(qp);
                    break;
                }
                if (r > 0) {
                    data += r;
                    size -= (size_t)r;
                    drain_tx(qp);
                    continue;
                }
            } else if (ring) {
                size_t m = chunk < cap ? chunk : cap;
                memcpy(buf, data, m);
                unsigned want = 0;
                uiw__qp_rx_staged(qp, m, &want, &cap);
                data += m;
                size -= m;
                drain_tx(qp);
                continue;
            }
        }
        struct iovec iov[4];
        int n = uiw__qp_rx_next(qp, iov, 4);
        if (n <= 0)
            break;
        size_t m = 0;
        for (int i = 0; i < n && m < chunk; i++) {
            size_t k = iov[i].iov_len < chunk - m ? iov[i].iov_len : chunk - m;
            memcpy(iov[i].iov_base, data + m, k);
            m += k;
        }
        uiw__qp_rx_advance(qp, m);
        data += m;
        size -= m;
        drain_tx(qp);
    }
    for (size_t i = 0; i < PAGE; i++)
        if (region[i] != GUARD || region[2 * PAGE + i] != GUARD)
            __builtin_trap(); /* a write outside the MR */
    if (x & 1)
        uiw__qp_conn_lost(qp, -104);
    struct uiw_wc wc[16];
    while (uiw_poll_cq(cq, 16, wc) > 0)
        ;
    struct uiw_async_event ev;
    while (uiw_get_async_event(ctx, &ev) == 0)
        ;
    if (uiw_destroy_qp(qp) || (srq && uiw_destroy_srq(srq)) || uiw_dereg_mr(mr) ||
        uiw_dereg_mr(fr) || uiw_destroy_cq(cq) || uiw_dealloc_pd(pd) || uiw__context_free(ctx))
        abort();
    return 0;
}
