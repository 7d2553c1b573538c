/* File attributes (fattr3, wcc data) and the errno -> nfsstat3 table. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "nfs/server.h"

nfsstat3 uiw__nfsd_errno(int err)
{
    switch (err) {
    case 0:
        return NFS3_OK;
    case EPERM:
        return NFS3ERR_PERM;
    case ENOENT:
        return NFS3ERR_NOENT;
    case ENXIO:
        return NFS3ERR_NXIO;
    case EACCES:
        return NFS3ERR_ACCES;
    case EEXIST:
        return NFS3ERR_EXIST;
    case EXDEV:
        return NFS3ERR_XDEV;
    case ENODEV:
        return NFS3ERR_NODEV;
    case ENOTDIR:
        return NFS3ERR_NOTDIR;
    case EISDIR:
        return NFS3ERR_ISDIR;
    case EINVAL:
        return NFS3ERR_INVAL;
    case EFBIG:
        return NFS3ERR_FBIG;
    case ENOSPC:
        return NFS3ERR_NOSPC;
    case EROFS:
        return NFS3ERR_ROFS;
    case EMLINK:
        return NFS3ERR_MLINK;
    case ENAMETOOLONG:
        return NFS3ERR_NAMETOOLONG;
    case ENOTEMPTY:
        return NFS3ERR_NOTEMPTY;
    case EDQUOT:
        return NFS3ERR_DQUOT;
    case ESTALE:
        return NFS3ERR_STALE;
    case ELOOP:
        return NFS3ERR_INVAL; /* a symbolic link where the server follows none */
    case EOPNOTSUPP:
        return NFS3ERR_NOTSUPP;
    case EBUSY:
        return NFS3ERR_ACCES;
    case EWOULDBLOCK: /* a lease another holder must give up first */
    case EMFILE:
    case ENFILE:
    case ENOMEM:
    case EINTR:
        return NFS3ERR_JUKEBOX; /* the server's own shortage: try again later */
    case EOVERFLOW:
        return NFS3ERR_FBIG;
    default:
        return NFS3ERR_IO;
    }
}

static ftype3 ftype(mode_t m)
{
    switch (m & S_IFMT) {
    case S_IFDIR:
        return NF3DIR;
    case S_IFBLK:
        return NF3BLK;
    case S_IFCHR:
        return NF3CHR;
    case S_IFLNK:
        return NF3LNK;
    case S_IFSOCK:
        return NF3SOCK;
    case S_IFIFO:
        return NF3FIFO;
    default:
        return NF3REG;
    }
}

static void nfstime(nfstime3 *t, const struct timespec *ts)
{
    t->seconds = (uint32_t)ts->tv_sec;
    t->nseconds = (uint32_t)ts->tv_nsec;
}

/* The fsid of a file: the export's id for files on the export's own file system, and a
 * hash of the device for files on a file system mounted below it. */
static uint64_t fsid(const struct uiw__nfs_export *ex, dev_t dev)
{
    if (dev == ex->dev)
        return ex->id;
    return ((uint64_t)dev * 0x9E3779B97F4A7C15ull) | 1ull << 63;
}

void uiw__nfsd_fattr(const struct stat *st, const struct uiw__nfs_export *ex, fattr3 *a)
{
    memset(a, 0, sizeof(*a));
    a->type = ftype(st->st_mode);
    a->mode = st->st_mode & 07777;
    a->nlink = (uint32_t)st->st_nlink;
    a->uid = st->st_uid;
    a->gid = st->st_gid;
    a->size = (uint64_t)st->st_size;
    a->used = (uint64_t)st->st_blocks * 512;
    a->rdev.specdata1 = major(st->st_rdev);
    a->rdev.specdata2 = minor(st->st_rdev);
    a->fsid = fsid(ex, st->st_dev);
    a->fileid = (uint64_t)st->st_ino;
    nfstime(&a->atime, &st->st_atim);
    nfstime(&a->mtime, &st->st_mtim);
    nfstime(&a->ctime, &st->st_ctim);
}

int uiw__nfsd_getattr(int fd, const struct uiw__nfs_export *ex, fattr3 *a)
{
    struct stat st;
    if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0)
        return -errno;
    uiw__nfsd_fattr(&st, ex, a);
    return 0;
}

void uiw__nfsd_postop(int fd, const struct uiw__nfs_export *ex, post_op_attr *p)
{
    p->attributes_follow =
        fd >= 0 && ex && uiw__nfsd_getattr(fd, ex, &p->post_op_attr_u.attributes) == 0;
}

void uiw__nfsd_preop_of(const struct stat *st, pre_op_attr *p)
{
    p->attributes_follow = 1;
    p->pre_op_attr_u.attributes.size = (uint64_t)st->st_size;
    nfstime(&p->pre_op_attr_u.attributes.mtime, &st->st_mtim);
    nfstime(&p->pre_op_attr_u.attributes.ctime, &st->st_ctim);
}

void uiw__nfsd_preop(int fd, pre_op_attr *p)
{
    struct stat st;
    p->attributes_follow = 0;
    if (fd >= 0 && fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == 0)
        uiw__nfsd_preop_of(&st, p);
}
