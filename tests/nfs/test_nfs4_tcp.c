/* uiw-nfs's NFSv4.1 over TCP against uiw-nfsd: COMPOUNDs in flight together on the one
 * connection, each on a slot of the session (the pipe, pipe.h); a call whose reply was
 * lost with its connection goes again on a new one. The back channel on that connection
 * (RFC 8881 section 2.10.3.1): the server's CB_NULL probe and CB_RECALL come as records
 * whose msg_type is CALL among the replies, the client answers them on the same
 * connection and returns the delegation; after the connection is lost, the new one is
 * bound to both channels (BIND_CONN_TO_SESSION) and carries the next recall; a backward
 * call the client cannot serve gets its RPC error. */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nfs/client_int.h"
#include "nfs/nfs4cb.h"
#include "nfs/nfs4state.h"
#include "nfs/pipe.h"
#include "nfs/server.h"
#include "nfs4.h"
#include "nfs_util.h"
#include "rawrpc.h"
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

/* A read delegation taken over TCP, recalled over the TCP back channel by another
 * client's WRITE, returned; the server counts one recall sent and answered, one return,
 * no revocation. */
TEST(nfs4_cb_tcp_recall)
{
    struct srv v;
    start(&v);
    struct uiw__nfs_client *c = client(&v, 0);
    v4_wait_cb_up(&v, c, uiw__nfs_poll);
    v4_recalled(&v, c, "rewrite!");
    struct uiw__nfsd_cb_counts n;
    CHECK_EQ(uiw__nfsd_cb_counts(v.s, &n), 0);
    CHECK_EQ(n.recalls, 1);
    /* this client's probe and the recall, each sent once and answered; the writer's
     * probe too, unless it went away first */
    CHECK(n.sent >= 2 && n.sent <= 3);
    CHECK(n.replies >= 2);
    CHECK_EQ(n.timeouts, 0);
    CHECK_EQ(n.resent, 0);
    CHECK_EQ(uiw__nfs4c_rebinds(c), 0);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* The connection reset under an idle client that polls: it connects again, binds the new
 * connection to the session in both directions, answers the server's probe on it, and
 * the next recall comes and is answered there. */
TEST(nfs4_cb_tcp_rebind)
{
    struct srv v;
    start(&v);
    struct relay *r = relay_start(v.tcp);
    struct uiw__nfs_client *c = client(&v, relay_port(r));
    v4_wait_cb_up(&v, c, uiw__nfs_poll);
    relay_cut_all(r);
    /* polled with nothing in flight, the client finds the connection gone, makes it
     * again and binds it (no call of its own needed) */
    for (int i = 0; uiw__nfs4c_rebinds(c) == 0; i++) {
        if (i >= 500)
            uiw_test_fail(__FILE__, __LINE__, "the new connection was never bound");
        CHECK(uiw__nfs_poll(c, 20) >= 0);
    }
    CHECK_EQ(c->reconnects, 1);
    CHECK_EQ(uiw__nfs4c_rebinds(c), 1);
    fattr3 a;
    CHECK_EQ(uiw__nfs_getattr(c, uiw__nfs_client_root(c), &a), 0);
    CHECK_EQ(a.type, NF3DIR);
    v4_wait_cb_up(&v, c, uiw__nfs_poll);
    CHECK_EQ(
        uiw__nfs4c_seq_flags(c) & (SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION), 0);
    v4_recalled(&v, c, "again!!!");
    uiw__nfs_client_close(c);
    relay_stop(r);
    srv_stop(&v);
}

/* An operation in flight ended: its result where op->arg points. */
static void ended(struct uiw__nfs_op *op, int rc)
{
    *(int *)op->arg = rc;
}

#define NOT_ENDED 1
#define OPS       100

/* OPS GETATTRs, then OPS READs of a file, started together over TCP: they go out
 * together, each on a slot of the session (the 65 the client asks for less slot 0, the
 * synchronous calls'), the rest waiting for a slot; each ends with the file's attributes
 * or bytes. */
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
        CHECK_EQ(uiw__nfs_most_inflight(c), 64);
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
        /* the connection quiet first: bound again after the last cut (a call does it),
         * the server's probe of its back channel answered */
        CHECK_EQ(uiw__nfs_getattr(c, uiw__nfs_client_root(c), &a), 0);
        v4_wait_cb_up(&v, c, uiw__nfs_poll);
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

/* The backward call rec (len bytes) served by c: the reply's header, the results of a
 * CB_COMPOUND (when it succeeded) decoded into res. */
static void served(struct uiw__nfs_client *c, const char *rec, size_t len, uint32_t xid,
                   struct rpc_msg *m, CB_COMPOUND4res *res)
{
    static char out[UIW__NFS_PIPE_REPLY_MAX];
    size_t n = uiw__nfs4c_cb_serve(c, rec, len, out, sizeof(out));
    CHECK(n > 0);
    decode_reply(out, n, xid, m, res ? UIW__XDRPROC(xdr_CB_COMPOUND4res) : NULL, res);
    CHECK_EQ(m->rm_reply.rp_stat, MSG_ACCEPTED);
}

/* A backward call of CB_COMPOUND: its header, then args encoded. Its length. */
static size_t cb_call(char *rec, size_t cap, uint32_t xid, uint32_t minor, nfs_cb_argop4 *ops,
                      u_int nops)
{
    size_t hl = call_header(rec, xid, 0x40000000u, 1, 1, AUTH_NONE);
    CB_COMPOUND4args a;
    memset(&a, 0, sizeof(a));
    a.minorversion = minor;
    a.argarray.argarray_len = nops;
    a.argarray.argarray_val = ops;
    XDR x;
    xdrmem_create(&x, rec + hl, (u_int)(cap - hl), XDR_ENCODE);
    CHECK(xdr_CB_COMPOUND4args(&x, &a));
    size_t n = hl + xdr_getpos(&x);
    xdr_destroy(&x);
    return n;
}

/* The records a server sends on the TCP back channel, as the client's pipe hands them over:
 * CB_NULL and CB_COMPOUND answered; another program, version or procedure, arguments that
 * do not decode, each with its RFC 5531 error; a record that is no call, no reply. */
TEST(nfs4_cb_tcp_bad_calls)
{
    struct srv v;
    start(&v);
    struct uiw__nfs_client *c = client(&v, 0);
    char sid[16];
    CHECK_EQ(uiw__nfs4c_session(c, sid), 0);
    static char rec[4096];
    struct rpc_msg m;
    size_t n = call_header(rec, 11, 0x40000000u, 1, 0, AUTH_SYS);
    served(c, rec, n, 11, &m, NULL);
    CHECK_EQ(m.acpted_rply.ar_stat, SUCCESS);
    n = call_header(rec, 12, 0x40000001u, 1, 0, AUTH_NONE);
    served(c, rec, n, 12, &m, NULL);
    CHECK_EQ(m.acpted_rply.ar_stat, PROG_UNAVAIL);
    n = call_header(rec, 13, 0x40000000u, 4, 0, AUTH_NONE);
    served(c, rec, n, 13, &m, NULL);
    CHECK_EQ(m.acpted_rply.ar_stat, PROG_MISMATCH);
    CHECK_EQ(m.acpted_rply.ar_vers.low, 1);
    CHECK_EQ(m.acpted_rply.ar_vers.high, 1);
    n = call_header(rec, 14, 0x40000000u, 1, 2, AUTH_NONE);
    served(c, rec, n, 14, &m, NULL);
    CHECK_EQ(m.acpted_rply.ar_stat, PROC_UNAVAIL);
    /* a CB_COMPOUND whose tag claims more bytes than the record holds */
    n = call_header(rec, 15, 0x40000000u, 1, 1, AUTH_NONE);
    uint32_t big = htonl(100000);
    memcpy(rec + n, &big, 4);
    served(c, rec, n + 4, 15, &m, NULL);
    CHECK_EQ(m.acpted_rply.ar_stat, GARBAGE_ARGS);
    /* ... and one cut in the middle of its operations */
    nfs_cb_argop4 ops[1];
    memset(ops, 0, sizeof(ops));
    ops[0].argop = OP_CB_SEQUENCE;
    memcpy(ops[0].nfs_cb_argop4_u.opcbsequence.csa_sessionid, sid, 16);
    ops[0].nfs_cb_argop4_u.opcbsequence.csa_slotid = 1;
    ops[0].nfs_cb_argop4_u.opcbsequence.csa_sequenceid = 1;
    n = cb_call(rec, sizeof(rec), 16, 1, ops, 1);
    served(c, rec, n - 8, 16, &m, NULL);
    CHECK_EQ(m.acpted_rply.ar_stat, GARBAGE_ARGS);
    /* whole: CB_SEQUENCE alone on back-channel slot 1, then the wrong minor version */
    CB_COMPOUND4res res;
    memset(&res, 0, sizeof(res));
    served(c, rec, n, 16, &m, &res);
    CHECK_EQ(m.acpted_rply.ar_stat, SUCCESS);
    CHECK_EQ(res.status, NFS4_OK);
    CHECK_EQ(res.resarray.resarray_len, 1);
    CHECK_EQ(res.resarray.resarray_val[0].resop, OP_CB_SEQUENCE);
    xdr_free(UIW__XDRPROC(xdr_CB_COMPOUND4res), (char *)&res);
    n = cb_call(rec, sizeof(rec), 17, 2, ops, 1);
    memset(&res, 0, sizeof(res));
    served(c, rec, n, 17, &m, &res);
    CHECK_EQ(res.status, NFS4ERR_MINOR_VERS_MISMATCH);
    CHECK_EQ(res.resarray.resarray_len, 0);
    xdr_free(UIW__XDRPROC(xdr_CB_COMPOUND4res), (char *)&res);
    /* not a call: RPC version 3, or a header cut short; nothing to answer */
    static char out[UIW__NFS_PIPE_REPLY_MAX];
    n = call_header(rec, 18, 0x40000000u, 1, 0, AUTH_NONE);
    uint32_t three = htonl(3);
    memcpy(rec + 8, &three, 4);
    CHECK_EQ(uiw__nfs4c_cb_serve(c, rec, n, out, sizeof(out)), 0);
    CHECK_EQ(uiw__nfs4c_cb_serve(c, rec, 10, out, sizeof(out)), 0);
    /* the session goes on */
    fattr3 a;
    CHECK_EQ(uiw__nfs_getattr(c, uiw__nfs_client_root(c), &a), 0);
    uiw__nfs_client_close(c);
    srv_stop(&v);
}

/* uiw-nfs bench over TCP in NFSv4.1 with 16 calls in flight: the WRITEs, READs and
 * GETATTRs each on a slot of the session, every byte moved. */
TEST(nfs4_tcp_bench_inflight)
{
    struct srv v;
    start(&v);
    char u[700];
    snprintf(u, sizeof(u), "nfs://127.0.0.1:%d%s/b?version=4.1", v.tcp, v.dir);
    bench_inflight(u, "tcp", 16, 1u << 20);
    srv_stop(&v);
}
