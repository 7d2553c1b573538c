/* Many connections to one uiw-nfsd (the program), over TCP and RPC-over-RDMA: one limit
 * bounds both. The tests exit 77 (skipped) in a build without the RPC layer. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nfs/client.h"
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
                            "--tcp-port", "0",  "--mount-port", "0",  "--no-root-squash",
                            "--no-nfs4"};
    int n = 11;
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

/* At the limit: one more connection is refused over either transport, with a log line
 * each. */
static void refused_both(const struct nfsd *d)
{
    errno = 0;
    CHECK(rdma_clnt(d) == NULL);
    CHECK_EQ(errno, ECONNREFUSED);
    CHECK(logged(d, "refused an RPC-over-RDMA connection from 127.0.0.1:"));
    nap_ms(1100); /* a line a second of each kind */
    CHECK_EQ(tcp_served(d->tcp), -1);
    CHECK(logged(d, "refused a TCP connection from 127.0.0.1:"));
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
    refused_both(&d);
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
    CHECK(!RSS_JUDGED || per <= 64);
    for (int i = 0; i < N; i++)
        clnt_destroy(c[i]);
    clnt_destroy(w);
    nfsd_down(&d);
}

/* A file's handle, by a TCP client that then leaves. */
static void fh_of(const struct nfsd *d, const char *name, struct uiw__nfs_fh *fh)
{
    char url[600], err[512];
    snprintf(url, sizeof(url), "nfs://127.0.0.1:%d%s?mountport=%d", d->tcp, d->dir, d->mount);
    struct uiw__nfs_url u;
    CHECK_EQ(uiw__nfs_url_parse(url, &u, err, sizeof(err)), 0);
    struct uiw__nfs_client *c = uiw__nfs_client_open(&u, 0, err, sizeof(err));
    if (!c)
        uiw_test_fail(__FILE__, __LINE__, "client: %s", err);
    CHECK_EQ(uiw__nfs_lookup(c, uiw__nfs_client_root(c), name, fh, NULL), 0);
    uiw__nfs_client_close(c);
}

/* One NFS call over an RPC-over-RDMA client, answered NFS3_OK (res: a result whose first
 * member is its status, rsize bytes). */
static void nfs_ok(CLIENT *c, uint32_t proc, xdrproc_t xargs, void *args, xdrproc_t xres, void *res,
                   size_t rsize)
{
    struct timeval tmo = {30, 0};
    memset(res, 0, rsize);
    CHECK_EQ(clnt_call(c, proc, xargs, args, xres, res, tmo), RPC_SUCCESS);
    CHECK_EQ(*(const nfsstat3 *)res, NFS3_OK);
}

/* GETATTR and a READ of 512 bytes over an RPC-over-RDMA client. */
static void rdma_getattr_read(CLIENT *c, const struct uiw__nfs_fh *fh)
{
    GETATTR3args ga = {.object = {.data = {fh->len, (char *)(uintptr_t)fh->data}}};
    GETATTR3res gr;
    nfs_ok(c, NFSPROC3_GETATTR, UIW__XDRPROC(xdr_GETATTR3args), &ga, UIW__XDRPROC(xdr_GETATTR3res),
           &gr, sizeof(gr));
    CHECK_EQ(gr.GETATTR3res_u.resok.obj_attributes.size, 4096u);
    xdr_free(UIW__XDRPROC(xdr_GETATTR3res), (char *)&gr);
    READ3args ra = {.file = {.data = {fh->len, (char *)(uintptr_t)fh->data}}, .count = 512};
    READ3res rr;
    nfs_ok(c, NFSPROC3_READ, UIW__XDRPROC(xdr_READ3args), &ra, UIW__XDRPROC(xdr_READ3res), &rr,
           sizeof(rr));
    CHECK_EQ(rr.READ3res_u.resok.data.data_len, 512u);
    CHECK_EQ(rr.READ3res_u.resok.data.data_val[511], 'r');
    xdr_free(UIW__XDRPROC(xdr_READ3res), (char *)&rr);
}

/* GETATTR and a READ of 512 bytes as raw records on a TCP connection. */
static void tcp_getattr_read(int fd, uint32_t xid, const struct uiw__nfs_fh *fh)
{
    CHECK_EQ(getattr_raw(fd, xid, AUTH_SYS, fh->data, fh->len), 0u);
    uint32_t a[1 + NFS3_FHSIZE / 4 + 3];
    memset(a, 0, sizeof(a));
    a[0] = htonl(fh->len);
    memcpy(a + 1, fh->data, fh->len);
    size_t w = 1 + (fh->len + 3) / 4;
    a[w + 2] = htonl(512); /* offset 0 (two words), count */
    size_t n;
    char *r = call_raw(fd, xid + 1, 100003, 3, NFSPROC3_READ, AUTH_SYS, a, (w + 3) * 4, &n);
    CHECK_EQ(nfs_status(r, n), 0u);
    CHECK(n >= 512 && r[n - 1] == 'r'); /* the data last (512: no padding) */
    free(r);
}

/* 1,000 connections at once to one uiw-nfsd (--max-connections 1000), half over
 * RPC-over-RDMA and half over TCP, each served a GETATTR and a small READ: none is
 * refused, and they cost the server at most 64 KiB each once idle a second; the 1,001st
 * is refused, over either transport, with a line in the log. */
static void thousand_body(void)
{
    enum { N = 500 };
    struct rlimit rl;
    CHECK_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
    rl.rlim_cur = rl.rlim_max; /* the clients' descriptors, and the server's (inherited) */
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur < 8 * N + 1000)
        SKIP("RLIMIT_NOFILE is too low for 1,000 connections");
    struct nfsd d;
    const char *extra[] = {"--max-connections", "1000", NULL};
    nfsd_up(&d, extra);
    char path[128], data[4096];
    memset(data, 'r', sizeof(data));
    snprintf(path, sizeof(path), "%s/f", d.dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    CHECK_EQ(fwrite(data, 1, sizeof(data), f), sizeof(data));
    CHECK_EQ(fclose(f), 0);
    struct uiw__nfs_fh fh;
    fh_of(&d, "f", &fh);
    nap_ms(500); /* that client's connections closed */
    long before = rss_kib(d.pid);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    static CLIENT *r[N];
    static int t[N];
    for (int i = 0; i < N; i++) {
        r[i] = rdma_clnt_small(&d);
        if (!r[i])
            uiw_test_fail(__FILE__, __LINE__, "RDMA connection %d refused: %s", i, strerror(errno));
        t[i] = tcp_to(d.tcp);
    }
    /* all open at once: now each is served */
    for (int i = 0; i < N; i++) {
        rdma_getattr_read(r[i], &fh);
        tcp_getattr_read(t[i], 1000u + 2u * (uint32_t)i, &fh);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    long busy = rss_kib(d.pid);
    /* the limit: one more is refused over either transport */
    refused_both(&d);
    /* still served, every one */
    for (int i = 0; i < N; i++) {
        rdma_getattr_read(r[i], &fh);
        tcp_getattr_read(t[i], 5000u + 2u * (uint32_t)i, &fh);
    }
    long after = rss_kib(d.pid);
    double per = (double)(after - before) / (2 * N);
    printf("%d connections (%d RPC-over-RDMA, %d TCP) opened and served in %.1f s; uiw-nfsd "
           "RSS %ld KiB before, %ld KiB with them, %ld KiB after a second idle and another "
           "round: %.1f KiB per connection; the 1,001st refused over both transports\n",
           2 * N, N, N, secs, before, busy, after, per);
    CHECK(!RSS_JUDGED || per <= 64);
    for (int i = 0; i < N; i++) {
        clnt_destroy(r[i]);
        close(t[i]);
    }
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
static void thousand_body(void)
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

TEST(rdma_tcp_thousand_connections)
{
    NEED_RDMA();
    thousand_body();
}
