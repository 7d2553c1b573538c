/* The decoding arena of each thread (struct uiw__xdr_arena, src/rpc/xdr_pad.h): defined
 * here, in the layer that both the RPC layer's streams and the NFS XDR routines rpcgen
 * makes are linked to. */
struct uiw__xdr_arena;

extern _Thread_local struct uiw__xdr_arena *uiw__xdr_arena;
_Thread_local struct uiw__xdr_arena *uiw__xdr_arena;
