/* uiw-nfsd and uiw-nfs as programs, on loopback TCP. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nfs_util.h"
#include "relay.h"
#include "run.h"
#include "test.h"

struct daemon {
    pid_t pid;
    int tcp, mount, rdma; /* rdma: -1 when off */
    char dir[256];
};

/* uiw-nfsd on 127.0.0.1 (ports 0) exporting dir, RDMA on port rdma ("-1": none), with
 * --stats or not (nfsd_spawn_argv). */
static pid_t nfsd_spawn(const char *dir, const char *rdma, bool stats, FILE **out, char *line,
                        size_t cap)
{
    const char *argv[] = {"uiw-nfsd",
                          "-a",
                          "127.0.0.1",
                          "-p",
                          rdma,
                          "--tcp-port",
                          "0",
                          "--mount-port",
                          "0",
                          "--no-root-squash",
                          "--no-nfs4", /* NFSv3: uiw-nfs falls back from 4.2 */
                          stats ? "--stats" : dir,
                          stats ? dir : NULL,
                          NULL};
    return nfsd_spawn_argv(argv, out, line, cap);
}

/* Start uiw-nfsd on a new temporary export, RPC-over-RDMA on port rdma ("-1": none);
 * wait for its ready line. */
static void daemon_start_on(struct daemon *d, const char *rdma)
{
    snprintf(d->dir, sizeof(d->dir), "/tmp/uiw-nfsd-test.XXXXXX");
    CHECK(mkdtemp(d->dir) != NULL);
    FILE *f;
    char line[256];
    d->pid = nfsd_spawn(d->dir, rdma, false, &f, line, sizeof(line));
    fclose(f);
    CHECK_EQ(sscanf(line, "uiw-nfsd: ready tcp=%d mount=%d rdma=%d", &d->tcp, &d->mount, &d->rdma),
             3);
    CHECK(d->tcp > 0 && d->mount > 0);
}

static void daemon_start(struct daemon *d)
{
    daemon_start_on(d, "-1");
}

static void daemon_stop(struct daemon *d)
{
    CHECK_EQ(kill(d->pid, SIGTERM), 0);
    int st;
    CHECK_EQ(waitpid(d->pid, &st, 0), d->pid);
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), 0);
    rm_tree(d->dir);
}

static void url(const struct daemon *d, const char *sub, char *out, size_t n)
{
    snprintf(out, n, "nfs://127.0.0.1:%d%s%s%s?mountport=%d", d->tcp, d->dir, *sub ? "/" : "", sub,
             d->mount);
}

static struct tool_run nfs(const char *a1, const char *a2, const char *a3, const char *a4)
{
    const char *argv[] = {"uiw-nfs", a1, a2, a3, a4, NULL};
    struct tool_run r;
    tool_run(UIW_NFS, argv, NULL, 0, 60, &r);
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

TEST(tools_put_get_ls_stat_cat)
{
    struct daemon d;
    daemon_start(&d);
    char local[300], back[300], u[600], ud[600], path[600];
    snprintf(local, sizeof(local), "%s.src", d.dir);
    snprintf(back, sizeof(back), "%s.back", d.dir);
    size_t sizes[] = {0, 1, 4096, 1048576, 3 * 1048576 + 17};
    for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        write_local(local, sizes[i], i);
        char name[32];
        snprintf(name, sizeof(name), "file%u", i);
        url(&d, name, u, sizeof(u));
        struct tool_run r = nfs("--verify", "put", local, u);
        CHECK_EQ(r.status, 0);
        CHECK(strstr(r.err, "verified") != NULL);
        tool_run_free(&r);
        snprintf(path, sizeof(path), "%s/%s", d.dir, name);
        CHECK_SAME_FILE(local, path);
        r = nfs("--verify", "get", u, back);
        CHECK_EQ(r.status, 0);
        CHECK(strstr(r.err, "verified") != NULL);
        tool_run_free(&r);
        CHECK_SAME_FILE(local, back);
    }
    /* put into a directory keeps the name. */
    url(&d, "", ud, sizeof(ud));
    url(&d, "sub", u, sizeof(u));
    struct tool_run r = nfs("mkdir", u, NULL, NULL);
    CHECK_EQ(r.status, 0);
    tool_run_free(&r);
    r = nfs("put", local, u, NULL);
    CHECK_EQ(r.status, 0);
    tool_run_free(&r);
    const char *base = strrchr(local, '/') + 1;
    snprintf(path, sizeof(path), "%s/sub/%s", d.dir, base);
    CHECK_SAME_FILE(local, path);
    /* ls and stat. */
    r = nfs("ls", ud, NULL, NULL);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "file0\n") != NULL);
    CHECK(strstr(r.out, " 3145745 ") != NULL);
    CHECK(strstr(r.out, "drwxr-xr-x") != NULL);
    tool_run_free(&r);
    url(&d, "file2", u, sizeof(u));
    r = nfs("stat", u, NULL, NULL);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "Size: 4096") != NULL);
    CHECK(strstr(r.out, "regular file") != NULL);
    tool_run_free(&r);
    /* cat. */
    snprintf(path, sizeof(path), "%s/hello", d.dir);
    FILE *f = fopen(path, "w");
    fputs("hello, nfs\n", f);
    fclose(f);
    url(&d, "hello", u, sizeof(u));
    r = nfs("cat", u, NULL, NULL);
    CHECK_EQ(r.status, 0);
    CHECK_STR(r.out, "hello, nfs\n");
    tool_run_free(&r);
    /* Failures: exit 1 with the NFS error; usage: exit 2. */
    url(&d, "nope", u, sizeof(u));
    r = nfs("cat", u, NULL, NULL);
    CHECK_EQ(r.status, 1);
    CHECK(strstr(r.err, "NFS3ERR_NOENT") != NULL);
    tool_run_free(&r);
    /* a last name longer than NFS allows is refused, not cut to another file's name */
    char lname[301];
    memset(lname, 'n', 300);
    lname[300] = 0;
    url(&d, lname, u, sizeof(u));
    r = nfs("put", local, u, NULL);
    CHECK_EQ(r.status, 1);
    CHECK(strstr(r.err, "NFS3ERR_NAMETOOLONG") != NULL);
    tool_run_free(&r);
    snprintf(path, sizeof(path), "%s/%.255s", d.dir, lname);
    CHECK(access(path, F_OK) != 0);
    url(&d, "nope", u, sizeof(u));
    r = nfs("frobnicate", u, NULL, NULL);
    CHECK_EQ(r.status, 2);
    tool_run_free(&r);
    r = nfs("get", "http://x/y", NULL, NULL);
    CHECK_EQ(r.status, 1);
    tool_run_free(&r);
    r = nfs("-b", "12x", "get", u);
    CHECK_EQ(r.status, 2);
    tool_run_free(&r);
    unlink(local);
    unlink(back);
    daemon_stop(&d);
}

TEST(tools_cp_mv_rm_mkdir_rmdir_bench)
{
    struct daemon d;
    daemon_start(&d);
    char local[300], u[600], u2[600], path[600];
    snprintf(local, sizeof(local), "%s.src", d.dir);
    write_local(local, 2 * 1048576 + 5, 9);
    url(&d, "a", u, sizeof(u));
    struct tool_run r = nfs("cp", local, u, NULL);
    CHECK_EQ(r.status, 0);
    tool_run_free(&r);
    /* URL to URL. */
    url(&d, "b", u2, sizeof(u2));
    r = nfs("--verify", "cp", u, u2);
    CHECK_EQ(r.status, 0);
    tool_run_free(&r);
    snprintf(path, sizeof(path), "%s/b", d.dir);
    CHECK_SAME_FILE(local, path);
    /* mkdir, mv into it, rm, rmdir. */
    url(&d, "dir", u, sizeof(u));
    r = nfs("mkdir", u, NULL, NULL);
    CHECK_EQ(r.status, 0);
    tool_run_free(&r);
    r = nfs("mkdir", u, NULL, NULL);
    CHECK_EQ(r.status, 1);
    CHECK(strstr(r.err, "NFS3ERR_EXIST") != NULL);
    tool_run_free(&r);
    url(&d, "dir/c", u, sizeof(u));
    r = nfs("mv", u2, u, NULL);
    CHECK_EQ(r.status, 0);
    tool_run_free(&r);
    snprintf(path, sizeof(path), "%s/dir/c", d.dir);
    CHECK_SAME_FILE(local, path);
    url(&d, "dir", u2, sizeof(u2));
    r = nfs("rmdir", u2, NULL, NULL);
    CHECK_EQ(r.status, 1);
    CHECK(strstr(r.err, "NFS3ERR_NOTEMPTY") != NULL);
    tool_run_free(&r);
    r = nfs("rm", u, NULL, NULL);
    CHECK_EQ(r.status, 0);
    tool_run_free(&r);
    r = nfs("rmdir", u2, NULL, NULL);
    CHECK_EQ(r.status, 0);
    tool_run_free(&r);
    CHECK_EQ(access(path, F_OK), -1);
    /* bench --json: four lines, the file removed afterwards; the CPU time of uiw-nfs and
     * of the server (--cpu-of) in each */
    url(&d, "", u, sizeof(u));
    char pid[16];
    snprintf(pid, sizeof(pid), "%d", (int)d.pid);
    const char *argv[] = {"uiw-nfs", "bench",    "--json", "-s", "4M", "-D",
                          "0.5",     "--cpu-of", pid,      u,    NULL};
    tool_run(UIW_NFS, argv, NULL, 0, 60, &r);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "{\"test\":\"write\",\"size\":4194304,") != NULL);
    CHECK(strstr(r.out, "{\"test\":\"read\",\"size\":4194304,") != NULL);
    CHECK(strstr(r.out, "\"transport\":\"tcp\"") != NULL);
    const char *g = strstr(r.out, "{\"test\":\"getattr\",");
    CHECK(g != NULL);
    const char *cpu = strstr(g, "\"cpu_s\":"), *srv = strstr(g, "\"server_cpu_s\":");
    CHECK(cpu != NULL && srv != NULL && srv < strchr(g, '\n'));
    /* half a second of calls one at a time: both sides busy, neither beyond the wall time */
    double cs = strtod(cpu + 8, NULL), ss = strtod(srv + 15, NULL);
    printf("getattr for 0.5 s: uiw-nfs %.3f s of CPU, uiw-nfsd %.3f s\n", cs, ss);
    CHECK(cs > 0 && ss > 0 && cs < 1.0 && ss < 1.0);
    tool_run_free(&r);
    r = nfs("ls", u, NULL, NULL);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "uiw-nfs-bench") == NULL);
    tool_run_free(&r);
    unlink(local);
    daemon_stop(&d);
}

TEST(tools_usage)
{
    const char *h[] = {"uiw-nfsd", "--help", NULL};
    struct tool_run r;
    tool_run(UIW_NFSD, h, NULL, 0, 10, &r);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "usage: uiw-nfsd") != NULL);
    tool_run_free(&r);
    const char *bad[][2] = {{"--tcp-port", "70000"},
                            {"--rdma-threads", "0"},
                            {"--rdma-threads", "4x"},
                            {"--max-handles", "15"}};
    for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *argv[] = {"uiw-nfsd", bad[i][0], bad[i][1], "/tmp", NULL};
        tool_run(UIW_NFSD, argv, NULL, 0, 10, &r);
        CHECK_EQ(r.status, 2);
        tool_run_free(&r);
    }
    const char *none[] = {"uiw-nfsd", "--tcp-port",       "0", "--mount-port", "0", "-p",
                          "-1",       "/nonexistent-uiw", NULL};
    tool_run(UIW_NFSD, none, NULL, 0, 10, &r);
    CHECK_EQ(r.status, 1);
    tool_run_free(&r);
    const char *v[] = {"uiw-nfs", "--version", NULL};
    tool_run(UIW_NFS, v, NULL, 0, 10, &r);
    CHECK_EQ(r.status, 0);
    CHECK(strncmp(r.out, "uiw-nfs ", 8) == 0);
    tool_run_free(&r);
}

static int count_of(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

/* The "process_cpu_s" of every object of a --json output (the CPU time uiw-nfs had used
 * when that file's figures were made; the objects come out in the files' order, which is
 * not the order they end in): n of them, each above 0, the last (what the whole run
 * cost) none below. */
static void check_process_cpu(const char *out, int n)
{
    const char *key = "\"process_cpu_s\":";
    CHECK_EQ(count_of(out, key), n);
    double most = 0, last = 0;
    for (const char *p = out; (p = strstr(p, key)) != NULL; p += strlen(key)) {
        last = strtod(p + strlen(key), NULL);
        CHECK(last > 0);
        most = last > most ? last : most;
    }
    CHECK(last == most);
}

/* put and get of several files, over one MOUNT and connection, with --json figures: one
 * object per file and a total (what scripts/nfs-demo.sh reads). */
TEST(tools_many_files_json)
{
    struct daemon d;
    daemon_start(&d);
    char src[300], back[300], names[3][400], u[600], us[3][600];
    snprintf(src, sizeof(src), "%s.src", d.dir);
    snprintf(back, sizeof(back), "%s.back", d.dir);
    CHECK_EQ(mkdir(src, 0755), 0);
    CHECK_EQ(mkdir(back, 0755), 0);
    size_t sizes[3] = {4096, 70000, 2 * 1048576 + 3};
    for (int i = 0; i < 3; i++) {
        snprintf(names[i], sizeof(names[i]), "%s/f%d", src, i);
        write_local(names[i], sizes[i], (unsigned)i + 5);
    }
    url(&d, "dir", u, sizeof(u));
    struct tool_run r = nfs("mkdir", u, NULL, NULL);
    CHECK_EQ(r.status, 0);
    tool_run_free(&r);
    const char *put[] = {"uiw-nfs", "-v",     "--json", "--verify", "put",
                         names[0],  names[1], names[2], u,          NULL};
    tool_run(UIW_NFS, put, NULL, 0, 60, &r);
    CHECK_EQ(r.status, 0);
    CHECK_EQ(count_of(r.err, "verified"), 3);
    CHECK_EQ(count_of(r.err, "MOUNT v3 at"), 1);
    CHECK_EQ(count_of(r.out, "{\"op\":\"put\",\"file\":"), 3);
    CHECK(strstr(r.out, "/dir/f0?mountport=") != NULL);
    CHECK(strstr(r.out, "\"bytes\":4096,") != NULL);
    /* The total: 3 files, every byte, 1 + 1 + 3 WRITE calls of at most 1 MiB. */
    CHECK(strstr(r.out, "{\"op\":\"put\",\"files\":3,\"transport\":\"tcp\",\"bytes\":2171251,") !=
          NULL);
    CHECK(strstr(r.out, "\"calls\":5,") != NULL);
    CHECK_EQ(count_of(r.out, "\"version\":\"3\""), 4); /* every file's and the total */
    check_process_cpu(r.out, 4);
    tool_run_free(&r);
    for (int i = 0; i < 3; i++) {
        char rel[32];
        snprintf(rel, sizeof(rel), "dir/f%d", i);
        url(&d, rel, us[i], sizeof(us[i]));
    }
    const char *get[] = {"uiw-nfs", "-v",  "--json", "--verify", "get",
                         us[0],     us[1], us[2],    back,       NULL};
    tool_run(UIW_NFS, get, NULL, 0, 60, &r);
    CHECK_EQ(r.status, 0);
    CHECK_EQ(count_of(r.err, "verified"), 3);
    CHECK_EQ(count_of(r.err, "MOUNT v3 at"), 1);
    CHECK_EQ(count_of(r.out, "{\"op\":\"get\",\"file\":"), 3);
    CHECK(strstr(r.out, "{\"op\":\"get\",\"files\":3,\"transport\":\"tcp\",\"bytes\":2171251,") !=
          NULL);
    CHECK(strstr(r.out, "\"sha256\":\"") != NULL);
    CHECK_EQ(count_of(r.out, "\"version\":\"3\""), 4);
    check_process_cpu(r.out, 4);
    tool_run_free(&r);
    for (int i = 0; i < 3; i++) {
        char b[400];
        snprintf(b, sizeof(b), "%s/f%d", back, i);
        CHECK_SAME_FILE(names[i], b);
    }
    /* Several files need a directory on the other side; --json needs standard output. */
    url(&d, "dir/f0", u, sizeof(u));
    const char *bad[] = {"uiw-nfs", "put", names[0], names[1], u, NULL};
    tool_run(UIW_NFS, bad, NULL, 0, 60, &r);
    CHECK_EQ(r.status, 1);
    CHECK(strstr(r.err, "is not a directory") != NULL);
    tool_run_free(&r);
    const char *bad2[] = {"uiw-nfs", "get", us[0], us[1], names[0], NULL};
    tool_run(UIW_NFS, bad2, NULL, 0, 60, &r);
    CHECK_EQ(r.status, 2);
    tool_run_free(&r);
    const char *bad3[] = {"uiw-nfs", "--json", "get", us[0], "-", NULL};
    tool_run(UIW_NFS, bad3, NULL, 0, 60, &r);
    CHECK_EQ(r.status, 2);
    tool_run_free(&r);
    rm_tree(src);
    rm_tree(back);
    daemon_stop(&d);
}

/* uiw-nfs argv (put or get --json --verify of two files, of 1 MiB and 1 MiB + 5000 bytes,
 * over NFSv4.1 and RPC-over-RDMA Version Two): an object a file and their total, each
 * with its calls' latencies and the version; 1 + 2 calls of at most 1 MiB in all. */
static void check_json_nfs41(const char *const *argv, const char *op)
{
    struct tool_run r;
    tool_run(UIW_NFS, argv, NULL, 0, 60, &r);
    CHECK_EQ(r.status, 0);
    CHECK_EQ(count_of(r.err, "verified"), 2);
    char want[200];
    snprintf(want, sizeof(want), "{\"op\":\"%s\",\"file\":", op);
    CHECK_EQ(count_of(r.out, want), 2);
    snprintf(want, sizeof(want),
             "{\"op\":\"%s\",\"files\":2,\"transport\":\"rdma-v2\",\"bytes\":2102152,", op);
    CHECK(strstr(r.out, want) != NULL);
    CHECK(strstr(r.out, "\"calls\":3,") != NULL);
    CHECK_EQ(count_of(r.out, "\"p50_us\":"), 3);
    CHECK_EQ(count_of(r.out, "\"p99_us\":"), 3);
    CHECK_EQ(count_of(r.out, "\"version\":\"4.1\""), 3);
    CHECK(strstr(r.out, "\"p50_us\":0.0") == NULL); /* a latency measured, not left 0 */
    check_process_cpu(r.out, 3);
    tool_run_free(&r);
}

/* put and get --json --verify over NFSv4.1 and RPC-over-RDMA Version Two, as
 * scripts/nfs-demo.sh runs them beside NFSv3: the same figures a file and in the total
 * (bytes, calls, the calls' latencies), the version and transport named. */
TEST(tools_json_nfs4_rdma)
{
    char dir[] = "/tmp/uiw-nfsd-json4.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char src[300], back[300], names[2][400];
    snprintf(src, sizeof(src), "%s.src", dir);
    snprintf(back, sizeof(back), "%s.back", dir);
    CHECK_EQ(mkdir(src, 0755), 0);
    CHECK_EQ(mkdir(back, 0755), 0);
    for (int i = 0; i < 2; i++) {
        snprintf(names[i], sizeof(names[i]), "%s/f%d", src, i);
        write_local(names[i], 1048576 + (size_t)i * 5000, (unsigned)i + 11);
    }
    const char *argv[] = {"uiw-nfsd",     "-a", "127.0.0.1",        "-p", "0", "--tcp-port", "0",
                          "--mount-port", "0",  "--no-root-squash", dir,  NULL};
    FILE *f;
    char line[256];
    pid_t pid = nfsd_spawn_argv(argv, &f, line, sizeof(line));
    fclose(f);
    int tcp = 0, mount = 0, rdma = 0;
    CHECK_EQ(sscanf(line, "uiw-nfsd: ready tcp=%d mount=%d rdma=%d", &tcp, &mount, &rdma), 3);
    CHECK(rdma > 0);
    char u[600], us[2][600];
    snprintf(u, sizeof(u), "nfs://127.0.0.1:%d%s/d?transport=rdma&rpcrdma=2&version=4.1", rdma,
             dir);
    const char *mk[] = {"uiw-nfs", "mkdir", u, NULL};
    struct tool_run r;
    tool_run(UIW_NFS, mk, NULL, 0, 60, &r);
    CHECK_EQ(r.status, 0);
    tool_run_free(&r);
    const char *put[] = {"uiw-nfs", "--json", "--verify", "put", names[0], names[1], u, NULL};
    check_json_nfs41(put, "put");
    for (int i = 0; i < 2; i++)
        snprintf(us[i], sizeof(us[i]),
                 "nfs://127.0.0.1:%d%s/d/f%d?transport=rdma&rpcrdma=2&version=4.1", rdma, dir, i);
    const char *get[] = {"uiw-nfs", "--json", "--verify", "get", us[0], us[1], back, NULL};
    check_json_nfs41(get, "get");
    for (int i = 0; i < 2; i++) {
        char b[400];
        snprintf(b, sizeof(b), "%s/f%d", back, i);
        CHECK_SAME_FILE(names[i], b);
    }
    CHECK_EQ(kill(pid, SIGTERM), 0);
    int st = 0;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    rm_tree(dir);
    rm_tree(src);
    rm_tree(back);
}

/* `sh -c cmd`, its output captured. */
static struct tool_run shell(const char *cmd)
{
    const char *argv[] = {"sh", "-c", cmd, NULL};
    struct tool_run r;
    tool_run("/bin/sh", argv, NULL, 0, 60, &r);
    return r;
}

/* The progress bar: drawn (on standard error, redrawn with '\r', ended by a newline) for
 * a transfer longer than a second when asked for, not for a shorter one, and not by
 * default when standard error is no terminal. --verify's SHA-256 is that of the data,
 * put and got back, and both files are the original byte for byte. */
TEST(tools_progress_and_verify)
{
    struct daemon d;
    daemon_start(&d);
    char u[600], cmd[2048], path[600];
    const char *modes[] = {"--progress", "--no-progress", "-v"};
    for (unsigned i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof(name), "slow%u", i);
        url(&d, name, u, sizeof(u));
        /* a source that takes 1.5 s once uiw-nfs reads it: two thirds of its bytes (the
         * first head ends only when uiw-nfs has emptied the 64 KiB pipe once, however long
         * its start took), a pause, the rest */
        snprintf(cmd, sizeof(cmd),
                 "(head -c 131072 /dev/zero; sleep 1.5; head -c 65536 /dev/zero) | '%s' %s put - "
                 "'%s'",
                 UIW_NFS, modes[i], u);
        struct tool_run r = shell(cmd);
        CHECK_EQ(r.status, 0);
        bool bar = strchr(r.err, '\r') != NULL;
        if (i == 0) {
            CHECK(bar);
            CHECK(strstr(r.err, "] ") != NULL && strstr(r.err, " MB/s ") != NULL);
            CHECK(r.errlen > 0 && r.err[r.errlen - 1] == '\n');
        } else if (bar) {
            uiw_test_fail(__FILE__, __LINE__, "a progress bar with %s:\n%s", modes[i], r.err);
        }
        tool_run_free(&r);
        snprintf(path, sizeof(path), "%s/%s", d.dir, name);
        struct stat st;
        CHECK_EQ(stat(path, &st), 0);
        CHECK_EQ(st.st_size, 196608);
    }
    /* a short transfer: no bar even when asked for */
    char local[300];
    snprintf(local, sizeof(local), "%s.src", d.dir);
    write_local(local, 300000, 4);
    url(&d, "short", u, sizeof(u));
    const char *argv[] = {"uiw-nfs", "--progress", "--verify", "put", local, u, NULL};
    struct tool_run r;
    tool_run(UIW_NFS, argv, NULL, 0, 60, &r);
    CHECK_EQ(r.status, 0);
    CHECK(strchr(r.err, '\r') == NULL);
    /* "verified URL: sha256 HEX": the SHA-256 of the file */
    const char *v = strstr(r.err, ": sha256 ");
    CHECK(strstr(r.err, "verified") != NULL && v != NULL);
    snprintf(cmd, sizeof(cmd), "sha256sum < '%s'", local);
    struct tool_run s = shell(cmd);
    CHECK_EQ(s.status, 0);
    CHECK(strlen(s.out) >= 64 && strlen(v + 9) >= 64);
    CHECK_MEM(v + 9, s.out, 64);
    char s_hex[64];
    memcpy(s_hex, s.out, 64);
    tool_run_free(&s);
    tool_run_free(&r);
    snprintf(path, sizeof(path), "%s/short", d.dir);
    CHECK_SAME_FILE(local, path);
    /* get --verify: the file fetched is the original; its SHA-256 is the file's */
    char back[300];
    snprintf(back, sizeof(back), "%s.back", d.dir);
    const char *get[] = {"uiw-nfs", "--verify", "get", u, back, NULL};
    tool_run(UIW_NFS, get, NULL, 0, 60, &r);
    CHECK_EQ(r.status, 0);
    v = strstr(r.err, "verified");
    CHECK(v != NULL && (v = strstr(v, ": sha256 ")) != NULL && strlen(v + 9) >= 64);
    CHECK_MEM(v + 9, s_hex, 64);
    CHECK(strstr(r.err, ", 300000 bytes") != NULL);
    tool_run_free(&r);
    CHECK_SAME_FILE(local, back);
    unlink(back);
    unlink(local);
    daemon_stop(&d);
}

#if UIW_NFS_HAVE_RDMA
/* Read from f until `what` has come (or the end): what was read, in buf. */
static void read_until(FILE *f, const char *what, char *buf, size_t n)
{
    size_t len = strlen(buf);
    while (!strstr(buf, what) && len + 1 < n && fgets(buf + len, (int)(n - len), f))
        len += strlen(buf + len);
}

/* --stats over RPC-over-RDMA: uiw-nfs prints its connection's counters after a GET of
 * 1 MiB (one READ, its data in one Write chunk, placed without a copy) and a PUT of 1 MiB
 * (one WRITE, its data in one Read chunk); uiw-nfsd prints the server's on SIGUSR1 and
 * again as SIGTERM ends it, with its open-file cache's. */
TEST(tools_stats_rdma)
{
    char dir[] = "/tmp/uiw-nfsd-stats.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char file[300], back[300];
    snprintf(file, sizeof(file), "%s/f", dir);
    snprintf(back, sizeof(back), "%s.back", dir);
    write_local(file, 1048576, 9);
    FILE *f;
    char out[8192];
    pid_t pid = nfsd_spawn(dir, "0", true, &f, out, sizeof(out));
    int tcp, mount, rdma;
    CHECK_EQ(sscanf(out, "uiw-nfsd: ready tcp=%d mount=%d rdma=%d", &tcp, &mount, &rdma), 3);
    CHECK(rdma > 0);
    char u[600];
    snprintf(u, sizeof(u), "nfs://127.0.0.1:%d%s/f?mountport=%d&transport=rdma", rdma, dir, mount);
    const char *get[] = {"uiw-nfs", "--stats", "--json", "-b", "1M", "get", u, back, NULL};
    struct tool_run r;
    tool_run(UIW_NFS, get, NULL, 0, 60, &r);
    CHECK_EQ(r.status, 0);
    CHECK_SAME_FILE(file, back);
    const char *st = strstr(r.out, "{\"stats\":{\"connections\":1,");
    CHECK(st != NULL);
    CHECK(strstr(st, "\"retransmits\":0,") != NULL);
    CHECK(strstr(st, "\"credits_granted_by_peer\":64,") != NULL);
    CHECK(strstr(st, "\"read_chunks\":0,\"write_chunks\":1,\"reply_chunks\":0,") != NULL);
    CHECK(strstr(st, "\"rdma_read_bytes\":0,\"rdma_write_bytes\":1048576,") != NULL);
    CHECK(strstr(st, "\"errors_received\":[0,0,0,0,0,0]") != NULL);
    const char *cp = strstr(st, "\"copied_payload_bytes\":");
    CHECK(cp != NULL);
    CHECK(strtoull(cp + strlen("\"copied_payload_bytes\":"), NULL, 10) < 65536);
    tool_run_free(&r);
    /* the server's counters, on SIGUSR1 and at the end */
    out[0] = 0;
    CHECK_EQ(kill(pid, SIGUSR1), 0);
    read_until(f, "   CRC errors:", out, sizeof(out));
    CHECK(strstr(out, " uiw RPC-over-RDMA counters (server)\n") != NULL);
    CHECK(strstr(out, "   chunks     : 0 Read, 1 Write, 0 Reply, 0 long calls\n") != NULL);
    CHECK(strstr(out, "   RDMA       : 0 bytes by Read, 1048576 bytes by Write\n") != NULL);
    CHECK(strstr(out, "   credits    : 1 granted by the peer, 64 granted to it,") != NULL);
    /* cat: standard output carries the file, the counters go to standard error */
    const char *cat[] = {"uiw-nfs", "--stats", "cat", u, NULL};
    tool_run(UIW_NFS, cat, NULL, 0, 60, &r);
    CHECK_EQ(r.status, 0);
    CHECK_EQ(r.outlen, (size_t)1048576);
    CHECK(strstr(r.err, " uiw RPC-over-RDMA counters (client)\n") != NULL);
    tool_run_free(&r);
    /* put: the WRITE's 1 MiB goes in one Read chunk, pulled by the server's RDMA Read */
    char u2[600];
    snprintf(u2, sizeof(u2), "nfs://127.0.0.1:%d%s/g?mountport=%d&transport=rdma", rdma, dir,
             mount);
    const char *put[] = {"uiw-nfs", "--stats", "--json", "-b", "1M", "put", file, u2, NULL};
    tool_run(UIW_NFS, put, NULL, 0, 60, &r);
    CHECK_EQ(r.status, 0);
    st = strstr(r.out, "{\"stats\":{\"connections\":1,");
    CHECK(st != NULL);
    CHECK(strstr(st, "\"read_chunks\":1,\"write_chunks\":0,\"reply_chunks\":0,") != NULL);
    CHECK(strstr(st, "\"rdma_read_bytes\":1048576,\"rdma_write_bytes\":0,") != NULL);
    tool_run_free(&r);
    snprintf(u2, sizeof(u2), "%s/g", dir);
    CHECK_SAME_FILE(file, u2);
    out[0] = 0;
    CHECK_EQ(kill(pid, SIGTERM), 0);
    read_until(f, "   CRC errors:", out, sizeof(out));
    CHECK(strstr(out, " uiw RPC-over-RDMA counters (server)\n   calls      : 0 sent, ") != NULL);
    /* and the open-file cache's (after SIGUSR1's): f opened to read, g to write */
    out[0] = 0;
    read_until(f, "uiw-nfsd: open files: ", out, sizeof(out));
    const char *of = strstr(out, "uiw-nfsd: open files: ");
    CHECK(of != NULL);
    unsigned fds = 0, max_fds = 0;
    unsigned long opens = 0, hits = 0;
    CHECK_EQ(sscanf(of, "uiw-nfsd: open files: %u descriptors (at most %u), %lu opens, %lu hits",
                    &fds, &max_fds, &opens, &hits),
             4);
    CHECK(fds <= 2);
    CHECK(max_fds >= 8);
    CHECK(opens >= 2);
    fclose(f);
    int ws;
    CHECK_EQ(waitpid(pid, &ws, 0), pid);
    CHECK(WIFEXITED(ws));
    CHECK_EQ(WEXITSTATUS(ws), 0);
    unlink(back);
    rm_tree(dir);
}

/* uiw-nfsd on a free RPC-over-RDMA port serving dir, with the options extra (NULL-ended);
 * the URL of its file f in u. */
static pid_t rdma_server(const char *dir, const char *const *extra, char *u, size_t n)
{
    const char *argv[16] = {"uiw-nfsd",   "-a", "127.0.0.1",    "-p", "0",
                            "--tcp-port", "0",  "--mount-port", "0",  "--no-root-squash",
                            "--no-nfs4",  NULL};
    unsigned k = 11;
    while (*extra && k < 14)
        argv[k++] = *extra++;
    argv[k++] = dir;
    argv[k] = NULL;
    FILE *f;
    char out[256];
    pid_t pid = nfsd_spawn_argv(argv, &f, out, sizeof(out));
    fclose(f);
    int tcp, mount, rdma;
    CHECK_EQ(sscanf(out, "uiw-nfsd: ready tcp=%d mount=%d rdma=%d", &tcp, &mount, &rdma), 3);
    snprintf(u, n, "nfs://127.0.0.1:%d%s/f?mountport=%d&transport=rdma", rdma, dir, mount);
    return pid;
}

/* uiw-nfs -v --stats --json OPTS... VERB FROM TO: its client's counters hold want, and
 * what it says of the connection holds line (NULL: anything). */
static void xfer_counts(const char *const *opts, const char *verb, const char *from, const char *to,
                        const char *line, const char *want)
{
    const char *argv[16] = {"uiw-nfs", "-v", "--stats", "--json"};
    unsigned n = 4;
    while (*opts && n < 12)
        argv[n++] = *opts++;
    argv[n++] = verb;
    argv[n++] = from;
    argv[n++] = to;
    argv[n] = NULL;
    struct tool_run r;
    tool_run(UIW_NFS, argv, NULL, 0, 60, &r);
    CHECK_EQ(r.status, 0);
    const char *st = strstr(r.out, "{\"stats\":{\"connections\":1,");
    CHECK(st != NULL);
    if (!strstr(st, want) || (line && !strstr(r.err, line)))
        uiw_test_fail(__FILE__, __LINE__, "%s %s: want %s and %s in:\n%s%s", verb, from, want,
                      line ? line : "-", r.err, st);
    tool_run_free(&r);
}

/* RPC-over-RDMA Version Two: uiw-nfs and uiw-nfsd agree on 32 KiB receive buffers (RBSIZ),
 * so 4 KiB WRITEs and a 16 KiB READ travel inline, with no chunk and no RDMA Read or
 * Write; over Version One they go by chunks as before (RFC 8797's 4 KiB), and so they do
 * with a Version Two client, or server, that keeps 4 KiB buffers. */
TEST(tools_rdma_inline_v2)
{
    char dir[] = "/tmp/uiw-nfsd-inline.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char file[300], back[300], u[600], u1[620];
    snprintf(file, sizeof(file), "%s.src", dir);
    snprintf(back, sizeof(back), "%s.back", dir);
    write_local(file, 16384, 3);
    const char *none[] = {NULL}, *small_srv[] = {"--inline-size", "4096", NULL};
    const char *b4[] = {"-b", "4096", NULL}, *b16[] = {"-b", "16384", NULL};
    const char *b4s[] = {"-b", "4096", "--inline-size", "4096", "--ddp-threshold", "1024", NULL};
    const char *b16s[] = {"-b", "16384", "--inline-size", "4096", NULL};
    const char *no_rdma = "\"read_chunks\":0,\"write_chunks\":0,\"reply_chunks\":0,"
                          "\"long_calls\":0,\"rdma_read_bytes\":0,\"rdma_write_bytes\":0,";
    const char *four_reads = "\"read_chunks\":4,\"write_chunks\":0,\"reply_chunks\":0,"
                             "\"long_calls\":0,\"rdma_read_bytes\":16384,";
    const char *one_write = "\"rdma_read_bytes\":0,\"rdma_write_bytes\":16384,";
    pid_t pid = rdma_server(dir, none, u, sizeof(u));
    snprintf(u1, sizeof(u1), "%s&rpcrdma=1", u);
    const struct {
        const char *const *put, *const *get;
        const char *url, *line, *put_want, *get_want;
    } runs[] = {
        /* Version Two: inline both ways */
        {b4, b16, u, "RPC-over-RDMA Version 2, 64 credits, inline 32768/32768", no_rdma, no_rdma},
        /* Version One: RFC 8797's 4 KiB, the data in chunks */
        {b4, b16, u1, "RPC-over-RDMA Version 1, 64 credits, inline 4096/4096", four_reads,
         one_write},
        /* a Version Two client with 4 KiB buffers: chunks, as before */
        {b4s, b16s, u, "RPC-over-RDMA Version 2, 64 credits, inline 4096/4096", four_reads,
         one_write},
        /* (after a restart) a server that keeps 4 KiB buffers: chunks, as before */
        {b4, b16, u, "RPC-over-RDMA Version 2, 64 credits, inline 4096/32768", four_reads,
         one_write},
    };
    for (unsigned k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
        if (k == 3) {
            CHECK_EQ(kill(pid, SIGTERM), 0);
            CHECK_EQ(waitpid(pid, NULL, 0), pid);
            pid = rdma_server(dir, small_srv, u, sizeof(u));
        }
        xfer_counts(runs[k].put, "put", file, runs[k].url, runs[k].line, runs[k].put_want);
        xfer_counts(runs[k].get, "get", runs[k].url, back, NULL, runs[k].get_want);
        CHECK_SAME_FILE(file, back);
        unlink(back);
    }
    CHECK_EQ(kill(pid, SIGTERM), 0);
    CHECK_EQ(waitpid(pid, NULL, 0), pid);
    unlink(file);
    rm_tree(dir);
}
#endif

#if UIW_NFS_HAVE_RDMA
/* The CPU time (user + system) pid has used, from /proc/PID/stat, in clock ticks. */
static long cpu_ticks(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the command may hold spaces */
    CHECK(p != NULL);
    long utime = 0, stime = 0;
    /* after ")": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
     * stime */
    CHECK_EQ(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &utime, &stime),
             2);
    return utime + stime;
}

/* An idle server sleeps: after calls over TCP and over RDMA have come and gone, uiw-nfsd
 * uses less than a twentieth of a CPU (a call thread that kept looking for work once used
 * a whole one, and halved RPC-over-RDMA's rate on two cores). */
TEST(tools_idle_server_sleeps)
{
    char dir[] = "/tmp/uiw-nfsd-idle.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char file[300];
    snprintf(file, sizeof(file), "%s/f", dir);
    write_local(file, 65536, 3);
    FILE *f;
    char out[512];
    pid_t pid = nfsd_spawn(dir, "0", false, &f, out, sizeof(out));
    fclose(f);
    int tcp, mount, rdma;
    CHECK_EQ(sscanf(out, "uiw-nfsd: ready tcp=%d mount=%d rdma=%d", &tcp, &mount, &rdma), 3);
    char u[600];
    struct tool_run r;
    for (int i = 0; i < 2; i++) {
        snprintf(u, sizeof(u), "nfs://127.0.0.1:%d%s/f?mountport=%d%s", i ? rdma : tcp, dir, mount,
                 i ? "&transport=rdma" : "");
        const char *cat[] = {"uiw-nfs", "cat", u, NULL};
        tool_run(UIW_NFS, cat, NULL, 0, 60, &r);
        CHECK_EQ(r.status, 0);
        CHECK_EQ(r.outlen, (size_t)65536);
        tool_run_free(&r);
    }
    usleep(200000); /* let the last connection's threads finish */
    long hz = sysconf(_SC_CLK_TCK);
    long before = cpu_ticks(pid);
    sleep(2);
    long used = cpu_ticks(pid) - before;
    printf("idle uiw-nfsd used %ld of %ld ticks in 2 s\n", used, 2 * hz);
    CHECK(used * 20 < 2 * hz);
    CHECK_EQ(kill(pid, SIGTERM), 0);
    int ws;
    CHECK_EQ(waitpid(pid, &ws, 0), pid);
    CHECK(WIFEXITED(ws));
    rm_tree(dir);
}
#endif

/* uiw-nfsd --check-exports: the exports as the server takes them, or the first error's
 * line and exit status 1. */
TEST(tools_check_exports)
{
    char path[64];
    snprintf(path, sizeof(path), "/tmp/uiw-exports.XXXXXX");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    const char *good = "# exports\n/srv/a 127.0.0.1(rw) *\n\"/srv/b c\" -async 10.0.0.0/8\n";
    CHECK_EQ(write(fd, good, strlen(good)), (ssize_t)strlen(good));
    close(fd);
    const char *argv[] = {"uiw-nfsd", "--check-exports", path, NULL};
    struct tool_run r;
    tool_run(UIW_NFSD, argv, NULL, 0, 30, &r);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "/srv/a 127.0.0.1(rw,root_squash,no_all_squash,anonuid=65534,"
                        "anongid=65534,secure,sync,no_subtree_check,sec=sys:none) *(ro,") != NULL);
    CHECK(strstr(r.out, "/srv/b\\040c 10.0.0.0/8(ro,") != NULL);
    CHECK(strstr(r.out, ",async,") != NULL);
    tool_run_free(&r);
    const char *bad = "/srv/a *(rw)\n\n/srv/b *(rw,no_such_option)\n";
    fd = open(path, O_WRONLY | O_TRUNC);
    CHECK(fd >= 0);
    CHECK_EQ(write(fd, bad, strlen(bad)), (ssize_t)strlen(bad));
    close(fd);
    tool_run(UIW_NFSD, argv, NULL, 0, 30, &r);
    CHECK_EQ(r.status, 1);
    char want[128];
    snprintf(want, sizeof(want), "%s:3: unknown option 'no_such_option'", path);
    CHECK(strstr(r.err, want) != NULL);
    tool_run_free(&r);
    unlink(path);
}

/* uiw-nfsd -e FILE whose export is secure (the default): uiw-nfs run as root connects
 * from a port below 1024, as the kernel's client does, and is served; SIGHUP with an error
 * in the file leaves the server as it was (it used to end it); a file with an error does
 * not start the server. */
TEST(root_tools_exports_file_secure)
{
    uiw_test_require_root();
    char dir[64], file[80];
    snprintf(dir, sizeof(dir), "/tmp/uiw-nfsd-secure.XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    snprintf(file, sizeof(file), "%s.exports", dir);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL);
    fprintf(f, "%s 127.0.0.1(rw,no_root_squash)\n", dir);
    fclose(f);
    const char *argv[] = {"uiw-nfsd",   "-e", file,           "-a", "127.0.0.1", "-p", "-1",
                          "--tcp-port", "0",  "--mount-port", "0",  "--no-nfs4", NULL};
    FILE *out;
    char line[256];
    pid_t pid = nfsd_spawn_argv(argv, &out, line, sizeof(line));
    fclose(out);
    int tcp, mount, rdma;
    CHECK_EQ(sscanf(line, "uiw-nfsd: ready tcp=%d mount=%d rdma=%d", &tcp, &mount, &rdma), 3);
    char local[96], u[512];
    snprintf(local, sizeof(local), "%s.src", dir);
    f = fopen(local, "w");
    CHECK(f != NULL);
    fputs("secure\n", f);
    fclose(f);
    snprintf(u, sizeof(u), "nfs://127.0.0.1:%d%s/f?mountport=%d", tcp, dir, mount);
    struct tool_run r = nfs("--verify", "put", local, u);
    if (r.status != 0)
        uiw_test_fail(__FILE__, __LINE__, "put: %s", r.err);
    tool_run_free(&r);
    /* SIGHUP reads the file again: with an error, the server goes on as it was */
    f = fopen(file, "w");
    CHECK(f != NULL);
    fprintf(f, "%s 127.0.0.1(rw,bogus)\n", dir);
    fclose(f);
    CHECK_EQ(kill(pid, SIGHUP), 0);
    usleep(300000);
    r = nfs("--verify", "put", local, u);
    if (r.status != 0)
        uiw_test_fail(__FILE__, __LINE__, "put after SIGHUP: %s", r.err);
    tool_run_free(&r);
    CHECK_EQ(kill(pid, SIGTERM), 0);
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    /* an error in the file: no server, the line said */
    f = fopen(file, "w");
    CHECK(f != NULL);
    fprintf(f, "%s 127.0.0.1(rw,bogus)\n", dir);
    fclose(f);
    struct tool_run e;
    tool_run(UIW_NFSD, argv, NULL, 0, 30, &e);
    CHECK_EQ(e.status, 1);
    CHECK(strstr(e.err, ":1: unknown option 'bogus'") != NULL);
    tool_run_free(&e);
    unlink(local);
    unlink(file);
    rm_tree(dir);
}

/* rpcinfo's list from the rpcbind at 127.0.0.1: whether it holds program `prog` version
 * `vers` on `netid` at `port` (any port: 0; any netid: NULL). */
static bool rpcbind_has_v(unsigned prog, unsigned vers, const char *netid, int port)
{
    const char *argv[] = {"rpcinfo", "127.0.0.1", NULL};
    struct tool_run r;
    tool_run("/usr/sbin/rpcinfo", argv, NULL, 0, 30, &r);
    if (r.status != 0)
        uiw_test_fail(__FILE__, __LINE__, "rpcinfo: %s", r.err);
    bool found = false;
    for (char *line = strtok(r.out, "\n"); line && !found; line = strtok(NULL, "\n")) {
        unsigned p, v;
        char nid[32], ua[96];
        if (sscanf(line, "%u %u %31s %95s", &p, &v, nid, ua) != 4 || p != prog || v != vers)
            continue;
        if (netid && strcmp(nid, netid) != 0)
            continue;
        char tail[16];
        snprintf(tail, sizeof(tail), ".%d.%d", (port >> 8) & 0xff, port & 0xff);
        size_t n = strlen(ua), t = strlen(tail);
        found = port == 0 || (n > t && strcmp(ua + n - t, tail) == 0);
    }
    tool_run_free(&r);
    return found;
}

static bool rpcbind_has(unsigned prog, const char *netid, int port)
{
    return rpcbind_has_v(prog, 3, netid, port);
}

static void stop_nfsd(pid_t pid, int sig)
{
    CHECK_EQ(kill(pid, sig), 0);
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    if (sig == SIGTERM)
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* uiw-nfsd registers with the host's rpcbind (here a real rpcbind in a network and mount
 * namespace of the test's own, /run a fresh tmpfs): on port 2049 by default, NFS on tcp,
 * tcp6 and rdma and MOUNT on tcp and tcp6, so that showmount -e (nfs-common's, another
 * implementation) lists the export; a server killed leaves registrations that the next one
 * replaces; SIGTERM withdraws them; NFS 4 is registered beside 3 unless --no-nfs4;
 * --rpcbind registers any port, and uiw-nfs given no port
 * finds NFS and MOUNT through rpcbind; --no-rpcbind registers nothing; --rpcbind without
 * an rpcbind does not start, and the default then says so once and starts. */
TEST(root_tools_rpcbind)
{
    uiw_test_require_root();
    const char *tools[] = {"/usr/sbin/rpcbind", "/usr/sbin/rpcinfo", "/sbin/showmount"};
    for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
        if (access(tools[i], X_OK) != 0)
            uiw_test_fail(__FILE__, __LINE__,
                          "%s: %s (scripts/deps.sh installs rpcbind and "
                          "nfs-common)",
                          tools[i], strerror(errno));
    private_rpcbind();

    char dir[64];
    snprintf(dir, sizeof(dir), "/tmp/uiw-nfsd-rpcbind.XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    CHECK_EQ(chmod(dir, 0755), 0); /* uiw-nfs is squashed */
    char path[96];
    snprintf(path, sizeof(path), "%s/listed", dir);
    write_local(path, 100, 1);
    FILE *out;
    char line[256];
    int tcp, mount, rdma;
    /* the standard ports: registered without asking */
    const char *std[] = {"uiw-nfsd", dir, NULL};
    pid_t pid = nfsd_spawn_argv(std, &out, line, sizeof(line));
    fclose(out);
    CHECK_EQ(sscanf(line, "uiw-nfsd: ready tcp=%d mount=%d rdma=%d", &tcp, &mount, &rdma), 3);
    CHECK(rpcbind_has(100003, "tcp", 2049));
    CHECK(rpcbind_has(100003, "tcp6", 2049));
    CHECK(rpcbind_has(100005, "tcp", 20048));
    CHECK(rpcbind_has(100005, "tcp6", 20048));
    if (rdma > 0)
        CHECK(rpcbind_has(100003, "rdma", 20049));
    CHECK(rpcbind_has_v(100003, 4, "tcp", 2049)); /* served by default: beside 3 */
    const char *sm[] = {"showmount", "-e", "127.0.0.1", NULL};
    struct tool_run r;
    tool_run("/sbin/showmount", sm, NULL, 0, 30, &r);
    if (r.status != 0 || !strstr(r.out, dir))
        uiw_test_fail(__FILE__, __LINE__, "showmount -e: %s%s", r.out, r.err);
    tool_run_free(&r);
    /* killed: its registrations stay, and the next server's replace them */
    stop_nfsd(pid, SIGKILL);
    CHECK(rpcbind_has(100003, "tcp", 2049));
    const char *any[] = {"uiw-nfsd", "--rpcbind", "--tcp-port", "0", "--mount-port", "0", "-p",
                         "-1",       "--no-nfs4", dir,          NULL};
    pid = nfsd_spawn_argv(any, &out, line, sizeof(line));
    fclose(out);
    CHECK_EQ(sscanf(line, "uiw-nfsd: ready tcp=%d mount=%d rdma=%d", &tcp, &mount, &rdma), 3);
    CHECK(tcp != 2049 && mount != 20048 && rdma == -1);
    CHECK(rpcbind_has(100003, "tcp", tcp));
    CHECK(rpcbind_has(100005, "tcp", mount));
    CHECK(!rpcbind_has_v(100003, 4, NULL, 0)); /* not served: not even on RDMA, which is off */
    CHECK(!rpcbind_has(100003, "tcp", 2049));
    CHECK(!rpcbind_has(100003, "rdma", 0));
    char u[160];
    snprintf(u, sizeof(u), "nfs://127.0.0.1%s", dir); /* no port: rpcbind's */
    r = nfs("ls", u, NULL, NULL);
    if (r.status != 0 || !strstr(r.out, "listed"))
        uiw_test_fail(__FILE__, __LINE__, "ls %s: %s%s", u, r.out, r.err);
    tool_run_free(&r);
    stop_nfsd(pid, SIGTERM);
    CHECK(!rpcbind_has(100003, NULL, 0));
    CHECK(!rpcbind_has_v(100003, 4, NULL, 0));
    CHECK(!rpcbind_has(100005, NULL, 0));
    /* --no-rpcbind: nothing, even on 2049 */
    const char *none[] = {"uiw-nfsd", "--no-rpcbind", "-p", "-1", dir, NULL};
    pid = nfsd_spawn_argv(none, &out, line, sizeof(line));
    fclose(out);
    CHECK(strncmp(line, "uiw-nfsd: ready tcp=2049 ", 25) == 0);
    CHECK(!rpcbind_has(100003, NULL, 0));
    stop_nfsd(pid, SIGTERM);
    /* no rpcbind: --rpcbind does not start; the default says so once and starts */
    private_rpcbind_stop();
    const char *must[] = {"uiw-nfsd", "--rpcbind", "-p", "-1", dir, NULL};
    struct tool_run e;
    tool_run(UIW_NFSD, must, NULL, 0, 30, &e);
    CHECK_EQ(e.status, 1);
    CHECK(strstr(e.err, "no rpcbind runs") != NULL);
    tool_run_free(&e);
    const char *quiet[] = {"uiw-nfsd", "-p", "-1", dir, NULL};
    int errp[2];
    CHECK_EQ(pipe(errp), 0);
    int saved = dup(STDERR_FILENO);
    dup2(errp[1], STDERR_FILENO);
    pid = nfsd_spawn_argv(quiet, &out, line, sizeof(line));
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(errp[1]);
    fclose(out);
    CHECK(strncmp(line, "uiw-nfsd: ready tcp=2049 ", 25) == 0);
    stop_nfsd(pid, SIGTERM);
    char said[512];
    ssize_t n = read(errp[0], said, sizeof(said) - 1);
    close(errp[0]);
    said[n > 0 ? n : 0] = 0;
    /* one line saying it, and on */
    const char *l = strstr(said, "no rpcbind runs");
    if (!l || strstr(l + strlen("no rpcbind runs"), "no rpcbind runs"))
        uiw_test_fail(__FILE__, __LINE__, "the default said: %s", said);
    rm_tree(dir);
}

/* ---- uiw-nfs --parallel: several files in flight ---- */

/* A URL of sub below d's export over a transport (rdma: RPC-over-RDMA; else TCP, through
 * port when it is not 0), with more parameters (extra: "" or "&..."). */
static void url_on(const struct daemon *d, int rdma, int port, const char *sub, const char *extra,
                   char *out, size_t n)
{
    snprintf(out, n, "nfs://127.0.0.1:%d%s%s%s?mountport=%d%s%s",
             port   ? port
             : rdma ? d->rdma
                    : d->tcp,
             d->dir, *sub ? "/" : "", sub, d->mount, rdma ? "&transport=rdma" : "", extra);
}

/* Files of 0 B, 1 B, 4 KiB and 100 KiB in turn. */
static size_t varied(unsigned i)
{
    static const size_t sizes[] = {0, 1, 4096, 102400};
    return sizes[i % 4];
}

/* uiw-nfs with the options, then a list of n arguments (each list[i] of `each` bytes),
 * then the last argument. */
static void nfs_list(const char *const *opts, const char *list, size_t each, unsigned n,
                     const char *last, struct tool_run *r)
{
    size_t k = 0;
    const char **argv = calloc(n + 16, sizeof(*argv));
    CHECK(argv != NULL);
    argv[k++] = "uiw-nfs";
    for (; *opts; opts++)
        argv[k++] = *opts;
    for (unsigned i = 0; i < n; i++)
        argv[k++] = list + (size_t)i * each;
    if (last)
        argv[k++] = last;
    tool_run(UIW_NFS, argv, NULL, 0, 120, r);
    free(argv);
}

/* Each of the n names (between pre and post) occurs in s in their order. */
static void in_order(const char *s, const char *names, size_t each, unsigned n, const char *pre,
                     const char *post)
{
    const char *at = s;
    for (unsigned i = 0; i < n; i++) {
        char what[1024];
        snprintf(what, sizeof(what), "%s%.*s%s", pre, (int)each, names + (size_t)i * each, post);
        const char *p = strstr(at, what);
        if (!p)
            uiw_test_fail(__FILE__, __LINE__, "'%s' missing, or out of order", what);
        at = p + strlen(what);
    }
}

#define MANY 300

/* 300 files of 0 B to 100 KiB put into a directory and got back with --parallel 8
 * --verify --json, over TCP and over RPC-over-RDMA: every file the original, byte for
 * byte, on the server and back here; each file's line (verified, JSON) in the order the
 * files were named, then the total. */
TEST(tools_parallel_many_files)
{
    struct daemon d;
    daemon_start_on(&d, UIW_NFS_HAVE_RDMA ? "0" : "-1");
    char src[300], back[300];
    snprintf(src, sizeof(src), "%s.src", d.dir);
    snprintf(back, sizeof(back), "%s.back", d.dir);
    CHECK_EQ(mkdir(src, 0755), 0);
    CHECK_EQ(mkdir(back, 0755), 0);
    static char names[MANY][400], base[MANY][16], urls[MANY][700];
    for (unsigned i = 0; i < MANY; i++) {
        snprintf(base[i], sizeof(base[i]), "f%03u", i);
        snprintf(names[i], sizeof(names[i]), "%s/%.15s", src, base[i]);
        write_local(names[i], varied(i), i);
    }
    for (int rdma = 0; rdma <= UIW_NFS_HAVE_RDMA; rdma++) {
        const char *tr = rdma ? "rdma" : "tcp";
        char sub[600], u[700], there[1024], here[1024];
        snprintf(sub, sizeof(sub), "%s/%s", d.dir, tr);
        CHECK_EQ(mkdir(sub, 0755), 0);
        url_on(&d, rdma, 0, tr, "", u, sizeof(u));
        const char *put[] = {"--parallel", "8", "--verify", "--json", "put", NULL};
        struct tool_run r;
        nfs_list(put, names[0], sizeof(names[0]), MANY, u, &r);
        if (r.status != 0)
            uiw_test_fail(__FILE__, __LINE__, "put over %s: %d\n%s", tr, r.status, r.err);
        CHECK_EQ(count_of(r.err, "verified"), MANY);
        CHECK_EQ(count_of(r.out, "{\"op\":\"put\",\"file\":"), MANY);
        in_order(r.err, base[0], sizeof(base[0]), MANY, "/", "?");
        in_order(r.out, base[0], sizeof(base[0]), MANY, "/", "?");
        const char *total = strstr(r.out, "{\"op\":\"put\",\"files\":300,");
        CHECK(total != NULL && strstr(total, "\"elapsed_s\":") != NULL);
        tool_run_free(&r);
        for (unsigned i = 0; i < MANY; i++) {
            snprintf(there, sizeof(there), "%s/%.15s", sub, base[i]);
            CHECK_SAME_FILE(names[i], there);
            char rel[64];
            snprintf(rel, sizeof(rel), "%s/%.15s", tr, base[i]);
            url_on(&d, rdma, 0, rel, "", urls[i], sizeof(urls[i]));
        }
        const char *get[] = {"--parallel", "8", "--verify", "--json", "get", NULL};
        nfs_list(get, urls[0], sizeof(urls[0]), MANY, back, &r);
        if (r.status != 0)
            uiw_test_fail(__FILE__, __LINE__, "get over %s: %d\n%s", tr, r.status, r.err);
        CHECK_EQ(count_of(r.err, "verified"), MANY);
        in_order(r.out, base[0], sizeof(base[0]), MANY, "/", "\"");
        CHECK(strstr(r.out, "{\"op\":\"get\",\"files\":300,") != NULL);
        tool_run_free(&r);
        for (unsigned i = 0; i < MANY; i++) {
            snprintf(here, sizeof(here), "%s/%.15s", back, base[i]);
            CHECK_SAME_FILE(names[i], here);
            unlink(here);
        }
    }
    rm_tree(src);
    rm_tree(back);
    daemon_stop(&d);
}

/* The files are in flight together. Over TCP, a relay follows the calls and replies and
 * sets aside the reply to the first WRITE until a WRITE of another file has passed: with
 * --parallel 8 two files' WRITEs are outstanding at once; with --parallel 1 never more
 * than one (the relay gives up waiting after a second). Over RPC-over-RDMA, the client's
 * transport counts its calls in flight (--stats): 8 at once, and 1 with --parallel 1. */
TEST(tools_parallel_in_flight)
{
    struct daemon d;
    daemon_start_on(&d, UIW_NFS_HAVE_RDMA ? "0" : "-1");
    char src[300], names[16][400], u[700];
    snprintf(src, sizeof(src), "%s.src", d.dir);
    CHECK_EQ(mkdir(src, 0755), 0);
    for (unsigned i = 0; i < 16; i++) {
        snprintf(names[i], sizeof(names[i]), "%s/g%u", src, i);
        write_local(names[i], 4096 * (i + 1), i);
    }
    for (int parallel = 8; parallel >= 1; parallel -= 7) {
        struct relay *rl = relay_start(d.tcp);
        relay_watch_rpc(rl, parallel > 1 ? 30 : 1);
        url_on(&d, 0, relay_port(rl), "", "", u, sizeof(u));
        char p[8];
        snprintf(p, sizeof(p), "%d", parallel);
        const char *put[] = {"--parallel", p, "put", NULL};
        struct tool_run r;
        nfs_list(put, names[0], sizeof(names[0]), 16, u, &r);
        CHECK_EQ(r.status, 0);
        tool_run_free(&r);
        printf("--parallel %d over TCP: %u calls, most WRITEs of different files at once %u\n",
               parallel, relay_rpc_calls(rl), relay_most_writes(rl));
        if (parallel > 1)
            CHECK(relay_most_writes(rl) >= 2);
        else
            CHECK_EQ(relay_most_writes(rl), 1);
        CHECK(relay_rpc_calls(rl) >= 16 * 4); /* LOOKUP, CREATE, WRITE, COMMIT */
        relay_stop(rl);
        for (unsigned i = 0; i < 16; i++) {
            char there[1024];
            snprintf(there, sizeof(there), "%s/g%u", d.dir, i);
            CHECK_SAME_FILE(names[i], there);
        }
#if UIW_NFS_HAVE_RDMA
        url_on(&d, 1, 0, "", "", u, sizeof(u));
        const char *rput[] = {"--parallel", p, "--stats", "--json", "put", NULL};
        nfs_list(rput, names[0], sizeof(names[0]), 16, u, &r);
        CHECK_EQ(r.status, 0);
        const char *m = strstr(r.out, "\"credits_max_inflight\":");
        CHECK(m != NULL);
        long most = strtol(m + strlen("\"credits_max_inflight\":"), NULL, 10);
        printf("--parallel %d over RPC-over-RDMA: most calls in flight %ld\n", parallel, most);
        CHECK_EQ(most, parallel);
        tool_run_free(&r);
#endif
    }
    rm_tree(src);
    daemon_stop(&d);
}

/* An idle uiw-nfsd sleeps. With no client, once its threads have settled (their first
 * idle slices passed, a while under ThreadSanitizer on a loaded host), none of them wakes
 * more than four times in two seconds (ThreadSanitizer's background thread aside): the
 * TCP event thread sweeps its connections once a second, the RPC-over-RDMA leader,
 * workers and the RNIC's progress thread sleep a second at a time, the listener and the
 * NFSv4.1 callback timer until something comes for them. Before they slept until needed,
 * the listener woke 10 times a second and the TCP event thread 4. */
TEST(tools_nfsd_idle_sleeps)
{
    struct daemon d;
    daemon_start_on(&d, UIW_NFS_HAVE_RDMA ? "0" : "-1");
    usleep(1500 * 1000); /* started: its threads' first idle slices pass */
    struct uiw_test_wakeups w = uiw_test_wakeups_over(d.pid, 2000, 4);
    printf("uiw-nfsd idle for 2 s: %llu wake-ups, %llu in the busiest thread\n", w.total, w.most);
    if (w.busy > UIW_TEST_TSAN)
        uiw_test_fail(__FILE__, __LINE__,
                      "%d threads of uiw-nfsd woke more than 4 times in 2 s of idle (%llu "
                      "wake-ups in all, %llu in the busiest)",
                      w.busy, w.total, w.most);
    daemon_stop(&d);
}

/* A large file's blocks are in flight together, --inflight of them (default 4). Over
 * TCP the relay sets aside the reply to the first WRITE for a while: meanwhile a put
 * with --inflight 4 has four WRITEs outstanding, one with --inflight 1 only that one.
 * Over RPC-over-RDMA the client's transport counts its calls in flight (--stats), for
 * the WRITEs of a put and the READs of a get. Both ends hold the same bytes each time;
 * so they do after a put from a pipe, in whole blocks. */
TEST(tools_inflight_per_file)
{
    struct daemon d;
    daemon_start_on(&d, UIW_NFS_HAVE_RDMA ? "0" : "-1");
    char local[300], back[300], there[400], u[700];
    snprintf(local, sizeof(local), "%s.src", d.dir);
    snprintf(back, sizeof(back), "%s.back", d.dir);
    snprintf(there, sizeof(there), "%s/big", d.dir);
    write_local(local, (17u << 16) + 1234, 7); /* 18 blocks of 64 KiB, the last short */
    for (int inflight = 4; inflight >= 1; inflight -= 3) {
        char n[8];
        snprintf(n, sizeof(n), "%d", inflight);
        struct relay *rl = relay_start(d.tcp);
        relay_watch_rpc(rl, 0.3);
        url_on(&d, 0, relay_port(rl), "big", "", u, sizeof(u));
        struct tool_run r;
        /* 4 is the default: asked for only with 1 */
        const char *dflt[] = {"uiw-nfs", "-b", "65536", "put", local, u, NULL};
        const char *one[] = {"uiw-nfs", "--inflight", "1", "-b", "65536", "put", local, u, NULL};
        tool_run(UIW_NFS, inflight == 1 ? one : dflt, NULL, 0, 60, &r);
        CHECK_EQ(r.status, 0);
        tool_run_free(&r);
        printf("--inflight %d over TCP: most calls outstanding %u\n", inflight,
               relay_most_calls(rl));
        CHECK_EQ(relay_most_calls(rl), (unsigned)inflight);
        relay_stop(rl);
        CHECK_SAME_FILE(local, there);
        unlink(there);
#if UIW_NFS_HAVE_RDMA
        url_on(&d, 1, 0, "big", "", u, sizeof(u));
        for (int get = 0; get < 2; get++) {
            tool_run(UIW_NFS,
                     (const char *[]){"uiw-nfs", "-b", "65536", "--inflight", n, "--stats",
                                      "--json", get ? "get" : "put", get ? u : local,
                                      get ? back : u, NULL},
                     NULL, 0, 60, &r);
            CHECK_EQ(r.status, 0);
            const char *m = strstr(r.out, "\"credits_max_inflight\":");
            CHECK(m != NULL);
            long most = strtol(m + strlen("\"credits_max_inflight\":"), NULL, 10);
            printf("--inflight %d over RPC-over-RDMA, %s: most calls in flight %ld\n", inflight,
                   get ? "get" : "put", most);
            CHECK_EQ(most, inflight);
            /* 18 calls: the READ of the last block says EOF, and none went past it */
            CHECK(strstr(r.out, "\"calls\":18,") != NULL);
            tool_run_free(&r);
        }
        CHECK_SAME_FILE(local, there);
        CHECK_SAME_FILE(local, back);
        unlink(back);
#endif
    }
    /* From a pipe, whole blocks too: its size unknown, the buffer is the block (it was
     * 4 KiB, the least for a file known to be small), and each block is filled however
     * little each read of the pipe returns: 18 WRITEs. */
    char cmd[2400];
    url_on(&d, 0, 0, "big", "", u, sizeof(u));
    snprintf(cmd, sizeof(cmd), "cat '%s' | '%s' --json -b 65536 put - '%s'", local, UIW_NFS, u);
    struct tool_run r;
    tool_run("/bin/sh", (const char *[]){"sh", "-c", cmd, NULL}, NULL, 0, 60, &r);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.out, "\"calls\":18,") != NULL);
    tool_run_free(&r);
    CHECK_SAME_FILE(local, there);
    unlink(local);
    daemon_stop(&d);
}

/* One file that cannot be put (a directory has its name; another is read-only to the
 * caller) or got (there is none of that name): each said with its name and why, in the
 * order of the files, the exit status 1, and every other file moved. */
TEST(tools_parallel_one_fails)
{
    struct daemon d;
    daemon_start(&d);
    char src[300], back[300], sub[600], u[700];
    snprintf(src, sizeof(src), "%s.src", d.dir);
    snprintf(back, sizeof(back), "%s.back", d.dir);
    CHECK_EQ(mkdir(src, 0755), 0);
    CHECK_EQ(mkdir(back, 0755), 0);
    static char names[12][400], base[12][8];
    for (unsigned i = 0; i < 12; i++) {
        snprintf(base[i], sizeof(base[i]), "h%u", i);
        snprintf(names[i], sizeof(names[i]), "%s/%.15s", src, base[i]);
        write_local(names[i], varied(i) + i, i);
    }
    CHECK_EQ(chmod(d.dir, 0755), 0);
    snprintf(sub, sizeof(sub), "%s/dir", d.dir);
    CHECK_EQ(mkdir(sub, 0777), 0);
    CHECK_EQ(chmod(sub, 0777), 0);
    char path[1024];
    snprintf(path, sizeof(path), "%s/h3", sub);
    CHECK_EQ(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/h7", sub);
    write_local(path, 10, 1);
    CHECK_EQ(chmod(path, 0444), 0);
    /* as root the server would write anyway: the calls come as nobody */
    url_on(&d, 0, 0, "dir", geteuid() == 0 ? "&uid=65534&gid=65534" : "", u, sizeof(u));
    const char *put[] = {"--parallel", "8", "put", NULL};
    struct tool_run r;
    nfs_list(put, names[0], sizeof(names[0]), 12, u, &r);
    CHECK_EQ(r.status, 1);
    const char *dir_line = strstr(r.err, "/dir/h3?"), *ro_line = strstr(r.err, "/dir/h7?");
    if (!dir_line || !ro_line || dir_line > ro_line || !strstr(dir_line, "is a directory") ||
        !strstr(ro_line, "NFS3ERR_ACCES"))
        uiw_test_fail(__FILE__, __LINE__, "the failures as said:\n%s", r.err);
    CHECK_EQ(count_of(r.err, "uiw-nfs: "), 2);
    tool_run_free(&r);
    for (unsigned i = 0; i < 12; i++) {
        if (i == 3 || i == 7)
            continue;
        snprintf(path, sizeof(path), "%s/%.7s", sub, base[i]);
        CHECK_SAME_FILE(names[i], path);
    }
    /* get: one URL of the five names nothing */
    static char urls[5][700];
    const char *which[5] = {"h0", "h1", "nothing", "h2", "h4"};
    for (unsigned i = 0; i < 5; i++) {
        char rel[32];
        snprintf(rel, sizeof(rel), "dir/%s", which[i]);
        url_on(&d, 0, 0, rel, "", urls[i], sizeof(urls[i]));
    }
    const char *get[] = {"--parallel", "8", "get", NULL};
    nfs_list(get, urls[0], sizeof(urls[0]), 5, back, &r);
    CHECK_EQ(r.status, 1);
    const char *missing = strstr(r.err, "/dir/nothing?");
    CHECK(missing != NULL && strstr(missing, "NFS3ERR_NOENT") != NULL);
    CHECK_EQ(count_of(r.err, "uiw-nfs: "), 1);
    tool_run_free(&r);
    for (unsigned i = 0; i < 5; i++) {
        if (i == 2)
            continue;
        char here[1024];
        snprintf(here, sizeof(here), "%s/%s", back, which[i]);
        snprintf(path, sizeof(path), "%s/%s", src, which[i]);
        CHECK_SAME_FILE(path, here);
    }
    rm_tree(src);
    rm_tree(back);
    daemon_stop(&d);
}

/* The relative path of the i-th file of a tree of MANY: five directories of three each,
 * twenty files in each of those (and the directories made, under root, when make). */
static void tree_path(const char *root, unsigned i, int make, char *out, size_t n)
{
    if (make) {
        snprintf(out, n, "%.800s/d%u", root, i % 5);
        CHECK(mkdir(out, 0755) == 0 || errno == EEXIST);
        snprintf(out, n, "%.800s/d%u/e%u", root, i % 5, i / 5 % 3);
        CHECK(mkdir(out, 0755) == 0 || errno == EEXIST);
    }
    snprintf(out, n, "%.800s/d%u/e%u/t%03u", root, i % 5, i / 5 % 3, i);
}

/* The tree at root holds the files of the tree at src, byte for byte, and the empty
 * directory. */
static void same_tree(const char *src, const char *root)
{
    for (unsigned i = 0; i < MANY; i++) {
        char a[1024], b[1024];
        tree_path(src, i, 0, a, sizeof(a));
        tree_path(root, i, 0, b, sizeof(b));
        CHECK_SAME_FILE(a, b);
    }
    char path[1024];
    snprintf(path, sizeof(path), "%.900s/empty", root);
    struct stat st;
    CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
}

/* A tree of 300 files of 0 B to 100 KiB in 15 directories (and an empty one) put with -r
 * --parallel 8 --verify and got back the same way, over TCP and over RPC-over-RDMA:
 * every directory made before its files (their CREATEs would fail otherwise), every file
 * the original, byte for byte, on the server and back here. */
TEST(tools_parallel_tree)
{
    struct daemon d;
    daemon_start_on(&d, UIW_NFS_HAVE_RDMA ? "0" : "-1");
    char src[300], path[1024], there[1024], u[700];
    snprintf(src, sizeof(src), "%s.tree", d.dir);
    CHECK_EQ(mkdir(src, 0755), 0);
    for (unsigned i = 0; i < MANY; i++) {
        tree_path(src, i, 1, path, sizeof(path));
        write_local(path, varied(i), i + 7);
    }
    snprintf(path, sizeof(path), "%.900s/empty", src);
    CHECK_EQ(mkdir(path, 0755), 0);
    for (int rdma = 0; rdma <= UIW_NFS_HAVE_RDMA; rdma++) {
        const char *tr = rdma ? "rdma" : "tcp";
        /* put -r SRC URL, where nothing is yet: the URL is made the copy */
        url_on(&d, rdma, 0, tr, "", u, sizeof(u));
        const char *put[] = {"uiw-nfs", "-r",  "--parallel", "8", "--verify",
                             "--json",  "put", src,          u,   NULL};
        struct tool_run r;
        tool_run(UIW_NFS, put, NULL, 0, 120, &r);
        if (r.status != 0)
            uiw_test_fail(__FILE__, __LINE__, "put -r over %s: %d\n%s", tr, r.status, r.err);
        CHECK_EQ(count_of(r.err, "verified"), MANY);
        CHECK(strstr(r.out, "{\"op\":\"put\",\"files\":300,") != NULL);
        tool_run_free(&r);
        snprintf(there, sizeof(there), "%s/%s", d.dir, tr);
        same_tree(src, there);
        /* get -r URL BACK, where nothing is yet */
        char back[400];
        snprintf(back, sizeof(back), "%s.back-%s", d.dir, tr);
        const char *get[] = {"uiw-nfs", "-r", "--parallel", "8", "--verify", "get", u, back, NULL};
        tool_run(UIW_NFS, get, NULL, 0, 120, &r);
        if (r.status != 0)
            uiw_test_fail(__FILE__, __LINE__, "get -r over %s: %d\n%s", tr, r.status, r.err);
        CHECK_EQ(count_of(r.err, "verified"), MANY);
        tool_run_free(&r);
        same_tree(src, back);
        rm_tree(back);
    }
    /* what -r leaves is said, and the status says so */
    snprintf(path, sizeof(path), "%.900s/link", src);
    CHECK_EQ(symlink("d0", path), 0);
    url_on(&d, 0, 0, "tcp", "", u, sizeof(u));
    struct tool_run r = nfs("-r", "put", src, u);
    CHECK_EQ(r.status, 1);
    CHECK(strstr(r.err, "/link: not a regular file or directory") != NULL);
    tool_run_free(&r);
    rm_tree(src);
    daemon_stop(&d);
}
