#include "nfs_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "interop.h"
#include "nfs/client_int.h"
#include "nfs/exports.h"
#include "nfs/nfs4cb.h"
#include "nfs/server.h"
#include "run.h"
#include "test.h"

/* The fsid each device was reported with by the server running (every file of an st_dev:
 * one fsid); forgotten when a server starts. */
static struct {
    dev_t dev;
    uint64_t fsid;
} fsids[16];
static unsigned nfsids;

void srv_opts_v3(struct uiw__nfsd_opts *o)
{
    uiw__nfsd_opts_default(o);
    o->nfs4 = 0;
}

void srv_start(struct srv *v, const struct uiw__nfsd_opts *o)
{
    memset(v, 0, sizeof(*v));
    nfsids = 0;
    snprintf(v->dir, sizeof(v->dir), "/tmp/uiw-nfs-test.XXXXXX");
    CHECK(mkdtemp(v->dir) != NULL);
    struct uiw__nfsd_opts d;
    if (o) {
        d = *o;
    } else {
        srv_opts_v3(&d);
        d.no_root_squash = 1;
    }
    d.addr = "127.0.0.1";
    d.tcp_port = 0;
    d.mount_port = 0;
    /* RDMA on a free port when the test asks for it (vers1_only set, or a caller's
     * options), off for the TCP tests' defaults. */
    d.rdma_port = o ? 0 : -1;
    /* NFSv4 tests' PUTROOTFH is the export's root (as fsid=root): handles from there */
    d.nfs4_cmdline_root = d.nfs4;
    v->s = uiw__nfsd_create(&d);
    CHECK(v->s != NULL);
    CHECK_EQ(uiw__nfsd_add_export(v->s, v->dir), 0);
    CHECK_EQ(uiw__nfsd_start(v->s), 0);
    v->tcp = uiw__nfsd_port(v->s, UIW__NFSD_TCP);
    v->mount = uiw__nfsd_port(v->s, UIW__NFSD_MOUNT);
    CHECK(v->tcp > 0 && v->mount > 0);
    snprintf(v->url, sizeof(v->url), "nfs://127.0.0.1:%d%s?mountport=%d", v->tcp, v->dir, v->mount);
}

void srv_stop(struct srv *v)
{
    uiw__nfsd_destroy(v->s);
    v->s = NULL;
    rm_tree(v->dir);
}

void srv_url(const struct srv *v, const char *sub, char *out, size_t n)
{
    snprintf(out, n, "nfs://127.0.0.1:%d%s%s%s?mountport=%d", v->tcp, v->dir, *sub ? "/" : "", sub,
             v->mount);
}

struct uiw__nfs_client *srv_client(const struct srv *v, uint32_t uid, uint32_t gid)
{
    struct uiw__nfs_url u;
    char err[512];
    CHECK_EQ(uiw__nfs_url_parse(v->url, &u, err, sizeof(err)), 0);
    u.uid = uid;
    u.gid = gid;
    struct uiw__nfs_client *c = uiw__nfs_client_open(&u, 0, err, sizeof(err));
    if (!c)
        uiw_test_fail(__FILE__, __LINE__, "client: %s", err);
    return c;
}

char *path_in(const struct srv *v, const char *rel)
{
    static char buf[1024];
    snprintf(buf, sizeof(buf), "%s/%s", v->dir, rel);
    return buf;
}

void put_file(const struct srv *v, const char *rel, const void *data, size_t n)
{
    int fd = open(path_in(v, rel), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    CHECK_EQ(write(fd, data, n), (long long)n);
    close(fd);
}

int tcp_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_EQ(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)flag;
    (void)f;
    remove(p);
    return 0;
}

int lookup_below(struct uiw__nfs_client *c, const char *name, struct uiw__nfs_fh *fh, fattr3 *a)
{
    char sub[1400];
    snprintf(sub, sizeof(sub), "%s/%s", uiw__nfs_client_subpath(c), name);
    return uiw__nfs_lookup_path(c, sub, fh, a);
}

void *v4_rewrite(void *arg)
{
    struct v4_writer *w = arg;
    char url[700], err[512];
    snprintf(url, sizeof(url), "nfs://127.0.0.1:%d%s?version=4.1", w->v->tcp, w->v->dir);
    struct uiw__nfs_url u;
    CHECK_EQ(uiw__nfs_url_parse(url, &u, err, sizeof(err)), 0);
    struct uiw__nfs_client *c = uiw__nfs_client_open(&u, 0, err, sizeof(err));
    if (!c)
        uiw_test_fail(__FILE__, __LINE__, "tcp client: %s", err);
    struct uiw__nfs_fh fh;
    fattr3 a;
    CHECK_EQ(lookup_below(c, "f", &fh, &a), 0);
    char verf[8];
    w->rc = uiw__nfs_write(c, &fh, 0, 8, w->data, FILE_SYNC, verf);
    uiw__nfs_client_close(c);
    return NULL;
}

void v4_take_deleg(struct uiw__nfs_client *c, struct uiw__nfs_fh *fh)
{
    uiw__nfs4c_want_deleg(c, 1);
    fattr3 a;
    CHECK_EQ(lookup_below(c, "f", fh, &a), 0);
    char buf[16];
    int eof = 0;
    CHECK_EQ(uiw__nfs_read(c, fh, 0, sizeof(buf), buf, &eof), 8);
    CHECK(uiw__nfs4c_has_deleg(c, fh));
}

void v4_wait_cb_up(const struct srv *v, struct uiw__nfs_client *c,
                   int (*poll)(struct uiw__nfs_client *c, int timeout_ms))
{
    clientid4 cid = uiw__nfs4c_clientid(c);
    CHECK(cid != 0);
    for (int i = 0; !uiw__nfs4_cb_client_up(v->s->nfs4, cid); i++) {
        if (i >= 500)
            uiw_test_fail(__FILE__, __LINE__, "the back channel never came up");
        CHECK(poll(c, 20) >= 0);
    }
}

static int64_t test_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void v4_recalled(const struct srv *v, struct uiw__nfs_client *c, const char *data)
{
    struct uiw__nfsd_deleg_counts d0, d1;
    CHECK_EQ(uiw__nfsd_deleg_counts(v->s, &d0), 0);
    struct uiw__nfs_fh fh;
    v4_take_deleg(c, &fh);
    unsigned runs = uiw__nfs4c_cb_runs(c);
    struct v4_writer w = {v, data, 0};
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, v4_rewrite, &w), 0);
    int64_t until = test_now_ms() + 20000;
    while (uiw__nfs4c_has_deleg(c, &fh)) {
        if (test_now_ms() > until)
            uiw_test_fail(__FILE__, __LINE__, "the delegation was never recalled and returned");
        CHECK(uiw__nfs_poll(c, 20) >= 0);
    }
    CHECK_EQ(uiw__nfs4c_cb_runs(c), runs + 1); /* one CB_RECALL run */
    CHECK_EQ(pthread_join(th, NULL), 0);
    CHECK_EQ(w.rc, 8);
    uiw__nfs4c_want_deleg(c, 0);
    char buf[16];
    int eof = 0;
    CHECK_EQ(uiw__nfs_read(c, &fh, 0, sizeof(buf), buf, &eof), 8);
    CHECK_MEM(buf, data, 8);
    CHECK_EQ(uiw__nfsd_deleg_counts(v->s, &d1), 0);
    CHECK_EQ(d1.granted, d0.granted + 1);
    CHECK_EQ(d1.recalled, d0.recalled + 1);
    CHECK_EQ(d1.returned, d0.returned + 1);
    CHECK_EQ(d1.revoked, 0);
}

void bench_inflight(const char *url, const char *transport, unsigned inflight, unsigned size)
{
    char n[16], sz[16];
    snprintf(n, sizeof(n), "%u", inflight);
    snprintf(sz, sizeof(sz), "%u", size);
    struct tool_run r;
    const char *argv[] = {"uiw-nfs", "bench", "--json", "--inflight", n,   "-s", sz,
                          "-b",      "4096",  "-D",     "1",          url, NULL};
    tool_run(UIW_NFS, argv, NULL, 0, 120, &r);
    if (r.status != 0)
        uiw_test_fail(__FILE__, __LINE__, "bench: %s%s", r.out, r.err);
    static const char *const kinds[] = {"write", "read", "getattr"};
    for (unsigned i = 0; i < 3; i++) {
        char key[64], want[96];
        snprintf(key, sizeof(key), "{\"test\":\"%s\"", kinds[i]);
        const char *l = strstr(r.out, key);
        CHECK(l != NULL);
        snprintf(want, sizeof(want), "\"transport\":\"%s\",\"inflight\":%u,", transport, inflight);
        CHECK(strstr(l, want) != NULL);
        snprintf(want, sizeof(want), "\"size\":%u,", size);
        if (i < 2) /* every byte moved */
            CHECK(strncmp(strstr(l, "\"size\":"), want, strlen(want)) == 0);
    }
    tool_run_free(&r);
}

void rm_tree(const char *dir)
{
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

pid_t nfsd_spawn_argv(const char *const *argv, FILE **out, char *line, size_t cap)
{
    return nfsd_spawn_log(argv, NULL, out, line, cap);
}

pid_t nfsd_spawn_log(const char *const *argv, const char *errpath, FILE **out, char *line,
                     size_t cap)
{
    int p[2];
    CHECK_EQ(pipe(p), 0);
    pid_t parent = getpid(), pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(127);
        if (errpath) {
            int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd < 0 || dup2(fd, STDERR_FILENO) < 0)
                _exit(127);
            close(fd);
        }
        dup2(p[1], STDOUT_FILENO);
        close(p[0]);
        close(p[1]);
        execv(UIW_NFSD, (char *const *)(uintptr_t)argv);
        _exit(127);
    }
    close(p[1]);
    *out = fdopen(p[0], "r");
    CHECK(*out != NULL);
    line[0] = 0;
    CHECK(fgets(line, (int)cap, *out) != NULL);
    return pid;
}

void srv_exports_text(struct srv *v, const char *text, unsigned max_handles)
{
    struct uiw__nfsd_opts o;
    srv_opts_v3(&o);
    o.max_handles = max_handles;
    srv_exports_opts(v, text, &o);
}

void srv_exports_opts(struct srv *v, const char *text, const struct uiw__nfsd_opts *opts)
{
    struct uiw__nfsd_opts o = *opts;
    o.addr = "127.0.0.1";
    o.tcp_port = o.mount_port = 0;
    o.rdma_port = opts->rdma_port == 0 ? 0 : -1; /* RDMA when asked for, on a free port */
    srv_exports_at(v, text, &o);
}

void srv_exports_at(struct srv *v, const char *text, const struct uiw__nfsd_opts *o)
{
    if (!v->dir[0]) {
        snprintf(v->dir, sizeof(v->dir), "/tmp/uiw-nfs-handles.XXXXXX");
        CHECK(mkdtemp(v->dir) != NULL);
        CHECK_EQ(chmod(v->dir, 0777), 0);
    }
    char lines[2048];
    size_t n = 0, dl = strlen(v->dir);
    for (const char *t = text; *t && n + dl + 1 < sizeof(lines); t++) {
        if (t[0] == '%' && t[1] == 's') { /* the directory */
            memcpy(lines + n, v->dir, dl);
            n += dl;
            t++;
        } else {
            lines[n++] = *t;
        }
    }
    lines[n] = 0;
    struct uiw__nfs_xtable t;
    char err[512];
    if (uiw__nfs_exports_parse(lines, "exports", &t, err, sizeof(err)) != 0)
        uiw_test_fail(__FILE__, __LINE__, "%s", err);
    nfsids = 0;
    v->s = uiw__nfsd_create(o);
    CHECK(v->s != NULL);
    if (uiw__nfsd_add_exports(v->s, &t, err, sizeof(err)) != 0)
        uiw_test_fail(__FILE__, __LINE__, "%s", err);
    CHECK_EQ(uiw__nfsd_start(v->s), 0);
    v->tcp = uiw__nfsd_port(v->s, UIW__NFSD_TCP);
    v->mount = uiw__nfsd_port(v->s, UIW__NFSD_MOUNT);
    snprintf(v->url, sizeof(v->url), "nfs://127.0.0.1:%d%s?mountport=%d", v->tcp, v->dir, v->mount);
}

struct stat lstat_ok(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        uiw_test_fail(__FILE__, __LINE__, "lstat %s: %s", path, strerror(errno));
    return st;
}

/* RFC 1813's file types by S_IFMT (0: none of them). */
static ftype3 ftype_of(mode_t m)
{
    static const struct {
        mode_t fmt;
        ftype3 type;
    } types[] = {{S_IFREG, NF3REG}, {S_IFDIR, NF3DIR},   {S_IFBLK, NF3BLK}, {S_IFCHR, NF3CHR},
                 {S_IFLNK, NF3LNK}, {S_IFSOCK, NF3SOCK}, {S_IFIFO, NF3FIFO}};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if ((m & S_IFMT) == types[i].fmt)
            return types[i].type;
    return (ftype3)0;
}

static void check_fsid(const char *file, int line, const char *what, uint64_t fsid, dev_t dev)
{
    for (unsigned i = 0; i < nfsids; i++) {
        if (fsids[i].dev == dev && fsids[i].fsid != fsid)
            uiw_test_fail(file, line,
                          "%s: fsid 0x%" PRIx64 ", another file of its device 0x%" PRIx64, what,
                          fsid, fsids[i].fsid);
        if (fsids[i].dev != dev && fsids[i].fsid == fsid)
            uiw_test_fail(file, line, "%s: fsid 0x%" PRIx64 " also names another device", what,
                          fsid);
        if (fsids[i].dev == dev)
            return;
    }
    if (nfsids < sizeof(fsids) / sizeof(fsids[0])) {
        fsids[nfsids].dev = dev;
        fsids[nfsids].fsid = fsid;
        nfsids++;
    }
}

#define FIELD(name, got, want)                                                                     \
    do {                                                                                           \
        unsigned long long g_ = (unsigned long long)(got), w_ = (unsigned long long)(want);        \
        if (g_ != w_)                                                                              \
            uiw_test_fail(file, line, "%s: %s %llu (0x%llx), on disk %llu (0x%llx)", what, name,   \
                          g_, g_, w_, w_);                                                         \
    } while (0)

void check_fattr(const char *file, int line, const char *what, const fattr3 *a,
                 const struct stat *st)
{
    FIELD("type", a->type, ftype_of(st->st_mode));
    FIELD("mode", a->mode, st->st_mode & 07777);
    FIELD("nlink", a->nlink, st->st_nlink);
    FIELD("uid", a->uid, st->st_uid);
    FIELD("gid", a->gid, st->st_gid);
    FIELD("size", a->size, st->st_size);
    FIELD("used", a->used, (uint64_t)st->st_blocks * 512);
    FIELD("rdev major", a->rdev.specdata1, major(st->st_rdev));
    FIELD("rdev minor", a->rdev.specdata2, minor(st->st_rdev));
    FIELD("fileid", a->fileid, st->st_ino);
    FIELD("atime seconds", a->atime.seconds, (uint32_t)st->st_atim.tv_sec);
    FIELD("atime nseconds", a->atime.nseconds, st->st_atim.tv_nsec);
    FIELD("mtime seconds", a->mtime.seconds, (uint32_t)st->st_mtim.tv_sec);
    FIELD("mtime nseconds", a->mtime.nseconds, st->st_mtim.tv_nsec);
    FIELD("ctime seconds", a->ctime.seconds, (uint32_t)st->st_ctim.tv_sec);
    FIELD("ctime nseconds", a->ctime.nseconds, st->st_ctim.tv_nsec);
    check_fsid(file, line, what, a->fsid, st->st_dev);
}

void check_fattr_path(const char *file, int line, const char *what, const fattr3 *a,
                      const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        uiw_test_fail(file, line, "%s: lstat %s: %s", what, path, strerror(errno));
    check_fattr(file, line, what, a, &st);
}

void check_postop_path(const char *file, int line, const char *what, const post_op_attr *p,
                       const char *path)
{
    if (!p->attributes_follow)
        uiw_test_fail(file, line, "%s: no attributes", what);
    check_fattr_path(file, line, what, &p->post_op_attr_u.attributes, path);
}

void check_wcc(const char *file, int line, const char *what, const wcc_data *w,
               const struct stat *before, const char *path)
{
    if (!w->before.attributes_follow)
        uiw_test_fail(file, line, "%s: no pre-operation attributes", what);
    const wcc_attr *b = &w->before.pre_op_attr_u.attributes;
    FIELD("pre-op size", b->size, before->st_size);
    FIELD("pre-op mtime seconds", b->mtime.seconds, (uint32_t)before->st_mtim.tv_sec);
    FIELD("pre-op mtime nseconds", b->mtime.nseconds, before->st_mtim.tv_nsec);
    FIELD("pre-op ctime seconds", b->ctime.seconds, (uint32_t)before->st_ctim.tv_sec);
    FIELD("pre-op ctime nseconds", b->ctime.nseconds, before->st_ctim.tv_nsec);
    check_postop_path(file, line, what, &w->after, path);
}

/* Up to n bytes of fd, fewer only at its end. */
static ssize_t read_full(int fd, char *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(fd, p + got, n - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        if (k == 0)
            break;
        got += (size_t)k;
    }
    return (ssize_t)got;
}

void check_same_file(const char *file, int line, const char *a, const char *b)
{
    int fa = open(a, O_RDONLY), fb = open(b, O_RDONLY);
    if (fa < 0 || fb < 0)
        uiw_test_fail(file, line, "open %s: %s", fa < 0 ? a : b, strerror(errno));
    static char ba[1 << 20], bb[1 << 20];
    for (uint64_t off = 0;; off += sizeof(ba)) {
        ssize_t na = read_full(fa, ba, sizeof(ba)), nb = read_full(fb, bb, sizeof(bb));
        if (na < 0 || nb < 0)
            uiw_test_fail(file, line, "read %s: %s", na < 0 ? a : b, strerror(errno));
        size_t n = (size_t)(na < nb ? na : nb), i = 0;
        while (i < n && ba[i] == bb[i])
            i++;
        if (i < n)
            uiw_test_fail(file, line, "%s and %s differ at byte %llu", a, b,
                          (unsigned long long)(off + i));
        if (na != nb) {
            struct stat sa, sb;
            CHECK(fstat(fa, &sa) == 0 && fstat(fb, &sb) == 0);
            uiw_test_fail(file, line, "%s holds %lld bytes, %s %lld", a, (long long)sa.st_size, b,
                          (long long)sb.st_size);
        }
        if (na == 0)
            break;
    }
    close(fa);
    close(fb);
}

static pid_t test_rpcbind = -1;

static void end_rpcbind(void)
{
    if (test_rpcbind > 0)
        kill(test_rpcbind, SIGKILL);
}

pid_t private_rpcbind(void)
{
    if (access("/usr/sbin/rpcbind", X_OK) != 0)
        uiw_test_fail(__FILE__, __LINE__, "/usr/sbin/rpcbind: %s (scripts/deps.sh installs it)",
                      strerror(errno));
    CHECK_EQ(uiw_test_private_net(), 0);
    CHECK_EQ(unshare(CLONE_NEWNS), 0);
    CHECK_EQ(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
    CHECK_EQ(mount("tmpfs", "/run", "tmpfs", 0, "mode=0755"), 0);
    CHECK_EQ(mkdir("/run/rpcbind", 0700), 0);
    pid_t rb = fork();
    CHECK(rb >= 0);
    if (rb == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int null = open("/dev/null", O_RDWR);
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        execl("/usr/sbin/rpcbind", "rpcbind", "-f", "-w", (char *)NULL);
        _exit(127);
    }
    test_rpcbind = rb;
    atexit(end_rpcbind);
    for (int i = 0; i < 500 && access("/run/rpcbind.sock", F_OK) != 0; i++)
        usleep(10000);
    CHECK_EQ(access("/run/rpcbind.sock", F_OK), 0);
    return rb;
}

void private_rpcbind_stop(void)
{
    CHECK(test_rpcbind > 0);
    CHECK_EQ(kill(test_rpcbind, SIGTERM), 0);
    int st;
    CHECK_EQ(waitpid(test_rpcbind, &st, 0), test_rpcbind);
    test_rpcbind = -1;
    unlink("/run/rpcbind.sock");
}

void sha256_of(const char *path, char out[65])
{
    char cmd[1200], *o = NULL;
    snprintf(cmd, sizeof(cmd), "sha256sum < '%s'", path);
    CHECK_EQ(it_run(cmd, 0, 60, &o), 0);
    CHECK(strlen(o) >= 64);
    memcpy(out, o, 64);
    out[64] = 0;
    free(o);
}

void need_tshark(void)
{
    if (it_tshark())
        return;
    const char *req = getenv("UIW_ROOT_REQUIRED"), *ci = getenv("CI");
    if ((req && strcmp(req, "1") == 0) || (ci && *ci))
        uiw_test_fail(__FILE__, __LINE__,
                      "tshark is not installed, and the tools are required here "
                      "(UIW_ROOT_REQUIRED=1 or CI): scripts/deps.sh installs it");
    SKIP("tshark is not installed (scripts/deps.sh installs it)");
}

int ofd_lock(const char *path, short type, off_t off, off_t len)
{
    int fd = open(path, O_RDWR);
    CHECK(fd >= 0);
    struct flock fl;
    memset(&fl, 0, sizeof(fl));
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = off;
    fl.l_len = len;
    if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
        return fd;
    CHECK(errno == EAGAIN || errno == EACCES);
    close(fd);
    return -1;
}

long rss_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    long kib = -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    fclose(f);
    CHECK(kib > 0);
    return kib;
}
