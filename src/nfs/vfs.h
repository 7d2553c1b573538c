/*
 * The file-system layer under the NFS procedures, as the Linux server keeps it in
 * fs/nfsd/vfs.c: in one place, whatever protocol calls it,
 *   - the caller: its identity (entered per thread), its export's access check, the
 *     resolution of its handles (fh.c);
 *   - opening a file for I/O as the caller, with the owner's override of mode bits;
 *   - attribute changes, and the durable metadata of `sync` exports;
 *   - changes whose pre- and post-operation attributes are the call's own: another call
 *     changing the same object waits from uiw__vfs_begin to uiw__vfs_end;
 *   - writes whose errors reach the client: a failed WRITE, fsync or COMMIT changes the
 *     write verifier (clients send their uncommitted writes again), and COMMIT fsyncs
 *     through a descriptor opened before the file's first uncommitted write, so it sees a
 *     writeback error that another descriptor's fsync already reported.
 * Statuses are NFSv3's (NFSv4 gives the same errors the same values).
 */
#ifndef UIW_NFS_VFS_H
#define UIW_NFS_VFS_H

#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "nfs/server.h"

/* One call: who, on what export options, through which request. */
struct uiw__vfs {
    struct uiw__nfsd *s;
    struct svc_req *rq;
    int write;                       /* the call changes something */
    const struct uiw__nfs_xopts *xo; /* the caller's options on the export (NULL: none) */
    struct uiw__nfs_cred cred;
    int entered; /* this thread acts as the caller */
};

/* The server's part of the layer: created with the server, ended with it. */
struct uiw__vfs_state;
struct uiw__vfs_state *uiw__vfs_state_create(void);
void uiw__vfs_state_destroy(struct uiw__vfs_state *st);

void uiw__vfs_init(struct uiw__vfs *v, struct uiw__nfsd *s, struct svc_req *rq, int write);
/* Act as the caller on this thread (0 or -errno), and stop (any number of times). */
int uiw__vfs_enter(struct uiw__vfs *v);
void uiw__vfs_leave(struct uiw__vfs *v);

/* A handle's file for the caller: the export's access first (which sets v->xo), then a
 * new O_PATH descriptor *fd (the caller closes it). `dir`: it must be a directory
 * (NFS3ERR_NOTDIR). sb (NULL: not wanted): its attributes at the resolve (their device,
 * inode and type stay; a change's attributes are taken again under uiw__vfs_begin). */
nfsstat3 uiw__vfs_resolve(struct uiw__vfs *v, const nfs_fh3 *h, int dir, int *fd,
                          struct uiw__nfs_export **ex, struct stat *sb);
/* The attributes of a handle's file for the caller, with no descriptor (GETATTR). */
nfsstat3 uiw__vfs_stat(struct uiw__vfs *v, const nfs_fh3 *h, struct stat *st,
                       struct uiw__nfs_export **ex);

/* ACCESS (NFSv3's and NFSv4's bits, which are the same): which of `want` the caller has
 * on the file behind fd (a directory when `dir`), as the caller, a read-only export
 * taking away the changes. 0, or -EPERM (the caller's identity could not be taken). */
int uiw__vfs_access(struct uiw__vfs *v, int fd, int dir, uint32_t want, uint32_t *got);
/* uiw__vfs_access of the file fd whose attributes sb the caller has: reading, looking up
 * and executing (nothing changed) as the file's owner or as root answered from sb, as the
 * kernel would answer them; anything else asked of the kernel as uiw__vfs_access does. */
int uiw__vfs_access_known(struct uiw__vfs *v, int fd, const struct stat *sb, uint32_t want,
                          uint32_t *got);

/* May the caller `c` read (mode R_OK) or write (W_OK) a regular file with the attributes
 * sb, where that needs no more than them: as the file's owner (its mode's owner bits
 * decide, whatever ACL it has; writing is the owner's anyway) or as root on a server that
 * has root's override. 1 and *st; 0 when only the kernel can tell (as the caller). */
int uiw__vfs_may_quick(const struct uiw__nfsd *s, const struct uiw__nfs_cred *c,
                       const struct stat *sb, int mode, nfsstat3 *st);

/* A descriptor of its own of the regular file behind fd (flags O_RDONLY, O_WRONLY or
 * O_RDWR: the caller's permission for each checked as uiw__vfs_get checks it), opened as
 * the server, outside the cache (NFSv4's lock descriptors). A descriptor, or -1 and *st. */
int uiw__vfs_open(struct uiw__vfs *v, int fd, int flags, nfsstat3 *st);

/* A descriptor of the regular file behind fd to read (flags O_RDONLY) or write (O_WRONLY),
 * for the caller (its permission checked as the caller on every call, with the owner's
 * override for writing), from the open-file cache: the same descriptor, opened as the
 * server, serves every call of the file while it is used, and is closed after a while
 * unused, when the file is removed through the server (uiw__vfs_forget), when the exports
 * are read again (uiw__vfs_files_drop), or the least recently used first while the cache
 * holds as many descriptors as uiw__vfs_limit allows. A descriptor, and *f to give back
 * with uiw__vfs_put (NULL: the call's own, closed there); or -1 and *st. */
struct uiw__vfs_file;
int uiw__vfs_get(struct uiw__vfs *v, int fd, int flags, nfsstat3 *st, struct uiw__vfs_file **f);
/* uiw__vfs_get of fd whose attributes sb the caller took (uiw__vfs_resolve's). */
int uiw__vfs_get_known(struct uiw__vfs *v, int fd, const struct stat *sb, int flags, nfsstat3 *st,
                       struct uiw__vfs_file **f);
/* uiw__vfs_get for a file whose attributes the caller has already (sb, a regular file:
 * uiw__vfs_stat's), when the cache holds a descriptor of it for that access: the caller's
 * permission checked as uiw__vfs_get checks it, no descriptor of the call's own needed.
 * The descriptor and *f; -1 with *st the refusal; -1 with *st NFS3_OK when the cache has
 * none (uiw__vfs_resolve and uiw__vfs_get then). */
int uiw__vfs_get_cached(struct uiw__vfs *v, const struct stat *sb, int flags, nfsstat3 *st,
                        struct uiw__vfs_file **f);
void uiw__vfs_put(struct uiw__vfs *v, struct uiw__vfs_file *f, int fd);
/* The cache's limit: a quarter of RLIMIT_NOFILE now (the server calls it again once it
 * has raised its limit), so that connections and handles keep the rest. */
void uiw__vfs_limit(struct uiw__vfs_state *st);
/* Close the files unused for a while, at `now` (uiw__nfsd_now_ns): called about once a
 * second by a server thread, so that idle descriptors go without another call. */
void uiw__vfs_files_idle(struct uiw__nfsd *s, int64_t now);
/* Close every cached file (those in use at their last put): the exports changed. */
void uiw__vfs_files_drop(struct uiw__nfsd *s);
/* The cache's hits and the opens it made since the start, its descriptors now and at
 * most, and the descriptors any call opened through a handle (uiw__vfs_resolve) since the
 * start (tests, --stats). */
struct uiw__vfs_file_counts {
    unsigned long hits, opens, resolves;
    unsigned fds, max_fds;
};
void uiw__vfs_file_counts(struct uiw__nfsd *s, struct uiw__vfs_file_counts *n);

/* What a SETATTR (or a create's attributes) asks for. */
enum {
    UIW__VFS_MODE = 1,
    UIW__VFS_UID = 2,
    UIW__VFS_GID = 4,
    UIW__VFS_SIZE = 8,
    UIW__VFS_ATIME = 16, /* tv_nsec UTIME_NOW: the server's time */
    UIW__VFS_MTIME = 32,
};
struct uiw__vfs_sattr {
    unsigned set;
    mode_t mode;
    uid_t uid;
    gid_t gid;
    uint64_t size;
    struct timespec atime, mtime;
};

/* Apply a to the file behind fd, as the caller (entered by the caller of this). */
nfsstat3 uiw__vfs_setattr(struct uiw__vfs *v, int fd, const struct uiw__vfs_sattr *a);

/* Create the regular file `name` in dfd, as the caller (entered by the caller of this):
 * how UIW__VFS_UNCHECKED (a regular file there is kept, only a's size applied to it),
 * UIW__VFS_GUARDED (NFS3ERR_EXIST when there) or UIW__VFS_EXCLUSIVE (verf kept in the
 * file's atime and mtime: a file there with that verifier is this create's, made before
 * and answered NFS3_OK; a not applied). *made: whether the file was made now. */
enum { UIW__VFS_UNCHECKED = 0, UIW__VFS_GUARDED = 1, UIW__VFS_EXCLUSIVE = 2 };
nfsstat3 uiw__vfs_create(struct uiw__vfs *v, int dfd, const char *name, int how,
                         const struct uiw__vfs_sattr *a, const char verf[8], int *made);

/* A change to the object behind fd, on a `sync` export, reaches stable storage now. */
void uiw__vfs_durable(struct uiw__vfs *v, int fd);

/* A change of one or two objects (RENAME's directories: fd1, else -1): from begin to end
 * no other call changes them, so that the attributes taken between are the call's own.
 * pre[i] / have_pre[i]: their attributes at begin. */
struct uiw__vfs_change {
    struct uiw__vfs_state *vs;
    unsigned stripe[2], n;
    struct stat pre[2];
    int have_pre[2];
};
void uiw__vfs_begin(struct uiw__vfs *v, struct uiw__vfs_change *ch, int fd0, int fd1);
/* uiw__vfs_begin of one object whose attributes were just taken (sb: which lock is its). */
void uiw__vfs_begin_known(struct uiw__vfs *v, struct uiw__vfs_change *ch, int fd,
                          const struct stat *sb);
void uiw__vfs_end(struct uiw__vfs_change *ch);

/* The write verifier now (RFC 1813 section 3.3.7). */
void uiw__vfs_verf(struct uiw__nfsd *s, char verf[NFS3_WRITEVERFSIZE]);
/* Write count bytes at off through dfd (from uiw__vfs_get), the file being st, for
 * a WRITE of that `stable` (UNSTABLE: COMMIT will see its errors): NFS3_OK and all of it
 * written, or the error (and the verifier changed if part of it was written). */
nfsstat3 uiw__vfs_write(struct uiw__vfs *v, int dfd, const struct stat *st, uint64_t off,
                        const char *data, uint32_t count, int stable);
/* Make a WRITE's data stable as `stable` asks (FILE_SYNC, DATA_SYNC; UNSTABLE: nothing). */
nfsstat3 uiw__vfs_sync(struct uiw__vfs *v, int dfd, int stable);
/* COMMIT of the file behind fd, whose attributes the caller took in sb (the caller may
 * write it, or owns it). */
nfsstat3 uiw__vfs_commit(struct uiw__vfs *v, int fd, const struct stat *sb);
/* The file (dev, ino) was removed: nothing of it waits for a COMMIT, and the open-file
 * cache lets it go. */
void uiw__vfs_forget(struct uiw__nfsd *s, dev_t dev, ino_t ino);

/* A directory's cookie verifier (READDIR, NFSv3's and NFSv4's): its generation tag, so
 * that a cookie of another directory (or of one removed and made again) is refused. */
void uiw__vfs_dir_verf(int dfd, char v[8]);
/* Whether a READDIR's cookie goes with the verifier it came with (mine: the directory's
 * now): any for cookie 0, and a zero verifier with any cookie, as RFC 1813 leaves room
 * for. */
int uiw__vfs_verf_ok(const char got[8], const char mine[8], uint64_t cookie);

#endif
