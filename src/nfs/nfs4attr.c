/*
 * NFSv4 attributes (RFC 8881 section 5):
 *   - the mandatory ones, the recommended ones Linux's client asks for on mount and for
 *     its statfs and pathconf (the file system's counts, sizes and limits), owners as
 *     numbers or, with uiw__nfsd_opts.idmap_domain, as name@domain through the system's
 *     passwd and group (as knfsd with and without nfs4_disable_idmapping);
 *   - their encoding for a file (GETATTR, READDIR's entries, VERIFY and NVERIFY, which
 *     compare the encoded values), GETATTR itself;
 *   - the decoding of the settable ones (SETATTR, CREATE's createattrs) into the file-system
 *     layer's uiw__vfs_sattr.
 * Attributes the server does not support are left out of GETATTR's mask (section 5.4);
 * asked to set or verify one, the answer is NFS4ERR_ATTRNOTSUPP.
 */
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/byteorder.h"
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
    FATTR4_ACLSUPPORT,
    FATTR4_CANSETTIME,
    FATTR4_CASE_INSENSITIVE,
    FATTR4_CASE_PRESERVING,
    FATTR4_CHOWN_RESTRICTED,
    FATTR4_FILEHANDLE,
    FATTR4_FILEID,
    FATTR4_FILES_AVAIL,
    FATTR4_FILES_FREE,
    FATTR4_FILES_TOTAL,
    FATTR4_HOMOGENEOUS,
    FATTR4_MAXFILESIZE,
    FATTR4_MAXLINK,
    FATTR4_MAXNAME,
    FATTR4_MAXREAD,
    FATTR4_MAXWRITE,
    FATTR4_MODE,
    FATTR4_NO_TRUNC,
    FATTR4_NUMLINKS,
    FATTR4_OWNER,
    FATTR4_OWNER_GROUP,
    FATTR4_RAWDEV,
    FATTR4_SPACE_AVAIL,
    FATTR4_SPACE_FREE,
    FATTR4_SPACE_TOTAL,
    FATTR4_SPACE_USED,
    FATTR4_TIME_ACCESS,
    FATTR4_TIME_ACCESS_SET,
    FATTR4_TIME_DELTA,
    FATTR4_TIME_METADATA,
    FATTR4_TIME_MODIFY,
    FATTR4_TIME_MODIFY_SET,
    FATTR4_MOUNTED_ON_FILEID,
    FATTR4_FS_LAYOUT_TYPES,
    FATTR4_SUPPATTR_EXCLCREAT,
};

/* The attributes SETATTR sets (the others supported are read-only: NFS4ERR_INVAL). */
#define SETTABLE(n)                                                                                \
    ((n) == FATTR4_SIZE || (n) == FATTR4_MODE || (n) == FATTR4_OWNER ||                            \
     (n) == FATTR4_OWNER_GROUP || (n) == FATTR4_TIME_ACCESS_SET || (n) == FATTR4_TIME_MODIFY_SET)
/* Write-only: GETATTR, READDIR and VERIFY asking for them get NFS4ERR_INVAL. */
#define WRITE_ONLY(n) ((n) == FATTR4_TIME_ACCESS_SET || (n) == FATTR4_TIME_MODIFY_SET)
/* Of the file system rather than the file: fstatfs is asked only for these. */
#define OF_FS(n)                                                                                   \
    ((n) == FATTR4_FILES_AVAIL || (n) == FATTR4_FILES_FREE || (n) == FATTR4_FILES_TOTAL ||         \
     (n) == FATTR4_SPACE_AVAIL || (n) == FATTR4_SPACE_FREE || (n) == FATTR4_SPACE_TOTAL ||         \
     (n) == FATTR4_MAXNAME)

static uint32_t supported_words[UIW__NFS4_ATTR_WORDS];
/* WRITE_ONLY and OF_FS as bitmap words: a request checked a word at a time */
static uint32_t write_only_words[UIW__NFS4_ATTR_WORDS], of_fs_words[UIW__NFS4_ATTR_WORDS];
static pthread_once_t supported_once = PTHREAD_ONCE_INIT;

static void supported_init(void)
{
    for (size_t i = 0; i < sizeof(supported_attrs) / sizeof(supported_attrs[0]); i++)
        supported_words[supported_attrs[i] / 32] |= 1u << (supported_attrs[i] % 32);
    for (unsigned n = 0; n < 32 * UIW__NFS4_ATTR_WORDS; n++) {
        if (WRITE_ONLY(n))
            write_only_words[n / 32] |= 1u << (n % 32);
        if (OF_FS(n))
            of_fs_words[n / 32] |= 1u << (n % 32);
    }
}

/* The supported attributes as bitmap words (worked out once). */
static void supported(uint32_t w[UIW__NFS4_ATTR_WORDS])
{
    pthread_once(&supported_once, supported_init);
    memcpy(w, supported_words, sizeof(supported_words));
}

void uiw__nfs4_bitmap(bitmap4 *b, uint32_t w[UIW__NFS4_ATTR_WORDS])
{
    u_int n = UIW__NFS4_ATTR_WORDS;
    while (n > 0 && !w[n - 1])
        n--;
    b->bitmap4_len = n;
    b->bitmap4_val = w;
}

static int has(const bitmap4 *b, unsigned n)
{
    return n / 32 < b->bitmap4_len && (b->bitmap4_val[n / 32] & (1u << (n % 32)));
}

uint64_t uiw__nfs4_change(const struct stat *st)
{
    return (uint64_t)st->st_ctim.tv_sec * 1000000000u + (uint64_t)st->st_ctim.tv_nsec;
}

/* The domain of name@domain owners: the option, or the host's DNS domain (what follows
 * the first dot of its name), or "localdomain". */
static const char *domain(const struct uiw__nfsd *s, char buf[256])
{
    if (s->opts.idmap_domain)
        return s->opts.idmap_domain;
    char host[256];
    if (gethostname(host, sizeof(host)) == 0) {
        host[sizeof(host) - 1] = 0;
        const char *dot = strchr(host, '.');
        if (dot && dot[1]) {
            snprintf(buf, 256, "%s", dot + 1);
            return buf;
        }
    }
    return "localdomain";
}

/* Attribute values as XDR puts them (big-endian words, opaques padded to a word), written
 * straight into the values' buffer: a store per word, where an XDR stream costs a call
 * through its operations and a bounds check per word (a GETATTR has about 30). */
struct aw {
    uint8_t *p, *end;
};

static bool_t aw32(struct aw *w, uint32_t v)
{
    if (w->end - w->p < 4)
        return FALSE;
    uiw__put_be32(w->p, v);
    w->p += 4;
    return TRUE;
}

static bool_t aw64(struct aw *w, uint64_t v)
{
    if (w->end - w->p < 8)
        return FALSE;
    uiw__put_be64(w->p, v);
    w->p += 8;
    return TRUE;
}

/* A variable-length opaque or string of n bytes (at most max, as xdr_bytes and xdr_string
 * refuse more). */
static bool_t aw_opaque(struct aw *w, const void *b, size_t n, size_t max)
{
    size_t pad = (4 - (n & 3)) & 3;
    if (n > max || (size_t)(w->end - w->p) < 4 + n + pad)
        return FALSE;
    uiw__put_be32(w->p, (uint32_t)n);
    memcpy(w->p + 4, b, n);
    memset(w->p + 4 + n, 0, pad);
    w->p += 4 + n + pad;
    return TRUE;
}

static bool_t put_time(struct aw *x, const struct timespec *t)
{
    return aw64(x, (uint64_t)(int64_t)t->tv_sec) && aw32(x, (uint32_t)t->tv_nsec);
}

/* A number as an owner's string, written from its end (snprintf's cost, per GETATTR
 * twice). */
static bool_t put_num(struct aw *x, uint32_t id)
{
    char num[12], *e = num + sizeof(num), *p = e;
    do
        *--p = (char)('0' + id % 10);
    while (id /= 10);
    return aw_opaque(x, p, (size_t)(e - p), sizeof(num));
}

/* An owner (group: an owner group): name@domain with the option and a name for it, else
 * the number. */
static bool_t put_id(const struct uiw__nfsd *s, struct aw *x, uint32_t id, int group)
{
    if (!s->opts.idmap_domain)
        return put_num(x, id);
    char buf[512], pwbuf[1024];
    const char *name = NULL;
    struct passwd pw, *pr = NULL;
    struct group gr, *gp = NULL;
    if (!group && getpwuid_r(id, &pw, pwbuf, sizeof(pwbuf), &pr) == 0 && pr)
        name = pr->pw_name;
    if (group && getgrgid_r(id, &gr, pwbuf, sizeof(pwbuf), &gp) == 0 && gp)
        name = gp->gr_name;
    if (!name)
        return put_num(x, id);
    snprintf(buf, sizeof(buf), "%s@%s", name, s->opts.idmap_domain);
    return aw_opaque(x, buf, strlen(buf), sizeof(buf));
}

/* An owner's string (of len bytes) as an id: a number, or name@domain of the server's
 * domain known to passwd (group: group). -1: none (NFS4ERR_BADOWNER). */
static int64_t get_id(const struct uiw__nfsd *s, const char *str, u_int len, int group)
{
    char in[512], dom[256], pwbuf[1024];
    if (len == 0 || len >= sizeof(in))
        return -1;
    memcpy(in, str, len);
    in[len] = 0;
    if (strlen(in) != len)
        return -1;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(in, &end, 10);
    if (in[0] >= '0' && in[0] <= '9' && !*end && !errno && n < 0xffffffffull)
        return (int64_t)n;
    char *at = strrchr(in, '@');
    if (!at || at == in || strcasecmp(at + 1, domain(s, dom)) != 0)
        return -1;
    *at = 0;
    if (group) {
        struct group gr, *gp = NULL;
        if (getgrnam_r(in, &gr, pwbuf, sizeof(pwbuf), &gp) == 0 && gp)
            return gp->gr_gid;
    } else {
        struct passwd pw, *pr = NULL;
        if (getpwnam_r(in, &pw, pwbuf, sizeof(pwbuf), &pr) == 0 && pr)
            return pr->pw_uid;
    }
    return -1;
}

static bool_t put_bitmap(struct aw *x, uint32_t w[UIW__NFS4_ATTR_WORDS])
{
    bitmap4 b;
    uiw__nfs4_bitmap(&b, w);
    bool_t ok = aw32(x, b.bitmap4_len);
    for (u_int i = 0; ok && i < b.bitmap4_len; i++)
        ok = aw32(x, b.bitmap4_val[i]);
    return ok;
}

/* The file whose attributes are encoded. */
struct obj {
    struct uiw__nfs4_c *c;
    const struct stat *sb;
    const struct uiw__nfs_export *ex;
    const struct uiw__nfs4_fh *fh;
    const struct statfs *sf; /* NULL: not asked */
    uint64_t mounted_on;
    fattr3 a; /* NFSv3's attributes of sb, which most of NFSv4's are */
};

/* The value of attribute `n` of the file into x. */
static bool_t put_attr(const struct obj *o, struct aw *x, unsigned n)
{
    const struct stat *sb = o->sb;
    uint32_t u32;
    uint64_t u64;
    bool_t b;
    const fattr3 *a = &o->a;
    switch (n) {
    case FATTR4_SUPPORTED_ATTRS: {
        uint32_t w[UIW__NFS4_ATTR_WORDS];
        supported(w);
        return put_bitmap(x, w);
    }
    case FATTR4_SUPPATTR_EXCLCREAT: {
        /* what an exclusive create sets with its verifier kept in the times */
        uint32_t w[UIW__NFS4_ATTR_WORDS] = {0};
        w[FATTR4_SIZE / 32] |= 1u << (FATTR4_SIZE % 32);
        w[FATTR4_MODE / 32] |= 1u << (FATTR4_MODE % 32);
        w[FATTR4_OWNER / 32] |= 1u << (FATTR4_OWNER % 32);
        w[FATTR4_OWNER_GROUP / 32] |= 1u << (FATTR4_OWNER_GROUP % 32);
        return put_bitmap(x, w);
    }
    case FATTR4_TYPE: {
        static const uint32_t t[] = {
            [NF3REG] = NF4REG, [NF3DIR] = NF4DIR,   [NF3BLK] = NF4BLK,  [NF3CHR] = NF4CHR,
            [NF3LNK] = NF4LNK, [NF3SOCK] = NF4SOCK, [NF3FIFO] = NF4FIFO};
        u32 = a->type <= NF3FIFO ? t[a->type] : NF4REG;
        return aw32(x, u32);
    }
    case FATTR4_FH_EXPIRE_TYPE:
        u32 = FH4_PERSISTENT;
        return aw32(x, u32);
    case FATTR4_CHANGE:
        u64 = uiw__nfs4_change(sb);
        return aw64(x, u64);
    case FATTR4_SIZE:
        return aw64(x, a->size);
    case FATTR4_LINK_SUPPORT:
    case FATTR4_SYMLINK_SUPPORT:
    case FATTR4_UNIQUE_HANDLES:
    case FATTR4_CANSETTIME:
    case FATTR4_CASE_PRESERVING:
    case FATTR4_CHOWN_RESTRICTED:
    case FATTR4_HOMOGENEOUS:
    case FATTR4_NO_TRUNC:
        b = TRUE;
        return aw32(x, (uint32_t)b);
    case FATTR4_NAMED_ATTR:
    case FATTR4_CASE_INSENSITIVE:
        b = FALSE;
        return aw32(x, (uint32_t)b);
    case FATTR4_FSID:
        u64 = o->ex ? 0 : 1; /* the pseudo file system's minor: 1 */
        return aw64(x, a->fsid) && aw64(x, u64);
    case FATTR4_LEASE_TIME:
        u32 = uiw__nfs4_lease(o->c->s->nfs4);
        return aw32(x, u32);
    case FATTR4_RDATTR_ERROR:
        u32 = NFS4_OK;
        return aw32(x, u32);
    case FATTR4_ACLSUPPORT:
        u32 = 0; /* no ACLs */
        return aw32(x, u32);
    case FATTR4_FS_LAYOUT_TYPES:
        u32 = 0; /* no pNFS */
        return aw32(x, u32);
    case FATTR4_FILEHANDLE:
        return aw_opaque(x, o->fh->data, o->fh->len, NFS4_FHSIZE);
    case FATTR4_FILEID:
        return aw64(x, a->fileid);
    case FATTR4_MOUNTED_ON_FILEID:
        u64 = o->mounted_on;
        return aw64(x, u64);
    case FATTR4_FILES_AVAIL:
    case FATTR4_FILES_FREE:
        u64 = (uint64_t)o->sf->f_ffree;
        return aw64(x, u64);
    case FATTR4_FILES_TOTAL:
        u64 = (uint64_t)o->sf->f_files;
        return aw64(x, u64);
    case FATTR4_SPACE_AVAIL:
        u64 = (uint64_t)o->sf->f_bavail * (uint64_t)o->sf->f_bsize;
        return aw64(x, u64);
    case FATTR4_SPACE_FREE:
        u64 = (uint64_t)o->sf->f_bfree * (uint64_t)o->sf->f_bsize;
        return aw64(x, u64);
    case FATTR4_SPACE_TOTAL:
        u64 = (uint64_t)o->sf->f_blocks * (uint64_t)o->sf->f_bsize;
        return aw64(x, u64);
    case FATTR4_MAXNAME:
        /* as NFSv3's PATHCONF says */
        u32 = NAME_MAX;
        if (o->sf->f_namelen > 0 && o->sf->f_namelen < NAME_MAX)
            u32 = (uint32_t)o->sf->f_namelen;
        return aw32(x, u32);
    case FATTR4_MAXLINK:
        u32 = 65000; /* as NFSv3's PATHCONF says */
        return aw32(x, u32);
    case FATTR4_MAXFILESIZE:
        u64 = (uint64_t)INT64_MAX;
        return aw64(x, u64);
    case FATTR4_MAXREAD:
    case FATTR4_MAXWRITE:
        u64 = uiw__nfsd_max_io(o->c->s);
        return aw64(x, u64);
    case FATTR4_MODE:
        u32 = a->mode & 07777;
        return aw32(x, u32);
    case FATTR4_NUMLINKS:
        u32 = a->nlink;
        return aw32(x, u32);
    case FATTR4_OWNER:
        return put_id(o->c->s, x, a->uid, 0);
    case FATTR4_OWNER_GROUP:
        return put_id(o->c->s, x, a->gid, 1);
    case FATTR4_RAWDEV:
        u32 = major(sb->st_rdev);
        b = aw32(x, u32);
        u32 = minor(sb->st_rdev);
        return b && aw32(x, u32);
    case FATTR4_SPACE_USED:
        return aw64(x, a->used);
    case FATTR4_TIME_ACCESS:
        return put_time(x, &sb->st_atim);
    case FATTR4_TIME_DELTA: {
        struct timespec d = {0, 1};
        return put_time(x, &d);
    }
    case FATTR4_TIME_METADATA:
        return put_time(x, &sb->st_ctim);
    case FATTR4_TIME_MODIFY:
        return put_time(x, &sb->st_mtim);
    default:
        return FALSE;
    }
}

nfsstat4 uiw__nfs4_encode(struct uiw__nfs4_c *c, int fd, const struct stat *sb,
                          const struct uiw__nfs_export *ex, const struct uiw__nfs4_fh *fh,
                          uint64_t mounted_on, const bitmap4 *req, fattr4 *out, size_t room)
{
    uint32_t sup[UIW__NFS4_ATTR_WORDS], *mask = uiw__nfs4_alloc(c, sizeof(sup));
    char *vals = uiw__nfs4_alloc(c, room);
    if (!mask || !vals)
        return NFS4ERR_SERVERFAULT;
    supported(sup);
    int fs = 0;
    for (unsigned w = 0; w < UIW__NFS4_ATTR_WORDS; w++) {
        mask[w] = w < req->bitmap4_len ? req->bitmap4_val[w] & sup[w] : 0;
        if (mask[w] & write_only_words[w])
            return NFS4ERR_INVAL;
        fs |= (mask[w] & of_fs_words[w]) != 0;
    }
    struct statfs sf;
    if (fs) {
        memset(&sf, 0, sizeof(sf)); /* a pseudo directory's (fd -1): nothing free, no files */
        if (fd >= 0 && fstatfs(fd, &sf) != 0)
            return (nfsstat4)uiw__nfsd_errno(errno);
    }
    struct obj o = {c, sb, ex, fh, fs ? &sf : NULL, mounted_on, {0}};
    if (ex) {
        uiw__nfsd_fattr(sb, ex, &o.a);
    } else {
        /* a pseudo directory (nfs4pseudo.c): no export, its own fsid */
        o.a.type = NF3DIR;
        o.a.mode = sb->st_mode & 07777;
        o.a.nlink = (uint32_t)sb->st_nlink;
        o.a.fileid = (uint64_t)sb->st_ino;
    }
    struct aw x = {(uint8_t *)vals, (uint8_t *)vals + room};
    for (unsigned w = 0; w < UIW__NFS4_ATTR_WORDS; w++) {
        for (uint32_t bits = mask[w]; bits; bits &= bits - 1) {
            if (!put_attr(&o, &x, 32 * w + (unsigned)__builtin_ctz(bits)))
                return NFS4ERR_RESOURCE; /* larger than room */
        }
    }
    uiw__nfs4_bitmap(&out->attrmask, mask);
    out->attr_vals.attrlist4_len = (u_int)(x.p - (uint8_t *)vals);
    out->attr_vals.attrlist4_val = vals;
    return NFS4_OK;
}

/* Whether req asks for an attribute of the file system (fstatfs needs a descriptor). */
static int asks_fs(const bitmap4 *req)
{
    pthread_once(&supported_once, supported_init);
    for (unsigned w = 0; w < req->bitmap4_len && w < UIW__NFS4_ATTR_WORDS; w++)
        if (req->bitmap4_val[w] & of_fs_words[w])
            return 1;
    return 0;
}

nfsstat4 uiw__nfs4_getattr(struct uiw__nfs4_c *c, struct uiw__vfs *v, const GETATTR4args *a,
                           GETATTR4resok *r)
{
    if (uiw__nfs4_is_pseudo(&c->cur, NULL))
        return uiw__nfs4_pseudo_getattr(c, v, &a->attr_request, &r->obj_attributes);
    int fd = -1;
    struct uiw__nfs_export *ex;
    struct stat sb;
    nfsstat4 st;
    /* the file's own attributes (what a client's stat asks) need no descriptor: a stat
     * through the handle, as NFSv3's GETATTR */
    if (!asks_fs(&a->attr_request))
        st = uiw__nfs4_stat(c, v, &sb, &ex);
    else
        st = uiw__nfs4_resolve(c, v, 0, &fd, &ex, &sb);
    if (st == NFS4_OK)
        st = uiw__nfs4_encode(c, fd, &sb, ex, &c->cur,
                              sb.st_dev == ex->dev && sb.st_ino == ex->ino
                                  ? uiw__nfs4_pseudo_mounted_on(c, v, ex, (uint64_t)sb.st_ino)
                                  : (uint64_t)sb.st_ino,
                              &a->attr_request, &r->obj_attributes, 4096);
    if (fd >= 0)
        close(fd);
    return st;
}

nfsstat4 uiw__nfs4_rdattr_error(struct uiw__nfs4_c *c, nfsstat4 st, const bitmap4 *req, fattr4 *out)
{
    if (!has(req, FATTR4_RDATTR_ERROR))
        return st;
    uint32_t *mask = uiw__nfs4_alloc(c, sizeof(uint32_t));
    char *val = uiw__nfs4_alloc(c, 4);
    if (!mask || !val)
        return NFS4ERR_SERVERFAULT;
    *mask = 1u << FATTR4_RDATTR_ERROR;
    XDR x;
    xdrmem_create(&x, val, 4, XDR_ENCODE);
    uint32_t e = (uint32_t)st;
    bool_t ok = xdr_uint32_t(&x, &e);
    xdr_destroy(&x);
    if (!ok)
        return NFS4ERR_SERVERFAULT;
    out->attrmask.bitmap4_len = 1;
    out->attrmask.bitmap4_val = mask;
    out->attr_vals.attrlist4_len = 4;
    out->attr_vals.attrlist4_val = val;
    return NFS4_OK;
}

/* ---- setting them ---- */

static bool_t get_settime(XDR *x, struct timespec *t)
{
    uint32_t how;
    if (!xdr_uint32_t(x, &how))
        return FALSE;
    if (how == SET_TO_SERVER_TIME4) {
        t->tv_sec = 0;
        t->tv_nsec = UTIME_NOW;
        return TRUE;
    }
    int64_t sec;
    uint32_t ns;
    if (how != SET_TO_CLIENT_TIME4 || !xdr_int64_t(x, &sec) || !xdr_uint32_t(x, &ns))
        return FALSE;
    if (ns >= 1000000000u)
        return FALSE;
    t->tv_sec = (time_t)sec;
    t->tv_nsec = ns;
    return TRUE;
}

nfsstat4 uiw__nfs4_sattr(struct uiw__nfs4_c *c, const fattr4 *in, struct uiw__vfs_sattr *out,
                         uint32_t set[UIW__NFS4_ATTR_WORDS])
{
    memset(out, 0, sizeof(*out));
    memset(set, 0, UIW__NFS4_ATTR_WORDS * sizeof(uint32_t));
    uint32_t sup[UIW__NFS4_ATTR_WORDS];
    supported(sup);
    const bitmap4 *m = &in->attrmask;
    /* every bit first: an unsupported attribute refuses the whole (section 18.30.3) */
    nfsstat4 st = NFS4_OK;
    for (u_int w = 0; w < m->bitmap4_len; w++) {
        for (unsigned b = 0; b < 32; b++) {
            if (!(m->bitmap4_val[w] & (1u << b)))
                continue;
            unsigned n = 32 * w + b;
            if (w >= UIW__NFS4_ATTR_WORDS || !(sup[w] & (1u << b)))
                return NFS4ERR_ATTRNOTSUPP;
            if (!SETTABLE(n))
                st = NFS4ERR_INVAL;
        }
    }
    if (st != NFS4_OK)
        return st;
    XDR x;
    xdrmem_create(&x, in->attr_vals.attrlist4_val, in->attr_vals.attrlist4_len, XDR_DECODE);
    for (unsigned n = 0; n < 32 * UIW__NFS4_ATTR_WORDS && st == NFS4_OK; n++) {
        if (!has(m, n))
            continue;
        uint32_t u32;
        uint64_t u64;
        char *str = NULL;
        int64_t id;
        switch (n) {
        case FATTR4_SIZE:
            if (!xdr_uint64_t(&x, &u64))
                st = NFS4ERR_BADXDR;
            out->set |= UIW__VFS_SIZE;
            out->size = u64;
            break;
        case FATTR4_MODE:
            if (!xdr_uint32_t(&x, &u32))
                st = NFS4ERR_BADXDR;
            else if (u32 & ~07777u)
                st = NFS4ERR_INVAL;
            out->set |= UIW__VFS_MODE;
            out->mode = (mode_t)u32;
            break;
        case FATTR4_OWNER:
        case FATTR4_OWNER_GROUP:
            if (!xdr_string(&x, &str, NFS4_NAME_DECODE)) {
                st = NFS4ERR_BADXDR;
                break;
            }
            id = get_id(c->s, str, (u_int)strlen(str), n == FATTR4_OWNER_GROUP);
            free(str);
            if (id < 0) {
                st = NFS4ERR_BADOWNER;
            } else if (n == FATTR4_OWNER) {
                out->set |= UIW__VFS_UID;
                out->uid = (uid_t)id;
            } else {
                out->set |= UIW__VFS_GID;
                out->gid = (gid_t)id;
            }
            break;
        case FATTR4_TIME_ACCESS_SET:
            if (!get_settime(&x, &out->atime))
                st = NFS4ERR_BADXDR;
            out->set |= UIW__VFS_ATIME;
            break;
        case FATTR4_TIME_MODIFY_SET:
            if (!get_settime(&x, &out->mtime))
                st = NFS4ERR_BADXDR;
            out->set |= UIW__VFS_MTIME;
            break;
        default:
            st = NFS4ERR_INVAL;
        }
        if (st == NFS4_OK)
            set[n / 32] |= 1u << (n % 32);
    }
    /* values past the attributes are not a fattr4's */
    if (st == NFS4_OK && xdr_getpos(&x) != in->attr_vals.attrlist4_len)
        st = NFS4ERR_BADXDR;
    xdr_destroy(&x);
    if (st != NFS4_OK)
        memset(set, 0, UIW__NFS4_ATTR_WORDS * sizeof(uint32_t));
    return st;
}

nfsstat4 uiw__nfs4_verify(struct uiw__nfs4_c *c, struct uiw__vfs *v, const fattr4 *in, int *same)
{
    uint32_t sup[UIW__NFS4_ATTR_WORDS];
    supported(sup);
    const bitmap4 *m = &in->attrmask;
    for (u_int w = 0; w < m->bitmap4_len; w++) {
        if (w >= UIW__NFS4_ATTR_WORDS ? m->bitmap4_val[w] != 0 : (m->bitmap4_val[w] & ~sup[w]))
            return NFS4ERR_ATTRNOTSUPP;
    }
    if (has(m, FATTR4_RDATTR_ERROR))
        return NFS4ERR_INVAL; /* section 18.31.3 */
    GETATTR4args ga = {*m};
    GETATTR4resok r;
    memset(&r, 0, sizeof(r));
    nfsstat4 st = uiw__nfs4_getattr(c, v, &ga, &r);
    if (st != NFS4_OK)
        return st;
    *same = r.obj_attributes.attr_vals.attrlist4_len == in->attr_vals.attrlist4_len &&
            (in->attr_vals.attrlist4_len == 0 ||
             memcmp(r.obj_attributes.attr_vals.attrlist4_val, in->attr_vals.attrlist4_val,
                    in->attr_vals.attrlist4_len) == 0);
    return NFS4_OK;
}
