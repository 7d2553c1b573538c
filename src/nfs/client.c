/* The client of uiw-nfs (client.h): URLs, transports, the version, and NFSv3; NFSv4 is
 * client4.c's. */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rpc/rpc.h>

#include <rpc/pmap_prot.h> /* after rpc.h: it needs XDR */

#include "mount3.h"
#include "nfs/client_int.h"
#include "nfs/pipe.h"
#include "nfs/xdr_data.h"

#if UIW_NFS_HAVE_RDMA
#include <uiw/rpc.h>

#include "rpc/clnt_hooks.h"
#endif

/* READDIRPLUS: the reply's size asked for (maxcount). */
#define READDIR_MAXCOUNT 131072
#define MOUNT_PROG       100005

static void say(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *err, size_t n, const char *fmt, ...)
{
    if (!err || !n)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
}

static int parse_uint(const char *s, size_t n, unsigned long max, unsigned long *v)
{
    if (n == 0 || n > 10)
        return -1;
    unsigned long x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        x = x * 10 + (unsigned long)(s[i] - '0');
    }
    if (x > max)
        return -1;
    *v = x;
    return 0;
}

/* %XX escapes of a URL path. */
static int unescape(const char *s, size_t n, char *out, size_t outlen)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch == '%') {
            if (i + 2 >= n)
                return -1;
            char hex[3] = {s[i + 1], s[i + 2], 0};
            char *end;
            long v = strtol(hex, &end, 16);
            if (*end || v <= 0)
                return -1;
            ch = (char)v;
            i += 2;
        }
        if (o + 1 >= outlen)
            return -1;
        out[o++] = ch;
    }
    out[o] = 0;
    return 0;
}

int uiw__nfs_url_parse(const char *s, struct uiw__nfs_url *u, char *err, size_t errlen)
{
    memset(u, 0, sizeof(*u));
    u->uid = (uint32_t)getuid();
    u->gid = (uint32_t)getgid();
    if (strncmp(s, "nfs://", 6) != 0) {
        say(err, errlen, "%s: not an nfs:// URL", s);
        return -1;
    }
    const char *p = s + 6, *hend, *pend;
    if (*p == '[') {
        hend = strchr(p, ']');
        if (!hend || (size_t)(hend - p - 1) >= sizeof(u->host) || hend == p + 1) {
            say(err, errlen, "%s: bad IPv6 host", s);
            return -1;
        }
        memcpy(u->host, p + 1, (size_t)(hend - p - 1));
        p = hend + 1;
    } else {
        hend = p + strcspn(p, ":/?");
        if (hend == p || (size_t)(hend - p) >= sizeof(u->host)) {
            say(err, errlen, "%s: no host", s);
            return -1;
        }
        memcpy(u->host, p, (size_t)(hend - p));
        p = hend;
    }
    if (*p == ':') {
        p++;
        size_t n = strcspn(p, "/?");
        unsigned long v;
        if (parse_uint(p, n, 65535, &v) != 0 || v == 0) {
            say(err, errlen, "%s: bad port", s);
            return -1;
        }
        u->port = (int)v;
        p += n;
    }
    pend = p + strcspn(p, "?");
    if (*p != '/') {
        say(err, errlen, "%s: no path", s);
        return -1;
    }
    if (unescape(p, (size_t)(pend - p), u->path, sizeof(u->path)) != 0) {
        say(err, errlen, "%s: bad path", s);
        return -1;
    }
    p = pend;
    if (*p == '?')
        p++;
    while (*p) {
        size_t n = strcspn(p, "&");
        const char *eq = memchr(p, '=', n);
        if (!eq) {
            say(err, errlen, "%s: bad query '%.*s'", s, (int)n, p);
            return -1;
        }
        size_t kl = (size_t)(eq - p), vl = n - kl - 1;
        const char *v = eq + 1;
        unsigned long x;
        if (kl == 9 && strncmp(p, "transport", 9) == 0) {
            if (vl == 3 && strncmp(v, "tcp", 3) == 0)
                u->transport = UIW__NFS_TCP;
            else if (vl == 4 && strncmp(v, "rdma", 4) == 0)
                u->transport = UIW__NFS_RDMA;
            else {
                say(err, errlen, "%s: transport is tcp or rdma", s);
                return -1;
            }
        } else if (kl == 7 && strncmp(p, "rpcrdma", 7) == 0) {
            if (parse_uint(v, vl, 2, &x) != 0 || x == 0) {
                say(err, errlen, "%s: rpcrdma is 1 or 2", s);
                return -1;
            }
            u->rpcrdma = (int)x;
        } else if (kl == 9 && strncmp(p, "mountport", 9) == 0) {
            if (parse_uint(v, vl, 65535, &x) != 0 || x == 0) {
                say(err, errlen, "%s: bad mountport", s);
                return -1;
            }
            u->mount_port = (int)x;
        } else if (kl == 3 && strncmp(p, "uid", 3) == 0) {
            if (parse_uint(v, vl, 0xffffffffu, &x) != 0) {
                say(err, errlen, "%s: bad uid", s);
                return -1;
            }
            u->uid = (uint32_t)x;
        } else if (kl == 3 && strncmp(p, "gid", 3) == 0) {
            if (parse_uint(v, vl, 0xffffffffu, &x) != 0) {
                say(err, errlen, "%s: bad gid", s);
                return -1;
            }
            u->gid = (uint32_t)x;
        } else if (kl == 7 && strncmp(p, "version", 7) == 0) {
            static const struct {
                const char *s;
                int v;
            } vs[] = {{"3", 3}, {"4", 4}, {"4.1", 41}, {"4.2", 42}};
            u->version = -1;
            for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++)
                if (strlen(vs[i].s) == vl && strncmp(v, vs[i].s, vl) == 0)
                    u->version = vs[i].v;
            if (u->version < 0) {
                say(err, errlen, "%s: version is 3, 4, 4.1 or 4.2", s);
                return -1;
            }
        } else if (kl == 5 && strncmp(p, "owner", 5) == 0) {
            if (vl == 0 || vl >= sizeof(u->owner) ||
                unescape(v, vl, u->owner, sizeof(u->owner)) != 0) {
                say(err, errlen, "%s: bad owner", s);
                return -1;
            }
        } else {
            say(err, errlen, "%s: unknown parameter '%.*s'", s, (int)kl, p);
            return -1;
        }
        p += n;
        if (*p == '&')
            p++;
    }
    return 0;
}

/* A socket of the family connected to a from a reserved port (below 1024), as the
 * kernel's client connects as root: what an export that is `secure` (the default of
 * exports(5)) asks for. The ports are tried from a random one on; a port whose last
 * connection only lingers (TIME_WAIT) may be taken again (SO_REUSEADDR), unless that
 * connection was to this very address (EADDRNOTAVAIL: the next port). -1 with errno when
 * none would do. */
static int connect_reserved(const struct addrinfo *a)
{
    enum { FIRST = 600, COUNT = 1024 - 600 };
    unsigned start = (unsigned)getpid() * 2654435761u;
    int err = EADDRINUSE;
    for (unsigned i = 0; i < COUNT; i++) {
        int fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return -1;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        struct sockaddr_storage me;
        memset(&me, 0, sizeof(me));
        me.ss_family = (sa_family_t)a->ai_family;
        uint16_t port = htons((uint16_t)(FIRST + (start + i) % COUNT));
        socklen_t ml = sizeof(struct sockaddr_in);
        if (a->ai_family == AF_INET6) {
            ((struct sockaddr_in6 *)&me)->sin6_port = port;
            ml = sizeof(struct sockaddr_in6);
        } else {
            ((struct sockaddr_in *)&me)->sin_port = port;
        }
        if (bind(fd, (struct sockaddr *)&me, ml) == 0) {
            if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
                return fd;
            err = errno;
            if (err != EADDRNOTAVAIL) {
                close(fd);
                errno = err;
                return -1;
            }
        }
        close(fd);
    }
    errno = err;
    return -1;
}

/* A connected TCP socket to host:port, or -1 with errno; from a reserved port when run
 * as root (connect_reserved). */
static int tcp_connect(const char *host, int port, struct sockaddr_storage *ss, socklen_t *sl)
{
    struct addrinfo hints, *ai, *a;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    char ps[16];
    snprintf(ps, sizeof(ps), "%d", port);
    int rc = getaddrinfo(host, ps, &hints, &ai);
    if (rc != 0) {
        errno = EHOSTUNREACH;
        return -1;
    }
    int fd = -1, err = ECONNREFUSED;
    for (a = ai; a; a = a->ai_next) {
        if (geteuid() == 0) {
            fd = connect_reserved(a);
        } else {
            fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
                int e = errno;
                close(fd);
                fd = -1;
                errno = e;
            }
        }
        if (fd >= 0) {
            memcpy(ss, a->ai_addr, a->ai_addrlen);
            *sl = a->ai_addrlen;
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            break;
        }
        err = errno;
    }
    freeaddrinfo(ai);
    if (fd < 0)
        errno = err;
    return fd;
}

/* libtirpc's clnt_sperror and clnt_spcreateerror write one buffer shared by every thread:
 * clients opened or failing on several threads at once would garble each other's
 * messages. The same text, in the caller's buf: "what: RPC: status" and its detail. */
static const char *rpc_errtext(enum clnt_stat st, const struct rpc_err *e, const char *what,
                               char *buf, size_t n)
{
    int k = snprintf(buf, n, "%s: %s", what, clnt_sperrno(st));
    size_t at = k < 0 ? 0 : (size_t)k < n ? (size_t)k : n;
    char eb[128];
    if (e && st == RPC_PROGVERSMISMATCH)
        snprintf(buf + at, n - at, "; low version = %u, high version = %u",
                 (unsigned)e->re_vers.low, (unsigned)e->re_vers.high);
    else if (e && (st == RPC_CANTSEND || st == RPC_CANTRECV || st == RPC_SYSTEMERROR) &&
             e->re_errno)
        snprintf(buf + at, n - at, "; errno = %s", strerror_r(e->re_errno, eb, sizeof(eb)));
    return buf;
}

/* rpc_errtext of cl's last call. */
static const char *clnt_errtext(CLIENT *cl, const char *what, char *buf, size_t n)
{
    struct rpc_err e;
    clnt_geterr(cl, &e);
    return rpc_errtext(e.re_status, &e, what, buf, n);
}

static CLIENT *rpc_tcp(struct uiw__nfs_client *c, int port, uint32_t prog, uint32_t vers, char *err,
                       size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    int fd = tcp_connect(c->url.host, port, &ss, &sl);
    if (fd < 0) {
        say(err, errlen, "%s:%d: %s", c->url.host, port, strerror(errno));
        return NULL;
    }
    struct netbuf nb = {.maxlen = sl, .len = sl, .buf = &ss};
    CLIENT *cl = clnt_vc_create(fd, &nb, prog, vers, 0, 0);
    if (!cl) {
        char eb[256];
        struct rpc_err e = rpc_createerr.cf_error;
        say(err, errlen, "%s:%d: %s", c->url.host, port,
            rpc_errtext(rpc_createerr.cf_stat, &e, "connect", eb, sizeof(eb)));
        close(fd);
        return NULL;
    }
    clnt_control(cl, CLSET_FD_CLOSE, NULL);
    char host[256];
    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "localhost");
    host[sizeof(host) - 1] = 0;
    gid_t gids[1] = {c->url.gid};
    AUTH *a = authunix_create(host, c->url.uid, c->url.gid, 1, gids);
    if (a) {
        auth_destroy(cl->cl_auth);
        cl->cl_auth = a;
    }
    return cl;
}

#if UIW_NFS_HAVE_RDMA
/* What moves inline on the connection just made: over Version Two, once both sides have
 * offered receive buffers larger than the default 4 KiB, WRITE data that fits the
 * server's (the DDP threshold raised to match), and READ data that fits ours and the
 * server's (no Write chunk offered). Not when --ddp-threshold chose the threshold. */
static void inline_sizes(struct uiw__nfs_client *c, const struct uiw_rpc_conn_info *in)
{
    c->read_inline = 0;
    if (in->vers != 2 || c->url.ddp_threshold || in->inline_send <= UIW_RPCRDMA_RBSIZ_DEFAULT)
        return;
    if (uiw__rpc_clnt_set_ddp_threshold(c->nfs, in->inline_send - INLINE_ROOM) != 0)
        return;
    uint32_t fit = in->inline_recv < in->peer_rbsiz ? in->inline_recv : in->peer_rbsiz;
    if (fit > UIW_RPCRDMA_RBSIZ_DEFAULT)
        c->read_inline = fit - INLINE_ROOM;
}
#endif

/* NFS (version c->vers) over RPC-over-RDMA: Version Two first (unless ?rpcrdma=1),
 * Version One when the server answers ERR_VERS. 0; -1 with a message in err; -2 when the
 * server does not serve that NFS version (PROG_MISMATCH). */
static int rpc_rdma(struct uiw__nfs_client *c, char *err, size_t errlen)
{
#if UIW_NFS_HAVE_RDMA
    int port = c->url.port ? c->url.port : UIW_RPCRDMA_PORT;
    struct uiw_rpc_clnt_attr a;
    memset(&a, 0, sizeof(a));
    a.xprt.vers_min = 1;
    a.xprt.vers_max = c->url.rpcrdma == 1 ? 1 : 2;
    a.xprt.max_ddp = 64u << 20;
    /* Version Two: receive buffers of UIW__NFS_V2_INLINE bytes offered (RBSIZ) and sent to
     * a server that offers as much, so that READ and WRITE data up to some 31 KiB travel
     * inline (a Send each way) rather than by RDMA Write or Read; Version One keeps RFC
     * 8797's 4 KiB. */
    uint32_t isz = c->url.inline_size;
    if (!isz && a.xprt.vers_max >= 2)
        isz = UIW__NFS_V2_INLINE;
    a.xprt.inline_recv = isz;
    a.xprt.inline_send = isz;
    a.xprt.ddp_threshold = c->url.ddp_threshold;
    /* one connection, busy from its first call: its receive buffers resident from the
     * start rather than faulted in one by one over its first hundred or so calls */
    a.xprt.resident = true;
    a.no_vers_memory = 1; /* each run says what the server answers */
    c->nfs = uiw_rpc_clnt_create(c->url.host, (uint16_t)port, NFS_PROG, (rpcvers_t)c->vers, &a);
    if (!c->nfs) {
        say(err, errlen, "%s:%d (rdma): %s", c->url.host, port, strerror(errno));
        return -1;
    }
    char host[256];
    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "localhost");
    host[sizeof(host) - 1] = 0;
    gid_t gids[1] = {c->url.gid};
    AUTH *au = authunix_create(host, c->url.uid, c->url.gid, 1, gids);
    if (au) {
        auth_destroy(c->nfs->cl_auth);
        c->nfs->cl_auth = au;
    }
    c->rdma = 1;
    /* A NULL call settles the version (and shows the fallback). */
    struct timeval tv = {30, 0};
    enum clnt_stat st =
        clnt_call(c->nfs, 0, UIW__XDRPROC(xdr_void), NULL, UIW__XDRPROC(xdr_void), NULL, tv);
    if (st != RPC_SUCCESS) {
        char eb[256];
        say(err, errlen, "%s", clnt_errtext(c->nfs, "NFS NULL (rdma)", eb, sizeof(eb)));
        auth_destroy(c->nfs->cl_auth);
        c->nfs->cl_auth = NULL;
        clnt_destroy(c->nfs);
        c->nfs = NULL;
        return st == RPC_PROGVERSMISMATCH || st == RPC_PROGUNAVAIL ? -2 : -1;
    }
    struct uiw_rpc_conn_info in;
    unsigned vers = 0;
    if (uiw_rpc_clnt_info(c->nfs, &in) == 0) {
        vers = in.vers;
        if (c->verbose && in.vers_fallback && in.errvers_high)
            fprintf(stderr,
                    "uiw-nfs: RPC-over-RDMA: sent Version %u, the server answered ERR_VERS "
                    "(versions %u to %u): going on in Version %u%s\n",
                    a.xprt.vers_max, in.errvers_low, in.errvers_high, in.vers,
                    in.vers_no_answer ? " (the answer came after it had been assumed)" : "");
        else if (c->verbose && in.vers_fallback && in.vers_no_answer)
            fprintf(stderr,
                    "uiw-nfs: RPC-over-RDMA: sent Version %u, the server did not answer in time: "
                    "going on in Version %u\n",
                    a.xprt.vers_max, in.vers);
        inline_sizes(c, &in);
        if (c->verbose)
            fprintf(stderr,
                    "uiw-nfs: NFS v%d at %s:%d (rdma, RPC-over-RDMA Version %u, %u credits, "
                    "inline %u/%u)\n",
                    c->vers, c->url.host, port, in.vers, in.credits, in.inline_send,
                    in.inline_recv);
    }
    snprintf(c->transport, sizeof(c->transport), "rdma-v%u", vers);
    return 0;
#else
    (void)c;
    say(err, errlen, "transport=rdma: this build has no RPC-over-RDMA client");
    return -1;
#endif
}

static void rpc_close(CLIENT *cl)
{
    if (cl->cl_auth)
        auth_destroy(cl->cl_auth);
    cl->cl_auth = NULL;
    clnt_destroy(cl);
}

static const struct {
    int st;
    const char *name;
} nfsstat_names[] = {
#define N(x)                                                                                       \
    {                                                                                              \
        x, #x                                                                                      \
    }
    N(NFS3ERR_PERM),      N(NFS3ERR_NOENT),       N(NFS3ERR_IO),         N(NFS3ERR_NXIO),
    N(NFS3ERR_ACCES),     N(NFS3ERR_EXIST),       N(NFS3ERR_XDEV),       N(NFS3ERR_NODEV),
    N(NFS3ERR_NOTDIR),    N(NFS3ERR_ISDIR),       N(NFS3ERR_INVAL),      N(NFS3ERR_FBIG),
    N(NFS3ERR_NOSPC),     N(NFS3ERR_ROFS),        N(NFS3ERR_MLINK),      N(NFS3ERR_NAMETOOLONG),
    N(NFS3ERR_NOTEMPTY),  N(NFS3ERR_DQUOT),       N(NFS3ERR_STALE),      N(NFS3ERR_REMOTE),
    N(NFS3ERR_BADHANDLE), N(NFS3ERR_NOT_SYNC),    N(NFS3ERR_BAD_COOKIE), N(NFS3ERR_NOTSUPP),
    N(NFS3ERR_TOOSMALL),  N(NFS3ERR_SERVERFAULT), N(NFS3ERR_BADTYPE),    N(NFS3ERR_JUKEBOX),
#undef N
};

static const char *nfsstat_name(int st)
{
    for (size_t i = 0; i < sizeof(nfsstat_names) / sizeof(nfsstat_names[0]); i++)
        if (nfsstat_names[i].st == st)
            return nfsstat_names[i].name;
    return NULL;
}

const char *uiw__nfs_errtext(const struct uiw__nfs_client *c, int rc)
{
    static __thread char buf[640];
    if (rc == UIW__NFS_ERPC)
        return c && c->err[0] ? c->err : "RPC failed";
    int st = -rc;
    const char *name = c && c->vers == 4 ? uiw__nfs4c_errname(st) : nfsstat_name(st);
    if (!name) {
        snprintf(buf, sizeof(buf), "status %d", st);
        return buf;
    }
    const char *text = st < 1000 ? strerror(st) : NULL;
    if (st == NFS3ERR_STALE)
        text = "Stale file handle";
    else if (st == NFS3ERR_BADHANDLE)
        text = "Bad file handle";
    else if (st == NFS3ERR_NOTSUPP)
        text = "Operation not supported";
    /* NFS's numbers that are other errnos on Linux */
    else if (st == NFS3ERR_NAMETOOLONG)
        text = "File name too long";
    else if (st == NFS3ERR_NOTEMPTY)
        text = "Directory not empty";
    else if (st == NFS3ERR_DQUOT)
        text = "Disk quota exceeded";
    if (text)
        snprintf(buf, sizeof(buf), "%s (%s)", text, name);
    else
        snprintf(buf, sizeof(buf), "%s", name);
    return buf;
}

/* The RPC layer's account of a failed call, kept for uiw__nfs_errtext. */
static void rpc_failed(struct uiw__nfs_client *c, const char *what)
{
    clnt_errtext(c->nfs, what, c->err, sizeof(c->err));
    char *nl = strchr(c->err, '\n');
    if (nl)
        *nl = 0;
}

/* Over TCP, a call whose connection was lost (or that got no reply in time: the server
 * may have dropped it while its first copy ran) goes again on a new connection with the
 * same XID, as a kernel client does, so that the server's duplicate-reply cache answers
 * a call that already ran. At most RECONNECTS times, waiting a little longer each time
 * for the server (one that restarts takes a moment). 0, or -1 when no new connection
 * could be made. */
#define RECONNECTS 8
static int reconnect(struct uiw__nfs_client *c, int attempt)
{
    uint32_t xid = 0;
    clnt_control(c->nfs, CLGET_XID, (char *)&xid);
    char e[512];
    for (int i = 0; i < 50; i++) {
        CLIENT *n = rpc_tcp(c, c->nfs_port, NFS_PROG, (uint32_t)c->vers, e, sizeof(e));
        if (n) {
            /* the same credential (its stamp too): the call goes again byte for byte */
            auth_destroy(n->cl_auth);
            n->cl_auth = c->nfs->cl_auth;
            c->nfs->cl_auth = NULL;
            rpc_close(c->nfs);
            c->nfs = n;
            /* the lost call's XID, once more. libtirpc's clnt_vc takes the next call's XID
             * by decrementing its stored word as it lies in memory, in network byte
             * order, and CLSET_XID stores (value + 1) in network order: so the value
             * that makes the next call carry xid is the one below. */
            uint32_t next = ntohl(htonl(xid) + 1) - 1;
            clnt_control(c->nfs, CLSET_XID, (char *)&next);
            c->reconnects++;
            if (c->verbose)
                fprintf(stderr, "uiw-nfs: NFS connection to %s:%d lost: connected again (%d)\n",
                        c->url.host, c->nfs_port, attempt + 1);
            return 0;
        }
        usleep((useconds_t)(20000 * (attempt + 1)));
    }
    snprintf(c->err, sizeof(c->err), "%s", e);
    return -1;
}

static int pipe_sync(struct uiw__nfs_client *c, uint32_t proc, xdrproc_t xargs, void *args,
                     xdrproc_t xres, void *res);

void uiw__nfs_pipe_ready(struct uiw__nfs_client *c)
{
    if (c->rdma || !c->pipe || !c->reserve_io)
        return;
    /* a READ's or WRITE's payload with the RPC and NFS words around it; a failure only
     * leaves the buffers to grow as calls need */
    uint32_t r = c->rtmax < c->reserve_io ? c->rtmax : c->reserve_io;
    uint32_t w = c->wtmax < c->reserve_io ? c->wtmax : c->reserve_io;
    (void)uiw__nfs_pipe_reserve(c->pipe, (size_t)r + 4096, (size_t)w + 4096);
}

void uiw__nfs_client_reserve(struct uiw__nfs_client *c, uint32_t bytes)
{
    if (bytes > (1u << 20))
        bytes = 1u << 20;
    if (bytes <= c->reserve_io)
        return;
    c->reserve_io = bytes;
    uiw__nfs_pipe_ready(c);
}

int uiw__nfs_call(struct uiw__nfs_client *c, uint32_t proc, xdrproc_t xargs, void *args,
                  xdrproc_t xres, void *res)
{
    enum clnt_stat st = RPC_SUCCESS;
    /* NFSv4's pipe is the connection's only reader (backward calls come on it) */
    if (!c->rdma && c->pipe && (c->vers == 4 || uiw__nfs_pipe_pending(c->pipe)))
        return pipe_sync(c, proc, xargs, args, xres, res);
#if UIW_NFS_HAVE_RDMA
    if (c->rdma &&
        (proc == NFSPROC3_READDIR || proc == NFSPROC3_READDIRPLUS || proc == NFSPROC3_READLINK)) {
        /* Replies that may not fit inline: offer a Reply chunk (a Version One server
         * has no other way to send them). */
        struct uiw_rpc_call_opts o = {.reply_max = READDIR_MAXCOUNT + 8192};
        st = uiw_rpc_call(c->nfs, proc, xargs, args, xres, res, c->timeout, &o);
    } else
#endif
    {
        if (c->pipe)
            uiw__nfs_pipe_give_xid(c->pipe, c->nfs);
        for (int attempt = 0;; attempt++) {
            st = clnt_call(c->nfs, proc, xargs, args, xres, res, c->timeout);
            if (c->rdma || attempt == RECONNECTS ||
                (st != RPC_CANTSEND && st != RPC_CANTRECV && st != RPC_TIMEDOUT))
                break;
            xdr_free(xres, res);
            if (reconnect(c, attempt) != 0)
                return UIW__NFS_ERPC;
        }
    }
    if (st != RPC_SUCCESS) {
        rpc_failed(c, "NFS call");
        return UIW__NFS_ERPC;
    }
    return 0;
}

int uiw__nfs_call_ddp(struct uiw__nfs_client *c, uint32_t proc, xdrproc_t xargs, void *args,
                      xdrproc_t xres, void *res, void *result_buf, uint32_t result_len,
                      uint32_t reply_max)
{
#if UIW_NFS_HAVE_RDMA
    if (c->rdma) {
        struct uiw_rpc_call_opts o;
        memset(&o, 0, sizeof(o));
        o.reply_max = reply_max;
        if (result_buf && result_len >= c->read_inline) {
            /* the payload lands by RDMA Write in result_buf (a Write chunk) */
            o.nresult_bufs = 1;
            o.result_bufs[0].addr = result_buf;
            o.result_bufs[0].len = result_len;
        } else if (result_buf && o.reply_max < result_len + INLINE_ROOM) {
            o.reply_max = result_len + INLINE_ROOM; /* should the server send less inline */
        }
        enum clnt_stat st = uiw_rpc_call(c->nfs, proc, xargs, args, xres, res, c->timeout, &o);
        if (st != RPC_SUCCESS) {
            rpc_failed(c, "NFS call");
            return UIW__NFS_ERPC;
        }
        return 0;
    }
#endif
    (void)result_buf;
    (void)result_len;
    (void)reply_max;
    return uiw__nfs_call(c, proc, xargs, args, xres, res);
}

/* A call in flight that ended: its status (and c->err) as a synchronous call's. */
static void async_ended(struct uiw__nfs_async *a, enum clnt_stat st)
{
    struct uiw__nfs_client *c = a->c;
    if (st != RPC_SUCCESS && !c->pipe_failing)
        snprintf(c->err, sizeof(c->err), "NFS call: %s", clnt_sperrno(st));
    if (st == RPC_SUCCESS)
        c->pipe_attempt = 0;
    a->done(a->arg, st == RPC_SUCCESS ? 0 : UIW__NFS_ERPC);
}

#if UIW_NFS_HAVE_RDMA
static void async_done(CLIENT *cl, void *arg, enum clnt_stat st, const struct rpc_err *e)
{
    (void)cl;
    (void)e;
    async_ended(arg, st);
}
#endif

static void pipe_done(void *arg, enum clnt_stat st)
{
    async_ended(arg, st);
}

int uiw__nfs_call_async(struct uiw__nfs_client *c, uint32_t proc, xdrproc_t xargs, void *args,
                        xdrproc_t xres, void *res, struct uiw__nfs_async *a)
{
    if (c->vers == 4 && !c->rdma)
        return -EPROTONOSUPPORT; /* NFSv3's procedures; NFSv4's go through client4.c */
    return uiw__nfs_call_inflight(c, proc, xargs, args, xres, res, a);
}

int uiw__nfs_call_inflight(struct uiw__nfs_client *c, uint32_t proc, xdrproc_t xargs, void *args,
                           xdrproc_t xres, void *res, struct uiw__nfs_async *a)
{
    a->c = c;
#if UIW_NFS_HAVE_RDMA
    if (c->rdma) {
        struct uiw_rpc_call_opts o;
        memset(&o, 0, sizeof(o));
        if (a->result_buf && a->result_len < c->read_inline)
            o.reply_max = a->result_len + INLINE_ROOM; /* inline, as uiw__nfs_read */
        if (a->result_buf && a->result_len >= c->read_inline) {
            o.nresult_bufs = 1;
            o.result_bufs[0].addr = a->result_buf;
            o.result_bufs[0].len = a->result_len;
        }
        return uiw_rpc_call_async(c->nfs, proc, xargs, args, xres, res, c->timeout, &o, async_done,
                                  a);
    }
#endif
    if (!c->pipe) {
        if (!(c->pipe = uiw__nfs_pipe_create(NFS_PROG, (uint32_t)c->vers)))
            return -ENOMEM;
        uiw__nfs_pipe_ready(c);
    }
    return uiw__nfs_pipe_call(c->pipe, c->nfs, proc, xargs, args, xres, res, pipe_done, a);
}

/* Over TCP: the pipe run; a connection lost (or a call unanswered for the client's
 * timeout) is made again as a synchronous call's is, and every call in flight sent again
 * with its XID (at most RECONNECTS times each). */
static int pipe_poll(struct uiw__nfs_client *c, int timeout_ms)
{
    if (!c->pipe)
        return 0;
    int r = uiw__nfs_pipe_run(c->pipe, c->nfs, timeout_ms, (double)c->timeout.tv_sec);
    if (r != UIW__NFS_PIPE_LOST)
        return r;
    if (reconnect(c, c->pipe_attempt < RECONNECTS ? c->pipe_attempt++ : RECONNECTS) != 0) {
        c->pipe_failing = 1;
        r = uiw__nfs_pipe_fail(c->pipe, RPC_CANTSEND);
        c->pipe_failing = 0;
        return r;
    }
    c->rebind = c->vers == 4;
    return uiw__nfs_pipe_resend(c->pipe, c->nfs, RECONNECTS);
}

int uiw__nfs_xprt_poll(struct uiw__nfs_client *c, int timeout_ms)
{
#if UIW_NFS_HAVE_RDMA
    if (c->rdma)
        return uiw_rpc_clnt_poll(c->nfs, timeout_ms);
#endif
    return pipe_poll(c, timeout_ms);
}

static int v4_run(struct uiw__nfs_op *op);

int uiw__nfs_poll(struct uiw__nfs_client *c, int timeout_ms)
{
    if (c->vers == 4) {
        /* the operations ended: their done, in the order they ended; those in flight
         * waited for when none has */
        int n = 0;
        for (;;) {
#if UIW_NFS_HAVE_RDMA
            /* the calls the done functions start go out together, as those a callback
             * inside uiw_rpc_clnt_poll starts (NFSv3's): one system call, not one each */
            if (c->rdma)
                uiw__rpc_clnt_plug();
#endif
            uiw__nfs4c_resume(c);
            while (c->v4_ended) {
                struct uiw__nfs_op *op = c->v4_ended;
                c->v4_ended = op->v4_next;
                if (!c->v4_ended)
                    c->v4_ended_tail = &c->v4_ended;
                op->done(op, op->v4_again ? v4_run(op) : op->v4_rc);
                n++;
            }
#if UIW_NFS_HAVE_RDMA
            if (c->rdma)
                uiw__rpc_clnt_unplug();
#endif
            if (!n && !uiw__nfs4c_inflight(c) && timeout_ms >= 0) {
                /* nothing in flight: the back channel served for the time given (the
                 * pipe's records over TCP, the RPC layer's backward calls over
                 * RPC-over-RDMA), then what waited for the next COMPOUND: a new TCP
                 * connection bound, the delegations recalled meanwhile returned (a
                 * transport's trouble is the next call's to report) */
                uiw__nfs_xprt_poll(c, timeout_ms);
                uiw__nfs4c_idle(c);
            }
            if (n || !uiw__nfs4c_inflight(c))
                return n;
            if (uiw__nfs_xprt_poll(c, timeout_ms) < 0)
                return -1;
            if (!c->v4_ended)
                return 0;
        }
    }
#if UIW_NFS_HAVE_RDMA
    if (c->rdma)
        return uiw_rpc_clnt_poll(c->nfs, timeout_ms);
#endif
    return pipe_poll(c, timeout_ms);
}

void uiw__nfs_batch_begin(void)
{
#if UIW_NFS_HAVE_RDMA
    uiw__rpc_clnt_plug();
#endif
}

void uiw__nfs_batch_end(void)
{
#if UIW_NFS_HAVE_RDMA
    uiw__rpc_clnt_unplug();
#endif
}

unsigned uiw__nfs_most_inflight(const struct uiw__nfs_client *c)
{
    return c->pipe ? uiw__nfs_pipe_most(c->pipe) : 0;
}

struct waiter {
    int done, rc;
};

static void woken(void *arg, int rc)
{
    struct waiter *w = arg;
    w->rc = rc;
    w->done = 1;
}

/* A synchronous call over TCP while others are in flight: one more of them, waited for. */
static int pipe_sync(struct uiw__nfs_client *c, uint32_t proc, xdrproc_t xargs, void *args,
                     xdrproc_t xres, void *res)
{
    struct waiter w = {0, 0};
    struct uiw__nfs_async a = {.done = woken, .arg = &w};
    int rc = uiw__nfs_call_inflight(c, proc, xargs, args, xres, res, &a);
    if (rc != 0) {
        snprintf(c->err, sizeof(c->err), "NFS call: %s", strerror(-rc));
        return UIW__NFS_ERPC;
    }
    while (!w.done)
        pipe_poll(c, -1);
    return w.rc;
}

static void fh_in(nfs_fh3 *out, const struct uiw__nfs_fh *fh)
{
    out->data.data_len = fh->len;
    out->data.data_val = (char *)fh->data;
}

static int fh_out(struct uiw__nfs_fh *fh, const nfs_fh3 *in)
{
    if (in->data.data_len > NFS3_FHSIZE)
        return -NFS3ERR_BADHANDLE;
    fh->len = in->data.data_len;
    memcpy(fh->data, in->data.data_val, fh->len);
    return 0;
}

/* The TCP ports the server's rpcbind names for NFS 3 and MOUNT 3 (portmap GETPORT, which
 * every rpcbind answers), 0 for those it does not know. Connecting waits at most 3 s: a
 * firewall may drop what goes to port 111. */
static void rpcbind_ports(const struct uiw__nfs_client *c, int *nfs, int *mount)
{
    *nfs = *mount = 0;
    struct addrinfo hints, *ai;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(c->url.host, "111", &hints, &ai) != 0)
        return;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct timeval cto = {3, 0};
    if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &cto, sizeof(cto)) != 0 ||
                    connect(fd, ai->ai_addr, ai->ai_addrlen) != 0)) {
        close(fd);
        fd = -1;
    }
    struct netbuf nb = {.maxlen = ai->ai_addrlen, .len = ai->ai_addrlen, .buf = ai->ai_addr};
    CLIENT *p = fd >= 0 ? clnt_vc_create(fd, &nb, PMAPPROG, PMAPVERS, 0, 0) : NULL;
    freeaddrinfo(ai);
    if (!p) {
        if (fd >= 0)
            close(fd);
        return;
    }
    clnt_control(p, CLSET_FD_CLOSE, NULL);
    struct timeval tv = {5, 0};
    struct pmap q[2] = {{NFS_PROG, 3, IPPROTO_TCP, 0}, {MOUNT_PROG, 3, IPPROTO_TCP, 0}};
    int *out[2] = {nfs, mount};
    for (int i = 0; i < 2; i++) {
        u_long port = 0;
        if (clnt_call(p, PMAPPROC_GETPORT, UIW__XDRPROC(xdr_pmap), (caddr_t)&q[i],
                      UIW__XDRPROC(xdr_u_long), (caddr_t)&port, tv) != RPC_SUCCESS)
            break;
        *out[i] = port > 0 && port < 65536 ? (int)port : 0;
    }
    clnt_destroy(p);
}

/* MOUNT: the EXPORT list, then MNT of the longest export that is a prefix of path. The
 * port: the URL's mountport, else (the URL naming no port) what the server's rpcbind
 * says, else NFS's own port (uiw-nfsd answers MOUNT there too), else 20048. */
static int do_mount(struct uiw__nfs_client *c, char *err, size_t errlen)
{
    int ports[3] = {c->url.mount_port, 0, 20048};
    int nports = 0;
    if (c->url.mount_port)
        nports = 1;
    else {
        int rb_mount = 0;
        if (!c->url.port) /* a port named: that server, whatever rpcbind knows */
            rpcbind_ports(c, &c->rpcbind_nfs_port, &rb_mount);
        if (rb_mount)
            ports[nports++] = rb_mount;
        if (c->url.transport == UIW__NFS_TCP)
            ports[nports++] = c->url.port           ? c->url.port
                              : c->rpcbind_nfs_port ? c->rpcbind_nfs_port
                                                    : 2049;
        if (rb_mount != 20048)
            ports[nports++] = 20048;
    }
    CLIENT *m = NULL;
    struct timeval tv = {10, 0};
    for (int i = 0; i < nports && !m; i++) {
        m = rpc_tcp(c, ports[i], MOUNT_PROG, 3, err, errlen);
        if (m && clnt_call(m, 0, UIW__XDRPROC(xdr_void), NULL, UIW__XDRPROC(xdr_void), NULL, tv) !=
                     RPC_SUCCESS) {
            char eb[256];
            say(err, errlen, "%s", clnt_errtext(m, "MOUNT NULL", eb, sizeof(eb)));
            rpc_close(m);
            m = NULL;
        }
        if (m)
            c->mount_port = ports[i];
    }
    if (!m)
        return -1;
    if (c->verbose)
        fprintf(stderr, "uiw-nfs: MOUNT v3 at %s:%d (tcp)\n", c->url.host, c->mount_port);
    mntexports ex = NULL;
    size_t best = 0;
    const char *path = c->url.path;
    if (clnt_call(m, MOUNTPROC3_EXPORT, UIW__XDRPROC(xdr_void), NULL,
                  UIW__XDRPROC(uiw__xdr_mntexports), (caddr_t)&ex, tv) == RPC_SUCCESS) {
        for (exportnode *e = ex; e; e = e->ex_next) {
            size_t n = strlen(e->ex_dir);
            while (n > 1 && e->ex_dir[n - 1] == '/')
                n--;
            if (strncmp(path, e->ex_dir, n) == 0 && (path[n] == 0 || path[n] == '/' || n == 1) &&
                n > best) {
                best = n;
                snprintf(c->export_path, sizeof(c->export_path), "%.*s", (int)n, e->ex_dir);
            }
        }
        xdr_free(UIW__XDRPROC(uiw__xdr_mntexports), (caddr_t)&ex);
    }
    if (!best) {
        /* No EXPORT list (or no match in it): mount the path's directory as given. */
        snprintf(c->export_path, sizeof(c->export_path), "%s", path);
        best = strlen(path);
    }
    const char *rest = path + best;
    while (*rest == '/')
        rest++;
    snprintf(c->subpath, sizeof(c->subpath), "%s", rest);
    mountres3 res;
    memset(&res, 0, sizeof(res));
    char *dir = c->export_path;
    enum clnt_stat st = clnt_call(m, MOUNTPROC3_MNT, UIW__XDRPROC(xdr_dirpath), (caddr_t)&dir,
                                  UIW__XDRPROC(xdr_mountres3), (caddr_t)&res, tv);
    if (st != RPC_SUCCESS) {
        char eb[256];
        say(err, errlen, "%s", clnt_errtext(m, "MNT", eb, sizeof(eb)));
        rpc_close(m);
        return -1;
    }
    int rc = 0;
    if (res.fhs_status != MNT3_OK) {
        say(err, errlen, "mount %s:%s: %s (MNT3 status %d)", c->url.host, c->export_path,
            res.fhs_status < 1000 ? strerror((int)res.fhs_status) : "error", (int)res.fhs_status);
        rc = -1;
    } else {
        fhandle3 *h = &res.mountres3_u.mountinfo.fhandle;
        c->root.len = h->fhandle3_len;
        memcpy(c->root.data, h->fhandle3_val, h->fhandle3_len);
        if (c->verbose)
            fprintf(stderr, "uiw-nfs: mounted %s (handle of %u bytes), path below it: '%s'\n",
                    c->export_path, c->root.len, c->subpath);
    }
    xdr_free(UIW__XDRPROC(xdr_mountres3), (caddr_t)&res);
    rpc_close(m);
    return rc;
}

/* NFSv4 (the minor version the URL asks for, else 4.2 then 4.1) on the URL's port (else
 * 2049 over TCP, 20049 over RPC-over-RDMA): no MOUNT, the path is walked from the
 * server's root. 0; -1 with a message in err; -2 when the server does not speak it (its
 * message in err: the caller may fall back to NFSv3). */
static int open_v4(struct uiw__nfs_client *c, char *err, size_t errlen)
{
    c->vers = 4;
    int minor = c->url.version == 41 ? 1 : c->url.version == 42 ? 2 : 0;
    if (c->url.transport == UIW__NFS_RDMA) {
        int r = rpc_rdma(c, err, errlen);
        if (r != 0)
            return r;
    } else {
        c->nfs_port = c->url.port ? c->url.port : 2049;
        c->nfs = rpc_tcp(c, c->nfs_port, NFS_PROG, 4, err, errlen);
        if (!c->nfs) /* no port named: NFSv3's may be elsewhere (rpcbind) */
            return c->url.port ? -1 : -2;
        struct timeval tv = {30, 0};
        enum clnt_stat st =
            clnt_call(c->nfs, 0, UIW__XDRPROC(xdr_void), NULL, UIW__XDRPROC(xdr_void), NULL, tv);
        if (st != RPC_SUCCESS) {
            char eb[256];
            say(err, errlen, "%s", clnt_errtext(c->nfs, "NFS v4 NULL", eb, sizeof(eb)));
            char *nl = strchr(err, '\n');
            if (nl)
                *nl = 0;
            rpc_close(c->nfs);
            c->nfs = NULL;
            return st == RPC_PROGVERSMISMATCH || st == RPC_PROGUNAVAIL ? -2 : -1;
        }
        snprintf(c->transport, sizeof(c->transport), "tcp");
        /* every call from here on through the pipe: calls in flight, backward calls */
        if (!(c->pipe = uiw__nfs_pipe_create(NFS_PROG, 4))) {
            say(err, errlen, "out of memory");
            rpc_close(c->nfs);
            c->nfs = NULL;
            return -1;
        }
    }
    int r = uiw__nfs4c_start(c, minor, err, errlen);
    if (r != 0) {
        uiw__nfs_pipe_destroy(c->pipe);
        c->pipe = NULL;
        rpc_close(c->nfs);
        c->nfs = NULL;
        c->rdma = 0;
        return r == -2 && minor == 0 ? -2 : -1;
    }
    /* the whole path lies below the root */
    snprintf(c->export_path, sizeof(c->export_path), "/");
    const char *rest = c->url.path;
    while (*rest == '/')
        rest++;
    snprintf(c->subpath, sizeof(c->subpath), "%s", rest);
    if (c->verbose)
        fprintf(stderr, "uiw-nfs: NFS v4.%d at %s:%d (%s)\n", uiw__nfs4c_minor(c), c->url.host,
                c->url.port ? c->url.port
                : c->rdma   ? 20049
                            : 2049,
                c->transport);
    return 0;
}

/* libtirpc makes its AUTH_NONE singleton without holding its lock over the check, so
 * clients opened by several threads at once can each make one (all but one leak): make it
 * once, first. */
static pthread_once_t authnone_once = PTHREAD_ONCE_INIT;
static void authnone_first(void)
{
    (void)authnone_create();
}

struct uiw__nfs_client *uiw__nfs_client_open(const struct uiw__nfs_url *u, int verbose, char *err,
                                             size_t errlen)
{
    pthread_once(&authnone_once, authnone_first);
    struct uiw__nfs_client *c = calloc(1, sizeof(*c));
    if (!c) {
        say(err, errlen, "out of memory");
        return NULL;
    }
    c->url = *u;
    c->verbose = verbose;
    c->timeout.tv_sec = 60;
    c->v4_ended_tail = &c->v4_ended;
    if (u->version != 3) {
        int r = open_v4(c, err, errlen);
        if (r == 0)
            return c;
        if (r == -1 || u->version != 0) {
            free(c);
            return NULL;
        }
        if (verbose)
            fprintf(stderr, "uiw-nfs: %s: falling back to NFS v3\n", err);
    }
    c->vers = 3;
    if (do_mount(c, err, errlen) != 0) {
        free(c);
        return NULL;
    }
    if (u->transport == UIW__NFS_RDMA) {
        if (rpc_rdma(c, err, errlen) != 0) {
            free(c);
            return NULL;
        }
    } else {
        int port = u->port ? u->port : c->rpcbind_nfs_port ? c->rpcbind_nfs_port : 2049;
        c->nfs_port = port;
        c->nfs = rpc_tcp(c, port, NFS_PROG, 3, err, errlen);
        if (!c->nfs) {
            free(c);
            return NULL;
        }
        snprintf(c->transport, sizeof(c->transport), "tcp");
        if (verbose)
            fprintf(stderr, "uiw-nfs: NFS v3 at %s:%d (tcp)\n", u->host, port);
    }
    FSINFO3args fa;
    FSINFO3res fr;
    fh_in(&fa.fsroot, &c->root);
    memset(&fr, 0, sizeof(fr));
    c->rtmax = c->wtmax = 32768;
    if (uiw__nfs_call(c, NFSPROC3_FSINFO, UIW__XDRPROC(xdr_FSINFO3args), &fa,
                      UIW__XDRPROC(xdr_FSINFO3res), &fr) != 0) {
        say(err, errlen, "%s", c->err);
        uiw__nfs_client_close(c);
        return NULL;
    }
    if (fr.status == NFS3_OK) {
        FSINFO3resok *ok = &fr.FSINFO3res_u.resok;
        if (ok->rtmax >= 512)
            c->rtmax = ok->rtmax > (8u << 20) ? 8u << 20 : ok->rtmax;
        if (ok->wtmax >= 512)
            c->wtmax = ok->wtmax > (8u << 20) ? 8u << 20 : ok->wtmax;
    }
    xdr_free(UIW__XDRPROC(xdr_FSINFO3res), (caddr_t)&fr);
    return c;
}

void uiw__nfs_client_close(struct uiw__nfs_client *c)
{
    if (!c)
        return;
    if (c->v4 && c->nfs)
        uiw__nfs4c_stop(c);
    if (c->nfs)
        rpc_close(c->nfs);
    uiw__nfs_pipe_destroy(c->pipe);
    if (c->mount_port) {
        char e[64];
        CLIENT *m = rpc_tcp(c, c->mount_port, MOUNT_PROG, 3, e, sizeof(e));
        if (m) {
            struct timeval tv = {5, 0};
            char *dir = c->export_path;
            clnt_call(m, MOUNTPROC3_UMNT, UIW__XDRPROC(xdr_dirpath), (caddr_t)&dir,
                      UIW__XDRPROC(xdr_void), NULL, tv);
            rpc_close(m);
        }
    }
    free(c);
}

/* The length of a path's directory part (up to its last '/'), trailing slashes aside. */
static size_t dir_len(const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    while (n > 0 && path[n - 1] != '/')
        n--;
    return n;
}

int uiw__nfs_client_reuse(struct uiw__nfs_client *c, const struct uiw__nfs_url *u)
{
    const struct uiw__nfs_url *o = &c->url;
    size_t n = dir_len(o->path);
    if (strcmp(o->host, u->host) != 0 || o->port != u->port || o->mount_port != u->mount_port ||
        o->transport != u->transport || o->rpcrdma != u->rpcrdma || o->uid != u->uid ||
        o->gid != u->gid || o->inline_size != u->inline_size ||
        o->ddp_threshold != u->ddp_threshold || o->version != u->version ||
        strcmp(o->owner, u->owner) != 0 || n != dir_len(u->path) ||
        strncmp(o->path, u->path, n) != 0)
        return -1;
    /* The same directory: the same export, and the same path below it but the name. */
    size_t e = strlen(c->export_path);
    if (strncmp(u->path, c->export_path, e) != 0)
        return -1;
    const char *rest = u->path + e;
    while (*rest == '/')
        rest++;
    snprintf(c->subpath, sizeof(c->subpath), "%s", rest);
    c->url = *u;
    return 0;
}

uint32_t uiw__nfs_client_rtmax(const struct uiw__nfs_client *c)
{
    return c->rtmax;
}

uint32_t uiw__nfs_client_wtmax(const struct uiw__nfs_client *c)
{
    return c->wtmax;
}

const struct uiw__nfs_fh *uiw__nfs_client_root(const struct uiw__nfs_client *c)
{
    return &c->root;
}

const char *uiw__nfs_client_subpath(const struct uiw__nfs_client *c)
{
    return c->subpath;
}

int uiw__nfs_client_xprt_stats(struct uiw__nfs_client *c, struct uiw_rpc_xprt_stats *st)
{
#if UIW_NFS_HAVE_RDMA
    if (c->rdma && c->nfs)
        return uiw_rpc_clnt_xprt_stats(c->nfs, st);
#else
    (void)st;
#endif
    (void)c;
    return -ENOTCONN;
}

const char *uiw__nfs_client_transport(const struct uiw__nfs_client *c)
{
    return c->transport;
}

const char *uiw__nfs_client_version(const struct uiw__nfs_client *c)
{
    return c->vers == 3 ? "3" : uiw__nfs4c_minor(c) == 1 ? "4.1" : "4.2";
}

/* ---- arguments and results, shared by the synchronous calls and those in flight ---- */

static void lookup_args(LOOKUP3args *a, const struct uiw__nfs_fh *dir, const char *name)
{
    fh_in(&a->what.dir, dir);
    a->what.name = (char *)name;
}

/* 0 with *fh (and *attr when asked for: *need_attr set when the reply brought none), or
 * -status. */
static int lookup_out(const LOOKUP3res *r, struct uiw__nfs_fh *fh, fattr3 *attr, int *need_attr)
{
    *need_attr = 0;
    if (r->status != NFS3_OK)
        return -(int)r->status;
    const LOOKUP3resok *ok = &r->LOOKUP3res_u.resok;
    int rc = fh_out(fh, &ok->object);
    if (rc == 0 && attr) {
        if (ok->obj_attributes.attributes_follow)
            *attr = ok->obj_attributes.post_op_attr_u.attributes;
        else
            *need_attr = 1;
    }
    return rc;
}

static int getattr_out(const GETATTR3res *r, fattr3 *attr)
{
    if (r->status != NFS3_OK)
        return -(int)r->status;
    if (attr)
        *attr = r->GETATTR3res_u.resok.obj_attributes;
    return 0;
}

static void truncate_args(SETATTR3args *a, const struct uiw__nfs_fh *fh, uint64_t size)
{
    memset(a, 0, sizeof(*a));
    fh_in(&a->object, fh);
    a->new_attributes.size.set_it = 1;
    a->new_attributes.size.set_size3_u.size = size;
}

static void create_args(CREATE3args *a, const struct uiw__nfs_fh *dir, const char *name,
                        uint32_t mode, int excl)
{
    memset(a, 0, sizeof(*a));
    fh_in(&a->where.dir, dir);
    a->where.name = (char *)name;
    a->how.mode = excl ? GUARDED : UNCHECKED;
    a->how.createhow3_u.obj_attributes.mode.set_it = 1;
    a->how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = mode;
}

/* The handle a CREATE or MKDIR gave: 0 (*need_lookup set when it gave none), or -status. */
static int made_out(nfsstat3 status, const post_op_fh3 *obj, struct uiw__nfs_fh *fh,
                    int *need_lookup)
{
    *need_lookup = 0;
    if (status != NFS3_OK)
        return -(int)status;
    if (!fh)
        return 0;
    if (obj->handle_follows)
        return fh_out(fh, &obj->post_op_fh3_u.handle);
    *need_lookup = 1;
    return 0;
}

static void write_args(WRITE3args *a, const struct uiw__nfs_fh *fh, uint64_t off, uint32_t count,
                       const void *buf, stable_how stable)
{
    fh_in(&a->file, fh);
    a->offset = off;
    a->count = count;
    a->stable = stable;
    a->data.data_len = count;
    a->data.data_val = (char *)buf;
}

/* The count written (and *verf), or -status. */
static int write_out(const WRITE3res *r, char *verf)
{
    if (r->status != NFS3_OK)
        return -(int)r->status;
    if (verf)
        memcpy(verf, r->WRITE3res_u.resok.verf, 8);
    return (int)r->WRITE3res_u.resok.count;
}

static void commit_args(COMMIT3args *a, const struct uiw__nfs_fh *fh)
{
    fh_in(&a->file, fh);
    a->offset = 0;
    a->count = 0;
}

static int commit_out(const COMMIT3res *r, char *verf)
{
    if (r->status != NFS3_OK)
        return -(int)r->status;
    if (verf)
        memcpy(verf, r->COMMIT3res_u.resok.verf, 8);
    return 0;
}

static void read_args(READ3args *a, const struct uiw__nfs_fh *fh, uint64_t off, uint32_t count)
{
    fh_in(&a->file, fh);
    a->offset = off;
    a->count = count;
}

/* A READ decoded into the caller's buffer (over TCP): the count read (and *eof), or
 * -status. */
static int read_in_out(const struct uiw__nfs_read_into *r, int *eof)
{
    if (r->res.status != NFS3_OK)
        return -(int)r->res.status;
    if (eof)
        *eof = r->res.READ3res_u.resok.eof;
    return (int)r->res.READ3res_u.resok.data.data_len;
}

#if UIW_NFS_HAVE_RDMA
/* A READ whose payload came by RDMA Write into buf: the count (and *eof), or -status, or
 * UIW__NFS_ERPC when the result names other memory. */
static int read_ddp_out(struct uiw__nfs_client *c, const READ3res *res, const void *buf,
                        uint32_t count, int *eof)
{
    if (res->status != NFS3_OK)
        return -(int)res->status;
    if (res->READ3res_u.resok.data.data_val != buf || res->READ3res_u.resok.data.data_len > count) {
        snprintf(c->err, sizeof(c->err), "READ reply outside the caller's buffer");
        return UIW__NFS_ERPC;
    }
    if (eof)
        *eof = res->READ3res_u.resok.eof;
    return (int)res->READ3res_u.resok.data.data_len;
}
#endif

/* Call, then free the result's allocations with xdr_free once `use` has read it. */
#define CALL(c, proc, xa, a, xr, r)                                                                \
    uiw__nfs_call((c), (proc), UIW__XDRPROC(xa), (a), UIW__XDRPROC(xr), (r))

int uiw__nfs_lookup(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir, const char *name,
                    struct uiw__nfs_fh *fh, fattr3 *attr)
{
    if (c->vers == 4)
        return uiw__nfs4c_lookup(c, dir, name, fh, attr);
    LOOKUP3args a;
    LOOKUP3res r;
    lookup_args(&a, dir, name);
    memset(&r, 0, sizeof(r));
    int rc = CALL(c, NFSPROC3_LOOKUP, xdr_LOOKUP3args, &a, xdr_LOOKUP3res, &r);
    if (rc != 0)
        return rc;
    int need_attr;
    rc = lookup_out(&r, fh, attr, &need_attr);
    xdr_free(UIW__XDRPROC(xdr_LOOKUP3res), (caddr_t)&r);
    return rc == 0 && need_attr ? uiw__nfs_getattr(c, fh, attr) : rc;
}

int uiw__nfs_lookup_path(struct uiw__nfs_client *c, const char *path, struct uiw__nfs_fh *fh,
                         fattr3 *attr)
{
    if (c->vers == 4)
        return uiw__nfs4c_lookup_path(c, path, fh, attr);
    struct uiw__nfs_fh cur = c->root;
    fattr3 a;
    int rc = 0, looked = 0;
    char comp[256];
    while (*path) {
        while (*path == '/')
            path++;
        size_t n = strcspn(path, "/");
        if (n == 0)
            break;
        if (n >= sizeof(comp))
            return -NFS3ERR_NAMETOOLONG;
        memcpy(comp, path, n);
        comp[n] = 0;
        path += n;
        rc = uiw__nfs_lookup(c, &cur, comp, &cur, &a);
        if (rc != 0)
            return rc;
        looked = 1;
    }
    if (attr) {
        if (looked)
            *attr = a;
        else if ((rc = uiw__nfs_getattr(c, &cur, attr)) != 0)
            return rc;
    }
    *fh = cur;
    return 0;
}

int uiw__nfs_getattr(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, fattr3 *attr)
{
    if (c->vers == 4)
        return uiw__nfs4c_getattr(c, fh, attr);
    GETATTR3args a;
    GETATTR3res r;
    fh_in(&a.object, fh);
    memset(&r, 0, sizeof(r));
    int rc = CALL(c, NFSPROC3_GETATTR, xdr_GETATTR3args, &a, xdr_GETATTR3res, &r);
    if (rc != 0)
        return rc;
    rc = getattr_out(&r, attr);
    xdr_free(UIW__XDRPROC(xdr_GETATTR3res), (caddr_t)&r);
    return rc;
}

static int setattr(struct uiw__nfs_client *c, SETATTR3args *a)
{
    SETATTR3res r;
    memset(&r, 0, sizeof(r));
    int rc = CALL(c, NFSPROC3_SETATTR, xdr_SETATTR3args, a, xdr_SETATTR3res, &r);
    if (rc != 0)
        return rc;
    rc = r.status == NFS3_OK ? 0 : -(int)r.status;
    xdr_free(UIW__XDRPROC(xdr_SETATTR3res), (caddr_t)&r);
    return rc;
}

int uiw__nfs_truncate(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, uint64_t size)
{
    if (c->vers == 4)
        return uiw__nfs4c_setattr(c, fh, &size, NULL);
    SETATTR3args a;
    truncate_args(&a, fh, size);
    return setattr(c, &a);
}

int uiw__nfs_chmod(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, uint32_t mode)
{
    if (c->vers == 4)
        return uiw__nfs4c_setattr(c, fh, NULL, &mode);
    SETATTR3args a;
    memset(&a, 0, sizeof(a));
    fh_in(&a.object, fh);
    a.new_attributes.mode.set_it = 1;
    a.new_attributes.mode.set_mode3_u.mode = mode;
    return setattr(c, &a);
}

int uiw__nfs_read(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, uint64_t off,
                  uint32_t count, void *buf, int *eof)
{
    if (c->vers == 4)
        return uiw__nfs4c_read(c, fh, off, count, buf, eof);
    READ3args a;
    read_args(&a, fh, off, count);
#if UIW_NFS_HAVE_RDMA
    if (c->rdma) {
        /* The payload lands by RDMA Write in buf (a Write chunk on the caller's memory),
         * and the result names the same buffer, so decoding copies nothing. */
        READ3res res;
        memset(&res, 0, sizeof(res));
        res.READ3res_u.resok.data.data_val = buf;
        res.READ3res_u.resok.data.data_len = count;
        struct uiw_rpc_call_opts o;
        memset(&o, 0, sizeof(o));
        if (count >= c->read_inline) {
            o.nresult_bufs = 1;
            o.result_bufs[0].addr = buf;
            o.result_bufs[0].len = count;
        } else {
            o.reply_max = count + INLINE_ROOM; /* should the server send less inline */
        }
        enum clnt_stat st = uiw_rpc_call(c->nfs, NFSPROC3_READ, UIW__XDRPROC(xdr_READ3args), &a,
                                         UIW__XDRPROC(xdr_READ3res), &res, c->timeout, &o);
        if (st != RPC_SUCCESS) {
            rpc_failed(c, "NFS READ");
            return UIW__NFS_ERPC;
        }
        return read_ddp_out(c, &res, buf, count, eof);
    }
#endif
    struct uiw__nfs_read_into r;
    memset(&r, 0, sizeof(r));
    r.buf = buf;
    r.cap = count;
    int rc = CALL(c, NFSPROC3_READ, xdr_READ3args, &a, uiw__xdr_READ3res_into, &r);
    return rc != 0 ? rc : read_in_out(&r, eof);
}

int uiw__nfs_write(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, uint64_t off,
                   uint32_t count, const void *buf, stable_how stable, char verf[8])
{
    if (c->vers == 4)
        return uiw__nfs4c_write(c, fh, off, count, buf, stable, verf);
    WRITE3args a;
    WRITE3res r;
    write_args(&a, fh, off, count, buf, stable);
    memset(&r, 0, sizeof(r));
    int rc = CALL(c, NFSPROC3_WRITE, uiw__xdr_WRITE3args, &a, xdr_WRITE3res, &r);
    if (rc != 0)
        return rc;
    rc = write_out(&r, verf);
    xdr_free(UIW__XDRPROC(xdr_WRITE3res), (caddr_t)&r);
    return rc;
}

int uiw__nfs_commit(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, char verf[8])
{
    if (c->vers == 4)
        return uiw__nfs4c_commit(c, fh, verf);
    COMMIT3args a;
    COMMIT3res r;
    commit_args(&a, fh);
    memset(&r, 0, sizeof(r));
    int rc = CALL(c, NFSPROC3_COMMIT, xdr_COMMIT3args, &a, xdr_COMMIT3res, &r);
    if (rc != 0)
        return rc;
    rc = commit_out(&r, verf);
    xdr_free(UIW__XDRPROC(xdr_COMMIT3res), (caddr_t)&r);
    return rc;
}

int uiw__nfs_create(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir, const char *name,
                    uint32_t mode, int excl, struct uiw__nfs_fh *fh)
{
    if (c->vers == 4)
        return uiw__nfs4c_create(c, dir, name, mode, excl, fh);
    CREATE3args a;
    CREATE3res r;
    create_args(&a, dir, name, mode, excl);
    memset(&r, 0, sizeof(r));
    int rc = CALL(c, NFSPROC3_CREATE, xdr_CREATE3args, &a, xdr_CREATE3res, &r);
    if (rc != 0)
        return rc;
    int need_lookup;
    rc = made_out(r.status, &r.CREATE3res_u.resok.obj, fh, &need_lookup);
    xdr_free(UIW__XDRPROC(xdr_CREATE3res), (caddr_t)&r);
    return rc == 0 && need_lookup ? uiw__nfs_lookup(c, dir, name, fh, NULL) : rc;
}

int uiw__nfs_mkdir(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir, const char *name,
                   uint32_t mode, struct uiw__nfs_fh *fh)
{
    if (c->vers == 4)
        return uiw__nfs4c_mkdir(c, dir, name, mode, fh);
    MKDIR3args a;
    MKDIR3res r;
    memset(&a, 0, sizeof(a));
    fh_in(&a.where.dir, dir);
    a.where.name = (char *)name;
    a.attributes.mode.set_it = 1;
    a.attributes.mode.set_mode3_u.mode = mode;
    memset(&r, 0, sizeof(r));
    int rc = CALL(c, NFSPROC3_MKDIR, xdr_MKDIR3args, &a, xdr_MKDIR3res, &r);
    if (rc != 0)
        return rc;
    int need_lookup;
    rc = made_out(r.status, &r.MKDIR3res_u.resok.obj, fh, &need_lookup);
    xdr_free(UIW__XDRPROC(xdr_MKDIR3res), (caddr_t)&r);
    return rc == 0 && need_lookup ? uiw__nfs_lookup(c, dir, name, fh, NULL) : rc;
}

/* ---- operations in flight (client.h) ---- */

enum { OP_LOOKUP, OP_GETATTR, OP_SETATTR, OP_CREATE, OP_WRITE, OP_COMMIT, OP_READ };

static const struct {
    uint32_t proc;
    xdrproc_t xargs, xres;
} op_calls[] = {
    [OP_LOOKUP] = {NFSPROC3_LOOKUP, UIW__XDRPROC(xdr_LOOKUP3args), UIW__XDRPROC(xdr_LOOKUP3res)},
    [OP_GETATTR] = {NFSPROC3_GETATTR, UIW__XDRPROC(xdr_GETATTR3args),
                    UIW__XDRPROC(xdr_GETATTR3res)},
    [OP_SETATTR] = {NFSPROC3_SETATTR, UIW__XDRPROC(xdr_SETATTR3args),
                    UIW__XDRPROC(xdr_SETATTR3res)},
    [OP_CREATE] = {NFSPROC3_CREATE, UIW__XDRPROC(xdr_CREATE3args), UIW__XDRPROC(xdr_CREATE3res)},
    [OP_WRITE] = {NFSPROC3_WRITE, UIW__XDRPROC(uiw__xdr_WRITE3args), UIW__XDRPROC(xdr_WRITE3res)},
    [OP_COMMIT] = {NFSPROC3_COMMIT, UIW__XDRPROC(xdr_COMMIT3args), UIW__XDRPROC(xdr_COMMIT3res)},
    [OP_READ] = {NFSPROC3_READ, UIW__XDRPROC(xdr_READ3args), UIW__XDRPROC(xdr_READ3res)},
};

static void op_ended(void *arg, int rc);

/* Start op's call of kind with the arguments in op->args. */
static int op_call(struct uiw__nfs_op *op, int kind)
{
    op->kind = kind;
    memset(&op->a, 0, sizeof(op->a));
    op->a.done = op_ended;
    op->a.arg = op;
    memset(&op->res, 0, sizeof(op->res));
    xdrproc_t xres = op_calls[kind].xres;
    if (kind == OP_READ && op->c->rdma) {
        /* the payload by RDMA Write into buf, which the result names */
        op->res.read.READ3res_u.resok.data.data_val = op->buf;
        op->res.read.READ3res_u.resok.data.data_len = op->count;
        op->a.result_buf = op->buf;
        op->a.result_len = op->count;
    } else if (kind == OP_READ) {
        op->res.read_in.buf = op->buf;
        op->res.read_in.cap = op->count;
        xres = UIW__XDRPROC(uiw__xdr_READ3res_into);
    }
    return uiw__nfs_call_async(op->c, op_calls[kind].proc, op_calls[kind].xargs, &op->args, xres,
                               &op->res, &op->a);
}

/* op's call ended: its result read (a second call started when it needs one), its
 * allocations freed, then op->done. */
static void op_ended(void *arg, int rc)
{
    struct uiw__nfs_op *op = arg;
    int next = -1;
    if (rc == 0) {
        int more = 0;
        switch (op->kind) {
        case OP_LOOKUP:
            rc = lookup_out(&op->res.lookup, op->out_fh, op->out_attr, &more);
            next = more ? OP_GETATTR : -1;
            break;
        case OP_GETATTR:
            rc = getattr_out(&op->res.getattr, op->out_attr);
            break;
        case OP_SETATTR:
            rc = op->res.setattr.status == NFS3_OK ? 0 : -(int)op->res.setattr.status;
            break;
        case OP_CREATE:
            rc = made_out(op->res.create.status, &op->res.create.CREATE3res_u.resok.obj, op->out_fh,
                          &more);
            next = more ? OP_LOOKUP : -1;
            break;
        case OP_WRITE:
            rc = write_out(&op->res.write, op->out_verf);
            break;
        case OP_COMMIT:
            rc = commit_out(&op->res.commit, op->out_verf);
            break;
        case OP_READ:
#if UIW_NFS_HAVE_RDMA
            if (op->c->rdma) {
                rc = read_ddp_out(op->c, &op->res.read, op->buf, op->count, op->out_eof);
                break;
            }
#endif
            rc = read_in_out(&op->res.read_in, op->out_eof);
            break;
        }
    }
    if (op->kind != OP_READ) /* a READ's result holds nothing allocated */
        xdr_free(op_calls[op->kind].xres, (caddr_t)&op->res);
    if (rc == 0 && next >= 0) {
        if (next == OP_GETATTR) {
            fh_in(&op->args.getattr.object, op->out_fh);
        } else {
            lookup_args(&op->args.lookup, &op->fh, op->name);
            op->out_attr = NULL;
        }
        int r = op_call(op, next);
        if (r == 0)
            return;
        snprintf(op->c->err, sizeof(op->c->err), "NFS call: %s", strerror(-r));
        rc = UIW__NFS_ERPC;
    }
    op->done(op, rc);
}

void uiw__nfs_op_ended(struct uiw__nfs_op *op, int rc, int again)
{
    struct uiw__nfs_client *c = op->c;
    op->v4_rc = rc;
    op->v4_again = again;
    op->v4_next = NULL;
    *c->v4_ended_tail = op;
    c->v4_ended_tail = &op->v4_next;
}

/* NFSv4: an operation started has run (rc its result): its done waits for
 * uiw__nfs_poll, as a call in flight's would. */
static int v4_ended(struct uiw__nfs_op *op, int rc)
{
    uiw__nfs_op_ended(op, rc, 0);
    return 0;
}

/* NFSv4: op (one that goes in flight) run synchronously: its result. */
static int v4_run(struct uiw__nfs_op *op)
{
    struct uiw__nfs_client *c = op->c;
    switch (op->kind) {
    case UIW__NFS4C_GETATTR:
        return uiw__nfs4c_getattr(c, &op->fh, op->out_attr);
    case UIW__NFS4C_READ:
        return uiw__nfs4c_read(c, &op->fh, op->off, op->count, op->buf, op->out_eof);
    default:
        return uiw__nfs4c_write(c, &op->fh, op->off, op->count, op->buf, (stable_how)op->stable,
                                op->out_verf);
    }
}

/* NFSv4: op of kind in flight, else run now; its done waits for uiw__nfs_poll. */
static int v4_start(struct uiw__nfs_op *op, enum uiw__nfs4c_kind kind)
{
    op->kind = (int)kind;
    if (uiw__nfs4c_op_start(op->c, op, kind))
        return 0;
    return v4_ended(op, v4_run(op));
}

/* op set up for a call on c about fh (a file, or the directory of name). */
static int op_init(struct uiw__nfs_op *op, struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh,
                   const char *name)
{
    op->c = c;
    op->fh = *fh;
    op->name[0] = 0;
    if (name) {
        size_t n = strlen(name);
        if (n >= sizeof(op->name))
            return -ENAMETOOLONG;
        memcpy(op->name, name, n + 1);
    }
    op->out_fh = NULL;
    op->out_attr = NULL;
    op->out_verf = NULL;
    op->out_eof = NULL;
    op->buf = NULL;
    op->count = 0;
    return 0;
}

int uiw__nfs_lookup_start(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir,
                          const char *name, struct uiw__nfs_fh *fh, fattr3 *attr,
                          struct uiw__nfs_op *op)
{
    int rc = op_init(op, c, dir, name);
    if (rc != 0)
        return rc;
    op->out_fh = fh;
    op->out_attr = attr;
    if (c->vers == 4)
        return v4_ended(op, uiw__nfs4c_lookup(c, dir, name, fh, attr));
    lookup_args(&op->args.lookup, &op->fh, op->name);
    return op_call(op, OP_LOOKUP);
}

int uiw__nfs_getattr_start(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, fattr3 *attr,
                           struct uiw__nfs_op *op)
{
    op_init(op, c, fh, NULL);
    op->out_attr = attr;
    if (c->vers == 4)
        return v4_start(op, UIW__NFS4C_GETATTR);
    fh_in(&op->args.getattr.object, &op->fh);
    return op_call(op, OP_GETATTR);
}

int uiw__nfs_truncate_start(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, uint64_t size,
                            struct uiw__nfs_op *op)
{
    op_init(op, c, fh, NULL);
    if (c->vers == 4)
        return v4_ended(op, uiw__nfs4c_setattr(c, fh, &size, NULL));
    truncate_args(&op->args.setattr, &op->fh, size);
    return op_call(op, OP_SETATTR);
}

int uiw__nfs_create_start(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir,
                          const char *name, uint32_t mode, int excl, struct uiw__nfs_fh *fh,
                          struct uiw__nfs_op *op)
{
    int rc = op_init(op, c, dir, name);
    if (rc != 0)
        return rc;
    op->out_fh = fh;
    if (c->vers == 4)
        return v4_ended(op, uiw__nfs4c_create(c, dir, name, mode, excl, fh));
    create_args(&op->args.create, &op->fh, op->name, mode, excl);
    return op_call(op, OP_CREATE);
}

int uiw__nfs_write_start(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, uint64_t off,
                         uint32_t count, const void *buf, stable_how stable, char verf[8],
                         struct uiw__nfs_op *op)
{
    op_init(op, c, fh, NULL);
    op->out_verf = verf;
    if (c->vers == 4) {
        op->buf = (void *)(uintptr_t)buf;
        op->count = count;
        op->off = off;
        op->stable = (int)stable;
        return v4_start(op, UIW__NFS4C_WRITE);
    }
    write_args(&op->args.write, &op->fh, off, count, buf, stable);
    return op_call(op, OP_WRITE);
}

int uiw__nfs_commit_start(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, char verf[8],
                          struct uiw__nfs_op *op)
{
    op_init(op, c, fh, NULL);
    op->out_verf = verf;
    if (c->vers == 4)
        return v4_ended(op, uiw__nfs4c_commit(c, fh, verf));
    commit_args(&op->args.commit, &op->fh);
    return op_call(op, OP_COMMIT);
}

int uiw__nfs_read_start(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, uint64_t off,
                        uint32_t count, void *buf, int *eof, struct uiw__nfs_op *op)
{
    op_init(op, c, fh, NULL);
    op->buf = buf;
    op->count = count;
    op->out_eof = eof;
    if (c->vers == 4) {
        op->off = off;
        return v4_start(op, UIW__NFS4C_READ);
    }
    read_args(&op->args.read, &op->fh, off, count);
    return op_call(op, OP_READ);
}

static int unlink_call(struct uiw__nfs_client *c, uint32_t proc, const struct uiw__nfs_fh *dir,
                       const char *name)
{
    REMOVE3args a; /* RMDIR3args has the same layout */
    REMOVE3res r;
    fh_in(&a.object.dir, dir);
    a.object.name = (char *)name;
    memset(&r, 0, sizeof(r));
    int rc = CALL(c, proc, xdr_REMOVE3args, &a, xdr_REMOVE3res, &r);
    if (rc != 0)
        return rc;
    rc = r.status == NFS3_OK ? 0 : -(int)r.status;
    xdr_free(UIW__XDRPROC(xdr_REMOVE3res), (caddr_t)&r);
    return rc;
}

int uiw__nfs_remove(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir, const char *name)
{
    if (c->vers == 4)
        return uiw__nfs4c_remove(c, dir, name);
    return unlink_call(c, NFSPROC3_REMOVE, dir, name);
}

int uiw__nfs_rmdir(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir, const char *name)
{
    if (c->vers == 4)
        return uiw__nfs4c_remove(c, dir, name);
    return unlink_call(c, NFSPROC3_RMDIR, dir, name);
}

int uiw__nfs_rename(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fdir, const char *from,
                    const struct uiw__nfs_fh *tdir, const char *to)
{
    if (c->vers == 4)
        return uiw__nfs4c_rename(c, fdir, from, tdir, to);
    RENAME3args a;
    RENAME3res r;
    fh_in(&a.from.dir, fdir);
    a.from.name = (char *)from;
    fh_in(&a.to.dir, tdir);
    a.to.name = (char *)to;
    memset(&r, 0, sizeof(r));
    int rc = CALL(c, NFSPROC3_RENAME, xdr_RENAME3args, &a, xdr_RENAME3res, &r);
    if (rc != 0)
        return rc;
    rc = r.status == NFS3_OK ? 0 : -(int)r.status;
    xdr_free(UIW__XDRPROC(xdr_RENAME3res), (caddr_t)&r);
    return rc;
}

int uiw__nfs_readdir(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir,
                     uiw__nfs_dirent_fn fn, void *arg)
{
    if (c->vers == 4)
        return uiw__nfs4c_readdir(c, dir, fn, arg);
    READDIRPLUS3args a;
    memset(&a, 0, sizeof(a));
    fh_in(&a.dir, dir);
    a.dircount = 32768;
    a.maxcount = READDIR_MAXCOUNT;
    for (;;) {
        READDIRPLUS3res r;
        memset(&r, 0, sizeof(r));
        int rc =
            CALL(c, NFSPROC3_READDIRPLUS, xdr_READDIRPLUS3args, &a, uiw__xdr_READDIRPLUS3res, &r);
        if (rc != 0)
            return rc;
        if (r.status != NFS3_OK) {
            rc = -(int)r.status;
            xdr_free(UIW__XDRPROC(uiw__xdr_READDIRPLUS3res), (caddr_t)&r);
            return rc;
        }
        READDIRPLUS3resok *ok = &r.READDIRPLUS3res_u.resok;
        int n = 0;
        for (entryplus3 *e = ok->reply.entries; e && rc == 0; e = e->nextentry, n++) {
            struct uiw__nfs_fh fh, *fp = NULL;
            if (e->name_handle.handle_follows &&
                fh_out(&fh, &e->name_handle.post_op_fh3_u.handle) == 0)
                fp = &fh;
            rc = fn(arg, e->name, e->fileid,
                    e->name_attributes.attributes_follow
                        ? &e->name_attributes.post_op_attr_u.attributes
                        : NULL,
                    fp);
            a.cookie = e->cookie;
        }
        memcpy(a.cookieverf, ok->cookieverf, sizeof(a.cookieverf));
        int eof = ok->reply.eof;
        xdr_free(UIW__XDRPROC(uiw__xdr_READDIRPLUS3res), (caddr_t)&r);
        if (rc != 0)
            return rc;
        if (eof)
            return 0;
        if (n == 0)
            return -NFS3ERR_TOOSMALL;
    }
}
