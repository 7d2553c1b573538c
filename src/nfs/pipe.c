/* ONC RPC calls in flight on a libtirpc CLIENT's TCP connection (pipe.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "nfs/pipe.h"

/* The largest reply taken (a READ of 64 MiB and its header); a longer record is garbage. */
#define MAX_RECORD ((64u << 20) + 65536)
/* Read in pieces of at least this much room. */
#define READ_ROOM 65536

struct call {
    struct call *next;
    uint32_t xid, proc;
    xdrproc_t xargs, xres;
    void *args, *res;
    uiw__nfs_pipe_done done;
    void *arg;
    double sent; /* when it was last sent (queued) */
    int sends;
};

struct uiw__nfs_pipe {
    uint32_t prog, vers;
    struct call *head, *tail; /* in the order sent */
    unsigned n, most;
    int lost;          /* the connection broke: nothing more until resend */
    CLIENT *lost_cl;   /* ... the connection of that CLIENT */
    uint32_t last_xid; /* the last XID taken */
    CLIENT *xid_cl;    /* the CLIENT whose XID sequence the pipe holds (NULL: none) */
    char *out;         /* records to send: out[off, len) */
    size_t out_off, out_len, out_cap;
    char *in; /* bytes received, not yet taken: in[0, len) */
    size_t in_len, in_cap;
    uiw__nfs_pipe_server serve; /* backward calls (NULL: dropped) */
    void *serve_arg;
    unsigned served;
    unsigned grown; /* buffers grown for a call or a reply (uiw__nfs_pipe_grown) */
};

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int grow(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 65536;
    while (n < need)
        n *= 2;
    char *b = realloc(*buf, n);
    if (!b)
        return -ENOMEM;
    *buf = b;
    *cap = n;
    return 0;
}

uint32_t uiw__nfs_clnt_last_xid(CLIENT *cl)
{
    uint32_t x = 0;
    clnt_control(cl, CLGET_XID, (char *)&x);
    return x;
}

/* libtirpc's clnt_vc takes a call's XID by decrementing its stored word as it lies in
 * memory, in network byte order (CLGET_XID gives that word in host order: the last XID
 * used), and CLSET_XID stores the value given plus one as that word. */
void uiw__nfs_clnt_set_last_xid(CLIENT *cl, uint32_t last)
{
    uint32_t v = last - 1;
    clnt_control(cl, CLSET_XID, (char *)&v);
}

/* The next XID of cl's sequence, which the pipe holds from the first (clnt_control
 * costs two system calls: the sequence is given back only when a synchronous call
 * needs it). */
static uint32_t take_xid(struct uiw__nfs_pipe *p, CLIENT *cl)
{
    if (p->xid_cl != cl) {
        p->last_xid = uiw__nfs_clnt_last_xid(cl);
        p->xid_cl = cl;
    }
    p->last_xid = ntohl(htonl(p->last_xid) - 1);
    return p->last_xid;
}

void uiw__nfs_pipe_give_xid(struct uiw__nfs_pipe *p, CLIENT *cl)
{
    if (p->xid_cl == cl)
        uiw__nfs_clnt_set_last_xid(cl, p->last_xid);
    p->xid_cl = NULL;
}

struct uiw__nfs_pipe *uiw__nfs_pipe_create(uint32_t prog, uint32_t vers)
{
    struct uiw__nfs_pipe *p = calloc(1, sizeof(*p));
    if (p) {
        p->prog = prog;
        p->vers = vers;
    }
    return p;
}

/* grow for a call or a reply, counted (uiw__nfs_pipe_grown) */
static int grow_for(struct uiw__nfs_pipe *p, char **buf, size_t *cap, size_t need)
{
    if (need > *cap)
        p->grown++;
    return grow(buf, cap, need);
}

/* grow, and the pages of what it added touched */
static int grow_touched(char **buf, size_t *cap, size_t need)
{
    size_t was = *cap;
    int rc = grow(buf, cap, need);
    if (rc == 0 && *cap > was)
        memset(*buf + was, 0, *cap - was);
    return rc;
}

int uiw__nfs_pipe_reserve(struct uiw__nfs_pipe *p, size_t in, size_t out)
{
    /* as records() and fill() grow the input for a whole record, and the output for a
     * call beside the others queued */
    if (grow_touched(&p->in, &p->in_cap, p->in_len + 4 + in + READ_ROOM) != 0 ||
        grow_touched(&p->out, &p->out_cap, p->out_len + 4 + out) != 0)
        return -ENOMEM;
    return 0;
}

void uiw__nfs_pipe_destroy(struct uiw__nfs_pipe *p)
{
    if (!p)
        return;
    while (p->head) {
        struct call *k = p->head;
        p->head = k->next;
        free(k);
    }
    free(p->out);
    free(p->in);
    free(p);
}

unsigned uiw__nfs_pipe_pending(const struct uiw__nfs_pipe *p)
{
    return p->n;
}

unsigned uiw__nfs_pipe_most(const struct uiw__nfs_pipe *p)
{
    return p->most;
}

unsigned uiw__nfs_pipe_grown(const struct uiw__nfs_pipe *p)
{
    return p->grown;
}

void uiw__nfs_pipe_serve(struct uiw__nfs_pipe *p, uiw__nfs_pipe_server fn, void *arg)
{
    p->serve = fn;
    p->serve_arg = arg;
}

unsigned uiw__nfs_pipe_served(const struct uiw__nfs_pipe *p)
{
    return p->served;
}

/* Append k's record to the output: one fragment, the last. */
static int encode(struct uiw__nfs_pipe *p, CLIENT *cl, struct call *k)
{
    size_t need = 4 + 6 * 4 + 2 * (8 + MAX_AUTH_BYTES) + xdr_sizeof(k->xargs, k->args);
    if (need > MAX_RECORD)
        return -EMSGSIZE;
    if (p->out_off == p->out_len)
        p->out_off = p->out_len = 0;
    if (grow_for(p, &p->out, &p->out_cap, p->out_len + need) != 0)
        return -ENOMEM;
    char *rec = p->out + p->out_len;
    XDR x;
    xdrmem_create(&x, rec + 4, (u_int)(need - 4), XDR_ENCODE);
    struct rpc_msg m;
    memset(&m, 0, sizeof(m));
    m.rm_xid = k->xid;
    m.rm_direction = CALL;
    m.rm_call.cb_rpcvers = RPC_MSG_VERSION;
    m.rm_call.cb_prog = p->prog;
    m.rm_call.cb_vers = p->vers;
    u_int proc = k->proc;
    int ok = xdr_callhdr(&x, &m) && xdr_u_int(&x, &proc) && AUTH_MARSHALL(cl->cl_auth, &x) &&
             k->xargs(&x, k->args);
    u_int len = ok ? XDR_GETPOS(&x) : 0;
    XDR_DESTROY(&x);
    if (!ok)
        return -EMSGSIZE;
    uint32_t mark = htonl(0x80000000u | len);
    memcpy(rec, &mark, 4);
    p->out_len += 4 + len;
    k->sent = mono_s();
    k->sends++;
    return 0;
}

int uiw__nfs_pipe_call(struct uiw__nfs_pipe *p, CLIENT *cl, uint32_t proc, xdrproc_t xargs,
                       void *args, xdrproc_t xres, void *res, uiw__nfs_pipe_done done, void *arg)
{
    if (p->lost && !p->n && cl != p->lost_cl)
        p->lost = 0; /* made again by a synchronous call: a new connection */
    /* what is left of the connection's bytes is stale once clnt_vc may have read it;
     * not when the pipe alone reads (a backward call may be half here) */
    if (!p->lost && !p->n && !p->serve)
        p->in_len = p->out_off = p->out_len = 0;
    struct call *k = calloc(1, sizeof(*k));
    if (!k)
        return -ENOMEM;
    *k = (struct call){.proc = proc,
                       .xargs = xargs,
                       .xres = xres,
                       .args = args,
                       .res = res,
                       .done = done,
                       .arg = arg};
    k->xid = take_xid(p, cl);
    /* queued behind a broken connection, it is sent with the others on the next */
    int rc = p->lost ? 0 : encode(p, cl, k);
    if (rc != 0) {
        free(k);
        return rc;
    }
    if (p->lost)
        k->sent = mono_s();
    if (p->tail)
        p->tail->next = k;
    else
        p->head = k;
    p->tail = k;
    if (++p->n > p->most)
        p->most = p->n;
    return 0;
}

/* Take k out of the list (prev: the call before it, or NULL) and end it. */
static void end_call(struct uiw__nfs_pipe *p, struct call *prev, struct call *k, enum clnt_stat st)
{
    if (prev)
        prev->next = k->next;
    else
        p->head = k->next;
    if (p->tail == k)
        p->tail = prev;
    p->n--;
    uiw__nfs_pipe_done done = k->done;
    void *arg = k->arg;
    free(k);
    done(arg, st);
}

/* A backward call's record: its reply (if the server function gives one) queued as one
 * record. 0, or -1 without memory for it. */
static int serve(struct uiw__nfs_pipe *p, const char *rec, size_t len)
{
    p->served++;
    if (!p->serve)
        return 0;
    if (p->out_off == p->out_len)
        p->out_off = p->out_len = 0;
    if (grow_for(p, &p->out, &p->out_cap, p->out_len + 4 + UIW__NFS_PIPE_REPLY_MAX) != 0)
        return -1;
    char *r = p->out + p->out_len;
    size_t n = p->serve(p->serve_arg, rec, len, r + 4, UIW__NFS_PIPE_REPLY_MAX);
    if (n == 0 || n > UIW__NFS_PIPE_REPLY_MAX)
        return 0;
    uint32_t mark = htonl(0x80000000u | (uint32_t)n);
    memcpy(r, &mark, 4);
    p->out_len += 4 + n;
    return 0;
}

/* A record: a reply's, its call's results decoded and the call ended (1), or a backward
 * call's, served (RFC 5531's msg_type, the word after the XID, tells them apart). -1
 * when a backward call's reply found no memory. */
static int reply(struct uiw__nfs_pipe *p, CLIENT *cl, char *rec, size_t len)
{
    uint32_t xid;
    if (len < 4)
        return 0;
    memcpy(&xid, rec, 4);
    xid = ntohl(xid);
    if (len >= 8) {
        uint32_t type;
        memcpy(&type, rec + 4, 4);
        if (ntohl(type) == CALL)
            return serve(p, rec, len);
    }
    struct call *prev = NULL, *k = p->head;
    while (k && k->xid != xid) {
        prev = k;
        k = k->next;
    }
    if (!k)
        return 0; /* a reply to no call of ours (one sent again, answered twice) */
    XDR x;
    xdrmem_create(&x, rec, (u_int)len, XDR_DECODE);
    struct rpc_msg m;
    memset(&m, 0, sizeof(m));
    m.acpted_rply.ar_verf = _null_auth;
    m.acpted_rply.ar_results.where = k->res;
    m.acpted_rply.ar_results.proc = k->xres;
    struct rpc_err e;
    memset(&e, 0, sizeof(e));
    if (!xdr_replymsg(&x, &m))
        e.re_status = RPC_CANTDECODERES;
    else
        _seterr_reply(&m, &e);
    if (e.re_status == RPC_SUCCESS && !AUTH_VALIDATE(cl->cl_auth, &m.acpted_rply.ar_verf))
        e.re_status = RPC_AUTHERROR;
    if (m.acpted_rply.ar_verf.oa_base) {
        x.x_op = XDR_FREE;
        xdr_opaque_auth(&x, &m.acpted_rply.ar_verf);
    }
    XDR_DESTROY(&x);
    end_call(p, prev, k, e.re_status);
    return 1;
}

/* The whole records at the start of the input, each (its fragments joined) to reply();
 * then what follows them moved to the start. Returns the calls ended, or -1 when a
 * record is too long to be a reply. */
static int records(struct uiw__nfs_pipe *p, CLIENT *cl)
{
    int ended = 0;
    size_t at = 0;
    for (;;) {
        /* the record's fragments: are they all here? */
        size_t pos = at, total = 0, frags = 0;
        int whole = 0;
        while (p->in_len - pos >= 4) {
            uint32_t mark;
            memcpy(&mark, p->in + pos, 4);
            mark = ntohl(mark);
            size_t flen = mark & 0x7fffffffu;
            if (total + flen > MAX_RECORD)
                return -1;
            if (p->in_len - pos - 4 < flen) {
                /* room for the rest of it to come */
                if (grow_for(p, &p->in, &p->in_cap, pos + 4 + flen + READ_ROOM) != 0)
                    return -1;
                break;
            }
            total += flen;
            frags++;
            pos += 4 + flen;
            if (mark & 0x80000000u) {
                whole = 1;
                break;
            }
        }
        if (!whole)
            break;
        /* join the fragments: each one's bytes moved over the marks before it */
        size_t dst = at + 4, src = at;
        for (size_t f = 0; f < frags; f++) {
            uint32_t mark;
            memcpy(&mark, p->in + src, 4);
            size_t flen = ntohl(mark) & 0x7fffffffu;
            if (dst != src + 4)
                memmove(p->in + dst, p->in + src + 4, flen);
            dst += flen;
            src += 4 + flen;
        }
        int r = reply(p, cl, p->in + at + 4, total);
        if (r < 0)
            return -1;
        ended += r;
        at = pos;
        if (p->lost)
            break;
    }
    if (at) {
        memmove(p->in, p->in + at, p->in_len - at);
        p->in_len -= at;
    }
    return ended;
}

static int fd_of(CLIENT *cl)
{
    int fd = -1;
    clnt_control(cl, CLGET_FD, (char *)&fd);
    return fd;
}

/* Send what the socket takes now: 0, or -1 when the connection broke. */
static int flush(struct uiw__nfs_pipe *p, int fd)
{
    while (p->out_off < p->out_len) {
        ssize_t k =
            send(fd, p->out + p->out_off, p->out_len - p->out_off, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
        p->out_off += (size_t)k;
    }
    p->out_off = p->out_len = 0;
    return 0;
}

/* Read what has come: 0, or -1 when the connection ended or broke. */
static int fill(struct uiw__nfs_pipe *p, int fd)
{
    for (;;) {
        if (p->in_cap - p->in_len < READ_ROOM / 4) {
            if (p->in_len >= MAX_RECORD + READ_ROOM)
                return 0; /* take what is here first */
            if (grow_for(p, &p->in, &p->in_cap, p->in_len + READ_ROOM) != 0)
                return -1;
        }
        ssize_t k = recv(fd, p->in + p->in_len, p->in_cap - p->in_len, MSG_DONTWAIT);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
        if (k == 0)
            return -1;
        p->in_len += (size_t)k;
    }
}

int uiw__nfs_pipe_run(struct uiw__nfs_pipe *p, CLIENT *cl, int timeout_ms, double patience)
{
    if (!p->lost)
        p->lost_cl = cl;
    double until = timeout_ms < 0 ? 0 : mono_s() + timeout_ms / 1e3;
    int fd = fd_of(cl);
    unsigned served = p->served;
    /* idle, a pipe that serves backward calls waits for them */
    int idle_wait = p->serve && timeout_ms >= 0;
    for (int polled = 0;; polled = 1) {
        if (p->lost)
            return UIW__NFS_PIPE_LOST;
        int ended = 0;
        /* sent again after the records: the replies to backward calls among them */
        if (flush(p, fd) != 0 || (ended = records(p, cl)) < 0 || flush(p, fd) != 0) {
            p->lost = 1;
            return UIW__NFS_PIPE_LOST;
        }
        if (ended > 0 || (!p->head && !idle_wait) || p->served != served)
            return ended;
        double now = mono_s(), wait = 3600;
        if (p->head) {
            double due = p->head->sent + patience;
            if (now >= due) {
                p->lost = 1;
                return UIW__NFS_PIPE_LOST;
            }
            wait = due - now;
        }
        if (timeout_ms >= 0) {
            if (polled && now >= until)
                return 0;
            if (until - now < wait)
                wait = until > now ? until - now : 0;
        }
        struct pollfd pf = {fd, POLLIN, 0};
        if (p->out_off < p->out_len)
            pf.events |= POLLOUT;
        int r = poll(&pf, 1, (int)(wait * 1e3 + 0.999));
        if (r < 0 && errno != EINTR) {
            p->lost = 1; /* no way to wait on it: a new one */
            return UIW__NFS_PIPE_LOST;
        }
        if (r > 0 && (pf.revents & (POLLIN | POLLERR | POLLHUP)) && fill(p, fd) != 0) {
            /* the replies read before the end still count */
            if (records(p, cl) > 0) {
                p->lost = 1;
                return 1;
            }
            p->lost = 1;
            return UIW__NFS_PIPE_LOST;
        }
    }
}

int uiw__nfs_pipe_resend(struct uiw__nfs_pipe *p, CLIENT *cl, int most)
{
    p->lost = 0;
    p->in_len = 0;
    p->out_off = p->out_len = 0;
    p->xid_cl = cl; /* its sequence goes on from the pipe's */
    int ended = 0;
    struct call *prev = NULL, *k = p->head;
    while (k) {
        struct call *next = k->next;
        int rc = k->sends > most ? -ETIMEDOUT : encode(p, cl, k);
        if (rc != 0) {
            end_call(p, prev, k, rc == -ETIMEDOUT ? RPC_TIMEDOUT : RPC_CANTENCODEARGS);
            ended++;
        } else {
            prev = k;
        }
        k = next;
    }
    return ended;
}

int uiw__nfs_pipe_fail(struct uiw__nfs_pipe *p, enum clnt_stat st)
{
    int ended = 0;
    p->in_len = 0;
    p->out_off = p->out_len = 0;
    while (p->head) {
        end_call(p, NULL, p->head, st);
        ended++;
    }
    p->lost = 0;
    return ended;
}
