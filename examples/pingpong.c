/*
 * pingpong: a message bounced between two processes with Send and Receive, as libibverbs'
 * ibv_rc_pingpong does.
 *
 *   server:  pingpong [-p PORT] [-n ITERS] [-s SIZE]
 *   client:  pingpong [-p PORT] [-n ITERS] [-s SIZE] HOST
 *
 * The connection manager (uiw/cm.h) connects the queue pair; from then on both sides use
 * verbs only (uiw/verbs.h): the client sends SIZE bytes, the server's receive completes
 * and it sends them back, ITERS times. Between messages each side sleeps on its completion
 * channel. The server prints the port it listens on (PORT 0, the default, lets the system
 * choose); the client prints the average round trip.
 *
 * Build: cc pingpong.c $(pkg-config --cflags --libs uiw) -o pingpong
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uiw/cm.h>
#include <uiw/verbs.h>

struct pingpong {
    struct uiw_context *ctx;
    struct uiw_pd *pd;
    struct uiw_comp_channel *cch;
    struct uiw_cq *cq;
    struct uiw_cm_channel *cmch;
    struct uiw_cm_id *listen_id, *id;
    char *buf;
    struct uiw_mr *mr;
    uint32_t size;
    unsigned cq_events;
};

static int fail(const char *what, int code)
{
    fprintf(stderr, "pingpong: %s: %s\n", what, uiw_strerror(code));
    return -1;
}

/* Wait for the next completion: poll the CQ, and when it is empty arm it and sleep on
 * its channel (polling once more after arming, so that no completion slips between). */
static int next_wc(struct pingpong *pp, struct uiw_wc *wc)
{
    for (;;) {
        int n = uiw_poll_cq(pp->cq, 1, wc);
        if (n < 0)
            return fail("uiw_poll_cq", n);
        if (n == 1) {
            if (wc->status != UIW_WC_SUCCESS) {
                fprintf(stderr, "pingpong: completion failed: %s\n", uiw_wc_status_str(wc->status));
                return -1;
            }
            return 0;
        }
        int r = uiw_req_notify_cq(pp->cq, 0);
        if (r < 0)
            return fail("uiw_req_notify_cq", r);
        n = uiw_poll_cq(pp->cq, 1, wc);
        if (n != 0) {
            if (n < 0)
                return fail("uiw_poll_cq", n);
            continue; /* handle it in the next pass */
        }
        struct uiw_cq *cq;
        void *cq_context;
        r = uiw_get_cq_event(pp->cch, &cq, &cq_context);
        if (r < 0)
            return fail("uiw_get_cq_event", r);
        pp->cq_events++;
    }
}

static int post_recv(struct pingpong *pp)
{
    struct uiw_sge sge = {(uint64_t)(uintptr_t)pp->buf, pp->size, pp->mr->lkey};
    struct uiw_recv_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1}, *bad;
    int r = uiw_post_recv(pp->id->qp, &wr, &bad);
    return r < 0 ? fail("uiw_post_recv", r) : 0;
}

static int post_send(struct pingpong *pp)
{
    struct uiw_sge sge = {(uint64_t)(uintptr_t)pp->buf, pp->size, pp->mr->lkey};
    struct uiw_send_wr wr = {.wr_id = 2,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = UIW_WR_SEND,
                             .send_flags = UIW_SEND_SIGNALED},
                       *bad;
    int r = uiw_post_send(pp->id->qp, &wr, &bad);
    return r < 0 ? fail("uiw_post_send", r) : 0;
}

/* Wait for a connection manager event of the given type (any other ends the program). */
static int expect_event(struct pingpong *pp, enum uiw_cm_event_type type, struct uiw_cm_id **new_id)
{
    struct uiw_cm_event *ev;
    int r = uiw_cm_get_event(pp->cmch, &ev, 30000);
    if (r < 0)
        return fail("uiw_cm_get_event", r);
    int ok = ev->event == type;
    if (!ok)
        fprintf(stderr, "pingpong: %s (%s), expected %s\n", uiw_cm_event_str(ev->event),
                uiw_strerror(ev->status), uiw_cm_event_str(type));
    else if (new_id)
        *new_id = ev->id;
    uiw_cm_ack_event(ev);
    return ok ? 0 : -1;
}

/* The QP of id: one CQ for both queues, room for one Send and one Receive. */
static int create_qp(struct pingpong *pp, struct uiw_cm_id *id)
{
    struct uiw_qp_init_attr attr = {
        .send_cq = pp->cq,
        .recv_cq = pp->cq,
        .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
    };
    int r = uiw_cm_create_qp(id, pp->pd, &attr);
    return r < 0 ? fail("uiw_cm_create_qp", r) : 0;
}

static int serve(struct pingpong *pp, uint16_t port, unsigned iters)
{
    /* any address, IPv6 and IPv4 (or IPv4 only on a host without IPv6) */
    struct sockaddr_in6 any6 = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
    struct sockaddr_in any4 = {.sin_family = AF_INET, .sin_port = htons(port)};
    int r = uiw_cm_bind_addr(pp->listen_id, (struct sockaddr *)&any6);
    if (r == 0)
        r = uiw_cm_listen(pp->listen_id, 1, NULL);
    if (r < 0 && (r = uiw_cm_bind_addr(pp->listen_id, (struct sockaddr *)&any4)) == 0)
        r = uiw_cm_listen(pp->listen_id, 1, NULL);
    if (r < 0)
        return fail("listen", r);
    const struct sockaddr *local = uiw_cm_get_local_addr(pp->listen_id);
    printf("listening on port %u\n", local->sa_family == AF_INET6
                                         ? ntohs(((const struct sockaddr_in6 *)local)->sin6_port)
                                         : ntohs(((const struct sockaddr_in *)local)->sin_port));
    fflush(stdout);

    if (expect_event(pp, UIW_CM_EVENT_CONNECT_REQUEST, &pp->id) < 0)
        return -1;
    if (create_qp(pp, pp->id) < 0 || post_recv(pp) < 0)
        return -1;
    r = uiw_cm_accept(pp->id, NULL);
    if (r < 0)
        return fail("uiw_cm_accept", r);
    if (expect_event(pp, UIW_CM_EVENT_ESTABLISHED, NULL) < 0)
        return -1;

    for (unsigned i = 0; i < iters; i++) {
        struct uiw_wc wc;
        if (next_wc(pp, &wc) < 0) /* the ping */
            return -1;
        if (wc.opcode != UIW_WC_RECV || wc.byte_len != pp->size) {
            fprintf(stderr, "pingpong: unexpected message\n");
            return -1;
        }
        if (post_recv(pp) < 0 || post_send(pp) < 0 || next_wc(pp, &wc) < 0) /* the pong */
            return -1;
    }
    /* the client disconnects */
    return expect_event(pp, UIW_CM_EVENT_DISCONNECTED, NULL);
}

static int client(struct pingpong *pp, const char *host, uint16_t port, unsigned iters)
{
    char service[8];
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
    snprintf(service, sizeof(service), "%u", port);
    int r = getaddrinfo(host, service, &hints, &ai);
    if (r != 0) {
        fprintf(stderr, "pingpong: %s: %s\n", host, gai_strerror(r));
        return -1;
    }
    pp->id = pp->listen_id;
    pp->listen_id = NULL;
    r = create_qp(pp, pp->id);
    if (r == 0)
        r = post_recv(pp);
    if (r == 0) {
        r = uiw_cm_connect(pp->id, ai->ai_addr, NULL);
        if (r < 0)
            fail("uiw_cm_connect", r);
    }
    freeaddrinfo(ai);
    if (r < 0 || expect_event(pp, UIW_CM_EVENT_ESTABLISHED, NULL) < 0)
        return -1;

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned i = 0; i < iters; i++) {
        struct uiw_wc wc;
        memset(pp->buf, (int)(i & 0xFF), pp->size);
        if (post_send(pp) < 0)
            return -1;
        /* two completions: our Send, and the Receive of the pong (in either order) */
        for (int k = 0; k < 2; k++)
            if (next_wc(pp, &wc) < 0)
                return -1;
        for (uint32_t b = 0; b < pp->size; b++)
            if ((unsigned char)pp->buf[b] != (i & 0xFF)) {
                fprintf(stderr, "pingpong: pong %u differs from its ping\n", i);
                return -1;
            }
        if (i + 1 < iters && post_recv(pp) < 0)
            return -1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double us = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / 1e3 /
                (iters ? iters : 1);
    printf("%u round trips of %u bytes: %.2f us each\n", iters, pp->size, us);

    r = uiw_cm_disconnect(pp->id);
    if (r < 0)
        return fail("uiw_cm_disconnect", r);
    return expect_event(pp, UIW_CM_EVENT_DISCONNECTED, NULL);
}

static void teardown(struct pingpong *pp)
{
    if (pp->id && pp->id->qp)
        uiw_cm_destroy_qp(pp->id);
    if (pp->id)
        uiw_cm_destroy_id(pp->id);
    if (pp->listen_id)
        uiw_cm_destroy_id(pp->listen_id);
    if (pp->cmch)
        uiw_cm_destroy_channel(pp->cmch);
    if (pp->mr)
        uiw_dereg_mr(pp->mr);
    free(pp->buf);
    if (pp->cq) {
        uiw_ack_cq_events(pp->cq, pp->cq_events);
        uiw_destroy_cq(pp->cq);
    }
    if (pp->cch)
        uiw_destroy_comp_channel(pp->cch);
    if (pp->pd)
        uiw_dealloc_pd(pp->pd);
    if (pp->ctx)
        uiw_close_context(pp->ctx);
}

/* A whole decimal number in [min, max], or exit with a usage error. */
static unsigned long number(const char *s, unsigned long min, unsigned long max)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v < min || v > max) {
        fprintf(stderr, "pingpong: bad number '%s' (%lu..%lu)\n", s, min, max);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    unsigned long port = 0, iters = 1000, size = 64;
    int c;
    while ((c = getopt(argc, argv, "p:n:s:")) != -1) {
        switch (c) {
        case 'p':
            port = number(optarg, 0, 65535);
            break;
        case 'n':
            iters = number(optarg, 1, 100000000);
            break;
        case 's':
            size = number(optarg, 1, 1 << 20);
            break;
        default:
            fprintf(stderr, "usage: pingpong [-p PORT] [-n ITERS] [-s SIZE] [HOST]\n");
            return 2;
        }
    }
    if (argc - optind > 1 || (optind == argc - 1 && port == 0)) {
        fprintf(stderr, "usage: pingpong [-p PORT] [-n ITERS] [-s SIZE] [HOST]\n"
                        "       (a client, given HOST, needs the server's PORT)\n");
        return 2;
    }

    struct pingpong pp = {.size = (uint32_t)size};
    pp.ctx = uiw_open_context(NULL);
    pp.pd = pp.ctx ? uiw_alloc_pd(pp.ctx) : NULL;
    pp.cch = pp.pd ? uiw_create_comp_channel(pp.ctx) : NULL;
    pp.cq = pp.cch ? uiw_create_cq(pp.ctx, 4, NULL, pp.cch, 0) : NULL;
    pp.buf = pp.cq ? malloc(pp.size) : NULL;
    pp.mr = pp.buf ? uiw_reg_mr(pp.pd, pp.buf, pp.size, UIW_ACCESS_LOCAL_WRITE) : NULL;
    pp.cmch = pp.mr ? uiw_cm_create_channel() : NULL;
    pp.listen_id = pp.cmch ? uiw_cm_create_id(pp.cmch, pp.ctx, NULL) : NULL;
    int r;
    if (!pp.listen_id)
        r = fail("setup", -errno);
    else if (optind == argc)
        r = serve(&pp, (uint16_t)port, (unsigned)iters);
    else
        r = client(&pp, argv[optind], (uint16_t)port, (unsigned)iters);
    teardown(&pp);
    return r < 0 ? 1 : 0;
}
