/*
 * rdma_rw: a client writes into a server's memory with RDMA Write and reads it back with
 * RDMA Read; the server's CPU takes no part in either.
 *
 *   server:  rdma_rw [-p PORT] [-s SIZE]
 *   client:  rdma_rw -p PORT [-s SIZE] HOST
 *
 * The server registers SIZE bytes for remote reading and writing and advertises them in
 * the private data of its accept: {address, rkey, length}, 16 bytes in network byte order,
 * which the connection manager hands to the client in its ESTABLISHED event. The client
 * writes a pattern there, reads the region back into a second buffer, checks it and
 * disconnects; the server then checks that its memory holds the pattern. An RDMA Read
 * needs Read credits on both sides: the client asks for an ORD (initiator_depth) of 1, the
 * server grants an IRD (responder_resources) of 1.
 *
 * Build: cc rdma_rw.c $(pkg-config --cflags --libs uiw) -o rdma_rw
 */
#include <endian.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uiw/cm.h>
#include <uiw/verbs.h>

struct advert {    /* the server's region, as sent in the accept's private data */
    uint64_t addr; /* big-endian, as are the others */
    uint32_t rkey;
    uint32_t len;
};

static int fail(const char *what, int code)
{
    fprintf(stderr, "rdma_rw: %s: %s\n", what, uiw_strerror(code));
    return -1;
}

static uint8_t pattern(size_t i)
{
    return (uint8_t)(i * 7 + 3);
}

static int check_pattern(const uint8_t *buf, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (buf[i] != pattern(i)) {
            fprintf(stderr, "rdma_rw: byte %zu is %u, not %u\n", i, buf[i], pattern(i));
            return -1;
        }
    return 0;
}

/* Wait for a connection manager event of the given type (any other is an error); with
 * `ev_out`, the caller acknowledges the event. */
static int expect_event(struct uiw_cm_channel *ch, enum uiw_cm_event_type type,
                        struct uiw_cm_event **ev_out)
{
    struct uiw_cm_event *ev;
    int r = uiw_cm_get_event(ch, &ev, 30000);
    if (r < 0)
        return fail("uiw_cm_get_event", r);
    if (ev->event != type) {
        fprintf(stderr, "rdma_rw: %s (%s), expected %s\n", uiw_cm_event_str(ev->event),
                uiw_strerror(ev->status), uiw_cm_event_str(type));
        uiw_cm_ack_event(ev);
        return -1;
    }
    if (ev_out)
        *ev_out = ev;
    else
        uiw_cm_ack_event(ev);
    return 0;
}

/* Post one signalled RDMA operation and busy-poll the CQ for its completion. */
static int rdma(struct uiw_qp *qp, struct uiw_cq *cq, enum uiw_wr_opcode op, struct uiw_mr *mr,
                uint32_t len, uint64_t raddr, uint32_t rkey)
{
    struct uiw_sge sge = {(uint64_t)(uintptr_t)mr->addr, len, mr->lkey};
    struct uiw_send_wr wr = {.sg_list = &sge,
                             .num_sge = 1,
                             .opcode = op,
                             .send_flags = UIW_SEND_SIGNALED,
                             .wr.rdma = {.remote_addr = raddr, .rkey = rkey}},
                       *bad;
    struct uiw_wc wc;
    int n = uiw_post_send(qp, &wr, &bad);
    if (n < 0)
        return fail("uiw_post_send", n);
    while ((n = uiw_poll_cq(cq, 1, &wc)) == 0)
        ;
    if (n < 0)
        return fail("uiw_poll_cq", n);
    if (wc.status != UIW_WC_SUCCESS) {
        fprintf(stderr, "rdma_rw: %s failed: %s\n", op == UIW_WR_RDMA_READ ? "Read" : "Write",
                uiw_wc_status_str(wc.status));
        return -1;
    }
    return 0;
}

static int serve(struct uiw_cm_channel *ch, struct uiw_cm_id *listen_id, struct uiw_pd *pd,
                 struct uiw_cq *cq, uint16_t port, size_t size)
{
    /* any address, IPv6 and IPv4 (or IPv4 only on a host without IPv6) */
    struct sockaddr_in6 any6 = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
    struct sockaddr_in any4 = {.sin_family = AF_INET, .sin_port = htons(port)};
    int r = uiw_cm_bind_addr(listen_id, (struct sockaddr *)&any6);
    if (r == 0)
        r = uiw_cm_listen(listen_id, 1, NULL);
    if (r < 0 && (r = uiw_cm_bind_addr(listen_id, (struct sockaddr *)&any4)) == 0)
        r = uiw_cm_listen(listen_id, 1, NULL);
    if (r < 0)
        return fail("listen", r);
    const struct sockaddr *local = uiw_cm_get_local_addr(listen_id);
    printf("listening on port %u\n", local->sa_family == AF_INET6
                                         ? ntohs(((const struct sockaddr_in6 *)local)->sin6_port)
                                         : ntohs(((const struct sockaddr_in *)local)->sin_port));
    fflush(stdout);

    uint8_t *buf = calloc(1, size);
    unsigned access = UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | UIW_ACCESS_REMOTE_READ;
    struct uiw_mr *mr = buf ? uiw_reg_mr(pd, buf, size, access) : NULL;
    struct uiw_cm_event *ev;
    struct uiw_cm_id *id = NULL;
    r = mr ? 0 : fail("uiw_reg_mr", -errno);
    if (r == 0 && (r = expect_event(ch, UIW_CM_EVENT_CONNECT_REQUEST, &ev)) == 0) {
        id = ev->id;
        uiw_cm_ack_event(ev);
        struct uiw_qp_init_attr qa = {
            .send_cq = cq,
            .recv_cq = cq,
            .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
            .max_ird = 1,
        };
        r = uiw_cm_create_qp(id, pd, &qa);
        if (r < 0)
            fail("uiw_cm_create_qp", r);
    }
    if (r == 0) {
        struct advert ad = {.addr = htobe64((uint64_t)(uintptr_t)buf),
                            .rkey = htobe32(mr->rkey),
                            .len = htobe32((uint32_t)size)};
        struct uiw_conn_param param = {
            .private_data = &ad, .private_data_len = sizeof(ad), .responder_resources = 1};
        r = uiw_cm_accept(id, &param);
        if (r < 0)
            fail("uiw_cm_accept", r);
    }
    /* The client's Write and Read need nothing from us: wait until it is done. */
    if (r == 0)
        r = expect_event(ch, UIW_CM_EVENT_ESTABLISHED, NULL);
    if (r == 0)
        r = expect_event(ch, UIW_CM_EVENT_DISCONNECTED, NULL);
    if (r == 0 && (r = check_pattern(buf, size)) == 0)
        printf("the client wrote and read %zu bytes of our memory\n", size);
    if (id) {
        uiw_cm_destroy_qp(id);
        uiw_cm_destroy_id(id);
    }
    if (mr)
        uiw_dereg_mr(mr);
    free(buf);
    return r;
}

static int client(struct uiw_cm_channel *ch, struct uiw_cm_id *id, struct uiw_pd *pd,
                  struct uiw_cq *cq, const char *host, uint16_t port, size_t size)
{
    char service[8];
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
    snprintf(service, sizeof(service), "%u", port);
    int r = getaddrinfo(host, service, &hints, &ai);
    if (r != 0) {
        fprintf(stderr, "rdma_rw: %s: %s\n", host, gai_strerror(r));
        return -1;
    }
    struct uiw_qp_init_attr qa = {
        .send_cq = cq,
        .recv_cq = cq,
        .cap = {.max_send_wr = 2, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
        .max_ord = 1,
    };
    struct uiw_conn_param param = {.initiator_depth = 1};
    r = uiw_cm_create_qp(id, pd, &qa);
    if (r < 0)
        fail("uiw_cm_create_qp", r);
    else if ((r = uiw_cm_connect(id, ai->ai_addr, &param)) < 0)
        fail("uiw_cm_connect", r);
    freeaddrinfo(ai);

    struct uiw_cm_event *ev;
    struct advert ad;
    if (r == 0 && (r = expect_event(ch, UIW_CM_EVENT_ESTABLISHED, &ev)) == 0) {
        if (ev->param.private_data_len != sizeof(ad)) {
            fprintf(stderr, "rdma_rw: the server sent no region\n");
            r = -1;
        } else {
            memcpy(&ad, ev->param.private_data, sizeof(ad));
        }
        uiw_cm_ack_event(ev);
    }
    if (r < 0)
        return -1;
    uint64_t raddr = be64toh(ad.addr);
    uint32_t rkey = be32toh(ad.rkey);
    size_t rlen = be32toh(ad.len);
    if (rlen < size) {
        fprintf(stderr, "rdma_rw: the server's region holds %zu bytes, not %zu\n", rlen, size);
        return -1;
    }

    uint8_t *src = malloc(size), *sink = calloc(1, size);
    struct uiw_mr *src_mr = src ? uiw_reg_mr(pd, src, size, 0) : NULL;
    struct uiw_mr *sink_mr = sink ? uiw_reg_mr(pd, sink, size, UIW_ACCESS_LOCAL_WRITE) : NULL;
    r = src_mr && sink_mr ? 0 : fail("uiw_reg_mr", -errno);
    if (r == 0) {
        for (size_t i = 0; i < size; i++)
            src[i] = pattern(i);
        r = rdma(id->qp, cq, UIW_WR_RDMA_WRITE, src_mr, (uint32_t)size, raddr, rkey);
    }
    if (r == 0)
        r = rdma(id->qp, cq, UIW_WR_RDMA_READ, sink_mr, (uint32_t)size, raddr, rkey);
    if (r == 0 && (r = check_pattern(sink, size)) == 0)
        printf("wrote %zu bytes into the server's memory and read them back\n", size);
    int d = uiw_cm_disconnect(id);
    if (d < 0)
        r = fail("uiw_cm_disconnect", d);
    else if (expect_event(ch, UIW_CM_EVENT_DISCONNECTED, NULL) < 0)
        r = -1;
    if (sink_mr)
        uiw_dereg_mr(sink_mr);
    if (src_mr)
        uiw_dereg_mr(src_mr);
    free(sink);
    free(src);
    return r;
}

/* A whole decimal number in [min, max], or exit with a usage error. */
static unsigned long number(const char *s, unsigned long min, unsigned long max)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v < min || v > max) {
        fprintf(stderr, "rdma_rw: bad number '%s' (%lu..%lu)\n", s, min, max);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    const char *usage = "usage: rdma_rw [-p PORT] [-s SIZE]     (server)\n"
                        "       rdma_rw -p PORT [-s SIZE] HOST  (client)\n";
    unsigned long port = 0, size = 1 << 20;
    int c;
    while ((c = getopt(argc, argv, "p:s:")) != -1) {
        switch (c) {
        case 'p':
            port = number(optarg, 0, 65535);
            break;
        case 's':
            size = number(optarg, 1, 1u << 30);
            break;
        default:
            fputs(usage, stderr);
            return 2;
        }
    }
    if (argc - optind > 1 || (optind == argc - 1 && port == 0)) {
        fputs(usage, stderr);
        return 2;
    }

    struct uiw_context *ctx = uiw_open_context(NULL);
    struct uiw_pd *pd = ctx ? uiw_alloc_pd(ctx) : NULL;
    struct uiw_cq *cq = pd ? uiw_create_cq(ctx, 4, NULL, NULL, 0) : NULL;
    struct uiw_cm_channel *ch = cq ? uiw_cm_create_channel() : NULL;
    struct uiw_cm_id *id = ch ? uiw_cm_create_id(ch, ctx, NULL) : NULL;
    int r;
    if (!id)
        r = fail("setup", -errno);
    else if (optind == argc)
        r = serve(ch, id, pd, cq, (uint16_t)port, size);
    else
        r = client(ch, id, pd, cq, argv[optind], (uint16_t)port, size);
    if (id && id->qp)
        uiw_cm_destroy_qp(id);
    if (id)
        uiw_cm_destroy_id(id);
    if (ch)
        uiw_cm_destroy_channel(ch);
    if (cq)
        uiw_destroy_cq(cq);
    if (pd)
        uiw_dealloc_pd(pd);
    if (ctx)
        uiw_close_context(ctx);
    return r < 0 ? 1 : 0;
}
