/* Helpers shared by the io tests: addresses, bounded event waits, raw TCP peers. */
#ifndef UIW_TESTS_IO_UTIL_H
#define UIW_TESTS_IO_UTIL_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <uiw/cm.h>
#include <uiw/wire.h>

#include "test.h"

enum { EV_WAIT_MS = 15000 }; /* bound on every wait (a hang guard, not a timing) */

/* In a designated initializer of struct uiw_conn_param: IRD and ORD as the QP allows
 * (0 would mean none). */
#define IO_DEPTHS                                                                                  \
    .responder_resources = UIW_CM_IRD_ORD_DEFAULT, .initiator_depth = UIW_CM_IRD_ORD_DEFAULT

static inline uint64_t io_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static inline struct sockaddr_storage io_addr(int family, uint16_t port)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    if (family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        a->sin6_port = htons(port);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a->sin_port = htons(port);
    }
    return ss;
}

static inline uint16_t io_port(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
    return ntohs(((const struct sockaddr_in *)sa)->sin_port);
}

/* The next event of the channel, which must be of type t (bounded wait). */
static inline struct uiw_cm_event *io_expect(struct uiw_cm_channel *ch, enum uiw_cm_event_type t)
{
    struct uiw_cm_event *ev = NULL;
    int r = uiw_cm_get_event(ch, &ev, EV_WAIT_MS);
    if (r != 0)
        uiw_test_fail(__FILE__, __LINE__, "no event (wanted %s): %s", uiw_cm_event_str(t),
                      uiw_strerror(r));
    if (ev->event != t)
        uiw_test_fail(__FILE__, __LINE__, "event %s (status %d %s), wanted %s",
                      uiw_cm_event_str(ev->event), ev->status, uiw_strerror(ev->status),
                      uiw_cm_event_str(t));
    return ev;
}

/* A listener id on loopback (port chosen by the kernel) with room for backlog pending
 * connections; returns its port. */
static inline uint16_t io_listen_n(struct uiw_cm_id *id, int family, const struct uiw_conn_param *p,
                                   int backlog)
{
    struct sockaddr_storage ss = io_addr(family, 0);
    CHECK_EQ(uiw_cm_bind_addr(id, (struct sockaddr *)&ss), 0);
    CHECK_EQ(uiw_cm_listen(id, backlog, p), 0);
    const struct sockaddr *la = uiw_cm_get_local_addr(id);
    CHECK(la != NULL);
    CHECK(io_port(la) != 0);
    return io_port(la);
}

static inline uint16_t io_listen(struct uiw_cm_id *id, int family, const struct uiw_conn_param *p)
{
    return io_listen_n(id, family, p, 8);
}

/* Raw blocking TCP helpers for hand-made peers. */
static inline int raw_listen(int family, uint16_t *port)
{
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(fd >= 0);
    struct sockaddr_storage ss = io_addr(family, 0);
    socklen_t len = family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    CHECK_EQ(bind(fd, (struct sockaddr *)&ss, len), 0);
    CHECK_EQ(listen(fd, 4), 0);
    len = sizeof(ss);
    CHECK_EQ(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
    *port = io_port((struct sockaddr *)&ss);
    return fd;
}

static inline int raw_connect(int family, uint16_t port)
{
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(fd >= 0);
    struct sockaddr_storage ss = io_addr(family, port);
    socklen_t len = family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    CHECK_EQ(connect(fd, (struct sockaddr *)&ss, len), 0);
    return fd;
}

/* Read exactly n bytes within timeout_ms; returns bytes read (less on EOF/timeout). */
static inline size_t raw_read(int fd, void *buf, size_t n, int timeout_ms)
{
    size_t got = 0;
    while (got < n) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, timeout_ms) <= 0)
            break;
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    return got;
}

/* 1 if the peer closed the connection (EOF or reset) within timeout_ms. */
static inline int raw_wait_closed(int fd, int timeout_ms)
{
    char b[256];
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, timeout_ms) <= 0)
            return 0;
        ssize_t r = read(fd, b, sizeof(b));
        if (r <= 0)
            return 1;
    }
}

/* Drive the channel (no event may surface meanwhile) until fd is readable (data, EOF or
 * reset); bounded. */
static inline void io_pump_until_readable(struct uiw_cm_channel *ch, int fd)
{
    uint64_t end = io_now_ms() + EV_WAIT_MS;
    for (;;) {
        struct uiw_cm_event *ev = NULL;
        int r = uiw_cm_get_event(ch, &ev, 0);
        if (r == 0)
            uiw_test_fail(__FILE__, __LINE__, "unexpected event %s", uiw_cm_event_str(ev->event));
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 10) > 0)
            return;
        if (io_now_ms() > end)
            uiw_test_fail(__FILE__, __LINE__, "socket not readable within %d ms", EV_WAIT_MS);
    }
}

#endif
