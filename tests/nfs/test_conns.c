/* Many connections to one uiw-nfsd (the program), over TCP and RPC-over-RDMA: one limit
 * bounds both. The tests exit 77 (skipped) in a build without the RPC layer. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nfs/xdr_data.h"
#include "nfs_util.h"
#include "rawrpc.h"
#include "test.h"

#if UIW_NFS_HAVE_RDMA
#include <uiw/rpc.h>

/* A uiw-nfsd of a new temporary export on loopback, on free ports, its standard error in
 * a file. */
struct nfsd {
    char dir[64], log[96];
    pid_t pid;
    int tcp, mount, rdma;
};

static void nfsd_up(struct nfsd *d, const char *const *extra)
{
    snprintf(d->dir, sizeof(d->dir), "/tmp/uiw-conns.XXXXXX");
    CHECK(mkdtemp(d->dir) != NULL);
    snprintf(d->log, sizeof(d->log), "%s.log", d->dir);
    const char *argv[32] = {"uiw-nfsd",   "-a", "127.0.0.1",    "-p", "0",
                            "--tcp-port", "0",  "--mount-port", "0",  "--no-root-squash"};
    int n = 10;
    while (extra && *extra && n < 30)
        argv[n++] = *extra++;
    argv[n++] = d->dir;
    argv[n] = NULL;
    FILE *out;
    char line[256];
    d->pid = nfsd_spawn_log(argv, d->log, &out, line, sizeof(line));
    fclose(out);
    CHECK_EQ(sscanf(line, "uiw-nfsd: ready tcp=%d mount=%d rdma=%d", &d->tcp, &d->mount, &d->rdma),
             3);
}

static void nfsd_down(struct nfsd *d)
{
    CHECK_EQ(kill(d->pid, SIGTERM), 0);
    int st;
    CHECK_EQ(waitpid(d->pid, &st, 0), d->pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    unlink(d->log);
    rm_tree(d->dir);
}

/* Whether the server's log has a line with s in it. */
static bool logged(const struct nfsd *d, const char *s)
{
    FILE *f = fopen(d->log, "r");
    CHECK(f != NULL);
    char line[1024];
    bool found = false;
    while (!found && fgets(line, sizeof(line), f))
        found = strstr(line, s) != NULL;
    fclose(f);
    return found;
}

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void null_ok(CLIENT *c)
{
    struct timeval tmo = {10, 0};
    CHECK_EQ(clnt_call(c, 0, UIW__XDRPROC(xdr_void), NULL, UIW__XDRPROC(xdr_void), NULL, tmo),
             RPC_SUCCESS);
}

/* An RPC-over-RDMA client of NFS version 3 (NULL when refused, errno set). */
static CLIENT *rdma_clnt(const struct nfsd *d)
{
    struct uiw_rpc_clnt_attr a;
    memset(&a, 0, sizeof(a));
    a.no_reconnect = true;
    return uiw_rpc_clnt_create("127.0.0.1", (uint16_t)d->rdma, 100003, 3, &a);
}

/* A TCP connection whose NULL call is answered, or -1 when the server closes it instead. */
static int tcp_served(int port)
{
    int fd = tcp_to(port);
    char rec[4 + 512];
    size_t hl = call_header(rec + 4, 77, 100003, 3, 0, AUTH_NONE);
    uint32_t mark = htonl(0x80000000u | (uint32_t)hl);
    memcpy(rec, &mark, 4);
    send_all(fd, rec, 4 + hl);
    struct pollfd pf = {fd, POLLIN, 0};
    CHECK_EQ(poll(&pf, 1, 10000), 1);
    char b[4];
    if (recv(fd, b, sizeof(b), MSG_PEEK) == (ssize_t)sizeof(b))
        return fd;
    close(fd);
    return -1;
}

/* --max-connections bounds TCP and RPC-over-RDMA connections together: up to it both are
 * served, one more is refused over either transport (over RDMA by the connection
 * manager's reject), with a line in the log each, and a connection that ends makes room
 * for one of the other transport. */
static void one_limit_body(void)
{
    struct nfsd d;
    const char *extra[] = {"--max-connections", "4", NULL};
    nfsd_up(&d, extra);
    int t[2];
    for (int i = 0; i < 2; i++) {
        t[i] = tcp_served(d.tcp);
        CHECK(t[i] >= 0);
    }
    CLIENT *r[2];
    for (int i = 0; i < 2; i++) {
        r[i] = rdma_clnt(&d);
        CHECK(r[i] != NULL);
        null_ok(r[i]);
    }
    errno = 0;
    CHECK(rdma_clnt(&d) == NULL);
    CHECK_EQ(errno, ECONNREFUSED);
    CHECK(logged(&d, "refused an RPC-over-RDMA connection from 127.0.0.1:"));
    nap_ms(1100); /* a line a second of each kind */
    CHECK_EQ(tcp_served(d.tcp), -1);
    CHECK(logged(&d, "refused a TCP connection from 127.0.0.1:"));
    for (int i = 0; i < 2; i++)
        null_ok(r[i]); /* all still served */
    /* an RDMA connection leaves: a TCP one takes its place (once it is freed) */
    clnt_destroy(r[0]);
    int again = -1;
    for (int i = 0; i < 200 && again < 0; i++) {
        again = tcp_served(d.tcp);
        if (again < 0)
            nap_ms(20);
    }
    CHECK(again >= 0);
    CHECK_EQ(tcp_served(d.tcp), -1);
    /* a TCP connection leaves: an RDMA one takes its place */
    close(t[0]);
    r[0] = NULL;
    for (int i = 0; i < 200 && !r[0]; i++) {
        r[0] = rdma_clnt(&d);
        if (!r[0])
            nap_ms(20);
    }
    CHECK(r[0] != NULL);
    null_ok(r[0]);
    CHECK(rdma_clnt(&d) == NULL);
    clnt_destroy(r[0]);
    clnt_destroy(r[1]);
    close(t[1]);
    close(again);
    nfsd_down(&d);
}

/* The resident memory of a process, in KiB (VmRSS). */
static long rss_kib(pid_t pid)
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

/* An RPC-over-RDMA client with few credits (its own memory is not what is measured). */
static CLIENT *rdma_clnt_small(const struct nfsd *d)
{
    struct uiw_rpc_clnt_attr a;
    memset(&a, 0, sizeof(a));
    a.no_reconnect = true;
    a.xprt.credits = 4;
    return uiw_rpc_clnt_create("127.0.0.1", (uint16_t)d->rdma, 100003, 3, &a);
}

/* An idle RPC-over-RDMA connection costs uiw-nfsd at most 64 KiB once it has been idle
 * for a second: 200 connections, each answered one NULL call, then left alone; the
 * server's RSS grows by at most 200 times that (measured after one connection came and
 * went, so that what the first connection sets up once is not counted). */
static void idle_memory_body(void)
{
    struct nfsd d;
    const char *extra[] = {"--max-connections", "4000", NULL};
    nfsd_up(&d, extra);
    CLIENT *w = rdma_clnt_small(&d);
    CHECK(w != NULL);
    null_ok(w);
    nap_ms(1200);
    enum { N = 200 };
    static CLIENT *c[N];
    long before = rss_kib(d.pid);
    for (int i = 0; i < N; i++) {
        c[i] = rdma_clnt_small(&d);
        if (!c[i])
            uiw_test_fail(__FILE__, __LINE__, "connection %d: %s", i, strerror(errno));
        null_ok(c[i]);
    }
    long busy = rss_kib(d.pid);
    nap_ms(1500);
    null_ok(w);
    long after = rss_kib(d.pid);
    double per = (double)(after - before) / N;
    printf("uiw-nfsd RSS: %ld KiB before, %ld KiB with %d new connections, %ld KiB after they "
           "idled a second: %.1f KiB per idle connection\n",
           before, busy, N, after, per);
    CHECK(per <= 64);
    for (int i = 0; i < N; i++)
        clnt_destroy(c[i]);
    clnt_destroy(w);
    nfsd_down(&d);
}

#define NEED_RDMA()
#else
#define NEED_RDMA() SKIP("built without the RPC-over-RDMA layer (src/rpc)")
static void one_limit_body(void)
{
}
static void idle_memory_body(void)
{
}
#endif

TEST(rdma_tcp_one_connection_limit)
{
    NEED_RDMA();
    one_limit_body();
}

TEST(rdma_idle_connection_memory)
{
    NEED_RDMA();
    idle_memory_body();
}
