/*
 * NFSv4's namespace operations (RFC 8881 section 18) in uiw-nfsd, on the file-system
 * layer NFSv3 uses (vfs.c: the caller's identity, the export's access, changes whose
 * attributes are the call's own):
 *   - CREATE (directories, symbolic links, devices, FIFOs and sockets; a regular file is
 *     OPEN's: NFS4ERR_BADTYPE), REMOVE (a file or an empty directory), RENAME (SAVED_FH the
 *     source directory), LINK (SAVED_FH the file), each with change_info4 of the
 *     directories: the change attribute before and after, atomic as no other call of the
 *     server changes the directory between (uiw__vfs_begin); the root of an export nested
 *     in this one is not removed (NFS4ERR_ACCESS) nor renamed or replaced (NFS4ERR_XDEV);
 *   - READLINK, SETATTR (a size through the stateid's check of WRITE: nfs4open.c), READDIR (cookies
 * and verifier as NFSv3's READDIRPLUS: the file system's offsets and the directory's generation;
 * the requested attributes per entry, with rdattr_error), SECINFO. Errors are the RFC's:
 * NFS4ERR_NOTDIR for a current handle that is no directory, NFS4ERR_ROFS on a read-only export,
 * NFS4ERR_XDEV across exports, and NFSv3's errno mapping for the rest (the same numbers).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "nfs/nfs4int.h"

/* A directory's change_info4 around a change: i is its place in ch, fd the directory. */
static void cinfo(const struct uiw__vfs_change *ch, int i, int fd, change_info4 *ci)
{
    struct stat sb;
    int after = fstat(fd, &sb) == 0;
    /* atomic: no call of this server changed it between (uiw__vfs_begin holds it) */
    ci->atomic = ch->have_pre[i] && after;
    ci->before = ch->have_pre[i] ? uiw__nfs4_change(&ch->pre[i]) : 0;
    ci->after = after ? uiw__nfs4_change(&sb) : 0;
}

/* The current handle's directory, for a change: as the caller with the export's
 * read-write check (NFS4ERR_ROFS). */
static nfsstat4 dir_for_change(struct uiw__nfs4_c *c, struct uiw__vfs *v, int *dfd,
                               struct uiw__nfs_export **ex)
{
    v->write = 1;
    return uiw__nfs4_resolve(c, v, 1, dfd, ex, NULL);
}

/* The file (dev, ino) lost a name: handles and the open-file cache forget it. */
static void removed(struct uiw__nfs4_c *c, const struct stat *sb)
{
    uiw__nfs_fh_removed(c->s, sb->st_dev, sb->st_ino);
    uiw__vfs_forget(c->s, sb->st_dev, sb->st_ino);
}

/* ---- CREATE (section 18.4) ---- */

static nfsstat4 make(struct uiw__nfs4_c *c, struct uiw__vfs *v, int dfd, const char *name,
                     const createtype4 *t, const struct uiw__vfs_sattr *sa)
{
    mode_t mode = (sa->set & UIW__VFS_MODE) ? sa->mode & 07777 : 0;
    int rc;
    switch (t->type) {
    case NF4DIR:
        rc = mkdirat(dfd, name, (sa->set & UIW__VFS_MODE) ? mode : 0755);
        break;
    case NF4LNK: {
        const linktext4 *l = &t->createtype4_u.linkdata;
        char target[PATH_MAX];
        if (l->linktext4_len >= sizeof(target))
            return NFS4ERR_NAMETOOLONG;
        memcpy(target, l->linktext4_val, l->linktext4_len);
        target[l->linktext4_len] = 0;
        if (strlen(target) != l->linktext4_len)
            return NFS4ERR_INVAL; /* a NUL in it */
        rc = symlinkat(target, dfd, name);
        break;
    }
    case NF4BLK:
    case NF4CHR:
        rc = mknodat(
            dfd, name,
            (t->type == NF4BLK ? S_IFBLK : S_IFCHR) | ((sa->set & UIW__VFS_MODE) ? mode : 0644),
            makedev(t->createtype4_u.devdata.specdata1, t->createtype4_u.devdata.specdata2));
        break;
    case NF4SOCK:
    case NF4FIFO:
        rc = mknodat(dfd, name,
                     (t->type == NF4SOCK ? S_IFSOCK : S_IFIFO) |
                         ((sa->set & UIW__VFS_MODE) ? mode : 0644),
                     0);
        break;
    default:
        return NFS4ERR_BADTYPE; /* a regular file is OPEN's; named attributes: none */
    }
    if (rc != 0)
        return (nfsstat4)uiw__nfsd_errno(errno);
    int fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return (nfsstat4)uiw__nfsd_errno(errno);
    /* the rest of the attributes, and the mode again past the umask; a symbolic link
     * takes its owners only */
    struct uiw__vfs_sattr rest = *sa;
    if (t->type == NF4LNK)
        rest.set &= UIW__VFS_UID | UIW__VFS_GID;
    nfsstat4 st = (nfsstat4)uiw__vfs_setattr(v, fd, &rest);
    close(fd);
    if (st != NFS4_OK)
        unlinkat(dfd, name, t->type == NF4DIR ? AT_REMOVEDIR : 0); /* not as asked: undone */
    return st;
}

nfsstat4 uiw__nfs4_create(struct uiw__nfs4_c *c, struct uiw__vfs *v, const CREATE4args *a,
                          CREATE4resok *r)
{
    if (!c->cur.len)
        return NFS4ERR_NOFILEHANDLE;
    if (a->objtype.type == NF4REG || a->objtype.type < NF4REG || a->objtype.type > NF4NAMEDATTR)
        return NFS4ERR_BADTYPE;
    if (a->objtype.type == NF4ATTRDIR || a->objtype.type == NF4NAMEDATTR)
        return NFS4ERR_BADTYPE;
    char name[NAME_MAX + 1];
    int dfd;
    struct uiw__nfs_export *ex;
    nfsstat4 st = dir_for_change(c, v, &dfd, &ex);
    if (st != NFS4_OK)
        return st;
    st = uiw__nfs4_name(&a->objname, name);
    if (st == NFS4_OK && a->objtype.type == NF4LNK &&
        a->objtype.createtype4_u.linkdata.linktext4_len == 0)
        st = NFS4ERR_INVAL; /* section 18.4.3 */
    struct uiw__vfs_sattr sa = {0};
    uint32_t *set = uiw__nfs4_alloc(c, UIW__NFS4_ATTR_WORDS * sizeof(uint32_t));
    if (st == NFS4_OK && !set)
        st = NFS4ERR_SERVERFAULT;
    if (st == NFS4_OK)
        st = uiw__nfs4_sattr(c, &a->createattrs, &sa, set);
    if (st == NFS4_OK && (sa.set & UIW__VFS_SIZE))
        st = NFS4ERR_INVAL; /* no size for what CREATE makes */
    if (st != NFS4_OK) {
        close(dfd);
        return st;
    }
    struct uiw__vfs_change ch;
    uiw__vfs_begin(v, &ch, dfd, -1);
    if (uiw__vfs_enter(v) != 0) {
        st = NFS4ERR_PERM;
    } else {
        st = make(c, v, dfd, name, &a->objtype, &sa);
        uiw__vfs_leave(v);
    }
    if (st == NFS4_OK) {
        int fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            st = (nfsstat4)uiw__nfsd_errno(errno);
        } else {
            if (a->objtype.type != NF4LNK)
                uiw__vfs_durable(v, fd);
            uiw__vfs_durable(v, dfd);
            /* the new object is the current handle (section 18.4.3) */
            st = uiw__nfs4_issue(c, v, ex, dfd, name, fd);
            close(fd);
        }
    }
    cinfo(&ch, 0, dfd, &r->cinfo);
    uiw__vfs_end(&ch);
    close(dfd);
    if (st == NFS4_OK)
        uiw__nfs4_bitmap(&r->attrset, set);
    return st;
}

/* ---- REMOVE (section 18.25) ---- */

nfsstat4 uiw__nfs4_remove(struct uiw__nfs4_c *c, struct uiw__vfs *v, const REMOVE4args *a,
                          REMOVE4resok *r)
{
    if (!c->cur.len)
        return NFS4ERR_NOFILEHANDLE;
    char name[NAME_MAX + 1];
    int dfd;
    struct uiw__nfs_export *ex;
    nfsstat4 st = dir_for_change(c, v, &dfd, &ex);
    if (st != NFS4_OK)
        return st;
    st = uiw__nfs4_name(&a->target, name);
    if (st != NFS4_OK) {
        close(dfd);
        return st;
    }
    struct uiw__vfs_change ch;
    uiw__vfs_begin(v, &ch, dfd, -1);
    if (uiw__vfs_enter(v) != 0) {
        st = NFS4ERR_PERM;
    } else {
        struct stat sb;
        if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
            st = (nfsstat4)uiw__nfsd_errno(errno);
        } else if (S_ISREG(sb.st_mode) && uiw__nfs4_deleg_conflict(c, &sb)) {
            st = NFS4ERR_DELAY; /* another client's delegation, recalled */
        } else if (uiw__nfs4_export_root(c, &sb)) {
            st = NFS4ERR_ACCESS; /* a nested export's root: not this export's to remove */
        } else if (unlinkat(dfd, name, S_ISDIR(sb.st_mode) ? AT_REMOVEDIR : 0) != 0) {
            st = (nfsstat4)uiw__nfsd_errno(errno == EEXIST ? ENOTEMPTY : errno);
        } else {
            removed(c, &sb);
            uiw__vfs_durable(v, dfd);
        }
        uiw__vfs_leave(v);
    }
    cinfo(&ch, 0, dfd, &r->cinfo);
    uiw__vfs_end(&ch);
    close(dfd);
    return st;
}

/* ---- RENAME (section 18.26) ---- */

nfsstat4 uiw__nfs4_rename(struct uiw__nfs4_c *c, struct uiw__vfs *v, const RENAME4args *a,
                          RENAME4resok *r)
{
    if (!c->cur.len || !c->saved.len)
        return NFS4ERR_NOFILEHANDLE;
    char from[NAME_MAX + 1], to[NAME_MAX + 1];
    int fdir = -1, tdir = -1;
    struct uiw__nfs_export *fex, *tex;
    /* the source directory is the saved handle's: resolved as the current one */
    struct uiw__nfs4_fh cur = c->cur;
    c->cur = c->saved;
    nfsstat4 st = dir_for_change(c, v, &fdir, &fex);
    c->cur = cur;
    if (st != NFS4_OK)
        return st;
    st = dir_for_change(c, v, &tdir, &tex);
    if (st == NFS4_OK && fex != tex)
        st = NFS4ERR_XDEV;
    if (st == NFS4_OK)
        st = uiw__nfs4_name(&a->oldname, from);
    if (st == NFS4_OK)
        st = uiw__nfs4_name(&a->newname, to);
    if (st != NFS4_OK) {
        close(fdir);
        if (tdir >= 0)
            close(tdir);
        return st;
    }
    struct uiw__vfs_change ch;
    uiw__vfs_begin(v, &ch, fdir, tdir);
    if (uiw__vfs_enter(v) != 0) {
        st = NFS4ERR_PERM;
    } else {
        struct stat src, dst;
        int have_src = fstatat(fdir, from, &src, AT_SYMLINK_NOFOLLOW) == 0;
        int have_dst = fstatat(tdir, to, &dst, AT_SYMLINK_NOFOLLOW) == 0;
        if (!have_src) {
            st = NFS4ERR_NOENT;
        } else if (uiw__nfs4_export_root(c, &src) || (have_dst && uiw__nfs4_export_root(c, &dst))) {
            st = NFS4ERR_XDEV; /* a nested export's root: another file system's */
        } else if ((S_ISREG(src.st_mode) && uiw__nfs4_deleg_conflict(c, &src)) ||
                   (have_dst && S_ISREG(dst.st_mode) && uiw__nfs4_deleg_conflict(c, &dst))) {
            st = NFS4ERR_DELAY; /* another client's delegation, recalled */
        } else if (renameat(fdir, from, tdir, to) != 0) {
            int err = errno;
            /* a directory over a file or the other way, or over a directory that is not
             * empty: NFS4ERR_EXIST (section 18.26.3) */
            if (err == ENOTEMPTY || err == EEXIST || err == EISDIR || err == ENOTDIR)
                st = NFS4ERR_EXIST;
            else
                st = (nfsstat4)uiw__nfsd_errno(err);
        } else {
            if (have_dst && !(src.st_ino == dst.st_ino && src.st_dev == dst.st_dev))
                removed(c, &dst);
            uiw__nfs_fh_moved(c->s, src.st_dev, src.st_ino, tdir, to);
            uiw__vfs_durable(v, fdir);
            uiw__vfs_durable(v, tdir);
        }
        uiw__vfs_leave(v);
    }
    cinfo(&ch, 0, fdir, &r->source_cinfo);
    cinfo(&ch, 1, tdir, &r->target_cinfo);
    uiw__vfs_end(&ch);
    close(fdir);
    close(tdir);
    return st;
}

/* ---- LINK (section 18.9) ---- */

nfsstat4 uiw__nfs4_link(struct uiw__nfs4_c *c, struct uiw__vfs *v, const LINK4args *a,
                        LINK4resok *r)
{
    if (!c->cur.len || !c->saved.len)
        return NFS4ERR_NOFILEHANDLE;
    char name[NAME_MAX + 1];
    int fd = -1, dfd = -1;
    struct uiw__nfs_export *ex, *dex;
    struct uiw__nfs4_fh cur = c->cur;
    c->cur = c->saved;
    v->write = 1;
    nfsstat4 st = uiw__nfs4_resolve(c, v, 0, &fd, &ex, NULL);
    c->cur = cur;
    if (st != NFS4_OK)
        return st;
    st = dir_for_change(c, v, &dfd, &dex);
    struct stat sb;
    if (st == NFS4_OK && ex != dex)
        st = NFS4ERR_XDEV;
    if (st == NFS4_OK)
        st = uiw__nfs4_name(&a->newname, name);
    if (st == NFS4_OK && fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode))
        st = NFS4ERR_ISDIR;
    if (st != NFS4_OK) {
        close(fd);
        if (dfd >= 0)
            close(dfd);
        return st;
    }
    struct uiw__vfs_change ch;
    uiw__vfs_begin(v, &ch, dfd, -1);
    if (uiw__vfs_enter(v) != 0) {
        st = NFS4ERR_PERM;
    } else {
        char p[64];
        snprintf(p, sizeof(p), "/proc/self/fd/%d", fd); /* that very file, not a name */
        if (linkat(AT_FDCWD, p, dfd, name, AT_SYMLINK_FOLLOW) != 0) {
            st = (nfsstat4)uiw__nfsd_errno(errno);
        } else {
            uiw__vfs_durable(v, fd);
            uiw__vfs_durable(v, dfd);
        }
        uiw__vfs_leave(v);
    }
    cinfo(&ch, 0, dfd, &r->cinfo);
    uiw__vfs_end(&ch);
    close(dfd);
    close(fd);
    return st;
}

/* ---- READLINK (section 18.24) ---- */

nfsstat4 uiw__nfs4_readlink(struct uiw__nfs4_c *c, struct uiw__vfs *v, READLINK4resok *r)
{
    int fd;
    struct uiw__nfs_export *ex;
    nfsstat4 st = uiw__nfs4_resolve(c, v, 0, &fd, &ex, NULL);
    if (st != NFS4_OK)
        return st;
    struct stat sb;
    char *buf = uiw__nfs4_alloc(c, PATH_MAX);
    ssize_t n = -1;
    if (!buf)
        st = NFS4ERR_SERVERFAULT;
    else if (fstat(fd, &sb) != 0)
        st = (nfsstat4)uiw__nfsd_errno(errno);
    else if (!S_ISLNK(sb.st_mode))
        st = NFS4ERR_INVAL; /* section 18.24.3: not a symbolic link */
    else if ((n = readlinkat(fd, "", buf, PATH_MAX)) < 0)
        st = (nfsstat4)uiw__nfsd_errno(errno);
    close(fd);
    if (st == NFS4_OK) {
        r->link.linktext4_len = (u_int)n;
        r->link.linktext4_val = buf;
    }
    return st;
}

/* ---- SETATTR (section 18.30) ---- */

nfsstat4 uiw__nfs4_setattr(struct uiw__nfs4_c *c, struct uiw__vfs *v, const SETATTR4args *a,
                           SETATTR4res *r)
{
    r->attrsset.bitmap4_len = 0;
    int fd;
    struct uiw__nfs_export *ex;
    v->write = 1;
    nfsstat4 st = uiw__nfs4_resolve(c, v, 0, &fd, &ex, NULL);
    if (st != NFS4_OK)
        return st;
    struct uiw__vfs_sattr sa;
    uint32_t *set = uiw__nfs4_alloc(c, UIW__NFS4_ATTR_WORDS * sizeof(uint32_t));
    st = set ? uiw__nfs4_sattr(c, &a->obj_attributes, &sa, set) : NFS4ERR_SERVERFAULT;
    struct stat sb;
    if (st == NFS4_OK && (sa.set & UIW__VFS_SIZE)) {
        if (fstat(fd, &sb) != 0)
            st = (nfsstat4)uiw__nfsd_errno(errno);
        else if (S_ISDIR(sb.st_mode))
            st = NFS4ERR_ISDIR;
        else if (!S_ISREG(sb.st_mode))
            st = NFS4ERR_INVAL;
        else
            st = uiw__nfs4_setattr_stateid_ok(c, &a->stateid, &sb);
    }
    if (st == NFS4_OK) {
        struct uiw__vfs_change ch;
        uiw__vfs_begin(v, &ch, fd, -1);
        if (uiw__vfs_enter(v) != 0) {
            st = NFS4ERR_PERM;
        } else {
            st = (nfsstat4)uiw__vfs_setattr(v, fd, &sa);
            uiw__vfs_leave(v);
        }
        if (st == NFS4_OK)
            uiw__vfs_durable(v, fd);
        uiw__vfs_end(&ch);
    }
    close(fd);
    if (st == NFS4_OK)
        uiw__nfs4_bitmap(&r->attrsset, set);
    return st;
}

/* ---- READDIR (section 18.23) ---- */

/* XDR sizes: an entry's cookie and name (what dircount counts), and its whole (maxcount). */
#define XDR_LEN(n)   (((n) + 3u) & ~3u)
#define DIR_PART(nl) (8u + 4u + XDR_LEN(nl))
#define ENTRY_XDR(nl, f)                                                                           \
    (4u + DIR_PART(nl) + 4u + 4u * (f)->attrmask.bitmap4_len + 4u +                                \
     XDR_LEN((f)->attr_vals.attrlist4_len))
/* The reply's own: status, verifier, the list's end and eof. */
#define READDIR_OVERHEAD (4u + 8u + 4u + 4u)

/* The attributes of `name` in dfd that a READDIR asks for: an error goes into
 * rdattr_error when it is asked for, else it fails the READDIR. The root of an export
 * nested in ex has that export's attributes and handle, as LOOKUP enters it, or the
 * error of the caller's access to it. */
static nfsstat4 entry_attrs(struct uiw__nfs4_c *c, struct uiw__vfs *v, struct uiw__nfs_export *ex,
                            int dfd, const char *name, const bitmap4 *req, fattr4 *out)
{
    struct stat sb;
    int fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    nfsstat4 st = fd < 0 ? (nfsstat4)uiw__nfsd_errno(errno) : NFS4_OK;
    if (st == NFS4_OK && fstat(fd, &sb) != 0)
        st = (nfsstat4)uiw__nfsd_errno(errno);
    struct uiw__nfs_export *in =
        st == NFS4_OK && S_ISDIR(sb.st_mode) ? uiw__nfs4_nested(c, ex, fd) : NULL;
    /* the caller's identity on the nested export for its handle, then on ex again */
    struct uiw__nfs_cred cred = v->cred;
    const struct uiw__nfs_xopts *xo = v->xo;
    if (in)
        st = uiw__nfs4_st4(uiw__nfsd_access(c->s, in, c->rq, 0, &v->cred, &v->xo), in, c->rq);
    struct uiw__nfs4_fh fh = {0};
    int want_fh = req->bitmap4_len > 0 && (req->bitmap4_val[0] & (1u << FATTR4_FILEHANDLE));
    if (st == NFS4_OK && want_fh) {
        /* the handle without touching the current one */
        struct uiw__nfs4_fh cur = c->cur;
        st = in ? uiw__nfs4_issue_root(c, v, in) : uiw__nfs4_issue(c, v, ex, dfd, name, fd);
        fh = c->cur;
        c->cur = cur;
    }
    v->cred = cred;
    v->xo = xo;
    if (in)
        ex = in;
    if (st == NFS4_OK)
        st = uiw__nfs4_encode(c, fd, &sb, ex, &fh, (uint64_t)sb.st_ino, req, out, 1024);
    if (fd >= 0)
        close(fd);
    if (st == NFS4_OK || st == NFS4ERR_SERVERFAULT || st == NFS4ERR_INVAL)
        return st;
    return uiw__nfs4_rdattr_error(c, st, req, out);
}

nfsstat4 uiw__nfs4_readdir(struct uiw__nfs4_c *c, struct uiw__vfs *v, const READDIR4args *a,
                           READDIR4resok *r)
{
    if (!c->cur.len)
        return NFS4ERR_NOFILEHANDLE;
    if (a->cookie == 1 || a->cookie == 2)
        return NFS4ERR_BAD_COOKIE; /* reserved (section 18.23.3) */
    if (uiw__nfs4_is_pseudo(&c->cur, NULL))
        return uiw__nfs4_pseudo_readdir(c, v, a, r);
    int dfd;
    struct uiw__nfs_export *ex;
    nfsstat4 st = uiw__nfs4_resolve(c, v, 1, &dfd, &ex, NULL);
    if (st != NFS4_OK)
        return st;
    char mine[NFS4_VERIFIER_SIZE];
    uiw__vfs_dir_verf(dfd, mine);
    if (!uiw__vfs_verf_ok(a->cookieverf, mine, a->cookie)) {
        close(dfd);
        return NFS4ERR_NOT_SAME;
    }
    memcpy(r->cookieverf, mine, sizeof(mine));
    uint32_t maxcount = a->maxcount < UIW__NFS4_READDIR_MAX ? a->maxcount : UIW__NFS4_READDIR_MAX;
    uint32_t dircount = a->dircount ? a->dircount : UINT32_MAX; /* 0: no limit of its own */
    if (uiw__vfs_enter(v) != 0) {
        close(dfd);
        return NFS4ERR_PERM;
    }
    int lfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int err = errno;
    DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
    if (lfd >= 0 && !d) {
        err = errno;
        close(lfd);
    }
    if (!d) {
        uiw__vfs_leave(v);
        close(dfd);
        return (nfsstat4)uiw__nfsd_errno(err);
    }
    if (a->cookie)
        seekdir(d, (long)a->cookie);
    uint32_t used = READDIR_OVERHEAD, dirused = 0;
    entry4 *first = NULL, *last = NULL;
    r->reply.eof = FALSE;
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno)
                st = (nfsstat4)uiw__nfsd_errno(errno);
            else
                r->reply.eof = TRUE;
            break;
        }
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue; /* not in NFSv4's lists (section 18.23.3) */
        size_t nl = strlen(de->d_name);
        entry4 *e = uiw__nfs4_alloc(c, sizeof(*e) + nl);
        if (!e) {
            st = NFS4ERR_SERVERFAULT;
            break;
        }
        memset(e, 0, sizeof(*e));
        e->cookie = (nfs_cookie4)de->d_off;
        e->name.utf8string_len = (u_int)nl;
        e->name.utf8string_val = (char *)(e + 1);
        memcpy(e->name.utf8string_val, de->d_name, nl);
        st = entry_attrs(c, v, ex, dfd, de->d_name, &a->attr_request, &e->attrs);
        if (st != NFS4_OK)
            break;
        uint32_t need = ENTRY_XDR(nl, &e->attrs);
        if (used + need > maxcount || (first && dirused + DIR_PART(nl) > dircount)) {
            if (!first)
                st = NFS4ERR_TOOSMALL; /* not even one entry fits */
            break;
        }
        used += need;
        dirused += DIR_PART(nl);
        if (last)
            last->nextentry = e;
        else
            first = e;
        last = e;
    }
    uiw__vfs_leave(v);
    closedir(d);
    close(dfd);
    r->reply.entries = st == NFS4_OK ? first : NULL;
    return st;
}

/* ---- SECINFO (section 18.29) ---- */

nfsstat4 uiw__nfs4_secinfo(struct uiw__nfs4_c *c, struct uiw__vfs *v, const SECINFO4args *a,
                           SECINFO4resok *r)
{
    if (!c->cur.len)
        return NFS4ERR_NOFILEHANDLE;
    char name[NAME_MAX + 1];
    nfsstat4 st = uiw__nfs4_name(&a->name, name);
    if (st != NFS4_OK)
        return st;
    if (uiw__nfs4_is_pseudo(&c->cur, NULL)) {
        /* the entry's: an export's, or a pseudo directory's */
        st = uiw__nfs4_pseudo_lookup(c, v, name);
        struct uiw__nfs_export *ex = NULL;
        nfs_fh3 h = uiw__nfs4_fh3(&c->cur);
        if (st == NFS4ERR_WRONGSEC || st == NFS4ERR_ACCESS) {
            return st;
        }
        if (st == NFS4_OK && !uiw__nfs4_is_pseudo(&c->cur, NULL) &&
            uiw__nfs_fh_export(c->s, &h, &ex) != NFS3_OK)
            st = NFS4ERR_STALE;
        if (st == NFS4_OK)
            st = uiw__nfs4_flavors(c, ex, r);
        if (st == NFS4_OK)
            c->cur.len = 0;
        return st;
    }
    int dfd;
    struct uiw__nfs_export *ex;
    nfs_fh3 h = uiw__nfs4_fh3(&c->cur);
    nfsstat3 s3 = uiw__nfs_fh_export(c->s, &h, &ex);
    if (s3 != NFS3_OK)
        return (nfsstat4)s3;
    /* the name must be there, looked up as the caller may (its flavor aside) */
    s3 = uiw__vfs_resolve(v, &h, 1, &dfd, &ex, NULL);
    if (s3 != NFS3_OK && s3 != NFS3ERR_ACCES)
        return (nfsstat4)s3;
    if (s3 == NFS3_OK) {
        st = NFS4_OK;
        int fd = -1;
        if (uiw__vfs_enter(v) != 0)
            st = NFS4ERR_PERM;
        else if ((fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC)) < 0)
            st = (nfsstat4)uiw__nfsd_errno(errno);
        uiw__vfs_leave(v);
        struct uiw__nfs_export *in = fd >= 0 ? uiw__nfs4_nested(c, ex, fd) : NULL;
        if (in)
            ex = in; /* the root of an export nested here: LOOKUP enters that one */
        if (fd >= 0)
            close(fd);
        close(dfd);
        if (st != NFS4_OK)
            return st;
    }
    st = uiw__nfs4_flavors(c, ex, r);
    if (st == NFS4_OK)
        c->cur.len = 0; /* section 18.29.3: it consumes the current handle */
    return st;
}
