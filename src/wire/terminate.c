/*
 * RDMAP Terminate message (RFC 5040 section 4.8), its error code table (RFC 5040 4.8,
 * RFC 5041 7.2, RFC 5044 8, RFC 6581 9), and recognition of Linux siw's bit order.
 */
#include <errno.h>
#include <string.h>

#include <uiw/wire.h>

#include "common/byteorder.h"

#define T(l, e, c, n)                                                                              \
    {                                                                                              \
        (l), (e), (c), (n)                                                                         \
    }

static const struct uiw_terminate_entry term_table[] = {
    /* RDMAP / Local Catastrophic (Linux siw sends code 0xFF with it) */
    T(0, 0, 0x00, "RDMAP/Local Catastrophic/Local Catastrophic Error"),
    T(0, 0, 0xFF, "RDMAP/Local Catastrophic/Unspecified Error"),
    /* RDMAP / Remote Protection */
    T(0, 1, 0x00, "RDMAP/Remote Protection/Invalid STag"),
    T(0, 1, 0x01, "RDMAP/Remote Protection/Base or Bounds Violation"),
    T(0, 1, 0x02, "RDMAP/Remote Protection/Access Rights Violation"),
    T(0, 1, 0x03, "RDMAP/Remote Protection/STag Not Associated with RDMAP Stream"),
    T(0, 1, 0x04, "RDMAP/Remote Protection/TO Wrap"),
    T(0, 1, 0x09, "RDMAP/Remote Protection/STag Cannot Be Invalidated"),
    T(0, 1, 0xFF, "RDMAP/Remote Protection/Unspecified Error"),
    /* RDMAP / Remote Operation */
    T(0, 2, 0x05, "RDMAP/Remote Operation/Invalid RDMAP Version"),
    T(0, 2, 0x06, "RDMAP/Remote Operation/Unexpected OpCode"),
    T(0, 2, 0x07, "RDMAP/Remote Operation/Catastrophic Error, Localized to RDMAP Stream"),
    T(0, 2, 0x08, "RDMAP/Remote Operation/Catastrophic Error, Global"),
    T(0, 2, 0x09, "RDMAP/Remote Operation/STag Cannot Be Invalidated"),
    T(0, 2, 0xFF, "RDMAP/Remote Operation/Unspecified Error"),
    /* DDP / Local Catastrophic */
    T(1, 0, 0x00, "DDP/Local Catastrophic/Local Catastrophic Error"),
    /* DDP / Tagged Buffer */
    T(1, 1, 0x00, "DDP/Tagged Buffer/Invalid STag"),
    T(1, 1, 0x01, "DDP/Tagged Buffer/Base or Bounds Violation"),
    T(1, 1, 0x02, "DDP/Tagged Buffer/STag Not Associated with DDP Stream"),
    T(1, 1, 0x03, "DDP/Tagged Buffer/TO Wrap"),
    T(1, 1, 0x04, "DDP/Tagged Buffer/Invalid DDP Version"),
    /* DDP / Untagged Buffer */
    T(1, 2, 0x01, "DDP/Untagged Buffer/Invalid QN"),
    T(1, 2, 0x02, "DDP/Untagged Buffer/Invalid MSN, No Buffer Available"),
    T(1, 2, 0x03, "DDP/Untagged Buffer/Invalid MSN, MSN Range Not Valid"),
    T(1, 2, 0x04, "DDP/Untagged Buffer/Invalid MO"),
    T(1, 2, 0x05, "DDP/Untagged Buffer/DDP Message Too Long"),
    T(1, 2, 0x06, "DDP/Untagged Buffer/Invalid DDP Version"),
    /* LLP (MPA) */
    T(2, 0, 0x01, "LLP/MPA/TCP Connection Closed, Terminated or Lost"),
    T(2, 0, 0x02, "LLP/MPA/MPA CRC Error"),
    T(2, 0, 0x03, "LLP/MPA/MPA Marker and ULPDU Length Mismatch"),
    T(2, 0, 0x04, "LLP/MPA/Invalid MPA Request or Reply"),
    T(2, 0, 0x05, "LLP/MPA/Local Catastrophic"),
    T(2, 0, 0x06, "LLP/MPA/Insufficient IRD Resources"),
    T(2, 0, 0x07, "LLP/MPA/No Matching RTR Option"),
};

#undef T

#define TABLE_N (sizeof(term_table) / sizeof(term_table[0]))

size_t uiw_terminate_table_size(void)
{
    return TABLE_N;
}

const struct uiw_terminate_entry *uiw_terminate_table_entry(size_t i)
{
    return i < TABLE_N ? &term_table[i] : NULL;
}

const char *uiw_terminate_name(unsigned layer, unsigned etype, unsigned code)
{
    for (size_t i = 0; i < TABLE_N; i++)
        if (term_table[i].layer == layer && term_table[i].etype == etype &&
            term_table[i].code == code)
            return term_table[i].name;
    return NULL;
}

bool uiw_terminate_is_valid(unsigned layer, unsigned etype, unsigned code)
{
    return uiw_terminate_name(layer, etype, code) != NULL;
}

/* Byte 2 of the control word: RFC order keeps M/D/R in the top three bits. */
#define RFC_FLAG_SHIFT 5
#define RFC_RSVD2      0x1F
#define SIW_FLAG_M     0x01
#define SIW_FLAG_D     0x02
#define SIW_FLAG_R     0x04
#define SIW_RSVD2      0xF8

ssize_t uiw_terminate_encode(const struct uiw_terminate *t, uint8_t *buf, size_t cap)
{
    if (t->layer > 0xF || t->etype > 0xF || (t->hdrct & ~7u))
        return -EINVAL;
    bool m = t->hdrct & UIW_TERM_FLAG_M, d = t->hdrct & UIW_TERM_FLAG_D;
    bool r = t->hdrct & UIW_TERM_FLAG_R;
    size_t dlen = 0;
    if (d) {
        dlen = (t->ddp_hdr[0] & UIW_DDP_FLAG_TAGGED) ? UIW_DDP_TAGGED_HDR_LEN
                                                     : UIW_DDP_UNTAGGED_HDR_LEN;
        if (t->ddp_hdr_len != dlen)
            return -EINVAL;
    }
    size_t len = UIW_TERM_HDR_LEN + (m || d ? 2 + dlen : 0) + (r ? UIW_RDMAP_READ_REQ_LEN : 0);
    if (cap < len)
        return -ENOSPC;
    buf[0] = (uint8_t)(t->layer << 4 | t->etype);
    buf[1] = t->code;
    buf[2] = (uint8_t)(t->hdrct << RFC_FLAG_SHIFT);
    buf[3] = 0;
    size_t off = UIW_TERM_HDR_LEN;
    if (m || d) {
        uiw__put_be16(buf + off, m ? t->ddp_seg_len : 0);
        off += 2;
        if (d) {
            memcpy(buf + off, t->ddp_hdr, dlen);
            off += dlen;
        }
    }
    if (r) {
        memcpy(buf + off, t->rdma_hdr, UIW_RDMAP_READ_REQ_LEN);
        off += UIW_RDMAP_READ_REQ_LEN;
    }
    return (ssize_t)off;
}

ssize_t uiw_terminate_parse_order(const uint8_t *buf, size_t len, enum uiw_term_order hint,
                                  struct uiw_terminate *t)
{
    if (len < UIW_TERM_HDR_LEN)
        return UIW_E_RDMAP_TRUNCATED;
    if (buf[3] != 0)
        return UIW_E_RDMAP_BAD_TERMINATE;
    unsigned hi = buf[0] >> 4, lo = buf[0] & 0xF, code = buf[1], b2 = buf[2];
    bool rfc_ok = !(b2 & RFC_RSVD2) && uiw_terminate_is_valid(hi, lo, code);
    bool siw_ok = !(b2 & SIW_RSVD2) && uiw_terminate_is_valid(lo, hi, code);
    bool siw;
    if (rfc_ok && siw_ok)
        siw = hint == UIW_TERM_ORDER_SIW && hi != lo; /* same reading when hi == lo */
    else if (rfc_ok || siw_ok)
        siw = siw_ok;
    else
        return UIW_E_RDMAP_BAD_TERMINATE;

    uint8_t hdrct;
    if (siw)
        hdrct = (uint8_t)((b2 & SIW_FLAG_M ? UIW_TERM_FLAG_M : 0) |
                          (b2 & SIW_FLAG_D ? UIW_TERM_FLAG_D : 0) |
                          (b2 & SIW_FLAG_R ? UIW_TERM_FLAG_R : 0));
    else
        hdrct = (uint8_t)(b2 >> RFC_FLAG_SHIFT);

    size_t off = UIW_TERM_HDR_LEN;
    uint16_t seg_len = 0;
    uint8_t dlen = 0;
    const uint8_t *dhdr = NULL, *rhdr = NULL;
    if (hdrct & (UIW_TERM_FLAG_M | UIW_TERM_FLAG_D)) {
        if (len - off < 2)
            return UIW_E_RDMAP_TRUNCATED;
        seg_len = uiw__get_be16(buf + off);
        off += 2;
        if (hdrct & UIW_TERM_FLAG_D) {
            if (len - off < 1)
                return UIW_E_RDMAP_TRUNCATED;
            dlen = (buf[off] & UIW_DDP_FLAG_TAGGED) ? UIW_DDP_TAGGED_HDR_LEN
                                                    : UIW_DDP_UNTAGGED_HDR_LEN;
            if (len - off < dlen)
                return UIW_E_RDMAP_TRUNCATED;
            dhdr = buf + off;
            off += dlen;
        }
    }
    if (hdrct & UIW_TERM_FLAG_R) {
        if (len - off >= UIW_RDMAP_READ_REQ_LEN) {
            rhdr = buf + off;
            off += UIW_RDMAP_READ_REQ_LEN;
        } else if (!siw) {
            return UIW_E_RDMAP_TRUNCATED;
        }
        /* siw sets R for errors on Sends without including an RDMA header. */
    }

    memset(t, 0, sizeof(*t));
    t->layer = (uint8_t)(siw ? lo : hi);
    t->etype = (uint8_t)(siw ? hi : lo);
    t->code = (uint8_t)code;
    t->hdrct = hdrct;
    t->ddp_seg_len = (hdrct & UIW_TERM_FLAG_M) ? seg_len : 0;
    if (dhdr) {
        memcpy(t->ddp_hdr, dhdr, dlen);
        t->ddp_hdr_len = dlen;
    }
    if (rhdr) {
        memcpy(t->rdma_hdr, rhdr, UIW_RDMAP_READ_REQ_LEN);
        t->rdma_hdr_len = UIW_RDMAP_READ_REQ_LEN;
    }
    t->siw_order = siw;
    t->ambiguous = rfc_ok && siw_ok && hi != lo;
    return (ssize_t)off;
}

ssize_t uiw_terminate_parse(const uint8_t *buf, size_t len, struct uiw_terminate *t)
{
    return uiw_terminate_parse_order(buf, len, UIW_TERM_ORDER_AUTO, t);
}
