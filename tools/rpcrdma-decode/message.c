#include "rpcrdma.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <uiw/error.h>
#include <uiw/rpcrdma.h>

#include "schema.h"

static uint32_t word(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

const char *rd_error_name(int code, uint32_t vers)
{
    if (vers == UIW_RPCRDMA_VERS1)
        return code == UIW_E_RPCRDMA_VERS ? "ERR_VERS" : "ERR_CHUNK";
    if (code == UIW_E_RPCRDMA_VERS)
        return "RDMA2_ERR_VERS";
    if (code == UIW_E_RPCRDMA_INVAL_PROC)
        return "RDMA2_ERR_INVAL_PROC";
    return "RDMA2_ERR_BAD_XDR";
}

/* The schema for a header of version vers, or NULL with *code set when the version is
 * not supported. Any version's ERROR / ERR_VERS reply decodes (its layout is fixed for
 * all versions), with the Version Two names. */
static const struct rd_xtype *schema_for(const uint8_t *msg, size_t len, uint32_t vers, int *code)
{
    if (vers == UIW_RPCRDMA_VERS1)
        return &rd_v1_header;
    if (vers == UIW_RPCRDMA_VERS2)
        return &rd_v2_header;
    if (len >= UIW_RPCRDMA_FIXED_LEN + 12 && word(msg + 12) == UIW_RDMA_ERROR &&
        word(msg + 16) == UIW_RDMA_ERR_VERS)
        return &rd_v2_header;
    *code = UIW_E_RPCRDMA_VERS;
    return NULL;
}

static void put_error(struct rd_buf *out, size_t start, const char *name)
{
    out->len = start;
    rd_buf_puts(out, "{\"error\":\"");
    rd_buf_puts(out, name);
    rd_buf_puts(out, "\"}");
}

int rd_decode_message(const uint8_t *msg, size_t len, int opts, struct rd_buf *out)
{
    size_t start = out->len;
    if (len < 8) {
        /* Not even rdma_vers: nothing to recognize. */
        put_error(out, start, rd_error_name(UIW_E_RPCRDMA_TRUNCATED, 0));
        return out->oom ? -ENOMEM : 1;
    }
    uint32_t vers = word(msg + 4);
    int code = 0;
    const struct rd_xtype *t = schema_for(msg, len, vers, &code);
    long hlen = t ? rd_xdr_decode(t, msg, len, out) : code;
    if (hlen == -ENOMEM || out->oom)
        return -ENOMEM;
    if (hlen < 0) {
        put_error(out, start, rd_error_name((int)hlen, vers));
        return out->oom ? -ENOMEM : 1;
    }
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
    if ((opts & RD_OPT_RPC) && word(msg + 12) == UIW_RDMA_MSG) {
        rd_buf_puts(out, ",\"rpc\":");
        size_t at = out->len;
        long r = rd_xdr_decode(&rd_rpc_header, msg + hlen, plen, out);
        if (r == -ENOMEM || out->oom)
            return -ENOMEM;
        if (r < 0) {
            out->len = at;
            rd_buf_puts(out, "null");
        }
    }
    rd_buf_puts(out, "}");
    return out->oom ? -ENOMEM : 0;
}

static const char *const top_extras[] = {"header_length", "payload_length", "payload", "rpc", NULL};

int rd_encode_message(const struct rd_jdoc *doc, struct rd_buf *out, char *err, size_t errlen)
{
    const struct rd_jval *root = rd_json_at(doc, doc->root);
    if (!root || root->type != RD_JOBJ) {
        snprintf(err, errlen, "(top level): expected an object");
        return -EINVAL;
    }
    const struct rd_jval *vers = rd_json_get(doc, root, "rdma_vers");
    if (!vers || vers->type != RD_JINT || vers->neg || vers->u > UINT32_MAX) {
        snprintf(err, errlen, "rdma_vers: missing or not an integer 0..4294967295");
        return -EINVAL;
    }
    /* Versions other than 1 use the Version Two XDR (as the decoder names them). */
    const struct rd_xtype *t = vers->u == UIW_RPCRDMA_VERS1 ? &rd_v1_header : &rd_v2_header;
    int r = rd_xdr_encode(t, doc, root, top_extras, out, err, errlen);
    if (r != 0)
        return r;
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
