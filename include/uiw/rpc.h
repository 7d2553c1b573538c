/*
 * uiw RPC: ONC RPC (RFC 5531) over RPC-over-RDMA, Version Two
 * (draft-cel-nfsv4-rpcrdma-version-two-03) with fallback to Version One (RFC 8166, RFC 8167,
 * RFC 8797), on uiw's user-space iWARP RNIC.
 *
 * Shapes are libtirpc's, so that rpcgen-generated code runs unchanged:
 *
 *   - a client is a libtirpc CLIENT: clnt_call(), clnt_control(), clnt_geterr(),
 *     clnt_freeres(), clnt_destroy() and rpcgen's client stubs work on it; it is safe with
 *     many threads and many calls in flight, and has an asynchronous call as well;
 *   - a server runs rpcgen-generated dispatch routines
 *     `void prog_1(struct svc_req *rqstp, SVCXPRT *transp)`: the SVCXPRT handed to them is
 *     the transport of one call, so svc_getargs(), svc_sendreply(), svc_freeargs() and
 *     svcerr_*() of libtirpc work on it, with libtirpc's xdr_* routines.
 *
 * Compile with libtirpc's headers (`pkg-config --cflags libtirpc`: -I/usr/include/tirpc).
 *
 * Direct data placement. An opaque or string of at least `ddp_threshold` bytes moves by
 * RDMA instead of being copied through the message (RFC 8166 sections 3.4-3.5):
 *   - arguments: the client registers the caller's bytes and advertises them as a Read
 *     chunk at their XDR position; the server pulls them with RDMA Read into registered
 *     buffers of its own. The length word stays inline; the data and its XDR pad do not.
 *   - results: the caller names, in uiw_rpc_call's options, the buffers DDP-eligible
 *     results may land in (in the order the results come); each becomes a Write chunk
 *     registered on the caller's memory, and the server's RDMA Write places the data there.
 *     When the result structure's opaque points at that same buffer, decoding copies
 *     nothing; a result opaque left NULL is allocated by xdr_bytes and filled from the
 *     chunk, as libtirpc would fill it from the stream. Without named buffers (clnt_call,
 *     rpcgen's stubs) large results come in the reply stream: inline, or in a Reply chunk
 *     (see uiw_rpc_call_opts.reply_max and REPLY_RESOURCE).
 *   - messages larger than the peer's receive buffers go as a Position-Zero Read chunk
 *     (long call) or in the Reply chunk (long reply), decided by the peer's receive size.
 * Every memory registration a client makes for a call is invalidated (by the server's
 * Send With Invalidate when the server offers it, else by the client) before the call
 * returns: no STag stays remotely accessible after its RPC.
 *
 * Errors: functions returning int give 0 (or a count) or a negative errno / UIW_E_* code
 * (error.h); constructors return NULL and set errno; calls return libtirpc's
 * enum clnt_stat, with details through clnt_geterr() (per thread: the last call this
 * thread made on that client).
 */
#ifndef UIW_RPC_H
#define UIW_RPC_H

#include <rpc/rpc.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <uiw/error.h>
#include <uiw/export.h>
#include <uiw/rpcrdma.h>
#include <uiw/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The NFS-RDMA port (RFC 5666 section 11.1), the default of the tools. */
#define UIW_RPCRDMA_PORT 20049

/* ---------------------------------------------------------------------------------------
 * Transport settings (client and server)
 * ------------------------------------------------------------------------------------- */

/* Backward Request Support advertised in Version Two (property BRS, 2). */
enum uiw_rpc_brs {
    UIW_RPC_BRS_DEFAULT = 0, /* client: INLINE; server: what the peer offers */
    UIW_RPC_BRS_NONE,        /* no backward calls */
    UIW_RPC_BRS_INLINE,      /* backward calls inline only */
    UIW_RPC_BRS_GENL,        /* backward calls with chunks, as forward ones */
};

/* An experimental transport property (ids UIW_RPC_XPROP_MIN..0xFFFFFFFF, draft section
 * 5.4.2): sent in this side's CONNPROP, readable by the peer. */
#define UIW_RPC_XPROP_MIN  4294967040u
#define UIW_RPC_XPROP_MAX  8  /* experimental properties per side */
#define UIW_RPC_XPROP_DATA 64 /* bytes of data per experimental property */
struct uiw_rpc_xprop {
    uint32_t which;
    uint32_t len;
    uint8_t data[UIW_RPC_XPROP_DATA];
};

/* All zero = the defaults named. */
struct uiw_rpc_xprt_attr {
    /* RPC-over-RDMA versions spoken: vers_min..vers_max within 1..2 (0 -> 1 and 2).
     * Client: its first message has version vers_max; a server's ERR_VERS moves the
     * connection to the highest version of both ranges. Server: a message of a version
     * outside the range is answered with ERR_VERS (vers_max 1: a Version One only
     * server, as `--vers1-only`). */
    uint32_t vers_min, vers_max;
    /* Size of each receive buffer: the largest message accepted inline, advertised in
     * RFC 8797 private data and as RBSIZ (0 -> 4096; 1024..262144, multiple of 1024).
     * Where Version Two may be spoken (vers_max 2) it is at least 4096, the size every
     * Version Two receiver takes (a peer may send that much before, or without, reading
     * our RBSIZ): a smaller value is raised to it. */
    uint32_t inline_recv;
    /* Largest message sent inline (0 -> 4096), lowered to the peer's receive size. */
    uint32_t inline_send;
    /* Client: credits requested, i.e. most calls in flight (0 -> 128, at most 1024).
     * Server: most credits granted to each connection (0 -> 128, at most 1024): never
     * more than the receives it has posted, at least 1. */
    uint32_t credits;
    /* Backward direction. Client: backward calls it serves at once (its grant to the
     * server; 0 -> 8, at most 64). Server: backward calls it asks for (0 -> 8). */
    uint32_t bc_credits;
    /* Client: Backward Request Support advertised (Version Two). With NONE, a backward
     * call a server sends anyway is refused with RDMA2_ERR_SYSTEM and never runs. A
     * peer's property request (REQPROP) may lower it, never raise it. */
    enum uiw_rpc_brs brs;
    /* An opaque or string of at least this many bytes moves by RDMA (a chunk) instead of
     * inline (0 -> 1024; at least 64). */
    uint32_t ddp_threshold;
    /* Largest RPC message body (without DDP data) sent or accepted as a long call or
     * long reply (0 -> 1 MiB), and largest total of DDP data in one message (0 ->
     * 16 MiB). Larger ones fail (client: RPC_CANTSEND / RPC_CANTDECODERES; server: the
     * error of the spec, BAD_XDR / ERR_CHUNK for calls, REPLY_RESOURCE for replies). */
    uint32_t max_msg, max_ddp;
    bool crc;                     /* ask for MPA CRC32c */
    bool no_send_with_invalidate; /* do not offer (RFC 8797) or use remote invalidation */
    uint32_t connect_timeout_ms;  /* TCP + MPA handshake (0 -> 10000) */
    /* A connection that makes no progress for this long is closed (0 -> 60000 ms, the
     * NFS server's TCP io timeout): it is the TCP_USER_TIMEOUT of its socket (data
     * unacknowledged, or a peer whose receive window stays closed), and a server closes a
     * connection on which a message it sent (a reply, an RDMA_ERROR) has not gone out in
     * that time (a peer that stopped reading), or whose peer sent part of a message (of
     * an FPDU) and nothing more of it in that time. Meanwhile that connection holds no
     * thread: a reply waits on its connection, not in the procedure that sent it. */
    uint32_t io_timeout_ms;
    const char *pcap_dir; /* capture connections here (NULL: env UIW_PCAP_DIR) */
    /* Busy-poll the completion queue this long before sleeping (0 -> 50 us; negative:
     * never spin). Spinning trades CPU for latency. */
    int spin_us;
    /* Inline buffers (the receives posted, the messages sent inline) resident from the
     * start, as a hardware RNIC's registered memory is pinned: written when made, in 2 MiB
     * blocks (huge pages where the system offers them), and never given back while the
     * client or server lives. A connection's receives take their buffers in turn, so
     * without it each of its first calls (one per receive posted: credits plus
     * bc_credits) lands in pages never touched and waits for page faults; with it that
     * memory (about inline_recv times the receives posted, rounded up to 2 MiB) is used
     * from the first call on, idle or not. Default (false): a buffer costs memory only
     * once a message lands in it, and an idle connection's posted buffers give theirs
     * back (the choice for a server of many connections). */
    bool resident;
    /* Experimental properties of this side (Version Two CONNPROP). */
    unsigned nxprops;
    struct uiw_rpc_xprop xprops[UIW_RPC_XPROP_MAX];
};

/* ---------------------------------------------------------------------------------------
 * What a connection settled (client or server side)
 * ------------------------------------------------------------------------------------- */

struct uiw_rpc_conn_info {
    uint32_t vers;        /* RPC-over-RDMA version in use: 1 or 2 (0: not settled yet) */
    bool vers_fallback;   /* client: it went on in Version One although it can speak Version
                             Two: its first message was Version Two and the peer answered
                             ERR_VERS or did not answer in time (vers_no_answer), or the
                             remembered answer of an earlier connection to this server made it
                             start in Version One (vers_remembered) */
    bool vers_remembered; /* the latter: started in Version One at once */
    bool vers_no_answer;  /* no answer to the first message came within 5 s (or the connect
                             timeout, if shorter): Version One assumed (draft 7.2); an ERR_VERS
                             answering it later still fills errvers_low/high */
    uint32_t errvers_low; /* the range of that ERR_VERS (0 and 0: none came) */
    uint32_t errvers_high;
    uint32_t credits;                      /* forward credits: granted by the server (client side),
                                              granted to the client (server side) */
    uint32_t bc_credits;                   /* backward credits granted (client: to the server) */
    uint32_t inline_send;                  /* largest message sent inline, in effect */
    uint32_t inline_recv;                  /* our receive buffer size */
    bool peer_cm_private;                  /* the peer sent RFC 8797 private data ... */
    struct uiw_rpcrdma_cm_private peer_cm; /* ... this */
    bool peer_connprop;                    /* Version Two: the peer's CONNPROP arrived ... */
    uint32_t peer_rbsiz;                   /* ... its properties (the defaults until then) */
    uint32_t peer_brs;                     /* enum uiw_rpcrdma_bkreqsup */
    uint32_t local_rbsiz;
    uint32_t local_brs;
    bool remote_invalidation; /* replies may use Send With Invalidate (ours / theirs) */
    bool crc;                 /* MPA CRC in use */
    struct sockaddr_storage local, peer;
};

/* ---------------------------------------------------------------------------------------
 * Transport counters (client and server side)
 * ------------------------------------------------------------------------------------- */

/* The RPC-over-RDMA transport's counters: of one connection (uiw_svc_xprt_stats), or
 * summed over every connection of a client handle (uiw_rpc_clnt_xprt_stats) or of a
 * server (uiw_rpc_svc_xprt_stats), present and past. Monotonic except the credit fields,
 * which are the largest value over the connections counted. Each connection is a
 * requester for the calls it sends (a client's forward calls, a server's backward calls)
 * and a responder for the calls it receives. Reading them never slows the data path.
 * They never lag what the peer holds: a connection is counted before the peer can see it
 * accepted, and a message sent before it goes on the wire, so once a client holds a reply
 * its server's counters include that reply, its call and its connection (and the
 * client's own include the call). A connection's counters stay in the sum after it
 * closed. */
#define UIW_RPC_NERR 7 /* errors_* index: the errcode, 1..6 (enum uiw_rpcrdma_errcode) */
struct uiw_rpc_xprt_stats {
    uint64_t connections; /* established (a client's first and each reconnection) */
    uint64_t closed;      /* of them, ended by an orderly close of either side (everything
                             posted completed, the LLP closed, no Terminate either way; a peer
                             whose TCP ends without a Terminate counts here too) */
    uint64_t lost;        /* ended otherwise: a Terminate sent or received (an abortive close
                             of either side, a protocol error), a failed work request */
    /* requester */
    uint64_t calls_sent;           /* RPC calls sent, each transmission counted */
    uint64_t replies_received;     /* replies (not RDMA_ERROR) matched to a call in flight */
    uint64_t retransmits;          /* calls sent again with their XID: on a new connection after
                                      a lost one (client), after ERR_VERS or REPLY_RESOURCE */
    uint64_t timeouts;             /* calls that failed at their timeout (a client handle's; not
                                      counted for a server's backward calls) */
    uint64_t remote_invalidations; /* STags of its calls the peer invalidated (Send With
                                      Invalidate) ... */
    uint64_t local_invalidations;  /* ... and those it invalidated itself (LOCAL_INV) */
    /* responder */
    uint64_t calls_received;       /* calls accepted (within the credits granted) */
    uint64_t replies_sent;         /* replies sent (not RDMA_ERROR) */
    uint64_t drc_hits;             /* calls answered from the duplicate-reply cache (a
                                      server's; a client's for its backward calls) */
    uint64_t send_with_invalidate; /* replies that invalidated the requester's STag */
    uint64_t credit_violations;    /* connections closed for exceeding the credits granted */
    /* credits (RFC 8166 section 4.3.1) */
    uint32_t credits_granted_by_peer; /* forward calls the peer lets this side have in flight */
    uint32_t credits_granted_to_peer; /* calls this side lets the peer have in flight */
    uint32_t credits_max_inflight;    /* most calls this side had in flight at once */
    uint64_t credit_waits;            /* calls that had to wait for a credit (all were in use) */
    /* chunks (RFC 8166 section 3.4), of calls sent or received */
    uint64_t read_chunks;  /* Read chunks of DDP-eligible arguments */
    uint64_t write_chunks; /* Write chunks (a requester counts those it offered, a responder
                              those it wrote into) */
    uint64_t reply_chunks; /* Reply chunks offered (requester) / long replies sent (responder) */
    uint64_t long_calls;   /* Position-Zero Read chunks (calls too long to go inline) */
    /* bytes */
    uint64_t rdma_read_bytes;       /* moved by RDMA Read: Read chunks (Position-Zero included) this
                                       side pulled, or a requester's that the peer pulled (counted
                                       when the reply came) */
    uint64_t rdma_write_bytes;      /* moved by RDMA Write: Write and Reply chunks this side wrote,
                                       or a requester's that the peer wrote (as its reply says) */
    uint64_t inline_bytes_sent;     /* RPC-over-RDMA messages sent by Send (headers included) */
    uint64_t inline_bytes_received; /* ... received */
    /* Times a thread polling for completions (a client's callers, a server's workers) found
     * none within its spin (uiw_rpc_xprt_attr.spin_us) and slept until the next one: each
     * costs a wake-up on the path of what it waited for. Counted per context, as rnic. */
    uint64_t sleeps;
    /* Of those sleeps, the ones taken without spinning first: after a few waits in a row
     * that their spin did not end (what they waited for came later), the poller sleeps at
     * once, but for one wait in 8 that spins to learn whether it would end it again. */
    uint64_t spins_skipped;
    /* RDMA_ERROR messages by errcode (UIW_RDMA_ERR_VERS, UIW_RDMA_ERR_CHUNK / BAD_XDR, ...) */
    uint64_t errors_sent[UIW_RPC_NERR];
    uint64_t errors_received[UIW_RPC_NERR];
    /* Not counters: the memory the transport holds now, for every connection of the
     * client or server (of a connection's server, for uiw_svc_xprt_stats). Its inline
     * buffers (each receive posted, each message sent inline), in bytes mapped, and of
     * those the bytes resident now: a buffer's pages are resident once a message as long
     * has landed in them, and go back to the system when their connection idles or when
     * a burst that needed them is over (unless uiw_rpc_xprt_attr.resident). Its pooled
     * buffers for chunks' data, in bytes mapped (resident as far as the longest chunk
     * each has carried). */
    uint64_t inline_buffer_bytes;
    uint64_t inline_buffer_resident;
    uint64_t bulk_buffer_bytes;
    /* The RNIC counters (uiw_query_context_stats) of the context the connections run on:
     * a client's own (every connection it made); a server's, for the server and for each
     * of its connections (the RNIC counts per context, not per QP). */
    struct uiw_context_stats rnic;
};

/* ---------------------------------------------------------------------------------------
 * Client
 * ------------------------------------------------------------------------------------- */

struct uiw_rpc_clnt_attr {
    struct uiw_rpc_xprt_attr xprt;
    /* A thread of the client's own runs completions (asynchronous calls' callbacks and
     * backward calls); without it they run in the threads that call clnt_call,
     * uiw_rpc_call, uiw_rpc_call_async or uiw_rpc_clnt_poll. */
    bool progress_thread;
    /* Reconnect after a lost connection and retransmit the calls in flight with their
     * XIDs (default); with no_reconnect they fail with RPC_CANTRECV instead. */
    bool no_reconnect;
    /* Forget the Version One answer of earlier connections to this server (start every
     * connection with a Version Two message). */
    bool no_vers_memory;
};

/* Connect to an RPC-over-RDMA server (host: a name or address; port: 0 means
 * UIW_RPCRDMA_PORT, the NFS-RDMA port) for program prog, version vers, and settle the RPC-over-RDMA
 * version (draft section 7: the first message is Version Two unless xprt.vers_max is 1
 * or the server answered ERR_VERS before). cl_auth is AUTH_NONE (authnone_create());
 * replace it (e.g. authunix_create_default()) before calling; clnt_destroy destroys it.
 * clnt_destroy closes the connection in order (what is posted goes out, then the LLP
 * closes without a Terminate; abortively only when the server holds it up for 2 s); calls
 * still in flight fail.
 * NULL + errno: EINVAL, ECONNREFUSED, ETIMEDOUT, EHOSTUNREACH, EPROTO (the peer spoke no
 * RPC-over-RDMA version we speak), ENOMEM. */
UIW_EXTERN CLIENT *uiw_rpc_clnt_create(const char *host, uint16_t port, rpcprog_t prog,
                                       rpcvers_t vers, const struct uiw_rpc_clnt_attr *attr);

/* A buffer of the caller for a DDP-eligible result (see the top of this file). */
#define UIW_RPC_MAX_DDP 8
struct uiw_rpc_ddp_buf {
    void *addr;
    uint32_t len;
};

/* Per-call options of uiw_rpc_call / uiw_rpc_call_async (NULL: none). */
struct uiw_rpc_call_opts {
    /* Largest reply expected: when it exceeds what the server can send inline, a Reply
     * chunk of this size is offered (registered memory of the client's pool). Without
     * it a reply that does not fit inline gets REPLY_RESOURCE from a Version Two server
     * (the call is sent again once, with the XID, with a Reply chunk of the size asked
     * for) or ERR_CHUNK from a Version One server (RPC_CANTRECV). */
    uint32_t reply_max;
    /* Where DDP-eligible results may land, in the order of the results (Write chunks).
     * A result shorter than ddp_threshold may come inline instead; one longer than its
     * buffer is never written past it and fails the call (RPC_CANTDECODERES; from a
     * Version One server, which can only answer ERR_CHUNK: RPC_CANTRECV). */
    unsigned nresult_bufs;
    struct uiw_rpc_ddp_buf result_bufs[UIW_RPC_MAX_DDP];
};

/* clnt_call with options (same semantics as clnt_call: timeout is the whole call). */
UIW_EXTERN enum clnt_stat uiw_rpc_call(CLIENT *clnt, rpcproc_t proc, xdrproc_t xargs, void *argp,
                                       xdrproc_t xres, void *resp, struct timeval timeout,
                                       const struct uiw_rpc_call_opts *opts);

/* Called once per asynchronous call when it ends: stat RPC_SUCCESS with *resp decoded,
 * or the failure (the details in *err). Runs in a thread that drives the client (see
 * progress_thread), never inside uiw_rpc_call_async itself; it may start calls. */
typedef void (*uiw_rpc_done_fn)(CLIENT *clnt, void *arg, enum clnt_stat stat,
                                const struct rpc_err *err);

/* Start a call and return: the arguments are encoded before it returns, except their
 * DDP-eligible bytes (see the top), which the server reads from argp's memory: those,
 * and resp, must stay valid until `done` runs. Waits (driving the client) while every
 * credit is in use. Returns 0, or -ETIMEDOUT (no credit came free within timeout),
 * -ENOTCONN (the client is closed), -EINVAL, -EMSGSIZE (the arguments do not encode
 * within the limits), -ENOMEM. */
UIW_EXTERN int uiw_rpc_call_async(CLIENT *clnt, rpcproc_t proc, xdrproc_t xargs, void *argp,
                                  xdrproc_t xres, void *resp, struct timeval timeout,
                                  const struct uiw_rpc_call_opts *opts, uiw_rpc_done_fn done,
                                  void *arg);

/* Drive the client: process completions (ending calls, running their callbacks and
 * serving backward calls) for up to timeout_ms (0: only what is ready; -1: until at
 * least one thing happened). Returns how many calls ended, or a negative code. */
UIW_EXTERN int uiw_rpc_clnt_poll(CLIENT *clnt, int timeout_ms);

/* Calls started and not yet ended. */
UIW_EXTERN unsigned uiw_rpc_clnt_pending(CLIENT *clnt);

/* The client's connection (-ENOTCONN while it has none). */
UIW_EXTERN int uiw_rpc_clnt_info(CLIENT *clnt, struct uiw_rpc_conn_info *info);

/* The transport's counters of every connection the client made (see
 * uiw_rpc_xprt_stats). 0 or -EINVAL. */
UIW_EXTERN int uiw_rpc_clnt_xprt_stats(CLIENT *clnt, struct uiw_rpc_xprt_stats *st);

/* Serve backward calls (RFC 8167) of program prog, version vers on this client's
 * connections with an rpcgen-style dispatch routine (as a server's). A backward call
 * whose reply was answered REPLY_RESOURCE and that the server sends again with a larger
 * Reply chunk (BRS GENL) gets the kept reply without running again, as a server's
 * duplicate-reply cache does for forward calls. 0 or -EEXIST, -EINVAL, -ENOMEM. */
UIW_EXTERN int uiw_rpc_clnt_bc_register(CLIENT *clnt, rpcprog_t prog, rpcvers_t vers,
                                        void (*dispatch)(struct svc_req *, SVCXPRT *));

/* ---------------------------------------------------------------------------------------
 * Transport properties (Version Two, draft section 5)
 * ------------------------------------------------------------------------------------- */

enum uiw_rpc_prop_result {
    UIW_RPC_PROP_DONE = 0, /* changed to the value asked for (rdma_done) */
    UIW_RPC_PROP_REJECTED, /* unchanged (rdma_rejected, or missing from the answer) */
    UIW_RPC_PROP_OTHER,    /* changed to another value, in `value` (rdma_other) */
};

struct uiw_rpc_prop_req {
    uint32_t which; /* property id */
    uint32_t value; /* in: the value wanted; out (OTHER): the value the peer chose */
    enum uiw_rpc_prop_result result;
};

/* Ask the peer to change its properties (REQPROP) and wait up to timeout_ms (negative:
 * without limit) for its RESPROP; each entry's result is filled in (draft 5.3.3: a
 * property in none of, or in more than one of, done/rejected/other counts as rejected;
 * rdma_other entries for properties not asked for are ignored). The peer's property
 * values seen through uiw_rpc_*_info change accordingly. A peer that answers with
 * RDMA2_ERROR ends the request at once, the entries untouched. Returns 0, -EOPNOTSUPP (the
 * peer takes no property requests: RDMA2_ERR_INVAL_OPTION or RDMA2_ERR_INVAL_PROC, draft
 * 5.3), -EPROTO (another RDMA2_ERROR), -EPERM (a property the peer's CONNPROP left out,
 * or declared unchangeable in rdma_nochg: draft 5.3.1), -EPROTONOSUPPORT (not Version
 * Two), -ETIMEDOUT, -ENOTCONN, -EINVAL. */
UIW_EXTERN int uiw_rpc_clnt_request_props(CLIENT *clnt, struct uiw_rpc_prop_req *req, unsigned n,
                                          int timeout_ms);

/* Announce new values of this side's own properties (UPDPROP): BRS, experimental ones,
 * and RBSIZ (only down to the buffer size in use... and only upwards to it). Returns 0,
 * -EINVAL (a value this side cannot honour), -EPROTONOSUPPORT, -ENOTCONN. */
UIW_EXTERN int uiw_rpc_clnt_update_props(CLIENT *clnt, const struct uiw_rpc_prop_req *now,
                                         unsigned n);

/* The peer's experimental property `which` (from its CONNPROP or UPDPROP): copies up to
 * cap bytes into buf and returns its length, -ENOENT if the peer sent none. */
UIW_EXTERN int uiw_rpc_clnt_peer_xprop(CLIENT *clnt, uint32_t which, void *buf, size_t cap);

/* ---------------------------------------------------------------------------------------
 * Server
 * ------------------------------------------------------------------------------------- */

struct uiw_rpc_svc;

struct uiw_rpc_svc_attr {
    struct uiw_rpc_xprt_attr xprt;
    /* Listen address (NULL: every IPv4 address) and port (0: a free port, see
     * uiw_rpc_svc_port; UIW_RPCRDMA_PORT is the NFS-RDMA port). */
    const struct sockaddr *addr;
    uint16_t port;
    /* Threads that receive and dispatch calls (0 -> 4). The thread that receives a call
     * runs it and then receives again, waking no other thread, unless calls came while
     * nobody received, several or while others run calls (then another receives while
     * it runs them); when a call has run for half a millisecond, another thread takes
     * over receiving, so a slow call holds up only its own thread. */
    unsigned nthreads;
    /* Duplicate-reply cache (by XID, program, version, procedure and client address,
     * without the port): replies of calls other than procedure 0 whose RPC message is at
     * most drc_max_reply bytes and carries no DDP data are kept, so that a call sent again
     * (after a lost connection, or after REPLY_RESOURCE) is answered without running it
     * twice (0 -> 1024 entries, 4096 bytes; no_drc: off). A reply answered REPLY_RESOURCE
     * (no DDP data) is kept whatever its size, in its own buffer, until its call comes
     * back with a larger Reply chunk (at most as many as the credits granted; the oldest
     * goes first). A retransmission that arrives while the original still runs gets the
     * original's reply. */
    uint32_t drc_entries, drc_max_reply;
    bool no_drc;
    /* A client whose RDMA Read of a Read chunk has not completed within this time is
     * disconnected (0 -> 30000 ms). */
    uint32_t read_timeout_ms;
    /* Connections served at once at most (0: no limit). A connection request beyond it is
     * rejected by the connection manager before anything is allocated for it (the
     * client's uiw_rpc_clnt_create fails with ECONNREFUSED), with a log line (UIW_LOG=warn).
     * A connection counts from its acceptance until it is freed, once it closed and its
     * calls ended. */
    uint32_t max_connections;
    /* Bytes of Read chunks (the DDP data of calls, pulled by RDMA Read) held at once
     * across every connection, from the start of a call's Reads until the call is done
     * (0 -> 256 MiB). A call that would go over waits to pull its chunks until others are
     * done (one larger than the bound waits until it is alone); its connection goes on
     * meanwhile. */
    uint64_t max_read_bytes;
};

/* Create a server listening for RPC-over-RDMA connections. NULL + errno (EADDRINUSE,
 * EINVAL, ENOMEM, ...). */
UIW_EXTERN struct uiw_rpc_svc *uiw_rpc_svc_create(const struct uiw_rpc_svc_attr *attr);

/* The port it listens on. */
UIW_EXTERN uint16_t uiw_rpc_svc_port(const struct uiw_rpc_svc *svc);

/* Register an rpcgen-style dispatch routine for program prog, version vers. A call of an
 * unknown program gets PROG_UNAVAIL; of a known program in another version PROG_MISMATCH
 * with the lowest and highest versions registered. 0 or -EEXIST, -EINVAL, -ENOMEM. */
UIW_EXTERN int uiw_rpc_svc_register(struct uiw_rpc_svc *svc, rpcprog_t prog, rpcvers_t vers,
                                    void (*dispatch)(struct svc_req *, SVCXPRT *));
UIW_EXTERN int uiw_rpc_svc_unregister(struct uiw_rpc_svc *svc, rpcprog_t prog, rpcvers_t vers);

/* Serve: uiw_rpc_svc_run in the calling thread (with nthreads - 1 more) until
 * uiw_rpc_svc_stop; uiw_rpc_svc_start in nthreads background threads. 0 or -errno. */
UIW_EXTERN int uiw_rpc_svc_run(struct uiw_rpc_svc *svc);
UIW_EXTERN int uiw_rpc_svc_start(struct uiw_rpc_svc *svc);
/* Make run return / the threads end (async-signal-safe). */
UIW_EXTERN void uiw_rpc_svc_stop(struct uiw_rpc_svc *svc);
/* Stop, close every connection, free everything. 0 or -EBUSY (called from a dispatch).
 * Connections close in order (what is posted goes out, then the LLP closes without a
 * Terminate; abortively only a connection whose peer holds the close up for 2 s). */
UIW_EXTERN int uiw_rpc_svc_destroy(struct uiw_rpc_svc *svc);

/* The transport's counters of every connection the server accepted (see
 * uiw_rpc_xprt_stats; safe from any thread while the server runs). 0 or -EINVAL. */
UIW_EXTERN int uiw_rpc_svc_xprt_stats(const struct uiw_rpc_svc *svc, struct uiw_rpc_xprt_stats *st);

/* --- inside a dispatch routine: `xprt` is the SVCXPRT of the call ---------------------- */

/* Whether xprt is one of this server's (RPC-over-RDMA) transports. The helpers below also
 * accept other transports (e.g. libtirpc's TCP) where they say so. */
UIW_EXTERN bool uiw_svc_is_rdma(const SVCXPRT *xprt);

/* Memory for a result's DDP-eligible bytes (e.g. pread() a READ's data into it): on an
 * RPC-over-RDMA transport registered memory of the server's pool, from which the reply's
 * RDMA Write goes straight into the client's Write chunk (no copy); valid until the reply
 * has been sent (svc_sendreply returned) or the dispatch routine returned. On another
 * transport, memory of the calling thread valid until its next call of this function.
 * NULL when len exceeds max_ddp or memory is short. Results whose bytes live elsewhere
 * (the procedure's own memory) are copied into such a buffer when the reply is encoded:
 * svc_sendreply never waits for the peer, and the procedure may reuse its memory as soon
 * as it returns. */
UIW_EXTERN void *uiw_svc_getbuf(SVCXPRT *xprt, size_t len);

/* xdr_bytes() for arguments without a copy: decoding a call on an RPC-over-RDMA transport,
 * where the bytes came in a Read chunk or inline in the call's message, *cpp (when NULL on
 * entry) is pointed at them in the server's registered buffer (no copy, no allocation):
 * they stay valid until svc_freeargs() or the end of the dispatch routine, and
 * svc_freeargs() knows not to free them (xdr_free() does not: free such arguments with
 * svc_freeargs()). Bytes that do not lie whole in one buffer (a peer's Read chunk placed
 * inside them) are copied, as xdr_bytes() would. Everything else, on any stream, is
 * exactly xdr_bytes(). Compile rpcgen's XDR file with
 * -Dxdr_bytes=uiw_xdr_bytes, or call it from hand-written XDR routines. */
UIW_EXTERN bool_t uiw_xdr_bytes(XDR *xdrs, char **cpp, u_int *sizep, u_int maxsize);

/* The connection of this call. -EINVAL for a foreign transport. */
UIW_EXTERN int uiw_svc_info(SVCXPRT *xprt, struct uiw_rpc_conn_info *info);
/* The transport's counters of this call's connection. -EINVAL for a foreign transport. */
UIW_EXTERN int uiw_svc_xprt_stats(SVCXPRT *xprt, struct uiw_rpc_xprt_stats *st);

/* Ask / tell the client of this call's connection about transport properties (as the
 * client functions above; request_props waits, so call it from a dispatch routine only
 * with nthreads > 1). */
UIW_EXTERN int uiw_svc_request_props(SVCXPRT *xprt, struct uiw_rpc_prop_req *req, unsigned n,
                                     int timeout_ms);
UIW_EXTERN int uiw_svc_update_props(SVCXPRT *xprt, const struct uiw_rpc_prop_req *now, unsigned n);

/* A CLIENT for backward calls (RFC 8167) to program prog, version vers on the client of
 * this call's connection; it stays usable after the dispatch routine returns, until the
 * connection ends (calls then fail with RPC_CANTSEND) and clnt_destroy. Backward calls
 * honour the client's Backward Request Support as it is at each call, UPDPROP included
 * (NONE: RPC_CANTSEND, nothing sent; INLINE: calls and replies inline only) and its
 * backward credits. NULL + errno (EINVAL for a foreign transport, EOPNOTSUPP when the
 * client accepts no backward calls, ENOMEM). */
UIW_EXTERN CLIENT *uiw_svc_bc_create(SVCXPRT *xprt, rpcprog_t prog, rpcvers_t vers);

/* Close this call's connection abortively (the reply, if any, is then not sent; its
 * client reconnects and sends its calls again). 0 or -EINVAL. */
UIW_EXTERN int uiw_svc_disconnect(SVCXPRT *xprt);

#ifdef __cplusplus
}
#endif
#endif
