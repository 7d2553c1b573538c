/* Differential tests of the Version Two codec against rpcgen + libtirpc
 * (xdr/rpcrdma_v2.x): random messages of every procedure both ways, and mutated
 * messages that libtirpc rejects must be rejected too. */
#include <string.h>

#include <uiw/rpcrdma.h>

#include "test.h"

#ifdef UIW_HAVE_RPCGEN
#include "mutate.h"
#include "rnd.h"
#include "rpcrdma_v2.h"

#define RUNS    100000
#define BUF_CAP 8192

/* Storage for the rpcgen form of one header (no allocation). */
struct g2_store {
    rpcrdma2_read_list rl[UIW_RPCRDMA_MAX_READS];
    rpcrdma2_write_list wl[UIW_RPCRDMA_MAX_WRITES];
    rpcrdma2_segment segs[(UIW_RPCRDMA_MAX_WRITES + 1) * UIW_RPCRDMA_MAX_SEGS_PER_CHUNK];
    rpcrdma2_write_chunk reply;
    rpcrdma2_propval pv[UIW_RPCRDMA_MAX_PROPS];
    uint8_t pvdata[UIW_RPCRDMA_MAX_PROPS][4];
    uint32 sub[2][8];
};

static void g2_chunk(const struct uiw_rpcrdma_write_chunk *c, rpcrdma2_write_chunk *g,
                     struct g2_store *s, size_t *used)
{
    g->rdma_target.rdma_target_len = c->nsegs;
    g->rdma_target.rdma_target_val = c->nsegs ? &s->segs[*used] : NULL;
    for (uint32_t i = 0; i < c->nsegs; i++) {
        s->segs[*used].rdma_handle = c->segs[i].handle;
        s->segs[*used].rdma_length = c->segs[i].length;
        s->segs[*used].rdma_offset = c->segs[i].offset;
        (*used)++;
    }
}

static void g2_propset(const struct uiw_rpcrdma_propset *ps, rpcrdma2_propset *g,
                       struct g2_store *s)
{
    g->rpcrdma2_propset_len = ps->n;
    g->rpcrdma2_propset_val = ps->n ? s->pv : NULL;
    for (uint32_t i = 0; i < ps->n; i++) {
        const struct uiw_rpcrdma_prop *p = &ps->props[i];
        s->pv[i].rdma_which = p->which;
        s->pv[i].rdma_data.rdma_data_len = p->len;
        if (p->data) {
            s->pv[i].rdma_data.rdma_data_val = (char *)(uintptr_t)p->data;
        } else {
            s->pvdata[i][0] = (uint8_t)(p->value >> 24);
            s->pvdata[i][1] = (uint8_t)(p->value >> 16);
            s->pvdata[i][2] = (uint8_t)(p->value >> 8);
            s->pvdata[i][3] = (uint8_t)p->value;
            s->pv[i].rdma_data.rdma_data_val = (char *)s->pvdata[i];
        }
    }
}

static void g2_subset(const struct uiw_rpcrdma_propsubset *ss, rpcrdma2_propsubset *g,
                      uint32 *words)
{
    g->rpcrdma2_propsubset_len = ss->nwords;
    g->rpcrdma2_propsubset_val = ss->nwords ? words : NULL;
    for (uint32_t i = 0; i < ss->nwords; i++)
        words[i] = uiw_rpcrdma_subset_word(ss, i);
}

/* The rpcgen struct for header h. */
static void to_g2(const struct uiw_rpcrdma_hdr *h, rpcrdma2_xprt_hdr *g, struct g2_store *s)
{
    memset(g, 0, sizeof(*g));
    g->rdma_xid = h->xid;
    g->rdma_vers = h->vers;
    g->rdma_credit = h->credit;
    g->rdma_body.rdma_proc = (rpcrdma2_proc)h->proc;
    switch (h->proc) {
    case UIW_RDMA_MSG:
    case UIW_RDMA_NOMSG: {
        const struct uiw_rpcrdma_chunks *c = &h->u.chunks;
        rpcrdma2_chunk_lists *gc = &g->rdma_body.rpcrdma2_body_u.rdma_chunks;
        size_t used = 0;
        gc->rdma_direction = (rpcrdma2_msg_type)c->direction;
        gc->rdma_inv_handle = c->inv_handle;
        for (uint32_t i = 0; i < c->nreads; i++) {
            s->rl[i].rdma_entry.rdma_position = c->reads[i].position;
            s->rl[i].rdma_entry.rdma_target.rdma_handle = c->reads[i].target.handle;
            s->rl[i].rdma_entry.rdma_target.rdma_length = c->reads[i].target.length;
            s->rl[i].rdma_entry.rdma_target.rdma_offset = c->reads[i].target.offset;
            s->rl[i].rdma_next = i + 1 < c->nreads ? &s->rl[i + 1] : NULL;
        }
        gc->rdma_reads = c->nreads ? s->rl : NULL;
        for (uint32_t i = 0; i < c->nwrites; i++) {
            g2_chunk(&c->writes[i], &s->wl[i].rdma_entry, s, &used);
            s->wl[i].rdma_next = i + 1 < c->nwrites ? &s->wl[i + 1] : NULL;
        }
        gc->rdma_writes = c->nwrites ? s->wl : NULL;
        if (c->has_reply)
            g2_chunk(&c->reply, &s->reply, s, &used);
        gc->rdma_reply = c->has_reply ? &s->reply : NULL;
        break;
    }
    case UIW_RDMA_ERROR: {
        rpcrdma2_error *e = &g->rdma_body.rpcrdma2_body_u.rdma_error;
        e->rdma_err = (rpcrdma2_errcode)h->u.error.errcode;
        if (h->u.error.errcode == UIW_RDMA_ERR_VERS) {
            e->rpcrdma2_error_u.rdma_vrange.rdma_vers_low = h->u.error.vers_low;
            e->rpcrdma2_error_u.rdma_vrange.rdma_vers_high = h->u.error.vers_high;
        } else if (h->u.error.errcode == UIW_RDMA2_ERR_REPLY_RESOURCE) {
            e->rpcrdma2_error_u.rdma_reply.rdma_segment_index = h->u.error.segment_index;
            e->rpcrdma2_error_u.rdma_reply.rdma_length_needed = h->u.error.length_needed;
        }
        break;
    }
    case UIW_RDMA2_OPTIONAL: {
        rpcrdma2_optional *o = &g->rdma_body.rpcrdma2_body_u.rdma_optional;
        o->rdma_optdir = (rpcrdma2_msg_type)h->u.optional.optdir;
        o->rdma_opttype = h->u.optional.opttype;
        o->rdma_optinfo.rdma_optinfo_len = h->u.optional.optinfo_len;
        o->rdma_optinfo.rdma_optinfo_val = (char *)(uintptr_t)h->u.optional.optinfo;
        break;
    }
    case UIW_RDMA2_CONNPROP:
        g2_propset(&h->u.connprop.start, &g->rdma_body.rpcrdma2_body_u.rdma_connprop.rdma_start, s);
        g2_subset(&h->u.connprop.nochg, &g->rdma_body.rpcrdma2_body_u.rdma_connprop.rdma_nochg,
                  s->sub[0]);
        break;
    case UIW_RDMA2_REQPROP:
        g2_propset(&h->u.reqprop.want, &g->rdma_body.rpcrdma2_body_u.rdma_reqprop.rdma_want, s);
        break;
    case UIW_RDMA2_RESPROP:
        g2_subset(&h->u.resprop.done, &g->rdma_body.rpcrdma2_body_u.rdma_resprop.rdma_done,
                  s->sub[0]);
        g2_subset(&h->u.resprop.rejected, &g->rdma_body.rpcrdma2_body_u.rdma_resprop.rdma_rejected,
                  s->sub[1]);
        g2_propset(&h->u.resprop.other, &g->rdma_body.rpcrdma2_body_u.rdma_resprop.rdma_other, s);
        break;
    case UIW_RDMA2_UPDPROP:
        g2_propset(&h->u.updprop.now, &g->rdma_body.rpcrdma2_body_u.rdma_updprop.rdma_now, s);
        break;
    default:
        break;
    }
}

static bool seg_eq(const struct uiw_rpcrdma_segment *a, const rpcrdma2_segment *g)
{
    return a->handle == g->rdma_handle && a->length == g->rdma_length &&
           a->offset == g->rdma_offset;
}

static bool chunk_eq(const struct uiw_rpcrdma_write_chunk *c, const rpcrdma2_write_chunk *g)
{
    if (c->nsegs != g->rdma_target.rdma_target_len)
        return false;
    for (uint32_t i = 0; i < c->nsegs; i++)
        if (!seg_eq(&c->segs[i], &g->rdma_target.rdma_target_val[i]))
            return false;
    return true;
}

static uint32_t prop_u32(const struct uiw_rpcrdma_prop *p)
{
    if (!p->data)
        return p->value;
    return (uint32_t)p->data[0] << 24 | (uint32_t)p->data[1] << 16 | (uint32_t)p->data[2] << 8 |
           p->data[3];
}

static bool propset_eq(const struct uiw_rpcrdma_propset *ps, const rpcrdma2_propset *g)
{
    if (ps->n != g->rpcrdma2_propset_len)
        return false;
    for (uint32_t i = 0; i < ps->n; i++) {
        const struct uiw_rpcrdma_prop *p = &ps->props[i];
        const rpcrdma2_propval *v = &g->rpcrdma2_propset_val[i];
        if (p->which != v->rdma_which || p->len != v->rdma_data.rdma_data_len)
            return false;
        if (p->len == 4) {
            const uint8_t *d = (const uint8_t *)v->rdma_data.rdma_data_val;
            if (prop_u32(p) !=
                ((uint32_t)d[0] << 24 | (uint32_t)d[1] << 16 | (uint32_t)d[2] << 8 | d[3]))
                return false;
        } else if (p->len && memcmp(p->data, v->rdma_data.rdma_data_val, p->len) != 0) {
            return false;
        }
    }
    return true;
}

static bool subset_eq(const struct uiw_rpcrdma_propsubset *ss, const rpcrdma2_propsubset *g)
{
    if (ss->nwords != g->rpcrdma2_propsubset_len)
        return false;
    for (uint32_t i = 0; i < ss->nwords; i++)
        if (uiw_rpcrdma_subset_word(ss, i) != g->rpcrdma2_propsubset_val[i])
            return false;
    return true;
}

/* Field-by-field equality of our header and libtirpc's. */
static bool g2_equal(const struct uiw_rpcrdma_hdr *h, const rpcrdma2_xprt_hdr *g)
{
    if (h->xid != g->rdma_xid || h->vers != g->rdma_vers || h->credit != g->rdma_credit ||
        h->proc != (uint32_t)g->rdma_body.rdma_proc)
        return false;
    switch (h->proc) {
    case UIW_RDMA_MSG:
    case UIW_RDMA_NOMSG: {
        const struct uiw_rpcrdma_chunks *c = &h->u.chunks;
        const rpcrdma2_chunk_lists *gc = &g->rdma_body.rpcrdma2_body_u.rdma_chunks;
        if (c->direction != (uint32_t)gc->rdma_direction || c->inv_handle != gc->rdma_inv_handle)
            return false;
        const rpcrdma2_read_list *rl = gc->rdma_reads;
        for (uint32_t i = 0; i < c->nreads; i++, rl = rl->rdma_next)
            if (!rl || c->reads[i].position != rl->rdma_entry.rdma_position ||
                !seg_eq(&c->reads[i].target, &rl->rdma_entry.rdma_target))
                return false;
        if (rl)
            return false;
        const rpcrdma2_write_list *wl = gc->rdma_writes;
        for (uint32_t i = 0; i < c->nwrites; i++, wl = wl->rdma_next)
            if (!wl || !chunk_eq(&c->writes[i], &wl->rdma_entry))
                return false;
        if (wl || c->has_reply != (gc->rdma_reply != NULL))
            return false;
        return !c->has_reply || chunk_eq(&c->reply, gc->rdma_reply);
    }
    case UIW_RDMA_ERROR: {
        const rpcrdma2_error *e = &g->rdma_body.rpcrdma2_body_u.rdma_error;
        if (h->u.error.errcode != (uint32_t)e->rdma_err)
            return false;
        if (e->rdma_err == RDMA2_ERR_VERS)
            return h->u.error.vers_low == e->rpcrdma2_error_u.rdma_vrange.rdma_vers_low &&
                   h->u.error.vers_high == e->rpcrdma2_error_u.rdma_vrange.rdma_vers_high;
        if (e->rdma_err == RDMA2_ERR_REPLY_RESOURCE)
            return h->u.error.segment_index == e->rpcrdma2_error_u.rdma_reply.rdma_segment_index &&
                   h->u.error.length_needed == e->rpcrdma2_error_u.rdma_reply.rdma_length_needed;
        return true;
    }
    case UIW_RDMA2_OPTIONAL: {
        const rpcrdma2_optional *o = &g->rdma_body.rpcrdma2_body_u.rdma_optional;
        return h->u.optional.optdir == (uint32_t)o->rdma_optdir &&
               h->u.optional.opttype == o->rdma_opttype &&
               h->u.optional.optinfo_len == o->rdma_optinfo.rdma_optinfo_len &&
               (!h->u.optional.optinfo_len ||
                memcmp(h->u.optional.optinfo, o->rdma_optinfo.rdma_optinfo_val,
                       h->u.optional.optinfo_len) == 0);
    }
    case UIW_RDMA2_CONNPROP:
        return propset_eq(&h->u.connprop.start,
                          &g->rdma_body.rpcrdma2_body_u.rdma_connprop.rdma_start) &&
               subset_eq(&h->u.connprop.nochg,
                         &g->rdma_body.rpcrdma2_body_u.rdma_connprop.rdma_nochg);
    case UIW_RDMA2_REQPROP:
        return propset_eq(&h->u.reqprop.want, &g->rdma_body.rpcrdma2_body_u.rdma_reqprop.rdma_want);
    case UIW_RDMA2_RESPROP:
        return subset_eq(&h->u.resprop.done,
                         &g->rdma_body.rpcrdma2_body_u.rdma_resprop.rdma_done) &&
               subset_eq(&h->u.resprop.rejected,
                         &g->rdma_body.rpcrdma2_body_u.rdma_resprop.rdma_rejected) &&
               propset_eq(&h->u.resprop.other,
                          &g->rdma_body.rpcrdma2_body_u.rdma_resprop.rdma_other);
    case UIW_RDMA2_UPDPROP:
        return propset_eq(&h->u.updprop.now, &g->rdma_body.rpcrdma2_body_u.rdma_updprop.rdma_now);
    default:
        return false;
    }
}

/* libtirpc decode of buf[0..len): 1 and *pos on success, 0 on rejection. Frees. */
static int tirpc_decode(const uint8_t *buf, size_t len, rpcrdma2_xprt_hdr *t, unsigned *pos)
{
    XDR x;
    memset(t, 0, sizeof(*t));
    xdrmem_create(&x, (char *)(uintptr_t)buf, (u_int)len, XDR_DECODE);
    int ok = xdr_rpcrdma2_xprt_hdr(&x, t) ? 1 : 0;
    *pos = xdr_getpos(&x);
    xdr_destroy(&x);
    return ok;
}

static void tirpc_free(rpcrdma2_xprt_hdr *t)
{
    xdr_free((xdrproc_t)xdr_rpcrdma2_xprt_hdr, (char *)t);
}

TEST(diff_v2_random)
{
    static struct rnd_msg m;
    static struct g2_store gs;
    static uint8_t a[BUF_CAP], b[BUF_CAP];
    struct uiw_rpcrdma_space_default st;
    struct uiw_rpcrdma_space sp;
    struct uiw_rpcrdma_hdr d;
    unsigned per_proc[10] = {0};
    uint64_t seed = 0x5eed0002u;

    uiw_rpcrdma_space_init(&sp, &st);
    for (unsigned run = 0; run < RUNS; run++) {
        rnd_msg(&m, &seed, 2, -1, run % 2 == 0);
        per_proc[m.h.proc]++;

        /* uiw encode == libtirpc encode, byte for byte */
        int la = uiw_rpcrdma_encode(a, sizeof(a), &m.h);
        CHECK(la > 0);
        CHECK_EQ(uiw_rpcrdma_encode(NULL, 0, &m.h), la);
        rpcrdma2_xprt_hdr g;
        to_g2(&m.h, &g, &gs);
        XDR x;
        xdrmem_create(&x, (char *)b, sizeof(b), XDR_ENCODE);
        CHECK(xdr_rpcrdma2_xprt_hdr(&x, &g));
        int lb = (int)xdr_getpos(&x);
        xdr_destroy(&x);
        CHECK_EQ(la, lb);
        CHECK_MEM(a, b, (size_t)la);

        /* a payload follows the header */
        size_t payload = rnd_below(&seed, 3) * 4;
        memset(a + la, 0xA5, payload);

        /* uiw decode of libtirpc's bytes == the original, field for field */
        CHECK_EQ(uiw_rpcrdma2_decode(b, (size_t)lb + payload, &d, &sp), lb);
        CHECK_EQ(d.hdr_len, lb);
        CHECK(rnd_hdr_equal(&m.h, &d));
        CHECK_EQ(uiw_rpcrdma_decode(b, (size_t)lb, &d, &sp), lb);

        /* libtirpc decode of uiw's bytes == the original, field for field */
        rpcrdma2_xprt_hdr t;
        unsigned pos;
        CHECK(tirpc_decode(a, (size_t)la + payload, &t, &pos));
        CHECK_EQ(pos, la);
        CHECK(g2_equal(&m.h, &t));
        tirpc_free(&t);
    }
    for (unsigned p = 0; p < 10; p++)
        if (uiw_rpcrdma_proc_name(p, 2))
            CHECK(per_proc[p] > RUNS / 20);
}

TEST(diff_v2_mutated)
{
    static struct rnd_msg m;
    static uint8_t a[BUF_CAP];
    struct uiw_rpcrdma_space_default st;
    struct uiw_rpcrdma_space sp;
    struct uiw_rpcrdma_hdr d;
    uint64_t seed = 0xbad0002u;
    unsigned both_ok = 0, both_bad = 0, stricter = 0;

    uiw_rpcrdma_space_init(&sp, &st);
    for (unsigned run = 0; run < RUNS; run++) {
        rnd_msg(&m, &seed, 2, -1, true);
        int la = uiw_rpcrdma_encode(a, sizeof(a) - 64, &m.h);
        CHECK(la > 0);
        size_t len = (size_t)la;
        mutate(a, &len, sizeof(a), &seed);

        rpcrdma2_xprt_hdr t;
        unsigned pos;
        int ok_t = tirpc_decode(a, len, &t, &pos);
        int rc = uiw_rpcrdma2_decode(a, len, &d, &sp);
        if (!ok_t) {
            if (rc >= 0)
                uiw_test_fail(__FILE__, __LINE__, "run %u: libtirpc rejects, uiw accepts", run);
            CHECK(uiw_rpcrdma_wire_error(rc, 2) != 0);
            both_bad++;
        } else if (rc >= 0) {
            CHECK_EQ(rc, pos);
            CHECK(g2_equal(&d, &t));
            both_ok++;
        } else {
            /* Only where uiw is stricter than XDR as libtirpc reads it: bools other than
             * 0/1, undefined enum values, known properties with bad values, nonzero pad,
             * caps, and rdma_vers (libtirpc does not look at it). */
            if (rc != UIW_E_RPCRDMA_BAD_BOOL && rc != UIW_E_RPCRDMA_BAD_ENUM &&
                rc != UIW_E_RPCRDMA_BAD_PROP && rc != UIW_E_RPCRDMA_BAD_PAD &&
                rc != UIW_E_RPCRDMA_CAP_READS && rc != UIW_E_RPCRDMA_CAP_WRITES &&
                rc != UIW_E_RPCRDMA_CAP_SEGS && rc != UIW_E_RPCRDMA_CAP_PROPS &&
                !(rc == UIW_E_RPCRDMA_VERS && t.rdma_vers != 2))
                uiw_test_fail(__FILE__, __LINE__, "run %u: libtirpc accepts, uiw says %s", run,
                              uiw_errname(rc));
            stricter++;
        }
        tirpc_free(&t);
    }
    fprintf(stderr, "v2 mutated: both accept %u, both reject %u, only uiw rejects %u\n", both_ok,
            both_bad, stricter);
    CHECK(both_ok > RUNS / 20);
    CHECK(both_bad > RUNS / 5);
}

#else
/* Without rpcgen and libtirpc there is no reference to compare with: fail loudly. The
 * macro keeps these lines from registering the test names a second time. */
#define UNAVAILABLE(name)                                                                          \
    TEST(name)                                                                                     \
    {                                                                                              \
        uiw_test_fail(__FILE__, __LINE__, "built without rpcgen/libtirpc");                        \
    }
UNAVAILABLE(diff_v2_random)
UNAVAILABLE(diff_v2_mutated)
#endif
