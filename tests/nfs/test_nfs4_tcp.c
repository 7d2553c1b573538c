/* uiw-nfs's NFSv4.1 over TCP against uiw-nfsd: COMPOUNDs in flight together on the one
 * connection, each on a slot of the session (the pipe, pipe.h); a call whose reply was
 * lost with its connection goes again on a new one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nfs/client_int.h"
#include "nfs/server.h"
#include "nfs4.h"
#include "nfs_util.h"
#include "relay.h"
#include "test.h"

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A server of v->dir (rw, root as root) with NFSv4 on, TCP only, and file "f" in it. */
static void start(struct srv *v)
{
    memset(v, 0, sizeof(*v));
    struct uiw__nfsd_opts o;
    uiw__nfsd_opts_default(&o);
    o.nfs4 = 1;
    o.no_root_squash = 1;
    srv_exports_opts(v, "%s 127.0.0.1(rw,no_root_squash,insecure)\n", &o);
    put_file(v, "f", "original", 8);
}

/* uiw-nfs speaking NFSv4.1 over TCP to port (0: the server's). */
static struct uiw__nfs_client *client(const struct srv *v, int port)
{
    char url[700], err[512];
    snprintf(url, sizeof(url), "nfs://127.0.0.1:%d%s?version=4.1", port ? port : v->tcp, v->dir);
    struct uiw__nfs_url u;
    CHECK_EQ(uiw__nfs_url_parse(url, &u, err, sizeof(err)), 0);
    struct uiw__nfs_client *c = uiw__nfs_client_open(&u, 0, err, sizeof(err));
    if (!c)
        uiw_test_fail(__FILE__, __LINE__, "tcp client: %s", err);
    CHECK_STR(uiw__nfs_client_transport(c), "tcp");
    CHECK_STR(uiw__nfs_client_version(c), "4.1");
    return c;
}

/* An operation in flight ended: its result where op->arg points. */
static void ended(struct uiw__nfs_op *op, int rc)
{
    *(int *)op->arg = rc;
}

#define NOT_ENDED 1
#define OPS       100

/* OPS GETATTRs, then OPS READs of a file, started together over TCP: they go out
 * together, each on a slot of the session (the server's 64 less slot 0, the synchronous
 * calls'), the rest waiting for a slot; each ends with the file's attributes or bytes. */
TEST(nfs4_tcp_calls_in_flight)
{
    struct srv v;
    start(&v);
    static char data[OPS * 512];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (char)(i * 7 + i / 512);
    put_file(&v, "g", data, sizeof(data));
    struct uiw__nfs_client *c = client(&v, 0);
    struct uiw__nfs_fh fh;
    fattr3 ga;
    CHECK_EQ(lookup_below(c, "g", &fh, &ga), 0);
    static struct uiw__nfs_op ops[OPS];
    static int rc[OPS];
    static fattr3 attr[OPS];
    static char back[OPS][512];
    static int eof[OPS];
    for (int pass = 0; pass < 2; pass++) {
        /* the READs' file open first (its OPEN is synchronous) */
        if (pass == 1)
            CHECK_EQ(uiw__nfs_read(c, &fh, 0, 512, back[0], &eof[0]), 512);
        for (int i = 0; i < OPS; i++) {
            memset(&ops[i], 0, sizeof(ops[i]));
            ops[i].done = ended;
            ops[i].arg = &rc[i];
            rc[i] = NOT_ENDED;
            if (pass == 0)
                CHECK_EQ(uiw__nfs_getattr_start(c, &fh, &attr[i], &ops[i]), 0);
            else
                CHECK_EQ(
                    uiw__nfs_read_start(c, &fh, (uint64_t)i * 512, 512, back[i], &eof[i], &ops[i]),
                    0);
        }
        CHECK(uiw__nfs4c_inflight(c));
        int64_t until = now_ms() + 30000;
        for (int left = OPS; left;) {
            if (now_ms() > until)
                uiw_test_fail(__FILE__, __LINE__, "operations in flight never ended");
            CHECK(uiw__nfs_poll(c, 100) >= 0);
            left = 0;
            for (int i = 0; i < OPS; i++)
                left += rc[i] == NOT_ENDED;
        }
        for (int i = 0; i < OPS; i++) {
            if (pass == 0) {
                CHECK_EQ(rc[i], 0);
                CHECK_EQ(attr[i].size, sizeof(data));
                CHECK_EQ(attr[i].type, NF3REG);
            } else {
                CHECK_EQ(rc[i], 512);
                CHECK_EQ(eof[i], i == OPS - 1);
                CHECK_MEM(back[i], data + i * 512, 512);
            }
        }
        /* as many on the connection at once as the session had slots for, no more */
        CHECK_EQ(uiw__nfs_most_inflight(c), 63);
    }
    CHECK(!uiw__nfs4c_inflight(c));
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* The connection reset in the middle of a GETATTR's reply: the call, sent again on a new
 * connection with its slot and sequence, finds the server ran it and kept no reply
 * (NFS4ERR_RETRY_UNCACHED_REP); it goes again on the slot's next sequence and is
 * answered, and the session goes on. */
TEST(nfs4_tcp_reply_lost)
{
    struct srv v;
    start(&v);
    struct relay *r = relay_start(v.tcp);
    struct uiw__nfs_client *c = client(&v, relay_port(r));
    fattr3 a;
    for (int i = 0; i < 3; i++) {
        relay_cut_at(r, RELAY_S2C, relay_bytes(r, RELAY_S2C), 1);
        CHECK_EQ(uiw__nfs_getattr(c, uiw__nfs_client_root(c), &a), 0);
        CHECK_EQ(a.type, NF3DIR);
        CHECK_EQ(relay_cuts(r), (unsigned)i + 1);
        CHECK_EQ(c->reconnects, (unsigned)i + 1);
    }
    struct uiw__nfs_fh fh;
    CHECK_EQ(lookup_below(c, "f", &fh, &a), 0);
    CHECK_EQ(a.size, 8);
    uiw__nfs_client_close(c);
    relay_stop(r);
    srv_stop(&v);
}
