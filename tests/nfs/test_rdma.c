/* uiw-nfsd and the client over RPC-over-RDMA on loopback (the project's RNIC and RPC
 * layer). The tests exit 77 (skipped) in a build without the RPC layer. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nfs/client.h"
#include "nfs/xdr_data.h"
#include "alloc_count.h"
#include "interop.h"
#include "nfs_util.h"
#include "run.h"
#include "test.h"

#if UIW_NFS_HAVE_RDMA

/* A server with RDMA on a free port (vers1: Version One only). */
static void start_rdma(struct srv *v, int vers1)
{
    struct uiw__nfsd_opts o;
    srv_opts_v3(&o);
    o.no_root_squash = 1;
    o.vers1_only = vers1;
    srv_start(v, &o);
}

static struct uiw__nfs_client *rdma_client(const struct srv *v, int rpcrdma, int verbose)
{
    char url[700], err[512];
    snprintf(url, sizeof(url), "nfs://127.0.0.1:%d%s?mountport=%d&transport=rdma%s",
             uiw__nfsd_port(v->s, UIW__NFSD_RDMA), v->dir, v->mount,
             rpcrdma == 1 ? "&rpcrdma=1" : "");
    struct uiw__nfs_url u;
    CHECK_EQ(uiw__nfs_url_parse(url, &u, err, sizeof(err)), 0);
    struct uiw__nfs_client *c = uiw__nfs_client_open(&u, verbose, err, sizeof(err));
    if (!c)
        uiw_test_fail(__FILE__, __LINE__, "rdma client: %s", err);
    return c;
}

/* READDIRPLUS's entries named e*: counted, and their attributes against lstat. */
struct entries {
    const struct srv *v;
    int n;
};

static int count(void *arg, const char *name, uint64_t fileid, const fattr3 *attr,
                 const struct uiw__nfs_fh *fh)
{
    struct entries *e = arg;
    CHECK(fh != NULL && attr != NULL);
    if (name[0] == 'e') {
        e->n++;
        CHECK_FATTR_PATH(name, attr, path_in(e->v, name));
        CHECK_EQ(fileid, attr->fileid);
    }
    return 0;
}

/* WRITE (Read chunks) and READ (Write chunks into the caller's buffer) of a few MiB,
 * READDIRPLUS of 1,000 entries (long replies in Reply chunks), in Version Two; the
 * attributes against lstat of the export. */
static void transfer(struct srv *v, struct uiw__nfs_client *c)
{
    struct uiw__nfs_fh f;
    CHECK_EQ(uiw__nfs_create(c, uiw__nfs_client_root(c), "big", 0644, 0, &f), 0);
    size_t n = 3u << 20;
    char *buf = malloc(n + 1), *back = malloc(n + 1);
    CHECK(buf && back);
    for (size_t i = 0; i <= n; i++)
        buf[i] = (char)(i * 131 + 17);
    char verf[8], verf2[8];
    for (size_t off = 0; off < n; off += 1u << 20)
        CHECK_EQ(uiw__nfs_write(c, &f, off, 1u << 20, buf + off, UNSTABLE, verf), 1 << 20);
    CHECK_EQ(uiw__nfs_write(c, &f, n, 1, buf + n, FILE_SYNC, verf2), 1);
    CHECK_MEM(verf, verf2, 8);
    CHECK_EQ(uiw__nfs_commit(c, &f, verf2), 0);
    CHECK_MEM(verf, verf2, 8);
    int eof = 0;
    memset(back, 0, n + 1);
    for (size_t off = 0; off < n; off += 1u << 20)
        CHECK_EQ(uiw__nfs_read(c, &f, off, 1u << 20, back + off, &eof), 1 << 20);
    CHECK_EQ(uiw__nfs_read(c, &f, n, 1, back + n, &eof), 1);
    CHECK_EQ(eof, 1);
    CHECK_MEM(back, buf, n + 1);
    struct stat st;
    CHECK_EQ(stat(path_in(v, "big"), &st), 0);
    CHECK_EQ(st.st_size, (long long)n + 1);
    fattr3 a;
    CHECK_EQ(uiw__nfs_getattr(c, &f, &a), 0);
    CHECK_FATTR_PATH("GETATTR over RDMA", &a, path_in(v, "big"));
    free(buf);
    free(back);
    for (int i = 0; i < 1000; i++) {
        char name[32];
        snprintf(name, sizeof(name), "e%d", i);
        put_file(v, name, "", 0);
    }
    struct entries k = {v, 0};
    CHECK_EQ(uiw__nfs_readdir(c, uiw__nfs_client_root(c), count, &k), 0);
    CHECK_EQ(k.n, 1000);
    CHECK_EQ(uiw__nfs_lookup(c, uiw__nfs_client_root(c), "a/b", &f, NULL), -NFS3ERR_ACCES);
}

static void rdma_v2_body(void)
{
    struct srv v;
    start_rdma(&v, 0);
    struct uiw__nfs_client *c = rdma_client(&v, 0, 0);
    CHECK_STR(uiw__nfs_client_transport(c), "rdma-v2");
    transfer(&v, c);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* A Version One server: the Version Two client falls back; a Version One client too. */
static void rdma_v1_body(void)
{
    struct srv v;
    start_rdma(&v, 1);
    struct uiw__nfs_client *c = rdma_client(&v, 0, 0);
    CHECK_STR(uiw__nfs_client_transport(c), "rdma-v1");
    transfer(&v, c);
    uiw__nfs_client_close(c);
    srv_stop(&v);
    start_rdma(&v, 0);
    c = rdma_client(&v, 1, 0);
    CHECK_STR(uiw__nfs_client_transport(c), "rdma-v1");
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

struct pending {
    struct uiw__nfs_async a;
    GETATTR3args args;
    GETATTR3res res;
    int done, rc;
};

static void ended(void *arg, int rc)
{
    struct pending *p = arg;
    p->done = 1;
    p->rc = rc;
}

/* 64 calls in flight at once: every one answered. */
static void rdma_inflight_body(void)
{
    struct srv v;
    start_rdma(&v, 0);
    struct uiw__nfs_client *c = rdma_client(&v, 0, 0);
    static struct pending p[64];
    for (int i = 0; i < 64; i++) {
        memset(&p[i], 0, sizeof(p[i]));
        p[i].a.done = ended;
        p[i].a.arg = &p[i];
        p[i].args.object.data.data_len = uiw__nfs_client_root(c)->len;
        p[i].args.object.data.data_val = (char *)uiw__nfs_client_root(c)->data;
        CHECK_EQ(uiw__nfs_call_async(c, NFSPROC3_GETATTR, UIW__XDRPROC(xdr_GETATTR3args),
                                     &p[i].args, UIW__XDRPROC(xdr_GETATTR3res), &p[i].res, &p[i].a),
                 0);
    }
    int left = 64;
    for (int tries = 0; left > 0 && tries < 1000; tries++) {
        CHECK(uiw__nfs_poll(c, 100) >= 0);
        left = 0;
        for (int i = 0; i < 64; i++)
            left += !p[i].done;
    }
    CHECK_EQ(left, 0);
    for (int i = 0; i < 64; i++) {
        CHECK_EQ(p[i].rc, 0);
        CHECK_EQ(p[i].res.status, NFS3_OK);
        CHECK_EQ(p[i].res.GETATTR3res_u.resok.obj_attributes.type, NF3DIR);
    }
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* The tools over RDMA: --verify put and get, the version in the verbose output; the file
 * put and the file fetched are the original, byte for byte. */
static void rdma_tools_body(void)
{
    struct srv v;
    start_rdma(&v, 1);
    char local[400], back[400], url[800];
    snprintf(local, sizeof(local), "%s.src", v.dir);
    snprintf(back, sizeof(back), "%s.back", v.dir);
    FILE *f = fopen(local, "w");
    CHECK(f != NULL);
    for (int i = 0; i < 2500000; i++)
        fputc((i * 7) & 0xff, f);
    fclose(f);
    snprintf(url, sizeof(url), "nfs://127.0.0.1:%d%s/x?mountport=%d&transport=rdma",
             uiw__nfsd_port(v.s, UIW__NFSD_RDMA), v.dir, v.mount);
    const char *put[] = {"uiw-nfs", "-v", "--verify", "put", local, url, NULL};
    struct tool_run r;
    tool_run(UIW_NFS, put, NULL, 0, 60, &r);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.err, "verified") != NULL);
    CHECK(strstr(r.err, "answered ERR_VERS (versions 1 to 1): going on in Version 1") != NULL);
    tool_run_free(&r);
    /* what put wrote and what get fetched: the original, byte for byte, on disk */
    char put_there[600];
    snprintf(put_there, sizeof(put_there), "%s/x", v.dir);
    CHECK_SAME_FILE(local, put_there);
    const char *get[] = {"uiw-nfs", "--verify", "get", url, back, NULL};
    tool_run(UIW_NFS, get, NULL, 0, 60, &r);
    CHECK_EQ(r.status, 0);
    CHECK(strstr(r.err, "verified") != NULL);
    tool_run_free(&r);
    CHECK_SAME_FILE(local, back);
    unlink(local);
    unlink(back);
    srv_stop(&v);
}

/* Clients that vanish mid-WRITE over RDMA: uiw-nfs putting 128 MiB in 16 MiB WRITEs (each
 * pulled by the server's RDMA Reads) is killed as soon as its first WRITE landed, three
 * times; another client is served meanwhile and afterwards, and the server stops cleanly
 * (every thread joined, nothing leaked under ASan). */
static void rdma_vanish_body(void)
{
    struct srv v;
    struct uiw__nfsd_opts o;
    srv_opts_v3(&o);
    o.no_root_squash = 1;
    o.max_io = 16u << 20;
    o.rdma_threads = 2;
    srv_start(&v, &o);
    struct uiw__nfs_client *c = rdma_client(&v, 0, 0);
    struct uiw__nfs_fh f;
    CHECK_EQ(uiw__nfs_create(c, uiw__nfs_client_root(c), "f", 0644, 0, &f), 0);
    CHECK_EQ(uiw__nfs_write(c, &f, 0, 4, "abcd", FILE_SYNC, NULL), 4);
    char src[400], log[400], cmd[2048];
    snprintf(src, sizeof(src), "%s.src", v.dir);
    snprintf(log, sizeof(log), "%s.log", v.dir);
    int fd = open(src, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    char *block = malloc(1u << 20);
    CHECK(block != NULL);
    memset(block, 0x5a, 1u << 20);
    for (int i = 0; i < 128; i++)
        CHECK_EQ(write(fd, block, 1u << 20), 1 << 20);
    free(block);
    close(fd);
    for (int round = 0; round < 3; round++) {
        char name[32];
        snprintf(name, sizeof(name), "big%d", round);
        snprintf(cmd, sizeof(cmd),
                 "exec '%s' --no-progress -b 16M put '%s' "
                 "'nfs://127.0.0.1:%d%s/%s?mountport=%d&transport=rdma'",
                 UIW_NFS, src, uiw__nfsd_port(v.s, UIW__NFSD_RDMA), v.dir, name, v.mount);
        int pid = it_spawn(cmd, log);
        struct stat st;
        int landed = 0;
        for (int i = 0; i < 60000 && !landed; i++) {
            landed = stat(path_in(&v, name), &st) == 0 && st.st_size > 0;
            if (!landed)
                usleep(1000);
        }
        CHECK(landed);
        CHECK_EQ(kill(pid, SIGKILL), 0);
        int status = it_wait(pid, 30);
        if (status != 128 + SIGKILL)
            uiw_test_fail(__FILE__, __LINE__, "uiw-nfs ended before it was killed (%d): %s", status,
                          it_slurp(log));
        CHECK(st.st_size < (128ll << 20));
        /* The others are served. */
        char buf[8];
        int eof;
        for (int i = 0; i < 10; i++) {
            CHECK_EQ(uiw__nfs_write(c, &f, 4, 1, "e", FILE_SYNC, NULL), 1);
            CHECK_EQ(uiw__nfs_read(c, &f, 0, sizeof(buf), buf, &eof), 5);
            CHECK_MEM(buf, "abcde", 5);
        }
    }
    /* A new client too. */
    struct uiw__nfs_client *c2 = rdma_client(&v, 0, 0);
    fattr3 a;
    CHECK_EQ(uiw__nfs_getattr(c2, &f, &a), 0);
    CHECK_EQ(a.size, 5);
    uiw__nfs_client_close(c2);
    uiw__nfs_client_close(c);
    unlink(src);
    unlink(log);
    srv_stop(&v);
}

/* 4 KiB WRITE and READ and GETATTR, 200 rounds after a warm-up, on c: fewer allocations
 * in all (client and server) than a tenth of the rounds. The server decodes a call's
 * handles into memory of the call, and an inline WRITE's data is written from the
 * receive buffer it came in. (The client's LOOKUP still allocates the handle it
 * decodes.) */
static void calls_allocate_nothing(struct uiw__nfs_client *c, const char *name, const char *how)
{
    struct uiw__nfs_fh f;
    CHECK_EQ(uiw__nfs_create(c, uiw__nfs_client_root(c), name, 0644, 0, &f), 0);
    char buf[4096], back[4096];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (char)(i * 13 + 1);
    enum { WARM = 50, ROUNDS = 200 };
    unsigned long before = 0;
    for (int r = 0; r < WARM + ROUNDS; r++) {
        if (r == WARM)
            before = alloc_count();
        fattr3 a;
        int eof;
        CHECK_EQ(uiw__nfs_write(c, &f, 0, sizeof(buf), buf, UNSTABLE, NULL), (int)sizeof(buf));
        CHECK_EQ(uiw__nfs_read(c, &f, 0, sizeof(back), back, &eof), (int)sizeof(back));
        CHECK_EQ(uiw__nfs_getattr(c, &f, &a), 0);
        CHECK_EQ(a.size, sizeof(buf));
    }
    unsigned long n = alloc_count() - before;
    CHECK_MEM(back, buf, sizeof(buf));
    if (n >= ROUNDS / 10)
        uiw_test_fail(__FILE__, __LINE__, "%s: %lu allocations in %d calls", how, n, 3 * ROUNDS);
}

static void rdma_alloc_body(void)
{
    struct srv v;
    start_rdma(&v, 0);
    struct uiw__nfs_client *c = rdma_client(&v, 2, 0);
    calls_allocate_nothing(c, "v2", "RDMA, Version Two");
    uiw__nfs_client_close(c);
    c = rdma_client(&v, 1, 0);
    calls_allocate_nothing(c, "v1", "RDMA, Version One");
    uiw__nfs_client_close(c);
    c = srv_client(&v, 0, 0);
    calls_allocate_nothing(c, "tcp", "TCP");
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

#define NEED_RDMA()
#else
#define NEED_RDMA() SKIP("built without the RPC-over-RDMA layer (src/rpc)")
static void rdma_v2_body(void)
{
}
static void rdma_v1_body(void)
{
}
static void rdma_inflight_body(void)
{
}
static void rdma_tools_body(void)
{
}
static void rdma_vanish_body(void)
{
}
static void rdma_alloc_body(void)
{
}
#endif

TEST(rdma_v2)
{
    NEED_RDMA();
    rdma_v2_body();
}

TEST(rdma_v1)
{
    NEED_RDMA();
    rdma_v1_body();
}

TEST(rdma_inflight)
{
    NEED_RDMA();
    rdma_inflight_body();
}

TEST(rdma_tools)
{
    NEED_RDMA();
    rdma_tools_body();
}

TEST(rdma_client_vanishes_mid_write)
{
    NEED_RDMA();
    rdma_vanish_body();
}

TEST(rdma_calls_allocate_nothing)
{
    NEED_RDMA();
    rdma_alloc_body();
}
