/*
 * The RPC-over-RDMA transport's only view of an RNIC: register and deregister memory, post
 * sends and receives, poll and wait for completions, listen, connect, accept, disconnect.
 *
 * The transport (src/rpcrdma) and the RPC layer (src/rpc) reach the RNIC through this
 * interface only and never name a uiw_ verb: nic_uiw.c implements it over uiw's verbs and
 * connection manager; a backend over rdma-core (libibverbs + librdmacm, for the kernel's
 * siw and hardware RNICs) implements the same functions.
 *
 * Objects: a device (one RNIC context, one completion channel), its memory registrations,
 * connections (a QP with one CQ for both queues, bound to the device's channel, in a
 * protection domain of its own) and listeners. A peer reaches only what its own
 * connection registered: the device's registrations (uiw__nic_reg) are for local access
 * by every connection, fast-register MRs (uiw__nic_frmr) belong to one connection. Threading:
 * posting, polling and waiting are safe from any thread; one thread at a time polls a given
 * connection; creating and destroying an object must not race with its use.
 */
#ifndef UIW_RPCRDMA_NIC_H
#define UIW_RPCRDMA_NIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct uiw__nic;
struct uiw__nic_conn;
struct uiw__nic_listener;

struct uiw__nic_attr {
    const char *pcap_dir; /* capture every connection here (NULL: env UIW_PCAP_DIR) */
};

/* NULL + errno. */
struct uiw__nic *uiw__nic_open(const struct uiw__nic_attr *a);
/* Every connection, listener and registration must be gone. 0 or -EBUSY. */
int uiw__nic_close(struct uiw__nic *n);

/* The RNIC's counters (uiw_query_context_stats's, the public RNIC API's). 0 or -errno. */
struct uiw_context_stats;
int uiw__nic_stats(struct uiw__nic *n, struct uiw_context_stats *st);

/* ---------------------------------------------------------------- memory */

enum {
    UIW__NIC_LOCAL_WRITE = 1 << 0,
    UIW__NIC_REMOTE_WRITE = 1 << 1, /* implies LOCAL_WRITE */
    UIW__NIC_REMOTE_READ = 1 << 2,
};

struct uiw__nic_mr {
    void *addr;
    size_t len;
    uint32_t lkey;
    uint32_t rkey; /* fast-register MRs: the key of the last registration */
    void *priv;    /* the backend's object */
};

/* A registration of [addr, addr+len) for local access (`access`: LOCAL_WRITE or 0; -EINVAL
 * with a remote one) by the work requests of every connection of n, valid until
 * uiw__nic_dereg. No peer can reach it. */
int uiw__nic_reg(struct uiw__nic *n, void *addr, size_t len, unsigned access,
                 struct uiw__nic_mr *mr);
/* A fast-register MR of connection c, in its protection domain (invalid until a
 * UIW__NIC_REG work request on c binds it; LOCAL_INV or c's peer's Send With Invalidate
 * invalidates it again; another connection's peer can do neither, nor reach it). It must
 * be deregistered before c is destroyed. */
int uiw__nic_frmr(struct uiw__nic_conn *c, size_t max_len, struct uiw__nic_mr *mr);
void uiw__nic_dereg(struct uiw__nic_mr *mr);
/* Make a fast-register MR invalid at once, whatever its state, without a QP (error paths:
 * its connection is gone), in the same protection domain. Its next key continues from
 * mr->rkey. 0 or -errno. */
int uiw__nic_frmr_reset(struct uiw__nic_mr *mr);
/* The key a fast-register MR's next registration uses (after `key`). */
uint32_t uiw__nic_next_key(uint32_t key);

/* ---------------------------------------------------------------- work requests */

struct uiw__nic_sge {
    uint64_t addr;
    uint32_t len;
    uint32_t lkey;
};

enum uiw__nic_op {
    UIW__NIC_SEND = 0,
    UIW__NIC_SEND_INV,  /* Send With Invalidate of inv_rkey */
    UIW__NIC_WRITE,     /* RDMA Write of the SGEs to (raddr, rkey) */
    UIW__NIC_READ,      /* RDMA Read from (raddr, rkey) into the SGE */
    UIW__NIC_LOCAL_INV, /* invalidate inv_rkey */
    UIW__NIC_REG,       /* fast-register mr with key over [addr, addr+len) */
};

#define UIW__NIC_MAX_SGE 2

struct uiw__nic_send {
    struct uiw__nic_send *next;
    uint64_t wr_id;
    enum uiw__nic_op op;
    bool signaled;
    bool more; /* on a list's last WR: more follow at once; the backend may hold this list's
                  transmission until uiw__nic_flush (never its checks or its place) */
    int nsge;
    struct uiw__nic_sge sge[UIW__NIC_MAX_SGE];
    uint32_t inv_rkey; /* SEND_INV, LOCAL_INV */
    uint64_t raddr;    /* WRITE, READ */
    uint32_t rkey;
    struct uiw__nic_mr *mr; /* REG: also the key, addr, len and access below */
    uint32_t key;
    void *addr;
    size_t len;
    unsigned access;
};

struct uiw__nic_recv {
    struct uiw__nic_recv *next;
    uint64_t wr_id;
    struct uiw__nic_sge sge;
};

enum uiw__nic_wc_op {
    UIW__NIC_WC_SEND = 0,
    UIW__NIC_WC_WRITE,
    UIW__NIC_WC_READ,
    UIW__NIC_WC_LOCAL_INV,
    UIW__NIC_WC_REG,
    UIW__NIC_WC_RECV,
};

enum uiw__nic_wc_status {
    UIW__NIC_WC_OK = 0,
    UIW__NIC_WC_FLUSH, /* the connection went away before the WR ran */
    UIW__NIC_WC_ERROR, /* it failed (the connection is then going away too) */
};

struct uiw__nic_wc {
    uint64_t wr_id;
    enum uiw__nic_wc_status status;
    enum uiw__nic_wc_op op;
    uint32_t byte_len; /* RECV */
    bool with_inv;     /* RECV of a Send With Invalidate ... */
    uint32_t inv_rkey; /* ... of this STag */
    int detail;        /* the backend's status code behind an error (for messages) */
};

/* Post a list (0, or a negative code: nothing after the failing WR was posted, and
 * *bad names it when bad is not NULL). */
int uiw__nic_post_send(struct uiw__nic_conn *c, struct uiw__nic_send *wr,
                       struct uiw__nic_send **bad);
int uiw__nic_post_recv(struct uiw__nic_conn *c, struct uiw__nic_recv *wr);
/* Give back the memory of posted receives but the oldest, up to max, their ids into
 * wr_ids (they stay posted): the count, or -errno. */
int uiw__nic_discard_recv(struct uiw__nic_conn *c, uint64_t *wr_ids, int max);
/* Transmit what lists posted with `more` left waiting. */
void uiw__nic_flush(struct uiw__nic_conn *c);

/* Up to n completions of the connection (0 when none), or -errno. */
int uiw__nic_poll(struct uiw__nic_conn *c, struct uiw__nic_wc *wc, int n);
/* Ask for an event at the connection's next completion (poll again afterwards). */
int uiw__nic_arm(struct uiw__nic_conn *c);
/* Sleep until a connection's armed CQ had a completion (returns 0 and that connection's
 * context pointer) or timeout_ms passed (-ETIMEDOUT; 0: only look; -1: no limit). A
 * connection whose event was returned is no longer armed. */
int uiw__nic_wait(struct uiw__nic *n, int timeout_ms, void **conn_ctx);
/* The same, but uiw__nic_wake (from any thread) ends it early: -EINTR. A wake that comes
 * while nobody waits ends the next such wait at once. Slower to wake by a completion than
 * uiw__nic_wait on some backends: for when a wake-up is expected. */
int uiw__nic_wait_wakeable(struct uiw__nic *n, int timeout_ms, void **conn_ctx);
void uiw__nic_wake(struct uiw__nic *n);
/* A number that changes whenever the RNIC moved bytes of a connection of n, also work that
 * completes nothing here (serving a peer's RDMA Read, placing its RDMA Writes). A software
 * RNIC does that work in the threads that poll, so a poller that sees it change was busy,
 * not idle; an RNIC that works without the host's CPU may return 0 always. */
uint64_t uiw__nic_activity(struct uiw__nic *n);

/* ---------------------------------------------------------------- connections */

struct uiw__nic_conn_attr {
    void *ctx;         /* returned by uiw__nic_wait for this connection */
    uint32_t sq_depth; /* send work requests outstanding at most */
    uint32_t rq_depth; /* receives posted at most */
    uint16_t ird, ord; /* RDMA Reads served / issued at once */
    bool crc;
    uint32_t timeout_ms;      /* handshake */
    uint32_t user_timeout_ms; /* TCP_USER_TIMEOUT of the socket (0: the system's) */
    const char *pcap_dir;
    const void *private_data; /* ULP private data of our MPA Request / Reply */
    uint16_t private_data_len;
};

struct uiw__nic_conn_info {
    struct sockaddr_storage local, peer;
    bool crc;
    uint16_t ird, ord;
    uint32_t log_id, qpn; /* the connection's and its QP's numbers in log lines */
    uint8_t peer_pd[256]; /* the peer's ULP private data */
    uint16_t peer_pd_len;
};

/* Active side: connect (blocking up to attr->timeout_ms). Receives may be posted with
 * `pre_recv` before the handshake completes (so the peer's first message finds one).
 * NULL + *err (-ECONNREFUSED, -ETIMEDOUT, -EHOSTUNREACH, -ECONNRESET, ...). */
struct uiw__nic_conn *uiw__nic_connect(struct uiw__nic *n, const struct sockaddr *dst,
                                       const struct uiw__nic_conn_attr *a,
                                       int (*pre_recv)(struct uiw__nic_conn *, void *),
                                       void *pre_arg, int *err);

/* Passive side. A connection whose MPA request has not come whole within handshake_ms
 * (0: the connection manager's default) is dropped, with a log line; accepted sockets have
 * user_timeout_ms as their TCP_USER_TIMEOUT from the start (0: the system's). */
struct uiw__nic_listener *uiw__nic_listen(struct uiw__nic *n, const struct sockaddr *addr,
                                          int backlog, uint32_t handshake_ms,
                                          uint32_t user_timeout_ms, int *err);
uint16_t uiw__nic_listener_port(const struct uiw__nic_listener *l);
/* An fd readable while the listener has events (poll/epoll). */
int uiw__nic_listener_fd(const struct uiw__nic_listener *l);

enum uiw__nic_event_type {
    UIW__NIC_EV_REQUEST = 0,  /* a connection request: accept or reject `req` */
    UIW__NIC_EV_ESTABLISHED,  /* an accepted connection is up */
    UIW__NIC_EV_DISCONNECTED, /* an accepted connection ended */
};

struct uiw__nic_event {
    enum uiw__nic_event_type type;
    void *req;                  /* REQUEST: pass to accept / reject */
    struct uiw__nic_conn *conn; /* ESTABLISHED, DISCONNECTED */
    const void *private_data;   /* REQUEST: the peer's ULP private data */
    uint16_t private_data_len;
    struct sockaddr_storage peer; /* REQUEST */
    int status;                   /* DISCONNECTED: 0 for an orderly close, else the reason */
};

/* Next event within timeout_ms: 0, -EAGAIN (none), or -errno. The event's pointers are
 * valid until the next call. */
int uiw__nic_listener_event(struct uiw__nic_listener *l, int timeout_ms, struct uiw__nic_event *ev);
/* A uiw__nic_listener_event waiting now, or the next one, returns -EAGAIN at once (an
 * eventfd write: async-signal-safe). */
void uiw__nic_listener_wake(struct uiw__nic_listener *l);
/* Accept a REQUEST: create the connection (receives may be posted with pre_recv before
 * the Reply goes out), answer with attr's private data. NULL + *err. */
struct uiw__nic_conn *uiw__nic_accept(struct uiw__nic_listener *l, void *req,
                                      const struct uiw__nic_conn_attr *a,
                                      int (*pre_recv)(struct uiw__nic_conn *, void *),
                                      void *pre_arg, int *err);
void uiw__nic_reject(struct uiw__nic_listener *l, void *req);
void uiw__nic_listener_close(struct uiw__nic_listener *l);

int uiw__nic_conn_info(struct uiw__nic_conn *c, struct uiw__nic_conn_info *info);
/* The ctx given in the connection's attributes. */
void *uiw__nic_conn_ctx(const struct uiw__nic_conn *c);
/* Close: graceful (queued work goes out first, then the LLP closes: no Terminate) or
 * abortive (a Terminate when connected). Every work request still outstanding then
 * completes (FLUSH), signaled or not; one posted afterwards completes with FLUSH at once,
 * after all earlier ones of its queue. */
void uiw__nic_disconnect(struct uiw__nic_conn *c, bool abortive);
/* Whether the peer or the stack ended the connection (its work requests flush). */
bool uiw__nic_gone(struct uiw__nic_conn *c);
/* Whether a Terminate went either way on the connection (it ended abortively). */
bool uiw__nic_terminated(struct uiw__nic_conn *c);
/* How long (ms) the peer has sent nothing more while a message of its is part received:
 * some bytes of an FPDU came, not all (it stopped in the middle of one, the connection
 * left open). 0 when none is part received, or when the backend cannot tell. */
uint64_t uiw__nic_rx_stalled_ms(struct uiw__nic_conn *c);
/* Free it (after its completions have been polled: none may be left). */
void uiw__nic_conn_destroy(struct uiw__nic_conn *c);

#endif
