/*
 * rpcrdma-decode: one RPC-over-RDMA transport header <-> one JSON object.
 *
 * The header itself is decoded and encoded by the project's codec (<uiw/rpcrdma.h>); this
 * program only renders the codec's struct uiw_rpcrdma_hdr as JSON that mirrors the XDR of
 * the header's version (render.c) and reads such JSON back into that struct (parse.c).
 * The ONC RPC header that may follow RDMA_MSG is decoded here (rpc.c): the codec does
 * not do RPC.
 */
#ifndef RPCRDMA_DECODE_RPCRDMA_H
#define RPCRDMA_DECODE_RPCRDMA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <uiw/rpcrdma.h>

#include "json.h"

enum {
    RD_OPT_RPC = 1,       /* decode the ONC RPC header following RDMA_MSG / RDMA2_MSG */
    RD_OPT_NO_PAYLOAD = 2 /* do not print the payload bytes */
};

/* Decode the message msg[0..len) with uiw_rpcrdma_decode() and append its JSON object (no
 * newline) to out: the header as its version's XDR, then, when bytes follow the header,
 * "header_length", "payload_length" and "payload" (hex), and under RD_OPT_RPC the key
 * "rpc". A message the codec refuses gives {"error":"NAME"}, NAME being the error code a
 * receiver answers with (uiw_rpcrdma_wire_error), by its name in the message's version
 * (Version Two names for any version but 1). Returns 0, 1 for a message that did not
 * decode, or -ENOMEM. */
int rd_decode_message(const uint8_t *msg, size_t len, int opts, struct rd_buf *out);

/* Storage the JSON reader fills for the encoder: arrays of the codec's structures and the
 * bytes of opaque fields and property subsets. Reused from message to message, it grows
 * to the largest message seen; zero-initialize it, release it with rd_scratch_free. */
struct rd_vec {
    void *p;
    size_t cap, need; /* in elements */
};

struct rd_scratch {
    struct rd_vec reads;  /* struct uiw_rpcrdma_read_segment */
    struct rd_vec writes; /* struct uiw_rpcrdma_write_chunk */
    struct rd_vec segs;   /* struct uiw_rpcrdma_segment */
    struct rd_vec props;  /* struct uiw_rpcrdma_prop */
    struct rd_vec bytes;  /* uint8_t */
};

void rd_scratch_free(struct rd_scratch *sc);

/* Encode the JSON object root of doc (as rd_decode_message writes it; "payload", when
 * present, is appended after the header; "header_length", "payload_length" and "rpc"
 * are ignored) with uiw_rpcrdma_encode() (uiw_rpcrdma_encode_error() for the ERR_VERS
 * reply of another version) and append the bytes to out. What the codec does not
 * encode is refused (Version One's RDMA_MSGP and RDMA_DONE, other versions' messages
 * but ERR_VERS, known properties with invalid values). Returns 0 or -EINVAL / -ENOMEM
 * with the reason in err. */
int rd_encode_message(const struct rd_jdoc *doc, struct rd_scratch *sc, struct rd_buf *out,
                      char *err, size_t errlen);

/* render.c: append the JSON object of a header the codec decoded. */
void rd_render_header(const struct uiw_rpcrdma_hdr *h, struct rd_buf *out);

/* parse.c: fill *h from the JSON object root (its top-level keys other than the header's
 * must be among `extra`, NULL-terminated). Arrays and bytes live in sc, valid until the
 * next call. Returns 0, -EINVAL (reason and path in err) or -ENOMEM. */
int rd_parse_header(const struct rd_jdoc *doc, const struct rd_jval *root, const char *const *extra,
                    struct rd_scratch *sc, struct uiw_rpcrdma_hdr *h, char *err, size_t errlen);

/* rpc.c: decode the ONC RPC message header (RFC 5531 rpc_msg up to the arguments or
 * results) at the start of buf[0..len) and append its JSON. Returns 0, or -EINVAL when
 * the bytes do not hold one (out is then restored to its length at entry). */
int rd_render_rpc(const uint8_t *buf, size_t len, struct rd_buf *out);

/* pcap.c: decode the RDMA Sends of the iWARP connections captured in the pcap file `in`
 * (link types Ethernet, Linux cooked v1/v2, raw IP), writing one line per message to
 * out as rd_decode_message does, plus the keys "frame" (the capture record, from 1,
 * that completed it), "src" and "dst" (address:port) and, when the message says whether
 * it is a call or a reply, "backward" (a call from the MPA responder, the RPC server, or
 * a reply to one: RFC 8167's backward direction). Returns 0, 1 when a message did not
 * decode or the capture is damaged (said on err), or -ENOMEM / -EIO. */
int rd_decode_pcap(FILE *in, int opts, FILE *out, FILE *err);

#endif
