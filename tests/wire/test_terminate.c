/* Terminate (RFC 5040 4.8): the code table, encode/parse, Linux siw's bit order. */
#include <errno.h>

#include <uiw/wire.h>

#include "test.h"

/* Every (layer, etype, code) of the spec notes, with the start of its name. */
static const struct {
    unsigned l, e, c;
    const char *name;
} notes[] = {
    {0, 1, 0x00, "RDMAP/Remote Protection/Invalid STag"},
    {0, 1, 0x01, "RDMAP/Remote Protection/Base or Bounds Violation"},
    {0, 1, 0x02, "RDMAP/Remote Protection/Access Rights Violation"},
    {0, 1, 0x03, "RDMAP/Remote Protection/STag Not Associated with RDMAP Stream"},
    {0, 1, 0x04, "RDMAP/Remote Protection/TO Wrap"},
    {0, 1, 0x09, "RDMAP/Remote Protection/STag Cannot Be Invalidated"},
    {0, 1, 0xFF, "RDMAP/Remote Protection/Unspecified Error"},
    {0, 2, 0x05, "RDMAP/Remote Operation/Invalid RDMAP Version"},
    {0, 2, 0x06, "RDMAP/Remote Operation/Unexpected OpCode"},
    {0, 2, 0x07, "RDMAP/Remote Operation/Catastrophic Error, Localized to RDMAP Stream"},
    {0, 2, 0x08, "RDMAP/Remote Operation/Catastrophic Error, Global"},
    {0, 2, 0x09, "RDMAP/Remote Operation/STag Cannot Be Invalidated"},
    {0, 2, 0xFF, "RDMAP/Remote Operation/Unspecified Error"},
    {1, 1, 0x00, "DDP/Tagged Buffer/Invalid STag"},
    {1, 1, 0x01, "DDP/Tagged Buffer/Base or Bounds Violation"},
    {1, 1, 0x02, "DDP/Tagged Buffer/STag Not Associated with DDP Stream"},
    {1, 1, 0x03, "DDP/Tagged Buffer/TO Wrap"},
    {1, 1, 0x04, "DDP/Tagged Buffer/Invalid DDP Version"},
    {1, 2, 0x01, "DDP/Untagged Buffer/Invalid QN"},
    {1, 2, 0x02, "DDP/Untagged Buffer/Invalid MSN, No Buffer Available"},
    {1, 2, 0x03, "DDP/Untagged Buffer/Invalid MSN, MSN Range Not Valid"},
    {1, 2, 0x04, "DDP/Untagged Buffer/Invalid MO"},
    {1, 2, 0x05, "DDP/Untagged Buffer/DDP Message Too Long"},
    {1, 2, 0x06, "DDP/Untagged Buffer/Invalid DDP Version"},
    {2, 0, 0x01, "LLP/MPA/TCP Connection Closed, Terminated or Lost"},
    {2, 0, 0x02, "LLP/MPA/MPA CRC Error"},
    {2, 0, 0x03, "LLP/MPA/MPA Marker and ULPDU Length Mismatch"},
    {2, 0, 0x04, "LLP/MPA/Invalid MPA Request or Reply"},
    {2, 0, 0x05, "LLP/MPA/Local Catastrophic"},
    {2, 0, 0x06, "LLP/MPA/Insufficient IRD Resources"},
    {2, 0, 0x07, "LLP/MPA/No Matching RTR Option"},
};
#define NOTES_N (sizeof(notes) / sizeof(notes[0]))

TEST(term_table_has_every_notes_entry)
{
    for (size_t i = 0; i < NOTES_N; i++) {
        const char *n = uiw_terminate_name(notes[i].l, notes[i].e, notes[i].c);
        if (!n)
            uiw_test_fail(__FILE__, __LINE__, "missing %u/%u/0x%02x", notes[i].l, notes[i].e,
                          notes[i].c);
        CHECK_STR(n, notes[i].name);
        CHECK(uiw_terminate_is_valid(notes[i].l, notes[i].e, notes[i].c));
    }
    /* the named enum constants of wire.h are in the table */
    CHECK(uiw_terminate_is_valid(UIW_TERM_LAYER_RDMAP, UIW_TERM_RDMAP_REMOTE_PROTECTION,
                                 UIW_TERM_RP_CANT_INVALIDATE));
    CHECK(uiw_terminate_is_valid(UIW_TERM_LAYER_DDP, UIW_TERM_DDP_UNTAGGED,
                                 UIW_TERM_DU_INVALID_VERSION));
    CHECK(
        uiw_terminate_is_valid(UIW_TERM_LAYER_LLP, UIW_TERM_LLP_MPA, UIW_TERM_MPA_NO_MATCHING_RTR));
}

TEST(term_table_consistent)
{
    size_t n = uiw_terminate_table_size();
    CHECK(n >= NOTES_N);
    CHECK(uiw_terminate_table_entry(n) == NULL);
    size_t valid = 0;
    for (unsigned l = 0; l < 16; l++)
        for (unsigned e = 0; e < 16; e++)
            for (unsigned c = 0; c < 256; c++)
                if (uiw_terminate_is_valid(l, e, c)) {
                    valid++;
                    CHECK(l <= 2 && e <= 2);
                    const char *name = uiw_terminate_name(l, e, c);
                    CHECK(name != NULL);
                    CHECK(strncmp(name,
                                  l == 0   ? "RDMAP/"
                                  : l == 1 ? "DDP/"
                                           : "LLP/MPA/",
                                  l == 0   ? 6
                                  : l == 1 ? 4
                                           : 8) == 0);
                }
    CHECK_EQ(valid, n); /* no duplicates */
    for (size_t i = 0; i < n; i++) {
        const struct uiw_terminate_entry *t = uiw_terminate_table_entry(i);
        CHECK_STR(uiw_terminate_name(t->layer, t->etype, t->code), t->name);
    }
    CHECK(!uiw_terminate_is_valid(0, 1, 0x05));
    CHECK(!uiw_terminate_is_valid(1, 2, 0x00));
    CHECK(!uiw_terminate_is_valid(2, 1, 0x01));
    CHECK(!uiw_terminate_is_valid(3, 0, 0x00));
    CHECK(uiw_terminate_name(2, 0, 0x08) == NULL);
}

TEST(term_encode_layout)
{
    struct uiw_terminate t = {.layer = 0, .etype = 1, .code = 0x00, .hdrct = 7};
    t.ddp_seg_len = 46;
    struct uiw_ddp_hdr h = {.last = true, .rdmap_ctrl = 0x41, .qn = 1, .msn = 3};
    CHECK_EQ(uiw_ddp_hdr_encode(&h, t.ddp_hdr, sizeof(t.ddp_hdr)), 18);
    t.ddp_hdr_len = 18;
    for (int i = 0; i < 28; i++)
        t.rdma_hdr[i] = (uint8_t)(0xA0 + i);
    uint8_t buf[64];
    CHECK_EQ(uiw_terminate_encode(&t, buf, sizeof(buf)), 4 + 2 + 18 + 28);
    static const uint8_t ctrl[6] = {0x01, 0x00, 0xE0, 0x00, 0x00, 46};
    CHECK_MEM(buf, ctrl, 6);
    CHECK_MEM(buf + 6, t.ddp_hdr, 18);
    CHECK_MEM(buf + 24, t.rdma_hdr, 28);
    CHECK_EQ(uiw_terminate_encode(&t, buf, 51), -ENOSPC);

    struct uiw_terminate s = {.layer = 2, .etype = 0, .code = 2};
    CHECK_EQ(uiw_terminate_encode(&s, buf, 4), 4);
    static const uint8_t crc[4] = {0x20, 0x02, 0x00, 0x00};
    CHECK_MEM(buf, crc, 4);
    CHECK_EQ(uiw_terminate_encode(&s, buf, 3), -ENOSPC);

    /* D only: a zero segment length field still precedes the header */
    struct uiw_terminate d = {.layer = 1, .etype = 1, .code = 0, .hdrct = UIW_TERM_FLAG_D};
    d.ddp_hdr[0] = 0xC1;
    d.ddp_hdr_len = 14;
    CHECK_EQ(uiw_terminate_encode(&d, buf, sizeof(buf)), 4 + 2 + 14);
    CHECK_EQ(buf[2], 0x40);
    CHECK_EQ(buf[4], 0);
    CHECK_EQ(buf[5], 0);
    /* M only */
    struct uiw_terminate m = {.layer = 1, .etype = 2, .code = 5, .hdrct = UIW_TERM_FLAG_M};
    m.ddp_seg_len = 0x1234;
    CHECK_EQ(uiw_terminate_encode(&m, buf, sizeof(buf)), 6);
    CHECK_EQ(buf[2], 0x80);
    CHECK_EQ(buf[4], 0x12);
    CHECK_EQ(buf[5], 0x34);
}

TEST(term_encode_rejects)
{
    uint8_t buf[64];
    struct uiw_terminate t = {.layer = 16};
    CHECK_EQ(uiw_terminate_encode(&t, buf, sizeof(buf)), -EINVAL);
    t.layer = 0;
    t.etype = 16;
    CHECK_EQ(uiw_terminate_encode(&t, buf, sizeof(buf)), -EINVAL);
    t.etype = 0;
    t.hdrct = 8;
    CHECK_EQ(uiw_terminate_encode(&t, buf, sizeof(buf)), -EINVAL);
    t.hdrct = UIW_TERM_FLAG_D;
    t.ddp_hdr[0] = 0x41; /* untagged */
    t.ddp_hdr_len = 14;
    CHECK_EQ(uiw_terminate_encode(&t, buf, sizeof(buf)), -EINVAL);
    t.ddp_hdr_len = 18;
    CHECK_EQ(uiw_terminate_encode(&t, buf, sizeof(buf)), 24);
}

static void fill(struct uiw_terminate *t, unsigned l, unsigned e, unsigned c, uint8_t hdrct,
                 bool tagged)
{
    memset(t, 0, sizeof(*t));
    t->layer = (uint8_t)l;
    t->etype = (uint8_t)e;
    t->code = (uint8_t)c;
    t->hdrct = hdrct;
    if (hdrct & UIW_TERM_FLAG_M)
        t->ddp_seg_len = (uint16_t)(100 + c);
    if (hdrct & UIW_TERM_FLAG_D) {
        struct uiw_ddp_hdr h = {.tagged = tagged,
                                .last = true,
                                .rdmap_ctrl = 0x41,
                                .qn = 1,
                                .msn = 9,
                                .stag = 0x1234,
                                .to = 77};
        t->ddp_hdr_len = (uint8_t)uiw_ddp_hdr_encode(&h, t->ddp_hdr, sizeof(t->ddp_hdr));
    }
    if (hdrct & UIW_TERM_FLAG_R)
        for (int i = 0; i < 28; i++)
            t->rdma_hdr[i] = (uint8_t)(i * 7 + c);
}

static void check_same(const struct uiw_terminate *a, const struct uiw_terminate *b)
{
    CHECK_EQ(a->layer, b->layer);
    CHECK_EQ(a->etype, b->etype);
    CHECK_EQ(a->code, b->code);
    CHECK_EQ(a->hdrct, b->hdrct);
    CHECK_EQ(a->ddp_seg_len, b->ddp_seg_len);
    if (a->hdrct & UIW_TERM_FLAG_D) {
        CHECK_EQ(a->ddp_hdr_len, b->ddp_hdr_len);
        CHECK_MEM(a->ddp_hdr, b->ddp_hdr, a->ddp_hdr_len);
    }
    if (a->hdrct & UIW_TERM_FLAG_R)
        CHECK_MEM(a->rdma_hdr, b->rdma_hdr, 28);
}

/* Lay out t in Linux siw's order: EType high nibble, Layer low, M/D/R = 0x01/0x02/0x04. */
static size_t siw_encode(const struct uiw_terminate *t, uint8_t *buf, size_t cap)
{
    ssize_t n = uiw_terminate_encode(t, buf, cap);
    CHECK(n >= 4);
    buf[0] = (uint8_t)(t->etype << 4 | t->layer);
    buf[2] =
        (uint8_t)(((t->hdrct & UIW_TERM_FLAG_M) ? 1 : 0) | ((t->hdrct & UIW_TERM_FLAG_D) ? 2 : 0) |
                  ((t->hdrct & UIW_TERM_FLAG_R) ? 4 : 0));
    return (size_t)n;
}

TEST(term_roundtrip_rfc_order_every_entry)
{
    size_t n = uiw_terminate_table_size();
    for (size_t i = 0; i < n; i++) {
        const struct uiw_terminate_entry *e = uiw_terminate_table_entry(i);
        for (uint8_t hdrct = 0; hdrct < 8; hdrct++) {
            for (int tagged = 0; tagged < 2; tagged++) {
                struct uiw_terminate t, p;
                fill(&t, e->layer, e->etype, e->code, hdrct, tagged);
                uint8_t buf[64];
                ssize_t len = uiw_terminate_encode(&t, buf, sizeof(buf));
                CHECK(len >= 4);
                memset(&p, 0x5A, sizeof(p));
                CHECK_EQ(uiw_terminate_parse(buf, (size_t)len, &p), len);
                check_same(&t, &p);
                CHECK(!p.siw_order);
                CHECK_EQ(p.rdma_hdr_len, (hdrct & UIW_TERM_FLAG_R) ? 28 : 0);
                /* the ambiguity flag is set only when the swapped reading is valid too */
                bool swapped = hdrct == 0 && e->layer != e->etype &&
                               uiw_terminate_is_valid(e->etype, e->layer, e->code);
                CHECK_EQ(p.ambiguous, swapped);
                /* a hint for siw changes the reading only in the ambiguous case */
                CHECK_EQ(uiw_terminate_parse_order(buf, (size_t)len, UIW_TERM_ORDER_SIW, &p), len);
                CHECK_EQ(p.siw_order, swapped);
                CHECK_EQ(uiw_terminate_parse_order(buf, (size_t)len, UIW_TERM_ORDER_RFC, &p), len);
                CHECK(!p.siw_order);
                /* every shorter prefix is truncated */
                for (size_t k = 0; k < (size_t)len; k++)
                    CHECK_EQ(uiw_terminate_parse(buf, k, &p), UIW_E_RDMAP_TRUNCATED);
            }
        }
    }
}

TEST(term_parse_siw_order_every_entry)
{
    size_t n = uiw_terminate_table_size();
    size_t ambiguous = 0;
    for (size_t i = 0; i < n; i++) {
        const struct uiw_terminate_entry *e = uiw_terminate_table_entry(i);
        for (uint8_t hdrct = 0; hdrct < 8; hdrct++) {
            struct uiw_terminate t, p;
            fill(&t, e->layer, e->etype, e->code, hdrct, false);
            uint8_t buf[64];
            size_t len = siw_encode(&t, buf, sizeof(buf));
            /* with the hint the siw reading is always recovered */
            CHECK_EQ(uiw_terminate_parse_order(buf, len, UIW_TERM_ORDER_SIW, &p), (ssize_t)len);
            check_same(&t, &p);
            CHECK_EQ(p.siw_order, e->layer != e->etype || hdrct != 0);
            /* without it: whenever the RFC reading is not also valid */
            bool rfc_valid = hdrct == 0 && uiw_terminate_is_valid(e->etype, e->layer, e->code);
            CHECK_EQ(uiw_terminate_parse(buf, len, &p), (ssize_t)len);
            if (rfc_valid) {
                CHECK_EQ(p.layer, e->etype);
                CHECK_EQ(p.etype, e->layer);
                CHECK(!p.siw_order);
                CHECK_EQ(p.ambiguous, e->layer != e->etype);
                ambiguous += e->layer != e->etype;
            } else {
                check_same(&t, &p);
                CHECK(p.siw_order || e->layer == e->etype);
                CHECK(!p.ambiguous);
            }
        }
    }
    /* 0x20/0x02 with codes 5, 6, 7 and 0x01/0x10 with code 0: the only ambiguous words */
    CHECK_EQ(ambiguous, 8);
}

TEST(term_parse_siw_examples)
{
    struct uiw_terminate p;
    /* siw's "Invalid RDMAP version": Wireshark reads LLP code 5 */
    static const uint8_t ver[4] = {0x20, 0x05, 0x00, 0x00};
    CHECK_EQ(uiw_terminate_parse(ver, 4, &p), 4);
    CHECK(p.ambiguous);
    CHECK_EQ(p.layer, 2);
    CHECK_EQ(uiw_terminate_parse_order(ver, 4, UIW_TERM_ORDER_SIW, &p), 4);
    CHECK(p.siw_order);
    CHECK_STR(uiw_terminate_name(p.layer, p.etype, p.code),
              "RDMAP/Remote Operation/Invalid RDMAP Version");

    /* siw: Write to an unknown STag -> DDP/Tagged/Invalid STag, M and D, tagged header */
    uint8_t w[4 + 2 + 14] = {0x11, 0x00, 0x03, 0x00, 0x00, 0x10, 0xC1, 0x40, 0x00, 0x00,
                             0x12, 0x00, 0,    0,    0,    0,    0,    0,    0,    0x40};
    CHECK_EQ(uiw_terminate_parse(w, sizeof(w), &p), (ssize_t)sizeof(w));
    CHECK(p.siw_order);
    CHECK_EQ(p.layer, 1);
    CHECK_EQ(p.etype, 1);
    CHECK_EQ(p.code, 0);
    CHECK_EQ(p.hdrct, UIW_TERM_FLAG_M | UIW_TERM_FLAG_D);
    CHECK_EQ(p.ddp_seg_len, 16);
    CHECK_EQ(p.ddp_hdr_len, 14);
    struct uiw_ddp_hdr h;
    CHECK_EQ(uiw_ddp_hdr_parse(p.ddp_hdr, p.ddp_hdr_len, &h), 14);
    CHECK_EQ(h.stag, 0x1200);

    /* siw: Read Request for an unknown source STag -> RDMAP/Remote Protection/Invalid STag
     * with M, D, R: segment length, the untagged header and the 28-byte Read Request */
    uint8_t rr[4 + 2 + 18 + 28] = {0x10, 0x00, 0x07, 0x00, 0x00, 0x00, 0x41, 0x41, 0, 0,
                                   0,    0,    0,    0,    0,    1,    0,    0,    0, 1};
    rr[50] = 0xAB; /* last byte of the source TO */
    CHECK_EQ(uiw_terminate_parse(rr, sizeof(rr), &p), (ssize_t)sizeof(rr));
    CHECK(p.siw_order);
    CHECK_STR(uiw_terminate_name(p.layer, p.etype, p.code), "RDMAP/Remote Protection/Invalid STag");
    CHECK_EQ(p.hdrct, 7);
    CHECK_EQ(p.ddp_hdr_len, 18);
    CHECK_EQ(p.rdma_hdr_len, 28);
    CHECK_EQ(p.rdma_hdr[26], 0xAB);
    struct uiw_rdmap_read_req r;
    CHECK_EQ(uiw_rdmap_read_req_parse(p.rdma_hdr, 28, &r), 28);

    /* siw sets R for a Send error without an RDMA header: accepted, rdma_hdr_len 0 */
    uint8_t s[4 + 2 + 18] = {0x10, 0x09, 0x07, 0x00, 0x00, 0x00, 0x41, 0x44};
    CHECK_EQ(uiw_terminate_parse(s, sizeof(s), &p), (ssize_t)sizeof(s));
    CHECK(p.siw_order);
    CHECK_EQ(p.hdrct, 7);
    CHECK_EQ(p.rdma_hdr_len, 0);
    /* in RFC order the same shortfall is a truncation */
    s[0] = 0x01;
    s[2] = 0xE0;
    CHECK_EQ(uiw_terminate_parse(s, sizeof(s), &p), UIW_E_RDMAP_TRUNCATED);

    /* siw bad CRC: LLP/MPA/CRC, same as RFC when no flags: 0x02 reads RDMAP/RO/2 = invalid,
     * so siw order is detected */
    static const uint8_t crc[4] = {0x02, 0x02, 0x00, 0x00};
    CHECK_EQ(uiw_terminate_parse(crc, 4, &p), 4);
    CHECK(p.siw_order);
    CHECK_EQ(p.layer, 2);
    CHECK_EQ(p.etype, 0);
    CHECK_EQ(p.code, 2);
}

TEST(term_parse_bad)
{
    struct uiw_terminate p;
    uint8_t b[64] = {0};
    /* undefined in both orders */
    b[0] = 0x33;
    CHECK_EQ(uiw_terminate_parse(b, 4, &p), UIW_E_RDMAP_BAD_TERMINATE);
    b[0] = 0x01;
    b[1] = 0x05; /* RDMAP/RP/5 and DDP/LC/5: neither defined */
    CHECK_EQ(uiw_terminate_parse(b, 4, &p), UIW_E_RDMAP_BAD_TERMINATE);
    /* reserved byte 3 */
    b[1] = 0x00;
    b[3] = 0x01;
    CHECK_EQ(uiw_terminate_parse(b, 4, &p), UIW_E_RDMAP_BAD_TERMINATE);
    b[3] = 0;
    /* reserved bits of byte 2 set in both readings */
    b[2] = 0x08;
    CHECK_EQ(uiw_terminate_parse(b, 4, &p), UIW_E_RDMAP_BAD_TERMINATE);
    b[2] = 0xE1; /* flags in both places */
    CHECK_EQ(uiw_terminate_parse(b, 64, &p), UIW_E_RDMAP_BAD_TERMINATE);
    b[2] = 0x10;
    CHECK_EQ(uiw_terminate_parse(b, 4, &p), UIW_E_RDMAP_BAD_TERMINATE);
    b[2] = 0;
    CHECK_EQ(uiw_terminate_parse(b, 4, &p), 4);
    for (size_t k = 0; k < 4; k++)
        CHECK_EQ(uiw_terminate_parse(b, k, &p), UIW_E_RDMAP_TRUNCATED);
    /* trailing bytes are left to the caller */
    CHECK_EQ(uiw_terminate_parse(b, 64, &p), 4);
}
