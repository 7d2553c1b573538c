/* Faults below the stack, with uiw-nfs as the client a user runs: a relay between it and
 * uiw-nfsd resets the connection in the middle of a WRITE or READ stream (over TCP and
 * over RPC-over-RDMA), and the server is killed with SIGKILL and started again during a
 * copy. Each file must arrive whole: the client connects again and sends its calls again
 * with their XIDs, the duplicate-reply cache answers what already ran, and writes not yet
 * committed when the server died are sent again (its write verifier changed).
 * UIW_FAULT_MB sets the file's size (default 256). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <uiw/rpc.h>

#include "nfs/server.h"
#include "nfs_util.h"
#include "relay.h"
#include "run.h"
#include "test.h"

static size_t fault_bytes(void)
{
    const char *e = getenv("UIW_FAULT_MB");
    long mb = e ? atol(e) : 256;
    return (size_t)(mb > 0 ? mb : 256) << 20;
}

/* A local file of n pseudo-random bytes (seeded) at path. */
static void make_file(const char *path, size_t n, uint64_t seed)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    static uint64_t buf[1 << 17];
    uint64_t x = seed | 1;
    for (size_t off = 0; off < n; off += sizeof(buf)) {
        for (size_t i = 0; i < sizeof(buf) / 8; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            buf[i] = x;
        }
        size_t k = n - off < sizeof(buf) ? n - off : sizeof(buf);
        CHECK_EQ(write(fd, buf, k), (ssize_t)k);
    }
    close(fd);
}

static void nfs_tool(const char *const *argv, int seconds)
{
    struct tool_run r;
    tool_run(UIW_NFS, argv, NULL, 0, seconds, &r);
    if (getenv("UIW_FAULT_TRACE"))
        fprintf(stderr, "%s", r.err);
    if (r.status != 0)
        uiw_test_fail(__FILE__, __LINE__, "uiw-nfs exited %d: %s", r.status, r.err);
    tool_run_free(&r);
}

/* A put then a get of one file through a relay that resets the connection in the middle
 * of each (server to client: in the middle of a reply over TCP; client to server halfway
 * through the WRITEs' data over RDMA, where the data goes by RDMA Read). */
static void reset_mid_transfer(int rdma)
{
    struct srv v;
    struct uiw__nfsd_opts o;
    srv_opts_v3(&o);
    o.no_root_squash = 1;
    srv_start(&v, &o); /* RDMA on a free port too */
    int port = rdma ? uiw__nfsd_port(v.s, UIW__NFSD_RDMA) : v.tcp;
    CHECK(port > 0);
    size_t n = fault_bytes();
    char local[300], back[300];
    snprintf(local, sizeof(local), "%s.src", v.dir);
    snprintf(back, sizeof(back), "%s.back", v.dir);
    make_file(local, n, 0x5eedull + (uint64_t)rdma);
    struct relay *r = relay_start(port);
    char url[512];
    snprintf(url, sizeof(url), "nfs://127.0.0.1:%d%s/f?mountport=%d&transport=%s", relay_port(r),
             v.dir, v.mount, rdma ? "rdma" : "tcp");
    unsigned long hits = v.s->drc_hits;
    if (rdma)
        relay_cut_at(r, RELAY_C2S, n / 2, 0);
    else
        relay_cut_at(r, RELAY_S2C, (n >> 20) * 40, 1); /* a WRITE's reply, a quarter in */
    const char *put[] = {"uiw-nfs", "-v", "put", local, url, NULL};
    nfs_tool(put, 300);
    CHECK_EQ(relay_cuts(r), 1);
    if (!rdma)
        CHECK(v.s->drc_hits > hits); /* the WRITE whose reply was lost ran once */
    CHECK_SAME_FILE(local, path_in(&v, "f"));
    if (rdma)
        relay_cut_at(r, RELAY_S2C, relay_bytes(r, RELAY_S2C) + n / 2, 0);
    else
        relay_cut_at(r, RELAY_S2C, relay_bytes(r, RELAY_S2C) + n / 2, 1);
    const char *get[] = {"uiw-nfs", "-v", "get", url, back, NULL};
    nfs_tool(get, 300);
    CHECK_EQ(relay_cuts(r), 2);
    CHECK_SAME_FILE(local, back);
    relay_stop(r);
    unlink(local);
    unlink(back);
    srv_stop(&v);
}

TEST(fault_reset_mid_transfer_tcp)
{
    reset_mid_transfer(0);
}

TEST(fault_reset_mid_transfer_rdma)
{
    reset_mid_transfer(1);
}

/* uiw-nfsd (the program) exporting dir on the given ports (0: free ones); the ports it
 * took. */
static pid_t nfsd_on(const char *dir, int ports[3])
{
    char t[16], m[16], r[16];
    snprintf(t, sizeof(t), "%d", ports[0]);
    snprintf(m, sizeof(m), "%d", ports[1]);
    snprintf(r, sizeof(r), "%d", ports[2]);
    const char *argv[] = {
        "uiw-nfsd",     "-a", "127.0.0.1",        "-p",        r,   "--tcp-port", t,
        "--mount-port", m,    "--no-root-squash", "--no-nfs4", dir, NULL};
    FILE *f;
    char line[256];
    pid_t pid = nfsd_spawn_argv(argv, &f, line, sizeof(line));
    fclose(f);
    CHECK_EQ(
        sscanf(line, "uiw-nfsd: ready tcp=%d mount=%d rdma=%d", &ports[0], &ports[1], &ports[2]),
        3);
    return pid;
}

/* uiw-nfs run in the background, its standard error into errpath. */
static pid_t nfs_start(const char *const *argv, const char *errpath)
{
    pid_t parent = getpid(), pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(127);
        int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            _exit(127);
        dup2(fd, STDERR_FILENO);
        execv(UIW_NFS, (char *const *)(uintptr_t)argv);
        _exit(127);
    }
    return pid;
}

/* uiw-nfsd killed (SIGKILL) a third of the way through a copy and started again on the
 * same ports: the client connects again and goes on; the writes it had not committed are
 * sent again (the write verifier changed, so its COMMIT says so); nothing is lost, and
 * the handles it holds still name their files. */
static void server_killed(int rdma)
{
    char dir[64], local[128], errs[128];
    snprintf(dir, sizeof(dir), "/tmp/uiw-fault-kill.XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    snprintf(local, sizeof(local), "%s.src", dir);
    snprintf(errs, sizeof(errs), "%s.err", dir);
    size_t n = fault_bytes();
    make_file(local, n, 0xdeadull + (uint64_t)rdma);
    int ports[3] = {0, 0, rdma ? 0 : -1};
    pid_t srv = nfsd_on(dir, ports);
    char url[512], remote[128];
    snprintf(url, sizeof(url), "nfs://127.0.0.1:%d%s/f?mountport=%d&transport=%s",
             rdma ? ports[2] : ports[0], dir, ports[1], rdma ? "rdma" : "tcp");
    snprintf(remote, sizeof(remote), "%s/f", dir);
    const char *put[] = {"uiw-nfs", "-v", "put", local, url, NULL};
    pid_t cl = nfs_start(put, errs);
    /* a third written: kill it */
    struct stat st;
    for (int i = 0; i < 60000; i++) {
        if (stat(remote, &st) == 0 && (size_t)st.st_size >= n / 3)
            break;
        usleep(1000);
    }
    CHECK(stat(remote, &st) == 0 && (size_t)st.st_size >= n / 3);
    CHECK_EQ(kill(srv, SIGKILL), 0);
    int ws;
    CHECK_EQ(waitpid(srv, &ws, 0), srv);
    usleep(200000);
    int again[3] = {ports[0], ports[1], ports[2]};
    srv = nfsd_on(dir, again);
    CHECK_EQ(again[0], ports[0]);
    CHECK_EQ(waitpid(cl, &ws, 0), cl);
    FILE *ef = fopen(errs, "r");
    CHECK(ef != NULL);
    char log[8192];
    size_t ln = fread(log, 1, sizeof(log) - 1, ef);
    log[ln] = 0;
    fclose(ef);
    if (getenv("UIW_FAULT_TRACE"))
        fprintf(stderr, "%s", log);
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
        uiw_test_fail(__FILE__, __LINE__, "uiw-nfs put: status %d: %s", ws, log);
    /* the server's restart showed: a new verifier at COMMIT, the copy sent again */
    if (!strstr(log, "verifier changed"))
        uiw_test_fail(__FILE__, __LINE__, "no verifier change seen: %s", log);
    CHECK_SAME_FILE(local, remote);
    CHECK_EQ(kill(srv, SIGTERM), 0);
    CHECK_EQ(waitpid(srv, &ws, 0), srv);
    unlink(local);
    unlink(errs);
    rm_tree(dir);
}

TEST(fault_server_killed_tcp)
{
    server_killed(0);
}

TEST(fault_server_killed_rdma)
{
    server_killed(1);
}

/* 2 % of the packets dropped at random (uiw_test_lossy_loopback) under a copy of 1 GiB
 * (four times UIW_FAULT_MB) put and got back, over TCP and over RPC-over-RDMA: both arrive
 * whole, and the RDMA connection saw no Terminate. */
TEST(fault_loss_nfs_copy)
{
    uiw_test_lossy_loopback(0.02);
    struct srv v;
    struct uiw__nfsd_opts o;
    srv_opts_v3(&o);
    o.no_root_squash = 1;
    srv_start(&v, &o);
    size_t n = 4 * fault_bytes();
    char local[300], back[300];
    snprintf(local, sizeof(local), "%s.src", v.dir);
    snprintf(back, sizeof(back), "%s.back", v.dir);
    make_file(local, n, 0x1055ull);
    for (int rdma = 0; rdma < 2; rdma++) {
        long before = uiw_test_dropped();
        char url[512];
        snprintf(url, sizeof(url), "nfs://127.0.0.1:%d%s/f%d?mountport=%d&transport=%s",
                 rdma ? uiw__nfsd_port(v.s, UIW__NFSD_RDMA) : v.tcp, v.dir, rdma, v.mount,
                 rdma ? "rdma" : "tcp");
        const char *put[] = {"uiw-nfs", "--verify", "put", local, url, NULL};
        nfs_tool(put, 600);
        const char *get[] = {"uiw-nfs", "--verify", "get", url, back, NULL};
        nfs_tool(get, 600);
        char f[16];
        snprintf(f, sizeof(f), "f%d", rdma);
        CHECK_SAME_FILE(local, path_in(&v, f));
        CHECK_SAME_FILE(local, back);
        if (uiw_test_dropped() - before < 100)
            uiw_test_fail(__FILE__, __LINE__, "only %ld packets dropped",
                          uiw_test_dropped() - before);
    }
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw__nfsd_xprt_stats(v.s, &st), 0);
    CHECK_EQ(st.rnic.terminates_sent, 0);
    CHECK_EQ(st.rnic.terminates_received, 0);
    unlink(local);
    unlink(back);
    srv_stop(&v);
}
