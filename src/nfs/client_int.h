/*
 * Inside uiw-nfs's client: the state of a client, which client.c (NFSv3, the transports,
 * the version chosen) and client4.c (NFSv4.1 and 4.2 over the same transports) share,
 * and what client.c's public functions call in client4.c when the client speaks v4.
 */
#ifndef UIW_NFS_CLIENT_INT_H
#define UIW_NFS_CLIENT_INT_H

#include <stdint.h>

#include <rpc/rpc.h>

#include "nfs/client.h"

#define NFS_PROG 100003

/* Room beside READ or WRITE data in an inline message: the RPC-over-RDMA and RPC headers
 * (AUTH_SYS credentials take up to 400 bytes), the handle and other arguments of a WRITE,
 * the attributes, count and eof of a READ's reply (and an NFSv4 COMPOUND's SEQUENCE,
 * PUTFH and status words, which fit too). */
#define INLINE_ROOM 1024u

struct uiw__nfs4c;

struct uiw__nfs_client {
    struct uiw__nfs_url url;
    int verbose;
    CLIENT *nfs; /* libtirpc's over TCP, or the RPC layer's over RPC-over-RDMA */
    int rdma;
    int vers;              /* NFS version spoken: 3 or 4 */
    struct uiw__nfs4c *v4; /* NFSv4: the session and open files (client4.c) */
    struct uiw__nfs_fh root;
    char export_path[1024];
    char subpath[1024];
    char mount_host[256];
    int mount_port;
    uint32_t rtmax, wtmax;
    uint32_t reserve_io; /* uiw__nfs_client_reserve's largest */
    char transport[16];
    char err[512];
    struct timeval timeout;
    int nfs_port;               /* over TCP */
    int rpcbind_nfs_port;       /* NFS 3 over TCP as the server's rpcbind names it, or 0 */
    unsigned reconnects;        /* TCP connections made again after one was lost */
    struct uiw__nfs_pipe *pipe; /* over TCP: the calls in flight (NFSv4: every call) */
    int pipe_attempt;           /* connections made again since a call last ended well */
    int pipe_failing;           /* ending every call in flight: c->err says why */
    int rebind;                 /* NFSv4: a new TCP connection, its back channel unbound */
    /* RPC-over-RDMA: READs of fewer bytes than read_inline offer no Write chunk (their
     * reply fits the receive buffers both sides agreed on; 0: every READ offers one) */
    uint32_t read_inline;
    /* NFSv4: operations started (client.h's *_start), run, and waiting for uiw__nfs_poll
     * to call their done */
    struct uiw__nfs_op *v4_ended, **v4_ended_tail;
};

/* An RPC call on the client's transport with what RPC-over-RDMA may use: result_buf
 * (result_len bytes) where a DDP-eligible result lands (NULL: none), reply_max the
 * largest reply (0: what fits inline). Over TCP as uiw__nfs_call. 0 or UIW__NFS_ERPC. */
int uiw__nfs_call_ddp(struct uiw__nfs_client *c, uint32_t proc, xdrproc_t xargs, void *args,
                      xdrproc_t xres, void *res, void *result_buf, uint32_t result_len,
                      uint32_t reply_max);

/* uiw__nfs_call_async of any procedure of the version spoken (NFSv4's COMPOUND too). */
int uiw__nfs_call_inflight(struct uiw__nfs_client *c, uint32_t proc, xdrproc_t xargs, void *args,
                           xdrproc_t xres, void *res, struct uiw__nfs_async *a);
/* The transport's calls in flight run for up to timeout_ms (uiw__nfs_poll's meaning): over
 * TCP the pipe (a connection lost made again), over RPC-over-RDMA the RPC layer's poll.
 * The calls ended, or a negative code. */
int uiw__nfs_xprt_poll(struct uiw__nfs_client *c, int timeout_ms);

/* Over TCP, once the pipe is made: its buffers made ready for READs and WRITEs of
 * reserve_io bytes, within the largest the server takes (uiw__nfs_pipe_reserve). */
void uiw__nfs_pipe_ready(struct uiw__nfs_client *c);

/* ---- client4.c ---- */

/* The transport is connected in version 4 (c->nfs): EXCHANGE_ID and CREATE_SESSION in
 * minor version 2 then 1 (only `minor` when it is not 0), RECLAIM_COMPLETE, the root's
 * handle (PUTROOTFH) and the largest READ and WRITE. 0; -1 with a message in err;
 * -2 when the server speaks no minor version asked for. */
int uiw__nfs4c_start(struct uiw__nfs_client *c, int minor, char *err, size_t errlen);
/* An operation of client.h's *_start over NFSv4 (op's fh, buf, count, off, stable and
 * out_* set): started on a free slot of the session (over either transport), 1, its end
 * queued for uiw__nfs_poll by uiw__nfs_op_ended, or queued until a slot is free; 0 when it
 * cannot go in flight (its file not open for it yet, a delegation to return first), and
 * the caller runs it synchronously. */
enum uiw__nfs4c_kind { UIW__NFS4C_GETATTR, UIW__NFS4C_READ, UIW__NFS4C_WRITE };
int uiw__nfs4c_op_start(struct uiw__nfs_client *c, struct uiw__nfs_op *op,
                        enum uiw__nfs4c_kind kind);
/* From uiw__nfs_poll when nothing is in flight, what would wait for the next COMPOUND
 * done now: a TCP connection made again bound to the back channel, the delegations
 * CB_RECALL asked for returned (DELEGRETURN). */
void uiw__nfs4c_idle(struct uiw__nfs_client *c);
/* Operations that waited for a slot sent on those free now (from uiw__nfs_poll). */
void uiw__nfs4c_resume(struct uiw__nfs_client *c);
/* Whether operations are in flight or waiting for a slot (uiw__nfs_poll waits for them). */
int uiw__nfs4c_inflight(const struct uiw__nfs_client *c);
/* NFSv4: op ended with rc (its synchronous function's result), its done to run from
 * uiw__nfs_poll; again: it is to run there synchronously instead (what it met is
 * recovered from on that path). */
void uiw__nfs_op_ended(struct uiw__nfs_op *op, int rc, int again);
/* CLOSE what is open, DESTROY_SESSION, DESTROY_CLIENTID; frees c->v4. */
void uiw__nfs4c_stop(struct uiw__nfs_client *c);
/* The minor version in use. */
int uiw__nfs4c_minor(const struct uiw__nfs_client *c);
const char *uiw__nfs4c_errname(int status);

int uiw__nfs4c_lookup_path(struct uiw__nfs_client *c, const char *path, struct uiw__nfs_fh *fh,
                           fattr3 *attr);
int uiw__nfs4c_lookup(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir, const char *name,
                      struct uiw__nfs_fh *fh, fattr3 *attr);
int uiw__nfs4c_getattr(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, fattr3 *attr);
int uiw__nfs4c_setattr(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh,
                       const uint64_t *size, const uint32_t *mode);
int uiw__nfs4c_read(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, uint64_t off,
                    uint32_t count, void *buf, int *eof);
int uiw__nfs4c_write(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, uint64_t off,
                     uint32_t count, const void *buf, stable_how stable, char verf[8]);
int uiw__nfs4c_commit(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, char verf[8]);
int uiw__nfs4c_create(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir, const char *name,
                      uint32_t mode, int excl, struct uiw__nfs_fh *fh);
int uiw__nfs4c_mkdir(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir, const char *name,
                     uint32_t mode, struct uiw__nfs_fh *fh);
int uiw__nfs4c_remove(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir, const char *name);
int uiw__nfs4c_rename(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fdir, const char *from,
                      const struct uiw__nfs_fh *tdir, const char *to);
/* The back channel: a CB_COMPOUND run (the RPC layer's dispatch routine calls it for
 * backward calls over RPC-over-RDMA, the pipe's server function over TCP; tests feed it
 * calls). CB_SEQUENCE first, on this
 * session, on a slot of CB_SLOTS, with the slot's next sequenceid (the last one again:
 * the first reply again without running anything); CB_RECALL of a delegation held marks
 * it for DELEGRETURN before the next COMPOUND, NFS4ERR_BADHANDLE for another; other
 * callbacks NFS4ERR_NOTSUPP. r's result array is malloc'd (free it), its tag a's. 0, or
 * -ENOMEM. */
struct CB_COMPOUND4args;
struct CB_COMPOUND4res;
int uiw__nfs4c_cb_compound(struct uiw__nfs_client *c, const struct CB_COMPOUND4args *a,
                           struct CB_COMPOUND4res *r);
/* A backward call that came on the TCP connection (RFC 8881 section 2.10.3.1: a record
 * whose msg_type is CALL; rec its RPC message, len bytes), answered as the RPC-over-RDMA
 * backward direction's are: CB_NULL, CB_COMPOUND by uiw__nfs4c_cb_compound, other
 * procedures PROC_UNAVAIL, arguments that do not decode GARBAGE_ARGS, another program or
 * version PROG_UNAVAIL or PROG_MISMATCH (RFC 5531 section 9). The reply's RPC message is
 * written to out (cap bytes; SYSTEM_ERR when the results do not fit) and its length
 * returned; 0 (no reply) for a record that does not decode as a call, as svc_vc drops
 * one. The pipe's server function over TCP (tests feed it records). */
size_t uiw__nfs4c_cb_serve(struct uiw__nfs_client *c, const char *rec, size_t len, char *out,
                           size_t cap);
/* The session's id: 0, or -1 when there is none. */
int uiw__nfs4c_session(const struct uiw__nfs_client *c, char id[16]);
/* Back-channel operations run (not those answered from a slot). */
unsigned uiw__nfs4c_cb_runs(const struct uiw__nfs_client *c);
/* Connections bound to the session's back channel again (BIND_CONN_TO_SESSION, sent
 * when SEQUENCE says CB_PATH_DOWN, or over TCP once a lost connection was made again). */
unsigned uiw__nfs4c_rebinds(const struct uiw__nfs_client *c);
/* The last SEQUENCE's sr_status_flags (SEQ4_STATUS_*; 0 before the first). */
uint32_t uiw__nfs4c_seq_flags(const struct uiw__nfs_client *c);
/* The client id EXCHANGE_ID gave (0: none yet). */
uint64_t uiw__nfs4c_clientid(const struct uiw__nfs_client *c);
/* Let the next OPENs take the delegation the server offers (WANT_NO_PREFERENCE) instead
 * of declining one (WANT_NO_DELEG, the default: this client caches nothing, so a
 * delegation only makes others wait for its return). For tests of recalls. */
void uiw__nfs4c_want_deleg(struct uiw__nfs_client *c, int on);
/* Whether the client holds a delegation of fh (granted, not yet returned). */
int uiw__nfs4c_has_deleg(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh);

int uiw__nfs4c_readdir(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir,
                       uiw__nfs_dirent_fn fn, void *arg);

#endif
