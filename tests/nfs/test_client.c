/* The client's operations in flight (client.h): many at once on one connection, over TCP
 * (the pipe, pipe.h) and over RPC-over-RDMA, each ending with what the synchronous call
 * returns; over TCP a connection lost in the middle of a reply is made again and every
 * call in flight sent again, the server's duplicate-reply cache answering those that ran. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nfs/client.h"
#include "nfs/client_int.h"
#include "nfs/pipe.h"
#include "nfs/server.h"
#include "nfs_util.h"
#include "relay.h"
#include "test.h"

#define FILES 16
#define BLOCK 65536

struct op {
    struct uiw__nfs_op op;
    int done, rc;
};

static void op_done(struct uiw__nfs_op *op, int rc)
{
    struct op *o = op->arg;
    o->done = 1;
    o->rc = rc;
}

static void op_ready(struct op *o)
{
    memset(o, 0, sizeof(*o));
    o->op.done = op_done;
    o->op.arg = o;
}

/* Poll c until the n ops have ended. */
static void wait_ops(struct uiw__nfs_client *c, struct op *ops, int n)
{
    for (int tries = 0; tries < 3000; tries++) {
        int left = 0;
        for (int i = 0; i < n; i++)
            left += !ops[i].done;
        if (!left)
            return;
        CHECK(uiw__nfs_poll(c, 100) >= 0);
    }
    uiw_test_fail(__FILE__, __LINE__, "operations in flight never ended");
}

static struct uiw__nfs_client *client_of(const char *url)
{
    struct uiw__nfs_url u;
    char err[512];
    CHECK_EQ(uiw__nfs_url_parse(url, &u, err, sizeof(err)), 0);
    struct uiw__nfs_client *c = uiw__nfs_client_open(&u, 0, err, sizeof(err));
    if (!c)
        uiw_test_fail(__FILE__, __LINE__, "client: %s", err);
    return c;
}

static char data[FILES][2 * BLOCK];

/* FILES files created, written (two blocks each), committed and read back, every
 * operation of a kind started before any ends; LOOKUPs, GETATTR, SETATTR among them. */
static void ops_in_flight(struct srv *v, struct uiw__nfs_client *c, int tcp)
{
    static struct op ops[2 * FILES];
    static struct uiw__nfs_fh fh[FILES];
    static char verf[2 * FILES][8], back[FILES][2 * BLOCK];
    static int eof[2 * FILES];
    const struct uiw__nfs_fh *root = uiw__nfs_client_root(c);
    for (int i = 0; i < FILES; i++) {
        char name[16];
        snprintf(name, sizeof(name), "f%d", i);
        op_ready(&ops[i]);
        CHECK_EQ(uiw__nfs_create_start(c, root, name, 0644, 0, &fh[i], &ops[i].op), 0);
    }
    wait_ops(c, ops, FILES);
    for (int i = 0; i < 2 * FILES; i++) {
        for (int k = 0; k < BLOCK; k++)
            data[i / 2][(i % 2) * BLOCK + k] = (char)(k * 31 + i);
        op_ready(&ops[i]);
        CHECK_EQ(uiw__nfs_write_start(c, &fh[i / 2], (uint64_t)(i % 2) * BLOCK, BLOCK,
                                      data[i / 2] + (i % 2) * BLOCK, UNSTABLE, verf[i], &ops[i].op),
                 0);
    }
    if (tcp) /* all of them queued on the connection before a reply was read */
        CHECK(uiw__nfs_most_inflight(c) >= 2 * FILES);
    wait_ops(c, ops, 2 * FILES);
    for (int i = 0; i < 2 * FILES; i++) {
        CHECK_EQ(ops[i].rc, BLOCK);
        CHECK_MEM(verf[i], verf[0], 8);
    }
    for (int i = 0; i < FILES; i++) {
        op_ready(&ops[i]);
        CHECK_EQ(uiw__nfs_commit_start(c, &fh[i], verf[FILES + i], &ops[i].op), 0);
    }
    wait_ops(c, ops, FILES);
    for (int i = 0; i < FILES; i++) {
        CHECK_EQ(ops[i].rc, 0);
        CHECK_MEM(verf[FILES + i], verf[0], 8);
        char name[16];
        snprintf(name, sizeof(name), "f%d", i);
        struct stat st;
        CHECK_EQ(stat(path_in(v, name), &st), 0);
        CHECK_EQ(st.st_size, 2 * BLOCK);
    }
    for (int i = 0; i < 2 * FILES; i++) {
        op_ready(&ops[i]);
        CHECK_EQ(uiw__nfs_read_start(c, &fh[i / 2], (uint64_t)(i % 2) * BLOCK, BLOCK,
                                     back[i / 2] + (i % 2) * BLOCK, &eof[i], &ops[i].op),
                 0);
    }
    /* a synchronous call among them waits its turn (over TCP: in the pipe) */
    fattr3 a;
    CHECK_EQ(uiw__nfs_getattr(c, &fh[3], &a), 0);
    CHECK_EQ(a.size, 2 * BLOCK);
    wait_ops(c, ops, 2 * FILES);
    for (int i = 0; i < 2 * FILES; i++) {
        CHECK_EQ(ops[i].rc, BLOCK);
        CHECK_EQ(eof[i], i % 2);
    }
    for (int i = 0; i < FILES; i++)
        CHECK_MEM(back[i], data[i], 2 * BLOCK);
    /* LOOKUP (with attributes, and of a name that is not there), SETATTR, GETATTR */
    struct uiw__nfs_fh got;
    fattr3 ga, gb;
    op_ready(&ops[0]);
    op_ready(&ops[1]);
    op_ready(&ops[2]);
    CHECK_EQ(uiw__nfs_lookup_start(c, root, "f5", &got, &ga, &ops[0].op), 0);
    CHECK_EQ(uiw__nfs_lookup_start(c, root, "nothing", &got, &gb, &ops[1].op), 0);
    CHECK_EQ(uiw__nfs_truncate_start(c, &fh[7], 10, &ops[2].op), 0);
    wait_ops(c, ops, 3);
    CHECK_EQ(ops[0].rc, 0);
    CHECK_EQ(ga.size, 2 * BLOCK);
    CHECK_EQ(ga.type, NF3REG);
    CHECK_EQ(ops[1].rc, -NFS3ERR_NOENT);
    CHECK_EQ(ops[2].rc, 0);
    op_ready(&ops[0]);
    CHECK_EQ(uiw__nfs_getattr_start(c, &fh[7], &ga, &ops[0].op), 0);
    wait_ops(c, ops, 1);
    CHECK_EQ(ops[0].rc, 0);
    CHECK_EQ(ga.size, 10);
    /* a name too long never goes out */
    char longname[300];
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = 0;
    op_ready(&ops[0]);
    CHECK_EQ(uiw__nfs_lookup_start(c, root, longname, &got, NULL, &ops[0].op), -ENAMETOOLONG);
}

TEST(client_ops_in_flight_tcp)
{
    struct srv v;
    srv_start(&v, NULL);
    struct uiw__nfs_client *c = client_of(v.url);
    ops_in_flight(&v, c, 1);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

TEST(client_ops_in_flight_rdma)
{
#if UIW_NFS_HAVE_RDMA
    struct srv v;
    struct uiw__nfsd_opts o;
    srv_opts_v3(&o);
    o.no_root_squash = 1;
    srv_start(&v, &o);
    char url[700];
    snprintf(url, sizeof(url), "nfs://127.0.0.1:%d%s?mountport=%d&transport=rdma",
             uiw__nfsd_port(v.s, UIW__NFSD_RDMA), v.dir, v.mount);
    struct uiw__nfs_client *c = client_of(url);
    ops_in_flight(&v, c, 0);
    uiw__nfs_client_close(c);
    srv_stop(&v);
#else
    SKIP("built without the RPC layer");
#endif
}

/* Over TCP the pipe's buffers are made ready for the READs and WRITEs the caller says are
 * to come (uiw__nfs_client_reserve, 1 MiB): the first WRITE and READ of that size, in
 * flight together, grow neither (nor fault in fresh memory within their latency), and
 * move their bytes whole. */
TEST(client_pipe_ready_for_the_largest_calls)
{
    struct srv v;
    srv_start(&v, NULL);
    struct uiw__nfs_client *c = client_of(v.url);
    uint32_t n = uiw__nfs_client_rtmax(c);
    CHECK(n >= (1u << 20));
    n = 1u << 20;
    uiw__nfs_client_reserve(c, n);
    struct uiw__nfs_fh fh;
    CHECK_EQ(uiw__nfs_create(c, uiw__nfs_client_root(c), "big", 0644, 0, &fh), 0);
    static char out[1u << 20], back[1u << 20];
    for (uint32_t i = 0; i < n; i++)
        out[i] = (char)(i * 13 + 7);
    put_file(&v, "big", out, n);
    static struct op ops[2];
    char verf[8];
    int eof = 0;
    op_ready(&ops[0]);
    op_ready(&ops[1]);
    CHECK_EQ(uiw__nfs_write_start(c, &fh, n, n, out, UNSTABLE, verf, &ops[0].op), 0);
    CHECK_EQ(uiw__nfs_read_start(c, &fh, 0, n, back, &eof, &ops[1].op), 0);
    wait_ops(c, ops, 2);
    CHECK_EQ(ops[0].rc, (int)n);
    CHECK_EQ(ops[1].rc, (int)n);
    CHECK_MEM(back, out, n);
    CHECK(c->pipe != NULL);
    CHECK_EQ(uiw__nfs_pipe_grown(c->pipe), 0u);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* Over TCP through a relay that resets the connection a few bytes into a reply while
 * WRITEs are in flight: the client connects again and sends every call in flight again
 * with its XID; each WRITE ends once, with its count, the file is whole, and the server's
 * duplicate-reply cache answered the calls that had already run. */
TEST(client_pipe_connects_again)
{
    struct srv v;
    srv_start(&v, NULL);
    struct relay *r = relay_start(v.tcp);
    char url[700];
    snprintf(url, sizeof(url), "nfs://127.0.0.1:%d%s?mountport=%d", relay_port(r), v.dir, v.mount);
    struct uiw__nfs_client *c = client_of(url);
    struct uiw__nfs_fh fh;
    CHECK_EQ(uiw__nfs_create(c, uiw__nfs_client_root(c), "f", 0644, 0, &fh), 0);
    static struct op ops[2 * FILES];
    static char verf[2 * FILES][8];
    unsigned long hits = v.s->drc_hits;
    /* the third reply from now on: cut a few bytes in */
    relay_cut_at(r, RELAY_S2C, relay_bytes(r, RELAY_S2C) + 300, 1);
    for (int i = 0; i < 2 * FILES; i++) {
        for (int k = 0; k < BLOCK; k++)
            data[i / 2][(i % 2) * BLOCK + k] = (char)(k * 7 + i);
        op_ready(&ops[i]);
        CHECK_EQ(uiw__nfs_write_start(c, &fh, (uint64_t)i * BLOCK, BLOCK,
                                      data[i / 2] + (i % 2) * BLOCK, FILE_SYNC, verf[i],
                                      &ops[i].op),
                 0);
    }
    wait_ops(c, ops, 2 * FILES);
    CHECK_EQ(relay_cuts(r), 1);
    for (int i = 0; i < 2 * FILES; i++)
        CHECK_EQ(ops[i].rc, BLOCK);
    CHECK(v.s->drc_hits > hits);
    FILE *f = fopen(path_in(&v, "f"), "rb");
    CHECK(f != NULL);
    static char back[2 * FILES * BLOCK];
    CHECK_EQ(fread(back, 1, sizeof(back), f), sizeof(back));
    fclose(f);
    for (int i = 0; i < FILES; i++)
        CHECK_MEM(back + (size_t)i * 2 * BLOCK, data[i], 2 * BLOCK);
    /* the connection made again serves synchronous calls as before */
    fattr3 a;
    CHECK_EQ(uiw__nfs_getattr(c, &fh, &a), 0);
    CHECK_EQ(a.size, sizeof(back));
    uiw__nfs_client_close(c);
    relay_stop(r);
    srv_stop(&v);
}
