/* Socket helpers and the event loop of the io layer. */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>

#include "io/loop.h"
#include "io/sock.h"
#include "io_util.h"

static int getopt_int(int fd, int level, int name)
{
    int v = -1;
    socklen_t len = sizeof(v);
    CHECK_EQ(getsockopt(fd, level, name, &v, &len), 0);
    return v;
}

TEST(sock_liveness_options)
{
    struct sockaddr_storage ss = io_addr(AF_INET, 0);
    int fd = uiw__sock_tcp((struct sockaddr *)&ss);
    CHECK(fd >= 0);
    struct uiw_conn_param p = {.keepalive_idle_s = 7,
                               .keepalive_intvl_s = 3,
                               .keepalive_cnt = 4,
                               .tcp_user_timeout_ms = 1234};
    CHECK_EQ(uiw__sock_setup(fd, &p), 0);
    CHECK_EQ(getopt_int(fd, IPPROTO_TCP, TCP_NODELAY), 1);
    CHECK_EQ(getopt_int(fd, SOL_SOCKET, SO_KEEPALIVE), 1);
    CHECK_EQ(getopt_int(fd, IPPROTO_TCP, TCP_KEEPIDLE), 7);
    CHECK_EQ(getopt_int(fd, IPPROTO_TCP, TCP_KEEPINTVL), 3);
    CHECK_EQ(getopt_int(fd, IPPROTO_TCP, TCP_KEEPCNT), 4);
    CHECK_EQ(getopt_int(fd, IPPROTO_TCP, TCP_USER_TIMEOUT), 1234);
    close(fd);
    struct sockaddr_un_like {
        sa_family_t f;
    } bad = {AF_UNIX};
    CHECK_EQ(uiw__sock_tcp((struct sockaddr *)&bad), -EAFNOSUPPORT);
    CHECK_EQ(uiw__sock_addrlen(NULL), 0);
}

TEST(sock_emss_and_mulpdu)
{
    uint16_t port;
    int lfd = raw_listen(AF_INET, &port);
    int fd = raw_connect(AF_INET, port);
    uint32_t emss = uiw__sock_emss(fd);
    CHECK(emss >= 536);
    CHECK(emss >= (uint32_t)getopt_int(fd, IPPROTO_TCP, TCP_MAXSEG));
    struct tcp_info ti;
    socklen_t len = sizeof(ti);
    CHECK_EQ(getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len), 0);
    CHECK(emss >= ti.tcpi_advmss || ti.tcpi_advmss > 65535);
    /* RFC 5044 8.1: EMSS - (6 + EMSS mod 4) without markers. */
    CHECK_EQ(uiw_mpa_mulpdu(emss, false), emss - (6 + emss % 4));
    close(fd);
    close(lfd);
}

struct counter {
    struct uiw__ioh h;
    int calls;
};

static void count_fn(struct uiw__ioh *h, uint32_t events)
{
    struct counter *c = (struct counter *)h;
    uint64_t v;
    CHECK(events & EPOLLIN);
    CHECK_EQ(read(h->fd, &v, sizeof(v)), (ssize_t)sizeof(v));
    c->calls++;
}

static int bells;
static void on_bell(struct uiw__loop *l, void *arg)
{
    (void)l;
    (void)arg;
    __atomic_add_fetch(&bells, 1, __ATOMIC_SEQ_CST);
}

TEST(loop_dispatch_and_doorbell)
{
    struct uiw__loop l;
    CHECK_EQ(uiw__loop_init(&l, false), 0);
    l.on_bell = on_bell;
    int pfd[2];
    CHECK_EQ(pipe(pfd), 0);
    struct counter c = {.h = {.fd = pfd[0], .fn = count_fn}};
    CHECK_EQ(uiw__loop_set(&l, &c.h, EPOLLIN), 0);
    CHECK_EQ(uiw__loop_run(&l, 0), 0); /* nothing ready */
    uint64_t one = 1;
    CHECK_EQ(write(pfd[1], &one, sizeof(one)), (ssize_t)sizeof(one));
    CHECK_EQ(uiw__loop_run(&l, 1000), 1);
    CHECK_EQ(c.calls, 1);
    uiw__loop_kick(&l);
    CHECK(uiw__loop_try(&l) >= 1);
    CHECK_EQ(__atomic_load_n(&bells, __ATOMIC_SEQ_CST), 1);
    uiw__loop_del(&l, &c.h);
    CHECK_EQ(write(pfd[1], &one, sizeof(one)), (ssize_t)sizeof(one));
    CHECK_EQ(uiw__loop_run(&l, 0), 0); /* removed: not dispatched */
    CHECK_EQ(c.calls, 1);
    /* A progress thread picks up the doorbell by itself. */
    CHECK_EQ(uiw__loop_start_thread(&l), 0);
    uiw__loop_kick(&l);
    uint64_t end = io_now_ms() + EV_WAIT_MS;
    while (__atomic_load_n(&bells, __ATOMIC_SEQ_CST) < 2 && io_now_ms() < end)
        poll(NULL, 0, 1);
    CHECK(__atomic_load_n(&bells, __ATOMIC_SEQ_CST) >= 2);
    uiw__loop_fini(&l);
    close(pfd[0]);
    close(pfd[1]);
}

/* A parked handler is out of the epoll set (the wake-up callback of a socket there runs in
 * every sender's system call), yet every pass still serves it; whatever may sleep on the
 * set registers it again first, and a parked handler asked for more than EPOLLIN or
 * removed leaves the parked list. */
TEST(loop_parked_handler)
{
    struct uiw__loop l;
    CHECK_EQ(uiw__loop_init(&l, false), 0);
    int pfd[2];
    CHECK_EQ(pipe(pfd), 0);
    struct counter c = {.h = {.fd = pfd[0], .fn = count_fn}};
    CHECK_EQ(uiw__loop_set(&l, &c.h, EPOLLIN | EPOLLOUT), 0);
    CHECK_EQ(uiw__loop_park(&l, &c.h), -EINVAL); /* only a reader parks */
    CHECK_EQ(uiw__loop_set(&l, &c.h, EPOLLIN), 0);
    CHECK_EQ(uiw__loop_park(&l, &c.h), 0);
    CHECK(c.h.parked && c.h.events == 0 && l.parked == &c.h);
    uint64_t one = 1;
    CHECK_EQ(write(pfd[1], &one, sizeof(one)), (ssize_t)sizeof(one));
    struct epoll_event ev;
    CHECK_EQ(epoll_wait(l.epfd, &ev, 1, 0), 0); /* not in the set */
    CHECK_EQ(uiw__loop_run(&l, 0), 1);          /* but a pass serves it */
    CHECK_EQ(c.calls, 1);
    CHECK_EQ(uiw__loop_set(&l, &c.h, EPOLLIN), 0); /* a reader again: stays parked */
    CHECK(c.h.parked);

    /* a pass that may sleep registers it first: the data written meanwhile wakes it */
    CHECK_EQ(write(pfd[1], &one, sizeof(one)), (ssize_t)sizeof(one));
    CHECK_EQ(uiw__loop_run(&l, 1000), 1);
    CHECK(!c.h.parked && c.h.events == EPOLLIN && l.parked == NULL);
    CHECK_EQ(c.calls, 2);

    /* the poller's policy: parked after enough direct reads, unless a thread may sleep on
     * the set */
    for (int i = 1; i < 64; i++) {
        uiw__loop_direct_read(&l, &c.h);
        CHECK(!c.h.parked);
    }
    atomic_store(&l.waiters, 1);
    uiw__loop_direct_read(&l, &c.h);
    CHECK(!c.h.parked);
    atomic_store(&l.waiters, 0);
    uiw__loop_direct_read(&l, &c.h);
    CHECK(c.h.parked);

    /* a sleeper in uiw__loop_wait registers it too, and is woken by its input */
    CHECK_EQ(write(pfd[1], &one, sizeof(one)), (ssize_t)sizeof(one));
    int efd[2];
    CHECK_EQ(pipe(efd), 0);
    CHECK_EQ(uiw__loop_wait(&l, efd[0], EV_WAIT_MS), 0);
    CHECK(!c.h.parked && c.h.events == EPOLLIN);
    CHECK_EQ(c.calls, 3);
    close(efd[0]);
    close(efd[1]);

    /* more than EPOLLIN, or removal, takes it off the parked list */
    CHECK_EQ(uiw__loop_park(&l, &c.h), 0);
    CHECK_EQ(uiw__loop_set(&l, &c.h, EPOLLIN | EPOLLOUT), 0);
    CHECK(!c.h.parked && l.parked == NULL && c.h.events == (EPOLLIN | EPOLLOUT));
    CHECK_EQ(uiw__loop_set(&l, &c.h, EPOLLIN), 0);
    CHECK_EQ(uiw__loop_park(&l, &c.h), 0);
    uiw__loop_del(&l, &c.h);
    CHECK(!c.h.parked && l.parked == NULL && c.h.events == 0);
    CHECK_EQ(write(pfd[1], &one, sizeof(one)), (ssize_t)sizeof(one));
    CHECK_EQ(uiw__loop_run(&l, 0), 0);
    CHECK_EQ(c.calls, 3);
    uiw__loop_fini(&l);
    close(pfd[0]);
    close(pfd[1]);
}
