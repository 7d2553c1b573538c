/*
 * MOUNT version 3 (RFC 1813, Appendix I): MNT gives the root handle of an export, asked
 * for by its absolute path as with knfsd (or of a directory below it, walked one
 * component at a time, no symbolic link or `..` followed); UMNT, UMNTALL and DUMP keep
 * the list of who mounted what (at most UIW__NFS_MAX_MOUNTS entries: the oldest goes
 * first, so that clients from many addresses cannot grow it without end); EXPORT lists
 * the exports (open to every host).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nfs/server.h"
#include "nfs/xdr_data.h"

/* The caller's address as text (the mount list's host name). */
static void caller(SVCXPRT *xprt, char *buf, size_t n)
{
    snprintf(buf, n, "unknown");
    const struct netbuf *nb = svc_getrpccaller(xprt);
    if (!nb || !nb->buf || nb->len < sizeof(sa_family_t))
        return;
    const struct sockaddr *sa = nb->buf;
    if (sa->sa_family == AF_INET && nb->len >= sizeof(struct sockaddr_in))
        inet_ntop(AF_INET, &((const struct sockaddr_in *)nb->buf)->sin_addr, buf, (socklen_t)n);
    else if (sa->sa_family == AF_INET6 && nb->len >= sizeof(struct sockaddr_in6))
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)nb->buf)->sin6_addr, buf, (socklen_t)n);
}

/* "/a//b/" -> "/a/b". */
static void normalize(const char *in, char *out, size_t n)
{
    size_t o = 0;
    for (const char *p = in; *p && o + 1 < n; p++) {
        if (*p == '/' && o > 0 && out[o - 1] == '/')
            continue;
        out[o++] = *p;
    }
    while (o > 1 && out[o - 1] == '/')
        o--;
    out[o] = 0;
}

static mountstat3 mnt(struct uiw__nfsd *s, const char *path, fhandle3 *fh,
                      char buf[UIW__NFS_FH_LEN])
{
    char norm[MNTPATHLEN + 1];
    if (!path || path[0] != '/')
        return MNT3ERR_NOENT;
    normalize(path, norm, sizeof(norm));
    for (unsigned i = 0; i < s->nexports; i++) {
        struct uiw__nfs_export *ex = &s->exports[i];
        size_t el = strlen(ex->path);
        const char *rest;
        if (strcmp(norm, ex->path) == 0)
            rest = "";
        else if (strncmp(norm, ex->path, el) == 0 && (norm[el] == '/' || el == 1))
            rest = norm + el + (el == 1 ? 0 : 1);
        else
            continue;
        int fd = fcntl(ex->rootfd, F_DUPFD_CLOEXEC, 0), dirfd = -1;
        char comp[NAME_MAX + 1];
        const char *last = NULL;
        mountstat3 st = fd < 0 ? MNT3ERR_SERVERFAULT : MNT3_OK;
        while (st == MNT3_OK && *rest) {
            const char *slash = strchr(rest, '/');
            size_t len = slash ? (size_t)(slash - rest) : strlen(rest);
            if (len > NAME_MAX) {
                st = MNT3ERR_NAMETOOLONG;
                break;
            }
            memcpy(comp, rest, len);
            comp[len] = 0;
            rest += len + (slash ? 1 : 0);
            if (strcmp(comp, ".") == 0 || strcmp(comp, "..") == 0) {
                st = MNT3ERR_ACCES;
                break;
            }
            int next = openat(fd, comp, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
            if (next < 0) {
                st = errno == ENOTDIR || errno == ELOOP ? MNT3ERR_NOTDIR : MNT3ERR_NOENT;
                break;
            }
            if (dirfd >= 0)
                close(dirfd);
            dirfd = fd;
            fd = next;
            last = comp;
        }
        if (st != MNT3_OK) {
            if (fd >= 0)
                close(fd);
            if (dirfd >= 0)
                close(dirfd);
            return st;
        }
        nfs_fh3 h;
        int rc = uiw__nfs_fh_issue(s, ex, dirfd, last, fd, &h, buf);
        close(fd);
        if (dirfd >= 0)
            close(dirfd);
        if (rc != 0)
            return MNT3ERR_SERVERFAULT;
        fh->fhandle3_len = h.data.data_len;
        fh->fhandle3_val = h.data.data_val;
        return MNT3_OK;
    }
    return MNT3ERR_NOENT;
}

static void add_mount(struct uiw__nfsd *s, const char *host, const char *dir)
{
    pthread_mutex_lock(&s->lock);
    for (struct uiw__nfs_mountent *m = s->mounts; m; m = m->next)
        if (strcmp(m->host, host) == 0 && strcmp(m->dir, dir) == 0) {
            pthread_mutex_unlock(&s->lock);
            return;
        }
    struct uiw__nfs_mountent *m = calloc(1, sizeof(*m));
    if (m) {
        m->host = strdup(host);
        m->dir = strdup(dir);
        if (!m->host || !m->dir) {
            free(m->host);
            free(m->dir);
            free(m);
        } else {
            m->next = s->mounts;
            s->mounts = m;
            if (++s->nmounts > UIW__NFS_MAX_MOUNTS) {
                struct uiw__nfs_mountent **pp = &s->mounts;
                while ((*pp)->next)
                    pp = &(*pp)->next;
                free((*pp)->host);
                free((*pp)->dir);
                free(*pp);
                *pp = NULL;
                s->nmounts--;
            }
        }
    }
    pthread_mutex_unlock(&s->lock);
}

/* Remove host's entries (for dir, or all when dir is NULL). */
static void del_mounts(struct uiw__nfsd *s, const char *host, const char *dir)
{
    pthread_mutex_lock(&s->lock);
    struct uiw__nfs_mountent **pp = &s->mounts;
    while (*pp) {
        struct uiw__nfs_mountent *m = *pp;
        if (strcmp(m->host, host) == 0 && (!dir || strcmp(m->dir, dir) == 0)) {
            *pp = m->next;
            free(m->host);
            free(m->dir);
            free(m);
            s->nmounts--;
        } else {
            pp = &m->next;
        }
    }
    pthread_mutex_unlock(&s->lock);
}

void uiw__mount3_dispatch(struct uiw__nfsd *s, struct svc_req *rq, SVCXPRT *xprt)
{
    char host[INET6_ADDRSTRLEN + 1];
    caller(xprt, host, sizeof(host));
    switch (rq->rq_proc) {
    case MOUNTPROC3_NULL:
        svc_sendreply(xprt, UIW__XDRPROC(xdr_void), NULL);
        return;
    case MOUNTPROC3_MNT:
    case MOUNTPROC3_UMNT: {
        dirpath path = NULL;
        if (!svc_getargs(xprt, UIW__XDRPROC(xdr_dirpath), (caddr_t)&path)) {
            svc_freeargs(xprt, UIW__XDRPROC(xdr_dirpath), (caddr_t)&path);
            svcerr_decode(xprt);
            return;
        }
        if (rq->rq_proc == MOUNTPROC3_UMNT) {
            char norm[MNTPATHLEN + 1];
            normalize(path, norm, sizeof(norm));
            del_mounts(s, host, norm);
            svc_sendreply(xprt, UIW__XDRPROC(xdr_void), NULL);
        } else {
            mountres3 res;
            char buf[UIW__NFS_FH_LEN];
            int flavors[2] = {AUTH_SYS, AUTH_NONE};
            memset(&res, 0, sizeof(res));
            res.fhs_status = mnt(s, path, &res.mountres3_u.mountinfo.fhandle, buf);
            if (res.fhs_status == MNT3_OK) {
                char norm[MNTPATHLEN + 1];
                normalize(path, norm, sizeof(norm));
                add_mount(s, host, norm);
                res.mountres3_u.mountinfo.auth_flavors.auth_flavors_len = 2;
                res.mountres3_u.mountinfo.auth_flavors.auth_flavors_val = flavors;
            }
            if (s->opts.verbose)
                fprintf(stderr, "uiw-nfsd: MNT %s from %s -> %d\n", path, host,
                        (int)res.fhs_status);
            svc_sendreply(xprt, UIW__XDRPROC(xdr_mountres3), (caddr_t)&res);
        }
        svc_freeargs(xprt, UIW__XDRPROC(xdr_dirpath), (caddr_t)&path);
        return;
    }
    case MOUNTPROC3_UMNTALL:
        del_mounts(s, host, NULL);
        svc_sendreply(xprt, UIW__XDRPROC(xdr_void), NULL);
        return;
    case MOUNTPROC3_DUMP: {
        pthread_mutex_lock(&s->lock);
        unsigned n = 0;
        for (struct uiw__nfs_mountent *m = s->mounts; m; m = m->next)
            n++;
        mountbody *b = calloc(n ? n : 1, sizeof(*b));
        unsigned i = 0;
        for (struct uiw__nfs_mountent *m = s->mounts; b && m; m = m->next, i++) {
            b[i].ml_hostname = m->host;
            b[i].ml_directory = m->dir;
            b[i].ml_next = i + 1 < n ? &b[i + 1] : NULL;
        }
        mountlist list = (b && n) ? b : NULL;
        if (b)
            svc_sendreply(xprt, UIW__XDRPROC(uiw__xdr_mountlist), (caddr_t)&list);
        else
            svcerr_systemerr(xprt);
        pthread_mutex_unlock(&s->lock);
        free(b);
        return;
    }
    case MOUNTPROC3_EXPORT: {
        exportnode *e = calloc(s->nexports ? s->nexports : 1, sizeof(*e));
        if (!e) {
            svcerr_systemerr(xprt);
            return;
        }
        for (unsigned i = 0; i < s->nexports; i++) {
            e[i].ex_dir = s->exports[i].path;
            e[i].ex_groups = NULL;
            e[i].ex_next = i + 1 < s->nexports ? &e[i + 1] : NULL;
        }
        mntexports list = s->nexports ? e : NULL;
        svc_sendreply(xprt, UIW__XDRPROC(uiw__xdr_mntexports), (caddr_t)&list);
        free(e);
        return;
    }
    default:
        svcerr_noproc(xprt);
    }
}
