/*
 * One message <-> one JSON object: the header through the project's codec
 * (<uiw/rpcrdma.h>), then the payload and, under --rpc, the ONC RPC header.
 */
#include "rpcrdma.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <uiw/error.h>

static void put_error(struct rd_buf *out, size_t start, const char *name)
{
    out->len = start;
    rd_buf_puts(out, "{\"error\":\"");
    rd_buf_puts(out, name);
    rd_buf_puts(out, "\"}");
}

int rd_decode_message(const uint8_t *msg, size_t len, int opts, struct rd_buf *out)
{
    struct uiw_rpcrdma_space_default st;
    struct uiw_rpcrdma_space sp;
    struct uiw_rpcrdma_hdr h;
    size_t start = out->len;

    uiw_rpcrdma_space_init(&sp, &st);
    int hlen = uiw_rpcrdma_decode(msg, len, &h, &sp);
    if (hlen < 0) {
        /* The codec's verdict: the error code a receiver answers with, by its name in
         * the message's version (h.vers is 0 when the input did not reach it). */
        uint32_t nv = h.vers == UIW_RPCRDMA_VERS1 ? 1 : 2;
        const char *name = uiw_rpcrdma_errcode_name(uiw_rpcrdma_wire_error(hlen, h.vers), nv);
        put_error(out, start, name ? name : uiw_rpcrdma_errcode_name(UIW_RDMA_ERR_CHUNK, nv));
        return out->oom ? -ENOMEM : 1;
    }
    rd_render_header(&h, out);
    if (out->oom)
        return -ENOMEM;
    size_t plen = len - (size_t)hlen;
    if (plen == 0 && !(opts & RD_OPT_RPC))
        return 0;
    out->len--; /* reopen the top-level object */
    if (plen) {
        rd_buf_puts(out, ",\"header_length\":");
        rd_buf_u64(out, (uint64_t)hlen);
        rd_buf_puts(out, ",\"payload_length\":");
        rd_buf_u64(out, plen);
        if (!(opts & RD_OPT_NO_PAYLOAD)) {
            rd_buf_puts(out, ",\"payload\":\"");
            rd_buf_hex(out, msg + hlen, plen);
            rd_buf_puts(out, "\"");
        }
    }
    /* RDMA_MSG and RDMA2_MSG (both 0) carry the RPC message inline after the header. */
    if ((opts & RD_OPT_RPC) && h.proc == UIW_RDMA_MSG) {
        rd_buf_puts(out, ",\"rpc\":");
        if (rd_render_rpc(msg + hlen, plen, out) != 0)
            rd_buf_puts(out, "null");
    }
    rd_buf_puts(out, "}");
    return out->oom ? -ENOMEM : 0;
}

/* The keys a decoded line may carry beyond the header (--pcap adds the others). */
static const char *const top_extras[] = {
    "header_length", "payload_length", "payload", "rpc", "frame", "src", "dst", "backward", NULL};

int rd_encode_message(const struct rd_jdoc *doc, struct rd_scratch *sc, struct rd_buf *out,
                      char *err, size_t errlen)
{
    const struct rd_jval *root = rd_json_at(doc, doc->root);
    struct uiw_rpcrdma_hdr h;
    int r = rd_parse_header(doc, root, top_extras, sc, &h, err, errlen);
    if (r != 0)
        return r;

    /* Versions other than One and Two: only their ERR_VERS reply (rd_parse_header
     * checked), which has the same layout in every version. */
    int other = h.vers != UIW_RPCRDMA_VERS1 && h.vers != UIW_RPCRDMA_VERS2;
    int n = other ? uiw_rpcrdma_encode_error(NULL, 0, h.xid, h.vers, h.credit, &h.u.error)
                  : uiw_rpcrdma_encode(NULL, 0, &h);
    if (n >= 0) {
        uint8_t *p = rd_buf_reserve(out, (size_t)n);
        if (!p)
            return -ENOMEM;
        r = other ? uiw_rpcrdma_encode_error(p, (size_t)n, h.xid, h.vers, h.credit, &h.u.error)
                  : uiw_rpcrdma_encode(p, (size_t)n, &h);
        if (r != n) { /* the codec wrote a different length than it announced */
            snprintf(err, errlen, "internal error: the codec encoded %d bytes, not %d", r, n);
            return -EINVAL;
        }
    } else {
        /* The reader checks everything the codec refuses; should it refuse anyway, say
         * what it said. */
        snprintf(err, errlen, "the codec does not encode this header: %s", uiw_strerror(n));
        return -EINVAL;
    }

    const struct rd_jval *payload = rd_json_get(doc, root, "payload");
    if (payload) {
        if (payload->type != RD_JSTR ||
            rd_hex_decode(out, rd_json_str(doc, payload), payload->len, 0, 1) != 0) {
            snprintf(err, errlen, "payload: expected a lowercase hex string");
            return out->oom ? -ENOMEM : -EINVAL;
        }
    }
    return out->oom ? -ENOMEM : 0;
}
