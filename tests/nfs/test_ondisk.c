/* Every NFS procedure's results against the export on disk: the attributes each reply
 * carries (fattr3, post_op_attr, wcc_data) field by field against lstat of the file
 * (check_fattr: type, mode, nlink, uid, gid, size, used, rdev, fileid, the three times to
 * the nanosecond, fsid consistent), and contents against read(2) and readlink(2), not
 * against what the same server says elsewhere. Run as root, the server acts as a caller
 * whose uid and gid differ (1234:5678), and files carry times whose seconds and
 * nanoseconds differ, so that a field reported in another's place is seen. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "nfs/client.h"
#include "nfs/xdr_data.h"
#include "nfs_util.h"
#include "test.h"

struct env {
    struct srv v;
    struct uiw__nfs_client *c;
    uint32_t uid, gid;
};

static void env_start(struct env *e)
{
    srv_start(&e->v, NULL);
    if (geteuid() == 0) {
        e->uid = 1234;
        e->gid = 5678;
        CHECK_EQ(chmod(e->v.dir, 0777), 0);
        CHECK_EQ(chown(e->v.dir, e->uid, e->gid), 0);
    } else {
        e->uid = geteuid();
        e->gid = getegid();
    }
    e->c = srv_client(&e->v, e->uid, e->gid);
}

static void env_stop(struct env *e)
{
    uiw__nfs_client_close(e->c);
    srv_stop(&e->v);
}

static const struct uiw__nfs_fh *root(const struct env *e)
{
    return uiw__nfs_client_root(e->c);
}

static void fh3(nfs_fh3 *out, const struct uiw__nfs_fh *fh)
{
    out->data.data_len = fh->len;
    out->data.data_val = (char *)fh->data;
}

static void fh_of(struct uiw__nfs_fh *out, const post_op_fh3 *p)
{
    CHECK(p->handle_follows);
    CHECK(p->post_op_fh3_u.handle.data.data_len <= sizeof(out->data));
    out->len = p->post_op_fh3_u.handle.data.data_len;
    memcpy(out->data, p->post_op_fh3_u.handle.data.data_val, out->len);
}

#define CALL(e, proc, xa, a, xr, r)                                                                \
    do {                                                                                           \
        memset((r), 0, sizeof(*(r)));                                                              \
        CHECK_EQ(uiw__nfs_call((e)->c, (proc), UIW__XDRPROC(xa), (a), UIW__XDRPROC(xr), (r)), 0);  \
    } while (0)
#define FREE(xr, r) xdr_free(UIW__XDRPROC(xr), (caddr_t)(r))

/* A path in the export (its own buffer, unlike path_in's). */
static const char *at(const struct env *e, const char *rel, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s%s", e->v.dir, *rel ? "/" : "", rel);
    return buf;
}

/* A file made on disk: contents, the caller's uid and gid (root only), and times of
 * distinct seconds and nanoseconds. */
static void disk_file(const struct env *e, const char *rel, const void *data, size_t n, mode_t mode)
{
    char p[600];
    put_file(&e->v, rel, data, n);
    at(e, rel, p, sizeof(p));
    CHECK_EQ(chmod(p, mode), 0);
    if (geteuid() == 0)
        CHECK_EQ(lchown(p, e->uid, e->gid), 0);
    struct timespec t[2] = {{1000000001, 123456789}, {1100000002, 987654321}};
    CHECK_EQ(utimensat(AT_FDCWD, p, t, AT_SYMLINK_NOFOLLOW), 0);
}

/* GETATTR of the export, a file, a directory, a symbolic link, a FIFO and a file with
 * two links; LOOKUP's object and directory attributes; ACCESS's attributes and its
 * answer as the kernel gives it for the caller; READLINK's text as readlink(2). */
TEST(ondisk_getattr_lookup_access_readlink)
{
    struct env e;
    env_start(&e);
    char p[600], q[600];
    disk_file(&e, "f", "hello, world", 12, 0640);
    CHECK_EQ(mkdir(at(&e, "d", p, sizeof(p)), 0751), 0);
    CHECK_EQ(symlink("f", at(&e, "ln", p, sizeof(p))), 0);
    CHECK_EQ(mkfifo(at(&e, "fifo", p, sizeof(p)), 0604), 0);
    CHECK_EQ(link(at(&e, "f", p, sizeof(p)), at(&e, "d/hard", q, sizeof(q))), 0);
    const char *names[] = {"f", "d", "ln", "fifo", "d/hard"};
    fattr3 a;
    CHECK_EQ(uiw__nfs_getattr(e.c, root(&e), &a), 0);
    CHECK_FATTR_PATH("GETATTR of the export", &a, e.v.dir);
    for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        struct uiw__nfs_fh fh;
        CHECK_EQ(uiw__nfs_lookup_path(e.c, names[i], &fh, NULL), 0);
        CHECK_EQ(uiw__nfs_getattr(e.c, &fh, &a), 0);
        CHECK_FATTR_PATH(names[i], &a, at(&e, names[i], p, sizeof(p)));
        CHECK_EQ(a.fileid, lstat_ok(p).st_ino);
    }
    CHECK_EQ(a.nlink, 2); /* d/hard */

    /* LOOKUP: the object's and the directory's attributes. */
    struct uiw__nfs_fh d;
    CHECK_EQ(uiw__nfs_lookup(e.c, root(&e), "d", &d, NULL), 0);
    LOOKUP3args la;
    LOOKUP3res lr;
    fh3(&la.what.dir, &d);
    la.what.name = "hard";
    CALL(&e, NFSPROC3_LOOKUP, xdr_LOOKUP3args, &la, xdr_LOOKUP3res, &lr);
    CHECK_EQ(lr.status, NFS3_OK);
    CHECK_POSTOP_PATH("LOOKUP object", &lr.LOOKUP3res_u.resok.obj_attributes,
                      at(&e, "d/hard", p, sizeof(p)));
    CHECK_POSTOP_PATH("LOOKUP dir", &lr.LOOKUP3res_u.resok.dir_attributes,
                      at(&e, "d", p, sizeof(p)));
    FREE(xdr_LOOKUP3res, &lr);
    la.what.name = "none";
    CALL(&e, NFSPROC3_LOOKUP, xdr_LOOKUP3args, &la, xdr_LOOKUP3res, &lr);
    CHECK_EQ(lr.status, NFS3ERR_NOENT);
    CHECK_POSTOP_PATH("failed LOOKUP dir", &lr.LOOKUP3res_u.resfail.dir_attributes,
                      at(&e, "d", p, sizeof(p)));
    FREE(xdr_LOOKUP3res, &lr);

    /* ACCESS: attributes, and the rights: the owner may read and write its 0640 file,
     * but not execute it. */
    struct uiw__nfs_fh f;
    CHECK_EQ(uiw__nfs_lookup(e.c, root(&e), "f", &f, NULL), 0);
    ACCESS3args aa;
    ACCESS3res ar;
    fh3(&aa.object, &f);
    aa.access = ACCESS3_READ | ACCESS3_MODIFY | ACCESS3_EXTEND | ACCESS3_EXECUTE;
    CALL(&e, NFSPROC3_ACCESS, xdr_ACCESS3args, &aa, xdr_ACCESS3res, &ar);
    CHECK_EQ(ar.status, NFS3_OK);
    CHECK_POSTOP_PATH("ACCESS", &ar.ACCESS3res_u.resok.obj_attributes, at(&e, "f", p, sizeof(p)));
    CHECK_EQ(ar.ACCESS3res_u.resok.access, ACCESS3_READ | ACCESS3_MODIFY | ACCESS3_EXTEND);
    FREE(xdr_ACCESS3res, &ar);

    /* READLINK: the text on disk and the link's own attributes. */
    struct uiw__nfs_fh ln;
    CHECK_EQ(uiw__nfs_lookup(e.c, root(&e), "ln", &ln, NULL), 0);
    READLINK3args ra;
    READLINK3res rr;
    fh3(&ra.symlink, &ln);
    at(&e, "ln", p, sizeof(p));
    CALL(&e, NFSPROC3_READLINK, xdr_READLINK3args, &ra, xdr_READLINK3res, &rr);
    CHECK_EQ(rr.status, NFS3_OK);
    /* The attributes first: readlink(2) here changes the link's atime. They are of after
     * the server read the link, as knfsd's: every field as on disk now. */
    const post_op_attr *la_ = &rr.READLINK3res_u.resok.symlink_attributes;
    CHECK(la_->attributes_follow);
    struct stat ls = lstat_ok(p);
    CHECK_FATTR("READLINK", &la_->post_op_attr_u.attributes, &ls);
    char text[64];
    ssize_t k = readlink(p, text, sizeof(text) - 1);
    CHECK(k > 0);
    text[k] = 0;
    CHECK_STR(rr.READLINK3res_u.resok.data, text);
    FREE(xdr_READLINK3res, &rr);
    env_stop(&e);
}

static void sattr_none(sattr3 *s)
{
    memset(s, 0, sizeof(*s));
    s->atime.set_it = DONT_CHANGE;
    s->mtime.set_it = DONT_CHANGE;
}

static int same_stat(const struct stat *a, const struct stat *b)
{
    return a->st_mode == b->st_mode && a->st_size == b->st_size && a->st_uid == b->st_uid &&
           a->st_gid == b->st_gid && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
           a->st_mtim.tv_nsec == b->st_mtim.tv_nsec && a->st_atim.tv_sec == b->st_atim.tv_sec &&
           a->st_atim.tv_nsec == b->st_atim.tv_nsec && a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
           a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* SETATTR: a guard naming another ctime (one nanosecond off, or one second) is
 * NFS3ERR_NOT_SYNC and changes nothing on disk; the guard of the file's ctime applies
 * mode, size and both times to the nanosecond; the server's time; as root, uid and gid;
 * each reply's wcc_data against lstat before and after. */
TEST(ondisk_setattr_guard)
{
    struct env e;
    env_start(&e);
    char p[600];
    char data[5000];
    memset(data, 'x', sizeof(data));
    disk_file(&e, "f", data, sizeof(data), 0644);
    at(&e, "f", p, sizeof(p));
    struct uiw__nfs_fh f;
    CHECK_EQ(uiw__nfs_lookup(e.c, root(&e), "f", &f, NULL), 0);
    SETATTR3args a;
    SETATTR3res r;
    fh3(&a.object, &f);
    sattr_none(&a.new_attributes);
    a.new_attributes.mode.set_it = TRUE;
    a.new_attributes.mode.set_mode3_u.mode = 0600;
    a.new_attributes.size.set_it = TRUE;
    a.new_attributes.size.set_size3_u.size = 10;
    a.new_attributes.atime.set_it = SET_TO_CLIENT_TIME;
    a.new_attributes.atime.set_atime_u.atime = (nfstime3){1200000003, 111111111};
    a.new_attributes.mtime.set_it = SET_TO_CLIENT_TIME;
    a.new_attributes.mtime.set_mtime_u.mtime = (nfstime3){1300000004, 222222222};
    struct stat before = lstat_ok(p);
    const long off[][2] = {{0, 1}, {1, 0}, {-1, 0}};
    for (unsigned i = 0; i < 3; i++) {
        a.guard.check = TRUE;
        a.guard.sattrguard3_u.obj_ctime.seconds = (uint32_t)(before.st_ctim.tv_sec + off[i][0]);
        a.guard.sattrguard3_u.obj_ctime.nseconds = (uint32_t)(before.st_ctim.tv_nsec + off[i][1]);
        CALL(&e, NFSPROC3_SETATTR, xdr_SETATTR3args, &a, xdr_SETATTR3res, &r);
        CHECK_EQ(r.status, NFS3ERR_NOT_SYNC);
        CHECK_WCC("SETATTR with a wrong guard", &r.SETATTR3res_u.resfail.obj_wcc, &before, p);
        FREE(xdr_SETATTR3res, &r);
        struct stat now = lstat_ok(p);
        CHECK(same_stat(&now, &before));
    }
    /* The right guard: every attribute asked for, on disk. */
    a.guard.sattrguard3_u.obj_ctime.seconds = (uint32_t)before.st_ctim.tv_sec;
    a.guard.sattrguard3_u.obj_ctime.nseconds = (uint32_t)before.st_ctim.tv_nsec;
    CALL(&e, NFSPROC3_SETATTR, xdr_SETATTR3args, &a, xdr_SETATTR3res, &r);
    CHECK_EQ(r.status, NFS3_OK);
    CHECK_WCC("SETATTR", &r.SETATTR3res_u.resok.obj_wcc, &before, p);
    FREE(xdr_SETATTR3res, &r);
    struct stat st = lstat_ok(p);
    CHECK_EQ(st.st_mode & 07777, 0600);
    CHECK_EQ(st.st_size, 10);
    CHECK_EQ(st.st_atim.tv_sec, 1200000003);
    CHECK_EQ(st.st_atim.tv_nsec, 111111111);
    CHECK_EQ(st.st_mtim.tv_sec, 1300000004);
    CHECK_EQ(st.st_mtim.tv_nsec, 222222222);
    CHECK_EQ(st.st_uid, before.st_uid);
    CHECK_EQ(st.st_gid, before.st_gid);
    /* Without a guard, the server's time for mtime; atime untouched. */
    before = st;
    sattr_none(&a.new_attributes);
    a.new_attributes.mtime.set_it = SET_TO_SERVER_TIME;
    a.guard.check = FALSE;
    CALL(&e, NFSPROC3_SETATTR, xdr_SETATTR3args, &a, xdr_SETATTR3res, &r);
    CHECK_EQ(r.status, NFS3_OK);
    CHECK_WCC("SETATTR to the server's time", &r.SETATTR3res_u.resok.obj_wcc, &before, p);
    FREE(xdr_SETATTR3res, &r);
    st = lstat_ok(p);
    CHECK(st.st_mtim.tv_sec > 1300000004);
    CHECK_EQ(st.st_atim.tv_sec, 1200000003);
    CHECK_EQ(st.st_atim.tv_nsec, 111111111);
    if (geteuid() == 0) {
        /* uid and gid, by a client as root (not squashed here). */
        struct uiw__nfs_client *rc = srv_client(&e.v, 0, 0);
        before = st;
        sattr_none(&a.new_attributes);
        a.new_attributes.uid.set_it = TRUE;
        a.new_attributes.uid.set_uid3_u.uid = 4321;
        a.new_attributes.gid.set_it = TRUE;
        a.new_attributes.gid.set_gid3_u.gid = 8765;
        memset(&r, 0, sizeof(r));
        CHECK_EQ(uiw__nfs_call(rc, NFSPROC3_SETATTR, UIW__XDRPROC(xdr_SETATTR3args), &a,
                               UIW__XDRPROC(xdr_SETATTR3res), &r),
                 0);
        CHECK_EQ(r.status, NFS3_OK);
        CHECK_WCC("SETATTR of uid and gid", &r.SETATTR3res_u.resok.obj_wcc, &before, p);
        FREE(xdr_SETATTR3res, &r);
        st = lstat_ok(p);
        CHECK_EQ(st.st_uid, 4321);
        CHECK_EQ(st.st_gid, 8765);
        uiw__nfs_client_close(rc);
    }
    env_stop(&e);
}

/* READ: the bytes of read(2) and the file's attributes after it; WRITE in each
 * stability: wcc_data, and the bytes on disk; COMMIT: wcc_data and the verifier of the
 * writes. */
TEST(ondisk_read_write_commit)
{
    struct env e;
    env_start(&e);
    char p[600];
    enum { N = 300000 };
    static char data[N], back[N], disk[N + 100];
    for (size_t i = 0; i < N; i++)
        data[i] = (char)(i * 7 + i / 251);
    disk_file(&e, "f", data, N, 0644);
    at(&e, "f", p, sizeof(p));
    struct uiw__nfs_fh f;
    CHECK_EQ(uiw__nfs_lookup(e.c, root(&e), "f", &f, NULL), 0);

    READ3args ra = {.offset = 1000, .count = 100000};
    struct uiw__nfs_read_into rr;
    fh3(&ra.file, &f);
    memset(&rr, 0, sizeof(rr));
    rr.buf = back;
    rr.cap = sizeof(back);
    CHECK_EQ(uiw__nfs_call(e.c, NFSPROC3_READ, UIW__XDRPROC(xdr_READ3args), &ra,
                           UIW__XDRPROC(uiw__xdr_READ3res_into), &rr),
             0);
    CHECK_EQ(rr.res.status, NFS3_OK);
    CHECK_EQ(rr.res.READ3res_u.resok.count, 100000);
    CHECK_EQ(rr.res.READ3res_u.resok.eof, 0);
    /* the attributes first: a read here may change the atime (strictatime) */
    CHECK_POSTOP_PATH("READ", &rr.res.READ3res_u.resok.file_attributes, p);
    int fd = open(p, O_RDONLY);
    CHECK(fd >= 0);
    CHECK_EQ(pread(fd, disk, 100000, 1000), 100000);
    CHECK_MEM(back, disk, 100000);
    /* The end: eof, and what is left. */
    ra.offset = N - 10;
    memset(&rr.res, 0, sizeof(rr.res));
    CHECK_EQ(uiw__nfs_call(e.c, NFSPROC3_READ, UIW__XDRPROC(xdr_READ3args), &ra,
                           UIW__XDRPROC(uiw__xdr_READ3res_into), &rr),
             0);
    CHECK_EQ(rr.res.status, NFS3_OK);
    CHECK_EQ(rr.res.READ3res_u.resok.count, 10);
    CHECK_EQ(rr.res.READ3res_u.resok.eof, 1);
    CHECK_MEM(back, data + N - 10, 10);
    CHECK_POSTOP_PATH("READ at the end", &rr.res.READ3res_u.resok.file_attributes, p);

    /* WRITE in the three stabilities, one of them growing the file. */
    const stable_how how[] = {UNSTABLE, DATA_SYNC, FILE_SYNC};
    const uint64_t at_off[] = {5, 150000, N - 50};
    char verf[3][8];
    for (unsigned i = 0; i < 3; i++) {
        char buf[4096];
        for (size_t j = 0; j < sizeof(buf); j++)
            buf[j] = (char)(0xa5 ^ (j + i));
        WRITE3args wa;
        WRITE3res wr;
        memset(&wa, 0, sizeof(wa));
        fh3(&wa.file, &f);
        wa.offset = at_off[i];
        wa.count = sizeof(buf);
        wa.stable = how[i];
        wa.data.data_len = sizeof(buf);
        wa.data.data_val = buf;
        struct stat before = lstat_ok(p);
        CALL(&e, NFSPROC3_WRITE, uiw__xdr_WRITE3args, &wa, xdr_WRITE3res, &wr);
        CHECK_EQ(wr.status, NFS3_OK);
        CHECK_EQ(wr.WRITE3res_u.resok.count, sizeof(buf));
        CHECK(wr.WRITE3res_u.resok.committed >= how[i]);
        memcpy(verf[i], wr.WRITE3res_u.resok.verf, 8);
        CHECK_WCC("WRITE", &wr.WRITE3res_u.resok.file_wcc, &before, p);
        FREE(xdr_WRITE3res, &wr);
        CHECK_EQ(pread(fd, disk, sizeof(buf), (off_t)at_off[i]), (long long)sizeof(buf));
        CHECK_MEM(disk, buf, sizeof(buf));
    }
    CHECK_MEM(verf[0], verf[1], 8);
    CHECK_MEM(verf[0], verf[2], 8);
    CHECK_EQ(lstat_ok(p).st_size, N - 50 + 4096);
    /* The bytes not written are those of before. */
    CHECK_EQ(pread(fd, disk, 5, 0), 5);
    for (size_t j = 0; j < 5; j++)
        CHECK_EQ(disk[j], (char)(j * 7 + j / 251));
    close(fd);

    COMMIT3args ca = {.offset = 0, .count = 0};
    COMMIT3res cr;
    fh3(&ca.file, &f);
    struct stat before = lstat_ok(p);
    CALL(&e, NFSPROC3_COMMIT, xdr_COMMIT3args, &ca, xdr_COMMIT3res, &cr);
    CHECK_EQ(cr.status, NFS3_OK);
    CHECK_MEM(cr.COMMIT3res_u.resok.verf, verf[0], 8);
    CHECK_WCC("COMMIT", &cr.COMMIT3res_u.resok.file_wcc, &before, p);
    FREE(xdr_COMMIT3res, &cr);
    env_stop(&e);
}

/* Of a new object's reply: its handle, attributes (against lstat of what is now on disk)
 * and the directory's wcc_data. */
static void check_made(const char *what, const post_op_fh3 *obj, const post_op_attr *attr,
                       const wcc_data *dir_wcc, const struct stat *dir_before, const char *dir,
                       const char *path)
{
    CHECK(obj->handle_follows);
    CHECK_POSTOP_PATH(what, attr, path);
    CHECK_WCC(what, dir_wcc, dir_before, dir);
}

/* CREATE (UNCHECKED with a mode and a size, GUARDED, EXCLUSIVE), MKDIR, SYMLINK, MKNOD
 * (a FIFO, a socket, as root a character device): the object on disk as asked (type,
 * mode, owner, link text, device numbers), the reply's attributes and directory wcc_data
 * against lstat. */
TEST(ondisk_create_mkdir_symlink_mknod)
{
    struct env e;
    env_start(&e);
    char dir[600], p[600];
    CHECK_EQ(mkdir(at(&e, "d", dir, sizeof(dir)), 0777), 0);
    CHECK_EQ(chmod(dir, 0777), 0); /* whatever the umask */
    struct uiw__nfs_fh d;
    CHECK_EQ(uiw__nfs_lookup(e.c, root(&e), "d", &d, NULL), 0);
    const createmode3 modes[] = {UNCHECKED, GUARDED, EXCLUSIVE};
    const char *names[] = {"unchecked", "guarded", "exclusive"};
    for (unsigned i = 0; i < 3; i++) {
        CREATE3args a;
        CREATE3res r;
        memset(&a, 0, sizeof(a));
        fh3(&a.where.dir, &d);
        a.where.name = (char *)names[i];
        a.how.mode = modes[i];
        if (modes[i] == EXCLUSIVE) {
            memcpy(a.how.createhow3_u.verf, "\1\2\3\4\5\6\7\10", 8);
        } else {
            sattr_none(&a.how.createhow3_u.obj_attributes);
            a.how.createhow3_u.obj_attributes.mode.set_it = TRUE;
            a.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = 0612;
            a.how.createhow3_u.obj_attributes.size.set_it = modes[i] == UNCHECKED;
            a.how.createhow3_u.obj_attributes.size.set_size3_u.size = 0;
        }
        struct stat before = lstat_ok(dir);
        CALL(&e, NFSPROC3_CREATE, xdr_CREATE3args, &a, xdr_CREATE3res, &r);
        CHECK_EQ(r.status, NFS3_OK);
        at(&e, "d", p, sizeof(p));
        strcat(p, "/");
        strcat(p, names[i]);
        struct stat st = lstat_ok(p);
        CHECK(S_ISREG(st.st_mode));
        CHECK_EQ(st.st_size, 0);
        CHECK_EQ(st.st_uid, geteuid() == 0 ? e.uid : geteuid());
        CHECK_EQ(st.st_gid, geteuid() == 0 ? e.gid : getegid());
        if (modes[i] != EXCLUSIVE)
            CHECK_EQ(st.st_mode & 07777, 0612);
        check_made("CREATE", &r.CREATE3res_u.resok.obj, &r.CREATE3res_u.resok.obj_attributes,
                   &r.CREATE3res_u.resok.dir_wcc, &before, dir, p);
        FREE(xdr_CREATE3res, &r);
    }

    MKDIR3args ma;
    MKDIR3res mr;
    memset(&ma, 0, sizeof(ma));
    fh3(&ma.where.dir, &d);
    ma.where.name = "sub";
    sattr_none(&ma.attributes);
    ma.attributes.mode.set_it = TRUE;
    ma.attributes.mode.set_mode3_u.mode = 0715;
    struct stat before = lstat_ok(dir);
    CALL(&e, NFSPROC3_MKDIR, xdr_MKDIR3args, &ma, xdr_MKDIR3res, &mr);
    CHECK_EQ(mr.status, NFS3_OK);
    at(&e, "d/sub", p, sizeof(p));
    CHECK(S_ISDIR(lstat_ok(p).st_mode));
    CHECK_EQ(lstat_ok(p).st_mode & 07777, 0715);
    check_made("MKDIR", &mr.MKDIR3res_u.resok.obj, &mr.MKDIR3res_u.resok.obj_attributes,
               &mr.MKDIR3res_u.resok.dir_wcc, &before, dir, p);
    FREE(xdr_MKDIR3res, &mr);

    SYMLINK3args sa;
    SYMLINK3res sr;
    memset(&sa, 0, sizeof(sa));
    fh3(&sa.where.dir, &d);
    sa.where.name = "ln";
    sattr_none(&sa.symlink.symlink_attributes);
    sa.symlink.symlink_data = "../some/where/else";
    before = lstat_ok(dir);
    CALL(&e, NFSPROC3_SYMLINK, xdr_SYMLINK3args, &sa, xdr_SYMLINK3res, &sr);
    CHECK_EQ(sr.status, NFS3_OK);
    at(&e, "d/ln", p, sizeof(p));
    check_made("SYMLINK", &sr.SYMLINK3res_u.resok.obj, &sr.SYMLINK3res_u.resok.obj_attributes,
               &sr.SYMLINK3res_u.resok.dir_wcc, &before, dir, p);
    char text[64]; /* after the attributes: readlink(2) changes the link's atime */
    ssize_t k = readlink(p, text, sizeof(text) - 1);
    CHECK(k > 0);
    text[k] = 0;
    CHECK_STR(text, "../some/where/else");
    FREE(xdr_SYMLINK3res, &sr);

    const ftype3 types[] = {NF3FIFO, NF3SOCK, NF3CHR};
    const char *tnames[] = {"fifo", "sock", "chr"};
    for (unsigned i = 0; i < 3; i++) {
        if (types[i] == NF3CHR && geteuid() != 0)
            break;
        MKNOD3args na;
        MKNOD3res nr;
        memset(&na, 0, sizeof(na));
        fh3(&na.where.dir, &d);
        na.where.name = (char *)tnames[i];
        na.what.type = types[i];
        sattr3 *s = types[i] == NF3CHR ? &na.what.mknoddata3_u.device.dev_attributes
                                       : &na.what.mknoddata3_u.pipe_attributes;
        sattr_none(s);
        s->mode.set_it = TRUE;
        s->mode.set_mode3_u.mode = 0620;
        if (types[i] == NF3CHR) {
            /* a root client: only root makes devices */
            na.what.mknoddata3_u.device.spec.specdata1 = 1;
            na.what.mknoddata3_u.device.spec.specdata2 = 7;
        }
        before = lstat_ok(dir);
        struct uiw__nfs_client *c = e.c;
        if (types[i] == NF3CHR)
            c = srv_client(&e.v, 0, 0);
        memset(&nr, 0, sizeof(nr));
        CHECK_EQ(uiw__nfs_call(c, NFSPROC3_MKNOD, UIW__XDRPROC(xdr_MKNOD3args), &na,
                               UIW__XDRPROC(xdr_MKNOD3res), &nr),
                 0);
        if (c != e.c)
            uiw__nfs_client_close(c);
        if (types[i] == NF3CHR && nr.status == NFS3ERR_PERM) {
            /* a container without CAP_MKNOD */
            FREE(xdr_MKNOD3res, &nr);
            break;
        }
        CHECK_EQ(nr.status, NFS3_OK);
        char rel[32];
        snprintf(rel, sizeof(rel), "d/%s", tnames[i]);
        at(&e, rel, p, sizeof(p));
        struct stat st = lstat_ok(p);
        CHECK_EQ(st.st_mode & 07777, 0620);
        CHECK(types[i] != NF3FIFO || S_ISFIFO(st.st_mode));
        CHECK(types[i] != NF3SOCK || S_ISSOCK(st.st_mode));
        if (types[i] == NF3CHR) {
            CHECK(S_ISCHR(st.st_mode));
            CHECK_EQ(major(st.st_rdev), 1);
            CHECK_EQ(minor(st.st_rdev), 7);
        }
        check_made("MKNOD", &nr.MKNOD3res_u.resok.obj, &nr.MKNOD3res_u.resok.obj_attributes,
                   &nr.MKNOD3res_u.resok.dir_wcc, &before, dir, p);
        FREE(xdr_MKNOD3res, &nr);
    }
    env_stop(&e);
}

static int gone(const char *p)
{
    struct stat st;
    return lstat(p, &st) != 0 && errno == ENOENT;
}

/* LINK: the same inode under the new name, the file's attributes (two links) and the
 * directory's wcc_data; RENAME across directories: the inode under the new name, nothing
 * under the old, both directories' wcc_data; REMOVE of one of two links: the other left
 * with one link; RMDIR: gone; each against lstat. */
TEST(ondisk_link_rename_remove_rmdir)
{
    struct env e;
    env_start(&e);
    char a[600], b[600], p[600], q[600];
    CHECK_EQ(mkdir(at(&e, "a", a, sizeof(a)), 0777), 0);
    CHECK_EQ(mkdir(at(&e, "b", b, sizeof(b)), 0777), 0);
    CHECK_EQ(chmod(a, 0777), 0); /* whatever the umask */
    CHECK_EQ(chmod(b, 0777), 0);
    disk_file(&e, "a/f", "contents", 8, 0644);
    struct uiw__nfs_fh da, db, f;
    CHECK_EQ(uiw__nfs_lookup(e.c, root(&e), "a", &da, NULL), 0);
    CHECK_EQ(uiw__nfs_lookup(e.c, root(&e), "b", &db, NULL), 0);
    CHECK_EQ(uiw__nfs_lookup(e.c, &da, "f", &f, NULL), 0);
    ino_t ino = lstat_ok(at(&e, "a/f", p, sizeof(p))).st_ino;

    LINK3args la;
    LINK3res lr;
    fh3(&la.file, &f);
    fh3(&la.link.dir, &db);
    la.link.name = "g";
    struct stat before = lstat_ok(b);
    CALL(&e, NFSPROC3_LINK, xdr_LINK3args, &la, xdr_LINK3res, &lr);
    CHECK_EQ(lr.status, NFS3_OK);
    at(&e, "b/g", q, sizeof(q));
    CHECK_EQ(lstat_ok(q).st_ino, ino);
    CHECK_EQ(lstat_ok(q).st_nlink, 2);
    CHECK_POSTOP_PATH("LINK", &lr.LINK3res_u.resok.file_attributes, q);
    CHECK_WCC("LINK", &lr.LINK3res_u.resok.linkdir_wcc, &before, b);
    FREE(xdr_LINK3res, &lr);

    RENAME3args ra;
    RENAME3res rr;
    fh3(&ra.from.dir, &da);
    ra.from.name = "f";
    fh3(&ra.to.dir, &db);
    ra.to.name = "h";
    struct stat fb = lstat_ok(a), tb = lstat_ok(b);
    CALL(&e, NFSPROC3_RENAME, xdr_RENAME3args, &ra, xdr_RENAME3res, &rr);
    CHECK_EQ(rr.status, NFS3_OK);
    CHECK(gone(at(&e, "a/f", p, sizeof(p))));
    at(&e, "b/h", p, sizeof(p));
    CHECK_EQ(lstat_ok(p).st_ino, ino);
    CHECK_WCC("RENAME from", &rr.RENAME3res_u.resok.fromdir_wcc, &fb, a);
    CHECK_WCC("RENAME to", &rr.RENAME3res_u.resok.todir_wcc, &tb, b);
    FREE(xdr_RENAME3res, &rr);
    char back[16];
    int fd = open(p, O_RDONLY);
    CHECK(fd >= 0);
    CHECK_EQ(read(fd, back, sizeof(back)), 8);
    close(fd);
    CHECK_MEM(back, "contents", 8);

    REMOVE3args xa;
    REMOVE3res xr;
    fh3(&xa.object.dir, &db);
    xa.object.name = "g";
    before = lstat_ok(b);
    CALL(&e, NFSPROC3_REMOVE, xdr_REMOVE3args, &xa, xdr_REMOVE3res, &xr);
    CHECK_EQ(xr.status, NFS3_OK);
    CHECK(gone(q));
    CHECK_EQ(lstat_ok(p).st_nlink, 1);
    CHECK_WCC("REMOVE", &xr.REMOVE3res_u.resok.dir_wcc, &before, b);
    FREE(xdr_REMOVE3res, &xr);
    /* A failed REMOVE (no such name): the directory's wcc_data, nothing removed. */
    before = lstat_ok(b);
    CALL(&e, NFSPROC3_REMOVE, xdr_REMOVE3args, &xa, xdr_REMOVE3res, &xr);
    CHECK_EQ(xr.status, NFS3ERR_NOENT);
    CHECK_WCC("failed REMOVE", &xr.REMOVE3res_u.resfail.dir_wcc, &before, b);
    FREE(xdr_REMOVE3res, &xr);
    CHECK_EQ(lstat_ok(p).st_nlink, 1);

    RMDIR3args da3;
    RMDIR3res dr;
    fh3(&da3.object.dir, root(&e));
    da3.object.name = "a";
    before = lstat_ok(e.v.dir);
    CALL(&e, NFSPROC3_RMDIR, xdr_RMDIR3args, &da3, xdr_RMDIR3res, &dr);
    CHECK_EQ(dr.status, NFS3_OK);
    CHECK(gone(a));
    CHECK_WCC("RMDIR", &dr.RMDIR3res_u.resok.dir_wcc, &before, e.v.dir);
    FREE(xdr_RMDIR3res, &dr);
    /* Not empty: refused, and there. */
    da3.object.name = "b";
    before = lstat_ok(e.v.dir);
    CALL(&e, NFSPROC3_RMDIR, xdr_RMDIR3args, &da3, xdr_RMDIR3res, &dr);
    CHECK_EQ(dr.status, NFS3ERR_NOTEMPTY);
    CHECK_WCC("failed RMDIR", &dr.RMDIR3res_u.resfail.dir_wcc, &before, e.v.dir);
    FREE(xdr_RMDIR3res, &dr);
    CHECK(S_ISDIR(lstat_ok(b).st_mode));
    env_stop(&e);
}

/* READDIRPLUS of a directory of every type: each name on disk once (and nothing else but
 * "." and ".."), each entry's fileid its st_ino, its attributes against lstat, a handle
 * whose GETATTR gives the same; the directory's attributes. */
TEST(ondisk_readdirplus)
{
    struct env e;
    env_start(&e);
    char p[600];
    CHECK_EQ(mkdir(at(&e, "dir", p, sizeof(p)), 0755), 0);
    static char data[4000];
    memset(data, 'r', sizeof(data));
    for (int i = 0; i < 40; i++) {
        char n[32];
        snprintf(n, sizeof(n), "dir/file%d", i);
        disk_file(&e, n, data, (size_t)i * 100, (mode_t)(0600 + i % 8));
    }
    CHECK_EQ(mkdir(at(&e, "dir/sub", p, sizeof(p)), 0700), 0);
    CHECK_EQ(symlink("file1", at(&e, "dir/ln", p, sizeof(p))), 0);
    CHECK_EQ(mkfifo(at(&e, "dir/fifo", p, sizeof(p)), 0600), 0);
    char a1[600], a2[600];
    CHECK_EQ(link(at(&e, "dir/file2", a1, sizeof(a1)), at(&e, "dir/hard", a2, sizeof(a2))), 0);
    char dir[600];
    at(&e, "dir", dir, sizeof(dir));
    /* the names on disk */
    char names[64][NAME_MAX + 1];
    int nnames = 0, seen[64] = {0};
    DIR *dd = opendir(dir);
    CHECK(dd != NULL);
    for (struct dirent *de; (de = readdir(dd)) != NULL;)
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            CHECK(nnames < 64);
            snprintf(names[nnames++], sizeof(names[0]), "%s", de->d_name);
        }
    closedir(dd);
    CHECK_EQ(nnames, 44);

    struct uiw__nfs_fh d;
    CHECK_EQ(uiw__nfs_lookup(e.c, root(&e), "dir", &d, NULL), 0);
    READDIRPLUS3args a;
    memset(&a, 0, sizeof(a));
    fh3(&a.dir, &d);
    a.dircount = 512;
    a.maxcount = 4096;
    int calls = 0, dots = 0;
    for (;;) {
        READDIRPLUS3res r;
        CALL(&e, NFSPROC3_READDIRPLUS, xdr_READDIRPLUS3args, &a, uiw__xdr_READDIRPLUS3res, &r);
        CHECK_EQ(r.status, NFS3_OK);
        calls++;
        CHECK_POSTOP_PATH("READDIRPLUS dir", &r.READDIRPLUS3res_u.resok.dir_attributes, dir);
        for (entryplus3 *x = r.READDIRPLUS3res_u.resok.reply.entries; x; x = x->nextentry) {
            a.cookie = x->cookie;
            if (!strcmp(x->name, ".") || !strcmp(x->name, "..")) {
                dots++;
                continue;
            }
            int k = -1;
            for (int i = 0; i < nnames; i++)
                if (strcmp(names[i], x->name) == 0)
                    k = i;
            if (k < 0)
                uiw_test_fail(__FILE__, __LINE__, "READDIRPLUS: \"%s\" is not on disk", x->name);
            CHECK_EQ(seen[k], 0);
            seen[k] = 1;
            at(&e, "dir/", p, sizeof(p));
            strcat(p, x->name);
            CHECK_EQ(x->fileid, lstat_ok(p).st_ino);
            CHECK_POSTOP_PATH(x->name, &x->name_attributes, p);
            struct uiw__nfs_fh h;
            fh_of(&h, &x->name_handle);
            fattr3 ga;
            CHECK_EQ(uiw__nfs_getattr(e.c, &h, &ga), 0);
            CHECK_FATTR_PATH(x->name, &ga, p);
        }
        memcpy(a.cookieverf, r.READDIRPLUS3res_u.resok.cookieverf, sizeof(a.cookieverf));
        int eof = r.READDIRPLUS3res_u.resok.reply.eof;
        FREE(uiw__xdr_READDIRPLUS3res, &r);
        if (eof)
            break;
    }
    CHECK(calls > 1);
    CHECK_EQ(dots, 2);
    for (int i = 0; i < nnames; i++)
        if (!seen[i])
            uiw_test_fail(__FILE__, __LINE__, "READDIRPLUS: \"%s\" missing", names[i]);
    env_stop(&e);
}

/* A size FSSTAT gives against statfs of the export: equal for what does not change, and
 * within what other processes on the machine may have written meanwhile for what does. */
static void near(const char *what, uint64_t got, uint64_t want, uint64_t slack)
{
    uint64_t d = got > want ? got - want : want - got;
    if (d > slack)
        uiw_test_fail(__FILE__, __LINE__, "FSSTAT %s %llu, statfs %llu", what,
                      (unsigned long long)got, (unsigned long long)want);
}

/* FSSTAT against statfs(2) of the export, its attributes against lstat; FSINFO's and
 * PATHCONF's attributes. */
TEST(ondisk_fsstat_fsinfo_pathconf)
{
    struct env e;
    env_start(&e);
    FSSTAT3args fa;
    FSSTAT3res fr;
    fh3(&fa.fsroot, root(&e));
    CALL(&e, NFSPROC3_FSSTAT, xdr_FSSTAT3args, &fa, xdr_FSSTAT3res, &fr);
    CHECK_EQ(fr.status, NFS3_OK);
    struct statfs sf;
    CHECK_EQ(statfs(e.v.dir, &sf), 0);
    const FSSTAT3resok *ok = &fr.FSSTAT3res_u.resok;
    uint64_t bs = (uint64_t)sf.f_bsize;
    CHECK_EQ(ok->tbytes, (uint64_t)sf.f_blocks * bs);
    CHECK_EQ(ok->tfiles, (uint64_t)sf.f_files);
    near("fbytes", ok->fbytes, (uint64_t)sf.f_bfree * bs, 1ull << 30);
    near("abytes", ok->abytes, (uint64_t)sf.f_bavail * bs, 1ull << 30);
    near("ffiles", ok->ffiles, (uint64_t)sf.f_ffree, 100000);
    near("afiles", ok->afiles, (uint64_t)sf.f_ffree, 100000);
    CHECK(ok->abytes <= ok->fbytes && ok->fbytes <= ok->tbytes);
    CHECK(ok->ffiles <= ok->tfiles);
    CHECK_POSTOP_PATH("FSSTAT", &ok->obj_attributes, e.v.dir);
    FREE(xdr_FSSTAT3res, &fr);

    FSINFO3args ia;
    FSINFO3res ir;
    fh3(&ia.fsroot, root(&e));
    CALL(&e, NFSPROC3_FSINFO, xdr_FSINFO3args, &ia, xdr_FSINFO3res, &ir);
    CHECK_EQ(ir.status, NFS3_OK);
    CHECK_POSTOP_PATH("FSINFO", &ir.FSINFO3res_u.resok.obj_attributes, e.v.dir);
    FREE(xdr_FSINFO3res, &ir);

    PATHCONF3args pa;
    PATHCONF3res pr;
    fh3(&pa.object, root(&e));
    CALL(&e, NFSPROC3_PATHCONF, xdr_PATHCONF3args, &pa, xdr_PATHCONF3res, &pr);
    CHECK_EQ(pr.status, NFS3_OK);
    CHECK_POSTOP_PATH("PATHCONF", &pr.PATHCONF3res_u.resok.obj_attributes, e.v.dir);
    CHECK_EQ(pr.PATHCONF3res_u.resok.name_max, pathconf(e.v.dir, _PC_NAME_MAX));
    CHECK_EQ(pr.PATHCONF3res_u.resok.linkmax, pathconf(e.v.dir, _PC_LINK_MAX));
    FREE(xdr_PATHCONF3res, &pr);
    env_stop(&e);
}
