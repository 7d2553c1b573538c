/* knfsd's file semantics, checked against the file system itself (stat and read of the
 * export), not through the server: the owner of a file may write and truncate it whatever
 * its mode; UNCHECKED CREATE of a file that is there sets only its size; READ at or past
 * 2^63 is the end of the file and WRITE there NFS3ERR_FBIG; FSINFO's maxfilesize is the
 * file system's. The root_* tests need a server run as root (it acts as each caller). */
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nfs/client.h"
#include "nfs/server.h"
#include "nfs/xdr_data.h"
#include "nfs_util.h"
#include "rawrpc.h"
#include "test.h"

static void read_back(const char *path, char *buf, size_t cap, ssize_t *n)
{
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    *n = read(fd, buf, cap);
    close(fd);
}

/* A client of uid 1000 writes, truncates and commits the 0444 file it made (cp -p, tar,
 * git and install do this), and a 0200 one; another user may not. */
TEST(root_owner_override)
{
    uiw_test_require_root();
    struct srv v;
    srv_start(&v, NULL);
    CHECK_EQ(chmod(v.dir, 0777), 0);
    struct uiw__nfs_client *c = srv_client(&v, 1000, 1000);
    struct uiw__nfs_fh f, w;
    CHECK_EQ(uiw__nfs_create(c, uiw__nfs_client_root(c), "ro", 0444, 1, &f), 0);
    struct stat st;
    CHECK_EQ(stat(path_in(&v, "ro"), &st), 0);
    CHECK_EQ(st.st_mode & 07777, 0444);
    CHECK_EQ(st.st_uid, 1000);
    CHECK_EQ(uiw__nfs_write(c, &f, 0, 6, "abcdef", UNSTABLE, NULL), 6);
    CHECK_EQ(uiw__nfs_commit(c, &f, NULL), 0);
    CHECK_EQ(uiw__nfs_truncate(c, &f, 4), 0);
    char buf[16];
    ssize_t n;
    read_back(path_in(&v, "ro"), buf, sizeof(buf), &n);
    CHECK_EQ(n, 4);
    CHECK_MEM(buf, "abcd", 4);
    CHECK_EQ(uiw__nfs_create(c, uiw__nfs_client_root(c), "wo", 0200, 1, &w), 0);
    CHECK_EQ(uiw__nfs_write(c, &w, 0, 2, "xy", UNSTABLE, NULL), 2);
    CHECK_EQ(uiw__nfs_commit(c, &w, NULL), 0);
    /* another user: the mode bits decide */
    struct uiw__nfs_client *o = srv_client(&v, 1001, 1001);
    CHECK_EQ(uiw__nfs_write(o, &f, 0, 1, "z", UNSTABLE, NULL), -(int)NFS3ERR_ACCES);
    CHECK_EQ(uiw__nfs_truncate(o, &f, 0), -(int)NFS3ERR_ACCES);
    read_back(path_in(&v, "ro"), buf, sizeof(buf), &n);
    CHECK_EQ(n, 4);
    uiw__nfs_client_close(o);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* UNCHECKED CREATE of a file that is there: its size set (to 0 here), its mode and owner
 * left as they are. */
TEST(unchecked_create_sets_only_the_size)
{
    struct srv v;
    srv_start(&v, NULL);
    put_file(&v, "there", "content", 7);
    CHECK_EQ(chmod(path_in(&v, "there"), 0600), 0);
    CHECK_EQ(chmod(v.dir, 0777), 0);
    if (geteuid() == 0) /* the caller (uid 1000) owns it: a server run as root acts as it */
        CHECK_EQ(chown(path_in(&v, "there"), 1000, 1000), 0);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    const struct uiw__nfs_fh *root = uiw__nfs_client_root(c);
    char args[512];
    XDR x;
    xdrmem_create(&x, args, sizeof(args), XDR_ENCODE);
    CREATE3args a;
    memset(&a, 0, sizeof(a));
    a.where.dir.data.data_len = root->len;
    a.where.dir.data.data_val = (char *)root->data;
    a.where.name = "there";
    a.how.mode = UNCHECKED;
    sattr3 *sa = &a.how.createhow3_u.obj_attributes;
    sa->mode.set_it = 1;
    sa->mode.set_mode3_u.mode = 0777;
    sa->size.set_it = 1;
    sa->size.set_size3_u.size = 0;
    CHECK(xdr_CREATE3args(&x, &a));
    size_t alen = xdr_getpos(&x);
    xdr_destroy(&x);
    int fd = tcp_to(v.tcp);
    size_t n;
    char *r = call_raw(fd, 1, 100003, 3, NFSPROC3_CREATE, AUTH_SYS, args, alen, &n);
    CHECK_EQ(nfs_status(r, n), NFS3_OK);
    free(r);
    close(fd);
    struct stat st;
    CHECK_EQ(stat(path_in(&v, "there"), &st), 0);
    CHECK_EQ(st.st_size, 0);
    CHECK_EQ(st.st_mode & 07777, 0600);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

TEST(read_write_past_the_largest_offset)
{
    struct srv v;
    srv_start(&v, NULL);
    put_file(&v, "f", "0123456789", 10);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    struct uiw__nfs_fh f;
    CHECK_EQ(uiw__nfs_lookup(c, uiw__nfs_client_root(c), "f", &f, NULL), 0);
    char buf[16];
    int eof = 0;
    const uint64_t offs[] = {10, 1000, (uint64_t)INT64_MAX, 1ull << 63, ~0ull};
    for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
        eof = 0;
        CHECK_EQ(uiw__nfs_read(c, &f, offs[i], sizeof(buf), buf, &eof), 0);
        CHECK(eof);
    }
    CHECK_EQ(uiw__nfs_write(c, &f, 1ull << 63, 1, "x", FILE_SYNC, NULL), -(int)NFS3ERR_FBIG);
    CHECK_EQ(uiw__nfs_write(c, &f, ~0ull, 1, "x", FILE_SYNC, NULL), -(int)NFS3ERR_FBIG);
    struct stat st;
    CHECK_EQ(stat(path_in(&v, "f"), &st), 0);
    CHECK_EQ(st.st_size, 10);
    /* FSINFO: the file system's largest file */
    FSINFO3args fa;
    FSINFO3res fr;
    fa.fsroot.data.data_len = uiw__nfs_client_root(c)->len;
    fa.fsroot.data.data_val = (char *)uiw__nfs_client_root(c)->data;
    memset(&fr, 0, sizeof(fr));
    CHECK_EQ(uiw__nfs_call(c, NFSPROC3_FSINFO, UIW__XDRPROC(xdr_FSINFO3args), &fa,
                           UIW__XDRPROC(xdr_FSINFO3res), &fr),
             0);
    CHECK_EQ(fr.status, NFS3_OK);
    long bits = pathconf(v.dir, _PC_FILESIZEBITS);
    uint64_t want = bits > 1 && bits < 64 ? (1ull << (bits - 1)) - 1 : (uint64_t)INT64_MAX;
    CHECK_EQ(fr.FSINFO3res_u.resok.maxfilesize, want);
    xdr_free(UIW__XDRPROC(xdr_FSINFO3res), (caddr_t)&fr);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

static void set_owner(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, uint32_t uid,
                      uint32_t gid)
{
    SETATTR3args a;
    memset(&a, 0, sizeof(a));
    a.object.data.data_len = fh->len;
    a.object.data.data_val = (char *)fh->data;
    a.new_attributes.uid.set_it = 1;
    a.new_attributes.uid.set_uid3_u.uid = uid;
    a.new_attributes.gid.set_it = 1;
    a.new_attributes.gid.set_gid3_u.gid = gid;
    SETATTR3res r;
    memset(&r, 0, sizeof(r));
    CHECK_EQ(uiw__nfs_call(c, NFSPROC3_SETATTR, UIW__XDRPROC(xdr_SETATTR3args), &a,
                           UIW__XDRPROC(xdr_SETATTR3res), &r),
             0);
    CHECK_EQ(r.status, NFS3_OK);
    xdr_free(UIW__XDRPROC(xdr_SETATTR3res), (caddr_t)&r);
}

/* A symbolic link keeps its own owner: the target's SETATTR leaves the link as it is (on
 * the disk and in the link's GETATTR), and the link's own SETATTR (lchown) changes the
 * link, not its target. */
TEST(root_symlink_keeps_its_owner)
{
    uiw_test_require_root();
    struct srv v;
    srv_start(&v, NULL);
    put_file(&v, "f", "x", 1);
    CHECK_EQ(symlink("f", path_in(&v, "l")), 0);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    struct uiw__nfs_fh f, l;
    CHECK_EQ(uiw__nfs_lookup(c, uiw__nfs_client_root(c), "f", &f, NULL), 0);
    fattr3 la;
    CHECK_EQ(uiw__nfs_lookup(c, uiw__nfs_client_root(c), "l", &l, &la), 0);
    CHECK_EQ(la.type, NF3LNK);
    set_owner(c, &f, 65534, 65533); /* chown l, the client following the link */
    struct stat st;
    CHECK_EQ(lstat(path_in(&v, "l"), &st), 0);
    CHECK_EQ(st.st_uid, 0);
    CHECK_EQ(st.st_gid, 0);
    CHECK_EQ(stat(path_in(&v, "f"), &st), 0);
    CHECK_EQ(st.st_uid, 65534);
    CHECK_EQ(uiw__nfs_getattr(c, &l, &la), 0);
    CHECK_EQ(la.uid, 0);
    CHECK_EQ(la.gid, 0);
    set_owner(c, &l, 123, 456); /* chown -h l */
    CHECK_EQ(lstat(path_in(&v, "l"), &st), 0);
    CHECK_EQ(st.st_uid, 123);
    CHECK_EQ(st.st_gid, 456);
    CHECK_EQ(stat(path_in(&v, "f"), &st), 0);
    CHECK_EQ(st.st_uid, 65534);
    CHECK_EQ(uiw__nfs_getattr(c, &l, &la), 0);
    CHECK_EQ(la.uid, 123);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}
