/*
 * NFS and MOUNT over TCP: a pool of threads per server, one of which at a time is the
 * event thread (leader and followers).
 *
 * The event thread accepts connections (refusing those over the connection limit, with a
 * line in the log), reads every connection's bytes without blocking into the record
 * receiver (rm.c), and hands each whole call record to the call threads; it also writes
 * what a reply could not write at once, and closes connections: at end of stream or an
 * error, a record longer than the largest call (max_io plus its headers), a record whose
 * bytes stop coming or a reply the peer stops reading for io_timeout seconds, and a
 * connection without a call for idle_timeout seconds. TCP keepalive and TCP_USER_TIMEOUT
 * find peers that are gone.
 *
 * A call runs (call.c) and its reply is written at once without blocking; what does not
 * fit in the socket waits in the connection's queue for the event thread. The event
 * thread runs the calls it read itself, a few at a time between its looks at the sockets,
 * so a call costs no hand-off between threads (as with a thread per connection; other
 * connections' calls wait no longer than a few short calls). The standby, one thread
 * that looks every STEAL_NS while the server is busy, brings in the others: it takes the
 * event thread's role from a thread whose one call has run longer than STEAL_NS, which
 * finishes that call and then runs queued calls as a call thread, and it wakes an idle
 * thread for a call queued longer than that. So slow calls spread over the pool, and a
 * slow call holds up the reading of the other connections for about twice STEAL_NS at
 * most. Everything "the event thread's" below is used by the thread in that role alone,
 * handed over under the service's lock. No thread ever waits on one connection: a peer
 * that stops reading holds only the buffers of its own replies, and a connection with
 * UIW__NFS_CONN_CALLS calls running or UIW__NFS_CONN_LARGE large buffers held is not read
 * until some are done, so one client cannot take every thread or buffer. Several calls of
 * one connection run at once, as on knfsd, and their replies go out as each is done.
 *
 * NFSv4.1's back channel (nfs4cb.c) uses the connections clients bound to their
 * sessions: its call records go out through a connection's queue as replies do, and the
 * REPLY records that come back are handed to it by the event thread instead of run.
 *
 * A connection is freed when the event thread has closed it and no call of it runs
 * (reference counted); its socket is closed then, so no thread writes to a reused
 * descriptor.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "nfs/nfs4cb.h"
#include "nfs/server.h"
#include "nfs/vfs.h"

#define UIW__NFS_CONN_CALLS 32 /* calls of one connection running at once */
#define UIW__NFS_CONN_LARGE 4  /* large buffers one connection may hold */
#define MAX_LISTENERS       4
#define KEEPIDLE_S          60
#define KEEPINTVL_S         10
#define KEEPCNT             6
/* The event thread in one call this long loses its role; a call queued this long wakes an
 * idle thread. */
#define STEAL_NS        500000
#define INLINE_CALLS    16         /* calls the event thread runs between looks at the sockets */
#define STANDBY_IDLE_NS 50000000ll /* no call for this long: the standby sleeps */

struct work;

struct conn {
    struct conn *prev, *next; /* the service's list (its lock) */
    struct uiw__nfs_tcp *t;
    int fd;
    struct uiw__nfs_peer peer;
    char name[INET6_ADDRSTRLEN + 8];
    /* the event thread's alone */
    struct uiw__nfs_rm rm;
    uint32_t events; /* registered with epoll */
    int parked;      /* waits for a large buffer */
    int64_t rec_since_ns;
    /* under lock */
    pthread_mutex_t lock;
    int refs;
    int dead;     /* closed by the event thread: nothing more is written */
    int doomed;   /* a call thread asks the event thread to close it */
    int err;      /* why the socket failed (errno), for the log */
    int notified; /* on the event thread's list */
    struct conn *notify_next;
    unsigned inflight; /* calls queued or running */
    unsigned large;    /* large buffers held by its records and replies */
    struct work *txq, *txq_tail;
    int64_t tx_since_ns; /* the queue's head last moved */
    _Atomic int64_t active_ns;
};

struct work {
    struct work *next;
    struct conn *c;
    int64_t queued_ns; /* when it was put on the run queue */
    struct uiw__nfs_rec rec;
    struct uiw__nfs_buf *reserved; /* a large buffer taken for the call */
    struct uiw__nfs_reply reply;
};

struct uiw__nfs_tcp {
    struct uiw__nfsd *s;
    struct uiw__nfs_pool *pool;
    int ep, wake;
    int lfd[MAX_LISTENERS];
    int nl;
    pthread_t *workers;
    unsigned nstarted;
    unsigned threads;
    int64_t next_sweep, next_trim; /* the event thread's */
    int64_t idle_ns, io_ns;
    pthread_mutex_t lock; /* everything below */
    pthread_cond_t cv;    /* calls waited in the queue, or stopping */
    pthread_cond_t standby_cv;
    struct work *runq, *runq_tail, *free_work;
    struct work *deferred;  /* calls that wait for a large buffer (the event thread's) */
    const void *leader;     /* the event thread's token; NULL: the role is free */
    int64_t leader_call_ns; /* when the event thread began the call it runs; 0: none */
    int64_t last_call_ns;   /* when the event thread last began one */
    int standby;            /* a thread watches the event thread */
    int standby_sleeps;     /* ...in a wait without a deadline (the server was idle) */
    unsigned idle;          /* threads waiting on cv */
    unsigned waking;        /* of them, signalled and not yet awake */
    int cleaned;            /* stopping: connections closed, waiting calls dropped */
    unsigned nfree_work;
    struct conn *conns;
    struct conn *notify; /* connections the event thread must look at */
    int large_back;      /* a large buffer came back since the event thread looked */
    int stopping;
    struct uiw__nfs_tcp_counts counts;
};

static void wake_loop(struct uiw__nfs_tcp *t)
{
    uint64_t one = 1;
    ssize_t n = write(t->wake, &one, sizeof(one));
    (void)n; /* a full counter wakes the loop all the same */
}

/* ---------------------------------------------------------------- connections */

static int is_conn(struct uiw__nfs_tcp *t, void *p)
{
    return p != &t->wake && !((int *)p >= t->lfd && (int *)p < t->lfd + MAX_LISTENERS);
}

static void conn_get(struct conn *c)
{
    pthread_mutex_lock(&c->lock);
    c->refs++;
    pthread_mutex_unlock(&c->lock);
}

static void conn_put(struct conn *c)
{
    pthread_mutex_lock(&c->lock);
    int last = --c->refs == 0;
    pthread_mutex_unlock(&c->lock);
    if (!last)
        return;
    close(c->fd);
    uiw__nfs4_conn_put(c->peer.conn4);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* Under c->lock: have the event thread look at c (its limits, its queue, its end). */
static void notify_locked(struct conn *c)
{
    if (c->notified)
        return;
    c->notified = 1;
    c->refs++;
    struct uiw__nfs_tcp *t = c->t;
    pthread_mutex_lock(&t->lock);
    c->notify_next = t->notify;
    t->notify = c;
    pthread_mutex_unlock(&t->lock);
    wake_loop(t);
}

static struct work *work_get(struct uiw__nfs_tcp *t)
{
    pthread_mutex_lock(&t->lock);
    struct work *w = t->free_work;
    if (w) {
        t->free_work = w->next;
        t->nfree_work--;
    }
    pthread_mutex_unlock(&t->lock);
    if (!w)
        w = malloc(sizeof(*w));
    if (w)
        memset(w, 0, sizeof(*w));
    return w;
}

static void work_put(struct uiw__nfs_tcp *t, struct work *w)
{
    pthread_mutex_lock(&t->lock);
    if (t->nfree_work < 2 * t->threads + 64) {
        w->next = t->free_work;
        t->free_work = w;
        t->nfree_work++;
        w = NULL;
    }
    pthread_mutex_unlock(&t->lock);
    free(w);
}

/* A queued reply's end: its buffers back, the connection's count of them down. */
static void reply_done_locked(struct conn *c, struct work *w)
{
    if (c->large >= UIW__NFS_CONN_LARGE && w->reply.large && !c->dead)
        notify_locked(c); /* below its share again: calls of it may wait for one */
    c->large -= (unsigned)w->reply.large;
    uiw__nfs_reply_free(c->t->pool, &w->reply);
}

/* Under c->lock: write queued replies as far as the socket takes them. 0, or -1 when
 * the connection failed. */
static int tx_flush_locked(struct conn *c, struct work **done)
{
    while (c->txq) {
        struct work *w = c->txq;
        struct uiw__nfs_reply *r = &w->reply;
        struct iovec iov[UIW__NFS_REPLY_IOV];
        int n = 0;
        size_t skip = r->sent;
        for (int i = 0; i < r->niov; i++) {
            if (skip >= r->iov[i].iov_len) {
                skip -= r->iov[i].iov_len;
                continue;
            }
            iov[n].iov_base = (char *)r->iov[i].iov_base + skip;
            iov[n].iov_len = r->iov[i].iov_len - skip;
            skip = 0;
            n++;
        }
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t k = sendmsg(c->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            return -1;
        }
        r->sent += (size_t)k;
        c->tx_since_ns = uiw__nfsd_now_ns();
        if (r->sent < r->len)
            return 0;
        atomic_store_explicit(&c->active_ns, c->tx_since_ns, memory_order_relaxed);
        c->txq = w->next;
        if (!c->txq)
            c->txq_tail = NULL;
        reply_done_locked(c, w);
        w->next = *done;
        *done = w;
    }
    return 0;
}

/* Works whose replies went out: back to the pool, each with its connection reference. */
static void works_done(struct uiw__nfs_tcp *t, struct work *w)
{
    while (w) {
        struct work *n = w->next;
        struct conn *c = w->c;
        work_put(t, w);
        conn_put(c);
        w = n;
    }
}

static uint32_t want_events(struct conn *c)
{
    uint32_t ev = 0;
    pthread_mutex_lock(&c->lock);
    if (!c->dead && !c->parked && c->inflight < UIW__NFS_CONN_CALLS &&
        c->large < UIW__NFS_CONN_LARGE)
        ev |= EPOLLIN;
    if (c->txq)
        ev |= EPOLLOUT;
    pthread_mutex_unlock(&c->lock);
    return ev;
}

static void set_events(struct conn *c, uint32_t ev)
{
    if (ev == c->events)
        return;
    struct epoll_event e = {.events = ev, .data.ptr = c};
    epoll_ctl(c->t->ep, EPOLL_CTL_MOD, c->fd, &e);
    c->events = ev;
}

/* The event thread closes c: nothing more is read or written; its calls still running
 * finish, and it is freed after the last. */
static void conn_close(struct conn *c)
{
    struct uiw__nfs_tcp *t = c->t;
    struct work *done = NULL;
    pthread_mutex_lock(&c->lock);
    if (c->dead) {
        pthread_mutex_unlock(&c->lock);
        return;
    }
    c->dead = 1;
    while (c->txq) {
        struct work *w = c->txq;
        c->txq = w->next;
        reply_done_locked(c, w);
        w->next = done;
        done = w;
    }
    c->txq_tail = NULL;
    pthread_mutex_unlock(&c->lock);
    uiw__nfs4_conn_closed(c->peer.conn4); /* its callbacks wait for another connection */
    epoll_ctl(t->ep, EPOLL_CTL_DEL, c->fd, NULL);
    uiw__nfs_rm_fini(&c->rm);
    shutdown(c->fd, SHUT_RDWR);
    pthread_mutex_lock(&t->lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        t->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    t->counts.conns--;
    pthread_mutex_unlock(&t->lock);
    uiw__nfsd_conn_give(t->s);
    if (t->s->opts.verbose)
        fprintf(stderr, "uiw-nfsd: TCP connection from %s closed\n", c->name);
    works_done(t, done);
    conn_put(c); /* the list's reference */
}

/* Under c->lock: w's reply queued on c and written as far as the socket takes it. */
static void queue_locked(struct conn *c, struct work *w, struct work **done)
{
    int was_empty = c->txq == NULL;
    w->next = NULL;
    if (c->txq_tail)
        c->txq_tail->next = w;
    else
        c->txq = w;
    c->txq_tail = w;
    if (was_empty) {
        c->tx_since_ns = uiw__nfsd_now_ns();
        if (tx_flush_locked(c, done) != 0) {
            c->err = errno;
            c->doomed = 1;
            notify_locked(c);
        }
    }
    if (c->txq && was_empty && !c->doomed)
        notify_locked(c); /* the event thread watches for room */
}

/* The NFSv4.1 back channel's send (nfs4cb.h): a call record goes out on the connection
 * as a reply does, after the replies queued before it. */
static int bc_send(void *tp, const char *rec, size_t len)
{
    struct conn *c = tp;
    struct uiw__nfs_tcp *t = c->t;
    if (len > UIW__NFS_SMALL)
        return -EMSGSIZE;
    struct work *w = work_get(t);
    struct uiw__nfs_buf *b = w ? uiw__nfs_pool_small(t->pool) : NULL;
    if (!b) {
        if (w)
            work_put(t, w);
        return -ENOMEM;
    }
    memcpy(b->data, rec, len);
    w->c = c;
    w->reply.own[0] = b;
    w->reply.nown = 1;
    w->reply.iov[0] = (struct iovec){b->data, len};
    w->reply.niov = 1;
    w->reply.len = len;
    struct work *done = NULL;
    pthread_mutex_lock(&c->lock);
    if (c->dead || c->doomed) {
        pthread_mutex_unlock(&c->lock);
        uiw__nfs_reply_free(t->pool, &w->reply);
        work_put(t, w);
        return -ENOTCONN;
    }
    c->refs++; /* the queued work's */
    queue_locked(c, w, &done);
    pthread_mutex_unlock(&c->lock);
    works_done(t, done);
    return 0;
}

static const struct uiw__nfs4_conn_ops bc_ops = {.send = bc_send};

static void peer_name(struct conn *c)
{
    uiw__nfsd_addr_name((const struct sockaddr *)&c->peer.addr, c->name, sizeof(c->name));
}

static void tune(struct uiw__nfs_tcp *t, int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    int idle = KEEPIDLE_S, intvl = KEEPINTVL_S, cnt = KEEPCNT;
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
    unsigned ut = (unsigned)(t->io_ns / 1000000);
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof(ut));
}

/* A new connection, or a refusal over the limit. */
static void conn_add(struct uiw__nfs_tcp *t, int fd, const struct sockaddr_storage *ss,
                     socklen_t sl)
{
    /* one limit for both transports */
    int over = !uiw__nfsd_conn_take(t->s);
    if (over) {
        pthread_mutex_lock(&t->lock);
        t->counts.refused++;
        pthread_mutex_unlock(&t->lock);
    }
    struct conn *c = over ? NULL : calloc(1, sizeof(*c));
    if (!c && !over)
        uiw__nfsd_conn_give(t->s);
    if (!c) {
        struct conn tmp;
        memset(&tmp, 0, sizeof(tmp));
        memcpy(&tmp.peer.addr, ss, sl <= sizeof(tmp.peer.addr) ? sl : sizeof(tmp.peer.addr));
        peer_name(&tmp);
        uiw__nfsd_refused(
            t->s, UIW__NFSD_REFUSED_CONN, "refused a TCP connection from %s: %s", tmp.name,
            over ? "the connection limit (--max-connections) is reached" : "out of memory");
        close(fd);
        return;
    }
    c->t = t;
    c->fd = fd;
    c->refs = 1;
    memcpy(&c->peer.addr, ss, sl <= sizeof(c->peer.addr) ? sl : sizeof(c->peer.addr));
    c->peer.len = sl <= sizeof(c->peer.addr) ? sl : sizeof(c->peer.addr);
    peer_name(c);
    if (t->s->nfs4)
        c->peer.conn4 = uiw__nfs4_conn_new(&bc_ops, c); /* NULL: no callbacks on it */
    pthread_mutex_init(&c->lock, NULL);
    uiw__nfs_rm_init(&c->rm, t->pool, uiw__nfsd_max_io(t->s) + 8192);
    atomic_store_explicit(&c->active_ns, uiw__nfsd_now_ns(), memory_order_relaxed);
    tune(t, fd);
    c->events = EPOLLIN;
    struct epoll_event e = {.events = EPOLLIN, .data.ptr = c};
    if (epoll_ctl(t->ep, EPOLL_CTL_ADD, fd, &e) != 0) {
        close(fd);
        uiw__nfs4_conn_put(c->peer.conn4);
        pthread_mutex_destroy(&c->lock);
        free(c);
        uiw__nfsd_conn_give(t->s);
        return;
    }
    pthread_mutex_lock(&t->lock);
    c->next = t->conns;
    if (t->conns)
        t->conns->prev = c;
    t->conns = c;
    t->counts.conns++;
    t->counts.accepted++;
    pthread_mutex_unlock(&t->lock);
    if (t->s->opts.verbose)
        fprintf(stderr, "uiw-nfsd: TCP connection from %s\n", c->name);
}

static void accept_all(struct uiw__nfs_tcp *t, int lfd)
{
    for (;;) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                uiw__nfsd_refused(t->s, UIW__NFSD_REFUSED_CONN,
                                  "cannot accept a TCP connection: %s", strerror(errno));
            return; /* EAGAIN: none left */
        }
        conn_add(t, fd, &ss, sl);
    }
}

/* ---------------------------------------------------------------- reading */

static void run_later(struct uiw__nfs_tcp *t, struct work *w)
{
    w->next = NULL;
    pthread_mutex_lock(&t->lock);
    if (t->runq_tail)
        t->runq_tail->next = w;
    else
        t->runq = w;
    t->runq_tail = w;
    w->queued_ns = uiw__nfsd_now_ns();
    pthread_mutex_unlock(&t->lock); /* the event thread runs it, or wakes a thread */
}

/* A call dropped before it ran (its connection closed, or the service stops). */
static void drop_work(struct uiw__nfs_tcp *t, struct work *w)
{
    struct conn *c = w->c;
    pthread_mutex_lock(&c->lock);
    c->inflight--;
    c->large -= (unsigned)w->rec.buf->large + (w->reserved != NULL);
    pthread_mutex_unlock(&c->lock);
    uiw__nfs_pool_put(t->pool, w->rec.buf);
    uiw__nfs_pool_put(t->pool, w->reserved);
    work_put(t, w);
    conn_put(c);
}

/* Calls that wait for a large buffer, in their order, as buffers allow: one is taken for
 * each before it runs (so that no call thread ever waits for one), while its connection
 * holds fewer than UIW__NFS_CONN_LARGE. */
static void run_deferred(struct uiw__nfs_tcp *t)
{
    struct work **pp = &t->deferred;
    while (*pp) {
        struct work *w = *pp;
        struct conn *c = w->c;
        pthread_mutex_lock(&c->lock);
        int dead = c->dead, room = c->large < UIW__NFS_CONN_LARGE;
        pthread_mutex_unlock(&c->lock);
        if (dead) {
            *pp = w->next;
            drop_work(t, w);
            continue;
        }
        if (!room) {
            pp = &w->next;
            continue;
        }
        struct uiw__nfs_buf *b = uiw__nfs_pool_large(t->pool);
        if (!b)
            return; /* the pool calls on_large when one comes back */
        *pp = w->next;
        w->reserved = b;
        pthread_mutex_lock(&c->lock);
        c->large++;
        pthread_mutex_unlock(&c->lock);
        run_later(t, w);
    }
}

static void dispatch(struct uiw__nfs_tcp *t, struct conn *c, const struct uiw__nfs_rec *rec)
{
    uint32_t mtype = 0;
    if (rec->len >= 8)
        memcpy(&mtype, rec->buf->data + rec->off + 4, 4);
    if (ntohl(mtype) == 1) {
        /* a REPLY: the answer to a callback sent on this connection (NFSv4.1's back
         * channel), matched by its xid; with no back channel, or unmatched, dropped */
        uiw__nfs4_conn_reply(c->peer.conn4, rec->buf->data + rec->off, rec->len);
        uiw__nfs_pool_put(t->pool, rec->buf);
        return;
    }
    struct work *w = work_get(t);
    if (!w) {
        uiw__nfs_pool_put(t->pool, rec->buf);
        return; /* out of memory: the client sends it again */
    }
    w->c = c;
    w->rec = *rec;
    pthread_mutex_lock(&c->lock);
    c->refs++;
    c->inflight++;
    c->large += (unsigned)rec->buf->large;
    pthread_mutex_unlock(&c->lock);
    if (uiw__nfs_call_large(t->s, rec->buf->data + rec->off, rec->len)) {
        /* after the calls that waited before it */
        struct work **pp = &t->deferred;
        while (*pp)
            pp = &(*pp)->next;
        w->next = NULL;
        *pp = w;
        run_deferred(t);
        return;
    }
    run_later(t, w);
}

/* The socket failed: closed, and a peer the kernel gave up on (TCP_USER_TIMEOUT,
 * keepalive) logged as a refusal. */
static void conn_fail(struct conn *c, int err)
{
    struct uiw__nfs_tcp *t = c->t;
    if (err == ETIMEDOUT) {
        pthread_mutex_lock(&t->lock);
        t->counts.stalled++;
        pthread_mutex_unlock(&t->lock);
        uiw__nfsd_refused(t->s, UIW__NFSD_REFUSED_TIMEOUT,
                          "closed the TCP connection from %s: the peer acknowledged nothing for "
                          "%lld s (--io-timeout) or stopped answering keepalives",
                          c->name, (long long)(t->io_ns / 1000000000ll));
    }
    conn_close(c);
}

/* Read what c has, as far as its limits allow; hand out its whole records. */
static void rx(struct conn *c)
{
    struct uiw__nfs_tcp *t = c->t;
    for (int round = 0; round < 64; round++) {
        if (!(want_events(c) & EPOLLIN))
            break;
        struct iovec iov;
        int rc = uiw__nfs_rm_want(&c->rm, &iov);
        if (rc == -ENOBUFS) {
            /* every large buffer is taken: read on when one comes back */
            c->parked = 1;
            break;
        }
        if (rc == -EMSGSIZE)
            goto too_long;
        int drained = 0;
        if (rc == 0) {
            ssize_t n = recv(c->fd, iov.iov_base, iov.iov_len, MSG_DONTWAIT);
            if (n == 0)
                goto gone;
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                if (errno != EAGAIN && errno != EWOULDBLOCK) {
                    conn_fail(c, errno);
                    return;
                }
                drained = 1; /* the socket is empty: what the receiver holds still goes */
            } else {
                atomic_store_explicit(&c->active_ns, uiw__nfsd_now_ns(), memory_order_relaxed);
                rc = uiw__nfs_rm_got(&c->rm, (size_t)n);
                if (rc == -EMSGSIZE)
                    goto too_long;
                if (rc == -ENOBUFS)
                    c->parked = 1;
            }
        }
        struct uiw__nfs_rec rec;
        while (uiw__nfs_rm_take(&c->rm, &rec))
            dispatch(t, c, &rec);
        if (c->parked || drained)
            break;
    }
    c->rec_since_ns =
        uiw__nfs_rm_partial(&c->rm) ? (c->rec_since_ns ? c->rec_since_ns : uiw__nfsd_now_ns()) : 0;
    set_events(c, want_events(c));
    return;
too_long:
    pthread_mutex_lock(&t->lock);
    t->counts.too_long++;
    pthread_mutex_unlock(&t->lock);
    uiw__nfsd_refused(t->s, UIW__NFSD_REFUSED_RECORD,
                      "closed the TCP connection from %s: a record longer than the largest "
                      "call (%u bytes: --max-io and its headers)",
                      c->name, uiw__nfsd_max_io(t->s) + 8192);
gone:
    conn_close(c);
}

static void tx(struct conn *c)
{
    struct work *done = NULL;
    pthread_mutex_lock(&c->lock);
    int bad = !c->dead && tx_flush_locked(c, &done) != 0, err = errno;
    pthread_mutex_unlock(&c->lock);
    works_done(c->t, done);
    if (bad)
        conn_fail(c, err);
    else
        set_events(c, want_events(c));
    run_deferred(c->t);
}

/* A large buffer came back: connections that waited for one read on (the event thread
 * looks at them). */
static void on_large(void *arg)
{
    struct uiw__nfs_tcp *t = arg;
    pthread_mutex_lock(&t->lock);
    t->large_back = 1;
    pthread_mutex_unlock(&t->lock);
    wake_loop(t);
}

/* Connections the call threads or the pool asked about. The list of connections changes
 * on the event thread alone, so it walks it without the service's lock. */
static void notified(struct uiw__nfs_tcp *t)
{
    pthread_mutex_lock(&t->lock);
    struct conn *c = t->notify;
    t->notify = NULL;
    int back = t->large_back;
    t->large_back = 0;
    pthread_mutex_unlock(&t->lock);
    run_deferred(t);
    if (back) {
        for (struct conn *p = t->conns, *next; p; p = next) {
            next = p->next;
            if (p->parked) {
                p->parked = 0;
                rx(p);
            }
        }
    }
    while (c) {
        struct conn *n = c->notify_next;
        pthread_mutex_lock(&c->lock);
        c->notified = 0;
        int doomed = c->doomed, dead = c->dead, err = c->err;
        pthread_mutex_unlock(&c->lock);
        if (doomed) {
            conn_fail(c, err);
        } else if (!dead) {
            c->parked = 0;
            rx(c); /* bytes it holds already, then the socket's */
        }
        conn_put(c);
        c = n;
    }
}

/* Close connections that stalled or idled past their time. */
static void sweep(struct uiw__nfs_tcp *t, int64_t now)
{
    struct conn *expired[64];
    int why[64], n = 0;
    for (struct conn *c = t->conns; c && n < 64; c = c->next) {
        pthread_mutex_lock(&c->lock);
        int w = 0;
        if (c->rec_since_ns && now - c->rec_since_ns > t->io_ns)
            w = 1;
        else if (c->txq && now - c->tx_since_ns > t->io_ns)
            w = 2;
        else if (!c->inflight && !c->txq && !c->rec_since_ns &&
                 now - atomic_load_explicit(&c->active_ns, memory_order_relaxed) > t->idle_ns)
            w = 3;
        if (w) {
            c->refs++;
            expired[n] = c;
            why[n++] = w;
        }
        pthread_mutex_unlock(&c->lock);
    }
    for (int i = 0; i < n; i++) {
        struct conn *c = expired[i];
        pthread_mutex_lock(&t->lock);
        if (why[i] == 3)
            t->counts.idle++;
        else
            t->counts.stalled++;
        pthread_mutex_unlock(&t->lock);
        if (why[i] == 3) {
            if (t->s->opts.verbose)
                fprintf(stderr, "uiw-nfsd: TCP connection from %s idle: closed\n", c->name);
        } else {
            uiw__nfsd_refused(t->s, UIW__NFSD_REFUSED_TIMEOUT,
                              "closed the TCP connection from %s: %s for %lld s (--io-timeout)",
                              c->name,
                              why[i] == 1 ? "a call's record stalled" : "the peer stopped reading",
                              (long long)(t->io_ns / 1000000000ll));
        }
        conn_close(c);
        conn_put(c);
    }
}

/* The event thread's one round: the events of one epoll_wait, then the periodic sweeps. */
static void lead_once(struct uiw__nfs_tcp *t, int timeout_ms)
{
    struct epoll_event ev[64];
    int n = epoll_wait(t->ep, ev, 64, timeout_ms);
    pthread_mutex_lock(&t->lock);
    int stop = t->stopping;
    pthread_mutex_unlock(&t->lock);
    if (stop)
        return;
    /* every connection named here is alive (only this thread closes them): held until the
     * batch is done, whatever closes it meanwhile */
    for (int i = 0; i < n; i++)
        if (is_conn(t, ev[i].data.ptr))
            conn_get(ev[i].data.ptr);
    for (int i = 0; i < n; i++) {
        void *p = ev[i].data.ptr;
        if (p == &t->wake) {
            uint64_t v;
            ssize_t r = read(t->wake, &v, sizeof(v));
            (void)r;
            notified(t);
            continue;
        }
        if ((int *)p >= t->lfd && (int *)p < t->lfd + MAX_LISTENERS) {
            accept_all(t, *(int *)p);
            continue;
        }
        struct conn *c = p;
        int dead;
        pthread_mutex_lock(&c->lock);
        dead = c->dead;
        pthread_mutex_unlock(&c->lock);
        if (dead)
            continue;
        if (ev[i].events & EPOLLOUT)
            tx(c);
        if (ev[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
            pthread_mutex_lock(&c->lock);
            dead = c->dead;
            pthread_mutex_unlock(&c->lock);
            if (!dead)
                rx(c);
        }
    }
    for (int i = 0; i < n; i++)
        if (is_conn(t, ev[i].data.ptr))
            conn_put(ev[i].data.ptr);
    int64_t now = uiw__nfsd_now_ns();
    if (now >= t->next_sweep) {
        sweep(t, now);
        uiw__vfs_files_idle(t->s, now);
        t->next_sweep = now + 1000000000ll;
    }
    if (now >= t->next_trim) {
        uiw__nfs_pool_trim(t->pool);
        t->next_trim = now + 5000000000ll;
    }
}

/* Stopping (by the event thread, once): every connection closed, the calls that waited
 * for a buffer dropped. */
static void stop_all(struct uiw__nfs_tcp *t)
{
    while (t->conns)
        conn_close(t->conns);
    while (t->deferred) {
        struct work *w = t->deferred;
        t->deferred = w->next;
        drop_work(t, w);
    }
}

/* ---------------------------------------------------------------- calls */

static void run_work(struct uiw__nfs_tcp *t, struct work *w)
{
    struct conn *c = w->c;
    int has = uiw__nfs_call_run(t->s, t->pool, &c->peer, w->rec.buf->data + w->rec.off, w->rec.len,
                                w->reserved, &w->reply);
    int rec_large = w->rec.buf->large + (w->reserved != NULL);
    w->reserved = NULL; /* the call's now: in its reply, or given back */
    uiw__nfs_pool_put(t->pool, w->rec.buf);
    w->rec.buf = NULL;
    pthread_mutex_lock(&t->lock);
    t->counts.calls++;
    pthread_mutex_unlock(&t->lock);
    struct work *done = NULL;
    int queued = 0;
    pthread_mutex_lock(&c->lock);
    c->large -= (unsigned)rec_large;
    int was_held =
        c->inflight >= UIW__NFS_CONN_CALLS || c->large + (unsigned)rec_large >= UIW__NFS_CONN_LARGE;
    c->inflight--;
    if (has && !c->dead) {
        c->large += (unsigned)w->reply.large;
        queue_locked(c, w, &done);
        queued = 1;
    }
    if (was_held && !c->dead && !c->doomed)
        notify_locked(c); /* below its limits again: read on */
    pthread_mutex_unlock(&c->lock);
    if (!queued) {
        uiw__nfs_reply_free(t->pool, &w->reply);
        work_put(t, w);
        conn_put(c);
    }
    works_done(t, done);
}

/* Under t->lock: the next queued call, or NULL. */
static struct work *runq_take(struct uiw__nfs_tcp *t)
{
    struct work *w = t->runq;
    if (w) {
        t->runq = w->next;
        if (!t->runq)
            t->runq_tail = NULL;
    }
    return w;
}

/* Under t->lock: wait on cv as an idle thread. */
static void idle_wait(struct uiw__nfs_tcp *t)
{
    t->idle++;
    pthread_cond_wait(&t->cv, &t->lock);
    t->idle--;
    if (t->waking)
        t->waking--;
}

/* Under t->lock, as the standby: returns when the event thread's role is free or taken
 * from a thread stuck in a call (then this thread's), or when stopping. */
static void stand_by(struct uiw__nfs_tcp *t, const void *me)
{
    t->standby = 1;
    while (!t->stopping && t->leader) {
        int64_t now = uiw__nfsd_now_ns();
        if (t->leader_call_ns && now - t->leader_call_ns > STEAL_NS) {
            t->leader = me; /* the old one finishes its call as a call thread */
            t->leader_call_ns = 0;
            t->counts.role_taken++;
            break;
        }
        if (t->runq && t->idle > t->waking && now - t->runq->queued_ns > STEAL_NS) {
            t->waking++;
            pthread_cond_signal(&t->cv);
        }
        if (!t->leader_call_ns && now - t->last_call_ns > STANDBY_IDLE_NS) {
            t->standby_sleeps = 1; /* the event thread wakes it with its next call */
            pthread_cond_wait(&t->standby_cv, &t->lock);
            t->standby_sleeps = 0;
            continue;
        }
        int64_t until = (t->leader_call_ns ? t->leader_call_ns : now) + STEAL_NS + 1000;
        struct timespec ts = {.tv_sec = until / 1000000000ll, .tv_nsec = until % 1000000000ll};
        pthread_cond_timedwait(&t->standby_cv, &t->lock, &ts);
    }
    t->standby = 0;
}

/* Under t->lock, as the event thread (t->leader == me): reads and runs calls until
 * stopping or until the standby takes the role. */
static void lead(struct uiw__nfs_tcp *t, const void *me)
{
    while (t->leader == me && !t->stopping) {
        int busy = t->runq != NULL;
        pthread_mutex_unlock(&t->lock);
        /* idle, it sleeps until its next sweep (a second apart), what comes, or a stop's
         * wake */
        int64_t left = t->next_sweep - uiw__nfsd_now_ns();
        lead_once(t, busy || left <= 0 ? 0 : (int)(left / 1000000) + 1);
        pthread_mutex_lock(&t->lock);
        struct work *w;
        for (int i = 0; i < INLINE_CALLS && t->leader == me && !t->stopping; i++) {
            if ((w = runq_take(t)) == NULL)
                break;
            t->leader_call_ns = t->last_call_ns = uiw__nfsd_now_ns();
            if (t->standby_sleeps) {
                t->standby_sleeps = 0;
                pthread_cond_signal(&t->standby_cv);
            }
            pthread_mutex_unlock(&t->lock);
            run_work(t, w);
            pthread_mutex_lock(&t->lock);
            if (t->leader == me)
                t->leader_call_ns = 0;
        }
    }
    if (t->leader == me && t->stopping)
        t->leader = NULL; /* the loop's top closes everything, as the event thread */
}

/* Every thread of the pool, in the first of these roles that is free: the event thread,
 * a call thread while calls are queued (once woken or after a call of its own), the
 * standby, or idle. */
static void *thread_main(void *arg)
{
    struct uiw__nfs_tcp *t = arg;
    const void *me = &me; /* this thread's token */
    int awake = 0;        /* woken for calls, or just ran one */
    pthread_mutex_lock(&t->lock);
    for (;;) {
        struct work *w;
        if (t->stopping) {
            if (!t->leader && !t->cleaned) {
                t->leader = me;
                t->cleaned = 1;
                pthread_mutex_unlock(&t->lock);
                stop_all(t);
                pthread_mutex_lock(&t->lock);
                t->leader = NULL;
                pthread_cond_broadcast(&t->cv);
            }
            if ((w = runq_take(t)) != NULL) {
                pthread_mutex_unlock(&t->lock);
                drop_work(t, w); /* stopping: the calls not begun are dropped */
                pthread_mutex_lock(&t->lock);
                continue;
            }
            if (!t->cleaned || t->leader) { /* the event thread closes the connections */
                idle_wait(t);
                continue;
            }
            break;
        }
        if (!t->leader)
            t->leader = me;
        if (t->leader == me) {
            lead(t, me);
            awake = 1; /* it may have lost the role in a call: it runs calls on */
            continue;
        }
        if (awake && (w = runq_take(t)) != NULL) {
            pthread_mutex_unlock(&t->lock);
            run_work(t, w);
            pthread_mutex_lock(&t->lock);
            continue;
        }
        awake = 0;
        if (!t->standby) {
            stand_by(t, me);
            continue;
        }
        idle_wait(t);
        awake = 1;
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

/* ---------------------------------------------------------------- the service */

struct uiw__nfs_tcp *uiw__nfs_tcp_create(struct uiw__nfsd *s)
{
    struct uiw__nfs_tcp *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->s = s;
    t->ep = t->wake = -1;
    const struct uiw__nfsd_opts *o = &s->opts;
    t->threads = o->tcp_threads ? o->tcp_threads : 8;
    t->idle_ns = (int64_t)(o->idle_timeout ? o->idle_timeout : 360) * 1000000000ll;
    t->io_ns = (int64_t)(o->io_timeout ? o->io_timeout : 60) * 1000000000ll;
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->cv, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->standby_cv, &ca);
    pthread_condattr_destroy(&ca);
    t->pool = uiw__nfs_pool_create(uiw__nfsd_max_io(s) + 8192, o->io_buffers ? o->io_buffers : 64);
    t->ep = epoll_create1(EPOLL_CLOEXEC);
    t->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    t->workers = calloc(t->threads + 1, sizeof(*t->workers)); /* and the event thread */
    t->next_sweep = uiw__nfsd_now_ns() + 1000000000ll;
    t->next_trim = t->next_sweep + 4000000000ll;
    if (!t->pool || t->ep < 0 || t->wake < 0 || !t->workers) {
        uiw__nfs_tcp_destroy(t);
        errno = ENOMEM;
        return NULL;
    }
    uiw__nfs_pool_on_large(t->pool, on_large, t);
    struct epoll_event e = {.events = EPOLLIN, .data.ptr = &t->wake};
    epoll_ctl(t->ep, EPOLL_CTL_ADD, t->wake, &e);
    return t;
}

int uiw__nfs_tcp_listen(struct uiw__nfs_tcp *t, const char *addr, int port, int *bound)
{
    if (t->nl == MAX_LISTENERS)
        return -ENOSPC;
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = addr ? AF_UNSPEC : AF_INET6;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV;
    char ps[16];
    snprintf(ps, sizeof(ps), "%d", port);
    int rc = getaddrinfo(addr, ps, &hints, &ai);
    if (rc != 0 && !addr) {
        hints.ai_family = AF_INET; /* no IPv6 here */
        rc = getaddrinfo(addr, ps, &hints, &ai);
    }
    if (rc != 0)
        return -EINVAL;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        int err = errno;
        freeaddrinfo(ai);
        return -err;
    }
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ai->ai_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
        int err = errno;
        freeaddrinfo(ai);
        close(fd);
        return -err;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                            : ((struct sockaddr_in *)&ss)->sin_port);
    t->lfd[t->nl] = fd;
    struct epoll_event e = {.events = EPOLLIN, .data.ptr = &t->lfd[t->nl]};
    if (epoll_ctl(t->ep, EPOLL_CTL_ADD, fd, &e) != 0) {
        int err = errno;
        close(fd);
        return -err;
    }
    t->nl++;
    return 0;
}

int uiw__nfs_tcp_start(struct uiw__nfs_tcp *t)
{
    for (; t->nstarted < t->threads + 1; t->nstarted++)
        if (pthread_create(&t->workers[t->nstarted], NULL, thread_main, t) != 0)
            return -EAGAIN;
    return 0;
}

void uiw__nfs_tcp_destroy(struct uiw__nfs_tcp *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    t->stopping = 1;
    pthread_cond_broadcast(&t->cv);
    pthread_cond_broadcast(&t->standby_cv);
    pthread_mutex_unlock(&t->lock);
    if (t->wake >= 0)
        wake_loop(t);
    for (unsigned i = 0; i < t->nstarted; i++)
        pthread_join(t->workers[i], NULL);
    /* what is left: replies of closed connections were freed by their close */
    while (t->notify) {
        struct conn *c = t->notify;
        t->notify = c->notify_next;
        conn_put(c);
    }
    for (int i = 0; i < t->nl; i++)
        close(t->lfd[i]);
    while (t->free_work) {
        struct work *w = t->free_work;
        t->free_work = w->next;
        free(w);
    }
    if (t->ep >= 0)
        close(t->ep);
    if (t->wake >= 0)
        close(t->wake);
    uiw__nfs_pool_destroy(t->pool);
    free(t->workers);
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->cv);
    pthread_cond_destroy(&t->standby_cv);
    free(t);
}

void uiw__nfs_tcp_counts(struct uiw__nfs_tcp *t, struct uiw__nfs_tcp_counts *c)
{
    pthread_mutex_lock(&t->lock);
    *c = t->counts;
    pthread_mutex_unlock(&t->lock);
    c->large_taken = uiw__nfs_pool_large_taken(t->pool);
    c->pool_bytes = uiw__nfs_pool_bytes(t->pool);
}

unsigned uiw__nfs_tcp_conns(struct uiw__nfs_tcp *t)
{
    pthread_mutex_lock(&t->lock);
    unsigned n = t->counts.conns;
    pthread_mutex_unlock(&t->lock);
    return n;
}
