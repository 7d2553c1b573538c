/*
 * NFSv4.2's operations on file data (RFC 7862), each through the stateid checks of READ
 * and WRITE (nfs4open.c):
 *   - SEEK (section 15.11): the next data or hole at or after sa_offset, by lseek's
 *     SEEK_DATA and SEEK_HOLE (a file system without them has data everywhere and one
 *     hole at the end); NFS4ERR_NXIO at or past the end of the file, sr_eof when what was
 *     found lies at the end.
 *   - ALLOCATE and DEALLOCATE (sections 15.1, 15.4): fallocate, the latter punching a hole
 *     and keeping the size; NFS4ERR_NOTSUPP where the file system has neither.
 *   - COPY (section 15.2) within this server, always synchronous (cr_synchronous answered
 *     TRUE, no callback): copy_file_range from the saved handle's file to the current
 *     one, the data then synced (FILE_SYNC4); ca_count 0 copies to the source's end; a
 *     source server named (an inter-server copy) gets NFS4ERR_NOTSUPP, ranges of one file
 *     that overlap NFS4ERR_INVAL, a source offset past the end NFS4ERR_INVAL.
 *   - CLONE (section 15.13): FICLONERANGE, where the file system shares blocks (XFS,
 *     Btrfs); elsewhere NFS4ERR_NOTSUPP.
 * COPY_NOTIFY, OFFLOAD_CANCEL, OFFLOAD_STATUS, READ_PLUS, WRITE_SAME, IO_ADVISE and the
 * layout operations answer NFS4ERR_NOTSUPP (run_op's default).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nfs/nfs4int.h"

/* The current file's descriptor for reading (write 0) or writing, after the stateid's
 * check: *dfd, with *of to give back (uiw__vfs_put). */
static nfsstat4 data_fd(struct uiw__nfs4_c *c, struct uiw__vfs *v, const stateid4 *sid, int write,
                        int *dfd, struct uiw__vfs_file **of, struct stat *sb)
{
    struct uiw__nfs_export *ex;
    return uiw__nfs4_io_data(c, v, sid, write, dfd, of, &ex, sb);
}

/* As data_fd, for the saved handle's file (COPY's and CLONE's source). */
static nfsstat4 saved_fd(struct uiw__nfs4_c *c, struct uiw__vfs *v, const stateid4 *sid, int *dfd,
                         struct uiw__vfs_file **of, struct stat *sb)
{
    if (!c->saved.len)
        return NFS4ERR_NOFILEHANDLE;
    struct uiw__nfs4_fh cur = c->cur;
    c->cur = c->saved;
    nfsstat4 st = data_fd(c, v, sid, 0, dfd, of, sb);
    c->cur = cur;
    return st;
}

nfsstat4 uiw__nfs4_seek(struct uiw__nfs4_c *c, struct uiw__vfs *v, const SEEK4args *a, seek_res4 *r)
{
    if (a->sa_what != NFS4_CONTENT_DATA && a->sa_what != NFS4_CONTENT_HOLE)
        return NFS4ERR_UNION_NOTSUPP;
    int dfd;
    struct uiw__vfs_file *of;
    struct stat sb;
    nfsstat4 st = data_fd(c, v, &a->sa_stateid, 0, &dfd, &of, &sb);
    if (st != NFS4_OK)
        return st;
    if (a->sa_offset >= (uint64_t)sb.st_size) {
        uiw__vfs_put(v, of, dfd);
        return NFS4ERR_NXIO;
    }
    off_t at =
        lseek(dfd, (off_t)a->sa_offset, a->sa_what == NFS4_CONTENT_DATA ? SEEK_DATA : SEEK_HOLE);
    if (at < 0 && errno == ENXIO) {
        /* no data from there on: the end */
        r->sr_eof = TRUE;
        r->sr_offset = (offset4)sb.st_size;
    } else if (at < 0) {
        st = (nfsstat4)uiw__nfsd_errno(errno);
    } else {
        r->sr_eof = (uint64_t)at >= (uint64_t)sb.st_size;
        r->sr_offset = (offset4)at;
    }
    uiw__vfs_put(v, of, dfd);
    return st;
}

static nfsstat4 falloc(struct uiw__nfs4_c *c, struct uiw__vfs *v, const stateid4 *sid, uint64_t off,
                       uint64_t len, int mode)
{
    if (len == 0 || off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off)
        return NFS4ERR_INVAL;
    int dfd;
    struct uiw__vfs_file *of;
    struct stat sb;
    nfsstat4 st = data_fd(c, v, sid, 1, &dfd, &of, &sb);
    if (st != NFS4_OK)
        return st;
    if (fallocate(dfd, mode, (off_t)off, (off_t)len) != 0)
        st = errno == EOPNOTSUPP ? NFS4ERR_NOTSUPP : (nfsstat4)uiw__nfsd_errno(errno);
    uiw__vfs_put(v, of, dfd);
    return st;
}

nfsstat4 uiw__nfs4_allocate(struct uiw__nfs4_c *c, struct uiw__vfs *v, const ALLOCATE4args *a)
{
    return falloc(c, v, &a->aa_stateid, a->aa_offset, a->aa_length, 0);
}

nfsstat4 uiw__nfs4_deallocate(struct uiw__nfs4_c *c, struct uiw__vfs *v, const DEALLOCATE4args *a)
{
    return falloc(c, v, &a->da_stateid, a->da_offset, a->da_length,
                  FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE);
}

/* The source and destination of a COPY or CLONE: their descriptors, the count made
 * concrete (0: to the source's end). */
struct two {
    int src, dst;
    struct uiw__vfs_file *sof, *dof;
    uint64_t count;
};

static nfsstat4 two_open(struct uiw__nfs4_c *c, struct uiw__vfs *v, const stateid4 *ss,
                         const stateid4 *ds, uint64_t soff, uint64_t doff, uint64_t count,
                         struct two *t)
{
    struct stat ssb, dsb;
    t->src = t->dst = -1;
    nfsstat4 st = saved_fd(c, v, ss, &t->src, &t->sof, &ssb);
    if (st != NFS4_OK)
        return st;
    st = data_fd(c, v, ds, 1, &t->dst, &t->dof, &dsb);
    if (st != NFS4_OK) {
        uiw__vfs_put(v, t->sof, t->src);
        return st;
    }
    if (soff > (uint64_t)ssb.st_size)
        st = NFS4ERR_INVAL; /* section 15.2.3: the source's range past its end */
    t->count = count ? count : (uint64_t)ssb.st_size - soff;
    if (st == NFS4_OK &&
        (t->count > (uint64_t)INT64_MAX - soff || t->count > (uint64_t)INT64_MAX - doff))
        st = NFS4ERR_INVAL;
    /* one file's ranges that overlap */
    if (st == NFS4_OK && ssb.st_dev == dsb.st_dev && ssb.st_ino == dsb.st_ino &&
        soff < doff + t->count && doff < soff + t->count)
        st = NFS4ERR_INVAL;
    if (st != NFS4_OK) {
        uiw__vfs_put(v, t->sof, t->src);
        uiw__vfs_put(v, t->dof, t->dst);
    }
    return st;
}

nfsstat4 uiw__nfs4_copy(struct uiw__nfs4_c *c, struct uiw__vfs *v, const COPY4args *a,
                        COPY4resok *r)
{
    if (a->ca_source_server.ca_source_server_len)
        return NFS4ERR_NOTSUPP; /* an inter-server copy */
    struct two t;
    nfsstat4 st = two_open(c, v, &a->ca_src_stateid, &a->ca_dst_stateid, a->ca_src_offset,
                           a->ca_dst_offset, a->ca_count, &t);
    if (st != NFS4_OK)
        return st;
    loff_t so = (loff_t)a->ca_src_offset, d = (loff_t)a->ca_dst_offset;
    uint64_t done = 0;
    while (done < t.count) {
        size_t want = t.count - done > (1u << 30) ? (1u << 30) : (size_t)(t.count - done);
        ssize_t n = copy_file_range(t.src, &so, t.dst, &d, want, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            st = (nfsstat4)uiw__nfsd_errno(errno);
            break;
        }
        if (n == 0)
            break; /* the source's end */
        done += (uint64_t)n;
    }
    if (st == NFS4_OK && done && fdatasync(t.dst) != 0)
        st = (nfsstat4)uiw__nfsd_errno(errno);
    if (st == NFS4_OK) {
        r->cr_response.wr_callback_id.wr_callback_id_len = 0;
        r->cr_response.wr_count = done;
        r->cr_response.wr_committed = FILE_SYNC4;
        uiw__vfs_verf(c->s, r->cr_response.wr_writeverf);
        r->cr_requirements.cr_consecutive = TRUE;
        r->cr_requirements.cr_synchronous = TRUE;
    }
    uiw__vfs_put(v, t.sof, t.src);
    uiw__vfs_put(v, t.dof, t.dst);
    return st;
}

nfsstat4 uiw__nfs4_clone(struct uiw__nfs4_c *c, struct uiw__vfs *v, const CLONE4args *a)
{
    struct two t;
    nfsstat4 st = two_open(c, v, &a->cl_src_stateid, &a->cl_dst_stateid, a->cl_src_offset,
                           a->cl_dst_offset, a->cl_count, &t);
    if (st != NFS4_OK)
        return st;
    struct file_clone_range fcr = {
        .src_fd = t.src,
        .src_offset = a->cl_src_offset,
        .src_length = a->cl_count, /* 0: to the end, as FICLONERANGE takes it */
        .dest_offset = a->cl_dst_offset,
    };
    if (ioctl(t.dst, FICLONERANGE, &fcr) != 0)
        st = errno == EOPNOTSUPP || errno == ENOTTY || errno == EXDEV ? NFS4ERR_NOTSUPP
             : errno == EINVAL                                        ? NFS4ERR_INVAL
                               : (nfsstat4)uiw__nfsd_errno(errno);
    uiw__vfs_put(v, t.sof, t.src);
    uiw__vfs_put(v, t.dof, t.dst);
    return st;
}
