/*
 * NFSv4.1 opens and I/O (RFC 8881): OPEN, OPEN_DOWNGRADE, CLOSE, READ, WRITE, COMMIT,
 * TEST_STATEID, FREE_STATEID and the current stateid passed between the operations of a
 * COMPOUND (section 16.2.3.1.2). The state is nfs4stid.c's; the files are reached as
 * NFSv3 reaches them (vfs.c: the caller's identity, the open-file cache, the write
 * verifier, the exclusive create's verifier).
 *
 *   - OPEN (section 18.16): CLAIM_NULL (a name in the current directory) and CLAIM_FH
 *     (the current file), NFS4ERR_GRACE in the grace period; CLAIM_PREVIOUS (the current
 *     file) in the grace period by a client of the last instance, else NFS4ERR_NO_GRACE
 *     (nfs4state.c's rule); the reclaims of delegations (CLAIM_DELEGATE_PREV,
 *     CLAIM_DELEG_PREV_FH) NFS4ERR_NOTSUPP, as knfsd (no delegation outlives the server);
 *     an open under a delegation the client holds (CLAIM_DELEGATE_CUR: a name, as
 *     CLAIM_NULL; CLAIM_DELEG_CUR_FH: the current file) with its stateid checked, not
 *     refused in the grace period. OPEN4_CREATE with
 *     UNCHECKED4, GUARDED4, EXCLUSIVE4 and EXCLUSIVE4_1 (the verifier in the file's atime
 *     and mtime, as NFSv3's CREATE keeps it; EXCLUSIVE4_1's attributes applied to the file
 *     made); the createattrs taken are mode and size, any other NFS4ERR_ATTRNOTSUPP. The
 *     caller's read or write permission is checked on a file not made by this OPEN
 *     (NFS4ERR_ACCESS). A read delegation as nfs4deleg.c grants it; an OPEN for writing
 *     (or denying reads) of a file another client has delegated waits for its recall
 *     (NFS4ERR_DELAY). No delegation: OPEN_DELEGATE_NONE, or OPEN_DELEGATE_NONE_EXT
 *     (WND4_NOT_WANTED, or WND4_CONTENTION) when the client said what it wants.
 *   - READ, WRITE, COMMIT: the stateid of an open of this client on the current file, or
 *     of a lock made from one (the open's access; NFS4ERR_OPENMODE: a WRITE through an
 *     open for reading), or the anonymous and
 *     READ-bypass special stateids; NFS4ERR_ISDIR for a directory, NFS4ERR_INVAL for
 *     another file that is not regular. WRITE answers the level it made the data stable
 *     at (the level asked: UNSTABLE4 waits for COMMIT) and NFSv3's write verifier.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nfs/nfs4int.h"

static struct uiw__nfs4_stids *stids(struct uiw__nfs4_c *c)
{
    return uiw__nfs4_state_stids(c->s->nfs4);
}

static clientid4 client(struct uiw__nfs4_c *c)
{
    return uiw__nfs4_session_client(c->s->nfs4, &c->ref);
}

/* ---- the current stateid ---- */

static void set_sid(struct uiw__nfs4_c *c, const stateid4 *s)
{
    c->cur_sid = *s;
    c->cur_sid_fh = c->cur;
}

void uiw__nfs4_sid_save(struct uiw__nfs4_c *c)
{
    c->saved_sid = c->cur_sid;
    c->saved_sid_fh = c->cur_sid_fh;
}

void uiw__nfs4_sid_restore(struct uiw__nfs4_c *c)
{
    c->cur_sid = c->saved_sid;
    c->cur_sid_fh = c->saved_sid_fh;
}

/* The stateid an operation names: the current one for the special "current stateid"
 * (seqid 1, other all zeros), which is none (NFS4ERR_BAD_STATEID) unless an operation
 * of this COMPOUND set it for the current file. */
static nfsstat4 sid_in(struct uiw__nfs4_c *c, const stateid4 *in, stateid4 *out)
{
    *out = *in;
    if (in->seqid != 1 || !uiw__nfs4_stid_special(in) || in->other[0] != 0)
        return NFS4_OK;
    if (!c->cur_sid_fh.len || c->cur_sid_fh.len != c->cur.len ||
        memcmp(c->cur_sid_fh.data, c->cur.data, c->cur.len) != 0)
        return NFS4ERR_BAD_STATEID;
    *out = c->cur_sid;
    return NFS4_OK;
}

/* The current file's kind: a directory NFS4ERR_ISDIR, another file that is not regular
 * `other`. */
static nfsstat4 regular(const struct stat *sb, nfsstat4 other)
{
    return S_ISDIR(sb->st_mode) ? NFS4ERR_ISDIR : !S_ISREG(sb->st_mode) ? other : NFS4_OK;
}

/* The current file for an operation on an open, its stat and export taken through its
 * handle (no descriptor opened); as regular() says. */
static nfsstat4 cur_stat(struct uiw__nfs4_c *c, struct uiw__vfs *v, nfsstat4 other,
                         struct uiw__nfs_export **ex, struct stat *sb)
{
    nfsstat4 st = uiw__nfs4_stat(c, v, sb, ex);
    return st == NFS4_OK ? regular(sb, other) : st;
}

/* The current file for an operation on an open: a descriptor and its stat; as regular()
 * says. */
static nfsstat4 cur_file(struct uiw__nfs4_c *c, struct uiw__vfs *v, nfsstat4 other, int *fd,
                         struct uiw__nfs_export **ex, struct stat *sb)
{
    nfsstat4 st = uiw__nfs4_resolve(c, v, 0, fd, ex, sb);
    if (st != NFS4_OK)
        return st;
    st = regular(sb, other);
    if (st != NFS4_OK) {
        close(*fd);
        *fd = -1;
    }
    return st;
}

/* ---- OPEN ---- */

/* The createattrs of an OPEN as the file-system layer takes them: mode and size (the
 * bits of those in *set, for attrset); another attribute NFS4ERR_ATTRNOTSUPP, values
 * that do not decode NFS4ERR_BADXDR. */
static nfsstat4 create_attrs(const fattr4 *f, struct uiw__vfs_sattr *sa, uint32_t set[2])
{
    memset(sa, 0, sizeof(*sa));
    set[0] = set[1] = 0;
    const uint32_t *w = f->attrmask.bitmap4_val;
    u_int n = f->attrmask.bitmap4_len;
    uint32_t w0 = n > 0 ? w[0] : 0, w1 = n > 1 ? w[1] : 0;
    for (u_int i = 2; i < n; i++)
        if (w[i])
            return NFS4ERR_ATTRNOTSUPP;
    if ((w0 & ~(1u << FATTR4_SIZE)) || (w1 & ~(1u << (FATTR4_MODE - 32))))
        return NFS4ERR_ATTRNOTSUPP;
    XDR x;
    xdrmem_create(&x, f->attr_vals.attrlist4_val, f->attr_vals.attrlist4_len, XDR_DECODE);
    nfsstat4 st = NFS4_OK;
    if (w0 & (1u << FATTR4_SIZE)) {
        uint64_t size = 0;
        if (!xdr_uint64_t(&x, &size))
            st = NFS4ERR_BADXDR;
        sa->set |= UIW__VFS_SIZE;
        sa->size = size;
        set[0] |= 1u << FATTR4_SIZE;
    }
    if (st == NFS4_OK && (w1 & (1u << (FATTR4_MODE - 32)))) {
        uint32_t mode = 0;
        if (!xdr_uint32_t(&x, &mode))
            st = NFS4ERR_BADXDR;
        else if (mode & ~07777u)
            st = NFS4ERR_INVAL;
        sa->set |= UIW__VFS_MODE;
        sa->mode = (mode_t)mode;
        set[1] |= 1u << (FATTR4_MODE - 32);
    }
    if (st == NFS4_OK && xdr_getpos(&x) != f->attr_vals.attrlist4_len)
        st = NFS4ERR_BADXDR; /* values past the attributes named */
    xdr_destroy(&x);
    return st;
}

static changeid4 change_of(const struct stat *sb)
{
    return (uint64_t)sb->st_ctim.tv_sec * 1000000000u + (uint64_t)sb->st_ctim.tv_nsec;
}

/* `name` in dfd made or found as a's openhow says, as the caller: *fd its O_PATH
 * descriptor, *made whether this OPEN made it, *set the attributes it set. */
static nfsstat4 open_name(struct uiw__nfs4_c *c, struct uiw__vfs *v, const OPEN4args *a, int dfd,
                          const char *name, int *fd, int *made, uint32_t set[2],
                          struct uiw__vfs_sattr *size)
{
    nfsstat4 st = NFS4_OK;
    *made = 0;
    memset(size, 0, sizeof(*size));
    if (a->openhow.opentype == OPEN4_CREATE) {
        const createhow4 *h = &a->openhow.openflag4_u.how;
        struct uiw__vfs_sattr sa = {0}, after = {0};
        uint32_t aset[2] = {0, 0};
        const char *verf = NULL;
        int how;
        switch (h->mode) {
        case UNCHECKED4:
        case GUARDED4:
            how = h->mode == UNCHECKED4 ? UIW__VFS_UNCHECKED : UIW__VFS_GUARDED;
            st = create_attrs(&h->createhow4_u.createattrs, &sa, set);
            /* the size of a file that is there is set once its open is granted (a
             * share reservation may refuse it); a file made now is empty */
            size->set = sa.set & UIW__VFS_SIZE;
            size->size = sa.size;
            sa.set &= ~(unsigned)UIW__VFS_SIZE;
            break;
        case EXCLUSIVE4:
            how = UIW__VFS_EXCLUSIVE;
            verf = h->createhow4_u.createverf;
            break;
        case EXCLUSIVE4_1:
            how = UIW__VFS_EXCLUSIVE;
            verf = h->createhow4_u.ch_createboth.cva_verf;
            st = create_attrs(&h->createhow4_u.ch_createboth.cva_attrs, &after, aset);
            break;
        default:
            return NFS4ERR_INVAL;
        }
        if (st != NFS4_OK)
            return st;
        if (uiw__vfs_enter(v) != 0)
            return NFS4ERR_PERM;
        st = (nfsstat4)uiw__vfs_create(v, dfd, name, how, &sa, verf, made);
        if (st == NFS4_OK && *made && after.set) {
            int nfd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
            st = nfd < 0 ? (nfsstat4)uiw__nfsd_errno(errno)
                         : (nfsstat4)uiw__vfs_setattr(v, nfd, &after);
            if (nfd >= 0)
                close(nfd);
            if (st != NFS4_OK)
                unlinkat(dfd, name, 0); /* made but not as asked: undone */
            set[0] = aset[0];
            set[1] = aset[1];
        }
        if (!*made)
            set[0] = set[1] = 0;
    } else if (uiw__vfs_enter(v) != 0) {
        return NFS4ERR_PERM;
    }
    if (st == NFS4_OK) {
        *fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (*fd < 0)
            st = (nfsstat4)uiw__nfsd_errno(errno);
    }
    uiw__vfs_leave(v);
    return st;
}

/* The delegation answer: none (section 18.16.3; RFC 8881 section 10.4.1 lets a server
 * grant none), with why when the client said what it wants. */
static void no_delegation(uint32_t want, open_delegation4 *d)
{
    memset(d, 0, sizeof(*d));
    want &= OPEN4_SHARE_ACCESS_WANT_DELEG_MASK;
    if (want == OPEN4_SHARE_ACCESS_WANT_NO_PREFERENCE) {
        d->delegation_type = OPEN_DELEGATE_NONE;
        return;
    }
    d->delegation_type = OPEN_DELEGATE_NONE_EXT;
    open_none_delegation4 *w = &d->open_delegation4_u.od_whynone;
    if (want == OPEN4_SHARE_ACCESS_WANT_NO_DELEG)
        w->ond_why = WND4_NOT_WANTED;
    else if (want == OPEN4_SHARE_ACCESS_WANT_CANCEL)
        w->ond_why = WND4_CANCELLED;
    else {
        w->ond_why = WND4_CONTENTION;
        w->open_none_delegation4_u.ond_server_will_push_deleg = FALSE;
    }
}

nfsstat4 uiw__nfs4_open(struct uiw__nfs4_c *c, struct uiw__vfs *v, const OPEN4args *a,
                        OPEN4resok *r)
{
    uint32_t access = a->share_access & OPEN4_SHARE_ACCESS_BOTH;
    uint32_t want = a->share_access & ~(uint32_t)OPEN4_SHARE_ACCESS_BOTH;
    uint32_t wants = OPEN4_SHARE_ACCESS_WANT_DELEG_MASK |
                     OPEN4_SHARE_ACCESS_WANT_SIGNAL_DELEG_WHEN_RESRC_AVAIL |
                     OPEN4_SHARE_ACCESS_WANT_PUSH_DELEG_WHEN_UNCONTENDED;
    if (!c->cur.len)
        return NFS4ERR_NOFILEHANDLE;
    if (!access || (want & ~wants) || (a->share_deny & ~(uint32_t)OPEN4_SHARE_DENY_BOTH) ||
        (want & OPEN4_SHARE_ACCESS_WANT_DELEG_MASK) > OPEN4_SHARE_ACCESS_WANT_CANCEL)
        return NFS4ERR_INVAL;
    int create = a->openhow.opentype == OPEN4_CREATE;
    char name[NAME_MAX + 1];
    nfsstat4 st = NFS4_OK;
    switch (a->claim.claim) {
    case CLAIM_NULL:
        st = uiw__nfs4_name(&a->claim.open_claim4_u.file, name);
        if (st == NFS4_OK)
            st = uiw__nfs4_grace_check(c->s->nfs4, &c->ref, 0);
        break;
    case CLAIM_FH:
    case CLAIM_PREVIOUS:
        /* the current file (nothing to make); CLAIM_PREVIOUS the reclaim of an open of
         * the last instance, in its grace period (not of its delegation: none outlives
         * the server, so the reclaim gets none) */
        st = create ? NFS4ERR_INVAL
                    : uiw__nfs4_grace_check(c->s->nfs4, &c->ref, a->claim.claim == CLAIM_PREVIOUS);
        break;
    case CLAIM_DELEGATE_PREV:
    case CLAIM_DELEG_PREV_FH:
        return NFS4ERR_NOTSUPP;
    case CLAIM_DELEGATE_CUR:
        st = uiw__nfs4_name(&a->claim.open_claim4_u.delegate_cur_info.file, name);
        break;
    case CLAIM_DELEG_CUR_FH:
        st = create ? NFS4ERR_INVAL : NFS4_OK;
        break;
    default:
        return NFS4ERR_INVAL;
    }
    if (st != NFS4_OK)
        return st;
    /* creating or writing: refused on an export the caller may only read (NFS4ERR_ROFS) */
    v->write = create || (access & OPEN4_SHARE_ACCESS_WRITE);
    int dfd = -1, fd = -1, made = 0;
    struct uiw__nfs_export *ex;
    uint32_t set[2] = {0, 0};
    struct uiw__vfs_sattr size = {0};
    struct uiw__vfs_change ch = {0};
    struct stat sb, dsb;
    memset(&r->cinfo, 0, sizeof(r->cinfo));
    int byname = a->claim.claim == CLAIM_NULL || a->claim.claim == CLAIM_DELEGATE_CUR;
    if (byname) {
        st = uiw__nfs4_resolve(c, v, 1, &dfd, &ex, &dsb);
        if (st != NFS4_OK)
            return st;
        uiw__vfs_begin_known(v, &ch, dfd, &dsb);
        st = open_name(c, v, a, dfd, name, &fd, &made, set, &size);
        if (made)
            uiw__vfs_durable(v, dfd);
        r->cinfo.atomic = ch.have_pre[0];
        if (ch.have_pre[0])
            r->cinfo.before = change_of(&ch.pre[0]);
        if (fstat(dfd, &dsb) == 0)
            r->cinfo.after = change_of(&dsb);
        else
            r->cinfo.atomic = FALSE;
        uiw__vfs_end(&ch);
    } else {
        st = uiw__nfs4_resolve(c, v, 0, &fd, &ex, &sb); /* by the current handle */
    }
    if (st != NFS4_OK)
        goto out;
    if (byname && fstat(fd, &sb) != 0) /* the file open_name opened (by handle: sb is in) */
        st = (nfsstat4)uiw__nfsd_errno(errno);
    else if (S_ISDIR(sb.st_mode))
        st = NFS4ERR_ISDIR;
    else if (S_ISLNK(sb.st_mode))
        st = NFS4ERR_SYMLINK;
    else if (!S_ISREG(sb.st_mode))
        st = NFS4ERR_WRONG_TYPE;
    if (st != NFS4_OK)
        goto out;
    if (!made) {
        /* the caller's permission for the access asked (its own new file needs none) */
        uint32_t need = (access & OPEN4_SHARE_ACCESS_READ ? ACCESS4_READ : 0) |
                        (access & OPEN4_SHARE_ACCESS_WRITE ? ACCESS4_MODIFY : 0);
        uint32_t got;
        if (uiw__vfs_access_known(v, fd, &sb, need, &got) != 0)
            st = NFS4ERR_PERM;
        else if ((got & need) != need)
            st = NFS4ERR_ACCESS;
        if (st != NFS4_OK)
            goto out;
    }
    if (a->claim.claim == CLAIM_DELEGATE_CUR || a->claim.claim == CLAIM_DELEG_CUR_FH) {
        const stateid4 *d = a->claim.claim == CLAIM_DELEGATE_CUR
                                ? &a->claim.open_claim4_u.delegate_cur_info.delegate_stateid
                                : &a->claim.open_claim4_u.oc_delegate_stateid;
        st = uiw__nfs4_stid_deleg_check(stids(c), client(c), sb.st_dev, sb.st_ino, d, 0);
    } else if (((access & OPEN4_SHARE_ACCESS_WRITE) || (a->share_deny & OPEN4_SHARE_DENY_READ)) &&
               uiw__nfs4_deleg_conflict(c, &sb)) {
        st = NFS4ERR_DELAY;
    }
    if (st != NFS4_OK)
        goto out;
    st = uiw__nfs4_stid_open(stids(c), client(c), &a->owner, sb.st_dev, sb.st_ino, access,
                             a->share_deny, &r->stateid);
    if (st == NFS4_OK && size.set && !made) {
        /* UNCHECKED4 or GUARDED4's size for the file that was there (truncation) */
        if (uiw__vfs_enter(v) != 0)
            st = NFS4ERR_PERM;
        else
            st = (nfsstat4)uiw__vfs_setattr(v, fd, &size);
        uiw__vfs_leave(v);
        if (st != NFS4_OK && r->stateid.seqid == 1) /* a new open: undone */
            uiw__nfs4_stid_close(stids(c), client(c), sb.st_dev, sb.st_ino, &r->stateid);
        if (st == NFS4_OK)
            set[0] |= 1u << FATTR4_SIZE;
    }
    if (st != NFS4_OK)
        goto out;
    if (byname) {
        st = uiw__nfs4_issue(c, v, ex, dfd, name, fd); /* the current handle: the file */
        if (st != NFS4_OK) {
            uiw__nfs4_stid_close(stids(c), client(c), sb.st_dev, sb.st_ino, &r->stateid);
            goto out;
        }
    }
    uint32_t *bits = uiw__nfs4_alloc(c, 2 * sizeof(uint32_t));
    if (!bits) {
        uiw__nfs4_stid_close(stids(c), client(c), sb.st_dev, sb.st_ino, &r->stateid);
        st = NFS4ERR_SERVERFAULT;
        goto out;
    }
    bits[0] = set[0];
    bits[1] = set[1];
    r->attrset.bitmap4_len = set[1] ? 2 : set[0] ? 1 : 0;
    r->attrset.bitmap4_val = bits;
    r->rflags = OPEN4_RESULT_LOCKTYPE_POSIX; /* no OPEN_CONFIRM in 4.1 */
    if (!uiw__nfs4_deleg_open(c, a, &sb, &r->delegation))
        no_delegation(want, &r->delegation);
    set_sid(c, &r->stateid);
    if (a->claim.claim == CLAIM_PREVIOUS)
        uiw__nfs4_reclaimed(c->s->nfs4, 0);
out:
    if (fd >= 0)
        close(fd);
    if (dfd >= 0)
        close(dfd);
    return st;
}

/* ---- OPEN_DOWNGRADE, CLOSE ---- */

/* The current file's identity and the stateid `in` names, for an operation on its open. */
static nfsstat4 cur_open(struct uiw__nfs4_c *c, struct uiw__vfs *v, const stateid4 *in,
                         struct stat *sb, stateid4 *sid)
{
    struct uiw__nfs_export *ex;
    nfsstat4 st = cur_stat(c, v, NFS4ERR_BAD_STATEID, &ex, sb);
    return st == NFS4_OK ? sid_in(c, in, sid) : st;
}

nfsstat4 uiw__nfs4_open_downgrade(struct uiw__nfs4_c *c, struct uiw__vfs *v,
                                  const OPEN_DOWNGRADE4args *a, OPEN_DOWNGRADE4resok *r)
{
    uint32_t access = a->share_access & ~(uint32_t)OPEN4_SHARE_ACCESS_WANT_DELEG_MASK;
    if (!access || (access & ~(uint32_t)OPEN4_SHARE_ACCESS_BOTH) ||
        (a->share_deny & ~(uint32_t)OPEN4_SHARE_DENY_BOTH))
        return NFS4ERR_INVAL;
    struct stat sb;
    stateid4 sid;
    nfsstat4 st = cur_open(c, v, &a->open_stateid, &sb, &sid);
    if (st == NFS4_OK)
        st = uiw__nfs4_stid_downgrade(stids(c), client(c), sb.st_dev, sb.st_ino, &sid, access,
                                      a->share_deny, &r->open_stateid);
    if (st == NFS4_OK)
        set_sid(c, &r->open_stateid);
    return st;
}

nfsstat4 uiw__nfs4_close(struct uiw__nfs4_c *c, struct uiw__vfs *v, const CLOSE4args *a,
                         stateid4 *r)
{
    struct stat sb;
    stateid4 sid;
    nfsstat4 st = cur_open(c, v, &a->open_stateid, &sb, &sid);
    if (st == NFS4_OK)
        st = uiw__nfs4_stid_close(stids(c), client(c), sb.st_dev, sb.st_ino, &sid);
    if (st == NFS4_OK) {
        /* section 18.2.4: the invalid special stateid (other all zeros, seqid all ones) */
        memset(r, 0, sizeof(*r));
        r->seqid = UINT32_MAX;
        set_sid(c, r);
    }
    return st;
}

/* ---- READ, WRITE, COMMIT ---- */

/* The file's attributes are taken from its handle and its data descriptor from the
 * open-file cache when it holds one, as NFSv3's READ and WRITE take them: no descriptor
 * of the call's own is opened and closed around every READ and WRITE. */
nfsstat4 uiw__nfs4_io_data(struct uiw__nfs4_c *c, struct uiw__vfs *v, const stateid4 *in, int write,
                           int *dfd, struct uiw__vfs_file **of, struct uiw__nfs_export **ex,
                           struct stat *sb)
{
    stateid4 sid;
    *dfd = -1;
    *of = NULL;
    v->write = write;
    nfsstat4 st = cur_stat(c, v, NFS4ERR_INVAL, ex, sb);
    if (st == NFS4_OK)
        st = sid_in(c, in, &sid);
    if (st == NFS4_OK)
        st = uiw__nfs4_stid_io(stids(c), client(c), sb->st_dev, sb->st_ino, &sid, write);
    if (st == NFS4_OK && write && uiw__nfs4_deleg_conflict(c, sb))
        st = NFS4ERR_DELAY; /* another client's delegation, recalled */
    if (st != NFS4_OK)
        return st;
    int flags = write ? O_WRONLY : O_RDONLY;
    nfsstat3 s3 = NFS3_OK;
    *dfd = uiw__vfs_get_cached(v, sb, flags, &s3, of);
    if (*dfd < 0 && s3 == NFS3_OK) {
        /* not in the cache: the file opened through its handle (and cached) */
        int fd;
        struct stat fsb;
        st = uiw__nfs4_resolve(c, v, 0, &fd, ex, &fsb);
        if (st != NFS4_OK)
            return st;
        *dfd = uiw__vfs_get_known(v, fd, &fsb, flags, &s3, of);
        close(fd);
    }
    return *dfd < 0 ? uiw__nfs4_st4(s3, *ex, c->rq) : NFS4_OK;
}

nfsstat4 uiw__nfs4_setattr_stateid_ok(struct uiw__nfs4_c *c, const stateid4 *in,
                                      const struct stat *sb)
{
    stateid4 sid;
    nfsstat4 st = sid_in(c, in, &sid);
    if (st == NFS4_OK)
        st = uiw__nfs4_stid_io(stids(c), client(c), sb->st_dev, sb->st_ino, &sid, 1);
    if (st == NFS4_OK && uiw__nfs4_deleg_conflict(c, sb))
        st = NFS4ERR_DELAY;
    return st;
}

nfsstat4 uiw__nfs4_read(struct uiw__nfs4_c *c, struct uiw__vfs *v, const READ4args *a,
                        READ4resok *r)
{
    int dfd;
    struct uiw__nfs_export *ex;
    struct uiw__vfs_file *of;
    struct stat sb;
    nfsstat4 st = uiw__nfs4_io_data(c, v, &a->stateid, 0, &dfd, &of, &ex, &sb);
    if (st != NFS4_OK)
        return st;
    uint32_t count = a->count;
    if (count > uiw__nfsd_max_io(c->s))
        count = uiw__nfsd_max_io(c->s);
    /* at or past the largest offset a file may have: nothing there, the end */
    if (a->offset >= (uint64_t)INT64_MAX)
        count = 0;
    else if (count > (uint64_t)INT64_MAX - a->offset)
        count = (uint32_t)((uint64_t)INT64_MAX - a->offset);
    /* the first READ's data where the reply goes out from without a copy (as NFSv3's
     * READ: registered memory RDMA Writes from, or the TCP reply's pooled buffer); the
     * others' in the COMPOUND's memory */
    char *buf = NULL;
    if (!c->read_lent && (buf = uiw__nfs_xprt_getbuf(c->rq->rq_xprt, count ? count : 1)))
        c->read_lent = 1;
    else
        buf = uiw__nfs4_alloc(c, count ? count : 1);
    if (!buf)
        st = NFS4ERR_SERVERFAULT;
    size_t n = 0;
    while (st == NFS4_OK && n < count) {
        ssize_t k = pread(dfd, buf + n, count - n, (off_t)(a->offset + n));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            st = (nfsstat4)uiw__nfsd_errno(errno);
        if (k <= 0)
            break;
        n += (size_t)k;
    }
    if (st == NFS4_OK) {
        /* the end: a short read, or the size now */
        struct stat now;
        r->eof = n < count || a->offset >= (uint64_t)INT64_MAX ||
                 (fstat(dfd, &now) == 0 && a->offset + n >= (uint64_t)now.st_size);
        r->data.data_len = (u_int)n;
        r->data.data_val = buf;
        c->read_bytes += n;
    }
    uiw__vfs_put(v, of, dfd);
    return st;
}

nfsstat4 uiw__nfs4_write(struct uiw__nfs4_c *c, struct uiw__vfs *v, const WRITE4args *a,
                         WRITE4resok *r)
{
    if (a->stable > FILE_SYNC4)
        return NFS4ERR_INVAL;
    int dfd;
    struct uiw__nfs_export *ex;
    struct uiw__vfs_file *of;
    struct stat sb;
    nfsstat4 st = uiw__nfs4_io_data(c, v, &a->stateid, 1, &dfd, &of, &ex, &sb);
    if (st != NFS4_OK)
        return st;
    if (a->data.data_len > uiw__nfsd_max_io(c->s))
        st = NFS4ERR_INVAL; /* past the maxwrite attribute */
    else if (a->offset > (uint64_t)INT64_MAX - a->data.data_len)
        st = NFS4ERR_FBIG; /* past what any file may hold */
    if (st != NFS4_OK) {
        uiw__vfs_put(v, of, dfd);
        return st;
    }
    struct uiw__vfs_change ch;
    uiw__vfs_begin_known(v, &ch, dfd, &sb);
    nfsstat3 s3 = uiw__vfs_write(v, dfd, ch.have_pre[0] ? &ch.pre[0] : &sb, a->offset,
                                 a->data.data_val, a->data.data_len, (int)a->stable);
    uiw__vfs_end(&ch);
    if (s3 == NFS3_OK)
        s3 = uiw__vfs_sync(v, dfd, (int)a->stable);
    st = uiw__nfs4_st4(s3, ex, c->rq);
    /* the level it is stable at: the one asked (UNSTABLE4: COMMIT makes it stable) */
    r->count = a->data.data_len;
    r->committed = a->stable;
    uiw__vfs_verf(c->s, r->writeverf);
    uiw__vfs_put(v, of, dfd);
    return st;
}

nfsstat4 uiw__nfs4_commit(struct uiw__nfs4_c *c, struct uiw__vfs *v, const COMMIT4args *a,
                          COMMIT4resok *r)
{
    if (a->count && a->offset > UINT64_MAX - a->count)
        return NFS4ERR_INVAL; /* section 18.3.3: offset + count past 2^64 */
    int fd;
    struct uiw__nfs_export *ex;
    struct stat sb;
    v->write = 1;
    nfsstat4 st = cur_file(c, v, NFS4ERR_INVAL, &fd, &ex, &sb);
    if (st != NFS4_OK)
        return st;
    st = uiw__nfs4_st4(uiw__vfs_commit(v, fd, &sb), ex, c->rq);
    uiw__vfs_verf(c->s, r->writeverf);
    close(fd);
    return st;
}

/* ---- TEST_STATEID, FREE_STATEID ---- */

nfsstat4 uiw__nfs4_test_stateid(struct uiw__nfs4_c *c, const TEST_STATEID4args *a,
                                TEST_STATEID4resok *r)
{
    u_int n = a->ts_stateids.ts_stateids_len;
    nfsstat4 *v = uiw__nfs4_alloc(c, (n ? n : 1) * sizeof(*v));
    if (!v)
        return NFS4ERR_SERVERFAULT;
    clientid4 cid = client(c);
    /* section 18.48.3: each stateid's own status; a special one is none to test */
    for (u_int i = 0; i < n; i++)
        v[i] = uiw__nfs4_stid_test(stids(c), cid, &a->ts_stateids.ts_stateids_val[i]);
    r->tsr_status_codes.tsr_status_codes_len = n;
    r->tsr_status_codes.tsr_status_codes_val = v;
    return NFS4_OK;
}

nfsstat4 uiw__nfs4_free_stateid(struct uiw__nfs4_c *c, const FREE_STATEID4args *a)
{
    stateid4 sid;
    nfsstat4 st = sid_in(c, &a->fsa_stateid, &sid);
    return st != NFS4_OK ? st : uiw__nfs4_stid_free(stids(c), client(c), &sid);
}

nfsstat4 uiw__nfs4_sid_in(struct uiw__nfs4_c *c, const stateid4 *in, stateid4 *out)
{
    return sid_in(c, in, out);
}

void uiw__nfs4_sid_set(struct uiw__nfs4_c *c, const stateid4 *s)
{
    set_sid(c, s);
}

nfsstat4 uiw__nfs4_reg_file(struct uiw__nfs4_c *c, struct uiw__vfs *v, nfsstat4 other, int *fd,
                            struct uiw__nfs_export **ex, struct stat *sb)
{
    return cur_file(c, v, other, fd, ex, sb);
}
