/* DDP (RFC 5041 section 4): tagged and untagged headers, message segmentation. */
#include <errno.h>

#include <uiw/wire.h>

#include "common/byteorder.h"
#include "common/compiler.h"
#include "wire/hdr.h"

UIW__DATAPATH ssize_t uiw_ddp_hdr_encode(const struct uiw_ddp_hdr *h, uint8_t *buf, size_t cap)
{
    size_t len = h->tagged ? UIW_DDP_TAGGED_HDR_LEN : UIW_DDP_UNTAGGED_HDR_LEN;
    if (cap < len)
        return -ENOSPC;
    buf[UIW__DDP_OFF_CTRL] = (uint8_t)((h->tagged ? UIW_DDP_FLAG_TAGGED : 0) |
                                       (h->last ? UIW_DDP_FLAG_LAST : 0) | UIW_DDP_VERSION);
    buf[UIW__DDP_OFF_RDMAP_CTRL] = h->rdmap_ctrl;
    if (h->tagged) {
        uiw__put_be32(buf + UIW__DDP_OFF_STAG, h->stag);
        uiw__put_be64(buf + UIW__DDP_OFF_TO, h->to);
    } else {
        uiw__put_be32(buf + UIW__DDP_OFF_RSVD_ULP, h->rsvd_ulp);
        uiw__put_be32(buf + UIW__DDP_OFF_QN, h->qn);
        uiw__put_be32(buf + UIW__DDP_OFF_MSN, h->msn);
        uiw__put_be32(buf + UIW__DDP_OFF_MO, h->mo);
    }
    return (ssize_t)len;
}

UIW__DATAPATH ssize_t uiw_ddp_hdr_parse(const uint8_t *buf, size_t len, struct uiw_ddp_hdr *h)
{
    if (len < 1)
        return UIW_E_DDP_TRUNCATED;
    uint8_t c = buf[UIW__DDP_OFF_CTRL];
    bool tagged = (c & UIW_DDP_FLAG_TAGGED) != 0;
    size_t hlen = tagged ? UIW_DDP_TAGGED_HDR_LEN : UIW_DDP_UNTAGGED_HDR_LEN;
    if (len < hlen)
        return UIW_E_DDP_TRUNCATED;
    if ((c & 0x03) != UIW_DDP_VERSION)
        return UIW_E_DDP_BAD_VERSION;
    if (c & UIW_DDP_RSVD_MASK)
        return UIW_E_DDP_RESERVED_BITS;
    h->tagged = tagged;
    h->last = (c & UIW_DDP_FLAG_LAST) != 0;
    h->dv = c & 0x03;
    h->rdmap_ctrl = buf[UIW__DDP_OFF_RDMAP_CTRL];
    if (tagged) {
        h->stag = uiw__ddp_stag(buf);
        h->to = uiw__ddp_to(buf);
        h->rsvd_ulp = 0;
        h->qn = 0;
        h->msn = 0;
        h->mo = 0;
    } else {
        h->stag = 0;
        h->to = 0;
        h->rsvd_ulp = uiw__ddp_rsvd_ulp(buf);
        h->qn = uiw__ddp_qn(buf);
        h->msn = uiw__ddp_msn(buf);
        h->mo = uiw__ddp_mo(buf);
    }
    return (ssize_t)hlen;
}

ssize_t uiw_ddp_segment(uint32_t msg_len, uint16_t mulpdu, size_t hdr_len, uint32_t seg,
                        uint32_t *offset, bool *last)
{
    if (mulpdu <= hdr_len)
        return -EINVAL;
    uint32_t per = (uint32_t)(mulpdu - hdr_len);
    uint32_t nseg = uiw_ddp_segment_count(msg_len, mulpdu, hdr_len);
    if (seg >= nseg)
        return -ERANGE;
    uint64_t off = (uint64_t)seg * per;
    uint64_t left = msg_len - off;
    uint32_t n = left < per ? (uint32_t)left : per;
    *offset = (uint32_t)off;
    *last = seg + 1 == nseg;
    return (ssize_t)n;
}
