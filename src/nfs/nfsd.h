/*
 * uiw-nfsd's server: NFS version 3 and MOUNT version 3 (RFC 1813) over exported
 * directories, served over TCP (src/nfs/tcp.c) and, through the project's RPC layer,
 * over RPC-over-RDMA.
 *
 * A server is configured, given its exports, started (it binds its ports and runs its own
 * threads), and stopped. Every procedure runs through *at() system calls on descriptors
 * under an export's root; file handles are opaque to clients (src/nfs/fh.c says what
 * they hold).
 */
#ifndef UIW_NFS_NFSD_H
#define UIW_NFS_NFSD_H

#include <stddef.h>
#include <stdint.h>

struct uiw__nfsd;

struct uiw__nfsd_opts {
    const char *addr;   /* listen address (IPv4 or IPv6 literal); NULL: every address */
    int tcp_port;       /* NFS over TCP; 0 picks a free port, -1 disables */
    int mount_port;     /* MOUNT over TCP; 0 picks a free port, -1 disables */
    int rdma_port;      /* NFS over RPC-over-RDMA; 0 picks a free port, -1 disables */
    int vers1_only;     /* RPC-over-RDMA: speak Version One only */
    int no_root_squash; /* AUTH_SYS uid 0 keeps root's rights (root-run server only) */
    uint32_t anon_uid;  /* identity of squashed and AUTH_NONE callers */
    uint32_t anon_gid;
    uint32_t max_io;       /* largest READ / WRITE (rtmax, wtmax); 0: 1 MiB */
    unsigned max_handles;  /* files whose handle records are kept; 0: 262144 */
    unsigned rdma_threads; /* threads serving RPC-over-RDMA calls; 0: 4 */
    /* RPC-over-RDMA receive buffers and largest inline message (uiw_rpc_xprt_attr's
     * inline_recv and inline_send), and DDP threshold; 0: the transport's defaults */
    uint32_t inline_size, ddp_threshold;
    int verbose; /* one line per call on stderr when > 1 */
    /* TCP (NFS and MOUNT): limits and timeouts (0: the default) */
    unsigned tcp_threads;  /* threads running calls; 0: 8 */
    unsigned max_conns;    /* connections open at once, TCP and RPC-over-RDMA together; 0:
                              1024 (more are refused) */
    unsigned idle_timeout; /* seconds without a call before a connection closes; 0: 360 */
    unsigned io_timeout;   /* seconds a record or a reply may stall (TCP and RPC-over-RDMA);
                              0: 60 */
    unsigned io_buffers;   /* buffers of max_io for WRITE and READ payloads; 0: 64 */
    /* Registration with the host's rpcbind (NFS 3 on tcp, tcp6 and rdma, MOUNT 3 on tcp
     * and tcp6), undone at the end: 1 always (the start fails without it), 0 never, -1
     * (the default) when NFS is on TCP port 2049, which makes this server the host's NFS
     * server (nothing said when no rpcbind runs) */
    int rpcbind;
    /* NFS version 4 (minor versions 1 and 2; nfs4.c says what it serves) beside version 3
     * on the NFS ports: on by default; off, version 4 gets PROG_MISMATCH (3, 3) */
    int nfs4;
    unsigned lease_time; /* NFSv4 lease, seconds; 0: 90 */
    /* NFSv4 client records (NULL: none, and no grace period after a restart); made if
     * missing */
    const char *state_dir;
    /* NFSv4 owners as name@domain in GETATTR (through the system's passwd and group);
     * NULL: as numbers, as knfsd with nfs4_disable_idmapping. SETATTR takes numbers and
     * name@ this domain (NULL: the host's DNS domain, or "localdomain") */
    const char *idmap_domain;
    /* The exports of the command line (uiw__nfsd_add_export) are the NFSv4 root in place
     * of the pseudo file system, the first the caller may see, as an exports file's
     * fsid=root makes its export (knfsd's fsid=0); 0 (the default): each at its path
     * under the pseudo root, as over NFSv3 */
    int nfs4_cmdline_root;
    /* NFSv4: no delegations granted (OPEN answers OPEN_DELEGATE_NONE) */
    int no_delegations;
};

/* Defaults: every address, TCP 2049, MOUNT 20048, RDMA 20049, nobody (65534). */
void uiw__nfsd_opts_default(struct uiw__nfsd_opts *o);

/* NULL and errno set on failure. */
struct uiw__nfsd *uiw__nfsd_create(const struct uiw__nfsd_opts *o);

/* Export a directory (made absolute and canonical; mounted by that path). 0 or -errno
 * (-ENOTDIR, -ENOENT, -EEXIST for the same directory twice). Before uiw__nfsd_start. */
int uiw__nfsd_add_export(struct uiw__nfsd *s, const char *path);

/* Export every line of an exports file's table (exports.h), taking it over: each path as
 * with uiw__nfsd_add_export, open to the clients of its line only, with their options.
 * 0, or -errno with the line and path in err. Before uiw__nfsd_start. */
struct uiw__nfs_xtable;
int uiw__nfsd_add_exports(struct uiw__nfsd *s, struct uiw__nfs_xtable *t, char *err, size_t errlen);

/* Take a new exports file's table (reload: SIGHUP) while serving: exports added are
 * served, those changed take their new clients and options, those gone are hidden and
 * their handles refused (NFS3ERR_ACCES); exports of the command line stay as they are.
 * New calls see the new table; calls running when it comes end first. 0, or -errno
 * (with err) and the table as it was. */
int uiw__nfsd_reload_exports(struct uiw__nfsd *s, struct uiw__nfs_xtable *t, char *err,
                             size_t errlen);

/* Bind the listeners, register with rpcbind (opts.rpcbind) and start serving. 0 or
 * -errno (-ECONNREFUSED: rpcbind required and not reachable). */
int uiw__nfsd_start(struct uiw__nfsd *s);

enum uiw__nfsd_port { UIW__NFSD_TCP, UIW__NFSD_MOUNT, UIW__NFSD_RDMA };

/* The port a started listener is bound to, or -1 when that listener is off. */
int uiw__nfsd_port(const struct uiw__nfsd *s, enum uiw__nfsd_port which);

/* The RPC-over-RDMA transport's counters (uiw/rpc.h): 0, or -ENOTCONN (no RDMA listener),
 * -EPROTONOSUPPORT (built without the RPC layer). */
struct uiw_rpc_xprt_stats;
int uiw__nfsd_xprt_stats(struct uiw__nfsd *s, struct uiw_rpc_xprt_stats *st);

/* NFSv4.1's callbacks (nfs4cb.c): call records sent (first sends and resends; CB_RECALLs
 * among them, and the resends), replies matched to their calls, callbacks that ended in
 * an error, calls unanswered for the timeout, replies dropped (no call of theirs, or not
 * RPC). 0, or -ENOTSUP (NFSv4 off). */
struct uiw__nfsd_cb_counts {
    uint64_t sent, recalls, resent, replies, errors, timeouts, dropped;
};
int uiw__nfsd_cb_counts(struct uiw__nfsd *s, struct uiw__nfsd_cb_counts *n);

/* NFSv4 delegations (nfs4deleg.c): granted by OPEN, recalled (CB_RECALL sent), given
 * back (DELEGRETURN), revoked (not given back within a lease of the recall, or the
 * recall failed). 0, or -ENOENT when NFSv4 is off. */
struct uiw__nfsd_deleg_counts {
    uint64_t granted, recalled, returned, revoked;
};
int uiw__nfsd_deleg_counts(struct uiw__nfsd *s, struct uiw__nfsd_deleg_counts *n);

/* NFSv4 state reclaimed after a restart (nfs4grace.c's grace period): OPENs with
 * CLAIM_PREVIOUS and LOCKs with `reclaim` that succeeded. 0, or -ENOENT when NFSv4 is
 * off. */
struct uiw__nfsd_reclaim_counts {
    uint64_t opens, locks;
};
int uiw__nfsd_reclaim_counts(struct uiw__nfsd *s, struct uiw__nfsd_reclaim_counts *n);

/* Stop listening, close every connection, wait for every thread, free everything. */
void uiw__nfsd_destroy(struct uiw__nfsd *s);

#endif
