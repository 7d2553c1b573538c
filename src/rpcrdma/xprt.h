/*
 * The RPC-over-RDMA transport (internal interface for src/rpc).
 *
 * A device (struct uiw__rr_dev) is one RNIC context with pools of registered memory and a
 * poller; its connections (struct uiw__rr_conn) each play both roles of the protocol:
 *
 *   requester: sends calls (struct uiw__rr_req), matches their replies by XID, counts the
 *              peer's credits, registers the memory its chunks advertise and invalidates it
 *              when the reply arrives (forward calls of a client, backward calls of a
 *              server);
 *   responder: receives calls (struct uiw__rr_call), pulls their Read chunks, and sends
 *              replies, pushing DDP results into Write chunks and long replies into the
 *              Reply chunk (forward calls on a server, backward calls on a client).
 *
 * The transport knows ONC RPC only as far as RPC-over-RDMA does: the XID and, in Version
 * One, the msg_type word telling a backward call from a reply (RFC 8167). Everything else
 * (the XDR streams, RPC headers, dispatch) is the RPC layer's, which it reaches through
 * struct uiw__rr_upper.
 *
 * Progress: one thread at a time (the leader) polls the device's connections, in
 * uiw__rr_dev_wait (a server's workers: uiw__rr_dev_work); every handler of this file
 * runs there, with no lock of the caller held. Other threads post (sends are thread-safe)
 * and wait for the state they need.
 *
 * Memory: inline buffers (a header room, then data of the device's inline size) and bulk
 * buffers (size classes up to max_msg / max_ddp) are registered once and pooled (the bulk
 * ones as many as were taken at once lately, one at least up to 1 MiB:
 * uiw__rr_bulk_trim); chunks the requester
 * advertises are fast-registered per call on pooled MRs and invalidated before the call
 * ends. Nothing here allocates per message on the data path.
 */
#ifndef UIW_RPCRDMA_XPRT_H
#define UIW_RPCRDMA_XPRT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <uiw/rpc.h>
#include <uiw/rpcrdma.h>

#include "common/lock.h"
#include "common/log.h"
#include "rpcrdma/nic.h"

/* ---------------------------------------------------------------- limits */

#define UIW__RR_HDR_ROOM    1024 /* bytes for our transport header before every payload */
#define UIW__RR_MAX_CHUNKS  8    /* DDP chunks per message (Read chunks or Write chunks) */
#define UIW__RR_MAX_SEGS    16   /* segments per chunk accepted from a peer */
#define UIW__RR_MAX_RSEGS   16   /* read segments (all read chunks) accepted from a peer */
#define UIW__RR_MAX_MR      (UIW__RR_MAX_CHUNKS + 2)
#define UIW__RR_MAX_REGIONS (2 * UIW__RR_MAX_CHUNKS + 2) /* reads, writes, reply, pos0 */
#define UIW__RR_EXTRA_RECVS 8 /* receives beyond the credits (property messages) */
#define UIW__RR_NPIECES     (2 * UIW__RR_MAX_RSEGS + 2)
#define UIW__RR_NEG_MS                                                                             \
    5000 /* client: wait this long for the answer to the first                                     \
            (Version Two) message before assuming Version One */

#define UIW__RR_CLOSE_GRACE_MS                                                                     \
    2000 /* an orderly close not over by then (a peer that stopped reading) is made abortive */

#define UIW__RR_FIRST_SEND_PAUSE_MS                                                                \
    50 /* client: pause before the first message to a peer that may be Linux's svcrdma             \
          (see uiw__rr_connect) */

/* Work request ids point at a struct whose first member is this tag. */
enum uiw__rr_wr_kind {
    UIW__RR_WR_RECV = 1, /* struct uiw__rr_ibuf posted as a receive */
    UIW__RR_WR_CTRL,     /* struct uiw__rr_ibuf sent alone (errors, property messages) */
    UIW__RR_WR_REQ,      /* struct uiw__rr_req: its Send, REGs, LOCAL_INVs */
    UIW__RR_WR_CALL,     /* struct uiw__rr_call: its Reads, Writes, reply Send */
    UIW__RR_WR_MARK,     /* struct uiw__rr_conn: the marker posted once it died */
    UIW__RR_WR_IGNORE,   /* unsignaled work whose only completion would be a flush */
};
struct uiw__rr_wrid {
    uint8_t kind;
};

/* ---------------------------------------------------------------- buffers */

struct uiw__rr_conn;

/* An inline buffer: UIW__RR_HDR_ROOM bytes, then `data` (the device's inline size). */
struct uiw__rr_ibuf {
    struct uiw__rr_wrid w;
    struct uiw__rr_ibuf *next;
    struct uiw__rr_conn *conn; /* posted on (receive) */
    uint8_t *data;
    uint32_t lkey;
    uint32_t len;      /* received bytes */
    bool with_inv;     /* received by Send With Invalidate ... */
    uint32_t inv_rkey; /* ... of this STag */
    /* its memory may be resident: taken (uiw__rr_ibuf_get), or a message landed in it,
     * since it was last discarded (counted in the device's ibuf_resident) */
    bool resident;
};

/* A bulk buffer of the pool (size class cls), or a temporary one (cls < 0). */
struct uiw__rr_bulk {
    struct uiw__rr_bulk *next;
    uint8_t *p;
    uint32_t cap;
    uint32_t lkey;
    int cls;
    struct uiw__nic_mr mr; /* temporary buffers: their own registration */
};

/* A fast-register MR of a connection's pool (in its protection domain). */
struct uiw__rr_mr {
    struct uiw__rr_mr *next;
    struct uiw__rr_mr *all_next; /* every MR of the connection */
    struct uiw__rr_conn *conn;
    struct uiw__nic_mr nmr; /* nmr.rkey: key of the current / last registration */
    bool valid;             /* registered and not yet invalidated */
};

/* ---------------------------------------------------------------- requester */

/* One region a requester advertises (one segment). */
struct uiw__rr_region {
    void *addr;
    uint32_t len;
    uint32_t pos;          /* read chunks: XDR position */
    struct uiw__rr_mr *mr; /* while registered */
};

enum uiw__rr_req_state {
    UIW__RR_REQ_IDLE = 0,
    UIW__RR_REQ_QUEUED,       /* waiting for a credit or for the connection */
    UIW__RR_REQ_SENT,         /* in the XID table */
    UIW__RR_REQ_INVALIDATING, /* reply in; LOCAL_INVs outstanding */
    UIW__RR_REQ_DONE,
};

struct uiw__rr_req {
    struct uiw__rr_wrid w;
    struct uiw__rr_req *next; /* queue of the connection */
    struct uiw__rr_conn *conn;
    _Atomic int state; /* enum uiw__rr_req_state */
    uint32_t xid;
    bool backward;  /* a call from the server to the client */
    bool abandoned; /* its caller gave up (timeout): drop the reply */
    bool retried;   /* sent again after REPLY_RESOURCE */
    bool requeue;   /* send again once its MRs are invalidated */
    bool no_ddp;    /* inline only (backward calls to an INLINE peer) */
    /* outcome (when DONE) */
    int status;        /* 0: a reply is in `body`; else -errno / UIW_E_* */
    uint32_t rdma_err; /* the RDMA_ERROR code received, else 0 */
    struct uiw_rpcrdma_error err;
    /* the message: payload in ib->data or bulk->p */
    struct uiw__rr_ibuf *ib;
    struct uiw__rr_bulk *bulk;
    uint32_t len;
    /* chunks advertised */
    uint32_t nreads;
    struct uiw__rr_region reads[UIW__RR_MAX_CHUNKS];
    uint32_t nwrites;
    struct uiw__rr_region writes[UIW__RR_MAX_CHUNKS];
    uint32_t reply_max; /* wanted Reply chunk size (0: none) */
    struct uiw__rr_region reply;
    struct uiw__rr_bulk *reply_buf;
    struct uiw__rr_region pos0; /* long call: the payload as a Position-Zero Read chunk */
    uint32_t nregs;             /* MRs registered for this send */
    /* the reply */
    struct uiw__rr_ibuf *rib; /* its receive buffer (held until release) */
    const uint8_t *body;      /* the RPC reply message (inline or Reply chunk) */
    uint32_t body_len;
    uint32_t wlen[UIW__RR_MAX_CHUNKS]; /* bytes written into each Write chunk */
    uint32_t inv_pending;
    uint32_t sq_res;
};

/* ---------------------------------------------------------------- responder */

struct uiw__rr_piece {
    const uint8_t *p;
    uint32_t len;
    bool chunk; /* data of a Read chunk (a bulk buffer) */
};

/* Data the reply pushes into a Write chunk. */
struct uiw__rr_push {
    const uint8_t *src;
    uint32_t len;
    uint32_t lkey;
    uint32_t chunk;
};

struct uiw__rr_call {
    struct uiw__rr_wrid w;
    struct uiw__rr_call *next;
    struct uiw__rr_conn *conn;
    uint32_t xid, vers, proc, credit;
    bool backward;
    bool in_use;
    bool outstanding;       /* counted in conn->active (see uiw__rr_call_count_off) */
    bool finished;          /* the upper layer is done with it */
    bool sent;              /* a reply Send was posted ... */
    _Atomic bool send_done; /* ... and completed */
    int send_status;
    struct uiw__rr_ibuf *ib; /* the receive buffer */
    uint32_t hdr_len;
    /* chunks of the call */
    uint32_t inv_handle;
    uint32_t nrsegs;
    uint64_t read_charge; /* bytes of its Read chunks counted in the device's read_held */
    struct uiw_rpcrdma_read_segment rsegs[UIW__RR_MAX_RSEGS];
    uint32_t nwrites;
    uint32_t wnsegs[UIW__RR_MAX_CHUNKS];
    struct uiw_rpcrdma_segment wsegs[UIW__RR_MAX_CHUNKS][UIW__RR_MAX_SEGS];
    bool has_reply;
    uint32_t reply_nsegs;
    struct uiw_rpcrdma_segment reply_segs[UIW__RR_MAX_SEGS];
    /* Read chunks pulled into bulk buffers */
    uint32_t nbulk;
    struct uiw__rr_bulk *bulk[UIW__RR_MAX_CHUNKS + 1];
    _Atomic uint32_t reads_left;
    _Atomic uint64_t read_start_ns; /* when its Reads were posted (read timeout) */
    /* the call's RPC message as pieces of the reassembled XDR stream */
    uint32_t npieces;
    struct uiw__rr_piece pieces[UIW__RR_NPIECES];
    uint32_t body_len;
    /* the reply under construction */
    struct uiw__rr_ibuf *rib;
    struct uiw__rr_bulk *rbulk;
    uint8_t *rp;
    uint32_t rlen, rcap, rlkey;
    uint32_t npush;
    struct uiw__rr_push push[UIW__RR_MAX_CHUNKS];
    uint32_t wused[UIW__RR_MAX_CHUNKS];
    uint32_t ncopy; /* pushes whose source was the caller's memory: copies of it */
    struct uiw__rr_bulk *copy[UIW__RR_MAX_CHUNKS];
    uint32_t sq_res;
    struct uiw__rr_bulk *getbuf[4]; /* uiw_svc_getbuf buffers */
    uint32_t ngetbuf;
    uint32_t short_index, short_needed; /* a Write chunk too small (REPLY_RESOURCE) */
    bool too_small;
    bool wshort; /* ... because of a Write chunk (the encoded reply lacks that item) */
    bool no_ddp; /* reply inline only (a backward call, BRS not GENL or Version One) */
};

/* ---------------------------------------------------------------- properties */

struct uiw__rr_props {
    /* ours */
    uint32_t rbsiz, brs; /* advertised (rbsiz <= our receive buffers) */
    unsigned nlocal_x;
    struct uiw_rpc_xprop local_x[UIW_RPC_XPROP_MAX];
    /* the peer's */
    bool got_connprop;
    uint32_t peer_rbsiz;
    /* its BRS now (CONNPROP, then UPDPROP): read by callers without the lock */
    _Atomic uint32_t peer_brs;
    bool peer_has_rbsiz, peer_has_brs;     /* included in its rdma_start */
    bool peer_nochg_rbsiz, peer_nochg_brs; /* in its rdma_nochg */
    unsigned npeer_x;
    struct uiw_rpc_xprop peer_x[UIW_RPC_XPROP_MAX];
    bool peer_x_nochg[UIW_RPC_XPROP_MAX];
    /* our pending REQPROP (one at a time) */
    bool req_pending;
    _Atomic bool req_answered; /* by a RESPROP, or by an RDMA2_ERROR (req_err) */
    uint32_t req_err;          /* the errcode of an RDMA2_ERROR that answered it, else 0 */
    uint32_t req_xid;
    unsigned req_n;
    struct uiw_rpc_prop_req req[UIW_RPCRDMA_MAX_PROPS];
};

/* ---------------------------------------------------------------- connection */

enum uiw__rr_conn_state {
    UIW__RR_C_NEGOTIATING = 0, /* client: waiting for the answer to its first message */
    UIW__RR_C_READY,
    UIW__RR_C_DEAD,    /* gone; completions still flushing */
    UIW__RR_C_DRAINED, /* every work request completed: may be freed */
};

/* What the RPC layer provides to a connection. All run in the leader. */
struct uiw__rr_upper {
    size_t call_size; /* bytes of the responder's per-call struct (uiw__rr_call first) */
    /* A call (forward on a server, backward on a client) can be dispatched. */
    void (*call_ready)(struct uiw__rr_conn *c, struct uiw__rr_call *k);
    /* A request ended (reply or error): the upper layer takes it over and publishes
     * UIW__RR_REQ_DONE itself (its waiter may reuse q at once after that). */
    void (*req_done)(struct uiw__rr_conn *c, struct uiw__rr_req *q);
    /* The connection died and every work request completed: its requests still in
     * flight were handed back (requeued or failed by uiw__rr_conn_orphans). */
    void (*drained)(struct uiw__rr_conn *c);
};

struct uiw__rr_dev;

struct uiw__rr_conn {
    struct uiw__rr_dev *dev;
    struct uiw__nic_conn *nc;
    struct uiw__rr_conn *next;     /* device list (polled) */
    struct uiw__rr_conn *all_next; /* the device's counted connections (d->all) */
    bool on_all;                   /* on d->all (under d->mu) */
    const struct uiw__rr_upper *up;
    void *owner;
    _Atomic int state;
    _Atomic int refs;
    bool server; /* the passive side */
    bool armed;
    struct uiw__lock lock; /* requester and responder state below */
    /* versions */
    uint32_t vers; /* settled (0: server before the first message) */
    uint32_t vmin, vmax;
    uint32_t neg_xid;
    bool vers_fallback, vers_remembered, vers_no_answer;
    uint32_t errvers_low, errvers_high;
    /* sizes */
    uint32_t inline_recv; /* our receive buffers */
    uint32_t inline_send; /* largest message we send now */
    uint32_t send_cap;    /* our configured largest inline send */
    uint32_t ddp_threshold;
    bool peer_cm; /* RFC 8797 block received */
    struct uiw_rpcrdma_cm_private peer_cmp;
    bool peer_swi; /* the peer accepts Send With Invalidate */
    bool swi_ok;   /* we accept it (we offered it) */
    /* receives */
    uint32_t nrecv;           /* receives kept posted */
    _Atomic uint32_t rposted; /* receives outstanding on the QP */
    /* the leader's, at each trim (uiw__rr_conn_trim): n_inl_rx then, and when the memory of
     * its posted receives was last given back; room for the nrecv ids that gives back */
    uint64_t trim_rx, discard_rx;
    uint64_t *discard_ids;
    /* requester */
    uint32_t credits;   /* granted by the peer (>= 1) */
    bool credits_known; /* a valid message that is not an RDMA_ERROR set them (draft 7) */
    uint32_t req_max;   /* requested */
    uint32_t inflight;  /* requests holding a credit */
    struct uiw__rr_req *qhead, *qtail;
    struct uiw__rr_req **xtab;
    uint32_t xtab_mask;
    /* responder */
    uint32_t grant;  /* credits we grant */
    uint32_t active; /* calls received and not yet answered (reply or RDMA_ERROR) */
    uint32_t ncalls;
    /* ncalls structs of call_size, in pages of their own (uiw__pages_alloc): the first
     * calls_fresh have been used, the others are untouched (no memory) until needed */
    uint8_t *calls;
    size_t call_size;
    _Atomic uint32_t calls_fresh;
    struct uiw__rr_call *call_free;
    struct uiw__rr_call *ready_head, *ready_tail; /* (server: the upper queues them) */
    /* properties (Version Two) */
    struct uiw__rr_props props;
    /* fast-register MRs (uiw__rr_mr_get) */
    struct uiw__lock mr_lock;
    struct uiw__rr_mr *mr_free, *mrs_all;
    /* send queue accounting */
    uint32_t sq_depth;
    _Atomic uint32_t sq_used;
    /* death */
    struct uiw__rr_wrid mark;
    struct uiw__rr_wrid ignore;
    struct uiw__rr_listener *owner_listener; /* server connections */
    struct uiw__rr_conn *lnext;
    /* The server program's data of this connection (uiw__rpc_svc_conn_data), and whether
     * the connection was drained (its data handed back): under the server's lock. */
    void *svc_data;
    bool svc_data_ended;
    struct uiw__rr_call *read_wait; /* calls waiting for send queue room to pull */
    /* Replies waiting for send queue room (under lock): the leader posts them as room
     * frees (uiw__rr_replies_waiting), so that no thread waits for it. */
    struct uiw__rr_call *reply_wait, *reply_wait_tail;
    _Atomic bool replies_wait;
    /* Progress of what we send (the io timeout): messages posted or waiting to be that
     * have not completed, and completions of such messages so far. io_watch_*: the
     * listener's view of them (its thread only). */
    _Atomic uint32_t tx_pending;
    _Atomic uint64_t tx_done;
    uint64_t io_watch_done, io_watch_ns;
    bool marked, mark_done;
    int dead_reason;
    /* An orderly close this side began (uiw__rr_conn_close, not abortive): nothing is
     * posted any more; the LLP closes once the send queue drained, and the flushes that
     * follow end the connection as closed, not lost. */
    _Atomic bool closing;
    bool orderly; /* it ended in an orderly close (either side's) */
    /* decode space */
    struct uiw_rpcrdma_space sp;
    struct uiw_rpcrdma_read_segment sp_reads[UIW__RR_MAX_RSEGS];
    struct uiw_rpcrdma_write_chunk sp_writes[UIW__RR_MAX_CHUNKS];
    struct uiw_rpcrdma_segment sp_segs[(UIW__RR_MAX_CHUNKS + 1) * UIW__RR_MAX_SEGS];
    struct uiw_rpcrdma_prop sp_props[UIW_RPCRDMA_MAX_PROPS];
    /* addresses, for info */
    struct sockaddr_storage local, peer;
    bool crc;
    uint16_t ord;
    /* stats (relaxed) */
    _Atomic uint64_t n_swi_rx, n_swi_tx, n_linv, n_rchunks, n_wchunks, n_replych, n_long;
    _Atomic uint64_t n_err_tx[UIW_RPC_NERR];
    _Atomic uint64_t n_credit_viol;
    _Atomic uint64_t n_resent; /* requests sent again on this connection (ERR_VERS,
                                  REPLY_RESOURCE) */
    _Atomic uint64_t n_calls_tx, n_replies_rx, n_calls_rx, n_replies_tx, n_drc_hits;
    _Atomic uint64_t n_credit_waits;
    _Atomic uint32_t max_inflight; /* written under lock */
    _Atomic uint32_t credits_seen; /* `credits`, for the counters (written under lock) */
    _Atomic uint64_t n_rd_bytes, n_wr_bytes, n_inl_tx, n_inl_rx;
    _Atomic uint64_t n_err_rx[UIW_RPC_NERR];
    _Atomic uint64_t n_closed, n_lost; /* 1 in one of them once it ended */
    /* for log lines: the connection manager's id number and the QP number */
    uint32_t log_id, qpn;
};

/* Count n into a connection's counter (relaxed: no ordering, never a lock). What a peer
 * can see (a message sent) is counted before it is posted, and taken back if the post
 * fails, so that the counters never lag what the peer holds. */
#define UIW__RR_COUNT(ctr, n)   atomic_fetch_add_explicit(&(ctr), (n), memory_order_relaxed)
#define UIW__RR_UNCOUNT(ctr, n) atomic_fetch_sub_explicit(&(ctr), (n), memory_order_relaxed)

/* ---------------------------------------------------------------- device */

#define UIW__RR_NCLS 12 /* bulk classes: 8 KiB << cls, up to 16 MiB */

struct uiw__rr_dev_attr {
    uint32_t inline_size; /* data bytes of an inline buffer */
    uint32_t max_msg, max_ddp;
    int spin_us;
    const char *pcap_dir;
    uint64_t max_read; /* bytes of Read chunks held at once (server); 0: no bound */
    bool resident;     /* inline buffers resident from the start (uiw_rpc_xprt_attr) */
};

struct uiw__rr_dev {
    struct uiw__nic *nic;
    uint32_t ibuf_size; /* data bytes of an inline buffer */
    uint32_t max_msg, max_ddp;
    int spin_us;
    /* inline buffers written when made and never given back (not trimmed, nor discarded
     * while their connection idles) */
    bool resident;
    /* Read chunks: bytes pulled or being pulled by calls not yet released, across every
     * connection, and the most there may be (0: no bound); a call that would go over waits
     * to pull its chunks (in its connection's read_wait) */
    _Atomic uint64_t read_held;
    uint64_t max_read;
    /* pools */
    struct uiw__lock pool_lock;
    struct uiw__rr_ibuf *ibuf_free;
    struct uiw__rr_slab *slabs;
    struct uiw__rr_bulk *bulk_free[UIW__RR_NCLS];
    uint32_t bulk_count[UIW__RR_NCLS]; /* pooled buffers of the class, taken or free */
    /* taken now, and the most taken at once since the last trim (uiw__rr_bulk_trim) */
    uint32_t bulk_taken[UIW__RR_NCLS], bulk_peak[UIW__RR_NCLS];
    uint64_t bulk_trim_ns; /* the leader's: when it trims next */
    /* inline buffers taken now and the most at once since the last trim; those whose
     * memory may be resident (taken, or written, since they were last discarded) */
    uint32_t ibuf_taken, ibuf_peak;
    _Atomic uint32_t ibuf_resident;
    /* connections and the poller */
    pthread_mutex_t mu;
    pthread_cond_t cv;  /* threads waiting for a condition (uiw__rr_dev_wait) */
    pthread_cond_t wcv; /* a server's workers (uiw__rr_dev_work) */
    bool leader;
    uint64_t round;
    /* The workers' handoff (uiw__rr_dev_work): a worker that leads and finds calls runs
     * them with the lead left vacant (since `vacated`, 0 when nobody left it so), and
     * wakes nobody; one worker asleep (`watched`) times its sleep so as to take a lead
     * still vacant WATCH_NS after, or calls none was taken of for WATCH_NS (a slow call),
     * and looks again as long as a leader polls and does not sleep in the RNIC
     * (lead_asleep), or calls wait. */
    uint64_t vacated;
    unsigned wsleep; /* workers asleep on wcv */
    bool watched;
    /* handed: a thread that is not a worker led since a worker last left to run calls
     * (calls waiting may have no worker to run them) */
    bool handed;
    _Atomic bool lead_asleep;
    /* The leader sleeps as an idle one (dev.c IDLE_SLICES): the workers that do not watch
     * sleep as long. */
    _Atomic bool lead_idle;
    /* A connection's CQ is armed when its receives are posted, and again by the leader
     * once it is on the list; an event of one not on the list is not looked at (it may be
     * of one gone). joined: one joined the list, armed before the leader sleeps (and one
     * asleep wakeably is woken); unlisted_until (the leader's): such an event came, of a
     * connection about to join, perhaps, whose CQ is no longer armed: until then (a slice
     * after it) the leader sleeps wakeably, for the join to wake it. */
    _Atomic bool joined;
    uint64_t unlisted_until;
    struct uiw__rr_conn *conns;
    unsigned nconns;
    struct uiw__rr_conn *last_active; /* one on conns (or NULL): polled first by a leader */
    /* Counters: every connection is on `all` from before its peer can see it connected
     * until it is freed (after which nothing counts on it), then its counters are added
     * to `past`; the sum of both is the device's exact total (under mu). */
    struct uiw__rr_conn *all;
    struct uiw_rpc_xprt_stats past;
    /* Waiting for send queue room (connections with calls in read_wait or replies in
     * reply_wait): while there are any, whoever frees room off the leader's thread wakes the
     * waiters and the leader (uiw__rr_sq_release), and the leader sleeps wakeably. */
    _Atomic uint32_t room_waiters;
    _Atomic uint64_t n_room_wakes; /* wakes by freed room (tests) */
    _Atomic uint64_t n_slices;     /* sleeps that ran their whole slice (tests) */
    _Atomic uint64_t n_sleeps;     /* the leader found nothing within its spin and slept */
    _Atomic uint64_t n_spin_skips; /* the leader slept without spinning (dev.c SPIN_MISSES) */
    /* The leader's alone (handed over under mu): waits in a row whose spin ended in a sleep
     * (at most SPIN_MISSES), and the count of the waits that skipped it; whether its last
     * polls found a message or an RDMA Read's data (poll_conn). */
    unsigned spin_misses, spin_probe;
    bool polled_input;
    /* The leader's alone too: its sleeps in a row that ran their whole slice with nothing
     * (at most IDLE_SLICES), from which on it sleeps wakeably (dev.c). */
    unsigned idle_slices;
};

struct uiw__rr_dev *uiw__rr_dev_open(const struct uiw__rr_dev_attr *a);
void uiw__rr_dev_close(struct uiw__rr_dev *d);

/* Pools (thread-safe). */
struct uiw__rr_ibuf *uiw__rr_ibuf_get(struct uiw__rr_dev *d);
void uiw__rr_ibuf_put(struct uiw__rr_dev *d, struct uiw__rr_ibuf *b);
struct uiw__rr_bulk *uiw__rr_bulk_get(struct uiw__rr_dev *d, uint32_t len);
void uiw__rr_bulk_put(struct uiw__rr_dev *d, struct uiw__rr_bulk *b);
/* Free the pooled bulk buffers of each class beyond the most taken at once since the last
 * trim: the pool follows the recent load, not its highest; but for one of each class up
 * to 1 MiB that has one. The leader trims every few seconds. */
void uiw__rr_bulk_trim(struct uiw__rr_dev *d);
/* The memory of an inline buffer goes back to the system (its contents are lost). */
void uiw__rr_ibuf_discard(struct uiw__rr_dev *d, struct uiw__rr_ibuf *b);
/* The leader, at each trim: a connection on which nothing arrived since the last trim,
 * and something did before, gives the memory of its posted receives back to the system
 * (they stay posted: the peer's credits are untouched; the pages come back as messages
 * land in them). */
void uiw__rr_conn_trim(struct uiw__rr_conn *c);
/* The memory fields of st (inline_buffer_bytes, inline_buffer_resident, bulk_buffer_bytes):
 * the device's, now. */
void uiw__rr_dev_mem(struct uiw__rr_dev *d, struct uiw_rpc_xprt_stats *st);
/* Fast-register MRs of c's own pool (its protection domain: only c's peer can use or
 * invalidate what they register). An MR taken holds a reference on c, so the pool lives
 * until every MR is back; the pool is freed with c. */
struct uiw__rr_mr *uiw__rr_mr_get(struct uiw__rr_conn *c);
void uiw__rr_mr_put(struct uiw__rr_mr *m);
/* The lkey of registered memory of the pools covering [p, p+len), or 0. */
uint32_t uiw__rr_dev_lkey(struct uiw__rr_dev *d, const void *p, uint32_t len);

/* Drive the device until done(arg) is true or the monotonic deadline (ns; 0: none) passed:
 * one thread at a time polls (the others wait for its round). Returns 0 when done,
 * -ETIMEDOUT. done is checked under the device's mutex. */
int uiw__rr_dev_wait(struct uiw__rr_dev *d, bool (*done)(void *), void *arg, uint64_t deadline);
/* A server worker's wait: drive the device until work(arg), the count of calls waiting
 * to run (not 0 when the workers are to stop either), is not 0, or the deadline passed,
 * as uiw__rr_dev_wait, except that the worker which finds calls while it leads returns to
 * run them leaving the lead vacant, waking no other worker to lead (calls cost no thread
 * switch, however many come while it runs them): it takes the lead again when it comes back, or
 * another worker does if it has not within a short time (a slow call holds up the device's polling
 * that long at most). Calls left waiting while taken(arg), the count of calls taken to run so far,
 * stays the same that long (behind a slow call) are run by another worker then; calls that a thread
 * which is not a worker found (a caller waiting for its reply), by a worker it wakes. Returns 0
 * with work to do, -ETIMEDOUT. */
int uiw__rr_dev_work(struct uiw__rr_dev *d, unsigned (*work)(void *), uint64_t (*taken)(void *),
                     void *arg, uint64_t deadline);
/* One round of polling by whoever is free to (0 if another thread leads): returns the
 * number of completions handled. */
int uiw__rr_dev_poll(struct uiw__rr_dev *d);
/* Wake the threads waiting in uiw__rr_dev_wait so they check their condition. */
void uiw__rr_dev_kick(struct uiw__rr_dev *d);
/* For workers that are to stop (their work(arg) says so already): uiw__rr_dev_interrupt
 * ends the leader's sleep if it sleeps wakeably (an idle leader's), else it ends within a
 * slice (async-signal-safe); uiw__rr_dev_wake_all wakes every thread asleep in
 * uiw__rr_dev_work or uiw__rr_dev_wait, and the leader as the former does. */
void uiw__rr_dev_interrupt(struct uiw__rr_dev *d);
void uiw__rr_dev_wake_all(struct uiw__rr_dev *d);
/* The counters of every connection of the device, present and past, and its RNIC's. */
void uiw__rr_dev_stats(struct uiw__rr_dev *d, struct uiw_rpc_xprt_stats *st);
/* Count c among the device's connections (before its peer can see it connected), and stop
 * counting it: fold its counters into the device's past ones (fold) or drop them (a
 * connection that never came up). Thread-safe. */
void uiw__rr_dev_count(struct uiw__rr_dev *d, struct uiw__rr_conn *c);
void uiw__rr_dev_uncount(struct uiw__rr_dev *d, struct uiw__rr_conn *c, bool fold);

/* Plugging (per thread, nestable): while plugged, the sends a thread posts are queued at
 * once (every check, credit and completion as usual) but their connections' doorbells wait
 * for uiw__rr_unplug (or a flush), so a batch of replies or calls costs one system call.
 * Every unplug flushes (an inner one too), and uiw__rr_dev_wait and uiw__rr_dev_poll flush
 * first: a plugged thread never waits for a send it holds. */
void uiw__rr_plug(void);
void uiw__rr_unplug(void);
/* Ring the doorbells of what the thread holds (it stays plugged). */
void uiw__rr_plug_flush(void);
/* The same once the oldest held send waited ns or more. */
void uiw__rr_plug_flush_after(uint64_t ns);

uint64_t uiw__rr_now_ns(void);
/* Whether RDMA Reads posted at start_ns are more than lim_ns late at now_ns. A start after
 * now (Reads posted by another thread after now was read) is not late. */
static inline bool uiw__rr_read_overdue(uint64_t now_ns, uint64_t start_ns, uint64_t lim_ns)
{
    return now_ns > start_ns && now_ns - start_ns > lim_ns;
}

/* ---------------------------------------------------------------- connections */

struct uiw__rr_conn_attr {
    const struct uiw_rpc_xprt_attr *xprt; /* normalised (see uiw__rr_xprt_defaults) */
    const struct uiw__rr_upper *up;
    void *owner;
    bool remember_vers;       /* client: use and update the per-server Version One memory */
    uint32_t read_timeout_ms; /* server: a client whose RDMA Read does not complete in this
                                 time is disconnected (0: never) */
    /* Server: connections admitted at once at most (0: no limit), and an admission check
     * beside that limit (admit NULL: none). Both are asked on the listener's thread for
     * each connection request before anything is allocated for it: a request over the
     * limit, or that admit refuses, is rejected. `gone` is told (on the same thread) when
     * a connection admit let in is freed, or failed to come up. */
    uint32_t max_conns;
    bool (*admit)(void *arg, const struct sockaddr *peer);
    void (*gone)(void *arg);
    void *admit_arg;
    /* The server's listener also closes a connection on which a message it sent has not
     * completed for xprt->io_timeout_ms, or whose peer stopped within an FPDU for as long
     * (see uiw__rr_listener_run). */
};

/* Fill every zero field of *a with its default; -EINVAL for values out of range. */
int uiw__rr_xprt_defaults(struct uiw_rpc_xprt_attr *a);

/* Client: connect to dst and settle the version (blocks). NULL + *err. */
struct uiw__rr_conn *uiw__rr_connect(struct uiw__rr_dev *d, const struct sockaddr *dst,
                                     const struct uiw__rr_conn_attr *a, int *err);

/* Server: a listener of this device; accept_event handles one listener event (accepting
 * requests with the given settings). */
struct uiw__rr_listener;
struct uiw__rr_listener *uiw__rr_listen(struct uiw__rr_dev *d, const struct sockaddr *addr,
                                        const struct uiw__rr_conn_attr *a, int *err);
uint16_t uiw__rr_listener_port(const struct uiw__rr_listener *l);
/* Replace the listener's admission check (uiw__rr_conn_attr's admit, gone, admit_arg)
 * before it runs. */
void uiw__rr_listener_admission(struct uiw__rr_listener *l,
                                bool (*admit)(void *arg, const struct sockaddr *peer),
                                void (*gone)(void *arg), void *arg);
/* Handle listener events for up to timeout_ms (-1: no limit): 1 when something happened,
 * 0 (timeout, or uiw__rr_listener_wake) or -errno. Each round also ends the connections
 * whose peer left an RDMA Read of ours unanswered for read_timeout_ms, those on which
 * messages we sent have been waiting to go out with none completing for io_timeout_ms
 * (a peer that stopped reading), and those whose peer sent part of an FPDU and nothing
 * more of it for io_timeout_ms; while it has connections it waits at most a tenth of the
 * shorter timeout (10 ms to 1 s) before it looks again, and without any as long as
 * timeout_ms allows. A connection freed on another thread wakes it. */
int uiw__rr_listener_run(struct uiw__rr_listener *l, int timeout_ms);
/* A uiw__rr_listener_run waiting now, or the next one, returns at once (async-signal-
 * safe). */
void uiw__rr_listener_wake(struct uiw__rr_listener *l);
/* Close every connection (orderly; abortively those a peer holds up past the grace
 * time) and wait until each is freed, then free l. Calls hold their connection until they
 * finish: drain (when not NULL) runs each round to finish those queued to the owner. */
void uiw__rr_listener_close(struct uiw__rr_listener *l, void (*drain)(void *arg), void *arg);
/* Tests: the listener's thread pauses this long between accepting a connection and
 * listing it for polling, as a descheduled thread would (0: not at all). */
extern uint64_t uiw__rr_accept_pause_ns;

void uiw__rr_conn_get(struct uiw__rr_conn *c);
/* Drop a reference; the last one (after the connection drained) frees it. */
void uiw__rr_conn_put(struct uiw__rr_conn *c);
/* Close: abortive (a Terminate, then everything flushes; for errors) or orderly (what is
 * posted completes and goes out, then the LLP closes without a Terminate, then the rest
 * flushes; the peer sees an orderly disconnect). An abortive close after an orderly one
 * that has not ended yet (a peer that stopped reading) ends it at once. */
void uiw__rr_conn_close(struct uiw__rr_conn *c, bool abortive);
/* The connection ended under us (its work requests flush, or the connection manager said
 * so with status, 0 for an orderly close): closed when no Terminate went either way,
 * else lost. */
void uiw__rr_conn_ended(struct uiw__rr_conn *c, int status);
int uiw__rr_conn_info(struct uiw__rr_conn *c, struct uiw_rpc_conn_info *info);
/* Add c's counters to *st (credits: the larger); rnic untouched. */
void uiw__rr_conn_stats_add(struct uiw__rr_conn *c, struct uiw_rpc_xprt_stats *st);
bool uiw__rr_conn_usable(const struct uiw__rr_conn *c);

/* ---------------------------------------------------------------- requester */

/* Prepare q for encoding: an inline buffer for its payload (-ENOMEM). */
int uiw__rr_req_begin(struct uiw__rr_dev *d, struct uiw__rr_req *q);
/* Grow q's payload buffer to hold at least need bytes (moves to a bulk buffer). */
int uiw__rr_req_grow(struct uiw__rr_dev *d, struct uiw__rr_req *q, uint32_t need);
static inline uint8_t *uiw__rr_req_payload(struct uiw__rr_req *q)
{
    return q->bulk ? q->bulk->p : q->ib->data;
}
static inline uint32_t uiw__rr_req_cap(const struct uiw__rr_dev *d, const struct uiw__rr_req *q)
{
    return q->bulk ? q->bulk->cap : d->ibuf_size;
}
/* Whether the peer takes backward calls now: not a Version Two client whose BRS (in its
 * CONNPROP, or an UPDPROP since) is NONE. */
static inline bool uiw__rr_peer_takes_calls(const struct uiw__rr_conn *c)
{
    return c->vers != 2 || atomic_load(&c->props.peer_brs) != UIW_RDMA2_BKREQSUP_NONE;
}
/* Whether q may go inline only: a backward call to a client that takes backward calls
 * without chunks (Version One, RFC 8167; Version Two with a BRS other than GENL). */
static inline bool uiw__rr_req_inline_only(const struct uiw__rr_conn *c,
                                           const struct uiw__rr_req *q)
{
    return q->backward && (c->vers == 1 || c->props.peer_brs != UIW_RDMA2_BKREQSUP_GENL);
}
/* Whether a reply of up to reply_max bytes (its RPC message) can come inline, with room
 * for its transport header: within the receive size the peer knows of ours (Version Two:
 * the RBSIZ we advertise), and within what the peer said it sends (RFC 8797), or the
 * Version One default of 1024 bytes when it said nothing. Beyond it a reply needs a Reply
 * chunk. */
#define UIW__RR_REPLY_HDR_ROOM 64
static inline bool uiw__rr_reply_fits_inline(const struct uiw__rr_conn *c, uint32_t reply_max)
{
    uint32_t lim = c->vers == 2 ? c->props.rbsiz : c->inline_recv;
    if (c->peer_cm && c->peer_cmp.send_size < lim)
        lim = c->peer_cmp.send_size;
    else if (!c->peer_cm && c->vers == 1 && lim > 1024)
        lim = 1024;
    return (uint64_t)reply_max + UIW__RR_REPLY_HDR_ROOM <= lim;
}
/* Send q on c (its XID, payload and regions set): now if a credit is free, else queued
 * (sent as replies return credits). 0, -ENOTCONN (c dead), -EMSGSIZE (too large for the
 * limits or for what the peer accepts in this direction), -EAGAIN. */
int uiw__rr_req_send(struct uiw__rr_conn *c, struct uiw__rr_req *q);
/* Give up waiting for q (its caller timed out). True when q was only queued on c: it
 * ends here (DONE, -ETIMEDOUT) and is its owner's again. Otherwise, if q went out on c,
 * c is reset before this returns (the peer can no longer reach q's memory) and q comes
 * back through req_done, marked abandoned; a reply that comes later is dropped. */
bool uiw__rr_req_abandon(struct uiw__rr_conn *c, struct uiw__rr_req *q);
/* Every region q may advertise (reads, writes, reply, Position-Zero) into all[]. */
unsigned uiw__rr_req_regions(struct uiw__rr_req *q, struct uiw__rr_region **all);
/* Return q's buffers and MRs to the pools (after DONE). */
void uiw__rr_req_release(struct uiw__rr_dev *d, struct uiw__rr_req *q);
/* Take back the requests still queued or in flight on a dead connection (in XID order
 * of sending) so they can be sent on another one: their MRs are reset, state IDLE.
 * Returns a list linked by `next`. */
struct uiw__rr_req *uiw__rr_conn_orphans(struct uiw__rr_conn *c);

/* ---------------------------------------------------------------- responder */

/* Start the reply of k (an inline buffer). -ENOMEM. */
int uiw__rr_reply_begin(struct uiw__rr_call *k);
int uiw__rr_reply_grow(struct uiw__rr_call *k, uint32_t need);
/* Take k's encoded reply away from it, without a copy: its buffer (the bulk buffer it
 * grew into, or else its inline buffer) goes to *b or *ib, the other stays NULL, and k
 * no longer has a reply. Only for a reply nothing was posted from (one answered with
 * an RDMA_ERROR instead). Return the buffer with uiw__rr_bulk_put / uiw__rr_ibuf_put. */
void uiw__rr_reply_take(struct uiw__rr_call *k, struct uiw__rr_ibuf **ib, struct uiw__rr_bulk **b);
/* Make len bytes at the start of such a buffer (one of ib, b) k's reply, as if encoded
 * into it; k owns the buffer then. 0, or -ENOMEM (the buffer stays the caller's). */
int uiw__rr_reply_give(struct uiw__rr_call *k, struct uiw__rr_ibuf *ib, struct uiw__rr_bulk *b,
                       uint32_t len);
/* Offer len bytes at src (a DDP-eligible result) to the next Write chunk: true when they
 * will go there (the caller then leaves them and their pad out of the inline stream).
 * Registered memory of the call or the pools goes as it is; other memory (the caller's,
 * which it may reuse once its reply is encoded) is copied into a buffer of the call. */
bool uiw__rr_reply_ddp(struct uiw__rr_call *k, const void *src, uint32_t len);
/* Send the reply (inline, or in the Reply chunk), or the RDMA_ERROR the draft prescribes
 * when the call's chunks cannot hold it (REPLY_RESOURCE / ERR_CHUNK). Returns 0, 1 when
 * an error reply went instead, or a negative code (connection gone). Never waits: a reply
 * the send queue has no room for yet waits on its connection (c->reply_wait), and k's
 * buffers return once it went out or the connection ended (uiw__rr_call_finish). */
int uiw__rr_reply_send(struct uiw__rr_call *k);
/* Whether k's reply as encoded so far can go out (inline, or in the requester's Reply
 * chunk): false when uiw__rr_reply_send would answer REPLY_RESOURCE (Version Two) or
 * ERR_CHUNK for want of room (or may: a reply within a header's length of the inline
 * size). */
bool uiw__rr_reply_fits(const struct uiw__rr_call *k);
/* Send an RDMA_ERROR for k (errcode of its version). */
int uiw__rr_call_error(struct uiw__rr_call *k, uint32_t errcode);
/* The upper layer is done with k: its buffers return once its reply Send completed. */
void uiw__rr_call_finish(struct uiw__rr_call *k);
/* Registered memory for a result (uiw_svc_getbuf), released with the call. */
void *uiw__rr_call_getbuf(struct uiw__rr_call *k, size_t len);
/* Whether p lies in k's receive buffer or one of its Read chunk buffers (data borrowed by
 * uiw_xdr_bytes). */
bool uiw__rr_call_owns(const struct uiw__rr_call *k, const void *p);

/* ---------------------------------------------------------------- properties */

/* Requests and updates of transport properties (Version Two); see uiw/rpc.h. */
int uiw__rr_request_props(struct uiw__rr_conn *c, struct uiw_rpc_prop_req *req, unsigned n,
                          int timeout_ms);
int uiw__rr_update_props(struct uiw__rr_conn *c, const struct uiw_rpc_prop_req *now, unsigned n);
int uiw__rr_peer_xprop(struct uiw__rr_conn *c, uint32_t which, void *buf, size_t cap);

/* ---------------------------------------------------------------- internal to rpcrdma */

/* in.c: a receive's completion finds c->rposted already counted down (dev.c's refill) */
void uiw__rr_conn_complete(struct uiw__rr_conn *c, const struct uiw__nic_wc *wc);
/* Retry the calls waiting for send queue room to pull their Read chunks (c->read_wait);
 * on a dead connection they end. Leader only. */
void uiw__rr_pull_waiting(struct uiw__rr_conn *c);
/* k no longer counts among the calls the peer has outstanding (c->lock held): once, when
 * its reply or its RDMA_ERROR goes, or when it ends without either, whichever comes
 * first. A call counted off twice would let the peer run over its credits unseen. */
static inline void uiw__rr_call_count_off(struct uiw__rr_conn *c, struct uiw__rr_call *k)
{
    if (k->outstanding) {
        k->outstanding = false;
        c->active--;
    }
}
/* out.c */
int uiw__rr_post(struct uiw__rr_conn *c, struct uiw__nic_send *wr);
int uiw__rr_send_ctrl(struct uiw__rr_conn *c, const struct uiw_rpcrdma_hdr *h);
int uiw__rr_send_error(struct uiw__rr_conn *c, uint32_t xid, uint32_t vers, uint32_t errcode,
                       const struct uiw_rpcrdma_error *e);
void uiw__rr_kick_queue(struct uiw__rr_conn *c);
void uiw__rr_req_finish_inv(struct uiw__rr_conn *c, struct uiw__rr_req *q);
void uiw__rr_call_sent(struct uiw__rr_conn *c, struct uiw__rr_call *k, bool ok);
bool uiw__rr_sq_reserve(struct uiw__rr_conn *c, uint32_t n);
/* Free n entries; waiters for room are woken at once (see uiw__rr_dev.room_waiters):
 * on the fast path (nobody waits, or the leader's own completions) one atomic load more. */
void uiw__rr_sq_release(struct uiw__rr_conn *c, uint32_t n);
/* Post the replies waiting for send queue room while there is room; on a dead or closing
 * connection they end unsent. Leader only. */
void uiw__rr_replies_waiting(struct uiw__rr_conn *c);
/* Whether this thread leads its device's polling now. */
bool uiw__rr_leading(void);
/* conn.c */
void uiw__rr_conn_died(struct uiw__rr_conn *c, int reason);
/* "ERR_VERS", "ERR_CHUNK", "BAD_XDR", ... of an errcode in a version (for log lines). */
const char *uiw__rr_err_name(uint32_t vers, uint32_t code);
/* A call slot for a call that arrived: a free one, else one never used yet; NULL when
 * all ncalls are taken (c->lock held). */
struct uiw__rr_call *uiw__rr_call_take(struct uiw__rr_conn *c);
int uiw__rr_post_recvs(struct uiw__rr_conn *c);
void uiw__rr_vers_settled(struct uiw__rr_conn *c, uint32_t vers);
uint32_t uiw__rr_credit_out(const struct uiw__rr_conn *c, bool reply_dir);
/* props.c */
void uiw__rr_props_init(struct uiw__rr_conn *c);
int uiw__rr_send_connprop(struct uiw__rr_conn *c);
void uiw__rr_props_rx(struct uiw__rr_conn *c, const struct uiw_rpcrdma_hdr *h);
/* An RDMA2_ERROR h (c->lock held): true when it answers our pending REQPROP, which then
 * ends with it; call_too says a call in flight has its xid as well. */
bool uiw__rr_props_error(struct uiw__rr_conn *c, const struct uiw_rpcrdma_hdr *h, bool call_too);
void uiw__rr_props_sizes(struct uiw__rr_conn *c);
/* the per-server memory of Version One answers */
bool uiw__rr_vmem_v1(const struct sockaddr *sa);
void uiw__rr_vmem_set(const struct sockaddr *sa, bool v1);

#endif
