/*
 * ONC RPC message headers (RFC 5531 section 9): calls and replies, AUTH_NONE and AUTH_SYS
 * (section 8 and appendix A), and the mapping of reply states to libtirpc's clnt_stat.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "rpc/rpc_internal.h"
#include "rpc/xdr_pad.h"

enum { MSG_CALL = 0, MSG_REPLY = 1 };

static bool put(XDR *x, uint32_t v)
{
    long l = (long)(int32_t)v;
    return XDR_PUTLONG(x, &l);
}

static bool get(XDR *x, uint32_t *v)
{
    long l;
    if (!XDR_GETLONG(x, &l))
        return false;
    *v = (uint32_t)l;
    return true;
}

bool uiw__rpc_enc_call(XDR *xdrs, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc,
                       AUTH *auth)
{
    int32_t *p = XDR_INLINE(xdrs, 6 * BYTES_PER_XDR_UNIT);
    if (p) {
        IXDR_PUT_U_INT32(p, xid);
        IXDR_PUT_U_INT32(p, MSG_CALL);
        IXDR_PUT_U_INT32(p, UIW__RPC_VERS);
        IXDR_PUT_U_INT32(p, prog);
        IXDR_PUT_U_INT32(p, vers);
        IXDR_PUT_U_INT32(p, proc);
    } else if (!put(xdrs, xid) || !put(xdrs, MSG_CALL) || !put(xdrs, UIW__RPC_VERS) ||
               !put(xdrs, prog) || !put(xdrs, vers) || !put(xdrs, proc)) {
        return false;
    }
    if (auth)
        return AUTH_MARSHALL(auth, xdrs) != 0;
    /* AUTH_NONE credential and verifier */
    return put(xdrs, AUTH_NONE) && put(xdrs, 0) && put(xdrs, AUTH_NONE) && put(xdrs, 0);
}

static bool get_auth(XDR *x, struct opaque_auth *a, uint8_t *body)
{
    uint32_t fl, len;
    if (!get(x, &fl) || !get(x, &len) || len > MAX_AUTH_BYTES)
        return false;
    a->oa_flavor = (enum_t)fl;
    a->oa_length = len;
    a->oa_base = (caddr_t)body;
    if (len && !XDR_GETBYTES(x, (char *)body, len))
        return false;
    uint32_t pad = (4 - (len & 3)) & 3;
    uint8_t z[4];
    return pad == 0 || XDR_GETBYTES(x, (char *)z, pad);
}

enum clnt_stat uiw__rpc_dec_reply(XDR *xdrs, struct uiw__rpc_rhdr *h, struct rpc_err *err)
{
    uint32_t mt, rs, st;
    memset(err, 0, sizeof(*err));
    if (!get(xdrs, &h->xid) || !get(xdrs, &mt) || mt != MSG_REPLY || !get(xdrs, &rs))
        goto garbage;
    if (rs == MSG_ACCEPTED) {
        if (!get_auth(xdrs, &h->verf, h->verf_body) || !get(xdrs, &st))
            goto garbage;
        switch (st) {
        case SUCCESS:
            return err->re_status = RPC_SUCCESS;
        case PROG_UNAVAIL:
            return err->re_status = RPC_PROGUNAVAIL;
        case PROG_MISMATCH: {
            uint32_t lo, hi;
            if (!get(xdrs, &lo) || !get(xdrs, &hi))
                goto garbage;
            err->re_vers.low = lo;
            err->re_vers.high = hi;
            return err->re_status = RPC_PROGVERSMISMATCH;
        }
        case PROC_UNAVAIL:
            return err->re_status = RPC_PROCUNAVAIL;
        case GARBAGE_ARGS:
            return err->re_status = RPC_CANTDECODEARGS;
        case SYSTEM_ERR:
            return err->re_status = RPC_SYSTEMERROR;
        default:
            err->re_lb.s1 = (int32_t)MSG_ACCEPTED;
            err->re_lb.s2 = (int32_t)st;
            return err->re_status = RPC_FAILED;
        }
    }
    if (rs == MSG_DENIED) {
        if (!get(xdrs, &st))
            goto garbage;
        if (st == RPC_MISMATCH) {
            uint32_t lo, hi;
            if (!get(xdrs, &lo) || !get(xdrs, &hi))
                goto garbage;
            err->re_vers.low = lo;
            err->re_vers.high = hi;
            return err->re_status = RPC_VERSMISMATCH;
        }
        if (st == AUTH_ERROR) {
            uint32_t why;
            if (!get(xdrs, &why))
                goto garbage;
            err->re_why = (enum auth_stat)why;
            return err->re_status = RPC_AUTHERROR;
        }
        err->re_lb.s1 = (int32_t)MSG_DENIED;
        err->re_lb.s2 = (int32_t)st;
        return err->re_status = RPC_FAILED;
    }
garbage:
    err->re_errno = EPROTO;
    return err->re_status = RPC_CANTDECODERES;
}

int uiw__rpc_dec_call(XDR *xdrs, struct uiw__rpc_chdr *h)
{
    uint32_t mt;
    if (!get(xdrs, &h->xid) || !get(xdrs, &mt) || mt != MSG_CALL || !get(xdrs, &h->rpcvers) ||
        !get(xdrs, &h->prog) || !get(xdrs, &h->vers) || !get(xdrs, &h->proc) ||
        !get_auth(xdrs, &h->cred, h->cred_body) || !get_auth(xdrs, &h->verf, h->verf_body))
        return -EPROTO;
    return 0;
}

int uiw__rpc_authsys(const struct opaque_auth *cred, struct uiw__authsys *out)
{
    XDR x;
    xdrmem_create(&x, cred->oa_base, cred->oa_length, XDR_DECODE);
    uint32_t stamp, nlen, uid, gid, ngids;
    int r = -EPROTO;
    if (!get(&x, &stamp) || !get(&x, &nlen) || nlen > MAX_MACHINE_NAME)
        goto out;
    if (nlen && !XDR_GETBYTES(&x, out->name, nlen))
        goto out;
    out->name[nlen] = 0;
    uint32_t pad = (4 - (nlen & 3)) & 3;
    char z[4];
    if (pad && !XDR_GETBYTES(&x, z, pad))
        goto out;
    if (!get(&x, &uid) || !get(&x, &gid) || !get(&x, &ngids) || ngids > NGRPS)
        goto out;
    for (uint32_t i = 0; i < ngids; i++) {
        uint32_t g;
        if (!get(&x, &g))
            goto out;
        out->gids[i] = (gid_t)g;
    }
    if (XDR_GETPOS(&x) != cred->oa_length)
        goto out; /* the body must hold exactly the credential */
    out->p.aup_time = stamp;
    out->p.aup_machname = out->name;
    out->p.aup_uid = (uid_t)uid;
    out->p.aup_gid = (gid_t)gid;
    out->p.aup_len = ngids;
    out->p.aup_gids = out->gids;
    r = 0;
out:
    XDR_DESTROY(&x);
    return r;
}

static bool put_auth(XDR *x, const struct opaque_auth *a)
{
    if (!put(x, (uint32_t)a->oa_flavor) || !put(x, a->oa_length))
        return false;
    if (a->oa_length == 0)
        return true;
    return uiw__xdr_opaque(x, a->oa_base, a->oa_length) != 0;
}

bool uiw__rpc_enc_reply(XDR *xdrs, uint32_t xid, const struct rpc_msg *msg)
{
    const struct reply_body *rb = &msg->rm_reply;
    if (!put(xdrs, xid) || !put(xdrs, MSG_REPLY) || !put(xdrs, (uint32_t)rb->rp_stat))
        return false;
    if (rb->rp_stat == MSG_ACCEPTED) {
        const struct accepted_reply *ar = &rb->rp_acpt;
        if (!put_auth(xdrs, &ar->ar_verf) || !put(xdrs, (uint32_t)ar->ar_stat))
            return false;
        switch (ar->ar_stat) {
        case SUCCESS:
            return ar->ar_results.proc(xdrs, ar->ar_results.where) != 0;
        case PROG_MISMATCH:
            return put(xdrs, (uint32_t)ar->ar_vers.low) && put(xdrs, (uint32_t)ar->ar_vers.high);
        default:
            return true;
        }
    }
    const struct rejected_reply *rj = &rb->rp_rjct;
    if (!put(xdrs, (uint32_t)rj->rj_stat))
        return false;
    if (rj->rj_stat == RPC_MISMATCH)
        return put(xdrs, (uint32_t)rj->rj_vers.low) && put(xdrs, (uint32_t)rj->rj_vers.high);
    return put(xdrs, (uint32_t)rj->rj_why);
}

enum clnt_stat uiw__rpc_stat_of(int status, struct rpc_err *err)
{
    memset(err, 0, sizeof(*err));
    err->re_errno = status < 0 && status > UIW_E_BASE ? -status : EPROTO;
    switch (status) {
    case 0:
        return err->re_status = RPC_SUCCESS;
    case -ETIMEDOUT:
        return err->re_status = RPC_TIMEDOUT;
    case -EMSGSIZE:
    case -ENOMEM:
    case -ENOBUFS:
    case -EOPNOTSUPP: /* a backward call to a client that takes none: not sent */
        return err->re_status = RPC_CANTSEND;
    case -EIO:
        return err->re_status = RPC_SYSTEMERROR;
    case -EOVERFLOW: /* a result larger than its buffer */
    case -EBADMSG:   /* a reply whose chunks are not those of the call */
        return err->re_status = RPC_CANTDECODERES;
    case -ENOTCONN:
    case -ECONNRESET:
    case -ECONNABORTED:
        return err->re_status = RPC_CANTRECV;
    default:
        return err->re_status = RPC_CANTRECV;
    }
}

uint64_t uiw__rpc_deadline(struct timeval tv)
{
    if (tv.tv_sec < 0)
        return 0;
    return uiw__rr_now_ns() + (uint64_t)tv.tv_sec * 1000000000u + (uint64_t)tv.tv_usec * 1000u;
}

void uiw__rpc_msg_accepted(struct rpc_msg *m, enum accept_stat st, uint32_t lo, uint32_t hi)
{
    memset(m, 0, sizeof(*m));
    m->rm_direction = REPLY;
    m->rm_reply.rp_stat = MSG_ACCEPTED;
    m->acpted_rply.ar_verf = _null_auth;
    m->acpted_rply.ar_stat = st;
    m->acpted_rply.ar_vers.low = lo;
    m->acpted_rply.ar_vers.high = hi;
}

void uiw__rpc_msg_denied(struct rpc_msg *m, enum reject_stat st, enum auth_stat why)
{
    memset(m, 0, sizeof(*m));
    m->rm_direction = REPLY;
    m->rm_reply.rp_stat = MSG_DENIED;
    m->rjcted_rply.rj_stat = st;
    if (st == RPC_MISMATCH) {
        m->rjcted_rply.rj_vers.low = UIW__RPC_VERS;
        m->rjcted_rply.rj_vers.high = UIW__RPC_VERS;
    } else {
        m->rjcted_rply.rj_why = why;
    }
}

void uiw__rpc_svcxprt_init(SVCXPRT *x, const struct xp_ops *ops, const struct xp_ops2 *ops2,
                           void *p1, const char *netid, struct sockaddr_storage *raddr,
                           const struct sockaddr_storage *peer)
{
    memset(x, 0, sizeof(*x));
    x->xp_fd = -1;
    x->xp_ops = (struct xp_ops *)(uintptr_t)ops;
    x->xp_ops2 = (struct xp_ops2 *)(uintptr_t)ops2;
    x->xp_p1 = p1;
    x->xp_verf = _null_auth;
    x->xp_netid = (char *)(uintptr_t)netid;
    *raddr = *peer;
    size_t alen = peer->ss_family == AF_INET6  ? sizeof(struct sockaddr_in6)
                  : peer->ss_family == AF_INET ? sizeof(struct sockaddr_in)
                                               : 0;
    memcpy(&x->xp_raddr, raddr, alen < sizeof(x->xp_raddr) ? alen : sizeof(x->xp_raddr));
    x->xp_addrlen = (int)alen;
    x->xp_rtaddr.buf = raddr;
    x->xp_rtaddr.len = (unsigned)alen;
    x->xp_rtaddr.maxlen = sizeof(*raddr);
    if (peer->ss_family == AF_INET6)
        x->xp_port = ntohs(((const struct sockaddr_in6 *)peer)->sin6_port);
    else if (peer->ss_family == AF_INET)
        x->xp_port = ntohs(((const struct sockaddr_in *)peer)->sin_port);
}

bool_t uiw__rpc_xp_recv_none(SVCXPRT *x, struct rpc_msg *m)
{
    (void)x;
    (void)m;
    return FALSE;
}

enum xprt_stat uiw__rpc_xp_stat_idle(SVCXPRT *x)
{
    (void)x;
    return XPRT_IDLE;
}

void uiw__rpc_xp_destroy_none(SVCXPRT *x)
{
    (void)x;
}

bool_t uiw__rpc_xp_control_none(SVCXPRT *x, const u_int rq, void *in)
{
    (void)x;
    (void)rq;
    (void)in;
    return FALSE;
}
