/*
 * uiw RPC-over-RDMA transport header codec: Version One (RFC 8166 section 4) and
 * Version Two (draft-cel-nfsv4-rpcrdma-version-two-03 section 6).
 *
 * The normative XDR of both versions is in xdr/rpcrdma_v1.x and xdr/rpcrdma_v2.x; the
 * codec here is hand-written and checked against rpcgen + libtirpc on random messages.
 *
 * Everything here is pure: no I/O, no allocation, no global state. The decoder never
 * reads past the buffer it is given and writes only into the header struct and the
 * caller-provided arrays of a struct uiw_rpcrdma_space; opaque fields (rdma_optinfo,
 * property data, property subsets) are returned as pointer + length INTO THE INPUT
 * BUFFER, so a decoded header is valid only while both that buffer and the space live.
 *
 * The decoder checks structure only (XDR well-formedness, defined enum values, the
 * values of known properties, caps). Semantic rules (read chunks only in calls,
 * positions multiple of 4, credit limits, direction vs. payload) belong to the
 * transport that uses the decoded header.
 *
 * All multi-byte wire fields are big-endian (XDR).
 */
#ifndef UIW_RPCRDMA_H
#define UIW_RPCRDMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uiw/error.h>
#include <uiw/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------
 * Wire constants
 * ------------------------------------------------------------------------------------- */

#define UIW_RPCRDMA_VERS1    1u
#define UIW_RPCRDMA_VERS2    2u
#define UIW_RPCRDMA_VERS_MIN UIW_RPCRDMA_VERS1 /* supported range, reported in ERR_VERS */
#define UIW_RPCRDMA_VERS_MAX UIW_RPCRDMA_VERS2

/* Fixed part of every header: xid, vers, credit, proc. */
#define UIW_RPCRDMA_FIXED_LEN 16

/* rdma_proc. MSG, NOMSG and ERROR have the same value in both versions; MSGP and DONE
 * exist in Version One only (decoded as "refused"); 5..9 exist in Version Two only. */
enum uiw_rpcrdma_proc {
    UIW_RDMA_MSG = 0,
    UIW_RDMA_NOMSG = 1,
    UIW_RDMA_MSGP = 2, /* v1, "not to be used": refused */
    UIW_RDMA_DONE = 3, /* v1, "not to be used": refused */
    UIW_RDMA_ERROR = 4,
    UIW_RDMA2_OPTIONAL = 5,
    UIW_RDMA2_CONNPROP = 6,
    UIW_RDMA2_REQPROP = 7,
    UIW_RDMA2_RESPROP = 8,
    UIW_RDMA2_UPDPROP = 9
};

/* Error codes carried by RDMA_ERROR / RDMA2_ERROR. Version One defines VERS and CHUNK
 * only; Version Two renames 2 to BAD_XDR and adds 3..6. */
enum uiw_rpcrdma_errcode {
    UIW_RDMA_ERR_VERS = 1,
    UIW_RDMA_ERR_CHUNK = 2,    /* v1 name */
    UIW_RDMA2_ERR_BAD_XDR = 2, /* v2 name of the same value */
    UIW_RDMA2_ERR_REPLY_RESOURCE = 3,
    UIW_RDMA2_ERR_INVAL_PROC = 4,
    UIW_RDMA2_ERR_INVAL_OPTION = 5,
    UIW_RDMA2_ERR_SYSTEM = 6
};

/* Version Two msg_type (rdma_direction, rdma_optdir). Any other value is a BAD_XDR. */
enum uiw_rpcrdma_dir { UIW_RPCRDMA_CALL = 0, UIW_RPCRDMA_REPLY = 1 };

/* Version Two transport properties (section 5.2 of -03). */
#define UIW_RPCRDMA_PROP_RBSIZ    1u /* uint32 receive buffer size */
#define UIW_RPCRDMA_PROP_BRS      2u /* enum uiw_rpcrdma_bkreqsup */
#define UIW_RPCRDMA_RBSIZ_DEFAULT 4096u
/* Smallest RBSIZ value the decoder accepts: the Version One minimum inline threshold.
 * A smaller value cannot hold a useful header and is rejected as an invalid value. */
#define UIW_RPCRDMA_RBSIZ_MIN 1024u

enum uiw_rpcrdma_bkreqsup {
    UIW_RDMA2_BKREQSUP_NONE = 0,
    UIW_RDMA2_BKREQSUP_INLINE = 1, /* the default */
    UIW_RDMA2_BKREQSUP_GENL = 2
};

/* ---------------------------------------------------------------------------------------
 * Decoded / to-be-encoded header
 * ------------------------------------------------------------------------------------- */

struct uiw_rpcrdma_segment {
    uint32_t handle; /* rdma_handle (STag) */
    uint32_t length; /* rdma_length */
    uint64_t offset; /* rdma_offset */
};

struct uiw_rpcrdma_read_segment {
    uint32_t position; /* rdma_position: XDR position in the RPC payload stream */
    struct uiw_rpcrdma_segment target;
};

/* A write chunk (also the reply chunk): a counted array of segments. */
struct uiw_rpcrdma_write_chunk {
    uint32_t nsegs;
    struct uiw_rpcrdma_segment *segs; /* decode: points into the space's segs pool */
};

/* The three chunk lists of MSG / NOMSG (both versions). The read list is flattened to an
 * array of read segments; the write list to an array of write chunks. */
struct uiw_rpcrdma_chunks {
    /* Version Two only (ignored when encoding v1, zero after decoding v1) */
    uint32_t direction;  /* rdma_direction: enum uiw_rpcrdma_dir */
    uint32_t inv_handle; /* rdma_inv_handle */

    uint32_t nreads;
    struct uiw_rpcrdma_read_segment *reads;
    uint32_t nwrites;
    struct uiw_rpcrdma_write_chunk *writes;
    bool has_reply; /* rdma_reply present */
    struct uiw_rpcrdma_write_chunk reply;
};

/* Body of RDMA_ERROR / RDMA2_ERROR. Which fields are meaningful depends on errcode. */
struct uiw_rpcrdma_error {
    uint32_t errcode;       /* enum uiw_rpcrdma_errcode */
    uint32_t vers_low;      /* ERR_VERS: rdma_vers_low */
    uint32_t vers_high;     /* ERR_VERS: rdma_vers_high */
    uint32_t segment_index; /* RDMA2_ERR_REPLY_RESOURCE: rdma_segment_index */
    uint32_t length_needed; /* RDMA2_ERR_REPLY_RESOURCE: rdma_length_needed */
};

/* RDMA2_OPTIONAL */
struct uiw_rpcrdma_optional {
    uint32_t optdir;      /* rdma_optdir: enum uiw_rpcrdma_dir */
    uint32_t opttype;     /* rdma_opttype */
    uint32_t optinfo_len; /* rdma_optinfo<> length in bytes (without XDR pad) */
    const uint8_t *optinfo;
};

/* One rpcrdma2_propval. Decoding: `data`/`len` point into the input; `value` is the
 * decoded uint32 when len == 4, the property's default for a known property sent with
 * len == 0, else 0. Encoding: if `data` is non-NULL, `len` bytes of it are written; if
 * `data` is NULL, `len` must be 0 (empty: "use the default") or 4 (then `value` is
 * written as one big-endian uint32). */
struct uiw_rpcrdma_prop {
    uint32_t which; /* rdma_which: rpcrdma2_propid */
    uint32_t len;   /* rdma_data<> length in bytes (without XDR pad) */
    const uint8_t *data;
    uint32_t value;
};

/* rpcrdma2_propset: a counted array of properties. Unknown properties are kept (the
 * transport skips them); known ones have been checked. */
struct uiw_rpcrdma_propset {
    uint32_t n;
    struct uiw_rpcrdma_prop *props; /* decode: points into the space's props pool */
};

/* rpcrdma2_propsubset: a bitmap of property ids, `nwords` big-endian uint32 words at
 * `wire` (decode: into the input buffer). Property N is bit (N mod 32) of word (N / 32);
 * words not present count as zero. Use the helpers below rather than reading `wire`. */
struct uiw_rpcrdma_propsubset {
    uint32_t nwords;
    const uint8_t *wire;
};

struct uiw_rpcrdma_hdr {
    uint32_t xid;
    uint32_t vers;
    uint32_t credit;
    uint32_t proc; /* enum uiw_rpcrdma_proc */
    /* Decode only: how many of the four fixed words above were present in the input
     * (0..4). Even a failed decode fills them as far as the input goes, so an error
     * reply can copy xid and vers (possible when nfixed >= 2). */
    uint32_t nfixed;
    /* Decode only: header length = offset of the RPC payload stream in the input (the
     * same as a successful decode's return value). */
    uint32_t hdr_len;
    union {
        struct uiw_rpcrdma_chunks chunks;     /* MSG, NOMSG (v1 and v2) */
        struct uiw_rpcrdma_error error;       /* ERROR (v1 and v2) */
        struct uiw_rpcrdma_optional optional; /* RDMA2_OPTIONAL */
        struct {
            struct uiw_rpcrdma_propset start;    /* rdma_start */
            struct uiw_rpcrdma_propsubset nochg; /* rdma_nochg */
        } connprop;                              /* RDMA2_CONNPROP */
        struct {
            struct uiw_rpcrdma_propset want; /* rdma_want */
        } reqprop;                           /* RDMA2_REQPROP */
        struct {
            struct uiw_rpcrdma_propsubset done;     /* rdma_done */
            struct uiw_rpcrdma_propsubset rejected; /* rdma_rejected */
            struct uiw_rpcrdma_propset other;       /* rdma_other */
        } resprop;                                  /* RDMA2_RESPROP */
        struct {
            struct uiw_rpcrdma_propset now; /* rdma_now */
        } updprop;                          /* RDMA2_UPDPROP */
    } u;
};

/* ---------------------------------------------------------------------------------------
 * Caller-provided storage for decoding (the decoder never allocates)
 * ------------------------------------------------------------------------------------- */

/* Default caps: at least what the project promises to accept. */
#define UIW_RPCRDMA_MAX_READS          16
#define UIW_RPCRDMA_MAX_WRITES         16
#define UIW_RPCRDMA_MAX_SEGS_PER_CHUNK 16
#define UIW_RPCRDMA_MAX_PROPS          16

/* Arrays the decoder fills, with their capacities. A message needing more than a cap is
 * refused with the matching UIW_E_RPCRDMA_CAP_* code (the receiver still answers it
 * with BAD_XDR / ERR_CHUNK). The caps are configurable simply by pointing at larger or
 * smaller arrays; max_segs_per_chunk may be lower than max_segs. */
struct uiw_rpcrdma_space {
    struct uiw_rpcrdma_read_segment *reads; /* read list entries */
    uint32_t max_reads;
    struct uiw_rpcrdma_write_chunk *writes; /* write list chunks */
    uint32_t max_writes;
    struct uiw_rpcrdma_segment *segs; /* segment pool shared by write chunks + reply */
    uint32_t max_segs;
    uint32_t max_segs_per_chunk;
    struct uiw_rpcrdma_prop *props; /* property pool shared by the message's propsets */
    uint32_t max_props;
};

/* Storage for the default caps: (16 write chunks + 1 reply chunk) x 16 segments. */
struct uiw_rpcrdma_space_default {
    struct uiw_rpcrdma_read_segment reads[UIW_RPCRDMA_MAX_READS];
    struct uiw_rpcrdma_write_chunk writes[UIW_RPCRDMA_MAX_WRITES];
    struct uiw_rpcrdma_segment segs[(UIW_RPCRDMA_MAX_WRITES + 1) * UIW_RPCRDMA_MAX_SEGS_PER_CHUNK];
    struct uiw_rpcrdma_prop props[UIW_RPCRDMA_MAX_PROPS];
};

/* Point `sp` at `st` with the default caps. */
UIW_EXTERN void uiw_rpcrdma_space_init(struct uiw_rpcrdma_space *sp,
                                       struct uiw_rpcrdma_space_default *st);

/* ---------------------------------------------------------------------------------------
 * Decoding
 * ------------------------------------------------------------------------------------- */

/* Decode one transport header from buf[0..len), choosing the version by rdma_vers
 * (1 or 2). Returns the header length, i.e. the offset of the RPC payload stream (which
 * may be empty), or a negative UIW_E_RPCRDMA_* code; never reads outside buf[0..len)
 * and never writes outside *h and the arrays of *sp.
 *
 * An ERROR message announcing ERR_VERS (errcode 1 followed by the low/high words) is
 * accepted whatever its rdma_vers, since its layout is fixed for all versions (a peer
 * answering an unsupported version copies that version into the reply). Any other
 * message with an unsupported rdma_vers fails with UIW_E_RPCRDMA_VERS.
 *
 * On failure, h->xid/vers/credit/proc are filled as far as the input held them
 * (h->nfixed says how many); use uiw_rpcrdma_wire_error() and
 * uiw_rpcrdma_encode_error_reply() to build the reply a receiver must send. */
UIW_EXTERN int uiw_rpcrdma_decode(const void *buf, size_t len, struct uiw_rpcrdma_hdr *h,
                                  const struct uiw_rpcrdma_space *sp);

/* As uiw_rpcrdma_decode, but accept only rdma_vers == 1 (resp. 2), with the same
 * exception for ERR_VERS errors; any other version fails with UIW_E_RPCRDMA_VERS.
 * Version One refuses RDMA_MSGP and RDMA_DONE (UIW_E_RPCRDMA_V1_REFUSED_PROC) and
 * procedures above 4 (UIW_E_RPCRDMA_V1_BAD_PROC); Version Two refuses unknown
 * procedures (2, 3, above 9) with UIW_E_RPCRDMA_INVAL_PROC. */
UIW_EXTERN int uiw_rpcrdma1_decode(const void *buf, size_t len, struct uiw_rpcrdma_hdr *h,
                                   const struct uiw_rpcrdma_space *sp);
UIW_EXTERN int uiw_rpcrdma2_decode(const void *buf, size_t len, struct uiw_rpcrdma_hdr *h,
                                   const struct uiw_rpcrdma_space *sp);

/* The error code (enum uiw_rpcrdma_errcode) a receiver must send in an ERROR reply for
 * the decode failure `code` of a header of version `vers`:
 *   UIW_E_RPCRDMA_VERS                          -> ERR_VERS (1)
 *   UIW_E_RPCRDMA_INVAL_PROC (v2)               -> RDMA2_ERR_INVAL_PROC (4)
 *   every other UIW_E_RPCRDMA_* decode error    -> BAD_XDR / ERR_CHUNK (2)
 *     (includes caps exceeded, v1 unknown/refused procedures, truncation)
 * Returns 0 when `code` is not a decode failure (>= 0, or not one of the codec's codes):
 * no error reply applies. */
UIW_EXTERN uint32_t uiw_rpcrdma_wire_error(int code, uint32_t vers);

/* ---------------------------------------------------------------------------------------
 * Encoding
 * ------------------------------------------------------------------------------------- */

/* Encode *h (version h->vers, 1 or 2) into buf[0..cap). Returns the encoded length, or
 * UIW_E_RPCRDMA_NOSPC if it does not fit (nothing useful is left in buf), or
 * -EINVAL for a header that cannot be encoded: unsupported vers, a procedure the
 * version does not have (v1 MSGP/DONE are refused too), an error code the version does
 * not define, a direction other than CALL/REPLY, a property whose `data` is NULL with
 * len not 0 or 4, NULL arrays with nonzero counts. Known properties with an invalid
 * value give UIW_E_RPCRDMA_BAD_PROP (we never send what we would refuse).
 * With buf == NULL (and any cap) nothing is written and the length needed is returned. */
UIW_EXTERN int uiw_rpcrdma_encode(void *buf, size_t cap, const struct uiw_rpcrdma_hdr *h);

/* Encode an ERROR header: xid, vers, credit, ERROR, then `e` (errcode and the arm it
 * selects). Same returns as uiw_rpcrdma_encode (vers 1 allows ERR_VERS and ERR_CHUNK
 * only; vers 2 allows 1..6; any other vers allows ERR_VERS only). */
UIW_EXTERN int uiw_rpcrdma_encode_error(void *buf, size_t cap, uint32_t xid, uint32_t vers,
                                        uint32_t credit, const struct uiw_rpcrdma_error *e);

/* Encode the ERROR reply a receiver must send for a header that failed to decode with
 * `code`: copies xid and vers from `bad` (which must have nfixed >= 2), uses errcode
 * uiw_rpcrdma_wire_error(code, bad->vers), reports the supported range
 * [UIW_RPCRDMA_VERS_MIN, UIW_RPCRDMA_VERS_MAX] for ERR_VERS, and writes `credit`.
 * Returns the length, UIW_E_RPCRDMA_NOSPC, or -EINVAL when no reply applies (code not a
 * decode failure, or nfixed < 2: the xid is unknown). */
UIW_EXTERN int uiw_rpcrdma_encode_error_reply(void *buf, size_t cap,
                                              const struct uiw_rpcrdma_hdr *bad, int code,
                                              uint32_t credit);

/* ---------------------------------------------------------------------------------------
 * Properties and property subsets
 * ------------------------------------------------------------------------------------- */

/* Check a property as the decoder does: 0 if it is unknown (kept, skipped by the
 * transport) or a known property with a valid value (RBSIZ: len 0, or len 4 with a value
 * >= UIW_RPCRDMA_RBSIZ_MIN; BRS: len 0, or len 4 with value NONE/INLINE/GENL);
 * UIW_E_RPCRDMA_BAD_PROP otherwise. For data == NULL, len 4 means `value`. */
UIW_EXTERN int uiw_rpcrdma_prop_check(const struct uiw_rpcrdma_prop *p);

/* The property `which` in `ps`, or NULL (first match when repeated). */
UIW_EXTERN const struct uiw_rpcrdma_prop *
uiw_rpcrdma_propset_find(const struct uiw_rpcrdma_propset *ps, uint32_t which);

/* Word i of a subset (0 for words not present). */
UIW_EXTERN uint32_t uiw_rpcrdma_subset_word(const struct uiw_rpcrdma_propsubset *s, uint32_t i);

/* Whether property `propid` is in the subset. */
UIW_EXTERN bool uiw_rpcrdma_subset_has(const struct uiw_rpcrdma_propsubset *s, uint32_t propid);

/* Build a subset holding the property ids ids[0..n) into wire[0..cap) (big-endian words,
 * as few as needed; zero words for n == 0) and point *s at it. Returns the number of
 * words, or UIW_E_RPCRDMA_NOSPC if cap bytes cannot hold them. */
UIW_EXTERN int uiw_rpcrdma_subset_build(struct uiw_rpcrdma_propsubset *s, uint8_t *wire, size_t cap,
                                        const uint32_t *ids, size_t n);

/* ---------------------------------------------------------------------------------------
 * RFC 8797: connection private data of RPC-over-RDMA Version One
 *
 *   Format Identifier (32 bits, 0xf6ab0e18) | Version (8 bits, 1) |
 *   Reserved (7 bits) + I (1 bit, the least significant) | Send Size (8) | Receive Size (8)
 *
 * Sizes are carried as (bytes / 1024) - 1, so they are multiples of 1 KiB from 1 KiB to
 * 256 KiB. Send Size is the largest message the sender sends inline, Receive Size the
 * size of the sender's receive buffers; I set: the sender accepts Send With Invalidate.
 * A peer without this block (or with another format identifier or version) is assumed
 * to use 1024-byte messages and no remote invalidation (RFC 8166).
 * ------------------------------------------------------------------------------------- */

#define UIW_RPCRDMA_CM_PRIVATE_MAGIC   0xf6ab0e18u
#define UIW_RPCRDMA_CM_PRIVATE_VERSION 1u
#define UIW_RPCRDMA_CM_PRIVATE_LEN     8u
#define UIW_RPCRDMA_CM_SIZE_MIN        1024u
#define UIW_RPCRDMA_CM_SIZE_MAX        (256u * 1024u)

struct uiw_rpcrdma_cm_private {
    uint32_t magic;           /* Format Identifier */
    uint8_t version;          /* Version */
    uint8_t reserved;         /* the 7 reserved bits (decode: as received, shifted down) */
    bool remote_invalidation; /* I */
    uint32_t send_size;       /* bytes */
    uint32_t recv_size;       /* bytes */
};

/* Decode the first 8 bytes of buf[0..len). Returns 0 when they hold this format (magic
 * and version 1; the reserved bits are ignored, as the RFC says), -ENOENT when they do
 * not (another magic or version: the peer is to be treated as sending none; *p is still
 * filled when len >= 8), -EINVAL when len < 8. */
UIW_EXTERN int uiw_rpcrdma_cm_private_decode(const void *buf, size_t len,
                                             struct uiw_rpcrdma_cm_private *p);

/* Encode *p (magic and version as given; reserved bits as given, normally 0) into
 * buf[0..cap). Returns 8, -ENOSPC, or -EINVAL for a size that is not a multiple of 1 KiB
 * within 1 KiB..256 KiB. */
UIW_EXTERN int uiw_rpcrdma_cm_private_encode(void *buf, size_t cap,
                                             const struct uiw_rpcrdma_cm_private *p);

/* ---------------------------------------------------------------------------------------
 * Names (the XDR enumerator names of the specifications)
 * ------------------------------------------------------------------------------------- */

/* "RDMA_MSG", "RDMA_NOMSG", "RDMA_MSGP", "RDMA_DONE", "RDMA_ERROR" for vers 1;
 * "RDMA2_MSG" ... "RDMA2_UPDPROP" for vers 2. NULL for a value the version lacks. */
UIW_EXTERN const char *uiw_rpcrdma_proc_name(uint32_t proc, uint32_t vers);

/* "ERR_VERS", "ERR_CHUNK" for vers 1; "RDMA2_ERR_VERS" ... "RDMA2_ERR_SYSTEM" for vers 2.
 * NULL for a value the version lacks. */
UIW_EXTERN const char *uiw_rpcrdma_errcode_name(uint32_t errcode, uint32_t vers);

/* "CALL", "REPLY"; NULL otherwise. */
UIW_EXTERN const char *uiw_rpcrdma_dir_name(uint32_t dir);

/* "RDMA2_BKREQSUP_NONE", "..._INLINE", "..._GENL"; NULL otherwise. */
UIW_EXTERN const char *uiw_rpcrdma_bkreqsup_name(uint32_t v);

/* Lookups the other way: the value for a name above, or -1. */
UIW_EXTERN int uiw_rpcrdma_proc_from_name(const char *name, uint32_t vers);
UIW_EXTERN int uiw_rpcrdma_errcode_from_name(const char *name, uint32_t vers);
UIW_EXTERN int uiw_rpcrdma_dir_from_name(const char *name);

#ifdef __cplusplus
}
#endif
#endif
