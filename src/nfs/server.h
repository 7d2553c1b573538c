/* The NFS server's internals, shared by the files of src/nfs (not used outside it). */
#ifndef UIW_NFS_SERVER_H
#define UIW_NFS_SERVER_H

#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <rpc/rpc.h>

#include "mount3.h"
#include "nfs3.h"
#include "nfs/nfsd.h"

/* ---- exports ---- */

struct uiw__nfs_export {
    char *path;  /* canonical absolute path: what MOUNT is asked for */
    int rootfd;  /* O_PATH descriptor of the root */
    uint32_t id; /* in every handle: a hash of the root's device and inode */
    dev_t dev;   /* the root's device and inode */
    ino_t ino;
    uint64_t tag; /* the root's generation tag (fh.c) */
};

/* ---- file handles (fh.c) ---- */

#define UIW__NFS_FH_LEN 32

/* What a handle names: decoded from and encoded into UIW__NFS_FH_LEN opaque bytes. */
struct uiw__nfsd_fh {
    uint32_t export_id;
    uint64_t dev;
    uint64_t ino;
    uint64_t tag;
};

struct uiw__nfs_fhcache;

/* The records kept by default (uiw__nfsd_opts.max_handles). */
#define UIW__NFS_MAX_HANDLES 262144

/* At most max_recs records (0: UIW__NFS_MAX_HANDLES), max_open of them with a
 * descriptor (0: 4096). */
struct uiw__nfs_fhcache *uiw__nfs_fhcache_create(unsigned max_open, unsigned max_recs);
/* How many records there are now. */
unsigned uiw__nfs_fhcache_count(struct uiw__nfs_fhcache *c);
void uiw__nfs_fhcache_destroy(struct uiw__nfs_fhcache *c);

/* The generation tag of an open file: a hash of the kernel's own handle for it
 * (name_to_handle_at, allowed to anyone), else its birth time; it tells a file from a
 * later one that reuses its inode number. */
uint64_t uiw__nfs_fh_tag(int fd);

void uiw__nfs_fh_encode(const struct uiw__nfsd_fh *fh, nfs_fh3 *out, char buf[UIW__NFS_FH_LEN]);

/* What the handle records have cost: searches run, deferred (budget spent or another
 * running), refused (AUTH_NONE callers). */
struct uiw__nfs_fh_counts {
    uint64_t searches, search_deferred, search_refused;
};
void uiw__nfs_fhcache_counts(struct uiw__nfs_fhcache *c, struct uiw__nfs_fh_counts *n);

struct uiw__nfs_cred;

/* Resolve a handle to a new O_PATH descriptor of the file it names (the caller closes
 * it) and the export it lies in, on behalf of `who`. NFS3_OK, NFS3ERR_BADHANDLE (not one
 * of ours), NFS3ERR_STALE (the file is gone, or is not under the export any more; also
 * a handle no record leads to, for an AUTH_NONE caller), NFS3ERR_JUKEBOX (such a handle
 * while the search's budget is spent: fh.c). */
nfsstat3 uiw__nfs_fh_resolve(struct uiw__nfsd *s, const struct uiw__nfs_cred *who, const nfs_fh3 *h,
                             int *fd, struct uiw__nfs_export **ex);

/* The attributes of the file a handle names, as uiw__nfs_fh_resolve would find it, with
 * no descriptor of the caller's (GETATTR's path: one fstat for a recently used file). */
nfsstat3 uiw__nfs_fh_stat(struct uiw__nfsd *s, const struct uiw__nfs_cred *who, const nfs_fh3 *h,
                          struct stat *st, struct uiw__nfs_export **ex);

/* Record that `fd` (O_PATH, the caller keeps it) is `name` in the directory `dirfd` of
 * export `ex`, and build its handle into out/buf. Returns 0 or -errno. */
int uiw__nfs_fh_issue(struct uiw__nfsd *s, struct uiw__nfs_export *ex, int dirfd, const char *name,
                      int fd, nfs_fh3 *out, char buf[UIW__NFS_FH_LEN]);

/* The file (dev, ino) is no longer `name` in dirfd: forget or re-point the record. */
void uiw__nfs_fh_moved(struct uiw__nfsd *s, dev_t dev, ino_t ino, int newdirfd,
                       const char *newname);
/* A name was removed: drop the cached descriptor if the file has no links left. */
void uiw__nfs_fh_removed(struct uiw__nfsd *s, dev_t dev, ino_t ino);

/* ---- credentials (cred.c) ---- */

struct uiw__nfs_cred {
    uint32_t uid, gid;
    uint32_t ngids;
    uint32_t gids[16];
    int anonymous; /* AUTH_NONE */
};

/* The caller's identity of this request (AUTH_SYS, AUTH_NONE), squashed as configured. */
void uiw__nfs_cred_from_req(const struct uiw__nfsd *s, const struct svc_req *rq,
                            struct uiw__nfs_cred *c);
/* Act as `c` on this thread (file system identity and groups) when the server runs as
 * root; a no-op otherwise. 0 or -errno. */
int uiw__nfs_cred_enter(const struct uiw__nfsd *s, const struct uiw__nfs_cred *c);
/* Back to the server's own identity on this thread. */
void uiw__nfs_cred_leave(const struct uiw__nfsd *s);

/* ---- the server ---- */

/* Refusals, each logged on stderr whatever the verbosity, at most one line a second of
 * each kind (the next line counts those left out meanwhile). */
enum uiw__nfsd_refusal {
    UIW__NFSD_REFUSED_SEARCH,
    UIW__NFSD_REFUSED_CONN,
    UIW__NFSD_REFUSED_RECORD,
    UIW__NFSD_REFUSED_TIMEOUT,
    UIW__NFSD_REFUSED_KINDS
};

struct uiw__nfs_mountent {
    char *host;
    char *dir;
    struct uiw__nfs_mountent *next;
};

/* The mount list's length at most (MOUNT DUMP). */
#define UIW__NFS_MAX_MOUNTS 4096

struct uiw__nfs_listener;

struct uiw__nfsd {
    struct uiw__nfsd_opts opts;
    struct uiw__nfs_export *exports;
    unsigned nexports;
    struct uiw__nfs_fhcache *fhcache;
    int privileged; /* running as root: act as each caller */
    char writeverf[NFS3_WRITEVERFSIZE];
    pthread_mutex_t lock; /* mount list */
    struct uiw__nfs_mountent *mounts;
    unsigned nmounts;
    struct {
        pthread_mutex_t lock;
        int64_t last_ns[UIW__NFSD_REFUSED_KINDS];
        unsigned long left_out[UIW__NFSD_REFUSED_KINDS];
    } refusals;
    struct uiw__nfs_listener *tcp, *mount;
    struct uiw__nfs_rdma *rdma;
    int ports[3];
    int started;
};

/* Log a refusal of that kind. */
void uiw__nfsd_refused(struct uiw__nfsd *s, enum uiw__nfsd_refusal kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Errno to NFS status (RFC 1813's list; anything else is NFS3ERR_IO). */
nfsstat3 uiw__nfsd_errno(int err);

/* Attributes of an open descriptor. 0 or -errno. */
int uiw__nfsd_getattr(int fd, const struct uiw__nfs_export *ex, fattr3 *a);
void uiw__nfsd_fattr(const struct stat *st, const struct uiw__nfs_export *ex, fattr3 *a);
void uiw__nfsd_postop(int fd, const struct uiw__nfs_export *ex, post_op_attr *p);
void uiw__nfsd_preop(int fd, pre_op_attr *p);

/* NFSv3 and MOUNT dispatch in libtirpc's shape: the procedure from rq, arguments through
 * svc_getargs, the reply through svc_sendreply (or the svcerr_* replies). */
void uiw__nfs3_dispatch(struct uiw__nfsd *s, struct svc_req *rq, SVCXPRT *xprt);
void uiw__mount3_dispatch(struct uiw__nfsd *s, struct svc_req *rq, SVCXPRT *xprt);

/* The largest READ or WRITE payload. */
static inline uint32_t uiw__nfsd_max_io(const struct uiw__nfsd *s)
{
    return s->opts.max_io ? s->opts.max_io : 1u << 20;
}

/* ---- RPC-over-RDMA (rdma.c) ---- */

struct uiw__nfs_rdma;
/* NULL + errno (EPROTONOSUPPORT: built without the RPC layer; EBUSY: another server of
 * this process serves RDMA). */
struct uiw__nfs_rdma *uiw__nfs_rdma_listen(struct uiw__nfsd *s, const char *addr, int port,
                                           int *bound);
void uiw__nfs_rdma_close(struct uiw__nfs_rdma *r);
int uiw__nfs_rdma_stats(struct uiw__nfs_rdma *r, struct uiw_rpc_xprt_stats *st);
int uiw__nfs_xprt_is_rdma(SVCXPRT *xprt);
/* Memory for a READ's payload of len bytes: on RDMA registered memory the reply's RDMA
 * Write goes from; elsewhere the thread's I/O buffer (max bytes). NULL when short. */
void *uiw__nfs_xprt_getbuf(SVCXPRT *xprt, size_t len, size_t max);
/* The RPC layer's uiw_xdr_bytes: a payload that came in a Read chunk is left where the
 * RDMA Read placed it. */
bool_t uiw__nfs_xdr_ddp_bytes(XDR *x, char **cpp, u_int *len, u_int max);

/* ---- TCP (tcp.c) ---- */

struct uiw__nfs_listener *uiw__nfs_tcp_listen(struct uiw__nfsd *s, const char *addr, int port,
                                              int *bound);
void uiw__nfs_tcp_close(struct uiw__nfs_listener *l);
/* The connections being served now. */
unsigned uiw__nfs_tcp_conns(struct uiw__nfs_listener *l);
/* Receive one call on xprt (libtirpc's stream transport), authenticate it and run its
 * program's dispatcher (NFS, MOUNT, or the ONC RPC error for another program or
 * version), as each connection's thread does. 1 if a call was taken, 0 if none was
 * (SVC_STAT then says whether the connection is gone). */
int uiw__nfs_tcp_serve(struct uiw__nfsd *s, SVCXPRT *xprt);

#endif
