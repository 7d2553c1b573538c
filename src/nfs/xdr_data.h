/* Hand-written XDR routines: READ and WRITE payloads placed without a copy of their own,
 * and RFC 1813's linked lists coded without recursion. */
#ifndef UIW_NFS_XDR_DATA_H
#define UIW_NFS_XDR_DATA_H

#include <stddef.h>

#include <rpc/rpc.h>

#include "mount3.h"
#include "nfs3.h"

/* RPC-over-RDMA Version Two: the receive buffers offered (RBSIZ) and the largest message
 * sent inline, by default, by uiw-nfs and uiw-nfsd, so that READ and WRITE payloads up
 * to some 31 KiB go inline (Version One keeps RFC 8797's 4 KiB). */
#define UIW__NFS_V2_INLINE 32768u

/* An XDR routine as libtirpc's xdrproc_t (through a plain function pointer type, which
 * the compilers accept as a cast between function types). */
#define UIW__XDRPROC(f) ((xdrproc_t)(void (*)(void))(f))

/* On this thread, decode WRITE payloads of at most max bytes (0: none), with the
 * RPC-over-RDMA layer (uiw_xdr_bytes) when ddp, until set again: the dispatcher sets it
 * for each call. */
void uiw__nfs_args_limits(u_int max, int ddp);

/* A WRITE's payload (NFSv3's, NFSv4's), as the WRITE3args below: decoded in place (the
 * transport's buffer), XDR_FREE leaving alone what is not ours; encoded as xdr_bytes. */
bool_t uiw__nfs_xdr_payload(XDR *x, char **cpp, u_int *len);

/* WRITE3args (server: decode; client: encode). Decoding refuses a payload longer than
 * the limit set; the payload points into the transport's buffer, and XDR_FREE leaves it
 * alone. */
bool_t uiw__xdr_WRITE3args(XDR *x, WRITE3args *a);

/* READ3res decoded with its payload straight into a caller's buffer of cap bytes (a
 * longer payload is an XDR error). */
struct uiw__nfs_read_into {
    READ3res res;
    char *buf;
    u_int cap;
};
bool_t uiw__xdr_READ3res_into(XDR *x, struct uiw__nfs_read_into *r);

/* The results whose lists rpcgen codes recursively (READDIR, READDIRPLUS; MOUNT's DUMP
 * and EXPORT), coded in a loop instead: the same bytes, any length, in every direction
 * (encode, decode, free). */
bool_t uiw__xdr_READDIR3res(XDR *x, READDIR3res *r);
bool_t uiw__xdr_READDIRPLUS3res(XDR *x, READDIRPLUS3res *r);
bool_t uiw__xdr_mountlist(XDR *x, mountlist *l);
bool_t uiw__xdr_mntexports(XDR *x, mntexports *l);

#endif
