/* Random RPC-over-RDMA headers for the codec's tests. */
#include <string.h>

#include "rnd.h"

uint64_t rnd_next(uint64_t *s)
{
    /* xorshift64* */
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

uint32_t rnd_below(uint64_t *s, uint32_t n)
{
    return n ? (uint32_t)((rnd_next(s) >> 32) % n) : 0;
}

struct gen {
    uint64_t *seed;
    bool small;
    struct rnd_msg *m;
    size_t blob_used;
    uint32_t segs_used;
    uint32_t props_used;
};

static uint32_t w32(struct gen *g)
{
    uint32_t v = (uint32_t)(rnd_next(g->seed) >> 16);
    switch (rnd_below(g->seed, 4)) {
    case 0:
        v = rnd_below(g->seed, 8);
        break;
    case 1:
        v = 0xFFFFFFFFu - rnd_below(g->seed, 4);
        break;
    default:
        break;
    }
    return g->small ? v & 0xFFF : v;
}

static uint64_t w64(struct gen *g)
{
    if (g->small)
        return w32(g);
    return ((uint64_t)w32(g) << 32) | w32(g);
}

/* A count: mostly small, sometimes the cap. */
static uint32_t count(struct gen *g, uint32_t cap)
{
    uint32_t r = rnd_below(g->seed, 16);
    if (r == 0)
        return cap;
    if (r < 4)
        return 0;
    return rnd_below(g->seed, cap < 5 ? cap + 1 : 5);
}

static const uint8_t *bytes(struct gen *g, uint32_t n)
{
    uint8_t *p = g->m->blob + g->blob_used;
    /* Opaque data starts 4-aligned; in small mode its would-be words stay below 2^12. */
    for (uint32_t i = 0; i < n; i++)
        p[i] = g->small && i % 4 < 3 ? (i % 4 == 2 ? (uint8_t)(rnd_next(g->seed) & 0xF) : 0)
                                     : (uint8_t)rnd_next(g->seed);
    g->blob_used += n;
    return p;
}

static void segment(struct gen *g, struct uiw_rpcrdma_segment *s)
{
    s->handle = w32(g);
    s->length = w32(g);
    s->offset = w64(g);
}

static void write_chunk(struct gen *g, struct uiw_rpcrdma_write_chunk *wc)
{
    wc->nsegs = count(g, UIW_RPCRDMA_MAX_SEGS_PER_CHUNK);
    wc->segs = g->m->st.segs + g->segs_used;
    g->segs_used += wc->nsegs;
    for (uint32_t i = 0; i < wc->nsegs; i++)
        segment(g, &wc->segs[i]);
}

static void chunks(struct gen *g, struct uiw_rpcrdma_chunks *c, uint32_t vers)
{
    if (vers == 2) {
        c->direction = rnd_below(g->seed, 2);
        c->inv_handle = w32(g);
    }
    c->nreads = count(g, UIW_RPCRDMA_MAX_READS);
    c->reads = g->m->st.reads;
    for (uint32_t i = 0; i < c->nreads; i++) {
        c->reads[i].position = w32(g);
        segment(g, &c->reads[i].target);
    }
    c->nwrites = count(g, UIW_RPCRDMA_MAX_WRITES);
    c->writes = g->m->st.writes;
    for (uint32_t i = 0; i < c->nwrites; i++)
        write_chunk(g, &c->writes[i]);
    c->has_reply = rnd_below(g->seed, 2);
    if (c->has_reply)
        write_chunk(g, &c->reply);
}

static void propset(struct gen *g, struct uiw_rpcrdma_propset *ps)
{
    ps->n = count(g, UIW_RPCRDMA_MAX_PROPS - g->props_used);
    ps->props = ps->n ? g->m->st.props + g->props_used : NULL;
    g->props_used += ps->n;
    for (uint32_t i = 0; i < ps->n; i++) {
        struct uiw_rpcrdma_prop *p = &ps->props[i];
        uint32_t kind = rnd_below(g->seed, 3);
        memset(p, 0, sizeof(*p));
        if (kind == 0) {
            p->which = UIW_RPCRDMA_PROP_RBSIZ;
            p->len = rnd_below(g->seed, 4) ? 4 : 0;
            p->value = p->len ? UIW_RPCRDMA_RBSIZ_MIN + (w32(g) % 0xC00) : 0;
        } else if (kind == 1) {
            p->which = UIW_RPCRDMA_PROP_BRS;
            p->len = rnd_below(g->seed, 4) ? 4 : 0;
            p->value = p->len ? rnd_below(g->seed, 3) : 0;
        } else {
            p->which = 3 + w32(g) % 0xFFF0;
            p->len = rnd_below(g->seed, 13);
            p->data = bytes(g, p->len);
            if (p->len == 4)
                p->value = (uint32_t)p->data[0] << 24 | (uint32_t)p->data[1] << 16 |
                           (uint32_t)p->data[2] << 8 | p->data[3];
        }
        /* Known properties: half with explicit bytes, half by value. */
        if (kind < 2 && p->len == 4 && rnd_below(g->seed, 2)) {
            uint8_t *d = g->m->blob + g->blob_used;
            d[0] = (uint8_t)(p->value >> 24);
            d[1] = (uint8_t)(p->value >> 16);
            d[2] = (uint8_t)(p->value >> 8);
            d[3] = (uint8_t)p->value;
            g->blob_used += 4;
            p->data = d;
        }
    }
}

static void subset(struct gen *g, struct uiw_rpcrdma_propsubset *s)
{
    s->nwords = rnd_below(g->seed, 4);
    uint8_t *d = g->m->blob + g->blob_used;
    for (uint32_t i = 0; i < s->nwords; i++) {
        uint32_t v = w32(g);
        d[4 * i] = (uint8_t)(v >> 24);
        d[4 * i + 1] = (uint8_t)(v >> 16);
        d[4 * i + 2] = (uint8_t)(v >> 8);
        d[4 * i + 3] = (uint8_t)v;
    }
    g->blob_used += 4 * s->nwords;
    s->wire = s->nwords ? d : NULL;
}

void rnd_msg(struct rnd_msg *m, uint64_t *seed, uint32_t vers, int proc, bool small)
{
    static const uint32_t procs1[] = {0, 1, 4};
    static const uint32_t procs2[] = {0, 1, 4, 5, 6, 7, 8, 9};
    struct gen g = {seed, small, m, 0, 0, 0};
    struct uiw_rpcrdma_hdr *h = &m->h;

    memset(h, 0, sizeof(*h));
    h->xid = w32(&g);
    h->vers = vers;
    h->credit = w32(&g);
    if (proc >= 0)
        h->proc = (uint32_t)proc;
    else if (vers == 1)
        h->proc = procs1[rnd_below(seed, 3)];
    else
        h->proc = procs2[rnd_below(seed, 8)];

    switch (h->proc) {
    case UIW_RDMA_MSG:
    case UIW_RDMA_NOMSG:
        chunks(&g, &h->u.chunks, vers);
        break;
    case UIW_RDMA_ERROR:
        h->u.error.errcode = 1 + rnd_below(seed, vers == 1 ? 2 : 6);
        if (h->u.error.errcode == UIW_RDMA_ERR_VERS) {
            h->u.error.vers_low = w32(&g);
            h->u.error.vers_high = w32(&g);
        } else if (h->u.error.errcode == UIW_RDMA2_ERR_REPLY_RESOURCE) {
            h->u.error.segment_index = w32(&g);
            h->u.error.length_needed = w32(&g);
        }
        break;
    case UIW_RDMA2_OPTIONAL:
        h->u.optional.optdir = rnd_below(seed, 2);
        h->u.optional.opttype = w32(&g);
        h->u.optional.optinfo_len = rnd_below(seed, 4) ? rnd_below(seed, 70) : 0;
        h->u.optional.optinfo = bytes(&g, h->u.optional.optinfo_len);
        break;
    case UIW_RDMA2_CONNPROP:
        propset(&g, &h->u.connprop.start);
        subset(&g, &h->u.connprop.nochg);
        break;
    case UIW_RDMA2_REQPROP:
        propset(&g, &h->u.reqprop.want);
        break;
    case UIW_RDMA2_RESPROP:
        subset(&g, &h->u.resprop.done);
        subset(&g, &h->u.resprop.rejected);
        propset(&g, &h->u.resprop.other);
        break;
    case UIW_RDMA2_UPDPROP:
        propset(&g, &h->u.updprop.now);
        break;
    default:
        break;
    }
}

static bool seg_eq(const struct uiw_rpcrdma_segment *a, const struct uiw_rpcrdma_segment *b)
{
    return a->handle == b->handle && a->length == b->length && a->offset == b->offset;
}

static bool wc_eq(const struct uiw_rpcrdma_write_chunk *a, const struct uiw_rpcrdma_write_chunk *b)
{
    if (a->nsegs != b->nsegs)
        return false;
    for (uint32_t i = 0; i < a->nsegs; i++)
        if (!seg_eq(&a->segs[i], &b->segs[i]))
            return false;
    return true;
}

static bool bytes_eq(const uint8_t *a, const uint8_t *b, uint32_t n)
{
    return n == 0 || memcmp(a, b, n) == 0;
}

static uint32_t prop_u32(const struct uiw_rpcrdma_prop *p)
{
    if (!p->data)
        return p->value;
    return (uint32_t)p->data[0] << 24 | (uint32_t)p->data[1] << 16 | (uint32_t)p->data[2] << 8 |
           p->data[3];
}

static bool prop_eq(const struct uiw_rpcrdma_prop *a, const struct uiw_rpcrdma_prop *b)
{
    if (a->which != b->which || a->len != b->len)
        return false;
    if (a->len == 4)
        return prop_u32(a) == prop_u32(b);
    return !a->len || (a->data && b->data && bytes_eq(a->data, b->data, a->len));
}

static bool ps_eq(const struct uiw_rpcrdma_propset *a, const struct uiw_rpcrdma_propset *b)
{
    if (a->n != b->n)
        return false;
    for (uint32_t i = 0; i < a->n; i++)
        if (!prop_eq(&a->props[i], &b->props[i]))
            return false;
    return true;
}

static bool ss_eq(const struct uiw_rpcrdma_propsubset *a, const struct uiw_rpcrdma_propsubset *b)
{
    return a->nwords == b->nwords && bytes_eq(a->wire, b->wire, 4 * a->nwords);
}

bool rnd_hdr_equal(const struct uiw_rpcrdma_hdr *a, const struct uiw_rpcrdma_hdr *b)
{
    if (a->xid != b->xid || a->vers != b->vers || a->credit != b->credit || a->proc != b->proc)
        return false;
    switch (a->proc) {
    case UIW_RDMA_MSG:
    case UIW_RDMA_NOMSG: {
        const struct uiw_rpcrdma_chunks *x = &a->u.chunks, *y = &b->u.chunks;
        if (a->vers == 2 && (x->direction != y->direction || x->inv_handle != y->inv_handle))
            return false;
        if (x->nreads != y->nreads || x->nwrites != y->nwrites || x->has_reply != y->has_reply)
            return false;
        for (uint32_t i = 0; i < x->nreads; i++)
            if (x->reads[i].position != y->reads[i].position ||
                !seg_eq(&x->reads[i].target, &y->reads[i].target))
                return false;
        for (uint32_t i = 0; i < x->nwrites; i++)
            if (!wc_eq(&x->writes[i], &y->writes[i]))
                return false;
        return !x->has_reply || wc_eq(&x->reply, &y->reply);
    }
    case UIW_RDMA_ERROR: {
        const struct uiw_rpcrdma_error *x = &a->u.error, *y = &b->u.error;
        if (x->errcode != y->errcode)
            return false;
        if (x->errcode == UIW_RDMA_ERR_VERS)
            return x->vers_low == y->vers_low && x->vers_high == y->vers_high;
        if (x->errcode == UIW_RDMA2_ERR_REPLY_RESOURCE)
            return x->segment_index == y->segment_index && x->length_needed == y->length_needed;
        return true;
    }
    case UIW_RDMA2_OPTIONAL:
        return a->u.optional.optdir == b->u.optional.optdir &&
               a->u.optional.opttype == b->u.optional.opttype &&
               a->u.optional.optinfo_len == b->u.optional.optinfo_len &&
               bytes_eq(a->u.optional.optinfo, b->u.optional.optinfo, a->u.optional.optinfo_len);
    case UIW_RDMA2_CONNPROP:
        return ps_eq(&a->u.connprop.start, &b->u.connprop.start) &&
               ss_eq(&a->u.connprop.nochg, &b->u.connprop.nochg);
    case UIW_RDMA2_REQPROP:
        return ps_eq(&a->u.reqprop.want, &b->u.reqprop.want);
    case UIW_RDMA2_RESPROP:
        return ss_eq(&a->u.resprop.done, &b->u.resprop.done) &&
               ss_eq(&a->u.resprop.rejected, &b->u.resprop.rejected) &&
               ps_eq(&a->u.resprop.other, &b->u.resprop.other);
    case UIW_RDMA2_UPDPROP:
        return ps_eq(&a->u.updprop.now, &b->u.updprop.now);
    default:
        return true;
    }
}
