/* libFuzzer target: the RPC-over-RDMA client (src/rpcrdma, src/rpc) as a server on the
 * network reaches it. A raw iWARP peer (tests/conformance/rpcpeer.h) plays the server of a
 * CLIENT made with uiw_rpc_clnt_create. For each input the client starts one call, the
 * peer reads it and answers with the input's message (an RDMA Send: any transport header
 * of either version and anything after it), then with a valid reply of the call
 * (PROC_UNAVAIL), which ends the call if the input's message did not; the client is driven
 * until the call ends. When the connection ends (the client dropped it, say), the next
 * input comes on a new client.
 *
 * Input: byte 0 chooses the call (its low two bits): 0 NULL; 1 GEN of 8 KiB into a result
 * buffer (a Write chunk offered); 2 GEN with a largest reply of 16 KiB (a Reply chunk
 * offered; the result decoded may be up to 64 KiB); 3 SINK of 16 KiB (a Read chunk
 * offered). With its bit 2 set, two bytes (a big-endian length L) and L bytes follow,
 * which the peer first RDMA-Writes at the start of the call's Reply chunk, or else of its
 * first Write chunk (a reply, or a result, the message then points to). The message is
 * the rest, in which these 4-byte names stand for what the call offered (the seeds use
 * them; the fuzzer moves, copies and drops them): "XIDX" its XID; "HDW0", "HDRC", "HDR0"
 * the STag of its Write chunk's first segment, its Reply chunk's and its Read chunk's;
 * "OFW0", "OFRC", "OFR0" followed by 4 more bytes, their 8-byte offsets. The client also
 * serves backward calls (RFC 8167) of a program with NULL, GEN and SINK, which the
 * message may make.
 *
 * Oracles, besides ASan, LSan and UBSan: every message of the client decodes as an
 * RPC-over-RDMA header of its version; every call ends (within 5 s), and the client has
 * none pending then; a result that lands in the result buffer is within it; every RDMA
 * Read and Write of the client (for backward calls only) stays inside a segment that a
 * message of the peer offered for it; a new client connects and is served after one
 * whose connection ended.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rpc/rpc.h>
#include <uiw/rpc.h>
#include <uiw/rpcrdma.h>

#include "../tests/conformance/rpcpeer.h"
#include "common/byteorder.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PROG      0x20000aa1u
#define BCPROG    0x20000aa2u
#define MAX_IN    8192
#define WAIT_MS   5000
#define RD_STAG   0x1000u /* the peer's readable region: backward calls' Read chunks */
#define WR_STAG   0x2000u /* its writable region: their Write and Reply chunks */
#define REGION    65536u
#define BASE_TO   0x10000u
#define GEN_LEN   8192u
#define REPLY_MAX 16384u
#define SINK_LEN  16384u

static void die(const char *what)
{
    fprintf(stderr, "fuzz-rpcrdma_client: %s\n", what);
    abort();
}

static void bc_dispatch(struct svc_req *rq, SVCXPRT *x)
{
    rpcpeer_serve_test(rq, x, REGION);
}

static int lfd = -1;
static uint16_t port;
static CLIENT *clnt;
static struct rpcpeer peer;
static uint8_t rd_mem[REGION], wr_mem[REGION];
static uint8_t msg[RPCPEER_MSG_MAX];
static uint8_t out[MAX_IN];
static struct uiw_rpcrdma_hdr hdr;
static struct uiw_rpcrdma_space space;
static struct uiw_rpcrdma_space_default space_store;
static uint8_t in_store[sizeof(struct uiw_rpcrdma_space_default)];
static struct uiw_rpcrdma_space in_space;
static char result[GEN_LEN], big_result[65536], sink_arg[SINK_LEN];
static bool trace; /* UIW_FUZZ_TRACE set: what happens, on stderr */
/* The segments the peer's messages on this connection offered the client. */
static struct rpcpeer_grants grants;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void down(void)
{
    if (clnt)
        clnt_destroy(clnt);
    clnt = NULL;
    rpcpeer_close(&peer, true);
}

static void setup(void)
{
    lfd = rawpeer_tcp_listen(AF_INET, &port);
    if (lfd < 0)
        die("no listener");
    for (uint32_t i = 0; i < REGION; i++)
        rd_mem[i] = (uint8_t)(i * 7);
    for (uint32_t i = 0; i < SINK_LEN; i++)
        sink_arg[i] = (char)i;
    uiw_rpcrdma_space_init(&space, &space_store);
    uiw_rpcrdma_space_init(&in_space, (struct uiw_rpcrdma_space_default *)in_store);
    trace = getenv("UIW_FUZZ_TRACE") != NULL;
    atexit(down);
}

/* An RDMA Read Request or Write of the client: inside a segment offered for it. */
static void on_access(void *arg, bool write, uint32_t stag, uint64_t to, uint32_t len)
{
    (void)arg;
    rpcpeer_grants_check(&grants, "fuzz-rpcrdma_client", write, stag, to, len);
}

/* Accept the client's connection and answer its first message (CONNPROP): with a CONNPROP
 * (Version Two from then on) or, every other connection, with ERR_VERS naming Version One
 * alone. */
static void *accept_one(void *arg)
{
    (void)arg;
    static unsigned conns;
    int r;
    /* libFuzzer's timer signal may cut a wait short: once more */
    for (int tries = 0; (r = rpcpeer_accept(&peer, lfd, NULL, 0, WAIT_MS)) == -EINTR && tries < 8;
         tries++)
        rpcpeer_close(&peer, true);
    if (r != 0)
        return (void *)(intptr_t)r;
    uint32_t len;
    peer.keep_connprop = true;
    r = rpcpeer_recv_hdr(&peer, msg, sizeof(msg), &len, &hdr, &space, WAIT_MS);
    peer.keep_connprop = false;
    if (r != 1 || hdr.vers != 2 || hdr.proc != UIW_RDMA2_CONNPROP)
        return (void *)(intptr_t)(r < 0 ? r : -EPROTO);
    struct uiw_rpcrdma_hdr h = {.xid = hdr.xid, .vers = 2, .credit = 8};
    if (conns++ % 2) {
        h.vers = 1;
        h.proc = UIW_RDMA_ERROR;
        h.u.error =
            (struct uiw_rpcrdma_error){.errcode = UIW_RDMA_ERR_VERS, .vers_low = 1, .vers_high = 1};
    } else {
        h.proc = UIW_RDMA2_CONNPROP;
    }
    return (void *)(intptr_t)rpcpeer_send_hdr(&peer, &h, NULL, 0);
}

/* A new client, connected to the peer. */
static void up(void)
{
    if (clnt)
        return;
    pthread_t th;
    if (pthread_create(&th, NULL, accept_one, NULL) != 0)
        die("no thread");
    struct uiw_rpc_clnt_attr a = {0};
    a.no_reconnect = true;
    a.no_vers_memory = true;
    clnt = uiw_rpc_clnt_create("127.0.0.1", port, PROG, 1, &a);
    void *r;
    pthread_join(th, &r);
    if (!clnt || r != NULL) {
        fprintf(stderr, "(%s; accept: %s)\n", clnt ? "connected" : strerror(errno),
                strerror(-(int)(intptr_t)r));
        die("the client does not connect");
    }
    if (uiw_rpc_clnt_bc_register(clnt, BCPROG, 1, bc_dispatch) != 0)
        die("backward calls not served");
    peer.on_access = on_access;
    grants.n = 0;
    rpcpeer_region(&peer, RD_STAG, rd_mem, REGION, false, true)->to = BASE_TO;
    rpcpeer_region(&peer, WR_STAG, wr_mem, REGION, true, false)->to = BASE_TO;
}

static bool_t xdr_result(XDR *x, struct rpcpeer_blob *b)
{
    return xdr_bytes(x, &b->val, &b->len, GEN_LEN);
}

/* A result up to 64 KiB, more than the Reply chunk offered: one that is longer than what
 * the peer wrote there is read past the client's buffer (ASan) unless refused. */
static bool_t xdr_big_result(XDR *x, struct rpcpeer_blob *b)
{
    return xdr_bytes(x, &b->val, &b->len, sizeof(big_result));
}

struct call {
    int done;
    enum clnt_stat st;
};

static void call_done(CLIENT *c, void *arg, enum clnt_stat st, const struct rpc_err *e)
{
    (void)c;
    (void)e;
    struct call *k = arg;
    k->st = st;
    k->done++;
}

/* Start a call of the kind chosen; 0 or what uiw_rpc_call_async returned. */
static int start(unsigned kind, struct call *k, struct rpcpeer_blob *res, u_int *n,
                 struct rpcpeer_blob *arg)
{
    static const struct timeval tmo = {WAIT_MS / 1000, 0};
    struct uiw_rpc_call_opts o = {0};
    *res = (struct rpcpeer_blob){GEN_LEN, result};
    switch (kind) {
    case 0:
        return uiw_rpc_call_async(clnt, RPCPEER_NULL, (xdrproc_t)rpcpeer_xdr_void, NULL,
                                  (xdrproc_t)rpcpeer_xdr_void, NULL, tmo, NULL, call_done, k);
    case 1:
        *n = GEN_LEN;
        o.nresult_bufs = 1;
        o.result_bufs[0] = (struct uiw_rpc_ddp_buf){result, GEN_LEN};
        return uiw_rpc_call_async(clnt, RPCPEER_GEN, (xdrproc_t)xdr_u_int, n, (xdrproc_t)xdr_result,
                                  res, tmo, &o, call_done, k);
    case 2:
        *n = GEN_LEN;
        o.reply_max = REPLY_MAX;
        *res = (struct rpcpeer_blob){sizeof(big_result), big_result};
        return uiw_rpc_call_async(clnt, RPCPEER_GEN, (xdrproc_t)xdr_u_int, n,
                                  (xdrproc_t)xdr_big_result, res, tmo, &o, call_done, k);
    default:
        *arg = (struct rpcpeer_blob){SINK_LEN, sink_arg};
        return uiw_rpc_call_async(clnt, RPCPEER_SINK, (xdrproc_t)rpcpeer_xdr_blob, arg,
                                  (xdrproc_t)xdr_u_int, n, tmo, NULL, call_done, k);
    }
}

/* The client's message in msg[0..len), decoded into hdr (every one must decode): a call
 * (an RDMA_NOMSG, or an RDMA_MSG carrying an RPC call of PROG)? */
static bool is_call(uint32_t len)
{
    int d = uiw_rpcrdma_decode(msg, len, &hdr, &space);
    if (d < 0)
        die("a message of the client that does not decode");
    if (trace)
        fprintf(stderr, "client: xid %#x version %u %s (%u bytes)\n", hdr.xid, hdr.vers,
                uiw_rpcrdma_proc_name(hdr.proc, hdr.vers), len);
    if (hdr.proc == UIW_RDMA_NOMSG)
        return true;
    if (hdr.proc != UIW_RDMA_MSG || len - (uint32_t)d < 16)
        return false;
    const uint8_t *b = msg + d;
    return uiw__get_be32(b + 4) == 0 && uiw__get_be32(b + 12) == PROG;
}

/* Read the client's messages until its call. Returns 1 with it in hdr, or 0 when the
 * stream ended. */
static int read_call(void)
{
    for (;;) {
        uint32_t len = 0;
        int r = rpcpeer_recv(&peer, msg, sizeof(msg), &len, WAIT_MS);
        if (r == -ETIMEDOUT)
            die("the client sends no call, and keeps the connection");
        if (r != 1)
            return 0;
        if (is_call(len))
            return 1;
    }
}

/* Bytes of the client wait to be read. */
static bool peer_readable(void)
{
    if (peer.raw.in_have > peer.raw.in_off)
        return true;
    struct pollfd p = {.fd = peer.raw.fd, .events = POLLIN};
    return poll(&p, 1, 0) > 0;
}

/* The input's message, its names replaced by what the call (in hdr) offered. */
static void patch(uint8_t *m, size_t len)
{
    const struct uiw_rpcrdma_chunks *c = &hdr.u.chunks;
    const struct uiw_rpcrdma_segment *w =
        c->nwrites && c->writes[0].nsegs ? &c->writes[0].segs[0] : NULL;
    const struct uiw_rpcrdma_segment *rc =
        c->has_reply && c->reply.nsegs ? &c->reply.segs[0] : NULL;
    const struct uiw_rpcrdma_segment *rd = c->nreads ? &c->reads[0].target : NULL;
    for (size_t i = 0; i + 4 <= len; i++) {
        const struct uiw_rpcrdma_segment *s = NULL;
        bool off = false;
        if (!memcmp(m + i, "XIDX", 4)) {
            uiw__put_be32(m + i, hdr.xid);
            i += 3;
            continue;
        }
        if (!memcmp(m + i, "HDW0", 4) || !memcmp(m + i, "OFW0", 4))
            s = w;
        else if (!memcmp(m + i, "HDRC", 4) || !memcmp(m + i, "OFRC", 4))
            s = rc;
        else if (!memcmp(m + i, "HDR0", 4) || !memcmp(m + i, "OFR0", 4))
            s = rd;
        else
            continue;
        off = m[i] == 'O';
        if (!s)
            continue;
        if (!off) {
            uiw__put_be32(m + i, s->handle);
            i += 3;
        } else if (i + 8 <= len) {
            uiw__put_be64(m + i, s->offset);
            i += 7;
        }
    }
}

/* Offers of the peer's message to the client (a backward call's chunks). */
static void grant_all(const uint8_t *m, size_t len)
{
    struct uiw_rpcrdma_hdr h;
    if (uiw_rpcrdma_decode(m, len, &h, &in_space) < 0)
        return;
    if (!rpcpeer_grants_add(&grants, &h)) {
        grants.n = 0; /* the oldest offers go: a later access to them is then reported */
        rpcpeer_grants_add(&grants, &h);
    }
}

/* A valid reply to the call in hdr: RDMA_MSG of its version, accepted, PROC_UNAVAIL. */
static int end_call(void)
{
    uint8_t body[24];
    uint32_t w[] = {hdr.xid, 1, 0, 0, 0, 3};
    for (int i = 0; i < 6; i++)
        uiw__put_be32(body + 4 * i, w[i]);
    struct uiw_rpcrdma_hdr h = {
        .xid = hdr.xid, .vers = hdr.vers, .credit = 8, .proc = UIW_RDMA_MSG};
    h.u.chunks.direction = UIW_RPCRDMA_REPLY;
    return rpcpeer_send_hdr(&peer, &h, body, sizeof(body));
}

/* Drive the client until the call ends, answering every call it sends meanwhile (the
 * call sent again after REPLY_RESOURCE or ERR_VERS, say) as end_call does. Returns
 * whether the peer's stream is still up. */
static bool finish(struct call *k, bool up_still)
{
    uint64_t until = now_ms() + WAIT_MS + 2000;
    while (!k->done) {
        if (now_ms() > until)
            die("a call does not end");
        int r = uiw_rpc_clnt_poll(clnt, 5);
        if (r < 0 && r != -ETIMEDOUT && r != -ENOTCONN) {
            fprintf(stderr, "(%s)\n", strerror(-r));
            die("the client cannot be driven");
        }
        if (!up_still || k->done || !peer_readable())
            continue;
        uint32_t len = 0;
        r = rpcpeer_recv(&peer, msg, sizeof(msg), &len, WAIT_MS);
        if (r == 1 && is_call(len))
            up_still = end_call() == 0;
        else if (r != 1 && r != -ETIMEDOUT)
            up_still = false;
    }
    if (k->st != RPC_TIMEDOUT && uiw_rpc_clnt_pending(clnt) != 0) {
        fprintf(stderr, "(%s)\n", clnt_sperrno(k->st));
        die("a call still pending after the only one ended");
    }
    return up_still;
}

/* One call on the client, answered by `m` (NULL: by a valid reply only). Returns true
 * while the connection stays up. */
static bool one_call(unsigned lead, const uint8_t *m, size_t len)
{
    unsigned kind = lead & 3u;
    struct call k = {0};
    struct rpcpeer_blob res, arg;
    u_int n = 0;
    int r = start(kind, &k, &res, &n, &arg);
    if (r != 0) {
        if (r == -ENOTCONN)
            return false;
        fprintf(stderr, "(%s)\n", strerror(-r));
        die("a call does not start");
    }
    bool up_still = read_call() == 1;
    if (up_still && m && (lead & 4u)) {
        /* the bytes to write first */
        size_t take = len >= 2 ? (size_t)m[0] << 8 | m[1] : 0;
        if (len < 2 || take > len - 2)
            take = len < 2 ? 0 : len - 2;
        size_t wl = take;
        memcpy(out, m + 2, wl);
        patch(out, wl);
        const struct uiw_rpcrdma_chunks *c = &hdr.u.chunks;
        const struct uiw_rpcrdma_segment *s = c->has_reply && c->reply.nsegs ? &c->reply.segs[0]
                                              : c->nwrites && c->writes[0].nsegs
                                                  ? &c->writes[0].segs[0]
                                                  : NULL;
        if (s && wl > s->length)
            wl = s->length;
        if (s && wl)
            up_still = rawpeer_send_write(&peer.raw, s->handle, s->offset, out, wl) == 0;
        size_t skip = len >= 2 ? 2 + take : len;
        m += skip;
        len -= skip;
    }
    if (up_still && m) {
        memcpy(out, m, len);
        patch(out, len);
        grant_all(out, len);
        up_still = rpcpeer_send(&peer, out, (uint32_t)len) == 0;
    }
    if (up_still)
        up_still = end_call() == 0;
    up_still = finish(&k, up_still);
    if (trace)
        fprintf(stderr, "call of kind %u: %s\n", kind, clnt_sperrno(k.st));
    if (k.st == RPC_SUCCESS && kind == 1 && res.len > GEN_LEN)
        die("a result longer than its buffer");
    struct uiw_rpc_conn_info ci;
    return up_still && uiw_rpc_clnt_info(clnt, &ci) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (lfd < 0)
        setup();
    if (size < 5 || size > MAX_IN)
        return 0;
    up();
    if (one_call(data[0], data + 1, size - 1))
        return 0;
    /* the input ended the connection: a new client is still served */
    down();
    up();
    if (!one_call(0, NULL, 0))
        die("a new client is not served");
    return 0;
}
