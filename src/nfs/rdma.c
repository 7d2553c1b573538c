/*
 * NFS over RPC-over-RDMA: the project's RPC layer (uiw/rpc.h) serves program 100003
 * version 3 with the same dispatcher as TCP. Its transport moves READ payloads by RDMA
 * Write straight from the buffer the data was pread into (uiw_svc_getbuf: registered
 * memory of the server's pool) and WRITE payloads by RDMA Read into registered buffers
 * that are pwritten from where they landed (uiw_xdr_bytes); long READDIR replies go in
 * the client's Reply chunk. Built when the RPC layer is (UIW_NFS_HAVE_RDMA).
 *
 * NFSv4.1 callbacks go on the backward direction of the client's own connection (RFC
 * 8167; Version One inline only, Version Two as the client's BRS says): each connection
 * a CREATE_SESSION or BIND_CONN_TO_SESSION comes on gets a back-channel record
 * (nfs4cb.h) the first time, whose calls the RPC layer sends as nfs4cb encoded them
 * (uiw__rpc_bc_send_raw: the peer's backward credits respected, never waiting) and whose
 * replies it hands back on the thread that received them, matched by XID in nfs4cb as
 * over TCP. When the connection ends, the RPC layer fails its calls in flight and then
 * tells us (uiw__rpc_svc_conn_ended): the record is closed, once, and let go.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nfs/nfs4cb.h"
#include "nfs/server.h"
#include "nfs/xdr_data.h"
#include "rpc/drc.h"
#include "rpc/svc_hooks.h"
#include "rpc/xdr_pad.h"

#if UIW_NFS_HAVE_RDMA
#include <uiw/rpc.h>

struct uiw__nfs_rdma {
    struct uiw_rpc_svc *svc;
};

/* The RPC layer's dispatch routines take no context: one RDMA-serving server at a time
 * per process. */
static struct uiw__nfsd *served;

static void nfs3_rdma(struct svc_req *rq, SVCXPRT *xprt)
{
    uiw__nfs3_dispatch(served, rq, xprt);
}

static void nfs4_rdma(struct svc_req *rq, SVCXPRT *xprt)
{
    uiw__nfs4_dispatch(served, rq, xprt);
}

/* What the duplicate-reply cache keeps, as over TCP: NFSv3's calls that change something
 * (a GETATTR or READ sent again runs again); no NFSv4.1 COMPOUND, whose SEQUENCE slot
 * answers a retry from the session's own reply cache (RFC 8881 section 2.10.6), as knfsd
 * does. */
static bool nfs3_cached(rpcproc_t proc)
{
    return uiw__nfs3_changes((uint32_t)proc);
}

static bool nfs4_cached(rpcproc_t proc)
{
    (void)proc;
    return false;
}

/* ---- the back channel ---- */

/* Backward calls one connection has at once at most: a session's callbacks waiting or
 * in flight (nfs4cb's WAITING_MAX); beyond the peer's credits the transport queues them. */
#define BC_CALLS 64

/* One connection's back channel: nfs4cb's record, and the RPC layer's sender. */
struct bchan {
    struct uiw__nfs4_conn *cn;
    CLIENT *bc;
};

static void bc_reply(void *arg, int status, const void *reply, uint32_t len)
{
    struct bchan *b = arg;
    /* a call that failed (its connection ended) waits in nfs4cb for another */
    if (status == 0)
        uiw__nfs4_conn_reply(b->cn, reply, len);
}

static int bc_send(void *tp, const char *rec, size_t len)
{
    struct bchan *b = tp;
    if (len < 4 || len - 4 > UINT32_MAX)
        return -EINVAL;
    /* RPC-over-RDMA frames messages itself: the record mark stays out */
    return uiw__rpc_bc_send_raw(b->bc, rec + 4, (uint32_t)(len - 4), bc_reply, b);
}

static const struct uiw__nfs4_conn_ops bc_ops = {.send = bc_send, .rdma = 1};

static void *bc_make(void *arg, SVCXPRT *xprt)
{
    (void)arg;
    struct bchan *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    /* NULL when the client takes no backward calls (Version Two, BRS NONE) */
    b->bc = uiw__rpc_svc_bc_raw(xprt, BC_CALLS);
    b->cn = b->bc ? uiw__nfs4_conn_new(&bc_ops, b) : NULL;
    if (!b->cn) {
        if (b->bc)
            clnt_destroy(b->bc);
        free(b);
        return NULL;
    }
    return b;
}

static void bc_ended(void *data)
{
    struct bchan *b = data;
    uiw__nfs4_conn_closed(b->cn); /* its callbacks wait for another connection */
    uiw__nfs4_conn_put(b->cn);
    clnt_destroy(b->bc);
    free(b);
}

struct uiw__nfs4_conn *uiw__nfs_rdma_conn4(SVCXPRT *xprt)
{
    struct bchan *b = served && served->nfs4 ? uiw__rpc_svc_conn_data(xprt, bc_make, NULL) : NULL;
    return b ? b->cn : NULL;
}

/* --max-connections bounds both transports together: a connection request over it is
 * rejected by the connection manager before the RPC layer allocates anything for it. */
static bool admit(void *arg, const struct sockaddr *peer)
{
    struct uiw__nfsd *s = arg;
    if (uiw__nfsd_conn_take(s))
        return true;
    char name[INET6_ADDRSTRLEN + 8];
    uiw__nfsd_addr_name(peer, name, sizeof(name));
    uiw__nfsd_refused(s, UIW__NFSD_REFUSED_CONN,
                      "refused an RPC-over-RDMA connection from %s: the connection limit "
                      "(--max-connections) is reached",
                      name);
    return false;
}

static void gone(void *arg)
{
    uiw__nfsd_conn_give(arg);
}

struct uiw__nfs_rdma *uiw__nfs_rdma_listen(struct uiw__nfsd *s, const char *addr, int port,
                                           int *bound)
{
    if (__atomic_load_n(&served, __ATOMIC_ACQUIRE)) {
        errno = EBUSY;
        return NULL;
    }
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    if (addr && inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
        errno = EAFNOSUPPORT; /* the connection manager listens on IPv4 */
        return NULL;
    }
    struct uiw_rpc_svc_attr a;
    memset(&a, 0, sizeof(a));
    a.addr = addr ? (const struct sockaddr *)&sin : NULL;
    a.port = (uint16_t)port;
    a.xprt.vers_min = 1;
    a.xprt.vers_max = s->opts.vers1_only ? 1 : 2;
    /* --io-timeout: a connection that makes no progress for that long is closed, as over
     * TCP: nothing the server sent goes out (a peer that stopped reading; it is also the
     * sockets' TCP_USER_TIMEOUT), an RDMA Read of a call's chunk stays unanswered, or the
     * peer sends part of a message (of an FPDU) and nothing more of it. The
     * handshake (a peer that connects and sends no MPA request) gets as long, at most the
     * connection manager's default of 10 s. */
    uint32_t io_ms = (s->opts.io_timeout ? s->opts.io_timeout : 60) * 1000u;
    a.xprt.io_timeout_ms = io_ms;
    a.read_timeout_ms = io_ms;
    a.xprt.connect_timeout_ms = io_ms < 10000 ? io_ms : 10000;
    /* 64 calls in flight per connection, as Linux's server grants (svcrdma's
     * max_requests): receives are posted for every credit granted, and an idle
     * connection's cost is mostly those. */
    a.xprt.credits = 64;
    /* Version Two: receive buffers of UIW__NFS_V2_INLINE bytes, offered as RBSIZ, so that
     * a client that offers as much sends WRITE data up to some 31 KiB inline and has READ
     * data as long sent back inline (when it offers no Write chunk). A Version One client
     * (RFC 8797's sizes) or a Version Two one that ignores RBSIZ sends 4 KiB at most, and
     * is sent as much as it says it takes. */
    uint32_t isz = s->opts.inline_size;
    if (!isz && !s->opts.vers1_only)
        isz = UIW__NFS_V2_INLINE;
    a.xprt.inline_recv = isz;
    a.xprt.inline_send = isz;
    a.xprt.ddp_threshold = s->opts.ddp_threshold;
    /* Room for a whole READ or WRITE payload in one message's chunks. */
    a.xprt.max_ddp = uiw__nfsd_max_io(s) + 65536;
    /* A slow call holds up only its own thread. */
    a.nthreads = s->opts.rdma_threads ? s->opts.rdma_threads : 4;
    /* The duplicate-reply cache of both transports (TCP's calls too): room for the calls
     * of many clients over the time they take to connect again and send again; the
     * replies it keeps are small (those of calls that change something, and others
     * without DDP data). */
    a.drc_entries = UIW__NFSD_DRC_ENTRIES;
    a.drc_max_reply = UIW__NFSD_DRC_REPLY;
    struct uiw__nfs_rdma *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    served = s;
    r->svc = uiw_rpc_svc_create(&a);
    if (!r->svc) {
        int err = errno;
        served = NULL;
        free(r);
        errno = err;
        return NULL;
    }
    int rc = uiw_rpc_svc_register(r->svc, 100003, 3, nfs3_rdma);
    if (rc == 0)
        rc = uiw__rpc_svc_cached(r->svc, 100003, 3, nfs3_cached);
    if (rc == 0 && s->nfs4)
        rc = uiw_rpc_svc_register(r->svc, 100003, 4, nfs4_rdma);
    if (rc == 0 && s->nfs4)
        rc = uiw__rpc_svc_cached(r->svc, 100003, 4, nfs4_cached);
    if (rc == 0 && s->nfs4)
        rc = uiw__rpc_svc_conn_ended(r->svc, bc_ended);
    if (rc == 0)
        rc = uiw__rpc_svc_admission(r->svc, admit, gone, s);
    if (rc == 0)
        rc = uiw_rpc_svc_start(r->svc);
    if (rc != 0) {
        uiw_rpc_svc_destroy(r->svc);
        served = NULL;
        free(r);
        errno = -rc;
        return NULL;
    }
    *bound = uiw_rpc_svc_port(r->svc);
    return r;
}

void uiw__nfs_rdma_close(struct uiw__nfs_rdma *r)
{
    if (!r)
        return;
    uiw_rpc_svc_destroy(r->svc);
    served = NULL;
    free(r);
}

int uiw__nfs_rdma_stats(struct uiw__nfs_rdma *r, struct uiw_rpc_xprt_stats *st)
{
    return r ? uiw_rpc_svc_xprt_stats(r->svc, st) : -ENOTCONN;
}

struct uiw__drc *uiw__nfs_rdma_drc(struct uiw__nfs_rdma *r)
{
    return r ? uiw__rpc_svc_drc(r->svc) : NULL;
}

int uiw__nfs_xprt_is_rdma(SVCXPRT *xprt)
{
    return uiw_svc_is_rdma(xprt);
}

void *uiw__nfs_xprt_getbuf(SVCXPRT *xprt, size_t len)
{
    if (uiw_svc_is_rdma(xprt))
        return uiw_svc_getbuf(xprt, len);
    return uiw__nfs_xprt_is_tcp(xprt) ? uiw__nfs_tcp_getbuf(xprt, len) : NULL;
}

bool_t uiw__nfs_xdr_ddp_bytes(XDR *x, char **cpp, u_int *len, u_int max)
{
    return uiw_xdr_bytes(x, cpp, len, max);
}

#else

struct uiw__nfs_rdma *uiw__nfs_rdma_listen(struct uiw__nfsd *s, const char *addr, int port,
                                           int *bound)
{
    (void)s;
    (void)addr;
    (void)port;
    (void)bound;
    errno = EPROTONOSUPPORT;
    return NULL;
}

void uiw__nfs_rdma_close(struct uiw__nfs_rdma *r)
{
    (void)r;
}

int uiw__nfs_rdma_stats(struct uiw__nfs_rdma *r, struct uiw_rpc_xprt_stats *st)
{
    (void)st;
    return r ? -EPROTONOSUPPORT : -ENOTCONN;
}

struct uiw__drc *uiw__nfs_rdma_drc(struct uiw__nfs_rdma *r)
{
    (void)r;
    return NULL;
}

int uiw__nfs_xprt_is_rdma(SVCXPRT *xprt)
{
    (void)xprt;
    return 0;
}

struct uiw__nfs4_conn *uiw__nfs_rdma_conn4(SVCXPRT *xprt)
{
    (void)xprt;
    return NULL;
}

void *uiw__nfs_xprt_getbuf(SVCXPRT *xprt, size_t len)
{
    return uiw__nfs_xprt_is_tcp(xprt) ? uiw__nfs_tcp_getbuf(xprt, len) : NULL;
}

bool_t uiw__nfs_xdr_ddp_bytes(XDR *x, char **cpp, u_int *len, u_int max)
{
    return uiw__xdr_bytes(x, cpp, len, max);
}
#endif
