/*
 * MOUNT version 3 (RFC 1813, Appendix I): MNT gives the root handle of an export, asked
 * for by its absolute path as with knfsd (or of a directory below it, walked one
 * component at a time, no symbolic link or `..` followed); UMNT, UMNTALL and DUMP keep
 * the list of who mounted what (at most UIW__NFS_MAX_MOUNTS entries: the oldest goes
 * first, so that clients from many addresses cannot grow it without end); EXPORT lists
 * the exports (open to every host).
 */
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

/* The export a path lies in: the longest whose path is a prefix of it, whatever their
 * order (nested exports); *rest gets what is below it. */
static struct uiw__nfs_export *export_of(struct uiw__nfsd *s, const char *norm, const char **rest)
{
    struct uiw__nfs_export *best = NULL;
    size_t best_len = 0;
    for (unsigned i = 0; i < s->nexports; i++) {
        struct uiw__nfs_export *ex = &s->exports[i];
        if (ex->removed)
            continue;
        size_t el = strlen(ex->path);
        const char *r;
        if (strcmp(norm, ex->path) == 0)
            r = "";
        else if (strncmp(norm, ex->path, el) == 0 && (norm[el] == '/' || el == 1))
            r = norm + el + (el == 1 ? 0 : 1);
        else
            continue;
        if (!best || el > best_len) {
            best = ex;
            best_len = el;
            *rest = r;
        }
    }
    return best;
}

static mountstat3 mnt(struct uiw__nfsd *s, const struct svc_req *rq, const char *path, fhandle3 *fh,
                      char buf[UIW__NFS_FH_MAX], const struct uiw__nfs_xopts **o)
{
    char norm[MNTPATHLEN + 1];
    if (!path || path[0] != '/')
        return MNT3ERR_NOENT;
    normalize(path, norm, sizeof(norm));
    const char *rest = NULL;
    struct uiw__nfs_export *ex = export_of(s, norm, &rest);
    if (ex) {
        if (uiw__nfsd_access(s, ex, rq, 0, NULL, o) != NFS3_OK)
            return MNT3ERR_ACCES;
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
        int rc = uiw__nfs_fh_issue(s, ex, dirfd, last, fd, 0, &h, buf);
        if (rc == -EXDEV && uiw__nfsd_crosses(s, rq, o ? *o : NULL, fd))
            rc = uiw__nfs_fh_issue(s, ex, dirfd, last, fd, 1, &h, buf);
        close(fd);
        if (dirfd >= 0)
            close(dirfd);
        if (rc != 0)
            return rc == -EXDEV ? MNT3ERR_ACCES : MNT3ERR_SERVERFAULT;
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

static void dispatch(struct uiw__nfsd *s, struct svc_req *rq, SVCXPRT *xprt);

void uiw__mount3_dispatch(struct uiw__nfsd *s, struct svc_req *rq, SVCXPRT *xprt)
{
    pthread_rwlock_rdlock(&s->xlock);
    dispatch(s, rq, xprt);
    pthread_rwlock_unlock(&s->xlock);
}

static void dispatch(struct uiw__nfsd *s, struct svc_req *rq, SVCXPRT *xprt)
{
    char host[INET6_ADDRSTRLEN + 1];
    uiw__nfsd_caller(xprt, host, sizeof(host), NULL);
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
            char buf[UIW__NFS_FH_MAX];
            int flavors[2];
            u_int nfl = 0;
            const struct uiw__nfs_xopts *o = NULL;
            memset(&res, 0, sizeof(res));
            res.fhs_status = mnt(s, rq, path, &res.mountres3_u.mountinfo.fhandle, buf, &o);
            if (res.fhs_status == MNT3_OK) {
                char norm[MNTPATHLEN + 1];
                normalize(path, norm, sizeof(norm));
                add_mount(s, host, norm);
                /* the flavors the export takes from this client */
                if (!o || (o->flags & UIW__X_SEC_SYS))
                    flavors[nfl++] = AUTH_SYS;
                if (!o || (o->flags & UIW__X_SEC_NONE))
                    flavors[nfl++] = AUTH_NONE;
                res.mountres3_u.mountinfo.auth_flavors.auth_flavors_len = nfl;
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
        /* each export with its clients (none: every host), as showmount -e shows them */
        unsigned ng = 0, nx = 0;
        for (unsigned i = 0; i < s->nexports; i++) {
            nx += !s->exports[i].removed;
            if (s->exports[i].access)
                ng += s->exports[i].access->nclients;
        }
        exportnode *e = calloc(s->nexports ? s->nexports : 1, sizeof(*e));
        groupnode *g = calloc(ng ? ng : 1, sizeof(*g));
        if (!e || !g) {
            free(e);
            free(g);
            svcerr_systemerr(xprt);
            return;
        }
        unsigned gi = 0, xi = 0;
        for (unsigned i = 0; i < s->nexports; i++) {
            if (s->exports[i].removed)
                continue;
            const struct uiw__nfs_xentry *a = s->exports[i].access;
            e[xi].ex_dir = s->exports[i].path;
            e[xi].ex_groups = NULL;
            for (unsigned k = 0; a && k < a->nclients; k++, gi++) {
                g[gi].gr_name = a->clients[k].text;
                g[gi].gr_next = k + 1 < a->nclients ? &g[gi + 1] : NULL;
                if (k == 0)
                    e[xi].ex_groups = &g[gi];
            }
            e[xi].ex_next = xi + 1 < nx ? &e[xi + 1] : NULL;
            xi++;
        }
        mntexports list = nx ? e : NULL;
        svc_sendreply(xprt, UIW__XDRPROC(uiw__xdr_mntexports), (caddr_t)&list);
        free(g);
        free(e);
        return;
    }
    default:
        svcerr_noproc(xprt);
    }
}
