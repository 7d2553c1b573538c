/* Faults below the stack, with uiw-nfs as the client a user runs: a relay between it and
 * uiw-nfsd resets the connection in the middle of a WRITE or READ stream (over TCP and
 * over RPC-over-RDMA). Each file must arrive whole: the client connects again and sends
 * its calls again with their XIDs, and the duplicate-reply cache answers what already
 * ran.
 * UIW_FAULT_MB sets the file's size (default 256). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The two files hold the same bytes. */
static void same_file(const char *a, const char *b)
{
    int fa = open(a, O_RDONLY), fb = open(b, O_RDONLY);
    CHECK(fa >= 0 && fb >= 0);
    static char ba[1 << 20], bb[1 << 20];
    for (uint64_t off = 0;; off += sizeof(ba)) {
        ssize_t na = read(fa, ba, sizeof(ba)), nb = read(fb, bb, sizeof(bb));
        CHECK(na >= 0 && nb >= 0);
        if (na != nb || memcmp(ba, bb, (size_t)na) != 0)
            uiw_test_fail(__FILE__, __LINE__, "%s and %s differ at about %llu", a, b,
                          (unsigned long long)off);
        if (na == 0)
            break;
    }
    close(fa);
    close(fb);
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
    uiw__nfsd_opts_default(&o);
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
    same_file(local, path_in(&v, "f"));
    if (rdma)
        relay_cut_at(r, RELAY_S2C, relay_bytes(r, RELAY_S2C) + n / 2, 0);
    else
        relay_cut_at(r, RELAY_S2C, relay_bytes(r, RELAY_S2C) + n / 2, 1);
    const char *get[] = {"uiw-nfs", "-v", "get", url, back, NULL};
    nfs_tool(get, 300);
    CHECK_EQ(relay_cuts(r), 2);
    same_file(local, back);
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
