/*
 * MPA connection setup (RFC 5044 section 7.1, RFC 6581 sections 5 and 9): the Request, the
 * Reply and what each side settles, as pure functions (mpa_setup.h says the rules).
 */
#include <string.h>

#include "wire/mpa_setup.h"

uint8_t uiw__mpa_rtr_set(const struct uiw_mpa_frame *f)
{
    return (uint8_t)((f->rtr_send ? UIW__MPA_RTR_SEND : 0) |
                     (f->rtr_write ? UIW__MPA_RTR_WRITE : 0) |
                     (f->rtr_read ? UIW__MPA_RTR_READ : 0));
}

static void set_rtr(struct uiw_mpa_frame *f, uint8_t set)
{
    f->rtr_send = (set & UIW__MPA_RTR_SEND) != 0;
    f->rtr_write = (set & UIW__MPA_RTR_WRITE) != 0;
    f->rtr_read = (set & UIW__MPA_RTR_READ) != 0;
}

/* One type out of a set: Write, then Read, then Send (Linux siw's preference); 0 if none. */
static uint8_t rtr_pick(uint8_t set)
{
    if (set & UIW__MPA_RTR_WRITE)
        return UIW__MPA_RTR_WRITE;
    if (set & UIW__MPA_RTR_READ)
        return UIW__MPA_RTR_READ;
    return set & UIW__MPA_RTR_SEND;
}

static uint8_t rtr_of(const struct uiw__mpa_offer *me)
{
    return me->rtr ? (uint8_t)(me->rtr & UIW__MPA_RTR_ALL) : (uint8_t)UIW__MPA_RTR_DEFAULT;
}

static bool has_words(const struct uiw_mpa_frame *f)
{
    return f->rev == 2 && (f->flags & UIW_MPA_FLAG_ENHANCED);
}

void uiw__mpa_request(const struct uiw__mpa_offer *me, const uint8_t *pd, uint16_t pd_len,
                      struct uiw_mpa_frame *req)
{
    memset(req, 0, sizeof(*req));
    req->kind = UIW_MPA_REQUEST;
    req->rev = me->rev;
    req->flags =
        (uint8_t)((me->markers ? UIW_MPA_FLAG_MARKERS : 0) | (me->crc ? UIW_MPA_FLAG_CRC : 0));
    req->pd = pd;
    req->pd_len = pd_len;
    if (me->rev == 2) {
        req->flags |= UIW_MPA_FLAG_ENHANCED;
        req->ird = me->ird;
        req->ord = me->ord;
        if (me->peer2peer) {
            req->peer2peer = true;
            set_rtr(req, rtr_of(me));
        }
    }
}

/* What both sides settle from the frame the peer sent, for this side (rev given). */
static void settle(const struct uiw__mpa_offer *me, const struct uiw_mpa_frame *peer, uint8_t rev,
                   struct uiw__mpa_result *res)
{
    memset(res, 0, sizeof(*res));
    res->rev = rev;
    res->crc = me->crc || (peer->flags & UIW_MPA_FLAG_CRC);
    res->markers_tx = (peer->flags & UIW_MPA_FLAG_MARKERS) != 0;
    res->markers_rx = me->markers;
    res->ird = me->ird;
    res->ord = me->ord;
    res->enhanced = rev == 2 && has_words(peer);
    if (res->enhanced) {
        res->peer_ird = peer->ird;
        res->peer_ord = peer->ord;
        if (peer->ird < res->ord)
            res->ord = peer->ird; /* our ORD never exceeds the peer's IRD */
    }
}

int uiw__mpa_respond(const struct uiw__mpa_offer *me, const struct uiw_mpa_frame *req,
                     const uint8_t *pd, uint16_t pd_len, struct uiw_mpa_frame *reply,
                     struct uiw__mpa_result *res)
{
    settle(me, req, req->rev < me->rev ? req->rev : me->rev, res);
    int fail = 0;
    if (res->markers_tx && me->reject_markers)
        fail = UIW_E_MPA_MARKERS_UNSUPPORTED;
    else if (res->enhanced && req->peer2peer) {
        res->peer2peer = true;
        res->rtr = rtr_pick(uiw__mpa_rtr_set(req) & rtr_of(me));
        if (!res->rtr)
            fail = UIW_E_MPA_NO_MATCHING_RTR;
    }
    memset(reply, 0, sizeof(*reply));
    reply->kind = UIW_MPA_REPLY;
    reply->rev = res->rev;
    if (fail) {
        reply->flags = UIW_MPA_FLAG_REJECT;
        if (res->enhanced) {
            reply->flags |= UIW_MPA_FLAG_ENHANCED;
            reply->ird = me->ird;
            reply->ord = me->ord;
        }
        return fail;
    }
    reply->flags =
        (uint8_t)((res->markers_rx ? UIW_MPA_FLAG_MARKERS : 0) | (res->crc ? UIW_MPA_FLAG_CRC : 0));
    reply->pd = pd;
    reply->pd_len = pd_len;
    if (res->enhanced) {
        reply->flags |= UIW_MPA_FLAG_ENHANCED;
        reply->ird = res->ird;
        reply->ord = res->ord;
        reply->peer2peer = res->peer2peer;
        set_rtr(reply, res->rtr);
    }
    return 0;
}

int uiw__mpa_conclude(const struct uiw__mpa_offer *me, const struct uiw_mpa_frame *reply,
                      struct uiw__mpa_result *res)
{
    if (reply->rev > me->rev || reply->rev < 1) {
        memset(res, 0, sizeof(*res));
        return UIW_E_MPA_BAD_REV;
    }
    settle(me, reply, reply->rev, res);
    if (res->markers_tx && me->reject_markers)
        return UIW_E_MPA_MARKERS_UNSUPPORTED;
    if (!res->enhanced)
        return 0;
    if (reply->ord > res->ird) {
        /* the responder reads from us more at once than we offered: grow, if we can */
        if (reply->ord > me->ird_max)
            return UIW_E_MPA_INSUFFICIENT_IRD;
        res->ird = reply->ord;
    }
    if (me->peer2peer && reply->peer2peer) {
        res->peer2peer = true;
        res->rtr = rtr_pick(uiw__mpa_rtr_set(reply) & rtr_of(me));
        if (!res->rtr)
            return UIW_E_MPA_NO_MATCHING_RTR;
    }
    return 0;
}
