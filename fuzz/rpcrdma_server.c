/* libFuzzer target: the RPC-over-RDMA server (src/rpcrdma, src/rpc) as a peer on the
 * network reaches it. A raw iWARP peer (tests/conformance/rpcpeer.h: it speaks MPA and
 * RDMAP itself) is connected to a uiw_rpc_svc of two workers; each input is one message
 * the peer sends by RDMA Send, any transport header of either version and anything after
 * it. A NULL call of Version One follows it, and the peer reads what the server sends
 * until that call's reply: it serves the server's RDMA Reads from a readable region of its
 * own (or answers them with the Terminate an RNIC sends, for an STag or range it never
 * advertised) and takes its RDMA Writes into a writable one. When the server ends the
 * connection (after a Terminate, say), the next input comes on a new one.
 *
 * The server's program: NULL, GEN (u_int n -> n bytes, in a Write or Reply chunk when the
 * call offers one) and SINK (opaque<>, in a Read chunk or inline -> their sum). The peer's
 * regions: STag 0x1000 readable and 0x2000 writable, 64 KiB each from TO 0x10000; the
 * readable one begins with a NULL call of XID 0x300 (an RDMA_NOMSG's Position-Zero Read
 * chunk). The seeds hold a call of each kind and version, with and without chunks.
 *
 * Oracles, besides ASan, LSan and UBSan: every message of the server decodes as an
 * RPC-over-RDMA header of its version; every NULL call after an input is answered (on
 * the connection, or on the next one when the input ended it), as an RDMA_MSG reply of
 * that call; every RDMA Read and Write of the server stays inside a segment that a call
 * on the connection offered for it (a Read chunk's for a Read, a Write or Reply chunk's
 * for a Write), wherever that segment points.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rpc/rpc.h>
#include <uiw/rpc.h>
#include <uiw/rpcrdma.h>

#include "../tests/conformance/rpcpeer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PROG     0x20000aa1u
#define MAX_IN   8192
#define WAIT_MS  5000
#define RD_STAG  0x1000u /* the peer's readable region: Read chunks may point here */
#define WR_STAG  0x2000u /* its writable region: Write and Reply chunks may */
#define REGION   65536u
#define BASE_TO  0x10000u
#define SENTINEL 0xf0000000u

static void die(const char *what)
{
    fprintf(stderr, "fuzz-rpcrdma_server: %s\n", what);
    abort();
}

static void dispatch(struct svc_req *rq, SVCXPRT *x)
{
    rpcpeer_serve_test(rq, x, REGION);
}

static struct uiw_rpc_svc *svc;
static uint16_t port;
static struct rpcpeer peer;
static bool connected;
static uint8_t rd_mem[REGION], wr_mem[REGION];
static uint8_t msg[RPCPEER_MSG_MAX];
static struct uiw_rpcrdma_hdr hdr;
static struct uiw_rpcrdma_space space;
static struct uiw_rpcrdma_space_default space_store;
static uint32_t sentinels;
/* The segments the inputs on this connection offered the server (its decoding of them). */
static struct rpcpeer_grants grants;
static uint8_t in_store[sizeof(struct uiw_rpcrdma_space_default)];
static struct uiw_rpcrdma_space in_space;
static bool trace; /* UIW_FUZZ_TRACE set: what the server sends, on stderr */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void down(void)
{
    if (connected)
        rpcpeer_close(&peer, true);
    connected = false;
    if (svc)
        uiw_rpc_svc_destroy(svc);
    svc = NULL;
}

static void setup(void)
{
    struct uiw_rpc_svc_attr a = {0};
    a.nthreads = 2;
    a.read_timeout_ms = 1000;
    svc = uiw_rpc_svc_create(&a);
    if (!svc || uiw_rpc_svc_register(svc, PROG, 1, dispatch) != 0 || uiw_rpc_svc_start(svc) != 0)
        die("starting the server");
    port = uiw_rpc_svc_port(svc);
    for (uint32_t i = 0; i < REGION; i++)
        rd_mem[i] = (uint8_t)(i * 7);
    /* a NULL call at the readable region's start, for an RDMA_NOMSG's Position-Zero chunk */
    rpcpeer_rpc_call(rd_mem, 0x300, PROG, 1, RPCPEER_NULL, NULL, 0);
    uiw_rpcrdma_space_init(&space, &space_store);
    uiw_rpcrdma_space_init(&in_space, (struct uiw_rpcrdma_space_default *)in_store);
    trace = getenv("UIW_FUZZ_TRACE") != NULL;
    atexit(down);
}

/* An RDMA Read Request or Write of the server: inside a segment offered for it. */
static void on_access(void *arg, bool write, uint32_t stag, uint64_t to, uint32_t len)
{
    (void)arg;
    rpcpeer_grants_check(&grants, "fuzz-rpcrdma_server", write, stag, to, len);
}

static void up(void)
{
    if (connected)
        return;
    int r;
    /* libFuzzer's timer signal may cut the connect short: once more */
    for (int tries = 0; (r = rpcpeer_connect(&peer, port, NULL, 0, false)) == -EINTR && tries < 8;
         tries++)
        rpcpeer_close(&peer, true);
    if (r != 0) {
        fprintf(stderr, "(%s)\n", strerror(-r));
        die("the server takes no connection");
    }
    peer.on_access = on_access;
    grants.n = 0;
    rpcpeer_region(&peer, RD_STAG, rd_mem, REGION, false, true)->to = BASE_TO;
    rpcpeer_region(&peer, WR_STAG, wr_mem, REGION, true, false)->to = BASE_TO;
    connected = true;
}

/* Send a NULL call of Version One; read until its reply. Returns 1 with the reply seen, 0
 * when the connection ended first. */
static int sentinel(void)
{
    uint32_t xid = SENTINEL | ++sentinels;
    struct uiw_rpcrdma_hdr h = {.xid = xid, .vers = 1, .credit = 1, .proc = UIW_RDMA_MSG};
    if (rpcpeer_send_call(&peer, &h, 0, PROG, RPCPEER_NULL, NULL, 0) != 0)
        return 0;
    for (;;) {
        uint32_t len = 0;
        int r = rpcpeer_recv(&peer, msg, sizeof(msg), &len, WAIT_MS);
        if (r == -ETIMEDOUT)
            die("the server answers nothing, and keeps the connection");
        if (r != 1)
            return 0; /* the stream ended, or the server's RNIC sent a Terminate */
        if (uiw_rpcrdma_decode(msg, len, &hdr, &space) < 0)
            die("a message of the server that does not decode");
        if (trace)
            fprintf(stderr, "xid %#x version %u %s (%u bytes); Reads served %u\n", hdr.xid,
                    hdr.vers, uiw_rpcrdma_proc_name(hdr.proc, hdr.vers), len, peer.reads_served);
        if (hdr.xid != xid)
            continue; /* the input's answer, or a Version Two peer's properties */
        if (hdr.vers != 1 || hdr.proc != UIW_RDMA_MSG) {
            fprintf(stderr, "(version %u, %s)\n", hdr.vers,
                    uiw_rpcrdma_proc_name(hdr.proc, hdr.vers));
            die("the NULL call is not answered by RDMA_MSG");
        }
        return 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!svc)
        setup();
    if (size < 4 || size > MAX_IN)
        return 0;
    uint64_t t0 = now_ns();
    struct uiw_rpcrdma_hdr h;
    bool decoded = uiw_rpcrdma_decode(data, size, &h, &in_space) >= 0;
    if (connected && decoded && grants.n + rpcpeer_grants_in(&h) > RPCPEER_MAX_GRANTS) {
        rpcpeer_close(&peer, true); /* a new connection, with none */
        connected = false;
    }
    up();
    if (decoded)
        rpcpeer_grants_add(&grants, &h);
    int r = rpcpeer_send(&peer, data, (uint32_t)size);
    if (r == 0)
        r = sentinel();
    if (trace)
        fprintf(stderr, "%s; bytes written %u; %llu ms\n", r == 1 ? "answered" : "connection ended",
                peer.region[1].written, (unsigned long long)((now_ns() - t0) / 1000000u));
    if (r == 1)
        return 0;
    /* the input ended the connection: the server still serves a new one */
    rpcpeer_close(&peer, true);
    connected = false;
    up();
    if (sentinel() != 1)
        die("a new connection is not served");
    return 0;
}
