/* libFuzzer target: DDP header, RDMAP control check, Read Request body, segmentation. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <uiw/wire.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void segment_invariants(const uint8_t *data, size_t size)
{
    if (size < 8)
        return;
    uint32_t msg_len = (uint32_t)data[0] << 16 | (uint32_t)data[1] << 8 | data[2];
    uint16_t mulpdu = (uint16_t)(data[3] << 8 | data[4]);
    size_t hdr_len = data[5] % 3 == 0 ? 14 : data[5] % 3 == 1 ? 18 : 46;
    uint32_t n = uiw_ddp_segment_count(msg_len, mulpdu, hdr_len);
    uint32_t seg = (uint32_t)data[6] << 8 | data[7];
    uint32_t off = 0;
    bool last = false;
    ssize_t r = uiw_ddp_segment(msg_len, mulpdu, hdr_len, seg, &off, &last);
    if (mulpdu <= hdr_len) {
        if (r != -EINVAL || n != 0)
            abort();
        return;
    }
    if (seg >= n) {
        if (r != -ERANGE)
            abort();
        return;
    }
    if (r < 0 || (size_t)r + hdr_len > mulpdu || (uint64_t)off + (uint64_t)r > msg_len)
        abort();
    if (last != (seg + 1 == n) || (last && off + (uint32_t)r != msg_len))
        abort();
    if (!last && (size_t)r + hdr_len != mulpdu)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct uiw_ddp_hdr h;
    ssize_t n = uiw_ddp_hdr_parse(data, size, &h);
    if (n < 0) {
        if (n != UIW_E_DDP_TRUNCATED && n != UIW_E_DDP_BAD_VERSION && n != UIW_E_DDP_RESERVED_BITS)
            abort();
    } else {
        if ((size_t)n > size || (n != 14 && n != 18))
            abort();
        /* a header that parses re-encodes to the same bytes */
        uint8_t again[18];
        if (uiw_ddp_hdr_encode(&h, again, sizeof(again)) != n || memcmp(again, data, (size_t)n))
            abort();
        int c = uiw_rdmap_check_ctrl(&h);
        if (c != 0 && c != UIW_E_RDMAP_BAD_VERSION && c != UIW_E_RDMAP_RESERVED_BITS &&
            c != UIW_E_RDMAP_BAD_OPCODE && c != UIW_E_DDP_BAD_QN)
            abort();
        (void)uiw_rdmap_opcode_name(uiw_rdmap_ctrl_opcode(h.rdmap_ctrl));
        if (c == 0 && !h.tagged && h.qn == UIW_DDP_QN_READ_REQ) {
            struct uiw_rdmap_read_req r;
            ssize_t m = uiw_rdmap_read_req_parse(data + n, size - (size_t)n, &r);
            if (m != 28 && m != UIW_E_RDMAP_TRUNCATED)
                abort();
            if (m == 28) {
                uint8_t b[28];
                uiw_rdmap_read_req_encode(&r, b);
                if (memcmp(b, data + n, 28))
                    abort();
            }
        }
    }
    segment_invariants(data, size);
    return 0;
}
