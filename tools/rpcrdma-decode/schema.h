/*
 * The XDR of RPC-over-RDMA Version One (xdr/rpcrdma_v1.x, RFC 8166 section 4.3), Version
 * Two (xdr/rpcrdma_v2.x, draft-cel-nfsv4-rpcrdma-version-two-03 section 6.2) and of the
 * ONC RPC message header (RFC 5531 section 9), as tables for xdr.c. Caps are those of the
 * project's header codec (<uiw/rpcrdma.h>), so the decoder accepts what a uiw receiver
 * accepts.
 */
#ifndef RPCRDMA_DECODE_SCHEMA_H
#define RPCRDMA_DECODE_SCHEMA_H

#include "xdr.h"

extern const struct rd_xtype rd_v1_header;  /* struct rdma_msg */
extern const struct rd_xtype rd_v2_header;  /* struct rpcrdma2_xprt_hdr */
extern const struct rd_xtype rd_rpc_header; /* struct rpc_msg up to the arguments/results */

#endif
