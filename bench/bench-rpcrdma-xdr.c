/*
 * bench-rpcrdma-xdr: encode + decode of typical RPC-over-RDMA headers with the uiw codec
 * and with rpcgen's routines on libtirpc's xdrmem stream, measured in the same run.
 *
 * Cases: Version One RDMA_MSG with one Read chunk; Version Two RDMA2_MSG with one Read
 * chunk; RDMA2_MSG with one Write chunk of 4 segments; RDMA2_CONNPROP with two
 * properties. Each round encodes the header and decodes it again (libtirpc decoding
 * allocates its lists and arrays; they are freed with xdr_free as its users must).
 * Time is this thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so that other load on the
 * machine disturbs both sides less. Prints the median of repeated runs in ns per round, the
 * allocations per round of each side (counted by interposing malloc, or by sanitizer hooks in
 * sanitized builds; checked first to see one made inside libtirpc), and the speed ratio
 * libtirpc / uiw.
 *
 *   bench-rpcrdma-xdr [ROUNDS [REPEATS]]    (defaults 200000 and 11)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uiw/rpcrdma.h>

#include "bench_stats.h"

#ifdef UIW_HAVE_RPCGEN
#include "rpcrdma_v1.h"
#include "rpcrdma_v2.h"

/* ---------------------------------------------------------------------------------------
 * Allocation counting
 * ------------------------------------------------------------------------------------- */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UIW_BENCH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UIW_BENCH_ASAN 1
#endif
#endif

static volatile unsigned long n_allocs;

#ifdef UIW_BENCH_ASAN
int __sanitizer_install_malloc_and_free_hooks(void (*m)(const volatile void *, size_t),
                                              void (*f)(const volatile void *));
static void on_malloc(const volatile void *p, size_t n)
{
    (void)p;
    (void)n;
    n_allocs = n_allocs + 1;
}
static void on_free(const volatile void *p)
{
    (void)p;
}
static void count_allocs_init(void)
{
    __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
}
#else
/* The build hides every symbol by default (-fvisibility=hidden); these must be in the
 * program's dynamic symbol table, or libtirpc's calls go to libc's and are never seen. */
#define UIW_BENCH_EXPORT __attribute__((visibility("default")))
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t m);
void *__libc_realloc(void *p, size_t n);
void __libc_free(void *p);

UIW_BENCH_EXPORT void *malloc(size_t n)
{
    n_allocs = n_allocs + 1;
    return __libc_malloc(n);
}
UIW_BENCH_EXPORT void *calloc(size_t n, size_t m)
{
    n_allocs = n_allocs + 1;
    return __libc_calloc(n, m);
}
UIW_BENCH_EXPORT void *realloc(void *p, size_t n)
{
    n_allocs = n_allocs + 1;
    return __libc_realloc(p, n);
}
UIW_BENCH_EXPORT void free(void *p)
{
    __libc_free(p);
}
static void count_allocs_init(void)
{
}
#endif

/* Whether the counter sees an allocation made inside libtirpc: xdr_bytes decoding into a
 * NULL pointer allocates the bytes there (mem_alloc). */
static int counter_sees_libtirpc(void)
{
    char wire[8] = {0, 0, 0, 3, 'a', 'b', 'c', 0};
    XDR x;
    xdrmem_create(&x, wire, sizeof(wire), XDR_DECODE);
    char *p = NULL;
    u_int n = 0;
    unsigned long before = n_allocs;
    bool_t ok = xdr_bytes(&x, &p, &n, 16);
    unsigned long after = n_allocs;
    xdr_destroy(&x);
    if (ok && p)
        mem_free(p, n);
    return ok && after > before;
}

/* ---------------------------------------------------------------------------------------
 * The cases, in both forms
 * ------------------------------------------------------------------------------------- */

enum { CASE_V1_READ, CASE_V2_READ, CASE_V2_WRITE4, CASE_V2_CONNPROP, NCASES };
static const char *const case_names[NCASES] = {"v1 MSG, 1 Read chunk", "v2 MSG, 1 Read chunk",
                                               "v2 MSG, 1 Write chunk x 4 segs",
                                               "v2 CONNPROP, 2 properties"};

static struct uiw_rpcrdma_read_segment u_read = {.position = 132,
                                                 .target = {0x12345600, 1048576, 0x7f0012340000}};
static struct uiw_rpcrdma_segment u_segs[4] = {{0x100, 65536, 0x7f0000000000},
                                               {0x200, 65536, 0x7f0000010000},
                                               {0x300, 65536, 0x7f0000020000},
                                               {0x400, 65536, 0x7f0000030000}};
static struct uiw_rpcrdma_write_chunk u_wc = {4, u_segs};
static struct uiw_rpcrdma_prop u_props[2] = {
    {.which = UIW_RPCRDMA_PROP_RBSIZ, .len = 4, .value = 8192},
    {.which = UIW_RPCRDMA_PROP_BRS, .len = 4, .value = 2}};
static uint8_t u_nochg_wire[4];

static void uiw_case(int c, struct uiw_rpcrdma_hdr *h)
{
    memset(h, 0, sizeof(*h));
    h->xid = 0x01020304;
    h->credit = 128;
    h->vers = c == CASE_V1_READ ? 1 : 2;
    h->proc = c == CASE_V2_CONNPROP ? UIW_RDMA2_CONNPROP : UIW_RDMA_MSG;
    switch (c) {
    case CASE_V1_READ:
    case CASE_V2_READ:
        h->u.chunks.nreads = 1;
        h->u.chunks.reads = &u_read;
        break;
    case CASE_V2_WRITE4:
        h->u.chunks.direction = UIW_RPCRDMA_CALL;
        h->u.chunks.nwrites = 1;
        h->u.chunks.writes = &u_wc;
        break;
    default: {
        static const uint32_t ids[] = {UIW_RPCRDMA_PROP_BRS};
        h->u.connprop.start = (struct uiw_rpcrdma_propset){2, u_props};
        uiw_rpcrdma_subset_build(&h->u.connprop.nochg, u_nochg_wire, sizeof(u_nochg_wire), ids, 1);
    }
    }
}

static xdr_read_list g1_read;
static rpcrdma2_read_list g2_read;
static rpcrdma2_segment g2_segs[4];
static rpcrdma2_write_list g2_wl;
static rpcrdma2_propval g2_props[2];
static char g2_rbsiz[4] = {0, 0, 0x20, 0}, g2_brs[4] = {0, 0, 0, 2};
static uint32 g2_nochg[1] = {1u << UIW_RPCRDMA_PROP_BRS};

static void tirpc_case1(rdma_msg *g)
{
    memset(g, 0, sizeof(*g));
    g->rdma_xid = 0x01020304;
    g->rdma_vers = 1;
    g->rdma_credit = 128;
    g->rdma_body.proc = RDMA_MSG;
    g1_read.entry.position = u_read.position;
    g1_read.entry.target.handle = u_read.target.handle;
    g1_read.entry.target.length = u_read.target.length;
    g1_read.entry.target.offset = u_read.target.offset;
    g->rdma_body.rdma_body_u.rdma_msg.rdma_reads = &g1_read;
}

static void tirpc_case2(int c, rpcrdma2_xprt_hdr *g)
{
    memset(g, 0, sizeof(*g));
    g->rdma_xid = 0x01020304;
    g->rdma_vers = 2;
    g->rdma_credit = 128;
    rpcrdma2_chunk_lists *cl = &g->rdma_body.rpcrdma2_body_u.rdma_chunks;
    switch (c) {
    case CASE_V2_READ:
        g->rdma_body.rdma_proc = RDMA2_MSG;
        g2_read.rdma_entry.rdma_position = u_read.position;
        g2_read.rdma_entry.rdma_target.rdma_handle = u_read.target.handle;
        g2_read.rdma_entry.rdma_target.rdma_length = u_read.target.length;
        g2_read.rdma_entry.rdma_target.rdma_offset = u_read.target.offset;
        cl->rdma_reads = &g2_read;
        break;
    case CASE_V2_WRITE4:
        g->rdma_body.rdma_proc = RDMA2_MSG;
        for (int i = 0; i < 4; i++) {
            g2_segs[i].rdma_handle = u_segs[i].handle;
            g2_segs[i].rdma_length = u_segs[i].length;
            g2_segs[i].rdma_offset = u_segs[i].offset;
        }
        g2_wl.rdma_entry.rdma_target.rdma_target_len = 4;
        g2_wl.rdma_entry.rdma_target.rdma_target_val = g2_segs;
        cl->rdma_writes = &g2_wl;
        break;
    default: {
        g->rdma_body.rdma_proc = RDMA2_CONNPROP;
        rpcrdma2_connprop *cp = &g->rdma_body.rpcrdma2_body_u.rdma_connprop;
        g2_props[0].rdma_which = UIW_RPCRDMA_PROP_RBSIZ;
        g2_props[0].rdma_data.rdma_data_len = 4;
        g2_props[0].rdma_data.rdma_data_val = g2_rbsiz;
        g2_props[1].rdma_which = UIW_RPCRDMA_PROP_BRS;
        g2_props[1].rdma_data.rdma_data_len = 4;
        g2_props[1].rdma_data.rdma_data_val = g2_brs;
        cp->rdma_start.rpcrdma2_propset_len = 2;
        cp->rdma_start.rpcrdma2_propset_val = g2_props;
        cp->rdma_nochg.rpcrdma2_propsubset_len = 1;
        cp->rdma_nochg.rpcrdma2_propsubset_val = g2_nochg;
    }
    }
}

/* ---------------------------------------------------------------------------------------
 * Rounds
 * ------------------------------------------------------------------------------------- */

static uint8_t wire[1024];
static volatile uint32_t sink;

static void uiw_rounds(int c, long n)
{
    static struct uiw_rpcrdma_space_default st;
    struct uiw_rpcrdma_space sp;
    struct uiw_rpcrdma_hdr h, d;
    uiw_case(c, &h);
    uiw_rpcrdma_space_init(&sp, &st);
    for (long i = 0; i < n; i++) {
        h.xid = (uint32_t)i;
        int len = uiw_rpcrdma_encode(wire, sizeof(wire), &h);
        if (uiw_rpcrdma_decode(wire, (size_t)len, &d, &sp) != len)
            abort();
        sink = d.xid;
    }
}

static void tirpc_rounds(int c, long n)
{
    rdma_msg g1, t1;
    rpcrdma2_xprt_hdr g2, t2;
    XDR x;
    if (c == CASE_V1_READ)
        tirpc_case1(&g1);
    else
        tirpc_case2(c, &g2);
    for (long i = 0; i < n; i++) {
        xdrmem_create(&x, (char *)wire, sizeof(wire), XDR_ENCODE);
        bool_t ok;
        if (c == CASE_V1_READ) {
            g1.rdma_xid = (uint32_t)i;
            ok = xdr_rdma_msg(&x, &g1);
        } else {
            g2.rdma_xid = (uint32_t)i;
            ok = xdr_rpcrdma2_xprt_hdr(&x, &g2);
        }
        u_int len = xdr_getpos(&x);
        xdr_destroy(&x);
        if (!ok)
            abort();
        xdrmem_create(&x, (char *)wire, len, XDR_DECODE);
        if (c == CASE_V1_READ) {
            memset(&t1, 0, sizeof(t1));
            ok = xdr_rdma_msg(&x, &t1);
            sink = t1.rdma_xid;
            xdr_free((xdrproc_t)xdr_rdma_msg, (char *)&t1);
        } else {
            memset(&t2, 0, sizeof(t2));
            ok = xdr_rpcrdma2_xprt_hdr(&x, &t2);
            sink = t2.rdma_xid;
            xdr_free((xdrproc_t)xdr_rpcrdma2_xprt_hdr, (char *)&t2);
        }
        xdr_destroy(&x);
        if (!ok)
            abort();
    }
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Median ns per round over `reps` runs of `n` rounds; *allocs = allocations per round. */
static double measure(void (*fn)(int, long), int c, long n, int reps, double *allocs)
{
    double t[64];
    fn(c, n / 10 + 1); /* warm up */
    unsigned long a0 = n_allocs;
    for (int r = 0; r < reps; r++) {
        double t0 = now_ns();
        fn(c, n);
        t[r] = (now_ns() - t0) / (double)n;
    }
    *allocs = (double)(n_allocs - a0) / ((double)n * reps);
    qsort(t, (size_t)reps, sizeof(t[0]), bench_cmp_double);
    return t[reps / 2];
}

/* Check once that both sides produce the same bytes for every case. */
static int same_bytes(int c)
{
    uint8_t a[1024], b[1024];
    struct uiw_rpcrdma_hdr h;
    rdma_msg g1;
    rpcrdma2_xprt_hdr g2;
    XDR x;
    uiw_case(c, &h);
    int la = uiw_rpcrdma_encode(a, sizeof(a), &h);
    xdrmem_create(&x, (char *)b, sizeof(b), XDR_ENCODE);
    bool_t ok;
    if (c == CASE_V1_READ) {
        tirpc_case1(&g1);
        ok = xdr_rdma_msg(&x, &g1);
    } else {
        tirpc_case2(c, &g2);
        ok = xdr_rpcrdma2_xprt_hdr(&x, &g2);
    }
    int lb = (int)xdr_getpos(&x);
    xdr_destroy(&x);
    return ok && la == lb && memcmp(a, b, (size_t)la) == 0;
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 200000;
    int reps = argc > 2 ? atoi(argv[2]) : 11;
    if (rounds < 1 || reps < 1 || reps > 64) {
        fprintf(stderr, "usage: %s [ROUNDS [REPEATS<=64]]\n", argv[0]);
        return 2;
    }
    count_allocs_init();
    if (!counter_sees_libtirpc()) {
        fprintf(stderr, "bench-rpcrdma-xdr: the allocation counter does not see libtirpc's "
                        "allocations\n");
        return 1;
    }
    printf("RPC-over-RDMA header encode+decode, median of %d runs x %ld rounds\n", reps, rounds);
    printf("%-32s %10s %10s %8s %8s %8s\n", "case", "uiw ns", "tirpc ns", "uiw al", "tirpc al",
           "ratio");
    double worst = 1e300;
    int status = 0;
    for (int c = 0; c < NCASES; c++) {
        if (!same_bytes(c)) {
            fprintf(stderr, "%s: uiw and libtirpc encodings differ\n", case_names[c]);
            return 1;
        }
        double au, at;
        double tu = measure(uiw_rounds, c, rounds, reps, &au);
        double tt = measure(tirpc_rounds, c, rounds, reps, &at);
        double ratio = tt / tu;
        if (ratio < worst)
            worst = ratio;
        if (au != 0)
            status = 1;
        printf("%-32s %10.1f %10.1f %8.2f %8.2f %7.1fx\n", case_names[c], tu, tt, au, at, ratio);
    }
    printf("smallest ratio (libtirpc time / uiw time): %.1fx (target >= 10x); uiw allocations "
           "per message: %s\n",
           worst, status ? "NONZERO" : "0");
    return status;
}

#else
int main(void)
{
    puts("bench-rpcrdma-xdr: built without rpcgen/libtirpc; nothing to compare against");
    return 0;
}
#endif
