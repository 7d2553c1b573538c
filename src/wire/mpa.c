/*
 * MPA Request/Reply frames (RFC 5044 section 7.1; RFC 6581 sections 5 and 9) and MULPDU
 * (RFC 5044 section 8.1).
 *
 * Frame: key(16) | M C R Res(5) flags | Rev | PD_Length(16) | private data.
 * Rev 2 with the enhanced flag (0x10, Linux siw's MPA_RR_FLAG_ENHANCED) puts the RFC 6581
 * IRD word and ORD word at the head of the private data (counted in PD_Length).
 */
#include <errno.h>
#include <string.h>

#include <uiw/wire.h>

#include "common/byteorder.h"
#include "wire/hdr.h"

static const uint8_t key_req[UIW_MPA_KEY_LEN] = "MPA ID Req Frame";
static const uint8_t key_rep[UIW_MPA_KEY_LEN] = "MPA ID Rep Frame";

#define FLAGS_KNOWN                                                                                \
    (UIW_MPA_FLAG_MARKERS | UIW_MPA_FLAG_CRC | UIW_MPA_FLAG_REJECT | UIW_MPA_FLAG_ENHANCED)

static bool enhanced(uint8_t flags, uint8_t rev)
{
    return rev == 2 && (flags & UIW_MPA_FLAG_ENHANCED);
}

ssize_t uiw_mpa_frame_encode(const struct uiw_mpa_frame *f, uint8_t *buf, size_t cap)
{
    if (!f || (f->kind != UIW_MPA_REQUEST && f->kind != UIW_MPA_REPLY))
        return -EINVAL;
    if (f->flags & ~FLAGS_KNOWN)
        return -EINVAL;
    if (f->rev != 1 && f->rev != 2)
        return -EINVAL;
    if (f->rev == 1 && (f->flags & UIW_MPA_FLAG_ENHANCED))
        return -EINVAL;
    if (f->kind == UIW_MPA_REQUEST && (f->flags & UIW_MPA_FLAG_REJECT))
        return -EINVAL;
    if (f->pd_len && !f->pd)
        return -EINVAL;
    bool enh = enhanced(f->flags, f->rev);
    if (enh && (f->ird > UIW_MPA_V2_IRD_ORD_MASK || f->ord > UIW_MPA_V2_IRD_ORD_MASK))
        return -EINVAL;
    size_t pd_total = (size_t)f->pd_len + (enh ? UIW_MPA_V2_IRD_ORD_LEN : 0);
    if (pd_total > UIW_MPA_PD_MAX)
        return UIW_E_MPA_PD_TOO_LONG;
    size_t total = UIW_MPA_HDR_LEN + pd_total;
    if (!buf || cap < total)
        return -ENOSPC;
    memcpy(buf, f->kind == UIW_MPA_REQUEST ? key_req : key_rep, UIW_MPA_KEY_LEN);
    buf[UIW__MPA_OFF_FLAGS] = f->flags;
    buf[UIW__MPA_OFF_REV] = f->rev;
    uiw__put_be16(buf + UIW__MPA_OFF_PD_LEN, (uint16_t)pd_total);
    uint8_t *pd = buf + UIW_MPA_HDR_LEN;
    if (enh) {
        uint16_t ird = f->ird, ord = f->ord;
        if (f->peer2peer)
            ird |= UIW_MPA_V2_PEER2PEER;
        if (f->rtr_send)
            ird |= UIW_MPA_V2_RTR_SEND;
        if (f->rtr_write)
            ord |= UIW_MPA_V2_RTR_WRITE;
        if (f->rtr_read)
            ord |= UIW_MPA_V2_RTR_READ;
        uiw__put_be16(pd, ird);
        uiw__put_be16(pd + 2, ord);
        pd += UIW_MPA_V2_IRD_ORD_LEN;
    }
    if (f->pd_len)
        memcpy(pd, f->pd, f->pd_len);
    return (ssize_t)total;
}

ssize_t uiw_mpa_frame_parse(enum uiw_mpa_frame_kind kind, const uint8_t *buf, size_t len,
                            size_t pd_cap, struct uiw_mpa_frame *f)
{
    if (!f || (kind != UIW_MPA_REQUEST && kind != UIW_MPA_REPLY) || (len && !buf))
        return -EINVAL;
    if (pd_cap == 0)
        pd_cap = UIW_MPA_PD_DEFAULT_CAP;
    if (pd_cap > UIW_MPA_PD_MAX)
        pd_cap = UIW_MPA_PD_MAX;
    const uint8_t *key = kind == UIW_MPA_REQUEST ? key_req : key_rep;
    /* a wrong key is reported as soon as the bytes at hand show it */
    size_t kl = len < UIW_MPA_KEY_LEN ? len : UIW_MPA_KEY_LEN;
    if (memcmp(buf, key, kl) != 0)
        return UIW_E_MPA_BAD_KEY;
    if (len < UIW_MPA_HDR_LEN)
        return UIW_E_MPA_TRUNCATED;
    uint8_t flags = buf[UIW__MPA_OFF_FLAGS], rev = buf[UIW__MPA_OFF_REV];
    uint16_t pd_len = uiw__mpa_hdr_pd_len(buf);
    if (rev != 1 && rev != 2)
        return UIW_E_MPA_BAD_REV;
    /* Res: 0x1F in Rev 1; 0x0F in Rev 2, where 0x10 is the enhanced flag */
    if (flags & (rev == 2 ? 0x0F : 0x1F))
        return UIW_E_MPA_RESERVED_BITS;
    if (kind == UIW_MPA_REQUEST && (flags & UIW_MPA_FLAG_REJECT))
        return UIW_E_MPA_REJECT_IN_REQUEST;
    if (pd_len > pd_cap)
        return UIW_E_MPA_PD_TOO_LONG;
    if (len < (size_t)UIW_MPA_HDR_LEN + pd_len)
        return UIW_E_MPA_TRUNCATED;

    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->flags = flags;
    f->rev = rev;
    const uint8_t *pd = buf + UIW_MPA_HDR_LEN;
    if (enhanced(flags, rev)) {
        if (pd_len < UIW_MPA_V2_IRD_ORD_LEN)
            return UIW_E_MPA_BAD_IRD_ORD;
        uint16_t ird = uiw__get_be16(pd), ord = uiw__get_be16(pd + 2);
        f->peer2peer = (ird & UIW_MPA_V2_PEER2PEER) != 0;
        f->rtr_send = (ird & UIW_MPA_V2_RTR_SEND) != 0;
        f->rtr_write = (ord & UIW_MPA_V2_RTR_WRITE) != 0;
        f->rtr_read = (ord & UIW_MPA_V2_RTR_READ) != 0;
        f->ird = ird & UIW_MPA_V2_IRD_ORD_MASK;
        f->ord = ord & UIW_MPA_V2_IRD_ORD_MASK;
        int nrtr = f->rtr_send + f->rtr_write + f->rtr_read;
        /* RTR types only mean something in peer-to-peer mode; a Reply picks exactly one */
        if (nrtr && !f->peer2peer)
            return UIW_E_MPA_BAD_IRD_ORD;
        if (kind == UIW_MPA_REPLY && nrtr > 1)
            return UIW_E_MPA_BAD_IRD_ORD;
        pd += UIW_MPA_V2_IRD_ORD_LEN;
        pd_len -= UIW_MPA_V2_IRD_ORD_LEN;
    }
    f->pd = pd_len ? pd : NULL;
    f->pd_len = pd_len;
    return (ssize_t)(UIW_MPA_HDR_LEN + (size_t)(pd - buf - UIW_MPA_HDR_LEN) + pd_len);
}

uint16_t uiw_mpa_mulpdu(uint32_t emss, bool markers)
{
    uint64_t over = 6 + (uint64_t)(emss % 4);
    if (markers)
        over += 4 * (((uint64_t)emss + UIW_MPA_MARKER_INTERVAL - 1) / UIW_MPA_MARKER_INTERVAL);
    if (emss <= over)
        return 0;
    uint64_t m = emss - over;
    return m > UIW_FPDU_MAX_ULPDU ? UIW_FPDU_MAX_ULPDU : (uint16_t)m;
}
