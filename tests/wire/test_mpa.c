/* MPA Request/Reply frames (RFC 5044 7.1, RFC 6581): build, parse, each malformed kind. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <uiw/wire.h>

#include "test.h"

static const uint8_t pd_bytes[600] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};

static ssize_t enc(const struct uiw_mpa_frame *f, uint8_t *buf)
{
    return uiw_mpa_frame_encode(f, buf, 1024);
}

TEST(mpa_rev1_request_layout)
{
    struct uiw_mpa_frame f = {.kind = UIW_MPA_REQUEST,
                              .flags = UIW_MPA_FLAG_CRC,
                              .rev = 1,
                              .pd = (const uint8_t *)"hello",
                              .pd_len = 5};
    uint8_t buf[1024];
    CHECK_EQ(enc(&f, buf), 25);
    CHECK_MEM(buf, "MPA ID Req Frame", 16);
    CHECK_EQ(buf[16], 0x40);
    CHECK_EQ(buf[17], 1);
    CHECK_EQ(buf[18], 0);
    CHECK_EQ(buf[19], 5);
    CHECK_MEM(buf + 20, "hello", 5);
    struct uiw_mpa_frame g;
    CHECK_EQ(uiw_mpa_frame_parse(UIW_MPA_REQUEST, buf, 25, 0, &g), 25);
    CHECK_EQ(g.kind, UIW_MPA_REQUEST);
    CHECK_EQ(g.flags, 0x40);
    CHECK_EQ(g.rev, 1);
    CHECK_EQ(g.pd_len, 5);
    CHECK(g.pd == buf + 20);
    CHECK(!g.peer2peer && !g.rtr_send && !g.rtr_write && !g.rtr_read);
    /* trailing bytes (the first FPDU) are not part of the frame */
    CHECK_EQ(uiw_mpa_frame_parse(UIW_MPA_REQUEST, buf, 40, 0, &g), 25);
    /* a Request is not a Reply */
    CHECK_EQ(uiw_mpa_frame_parse(UIW_MPA_REPLY, buf, 25, 0, &g), UIW_E_MPA_BAD_KEY);
}

TEST(mpa_rev2_enhanced_roundtrip)
{
    /* siw-like peer-to-peer Request offering Write and Read RTR, IRD 16, ORD 8 */
    struct uiw_mpa_frame f = {.kind = UIW_MPA_REQUEST,
                              .flags = UIW_MPA_FLAG_ENHANCED | UIW_MPA_FLAG_CRC,
                              .rev = 2,
                              .peer2peer = true,
                              .rtr_write = true,
                              .rtr_read = true,
                              .ird = 16,
                              .ord = 8,
                              .pd = pd_bytes,
                              .pd_len = 10};
    uint8_t buf[1024];
    CHECK_EQ(enc(&f, buf), 20 + 4 + 10);
    CHECK_EQ(buf[16], 0x50);
    CHECK_EQ(buf[17], 2);
    CHECK_EQ(buf[19], 14); /* PD_Length counts the IRD/ORD words */
    const uint8_t words[4] = {0x80, 0x10, 0xC0, 0x08};
    CHECK_MEM(buf + 20, words, 4);
    CHECK_MEM(buf + 24, pd_bytes, 10);
    struct uiw_mpa_frame g;
    CHECK_EQ(uiw_mpa_frame_parse(UIW_MPA_REQUEST, buf, 34, 0, &g), 34);
    CHECK(g.peer2peer && g.rtr_write && g.rtr_read && !g.rtr_send);
    CHECK_EQ(g.ird, 16);
    CHECK_EQ(g.ord, 8);
    CHECK_EQ(g.pd_len, 10);
    CHECK(g.pd == buf + 24);

    /* the Reply picks Write RTR */
    struct uiw_mpa_frame r = {.kind = UIW_MPA_REPLY,
                              .flags = UIW_MPA_FLAG_ENHANCED,
                              .rev = 2,
                              .peer2peer = true,
                              .rtr_write = true,
                              .ird = 0x3FFF,
                              .ord = 0};
    CHECK_EQ(enc(&r, buf), 24);
    CHECK_MEM(buf, "MPA ID Rep Frame", 16);
    const uint8_t rw[4] = {0xBF, 0xFF, 0x80, 0x00};
    CHECK_MEM(buf + 20, rw, 4);
    CHECK_EQ(uiw_mpa_frame_parse(UIW_MPA_REPLY, buf, 24, 0, &g), 24);
    CHECK(g.peer2peer && g.rtr_write && !g.rtr_read);
    CHECK_EQ(g.ird, 0x3FFF);
    CHECK_EQ(g.pd_len, 0);
    CHECK(g.pd == NULL);

    /* Send RTR lives in the IRD word */
    r.rtr_write = false;
    r.rtr_send = true;
    CHECK_EQ(enc(&r, buf), 24);
    CHECK_EQ(buf[20], 0xC0 | 0x3F);
    CHECK_EQ(uiw_mpa_frame_parse(UIW_MPA_REPLY, buf, 24, 0, &g), 24);
    CHECK(g.rtr_send && !g.rtr_write);
}

TEST(mpa_rev2_without_enhanced_has_no_words)
{
    struct uiw_mpa_frame f = {
        .kind = UIW_MPA_REPLY, .flags = UIW_MPA_FLAG_REJECT, .rev = 2, .pd = pd_bytes, .pd_len = 3};
    uint8_t buf[64];
    CHECK_EQ(enc(&f, buf), 23);
    struct uiw_mpa_frame g;
    CHECK_EQ(uiw_mpa_frame_parse(UIW_MPA_REPLY, buf, 23, 0, &g), 23);
    CHECK_EQ(g.flags, UIW_MPA_FLAG_REJECT);
    CHECK_EQ(g.pd_len, 3);
    CHECK(g.pd == buf + 20);
}

TEST(mpa_private_data_caps)
{
    static uint8_t buf[1024];
    struct uiw_mpa_frame f = {.kind = UIW_MPA_REQUEST, .rev = 1, .pd = pd_bytes, .pd_len = 256};
    struct uiw_mpa_frame g;
    CHECK_EQ(enc(&f, buf), 276);
    CHECK_EQ(uiw_mpa_frame_parse(UIW_MPA_REQUEST, buf, 276, 0, &g), 276); /* default cap 256 */
    f.pd_len = 257;
    CHECK_EQ(enc(&f, buf), 277);
    CHECK_EQ(uiw_mpa_frame_parse(UIW_MPA_REQUEST, buf, 277, 0, &g), UIW_E_MPA_PD_TOO_LONG);
    CHECK_EQ(uiw_mpa_frame_parse(UIW_MPA_REQUEST, buf, 277, 512, &g), 277);
    CHECK_EQ(uiw_mpa_frame_parse(UIW_MPA_REQUEST, buf, 277, 100, &g), UIW_E_MPA_PD_TOO_LONG);
    /* the cap is checked from the header alone, before the private data has arrived */
    CHECK_EQ(uiw_mpa_frame_parse(UIW_MPA_REQUEST, buf, 20, 0, &g), UIW_E_MPA_PD_TOO_LONG);
    f.pd_len = 512;
    CHECK_EQ(enc(&f, buf), 532);
    CHECK_EQ(uiw_mpa_frame_parse(UIW_MPA_REQUEST, buf, 532, 512, &g), 532);
    CHECK_EQ(uiw_mpa_frame_parse(UIW_MPA_REQUEST, buf, 532, 4096, &g), 532); /* cap clamps */
    f.pd_len = 513;
    CHECK_EQ(enc(&f, buf), UIW_E_MPA_PD_TOO_LONG);
    /* IRD/ORD words count against the 512 */
    f.rev = 2;
    f.flags = UIW_MPA_FLAG_ENHANCED;
    f.pd_len = 509;
    CHECK_EQ(enc(&f, buf), UIW_E_MPA_PD_TOO_LONG);
    f.pd_len = 508;
    CHECK_EQ(enc(&f, buf), 532);
    /* a PD_Length over 512 on the wire */
    buf[18] = 0x02;
    buf[19] = 0x01;
    CHECK_EQ(uiw_mpa_frame_parse(UIW_MPA_REQUEST, buf, 532, 512, &g), UIW_E_MPA_PD_TOO_LONG);
    CHECK_EQ(uiw_mpa_frame_encode(&f, buf, 531), -ENOSPC);
}

TEST(mpa_truncated_is_not_fatal)
{
    struct uiw_mpa_frame f = {.kind = UIW_MPA_REPLY,
                              .flags = UIW_MPA_FLAG_ENHANCED,
                              .rev = 2,
                              .ird = 1,
                              .ord = 1,
                              .pd = pd_bytes,
                              .pd_len = 30};
    uint8_t buf[128];
    ssize_t n = enc(&f, buf);
    CHECK_EQ(n, 54);
    struct uiw_mpa_frame g;
    for (size_t len = 0; len < (size_t)n; len++) {
        CHECK_EQ(uiw_mpa_frame_parse(UIW_MPA_REPLY, buf, len, 0, &g), UIW_E_MPA_TRUNCATED);
    }
    CHECK_EQ(uiw_mpa_frame_parse(UIW_MPA_REPLY, buf, (size_t)n, 0, &g), n);
    CHECK(!uiw_error_is_fatal(UIW_E_MPA_TRUNCATED));
    CHECK(uiw_error_is_fatal(UIW_E_MPA_BAD_KEY));
    /* a wrong key is seen as soon as its bytes are there */
    buf[3] = 'X';
    CHECK_EQ(uiw_mpa_frame_parse(UIW_MPA_REPLY, buf, 3, 0, &g), UIW_E_MPA_TRUNCATED);
    CHECK_EQ(uiw_mpa_frame_parse(UIW_MPA_REPLY, buf, 4, 0, &g), UIW_E_MPA_BAD_KEY);
}

static void mutate_expect(enum uiw_mpa_frame_kind kind, const uint8_t *frame, size_t len, size_t at,
                          uint8_t val, int want)
{
    uint8_t buf[600];
    memcpy(buf, frame, len);
    buf[at] = val;
    struct uiw_mpa_frame g;
    CHECK_EQ(uiw_mpa_frame_parse(kind, buf, len, 0, &g), want);
    CHECK(uiw_error_is_fatal(want));
}

TEST(mpa_malformed_each_kind)
{
    struct uiw_mpa_frame f = {.kind = UIW_MPA_REQUEST,
                              .flags = UIW_MPA_FLAG_ENHANCED | UIW_MPA_FLAG_CRC,
                              .rev = 2,
                              .peer2peer = true,
                              .rtr_write = true,
                              .ird = 4,
                              .ord = 4};
    uint8_t req[64];
    CHECK_EQ(enc(&f, req), 24);
    /* wrong key, each byte */
    for (size_t i = 0; i < 16; i++)
        mutate_expect(UIW_MPA_REQUEST, req, 24, i, (uint8_t)(req[i] ^ 0x20), UIW_E_MPA_BAD_KEY);
    /* reserved flag bits */
    for (int b = 0; b < 4; b++)
        mutate_expect(UIW_MPA_REQUEST, req, 24, 16, (uint8_t)(req[16] | (1u << b)),
                      UIW_E_MPA_RESERVED_BITS);
    /* revisions other than 1 and 2 */
    mutate_expect(UIW_MPA_REQUEST, req, 24, 17, 0, UIW_E_MPA_BAD_REV);
    mutate_expect(UIW_MPA_REQUEST, req, 24, 17, 3, UIW_E_MPA_BAD_REV);
    mutate_expect(UIW_MPA_REQUEST, req, 24, 17, 0xFF, UIW_E_MPA_BAD_REV);
    /* in Rev 1 the enhanced bit is reserved */
    mutate_expect(UIW_MPA_REQUEST, req, 24, 17, 1, UIW_E_MPA_RESERVED_BITS);
    /* R in a Request */
    mutate_expect(UIW_MPA_REQUEST, req, 24, 16, (uint8_t)(req[16] | UIW_MPA_FLAG_REJECT),
                  UIW_E_MPA_REJECT_IN_REQUEST);
    /* RTR bits without the peer-to-peer bit */
    mutate_expect(UIW_MPA_REQUEST, req, 24, 20, 0x00, UIW_E_MPA_BAD_IRD_ORD);
    mutate_expect(UIW_MPA_REQUEST, req, 24, 20, 0x40, UIW_E_MPA_BAD_IRD_ORD);
    /* enhanced but too little private data for the two words */
    uint8_t shortpd[64];
    memcpy(shortpd, req, 24);
    shortpd[19] = 3;
    struct uiw_mpa_frame g;
    CHECK_EQ(uiw_mpa_frame_parse(UIW_MPA_REQUEST, shortpd, 23, 0, &g), UIW_E_MPA_BAD_IRD_ORD);
    shortpd[19] = 0;
    CHECK_EQ(uiw_mpa_frame_parse(UIW_MPA_REQUEST, shortpd, 20, 0, &g), UIW_E_MPA_BAD_IRD_ORD);

    /* a Reply names at most one RTR type */
    struct uiw_mpa_frame r = {.kind = UIW_MPA_REPLY,
                              .flags = UIW_MPA_FLAG_ENHANCED,
                              .rev = 2,
                              .peer2peer = true,
                              .rtr_write = true,
                              .rtr_read = true};
    uint8_t rep[64];
    CHECK_EQ(enc(&r, rep), 24);
    CHECK_EQ(uiw_mpa_frame_parse(UIW_MPA_REPLY, rep, 24, 0, &g), UIW_E_MPA_BAD_IRD_ORD);
    /* but a Request may offer several */
    memcpy(rep, "MPA ID Req Frame", 16);
    CHECK_EQ(uiw_mpa_frame_parse(UIW_MPA_REQUEST, rep, 24, 0, &g), 24);
    /* a Reply may carry R */
    r.rtr_read = false;
    r.flags |= UIW_MPA_FLAG_REJECT;
    CHECK_EQ(enc(&r, rep), 24);
    CHECK_EQ(uiw_mpa_frame_parse(UIW_MPA_REPLY, rep, 24, 0, &g), 24);
    CHECK(g.flags & UIW_MPA_FLAG_REJECT);

    /* every error code is distinct */
    const int codes[] = {UIW_E_MPA_TRUNCATED,  UIW_E_MPA_BAD_KEY,     UIW_E_MPA_RESERVED_BITS,
                         UIW_E_MPA_BAD_REV,    UIW_E_MPA_PD_TOO_LONG, UIW_E_MPA_REJECT_IN_REQUEST,
                         UIW_E_MPA_BAD_IRD_ORD};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        CHECK(codes[i] <= -1100 && codes[i] > -1200);
        CHECK(strncmp(uiw_errname(codes[i]), "UIW_E_MPA_", 10) == 0);
        for (size_t j = i + 1; j < sizeof codes / sizeof codes[0]; j++)
            CHECK(codes[i] != codes[j]);
    }
}

TEST(mpa_encode_rejects_bad_frames)
{
    uint8_t buf[64];
    struct uiw_mpa_frame f = {.kind = UIW_MPA_REQUEST, .rev = 1};
    CHECK_EQ(enc(&f, buf), 20);
    f.flags = UIW_MPA_FLAG_REJECT;
    CHECK_EQ(enc(&f, buf), -EINVAL);
    f.flags = 0x01;
    CHECK_EQ(enc(&f, buf), -EINVAL);
    f.flags = UIW_MPA_FLAG_ENHANCED; /* rev 1 */
    CHECK_EQ(enc(&f, buf), -EINVAL);
    f.flags = 0;
    f.rev = 3;
    CHECK_EQ(enc(&f, buf), -EINVAL);
    f.rev = 2;
    f.flags = UIW_MPA_FLAG_ENHANCED;
    f.ird = 0x4000;
    CHECK_EQ(enc(&f, buf), -EINVAL);
    f.ird = 0;
    f.pd_len = 4; /* NULL pd */
    CHECK_EQ(enc(&f, buf), -EINVAL);
    f.pd_len = 0;
    CHECK_EQ(uiw_mpa_frame_encode(&f, buf, 23), -ENOSPC);
    CHECK_EQ(uiw_mpa_frame_encode(&f, buf, 24), 24);
}
