/*
 * libFuzzer target: MPA Request/Reply frame parser, both kinds, several private data caps.
 * Input: byte 0 selects the kind (bit 0) and the cap (bits 1-2: default, 0 -> 256, 64,
 * 512, 4096); the rest is the frame. A frame that parses must re-encode to the same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <uiw/wire.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const size_t caps[4] = {0, 64, 512, 4096};
    enum uiw_mpa_frame_kind kind = (data[0] & 1) ? UIW_MPA_REPLY : UIW_MPA_REQUEST;
    size_t cap = caps[(data[0] >> 1) & 3];
    const uint8_t *buf = data + 1;
    size_t len = size - 1;
    struct uiw_mpa_frame f;
    ssize_t n = uiw_mpa_frame_parse(kind, buf, len, cap, &f);
    if (n < 0) {
        if (!uiw_error_is_fatal((int)n) && n != UIW_E_MPA_TRUNCATED)
            abort();
        return 0;
    }
    if ((size_t)n > len || (size_t)n < UIW_MPA_HDR_LEN)
        abort();
    if (f.pd_len && (f.pd < buf || f.pd + f.pd_len > buf + n))
        abort();
    uint8_t out[UIW_MPA_HDR_LEN + UIW_MPA_PD_MAX];
    ssize_t m = uiw_mpa_frame_encode(&f, out, sizeof out);
    if (m != n || memcmp(out, buf, (size_t)n) != 0)
        abort();
    /* the frame minus its last byte is truncated */
    struct uiw_mpa_frame g;
    if (uiw_mpa_frame_parse(kind, buf, (size_t)n - 1, cap, &g) != UIW_E_MPA_TRUNCATED)
        abort();
    return 0;
}
