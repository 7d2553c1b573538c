/*
 * NFSv4.1 byte-range locks (RFC 8881 sections 9, 18.10, 18.11, 18.12): LOCK, LOCKT and
 * LOCKU; their stateids are nfs4stid.c's.
 *
 *   - The locks are the kernel's: each lock stateid (one lock-owner on one file) has an
 *     open file description of its own, and takes its locks with F_OFD_SETLK on it. So
 *     the locks of two lock-owners conflict with each other even in this one process, and
 *     with a local process's locks (OFD or POSIX), as POSIX says (a lock over a lock of
 *     the same owner replaces it, an unlock splits one). A conflict is NFS4ERR_DENIED with
 *     the lock that stands in the way (F_OFD_GETLK), and its owner when it is a client's
 *     of this server (else an empty owner of client ID 0).
 *   - Each lock stateid keeps the ranges it holds (merged, at most UIW__NFS4_LK_RANGES
 *     apart): for the owner of a conflicting lock, and for FREE_STATEID's
 *     NFS4ERR_LOCKS_HELD.
 *   - The blocking types (READW_LT, WRITEW_LT) are answered as the others: a conflict is
 *     NFS4ERR_DENIED at once, and the client polls. A length of 0, or a range past
 *     2^64, is NFS4ERR_INVAL; one that starts past the largest offset a file may have
 *     (2^63 - 1) NFS4ERR_BAD_RANGE; the all-ones length, and one past that offset, run
 *     to the end of the file.
 *   - The grace period (nfs4state.c's rule): LOCK with `reclaim` only in it, by a client
 *     of the last instance (else NFS4ERR_NO_GRACE); any other LOCK, and LOCKT, in it
 *     NFS4ERR_GRACE. In NFSv4.1 the seqids of the arguments (open_seqid, lock_seqid)
 *     and the lock-owner's client ID are not looked at (section 18.10.3): the session's
 *     client is the owner's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nfs/nfs4int.h"

struct range {
    uint64_t start, end;
};

struct uiw__nfs4_lk {
    int fd;
    unsigned n;
    struct range *r; /* sorted, apart (neither overlapping nor adjacent) */
};

struct uiw__nfs4_lk *uiw__nfs4_lk_new(int fd)
{
    struct uiw__nfs4_lk *lk = calloc(1, sizeof(*lk));
    if (lk)
        lk->fd = fd;
    return lk;
}

void uiw__nfs4_lk_free(struct uiw__nfs4_lk *lk)
{
    if (!lk)
        return;
    close(lk->fd); /* which releases its locks */
    free(lk->r);
    free(lk);
}

int uiw__nfs4_lk_held(const struct uiw__nfs4_lk *lk)
{
    return lk && lk->n > 0;
}

int uiw__nfs4_lk_overlaps(const struct uiw__nfs4_lk *lk, uint64_t start, uint64_t end)
{
    for (unsigned i = 0; lk && i < lk->n; i++)
        if (lk->r[i].start < end && start < lk->r[i].end)
            return 1;
    return 0;
}

/* The ranges of lk with q added (a lock) or taken out (an unlock), into out (room for
 * lk->n + 1): how many. */
static unsigned apply(const struct uiw__nfs4_lk *lk, const struct uiw__nfs4_lkrange *q,
                      struct range *out)
{
    unsigned n = 0;
    struct range m = {q->start, q->end};
    int add = q->type != F_UNLCK, placed = !add;
    for (unsigned i = 0; i < lk->n; i++) {
        struct range x = lk->r[i];
        if (add && x.end >= m.start && x.start <= m.end) {
            /* overlapping or adjacent: one range */
            m.start = x.start < m.start ? x.start : m.start;
            m.end = x.end > m.end ? x.end : m.end;
            continue;
        }
        if (add && !placed && x.start > m.end) {
            out[n++] = m;
            placed = 1;
        }
        if (add || x.end <= q->start || x.start >= q->end) {
            out[n++] = x;
            continue;
        }
        if (x.start < q->start)
            out[n++] = (struct range){x.start, q->start};
        if (x.end > q->end)
            out[n++] = (struct range){q->end, x.end};
    }
    if (!placed)
        out[n++] = m;
    return n;
}

static void to_flock(const struct uiw__nfs4_lkrange *q, struct flock *fl)
{
    memset(fl, 0, sizeof(*fl));
    fl->l_type = q->type;
    fl->l_whence = SEEK_SET;
    fl->l_start = (off_t)q->start;
    fl->l_len = q->end == UIW__NFS4_LK_EOF ? 0 : (off_t)(q->end - q->start);
}

/* A conflict F_OFD_GETLK found, as LOCK4denied's range and type. */
static void denied_of(const struct flock *fl, struct uiw__nfs4_lkdenied *d)
{
    d->start = (uint64_t)fl->l_start;
    d->end = fl->l_len <= 0 ? UIW__NFS4_LK_EOF : d->start + (uint64_t)fl->l_len;
    d->write = fl->l_type == F_WRLCK;
    d->cid = 0;
    d->len = 0;
}

static nfsstat4 errno_st(int err)
{
    if (err == EBADF)
        return NFS4ERR_OPENMODE; /* a descriptor not open for that type's access */
    if (err == ENOLCK)
        return NFS4ERR_DELAY;
    return (nfsstat4)uiw__nfsd_errno(err);
}

nfsstat4 uiw__nfs4_lk_test(const struct uiw__nfs4_lk *lk, int fd, const struct uiw__nfs4_lkrange *q,
                           struct uiw__nfs4_lkdenied *d)
{
    struct flock fl;
    to_flock(q, &fl);
    if (fcntl(lk ? lk->fd : fd, F_OFD_GETLK, &fl) != 0)
        return errno_st(errno);
    if (fl.l_type == F_UNLCK)
        return NFS4_OK;
    denied_of(&fl, d);
    return NFS4ERR_DENIED;
}

nfsstat4 uiw__nfs4_lk_set(struct uiw__nfs4_lk *lk, const struct uiw__nfs4_lkrange *q,
                          struct uiw__nfs4_lkdenied *d)
{
    struct range *r = malloc((lk->n + 1) * sizeof(*r));
    if (!r)
        return NFS4ERR_DELAY;
    unsigned n = apply(lk, q, r);
    if (n > UIW__NFS4_LK_RANGES && n > lk->n) {
        free(r);
        return q->type == F_UNLCK ? NFS4ERR_LOCK_RANGE : NFS4ERR_RESOURCE;
    }
    struct flock fl;
    nfsstat4 st = NFS4ERR_DELAY;
    /* a lock that went between the refusal and F_OFD_GETLK: try again, a few times */
    for (int tries = 0; tries < 4; tries++) {
        to_flock(q, &fl);
        if (fcntl(lk->fd, F_OFD_SETLK, &fl) == 0) {
            st = NFS4_OK;
            break;
        }
        int err = errno;
        if (err == EINTR)
            continue;
        if (err != EAGAIN && err != EACCES) {
            st = errno_st(err);
            break;
        }
        st = uiw__nfs4_lk_test(lk, -1, q, d);
        if (st != NFS4_OK)
            break;
        st = NFS4ERR_DELAY;
    }
    if (st != NFS4_OK) {
        free(r);
        return st;
    }
    free(lk->r);
    lk->r = r;
    lk->n = n;
    return NFS4_OK;
}

/* ---- the operations ---- */

static struct uiw__nfs4_stids *stids(struct uiw__nfs4_c *c)
{
    return uiw__nfs4_state_stids(c->s->nfs4);
}

static clientid4 client(struct uiw__nfs4_c *c)
{
    return uiw__nfs4_session_client(c->s->nfs4, &c->ref);
}

/* A range of offset and length as q: NFS4ERR_INVAL for a length of 0 or a range past
 * 2^64 (sections 18.10.3, 18.10.4), NFS4ERR_BAD_RANGE for a start no file may reach. */
static nfsstat4 range_of(uint64_t off, uint64_t len, struct uiw__nfs4_lkrange *q)
{
    if (len == 0 || (len != NFS4_UINT64_MAX && off > UINT64_MAX - len))
        return NFS4ERR_INVAL;
    if (off >= UIW__NFS4_LK_EOF)
        return NFS4ERR_BAD_RANGE;
    q->start = off;
    q->end = len == NFS4_UINT64_MAX || len >= UIW__NFS4_LK_EOF - off ? UIW__NFS4_LK_EOF : off + len;
    return NFS4_OK;
}

/* A lock's type and range as q. */
static nfsstat4 request(nfs_lock_type4 type, uint64_t off, uint64_t len,
                        struct uiw__nfs4_lkrange *q)
{
    switch (type) {
    case READ_LT:
    case READW_LT:
        q->type = F_RDLCK;
        break;
    case WRITE_LT:
    case WRITEW_LT:
        q->type = F_WRLCK;
        break;
    default:
        return NFS4ERR_INVAL;
    }
    return range_of(off, len, q);
}

/* A descriptor of the regular file fd (O_PATH) for its locks: for reading and writing
 * when the caller may, else as it may, so that a later upgrade of its open can take
 * locks of the other type. */
static int data_fd(struct uiw__vfs *v, int fd, nfsstat4 *st, struct uiw__nfs_export *ex,
                   struct uiw__nfs4_c *c)
{
    static const int modes[] = {O_RDWR, O_RDONLY, O_WRONLY};
    nfsstat3 s3 = NFS3_OK;
    for (unsigned i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        int dfd = uiw__vfs_open(v, fd, modes[i], &s3);
        if (dfd >= 0)
            return dfd;
    }
    *st = uiw__nfs4_st4(s3, ex, c->rq);
    return -1;
}

/* LOCK4denied from d, its owner's bytes in the reply's memory. */
static nfsstat4 denied(struct uiw__nfs4_c *c, const struct uiw__nfs4_lkdenied *d, LOCK4denied *r)
{
    r->offset = d->start;
    r->length = d->end == UIW__NFS4_LK_EOF ? NFS4_UINT64_MAX : d->end - d->start;
    r->locktype = d->write ? WRITE_LT : READ_LT;
    r->owner.clientid = d->cid;
    r->owner.owner.owner_len = d->len;
    r->owner.owner.owner_val = uiw__nfs4_alloc(c, d->len ? d->len : 1);
    if (!r->owner.owner.owner_val) {
        r->owner.owner.owner_len = 0;
        return NFS4ERR_SERVERFAULT;
    }
    if (d->len)
        memcpy(r->owner.owner.owner_val, d->owner, d->len);
    return NFS4ERR_DENIED;
}

/* What LOCK and LOCKT begin with: the lock asked for as q, the current file (*fd, an
 * O_PATH descriptor, -1 when the status is not NFS4_OK; its export and stat) and the
 * grace period's rule (reclaim: a reclaim's). */
static nfsstat4 begin(struct uiw__nfs4_c *c, struct uiw__vfs *v, nfs_lock_type4 type, uint64_t off,
                      uint64_t len, int reclaim, struct uiw__nfs4_lkrange *q, int *fd,
                      struct uiw__nfs_export **ex, struct stat *sb)
{
    *fd = -1;
    nfsstat4 st = request(type, off, len, q);
    if (st == NFS4_OK)
        st = uiw__nfs4_reg_file(c, v, NFS4ERR_INVAL, fd, ex, sb);
    if (st == NFS4_OK)
        st = uiw__nfs4_grace_check(c->s->nfs4, &c->ref, reclaim);
    if (st != NFS4_OK && *fd >= 0) {
        close(*fd);
        *fd = -1;
    }
    return st;
}

nfsstat4 uiw__nfs4_lock(struct uiw__nfs4_c *c, struct uiw__vfs *v, const LOCK4args *a, LOCK4res *r)
{
    struct uiw__nfs4_lkrange q;
    int fd, dfd = -1;
    struct uiw__nfs_export *ex;
    struct stat sb;
    nfsstat4 st = begin(c, v, a->locktype, a->offset, a->length, a->reclaim, &q, &fd, &ex, &sb);
    if (fd < 0)
        return st;
    const locker4 *k = &a->locker;
    const lock_owner4 *lo = NULL;
    stateid4 sid;
    if (st == NFS4_OK && k->new_lock_owner) {
        lo = &k->locker4_u.open_owner.lock_owner;
        st = uiw__nfs4_sid_in(c, &k->locker4_u.open_owner.open_stateid, &sid);
        if (st == NFS4_OK)
            dfd = data_fd(v, fd, &st, ex, c);
    } else if (st == NFS4_OK) {
        st = uiw__nfs4_sid_in(c, &k->locker4_u.lock_owner.lock_stateid, &sid);
    }
    close(fd);
    if (st != NFS4_OK) {
        if (dfd >= 0)
            close(dfd);
        return st;
    }
    struct uiw__nfs4_lkdenied d;
    stateid4 *out = &r->LOCK4res_u.resok4.lock_stateid;
    st = uiw__nfs4_stid_lock(stids(c), client(c), sb.st_dev, sb.st_ino, &sid, lo, dfd, &q, out, &d);
    if (st == NFS4ERR_DENIED)
        return denied(c, &d, &r->LOCK4res_u.denied);
    if (st == NFS4_OK)
        uiw__nfs4_sid_set(c, out);
    if (st == NFS4_OK && a->reclaim)
        uiw__nfs4_reclaimed(c->s->nfs4, 1);
    return st;
}

nfsstat4 uiw__nfs4_lockt(struct uiw__nfs4_c *c, struct uiw__vfs *v, const LOCKT4args *a,
                         LOCKT4res *r)
{
    struct uiw__nfs4_lkrange q;
    int fd, dfd = -1;
    struct uiw__nfs_export *ex;
    struct stat sb;
    nfsstat4 st = begin(c, v, a->locktype, a->offset, a->length, 0, &q, &fd, &ex, &sb);
    if (fd < 0)
        return st;
    if (st == NFS4_OK)
        dfd = data_fd(v, fd, &st, ex, c);
    close(fd);
    if (st != NFS4_OK)
        return st;
    struct uiw__nfs4_lkdenied d;
    st = uiw__nfs4_stid_lockt(stids(c), client(c), sb.st_dev, sb.st_ino, &a->owner, dfd, &q, &d);
    close(dfd);
    return st == NFS4ERR_DENIED ? denied(c, &d, &r->LOCKT4res_u.denied) : st;
}

nfsstat4 uiw__nfs4_locku(struct uiw__nfs4_c *c, struct uiw__vfs *v, const LOCKU4args *a,
                         LOCKU4res *r)
{
    struct uiw__nfs4_lkrange q;
    nfsstat4 st = range_of(a->offset, a->length, &q);
    if (st != NFS4_OK)
        return st;
    q.type = F_UNLCK;
    int fd;
    struct uiw__nfs_export *ex;
    struct stat sb;
    st = uiw__nfs4_reg_file(c, v, NFS4ERR_INVAL, &fd, &ex, &sb);
    if (st != NFS4_OK)
        return st;
    close(fd);
    stateid4 sid;
    st = uiw__nfs4_sid_in(c, &a->lock_stateid, &sid);
    if (st == NFS4_OK)
        st = uiw__nfs4_stid_locku(stids(c), client(c), sb.st_dev, sb.st_ino, &sid, &q,
                                  &r->LOCKU4res_u.lock_stateid);
    if (st == NFS4_OK)
        uiw__nfs4_sid_set(c, &r->LOCKU4res_u.lock_stateid);
    return st;
}
