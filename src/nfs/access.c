/*
 * Who may use an export, and how: the exports file's line of the export (exports.c),
 * checked on every call over every transport (a client that got a handle elsewhere is
 * checked against the export the handle names), and at MNT. An export of the command
 * line is open to every host, read-write, squashed as the server's options say.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "nfs/server.h"

void uiw__nfsd_caller(SVCXPRT *xprt, char *buf, size_t n, unsigned *port)
{
    snprintf(buf, n, "unknown");
    unsigned p = 0;
    const struct netbuf *nb = svc_getrpccaller(xprt);
    if (nb && nb->buf && nb->len >= sizeof(sa_family_t)) {
        const struct sockaddr *sa = nb->buf;
        if (sa->sa_family == AF_INET && nb->len >= sizeof(struct sockaddr_in)) {
            const struct sockaddr_in *in = nb->buf;
            inet_ntop(AF_INET, &in->sin_addr, buf, (socklen_t)n);
            p = ntohs(in->sin_port);
        } else if (sa->sa_family == AF_INET6 && nb->len >= sizeof(struct sockaddr_in6)) {
            const struct sockaddr_in6 *in6 = nb->buf;
            if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
                inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], buf, (socklen_t)n);
            else
                inet_ntop(AF_INET6, &in6->sin6_addr, buf, (socklen_t)n);
            p = ntohs(in6->sin6_port);
        }
    }
    if (port)
        *port = p;
}

nfsstat3 uiw__nfsd_access(struct uiw__nfsd *s, const struct uiw__nfs_export *ex,
                          const struct svc_req *rq, int write, struct uiw__nfs_cred *cred,
                          const struct uiw__nfs_xopts **op)
{
    const struct uiw__nfs_xopts *o = NULL;
    if (op)
        *op = NULL;
    if (ex->access) {
        const struct netbuf *nb = svc_getrpccaller(rq->rq_xprt);
        char who[INET6_ADDRSTRLEN + 8];
        unsigned port;
        uiw__nfsd_caller(rq->rq_xprt, who, sizeof(who), &port);
        const char *why = NULL;
        if (nb && nb->buf && nb->len >= sizeof(sa_family_t))
            o = uiw__nfs_xentry_match(ex->access, nb->buf);
        if (ex->removed)
            why = "no longer exported";
        else if (!o)
            why = "not a client of it";
        else if ((o->flags & UIW__X_SECURE) && port >= 1024)
            why = "a source port of 1024 or above (the export is secure)";
        else if (rq->rq_cred.oa_flavor == AUTH_SYS && !(o->flags & UIW__X_SEC_SYS))
            why = "AUTH_SYS, which its sec= leaves out";
        else if (rq->rq_cred.oa_flavor == AUTH_NONE && !(o->flags & UIW__X_SEC_NONE))
            why = "AUTH_NONE, which its sec= leaves out";
        if (why) {
            uiw__nfsd_refused(s, UIW__NFSD_REFUSED_ACCESS,
                              "refused %s access to %s from %s (port %u): %s",
                              rq->rq_prog == 100005 ? "MOUNT" : "NFS", ex->path, who, port, why);
            return NFS3ERR_ACCES;
        }
        if (write && !(o->flags & UIW__X_RW))
            return NFS3ERR_ROFS;
    }
    if (op)
        *op = o;
    if (cred)
        uiw__nfs_cred_from_req(s, rq, o, cred);
    return NFS3_OK;
}

int uiw__nfsd_crosses(struct uiw__nfsd *s, const struct svc_req *rq, const struct uiw__nfs_xopts *o,
                      int fd)
{
    if (!o || (o->flags & UIW__X_CROSSMNT))
        return 1; /* the command line's exports cross, as they always did */
    struct stat st;
    const struct netbuf *nb = svc_getrpccaller(rq->rq_xprt);
    if (fstat(fd, &st) != 0 || !nb || !nb->buf || nb->len < sizeof(sa_family_t))
        return 0;
    for (unsigned i = 0; i < s->nexports; i++) {
        const struct uiw__nfs_export *ex = &s->exports[i];
        if (ex->dev != st.st_dev || ex->ino != st.st_ino || !ex->access || ex->removed)
            continue;
        const struct uiw__nfs_xopts *mo = uiw__nfs_xentry_match(ex->access, nb->buf);
        return mo && (mo->flags & UIW__X_NOHIDE);
    }
    return 0;
}
