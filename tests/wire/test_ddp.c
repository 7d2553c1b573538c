/* DDP headers (RFC 5041 4) and segmentation. */
#include <errno.h>

#include <uiw/wire.h>

#include "test.h"

TEST(ddp_tagged_layout)
{
    struct uiw_ddp_hdr h = {.tagged = true,
                            .last = true,
                            .rdmap_ctrl = uiw_rdmap_ctrl(UIW_RDMAP_WRITE),
                            .stag = 0x11223344,
                            .to = 0x0102030405060708ull};
    uint8_t buf[UIW_DDP_TAGGED_HDR_LEN];
    CHECK_EQ(uiw_ddp_hdr_encode(&h, buf, sizeof(buf)), 14);
    static const uint8_t want[14] = {0xC1, 0x40, 0x11, 0x22, 0x33, 0x44, 0x01,
                                     0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
    CHECK_MEM(buf, want, 14);
    CHECK_EQ(uiw_ddp_hdr_encode(&h, buf, 13), -ENOSPC);

    struct uiw_ddp_hdr p;
    memset(&p, 0xAA, sizeof(p));
    CHECK_EQ(uiw_ddp_hdr_parse(buf, 14, &p), 14);
    CHECK(p.tagged);
    CHECK(p.last);
    CHECK_EQ(p.dv, 1);
    CHECK_EQ(p.rdmap_ctrl, 0x40);
    CHECK_EQ(p.stag, 0x11223344);
    CHECK_EQ(p.to, 0x0102030405060708ull);
    /* a longer buffer (header + payload) parses the header only */
    uint8_t big[40] = {0};
    memcpy(big, buf, 14);
    CHECK_EQ(uiw_ddp_hdr_parse(big, sizeof(big), &p), 14);
}

TEST(ddp_untagged_layout)
{
    struct uiw_ddp_hdr h = {.tagged = false,
                            .last = false,
                            .rdmap_ctrl = uiw_rdmap_ctrl(UIW_RDMAP_SEND_INV),
                            .rsvd_ulp = 0xCAFEBABE,
                            .qn = 0,
                            .msn = 0x01020304,
                            .mo = 0x00001000};
    uint8_t buf[18];
    CHECK_EQ(uiw_ddp_hdr_encode(&h, buf, sizeof(buf)), 18);
    static const uint8_t want[18] = {0x01, 0x44, 0xCA, 0xFE, 0xBA, 0xBE, 0, 0,    0,
                                     0,    0x01, 0x02, 0x03, 0x04, 0,    0, 0x10, 0};
    CHECK_MEM(buf, want, 18);
    CHECK_EQ(uiw_ddp_hdr_encode(&h, buf, 17), -ENOSPC);
    struct uiw_ddp_hdr p;
    CHECK_EQ(uiw_ddp_hdr_parse(buf, 18, &p), 18);
    CHECK(!p.tagged);
    CHECK(!p.last);
    CHECK_EQ(p.rdmap_ctrl, 0x44);
    CHECK_EQ(p.rsvd_ulp, 0xCAFEBABE);
    CHECK_EQ(p.qn, 0);
    CHECK_EQ(p.msn, 0x01020304);
    CHECK_EQ(p.mo, 0x1000);
}

TEST(ddp_encode_forces_version_and_reserved)
{
    struct uiw_ddp_hdr h = {.tagged = false, .last = true, .dv = 3, .qn = 1, .msn = 1};
    uint8_t buf[18];
    CHECK_EQ(uiw_ddp_hdr_encode(&h, buf, sizeof(buf)), 18);
    CHECK_EQ(buf[0], 0x41);
}

TEST(ddp_parse_truncated)
{
    uint8_t buf[18] = {0x41, 0x43};
    struct uiw_ddp_hdr p;
    CHECK_EQ(uiw_ddp_hdr_parse(buf, 0, &p), UIW_E_DDP_TRUNCATED);
    for (size_t n = 1; n < 18; n++)
        CHECK_EQ(uiw_ddp_hdr_parse(buf, n, &p), UIW_E_DDP_TRUNCATED);
    CHECK_EQ(uiw_ddp_hdr_parse(buf, 18, &p), 18);
    buf[0] = 0xC1; /* tagged: 14 is enough */
    for (size_t n = 1; n < 14; n++)
        CHECK_EQ(uiw_ddp_hdr_parse(buf, n, &p), UIW_E_DDP_TRUNCATED);
    CHECK_EQ(uiw_ddp_hdr_parse(buf, 14, &p), 14);
    CHECK(uiw_error_is_fatal(UIW_E_DDP_TRUNCATED));
}

TEST(ddp_parse_bad_version)
{
    uint8_t buf[18] = {0};
    struct uiw_ddp_hdr p;
    for (unsigned dv = 0; dv < 4; dv++) {
        for (unsigned t = 0; t < 2; t++) {
            buf[0] = (uint8_t)((t ? 0x80 : 0) | 0x40 | dv);
            ssize_t r = uiw_ddp_hdr_parse(buf, sizeof(buf), &p);
            if (dv == 1)
                CHECK_EQ(r, t ? 14 : 18);
            else
                CHECK_EQ(r, UIW_E_DDP_BAD_VERSION);
        }
    }
}

TEST(ddp_parse_reserved_bits)
{
    uint8_t buf[18] = {0};
    struct uiw_ddp_hdr p;
    for (unsigned bit = 2; bit < 6; bit++) {
        buf[0] = (uint8_t)(0x01 | (1u << bit));
        CHECK_EQ(uiw_ddp_hdr_parse(buf, sizeof(buf), &p), UIW_E_DDP_RESERVED_BITS);
        buf[0] |= 0x80;
        CHECK_EQ(uiw_ddp_hdr_parse(buf, sizeof(buf), &p), UIW_E_DDP_RESERVED_BITS);
    }
    /* version is reported before reserved bits */
    buf[0] = 0x3C | 0x02;
    CHECK_EQ(uiw_ddp_hdr_parse(buf, sizeof(buf), &p), UIW_E_DDP_BAD_VERSION);
}

TEST(ddp_parse_t_and_l_bits)
{
    uint8_t buf[18] = {0};
    struct uiw_ddp_hdr p;
    static const uint8_t c0[4] = {0x01, 0x41, 0x81, 0xC1};
    for (int i = 0; i < 4; i++) {
        buf[0] = c0[i];
        CHECK_EQ(uiw_ddp_hdr_parse(buf, sizeof(buf), &p), (c0[i] & 0x80) ? 14 : 18);
        CHECK_EQ(p.tagged, (c0[i] & 0x80) != 0);
        CHECK_EQ(p.last, (c0[i] & 0x40) != 0);
    }
}

TEST(ddp_roundtrip_all_flags)
{
    for (int t = 0; t < 2; t++) {
        for (int l = 0; l < 2; l++) {
            struct uiw_ddp_hdr h = {.tagged = t,
                                    .last = l,
                                    .rdmap_ctrl = 0x42,
                                    .stag = t ? 0xFFFFFFFF : 0,
                                    .to = t ? ~0ull : 0,
                                    .rsvd_ulp = t ? 0 : 0x80000001,
                                    .qn = t ? 0 : 2,
                                    .msn = t ? 0 : 0xFFFFFFFF,
                                    .mo = t ? 0 : 0x7FFFFFFF};
            uint8_t buf[18];
            ssize_t n = uiw_ddp_hdr_encode(&h, buf, sizeof(buf));
            struct uiw_ddp_hdr p;
            CHECK_EQ(uiw_ddp_hdr_parse(buf, (size_t)n, &p), n);
            CHECK_EQ(p.tagged, h.tagged);
            CHECK_EQ(p.last, h.last);
            CHECK_EQ(p.stag, h.stag);
            CHECK_EQ(p.to, h.to);
            CHECK_EQ(p.rsvd_ulp, h.rsvd_ulp);
            CHECK_EQ(p.qn, h.qn);
            CHECK_EQ(p.msn, h.msn);
            CHECK_EQ(p.mo, h.mo);
        }
    }
}

/* Walk all segments, checking contiguity, sizes and the L bit. Returns the count. */
static uint32_t walk(uint32_t msg_len, uint16_t mulpdu, size_t hdr_len)
{
    uint32_t seg = 0, expect_off = 0;
    bool last = false;
    while (!last) {
        uint32_t off = 0xDEADBEEF;
        ssize_t n = uiw_ddp_segment(msg_len, mulpdu, hdr_len, seg, &off, &last);
        CHECK(n >= 0);
        CHECK_EQ(off, expect_off);
        CHECK((size_t)n + hdr_len <= mulpdu);
        if (!last)
            CHECK_EQ((size_t)n + hdr_len, mulpdu); /* only the last may be short */
        else
            CHECK_EQ(off + (uint32_t)n, msg_len);
        if (msg_len > 0)
            CHECK(n > 0);
        expect_off += (uint32_t)n;
        seg++;
        CHECK(seg <= msg_len + 1u);
    }
    uint32_t off;
    bool l2;
    CHECK_EQ(uiw_ddp_segment(msg_len, mulpdu, hdr_len, seg, &off, &l2), -ERANGE);
    CHECK_EQ(seg, uiw_ddp_segment_count(msg_len, mulpdu, hdr_len));
    return seg;
}

TEST(ddp_segment_zero_length)
{
    uint32_t off = 7;
    bool last = false;
    CHECK_EQ(uiw_ddp_segment(0, 1000, 18, 0, &off, &last), 0);
    CHECK(last);
    CHECK_EQ(off, 0);
    CHECK_EQ(walk(0, 1000, 18), 1);
    CHECK_EQ(walk(0, 15, 14), 1);
}

TEST(ddp_segment_exact_multiples)
{
    /* mulpdu 118, untagged header 18: 100 payload bytes per segment */
    CHECK_EQ(walk(100, 118, 18), 1);
    CHECK_EQ(walk(200, 118, 18), 2);
    CHECK_EQ(walk(1000, 118, 18), 10);
    CHECK_EQ(walk(99, 118, 18), 1);
    CHECK_EQ(walk(101, 118, 18), 2);
    CHECK_EQ(walk(1001, 118, 18), 11);
    uint32_t off;
    bool last;
    CHECK_EQ(uiw_ddp_segment(200, 118, 18, 1, &off, &last), 100);
    CHECK_EQ(off, 100);
    CHECK(last);
    CHECK_EQ(uiw_ddp_segment(201, 118, 18, 2, &off, &last), 1);
    CHECK_EQ(off, 200);
    CHECK(last);
}

TEST(ddp_segment_mulpdu_barely_larger)
{
    /* one payload byte per segment */
    CHECK_EQ(walk(5, 15, 14), 5);
    CHECK_EQ(walk(5, 19, 18), 5);
    CHECK_EQ(walk(3, 47, 46), 3);
    uint32_t off;
    bool last;
    CHECK_EQ(uiw_ddp_segment(5, 15, 14, 4, &off, &last), 1);
    CHECK_EQ(off, 4);
    CHECK(last);
    /* mulpdu not larger than the header */
    CHECK_EQ(uiw_ddp_segment(5, 14, 14, 0, &off, &last), -EINVAL);
    CHECK_EQ(uiw_ddp_segment(5, 18, 18, 0, &off, &last), -EINVAL);
    CHECK_EQ(uiw_ddp_segment(0, 0, 14, 0, &off, &last), -EINVAL);
    CHECK_EQ(uiw_ddp_segment_count(5, 14, 14), 0);
}

TEST(ddp_segment_large)
{
    /* a 4 GiB - 1 message in maximal segments: offsets do not overflow */
    uint16_t mulpdu = 65535;
    uint32_t per = mulpdu - 14;
    uint32_t len = 0xFFFFFFFFu;
    uint32_t nseg = uiw_ddp_segment_count(len, mulpdu, 14);
    CHECK_EQ(nseg, len / per + 1);
    uint32_t off;
    bool last;
    CHECK_EQ(uiw_ddp_segment(len, mulpdu, 14, nseg - 1, &off, &last), len % per);
    CHECK(last);
    CHECK_EQ(off, (uint64_t)(nseg - 1) * per);
    CHECK_EQ(uiw_ddp_segment(len, mulpdu, 14, nseg - 2, &off, &last), per);
    CHECK(!last);
    CHECK_EQ(uiw_ddp_segment(len, mulpdu, 14, 0xFFFFFFFFu, &off, &last), -ERANGE);
    /* realistic MSS-sized segmentation */
    CHECK_EQ(walk(1 << 20, 1448 - 8, 14), (1u << 20) / (1440 - 14) + 1);
}
