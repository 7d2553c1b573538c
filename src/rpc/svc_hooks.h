/*
 * What a program that serves with the RPC layer beside other transports (uiw-nfsd, which
 * serves TCP too) reaches of a server beyond the public API (uiw/rpc.h).
 */
#ifndef UIW_RPC_SVC_HOOKS_H
#define UIW_RPC_SVC_HOOKS_H

#include <stdbool.h>
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

#endif
