/*
 * uiw wire layer: CRC32c and the MPA, DDP and RDMAP codecs of iWARP.
 *
 * RFC 5044 (MPA), RFC 6581 (MPA Rev 2 / enhanced connection setup), RFC 5041 (DDP),
 * RFC 5040 (RDMAP). Everything here is pure: no I/O, no allocation, no global state;
 * every function is safe to call from any thread on distinct objects. Parsers never
 * read past the length they are given and return a specific negative UIW_E_* code
 * (error.h, err_wire.def) for each kind of malformed input.
 *
 * Multi-byte wire fields are big-endian except the MPA CRC, which is written
 * little-endian (as the CRC32c of iSCSI).
 */
#ifndef UIW_WIRE_H
#define UIW_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <uiw/error.h>
#include <uiw/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------
 * CRC32c (Castagnoli, reflected polynomial 0x82F63B78, init and final xor 0xFFFFFFFF)
 * ------------------------------------------------------------------------------------- */

/* CRC32c of buf[0..len) continuing from `seed`, the CRC of the bytes before (0 to start).
 * Chaining holds: uiw_crc32c(uiw_crc32c(0, a, n), b, m) == CRC of a||b.
 * "123456789" -> 0xE3069283. Thread-safe. */
UIW_EXTERN uint32_t uiw_crc32c(uint32_t seed, const void *buf, size_t len);

/* Name of the implementation in use: "isa-l" (built with ISA-L), "sse4.2" (the CPU's
 * crc32 instruction) or "table" (portable). */
UIW_EXTERN const char *uiw_crc32c_impl(void);

/* ---------------------------------------------------------------------------------------
 * MPA Request / Reply frames (RFC 5044 section 7.1, RFC 6581 section 5)
 * ------------------------------------------------------------------------------------- */

#define UIW_MPA_KEY_LEN        16
#define UIW_MPA_HDR_LEN        20  /* key(16) flags(1) rev(1) pd_length(2) */
#define UIW_MPA_PD_MAX         512 /* RFC 5044 upper bound on PD_Length */
#define UIW_MPA_PD_DEFAULT_CAP 256 /* Linux's cap, our default */
#define UIW_MPA_V2_IRD_ORD_LEN 4   /* RFC 6581 IRD/ORD words at the head of private data */

#define UIW_MPA_FLAG_MARKERS  0x80 /* M */
#define UIW_MPA_FLAG_CRC      0x40 /* C */
#define UIW_MPA_FLAG_REJECT   0x20 /* R: Reply only */
#define UIW_MPA_FLAG_ENHANCED 0x10 /* RFC 6581: IRD/ORD words present */

/* RFC 6581 IRD word / ORD word bits */
#define UIW_MPA_V2_PEER2PEER    0x8000 /* IRD word: A */
#define UIW_MPA_V2_RTR_SEND     0x4000 /* IRD word: zero-length Send RTR */
#define UIW_MPA_V2_RTR_WRITE    0x8000 /* ORD word: zero-length RDMA Write RTR */
#define UIW_MPA_V2_RTR_READ     0x4000 /* ORD word: zero-length RDMA Read RTR */
#define UIW_MPA_V2_IRD_ORD_MASK 0x3FFF

enum uiw_mpa_frame_kind { UIW_MPA_REQUEST = 0, UIW_MPA_REPLY = 1 };

struct uiw_mpa_frame {
    enum uiw_mpa_frame_kind kind;
    uint8_t flags; /* UIW_MPA_FLAG_* */
    uint8_t rev;   /* 1 = RFC 5044, 2 = RFC 6581 */
    /* RFC 6581 enhanced setup: valid when rev == 2 and flags has ENHANCED. */
    bool peer2peer; /* A bit */
    bool rtr_send;  /* zero-length Send RTR offered / chosen */
    bool rtr_write; /* zero-length Write RTR offered / chosen */
    bool rtr_read;  /* zero-length Read RTR offered / chosen */
    uint16_t ird;   /* 0 .. 0x3FFF */
    uint16_t ord;   /* 0 .. 0x3FFF */
    /* ULP private data (after the IRD/ORD words when enhanced). On parse it points into
     * the parsed buffer. */
    const uint8_t *pd;
    uint16_t pd_len;
};

/* Encode `f` into buf. Returns the frame length (20 + IRD/ORD words + pd_len) or
 * -ENOSPC if cap is too small, UIW_E_MPA_PD_TOO_LONG if the private data exceeds 512. */
UIW_EXTERN ssize_t uiw_mpa_frame_encode(const struct uiw_mpa_frame *f, uint8_t *buf, size_t cap);

/* Parse a frame of the given kind from buf[0..len). pd_cap caps PD_Length (<= 512; 0
 * means UIW_MPA_PD_DEFAULT_CAP). Returns the number of bytes the frame occupies, or:
 *   UIW_E_MPA_TRUNCATED  (not fatal) fewer bytes than the frame needs: read more;
 *   UIW_E_MPA_BAD_KEY, UIW_E_MPA_BAD_REV, UIW_E_MPA_RESERVED_BITS, UIW_E_MPA_PD_TOO_LONG,
 *   UIW_E_MPA_REJECT_IN_REQUEST, UIW_E_MPA_BAD_IRD_ORD (fatal, answer with MPA error 4). */
UIW_EXTERN ssize_t uiw_mpa_frame_parse(enum uiw_mpa_frame_kind kind, const uint8_t *buf, size_t len,
                                       size_t pd_cap, struct uiw_mpa_frame *f);

/* MULPDU (largest ULPDU per FPDU) for an effective MSS, RFC 5044 section 8.1. */
UIW_EXTERN uint16_t uiw_mpa_mulpdu(uint32_t emss, bool markers);

/* ---------------------------------------------------------------------------------------
 * FPDU framing (RFC 5044 section 4): ULPDU_Length(2) | ULPDU | pad to 4 | CRC(4)
 * with a 4-byte marker every 512 octets of stream when markers are on.
 * ------------------------------------------------------------------------------------- */

#define UIW_MPA_MARKER_INTERVAL 512
#define UIW_MPA_MARKER_LEN      4
#define UIW_FPDU_MAX_ULPDU      65535
/* Shortest ULPDU accepted on receive: a DDP tagged header (RFC 5041), the smallest DDP
 * segment there is. Shorter lengths fail with UIW_E_FPDU_TOO_SHORT. */
#define UIW_FPDU_MIN_ULPDU 14

/*
 * Markers (RFC 5044 section 5), as this implementation places and checks them:
 * - a 4-byte marker (16 reserved bits, zero, then the 16-bit FPDUPTR, big-endian) sits at
 *   every stream position that is a multiple of 512, positions counted from the first
 *   octet of the first FPDU (so the first marker is at the very start of the stream);
 * - FPDUPTR is the distance in octets (markers included) from the FPDU's ULPDU_Length
 *   field back to the marker, modulo 2^16; a marker at an FPDU boundary belongs to the
 *   FPDU that follows it and has FPDUPTR 0 (that FPDU's length field follows it);
 * - the FPDU's CRC covers every octet of the FPDU except its own four, markers included
 *   (a marker at the FPDU's start, and one inside the CRC field, too);
 * - pad is computed from the ULPDU length alone. Markers are 4 bytes at 4-aligned stream
 *   positions and FPDUs are multiples of 4, so on a stream framed from its first FPDU a
 *   marker lands only at an FPDU's start, inside its ULPDU or right before its CRC field.
 *   Neither side relies on that: both handle a marker at any octet (inside the length
 *   field, the pad or the CRC field too), which is what happens when a framer or parser
 *   joins a stream at an offset that is not a multiple of 4: set stream_pos (of
 *   uiw_fpdu_tx, or of uiw_fpdu_rx right after uiw_fpdu_rx_init) to the offset from
 *   the stream's first FPDU.
 */

/* Bytes of the FPDU (without markers) holding a ULPDU of length n. */
static inline size_t uiw_fpdu_len(size_t ulpdu_len)
{
    return 2 + ulpdu_len + ((4 - ((2 + ulpdu_len) & 3)) & 3) + 4;
}

/* Encode a complete FPDU without markers into buf (ULPDU given as a gather list so the
 * payload need not be contiguous). CRC computed when crc is true, else zero. Returns
 * bytes written, or -ENOSPC (cap too small) / -EMSGSIZE (ULPDU longer than 65535) /
 * -EINVAL (n < 0, or a NULL base with a nonzero length). */
struct uiw_wire_iov {
    const void *base;
    size_t len;
};
UIW_EXTERN ssize_t uiw_fpdu_encode(const struct uiw_wire_iov *ulpdu, int n, bool crc, uint8_t *buf,
                                   size_t cap);

/* Transmit side framer: tracks the stream position for marker insertion and builds the
 * per-FPDU header/trailer bytes so that payload can be sent straight from its source by
 * gather I/O. One per direction per connection. */
struct uiw_fpdu_tx {
    uint64_t stream_pos; /* bytes of FPDU stream sent, counted from the first FPDU */
    bool crc;
    bool markers;
};
UIW_EXTERN void uiw_fpdu_tx_init(struct uiw_fpdu_tx *tx, bool crc, bool markers);

/* Build the wire iovecs of one FPDU carrying `ulpdu` (n entries, total length <= 65535)
 * into out[0..max) and any framing bytes (length, markers, pad, CRC) into scratch
 * (at least uiw_fpdu_tx_scratch(len) bytes, must stay alive until sent). Returns the
 * number of iovecs written or -ENOSPC. Advances the stream position. */
UIW_EXTERN size_t uiw_fpdu_tx_scratch(size_t ulpdu_len);
UIW_EXTERN int uiw_fpdu_tx_build(struct uiw_fpdu_tx *tx, const struct uiw_wire_iov *ulpdu, int n,
                                 uint8_t *scratch, struct uiw_wire_iov *out, int max);
/* Details of uiw_fpdu_tx_build: framing bytes that are adjacent on the wire share one
 * iovec; ULPDU iovecs are split only where a marker falls. At most
 * n + 2 + 2 * (markers in the FPDU) iovecs are needed; uiw_fpdu_tx_iovs(len, n) gives
 * that bound. Errors leave the stream position unchanged: -ENOSPC (max too small),
 * -EMSGSIZE (ULPDU longer than 65535), -EINVAL (bad arguments). */
UIW_EXTERN int uiw_fpdu_tx_iovs(size_t ulpdu_len, int n);

/* Same framing, flattened into buf[0..cap) (tests, tools, a hostile peer); n <= 64.
 * Returns the bytes written (the FPDU with its markers), or -ENOSPC / -EMSGSIZE /
 * -EINVAL; the stream position advances only on success. */
UIW_EXTERN ssize_t uiw_fpdu_tx_encode(struct uiw_fpdu_tx *tx, const struct uiw_wire_iov *ulpdu,
                                      int n, uint8_t *buf, size_t cap);

/*
 * Receive side: a resumable parser over the TCP byte stream that accepts any split of
 * it (one byte at a time works). It never needs the ULPDU to be contiguous or copied:
 * the consumer asks what comes next, puts those bytes wherever it likes (a staging
 * buffer, or straight into registered memory once the DDP header has been checked),
 * and hands them back to be accounted (CRC, length, markers).
 *
 *   for (;;) {
 *       size_t n = uiw_fpdu_rx_next(&rx, &kind, &off);  // next run of one kind
 *       ... obtain up to n bytes of the stream at p ...
 *       int r = uiw_fpdu_rx_consume(&rx, p, k);          // k <= n
 *       if (r == UIW_FPDU_COMPLETE) ... the whole FPDU checked (CRC good) ...
 *       else if (r < 0) ... fatal: Terminate with uiw_fpdu_rx error mapping ...
 *   }
 *
 * Kinds: UIW_FPDU_RUN_FRAMING (length field, pad, CRC, markers: the parser keeps these
 * itself, the consumer only supplies the bytes) and UIW_FPDU_RUN_ULPDU (ULPDU bytes at
 * ULPDU offset `off`: the consumer keeps them). The ULPDU length is known from the
 * first ULPDU run on (uiw_fpdu_rx_ulpdu_len).
 */
enum uiw_fpdu_run { UIW_FPDU_RUN_FRAMING = 0, UIW_FPDU_RUN_ULPDU = 1 };
#define UIW_FPDU_COMPLETE 1

struct uiw_fpdu_rx {
    /* private to the implementation */
    uint64_t stream_pos; /* octets of stream consumed since the first FPDU */
    uint32_t crc;        /* running CRC of the current FPDU */
    uint32_t field;      /* staged framing field bytes (length, CRC) */
    uint16_t ulpdu_len;
    uint16_t max_ulpdu;
    uint32_t fpdu_start; /* low bits of stream_pos at the FPDU's length field */
    uint32_t ulpdu_done;
    uint32_t marker; /* staged marker bytes */
    int32_t err;     /* sticky fatal error, 0 while healthy */
    uint8_t state;
    uint8_t field_have;
    uint8_t marker_have;
    uint8_t pad;
    bool crc_on;
    bool markers;
};

/* max_ulpdu: lengths above it are rejected (UIW_E_FPDU_TOO_LONG); 0 means 65535. */
UIW_EXTERN void uiw_fpdu_rx_init(struct uiw_fpdu_rx *rx, bool crc, bool markers,
                                 uint16_t max_ulpdu);

/* Length of the next run of one kind (never 0). Sets *kind and, for ULPDU runs, *off.
 * Runs never cross a marker position, so a ULPDU run is always contiguous payload. */
UIW_EXTERN size_t uiw_fpdu_rx_next(const struct uiw_fpdu_rx *rx, enum uiw_fpdu_run *kind,
                                   uint32_t *off);

/* Account for k bytes (k <= the length uiw_fpdu_rx_next returned) of the current run,
 * located at p. Returns 0, UIW_FPDU_COMPLETE when the FPDU's last byte was consumed and
 * its CRC checked, or a fatal error: UIW_E_FPDU_CRC (MPA error 2), UIW_E_FPDU_MARKER
 * (MPA error 3), UIW_E_FPDU_TOO_LONG / UIW_E_FPDU_TOO_SHORT (a length that no ULPDU can
 * have). After an error the parser stays failed (every later call returns the same code).
 * k == 0 does nothing and returns 0; k larger than the current run returns -EINVAL
 * without consuming. Pad bytes and marker reserved bits are not checked (they are
 * covered by the CRC). With CRC off the CRC field is ignored. */
UIW_EXTERN int uiw_fpdu_rx_consume(struct uiw_fpdu_rx *rx, const uint8_t *p, size_t k);

/* ULPDU length of the FPDU in progress (valid once its length field is consumed). */
static inline uint16_t uiw_fpdu_rx_ulpdu_len(const struct uiw_fpdu_rx *rx)
{
    return rx->ulpdu_len;
}

/* Convenience for contiguous input (tools, tests, fuzzing): parse from buf[0..len),
 * copying the ULPDU into ulpdu[0..cap). Returns bytes consumed; *done is set when an
 * FPDU completed (its ULPDU length in *ulpdu_len), or a negative error. Stops right after
 * a completed FPDU so the caller can handle it. ulpdu may be NULL (payload checked, not
 * kept); -ENOSPC (parser not failed, nothing of that run consumed) when the ULPDU does
 * not fit in cap. */
UIW_EXTERN ssize_t uiw_fpdu_rx_feed(struct uiw_fpdu_rx *rx, const uint8_t *buf, size_t len,
                                    uint8_t *ulpdu, size_t cap, uint16_t *ulpdu_len, bool *done);

/* ---------------------------------------------------------------------------------------
 * DDP (RFC 5041 section 4)
 * ------------------------------------------------------------------------------------- */

#define UIW_DDP_TAGGED_HDR_LEN   14
#define UIW_DDP_UNTAGGED_HDR_LEN 18
#define UIW_DDP_FLAG_TAGGED      0x80
#define UIW_DDP_FLAG_LAST        0x40
#define UIW_DDP_RSVD_MASK        0x3C
#define UIW_DDP_VERSION          1

enum { UIW_DDP_QN_SEND = 0, UIW_DDP_QN_READ_REQ = 1, UIW_DDP_QN_TERMINATE = 2 };

struct uiw_ddp_hdr {
    bool tagged;
    bool last;
    uint8_t dv;         /* DDP version (checked on parse, 1 on encode) */
    uint8_t rdmap_ctrl; /* RsvdULP[0]: the RDMAP control byte */
    /* tagged */
    uint32_t stag;
    uint64_t to;
    /* untagged */
    uint32_t rsvd_ulp; /* RsvdULP[1..4]: Invalidate STag for Send with Invalidate */
    uint32_t qn;
    uint32_t msn;
    uint32_t mo;
};

/* Encode a header (14 or 18 bytes) into buf. DV is always written as 1 and the reserved
 * bits as 0; the RDMAP control byte is written as given. Returns its length or -ENOSPC. */
UIW_EXTERN ssize_t uiw_ddp_hdr_encode(const struct uiw_ddp_hdr *h, uint8_t *buf, size_t cap);

/* Parse a DDP header at the start of a ULPDU. Returns the header length, or
 * UIW_E_DDP_TRUNCATED (fewer bytes than the header), UIW_E_DDP_BAD_VERSION,
 * UIW_E_DDP_RESERVED_BITS (checked in that order). The T bit decides the length.
 * The RDMAP control byte is not checked here (uiw_rdmap_check_ctrl); QN is not checked. */
UIW_EXTERN ssize_t uiw_ddp_hdr_parse(const uint8_t *buf, size_t len, struct uiw_ddp_hdr *h);

/* Segmentation of one DDP message into segments of at most mulpdu ULPDU bytes:
 * call with seg = 0, 1, ... until *last is set. For segment `seg` of a message of
 * `msg_len` payload bytes it returns the payload bytes in that segment (a zero-length
 * message has one segment of 0 bytes, reported as returning 0 with *last set), the
 * offset of that payload in the message (the MO, or the TO delta), and whether it is the
 * last. Every segment but the last carries exactly mulpdu - hdr_len bytes. hdr_len is 14
 * or 18 (+28 for a Read Request body). Returns -EINVAL if mulpdu <= hdr_len, -ERANGE if
 * seg is past the last segment. */
static inline uint32_t uiw_ddp_segment_count(uint32_t msg_len, uint16_t mulpdu, size_t hdr_len)
{
    if (mulpdu <= hdr_len)
        return 0;
    uint32_t per = (uint32_t)(mulpdu - hdr_len);
    return msg_len == 0 ? 1 : msg_len / per + (msg_len % per != 0);
}
UIW_EXTERN ssize_t uiw_ddp_segment(uint32_t msg_len, uint16_t mulpdu, size_t hdr_len, uint32_t seg,
                                   uint32_t *offset, bool *last);

/* ---------------------------------------------------------------------------------------
 * RDMAP (RFC 5040 section 4)
 * ------------------------------------------------------------------------------------- */

#define UIW_RDMAP_VERSION      1
#define UIW_RDMAP_READ_REQ_LEN 28

enum uiw_rdmap_opcode {
    UIW_RDMAP_WRITE = 0x0,
    UIW_RDMAP_READ_REQ = 0x1,
    UIW_RDMAP_READ_RESP = 0x2,
    UIW_RDMAP_SEND = 0x3,
    UIW_RDMAP_SEND_INV = 0x4,
    UIW_RDMAP_SEND_SE = 0x5,
    UIW_RDMAP_SEND_SE_INV = 0x6,
    UIW_RDMAP_TERMINATE = 0x7,
};

static inline uint8_t uiw_rdmap_ctrl(enum uiw_rdmap_opcode op)
{
    return (uint8_t)((UIW_RDMAP_VERSION << 6) | (unsigned)op);
}
static inline unsigned uiw_rdmap_ctrl_version(uint8_t ctrl)
{
    return ctrl >> 6;
}
static inline unsigned uiw_rdmap_ctrl_opcode(uint8_t ctrl)
{
    return ctrl & 0x0F;
}

/* Name of an opcode ("RDMA Write", "Send with Invalidate", ...; "Reserved" otherwise). */
UIW_EXTERN const char *uiw_rdmap_opcode_name(unsigned opcode);

/* Check an RDMAP control byte against the DDP model it arrived on (tagged: Write, Read
 * Response; untagged QN 0: the Sends; QN 1: Read Request; QN 2: Terminate). Returns 0 or,
 * checked in this order, UIW_E_RDMAP_BAD_VERSION, UIW_E_RDMAP_RESERVED_BITS,
 * UIW_E_DDP_BAD_QN (untagged QN above 2: DDP/untagged/invalid QN),
 * UIW_E_RDMAP_BAD_OPCODE (reserved opcode, or one not allowed on that model/QN). */
UIW_EXTERN int uiw_rdmap_check_ctrl(const struct uiw_ddp_hdr *h);

struct uiw_rdmap_read_req {
    uint32_t sink_stag;
    uint64_t sink_to;
    uint32_t size;
    uint32_t src_stag;
    uint64_t src_to;
};
UIW_EXTERN void uiw_rdmap_read_req_encode(const struct uiw_rdmap_read_req *r, uint8_t buf[28]);
/* Returns 28 or UIW_E_RDMAP_TRUNCATED. */
UIW_EXTERN ssize_t uiw_rdmap_read_req_parse(const uint8_t *buf, size_t len,
                                            struct uiw_rdmap_read_req *r);

/* Terminate (RFC 5040 section 4.8). Layer/EType/code per ../NOTES and the RFCs. */
enum uiw_term_layer { UIW_TERM_LAYER_RDMAP = 0, UIW_TERM_LAYER_DDP = 1, UIW_TERM_LAYER_LLP = 2 };

/* EType values per layer */
enum {
    UIW_TERM_RDMAP_LOCAL_CATASTROPHIC = 0,
    UIW_TERM_RDMAP_REMOTE_PROTECTION = 1,
    UIW_TERM_RDMAP_REMOTE_OPERATION = 2,
    UIW_TERM_DDP_LOCAL_CATASTROPHIC = 0,
    UIW_TERM_DDP_TAGGED = 1,
    UIW_TERM_DDP_UNTAGGED = 2,
    UIW_TERM_LLP_MPA = 0,
};

/* Error codes, by (layer, etype) */
enum {
    /* RDMAP / Remote Protection */
    UIW_TERM_RP_INVALID_STAG = 0x00,
    UIW_TERM_RP_BASE_BOUNDS = 0x01,
    UIW_TERM_RP_ACCESS_RIGHTS = 0x02,
    UIW_TERM_RP_STAG_NOT_ASSOC = 0x03,
    UIW_TERM_RP_TO_WRAP = 0x04,
    UIW_TERM_RP_CANT_INVALIDATE = 0x09,
    UIW_TERM_RP_UNSPECIFIED = 0xFF,
    /* RDMAP / Remote Operation */
    UIW_TERM_RO_INVALID_VERSION = 0x05,
    UIW_TERM_RO_UNEXPECTED_OPCODE = 0x06,
    UIW_TERM_RO_CATASTROPHIC_STREAM = 0x07,
    UIW_TERM_RO_CATASTROPHIC_GLOBAL = 0x08,
    UIW_TERM_RO_CANT_INVALIDATE = 0x09,
    UIW_TERM_RO_UNSPECIFIED = 0xFF,
    /* DDP / Tagged */
    UIW_TERM_DT_INVALID_STAG = 0x00,
    UIW_TERM_DT_BASE_BOUNDS = 0x01,
    UIW_TERM_DT_STAG_NOT_ASSOC = 0x02,
    UIW_TERM_DT_TO_WRAP = 0x03,
    UIW_TERM_DT_INVALID_VERSION = 0x04,
    /* DDP / Untagged */
    UIW_TERM_DU_INVALID_QN = 0x01,
    UIW_TERM_DU_INVALID_MSN_NO_BUF = 0x02,
    UIW_TERM_DU_INVALID_MSN_RANGE = 0x03,
    UIW_TERM_DU_INVALID_MO = 0x04,
    UIW_TERM_DU_MSG_TOO_LONG = 0x05,
    UIW_TERM_DU_INVALID_VERSION = 0x06,
    /* LLP (MPA) */
    UIW_TERM_MPA_TCP_CLOSED = 0x01,
    UIW_TERM_MPA_CRC = 0x02,
    UIW_TERM_MPA_MARKER = 0x03,
    UIW_TERM_MPA_REQ_REP = 0x04,
    UIW_TERM_MPA_LOCAL_CATASTROPHIC = 0x05,
    UIW_TERM_MPA_INSUFFICIENT_IRD = 0x06,
    UIW_TERM_MPA_NO_MATCHING_RTR = 0x07,
};

#define UIW_TERM_HDR_LEN 4   /* Terminate control + reserved */
#define UIW_TERM_FLAG_M  0x4 /* DDP Segment Length valid */
#define UIW_TERM_FLAG_D  0x2 /* Terminated DDP header included */
#define UIW_TERM_FLAG_R  0x1 /* Terminated RDMA header included */

struct uiw_terminate {
    uint8_t layer;
    uint8_t etype;
    uint8_t code;
    uint8_t hdrct;        /* UIW_TERM_FLAG_M | D | R */
    uint16_t ddp_seg_len; /* valid with M */
    uint8_t ddp_hdr[18];  /* with D: 14 (tagged) or 18 (untagged) bytes */
    uint8_t ddp_hdr_len;
    uint8_t rdma_hdr[28]; /* with R: the Read Request header */
    bool siw_order;       /* parse only: the peer used Linux siw's swapped bit order */
    /* parse only: 28 when the RDMA header was present, 0 when not (Linux siw sets R on
     * Send errors without including one). Encode ignores it. */
    uint8_t rdma_hdr_len;
    /* parse only: the control word is valid in both bit orders (for example 20 05 00 00:
     * RFC LLP/MPA/Local Catastrophic, siw RDMAP/Remote Operation/Invalid RDMAP Version);
     * the reading taken follows the order hint (RFC order under UIW_TERM_ORDER_AUTO). */
    bool ambiguous;
};

/* Encode the Terminate message body (after the DDP untagged header) in RFC order.
 * Returns its length (4, + 2 + header bytes if M/D, + 28 with R) or -ENOSPC, or -EINVAL
 * (layer or etype above 15, hdrct bits other than M/D/R, or with D a ddp_hdr_len that
 * does not match the T bit of ddp_hdr). The triple itself is not checked (so that a test
 * peer can send undefined codes): use uiw_terminate_is_valid. */
UIW_EXTERN ssize_t uiw_terminate_encode(const struct uiw_terminate *t, uint8_t *buf, size_t cap);

/* Parse a Terminate body. Recognises Linux siw's swapped control word (siw_order set):
 * RFC order has Layer in the high nibble of byte 0, EType in the low one, and M/D/R as
 * the top bits (0x80/0x40/0x20) of byte 2; siw has EType high, Layer low and M/D/R as
 * 0x01/0x02/0x04 of byte 2. A reading is accepted when its (layer, etype, code) is in the
 * table and its reserved bits are zero (byte 3 always); RFC order wins when both are.
 * With M or D a 2-byte DDP Segment Length follows (zero if only D); with D the terminated
 * DDP header (its T bit gives 14 or 18 bytes); with R the 28-byte RDMA header.
 * Returns bytes parsed or UIW_E_RDMAP_TRUNCATED / UIW_E_RDMAP_BAD_TERMINATE. */
UIW_EXTERN ssize_t uiw_terminate_parse(const uint8_t *buf, size_t len, struct uiw_terminate *t);

/* The same with an order hint, for a caller that knows its peer is (or is not) Linux siw:
 * AUTO behaves as uiw_terminate_parse; RFC or SIW take that reading when the control word
 * is valid in it and fall back to the other one otherwise. */
enum uiw_term_order { UIW_TERM_ORDER_AUTO = 0, UIW_TERM_ORDER_RFC = 1, UIW_TERM_ORDER_SIW = 2 };
UIW_EXTERN ssize_t uiw_terminate_parse_order(const uint8_t *buf, size_t len,
                                             enum uiw_term_order hint, struct uiw_terminate *t);

/* One table of every Terminate (layer, etype, code): its name for logs and tools
 * ("RDMAP/Remote Protection/Invalid STag"), NULL when the triple is not defined. */
UIW_EXTERN const char *uiw_terminate_name(unsigned layer, unsigned etype, unsigned code);
UIW_EXTERN bool uiw_terminate_is_valid(unsigned layer, unsigned etype, unsigned code);

/* The table itself, for tools and tests: entry i (0 <= i < uiw_terminate_table_size()),
 * NULL past the end. */
struct uiw_terminate_entry {
    uint8_t layer, etype, code;
    const char *name;
};
UIW_EXTERN size_t uiw_terminate_table_size(void);
UIW_EXTERN const struct uiw_terminate_entry *uiw_terminate_table_entry(size_t i);

#ifdef __cplusplus
}
#endif
#endif
