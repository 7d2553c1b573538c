/*
 * What a program that serves with the RPC layer beside other transports (uiw-nfsd, which
 * serves TCP too) reaches of a server beyond the public API (uiw/rpc.h).
 */
#ifndef UIW_RPC_SVC_HOOKS_H
#define UIW_RPC_SVC_HOOKS_H

#include <rpc/rpc.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct uiw_rpc_svc;

/* An admission check of the server's connections beside its own max_connections (so that
 * one limit can bound its connections and another transport's together): admit is asked
 * for each connection request, with the peer's address, before anything is allocated for
 * it (false: the connection manager rejects it, and admit logs why if it wants); gone is
 * told once a connection admit let in is freed (or failed to come up). Both run on the
 * server's listener thread. Set before uiw_rpc_svc_start / uiw_rpc_svc_run: 0, or -EBUSY
 * (the server runs), -EINVAL. */
struct uiw__rr_dev;
/* The server's transport device (tests). */
struct uiw__rr_dev *uiw__rpc_svc_dev(struct uiw_rpc_svc *svc);

int uiw__rpc_svc_admission(struct uiw_rpc_svc *svc,
                           bool (*admit)(void *arg, const struct sockaddr *peer),
                           void (*gone)(void *arg), void *arg);

/* Which calls of a registered program the duplicate-reply cache keeps (those a second
 * run would answer differently: NFSv3's that change something; none of NFSv4.1's, whose
 * sessions keep their own reply cache, RFC 8881 section 2.10.6): cached(proc) true for
 * those. Without it, every call but procedure 0. Set before uiw_rpc_svc_start /
 * uiw_rpc_svc_run: 0, or -ENOENT (prog, vers not registered), -EBUSY, -EINVAL. */
int uiw__rpc_svc_cached(struct uiw_rpc_svc *svc, rpcprog_t prog, rpcvers_t vers,
                        bool (*cached)(rpcproc_t proc));

/* ---- a program's own state per connection, and backward calls it encodes itself ----
 *
 * uiw-nfsd's NFSv4.1 back channel (RFC 8881 section 2.10.3.1, RFC 8167) keeps a record per
 * connection that can carry callbacks, encodes its callbacks itself and matches their
 * replies by XID, as it does over TCP: these give it the same shape over RPC-over-RDMA. */

/* The data of the connection of xprt (a call's, inside its dispatch routine): made by
 * make(arg, xprt) the first time it is asked for on that connection (under the server's
 * lock: make must not block), then the same every time; handed to the server's `ended`
 * hook once, when the connection has ended and its backward calls have failed. NULL: a
 * foreign transport, a connection that already ended, or make returned NULL (it is asked
 * again next time). */
void *uiw__rpc_svc_conn_data(SVCXPRT *xprt, void *(*make)(void *arg, SVCXPRT *xprt), void *arg);
/* The hook told of each connection's data (uiw__rpc_svc_conn_data) once its connection
 * ended. It runs on the thread that found the connection drained (one driving the
 * server's transport): it must not block. Set before uiw_rpc_svc_start / uiw_rpc_svc_run:
 * 0, -EBUSY (the server runs), -EINVAL. */
int uiw__rpc_svc_conn_ended(struct uiw_rpc_svc *svc, void (*ended)(void *data));

/* The outcome of a raw backward call: status 0 with its reply (the RPC reply message,
 * XID first, valid during the call only), or a negative code without one (-ENOTCONN:
 * the connection ended first). Runs on the thread that drives the server's transport
 * and received it: it must not block (taking a lock held only briefly is fine). */
typedef void (*uiw__rpc_raw_fn)(void *arg, int status, const void *reply, uint32_t len);

/* A CLIENT for raw backward calls on the connection of xprt (a call's), with room for
 * max_calls calls at once (beyond the peer's backward credits: the transport queues those
 * until credits come back). Its calls fail once the connection ends; clnt_destroy it
 * after that (it then returns at once), or before. NULL + errno: EINVAL (a foreign
 * transport), EOPNOTSUPP (the client takes no backward calls), ENOMEM. */
CLIENT *uiw__rpc_svc_bc_raw(SVCXPRT *xprt, unsigned max_calls);
/* Send msg, an encoded RPC call of len bytes (XID first), on bc's connection as it is,
 * never waiting: with the client's Backward Request Support (inline only unless it is
 * GENL) and its credits (the call waits on the connection for one). fn(arg, ...) runs
 * once when its reply came or the call failed. A call whose XID is still in flight on bc
 * is not sent again (0: the one in flight stands for it; RDMA loses no message but with
 * its connection). 0, or -EAGAIN (max_calls in flight), -ENOTCONN, -EOPNOTSUPP (the
 * client's BRS is NONE now), -EMSGSIZE (too large for the peer), -ENOBUFS (the send
 * queue is full), -ENOMEM, -EINVAL. */
int uiw__rpc_bc_send_raw(CLIENT *bc, const void *msg, uint32_t len, uiw__rpc_raw_fn fn, void *arg);

#endif
