/*
 * A decoded struct uiw_rpcrdma_hdr as JSON mirroring its version's XDR (xdr/rpcrdma_v1.x,
 * xdr/rpcrdma_v2.x): struct fields in XDR order under their XDR names, unions as the
 * discriminant plus the selected arm, enums by their enumerator names, opaque as hex,
 * lists and arrays as JSON arrays, the optional reply chunk as null or its value.
 */
#include "rpcrdma.h"

static void put_key(struct rd_buf *o, const char *sep, const char *key)
{
    rd_buf_puts(o, sep);
    rd_buf_put(o, "\"", 1);
    rd_buf_puts(o, key);
    rd_buf_put(o, "\":", 2);
}

static void put_u(struct rd_buf *o, const char *sep, const char *key, uint64_t v)
{
    put_key(o, sep, key);
    rd_buf_u64(o, v);
}

/* An enumerator by name (the codec decoded it, so it has one; the number otherwise). */
static void put_enum(struct rd_buf *o, const char *sep, const char *key, const char *name,
                     uint32_t v)
{
    put_key(o, sep, key);
    if (!name) {
        rd_buf_u64(o, v);
        return;
    }
    rd_buf_put(o, "\"", 1);
    rd_buf_puts(o, name);
    rd_buf_put(o, "\"", 1);
}

static void put_opaque(struct rd_buf *o, const char *sep, const char *key, const uint8_t *p,
                       uint32_t n)
{
    put_key(o, sep, key);
    rd_buf_put(o, "\"", 1);
    rd_buf_hex(o, p, n);
    rd_buf_put(o, "\"", 1);
}

/* Field names of the chunk structures: RFC 8166's (xdr_rdma_segment: handle, length,
 * offset; xdr_read_chunk: position, target; xdr_write_chunk: target) for Version One, the
 * draft's (rdma_handle, ...) for Version Two. */
struct names {
    const char *handle, *length, *offset, *position, *target;
};
static const struct names v1_names = {"handle", "length", "offset", "position", "target"};
static const struct names v2_names = {"rdma_handle", "rdma_length", "rdma_offset", "rdma_position",
                                      "rdma_target"};

/* xdr_rdma_segment / rpcrdma2_segment */
static void put_segment(struct rd_buf *o, const struct names *n,
                        const struct uiw_rpcrdma_segment *s)
{
    put_u(o, "{", n->handle, s->handle);
    put_u(o, ",", n->length, s->length);
    put_u(o, ",", n->offset, s->offset);
    rd_buf_put(o, "}", 1);
}

/* xdr_write_chunk / rpcrdma2_write_chunk */
static void put_write_chunk(struct rd_buf *o, const struct names *n,
                            const struct uiw_rpcrdma_write_chunk *wc)
{
    put_key(o, "{", n->target);
    rd_buf_put(o, "[", 1);
    for (uint32_t i = 0; i < wc->nsegs; i++) {
        if (i)
            rd_buf_put(o, ",", 1);
        put_segment(o, n, &wc->segs[i]);
    }
    rd_buf_put(o, "]}", 2);
}

/* The three lists, the members of rpc_rdma_header (v1) and of rpcrdma2_chunk_lists (v2)
 * after the Version Two fields. */
static void put_lists(struct rd_buf *o, const char *sep, const struct names *n,
                      const struct uiw_rpcrdma_chunks *c)
{
    put_key(o, sep, "rdma_reads");
    rd_buf_put(o, "[", 1);
    for (uint32_t i = 0; i < c->nreads; i++) {
        put_u(o, i ? ",{" : "{", n->position, c->reads[i].position);
        put_key(o, ",", n->target);
        put_segment(o, n, &c->reads[i].target);
        rd_buf_put(o, "}", 1);
    }
    rd_buf_put(o, "]", 1);
    put_key(o, ",", "rdma_writes");
    rd_buf_put(o, "[", 1);
    for (uint32_t i = 0; i < c->nwrites; i++) {
        if (i)
            rd_buf_put(o, ",", 1);
        put_write_chunk(o, n, &c->writes[i]);
    }
    rd_buf_put(o, "]", 1);
    put_key(o, ",", "rdma_reply");
    if (c->has_reply)
        put_write_chunk(o, n, &c->reply);
    else
        rd_buf_puts(o, "null");
}

/* rpc_rdma_error (v1) / rpcrdma2_error (v2 and the ERR_VERS reply of other versions) */
static void put_rdma_error(struct rd_buf *o, const struct uiw_rpcrdma_error *e, uint32_t nv)
{
    const char *name = uiw_rpcrdma_errcode_name(e->errcode, nv);
    put_enum(o, "{", nv == 1 ? "err" : "rdma_err", name, e->errcode);
    if (e->errcode == UIW_RDMA_ERR_VERS) {
        put_key(o, ",", nv == 1 ? "range" : "rdma_vrange");
        put_u(o, "{", "rdma_vers_low", e->vers_low);
        put_u(o, ",", "rdma_vers_high", e->vers_high);
        rd_buf_put(o, "}", 1);
    } else if (nv == 2 && e->errcode == UIW_RDMA2_ERR_REPLY_RESOURCE) {
        put_key(o, ",", "rdma_reply");
        put_u(o, "{", "rdma_segment_index", e->segment_index);
        put_u(o, ",", "rdma_length_needed", e->length_needed);
        rd_buf_put(o, "}", 1);
    }
    rd_buf_put(o, "}", 1);
}

/* rpcrdma2_propset: an array of rpcrdma2_propval */
static void put_propset(struct rd_buf *o, const char *sep, const char *key,
                        const struct uiw_rpcrdma_propset *ps)
{
    put_key(o, sep, key);
    rd_buf_put(o, "[", 1);
    for (uint32_t i = 0; i < ps->n; i++) {
        put_u(o, i ? ",{" : "{", "rdma_which", ps->props[i].which);
        put_opaque(o, ",", "rdma_data", ps->props[i].data, ps->props[i].len);
        rd_buf_put(o, "}", 1);
    }
    rd_buf_put(o, "]", 1);
}

/* rpcrdma2_propsubset: an array of uint32 words */
static void put_subset(struct rd_buf *o, const char *sep, const char *key,
                       const struct uiw_rpcrdma_propsubset *s)
{
    put_key(o, sep, key);
    rd_buf_put(o, "[", 1);
    for (uint32_t i = 0; i < s->nwords; i++) {
        if (i)
            rd_buf_put(o, ",", 1);
        rd_buf_u64(o, uiw_rpcrdma_subset_word(s, i));
    }
    rd_buf_put(o, "]", 1);
}

/* The body of a Version Two header (rpcrdma2_body, switching on rdma_proc). */
static void put_body_v2(struct rd_buf *o, const struct uiw_rpcrdma_hdr *h)
{
    put_enum(o, "{", "rdma_proc", uiw_rpcrdma_proc_name(h->proc, 2), h->proc);
    switch (h->proc) {
    case UIW_RDMA_MSG:
    case UIW_RDMA_NOMSG:
        put_key(o, ",", "rdma_chunks");
        put_enum(o, "{", "rdma_direction", uiw_rpcrdma_dir_name(h->u.chunks.direction),
                 h->u.chunks.direction);
        put_u(o, ",", "rdma_inv_handle", h->u.chunks.inv_handle);
        put_lists(o, ",", &v2_names, &h->u.chunks);
        rd_buf_put(o, "}", 1);
        break;
    case UIW_RDMA_ERROR:
        put_key(o, ",", "rdma_error");
        put_rdma_error(o, &h->u.error, 2);
        break;
    case UIW_RDMA2_OPTIONAL:
        put_key(o, ",", "rdma_optional");
        put_enum(o, "{", "rdma_optdir", uiw_rpcrdma_dir_name(h->u.optional.optdir),
                 h->u.optional.optdir);
        put_u(o, ",", "rdma_opttype", h->u.optional.opttype);
        put_opaque(o, ",", "rdma_optinfo", h->u.optional.optinfo, h->u.optional.optinfo_len);
        rd_buf_put(o, "}", 1);
        break;
    case UIW_RDMA2_CONNPROP:
        put_key(o, ",", "rdma_connprop");
        put_propset(o, "{", "rdma_start", &h->u.connprop.start);
        put_subset(o, ",", "rdma_nochg", &h->u.connprop.nochg);
        rd_buf_put(o, "}", 1);
        break;
    case UIW_RDMA2_REQPROP:
        put_key(o, ",", "rdma_reqprop");
        put_propset(o, "{", "rdma_want", &h->u.reqprop.want);
        rd_buf_put(o, "}", 1);
        break;
    case UIW_RDMA2_RESPROP:
        put_key(o, ",", "rdma_resprop");
        put_subset(o, "{", "rdma_done", &h->u.resprop.done);
        put_subset(o, ",", "rdma_rejected", &h->u.resprop.rejected);
        put_propset(o, ",", "rdma_other", &h->u.resprop.other);
        rd_buf_put(o, "}", 1);
        break;
    case UIW_RDMA2_UPDPROP:
        put_key(o, ",", "rdma_updprop");
        put_propset(o, "{", "rdma_now", &h->u.updprop.now);
        rd_buf_put(o, "}", 1);
        break;
    default: /* the codec decodes no other procedure */
        break;
    }
    rd_buf_put(o, "}", 1);
}

/* The body of a Version One header (rdma_body, switching on proc). */
static void put_body_v1(struct rd_buf *o, const struct uiw_rpcrdma_hdr *h)
{
    put_enum(o, "{", "proc", uiw_rpcrdma_proc_name(h->proc, 1), h->proc);
    switch (h->proc) {
    case UIW_RDMA_MSG:
    case UIW_RDMA_NOMSG:
        put_key(o, ",", h->proc == UIW_RDMA_MSG ? "rdma_msg" : "rdma_nomsg");
        put_lists(o, "{", &v1_names, &h->u.chunks);
        rd_buf_put(o, "}", 1);
        break;
    case UIW_RDMA_ERROR:
        put_key(o, ",", "rdma_error");
        put_rdma_error(o, &h->u.error, 1);
        break;
    default: /* RDMA_MSGP and RDMA_DONE are refused by the codec */
        break;
    }
    rd_buf_put(o, "}", 1);
}

void rd_render_header(const struct uiw_rpcrdma_hdr *h, struct rd_buf *out)
{
    put_u(out, "{", "rdma_xid", h->xid);
    put_u(out, ",", "rdma_vers", h->vers);
    put_u(out, ",", "rdma_credit", h->credit);
    put_key(out, ",", "rdma_body");
    /* A header of another version is an ERR_VERS reply: Version Two names. */
    if (h->vers == UIW_RPCRDMA_VERS1)
        put_body_v1(out, h);
    else
        put_body_v2(out, h);
    rd_buf_put(out, "}", 1);
}
