/* libFuzzer target: Terminate body parsing in both bit orders, and the code table. */
#include <stdlib.h>
#include <string.h>

#include <uiw/wire.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const enum uiw_term_order hints[] = {UIW_TERM_ORDER_AUTO, UIW_TERM_ORDER_RFC,
                                                UIW_TERM_ORDER_SIW};
    for (size_t i = 0; i < 3; i++) {
        struct uiw_terminate t;
        ssize_t n = uiw_terminate_parse_order(data, size, hints[i], &t);
        if (n < 0) {
            if (n != UIW_E_RDMAP_TRUNCATED && n != UIW_E_RDMAP_BAD_TERMINATE)
                abort();
            continue;
        }
        if ((size_t)n > size || n < 4)
            abort();
        const char *name = uiw_terminate_name(t.layer, t.etype, t.code);
        if (!name || !uiw_terminate_is_valid(t.layer, t.etype, t.code))
            abort();
        if (t.ambiguous && t.siw_order != (hints[i] == UIW_TERM_ORDER_SIW))
            abort();
        if (!t.siw_order && t.rdma_hdr_len == ((t.hdrct & UIW_TERM_FLAG_R) ? 28 : 0)) {
            /* an RFC-order message re-encodes to the bytes it came from, except the
             * segment length field, which is written as zero without M */
            uint8_t again[64];
            ssize_t m = uiw_terminate_encode(&t, again, sizeof(again));
            if (m != n)
                abort();
            bool d_only = (t.hdrct & (UIW_TERM_FLAG_M | UIW_TERM_FLAG_D)) == UIW_TERM_FLAG_D;
            if (d_only) {
                if (memcmp(again, data, 4) || memcmp(again + 6, data + 6, (size_t)n - 6))
                    abort();
            } else if (memcmp(again, data, (size_t)n)) {
                abort();
            }
        }
    }
    return 0;
}
