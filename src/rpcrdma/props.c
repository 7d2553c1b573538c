/*
 * Version Two transport properties (draft section 5): CONNPROP as each side's first
 * message, REQPROP / RESPROP / UPDPROP with the rules of 5.3, and the inline sizes that
 * follow from the peer's Receive Buffer Size.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "rpcrdma/xprt.h"

static _Atomic uint32_t xid_next;

static uint32_t new_xid(void)
{
    uint32_t x = atomic_fetch_add(&xid_next, 1);
    if (x == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint32_t seed = (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec << 12;
        atomic_store(&xid_next, seed | 1);
        x = seed;
    }
    return x;
}

static bool experimental(uint32_t id)
{
    return id >= UIW_RPC_XPROP_MIN;
}

void uiw__rr_props_init(struct uiw__rr_conn *c)
{
    c->props.peer_rbsiz = UIW_RPCRDMA_RBSIZ_DEFAULT;
    c->props.peer_brs = UIW_RDMA2_BKREQSUP_INLINE;
}

void uiw__rr_props_sizes(struct uiw__rr_conn *c)
{
    uint32_t peer;
    if (c->vers == 2) {
        peer = c->props.peer_rbsiz;
        if (!c->props.got_connprop && c->peer_cm && c->peer_cmp.recv_size < peer)
            peer = c->peer_cmp.recv_size;
    } else {
        peer = c->peer_cm ? c->peer_cmp.recv_size : 1024;
    }
    c->inline_send = peer < c->send_cap ? peer : c->send_cap;
}

/* Our property values as a propset (storage in props[]). */
static uint32_t our_props(struct uiw__rr_conn *c, struct uiw_rpcrdma_prop *props)
{
    uint32_t n = 0;
    props[n++] = (struct uiw_rpcrdma_prop){
        .which = UIW_RPCRDMA_PROP_RBSIZ, .len = 4, .value = c->props.rbsiz};
    props[n++] =
        (struct uiw_rpcrdma_prop){.which = UIW_RPCRDMA_PROP_BRS, .len = 4, .value = c->props.brs};
    for (unsigned i = 0; i < c->props.nlocal_x && n < UIW_RPCRDMA_MAX_PROPS; i++)
        props[n++] = (struct uiw_rpcrdma_prop){.which = c->props.local_x[i].which,
                                               .len = c->props.local_x[i].len,
                                               .data = c->props.local_x[i].data};
    return n;
}

static void base_hdr(struct uiw__rr_conn *c, struct uiw_rpcrdma_hdr *h, uint32_t xid, uint32_t proc)
{
    memset(h, 0, sizeof(*h));
    h->xid = xid;
    h->vers = 2;
    h->credit = uiw__rr_credit_out(c, c->server);
    h->proc = proc;
}

int uiw__rr_send_connprop(struct uiw__rr_conn *c)
{
    struct uiw_rpcrdma_prop props[UIW_RPCRDMA_MAX_PROPS];
    struct uiw_rpcrdma_hdr h;
    uint32_t xid = new_xid();
    base_hdr(c, &h, xid, UIW_RDMA2_CONNPROP);
    h.u.connprop.start.props = props;
    h.u.connprop.start.n = our_props(c, props);
    h.u.connprop.nochg.nwords = 0;
    c->neg_xid = xid;
    return uiw__rr_send_ctrl(c, &h);
}

/* ---------------------------------------------------------------- the peer's properties */

static struct uiw_rpc_xprop *peer_x(struct uiw__rr_conn *c, uint32_t which, int *idx)
{
    for (unsigned i = 0; i < c->props.npeer_x; i++)
        if (c->props.peer_x[i].which == which) {
            if (idx)
                *idx = (int)i;
            return &c->props.peer_x[i];
        }
    return NULL;
}

static void set_peer_x(struct uiw__rr_conn *c, const struct uiw_rpcrdma_prop *p, bool create)
{
    struct uiw_rpc_xprop *x = peer_x(c, p->which, NULL);
    if (!x) {
        if (!create || c->props.npeer_x == UIW_RPC_XPROP_MAX)
            return;
        x = &c->props.peer_x[c->props.npeer_x++];
        x->which = p->which;
    }
    x->len = p->len > UIW_RPC_XPROP_DATA ? UIW_RPC_XPROP_DATA : p->len;
    if (x->len)
        memcpy(x->data, p->data, x->len);
}

/* Apply the value of a known property (decoded and checked by the codec). */
static void apply(struct uiw__rr_conn *c, uint32_t which, uint32_t value)
{
    if (which == UIW_RPCRDMA_PROP_RBSIZ)
        c->props.peer_rbsiz = value;
    else if (which == UIW_RPCRDMA_PROP_BRS)
        c->props.peer_brs = value;
}

static void connprop_in(struct uiw__rr_conn *c, const struct uiw_rpcrdma_hdr *h)
{
    struct uiw__rr_props *p = &c->props;
    if (p->got_connprop)
        return; /* one per connection: later ones are ignored */
    const struct uiw_rpcrdma_propset *s = &h->u.connprop.start;
    for (uint32_t i = 0; i < s->n; i++) {
        const struct uiw_rpcrdma_prop *q = &s->props[i];
        if (q->which == UIW_RPCRDMA_PROP_RBSIZ) {
            p->peer_has_rbsiz = true;
            apply(c, q->which, q->value);
        } else if (q->which == UIW_RPCRDMA_PROP_BRS) {
            p->peer_has_brs = true;
            apply(c, q->which, q->value);
        } else if (experimental(q->which)) {
            set_peer_x(c, q, true);
        }
        /* unknown properties are skipped */
    }
    const struct uiw_rpcrdma_propsubset *nc = &h->u.connprop.nochg;
    p->peer_nochg_rbsiz = uiw_rpcrdma_subset_has(nc, UIW_RPCRDMA_PROP_RBSIZ);
    p->peer_nochg_brs = uiw_rpcrdma_subset_has(nc, UIW_RPCRDMA_PROP_BRS);
    for (unsigned i = 0; i < p->npeer_x; i++)
        p->peer_x_nochg[i] = uiw_rpcrdma_subset_has(nc, p->peer_x[i].which);
    p->got_connprop = true;
    uiw__rr_props_sizes(c);
}

/* May the peer change property `which` (it announced it in CONNPROP, not in nochg)? */
static bool peer_changeable(struct uiw__rr_conn *c, uint32_t which)
{
    struct uiw__rr_props *p = &c->props;
    if (which == UIW_RPCRDMA_PROP_RBSIZ)
        return p->peer_has_rbsiz && !p->peer_nochg_rbsiz;
    if (which == UIW_RPCRDMA_PROP_BRS)
        return p->peer_has_brs && !p->peer_nochg_brs;
    int idx;
    return peer_x(c, which, &idx) && !p->peer_x_nochg[idx];
}

static void updprop_in(struct uiw__rr_conn *c, const struct uiw_rpcrdma_hdr *h)
{
    const struct uiw_rpcrdma_propset *s = &h->u.updprop.now;
    for (uint32_t i = 0; i < s->n; i++) {
        const struct uiw_rpcrdma_prop *q = &s->props[i];
        if (!peer_changeable(c, q->which))
            continue; /* left out of its CONNPROP, or declared unchangeable: ignored */
        if (experimental(q->which))
            set_peer_x(c, q, false);
        else
            apply(c, q->which, q->value);
    }
    uiw__rr_props_sizes(c);
}

/* The peer asks us to change our properties: answer with RESPROP (same xid). */
static void reqprop_in(struct uiw__rr_conn *c, const struct uiw_rpcrdma_hdr *h)
{
    const struct uiw_rpcrdma_propset *w = &h->u.reqprop.want;
    uint32_t done[UIW_RPCRDMA_MAX_PROPS], rej[UIW_RPCRDMA_MAX_PROPS];
    struct uiw_rpcrdma_prop other[UIW_RPCRDMA_MAX_PROPS];
    uint32_t nd = 0, nr = 0, no = 0;
    for (uint32_t i = 0; i < w->n; i++) {
        const struct uiw_rpcrdma_prop *q = &w->props[i];
        /* a property asked for more than once gets one answer, rejected, and keeps its
         * value: done, rejected and other must not overlap (5.3.3) */
        bool first = true, again = false;
        for (uint32_t j = 0; j < w->n; j++) {
            if (j != i && w->props[j].which == q->which) {
                again = true;
                first = first && j > i;
            }
        }
        if (again) {
            if (first)
                rej[nr++] = q->which;
        } else if (q->which == UIW_RPCRDMA_PROP_RBSIZ) {
            /* our receive buffers bound what the peer may send */
            uint32_t v = q->value;
            if (v >= UIW_RPCRDMA_RBSIZ_MIN && v <= c->inline_recv) {
                c->props.rbsiz = v;
                done[nd++] = q->which;
            } else if (v > c->inline_recv && c->props.rbsiz != c->inline_recv) {
                c->props.rbsiz = c->inline_recv;
                other[no++] =
                    (struct uiw_rpcrdma_prop){.which = q->which, .len = 4, .value = c->inline_recv};
            } else {
                rej[nr++] = q->which;
            }
        } else if (q->which == UIW_RPCRDMA_PROP_BRS) {
            /* fewer backward calls than this side takes, not more: a side that said NONE
             * (or INLINE) serves none (or none with chunks), whoever asks */
            if (q->value <= c->props.brs) {
                c->props.brs = q->value;
                done[nd++] = q->which;
            } else {
                rej[nr++] = q->which;
            }
        } else {
            rej[nr++] = q->which; /* unknown, or experimental: not changed on request */
        }
    }
    uint8_t wd[UIW_RPCRDMA_MAX_PROPS * 4 + 8], wr[UIW_RPCRDMA_MAX_PROPS * 4 + 8];
    struct uiw_rpcrdma_hdr a;
    base_hdr(c, &a, h->xid, UIW_RDMA2_RESPROP);
    /* ids may be large (experimental): build the subsets only of ids that fit */
    uint32_t dfit[UIW_RPCRDMA_MAX_PROPS], rfit[UIW_RPCRDMA_MAX_PROPS], ndf = 0, nrf = 0;
    for (uint32_t i = 0; i < nd; i++)
        if (done[i] < sizeof(wd) * 8)
            dfit[ndf++] = done[i];
    for (uint32_t i = 0; i < nr; i++)
        if (rej[i] < sizeof(wr) * 8)
            rfit[nrf++] = rej[i];
    if (uiw_rpcrdma_subset_build(&a.u.resprop.done, wd, sizeof(wd), dfit, ndf) < 0 ||
        uiw_rpcrdma_subset_build(&a.u.resprop.rejected, wr, sizeof(wr), rfit, nrf) < 0)
        return;
    a.u.resprop.other.n = no;
    a.u.resprop.other.props = other;
    uiw__rr_send_ctrl(c, &a);
}

/* The answer to our REQPROP. */
static void resprop_in(struct uiw__rr_conn *c, const struct uiw_rpcrdma_hdr *h)
{
    struct uiw__rr_props *p = &c->props;
    if (!p->req_pending || atomic_load(&p->req_answered) || h->xid != p->req_xid)
        return; /* not an answer to a request of ours: ignored */
    for (unsigned i = 0; i < p->req_n; i++) {
        struct uiw_rpc_prop_req *r = &p->req[i];
        bool d = uiw_rpcrdma_subset_has(&h->u.resprop.done, r->which);
        bool x = uiw_rpcrdma_subset_has(&h->u.resprop.rejected, r->which);
        const struct uiw_rpcrdma_prop *o = uiw_rpcrdma_propset_find(&h->u.resprop.other, r->which);
        /* in none, or in more than one: rejected (draft 5.3.3) */
        if ((int)d + (int)x + (o != NULL) != 1 || x) {
            r->result = UIW_RPC_PROP_REJECTED;
        } else if (d) {
            r->result = UIW_RPC_PROP_DONE;
            apply(c, r->which, r->value);
        } else {
            r->result = UIW_RPC_PROP_OTHER;
            if (!experimental(r->which))
                r->value = o->value;
            apply(c, r->which, r->value);
        }
    }
    /* rdma_other entries for properties not asked for are ignored */
    uiw__rr_props_sizes(c);
    atomic_store(&p->req_answered, true);
    uiw__rr_dev_kick(c->dev);
}

bool uiw__rr_props_error(struct uiw__rr_conn *c, const struct uiw_rpcrdma_hdr *h, bool call_too)
{
    struct uiw__rr_props *p = &c->props;
    uint32_t code = h->u.error.errcode;
    if (h->vers != 2 || !p->req_pending || atomic_load(&p->req_answered) || h->xid != p->req_xid)
        return false;
    /* the xid of a REQPROP may be a call's too (draft 5.3.2): the call takes the errors a
     * call can get, the REQPROP those only a property message can (INVAL_OPTION: the peer
     * supports no such operation, draft 5.3; INVAL_PROC: it knows no such procedure) */
    if (call_too && code != UIW_RDMA2_ERR_INVAL_OPTION && code != UIW_RDMA2_ERR_INVAL_PROC)
        return false;
    p->req_err = code;
    atomic_store(&p->req_answered, true);
    return true;
}

void uiw__rr_props_rx(struct uiw__rr_conn *c, const struct uiw_rpcrdma_hdr *h)
{
    uiw__lock_take(&c->lock);
    switch (h->proc) {
    case UIW_RDMA2_CONNPROP:
        connprop_in(c, h);
        break;
    case UIW_RDMA2_UPDPROP:
        updprop_in(c, h);
        break;
    case UIW_RDMA2_RESPROP:
        resprop_in(c, h);
        break;
    default:
        break;
    }
    uiw__lock_give(&c->lock);
    if (h->proc == UIW_RDMA2_REQPROP)
        reqprop_in(c, h);
}

/* ---------------------------------------------------------------- requests of ours */

static bool answered(void *arg)
{
    struct uiw__rr_conn *c = arg;
    int st = atomic_load(&c->state);
    return atomic_load(&c->props.req_answered) || st == UIW__RR_C_DEAD || st == UIW__RR_C_DRAINED;
}

int uiw__rr_request_props(struct uiw__rr_conn *c, struct uiw_rpc_prop_req *req, unsigned n,
                          int timeout_ms)
{
    if (!req || n == 0 || n > UIW_RPCRDMA_MAX_PROPS)
        return -EINVAL;
    if (!uiw__rr_conn_usable(c))
        return -ENOTCONN;
    if (c->vers != 2)
        return -EPROTONOSUPPORT;
    struct uiw_rpcrdma_prop want[UIW_RPCRDMA_MAX_PROPS];
    uiw__lock_take(&c->lock);
    for (unsigned i = 0; i < n; i++) {
        if (!peer_changeable(c, req[i].which)) {
            uiw__lock_give(&c->lock);
            return -EPERM;
        }
        struct uiw_rpcrdma_prop p = {.which = req[i].which, .len = 4, .value = req[i].value};
        if (!experimental(p.which) && uiw_rpcrdma_prop_check(&p) != 0) {
            uiw__lock_give(&c->lock);
            return -EINVAL;
        }
        want[i] = p;
    }
    if (c->props.req_pending) {
        uiw__lock_give(&c->lock);
        return -EBUSY;
    }
    c->props.req_pending = true;
    atomic_store(&c->props.req_answered, false);
    c->props.req_err = 0;
    c->props.req_xid = new_xid();
    c->props.req_n = n;
    memcpy(c->props.req, req, n * sizeof(*req));
    uiw__lock_give(&c->lock);
    struct uiw_rpcrdma_hdr h;
    base_hdr(c, &h, c->props.req_xid, UIW_RDMA2_REQPROP);
    h.u.reqprop.want.n = n;
    h.u.reqprop.want.props = want;
    int r = uiw__rr_send_ctrl(c, &h);
    if (r == 0) {
        uint64_t dl = timeout_ms < 0 ? 0 : uiw__rr_now_ns() + (uint64_t)timeout_ms * 1000000u;
        r = uiw__rr_dev_wait(c->dev, answered, c, dl);
    }
    uiw__lock_take(&c->lock);
    if (r == 0 && !atomic_load(&c->props.req_answered))
        r = -ENOTCONN;
    uint32_t e = c->props.req_err;
    if (r == 0 && e)
        r = e == UIW_RDMA2_ERR_INVAL_OPTION || e == UIW_RDMA2_ERR_INVAL_PROC ? -EOPNOTSUPP
                                                                             : -EPROTO;
    if (r == 0)
        memcpy(req, c->props.req, n * sizeof(*req));
    c->props.req_pending = false;
    uiw__lock_give(&c->lock);
    return r;
}

int uiw__rr_update_props(struct uiw__rr_conn *c, const struct uiw_rpc_prop_req *now, unsigned n)
{
    if (!now || n == 0 || n > UIW_RPCRDMA_MAX_PROPS)
        return -EINVAL;
    if (!uiw__rr_conn_usable(c))
        return -ENOTCONN;
    if (c->vers != 2)
        return -EPROTONOSUPPORT;
    struct uiw_rpcrdma_prop p[UIW_RPCRDMA_MAX_PROPS];
    uiw__lock_take(&c->lock);
    for (unsigned i = 0; i < n; i++) {
        uint32_t w = now[i].which, v = now[i].value;
        if (w == UIW_RPCRDMA_PROP_RBSIZ) {
            /* at most our buffers' size; a decrease only when the peer asks (5.2) */
            if (v < c->props.rbsiz || v > c->inline_recv)
                goto inval;
        } else if (w == UIW_RPCRDMA_PROP_BRS) {
            if (v > UIW_RDMA2_BKREQSUP_GENL)
                goto inval;
        } else {
            goto inval; /* experimental ones change through their data (see below) */
        }
        p[i] = (struct uiw_rpcrdma_prop){.which = w, .len = 4, .value = v};
    }
    for (unsigned i = 0; i < n; i++) {
        if (p[i].which == UIW_RPCRDMA_PROP_RBSIZ)
            c->props.rbsiz = p[i].value;
        else
            c->props.brs = p[i].value;
    }
    uiw__lock_give(&c->lock);
    struct uiw_rpcrdma_hdr h;
    base_hdr(c, &h, new_xid(), UIW_RDMA2_UPDPROP);
    h.u.updprop.now.n = n;
    h.u.updprop.now.props = p;
    return uiw__rr_send_ctrl(c, &h);
inval:
    uiw__lock_give(&c->lock);
    return -EINVAL;
}

int uiw__rr_peer_xprop(struct uiw__rr_conn *c, uint32_t which, void *buf, size_t cap)
{
    uiw__lock_take(&c->lock);
    const struct uiw_rpc_xprop *x = peer_x(c, which, NULL);
    int r = -ENOENT;
    if (x) {
        size_t n = x->len < cap ? x->len : cap;
        if (n)
            memcpy(buf, x->data, n);
        r = (int)x->len;
    }
    uiw__lock_give(&c->lock);
    return r;
}
