/* uiw: rnic.h interface ready */
/*
 * Internal interface of the RNIC engine (src/rnic) for the io layer (src/io).
 *
 * The engine does no I/O on sockets: it is told about stream bytes. The io layer owns the
 * sockets and the event loop; it creates the context (uiw_open_context), binds QPs to
 * connections, runs the MPA handshake, then drives each QP with these calls:
 *
 *   after the handshake:  uiw__qp_start(qp, &params)          IDLE -> RTS
 *   receive:              n = uiw__qp_rx_next(qp, iov, max);  readv(fd, iov, n) -> k;
 *                         r = uiw__qp_rx_advance(qp, k);
 *                     or  uiw__qp_rx_stage(qp, &buf, &cap);   read(fd, buf, cap) -> k;
 *                         r = uiw__qp_rx_staged(qp, k, &w);
 *                     or  peek(fd, buf, cap) -> n; k = uiw__qp_rx_take(qp, n, &w); consume k
 *   transmit:             n = uiw__qp_tx_next(qp, iov, max);  writev(fd, iov, n) -> k;
 *                         uiw__qp_tx_advance(qp, k);
 *   connection gone:      uiw__qp_conn_lost(qp, -ECONNRESET / -ETIMEDOUT / 0 for EOF)
 *   close:                uiw__qp_close(qp, graceful)
 *   after every call:     w = uiw__qp_want(qp) tells whether TX bytes are pending and
 *                         whether the engine wants the socket shut down.
 *
 * Locking (the contract between engine, io and application threads):
 * - Each QP has one lock (struct uiw__lock, src/common/lock.h); every uiw__qp_* call and
 *   every verb on the QP takes it. Each CQ has one (then its channel's mutex); the STag
 *   table has one (the data path mostly answers from a QP's uiw__stag_hit instead); the
 *   async queue has one; an SRQ has one (its ring only); the context's QP list has one
 *   (taken before QP locks, by create / destroy / uiw_query_context_stats only). Order: QP
 *   list -> QP -> SRQ, CQ -> channel, STag table, async queue. No engine lock is held when a
 * uiw__io_ops callback runs, so io may take its own locks in a callback and call back into any
 *   uiw__qp_* function (never from inside its own callback while holding a lock that
 *   another thread may hold while calling into the engine).
 * - The engine calls io only through struct uiw__io_ops (set by uiw_open_context).
 *   Paths started by io (rx_advance, tx_advance, conn_lost...) do not call qp_kick: io
 *   checks uiw__qp_want() after them. Paths started by the application that create TX
 *   work (uiw_post_send, uiw_modify_qp_state) call qp_kick after releasing the QP lock;
 *   uiw_post_send first offers the bytes to qp_send, with the QP lock held (the one
 *   callback that runs under an engine lock: it calls only the *_locked functions);
 *   uiw_destroy_qp calls qp_destroy; uiw_poll_cq calls progress; uiw_wait_cq_event and
 *   uiw_get_cq_event call wait (no engine lock held).
 * - Completion channels and the async fd are eventfds written by the engine (cq.c,
 *   ctx.c); these writes never block.
 */
#ifndef UIW_RNIC_RNIC_H
#define UIW_RNIC_RNIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <uiw/verbs.h>
#include <uiw/wire.h>

/* ---------------------------------------------------------------------------------------
 * Context: allocated by the engine, owned by io's uiw_open_context / uiw_close_context.
 * ------------------------------------------------------------------------------------- */

struct uiw__io_ops {
    /* The QP has new work for io: TX bytes (post_send), or it wants to be closed
     * (uiw__qp_want). Called with no engine lock held. May be NULL. */
    void (*qp_kick)(struct uiw_qp *qp, void *io_ctx);
    /* uiw_post_send queued WRs (no FPDU built yet) and holds the QP lock: io may build
     * and send their bytes right away if it can without waiting for any lock or for the
     * socket (trylock, MSG_DONTWAIT), using only uiw__qp_tx_next_locked (which builds),
     * uiw__qp_tx_advance_locked and uiw__qp_want_locked. Returns true if nothing is left
     * for io to do (all sent, no close wanted); false and the engine calls qp_kick after
     * the unlock. May be NULL. */
    bool (*qp_send)(struct uiw_qp *qp, void *io_ctx);
    /* Inline progress: called by uiw_poll_cq when the CQ has nothing to return (no engine
     * lock held); io runs one non-blocking pass over its sockets if nobody else is
     * (trylock), so a busy-polling application pays no thread hand-off. May be NULL. */
    void (*progress)(struct uiw_context *ctx, void *io_ctx);
    /* uiw_destroy_qp is about to free qp: io must unbind it from its connection (and
     * close the socket) before returning. Called with no engine lock held. May be NULL. */
    void (*qp_destroy)(struct uiw_qp *qp, void *io_ctx);
    /* uiw_wait_cq_event found no event: sleep until fd (the channel's eventfd) is
     * readable or timeout_ms (-1: no limit) passed, doing io's work inline when io's
     * sockets (or its doorbell) wake the thread first, so that input reaches a sleeping
     * application with no hand-off from the progress thread. Returns after one wake-up:
     * 0 or -errno. May be NULL (the engine then polls fd). */
    int (*wait)(struct uiw_context *ctx, void *io_ctx, int fd, int timeout_ms);
    /* uiw_req_notify_cq armed the context's first CQ (none was armed): the application is
     * about to sleep on its channel, so a progress thread that only naps while the
     * application busy-polls must watch the sockets now. Called with no engine lock held.
     * May be NULL. */
    void (*armed)(struct uiw_context *ctx, void *io_ctx);
};

/* Allocate a context's engine part (STag table, async queue and its eventfd, stats).
 * attr NULL = defaults. NULL + errno. uiw_open_context (io) calls it first. */
struct uiw_context *uiw__context_alloc(const struct uiw_context_attr *attr);
/* Free it: -EBUSY while PDs, CQs, QPs, channels exist. uiw_close_context calls it last. */
int uiw__context_free(struct uiw_context *ctx);
/* io's callbacks and its own state (io_ctx, passed back to the callbacks). */
void uiw__context_set_io(struct uiw_context *ctx, const struct uiw__io_ops *ops, void *io_ctx);
void *uiw__context_io(const struct uiw_context *ctx);
/* Whether the application waits for a completion event: some CQ with a completion channel
 * is armed (uiw_req_notify_cq) and has not fired yet. A progress thread must then watch
 * the sockets, even if the application polled often a moment ago. Lock-free. */
bool uiw__ctx_waiting(struct uiw_context *ctx);
const struct uiw_context_attr *uiw__context_attr(const struct uiw_context *ctx);

/* Stats counters io adds to (relaxed atomics). */
enum uiw__stat {
    UIW__STAT_TX_BYTES,
    UIW__STAT_RX_BYTES,
    UIW__STAT_TX_FPDUS,
    UIW__STAT_RX_FPDUS,
    UIW__STAT_PLACED,
    UIW__STAT_COPIED,
    UIW__STAT_TERM_SENT,
    UIW__STAT_TERM_RECV,
    UIW__STAT_CRC_ERRORS,
    UIW__STAT_ASYNC_DROPPED,
    UIW__STAT_FILE,
    UIW__STAT_COUNT
};
void uiw__stat_add(struct uiw_context *ctx, enum uiw__stat s, uint64_t n);

/* Queue an async event (engine and io may call it; e.g. io for CONN_CLOSED of a QP it
 * closed itself). Never blocks; counts a drop when the queue is full. */
void uiw__async_post(struct uiw_context *ctx, const struct uiw_async_event *ev);

/* ---------------------------------------------------------------------------------------
 * QP binding and start
 * ------------------------------------------------------------------------------------- */

struct uiw_context *uiw__qp_context(const struct uiw_qp *qp);
/* io's per-connection state for a QP (NULL while unbound). */
void uiw__qp_set_io(struct uiw_qp *qp, void *io_conn);
void *uiw__qp_io(const struct uiw_qp *qp);
/* The IRD / ORD the application asked for at create time (what io offers in MPA). */
void uiw__qp_get_limits(const struct uiw_qp *qp, uint16_t *max_ird, uint16_t *max_ord);

enum uiw__rtr {
    UIW__RTR_NONE = 0, /* no peer-to-peer RTR (Rev 1, or Rev 2 without the A bit) */
    UIW__RTR_SEND,     /* zero-length Send */
    UIW__RTR_WRITE,    /* zero-length RDMA Write */
    UIW__RTR_READ,     /* zero-length RDMA Read */
};

struct uiw__conn_params {
    uint8_t mpa_rev;   /* 1 or 2 */
    bool crc;          /* CRC on in both directions */
    bool markers_tx;   /* we insert markers (the peer asked, M in its frame) */
    bool markers_rx;   /* the peer inserts markers (we asked) */
    uint16_t mulpdu;   /* largest ULPDU we send (from EMSS; uiw_mpa_mulpdu), >= 50 */
    uint16_t ird;      /* negotiated: Read Requests we serve at once (0: none, a Read
                          Request is answered with the Terminate for an IRD overrun; the
                          zero-length RTR Read is served all the same) */
    uint16_t ord;      /* negotiated: Reads we may have outstanding (0: none, a Read posted
                          completes with UIW_WC_LOC_QP_OP_ERR and never reaches the wire);
                          with Rev 1 (no negotiation) what the application asked for */
    enum uiw__rtr rtr; /* negotiated RTR message, UIW__RTR_NONE if none */
    uint32_t conn_id;  /* the connection's number in log lines (common/log.h), 0: none */
    bool initiator;    /* we are the MPA initiator: with rtr we send the RTR first; as the
                          responder with rtr we send no FPDU before the RTR arrived (a
                          different first message is a Terminate MPA/7 "no matching RTR").
                          Zero-length RTR Write/Read use STag 1 and TO 0 (as siw); the responder
                          places nothing and does not validate it; a zero-length Send RTR
                          consumes no receive. */
};

/* IDLE -> RTS: set the framing parameters and queue the RTR when we are its sender.
 * IRD and ORD above the device's max_qp_rd_atom are clamped to it. Queues UIW_EVENT_COMM_EST.
 * -EINVAL (bad params), -EBUSY (not IDLE), -ENOMEM. */
int uiw__qp_start(struct uiw_qp *qp, const struct uiw__conn_params *params);

/* ---------------------------------------------------------------------------------------
 * Receive
 * ------------------------------------------------------------------------------------- */

/* The iovecs (up to max, max >= 1) into which the next bytes of the TCP stream belong:
 * the engine's header staging while a DDP header is incomplete, the target memory
 * (tagged: STag + TO; untagged: the posted receive at MO, one iovec per SGE) once the
 * header is checked, its framing area for length, markers, pad and CRC. Returns the count
 * (>= 1), 0 when the QP accepts no more bytes (TERMINATE / ERROR: io should drain and
 * discard or close). A readv into them may fill them partly. */
int uiw__qp_rx_next(struct uiw_qp *qp, struct iovec *iov, int max);

/* Account n bytes read into the iovecs of the last uiw__qp_rx_next (n <= their total).
 * Called after every read into them, also one that took nothing (n = 0: EOF, EAGAIN, an
 * error): until then uiw_dereg_mr of a region they point into waits. Returns 0, or a
 * fatal code (UIW_E_*, negative): then the engine has queued a
 * Terminate (uiw__qp_want shows TX) and moved the QP to TERMINATE; it moves to ERROR
 * (and wants the socket closed) once the Terminate is sent. UIW_E_RNIC_TERM_RECEIVED:
 * the peer's Terminate arrived, the QP is in ERROR and wants the socket closed. */
int uiw__qp_rx_advance(struct uiw_qp *qp, size_t n);

/* What uiw_dereg_mr waits for before it returns: a read of io's into the region, into
 * iovecs checked before (between rx_next and rx_advance), or segments built from the
 * region that io holds (between tx_next and tx_advance). */
enum uiw__dereg_wait { UIW__DEREG_WAIT_READ, UIW__DEREG_WAIT_SEND };
/* Called, when not NULL, in uiw_dereg_mr's thread as it starts such a wait (once per QP
 * it waits for), with the context's QP list locked: it may only take note. For tests,
 * which set it before starting the threads that deregister; NULL otherwise, and looked at
 * only when uiw_dereg_mr has to wait. */
extern void (*uiw__dereg_wait_hook)(struct uiw_context *ctx, enum uiw__dereg_wait what);

/* How io should read the next bytes (uiw__qp_rx_stage's advice). */
enum uiw__rx_advice {
    /* direct reads: a large payload is next, or large segments are flowing: use
     * uiw__qp_rx_next, which points straight into the target and appends a small lookahead
     * iovec for the FPDU's trailer and the next FPDU's header, so one readv per FPDU
     * suffices */
    UIW__RX_DIRECT = 0,
    /* small segments are flowing: peek into the ring and take (uiw__qp_rx_take), which
     * keeps a large payload that may follow out of the ring */
    UIW__RX_PEEK = 1,
    /* nothing but small segments can legally arrive now (uiw__qp_rx_narrow): read() into
     * the ring and pass the bytes to uiw__qp_rx_staged, with no consume afterwards */
    UIW__RX_READ = 2,
    /* the next *cap bytes belong in the ring whatever the application does (the known rest
     * of the current FPDU: framing, header, a small payload; and the next FPDU's length and
     * header): read() them as UIW__RX_READ, one read for a small FPDU that follows a large
     * one, never a payload byte of a large one */
    UIW__RX_EXACT = 3,
};

/* Bulk mode for small FPDUs: *buf, *cap is a staging ring area to read() into (*cap: the
 * most bytes the advice allows, to peek or read). Returns the advice (enum
 * uiw__rx_advice), or -EPIPE when the QP accepts no more bytes. Payload bytes that land
 * in the ring are copied (and counted). */
int uiw__qp_rx_stage(struct uiw_qp *qp, uint8_t **buf, size_t *cap);

/* True while no segment whose payload goes straight to memory can legally arrive: no
 * posted receive (in the QP's SRQ neither), no Read awaiting its response and no STag of
 * the QP's PD that a peer may write (REMOTE_WRITE), of 1 KiB or more. Safe without the QP lock: a
 * stale answer (the application posted or registered at that moment) costs at most a counted copy.
 */
bool uiw__qp_rx_narrow(const struct uiw_qp *qp);

/* True while a Read of 1 KiB or more awaits its response: uiw__qp_rx_stage then advises
 * no peek at an FPDU boundary (the response's payload would be copied in vain), so a
 * UIW__RX_PEEK hint given before the Read went out no longer holds. Safe without the QP
 * lock, as uiw__qp_rx_narrow. */
bool uiw__qp_rx_wide_read(const struct uiw_qp *qp);

/* Zero copy at the switch from small to large segments: with staging advised, io may
 * peek (recv MSG_PEEK) up to *cap bytes into *buf instead of reading them, and let the
 * engine take what belongs in the ring: uiw__qp_rx_take(qp, n, &want) processes the complete
 * small FPDUs and framing at the start of the n peeked bytes (as uiw__qp_rx_staged),
 * stopping at the first payload byte of a large segment (payload >= 1 KiB or not the
 * message's last), whose payload then goes straight to memory through uiw__qp_rx_next.
 * Returns k (0 <= k <= n), the bytes processed, which io then consumes from the socket
 * without copying them again (recv MSG_TRUNC), at the latest before its next read of it;
 * 0 means: nothing through the ring now, use uiw__qp_rx_next. -EPIPE when the QP accepts
 * no more bytes; a negative engine code (UIW_E_*) when the bytes failed the stream (a
 * Terminate is queued; the rest of the stream is to be discarded). With want, *want gets
 * what uiw__qp_want would say afterwards, plus, when k > 0, UIW__WANT_STAGE when staging
 * is still advised (and UIW__WANT_READ when uiw__qp_rx_stage would say UIW__RX_READ,
 * UIW__WANT_EXACT when it would say UIW__RX_EXACT), so that a busy poller needs no more
 * engine calls for a plain message; with cap too, *cap then gets the *cap that
 * uiw__qp_rx_stage would give (left alone without UIW__WANT_STAGE). */
int uiw__qp_rx_take(struct uiw_qp *qp, size_t n, unsigned *want, size_t *cap);

/* Parse n bytes read into the staging area: every complete FPDU in it is processed;
 * small payloads are copied to their targets (counted in copied_payload_bytes); a partial
 * large payload at the end is copied too and the rest will be asked for through
 * uiw__qp_rx_next. Same return values as uiw__qp_rx_advance. With want, *want gets what
 * uiw__qp_want would say afterwards plus the staging advice (UIW__WANT_STAGE, with
 * UIW__WANT_READ for uiw__qp_rx_stage's UIW__RX_READ, UIW__WANT_EXACT for its
 * UIW__RX_EXACT) and *cap, as uiw__qp_rx_take gives them. */
int uiw__qp_rx_staged(struct uiw_qp *qp, size_t n, unsigned *want, size_t *cap);

/* A watch on a peer that sends part of an FPDU and then nothing, the connection staying
 * open: the parser would wait for the rest for ever, and TCP sees nothing wrong. io calls
 * uiw__qp_rx_note once per receive pass that read stream bytes: when the QP then holds
 * part of an FPDU (some of its bytes came, not all), it records now_ms() (a monotonic
 * clock in ms, called only then), else it clears the record. uiw__qp_rx_partial_since
 * (any thread, no lock) returns the record: when the last bytes came while an FPDU is
 * still incomplete, 0 when none is. */
void uiw__qp_rx_note(struct uiw_qp *qp, uint64_t (*now_ms)(void));
uint64_t uiw__qp_rx_partial_since(const struct uiw_qp *qp);

/* ---------------------------------------------------------------------------------------
 * Transmit
 * ------------------------------------------------------------------------------------- */

/* Fill up to max iovecs with the next bytes to send: many FPDUs (Terminate first, then
 * Read Responses, then the send queue in order, obeying fence and ORD), framing bytes
 * from engine scratch, payload straight from registered memory. Returns the count, 0 when
 * nothing is to send now. Repeated calls without tx_advance return the same bytes (plus
 * possibly more FPDUs appended). Memory stays valid until tx_advance covers it.
 * io calls it (and _locked) with none of its reads into the context's memory under way
 * (no rx_next without its rx_advance, no rx_staged or rx_take running, on any QP of the
 * context): a LOCAL_INV the application posted completes here, after every read into the
 * region that was checked before it. */
int uiw__qp_tx_next(struct uiw_qp *qp, struct iovec *iov, int max);

/* n bytes of the last tx_next's iovecs were written (a partial writev is fine). Completes
 * Sends / Writes whose last byte went out; after the Terminate went out the QP moves to
 * ERROR and wants the socket closed. Also with n = 0 once io holds the iovecs no more (a
 * write that took nothing): until then uiw_dereg_mr of a region they point into waits. */
void uiw__qp_tx_advance(struct uiw_qp *qp, size_t n);

/* The same, for io's uiw__io_ops.qp_send, which runs with the QP lock held. */
int uiw__qp_tx_next_locked(struct uiw_qp *qp, struct iovec *iov, int max);
void uiw__qp_tx_advance_locked(struct uiw_qp *qp, size_t n);

/* A payload from a file region (uiw_reg_mr_file) is not in memory: tx_next hands it to io
 * alone, as one iovec whose base is uiw__tx_file_mark (never read through), and returns the
 * iovecs before it without it. uiw__qp_tx_file then gives its file and the offset of its
 * first byte (0), or returns -ENOENT when the last tx_next handed no such iovec; io sends
 * it with sendfile(2), and zeros for bytes past the file's end. The descriptor stays open
 * until tx_advance covers the iovec. io's own calls only (the loop's lock held). */
extern const uint8_t uiw__tx_file_mark[1];
int uiw__qp_tx_file(const struct uiw_qp *qp, int *fd, uint64_t *off);

/* ---------------------------------------------------------------------------------------
 * Connection end
 * ------------------------------------------------------------------------------------- */

/* The connection is gone: reason 0 (EOF), -ECONNRESET, -ETIMEDOUT, -EPIPE... The QP goes
 * to ERROR and every outstanding WR completes: UIW_WC_WR_FLUSH_ERR, or
 * UIW_WC_RETRY_EXC_ERR for an operation that was in progress on the wire when reason is
 * not 0. Queues UIW_EVENT_CONN_CLOSED (and UIW_EVENT_QP_FATAL when reason != 0 and the QP
 * was in RTS). Idempotent. */
void uiw__qp_conn_lost(struct uiw_qp *qp, int reason);

/* Close. graceful: CLOSING: already posted WRs still go out and complete, new posts
 * flush; once the send queue is empty and nothing awaits a response the engine wants the
 * socket closed (UIW__WANT_CLOSE); io then calls uiw__qp_conn_lost(qp, 0).
 * Not graceful (abortive): from RTS a Terminate RDMAP / Remote Operation / Unspecified is
 * queued, every WR is flushed, the QP moves to TERMINATE and wants the socket closed once
 * the Terminate went out; otherwise straight to ERROR. -EINVAL in IDLE. */
int uiw__qp_close(struct uiw_qp *qp, bool graceful);

/* The initiator's wake-up: when the peer has sent nothing yet although our first FPDU has
 * been built, queue one zero-length RDMA Write (STag 1, TO 0, as the zero-length RTR
 * Write: it places nothing and a receiver does not check it). Its bytes make a responder
 * that missed our first FPDU read (Linux siw sends its MPA Reply before it moves the
 * socket's receive callback to the QP: an FPDU that lands in between waits for more
 * bytes). Returns 1 when queued (io sends it as any TX), 0 when not needed or possible.
 * io calls it a few tens of milliseconds after the first FPDU went out. */
int uiw__qp_wake(struct uiw_qp *qp);

enum uiw__want {
    UIW__WANT_TX = 1 << 0,    /* uiw__qp_tx_next has bytes */
    UIW__WANT_CLOSE = 1 << 1, /* all that must be sent was sent: shut the socket down */
    UIW__WANT_RX = 1 << 2,    /* the engine accepts more RX bytes */
    UIW__WANT_STAGE = 1 << 3, /* (uiw__qp_rx_take / _staged only) the next bytes go
                                 through the ring: what uiw__qp_rx_stage would now advise */
    UIW__WANT_READ = 1 << 4,  /* (with UIW__WANT_STAGE) read, no peek: its UIW__RX_READ */
    UIW__WANT_EXACT = 1 << 5, /* (with UIW__WANT_STAGE) read, no peek: its UIW__RX_EXACT */
};
/* A query: it changes nothing (FPDUs are built by uiw__qp_tx_next only). UIW__WANT_TX
 * may be set when uiw__qp_tx_next then finds nothing to send after all (what it would
 * build waits for a segment already built to go out), never missing when it has bytes. */
unsigned uiw__qp_want(struct uiw_qp *qp);
/* uiw__qp_want with the QP lock held (in uiw__io_ops.qp_send). */
unsigned uiw__qp_want_locked(const struct uiw_qp *qp);

enum uiw_qp_state uiw__qp_state(struct uiw_qp *qp);

#endif
