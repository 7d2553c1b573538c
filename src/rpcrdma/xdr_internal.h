/* Internal: XDR reader and writer of the RPC-over-RDMA header codec (xdr_*.c). */
#ifndef UIW_RPCRDMA_XDR_INTERNAL_H
#define UIW_RPCRDMA_XDR_INTERNAL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <uiw/rpcrdma.h>

#include "common/byteorder.h"

/* Big-endian loads and stores as single (unaligned) memory accesses: byte-wise stores
 * through uint8_t pointers may alias the source and keep compilers from merging them. */
static inline uint32_t uiw__xdr_ld32(const uint8_t *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint32_t v;
    memcpy(&v, p, 4);
    return __builtin_bswap32(v);
#else
    return uiw__get_be32(p);
#endif
}

static inline uint64_t uiw__xdr_ld64(const uint8_t *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, p, 8);
    return __builtin_bswap64(v);
#else
    return uiw__get_be64(p);
#endif
}

static inline void uiw__xdr_st32(uint8_t *p, uint32_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap32(v);
    memcpy(p, &v, 4);
#else
    uiw__put_be32(p, v);
#endif
}

static inline void uiw__xdr_st64(uint8_t *p, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
    memcpy(p, &v, 8);
#else
    uiw__put_be64(p, v);
#endif
}

/* A bounded reader over the input: never reads past len. */
struct uiw__xdr_rd {
    const uint8_t *p;
    size_t len;
    size_t off;
};

static inline size_t uiw__xdr_left(const struct uiw__xdr_rd *r)
{
    return r->len - r->off;
}

static inline int uiw__xdr_u32(struct uiw__xdr_rd *r, uint32_t *v)
{
    if (uiw__xdr_left(r) < 4)
        return UIW_E_RPCRDMA_TRUNCATED;
    *v = uiw__xdr_ld32(r->p + r->off);
    r->off += 4;
    return 0;
}

static inline int uiw__xdr_u64(struct uiw__xdr_rd *r, uint64_t *v)
{
    if (uiw__xdr_left(r) < 8)
        return UIW_E_RPCRDMA_TRUNCATED;
    *v = uiw__xdr_ld64(r->p + r->off);
    r->off += 8;
    return 0;
}

/* XDR bool (optional-data discriminator): exactly 0 or 1. */
static inline int uiw__xdr_bool(struct uiw__xdr_rd *r, uint32_t *v)
{
    int rc = uiw__xdr_u32(r, v);
    if (rc)
        return rc;
    return *v > 1 ? UIW_E_RPCRDMA_BAD_BOOL : 0;
}

/* Variable-length opaque: length word, bytes, zero pad to 4. Points into the input. */
static inline int uiw__xdr_opaque(struct uiw__xdr_rd *r, uint32_t *len, const uint8_t **data)
{
    uint32_t n;
    int rc = uiw__xdr_u32(r, &n);
    if (rc)
        return rc;
    uint64_t padded = ((uint64_t)n + 3) & ~(uint64_t)3;
    if (padded > uiw__xdr_left(r))
        return UIW_E_RPCRDMA_TRUNCATED;
    const uint8_t *d = r->p + r->off;
    for (uint32_t i = n; i < padded; i++)
        if (d[i])
            return UIW_E_RPCRDMA_BAD_PAD;
    *len = n;
    *data = d;
    r->off += (size_t)padded;
    return 0;
}

/* A bounded writer; p == NULL only counts. */
struct uiw__xdr_wr {
    uint8_t *p;
    size_t cap;
    size_t off;
};

static inline int uiw__xdr_room(struct uiw__xdr_wr *w, size_t n)
{
    if (w->p && w->cap - w->off < n)
        return UIW_E_RPCRDMA_NOSPC;
    return 0;
}

static inline int uiw__xdr_put32(struct uiw__xdr_wr *w, uint32_t v)
{
    if (uiw__xdr_room(w, 4))
        return UIW_E_RPCRDMA_NOSPC;
    if (w->p)
        uiw__xdr_st32(w->p + w->off, v);
    w->off += 4;
    return 0;
}

static inline int uiw__xdr_put64(struct uiw__xdr_wr *w, uint64_t v)
{
    if (uiw__xdr_room(w, 8))
        return UIW_E_RPCRDMA_NOSPC;
    if (w->p)
        uiw__xdr_st64(w->p + w->off, v);
    w->off += 8;
    return 0;
}

/* Variable-length opaque with zero pad; data may be NULL only when n == 0. */
static inline int uiw__xdr_put_opaque(struct uiw__xdr_wr *w, const uint8_t *data, uint32_t n)
{
    size_t padded = ((size_t)n + 3) & ~(size_t)3;
    if (uiw__xdr_room(w, 4 + padded))
        return UIW_E_RPCRDMA_NOSPC;
    if (w->p) {
        uint8_t *p = w->p + w->off;
        uiw__xdr_st32(p, n);
        if (padded)
            uiw__xdr_st32(p + padded, 0); /* the last word first: it holds the pad */
        if (n > 16) {
            memcpy(p + 4, data, n);
        } else {
            for (size_t i = 0; i < n; i++)
                p[4 + i] = data[i];
        }
    }
    w->off += 4 + padded;
    return 0;
}

/* A known property's value check (see uiw_rpcrdma_prop_check). */
static inline int uiw__rpcrdma_prop_check(const struct uiw_rpcrdma_prop *p)
{
    if (p->which != UIW_RPCRDMA_PROP_RBSIZ && p->which != UIW_RPCRDMA_PROP_BRS)
        return 0;
    if (p->len == 0)
        return 0;
    if (p->len != 4)
        return UIW_E_RPCRDMA_BAD_PROP;
    uint32_t v = p->data ? uiw__xdr_ld32(p->data) : p->value;
    if (p->which == UIW_RPCRDMA_PROP_RBSIZ)
        return v >= UIW_RPCRDMA_RBSIZ_MIN ? 0 : UIW_E_RPCRDMA_BAD_PROP;
    return v <= UIW_RDMA2_BKREQSUP_GENL ? 0 : UIW_E_RPCRDMA_BAD_PROP;
}

#endif
