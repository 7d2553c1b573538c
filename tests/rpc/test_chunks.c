/* Chunks on loopback: Read chunks for large arguments, Write chunks into the caller's
 * buffers, the Reply chunk, Position-Zero long calls, REPLY_RESOURCE, in both versions. */
#include <stdlib.h>

#include <uiw/wire.h>

#include "rpc/drc.h"
#include "rpc/rpc_internal.h"
#include "rpc_util.h"

static void fill(char *p, u_int n, u_int seed)
{
    for (u_int i = 0; i < n; i++)
        p[i] = (char)(i * 13 + seed);
}

static CLIENT *client(uint16_t port, uint32_t vers, uint32_t threshold)
{
    struct uiw_rpc_clnt_attr ca = {0};
    ca.xprt.vers_max = vers;
    ca.xprt.ddp_threshold = threshold;
    ca.no_vers_memory = true;
    return tclnt(port, &ca);
}

/* An opaque<> whose length word is *len, followed by 8 bytes only. */
static bool_t xdr_short_opaque(XDR *x, u_int *len)
{
    u_int zero = 0;
    return xdr_u_int(x, len) && xdr_u_int(x, &zero) && xdr_u_int(x, &zero);
}

/* An opaque<> argument whose length says more than the call holds is refused
 * (GARBAGE_ARGS) before anything is allocated for it or pointed at (uiw_xdr_bytes): the
 * largest length a word can say, or almost 4 GiB, costs the server no memory, where it
 * once allocated all of it first. */
TEST(rpc_opaque_longer_than_the_call)
{
    struct tsrv t;
    tsrv_start(&t, NULL);
    CLIENT *c = client(t.port, 2, 0);
    long before = uiw_test_vm_kib("VmPeak");
    u_int crc = 0;
    u_int lens[3] = {0xFFFFFFFFu, 0xFFFFFFF0u, 12}; /* each 8 bytes follow */
    for (int i = 0; i < 3; i++)
        CHECK_EQ(clnt_call(c, TP_SINK, (xdrproc_t)xdr_short_opaque, (char *)&lens[i],
                           (xdrproc_t)xdr_u_int, (char *)&crc, TMO),
                 RPC_CANTDECODEARGS);
    long grown = uiw_test_vm_kib("VmPeak") - before;
    if (grown > 256 * 1024)
        uiw_test_fail(__FILE__, __LINE__, "the peak of virtual memory grew by %ld KiB", grown);
    u_int eight = 8; /* a length the call holds */
    CHECK_EQ(clnt_call(c, TP_SINK, (xdrproc_t)xdr_short_opaque, (char *)&eight,
                       (xdrproc_t)xdr_u_int, (char *)&crc, TMO),
             RPC_SUCCESS);
    const uint8_t zeros[8] = {0};
    CHECK_EQ(crc, uiw_crc32c(0, zeros, 8));
    clnt_destroy(c);
    tsrv_stop(&t);
}

/* A 1 MiB argument goes as a Read chunk; the server borrows it (uiw_xdr_bytes). */
static void read_chunk(uint32_t vers)
{
    struct tsrv t;
    tsrv_start(&t, NULL);
    CLIENT *c = client(t.port, vers, 0);
    u_int n = 1u << 20;
    struct tbuf b = {n, malloc(n)};
    fill(b.val, n, 3);
    u_int crc = 0;
    CHECK_EQ(clnt_call(c, TP_SINK, (xdrproc_t)xdr_tbuf, (char *)&b, (xdrproc_t)xdr_u_int,
                       (char *)&crc, TMO),
             RPC_SUCCESS);
    CHECK_EQ(crc, uiw_crc32c(0, b.val, n));
    /* odd lengths: the chunk carries no XDR pad, the stream stays aligned */
    for (u_int len = 1021; len < 1030; len++) {
        b.len = len;
        CHECK_EQ(clnt_call(c, TP_SINK, (xdrproc_t)xdr_tbuf, (char *)&b, (xdrproc_t)xdr_u_int,
                           (char *)&crc, TMO),
                 RPC_SUCCESS);
        CHECK_EQ(crc, uiw_crc32c(0, b.val, len));
    }
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &st), 0);
    CHECK(st.read_chunks >= 7);
    free(b.val);
    clnt_destroy(c);
    tsrv_stop(&t);
}

/* More calls with a Read chunk than the server's send queue has entries: each call's
 * RDMA Read entries are given back with its reply's (they once leaked, and after
 * thousands of calls a reply waited for send queue room forever). */
TEST(rpc_read_chunks_outnumber_send_queue)
{
    struct tsrv t;
    struct uiw_rpc_svc_attr sa = {0};
    sa.xprt.credits = 1; /* the smallest send queue: 2048 + 22 + 64 entries */
    tsrv_start(&t, &sa);
    CLIENT *c = client(t.port, 2, 0);
    u_int n = 2048;
    struct tbuf b = {n, malloc(n)};
    fill(b.val, n, 5);
    u_int want = uiw_crc32c(0, b.val, n);
    struct timeval tmo = {5, 0};
    for (int i = 0; i < 2400; i++) {
        u_int crc = 0;
        enum clnt_stat st = clnt_call(c, TP_SINK, (xdrproc_t)xdr_tbuf, (char *)&b,
                                      (xdrproc_t)xdr_u_int, (char *)&crc, tmo);
        if (st != RPC_SUCCESS)
            uiw_test_fail(__FILE__, __LINE__, "call %d: %s", i, clnt_sperrno(st));
        CHECK_EQ(crc, want);
    }
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &st), 0);
    CHECK(st.read_chunks >= 2400);
    free(b.val);
    clnt_destroy(c);
    tsrv_stop(&t);
}

TEST(rpc_read_chunk_v2)
{
    read_chunk(2);
}

TEST(rpc_read_chunk_v1)
{
    read_chunk(1);
}

/* A result buffer named by the caller becomes a Write chunk: the data lands there. */
static enum clnt_stat gen(CLIENT *c, u_int n, struct tbuf *r, const struct uiw_rpc_call_opts *o)
{
    return uiw_rpc_call(c, TP_GEN, (xdrproc_t)xdr_u_int, (char *)&n, (xdrproc_t)xdr_tbuf, (char *)r,
                        TMO, o);
}

static void write_chunk(uint32_t vers)
{
    struct tsrv t;
    tsrv_start(&t, NULL);
    CLIENT *c = client(t.port, vers, 0);
    u_int n = 1u << 20;
    char *buf = malloc(n);
    struct tbuf r = {n, buf};
    struct uiw_rpc_call_opts o = {0};
    o.nresult_bufs = 1;
    o.result_bufs[0] = (struct uiw_rpc_ddp_buf){buf, n};
    CHECK_EQ(gen(c, n, &r, &o), RPC_SUCCESS);
    CHECK(r.val == buf);
    CHECK_EQ(r.len, n);
    for (u_int i = 0; i < n; i += 4097)
        CHECK_EQ((uint8_t)r.val[i], (uint8_t)(i * 7 + n));
    /* a short result into the same buffer: odd length, then one below the threshold
     * (inline, the chunk returned unused) */
    u_int m = 5001;
    r.len = n;
    CHECK_EQ(gen(c, m, &r, &o), RPC_SUCCESS);
    CHECK_EQ(r.len, m);
    CHECK_EQ((uint8_t)r.val[m - 1], (uint8_t)((m - 1) * 7 + m));
    m = 100;
    r.len = n;
    CHECK_EQ(gen(c, m, &r, &o), RPC_SUCCESS);
    CHECK_EQ(r.len, m);
    CHECK_EQ((uint8_t)r.val[99], (uint8_t)(99 * 7 + m));
    /* a result NULL in the structure: allocated by xdr_bytes, copied from the chunk */
    m = 70000;
    struct tbuf z = {0, NULL};
    CHECK_EQ(gen(c, m, &z, &o), RPC_SUCCESS);
    CHECK(z.val != NULL && z.val != buf);
    CHECK_EQ(z.len, m);
    CHECK_EQ((uint8_t)z.val[m - 1], (uint8_t)((m - 1) * 7 + m));
    clnt_freeres(c, (xdrproc_t)xdr_tbuf, (char *)&z);
    /* a result longer than the buffer named: refused, nothing written past it (Version
     * Two: REPLY_RESOURCE naming the chunk; Version One: ERR_CHUNK) */
    m = 4096 + 100;
    o.result_bufs[0].len = 4096;
    memset(buf, 0xEE, n);
    r.len = n;
    CHECK_EQ(gen(c, m, &r, &o), vers == 2 ? RPC_CANTDECODERES : RPC_CANTRECV);
    CHECK_EQ((uint8_t)buf[4096], 0xEE);
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &st), 0);
    CHECK(st.write_chunks >= 4);
    /* every STag invalidated exactly once: by the server (Send With Invalidate, which its
     * private data and rdma_inv_handle allow) for each call it answered, the client
     * seeing it and not invalidating again; locally for the refused one */
    CHECK_EQ(st.write_chunks, 5);
    CHECK_EQ(st.remote_invalidations, 4);
    CHECK_EQ(st.local_invalidations, 1);
    free(buf);
    clnt_destroy(c);
    tsrv_stop(&t);
}

TEST(rpc_write_chunk_v2)
{
    write_chunk(2);
}

TEST(rpc_write_chunk_v1)
{
    write_chunk(1);
}

/* Both directions at once: an echo of 256 KiB (Read chunk in, Write chunk out). */
TEST(rpc_echo_both_chunks)
{
    struct tsrv t;
    tsrv_start(&t, NULL);
    CLIENT *c = client(t.port, 2, 0);
    u_int n = 256u << 10;
    struct tbuf a = {n, malloc(n)}, r = {n, malloc(n)};
    fill(a.val, n, 9);
    memset(r.val, 0, n);
    struct uiw_rpc_call_opts o = {0};
    o.nresult_bufs = 1;
    o.result_bufs[0] = (struct uiw_rpc_ddp_buf){r.val, n};
    CHECK_EQ(uiw_rpc_call(c, TP_ECHO, (xdrproc_t)xdr_tbuf, (char *)&a, (xdrproc_t)xdr_tbuf,
                          (char *)&r, TMO, &o),
             RPC_SUCCESS);
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &st), 0);
    CHECK_EQ(st.read_chunks, 1);
    CHECK_EQ(st.write_chunks, 1);
    CHECK_EQ(r.len, n);
    CHECK_MEM(r.val, a.val, n);
    free(a.val);
    free(r.val);
    clnt_destroy(c);
    tsrv_stop(&t);
}

/* A result nobody set up a buffer for: a Reply chunk of reply_max, or REPLY_RESOURCE (v2:
 * the call goes again once with the size asked for) / ERR_CHUNK (v1). */
static void reply_chunk(uint32_t vers, bool hint, bool (*cached)(rpcproc_t))
{
    struct tsrv t;
    tsrv_start_cached(&t, NULL, cached);
    /* a high DDP threshold: the result goes in the reply stream, not a Write chunk */
    CLIENT *c = client(t.port, vers, 1u << 30);
    u_int n = 100000;
    struct tbuf r = {0, NULL};
    struct uiw_rpc_call_opts o = {0};
    o.reply_max = hint ? 128u << 10 : 0;
    enum clnt_stat st = uiw_rpc_call(c, TP_GEN, (xdrproc_t)xdr_u_int, (char *)&n,
                                     (xdrproc_t)xdr_tbuf, (char *)&r, TMO, &o);
    struct uiw_rpc_xprt_stats s;
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &s), 0);
    if (!hint && vers == 1) {
        CHECK_EQ(st, RPC_CANTRECV); /* ERR_CHUNK: no Reply chunk to put it in */
        CHECK_EQ(s.errors_received[UIW_RDMA_ERR_CHUNK], 1);
    } else {
        CHECK_EQ(st, RPC_SUCCESS);
        CHECK_EQ(r.len, n);
        for (u_int i = 0; i < n; i += 997)
            CHECK_EQ((uint8_t)r.val[i], (uint8_t)(i * 7 + n));
        CHECK(s.reply_chunks >= 1);
        if (!hint) {
            /* REPLY_RESOURCE, then the retry, answered with the reply kept: the call ran
             * once, though its reply is larger than the cache's 4096-byte entries (and
             * though the program says the cache keeps none of its procedure's replies) */
            CHECK_EQ(s.errors_received[UIW_RDMA2_ERR_REPLY_RESOURCE], 1);
            CHECK_EQ(s.retransmits, 1);
            struct uiw_rpc_xprt_stats ss;
            CHECK_EQ(uiw_rpc_svc_xprt_stats(t.svc, &ss), 0);
            CHECK_EQ(ss.calls_received, 2);
            CHECK_EQ(ss.drc_hits, 1);
            CHECK_EQ(ss.replies_sent, 1);
            /* the reply kept for the retry went with it: the calls the cache does not keep
             * are not looked up any more */
            CHECK(!uiw__drc_uncached(uiw__rpc_svc_drc(t.svc)));
        }
        clnt_freeres(c, (xdrproc_t)xdr_tbuf, (char *)&r);
    }
    clnt_destroy(c);
    tsrv_stop(&t);
}

TEST(rpc_reply_chunk_v2)
{
    reply_chunk(2, true, NULL);
}

TEST(rpc_reply_chunk_v1)
{
    reply_chunk(1, true, NULL);
}

TEST(rpc_reply_resource_retry_v2)
{
    reply_chunk(2, false, NULL);
}

static bool none_cached(rpcproc_t proc)
{
    (void)proc;
    return false;
}

TEST(rpc_reply_resource_retry_v2_uncached)
{
    reply_chunk(2, false, none_cached);
}

TEST(rpc_reply_too_large_v1)
{
    reply_chunk(1, false, NULL);
}

/* Arguments larger than the server's receive buffers and below the DDP threshold: the
 * whole call goes as a Position-Zero Read chunk (RDMA_NOMSG). */
static void long_call(uint32_t vers)
{
    struct tsrv t;
    tsrv_start(&t, NULL);
    CLIENT *c = client(t.port, vers, 1u << 30);
    u_int n = 60000;
    struct tbuf a = {n, malloc(n)};
    fill(a.val, n, 5);
    u_int crc = 0;
    CHECK_EQ(clnt_call(c, TP_SINK, (xdrproc_t)xdr_tbuf, (char *)&a, (xdrproc_t)xdr_u_int,
                       (char *)&crc, TMO),
             RPC_SUCCESS);
    CHECK_EQ(crc, uiw_crc32c(0, a.val, n));
    struct uiw_rpc_xprt_stats s;
    CHECK_EQ(uiw_rpc_clnt_xprt_stats(c, &s), 0);
    CHECK_EQ(s.long_calls, 1);
    CHECK_EQ(s.read_chunks, 0);
    free(a.val);
    clnt_destroy(c);
    tsrv_stop(&t);
}

TEST(rpc_long_call_v2)
{
    long_call(2);
}

TEST(rpc_long_call_v1)
{
    long_call(1);
}

/* Bytes inline in the call (and those of a Read chunk) are decoded where they landed, by
 * uiw_xdr_bytes: no copy; the word after them is decoded right whatever their pad. */
static void bytes_borrowed(uint32_t vers)
{
    struct tsrv t;
    tsrv_start(&t, NULL);
    CLIENT *c = client(t.port, vers, 0);
    static const u_int lens[] = {0,   1,    2,    3,    4,    5,    7,       100,
                                 511, 1021, 1022, 1023, 1024, 4096, 1u << 20};
    char *buf = malloc(1u << 20);
    CHECK(buf != NULL);
    fill(buf, 1u << 20, 9);
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        struct twhere w = {{lens[i], buf}, TWHERE_TAIL};
        struct tpair r = {0, 0};
        CHECK_EQ(clnt_call(c, TP_WHERE, (xdrproc_t)xdr_twhere, (char *)&w, (xdrproc_t)xdr_tpair,
                           (char *)&r, TMO),
                 RPC_SUCCESS);
        CHECK_EQ(r.a, uiw_crc32c(0, buf, lens[i]));
        /* nothing to point at for no bytes */
        if (r.b != (lens[i] ? 3u : 2u))
            uiw_test_fail(__FILE__, __LINE__, "%u bytes: %s, tail %s", lens[i],
                          r.b & 1 ? "borrowed" : "copied", r.b & 2 ? "right" : "wrong");
    }
    free(buf);
    clnt_destroy(c);
    tsrv_stop(&t);
}

TEST(rpc_bytes_borrowed_v2)
{
    bytes_borrowed(2);
}

TEST(rpc_bytes_borrowed_v1)
{
    bytes_borrowed(1);
}
