/* Raw ONC RPC records to uiw-nfsd for the NFS tests: calls built by hand (any header,
 * any bytes), replies read whole and decoded. */
#include "rawrpc.h"

#include <arpa/inet.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "nfs/xdr_data.h"
#include "test.h"

void send_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
        CHECK(k > 0);
        c += k;
        n -= (size_t)k;
    }
}

void recv_all(int fd, void *p, size_t n)
{
    char *c = p;
    while (n) {
        struct pollfd pf = {fd, POLLIN, 0};
        CHECK(poll(&pf, 1, 20000) == 1);
        ssize_t k = recv(fd, c, n, 0);
        CHECK(k > 0);
        c += k;
        n -= (size_t)k;
    }
}

uint32_t rawrpc_stamp = 1;

/* An ONC RPC call header (flavor AUTH_NONE, AUTH_SYS or another) at buf, at most 512
 * bytes; returns its length. */
size_t call_header(char *buf, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc, int flavor)
{
    XDR x;
    xdrmem_create(&x, buf, 512, XDR_ENCODE);
    struct rpc_msg m;
    memset(&m, 0, sizeof(m));
    m.rm_xid = xid;
    m.rm_direction = CALL;
    m.rm_call.cb_rpcvers = 2;
    m.rm_call.cb_prog = prog;
    m.rm_call.cb_vers = vers;
    m.rm_call.cb_proc = proc;
    char cred[64];
    uint32_t sys[] = {htonl(rawrpc_stamp), htonl(4),    htonl(0x74657374),
                      htonl(1000),         htonl(1000), htonl(0)};
    m.rm_call.cb_cred.oa_flavor = flavor;
    if (flavor == AUTH_SYS) {
        memcpy(cred, sys, sizeof(sys));
        m.rm_call.cb_cred.oa_base = cred;
        m.rm_call.cb_cred.oa_length = sizeof(sys);
    } else if (flavor != AUTH_NONE) {
        memset(cred, 0, 16);
        m.rm_call.cb_cred.oa_base = cred;
        m.rm_call.cb_cred.oa_length = 16;
    }
    m.rm_call.cb_verf.oa_flavor = AUTH_NONE;
    CHECK(xdr_callmsg(&x, &m));
    size_t hl = xdr_getpos(&x);
    xdr_destroy(&x);
    return hl;
}

/* A reply record, its fragments joined: its length in *rlen, the bytes in a malloc'd
 * buffer. */
char *recv_record(int fd, size_t *rlen)
{
    char *r = NULL;
    *rlen = 0;
    for (;;) {
        uint32_t rm;
        recv_all(fd, &rm, 4);
        rm = ntohl(rm);
        size_t n = rm & 0x7fffffffu;
        CHECK(*rlen + n <= (64u << 20));
        char *more = realloc(r, *rlen + n + 1);
        CHECK(more != NULL);
        r = more;
        recv_all(fd, r + *rlen, n);
        *rlen += n;
        if (rm & 0x80000000u)
            return r;
    }
}

/* One call: header then `args` as raw bytes; returns the reply record in a malloc'd
 * buffer. */
char *call_raw(int fd, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc, int flavor,
               const void *args, size_t alen, size_t *rlen)
{
    size_t cap = 4 + 512 + alen;
    char *rec = malloc(cap);
    CHECK(rec != NULL);
    size_t hl = call_header(rec + 4, xid, prog, vers, proc, flavor);
    if (alen)
        memcpy(rec + 4 + hl, args, alen);
    uint32_t mark = htonl(0x80000000u | (uint32_t)(hl + alen));
    memcpy(rec, &mark, 4);
    send_all(fd, rec, 4 + hl + alen);
    free(rec);
    return recv_record(fd, rlen);
}

/* Decode a reply's header; results (when accepted with SUCCESS) with xres into res. */
void decode_reply(const char *r, size_t n, uint32_t xid, struct rpc_msg *m, xdrproc_t xres,
                  void *res)
{
    XDR x;
    xdrmem_create(&x, (char *)r, (u_int)n, XDR_DECODE);
    memset(m, 0, sizeof(*m));
    m->acpted_rply.ar_results.proc = xres ? xres : UIW__XDRPROC(xdr_void);
    m->acpted_rply.ar_results.where = res;
    CHECK(xdr_replymsg(&x, m));
    CHECK_EQ(m->rm_xid, xid);
    CHECK_EQ(m->rm_direction, REPLY);
    xdr_destroy(&x);
}

void expect_accept(int fd, uint32_t prog, uint32_t vers, uint32_t proc, const void *a, size_t alen,
                   enum accept_stat want)
{
    static uint32_t xid = 100;
    size_t n;
    char *r = call_raw(fd, ++xid, prog, vers, proc, AUTH_SYS, a, alen, &n);
    struct rpc_msg m;
    decode_reply(r, n, xid, &m, NULL, NULL);
    CHECK_EQ(m.rm_reply.rp_stat, MSG_ACCEPTED);
    CHECK_EQ(m.acpted_rply.ar_stat, want);
    if (want == PROG_MISMATCH) {
        CHECK_EQ(m.acpted_rply.ar_vers.low, 3);
        CHECK_EQ(m.acpted_rply.ar_vers.high, 3);
    }
    free(r);
}

/* The NFS status of an accepted reply: the first word of the results, right after the
 * header. */
uint32_t nfs_status(const char *r, size_t n)
{
    XDR x;
    xdrmem_create(&x, (char *)r, (u_int)n, XDR_DECODE);
    struct rpc_msg h;
    memset(&h, 0, sizeof(h));
    h.acpted_rply.ar_results.proc = UIW__XDRPROC(xdr_void);
    CHECK(xdr_replymsg(&x, &h));
    u_int pos = xdr_getpos(&x);
    xdr_destroy(&x);
    uint32_t st;
    CHECK(pos + 4 <= n);
    memcpy(&st, r + pos, 4);
    return ntohl(st);
}

/* GETATTR of handle h (len bytes) as `flavor`: the NFS status. */
uint32_t getattr_raw(int fd, uint32_t xid, int flavor, const char *h, uint32_t len)
{
    uint32_t args[1 + NFS3_FHSIZE / 4];
    args[0] = htonl(len);
    memcpy(args + 1, h, len);
    size_t n;
    char *r = call_raw(fd, xid, 100003, 3, NFSPROC3_GETATTR, flavor, args, 4 + len, &n);
    struct rpc_msg m;
    decode_reply(r, n, xid, &m, NULL, NULL);
    CHECK_EQ(m.rm_reply.rp_stat, MSG_ACCEPTED);
    CHECK_EQ(m.acpted_rply.ar_stat, SUCCESS);
    uint32_t st = nfs_status(r, n);
    free(r);
    return st;
}
