/* The file-system layer under the NFS procedures: vfs.h. */
#include "nfs/vfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

/* Changes of objects hashing to one stripe wait for each other. */
#define STRIPES 256
/* Files with uncommitted writes whose descriptor COMMIT will fsync through; one more
 * file's write forgets the longest unused, and changes the verifier. */
#define WITNESSES 256

struct witness {
    uint64_t dev, ino, used;
    int fd; /* -1: a free slot */
};

struct uiw__vfs_state {
    pthread_mutex_t stripe[STRIPES];
    pthread_mutex_t wlock;
    uint64_t clock;
    struct witness w[WITNESSES];
};

struct uiw__vfs_state *uiw__vfs_state_create(void)
{
    struct uiw__vfs_state *st = calloc(1, sizeof(*st));
    if (!st)
        return NULL;
    for (unsigned i = 0; i < STRIPES; i++)
        pthread_mutex_init(&st->stripe[i], NULL);
    pthread_mutex_init(&st->wlock, NULL);
    for (unsigned i = 0; i < WITNESSES; i++)
        st->w[i].fd = -1;
    return st;
}

void uiw__vfs_state_destroy(struct uiw__vfs_state *st)
{
    if (!st)
        return;
    for (unsigned i = 0; i < WITNESSES; i++)
        if (st->w[i].fd >= 0)
            close(st->w[i].fd);
    for (unsigned i = 0; i < STRIPES; i++)
        pthread_mutex_destroy(&st->stripe[i]);
    pthread_mutex_destroy(&st->wlock);
    free(st);
}

/* ---- the caller ---- */

void uiw__vfs_init(struct uiw__vfs *v, struct uiw__nfsd *s, struct svc_req *rq, int write)
{
    v->s = s;
    v->rq = rq;
    v->write = write;
    v->xo = NULL;
    v->entered = 0;
    uiw__nfs_cred_from_req(s, rq, NULL, &v->cred);
}

int uiw__vfs_enter(struct uiw__vfs *v)
{
    if (!v->entered) {
        int rc = uiw__nfs_cred_enter(v->s, &v->cred);
        if (rc != 0)
            return rc;
        v->entered = 1;
    }
    return 0;
}

void uiw__vfs_leave(struct uiw__vfs *v)
{
    if (v->entered) {
        uiw__nfs_cred_leave(v->s);
        v->entered = 0;
    }
}

nfsstat3 uiw__vfs_resolve(struct uiw__vfs *v, const nfs_fh3 *h, int dir, int *fd,
                          struct uiw__nfs_export **ex)
{
    *fd = -1;
    nfsstat3 st = uiw__nfs_fh_export(v->s, h, ex);
    if (st == NFS3_OK)
        st = uiw__nfsd_access(v->s, *ex, v->rq, v->write, &v->cred, &v->xo);
    if (st == NFS3_OK)
        st = uiw__nfs_fh_resolve(v->s, &v->cred, h, fd, ex);
    if (st != NFS3_OK)
        return st;
    struct stat sb;
    if (dir && (fstat(*fd, &sb) != 0 || !S_ISDIR(sb.st_mode))) {
        close(*fd);
        *fd = -1;
        return NFS3ERR_NOTDIR;
    }
    return NFS3_OK;
}

nfsstat3 uiw__vfs_stat(struct uiw__vfs *v, const nfs_fh3 *h, struct stat *st,
                       struct uiw__nfs_export **ex)
{
    nfsstat3 rc = uiw__nfs_fh_export(v->s, h, ex);
    if (rc == NFS3_OK)
        rc = uiw__nfsd_access(v->s, *ex, v->rq, v->write, &v->cred, &v->xo);
    if (rc == NFS3_OK)
        rc = uiw__nfs_fh_stat(v->s, &v->cred, h, st, ex);
    return rc;
}

/* ---- opening, attributes, durability ---- */

/* A path naming the file behind an O_PATH descriptor: open(2) and friends on it reach
 * that very file (the kernel's magic link), never a name in a directory. */
static void fdpath(char *buf, size_t n, int fd)
{
    snprintf(buf, n, "/proc/self/fd/%d", fd);
}

static int open_data(int fd, int flags, nfsstat3 *st)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        *st = uiw__nfsd_errno(errno);
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        *st = S_ISDIR(sb.st_mode) ? NFS3ERR_ISDIR : NFS3ERR_INVAL;
        return -1;
    }
    char p[64];
    fdpath(p, sizeof(p), fd);
    int dfd = open(p, flags | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (dfd < 0)
        *st = uiw__nfsd_errno(errno);
    return dfd;
}

/* As knfsd's NFSD_MAY_OWNER_OVERRIDE: an owner may write the 0444 file it has just made
 * (cp -p, tar, git, install). */
int uiw__vfs_open(struct uiw__vfs *v, int fd, int flags, nfsstat3 *st)
{
    int was = v->entered;
    if (uiw__vfs_enter(v) != 0) {
        *st = NFS3ERR_PERM;
        return -1;
    }
    int dfd = open_data(fd, flags, st);
    int err = errno;
    uiw__vfs_leave(v);
    struct stat sb;
    if (dfd < 0 && err == EACCES && (flags & O_ACCMODE) != O_RDONLY && v->s->privileged &&
        fstat(fd, &sb) == 0 && sb.st_uid == v->cred.uid) {
        dfd = open_data(fd, flags, st);
        if (dfd >= 0)
            *st = NFS3_OK;
    }
    if (was && uiw__vfs_enter(v) != 0) {
        if (dfd >= 0)
            close(dfd);
        *st = NFS3ERR_PERM;
        return -1;
    }
    return dfd;
}

nfsstat3 uiw__vfs_setattr(struct uiw__vfs *v, int fd, const struct uiw__vfs_sattr *a)
{
    struct stat sb;
    char p[64];
    if (fstat(fd, &sb) != 0)
        return uiw__nfsd_errno(errno);
    fdpath(p, sizeof(p), fd);
    if (a->set & UIW__VFS_SIZE) {
        nfsstat3 st = NFS3_OK;
        if (S_ISDIR(sb.st_mode))
            return NFS3ERR_ISDIR;
        if (a->size > (uint64_t)INT64_MAX)
            return NFS3ERR_FBIG;
        int dfd = uiw__vfs_open(v, fd, O_WRONLY, &st); /* the owner may truncate */
        if (dfd < 0)
            return st;
        int rc = ftruncate(dfd, (off_t)a->size);
        int err = errno;
        close(dfd);
        if (rc != 0)
            return uiw__nfsd_errno(err);
    }
    if ((a->set & UIW__VFS_MODE) && !S_ISLNK(sb.st_mode)) {
        if (chmod(p, a->mode & 07777) != 0)
            return uiw__nfsd_errno(errno);
    }
    if (a->set & (UIW__VFS_UID | UIW__VFS_GID)) {
        uid_t u = (a->set & UIW__VFS_UID) ? a->uid : (uid_t)-1;
        gid_t g = (a->set & UIW__VFS_GID) ? a->gid : (gid_t)-1;
        if (fchownat(fd, "", u, g, AT_EMPTY_PATH) != 0)
            return uiw__nfsd_errno(errno);
    }
    if (a->set & (UIW__VFS_ATIME | UIW__VFS_MTIME)) {
        struct timespec ts[2] = {{0, UTIME_OMIT}, {0, UTIME_OMIT}};
        if (a->set & UIW__VFS_ATIME)
            ts[0] = a->atime;
        if (a->set & UIW__VFS_MTIME)
            ts[1] = a->mtime;
        for (int i = 0; i < 2; i++)
            if (ts[i].tv_nsec != UTIME_NOW && ts[i].tv_nsec != UTIME_OMIT &&
                (ts[i].tv_nsec < 0 || ts[i].tv_nsec >= 1000000000))
                return NFS3ERR_INVAL;
        int rc = utimensat(fd, "", ts, AT_EMPTY_PATH);
        if (rc != 0 && errno == EINVAL && !S_ISLNK(sb.st_mode))
            rc = utimensat(AT_FDCWD, p, ts, 0); /* kernels before AT_EMPTY_PATH here */
        if (rc != 0)
            return uiw__nfsd_errno(errno);
    }
    return NFS3_OK;
}

/* As knfsd's commit_metadata: the object or directory behind fd is opened (as the
 * server: the caller may not read it) and fsynced. Nothing for `async` exports and those
 * of the command line, or for a symbolic link (its directory is what holds it). */
void uiw__vfs_durable(struct uiw__vfs *v, int fd)
{
    if (!v->xo || (v->xo->flags & UIW__X_ASYNC) || fd < 0)
        return;
    int was = v->entered;
    uiw__vfs_leave(v);
    char p[64];
    fdpath(p, sizeof(p), fd);
    int sfd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (sfd >= 0) {
        fsync(sfd);
        close(sfd);
        atomic_fetch_add_explicit(&v->s->meta_syncs, 1, memory_order_relaxed);
    }
    if (was)
        uiw__vfs_enter(v);
}

/* ---- changes whose attributes are their own ---- */

static unsigned stripe_of(const struct stat *st)
{
    uint64_t h = ((uint64_t)st->st_dev * 0x9E3779B97F4A7C15ull) ^
                 ((uint64_t)st->st_ino * 0xC2B2AE3D27D4EB4Full);
    return (unsigned)((h >> 32) ^ h) % STRIPES;
}

void uiw__vfs_begin(struct uiw__vfs *v, struct uiw__vfs_change *ch, int fd0, int fd1)
{
    ch->vs = v->s->vfs;
    ch->n = 0;
    int fds[2] = {fd0, fd1};
    for (int i = 0; i < 2; i++) {
        ch->have_pre[i] = fds[i] >= 0 && fstat(fds[i], &ch->pre[i]) == 0;
        if (ch->have_pre[i])
            ch->stripe[ch->n++] = stripe_of(&ch->pre[i]);
    }
    if (ch->n == 2 && ch->stripe[0] == ch->stripe[1])
        ch->n = 1;
    if (ch->n == 2 && ch->stripe[0] > ch->stripe[1]) { /* one order for everyone */
        unsigned t = ch->stripe[0];
        ch->stripe[0] = ch->stripe[1];
        ch->stripe[1] = t;
    }
    for (unsigned i = 0; i < ch->n; i++)
        pthread_mutex_lock(&ch->vs->stripe[ch->stripe[i]]);
    /* what they are now that no other call changes them */
    for (int i = 0; i < 2; i++)
        if (ch->have_pre[i])
            ch->have_pre[i] = fstat(fds[i], &ch->pre[i]) == 0;
}

void uiw__vfs_end(struct uiw__vfs_change *ch)
{
    for (unsigned i = ch->n; i-- > 0;)
        pthread_mutex_unlock(&ch->vs->stripe[ch->stripe[i]]);
    ch->n = 0;
}

/* ---- writes, their errors and COMMIT ---- */

void uiw__vfs_verf(struct uiw__nfsd *s, char verf[NFS3_WRITEVERFSIZE])
{
    uint64_t x = atomic_load_explicit(&s->writeverf, memory_order_relaxed);
    memcpy(verf, &x, NFS3_WRITEVERFSIZE);
}

/* A write of some client may be lost: a new verifier makes every client that has not
 * seen its writes committed send them again (knfsd's nfsd_reset_write_verifier). */
static void lost_writes(struct uiw__nfsd *s)
{
    uint64_t x;
    if (getrandom(&x, sizeof(x), GRND_NONBLOCK) != (ssize_t)sizeof(x))
        x = atomic_load_explicit(&s->writeverf, memory_order_relaxed) * 0x9E3779B97F4A7C15ull + 1;
    atomic_store_explicit(&s->writeverf, x, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->verf_changes, 1, memory_order_relaxed);
}

/* The witness of (dev, ino), taken out of the table (the caller closes it), or -1. */
static int witness_take(struct uiw__vfs_state *vs, uint64_t dev, uint64_t ino)
{
    int fd = -1;
    pthread_mutex_lock(&vs->wlock);
    for (unsigned i = 0; i < WITNESSES; i++) {
        struct witness *w = &vs->w[i];
        if (w->fd >= 0 && w->dev == dev && w->ino == ino) {
            fd = w->fd;
            w->fd = -1;
            break;
        }
    }
    pthread_mutex_unlock(&vs->wlock);
    return fd;
}

/* Before a write through dfd to st's file with no witness yet: a copy of dfd (opened
 * before the write) is its witness. */
static void witness_keep(struct uiw__nfsd *s, int dfd, const struct stat *st)
{
    struct uiw__vfs_state *vs = s->vfs;
    int lost = 0, old = -1;
    pthread_mutex_lock(&vs->wlock);
    struct witness *free_slot = NULL, *lru = NULL;
    for (unsigned i = 0; i < WITNESSES; i++) {
        struct witness *w = &vs->w[i];
        if (w->fd < 0) {
            if (!free_slot)
                free_slot = w;
            continue;
        }
        if (w->dev == (uint64_t)st->st_dev && w->ino == (uint64_t)st->st_ino) {
            w->used = ++vs->clock;
            pthread_mutex_unlock(&vs->wlock);
            return;
        }
        if (!lru || w->used < lru->used)
            lru = w;
    }
    struct witness *w = free_slot;
    if (!w) { /* forget the longest unused: its errors would go unseen */
        w = lru;
        old = w->fd;
        lost = 1;
    }
    w->fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
    w->dev = (uint64_t)st->st_dev;
    w->ino = (uint64_t)st->st_ino;
    w->used = ++vs->clock;
    if (w->fd < 0)
        lost = 1;
    pthread_mutex_unlock(&vs->wlock);
    if (old >= 0)
        close(old);
    if (lost)
        lost_writes(s);
}

void uiw__vfs_forget(struct uiw__nfsd *s, dev_t dev, ino_t ino)
{
    int fd = witness_take(s->vfs, (uint64_t)dev, (uint64_t)ino);
    if (fd >= 0)
        close(fd);
}

nfsstat3 uiw__vfs_write(struct uiw__vfs *v, int dfd, const struct stat *st, uint64_t off,
                        const char *data, uint32_t count, int stable)
{
    if (stable == UNSTABLE)
        witness_keep(v->s, dfd, st);
    size_t n = 0;
    while (n < count) {
        ssize_t k = pwrite(dfd, data + n, count - n, (off_t)(off + n));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            int err = k < 0 ? errno : EIO;
            if (err != EAGAIN)
                lost_writes(v->s); /* as knfsd: whatever part of it is in the file */
            return uiw__nfsd_errno(err);
        }
        n += (size_t)k;
    }
    return NFS3_OK;
}

nfsstat3 uiw__vfs_sync(struct uiw__vfs *v, int dfd, int stable)
{
    int rc = 0;
    if (stable == FILE_SYNC)
        rc = fsync(dfd);
    else if (stable == DATA_SYNC)
        rc = fdatasync(dfd);
    if (rc == 0)
        return NFS3_OK;
    int err = errno;
    lost_writes(v->s); /* this fsync took the error: other writers would not see it */
    return uiw__nfsd_errno(err);
}

nfsstat3 uiw__vfs_commit(struct uiw__vfs *v, int fd)
{
    /* with write permission (or as the owner), as knfsd's COMMIT: a write-only file's
     * writer may commit it */
    nfsstat3 st = NFS3_OK;
    int dfd = uiw__vfs_open(v, fd, O_WRONLY, &st);
    if (dfd < 0)
        return st;
    struct stat sb;
    int w = fstat(dfd, &sb) == 0 ? witness_take(v->s->vfs, (uint64_t)sb.st_dev, (uint64_t)sb.st_ino)
                                 : -1;
    int rc = fdatasync(w >= 0 ? w : dfd);
    int err = errno;
    if (w >= 0)
        close(w);
    close(dfd);
    if (rc == 0)
        return NFS3_OK;
    lost_writes(v->s);
    return uiw__nfsd_errno(err);
}
