/*
 * The READ and WRITE payloads without a copy of ours.
 *
 * WRITE3args: the payload stays where the transport received it when the XDR stream can
 * hand out a pointer into its buffer (XDR_INLINE: the whole call in one buffer, or a
 * chunk pulled by RDMA Read into a registered buffer); otherwise it is read once into the
 * calling thread's I/O buffer. A payload longer than that buffer (the server's wtmax) is
 * an XDR error: GARBAGE_ARGS. In XDR_FREE the payload is left alone (never ours).
 */
#include <pthread.h>
#include <stdlib.h>

#include "nfs/server.h"
#include "nfs/xdr_data.h"

static __thread void *iobuf;
static __thread size_t iobuf_len;
static __thread u_int ddp_max; /* nonzero: decode WRITE payloads with the RDMA layer */
static pthread_key_t iobuf_key;
static pthread_once_t iobuf_once = PTHREAD_ONCE_INIT;

void uiw__nfs_ddp_args(u_int max)
{
    ddp_max = max;
}

/* The buffer goes with its thread (whoever made the thread). */
static void iobuf_exit(void *p)
{
    free(p);
    iobuf = NULL;
    iobuf_len = 0;
}

static void iobuf_init(void)
{
    pthread_key_create(&iobuf_key, iobuf_exit);
}

void *uiw__nfs_iobuf(size_t len)
{
    if (len > iobuf_len) {
        void *p = NULL;
        if (posix_memalign(&p, 4096, len) != 0)
            return NULL;
        free(iobuf);
        iobuf = p;
        iobuf_len = len;
        pthread_once(&iobuf_once, iobuf_init);
        pthread_setspecific(iobuf_key, p);
    }
    return iobuf;
}

size_t uiw__nfs_iobuf_len(void)
{
    return iobuf_len;
}

void uiw__nfs_iobuf_free(void)
{
    free(iobuf);
    iobuf = NULL;
    iobuf_len = 0;
    pthread_once(&iobuf_once, iobuf_init);
    pthread_setspecific(iobuf_key, NULL);
}

bool_t uiw__xdr_WRITE3args(XDR *x, WRITE3args *a)
{
    if (!xdr_nfs_fh3(x, &a->file) || !xdr_offset3(x, &a->offset) || !xdr_count3(x, &a->count) ||
        !xdr_stable_how(x, &a->stable))
        return FALSE;
    if (ddp_max && x->x_op != XDR_ENCODE) {
        /* RPC-over-RDMA: the payload where the transport put it (a Read chunk's
         * registered buffer), and freed by it. */
        if (x->x_op == XDR_DECODE)
            a->data.data_val = NULL;
        return uiw__nfs_xdr_ddp_bytes(x, &a->data.data_val, &a->data.data_len, ddp_max);
    }
    switch (x->x_op) {
    case XDR_FREE:
        a->data.data_val = NULL;
        a->data.data_len = 0;
        return TRUE;
    case XDR_ENCODE:
        return xdr_bytes(x, &a->data.data_val, &a->data.data_len, ~0u);
    case XDR_DECODE:
        break;
    }
    u_int len;
    if (!xdr_u_int(x, &len) || len > uiw__nfs_iobuf_len())
        return FALSE;
    u_int padded = (len + 3) & ~3u;
    int32_t *p = padded ? XDR_INLINE(x, (int)padded) : NULL;
    if (p) {
        a->data.data_val = (char *)p;
    } else {
        a->data.data_val = uiw__nfs_iobuf(len);
        if (!xdr_opaque(x, a->data.data_val, len))
            return FALSE;
    }
    a->data.data_len = len;
    return TRUE;
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
    return xdr_opaque(x, r->buf, len);
}
