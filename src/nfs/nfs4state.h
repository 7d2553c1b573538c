/* NFSv4.1 client records and sessions (nfs4state.c), for the operations of nfs4.c. */
#ifndef UIW_NFS_NFS4STATE_H
#define UIW_NFS_NFS4STATE_H

#include <stddef.h>
#include <stdint.h>

#include "nfs4.h"
#include "nfs/server.h"

/* The server's limits that CREATE_SESSION clamps a client's channel attributes to. */
struct uiw__nfs4_limits {
    uint32_t max_req, max_resp; /* bytes of a request, a reply */
    uint32_t max_cached;        /* bytes of a reply a slot keeps */
    uint32_t max_ops;           /* operations of a COMPOUND */
    uint32_t max_slots;         /* slots of the fore channel */
};

/* The limits of this server (from its max_io). */
void uiw__nfs4_limits(const struct uiw__nfsd *s, struct uiw__nfs4_limits *l);

/* RFC 8881 section 18.35: the record of the client that owns a->eia_clientowner. */
nfsstat4 uiw__nfs4_exchange_id(struct uiw__nfs4_state *st, const EXCHANGE_ID4args *a,
                               EXCHANGE_ID4resok *r);
/* Section 18.36: a new session of a confirmed or unconfirmed client (confirming it), or
 * the reply of the last one when csa_sequence is the one before. */
struct uiw__nfs4_conn;
nfsstat4 uiw__nfs4_create_session(struct uiw__nfs4_state *st, const struct uiw__nfs4_limits *l,
                                  struct uiw__nfs4_conn *conn, const CREATE_SESSION4args *a,
                                  CREATE_SESSION4resok *r);
nfsstat4 uiw__nfs4_destroy_session(struct uiw__nfs4_state *st, const char id[NFS4_SESSIONID_SIZE]);
nfsstat4 uiw__nfs4_destroy_clientid(struct uiw__nfs4_state *st, clientid4 id);

/* A slot taken by a SEQUENCE, until its reply is done. */
struct uiw__nfs4_session;
struct uiw__nfs4_slotref {
    struct uiw__nfs4_session *ses;
    uint32_t slot;
};

/* Section 18.46 and 2.10.6.1 for a COMPOUND of nops operations and req_len bytes of
 * arguments (more than the session takes: NFS4ERR_REQ_TOO_BIG): NFS4_OK with *ref the
 * slot, taken (a new request: run it, then uiw__nfs4_slot_done); NFS4_OK with *cached
 * the whole reply kept for this retry (malloc'd, *clen bytes: send it as it is); or the
 * error (BADSESSION, BADSLOT, SEQ_MISORDERED, RETRY_UNCACHED_REP, DELAY, TOO_MANY_OPS). */
nfsstat4 uiw__nfs4_sequence(struct uiw__nfs4_state *st, const SEQUENCE4args *a, uint32_t nops,
                            uint32_t req_len, SEQUENCE4resok *r, struct uiw__nfs4_slotref *ref,
                            char **cached, size_t *clen);
/* The request of ref is done: its reply (len bytes) kept for a retry when `keep`. */
void uiw__nfs4_slot_done(struct uiw__nfs4_state *st, struct uiw__nfs4_slotref *ref,
                         const char *reply, size_t len, int keep);
/* The session's limit of operations per COMPOUND (ref taken). */
uint32_t uiw__nfs4_session_max_ops(const struct uiw__nfs4_slotref *ref);
/* The session's largest reply, and largest reply a slot keeps (ref taken). */
void uiw__nfs4_session_sizes(const struct uiw__nfs4_slotref *ref, uint32_t *max_resp,
                             uint32_t *max_cached);

/* RECLAIM_COMPLETE (RFC 8881 section 18.51) of the session's client: its reclaims are
 * done (the grace period ends once every client of the last instance is); a second gets
 * NFS4ERR_COMPLETE_ALREADY. one_fs (rca_one_fs): for one file system, accepted. */
nfsstat4 uiw__nfs4_reclaim_complete(struct uiw__nfs4_state *st, const struct uiw__nfs4_slotref *ref,
                                    int one_fs);
/* Whether the session's client may make state now (section 8.4.2): a reclaim
 * (CLAIM_PREVIOUS, a reclaim LOCK) only in the grace period by a client of the last
 * instance before its RECLAIM_COMPLETE (else NFS4ERR_NO_GRACE); new state not in the grace
 * period (NFS4ERR_GRACE). */
nfsstat4 uiw__nfs4_grace_check(struct uiw__nfs4_state *st, const struct uiw__nfs4_slotref *ref,
                               int reclaim);

/* A reclaim granted: an OPEN with CLAIM_PREVIOUS (lock 0) or a LOCK with `reclaim` (1),
 * counted for uiw__nfsd_reclaim_counts. */
void uiw__nfs4_reclaimed(struct uiw__nfs4_state *st, int lock);

/* The clients of the last instance yet to reclaim while the grace period runs (0: not in
 * grace). */
unsigned uiw__nfs4_in_grace(struct uiw__nfs4_state *st);

/* The callbacks of this server (nfs4cb.c). */
struct uiw__nfs4_cbs *uiw__nfs4_state_cbs(struct uiw__nfs4_state *st);

/* The NFSv3 side of delegations (nfs3.c; st NULL: no NFSv4, nothing held): whether a
 * change of the file (dev, ino) conflicts with an NFSv4 client's delegation: 1 (its
 * recall sent once: answer NFS3ERR_JUKEBOX), else 0. */
int uiw__nfs4_deleg_break(struct uiw__nfs4_state *st, dev_t dev, ino_t ino);

/* The lease, seconds (the lease_time attribute). */
uint32_t uiw__nfs4_lease(const struct uiw__nfs4_state *st);

#endif
