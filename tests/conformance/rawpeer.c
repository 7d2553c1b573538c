/* The raw iWARP peer of the conformance tests (see rawpeer.h). */
#include "rawpeer.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define WRITE_WAIT_MS 5000

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int left_ms(uint64_t deadline)
{
    uint64_t t = now_ms();
    return t >= deadline ? 0 : (int)(deadline - t);
}

static socklen_t loop_addr(int family, uint16_t port, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof(*ss));
    if (family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        a->sin6_port = htons(port);
        return sizeof(*a);
    }
    struct sockaddr_in *a = (struct sockaddr_in *)ss;
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a->sin_port = htons(port);
    return sizeof(*a);
}

int rawpeer_tcp_listen(int family, uint16_t *port)
{
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct sockaddr_storage ss;
    socklen_t len = loop_addr(family, 0, &ss);
    if (bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 4) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    *port = family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                               : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

int rawpeer_tcp_connect(int family, uint16_t port)
{
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct sockaddr_storage ss;
    socklen_t len = loop_addr(family, port, &ss);
    if (connect(fd, (struct sockaddr *)&ss, len) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

int rawpeer_tcp_accept(int lfd, int timeout_ms)
{
    struct pollfd pf = {.fd = lfd, .events = POLLIN};
    int r = poll(&pf, 1, timeout_ms);
    if (r < 0)
        return -errno;
    if (r == 0)
        return -ETIMEDOUT;
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

void rawpeer_init(struct rawpeer *p, int fd)
{
    memset(p, 0, sizeof(*p));
    p->fd = fd;
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

void rawpeer_close(struct rawpeer *p, bool reset)
{
    if (p->fd < 0)
        return;
    if (reset) {
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        setsockopt(p->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    }
    close(p->fd);
    p->fd = -1;
}

int rawpeer_write(struct rawpeer *p, const void *buf, size_t n)
{
    const uint8_t *b = buf;
    uint64_t deadline = now_ms() + WRITE_WAIT_MS;
    while (n) {
        ssize_t w = send(p->fd, b, n, MSG_NOSIGNAL);
        if (w > 0) {
            b += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return -errno;
        struct pollfd pf = {.fd = p->fd, .events = POLLOUT};
        int ms = left_ms(deadline);
        if (ms == 0 || poll(&pf, 1, ms) == 0)
            return -ETIMEDOUT;
    }
    return 0;
}

/* Read more stream bytes into p->in (compacting first). 1 when bytes came, 0 on EOF,
 * or -ETIMEDOUT / -errno. */
static int fill(struct rawpeer *p, uint64_t deadline)
{
    if (p->in_off == p->in_have) {
        p->in_off = p->in_have = 0;
    } else if (p->in_off) {
        memmove(p->in, p->in + p->in_off, p->in_have - p->in_off);
        p->in_have -= p->in_off;
        p->in_off = 0;
    }
    if (p->in_have == sizeof(p->in))
        return -ENOSPC;
    for (;;) {
        ssize_t r = recv(p->fd, p->in + p->in_have, sizeof(p->in) - p->in_have, 0);
        if (r > 0) {
            p->in_have += (size_t)r;
            return 1;
        }
        if (r == 0)
            return 0;
        if (errno == ECONNRESET)
            return -ECONNRESET;
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return -errno;
        struct pollfd pf = {.fd = p->fd, .events = POLLIN};
        int ms = left_ms(deadline);
        if (ms == 0)
            return -ETIMEDOUT;
        int pr = poll(&pf, 1, ms);
        if (pr < 0 && errno != EINTR)
            return -errno;
        if (pr == 0)
            return -ETIMEDOUT;
    }
}

ssize_t rawpeer_read(struct rawpeer *p, void *buf, size_t n, int timeout_ms)
{
    uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
    uint8_t *b = buf;
    size_t got = 0;
    while (got < n) {
        size_t avail = p->in_have - p->in_off;
        if (avail) {
            size_t k = avail < n - got ? avail : n - got;
            memcpy(b + got, p->in + p->in_off, k);
            p->in_off += k;
            got += k;
            continue;
        }
        int r = fill(p, deadline);
        if (r == 0)
            return -EPIPE;
        if (r < 0)
            return r;
    }
    return (ssize_t)n;
}

int rawpeer_send_frame(struct rawpeer *p, const struct uiw_mpa_frame *f)
{
    uint8_t buf[UIW_MPA_HDR_LEN + UIW_MPA_V2_IRD_ORD_LEN + UIW_MPA_PD_MAX];
    ssize_t n = uiw_mpa_frame_encode(f, buf, sizeof(buf));
    if (n < 0)
        return (int)n;
    return rawpeer_write(p, buf, (size_t)n);
}

ssize_t rawpeer_recv_frame(struct rawpeer *p, enum uiw_mpa_frame_kind kind, struct uiw_mpa_frame *f,
                           uint8_t *store, size_t cap, int timeout_ms)
{
    if (cap < UIW_MPA_HDR_LEN)
        return -ENOSPC;
    uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
    ssize_t r = rawpeer_read(p, store, UIW_MPA_HDR_LEN, timeout_ms);
    if (r < 0)
        return r;
    size_t pdl = (size_t)store[18] << 8 | store[19];
    if (UIW_MPA_HDR_LEN + pdl > cap)
        return -ENOSPC;
    if (pdl) {
        r = rawpeer_read(p, store + UIW_MPA_HDR_LEN, pdl, left_ms(deadline));
        if (r < 0)
            return r;
    }
    return uiw_mpa_frame_parse(kind, store, UIW_MPA_HDR_LEN + pdl, UIW_MPA_PD_MAX, f);
}

void rawpeer_start(struct rawpeer *p, bool crc, bool markers_tx, bool markers_rx)
{
    p->started = true;
    p->crc = crc;
    p->markers_tx = markers_tx;
    p->markers_rx = markers_rx;
    uiw_fpdu_tx_init(&p->tx, crc, markers_tx);
    uiw_fpdu_rx_init(&p->rx, crc, markers_rx, 0);
    for (int i = 0; i < 3; i++)
        p->msn[i] = 1;
}

ssize_t rawpeer_frame(struct rawpeer *p, const struct uiw_wire_iov *ulpdu, int n, uint8_t *out,
                      size_t cap)
{
    return uiw_fpdu_tx_encode(&p->tx, ulpdu, n, out, cap);
}

int rawpeer_send_ulpdu(struct rawpeer *p, const struct uiw_wire_iov *ulpdu, int n)
{
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += ulpdu[i].len;
    /* room for the FPDU and a marker every 512 bytes */
    size_t cap = uiw_fpdu_len(len) + 4 * (len / 128 + 4);
    uint8_t *buf = malloc(cap);
    if (!buf)
        return -ENOMEM;
    ssize_t k = rawpeer_frame(p, ulpdu, n, buf, cap);
    int r = k < 0 ? (int)k : rawpeer_write(p, buf, (size_t)k);
    free(buf);
    return r;
}

void rawpeer_tagged_hdr(uint8_t out[UIW_DDP_TAGGED_HDR_LEN], uint8_t rdmap_ctrl, bool last,
                        uint32_t stag, uint64_t to)
{
    struct uiw_ddp_hdr h = {
        .tagged = true, .last = last, .rdmap_ctrl = rdmap_ctrl, .stag = stag, .to = to};
    uiw_ddp_hdr_encode(&h, out, UIW_DDP_TAGGED_HDR_LEN);
}

void rawpeer_untagged_hdr(uint8_t out[UIW_DDP_UNTAGGED_HDR_LEN], uint8_t rdmap_ctrl, bool last,
                          uint32_t inv_stag, uint32_t qn, uint32_t msn, uint32_t mo)
{
    struct uiw_ddp_hdr h = {.tagged = false,
                            .last = last,
                            .rdmap_ctrl = rdmap_ctrl,
                            .rsvd_ulp = inv_stag,
                            .qn = qn,
                            .msn = msn,
                            .mo = mo};
    uiw_ddp_hdr_encode(&h, out, UIW_DDP_UNTAGGED_HDR_LEN);
}

int rawpeer_send_write(struct rawpeer *p, uint32_t stag, uint64_t to, const void *data, size_t len)
{
    uint8_t h[UIW_DDP_TAGGED_HDR_LEN];
    rawpeer_tagged_hdr(h, uiw_rdmap_ctrl(UIW_RDMAP_WRITE), true, stag, to);
    struct uiw_wire_iov v[2] = {{h, sizeof(h)}, {data, len}};
    return rawpeer_send_ulpdu(p, v, len ? 2 : 1);
}

int rawpeer_send_send(struct rawpeer *p, enum uiw_rdmap_opcode op, uint32_t inv_stag,
                      const void *data, size_t len)
{
    uint8_t h[UIW_DDP_UNTAGGED_HDR_LEN];
    rawpeer_untagged_hdr(h, uiw_rdmap_ctrl(op), true, inv_stag, UIW_DDP_QN_SEND,
                         p->msn[UIW_DDP_QN_SEND]++, 0);
    struct uiw_wire_iov v[2] = {{h, sizeof(h)}, {data, len}};
    return rawpeer_send_ulpdu(p, v, len ? 2 : 1);
}

int rawpeer_send_read_req(struct rawpeer *p, const struct uiw_rdmap_read_req *rr)
{
    uint8_t b[UIW_DDP_UNTAGGED_HDR_LEN + UIW_RDMAP_READ_REQ_LEN];
    rawpeer_untagged_hdr(b, uiw_rdmap_ctrl(UIW_RDMAP_READ_REQ), true, 0, UIW_DDP_QN_READ_REQ,
                         p->msn[UIW_DDP_QN_READ_REQ]++, 0);
    uiw_rdmap_read_req_encode(rr, b + UIW_DDP_UNTAGGED_HDR_LEN);
    struct uiw_wire_iov v = {b, sizeof(b)};
    return rawpeer_send_ulpdu(p, &v, 1);
}

int rawpeer_recv_fpdu(struct rawpeer *p, uint8_t *ulpdu, size_t cap, uint16_t *len, int timeout_ms)
{
    uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
    bool consumed = false;
    for (;;) {
        if (p->in_have > p->in_off) {
            bool done = false;
            uint16_t ul = 0;
            ssize_t r = uiw_fpdu_rx_feed(&p->rx, p->in + p->in_off, p->in_have - p->in_off, ulpdu,
                                         cap, &ul, &done);
            if (r < 0)
                return (int)r;
            if (r > 0)
                consumed = true;
            p->in_off += (size_t)r;
            if (done) {
                *len = ul;
                return 1;
            }
        }
        int f = fill(p, deadline);
        if (f == 0)
            return consumed ? -EPIPE : 0;
        if (f < 0)
            return f;
    }
}

int rawpeer_expect_terminate(struct rawpeer *p, struct rawpeer_term *term, int timeout_ms)
{
    uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
    memset(term, 0, sizeof(*term));
    uint8_t *buf = malloc(UIW_FPDU_MAX_ULPDU);
    if (!buf)
        return -ENOMEM;
    int ret;
    for (;;) {
        uint16_t len = 0;
        int r = rawpeer_recv_fpdu(p, buf, UIW_FPDU_MAX_ULPDU, &len, left_ms(deadline));
        if (r <= 0) {
            ret = r == 0 ? -ENODATA : r;
            break;
        }
        struct uiw_ddp_hdr h;
        ssize_t hl = uiw_ddp_hdr_parse(buf, len, &h);
        bool is_term = hl == UIW_DDP_UNTAGGED_HDR_LEN && h.qn == UIW_DDP_QN_TERMINATE;
        if (!is_term) {
            term->fpdus_before++;
            continue;
        }
        term->ddp = h;
        term->raw_len = len < sizeof(term->raw) ? len : (uint16_t)sizeof(term->raw);
        memcpy(term->raw, buf, term->raw_len);
        if (!h.last || h.mo != 0 || uiw_rdmap_ctrl_version(h.rdmap_ctrl) != UIW_RDMAP_VERSION ||
            uiw_rdmap_ctrl_opcode(h.rdmap_ctrl) != UIW_RDMAP_TERMINATE ||
            (h.rdmap_ctrl & 0x30) != 0) {
            ret = -EPROTO;
            break;
        }
        ssize_t b =
            uiw_terminate_parse_order(buf + hl, len - (size_t)hl, UIW_TERM_ORDER_RFC, &term->t);
        ret = b < 0 ? -EPROTO : 0;
        break;
    }
    free(buf);
    return ret;
}

int rawpeer_wait_eof(struct rawpeer *p, int timeout_ms, size_t *extra)
{
    uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
    size_t more = p->in_have - p->in_off;
    p->in_off = p->in_have = 0;
    for (;;) {
        int r = fill(p, deadline);
        if (r == 1) {
            more += p->in_have;
            p->in_off = p->in_have = 0;
            continue;
        }
        if (extra)
            *extra = more;
        if (r == 0 || r == -ECONNRESET)
            return more ? -EPROTO : 1;
        return r == -ETIMEDOUT ? 0 : r;
    }
}
