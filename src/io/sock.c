/* TCP socket helpers: non-blocking sockets, NODELAY, keepalive, user timeout, EMSS. */
#include "io/sock.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

socklen_t uiw__sock_addrlen(const struct sockaddr *sa)
{
    if (!sa)
        return 0;
    if (sa->sa_family == AF_INET)
        return sizeof(struct sockaddr_in);
    if (sa->sa_family == AF_INET6)
        return sizeof(struct sockaddr_in6);
    return 0;
}

int uiw__sock_tcp(const struct sockaddr *sa)
{
    if (!uiw__sock_addrlen(sa))
        return -EAFNOSUPPORT;
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
    if (fd < 0)
        return -errno;
    return fd;
}

static int setopt(int fd, int level, int name, int v)
{
    if (setsockopt(fd, level, name, &v, sizeof(v)) < 0)
        return -errno;
    return 0;
}

int uiw__sock_setup(int fd, const struct uiw_conn_param *p)
{
    int r = setopt(fd, IPPROTO_TCP, TCP_NODELAY, 1);
    if (r < 0 || !p)
        return r;
    if (p->keepalive_idle_s || p->keepalive_intvl_s || p->keepalive_cnt) {
        if ((r = setopt(fd, SOL_SOCKET, SO_KEEPALIVE, 1)) < 0)
            return r;
        if (p->keepalive_idle_s &&
            (r = setopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, (int)p->keepalive_idle_s)) < 0)
            return r;
        if (p->keepalive_intvl_s &&
            (r = setopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, (int)p->keepalive_intvl_s)) < 0)
            return r;
        if (p->keepalive_cnt &&
            (r = setopt(fd, IPPROTO_TCP, TCP_KEEPCNT, (int)p->keepalive_cnt)) < 0)
            return r;
    }
    if (p->tcp_user_timeout_ms &&
        (r = setopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, (int)p->tcp_user_timeout_ms)) < 0)
        return r;
    return 0;
}

uint32_t uiw__sock_emss(int fd)
{
    int mss = 0;
    socklen_t len = sizeof(mss);
    if (getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) < 0 || mss <= 0)
        mss = 536;
    /* Right after the handshake Linux bounds TCP_MAXSEG by half the peer's initial window
     * (on loopback 32 KiB of a 64 KiB MSS); the route's MSS (advmss) is what the segments
     * grow to, so FPDUs are sized to it. */
    struct tcp_info ti;
    len = sizeof(ti);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 && ti.tcpi_advmss > (uint32_t)mss &&
        ti.tcpi_advmss <= 65535)
        mss = (int)ti.tcpi_advmss;
    return (uint32_t)mss;
}

uint64_t uiw__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int uiw__sock_write_all(int fd, const void *buf, size_t n, int timeout_ms)
{
    const char *p = buf;
    uint64_t end = uiw__now_ms() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms);
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return -errno;
        uint64_t now = uiw__now_ms();
        if (now >= end)
            return -ETIMEDOUT;
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        if (poll(&pfd, 1, (int)(end - now)) < 0 && errno != EINTR)
            return -errno;
    }
    return 0;
}
