/*
 * One ONC RPC call of a TCP connection, as a function: the call's record in, its reply
 * record out, no I/O of its own (nghttp2's way), so that any number run at once on the
 * TCP service's threads and a fuzz target drives it directly.
 *
 * The header is decoded with the RPC layer's codec (rpc/msg.h): a call that is not ONC
 * RPC version 2 gets RPC_MISMATCH, a credential other than AUTH_NONE or a well-formed
 * AUTH_SYS gets AUTH_ERROR (AUTH_BADCRED), and the program's dispatcher (NFS 3, MOUNT 3,
 * or PROG_UNAVAIL / PROG_MISMATCH) runs on an SVCXPRT of the call's own, so that
 * libtirpc's svc_getargs, svc_sendreply and svcerr_* work on it unchanged. Arguments are
 * decoded straight from the record (a WRITE's payload stays where it was read). The
 * reply is encoded into pooled buffers after a four-byte record mark; bytes the
 * procedure read into memory lent by this call (uiw__nfs_xprt_getbuf: a READ's payload)
 * are referenced where they lie instead of copied.
 *
 * NFS procedures that change something (the ones knfsd keeps replies of: SETATTR, WRITE,
 * CREATE, MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR, RENAME, LINK) go through the server's
 * duplicate-reply cache (rpc/drc.h, shared with RPC-over-RDMA): a call sent again after
 * a lost connection gets the first one's reply instead of running twice; one that comes
 * while the first still runs waits for it (one at a time, 5 s at most: the first one's
 * reply went with its connection) and gets its reply, others get none.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "nfs/server.h"
#include "nfs/xdr_data.h"
#include "rpc/drc.h"
#include "rpc/msg.h"

#define NFS_PROGRAM_NUM   100003
#define MOUNT_PROGRAM_NUM 100005
#define LEND_MIN          512 /* lent bytes referenced, not copied, from this length */

struct tcall;

/* The reply's encoding stream. */
struct renc {
    XDR x; /* first: the XDR * handed to xdr routines is this */
    struct tcall *c;
    struct uiw__nfs_reply *r;
    struct uiw__nfs_buf *cur; /* written now, from `used` on */
    size_t used, seg;         /* seg: where the segment not yet in r->iov starts in cur */
    size_t pos;               /* bytes encoded (the mark not counted) */
    int failed;
};

struct tcall {
    SVCXPRT xprt;
    struct uiw__nfsd *s;
    struct uiw__nfs_pool *pool;
    struct uiw__rpc_chdr hdr;
    struct uiw__authsys sys;
    struct sockaddr_storage raddr;
    char *rec;
    size_t len, args_off;
    struct uiw__nfs_buf *lent; /* memory of uiw__nfs_xprt_getbuf, or reserved for the reply */
    int lent_used;             /* getbuf handed it out */
    struct uiw__nfs_reply *out;
    int replied;
    struct uiw__nfs4_conn *conn4; /* the connection's back channel (the peer's) */
};

static const struct xp_ops tcp_ops;

/* ---------------------------------------------------------------- the reply stream */

static const struct xdr_ops renc_ops;

/* Close the segment written so far into r->iov. */
static int seg_close(struct renc *e)
{
    if (e->used == e->seg)
        return 0;
    struct uiw__nfs_reply *r = e->r;
    if (r->niov == UIW__NFS_REPLY_IOV)
        return -1;
    r->iov[r->niov++] = (struct iovec){e->cur->data + e->seg, e->used - e->seg};
    e->seg = e->used;
    return 0;
}

/* Room for at least one more word: the current buffer, or a new one (small while the
 * reply is small, large after). */
static int room(struct renc *e)
{
    if (e->cur && e->cur->cap - e->used >= 4)
        return 0;
    if (seg_close(e) != 0 || e->r->nown == UIW__NFS_REPLY_IOV)
        return -1;
    struct uiw__nfs_buf *b;
    if (!e->r->nown) {
        b = uiw__nfs_pool_small(e->c->pool);
    } else if (e->c->lent && !e->c->lent_used) {
        b = e->c->lent; /* reserved for this reply (a long READDIR) */
        e->c->lent = NULL;
    } else {
        b = uiw__nfs_pool_large_wait(e->c->pool, 1000);
    }
    if (!b)
        return -1;
    e->r->large += b->large;
    e->r->own[e->r->nown++] = b;
    e->cur = b;
    e->used = e->seg = 0;
    return 0;
}

static bool_t renc_put(struct renc *e, const char *p, size_t n)
{
    while (n) {
        if (room(e) != 0) {
            e->failed = 1;
            return FALSE;
        }
        size_t k = e->cur->cap - e->used;
        if (k > n)
            k = n;
        memcpy(e->cur->data + e->used, p, k);
        e->used += k;
        e->pos += k;
        p += k;
        n -= k;
    }
    return TRUE;
}

static bool_t renc_putlong(XDR *x, const long *lp)
{
    uint32_t v = htonl((uint32_t)*lp);
    return renc_put((struct renc *)x, (const char *)&v, 4);
}

static bool_t renc_putbytes(XDR *x, const char *p, u_int n)
{
    struct renc *e = (struct renc *)x;
    struct uiw__nfs_buf *l = e->c->lent;
    if (l && n >= LEND_MIN && p >= l->data && p + n <= l->data + l->cap) {
        /* the lent buffer goes with the reply: referenced, not copied */
        struct uiw__nfs_reply *r = e->r;
        if (seg_close(e) != 0 || r->niov == UIW__NFS_REPLY_IOV || r->nown == UIW__NFS_REPLY_IOV) {
            e->failed = 1;
            return FALSE;
        }
        r->iov[r->niov++] = (struct iovec){(void *)(uintptr_t)p, n};
        r->large += l->large;
        r->own[r->nown++] = l;
        e->c->lent = NULL;
        e->pos += n;
        return TRUE;
    }
    return renc_put(e, p, n);
}

static bool_t renc_getlong(XDR *x, long *lp)
{
    (void)x;
    (void)lp;
    return FALSE;
}

static bool_t renc_getbytes(XDR *x, char *p, u_int n)
{
    (void)x;
    (void)p;
    (void)n;
    return FALSE;
}

static u_int renc_getpostn(XDR *x)
{
    return (u_int)((struct renc *)x)->pos;
}

static bool_t renc_setpostn(XDR *x, u_int pos)
{
    (void)x;
    (void)pos;
    return FALSE;
}

static int32_t *renc_inline(XDR *x, u_int n)
{
    struct renc *e = (struct renc *)x;
    if (!e->cur || e->cur->cap - e->used < n || (n & 3))
        return NULL;
    int32_t *p = (int32_t *)(void *)(e->cur->data + e->used);
    e->used += n;
    e->pos += n;
    return p;
}

static void renc_destroy(XDR *x)
{
    (void)x;
}

static bool_t renc_control(XDR *x, int rq, void *in)
{
    (void)x;
    (void)rq;
    (void)in;
    return FALSE;
}

static const struct xdr_ops renc_ops = {
    .x_getlong = renc_getlong,
    .x_putlong = renc_putlong,
    .x_getbytes = renc_getbytes,
    .x_putbytes = renc_putbytes,
    .x_getpostn = renc_getpostn,
    .x_setpostn = renc_setpostn,
    .x_inline = renc_inline,
    .x_destroy = renc_destroy,
    .x_control = renc_control,
};

void uiw__nfs_reply_free(struct uiw__nfs_pool *pool, struct uiw__nfs_reply *r)
{
    for (int i = 0; i < r->nown; i++)
        uiw__nfs_pool_put(pool, r->own[i]);
    r->nown = r->niov = 0;
    r->len = r->sent = 0;
    r->large = 0;
}

/* Encode msg as the reply: the record mark, then the message. */
static bool_t send_msg(struct tcall *c, struct rpc_msg *m)
{
    if (c->replied)
        return FALSE; /* one reply per call */
    struct uiw__nfs_reply *r = c->out;
    uiw__nfs_reply_free(c->pool, r);
    struct renc e;
    memset(&e, 0, sizeof(e));
    e.x.x_op = XDR_ENCODE;
    e.x.x_ops = (struct xdr_ops *)(uintptr_t)&renc_ops;
    e.c = c;
    e.r = r;
    static const char nomark[4];
    if (!renc_put(&e, nomark, 4) || !uiw__rpc_enc_reply(&e.x, c->hdr.xid, m) ||
        seg_close(&e) != 0) {
        uiw__nfs_reply_free(c->pool, r);
        return FALSE;
    }
    size_t body = e.pos - 4;
    if (body > 0x7fffffffu) {
        uiw__nfs_reply_free(c->pool, r);
        return FALSE;
    }
    uint32_t mark = htonl(0x80000000u | (uint32_t)body);
    memcpy(r->own[0]->data, &mark, 4);
    r->len = e.pos;
    c->replied = 1;
    return TRUE;
}

static void reject(struct tcall *c, enum accept_stat st, uint32_t lo, uint32_t hi)
{
    struct rpc_msg m;
    uiw__rpc_msg_accepted(&m, st, lo, hi);
    send_msg(c, &m);
}

static void deny(struct tcall *c, enum reject_stat st, enum auth_stat why)
{
    struct rpc_msg m;
    uiw__rpc_msg_denied(&m, st, why);
    send_msg(c, &m);
}

/* ---------------------------------------------------------------- the call's SVCXPRT */

static bool_t t_getargs(SVCXPRT *x, xdrproc_t xargs, void *argsp)
{
    struct tcall *c = x->xp_p1;
    XDR d;
    xdrmem_create(&d, c->rec + c->args_off, (u_int)(c->len - c->args_off), XDR_DECODE);
    bool_t ok = xargs(&d, argsp);
    xdr_destroy(&d);
    return ok;
}

static bool_t t_reply(SVCXPRT *x, struct rpc_msg *m)
{
    return send_msg(x->xp_p1, m);
}

static bool_t t_freeargs(SVCXPRT *x, xdrproc_t xargs, void *argsp)
{
    (void)x;
    xdr_free(xargs, argsp);
    return TRUE;
}

static const struct xp_ops tcp_ops = {
    .xp_recv = uiw__rpc_xp_recv_none,
    .xp_stat = uiw__rpc_xp_stat_idle,
    .xp_getargs = t_getargs,
    .xp_reply = t_reply,
    .xp_freeargs = t_freeargs,
    .xp_destroy = uiw__rpc_xp_destroy_none,
};
static const struct xp_ops2 tcp_ops2 = {.xp_control = uiw__rpc_xp_control_none};

int uiw__nfs_xprt_is_tcp(SVCXPRT *xprt)
{
    return xprt && xprt->xp_ops == &tcp_ops;
}

struct uiw__nfs4_conn *uiw__nfs_xprt_conn4(SVCXPRT *xprt)
{
    if (uiw__nfs_xprt_is_tcp(xprt))
        return ((struct tcall *)xprt->xp_p1)->conn4;
    return uiw__nfs_rdma_conn4(xprt);
}

void *uiw__nfs_tcp_getbuf(SVCXPRT *xprt, size_t len)
{
    struct tcall *c = xprt->xp_p1;
    if (len > uiw__nfsd_max_io(c->s))
        return NULL;
    if (!c->lent) {
        /* a READ's payload: the buffer reserved for it when its record came (tcp.c), or
         * a small one; a large one else only if the pool has one now */
        c->lent =
            len <= UIW__NFS_SMALL ? uiw__nfs_pool_small(c->pool) : uiw__nfs_pool_large(c->pool);
    } else if (c->lent->cap < len) {
        return NULL;
    }
    c->lent_used = c->lent != NULL;
    return c->lent ? c->lent->data : NULL;
}

/* ---------------------------------------------------------------- running it */

bool uiw__nfs3_changes(uint32_t proc)
{
    switch (proc) {
    case 2:  /* SETATTR */
    case 7:  /* WRITE */
    case 8:  /* CREATE */
    case 9:  /* MKDIR */
    case 10: /* SYMLINK */
    case 11: /* MKNOD */
    case 12: /* REMOVE */
    case 13: /* RMDIR */
    case 14: /* RENAME */
    case 15: /* LINK */
        return true;
    default:
        return false;
    }
}

/* The reply of the call's first run, from the cache, as the reply record (1); or none, the
 * first run going on (1); or 0: run it, with *slot the cache's entry for its reply. */
static int replay(struct tcall *c, struct uiw__drc *d, const struct uiw__drc_key *k, int *slot)
{
    struct uiw__nfs_buf *b = uiw__nfs_pool_small(c->pool);
    if (!b)
        return 0; /* run it, uncached */
    uint32_t len = 0;
    switch (uiw__drc_begin(d, k, c, slot, b->data + 4, (uint32_t)b->cap - 4, &len, 5000)) {
    case UIW__DRC_HIT: {
        struct uiw__nfs_reply *r = c->out;
        uint32_t mark = htonl(0x80000000u | len);
        memcpy(b->data, &mark, 4);
        r->own[r->nown++] = b;
        r->iov[r->niov++] = (struct iovec){b->data, 4 + (size_t)len};
        r->len = 4 + (size_t)len;
        c->replied = 1;
        atomic_fetch_add_explicit(&c->s->drc_hits, 1, memory_order_relaxed);
        return 1;
    }
    case UIW__DRC_WAIT:
        uiw__nfs_pool_put(c->pool, b);
        atomic_fetch_add_explicit(&c->s->drc_drops, 1, memory_order_relaxed);
        return 1;
    default:
        uiw__nfs_pool_put(c->pool, b);
        return 0;
    }
}

/* The call's reply goes into the cache (its bytes after the record mark). */
static void keep(struct tcall *c, struct uiw__drc *d, int slot)
{
    struct uiw__nfs_reply *r = c->out;
    struct iovec iov[UIW__NFS_REPLY_IOV];
    int n = 0;
    for (int i = 0; i < r->niov; i++)
        iov[n++] = r->iov[i];
    if (c->replied && n && iov[0].iov_len >= 4) {
        iov[0].iov_base = (char *)iov[0].iov_base + 4;
        iov[0].iov_len -= 4;
    }
    uiw__drc_end(d, slot, c, iov, n, c->replied);
}

int uiw__nfs_call_run(struct uiw__nfsd *s, struct uiw__nfs_pool *pool,
                      const struct uiw__nfs_peer *peer, char *rec, size_t len,
                      struct uiw__nfs_buf *reserved, struct uiw__nfs_reply *out)
{
    struct tcall c;
    memset(&c.hdr, 0, sizeof(c.hdr));
    c.s = s;
    c.pool = pool;
    c.rec = rec;
    c.len = len;
    c.lent = reserved;
    c.lent_used = 0;
    c.out = out;
    c.replied = 0;
    c.conn4 = peer ? peer->conn4 : NULL;
    memset(out, 0, sizeof(*out));
    struct sockaddr_storage none = {.ss_family = AF_UNSPEC};
    uiw__rpc_svcxprt_init(&c.xprt, &tcp_ops, &tcp_ops2, &c, "tcp", &c.raddr,
                          peer ? &peer->addr : &none);
    XDR d;
    xdrmem_create(&d, rec, (u_int)len, XDR_DECODE);
    int rc = uiw__rpc_dec_call(&d, &c.hdr);
    c.args_off = xdr_getpos(&d);
    xdr_destroy(&d);
    if (rc != 0)
        return 0; /* not a call we can read: nothing to answer with (as libtirpc) */
    if (c.hdr.rpcvers != UIW__RPC_VERS) {
        deny(&c, RPC_MISMATCH, 0);
        goto done;
    }
    struct svc_req rq;
    memset(&rq, 0, sizeof(rq));
    rq.rq_prog = c.hdr.prog;
    rq.rq_vers = c.hdr.vers;
    rq.rq_proc = c.hdr.proc;
    rq.rq_cred = c.hdr.cred;
    rq.rq_xprt = &c.xprt;
    switch (c.hdr.cred.oa_flavor) {
    case AUTH_NONE:
        break;
    case AUTH_SYS:
        if (uiw__rpc_authsys(&c.hdr.cred, &c.sys) != 0) {
            deny(&c, AUTH_ERROR, AUTH_BADCRED);
            goto done;
        }
        rq.rq_clntcred = &c.sys.p;
        break;
    default:
        deny(&c, AUTH_ERROR, AUTH_BADCRED);
        goto done;
    }
    if (rq.rq_prog == NFS_PROGRAM_NUM) {
        if (rq.rq_vers == 3 && s->drc && uiw__nfs3_changes(rq.rq_proc)) {
            /* the checksum of the arguments, as knfsd's: not of the credential, whose
             * stamp a client may change when it connects again */
            struct uiw__drc_key k;
            uiw__drc_key(&k, UIW__DRC_TCP, c.hdr.xid, c.hdr.prog, c.hdr.vers, c.hdr.proc, &c.raddr,
                         rec + c.args_off, len - c.args_off);
            int slot = -1;
            if (replay(&c, s->drc, &k, &slot) != 0)
                goto done;
            uiw__nfs3_dispatch(s, &rq, &c.xprt);
            if (!c.replied)
                reject(&c, SYSTEM_ERR, 0, 0);
            keep(&c, s->drc, slot);
        } else if (rq.rq_vers == 3)
            uiw__nfs3_dispatch(s, &rq, &c.xprt);
        else if (rq.rq_vers == 4 && s->nfs4)
            uiw__nfs4_dispatch(s, &rq, &c.xprt);
        else
            reject(&c, PROG_MISMATCH, 3, s->nfs4 ? 4 : 3);
    } else if (rq.rq_prog == MOUNT_PROGRAM_NUM) {
        if (rq.rq_vers == 3)
            uiw__mount3_dispatch(s, &rq, &c.xprt);
        else
            reject(&c, PROG_MISMATCH, 3, 3);
    } else {
        reject(&c, PROG_UNAVAIL, 0, 0);
    }
    if (!c.replied) /* a reply that could not be encoded: the call still gets one */
        reject(&c, SYSTEM_ERR, 0, 0);
done:
    uiw__nfs_pool_put(pool, c.lent); /* lent but not referenced by the reply */
    return c.replied;
}

static int get32(const char *rec, size_t len, size_t *at, uint32_t *v)
{
    if (*at > len || len - *at < 4)
        return -1;
    uint32_t n;
    memcpy(&n, rec + *at, 4);
    *v = ntohl(n);
    *at += 4;
    return 0;
}

int uiw__nfs_call_large(const struct uiw__nfsd *s, const char *rec, size_t len)
{
    struct uiw__rpc_chdr h;
    XDR d;
    xdrmem_create(&d, (char *)(uintptr_t)rec, (u_int)len, XDR_DECODE);
    int rc = uiw__rpc_dec_call(&d, &h);
    size_t at = xdr_getpos(&d);
    xdr_destroy(&d);
    if (rc != 0 || h.prog != NFS_PROGRAM_NUM || h.vers != 3)
        return 0;
    /* what comes before the count: the handle, then the offset (READ) or the cookie and
     * its verifier (READDIR, READDIRPLUS: the latter's dircount, then maxcount) */
    size_t skip;
    switch (h.proc) {
    case 6: /* READ */
        skip = 8;
        break;
    case 16: /* READDIR */
        skip = 16;
        break;
    case 17: /* READDIRPLUS */
        skip = 20;
        break;
    default:
        return 0;
    }
    uint32_t fhlen, count;
    if (get32(rec, len, &at, &fhlen) != 0 || fhlen > NFS3_FHSIZE)
        return 0;
    at += ((size_t)fhlen + 3) & ~(size_t)3;
    at += skip;
    if (at > len || get32(rec, len, &at, &count) != 0)
        return 0;
    uint32_t max = uiw__nfsd_max_io(s);
    if (count > max)
        count = max;
    return count > UIW__NFS_SMALL - 1024;
}
