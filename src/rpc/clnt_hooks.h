/*
 * What a program that settles its transport settings with the server (uiw-nfs) reaches of
 * a client beyond the public API (uiw/rpc.h).
 */
#ifndef UIW_RPC_CLNT_HOOKS_H
#define UIW_RPC_CLNT_HOOKS_H

#include <rpc/rpc.h>
#include <stdint.h>

/* Change the client's DDP threshold (uiw_rpc_xprt_attr.ddp_threshold, at least 64; 0:
 * 1024) for the calls it starts from now on: once a connection has settled its version
 * and sizes, say, and while no other thread starts calls. Arguments below it that the
 * call cannot carry inline still go in Read chunks. 0, or -EINVAL. */
int uiw__rpc_clnt_set_ddp_threshold(CLIENT *clnt, uint32_t threshold);

#endif
