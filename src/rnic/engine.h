/*
 * Internal to src/rnic: the engine's objects. Other layers use rnic.h and verbs.h only.
 */
#ifndef UIW_RNIC_ENGINE_H
#define UIW_RNIC_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uiw/verbs.h>
#include <uiw/wire.h>

#include "common/lock.h"
#include "rnic/rnic.h"

/* ---------------------------------------------------------------- context, STag table */

/* The device's fixed limits (uiw_query_device reports them with the context's own). */
#define UIW__MAX_SGE      4
#define UIW__MAX_INLINE   256
#define UIW__MAX_IRD_ORD  128
#define UIW__MAX_QP_WR    (1u << 16)
#define UIW__MAX_CQE      (1 << 20)
#define UIW__MAX_SRQ_WR   (1u << 20)
#define UIW__MAX_OBJ_DFLT (1u << 16) /* uiw_context_attr.max_qp, max_cq, ... left 0 */

/* The objects a context counts against its limits (uiw_context_attr). */
enum uiw__res { UIW__RES_PD, UIW__RES_CQ, UIW__RES_QP, UIW__RES_SRQ, UIW__RES_COUNT };

/* Payload runs at least this long go straight from the socket to memory (and every
 * payload run of a segment that is not its message's last); shorter ones may be copied
 * from the staging ring. */
#define UIW__RX_DIRECT_MIN 1024

/* A PD with the count of QPs and SRQs using it, and the count of its valid STags through which a
 * peer may write UIW__RX_DIRECT_MIN bytes or more (REMOTE_WRITE, that long): while it is
 * 0, no Write to this PD can carry a payload that must go straight to memory. */
struct uiw__pd {
    struct uiw_pd pub;
    _Atomic int nqp;
    _Atomic int rw_wide;
};

enum { UIW__STAG_FREE = 0, UIW__STAG_VALID, UIW__STAG_INVALID };

/* The file of a uiw_reg_mr_file region: a descriptor of its own, held by the region and
 * by every FPDU built from it until TCP took it (or it was dropped); the last to let go
 * closes it. */
struct uiw__file_src {
    _Atomic uint32_t refs;
    int fd;
};
void uiw__file_src_put(struct uiw__file_src *f);

/* An entry's access bit (beside UIW_ACCESS_*) of a file region: a check passes for it
 * only when it asks for this bit too, as only tx.c's gathering does; every other check
 * (a placement, a Read Response's source, a small Send copied whole) finds no access. */
#define UIW__ACCESS_FILE (1u << 7)

struct uiw__stag {
    uint8_t state;
    uint8_t key;
    uint8_t access;
    bool fastreg; /* uiw_alloc_mr: may be invalidated and fast-registered */
    bool wide;    /* counted in its PD's rw_wide */
    struct uiw_pd *pd;
    uint64_t base;
    uint64_t len;
    uint64_t max_len;
    struct uiw_mr *mr;
    uint32_t next_free;
    /* Read Response segments built from the entry and not yet handed to TCP (their
     * payload is read from its memory then): uiw_dereg_mr waits for none to be left */
    _Atomic uint32_t pins;
    struct uiw__file_src *file; /* a file region's (TO 0 is byte file_off), else NULL */
    uint64_t file_off;
};

struct uiw_context {
    struct uiw_context_attr attr;
    struct uiw__io_ops ops;
    void *io;
    _Atomic uint64_t stats[UIW__STAT_COUNT];
    _Atomic int nobjs;
    _Atomic uint32_t next_qpn;
    _Atomic uint32_t next_pd;
    _Atomic uint32_t nres[UIW__RES_COUNT]; /* objects of each kind */
    uint32_t res_max[UIW__RES_COUNT];      /* at most (from attr) */
    _Atomic int armed_cqs; /* CQs with a channel armed by uiw_req_notify_cq, not yet fired */
    /* Bumped (under mem_lock) by every change that can make a valid STag's check fail:
     * what a QP remembered of a check (struct uiw__stag_hit) holds while it is unchanged.
     * Starts at 1, so a zeroed hit never matches. */
    _Atomic uint32_t mem_gen;

    struct uiw__lock mem_lock;
    struct uiw__stag *stags; /* index 0 unused */
    uint32_t nstags;
    uint32_t free_head;   /* entries given back, a list (0 = none) ... */
    uint32_t stags_fresh; /* ... taken before those never used, from this index up */
    uint64_t rnd;

    struct uiw__lock qps_lock; /* the list of live QPs */
    struct uiw_qp *qps;

    struct uiw__lock async_lock;
    struct uiw_async_event *aq;
    uint32_t aq_cap, aq_head, aq_count;
    int async_fd;
};

/* Result of an STag check (mem.c), the caller maps it to its error code. */
enum uiw__stag_err {
    UIW__STAG_OK = 0,
    UIW__STAG_E_INVALID,
    UIW__STAG_E_PD,
    UIW__STAG_E_WRAP,
    UIW__STAG_E_BOUNDS,
    UIW__STAG_E_ACCESS,
};
enum uiw__stag_err uiw__stag_check(struct uiw_context *ctx, const struct uiw_pd *pd, uint32_t stag,
                                   uint64_t to, uint64_t len, unsigned access, uint8_t **ptr);
/* A valid STag of the QP's PD as a check found it, at table generation gen. */
struct uiw__stag_hit {
    uint32_t stag, gen;
    unsigned access;
    uint64_t base, len;
};
struct uiw_qp;
/* uiw__stag_check for the QP's own data path (QP lock held): answers from the QP's last
 * successful checks while the table is unchanged, without the table's lock or its
 * cache lines; the same answers, errors always from the table. */
enum uiw__stag_err uiw__qp_stag_check(struct uiw_qp *qp, uint32_t stag, uint64_t to, uint64_t len,
                                      unsigned access, uint8_t **ptr);
/* Invalidate a fast-register STag of pd: 0 (also when it is invalid already: invalidated,
 * or its MR bound since under another key, which stays valid), or -EINVAL (no MR at that
 * index), -EACCES (an MR of another PD: not associated with the stream) or -EPERM
 * (cannot be invalidated: a uiw_reg_mr STag); with
 * refuse_pinned, -EBUSY (nothing done) while a Read Response is being sent from it. */
int uiw__stag_invalidate(struct uiw_context *ctx, const struct uiw_pd *pd, uint32_t stag,
                         bool refuse_pinned);
/* A Read Response segment of the QP's about to be built from [to, to + len) of stag:
 * uiw__qp_stag_check for REMOTE_READ and, when it passes, one pin on the entry (*idx),
 * released with uiw__stag_unpin once the segment went to TCP or was dropped. The check
 * and the pin are one step against uiw_dereg_mr: a region deregistered before is refused,
 * one deregistered after waits for the segment. */
enum uiw__stag_err uiw__qp_stag_pin(struct uiw_qp *qp, uint32_t stag, uint64_t to, uint64_t len,
                                    uint8_t **ptr, uint32_t *idx);
void uiw__stag_unpin(struct uiw_context *ctx, uint32_t idx);
/* An FPDU's payload [to, to + len) of the QP's file region stag, about to be built: the
 * file, with one reference taken for the FPDU (uiw__file_src_put once it went to TCP or
 * was dropped), and the file offset of byte to; NULL when stag names no valid file region
 * of the QP's PD holding that range. */
struct uiw__file_src *uiw__qp_stag_file(struct uiw_qp *qp, uint32_t stag, uint64_t to, uint64_t len,
                                        uint64_t *off);
/* Fast-register: 0 or -EINVAL. */
int uiw__stag_fastreg(struct uiw_context *ctx, const struct uiw_pd *pd, struct uiw_mr *mr,
                      uint32_t key, void *addr, size_t len, unsigned access);

void uiw__ctx_get(struct uiw_context *ctx);
void uiw__ctx_put(struct uiw_context *ctx);
/* Count one more object of kind r: false (nothing counted) when the context holds its
 * limit of them. */
bool uiw__res_take(struct uiw_context *ctx, enum uiw__res r);
void uiw__res_put(struct uiw_context *ctx, enum uiw__res r);

/* ---------------------------------------------------------------- CQ */

struct uiw_comp_channel {
    struct uiw_context *ctx;
    struct uiw__lock lock; /* before its CQs' locks */
    int fd;
    struct uiw_cq *pending; /* CQs with an undelivered event */
    bool signaled;          /* fd's counter is non-zero: exactly while pending != NULL */
    _Atomic int ncq;
};

struct uiw_cq {
    struct uiw_context *ctx;
    struct uiw__lock lock;
    struct uiw_wc *ring;
    uint32_t cap;  /* physical */
    uint32_t cqe;  /* advertised */
    uint32_t head; /* next to poll */
    uint32_t count;
    _Atomic uint32_t avail; /* count, for a poll that finds the CQ empty without the lock */
    int armed;              /* 0, 1 = all, 2 = solicited */
    bool overflow_reported;
    struct uiw_comp_channel *channel;
    void *cq_context;
    struct uiw_cq *chan_next;
    bool chan_queued;
    /* events taken (channel lock and this lock held: never both counts equal and the
     * event off the channel) and acknowledged (this lock) */
    unsigned events_done, events_acked;
    _Atomic int nqp;
};

/* Queue a completion; returns 0, or -ENOSPC when the CQ overflowed (reported once). */
int uiw__cq_push(struct uiw_cq *cq, const struct uiw_wc *wc);

/* ---------------------------------------------------------------- QP */

enum uiw__swqe_state {
    UIW__SWQE_QUEUED = 0, /* not started */
    UIW__SWQE_TX,         /* segments being built */
    UIW__SWQE_WAIT_SENT,  /* all segments built, waiting for the last byte to go out */
    UIW__SWQE_WAIT_RESP,  /* Read Request sent (or built), waiting for the response */
    UIW__SWQE_DONE,       /* has its status, waits to be retired in order */
};

/* A send queue entry: what a Send or Write touches in its first line, its SGEs and their
 * resolved pointers in the next two (192 bytes, a multiple of the line). */
struct uiw__swqe {
    uint64_t wr_id;
    uint8_t opcode; /* enum uiw_wr_opcode */
    uint8_t state;
    uint8_t num_sge;
    bool inv_reads; /* a LOCAL_INV the application ran (TX): io may still read into its
                       region, into iovecs checked before (tx.c sq_local) */
    unsigned flags;
    uint32_t len; /* total payload bytes */
    uint32_t off; /* payload bytes already segmented */
    uint32_t msn; /* untagged MSN of the message */
    int status;   /* enum uiw_wc_status when DONE */
    int vendor_err;
    uint32_t inv_rkey;
    uint32_t rkey;
    bool file; /* resolved: its SGE names a file region (uiw_reg_mr_file) */
    uint64_t remote_addr;
    uint8_t *inline_buf; /* max_inline bytes, per slot */
    struct uiw_sge sge[UIW__MAX_SGE];
    uint8_t *ptr[UIW__MAX_SGE]; /* resolved SGEs */
    struct uiw_mr *reg_mr;
    void *reg_addr;
    size_t reg_len;
    unsigned reg_access;
    uint32_t reg_key;
};
_Static_assert(sizeof(struct uiw__swqe) % 64 == 0 && offsetof(struct uiw__swqe, sge) == 64,
               "a send queue entry is whole lines, its first one for a small Send or Write");

/* A receive queue entry: one line holds all that a small Send into its first SGE reads
 * (the RQ is 64-byte aligned and its entries 128 bytes). */
struct uiw__rqe {
    _Alignas(64) uint64_t wr_id;
    uint32_t len;
    /* ptr holds the SGEs resolved at STag table generation gen (0: not resolved): valid
     * while the table is unchanged (uiw__rqe_resolve) */
    uint32_t gen;
    uint8_t *ptr[UIW__MAX_SGE];
    struct uiw_sge sge[UIW__MAX_SGE];
    uint8_t num_sge;
    uint8_t pad[15];
};
_Static_assert(sizeof(struct uiw__rqe) == 128, "a receive queue entry is two lines");

/* ---------------------------------------------------------------- SRQ */

/* A shared receive queue: a ring of receives resolved at post time. A QP on it keeps a
 * receive queue of one entry, which it refills from here (uiw__srq_take) when a Send needs
 * a receive: from then on the receive is the QP's, as a posted one. */
struct uiw_srq {
    struct uiw__lock lock; /* after a QP's lock; before the STag table's, the async queue's */
    struct uiw_context *ctx;
    struct uiw_pd *pd;
    void *srq_context;
    struct uiw__rqe *rq;
    uint32_t size; /* of the ring: a power of two >= max_wr */
    uint32_t max_wr, max_sge;
    uint32_t head, tail; /* free-running: [head, tail) posted */
    uint32_t limit;      /* armed low-water mark, 0 if not armed */
    /* posted receives UIW__RX_DIRECT_MIN bytes long or more (written under the lock, read
     * without it by uiw__qp_rx_narrow of its QPs) */
    _Atomic uint32_t rq_wide;
    _Atomic int nqp; /* QPs created on it */
};

/* An inbound Read Request being answered: its source is checked again (and pinned) for
 * each segment, so that memory deregistered or invalidated meanwhile is never read. */
struct uiw__ird {
    uint32_t sink_stag;
    uint64_t sink_to;
    uint32_t size;
    uint32_t off;
    uint32_t src_stag;
    uint64_t src_to;
    uint32_t msn; /* of the Read Request, for the Terminate that may answer it */
};

/* A payload up to this size (without markers) is copied behind its header, with the pad
 * and CRC after it, so that the FPDU leaves in one piece: one send() instead of a
 * sendmsg() of several iovecs, whose msghdr and iovec import cost a small message about
 * 0.15 us more on a kernel with page-table isolation (Linux siw, too, copies a small
 * payload into the header buffer). */
#define UIW__TX_COPY_MAX 256

/* One FPDU under transmission. */
struct uiw__txslot {
    uint8_t len[2]; /* the MPA length, just before hdr */
    /* DDP/RDMAP headers and body; or header, a small payload, pad and CRC */
    uint8_t hdr[UIW_DDP_UNTAGGED_HDR_LEN + 64 + UIW__TX_COPY_MAX + 8];
    uint8_t *scratch; /* framing bytes (uiw_fpdu_tx_scratch) */
    struct iovec *iov;
    int niov;
    size_t wire_len;
    uint32_t swqe; /* SQ index completed when this slot's last byte is out */
    bool has_swqe;
    bool terminate; /* the Terminate */
    uint32_t pin;   /* STag index a Read Response segment pinned (uiw__qp_stag_pin), or 0 */
    /* a payload from a file region: its iovec's base is uiw__tx_file_mark, its bytes those
     * of file at file_off (a reference of the slot's) */
    struct uiw__file_src *file;
    uint64_t file_off;
    /* the framer's state before this slot was built: unsent slots can be dropped (abort)
     * without breaking marker positions */
    struct uiw_fpdu_tx ftx_before;
};

enum uiw__rx_kind {
    UIW__RX_NONE = 0,
    UIW__RX_WRITE,
    UIW__RX_RRESP,
    UIW__RX_SEND,
    UIW__RX_RREQ,
    UIW__RX_TERM,
    UIW__RX_DISCARD, /* zero-length RTR Write */
};

/* Where the receive parser is in the current FPDU, as siw's SIW_GET_HDR .. SIW_GET_DATA
 * (the framing around the ULPDU, length field, markers, pad and CRC, is the FPDU
 * parser's, qp->frx): */
enum uiw__rx_state {
    UIW__RX_GET_LEN = 0, /* no byte of the ULPDU yet: its length is not taken */
    UIW__RX_GET_HDR,     /* the length taken (rx_ulen): the header goes into rx_hdr, up to
                            rx_hdr_need (raised once the T bit, then the QN, say more) */
    UIW__RX_GET_DATA,    /* the header checked (rx_kind, rx_plen): payload, then trailer */
};

/* What the iovecs the last rx_next handed out receive. */
enum uiw__rx_run {
    UIW__RX_RUN_FRAMING = 0, /* framing, or bytes nobody keeps */
    UIW__RX_RUN_HDR,         /* header bytes, into rx_hdr */
    UIW__RX_RUN_PAYLOAD,     /* payload, placed where rx_kind says */
};

#define UIW__RX_HDR_CAP   128
#define UIW__RX_STAGE_CAP 16384
#define UIW__TX_SLOTS     64
#define UIW__TX_AHEAD     (256u * 1024) /* bytes built but not yet sent */

/* Laid out by use: the fields that a small message in and out touches come first, in
 * cache lines of their own (the QP is 64-byte aligned), and the rest behind them; after
 * each system call the kernel has evicted much of what the last message touched. */
struct uiw_qp {
    /* line 0: the state every path checks first */
    struct uiw__lock lock;
    enum uiw_qp_state state;
    enum uiw__rx_state rx_state;
    bool started;
    bool want_close;
    bool rtr_wait_rx; /* responder: the RTR has not arrived yet */
    bool tx_hold;     /* responder: no FPDU of the initiator validated yet, so nothing may
                         go on the wire (RFC 5044 7.1.2); local operations still run */
    bool rx_failed;
    bool rx_small; /* the last segment was a small one: prefer the staging ring */
    bool term_pending;
    bool term_queued;
    bool rtr_send_pending; /* initiator: the RTR message is still to be built */
    bool wake_pending;     /* initiator: the wake-up zero-length Write is to be built */
    bool tx_turn;          /* the Read Responses' turn at the next message boundary */
    bool sig_all;
    struct uiw_context *ctx;
    struct uiw_pd *pd;
    struct uiw_cq *send_cq, *recv_cq;
    void *io;

    /* line 1: the queues. Send queue: [sq_head, sq_tail) posted, sq_tx = next to start */
    _Alignas(64) struct uiw__swqe *sq;
    uint32_t sq_size, sq_head, sq_tx, sq_tail; /* free-running */
    uint32_t orq_count;                        /* Reads awaiting responses */
    /* of those, the ones UIW__RX_DIRECT_MIN bytes long or more (written under the QP lock,
     * read without it by uiw__qp_rx_narrow) */
    _Atomic uint32_t orq_wide;
    uint32_t send_msn;
    uint32_t irq_count; /* inbound Read Requests queued (irq below) */
    struct uiw__rqe *rq;
    uint32_t rq_size, rq_head, rq_tail;
    _Atomic uint32_t rq_wide; /* posted receives UIW__RX_DIRECT_MIN bytes long or more */

    /* line 2: transmit slots, receive sequence */
    _Alignas(
        64) uint8_t *slot_mem; /* the UIW__TX_SLOTS slot records (tx.c), slot_stride bytes apart */
    size_t slot_stride;
    size_t slot_off;               /* bytes of the head slot already sent */
    size_t tx_ahead;               /* wire bytes of the built slots */
    uint32_t slot_head, slot_tail; /* free-running: [head, tail) built */
    uint32_t slot_given;           /* [head, given) handed to io by tx_next, until tx_advance */
    int iov_per_slot;
    uint32_t rx_send_msn; /* expected MSN */
    uint32_t rx_send_len; /* bytes of the current Send so far: its next segment's MO */
    uint16_t rx_ulen;
    uint32_t qpn;

    /* line 3: the framers */
    _Alignas(64) struct uiw_fpdu_tx ftx;
    struct uiw_fpdu_rx frx;

    /* line 4 */
    _Alignas(64) uint8_t *stage;
    struct uiw__conn_params cp;
    unsigned stag_hit_next;
    struct uiw_qp_cap cap;
    struct uiw_srq *srq; /* the receives come from here (rq is one entry), or NULL */

    /* line 5: the last two successful STag checks (mem.c) */
    _Alignas(64) struct uiw__stag_hit stag_hit[2];

    /* lines 6-7: counters, moved to the context's atomics once per entry call
     * (uiw__qp_stat_flush) */
    _Alignas(64) uint64_t st[UIW__STAT_COUNT];

    /* the rest: other operations, the resumable parser, errors */
    _Alignas(64) struct uiw_qp *ctx_prev, *ctx_next; /* ctx->qps, under ctx->qps_lock */
    void *qp_context;
    uint8_t *inl; /* sq_size inline buffers of cap.max_inline_data bytes, or NULL */
    uint16_t max_ird, max_ord;
    uint32_t rreq_msn;

    bool last_wqe_sent; /* UIW_EVENT_QP_LAST_WQE_REACHED queued */
    bool destroying;    /* in uiw_destroy_qp: no more events name it */

    /* inbound Read Requests (IRD) */
    struct uiw__ird *irq;
    uint32_t irq_size, irq_head;

    void *txm; /* tx.c's per-QP scratch */
    struct uiw_terminate term_out;
    bool rtr_read_pending; /* initiator: the zero-length RTR Read Response is due */

    /* receive */
    uint8_t rx_framing[16];
    uint8_t rx_hdr[UIW__RX_HDR_CAP];
    uint16_t rx_hdr_need, rx_hdr_have;
    uint8_t rx_hdr_len; /* DDP (+RDMAP) header length */
    struct uiw_ddp_hdr rx_ddp;
    enum uiw__rx_kind rx_kind;
    uint32_t rx_plen;
    uint8_t *rx_tgt; /* tagged target / not used for untagged */
    uint32_t rx_gen; /* the STag table generation the payload's target was checked at */
    /* rx_gen while payload iovecs handed out by rx_next may be read into (io reads without
     * the QP lock), until rx_advance; 0 when none are: uiw_dereg_mr waits for it
     * (uiw__ctx_rx_quiesce) */
    _Atomic uint32_t rx_placing;
    struct uiw__rqe *rx_rqe;
    /* the iovecs handed out by the last rx_next */
    struct iovec rx_iov[UIW__MAX_SGE + 1];
    int rx_niov;
    bool rx_has_tail;        /* the last of rx_iov is the lookahead (rx_tail) */
    bool rx_burst;           /* small FPDUs queue up back to back: peek the whole ring */
    uint8_t rx_streak;       /* exact reads in a row that found the next FPDU there */
    uint16_t rx_exact;       /* the cap of the last UIW__RX_EXACT advice, else 0 */
    uint8_t rx_tail[48];     /* pad + CRC of this FPDU and the next FPDU's length + header */
    enum uiw__rx_run rx_run; /* what rx_iov receives */
    uint32_t rx_rreq_msn;    /* expected MSN */
    uint32_t rx_rresp_got;   /* bytes of the oldest Read's response so far */
    /* uiw__qp_rx_note's record: the time of the last receive pass that left part of an
     * FPDU held, 0 at a boundary (written by io, read by anyone: relaxed) */
    _Atomic uint64_t rx_partial_ms;

    bool tx_held; /* the last post said UIW_SEND_MORE: uiw_post_send_flush sends it */

    /* Terminate info */
    bool term_sent, term_received;
    struct uiw_terminate term_in;
    uint8_t tl, te, tc;

    /* the file segment the last tx_next handed io (uiw__qp_tx_file), -1: none */
    int tx_file_fd;
    uint64_t tx_file_off;
};
_Static_assert(offsetof(struct uiw_qp, sq) == 64 && offsetof(struct uiw_qp, slot_mem) == 128 &&
                   offsetof(struct uiw_qp, ftx) == 192 && offsetof(struct uiw_qp, stage) == 256 &&
                   offsetof(struct uiw_qp, stag_hit) == 320 && offsetof(struct uiw_qp, st) == 384,
               "the QP's hot fields fill its first lines, each group in its own");

/* Count into the QP (QP lock held): no atomics on the data path; uiw_query_context_stats
 * sums the context's counters and those of its live QPs. */
static inline void uiw__qstat(struct uiw_qp *qp, enum uiw__stat s, uint64_t n)
{
    qp->st[s] += n;
}
/* Fold a QP's counters into its context's (at destroy). */
void uiw__qp_stat_flush(struct uiw_qp *qp);
/* Add d to a count written only under its owner's lock and read without it. */
static inline void uiw__count_add(_Atomic uint32_t *c, int d)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + (uint32_t)d,
                          memory_order_relaxed);
}
static inline void uiw__qp_unlock(struct uiw_qp *qp)
{
    uiw__lock_give(&qp->lock);
}

/* uiw_dereg_mr, once the STag table's generation is g (and no engine lock held): wait
 * until no QP of ctx still places into memory checked at an older generation (a copy
 * from its staging ring, under its lock; a read of io's into the iovecs of rx_next). */
void uiw__ctx_rx_quiesce(struct uiw_context *ctx, uint32_t g);

/* tx.c */
/* Nothing that tx.c could build: no Terminate, RTR, Read Response or unstarted part of a
 * WR (building would find as much, at several times the cost). The send queue first:
 * right after a post (sq_ring, tx_fill) its unstarted WR answers at once. */
static inline bool uiw__tx_idle(const struct uiw_qp *qp)
{
    return qp->sq_tx == qp->sq_tail && !qp->term_pending && !qp->rtr_send_pending &&
           !qp->wake_pending && qp->irq_count == 0;
}
/* Run the local operations (REG_MR, LOCAL_INV) at the head of the send queue now, as
 * building would run them, in order, building no FPDU (QP lock held). */
void uiw__tx_run_local(struct uiw_qp *qp);
/* Whether building would find something to build now (QP lock held): a look at what
 * building checks first, changing nothing. It may say yes when the step then waits (a
 * Read Response or a LOCAL_INV behind a segment of a region being invalidated), never no
 * when something can be built. */
bool uiw__tx_can_build(const struct uiw_qp *qp);
/* Whether uiw__qp_tx_next would have bytes: FPDUs built and not sent, or some to build. */
static inline bool uiw__tx_pending(const struct uiw_qp *qp)
{
    return qp->slot_head != qp->slot_tail || (!uiw__tx_idle(qp) && uiw__tx_can_build(qp));
}
void uiw__tx_drop_unsent(struct uiw_qp *qp);
/* The stream is gone (nothing will be sent): drop every slot, the one under way too. */
void uiw__tx_drop_all(struct uiw_qp *qp);
/* Whether a segment built from STag index idx waits to be sent (droppable: one that io was
 * not given and that nothing of went out yet). */
bool uiw__tx_pinned(const struct uiw_qp *qp, uint32_t idx, bool droppable);
/* uiw_dereg_mr of STag index idx: a QP with droppable segments built from it fails its
 * stream (RDMAP / Remote Protection / Invalid STag), which drops them. Whether it did. */
bool uiw__tx_stag_gone(struct uiw_qp *qp, uint32_t idx);
/* uiw_dereg_mr of STag index idx, after uiw__tx_stag_gone: the segments built from it that
 * are still to go out (TCP has begun to take them) are copied, and sent from the copy, so
 * that the region may be freed. 0 (none left), -EAGAIN while io holds their iovecs (its
 * tx_next not yet followed by a tx_advance), -ENOMEM. */
int uiw__tx_unpin(struct uiw_qp *qp, uint32_t idx);
int uiw__tx_alloc(struct uiw_qp *qp);
void uiw__tx_free(struct uiw_qp *qp);

/* rx.c */
void uiw__rx_init(struct uiw_qp *qp);
/* The Terminate code of a Read Request's failed source check. */
int uiw__read_code(enum uiw__stag_err e);
/* Resolve r's SGEs for placement (QP lock held): 0, or UIW_E_RNIC_LOCAL_PROT when one is
 * not a valid local-write STag of the QP's PD. Done once per table generation: post_recv
 * resolves ahead (off the path of the message that arrives later), and placement checks
 * only that nothing changed since. */
int uiw__rqe_resolve(struct uiw_qp *qp, struct uiw__rqe *r);
/* The same for a receive of no QP yet (an SRQ's), against pd's table. */
int uiw__rqe_resolve_pd(struct uiw_context *ctx, const struct uiw_pd *pd, struct uiw__rqe *r);

/* srq.c: move the SRQ's oldest receive into the QP's (empty) receive queue (QP lock
 * held); false if the SRQ is empty. Fires the SRQ's armed limit. */
bool uiw__srq_take(struct uiw_qp *qp);
/* A receive waits at the head of the QP's receive queue (taken from its SRQ if need be). */
static inline bool uiw__rq_ready(struct uiw_qp *qp)
{
    return qp->rq_head != qp->rq_tail || (qp->srq && uiw__srq_take(qp));
}

/* qp.c: check a receive WR (at most max_sge SGEs, 4 GiB) and build its entry: 0 or
 * -EINVAL. */
int uiw__rqe_build(struct uiw__rqe *q, const struct uiw_recv_wr *wr, uint32_t max_sge);

/* qp.c */
/* The segment a failure is about, as its Terminate quotes it (RFC 5040 4.8): its kind,
 * its DDP header (ddp_len bytes, or NULL), its length (the MPA ULPDU length) and the RDMA
 * header of a Read Request (UIW_RDMAP_READ_REQ_LEN bytes, or NULL). */
struct uiw__term_quote {
    bool tagged;
    const uint8_t *ddp;
    uint8_t ddp_len;
    uint16_t seg_len;
    const uint8_t *rdma;
};
/* The QP fails with code (an engine code): a Terminate is queued for the peer (if it may
 * be sent), the QP goes to TERMINATE or ERROR, the work requests are flushed. */
void uiw__qp_fail(struct uiw_qp *qp, int code);
/* The same, about a segment q quotes (NULL: none). */
void uiw__qp_fail_quoting(struct uiw_qp *qp, int code, const struct uiw__term_quote *q);
void uiw__qp_flush(struct uiw_qp *qp);
/* uiw_dereg_mr of STag index idx (invalid already): every QP of ctx drops the Read
 * Response segments it built from it and has not begun to send, and its stream ends. */
void uiw__ctx_stag_gone(struct uiw_context *ctx, uint32_t idx);
/* Then: uiw__tx_unpin on each QP of ctx; false while one must be retried. */
bool uiw__ctx_stag_unpin(struct uiw_context *ctx, uint32_t idx);
void uiw__sq_retire(struct uiw_qp *qp);
void uiw__qp_complete_recv(struct uiw_qp *qp, struct uiw__rqe *r, int status, uint32_t len,
                           unsigned flags, uint32_t inv, int vendor);
void uiw__qp_check_close(struct uiw_qp *qp);
/* A Terminate from the peer arrived: no more sends (RFC 5040 5.4), flush, ERROR. */
void uiw__qp_term_received(struct uiw_qp *qp, const struct uiw_terminate *t);
void uiw__async(struct uiw_qp *qp, enum uiw_event_type t, int code);

/* term.c: the one table from an engine code to its consequences */
struct uiw__term_map {
    int code;
    int8_t model; /* 1: tagged segments only, 0: untagged only, -1: either */
    uint8_t layer, etype, ecode;
    uint8_t hdrct;       /* which optional headers the Terminate carries: M, D, R */
    int8_t async;        /* enum uiw_event_type or -1 */
    int8_t local_status; /* WC status of the local WR the error hit, -1 if none */
};
/* The row for code on a tagged (1) / untagged (0) / no (-1) segment; never NULL (unknown
 * codes get RDMAP / Remote Operation / Unspecified). */
const struct uiw__term_map *uiw__term_lookup(int code, int tagged);
/* WC status for the WR in progress when the peer's Terminate arrived. */
enum uiw_wc_status uiw__term_remote_status(const struct uiw_terminate *t);

#endif
