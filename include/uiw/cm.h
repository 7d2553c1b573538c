/*
 * uiw connection manager: the librdmacm shape over plain TCP with the MPA handshake.
 *
 *   struct uiw_cm_channel *ch = uiw_cm_create_channel();
 *   struct uiw_cm_id *id = uiw_cm_create_id(ch, ctx, my_state);
 *   // passive side
 *   uiw_cm_bind_addr(id, (struct sockaddr *)&sin);  uiw_cm_listen(id, 8, NULL);
 *   uiw_cm_get_event(ch, &ev, 5000);      // UIW_CM_EVENT_CONNECT_REQUEST, ev->id is new
 *   uiw_cm_create_qp(ev->id, pd, &attr);  uiw_cm_accept(ev->id, &param);
 *   // active side
 *   uiw_cm_create_qp(id, pd, &attr);  uiw_cm_connect(id, (struct sockaddr *)&sin, &param);
 *   uiw_cm_get_event(ch, &ev, 5000);      // UIW_CM_EVENT_ESTABLISHED
 *
 * Addresses are IPv4 or IPv6 socket addresses; no address or route resolution step is
 * needed (TCP does it). Each id belongs to one event channel; every event is returned by
 * uiw_cm_get_event and must be released with uiw_cm_ack_event.
 *
 * The handshake (RFC 5044 section 7.1, RFC 6581): the initiator sends the MPA Request,
 * the responder answers with the MPA Reply (or a Reply with the R bit, carrying the
 * reject's private data). MPA Rev 2 carries the IRD/ORD words (enhanced bit); a Rev 2
 * side facing a Rev 1 peer falls back to Rev 1 (a Rev 2 responder answers a Rev 1 Request
 * with a Rev 1 Reply; a Rev 2 initiator accepts a Rev 1 Reply). CRC is used in both
 * directions when either side sets C; markers are per direction (M asks the peer to send
 * markers). In peer-to-peer mode (Rev 2) the responder echoes A and picks one of the RTR
 * types the initiator offered; the initiator then sends that zero-length message first and
 * the responder sends no FPDU before receiving it.
 *
 * Wake-up Write (initiator): a responder can miss the initiator's first FPDU when it
 * arrives right after the MPA Reply (Linux siw sends its Reply before it moves the
 * socket's receive callback to the QP; an FPDU that lands in between sits unread until
 * more bytes arrive). When nothing has come from the peer 50 ms after the initiator's
 * first FPDU went out, the initiator sends a zero-length RDMA Write (STag 1, TO 0, as
 * the zero-length RTR Write of RFC 6581: a zero-length Write places nothing and its
 * STag and TO are not checked); its bytes make such a responder read. While the peer
 * still sends nothing, another follows after twice as long, five at most (at 50, 150,
 * 350, 750 and 1550 ms): a responder that was slow to move its socket misses the first
 * too. Any other peer ignores them. uiw_conn_param's no_wake_write turns it off.
 *
 * Progress: the channel's fd (uiw_cm_channel_fd) works with poll/epoll: it becomes
 * readable when handshake work or events are pending; uiw_cm_get_event does that work.
 * Connection setup thus needs no thread; after ESTABLISHED the connection's data moves to
 * the QP's context (its progress engine, see verbs.h). For a context without a progress
 * thread, uiw_cm_get_event also drives that context's connections (checking them at least
 * every 10 ms while it waits), so a peer's close is reported; the channel fd alone does
 * not wake up for them.
 *
 * Thread safety: calls on one channel and its ids are serialised by the channel's lock;
 * different channels are independent.
 */
#ifndef UIW_CM_H
#define UIW_CM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <uiw/error.h>
#include <uiw/export.h>
#include <uiw/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

struct uiw_cm_channel;

/* The public part of a connection identifier (as struct rdma_cm_id). */
struct uiw_cm_id {
    struct uiw_cm_channel *channel;
    struct uiw_context *verbs; /* the device context given at creation (inherited by the
                                * ids a listener creates) */
    struct uiw_qp *qp;         /* set by uiw_cm_create_qp, or by the application to a QP
                                * of its own (uiw_create_qp on a PD of the id's context)
                                * before uiw_cm_connect / uiw_cm_accept, as rping -q does;
                                * such a QP is destroyed with uiw_destroy_qp */
    void *context;             /* the application's pointer */
};

/* Offered RTR types (peer-to-peer mode) */
#define UIW_CM_RTR_SEND  0x1
#define UIW_CM_RTR_WRITE 0x2
#define UIW_CM_RTR_READ  0x4

#define UIW_CM_PD_MAX 512 /* RFC 5044's PD_Length bound (incl. Rev 2's 4 IRD/ORD bytes) */

/* responder_resources / initiator_depth: as many as the QP was created for (its max_ird /
 * max_ord). In a CONNECT_REQUEST event: the Request did not say (MPA Rev 1, or Rev 2
 * without the IRD/ORD words). */
#define UIW_CM_IRD_ORD_DEFAULT 0xFFFF

/*
 * Connection parameters, given to connect and accept (NULL = every default). A field
 * left zero means the default named with it, except responder_resources and
 * initiator_depth, where 0 means none (as in librdmacm): uiw_conn_param_init sets every
 * default, UIW_CM_IRD_ORD_DEFAULT included.
 * In a CONNECT_REQUEST event they hold what the peer's Request asked for; in a REJECTED
 * event the private data of the reject; in ESTABLISHED the negotiated result.
 */
struct uiw_conn_param {
    const void *private_data; /* ULP private data (copied during the call) */
    uint16_t private_data_len;
    uint16_t responder_resources; /* IRD: Read Requests we serve at once, at most the QP's
                                   * max_ird (0: none; a peer's Read Request then ends the
                                   * connection with a Terminate) */
    uint16_t initiator_depth;     /* ORD: Reads we have outstanding, at most the QP's max_ord
                                   * (0: none; an RDMA Read posted then completes with
                                   * UIW_WC_LOC_QP_OP_ERR without reaching the wire and the
                                   * QP goes to ERROR). Values above UIW_MPA_V2_IRD_ORD_MASK
                                   * other than UIW_CM_IRD_ORD_DEFAULT are refused */
    uint8_t mpa_rev;              /* 1 or 2 (0 -> 2) */
    bool crc;                     /* set C: ask for CRC32c (used when either side asks) */
    bool markers;                 /* set M: ask the peer to send markers to us */
    bool peer2peer;               /* Rev 2 A bit: RTR exchange. Initiator: offer it.
                                   * Responder: not needed; an offer is always answered
                                   * with one acceptable RTR type, or rejected */
    uint8_t rtr;                  /* UIW_CM_RTR_* offered (initiator) or acceptable
                                   * (responder); 0 -> WRITE|READ (as Linux siw) */
    bool reject_markers;          /* refuse a peer that asks us for markers (as Linux siw);
                                   * default: honour it */
    bool no_wake_write;           /* initiator: no wake-up Write (see above); default: on */
    uint32_t timeout_ms;          /* handshake timeout: initiator waiting for the Reply
                                   * (0 -> 10000), responder waiting for the Request
                                   * (listen: 0 -> 5000) */
    uint16_t pd_cap;              /* largest private data accepted from the peer (0 -> 256) */
    /* TCP liveness (0 = system default): keepalive and TCP_USER_TIMEOUT. A dead peer then
     * ends the connection and flushes the QP. */
    uint32_t keepalive_idle_s;
    uint32_t keepalive_intvl_s;
    uint32_t keepalive_cnt;
    uint32_t tcp_user_timeout_ms;
    /* Write this connection's byte stream as a pcap file into this directory (NULL: the
     * directory in the environment variable UIW_PCAP_DIR, if set). */
    const char *pcap_dir;
};

/* Every default: zero, with responder_resources and initiator_depth
 * UIW_CM_IRD_ORD_DEFAULT. */
UIW_EXTERN void uiw_conn_param_init(struct uiw_conn_param *param);

/* What the handshake settled (uiw_cm_query). */
struct uiw_cm_conn_info {
    uint8_t mpa_rev;
    bool crc;
    bool markers_tx; /* we insert markers */
    bool markers_rx; /* the peer inserts markers */
    bool peer2peer;
    uint8_t rtr;    /* the chosen UIW_CM_RTR_* (0 if none) */
    bool initiator; /* we sent the Request */
    uint16_t ird;   /* our IRD (at most what we offered) */
    uint16_t ord;   /* our ORD (at most the peer's IRD under Rev 2) */
    uint16_t peer_ird, peer_ord;
    uint32_t emss;   /* effective MSS (TCP_MAXSEG) */
    uint16_t mulpdu; /* uiw_mpa_mulpdu(emss, markers_tx) */
};

enum uiw_cm_event_type {
    UIW_CM_EVENT_CONNECT_REQUEST = 0, /* passive: ev->id is a new id, ev->listen_id the
                                       * listener; accept or reject it */
    UIW_CM_EVENT_ESTABLISHED = 1,     /* both: handshake done, QP in RTS */
    UIW_CM_EVENT_REJECTED = 2,        /* active: the peer rejected (status
                                       * UIW_E_MPA_REJECTED, param.private_data its data) */
    UIW_CM_EVENT_CONNECT_ERROR = 3,   /* handshake failed: status -ETIMEDOUT, -ECONNRESET,
                                       * a UIW_E_MPA_* code of a bad frame, ... */
    UIW_CM_EVENT_UNREACHABLE = 4,     /* active: TCP connect failed (status -errno) */
    UIW_CM_EVENT_DISCONNECTED = 5,    /* established connection ended (status 0 for an
                                       * orderly close, else the reason) */
};

struct uiw_cm_event {
    enum uiw_cm_event_type event;
    struct uiw_cm_id *id;
    struct uiw_cm_id *listen_id;
    int status;
    struct uiw_conn_param param; /* private data valid until uiw_cm_ack_event */
};

/* Channel. NULL + errno on failure. Destroying a channel with live ids fails (-EBUSY). */
UIW_EXTERN struct uiw_cm_channel *uiw_cm_create_channel(void);
UIW_EXTERN int uiw_cm_destroy_channel(struct uiw_cm_channel *ch);
/* An fd that is readable while the channel has pending work or events. */
UIW_EXTERN int uiw_cm_channel_fd(const struct uiw_cm_channel *ch);

/* Ids. ctx may be NULL for a listener (its new ids then get ctx NULL too and the
 * application sets id->verbs before uiw_cm_create_qp, or passes the QP's pd). Destroying
 * an id closes its socket abortively if still connected and destroys nothing else (the QP
 * is destroyed by uiw_cm_destroy_qp or uiw_destroy_qp). */
UIW_EXTERN struct uiw_cm_id *uiw_cm_create_id(struct uiw_cm_channel *ch, struct uiw_context *ctx,
                                              void *context);
UIW_EXTERN int uiw_cm_destroy_id(struct uiw_cm_id *id);

/* Bind to a local address (port 0 picks one); returns 0 or -errno. */
UIW_EXTERN int uiw_cm_bind_addr(struct uiw_cm_id *id, const struct sockaddr *addr);
/* Listen (bind first). `param` (may be NULL) sets the responder's handshake timeout and
 * private-data cap for incoming connections. */
UIW_EXTERN int uiw_cm_listen(struct uiw_cm_id *id, int backlog, const struct uiw_conn_param *param);
/* Local and peer addresses (NULL before bind/connect). */
UIW_EXTERN const struct sockaddr *uiw_cm_get_local_addr(const struct uiw_cm_id *id);
UIW_EXTERN const struct sockaddr *uiw_cm_get_peer_addr(const struct uiw_cm_id *id);

/* Create the id's QP on pd (as rdma_create_qp); id->qp is set. The QP moves to RTS when
 * the handshake completes. Returns 0 or -errno. */
UIW_EXTERN int uiw_cm_create_qp(struct uiw_cm_id *id, struct uiw_pd *pd,
                                struct uiw_qp_init_attr *attr);
/* Destroy the id's QP (after disconnecting). */
UIW_EXTERN void uiw_cm_destroy_qp(struct uiw_cm_id *id);

/* Active side: TCP connect to dst, then send the MPA Request. The outcome arrives as an
 * event: ESTABLISHED, REJECTED, CONNECT_ERROR or UNREACHABLE. Returns 0 or -errno
 * (-EINVAL for private data above the cap or bad parameters). */
UIW_EXTERN int uiw_cm_connect(struct uiw_cm_id *id, const struct sockaddr *dst,
                              const struct uiw_conn_param *param);
/* Passive side, after CONNECT_REQUEST: send the Reply, start the QP, ESTABLISHED follows.
 * Returns 0 or -errno; negotiation failures (no matching RTR, markers refused) send a
 * reject, report CONNECT_ERROR and return the UIW_E_MPA_* code. */
UIW_EXTERN int uiw_cm_accept(struct uiw_cm_id *id, const struct uiw_conn_param *param);
/* Passive side: answer with a Reply with R set carrying private data, close. */
UIW_EXTERN int uiw_cm_reject(struct uiw_cm_id *id, const void *private_data, uint16_t len);
/* Close a connection: graceful (the QP completes work in progress, then the TCP stream
 * closes), DISCONNECTED follows on both sides. On the side that called it, DISCONNECTED
 * comes once the peer has closed its side too (or about two seconds after ours, from a
 * peer that does not): until then what the peer still sends is read and discarded, so
 * that destroying the QP on the event loses nothing this side sent. */
UIW_EXTERN int uiw_cm_disconnect(struct uiw_cm_id *id);

/* Negotiated settings; -ENOTCONN before the handshake completes. */
UIW_EXTERN int uiw_cm_query(const struct uiw_cm_id *id, struct uiw_cm_conn_info *info);

/* The id's number in UIW_LOG lines ("conn N"; ids are numbered from 1 in each process),
 * so that a layer above can name the connection in its own lines. 0 for NULL. */
UIW_EXTERN uint32_t uiw_cm_log_id(const struct uiw_cm_id *id);

/* Next event: waits up to timeout_ms (-1 forever, 0 not at all). Returns 0 and *ev,
 * -EAGAIN when none arrived in time, or -errno. */
UIW_EXTERN int uiw_cm_get_event(struct uiw_cm_channel *ch, struct uiw_cm_event **ev,
                                int timeout_ms);
UIW_EXTERN int uiw_cm_ack_event(struct uiw_cm_event *ev);
UIW_EXTERN const char *uiw_cm_event_str(enum uiw_cm_event_type e);

#ifdef __cplusplus
}
#endif
#endif
