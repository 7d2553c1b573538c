/*
 * The data path of one connection: drives its engine QP with readv/writev.
 *
 * RX: the engine says where the next stream bytes belong (a staging ring for small FPDUs,
 * or straight into target memory for a large payload); one read/readv fills them.
 * TX: the engine gathers many FPDUs (framing from its scratch, payload from registered
 * memory); one sendmsg sends them; partial writes wait for EPOLLOUT.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "io/io.h"
#include "io/pcap.h"
#include "io/sock.h"
#include "common/compiler.h"
#include "common/log.h"

enum { CONN_IOV = UIW__CONN_IOV, CONN_BUDGET = 64 };

int uiw__conn_start(struct uiw_qp *qp, int fd, struct uiw__pcap *pcap,
                    const struct uiw__conn_owner *owner, void *arg,
                    const struct uiw__conn_params *p, struct uiw__conn **out)
{
    struct uiw_context *ctx = uiw__qp_context(qp);
    struct uiw__io *io = uiw__io_of(ctx);
    if (!io)
        return -EINVAL;
    if (uiw__qp_io(qp))
        return -EBUSY;
    struct uiw__conn *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->h.fd = fd;
    c->h.fn = NULL;
    c->wake.fd = -1;
    c->io = io;
    c->qp = qp;
    c->owner = owner;
    c->owner_arg = arg;
    c->pcap = pcap;
    c->log_id = p->conn_id;
    c->open = true;
    uiw__qp_set_io(qp, c);
    int r = uiw__qp_start(qp, p);
    if (r < 0) {
        uiw__qp_set_io(qp, NULL);
        free(c);
        return r;
    }
    *out = c;
    return 0;
}

static void conn_events(struct uiw__ioh *h, uint32_t events)
{
    struct uiw__conn *c = (struct uiw__conn *)((char *)h - offsetof(struct uiw__conn, h));
    uiw__conn_service(c, events);
}

/* The wake-up timer is done with (fired, or the connection ends). loop.lock held, or the
 * connection not yet registered. */
static void conn_wake_stop(struct uiw__conn *c)
{
    if (c->wake.fd < 0)
        return;
    if (c->wake.events)
        uiw__loop_del(&c->io->loop, &c->wake);
    close(c->wake.fd);
    c->wake.fd = -1;
    c->wake_state = UIW__WAKE_NONE;
}

static void conn_wake_arm(struct uiw__conn *c);

/* The connection of its timer (c->wake: the wake-up's or the lingering close's). */
static struct uiw__conn *timer_conn(struct uiw__ioh *h)
{
    return (struct uiw__conn *)((char *)h - offsetof(struct uiw__conn, wake));
}

/* Consume the timer's expiry: false when it has not expired (a stale readiness). */
static bool timer_fired(struct uiw__conn *c)
{
    uint64_t ticks;
    return !(read(c->wake.fd, &ticks, sizeof(ticks)) < 0 && errno == EAGAIN);
}

/* The timer fired: if the peer has sent nothing yet, the zero-length Write goes out, and
 * the timer runs again for twice as long while tries are left (a responder that was
 * still moving its socket to the QP when the last one arrived missed it too). */
static void wake_events(struct uiw__ioh *h, uint32_t events)
{
    struct uiw__conn *c = timer_conn(h);
    (void)events;
    if (!timer_fired(c))
        return;
    if (c->open && !c->closing && uiw__qp_wake(c->qp)) {
        uiw__conn_service(c, 0);
        if (--c->wake_left > 0) {
            c->wake_ms *= 2;
            conn_wake_arm(c);
            return;
        }
    }
    conn_wake_stop(c);
}

int uiw__conn_wake(struct uiw__conn *c, unsigned ms)
{
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    c->wake.fd = fd;
    c->wake.fn = wake_events;
    c->wake_ms = ms;
    c->wake_left = UIW__WAKE_TRIES;
    c->wake_state = UIW__WAKE_IDLE;
    return 0;
}

/* The first bytes of the stream went out (or a wake-up Write did): start the wake-up
 * timer. */
UIW__COLD static void conn_wake_arm(struct uiw__conn *c)
{
    struct itimerspec its = {0};
    its.it_value.tv_sec = c->wake_ms / 1000;
    its.it_value.tv_nsec = (long)(c->wake_ms % 1000) * 1000000L;
    c->wake_state = UIW__WAKE_ARMED;
    if (timerfd_settime(c->wake.fd, 0, &its, NULL) < 0)
        conn_wake_stop(c);
}

void uiw__conn_go(struct uiw__conn *c)
{
    struct uiw__io *io = c->io;
    uiw__lock_take(&io->loop.lock);
    c->h.fn = conn_events;
    c->next = io->conns;
    c->prev = NULL;
    if (io->conns)
        io->conns->prev = c;
    io->conns = c;
    if (c->wake.fd >= 0 && uiw__loop_set(&io->loop, &c->wake, EPOLLIN) < 0)
        conn_wake_stop(c);
    uiw__loop_set(&io->loop, &c->h, EPOLLIN);
    uiw__conn_service(c, 0);
    uiw__lock_give(&io->loop.lock);
}

/* Tell the owner once that the stream ended. loop.lock held. */
static void conn_tell_owner(struct uiw__conn *c, int reason)
{
    if (c->owner_told)
        return;
    c->owner_told = true;
    if (c->owner_arg)
        c->owner->ended(c->owner_arg, reason);
}

/* Tell the engine once that the stream ended. loop.lock held. */
static void conn_report_engine(struct uiw__conn *c, int reason)
{
    if (c->reported)
        return;
    c->reported = true;
    if (reason == 0)
        UIW__LOG(UIW__LOG_INFO, c->log_id, uiw_qp_num(c->qp), "connection closed");
    else
        UIW__LOG(UIW__LOG_WARN, c->log_id, uiw_qp_num(c->qp), "connection lost: %s",
                 uiw_strerror(reason));
    uiw__qp_conn_lost(c->qp, reason);
    uiw__pcap_close(c->pcap);
    c->pcap = NULL;
}

/* Tell the engine and the owner. loop.lock held. */
static void conn_report(struct uiw__conn *c, int reason)
{
    conn_report_engine(c, reason);
    conn_tell_owner(c, reason);
}

static void conn_close_fd(struct uiw__conn *c)
{
    conn_wake_stop(c);
    if (!c->open)
        return;
    uiw__loop_del(&c->io->loop, &c->h);
    close(c->h.fd);
    c->h.fd = -1;
    c->open = false;
}

/* The stream is over (EOF, error): report and close. loop.lock held. */
static void conn_end(struct uiw__conn *c, int reason)
{
    conn_report(c, reason);
    conn_close_fd(c);
}

/* The lingering close is over (the peer closed, the socket failed, or UIW__LINGER_MS
 * passed): close the socket and tell the owner. loop.lock held. */
static void conn_linger_end(struct uiw__conn *c)
{
    conn_close_fd(c);
    conn_tell_owner(c, 0);
}

static void conn_drain(struct uiw__conn *c)
{
    uint8_t sink[4096];
    c->rx_skip = 0; /* discarded with the rest */
    for (;;) {
        ssize_t n = read(c->h.fd, sink, sizeof(sink));
        if (n > 0)
            continue;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            /* inline progress may run no loop pass that would see the timer */
            if (uiw__now_ms() >= c->linger_until)
                conn_linger_end(c);
            return;
        }
        conn_linger_end(c); /* EOF or error: the peer is gone too */
        return;
    }
}

static void linger_events(struct uiw__ioh *h, uint32_t events)
{
    struct uiw__conn *c = timer_conn(h);
    (void)events;
    if (!timer_fired(c))
        return;
    if (c->open)
        conn_linger_end(c);
    else
        conn_wake_stop(c);
}

/* The engine is done sending: tell the engine (its work completes), send our FIN after
 * the queued bytes and keep reading (discarding) until the peer closes too, so that no
 * unread input turns the close into a reset that could discard the last bytes we sent
 * (a Send still unacknowledged, a Terminate). The owner hears that the stream ended only
 * then (or after UIW__LINGER_MS): an owner that destroys the QP on that word loses none
 * of it. uiw__conn_destroy ends the wait in any case. loop.lock held. */
static void conn_linger(struct uiw__conn *c)
{
    conn_wake_stop(c);
    conn_report_engine(c, 0);
    shutdown(c->h.fd, SHUT_WR);
    c->closing = true;
    c->linger_until = uiw__now_ms() + UIW__LINGER_MS;
    uiw__loop_set(&c->io->loop, &c->h, EPOLLIN);
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (fd < 0)
        return; /* the next drain after the bound ends it */
    struct itimerspec its = {0};
    its.it_value.tv_sec = UIW__LINGER_MS / 1000;
    its.it_value.tv_nsec = (long)(UIW__LINGER_MS % 1000) * 1000000L;
    c->wake.fd = fd;
    c->wake.fn = linger_events;
    if (timerfd_settime(fd, 0, &its, NULL) < 0 ||
        uiw__loop_set(&c->io->loop, &c->wake, EPOLLIN) < 0)
        conn_wake_stop(c);
}

/* Write iov[0..cnt): one send() for a single piece (cheaper in the kernel than sendmsg's
 * msghdr and iovec import), sendmsg() otherwise. */
UIW__DATAPATH static ssize_t conn_write(int fd, const struct iovec *iov, int cnt)
{
    if (cnt == 1)
        return send(fd, iov[0].iov_base, iov[0].iov_len, MSG_NOSIGNAL | MSG_DONTWAIT);
    struct msghdr m = {.msg_iov = (struct iovec *)(uintptr_t)iov, .msg_iovlen = (size_t)cnt};
    return sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* A file region's payload (uiw__qp_tx_file), the iovec tx_next handed alone: its bytes
 * from the file by sendfile, zeros for those past the file's end (truncated since the
 * work request was posted: the FPDU's length is on the wire already). Same returns as
 * conn_write; an error reading the file (EIO) ends the connection, as a socket's does. */
UIW__NOINLINE static ssize_t conn_sendfile(struct uiw__conn *c, const struct iovec *v)
{
    int fd;
    uint64_t off;
    if (uiw__qp_tx_file(c->qp, &fd, &off) != 0) {
        errno = EINVAL;
        return -1;
    }
    off_t o = (off_t)off;
    ssize_t w = sendfile(c->h.fd, fd, &o, v->iov_len);
    if (w == 0) {
        static const uint8_t zeros[4096];
        w = send(c->h.fd, zeros, v->iov_len < sizeof(zeros) ? v->iov_len : sizeof(zeros),
                 MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0 && c->pcap)
            uiw__pcap_data(c->pcap, 1, &(struct iovec){(void *)(uintptr_t)zeros, (size_t)w}, 1,
                           (size_t)w);
        return w;
    }
    if (w > 0 && c->pcap) {
        /* the capture's copy of what went (a debugging aid: read again, not zero-copy) */
        uint8_t *b = malloc((size_t)w);
        if (b) {
            ssize_t r = pread(fd, b, (size_t)w, (off_t)off);
            if (r < w)
                memset(b + (r > 0 ? r : 0), 0, (size_t)(w - (r > 0 ? r : 0)));
            uiw__pcap_data(c->pcap, 1, &(struct iovec){b, (size_t)w}, 1, (size_t)w);
            free(b);
        }
    }
    return w;
}

/* What tx_next handed: memory (conn_write) or a file's payload alone (conn_sendfile). */
UIW__DATAPATH static ssize_t conn_send_iov(struct uiw__conn *c, const struct iovec *iov, int cnt)
{
    if (cnt == 1 && iov[0].iov_base == uiw__tx_file_mark)
        return conn_sendfile(c, iov);
    ssize_t w = conn_write(c->h.fd, iov, cnt);
    if (c->pcap && w > 0)
        uiw__pcap_data(c->pcap, 1, iov, cnt, (size_t)w);
    return w;
}

UIW__DATAPATH static size_t iov_total(const struct iovec *iov, int n)
{
    size_t t = 0;
    for (int i = 0; i < n; i++)
        t += iov[i].iov_len;
    return t;
}

/* Consume the bytes already processed from a peek (MSG_TRUNC: no copy). Every read of
 * the socket comes after this. Returns 0 or -errno. */
UIW__DATAPATH static int conn_rx_skip(struct uiw__conn *c)
{
    if (!c->rx_skip)
        return 0;
    ssize_t t;
    do
        t = recv(c->h.fd, c->stage, c->rx_skip, MSG_TRUNC | MSG_DONTWAIT); /* not written */
    while (t < 0 && errno == EINTR);
    if (t < 0 || (size_t)t != c->rx_skip) /* the peeked bytes are ours alone */
        return t < 0 ? -errno : -EIO;
    c->rx_skip = 0;
    return 0;
}

/* One read (flags 0) or peek (MSG_PEEK) into the staging ring, after consuming what the
 * last peek left. Returns the bytes, 0 on EOF or -errno; on -EAGAIN (nothing there) the
 * engine's advice (hinted) still holds. */
UIW__DATAPATH static ssize_t conn_recv_ring(struct uiw__conn *c, uint8_t *buf, size_t cap,
                                            int flags, bool hinted)
{
    int e = conn_rx_skip(c);
    if (e < 0)
        return e;
    ssize_t n;
    do
        n = recv(c->h.fd, buf, cap, flags | MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n >= 0)
        return n;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
        c->rx_hinted = hinted;
        return -EAGAIN;
    }
    return -errno;
}

/* Staging mode: peek at what the socket holds (into the staging ring), let the engine
 * take what belongs in the ring (complete small FPDUs, up to the header of the first
 * large segment), and consume exactly that much from the socket without copying it again
 * (MSG_TRUNC discards TCP data), so that no large payload lands in the ring.
 * When the peek took everything the socket had, the consume waits for the next read
 * (conn_rx_skip): a ping-pong then pays one system call per message on its critical path,
 * the peek, and consumes while it waits for the answer.
 * Returns 0 to go on reading, 2 to read directly (uiw__qp_rx_next) now, -EAGAIN when the
 * socket is drained or the engine failed the stream, 1 on EOF, another -errno on error. */
UIW__DATAPATH static int conn_rx_staged(struct uiw__conn *c, uint8_t *buf, size_t cap, bool hinted)
{
    ssize_t n = conn_recv_ring(c, buf, cap, MSG_PEEK, hinted);
    if (n <= 0)
        return n == 0 ? 1 : (int)n;
    unsigned want = 0;
    int k = uiw__qp_rx_take(c->qp, (size_t)n, &want, &c->stage_cap);
    if (k == 0 || k == -EPIPE)
        return 2; /* nothing through the ring / the QP takes no more: read directly */
    c->rx_moved = true;
    if (c->pcap) { /* after a failure: all that was seen, the FPDU that failed included */
        struct iovec v = {.iov_base = buf, .iov_len = k < 0 ? (size_t)n : (size_t)k};
        uiw__pcap_data(c->pcap, 0, &v, 1, v.iov_len);
    }
    if (k < 0)
        return -EAGAIN; /* the engine queued a Terminate; TX sends it; the rest is dropped */
    c->rx_skip = (size_t)k;
    if (k == n && (size_t)n < cap) {
        c->rx_hint = want;
        c->rx_hinted = true;
        return -EAGAIN; /* took all the socket had: consume before the next read */
    }
    int e = conn_rx_skip(c);
    return e < 0 ? e : 0;
}

/* Reading mode: nothing but small segments can legally arrive (uiw__qp_rx_narrow), or
 * the engine knows that the next cap bytes belong in the ring (UIW__RX_EXACT), so read
 * into the staging ring: the read consumes, and a message costs one system call, as a
 * plain TCP receiver's does. Same returns as conn_rx_staged (never 2). */
UIW__DATAPATH static int conn_rx_read(struct uiw__conn *c, uint8_t *buf, size_t cap, bool hinted)
{
    ssize_t n = conn_recv_ring(c, buf, cap, 0, hinted);
    if (n <= 0)
        return n == 0 ? 1 : (int)n;
    c->rx_moved = true;
    if (c->pcap) {
        struct iovec v = {.iov_base = buf, .iov_len = (size_t)n};
        uiw__pcap_data(c->pcap, 0, &v, 1, v.iov_len);
    }
    unsigned want = 0;
    int k = uiw__qp_rx_staged(c->qp, (size_t)n, &want, &c->stage_cap);
    if (k == -EPIPE)
        return 0; /* the QP takes no more: the next pass discards */
    if (k < 0)
        return -EAGAIN; /* the engine queued a Terminate; TX sends it; the rest is dropped */
    c->rx_hint = want;
    c->rx_hinted = true;
    return (size_t)n < cap ? -EAGAIN /* took all the socket had */ : 0;
}

/* Read and drop what the socket holds (a sink off the data path's stack, which then spans
 * fewer pages): bytes read, 0 on EOF, or -errno. */
UIW__COLD static ssize_t conn_discard(struct uiw__conn *c)
{
    uint8_t sink[4096];
    ssize_t n = read(c->h.fd, sink, sizeof(sink));
    return n < 0 ? -errno : n;
}

/* Read what the socket has. Returns 0 (drained or budget spent), 1 on EOF, -errno. */
UIW__DATAPATH static int conn_rx_pass(struct uiw__conn *c)
{
    struct iovec *iov = c->iov;
    for (int i = 0; i < CONN_BUDGET; i++) {
        uint8_t *buf = c->stage;
        size_t cap = c->stage_cap;
        int cnt;
        /* after a message taken whole, the engine already said where the next bytes go;
         * whether only small segments can come is rechecked, it depends on the application,
         * and so does a peek's (a large Read posted since awaits its response) */
        bool hinted =
            c->rx_hinted && (c->rx_hint & UIW__WANT_STAGE) && buf &&
            ((c->rx_hint & (UIW__WANT_READ | UIW__WANT_EXACT)) || !uiw__qp_rx_wide_read(c->qp));
        /* an enum uiw__rx_advice, or -EPIPE (then uiw__qp_rx_next below says 0) */
        int staged = !hinted                          ? uiw__qp_rx_stage(c->qp, &buf, &cap)
                     : (c->rx_hint & UIW__WANT_EXACT) ? UIW__RX_EXACT
                     : (c->rx_hint & UIW__WANT_READ) && uiw__qp_rx_narrow(c->qp) ? UIW__RX_READ
                                                                                 : UIW__RX_PEEK;
        c->rx_hinted = false;
        bool ring = staged == UIW__RX_PEEK || staged == UIW__RX_READ || staged == UIW__RX_EXACT;
        if (ring) {
            c->stage = buf;
            c->stage_cap = cap;
        }
        if (ring && cap > 0) {
            int k = staged == UIW__RX_PEEK ? conn_rx_staged(c, buf, cap, hinted)
                                           : conn_rx_read(c, buf, cap, hinted);
            if (k == 0)
                continue;
            if (k != 2)
                return k == -EAGAIN ? 0 : k;
        }
        int e = conn_rx_skip(c);
        if (e < 0)
            return e;
        cnt = uiw__qp_rx_next(c->qp, iov, CONN_IOV);
        if (cnt <= 0) {
            /* The QP takes no more bytes (TERMINATE / ERROR): discard, watch for EOF. */
            ssize_t n = conn_discard(c);
            if (n > 0)
                continue;
            if (n == 0)
                return 1;
            if (n == -EINTR)
                continue;
            return n == -EAGAIN || n == -EWOULDBLOCK ? 0 : (int)n;
        }
        ssize_t n = readv(c->h.fd, iov, cnt);
        if (n <= 0) {
            int err = n < 0 ? errno : 0;
            uiw__qp_rx_advance(c->qp, 0); /* the iovecs are ours no more (uiw_dereg_mr) */
            if (n == 0)
                return 1;
            if (err == EINTR)
                continue;
            return err == EAGAIN || err == EWOULDBLOCK ? 0 : -err;
        }
        c->rx_moved = true;
        if (c->pcap)
            uiw__pcap_data(c->pcap, 0, iov, cnt, (size_t)n);
        int r = uiw__qp_rx_advance(c->qp, (size_t)n);
        if (r < 0)
            return 0; /* the engine queued a Terminate; TX sends it */
        if ((size_t)n < iov_total(iov, cnt))
            return 0;
    }
    /* Budget spent with bytes possibly left: the level-triggered poll comes back. */
    return 0;
}

/* conn_rx_pass, and the watch on a peer that stops within an FPDU (uiw__qp_rx_note)
 * after a pass that read bytes: one look at the parser, a clock read only within one. */
UIW__DATAPATH static int conn_rx(struct uiw__conn *c)
{
    c->rx_moved = false;
    int r = conn_rx_pass(c);
    if (c->rx_moved)
        uiw__qp_rx_note(c->qp, uiw__now_ms);
    return r;
}

/* verbs.h: the record uiw__qp_rx_note keeps, against io's clock. */
uint64_t uiw_qp_rx_stalled_ms(const struct uiw_qp *qp)
{
    if (!qp)
        return 0;
    uint64_t since = uiw__qp_rx_partial_since(qp);
    uint64_t now = since ? uiw__now_ms() : 0;
    return now > since ? now - since : 0;
}

/* Send what the engine has. Returns 0 or -errno. */
static int conn_tx(struct uiw__conn *c)
{
    struct iovec *iov = c->iov;
    c->out_blocked = false;
    for (int i = 0; i < CONN_BUDGET; i++) {
        int cnt = uiw__qp_tx_next(c->qp, iov, CONN_IOV);
        if (cnt <= 0)
            return 0;
        ssize_t w = conn_send_iov(c, iov, cnt);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                c->out_blocked = true;
                uiw__qp_tx_advance(c->qp, 0); /* we hold none of its iovecs */
                return 0;
            }
            return -errno;
        }
        uiw__qp_tx_advance(c->qp, (size_t)w);
        if (c->wake_state == UIW__WAKE_IDLE && w > 0)
            conn_wake_arm(c);
        if ((size_t)w < iov_total(iov, cnt)) {
            c->out_blocked = true;
            return 0;
        }
    }
    /* Budget spent: come back through the doorbell. */
    uiw__conn_defer(c);
    return 0;
}

/* After the read (r: what conn_rx returned, 0 if there was none): send what the engine
 * has, then act on what it wants. loop.lock held. */
static void conn_settle(struct uiw__conn *c, uint32_t events, int r)
{
    int eof = 0;
    if (r > 0) {
        eof = 1;
        r = 0;
    }
    if (r == 0 && (!c->out_blocked || (events & EPOLLOUT) || !events))
        r = conn_tx(c);
    if (r < 0) {
        conn_end(c, r);
        return;
    }
    unsigned want = uiw__qp_want(c->qp);
    if ((want & UIW__WANT_CLOSE) && !eof) {
        conn_linger(c);
        conn_drain(c);
        return;
    }
    if (eof) {
        conn_end(c, 0);
        return;
    }
    uiw__loop_set(&c->io->loop, &c->h, EPOLLIN | (c->out_blocked ? EPOLLOUT : 0u));
}

void uiw__conn_service(struct uiw__conn *c, uint32_t events)
{
    if (!c->open)
        return;
    if (c->closing) {
        conn_drain(c);
        return;
    }
    conn_settle(c, events, events & (EPOLLIN | EPOLLERR | EPOLLHUP) ? conn_rx(c) : 0);
}

UIW__DATAPATH int uiw__conn_probe(struct uiw__conn *c)
{
    c->rx_moved = false;
    if (!c->open || c->closing) {
        uiw__conn_service(c, EPOLLIN);
        return c->rx_moved;
    }
    const unsigned busy = UIW__WANT_TX | UIW__WANT_CLOSE;
    int r = conn_rx(c);
    /* Nothing arrived: nothing changed that the rest of a service pass would act on
     * (posting and closing kick the connection themselves). Something arrived that left
     * nothing to send or close (a Send, a Write, a Read Response): neither. */
    if (r == 0 && !c->rx_moved)
        return 0;
    if (r == 0 && !c->out_blocked && !((c->rx_hinted ? c->rx_hint : uiw__qp_want(c->qp)) & busy))
        return 1;
    conn_settle(c, EPOLLIN, r);
    return c->rx_moved;
}

void uiw__conn_defer(struct uiw__conn *c)
{
    struct uiw__io *io = c->io;
    uiw__lock_take(&io->pend_lock);
    if (!c->queued) {
        c->queued = true;
        c->pend_next = io->pending;
        io->pending = c;
    }
    uiw__lock_give(&io->pend_lock);
    uiw__loop_kick(&io->loop);
}

UIW__DATAPATH bool uiw__conn_send_locked(struct uiw__conn *c)
{
    struct uiw__loop *l = &c->io->loop;
    if (!uiw__lock_try(&l->lock))
        return false;
    bool done = false;
    /* anything but a plain send (a blocked or closing socket) takes the doorbell's path;
     * a capture records what the send took, in the order the loop lock gives the sends */
    if (c->h.fn && c->open && !c->closing && !c->out_blocked) {
        int cnt = uiw__qp_tx_next_locked(c->qp, c->iov, CONN_IOV);
        if (cnt > 0) {
            ssize_t w = conn_send_iov(c, c->iov, cnt);
            uiw__qp_tx_advance_locked(c->qp, w > 0 ? (size_t)w : 0);
            if (c->wake_state == UIW__WAKE_IDLE && w > 0)
                conn_wake_arm(c);
            /* all out, nothing more to send or close: nothing for the service pass */
            done = w > 0 && (size_t)w == iov_total(c->iov, cnt) &&
                   !(uiw__qp_want_locked(c->qp) & (UIW__WANT_TX | UIW__WANT_CLOSE));
        }
    }
    uiw__lock_give(&l->lock);
    return done;
}

UIW__DATAPATH void uiw__conn_kick(struct uiw__conn *c)
{
    struct uiw__loop *l = &c->io->loop;
    /* Inline progress: the application's thread does the I/O when nobody else is. */
    if (uiw__lock_try(&l->lock)) {
        if (c->h.fn)
            uiw__conn_service(c, 0);
        uiw__lock_give(&l->lock);
        return;
    }
    uiw__conn_defer(c);
}

bool uiw__conn_release_owner(struct uiw__conn *c, void *arg)
{
    uiw__lock_take(&c->io->loop.lock);
    bool owned = c->owner_arg == arg;
    if (owned)
        c->owner_arg = NULL;
    uiw__lock_give(&c->io->loop.lock);
    return owned;
}

void uiw__conn_destroy(struct uiw__conn *c)
{
    struct uiw__io *io = c->io;
    uiw__lock_take(&io->loop.lock);
    conn_wake_stop(c);
    if (c->open) {
        uiw__loop_del(&io->loop, &c->h);
        conn_tx(c); /* a Terminate of an abortive close goes out if the socket takes it */
        close(c->h.fd);
        c->open = false;
    }
    uiw__pcap_close(c->pcap);
    c->pcap = NULL;
    if (c->h.fn) {
        if (c->prev)
            c->prev->next = c->next;
        else
            io->conns = c->next;
        if (c->next)
            c->next->prev = c->prev;
    }
    uiw__lock_take(&io->pend_lock);
    if (c->queued) {
        struct uiw__conn **pp = &io->pending;
        while (*pp != c)
            pp = &(*pp)->pend_next;
        *pp = c->pend_next;
        c->queued = false;
    }
    uiw__lock_give(&io->pend_lock);
    uiw__qp_set_io(c->qp, NULL);
    uiw__lock_give(&io->loop.lock);
    free(c);
}
