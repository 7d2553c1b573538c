/*
 * NFS version 4, minor versions 1 and 2 (RFC 8881, RFC 7862): NULL and COMPOUND, behind
 * uiw__nfsd_opts.nfs4 (uiw-nfsd --nfs4-experimental). The first part of it:
 *   - COMPOUND decoded one operation at a time (its number, then that operation's
 *     arguments with rpcgen's routines) and run as it is decoded: an operation number
 *     that is none gets NFS4ERR_OP_ILLEGAL (the OP_ILLEGAL result, section 15.2), an
 *     operation whose arguments do not decode NFS4ERR_BADXDR, a minor version other than
 *     1 and 2 NFS4ERR_MINOR_VERS_MISMATCH and no results; the tag is echoed, and the
 *     first operation that fails ends it (section 16.2.3).
 *   - sessions (nfs4state.c): EXCHANGE_ID, CREATE_SESSION, SEQUENCE (with its slot's reply
 *     cache: a retry gets the bytes of the first reply), DESTROY_SESSION,
 *     DESTROY_CLIENTID, RECLAIM_COMPLETE (accepted: no grace period yet); an operation
 *     other than those that may come alone without SEQUENCE first gets
 *     NFS4ERR_OP_NOT_IN_SESSION, SEQUENCE elsewhere than first NFS4ERR_SEQUENCE_POS, more
 *     operations than the session allows NFS4ERR_TOO_MANY_OPS.
 *   - file handles (NFSv3's, fh.c) and attributes: PUTROOTFH (the root of the one export;
 *     NFS4ERR_NOENT with none or several: no pseudo file system yet), PUTFH, GETFH,
 *     SAVEFH, RESTOREFH, LOOKUP, LOOKUPP, GETATTR (the mandatory attributes and those Linux
 *     asks for first; owners as numbers), ACCESS, SECINFO_NO_NAME; each through the
 *     export's access control as NFSv3 (access.c): NFS4ERR_WRONGSEC for a flavor the
 *     export's sec= leaves out (but not on PUTROOTFH or PUTFH followed by
 *     SECINFO_NO_NAME, which names the flavors it takes), NFS4ERR_ACCESS for a caller
 *     it does not admit.
 * Every other operation gets NFS4ERR_NOTSUPP.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nfs/nfs4state.h"
#include "nfs/server.h"
#include "nfs/vfs.h"
#include "nfs/xdr_data.h"

/* The reply's room: no READ or READDIR yet, so the replies are small. */
#define REPLY_MAX 65536u
/* A COMPOUND of more operations is refused before any runs. */
#define OPS_MAX NFS4_OPS_DECODE

struct fh4 {
    u_int len; /* 0: none */
    char data[UIW__NFS_FH_MAX];
};

struct mem {
    struct mem *next;
    max_align_t data[];
};

struct c4 {
    struct uiw__nfsd *s;
    struct svc_req *rq;
    struct uiw__nfs4_limits lim;
    uint32_t minor;
    struct fh4 cur, saved;
    struct uiw__nfs4_slotref ref; /* the SEQUENCE's slot (ref.ses NULL: none) */
    int cachethis;
    char *replay; /* a retry's reply, from its slot */
    size_t replay_len;
    utf8str_cs tag;
    nfsstat4 status;
    uint32_t nargs, nres, cap;
    uint32_t next_op; /* the operation after the one running (0: none) */
    nfs_argop4 *args;
    nfs_resop4 *res;
    struct mem *mem; /* reply memory, freed after the reply */
};

static void *alloc(struct c4 *c, size_t n)
{
    struct mem *m = malloc(sizeof(*m) + n);
    if (!m)
        return NULL;
    m->next = c->mem;
    c->mem = m;
    return m->data;
}

/* Every result starts with its status (RFC 8881 section 16.2.3). */
static void set_status(nfs_resop4 *r, nfsstat4 st)
{
    memcpy(&r->nfs_resop4_u, &st, sizeof(st));
}

static nfs_fh3 as_fh3(struct fh4 *f)
{
    nfs_fh3 h;
    h.data.data_len = f->len;
    h.data.data_val = f->data;
    return h;
}

/* A caller its export refuses for its flavor (the export's sec=) rather than for who it
 * is: NFS4ERR_WRONGSEC tells the client to try another (SECINFO_NO_NAME lists them). */
static int wrong_flavor(const struct uiw__nfs_export *ex, const struct svc_req *rq)
{
    if (!ex->access || ex->removed)
        return 0;
    const struct netbuf *nb = svc_getrpccaller(rq->rq_xprt);
    if (!nb || !nb->buf || nb->len < sizeof(sa_family_t))
        return 0;
    const struct uiw__nfs_xopts *o = uiw__nfs_xentry_match(ex->access, nb->buf);
    if (!o)
        return 0;
    if (rq->rq_cred.oa_flavor == AUTH_SYS)
        return !(o->flags & UIW__X_SEC_SYS);
    return rq->rq_cred.oa_flavor == AUTH_NONE && !(o->flags & UIW__X_SEC_NONE);
}

/* NFSv3's status as NFSv4's (the same numbers for the same errors), the refusal of an
 * export's access told apart. */
static nfsstat4 st4(nfsstat3 st, const struct uiw__nfs_export *ex, const struct svc_req *rq)
{
    if (st == NFS3ERR_ACCES && ex && wrong_flavor(ex, rq))
        return NFS4ERR_WRONGSEC;
    return (nfsstat4)st;
}

/* The export a handle names and the caller's access to it. */
static nfsstat4 check(struct c4 *c, struct uiw__vfs *v, struct fh4 *f, struct uiw__nfs_export **ex)
{
    if (!f->len)
        return NFS4ERR_NOFILEHANDLE;
    nfs_fh3 h = as_fh3(f);
    *ex = NULL;
    nfsstat3 st = uiw__nfs_fh_export(c->s, &h, ex);
    if (st == NFS3_OK)
        st = uiw__nfsd_access(c->s, *ex, c->rq, 0, &v->cred, &v->xo);
    return st4(st, *ex, c->rq);
}

/* The current handle's file: a new O_PATH descriptor (dir: it must be a directory). */
static nfsstat4 resolve(struct c4 *c, struct uiw__vfs *v, int dir, int *fd,
                        struct uiw__nfs_export **ex)
{
    *fd = -1;
    nfsstat4 st = check(c, v, &c->cur, ex);
    if (st != NFS4_OK)
        return st;
    nfs_fh3 h = as_fh3(&c->cur);
    nfsstat3 s3 = uiw__vfs_resolve(v, &h, dir, fd, ex);
    return st4(s3, *ex, c->rq);
}

static void set_fh(struct fh4 *f, const nfs_fh3 *h)
{
    f->len = h->data.data_len;
    memcpy(f->data, h->data.data_val, f->len);
}

/* The handle of fd, `name` in dfd (NULL: dfd itself or its parent), as the current one. */
static nfsstat4 issue(struct c4 *c, struct uiw__vfs *v, struct uiw__nfs_export *ex, int dfd,
                      const char *name, int fd)
{
    char buf[UIW__NFS_FH_MAX];
    nfs_fh3 h;
    int rc = uiw__nfs_fh_issue(c->s, ex, dfd, name, fd, 0, &h, buf);
    if (rc == -EXDEV && uiw__nfsd_crosses(c->s, c->rq, v->xo, fd))
        rc = uiw__nfs_fh_issue(c->s, ex, dfd, name, fd, 1, &h, buf);
    if (rc == -EXDEV)
        return NFS4ERR_ACCESS;
    if (rc != 0)
        return (nfsstat4)uiw__nfsd_errno(-rc);
    set_fh(&c->cur, &h);
    return NFS4_OK;
}

/* ---- file handles ---- */

/* A put-filehandle operation's check of the caller's access to the export (RFC 8881
 * section 2.6.3.1.1): a flavor the export refuses gets NFS4ERR_WRONGSEC, unless
 * SECINFO_NO_NAME comes next to tell the client which flavors it takes. */
static nfsstat4 put_access(struct c4 *c, struct uiw__vfs *v, struct uiw__nfs_export *ex)
{
    nfsstat4 st = st4(uiw__nfsd_access(c->s, ex, c->rq, 0, &v->cred, &v->xo), ex, c->rq);
    return st == NFS4ERR_WRONGSEC && c->next_op == OP_SECINFO_NO_NAME ? NFS4_OK : st;
}

static nfsstat4 op_putrootfh(struct c4 *c, struct uiw__vfs *v)
{
    struct uiw__nfs_export *ex = NULL;
    for (unsigned i = 0; i < c->s->nexports; i++) {
        if (c->s->exports[i].removed)
            continue;
        if (ex)
            return NFS4ERR_NOENT; /* several: no pseudo file system joins them yet */
        ex = &c->s->exports[i];
    }
    if (!ex)
        return NFS4ERR_NOENT;
    nfsstat4 st = put_access(c, v, ex);
    if (st != NFS4_OK)
        return st;
    int fd = fcntl(ex->rootfd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        return NFS4ERR_SERVERFAULT;
    st = issue(c, v, ex, -1, NULL, fd);
    close(fd);
    return st;
}

static nfsstat4 op_putfh(struct c4 *c, struct uiw__vfs *v, const PUTFH4args *a)
{
    if (a->object.nfs_fh4_len == 0 || a->object.nfs_fh4_len > UIW__NFS_FH_MAX)
        return NFS4ERR_BADHANDLE;
    nfs_fh3 h;
    h.data.data_len = a->object.nfs_fh4_len;
    h.data.data_val = a->object.nfs_fh4_val;
    struct uiw__nfs_export *ex;
    nfsstat3 s3 = uiw__nfs_fh_export(c->s, &h, &ex);
    if (s3 != NFS3_OK)
        return (nfsstat4)s3;
    nfsstat4 st = put_access(c, v, ex);
    if (st == NFS4_OK)
        set_fh(&c->cur, &h);
    return st;
}

static nfsstat4 op_getfh(struct c4 *c, GETFH4resok *r)
{
    if (!c->cur.len)
        return NFS4ERR_NOFILEHANDLE;
    char *p = alloc(c, c->cur.len);
    if (!p)
        return NFS4ERR_SERVERFAULT;
    memcpy(p, c->cur.data, c->cur.len);
    r->object.nfs_fh4_len = c->cur.len;
    r->object.nfs_fh4_val = p;
    return NFS4_OK;
}

/* RFC 8881 section 18.9.3 (LOOKUP's names): NFS4ERR_INVAL for an empty one,
 * NFS4ERR_BADNAME for "." and ".." and one with '/', NFS4ERR_NAMETOOLONG past NAME_MAX. */
static nfsstat4 check_name(const component4 *n, char out[NAME_MAX + 1])
{
    if (n->utf8string_len == 0)
        return NFS4ERR_INVAL;
    if (n->utf8string_len > NAME_MAX)
        return NFS4ERR_NAMETOOLONG;
    memcpy(out, n->utf8string_val, n->utf8string_len);
    out[n->utf8string_len] = 0;
    if (strlen(out) != n->utf8string_len || strchr(out, '/') || strcmp(out, ".") == 0 ||
        strcmp(out, "..") == 0)
        return NFS4ERR_BADNAME;
    return NFS4_OK;
}

static nfsstat4 lookup(struct c4 *c, struct uiw__vfs *v, const char *name)
{
    int dfd, fd = -1;
    struct uiw__nfs_export *ex;
    nfsstat4 st = resolve(c, v, 1, &dfd, &ex);
    if (st != NFS4_OK)
        return st;
    if (!name) {
        struct stat sb;
        if (fstat(dfd, &sb) == 0 && sb.st_dev == ex->dev && sb.st_ino == ex->ino) {
            close(dfd);
            return NFS4ERR_NOENT; /* nothing above an export's root (section 18.14.3) */
        }
    }
    if (uiw__vfs_enter(v) != 0) {
        close(dfd);
        return NFS4ERR_PERM;
    }
    fd = openat(dfd, name ? name : "..", O_PATH | O_NOFOLLOW | O_CLOEXEC);
    int err = errno;
    uiw__vfs_leave(v);
    if (fd < 0)
        st = (nfsstat4)uiw__nfsd_errno(err);
    else
        st = issue(c, v, ex, dfd, name, fd);
    if (fd >= 0)
        close(fd);
    close(dfd);
    return st;
}

static nfsstat4 op_lookup(struct c4 *c, struct uiw__vfs *v, const LOOKUP4args *a)
{
    if (!c->cur.len)
        return NFS4ERR_NOFILEHANDLE;
    char name[NAME_MAX + 1];
    nfsstat4 st = check_name(&a->objname, name);
    return st != NFS4_OK ? st : lookup(c, v, name);
}

static nfsstat4 op_access(struct c4 *c, struct uiw__vfs *v, const ACCESS4args *a, ACCESS4resok *r)
{
    int fd;
    struct uiw__nfs_export *ex;
    nfsstat4 st = resolve(c, v, 0, &fd, &ex);
    if (st != NFS4_OK)
        return st;
    struct stat sb;
    int dir = fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode);
    uint32_t all = ACCESS4_READ | ACCESS4_LOOKUP | ACCESS4_MODIFY | ACCESS4_EXTEND |
                   ACCESS4_DELETE | ACCESS4_EXECUTE;
    uint32_t want = a->access & all, got;
    if (uiw__vfs_access(v, fd, dir, want, &got) != 0) {
        close(fd);
        return NFS4ERR_PERM;
    }
    close(fd);
    r->supported = want;
    r->access = got;
    return NFS4_OK;
}

static nfsstat4 op_secinfo_no_name(struct c4 *c, const SECINFO_NO_NAME4args *a, SECINFO4resok *r)
{
    if (!c->cur.len)
        return NFS4ERR_NOFILEHANDLE;
    if (*a != SECINFO_STYLE4_CURRENT_FH && *a != SECINFO_STYLE4_PARENT)
        return NFS4ERR_INVAL;
    nfs_fh3 h = as_fh3(&c->cur);
    struct uiw__nfs_export *ex;
    nfsstat3 s3 = uiw__nfs_fh_export(c->s, &h, &ex);
    if (s3 != NFS3_OK)
        return (nfsstat4)s3;
    /* the flavors the export takes from this client, whatever this call's flavor is */
    unsigned flags = UIW__X_SEC_SYS | UIW__X_SEC_NONE;
    if (ex->access) {
        const struct netbuf *nb = svc_getrpccaller(c->rq->rq_xprt);
        const struct uiw__nfs_xopts *o = NULL;
        if (!ex->removed && nb && nb->buf && nb->len >= sizeof(sa_family_t))
            o = uiw__nfs_xentry_match(ex->access, nb->buf);
        if (!o)
            return NFS4ERR_ACCESS;
        flags = o->flags;
    }
    secinfo4 *v = alloc(c, 2 * sizeof(*v));
    if (!v)
        return NFS4ERR_SERVERFAULT;
    memset(v, 0, 2 * sizeof(*v));
    u_int n = 0;
    if (flags & UIW__X_SEC_SYS)
        v[n++].flavor = AUTH_SYS;
    if (flags & UIW__X_SEC_NONE)
        v[n++].flavor = AUTH_NONE;
    r->SECINFO4resok_len = n;
    r->SECINFO4resok_val = v;
    c->cur.len = 0; /* section 18.45.3: it consumes the current handle */
    return NFS4_OK;
}

/* ---- attributes (RFC 8881 section 5) ---- */

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
static bool_t put_attr(struct c4 *c, XDR *x, unsigned n, const fattr3 *a)
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

static nfsstat4 op_getattr(struct c4 *c, struct uiw__vfs *v, const GETATTR4args *a,
                           GETATTR4resok *r)
{
    struct uiw__nfs_export *ex;
    nfsstat4 st = check(c, v, &c->cur, &ex);
    if (st != NFS4_OK)
        return st;
    struct stat sb;
    nfs_fh3 h = as_fh3(&c->cur);
    nfsstat3 s3 = uiw__vfs_stat(v, &h, &sb, &ex);
    if (s3 != NFS3_OK)
        return st4(s3, ex, c->rq);
    fattr3 f;
    uiw__nfsd_fattr(&sb, ex, &f);
    uint32_t sup[ATTR_WORDS], *mask = alloc(c, ATTR_WORDS * sizeof(uint32_t));
    char *vals = alloc(c, 4096);
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

/* ---- COMPOUND (RFC 8881 sections 2.10.6, 16.2) ---- */

/* May come without SEQUENCE first, as the only operation (section 2.10.6.2 ff.). */
static int sessionless(uint32_t op)
{
    return op == OP_EXCHANGE_ID || op == OP_CREATE_SESSION || op == OP_DESTROY_SESSION ||
           op == OP_DESTROY_CLIENTID || op == OP_BIND_CONN_TO_SESSION;
}

/* Operation numbers of the COMPOUND's minor version (section 16.2.3, RFC 7862 section 15). */
static int legal(const struct c4 *c, uint32_t op)
{
    return op >= OP_ACCESS && op <= (c->minor == 1 ? OP_RECLAIM_COMPLETE : OP_CLONE);
}

/* Run operation i (its arguments decoded into c->args[i]); its result into c->res[i]. */
static nfsstat4 run_op(struct c4 *c, uint32_t i)
{
    nfs_argop4 *a = &c->args[i];
    nfs_resop4 *r = &c->res[i];
    uint32_t op = a->argop;
    r->resop = op;
    if (op == OP_SEQUENCE && i > 0)
        return NFS4ERR_SEQUENCE_POS;
    if (i == 0 && op != OP_SEQUENCE) {
        if (!sessionless(op))
            return NFS4ERR_OP_NOT_IN_SESSION;
        if (c->nargs > 1)
            return NFS4ERR_NOT_ONLY_OP;
    }
    struct uiw__vfs v;
    uiw__vfs_init(&v, c->s, c->rq, 0);
    nfsstat4 st = NFS4ERR_NOTSUPP;
    switch (op) {
    case OP_SEQUENCE: {
        SEQUENCE4args *sa = &a->nfs_argop4_u.opsequence;
        st = uiw__nfs4_sequence(c->s->nfs4, sa, c->nargs,
                                &r->nfs_resop4_u.opsequence.SEQUENCE4res_u.sr_resok4, &c->ref,
                                &c->replay, &c->replay_len);
        c->cachethis = sa->sa_cachethis;
        break;
    }
    case OP_EXCHANGE_ID:
        st = uiw__nfs4_exchange_id(c->s->nfs4, &a->nfs_argop4_u.opexchange_id,
                                   &r->nfs_resop4_u.opexchange_id.EXCHANGE_ID4res_u.eir_resok4);
        break;
    case OP_CREATE_SESSION:
        st = uiw__nfs4_create_session(
            c->s->nfs4, &c->lim, &a->nfs_argop4_u.opcreate_session,
            &r->nfs_resop4_u.opcreate_session.CREATE_SESSION4res_u.csr_resok4);
        break;
    case OP_DESTROY_SESSION:
        st = uiw__nfs4_destroy_session(c->s->nfs4, a->nfs_argop4_u.opdestroy_session.dsa_sessionid);
        break;
    case OP_DESTROY_CLIENTID:
        st =
            uiw__nfs4_destroy_clientid(c->s->nfs4, a->nfs_argop4_u.opdestroy_clientid.dca_clientid);
        break;
    case OP_RECLAIM_COMPLETE:
        st = NFS4_OK; /* no grace period yet: nothing to reclaim */
        break;
    case OP_PUTROOTFH:
        st = op_putrootfh(c, &v);
        break;
    case OP_PUTFH:
        st = op_putfh(c, &v, &a->nfs_argop4_u.opputfh);
        break;
    case OP_GETFH:
        st = op_getfh(c, &r->nfs_resop4_u.opgetfh.GETFH4res_u.resok4);
        break;
    case OP_SAVEFH:
        st = c->cur.len ? NFS4_OK : NFS4ERR_NOFILEHANDLE;
        if (st == NFS4_OK)
            c->saved = c->cur;
        break;
    case OP_RESTOREFH:
        st = c->saved.len ? NFS4_OK : NFS4ERR_RESTOREFH;
        if (st == NFS4_OK)
            c->cur = c->saved;
        break;
    case OP_LOOKUP:
        st = op_lookup(c, &v, &a->nfs_argop4_u.oplookup);
        break;
    case OP_LOOKUPP:
        st = c->cur.len ? lookup(c, &v, NULL) : NFS4ERR_NOFILEHANDLE;
        break;
    case OP_GETATTR:
        st = op_getattr(c, &v, &a->nfs_argop4_u.opgetattr,
                        &r->nfs_resop4_u.opgetattr.GETATTR4res_u.resok4);
        break;
    case OP_ACCESS:
        st = op_access(c, &v, &a->nfs_argop4_u.opaccess,
                       &r->nfs_resop4_u.opaccess.ACCESS4res_u.resok4);
        break;
    case OP_SECINFO_NO_NAME:
        st = op_secinfo_no_name(c, &a->nfs_argop4_u.opsecinfo_no_name,
                                &r->nfs_resop4_u.opsecinfo_no_name.SECINFO4res_u.resok4);
        break;
    default:
        break;
    }
    uiw__vfs_leave(&v);
    return st;
}

/* The arguments, decoded and run one operation at a time: svc_getargs's routine (it
 * fails only for what is not a COMPOUND's XDR before its operations). */
static bool_t compound(XDR *x, void *p)
{
    struct c4 *c = p;
    if (x->x_op == XDR_FREE)
        return TRUE; /* freed by the dispatcher */
    uint32_t count;
    if (!xdr_utf8str_cs(x, &c->tag) || !xdr_uint32_t(x, &c->minor) || !xdr_uint32_t(x, &count))
        return FALSE;
    if (c->minor != 1 && c->minor != 2) {
        c->status = NFS4ERR_MINOR_VERS_MISMATCH; /* no results (section 16.2.3) */
        return TRUE;
    }
    if (count > OPS_MAX) {
        c->status = NFS4ERR_TOO_MANY_OPS;
        return TRUE;
    }
    c->nargs = count;
    /* a COMPOUND runs at most the session's ca_maxoperations: SEQUENCE refuses more, and
     * without it only the first operation runs */
    c->cap = count < c->lim.max_ops ? count : c->lim.max_ops;
    c->args = calloc(c->cap ? c->cap : 1, sizeof(*c->args));
    c->res = calloc(c->cap ? c->cap : 1, sizeof(*c->res));
    if (!c->args || !c->res) {
        c->status = NFS4ERR_SERVERFAULT;
        return TRUE;
    }
    for (uint32_t i = 0; i < count && i < c->cap; i++) {
        u_int at = xdr_getpos(x);
        uint32_t op;
        if (!xdr_uint32_t(x, &op)) {
            c->status = NFS4ERR_BADXDR;
            return TRUE;
        }
        nfs_resop4 *r = &c->res[c->nres++];
        if (!legal(c, op)) {
            r->resop = OP_ILLEGAL; /* section 15.2: the OP_ILLEGAL result */
            c->status = NFS4ERR_OP_ILLEGAL;
            set_status(r, c->status);
            return TRUE;
        }
        r->resop = op;
        if (!xdr_setpos(x, at) || !xdr_nfs_argop4(x, &c->args[i])) {
            c->status = NFS4ERR_BADXDR;
            set_status(r, c->status);
            return TRUE;
        }
        /* the next operation's number, looked at (a put-filehandle operation lets
         * SECINFO_NO_NAME after it answer for a flavor the export refuses) */
        at = xdr_getpos(x);
        c->next_op = 0;
        if (i + 1 < count && (!xdr_uint32_t(x, &c->next_op) || !xdr_setpos(x, at)))
            c->next_op = 0;
        c->status = run_op(c, i);
        set_status(r, c->status);
        if (c->replay || c->status != NFS4_OK)
            return TRUE;
    }
    return TRUE;
}

/* The results, encoded. */
static bool_t enc_res(XDR *x, struct c4 *c)
{
    uint32_t st = c->status, n = c->nres;
    if (!xdr_uint32_t(x, &st) || !xdr_utf8str_cs(x, &c->tag) || !xdr_uint32_t(x, &n))
        return FALSE;
    /* a failed operation's result is its status and what its XDR has for that status
     * (nothing for most; the zeroed rest for the others) */
    for (uint32_t i = 0; i < n; i++)
        if (!xdr_nfs_resop4(x, &c->res[i]))
            return FALSE;
    return TRUE;
}

struct blob {
    char *p;
    u_int len;
};

static bool_t xdr_blob(XDR *x, void *p)
{
    struct blob *b = p;
    return xdr_opaque(x, b->p, b->len);
}

static void dispatch(struct uiw__nfsd *s, struct svc_req *rq, SVCXPRT *xprt)
{
    if (rq->rq_proc == 0) {
        svc_getargs(xprt, UIW__XDRPROC(xdr_void), NULL);
        svc_sendreply(xprt, UIW__XDRPROC(xdr_void), NULL);
        return;
    }
    if (rq->rq_proc != 1) {
        svcerr_noproc(xprt);
        return;
    }
    struct c4 *c = calloc(1, sizeof(*c));
    if (!c) {
        svcerr_systemerr(xprt);
        return;
    }
    c->s = s;
    c->rq = rq;
    uiw__nfs4_limits(s, &c->lim);
    if (!svc_getargs(xprt, UIW__XDRPROC(compound), (caddr_t)c)) {
        svcerr_decode(xprt);
        goto out;
    }
    struct blob b = {0};
    if (c->replay) {
        b.p = c->replay; /* a retry: the bytes of the first reply */
        b.len = (u_int)c->replay_len;
    } else if ((b.p = malloc(REPLY_MAX)) != NULL) {
        XDR x;
        xdrmem_create(&x, b.p, REPLY_MAX, XDR_ENCODE);
        if (enc_res(&x, c))
            b.len = xdr_getpos(&x);
        xdr_destroy(&x);
    }
    if (!b.len) {
        if (!c->replay)
            free(b.p);
        b.p = NULL;
        svcerr_systemerr(xprt);
    } else if (!svc_sendreply(xprt, UIW__XDRPROC(xdr_blob), (caddr_t)&b) && s->opts.verbose) {
        fprintf(stderr, "uiw-nfsd: COMPOUND: reply not sent\n");
    }
    if (s->opts.verbose > 1)
        fprintf(stderr, "uiw-nfsd: COMPOUND of %u -> %d\n", c->nres, (int)c->status);
    /* the slot keeps the reply when the client asked, or when it is the SEQUENCE alone */
    uiw__nfs4_slot_done(s->nfs4, &c->ref, b.p, b.len, c->cachethis || c->nres == 1);
    if (!c->replay)
        free(b.p);
out:
    free(c->replay);
    for (uint32_t i = 0; i < c->nres && c->args; i++)
        xdr_free(UIW__XDRPROC(xdr_nfs_argop4), (char *)&c->args[i]);
    xdr_free(UIW__XDRPROC(xdr_utf8str_cs), (char *)&c->tag);
    while (c->mem) {
        struct mem *m = c->mem;
        c->mem = m->next;
        free(m);
    }
    free(c->args);
    free(c->res);
    free(c);
}

void uiw__nfs4_dispatch(struct uiw__nfsd *s, struct svc_req *rq, SVCXPRT *xprt)
{
    if (rq->rq_cred.oa_flavor != AUTH_NONE && rq->rq_cred.oa_flavor != AUTH_SYS) {
        svcerr_weakauth(xprt);
        return;
    }
    /* the exports stay as they are while the COMPOUND runs (a reload waits) */
    pthread_rwlock_rdlock(&s->xlock);
    dispatch(s, rq, xprt);
    pthread_rwlock_unlock(&s->xlock);
}
