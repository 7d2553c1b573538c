/* RFC 8797 connection private data (see uiw/rpcrdma.h). */
#include <errno.h>

#include <uiw/rpcrdma.h>

#include "common/byteorder.h"

int uiw_rpcrdma_cm_private_decode(const void *buf, size_t len, struct uiw_rpcrdma_cm_private *p)
{
    if (!buf || !p || len < UIW_RPCRDMA_CM_PRIVATE_LEN)
        return -EINVAL;
    const uint8_t *b = buf;
    p->magic = uiw__get_be32(b);
    p->version = b[4];
    p->reserved = (uint8_t)(b[5] >> 1);
    p->remote_invalidation = (b[5] & 1) != 0;
    p->send_size = ((uint32_t)b[6] + 1) * 1024u;
    p->recv_size = ((uint32_t)b[7] + 1) * 1024u;
    if (p->magic != UIW_RPCRDMA_CM_PRIVATE_MAGIC || p->version != UIW_RPCRDMA_CM_PRIVATE_VERSION)
        return -ENOENT;
    return 0;
}

static int size_code(uint32_t n, uint8_t *out)
{
    if (n < UIW_RPCRDMA_CM_SIZE_MIN || n > UIW_RPCRDMA_CM_SIZE_MAX || n % 1024)
        return -EINVAL;
    *out = (uint8_t)(n / 1024 - 1);
    return 0;
}

int uiw_rpcrdma_cm_private_encode(void *buf, size_t cap, const struct uiw_rpcrdma_cm_private *p)
{
    if (!p || (!buf && cap))
        return -EINVAL;
    uint8_t s, r;
    if (size_code(p->send_size, &s) || size_code(p->recv_size, &r) || p->reserved > 0x7F)
        return -EINVAL;
    if (cap < UIW_RPCRDMA_CM_PRIVATE_LEN)
        return -ENOSPC;
    uint8_t *b = buf;
    uiw__put_be32(b, p->magic);
    b[4] = p->version;
    b[5] = (uint8_t)(p->reserved << 1 | (p->remote_invalidation ? 1 : 0));
    b[6] = s;
    b[7] = r;
    return UIW_RPCRDMA_CM_PRIVATE_LEN;
}
