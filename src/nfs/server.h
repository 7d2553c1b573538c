/* The NFS server's internals, shared by the files of src/nfs (not used outside it). */
#ifndef UIW_NFS_SERVER_H
#define UIW_NFS_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/types.h>
#include <time.h>

#include <rpc/rpc.h>

#include "mount3.h"
#include "nfs3.h"
#include "nfs/exports.h"
#include "nfs/nfsd.h"

/* ---- exports ---- */

struct uiw__nfs_export {
    char *path;      /* canonical absolute path: what MOUNT is asked for */
    int rootfd;      /* O_PATH descriptor of the root */
    uint32_t id;     /* in every handle: its fsid= when given, else a hash of its path */
    uint32_t old_id; /* in version 1 handles: a hash of the root's device and inode */
    dev_t dev;       /* the root's device and inode */
    ino_t ino;
    uint64_t tag;      /* the root's generation tag (fh.c) */
    uint64_t fsid;     /* the id of the root's file system in handles (fh.c) */
    int subtree_check; /* a client of its line has subtree_check (fh.c) */
    /* who may use it, and how (an exports file's line); NULL: an export of the command
     * line, open to every host as the server's options say */
    const struct uiw__nfs_xentry *access;
    int removed; /* no longer in the exports file: hidden, its handles refused */
};

/* ---- file handles (fh.c) ---- */

#define UIW__NFS_FH_MAX  NFS3_FHSIZE /* the longest handle: 64 bytes */
#define UIW__NFS_FH_KMAX 36          /* the longest kernel handle a handle holds */

/* What a handle names (fh.c's header): decoded from and encoded into its bytes. */
struct uiw__nfsd_fh {
    uint32_t export_id;
    uint64_t fsid; /* the file system's id */
    uint64_t ino;
    uint64_t tag; /* generation: a hash of the kernel's handle, or the birth time */
    int ktype;    /* the kernel's handle (klen bytes; 0: none) */
    unsigned klen;
    unsigned char kh[UIW__NFS_FH_KMAX];
    int v1; /* a version 1 handle, which names the device: */
    uint64_t dev;
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

/* A handle's bytes (at most UIW__NFS_FH_MAX, into buf) and back: 0, or -1 (not one of
 * ours). */
void uiw__nfs_fh_encode(const struct uiw__nfsd_fh *fh, nfs_fh3 *out, char buf[UIW__NFS_FH_MAX]);
int uiw__nfs_fh_decode(const nfs_fh3 *h, struct uiw__nfsd_fh *fh);
/* A handle of a directory of NFSv4's pseudo file system (nfs4pseudo.c), named by its node
 * (a hash of its path); no NFSv3 call takes it (uiw__nfs_fh_decode refuses it). */
void uiw__nfs_fh_pseudo(uint64_t node, nfs_fh3 *out, char buf[UIW__NFS_FH_MAX]);
/* Whether h is such a handle, and its node. */
int uiw__nfs_fh_pseudo_node(const nfs_fh3 *h, uint64_t *node);
/* What a handle of export ex names for the open file fd (wherever it is). 0 or -errno. */
int uiw__nfs_fh_of(struct uiw__nfsd *s, const struct uiw__nfs_export *ex, int fd,
                   struct uiw__nfsd_fh *fh);
/* Enter a new export's file system in the table of those handles name (ex->fsid). 0 or
 * -ENOMEM. */
int uiw__nfs_fh_export_fs(struct uiw__nfsd *s, struct uiw__nfs_export *ex);

/* The export a handle names (before the file is looked for): NFS3_OK, NFS3ERR_BADHANDLE,
 * NFS3ERR_STALE (an export not served now). */
nfsstat3 uiw__nfs_fh_export(struct uiw__nfsd *s, const nfs_fh3 *h, struct uiw__nfs_export **ex);
/* The same, with the handle decoded into *fh (for uiw__nfs_fh_stat). */
nfsstat3 uiw__nfs_fh_export_of(struct uiw__nfsd *s, const nfs_fh3 *h, struct uiw__nfsd_fh *fh,
                               struct uiw__nfs_export **ex);

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
 * while the search's budget is spent: fh.c). sb (NULL: not wanted): the descriptor's
 * attributes, as the resolve took them to check the file or else taken after it. */
nfsstat3 uiw__nfs_fh_resolve(struct uiw__nfsd *s, const struct uiw__nfs_cred *who, const nfs_fh3 *h,
                             int *fd, struct uiw__nfs_export **ex, struct stat *sb);

/* The attributes of the file a handle names, as uiw__nfs_fh_resolve would find it, with
 * no descriptor of the caller's (GETATTR's path: one fstat for a recently used file):
 * h decoded into *fh and its export *ex by uiw__nfs_fh_export_of. */
nfsstat3 uiw__nfs_fh_stat(struct uiw__nfsd *s, const struct uiw__nfs_cred *who, const nfs_fh3 *h,
                          const struct uiw__nfsd_fh *fh, struct stat *st,
                          struct uiw__nfs_export **ex);

/* Record that `fd` (O_PATH, the caller keeps it) is `name` in the directory `dirfd` of
 * export `ex`, and build its handle into out/buf. A mount point below the export (the
 * root of another mount) gets a handle only when `cross` (crossmnt). Returns 0 or
 * -errno (-EXDEV: a mount point not crossed). */
int uiw__nfs_fh_issue(struct uiw__nfsd *s, struct uiw__nfs_export *ex, int dirfd, const char *name,
                      int fd, int cross, nfs_fh3 *out, char buf[UIW__NFS_FH_MAX]);

/* The file (dev, ino) is no longer `name` in dirfd: forget or re-point the record. */
void uiw__nfs_fh_moved(struct uiw__nfsd *s, dev_t dev, ino_t ino, int newdirfd,
                       const char *newname);
/* A name was removed: drop the file's record if it has no links left (or no descriptor
 * that could tell). */
void uiw__nfs_fh_removed(struct uiw__nfsd *s, dev_t dev, ino_t ino);

/* ---- credentials (cred.c) ---- */

struct uiw__nfs_cred {
    uint32_t uid, gid;
    uint32_t ngids;
    uint32_t gids[16];
    int anonymous; /* AUTH_NONE */
};

/* The caller's identity of this request (AUTH_SYS, AUTH_NONE), squashed as o says (NULL:
 * as the server's options say, for exports of the command line). */
void uiw__nfs_cred_from_req(const struct uiw__nfsd *s, const struct svc_req *rq,
                            const struct uiw__nfs_xopts *o, struct uiw__nfs_cred *c);

/* ---- access (access.c) ---- */

/* The caller's address as text (an IPv4 caller of a dual-stack socket as IPv4, as
 * knfsd's mountd names it: the mount list's host name and the refusals' log), and its
 * port (when port is not NULL). */
void uiw__nfsd_caller(SVCXPRT *xprt, char *buf, size_t n, unsigned *port);
/* The NFS version 3 procedures whose replies the duplicate-reply cache keeps (both
 * transports): those that change something, which a second run would answer otherwise. */
bool uiw__nfs3_changes(uint32_t proc);

/* May the caller of rq use ex, and write to it? NFS3_OK with *cred its identity there
 * (squashed as the export's line says for it), NFS3ERR_ACCES (not a client of it; a
 * source port of 1024 or above on a `secure` export; a flavor its `sec` leaves out),
 * NFS3ERR_ROFS (a write to what it may only read). A refusal is logged. *o (when not
 * NULL) gets the options, NULL for a command-line export. */
nfsstat3 uiw__nfsd_access(struct uiw__nfsd *s, const struct uiw__nfs_export *ex,
                          const struct svc_req *rq, int write, struct uiw__nfs_cred *cred,
                          const struct uiw__nfs_xopts **o);

/* Whether the caller may cross into the mount point fd below an export: its options there
 * say crossmnt (an export of the command line always does), or fd is the root of another
 * export whose options for it say nohide. */
int uiw__nfsd_crosses(struct uiw__nfsd *s, const struct svc_req *rq, const struct uiw__nfs_xopts *o,
                      int fd);
/* Act as `c` on this thread (file system identity and groups) when the server runs as
 * root; a no-op otherwise, and for root's own identity on a thread back at the server's
 * (after a leave). 0 or -errno. */
int uiw__nfs_cred_enter(const struct uiw__nfsd *s, const struct uiw__nfs_cred *c);
/* Back to the server's own identity on this thread. */
void uiw__nfs_cred_leave(const struct uiw__nfsd *s);
/* How many times this thread switched its identity away from the server's. */
unsigned long uiw__nfs_cred_switches(void);
/* Whether this thread has CAP_DAC_OVERRIDE in effect (root's override of permissions). */
int uiw__nfs_cred_dac_override(void);

/* ---- the server ---- */

/* Refusals, each logged on stderr whatever the verbosity, at most one line a second of
 * each kind (the next line counts those left out meanwhile). */
enum uiw__nfsd_refusal {
    UIW__NFSD_REFUSED_SEARCH,
    UIW__NFSD_REFUSED_CONN,
    UIW__NFSD_REFUSED_RECORD,
    UIW__NFSD_REFUSED_TIMEOUT,
    UIW__NFSD_REFUSED_ACCESS,
    UIW__NFSD_REFUSED_KINDS
};

struct uiw__nfs_mountent {
    char *host;
    char *dir;
    struct uiw__nfs_mountent *next;
};

/* The mount list's length at most (MOUNT DUMP). */
#define UIW__NFS_MAX_MOUNTS 4096

struct uiw__nfs_tcp;
struct uiw__vfs_state;

struct uiw__nfsd {
    struct uiw__nfsd_opts opts;
    struct uiw__nfs_export *exports;
    unsigned nexports;
    struct uiw__nfs_xtable xtable; /* the exports file's lines (exports[].access) */
    /* held for reading by every call, for writing by a reload of the exports file */
    pthread_rwlock_t xlock;
    struct uiw__nfs_fhcache *fhcache;
    int privileged;   /* running as root: act as each caller */
    int dac_override; /* with CAP_DAC_OVERRIDE in effect (root's override) */
    /* the write verifier (vfs.c), and how often a lost write changed it */
    _Atomic uint64_t writeverf;
    _Atomic unsigned long verf_changes;
    struct uiw__vfs_state *vfs; /* vfs.c: locks of changes, witnesses of writes */
    pthread_mutex_t lock;       /* mount list */
    struct uiw__nfs_mountent *mounts;
    unsigned nmounts;
    struct {
        pthread_mutex_t lock;
        int64_t last_ns[UIW__NFSD_REFUSED_KINDS];
        unsigned long left_out[UIW__NFSD_REFUSED_KINDS];
    } refusals;
    struct uiw__nfs_tcp *tcp; /* NFS and MOUNT over TCP */
    /* the duplicate-reply cache of both transports: the RPC-over-RDMA server's, or one of
     * TCP's own without it (drc_own) */
    struct uiw__drc *drc;
    int drc_own;
    _Atomic unsigned long drc_hits, drc_drops; /* TCP's: replayed, dropped while running */
    _Atomic unsigned long meta_syncs;          /* objects made durable before a reply (`sync`) */
    struct uiw__nfs_rdma *rdma;
    struct uiw__nfs4_state *nfs4; /* NFSv4 clients and sessions (NULL: version 4 is off) */
    /* connections open now, TCP and RPC-over-RDMA together (--max-connections), and the
     * requests refused over the limit */
    _Atomic unsigned nconns;
    _Atomic unsigned long conns_refused;
    int ports[3];
    int started;
    int rpcbind_done; /* registered: unregister at the end */
};

/* Register the listeners with the host's rpcbind (rpcbind.c): the number of registrations
 * taken, or -1 when none was (said on stderr when `loud`, or when rpcbind answered and
 * refused). */
int uiw__nfsd_rpcbind_register(struct uiw__nfsd *s, int loud);
/* Undo what uiw__nfsd_rpcbind_register did. */
void uiw__nfsd_rpcbind_unregister(struct uiw__nfsd *s);

/* Log a refusal of that kind. */
void uiw__nfsd_refused(struct uiw__nfsd *s, enum uiw__nfsd_refusal kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* One of the --max-connections for a new connection of either transport: 1, or 0 when
 * they are all taken (counted as refused; the caller logs the refusal). Given back by
 * uiw__nfsd_conn_give when the connection ends. */
int uiw__nfsd_conn_take(struct uiw__nfsd *s);
void uiw__nfsd_conn_give(struct uiw__nfsd *s);
/* "ADDR:PORT" of a socket address (IPv4 or IPv6; "?:0" otherwise), for log lines. */
void uiw__nfsd_addr_name(const struct sockaddr *sa, char *out, size_t n);

/* Errno to NFS status (RFC 1813's list; anything else is NFS3ERR_IO). */
nfsstat3 uiw__nfsd_errno(int err);

/* Attributes of an open descriptor. 0 or -errno. */
int uiw__nfsd_getattr(int fd, const struct uiw__nfs_export *ex, fattr3 *a);
void uiw__nfsd_fattr(const struct stat *st, const struct uiw__nfs_export *ex, fattr3 *a);
void uiw__nfsd_postop(int fd, const struct uiw__nfs_export *ex, post_op_attr *p);
void uiw__nfsd_preop(int fd, pre_op_attr *p);
void uiw__nfsd_preop_of(const struct stat *st, pre_op_attr *p);

/* NFSv3 and MOUNT dispatch in libtirpc's shape: the procedure from rq, arguments through
 * svc_getargs, the reply through svc_sendreply (or the svcerr_* replies). */
void uiw__nfs3_dispatch(struct uiw__nfsd *s, struct svc_req *rq, SVCXPRT *xprt);
void uiw__mount3_dispatch(struct uiw__nfsd *s, struct svc_req *rq, SVCXPRT *xprt);
/* NFS version 4 (nfs4.c): NULL and COMPOUND, when opts.nfs4 is on. */
void uiw__nfs4_dispatch(struct uiw__nfsd *s, struct svc_req *rq, SVCXPRT *xprt);
struct uiw__nfs4_state;
/* The NFSv4 state; with state_dir, client records kept there and a grace period after a
 * restart (nfs4grace.c). NULL and errno on failure. */
struct uiw__nfs4_state *uiw__nfs4_state_create(unsigned lease_s, const char *state_dir);
void uiw__nfs4_state_destroy(struct uiw__nfs4_state *st);

/* The monotonic clock in nanoseconds (deadlines, idle times, rechecks). */
static inline int64_t uiw__nfsd_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* The largest READ or WRITE payload. */
static inline uint32_t uiw__nfsd_max_io(const struct uiw__nfsd *s)
{
    return s->opts.max_io ? s->opts.max_io : 1u << 20;
}

/* The duplicate-reply cache's entries, and the room each has for a reply. */
#define UIW__NFSD_DRC_ENTRIES 8192
#define UIW__NFSD_DRC_REPLY   1024

/* ---- RPC-over-RDMA (rdma.c) ---- */

/* The RPC-over-RDMA server's duplicate-reply cache (NULL without one). */
struct uiw__drc *uiw__nfs_rdma_drc(struct uiw__nfs_rdma *r);

struct uiw__nfs_rdma;
/* NULL + errno (EPROTONOSUPPORT: built without the RPC layer; EBUSY: another server of
 * this process serves RDMA). */
struct uiw__nfs_rdma *uiw__nfs_rdma_listen(struct uiw__nfsd *s, const char *addr, int port,
                                           int *bound);
void uiw__nfs_rdma_close(struct uiw__nfs_rdma *r);
int uiw__nfs_rdma_stats(struct uiw__nfs_rdma *r, struct uiw_rpc_xprt_stats *st);
int uiw__nfs_xprt_is_rdma(SVCXPRT *xprt);
/* Memory for a READ's payload of len bytes: on RDMA registered memory the reply's RDMA
 * Write goes from; on TCP a pooled buffer the reply is sent from (call.c). NULL when
 * short. */
void *uiw__nfs_xprt_getbuf(SVCXPRT *xprt, size_t len);
/* The RPC layer's uiw_xdr_bytes: a payload that came in a Read chunk is left where the
 * RDMA Read placed it. */
bool_t uiw__nfs_xdr_ddp_bytes(XDR *x, char **cpp, u_int *len, u_int max);

/* ---- buffers (buf.c) ----
 * Pooled buffers for records, replies and payloads: small ones (UIW__NFS_SMALL bytes)
 * for most calls and replies, and at most `large_max` large ones (max_io plus room for
 * headers) for WRITE records and READ payloads. Idle buffers beyond what was used
 * lately are given back (uiw__nfs_pool_trim), one large one kept. */

#define UIW__NFS_SMALL 8192u

struct uiw__nfs_buf {
    struct uiw__nfs_buf *next;
    size_t cap;
    int large;
    char data[];
};

struct uiw__nfs_pool;
struct uiw__nfs_pool *uiw__nfs_pool_create(size_t large_cap, unsigned large_max);
void uiw__nfs_pool_destroy(struct uiw__nfs_pool *p);
/* A small buffer (NULL when out of memory). */
struct uiw__nfs_buf *uiw__nfs_pool_small(struct uiw__nfs_pool *p);
/* A large buffer now, or NULL when all large_max are taken (or out of memory). */
struct uiw__nfs_buf *uiw__nfs_pool_large(struct uiw__nfs_pool *p);
/* A large buffer, waiting at most timeout_ms for one to come back. */
struct uiw__nfs_buf *uiw__nfs_pool_large_wait(struct uiw__nfs_pool *p, int timeout_ms);
void uiw__nfs_pool_put(struct uiw__nfs_pool *p, struct uiw__nfs_buf *b);
/* Called when a large buffer comes back after uiw__nfs_pool_large returned NULL (once
 * per such failure, from the thread that puts it back). */
void uiw__nfs_pool_on_large(struct uiw__nfs_pool *p, void (*cb)(void *), void *arg);
/* Give back idle buffers: those not needed by the most taken at once since the last
 * trim, but for one large one. */
void uiw__nfs_pool_trim(struct uiw__nfs_pool *p);
/* Large buffers taken now; bytes held by the pool (taken and idle). */
unsigned uiw__nfs_pool_large_taken(struct uiw__nfs_pool *p);
size_t uiw__nfs_pool_bytes(struct uiw__nfs_pool *p);

/* ---- ONC RPC record marking (rm.c, RFC 5531 section 11) ----
 * A receiver of a byte stream in nghttp2's manner: it says where the next bytes go
 * (uiw__nfs_rm_want), is told how many came (uiw__nfs_rm_got), and hands out the complete
 * records (uiw__nfs_rm_take). Between records it reads as much as comes into a small
 * staging buffer, so that small calls cost one read for many; the rest of a record larger
 * than that is read straight into its own buffer, fragment by fragment. */

struct uiw__nfs_rec {
    struct uiw__nfs_buf *buf; /* owned by whoever took it */
    size_t off, len;          /* the record is buf->data[off, off + len) */
};

#define UIW__NFS_RM_READY 8

struct uiw__nfs_rm {
    struct uiw__nfs_pool *pool;
    size_t max;      /* the longest record */
    int state;       /* rm.c's RM_* */
    uint8_t mark[4]; /* a fragment header read on its own */
    unsigned markgot;
    uint32_t frag_left;      /* bytes of the current fragment still to come */
    int last;                /* the current fragment ends its record */
    struct uiw__nfs_rec rec; /* the record being assembled (rec.buf NULL: none) */
    struct uiw__nfs_buf *stage;
    size_t st_off, st_len; /* unparsed bytes in the stage */
    struct uiw__nfs_rec ready[UIW__NFS_RM_READY];
    unsigned nready;
};

void uiw__nfs_rm_init(struct uiw__nfs_rm *r, struct uiw__nfs_pool *pool, size_t max);
/* Free what it holds. */
void uiw__nfs_rm_fini(struct uiw__nfs_rm *r);
/* Where the next bytes go (one iovec), or -ENOBUFS (no buffer now: try again when the
 * pool gives one back), -EAGAIN (records wait to be taken: take them first). */
int uiw__nfs_rm_want(struct uiw__nfs_rm *r, struct iovec *iov);
/* n bytes came into the last place wanted. 0, or -EMSGSIZE (a record longer than max:
 * the stream cannot go on), -ENOBUFS (no buffer to move a record into). */
int uiw__nfs_rm_got(struct uiw__nfs_rm *r, size_t n);
/* A complete record (1), or none (0). */
int uiw__nfs_rm_take(struct uiw__nfs_rm *r, struct uiw__nfs_rec *out);
/* Part of a record has come (the peer owes the rest). */
int uiw__nfs_rm_partial(const struct uiw__nfs_rm *r);

/* ---- one call (call.c) ----
 * A call record in, its reply record out: the ONC RPC header decoded (RPC_MISMATCH,
 * AUTH_ERROR for what is not AUTH_NONE or AUTH_SYS), the program's dispatcher run on an
 * SVCXPRT of the call's own (libtirpc's svc_getargs, svc_sendreply and svcerr_* work on
 * it), and the reply encoded into pooled buffers, a READ's payload referenced where it
 * was read (no copy). Calls are independent: any number run at once. */

#define UIW__NFS_REPLY_IOV 8

struct uiw__nfs_reply {
    struct uiw__nfs_reply *next;
    struct iovec iov[UIW__NFS_REPLY_IOV];
    int niov;
    size_t len;  /* of the whole record, its mark included */
    size_t sent; /* bytes of it written */
    struct uiw__nfs_buf *own[UIW__NFS_REPLY_IOV];
    int nown;
    int large; /* large buffers it holds */
};

struct uiw__nfs4_conn;
struct uiw__nfs_peer {
    struct sockaddr_storage addr;
    socklen_t len;
    struct uiw__nfs4_conn *conn4; /* its NFSv4.1 back channel (nfs4cb.h; NULL: none) */
};

/* Is xprt a call's of this TCP service, and its memory for a READ's payload. */
int uiw__nfs_xprt_is_tcp(SVCXPRT *xprt);
/* The connection of xprt's call as an NFSv4.1 back channel (NULL: its transport carries
 * no callbacks): a TCP connection's, or an RPC-over-RDMA one's (uiw__nfs_rdma_conn4). */
struct uiw__nfs4_conn *uiw__nfs_xprt_conn4(SVCXPRT *xprt);
/* An RPC-over-RDMA call's connection as a back channel (rdma.c): made the first time it
 * is asked for on that connection, closed when the connection ends. NULL: not such a
 * call, NFSv4 not served, a client that takes no backward calls, or no memory. */
struct uiw__nfs4_conn *uiw__nfs_rdma_conn4(SVCXPRT *xprt);
void *uiw__nfs_tcp_getbuf(SVCXPRT *xprt, size_t len);

/* Run one call; 1 with the reply in *out (its buffers the caller's, freed by
 * uiw__nfs_reply_free), 0 when the call gets no reply (its header did not decode).
 * `reserved` (or NULL) is a large buffer taken for the call (uiw__nfs_call_large): a
 * READ's payload or a long reply goes there; the call gives it back if unused. */
int uiw__nfs_call_run(struct uiw__nfsd *s, struct uiw__nfs_pool *pool,
                      const struct uiw__nfs_peer *peer, char *rec, size_t len,
                      struct uiw__nfs_buf *reserved, struct uiw__nfs_reply *out);
/* Whether the call in rec will want a large buffer (a READ, READDIR or READDIRPLUS of
 * more than a small buffer holds), from its header and first arguments alone. */
int uiw__nfs_call_large(const struct uiw__nfsd *s, const char *rec, size_t len);
void uiw__nfs_reply_free(struct uiw__nfs_pool *pool, struct uiw__nfs_reply *r);

/* ---- TCP (tcp.c) ----
 * A pool of threads per server runs the calls (several of one connection at once); one
 * of them at a time is the event thread, which accepts, reads records and writes what
 * replies could not write at once. Limits and timeouts: uiw__nfsd_opts. */

struct uiw__nfs_tcp;
struct uiw__nfs_tcp *uiw__nfs_tcp_create(struct uiw__nfsd *s);
/* Listen on addr:port (NFS and MOUNT are served on every listener). 0 or -errno. */
int uiw__nfs_tcp_listen(struct uiw__nfs_tcp *t, const char *addr, int port, int *bound);
int uiw__nfs_tcp_start(struct uiw__nfs_tcp *t);
/* Stop: close every connection and listener, join every thread, free everything. */
void uiw__nfs_tcp_destroy(struct uiw__nfs_tcp *t);

struct uiw__nfs_tcp_counts {
    unsigned conns;      /* open now */
    uint64_t accepted;   /* ever */
    uint64_t refused;    /* over the connection limit */
    uint64_t too_long;   /* closed for a record longer than the limit */
    uint64_t idle;       /* closed after idle_timeout */
    uint64_t stalled;    /* closed after io_timeout */
    uint64_t calls;      /* run */
    uint64_t role_taken; /* the event thread's role taken from a thread in a long call */
    unsigned large_taken;
    size_t pool_bytes;
};
void uiw__nfs_tcp_counts(struct uiw__nfs_tcp *t, struct uiw__nfs_tcp_counts *c);
/* Connections open now. */
unsigned uiw__nfs_tcp_conns(struct uiw__nfs_tcp *t);

#endif
