/* MPA connection setup (src/wire/mpa_setup.c): table-driven. Each row is an initiator's
 * and a responder's offer; the Request and the Reply go through the frame codec (encode,
 * then parse as the peer does), and both sides' results, or the refusal, are checked. */
#include <stdint.h>
#include <string.h>

#include <uiw/wire.h>

#include "test.h"
#include "wire/mpa_setup.h"

enum { W = UIW__MPA_RTR_WRITE, R = UIW__MPA_RTR_READ, S = UIW__MPA_RTR_SEND };

/* One side's expected result: rev, crc, markers_tx, markers_rx, p2p, rtr, ird, ord. */
struct want {
    uint8_t rev;
    bool crc, mtx, mrx, p2p;
    uint8_t rtr;
    uint16_t ird, ord;
};

struct row {
    const char *what;
    struct uiw__mpa_offer ini, rsp;
    int rsp_rc, ini_rc; /* 0 or the UIW_E_MPA_* refusal (ini_rc unused when rsp_rc) */
    struct want i, r;
};

static const struct row rows[] = {
    {"Rev 2 both, nothing asked",
     {.rev = 2, .ird = 16, .ord = 16, .ird_max = 16},
     {.rev = 2, .ird = 16, .ord = 16},
     0,
     0,
     {2, false, false, false, false, 0, 16, 16},
     {2, false, false, false, false, 0, 16, 16}},
    {"the lower revision: a Rev 1 initiator",
     {.rev = 1, .ird = 4, .ord = 4, .ird_max = 4},
     {.rev = 2, .ird = 16, .ord = 16},
     0,
     0,
     {1, false, false, false, false, 0, 4, 4},
     {1, false, false, false, false, 0, 16, 16}},
    {"the lower revision: a Rev 1 responder (no words, no peer-to-peer)",
     {.rev = 2, .ird = 4, .ord = 4, .ird_max = 4, .peer2peer = true},
     {.rev = 1, .ird = 16, .ord = 16},
     0,
     0,
     {1, false, false, false, false, 0, 4, 4},
     {1, false, false, false, false, 0, 16, 16}},
    {"CRC when the initiator asks",
     {.rev = 2, .crc = true, .ird = 1, .ord = 1, .ird_max = 1},
     {.rev = 2, .ird = 1, .ord = 1},
     0,
     0,
     {2, true, false, false, false, 0, 1, 1},
     {2, true, false, false, false, 0, 1, 1}},
    {"CRC when the responder asks (Rev 1 too)",
     {.rev = 1, .ird = 1, .ord = 1, .ird_max = 1},
     {.rev = 2, .crc = true, .ird = 1, .ord = 1},
     0,
     0,
     {1, true, false, false, false, 0, 1, 1},
     {1, true, false, false, false, 0, 1, 1}},
    {"markers, each direction on its own",
     {.rev = 2, .markers = true, .ird = 1, .ord = 1, .ird_max = 1},
     {.rev = 2, .ird = 1, .ord = 1},
     0,
     0,
     {2, false, false, true, false, 0, 1, 1},
     {2, false, true, false, false, 0, 1, 1}},
    {"markers refused by the responder",
     {.rev = 2, .markers = true, .ird = 1, .ord = 1, .ird_max = 1},
     {.rev = 2, .reject_markers = true, .ird = 1, .ord = 1},
     UIW_E_MPA_MARKERS_UNSUPPORTED,
     0,
     {0},
     {0}},
    {"markers refused by the initiator",
     {.rev = 2, .reject_markers = true, .ird = 1, .ord = 1, .ird_max = 1},
     {.rev = 2, .markers = true, .ird = 1, .ord = 1},
     0,
     UIW_E_MPA_MARKERS_UNSUPPORTED,
     {0},
     {2, false, false, true, false, 0, 1, 1}},
    {"an ORD never above the peer's IRD, on both sides",
     {.rev = 2, .ird = 4, .ord = 8, .ird_max = 4},
     {.rev = 2, .ird = 2, .ord = 16},
     0,
     0,
     {2, false, false, false, false, 0, 4, 2},
     {2, false, false, false, false, 0, 2, 4}},
    {"an initiator with no Reads (ORD 0) and a responder serving none (IRD 0)",
     {.rev = 2, .ird = 0, .ord = 0, .ird_max = 0},
     {.rev = 2, .ird = 0, .ord = 8},
     0,
     0,
     {2, false, false, false, false, 0, 0, 0},
     {2, false, false, false, false, 0, 0, 0}},
    {"peer-to-peer: Write preferred out of Write and Read",
     {.rev = 2, .ird = 1, .ord = 1, .ird_max = 1, .peer2peer = true},
     {.rev = 2, .ird = 1, .ord = 1},
     0,
     0,
     {2, false, false, false, true, W, 1, 1},
     {2, false, false, false, true, W, 1, 1}},
    {"peer-to-peer: Read when the responder takes no Write",
     {.rev = 2, .ird = 1, .ord = 1, .ird_max = 1, .peer2peer = true, .rtr = W | R | S},
     {.rev = 2, .ird = 1, .ord = 1, .rtr = R | S},
     0,
     0,
     {2, false, false, false, true, R, 1, 1},
     {2, false, false, false, true, R, 1, 1}},
    {"peer-to-peer: Send, the one both take",
     {.rev = 2, .ird = 1, .ord = 1, .ird_max = 1, .peer2peer = true, .rtr = S},
     {.rev = 2, .ird = 1, .ord = 1, .rtr = S | W},
     0,
     0,
     {2, false, false, false, true, S, 1, 1},
     {2, false, false, false, true, S, 1, 1}},
    {"peer-to-peer: no type in common",
     {.rev = 2, .ird = 3, .ord = 3, .ird_max = 3, .peer2peer = true, .rtr = S},
     {.rev = 2, .ird = 5, .ord = 6},
     UIW_E_MPA_NO_MATCHING_RTR,
     0,
     {0},
     {0}},
    {"no peer-to-peer offered: none, whatever the responder takes",
     {.rev = 2, .ird = 1, .ord = 1, .ird_max = 1},
     {.rev = 2, .ird = 1, .ord = 1, .rtr = S},
     0,
     0,
     {2, false, false, false, false, 0, 1, 1},
     {2, false, false, false, false, 0, 1, 1}},
};

static void check_want(const char *what, const char *side, const struct uiw__mpa_result *g,
                       const struct want *w)
{
    if (g->rev != w->rev || g->crc != w->crc || g->markers_tx != w->mtx ||
        g->markers_rx != w->mrx || g->peer2peer != w->p2p || g->rtr != w->rtr || g->ird != w->ird ||
        g->ord != w->ord)
        uiw_test_fail(__FILE__, __LINE__,
                      "%s, %s: rev %u crc %d markers %d/%d p2p %d rtr %u IRD %u ORD %u; want "
                      "rev %u crc %d markers %d/%d p2p %d rtr %u IRD %u ORD %u",
                      what, side, g->rev, g->crc, g->markers_tx, g->markers_rx, g->peer2peer,
                      g->rtr, g->ird, g->ord, w->rev, w->crc, w->mtx, w->mrx, w->p2p, w->rtr,
                      w->ird, w->ord);
}

/* Encode f and parse it back as the peer receives it. */
static void wire_trip(const struct uiw_mpa_frame *f, uint8_t *buf, struct uiw_mpa_frame *g)
{
    ssize_t n = uiw_mpa_frame_encode(f, buf, 600);
    CHECK(n > 0);
    CHECK_EQ(uiw_mpa_frame_parse(f->kind, buf, (size_t)n, UIW_MPA_PD_MAX, g), n);
}

TEST(mpa_setup_table)
{
    static const uint8_t ipd[] = "from the initiator", rpd[] = "and back";
    for (size_t k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
        const struct row *t = &rows[k];
        uint8_t b1[600], b2[600];
        struct uiw_mpa_frame req, req_seen, rep, rep_seen;
        struct uiw__mpa_result ri, rr;
        uiw__mpa_request(&t->ini, ipd, sizeof(ipd), &req);
        wire_trip(&req, b1, &req_seen);
        CHECK_EQ(req_seen.pd_len, sizeof(ipd));
        int rc = uiw__mpa_respond(&t->rsp, &req_seen, rpd, sizeof(rpd), &rep, &rr);
        if (rc != t->rsp_rc)
            uiw_test_fail(__FILE__, __LINE__, "%s: the responder returned %d, want %d", t->what, rc,
                          t->rsp_rc);
        wire_trip(&rep, b2, &rep_seen);
        if (rc) {
            /* the refusal: R set, no private data, the responder's words under Rev 2 */
            CHECK(rep_seen.flags & UIW_MPA_FLAG_REJECT);
            CHECK_EQ(rep_seen.pd_len, 0);
            if (rep_seen.flags & UIW_MPA_FLAG_ENHANCED)
                CHECK(rep_seen.ird == t->rsp.ird && rep_seen.ord == t->rsp.ord);
            continue;
        }
        CHECK(!(rep_seen.flags & UIW_MPA_FLAG_REJECT));
        CHECK_EQ(rep_seen.pd_len, sizeof(rpd));
        check_want(t->what, "responder", &rr, &t->r);
        rc = uiw__mpa_conclude(&t->ini, &rep_seen, &ri);
        if (rc != t->ini_rc)
            uiw_test_fail(__FILE__, __LINE__, "%s: the initiator returned %d, want %d", t->what, rc,
                          t->ini_rc);
        if (!rc)
            check_want(t->what, "initiator", &ri, &t->i);
    }
}

/* Replies no well-behaved responder sends, as a hostile or older peer may. */
TEST(mpa_setup_odd_replies)
{
    struct uiw__mpa_offer ini = {.rev = 1, .ird = 2, .ord = 2, .ird_max = 8};
    struct uiw__mpa_result r;
    struct uiw_mpa_frame rep = {.kind = UIW_MPA_REPLY, .rev = 2};
    /* a revision above the one offered */
    CHECK_EQ(uiw__mpa_conclude(&ini, &rep, &r), UIW_E_MPA_BAD_REV);
    rep.rev = 0;
    CHECK_EQ(uiw__mpa_conclude(&ini, &rep, &r), UIW_E_MPA_BAD_REV);

    /* an ORD above our IRD: grow to it within ird_max, refuse beyond */
    ini.rev = 2;
    rep.rev = 2;
    rep.flags = UIW_MPA_FLAG_ENHANCED;
    rep.ird = 9;
    rep.ord = 6;
    CHECK_EQ(uiw__mpa_conclude(&ini, &rep, &r), 0);
    CHECK(r.enhanced && r.ird == 6 && r.ord == 2 && r.peer_ird == 9 && r.peer_ord == 6);
    rep.ord = 9;
    CHECK_EQ(uiw__mpa_conclude(&ini, &rep, &r), UIW_E_MPA_INSUFFICIENT_IRD);

    /* peer-to-peer: an RTR type we did not offer, or none picked */
    rep.ord = 1;
    ini.peer2peer = true;
    ini.rtr = UIW__MPA_RTR_WRITE;
    rep.peer2peer = true;
    rep.rtr_read = true;
    CHECK_EQ(uiw__mpa_conclude(&ini, &rep, &r), UIW_E_MPA_NO_MATCHING_RTR);
    rep.rtr_read = false;
    CHECK_EQ(uiw__mpa_conclude(&ini, &rep, &r), UIW_E_MPA_NO_MATCHING_RTR);
    rep.rtr_write = true;
    CHECK_EQ(uiw__mpa_conclude(&ini, &rep, &r), 0);
    CHECK(r.peer2peer && r.rtr == UIW__MPA_RTR_WRITE);
    /* a Reply without A to an offer: no RTR exchange (Linux siw without peer_to_peer) */
    rep.peer2peer = false;
    rep.rtr_write = false;
    CHECK_EQ(uiw__mpa_conclude(&ini, &rep, &r), 0);
    CHECK(!r.peer2peer && r.rtr == 0);
    /* Rev 2 without the words: nothing about IRD/ORD learnt, ours kept */
    rep.flags = 0;
    rep.ord = 9;
    CHECK_EQ(uiw__mpa_conclude(&ini, &rep, &r), 0);
    CHECK(!r.enhanced && r.ird == 2 && r.ord == 2);
}
