/*
 * ONC RPC (RFC 5531) on the RPC-over-RDMA transport: internal interface of src/rpc.
 *
 *   msg.c      call and reply headers, AUTH_SYS credentials
 *   xdrs.c     the XDR streams over transport buffers (DDP: chunks at XDR positions)
 *   caller.c   requester: call slots, XIDs, waiting, timeouts, retransmission
 *   clnt.c     the CLIENT (libtirpc's ops) of uiw_rpc_clnt_create, reconnecting
 *   resp.c     responder: the SVCXPRT of a call, program table, dispatch, replies
 *   drc.c      duplicate-reply cache
 *   svc.c      the server: listener and worker threads
 */
#ifndef UIW_RPC_INTERNAL_H
#define UIW_RPC_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include <uiw/rpc.h>

#include "rpc/drc.h"
#include "rpc/msg.h"
#include "rpc/svc_hooks.h"
#include "rpcrdma/xprt.h"

/* ---------------------------------------------------------------- XDR streams */

enum uiw__xs_mode {
    UIW__XS_CALL_ENC = 0, /* requester encoding a call: DDP items become Read chunks */
    UIW__XS_REPLY_ENC,    /* responder encoding a reply: DDP items go to Write chunks */
    UIW__XS_CALL_DEC,     /* responder decoding a call from the reassembled pieces */
    UIW__XS_REPLY_DEC,    /* requester decoding a reply: DDP items come from Write chunks */
};

struct uiw__xs {
    XDR x; /* first: the XDR * handed to xdr routines is this */
    enum uiw__xs_mode mode;
    struct uiw__rr_dev *dev;
    struct uiw__rr_req *q;  /* CALL_ENC, REPLY_DEC */
    struct uiw__rr_call *k; /* REPLY_ENC, CALL_DEC */
    uint32_t threshold;     /* DDP threshold (0: no DDP) */
    uint32_t xpos;          /* position in the whole XDR stream */
    uint32_t pad_skip;      /* pad bytes of the last DDP item still to drop */
    uint32_t pad_next;      /* decoding: the pad the last item read inline needs */
    /* decoding: CALL_DEC reads k's pieces, REPLY_DEC q's body */
    uint32_t pi, poff;
    const uint8_t *in;
    uint32_t in_len, in_off;
    bool wused[UIW__RR_MAX_CHUNKS];
    int err;
};

void uiw__xs_call_enc(struct uiw__xs *s, struct uiw__rr_dev *d, struct uiw__rr_req *q,
                      uint32_t threshold);
void uiw__xs_reply_enc(struct uiw__xs *s, struct uiw__rr_call *k, uint32_t threshold);
/* Decode k's call from byte offset `from` of its reassembled stream. */
void uiw__xs_call_dec(struct uiw__xs *s, struct uiw__rr_call *k, uint32_t from);
/* Decode q's reply body from byte offset `from`. */
void uiw__xs_reply_dec(struct uiw__xs *s, struct uiw__rr_req *q, uint32_t from, uint32_t threshold);
/* Bytes written by an encoding stream (its payload length). */
uint32_t uiw__xs_len(const struct uiw__xs *s);
/* Decoding: bytes consumed so far, and the position of the stream. */
uint32_t uiw__xs_pos(const struct uiw__xs *s);

/* Is the XDR one of ours (and its stream state)? */
struct uiw__xs *uiw__xs_of(XDR *xdrs);

/* The call whose arguments svc_freeargs frees on this thread (borrowed bytes). */
extern _Thread_local struct uiw__rr_call *uiw__xs_freeing;

/* ---------------------------------------------------------------- RPC headers */

/* Encode a call header (xid, CALL, 2, prog, vers, proc, then auth's credential and
 * verifier through AUTH_MARSHALL). */
bool uiw__rpc_enc_call(XDR *xdrs, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc,
                       AUTH *auth);

/* A decoded reply header. */
struct uiw__rpc_rhdr {
    uint32_t xid;
    struct opaque_auth verf;
    uint8_t verf_body[MAX_AUTH_BYTES];
};
/* Decode a reply header: RPC_SUCCESS (results follow) or the failure in *err. */
enum clnt_stat uiw__rpc_dec_reply(XDR *xdrs, struct uiw__rpc_rhdr *h, struct rpc_err *err);

/* ---------------------------------------------------------------- requester */

struct uiw__rpc_caller;

struct uiw__rpc_slot {
    struct uiw__rr_req rq; /* first */
    struct uiw__rpc_caller *caller;
    struct uiw__rpc_slot *next;
    bool in_use;
    bool async;
    bool queued_done; /* on the caller's list of ended async calls */
    /* the connection rq went out on (a reference), or NULL: set by the thread sending it,
     * cleared under the caller's lock (a slot on the resend list has none) */
    struct uiw__rr_conn *_Atomic k;
    uint64_t deadline;
    rpcproc_t proc;
    xdrproc_t xres;
    void *resp;
    uiw_rpc_done_fn done;
    void *arg;
    enum clnt_stat stat;
    struct rpc_err err;
    /* a raw call (uiw__rpc_call_raw): its reply goes to raw as it comes, no done list */
    uiw__rpc_raw_fn raw;
};

/* How a caller gets a connection (a client reconnects; a backchannel has just one). */
struct uiw__rpc_caller {
    struct uiw__rr_dev *dev;
    pthread_mutex_t lock;
    struct uiw__rr_conn *conn; /* ref held; NULL: none */
    _Atomic bool lost;         /* conn drained: reconnect (or fail) before sending */
    _Atomic bool closing;
    bool reconnect; /* may reconnect */
    /* sets conn (0) or -errno; gives up by the deadline (ns, 0: none) */
    int (*connect)(struct uiw__rpc_caller *c, uint64_t deadline);
    void *owner;
    unsigned nslots;
    struct uiw__rpc_slot *slots;
    struct uiw__rpc_slot *free;
    _Atomic unsigned busy;
    struct uiw__rpc_slot *resend;                /* orphans to send on the next connection */
    struct uiw__rpc_slot *done_head, *done_tail; /* ended async calls */
    _Atomic unsigned ndone;
    uint32_t xid;
    rpcprog_t prog;
    rpcvers_t vers;
    CLIENT *clnt;
    struct timeval timeout; /* CLSET_TIMEOUT (tv_sec < 0: use the call's) */
    uint32_t threshold;
    bool backward;
    pthread_mutex_t connect_lock;
    struct uiw__rpc_resp *bc;  /* client: its backward-call service */
    pthread_mutex_t scan_lock; /* held by the one thread in expire() */
    _Atomic uint64_t last_scan;
    /* stats */
    _Atomic uint64_t n_retrans, n_timeouts;
};

int uiw__rpc_caller_init(struct uiw__rpc_caller *c, struct uiw__rr_dev *d, unsigned nslots);
void uiw__rpc_caller_fini(struct uiw__rpc_caller *c);
/* The transport's callbacks for the requester side of a connection. */
void uiw__rpc_caller_req_done(struct uiw__rr_conn *conn, struct uiw__rr_req *q);
void uiw__rpc_caller_drained(struct uiw__rpc_caller *c, struct uiw__rr_conn *conn);

enum clnt_stat uiw__rpc_call(struct uiw__rpc_caller *c, rpcproc_t proc, xdrproc_t xargs, void *argp,
                             xdrproc_t xres, void *resp, struct timeval timeout,
                             const struct uiw_rpc_call_opts *opts, uiw_rpc_done_fn done, void *arg,
                             struct rpc_err *err, int *start_err);
/* Send msg (an encoded RPC call, its XID first) as it is, never waiting: see
 * uiw__rpc_bc_send_raw. */
int uiw__rpc_call_raw(struct uiw__rpc_caller *c, const void *msg, uint32_t len, uiw__rpc_raw_fn fn,
                      void *arg);
/* Run ended async calls' callbacks and serve backward calls; expire timed-out async
 * calls. Returns callbacks run. */
int uiw__rpc_caller_run(struct uiw__rpc_caller *c);
int uiw__rpc_caller_poll(struct uiw__rpc_caller *c, int timeout_ms);

/* ---------------------------------------------------------------- responder */

struct uiw__rpc_prog {
    rpcprog_t prog;
    rpcvers_t vers;
    void (*dispatch)(struct svc_req *, SVCXPRT *);
    bool (*cached)(rpcproc_t proc); /* NULL: every procedure but 0 (uiw__rpc_svc_cached) */
};

#define UIW__RPC_MAX_PROGS 32

struct uiw__drc;

struct uiw__rpc_resp {
    pthread_mutex_t lock;
    unsigned nprogs;
    struct uiw__rpc_prog progs[UIW__RPC_MAX_PROGS];
    /* calls ready to dispatch */
    struct uiw__rr_call *head, *tail;
    _Atomic unsigned nready;
    _Atomic uint64_t ntaken; /* calls taken to run so far */
    struct uiw__drc *drc;
    uint32_t threshold;
    struct uiw__rr_dev *dev;
    _Atomic bool stop;
};

/* The responder's per-call state: the transport's call, the SVCXPRT and svc_req. */
struct uiw__rpc_scall {
    struct uiw__rr_call k; /* first */
    struct uiw__rpc_resp *resp;
    SVCXPRT xprt;
    struct svc_req req;
    struct uiw__rpc_chdr hdr;
    struct uiw__authsys sys;
    uint32_t args_off; /* where the arguments start in the stream */
    bool replied;
    bool encoded; /* its reply was encoded (whether or not it could be sent) */
    bool lost;    /* ... and could not be sent: the connection is gone */
    struct sockaddr_storage raddr;
    struct uiw__rpc_scall *drc_waiter;
    int drc_slot; /* entry of the cache this call owns (-1: none) */
    uint32_t nborrow;
    const void *borrow[UIW__RR_MAX_CHUNKS];
};

int uiw__rpc_resp_init(struct uiw__rpc_resp *r, struct uiw__rr_dev *d, uint32_t threshold);
void uiw__rpc_resp_fini(struct uiw__rpc_resp *r);
int uiw__rpc_resp_register(struct uiw__rpc_resp *r, rpcprog_t prog, rpcvers_t vers,
                           void (*dispatch)(struct svc_req *, SVCXPRT *));
int uiw__rpc_resp_unregister(struct uiw__rpc_resp *r, rpcprog_t prog, rpcvers_t vers);
/* uiw__rpc_svc_cached's (svc_hooks.h) */
int uiw__rpc_resp_cached(struct uiw__rpc_resp *r, rpcprog_t prog, rpcvers_t vers,
                         bool (*cached)(rpcproc_t proc));
/* transport callback: queue a ready call */
void uiw__rpc_resp_ready(struct uiw__rpc_resp *r, struct uiw__rr_call *k);
/* Take one ready call and run it (decode, dispatch, reply). false when none. */
bool uiw__rpc_resp_run_one(struct uiw__rpc_resp *r);
/* Drop every queued call of a dead connection (and those not started yet). */

/* ---------------------------------------------------------------- duplicate replies */

/* entries, each with room for a reply of max_reply bytes (0: none); at most max_kept
 * replies answered REPLY_RESOURCE kept in their own buffers (of dev's pools) beyond that
 * room. */
struct uiw__drc *uiw__drc_new(uint32_t entries, uint32_t max_reply, uint32_t max_kept,
                              struct uiw__rr_dev *dev);
/* Look the call up: MISS (with claim_miss the call now owns an in-progress entry; run it), HIT (its
 * cached reply was copied into the call's reply buffer: send it), WAIT (the original
 * is still running: it will serve this one). */
enum uiw__drc_verdict uiw__drc_lookup(struct uiw__drc *d, struct uiw__rpc_scall *s,
                                      bool claim_miss);
/* Whether entries taken by uiw__drc_claim are linked: the calls the cache does not keep
 * are looked up (without claim_miss) while they are, a retry among them. */
bool uiw__drc_uncached(struct uiw__drc *d);
/* An entry for s, which runs without one (the program does not keep its procedure's
 * replies), taken when its reply is to be answered REPLY_RESOURCE: the call comes back
 * with room for it, and is answered with this run's reply rather than run again (an
 * NFSv4.1 COMPOUND whose slot keeps no reply would be refused). Nothing when an entry of
 * the same call exists. uiw__drc_done ends it as any other. */
void uiw__drc_claim(struct uiw__drc *d, struct uiw__rpc_scall *s);
/* The owner of an entry is done: keep its reply (when it qualifies: cacheable and within
 * max_reply, or answered REPLY_RESOURCE and so taken from the call) or drop the entry;
 * returns a waiting retransmission to serve (from the cache, or to run), or NULL, with
 * *cached telling which. */
struct uiw__rpc_scall *uiw__drc_done(struct uiw__drc *d, struct uiw__rpc_scall *s, bool cacheable,
                                     bool *cached);

/* ---------------------------------------------------------------- helpers */

/* Map an errno-style transport status to a clnt_stat. */
enum clnt_stat uiw__rpc_stat_of(int status, struct rpc_err *err);
uint64_t uiw__rpc_deadline(struct timeval tv);

#endif
