/*
 * rpcrdma-decode: one RPC-over-RDMA transport header <-> one JSON object.
 */
#ifndef RPCRDMA_DECODE_RPCRDMA_H
#define RPCRDMA_DECODE_RPCRDMA_H

#include <stddef.h>
#include <stdint.h>

#include "json.h"

enum {
    RD_OPT_RPC = 1,       /* decode the ONC RPC header following RDMA_MSG / RDMA2_MSG */
    RD_OPT_NO_PAYLOAD = 2 /* do not print the payload bytes */
};

/* Decode the message msg[0..len) and append its JSON object (no newline) to out: the
 * header as its version's XDR, then, when bytes follow the header, "header_length",
 * "payload_length" and "payload" (hex), and under RD_OPT_RPC the key "rpc". A message
 * that does not decode gives {"error":"NAME"}, NAME being the error a receiver must
 * answer with. Returns 0, 1 for a message that did not decode, or -ENOMEM. */
int rd_decode_message(const uint8_t *msg, size_t len, int opts, struct rd_buf *out);

/* The error name a receiver answers a header of version vers with, for the decode
 * failure code (a UIW_E_RPCRDMA_* value). */
const char *rd_error_name(int code, uint32_t vers);

/* Encode the JSON object root of doc (as rd_decode_message writes it; "payload", when
 * present, is appended after the header; "header_length", "payload_length" and "rpc"
 * are ignored) and append the bytes to out. Returns 0 or -EINVAL / -ENOMEM with the
 * reason in err. */
int rd_encode_message(const struct rd_jdoc *doc, struct rd_buf *out, char *err, size_t errlen);

#endif
