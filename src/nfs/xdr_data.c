/*
 * Hand-written XDR routines: the READ and WRITE payloads without a copy of ours, and the
 * linked lists of RFC 1813 (directory entries, the mount list, the export list) without
 * recursion.
 *
 * WRITE3args: the payload stays where the transport received it: in the call's record
 * (XDR_INLINE: the TCP service holds the whole record in one buffer) or in the
 * registered buffer a Read chunk was pulled into. A payload longer than the server's
 * wtmax is an XDR error: GARBAGE_ARGS. In XDR_FREE the payload is left alone (never
 * ours).
 */
#include <stddef.h>
#include <stdlib.h>

#include "nfs/server.h"
#include "nfs/xdr_data.h"
#include "rpc/xdr_list.h"
#include "rpc/xdr_pad.h"

static __thread u_int write_max; /* nonzero: decoding a call's WRITE payload */
static __thread int write_ddp;   /* ... with the RDMA layer */

void uiw__nfs_args_limits(u_int max, int ddp)
{
    write_max = max;
    write_ddp = ddp;
}

bool_t uiw__nfs_xdr_payload(XDR *x, char **cpp, u_int *len)
{
    if (write_ddp && x->x_op != XDR_ENCODE) {
        /* RPC-over-RDMA: the payload where the transport put it (a Read chunk's
         * registered buffer), and freed by it. */
        if (x->x_op == XDR_DECODE)
            *cpp = NULL;
        return uiw__nfs_xdr_ddp_bytes(x, cpp, len, write_max);
    }
    switch (x->x_op) {
    case XDR_FREE:
        *cpp = NULL;
        *len = 0;
        return TRUE;
    case XDR_ENCODE:
        return uiw__xdr_bytes(x, cpp, len, ~0u);
    case XDR_DECODE:
        break;
    }
    /* The call's record is whole in memory: the payload is left where it lies. */
    u_int n;
    if (!xdr_u_int(x, &n) || n > write_max)
        return FALSE;
    u_int padded = (n + 3) & ~3u;
    int32_t *p = padded ? XDR_INLINE(x, (int)padded) : NULL;
    if (padded && !p)
        return FALSE;
    *cpp = (char *)p;
    *len = n;
    return TRUE;
}

bool_t uiw__xdr_WRITE3args(XDR *x, WRITE3args *a)
{
    return xdr_nfs_fh3(x, &a->file) && xdr_offset3(x, &a->offset) && xdr_count3(x, &a->count) &&
           xdr_stable_how(x, &a->stable) &&
           uiw__nfs_xdr_payload(x, &a->data.data_val, &a->data.data_len);
}

bool_t uiw__xdr_READ3res_into(XDR *x, struct uiw__nfs_read_into *r)
{
    READ3res *res = &r->res;
    if (x->x_op != XDR_DECODE)
        return FALSE;
    if (!xdr_nfsstat3(x, &res->status))
        return FALSE;
    if (res->status != NFS3_OK)
        return xdr_post_op_attr(x, &res->READ3res_u.resfail.file_attributes);
    READ3resok *ok = &res->READ3res_u.resok;
    u_int len;
    if (!xdr_post_op_attr(x, &ok->file_attributes) || !xdr_count3(x, &ok->count) ||
        !xdr_bool(x, &ok->eof) || !xdr_u_int(x, &len) || len > r->cap)
        return FALSE;
    ok->data.data_val = r->buf;
    ok->data.data_len = len;
    return uiw__xdr_opaque(x, r->buf, len);
}

/* ---- linked lists, in a loop (rpc/xdr_list.h) ---- */

static bool_t entry3_fields(XDR *x, void *p)
{
    entry3 *e = p;
    return xdr_fileid3(x, &e->fileid) && xdr_filename3(x, &e->name) && xdr_cookie3(x, &e->cookie);
}

static bool_t entryplus3_fields(XDR *x, void *p)
{
    entryplus3 *e = p;
    return xdr_fileid3(x, &e->fileid) && xdr_filename3(x, &e->name) && xdr_cookie3(x, &e->cookie) &&
           xdr_post_op_attr(x, &e->name_attributes) && xdr_post_op_fh3(x, &e->name_handle);
}

static bool_t mountbody_fields(XDR *x, void *p)
{
    struct mountbody *m = p;
    return xdr_mntname(x, &m->ml_hostname) && xdr_dirpath(x, &m->ml_directory);
}

static bool_t groupnode_fields(XDR *x, void *p)
{
    struct groupnode *g = p;
    return xdr_mntname(x, &g->gr_name);
}

static bool_t exportnode_fields(XDR *x, void *p)
{
    struct exportnode *e = p;
    return xdr_dirpath(x, &e->ex_dir) &&
           uiw__xdr_list(x, (void **)&e->ex_groups, sizeof(struct groupnode),
                         offsetof(struct groupnode, gr_next), groupnode_fields);
}

bool_t uiw__xdr_READDIR3res(XDR *x, READDIR3res *r)
{
    if (!xdr_nfsstat3(x, &r->status))
        return FALSE;
    if (r->status != NFS3_OK)
        return xdr_post_op_attr(x, &r->READDIR3res_u.resfail.dir_attributes);
    READDIR3resok *ok = &r->READDIR3res_u.resok;
    return xdr_post_op_attr(x, &ok->dir_attributes) && xdr_cookieverf3(x, ok->cookieverf) &&
           uiw__xdr_list(x, (void **)&ok->reply.entries, sizeof(entry3),
                         offsetof(entry3, nextentry), entry3_fields) &&
           xdr_bool(x, &ok->reply.eof);
}

bool_t uiw__xdr_READDIRPLUS3res(XDR *x, READDIRPLUS3res *r)
{
    if (!xdr_nfsstat3(x, &r->status))
        return FALSE;
    if (r->status != NFS3_OK)
        return xdr_post_op_attr(x, &r->READDIRPLUS3res_u.resfail.dir_attributes);
    READDIRPLUS3resok *ok = &r->READDIRPLUS3res_u.resok;
    return xdr_post_op_attr(x, &ok->dir_attributes) && xdr_cookieverf3(x, ok->cookieverf) &&
           uiw__xdr_list(x, (void **)&ok->reply.entries, sizeof(entryplus3),
                         offsetof(entryplus3, nextentry), entryplus3_fields) &&
           xdr_bool(x, &ok->reply.eof);
}

bool_t uiw__xdr_mountlist(XDR *x, mountlist *l)
{
    return uiw__xdr_list(x, (void **)l, sizeof(struct mountbody),
                         offsetof(struct mountbody, ml_next), mountbody_fields);
}

bool_t uiw__xdr_mntexports(XDR *x, mntexports *l)
{
    return uiw__xdr_list(x, (void **)l, sizeof(struct exportnode),
                         offsetof(struct exportnode, ex_next), exportnode_fields);
}
