/*
 * Registration with the host's rpcbind, so that a plain `mount server:/export` and
 * `showmount -e` find uiw-nfsd: NFS 3 (and 4 when it is served) on netids tcp (and tcp6
 * when the listener takes IPv6 too) and rdma (the connection manager listens on IPv4),
 * MOUNT 3 on tcp (and tcp6),
 * which rpcbind answers in every version (portmap's GETPORT too); stale registrations of a server
 * that died are cleared first, and everything is unregistered at the end.
 *
 * The calls are rpcbind version 3 SET and UNSET, made here rather than with libtirpc's
 * rpcb_set: that one knows only the netids of /etc/netconfig, and rdma has none there
 * (the Linux kernel registers its own the same way, an inet universal address). rpcbind
 * is reached as libtirpc reaches it: its local socket, else TCP at the loopback address.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <rpc/rpc.h>
#include <rpc/rpcb_prot.h>

#include "nfs/server.h"

#define NFS_PROGRAM_NUM   100003
#define MOUNT_PROGRAM_NUM 100005

/* A client of the local rpcbind, or NULL when none runs (either connect is refused at
 * once then). */
static CLIENT *rpcbind_client(void)
{
    int fd = socket(AF_LOCAL, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return NULL;
    struct sockaddr_un sun = {.sun_family = AF_LOCAL};
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", _PATH_RPCBINDSOCK);
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons(111)};
    in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct netbuf nb = {sizeof(sun), sizeof(sun), &sun};
    if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
        close(fd);
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return NULL;
        if (connect(fd, (struct sockaddr *)&in, sizeof(in)) != 0) {
            close(fd);
            return NULL;
        }
        nb = (struct netbuf){sizeof(in), sizeof(in), &in};
    }
    CLIENT *cl = clnt_vc_create(fd, &nb, RPCBPROG, RPCBVERS, 0, 0);
    if (!cl) {
        close(fd);
        return NULL;
    }
    CLNT_CONTROL(cl, CLSET_FD_CLOSE, NULL);
    return cl;
}

/* SET or UNSET; TRUE when rpcbind did it. */
static bool_t rpcb_do(CLIENT *cl, rpcproc_t proc, rpcprog_t prog, rpcvers_t vers, const char *netid,
                      const char *uaddr)
{
    char owner[16];
    snprintf(owner, sizeof(owner), "%u", (unsigned)geteuid());
    RPCB p = {
        .r_prog = prog,
        .r_vers = vers,
        .r_netid = (char *)(uintptr_t)netid,
        .r_addr = (char *)(uintptr_t)uaddr,
        .r_owner = owner,
    };
    bool_t ok = FALSE;
    struct timeval tv = {10, 0};
    if (clnt_call(cl, proc, (xdrproc_t)xdr_rpcb, (char *)&p, (xdrproc_t)xdr_bool, (char *)&ok,
                  tv) != RPC_SUCCESS)
        return FALSE;
    return ok;
}

/* The universal address of a listener (RFC 5665): the address, then the port's two bytes. */
static void uaddr_of(char *out, size_t n, int family, const char *addr, int port)
{
    char a[INET6_ADDRSTRLEN];
    if (family == AF_INET6) {
        struct in6_addr in6 = IN6ADDR_ANY_INIT;
        if (addr && strchr(addr, ':'))
            inet_pton(AF_INET6, addr, &in6);
        inet_ntop(AF_INET6, &in6, a, sizeof(a));
    } else {
        struct in_addr in4 = {htonl(INADDR_ANY)};
        if (addr && !strchr(addr, ':'))
            inet_pton(AF_INET, addr, &in4);
        inet_ntop(AF_INET, &in4, a, sizeof(a));
    }
    snprintf(out, n, "%s.%d.%d", a, (port >> 8) & 0xff, port & 0xff);
}

/* Every registration of NFS 3 and 4 and MOUNT 3, whoever made it. */
static void unset_all(CLIENT *cl)
{
    rpcb_do(cl, RPCBPROC_UNSET, NFS_PROGRAM_NUM, 3, "", "");
    rpcb_do(cl, RPCBPROC_UNSET, NFS_PROGRAM_NUM, 4, "", "");
    rpcb_do(cl, RPCBPROC_UNSET, MOUNT_PROGRAM_NUM, 3, "", "");
}

int uiw__nfsd_rpcbind_register(struct uiw__nfsd *s, int loud)
{
    CLIENT *cl = rpcbind_client();
    if (!cl) {
        if (loud)
            fprintf(stderr, "uiw-nfsd: no rpcbind runs on this host (rpcbind.service): not "
                            "registered\n");
        return -1;
    }
    const char *addr = s->opts.addr;
    int v6 = !addr || strchr(addr, ':'), v4 = !addr || !strchr(addr, ':');
    unset_all(cl); /* a server that ended without saying so */
    /* NFS 4 beside 3 when it is served (as knfsd registers both); a port <= 0 is left out */
    int v4tcp = s->opts.nfs4 ? s->ports[UIW__NFSD_TCP] : 0;
    int v4rdma = s->opts.nfs4 ? s->ports[UIW__NFSD_RDMA] : 0;
    const struct {
        rpcprog_t prog;
        rpcvers_t vers;
        int port;
        const char *netid4, *netid6;
    } regs[] = {
        {NFS_PROGRAM_NUM, 3, s->ports[UIW__NFSD_TCP], "tcp", "tcp6"},
        {NFS_PROGRAM_NUM, 4, v4tcp, "tcp", "tcp6"},
        {MOUNT_PROGRAM_NUM, 3, s->ports[UIW__NFSD_MOUNT], "tcp", "tcp6"},
        {NFS_PROGRAM_NUM, 3, s->ports[UIW__NFSD_RDMA], "rdma", NULL}, /* IPv4 only */
        {NFS_PROGRAM_NUM, 4, v4rdma, "rdma", NULL},
    };
    int done = 0, failed = 0;
    for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++) {
        if (regs[i].port <= 0)
            continue;
        for (int f = 0; f < 2; f++) {
            if (!(f ? v6 && regs[i].netid6 : v4))
                continue;
            char ua[INET6_ADDRSTRLEN + 16];
            uaddr_of(ua, sizeof(ua), f ? AF_INET6 : AF_INET, addr, regs[i].port);
            if (rpcb_do(cl, RPCBPROC_SET, regs[i].prog, regs[i].vers,
                        f ? regs[i].netid6 : regs[i].netid4, ua))
                done++;
            else
                failed++;
        }
    }
    clnt_destroy(cl);
    s->rpcbind_done = done > 0;
    if (!done) {
        fprintf(stderr, "uiw-nfsd: rpcbind refused every registration: clients must name "
                        "the ports (port=, mountport=)\n");
        return -1;
    }
    if (failed)
        fprintf(stderr, "uiw-nfsd: rpcbind took %d of %d registrations\n", done, done + failed);
    return done;
}

void uiw__nfsd_rpcbind_unregister(struct uiw__nfsd *s)
{
    if (!s->rpcbind_done)
        return;
    CLIENT *cl = rpcbind_client();
    if (cl) {
        unset_all(cl);
        clnt_destroy(cl);
    }
    s->rpcbind_done = 0;
}
