/* RPC-over-RDMA header codec: Version One and Two decoding and encoding, in one unit so
 * that the compiler inlines the whole path. Names and helpers are in xdr_common.c. */
#include <errno.h>
#include <string.h>

#include <uiw/rpcrdma.h>

#include "rpcrdma/xdr_internal.h"

#define UIW__HOT static inline __attribute__((always_inline))

/* ---------------------------------------------------------------------------------------
 * Chunk lists
 * ------------------------------------------------------------------------------------- */

/* A segment at r (the caller checked that 16 bytes are left). */
UIW__HOT void dec_segment(struct uiw__xdr_rd *r, struct uiw_rpcrdma_segment *s)
{
    const uint8_t *p = r->p + r->off;
    s->handle = uiw__xdr_ld32(p);
    s->length = uiw__xdr_ld32(p + 4);
    s->offset = uiw__xdr_ld64(p + 8);
    r->off += 16;
}

UIW__HOT int dec_write_chunk(struct uiw__xdr_rd *r, struct uiw_rpcrdma_write_chunk *wc,
                             const struct uiw_rpcrdma_space *sp, uint32_t *segs_used)
{
    uint32_t n;
    int rc = uiw__xdr_u32(r, &n);
    if (rc)
        return rc;
    if (n > sp->max_segs_per_chunk || n > sp->max_segs - *segs_used)
        return UIW_E_RPCRDMA_CAP_SEGS;
    if ((uint64_t)n * 16 > uiw__xdr_left(r))
        return UIW_E_RPCRDMA_TRUNCATED;
    wc->nsegs = n;
    wc->segs = sp->segs + *segs_used;
    for (uint32_t i = 0; i < n; i++)
        dec_segment(r, &wc->segs[i]);
    *segs_used += n;
    return 0;
}

static const struct uiw_rpcrdma_space no_space;

UIW__HOT int dec_lists_body(struct uiw__xdr_rd *r, struct uiw_rpcrdma_chunks *c,
                            const struct uiw_rpcrdma_space *sp)
{
    uint32_t more, segs_used = 0;
    int rc;

    if (!sp)
        sp = &no_space;
    c->nreads = 0;
    c->reads = sp->reads;
    c->nwrites = 0;
    c->writes = sp->writes;
    c->has_reply = false;
    c->reply.nsegs = 0;
    c->reply.segs = NULL;

    for (;;) {
        if ((rc = uiw__xdr_bool(r, &more)) != 0)
            return rc;
        if (!more)
            break;
        if (c->nreads >= sp->max_reads)
            return UIW_E_RPCRDMA_CAP_READS;
        if (uiw__xdr_left(r) < 20)
            return UIW_E_RPCRDMA_TRUNCATED;
        struct uiw_rpcrdma_read_segment *rs = &sp->reads[c->nreads++];
        uiw__xdr_u32(r, &rs->position);
        dec_segment(r, &rs->target);
    }
    for (;;) {
        if ((rc = uiw__xdr_bool(r, &more)) != 0)
            return rc;
        if (!more)
            break;
        if (c->nwrites >= sp->max_writes)
            return UIW_E_RPCRDMA_CAP_WRITES;
        if ((rc = dec_write_chunk(r, &sp->writes[c->nwrites], sp, &segs_used)) != 0)
            return rc;
        c->nwrites++;
    }
    if ((rc = uiw__xdr_bool(r, &more)) != 0)
        return rc;
    if (more) {
        if ((rc = dec_write_chunk(r, &c->reply, sp, &segs_used)) != 0)
            return rc;
        c->has_reply = true;
    }
    return 0;
}

UIW__HOT void put_segment(uint8_t *p, const struct uiw_rpcrdma_segment *s)
{
    uiw__xdr_st32(p, s->handle);
    uiw__xdr_st32(p + 4, s->length);
    uiw__xdr_st64(p + 8, s->offset);
}

/* A present write chunk: the optional-data word 1, the count, the segments. */
UIW__HOT int enc_write_chunk(struct uiw__xdr_wr *w, const struct uiw_rpcrdma_write_chunk *wc)
{
    if (wc->nsegs && !wc->segs)
        return -EINVAL;
    size_t n = 8 + (size_t)wc->nsegs * 16;
    if (uiw__xdr_room(w, n))
        return UIW_E_RPCRDMA_NOSPC;
    if (w->p) {
        uint8_t *p = w->p + w->off;
        uiw__xdr_st32(p, 1);
        uiw__xdr_st32(p + 4, wc->nsegs);
        p += 8;
        for (uint32_t i = 0; i < wc->nsegs; i++, p += 16)
            put_segment(p, &wc->segs[i]);
    }
    w->off += n;
    return 0;
}

UIW__HOT int enc_lists_body(struct uiw__xdr_wr *w, const struct uiw_rpcrdma_chunks *c)
{
    int rc;

    if ((c->nreads && !c->reads) || (c->nwrites && !c->writes))
        return -EINVAL;
    size_t n = (size_t)c->nreads * 24 + 4;
    if (uiw__xdr_room(w, n))
        return UIW_E_RPCRDMA_NOSPC;
    if (w->p) {
        uint8_t *p = w->p + w->off;
        for (uint32_t i = 0; i < c->nreads; i++, p += 24) {
            uiw__xdr_st32(p, 1);
            uiw__xdr_st32(p + 4, c->reads[i].position);
            put_segment(p + 8, &c->reads[i].target);
        }
        uiw__xdr_st32(p, 0);
    }
    w->off += n;
    for (uint32_t i = 0; i < c->nwrites; i++)
        if ((rc = enc_write_chunk(w, &c->writes[i])) != 0)
            return rc;
    if ((rc = uiw__xdr_put32(w, 0)) != 0)
        return rc;
    if (c->has_reply)
        return enc_write_chunk(w, &c->reply);
    return uiw__xdr_put32(w, 0);
}

/* The list codecs work on a local copy of the reader / writer: segment stores (uint64_t)
 * and byte stores may alias the cursor, which would keep it out of registers. */
static int uiw__rpcrdma_dec_lists(struct uiw__xdr_rd *r, struct uiw_rpcrdma_chunks *c,
                                  const struct uiw_rpcrdma_space *sp)
{
    struct uiw__xdr_rd lr = *r;
    int rc = dec_lists_body(&lr, c, sp);
    r->off = lr.off;
    return rc;
}

static int uiw__rpcrdma_enc_lists(struct uiw__xdr_wr *w, const struct uiw_rpcrdma_chunks *c)
{
    struct uiw__xdr_wr lw = *w;
    int rc = enc_lists_body(&lw, c);
    w->off = lw.off;
    return rc;
}

/* ---------------------------------------------------------------------------------------
 * ERROR bodies
 * ------------------------------------------------------------------------------------- */

/* Which error codes version `vers` defines: v1 VERS and CHUNK, v2 1..6, other versions
 * (seen only in ERR_VERS replies) VERS. */
static bool errcode_defined(uint32_t code, uint32_t vers)
{
    if (vers == UIW_RPCRDMA_VERS1)
        return code == UIW_RDMA_ERR_VERS || code == UIW_RDMA_ERR_CHUNK;
    if (vers == UIW_RPCRDMA_VERS2)
        return code >= UIW_RDMA_ERR_VERS && code <= UIW_RDMA2_ERR_SYSTEM;
    return code == UIW_RDMA_ERR_VERS;
}

static int uiw__rpcrdma_dec_error(struct uiw__xdr_rd *r, struct uiw_rpcrdma_error *e, uint32_t vers)
{
    int rc;

    memset(e, 0, sizeof(*e));
    if ((rc = uiw__xdr_u32(r, &e->errcode)) != 0)
        return rc;
    if (!errcode_defined(e->errcode, vers))
        return UIW_E_RPCRDMA_BAD_ERRCODE;
    if (e->errcode == UIW_RDMA_ERR_VERS) {
        if ((rc = uiw__xdr_u32(r, &e->vers_low)) != 0)
            return rc;
        return uiw__xdr_u32(r, &e->vers_high);
    }
    if (e->errcode == UIW_RDMA2_ERR_REPLY_RESOURCE) {
        if ((rc = uiw__xdr_u32(r, &e->segment_index)) != 0)
            return rc;
        return uiw__xdr_u32(r, &e->length_needed);
    }
    return 0;
}

static int uiw__rpcrdma_enc_error(struct uiw__xdr_wr *w, const struct uiw_rpcrdma_error *e,
                                  uint32_t vers)
{
    if (!errcode_defined(e->errcode, vers))
        return -EINVAL;
    bool two = e->errcode == UIW_RDMA_ERR_VERS || e->errcode == UIW_RDMA2_ERR_REPLY_RESOURCE;
    if (uiw__xdr_room(w, two ? 12 : 4))
        return UIW_E_RPCRDMA_NOSPC;
    uiw__xdr_put32(w, e->errcode);
    if (e->errcode == UIW_RDMA_ERR_VERS) {
        uiw__xdr_put32(w, e->vers_low);
        uiw__xdr_put32(w, e->vers_high);
    } else if (e->errcode == UIW_RDMA2_ERR_REPLY_RESOURCE) {
        uiw__xdr_put32(w, e->segment_index);
        uiw__xdr_put32(w, e->length_needed);
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * Version One bodies (RFC 8166 section 4.3)
 * ------------------------------------------------------------------------------------- */

UIW__HOT int uiw__rpcrdma1_dec_body(struct uiw__xdr_rd *r, struct uiw_rpcrdma_hdr *h,
                                    const struct uiw_rpcrdma_space *sp)
{
    switch (h->proc) {
    case UIW_RDMA_MSG:
    case UIW_RDMA_NOMSG:
        h->u.chunks.direction = 0;
        h->u.chunks.inv_handle = 0;
        return uiw__rpcrdma_dec_lists(r, &h->u.chunks, sp);
    case UIW_RDMA_ERROR:
        return uiw__rpcrdma_dec_error(r, &h->u.error, UIW_RPCRDMA_VERS1);
    case UIW_RDMA_MSGP:
    case UIW_RDMA_DONE:
        return UIW_E_RPCRDMA_V1_REFUSED_PROC;
    default:
        return UIW_E_RPCRDMA_V1_BAD_PROC;
    }
}

UIW__HOT int uiw__rpcrdma1_enc_body(struct uiw__xdr_wr *w, const struct uiw_rpcrdma_hdr *h)
{
    switch (h->proc) {
    case UIW_RDMA_MSG:
    case UIW_RDMA_NOMSG:
        return uiw__rpcrdma_enc_lists(w, &h->u.chunks);
    case UIW_RDMA_ERROR:
        return uiw__rpcrdma_enc_error(w, &h->u.error, UIW_RPCRDMA_VERS1);
    default:
        return -EINVAL; /* MSGP and DONE are not to be used; others do not exist */
    }
}

/* ---------------------------------------------------------------------------------------
 * Version Two bodies (draft-cel-nfsv4-rpcrdma-version-two-03 section 6.2)
 * ------------------------------------------------------------------------------------- */

static int dec_dir(struct uiw__xdr_rd *r, uint32_t *dir)
{
    int rc = uiw__xdr_u32(r, dir);
    if (rc)
        return rc;
    return *dir > UIW_RPCRDMA_REPLY ? UIW_E_RPCRDMA_BAD_ENUM : 0;
}

UIW__HOT int dec_propset_body(struct uiw__xdr_rd *r, struct uiw_rpcrdma_propset *ps,
                              const struct uiw_rpcrdma_space *sp, uint32_t *used)
{
    uint32_t n;
    int rc = uiw__xdr_u32(r, &n);
    if (rc)
        return rc;
    uint32_t cap = sp ? sp->max_props : 0;
    if (n > cap - *used)
        return UIW_E_RPCRDMA_CAP_PROPS;
    if ((uint64_t)n * 8 > uiw__xdr_left(r))
        return UIW_E_RPCRDMA_TRUNCATED;
    ps->n = n;
    ps->props = n ? sp->props + *used : NULL;
    const uint8_t *q = r->p + r->off;
    size_t left = uiw__xdr_left(r);
    for (uint32_t i = 0; i < n; i++) {
        struct uiw_rpcrdma_prop *p = &ps->props[i];
        if (left < 8)
            return UIW_E_RPCRDMA_TRUNCATED;
        uint32_t which = uiw__xdr_ld32(q), len = uiw__xdr_ld32(q + 4);
        uint64_t padded = ((uint64_t)len + 3) & ~(uint64_t)3;
        if (padded > left - 8)
            return UIW_E_RPCRDMA_TRUNCATED;
        const uint8_t *data = q + 8;
        if (len & 3) {
            /* the pad bytes: the low (4 - len % 4) bytes of the last word */
            uint32_t last = uiw__xdr_ld32(data + padded - 4);
            if (last & ((1u << (8 * (4 - (len & 3)))) - 1))
                return UIW_E_RPCRDMA_BAD_PAD;
        }
        p->which = which;
        p->len = len;
        p->data = data;
        p->value = len == 4 ? uiw__xdr_ld32(data) : 0;
        if (which == UIW_RPCRDMA_PROP_RBSIZ || which == UIW_RPCRDMA_PROP_BRS) {
            if ((rc = uiw__rpcrdma_prop_check(p)) != 0)
                return rc;
            if (len == 0)
                p->value = which == UIW_RPCRDMA_PROP_RBSIZ ? UIW_RPCRDMA_RBSIZ_DEFAULT
                                                           : UIW_RDMA2_BKREQSUP_INLINE;
        }
        q += 8 + padded;
        left -= 8 + (size_t)padded;
    }
    r->off = (size_t)(q - r->p);
    *used += n;
    return 0;
}

UIW__HOT int dec_propset(struct uiw__xdr_rd *r, struct uiw_rpcrdma_propset *ps,
                         const struct uiw_rpcrdma_space *sp, uint32_t *used)
{
    struct uiw__xdr_rd lr = *r;
    int rc = dec_propset_body(&lr, ps, sp, used);
    r->off = lr.off;
    return rc;
}

UIW__HOT int dec_subset(struct uiw__xdr_rd *r, struct uiw_rpcrdma_propsubset *s)
{
    uint32_t n;
    int rc = uiw__xdr_u32(r, &n);
    if (rc)
        return rc;
    if ((uint64_t)n * 4 > uiw__xdr_left(r))
        return UIW_E_RPCRDMA_TRUNCATED;
    s->nwords = n;
    s->wire = r->p + r->off;
    r->off += (size_t)n * 4;
    return 0;
}

UIW__HOT int uiw__rpcrdma2_dec_body(struct uiw__xdr_rd *r, struct uiw_rpcrdma_hdr *h,
                                    const struct uiw_rpcrdma_space *sp)
{
    uint32_t used = 0;
    int rc;

    switch (h->proc) {
    case UIW_RDMA_MSG:
    case UIW_RDMA_NOMSG:
        if ((rc = dec_dir(r, &h->u.chunks.direction)) != 0)
            return rc;
        if ((rc = uiw__xdr_u32(r, &h->u.chunks.inv_handle)) != 0)
            return rc;
        return uiw__rpcrdma_dec_lists(r, &h->u.chunks, sp);
    case UIW_RDMA_ERROR:
        return uiw__rpcrdma_dec_error(r, &h->u.error, UIW_RPCRDMA_VERS2);
    case UIW_RDMA2_OPTIONAL:
        if ((rc = dec_dir(r, &h->u.optional.optdir)) != 0)
            return rc;
        if ((rc = uiw__xdr_u32(r, &h->u.optional.opttype)) != 0)
            return rc;
        return uiw__xdr_opaque(r, &h->u.optional.optinfo_len, &h->u.optional.optinfo);
    case UIW_RDMA2_CONNPROP:
        if ((rc = dec_propset(r, &h->u.connprop.start, sp, &used)) != 0)
            return rc;
        return dec_subset(r, &h->u.connprop.nochg);
    case UIW_RDMA2_REQPROP:
        return dec_propset(r, &h->u.reqprop.want, sp, &used);
    case UIW_RDMA2_RESPROP:
        if ((rc = dec_subset(r, &h->u.resprop.done)) != 0)
            return rc;
        if ((rc = dec_subset(r, &h->u.resprop.rejected)) != 0)
            return rc;
        return dec_propset(r, &h->u.resprop.other, sp, &used);
    case UIW_RDMA2_UPDPROP:
        return dec_propset(r, &h->u.updprop.now, sp, &used);
    default:
        return UIW_E_RPCRDMA_INVAL_PROC;
    }
}

UIW__HOT int enc_propset_body(struct uiw__xdr_wr *w, const struct uiw_rpcrdma_propset *ps)
{
    int rc;

    if (ps->n && !ps->props)
        return -EINVAL;
    /* Check everything and size the set first, then write without further checks. */
    size_t need = 4;
    for (uint32_t i = 0; i < ps->n; i++) {
        const struct uiw_rpcrdma_prop *p = &ps->props[i];
        if (!p->data && p->len != 0 && p->len != 4)
            return -EINVAL;
        if ((rc = uiw__rpcrdma_prop_check(p)) != 0)
            return rc;
        need += 8 + (((size_t)p->len + 3) & ~(size_t)3);
    }
    if (uiw__xdr_room(w, need))
        return UIW_E_RPCRDMA_NOSPC;
    if (w->p) {
        uint8_t *o = w->p + w->off;
        uiw__xdr_st32(o, ps->n);
        o += 4;
        for (uint32_t i = 0; i < ps->n; i++) {
            const struct uiw_rpcrdma_prop *p = &ps->props[i];
            size_t padded = ((size_t)p->len + 3) & ~(size_t)3;
            uiw__xdr_st32(o, p->which);
            uiw__xdr_st32(o + 4, p->len);
            if (!p->data) {
                if (p->len == 4)
                    uiw__xdr_st32(o + 8, p->value);
            } else if (p->len) {
                uiw__xdr_st32(o + 4 + padded, 0); /* the pad */
                if (p->len > 16) {
                    memcpy(o + 8, p->data, p->len);
                } else {
                    for (uint32_t k = 0; k < p->len; k++)
                        o[8 + k] = p->data[k];
                }
            }
            o += 8 + padded;
        }
    }
    w->off += need;
    return 0;
}

UIW__HOT int enc_propset(struct uiw__xdr_wr *w, const struct uiw_rpcrdma_propset *ps)
{
    struct uiw__xdr_wr lw = *w;
    int rc = enc_propset_body(&lw, ps);
    w->off = lw.off;
    return rc;
}

UIW__HOT int enc_subset(struct uiw__xdr_wr *w, const struct uiw_rpcrdma_propsubset *s)
{
    if (s->nwords && !s->wire)
        return -EINVAL;
    size_t n = (size_t)s->nwords * 4;
    if (uiw__xdr_room(w, 4 + n))
        return UIW_E_RPCRDMA_NOSPC;
    uiw__xdr_put32(w, s->nwords);
    if (w->p && n > 32) {
        memcpy(w->p + w->off, s->wire, n);
    } else if (w->p) {
        uint8_t *p = w->p + w->off;
        for (size_t i = 0; i < n; i += 4)
            uiw__xdr_st32(p + i, uiw__xdr_ld32(s->wire + i));
    }
    w->off += n;
    return 0;
}

UIW__HOT int uiw__rpcrdma2_enc_body(struct uiw__xdr_wr *w, const struct uiw_rpcrdma_hdr *h)
{
    int rc;

    switch (h->proc) {
    case UIW_RDMA_MSG:
    case UIW_RDMA_NOMSG:
        if (h->u.chunks.direction > UIW_RPCRDMA_REPLY)
            return -EINVAL;
        if ((rc = uiw__xdr_put32(w, h->u.chunks.direction)) != 0 ||
            (rc = uiw__xdr_put32(w, h->u.chunks.inv_handle)) != 0)
            return rc;
        return uiw__rpcrdma_enc_lists(w, &h->u.chunks);
    case UIW_RDMA_ERROR:
        return uiw__rpcrdma_enc_error(w, &h->u.error, UIW_RPCRDMA_VERS2);
    case UIW_RDMA2_OPTIONAL:
        if (h->u.optional.optdir > UIW_RPCRDMA_REPLY ||
            (h->u.optional.optinfo_len && !h->u.optional.optinfo))
            return -EINVAL;
        if ((rc = uiw__xdr_put32(w, h->u.optional.optdir)) != 0 ||
            (rc = uiw__xdr_put32(w, h->u.optional.opttype)) != 0)
            return rc;
        return uiw__xdr_put_opaque(w, h->u.optional.optinfo, h->u.optional.optinfo_len);
    case UIW_RDMA2_CONNPROP:
        if ((rc = enc_propset(w, &h->u.connprop.start)) != 0)
            return rc;
        return enc_subset(w, &h->u.connprop.nochg);
    case UIW_RDMA2_REQPROP:
        return enc_propset(w, &h->u.reqprop.want);
    case UIW_RDMA2_RESPROP:
        if ((rc = enc_subset(w, &h->u.resprop.done)) != 0 ||
            (rc = enc_subset(w, &h->u.resprop.rejected)) != 0)
            return rc;
        return enc_propset(w, &h->u.resprop.other);
    case UIW_RDMA2_UPDPROP:
        return enc_propset(w, &h->u.updprop.now);
    default:
        return -EINVAL;
    }
}

/* ---------------------------------------------------------------------------------------
 * Decode and encode entry points
 * ------------------------------------------------------------------------------------- */

enum { ANY_VERS = 0 };

static bool vers_known(uint32_t vers, uint32_t only)
{
    if (only != ANY_VERS)
        return vers == only;
    return vers >= UIW_RPCRDMA_VERS_MIN && vers <= UIW_RPCRDMA_VERS_MAX;
}

static int decode(const void *buf, size_t len, struct uiw_rpcrdma_hdr *h,
                  const struct uiw_rpcrdma_space *sp, uint32_t only)
{
    struct uiw__xdr_rd r = {buf, buf ? len : 0, UIW_RPCRDMA_FIXED_LEN};
    int rc;

    h->hdr_len = 0;
    if (r.len < UIW_RPCRDMA_FIXED_LEN) {
        /* Short: fill the fixed words that are there; an unknown version is reported as
         * such even in a short header. */
        uint32_t *fixed[4] = {&h->xid, &h->vers, &h->credit, &h->proc};
        h->nfixed = (uint32_t)(r.len / 4);
        for (uint32_t i = 0; i < 4; i++)
            *fixed[i] = i < h->nfixed ? uiw__xdr_ld32(r.p + 4 * i) : 0;
        if (h->nfixed >= 2 && !vers_known(h->vers, only))
            return UIW_E_RPCRDMA_VERS;
        return UIW_E_RPCRDMA_TRUNCATED;
    }
    h->xid = uiw__xdr_ld32(r.p);
    h->vers = uiw__xdr_ld32(r.p + 4);
    h->credit = uiw__xdr_ld32(r.p + 8);
    h->proc = uiw__xdr_ld32(r.p + 12);
    h->nfixed = 4;
    if (!vers_known(h->vers, only)) {
        /* ERR_VERS has the same layout in every version: accept it. */
        if (h->proc == UIW_RDMA_ERROR && uiw__rpcrdma_dec_error(&r, &h->u.error, 0) == 0) {
            h->hdr_len = (uint32_t)r.off;
            return (int)r.off;
        }
        return UIW_E_RPCRDMA_VERS;
    }
    if (h->vers == UIW_RPCRDMA_VERS1)
        rc = uiw__rpcrdma1_dec_body(&r, h, sp);
    else
        rc = uiw__rpcrdma2_dec_body(&r, h, sp);
    if (rc)
        return rc;
    if (r.off > (size_t)INT32_MAX)
        return UIW_E_RPCRDMA_TRUNCATED;
    h->hdr_len = (uint32_t)r.off;
    return (int)r.off;
}

int uiw_rpcrdma_decode(const void *buf, size_t len, struct uiw_rpcrdma_hdr *h,
                       const struct uiw_rpcrdma_space *sp)
{
    return decode(buf, len, h, sp, ANY_VERS);
}

int uiw_rpcrdma1_decode(const void *buf, size_t len, struct uiw_rpcrdma_hdr *h,
                        const struct uiw_rpcrdma_space *sp)
{
    return decode(buf, len, h, sp, UIW_RPCRDMA_VERS1);
}

int uiw_rpcrdma2_decode(const void *buf, size_t len, struct uiw_rpcrdma_hdr *h,
                        const struct uiw_rpcrdma_space *sp)
{
    return decode(buf, len, h, sp, UIW_RPCRDMA_VERS2);
}

static int finish(const struct uiw__xdr_wr *w)
{
    if (w->off > (size_t)INT32_MAX)
        return -EINVAL;
    return (int)w->off;
}

int uiw_rpcrdma_encode(void *buf, size_t cap, const struct uiw_rpcrdma_hdr *h)
{
    struct uiw__xdr_wr w = {buf, buf ? cap : 0, 0};
    int rc;

    if (h->vers != UIW_RPCRDMA_VERS1 && h->vers != UIW_RPCRDMA_VERS2)
        return -EINVAL;
    if (uiw__xdr_room(&w, UIW_RPCRDMA_FIXED_LEN))
        return UIW_E_RPCRDMA_NOSPC;
    if (w.p) {
        uiw__xdr_st32(w.p, h->xid);
        uiw__xdr_st32(w.p + 4, h->vers);
        uiw__xdr_st32(w.p + 8, h->credit);
        uiw__xdr_st32(w.p + 12, h->proc);
    }
    w.off = UIW_RPCRDMA_FIXED_LEN;
    if (h->vers == UIW_RPCRDMA_VERS1)
        rc = uiw__rpcrdma1_enc_body(&w, h);
    else
        rc = uiw__rpcrdma2_enc_body(&w, h);
    return rc ? rc : finish(&w);
}

int uiw_rpcrdma_encode_error(void *buf, size_t cap, uint32_t xid, uint32_t vers, uint32_t credit,
                             const struct uiw_rpcrdma_error *e)
{
    struct uiw__xdr_wr w = {buf, buf ? cap : 0, 0};
    int rc;

    if (!errcode_defined(e->errcode, vers))
        return -EINVAL;
    if (uiw__xdr_room(&w, UIW_RPCRDMA_FIXED_LEN))
        return UIW_E_RPCRDMA_NOSPC;
    uiw__xdr_put32(&w, xid);
    uiw__xdr_put32(&w, vers);
    uiw__xdr_put32(&w, credit);
    uiw__xdr_put32(&w, UIW_RDMA_ERROR);
    rc = uiw__rpcrdma_enc_error(&w, e, vers);
    return rc ? rc : finish(&w);
}

uint32_t uiw_rpcrdma_wire_error(int code, uint32_t vers)
{
    if (code > -2000 || code < -2099)
        return 0;
    switch (code) {
    case UIW_E_RPCRDMA_NOSPC:
        return 0; /* an encoder condition, not a decode failure */
    case UIW_E_RPCRDMA_VERS:
        return UIW_RDMA_ERR_VERS;
    case UIW_E_RPCRDMA_INVAL_PROC:
        return vers == UIW_RPCRDMA_VERS2 ? UIW_RDMA2_ERR_INVAL_PROC : UIW_RDMA_ERR_CHUNK;
    default:
        return UIW_RDMA2_ERR_BAD_XDR; /* == UIW_RDMA_ERR_CHUNK */
    }
}

int uiw_rpcrdma_encode_error_reply(void *buf, size_t cap, const struct uiw_rpcrdma_hdr *bad,
                                   int code, uint32_t credit)
{
    struct uiw_rpcrdma_error e = {0};

    e.errcode = uiw_rpcrdma_wire_error(code, bad->vers);
    if (!e.errcode || bad->nfixed < 2)
        return -EINVAL;
    if (e.errcode == UIW_RDMA_ERR_VERS) {
        e.vers_low = UIW_RPCRDMA_VERS_MIN;
        e.vers_high = UIW_RPCRDMA_VERS_MAX;
    }
    return uiw_rpcrdma_encode_error(buf, cap, bad->xid, bad->vers, credit, &e);
}
