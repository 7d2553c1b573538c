/*
 * iwping: rping (librdmacm's example, Debian rdmacm-utils) over uiw.
 *
 * Same options, same connection parameters (IRD = ORD = 1), same application protocol, so
 * that a kernel `rping -c` can drive an `iwping -s` and `iwping -c` can drive a kernel
 * `rping -s`. One ping:
 *
 *   client: Send {buf, rkey, size} of its source buffer (16 bytes, network byte order)
 *   server: RDMA Read of that buffer into its own buffer
 *   server: Send (16 bytes, "go ahead")
 *   client: Send {buf, rkey, size} of its sink buffer
 *   server: RDMA Write of strlen(data) + 1 bytes into the sink
 *   server: Send (16 bytes, "go ahead")
 *   client: with -V, compares source and sink
 *
 * The client's data is "rdma-ping-<n>: " followed by letters 'A'..'z' starting one later
 * each ping, NUL-terminated at the last byte. The server ends when the client disconnects.
 * With -V the server also checks the data it read against that pattern.
 *
 * rping's -I (the client's source address) and -q (a QP made with uiw_create_qp and set in
 * the cm id, instead of uiw_cm_create_qp) work as in rping.
 * Extra options (long only): --crc (ask for CRC), --markers (ask the peer for markers),
 * --stats (the stack's counters at the end), --version,
 * --mpa-rev N, --pcap DIR (capture each
 * connection, also UIW_PCAP_DIR), --timeout S (bound on every wait, default 60),
 * --retry S (client: for up to S seconds, connect again when the connection was refused
 * or reset before the MPA Reply, each retry said on stderr; any later failure is final),
 * --conns N (with -P:
 * exit after N connections), --p2p (offer peer-to-peer RTR), --bad-rkey (client: advertise
 * an STag that names no region, to provoke a Terminate from our side; a test aid),
 * --start-delay MS (client: wait MS after the connection is established before the first
 * ping: Linux 6.1 siw as the responder can miss an FPDU that arrives while it is still
 * finishing its side of the handshake, and then waits for more data that never comes),
 * --bad-remote-rkey (server: RDMA Read through a wrong key, so the client's RNIC answers
 * with a Terminate; a test aid). After a failed completion iwping prints the Terminate
 * its QP sent or received ("peer Terminate: layer L etype E code C").
 * Exit status 0 when every ping succeeded (and verified with -V). A persistent server (-P)
 * goes on after a failed connection ("connection N failed") and exits 1 at the end.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uiw/cm.h>
#include <uiw/verbs.h>

#include "cli.h"

#define PING_FMT "rdma-ping-%d: "
#define MIN_SIZE 26 /* sizeof("2147483647") + sizeof(PING_FMT), as rping */
#define MAX_SIZE 65535
#define SQ_DEPTH 16
#define INFO_LEN 16
#define NUM_RECV 2
#define WR_SEND  1
#define WR_RDMA  2
#define WR_RECV  100

struct info {
    uint8_t b[INFO_LEN]; /* be64 buf, be32 rkey, be32 size */
};

struct opts {
    int server, verbose, validate, debug, persistent, crc, p2p, bad_rkey, markers;
    int self_qp, stats; /* -q: the QP made with uiw_create_qp; --stats */
    int start_delay_ms, bad_remote_rkey;
    int count, size, conns;
    int mpa_rev;
    int timeout_s, retry_s;
    const char *addr, *pcap, *source; /* -I: the client's source address */
    int port;
};

struct cb {
    const struct opts *o;
    struct uiw_context *ctx;
    struct uiw_cm_channel *cmch;
    struct uiw_cm_id *listen_id, *id;
    struct uiw_pd *pd;
    struct uiw_comp_channel *cch;
    struct uiw_cq *cq;
    struct uiw_qp *qp;
    struct info recv_buf[NUM_RECV], send_buf;
    struct uiw_mr *recv_mr, *send_mr, *rdma_mr, *start_mr;
    char *rdma_buf, *start_buf;
    int disconnected;
    int last_status; /* status of the last connection manager event */
    unsigned cq_events;
};

static int debug;

static void dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void dbg(const char *fmt, ...)
{
    va_list ap;
    if (!debug)
        return;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void put_be(uint8_t *p, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static uint64_t get_be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

static void format_info(struct info *in, const void *buf, uint32_t rkey, uint32_t size)
{
    put_be(in->b, (uint64_t)(uintptr_t)buf, 8);
    put_be(in->b + 8, rkey, 4);
    put_be(in->b + 12, size, 4);
    dbg("RDMA addr %" PRIx64 " rkey %x len %u\n", (uint64_t)(uintptr_t)buf, rkey, size);
}

/* The client's data for ping n (rping's pattern). */
static void fill_ping(char *buf, int size, int ping)
{
    int start = 65 + ping % 58;
    int cc = snprintf(buf, (size_t)size, PING_FMT, ping);
    unsigned char c = (unsigned char)start;
    for (int i = cc; i < size; i++) {
        buf[i] = (char)c;
        if (++c > 122)
            c = 65;
    }
    buf[size - 1] = 0;
}

/* Check data read by the server against the pattern: returns 0 if it is a ping. */
static int check_ping(const char *buf, uint32_t len)
{
    int ping;
    char *want;
    int ok;
    if (len < MIN_SIZE || buf[len - 1] != 0 || sscanf(buf, "rdma-ping-%d: ", &ping) != 1 ||
        ping < 0)
        return -1;
    want = malloc(len);
    if (!want)
        return -1;
    fill_ping(want, (int)len, ping);
    ok = memcmp(want, buf, len) == 0;
    free(want);
    return ok ? 0 : -1;
}

/* Handle pending CM events; returns -1 on a fatal one. */
static int cm_events(struct cb *cb, int timeout_ms, enum uiw_cm_event_type *got)
{
    struct uiw_cm_event *ev;
    int r = uiw_cm_get_event(cb->cmch, &ev, timeout_ms);
    if (r == -EAGAIN)
        return 0;
    if (r < 0) {
        fprintf(stderr, "uiw_cm_get_event: %s\n", uiw_strerror(r));
        return -1;
    }
    dbg("cma_event type %s status %d\n", uiw_cm_event_str(ev->event), ev->status);
    if (got)
        *got = ev->event;
    cb->last_status = ev->status;
    if (ev->event == UIW_CM_EVENT_DISCONNECTED) {
        fprintf(stderr, "%s DISCONNECT EVENT...\n", cb->o->server ? "server" : "client");
        cb->disconnected = 1;
    } else if (ev->event == UIW_CM_EVENT_CONNECT_REQUEST && cb->listen_id && !cb->id) {
        cb->id = ev->id;
    } else if (ev->event == UIW_CM_EVENT_CONNECT_REQUEST) {
        uiw_cm_reject(ev->id, NULL, 0); /* one connection at a time */
    } else if (ev->event != UIW_CM_EVENT_ESTABLISHED) {
        fprintf(stderr, "cma event %s, error %d (%s)\n", uiw_cm_event_str(ev->event), ev->status,
                uiw_strerror(ev->status));
    }
    uiw_cm_ack_event(ev);
    return 1;
}

/* After an error: the Terminate the QP sent or received, if any. */
static void report_terminate(struct cb *cb)
{
    struct uiw_qp_attr qa;
    if (!cb->qp || uiw_query_qp(cb->qp, &qa) != 0)
        return;
    if (qa.term_received)
        fprintf(stderr, "peer Terminate: layer %u etype %u code %u\n", qa.term_layer, qa.term_etype,
                qa.term_code);
    else if (qa.term_sent)
        fprintf(stderr, "sent Terminate: layer %u etype %u code %u\n", qa.term_layer, qa.term_etype,
                qa.term_code);
}

/* Wait for a completion of the given opcode (other successful completions are consumed);
 * returns 0 with *wc, 1 when the connection went away first, -1 on error or timeout. */
static int wait_wc(struct cb *cb, enum uiw_wc_opcode op, struct uiw_wc *out)
{
    double deadline = now_s() + cb->o->timeout_s;
    for (;;) {
        struct uiw_wc wc;
        int n;
        while ((n = uiw_poll_cq(cb->cq, 1, &wc)) == 1) {
            if (wc.status != UIW_WC_SUCCESS) {
                if (wc.status == UIW_WC_WR_FLUSH_ERR) {
                    /* the connection is going away: a disconnect is not an error */
                    double until = now_s() + cb->o->timeout_s;
                    while (!cb->disconnected && now_s() < until)
                        if (cm_events(cb, 100, NULL) < 0)
                            break;
                    if (cb->disconnected) {
                        report_terminate(cb);
                        return 1;
                    }
                }
                fprintf(stderr, "cq completion failed status %d (%s)\n", (int)wc.status,
                        uiw_wc_status_str(wc.status));
                report_terminate(cb);
                return -1;
            }
            dbg("%s completion\n", wc.opcode == UIW_WC_SEND         ? "send"
                                   : wc.opcode == UIW_WC_RECV       ? "recv"
                                   : wc.opcode == UIW_WC_RDMA_READ  ? "rdma read"
                                   : wc.opcode == UIW_WC_RDMA_WRITE ? "rdma write"
                                                                    : "other");
            if (wc.opcode == op) {
                *out = wc;
                return 0;
            }
            if (wc.opcode != UIW_WC_SEND) {
                fprintf(stderr, "unexpected completion opcode %d\n", (int)wc.opcode);
                return -1;
            }
        }
        if (n < 0) {
            fprintf(stderr, "poll error %d\n", n);
            return -1;
        }
        if (cb->disconnected)
            return 1;
        double left = deadline - now_s();
        if (left <= 0) {
            fprintf(stderr, "timeout waiting for a completion\n");
            return -1;
        }
        struct pollfd pfd[2] = {{uiw_comp_channel_fd(cb->cch), POLLIN, 0},
                                {uiw_cm_channel_fd(cb->cmch), POLLIN, 0}};
        int ms = left > 0.05 ? 50 : (int)(left * 1000) + 1;
        if (poll(pfd, 2, ms) < 0 && errno != EINTR) {
            perror("poll");
            return -1;
        }
        if (pfd[0].revents & POLLIN) {
            struct uiw_cq *ev_cq;
            void *ev_ctx;
            if (uiw_get_cq_event(cb->cch, &ev_cq, &ev_ctx) == 0) {
                cb->cq_events++;
                uiw_req_notify_cq(cb->cq, 0);
            }
        }
        if ((pfd[1].revents & POLLIN) && cm_events(cb, 0, NULL) < 0)
            return -1;
    }
}

static int post_send_info(struct cb *cb)
{
    struct uiw_sge sge = {(uint64_t)(uintptr_t)&cb->send_buf, INFO_LEN, cb->send_mr->lkey};
    struct uiw_send_wr wr = {0}, *bad;
    wr.wr_id = WR_SEND;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = UIW_WR_SEND;
    wr.send_flags = UIW_SEND_SIGNALED;
    int r = uiw_post_send(cb->qp, &wr, &bad);
    if (r)
        fprintf(stderr, "post send error %d (%s)\n", r, uiw_strerror(r));
    return r;
}

static int post_recv(struct cb *cb, int i)
{
    struct uiw_sge sge = {(uint64_t)(uintptr_t)&cb->recv_buf[i], INFO_LEN, cb->recv_mr->lkey};
    struct uiw_recv_wr wr = {0}, *bad;
    wr.wr_id = WR_RECV + (uint64_t)i;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    int r = uiw_post_recv(cb->qp, &wr, &bad);
    if (r)
        fprintf(stderr, "post recv error %d (%s)\n", r, uiw_strerror(r));
    return r;
}

/* Wait for a 16-byte receive; returns its buffer index, -2 on disconnect, -1 on error. */
static int wait_recv(struct cb *cb)
{
    struct uiw_wc wc;
    int r = wait_wc(cb, UIW_WC_RECV, &wc);
    if (r == 1)
        return -2;
    if (r < 0)
        return -1;
    if (wc.byte_len != INFO_LEN) {
        fprintf(stderr, "Received bogus data, size %u\n", wc.byte_len);
        return -1;
    }
    int i = (int)(wc.wr_id - WR_RECV);
    if (i < 0 || i >= NUM_RECV)
        return -1;
    return i;
}

static int rdma_op(struct cb *cb, enum uiw_wr_opcode op, uint32_t len, uint32_t rkey,
                   uint64_t raddr)
{
    struct uiw_sge sge = {(uint64_t)(uintptr_t)cb->rdma_buf, len, cb->rdma_mr->lkey};
    struct uiw_send_wr wr = {0}, *bad;
    struct uiw_wc wc;
    wr.wr_id = WR_RDMA;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.send_flags = UIW_SEND_SIGNALED;
    wr.wr.rdma.rkey = rkey;
    wr.wr.rdma.remote_addr = raddr;
    int r = uiw_post_send(cb->qp, &wr, &bad);
    if (r) {
        fprintf(stderr, "post send error %d (%s)\n", r, uiw_strerror(r));
        return -1;
    }
    r = wait_wc(cb, op == UIW_WR_RDMA_READ ? UIW_WC_RDMA_READ : UIW_WC_RDMA_WRITE, &wc);
    return r == 0 ? 0 : -1;
}

static int setup_qp(struct cb *cb, struct uiw_cm_id *id)
{
    const struct opts *o = cb->o;
    struct uiw_qp_init_attr qa;
    cb->pd = uiw_alloc_pd(cb->ctx);
    cb->cch = cb->pd ? uiw_create_comp_channel(cb->ctx) : NULL;
    cb->cq = cb->cch ? uiw_create_cq(cb->ctx, SQ_DEPTH * 2, cb, cb->cch, 0) : NULL;
    if (!cb->cq) {
        perror("setup_qp");
        return -1;
    }
    uiw_req_notify_cq(cb->cq, 0);
    memset(&qa, 0, sizeof(qa));
    qa.send_cq = cb->cq;
    qa.recv_cq = cb->cq;
    qa.cap.max_send_wr = SQ_DEPTH;
    qa.cap.max_recv_wr = NUM_RECV;
    qa.cap.max_send_sge = 1;
    qa.cap.max_recv_sge = 1;
    qa.max_ird = 1;
    qa.max_ord = 1;
    int r = 0;
    if (o->self_qp) {
        /* rping -q: a QP of our own, handed to the connection manager through the id */
        struct uiw_qp *qp = uiw_create_qp(cb->pd, &qa);
        if (!qp)
            r = -errno;
        else
            id->qp = qp;
    } else {
        r = uiw_cm_create_qp(id, cb->pd, &qa);
    }
    if (r) {
        fprintf(stderr, "create_qp: %s\n", uiw_strerror(r));
        return -1;
    }
    cb->qp = id->qp;
    cb->recv_mr = uiw_reg_mr(cb->pd, cb->recv_buf, sizeof(cb->recv_buf), UIW_ACCESS_LOCAL_WRITE);
    cb->send_mr = uiw_reg_mr(cb->pd, &cb->send_buf, sizeof(cb->send_buf), 0);
    cb->rdma_buf = calloc(1, (size_t)o->size);
    unsigned acc = UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_READ | UIW_ACCESS_REMOTE_WRITE;
    cb->rdma_mr = cb->rdma_buf ? uiw_reg_mr(cb->pd, cb->rdma_buf, (size_t)o->size, acc) : NULL;
    if (!o->server) {
        cb->start_buf = calloc(1, (size_t)o->size);
        cb->start_mr =
            cb->start_buf ? uiw_reg_mr(cb->pd, cb->start_buf, (size_t)o->size, acc) : NULL;
    }
    if (!cb->recv_mr || !cb->send_mr || !cb->rdma_mr || (!o->server && !cb->start_mr)) {
        perror("reg_mr");
        return -1;
    }
    for (int i = 0; i < NUM_RECV; i++)
        if (post_recv(cb, i))
            return -1;
    return 0;
}

static void free_qp(struct cb *cb)
{
    if (cb->id && cb->qp && cb->o->self_qp) {
        uiw_destroy_qp(cb->qp);
        cb->id->qp = NULL;
    } else if (cb->id && cb->qp) {
        uiw_cm_destroy_qp(cb->id);
    }
    cb->qp = NULL;
    if (cb->start_mr)
        uiw_dereg_mr(cb->start_mr);
    if (cb->rdma_mr)
        uiw_dereg_mr(cb->rdma_mr);
    if (cb->send_mr)
        uiw_dereg_mr(cb->send_mr);
    if (cb->recv_mr)
        uiw_dereg_mr(cb->recv_mr);
    cb->start_mr = cb->rdma_mr = cb->send_mr = cb->recv_mr = NULL;
    free(cb->start_buf);
    free(cb->rdma_buf);
    cb->start_buf = cb->rdma_buf = NULL;
    if (cb->cq) {
        /* collect CQ events still queued on the channel, then acknowledge them all */
        struct pollfd pfd = {uiw_comp_channel_fd(cb->cch), POLLIN, 0};
        struct uiw_cq *ev_cq;
        void *ev_ctx;
        while (poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN) &&
               uiw_get_cq_event(cb->cch, &ev_cq, &ev_ctx) == 0)
            cb->cq_events++;
        if (cb->cq_events)
            uiw_ack_cq_events(cb->cq, cb->cq_events);
        int r = uiw_destroy_cq(cb->cq);
        if (r)
            fprintf(stderr, "destroy_cq: %s\n", uiw_strerror(r));
    }
    cb->cq_events = 0;
    if (cb->cch) {
        int r = uiw_destroy_comp_channel(cb->cch);
        if (r)
            fprintf(stderr, "destroy_comp_channel: %s\n", uiw_strerror(r));
    }
    if (cb->pd) {
        int r = uiw_dealloc_pd(cb->pd);
        if (r)
            fprintf(stderr, "dealloc_pd: %s\n", uiw_strerror(r));
    }
    cb->cq = NULL;
    cb->cch = NULL;
    cb->pd = NULL;
}

static void conn_param(const struct opts *o, struct uiw_conn_param *p)
{
    memset(p, 0, sizeof(*p));
    p->responder_resources = 1;
    p->initiator_depth = 1;
    p->mpa_rev = (uint8_t)o->mpa_rev;
    p->crc = o->crc != 0;
    p->markers = o->markers != 0;
    p->peer2peer = o->p2p != 0;
    p->timeout_ms = (uint32_t)o->timeout_s * 1000u;
    p->pcap_dir = o->pcap;
}

/* Wait for the DISCONNECTED event after our own disconnect (bounded). */
static void wait_disconnected(struct cb *cb)
{
    double deadline = now_s() + cb->o->timeout_s;
    while (!cb->disconnected && now_s() < deadline)
        if (cm_events(cb, 100, NULL) < 0)
            break;
}

static int server_pings(struct cb *cb)
{
    const struct opts *o = cb->o;
    int pings = 0;
    for (;;) {
        int i = wait_recv(cb);
        if (i == -2)
            break; /* the client is done */
        if (i < 0)
            return -1;
        uint64_t raddr = get_be(cb->recv_buf[i].b, 8);
        uint32_t rkey = (uint32_t)get_be(cb->recv_buf[i].b + 8, 4);
        uint32_t rlen = (uint32_t)get_be(cb->recv_buf[i].b + 12, 4);
        dbg("Received rkey %x addr %" PRIx64 " len %u from peer\n", rkey, raddr, rlen);
        if (post_recv(cb, i))
            return -1;
        if (rlen > (uint32_t)o->size || rlen == 0) {
            fprintf(stderr, "client buffer size %u does not fit ours (%d)\n", rlen, o->size);
            return -1;
        }
        memset(cb->rdma_buf, 0, (size_t)o->size);
        /* --bad-remote-rkey: read through a key the client never issued, so that the
         * client's RNIC answers with a Terminate */
        if (rdma_op(cb, UIW_WR_RDMA_READ, rlen, o->bad_remote_rkey ? rkey ^ 0xFFu : rkey, raddr))
            return -1;
        dbg("server received read complete\n");
        if (o->verbose)
            printf("server ping data: %s\n", cb->rdma_buf);
        if (o->validate && check_ping(cb->rdma_buf, rlen)) {
            fprintf(stderr, "data mismatch in ping read from the client!\n");
            return -1;
        }
        memset(&cb->send_buf, 0, sizeof(cb->send_buf));
        if (post_send_info(cb))
            return -1;
        i = wait_recv(cb);
        if (i < 0) {
            fprintf(stderr, "wait for RDMA_WRITE_ADV failed\n");
            return -1;
        }
        raddr = get_be(cb->recv_buf[i].b, 8);
        rkey = (uint32_t)get_be(cb->recv_buf[i].b + 8, 4);
        rlen = (uint32_t)get_be(cb->recv_buf[i].b + 12, 4);
        if (post_recv(cb, i))
            return -1;
        uint32_t wlen = (uint32_t)strnlen(cb->rdma_buf, (size_t)o->size - 1) + 1;
        if (wlen > rlen) {
            fprintf(stderr, "sink of %u bytes too small for %u\n", rlen, wlen);
            return -1;
        }
        if (rdma_op(cb, UIW_WR_RDMA_WRITE, wlen, rkey, raddr))
            return -1;
        dbg("server rdma write complete\n");
        if (post_send_info(cb))
            return -1;
        pings++;
        fflush(stdout);
    }
    printf("server: %d pings\n", pings);
    return 0;
}

static int run_server(struct cb *cb)
{
    const struct opts *o = cb->o;
    struct addrinfo hints = {0}, *res = NULL;
    char port[16];
    int served = 0, rc = 0, failed = 0;

    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(port, sizeof(port), "%d", o->port);
    if (getaddrinfo(o->addr, port, &hints, &res) != 0 || !res) {
        fprintf(stderr, "getaddrinfo failed for %s\n", o->addr ? o->addr : "(any)");
        return 1;
    }
    cb->listen_id = uiw_cm_create_id(cb->cmch, cb->ctx, cb);
    int r = cb->listen_id ? uiw_cm_bind_addr(cb->listen_id, res->ai_addr) : -errno;
    freeaddrinfo(res);
    if (r) {
        fprintf(stderr, "bind: %s\n", uiw_strerror(r));
        return 1;
    }
    struct uiw_conn_param lp;
    conn_param(o, &lp);
    r = uiw_cm_listen(cb->listen_id, 3, &lp);
    if (r) {
        fprintf(stderr, "listen: %s\n", uiw_strerror(r));
        return 1;
    }
    /* -p 0: the port the system picked, which is what the caller needs to know */
    const struct sockaddr *la = uiw_cm_get_local_addr(cb->listen_id);
    int lport = o->port;
    if (la && la->sa_family == AF_INET)
        lport = ntohs(((const struct sockaddr_in *)la)->sin_port);
    else if (la && la->sa_family == AF_INET6)
        lport = ntohs(((const struct sockaddr_in6 *)la)->sin6_port);
    printf("iwping server listening on port %d\n", lport);
    fflush(stdout);

    do {
        double deadline = now_s() + o->timeout_s;
        cb->id = NULL;
        cb->disconnected = 0;
        while (!cb->id) {
            if (now_s() > deadline) {
                fprintf(stderr, "timeout waiting for a connection\n");
                return 1;
            }
            if (cm_events(cb, 200, NULL) < 0)
                return 1;
        }
        if (cb->id->verbs == NULL)
            cb->id->verbs = cb->ctx;
        if (setup_qp(cb, cb->id)) {
            rc = 1;
            break;
        }
        struct uiw_conn_param ap;
        int conn_rc = 0;
        conn_param(o, &ap);
        r = uiw_cm_accept(cb->id, &ap);
        if (r) {
            fprintf(stderr, "accept: %s\n", uiw_strerror(r));
            conn_rc = 1;
        } else {
            enum uiw_cm_event_type got = UIW_CM_EVENT_CONNECT_ERROR;
            while ((r = cm_events(cb, 200, &got)) == 0 && now_s() < deadline)
                ;
            if (r <= 0 || got != UIW_CM_EVENT_ESTABLISHED) {
                fprintf(stderr, "connection not established\n");
                conn_rc = 1;
            } else {
                struct uiw_qp_attr qa;
                if (uiw_query_qp(cb->qp, &qa) == 0)
                    dbg("established: MPA rev %u crc %d ird %u ord %u mulpdu %u\n", qa.mpa_rev,
                        qa.crc, qa.ird, qa.ord, qa.mulpdu);
                if (server_pings(cb))
                    conn_rc = 1;
                if (!cb->disconnected) {
                    uiw_cm_disconnect(cb->id);
                    wait_disconnected(cb);
                }
            }
        }
        free_qp(cb);
        uiw_cm_destroy_id(cb->id);
        cb->id = NULL;
        served++;
        if (conn_rc) {
            failed++;
            fprintf(stderr, "connection %d failed\n", served);
        }
    } while (o->persistent && (o->conns == 0 || served < o->conns));
    return rc ? rc : failed ? 1 : 0;
}

static int client_pings(struct cb *cb)
{
    const struct opts *o = cb->o;
    for (int ping = 0; !o->count || ping < o->count; ping++) {
        fill_ping(cb->start_buf, o->size, ping);
        /* --bad-rkey: advertise an STag that names no region, so the server's RDMA Read
         * makes our side answer with a Terminate (RDMAP / Remote Protection / Invalid
         * STag) */
        uint32_t rkey =
            o->bad_rkey ? 0x00FFFE00u | (cb->start_mr->rkey & 0xFFu) : cb->start_mr->rkey;
        format_info(&cb->send_buf, cb->start_buf, rkey, (uint32_t)o->size);
        if (post_send_info(cb))
            return -1;
        int i = wait_recv(cb);
        if (i < 0) {
            fprintf(stderr, "wait for RDMA_WRITE_ADV state failed\n");
            return -1;
        }
        if (post_recv(cb, i))
            return -1;
        memset(cb->rdma_buf, 0, (size_t)o->size);
        format_info(&cb->send_buf, cb->rdma_buf, cb->rdma_mr->rkey, (uint32_t)o->size);
        if (post_send_info(cb))
            return -1;
        i = wait_recv(cb);
        if (i < 0) {
            fprintf(stderr, "wait for RDMA_WRITE_COMPLETE state failed\n");
            return -1;
        }
        if (post_recv(cb, i))
            return -1;
        if (o->validate && memcmp(cb->start_buf, cb->rdma_buf, (size_t)o->size) != 0) {
            fprintf(stderr, "data mismatch!\n");
            return -1;
        }
        if (o->verbose)
            printf("ping data: %s\n", cb->rdma_buf);
        fflush(stdout);
    }
    return 0;
}

static int run_client(struct cb *cb)
{
    const struct opts *o = cb->o;
    struct addrinfo hints = {0}, *res = NULL;
    char port[16];
    double retry_until = now_s() + o->retry_s;

    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    snprintf(port, sizeof(port), "%d", o->port);
    if (!o->addr || getaddrinfo(o->addr, port, &hints, &res) != 0 || !res) {
        fprintf(stderr, "getaddrinfo failed (%s) - invalid hostname or IP address\n",
                o->addr ? o->addr : "no -a");
        return 1;
    }
    /* -I: the source address (any port), of the server address's family */
    struct addrinfo *src = NULL;
    if (o->source) {
        struct addrinfo sh = {.ai_family = res->ai_family,
                              .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_NUMERICSERV | AI_PASSIVE};
        if (getaddrinfo(o->source, "0", &sh, &src) != 0 || !src) {
            fprintf(stderr, "getaddrinfo failed (%s) - invalid source address\n", o->source);
            freeaddrinfo(res);
            return 1;
        }
    }
    for (int attempt = 1;; attempt++) {
        enum uiw_cm_event_type got = UIW_CM_EVENT_CONNECT_ERROR;
        struct uiw_conn_param cp;
        int r;
        cb->disconnected = 0;
        cb->last_status = 0;
        cb->id = uiw_cm_create_id(cb->cmch, cb->ctx, cb);
        if (!cb->id || setup_qp(cb, cb->id)) {
            freeaddrinfo(res);
            return 1;
        }
        if (src) {
            r = uiw_cm_bind_addr(cb->id, src->ai_addr);
            if (r) {
                fprintf(stderr, "bind %s: %s\n", o->source, uiw_strerror(r));
                freeaddrinfo(res);
                freeaddrinfo(src);
                return 1;
            }
        }
        conn_param(o, &cp);
        r = uiw_cm_connect(cb->id, res->ai_addr, &cp);
        if (r == 0) {
            double deadline = now_s() + o->timeout_s;
            while ((r = cm_events(cb, 200, &got)) == 0 && now_s() < deadline)
                ;
        } else {
            fprintf(stderr, "connect: %s\n", uiw_strerror(r));
        }
        if (r > 0 && got == UIW_CM_EVENT_ESTABLISHED)
            break;
        free_qp(cb);
        uiw_cm_destroy_id(cb->id);
        cb->id = NULL;
        /* only a connection that never got as far as the MPA Reply is tried again: refused,
         * or reset (or closed) before the Reply; a reject, a bad Reply or a timeout is an
         * answer, and final */
        bool early =
            r > 0 && ((got == UIW_CM_EVENT_UNREACHABLE && cb->last_status == -ECONNREFUSED) ||
                      (got == UIW_CM_EVENT_CONNECT_ERROR && cb->last_status == -ECONNRESET));
        if (!early || now_s() >= retry_until) {
            fprintf(stderr, "connect error\n");
            freeaddrinfo(res);
            if (src)
                freeaddrinfo(src);
            return 1;
        }
        fprintf(stderr, "iwping: connection %s before the MPA Reply (attempt %d), retrying\n",
                cb->last_status == -ECONNREFUSED ? "refused" : "reset", attempt);
        usleep(300000);
    }
    freeaddrinfo(res);
    if (src)
        freeaddrinfo(src);
    struct uiw_qp_attr qa;
    if (uiw_query_qp(cb->qp, &qa) == 0)
        dbg("established: MPA rev %u crc %d ird %u ord %u mulpdu %u\n", qa.mpa_rev, qa.crc, qa.ird,
            qa.ord, qa.mulpdu);
    if (o->start_delay_ms > 0)
        usleep((useconds_t)o->start_delay_ms * 1000u);
    int rc = client_pings(cb) ? 1 : 0;
    if (rc)
        fprintf(stderr, "rping client failed\n");
    if (!cb->disconnected) {
        uiw_cm_disconnect(cb->id);
        wait_disconnected(cb);
    }
    free_qp(cb);
    uiw_cm_destroy_id(cb->id);
    cb->id = NULL;
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f, "iwping -s [-vVdPq] [-S size] [-C count] [-a addr] [-p port]\n");
    fprintf(f, "iwping -c [-vVdq] [-S size] [-C count] [-I addr] -a addr [-p port]\n");
    fprintf(f, "\t-c\t\tclient side\n");
    fprintf(f, "\t-s\t\tserver side\n");
    fprintf(f, "\t-v\t\tdisplay ping data to stdout\n");
    fprintf(f, "\t-V\t\tvalidate ping data\n");
    fprintf(f, "\t-d\t\tdebug printfs\n");
    fprintf(f, "\t-S size \tping data size (%d to %d)\n", MIN_SIZE, MAX_SIZE);
    fprintf(f, "\t-C count\tping count times\n");
    fprintf(f, "\t-a addr\t\taddress\n");
    fprintf(f, "\t-I addr\t\tsource address (client)\n");
    fprintf(f, "\t-p port\t\tport (default 7174; server: 0 picks a free one, printed)\n");
    fprintf(f, "\t-P\t\tpersistent server: one connection after another\n");
    fprintf(f, "\t-q\t\tuse a self-created QP (uiw_create_qp), handed to the connection manager\n");
    fprintf(f, "\t--stats\t\tprint the stack's counters at the end\n");
    fprintf(f, "\t--crc --mpa-rev N --p2p --pcap DIR --timeout S --retry S --conns N "
               "--bad-rkey\n\t--markers --start-delay MS --bad-remote-rkey\n");
    fprintf(f, "\t-h, --help\tthis help;  --version\tthe version\n");
}

/* --stats: the context's counters. */
static void print_stats(struct uiw_context *ctx)
{
    struct uiw_context_stats st;
    if (uiw_query_context_stats(ctx, &st) < 0)
        return;
    printf("stats: tx %" PRIu64 " bytes in %" PRIu64 " FPDUs, rx %" PRIu64 " bytes in %" PRIu64
           " FPDUs, payload %" PRIu64 " bytes placed, %" PRIu64 " bytes copied, Terminates %" PRIu64
           " sent, %" PRIu64 " received, CRC errors %" PRIu64 ", async events dropped %" PRIu64
           "\n",
           st.tx_bytes, st.tx_fpdus, st.rx_bytes, st.rx_fpdus, st.placed_payload_bytes,
           st.copied_payload_bytes, st.terminates_sent, st.terminates_received, st.crc_errors,
           st.async_events_dropped);
    fflush(stdout);
}

/* A number option's value, whole and in range, or a usage error (exit 2). */
static int number(const char *opt, const char *v, int min, int max)
{
    int n;
    if (cli_int(v, min, max, &n) < 0) {
        fprintf(stderr, "iwping: %s wants a number from %d to %d, not '%s'\n", opt, min, max, v);
        exit(CLI_USAGE);
    }
    return n;
}

int main(int argc, char **argv)
{
    struct opts o = {.server = -1, .size = 64, .port = 7174, .timeout_s = 60, .mpa_rev = 2};
    static const struct option lopts[] = {{"crc", no_argument, NULL, 1000},
                                          {"mpa-rev", required_argument, NULL, 1001},
                                          {"pcap", required_argument, NULL, 1002},
                                          {"timeout", required_argument, NULL, 1003},
                                          {"retry", required_argument, NULL, 1004},
                                          {"conns", required_argument, NULL, 1005},
                                          {"p2p", no_argument, NULL, 1006},
                                          {"bad-rkey", no_argument, NULL, 1007},
                                          {"markers", no_argument, NULL, 1008},
                                          {"start-delay", required_argument, NULL, 1009},
                                          {"bad-remote-rkey", no_argument, NULL, 1010},
                                          {"stats", no_argument, NULL, 1011},
                                          {"version", no_argument, NULL, 1012},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    int op;
    opterr = 0;
    while ((op = getopt_long(argc, argv, ":a:I:Pp:C:S:scvVdqh", lopts, NULL)) != -1) {
        switch (op) {
        case 'a':
            o.addr = optarg;
            break;
        case 'I':
            o.source = optarg;
            break;
        case 'P':
            o.persistent = 1;
            break;
        case 'p':
            o.port = number("-p", optarg, 0, 65535);
            break;
        case 's':
            o.server = 1;
            break;
        case 'c':
            o.server = 0;
            break;
        case 'S':
            o.size = number("-S", optarg, 0, 2147483647);
            if (o.size < MIN_SIZE || o.size > MAX_SIZE) { /* rping's words */
                fprintf(stderr, "Invalid size %d (valid range is %d to %d)\n", o.size, MIN_SIZE,
                        MAX_SIZE);
                return CLI_USAGE;
            }
            break;
        case 'C':
            o.count = number("-C", optarg, 0, 2147483647);
            break;
        case 'v':
            o.verbose++;
            break;
        case 'V':
            o.validate++;
            break;
        case 'd':
            debug++;
            break;
        case 'q':
            o.self_qp = 1;
            break;
        case 1000:
            o.crc = 1;
            break;
        case 1001:
            o.mpa_rev = number("--mpa-rev", optarg, 1, 2);
            break;
        case 1002:
            o.pcap = optarg;
            break;
        case 1003:
            o.timeout_s = number("--timeout", optarg, 1, 86400);
            break;
        case 1004:
            o.retry_s = number("--retry", optarg, 0, 86400);
            break;
        case 1005:
            o.conns = number("--conns", optarg, 0, 2147483647);
            break;
        case 1006:
            o.p2p = 1;
            break;
        case 1007:
            o.bad_rkey = 1;
            break;
        case 1008:
            o.markers = 1;
            break;
        case 1009:
            o.start_delay_ms = number("--start-delay", optarg, 0, 3600000);
            break;
        case 1010:
            o.bad_remote_rkey = 1;
            break;
        case 1011:
            o.stats = 1;
            break;
        case 1012:
            return cli_version("iwping");
        case 'h':
            usage(stdout);
            return CLI_OK;
        case ':':
            fprintf(stderr, "iwping: option %s needs a value\n", argv[optind - 1]);
            usage(stderr);
            return CLI_USAGE;
        default:
            fprintf(stderr, "iwping: unknown option %s\n", argv[optind - 1]);
            usage(stderr);
            return CLI_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "iwping: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return CLI_USAGE;
    }
    if (o.server == -1) {
        fprintf(stderr, "iwping: -s (server) or -c (client)?\n");
        usage(stderr);
        return CLI_USAGE;
    }
    if (!o.server && o.port == 0) {
        fprintf(stderr, "iwping: a client needs the server's port (-p 0 is for a server)\n");
        return CLI_USAGE;
    }
    if (o.server && o.source) {
        fprintf(stderr, "iwping: -I (source address) is for the client\n");
        return CLI_USAGE;
    }

    struct cb cb;
    memset(&cb, 0, sizeof(cb));
    cb.o = &o;
    struct uiw_context_attr ca;
    uiw_context_attr_init(&ca);
    ca.pcap_dir = o.pcap;
    cb.ctx = uiw_open_context(&ca);
    cb.cmch = cb.ctx ? uiw_cm_create_channel() : NULL;
    if (!cb.cmch) {
        perror("iwping: open");
        return 1;
    }
    int rc = o.server ? run_server(&cb) : run_client(&cb);
    if (o.stats)
        print_stats(cb.ctx);
    if (cb.listen_id)
        uiw_cm_destroy_id(cb.listen_id);
    uiw_cm_destroy_channel(cb.cmch);
    uiw_close_context(cb.ctx);
    return rc;
}
