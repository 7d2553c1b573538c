/* File handles (src/nfs/fh.c): they stay inside their export (a directory or a file moved
 * out on the server's host turns STALE), one file keeps a handle per export it is reached
 * through, version 1 handles are still taken, an export's fsid= is its id, run as root the
 * kernel's own handle finds a file again with no search (after a restart, a rename and the
 * loss of every record), and mount points below an export are crossed only with crossmnt. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nfs/server.h"
#include "nfs_util.h"
#include "test.h"

/* The same export seen at `sub` below it (another export of the same server). */
static struct srv at(const struct srv *v, const char *sub)
{
    struct srv w = *v;
    snprintf(w.dir, sizeof(w.dir), "%.200s/%.50s", v->dir, sub);
    snprintf(w.url, sizeof(w.url), "nfs://127.0.0.1:%d%s?mountport=%d", v->tcp, w.dir, v->mount);
    return w;
}

static int getattr_status(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh)
{
    fattr3 a;
    return uiw__nfs_getattr(c, fh, &a);
}

/* An export's server without removing the directory (srv_stop removes it). */
static void srv_end(struct srv *v)
{
    uiw__nfsd_destroy(v->s);
    v->s = NULL;
}

static void moved_out(const struct srv *v, const char *rel, char *out, size_t n)
{
    snprintf(out, n, "%s.out-%s", v->dir, rel);
    char from[600];
    snprintf(from, sizeof(from), "%s/%s", v->dir, rel);
    CHECK_EQ(rename(from, out), 0);
}

/* A directory moved out of the export on the server's host: its handle is STALE (within
 * the second a record goes unchecked), and so is a file's below it; `..` of a directory
 * at the export's root is the root. */
TEST(handles_dir_moved_out_stale)
{
    struct srv v = {0};
    srv_exports_text(&v, "%s 127.0.0.1(rw,insecure,no_root_squash)\n", 0);
    CHECK_EQ(mkdir(path_in(&v, "d"), 0755), 0);
    put_file(&v, "d/f", "inside", 6);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    struct uiw__nfs_fh d, f, up;
    CHECK_EQ(uiw__nfs_lookup_path(c, "d", &d, NULL), 0);
    CHECK_EQ(uiw__nfs_lookup_path(c, "d/f", &f, NULL), 0);
    CHECK_EQ(getattr_status(c, &d), 0);
    CHECK_EQ(getattr_status(c, &f), 0);
    CHECK_EQ(uiw__nfs_lookup(c, uiw__nfs_client_root(c), "..", &up, NULL), 0);
    CHECK_EQ(up.len, uiw__nfs_client_root(c)->len);
    CHECK_MEM(up.data, uiw__nfs_client_root(c)->data, up.len);
    char out[700];
    moved_out(&v, "d", out, sizeof(out));
    usleep(1100 * 1000);
    CHECK_EQ(getattr_status(c, &d), -NFS3ERR_STALE);
    CHECK_EQ(uiw__nfs_lookup(c, &d, "..", &up, NULL), -NFS3ERR_STALE);
    CHECK_EQ(uiw__nfs_create(c, &d, "planted", 0644, 0, &up), -NFS3ERR_STALE);
    CHECK_EQ(getattr_status(c, &f), -NFS3ERR_STALE);
    char buf[8];
    int eof;
    CHECK_EQ(uiw__nfs_read(c, &f, 0, sizeof(buf), buf, &eof), -NFS3ERR_STALE);
    char planted[800];
    snprintf(planted, sizeof(planted), "%s/planted", out);
    CHECK_EQ(access(planted, F_OK), -1);
    /* moved back: served again */
    char back[600];
    snprintf(back, sizeof(back), "%s/d", v.dir);
    CHECK_EQ(rename(out, back), 0);
    usleep(1100 * 1000);
    CHECK_EQ(getattr_status(c, &d), 0);
    CHECK_EQ(uiw__nfs_read(c, &f, 0, sizeof(buf), buf, &eof), 6);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* A file moved out of the export: STALE, whether its record is kept or was dropped. */
TEST(handles_file_moved_out_stale)
{
    struct srv v = {0};
    srv_exports_text(&v, "%s 127.0.0.1(rw,insecure,no_root_squash)\n", 0);
    put_file(&v, "f", "inside", 6);
    put_file(&v, "g", "inside", 6);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    struct uiw__nfs_fh f, g;
    CHECK_EQ(uiw__nfs_lookup_path(c, "f", &f, NULL), 0);
    CHECK_EQ(uiw__nfs_lookup_path(c, "g", &g, NULL), 0);
    char out_f[700], out_g[700];
    moved_out(&v, "f", out_f, sizeof(out_f));
    moved_out(&v, "g", out_g, sizeof(out_g));
    usleep(1100 * 1000);
    CHECK_EQ(getattr_status(c, &f), -NFS3ERR_STALE);
    CHECK_EQ(uiw__nfs_write(c, &g, 0, 3, "out", FILE_SYNC, NULL), -NFS3ERR_STALE);
    struct stat st;
    CHECK_EQ(stat(out_g, &st), 0);
    CHECK_EQ(st.st_size, 6);
    /* a hard link left inside keeps the file served */
    char in[600];
    snprintf(in, sizeof(in), "%s/g2", v.dir);
    CHECK_EQ(link(out_g, in), 0);
    CHECK_EQ(getattr_status(c, &g), 0);
    unlink(out_f);
    unlink(out_g);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* One file reached through two nested exports has a handle in each, and both stay
 * valid used in turns (a record of the file is not one export's). */
TEST(handles_nested_exports)
{
    struct srv v = {0};
    snprintf(v.dir, sizeof(v.dir), "/tmp/uiw-nfs-handles.XXXXXX");
    CHECK(mkdtemp(v.dir) != NULL);
    char inner[600];
    snprintf(inner, sizeof(inner), "%s/inner", v.dir);
    CHECK_EQ(mkdir(inner, 0755), 0);
    put_file(&v, "inner/f", "nested", 6);
    srv_exports_text(&v,
                     "%s 127.0.0.1(rw,insecure,no_root_squash)\n"
                     "%s/inner 127.0.0.1(ro,insecure,no_root_squash)\n",
                     0);
    struct srv w = at(&v, "inner");
    struct uiw__nfs_client *co = srv_client(&v, 0, 0), *ci = srv_client(&w, 0, 0);
    struct uiw__nfs_fh ho, hi;
    fattr3 ao, ai;
    CHECK_EQ(uiw__nfs_lookup_path(co, "inner/f", &ho, &ao), 0);
    CHECK_EQ(uiw__nfs_lookup_path(ci, "f", &hi, &ai), 0);
    CHECK(ho.len != hi.len || memcmp(ho.data, hi.data, ho.len) != 0);
    CHECK_EQ(ao.fileid, ai.fileid);
    for (int i = 0; i < 4; i++) {
        CHECK_EQ(getattr_status(co, &ho), 0);
        CHECK_EQ(getattr_status(ci, &hi), 0);
    }
    /* each with its own export's options: the inner one is read-only */
    CHECK_EQ(uiw__nfs_write(co, &ho, 0, 3, "abc", FILE_SYNC, NULL), 3);
    CHECK_EQ(uiw__nfs_write(ci, &hi, 0, 3, "abc", FILE_SYNC, NULL), -NFS3ERR_ROFS);
    uiw__nfs_client_close(co);
    uiw__nfs_client_close(ci);
    srv_stop(&v);
}

/* A version 1 handle (32 bytes: the export's old id, st_dev, inode, tag), as servers
 * before handles of version 2 made them, is still taken. */
TEST(handles_version1_taken)
{
    struct srv v = {0};
    srv_exports_text(&v, "%s 127.0.0.1(rw,insecure,no_root_squash)\n", 0);
    put_file(&v, "f", "one", 3);
    int fd = open(path_in(&v, "f"), O_PATH | O_CLOEXEC);
    CHECK(fd >= 0);
    struct stat st;
    CHECK_EQ(fstat(fd, &st), 0);
    uint64_t tag = uiw__nfs_fh_tag(fd);
    close(fd);
    struct uiw__nfs_fh h;
    unsigned char *p = (unsigned char *)h.data;
    memset(p, 0, 32);
    p[0] = 0x75;
    p[1] = 1;
    uint32_t id = v.s->exports[0].old_id;
    for (int i = 0; i < 4; i++)
        p[4 + i] = (unsigned char)(id >> (24 - 8 * i));
    for (int i = 0; i < 8; i++) {
        p[8 + i] = (unsigned char)((uint64_t)st.st_dev >> (56 - 8 * i));
        p[16 + i] = (unsigned char)((uint64_t)st.st_ino >> (56 - 8 * i));
        p[24 + i] = (unsigned char)(tag >> (56 - 8 * i));
    }
    h.len = 32;
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    fattr3 a;
    CHECK_EQ(uiw__nfs_getattr(c, &h, &a), 0);
    CHECK_EQ(a.fileid, (uint64_t)st.st_ino);
    CHECK_EQ(a.size, 3);
    p[30] ^= 1; /* another generation */
    CHECK_EQ(getattr_status(c, &h), -NFS3ERR_STALE);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* fsid= is the export's id in its handles and the fsid of its attributes, and handles
 * made before a restart are taken after it (the id does not come from st_dev). */
TEST(handles_fsid_option)
{
    struct srv v = {0};
    srv_exports_text(&v, "%s 127.0.0.1(rw,insecure,no_root_squash,fsid=77)\n", 0);
    CHECK_EQ(mkdir(path_in(&v, "d"), 0755), 0);
    put_file(&v, "d/f", "fsid", 4);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    struct uiw__nfs_fh f;
    fattr3 a;
    CHECK_EQ(uiw__nfs_lookup_path(c, "d/f", &f, &a), 0);
    CHECK_EQ(a.fsid, 77);
    const unsigned char *p = (const unsigned char *)f.data;
    CHECK_EQ((uint32_t)p[4] << 24 | (uint32_t)p[5] << 16 | (uint32_t)p[6] << 8 | p[7], 77);
    uiw__nfs_client_close(c);
    srv_end(&v);
    srv_exports_text(&v, "%s 127.0.0.1(rw,insecure,no_root_squash,fsid=77)\n", 0);
    c = srv_client(&v, 0, 0);
    CHECK_EQ(uiw__nfs_getattr(c, &f, &a), 0);
    CHECK_EQ(a.size, 4);
    uiw__nfs_client_close(c);
    srv_stop(&v);
    /* two exports with one fsid: refused, with the line */
    struct uiw__nfs_xtable t;
    char err[512], text[256];
    snprintf(text, sizeof(text), "/tmp 127.0.0.1(fsid=5)\n/var 127.0.0.1(fsid=5)\n");
    CHECK_EQ(uiw__nfs_exports_parse(text, "exports", &t, err, sizeof(err)), 0);
    struct uiw__nfsd *s = uiw__nfsd_create(NULL);
    CHECK(s != NULL);
    CHECK(uiw__nfsd_add_exports(s, &t, err, sizeof(err)) != 0);
    CHECK(strstr(err, "line 2") && strstr(err, "fsid="));
    uiw__nfsd_destroy(s);
}

/* Run as root, the server opens a file by the kernel's handle: after a restart, with the
 * file's directory renamed and no record left, the handle is found with no search. */
TEST(root_handles_by_kernel_no_search)
{
    uiw_test_require_root();
    struct srv v = {0};
    srv_exports_text(&v, "%s 127.0.0.1(rw,insecure,no_root_squash)\n", 0);
    CHECK_EQ(mkdir(path_in(&v, "a"), 0755), 0);
    CHECK_EQ(mkdir(path_in(&v, "a/b"), 0755), 0);
    put_file(&v, "a/b/f", "kernel", 6);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    struct uiw__nfs_fh f, b;
    CHECK_EQ(uiw__nfs_lookup_path(c, "a/b/f", &f, NULL), 0);
    CHECK_EQ(uiw__nfs_lookup_path(c, "a/b", &b, NULL), 0);
    uiw__nfs_client_close(c);
    srv_end(&v);
    char from[600], to[600];
    snprintf(from, sizeof(from), "%s/a/b", v.dir);
    snprintf(to, sizeof(to), "%s/a/moved", v.dir);
    CHECK_EQ(rename(from, to), 0);
    srv_exports_text(&v, "%s 127.0.0.1(rw,insecure,no_root_squash)\n", 16);
    c = srv_client(&v, 0, 0);
    char buf[8];
    int eof;
    CHECK_EQ(uiw__nfs_read(c, &f, 0, sizeof(buf), buf, &eof), 6);
    CHECK_MEM(buf, "kernel", 6);
    CHECK_EQ(getattr_status(c, &b), 0);
    struct uiw__nfs_fh_counts n;
    uiw__nfs_fhcache_counts(v.s->fhcache, &n);
    CHECK_EQ(n.searches, 0);
    CHECK_EQ(n.search_deferred, 0);
    /* removed: STALE at once, no search either */
    CHECK_EQ(unlink(path_in(&v, "a/moved/f")), 0);
    CHECK_EQ(getattr_status(c, &f), -NFS3ERR_STALE);
    uiw__nfs_fhcache_counts(v.s->fhcache, &n);
    CHECK_EQ(n.searches, 0);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

struct names {
    int m_seen, m_handle, m_attr;
};

static int saw(void *arg, const char *name, uint64_t fileid, const fattr3 *attr,
               const struct uiw__nfs_fh *fh)
{
    (void)fileid;
    struct names *n = arg;
    if (strcmp(name, "m") == 0) {
        n->m_seen = 1;
        n->m_handle = fh != NULL;
        n->m_attr = attr != NULL;
    }
    return 0;
}

/* A file system mounted below an export (a tmpfs, in a mount namespace of the test's own):
 * without crossmnt, LOOKUP of its mount point is NFS3ERR_ACCES and READDIRPLUS lists it
 * with neither handle nor attributes; with crossmnt it is served, its files with their own
 * fsid, and their handles are taken by a new server (which finds the mount again). */
TEST(root_handles_crossmnt)
{
    uiw_test_require_root();
    CHECK_EQ(unshare(CLONE_NEWNS), 0);
    CHECK_EQ(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
    struct srv v = {0};
    snprintf(v.dir, sizeof(v.dir), "/tmp/uiw-nfs-handles.XXXXXX");
    CHECK(mkdtemp(v.dir) != NULL);
    CHECK_EQ(mkdir(path_in(&v, "m"), 0755), 0);
    CHECK_EQ(mount("tmpfs", path_in(&v, "m"), "tmpfs", 0, "size=1m"), 0);
    put_file(&v, "m/x", "mounted", 7);
    srv_exports_text(&v, "%s 127.0.0.1(rw,insecure,no_root_squash)\n", 0);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    struct uiw__nfs_fh m, x;
    fattr3 ra, xa;
    CHECK_EQ(uiw__nfs_getattr(c, uiw__nfs_client_root(c), &ra), 0);
    CHECK_EQ(uiw__nfs_lookup(c, uiw__nfs_client_root(c), "m", &m, NULL), -NFS3ERR_ACCES);
    struct names n = {0};
    CHECK_EQ(uiw__nfs_readdir(c, uiw__nfs_client_root(c), saw, &n), 0);
    CHECK(n.m_seen && !n.m_handle && !n.m_attr);
    uiw__nfs_client_close(c);
    srv_end(&v);

    srv_exports_text(&v, "%s 127.0.0.1(rw,insecure,no_root_squash,crossmnt)\n", 0);
    c = srv_client(&v, 0, 0);
    CHECK_EQ(uiw__nfs_lookup(c, uiw__nfs_client_root(c), "m", &m, NULL), 0);
    CHECK_EQ(uiw__nfs_lookup(c, &m, "x", &x, &xa), 0);
    CHECK(xa.fsid != ra.fsid);
    memset(&n, 0, sizeof(n));
    CHECK_EQ(uiw__nfs_readdir(c, uiw__nfs_client_root(c), saw, &n), 0);
    CHECK(n.m_seen && n.m_handle && n.m_attr);
    uiw__nfs_client_close(c);
    srv_end(&v);

    srv_exports_text(&v, "%s 127.0.0.1(rw,insecure,no_root_squash,crossmnt)\n", 0);
    c = srv_client(&v, 0, 0);
    char buf[16];
    int eof;
    CHECK_EQ(uiw__nfs_read(c, &x, 0, sizeof(buf), buf, &eof), 7);
    CHECK_MEM(buf, "mounted", 7);
    CHECK_EQ(getattr_status(c, &m), 0);
    uiw__nfs_client_close(c);
    srv_end(&v);
    CHECK_EQ(umount(path_in(&v, "m")), 0);
    rm_tree(v.dir);
}
