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
 * with the RDMA rounds. A third kind, the framing floor, does what any iWARP stack must do
 * for a Send and nothing more, over two more TCP sockets: each message goes as one FPDU
 * (MPA length, the untagged DDP header with its RDMAP control byte, the payload, pad and a
 * zero CRC field: 24 bytes more for 64), built with the wire layer (uiw_ddp_hdr_encode,
 * uiw_fpdu_encode, the payload copied in); the receiver reads the FPDU whole and checks
 * its length, header, opcode, QN, MSN and MO (uiw_ddp_hdr_parse, uiw_rdmap_check_ctrl)
 * before it copies the payload out. No queues, no completions, no STags.
 *
 * Prints the medians per round trip and the medians of the paired ratios (uiw / TCP, and
 * the framing floor / TCP), the stack's own time per message (half the difference from
 * TCP) and what of it the framing alone costs. Not a target of its own: a development aid
 * for the small-message path (bench-iwperf measures the ping-pong target).
 *
 * usage: bench-turnaround [-r ROUNDS] [-n ITERS] [-s SIZE] [-Q N] [-o uiw|tcp|frame] [-S]
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
#include <uiw/wire.h>

#include "bench_link.h"
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
    struct bench_link l;
    struct end a, b;
};

static void link_up(struct link *k)
{
    end_open(&k->a);
    end_open(&k->b);
    struct uiw_qp_init_attr qa = qp_attr(&k->a), qb = qp_attr(&k->b);
    const char *what;
    int r = bench_link_up(&k->l, k->a.ctx, k->a.pd, &qa, k->b.ctx, k->b.pd, &qb, &what);
    if (r < 0)
        die(what, r);
    k->a.id = k->l.a;
    k->b.id = k->l.b;
    for (uint64_t i = 0; i < SLOTS; i++) {
        post_recv(&k->a, i);
        post_recv(&k->b, i);
    }
}

static void end_close(struct end *e)
{
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
    const char *what;
    int r = bench_link_down(&k->l, &what);
    if (r < 0)
        die(what, r);
    end_close(&k->a);
    end_close(&k->b);
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

/* ------------------------------------------------------------------------ framing floor */

enum { FRAME_MAX = 2 + UIW_DDP_UNTAGGED_HDR_LEN + SLOT + 3 + 4 }; /* uiw_fpdu_len(18 + SLOT) */

/* One direction of a framed connection: the next MSN to send and the one expected. */
struct framer {
    uint32_t tx_msn, rx_msn;
    uint8_t out[FRAME_MAX], in[FRAME_MAX];
};

static void frame_send(int fd, struct framer *f, const uint8_t *payload, uint32_t len)
{
    struct uiw_ddp_hdr h = {.last = true,
                            .rdmap_ctrl = uiw_rdmap_ctrl(UIW_RDMAP_SEND),
                            .qn = UIW_DDP_QN_SEND,
                            .msn = f->tx_msn++};
    uint8_t hdr[UIW_DDP_UNTAGGED_HDR_LEN];
    if (uiw_ddp_hdr_encode(&h, hdr, sizeof(hdr)) != UIW_DDP_UNTAGGED_HDR_LEN)
        die("frame header", -EINVAL);
    struct uiw_wire_iov v[2] = {{hdr, sizeof(hdr)}, {payload, len}};
    ssize_t n = uiw_fpdu_encode(v, 2, false, f->out, sizeof(f->out));
    if (n < 0)
        die("frame", (int)n);
    tcp_send(fd, f->out, (size_t)n);
}

static void frame_recv(int fd, struct framer *f, uint8_t *slot, uint32_t len)
{
    size_t ulen = UIW_DDP_UNTAGGED_HDR_LEN + len;
    tcp_recv(fd, f->in, uiw_fpdu_len(ulen));
    struct uiw_ddp_hdr h;
    if ((size_t)(f->in[0] << 8 | f->in[1]) != ulen ||
        uiw_ddp_hdr_parse(f->in + 2, ulen, &h) != UIW_DDP_UNTAGGED_HDR_LEN ||
        uiw_rdmap_check_ctrl(&h) != 0 || !h.last ||
        uiw_rdmap_ctrl_opcode(h.rdmap_ctrl) != UIW_RDMAP_SEND || h.qn != UIW_DDP_QN_SEND ||
        h.msn != f->rx_msn++ || h.mo != 0)
        die("frame received", -EPROTO);
    memcpy(slot, f->in + 2 + UIW_DDP_UNTAGGED_HDR_LEN, len);
}

/* As tcp_round, each message framed as a Send FPDU (f[0]: fd[0] to fd[1], f[1] back). */
static uint64_t frame_round(const int fd[2], struct framer f[2], uint8_t *buf, uint32_t len,
                            size_t n, uint64_t *t)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t t0 = now_ns();
        frame_send(fd[0], &f[0], buf, len);
        frame_recv(fd[1], &f[0], buf + SLOT, len);
        frame_send(fd[1], &f[1], buf + SLOT, len);
        frame_recv(fd[0], &f[1], buf, len);
        t[i] = now_ns() - t0;
    }
    return bench_median_u64(t, n);
}

/* ------------------------------------------------------------------------ main */

/* One column of the summary: the value, or "-" when it was not measured. */
static void cell(bool measured, int decimals, double v)
{
    if (measured)
        printf("%10.*f", decimals, v);
    else
        printf("%10s", "-");
}

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
                            "uiw|tcp|frame] [-S]\n");
            return 1;
        }
    }
    bool do_uiw = !only || strcmp(only, "uiw") == 0, do_tcp = !only || strcmp(only, "tcp") == 0,
         do_frame = !only || strcmp(only, "frame") == 0;
    if (!do_uiw && !do_tcp && !do_frame) {
        fprintf(stderr, "bench-turnaround: -o uiw, tcp or frame\n");
        return 1;
    }
    if (rounds < 1 || rounds > MAXR || iters < 1 || size < 1 || size > SLOT || cq_mod < 1 ||
        cq_mod > 128) {
        fprintf(stderr, "bench-turnaround: rounds 1..%d, iterations >= 1, size 1..%d, -Q 1..128\n",
                MAXR, SLOT);
        return 1;
    }
    uint64_t *t = malloc(iters * sizeof(*t));
    uint8_t *tbuf = calloc(2, SLOT);
    struct framer *fr = calloc(2, sizeof(*fr));
    if (!t || !tbuf || !fr)
        die("memory", -ENOMEM);
    struct link k;
    memset(&k, 0, sizeof(k));
    link_up(&k);
    int fd[2], ffd[2];
    tcp_pair(fd);
    tcp_pair(ffd);
    /* warm every path up */
    rdma_round(&k, size, iters / 10 + 1, t);
    tcp_round(fd, tbuf, size, iters / 10 + 1, t);
    frame_round(ffd, fr, tbuf, size, iters / 10 + 1, t);

    double r_ns[MAXR], t_ns[MAXR], f_ns[MAXR], ratio[MAXR], fratio[MAXR];
    printf(
        "bench-turnaround: %d rounds of %zu round trips of %u bytes, both ends in one thread%s\n",
        rounds, iters, size, use_srq ? ", receives from SRQs" : "");
    /* a kind left out (-o) prints "-", and so does what needs it */
    printf("%-12s%10s%10s%10s%10s%10s\n", "ns per", "uiw", "framing", "raw TCP", "uiw /",
           "framing /");
    printf("%-12s%10s%10s%10s%10s%10s\n", "round trip", "", "", "", "TCP", "TCP");
    for (int i = 0; i < rounds; i++) {
        /* the framing floor between the two others, which alternate first (a machine that
         * speeds up or slows down within the round favours neither) */
        bool uiw_first = i % 2 == 1;
        r_ns[i] = do_uiw && uiw_first ? (double)rdma_round(&k, size, iters, t) : 1;
        t_ns[i] = do_tcp && !uiw_first ? (double)tcp_round(fd, tbuf, size, iters, t) : 1;
        f_ns[i] = do_frame ? (double)frame_round(ffd, fr, tbuf, size, iters, t) : 1;
        if (do_uiw && !uiw_first)
            r_ns[i] = (double)rdma_round(&k, size, iters, t);
        if (do_tcp && uiw_first)
            t_ns[i] = (double)tcp_round(fd, tbuf, size, iters, t);
        ratio[i] = r_ns[i] / t_ns[i];
        fratio[i] = f_ns[i] / t_ns[i];
        printf("  round %-4d", i + 1);
        cell(do_uiw, 0, r_ns[i]);
        cell(do_frame, 0, f_ns[i]);
        cell(do_tcp, 0, t_ns[i]);
        cell(do_uiw && do_tcp, 3, ratio[i]);
        cell(do_frame && do_tcp, 3, fratio[i]);
        printf("\n");
        fflush(stdout);
    }
    double mr = bench_median(r_ns, (size_t)rounds), mt = bench_median(t_ns, (size_t)rounds),
           mf = bench_median(f_ns, (size_t)rounds), mq = bench_median(ratio, (size_t)rounds),
           mfq = bench_median(fratio, (size_t)rounds);
    printf("\n%-44s %10s %10s %10s\n", "measurement (medians)", "uiw", "framing", "raw TCP");
    printf("%-44s", "round trip, both ends in one thread [ns]");
    cell(do_uiw, 0, mr);
    cell(do_frame, 0, mf);
    cell(do_tcp, 0, mt);
    printf("\n%-44s", "ratio to raw TCP (median of the rounds)");
    cell(do_uiw && do_tcp, 3, mq);
    cell(do_frame && do_tcp, 3, mfq);
    printf("\n%-44s", "time per message beyond raw TCP [ns]");
    cell(do_uiw && do_tcp, 0, (mr - mt) / 2);
    cell(do_frame && do_tcp, 0, (mf - mt) / 2);
    printf("\n");
    link_down(&k);
    close(fd[0]);
    close(fd[1]);
    close(ffd[0]);
    close(ffd[1]);
    free(t);
    free(tbuf);
    free(fr);
    return 0;
}
