/*
 * uiw-nfs's verbs over NFSv4.1 and 4.2 against uiw-nfsd (NFSv4 on by default), over TCP
 * and RPC-over-RDMA: put and get (SHA-256 of both ends, --verify), mkdir, ls, stat, mv,
 * rm, rmdir, put -r with files in flight, cp by COPY within the server (4.2) and by READ
 * and WRITE (4.1). The one export is the root of the server's NFSv4 namespace, so the
 * URLs name files from "/". lock: holds the server's LOCK until a signal, another waits
 * for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "interop.h"
#include "nfs/client.h"
#include "nfs_util.h"
#include "run.h"
#include "test.h"

struct d4 {
    pid_t pid;
    int tcp, rdma;
    char dir[256];
};

/* uiw-nfsd with NFSv4 (lease seconds) exporting a new temporary directory. */
static void d4_start(struct d4 *d, const char *lease)
{
    snprintf(d->dir, sizeof(d->dir), "/tmp/uiw-nfs4-ops.XXXXXX");
    CHECK(mkdtemp(d->dir) != NULL);
    const char *argv[] = {"uiw-nfsd",     "-a",  "127.0.0.1",    "-p", "0",
                          "--tcp-port",   "0",   "--mount-port", "0",  "--no-root-squash",
                          "--lease-time", lease, d->dir,         NULL};
    FILE *f;
    char line[256];
    int mount;
    d->pid = nfsd_spawn_argv(argv, &f, line, sizeof(line));
    fclose(f);
    CHECK_EQ(sscanf(line, "uiw-nfsd: ready tcp=%d mount=%d rdma=%d", &d->tcp, &mount, &d->rdma), 3);
}

static void d4_stop(struct d4 *d)
{
    CHECK_EQ(kill(d->pid, SIGTERM), 0);
    int st;
    CHECK_EQ(waitpid(d->pid, &st, 0), d->pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    rm_tree(d->dir);
}

/* A URL of sub in the export over the transport (rdma 0/1) in version vers. */
static void u4(const struct d4 *d, int rdma, const char *vers, const char *sub, char *out, size_t n)
{
    /* the export at its path under the pseudo root, as over NFSv3 */
    snprintf(out, n, "nfs://127.0.0.1:%d%s/%s?version=%s%s", rdma ? d->rdma : d->tcp, d->dir, sub,
             vers, rdma ? "&transport=rdma" : "");
}

static struct tool_run nfs(const char *a1, const char *a2, const char *a3, const char *a4)
{
    const char *argv[] = {"uiw-nfs", a1, a2, a3, a4, NULL};
    struct tool_run r;
    tool_run(UIW_NFS, argv, NULL, 0, 120, &r);
    return r;
}

static void write_local(const char *path, size_t n, unsigned seed)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    for (size_t i = 0; i < n; i++)
        fputc((int)((i * 2654435761u + seed) >> 13) & 0xff, f);
    fclose(f);
}

static const char *versions[] = {"4.1", "4.2"};

/* put and get of sizes around the inline and DDP thresholds, both versions, both
 * transports: the bytes in the export and back here are those sent. */
static void put_get(int rdma)
{
    struct d4 d = {0};
    d4_start(&d, "90");
    char local[300], back[300], u[700], path[700];
    snprintf(local, sizeof(local), "%s.src", d.dir);
    snprintf(back, sizeof(back), "%s.back", d.dir);
    size_t sizes[] = {0, 1, 4096, 40000, 1048576 + 3, 3 * 1048576 + 17};
    for (int v = 0; v < 2; v++) {
        for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            write_local(local, sizes[i], i + 10u * (unsigned)v);
            char name[32];
            snprintf(name, sizeof(name), "f%d-%u", v, i);
            u4(&d, rdma, versions[v], name, u, sizeof(u));
            struct tool_run r;
            const char *argv[] = {"uiw-nfs", "-v", "--verify", "put", local, u, NULL};
            tool_run(UIW_NFS, argv, NULL, 0, 120, &r);
            CHECK_EQ(r.status, 0);
            CHECK(strstr(r.err, "verified") != NULL);
            char says[32];
            snprintf(says, sizeof(says), "NFS v%s at", versions[v]);
            CHECK(strstr(r.err, says) != NULL);
            tool_run_free(&r);
            snprintf(path, sizeof(path), "%s/%s", d.dir, name);
            CHECK_SAME_FILE(local, path);
            r = nfs("--verify", "get", u, back);
            CHECK_EQ(r.status, 0);
            CHECK(strstr(r.err, "verified") != NULL);
            tool_run_free(&r);
            CHECK_SAME_FILE(local, back);
        }
    }
    unlink(local);
    unlink(back);
    d4_stop(&d);
}

TEST(nfs4ops_put_get_tcp)
{
    put_get(0);
}

TEST(nfs4ops_put_get_rdma)
{
    put_get(1);
}

/* uiw-nfs bench with 64 calls in flight over RPC-over-RDMA and NFSv4.1: WRITEs, READs and
 * GETATTRs each on a slot of the session (a slot used again the moment its reply is in:
 * the server frees it before replying), every byte moved and every call answered. */
TEST(nfs4ops_bench_inflight)
{
    struct d4 d = {0};
    d4_start(&d, "90");
    CHECK_EQ(chmod(d.dir, 0777), 0);
    char u[700];
    u4(&d, 1, "4.1", "", u, sizeof(u));
    bench_inflight(u, "rdma-v2", 64, 4u << 20);
    d4_stop(&d);
}

/* What each GETATTR in flight ended with (its index in op->arg), and how many ended. */
static int getattr_rc[192], getattr_ended;

static void getattr_done(struct uiw__nfs_op *op, int rc)
{
    getattr_rc[(intptr_t)op->arg] = rc;
    getattr_ended++;
}

/* GETATTRs in flight over RPC-over-RDMA and NFSv4.1, three times as many as the session's
 * 64 slots for them (those past them wait for a slot): the session has 65 slots (one for
 * the synchronous calls), and each call's attributes, decoded into its slot's memory
 * reused call after call, are its own file's. */
TEST(nfs4ops_getattr_in_flight_rdma)
{
#if UIW_NFS_HAVE_RDMA
    enum { FILES = 7, CALLS = sizeof(getattr_rc) / sizeof(getattr_rc[0]) };
    struct d4 d = {0};
    d4_start(&d, "90");
    char path[FILES][300];
    for (int i = 0; i < FILES; i++) {
        snprintf(path[i], sizeof(path[i]), "%s/g%d", d.dir, i);
        write_local(path[i], (size_t)i * 1000 + 1, (unsigned)i);
        CHECK_EQ(chmod(path[i], 0600 + (mode_t)i), 0);
    }
    char u[700], err[512];
    u4(&d, 1, "4.1", "g0", u, sizeof(u));
    struct tool_run r = nfs("-v", "stat", u, NULL);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.err, "CREATE_SESSION: 65 slots") != NULL);
    tool_run_free(&r);
    u4(&d, 1, "4.1", "", u, sizeof(u));
    struct uiw__nfs_url url;
    CHECK_EQ(uiw__nfs_url_parse(u, &url, err, sizeof(err)), 0);
    struct uiw__nfs_client *c = uiw__nfs_client_open(&url, 0, err, sizeof(err));
    if (!c)
        uiw_test_fail(__FILE__, __LINE__, "%s", err);
    struct uiw__nfs_fh fh[FILES];
    for (int i = 0; i < FILES; i++) {
        char sub[700];
        snprintf(sub, sizeof(sub), "%s/g%d", uiw__nfs_client_subpath(c), i);
        CHECK_EQ(uiw__nfs_lookup_path(c, sub, &fh[i], NULL), 0);
    }
    static struct uiw__nfs_op ops[CALLS];
    static fattr3 got[CALLS];
    memset(ops, 0, sizeof(ops));
    memset(got, 0, sizeof(got));
    getattr_ended = 0;
    for (int k = 0; k < CALLS; k++) {
        getattr_rc[k] = -1;
        ops[k].done = getattr_done;
        ops[k].arg = (void *)(intptr_t)k;
        CHECK_EQ(uiw__nfs_getattr_start(c, &fh[k % FILES], &got[k], &ops[k]), 0);
    }
    for (int tries = 0; tries < 3000 && getattr_ended < CALLS; tries++)
        CHECK(uiw__nfs_poll(c, 100) >= 0);
    CHECK_EQ(getattr_ended, CALLS);
    for (int k = 0; k < CALLS; k++) {
        CHECK_EQ(getattr_rc[k], 0);
        CHECK_FATTR_PATH("GETATTR in flight", &got[k], path[k % FILES]);
    }
    uiw__nfs_client_close(c);
    d4_stop(&d);
#else
    SKIP("built without the RPC layer");
#endif
}

/* mkdir, put into it, ls, stat, mv, rm, rmdir: each checked in the export. */
TEST(nfs4ops_namespace)
{
    struct d4 d = {0};
    d4_start(&d, "90");
    for (int v = 0; v < 2; v++) {
        char u[700], u2[700], p[700], local[300];
        u4(&d, 0, versions[v], "sub", u, sizeof(u));
        struct tool_run r = nfs("mkdir", u, NULL, NULL);
        CHECK_EQ(r.status, 0);
        tool_run_free(&r);
        snprintf(p, sizeof(p), "%s/sub", d.dir);
        struct stat st = lstat_ok(p);
        CHECK(S_ISDIR(st.st_mode));
        CHECK_EQ(st.st_mode & 0777, 0755);
        snprintf(local, sizeof(local), "%s.x", d.dir);
        write_local(local, 5000, 3);
        r = nfs("put", local, u, NULL);
        CHECK_EQ(r.status, 0);
        tool_run_free(&r);
        const char *base = strrchr(local, '/') + 1;
        r = nfs("ls", u, NULL, NULL);
        CHECK_EQ(r.status, 0);
        CHECK(strstr(r.out, base) != NULL);
        CHECK(strstr(r.out, " 5000 ") != NULL);
        tool_run_free(&r);
        char sub[400];
        snprintf(sub, sizeof(sub), "sub/%s", base);
        u4(&d, 0, versions[v], sub, u, sizeof(u));
        r = nfs("stat", u, NULL, NULL);
        CHECK_EQ(r.status, 0);
        CHECK(strstr(r.out, "Size: 5000") != NULL);
        tool_run_free(&r);
        u4(&d, 0, versions[v], "sub/moved", u2, sizeof(u2));
        r = nfs("mv", u, u2, NULL);
        CHECK_EQ(r.status, 0);
        tool_run_free(&r);
        snprintf(p, sizeof(p), "%s/sub/moved", d.dir);
        CHECK_SAME_FILE(local, p);
        u4(&d, 0, versions[v], "sub", u, sizeof(u));
        r = nfs("rmdir", u, NULL, NULL);
        CHECK_EQ(r.status, 1);
        CHECK(strstr(r.err, "NFS4ERR_NOTEMPTY") != NULL);
        tool_run_free(&r);
        r = nfs("rm", u2, NULL, NULL);
        CHECK_EQ(r.status, 0);
        tool_run_free(&r);
        CHECK(access(p, F_OK) != 0);
        r = nfs("rmdir", u, NULL, NULL);
        CHECK_EQ(r.status, 0);
        tool_run_free(&r);
        snprintf(p, sizeof(p), "%s/sub", d.dir);
        CHECK(access(p, F_OK) != 0);
        unlink(local);
    }
    d4_stop(&d);
}

/* The number a JSON line in out gives `name`. */
static unsigned long json_count(const char *out, const char *name)
{
    char key[64];
    snprintf(key, sizeof(key), "\"%s\":", name);
    const char *c = strstr(out, key);
    CHECK(c != NULL);
    return strtoul(c + strlen(key), NULL, 10);
}

/* get of more small files than the client keeps open (64), one at a time over RDMA: each
 * file's OPEN goes in the COMPOUND of its first READ, and the CLOSE of the file it puts
 * out of the table after it, so that a file costs what it does over NFSv3 (a LOOKUP and a
 * READ), not four calls. The client's counters say how many calls it sent. */
TEST(nfs4ops_get_opens_with_its_read)
{
    enum { FILES = 70 };
    struct d4 d = {0};
    d4_start(&d, "90");
    char back[300], p[700];
    snprintf(back, sizeof(back), "%s.back", d.dir);
    CHECK_EQ(mkdir(back, 0755), 0);
    static char urls[FILES][700];
    const char *argv[FILES + 10] = {"uiw-nfs", "--stats", "--json", "-P", "1", "get"};
    int n = 6;
    for (int i = 0; i < FILES; i++) {
        char name[32];
        snprintf(name, sizeof(name), "g%d", i);
        snprintf(p, sizeof(p), "%s/%s", d.dir, name);
        write_local(p, 1000 + (size_t)i, (unsigned)i);
        u4(&d, 1, "4.1", name, urls[i], sizeof(urls[i]));
        argv[n++] = urls[i];
    }
    argv[n++] = back;
    argv[n] = NULL;
    struct tool_run r;
    tool_run(UIW_NFS, argv, NULL, 0, 120, &r);
    CHECK_EQ(r.status, 0);
    unsigned long calls = json_count(r.out, "calls_sent");
    /* two per file, and the session's own (EXCHANGE_ID, CREATE_SESSION, RECLAIM_COMPLETE,
     * the root's lookup, DESTROY_SESSION, DESTROY_CLIENTID) */
    CHECK(calls >= 2 * FILES);
    CHECK(calls <= 2 * FILES + 10);
    tool_run_free(&r);
    for (int i = 0; i < FILES; i++) {
        char a[700], b[700];
        snprintf(a, sizeof(a), "%s/g%d", d.dir, i);
        snprintf(b, sizeof(b), "%s/g%d", back, i);
        CHECK_SAME_FILE(a, b);
    }
    rm_tree(back);
    d4_stop(&d);
}

/* put -r of a tree with 8 files in flight, get -r back. */
TEST(nfs4ops_tree_parallel)
{
    struct d4 d = {0};
    d4_start(&d, "90");
    char src[300], p[700], u[700], back[300];
    snprintf(src, sizeof(src), "%s.tree", d.dir);
    CHECK_EQ(mkdir(src, 0755), 0);
    for (int i = 0; i < 40; i++) {
        snprintf(p, sizeof(p), "%s/f%d", src, i);
        write_local(p, (size_t)i * 3001, (unsigned)i);
    }
    u4(&d, 0, "4.2", "", u, sizeof(u));
    struct tool_run r;
    const char *argv[] = {"uiw-nfs", "-r", "-P", "8", "put", src, u, NULL};
    tool_run(UIW_NFS, argv, NULL, 0, 120, &r);
    CHECK_EQ(r.status, 0);
    tool_run_free(&r);
    const char *base = strrchr(src, '/') + 1;
    for (int i = 0; i < 40; i++) {
        char a[700], b[700];
        snprintf(a, sizeof(a), "%s/f%d", src, i);
        snprintf(b, sizeof(b), "%s/%s/f%d", d.dir, base, i);
        CHECK_SAME_FILE(a, b);
    }
    snprintf(back, sizeof(back), "%s.back", d.dir);
    CHECK_EQ(mkdir(back, 0755), 0);
    u4(&d, 0, "4.2", base, u, sizeof(u));
    const char *gv[] = {"uiw-nfs", "-r", "-P", "8", "get", u, back, NULL};
    tool_run(UIW_NFS, gv, NULL, 0, 120, &r);
    CHECK_EQ(r.status, 0);
    tool_run_free(&r);
    for (int i = 0; i < 40; i++) {
        char a[700], b[700];
        snprintf(a, sizeof(a), "%s/f%d", src, i);
        snprintf(b, sizeof(b), "%s/%s/f%d", back, base, i);
        CHECK_SAME_FILE(a, b);
    }
    rm_tree(src);
    rm_tree(back);
    d4_stop(&d);
}

/* cp within the server: COPY over 4.2 (-v says so), READ and WRITE over 4.1. */
TEST(nfs4ops_cp_copy)
{
    struct d4 d = {0};
    d4_start(&d, "90");
    char p[700], a[700], b[700];
    snprintf(p, sizeof(p), "%s/src", d.dir);
    write_local(p, 2 * 1048576 + 5, 9);
    for (int v = 0; v < 2; v++) {
        char name[16];
        snprintf(name, sizeof(name), "dst%d", v);
        u4(&d, 0, versions[v], "src", a, sizeof(a));
        u4(&d, 0, versions[v], name, b, sizeof(b));
        struct tool_run r = nfs("-v", "cp", a, b);
        CHECK_EQ(r.status, 0);
        CHECK((strstr(r.err, "by COPY on the server") != NULL) == (v == 1));
        tool_run_free(&r);
        char q[700];
        snprintf(q, sizeof(q), "%s/%s", d.dir, name);
        CHECK_SAME_FILE(p, q);
    }
    d4_stop(&d);
}

/* Whether a write lock of [off, off + len) of path could be taken locally (then dropped). */
static int local_lock_ok(const char *path, off_t off, off_t len)
{
    int fd = ofd_lock(path, F_WRLCK, off, len);
    if (fd >= 0)
        close(fd);
    return fd >= 0;
}

/* uiw-nfs lock holds its lock on the server's file until SIGTERM (a local process cannot
 * lock the range meanwhile); a second uiw-nfs lock of an overlapping range is denied
 * (NFS4ERR_DENIED, polled) while the first holds it, and holds it once the first is
 * interrupted; both end with status 0 and leave the file unlocked. */
TEST(nfs4ops_lock_waits)
{
    struct d4 d = {0};
    d4_start(&d, "10");
    char p[700], url[700], cmd[1600], out1[300], out2[300];
    snprintf(p, sizeof(p), "%s/locked", d.dir);
    write_local(p, 100, 3);
    u4(&d, 0, "4.1", "locked", url, sizeof(url));
    snprintf(out1, sizeof(out1), "%s.lock1", d.dir);
    snprintf(out2, sizeof(out2), "%s.lock2", d.dir);
    snprintf(cmd, sizeof(cmd), "exec '%s' -v lock '%s' 0 50", UIW_NFS, url);
    int p1 = it_spawn(cmd, out1);
    CHECK(it_wait_for(out1, "holding the lock", p1, 60));
    CHECK(!local_lock_ok(p, 49, 1));
    CHECK(local_lock_ok(p, 50, 10));
    snprintf(cmd, sizeof(cmd), "exec '%s' -v lock '%s' 40 20", UIW_NFS, url);
    int p2 = it_spawn(cmd, out2);
    CHECK(it_wait_for(out2, "NFS4ERR_DENIED", p2, 60));
    CHECK(!it_wait_for(out2, "holding the lock", p2, 2));
    CHECK_EQ(kill(p1, SIGTERM), 0);
    CHECK_EQ(it_wait(p1, 60), 0);
    CHECK(it_wait_for(out2, "holding the lock", p2, 60));
    CHECK(!local_lock_ok(p, 59, 1));
    CHECK(local_lock_ok(p, 0, 40));
    CHECK_EQ(kill(p2, SIGTERM), 0);
    CHECK_EQ(it_wait(p2, 60), 0);
    CHECK(local_lock_ok(p, 0, 0));
    unlink(out1);
    unlink(out2);
    d4_stop(&d);
}
