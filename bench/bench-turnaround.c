/*
 * bench-turnaround: what the stack adds to a small message, measured in one thread.
 *
 * Both ends of one loopback connection live in this process, each in its own context
 * without a progress thread, and one thread plays both: A posts a 64-byte Send, B polls
 * its CQ until the Send arrived (its poll reads the socket), posts the answer, A polls
 * until the answer arrived. Every message crosses the kernel twice (send(), recv()), as
 * in a ping-pong between two processes, but nothing waits for another CPU, so the time
 * per round trip is the system calls plus the stack's own work, with little of the
 * scheduling noise of a two-process run. The baseline does the same with two plain TCP
 * sockets (send(), then recv() until the bytes are there), in the same run, alternating
 * with the RDMA rounds.
 *
 * Prints the medians per round trip and their ratio (uiw / TCP), and the stack's own time
 * per message (half the difference). Not a target of its own: a development aid for the
 * small-message path (bench-iwperf measures the ping-pong target).
 *
 * usage: bench-turnaround [-r ROUNDS] [-n ITERS] [-s SIZE] [-Q N] [-o uiw|tcp] [-S]
 *   defaults 9 rounds of 20000 round trips of 64 bytes, one Send in 100 signalled (as
 *   iwperf and perftest: -Q 1 signals every one); -o runs only one kind (to profile it,
 *   with perf record for instance), and prints no ratio; -S: each end's QP takes its
 *   receives from a shared receive queue (the receive path of an SRQ server).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <uiw/cm.h>
#include <uiw/verbs.h>

#include "bench_stats.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, int code)
{
    fprintf(stderr, "bench-turnaround: %s: %s\n", what, uiw_strerror(code));
    exit(1);
}

/* ------------------------------------------------------------------------ uiw ends */

struct end {
    struct uiw_context *ctx;
    struct uiw_pd *pd;
    struct uiw_cq *cq;
    struct uiw_cm_id *id;
    struct uiw_srq *srq; /* with -S */
    struct uiw_mr *mr;
    uint8_t *buf; /* [send source | receive slots] */
};

static bool use_srq;

enum { SLOTS = 64, SLOT = 256 };

static void end_open(struct end *e)
{
    struct uiw_context_attr at;
    uiw_context_attr_init(&at);
    at.progress_thread = false;
    at.single_threaded = true; /* one thread plays both ends */
    e->ctx = uiw_open_context(&at);
    if (!e->ctx)
        die("open_context", -errno);
    e->pd = uiw_alloc_pd(e->ctx);
    e->cq = uiw_create_cq(e->ctx, 256, NULL, NULL, 0);
    e->buf = calloc(1 + SLOTS, SLOT);
    if (!e->pd || !e->cq || !e->buf)
        die("resources", -ENOMEM);
    e->mr = uiw_reg_mr(e->pd, e->buf, (size_t)(1 + SLOTS) * SLOT, UIW_ACCESS_LOCAL_WRITE);
    if (!e->mr)
        die("reg_mr", -errno);
    if (use_srq) {
        struct uiw_srq_init_attr sa = {.attr = {.max_wr = SLOTS, .max_sge = 1}};
        e->srq = uiw_create_srq(e->pd, &sa);
        if (!e->srq)
            die("create_srq", -errno);
    }
}

static struct uiw_qp_init_attr qp_attr(struct end *e)
{
    struct uiw_qp_init_attr a = {
        .send_cq = e->cq,
        .recv_cq = e->cq,
        .srq = e->srq,
        .cap = {.max_send_wr = 128, .max_recv_wr = SLOTS, .max_send_sge = 1, .max_recv_sge = 1},
    };
    return a;
}

static struct uiw_cm_event *expect(struct uiw_cm_channel *ch, enum uiw_cm_event_type t)
{
    struct uiw_cm_event *ev = NULL;
    int r = uiw_cm_get_event(ch, &ev, 10000);
    if (r < 0)
        die("cm event", r);
    if (ev->event != t)
        die(uiw_cm_event_str(ev->event), ev->status ? ev->status : -EPROTO);
    return ev;
}

static void post_recv(struct end *e, uint64_t slot)
{
    struct uiw_sge g = {
        .addr = (uintptr_t)(e->buf + (1 + slot) * SLOT), .length = SLOT, .lkey = e->mr->lkey};
    struct uiw_recv_wr wr = {.wr_id = slot, .sg_list = &g, .num_sge = 1}, *bad;
    int r = e->srq ? uiw_post_srq_recv(e->srq, &wr, &bad) : uiw_post_recv(e->id->qp, &wr, &bad);
    if (r < 0)
        die("post_recv", r);
}

static unsigned cq_mod = 100;

static void post_send(struct end *e, uint32_t len)
{
    static unsigned posts;
    struct uiw_sge g = {.addr = (uintptr_t)e->buf, .length = len, .lkey = e->mr->lkey};
    struct uiw_send_wr wr = {.wr_id = 1 << 20,
                             .sg_list = &g,
                             .num_sge = 1,
                             .opcode = UIW_WR_SEND,
                             .send_flags = ++posts % cq_mod == 0 ? UIW_SEND_SIGNALED : 0},
                       *bad;
    int r = uiw_post_send(e->id->qp, &wr, &bad);
    if (r < 0)
        die("post_send", r);
}

/* Poll e's CQ until a receive completed (send completions are reaped on the way); the
 * receive is posted again. */
static void await_recv(struct end *e)
{
    for (;;) {
        struct uiw_wc wc[4];
        int n = uiw_poll_cq(e->cq, 4, wc);
        if (n < 0)
            die("poll_cq", n);
        bool got = false;
        for (int i = 0; i < n; i++) {
            if (wc[i].status != UIW_WC_SUCCESS)
                die(uiw_wc_status_str(wc[i].status), wc[i].vendor_err);
            if (wc[i].opcode == UIW_WC_RECV) {
                post_recv(e, wc[i].wr_id);
                got = true;
            }
        }
        if (got)
            return;
    }
}

struct link {
    struct uiw_cm_channel *ch;
    struct uiw_cm_id *lid;
    struct end a, b;
};

static void link_up(struct link *k)
{
    k->ch = uiw_cm_create_channel();
    if (!k->ch)
        die("cm channel", -errno);
    end_open(&k->a);
    end_open(&k->b);
    k->lid = uiw_cm_create_id(k->ch, k->b.ctx, NULL);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int r = uiw_cm_bind_addr(k->lid, (struct sockaddr *)&sa);
    if (r == 0)
        r = uiw_cm_listen(k->lid, 4, NULL);
    if (r < 0)
        die("listen", r);
    memcpy(&sa, uiw_cm_get_local_addr(k->lid), sizeof(sa));
    k->a.id = uiw_cm_create_id(k->ch, k->a.ctx, NULL);
    struct uiw_qp_init_attr qa = qp_attr(&k->a), qb = qp_attr(&k->b);
    if ((r = uiw_cm_create_qp(k->a.id, k->a.pd, &qa)) < 0 ||
        (r = uiw_cm_connect(k->a.id, (struct sockaddr *)&sa, NULL)) < 0)
        die("connect", r);
    struct uiw_cm_event *ev = expect(k->ch, UIW_CM_EVENT_CONNECT_REQUEST);
    k->b.id = ev->id;
    uiw_cm_ack_event(ev);
    if ((r = uiw_cm_create_qp(k->b.id, k->b.pd, &qb)) < 0 || (r = uiw_cm_accept(k->b.id, NULL)) < 0)
        die("accept", r);
    uiw_cm_ack_event(expect(k->ch, UIW_CM_EVENT_ESTABLISHED));
    uiw_cm_ack_event(expect(k->ch, UIW_CM_EVENT_ESTABLISHED));
    for (uint64_t i = 0; i < SLOTS; i++) {
        post_recv(&k->a, i);
        post_recv(&k->b, i);
    }
}

static void end_close(struct end *e)
{
    uiw_cm_destroy_qp(e->id);
    uiw_cm_destroy_id(e->id);
    if (e->srq)
        uiw_destroy_srq(e->srq);
    uiw_dereg_mr(e->mr);
    uiw_destroy_cq(e->cq);
    uiw_dealloc_pd(e->pd);
    uiw_close_context(e->ctx);
    free(e->buf);
}

static void link_down(struct link *k)
{
    uiw_cm_disconnect(k->a.id);
    for (int i = 0; i < 2; i++)
        uiw_cm_ack_event(expect(k->ch, UIW_CM_EVENT_DISCONNECTED));
    end_close(&k->a);
    end_close(&k->b);
    uiw_cm_destroy_id(k->lid);
    uiw_cm_destroy_channel(k->ch);
}

/* n round trips; their median in ns. */
static uint64_t rdma_round(struct link *k, uint32_t len, size_t n, uint64_t *t)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t t0 = now_ns();
        post_send(&k->a, len);
        await_recv(&k->b);
        post_send(&k->b, len);
        await_recv(&k->a);
        t[i] = now_ns() - t0;
    }
    return bench_median_u64(t, n);
}

/* ------------------------------------------------------------------------ TCP ends */

static void tcp_pair(int fd[2])
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(l, 1) < 0 ||
        getsockname(l, (struct sockaddr *)&sa, &sl) < 0)
        die("tcp listen", -errno);
    fd[0] = socket(AF_INET, SOCK_STREAM, 0);
    if (fd[0] < 0 || connect(fd[0], (struct sockaddr *)&sa, sizeof(sa)) < 0)
        die("tcp connect", -errno);
    fd[1] = accept(l, NULL, NULL);
    if (fd[1] < 0)
        die("tcp accept", -errno);
    close(l);
    int one = 1;
    setsockopt(fd[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void tcp_recv(int fd, uint8_t *b, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t r = recv(fd, b + got, len - got, MSG_DONTWAIT);
        if (r > 0)
            got += (size_t)r;
        else if (r == 0 || (errno != EAGAIN && errno != EINTR))
            die("tcp recv", r == 0 ? -EPIPE : -errno);
    }
}

static void tcp_send(int fd, const uint8_t *b, size_t len)
{
    if (send(fd, b, len, 0) != (ssize_t)len)
        die("tcp send", -errno);
}

static uint64_t tcp_round(const int fd[2], uint8_t *buf, uint32_t len, size_t n, uint64_t *t)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t t0 = now_ns();
        tcp_send(fd[0], buf, len);
        tcp_recv(fd[1], buf + SLOT, len);
        tcp_send(fd[1], buf + SLOT, len);
        tcp_recv(fd[0], buf, len);
        t[i] = now_ns() - t0;
    }
    return bench_median_u64(t, n);
}

/* ------------------------------------------------------------------------ main */

enum { MAXR = 41 };

int main(int argc, char **argv)
{
    int rounds = 9, c;
    size_t iters = 20000;
    uint32_t size = 64;
    const char *only = NULL;
    while ((c = getopt(argc, argv, "r:n:s:o:Q:S")) != -1) {
        switch (c) {
        case 'r':
            rounds = atoi(optarg);
            break;
        case 'n':
            iters = (size_t)strtoul(optarg, NULL, 10);
            break;
        case 's':
            size = (uint32_t)strtoul(optarg, NULL, 10);
            break;
        case 'o':
            only = optarg;
            break;
        case 'Q':
            cq_mod = (unsigned)strtoul(optarg, NULL, 10);
            break;
        case 'S':
            use_srq = true;
            break;
        default:
            fprintf(stderr, "usage: bench-turnaround [-r ROUNDS] [-n ITERS] [-s SIZE] [-Q N] [-o "
                            "uiw|tcp] [-S]\n");
            return 1;
        }
    }
    bool do_uiw = !only || strcmp(only, "uiw") == 0, do_tcp = !only || strcmp(only, "tcp") == 0;
    if (rounds < 1 || rounds > MAXR || iters < 1 || size < 1 || size > SLOT || cq_mod < 1 ||
        cq_mod > 128) {
        fprintf(stderr, "bench-turnaround: rounds 1..%d, iterations >= 1, size 1..%d, -Q 1..128\n",
                MAXR, SLOT);
        return 1;
    }
    uint64_t *t = malloc(iters * sizeof(*t));
    uint8_t *tbuf = calloc(2, SLOT);
    if (!t || !tbuf)
        die("memory", -ENOMEM);
    struct link k;
    memset(&k, 0, sizeof(k));
    link_up(&k);
    int fd[2];
    tcp_pair(fd);
    /* warm both paths up */
    rdma_round(&k, size, iters / 10 + 1, t);
    tcp_round(fd, tbuf, size, iters / 10 + 1, t);

    double r_ns[MAXR], t_ns[MAXR], ratio[MAXR];
    printf(
        "bench-turnaround: %d rounds of %zu round trips of %u bytes, both ends in one thread%s\n",
        rounds, iters, size, use_srq ? ", receives from SRQs" : "");
    for (int i = 0; i < rounds; i++) {
        t_ns[i] = do_tcp ? (double)tcp_round(fd, tbuf, size, iters, t) : 1;
        r_ns[i] = do_uiw ? (double)rdma_round(&k, size, iters, t) : 1;
        ratio[i] = r_ns[i] / t_ns[i];
        printf("  round %d: %.0f / %.0f ns per round trip (uiw / TCP), %.3f\n", i + 1, r_ns[i],
               t_ns[i], ratio[i]);
        fflush(stdout);
    }
    double mr = bench_median(r_ns, (size_t)rounds), mt = bench_median(t_ns, (size_t)rounds),
           mq = bench_median(ratio, (size_t)rounds);
    if (!do_uiw || !do_tcp)
        mq = 0; /* one kind only: no ratio */
    printf("\n%-44s %10s %10s %8s\n", "measurement (medians)", "uiw", "raw TCP", "ratio");
    printf("%-44s %10.0f %10.0f %8.3f\n", "round trip, both ends in one thread [ns]", mr, mt, mq);
    printf("%-44s %10.0f\n", "the stack's own time per message [ns]", (mr - mt) / 2);
    link_down(&k);
    close(fd[0]);
    close(fd[1]);
    free(t);
    free(tbuf);
    return 0;
}
