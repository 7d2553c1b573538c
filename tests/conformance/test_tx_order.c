/*
 * Conformance of what the stack transmits: one message at a time. The segments of a
 * multi-segment RDMA Write, Send or Read Response go out back to back, never with a
 * segment of another message between them (RFC 5041 5.3: DDP Messages are transmitted in
 * the order they were submitted; Linux siw drops a stream in which a Read Response
 * segment intersects a Write it is in the middle of, and the reverse).
 */
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "test.h"

#define WRITE_LEN (1u << 20)    /* about 16 segments on loopback */
#define NREADS    4             /* the negotiated IRD (conf.c) */
#define READ_LEN  (160u * 1024) /* 3 segments each */

/* Read every FPDU until the Write and the NREADS responses have arrived whole; fail at the
 * first segment of a message that arrives while another message is unfinished. */
static void expect_whole_messages(struct conf *c, uint32_t write_stag, uint32_t sink_stag)
{
    uint8_t *u = malloc(UIW_FPDU_MAX_ULPDU);
    CHECK(u != NULL);
    uint64_t wrote = 0, read = 0;
    int open = 0; /* 0: at a message boundary; 1: a Write under way; 2: a Read Response */
    uint64_t next_to = 0;
    unsigned fpdus = 0, switches = 0;
    while (wrote < WRITE_LEN || read < (uint64_t)NREADS * READ_LEN) {
        uint16_t len = 0;
        CHECK_EQ(rawpeer_recv_fpdu(&c->peer, u, UIW_FPDU_MAX_ULPDU, &len, CONF_WAIT_MS), 1);
        struct uiw_ddp_hdr h;
        CHECK_EQ(uiw_ddp_hdr_parse(u, len, &h), UIW_DDP_TAGGED_HDR_LEN);
        uint32_t n = len - UIW_DDP_TAGGED_HDR_LEN;
        int kind = h.rdmap_ctrl == uiw_rdmap_ctrl(UIW_RDMAP_WRITE) ? 1 : 2;
        CHECK(kind == 1 || h.rdmap_ctrl == uiw_rdmap_ctrl(UIW_RDMAP_READ_RESP));
        CHECK_EQ(h.stag, kind == 1 ? write_stag : sink_stag);
        if (open && (kind != open || h.to != next_to))
            uiw_test_fail(__FILE__, __LINE__,
                          "FPDU %u: a %s segment inside a %s under way (%u switches before)", fpdus,
                          kind == 1 ? "Write" : "Read Response",
                          open == 1 ? "Write" : "Read Response", switches);
        if (fpdus && !open)
            switches++;
        open = h.last ? 0 : kind;
        next_to = h.to + n;
        if (kind == 1)
            wrote += n;
        else
            read += n;
        fpdus++;
    }
    CHECK_EQ(wrote, WRITE_LEN);
    CHECK_EQ(read, (uint64_t)NREADS * READ_LEN);
    CHECK_EQ(open, 0);
    CHECK(fpdus > NREADS + 2); /* both were multi-segment */
    free(u);
}

/* The stack, held until the raw initiator's first FPDU (RFC 5044 7.1.2), has a large RDMA
 * Write queued when NREADS Read Requests arrive at once, each for a multi-segment
 * response: both are there to be sent from the first FPDU on. */
TEST(tx_read_responses_never_inside_a_write)
{
    struct conf *c = calloc(1, sizeof(*c));
    CHECK(c != NULL);
    struct conf_opts o = {.crc = true};
    conf_open(c, &o);
    uint8_t *wbuf = malloc(WRITE_LEN), *src = malloc((size_t)NREADS * READ_LEN);
    CHECK(wbuf != NULL && src != NULL);
    for (size_t i = 0; i < WRITE_LEN; i++)
        wbuf[i] = (uint8_t)(i * 13 + 1);
    for (size_t i = 0; i < (size_t)NREADS * READ_LEN; i++)
        src[i] = (uint8_t)(i * 7 + 3);
    struct uiw_mr *wmr = uiw_reg_mr(c->pd, wbuf, WRITE_LEN, UIW_ACCESS_LOCAL_WRITE);
    struct uiw_mr *smr = uiw_reg_mr(c->pd, src, (size_t)NREADS * READ_LEN,
                                    UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_READ);
    CHECK(wmr != NULL && smr != NULL);

    const uint32_t write_stag = 0x00777700 | 0x01, sink_stag = 0x00888800 | 0x02;
    struct uiw_sge sge = {.addr = (uintptr_t)wbuf, .length = WRITE_LEN, .lkey = wmr->lkey};
    struct uiw_send_wr wr = {.wr_id = 7,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = UIW_WR_RDMA_WRITE,
                             .send_flags = UIW_SEND_SIGNALED};
    wr.wr.rdma.remote_addr = 0x100000;
    wr.wr.rdma.rkey = write_stag;
    struct uiw_send_wr *bad = NULL;
    CHECK_EQ(uiw_post_send(c->qp, &wr, &bad), 0);

    /* the Read Requests in one write: the stack takes them in one read */
    uint8_t reqs[NREADS][64];
    size_t rl = 0;
    uint8_t all[NREADS * 64];
    for (uint32_t i = 0; i < NREADS; i++) {
        uint8_t h[UIW_DDP_UNTAGGED_HDR_LEN + UIW_RDMAP_READ_REQ_LEN];
        rawpeer_untagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_READ_REQ), true, 0, UIW_DDP_QN_READ_REQ,
                             c->peer.msn[UIW_DDP_QN_READ_REQ]++, 0);
        struct uiw_rdmap_read_req rr = {.sink_stag = sink_stag,
                                        .sink_to = (uint64_t)i * READ_LEN,
                                        .size = READ_LEN,
                                        .src_stag = smr->rkey,
                                        .src_to = (uintptr_t)src + (uint64_t)i * READ_LEN};
        uiw_rdmap_read_req_encode(&rr, h + UIW_DDP_UNTAGGED_HDR_LEN);
        struct uiw_wire_iov v = {h, sizeof(h)};
        ssize_t k = rawpeer_frame(&c->peer, &v, 1, reqs[i], sizeof(reqs[i]));
        CHECK(k > 0);
        memcpy(all + rl, reqs[i], (size_t)k);
        rl += (size_t)k;
    }
    CHECK_EQ(rawpeer_write(&c->peer, all, rl), 0);

    expect_whole_messages(c, write_stag, sink_stag);
    struct uiw_wc wc;
    conf_next_wc(c, &wc);
    CHECK_EQ(wc.wr_id, 7);
    CHECK_EQ(wc.status, UIW_WC_SUCCESS);
    CHECK_EQ(uiw_dereg_mr(wmr), 0);
    CHECK_EQ(uiw_dereg_mr(smr), 0);
    free(wbuf);
    free(src);
    conf_check_memory(c, true);
    conf_close(c);
    free(c);
}
