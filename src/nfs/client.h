/*
 * The NFS client of uiw-nfs: libnfs-style URLs; NFSv4.2 or 4.1 (client4.c: a session,
 * paths walked from the server's root), or NFSv3 (MOUNT over TCP for an export's root
 * handle), over TCP (libtirpc) or RPC-over-RDMA. The version is the URL's ?version=, by
 * default 4.2, falling back to 4.1 and then 3 as the server answers.
 *
 * Functions return 0 (or a count) on success, and on failure a negative value: -status
 * for an NFS3ERR_* / MNT3ERR_* / NFS4ERR_* status from the server (the errors the
 * versions share have the same numbers), or UIW__NFS_ERPC when the call itself failed
 * (connection, timeout, garbage); uiw__nfs_errtext() says which, with the RPC layer's
 * message.
 */
#ifndef UIW_NFS_CLIENT_H
#define UIW_NFS_CLIENT_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "nfs3.h"
#include "nfs/xdr_data.h"

#define UIW__NFS_ERPC (-100000)

enum uiw__nfs_transport { UIW__NFS_TCP, UIW__NFS_RDMA };

struct uiw__nfs_url {
    char host[256];
    int port;        /* NFS port; 0: the transport's default (2049 TCP, 20049 RDMA) */
    int mount_port;  /* ?mountport=; 0: ask rpcbind, else the NFS port, else 20048 */
    char path[1024]; /* absolute: export path and the path below it */
    enum uiw__nfs_transport transport; /* ?transport=tcp|rdma (default tcp) */
    int rpcrdma;                       /* ?rpcrdma=1|2; 0: Version Two, falling back to One */
    uint32_t uid, gid; /* ?uid= ?gid=: the AUTH_SYS identity (default: the caller's) */
    /* ?version=3|4|4.1|4.2 (libnfs's name): 3, 41 or 42 (4 is 42 falling back to 41);
     * 0 (none given): 4.2, falling back to 4.1 and then 3 */
    int version;
    /* ?owner=: NFSv4's client owner (co_ownerid); "": one of this host and run */
    char owner[128];
    /* RPC-over-RDMA receive buffers and largest inline message, and DDP threshold
     * (uiw_rpc_xprt_attr's inline_recv / inline_send and ddp_threshold; not in the URL:
     * 0, the transport's defaults, unless the caller sets them after parsing) */
    uint32_t inline_size, ddp_threshold;
};

/* Parse nfs://HOST[:PORT]/PATH[?transport=rdma|tcp&rpcrdma=1|2&mountport=N&uid=N&gid=N
 * &version=3|4|4.1|4.2&owner=NAME].
 * HOST may be an IPv6 literal in brackets. 0, or -1 with a message in err. */
int uiw__nfs_url_parse(const char *s, struct uiw__nfs_url *u, char *err, size_t errlen);

struct uiw__nfs_fh {
    uint32_t len;
    char data[128]; /* NFSv4's NFS4_FHSIZE (NFSv3's are at most 64) */
};

struct uiw__nfs_client;

/* NFSv4: connect, make a session, and take the server's root handle (u->path is walked
 * from it). NFSv3: mount the export holding u->path (the longest export that is a prefix
 * of it, from the server's EXPORT list), connect the NFS transport and read FSINFO. NULL
 * with a message in err on failure. verbose > 0 prints the steps (and the version) on
 * stderr. */
struct uiw__nfs_client *uiw__nfs_client_open(const struct uiw__nfs_url *u, int verbose, char *err,
                                             size_t errlen);
/* NFSv4: CLOSE the files open, DESTROY_SESSION and DESTROY_CLIENTID; NFSv3: UMNT. Then
 * close. */
void uiw__nfs_client_close(struct uiw__nfs_client *c);
/* Point an open client at another URL of the same server, transport, identity and
 * directory (only the last name differs): 0, or -1 when u needs a client of its own. */
int uiw__nfs_client_reuse(struct uiw__nfs_client *c, const struct uiw__nfs_url *u);

/* The server's limits (FSINFO): largest READ and WRITE. */
uint32_t uiw__nfs_client_rtmax(const struct uiw__nfs_client *c);
uint32_t uiw__nfs_client_wtmax(const struct uiw__nfs_client *c);
/* READs and WRITEs of up to `bytes` (at most 1 MiB counts) are to come: over TCP the
 * buffers of the calls in flight are made ready for them now, their pages touched, rather
 * than grown within the first such calls. Nothing over RPC-over-RDMA (its buffers are
 * pooled). */
void uiw__nfs_client_reserve(struct uiw__nfs_client *c, uint32_t bytes);
/* The handle of the mounted directory and the path of u->path below it ("" for itself). */
const struct uiw__nfs_fh *uiw__nfs_client_root(const struct uiw__nfs_client *c);
const char *uiw__nfs_client_subpath(const struct uiw__nfs_client *c);
/* The RPC-over-RDMA transport's counters (uiw/rpc.h): 0, or -ENOTCONN (over TCP). */
struct uiw_rpc_xprt_stats;
int uiw__nfs_client_xprt_stats(struct uiw__nfs_client *c, struct uiw_rpc_xprt_stats *st);
/* Transport in use, e.g. "tcp", "rdma-v2", "rdma-v1". */
const char *uiw__nfs_client_transport(const struct uiw__nfs_client *c);
/* NFS version in use: "3", "4.1" or "4.2". */
const char *uiw__nfs_client_version(const struct uiw__nfs_client *c);

/* Text for a negative return (NFS3ERR_NOENT -> "No such file or directory (NFS3ERR_NOENT)"). */
const char *uiw__nfs_errtext(const struct uiw__nfs_client *c, int rc);

/* Walk a relative path ("" is the root) component by component with LOOKUP. */
int uiw__nfs_lookup_path(struct uiw__nfs_client *c, const char *path, struct uiw__nfs_fh *fh,
                         fattr3 *attr);
int uiw__nfs_lookup(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir, const char *name,
                    struct uiw__nfs_fh *fh, fattr3 *attr);
int uiw__nfs_getattr(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, fattr3 *attr);
int uiw__nfs_truncate(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, uint64_t size);
int uiw__nfs_chmod(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, uint32_t mode);

/* READ up to count bytes at off into buf; returns the count read (0 at end of file),
 * *eof set when the server says so. */
int uiw__nfs_read(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, uint64_t off,
                  uint32_t count, void *buf, int *eof);
/* WRITE count bytes at off; returns the count written. *verf gets the write verifier. */
int uiw__nfs_write(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, uint64_t off,
                   uint32_t count, const void *buf, stable_how stable, char verf[8]);
int uiw__nfs_commit(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, char verf[8]);

/* CREATE (UNCHECKED, or GUARDED when excl) with mode; MKDIR; SYMLINK. */
int uiw__nfs_create(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir, const char *name,
                    uint32_t mode, int excl, struct uiw__nfs_fh *fh);
int uiw__nfs_mkdir(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir, const char *name,
                   uint32_t mode, struct uiw__nfs_fh *fh);
int uiw__nfs_remove(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir, const char *name);
int uiw__nfs_rmdir(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir, const char *name);
int uiw__nfs_rename(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fdir, const char *from,
                    const struct uiw__nfs_fh *tdir, const char *to);

/* READDIRPLUS over a whole directory: fn is called for each entry (attr NULL when the
 * server sent none); a nonzero return from fn stops the walk and is returned. */
typedef int (*uiw__nfs_dirent_fn)(void *arg, const char *name, uint64_t fileid, const fattr3 *attr,
                                  const struct uiw__nfs_fh *fh);
int uiw__nfs_readdir(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir,
                     uiw__nfs_dirent_fn fn, void *arg);

/* Calls in flight, on either transport (NFSv3's procedures: -EPROTONOSUPPORT over
 * NFSv4): start a call and return; `a->done` runs with
 * a->arg and 0 or UIW__NFS_ERPC (c->err saying why, as for a synchronous call) when it
 * ends, from uiw__nfs_poll (it may start calls, but not poll). args is encoded before
 * this returns, except a WRITE's payload over RPC-over-RDMA (the server reads it from
 * that memory): it, res and *a stay valid until done runs. One thread drives a client.
 * Over TCP the calls go out together on the one connection (pipe.h) and a lost
 * connection is made again, each call in flight sent again with its XID, as for a
 * synchronous call; a synchronous call made while calls are in flight waits among them
 * (their `done` may run meanwhile). 0, or a negative errno. */
struct uiw__nfs_async {
    void (*done)(void *arg, int rc);
    void *arg;
    void *result_buf; /* where a READ's payload lands (RDMA Write), or NULL */
    uint32_t result_len;
    struct uiw__nfs_client *c; /* the client's */
};
int uiw__nfs_call_async(struct uiw__nfs_client *c, uint32_t proc, xdrproc_t xargs, void *args,
                        xdrproc_t xres, void *res, struct uiw__nfs_async *a);
/* Send and run completions for up to timeout_ms (0: only what is ready; -1: until a call
 * ends, or at once when none is in flight); returns how many calls ended (or, over
 * RPC-over-RDMA, a negative code). NFSv4 with nothing in flight: the back channel's
 * calls (over TCP, the connection's; over RPC-over-RDMA, the backward direction's)
 * served for up to timeout_ms (not -1), the delegations they recalled returned, a TCP
 * connection made again bound to the back channel. */
int uiw__nfs_poll(struct uiw__nfs_client *c, int timeout_ms);
/* Hold the calls this thread starts from now on (on any client) until
 * uiw__nfs_batch_end, so that those started together go out together: one system call
 * for the batch over RPC-over-RDMA, as over TCP, where they wait for uiw__nfs_poll
 * anyway. A thread that waits for a call (a synchronous one, uiw__nfs_poll) sends what
 * it holds first. Nestable. */
void uiw__nfs_batch_begin(void);
void uiw__nfs_batch_end(void);
/* Over TCP: the most calls there were in flight at once (over RPC-over-RDMA the
 * transport's counters say it: credits_max_inflight). */
unsigned uiw__nfs_most_inflight(const struct uiw__nfs_client *c);

/* Operations in flight: the procedures above started without waiting, on either
 * transport (over NFSv4, GETATTR, READ and WRITE go in flight, each on a slot of the
 * session, once their file is open; the others run when started, one at a time, and
 * their done waits for uiw__nfs_poll). op->done(op, rc) runs from
 * uiw__nfs_poll with what the synchronous function returns (a LOOKUP that brought no attributes, or
 * a CREATE no handle, makes its second call first); it may start the next operation on the same op.
 * The op and what it is given to fill (fh, attr, verf, eof, buf) stay valid until then; a WRITE's
 * buf too. 0, or a negative errno when the call could not start (done does not run). */
struct uiw__nfs_op {
    void (*done)(struct uiw__nfs_op *op, int rc);
    void *arg;
    /* the client's */
    struct uiw__nfs_client *c;
    struct uiw__nfs_async a;
    int kind;
    struct uiw__nfs_op *v4_next; /* NFSv4: ended, waiting for uiw__nfs_poll */
    int v4_rc;
    int v4_again;          /* NFSv4: to run synchronously from uiw__nfs_poll */
    uint64_t off;          /* READ, WRITE */
    int stable;            /* WRITE: stable_how */
    struct uiw__nfs_fh fh; /* the object, or the directory of name */
    char name[256];
    struct uiw__nfs_fh *out_fh;
    fattr3 *out_attr;
    char *out_verf;
    int *out_eof;
    void *buf;
    uint32_t count;
    union {
        LOOKUP3args lookup;
        GETATTR3args getattr;
        SETATTR3args setattr;
        CREATE3args create;
        WRITE3args write;
        COMMIT3args commit;
        READ3args read;
    } args;
    union {
        LOOKUP3res lookup;
        GETATTR3res getattr;
        SETATTR3res setattr;
        CREATE3res create;
        WRITE3res write;
        COMMIT3res commit;
        READ3res read;                     /* over RPC-over-RDMA: the payload in buf */
        struct uiw__nfs_read_into read_in; /* over TCP: decoded into buf */
    } res;
};
int uiw__nfs_lookup_start(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir,
                          const char *name, struct uiw__nfs_fh *fh, fattr3 *attr,
                          struct uiw__nfs_op *op);
int uiw__nfs_getattr_start(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, fattr3 *attr,
                           struct uiw__nfs_op *op);
int uiw__nfs_truncate_start(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, uint64_t size,
                            struct uiw__nfs_op *op);
int uiw__nfs_create_start(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir,
                          const char *name, uint32_t mode, int excl, struct uiw__nfs_fh *fh,
                          struct uiw__nfs_op *op);
int uiw__nfs_write_start(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, uint64_t off,
                         uint32_t count, const void *buf, stable_how stable, char verf[8],
                         struct uiw__nfs_op *op);
int uiw__nfs_commit_start(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, char verf[8],
                          struct uiw__nfs_op *op);
int uiw__nfs_read_start(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, uint64_t off,
                        uint32_t count, void *buf, int *eof, struct uiw__nfs_op *op);

/* NFSv4: a byte-range write lock of len bytes at off (len 0: to the end of the file) on
 * the file fh: OPEN, then LOCK with open_to_lock_owner4; while another holds the range
 * (NFS4ERR_DENIED) it is asked again after 1 s, then 2, 4 ... up to 30 s, as Linux asks
 * for a blocking lock. Once held, held(arg) runs, the lease is renewed (a SEQUENCE alone
 * each third of it) until *stop is nonzero (a signal handler sets it), then LOCKU and
 * CLOSE. 0; -status; -NFS3ERR_NOTSUPP over NFSv3 (whose locks are NLM's, not served
 * here); -EINTR when *stop was set before the lock was had. */
int uiw__nfs_lock(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, uint64_t off,
                  uint64_t len, volatile sig_atomic_t *stop, void (*held)(void *arg), void *arg);

/* NFSv4.2 COPY, synchronous, of the whole file src into dst (both on this client's
 * server, dst made empty first by the caller): the bytes copied, or -status
 * (-NFS3ERR_NOTSUPP over NFSv3 and 4.1, and where the server does not serve COPY: the
 * caller then reads and writes). */
int64_t uiw__nfs_copy(struct uiw__nfs_client *c, const struct uiw__nfs_fh *src,
                      const struct uiw__nfs_fh *dst, uint64_t count);

/* Any procedure with rpcgen's routines (bench and tests): 0 or UIW__NFS_ERPC. */
int uiw__nfs_call(struct uiw__nfs_client *c, uint32_t proc, xdrproc_t xargs, void *args,
                  xdrproc_t xres, void *res);

#endif
