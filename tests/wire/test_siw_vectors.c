/*
 * Real Linux siw traffic (tests/data/siw, see its README): reassemble each TCP
 * direction, find the MPA Request/Reply, run the FPDU stream through the receive framer
 * and parse every DDP/RDMAP header. Expected counts were taken with tshark
 * (tshark -r FILE -Y iwarp_rdma -T fields -e tcp.srcport -e iwarp_rdma.opcode).
 */
#include <errno.h>

#include <uiw/wire.h>

#include "pcap_reader.h"
#include "test.h"

#define VECTORS UIW_SOURCE_DIR "/tests/data/siw/"

struct dir_stats {
    unsigned fpdus;         /* complete FPDUs (CRC checked when on) */
    unsigned seg[16];       /* DDP segments per RDMAP opcode */
    unsigned msg[16];       /* messages (L set) per RDMAP opcode */
    uint64_t payload[16];   /* payload bytes per opcode */
    uint64_t read_req_size; /* sum of the Read Request sizes */
    unsigned terminates;
    bool truncated_at_end; /* the capture ends inside an FPDU */
    size_t fpdu_bytes;     /* FPDU stream length (after the MPA frame) */
};

struct conn {
    struct uiw_mpa_frame req, rep;
    bool crc;
    uint16_t init_port, resp_port;
    struct dir_stats to_resp, to_init; /* initiator -> responder, responder -> initiator */
};

static uint8_t ulpdu[65536];

static void check_ulpdu(const uint8_t *u, uint16_t ul, struct dir_stats *st, uint32_t next_msn[3],
                        uint32_t next_mo[3], uint32_t *tag_stag, uint64_t *tag_to, bool *tag_open)
{
    struct uiw_ddp_hdr h;
    ssize_t hl = uiw_ddp_hdr_parse(u, ul, &h);
    if (hl < 0)
        uiw_test_fail(__FILE__, __LINE__, "DDP header: %s", uiw_errname((int)hl));
    int c = uiw_rdmap_check_ctrl(&h);
    if (c != 0)
        uiw_test_fail(__FILE__, __LINE__, "RDMAP ctrl 0x%02x: %s", h.rdmap_ctrl, uiw_errname(c));
    unsigned op = uiw_rdmap_ctrl_opcode(h.rdmap_ctrl);
    uint32_t pay = ul - (uint32_t)hl;
    st->seg[op]++;
    st->msg[op] += h.last;
    if (h.tagged) {
        /* a multi-segment tagged message continues where the previous segment ended */
        if (*tag_open) {
            CHECK_EQ(h.stag, *tag_stag);
            CHECK_EQ(h.to, *tag_to);
        }
        *tag_open = !h.last;
        *tag_stag = h.stag;
        *tag_to = h.to + pay;
    } else {
        /* MSN per queue starts at 1 and is shared by the segments of a message; MO counts */
        CHECK(h.qn <= 2);
        CHECK_EQ(h.msn, next_msn[h.qn]);
        CHECK_EQ(h.mo, next_mo[h.qn]);
        if (h.last) {
            next_msn[h.qn]++;
            next_mo[h.qn] = 0;
        } else {
            next_mo[h.qn] += pay;
        }
        if (op != UIW_RDMAP_SEND_INV && op != UIW_RDMAP_SEND_SE_INV)
            CHECK_EQ(h.rsvd_ulp, 0);
    }
    if (op == UIW_RDMAP_READ_REQ) {
        struct uiw_rdmap_read_req r;
        CHECK_EQ(uiw_rdmap_read_req_parse(u + hl, pay, &r), 28);
        CHECK_EQ(pay, 28);
        CHECK(h.last);
        st->read_req_size += r.size;
    } else if (op == UIW_RDMAP_TERMINATE) {
        struct uiw_terminate t;
        CHECK(uiw_terminate_parse(u + hl, pay, &t) > 0);
        st->terminates++;
    } else {
        st->payload[op] += pay;
    }
}

/* Run one direction's FPDU stream (after its MPA frame) through the receive framer. */
static void run_dir(const struct uiw_test_tcp_stream *s, size_t start, bool crc,
                    struct dir_stats *st)
{
    memset(st, 0, sizeof(*st));
    CHECK_EQ(s->contig, s->len); /* no holes in the capture */
    CHECK(start <= s->len);
    st->fpdu_bytes = s->len - start;
    struct uiw_fpdu_rx rx;
    uiw_fpdu_rx_init(&rx, crc, false, 0);
    uint32_t next_msn[3] = {1, 1, 1}, next_mo[3] = {0, 0, 0};
    uint32_t tag_stag = 0;
    uint64_t tag_to = 0;
    bool tag_open = false;
    size_t off = start;
    bool in_fpdu = false;
    while (off < s->len) {
        uint16_t ul = 0;
        bool done = false;
        ssize_t r =
            uiw_fpdu_rx_feed(&rx, s->data + off, s->len - off, ulpdu, sizeof(ulpdu), &ul, &done);
        if (r < 0)
            uiw_test_fail(__FILE__, __LINE__, "FPDU at stream offset %zu: %s", off,
                          uiw_errname((int)r));
        CHECK(r > 0);
        off += (size_t)r;
        in_fpdu = !done;
        if (done) {
            st->fpdus++;
            check_ulpdu(ulpdu, ul, st, next_msn, next_mo, &tag_stag, &tag_to, &tag_open);
        }
    }
    st->truncated_at_end = in_fpdu;
}

/* Load a capture and analyse its connections (up to max). Returns the count. */
static int analyse(const char *file, struct conn *out, int max)
{
    static struct uiw_test_pcap p;
    int r = uiw_test_pcap_load(file, &p);
    if (r < 0)
        uiw_test_fail(__FILE__, __LINE__, "%s: %s", file, uiw_strerror(r));
    int n = 0;
    for (int i = 0; i < p.nstreams; i++) {
        struct uiw_test_tcp_stream *req = &p.s[i];
        if (req->len < UIW_MPA_HDR_LEN || memcmp(req->data, "MPA ID Req Frame", 16) != 0)
            continue;
        CHECK(n < max);
        struct conn *c = &out[n++];
        memset(c, 0, sizeof(*c));
        struct uiw_test_tcp_stream *rep = uiw_test_pcap_peer(&p, req);
        CHECK(rep != NULL);
        ssize_t qn = uiw_mpa_frame_parse(UIW_MPA_REQUEST, req->data, req->len, 0, &c->req);
        if (qn < 0)
            uiw_test_fail(__FILE__, __LINE__, "MPA Request: %s", uiw_errname((int)qn));
        ssize_t pn = uiw_mpa_frame_parse(UIW_MPA_REPLY, rep->data, rep->len, 0, &c->rep);
        if (pn < 0)
            uiw_test_fail(__FILE__, __LINE__, "MPA Reply: %s", uiw_errname((int)pn));
        CHECK(!(c->rep.flags & UIW_MPA_FLAG_REJECT));
        c->crc = ((c->req.flags | c->rep.flags) & UIW_MPA_FLAG_CRC) != 0;
        c->init_port = req->sport;
        c->resp_port = rep->sport;
        run_dir(req, (size_t)qn, c->crc, &c->to_resp);
        run_dir(rep, (size_t)pn, c->crc, &c->to_init);
    }
    uiw_test_pcap_free(&p);
    return n;
}

static void check_rping(const struct conn *c)
{
    /* client (initiator): 20 Sends and 10 Read Responses (64 bytes each);
     * server: 20 Sends, 10 RDMA Writes and 10 Read Requests */
    CHECK_EQ(c->to_resp.seg[UIW_RDMAP_SEND], 20);
    CHECK_EQ(c->to_resp.seg[UIW_RDMAP_READ_RESP], 10);
    CHECK_EQ(c->to_resp.msg[UIW_RDMAP_READ_RESP], 10);
    CHECK_EQ(c->to_init.seg[UIW_RDMAP_SEND], 20);
    CHECK_EQ(c->to_init.seg[UIW_RDMAP_WRITE], 10);
    CHECK_EQ(c->to_init.seg[UIW_RDMAP_READ_REQ], 10);
    CHECK_EQ(c->to_resp.fpdus + c->to_init.fpdus, 70);
    /* totals as the rig README gives them */
    CHECK_EQ(c->to_resp.seg[UIW_RDMAP_SEND] + c->to_init.seg[UIW_RDMAP_SEND], 40);
    CHECK_EQ(c->to_resp.seg[UIW_RDMAP_WRITE] + c->to_init.seg[UIW_RDMAP_WRITE], 10);
    CHECK_EQ(c->to_resp.seg[UIW_RDMAP_READ_REQ] + c->to_init.seg[UIW_RDMAP_READ_REQ], 10);
    CHECK_EQ(c->to_resp.seg[UIW_RDMAP_READ_RESP] + c->to_init.seg[UIW_RDMAP_READ_RESP], 10);
    /* every byte asked for by a Read Request came back in a Read Response */
    CHECK_EQ(c->to_init.read_req_size, 640);
    CHECK_EQ(c->to_resp.payload[UIW_RDMAP_READ_RESP], c->to_init.read_req_size);
    CHECK(!c->to_resp.truncated_at_end);
    CHECK(!c->to_init.truncated_at_end);
    CHECK_EQ(c->to_resp.terminates + c->to_init.terminates, 0);
    /* MPA Rev 2 with IRD/ORD 1/1 both ways, no markers */
    const struct uiw_mpa_frame *f[2] = {&c->req, &c->rep};
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(f[i]->rev, 2);
        CHECK(f[i]->flags & UIW_MPA_FLAG_ENHANCED);
        CHECK(!(f[i]->flags & UIW_MPA_FLAG_MARKERS));
        CHECK_EQ(f[i]->ird, 1);
        CHECK_EQ(f[i]->ord, 1);
        CHECK_EQ(f[i]->pd_len, 0);
    }
}

TEST(siw_vectors_rping)
{
    struct conn c[4];
    CHECK_EQ(analyse(VECTORS "siw-rping.pcap", c, 4), 1);
    CHECK(!c[0].crc);
    check_rping(&c[0]);
}

TEST(siw_vectors_rping_crc)
{
    struct conn c[4];
    CHECK_EQ(analyse(VECTORS "siw-rping-crc.pcap", c, 4), 1);
    /* siw asked for CRC: C set in Request and Reply; every FPDU passed the CRC check */
    CHECK(c[0].crc);
    CHECK(c[0].req.flags & UIW_MPA_FLAG_CRC);
    CHECK(c[0].rep.flags & UIW_MPA_FLAG_CRC);
    check_rping(&c[0]);
}

TEST(siw_vectors_rping_crc_corruption_detected)
{
    /* Flip one payload bit in each direction of the CRC capture: the framer must refuse. */
    static struct uiw_test_pcap p;
    CHECK_EQ(uiw_test_pcap_load(VECTORS "siw-rping-crc.pcap", &p), 0);
    int tested = 0;
    for (int i = 0; i < p.nstreams; i++) {
        struct uiw_test_tcp_stream *s = &p.s[i];
        bool is_req = s->len >= 16 && !memcmp(s->data, "MPA ID Req Frame", 16);
        bool is_rep = s->len >= 16 && !memcmp(s->data, "MPA ID Rep Frame", 16);
        if (!is_req && !is_rep)
            continue;
        struct uiw_mpa_frame f;
        ssize_t fl =
            uiw_mpa_frame_parse(is_req ? UIW_MPA_REQUEST : UIW_MPA_REPLY, s->data, s->len, 0, &f);
        CHECK(fl > 0);
        size_t victim = (size_t)fl + (s->len - (size_t)fl) / 2;
        s->data[victim] ^= 0x01;
        struct uiw_fpdu_rx rx;
        uiw_fpdu_rx_init(&rx, true, false, 0);
        size_t off = (size_t)fl;
        ssize_t r = 0;
        while (off < s->len) {
            uint16_t ul;
            bool done;
            r = uiw_fpdu_rx_feed(&rx, s->data + off, s->len - off, ulpdu, sizeof(ulpdu), &ul,
                                 &done);
            if (r < 0)
                break;
            off += (size_t)r;
        }
        /* a flipped length field may also show up as a length error */
        CHECK(r == UIW_E_FPDU_CRC || r == UIW_E_FPDU_TOO_SHORT || r == UIW_E_FPDU_TOO_LONG);
        CHECK(off <= victim + 4 + 65535);
        tested++;
    }
    CHECK_EQ(tested, 2);
    uiw_test_pcap_free(&p);
}

TEST(siw_vectors_readbw_mpav1_head)
{
    struct conn c[4];
    /* perftest's exchange connection, then the data connection */
    CHECK_EQ(analyse(VECTORS "siw-readbw-mpav1-head.pcap", c, 4), 2);
    const struct conn *x = c[0].init_port == 53116 ? &c[0] : &c[1];
    const struct conn *d = c[0].init_port == 53116 ? &c[1] : &c[0];
    CHECK_EQ(x->init_port, 53116);
    CHECK_EQ(d->init_port, 53118);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(c[i].req.rev, 1);
        CHECK_EQ(c[i].rep.rev, 1);
        CHECK_EQ(c[i].req.pd_len, 0);
        CHECK_EQ(c[i].rep.pd_len, 0);
        CHECK(!c[i].crc);
    }
    /* exchange: 9 Sends each way, nothing else */
    CHECK_EQ(x->to_resp.seg[UIW_RDMAP_SEND], 9);
    CHECK_EQ(x->to_init.seg[UIW_RDMAP_SEND], 9);
    CHECK_EQ(x->to_resp.fpdus, 9);
    CHECK_EQ(x->to_init.fpdus, 9);
    /* data: Read Requests one way, multi-segment Read Responses sized to the MSS back */
    CHECK_EQ(d->to_resp.seg[UIW_RDMAP_READ_REQ], 50);
    CHECK_EQ(d->to_resp.fpdus, 50);
    CHECK_EQ(d->to_init.seg[UIW_RDMAP_READ_RESP], 41);
    CHECK_EQ(d->to_init.fpdus, 41);
    CHECK(d->to_init.msg[UIW_RDMAP_READ_RESP] < d->to_init.seg[UIW_RDMAP_READ_RESP]);
    CHECK(d->to_init.payload[UIW_RDMAP_READ_RESP] <= d->to_resp.read_req_size);
    /* the capture stops inside the first 64 KiB Read Response: 41 MSS-sized segments
     * (1436 payload bytes each) and no last segment yet; it ends on an FPDU boundary */
    CHECK_EQ(d->to_resp.read_req_size, 50 * 65536);
    CHECK_EQ(d->to_init.msg[UIW_RDMAP_READ_RESP], 0);
    CHECK_EQ(d->to_init.payload[UIW_RDMAP_READ_RESP], 41 * 1436);
    CHECK(!d->to_init.truncated_at_end);
    CHECK(!d->to_resp.truncated_at_end);
}

TEST(siw_vectors_truncated_at_end)
{
    /* Cut the data connection's Read Response stream inside an FPDU, as a capture limited
     * to N frames does: the complete FPDUs are parsed, the rest is reported as truncated. */
    static struct uiw_test_pcap p;
    CHECK_EQ(uiw_test_pcap_load(VECTORS "siw-readbw-mpav1-head.pcap", &p), 0);
    struct uiw_test_tcp_stream *s = NULL;
    for (int i = 0; i < p.nstreams; i++)
        if (p.s[i].sport == 7175 && uiw_test_pcap_peer(&p, &p.s[i])->sport == 53118)
            s = &p.s[i];
    CHECK(s != NULL);
    struct uiw_mpa_frame f;
    ssize_t fl = uiw_mpa_frame_parse(UIW_MPA_REPLY, s->data, s->len, 0, &f);
    CHECK_EQ(fl, UIW_MPA_HDR_LEN);
    for (size_t cut = 1; cut < 1456; cut += 97) {
        size_t len = s->len, contig = s->contig;
        s->len -= cut;
        s->contig -= cut;
        struct dir_stats st;
        run_dir(s, (size_t)fl, false, &st);
        CHECK(st.truncated_at_end);
        CHECK_EQ(st.fpdus, 40);
        CHECK_EQ(st.seg[UIW_RDMAP_READ_RESP], 40);
        s->len = len;
        s->contig = contig;
    }
    uiw_test_pcap_free(&p);
}

TEST(siw_vectors_missing_file_fails)
{
    struct uiw_test_pcap p;
    CHECK_EQ(uiw_test_pcap_load(VECTORS "no-such-capture.pcap", &p), -ENOENT);
}
