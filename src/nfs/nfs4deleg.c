/*
 * NFSv4.1 read delegations (RFC 8881 section 10.4): when OPEN grants one, and their
 * recall (section 10.4.4, CB_RECALL through nfs4cb.c) when another client, or an NFSv3
 * caller, changes the file. The delegations themselves are nfs4stid.c's stateids.
 *
 *   - OPEN of a regular file for reading alone (CLAIM_NULL, CLAIM_FH) gets a read
 *     delegation when the client did not refuse one (OPEN4_SHARE_ACCESS_WANT_NO_DELEG,
 *     WANT_CANCEL) or ask for a write delegation alone, its back channel works now (a
 *     recall must be able to reach it), no other client has the file open for writing,
 *     no recall of the file is under way and the server was not told not to
 *     (--no-delegations). Its ACE is knfsd's: allow, no flags, an empty mask and who.
 *     Grace: CLAIM_NULL and CLAIM_FH are refused in the grace period before this.
 *   - A conflicting change by another client (OPEN for writing or denying reads, WRITE,
 *     SETATTR of the size, REMOVE or RENAME of a name of the file) or by an NFSv3 caller
 *     (WRITE, SETATTR, REMOVE, RENAME) recalls each delegation of the file once and is
 *     answered NFS4ERR_DELAY (NFS3ERR_JUKEBOX) until DELEGRETURN frees it, as knfsd
 *     does; the client retries.
 *   - A holder that does not return the delegation within a lease of its recall, or
 *     whose CB_RECALL fails (no path to it for a lease, its session gone, its error), has
 *     it revoked: what waited goes on, and the holder's SEQUENCE says
 *     SEQ4_STATUS_RECALLABLE_STATE_REVOKED until FREE_STATEID of it.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nfs/nfs4cb.h"
#include "nfs/nfs4int.h"

/* Recalls sent for one conflicting change at most: more (many clients delegated one
 * file) are sent on the change's retries. */
#define RECALLS_PER_CHANGE 8

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

struct recall {
    struct uiw__nfs4_stids *t;
    stateid4 sid;
};

static void recall_done(void *arg, nfsstat4 status)
{
    struct recall *r = arg;
    /* NFS4_OK, NFS4ERR_DELAY: the holder has it, and returns the delegation (or it is
     * revoked a lease after its recall); another error: it never will */
    if (status != NFS4_OK && status != NFS4ERR_DELAY)
        uiw__nfs4_stid_deleg_revoke(r->t, &r->sid);
    free(r);
}

/* A change of (dev, ino) by client cid (0: NFSv3): the delegations of others recalled. */
static int conflict(struct uiw__nfs4_state *st, clientid4 cid, dev_t dev, ino_t ino)
{
    struct uiw__nfs4_stids *t = uiw__nfs4_state_stids(st);
    struct uiw__nfs4_recall r[RECALLS_PER_CHANGE];
    unsigned n;
    int64_t now = now_ns(), lease = (int64_t)uiw__nfs4_lease(st) * 1000000000;
    unsigned held = uiw__nfs4_stid_deleg_conflict(t, cid, dev, ino, now, now - lease, r,
                                                  RECALLS_PER_CHANGE, &n);
    for (unsigned i = 0; i < n; i++) {
        struct recall *a = malloc(sizeof(*a));
        nfs_fh4 fh = {r[i].fhlen, r[i].fh};
        if (!a)
            continue; /* not sent: revoked a lease from now */
        a->t = t;
        a->sid = r[i].sid;
        if (uiw__nfs4_cb_recall(st, r[i].cid, &r[i].sid, &fh, 0, recall_done, a) != 0)
            free(a); /* no session to send it on: likewise */
    }
    return held != 0;
}

int uiw__nfs4_deleg_open(struct uiw__nfs4_c *c, const OPEN4args *a, const struct stat *sb,
                         open_delegation4 *d)
{
    uint32_t want = a->share_access & OPEN4_SHARE_ACCESS_WANT_DELEG_MASK;
    if (c->s->opts.no_delegations || (a->claim.claim != CLAIM_NULL && a->claim.claim != CLAIM_FH) ||
        (a->share_access & OPEN4_SHARE_ACCESS_BOTH) != OPEN4_SHARE_ACCESS_READ ||
        want == OPEN4_SHARE_ACCESS_WANT_NO_DELEG || want == OPEN4_SHARE_ACCESS_WANT_CANCEL ||
        want == OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG)
        return 0;
    clientid4 cid = uiw__nfs4_session_client(c->s->nfs4, &c->ref);
    if (!cid || !uiw__nfs4_cb_client_up(c->s->nfs4, cid))
        return 0;
    nfs_fh4 fh = {c->cur.len, c->cur.data};
    stateid4 sid;
    if (uiw__nfs4_stid_deleg(uiw__nfs4_state_stids(c->s->nfs4), cid, sb->st_dev, sb->st_ino, &fh,
                             &sid) != NFS4_OK)
        return 0;
    memset(d, 0, sizeof(*d));
    d->delegation_type = OPEN_DELEGATE_READ;
    open_read_delegation4 *rd = &d->open_delegation4_u.read;
    rd->stateid = sid;
    rd->recall = FALSE;
    rd->permissions.type = ACE4_ACCESS_ALLOWED_ACE_TYPE;
    return 1;
}

int uiw__nfs4_deleg_conflict(struct uiw__nfs4_c *c, const struct stat *sb)
{
    return conflict(c->s->nfs4, uiw__nfs4_session_client(c->s->nfs4, &c->ref), sb->st_dev,
                    sb->st_ino);
}

int uiw__nfs4_deleg_break(struct uiw__nfs4_state *st, dev_t dev, ino_t ino)
{
    return st && conflict(st, 0, dev, ino);
}

nfsstat4 uiw__nfs4_delegreturn(struct uiw__nfs4_c *c, struct uiw__vfs *v, const DELEGRETURN4args *a)
{
    int fd;
    struct uiw__nfs_export *ex;
    struct stat sb;
    nfsstat4 st = uiw__nfs4_resolve(c, v, 0, &fd, &ex, &sb);
    if (st != NFS4_OK)
        return st;
    close(fd);
    if (st == NFS4_OK)
        st = uiw__nfs4_stid_deleg_check(uiw__nfs4_state_stids(c->s->nfs4),
                                        uiw__nfs4_session_client(c->s->nfs4, &c->ref), sb.st_dev,
                                        sb.st_ino, &a->deleg_stateid, 1);
    return st;
}

int uiw__nfsd_deleg_counts(struct uiw__nfsd *s, struct uiw__nfsd_deleg_counts *n)
{
    if (!s->nfs4)
        return -ENOENT;
    struct uiw__nfs4_deleg_counts d;
    uiw__nfs4_stid_deleg_counts(uiw__nfs4_state_stids(s->nfs4), &d);
    n->granted = d.granted;
    n->recalled = d.recalled;
    n->returned = d.returned;
    n->revoked = d.revoked;
    return 0;
}
