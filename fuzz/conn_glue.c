/*
 * Fuzz the socket glue (src/io/conn.c) between a real loopback TCP connection and an engine
 * QP: the input's stream reaches the connection in chunks of random sizes while the
 * application polls its CQ (a context without a progress thread: everything runs here),
 * so the staging ring's peek-and-consume, the engine's advice kept across an empty read
 * (the hinted paths), direct reads into posted buffers, partial FPDUs across reads, and the
 * stream's end (EOF or reset) all run as in production. Besides ASan and UBSan, the
 * harness checks that every work request completes, with success or a flush, once the QP
 * is destroyed: nothing is lost silently.
 *
 * Input: byte 0 options (bit 0 CRC, bit 1 the peer inserts markers, bits 2-3 RTR type
 * (none, Send, Write, Read), bit 4 we are the initiator, bit 5 MPA Rev 1, bit 6 large
 * receives, bit 7 end with a reset instead of an EOF), byte 1 seeds the chunk sizes and
 * MULPDU, then the stream the peer sends.
 *
 * The harness keeps a second descriptor of the stack's socket, so that it can end every
 * connection with a reset: no TIME_WAIT piles up across a campaign.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uiw/verbs.h>

#include "io/io.h"

enum { BUF = 1 << 16, NRECV = 8, CQE = 64 };

static struct uiw_context *ctx;
static struct uiw_pd *pd;
static struct uiw_cq *cq;
static struct uiw_mr *mr;
static uint8_t *buf;
static int listener = -1;
static struct sockaddr_in laddr;

static void die(const char *what)
{
    fprintf(stderr, "fuzz-conn_glue: %s (%s)\n", what, strerror(errno));
    abort();
}

static void setup_once(void)
{
    struct uiw_context_attr a;
    uiw_context_attr_init(&a);
    a.progress_thread = false;
    a.pcap_dir = NULL;
    ctx = uiw_open_context(&a);
    pd = ctx ? uiw_alloc_pd(ctx) : NULL;
    cq = ctx ? uiw_create_cq(ctx, CQE, NULL, NULL, 0) : NULL;
    buf = malloc(BUF);
    mr = pd && buf
             ? uiw_reg_mr(pd, buf, BUF,
                          UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | UIW_ACCESS_REMOTE_READ)
             : NULL;
    if (!mr)
        die("context, PD, CQ or MR");
    listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    socklen_t len = sizeof(laddr);
    memset(&laddr, 0, sizeof(laddr));
    laddr.sin_family = AF_INET;
    laddr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (listener < 0 || bind(listener, (struct sockaddr *)&laddr, sizeof(laddr)) < 0 ||
        listen(listener, 4) < 0 || getsockname(listener, (struct sockaddr *)&laddr, &len) < 0)
        die("listener");
}

/* A blocking connect that a signal interrupts (libFuzzer's -timeout alarm) goes on in the
 * background: wait for it to finish instead of calling the interruption a failure. */
static int connect_whole(int fd)
{
    if (connect(fd, (struct sockaddr *)&laddr, sizeof(laddr)) == 0)
        return 0;
    if (errno != EINTR)
        return -1;
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    int n;
    while ((n = poll(&p, 1, -1)) < 0 && errno == EINTR)
        ;
    int err = 0;
    socklen_t len = sizeof(err);
    if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        return -1;
    errno = err;
    return err ? -1 : 0;
}

static void nonblock_nodelay(int fd)
{
    int one = 1;
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
        die("socket options");
}

static void reset_close(int fd)
{
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(fd);
}

static uint32_t rnd_state;

static uint32_t rnd(void)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return rnd_state >> 8;
}

/* Polls (inline progress) and drains what the stack sent the peer (peer -1: the peer is
 * gone). Returns the completions. */
static int pump(int peer)
{
    int got = 0;
    struct uiw_wc wc[8];
    for (int i = 0; i < 4; i++) {
        int n = uiw_poll_cq(cq, 8, wc);
        if (n < 0)
            die("uiw_poll_cq");
        got += n;
        uint8_t sink[4096];
        while (peer >= 0 && read(peer, sink, sizeof(sink)) > 0)
            ;
    }
    return got;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ctx)
        setup_once();
    if (size < 2)
        return 0;
    uint8_t opt = data[0];
    rnd_state = data[1] * 2654435761u + 1;
    data += 2;
    size -= 2;

    struct uiw_qp_init_attr qa = {
        .send_cq = cq,
        .recv_cq = cq,
        .cap = {.max_send_wr = 8, .max_recv_wr = NRECV, .max_send_sge = 2, .max_recv_sge = 2}};
    struct uiw_qp *qp = uiw_create_qp(pd, &qa);
    if (!qp)
        die("uiw_create_qp");
    int posted = 0, completed = 0;
    uint32_t rlen = (opt & 0x40) ? 8192 : 64;
    for (int i = 0; i < NRECV; i++) {
        struct uiw_sge sge = {(uintptr_t)buf + (size_t)i * rlen, rlen, mr->lkey};
        struct uiw_recv_wr wr = {.wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1};
        struct uiw_recv_wr *bad;
        if (uiw_post_recv(qp, &wr, &bad) != 0)
            die("uiw_post_recv");
        posted++;
    }

    int cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (cfd < 0 || connect_whole(cfd) < 0)
        die("connect");
    int afd;
    while ((afd = accept4(listener, NULL, NULL, SOCK_CLOEXEC)) < 0 && errno == EINTR)
        ;
    if (afd < 0)
        die("accept");
    /* the stack gets one end; the harness keeps a second descriptor of it (see above) */
    int keep = dup(cfd);
    if (keep < 0)
        die("dup");
    nonblock_nodelay(cfd);
    nonblock_nodelay(afd);
    int peer = afd;

    struct uiw__conn_params cp = {.mpa_rev = (opt & 0x20) ? 1 : 2,
                                  .crc = opt & 1,
                                  .markers_tx = false,
                                  .markers_rx = (opt & 2) != 0,
                                  .mulpdu = (uint16_t)(50 + (rnd() % 9000)),
                                  .ird = 1,
                                  .ord = 1,
                                  .rtr = (opt & 0x20) ? UIW__RTR_NONE
                                                      : (enum uiw__rtr)((opt >> 2) & 3),
                                  .initiator = (opt & 0x10) != 0};
    struct uiw__conn *c = NULL;
    if (uiw__conn_start(qp, cfd, NULL, NULL, NULL, &cp, &c) != 0) /* no owner to tell */
        die("uiw__conn_start");
    uiw__conn_go(c);

    /* an RDMA Read outstanding, so that Read Responses have somewhere to land */
    struct uiw_sge rs = {(uintptr_t)buf + BUF - 4096, 4096, mr->lkey};
    struct uiw_send_wr rd = {.wr_id = 100,
                             .opcode = UIW_WR_RDMA_READ,
                             .sg_list = &rs,
                             .num_sge = 1,
                             .send_flags = UIW_SEND_SIGNALED};
    rd.wr.rdma.remote_addr = 0x1000;
    rd.wr.rdma.rkey = 0x100;
    struct uiw_send_wr *sbad;
    if (uiw_post_send(qp, &rd, &sbad) == 0)
        posted++;

    for (size_t off = 0; off < size;) {
        size_t k = 1 + rnd() % ((rnd() & 3) ? 64 : 4096);
        if (k > size - off)
            k = size - off;
        ssize_t w = write(peer, data + off, k);
        if (w > 0)
            off += (size_t)w;
        else if (w < 0 && errno != EAGAIN && errno != EINTR)
            break; /* the stack reset the connection */
        completed += pump(peer);
        if (w < 0 && errno == EAGAIN && uiw__qp_state(qp) != UIW_QPS_RTS)
            break; /* nobody reads any more */
    }
    if (opt & 0x80) {
        reset_close(peer);
        peer = -1;
    } else {
        shutdown(peer, SHUT_WR);
    }
    for (int i = 0; i < 8; i++)
        completed += pump(peer);

    if (uiw_destroy_qp(qp) != 0)
        die("uiw_destroy_qp");
    for (int i = 0; i < 4; i++)
        completed += pump(peer);
    if (completed != posted) {
        fprintf(stderr, "fuzz-conn_glue: %d work requests posted, %d completed\n", posted,
                completed);
        abort();
    }
    if (peer >= 0)
        reset_close(peer);
    reset_close(keep);
    return 0;
}
