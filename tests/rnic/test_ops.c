/* Every RDMAP operation and work-request flag between two engine QPs in memory. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pair.h"
#include "test.h"

#define RW (UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | UIW_ACCESS_REMOTE_READ)
#define LW UIW_ACCESS_LOCAL_WRITE

static void fill_pattern(uint8_t *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(i * 7 + seed + (i >> 8));
}

static uint64_t addr_of(struct uiw_mr *mr, size_t off)
{
    return (uint64_t)(uintptr_t)mr->addr + off;
}

/* A fast-register work request binding mr to [addr, addr + len) under key. */
TEST(write_basic)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    size_t n = 100000;
    struct uiw_mr *src = pair_mr(&p, 0, n, 0, 0);
    struct uiw_mr *dst = pair_mr(&p, 1, n + 64, RW, 0xEE);
    fill_pattern(src->addr, n, 1);
    CHECK_EQ(pair_post(&p, 0, 7, UIW_WR_RDMA_WRITE, UIW_SEND_SIGNALED, src, 0, (uint32_t)n,
                       addr_of(dst, 32), dst->rkey),
             0);
    CHECK(pair_pump(&p) > n);
    struct uiw_wc wc = pair_wc(&p, 0, true);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(wc.opcode, UIW_WC_RDMA_WRITE);
    CHECK_EQ(wc.wr_id, 7);
    CHECK_MEM((uint8_t *)dst->addr + 32, src->addr, n);
    CHECK_EQ(((uint8_t *)dst->addr)[31], 0xEE);
    CHECK_EQ(((uint8_t *)dst->addr)[32 + n], 0xEE);
    CHECK_EQ(pair_nwc(&p, 1, false), 0); /* a Write is not delivered */
    struct uiw_qp_attr a;
    CHECK_EQ(uiw_query_qp(p.s[1].qp, &a), 0);
    CHECK_EQ(a.state, UIW_QPS_RTS);
    pair_mr_free(src);
    pair_mr_free(dst);
    pair_free(&p);
}

TEST(send_four_sges)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.mulpdu = 200; /* many segments */
    pair_init(&p, &o, true);
    struct uiw_mr *src = pair_mr(&p, 0, 4096, 0, 0);
    struct uiw_mr *dst = pair_mr(&p, 1, 8192, LW, 0);
    fill_pattern(src->addr, 4096, 3);
    /* receive: 4 SGEs of 100, 700, 1, 3000 bytes at scattered places */
    struct uiw_sge rs[4] = {{addr_of(dst, 0), 100, dst->lkey},
                            {addr_of(dst, 1000), 700, dst->lkey},
                            {addr_of(dst, 2000), 1, dst->lkey},
                            {addr_of(dst, 4000), 3000, dst->lkey}};
    struct uiw_recv_wr rwr = {.wr_id = 99, .sg_list = rs, .num_sge = 4};
    struct uiw_recv_wr *rbad;
    CHECK_EQ(uiw_post_recv(p.s[1].qp, &rwr, &rbad), 0);
    /* send: 4 SGEs, 2000 bytes total */
    struct uiw_sge ss[4] = {{addr_of(src, 10), 500, src->lkey},
                            {addr_of(src, 600), 0, src->lkey},
                            {addr_of(src, 1000), 1000, src->lkey},
                            {addr_of(src, 3000), 500, src->lkey}};
    struct uiw_send_wr swr = {.wr_id = 5,
                              .sg_list = ss,
                              .num_sge = 4,
                              .opcode = UIW_WR_SEND,
                              .send_flags = UIW_SEND_SIGNALED};
    struct uiw_send_wr *sbad;
    CHECK_EQ(uiw_post_send(p.s[0].qp, &swr, &sbad), 0);
    pair_pump(&p);
    struct uiw_wc wc = pair_wc(&p, 1, false);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(wc.opcode, UIW_WC_RECV);
    CHECK_EQ(wc.byte_len, 2000);
    CHECK_EQ(wc.wr_id, 99);
    CHECK_EQ(wc.wc_flags, 0);
    uint8_t expect[2000], got[2000];
    memcpy(expect, (uint8_t *)src->addr + 10, 500);
    memcpy(expect + 500, (uint8_t *)src->addr + 1000, 1000);
    memcpy(expect + 1500, (uint8_t *)src->addr + 3000, 500);
    memcpy(got, dst->addr, 100);
    memcpy(got + 100, (uint8_t *)dst->addr + 1000, 700);
    memcpy(got + 800, (uint8_t *)dst->addr + 2000, 1);
    memcpy(got + 801, (uint8_t *)dst->addr + 4000, 1199);
    CHECK_MEM(got, expect, 2000);
    wc = pair_wc(&p, 0, true);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(wc.opcode, UIW_WC_SEND);
    pair_mr_free(src);
    pair_mr_free(dst);
    pair_free(&p);
}

TEST(read_basic)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    size_t n = 200000;
    struct uiw_mr *src = pair_mr(&p, 1, n, UIW_ACCESS_REMOTE_READ, 0);
    struct uiw_mr *dst = pair_mr(&p, 0, n, LW, 0);
    fill_pattern(src->addr, n, 9);
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_RDMA_READ, UIW_SEND_SIGNALED, dst, 0, (uint32_t)n,
                       addr_of(src, 0), src->rkey),
             0);
    pair_pump(&p);
    struct uiw_wc wc = pair_wc(&p, 0, true);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(wc.opcode, UIW_WC_RDMA_READ);
    CHECK_EQ(wc.byte_len, n);
    CHECK_MEM(dst->addr, src->addr, n);
    CHECK_EQ(pair_nwc(&p, 1, true) + pair_nwc(&p, 1, false), 0); /* no app involvement */
    pair_mr_free(src);
    pair_mr_free(dst);
    pair_free(&p);
}

TEST(read_zero_length_not_validated)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    /* RFC 5040 5.2.1: size 0 -> the source STag is not checked (0x12345678 is bogus) */
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_RDMA_READ, UIW_SEND_SIGNALED, NULL, 0, 0, 0, 0x12345678),
             0);
    pair_pump(&p);
    struct uiw_wc wc = pair_wc(&p, 0, true);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(wc.opcode, UIW_WC_RDMA_READ);
    CHECK_EQ(wc.byte_len, 0);
    struct uiw_qp_attr a;
    CHECK_EQ(uiw_query_qp(p.s[1].qp, &a), 0);
    CHECK_EQ(a.state, UIW_QPS_RTS);
    pair_free(&p);
}

TEST(selective_signalling)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    struct uiw_mr *src = pair_mr(&p, 0, 64, 0, 1);
    struct uiw_mr *dst = pair_mr(&p, 1, 64, RW, 0);
    for (int i = 0; i < 10; i++)
        CHECK_EQ(pair_post(&p, 0, (uint64_t)i, UIW_WR_RDMA_WRITE, i == 9 ? UIW_SEND_SIGNALED : 0,
                           src, 0, 64, addr_of(dst, 0), dst->rkey),
                 0);
    pair_pump(&p);
    struct uiw_wc wc = pair_wc(&p, 0, true);
    CHECK_EQ(wc.wr_id, 9);
    CHECK_EQ(pair_nwc(&p, 0, true), 0);
    pair_mr_free(src);
    pair_mr_free(dst);
    pair_free(&p);

    /* sq_sig_all: every WR completes */
    o.sig_all = 1;
    pair_init(&p, &o, true);
    src = pair_mr(&p, 0, 64, 0, 1);
    dst = pair_mr(&p, 1, 64, RW, 0);
    for (int i = 0; i < 5; i++)
        CHECK_EQ(pair_post(&p, 0, (uint64_t)i, UIW_WR_RDMA_WRITE, 0, src, 0, 64, addr_of(dst, 0),
                           dst->rkey),
                 0);
    pair_pump(&p);
    for (int i = 0; i < 5; i++)
        CHECK_EQ(pair_wc(&p, 0, true).wr_id, (uint64_t)i);
    pair_mr_free(src);
    pair_mr_free(dst);
    pair_free(&p);
}

TEST(inline_send_copies_at_post)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    uint8_t buf[100];
    memset(buf, 0x5A, sizeof(buf));
    struct uiw_mr *dst = pair_mr(&p, 1, 256, LW, 0);
    pair_post_recv(&p, 1, 1, dst, 0, 256);
    /* inline: no MR, lkey ignored */
    struct uiw_sge sge = {(uintptr_t)buf, sizeof(buf), 0};
    struct uiw_send_wr wr = {.wr_id = 3,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = UIW_WR_SEND,
                             .send_flags = UIW_SEND_INLINE | UIW_SEND_SIGNALED};
    struct uiw_send_wr *bad;
    CHECK_EQ(uiw_post_send(p.s[0].qp, &wr, &bad), 0);
    memset(buf, 0, sizeof(buf)); /* the payload was taken at post time */
    pair_pump(&p);
    struct uiw_wc wc = pair_wc(&p, 1, false);
    CHECK_EQ(wc.byte_len, 100);
    for (int i = 0; i < 100; i++)
        CHECK_EQ(((uint8_t *)dst->addr)[i], 0x5A);
    CHECK_EQ(pair_wc(&p, 0, true).status, UIW_WC_SUCCESS);
    struct uiw_context_stats st;
    CHECK_EQ(uiw_query_context_stats(p.s[0].ctx, &st), 0);
    CHECK(st.copied_payload_bytes >= 100);
    /* too long for inline */
    uint8_t big[200];
    sge.addr = (uintptr_t)big;
    sge.length = sizeof(big);
    CHECK_EQ(uiw_post_send(p.s[0].qp, &wr, &bad), -EINVAL);
    CHECK(bad == &wr);
    pair_mr_free(dst);
    pair_free(&p);
}

/* Each Send opcode and flag through every way of receiving (straight into the posted
 * buffer, through the staging ring, peeked), CRC on and off: small whole Sends take the
 * receiver's shortest path, and whatever does not fit it (a receive split over two SGEs
 * shorter than the payload) the general one, with the same results. */
static void send_opcodes_case(int mode, bool crc)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.mode = mode;
    o.crc = crc;
    pair_init(&p, &o, true);
    struct uiw_mr *src = pair_mr(&p, 0, 64, 0, 0);
    struct uiw_mr *dst = pair_mr(&p, 1, 64 * 6, LW, 0);
    fill_pattern(src->addr, 64, 3);
    for (int i = 0; i < 5; i++)
        pair_post_recv(&p, 1, (uint64_t)i, dst, (size_t)i * 64, 64);
    /* receive 5: 5 bytes, then the rest */
    struct uiw_sge two[2] = {{(uintptr_t)dst->addr + 5 * 64, 5, dst->lkey},
                             {(uintptr_t)dst->addr + 5 * 64 + 32, 32, dst->lkey}};
    struct uiw_recv_wr rw = {.wr_id = 5, .sg_list = two, .num_sge = 2}, *rbad = NULL;
    CHECK_EQ(uiw_post_recv(p.s[1].qp, &rw, &rbad), 0);
    CHECK_EQ(pair_post(&p, 0, 0, UIW_WR_SEND, 0, src, 0, 10, 0, 0), 0);
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_SEND_WITH_SE, 0, src, 0, 11, 0, 0), 0);
    CHECK_EQ(pair_post(&p, 0, 2, UIW_WR_SEND, UIW_SEND_SOLICITED, src, 0, 12, 0, 0), 0);
    CHECK_EQ(pair_post(&p, 0, 3, UIW_WR_SEND, 0, src, 0, 0, 0, 0), 0); /* zero-length */
    CHECK_EQ(pair_post(&p, 0, 4, UIW_WR_SEND, UIW_SEND_INLINE, src, 0, 13, 0, 0), 0);
    CHECK_EQ(pair_post(&p, 0, 5, UIW_WR_SEND, 0, src, 0, 20, 0, 0), 0);
    pair_pump(&p);
    static const uint32_t lens[] = {10, 11, 12, 0, 13, 20};
    static const unsigned flags[] = {0, UIW_WC_SOLICITED, UIW_WC_SOLICITED, 0, 0, 0};
    for (int i = 0; i < 6; i++) {
        struct uiw_wc wc = pair_wc(&p, 1, false);
        CHECK_EQ(wc.wr_id, (uint64_t)i);
        CHECK_EQ(wc.status, UIW_WC_SUCCESS);
        CHECK_EQ(wc.opcode, UIW_WC_RECV);
        CHECK_EQ(wc.byte_len, lens[i]);
        CHECK_EQ(wc.wc_flags, flags[i]);
        if (i != 5)
            CHECK_MEM((uint8_t *)dst->addr + i * 64, src->addr, lens[i]);
    }
    const uint8_t *d5 = (const uint8_t *)dst->addr + 5 * 64, *s0 = src->addr;
    CHECK_MEM(d5, s0, 5);
    CHECK_MEM(d5 + 32, s0 + 5, 15);
    struct uiw_context_stats st;
    CHECK_EQ(uiw_query_context_stats(p.s[1].ctx, &st), 0);
    CHECK_EQ(st.rx_fpdus, 6);
    CHECK_EQ(st.placed_payload_bytes, 66);
    CHECK_EQ(st.crc_errors, 0);
    CHECK_EQ(pair_nwc(&p, 1, false), 0);
    CHECK_EQ(uiw__qp_state(p.s[1].qp), UIW_QPS_RTS);
    pair_mr_free(src);
    pair_mr_free(dst);
    pair_free(&p);
}

TEST(send_opcodes_and_solicited)
{
    static const int modes[] = {PAIR_DIRECT, PAIR_STAGED, PAIR_MIXED, PAIR_IO, PAIR_PEEK};
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++)
        for (int crc = 0; crc < 2; crc++)
            send_opcodes_case(modes[m], crc);
}

TEST(fence_waits_for_reads)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    struct uiw_mr *rsrc = pair_mr(&p, 1, 5000, UIW_ACCESS_REMOTE_READ, 0x33);
    struct uiw_mr *buf = pair_mr(&p, 0, 5000, LW, 0);
    struct uiw_mr *rdst = pair_mr(&p, 1, 64, LW, 0);
    pair_post_recv(&p, 1, 1, rdst, 0, 64);
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_RDMA_READ, UIW_SEND_SIGNALED, buf, 0, 5000,
                       addr_of(rsrc, 0), rsrc->rkey),
             0);
    CHECK_EQ(pair_post(&p, 0, 2, UIW_WR_SEND, UIW_SEND_FENCE | UIW_SEND_SIGNALED, buf, 0, 64, 0, 0),
             0);
    /* only the Read Request (18 + 28 bytes of ULPDU) is ready: the Send waits */
    CHECK_EQ(pair_tx_pending(&p, 0), uiw_fpdu_len(46));
    pair_pump(&p);
    struct uiw_wc wc = pair_wc(&p, 0, true);
    CHECK_EQ(wc.wr_id, 1);
    wc = pair_wc(&p, 0, true);
    CHECK_EQ(wc.wr_id, 2);
    /* the Send carried the data the Read brought in */
    CHECK_EQ(pair_wc(&p, 1, false).byte_len, 64);
    CHECK_EQ(((uint8_t *)rdst->addr)[0], 0x33);
    pair_mr_free(rsrc);
    pair_mr_free(buf);
    pair_mr_free(rdst);
    pair_free(&p);
}

TEST(ord_limits_outstanding_reads)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.ord[0] = 1;
    pair_init(&p, &o, true);
    struct uiw_mr *rsrc = pair_mr(&p, 1, 100, UIW_ACCESS_REMOTE_READ, 0x44);
    struct uiw_mr *buf = pair_mr(&p, 0, 300, LW, 0);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(pair_post(&p, 0, (uint64_t)i, UIW_WR_RDMA_READ, UIW_SEND_SIGNALED, buf,
                           (size_t)i * 100, 100, addr_of(rsrc, 0), rsrc->rkey),
                 0);
    CHECK_EQ(pair_tx_pending(&p, 0), uiw_fpdu_len(46)); /* one Read Request at a time */
    pair_pump(&p);
    for (int i = 0; i < 3; i++) {
        struct uiw_wc wc = pair_wc(&p, 0, true);
        CHECK_EQ(wc.wr_id, (uint64_t)i);
        CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    }
    CHECK_EQ(((uint8_t *)buf->addr)[299], 0x44);
    pair_mr_free(rsrc);
    pair_mr_free(buf);
    pair_free(&p);
}

TEST(fast_register_and_invalidate)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    uint8_t *mem = calloc(1, 4096);
    struct uiw_mr *fr = uiw_alloc_mr(p.s[1].pd, 4096);
    CHECK(fr);
    struct uiw_mr *src = pair_mr(&p, 0, 4096, 0, 0x77);
    /* the fresh STag is invalid until registered */
    uint32_t key = uiw_inc_rkey(fr->rkey);
    struct uiw_send_wr reg = {
        .wr_id = 50, .opcode = UIW_WR_REG_MR, .send_flags = UIW_SEND_SIGNALED};
    reg.wr.reg.mr = fr;
    reg.wr.reg.key = key;
    reg.wr.reg.addr = mem;
    reg.wr.reg.length = 4096;
    reg.wr.reg.access = UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE;
    struct uiw_send_wr *bad;
    CHECK_EQ(uiw_post_send(p.s[1].qp, &reg, &bad), 0);
    pair_pump(&p);
    struct uiw_wc wc = pair_wc(&p, 1, true);
    CHECK_EQ(wc.opcode, UIW_WC_REG_MR);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(fr->rkey, key);
    /* write with the new key */
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_RDMA_WRITE, UIW_SEND_SIGNALED, src, 0, 4096, (uintptr_t)mem,
                       key),
             0);
    pair_pump(&p);
    CHECK_EQ(pair_wc(&p, 0, true).status, UIW_WC_SUCCESS);
    CHECK_EQ(mem[4095], 0x77);
    /* peer invalidates it with Send with Invalidate */
    struct uiw_mr *rb = pair_mr(&p, 1, 16, LW, 0);
    pair_post_recv(&p, 1, 8, rb, 0, 16);
    CHECK_EQ(pair_post(&p, 0, 2, UIW_WR_SEND_WITH_INV, 0, src, 0, 16, 0, key), 0);
    pair_pump(&p);
    wc = pair_wc(&p, 1, false);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(wc.wc_flags, UIW_WC_WITH_INV);
    CHECK_EQ(wc.invalidated_rkey, key);
    /* register again under the next key, then LOCAL_INV */
    uint32_t key2 = uiw_inc_rkey(key);
    reg.wr.reg.key = key2;
    CHECK_EQ(uiw_post_send(p.s[1].qp, &reg, &bad), 0);
    struct uiw_send_wr inv = {.wr_id = 51,
                              .opcode = UIW_WR_LOCAL_INV,
                              .send_flags = UIW_SEND_SIGNALED,
                              .invalidate_rkey = key2};
    CHECK_EQ(uiw_post_send(p.s[1].qp, &inv, &bad), 0);
    pair_pump(&p);
    CHECK_EQ(pair_wc(&p, 1, true).opcode, UIW_WC_REG_MR);
    wc = pair_wc(&p, 1, true);
    CHECK_EQ(wc.opcode, UIW_WC_LOCAL_INV);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    /* re-register under key3; the stale key2 must now fail: Terminate DDP/tagged/invalid */
    uint32_t key3 = uiw_inc_rkey(key2);
    reg.wr.reg.key = key3;
    CHECK_EQ(uiw_post_send(p.s[1].qp, &reg, &bad), 0);
    pair_pump(&p);
    CHECK_EQ(pair_wc(&p, 1, true).status, UIW_WC_SUCCESS);
    CHECK_EQ(pair_post(&p, 0, 3, UIW_WR_RDMA_WRITE, 0, src, 0, 16, (uintptr_t)mem, key2), 0);
    pair_pump(&p);
    struct uiw_qp_attr a;
    CHECK_EQ(uiw_query_qp(p.s[1].qp, &a), 0);
    CHECK(a.term_sent);
    CHECK_EQ(a.term_layer, UIW_TERM_LAYER_DDP);
    CHECK_EQ(a.term_etype, UIW_TERM_DDP_TAGGED);
    CHECK_EQ(a.term_code, UIW_TERM_DT_INVALID_STAG);
    pair_nwc(&p, 0, true);
    pair_nwc(&p, 1, true);
    pair_nwc(&p, 1, false);
    pair_mr_free(src);
    pair_mr_free(rb);
    CHECK_EQ(uiw_dereg_mr(fr), 0);
    free(mem);
    pair_free(&p);
}

/* A pair receiving in mode, moving at most chunk bytes at once, with n-byte regions a
 * (side 0) and b (side 1) open to everything. */
static void zero_copy_pair(struct pair *p, int mode, size_t chunk, uint16_t mulpdu, bool crc,
                           size_t n, struct uiw_mr **a, struct uiw_mr **b)
{
    struct pair_opts o;
    pair_opts_default(&o);
    o.mode = mode;
    o.max_chunk = chunk;
    o.mulpdu = mulpdu;
    o.crc = crc;
    pair_init(p, &o, true);
    *a = pair_mr(p, 0, n, RW, 0);
    *b = pair_mr(p, 1, n, RW, 0);
}

/* A Write of nw bytes from a to b, a Read of nw bytes back into a, a Send of ns bytes
 * into b, each checked; then neither side copied a payload byte. */
static void write_read_send_zero_copy(struct pair *p, struct uiw_mr *a, struct uiw_mr *b, size_t nw,
                                      size_t ns)
{
    for (int k = 0; k < 2; k++) { /* the Write, then the Read: the data lands in to */
        struct uiw_mr *from = k ? b : a, *to = k ? a : b;
        fill_pattern(from->addr, nw, 5 + (unsigned)k);
        CHECK_EQ(pair_post(p, 0, 1 + (uint64_t)k, k ? UIW_WR_RDMA_READ : UIW_WR_RDMA_WRITE,
                           UIW_SEND_SIGNALED, a, 0, (uint32_t)nw, addr_of(b, 0), b->rkey),
                 0);
        pair_pump(p);
        CHECK_EQ(pair_wc(p, 0, true).status, UIW_WC_SUCCESS);
        CHECK_MEM(to->addr, from->addr, nw);
    }
    pair_post_recv(p, 1, 1, b, 0, (uint32_t)ns);
    CHECK_EQ(pair_post(p, 0, 3, UIW_WR_SEND, UIW_SEND_SIGNALED, a, 0, (uint32_t)ns, 0, 0), 0);
    pair_pump(p);
    CHECK_EQ(pair_wc(p, 1, false).byte_len, ns);
    CHECK_MEM(b->addr, a->addr, ns);
    for (int d = 0; d < 2; d++) {
        struct uiw_context_stats st;
        CHECK_EQ(uiw_query_context_stats(p->s[d].ctx, &st), 0);
        CHECK_EQ(st.copied_payload_bytes, 0);
    }
}

TEST(large_payloads_zero_copy)
{
    struct pair p;
    struct uiw_mr *a, *b;
    size_t n = 1 << 20;
    zero_copy_pair(&p, PAIR_DIRECT, 1 << 16, 9000, true, n, &a, &b);
    write_read_send_zero_copy(&p, a, b, n, n);
    struct uiw_context_stats st;
    CHECK_EQ(uiw_query_context_stats(p.s[1].ctx, &st), 0);
    CHECK_EQ(st.placed_payload_bytes, 2 * n);
    pair_mr_free(a);
    pair_mr_free(b);
    pair_free(&p);
}

TEST(staged_small_sends)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.mode = PAIR_STAGED;
    o.max_chunk = 16384;
    o.crc = true;
    pair_init(&p, &o, true);
    struct uiw_mr *src = pair_mr(&p, 0, 64 * 60, 0, 0);
    struct uiw_mr *dst = pair_mr(&p, 1, 64 * 60, LW, 0);
    fill_pattern(src->addr, 64 * 60, 2);
    for (int i = 0; i < 60; i++)
        pair_post_recv(&p, 1, (uint64_t)i, dst, (size_t)i * 64, 64);
    for (int i = 0; i < 60; i++)
        CHECK_EQ(pair_post(&p, 0, (uint64_t)i, UIW_WR_SEND, 0, src, (size_t)i * 64, 64, 0, 0), 0);
    pair_pump(&p);
    for (int i = 0; i < 60; i++) {
        struct uiw_wc wc = pair_wc(&p, 1, false);
        CHECK_EQ(wc.wr_id, (uint64_t)i);
        CHECK_EQ(wc.byte_len, 64);
    }
    CHECK_MEM(dst->addr, src->addr, 64 * 60);
    struct uiw_context_stats st;
    CHECK_EQ(uiw_query_context_stats(p.s[1].ctx, &st), 0);
    /* small payloads come through the ring and are copied (the first ones maybe not) */
    CHECK(st.copied_payload_bytes > 0);
    CHECK(st.copied_payload_bytes <= 64 * 60);
    CHECK_EQ(st.rx_fpdus, 60);
    pair_mr_free(src);
    pair_mr_free(dst);
    pair_free(&p);
}

/* A small message leaves in one piece: its payload is copied behind the header (and
 * counted) on the sender. The last, small segment of a large message is not: Writes,
 * Sends and Read Responses stay zero-copy to the last byte on both sides. */
TEST(small_tail_of_a_large_message_is_not_copied)
{
    struct pair p;
    struct uiw_mr *a, *b;
    /* three full segments and a 64-byte one, for tagged (14) and untagged (18) headers */
    size_t nw = 3 * (1460 - 14) + 64, ns = 3 * (1460 - 18) + 64;
    zero_copy_pair(&p, PAIR_PEEK, 1 << 20, 1460, false, nw, &a, &b);
    write_read_send_zero_copy(&p, a, b, nw, ns);
    /* a whole small message is copied on the sender, once */
    pair_post_recv(&p, 1, 4, b, 0, 64);
    CHECK_EQ(pair_post(&p, 0, 4, UIW_WR_SEND, UIW_SEND_SIGNALED, a, 100, 64, 0, 0), 0);
    pair_pump(&p);
    CHECK_EQ(pair_wc(&p, 1, false).byte_len, 64);
    CHECK_MEM(b->addr, (uint8_t *)a->addr + 100, 64);
    struct uiw_context_stats st;
    CHECK_EQ(uiw_query_context_stats(p.s[0].ctx, &st), 0);
    CHECK_EQ(st.copied_payload_bytes, 64);
    pair_mr_free(a);
    pair_mr_free(b);
    pair_free(&p);
}

TEST(crc_and_markers_all_ops)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.crc = true;
    o.markers = true;
    o.mulpdu = 1000;
    o.max_chunk = 777;
    pair_init(&p, &o, true);
    size_t n = 50000;
    struct uiw_mr *a = pair_mr(&p, 0, n, RW, 0);
    struct uiw_mr *b = pair_mr(&p, 1, n, RW, 0);
    fill_pattern(a->addr, n, 8);
    pair_post_recv(&p, 1, 1, b, 0, (uint32_t)n);
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_SEND, UIW_SEND_SIGNALED, a, 0, (uint32_t)n, 0, 0), 0);
    pair_pump(&p);
    CHECK_EQ(pair_wc(&p, 1, false).byte_len, n);
    CHECK_MEM(b->addr, a->addr, n);
    fill_pattern(b->addr, n, 11);
    CHECK_EQ(pair_post(&p, 0, 2, UIW_WR_RDMA_READ, UIW_SEND_SIGNALED, a, 0, (uint32_t)n,
                       addr_of(b, 0), b->rkey),
             0);
    pair_pump(&p);
    CHECK_EQ(pair_wc(&p, 0, true).status, UIW_WC_SUCCESS);
    CHECK_EQ(pair_wc(&p, 0, true).status, UIW_WC_SUCCESS);
    CHECK_MEM(a->addr, b->addr, n);
    pair_mr_free(a);
    pair_mr_free(b);
    pair_free(&p);
}

TEST(wc_status_strings)
{
    CHECK_STR(uiw_wc_status_str(UIW_WC_SUCCESS), "success");
    CHECK_STR(uiw_wc_status_str(UIW_WC_WR_FLUSH_ERR), "Work Request Flushed Error");
    CHECK_STR(uiw_wc_status_str(UIW_WC_REM_ACCESS_ERR), "remote access error");
    CHECK_STR(uiw_wc_status_str((enum uiw_wc_status)999), "unknown");
    CHECK_STR(uiw_qp_state_str(UIW_QPS_TERMINATE), "TERMINATE");
    CHECK_STR(uiw_event_type_str(UIW_EVENT_QP_ACCESS_ERR), "QP access error");
    CHECK_STR(uiw_errname(UIW_E_RNIC_TAG_STAG_INVALID), "UIW_E_RNIC_TAG_STAG_INVALID");
}

TEST(mss_segments_zero_copy_one_read_per_fpdu)
{
    struct pair p;
    struct uiw_mr *a, *b;
    size_t n = 1 << 20;
    zero_copy_pair(&p, PAIR_IO, 1 << 20, 1460, true, n, &a, &b);
    fill_pattern(a->addr, n, 4);
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_RDMA_WRITE, UIW_SEND_SIGNALED, a, 0, (uint32_t)n,
                       addr_of(b, 0), b->rkey),
             0);
    pair_pump(&p);
    CHECK_EQ(pair_wc(&p, 0, true).status, UIW_WC_SUCCESS);
    CHECK_MEM(b->addr, a->addr, n);
    struct uiw_context_stats st;
    CHECK_EQ(uiw_query_context_stats(p.s[1].ctx, &st), 0);
    CHECK_EQ(st.copied_payload_bytes, 0);
    CHECK_EQ(st.placed_payload_bytes, n);
    /* a readv per FPDU (+ the first length field and header) */
    /* a readv per FPDU, plus at most two where the stream was cut into pieces */
    CHECK(p.rx_calls[1] <= st.rx_fpdus + 2 * p.chunks[0] + 2);
    /* small Sends then flow through the staging ring: many FPDUs per read */
    for (int i = 0; i < 40; i++)
        pair_post_recv(&p, 1, (uint64_t)i, b, (size_t)i * 64, 64);
    unsigned long before = p.rx_calls[1];
    for (int i = 0; i < 40; i++)
        CHECK_EQ(pair_post(&p, 0, (uint64_t)i, UIW_WR_SEND, 0, a, (size_t)i * 64, 64, 0, 0), 0);
    pair_pump(&p);
    CHECK_EQ(pair_nwc(&p, 1, false), 40);
    CHECK(p.rx_calls[1] - before < 20);
    CHECK_MEM(b->addr, a->addr, 64 * 40);
    pair_mr_free(a);
    pair_mr_free(b);
    pair_free(&p);
}

TEST(invalidated_stag_is_refused)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    uint8_t *mem = calloc(1, 256);
    struct uiw_mr *fr = uiw_alloc_mr(p.s[1].pd, 256);
    CHECK(fr);
    struct uiw_mr *src = pair_mr(&p, 0, 256, 0, 0x21);
    struct uiw_mr *rb = pair_mr(&p, 1, 16, LW, 0);
    uint32_t key = uiw_inc_rkey(fr->rkey);
    struct uiw_send_wr reg =
        pair_reg_wr(1, fr, key, mem, 256, UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE);
    struct uiw_send_wr *bad;
    CHECK_EQ(uiw_post_send(p.s[1].qp, &reg, &bad), 0);
    pair_post_recv(&p, 1, 2, rb, 0, 16);
    pair_pump(&p);
    /* Send with Solicited Event and Invalidate: both flags on the receive */
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_SEND_WITH_SE_AND_INV, 0, src, 0, 4, 0, key), 0);
    pair_pump(&p);
    struct uiw_wc wc = pair_wc(&p, 1, false);
    CHECK_EQ(wc.wc_flags, UIW_WC_WITH_INV | UIW_WC_SOLICITED);
    CHECK_EQ(wc.invalidated_rkey, key);
    /* the same STag, same key, now invalid */
    CHECK_EQ(pair_post(&p, 0, 2, UIW_WR_RDMA_WRITE, 0, src, 0, 16, (uintptr_t)mem, key), 0);
    pair_pump(&p);
    struct uiw_qp_attr a;
    CHECK_EQ(uiw_query_qp(p.s[1].qp, &a), 0);
    CHECK_EQ(a.term_layer, UIW_TERM_LAYER_DDP);
    CHECK_EQ(a.term_etype, UIW_TERM_DDP_TAGGED);
    CHECK_EQ(a.term_code, UIW_TERM_DT_INVALID_STAG);
    CHECK_EQ(mem[0], 0);
    pair_nwc(&p, 0, true);
    pair_nwc(&p, 1, true);
    pair_mr_free(src);
    pair_mr_free(rb);
    CHECK_EQ(uiw_dereg_mr(fr), 0);
    free(mem);
    pair_free(&p);
}

/* A fast-register STag that is invalid already (invalidated, or replaced by a binding
 * under another key) may be invalidated again by either side: success, nothing changes,
 * the connection lives on (a late reply with Invalidate after the requester gave up). */
TEST(invalidate_already_invalid_stag)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    uint8_t *mem = calloc(1, 256);
    struct uiw_mr *fr = uiw_alloc_mr(p.s[1].pd, 256);
    CHECK(fr);
    struct uiw_mr *src = pair_mr(&p, 0, 256, 0, 0x5A);
    struct uiw_mr *rb = pair_mr(&p, 1, 64, LW, 0);
    uint32_t key1 = uiw_inc_rkey(fr->rkey), key2 = uiw_inc_rkey(key1);
    struct uiw_send_wr reg =
        pair_reg_wr(1, fr, key1, mem, 256, UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE);
    struct uiw_send_wr inv = {
        .wr_id = 2, .opcode = UIW_WR_LOCAL_INV, .send_flags = UIW_SEND_SIGNALED};
    inv.invalidate_rkey = key1;
    struct uiw_send_wr *bad;
    CHECK_EQ(uiw_post_send(p.s[1].qp, &reg, &bad), 0);
    CHECK_EQ(uiw_post_send(p.s[1].qp, &inv, &bad), 0);
    inv.wr_id = 3; /* the same STag again: invalid already */
    CHECK_EQ(uiw_post_send(p.s[1].qp, &inv, &bad), 0);
    pair_pump(&p);
    for (uint64_t id = 2; id <= 3; id++) {
        struct uiw_wc wc = pair_wc(&p, 1, true);
        CHECK_EQ(wc.wr_id, id);
        CHECK_EQ(wc.opcode, UIW_WC_LOCAL_INV);
        CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    }
    /* the peer's Send with Invalidate of the invalid STag: delivered, no Terminate */
    pair_post_recv(&p, 1, 10, rb, 0, 64);
    CHECK_EQ(pair_post(&p, 0, 4, UIW_WR_SEND_WITH_INV, 0, src, 0, 8, 0, key1), 0);
    pair_pump(&p);
    struct uiw_wc wc = pair_wc(&p, 1, false);
    CHECK_EQ(wc.wr_id, 10);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(wc.byte_len, 8);
    CHECK_EQ(wc.wc_flags, UIW_WC_WITH_INV);
    CHECK_EQ(wc.invalidated_rkey, key1);
    /* bound again under key2: the stale key1 invalidated by either side leaves key2 valid */
    reg.wr.reg.key = key2;
    CHECK_EQ(uiw_post_send(p.s[1].qp, &reg, &bad), 0);
    inv.wr_id = 5;
    CHECK_EQ(uiw_post_send(p.s[1].qp, &inv, &bad), 0);
    pair_post_recv(&p, 1, 11, rb, 0, 64);
    CHECK_EQ(pair_post(&p, 0, 6, UIW_WR_SEND_WITH_INV, 0, src, 0, 8, 0, key1), 0);
    pair_pump(&p);
    wc = pair_wc(&p, 1, true);
    CHECK_EQ(wc.wr_id, 5);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    wc = pair_wc(&p, 1, false);
    CHECK_EQ(wc.wr_id, 11);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(
        pair_post(&p, 0, 7, UIW_WR_RDMA_WRITE, UIW_SEND_SIGNALED, src, 0, 32, (uintptr_t)mem, key2),
        0);
    pair_pump(&p);
    CHECK_EQ(pair_wc(&p, 0, true).status, UIW_WC_SUCCESS);
    CHECK_MEM(mem, src->addr, 32);
    struct uiw_qp_attr a;
    for (int d = 0; d < 2; d++) {
        CHECK_EQ(uiw_query_qp(p.s[d].qp, &a), 0);
        CHECK_EQ(a.state, UIW_QPS_RTS);
        CHECK(!a.term_sent && !a.term_received);
    }
    /* and the valid key2 is still invalidated for real */
    pair_post_recv(&p, 1, 12, rb, 0, 64);
    CHECK_EQ(pair_post(&p, 0, 8, UIW_WR_SEND_WITH_INV, 0, src, 0, 8, 0, key2), 0);
    CHECK_EQ(pair_post(&p, 0, 9, UIW_WR_RDMA_WRITE, 0, src, 0, 16, (uintptr_t)mem, key2), 0);
    pair_pump(&p);
    CHECK_EQ(pair_wc(&p, 1, false).status, UIW_WC_SUCCESS);
    CHECK_EQ(uiw_query_qp(p.s[1].qp, &a), 0);
    CHECK(a.term_sent);
    CHECK_EQ(a.term_layer, UIW_TERM_LAYER_DDP);
    CHECK_EQ(a.term_code, UIW_TERM_DT_INVALID_STAG);
    pair_nwc(&p, 0, true);
    pair_nwc(&p, 1, true);
    pair_nwc(&p, 1, false);
    pair_mr_free(src);
    pair_mr_free(rb);
    CHECK_EQ(uiw_dereg_mr(fr), 0);
    free(mem);
    pair_free(&p);
}

TEST(local_invalidate_errors)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    pair_init(&p, &o, true);
    struct uiw_mr *m = pair_mr(&p, 0, 64, RW, 0);
    /* a uiw_reg_mr STag cannot be invalidated: local protection error, QP to error */
    struct uiw_send_wr inv = {.wr_id = 9, .opcode = UIW_WR_LOCAL_INV, .invalidate_rkey = m->rkey};
    struct uiw_send_wr *bad;
    CHECK_EQ(uiw_post_send(p.s[0].qp, &inv, &bad), 0);
    pair_pump(&p);
    struct uiw_wc wc = pair_wc(&p, 0, true);
    CHECK_EQ(wc.wr_id, 9);
    CHECK_EQ(wc.opcode, UIW_WC_LOCAL_INV);
    CHECK_EQ(wc.status, UIW_WC_LOC_PROT_ERR);
    CHECK_EQ(uiw__qp_state(p.s[0].qp), UIW_QPS_ERROR);
    /* and a REG_MR of a non-fast-register MR fails to bind */
    struct pair q;
    pair_init(&q, &o, true);
    struct uiw_mr *m2 = pair_mr(&q, 0, 64, RW, 0);
    struct uiw_send_wr reg = {.wr_id = 4, .opcode = UIW_WR_REG_MR};
    reg.wr.reg.mr = m2;
    reg.wr.reg.key = m2->rkey;
    reg.wr.reg.addr = m2->addr;
    reg.wr.reg.length = 64;
    CHECK_EQ(uiw_post_send(q.s[0].qp, &reg, &bad), 0);
    pair_pump(&q);
    wc = pair_wc(&q, 0, true);
    CHECK_EQ(wc.status, UIW_WC_MW_BIND_ERR);
    pair_mr_free(m);
    pair_mr_free(m2);
    pair_free(&p);
    pair_free(&q);
}

/* A started pair whose receivers read as io does (peek and take, or read when narrow),
 * with Ethernet-sized FPDUs. */
static void peek_pair(struct pair *p, bool crc)
{
    struct pair_opts o;
    pair_opts_default(&o);
    o.mode = PAIR_PEEK;
    o.max_chunk = 1 << 20;
    o.mulpdu = 1460;
    o.crc = crc;
    pair_init(p, &o, true);
}

TEST(peek_plan_keeps_large_payloads_out_of_the_ring)
{
    struct pair p;
    peek_pair(&p, true);
    size_t n = 1 << 20;
    struct uiw_mr *a = pair_mr(&p, 0, n, RW, 0);
    struct uiw_mr *b = pair_mr(&p, 1, n, RW, 0);
    fill_pattern(a->addr, n, 12);
    for (int round = 0; round < 3; round++) {
        /* small Sends (through the ring), then a large Write and a large Send right behind
         * them in the same stream */
        for (int i = 0; i < 20; i++)
            pair_post_recv(&p, 1, (uint64_t)i, b, (size_t)i * 64, 64);
        pair_post_recv(&p, 1, 99, b, 1 << 19, 1 << 19);
        for (int i = 0; i < 20; i++)
            CHECK_EQ(pair_post(&p, 0, (uint64_t)i, UIW_WR_SEND, 0, a, (size_t)i * 64, 64, 0, 0), 0);
        CHECK_EQ(
            pair_post(&p, 0, 50, UIW_WR_RDMA_WRITE, 0, a, 0, 1 << 18, addr_of(b, 1 << 18), b->rkey),
            0);
        CHECK_EQ(pair_post(&p, 0, 51, UIW_WR_SEND, 0, a, 0, 1 << 19, 0, 0), 0);
        pair_pump(&p);
        CHECK_EQ(pair_nwc(&p, 1, false), 21);
        CHECK_MEM(b->addr, a->addr, 64 * 20);
        CHECK_MEM((uint8_t *)b->addr + (1 << 18), a->addr, 1 << 18);
        CHECK_MEM((uint8_t *)b->addr + (1 << 19), a->addr, 1 << 19);
    }
    struct uiw_context_stats st;
    CHECK_EQ(uiw_query_context_stats(p.s[1].ctx, &st), 0);
    /* only the small Sends were copied (the first ones may have gone direct) */
    CHECK(st.copied_payload_bytes <= 3 * 20 * 64);
    CHECK(st.copied_payload_bytes >= 2 * 20 * 64);
    pair_mr_free(a);
    pair_mr_free(b);
    pair_free(&p);
}

static bool narrow(struct pair *p, int d)
{
    return uiw__qp_rx_narrow(p->s[d].qp);
}

static int stage_advice(struct pair *p, int d)
{
    uint8_t *b;
    size_t cap;
    return uiw__qp_rx_stage(p->s[d].qp, &b, &cap);
}

/* The bytes copied into side d's targets so far. */
static uint64_t copied(struct pair *p, int d)
{
    struct uiw_context_stats st;
    CHECK_EQ(uiw_query_context_stats(p->s[d].ctx, &st), 0);
    return st.copied_payload_bytes;
}

/* Side 1 can receive large segments (a 4 KiB receive posted, a remote-writable region):
 * no one-read mode. A small Send that comes after a large last segment costs the reader
 * its length and header, then the rest: two reads (not a read of each field: four), one
 * when its header came with the large segment's readv; its payload is copied, the large
 * one's is not. */
TEST(small_send_after_a_large_segment_costs_one_or_two_reads)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.mode = PAIR_PEEK;
    o.max_chunk = 1 << 20;
    o.whole = true; /* as a socket that holds all that was sent */
    o.mulpdu = 9000;
    pair_init(&p, &o, true);
    struct uiw_mr *a = pair_mr(&p, 0, 1 << 16, RW, 0);
    struct uiw_mr *b = pair_mr(&p, 1, 1 << 16, RW, 0);
    fill_pattern(a->addr, 1 << 16, 14);
    for (int round = 0; round < 4; round++) {
        bool together = round & 1; /* the Send right behind the Write, or after it */
        pair_post_recv(&p, 1, 1, b, 1 << 15, 4096);
        CHECK(!narrow(&p, 1));
        CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_RDMA_WRITE, 0, a, 0, 4096, addr_of(b, 0), b->rkey), 0);
        if (!together)
            pair_pump(&p);
        uint64_t c0 = copied(&p, 1);
        unsigned long r0 = p.rx_calls[1];
        CHECK_EQ(pair_post(&p, 0, 2, UIW_WR_SEND, 0, a, 8192, 100, 0, 0), 0);
        pair_pump(&p);
        CHECK_EQ(pair_wc(&p, 1, false).byte_len, 100);
        CHECK_MEM(b->addr, a->addr, 4096);
        CHECK_MEM((uint8_t *)b->addr + (1 << 15), (uint8_t *)a->addr + 8192, 100);
        /* together: the Write's header (peeked at, small Sends flowed, then consumed) and
         * its payload's readv, which brings the Send's header along, then one read for
         * the rest of the Send; else two reads for the Send */
        CHECK_EQ(p.rx_calls[1] - r0, together ? 4 : 2);
        CHECK_EQ(copied(&p, 1) - c0, 100);
    }
    pair_mr_free(a);
    pair_mr_free(b);
    pair_free(&p);
}

/* Small Sends flowing make the reader peek at what comes, but not while a large Read
 * awaits its response: the response's header is read exactly and its payload straight
 * into the sink, nothing of it peeked at (or copied) in vain. */
TEST(read_response_is_not_peeked_at)
{
    struct pair p;
    peek_pair(&p, false);
    size_t n = 1 << 16;
    struct uiw_mr *a = pair_mr(&p, 0, n, RW, 0);
    struct uiw_mr *b = pair_mr(&p, 1, n, RW, 0);
    fill_pattern(a->addr, n, 15);
    for (int round = 0; round < 3; round++) {
        pair_post_recv(&p, 1, 1, b, 0, 4096);
        CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_SEND, 0, a, 0, 64, 0, 0), 0);
        pair_pump(&p);
        CHECK_EQ(pair_wc(&p, 1, false).byte_len, 64);
        CHECK_EQ(stage_advice(&p, 1), UIW__RX_PEEK); /* small segments flow */
        uint64_t c0 = copied(&p, 1);
        unsigned long k0 = p.peeked[1];
        CHECK_EQ(pair_post(&p, 1, 2, UIW_WR_RDMA_READ, UIW_SEND_SIGNALED, b, 0, (uint32_t)n,
                           addr_of(a, 0), a->rkey),
                 0);
        pair_pump(&p);
        CHECK_EQ(pair_wc(&p, 1, true).status, UIW_WC_SUCCESS);
        CHECK_MEM(b->addr, a->addr, n);
        CHECK_EQ(p.peeked[1] - k0, 0);
        CHECK_EQ(copied(&p, 1), c0);
    }
    pair_mr_free(a);
    pair_mr_free(b);
    pair_free(&p);
}

/* Side 1 fast-registers fr over mem with access; the REG_MR completes. */
static void fast_register(struct pair *p, struct uiw_mr *fr, uint8_t *mem, size_t len,
                          unsigned access)
{
    struct uiw_send_wr reg = {
        .wr_id = 77, .opcode = UIW_WR_REG_MR, .send_flags = UIW_SEND_SIGNALED};
    reg.wr.reg.mr = fr;
    reg.wr.reg.key = uiw_inc_rkey(fr->rkey);
    reg.wr.reg.addr = mem;
    reg.wr.reg.length = len;
    reg.wr.reg.access = access;
    struct uiw_send_wr *bad;
    CHECK_EQ(uiw_post_send(p->s[1].qp, &reg, &bad), 0);
    pair_pump(p);
    CHECK_EQ(pair_wc(p, 1, true).status, UIW_WC_SUCCESS);
}

/* A QP that can receive only small segments reads them into its staging ring (advice UIW__RX_READ,
 * no peek). Anything that lets a payload of 1 KiB or more arrive turns that off while it
 * lasts: a posted receive that long, a Read that long awaiting its response, a valid
 * remote-writable STag of the PD that long (reg_mr or fast registration). */
TEST(narrow_qp_reads_until_a_large_payload_can_arrive)
{
    struct pair p;
    peek_pair(&p, false);
    CHECK(narrow(&p, 1));
    CHECK_EQ(stage_advice(&p, 1), UIW__RX_READ);

    /* registrations: only a remote-writable one of 1 KiB or more, in this QP's PD */
    struct uiw_mr *lw = pair_mr(&p, 1, 8192, LW, 0);
    struct uiw_mr *rr = pair_mr(&p, 1, 8192, LW | UIW_ACCESS_REMOTE_READ, 0);
    struct uiw_mr *short_rw = pair_mr(&p, 1, 1023, RW, 0);
    CHECK(narrow(&p, 1));
    struct uiw_pd *other = uiw_alloc_pd(p.s[1].ctx);
    CHECK(other);
    struct uiw_mr *other_rw = uiw_reg_mr(other, rr->addr, 8192, RW);
    CHECK(other_rw);
    CHECK(narrow(&p, 1));
    struct uiw_mr *long_rw = pair_mr(&p, 1, 1024, RW, 0);
    CHECK(!narrow(&p, 1));
    CHECK(stage_advice(&p, 1) != 2);
    pair_mr_free(long_rw);
    CHECK(narrow(&p, 1));
    CHECK_EQ(stage_advice(&p, 1), UIW__RX_READ);

    /* a long posted receive, until a Send takes it */
    struct uiw_mr *src = pair_mr(&p, 0, 1 << 20, RW, 0);
    fill_pattern(src->addr, 1 << 20, 13);
    pair_post_recv(&p, 1, 1, lw, 0, 2048);
    CHECK(!narrow(&p, 1));
    CHECK_EQ(pair_post(&p, 0, 1, UIW_WR_SEND, 0, src, 0, 64, 0, 0), 0);
    pair_pump(&p);
    CHECK_EQ(pair_wc(&p, 1, false).byte_len, 64);
    CHECK(narrow(&p, 1));

    /* a long Read awaiting its response; a short one does not count */
    CHECK_EQ(pair_post(&p, 1, 2, UIW_WR_RDMA_READ, UIW_SEND_SIGNALED, lw, 0, 4096, addr_of(src, 0),
                       src->rkey),
             0);
    CHECK(narrow(&p, 1)); /* posted, not sent: no response can come */
    CHECK(pair_tx_pending(&p, 1) > 0);
    CHECK(!narrow(&p, 1));
    pair_pump(&p);
    CHECK_EQ(pair_wc(&p, 1, true).status, UIW_WC_SUCCESS);
    CHECK_MEM(lw->addr, src->addr, 4096);
    CHECK(narrow(&p, 1));
    CHECK_EQ(pair_post(&p, 1, 3, UIW_WR_RDMA_READ, UIW_SEND_SIGNALED, lw, 0, 512,
                       addr_of(src, 8192), src->rkey),
             0);
    CHECK(narrow(&p, 1));
    pair_pump(&p);
    CHECK_EQ(pair_wc(&p, 1, true).status, UIW_WC_SUCCESS);
    CHECK_MEM(lw->addr, (uint8_t *)src->addr + 8192, 512);

    /* fast registration: counted while valid and remote-writable */
    uint8_t *mem = calloc(1, 8192);
    CHECK(mem);
    struct uiw_mr *fr = uiw_alloc_mr(p.s[1].pd, 8192);
    CHECK(fr);
    CHECK(narrow(&p, 1));
    fast_register(&p, fr, mem, 8192, LW | UIW_ACCESS_REMOTE_WRITE);
    CHECK(!narrow(&p, 1));
    /* a Write into it while large payloads are possible: straight to memory */
    struct uiw_context_stats st0, st1;
    CHECK_EQ(uiw_query_context_stats(p.s[1].ctx, &st0), 0);
    CHECK_EQ(pair_post(&p, 0, 4, UIW_WR_RDMA_WRITE, 0, src, 0, 8192, (uintptr_t)mem, fr->rkey), 0);
    pair_pump(&p);
    CHECK_MEM(mem, src->addr, 8192);
    CHECK_EQ(uiw_query_context_stats(p.s[1].ctx, &st1), 0);
    CHECK_EQ(st1.copied_payload_bytes, st0.copied_payload_bytes);
    /* invalidated by the peer's Send with Invalidate: narrow again */
    pair_post_recv(&p, 1, 5, lw, 0, 64);
    CHECK_EQ(pair_post(&p, 0, 5, UIW_WR_SEND_WITH_INV, 0, src, 0, 64, 0, fr->rkey), 0);
    pair_pump(&p);
    CHECK_EQ(pair_wc(&p, 1, false).invalidated_rkey, fr->rkey);
    CHECK(narrow(&p, 1));
    fast_register(&p, fr, mem, 8192, LW);
    CHECK(narrow(&p, 1));

    /* small Sends while narrow come through the ring (read, not peeked) and are copied */
    CHECK_EQ(uiw_query_context_stats(p.s[1].ctx, &st0), 0);
    for (int i = 0; i < 16; i++)
        pair_post_recv(&p, 1, 10 + (uint64_t)i, lw, (size_t)i * 64, 64);
    for (int i = 0; i < 16; i++)
        CHECK_EQ(
            pair_post(&p, 0, 10 + (uint64_t)i, UIW_WR_SEND, 0, src, 100 + (size_t)i * 64, 64, 0, 0),
            0);
    pair_pump(&p);
    CHECK_EQ(pair_nwc(&p, 1, false), 16);
    CHECK_MEM(lw->addr, (uint8_t *)src->addr + 100, 16 * 64);
    CHECK_EQ(uiw_query_context_stats(p.s[1].ctx, &st1), 0);
    CHECK_EQ(st1.copied_payload_bytes - st0.copied_payload_bytes, 16 * 64);
    CHECK_EQ(stage_advice(&p, 1), UIW__RX_READ);

    /* a flushed long receive no longer counts */
    pair_post_recv(&p, 1, 30, lw, 0, 4096);
    CHECK(!narrow(&p, 1));
    CHECK_EQ(uiw__qp_close(p.s[1].qp, false), 0);
    CHECK_EQ(pair_wc(&p, 1, false).status, UIW_WC_WR_FLUSH_ERR);
    CHECK(narrow(&p, 1));

    pair_nwc(&p, 0, true);
    pair_nwc(&p, 1, true);
    CHECK_EQ(uiw_dereg_mr(fr), 0);
    CHECK_EQ(uiw_dereg_mr(other_rw), 0);
    CHECK_EQ(uiw_dealloc_pd(other), 0);
    free(mem);
    pair_mr_free(src);
    pair_mr_free(lw);
    pair_mr_free(rr);
    pair_mr_free(short_rw);
    pair_free(&p);
}
