/* The file-system layer under the procedures (src/nfs/vfs.c): a call's pre- and
 * post-operation attributes are its own while other calls change the same file, and write
 * errors reach the client: the write verifier changes, and COMMIT reports a writeback
 * error that another descriptor's fsync already took. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "nfs/exports.h"
#include "nfs/vfs.h"
#include "nfs_util.h"
#include "test.h"

/* One WRITE with its whole reply (wcc_data): the status. */
static nfsstat3 write_wcc(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, uint64_t off,
                          uint32_t count, const char *data, stable_how how, WRITE3res *res)
{
    WRITE3args a;
    memset(&a, 0, sizeof(a));
    a.file.data.data_len = fh->len;
    a.file.data.data_val = (char *)fh->data;
    a.offset = off;
    a.count = count;
    a.stable = how;
    a.data.data_len = count;
    a.data.data_val = (char *)data;
    memset(res, 0, sizeof(*res));
    CHECK_EQ(uiw__nfs_call(c, NFSPROC3_WRITE, (xdrproc_t)xdr_WRITE3args, &a,
                           (xdrproc_t)xdr_WRITE3res, res),
             0);
    return res->status;
}

static nfsstat3 commit_verf(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, char verf[8])
{
    COMMIT3args a;
    COMMIT3res res;
    memset(&a, 0, sizeof(a));
    memset(&res, 0, sizeof(res));
    a.file.data.data_len = fh->len;
    a.file.data.data_val = (char *)fh->data;
    CHECK_EQ(uiw__nfs_call(c, NFSPROC3_COMMIT, (xdrproc_t)xdr_COMMIT3args, &a,
                           (xdrproc_t)xdr_COMMIT3res, &res),
             0);
    memcpy(verf, res.COMMIT3res_u.resok.verf, 8);
    return res.status;
}

struct writer {
    const struct srv *v;
    struct uiw__nfs_fh fh;
    unsigned first, n, stride; /* writes at (first + i * stride) * 100 */
    unsigned bad;              /* replies whose wcc_data another call's write shows in */
    unsigned seen;             /* replies with both attributes */
};

/* Each WRITE extends the file or fills a hole: with nothing else between its pre- and
 * post-operation attributes, the size after is the larger of the size before and the
 * write's end. */
static void *write_turns(void *arg)
{
    struct writer *w = arg;
    struct uiw__nfs_client *c = srv_client(w->v, 0, 0);
    char data[100];
    memset(data, 'a' + (int)w->first, sizeof(data));
    for (unsigned i = 0; i < w->n; i++) {
        uint64_t off = (uint64_t)(w->first + i * w->stride) * 100;
        WRITE3res r;
        CHECK_EQ(write_wcc(c, &w->fh, off, 100, data, UNSTABLE, &r), NFS3_OK);
        const wcc_data *d = &r.WRITE3res_u.resok.file_wcc;
        if (!d->before.attributes_follow || !d->after.attributes_follow)
            continue;
        w->seen++;
        uint64_t before = d->before.pre_op_attr_u.attributes.size;
        uint64_t after = d->after.post_op_attr_u.attributes.size;
        uint64_t end = off + 100;
        if (after != (before > end ? before : end))
            w->bad++;
    }
    uiw__nfs_client_close(c);
    return NULL;
}

/* Four clients write in turns into one file, each extending it: every reply's wcc_data
 * shows that call's own change alone (without the layer's lock, another client's
 * extension falls between the attributes of about one reply in ten). */
TEST(wcc_is_the_calls_own)
{
    struct srv v;
    srv_start(&v, NULL);
    put_file(&v, "f", "", 0);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    struct uiw__nfs_fh fh;
    CHECK_EQ(uiw__nfs_lookup_path(c, "f", &fh, NULL), 0);
    enum { N = 4 };
    struct writer w[N];
    pthread_t t[N];
    for (unsigned i = 0; i < N; i++) {
        w[i] = (struct writer){.v = &v, .fh = fh, .first = i, .n = 400, .stride = N};
        CHECK_EQ(pthread_create(&t[i], NULL, write_turns, &w[i]), 0);
    }
    unsigned bad = 0, seen = 0;
    for (unsigned i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        bad += w[i].bad;
        seen += w[i].seen;
    }
    printf("replies with attributes %u, showing another call's write %u\n", seen, bad);
    CHECK_EQ(seen, N * 400);
    CHECK_EQ(bad, 0);
    struct stat st;
    CHECK_EQ(stat(path_in(&v, "f"), &st), 0);
    CHECK_EQ(st.st_size, N * 400 * 100);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* A file system whose writeback fails: ext4 in a 64 MiB image whose backing file lives
 * in a 6 MiB tmpfs, so writes land in the page cache and fail on their way to the disk
 * (ENOSPC of the loop device, reported by fsync). Mounted on dir, in this test's own
 * mount namespace. */
static void failing_fs(const char *dir)
{
    if (access("/dev/loop-control", F_OK) != 0)
        SKIP("no loop devices: a file system whose writeback fails cannot be made here");
    CHECK_EQ(unshare(CLONE_NEWNS), 0);
    CHECK_EQ(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
    char back[300], img[320], cmd[1600];
    snprintf(back, sizeof(back), "%s.back", dir);
    CHECK_EQ(mkdir(back, 0700), 0);
    CHECK_EQ(mount("tmpfs", back, "tmpfs", 0, "size=6m"), 0);
    snprintf(img, sizeof(img), "%s/img", back);
    snprintf(cmd, sizeof(cmd),
             "truncate -s 64M %s && mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=1,"
             "lazy_journal_init=1 %s && mount -o loop,errors=continue %s %s",
             img, img, img, dir);
    int rc = system(cmd);
    CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
    CHECK_EQ(chmod(dir, 0777), 0);
}

static void failing_fs_end(const char *dir)
{
    char back[300];
    snprintf(back, sizeof(back), "%s.back", dir);
    umount2(dir, MNT_DETACH);
    umount2(back, MNT_DETACH);
    rmdir(back);
}

/* Unstable WRITEs that the disk then refuses: another process's fsync takes the error
 * first (the kernel reports it once per descriptor), and yet the client's COMMIT reports
 * it, with a new write verifier, so that a client that retries sends its writes again. */
TEST(root_commit_sees_writeback_error)
{
    uiw_test_require_root();
    struct srv v = {0};
    snprintf(v.dir, sizeof(v.dir), "/tmp/uiw-nfs-vfs.XXXXXX");
    CHECK(mkdtemp(v.dir) != NULL);
    failing_fs(v.dir);
    srv_exports_text(&v, "%s 127.0.0.1(rw,insecure,no_root_squash)\n", 0);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    struct uiw__nfs_fh fh;
    CHECK_EQ(uiw__nfs_create(c, uiw__nfs_client_root(c), "f", 0644, 0, &fh), 0);
    enum { MIB = 1 << 20 };
    char *data = malloc(MIB);
    CHECK(data != NULL);
    memset(data, 'w', MIB);
    char verf0[8], verf[8];
    for (unsigned i = 0; i < 16; i++) {
        WRITE3res r;
        CHECK_EQ(write_wcc(c, &fh, (uint64_t)i * MIB, MIB, data, UNSTABLE, &r), NFS3_OK);
        if (i == 0)
            memcpy(verf0, r.WRITE3res_u.resok.verf, 8);
        CHECK_MEM(r.WRITE3res_u.resok.verf, verf0, 8);
    }
    /* someone on the server's host fsyncs first, and gets the error ... */
    int fd = open(path_in(&v, "f"), O_RDONLY);
    CHECK(fd >= 0);
    int rc = fsync(fd);
    int err = errno;
    close(fd);
    printf("the local fsync: %s\n", rc == 0 ? "no error" : strerror(err));
    CHECK(rc != 0);
    /* ... and again until a new descriptor's fsync sees no error left */
    for (int i = 0; i < 10 && rc != 0; i++) {
        fd = open(path_in(&v, "f"), O_RDONLY);
        CHECK(fd >= 0);
        rc = fsync(fd);
        close(fd);
    }
    CHECK_EQ(rc, 0);
    nfsstat3 st = commit_verf(c, &fh, verf);
    printf("COMMIT: status %d, verifier %s\n", (int)st,
           memcmp(verf, verf0, 8) == 0 ? "the same" : "changed");
    CHECK(st == NFS3ERR_NOSPC || st == NFS3ERR_IO);
    CHECK(memcmp(verf, verf0, 8) != 0);
    /* and the WRITEs that follow carry the new verifier */
    WRITE3res r;
    write_wcc(c, &fh, 0, 4096, data, UNSTABLE, &r);
    if (r.status == NFS3_OK)
        CHECK(memcmp(r.WRITE3res_u.resok.verf, verf0, 8) != 0);
    free(data);
    uiw__nfs_client_close(c);
    uiw__nfsd_destroy(v.s);
    failing_fs_end(v.dir);
    rmdir(v.dir);
}

/* A WRITE that fails part way (a full file system) changes the verifier: what it wrote
 * before the error is in the file, unreported. */
TEST(root_failed_write_changes_verifier)
{
    uiw_test_require_root();
    CHECK_EQ(unshare(CLONE_NEWNS), 0);
    CHECK_EQ(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
    struct srv v = {0};
    snprintf(v.dir, sizeof(v.dir), "/tmp/uiw-nfs-vfs.XXXXXX");
    CHECK(mkdtemp(v.dir) != NULL);
    CHECK_EQ(mount("tmpfs", v.dir, "tmpfs", 0, "size=256k,mode=0777"), 0);
    srv_exports_text(&v, "%s 127.0.0.1(rw,insecure,no_root_squash)\n", 0);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    struct uiw__nfs_fh fh;
    CHECK_EQ(uiw__nfs_create(c, uiw__nfs_client_root(c), "f", 0644, 0, &fh), 0);
    static char data[512 * 1024];
    memset(data, 'x', sizeof(data));
    WRITE3res r;
    CHECK_EQ(write_wcc(c, &fh, 0, 4096, data, UNSTABLE, &r), NFS3_OK);
    char verf0[8], verf[8];
    memcpy(verf0, r.WRITE3res_u.resok.verf, 8);
    CHECK_EQ(write_wcc(c, &fh, 4096, sizeof(data), data, UNSTABLE, &r), NFS3ERR_NOSPC);
    CHECK_EQ(commit_verf(c, &fh, verf), NFS3_OK);
    CHECK(memcmp(verf, verf0, 8) != 0);
    uiw__nfs_client_close(c);
    uiw__nfsd_destroy(v.s);
    umount2(v.dir, MNT_DETACH);
    rmdir(v.dir);
}

/* Descriptors of this process open for I/O (not O_PATH) on `path`, deleted or not; or
 * (below) on any file in the directory `path`. */
static int fds_at(const char *path, int below)
{
    int n = 0;
    char p[64], t[1024];
    size_t pl = strlen(path);
    for (int fd = 0; fd < 4096; fd++) {
        snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
        ssize_t k = readlink(p, t, sizeof(t) - 1);
        if (k <= 0)
            continue;
        t[k] = 0;
        if (strncmp(t, path, pl) != 0 || (below ? t[pl] != '/' : t[pl] != 0 && t[pl] != ' '))
            continue;
        snprintf(p, sizeof(p), "/proc/self/fdinfo/%d", fd);
        FILE *f = fopen(p, "r");
        unsigned long flags = 0;
        while (f && fgets(t, sizeof(t), f))
            if (sscanf(t, "flags: %lo", &flags) == 1)
                break;
        if (f)
            fclose(f);
        if (!(flags & O_PATH))
            n++;
    }
    return n;
}

static int fds_on(const char *path)
{
    return fds_at(path, 0);
}

/* READs, WRITEs and COMMITs of a file share one descriptor each (opened once), closed when
 * the file is removed through the server (REMOVE, or RENAME over it), and after a while
 * unused with no call coming. */
TEST(open_files_cached)
{
    struct srv v;
    srv_start(&v, NULL);
    put_file(&v, "f", "0123456789", 10);
    put_file(&v, "g", "0123456789", 10);
    put_file(&v, "g2", "g2", 2);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    struct uiw__nfs_fh f, g, g2;
    CHECK_EQ(uiw__nfs_lookup_path(c, "f", &f, NULL), 0);
    CHECK_EQ(uiw__nfs_lookup_path(c, "g", &g, NULL), 0);
    CHECK_EQ(uiw__nfs_lookup_path(c, "g2", &g2, NULL), 0);
    struct uiw__vfs_file_counts n0, n;
    uiw__vfs_file_counts(v.s, &n0);
    CHECK_EQ(n0.fds, 0);
    char buf[16], verf[8];
    int eof;
    for (int i = 0; i < 100; i++) {
        CHECK_EQ(uiw__nfs_read(c, &f, 0, sizeof(buf), buf, &eof), 10);
        CHECK(eof);
        CHECK_EQ(uiw__nfs_write(c, &f, 0, 1, "0", UNSTABLE, NULL), 1);
        CHECK_EQ(uiw__nfs_read(c, &g, 0, sizeof(buf), buf, &eof), 10);
    }
    CHECK_EQ(uiw__nfs_commit(c, &f, verf), 0);
    uiw__vfs_file_counts(v.s, &n);
    CHECK_EQ(n.opens - n0.opens, 3); /* f to read, f to write, g to read */
    CHECK_EQ(n.hits - n0.hits, 298);
    CHECK_EQ(n.fds, 3);
    char pf[600], pg[600], pg2[600];
    snprintf(pf, sizeof(pf), "%s", path_in(&v, "f"));
    snprintf(pg, sizeof(pg), "%s", path_in(&v, "g"));
    snprintf(pg2, sizeof(pg2), "%s", path_in(&v, "g2"));
    CHECK_EQ(fds_on(pf), 2); /* to read and to write (COMMIT took the witness of its writes) */
    CHECK_EQ(uiw__nfs_write(c, &f, 0, 1, "0", UNSTABLE, NULL), 1);
    CHECK_EQ(fds_on(pf), 3); /* and the witness of its uncommitted write */
    CHECK_EQ(fds_on(pg), 1);
    /* removed through the server: let go at once (the witness of its writes too) */
    CHECK_EQ(uiw__nfs_remove(c, uiw__nfs_client_root(c), "f"), 0);
    CHECK_EQ(fds_on(pf), 0);
    /* renamed over: the same */
    CHECK_EQ(uiw__nfs_read(c, &g2, 0, sizeof(buf), buf, &eof), 2);
    CHECK_EQ(uiw__nfs_rename(c, uiw__nfs_client_root(c), "g", uiw__nfs_client_root(c), "g2"), 0);
    CHECK_EQ(fds_on(pg), 0);
    CHECK_EQ(fds_on(pg2), 1); /* g's file, now at g2: the old g2's descriptor went */
    uiw__vfs_file_counts(v.s, &n);
    CHECK_EQ(n.fds, 1);
    /* unused for a while, with no call since: closed */
    for (int i = 0; i < 50 && fds_on(pg2) != 0; i++)
        usleep(100 * 1000);
    CHECK_EQ(fds_on(pg2), 0);
    uiw__vfs_file_counts(v.s, &n);
    CHECK_EQ(n.fds, 0);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* A server under a descriptor limit of `limit` (set for this whole process), a client of
 * it, and files f0 to f<n-1> holding their names, whose handles go to fh. */
static struct uiw__nfs_client *limited_server(struct srv *v, rlim_t limit, struct uiw__nfs_fh *fh,
                                              unsigned n)
{
    struct rlimit rl = {limit, limit};
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
    srv_start(v, NULL);
    struct uiw__nfs_client *c = srv_client(v, 0, 0);
    char name[32];
    for (unsigned i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "f%u", i);
        put_file(v, name, name, strlen(name));
        CHECK_EQ(uiw__nfs_lookup_path(c, name, &fh[i], NULL), 0);
    }
    return c;
}

/* Under a descriptor limit the cache keeps a quarter of it, closing the least recently
 * used file to open another. */
TEST(open_files_bounded)
{
    enum { FILES = 100 };
    static struct uiw__nfs_fh fh[FILES];
    struct srv v;
    struct uiw__nfs_client *c = limited_server(&v, 256, fh, FILES);
    char name[32], buf[16];
    int eof;
    struct uiw__vfs_file_counts n0, n;
    uiw__vfs_file_counts(v.s, &n0);
    CHECK_EQ(n0.max_fds, 64);
    for (unsigned i = 0; i < FILES; i++) {
        snprintf(name, sizeof(name), "f%u", i);
        CHECK_EQ(uiw__nfs_read(c, &fh[i], 0, sizeof(buf), buf, &eof), (int)strlen(name));
        CHECK_MEM(buf, name, strlen(name));
    }
    uiw__vfs_file_counts(v.s, &n);
    CHECK_EQ(n.opens - n0.opens, FILES);
    CHECK_EQ(n.fds, 64);
    CHECK_EQ(fds_at(v.dir, 1), 64);
    /* the most recently used is there, the least recently used went */
    CHECK_EQ(uiw__nfs_read(c, &fh[FILES - 1], 0, sizeof(buf), buf, &eof), 3);
    CHECK_EQ(uiw__nfs_read(c, &fh[0], 0, sizeof(buf), buf, &eof), 2);
    uiw__vfs_file_counts(v.s, &n);
    CHECK_EQ(n.opens - n0.opens, FILES + 1);
    CHECK_EQ(n.hits - n0.hits, 1);
    CHECK_EQ(n.fds, 64);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

struct churner {
    const struct srv *v;
    const struct uiw__nfs_fh *fh;
    unsigned files, seed, bad;
};

/* READs of the files in a scattered order, each checked against the file's name, and
 * WRITEs (UNSTABLE, then COMMIT) of the same bytes back. */
static void *churn(void *arg)
{
    struct churner *ch = arg;
    struct uiw__nfs_client *c = srv_client(ch->v, 0, 0);
    char name[32], buf[32];
    int eof;
    for (unsigned i = 0; i < 300; i++) {
        unsigned k = (ch->seed + i * 7919u) % ch->files;
        snprintf(name, sizeof(name), "f%u", k);
        int n = uiw__nfs_read(c, &ch->fh[k], 0, sizeof(buf), buf, &eof);
        if (n != (int)strlen(name) || memcmp(buf, name, strlen(name)) != 0)
            ch->bad++;
        if (i % 5 == 0) {
            char verf[8];
            if (uiw__nfs_write(c, &ch->fh[k], 0, (uint32_t)strlen(name), name, UNSTABLE, NULL) !=
                    (int)strlen(name) ||
                uiw__nfs_commit(c, &ch->fh[k], verf) != 0)
                ch->bad++;
        }
    }
    uiw__nfs_client_close(c);
    return NULL;
}

/* Four clients read and write more files than the cache may hold, at once: each call
 * gets its own file's bytes while others evict and open around it, and the cache stays
 * within its bound. */
TEST(open_files_shared_by_threads)
{
    enum { FILES = 48, THREADS = 4 };
    static struct uiw__nfs_fh fh[FILES];
    struct srv v;
    struct uiw__nfs_client *c = limited_server(&v, 128, fh, FILES);
    struct churner ch[THREADS];
    pthread_t t[THREADS];
    for (unsigned i = 0; i < THREADS; i++) {
        ch[i] = (struct churner){&v, fh, FILES, i * 13, 0};
        CHECK_EQ(pthread_create(&t[i], NULL, churn, &ch[i]), 0);
    }
    for (unsigned i = 0; i < THREADS; i++) {
        CHECK_EQ(pthread_join(t[i], NULL), 0);
        CHECK_EQ(ch[i].bad, 0);
    }
    struct uiw__vfs_file_counts n;
    uiw__vfs_file_counts(v.s, &n);
    CHECK_EQ(n.max_fds, 32);
    CHECK(n.fds <= 32);
    CHECK(n.opens > 32); /* files were closed and opened again */
    CHECK(n.hits > 0);
    CHECK(fds_at(v.dir, 1) <= 32 + 4); /* and the witnesses of writes not yet committed */
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* Reading the exports again closes every cached descriptor: none outlives the export
 * (or the options) it was opened under. */
TEST(open_files_dropped_on_reload)
{
    struct srv v;
    memset(&v, 0, sizeof(v));
    srv_exports_text(&v, "%s *(rw,insecure,no_root_squash)\n", 0);
    put_file(&v, "f", "data", 4);
    struct uiw__nfs_client *c = srv_client(&v, 0, 0);
    struct uiw__nfs_fh f;
    CHECK_EQ(uiw__nfs_lookup_path(c, "f", &f, NULL), 0);
    char buf[8];
    int eof;
    CHECK_EQ(uiw__nfs_read(c, &f, 0, sizeof(buf), buf, &eof), 4);
    char pf[600];
    snprintf(pf, sizeof(pf), "%s", path_in(&v, "f"));
    CHECK_EQ(fds_on(pf), 1);
    char text[600], err[512];
    snprintf(text, sizeof(text), "%s *(ro,insecure,no_root_squash)\n", v.dir);
    struct uiw__nfs_xtable t;
    CHECK_EQ(uiw__nfs_exports_parse(text, "exports", &t, err, sizeof(err)), 0);
    CHECK_EQ(uiw__nfsd_reload_exports(v.s, &t, err, sizeof(err)), 0);
    uiw__nfs_xtable_free(&t);
    CHECK_EQ(fds_on(pf), 0);
    /* and opened again for the next READ */
    CHECK_EQ(uiw__nfs_read(c, &f, 0, sizeof(buf), buf, &eof), 4);
    CHECK_EQ(fds_on(pf), 1);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* A descriptor cached for one caller serves no other: each READ and WRITE is checked as
 * its caller (with the owner's override for writing). */
TEST(root_open_files_check_each_caller)
{
    uiw_test_require_root();
    struct srv v;
    srv_start(&v, NULL);
    CHECK_EQ(chmod(v.dir, 0755), 0);
    put_file(&v, "mine", "secret", 6);
    CHECK_EQ(chown(path_in(&v, "mine"), 1000, 1000), 0);
    CHECK_EQ(chmod(path_in(&v, "mine"), 0600), 0);
    put_file(&v, "ro", "readonly", 8);
    CHECK_EQ(chown(path_in(&v, "ro"), 1000, 1000), 0);
    CHECK_EQ(chmod(path_in(&v, "ro"), 0444), 0);
    struct uiw__nfs_client *owner = srv_client(&v, 1000, 1000), *other = srv_client(&v, 2000, 2000);
    struct uiw__nfs_fh m, r;
    CHECK_EQ(uiw__nfs_lookup_path(owner, "mine", &m, NULL), 0);
    CHECK_EQ(uiw__nfs_lookup_path(owner, "ro", &r, NULL), 0);
    char buf[16];
    int eof;
    CHECK_EQ(uiw__nfs_read(owner, &m, 0, sizeof(buf), buf, &eof), 6);
    CHECK_EQ(uiw__nfs_write(owner, &m, 0, 1, "S", UNSTABLE, NULL), 1);
    CHECK_EQ(uiw__nfs_read(other, &m, 0, sizeof(buf), buf, &eof), -NFS3ERR_ACCES);
    CHECK_EQ(uiw__nfs_write(other, &m, 0, 1, "X", UNSTABLE, NULL), -NFS3ERR_ACCES);
    /* 0444: its owner may write it (knfsd's owner override), nobody else */
    CHECK_EQ(uiw__nfs_write(owner, &r, 0, 1, "R", UNSTABLE, NULL), 1);
    CHECK_EQ(uiw__nfs_write(other, &r, 0, 1, "X", UNSTABLE, NULL), -NFS3ERR_ACCES);
    CHECK_EQ(uiw__nfs_read(other, &r, 0, sizeof(buf), buf, &eof), 8);
    CHECK_MEM(buf, "Readonly", 8);
    uiw__nfs_client_close(owner);
    uiw__nfs_client_close(other);
    srv_stop(&v);
}

/* A server of root's for the quick answers: acting as each caller, with root's override
 * (the tests run as root). */
static void quick_server(struct uiw__nfsd *s)
{
    memset(s, 0, sizeof(*s));
    s->privileged = 1;
    s->dac_override = uiw__nfs_cred_dac_override();
    CHECK(s->dac_override);
}

/* A new file (or directory) at path, owned by uid (and its gid) with mode: its O_PATH
 * descriptor, and its attributes in *sb. */
static int make_owned(const char *path, int isdir, uid_t uid, mode_t mode, struct stat *sb)
{
    if (isdir) {
        CHECK_EQ(mkdir(path, 0700), 0);
    } else {
        int f = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
        CHECK(f >= 0);
        close(f);
    }
    CHECK_EQ(chown(path, uid, uid), 0);
    CHECK_EQ(chmod(path, mode), 0);
    int fd = open(path, O_PATH);
    CHECK(fd >= 0);
    CHECK_EQ(fstat(fd, sb), 0);
    return fd;
}

/* The kernel's answer for the caller c on the file fd, as the server asked it before the
 * quick answer: as c, with the owner's override for writing. */
static nfsstat3 kernel_may(const struct uiw__nfsd *s, const struct uiw__nfs_cred *c, int fd,
                           int mode, uid_t owner)
{
    CHECK_EQ(uiw__nfs_cred_enter(s, c), 0);
    int rc = faccessat(fd, "", mode, AT_EMPTY_PATH | AT_EACCESS);
    int err = errno;
    uiw__nfs_cred_leave(s);
    if (rc == 0 || (err == EACCES && mode == W_OK && owner == c->uid))
        return NFS3_OK;
    return err == EACCES ? NFS3ERR_ACCES : NFS3ERR_IO;
}

/* A POSIX ACL (the kernel's xattr form) that takes everything from user 2000, who would
 * read the file as "other": the owner's and root's answers do not change, 2000's does. */
static int deny_2000(const char *path)
{
    struct {
        uint32_t version;
        struct {
            uint16_t tag, perm;
            uint32_t id;
        } e[5];
    } acl = {2,
             {{0x01, 6, UINT32_MAX},   /* owner: rw */
              {0x02, 0, 2000},         /* user 2000: nothing */
              {0x04, 4, UINT32_MAX},   /* group: r */
              {0x10, 4, UINT32_MAX},   /* mask: r */
              {0x20, 4, UINT32_MAX}}}; /* other: r */
    return setxattr(path, "system.posix_acl_access", &acl, sizeof(acl), 0);
}

/* What uiw-nfsd answers from a file's attributes (its owner, or root) is what the kernel
 * answers as that caller, for every mode of a file owned by 1000 and one owned by root,
 * callers in every class (owner, group, a supplementary group, other, root); the others
 * are left to the kernel, and an ACL that denies a named user is seen there. */
TEST(root_quick_access_is_the_kernels)
{
    uiw_test_require_root();
    struct uiw__nfsd s;
    quick_server(&s);
    char dir[] = "/tmp/uiw-quick-XXXXXX", path[64];
    CHECK(mkdtemp(dir) != NULL);
    CHECK_EQ(chmod(dir, 0755), 0);
    struct uiw__nfs_cred callers[] = {
        {.uid = 1000, .gid = 1000},                             /* the owner */
        {.uid = 2000, .gid = 1000},                             /* its group */
        {.uid = 2000, .gid = 2000, .ngids = 1, .gids = {1000}}, /* a supplementary group */
        {.uid = 2000, .gid = 2000},                             /* other */
        {.uid = 0, .gid = 0},                                   /* root */
        {.uid = 1000, .gid = 0},                                /* the owner, root's group */
    };
    static const mode_t modes[] = {0000, 0100, 0200, 0400, 0600, 0644, 0444,
                                   0070, 0007, 0707, 0077, 0470, 0740};
    unsigned quick = 0, asked = 0;
    for (unsigned owner = 0; owner < 2; owner++)
        for (unsigned m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
            snprintf(path, sizeof(path), "%s/f", dir);
            uid_t ou = owner ? 0 : 1000;
            struct stat sb;
            int fd = make_owned(path, 0, ou, modes[m], &sb);
            for (unsigned k = 0; k < sizeof(callers) / sizeof(callers[0]); k++)
                for (unsigned a = 0; a < 2; a++) {
                    int mode = a ? W_OK : R_OK;
                    nfsstat3 want = kernel_may(&s, &callers[k], fd, mode, ou), got;
                    int answered = uiw__vfs_may_quick(&s, &callers[k], &sb, mode, &got);
                    if (!answered) {
                        asked++;
                        continue;
                    }
                    quick++;
                    if (got != want)
                        fprintf(stderr, "mode %04o owner %u caller %u/%u %s: quick %d, kernel %d\n",
                                (unsigned)modes[m], (unsigned)ou, callers[k].uid, callers[k].gid,
                                mode == R_OK ? "read" : "write", (int)got, (int)want);
                    CHECK_EQ(got, want);
                    /* only the owner and root are answered quickly */
                    CHECK(callers[k].uid == 0 || callers[k].uid == ou);
                }
            close(fd);
            unlink(path);
        }
    /* each mode, both accesses: three callers of 1000's file (its owner twice, root), one
     * of root's (root) */
    CHECK_EQ(quick, 13u * 2 * (3 + 1));
    CHECK(asked > 0);
    /* an ACL: named user 2000 denied what "other" would give; the quick path leaves 2000
     * to the kernel, and still answers the owner as the kernel does */
    snprintf(path, sizeof(path), "%s/acl", dir);
    int f = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CHECK(f >= 0);
    close(f);
    CHECK_EQ(chown(path, 1000, 1000), 0);
    if (deny_2000(path) == 0) {
        int fd = open(path, O_PATH);
        CHECK(fd >= 0);
        struct stat sb;
        CHECK_EQ(fstat(fd, &sb), 0);
        nfsstat3 got;
        CHECK_EQ(kernel_may(&s, &callers[3], fd, R_OK, 1000), NFS3ERR_ACCES);
        CHECK_EQ(uiw__vfs_may_quick(&s, &callers[3], &sb, R_OK, &got), 0);
        CHECK_EQ(uiw__vfs_may_quick(&s, &callers[0], &sb, R_OK, &got), 1);
        CHECK_EQ(got, kernel_may(&s, &callers[0], fd, R_OK, 1000));
        close(fd);
    }
    unlink(path);
    CHECK_EQ(rmdir(dir), 0);
}

/* One thread's calls, as uiw-nfsd's workers make them: root's own calls on a thread back
 * at the server's identity switch nothing, and still create files as root; every other
 * caller (root with another group among its groups too) is switched to and back. */
struct rest_run {
    const struct uiw__nfsd *s;
    const char *dir;
    unsigned long sw[6];
    struct stat st[6];
    int groups_after;
    uid_t fsuid_after;
};

static void rest_step(struct rest_run *r, int i, const struct uiw__nfs_cred *c)
{
    char path[80];
    snprintf(path, sizeof(path), "%s/f%d", r->dir, i);
    CHECK_EQ(uiw__nfs_cred_enter(r->s, c), 0);
    int f = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
    CHECK(f >= 0);
    CHECK_EQ(fstat(f, &r->st[i]), 0);
    close(f);
    uiw__nfs_cred_leave(r->s);
    r->sw[i] = uiw__nfs_cred_switches();
}

static void *rest_thread(void *arg)
{
    struct rest_run *r = arg;
    struct uiw__nfs_cred root = {.uid = 0, .gid = 0, .ngids = 1, .gids = {0}};
    struct uiw__nfs_cred user = {.uid = 1000, .gid = 1000};
    struct uiw__nfs_cred root5 = {.uid = 0, .gid = 0, .ngids = 2, .gids = {0, 5}};
    struct uiw__nfs_cred rootg = {.uid = 0, .gid = 7};
    rest_step(r, 0, &root); /* a new thread: what it has is not known, so switched */
    rest_step(r, 1, &root);
    rest_step(r, 2, &user);
    rest_step(r, 3, &root5);
    rest_step(r, 4, &rootg);
    rest_step(r, 5, &root);
    r->groups_after = getgroups(0, NULL);
    r->fsuid_after = (uid_t)setfsuid((uid_t)-1);
    return NULL;
}

TEST(root_cred_at_rest_switches_nothing)
{
    uiw_test_require_root();
    struct uiw__nfsd s;
    quick_server(&s);
    char dir[] = "/tmp/uiw-rest-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    CHECK_EQ(chmod(dir, 0777), 0);
    struct rest_run r = {.s = &s, .dir = dir};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, rest_thread, &r), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    unsigned long want[6] = {1, 1, 2, 3, 4, 4};
    uid_t owner[6] = {0, 0, 1000, 0, 0, 0};
    gid_t group[6] = {0, 0, 1000, 0, 7, 0};
    for (int i = 0; i < 6; i++) {
        CHECK_EQ(r.sw[i], want[i]);
        CHECK_EQ(r.st[i].st_uid, owner[i]);
        CHECK_EQ(r.st[i].st_gid, group[i]);
        char path[80];
        snprintf(path, sizeof(path), "%s/f%d", dir, i);
        CHECK_EQ(unlink(path), 0);
    }
    CHECK_EQ(r.groups_after, 0);
    CHECK_EQ(r.fsuid_after, 0);
    CHECK_EQ(rmdir(dir), 0);
}

/* ACCESS's and OPEN's reading, looking up and executing, answered from the attributes for
 * the owner and root, are the kernel's answers as that caller (uiw__vfs_access), for
 * files and directories of every mode, owned by a user and by root; a change asked is the
 * kernel's to answer. */
TEST(root_quick_access_bits_are_the_kernels)
{
    uiw_test_require_root();
    struct uiw__nfsd s;
    quick_server(&s);
    char dir[] = "/tmp/uiw-quickbits-XXXXXX", path[64];
    CHECK(mkdtemp(dir) != NULL);
    CHECK_EQ(chmod(dir, 0755), 0);
    snprintf(path, sizeof(path), "%s/o", dir);
    static const struct uiw__nfs_cred callers[] = {
        {.uid = 1000, .gid = 1000}, {.uid = 0, .gid = 0}, {.uid = 2000, .gid = 1000}};
    static const mode_t modes[] = {0000, 0100, 0400, 0500, 0700, 0010, 0001, 0444, 0555, 0711};
    uint32_t want = ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_EXECUTE;
    unsigned compared = 0;
    for (int isdir = 0; isdir < 2; isdir++)
        for (unsigned owner = 0; owner < 2; owner++)
            for (unsigned m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
                uid_t ou = owner ? 0 : 1000;
                struct stat sb;
                int fd = make_owned(path, isdir, ou, modes[m], &sb);
                for (unsigned k = 0; k < sizeof(callers) / sizeof(callers[0]); k++) {
                    struct uiw__vfs v;
                    memset(&v, 0, sizeof(v));
                    v.s = &s;
                    v.cred = callers[k];
                    uint32_t quick = 0, kernel = 0;
                    CHECK_EQ(uiw__vfs_access_known(&v, fd, &sb, want, &quick), 0);
                    CHECK_EQ(uiw__vfs_access(&v, fd, isdir, want, &kernel), 0);
                    if (quick != kernel)
                        fprintf(stderr, "%s %04o owner %u caller %u: quick %#x, kernel %#x\n",
                                isdir ? "dir" : "file", (unsigned)modes[m], (unsigned)ou,
                                callers[k].uid, quick, kernel);
                    CHECK_EQ(quick, kernel);
                    CHECK_EQ(v.entered, 0); /* left as it was */
                    compared++;
                }
                close(fd);
                CHECK_EQ(isdir ? rmdir(path) : unlink(path), 0);
            }
    CHECK_EQ(compared, 2u * 2 * 10 * 3);
    CHECK_EQ(rmdir(dir), 0);
}
