/*
 * MPA connection setup as pure functions (RFC 5044 section 7.1, RFC 6581 sections 5 and 9):
 * what each side offers, the Request and the Reply it sends, and what both end up with.
 * The connection manager (src/io/cm.c) does the I/O around them: the initiator builds its
 * Request (uiw__mpa_request) and concludes from the Reply (uiw__mpa_conclude); the
 * responder answers the Request (uiw__mpa_respond). Both sides settle the same way:
 *   - revision: the lower of the two (the responder answers Rev 1 to a Rev 1 Request; an
 *     initiator refuses a Reply above its own);
 *   - CRC: on when either side asks (C);
 *   - markers, per direction: a side inserts markers when the peer asked for them (M in
 *     the peer's frame), and refuses when it cannot (reject_markers);
 *   - IRD/ORD (Rev 2 with the enhanced words): a side's ORD never exceeds the peer's IRD;
 *     the initiator raises its IRD to the responder's ORD, up to ird_max, and fails with
 *     UIW_E_MPA_INSUFFICIENT_IRD beyond it;
 *   - peer-to-peer (A bit): the responder picks one RTR type out of those offered and
 *     acceptable to it (Write, then Read, then Send: Linux siw's preference), or refuses
 *     with UIW_E_MPA_NO_MATCHING_RTR; the initiator checks the pick was one it offered.
 */
#ifndef UIW_WIRE_MPA_SETUP_H
#define UIW_WIRE_MPA_SETUP_H

#include <stdbool.h>
#include <stdint.h>

#include <uiw/wire.h>

/* RTR message types, as a set (the values of cm.h's UIW_CM_RTR_*). */
enum uiw__mpa_rtr {
    UIW__MPA_RTR_SEND = 0x1,
    UIW__MPA_RTR_WRITE = 0x2,
    UIW__MPA_RTR_READ = 0x4,
};
#define UIW__MPA_RTR_ALL     (UIW__MPA_RTR_SEND | UIW__MPA_RTR_WRITE | UIW__MPA_RTR_READ)
#define UIW__MPA_RTR_DEFAULT (UIW__MPA_RTR_WRITE | UIW__MPA_RTR_READ) /* as Linux siw */

/* What one side brings to the setup. */
struct uiw__mpa_offer {
    uint8_t rev;         /* the highest revision it speaks: 1 or 2 */
    bool crc;            /* asks for CRC32c */
    bool markers;        /* asks the peer to insert markers (it receives them) */
    bool reject_markers; /* cannot insert markers: a peer that asks for them is refused */
    uint16_t ird, ord;   /* its depths, 0 .. UIW_MPA_V2_IRD_ORD_MASK */
    uint16_t ird_max;    /* initiator: how far its IRD may grow to the responder's ORD */
    bool peer2peer;      /* initiator: offers an RTR exchange (the responder answers any) */
    uint8_t rtr;         /* RTR types offered (initiator) or acceptable (responder);
                            0: UIW__MPA_RTR_DEFAULT */
};

/* What the setup settled, from one side's point of view. */
struct uiw__mpa_result {
    uint8_t rev;
    bool crc;
    bool markers_tx; /* this side inserts markers */
    bool markers_rx; /* the peer inserts markers */
    bool peer2peer;
    uint8_t rtr;       /* the chosen type (one bit), 0 without peer-to-peer */
    uint16_t ird, ord; /* this side's */
    bool enhanced;     /* the IRD/ORD words were exchanged (Rev 2) */
    uint16_t peer_ird; /* the peer's words (with enhanced) */
    uint16_t peer_ord;
};

/* The initiator's Request for its offer, with private data pd[0..pd_len) (not copied). */
void uiw__mpa_request(const struct uiw__mpa_offer *me, const uint8_t *pd, uint16_t pd_len,
                      struct uiw_mpa_frame *req);

/* The responder answers the Request req with its offer: fills *res and the Reply (with
 * private data pd[0..pd_len), not copied) and returns 0; or returns the reason to refuse
 * (UIW_E_MPA_MARKERS_UNSUPPORTED, UIW_E_MPA_NO_MATCHING_RTR) and fills *reply with the
 * rejecting Reply (R set; under Rev 2 the words say what the responder could do). */
int uiw__mpa_respond(const struct uiw__mpa_offer *me, const struct uiw_mpa_frame *req,
                     const uint8_t *pd, uint16_t pd_len, struct uiw_mpa_frame *reply,
                     struct uiw__mpa_result *res);

/* The initiator concludes from the responder's (accepting) Reply: 0 and *res, or the
 * reason the connection cannot be used: UIW_E_MPA_BAD_REV (a revision above its own),
 * UIW_E_MPA_MARKERS_UNSUPPORTED, UIW_E_MPA_INSUFFICIENT_IRD, UIW_E_MPA_NO_MATCHING_RTR
 * (an RTR type it did not offer, or none). */
int uiw__mpa_conclude(const struct uiw__mpa_offer *me, const struct uiw_mpa_frame *reply,
                      struct uiw__mpa_result *res);

/* The RTR types a frame carries, as a set. */
uint8_t uiw__mpa_rtr_set(const struct uiw_mpa_frame *f);

#endif
