/*
 * rpcrdma-bench: a client/server benchmark of an rpcgen program (rbench.x: NULL; READ n
 * bytes; WRITE n bytes) over RPC-over-RDMA, against the same program over libtirpc's TCP
 * transport and raw TCP measured in the same run.
 *
 *   server:   rpcrdma-bench [-p PORT]                (RPC-over-RDMA on PORT, libtirpc TCP on
 *                                                     PORT+1, raw TCP on PORT+2)
 *   client:   rpcrdma-bench [options] HOST
 *   both:     rpcrdma-bench --loopback [options]     (a server process and this client)
 *
 * Each measurement runs for -D seconds, -r times; every figure printed is the median of
 * those runs, and each ratio the median of the runs' ratios (machines are shared and
 * noisy). Latency percentiles are of every call of a run (from the call's start to its
 * end, waiting for a credit included).
 */
#include <errno.h>
#include <arpa/inet.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <uiw/rpc.h>
#include <uiw/version.h>

#include "rbench.h"
#include "../rpcstats.h"

static const char usage[] =
    "usage: rpcrdma-bench [-p PORT]                              (server)\n"
    "       rpcrdma-bench [options] HOST                         (client)\n"
    "       rpcrdma-bench --loopback [options]                   (both, two processes)\n"
    "\n"
    "  -p, --port PORT     RPC-over-RDMA port (default 20049; server: 0 picks one); libtirpc\n"
    "                      TCP listens on PORT+1, raw TCP on PORT+2\n"
    "  -t, --test T        null, read or write (default null)\n"
    "  -s, --size SIZE     bytes per READ or WRITE (K, M suffixes; default 1M)\n"
    "  -D, --duration S    seconds per measurement (default 2)\n"
    "  -r, --repeat N      measurements of each kind, medians printed (default 5)\n"
    "      --inflight N    RPC-over-RDMA calls in flight (default 1: synchronous calls)\n"
    "      --client-threads N  synchronous calls from N threads sharing each CLIENT, over\n"
    "                      RPC-over-RDMA and libtirpc TCP (default 1; not with\n"
    "                      --inflight; raw TCP stays one stream)\n"
    "      --vers 1|2      RPC-over-RDMA version (default 2)\n"
    "      --spin US       busy-poll this long before sleeping, client and --loopback's\n"
    "                      server (default: the library's, 50; 0: never spin)\n"
    "      --threads N     the RPC-over-RDMA server's worker threads, server and\n"
    "                      --loopback's (default 2)\n"
    "      --compare-tcp   also the same program over libtirpc's TCP (synchronous calls)\n"
    "                      and, for READ and WRITE, raw TCP; print the ratios\n"
    "      --loopback      start a server process and run the client against it\n"
    "      --json          one JSON object per line per measurement\n"
    "      --stats         the RPC-over-RDMA and RNIC counters: the client's after its runs,\n"
    "                      the server's when it ends (SIGINT, SIGTERM; --loopback's at the\n"
    "                      end) and on SIGUSR1\n"
    "  -h, --help          this help\n"
    "      --version       the version\n"
    "\n"
    "Exit status: 0 when the runs worked (whatever the figures), 1 when one failed, 2 on a\n"
    "usage error.\n";

enum test { T_NULL, T_READ, T_WRITE };
static const char *const test_name[] = {"null", "read", "write"};

struct opts {
    unsigned port, vers, inflight, repeat;
    unsigned client_threads; /* threads making synchronous calls on one CLIENT */
    unsigned threads;        /* the server's uiw_rpc_svc_attr.nthreads */
    int spin_us;             /* uiw_rpc_xprt_attr.spin_us: 0 the library's default, -1 never */
    double secs;
    uint32_t size;
    enum test test;
    bool compare_tcp, loopback, json, stats;
    const char *host;
};

/* One measurement. */
struct fig {
    double cps, gbs, p50, p99;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ------------------------------------------------------------------ latency samples */

#define MAXLAT (1u << 21)
static double *lat;
static size_t nlat;

static pthread_mutex_t lat_mu = PTHREAD_MUTEX_INITIALIZER;

static void lat_add(double us)
{
    pthread_mutex_lock(&lat_mu);
    if (nlat < MAXLAT)
        lat[nlat++] = us;
    pthread_mutex_unlock(&lat_mu);
}

static void lat_fill(struct fig *f)
{
    if (!nlat) {
        f->p50 = f->p99 = 0;
        return;
    }
    qsort(lat, nlat, sizeof(*lat), cmp_d);
    f->p50 = lat[nlat / 2];
    f->p99 = lat[(size_t)((double)(nlat - 1) * 0.99)];
}

/* ------------------------------------------------------------------ the server */

static bool_t xvoid(XDR *x, void *p)
{
    (void)x;
    (void)p;
    return TRUE;
}

static void *databuf; /* the data a server READ returns over TCP, a client's buffers */

static void dispatch(struct svc_req *rq, SVCXPRT *x)
{
    switch (rq->rq_proc) {
    case RB_NULL:
        svc_sendreply(x, (xdrproc_t)xvoid, NULL);
        return;
    case RB_READ: {
        u_int n = 0;
        if (!svc_getargs(x, (xdrproc_t)xdr_u_int, (char *)&n) || n > (64u << 20)) {
            svcerr_decode(x);
            return;
        }
        rb_data d = {n, uiw_svc_getbuf(x, n)};
        if (!d.rb_data_val) {
            svcerr_systemerr(x);
            return;
        }
        svc_sendreply(x, (xdrproc_t)xdr_rb_data, (char *)&d);
        return;
    }
    case RB_WRITE: {
        rb_data d = {0, NULL};
        if (!svc_getargs(x, (xdrproc_t)xdr_rb_data, (char *)&d)) {
            svcerr_decode(x);
            return;
        }
        u_int n = d.rb_data_len;
        svc_sendreply(x, (xdrproc_t)xdr_u_int, (char *)&n);
        svc_freeargs(x, (xdrproc_t)xdr_rb_data, (char *)&d);
        return;
    }
    default:
        svcerr_noproc(x);
    }
}

static int listen_tcp(unsigned port)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(s, 16) != 0) {
        if (s >= 0)
            close(s);
        return -1;
    }
    return s;
}

/* Raw TCP: every connection's bytes read and dropped. */
static void *raw_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    static __thread char sink[1 << 20];
    while (read(fd, sink, sizeof(sink)) > 0)
        ;
    close(fd);
    return NULL;
}

static void *raw_server(void *arg)
{
    int l = (int)(intptr_t)arg;
    for (;;) {
        int fd = accept(l, NULL, NULL);
        if (fd < 0)
            continue;
        pthread_t t;
        if (pthread_create(&t, NULL, raw_conn, (void *)(intptr_t)fd) == 0)
            pthread_detach(t);
        else
            close(fd);
    }
    return NULL;
}

/* --stats: the counters as one block or one JSON line, `role` saying whose. */
static void print_stats(const struct opts *o, const char *role, const struct uiw_rpc_xprt_stats *st)
{
    if (o->json) {
        printf("{\"role\":\"%s\",\"stats\":", role);
        rpcstats_json(stdout, st);
        printf("}\n");
    } else {
        rpcstats_text(stdout, role, st);
    }
    fflush(stdout);
}

/* A server's --stats: printed on SIGUSR1, and as it ends on SIGINT / SIGTERM. */
static struct server_stats {
    const struct opts *o;
    struct uiw_rpc_svc *svc;
    struct rpcstats_sig sig;
} sstats;

static void server_stats_print(void *arg)
{
    struct server_stats *s = arg;
    struct uiw_rpc_xprt_stats st;
    if (uiw_rpc_svc_xprt_stats(s->svc, &st) == 0)
        print_stats(s->o, "server", &st);
}

static void server_stats_end(void *arg)
{
    (void)arg;
    fflush(stdout);
    _exit(0);
}

/* Start the three servers; *ports: RDMA, libtirpc TCP, raw TCP. Then serve libtirpc in
 * this thread forever. */
static int server(const struct opts *o, unsigned port, int spin_us, int report_fd)
{
    sstats.o = o;
    sstats.sig = (struct rpcstats_sig){server_stats_print, server_stats_end, &sstats};
    if (o->stats && rpcstats_block() != 0)
        return 1;
    struct uiw_rpc_svc_attr a;
    memset(&a, 0, sizeof(a));
    a.port = (uint16_t)port;
    a.xprt.spin_us = spin_us;
    a.nthreads = o->threads;
    struct uiw_rpc_svc *s = uiw_rpc_svc_create(&a);
    if (!s || uiw_rpc_svc_register(s, RBENCH_PROG, RBENCH_VERS, dispatch) != 0 ||
        uiw_rpc_svc_start(s) != 0) {
        fprintf(stderr, "rpcrdma-bench: RPC-over-RDMA server: %s\n", strerror(errno));
        return 1;
    }
    sstats.svc = s;
    if (o->stats && rpcstats_signals(&sstats.sig) != 0)
        return 1;
    unsigned p = uiw_rpc_svc_port(s);
    int tl = listen_tcp(port ? p + 1 : 0), rl = listen_tcp(port ? p + 2 : 0);
    if (tl < 0 || rl < 0) {
        fprintf(stderr, "rpcrdma-bench: TCP listeners: %s\n", strerror(errno));
        return 1;
    }
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    getsockname(tl, (struct sockaddr *)&sa, &sl);
    unsigned tp = ntohs(sa.sin_port);
    sl = sizeof(sa);
    getsockname(rl, (struct sockaddr *)&sa, &sl);
    unsigned rp = ntohs(sa.sin_port);
    SVCXPRT *x = svctcp_create(tl, 1 << 20, 1 << 20);
    if (!x || !svc_register(x, RBENCH_PROG, RBENCH_VERS, dispatch, 0)) {
        fprintf(stderr, "rpcrdma-bench: libtirpc TCP server failed\n");
        return 1;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, raw_server, (void *)(intptr_t)rl) != 0)
        return 1;
    char line[64];
    int n = snprintf(line, sizeof(line), "%u %u %u\n", p, tp, rp);
    if (report_fd >= 0) {
        if (write(report_fd, line, (size_t)n) != n)
            return 1;
        close(report_fd);
    } else {
        printf("rpcrdma-bench: listening on port %u (RPC-over-RDMA), %u (libtirpc TCP), %u "
               "(raw TCP)\n",
               p, tp, rp);
        fflush(stdout);
    }
    svc_run();
    return 0;
}

/* ------------------------------------------------------------------ clients */

struct slot {
    CLIENT *c;
    const struct opts *o;
    double t0, end;
    u_int n, res;
    rb_data d;
    char *buf;
    struct uiw_rpc_call_opts co;
    uint64_t *done;
    int *failed;
};

static const struct timeval TMO = {30, 0};

static int start(struct slot *sl);

static void slot_done(CLIENT *c, void *arg, enum clnt_stat st, const struct rpc_err *e)
{
    (void)c;
    (void)e;
    struct slot *sl = arg;
    double t = now_s();
    if (st != RPC_SUCCESS) {
        fprintf(stderr, "rpcrdma-bench: call failed: %s\n", clnt_sperrno(st));
        (*sl->failed)++;
        return;
    }
    lat_add((t - sl->t0) * 1e6);
    (*sl->done)++;
    if (t < sl->end && start(sl) != 0)
        (*sl->failed)++;
}

/* Start the call of slot sl (asynchronous). */
static int start(struct slot *sl)
{
    const struct opts *o = sl->o;
    sl->t0 = now_s();
    switch (o->test) {
    case T_NULL:
        return uiw_rpc_call_async(sl->c, RB_NULL, (xdrproc_t)xvoid, NULL, (xdrproc_t)xvoid, NULL,
                                  TMO, NULL, slot_done, sl);
    case T_READ:
        sl->n = o->size;
        sl->d.rb_data_len = o->size;
        sl->d.rb_data_val = sl->buf; /* the Write chunk's memory: decoding copies nothing */
        return uiw_rpc_call_async(sl->c, RB_READ, (xdrproc_t)xdr_u_int, (char *)&sl->n,
                                  (xdrproc_t)xdr_rb_data, (char *)&sl->d, TMO, &sl->co, slot_done,
                                  sl);
    case T_WRITE:
        sl->d.rb_data_len = o->size;
        sl->d.rb_data_val = sl->buf;
        return uiw_rpc_call_async(sl->c, RB_WRITE, (xdrproc_t)xdr_rb_data, (char *)&sl->d,
                                  (xdrproc_t)xdr_u_int, (char *)&sl->res, TMO, NULL, slot_done, sl);
    }
    return -EINVAL;
}

/* One synchronous call on any CLIENT (RDMA through uiw_rpc_call, TCP through clnt_call). */
static enum clnt_stat call_sync(CLIENT *c, bool rdma, const struct opts *o, char *buf)
{
    rb_data d = {o->size, buf};
    u_int n = o->size, res = 0;
    struct uiw_rpc_call_opts co;
    memset(&co, 0, sizeof(co));
    switch (o->test) {
    case T_NULL:
        return clnt_call(c, RB_NULL, (xdrproc_t)xvoid, NULL, (xdrproc_t)xvoid, NULL, TMO);
    case T_READ:
        if (rdma) {
            co.nresult_bufs = 1;
            co.result_bufs[0] = (struct uiw_rpc_ddp_buf){buf, o->size};
            return uiw_rpc_call(c, RB_READ, (xdrproc_t)xdr_u_int, (char *)&n,
                                (xdrproc_t)xdr_rb_data, (char *)&d, TMO, &co);
        }
        return clnt_call(c, RB_READ, (xdrproc_t)xdr_u_int, (char *)&n, (xdrproc_t)xdr_rb_data,
                         (char *)&d, TMO);
    case T_WRITE:
        return clnt_call(c, RB_WRITE, (xdrproc_t)xdr_rb_data, (char *)&d, (xdrproc_t)xdr_u_int,
                         (char *)&res, TMO);
    }
    return RPC_FAILED;
}

/* One thread's synchronous calls until `end`. */
struct sync_run {
    CLIENT *c;
    bool rdma, failed;
    const struct opts *o;
    char *buf;
    double end;
    uint64_t done;
};

static void *sync_calls(void *arg)
{
    struct sync_run *a = arg;
    for (double t = now_s(); t < a->end;) {
        double c0 = now_s();
        enum clnt_stat st = call_sync(a->c, a->rdma, a->o, a->buf);
        t = now_s();
        if (st != RPC_SUCCESS) {
            fprintf(stderr, "rpcrdma-bench: %s call failed: %s\n", a->rdma ? "RDMA" : "TCP",
                    clnt_sperrno(st));
            a->failed = true;
            break;
        }
        lat_add((t - c0) * 1e6);
        a->done++;
    }
    return NULL;
}

/* Synchronous calls for secs on c, from client_threads threads (this one among them), each
 * with its own buffer. */
static int run_sync(CLIENT *c, bool rdma, const struct opts *o, struct fig *f)
{
    unsigned n = o->client_threads;
    struct sync_run *a = calloc(n, sizeof(*a));
    pthread_t *th = calloc(n, sizeof(*th));
    if (!a || !th) {
        free(a);
        free(th);
        return -1;
    }
    nlat = 0;
    double t0 = now_s();
    unsigned started = 1;
    for (unsigned i = 0; i < n; i++)
        a[i] = (struct sync_run){.c = c,
                                 .rdma = rdma,
                                 .o = o,
                                 .end = t0 + o->secs,
                                 .buf = (char *)databuf + (size_t)i * o->size};
    for (; started < n; started++)
        if (pthread_create(&th[started], NULL, sync_calls, &a[started]) != 0)
            break;
    sync_calls(&a[0]);
    uint64_t done = a[0].done;
    bool failed = a[0].failed || started < n;
    for (unsigned i = 1; i < started; i++) {
        pthread_join(th[i], NULL);
        done += a[i].done;
        failed = failed || a[i].failed;
    }
    double t = now_s();
    free(a);
    free(th);
    if (failed)
        return -1;
    f->cps = (double)done / (t - t0);
    f->gbs = o->test == T_NULL ? 0 : f->cps * o->size / 1e9;
    lat_fill(f);
    return 0;
}

static int run_async(CLIENT *c, const struct opts *o, struct fig *f)
{
    unsigned n = o->inflight;
    struct slot *sl = calloc(n, sizeof(*sl));
    if (!sl)
        return -1;
    uint64_t done = 0;
    int failed = 0;
    nlat = 0;
    double t0 = now_s(), end = t0 + o->secs;
    for (unsigned i = 0; i < n; i++) {
        sl[i] = (struct slot){.c = c, .o = o, .end = end, .done = &done, .failed = &failed};
        sl[i].buf = o->test == T_NULL ? NULL : (char *)databuf + (size_t)i * o->size;
        sl[i].co.nresult_bufs = 1;
        sl[i].co.result_bufs[0] = (struct uiw_rpc_ddp_buf){sl[i].buf, o->size};
        if (start(&sl[i]) != 0)
            failed++;
    }
    while (uiw_rpc_clnt_pending(c) && !failed)
        if (uiw_rpc_clnt_poll(c, 1000) < 0)
            failed++;
    while (uiw_rpc_clnt_pending(c))
        uiw_rpc_clnt_poll(c, 1000);
    double t = now_s();
    free(sl);
    if (failed)
        return -1;
    f->cps = (double)done / (t - t0);
    f->gbs = o->test == T_NULL ? 0 : f->cps * o->size / 1e9;
    lat_fill(f);
    return 0;
}

/* Raw TCP: chunk-byte writes for secs. */
static int run_raw1(const char *host, unsigned port, const struct opts *o, size_t chunk,
                    struct fig *f)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (s < 0 || inet_pton(AF_INET, host, &a.sin_addr) != 1 ||
        connect(s, (struct sockaddr *)&a, sizeof(a)) != 0) {
        fprintf(stderr, "rpcrdma-bench: raw TCP to %s port %u: %s\n", host, port, strerror(errno));
        if (s >= 0)
            close(s);
        return -1;
    }
    uint64_t bytes = 0;
    double t0 = now_s(), end = t0 + o->secs, t = t0;
    while (t < end) {
        ssize_t w = write(s, databuf, chunk);
        if (w <= 0) {
            close(s);
            return -1;
        }
        bytes += (uint64_t)w;
        t = now_s();
    }
    close(s);
    f->gbs = (double)bytes / (t - t0) / 1e9;
    f->cps = f->gbs * 1e9 / o->size;
    f->p50 = f->p99 = 0;
    return 0;
}

/* Raw TCP, as iwperf --tcp: 64 KiB writes and size-byte writes, the faster. */
static int run_raw(const char *host, unsigned port, const struct opts *o, struct fig *f)
{
    struct fig g;
    if (run_raw1(host, port, o, o->size, f) != 0)
        return -1;
    if (o->size > 65536) {
        if (run_raw1(host, port, o, 65536, &g) != 0)
            return -1;
        if (g.gbs > f->gbs) {
            g.cps = g.gbs * 1e9 / o->size;
            *f = g;
        }
    }
    return 0;
}

static const char *tname(const struct opts *o, int tr)
{
    return tr == 0 ? (o->vers == 1 ? "rdma-v1" : "rdma-v2") : tr == 1 ? "tcp" : "raw-tcp";
}

static void print_fig(const struct opts *o, int tr, const struct fig *f, unsigned inflight)
{
    if (o->json) {
        printf("{\"test\":\"%s\",\"size\":%u,\"transport\":\"%s\",\"inflight\":%u,"
               "\"client_threads\":%u,\"calls_per_sec\":%.1f,\"gbytes_per_sec\":%.4f,"
               "\"p50_us\":%.1f,\"p99_us\":%.1f}\n",
               test_name[o->test], o->test == T_NULL ? 0 : o->size, tname(o, tr), inflight,
               tr == 2 ? 1 : o->client_threads, f->cps, f->gbs, f->p50, f->p99);
    } else {
        printf("%-5s %8u %-8s inflight %-4u threads %-3u %12.1f calls/s %9.4f GB/s  p50 %9.1f us "
               " p99 %9.1f us\n",
               test_name[o->test], o->test == T_NULL ? 0 : o->size, tname(o, tr), inflight,
               tr == 2 ? 1 : o->client_threads, f->cps, f->gbs, f->p50, f->p99);
    }
}

static int client(const struct opts *o, unsigned rport, unsigned tport, unsigned rawport)
{
    size_t bufsz = (size_t)o->size * (o->inflight > 1 ? o->inflight : o->client_threads);
    databuf = malloc(bufsz ? bufsz : 1);
    lat = malloc(MAXLAT * sizeof(*lat));
    if (!databuf || !lat)
        return 1;
    memset(databuf, 0x5a, bufsz);
    struct uiw_rpc_clnt_attr a;
    memset(&a, 0, sizeof(a));
    a.xprt.vers_max = o->vers;
    a.xprt.vers_min = o->vers == 1 ? 1 : 0;
    a.no_vers_memory = true;
    a.xprt.spin_us = o->spin_us;
    CLIENT *rc = uiw_rpc_clnt_create(o->host, (uint16_t)rport, RBENCH_PROG, RBENCH_VERS, &a);
    if (!rc) {
        fprintf(stderr, "rpcrdma-bench: RPC-over-RDMA to %s port %u: %s\n", o->host, rport,
                strerror(errno));
        return 1;
    }
    CLIENT *tc = NULL;
    if (o->compare_tcp) {
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)tport)};
        int sock = RPC_ANYSOCK;
        if (inet_pton(AF_INET, o->host, &sa.sin_addr) != 1 ||
            !(tc = clnttcp_create(&sa, RBENCH_PROG, RBENCH_VERS, &sock, 1 << 20, 1 << 20))) {
            fprintf(stderr, "rpcrdma-bench: libtirpc TCP to %s port %u failed\n", o->host, tport);
            clnt_destroy(rc);
            return 1;
        }
        int one = 1;
        setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    unsigned reps = o->repeat;
    double *v[3][4], *ratio_tcp = calloc(reps, sizeof(double)),
                     *ratio_raw = calloc(reps, sizeof(double));
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 4; k++)
            v[i][k] = calloc(reps, sizeof(double));
    bool raw = o->compare_tcp && o->test != T_NULL;
    int rc_ = 0;
    for (unsigned r = 0; r < reps && !rc_; r++) {
        struct fig f[3] = {{0}};
        if (tc && run_sync(tc, false, o, &f[1]) != 0)
            rc_ = 1;
        if (!rc_ && raw && run_raw(o->host, rawport, o, &f[2]) != 0)
            rc_ = 1;
        if (!rc_ && (o->inflight > 1 ? run_async(rc, o, &f[0]) : run_sync(rc, true, o, &f[0])) != 0)
            rc_ = 1;
        for (int i = 0; i < 3; i++) {
            v[i][0][r] = f[i].cps;
            v[i][1][r] = f[i].gbs;
            v[i][2][r] = f[i].p50;
            v[i][3][r] = f[i].p99;
        }
        /* NULL: the round trip (p50) against TCP's; otherwise calls per second */
        if (tc)
            ratio_tcp[r] = o->test == T_NULL && o->inflight <= 1 && o->client_threads <= 1
                               ? f[0].p50 / f[1].p50
                               : f[0].cps / f[1].cps;
        if (raw)
            ratio_raw[r] = f[0].gbs / f[2].gbs;
    }
    if (!rc_) {
        for (int i = 0; i < 3; i++) {
            if ((i == 1 && !tc) || (i == 2 && !raw))
                continue;
            struct fig m = {median(v[i][0], reps), median(v[i][1], reps), median(v[i][2], reps),
                            median(v[i][3], reps)};
            print_fig(o, i, &m, i == 0 ? o->inflight : 1);
        }
        if (tc) {
            double rt = median(ratio_tcp, reps);
            const char *what = o->test == T_NULL && o->inflight <= 1 && o->client_threads <= 1
                                   ? "round_trip"
                                   : "rate";
            if (o->json)
                printf("{\"test\":\"%s\",\"size\":%u,\"ratio\":\"%s\",\"inflight\":%u,"
                       "\"vs\":\"tcp\",\"value\":%.3f,\"client_threads\":%u}\n",
                       test_name[o->test], o->test == T_NULL ? 0 : o->size, what, o->inflight, rt,
                       o->client_threads);
            else
                printf("ratio %s: %s with %u in flight / libtirpc TCP (synchronous) = %.3f "
                       "(median of %u; calls from %u threads)\n",
                       what, tname(o, 0), o->inflight, rt, reps, o->client_threads);
        }
        if (raw) {
            double rr = median(ratio_raw, reps);
            if (o->json)
                printf("{\"test\":\"%s\",\"size\":%u,\"ratio\":\"bandwidth\",\"inflight\":%u,"
                       "\"vs\":\"raw-tcp\",\"value\":%.3f}\n",
                       test_name[o->test], o->size, o->inflight, rr);
            else
                printf("ratio bandwidth: %s / raw TCP = %.3f (median of %u)\n", tname(o, 0), rr,
                       reps);
        }
    }
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 4; k++)
            free(v[i][k]);
    free(ratio_tcp);
    free(ratio_raw);
    struct uiw_rpc_xprt_stats st;
    if (o->stats && uiw_rpc_clnt_xprt_stats(rc, &st) == 0)
        print_stats(o, "client", &st);
    if (tc)
        clnt_destroy(tc);
    clnt_destroy(rc);
    free(databuf);
    free(lat);
    fflush(stdout);
    return rc_;
}

/* ------------------------------------------------------------------ arguments */

static bool number(const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
    if (!s || !*s || *s == '-' || *s == '+')
        return false;
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static bool size_arg(const char *s, uint32_t *out)
{
    char buf[32];
    size_t n = strlen(s);
    if (n == 0 || n >= sizeof(buf))
        return false;
    memcpy(buf, s, n + 1);
    unsigned long mul = 1;
    if (buf[n - 1] == 'K' || buf[n - 1] == 'k')
        mul = 1024;
    else if (buf[n - 1] == 'M' || buf[n - 1] == 'm')
        mul = 1024 * 1024;
    if (mul > 1)
        buf[n - 1] = 0;
    unsigned long v;
    if (!number(buf, 1, (64ul << 20) / mul, &v))
        return false;
    *out = (uint32_t)(v * mul);
    return true;
}

int main(int argc, char **argv)
{
    enum {
        O_INFLIGHT = 256,
        O_VERS,
        O_TCP,
        O_LOOP,
        O_JSON,
        O_VERSION,
        O_SPIN,
        O_STATS,
        O_THREADS,
        O_CTHREADS
    };
    static const struct option lo[] = {
        {"port", required_argument, NULL, 'p'},
        {"test", required_argument, NULL, 't'},
        {"size", required_argument, NULL, 's'},
        {"duration", required_argument, NULL, 'D'},
        {"repeat", required_argument, NULL, 'r'},
        {"inflight", required_argument, NULL, O_INFLIGHT},
        {"vers", required_argument, NULL, O_VERS},
        {"compare-tcp", no_argument, NULL, O_TCP},
        {"loopback", no_argument, NULL, O_LOOP},
        {"json", no_argument, NULL, O_JSON},
        {"stats", no_argument, NULL, O_STATS},
        {"spin", required_argument, NULL, O_SPIN},
        {"threads", required_argument, NULL, O_THREADS},
        {"client-threads", required_argument, NULL, O_CTHREADS},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, O_VERSION},
        {NULL, 0, NULL, 0},
    };
    struct opts o = {.port = UIW_RPCRDMA_PORT,
                     .vers = 2,
                     .inflight = 1,
                     .repeat = 5,
                     .threads = 2,
                     .client_threads = 1,
                     .secs = 2,
                     .size = 1u << 20,
                     .test = T_NULL};
    bool port_given = false;
    int ch;
    unsigned long v;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "+p:t:s:D:r:h", lo, NULL)) != -1) {
        switch (ch) {
        case 'p':
            if (!number(optarg, 0, 65533, &v))
                goto bad;
            o.port = (unsigned)v;
            port_given = true;
            break;
        case 't':
            if (!strcmp(optarg, "null"))
                o.test = T_NULL;
            else if (!strcmp(optarg, "read"))
                o.test = T_READ;
            else if (!strcmp(optarg, "write"))
                o.test = T_WRITE;
            else
                goto bad;
            break;
        case 's':
            if (!size_arg(optarg, &o.size))
                goto bad;
            break;
        case 'D': {
            char *end;
            errno = 0;
            o.secs = strtod(optarg, &end);
            if (errno || *end || !(o.secs > 0 && o.secs <= 3600))
                goto bad;
            break;
        }
        case 'r':
            if (!number(optarg, 1, 1000, &v))
                goto bad;
            o.repeat = (unsigned)v;
            break;
        case O_INFLIGHT:
            if (!number(optarg, 1, 1024, &v))
                goto bad;
            o.inflight = (unsigned)v;
            break;
        case O_VERS:
            if (!number(optarg, 1, 2, &v))
                goto bad;
            o.vers = (unsigned)v;
            break;
        case O_TCP:
            o.compare_tcp = true;
            break;
        case O_SPIN:
            if (!number(optarg, 0, 100000, &v))
                goto bad;
            o.spin_us = v ? (int)v : -1;
            break;
        case O_THREADS:
            if (!number(optarg, 1, 256, &v))
                goto bad;
            o.threads = (unsigned)v;
            break;
        case O_CTHREADS:
            if (!number(optarg, 1, 256, &v))
                goto bad;
            o.client_threads = (unsigned)v;
            break;
        case O_LOOP:
            o.loopback = true;
            break;
        case O_JSON:
            o.json = true;
            break;
        case O_STATS:
            o.stats = true;
            break;
        case 'h':
            fputs(usage, stdout);
            return fflush(stdout) == 0 ? 0 : 2;
        case O_VERSION:
            printf("rpcrdma-bench (uiw) %s\n", uiw_version_string());
            return fflush(stdout) == 0 ? 0 : 2;
        default:
            goto bad;
        }
    }
    if (argc - optind > 1 || (o.loopback && argc - optind == 1))
        goto bad;
    if ((o.inflight > 1 && o.client_threads > 1) ||
        (size_t)o.size * (o.inflight > o.client_threads ? o.inflight : o.client_threads) >
            (1ull << 31))
        goto bad;
    signal(SIGPIPE, SIG_IGN);
    if (!o.loopback && argc - optind == 0) {
        databuf = NULL;
        return server(&o, o.port, o.spin_us, -1);
    }
    if (!o.loopback) {
        o.host = argv[optind];
        unsigned p = o.port;
        return client(&o, p, p + 1, p + 2);
    }
    /* --loopback: a server process on free ports (or -p's), this process the client */
    int pfd[2];
    if (pipe(pfd) != 0)
        return 1;
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        close(pfd[0]);
        _exit(server(&o, port_given ? o.port : 0, o.spin_us, pfd[1]));
    }
    close(pfd[1]);
    char line[64] = "";
    size_t got = 0;
    ssize_t k;
    while (got < sizeof(line) - 1 && (k = read(pfd[0], line + got, sizeof(line) - 1 - got)) > 0)
        got += (size_t)k;
    close(pfd[0]);
    unsigned rp, tp, xp;
    int status = 1;
    if (sscanf(line, "%u %u %u", &rp, &tp, &xp) == 3) {
        o.host = "127.0.0.1";
        status = client(&o, rp, tp, xp);
    } else {
        fprintf(stderr, "rpcrdma-bench: the server process did not start\n");
    }
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    return status;
bad:
    fprintf(stderr, "rpcrdma-bench: bad arguments\n%s", usage);
    return 2;
}
