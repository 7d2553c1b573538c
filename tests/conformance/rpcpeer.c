/* The raw RPC-over-RDMA peer of the conformance tests (see rpcpeer.h). */
#include "rpcpeer.h"

#include <errno.h>
#include <stdio.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/byteorder.h"

#define FPDU_MAX 70000

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int rpcpeer_connect(struct rpcpeer *p, uint16_t port, const void *pd, uint16_t pd_len, bool crc)
{
    memset(p, 0, sizeof(*p));
    p->raw.fd = -1; /* rpcpeer_close after a failure closes nothing */
    int fd = rawpeer_tcp_connect(AF_INET, port);
    if (fd < 0)
        return fd;
    rawpeer_init(&p->raw, fd);
    struct uiw_mpa_frame rq = {.kind = UIW_MPA_REQUEST,
                               .rev = 2,
                               .flags = UIW_MPA_FLAG_ENHANCED | (crc ? UIW_MPA_FLAG_CRC : 0),
                               .ird = 4,
                               .ord = 4,
                               .pd = pd,
                               .pd_len = pd_len};
    int r = rawpeer_send_frame(&p->raw, &rq);
    if (r)
        return r;
    struct uiw_mpa_frame rp;
    uint8_t store[UIW_MPA_HDR_LEN + UIW_MPA_PD_MAX + 8];
    ssize_t n = rawpeer_recv_frame(&p->raw, UIW_MPA_REPLY, &rp, store, sizeof(store), 5000);
    if (n < 0)
        return (int)n;
    if (rp.flags & UIW_MPA_FLAG_REJECT)
        return -ECONNREFUSED;
    p->peer_pd_len = rp.pd_len;
    if (rp.pd_len)
        memcpy(p->peer_pd, rp.pd, rp.pd_len);
    rawpeer_start(&p->raw, crc || (rp.flags & UIW_MPA_FLAG_CRC), false, false);
    return 0;
}

int rpcpeer_accept(struct rpcpeer *p, int lfd, const void *pd, uint16_t pd_len, int timeout_ms)
{
    memset(p, 0, sizeof(*p));
    p->raw.fd = -1;
    int fd = rawpeer_tcp_accept(lfd, timeout_ms);
    if (fd < 0)
        return fd;
    rawpeer_init(&p->raw, fd);
    struct uiw_mpa_frame rq;
    uint8_t store[UIW_MPA_HDR_LEN + UIW_MPA_PD_MAX + 8];
    ssize_t n = rawpeer_recv_frame(&p->raw, UIW_MPA_REQUEST, &rq, store, sizeof(store), 5000);
    if (n < 0)
        return (int)n;
    p->peer_pd_len = rq.pd_len;
    if (rq.pd_len)
        memcpy(p->peer_pd, rq.pd, rq.pd_len);
    bool crc = rq.flags & UIW_MPA_FLAG_CRC;
    struct uiw_mpa_frame rp = {.kind = UIW_MPA_REPLY,
                               .rev = rq.rev,
                               .flags = (uint8_t)((rq.rev == 2 ? UIW_MPA_FLAG_ENHANCED : 0) |
                                                  (crc ? UIW_MPA_FLAG_CRC : 0)),
                               .ird = 4,
                               .ord = 4,
                               .pd = pd,
                               .pd_len = pd_len};
    int r = rawpeer_send_frame(&p->raw, &rp);
    if (r)
        return r;
    rawpeer_start(&p->raw, crc, false, false);
    return 0;
}

void rpcpeer_close(struct rpcpeer *p, bool reset)
{
    rawpeer_close(&p->raw, reset);
}

struct rpcpeer_region *rpcpeer_region(struct rpcpeer *p, uint32_t stag, void *mem, uint32_t len,
                                      bool writable, bool readable)
{
    if (p->nregions == RPCPEER_MAX_REGIONS)
        return NULL;
    struct rpcpeer_region *r = &p->region[p->nregions++];
    r->stag = stag;
    r->to = (uint64_t)(uintptr_t)mem;
    r->mem = mem;
    r->len = len;
    r->writable = writable;
    r->readable = readable;
    r->written = 0;
    return r;
}

int rpcpeer_send(struct rpcpeer *p, const void *msg, uint32_t len)
{
    return rawpeer_send_send(&p->raw, UIW_RDMAP_SEND, 0, msg, len);
}

int rpcpeer_send_hdr(struct rpcpeer *p, const struct uiw_rpcrdma_hdr *h, const void *payload,
                     uint32_t plen)
{
    uint8_t buf[RPCPEER_MSG_MAX];
    int n = uiw_rpcrdma_encode(buf, sizeof(buf), h);
    if (n < 0 || (uint32_t)n + plen > sizeof(buf))
        return n < 0 ? n : -ENOSPC;
    if (plen)
        memcpy(buf + n, payload, plen);
    return rpcpeer_send(p, buf, (uint32_t)n + plen);
}

static struct rpcpeer_region *find(struct rpcpeer *p, uint32_t stag, uint64_t to, uint64_t len)
{
    for (unsigned i = 0; i < p->nregions; i++) {
        struct rpcpeer_region *r = &p->region[i];
        if (r->stag == stag && to >= r->to && to + len <= r->to + r->len && to + len >= to)
            return r;
    }
    return NULL;
}

/* Terminate for a Read Request we refuse: RDMAP / remote protection / invalid STag. */
static int refuse_read(struct rpcpeer *p, const uint8_t *ulpdu, uint16_t len)
{
    struct uiw_terminate t;
    memset(&t, 0, sizeof(t));
    t.layer = 0;
    t.etype = 1;
    t.code = 0;
    t.hdrct = UIW_TERM_FLAG_M | UIW_TERM_FLAG_D | UIW_TERM_FLAG_R;
    t.ddp_seg_len = len;
    memcpy(t.ddp_hdr, ulpdu, UIW_DDP_UNTAGGED_HDR_LEN);
    t.ddp_hdr_len = UIW_DDP_UNTAGGED_HDR_LEN;
    memcpy(t.rdma_hdr, ulpdu + UIW_DDP_UNTAGGED_HDR_LEN, UIW_RDMAP_READ_REQ_LEN);
    uint8_t body[128];
    ssize_t n = uiw_terminate_encode(&t, body, sizeof(body));
    if (n < 0)
        return (int)n;
    uint8_t h[UIW_DDP_UNTAGGED_HDR_LEN];
    rawpeer_untagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_TERMINATE), true, 0, UIW_DDP_QN_TERMINATE,
                         p->raw.msn[UIW_DDP_QN_TERMINATE]++, 0);
    struct uiw_wire_iov v[2] = {{h, sizeof(h)}, {body, (size_t)n}};
    return rawpeer_send_ulpdu(&p->raw, v, 2);
}

static int serve_read(struct rpcpeer *p, const uint8_t *ulpdu, uint16_t len)
{
    struct uiw_rdmap_read_req rr;
    if (uiw_rdmap_read_req_parse(ulpdu + UIW_DDP_UNTAGGED_HDR_LEN, len - UIW_DDP_UNTAGGED_HDR_LEN,
                                 &rr) < 0)
        return -EPROTO;
    if (p->on_access)
        p->on_access(p->on_access_arg, false, rr.src_stag, rr.src_to, rr.size);
    if (p->no_answer)
        return 0;
    struct rpcpeer_region *r = find(p, rr.src_stag, rr.src_to, rr.size);
    if (!r || !r->readable)
        return refuse_read(p, ulpdu, len);
    /* Read Response in segments of at most 16 KiB */
    const uint8_t *src = r->mem + (rr.src_to - r->to);
    uint32_t off = 0;
    do {
        uint32_t n = rr.size - off < 16384 ? rr.size - off : 16384;
        uint8_t h[UIW_DDP_TAGGED_HDR_LEN];
        rawpeer_tagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_READ_RESP), off + n == rr.size, rr.sink_stag,
                           rr.sink_to + off);
        struct uiw_wire_iov v[2] = {{h, sizeof(h)}, {src + off, n}};
        int e = rawpeer_send_ulpdu(&p->raw, v, n ? 2 : 1);
        if (e)
            return e;
        off += n;
    } while (off < rr.size);
    p->reads_served++;
    return 0;
}

static void take_write(struct rpcpeer *p, const struct uiw_ddp_hdr *h, const uint8_t *data,
                       uint32_t n)
{
    if (p->on_access)
        p->on_access(p->on_access_arg, true, h->stag, h->to, n);
    struct rpcpeer_region *r = find(p, h->stag, h->to, n);
    if (!r || !r->writable) {
        p->violations++;
        return;
    }
    memcpy(r->mem + (h->to - r->to), data, n);
    r->written += n;
}

/* One FPDU of the stack: 1 and a complete Send in msg, 0 for anything else handled, or a
 * negative code (-EPROTO for a Terminate). */
static int one(struct rpcpeer *p, uint8_t *fp, uint8_t *msg, uint32_t cap, uint32_t *mlen,
               int timeout_ms, bool *eof)
{
    uint16_t len = 0;
    int r = rawpeer_recv_fpdu(&p->raw, fp, FPDU_MAX, &len, timeout_ms);
    if (r == 0) {
        *eof = true;
        return 0;
    }
    if (r < 0)
        return r;
    struct uiw_ddp_hdr h;
    ssize_t hl = uiw_ddp_hdr_parse(fp, len, &h);
    if (hl < 0)
        return -EPROTO;
    unsigned op = uiw_rdmap_ctrl_opcode(h.rdmap_ctrl);
    const uint8_t *data = fp + hl;
    uint32_t dn = len - (uint32_t)hl;
    if (h.tagged) {
        if (op == UIW_RDMAP_WRITE)
            take_write(p, &h, data, dn);
        return 0;
    }
    switch (op) {
    case UIW_RDMAP_READ_REQ:
        r = serve_read(p, fp, len);
        return r < 0 ? r : 0;
    case UIW_RDMAP_TERMINATE:
        return -EPROTO;
    case UIW_RDMAP_SEND:
    case UIW_RDMAP_SEND_INV:
    case UIW_RDMAP_SEND_SE:
    case UIW_RDMAP_SEND_SE_INV:
        if (h.mo + dn > cap)
            return -ENOSPC;
        memcpy(msg + h.mo, data, dn);
        if (!h.last)
            return 0;
        *mlen = h.mo + dn;
        p->with_inv = op == UIW_RDMAP_SEND_INV || op == UIW_RDMAP_SEND_SE_INV;
        p->inv_stag = h.rsvd_ulp;
        return 1;
    default:
        return 0;
    }
}

int rpcpeer_recv(struct rpcpeer *p, uint8_t *msg, uint32_t cap, uint32_t *len, int timeout_ms)
{
    uint8_t *fp = malloc(FPDU_MAX);
    if (!fp)
        return -ENOMEM;
    uint64_t until = now_ms() + (uint64_t)timeout_ms;
    int r;
    for (;;) {
        uint64_t t = now_ms();
        if (t >= until) {
            r = -ETIMEDOUT;
            break;
        }
        bool eof = false;
        r = one(p, fp, msg, cap, len, (int)(until - t), &eof);
        if (eof) {
            r = 0;
            break;
        }
        if (r != 0)
            break;
    }
    free(fp);
    return r;
}

int rpcpeer_recv_hdr(struct rpcpeer *p, uint8_t *msg, uint32_t cap, uint32_t *len,
                     struct uiw_rpcrdma_hdr *h, struct uiw_rpcrdma_space *sp, int timeout_ms)
{
    for (;;) {
        int r = rpcpeer_recv(p, msg, cap, len, timeout_ms);
        if (r != 1)
            return r;
        int d = uiw_rpcrdma_decode(msg, *len, h, sp);
        if (d < 0)
            return d;
        if (h->proc == UIW_RDMA2_CONNPROP && h->vers == 2 && !p->keep_connprop) {
            p->connprops++;
            continue; /* a Version Two peer's properties: noted, skipped */
        }
        return 1;
    }
}

int rpcpeer_pump(struct rpcpeer *p, int timeout_ms, bool *eof)
{
    uint8_t *fp = malloc(FPDU_MAX);
    uint8_t *msg = malloc(RPCPEER_MSG_MAX);
    if (!fp || !msg) {
        free(fp);
        free(msg);
        return -ENOMEM;
    }
    uint64_t until = now_ms() + (uint64_t)timeout_ms;
    int r = 0;
    *eof = false;
    while (!*eof) {
        uint64_t t = now_ms();
        if (t >= until)
            break;
        uint32_t mlen = 0;
        r = one(p, fp, msg, RPCPEER_MSG_MAX, &mlen, (int)(until - t), eof);
        if (r == -ETIMEDOUT) {
            r = 0;
            break;
        }
        if (r == 1)
            continue; /* a Send: not what this waits for */
        if (r != 0)
            break;
    }
    free(fp);
    free(msg);
    return r;
}

uint32_t rpcpeer_rpc_call(uint8_t *out, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc,
                          const void *args, uint32_t alen)
{
    const uint32_t w[] = {xid, 0, 2, prog, vers, proc, 0, 0, 0, 0};
    for (unsigned i = 0; i < 10; i++)
        uiw__put_be32(out + 4 * i, w[i]);
    if (alen)
        memcpy(out + 40, args, alen);
    return 40 + alen;
}

int rpcpeer_send_call(struct rpcpeer *p, const struct uiw_rpcrdma_hdr *h, uint32_t rpc_xid,
                      uint32_t prog, uint32_t proc, const void *args, uint32_t alen)
{
    uint8_t call[256];
    if (40 + alen > sizeof(call))
        return -ENOSPC;
    uint32_t cl = rpcpeer_rpc_call(call, rpc_xid ? rpc_xid : h->xid, prog, 1, proc, args, alen);
    return rpcpeer_send_hdr(p, h, h->proc == UIW_RDMA_NOMSG ? NULL : call,
                            h->proc == UIW_RDMA_NOMSG ? 0 : cl);
}

bool_t rpcpeer_xdr_void(XDR *x, void *p)
{
    (void)x;
    (void)p;
    return TRUE;
}

bool_t rpcpeer_xdr_blob(XDR *x, struct rpcpeer_blob *b)
{
    return xdr_bytes(x, &b->val, &b->len, ~0u);
}

void rpcpeer_serve_gen(SVCXPRT *x, u_int max)
{
    u_int n;
    if (!svc_getargs(x, (xdrproc_t)xdr_u_int, (char *)&n) || n > max) {
        svcerr_decode(x);
        return;
    }
    struct rpcpeer_blob b = {n, uiw_svc_getbuf(x, n)};
    if (!b.val) {
        svcerr_systemerr(x);
        return;
    }
    for (u_int i = 0; i < n; i++)
        b.val[i] = (char)(i + 1);
    svc_sendreply(x, (xdrproc_t)rpcpeer_xdr_blob, (char *)&b);
}

/* SINK's argument, bounded: libtirpc allocates the length an opaque<> claims before it
 * reads a byte of it. */
struct sink_arg {
    struct rpcpeer_blob b;
    u_int max;
};

static bool_t xdr_sink_arg(XDR *x, struct sink_arg *a)
{
    return xdr_bytes(x, &a->b.val, &a->b.len, a->max);
}

void rpcpeer_serve_sink(SVCXPRT *x, u_int max)
{
    struct sink_arg a = {{0, NULL}, max};
    if (!svc_getargs(x, (xdrproc_t)xdr_sink_arg, (char *)&a)) {
        svcerr_decode(x);
        return;
    }
    u_int sum = 0;
    for (u_int i = 0; i < a.b.len; i++)
        sum += (uint8_t)a.b.val[i];
    svc_sendreply(x, (xdrproc_t)xdr_u_int, (char *)&sum);
    svc_freeargs(x, (xdrproc_t)xdr_sink_arg, (char *)&a);
}

void rpcpeer_serve_test(struct svc_req *rq, SVCXPRT *x, u_int max)
{
    switch (rq->rq_proc) {
    case RPCPEER_NULL:
        svc_sendreply(x, (xdrproc_t)rpcpeer_xdr_void, NULL);
        return;
    case RPCPEER_GEN:
        rpcpeer_serve_gen(x, max);
        return;
    case RPCPEER_SINK:
        rpcpeer_serve_sink(x, max);
        return;
    default:
        svcerr_noproc(x);
    }
}

uint32_t rpcpeer_grants_in(const struct uiw_rpcrdma_hdr *h)
{
    if (h->proc != UIW_RDMA_MSG && h->proc != UIW_RDMA_NOMSG)
        return 0;
    const struct uiw_rpcrdma_chunks *c = &h->u.chunks;
    uint32_t n = c->nreads + (c->has_reply ? c->reply.nsegs : 0);
    for (uint32_t i = 0; i < c->nwrites; i++)
        n += c->writes[i].nsegs;
    return n;
}

static void grant(struct rpcpeer_grants *g, bool write, const struct uiw_rpcrdma_segment *s)
{
    g->g[g->n++] = (struct rpcpeer_grant){write, s->handle, s->length, s->offset};
}

bool rpcpeer_grants_add(struct rpcpeer_grants *g, const struct uiw_rpcrdma_hdr *h)
{
    uint32_t n = rpcpeer_grants_in(h);
    if (n > RPCPEER_MAX_GRANTS - g->n)
        return false;
    if (n == 0)
        return true;
    const struct uiw_rpcrdma_chunks *c = &h->u.chunks;
    for (uint32_t i = 0; i < c->nreads; i++)
        grant(g, false, &c->reads[i].target);
    for (uint32_t i = 0; i < c->nwrites; i++)
        for (uint32_t j = 0; j < c->writes[i].nsegs; j++)
            grant(g, true, &c->writes[i].segs[j]);
    for (uint32_t j = 0; c->has_reply && j < c->reply.nsegs; j++)
        grant(g, true, &c->reply.segs[j]);
    return true;
}

void rpcpeer_grants_check(const struct rpcpeer_grants *g, const char *who, bool write,
                          uint32_t stag, uint64_t to, uint32_t len)
{
    if (len == 0)
        return;
    for (unsigned i = 0; i < g->n; i++) {
        const struct rpcpeer_grant *s = &g->g[i];
        if (s->write == write && s->stag == stag && to >= s->to && to - s->to <= s->len &&
            len <= s->len - (to - s->to))
            return;
    }
    fprintf(stderr,
            "%s: an RDMA %s of %u bytes at STag %#x TO %#llx, outside every segment "
            "offered for one\n",
            who, write ? "Write" : "Read", len, stag, (unsigned long long)to);
    abort();
}
