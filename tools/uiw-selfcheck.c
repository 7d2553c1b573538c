/*
 * uiw-selfcheck: checks the wire layer against known answers (CRC32c vectors of RFC 3720
 * B.4, two whole FPDUs with CRC, an MPA Rev 2 Request round trip, DDP segmentation, a
 * Terminate round trip in both bit orders). One line per check; exit status 1 if any fails.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <uiw/wire.h>

#include "cli.h"

static int failures, checks;

static void report(bool ok, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void report(bool ok, const char *name, const char *fmt, ...)
{
    char detail[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    printf("%s  %-22s %s\n", ok ? "PASS" : "FAIL", name, detail);
    checks++;
    failures += !ok;
}

static void check_crc(void)
{
    uint8_t zeros[32], ones[32];
    memset(zeros, 0x00, sizeof(zeros));
    memset(ones, 0xFF, sizeof(ones));
    uint8_t inc[32], dec[32];
    for (int i = 0; i < 32; i++) {
        inc[i] = (uint8_t)i;
        dec[i] = (uint8_t)(31 - i);
    }
    bool ok = uiw_crc32c(0, zeros, 32) == 0x8A9136AAu && uiw_crc32c(0, ones, 32) == 0x62A8AB43u &&
              uiw_crc32c(0, inc, 32) == 0x46DD794Eu && uiw_crc32c(0, dec, 32) == 0x113FDB5Cu &&
              uiw_crc32c(0, "123456789", 9) == 0xE3069283u &&
              uiw_crc32c(uiw_crc32c(0, "1234", 4), "56789", 5) == 0xE3069283u;
    report(ok, "crc32c_vectors", "RFC 3720 B.4 + \"123456789\" + chaining (implementation: %s)",
           uiw_crc32c_impl());
}

static bool fpdu_equals(const struct uiw_ddp_hdr *h, const uint8_t *want, size_t wlen)
{
    uint8_t ulpdu[UIW_DDP_UNTAGGED_HDR_LEN], fpdu[64];
    ssize_t n = uiw_ddp_hdr_encode(h, ulpdu, sizeof(ulpdu));
    if (n < 0)
        return false;
    struct uiw_wire_iov iov = {ulpdu, (size_t)n};
    ssize_t f = uiw_fpdu_encode(&iov, 1, true, fpdu, sizeof(fpdu));
    if (f != (ssize_t)wlen || memcmp(fpdu, want, wlen) != 0)
        return false;
    /* and back through the receive framer */
    struct uiw_fpdu_rx rx;
    uiw_fpdu_rx_init(&rx, true, false, 0);
    uint8_t back[64];
    uint16_t ul = 0;
    bool done = false;
    struct uiw_ddp_hdr p;
    return uiw_fpdu_rx_feed(&rx, want, wlen, back, sizeof(back), &ul, &done) == (ssize_t)wlen &&
           done && ul == n && uiw_ddp_hdr_parse(back, ul, &p) == n && uiw_rdmap_check_ctrl(&p) == 0;
}

static void check_fpdus(void)
{
    static const uint8_t send0[] = {0x00, 0x12, 0x41, 0x43, 0x00, 0x00, 0x00, 0x00,
                                    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
                                    0x00, 0x00, 0x00, 0x00, 0x58, 0x7b, 0xe8, 0xc4};
    static const uint8_t write0[] = {0x00, 0x0e, 0xc1, 0x40, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
                                     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xeb, 0xd3, 0x4c, 0x5f};
    struct uiw_ddp_hdr s = {.last = true,
                            .rdmap_ctrl = uiw_rdmap_ctrl(UIW_RDMAP_SEND),
                            .qn = UIW_DDP_QN_SEND,
                            .msn = 1};
    report(fpdu_equals(&s, send0, sizeof(send0)), "fpdu_send_zero_length",
           "Send, MSN 1, CRC 58 7b e8 c4");
    struct uiw_ddp_hdr w = {.tagged = true,
                            .last = true,
                            .rdmap_ctrl = uiw_rdmap_ctrl(UIW_RDMAP_WRITE),
                            .stag = 1,
                            .to = 0};
    report(fpdu_equals(&w, write0, sizeof(write0)), "fpdu_write_zero_length",
           "RDMA Write, STag 1, TO 0, CRC eb d3 4c 5f");
}

static void check_mpa(void)
{
    static const uint8_t pd[] = "uiw";
    struct uiw_mpa_frame f = {.kind = UIW_MPA_REQUEST,
                              .flags = UIW_MPA_FLAG_CRC | UIW_MPA_FLAG_ENHANCED,
                              .rev = 2,
                              .peer2peer = true,
                              .rtr_write = true,
                              .ird = 16,
                              .ord = 8,
                              .pd = pd,
                              .pd_len = 3};
    uint8_t buf[64];
    ssize_t n = uiw_mpa_frame_encode(&f, buf, sizeof(buf));
    static const uint8_t want[] = {'M',  'P',  'A',  ' ',  'I',  'D',  ' ', 'R',  'e',
                                   'q',  ' ',  'F',  'r',  'a',  'm',  'e', 0x50, 0x02,
                                   0x00, 0x07, 0x80, 0x10, 0x80, 0x08, 'u', 'i',  'w'};
    struct uiw_mpa_frame p;
    memset(&p, 0, sizeof(p));
    bool ok = n == (ssize_t)sizeof(want) && memcmp(buf, want, sizeof(want)) == 0 &&
              uiw_mpa_frame_parse(UIW_MPA_REQUEST, buf, (size_t)n, 0, &p) == n && p.rev == 2 &&
              p.flags == f.flags && p.peer2peer && p.rtr_write && !p.rtr_read && !p.rtr_send &&
              p.ird == 16 && p.ord == 8 && p.pd_len == 3 && p.pd && memcmp(p.pd, "uiw", 3) == 0;
    /* one byte short must ask for more */
    ok = ok && n > 0 &&
         uiw_mpa_frame_parse(UIW_MPA_REQUEST, buf, (size_t)n - 1, 0, &p) == UIW_E_MPA_TRUNCATED;
    report(ok, "mpa_rev2_request", "Rev 2, C, IRD/ORD 16/8, peer-to-peer Write RTR, PD \"uiw\"");
}

static void check_segmentation(void)
{
    /* 1000 bytes, MULPDU 118, untagged header 18: ten segments of 100 bytes */
    bool ok = true;
    uint32_t off = 0, expect = 0;
    bool last = false;
    uint32_t seg = 0;
    for (; !last && seg < 20; seg++) {
        ssize_t n = uiw_ddp_segment(1000, 118, UIW_DDP_UNTAGGED_HDR_LEN, seg, &off, &last);
        ok = ok && n == 100 && off == expect && last == (seg == 9);
        expect += 100;
    }
    ok = ok && seg == 10 && expect == 1000;
    /* zero-length message: one empty last segment; MULPDU must exceed the header */
    ok = ok && uiw_ddp_segment(0, 118, 18, 0, &off, &last) == 0 && last && off == 0;
    ok = ok && uiw_ddp_segment(10, 18, 18, 0, &off, &last) < 0;
    ok = ok && uiw_ddp_segment(1001, 118, 18, 10, &off, &last) == 1 && last && off == 1000;
    report(ok, "ddp_segmentation", "1000 B at MULPDU 118: 10 x 100 B, L on the last; 0 B; 1001 B");
}

static void check_terminate(void)
{
    struct uiw_terminate t = {.layer = UIW_TERM_LAYER_RDMAP,
                              .etype = UIW_TERM_RDMAP_REMOTE_PROTECTION,
                              .code = UIW_TERM_RP_INVALID_STAG,
                              .hdrct = UIW_TERM_FLAG_M | UIW_TERM_FLAG_D | UIW_TERM_FLAG_R,
                              .ddp_seg_len = 28};
    struct uiw_ddp_hdr h = {.last = true,
                            .rdmap_ctrl = uiw_rdmap_ctrl(UIW_RDMAP_READ_REQ),
                            .qn = UIW_DDP_QN_READ_REQ,
                            .msn = 1};
    struct uiw_rdmap_read_req rr = {
        .sink_stag = 0x100, .sink_to = 0, .size = 64, .src_stag = 0xDEAD00, .src_to = 0x1000};
    t.ddp_hdr_len = (uint8_t)uiw_ddp_hdr_encode(&h, t.ddp_hdr, sizeof(t.ddp_hdr));
    uiw_rdmap_read_req_encode(&rr, t.rdma_hdr);
    uint8_t buf[64];
    ssize_t n = uiw_terminate_encode(&t, buf, sizeof(buf));
    struct uiw_terminate p;
    bool ok = n == 4 + 2 + 18 + 28 && buf[0] == 0x01 && buf[1] == 0x00 && buf[2] == 0xE0 &&
              uiw_terminate_parse(buf, (size_t)n, &p) == n && !p.siw_order && p.layer == t.layer &&
              p.etype == t.etype && p.code == t.code && p.hdrct == t.hdrct && p.ddp_seg_len == 28 &&
              p.ddp_hdr_len == 18 && memcmp(p.ddp_hdr, t.ddp_hdr, 18) == 0 &&
              memcmp(p.rdma_hdr, t.rdma_hdr, 28) == 0;
    /* the same Terminate as Linux siw lays it out: EType/Layer swapped, M/D/R low bits */
    buf[0] = 0x10;
    buf[2] = 0x07;
    ok = ok && uiw_terminate_parse(buf, (size_t)n, &p) == n && p.siw_order && p.layer == 0 &&
         p.etype == 1 && p.code == 0 && p.hdrct == t.hdrct;
    const char *name = uiw_terminate_name(p.layer, p.etype, p.code);
    report(ok && name, "terminate_roundtrip", "%s, M/D/R, RFC and siw bit order",
           name ? name : "?");
}

int main(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        printf("usage: uiw-selfcheck\n"
               "Checks uiw's wire layer against known answers: CRC32c vectors, whole FPDUs,\n"
               "an MPA Rev 2 Request, DDP segmentation, Terminates in both bit orders.\n"
               "One line per check; exit status 0 when all pass, 1 when one fails.\n"
               "  -h, --help   this help\n"
               "  --version    the version\n");
        return CLI_OK;
    }
    if (argc == 2 && strcmp(argv[1], "--version") == 0)
        return cli_version("uiw-selfcheck");
    if (argc > 1) {
        fprintf(stderr, "uiw-selfcheck: unexpected argument '%s' (see --help)\n", argv[1]);
        return CLI_USAGE;
    }
    printf("uiw-selfcheck: wire layer known answers (CRC32c implementation: %s)\n",
           uiw_crc32c_impl());
    check_crc();
    check_fpdus();
    check_mpa();
    check_segmentation();
    check_terminate();
    printf("%s: %d of %d checks passed\n", failures ? "FAIL" : "PASS", checks - failures, checks);
    return failures ? 1 : 0;
}
