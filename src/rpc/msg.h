/*
 * ONC RPC message headers (RFC 5531 section 9) and AUTH_SYS credentials (msg.c), on any
 * XDR stream: what a server on another transport (uiw-nfsd's TCP) shares with the RPC
 * layer's responder.
 */
#ifndef UIW_RPC_MSG_H
#define UIW_RPC_MSG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rpc/rpc.h>

#define UIW__RPC_VERS 2u

/* A decoded call header. */
struct uiw__rpc_chdr {
    uint32_t xid, rpcvers, prog, vers, proc;
    struct opaque_auth cred, verf;
    uint8_t cred_body[MAX_AUTH_BYTES], verf_body[MAX_AUTH_BYTES];
};
/* 0, or -EPROTO (not a call / too short). */
int uiw__rpc_dec_call(XDR *xdrs, struct uiw__rpc_chdr *h);

/* AUTH_SYS credential body -> parms (machine name and gids in the given storage).
 * 0 or -EPROTO. */
struct uiw__authsys {
    struct authunix_parms p;
    char name[MAX_MACHINE_NAME + 1];
    gid_t gids[NGRPS];
};
int uiw__rpc_authsys(const struct opaque_auth *cred, struct uiw__authsys *out);

/* Encode a reply from libtirpc's struct rpc_msg (as svc_sendreply builds it) with xid. */
bool uiw__rpc_enc_reply(XDR *xdrs, uint32_t xid, const struct rpc_msg *msg);

/* The reply messages a server sends of its own (through its SVCXPRT's reply op): accepted
 * with st (and the versions lo, hi of PROG_MISMATCH), or denied (RPC_MISMATCH naming
 * version 2, or AUTH_ERROR for why). */
void uiw__rpc_msg_accepted(struct rpc_msg *m, enum accept_stat st, uint32_t lo, uint32_t hi);
void uiw__rpc_msg_denied(struct rpc_msg *m, enum reject_stat st, enum auth_stat why);

/* A call's SVCXPRT, as the transport's own for rpcgen's dispatch routines: its ops, p1,
 * netid, and the caller's address (copied into *raddr, which svc_getrpccaller names). */
void uiw__rpc_svcxprt_init(SVCXPRT *x, const struct xp_ops *ops, const struct xp_ops2 *ops2,
                           void *p1, const char *netid, struct sockaddr_storage *raddr,
                           const struct sockaddr_storage *peer);
/* The ops of such an SVCXPRT that have nothing to do: no receiving (FALSE), always idle,
 * nothing to destroy, no control request known (FALSE). */
bool_t uiw__rpc_xp_recv_none(SVCXPRT *x, struct rpc_msg *m);
enum xprt_stat uiw__rpc_xp_stat_idle(SVCXPRT *x);
void uiw__rpc_xp_destroy_none(SVCXPRT *x);
bool_t uiw__rpc_xp_control_none(SVCXPRT *x, const u_int rq, void *in);

#endif
