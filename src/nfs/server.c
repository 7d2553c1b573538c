/* The server object: options, exports, the write verifier, listeners. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nfs/server.h"
#include "nfs/vfs.h"
#include "rpc/drc.h"

void uiw__nfsd_opts_default(struct uiw__nfsd_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->tcp_port = 2049;
    o->mount_port = 20048;
    o->rdma_port = 20049;
    o->anon_uid = 65534;
    o->anon_gid = 65534;
    o->max_io = 1u << 20;
    o->rpcbind = -1;
    o->nfs4 = 1;
}

struct uiw__nfsd *uiw__nfsd_create(const struct uiw__nfsd_opts *o)
{
    struct uiw__nfsd *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    if (o)
        s->opts = *o;
    else
        uiw__nfsd_opts_default(&s->opts);
    if (s->opts.max_io == 0)
        s->opts.max_io = 1u << 20;
    if (s->opts.max_io < 4096 || s->opts.max_io > (64u << 20)) {
        free(s);
        errno = EINVAL;
        return NULL;
    }
    s->fhcache = uiw__nfs_fhcache_create(0, s->opts.max_handles);
    if (!s->fhcache) {
        free(s);
        errno = ENOMEM;
        return NULL;
    }
    s->privileged = geteuid() == 0;
    s->dac_override = s->privileged && uiw__nfs_cred_dac_override();
    /* The write verifier changes with every server instance (RFC 1813 3.3.7): a client
     * that sees it change sends its uncommitted writes again. */
    uint64_t verf;
    if (getrandom(&verf, sizeof(verf), 0) != (ssize_t)sizeof(verf)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        verf = ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) ^ (uint64_t)getpid();
    }
    atomic_init(&s->writeverf, verf);
    s->vfs = uiw__vfs_state_create();
    if (s->vfs && s->opts.nfs4) {
        s->nfs4 =
            uiw__nfs4_state_create(s->opts.lease_time ? s->opts.lease_time : 90, s->opts.state_dir);
        if (!s->nfs4) {
            uiw__vfs_state_destroy(s->vfs);
            s->vfs = NULL;
        }
    }
    if (!s->vfs) {
        uiw__nfs_fhcache_destroy(s->fhcache);
        free(s);
        errno = ENOMEM;
        return NULL;
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->refusals.lock, NULL);
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    /* a reload gets in between calls, however many come */
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&s->xlock, &ra);
    pthread_rwlockattr_destroy(&ra);
    s->ports[0] = s->ports[1] = s->ports[2] = -1;
    return s;
}

/* Whether a client of the line has subtree_check (fh.c: files the kernel knows no path of
 * must be found in the export first). */
static int subtree_check(const struct uiw__nfs_xentry *e)
{
    for (unsigned i = 0; e && i < e->nclients; i++)
        if (e->clients[i].o.flags & UIW__X_SUBTREE_CHECK)
            return 1;
    return 0;
}

static int add_export(struct uiw__nfsd *s, const char *path, const struct uiw__nfs_xentry *access)
{
    char *real = realpath(path, NULL);
    if (!real)
        return -errno;
    int fd = open(real, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        free(real);
        return -err;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        free(real);
        return -err;
    }
    /* version 1 handles' id of it */
    uint64_t h = ((uint64_t)st.st_dev * 0x9E3779B97F4A7C15ull) ^
                 ((uint64_t)st.st_ino * 0xC2B2AE3D27D4EB4Full);
    uint32_t old_id = (uint32_t)(h >> 32) ^ (uint32_t)h;
    /* its fsid=, else a hash of its path: the same after a reboot, whatever st_dev is */
    uint32_t id = 2166136261u;
    for (const char *c = real; *c; c++)
        id = (id ^ (unsigned char)*c) * 16777619u;
    int fixed = 0;
    for (unsigned i = 0; access && i < access->nclients && !fixed; i++) {
        const struct uiw__nfs_xopts *o = &access->clients[i].o;
        if (o->flags & UIW__X_FSID) {
            id = o->fsid;
            fixed = 1;
        }
    }
    for (unsigned i = 0; i < s->nexports; i++) {
        if (s->exports[i].dev == st.st_dev && s->exports[i].ino == st.st_ino) {
            close(fd);
            free(real);
            return -EEXIST;
        }
    }
    for (unsigned i = 0; i < s->nexports; i++)
        if (s->exports[i].id == id) {
            if (fixed) {
                close(fd);
                free(real);
                return -EADDRINUSE; /* two exports with one fsid= */
            }
            id++; /* two paths hashing alike: keep ids distinct */
            i = (unsigned)-1;
        }
    struct uiw__nfs_export *ne = realloc(s->exports, (s->nexports + 1) * sizeof(*ne));
    if (!ne) {
        close(fd);
        free(real);
        return -ENOMEM;
    }
    s->exports = ne;
    struct uiw__nfs_export *ex = &ne[s->nexports++];
    ex->path = real;
    ex->rootfd = fd;
    ex->id = id;
    ex->old_id = old_id;
    ex->dev = st.st_dev;
    ex->ino = st.st_ino;
    ex->tag = uiw__nfs_fh_tag(fd);
    ex->subtree_check = subtree_check(access);
    ex->access = access;
    ex->removed = 0;
    int rc = uiw__nfs_fh_export_fs(s, ex);
    if (rc != 0) {
        close(fd);
        free(real);
        s->nexports--;
        return rc;
    }
    return 0;
}

int uiw__nfsd_add_export(struct uiw__nfsd *s, const char *path)
{
    if (s->started)
        return -EBUSY;
    return add_export(s, path, NULL);
}

/* The line of an export no longer in the file: no client. */
static const struct uiw__nfs_xentry no_clients;

int uiw__nfsd_reload_exports(struct uiw__nfsd *s, struct uiw__nfs_xtable *t, char *err,
                             size_t errlen)
{
    pthread_rwlock_wrlock(&s->xlock);
    unsigned n0 = s->nexports;
    const struct uiw__nfs_xentry **was = calloc(n0 ? n0 : 1, sizeof(*was));
    int *gone = calloc(n0 ? n0 : 1, sizeof(*gone));
    int rc = was && gone ? 0 : -ENOMEM;
    if (rc)
        snprintf(err, errlen, "out of memory");
    for (unsigned i = 0; i < n0 && rc == 0; i++) {
        was[i] = s->exports[i].access;
        gone[i] = s->exports[i].removed;
        if (was[i]) { /* the file's: gone unless the new one names it */
            s->exports[i].access = &no_clients;
            s->exports[i].removed = 1;
        }
    }
    for (unsigned j = 0; j < t->n && rc == 0; j++) {
        const struct uiw__nfs_xentry *e = &t->e[j];
        char *real = realpath(e->path, NULL);
        if (!real) {
            rc = -errno;
            snprintf(err, errlen, "line %u: %s: %s", e->line, e->path, strerror(-rc));
            break;
        }
        unsigned i = 0;
        while (i < s->nexports && strcmp(s->exports[i].path, real) != 0)
            i++;
        free(real);
        if (i < n0 && !was[i]) {
            rc = -EEXIST;
            snprintf(err, errlen, "line %u: %s is exported on the command line", e->line, e->path);
        } else if (i < s->nexports) {
            s->exports[i].access = e;
            s->exports[i].removed = 0;
            s->exports[i].subtree_check = subtree_check(e);
        } else if ((rc = add_export(s, e->path, e)) != 0) {
            snprintf(err, errlen, "line %u: %s: %s", e->line, e->path,
                     rc == -EEXIST       ? "the same directory as another export"
                     : rc == -EADDRINUSE ? "the fsid= of another export"
                                         : strerror(-rc));
        }
    }
    if (rc != 0) {
        /* as it was */
        for (unsigned i = 0; was && gone && i < n0; i++) {
            s->exports[i].access = was[i];
            s->exports[i].removed = gone[i];
        }
        for (unsigned i = n0; i < s->nexports; i++) {
            close(s->exports[i].rootfd);
            free(s->exports[i].path);
        }
        s->nexports = n0;
    } else {
        uiw__nfs_xtable_free(&s->xtable);
        s->xtable = *t; /* the exports point into its lines */
        memset(t, 0, sizeof(*t));
    }
    pthread_rwlock_unlock(&s->xlock);
    if (rc == 0)
        uiw__vfs_files_drop(s); /* no descriptor outlives the export it was opened under */
    free(was);
    free(gone);
    return rc;
}

int uiw__nfsd_add_exports(struct uiw__nfsd *s, struct uiw__nfs_xtable *t, char *err, size_t errlen)
{
    if (s->started || s->xtable.n) {
        snprintf(err, errlen, "exports were read already");
        return -EBUSY;
    }
    s->xtable = *t; /* ours now: the exports point into it */
    memset(t, 0, sizeof(*t));
    for (unsigned i = 0; i < s->xtable.n; i++) {
        const struct uiw__nfs_xentry *e = &s->xtable.e[i];
        int rc = add_export(s, e->path, e);
        if (rc != 0) {
            snprintf(err, errlen, "line %u: %s: %s", e->line, e->path,
                     rc == -EEXIST       ? "the same directory as another export"
                     : rc == -EADDRINUSE ? "the fsid= of another export"
                                         : strerror(-rc));
            return rc;
        }
    }
    return 0;
}

int uiw__nfsd_start(struct uiw__nfsd *s)
{
    if (s->started)
        return -EBUSY;
    if (s->nexports == 0)
        return -ENOENT;
    /* One O_PATH descriptor per recently used file: allow many. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    uiw__vfs_limit(s->vfs);
    /* RDMA first: its duplicate-reply cache is TCP's too */
    if (s->opts.rdma_port >= 0) {
        s->rdma =
            uiw__nfs_rdma_listen(s, s->opts.addr, s->opts.rdma_port, &s->ports[UIW__NFSD_RDMA]);
        if (!s->rdma && errno != EPROTONOSUPPORT)
            return -errno;
    }
    s->drc = uiw__nfs_rdma_drc(s->rdma);
    if (!s->drc) {
        s->drc = uiw__drc_create(UIW__NFSD_DRC_ENTRIES, UIW__NFSD_DRC_REPLY);
        s->drc_own = 1;
        if (!s->drc) {
            uiw__nfs_rdma_close(s->rdma);
            s->rdma = NULL;
            return -ENOMEM;
        }
    }
    if (s->opts.tcp_port >= 0 || s->opts.mount_port >= 0) {
        s->tcp = uiw__nfs_tcp_create(s);
        int rc = s->tcp ? 0 : -errno;
        if (rc == 0 && s->opts.tcp_port >= 0)
            rc = uiw__nfs_tcp_listen(s->tcp, s->opts.addr, s->opts.tcp_port,
                                     &s->ports[UIW__NFSD_TCP]);
        if (rc == 0 && s->opts.mount_port >= 0)
            rc = uiw__nfs_tcp_listen(s->tcp, s->opts.addr, s->opts.mount_port,
                                     &s->ports[UIW__NFSD_MOUNT]);
        if (rc == 0)
            rc = uiw__nfs_tcp_start(s->tcp);
        if (rc != 0) {
            uiw__nfs_tcp_destroy(s->tcp);
            s->tcp = NULL;
            uiw__nfs_rdma_close(s->rdma);
            s->rdma = NULL;
            return rc;
        }
    }
    int reg = s->opts.rpcbind > 0 || (s->opts.rpcbind < 0 && s->ports[UIW__NFSD_TCP] == 2049);
    /* without an rpcbind: said once (uiw__nfsd_rpcbind_register), and the default goes on */
    if (reg && uiw__nfsd_rpcbind_register(s, 1) < 0 && s->opts.rpcbind > 0) {
        uiw__nfs_tcp_destroy(s->tcp);
        s->tcp = NULL;
        uiw__nfs_rdma_close(s->rdma);
        s->rdma = NULL;
        return -ECONNREFUSED;
    }
    s->started = 1;
    return 0;
}

int uiw__nfsd_port(const struct uiw__nfsd *s, enum uiw__nfsd_port which)
{
    if ((unsigned)which > UIW__NFSD_RDMA)
        return -1;
    return s->ports[which];
}

int uiw__nfsd_xprt_stats(struct uiw__nfsd *s, struct uiw_rpc_xprt_stats *st)
{
    return uiw__nfs_rdma_stats(s->rdma, st);
}

void uiw__nfsd_destroy(struct uiw__nfsd *s)
{
    if (!s)
        return;
    uiw__nfsd_rpcbind_unregister(s);
    /* TCP first: its calls use the RDMA server's duplicate-reply cache */
    uiw__nfs_tcp_destroy(s->tcp);
    uiw__nfs_rdma_close(s->rdma);
    if (s->drc_own)
        uiw__drc_free(s->drc);
    uiw__nfs_fhcache_destroy(s->fhcache);
    uiw__vfs_state_destroy(s->vfs);
    uiw__nfs4_state_destroy(s->nfs4);
    for (unsigned i = 0; i < s->nexports; i++) {
        close(s->exports[i].rootfd);
        free(s->exports[i].path);
    }
    free(s->exports);
    uiw__nfs_xtable_free(&s->xtable);
    while (s->mounts) {
        struct uiw__nfs_mountent *m = s->mounts;
        s->mounts = m->next;
        free(m->host);
        free(m->dir);
        free(m);
    }
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->refusals.lock);
    pthread_rwlock_destroy(&s->xlock);
    free(s);
}

int uiw__nfsd_conn_take(struct uiw__nfsd *s)
{
    unsigned max = s->opts.max_conns ? s->opts.max_conns : 1024;
    unsigned n = atomic_load(&s->nconns);
    do {
        if (n >= max) {
            atomic_fetch_add(&s->conns_refused, 1);
            return 0;
        }
    } while (!atomic_compare_exchange_weak(&s->nconns, &n, n + 1));
    return 1;
}

void uiw__nfsd_conn_give(struct uiw__nfsd *s)
{
    atomic_fetch_sub(&s->nconns, 1);
}

void uiw__nfsd_addr_name(const struct sockaddr *sa, char *out, size_t n)
{
    char a[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
        inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
        port = ntohs(in->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a));
        port = ntohs(in6->sin6_port);
    }
    snprintf(out, n, "%s:%u", a, port);
}

void uiw__nfsd_refused(struct uiw__nfsd *s, enum uiw__nfsd_refusal kind, const char *fmt, ...)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
    pthread_mutex_lock(&s->refusals.lock);
    if (s->refusals.last_ns[kind] && now - s->refusals.last_ns[kind] < 1000000000ll) {
        s->refusals.left_out[kind]++;
        pthread_mutex_unlock(&s->refusals.lock);
        return;
    }
    unsigned long left = s->refusals.left_out[kind];
    s->refusals.left_out[kind] = 0;
    s->refusals.last_ns[kind] = now;
    pthread_mutex_unlock(&s->refusals.lock);
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    /* a warning's priority for systemd's journal (sd-daemon(3)) */
    const char *prio = getenv("JOURNAL_STREAM") ? "<4>" : "";
    if (left)
        fprintf(stderr, "%suiw-nfsd: %s (and %lu more like it)\n", prio, line, left);
    else
        fprintf(stderr, "%suiw-nfsd: %s\n", prio, line);
}
