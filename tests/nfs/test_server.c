/* uiw-nfsd's procedures on loopback TCP, through the client library and raw calls. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nfs/client.h"
#include "nfs/server.h"
#include "nfs/xdr_data.h"
#include "mount3.h"
#include "nfs_util.h"
#include "test.h"

static const struct uiw__nfs_fh *root(struct uiw__nfs_client *c)
{
    return uiw__nfs_client_root(c);
}

static void fh3(nfs_fh3 *out, const struct uiw__nfs_fh *fh)
{
    out->data.data_len = fh->len;
    out->data.data_val = (char *)fh->data;
}

static int getattr_status(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh)
{
    fattr3 a;
    return uiw__nfs_getattr(c, fh, &a);
}

/* NFSv3 ACCESS of `want` on the file f, as c's caller (its attributes must follow). */
static uint32_t access3_fh(struct uiw__nfs_client *c, const struct uiw__nfs_fh *f, uint32_t want)
{
    ACCESS3args aa;
    ACCESS3res ar;
    fh3(&aa.object, f);
    aa.access = want;
    memset(&ar, 0, sizeof(ar));
    CHECK_EQ(uiw__nfs_call(c, NFSPROC3_ACCESS, UIW__XDRPROC(xdr_ACCESS3args), &aa,
                           UIW__XDRPROC(xdr_ACCESS3res), &ar),
             0);
    CHECK_EQ(ar.status, NFS3_OK);
    CHECK(ar.ACCESS3res_u.resok.obj_attributes.attributes_follow);
    return ar.ACCESS3res_u.resok.access;
}

/* A handle of export 0 of v's server for the file at `path` (anywhere), as the server
 * would make it: with the kernel's handle of it, or (tag_only) its generation tag only. */
static void forge(const struct srv *v, const char *path, int tag_only, struct uiw__nfs_fh *out)
{
    int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    CHECK(fd >= 0);
    struct uiw__nfsd_fh f;
    CHECK_EQ(uiw__nfs_fh_of(v->s, &v->s->exports[0], fd, &f), 0);
    close(fd);
    if (tag_only)
        f.klen = 0;
    nfs_fh3 h;
    char buf[UIW__NFS_FH_MAX];
    uiw__nfs_fh_encode(&f, &h, buf);
    out->len = h.data.data_len;
    memcpy(out->data, buf, out->len);
}

TEST(procedures)
{
    struct srv v;
    srv_start(&v, NULL);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    CHECK_EQ(uiw__nfs_client_rtmax(c), 1 << 20);
    CHECK_EQ(uiw__nfs_client_wtmax(c), 1 << 20);
    CHECK_EQ(
        uiw__nfs_call(c, NFSPROC3_NULL, UIW__XDRPROC(xdr_void), NULL, UIW__XDRPROC(xdr_void), NULL),
        0);

    struct uiw__nfs_fh d, f, f2;
    fattr3 a;
    CHECK_EQ(uiw__nfs_mkdir(c, root(c), "dir", 0750, &d), 0);
    struct stat st;
    CHECK_EQ(stat(path_in(&v, "dir"), &st), 0);
    CHECK(S_ISDIR(st.st_mode));
    CHECK_EQ(st.st_mode & 07777, 0750);
    CHECK_EQ(uiw__nfs_mkdir(c, root(c), "dir", 0750, NULL), -NFS3ERR_EXIST);

    /* CREATE, WRITE in the three stabilities, COMMIT: one verifier. */
    CHECK_EQ(uiw__nfs_create(c, &d, "f", 0640, 0, &f), 0);
    char buf[200000], back[200000], v1[8], v2[8], v3[8], v4[8];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (char)(i * 31 + 7);
    CHECK_EQ(uiw__nfs_write(c, &f, 0, 100000, buf, UNSTABLE, v1), 100000);
    CHECK_EQ(uiw__nfs_write(c, &f, 100000, 50000, buf + 100000, DATA_SYNC, v2), 50000);
    CHECK_EQ(uiw__nfs_write(c, &f, 150000, 50000, buf + 150000, FILE_SYNC, v3), 50000);
    CHECK_EQ(uiw__nfs_commit(c, &f, v4), 0);
    CHECK_MEM(v1, v2, 8);
    CHECK_MEM(v1, v3, 8);
    CHECK_MEM(v1, v4, 8);
    CHECK_EQ(uiw__nfs_getattr(c, &f, &a), 0);
    CHECK_EQ(a.type, NF3REG);
    CHECK_EQ(a.size, 200000);
    CHECK_EQ(a.mode, 0640);
    CHECK_FATTR_PATH("GETATTR", &a, path_in(&v, "dir/f"));
    int eof = 0;
    CHECK_EQ(uiw__nfs_read(c, &f, 0, 150000, back, &eof), 150000);
    CHECK_EQ(eof, 0);
    CHECK_EQ(uiw__nfs_read(c, &f, 150000, 100000, back + 150000, &eof), 50000);
    CHECK_EQ(eof, 1);
    CHECK_MEM(back, buf, sizeof(buf));
    CHECK_EQ(uiw__nfs_read(c, &f, 500000, 10, back, &eof), 0);
    CHECK_EQ(eof, 1);

    /* SETATTR: size and mode, seen by the local file system. */
    CHECK_EQ(uiw__nfs_truncate(c, &f, 1234), 0);
    CHECK_EQ(uiw__nfs_chmod(c, &f, 0604), 0);
    CHECK_EQ(stat(path_in(&v, "dir/f"), &st), 0);
    CHECK_EQ(st.st_size, 1234);
    CHECK_EQ(st.st_mode & 07777, 0604);

    /* LOOKUP, ACCESS. */
    CHECK_EQ(uiw__nfs_lookup_path(c, "dir/f", &f2, &a), 0);
    CHECK_FATTR_PATH("LOOKUP", &a, path_in(&v, "dir/f"));
    CHECK_EQ(f2.len, f.len);
    CHECK_MEM(f2.data, f.data, f.len);
    CHECK_EQ(uiw__nfs_lookup(c, &d, "nope", &f2, NULL), -NFS3ERR_NOENT);
    CHECK_EQ(access3_fh(c, &f, ACCESS3_READ | ACCESS3_MODIFY | ACCESS3_EXECUTE),
             ACCESS3_READ | ACCESS3_MODIFY); /* 0604: no x */

    /* SYMLINK and READLINK. */
    SYMLINK3args sa;
    SYMLINK3res sr;
    memset(&sa, 0, sizeof(sa));
    fh3(&sa.where.dir, &d);
    sa.where.name = "ln";
    sa.symlink.symlink_data = "f";
    memset(&sr, 0, sizeof(sr));
    CHECK_EQ(uiw__nfs_call(c, NFSPROC3_SYMLINK, UIW__XDRPROC(xdr_SYMLINK3args), &sa,
                           UIW__XDRPROC(xdr_SYMLINK3res), &sr),
             0);
    CHECK_EQ(sr.status, NFS3_OK);
    CHECK(sr.SYMLINK3res_u.resok.obj.handle_follows);
    READLINK3args la;
    READLINK3res lr;
    la.symlink = sr.SYMLINK3res_u.resok.obj.post_op_fh3_u.handle;
    memset(&lr, 0, sizeof(lr));
    CHECK_EQ(uiw__nfs_call(c, NFSPROC3_READLINK, UIW__XDRPROC(xdr_READLINK3args), &la,
                           UIW__XDRPROC(xdr_READLINK3res), &lr),
             0);
    CHECK_EQ(lr.status, NFS3_OK);
    CHECK_STR(lr.READLINK3res_u.resok.data, "f");
    xdr_free(UIW__XDRPROC(xdr_READLINK3res), (caddr_t)&lr);
    xdr_free(UIW__XDRPROC(xdr_SYMLINK3res), (caddr_t)&sr);

    /* LINK, RENAME, REMOVE, RMDIR. */
    LINK3args ka;
    LINK3res kr;
    fh3(&ka.file, &f);
    fh3(&ka.link.dir, root(c));
    ka.link.name = "hard";
    memset(&kr, 0, sizeof(kr));
    CHECK_EQ(uiw__nfs_call(c, NFSPROC3_LINK, UIW__XDRPROC(xdr_LINK3args), &ka,
                           UIW__XDRPROC(xdr_LINK3res), &kr),
             0);
    CHECK_EQ(kr.status, NFS3_OK);
    CHECK_EQ(kr.LINK3res_u.resok.file_attributes.post_op_attr_u.attributes.nlink, 2);
    CHECK_POSTOP_PATH("LINK", &kr.LINK3res_u.resok.file_attributes, path_in(&v, "hard"));
    CHECK_EQ(uiw__nfs_rename(c, root(c), "hard", &d, "moved"), 0);
    CHECK_EQ(access(path_in(&v, "dir/moved"), F_OK), 0);
    CHECK_EQ(access(path_in(&v, "hard"), F_OK), -1);
    CHECK_EQ(uiw__nfs_rmdir(c, root(c), "dir"), -NFS3ERR_NOTEMPTY);
    CHECK_EQ(uiw__nfs_remove(c, &d, "moved"), 0);
    CHECK_EQ(uiw__nfs_remove(c, &d, "ln"), 0);
    CHECK_EQ(uiw__nfs_remove(c, &d, "f"), 0);
    CHECK_EQ(uiw__nfs_remove(c, root(c), "dir"), -NFS3ERR_ISDIR);
    CHECK_EQ(uiw__nfs_rmdir(c, root(c), "dir"), 0);
    CHECK_EQ(access(path_in(&v, "dir"), F_OK), -1);

    /* MKNOD: a FIFO; an unknown type is NFS3ERR_BADTYPE. */
    MKNOD3args ma;
    MKNOD3res mr;
    memset(&ma, 0, sizeof(ma));
    fh3(&ma.where.dir, root(c));
    ma.where.name = "fifo";
    ma.what.type = NF3FIFO;
    memset(&mr, 0, sizeof(mr));
    CHECK_EQ(uiw__nfs_call(c, NFSPROC3_MKNOD, UIW__XDRPROC(xdr_MKNOD3args), &ma,
                           UIW__XDRPROC(xdr_MKNOD3res), &mr),
             0);
    CHECK_EQ(mr.status, NFS3_OK);
    xdr_free(UIW__XDRPROC(xdr_MKNOD3res), (caddr_t)&mr);
    CHECK_EQ(lstat(path_in(&v, "fifo"), &st), 0);
    CHECK(S_ISFIFO(st.st_mode));
    ma.where.name = "odd";
    ma.what.type = NF3DIR;
    memset(&mr, 0, sizeof(mr));
    CHECK_EQ(uiw__nfs_call(c, NFSPROC3_MKNOD, UIW__XDRPROC(xdr_MKNOD3args), &ma,
                           UIW__XDRPROC(xdr_MKNOD3res), &mr),
             0);
    CHECK_EQ(mr.status, NFS3ERR_BADTYPE);

    /* FSSTAT, PATHCONF. */
    FSSTAT3args fa;
    FSSTAT3res fr;
    fh3(&fa.fsroot, root(c));
    memset(&fr, 0, sizeof(fr));
    CHECK_EQ(uiw__nfs_call(c, NFSPROC3_FSSTAT, UIW__XDRPROC(xdr_FSSTAT3args), &fa,
                           UIW__XDRPROC(xdr_FSSTAT3res), &fr),
             0);
    CHECK_EQ(fr.status, NFS3_OK);
    CHECK_POSTOP_PATH("FSSTAT", &fr.FSSTAT3res_u.resok.obj_attributes, v.dir);
    CHECK(fr.FSSTAT3res_u.resok.tbytes > 0);
    CHECK(fr.FSSTAT3res_u.resok.fbytes <= fr.FSSTAT3res_u.resok.tbytes);
    PATHCONF3args pa;
    PATHCONF3res pr;
    fh3(&pa.object, root(c));
    memset(&pr, 0, sizeof(pr));
    CHECK_EQ(uiw__nfs_call(c, NFSPROC3_PATHCONF, UIW__XDRPROC(xdr_PATHCONF3args), &pa,
                           UIW__XDRPROC(xdr_PATHCONF3res), &pr),
             0);
    CHECK_EQ(pr.status, NFS3_OK);
    CHECK_EQ(pr.PATHCONF3res_u.resok.name_max, 255);
    CHECK(pr.PATHCONF3res_u.resok.no_trunc);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* RFC 1813 section 3.2: empty names and names with '/' get NFS3ERR_ACCES, over-long ones
 * NFS3ERR_NAMETOOLONG, in every procedure that takes a name. */
TEST(names)
{
    struct srv v;
    srv_start(&v, NULL);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    char longname[300];
    memset(longname, 'x', sizeof(longname));
    longname[256] = 0;
    struct uiw__nfs_fh fh;
    char escape[64];
    snprintf(escape, sizeof(escape), "../uiw-planted-%d", (int)getpid());
    const char *bad[] = {"", "a/b", "/", escape};
    for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK_EQ(uiw__nfs_lookup(c, root(c), bad[i], &fh, NULL), -NFS3ERR_ACCES);
        CHECK_EQ(uiw__nfs_create(c, root(c), bad[i], 0644, 0, &fh), -NFS3ERR_ACCES);
        CHECK_EQ(uiw__nfs_mkdir(c, root(c), bad[i], 0755, &fh), -NFS3ERR_ACCES);
        CHECK_EQ(uiw__nfs_remove(c, root(c), bad[i]), -NFS3ERR_ACCES);
        CHECK_EQ(uiw__nfs_rmdir(c, root(c), bad[i]), -NFS3ERR_ACCES);
        CHECK_EQ(uiw__nfs_rename(c, root(c), bad[i], root(c), "y"), -NFS3ERR_ACCES);
    }
    CHECK_EQ(uiw__nfs_lookup(c, root(c), longname, &fh, NULL), -NFS3ERR_NAMETOOLONG);
    CHECK_EQ(uiw__nfs_create(c, root(c), longname, 0644, 0, &fh), -NFS3ERR_NAMETOOLONG);
    CHECK_EQ(uiw__nfs_mkdir(c, root(c), longname, 0755, &fh), -NFS3ERR_NAMETOOLONG);
    longname[255] = 0; /* NAME_MAX exactly: fine */
    CHECK_EQ(uiw__nfs_create(c, root(c), longname, 0644, 0, &fh), 0);
    CHECK_EQ(uiw__nfs_remove(c, root(c), longname), 0);
    /* Nothing was made outside the export by "../uiw-planted-PID". */
    char out[600];
    snprintf(out, sizeof(out), "%s/%s", v.dir, escape);
    CHECK_EQ(access(out, F_OK), -1);
    /* "." and ".." cannot be made or removed. */
    CHECK_EQ(uiw__nfs_create(c, root(c), ".", 0644, 0, &fh), -NFS3ERR_EXIST);
    CHECK_EQ(uiw__nfs_mkdir(c, root(c), "..", 0755, &fh), -NFS3ERR_EXIST);
    CHECK_EQ(uiw__nfs_rmdir(c, root(c), ".."), -NFS3ERR_NOTEMPTY);
    CHECK_EQ(uiw__nfs_remove(c, root(c), "."), -NFS3ERR_INVAL);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* `..` of the export's root is the root; symbolic links are returned, never followed. */
TEST(confinement)
{
    struct srv v;
    srv_start(&v, NULL);
    CHECK_EQ(mkdir(path_in(&v, "sub"), 0755), 0);
    CHECK_EQ(symlink("/etc", path_in(&v, "etc")), 0);
    CHECK_EQ(symlink("/etc/passwd", path_in(&v, "pw")), 0);
    CHECK_EQ(symlink("..", path_in(&v, "up")), 0);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    struct uiw__nfs_fh fh, sub, ln;
    fattr3 a, ra;
    CHECK_EQ(uiw__nfs_getattr(c, root(c), &ra), 0);
    CHECK_EQ(uiw__nfs_lookup(c, root(c), "..", &fh, &a), 0);
    CHECK_EQ(a.fileid, ra.fileid);
    CHECK_EQ(fh.len, root(c)->len);
    CHECK_MEM(fh.data, root(c)->data, fh.len);
    CHECK_EQ(uiw__nfs_lookup(c, root(c), "sub", &sub, NULL), 0);
    CHECK_EQ(uiw__nfs_lookup(c, &sub, "..", &fh, &a), 0);
    CHECK_EQ(a.fileid, ra.fileid);
    CHECK_EQ(uiw__nfs_lookup(c, &fh, "..", &fh, &a), 0);
    CHECK_EQ(a.fileid, ra.fileid);
    /* A link to a directory outside: it is a link, and nothing goes through it. */
    CHECK_EQ(uiw__nfs_lookup(c, root(c), "etc", &ln, &a), 0);
    CHECK_EQ(a.type, NF3LNK);
    CHECK_EQ(uiw__nfs_lookup(c, &ln, "passwd", &fh, NULL), -NFS3ERR_NOTDIR);
    CHECK_EQ(uiw__nfs_create(c, &ln, "planted", 0644, 0, &fh), -NFS3ERR_NOTDIR);
    CHECK_EQ(access("/etc/planted", F_OK), -1);
    struct uiw__nfs_fh up;
    CHECK_EQ(uiw__nfs_lookup(c, root(c), "up", &up, &a), 0);
    CHECK_EQ(a.type, NF3LNK);
    CHECK_EQ(uiw__nfs_mkdir(c, &up, "planted", 0755, &fh), -NFS3ERR_NOTDIR);
    /* A link to a file outside: not read, not truncated, not written through. */
    struct stat before, after;
    CHECK_EQ(stat("/etc/passwd", &before), 0);
    CHECK_EQ(uiw__nfs_lookup(c, root(c), "pw", &ln, &a), 0);
    CHECK_EQ(a.type, NF3LNK);
    char buf[64];
    int eof;
    CHECK_EQ(uiw__nfs_read(c, &ln, 0, sizeof(buf), buf, &eof), -NFS3ERR_INVAL);
    CHECK_EQ(uiw__nfs_write(c, &ln, 0, 4, "evil", FILE_SYNC, NULL), -NFS3ERR_INVAL);
    CHECK_EQ(uiw__nfs_truncate(c, &ln, 0), -NFS3ERR_INVAL);
    CHECK_EQ(stat("/etc/passwd", &after), 0);
    CHECK_EQ(after.st_size, before.st_size);
    CHECK_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
    CHECK_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* Handles: a removed file is STALE, also once its inode number is reused; handles that
 * are not ours are BADHANDLE; one of ours naming a file outside the export is STALE. */
TEST(handles)
{
    struct srv v;
    srv_start(&v, NULL);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    struct uiw__nfs_fh a, b;
    fattr3 fa, fb;
    put_file(&v, "a", "hello", 5);
    CHECK_EQ(uiw__nfs_lookup(c, root(c), "a", &a, &fa), 0);
    CHECK_EQ(unlink(path_in(&v, "a")), 0);
    CHECK_EQ(getattr_status(c, &a), -NFS3ERR_STALE);
    /* Make files until one reuses a's inode number (file systems reuse them at once). */
    int reused = 0;
    for (int i = 0; i < 200 && !reused; i++) {
        char name[32];
        snprintf(name, sizeof(name), "n%d", i);
        put_file(&v, name, "other", 5);
        struct stat st;
        CHECK_EQ(stat(path_in(&v, name), &st), 0);
        if ((uint64_t)st.st_ino == fa.fileid) {
            reused = 1;
            CHECK_EQ(uiw__nfs_lookup(c, root(c), name, &b, &fb), 0);
            CHECK_EQ(fb.fileid, fa.fileid);
            CHECK(memcmp(a.data, b.data, a.len) != 0);
        }
    }
    CHECK_EQ(getattr_status(c, &a), -NFS3ERR_STALE);
    char buf[8];
    int eof;
    CHECK_EQ(uiw__nfs_read(c, &a, 0, sizeof(buf), buf, &eof), -NFS3ERR_STALE);

    /* Not ours. */
    struct uiw__nfs_fh bad;
    memset(&bad, 0, sizeof(bad));
    bad.len = 0;
    CHECK_EQ(getattr_status(c, &bad), -NFS3ERR_BADHANDLE);
    bad.len = 12;
    CHECK_EQ(getattr_status(c, &bad), -NFS3ERR_BADHANDLE);
    bad = *root(c);
    bad.data[0] ^= 0xff;
    CHECK_EQ(getattr_status(c, &bad), -NFS3ERR_BADHANDLE);
    bad = *root(c);
    bad.len = 64;
    CHECK_EQ(getattr_status(c, &bad), -NFS3ERR_BADHANDLE);
    /* Ours in form, naming a file outside the export (with its true kernel handle and
     * tag, as the server would make them, and with only its tag): STALE. */
    struct uiw__nfs_fh forged;
    forge(&v, "/etc/passwd", 0, &forged);
    CHECK_EQ(getattr_status(c, &forged), -NFS3ERR_STALE);
    forge(&v, "/etc/passwd", 1, &forged);
    CHECK_EQ(getattr_status(c, &forged), -NFS3ERR_STALE);
    /* Also for the export's parent directory. */
    char parent[300];
    snprintf(parent, sizeof(parent), "%s/..", v.dir);
    forge(&v, parent, 1, &forged);
    CHECK_EQ(getattr_status(c, &forged), -NFS3ERR_STALE);
    forge(&v, parent, 0, &forged);
    CHECK_EQ(getattr_status(c, &forged), -NFS3ERR_STALE);
    struct uiw__nfs_fh x;
    CHECK_EQ(uiw__nfs_create(c, &forged, "planted", 0644, 0, &x), -NFS3ERR_STALE);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* Handles stay valid across a server restart and a rename (found again by search). */
TEST(handles_survive_restart)
{
    struct srv v;
    srv_start(&v, NULL);
    CHECK_EQ(mkdir(path_in(&v, "d1"), 0755), 0);
    CHECK_EQ(mkdir(path_in(&v, "d1/d2"), 0755), 0);
    put_file(&v, "d1/d2/f", "0123456789", 10);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    struct uiw__nfs_fh f;
    CHECK_EQ(uiw__nfs_lookup_path(c, "d1/d2/f", &f, NULL), 0);
    uiw__nfs_client_close(c);
    /* A new server on the same directory. */
    uiw__nfsd_destroy(v.s);
    struct srv w = v;
    struct uiw__nfsd_opts o;
    srv_opts_v3(&o);
    o.addr = "127.0.0.1";
    o.tcp_port = o.mount_port = 0;
    o.rdma_port = -1;
    w.s = uiw__nfsd_create(&o);
    CHECK(w.s != NULL);
    CHECK_EQ(uiw__nfsd_add_export(w.s, v.dir), 0);
    CHECK_EQ(uiw__nfsd_start(w.s), 0);
    w.tcp = uiw__nfsd_port(w.s, UIW__NFSD_TCP);
    w.mount = uiw__nfsd_port(w.s, UIW__NFSD_MOUNT);
    snprintf(w.url, sizeof(w.url), "nfs://127.0.0.1:%d%s?mountport=%d", w.tcp, w.dir, w.mount);
    char from[600], to[600];
    snprintf(from, sizeof(from), "%s/d1/d2", w.dir);
    snprintf(to, sizeof(to), "%s/d1/d3", w.dir);
    CHECK_EQ(rename(from, to), 0);
    c = srv_client(&w, 0, 0);
    char buf[16];
    int eof;
    CHECK_EQ(uiw__nfs_read(c, &f, 0, sizeof(buf), buf, &eof), 10);
    CHECK_MEM(buf, "0123456789", 10);
    uiw__nfs_client_close(c);
    srv_stop(&w);
}

/* The server keeps at most max_handles records: past that the least recently used go,
 * and their handles still work (found again by the export's search, in subdirectories
 * too), or are STALE once their files are gone. */
TEST(handles_bounded)
{
    struct srv v;
    struct uiw__nfsd_opts o;
    srv_opts_v3(&o);
    o.no_root_squash = 1;
    o.max_handles = 16;
    srv_start(&v, &o);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    enum { N = 100 };
    static struct uiw__nfs_fh fh[N];
    struct uiw__nfs_fh sub;
    CHECK_EQ(uiw__nfs_mkdir(c, root(c), "sub", 0755, &sub), 0);
    for (int i = 0; i < N; i++) {
        char name[32], data[8];
        snprintf(name, sizeof(name), "f%d", i);
        memset(data, 'a', sizeof(data));
        CHECK_EQ(uiw__nfs_create(c, i % 2 ? &sub : root(c), name, 0644, 0, &fh[i]), 0);
        /* Each file as long as its number mod 8, to tell them apart. */
        CHECK_EQ(uiw__nfs_write(c, &fh[i], 0, (uint32_t)(i % 8), data, FILE_SYNC, NULL), i % 8);
        CHECK(uiw__nfs_fhcache_count(v.s->fhcache) <= 16);
    }
    /* Every handle names its own file, the first ones long since dropped. */
    for (int i = 0; i < N; i++) {
        fattr3 a;
        CHECK_EQ(uiw__nfs_getattr(c, &fh[i], &a), 0);
        CHECK_EQ(a.size, (uint64_t)(i % 8));
        CHECK(uiw__nfs_fhcache_count(v.s->fhcache) <= 16);
    }
    /* A file removed behind the server's back after its record went: STALE. */
    CHECK_EQ(unlink(path_in(&v, "sub/f1")), 0);
    for (int i = 2; i < N; i++) { /* push f1's record out */
        fattr3 a;
        CHECK_EQ(uiw__nfs_getattr(c, &fh[i], &a), 0);
    }
    CHECK_EQ(getattr_status(c, &fh[1]), -NFS3ERR_STALE);
    /* One moved into another directory meanwhile: found there. */
    char from[1024];
    snprintf(from, sizeof(from), "%s", path_in(&v, "f0")); /* path_in's buffer is static */
    CHECK_EQ(rename(from, path_in(&v, "sub/moved")), 0);
    char buf[8];
    int eof;
    CHECK_EQ(uiw__nfs_read(c, &fh[0], 0, sizeof(buf), buf, &eof), 0);
    CHECK_EQ(uiw__nfs_write(c, &fh[0], 0, 3, "xyz", FILE_SYNC, NULL), 3);
    struct stat st;
    CHECK_EQ(stat(path_in(&v, "sub/moved"), &st), 0);
    CHECK_EQ(st.st_size, 3);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

static void *volatile pool_sink;

/* Large buffers trimmed from the pool go back to the system wherever they lay. Taken
 * from malloc, they did not once a block that size had been freed (glibc then serves
 * such sizes from its arenas), and those below a live block stayed resident: uiw-nfsd's
 * RSS rose by a megabyte a minute in the soak. */
TEST(pool_trim_gives_large_buffers_back)
{
    enum { N = 16 };
    const size_t cap = (size_t)1 << 20, big = (size_t)4 << 20;
    pool_sink = malloc(big); /* freed, it raises malloc's threshold for mapping apart */
    CHECK(pool_sink != NULL);
    memset(pool_sink, 1, big);
    free(pool_sink);
    struct uiw__nfs_pool *p = uiw__nfs_pool_create(cap, N);
    CHECK(p != NULL);
    struct uiw__nfs_buf *b[N];
    for (int i = 0; i < N; i++) {
        b[i] = uiw__nfs_pool_large(p);
        CHECK(b[i] != NULL);
        CHECK(b[i]->large && b[i]->cap >= cap);
        memset(b[i]->data, i + 1, b[i]->cap);
    }
    CHECK(uiw__nfs_pool_large(p) == NULL); /* at most N */
    pool_sink = malloc(256 << 10);         /* a block above them, as a server has */
    CHECK(pool_sink != NULL);
    memset(pool_sink, 2, 256 << 10);
    long full = rss_kib(getpid());
    for (int i = 0; i < N; i++)
        uiw__nfs_pool_put(p, b[i]);
    CHECK_EQ(uiw__nfs_pool_large_taken(p), 0u);
    size_t one = uiw__nfs_pool_bytes(p) / N;
    CHECK(one >= cap);
    uiw__nfs_pool_trim(p); /* all N were used since the last trim: kept */
    CHECK_EQ(uiw__nfs_pool_bytes(p), N * one);
    uiw__nfs_pool_trim(p); /* none used since: one kept */
    CHECK_EQ(uiw__nfs_pool_bytes(p), one);
    long trimmed = rss_kib(getpid());
    printf("RSS with %d large buffers %ld KiB, trimmed to one %ld KiB\n", N, full, trimmed);
    CHECK(!RSS_JUDGED || full - trimmed >= (long)((N - 1) * cap / 1024) * 3 / 4);
    struct uiw__nfs_buf *again = uiw__nfs_pool_large(p);
    CHECK(again != NULL && again->cap >= cap);
    memset(again->data, 3, again->cap);
    uiw__nfs_pool_put(p, again);
    free(pool_sink);
    uiw__nfs_pool_destroy(p);
}

/* A file removed by a client leaves no record behind: a server whose clients make and
 * remove files all day keeps its memory (the soak's RSS rose with every file made). A
 * file with another name left keeps its record, and its handle works. */
TEST(handles_removed_leave_no_record)
{
    struct srv v;
    srv_start(&v, NULL);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    struct uiw__nfs_fh d, f, kept;
    CHECK_EQ(uiw__nfs_mkdir(c, root(c), "d", 0755, &d), 0);
    unsigned base = uiw__nfs_fhcache_count(v.s->fhcache);
    enum { N = 200 };
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof(name), "f%d", i);
        CHECK_EQ(uiw__nfs_create(c, &d, name, 0644, 0, &f), 0);
        CHECK_EQ(uiw__nfs_write(c, &f, 0, 3, "abc", FILE_SYNC, NULL), 3);
        fattr3 a;
        CHECK_EQ(uiw__nfs_getattr(c, &f, &a), 0); /* through the record */
    }
    CHECK(uiw__nfs_fhcache_count(v.s->fhcache) >= base + N);
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof(name), "f%d", i);
        CHECK_EQ(uiw__nfs_remove(c, &d, name), 0);
    }
    CHECK(uiw__nfs_fhcache_count(v.s->fhcache) <= base);
    /* two names, one removed: the record and the handle stay */
    CHECK_EQ(uiw__nfs_create(c, &d, "two", 0644, 0, &kept), 0);
    CHECK_EQ(uiw__nfs_write(c, &kept, 0, 2, "xy", FILE_SYNC, NULL), 2);
    char from[1024];
    snprintf(from, sizeof(from), "%s", path_in(&v, "d/two")); /* path_in's buffer is static */
    CHECK_EQ(link(from, path_in(&v, "d/other")), 0);
    unsigned with = uiw__nfs_fhcache_count(v.s->fhcache);
    CHECK_EQ(uiw__nfs_remove(c, &d, "two"), 0);
    CHECK_EQ(uiw__nfs_fhcache_count(v.s->fhcache), with);
    fattr3 a;
    CHECK_EQ(uiw__nfs_getattr(c, &kept, &a), 0);
    CHECK_EQ(a.size, 2u);
    CHECK_EQ(uiw__nfs_remove(c, &d, "other"), 0);
    CHECK_EQ(getattr_status(c, &kept), -NFS3ERR_STALE);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

TEST(create_modes)
{
    struct srv v;
    srv_start(&v, NULL);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    struct uiw__nfs_fh f;
    CHECK_EQ(uiw__nfs_create(c, root(c), "g", 0644, 1, &f), 0);
    CHECK_EQ(uiw__nfs_create(c, root(c), "g", 0644, 1, &f), -NFS3ERR_EXIST);
    CHECK_EQ(uiw__nfs_write(c, &f, 0, 3, "abc", FILE_SYNC, NULL), 3);
    /* the mode asked, whether or not the server's umask took bits from it */
    mode_t umask_was = umask(027);
    const mode_t modes[] = {0666, 0640, 0604, 04750};
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        char name[16];
        snprintf(name, sizeof(name), "m%zu", i);
        struct uiw__nfs_fh m;
        CHECK_EQ(uiw__nfs_create(c, root(c), name, modes[i], 1, &m), 0);
        struct stat sb;
        CHECK_EQ(stat(path_in(&v, name), &sb), 0);
        CHECK_EQ(sb.st_mode & 07777, modes[i]);
        CHECK_EQ(sb.st_size, 0);
    }
    umask(umask_was);
    CHECK_EQ(uiw__nfs_create(c, root(c), "g", 0644, 0, &f), 0); /* UNCHECKED: fine */
    /* EXCLUSIVE: a retransmission (same verifier) succeeds with the same file, another
     * verifier gets NFS3ERR_EXIST. */
    CREATE3args a;
    CREATE3res r;
    memset(&a, 0, sizeof(a));
    fh3(&a.where.dir, root(c));
    a.where.name = "x";
    a.how.mode = EXCLUSIVE;
    memcpy(a.how.createhow3_u.verf, "\x11\x22\x33\x44\x55\x66\x77\x01", 8);
    fattr3 first;
    for (int i = 0; i < 2; i++) {
        memset(&r, 0, sizeof(r));
        CHECK_EQ(uiw__nfs_call(c, NFSPROC3_CREATE, UIW__XDRPROC(xdr_CREATE3args), &a,
                               UIW__XDRPROC(xdr_CREATE3res), &r),
                 0);
        CHECK_EQ(r.status, NFS3_OK);
        CHECK(r.CREATE3res_u.resok.obj_attributes.attributes_follow);
        fattr3 *fa = &r.CREATE3res_u.resok.obj_attributes.post_op_attr_u.attributes;
        if (i == 0)
            first = *fa;
        else
            CHECK_EQ(fa->fileid, first.fileid);
        xdr_free(UIW__XDRPROC(xdr_CREATE3res), (caddr_t)&r);
    }
    a.how.createhow3_u.verf[7] = 2;
    memset(&r, 0, sizeof(r));
    CHECK_EQ(uiw__nfs_call(c, NFSPROC3_CREATE, UIW__XDRPROC(xdr_CREATE3args), &a,
                           UIW__XDRPROC(xdr_CREATE3res), &r),
             0);
    CHECK_EQ(r.status, NFS3ERR_EXIST);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

static int count_ent(void *arg, const char *name, uint64_t fileid, const fattr3 *attr,
                     const struct uiw__nfs_fh *fh)
{
    (void)fileid;
    int *seen = arg;
    CHECK(attr != NULL);
    CHECK(fh != NULL);
    if (name[0] == 'e') {
        int i = atoi(name + 1);
        CHECK(i >= 0 && i < 1000);
        CHECK_EQ(seen[i], 0);
        seen[i] = 1;
        CHECK_EQ(attr->type, NF3REG);
    }
    return 0;
}

/* READDIR in small pieces: every entry once, cookies and the verifier carried over; a
 * wrong verifier is NFS3ERR_BAD_COOKIE; a count too small for one entry TOOSMALL. */
TEST(readdir_cookies)
{
    struct srv v;
    srv_start(&v, NULL);
    for (int i = 0; i < 1000; i++) {
        char n[16];
        snprintf(n, sizeof(n), "e%d", i);
        put_file(&v, n, "", 0);
    }
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    static int seen[1000];
    memset(seen, 0, sizeof(seen));
    READDIR3args a;
    memset(&a, 0, sizeof(a));
    fh3(&a.dir, root(c));
    a.count = 1024;
    int calls = 0, dots = 0;
    cookieverf3 verf;
    for (;;) {
        READDIR3res r;
        memset(&r, 0, sizeof(r));
        CHECK_EQ(uiw__nfs_call(c, NFSPROC3_READDIR, UIW__XDRPROC(xdr_READDIR3args), &a,
                               UIW__XDRPROC(uiw__xdr_READDIR3res), &r),
                 0);
        CHECK_EQ(r.status, NFS3_OK);
        calls++;
        for (entry3 *e = r.READDIR3res_u.resok.reply.entries; e; e = e->nextentry) {
            if (e->name[0] == 'e') {
                int i = atoi(e->name + 1);
                CHECK_EQ(seen[i], 0);
                seen[i] = 1;
            } else {
                dots++;
            }
            a.cookie = e->cookie;
        }
        memcpy(a.cookieverf, r.READDIR3res_u.resok.cookieverf, sizeof(verf));
        memcpy(verf, r.READDIR3res_u.resok.cookieverf, sizeof(verf));
        int eof = r.READDIR3res_u.resok.reply.eof;
        xdr_free(UIW__XDRPROC(uiw__xdr_READDIR3res), (caddr_t)&r);
        if (eof)
            break;
    }
    CHECK(calls > 10);
    CHECK_EQ(dots, 2);
    for (int i = 0; i < 1000; i++)
        CHECK_EQ(seen[i], 1);
    /* A cookie with another verifier. */
    READDIR3res r;
    a.cookieverf[0] ^= 1;
    memset(&r, 0, sizeof(r));
    CHECK_EQ(uiw__nfs_call(c, NFSPROC3_READDIR, UIW__XDRPROC(xdr_READDIR3args), &a,
                           UIW__XDRPROC(uiw__xdr_READDIR3res), &r),
             0);
    CHECK_EQ(r.status, NFS3ERR_BAD_COOKIE);
    a.cookie = 0;
    a.count = 60;
    memset(&r, 0, sizeof(r));
    CHECK_EQ(uiw__nfs_call(c, NFSPROC3_READDIR, UIW__XDRPROC(xdr_READDIR3args), &a,
                           UIW__XDRPROC(uiw__xdr_READDIR3res), &r),
             0);
    CHECK_EQ(r.status, NFS3ERR_TOOSMALL);
    /* READDIRPLUS through the client: attributes and handles for all. */
    memset(seen, 0, sizeof(seen));
    CHECK_EQ(uiw__nfs_readdir(c, root(c), count_ent, seen), 0);
    for (int i = 0; i < 1000; i++)
        CHECK_EQ(seen[i], 1);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* A server with the default options (root squashed) on a directory anyone may write,
 * holding "rootfile" (0600, "secret"), and its clients as root (r) and as uid 1234 (u),
 * which created "by-root" and "by-user". */
static void creds_start(struct srv *v, struct uiw__nfs_client **r, struct uiw__nfs_client **u)
{
    struct uiw__nfsd_opts o;
    srv_opts_v3(&o);
    srv_start(v, &o);
    CHECK_EQ(chmod(v->dir, 0777), 0);
    put_file(v, "rootfile", "secret", 6);
    CHECK_EQ(chmod(path_in(v, "rootfile"), 0600), 0);
    *r = srv_client(v, 0, 0);
    *u = srv_client(v, 1234, 1234);
    struct uiw__nfs_fh f;
    CHECK_EQ(uiw__nfs_create(*r, root(*r), "by-root", 0644, 0, &f), 0);
    CHECK_EQ(uiw__nfs_create(*u, root(*u), "by-user", 0644, 0, &f), 0);
}

/* A server run by anyone but root serves files as itself, whoever the caller says it is
 * (run as root, the test is nobody first). */
TEST(credentials_unprivileged)
{
    if (geteuid() == 0) {
        CHECK_EQ(setgroups(0, NULL), 0);
        CHECK_EQ(setgid(65534), 0);
        CHECK_EQ(setuid(65534), 0);
        CHECK_EQ(prctl(PR_SET_DUMPABLE, 1), 0); /* LeakSanitizer attaches to its threads */
    }
    CHECK(geteuid() != 0);
    struct srv v;
    struct uiw__nfs_client *r, *u;
    struct stat st;
    creds_start(&v, &r, &u);
    CHECK_EQ(stat(path_in(&v, "by-user"), &st), 0);
    CHECK_EQ(st.st_uid, geteuid());
    CHECK_EQ(st.st_gid, getegid());
    CHECK_EQ(stat(path_in(&v, "by-root"), &st), 0);
    CHECK_EQ(st.st_uid, geteuid());
    uiw__nfs_client_close(r);
    uiw__nfs_client_close(u);
    srv_stop(&v);
}

/* NFSv3 ACCESS of `want` on the file `name` of the export's root, as c's caller. */
static uint32_t access3(struct uiw__nfs_client *c, const char *name, uint32_t want)
{
    struct uiw__nfs_fh f;
    CHECK_EQ(uiw__nfs_lookup(c, root(c), name, &f, NULL), 0);
    return access3_fh(c, &f, want);
}

/* A root-run server acts as each caller: root squashed to nobody by default, other uids
 * as themselves; permissions are the kernel's for that user (ACCESS's answers too, those
 * the server gives from the attributes among them); --no-root-squash keeps root root. */
TEST(root_credentials)
{
    uiw_test_require_root();
    struct srv v;
    struct uiw__nfs_client *r, *u;
    struct uiw__nfs_fh f;
    struct stat st;
    creds_start(&v, &r, &u);
    CHECK_EQ(stat(path_in(&v, "by-user"), &st), 0);
    CHECK_EQ(st.st_uid, 1234);
    CHECK_EQ(st.st_gid, 1234);
    CHECK_EQ(stat(path_in(&v, "by-root"), &st), 0);
    CHECK_EQ(st.st_uid, 65534);
    CHECK_EQ(st.st_gid, 65534);
    /* The kernel's checks as uid 1234 (and as squashed root). */
    CHECK_EQ(uiw__nfs_lookup(u, root(u), "rootfile", &f, NULL), 0);
    char buf[8];
    int eof;
    CHECK_EQ(uiw__nfs_read(u, &f, 0, sizeof(buf), buf, &eof), -NFS3ERR_ACCES);
    CHECK_EQ(uiw__nfs_read(r, &f, 0, sizeof(buf), buf, &eof), -NFS3ERR_ACCES);
    CHECK_EQ(uiw__nfs_write(u, &f, 0, 3, "bad", FILE_SYNC, NULL), -NFS3ERR_ACCES);
    CHECK_EQ(uiw__nfs_chmod(u, &f, 0666), -NFS3ERR_PERM);
    uint32_t rx = ACCESS3_READ | ACCESS3_EXECUTE, rwx = rx | ACCESS3_MODIFY;
    CHECK_EQ(access3(u, "rootfile", rx), 0);           /* 0600 of root's: nothing */
    CHECK_EQ(access3(r, "rootfile", rx), 0);           /* nor to squashed root */
    CHECK_EQ(access3(u, "by-user", rx), ACCESS3_READ); /* its owner: no x bit */
    CHECK_EQ(access3(u, "by-user", rwx), ACCESS3_READ | ACCESS3_MODIFY);
    CHECK_EQ(access3(r, "by-user", rwx), ACCESS3_READ); /* others: r-- */
    CHECK_EQ(chmod(path_in(&v, "by-user"), 0500), 0);
    CHECK_EQ(access3(u, "by-user", rwx), ACCESS3_READ | ACCESS3_EXECUTE);
    CHECK_EQ(access3(r, "by-user", rwx), 0);
    uiw__nfs_client_close(r);
    uiw__nfs_client_close(u);
    srv_stop(&v);
    /* --no-root-squash: root stays root. */
    struct uiw__nfsd_opts o;
    srv_opts_v3(&o);
    o.no_root_squash = 1;
    srv_start(&v, &o);
    r = srv_client(&v, 0, 0);
    CHECK_EQ(uiw__nfs_create(r, root(r), "by-root", 0644, 0, &f), 0);
    CHECK_EQ(stat(path_in(&v, "by-root"), &st), 0);
    CHECK_EQ(st.st_uid, 0);
    /* root reads anything, but executes only what has an execute bit */
    CHECK_EQ(chmod(path_in(&v, "by-root"), 0000), 0);
    CHECK_EQ(access3(r, "by-root", ACCESS3_READ | ACCESS3_EXECUTE), ACCESS3_READ);
    CHECK_EQ(chmod(path_in(&v, "by-root"), 0010), 0);
    CHECK_EQ(access3(r, "by-root", ACCESS3_READ | ACCESS3_EXECUTE), ACCESS3_READ | ACCESS3_EXECUTE);
    uiw__nfs_client_close(r);
    srv_stop(&v);
}

/* MOUNT: the list of who mounted what (DUMP) after MNT, UMNT and UMNTALL. */
static unsigned dump(CLIENT *m, const char *host, const char *dir)
{
    mountlist l = NULL;
    struct timeval tv = {10, 0};
    CHECK_EQ(clnt_call(m, MOUNTPROC3_DUMP, UIW__XDRPROC(xdr_void), NULL,
                       UIW__XDRPROC(uiw__xdr_mountlist), (caddr_t)&l, tv),
             RPC_SUCCESS);
    unsigned n = 0, match = 0;
    for (mountbody *b = l; b; b = b->ml_next, n++)
        match += dir && strcmp(b->ml_hostname, host) == 0 && strcmp(b->ml_directory, dir) == 0;
    xdr_free(UIW__XDRPROC(uiw__xdr_mountlist), (caddr_t)&l);
    return dir ? match : n;
}

static mountstat3 mnt(CLIENT *m, const char *path, nfs_fh3 *root_fh)
{
    mountres3 r;
    memset(&r, 0, sizeof(r));
    dirpath d = (char *)path;
    struct timeval tv = {10, 0};
    CHECK_EQ(clnt_call(m, MOUNTPROC3_MNT, UIW__XDRPROC(xdr_dirpath), (caddr_t)&d,
                       UIW__XDRPROC(xdr_mountres3), (caddr_t)&r, tv),
             RPC_SUCCESS);
    mountstat3 st = r.fhs_status;
    if (st == MNT3_OK) {
        fhandle3 *h = &r.mountres3_u.mountinfo.fhandle;
        CHECK(h->fhandle3_len > 0 && h->fhandle3_len <= NFS3_FHSIZE);
        bool sys = false;
        for (u_int i = 0; i < r.mountres3_u.mountinfo.auth_flavors.auth_flavors_len; i++)
            sys |= r.mountres3_u.mountinfo.auth_flavors.auth_flavors_val[i] == AUTH_SYS;
        CHECK(sys);
        if (root_fh) {
            CHECK_EQ(h->fhandle3_len, root_fh->data.data_len);
            CHECK_MEM(h->fhandle3_val, root_fh->data.data_val, h->fhandle3_len);
        }
    }
    xdr_free(UIW__XDRPROC(xdr_mountres3), (caddr_t)&r);
    return st;
}

/* Every MOUNT version 3 procedure over TCP: NULL; EXPORT lists the export; MNT of the
 * export gives the handle the client library holds, of a directory below it its own,
 * and of what is no directory of an export the RFC's errors; DUMP lists each mount by
 * host and path (none once the client library has unmounted); UMNT drops one, UMNTALL
 * all of the caller's. */
TEST(mount_procedures)
{
    struct srv v;
    srv_start(&v, NULL);
    CHECK_EQ(mkdir(path_in(&v, "sub"), 0755), 0);
    put_file(&v, "file", "x", 1);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    nfs_fh3 rootfh;
    char rootdata[NFS3_FHSIZE];
    CHECK(root(c)->len <= sizeof(rootdata));
    memcpy(rootdata, root(c)->data, root(c)->len);
    rootfh.data.data_len = root(c)->len;
    rootfh.data.data_val = rootdata;
    uiw__nfs_client_close(c); /* its MNT undone by its UMNT */

    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)v.mount)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int sock = RPC_ANYSOCK;
    CLIENT *m = clnttcp_create(&sa, MOUNT_PROGRAM, MOUNT_V3, &sock, 0, 0);
    CHECK(m != NULL);
    struct timeval tv = {10, 0};
    CHECK_EQ(clnt_call(m, MOUNTPROC3_NULL, UIW__XDRPROC(xdr_void), NULL, UIW__XDRPROC(xdr_void),
                       NULL, tv),
             RPC_SUCCESS);
    CHECK_EQ(dump(m, NULL, NULL), 0);

    mntexports ex = NULL;
    CHECK_EQ(clnt_call(m, MOUNTPROC3_EXPORT, UIW__XDRPROC(xdr_void), NULL,
                       UIW__XDRPROC(uiw__xdr_mntexports), (caddr_t)&ex, tv),
             RPC_SUCCESS);
    CHECK(ex != NULL && ex->ex_next == NULL);
    CHECK_STR(ex->ex_dir, v.dir);
    xdr_free(UIW__XDRPROC(uiw__xdr_mntexports), (caddr_t)&ex);

    char sub[600], file[600], none[600], dots[600];
    snprintf(sub, sizeof(sub), "%s/sub", v.dir);
    snprintf(file, sizeof(file), "%s/file", v.dir);
    snprintf(none, sizeof(none), "%s/none", v.dir);
    snprintf(dots, sizeof(dots), "%s/sub/../..", v.dir);
    CHECK_EQ(mnt(m, v.dir, &rootfh), MNT3_OK);
    CHECK_EQ(mnt(m, sub, NULL), MNT3_OK);
    CHECK_EQ(mnt(m, file, NULL), MNT3ERR_NOTDIR);
    CHECK_EQ(mnt(m, none, NULL), MNT3ERR_NOENT);
    CHECK_EQ(mnt(m, dots, NULL), MNT3ERR_ACCES);
    CHECK_EQ(mnt(m, "/", NULL), MNT3ERR_NOENT); /* not exported */
    CHECK_EQ(mnt(m, "relative", NULL), MNT3ERR_NOENT);
    CHECK_EQ(dump(m, NULL, NULL), 2);
    CHECK_EQ(dump(m, "127.0.0.1", v.dir), 1);
    CHECK_EQ(dump(m, "127.0.0.1", sub), 1);

    dirpath d = v.dir;
    CHECK_EQ(clnt_call(m, MOUNTPROC3_UMNT, UIW__XDRPROC(xdr_dirpath), (caddr_t)&d,
                       UIW__XDRPROC(xdr_void), NULL, tv),
             RPC_SUCCESS);
    CHECK_EQ(dump(m, NULL, NULL), 1);
    CHECK_EQ(dump(m, "127.0.0.1", sub), 1);
    CHECK_EQ(mnt(m, v.dir, &rootfh), MNT3_OK);
    CHECK_EQ(dump(m, NULL, NULL), 2);
    CHECK_EQ(clnt_call(m, MOUNTPROC3_UMNTALL, UIW__XDRPROC(xdr_void), NULL, UIW__XDRPROC(xdr_void),
                       NULL, tv),
             RPC_SUCCESS);
    CHECK_EQ(dump(m, NULL, NULL), 0);
    clnt_destroy(m);
    srv_stop(&v);
}

/* A server on every address (one dual-stack IPv6 socket) names an IPv4 caller in its
 * mount list as IPv4, as knfsd's mountd does: showmount -a shows 127.0.0.1, not
 * ::ffff:127.0.0.1. */
TEST(mount_list_ipv4_caller_of_every_address)
{
    struct srv v;
    memset(&v, 0, sizeof(v));
    snprintf(v.dir, sizeof(v.dir), "/tmp/uiw-nfs-test.XXXXXX");
    CHECK(mkdtemp(v.dir) != NULL);
    struct uiw__nfsd_opts d;
    srv_opts_v3(&d);
    d.addr = NULL;
    d.tcp_port = 0;
    d.mount_port = 0;
    d.rdma_port = -1;
    v.s = uiw__nfsd_create(&d);
    CHECK(v.s != NULL);
    CHECK_EQ(uiw__nfsd_add_export(v.s, v.dir), 0);
    CHECK_EQ(uiw__nfsd_start(v.s), 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_port = htons((uint16_t)uiw__nfsd_port(v.s, UIW__NFSD_MOUNT));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int sock = RPC_ANYSOCK;
    CLIENT *m = clnttcp_create(&sa, MOUNT_PROGRAM, MOUNT_V3, &sock, 0, 0);
    CHECK(m != NULL);
    CHECK_EQ(mnt(m, v.dir, NULL), MNT3_OK);
    CHECK_EQ(dump(m, NULL, NULL), 1);
    CHECK_EQ(dump(m, "127.0.0.1", v.dir), 1);
    clnt_destroy(m);
    srv_stop(&v);
}

/* MNT from more addresses than the mount list keeps: it holds the newest
 * UIW__NFS_MAX_MOUNTS, the oldest gone first, and DUMP lists them all. */
TEST(mount_list_bounded)
{
    struct srv v;
    srv_start(&v, NULL);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)v.mount)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const unsigned n = UIW__NFS_MAX_MOUNTS + 4;
    for (unsigned i = 0; i < n; i++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CHECK(fd >= 0);
        struct sockaddr_in from = {.sin_family = AF_INET};
        from.sin_addr.s_addr = htonl(0x7f010000u + ((i / 250) << 8) + (i % 250) + 1);
        CHECK_EQ(bind(fd, (struct sockaddr *)&from, sizeof(from)), 0);
        CHECK_EQ(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        CLIENT *m = clnttcp_create(&sa, MOUNT_PROGRAM, MOUNT_V3, &fd, 0, 0);
        CHECK(m != NULL);
        CHECK_EQ(mnt(m, v.dir, NULL), MNT3_OK);
        clnt_destroy(m);
        close(fd);
    }
    int sock = RPC_ANYSOCK;
    CLIENT *m = clnttcp_create(&sa, MOUNT_PROGRAM, MOUNT_V3, &sock, 0, 0);
    CHECK(m != NULL);
    CHECK_EQ(dump(m, NULL, NULL), UIW__NFS_MAX_MOUNTS);
    CHECK_EQ(dump(m, "127.1.0.1", v.dir), 0);
    CHECK_EQ(dump(m, "127.1.0.4", v.dir), 0);
    CHECK_EQ(dump(m, "127.1.0.5", v.dir), 1);
    char last[32];
    snprintf(last, sizeof(last), "127.1.%u.%u", (n - 1) / 250, (n - 1) % 250 + 1);
    CHECK_EQ(dump(m, last, v.dir), 1);
    clnt_destroy(m);
    srv_stop(&v);
}
