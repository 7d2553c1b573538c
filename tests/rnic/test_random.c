/* Random mixes of Writes, Reads and Sends with random sizes, SGE lists, segment sizes,
 * receive split points and framing options: every byte must land where it belongs, and
 * every work request completes once, in order, with its wr_id, opcode, length and flags. */
#include <stdlib.h>
#include <string.h>

#include "pair.h"
#include "test.h"

#define RW   (UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | UIW_ACCESS_REMOTE_READ)
#define AREA (1 << 18)

struct area {
    struct uiw_mr *mr;
    uint8_t *shadow; /* what the memory must hold */
};

static void area_init(struct pair *p, int d, struct area *a)
{
    a->mr = pair_mr(p, d, AREA, RW, 0);
    a->shadow = calloc(1, AREA);
    CHECK(a->shadow);
    for (size_t i = 0; i < AREA; i++)
        ((uint8_t *)a->mr->addr)[i] = a->shadow[i] = (uint8_t)pair_rand(p);
}

/* split [off, off+len) of area into up to 4 SGEs */
static int make_sges(struct pair *p, struct area *a, uint32_t off, uint32_t len,
                     struct uiw_sge *sge)
{
    int n = 1 + (int)(pair_rand(p) % 4);
    uint32_t at = off, left = len;
    for (int i = 0; i < n; i++) {
        uint32_t k = i == n - 1 ? left : (uint32_t)(pair_rand(p) % (left + 1));
        sge[i] = (struct uiw_sge){(uintptr_t)a->mr->addr + at, k, a->mr->lkey};
        at += k;
        left -= k;
    }
    return n;
}

/* A completion the batch must produce, in order per queue. */
struct want {
    uint64_t wr_id;
    enum uiw_wc_opcode opcode;
    uint32_t byte_len; /* checked for RDMA_READ and RECV */
    unsigned wc_flags; /* checked for RECV */
};

static void expect(struct pair *p, int d, bool send, const struct want *w)
{
    struct uiw_wc wc = pair_wc(p, d, send);
    if (wc.status != UIW_WC_SUCCESS || wc.wr_id != w->wr_id || wc.opcode != w->opcode)
        uiw_test_fail(__FILE__, __LINE__,
                      "side %d %s: wr_id %llu opcode %d status %s, want wr_id %llu opcode %d", d,
                      send ? "send" : "recv", (unsigned long long)wc.wr_id, (int)wc.opcode,
                      uiw_wc_status_str(wc.status), (unsigned long long)w->wr_id, (int)w->opcode);
    if (w->opcode == UIW_WC_RDMA_READ || w->opcode == UIW_WC_RECV)
        CHECK_EQ(wc.byte_len, w->byte_len);
    if (w->opcode == UIW_WC_RECV)
        CHECK_EQ(wc.wc_flags, w->wc_flags);
    CHECK_EQ(wc.qp_num, uiw_qp_num(p->s[d].qp));
}

static void run_srq(uint64_t seed, bool crc, bool markers, uint16_t mulpdu, int mode, bool srq)
{
    struct pair p;
    struct pair_opts o;
    pair_opts_default(&o);
    o.seed = seed;
    o.crc = crc;
    o.markers = markers;
    o.mulpdu = mulpdu;
    o.mode = mode;
    o.max_chunk = 1 + seed % 5000;
    o.sq = 128;
    o.rq = 128;
    o.cqe = 512;
    o.srq1_wr = srq ? 128 : 0; /* side 1 takes its receives from an SRQ */
    pair_init(&p, &o, true);
    pair_first_fpdu(&p); /* either side may send first then */
    struct area a[2];
    area_init(&p, 0, &a[0]);
    area_init(&p, 1, &a[1]);
    for (int batch = 0; batch < 6; batch++) {
        int nops = 1 + (int)(pair_rand(&p) % 12);
        struct want want_send[2][12], want_recv[2][12];
        int expect_recv[2] = {0, 0}, expect_send[2] = {0, 0};
        /* disjoint regions per op so the shadow stays exact */
        uint32_t cursor[2] = {0, 0};
        for (int i = 0; i < nops; i++) {
            int d = (int)(pair_rand(&p) & 1);
            struct area *l = &a[d], *r = &a[1 - d];
            uint32_t len = (uint32_t)(pair_rand(&p) % 9000);
            if (pair_rand(&p) % 8 == 0)
                len = 0;
            if (cursor[0] + len > AREA / 2 || cursor[1] + len > AREA / 2)
                break;
            uint32_t lo = cursor[d], ro = AREA / 2 + cursor[1 - d];
            cursor[d] += len;
            cursor[1 - d] += len;
            struct uiw_sge sge[4];
            struct uiw_send_wr wr = {
                .wr_id = (uint64_t)i, .sg_list = sge, .send_flags = UIW_SEND_SIGNALED};
            int op = (int)(pair_rand(&p) % 3);
            struct want *ws = &want_send[d][expect_send[d]];
            *ws = (struct want){.wr_id = wr.wr_id, .opcode = UIW_WC_RDMA_WRITE};
            if (op == 0) { /* Write l[lo..] -> r[ro..] */
                wr.opcode = UIW_WR_RDMA_WRITE;
                wr.num_sge = make_sges(&p, l, lo, len, sge);
                wr.wr.rdma.remote_addr = (uintptr_t)r->mr->addr + ro;
                wr.wr.rdma.rkey = r->mr->rkey;
                memcpy(r->shadow + ro, l->shadow + lo, len);
            } else if (op == 1) { /* Read r[ro..] -> l[lo..] */
                wr.opcode = UIW_WR_RDMA_READ;
                wr.num_sge = 1;
                sge[0] = (struct uiw_sge){(uintptr_t)l->mr->addr + lo, len, l->mr->lkey};
                wr.wr.rdma.remote_addr = (uintptr_t)r->mr->addr + ro;
                wr.wr.rdma.rkey = r->mr->rkey;
                if (pair_rand(&p) & 1)
                    wr.send_flags |= UIW_SEND_FENCE;
                memcpy(l->shadow + lo, r->shadow + ro, len);
                ws->opcode = UIW_WC_RDMA_READ;
                ws->byte_len = len;
            } else { /* Send l[lo..] -> receive at r[ro..] */
                wr.opcode = pair_rand(&p) & 1 ? UIW_WR_SEND : UIW_WR_SEND_WITH_SE;
                wr.num_sge = make_sges(&p, l, lo, len, sge);
                struct uiw_sge rs[4];
                struct uiw_recv_wr rw = {.wr_id = (uint64_t)i, .sg_list = rs};
                rw.num_sge = make_sges(&p, r, ro, len, rs);
                struct uiw_recv_wr *rbad;
                if (p.s[1 - d].srq)
                    CHECK_EQ(uiw_post_srq_recv(p.s[1 - d].srq, &rw, &rbad), 0);
                else
                    CHECK_EQ(uiw_post_recv(p.s[1 - d].qp, &rw, &rbad), 0);
                memcpy(r->shadow + ro, l->shadow + lo, len);
                ws->opcode = UIW_WC_SEND;
                want_recv[1 - d][expect_recv[1 - d]++] = (struct want){
                    .wr_id = rw.wr_id,
                    .opcode = UIW_WC_RECV,
                    .byte_len = len,
                    .wc_flags = wr.opcode == UIW_WR_SEND_WITH_SE ? UIW_WC_SOLICITED : 0};
            }
            struct uiw_send_wr *bad;
            CHECK_EQ(uiw_post_send(p.s[d].qp, &wr, &bad), 0);
            expect_send[d]++;
        }
        pair_pump(&p);
        for (int d = 0; d < 2; d++) {
            for (int k = 0; k < expect_send[d]; k++)
                expect(&p, d, true, &want_send[d][k]);
            for (int k = 0; k < expect_recv[d]; k++)
                expect(&p, d, false, &want_recv[d][k]);
            CHECK_EQ(pair_nwc(&p, d, true) + pair_nwc(&p, d, false), 0);
            CHECK_MEM(a[d].mr->addr, a[d].shadow, AREA);
        }
    }
    for (int d = 0; d < 2; d++) {
        CHECK_EQ(uiw__qp_state(p.s[d].qp), UIW_QPS_RTS);
        free(a[d].shadow);
        pair_mr_free(a[d].mr);
    }
    pair_free(&p);
}

static void run(uint64_t seed, bool crc, bool markers, uint16_t mulpdu, int mode)
{
    run_srq(seed, crc, markers, mulpdu, mode, false);
}

TEST(random_traffic_plain)
{
    for (uint64_t s = 1; s <= 6; s++)
        run(s * 7919, false, false, (uint16_t)(100 + s * 300), (int)(s % 4));
}

TEST(random_traffic_crc)
{
    for (uint64_t s = 1; s <= 6; s++)
        run(s * 104729, true, false, (uint16_t)(64 + s * 1000), (int)(s % 4));
}

TEST(random_traffic_markers)
{
    for (uint64_t s = 1; s <= 6; s++)
        run(s * 15485863, s & 1, true, (uint16_t)(200 + s * 700), (int)(s % 4));
}

TEST(random_traffic_srq)
{
    for (uint64_t s = 1; s <= 6; s++)
        run_srq(s * 32452843, s & 1, s == 3, (uint16_t)(100 + s * 500), (int)(s % 5), true);
}
