/* RDMAP (RFC 5040 section 4): control field, opcode validity, Read Request header. */
#include <errno.h>

#include <uiw/wire.h>

#include "common/byteorder.h"
#include "common/compiler.h"

#define RDMAP_RSVD_MASK 0x30

const char *uiw_rdmap_opcode_name(unsigned opcode)
{
    static const char *const names[] = {
        [UIW_RDMAP_WRITE] = "RDMA Write",
        [UIW_RDMAP_READ_REQ] = "RDMA Read Request",
        [UIW_RDMAP_READ_RESP] = "RDMA Read Response",
        [UIW_RDMAP_SEND] = "Send",
        [UIW_RDMAP_SEND_INV] = "Send with Invalidate",
        [UIW_RDMAP_SEND_SE] = "Send with Solicited Event",
        [UIW_RDMAP_SEND_SE_INV] = "Send with Solicited Event and Invalidate",
        [UIW_RDMAP_TERMINATE] = "Terminate",
    };
    if (opcode < sizeof(names) / sizeof(names[0]))
        return names[opcode];
    return "Reserved";
}

UIW__DATAPATH int uiw_rdmap_check_ctrl(const struct uiw_ddp_hdr *h)
{
    uint8_t c = h->rdmap_ctrl;
    if (uiw_rdmap_ctrl_version(c) != UIW_RDMAP_VERSION)
        return UIW_E_RDMAP_BAD_VERSION;
    if (c & RDMAP_RSVD_MASK)
        return UIW_E_RDMAP_RESERVED_BITS;
    unsigned op = uiw_rdmap_ctrl_opcode(c);
    if (h->tagged)
        return op == UIW_RDMAP_WRITE || op == UIW_RDMAP_READ_RESP ? 0 : UIW_E_RDMAP_BAD_OPCODE;
    switch (h->qn) {
    case UIW_DDP_QN_SEND:
        return op >= UIW_RDMAP_SEND && op <= UIW_RDMAP_SEND_SE_INV ? 0 : UIW_E_RDMAP_BAD_OPCODE;
    case UIW_DDP_QN_READ_REQ:
        return op == UIW_RDMAP_READ_REQ ? 0 : UIW_E_RDMAP_BAD_OPCODE;
    case UIW_DDP_QN_TERMINATE:
        return op == UIW_RDMAP_TERMINATE ? 0 : UIW_E_RDMAP_BAD_OPCODE;
    default:
        return UIW_E_DDP_BAD_QN;
    }
}

void uiw_rdmap_read_req_encode(const struct uiw_rdmap_read_req *r, uint8_t buf[28])
{
    uiw__put_be32(buf, r->sink_stag);
    uiw__put_be64(buf + 4, r->sink_to);
    uiw__put_be32(buf + 12, r->size);
    uiw__put_be32(buf + 16, r->src_stag);
    uiw__put_be64(buf + 20, r->src_to);
}

ssize_t uiw_rdmap_read_req_parse(const uint8_t *buf, size_t len, struct uiw_rdmap_read_req *r)
{
    if (len < UIW_RDMAP_READ_REQ_LEN)
        return UIW_E_RDMAP_TRUNCATED;
    r->sink_stag = uiw__get_be32(buf);
    r->sink_to = uiw__get_be64(buf + 4);
    r->size = uiw__get_be32(buf + 12);
    r->src_stag = uiw__get_be32(buf + 16);
    r->src_to = uiw__get_be64(buf + 20);
    return UIW_RDMAP_READ_REQ_LEN;
}
