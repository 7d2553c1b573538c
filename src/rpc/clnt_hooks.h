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

struct uiw__rr_dev;
/* The transport device of a client (its pools and poller), or NULL. */
struct uiw__rr_dev *uiw__rpc_clnt_dev(CLIENT *clnt);

/* Hold the doorbells of the asynchronous calls the calling thread starts (on any client)
 * until uiw__rpc_clnt_unplug, so that a batch started outside a callback (uiw_rpc_clnt_poll
 * batches those of its callbacks already) goes out with one system call. Only the
 * doorbell waits: a pass of the transport that serves the connection meanwhile (a reply
 * coming in, say) may send them sooner. Nestable; a thread that waits for a call
 * (clnt_call, uiw_rpc_call, uiw_rpc_clnt_poll) rings what it holds first, so a plugged
 * thread never waits for its own sends. */
void uiw__rpc_clnt_plug(void);
/* Ring what the thread holds and end one uiw__rpc_clnt_plug. */
void uiw__rpc_clnt_unplug(void);

#endif
