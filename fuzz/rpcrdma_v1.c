/* libFuzzer target: the RPC-over-RDMA Version One header decoder.
 * Oracles: no crash / over-read (ASan), a decoded header re-encodes to exactly the bytes
 * it came from, a failure maps to ERR_VERS or ERR_CHUNK and its error reply decodes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <uiw/rpcrdma.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct uiw_rpcrdma_space_default st;
    static uint8_t out[65536];
    struct uiw_rpcrdma_space sp;
    struct uiw_rpcrdma_hdr h, e;

    uiw_rpcrdma_space_init(&sp, &st);
    int rc = uiw_rpcrdma1_decode(data, size, &h, &sp);
    if (rc >= 0) {
        if ((size_t)rc > size || h.hdr_len != (uint32_t)rc)
            abort();
        int n = uiw_rpcrdma_encode(out, sizeof(out), &h);
        if (h.vers != 1) {
            /* only an ERR_VERS of another version decodes here; it encodes as an error */
            n = uiw_rpcrdma_encode_error(out, sizeof(out), h.xid, h.vers, h.credit, &h.u.error);
        }
        if (n != rc || memcmp(out, data, (size_t)n) != 0)
            abort();
        return 0;
    }
    uint32_t err = uiw_rpcrdma_wire_error(rc, 1);
    if (err != UIW_RDMA_ERR_VERS && err != UIW_RDMA_ERR_CHUNK)
        abort();
    if (h.nfixed >= 2) {
        int n = uiw_rpcrdma_encode_error_reply(out, sizeof(out), &h, rc, 1);
        if (n <= 0 || uiw_rpcrdma_decode(out, (size_t)n, &e, &sp) != n ||
            e.proc != UIW_RDMA_ERROR || e.u.error.errcode != err || e.xid != h.xid)
            abort();
    }
    return 0;
}
