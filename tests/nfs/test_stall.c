/* Bad RPC-over-RDMA peers of uiw-nfsd (in-process, --io-timeout 2): one that stops
 * reading its replies, one that connects and never sends its MPA request, one that never
 * answers the server's RDMA Reads of its Read chunk, one that sends half of a message's
 * FPDU and then nothing. Each is dropped after the timeout,
 * and meanwhile another client's GETATTRs and small READs (over RPC-over-RDMA) go on being
 * served: every one answered, and their 99th percentile latency bounded; it is printed
 * beside the undisturbed one's. The tests exit 77 (skipped) without the RPC layer. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "nfs/client.h"
#include "nfs/xdr_data.h"
#include "nfs_util.h"
#include "relay.h"
#include "test.h"

#if UIW_NFS_HAVE_RDMA
#include <uiw/rpc.h>

#define IO_TIMEOUT 2    /* seconds (--io-timeout) */
#define P99_BOUND  0.25 /* seconds: a bystander's p99 beyond this was held up */
#define LAT_MAX    200000

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static struct uiw__nfs_client *rdma_client(const struct srv *v, int port)
{
    char url[700], err[512];
    snprintf(url, sizeof(url), "nfs://127.0.0.1:%d%s?mountport=%d&transport=rdma", port, v->dir,
             v->mount);
    struct uiw__nfs_url u;
    CHECK_EQ(uiw__nfs_url_parse(url, &u, err, sizeof(err)), 0);
    struct uiw__nfs_client *c = uiw__nfs_client_open(&u, 0, err, sizeof(err));
    if (!c)
        uiw_test_fail(__FILE__, __LINE__, "client: %s", err);
    return c;
}

/* Another client: GETATTR and a 4 KiB READ in turn, as fast as they are answered; each
 * call's latency goes to the phase it started in (0: undisturbed, 1: disturbed). */
struct bystander {
    const struct srv *v;
    pthread_t t;
    atomic_int phase; /* 0, 1; 2: stop */
    unsigned n[2], failed;
    double *lat[2];
};

static void *bystander_run(void *arg)
{
    struct bystander *b = arg;
    struct uiw__nfs_client *c = rdma_client(b->v, uiw__nfsd_port(b->v->s, UIW__NFSD_RDMA));
    struct uiw__nfs_fh f;
    CHECK_EQ(uiw__nfs_lookup(c, uiw__nfs_client_root(c), "small", &f, NULL), 0);
    char buf[4096];
    for (unsigned i = 0;; i++) {
        int ph = atomic_load(&b->phase);
        if (ph > 1)
            break;
        double t0 = now_s();
        int rc;
        if (i % 2) {
            int eof;
            rc = uiw__nfs_read(c, &f, 0, sizeof(buf), buf, &eof) == (int)sizeof(buf) ? 0 : -1;
        } else {
            fattr3 a;
            rc = uiw__nfs_getattr(c, &f, &a);
        }
        double dt = now_s() - t0;
        if (rc)
            b->failed++;
        else if (b->n[ph] < LAT_MAX)
            b->lat[ph][b->n[ph]++] = dt;
    }
    uiw__nfs_client_close(c);
    return NULL;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double p99(double *v, unsigned n)
{
    qsort(v, n, sizeof(*v), cmp_d);
    return n ? v[(size_t)n * 99 / 100] : 0;
}

struct stall {
    struct srv v;
    struct bystander b;
    uint64_t lost; /* the server's lost connections before the disturbance */
};

/* A server (--io-timeout 2) with a file "big" of 1 MiB and "small" of 4 KiB, and a
 * bystander that has run undisturbed for a second. */
static void stall_start(struct stall *s)
{
    struct uiw__nfsd_opts o;
    srv_opts_v3(&o);
    o.no_root_squash = 1;
    o.io_timeout = IO_TIMEOUT;
    srv_start(&s->v, &o);
    char *data = malloc(1u << 20);
    CHECK(data != NULL);
    memset(data, 'd', 1u << 20);
    put_file(&s->v, "big", data, 1u << 20);
    put_file(&s->v, "small", data, 4096);
    free(data);
    memset(&s->b, 0, sizeof(s->b));
    s->b.v = &s->v;
    for (int i = 0; i < 2; i++) {
        s->b.lat[i] = malloc(LAT_MAX * sizeof(double));
        CHECK(s->b.lat[i] != NULL);
    }
    CHECK_EQ(pthread_create(&s->b.t, NULL, bystander_run, &s->b), 0);
    nap_ms(1000);
    struct uiw_rpc_xprt_stats st;
    CHECK_EQ(uiw__nfsd_xprt_stats(s->v.s, &st), 0);
    s->lost = st.lost;
    atomic_store(&s->b.phase, 1);
}

/* Seconds until the server has lost one more connection than before the disturbance
 * (polling the client c meanwhile, if any), at most `most`. */
static double wait_lost(struct stall *s, struct uiw__nfs_client *c, double most)
{
    double t0 = now_s();
    struct uiw_rpc_xprt_stats st;
    do {
        if (c)
            uiw__nfs_poll(c, 50);
        else
            nap_ms(50);
        CHECK_EQ(uiw__nfsd_xprt_stats(s->v.s, &st), 0);
    } while (st.lost == s->lost && now_s() - t0 < most);
    return st.lost == s->lost ? -1 : now_s() - t0;
}

/* The bystander stops; every call of it was answered, and its p99 while disturbed is
 * within the bound. */
static void stall_end(struct stall *s, const char *what, double dropped_after)
{
    nap_ms(300); /* a little after the drop too */
    atomic_store(&s->b.phase, 2);
    CHECK_EQ(pthread_join(s->b.t, NULL), 0);
    double base = p99(s->b.lat[0], s->b.n[0]), dist = p99(s->b.lat[1], s->b.n[1]);
    printf("%s: dropped after %.2f s (--io-timeout %d); the other client's p99: %.3f ms "
           "undisturbed (%u calls), %.3f ms disturbed (%u calls): ratio %.2f\n",
           what, dropped_after, IO_TIMEOUT, base * 1e3, s->b.n[0], dist * 1e3, s->b.n[1],
           base > 0 ? dist / base : 0);
    CHECK_EQ(s->b.failed, 0u);
    CHECK(s->b.n[0] >= 10 && s->b.n[1] >= 10);
    if (dist > P99_BOUND)
        uiw_test_fail(__FILE__, __LINE__, "the other client's p99 was %.3f s during it", dist);
    free(s->b.lat[0]);
    free(s->b.lat[1]);
    srv_stop(&s->v);
}

static void dropped_in_time(const char *what, double t)
{
    if (t < 0)
        uiw_test_fail(__FILE__, __LINE__, "%s: still connected after 15 s", what);
    if (t > IO_TIMEOUT + 2)
        uiw_test_fail(__FILE__, __LINE__, "%s: dropped after %.1f s (--io-timeout %d)", what, t,
                      IO_TIMEOUT);
}

static void count_done(void *arg, int rc)
{
    (void)rc;
    (*(unsigned *)arg)++;
}

/* A client of "big" through a relay that holds whatever the server sends it from now on. */
struct held {
    struct relay *r;
    struct uiw__nfs_client *c;
    struct uiw__nfs_fh f;
};

static void held_start(struct stall *s, struct held *h)
{
    h->r = relay_start(uiw__nfsd_port(s->v.s, UIW__NFSD_RDMA));
    h->c = rdma_client(&s->v, relay_port(h->r));
    CHECK_EQ(uiw__nfs_lookup(h->c, uiw__nfs_client_root(h->c), "big", &h->f, NULL), 0);
    relay_hold(h->r, RELAY_S2C, 1);
}

/* It is dropped in time; then the test ends. */
static void held_end(struct stall *s, struct held *h, const char *what)
{
    double t = wait_lost(s, h->c, 15);
    dropped_in_time(what, t);
    relay_hold(h->r, RELAY_S2C, 0);
    uiw__nfs_client_close(h->c);
    relay_stop(h->r);
    stall_end(s, what, t);
}

/* A client that stops reading (a relay holds what the server sends it) with 32 READs of
 * 1 MiB in flight: the server's replies cannot go out, and the connection is closed after
 * --io-timeout (the RPC layer's default of 60 s before it applied to RPC-over-RDMA). */
static void stopped_reader_body(void)
{
    struct stall s;
    stall_start(&s);
    struct held h;
    held_start(&s, &h);
    enum { N = 32 };
    static READ3args args[N];
    static READ3res res[N];
    static struct uiw__nfs_async a[N];
    unsigned done = 0;
    char *buf = malloc((size_t)N << 20);
    CHECK(buf != NULL);
    for (unsigned i = 0; i < N; i++) {
        args[i].file.data.data_len = h.f.len;
        args[i].file.data.data_val = h.f.data;
        args[i].count = 1u << 20;
        res[i].READ3res_u.resok.data.data_val = buf + ((size_t)i << 20);
        res[i].READ3res_u.resok.data.data_len = 1u << 20;
        a[i] = (struct uiw__nfs_async){count_done, &done, buf + ((size_t)i << 20), 1u << 20, NULL};
        CHECK_EQ(uiw__nfs_call_async(h.c, NFSPROC3_READ, UIW__XDRPROC(xdr_READ3args), &args[i],
                                     UIW__XDRPROC(xdr_READ3res), &res[i], &a[i]),
                 0);
    }
    held_end(&s, &h, "a client that stopped reading");
    free(buf);
}

/* Peers that connect to the RPC-over-RDMA port and never send their MPA request: each is
 * dropped after the handshake's time (--io-timeout here; the connection manager's 5 s
 * before). */
static void no_mpa_request_body(void)
{
    struct stall s;
    stall_start(&s);
    enum { N = 16 };
    int fd[N];
    for (int i = 0; i < N; i++)
        fd[i] = tcp_to(uiw__nfsd_port(s.v.s, UIW__NFSD_RDMA));
    double t0 = now_s(), last = 0;
    for (int i = 0; i < N; i++) {
        struct pollfd pf = {fd[i], POLLIN, 0};
        int left = (int)((t0 + 15 - now_s()) * 1000);
        CHECK_EQ(poll(&pf, 1, left > 0 ? left : 0), 1);
        char b;
        ssize_t n = recv(fd[i], &b, 1, 0);
        CHECK(n == 0 || (n < 0 && errno == ECONNRESET)); /* closed by the server */
        close(fd[i]);
    }
    last = now_s() - t0;
    dropped_in_time("peers that never sent their MPA request", last);
    stall_end(&s, "16 peers that never sent their MPA request", last);
}

/* A client whose RDMA Read Responses never come: a relay holds what the server sends, so
 * the RDMA Read Request of a WRITE's Read chunk never reaches it. The connection is closed
 * after --io-timeout (the RPC layer's default of 30 s before). */
static void reads_unanswered_body(void)
{
    struct stall s;
    stall_start(&s);
    struct held h;
    held_start(&s, &h);
    char *data = malloc(1u << 20);
    CHECK(data != NULL);
    memset(data, 'w', 1u << 20);
    static WRITE3args args;
    static WRITE3res res;
    args.file.data.data_len = h.f.len;
    args.file.data.data_val = h.f.data;
    args.count = 1u << 20;
    args.stable = UNSTABLE;
    args.data.data_len = 1u << 20;
    args.data.data_val = data;
    unsigned done = 0;
    struct uiw__nfs_async a = {count_done, &done, NULL, 0, NULL};
    CHECK_EQ(uiw__nfs_call_async(h.c, NFSPROC3_WRITE, UIW__XDRPROC(xdr_WRITE3args), &args,
                                 UIW__XDRPROC(xdr_WRITE3res), &res, &a),
             0);
    held_end(&s, &h, "a client that never answered an RDMA Read");
    free(data);
}

/* A client that sends half of a call's FPDU and then nothing, its connection left open: a
 * relay forwards the first half of the FPDU of a GETATTR and holds the rest. The server's
 * receive side waits for the rest; nothing the server sent is unacknowledged (its
 * TCP_USER_TIMEOUT cannot fire) and the client's TCP answers keepalives. The connection
 * is closed after --io-timeout. */
static void half_fpdu_body(void)
{
    struct stall s;
    stall_start(&s);
    struct relay *r = relay_start(uiw__nfsd_port(s.v.s, UIW__NFSD_RDMA));
    struct uiw__nfs_client *c = rdma_client(&s.v, relay_port(r));
    struct uiw__nfs_fh f;
    CHECK_EQ(uiw__nfs_lookup(c, uiw__nfs_client_root(c), "small", &f, NULL), 0);
    uint64_t before = relay_bytes(r, RELAY_C2S);
    relay_half_fpdu(r);
    static GETATTR3args args;
    static GETATTR3res res;
    args.object.data.data_len = f.len;
    args.object.data.data_val = f.data;
    unsigned done = 0;
    struct uiw__nfs_async a = {count_done, &done, NULL, 0, NULL};
    CHECK_EQ(uiw__nfs_call_async(c, NFSPROC3_GETATTR, UIW__XDRPROC(xdr_GETATTR3args), &args,
                                 UIW__XDRPROC(xdr_GETATTR3res), &res, &a),
             0);
    /* the client is not polled: it could not send more anyway */
    double t = wait_lost(&s, NULL, 15);
    uint64_t sent = relay_bytes(r, RELAY_C2S) - before;
    CHECK(sent > 0);    /* part of the call's FPDU reached the server ... */
    CHECK_EQ(done, 0u); /* ... and no reply came */
    dropped_in_time("a client that sent half an FPDU", t);
    uiw__nfs_client_close(c);
    relay_stop(r);
    stall_end(&s, "a client that sent half an FPDU", t);
}

#define NEED_RDMA()
#else
#define NEED_RDMA() SKIP("built without the RPC-over-RDMA layer (src/rpc)")
static void stopped_reader_body(void)
{
}
static void no_mpa_request_body(void)
{
}
static void reads_unanswered_body(void)
{
}
static void half_fpdu_body(void)
{
}
#endif

TEST(fault_rdma_stopped_reader)
{
    NEED_RDMA();
    stopped_reader_body();
}

TEST(fault_rdma_no_mpa_request)
{
    NEED_RDMA();
    no_mpa_request_body();
}

TEST(fault_rdma_reads_unanswered)
{
    NEED_RDMA();
    reads_unanswered_body();
}

TEST(fault_rdma_half_fpdu)
{
    NEED_RDMA();
    half_fpdu_body();
}
