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
#include <sys/resource.h>
#include <time.h>
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

/* Open files of READ, WRITE and COMMIT, as knfsd's file cache and NFS-Ganesha's descriptor
 * cache keep them: each closed once unused for OFILE_IDLE_NS (swept by the TCP event
 * thread's tick and by the calls), when its file is removed through the server, when the
 * exports are read again, and the least recently used first while the cache holds its
 * share of RLIMIT_NOFILE (uiw__vfs_limit). A cached descriptor keeps its inode allocated,
 * so (dev, ino) of a handle's live file names that very file. */
#define OFILE_BUCKETS  256
#define OFILE_IDLE_NS  2000000000ll
#define OFILE_SWEEP_NS 1000000000ll
/* The cache's descriptors: a quarter of the process's limit, within these. */
#define OFILE_FDS_MIN 8
#define OFILE_FDS_MAX 16384

struct uiw__vfs_file {
    struct uiw__vfs_file *next;          /* in its bucket */
    struct uiw__vfs_file *older, *newer; /* in the table's use order */
    uint64_t dev, ino;
    int fd[2]; /* O_RDONLY, O_WRONLY; -1 until asked for */
    unsigned refs;
    int gone; /* out of the table: closed at its last put */
    int64_t used_ns;
};

struct uiw__vfs_state {
    pthread_mutex_t stripe[STRIPES];
    pthread_mutex_t wlock;
    uint64_t clock;
    struct witness w[WITNESSES];
    pthread_mutex_t flock;
    struct uiw__vfs_file *bucket[OFILE_BUCKETS];
    struct uiw__vfs_file *oldest, *newest; /* use order, least recently used first */
    unsigned nfds, maxfds;                 /* descriptors in the table, and its limit */
    int64_t swept_ns;
    _Atomic unsigned long file_hits, file_opens, resolves;
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
    pthread_mutex_init(&st->flock, NULL);
    uiw__vfs_limit(st);
    return st;
}

void uiw__vfs_limit(struct uiw__vfs_state *st)
{
    struct rlimit rl;
    rlim_t n = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur / 4 : 256;
    if (n < OFILE_FDS_MIN)
        n = OFILE_FDS_MIN;
    if (n > OFILE_FDS_MAX)
        n = OFILE_FDS_MAX;
    pthread_mutex_lock(&st->flock);
    st->maxfds = (unsigned)n;
    pthread_mutex_unlock(&st->flock);
}

static void file_close(struct uiw__vfs_file *f)
{
    for (int i = 0; i < 2; i++)
        if (f->fd[i] >= 0)
            close(f->fd[i]);
    free(f);
}

/* Close the files file_unlink chained on `dead`, out of flock: the last close of a removed
 * file frees its blocks, which may take a while. */
static void file_close_all(struct uiw__vfs_file *dead)
{
    while (dead) {
        struct uiw__vfs_file *n = dead->next;
        file_close(dead);
        dead = n;
    }
}

void uiw__vfs_state_destroy(struct uiw__vfs_state *st)
{
    if (!st)
        return;
    for (unsigned i = 0; i < WITNESSES; i++)
        if (st->w[i].fd >= 0)
            close(st->w[i].fd);
    for (unsigned i = 0; i < OFILE_BUCKETS; i++)
        while (st->bucket[i]) {
            struct uiw__vfs_file *f = st->bucket[i];
            st->bucket[i] = f->next;
            file_close(f);
        }
    for (unsigned i = 0; i < STRIPES; i++)
        pthread_mutex_destroy(&st->stripe[i]);
    pthread_mutex_destroy(&st->wlock);
    pthread_mutex_destroy(&st->flock);
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

int uiw__vfs_access(struct uiw__vfs *v, int fd, int dir, uint32_t want, uint32_t *got)
{
    *got = 0;
    if (uiw__vfs_enter(v) != 0)
        return -EPERM;
    int fl = AT_EMPTY_PATH | AT_EACCESS;
    if ((want & ACCESS3_READ) && faccessat(fd, "", R_OK, fl) == 0)
        *got |= ACCESS3_READ;
    if ((want & (ACCESS3_MODIFY | ACCESS3_EXTEND | ACCESS3_DELETE)) &&
        faccessat(fd, "", W_OK, fl) == 0)
        *got |= want & (ACCESS3_MODIFY | ACCESS3_EXTEND | (dir ? ACCESS3_DELETE : 0));
    if ((want & (ACCESS3_LOOKUP | ACCESS3_EXECUTE)) && faccessat(fd, "", X_OK, fl) == 0)
        *got |= want & (dir ? ACCESS3_LOOKUP : ACCESS3_EXECUTE);
    uiw__vfs_leave(v);
    if (v->xo && !(v->xo->flags & UIW__X_RW))
        *got &= ~(uint32_t)(ACCESS3_MODIFY | ACCESS3_EXTEND | ACCESS3_DELETE);
    return 0;
}

int uiw__vfs_access_known(struct uiw__vfs *v, int fd, const struct stat *sb, uint32_t want,
                          uint32_t *got)
{
    int dir = S_ISDIR(sb->st_mode);
    const struct uiw__nfs_cred *c = &v->cred;
    uint32_t change = ACCESS3_MODIFY | ACCESS3_EXTEND | ACCESS3_DELETE;
    /* A change the kernel answers (a read-only file system, an immutable file). Root's
     * override reads anything and searches any directory, but executes only a file with
     * an execute bit; the owner has the owner bits, whatever ACL the file has. */
    int r, x;
    if (!v->s->privileged || (want & change))
        return uiw__vfs_access(v, fd, dir, want, got);
    if (c->uid == 0 && v->s->dac_override) {
        r = 1;
        x = dir || (sb->st_mode & (S_IXUSR | S_IXGRP | S_IXOTH));
    } else if (c->uid == (uint32_t)sb->st_uid) {
        r = (sb->st_mode & S_IRUSR) != 0;
        x = (sb->st_mode & S_IXUSR) != 0;
    } else {
        return uiw__vfs_access(v, fd, dir, want, got);
    }
    *got =
        (r ? want & ACCESS3_READ : 0) | (x ? want & (dir ? ACCESS3_LOOKUP : ACCESS3_EXECUTE) : 0);
    return 0;
}

nfsstat3 uiw__vfs_resolve(struct uiw__vfs *v, const nfs_fh3 *h, int dir, int *fd,
                          struct uiw__nfs_export **ex, struct stat *sb)
{
    *fd = -1;
    struct stat own;
    if (!sb)
        sb = &own;
    nfsstat3 st = uiw__nfs_fh_export(v->s, h, ex);
    if (st == NFS3_OK)
        st = uiw__nfsd_access(v->s, *ex, v->rq, v->write, &v->cred, &v->xo);
    if (st == NFS3_OK)
        st = uiw__nfs_fh_resolve(v->s, &v->cred, h, fd, ex, sb);
    if (st != NFS3_OK)
        return st;
    atomic_fetch_add_explicit(&v->s->vfs->resolves, 1, memory_order_relaxed);
    if (dir && !S_ISDIR(sb->st_mode)) {
        close(*fd);
        *fd = -1;
        return NFS3ERR_NOTDIR;
    }
    return NFS3_OK;
}

nfsstat3 uiw__vfs_stat(struct uiw__vfs *v, const nfs_fh3 *h, struct stat *st,
                       struct uiw__nfs_export **ex)
{
    struct uiw__nfsd_fh fh;
    nfsstat3 rc = uiw__nfs_fh_export_of(v->s, h, &fh, ex);
    if (rc == NFS3_OK)
        rc = uiw__nfsd_access(v->s, *ex, v->rq, v->write, &v->cred, &v->xo);
    if (rc == NFS3_OK)
        rc = uiw__nfs_fh_stat(v->s, &v->cred, h, &fh, st, ex);
    return rc;
}

/* ---- opening, attributes, durability ---- */

/* A path naming the file behind an O_PATH descriptor: open(2) and friends on it reach
 * that very file (the kernel's magic link), never a name in a directory. */
static void fdpath(char *buf, size_t n, int fd)
{
    snprintf(buf, n, "/proc/self/fd/%d", fd);
}

/* ---- the open-file cache ---- */

static unsigned file_bucket(uint64_t dev, uint64_t ino)
{
    uint64_t h = (dev * 0x9E3779B97F4A7C15ull) ^ (ino * 0xC2B2AE3D27D4EB4Full);
    return (unsigned)((h >> 32) ^ h) % OFILE_BUCKETS;
}

static unsigned file_fds(const struct uiw__vfs_file *f)
{
    return (f->fd[0] >= 0) + (f->fd[1] >= 0);
}

/* f out of the use order, or to its newest end (under flock). */
static void file_unorder(struct uiw__vfs_state *vs, struct uiw__vfs_file *f)
{
    if (!f->older && vs->oldest != f)
        return; /* new: in no order yet */
    *(f->older ? &f->older->newer : &vs->oldest) = f->newer;
    *(f->newer ? &f->newer->older : &vs->newest) = f->older;
    f->older = f->newer = NULL;
}

static void file_touch(struct uiw__vfs_state *vs, struct uiw__vfs_file *f, int64_t now)
{
    file_unorder(vs, f);
    f->older = vs->newest;
    *(vs->newest ? &vs->newest->newer : &vs->oldest) = f;
    vs->newest = f;
    f->used_ns = now;
}

/* Take f out of the table (under flock); if no call uses it, onto *dead to be closed
 * (file_close_all), else closed at its last put. */
static void file_unlink(struct uiw__vfs_state *vs, struct uiw__vfs_file *f,
                        struct uiw__vfs_file **dead)
{
    struct uiw__vfs_file **pp = &vs->bucket[file_bucket(f->dev, f->ino)];
    while (*pp != f)
        pp = &(*pp)->next;
    *pp = f->next;
    file_unorder(vs, f);
    vs->nfds -= file_fds(f);
    f->gone = 1;
    if (f->refs == 0) {
        f->next = *dead;
        *dead = f;
    }
}

/* Close what went unused for OFILE_IDLE_NS (every file when idle_ns is 0), and the least
 * recently used unused files while the table holds more than `keep` descriptors (under
 * flock). Files in use stay, and are let go at their last put once out. */
static void file_sweep(struct uiw__vfs_state *vs, int64_t now, int64_t idle_ns, unsigned keep,
                       struct uiw__vfs_file **dead)
{
    struct uiw__vfs_file *f = vs->oldest;
    while (f) {
        struct uiw__vfs_file *n = f->newer;
        int idle = now - f->used_ns >= idle_ns;
        if (!idle && vs->nfds <= keep)
            break; /* the rest were used later */
        if (f->refs == 0 || idle_ns == 0)
            file_unlink(vs, f, dead);
        f = n;
    }
    vs->swept_ns = now;
}

int uiw__vfs_may_quick(const struct uiw__nfsd *s, const struct uiw__nfs_cred *c,
                       const struct stat *sb, int mode, nfsstat3 *st)
{
    /* The kernel's order (generic_permission): an owner's access is the owner bits alone
     * (an ACL's owner entry is those bits; named entries apply to others), and with its
     * file system uid moved off 0 the caller has no override. Root keeps the server's
     * CAP_DAC_OVERRIDE: any regular file read or written. What the bits do not decide
     * here (a read-only or immutable file, for writing) the open or the write answers, as
     * the server, with the same error. */
    if (c->uid == 0 && s->dac_override) {
        *st = NFS3_OK;
        return 1;
    }
    if (c->uid != (uint32_t)sb->st_uid)
        return 0;
    *st = mode == W_OK || (sb->st_mode & S_IRUSR) ? NFS3_OK : NFS3ERR_ACCES;
    return 1;
}

/* May the caller read (mode R_OK) or write (W_OK) the regular file behind the O_PATH
 * descriptor fd, whose attributes are sb? As the caller, with the owner's override for
 * writing, as knfsd's NFSD_MAY_OWNER_OVERRIDE: an owner may write the 0444 file it has
 * just made (cp -p, tar, git, install). The owner and root are answered from sb, the
 * others by the kernel as themselves (their groups, the file's ACL). */
static nfsstat3 may(struct uiw__vfs *v, int fd, int mode, const struct stat *sb)
{
    if (!v->s->privileged)
        return NFS3_OK; /* the server acts as itself: its own open decides */
    nfsstat3 quick;
    if (uiw__vfs_may_quick(v->s, &v->cred, sb, mode, &quick))
        return quick;
    uid_t uid = sb->st_uid;
    int was = v->entered;
    if (uiw__vfs_enter(v) != 0)
        return NFS3ERR_PERM;
    int rc = faccessat(fd, "", mode, AT_EMPTY_PATH | AT_EACCESS);
    int err = errno;
    if (!was)
        uiw__vfs_leave(v);
    if (rc == 0 || (err == EACCES && mode == W_OK && uid == v->cred.uid))
        return NFS3_OK;
    return uiw__nfsd_errno(err);
}

/* The file behind the O_PATH descriptor fd opened for data (acc: O_RDONLY, O_WRONLY,
 * O_RDWR) as the server, the caller's identity left and taken again around it. */
static int open_as_server(struct uiw__vfs *v, int fd, int acc, nfsstat3 *st)
{
    int was = v->entered;
    uiw__vfs_leave(v);
    char p[64];
    fdpath(p, sizeof(p), fd);
    int d = open(p, acc | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    int err = errno;
    if (was && uiw__vfs_enter(v) != 0) {
        if (d >= 0)
            close(d);
        *st = NFS3ERR_PERM;
        return -1;
    }
    if (d < 0)
        *st = uiw__nfsd_errno(err);
    return d;
}

/* Whether the file of the attributes sb is a regular file. */
static nfsstat3 regular_of(const struct stat *sb)
{
    if (!S_ISREG(sb->st_mode))
        return S_ISDIR(sb->st_mode) ? NFS3ERR_ISDIR : NFS3ERR_INVAL;
    return NFS3_OK;
}

/* fd's file, which must be a regular file, in *sb. */
static nfsstat3 regular(int fd, struct stat *sb)
{
    if (fstat(fd, sb) != 0)
        return uiw__nfsd_errno(errno);
    return regular_of(sb);
}

int uiw__vfs_open(struct uiw__vfs *v, int fd, int flags, nfsstat3 *st)
{
    struct stat sb;
    int acc = flags & O_ACCMODE;
    if ((*st = regular(fd, &sb)) != NFS3_OK ||
        (acc != O_WRONLY && (*st = may(v, fd, R_OK, &sb)) != NFS3_OK) ||
        (acc != O_RDONLY && (*st = may(v, fd, W_OK, &sb)) != NFS3_OK))
        return -1;
    return open_as_server(v, fd, acc, st);
}

int uiw__vfs_get(struct uiw__vfs *v, int fd, int flags, nfsstat3 *st, struct uiw__vfs_file **out)
{
    *out = NULL;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        *st = uiw__nfsd_errno(errno);
        return -1;
    }
    return uiw__vfs_get_known(v, fd, &sb, flags, st, out);
}

int uiw__vfs_get_known(struct uiw__vfs *v, int fd, const struct stat *sb, int flags, nfsstat3 *st,
                       struct uiw__vfs_file **out)
{
    *out = NULL;
    if ((*st = regular_of(sb)) != NFS3_OK)
        return -1;
    int w = (flags & O_ACCMODE) == O_WRONLY;
    *st = may(v, fd, w ? W_OK : R_OK, sb);
    if (*st != NFS3_OK)
        return -1;
    struct uiw__vfs_state *vs = v->s->vfs;
    uint64_t dev = (uint64_t)sb->st_dev, ino = (uint64_t)sb->st_ino;
    unsigned b = file_bucket(dev, ino);
    int64_t now = uiw__nfsd_now_ns();
    int opened = -1, installed = 0;
    for (;;) {
        struct uiw__vfs_file *dead = NULL;
        pthread_mutex_lock(&vs->flock);
        if (now - vs->swept_ns > OFILE_SWEEP_NS)
            file_sweep(vs, now, OFILE_IDLE_NS, UINT_MAX, &dead);
        struct uiw__vfs_file *f = vs->bucket[b];
        while (f && (f->dev != dev || f->ino != ino))
            f = f->next;
        if (!f && opened >= 0) {
            f = calloc(1, sizeof(*f));
            if (f) {
                f->dev = dev;
                f->ino = ino;
                f->fd[0] = f->fd[1] = -1;
                f->next = vs->bucket[b];
                vs->bucket[b] = f;
            }
        }
        if (f && f->fd[w] < 0 && opened >= 0) {
            f->refs++; /* this one stays while the room is made */
            if (vs->nfds >= vs->maxfds)
                file_sweep(vs, now, OFILE_IDLE_NS, vs->maxfds - 1, &dead);
            f->refs--;
            f->fd[w] = opened;
            vs->nfds++;
            opened = -1;
            installed = 1;
        }
        if (f && f->fd[w] >= 0) {
            f->refs++;
            file_touch(vs, f, now);
            int d = f->fd[w];
            pthread_mutex_unlock(&vs->flock);
            file_close_all(dead);
            if (opened >= 0)
                close(opened); /* another call opened it meanwhile */
            else if (!installed)
                atomic_fetch_add_explicit(&vs->file_hits, 1, memory_order_relaxed);
            *out = f;
            return d;
        }
        pthread_mutex_unlock(&vs->flock);
        file_close_all(dead);
        if (opened >= 0) { /* no memory for an entry: this call's own descriptor */
            *out = NULL;
            return opened;
        }
        /* as the server (the caller was checked above), outside the lock */
        if ((opened = open_as_server(v, fd, w ? O_WRONLY : O_RDONLY, st)) < 0)
            return -1;
        atomic_fetch_add_explicit(&vs->file_opens, 1, memory_order_relaxed);
    }
}

int uiw__vfs_get_cached(struct uiw__vfs *v, const struct stat *sb, int flags, nfsstat3 *st,
                        struct uiw__vfs_file **out)
{
    *out = NULL;
    *st = NFS3_OK;
    int w = (flags & O_ACCMODE) == O_WRONLY;
    struct uiw__vfs_state *vs = v->s->vfs;
    uint64_t dev = (uint64_t)sb->st_dev, ino = (uint64_t)sb->st_ino;
    int64_t now = uiw__nfsd_now_ns();
    struct uiw__vfs_file *dead = NULL;
    pthread_mutex_lock(&vs->flock);
    if (now - vs->swept_ns > OFILE_SWEEP_NS)
        file_sweep(vs, now, OFILE_IDLE_NS, UINT_MAX, &dead);
    struct uiw__vfs_file *f = vs->bucket[file_bucket(dev, ino)];
    while (f && (f->dev != dev || f->ino != ino))
        f = f->next;
    int d = f ? f->fd[w] : -1;
    if (d >= 0) {
        f->refs++;
        file_touch(vs, f, now);
    }
    pthread_mutex_unlock(&vs->flock);
    file_close_all(dead);
    if (d < 0)
        return -1;
    atomic_fetch_add_explicit(&vs->file_hits, 1, memory_order_relaxed);
    /* the kernel, when asked, is asked through the data descriptor: the same file */
    *st = may(v, d, w ? W_OK : R_OK, sb);
    if (*st != NFS3_OK) {
        uiw__vfs_put(v, f, d);
        return -1;
    }
    *out = f;
    return d;
}

void uiw__vfs_put(struct uiw__vfs *v, struct uiw__vfs_file *f, int fd)
{
    if (!f) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct uiw__vfs_state *vs = v->s->vfs;
    pthread_mutex_lock(&vs->flock);
    int last = --f->refs == 0 && f->gone;
    pthread_mutex_unlock(&vs->flock);
    if (last)
        file_close(f);
}

void uiw__vfs_file_counts(struct uiw__nfsd *s, struct uiw__vfs_file_counts *n)
{
    struct uiw__vfs_state *vs = s->vfs;
    n->hits = atomic_load_explicit(&vs->file_hits, memory_order_relaxed);
    n->opens = atomic_load_explicit(&vs->file_opens, memory_order_relaxed);
    n->resolves = atomic_load_explicit(&vs->resolves, memory_order_relaxed);
    pthread_mutex_lock(&vs->flock);
    n->fds = vs->nfds;
    n->max_fds = vs->maxfds;
    pthread_mutex_unlock(&vs->flock);
}

void uiw__vfs_files_idle(struct uiw__nfsd *s, int64_t now)
{
    struct uiw__vfs_state *vs = s->vfs;
    struct uiw__vfs_file *dead = NULL;
    pthread_mutex_lock(&vs->flock);
    file_sweep(vs, now, OFILE_IDLE_NS, UINT_MAX, &dead);
    pthread_mutex_unlock(&vs->flock);
    file_close_all(dead);
}

void uiw__vfs_files_drop(struct uiw__nfsd *s)
{
    struct uiw__vfs_state *vs = s->vfs;
    struct uiw__vfs_file *dead = NULL;
    pthread_mutex_lock(&vs->flock);
    file_sweep(vs, uiw__nfsd_now_ns(), 0, 0, &dead);
    pthread_mutex_unlock(&vs->flock);
    file_close_all(dead);
}

nfsstat3 uiw__vfs_create(struct uiw__vfs *v, int dfd, const char *name, int how,
                         const struct uiw__vfs_sattr *sa, const char verf[8], int *made)
{
    nfsstat3 st = NFS3_OK;
    int fd = -1;
    *made = 0;
    if (how == UIW__VFS_EXCLUSIVE) {
        /* The verifier lives in the new file's atime and mtime (seconds) until the
         * client's SETATTR that follows sets real ones: a retransmitted create finds it
         * and succeeds, anyone else's gets NFS3ERR_EXIST. */
        const unsigned char *b = (const unsigned char *)verf;
        struct timespec ts[2] = {
            {(time_t)((uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]), 0},
            {(time_t)((uint32_t)b[4] << 24 | (uint32_t)b[5] << 16 | (uint32_t)b[6] << 8 | b[7]),
             0}};
        fd = openat(dfd, name, O_CREAT | O_EXCL | O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
            *made = 1;
            if (futimens(fd, ts) != 0)
                st = uiw__nfsd_errno(errno);
            close(fd);
            return st;
        }
        if (errno != EEXIST)
            return uiw__nfsd_errno(errno);
        struct stat was;
        if (fstatat(dfd, name, &was, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(was.st_mode) &&
            was.st_atim.tv_sec == ts[0].tv_sec && was.st_mtim.tv_sec == ts[1].tv_sec &&
            was.st_atim.tv_nsec == 0 && was.st_mtim.tv_nsec == 0)
            return NFS3_OK; /* our own earlier reply was lost */
        return NFS3ERR_EXIST;
    }
    mode_t mode = sa->set & UIW__VFS_MODE ? sa->mode & 07777 : 0644;
    int fl = O_CREAT | O_EXCL | O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
    fd = openat(dfd, name, fl, mode);
    if (fd < 0 && errno == EEXIST && how == UIW__VFS_UNCHECKED) {
        /* UNCHECKED of a file that is there: only its size is set, as knfsd does (not
         * its mode or owner: another's file keeps them) */
        fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        struct stat sb;
        if (fd >= 0 && (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))) {
            close(fd);
            return NFS3ERR_EXIST;
        }
        if (fd >= 0) {
            struct uiw__vfs_sattr size_only = {0};
            size_only.set = sa->set & UIW__VFS_SIZE;
            size_only.size = sa->size;
            st = uiw__vfs_setattr(v, fd, &size_only);
            close(fd);
            return st;
        }
    }
    if (fd < 0)
        return uiw__nfsd_errno(errno == ELOOP ? EEXIST : errno);
    *made = 1;
    /* What the new file already is takes no call: its mode, unless the umask or a default
     * ACL took bits (then set again, past them), and a size of 0. A chmod on a file this
     * new changes nothing a client could see but its ctime. */
    struct uiw__vfs_sattr rest = *sa;
    struct stat sb;
    if ((rest.set & (UIW__VFS_MODE | UIW__VFS_SIZE)) && fstat(fd, &sb) == 0) {
        if ((rest.set & UIW__VFS_MODE) && (sb.st_mode & 07777) == (rest.mode & 07777))
            rest.set &= ~(unsigned)UIW__VFS_MODE;
        if ((rest.set & UIW__VFS_SIZE) && rest.size == 0 && sb.st_size == 0)
            rest.set &= ~(unsigned)UIW__VFS_SIZE;
    }
    st = rest.set ? uiw__vfs_setattr(v, fd, &rest) : NFS3_OK;
    if (st != NFS3_OK)
        unlinkat(dfd, name, 0); /* made but not as asked (a chown refused): undone */
    close(fd);
    return st;
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
        struct uiw__vfs_file *f = NULL;
        int dfd = uiw__vfs_get(v, fd, O_WRONLY, &st, &f); /* the owner may truncate */
        if (dfd < 0)
            return st;
        int rc = ftruncate(dfd, (off_t)a->size);
        int err = errno;
        uiw__vfs_put(v, f, dfd);
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

void uiw__vfs_begin_known(struct uiw__vfs *v, struct uiw__vfs_change *ch, int fd,
                          const struct stat *sb)
{
    ch->vs = v->s->vfs;
    ch->n = 1;
    ch->stripe[0] = stripe_of(sb);
    ch->have_pre[1] = 0;
    pthread_mutex_lock(&ch->vs->stripe[ch->stripe[0]]);
    ch->have_pre[0] = fstat(fd, &ch->pre[0]) == 0;
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
    struct uiw__vfs_state *vs = s->vfs;
    int fd = witness_take(vs, (uint64_t)dev, (uint64_t)ino);
    if (fd >= 0)
        close(fd);
    pthread_mutex_lock(&vs->flock);
    struct uiw__vfs_file *f = vs->bucket[file_bucket((uint64_t)dev, (uint64_t)ino)];
    while (f && (f->dev != (uint64_t)dev || f->ino != (uint64_t)ino))
        f = f->next;
    struct uiw__vfs_file *dead = NULL;
    if (f)
        file_unlink(vs, f, &dead);
    pthread_mutex_unlock(&vs->flock);
    file_close_all(dead);
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

nfsstat3 uiw__vfs_commit(struct uiw__vfs *v, int fd, const struct stat *sb)
{
    /* with write permission (or as the owner), as knfsd's COMMIT: a write-only file's
     * writer may commit it */
    nfsstat3 st = NFS3_OK;
    struct uiw__vfs_file *f = NULL;
    int dfd = uiw__vfs_get_known(v, fd, sb, O_WRONLY, &st, &f);
    if (dfd < 0)
        return st;
    int w = witness_take(v->s->vfs, (uint64_t)sb->st_dev, (uint64_t)sb->st_ino);
    int rc = fdatasync(w >= 0 ? w : dfd);
    int err = errno;
    if (w >= 0)
        close(w);
    uiw__vfs_put(v, f, dfd);
    if (rc == 0)
        return NFS3_OK;
    lost_writes(v->s);
    return uiw__nfsd_errno(err);
}

void uiw__vfs_dir_verf(int dfd, char v[8])
{
    uint64_t t = uiw__nfs_fh_tag(dfd);
    for (int i = 0; i < 8; i++)
        v[i] = (char)(t >> (56 - 8 * i));
}

int uiw__vfs_verf_ok(const char got[8], const char mine[8], uint64_t cookie)
{
    static const char zero[8];
    return cookie == 0 || memcmp(got, zero, sizeof(zero)) == 0 || memcmp(got, mine, 8) == 0;
}
