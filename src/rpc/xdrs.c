/*
 * The XDR streams the RPC layer hands to xdr routines (rpcgen's and libtirpc's): their
 * put/get of bytes moves an opaque or string of at least the DDP threshold by RDMA (RFC
 * 8166 sections 3.4-3.5) instead of copying it through the message:
 *
 *   call encode:  the item becomes a Read chunk at its XDR position (the caller's memory,
 *                 registered when the call is sent); its length word stays inline, its
 *                 bytes and XDR pad do not;
 *   reply encode: the item goes to the call's next Write chunk (RDMA Write from where it
 *                 is), with the same omissions;
 *   call decode:  reads the reassembled stream (inline bytes and pulled Read chunks);
 *   reply decode: an item the caller set up a buffer for (the Write chunk's target) is
 *                 already there, or is copied from its chunk; its pad is not inline.
 *
 * libtirpc's xdr_opaque() writes an item's bytes then its pad with a second put/get of
 * 1-3 bytes: that second call is what pad_skip drops.
 */
#include <errno.h>
#include <string.h>

#include "common/byteorder.h"
#include "common/compiler.h"
#include "rpc/rpc_internal.h"
#include "rpc/xdr_pad.h"

_Thread_local struct uiw__rr_call *uiw__xs_freeing;

static const struct xdr_ops xs_ops;

struct uiw__xs *uiw__xs_of(XDR *xdrs)
{
    return xdrs && xdrs->x_ops == &xs_ops ? (struct uiw__xs *)xdrs : NULL;
}

static uint32_t pad_of(uint32_t n)
{
    return (4 - (n & 3)) & 3;
}

/* ---------------------------------------------------------------- encoding */

/* The output buffer of an encoding stream. */
static uint8_t *out_buf(struct uiw__xs *s, uint32_t **len, uint32_t *cap)
{
    if (s->mode == UIW__XS_CALL_ENC) {
        *len = &s->q->len;
        *cap = uiw__rr_req_cap(s->dev, s->q);
        return uiw__rr_req_payload(s->q);
    }
    *len = &s->k->rlen;
    *cap = s->k->rcap;
    return s->k->rp;
}

/* Room for n more bytes: a pointer to them (length advanced), or NULL. */
UIW__DATAPATH static uint8_t *room(struct uiw__xs *s, uint32_t n)
{
    uint32_t *len, cap;
    uint8_t *b = out_buf(s, &len, &cap);
    if (*len + n > cap) {
        int r = s->mode == UIW__XS_CALL_ENC ? uiw__rr_req_grow(s->dev, s->q, *len + n)
                                            : uiw__rr_reply_grow(s->k, *len + n);
        if (r) {
            s->err = r;
            return NULL;
        }
        b = out_buf(s, &len, &cap);
    }
    uint8_t *p = b + *len;
    *len += n;
    s->xpos += n;
    return p;
}

UIW__DATAPATH static bool_t enc_putlong(XDR *xdrs, const long *lp)
{
    struct uiw__xs *s = (struct uiw__xs *)xdrs;
    s->pad_skip = 0;
    uint8_t *p = room(s, 4);
    if (!p)
        return FALSE;
    uiw__put_be32(p, (uint32_t)*lp);
    return TRUE;
}

UIW__DATAPATH static bool_t enc_putbytes(XDR *xdrs, const char *cp, u_int n)
{
    struct uiw__xs *s = (struct uiw__xs *)xdrs;
    if (s->pad_skip) {
        bool pad = n == s->pad_skip;
        s->pad_skip = 0;
        if (pad)
            return TRUE; /* the pad of the item that went to a chunk */
    }
    if (n == 0)
        return TRUE;
    if (s->threshold && n >= s->threshold) {
        if (s->mode == UIW__XS_CALL_ENC && s->q->nreads < UIW__RR_MAX_CHUNKS && !s->q->no_ddp) {
            struct uiw__rr_region *r = &s->q->reads[s->q->nreads++];
            r->addr = (void *)(uintptr_t)cp;
            r->len = n;
            r->pos = s->xpos;
            r->mr = NULL;
            s->xpos += n + pad_of(n);
            s->pad_skip = pad_of(n);
            return TRUE;
        }
        if (s->mode == UIW__XS_REPLY_ENC && uiw__rr_reply_ddp(s->k, cp, n)) {
            s->xpos += n + pad_of(n);
            s->pad_skip = pad_of(n);
            return TRUE;
        }
    }
    uint8_t *p = room(s, n);
    if (!p)
        return FALSE;
    memcpy(p, cp, n);
    return TRUE;
}

static int32_t *enc_inline(XDR *xdrs, u_int n)
{
    struct uiw__xs *s = (struct uiw__xs *)xdrs;
    s->pad_skip = 0;
    if (n & 3)
        return NULL;
    uint32_t *len, cap;
    uint8_t *b = out_buf(s, &len, &cap);
    if (*len + n > cap)
        return NULL;
    uint8_t *p = b + *len;
    *len += n;
    s->xpos += n;
    return (int32_t *)(void *)p;
}

/* ---------------------------------------------------------------- decoding */

/* Copy n bytes of the stream to dst (NULL: skip them). */
static bool take(struct uiw__xs *s, void *dst, uint32_t n)
{
    uint8_t *d = dst;
    if (s->mode == UIW__XS_CALL_DEC) {
        const struct uiw__rr_call *k = s->k;
        while (n) {
            if (s->pi >= k->npieces)
                return false;
            const struct uiw__rr_piece *p = &k->pieces[s->pi];
            uint32_t have = p->len - s->poff, m = n < have ? n : have;
            if (d) {
                memcpy(d, p->p + s->poff, m);
                d += m;
            }
            s->poff += m;
            n -= m;
            s->xpos += m;
            if (s->poff == p->len) {
                s->pi++;
                s->poff = 0;
            }
        }
        return true;
    }
    if (n > s->in_len - s->in_off)
        return false;
    if (d)
        memcpy(d, s->in + s->in_off, n);
    s->in_off += n;
    s->xpos += n;
    return true;
}

/* A word across pieces, or at the end of one (the fast paths' exception: out of line, so
 * that they keep their registers). */
UIW__NOINLINE static bool_t dec_getlong_slow(struct uiw__xs *s, long *lp)
{
    uint8_t b[4];
    if (!take(s, b, 4))
        return FALSE;
    *lp = (long)(int32_t)uiw__get_be32(b);
    return TRUE;
}

UIW__DATAPATH static bool_t dec_getlong(XDR *xdrs, long *lp)
{
    struct uiw__xs *s = (struct uiw__xs *)xdrs;
    s->pad_skip = 0;
    s->pad_next = 0;
    if (s->mode != UIW__XS_CALL_DEC && s->in_len - s->in_off >= 4) {
        *lp = (long)(int32_t)uiw__get_be32(s->in + s->in_off);
        s->in_off += 4;
        s->xpos += 4;
        return TRUE;
    }
    /* a call's word within one piece (nearly every word: a piece ends only where a Read
     * chunk's bytes come in) */
    if (s->mode == UIW__XS_CALL_DEC && s->pi < s->k->npieces &&
        s->k->pieces[s->pi].len - s->poff > 4) {
        *lp = (long)(int32_t)uiw__get_be32(s->k->pieces[s->pi].p + s->poff);
        s->poff += 4;
        s->xpos += 4;
        return TRUE;
    }
    return dec_getlong_slow(s, lp);
}

/* The Write chunk that holds the item getbytes(cp, n) is decoding, or -1. */
static int reply_chunk_for(struct uiw__xs *s, const void *cp, uint32_t n)
{
    struct uiw__rr_req *q = s->q;
    for (uint32_t i = 0; i < q->nwrites; i++)
        if (!s->wused[i] && q->writes[i].addr == cp)
            return (int)i;
    if (s->threshold && n >= s->threshold)
        for (uint32_t i = 0; i < q->nwrites; i++)
            if (!s->wused[i] && q->wlen[i])
                return (int)i;
    return -1;
}

UIW__DATAPATH static bool_t dec_getbytes(XDR *xdrs, char *cp, u_int n)
{
    struct uiw__xs *s = (struct uiw__xs *)xdrs;
    /* The pad after an item goes to libtirpc's static scratch (shared by every thread):
     * consumed without being written anywhere. */
    uint32_t pad_next = s->pad_next;
    s->pad_next = 0;
    if (s->pad_skip) {
        bool pad = n == s->pad_skip;
        s->pad_skip = 0;
        if (pad)
            return TRUE; /* the pad of an item that came in a chunk is not inline */
    }
    if (n == 0)
        return TRUE;
    if (pad_next && n == pad_next)
        return take(s, NULL, n) ? TRUE : FALSE;
    if (s->mode == UIW__XS_REPLY_DEC && s->q->nwrites) {
        int i = reply_chunk_for(s, cp, n);
        if (i >= 0) {
            struct uiw__rr_req *q = s->q;
            s->wused[i] = true;
            if (q->wlen[i]) {
                /* the responder wrote the item into the chunk */
                if (q->wlen[i] != n)
                    return FALSE;
                if (cp != q->writes[i].addr)
                    memcpy(cp, q->writes[i].addr, n);
                s->xpos += n + pad_of(n);
                s->pad_skip = pad_of(n);
                return TRUE;
            }
            /* unused chunk: the item is inline, and must fit the buffer set up for it */
            if (cp == q->writes[i].addr && n > q->writes[i].len)
                return FALSE;
        }
    }
    if (!take(s, cp, n))
        return FALSE;
    s->pad_next = pad_of(n);
    return TRUE;
}

static int32_t *dec_inline(XDR *xdrs, u_int n)
{
    struct uiw__xs *s = (struct uiw__xs *)xdrs;
    s->pad_skip = 0;
    s->pad_next = 0;
    if (n & 3)
        return NULL;
    if (s->mode == UIW__XS_CALL_DEC) {
        if (s->pi >= s->k->npieces)
            return NULL;
        const struct uiw__rr_piece *p = &s->k->pieces[s->pi];
        if (p->len - s->poff < n)
            return NULL;
        int32_t *r = (int32_t *)(void *)(uintptr_t)(p->p + s->poff);
        s->poff += n;
        s->xpos += n;
        if (s->poff == p->len) {
            s->pi++;
            s->poff = 0;
        }
        return r;
    }
    if (s->in_len - s->in_off < n)
        return NULL;
    int32_t *r = (int32_t *)(void *)(uintptr_t)(s->in + s->in_off);
    s->in_off += n;
    s->xpos += n;
    return r;
}

/* ---------------------------------------------------------------- common ops */

static bool_t bad_getlong(XDR *xdrs, long *lp)
{
    (void)xdrs;
    (void)lp;
    return FALSE;
}

static bool_t bad_getbytes(XDR *xdrs, char *cp, u_int n)
{
    (void)xdrs;
    (void)cp;
    (void)n;
    return FALSE;
}

static bool_t bad_putlong(XDR *xdrs, const long *lp)
{
    (void)xdrs;
    (void)lp;
    return FALSE;
}

static bool_t bad_putbytes(XDR *xdrs, const char *cp, u_int n)
{
    (void)xdrs;
    (void)cp;
    (void)n;
    return FALSE;
}

static bool_t xs_getlong(XDR *xdrs, long *lp)
{
    return xdrs->x_op == XDR_DECODE ? dec_getlong(xdrs, lp) : bad_getlong(xdrs, lp);
}

static bool_t xs_putlong(XDR *xdrs, const long *lp)
{
    return xdrs->x_op == XDR_ENCODE ? enc_putlong(xdrs, lp) : bad_putlong(xdrs, lp);
}

static bool_t xs_getbytes(XDR *xdrs, char *cp, u_int n)
{
    return xdrs->x_op == XDR_DECODE ? dec_getbytes(xdrs, cp, n) : bad_getbytes(xdrs, cp, n);
}

static bool_t xs_putbytes(XDR *xdrs, const char *cp, u_int n)
{
    return xdrs->x_op == XDR_ENCODE ? enc_putbytes(xdrs, cp, n) : bad_putbytes(xdrs, cp, n);
}

static u_int xs_getpostn(XDR *xdrs)
{
    return ((struct uiw__xs *)xdrs)->xpos;
}

/* Only an encoding stream with no chunk yet may move back (to patch a word). */
static bool_t xs_setpostn(XDR *xdrs, u_int pos)
{
    struct uiw__xs *s = (struct uiw__xs *)xdrs;
    if (xdrs->x_op != XDR_ENCODE)
        return pos == s->xpos;
    uint32_t *len, cap;
    out_buf(s, &len, &cap);
    if (s->xpos != *len || pos > *len)
        return FALSE;
    *len = pos;
    s->xpos = pos;
    return TRUE;
}

static int32_t *xs_inline(XDR *xdrs, u_int n)
{
    return xdrs->x_op == XDR_ENCODE   ? enc_inline(xdrs, n)
           : xdrs->x_op == XDR_DECODE ? dec_inline(xdrs, n)
                                      : NULL;
}

static void xs_destroy(XDR *xdrs)
{
    (void)xdrs;
}

static bool_t xs_control(XDR *xdrs, int req, void *info)
{
    (void)xdrs;
    (void)req;
    (void)info;
    return FALSE;
}

static const struct xdr_ops xs_ops = {
    .x_getlong = xs_getlong,
    .x_putlong = xs_putlong,
    .x_getbytes = xs_getbytes,
    .x_putbytes = xs_putbytes,
    .x_getpostn = xs_getpostn,
    .x_setpostn = xs_setpostn,
    .x_inline = xs_inline,
    .x_destroy = xs_destroy,
    .x_control = xs_control,
};

/* ---------------------------------------------------------------- constructors */

static void base(struct uiw__xs *s, enum xdr_op op, enum uiw__xs_mode mode, uint32_t threshold)
{
    memset(s, 0, sizeof(*s));
    s->x.x_op = op;
    s->x.x_ops = (struct xdr_ops *)(uintptr_t)&xs_ops;
    s->mode = mode;
    s->threshold = threshold;
}

void uiw__xs_call_enc(struct uiw__xs *s, struct uiw__rr_dev *d, struct uiw__rr_req *q,
                      uint32_t threshold)
{
    base(s, XDR_ENCODE, UIW__XS_CALL_ENC, threshold);
    s->dev = d;
    s->q = q;
    s->xpos = q->len;
}

void uiw__xs_reply_enc(struct uiw__xs *s, struct uiw__rr_call *k, uint32_t threshold)
{
    base(s, XDR_ENCODE, UIW__XS_REPLY_ENC, threshold);
    s->dev = k->conn->dev;
    s->k = k;
    s->xpos = k->rlen;
}

void uiw__xs_call_dec(struct uiw__xs *s, struct uiw__rr_call *k, uint32_t from)
{
    base(s, XDR_DECODE, UIW__XS_CALL_DEC, 0);
    s->k = k;
    take(s, NULL, from);
}

void uiw__xs_reply_dec(struct uiw__xs *s, struct uiw__rr_req *q, uint32_t from, uint32_t threshold)
{
    base(s, XDR_DECODE, UIW__XS_REPLY_DEC, threshold);
    s->q = q;
    s->in = q->body;
    s->in_len = q->body_len;
    s->in_off = from <= q->body_len ? from : q->body_len;
    s->xpos = s->in_off;
}

uint32_t uiw__xs_len(const struct uiw__xs *s)
{
    if (s->mode == UIW__XS_CALL_ENC)
        return s->q->len;
    if (s->mode == UIW__XS_REPLY_ENC)
        return s->k->rlen;
    return s->xpos;
}

uint32_t uiw__xs_pos(const struct uiw__xs *s)
{
    return s->xpos;
}

/* ---------------------------------------------------------------- uiw_xdr_bytes */

/* If the stream is at a Read chunk of exactly `size` bytes, hand out its data in place. */
static const uint8_t *borrow(struct uiw__xs *s, uint32_t size)
{
    const struct uiw__rr_call *k = s->k;
    if (s->mode != UIW__XS_CALL_DEC || s->pi >= k->npieces || s->poff != 0)
        return NULL;
    const struct uiw__rr_piece *p = &k->pieces[s->pi];
    if (!p->chunk || p->len != size)
        return NULL;
    s->pi++;
    s->xpos += size;
    /* its pad, if any, is the next piece */
    uint32_t pad = pad_of(size);
    if (pad && !take(s, NULL, pad))
        return NULL;
    return p->p;
}

/* An item that came inline, whole within the piece the stream is at (the call's receive
 * buffer, or the Position-Zero Read chunk of an RDMA_NOMSG): pointed at where it lies,
 * its pad skipped. The stream holds the item and its pad (checked by the caller). */
static const uint8_t *borrow_inline(struct uiw__xs *s, uint32_t size)
{
    const struct uiw__rr_call *k = s->k;
    if (s->pi >= k->npieces)
        return NULL;
    const struct uiw__rr_piece *p = &k->pieces[s->pi];
    if (p->chunk || p->len - s->poff < size)
        return NULL;
    const uint8_t *at = p->p + s->poff;
    /* not a pad the reassembly supplied (no memory of the call's) */
    if (!uiw__rr_call_owns(k, at))
        return NULL;
    if (!take(s, NULL, size + pad_of(size)))
        return NULL;
    return at;
}

bool_t uiw_xdr_bytes(XDR *xdrs, char **cpp, u_int *sizep, u_int maxsize)
{
    /* xdr_free() hands a stream with only x_op set: x_ops is read after this case */
    if (xdrs->x_op == XDR_FREE) {
        struct uiw__rr_call *k = uiw__xs_freeing;
        if (*cpp && k && uiw__rr_call_owns(k, *cpp)) {
            *cpp = NULL; /* borrowed from the transport: not ours to free */
            return TRUE;
        }
        return uiw__xdr_bytes(xdrs, cpp, sizep, maxsize);
    }
    struct uiw__xs *s = uiw__xs_of(xdrs);
    if (!s || xdrs->x_op != XDR_DECODE || s->mode != UIW__XS_CALL_DEC || *cpp)
        return uiw__xdr_bytes(xdrs, cpp, sizep, maxsize);
    u_int size;
    if (!xdr_u_int(xdrs, &size) || size > maxsize)
        return FALSE;
    *sizep = size;
    if (size == 0)
        return TRUE;
    const uint8_t *p = borrow(s, size);
    if (p) {
        *cpp = (char *)(uintptr_t)p;
        return TRUE;
    }
    /* the length is the peer's word (up to 4 GiB for opaque<>): the stream must hold the
     * bytes and their pad before anything is allocated for them */
    if ((uint64_t)size + pad_of(size) > (uint64_t)(s->k->body_len - s->xpos))
        return FALSE;
    if ((p = borrow_inline(s, size)) != NULL) {
        *cpp = (char *)(uintptr_t)p;
        return TRUE;
    }
    /* across pieces (a Read chunk's data next to inline bytes): a copy */
    char *buf = calloc(1, size);
    if (!buf)
        return FALSE;
    if (!uiw__xdr_opaque(xdrs, buf, size)) {
        free(buf);
        return FALSE;
    }
    *cpp = buf;
    return TRUE;
}
