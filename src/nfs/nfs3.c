/*
 * NFS version 3 procedures (RFC 1813 section 3).
 *
 * Each procedure resolves its handles as the server (fh.c), then acts as the caller
 * (cred.c) through *at() system calls relative to those descriptors: no path the client
 * sends is ever walked beyond one component, no symbolic link is followed (O_NOFOLLOW,
 * AT_SYMLINK_NOFOLLOW, or the descriptor itself through /proc/self/fd), and `..` of an
 * export's root is the root itself. Names follow RFC 1813 section 3.2: empty ones and
 * ones holding '/' get NFS3ERR_ACCES, ones longer than NAME_MAX NFS3ERR_NAMETOOLONG.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "nfs/nfs4state.h"
#include "nfs/server.h"
#include "nfs/vfs.h"
#include "nfs/xdr_data.h"
#include "rpc/xdr_pad.h"

struct call {
    struct uiw__vfs v; /* who, on what options: the file-system layer's call */
    SVCXPRT *xprt;
    struct uiw__vfs_change ch; /* the change under way (ch.n: its locks) */
    char fh[UIW__NFS_FH_MAX];
    char path[PATH_MAX + 1];
    struct chunk *arena; /* reply memory, freed after the reply */
};

struct chunk {
    struct chunk *next;
    size_t used, cap;
    max_align_t data[];
};

/* Memory for the reply, from chunks freed together after it is sent. */
static void *arena_alloc(struct call *c, size_t n)
{
    n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
    struct chunk *k = c->arena;
    if (!k || k->cap - k->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        k = malloc(sizeof(*k) + cap);
        if (!k)
            return NULL;
        k->next = c->arena;
        k->used = 0;
        k->cap = cap;
        c->arena = k;
    }
    void *p = (char *)k->data + k->used;
    k->used += n;
    return p;
}

static void arena_free(struct call *c)
{
    while (c->arena) {
        struct chunk *k = c->arena;
        c->arena = k->next;
        free(k);
    }
}

static void closefd(int fd)
{
    if (fd >= 0)
        close(fd);
}

/* RFC 1813 section 3.2 on names. */
static nfsstat3 check_name(const char *n)
{
    if (!n || !*n)
        return NFS3ERR_ACCES;
    if (strlen(n) > NAME_MAX)
        return NFS3ERR_NAMETOOLONG;
    if (strchr(n, '/'))
        return NFS3ERR_ACCES;
    return NFS3_OK;
}

static int is_dot(const char *n)
{
    return strcmp(n, ".") == 0 || strcmp(n, "..") == 0;
}

/* sattr3 as the file-system layer takes it. */
static void sattr_of(const sattr3 *a, struct uiw__vfs_sattr *out)
{
    struct uiw__vfs_sattr v = {0};
    if (a->mode.set_it) {
        v.set |= UIW__VFS_MODE;
        v.mode = a->mode.set_mode3_u.mode;
    }
    if (a->uid.set_it) {
        v.set |= UIW__VFS_UID;
        v.uid = a->uid.set_uid3_u.uid;
    }
    if (a->gid.set_it) {
        v.set |= UIW__VFS_GID;
        v.gid = a->gid.set_gid3_u.gid;
    }
    if (a->size.set_it) {
        v.set |= UIW__VFS_SIZE;
        v.size = a->size.set_size3_u.size;
    }
    if (a->atime.set_it != DONT_CHANGE) {
        v.set |= UIW__VFS_ATIME;
        v.atime.tv_nsec = UTIME_NOW;
        if (a->atime.set_it == SET_TO_CLIENT_TIME) {
            v.atime.tv_sec = a->atime.set_atime_u.atime.seconds;
            v.atime.tv_nsec = a->atime.set_atime_u.atime.nseconds;
        }
    }
    if (a->mtime.set_it != DONT_CHANGE) {
        v.set |= UIW__VFS_MTIME;
        v.mtime.tv_nsec = UTIME_NOW;
        if (a->mtime.set_it == SET_TO_CLIENT_TIME) {
            v.mtime.tv_sec = a->mtime.set_mtime_u.mtime.seconds;
            v.mtime.tv_nsec = a->mtime.set_mtime_u.mtime.nseconds;
        }
    }
    *out = v;
}

static nfsstat3 setattr3(struct call *c, int fd, const sattr3 *a)
{
    struct uiw__vfs_sattr v;
    sattr_of(a, &v);
    return uiw__vfs_setattr(&c->v, fd, &v);
}

/* A change of the objects behind fd0 and fd1 (-1: none), whose wcc_data's pre-operation
 * attributes go to b0 and b1: no other call changes them until change_end. */
static void change_begin(struct call *c, int fd0, int fd1, pre_op_attr *b0, pre_op_attr *b1)
{
    uiw__vfs_begin(&c->v, &c->ch, fd0, fd1);
    pre_op_attr *b[2] = {b0, b1};
    for (int i = 0; i < 2; i++)
        if (b[i]) {
            b[i]->attributes_follow = 0;
            if (c->ch.have_pre[i])
                uiw__nfsd_preop_of(&c->ch.pre[i], b[i]);
        }
}

/* change_begin of the one descriptor fd, whose attributes sb (uiw__vfs_resolve's) say
 * which of the changes' locks is its own. */
static void change_begin_known(struct call *c, int fd, const struct stat *sb, pre_op_attr *b)
{
    uiw__vfs_begin_known(&c->v, &c->ch, fd, sb);
    b->attributes_follow = 0;
    if (c->ch.have_pre[0])
        uiw__nfsd_preop_of(&c->ch.pre[0], b);
}

/* The file st was removed (its last name, or one of them). */
static void removed(struct call *c, const struct stat *st)
{
    uiw__nfs_fh_removed(c->v.s, st->st_dev, st->st_ino);
    uiw__vfs_forget(c->v.s, st->st_dev, st->st_ino);
}

/* Whether the file fd is delegated to an NFSv4 client: its recall sent, the change
 * waits (NFS3ERR_JUKEBOX, as knfsd answers). */
static int delegated(struct call *c, const struct stat *sb)
{
    return c->v.s->nfs4 && uiw__nfs4_deleg_break(c->v.s->nfs4, sb->st_dev, sb->st_ino);
}

/* After the post-operation attributes. */
static void change_end(struct call *c)
{
    uiw__vfs_end(&c->ch);
}

/* The handle of fd, `name` in dfd (NULL: dfd itself, or its parent), for the caller:
 * -EXDEV for a mount point its options do not cross (logged). */
static int issue(struct call *c, struct uiw__nfs_export *ex, int dfd, const char *name, int fd,
                 nfs_fh3 *out, char buf[UIW__NFS_FH_MAX])
{
    int rc = uiw__nfs_fh_issue(c->v.s, ex, dfd, name, fd, 0, out, buf);
    if (rc == -EXDEV && uiw__nfsd_crosses(c->v.s, c->v.rq, c->v.xo, fd))
        rc = uiw__nfs_fh_issue(c->v.s, ex, dfd, name, fd, 1, out, buf);
    if (rc == -EXDEV)
        uiw__nfsd_refused(c->v.s, UIW__NFSD_REFUSED_ACCESS,
                          "a mount point below %s (%s) not crossed: crossmnt or nohide would",
                          ex->path, name ? name : "..");
    return rc;
}

/* Resolve the handle of a procedure whose reply starts with the object's post_op_attr in
 * both arms (resok and resfail share that place): fill it, or clear it on failure. */
static nfsstat3 resolve_attr(struct call *c, const nfs_fh3 *h, int *fd, struct uiw__nfs_export **ex,
                             post_op_attr *attr, struct stat *sb)
{
    nfsstat3 st = uiw__vfs_resolve(&c->v, h, 0, fd, ex, sb);
    attr->attributes_follow = st == NFS3_OK; /* these procedures change nothing */
    if (st == NFS3_OK)
        uiw__nfsd_fattr(sb, *ex, &attr->post_op_attr_u.attributes);
    return st;
}

/* ---- procedures ---- */

static void p_null(struct call *c, void *a, void *r)
{
    (void)c;
    (void)a;
    (void)r;
}

static void p_getattr(struct call *c, GETATTR3args *a, GETATTR3res *r)
{
    struct stat st;
    struct uiw__nfs_export *ex;
    r->status = uiw__vfs_stat(&c->v, &a->object, &st, &ex);
    if (r->status == NFS3_OK)
        uiw__nfsd_fattr(&st, ex, &r->GETATTR3res_u.resok.obj_attributes);
}

static void p_setattr(struct call *c, SETATTR3args *a, SETATTR3res *r)
{
    int fd;
    struct uiw__nfs_export *ex;
    wcc_data *w = &r->SETATTR3res_u.resok.obj_wcc;
    struct stat sb;
    r->status = uiw__vfs_resolve(&c->v, &a->object, 0, &fd, &ex, &sb);
    if (r->status != NFS3_OK)
        return;
    change_begin_known(c, fd, &sb, &w->before);
    if (delegated(c, &sb)) {
        r->status = NFS3ERR_JUKEBOX;
        goto out;
    }
    if (a->guard.check) { /* against the ctime no other call changes now */
        const nfstime3 *g = &a->guard.sattrguard3_u.obj_ctime;
        const wcc_attr *b = &w->before.pre_op_attr_u.attributes;
        if (!w->before.attributes_follow || b->ctime.seconds != g->seconds ||
            b->ctime.nseconds != g->nseconds) {
            r->status = NFS3ERR_NOT_SYNC;
            goto out;
        }
    }
    if (uiw__vfs_enter(&c->v) != 0) {
        r->status = NFS3ERR_PERM;
        goto out;
    }
    r->status = setattr3(c, fd, &a->new_attributes);
    uiw__vfs_leave(&c->v);
    if (r->status == NFS3_OK)
        uiw__vfs_durable(&c->v, fd);
out:
    uiw__nfsd_postop(fd, ex, &w->after);
    change_end(c);
    close(fd);
}

static void p_lookup(struct call *c, LOOKUP3args *a, LOOKUP3res *r)
{
    int dfd, fd = -1;
    struct uiw__nfs_export *ex;
    r->status = uiw__vfs_resolve(&c->v, &a->what.dir, 1, &dfd, &ex, NULL);
    if (r->status != NFS3_OK) {
        r->LOOKUP3res_u.resfail.dir_attributes.attributes_follow = 0;
        return;
    }
    const char *name = a->what.name;
    r->status = check_name(name);
    if (r->status != NFS3_OK)
        goto fail;
    if (strcmp(name, "..") == 0) {
        struct stat st;
        if (fstat(dfd, &st) == 0 && st.st_dev == ex->dev && st.st_ino == ex->ino)
            name = "."; /* nothing above an export's root */
    }
    if (uiw__vfs_enter(&c->v) != 0) {
        r->status = NFS3ERR_PERM;
        goto fail;
    }
    fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    int err = errno;
    uiw__vfs_leave(&c->v);
    if (fd < 0) {
        r->status = uiw__nfsd_errno(err);
        goto fail;
    }
    LOOKUP3resok *ok = &r->LOOKUP3res_u.resok;
    int rc = issue(c, ex, dfd, is_dot(name) ? NULL : name, fd, &ok->object, c->fh);
    if (rc != 0) {
        r->status = rc == -EXDEV ? NFS3ERR_ACCES : uiw__nfsd_errno(-rc);
        goto fail;
    }
    uiw__nfsd_postop(fd, ex, &ok->obj_attributes);
    uiw__nfsd_postop(dfd, ex, &ok->dir_attributes);
    close(fd);
    close(dfd);
    return;
fail:
    closefd(fd);
    uiw__nfsd_postop(dfd, ex, &r->LOOKUP3res_u.resfail.dir_attributes);
    close(dfd);
}

static void p_access(struct call *c, ACCESS3args *a, ACCESS3res *r)
{
    int fd;
    struct uiw__nfs_export *ex;
    struct stat sb;
    ACCESS3resok *ok = &r->ACCESS3res_u.resok;
    r->status = resolve_attr(c, &a->object, &fd, &ex, &ok->obj_attributes, &sb);
    if (r->status != NFS3_OK)
        return;
    uint32_t got;
    if (uiw__vfs_access_known(&c->v, fd, &sb, a->access, &got) != 0) {
        r->status = NFS3ERR_PERM;
        close(fd);
        return;
    }
    ok->access = got;
    close(fd);
}

static void p_readlink(struct call *c, READLINK3args *a, READLINK3res *r)
{
    int fd;
    struct uiw__nfs_export *ex;
    READLINK3resok *ok = &r->READLINK3res_u.resok; /* its attributes: resfail's place too */
    r->status = uiw__vfs_resolve(&c->v, &a->symlink, 0, &fd, &ex, NULL);
    if (r->status != NFS3_OK) {
        ok->symlink_attributes.attributes_follow = 0;
        return;
    }
    ssize_t n = readlinkat(fd, "", c->path, sizeof(c->path) - 1);
    if (n < 0) {
        r->status = errno == ENOENT ? NFS3ERR_INVAL : uiw__nfsd_errno(errno);
    } else {
        c->path[n] = 0;
        ok->data = c->path;
    }
    uiw__nfsd_postop(fd, ex, &ok->symlink_attributes); /* after: the atime it read at */
    close(fd);
}

/* The attributes of the file a READ or WRITE names and its data descriptor for that
 * access, when the caches hold both (the handle's record checked lately, a descriptor in
 * the open-file cache): no descriptor of the call's own to open and close, one fstat. The
 * descriptor (*of, *ex and *sb set); -1 with *st a refusal; -1 with *st NFS3_OK to take the
 * long way (uiw__vfs_resolve, uiw__vfs_get), which also gives the exact error of a handle
 * that is not a regular file's. */
static int cached_file(struct call *c, const nfs_fh3 *h, int flags, struct stat *sb,
                       struct uiw__nfs_export **ex, struct uiw__vfs_file **of, nfsstat3 *st)
{
    *st = NFS3_OK;
    if (uiw__vfs_stat(&c->v, h, sb, ex) != NFS3_OK || !S_ISREG(sb->st_mode))
        return -1;
    return uiw__vfs_get_cached(&c->v, sb, flags, st, of);
}

/* READ's data, count bytes at off of dfd into buf: the bytes read, or -errno. */
static ssize_t read_at(int dfd, char *buf, uint32_t count, uint64_t off)
{
    ssize_t n = 0;
    while ((uint32_t)n < count) {
        ssize_t k = pread(dfd, buf + n, count - (size_t)n, (off_t)(off + (uint64_t)n));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        if (k == 0)
            break;
        n += k;
    }
    return n;
}

static void p_read(struct call *c, READ3args *a, READ3res *r)
{
    int fd, dfd = -1;
    struct uiw__nfs_export *ex;
    struct uiw__vfs_file *of = NULL;
    uint32_t count = a->count;
    if (count > uiw__nfsd_max_io(c->v.s))
        count = uiw__nfsd_max_io(c->v.s);
    /* at or past the largest offset a file may have: nothing there, the end */
    if (a->offset >= (uint64_t)INT64_MAX)
        count = 0;
    else if (count > (uint64_t)INT64_MAX - a->offset)
        count = (uint32_t)((uint64_t)INT64_MAX - a->offset);
    READ3resok *ok = &r->READ3res_u.resok;
    struct stat sb;
    dfd = cached_file(c, &a->file, O_RDONLY, &sb, &ex, &of, &r->status);
    if (dfd < 0 && r->status != NFS3_OK) {
        uiw__nfsd_fattr(&sb, ex, &r->READ3res_u.resfail.file_attributes.post_op_attr_u.attributes);
        r->READ3res_u.resfail.file_attributes.attributes_follow = 1;
        return;
    }
    if (dfd >= 0) {
        char *buf = uiw__nfs_xprt_getbuf(c->xprt, count ? count : 1);
        ssize_t n = buf ? read_at(dfd, buf, count, a->offset) : -ENOMEM;
        uiw__nfsd_postop(dfd, ex, &ok->file_attributes); /* after: the atime it read at */
        uiw__vfs_put(&c->v, of, dfd);
        if (n < 0) {
            r->status = buf ? uiw__nfsd_errno((int)-n) : NFS3ERR_SERVERFAULT;
            return; /* resfail's attributes: resok's, in the same place */
        }
        ok->count = (uint32_t)n;
        ok->data.data_val = buf;
        ok->data.data_len = (u_int)n;
        const post_op_attr *pa = &ok->file_attributes;
        ok->eof = (uint32_t)n < count || a->offset >= (uint64_t)INT64_MAX ||
                  (pa->attributes_follow &&
                   a->offset + (uint64_t)n >= pa->post_op_attr_u.attributes.size);
        return;
    }
    r->status = uiw__vfs_resolve(&c->v, &a->file, 0, &fd, &ex, &sb);
    if (r->status != NFS3_OK) {
        r->READ3res_u.resfail.file_attributes.attributes_follow = 0;
        return;
    }
    /* Over RDMA: registered memory, from which the reply's RDMA Write goes out; over TCP
     * a pooled buffer the reply is sent from. */
    char *buf = uiw__nfs_xprt_getbuf(c->xprt, count ? count : 1);
    if (!buf) {
        r->status = NFS3ERR_SERVERFAULT;
        goto out;
    }
    dfd = uiw__vfs_get_known(&c->v, fd, &sb, O_RDONLY, &r->status, &of);
    if (dfd < 0)
        goto out;
    ssize_t n = read_at(dfd, buf, count, a->offset);
    if (n < 0) {
        r->status = uiw__nfsd_errno((int)-n);
        goto out;
    }
    ok->count = (uint32_t)n;
    ok->data.data_val = buf;
    ok->data.data_len = (u_int)n;
    uiw__nfsd_postop(fd, ex, &ok->file_attributes);
    /* the end: a short read, or the size now (the attributes just taken) */
    const post_op_attr *pa = &ok->file_attributes;
    ok->eof =
        (uint32_t)n < count || a->offset >= (uint64_t)INT64_MAX ||
        (pa->attributes_follow && a->offset + (uint64_t)n >= pa->post_op_attr_u.attributes.size);
    uiw__vfs_put(&c->v, of, dfd);
    close(fd);
    return;
out:
    uiw__nfsd_postop(fd, ex, &r->READ3res_u.resfail.file_attributes);
    if (dfd >= 0)
        uiw__vfs_put(&c->v, of, dfd);
    close(fd);
}

static void p_write(struct call *c, WRITE3args *a, WRITE3res *r)
{
    int fd, dfd = -1;
    struct uiw__nfs_export *ex;
    struct uiw__vfs_file *of = NULL;
    wcc_data *w = &r->WRITE3res_u.resok.file_wcc;
    memset(w, 0, sizeof(*w));
    int bad = a->count > a->data.data_len || a->stable > FILE_SYNC ||
              a->offset > (uint64_t)INT64_MAX - a->count;
    struct stat sb;
    dfd = bad ? -1 : cached_file(c, &a->file, O_WRONLY, &sb, &ex, &of, &r->status);
    if (dfd < 0 && r->status != NFS3_OK) {
        w->after.attributes_follow = 1;
        uiw__nfsd_fattr(&sb, ex, &w->after.post_op_attr_u.attributes);
        return;
    }
    if (dfd >= 0 && c->v.s->nfs4 && uiw__nfs4_deleg_break(c->v.s->nfs4, sb.st_dev, sb.st_ino)) {
        r->status = NFS3ERR_JUKEBOX; /* as delegated() answers */
        uiw__nfsd_postop(dfd, ex, &w->after);
        uiw__vfs_put(&c->v, of, dfd);
        return;
    }
    if (dfd >= 0) {
        uiw__vfs_begin_known(&c->v, &c->ch, dfd, &sb);
        w->before.attributes_follow = 0;
        if (c->ch.have_pre[0])
            uiw__nfsd_preop_of(&c->ch.pre[0], &w->before);
        r->status = uiw__vfs_write(&c->v, dfd, &c->ch.pre[0], a->offset, a->data.data_val, a->count,
                                   (int)a->stable);
        uiw__nfsd_postop(dfd, ex, &w->after);
        change_end(c);
        goto written;
    }
    r->status = uiw__vfs_resolve(&c->v, &a->file, 0, &fd, &ex, &sb);
    if (r->status != NFS3_OK)
        return;
    if (a->count > a->data.data_len || a->stable > FILE_SYNC) {
        r->status = NFS3ERR_INVAL;
        goto out;
    }
    if (a->offset > (uint64_t)INT64_MAX - a->count) {
        r->status = NFS3ERR_FBIG; /* past what any file may hold */
        goto out;
    }
    if (delegated(c, &sb)) {
        r->status = NFS3ERR_JUKEBOX;
        goto out;
    }
    dfd = uiw__vfs_get_known(&c->v, fd, &sb, O_WRONLY, &r->status, &of);
    if (dfd < 0)
        goto out;
    change_begin_known(c, fd, &sb, &w->before);
    r->status = uiw__vfs_write(&c->v, dfd, &c->ch.pre[0], a->offset, a->data.data_val, a->count,
                               (int)a->stable);
    uiw__nfsd_postop(fd, ex, &w->after);
    change_end(c);
    close(fd);
written:
    if (r->status == NFS3_OK)
        r->status = uiw__vfs_sync(&c->v, dfd, (int)a->stable);
    WRITE3resok *ok = &r->WRITE3res_u.resok;
    ok->committed = a->stable;
    ok->count = a->count;
    uiw__vfs_verf(c->v.s, ok->verf);
    uiw__vfs_put(&c->v, of, dfd);
    return;
out:
    uiw__nfsd_postop(fd, ex, &w->after);
    close(fd);
}

/* The directory and name of a CREATE, MKDIR, SYMLINK or MKNOD, checked. */
static nfsstat3 where(struct call *c, const diropargs3 *d, int *dfd, struct uiw__nfs_export **ex,
                      wcc_data *w)
{
    memset(w, 0, sizeof(*w));
    struct stat sb;
    nfsstat3 st = uiw__vfs_resolve(&c->v, &d->dir, 1, dfd, ex, &sb);
    if (st != NFS3_OK)
        return st;
    change_begin_known(c, *dfd, &sb, &w->before);
    st = check_name(d->name);
    if (st == NFS3_OK && is_dot(d->name))
        st = NFS3ERR_EXIST;
    return st;
}

/* After a CREATE, MKDIR, SYMLINK or MKNOD made `name` in dfd: its handle and attributes. */
static void made(struct call *c, struct uiw__nfs_export *ex, int dfd, const char *name,
                 post_op_fh3 *obj, post_op_attr *attr)
{
    obj->handle_follows = 0;
    attr->attributes_follow = 0;
    int fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    if (issue(c, ex, dfd, name, fd, &obj->post_op_fh3_u.handle, c->fh) == 0)
        obj->handle_follows = 1;
    /* one stat for the attributes and for whether there is a file to make durable (a
     * symbolic link's directory is what holds it) */
    struct stat sb;
    int known = fstatat(fd, "", &sb, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == 0;
    if (known && !S_ISLNK(sb.st_mode))
        uiw__vfs_durable(&c->v, fd);
    uiw__vfs_durable(&c->v, dfd);
    if (known) {
        uiw__nfsd_fattr(&sb, ex, &attr->post_op_attr_u.attributes);
        attr->attributes_follow = 1;
    }
    close(fd);
}

/* CREATE's making of the file `name` in dfd, as the caller (vfs.c, shared with NFSv4's
 * OPEN). */
static nfsstat3 make_file(struct call *c, int dfd, const char *name, const void *how)
{
    const CREATE3args *a = how;
    if (a->how.mode > EXCLUSIVE)
        return NFS3ERR_INVAL;
    struct uiw__vfs_sattr sa = {0};
    if (a->how.mode != EXCLUSIVE)
        sattr_of(&a->how.createhow3_u.obj_attributes, &sa);
    int made;
    return uiw__vfs_create(&c->v, dfd, name, (int)a->how.mode, &sa, a->how.createhow3_u.verf,
                           &made);
}

/* MKDIR's, as the caller. */
static nfsstat3 make_dir(struct call *c, int dfd, const char *name, const void *how)
{
    const sattr3 *sa = &((const MKDIR3args *)how)->attributes;
    mode_t mode = sa->mode.set_it ? sa->mode.set_mode3_u.mode & 07777 : 0755;
    if (mkdirat(dfd, name, mode) != 0)
        return uiw__nfsd_errno(errno);
    nfsstat3 st = NFS3_OK;
    int fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        st = setattr3(c, fd, sa);
        close(fd);
    }
    return st;
}

/* SYMLINK's, as the caller: the link is stored as given (the server never follows it). */
static nfsstat3 make_symlink(struct call *c, int dfd, const char *name, const void *how)
{
    (void)c;
    const symlinkdata3 *d = &((const SYMLINK3args *)how)->symlink;
    const char *target = d->symlink_data;
    if (!target || !*target)
        return NFS3ERR_INVAL;
    if (strlen(target) > PATH_MAX - 1)
        return NFS3ERR_NAMETOOLONG;
    if (symlinkat(target, dfd, name) != 0)
        return uiw__nfsd_errno(errno);
    const sattr3 *sa = &d->symlink_attributes;
    if (sa->uid.set_it || sa->gid.set_it) {
        uid_t u = sa->uid.set_it ? sa->uid.set_uid3_u.uid : (uid_t)-1;
        gid_t g = sa->gid.set_it ? sa->gid.set_gid3_u.gid : (gid_t)-1;
        if (fchownat(dfd, name, u, g, AT_SYMLINK_NOFOLLOW) != 0) {
            nfsstat3 st = uiw__nfsd_errno(errno);
            unlinkat(dfd, name, 0); /* made but not as asked: undone */
            return st;
        }
    }
    return NFS3_OK;
}

/* MKNOD's, as the caller. */
static nfsstat3 make_node(struct call *c, int dfd, const char *name, const void *how)
{
    const mknoddata3 *what = &((const MKNOD3args *)how)->what;
    const sattr3 *sa;
    mode_t type;
    dev_t dev = 0;
    switch (what->type) {
    case NF3CHR:
    case NF3BLK:
        sa = &what->mknoddata3_u.device.dev_attributes;
        type = what->type == NF3CHR ? S_IFCHR : S_IFBLK;
        dev = makedev(what->mknoddata3_u.device.spec.specdata1,
                      what->mknoddata3_u.device.spec.specdata2);
        break;
    case NF3SOCK:
    case NF3FIFO:
        sa = &what->mknoddata3_u.pipe_attributes;
        type = what->type == NF3SOCK ? S_IFSOCK : S_IFIFO;
        break;
    default:
        return NFS3ERR_BADTYPE;
    }
    mode_t mode = sa->mode.set_it ? sa->mode.set_mode3_u.mode & 07777 : 0644;
    if (mknodat(dfd, name, type | mode, dev) != 0)
        return uiw__nfsd_errno(errno);
    nfsstat3 st = NFS3_OK;
    int fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        st = setattr3(c, fd, sa);
        close(fd);
    }
    return st;
}

/* CREATE, MKDIR, SYMLINK and MKNOD: the directory and name checked, `make` run as the
 * caller, then the new object's handle and attributes, and the directory's wcc_data. */
static nfsstat3 create_in(struct call *c, const diropargs3 *at,
                          nfsstat3 (*make)(struct call *, int, const char *, const void *),
                          const void *how, wcc_data *w, post_op_fh3 *obj, post_op_attr *attr)
{
    int dfd = -1;
    struct uiw__nfs_export *ex = NULL;
    nfsstat3 st = where(c, at, &dfd, &ex, w);
    if (st == NFS3_OK && uiw__vfs_enter(&c->v) != 0)
        st = NFS3ERR_PERM;
    if (st == NFS3_OK) {
        st = make(c, dfd, at->name, how);
        uiw__vfs_leave(&c->v);
        if (st == NFS3_OK)
            made(c, ex, dfd, at->name, obj, attr);
    }
    uiw__nfsd_postop(dfd, ex, &w->after);
    change_end(c);
    closefd(dfd);
    return st;
}

static void p_create(struct call *c, CREATE3args *a, CREATE3res *r)
{
    CREATE3resok *ok = &r->CREATE3res_u.resok;
    r->status = create_in(c, &a->where, make_file, a, &ok->dir_wcc, &ok->obj, &ok->obj_attributes);
}

static void p_mkdir(struct call *c, MKDIR3args *a, MKDIR3res *r)
{
    MKDIR3resok *ok = &r->MKDIR3res_u.resok;
    r->status = create_in(c, &a->where, make_dir, a, &ok->dir_wcc, &ok->obj, &ok->obj_attributes);
}

static void p_symlink(struct call *c, SYMLINK3args *a, SYMLINK3res *r)
{
    SYMLINK3resok *ok = &r->SYMLINK3res_u.resok;
    r->status =
        create_in(c, &a->where, make_symlink, a, &ok->dir_wcc, &ok->obj, &ok->obj_attributes);
}

static void p_mknod(struct call *c, MKNOD3args *a, MKNOD3res *r)
{
    MKNOD3resok *ok = &r->MKNOD3res_u.resok;
    r->status = create_in(c, &a->where, make_node, a, &ok->dir_wcc, &ok->obj, &ok->obj_attributes);
}

/* REMOVE and RMDIR. */
static nfsstat3 unlink_name(struct call *c, const diropargs3 *d, int flags, wcc_data *w)
{
    int dfd = -1;
    struct uiw__nfs_export *ex = NULL;
    memset(w, 0, sizeof(*w));
    struct stat dsb;
    nfsstat3 st = uiw__vfs_resolve(&c->v, &d->dir, 1, &dfd, &ex, &dsb);
    if (st != NFS3_OK)
        return st;
    change_begin_known(c, dfd, &dsb, &w->before);
    st = check_name(d->name);
    if (st == NFS3_OK && is_dot(d->name))
        st = strcmp(d->name, ".") == 0 ? NFS3ERR_INVAL : NFS3ERR_NOTEMPTY;
    if (st == NFS3_OK && uiw__vfs_enter(&c->v) != 0)
        st = NFS3ERR_PERM;
    if (st == NFS3_OK) {
        struct stat sb;
        int known = fstatat(dfd, d->name, &sb, AT_SYMLINK_NOFOLLOW) == 0;
        if (known && uiw__nfs4_deleg_break(c->v.s->nfs4, sb.st_dev, sb.st_ino)) {
            st = NFS3ERR_JUKEBOX;
        } else if (unlinkat(dfd, d->name, flags) != 0) {
            st = uiw__nfsd_errno(errno == EEXIST ? ENOTEMPTY : errno);
        } else {
            if (known)
                removed(c, &sb);
            uiw__vfs_durable(&c->v, dfd);
        }
        uiw__vfs_leave(&c->v);
    }
    uiw__nfsd_postop(dfd, ex, &w->after);
    change_end(c);
    close(dfd);
    return st;
}

static void p_remove(struct call *c, REMOVE3args *a, REMOVE3res *r)
{
    r->status = unlink_name(c, &a->object, 0, &r->REMOVE3res_u.resok.dir_wcc);
}

static void p_rmdir(struct call *c, RMDIR3args *a, RMDIR3res *r)
{
    r->status = unlink_name(c, &a->object, AT_REMOVEDIR, &r->RMDIR3res_u.resok.dir_wcc);
}

static void p_rename(struct call *c, RENAME3args *a, RENAME3res *r)
{
    int fdir = -1, tdir = -1;
    struct uiw__nfs_export *fex = NULL, *tex = NULL;
    wcc_data *fw = &r->RENAME3res_u.resok.fromdir_wcc, *tw = &r->RENAME3res_u.resok.todir_wcc;
    memset(fw, 0, sizeof(*fw));
    memset(tw, 0, sizeof(*tw));
    r->status = uiw__vfs_resolve(&c->v, &a->from.dir, 1, &fdir, &fex, NULL);
    if (r->status != NFS3_OK)
        return;
    r->status = uiw__vfs_resolve(&c->v, &a->to.dir, 1, &tdir, &tex, NULL);
    if (r->status != NFS3_OK)
        goto out;
    change_begin(c, fdir, tdir, &fw->before, &tw->before);
    if (fex != tex) {
        r->status = NFS3ERR_XDEV;
        goto out;
    }
    r->status = check_name(a->from.name);
    if (r->status == NFS3_OK)
        r->status = check_name(a->to.name);
    if (r->status == NFS3_OK && (is_dot(a->from.name) || is_dot(a->to.name)))
        r->status = NFS3ERR_INVAL;
    if (r->status != NFS3_OK)
        goto out;
    if (uiw__vfs_enter(&c->v) != 0) {
        r->status = NFS3ERR_PERM;
        goto out;
    }
    struct stat src, dst;
    int have_src = fstatat(fdir, a->from.name, &src, AT_SYMLINK_NOFOLLOW) == 0;
    int have_dst = fstatat(tdir, a->to.name, &dst, AT_SYMLINK_NOFOLLOW) == 0;
    if ((have_src && uiw__nfs4_deleg_break(c->v.s->nfs4, src.st_dev, src.st_ino)) ||
        (have_dst && uiw__nfs4_deleg_break(c->v.s->nfs4, dst.st_dev, dst.st_ino))) {
        r->status = NFS3ERR_JUKEBOX;
    } else if (renameat(fdir, a->from.name, tdir, a->to.name) != 0) {
        r->status = uiw__nfsd_errno(errno == EEXIST ? ENOTEMPTY : errno);
    } else {
        if (have_dst && !(have_src && src.st_ino == dst.st_ino && src.st_dev == dst.st_dev))
            removed(c, &dst);
        if (have_src)
            uiw__nfs_fh_moved(c->v.s, src.st_dev, src.st_ino, tdir, a->to.name);
        uiw__vfs_durable(&c->v, fdir);
        if (tdir != fdir)
            uiw__vfs_durable(&c->v, tdir);
    }
    uiw__vfs_leave(&c->v);
out:
    uiw__nfsd_postop(fdir, fex, &fw->after);
    if (tdir >= 0)
        uiw__nfsd_postop(tdir, tex, &tw->after);
    change_end(c);
    closefd(fdir);
    closefd(tdir);
}

static void p_link(struct call *c, LINK3args *a, LINK3res *r)
{
    int fd = -1, dfd = -1;
    struct uiw__nfs_export *ex = NULL, *dex = NULL;
    wcc_data *w = &r->LINK3res_u.resok.linkdir_wcc;
    memset(w, 0, sizeof(*w));
    r->LINK3res_u.resok.file_attributes.attributes_follow = 0;
    r->status = uiw__vfs_resolve(&c->v, &a->file, 0, &fd, &ex, NULL);
    if (r->status != NFS3_OK)
        return;
    r->status = uiw__vfs_resolve(&c->v, &a->link.dir, 1, &dfd, &dex, NULL);
    if (r->status != NFS3_OK)
        goto out;
    change_begin(c, dfd, -1, &w->before, NULL);
    if (ex != dex) {
        r->status = NFS3ERR_XDEV;
        goto out;
    }
    r->status = check_name(a->link.name);
    if (r->status == NFS3_OK && is_dot(a->link.name))
        r->status = NFS3ERR_EXIST;
    if (r->status != NFS3_OK)
        goto out;
    struct stat sb;
    if (fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        r->status = NFS3ERR_ISDIR;
        goto out;
    }
    if (uiw__vfs_enter(&c->v) != 0) {
        r->status = NFS3ERR_PERM;
        goto out;
    }
    char p[64];
    snprintf(p, sizeof(p), "/proc/self/fd/%d", fd); /* that very file, not a name */
    if (linkat(AT_FDCWD, p, dfd, a->link.name, AT_SYMLINK_FOLLOW) != 0) {
        r->status = uiw__nfsd_errno(errno);
    } else {
        uiw__vfs_durable(&c->v, fd); /* its link count */
        uiw__vfs_durable(&c->v, dfd);
    }
    uiw__vfs_leave(&c->v);
out:
    uiw__nfsd_postop(fd, ex, &r->LINK3res_u.resok.file_attributes);
    if (dfd >= 0)
        uiw__nfsd_postop(dfd, dex, &w->after);
    change_end(c);
    closefd(dfd);
    closefd(fd);
}

/* ---- READDIR and READDIRPLUS ----
 * Cookies are the file system's own directory offsets (d_off: what seekdir takes), which
 * stay valid while the directory changes; 0 is the start. The cookie verifier is the
 * directory's generation tag: a cookie of another directory (or of one that was removed
 * and made again) gets NFS3ERR_BAD_COOKIE. A zero verifier is accepted with any cookie,
 * as RFC 1813 leaves room for. */

struct plus_ent {
    entryplus3 e;
    char fh[UIW__NFS_FH_MAX];
    char name[]; /* as long as the entry's name */
};

/* XDR sizes used against the client's limits. */
#define FATTR3_XDR      84
#define POSTOP_XDR      (4 + FATTR3_XDR)
#define ENTRY3_XDR(n)   (4 + 8 + 4 + (((n) + 3) & ~3u) + 8)
#define ENTRYPLUS_EXTRA (POSTOP_XDR + 4 + 4 + UIW__NFS_FH_MAX)

static void readdir_common(struct call *c, const nfs_fh3 *h, cookie3 cookie, const cookieverf3 verf,
                           uint32_t dircount, uint32_t maxcount, int plus, nfsstat3 *status,
                           post_op_attr *dattr, cookieverf3 outverf, void **first, bool_t *eof)
{
    int dfd, lfd = -1;
    struct uiw__nfs_export *ex;
    DIR *d = NULL;
    *first = NULL;
    *eof = 0;
    dattr->attributes_follow = 0;
    /* The client's sizes, clamped to the server's own limit (as knfsd clamps them to its
     * payload size): the reply is built in memory and sent whole. */
    uint32_t max = uiw__nfsd_max_io(c->v.s);
    if (maxcount > max)
        maxcount = max;
    if (dircount > maxcount)
        dircount = maxcount;
    *status = uiw__vfs_resolve(&c->v, h, 1, &dfd, &ex, NULL);
    if (*status != NFS3_OK)
        return;
    cookieverf3 mine = {0};
    uiw__vfs_dir_verf(dfd, mine);
    if (!uiw__vfs_verf_ok(verf, mine, cookie)) {
        *status = NFS3ERR_BAD_COOKIE;
        goto out;
    }
    memcpy(outverf, mine, NFS3_COOKIEVERFSIZE);
    if (uiw__vfs_enter(&c->v) != 0) {
        *status = NFS3ERR_PERM;
        goto out;
    }
    lfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int err = errno;
    uiw__vfs_leave(&c->v);
    if (lfd < 0) {
        *status = uiw__nfsd_errno(err);
        goto out;
    }
    d = fdopendir(lfd);
    if (!d) {
        *status = uiw__nfsd_errno(errno);
        close(lfd);
        goto out;
    }
    if (cookie)
        seekdir(d, (long)cookie);
    struct stat dst;
    int at_root = fstat(dfd, &dst) == 0 && dst.st_dev == ex->dev && dst.st_ino == ex->ino;
    /* Reply overhead: status, dir attributes, verifier, list end, eof. */
    uint32_t used = 4 + POSTOP_XDR + 8 + 4 + 4, dirused = 0;
    size_t n = 0;
    void *prev = NULL;
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno)
                *status = uiw__nfsd_errno(errno);
            else
                *eof = 1;
            break;
        }
        size_t nl = strlen(de->d_name);
        uint32_t need = ENTRY3_XDR(nl) + (plus ? ENTRYPLUS_EXTRA : 0);
        if (used + need > maxcount || (plus && dirused + ENTRY3_XDR(nl) > dircount)) {
            if (n == 0)
                *status = NFS3ERR_TOOSMALL;
            break;
        }
        char *mem = arena_alloc(c, (plus ? sizeof(struct plus_ent) : sizeof(entry3)) + nl + 1);
        if (!mem) {
            *status = NFS3ERR_SERVERFAULT;
            break;
        }
        uint64_t fileid = (uint64_t)de->d_ino;
        int dotdot = strcmp(de->d_name, "..") == 0;
        if (dotdot && at_root)
            fileid = (uint64_t)ex->ino;
        if (plus) {
            struct plus_ent *pe = (struct plus_ent *)mem;
            memset(&pe->e, 0, sizeof(pe->e));
            memcpy(pe->name, de->d_name, nl + 1);
            pe->e.name = pe->name;
            pe->e.fileid = fileid;
            pe->e.cookie = (cookie3)de->d_off;
            const char *nm = (dotdot && at_root) ? "." : de->d_name;
            int fd = openat(dfd, nm, O_PATH | O_NOFOLLOW | O_CLOEXEC);
            if (fd >= 0) {
                /* a mount point not crossed: neither handle nor attributes */
                if (issue(c, ex, dfd, is_dot(nm) ? NULL : nm, fd,
                          &pe->e.name_handle.post_op_fh3_u.handle, pe->fh) == 0) {
                    pe->e.name_handle.handle_follows = 1;
                    uiw__nfsd_postop(fd, ex, &pe->e.name_attributes);
                }
                close(fd);
            }
            /* what it takes in XDR (the estimate took the longest handle) */
            need = ENTRY3_XDR(nl) + 8 + (pe->e.name_attributes.attributes_follow ? FATTR3_XDR : 0) +
                   (pe->e.name_handle.handle_follows
                        ? 4 + ((pe->e.name_handle.post_op_fh3_u.handle.data.data_len + 3) & ~3u)
                        : 0);
            if (prev)
                ((struct plus_ent *)prev)->e.nextentry = &pe->e;
            else
                *first = &pe->e;
            prev = pe;
        } else {
            entry3 *e = (entry3 *)mem;
            memset(e, 0, sizeof(*e));
            e->name = mem + sizeof(entry3);
            memcpy(e->name, de->d_name, nl + 1);
            e->fileid = fileid;
            e->cookie = (cookie3)de->d_off;
            if (prev)
                ((entry3 *)prev)->nextentry = e;
            else
                *first = e;
            prev = e;
        }
        n++;
        used += need;
        dirused += ENTRY3_XDR(nl);
    }
    if (*status != NFS3_OK)
        *first = NULL;
out:
    if (d)
        closedir(d);
    uiw__nfsd_postop(dfd, ex, dattr);
    close(dfd);
}

static void p_readdir(struct call *c, READDIR3args *a, READDIR3res *r)
{
    READDIR3resok *ok = &r->READDIR3res_u.resok;
    void *first;
    readdir_common(c, &a->dir, a->cookie, a->cookieverf, a->count, a->count, 0, &r->status,
                   &ok->dir_attributes, ok->cookieverf, &first, &ok->reply.eof);
    ok->reply.entries = first;
}

static void p_readdirplus(struct call *c, READDIRPLUS3args *a, READDIRPLUS3res *r)
{
    READDIRPLUS3resok *ok = &r->READDIRPLUS3res_u.resok;
    void *first;
    readdir_common(c, &a->dir, a->cookie, a->cookieverf, a->dircount, a->maxcount, 1, &r->status,
                   &ok->dir_attributes, ok->cookieverf, &first, &ok->reply.eof);
    ok->reply.entries = first;
}

static void p_fsstat(struct call *c, FSSTAT3args *a, FSSTAT3res *r)
{
    int fd;
    struct uiw__nfs_export *ex;
    struct stat sb;
    FSSTAT3resok *ok = &r->FSSTAT3res_u.resok;
    r->status = resolve_attr(c, &a->fsroot, &fd, &ex, &ok->obj_attributes, &sb);
    if (r->status != NFS3_OK)
        return;
    struct statfs sf;
    if (fstatfs(fd, &sf) != 0) {
        r->status = uiw__nfsd_errno(errno);
    } else {
        uint64_t bs = (uint64_t)sf.f_bsize;
        ok->tbytes = (uint64_t)sf.f_blocks * bs;
        ok->fbytes = (uint64_t)sf.f_bfree * bs;
        ok->abytes = (uint64_t)sf.f_bavail * bs;
        ok->tfiles = (uint64_t)sf.f_files;
        ok->ffiles = (uint64_t)sf.f_ffree;
        ok->afiles = (uint64_t)sf.f_ffree;
        ok->invarsec = 0;
    }
    close(fd);
}

static void p_fsinfo(struct call *c, FSINFO3args *a, FSINFO3res *r)
{
    int fd;
    struct uiw__nfs_export *ex;
    struct stat sb;
    FSINFO3resok *ok = &r->FSINFO3res_u.resok;
    r->status = resolve_attr(c, &a->fsroot, &fd, &ex, &ok->obj_attributes, &sb);
    if (r->status != NFS3_OK)
        return;
    uint32_t io = uiw__nfsd_max_io(c->v.s);
    ok->rtmax = ok->rtpref = io;
    ok->wtmax = ok->wtpref = io;
    ok->rtmult = ok->wtmult = 4096;
    ok->dtpref = 65536;
    /* the file system's: FILESIZEBITS counts the sign bit */
    long bits = fpathconf(fd, _PC_FILESIZEBITS);
    ok->maxfilesize = bits > 1 && bits < 64 ? (1ull << (bits - 1)) - 1 : (uint64_t)INT64_MAX;
    ok->time_delta.seconds = 0;
    ok->time_delta.nseconds = 1;
    ok->properties = FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME;
    close(fd);
}

static void p_pathconf(struct call *c, PATHCONF3args *a, PATHCONF3res *r)
{
    int fd;
    struct uiw__nfs_export *ex;
    struct stat sb;
    PATHCONF3resok *ok = &r->PATHCONF3res_u.resok;
    r->status = resolve_attr(c, &a->object, &fd, &ex, &ok->obj_attributes, &sb);
    if (r->status != NFS3_OK)
        return;
    struct statfs sf;
    ok->linkmax = 65000;
    ok->name_max = NAME_MAX;
    if (fstatfs(fd, &sf) == 0 && sf.f_namelen > 0 && sf.f_namelen < NAME_MAX)
        ok->name_max = (uint32_t)sf.f_namelen;
    ok->no_trunc = 1;
    ok->chown_restricted = 1;
    ok->case_insensitive = 0;
    ok->case_preserving = 1;
    close(fd);
}

static void p_commit(struct call *c, COMMIT3args *a, COMMIT3res *r)
{
    int fd;
    struct uiw__nfs_export *ex;
    wcc_data *w = &r->COMMIT3res_u.resok.file_wcc;
    memset(w, 0, sizeof(*w));
    struct stat sb;
    r->status = uiw__vfs_resolve(&c->v, &a->file, 0, &fd, &ex, &sb);
    if (r->status != NFS3_OK)
        return;
    uiw__nfsd_preop_of(&sb, &w->before); /* a COMMIT changes none of them */
    r->status = uiw__vfs_commit(&c->v, fd, &sb);
    uiw__vfs_verf(c->v.s, r->COMMIT3res_u.resok.verf);
    uiw__nfsd_postop(fd, ex, &w->after);
    close(fd);
}

/* ---- dispatch ---- */

typedef void (*procfn)(struct call *, void *, void *);

static const struct {
    const char *name;
    xdrproc_t args, res;
    procfn fn;
    int write; /* changes something: refused on a read-only export (NFS3ERR_ROFS) */
} procs[] = {
#define P(n, a, r, f, w)                                                                           \
    {                                                                                              \
        n, UIW__XDRPROC(a), UIW__XDRPROC(r), (procfn)(void (*)(void))(f), w                        \
    }
    P("NULL", xdr_void, xdr_void, p_null, 0),
    P("GETATTR", xdr_GETATTR3args, xdr_GETATTR3res, p_getattr, 0),
    P("SETATTR", xdr_SETATTR3args, xdr_SETATTR3res, p_setattr, 1),
    P("LOOKUP", xdr_LOOKUP3args, xdr_LOOKUP3res, p_lookup, 0),
    P("ACCESS", xdr_ACCESS3args, xdr_ACCESS3res, p_access, 0),
    P("READLINK", xdr_READLINK3args, xdr_READLINK3res, p_readlink, 0),
    P("READ", xdr_READ3args, xdr_READ3res, p_read, 0),
    P("WRITE", uiw__xdr_WRITE3args, xdr_WRITE3res, p_write, 1),
    P("CREATE", xdr_CREATE3args, xdr_CREATE3res, p_create, 1),
    P("MKDIR", xdr_MKDIR3args, xdr_MKDIR3res, p_mkdir, 1),
    P("SYMLINK", xdr_SYMLINK3args, xdr_SYMLINK3res, p_symlink, 1),
    P("MKNOD", xdr_MKNOD3args, xdr_MKNOD3res, p_mknod, 1),
    P("REMOVE", xdr_REMOVE3args, xdr_REMOVE3res, p_remove, 1),
    P("RMDIR", xdr_RMDIR3args, xdr_RMDIR3res, p_rmdir, 1),
    P("RENAME", xdr_RENAME3args, xdr_RENAME3res, p_rename, 1),
    P("LINK", xdr_LINK3args, xdr_LINK3res, p_link, 1),
    P("READDIR", xdr_READDIR3args, uiw__xdr_READDIR3res, p_readdir, 0),
    P("READDIRPLUS", xdr_READDIRPLUS3args, uiw__xdr_READDIRPLUS3res, p_readdirplus, 0),
    P("FSSTAT", xdr_FSSTAT3args, xdr_FSSTAT3res, p_fsstat, 0),
    P("FSINFO", xdr_FSINFO3args, xdr_FSINFO3res, p_fsinfo, 0),
    P("PATHCONF", xdr_PATHCONF3args, xdr_PATHCONF3res, p_pathconf, 0),
    P("COMMIT", xdr_COMMIT3args, xdr_COMMIT3res, p_commit, 1),
#undef P
};

union args3 {
    GETATTR3args getattr;
    SETATTR3args setattr;
    LOOKUP3args lookup;
    ACCESS3args access;
    READLINK3args readlink;
    READ3args read;
    WRITE3args write;
    CREATE3args create;
    MKDIR3args mkdir;
    SYMLINK3args symlink;
    MKNOD3args mknod;
    REMOVE3args remove;
    RMDIR3args rmdir;
    RENAME3args rename;
    LINK3args link;
    READDIR3args readdir;
    READDIRPLUS3args readdirplus;
    FSSTAT3args fsstat;
    FSINFO3args fsinfo;
    PATHCONF3args pathconf;
    COMMIT3args commit;
};

union res3 {
    GETATTR3res getattr;
    SETATTR3res setattr;
    LOOKUP3res lookup;
    ACCESS3res access;
    READLINK3res readlink;
    READ3res read;
    WRITE3res write;
    CREATE3res create;
    MKDIR3res mkdir;
    SYMLINK3res symlink;
    MKNOD3res mknod;
    REMOVE3res remove;
    RMDIR3res rmdir;
    RENAME3res rename;
    LINK3res link;
    READDIR3res readdir;
    READDIRPLUS3res readdirplus;
    FSSTAT3res fsstat;
    FSINFO3res fsinfo;
    PATHCONF3res pathconf;
    COMMIT3res commit;
};

static void dispatch(struct uiw__nfsd *s, struct svc_req *rq, SVCXPRT *xprt);

/* Room for a call's handles and names (two of each, as RENAME's); a longer item (a
 * SYMLINK's path) is allocated. */
#define ARGS_ARENA (2 * (NFS3_FHSIZE + 8) + 2 * (NAME_MAX + 8) + 512)

/* svc_freeargs with the arena the arguments were decoded with set again: what lies in it
 * is not freed. */
static void free_args(SVCXPRT *xprt, uint32_t proc, union args3 *args, struct uiw__xdr_arena *a)
{
    uiw__xdr_arena = a;
    svc_freeargs(xprt, procs[proc].args, (caddr_t)args);
    uiw__xdr_arena = NULL;
}

void uiw__nfs3_dispatch(struct uiw__nfsd *s, struct svc_req *rq, SVCXPRT *xprt)
{
    /* the exports stay as they are while the call runs (a reload waits) */
    pthread_rwlock_rdlock(&s->xlock);
    dispatch(s, rq, xprt);
    pthread_rwlock_unlock(&s->xlock);
}

static void dispatch(struct uiw__nfsd *s, struct svc_req *rq, SVCXPRT *xprt)
{
    uint32_t proc = (uint32_t)rq->rq_proc;
    if (proc >= sizeof(procs) / sizeof(procs[0])) {
        svcerr_noproc(xprt);
        return;
    }
    if (rq->rq_cred.oa_flavor != AUTH_NONE && rq->rq_cred.oa_flavor != AUTH_SYS) {
        svcerr_weakauth(xprt);
        return;
    }
    /* The WRITE payload's bound: the server's wtmax. */
    int rdma = uiw__nfs_xprt_is_rdma(xprt);
    union args3 args;
    union res3 res;
    memset(&args, 0, sizeof(args));
    memset(&res, 0, sizeof(res));
    uiw__nfs_args_limits(uiw__nfsd_max_io(s), rdma);
    /* the arguments' handles and names decoded into memory of the call: no allocation */
    _Alignas(max_align_t) char argbuf[ARGS_ARENA];
    struct uiw__xdr_arena argmem = {argbuf, sizeof(argbuf), 0};
    uiw__xdr_arena = &argmem;
    bool_t ok = svc_getargs(xprt, procs[proc].args, (caddr_t)&args);
    uiw__xdr_arena = NULL;
    if (!ok) {
        free_args(xprt, proc, &args, &argmem);
        uiw__nfs_args_limits(0, 0);
        svcerr_decode(xprt);
        return;
    }
    /* on the stack: the call's state ends with it (no allocation a call) */
    struct call cs;
    struct call *c = &cs;
    uiw__vfs_init(&c->v, s, rq, procs[proc].write);
    c->xprt = xprt;
    c->ch.n = 0;
    c->arena = NULL;
    procs[proc].fn(c, &args, &res);
    uiw__vfs_end(&c->ch); /* a procedure's own change ends before this */
    uiw__vfs_leave(&c->v);
    if (s->opts.verbose > 1)
        fprintf(stderr, "uiw-nfsd: %s uid %u -> %d\n", procs[proc].name, c->v.cred.uid,
                proc ? (int)res.getattr.status : 0);
    if (!svc_sendreply(xprt, procs[proc].res, (caddr_t)&res) && s->opts.verbose)
        fprintf(stderr, "uiw-nfsd: %s: reply not sent\n", procs[proc].name);
    arena_free(c);
    free_args(xprt, proc, &args, &argmem);
    uiw__nfs_args_limits(0, 0);
}
