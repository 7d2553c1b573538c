/*
 * Where each field sits in the headers the wire layer owns, and accessors that read one
 * field in place: for the engine's and the connection manager's fast checks, which look
 * at a field or two of bytes not yet parsed (uiw_mpa_frame_parse and uiw_ddp_hdr_parse
 * read them all). The encoders and parsers use the same offsets.
 */
#ifndef UIW_WIRE_HDR_H
#define UIW_WIRE_HDR_H

#include <stdint.h>

#include <uiw/wire.h>

#include "common/byteorder.h"

/* MPA Request / Reply (RFC 5044 section 7.1): Key(16) | flags(1) | Rev(1) | PD_Length(2). */
enum {
    UIW__MPA_OFF_FLAGS = 16,
    UIW__MPA_OFF_REV = 17,
    UIW__MPA_OFF_PD_LEN = 18,
};

/* DDP (RFC 5041 section 4), from the start of the ULPDU:
 *   both:     control(1) | RsvdULP[0], the RDMAP control byte(1)
 *   tagged:   STag(4) | TO(8)
 *   untagged: RsvdULP[1..4](4) | QN(4) | MSN(4) | MO(4) */
enum {
    UIW__DDP_OFF_CTRL = 0,
    UIW__DDP_OFF_RDMAP_CTRL = 1,
    UIW__DDP_OFF_STAG = 2,
    UIW__DDP_OFF_TO = 6,
    UIW__DDP_OFF_RSVD_ULP = 2,
    UIW__DDP_OFF_QN = 6,
    UIW__DDP_OFF_MSN = 10,
    UIW__DDP_OFF_MO = 14,
};

/* An MPA Request's or Reply's PD_Length, from its header h (UIW_MPA_HDR_LEN bytes). */
static inline uint16_t uiw__mpa_hdr_pd_len(const uint8_t *h)
{
    return uiw__get_be16(h + UIW__MPA_OFF_PD_LEN);
}

/* Fields of an untagged DDP header h (UIW_DDP_UNTAGGED_HDR_LEN bytes). */
static inline uint32_t uiw__ddp_rsvd_ulp(const uint8_t *h)
{
    return uiw__get_be32(h + UIW__DDP_OFF_RSVD_ULP);
}
static inline uint32_t uiw__ddp_qn(const uint8_t *h)
{
    return uiw__get_be32(h + UIW__DDP_OFF_QN);
}
static inline uint32_t uiw__ddp_msn(const uint8_t *h)
{
    return uiw__get_be32(h + UIW__DDP_OFF_MSN);
}
static inline uint32_t uiw__ddp_mo(const uint8_t *h)
{
    return uiw__get_be32(h + UIW__DDP_OFF_MO);
}

/* Fields of a tagged DDP header h (UIW_DDP_TAGGED_HDR_LEN bytes). */
static inline uint32_t uiw__ddp_stag(const uint8_t *h)
{
    return uiw__get_be32(h + UIW__DDP_OFF_STAG);
}
static inline uint64_t uiw__ddp_to(const uint8_t *h)
{
    return uiw__get_be64(h + UIW__DDP_OFF_TO);
}

/* The untagged DDP and RDMAP header of a Send's only segment (Last, queue 0, MO 0, no
 * Invalidate STag) at h, UIW_DDP_UNTAGGED_HDR_LEN bytes: the bytes uiw_ddp_hdr_encode
 * writes for it, without its general case (the small Send's fast path). */
static inline void uiw__ddp_send_whole_put(uint8_t *h, uint8_t op, uint32_t msn)
{
    h[UIW__DDP_OFF_CTRL] = UIW_DDP_FLAG_LAST | UIW_DDP_VERSION;
    h[UIW__DDP_OFF_RDMAP_CTRL] = uiw_rdmap_ctrl(op);
    uiw__put_be32(h + UIW__DDP_OFF_RSVD_ULP, 0);
    uiw__put_be32(h + UIW__DDP_OFF_QN, UIW_DDP_QN_SEND);
    uiw__put_be32(h + UIW__DDP_OFF_MSN, msn);
    uiw__put_be32(h + UIW__DDP_OFF_MO, 0);
}

#endif
