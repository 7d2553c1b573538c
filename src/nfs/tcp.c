/*
 * ONC RPC over TCP with libtirpc's own stream transport (svc_fd_create: record marking,
 * xdrrec), so that the TCP side is the library everyone uses. Each connection has its
 * own thread, which receives a call, authenticates it (_authenticate: AUTH_SYS is
 * decoded into rq_clntcred) and runs the dispatcher of its program; connections never
 * wait for each other. Every listener serves both NFS and MOUNT. Client source ports are
 * not checked (knfsd's `insecure`).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nfs/server.h"

#include <rpc/svc_auth.h>
#include "nfs/xdr_data.h"

#define NFS_PROGRAM_NUM   100003
#define MOUNT_PROGRAM_NUM 100005

struct conn {
    struct conn *next;
    int fd;
    pthread_t thread;
    struct uiw__nfs_listener *l;
};

struct uiw__nfs_listener {
    struct uiw__nfsd *s;
    int fd;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t gone;
    struct conn *conns;
    unsigned nconns;
    int stopping;
};

static void dispatch(struct uiw__nfsd *s, struct svc_req *rq, SVCXPRT *xprt)
{
    if (rq->rq_prog == NFS_PROGRAM_NUM) {
        if (rq->rq_vers == 3)
            uiw__nfs3_dispatch(s, rq, xprt);
        else
            svcerr_progvers(xprt, 3, 3);
    } else if (rq->rq_prog == MOUNT_PROGRAM_NUM) {
        if (rq->rq_vers == 3)
            uiw__mount3_dispatch(s, rq, xprt);
        else
            svcerr_progvers(xprt, 3, 3);
    } else {
        svcerr_noprog(xprt);
    }
}

/* As libtirpc's svc_getreq_common, for this connection alone. */
int uiw__nfs_tcp_serve(struct uiw__nfsd *s, SVCXPRT *xprt)
{
    char area[2 * MAX_AUTH_BYTES + 1024];
    struct rpc_msg msg;
    struct svc_req r;
    memset(&msg, 0, sizeof(msg));
    memset(&r, 0, sizeof(r));
    msg.rm_call.cb_cred.oa_base = area;
    msg.rm_call.cb_verf.oa_base = area + MAX_AUTH_BYTES;
    r.rq_clntcred = area + 2 * MAX_AUTH_BYTES;
    if (!SVC_RECV(xprt, &msg))
        return 0;
    r.rq_xprt = xprt;
    r.rq_prog = msg.rm_call.cb_prog;
    r.rq_vers = msg.rm_call.cb_vers;
    r.rq_proc = msg.rm_call.cb_proc;
    r.rq_cred = msg.rm_call.cb_cred;
    enum auth_stat why = _authenticate(&r, &msg);
    if (why != AUTH_OK)
        svcerr_auth(xprt, why);
    else
        dispatch(s, &r, xprt);
    return 1;
}

static void *conn_main(void *arg)
{
    struct conn *c = arg;
    struct uiw__nfs_listener *l = c->l;
    SVCXPRT *xprt = svc_fd_create(c->fd, 0, 0);
    if (xprt) {
        do
            uiw__nfs_tcp_serve(l->s, xprt);
        while (SVC_STAT(xprt) != XPRT_DIED);
    }
    uiw__nfs_iobuf_free();
    pthread_mutex_lock(&l->lock);
    for (struct conn **pp = &l->conns; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    l->nconns--;
    if (xprt)
        SVC_DESTROY(xprt); /* closes the socket */
    else
        close(c->fd);
    pthread_cond_broadcast(&l->gone);
    pthread_mutex_unlock(&l->lock);
    free(c);
    return NULL;
}

static void *accept_main(void *arg)
{
    struct uiw__nfs_listener *l = arg;
    /* libtirpc replies with write(): a reply to a peer that is gone would raise SIGPIPE and
     * end the process the server runs in. Blocked here, in the connection threads that
     * inherit this mask, it stays pending on the thread and write() fails with EPIPE. */
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, NULL);
    for (;;) {
        int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE ||
                errno == ENOBUFS || errno == ENOMEM) {
                if (errno != EINTR && errno != ECONNABORTED)
                    usleep(10000);
                pthread_mutex_lock(&l->lock);
                int stop = l->stopping;
                pthread_mutex_unlock(&l->lock);
                if (stop)
                    break;
                continue;
            }
            break; /* shut down */
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        struct conn *c = calloc(1, sizeof(*c));
        if (!c) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->l = l;
        pthread_mutex_lock(&l->lock);
        if (l->stopping) {
            pthread_mutex_unlock(&l->lock);
            close(fd);
            free(c);
            break;
        }
        c->next = l->conns;
        l->conns = c;
        l->nconns++;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&c->thread, &at, conn_main, c);
        pthread_attr_destroy(&at);
        if (rc != 0) {
            l->conns = c->next;
            l->nconns--;
            close(fd);
            free(c);
        }
        pthread_mutex_unlock(&l->lock);
    }
    return NULL;
}

struct uiw__nfs_listener *uiw__nfs_tcp_listen(struct uiw__nfsd *s, const char *addr, int port,
                                              int *bound)
{
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
    if (rc != 0) {
        errno = EINVAL;
        return NULL;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        freeaddrinfo(ai);
        return NULL;
    }
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ai->ai_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 128) != 0) {
        int err = errno;
        freeaddrinfo(ai);
        close(fd);
        errno = err;
        return NULL;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                            : ((struct sockaddr_in *)&ss)->sin_port);
    struct uiw__nfs_listener *l = calloc(1, sizeof(*l));
    if (!l) {
        close(fd);
        return NULL;
    }
    l->s = s;
    l->fd = fd;
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->gone, NULL);
    if (pthread_create(&l->thread, NULL, accept_main, l) != 0) {
        close(fd);
        free(l);
        errno = EAGAIN;
        return NULL;
    }
    return l;
}

unsigned uiw__nfs_tcp_conns(struct uiw__nfs_listener *l)
{
    pthread_mutex_lock(&l->lock);
    unsigned n = l->nconns;
    pthread_mutex_unlock(&l->lock);
    return n;
}

void uiw__nfs_tcp_close(struct uiw__nfs_listener *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->lock);
    l->stopping = 1;
    pthread_mutex_unlock(&l->lock);
    shutdown(l->fd, SHUT_RDWR);
    pthread_join(l->thread, NULL);
    close(l->fd);
    pthread_mutex_lock(&l->lock);
    for (struct conn *c = l->conns; c; c = c->next)
        shutdown(c->fd, SHUT_RDWR);
    while (l->nconns)
        pthread_cond_wait(&l->gone, &l->lock);
    pthread_mutex_unlock(&l->lock);
    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->gone);
    free(l);
}
