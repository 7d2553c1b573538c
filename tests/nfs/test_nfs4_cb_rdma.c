/*
 * uiw-nfsd's NFSv4.1 back channel over RPC-over-RDMA (RFC 8167): uiw-nfs mounts with
 * ?transport=rdma&version=4.1, in Version Two and in Version One, and serves the
 * callbacks on its own connection. CREATE_SESSION with CONN_BACK_CHAN gets a CB_NULL
 * probe over the backward direction; once the client answered it, the server counts the
 * back channel up and SEQUENCE says nothing of CB_PATH_DOWN. A CB_RECALL and a
 * CB_RECALL_ANY started through the server's API (as delegation recalls are) go as
 * CB_COMPOUNDs (CB_SEQUENCE first) on the backward direction, the client runs them, and
 * its results reach the API's completions; the transport's counters show them as
 * backward calls sent and answered. A capture of the Version One connection decodes in
 * tshark's RPC-over-RDMA and NFS CB dissectors: the CB_NULL, and the CB_COMPOUND of
 * CB_SEQUENCE and CB_RECALL with its reply. A real recall over Version Two, captured
 * and decoded by rpcrdma-decode: uiw-nfs holds a read delegation, another client's
 * WRITE recalls it, and the capture shows the CB_COMPOUND, its reply and the
 * DELEGRETURN. The tests exit 77 (skipped) in a build without the RPC layer.
 */
#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "interop.h"
#include "nfs/client_int.h"
#include "nfs/exports.h"
#include "nfs/nfs4cb.h"
#include "nfs/nfs4state.h"
#include "nfs/server.h"
#include "nfs4.h"
#include "nfs_util.h"
#include "relay.h"
#include "run.h"
#include "test.h"

#if UIW_NFS_HAVE_RDMA
#include <uiw/rpc.h>

/* A server exporting "/" read-only with NFSv4 on, over TCP and RDMA (free ports; both
 * versions of RPC-over-RDMA). */
static void start(struct srv *v)
{
    memset(v, 0, sizeof(*v));
    snprintf(v->dir, sizeof(v->dir), "/tmp/uiw-nfs4-cb-rdma.XXXXXX");
    CHECK(mkdtemp(v->dir) != NULL);
    struct uiw__nfsd_opts o;
    uiw__nfsd_opts_default(&o);
    o.no_root_squash = 1;
    o.nfs4 = 1;
    o.addr = "127.0.0.1";
    o.tcp_port = 0;
    o.mount_port = 0;
    o.rdma_port = 0;
    struct uiw__nfs_xtable t;
    char err[512];
    if (uiw__nfs_exports_parse("/ 127.0.0.1(ro,no_root_squash,insecure)\n", "exports", &t, err,
                               sizeof(err)) != 0)
        uiw_test_fail(__FILE__, __LINE__, "%s", err);
    v->s = uiw__nfsd_create(&o);
    CHECK(v->s != NULL);
    if (uiw__nfsd_add_exports(v->s, &t, err, sizeof(err)) != 0)
        uiw_test_fail(__FILE__, __LINE__, "%s", err);
    CHECK_EQ(uiw__nfsd_start(v->s), 0);
    /* callbacks unanswered for 5 s count as a path down (the default) */
    uiw__nfs4_cb_set_timeout(uiw__nfs4_state_cbs(v->s->nfs4), 5000, 20000);
}

/* uiw-nfs over RPC-over-RDMA Version rpcrdma to port (0: the server's). */
static struct uiw__nfs_client *client(const struct srv *v, int rpcrdma, int port)
{
    char url[700], err[512];
    snprintf(url, sizeof(url), "nfs://127.0.0.1:%d%s?transport=rdma&version=4.1%s",
             port ? port : uiw__nfsd_port(v->s, UIW__NFSD_RDMA), v->dir,
             rpcrdma == 1 ? "&rpcrdma=1" : "");
    struct uiw__nfs_url u;
    CHECK_EQ(uiw__nfs_url_parse(url, &u, err, sizeof(err)), 0);
    struct uiw__nfs_client *c = uiw__nfs_client_open(&u, 0, err, sizeof(err));
    if (!c)
        uiw_test_fail(__FILE__, __LINE__, "rdma client: %s", err);
    CHECK_STR(uiw__nfs_client_transport(c), rpcrdma == 1 ? "rdma-v1" : "rdma-v2");
    return c;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int rdma_poll(struct uiw__nfs_client *c, int timeout_ms)
{
    return uiw_rpc_clnt_poll(c->nfs, timeout_ms);
}

/* Drive c until the server has its back channel up (the CB_NULL probe answered). */
static void wait_up(struct srv *v, struct uiw__nfs_client *c)
{
    v4_wait_cb_up(v, c, rdma_poll);
}

/* A callback's completion. */
struct result {
    pthread_mutex_t lk;
    int done;
    nfsstat4 status;
};

static void on_done(void *arg, nfsstat4 status)
{
    struct result *r = arg;
    pthread_mutex_lock(&r->lk);
    r->done++;
    r->status = status;
    pthread_mutex_unlock(&r->lk);
}

/* Drive c until r completed: its status. */
static nfsstat4 wait_done(struct uiw__nfs_client *c, struct result *r)
{
    int64_t until = now_ms() + 10000;
    for (;;) {
        pthread_mutex_lock(&r->lk);
        int done = r->done;
        nfsstat4 st = r->status;
        pthread_mutex_unlock(&r->lk);
        if (done) {
            CHECK_EQ(done, 1);
            return st;
        }
        if (now_ms() > until)
            uiw_test_fail(__FILE__, __LINE__, "the callback never completed");
        CHECK(uiw_rpc_clnt_poll(c->nfs, 20) >= 0);
    }
}

/* GETATTR of the client's root through a SEQUENCE: the status flags it came with. */
static uint32_t sequence_flags(struct uiw__nfs_client *c)
{
    fattr3 a;
    int rc = uiw__nfs_getattr(c, uiw__nfs_client_root(c), &a);
    if (rc != 0)
        uiw_test_fail(__FILE__, __LINE__, "%s", uiw__nfs_errtext(c, rc));
    CHECK_EQ(a.type, NF3DIR);
    return uiw__nfs4c_seq_flags(c);
}

#define PATH_DOWN (SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION)

/* The probe, a CB_RECALL and a CB_RECALL_ANY over the connection of a client speaking
 * RPC-over-RDMA Version rpcrdma; the counters of both sides. */
static void callbacks(int rpcrdma)
{
    struct srv sv;
    struct srv *v = &sv;
    start(v);
    struct uiw__nfs_client *c = client(v, rpcrdma, 0);
    wait_up(v, c);
    CHECK_EQ(sequence_flags(c) & PATH_DOWN, 0);
    clientid4 cid = uiw__nfs4c_clientid(c);
    unsigned runs = uiw__nfs4c_cb_runs(c);
    /* CB_RECALL of a delegation the client does not hold: NFS4ERR_BADHANDLE, its answer
     * (RFC 8881 section 20.2.3) */
    stateid4 sid;
    memset(&sid, 0, sizeof(sid));
    sid.seqid = 1;
    memset(sid.other, 0x5a, sizeof(sid.other));
    const struct uiw__nfs_fh *root = uiw__nfs_client_root(c);
    nfs_fh4 fh = {root->len, (char *)(uintptr_t)root->data};
    struct result r1 = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
    CHECK_EQ(uiw__nfs4_cb_recall(v->s->nfs4, cid, &sid, &fh, 0, on_done, &r1), 0);
    CHECK_EQ(wait_done(c, &r1), NFS4ERR_BADHANDLE);
    CHECK_EQ(uiw__nfs4c_cb_runs(c), runs + 1);
    /* CB_RECALL_ANY of read delegations, none to keep: done (it holds none) */
    struct result r2 = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
    CHECK_EQ(
        uiw__nfs4_cb_recall_any(v->s->nfs4, cid, 0, 1u << RCA4_TYPE_MASK_RDATA_DLG, on_done, &r2),
        0);
    CHECK_EQ(wait_done(c, &r2), NFS4_OK);
    CHECK_EQ(uiw__nfs4c_cb_runs(c), runs + 2);
    CHECK_EQ(sequence_flags(c) & PATH_DOWN, 0);
    /* the server's counters: the probe and two callbacks sent, each answered */
    struct uiw__nfsd_cb_counts n;
    CHECK_EQ(uiw__nfsd_cb_counts(v->s, &n), 0);
    if (n.sent != 3)
        uiw_test_fail(__FILE__, __LINE__,
                      "callbacks: %llu sent, %llu resent, %llu replies, %llu errors, %llu "
                      "timeouts, %llu dropped",
                      (unsigned long long)n.sent, (unsigned long long)n.resent,
                      (unsigned long long)n.replies, (unsigned long long)n.errors,
                      (unsigned long long)n.timeouts, (unsigned long long)n.dropped);
    CHECK_EQ(n.replies, 3);
    CHECK_EQ(n.recalls, 1);
    CHECK_EQ(n.timeouts, 0);
    CHECK_EQ(n.dropped, 0);
    CHECK_EQ(n.errors, 1); /* the BADHANDLE */
    /* ... as backward calls of the transport: sent by the server, run by the client */
    struct uiw_rpc_xprt_stats ss, cs;
    CHECK_EQ(uiw__nfsd_xprt_stats(v->s, &ss), 0);
    CHECK_EQ(ss.calls_sent, 3);
    CHECK_EQ(ss.replies_received, 3);
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c->nfs, &cs), 0);
    CHECK_EQ(cs.calls_received, 3);
    CHECK_EQ(cs.replies_sent, 3);
    uiw__nfs_client_close(c);
    srv_stop(v);
}

#endif

TEST(rdma_nfs4_callbacks_v2)
{
#if UIW_NFS_HAVE_RDMA
    callbacks(2);
#else
    SKIP("a build without the RPC layer");
#endif
}

TEST(rdma_nfs4_callbacks_v1)
{
#if UIW_NFS_HAVE_RDMA
    callbacks(1);
#else
    SKIP("a build without the RPC layer");
#endif
}

/* A CB_RECALL of a delegation c does not hold, sent through the server's API: c answers
 * NFS4ERR_BADHANDLE (RFC 8881 section 20.2.3). */
static void recall_unheld(struct srv *v, struct uiw__nfs_client *c)
{
    stateid4 sid;
    memset(&sid, 0, sizeof(sid));
    memset(sid.other, 0x5a, sizeof(sid.other));
    const struct uiw__nfs_fh *root = uiw__nfs_client_root(c);
    nfs_fh4 fh = {root->len, (char *)(uintptr_t)root->data};
    struct result r = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
    CHECK_EQ(uiw__nfs4_cb_recall(v->s->nfs4, uiw__nfs4c_clientid(c), &sid, &fh, 1, on_done, &r), 0);
    CHECK_EQ(wait_done(c, &r), NFS4ERR_BADHANDLE);
}

/* A connection that ends takes the back channel with it, once: the session says
 * CB_PATH_DOWN until a connection is bound again. The client, told so by SEQUENCE, binds
 * its new connection (BIND_CONN_TO_SESSION), and callbacks reach it there. */
TEST(rdma_nfs4_callbacks_conn_lost)
{
#if UIW_NFS_HAVE_RDMA
    struct srv v;
    start(&v);
    struct relay *rl = relay_start(uiw__nfsd_port(v.s, UIW__NFSD_RDMA));
    struct uiw__nfs_client *c = client(&v, 2, relay_port(rl));
    wait_up(&v, c);
    char id[16];
    CHECK_EQ(uiw__nfs4c_session(c, id), 0);
    struct uiw__nfs4_cb *cb = uiw__nfs4_session_cb(v.s->nfs4, id);
    CHECK(cb != NULL);
    CHECK_EQ(uiw__nfs4_cb_flags(cb), 0);
    CHECK(uiw__nfs4_cb_up(cb));
    /* reset under both ends: the server's side of it ends */
    relay_cut_all(rl);
    int64_t until = now_ms() + 10000;
    while (uiw__nfs4_cb_flags(cb) == 0) {
        if (now_ms() > until)
            uiw_test_fail(__FILE__, __LINE__, "the back channel never went down");
        usleep(10000);
    }
    CHECK_EQ(uiw__nfs4_cb_flags(cb), SEQ4_STATUS_CB_PATH_DOWN_SESSION);
    CHECK(!uiw__nfs4_cb_up(cb));
    CHECK(!uiw__nfs4_cb_client_up(v.s->nfs4, uiw__nfs4c_clientid(c)));
    /* the client's next COMPOUND goes on a new connection, and hears of it */
    CHECK_EQ(uiw__nfs4c_rebinds(c), 0);
    CHECK(sequence_flags(c) & SEQ4_STATUS_CB_PATH_DOWN_SESSION);
    /* and binds it: the server probes it, and the back channel is up again */
    CHECK_EQ(uiw__nfs4c_rebinds(c), 1);
    wait_up(&v, c);
    CHECK(uiw__nfs4_cb_up(cb));
    CHECK_EQ(sequence_flags(c) & PATH_DOWN, 0);
    CHECK_EQ(uiw__nfs4c_rebinds(c), 1);
    /* a callback goes on the new connection and the client answers it */
    recall_unheld(&v, c);
    uiw__nfs4_cb_put(cb, 0);
    uiw__nfs_client_close(c);
    relay_stop(rl);
    srv_stop(&v);
#else
    SKIP("a build without the RPC layer");
#endif
}

#if UIW_NFS_HAVE_RDMA
/* A client of v in Version rpcrdma whose connection is captured into a new directory
 * (UIW_PCAP_DIR), its path in dir. */
static struct uiw__nfs_client *captured_client(const struct srv *v, int rpcrdma, char *dir,
                                               size_t cap, const char *tag)
{
    it_tmpdir(dir, cap, tag);
    CHECK_EQ(setenv("UIW_PCAP_DIR", dir, 1), 0);
    struct uiw__nfs_client *c = client(v, rpcrdma, 0);
    CHECK_EQ(unsetenv("UIW_PCAP_DIR"), 0);
    return c;
}

/* The client's capture in dir: the one whose remote end is the server's RDMA port. */
static void client_capture(const char *dir, int port, char *path, size_t cap)
{
    char pat[700];
    snprintf(pat, sizeof(pat), "%s/uiw-*-127.0.0.1_*-127.0.0.1_%d.pcap", dir, port);
    glob_t g;
    CHECK_EQ(glob(pat, 0, NULL, &g), 0);
    CHECK_EQ(g.gl_pathc, 1);
    CHECK(strlen(g.gl_pathv[0]) < cap);
    snprintf(path, cap, "%s", g.gl_pathv[0]);
    globfree(&g);
}
#endif

/* The Version One connection captured (UIW_PCAP_DIR): tshark decodes the backward calls
 * (the CB_NULL, the CB_COMPOUND of CB_SEQUENCE and CB_RECALL) and their replies. */
TEST(rdma_nfs4_callbacks_tshark)
{
#if UIW_NFS_HAVE_RDMA
    need_tshark();
    struct srv v;
    start(&v);
    char dir[512];
    struct uiw__nfs_client *c = captured_client(&v, 1, dir, sizeof(dir), "nfs4cbrdma");
    wait_up(&v, c);
    recall_unheld(&v, c);
    uiw__nfs_client_close(c);
    int port = uiw__nfsd_port(v.s, UIW__NFSD_RDMA);
    srv_stop(&v);
    char pcap[800];
    client_capture(dir, port, pcap, sizeof(pcap));
    CHECK_EQ(it_tshark_malformed(pcap, NULL), 0);
    /* the backward calls, program NFS4_CALLBACK + 0 of the client, version 1: CB_NULL (0)
     * and CB_COMPOUND (1), each called and answered */
    char *o = it_tshark_fields(pcap, "rpc.program == 0x40000000", "rpc.msgtyp rpc.procedure");
    if (it_count_lines(o, "0|0") != 1 || it_count_lines(o, "0|1") != 1 ||
        it_count_lines(o, "1|0") != 1 || it_count_lines(o, "1|1") != 1)
        uiw_test_fail(__FILE__, __LINE__, "the backward calls in %s:\n%s", pcap, o);
    free(o);
    /* the CB_COMPOUND and its reply: CB_SEQUENCE (11) then CB_RECALL (4), in Version One
     * RDMA_MSG messages */
    o = it_tshark_fields(pcap, "nfs.cb.operation", "rpcordma.version nfs.cb.operation");
    if (it_count_lines(o, "1|11,4") != 2)
        uiw_test_fail(__FILE__, __LINE__, "the callbacks in %s:\n%s", pcap, o);
    free(o);
    it_rmtree(dir);
#else
    SKIP("a build without the RPC layer");
#endif
}

#if UIW_NFS_HAVE_RDMA
/* The value of "key": in a JSON line (the first), as text up to the next ',' or '}'
 * (strings without their quotes); "" when absent. */
static const char *jfield(const char *line, const char *key, char *out, size_t cap)
{
    char k[64];
    snprintf(k, sizeof(k), "\"%s\":", key);
    const char *p = strstr(line, k);
    out[0] = 0;
    if (!p)
        return out;
    p += strlen(k);
    if (*p == '"')
        p++;
    size_t n = strcspn(p, "\",}");
    if (n >= cap)
        n = cap - 1;
    memcpy(out, p, n);
    out[n] = 0;
    return out;
}

static uint64_t jnum(const char *line, const char *key)
{
    char v[32];
    return strtoull(jfield(line, key, v, sizeof(v)), NULL, 10);
}

/* The arguments of the RPC call in a decoded line's payload (hex), decoded with proc:
 * the payload's bytes after the RPC call header (its credential and verifier skipped). */
static void call_args(const char *line, xdrproc_t proc, void *args)
{
    const char *h = strstr(line, "\"payload\":\"");
    CHECK(h != NULL);
    h += strlen("\"payload\":\"");
    size_t n = strcspn(h, "\"") / 2;
    uint8_t *b = malloc(n);
    CHECK(b != NULL);
    for (size_t i = 0; i < n; i++)
        CHECK_EQ(sscanf(h + 2 * i, "%2hhx", &b[i]), 1);
    size_t off = 24;              /* xid, mtype, rpcvers, prog, vers, proc */
    for (int i = 0; i < 2; i++) { /* cred, verf */
        CHECK(off + 8 <= n);
        uint32_t len = (uint32_t)b[off + 4] << 24 | (uint32_t)b[off + 5] << 16 |
                       (uint32_t)b[off + 6] << 8 | b[off + 7];
        off += 8 + ((len + 3) & ~3u);
    }
    CHECK(off <= n);
    XDR x;
    xdrmem_create(&x, (char *)b + off, (u_int)(n - off), XDR_DECODE);
    CHECK(proc(&x, args));
    xdr_destroy(&x);
    free(b);
}

#endif

#if UIW_NFS_HAVE_RDMA
/* A server of v->dir (rw, root as root) with NFSv4 on, over TCP and RDMA (free ports),
 * and file "f" in it. */
static void rw_server(struct srv *v)
{
    memset(v, 0, sizeof(*v));
    struct uiw__nfsd_opts o;
    uiw__nfsd_opts_default(&o);
    o.nfs4 = 1;
    o.rdma_port = 0;
    srv_exports_opts(v, "%s 127.0.0.1(rw,no_root_squash,insecure)\n", &o);
    put_file(v, "f", "original", 8);
}
#endif

/* A read delegation of uiw-nfs (Version Two) recalled by another client's WRITE, seen in
 * the client's capture as rpcrdma-decode decodes it: every message Version Two; the
 * server's backward CALL of the callback program's CB_COMPOUND (CB_SEQUENCE, CB_RECALL of
 * that delegation), the client's REPLY of the same XID, then its DELEGRETURN. To read
 * such a capture (UIW_PCAP_DIR=DIR while uiw-nfs runs, or this test's under
 * UIW_TEST_KEEP=1): rpcrdma-decode --pcap --rpc --no-payload DIR/uiw-....pcap */
TEST(rdma_nfs4_cb_recall_v2_decoded)
{
#if UIW_NFS_HAVE_RDMA
    struct srv v;
    rw_server(&v);
    char dir[512];
    struct uiw__nfs_client *c = captured_client(&v, 2, dir, sizeof(dir), "nfs4recallv2");
    wait_up(&v, c);
    struct uiw__nfs_fh fh;
    v4_take_deleg(c, &fh);
    fattr3 a;
    unsigned runs = uiw__nfs4c_cb_runs(c);
    struct v4_writer w = {&v, "rewrite!", 0};
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, v4_rewrite, &w), 0);
    /* the recall comes on this client's connection; its next COMPOUND returns first */
    int64_t until = now_ms() + 10000;
    while (uiw__nfs4c_cb_runs(c) == runs) {
        if (now_ms() > until)
            uiw_test_fail(__FILE__, __LINE__, "no CB_RECALL came");
        CHECK(uiw_rpc_clnt_poll(c->nfs, 20) >= 0);
    }
    CHECK_EQ(uiw__nfs_getattr(c, &fh, &a), 0);
    CHECK(!uiw__nfs4c_has_deleg(c, &fh));
    CHECK_EQ(pthread_join(th, NULL), 0);
    CHECK_EQ(w.rc, 8);
    uiw__nfs_client_close(c);
    int port = uiw__nfsd_port(v.s, UIW__NFSD_RDMA);
    struct uiw__nfsd_cb_counts n;
    CHECK_EQ(uiw__nfsd_cb_counts(v.s, &n), 0);
    CHECK_EQ(n.recalls, 1);
    srv_stop(&v);

    char pcap[800];
    client_capture(dir, port, pcap, sizeof(pcap));
    struct tool_run r;
    const char *argv[] = {UIW_BINARY_DIR "/tools/rpcrdma-decode", "--pcap", "--rpc", pcap, NULL};
    tool_run(argv[0], argv, "", 0, 30, &r);
    if (r.status != 0)
        uiw_test_fail(__FILE__, __LINE__, "rpcrdma-decode: %d\n%s", r.status, r.err);
    char srv_end[64], v1[64], v2[64];
    snprintf(srv_end, sizeof(srv_end), "127.0.0.1:%d", port);
    /* the lines of the callback's call, its reply and the DELEGRETURN, in capture order */
    int call = -1, reply = -1, ret = -1, from_srv = 0, from_cli = 0, i = 0;
    uint64_t xid = 0;
    for (char *line = r.out, *nl; *line; line = nl + 1, i++) {
        nl = strchr(line, '\n');
        CHECK(nl != NULL);
        *nl = 0;
        CHECK_EQ(jnum(line, "rdma_vers"), 2);
        int srv_sent = strcmp(jfield(line, "src", v1, sizeof(v1)), srv_end) == 0;
        srv_sent ? from_srv++ : from_cli++;
        if (!srv_sent)
            CHECK_STR(jfield(line, "dst", v2, sizeof(v2)), srv_end);
        if (srv_sent && jnum(line, "prog") == 0x40000000u && jnum(line, "proc") == 1) {
            CHECK_EQ(call, -1);
            CHECK_STR(jfield(line, "rdma_direction", v1, sizeof(v1)), "CALL");
            CHECK_STR(jfield(line, "mtype", v1, sizeof(v1)), "CALL");
            CHECK_STR(jfield(line, "backward", v1, sizeof(v1)), "true");
            CB_COMPOUND4args cb;
            memset(&cb, 0, sizeof(cb));
            call_args(line, UIW__XDRPROC(xdr_CB_COMPOUND4args), &cb);
            CHECK_EQ(cb.argarray.argarray_len, 2);
            CHECK_EQ(cb.argarray.argarray_val[0].argop, OP_CB_SEQUENCE);
            CHECK_EQ(cb.argarray.argarray_val[1].argop, OP_CB_RECALL);
            CB_RECALL4args *rc = &cb.argarray.argarray_val[1].nfs_cb_argop4_u.opcbrecall;
            CHECK_EQ(rc->fh.nfs_fh4_len, fh.len);
            CHECK_MEM(rc->fh.nfs_fh4_val, fh.data, fh.len);
            xdr_free(UIW__XDRPROC(xdr_CB_COMPOUND4args), (char *)&cb);
            call = i;
            xid = jnum(line, "xid");
        } else if (!srv_sent && call >= 0 && reply < 0 && jnum(line, "xid") == xid) {
            CHECK_STR(jfield(line, "rdma_direction", v1, sizeof(v1)), "REPLY");
            CHECK_STR(jfield(line, "mtype", v1, sizeof(v1)), "REPLY");
            CHECK_STR(jfield(line, "stat", v1, sizeof(v1)), "MSG_ACCEPTED");
            CHECK_STR(jfield(line, "backward", v1, sizeof(v1)), "true");
            reply = i;
        } else if (!srv_sent && jnum(line, "prog") == 100003 && jnum(line, "proc") == 1) {
            COMPOUND4args ca;
            memset(&ca, 0, sizeof(ca));
            call_args(line, UIW__XDRPROC(xdr_COMPOUND4args), &ca);
            for (u_int k = 0; k < ca.argarray.argarray_len; k++)
                if (ca.argarray.argarray_val[k].argop == OP_DELEGRETURN) {
                    CHECK_EQ(ret, -1);
                    CHECK_STR(jfield(line, "backward", v1, sizeof(v1)), "false");
                    ret = i;
                }
            xdr_free(UIW__XDRPROC(xdr_COMPOUND4args), (char *)&ca);
        }
    }
    if (call < 0 || reply <= call || ret <= reply || !from_srv || !from_cli)
        uiw_test_fail(__FILE__, __LINE__, "call %d, reply %d, DELEGRETURN %d in %s", call, reply,
                      ret, pcap);
    tool_run_free(&r);
    it_rmtree(dir);
#else
    SKIP("a build without the RPC layer");
#endif
}

/* uiw-nfs over RPC-over-RDMA holds a read delegation and only polls, nothing in flight
 * (uiw__nfs_poll, as an idle application does): another client's WRITE recalls it on the
 * backward direction, and the poll serves the CB_RECALL and returns the delegation
 * without waiting for a call of the application's (v4_recalled). */
TEST(rdma_nfs4_recall_served_while_idle)
{
#if UIW_NFS_HAVE_RDMA
    struct srv v;
    rw_server(&v);
    struct uiw__nfs_client *c = client(&v, 2, 0);
    v4_wait_cb_up(&v, c, uiw__nfs_poll);
    v4_recalled(&v, c, "rewrite!");
    uiw__nfs_client_close(c);
    srv_stop(&v);
#else
    SKIP("a build without the RPC layer");
#endif
}
