/* The NFSv4.1 back channel (nfs4cb.c): the connections that carry callbacks, each
 * session's callback state, and the calls a server sends its clients (CB_NULL,
 * CB_COMPOUND with CB_SEQUENCE then CB_RECALL or CB_RECALL_ANY). */
#ifndef UIW_NFS_NFS4CB_H
#define UIW_NFS_NFS4CB_H

#include <stddef.h>
#include <stdint.h>

#include "nfs/nfsd.h"
#include "nfs4.h"

/* ---- the transports' side ---- */

/* A connection that can carry backward calls, made by its transport (tcp.c; rdma.c: the
 * RPC-over-RDMA backward direction, RFC 8167) and held by the sessions bound to it. */
struct uiw__nfs4_conn;

struct uiw__nfs4_conn_ops {
    /* Send one RPC call record (its record mark first: a transport that frames messages
     * itself leaves it out) without blocking: 0, or -errno (the connection is gone or
     * cannot take it). Called under the callbacks' lock: it must not wait for, nor call,
     * uiw__nfs4_conn_reply. */
    int (*send)(void *tp, const char *rec, size_t len);
    /* An RPC-over-RDMA connection: in RDMA mode from its start (CREATE_SESSION's
     * CONN_RDMA, BIND_CONN_TO_SESSION's use_conn_in_rdma_mode). */
    int rdma;
};

/* A new connection of the transport tp (one reference, the transport's). NULL: no
 * memory (the connection then carries no callbacks). */
struct uiw__nfs4_conn *uiw__nfs4_conn_new(const struct uiw__nfs4_conn_ops *ops, void *tp);
/* Whether cn is an RPC-over-RDMA connection (0 for NULL). */
int uiw__nfs4_conn_rdma(const struct uiw__nfs4_conn *cn);
/* A REPLY record that came on the connection (the record mark left out): matched to the
 * call sent on it by its xid; anything else is counted and dropped. */
void uiw__nfs4_conn_reply(struct uiw__nfs4_conn *cn, const char *rec, size_t len);
/* The connection closed: nothing more is sent on it, its calls wait for another. */
void uiw__nfs4_conn_closed(struct uiw__nfs4_conn *cn);
/* The transport's reference given back (after uiw__nfs4_conn_closed). */
void uiw__nfs4_conn_put(struct uiw__nfs4_conn *cn);

/* ---- the sessions' side (nfs4state.c) ---- */

struct uiw__nfs4_cbs; /* the callbacks of one server */
struct uiw__nfs4_cb;  /* one session's back channel */

struct uiw__nfs4_cbs *uiw__nfs4_cbs_create(void);
/* Every call still waiting fails (NFS4ERR_CB_PATH_DOWN), then everything goes. */
void uiw__nfs4_cbs_destroy(struct uiw__nfs4_cbs *cbs);

/* The first flavor of a CREATE_SESSION's or BACKCHANNEL_CTL's list that callbacks can
 * use (AUTH_NONE, AUTH_SYS): its index, -1 when it has others only (RPCSEC_GSS: the
 * server answers NFS4ERR_ENCR_ALG_UNSUPP, as knfsd does), -2 when it is empty. */
int uiw__nfs4_cb_sec_pick(const callback_sec_parms4 *v, u_int n);
/* A new session's back channel: program prog, the flavor sec (from pick; NULL: none
 * given, so no connection becomes its back channel until BACKCHANNEL_CTL gives one), the
 * attributes back as granted (ca_maxrequests: its slots). NULL: no memory. */
struct uiw__nfs4_cb *uiw__nfs4_cb_new(struct uiw__nfs4_cbs *cbs, const char id[NFS4_SESSIONID_SIZE],
                                      const channel_attrs4 *back, uint32_t prog,
                                      const callback_sec_parms4 *sec);
/* BACKCHANNEL_CTL (section 18.33): a new program and flavor. NFS4_OK or SERVERFAULT. */
nfsstat4 uiw__nfs4_cb_ctl(struct uiw__nfs4_cb *cb, uint32_t prog, const callback_sec_parms4 *sec);
/* Make cn the session's back channel (CREATE_SESSION's CONN_BACK_CHAN, BIND_CONN_TO_SESSION):
 * a CB_NULL probes it, and calls waiting for a path go on it. 0, or -1 (cn NULL: the
 * transport carries no callbacks). */
int uiw__nfs4_cb_bind(struct uiw__nfs4_cb *cb, struct uiw__nfs4_conn *cn);
/* SEQUENCE's sr_status_flags for the session (section 18.46.3): CB_PATH_DOWN_SESSION when
 * a back channel was asked for and none works now. */
uint32_t uiw__nfs4_cb_flags(struct uiw__nfs4_cb *cb);
/* Whether the session has a working back channel (bound, its probe answered). */
int uiw__nfs4_cb_up(struct uiw__nfs4_cb *cb);
void uiw__nfs4_cb_get(struct uiw__nfs4_cb *cb);
/* A reference given back; the session's own (it ended) fails its waiting calls
 * (NFS4ERR_BADSESSION) when `end`. */
void uiw__nfs4_cb_put(struct uiw__nfs4_cb *cb, int end);

/* The session's back channel, a reference taken (uiw__nfs4_cb_put): of the session id
 * (NULL: none such), of the SEQUENCE's session ref, of a session of client clid (the
 * first one up, else one that asked for a back channel, else any; NULL: none). In
 * nfs4state.c. */
struct uiw__nfs4_state;
struct uiw__nfs4_slotref;
struct uiw__nfs4_cb *uiw__nfs4_session_cb(struct uiw__nfs4_state *st,
                                          const char id[NFS4_SESSIONID_SIZE]);
struct uiw__nfs4_cb *uiw__nfs4_slot_cb(struct uiw__nfs4_state *st,
                                       const struct uiw__nfs4_slotref *ref);
struct uiw__nfs4_cb *uiw__nfs4_client_cb(struct uiw__nfs4_state *st, clientid4 clid);

/* ---- the operations (nfs4.c's run_op) ---- */

/* BIND_CONN_TO_SESSION (section 18.34) of the connection cn (NULL: one that carries no
 * callbacks). */
nfsstat4 uiw__nfs4_bind_conn(struct uiw__nfs4_state *st, struct uiw__nfs4_conn *cn,
                             const BIND_CONN_TO_SESSION4args *a, BIND_CONN_TO_SESSION4resok *r);
/* BACKCHANNEL_CTL (section 18.33) of the SEQUENCE's session. */
nfsstat4 uiw__nfs4_backchannel_ctl(struct uiw__nfs4_state *st, const struct uiw__nfs4_slotref *ref,
                                   const BACKCHANNEL_CTL4args *a);

/* ---- callbacks: what a delegation recall uses ---- */

/* Called once per callback when it ends: status NFS4_OK, or the client's error for the
 * operation (CB_RECALL's, e.g. NFS4ERR_BADHANDLE), or NFS4ERR_CB_PATH_DOWN (no path to
 * the client within the time given: a lease), NFS4ERR_BADSESSION (the session ended), the
 * CB_SEQUENCE's error. Runs in a server thread (a transport's or the callbacks' timer):
 * it must not block. */
typedef void (*uiw__nfs4_cb_done_fn)(void *arg, nfsstat4 status);

/* CB_RECALL (section 20.2) of the delegation sid on fh to client clid, on a session of it
 * with a back channel (the first one up, else one that asked for one: the call waits
 * for its path until a lease has passed). 0 (done runs later, exactly once), or -ENOENT
 * (no such client or no session), -ENOSPC (too many callbacks wait for that session),
 * -EINVAL (fh longer than a handle), -ENOMEM. */
int uiw__nfs4_cb_recall(struct uiw__nfs4_state *st, clientid4 clid, const stateid4 *sid,
                        const nfs_fh4 *fh, int truncate, uiw__nfs4_cb_done_fn done, void *arg);
/* Whether client clid has a session whose back channel works now (the probe answered,
 * nothing failed since): what OPEN asks before it grants a delegation. */
int uiw__nfs4_cb_client_up(struct uiw__nfs4_state *st, clientid4 clid);
/* CB_RECALL_ANY (section 20.6): keep at most `keep` objects of the types of mask
 * (RCA4_TYPE_MASK_* bits of the first word). As uiw__nfs4_cb_recall. */
int uiw__nfs4_cb_recall_any(struct uiw__nfs4_state *st, clientid4 clid, uint32_t keep,
                            uint32_t mask, uiw__nfs4_cb_done_fn done, void *arg);

/* The callbacks' counters (nfsd.h). */
void uiw__nfs4_cb_counts(struct uiw__nfs4_cbs *cbs, struct uiw__nfsd_cb_counts *n);
/* How long a call waits for its reply before its path counts as down (default 5000 ms;
 * tests shorten it). */
void uiw__nfs4_cb_set_timeout(struct uiw__nfs4_cbs *cbs, unsigned ms, unsigned give_up_ms);

#endif
