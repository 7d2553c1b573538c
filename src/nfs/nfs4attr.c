/*
 * NFSv4 attributes (RFC 8881 section 5): the mandatory ones and those Linux asks for
 * first, owners as numbers; GETATTR.
 */
#include <stdio.h>
#include <sys/stat.h>

#include "nfs/nfs4int.h"

static const unsigned supported_attrs[] = {
    FATTR4_SUPPORTED_ATTRS,
    FATTR4_TYPE,
    FATTR4_FH_EXPIRE_TYPE,
    FATTR4_CHANGE,
    FATTR4_SIZE,
    FATTR4_LINK_SUPPORT,
    FATTR4_SYMLINK_SUPPORT,
    FATTR4_NAMED_ATTR,
    FATTR4_FSID,
    FATTR4_UNIQUE_HANDLES,
    FATTR4_LEASE_TIME,
    FATTR4_RDATTR_ERROR,
    FATTR4_FILEHANDLE,
    FATTR4_FILEID,
    FATTR4_MAXREAD,
    FATTR4_MAXWRITE,
    FATTR4_MODE,
    FATTR4_NUMLINKS,
    FATTR4_OWNER,
    FATTR4_OWNER_GROUP,
    FATTR4_SPACE_USED,
    FATTR4_TIME_ACCESS,
    FATTR4_TIME_METADATA,
    FATTR4_TIME_MODIFY,
    FATTR4_MOUNTED_ON_FILEID,
};
#define ATTR_WORDS 2

static void supported(uint32_t w[ATTR_WORDS])
{
    memset(w, 0, ATTR_WORDS * sizeof(uint32_t));
    for (size_t i = 0; i < sizeof(supported_attrs) / sizeof(supported_attrs[0]); i++)
        w[supported_attrs[i] / 32] |= 1u << (supported_attrs[i] % 32);
}

static bool_t put_time(XDR *x, const nfstime3 *t)
{
    int64_t sec = t->seconds;
    uint32_t ns = t->nseconds;
    return xdr_int64_t(x, &sec) && xdr_uint32_t(x, &ns);
}

static bool_t put_id(XDR *x, uint32_t id)
{
    char buf[16];
    char *p = buf;
    snprintf(buf, sizeof(buf), "%u", id);
    return xdr_string(x, &p, sizeof(buf));
}

/* The value of attribute `n` of the file (a) into x. */
static bool_t put_attr(struct uiw__nfs4_c *c, XDR *x, unsigned n, const fattr3 *a)
{
    uint32_t u32;
    uint64_t u64;
    bool_t b;
    switch (n) {
    case FATTR4_SUPPORTED_ATTRS: {
        uint32_t w[ATTR_WORDS];
        supported(w);
        u32 = ATTR_WORDS;
        return xdr_uint32_t(x, &u32) && xdr_uint32_t(x, &w[0]) && xdr_uint32_t(x, &w[1]);
    }
    case FATTR4_TYPE: {
        static const uint32_t t[] = {
            [NF3REG] = NF4REG, [NF3DIR] = NF4DIR,   [NF3BLK] = NF4BLK,  [NF3CHR] = NF4CHR,
            [NF3LNK] = NF4LNK, [NF3SOCK] = NF4SOCK, [NF3FIFO] = NF4FIFO};
        u32 = a->type <= NF3FIFO ? t[a->type] : NF4REG;
        return xdr_uint32_t(x, &u32);
    }
    case FATTR4_FH_EXPIRE_TYPE:
        u32 = FH4_PERSISTENT;
        return xdr_uint32_t(x, &u32);
    case FATTR4_CHANGE:
        u64 = (uint64_t)a->ctime.seconds * 1000000000u + a->ctime.nseconds;
        return xdr_uint64_t(x, &u64);
    case FATTR4_SIZE:
        return xdr_uint64_t(x, (uint64_t *)(uintptr_t)&a->size);
    case FATTR4_LINK_SUPPORT:
    case FATTR4_SYMLINK_SUPPORT:
    case FATTR4_UNIQUE_HANDLES:
        b = TRUE;
        return xdr_bool(x, &b);
    case FATTR4_NAMED_ATTR:
        b = FALSE;
        return xdr_bool(x, &b);
    case FATTR4_FSID:
        u64 = 0;
        return xdr_uint64_t(x, (uint64_t *)(uintptr_t)&a->fsid) && xdr_uint64_t(x, &u64);
    case FATTR4_LEASE_TIME:
        u32 = uiw__nfs4_lease(c->s->nfs4);
        return xdr_uint32_t(x, &u32);
    case FATTR4_RDATTR_ERROR:
        u32 = NFS4_OK;
        return xdr_uint32_t(x, &u32);
    case FATTR4_FILEHANDLE: {
        char *p = c->cur.data;
        u_int len = c->cur.len;
        return xdr_bytes(x, &p, &len, NFS4_FHSIZE);
    }
    case FATTR4_FILEID:
    case FATTR4_MOUNTED_ON_FILEID:
        return xdr_uint64_t(x, (uint64_t *)(uintptr_t)&a->fileid);
    case FATTR4_MAXREAD:
    case FATTR4_MAXWRITE:
        u64 = uiw__nfsd_max_io(c->s);
        return xdr_uint64_t(x, &u64);
    case FATTR4_MODE:
        u32 = a->mode & 07777;
        return xdr_uint32_t(x, &u32);
    case FATTR4_NUMLINKS:
        u32 = a->nlink;
        return xdr_uint32_t(x, &u32);
    case FATTR4_OWNER:
        return put_id(x, a->uid);
    case FATTR4_OWNER_GROUP:
        return put_id(x, a->gid);
    case FATTR4_SPACE_USED:
        return xdr_uint64_t(x, (uint64_t *)(uintptr_t)&a->used);
    case FATTR4_TIME_ACCESS:
        return put_time(x, &a->atime);
    case FATTR4_TIME_METADATA:
        return put_time(x, &a->ctime);
    case FATTR4_TIME_MODIFY:
        return put_time(x, &a->mtime);
    default:
        return FALSE;
    }
}

nfsstat4 uiw__nfs4_getattr(struct uiw__nfs4_c *c, struct uiw__vfs *v, const GETATTR4args *a,
                           GETATTR4resok *r)
{
    struct uiw__nfs_export *ex;
    nfsstat4 st = uiw__nfs4_check(c, v, &c->cur, &ex);
    if (st != NFS4_OK)
        return st;
    struct stat sb;
    nfs_fh3 h = uiw__nfs4_fh3(&c->cur);
    nfsstat3 s3 = uiw__vfs_stat(v, &h, &sb, &ex);
    if (s3 != NFS3_OK)
        return uiw__nfs4_st4(s3, ex, c->rq);
    fattr3 f;
    uiw__nfsd_fattr(&sb, ex, &f);
    uint32_t sup[ATTR_WORDS], *mask = uiw__nfs4_alloc(c, ATTR_WORDS * sizeof(uint32_t));
    char *vals = uiw__nfs4_alloc(c, 4096);
    if (!mask || !vals)
        return NFS4ERR_SERVERFAULT;
    supported(sup);
    const bitmap4 *req = &a->attr_request;
    for (unsigned w = 0; w < ATTR_WORDS; w++)
        mask[w] = w < req->bitmap4_len ? req->bitmap4_val[w] & sup[w] : 0;
    XDR x;
    xdrmem_create(&x, vals, 4096, XDR_ENCODE);
    for (unsigned n = 0; n < 32 * ATTR_WORDS; n++) {
        if ((mask[n / 32] & (1u << (n % 32))) && !put_attr(c, &x, n, &f)) {
            xdr_destroy(&x);
            return NFS4ERR_SERVERFAULT;
        }
    }
    r->obj_attributes.attrmask.bitmap4_len = mask[1] ? 2 : 1;
    r->obj_attributes.attrmask.bitmap4_val = mask;
    r->obj_attributes.attr_vals.attrlist4_len = xdr_getpos(&x);
    r->obj_attributes.attr_vals.attrlist4_val = vals;
    xdr_destroy(&x);
    return NFS4_OK;
}
