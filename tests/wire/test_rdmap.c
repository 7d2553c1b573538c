/* RDMAP control field, opcode validity, Read Request (RFC 5040 4). */
#include <errno.h>

#include <uiw/wire.h>

#include "test.h"

TEST(rdmap_ctrl_helpers)
{
    CHECK_EQ(uiw_rdmap_ctrl(UIW_RDMAP_WRITE), 0x40);
    CHECK_EQ(uiw_rdmap_ctrl(UIW_RDMAP_SEND), 0x43);
    CHECK_EQ(uiw_rdmap_ctrl(UIW_RDMAP_TERMINATE), 0x47);
    CHECK_EQ(uiw_rdmap_ctrl_version(0x43), 1);
    CHECK_EQ(uiw_rdmap_ctrl_opcode(0x43), 3);
}

TEST(rdmap_opcode_names)
{
    CHECK_STR(uiw_rdmap_opcode_name(0), "RDMA Write");
    CHECK_STR(uiw_rdmap_opcode_name(1), "RDMA Read Request");
    CHECK_STR(uiw_rdmap_opcode_name(2), "RDMA Read Response");
    CHECK_STR(uiw_rdmap_opcode_name(3), "Send");
    CHECK_STR(uiw_rdmap_opcode_name(4), "Send with Invalidate");
    CHECK_STR(uiw_rdmap_opcode_name(5), "Send with Solicited Event");
    CHECK_STR(uiw_rdmap_opcode_name(6), "Send with Solicited Event and Invalidate");
    CHECK_STR(uiw_rdmap_opcode_name(7), "Terminate");
    for (unsigned op = 8; op < 300; op++)
        CHECK_STR(uiw_rdmap_opcode_name(op), "Reserved");
}

/* Expected verdict for each (model, opcode): the whole matrix. */
static int expect(bool tagged, uint32_t qn, unsigned op)
{
    if (tagged)
        return op == 0 || op == 2 ? 0 : UIW_E_RDMAP_BAD_OPCODE;
    if (qn > 2)
        return UIW_E_DDP_BAD_QN;
    if (qn == 0)
        return op >= 3 && op <= 6 ? 0 : UIW_E_RDMAP_BAD_OPCODE;
    if (qn == 1)
        return op == 1 ? 0 : UIW_E_RDMAP_BAD_OPCODE;
    return op == 7 ? 0 : UIW_E_RDMAP_BAD_OPCODE;
}

TEST(rdmap_check_ctrl_matrix)
{
    static const uint32_t qns[] = {0, 1, 2, 3, 7, 0xFFFFFFFF};
    for (unsigned op = 0; op < 16; op++) {
        struct uiw_ddp_hdr h = {.tagged = true, .rdmap_ctrl = (uint8_t)(0x40 | op)};
        CHECK_EQ(uiw_rdmap_check_ctrl(&h), expect(true, 0, op));
        for (size_t i = 0; i < sizeof(qns) / sizeof(qns[0]); i++) {
            h.tagged = false;
            h.qn = qns[i];
            CHECK_EQ(uiw_rdmap_check_ctrl(&h), expect(false, qns[i], op));
        }
    }
}

TEST(rdmap_check_ctrl_version_and_reserved)
{
    struct uiw_ddp_hdr h = {.tagged = false, .qn = 0};
    for (unsigned v = 0; v < 4; v++) {
        h.rdmap_ctrl = (uint8_t)(v << 6 | UIW_RDMAP_SEND);
        CHECK_EQ(uiw_rdmap_check_ctrl(&h), v == 1 ? 0 : UIW_E_RDMAP_BAD_VERSION);
    }
    h.rdmap_ctrl = 0x40 | 0x10 | UIW_RDMAP_SEND;
    CHECK_EQ(uiw_rdmap_check_ctrl(&h), UIW_E_RDMAP_RESERVED_BITS);
    h.rdmap_ctrl = 0x40 | 0x20 | UIW_RDMAP_SEND;
    CHECK_EQ(uiw_rdmap_check_ctrl(&h), UIW_E_RDMAP_RESERVED_BITS);
    /* order: version before reserved before QN before opcode */
    h.rdmap_ctrl = 0x80 | 0x30 | 0x0F;
    h.qn = 9;
    CHECK_EQ(uiw_rdmap_check_ctrl(&h), UIW_E_RDMAP_BAD_VERSION);
    h.rdmap_ctrl = 0x40 | 0x30 | 0x0F;
    CHECK_EQ(uiw_rdmap_check_ctrl(&h), UIW_E_RDMAP_RESERVED_BITS);
    h.rdmap_ctrl = 0x40 | 0x0F;
    CHECK_EQ(uiw_rdmap_check_ctrl(&h), UIW_E_DDP_BAD_QN);
    h.qn = 0;
    CHECK_EQ(uiw_rdmap_check_ctrl(&h), UIW_E_RDMAP_BAD_OPCODE);
}

TEST(rdmap_read_req_layout)
{
    struct uiw_rdmap_read_req r = {.sink_stag = 0x01020304,
                                   .sink_to = 0x1112131415161718ull,
                                   .size = 0x21222324,
                                   .src_stag = 0x31323334,
                                   .src_to = 0x4142434445464748ull};
    uint8_t buf[28];
    uiw_rdmap_read_req_encode(&r, buf);
    static const uint8_t want[28] = {0x01, 0x02, 0x03, 0x04, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16,
                                     0x17, 0x18, 0x21, 0x22, 0x23, 0x24, 0x31, 0x32, 0x33, 0x34,
                                     0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48};
    CHECK_MEM(buf, want, 28);
    struct uiw_rdmap_read_req p;
    memset(&p, 0, sizeof(p));
    CHECK_EQ(uiw_rdmap_read_req_parse(buf, 28, &p), 28);
    CHECK_EQ(p.sink_stag, r.sink_stag);
    CHECK_EQ(p.sink_to, r.sink_to);
    CHECK_EQ(p.size, r.size);
    CHECK_EQ(p.src_stag, r.src_stag);
    CHECK_EQ(p.src_to, r.src_to);
    for (size_t n = 0; n < 28; n++)
        CHECK_EQ(uiw_rdmap_read_req_parse(buf, n, &p), UIW_E_RDMAP_TRUNCATED);
}

TEST(rdmap_send_with_invalidate_stag)
{
    /* The Invalidate STag rides in RsvdULP[1..4] of the untagged header. */
    struct uiw_ddp_hdr h = {.tagged = false,
                            .last = true,
                            .rdmap_ctrl = uiw_rdmap_ctrl(UIW_RDMAP_SEND_SE_INV),
                            .rsvd_ulp = 0x00ABCD01,
                            .qn = 0,
                            .msn = 5,
                            .mo = 0};
    uint8_t buf[18];
    CHECK_EQ(uiw_ddp_hdr_encode(&h, buf, sizeof(buf)), 18);
    CHECK_EQ(buf[1], 0x46);
    CHECK_EQ(buf[2], 0x00);
    CHECK_EQ(buf[3], 0xAB);
    CHECK_EQ(buf[4], 0xCD);
    CHECK_EQ(buf[5], 0x01);
    struct uiw_ddp_hdr p;
    CHECK_EQ(uiw_ddp_hdr_parse(buf, 18, &p), 18);
    CHECK_EQ(uiw_rdmap_check_ctrl(&p), 0);
    CHECK_EQ(p.rsvd_ulp, 0x00ABCD01);
}

TEST(rdmap_read_request_message)
{
    /* A whole Read Request ULPDU: untagged QN 1 header then the 28-byte body. */
    struct uiw_ddp_hdr h = {.tagged = false,
                            .last = true,
                            .rdmap_ctrl = uiw_rdmap_ctrl(UIW_RDMAP_READ_REQ),
                            .qn = UIW_DDP_QN_READ_REQ,
                            .msn = 1};
    struct uiw_rdmap_read_req r = {
        .sink_stag = 0x100, .sink_to = 0x2000, .size = 4096, .src_stag = 0x300, .src_to = 0x4000};
    uint8_t ulpdu[18 + 28];
    CHECK_EQ(uiw_ddp_hdr_encode(&h, ulpdu, sizeof(ulpdu)), 18);
    uiw_rdmap_read_req_encode(&r, ulpdu + 18);
    struct uiw_ddp_hdr ph;
    struct uiw_rdmap_read_req pr;
    ssize_t hl = uiw_ddp_hdr_parse(ulpdu, sizeof(ulpdu), &ph);
    CHECK_EQ(hl, 18);
    CHECK_EQ(uiw_rdmap_check_ctrl(&ph), 0);
    CHECK_EQ(uiw_rdmap_read_req_parse(ulpdu + hl, sizeof(ulpdu) - (size_t)hl, &pr), 28);
    CHECK_EQ(pr.size, 4096);
    CHECK_EQ(pr.src_to, 0x4000);
}

TEST(rdmap_error_codes_named)
{
    static const int codes[] = {
        UIW_E_DDP_TRUNCATED,       UIW_E_DDP_BAD_VERSION,  UIW_E_DDP_RESERVED_BITS,
        UIW_E_DDP_BAD_QN,          UIW_E_RDMAP_TRUNCATED,  UIW_E_RDMAP_BAD_VERSION,
        UIW_E_RDMAP_RESERVED_BITS, UIW_E_RDMAP_BAD_OPCODE, UIW_E_RDMAP_BAD_TERMINATE};
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        CHECK(codes[i] <= -1300 && codes[i] >= -1499);
        CHECK(strncmp(uiw_errname(codes[i]), "UIW_E_", 6) == 0);
        CHECK(uiw_error_is_fatal(codes[i]));
        for (size_t j = 0; j < i; j++)
            CHECK(codes[i] != codes[j]);
    }
}
