/*
 * iwperf --tcp: the raw TCP baseline, same process layout as the RDMA tests (two
 * processes, one connection). Control messages (iwp_ctrl, IWP_CTRL_LEN bytes) and data
 * share the stream:
 *   client: HELLO; per size: START, then
 *     write/send bandwidth: BURST(n) + n messages, ..., BURST(0)  (one-way streaming)
 *     read bandwidth:       REQ(size) per message, up to --tx-depth outstanding, REQ(0)
 *     latency:              BURST(n) + n ping-pongs of the size, ..., BURST(0)
 *   server: ACK after HELLO and START, RESULT at the end of each size, prints the REPORT.
 */
#include "iwperf.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { SEED_CLIENT = 1, SEED_SERVER = 2, LAT_BURST = 1000 };

/* --busy-poll: send and receive without sleeping in the kernel (non-blocking calls that
 * spin on EAGAIN), the way an RDMA application polling its CQ waits, so the baseline
 * compares like with like. */
static bool busy_poll;
/* --tcp-write: at most this many bytes per send() (0: a whole message per call). */
static size_t write_max;

static int write_full(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    int flags = busy_poll ? MSG_DONTWAIT : 0;
    while (len) {
        size_t k = write_max && write_max < len ? write_max : len;
        ssize_t n = send(fd, p, k, flags);
        if (n < 0 && (errno == EINTR || (busy_poll && errno == EAGAIN)))
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* One receive of at most len bytes (spinning on EAGAIN with --busy-poll): the count, or
 * -1 on EOF or error. */
static ssize_t recv_some(int fd, void *buf, size_t len)
{
    int flags = busy_poll ? MSG_DONTWAIT : 0;
    for (;;) {
        ssize_t n = recv(fd, buf, len, flags);
        if (n < 0 && (errno == EINTR || (busy_poll && errno == EAGAIN)))
            continue;
        return n <= 0 ? -1 : n;
    }
}

static int read_full(int fd, void *buf, size_t len)
{
    uint8_t *p = buf;
    while (len) {
        ssize_t n = recv_some(fd, p, len);
        if (n < 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int send_ctrl(int fd, uint32_t type, uint64_t v0, uint64_t v1)
{
    struct iwp_ctrl c = {.type = type};
    uint8_t b[IWP_CTRL_LEN];
    c.v[0] = v0;
    c.v[1] = v1;
    iwp_ctrl_encode(&c, b);
    return write_full(fd, b, sizeof(b));
}

static int send_ctrl_msg(int fd, const struct iwp_ctrl *c)
{
    uint8_t b[IWP_CTRL_LEN];
    iwp_ctrl_encode(c, b);
    return write_full(fd, b, sizeof(b));
}

static int recv_ctrl(int fd, struct iwp_ctrl *c)
{
    uint8_t b[IWP_CTRL_LEN];
    if (read_full(fd, b, sizeof(b)) < 0)
        return -1;
    if (iwp_ctrl_decode(b, c) < 0) {
        fprintf(stderr, "iwperf: bad control message\n");
        return -1;
    }
    return 0;
}

static void sock_opts(int fd)
{
    int one = 1;
    struct timeval tv = {.tv_sec = 30};
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    /* a dead peer must not hang us forever */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int tcp_accept_one(const struct iwp_opts *o)
{
    int fam = o->ipv6 ? AF_INET6 : AF_INET;
    int ls = socket(fam, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (ls < 0) {
        perror("iwperf: socket");
        return -1;
    }
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_storage ss;
    socklen_t sl;
    memset(&ss, 0, sizeof(ss));
    if (fam == AF_INET6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_addr = in6addr_any;
        s6->sin6_port = htons(o->port);
        sl = sizeof(*s6);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        s4->sin_addr.s_addr = htonl(INADDR_ANY);
        s4->sin_port = htons(o->port);
        sl = sizeof(*s4);
    }
    if (bind(ls, (struct sockaddr *)&ss, sl) < 0 || listen(ls, 1) < 0) {
        perror("iwperf: bind/listen");
        close(ls);
        return -1;
    }
    sl = sizeof(ss);
    if (getsockname(ls, (struct sockaddr *)&ss, &sl) == 0)
        iwp_listening(o, (struct sockaddr *)&ss);
    int fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        perror("iwperf: accept");
    close(ls);
    return fd;
}

static int tcp_connect(const struct iwp_opts *o)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai, *p;
    char port[8];
    snprintf(port, sizeof(port), "%u", o->port);
    int rc = getaddrinfo(o->host, port, &hints, &ai);
    if (rc != 0) {
        fprintf(stderr, "iwperf: %s: %s\n", o->host, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    /* the server may still be starting: retry for a few seconds */
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        for (p = ai; p; p = p->ai_next) {
            fd = socket(p->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (fd < 0)
                continue;
            if (connect(fd, p->ai_addr, p->ai_addrlen) == 0)
                break;
            close(fd);
            fd = -1;
        }
        if (fd < 0)
            usleep(50000);
    }
    freeaddrinfo(ai);
    if (fd < 0)
        fprintf(stderr, "iwperf: cannot connect to %s port %u\n", o->host, o->port);
    return fd;
}

/* ---------------------------------------------------------------------------------- */

/* With --verify every message carries a pattern of its own (iwp_fill_msg: the client's
 * seed for what the client sends, the server's for what it sends, and the message's index
 * in the phase), and the receiving side checks each one; RESULT reports the messages the
 * server received and how many of them were right. */
static int server_phase(int fd, const struct iwp_opts *o, bool lat, enum iwp_test test, uint64_t s,
                        uint8_t *src, uint8_t *sink, size_t sinklen, bool verify)
{
    struct iwp_ctrl c;
    uint64_t msgs = 0, good = 0, t0 = iwp_now_ns();
    (void)o;
    if (send_ctrl(fd, IWP_C_ACK, 0, 0) < 0)
        return -1;
    if (lat) {
        for (;;) {
            if (recv_ctrl(fd, &c) < 0 || c.type != IWP_C_BURST)
                return -1;
            if (c.v[0] == 0)
                break;
            for (uint64_t i = 0; i < c.v[0]; i++) {
                if (read_full(fd, sink, s) < 0)
                    return -1;
                if (verify) {
                    good += iwp_check_msg(sink, s, SEED_CLIENT, msgs);
                    iwp_fill_msg(src, s, SEED_SERVER, msgs);
                }
                if (write_full(fd, src, s) < 0)
                    return -1;
                msgs++;
            }
        }
    } else if (test == IWP_READ) {
        for (;;) {
            if (recv_ctrl(fd, &c) < 0 || c.type != IWP_C_REQ)
                return -1;
            if (c.v[0] == 0)
                break;
            if (c.v[0] != s)
                return -1;
            if (verify)
                iwp_fill_msg(src, s, SEED_SERVER, msgs);
            if (write_full(fd, src, s) < 0)
                return -1;
            msgs++;
        }
    } else {
        /* one-way stream: read as much as fits (with --verify a message at a time, each
         * checked) */
        size_t chunk = (sinklen / s) * s, pos = 0;
        for (;;) {
            if (recv_ctrl(fd, &c) < 0 || c.type != IWP_C_BURST)
                return -1;
            if (c.v[0] == 0)
                break;
            if (verify) {
                for (uint64_t i = 0; i < c.v[0]; i++, msgs++) {
                    if (read_full(fd, sink, s) < 0)
                        return -1;
                    good += iwp_check_msg(sink, s, SEED_CLIENT, msgs);
                }
                continue;
            }
            uint64_t left = c.v[0] * s;
            while (left) {
                size_t want = chunk - pos < left ? chunk - pos : (size_t)left;
                ssize_t n = recv_some(fd, sink + pos, want);
                if (n < 0)
                    return -1;
                pos += (size_t)n;
                left -= (uint64_t)n;
                if (pos == chunk)
                    pos = 0;
            }
            msgs += c.v[0];
        }
    }
    struct iwp_ctrl r = {.type = IWP_C_RESULT};
    r.v[1] = good;
    r.v[2] = msgs;
    r.v[3] = iwp_now_ns() - t0;
    return send_ctrl_msg(fd, &r);
}

static int tcp_server(const struct iwp_opts *o)
{
    int fd = tcp_accept_one(o);
    if (fd < 0)
        return 1;
    sock_opts(fd);
    struct iwp_ctrl c;
    int status = 1;
    uint8_t *src = NULL, *sink = NULL;
    if (recv_ctrl(fd, &c) < 0 || c.type != IWP_C_HELLO || c.v[0] > IWP_SEND || c.v[2] == 0 ||
        c.v[2] > IWP_MAX_SIZE) {
        fprintf(stderr, "iwperf: bad HELLO from the client\n");
        goto out;
    }
    struct iwp_opts so = *o;
    so.test = (enum iwp_test)c.v[0];
    so.lat = (c.v[1] & IWP_F_LAT) != 0;
    so.verify = (c.v[1] & IWP_F_VERIFY) != 0;
    uint64_t max = c.v[2];
    size_t sinklen = max < (1u << 20) ? (1u << 20) : max;
    src = aligned_alloc(4096, (max + 4095) & ~4095ull);
    sink = aligned_alloc(4096, (sinklen + 4095) & ~(size_t)4095);
    if (!src || !sink) {
        fprintf(stderr, "iwperf: out of memory\n");
        goto out;
    }
    iwp_fill_pattern(src, max, SEED_SERVER);
    memset(sink, 0, sinklen);
    struct iwp_report rep;
    iwp_report_init(&rep, &so, "server", stdout);
    iwp_report_header(&rep);
    if (send_ctrl(fd, IWP_C_ACK, 0, 0) < 0)
        goto out;
    uint64_t cur = 0;
    for (;;) {
        if (recv_ctrl(fd, &c) < 0)
            goto out;
        if (c.type == IWP_C_BYE)
            break;
        if (c.type == IWP_C_REPORT) {
            struct iwp_result res;
            iwp_result_from_ctrl(&c, &res);
            iwp_report_row(&rep, &res);
            continue;
        }
        if (c.type != IWP_C_START || c.v[0] == 0 || c.v[0] > max) {
            fprintf(stderr, "iwperf: unexpected control message %u\n", c.type);
            goto out;
        }
        cur = c.v[0];
        if (server_phase(fd, &so, so.lat, so.test, cur, src, sink, sinklen, so.verify) < 0) {
            fprintf(stderr, "iwperf: connection lost during the %" PRIu64 "-byte test\n", cur);
            goto out;
        }
    }
    iwp_report_finish(&rep);
    status = o->out_json && iwp_report_out_json(&rep) < 0 ? 1 : 0;
out:
    free(src);
    free(sink);
    close(fd);
    return status;
}

/* ---------------------------------------------------------------------------------- */

static bool time_up(const struct iwp_opts *o, uint64_t t0, uint64_t now)
{
    return o->duration > 0 && (double)(now - t0) >= o->duration * 1e9;
}

static int client_phase(int fd, const struct iwp_opts *o, uint64_t s, uint8_t *src, uint8_t *sink,
                        struct iwp_result *res)
{
    struct iwp_ctrl c;
    struct iwp_samples smp = {0};
    struct iwp_bw_meter m;
    int rc = -1;
    memset(res, 0, sizeof(*res));
    res->bytes = s;
    if (send_ctrl(fd, IWP_C_START, s, o->iters) < 0 || recv_ctrl(fd, &c) < 0 || c.type != IWP_C_ACK)
        return -1;
    if (o->lat && iwp_samples_reserve(&smp, o->iters ? o->iters : 65536) < 0)
        return -1;
    uint64_t t0 = iwp_now_ns(), done = 0;
    iwp_bw_start(&m, t0, 10000000); /* peak over 10 ms windows */
    uint64_t good = 0;              /* --verify: messages received right */
    if (o->lat) {
        for (;;) {
            uint64_t n = o->iters ? o->iters - done : LAT_BURST;
            if (n == 0 || time_up(o, t0, iwp_now_ns()))
                break;
            if (send_ctrl(fd, IWP_C_BURST, n, 0) < 0)
                goto out;
            for (uint64_t i = 0; i < n; i++) {
                if (o->verify)
                    iwp_fill_msg(src, s, SEED_CLIENT, done + i);
                uint64_t a = iwp_now_ns();
                if (write_full(fd, src, s) < 0 || read_full(fd, sink, s) < 0)
                    goto out;
                if (iwp_samples_push(&smp, iwp_now_ns() - a) < 0)
                    goto out;
                if (o->verify)
                    good += iwp_check_msg(sink, s, SEED_SERVER, done + i);
            }
            done += n;
        }
        if (send_ctrl(fd, IWP_C_BURST, 0, 0) < 0)
            goto out;
    } else if (o->test == IWP_READ) {
        uint64_t asked = 0;
        for (;;) {
            bool more = o->iters ? asked < o->iters : !time_up(o, t0, iwp_now_ns());
            if (more && asked - done < o->tx_depth) {
                if (send_ctrl(fd, IWP_C_REQ, s, 0) < 0)
                    goto out;
                asked++;
                continue;
            }
            if (done == asked)
                break;
            if (read_full(fd, sink, s) < 0)
                goto out;
            if (o->verify)
                good += iwp_check_msg(sink, s, SEED_SERVER, done);
            done++;
            iwp_bw_update(&m, iwp_now_ns(), done * s);
        }
        if (send_ctrl(fd, IWP_C_REQ, 0, 0) < 0)
            goto out;
    } else {
        for (;;) {
            uint64_t n = o->tx_depth;
            if (o->iters && o->iters - done < n)
                n = o->iters - done;
            if (n == 0 || time_up(o, t0, iwp_now_ns()))
                break;
            if (send_ctrl(fd, IWP_C_BURST, n, 0) < 0)
                goto out;
            for (uint64_t i = 0; i < n; i++) {
                if (o->verify)
                    iwp_fill_msg(src, s, SEED_CLIENT, done + i);
                if (write_full(fd, src, s) < 0)
                    goto out;
            }
            done += n;
            iwp_bw_update(&m, iwp_now_ns(), done * s);
        }
        if (send_ctrl(fd, IWP_C_BURST, 0, 0) < 0)
            goto out;
    }
    if (recv_ctrl(fd, &c) < 0 || c.type != IWP_C_RESULT)
        goto out;
    uint64_t t1 = iwp_now_ns();
    res->iters = o->lat ? smp.n : done;
    res->seconds = (double)(t1 - t0) / 1e9;
    if (o->lat) {
        iwp_lat_summarise(smp.v, smp.n, 0.5, &res->lat);
    } else {
        res->bw_avg = res->seconds > 0 ? (double)(done * s) / res->seconds : 0;
        res->msg_rate = res->seconds > 0 ? (double)done / res->seconds : 0;
        res->bw_peak = m.peak > res->bw_avg ? m.peak : res->bw_avg;
    }
    if (o->verify) {
        /* every message the server got, and each one right, on the side that received it */
        bool ok = c.v[2] == done;
        if (o->test == IWP_READ || o->lat)
            ok = ok && good == done;
        if (o->test != IWP_READ || o->lat)
            ok = ok && c.v[1] == done;
        res->verify = ok ? IWP_VERIFY_OK : IWP_VERIFY_FAIL;
    }
    struct iwp_ctrl rep;
    iwp_result_to_ctrl(res, &rep);
    rc = send_ctrl_msg(fd, &rep);
out:
    iwp_samples_free(&smp);
    return rc;
}

static int tcp_client(const struct iwp_opts *o)
{
    int fd = tcp_connect(o);
    if (fd < 0)
        return 1;
    sock_opts(fd);
    uint64_t max = iwp_max_size(o), sizes[32];
    int nsizes = iwp_sizes(o, sizes, 32), status = 1;
    uint8_t *src = aligned_alloc(4096, (max + 4095) & ~4095ull);
    uint8_t *sink = aligned_alloc(4096, (max + 4095) & ~4095ull);
    struct iwp_ctrl c;
    if (!src || !sink)
        goto out;
    iwp_fill_pattern(src, max, SEED_CLIENT);
    memset(sink, 0, max);
    uint32_t flags = (o->lat ? IWP_F_LAT : 0) | (o->verify ? IWP_F_VERIFY : 0);
    struct iwp_ctrl h = {.type = IWP_C_HELLO};
    h.v[0] = o->test;
    h.v[1] = flags;
    h.v[2] = max;
    if (send_ctrl_msg(fd, &h) < 0 || recv_ctrl(fd, &c) < 0 || c.type != IWP_C_ACK) {
        fprintf(stderr, "iwperf: no answer from the server\n");
        goto out;
    }
    struct iwp_report rep;
    iwp_report_init(&rep, o, "client", stdout);
    iwp_report_header(&rep);
    bool bad = false;
    for (int i = 0; i < nsizes; i++) {
        struct iwp_result res;
        if (client_phase(fd, o, sizes[i], src, sink, &res) < 0) {
            fprintf(stderr, "iwperf: connection lost during the %" PRIu64 "-byte test\n", sizes[i]);
            goto out;
        }
        bad |= res.verify == IWP_VERIFY_FAIL;
        iwp_report_row(&rep, &res);
    }
    send_ctrl(fd, IWP_C_BYE, 0, 0);
    iwp_report_finish(&rep);
    status = bad || (o->out_json && iwp_report_out_json(&rep) < 0) ? 1 : 0;
out:
    free(src);
    free(sink);
    close(fd);
    return status;
}

int iwp_tcp_run(const struct iwp_opts *o)
{
    busy_poll = o->busy_poll;
    write_max = o->tcp_write;
    return o->host ? tcp_client(o) : tcp_server(o);
}
