/* NFSv4.1 client records on disk and the grace period after a restart (nfs4grace.c).
 * Not locked: nfs4state.c calls these under its lock. Every function takes NULL (no state
 * directory: no records, never in grace). */
#ifndef UIW_NFS_NFS4GRACE_H
#define UIW_NFS_NFS4GRACE_H

#include <stddef.h>
#include <stdint.h>

struct uiw__nfs4_grace;

/* The records in dir (made if missing, mode 0700): the last instance's clients, in grace
 * for at most grace_s seconds from now while any has not sent RECLAIM_COMPLETE. NULL and
 * errno when dir cannot be made or opened. */
struct uiw__nfs4_grace *uiw__nfs4_grace_open(const char *dir, unsigned grace_s);
void uiw__nfs4_grace_close(struct uiw__nfs4_grace *g);

/* The record of a client now confirmed, on disk when this returns: 0 or -errno. */
int uiw__nfs4_grace_record(struct uiw__nfs4_grace *g, const char *owner, size_t len);
/* The client went: its record goes (but a client of the last instance that has not sent
 * RECLAIM_COMPLETE keeps its record until the grace period ends). */
void uiw__nfs4_grace_forget(struct uiw__nfs4_grace *g, const char *owner, size_t len);

/* Whether the grace period runs (a client of the last instance not done, time left). */
int uiw__nfs4_grace_active(struct uiw__nfs4_grace *g);
/* Whether this owner may reclaim: the grace period runs and it is a client of the last
 * instance that has not sent RECLAIM_COMPLETE. */
int uiw__nfs4_grace_may_reclaim(struct uiw__nfs4_grace *g, const char *owner, size_t len);
/* RECLAIM_COMPLETE of this owner: a client of the last instance is done reclaiming (the
 * last one ends the grace period). */
void uiw__nfs4_grace_done(struct uiw__nfs4_grace *g, const char *owner, size_t len);
/* Clients of the last instance not done, while the grace period runs (0 after). */
unsigned uiw__nfs4_grace_pending(const struct uiw__nfs4_grace *g);

#endif
