/*
 * uiw verbs: the RDMA verbs of a user-space iWARP RNIC, in the shape of libibverbs.
 *
 * Objects: a context (the "device", with its progress engine), protection domains (PD),
 * memory regions (MR), completion queues (CQ) with completion channels, queue pairs
 * (QP: reliable, connected, one TCP connection each, connected by the connection manager
 * of cm.h) and shared receive queues (SRQ: one pool of receives for many QPs). Everything
 * returns 0 (or a count) or a negative errno / UIW_E_* code (error.h); constructors return
 * NULL and set errno.
 *
 * Threading: as in libibverbs, posting (uiw_post_send, uiw_post_recv, uiw_post_srq_recv)
 * and polling (uiw_poll_cq) are thread-safe and may race with each other and with the progress
 * engine. Creating and destroying an object must not race with its use.
 *
 * STags: lkey == rkey == STag = (24-bit index << 8) | 8-bit key. The key is random per
 * registration; STag 0 is never valid. A Tagged Offset (TO) is the virtual address in the
 * owner's address space (as ibv remote_addr): an MR covering [addr, addr+length) accepts
 * TOs in that range.
 */
#ifndef UIW_VERBS_H
#define UIW_VERBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uiw/error.h>
#include <uiw/export.h>

#ifdef __cplusplus
extern "C" {
#endif

struct uiw_context;
struct uiw_pd;
struct uiw_cq;
struct uiw_qp;
struct uiw_srq;
struct uiw_comp_channel;

/* ---------------------------------------------------------------------------------------
 * Context (device)
 * ------------------------------------------------------------------------------------- */

struct uiw_context_attr {
    bool progress_thread; /* run the progress engine in its own thread (else only inline
                             from post/poll and the cm calls); an application that
                             busy-polls its CQs makes progress itself either way */
    uint32_t max_mr;      /* size of the STag table; 0 = 4096 (max 1 << 24 - 1) */
    uint32_t max_async;   /* async event queue length; 0 = 256 */
    uint32_t max_qp;      /* QPs the context holds at once; 0 = 65536 (max INT_MAX) */
    uint32_t max_cq;      /* CQs; 0 = 65536 (max INT_MAX) */
    uint32_t max_srq;     /* SRQs; 0 = 65536 (max INT_MAX) */
    uint32_t max_pd;      /* PDs; 0 = 65536 (max INT_MAX) */
    const char *pcap_dir; /* capture every connection into this folder (NULL = off;
                             the env var UIW_PCAP_DIR also turns it on) */
    bool single_threaded; /* the application promises that no two calls into this context
                             run at once: the verbs on it and on its PDs, MRs, CQs,
                             completion channels, QPs and SRQs, and the connection
                             manager's calls on ids bound to it and on the channels that
                             hold them (they drive its connections), come from one thread
                             at a time (as in libibverbs' thread domains, ibv_td, and
                             mlx5's single-threaded mode). The stack then guards them
                             without atomic instructions. Needs progress_thread false
                             (uiw_open_context fails with EINVAL otherwise); default
                             false */
};

/* Fill attr with the defaults (progress thread on). */
UIW_EXTERN void uiw_context_attr_init(struct uiw_context_attr *attr);

/* Open a context (attr NULL = defaults). Returns NULL and sets errno on failure. */
UIW_EXTERN struct uiw_context *uiw_open_context(const struct uiw_context_attr *attr);

/* Close a context: every QP, CQ, MR, PD and channel must have been destroyed first
 * (returns -EBUSY otherwise). */
UIW_EXTERN int uiw_close_context(struct uiw_context *ctx);

/* Counters of a context (monotonic since open). */
struct uiw_context_stats {
    uint64_t tx_bytes; /* FPDU stream bytes handed to TCP */
    uint64_t rx_bytes; /* FPDU stream bytes accounted from TCP */
    uint64_t tx_fpdus;
    uint64_t rx_fpdus;
    uint64_t placed_payload_bytes; /* payload bytes placed into registered memory */
    uint64_t copied_payload_bytes; /* payload bytes the stack copied in user space instead
                                      of placing them straight into their target (inline
                                      data, small messages; payloads of 4 KiB and more are
                                      placed without a copy, but for the first bytes of one
                                      that arrives while its QP expects only small ones) */
    uint64_t terminates_sent;
    uint64_t terminates_received;
    uint64_t crc_errors;
    uint64_t async_events_dropped; /* async queue overflow */
    uint64_t file_payload_bytes;   /* payload bytes sent from file regions (uiw_reg_mr_file),
                                      handed to TCP by the kernel without a user-space copy */
};
UIW_EXTERN int uiw_query_context_stats(struct uiw_context *ctx, struct uiw_context_stats *stats);

/* What the device provides: libibverbs' ibv_device_attr fields that apply to an iWARP
 * RNIC (their names and types) and two it reports elsewhere. A request within these
 * limits fails only when memory runs out; one beyond them fails at once (EINVAL; ENOMEM
 * when a count of the context is full). */
struct uiw_device_attr {
    uint64_t max_mr_size;          /* bytes one MR covers: UINT64_MAX, no limit but the
                                      address space (a range must not wrap) */
    int max_qp;                    /* QPs of the context (uiw_context_attr.max_qp) */
    int max_qp_wr;                 /* max_send_wr, max_recv_wr of a QP */
    unsigned int device_cap_flags; /* enum uiw_device_cap_flags */
    int max_sge;                   /* SGEs of a send or receive WR */
    int max_sge_rd;                /* SGEs of an RDMA Read's sink: 1 (one STag per Read) */
    int max_cq;                    /* CQs of the context (uiw_context_attr.max_cq) */
    int max_cqe;                   /* entries of a CQ */
    int max_mr;                    /* MRs of the context, uiw_reg_mr and uiw_alloc_mr ones */
    int max_pd;                    /* PDs of the context (uiw_context_attr.max_pd) */
    int max_qp_rd_atom;            /* IRD: inbound RDMA Reads a QP serves at once */
    int max_res_rd_atom;           /* the same, all QPs of the context together */
    int max_qp_init_rd_atom;       /* ORD: RDMA Reads a QP has outstanding */
    int max_srq;                   /* SRQs of the context (uiw_context_attr.max_srq) */
    int max_srq_wr;                /* receives an SRQ holds */
    int max_srq_sge;               /* SGEs of an SRQ's receive */
    uint32_t max_inline_data;      /* inline bytes of a send WR (ibverbs: per QP, in its cap) */
    uint32_t max_msg_sz;           /* bytes of one message (ibverbs: ibv_port_attr) */
};

/* libibverbs' enum ibv_device_cap_flags values. */
enum uiw_device_cap_flags {
    UIW_DEVICE_SRQ_RESIZE = 1 << 13,         /* uiw_modify_srq with UIW_SRQ_MAX_WR */
    UIW_DEVICE_MEM_MGT_EXTENSIONS = 1 << 21, /* fast registration (UIW_WR_REG_MR), local
                                                and remote invalidation */
};

/* 0 or -EINVAL. */
UIW_EXTERN int uiw_query_device(struct uiw_context *ctx, struct uiw_device_attr *attr);

/* ---------------------------------------------------------------------------------------
 * Protection domain and memory regions
 * ------------------------------------------------------------------------------------- */

struct uiw_pd {
    struct uiw_context *context;
    uint32_t handle;
};

/* NULL + errno ENOMEM (also when the context holds max_pd PDs). */
UIW_EXTERN struct uiw_pd *uiw_alloc_pd(struct uiw_context *ctx);
/* -EBUSY while MRs or QPs use it. */
UIW_EXTERN int uiw_dealloc_pd(struct uiw_pd *pd);

enum uiw_access_flags {
    UIW_ACCESS_LOCAL_WRITE = 1 << 0,  /* receive into it, RDMA Read sink */
    UIW_ACCESS_REMOTE_WRITE = 1 << 1, /* needs LOCAL_WRITE (as ibv) */
    UIW_ACCESS_REMOTE_READ = 1 << 2,
    /* uiw_reg_mr only, without REMOTE_*: the lkey also serves local work requests (Send
     * and Write sources, receive buffers, Read sinks) of QPs of every PD of the context,
     * as the kernel's local DMA lkey does; nothing a peer sends can reach it. It lets
     * buffers pooled for many connections, each with its own PD, be registered once. */
    UIW_ACCESS_LOCAL_ANY_PD = 1 << 3,
};

struct uiw_mr {
    struct uiw_context *context;
    struct uiw_pd *pd;
    void *addr; /* first byte covered (TO of that byte == (uint64_t)addr) */
    size_t length;
    uint32_t lkey; /* == rkey */
    uint32_t rkey;
    uint32_t handle; /* the STag index */
};

/* Register [addr, addr+length) with the given access. length may be 0 (an MR that
 * accepts only zero-length operations). Errors (errno): EINVAL (bad access combination,
 * e.g. REMOTE_WRITE without LOCAL_WRITE, or LOCAL_ANY_PD with a REMOTE_* flag, or NULL
 * addr with length), ENOMEM (STag table
 * full). The STag of a uiw_reg_mr region cannot be invalidated (LOCAL_INV or a peer's
 * Send with Invalidate fail); use uiw_alloc_mr for invalidatable STags. */
UIW_EXTERN struct uiw_mr *uiw_reg_mr(struct uiw_pd *pd, void *addr, size_t length, unsigned access);

/* A region over bytes of a file rather than memory: [offset, offset + length) of the
 * regular file fd refers to (open for reading), at TOs 0 to length - 1 (an SGE's addr is
 * the place of its first byte in the region, not a pointer). It is a source of Sends and
 * RDMA Writes only: gathered through a single SGE (a WR with more fails), never placed
 * into (a receive or a Read sink naming it fails: it has no LOCAL_WRITE), never reached by
 * a peer (its STag serves no remote access). Its bytes go from the file to TCP without a
 * copy in user space (sendfile(2)), read when they are sent: what the file holds then, and
 * zeros for any past the file's end (a file truncated meanwhile); a failure to read the
 * file ends the connection. A connection with MPA CRC or markers cannot send from it (the
 * stack would have to read the bytes to frame them): a WR gathering from it there completes
 * with UIW_WC_LOC_PROT_ERR. The region holds a descriptor of its own (fd may be closed
 * once the call returns), and every FPDU built from it holds that descriptor until TCP has
 * taken the FPDU: uiw_dereg_mr does not wait for them, and a deregistered region's file is
 * never confused with another. NULL + errno: EINVAL (pd NULL, fd not a regular file's,
 * offset + length beyond a file's largest offset), EBADF (fd open for no reading),
 * ENOMEM. */
UIW_EXTERN struct uiw_mr *uiw_reg_mr_file(struct uiw_pd *pd, int fd, uint64_t offset,
                                          size_t length);

/* A fast-register MR (as ibv_alloc_mr with IBV_MR_TYPE_MEM_REG): its STag index is
 * reserved, the STag starts invalid; a UIW_WR_REG_MR work request binds it to memory with
 * a key and access, UIW_WR_LOCAL_INV or a peer's Send with Invalidate invalidates it.
 * Invalidating an STag of the MR that is invalid already (invalidated before, or replaced
 * by a REG_MR under another key, which stays valid) succeeds and changes nothing: a late
 * Send with Invalidate (a reply after the requester gave up and invalidated) does not end
 * the connection. Naming an STag of no MR, or of an MR of another PD, is an error.
 * While a Read Response is being sent from the STag (memory of the Response built for TCP
 * and not yet taken by it), a peer's Send with Invalidate of it is refused ('STag cannot
 * be invalidated', the connection ends), and LOCAL_INV invalidates it at once but
 * completes only when its own connection has sent those segments (one on another
 * connection of the PD may still send what it had built: uiw_dereg_mr copies what every
 * connection has begun to send). A LOCAL_INV completes only once nothing of a peer's
 * operation is placed into the region any more (a read of the stack's into it under way
 * when the STag became invalid is over): its completion, not uiw_post_send's return,
 * says that the memory may be reused. max_length bounds the length a REG_MR may bind. */
UIW_EXTERN struct uiw_mr *uiw_alloc_mr(struct uiw_pd *pd, size_t max_length);

/* Deregister (any MR). The STag becomes invalid at once; a peer's RDMA Read being
 * answered from the region reads no more of it: the connection ends with RDMAP / Remote
 * Protection / Invalid STag, what of the Response TCP had not begun to take is dropped,
 * and the rest of a segment it has begun to take is copied and sent first from the copy.
 * The call does not wait for the peer to read (at most for a send() of the stack that
 * reads the region at that moment): the memory may be freed when it returns. Nothing is
 * placed in the region once it returns either: a read of the stack's into it at that
 * moment is waited for, and the rest of a segment being placed there (a Write's, a Read
 * Response's, a Send's into a receive in the region) ends the connection with the error
 * its header would have got after the call (DDP Tagged Buffer / Invalid STag; a receive
 * completes with Local Protection Error).
 * 0 or -EINVAL. */
UIW_EXTERN int uiw_dereg_mr(struct uiw_mr *mr);

/* The next key for a fast-register MR (as ibv_inc_rkey): same index, key + 1. */
static inline uint32_t uiw_inc_rkey(uint32_t rkey)
{
    return (rkey & 0xFFFFFF00u) | ((rkey + 1) & 0xFFu);
}

/* ---------------------------------------------------------------------------------------
 * Completions
 * ------------------------------------------------------------------------------------- */

/* Work completion status: each value is libibverbs' enum ibv_wc_status value of the same
 * name, so a status read here means the same as in an ibv_wc (a port from ibverbs casts).
 * Only the statuses an iWARP RNIC produces are named. */
enum uiw_wc_status {
    UIW_WC_SUCCESS = 0,
    UIW_WC_LOC_LEN_ERR = 1,     /* receive too small for the Send; SGE beyond its MR */
    UIW_WC_LOC_QP_OP_ERR = 2,   /* a malformed work request */
    UIW_WC_LOC_PROT_ERR = 4,    /* local lkey invalid, other PD, or missing access */
    UIW_WC_WR_FLUSH_ERR = 5,    /* flushed: the QP left RTS before this WR completed */
    UIW_WC_MW_BIND_ERR = 6,     /* fast-register failed (bad MR, key, length, access) */
    UIW_WC_BAD_RESP_ERR = 7,    /* unexpected response from the peer */
    UIW_WC_LOC_ACCESS_ERR = 8,  /* an incoming op violated local access (receive side) */
    UIW_WC_REM_INV_REQ_ERR = 9, /* the peer reported an invalid request (DDP/untagged) */
    UIW_WC_REM_ACCESS_ERR = 10, /* the peer reported a protection error (STag, bounds...) */
    UIW_WC_REM_OP_ERR = 11,     /* the peer reported an operation error */
    UIW_WC_RETRY_EXC_ERR = 12,  /* the connection died (reset, timeout) mid-operation */
    UIW_WC_FATAL_ERR = 19,      /* local catastrophic error */
    UIW_WC_GENERAL_ERR = 21,
};

/* "success", "local length error", ..., never NULL ("unknown" for other values). */
UIW_EXTERN const char *uiw_wc_status_str(enum uiw_wc_status status);

/* Work completion opcode: libibverbs' enum ibv_wc_opcode values where ibverbs has the
 * operation; a receive is any value with the UIW_WC_RECV bit (as IBV_WC_RECV). */
enum uiw_wc_opcode {
    UIW_WC_SEND = 0,
    UIW_WC_RDMA_WRITE = 1,
    UIW_WC_RDMA_READ = 2,
    UIW_WC_LOCAL_INV = 6,
    UIW_WC_REG_MR = 10, /* no ibverbs counterpart: the Linux kernel's IB_WC_REG_MR */
    UIW_WC_RECV = 128,  /* a Send (any kind) received into a posted receive */
};

enum uiw_wc_flags {
    UIW_WC_WITH_INV = 1 << 0,  /* RECV of a Send with Invalidate: invalidated_rkey valid */
    UIW_WC_SOLICITED = 1 << 1, /* RECV of a Send with Solicited Event */
};

struct uiw_wc {
    uint64_t wr_id;
    enum uiw_wc_status status;
    enum uiw_wc_opcode opcode;
    uint32_t byte_len;         /* RECV: bytes received; RDMA_READ: bytes read */
    uint32_t invalidated_rkey; /* with UIW_WC_WITH_INV */
    unsigned wc_flags;         /* UIW_WC_* flags */
    uint32_t qp_num;
    int vendor_err; /* the engine's UIW_E_* code behind an error status, or 0 */
};

/* A completion channel: an fd (eventfd, readable when a CQ event is pending) that works
 * with poll/epoll. NULL + errno. */
UIW_EXTERN struct uiw_comp_channel *uiw_create_comp_channel(struct uiw_context *ctx);
UIW_EXTERN int uiw_comp_channel_fd(const struct uiw_comp_channel *ch);
/* -EBUSY while CQs use it. */
UIW_EXTERN int uiw_destroy_comp_channel(struct uiw_comp_channel *ch);

/* A CQ with room for at least cqe entries (1 .. max_cqe). channel may be NULL. A CQ that
 * would overflow keeps its entries, reports UIW_EVENT_CQ_ERR once and moves the QPs that
 * produced the lost completion to ERROR: completions are never silently dropped. NULL +
 * errno EINVAL / ENOMEM (also when the context holds max_cq CQs). */
UIW_EXTERN struct uiw_cq *uiw_create_cq(struct uiw_context *ctx, int cqe, void *cq_context,
                                        struct uiw_comp_channel *channel, int comp_vector);
/* -EBUSY while QPs use it or events are unacknowledged. */
UIW_EXTERN int uiw_destroy_cq(struct uiw_cq *cq);

/* Up to n completions into wc[]. Returns the count (0 when empty) or -EINVAL. When the
 * CQ has nothing to return, the call may drive the progress engine itself: busy polling
 * needs no progress thread.
 * Send queue completions come in posting order. A Send or RDMA Write completes once its
 * last byte has been handed to TCP; an RDMA Read once its response has been placed;
 * LOCAL_INV and REG_MR when executed in send queue order. Error completions are always
 * generated, successful ones only for UIW_SEND_SIGNALED WRs (or with sq_sig_all). */
UIW_EXTERN int uiw_poll_cq(struct uiw_cq *cq, int n, struct uiw_wc *wc);

/* Arm the CQ: the next completion (solicited_only: the next RECV with
 * UIW_WC_SOLICITED, or any error completion) queues one CQ event on its channel. */
UIW_EXTERN int uiw_req_notify_cq(struct uiw_cq *cq, int solicited_only);

/* Wait for a CQ event of the channel (blocks unless the fd was made non-blocking, then
 * -EAGAIN). Returns 0 and the CQ and its cq_context. A thread asleep here (or in
 * uiw_wait_cq_event) does the context's socket work itself when a message arrives, so
 * the event reaches it with one wake-up; a thread asleep in poll() on the channel fd is
 * woken by the progress thread instead. */
UIW_EXTERN int uiw_get_cq_event(struct uiw_comp_channel *ch, struct uiw_cq **cq, void **cq_context);

/* uiw_get_cq_event with a time limit, whatever the fd's blocking mode: timeout_ms < 0
 * waits without one, 0 only looks (after one non-blocking pass over the sockets).
 * -ETIMEDOUT when no event came in time. */
UIW_EXTERN int uiw_wait_cq_event(struct uiw_comp_channel *ch, int timeout_ms, struct uiw_cq **cq,
                                 void **cq_context);
UIW_EXTERN void uiw_ack_cq_events(struct uiw_cq *cq, unsigned int nevents);

UIW_EXTERN void *uiw_cq_context(const struct uiw_cq *cq);

/* ---------------------------------------------------------------------------------------
 * Queue pairs
 * ------------------------------------------------------------------------------------- */

/* The IRD and ORD of a QP created with max_ird or max_ord 0. */
#define UIW_DEFAULT_IRD_ORD 16

enum uiw_qp_state {
    UIW_QPS_IDLE = 0,  /* created, not connected */
    UIW_QPS_RTS,       /* connected, operations run */
    UIW_QPS_CLOSING,   /* graceful close in progress */
    UIW_QPS_TERMINATE, /* a Terminate was sent or received */
    UIW_QPS_ERROR,     /* the stream is gone; all work requests flushed */
};
UIW_EXTERN const char *uiw_qp_state_str(enum uiw_qp_state s);

/* Bounds: the device's (uiw_query_device). */
struct uiw_qp_cap {
    uint32_t max_send_wr;     /* 1 .. max_qp_wr */
    uint32_t max_recv_wr;     /* 1 .. max_qp_wr */
    uint32_t max_send_sge;    /* <= max_sge */
    uint32_t max_recv_sge;    /* <= max_sge */
    uint32_t max_inline_data; /* <= max_inline_data */
};

struct uiw_qp_init_attr {
    void *qp_context;
    struct uiw_cq *send_cq;
    struct uiw_cq *recv_cq; /* the receives this QP takes complete here, an SRQ's too */
    struct uiw_srq *srq;    /* NULL, or the SRQ this QP takes its receives from: then
                               cap.max_recv_wr and max_recv_sge are ignored (0 after
                               create and in uiw_query_qp) and uiw_post_recv fails */
    struct uiw_qp_cap cap;
    int sq_sig_all;   /* every send WR signalled */
    uint16_t max_ird; /* inbound Read Requests this side serves at once: 0 (the default,
                         UIW_DEFAULT_IRD_ORD) .. max_qp_rd_atom */
    uint16_t max_ord; /* outbound Reads this side has outstanding: 0 (the default) ..
                         max_qp_init_rd_atom */
};

/* Create a QP in IDLE (cap adjusted up to what the QP provides, as ibv). The connection
 * manager (cm.h) binds it to a connection. NULL + errno EINVAL / ENOMEM (also when the
 * context holds max_qp QPs). */
UIW_EXTERN struct uiw_qp *uiw_create_qp(struct uiw_pd *pd, struct uiw_qp_init_attr *attr);

/* Destroy: an unconnected QP at once; a connected one is closed abortively first (a
 * Terminate is queued and the connection closed; its WRs are flushed into the CQs, which
 * must outlive it). */
UIW_EXTERN int uiw_destroy_qp(struct uiw_qp *qp);

struct uiw_qp_attr {
    enum uiw_qp_state state;
    struct uiw_qp_cap cap;
    uint32_t qp_num;
    uint16_t ird; /* negotiated (valid from RTS on) */
    uint16_t ord;
    uint16_t mulpdu;
    uint8_t mpa_rev;
    bool crc;
    bool markers_tx;
    bool markers_rx;
    /* The Terminate sent or received, if any (layer/etype/code; 0xFF.. when none). */
    bool term_sent;
    bool term_received;
    bool term_siw_order; /* the received Terminate used Linux siw's swapped bit order */
    bool term_ambiguous; /* its control word reads validly in both bit orders: term_* is the
                          * reading taken (RFC order, except where the RFC reading cannot
                          * be meant: LLP / MPA codes 5-7, which only a connection's
                          * startup carries, are read in siw's order, as RDMAP / Remote
                          * Operation, after it) */
    uint8_t term_layer;
    uint8_t term_etype;
    uint8_t term_code;
};
UIW_EXTERN int uiw_query_qp(struct uiw_qp *qp, struct uiw_qp_attr *attr);
UIW_EXTERN void *uiw_qp_context(const struct uiw_qp *qp);
UIW_EXTERN uint32_t uiw_qp_num(const struct uiw_qp *qp);
/* How long (ms) the peer has sent nothing more while part of an FPDU of its is held (some
 * of its bytes came, not all); 0 when none is. A peer that stops in the middle of a
 * message with its TCP connection up is found by neither TCP_USER_TIMEOUT nor keepalive:
 * how long to wait for it is the application's choice (uiw_modify_qp_state to end it).
 * Any thread, cheap (no lock). */
UIW_EXTERN uint64_t uiw_qp_rx_stalled_ms(const struct uiw_qp *qp);

/* Move a QP to ERROR by hand (abortive close: a Terminate is sent when connected, then
 * everything outstanding is flushed). Only UIW_QPS_ERROR is accepted. */
UIW_EXTERN int uiw_modify_qp_state(struct uiw_qp *qp, enum uiw_qp_state state);

struct uiw_sge {
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
};

/* Work request opcode: libibverbs' enum ibv_wr_opcode values where ibverbs has the
 * operation. ibverbs asks for the Solicited Event variant of a Send with
 * UIW_SEND_SOLICITED (IBV_SEND_SOLICITED), which works here too; the two _SE opcodes say
 * the same in the opcode. */
enum uiw_wr_opcode {
    UIW_WR_RDMA_WRITE = 0,
    UIW_WR_SEND = 2,
    UIW_WR_RDMA_READ = 4,
    UIW_WR_LOCAL_INV = 7,
    UIW_WR_SEND_WITH_INV = 9,
    UIW_WR_REG_MR = 0x20, /* no ibverbs counterpart: the Linux kernel's IB_WR_REG_MR */
    UIW_WR_SEND_WITH_SE = 0x40,
    UIW_WR_SEND_WITH_SE_AND_INV = 0x41,
};

enum uiw_send_flags {
    UIW_SEND_FENCE = 1 << 0,     /* wait for every earlier RDMA Read to complete */
    UIW_SEND_SIGNALED = 1 << 1,  /* generate a completion on success */
    UIW_SEND_SOLICITED = 1 << 2, /* for SEND / SEND_WITH_INV: send the SE variant */
    UIW_SEND_INLINE = 1 << 3,    /* copy the payload at post time (<= max_inline_data) */
    /* on the last WR of a list: more lists follow at once, so the QP may hold this one's
     * transmission (not its checks or its place in the queue) until a list without it
     * or uiw_post_send_flush (a doorbell for a batch: one system call for many) */
    UIW_SEND_MORE = 1 << 4,
};

struct uiw_send_wr {
    uint64_t wr_id;
    struct uiw_send_wr *next;
    struct uiw_sge *sg_list; /* for RDMA_READ: the local sink (LOCAL_WRITE needed) */
    int num_sge;
    enum uiw_wr_opcode opcode;
    unsigned send_flags;
    uint32_t invalidate_rkey; /* SEND_WITH_INV / SEND_WITH_SE_AND_INV / LOCAL_INV */
    union {
        struct {
            uint64_t remote_addr; /* the remote TO */
            uint32_t rkey;
        } rdma;
        struct {
            struct uiw_mr *mr; /* from uiw_alloc_mr, currently invalid */
            uint32_t key;      /* the new STag: mr's index, new 8-bit key */
            void *addr;        /* memory to bind (TO base == addr) */
            size_t length;     /* <= the MR's max_length */
            unsigned access;   /* UIW_ACCESS_* */
        } reg;
    } wr;
};

/* Post a list of send WRs. Each WR is checked at post time (opcode, num_sge, inline
 * length, queue room); on the first bad one *bad_wr is set and -EINVAL (malformed) or
 * -ENOMEM (send queue full) is returned, the WRs before it stay posted. In IDLE -ENOTCONN.
 * As in libibverbs, WRs posted while the QP is in TERMINATE or ERROR complete with
 * UIW_WC_WR_FLUSH_ERR (return 0). Local SGE protection is checked when the WR executes
 * (UIW_WC_LOC_PROT_ERR / UIW_WC_LOC_LEN_ERR, then the QP goes to ERROR). */
UIW_EXTERN int uiw_post_send(struct uiw_qp *qp, struct uiw_send_wr *wr,
                             struct uiw_send_wr **bad_wr);
/* Transmit what lists posted with UIW_SEND_MORE left waiting (0; -EINVAL without a QP).
 * The progress engine's own passes send them too, but only this call bounds the wait. */
UIW_EXTERN int uiw_post_send_flush(struct uiw_qp *qp);

struct uiw_recv_wr {
    uint64_t wr_id;
    struct uiw_recv_wr *next;
    struct uiw_sge *sg_list;
    int num_sge;
};
/* Post a list of receives: -EINVAL (num_sge, or a QP on an SRQ), -ENOMEM (receive queue
 * full), *bad_wr set as for uiw_post_send. A Send takes the oldest receive; a receive
 * whose SGEs are not valid LOCAL_WRITE memory of the QP's PD when a Send arrives
 * completes with UIW_WC_LOC_PROT_ERR and fails the stream. In TERMINATE or ERROR a
 * receive completes at once with UIW_WC_WR_FLUSH_ERR (return 0). */
UIW_EXTERN int uiw_post_recv(struct uiw_qp *qp, struct uiw_recv_wr *wr,
                             struct uiw_recv_wr **bad_wr);
/* Give the memory of posted receives that wait idle back to the system: the whole pages
 * of the SGEs of every posted receive but the oldest (into which a Send may be landing),
 * up to max of them, oldest first, are discarded (madvise MADV_DONTNEED: the receives
 * stay posted, their memory registered, and read as zeros until a Send lands there).
 * For memory of private anonymous mappings (malloc, mmap): a connection idle after a
 * burst keeps its receives posted for its peer's credits without the memory the burst
 * wrote. Their wr_ids go to wr_ids[]; returns the count, or -EINVAL. A QP on an SRQ has
 * none (0). */
UIW_EXTERN int uiw_discard_recv(struct uiw_qp *qp, uint64_t *wr_ids, int max);

/* ---------------------------------------------------------------------------------------
 * Shared receive queues (as ibv_srq)
 *
 * An SRQ holds receives that any QP created on it (uiw_qp_init_attr.srq) takes, oldest
 * first, when a Send's first segment arrives; the receive then belongs to that QP: it
 * completes on the QP's recv_cq (qp_num says which QP), with the Send's status, or
 * UIW_WC_WR_FLUSH_ERR if the QP fails before the Send's last segment arrives. Receives
 * still in the SRQ belong to no QP: a QP leaving RTS flushes none of them (it queues
 * UIW_EVENT_QP_LAST_WQE_REACHED instead: it takes no more), and destroying the SRQ drops
 * them without completions. A Send that finds the SRQ empty ends its stream with the DDP
 * Terminate "Invalid MSN - no buffer available" (RFC 5041 7.2), as on a QP's own queue
 * (iWARP has no receiver-not-ready retry): keep the SRQ filled, and arm its limit to
 * learn when it runs low. The lkeys of its receives belong to the SRQ's PD.
 * ------------------------------------------------------------------------------------- */

struct uiw_srq_attr {
    uint32_t max_wr;    /* receives it holds at most: 1 .. max_srq_wr (uiw_query_device) */
    uint32_t max_sge;   /* SGEs per receive: 0 .. max_srq_sge */
    uint32_t srq_limit; /* the low-water mark, 0 when not armed (see uiw_modify_srq) */
};

struct uiw_srq_init_attr {
    void *srq_context;
    struct uiw_srq_attr attr; /* a non-zero srq_limit arms the limit at once */
};

/* Create an SRQ in pd (attr adjusted up to what it provides, as ibv: max_sge becomes
 * max_srq_sge). NULL + errno EINVAL (a value beyond its bounds, srq_limit > max_wr) /
 * ENOMEM (also when the context holds max_srq SRQs). */
UIW_EXTERN struct uiw_srq *uiw_create_srq(struct uiw_pd *pd, struct uiw_srq_init_attr *attr);

/* -EBUSY while a QP is created on it (destroy the QPs first). Its receives are dropped. */
UIW_EXTERN int uiw_destroy_srq(struct uiw_srq *srq);

enum uiw_srq_attr_mask {
    UIW_SRQ_MAX_WR = 1 << 0, /* resize to attr->max_wr (>= the receives it holds now) */
    UIW_SRQ_LIMIT = 1 << 1,  /* arm (srq_limit > 0, <= max_wr) or disarm (0) the limit */
};

/* Change what attr_mask names (enum uiw_srq_attr_mask values, as ibv_modify_srq): 0, or
 * -EINVAL (a value beyond its bounds, another bit), -ENOMEM. The armed limit fires once:
 * the first time a QP's taking a receive leaves fewer than srq_limit in the SRQ, one
 * UIW_EVENT_SRQ_LIMIT_REACHED is queued and the limit is disarmed (srq_limit reads 0
 * again) until armed anew. Posting never fires it. */
UIW_EXTERN int uiw_modify_srq(struct uiw_srq *srq, struct uiw_srq_attr *attr, int attr_mask);

/* max_wr, max_sge and the armed limit (0 when not armed). */
UIW_EXTERN int uiw_query_srq(struct uiw_srq *srq, struct uiw_srq_attr *attr);

/* Post receives to the SRQ: as uiw_post_recv (-EINVAL, -ENOMEM when it holds max_wr,
 * *bad_wr). Their SGEs are resolved here, against the SRQ's PD, not when a Send
 * arrives (unless memory was registered or deregistered in between). */
UIW_EXTERN int uiw_post_srq_recv(struct uiw_srq *srq, struct uiw_recv_wr *wr,
                                 struct uiw_recv_wr **bad_wr);

UIW_EXTERN void *uiw_srq_context(const struct uiw_srq *srq);

/* ---------------------------------------------------------------------------------------
 * Asynchronous events
 * ------------------------------------------------------------------------------------- */

/* Async event type: libibverbs' enum ibv_event_type values where ibverbs has the event. */
enum uiw_event_type {
    UIW_EVENT_CQ_ERR = 0,             /* a CQ overflowed */
    UIW_EVENT_QP_FATAL = 1,           /* the stream failed (local catastrophic, CRC, framing) */
    UIW_EVENT_QP_REQ_ERR = 2,         /* the peer sent an invalid request (opcode, QN, MSN, ...) */
    UIW_EVENT_QP_ACCESS_ERR = 3,      /* the peer violated STag protection */
    UIW_EVENT_COMM_EST = 4,           /* the QP entered RTS */
    UIW_EVENT_SRQ_LIMIT_REACHED = 15, /* the SRQ holds fewer receives than its armed limit */
    UIW_EVENT_QP_LAST_WQE_REACHED = 16, /* a QP on an SRQ left RTS: it takes no more of
                                           its receives */
    /* no ibverbs counterpart (librdmacm reports the first as RDMA_CM_EVENT_DISCONNECTED) */
    UIW_EVENT_CONN_CLOSED = 0x40,   /* the connection ended (graceful close, EOF, reset) */
    UIW_EVENT_TERM_RECEIVED = 0x41, /* the peer sent a Terminate (see term_*) */
};
UIW_EXTERN const char *uiw_event_type_str(enum uiw_event_type t);

struct uiw_async_event {
    enum uiw_event_type event_type;
    struct uiw_qp *qp;                         /* QP events */
    struct uiw_cq *cq;                         /* UIW_EVENT_CQ_ERR */
    struct uiw_srq *srq;                       /* UIW_EVENT_SRQ_LIMIT_REACHED */
    int code;                                  /* the UIW_E_* or -errno behind it, 0 if none */
    uint8_t term_layer, term_etype, term_code; /* Terminate sent/received, if any */
};

/* An eventfd readable while async events are queued (poll/epoll). */
UIW_EXTERN int uiw_async_fd(struct uiw_context *ctx);
/* Dequeue one event: 0, or -EAGAIN when none is queued (never blocks). */
UIW_EXTERN int uiw_get_async_event(struct uiw_context *ctx, struct uiw_async_event *ev);
UIW_EXTERN void uiw_ack_async_event(struct uiw_async_event *ev);

#ifdef __cplusplus
}
#endif
#endif
