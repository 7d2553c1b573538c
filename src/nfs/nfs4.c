/*
 * NFS version 4, minor versions 1 and 2 (RFC 8881, RFC 7862): NULL and COMPOUND, served
 * when uiw__nfsd_opts.nfs4 is set (uiw-nfsd's default; --no-nfs4 clears it). Here:
 *   - COMPOUND decoded one operation at a time (its number, then that operation's
 *     arguments with rpcgen's routines) and run as it is decoded: an operation number
 *     that is none gets NFS4ERR_OP_ILLEGAL (the OP_ILLEGAL result, section 15.2), an
 *     operation whose arguments do not decode NFS4ERR_BADXDR, a minor version other than
 *     1 and 2 NFS4ERR_MINOR_VERS_MISMATCH and no results; the tag is echoed, and the
 *     first operation that fails ends it (section 16.2.3).
 *   - sessions (nfs4state.c): EXCHANGE_ID, CREATE_SESSION, SEQUENCE (with its slot's reply
 *     cache: a retry gets the bytes of the first reply), DESTROY_SESSION,
 *     DESTROY_CLIENTID, RECLAIM_COMPLETE (ending the client's part of the grace period:
 *     nfs4grace.c); the back channel (nfs4cb.c): CREATE_SESSION's CONN_BACK_CHAN,
 *     BIND_CONN_TO_SESSION, BACKCHANNEL_CTL, and SEQUENCE's CB_PATH_DOWN flags; an operation
 *     other than those that may come alone without SEQUENCE first gets
 *     NFS4ERR_OP_NOT_IN_SESSION, SEQUENCE elsewhere than first NFS4ERR_SEQUENCE_POS, more
 *     operations than the session allows NFS4ERR_TOO_MANY_OPS.
 *   - file handles (NFSv3's, fh.c) and attributes: PUTROOTFH (the pseudo file system's
 *     root, or that of an export at "/" or fsid=root: nfs4pseudo.c), PUTFH, GETFH,
 *     SAVEFH, RESTOREFH, LOOKUP, LOOKUPP, GETATTR (nfs4attr.c), ACCESS, SECINFO_NO_NAME;
 *     each through the export's access control as NFSv3 (access.c): NFS4ERR_WRONGSEC for
 *     a flavor the export's sec= leaves out (but not on PUTROOTFH or PUTFH followed by
 *     SECINFO_NO_NAME or SECINFO, which name the flavors it takes), NFS4ERR_ACCESS for a caller
 *     it does not admit; PUTPUBFH is PUTROOTFH.
 *   - the namespace (nfs4ns.c): CREATE, REMOVE, RENAME, LINK, READLINK, SETATTR, READDIR,
 *     SECINFO; VERIFY and NVERIFY (nfs4attr.c compares the encoded attributes).
 *   - opens and I/O (nfs4open.c, their state nfs4stid.c): OPEN, OPEN_DOWNGRADE, CLOSE,
 *     READ, WRITE, COMMIT, TEST_STATEID, FREE_STATEID; SAVEFH and RESTOREFH carry the
 *     current stateid with the current handle. A reply holds its READs' data.
 *   - byte-range locks (nfs4lock.c, their stateids nfs4stid.c): LOCK, LOCKT, LOCKU.
 *   - delegations (nfs4deleg.c): read delegations granted by OPEN, DELEGRETURN.
 *   - minor version 2 (nfs4v42.c): SEEK, ALLOCATE, DEALLOCATE, COPY (within the server,
 *     synchronous), CLONE.
 * Every other operation gets NFS4ERR_NOTSUPP.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nfs/nfs4cb.h"
#include "common/byteorder.h"
#include "nfs/nfs4int.h"
#include "nfs/xdr_data.h"

/* The reply's room past the data of its READs (c->read_bytes). */
#define REPLY_MAX 65536u
/* A COMPOUND of more operations is refused before any runs. */
#define OPS_MAX NFS4_OPS_DECODE

struct uiw__nfs4_mem {
    struct uiw__nfs4_mem *next;
    max_align_t data[];
};

/* Operations whose arguments and results the pool holds: uiw__nfs4_limits' max_ops (a
 * COMPOUND of more, which SEQUENCE refuses, takes memory of its own). */
#define POOL_OPS 16
/* A reply's tag of at most this many bytes is written in place. */
#define TAG_INLINE 64
/* uiw__nfs4_alloc's memory in the pool: a GETATTR's encoded values and more. */
#define POOL_ARENA 16384

/* A worker thread's memory for its COMPOUNDs, kept from one call to the next (nothing is
 * allocated per call on the GETATTR path): the context, the operations' arguments and
 * results, and an arena for uiw__nfs4_alloc; freed when the thread ends. */
struct uiw__nfs4_pool {
    int busy; /* a COMPOUND of this thread has it (another one takes memory of its own) */
    struct uiw__nfs4_c c;
    nfs_argop4 args[POOL_OPS];
    nfs_resop4 res[POOL_OPS];
    size_t used; /* of the arena */
    max_align_t arena[POOL_ARENA / sizeof(max_align_t)];
};

static pthread_key_t pool_key;
static int pool_keyed;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static void pool_key_make(void)
{
    pool_keyed = pthread_key_create(&pool_key, free) == 0;
}

/* This thread's pool, taken (NULL: none, or taken already). */
static struct uiw__nfs4_pool *pool_take(void)
{
    pthread_once(&pool_once, pool_key_make);
    if (!pool_keyed)
        return NULL;
    struct uiw__nfs4_pool *p = pthread_getspecific(pool_key);
    if (!p) {
        p = malloc(sizeof(*p));
        if (!p)
            return NULL;
        if (pthread_setspecific(pool_key, p) != 0) {
            free(p);
            return NULL;
        }
        p->busy = 0;
    }
    if (p->busy)
        return NULL;
    p->busy = 1;
    p->used = 0;
    return p;
}

void *uiw__nfs4_alloc(struct uiw__nfs4_c *c, size_t n)
{
    struct uiw__nfs4_pool *p = c->pool;
    size_t a = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t);
    if (p && a <= POOL_ARENA / sizeof(max_align_t) - p->used) {
        void *r = &p->arena[p->used];
        p->used += a;
        return r;
    }
    struct uiw__nfs4_mem *m = malloc(sizeof(*m) + n);
    if (!m)
        return NULL;
    m->next = c->mem;
    c->mem = m;
    return m->data;
}

/* Every result starts with its status (RFC 8881 section 16.2.3). */
static void set_status(nfs_resop4 *r, nfsstat4 st)
{
    memcpy(&r->nfs_resop4_u, &st, sizeof(st));
}

/* A caller its export refuses for its flavor (the export's sec=) rather than for who it
 * is: NFS4ERR_WRONGSEC tells the client to try another (SECINFO_NO_NAME lists them). */
static int wrong_flavor(const struct uiw__nfs_export *ex, const struct svc_req *rq)
{
    if (!ex->access || ex->removed)
        return 0;
    const struct netbuf *nb = svc_getrpccaller(rq->rq_xprt);
    if (!nb || !nb->buf || nb->len < sizeof(sa_family_t))
        return 0;
    const struct uiw__nfs_xopts *o = uiw__nfs_xentry_match(ex->access, nb->buf);
    if (!o)
        return 0;
    if (rq->rq_cred.oa_flavor == AUTH_SYS)
        return !(o->flags & UIW__X_SEC_SYS);
    return rq->rq_cred.oa_flavor == AUTH_NONE && !(o->flags & UIW__X_SEC_NONE);
}

nfsstat4 uiw__nfs4_st4(nfsstat3 st, const struct uiw__nfs_export *ex, const struct svc_req *rq)
{
    if (st == NFS3ERR_ACCES && ex && wrong_flavor(ex, rq))
        return NFS4ERR_WRONGSEC;
    return (nfsstat4)st;
}

nfsstat4 uiw__nfs4_check(struct uiw__nfs4_c *c, struct uiw__vfs *v, struct uiw__nfs4_fh *f,
                         struct uiw__nfs_export **ex)
{
    if (!f->len)
        return NFS4ERR_NOFILEHANDLE;
    *ex = NULL;
    if (uiw__nfs4_is_pseudo(f, NULL))
        return v->write ? NFS4ERR_ROFS : NFS4ERR_ISDIR; /* read-only, and no file */
    nfs_fh3 h = uiw__nfs4_fh3(f);
    nfsstat3 st = uiw__nfs_fh_export(c->s, &h, ex);
    if (st == NFS3_OK)
        st = uiw__nfsd_access(c->s, *ex, c->rq, 0, &v->cred, &v->xo);
    return uiw__nfs4_st4(st, *ex, c->rq);
}

nfsstat4 uiw__nfs4_resolve(struct uiw__nfs4_c *c, struct uiw__vfs *v, int dir, int *fd,
                           struct uiw__nfs_export **ex, struct stat *sb)
{
    *fd = -1;
    nfsstat4 st = uiw__nfs4_check(c, v, &c->cur, ex);
    if (st != NFS4_OK)
        return st;
    nfs_fh3 h = uiw__nfs4_fh3(&c->cur);
    nfsstat3 s3 = uiw__vfs_resolve(v, &h, dir, fd, ex, sb);
    return uiw__nfs4_st4(s3, *ex, c->rq);
}

nfsstat4 uiw__nfs4_stat(struct uiw__nfs4_c *c, struct uiw__vfs *v, struct stat *sb,
                        struct uiw__nfs_export **ex)
{
    if (!c->cur.len)
        return NFS4ERR_NOFILEHANDLE;
    *ex = NULL;
    if (uiw__nfs4_is_pseudo(&c->cur, NULL))
        return v->write ? NFS4ERR_ROFS : NFS4ERR_ISDIR;
    /* the handle's export and the caller's access to it are uiw__vfs_stat's first steps
     * (what uiw__nfs4_check does): checked once */
    nfs_fh3 h = uiw__nfs4_fh3(&c->cur);
    return uiw__nfs4_st4(uiw__vfs_stat(v, &h, sb, ex), *ex, c->rq);
}

nfsstat4 uiw__nfs4_issue(struct uiw__nfs4_c *c, struct uiw__vfs *v, struct uiw__nfs_export *ex,
                         int dfd, const char *name, int fd)
{
    char buf[UIW__NFS_FH_MAX];
    nfs_fh3 h;
    int rc = uiw__nfs_fh_issue(c->s, ex, dfd, name, fd, 0, &h, buf);
    if (rc == -EXDEV && uiw__nfsd_crosses(c->s, c->rq, v->xo, fd))
        rc = uiw__nfs_fh_issue(c->s, ex, dfd, name, fd, 1, &h, buf);
    if (rc == -EXDEV)
        return NFS4ERR_ACCESS;
    if (rc != 0)
        return (nfsstat4)uiw__nfsd_errno(-rc);
    uiw__nfs4_set_fh(&c->cur, &h);
    return NFS4_OK;
}

nfsstat4 uiw__nfs4_issue_root(struct uiw__nfs4_c *c, struct uiw__vfs *v, struct uiw__nfs_export *ex)
{
    int fd = fcntl(ex->rootfd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        return NFS4ERR_SERVERFAULT;
    nfsstat4 st = uiw__nfs4_issue(c, v, ex, -1, NULL, fd);
    close(fd);
    return st;
}

/* ---- file handles ---- */

/* A put-filehandle operation's check of the caller's access to the export (RFC 8881
 * section 2.6.3.1.1): a flavor the export refuses gets NFS4ERR_WRONGSEC, unless
 * SECINFO_NO_NAME or SECINFO comes next to tell the client which flavors it takes. */
static nfsstat4 put_access(struct uiw__nfs4_c *c, struct uiw__vfs *v, struct uiw__nfs_export *ex)
{
    nfsstat4 st = uiw__nfs4_st4(uiw__nfsd_access(c->s, ex, c->rq, 0, &v->cred, &v->xo), ex, c->rq);
    return st == NFS4ERR_WRONGSEC && (c->next_op == OP_SECINFO_NO_NAME || c->next_op == OP_SECINFO)
               ? NFS4_OK
               : st;
}

/* PUTROOTFH's export without a pseudo file system: the first the caller may see that is
 * at "/" or fsid=root; when the caller may see none, the first export, whose access
 * control then answers (NULL: there is none). */
static struct uiw__nfs_export *root_export(struct uiw__nfs4_c *c, struct uiw__vfs *v)
{
    struct uiw__nfs_export *first = NULL;
    for (unsigned i = 0; i < c->s->nexports; i++) {
        struct uiw__nfs_export *e = &c->s->exports[i];
        if (e->removed)
            continue;
        if (!first)
            first = e;
        if (!uiw__nfs4_export_is_root(c, e))
            continue;
        nfsstat3 st = uiw__nfsd_access(c->s, e, c->rq, 0, &v->cred, &v->xo);
        if (uiw__nfs4_st4(st, e, c->rq) != NFS4ERR_ACCESS)
            return e;
    }
    return first;
}

static nfsstat4 op_putrootfh(struct uiw__nfs4_c *c, struct uiw__vfs *v)
{
    if (uiw__nfs4_pseudo_active(c, v))
        return uiw__nfs4_pseudo_root(c); /* the pseudo file system joins the exports */
    struct uiw__nfs_export *ex = root_export(c, v);
    if (!ex)
        return NFS4ERR_NOENT;
    nfsstat4 st = put_access(c, v, ex);
    return st != NFS4_OK ? st : uiw__nfs4_issue_root(c, v, ex);
}

static nfsstat4 op_putfh(struct uiw__nfs4_c *c, struct uiw__vfs *v, const PUTFH4args *a)
{
    if (a->object.nfs_fh4_len == 0 || a->object.nfs_fh4_len > UIW__NFS_FH_MAX)
        return NFS4ERR_BADHANDLE;
    nfs_fh3 h;
    h.data.data_len = a->object.nfs_fh4_len;
    h.data.data_val = a->object.nfs_fh4_val;
    if (uiw__nfs_fh_pseudo_node(&h, &(uint64_t){0}))
        return uiw__nfs4_pseudo_put(c, v, &h);
    struct uiw__nfs_export *ex;
    nfsstat3 s3 = uiw__nfs_fh_export(c->s, &h, &ex);
    if (s3 != NFS3_OK)
        return (nfsstat4)s3;
    nfsstat4 st = put_access(c, v, ex);
    if (st == NFS4_OK) {
        uiw__nfs4_set_fh(&c->cur, &h);
        c->cur.trusted = 0; /* resolved by the operations that use it */
    }
    return st;
}

static nfsstat4 op_getfh(struct uiw__nfs4_c *c, struct uiw__vfs *v, GETFH4resok *r)
{
    if (!c->cur.len)
        return NFS4ERR_NOFILEHANDLE;
    if (!c->cur.trusted) {
        /* a handle the client put is given back only if it names a file of its export
         * (knfsd's GETFH verifies it likewise): a forged one gets its error */
        int fd;
        struct uiw__nfs_export *ex;
        nfsstat4 st = uiw__nfs4_resolve(c, v, 0, &fd, &ex, NULL);
        if (st != NFS4_OK)
            return st;
        close(fd);
        c->cur.trusted = 1;
    }
    char *p = uiw__nfs4_alloc(c, c->cur.len);
    if (!p)
        return NFS4ERR_SERVERFAULT;
    memcpy(p, c->cur.data, c->cur.len);
    r->object.nfs_fh4_len = c->cur.len;
    r->object.nfs_fh4_val = p;
    return NFS4_OK;
}

nfsstat4 uiw__nfs4_name(const component4 *n, char out[NAME_MAX + 1])
{
    if (n->utf8string_len == 0)
        return NFS4ERR_INVAL;
    if (n->utf8string_len > NAME_MAX)
        return NFS4ERR_NAMETOOLONG;
    memcpy(out, n->utf8string_val, n->utf8string_len);
    out[n->utf8string_len] = 0;
    if (strlen(out) != n->utf8string_len || strchr(out, '/') || strcmp(out, ".") == 0 ||
        strcmp(out, "..") == 0)
        return NFS4ERR_BADNAME;
    return NFS4_OK;
}

static nfsstat4 lookup(struct uiw__nfs4_c *c, struct uiw__vfs *v, const char *name)
{
    if (uiw__nfs4_is_pseudo(&c->cur, NULL))
        return uiw__nfs4_pseudo_lookup(c, v, name);
    int dfd, fd = -1;
    struct uiw__nfs_export *ex;
    nfsstat4 st = uiw__nfs4_resolve(c, v, 1, &dfd, &ex, NULL);
    if (st != NFS4_OK)
        return st;
    if (!name) {
        struct stat sb;
        if (fstat(dfd, &sb) == 0 && sb.st_dev == ex->dev && sb.st_ino == ex->ino) {
            /* out of the export: into the one around it, or the pseudo file system */
            st = uiw__nfs4_pseudo_up(c, v, ex, dfd);
            close(dfd);
            return st;
        }
    }
    if (uiw__vfs_enter(v) != 0) {
        close(dfd);
        return NFS4ERR_PERM;
    }
    fd = openat(dfd, name ? name : "..", O_PATH | O_NOFOLLOW | O_CLOEXEC);
    int err = errno;
    uiw__vfs_leave(v);
    struct uiw__nfs_export *in = fd >= 0 && name ? uiw__nfs4_nested(c, ex, fd) : NULL;
    if (fd < 0)
        st = (nfsstat4)uiw__nfsd_errno(err);
    else if (in)
        st = uiw__nfs4_enter_export(c, v, in); /* the root of an export nested in this one */
    else
        st = uiw__nfs4_issue(c, v, ex, dfd, name, fd);
    if (fd >= 0)
        close(fd);
    close(dfd);
    return st;
}

static nfsstat4 op_lookup(struct uiw__nfs4_c *c, struct uiw__vfs *v, const LOOKUP4args *a)
{
    if (!c->cur.len)
        return NFS4ERR_NOFILEHANDLE;
    char name[NAME_MAX + 1];
    nfsstat4 st = uiw__nfs4_name(&a->objname, name);
    return st != NFS4_OK ? st : lookup(c, v, name);
}

static nfsstat4 op_access(struct uiw__nfs4_c *c, struct uiw__vfs *v, const ACCESS4args *a,
                          ACCESS4resok *r)
{
    if (uiw__nfs4_is_pseudo(&c->cur, NULL)) {
        /* a pseudo directory: read and search, never changed */
        r->supported = a->access & (ACCESS4_READ | ACCESS4_LOOKUP | ACCESS4_MODIFY |
                                    ACCESS4_EXTEND | ACCESS4_DELETE | ACCESS4_EXECUTE);
        r->access = r->supported & (ACCESS4_READ | ACCESS4_LOOKUP);
        return NFS4_OK;
    }
    int fd;
    struct uiw__nfs_export *ex;
    struct stat sb;
    nfsstat4 st = uiw__nfs4_resolve(c, v, 0, &fd, &ex, &sb);
    if (st != NFS4_OK)
        return st;
    uint32_t all = ACCESS4_READ | ACCESS4_LOOKUP | ACCESS4_MODIFY | ACCESS4_EXTEND |
                   ACCESS4_DELETE | ACCESS4_EXECUTE;
    uint32_t want = a->access & all, got;
    if (uiw__vfs_access_known(v, fd, &sb, want, &got) != 0) {
        close(fd);
        return NFS4ERR_PERM;
    }
    close(fd);
    r->supported = want;
    r->access = got;
    return NFS4_OK;
}

nfsstat4 uiw__nfs4_flavors(struct uiw__nfs4_c *c, const struct uiw__nfs_export *ex,
                           SECINFO4resok *r)
{
    /* the flavors the export takes from this client, whatever this call's flavor is */
    unsigned flags = UIW__X_SEC_SYS | UIW__X_SEC_NONE;
    if (ex && ex->access) {
        const struct netbuf *nb = svc_getrpccaller(c->rq->rq_xprt);
        const struct uiw__nfs_xopts *o = NULL;
        if (!ex->removed && nb && nb->buf && nb->len >= sizeof(sa_family_t))
            o = uiw__nfs_xentry_match(ex->access, nb->buf);
        if (!o)
            return NFS4ERR_ACCESS;
        flags = o->flags;
    }
    secinfo4 *v = uiw__nfs4_alloc(c, 2 * sizeof(*v));
    if (!v)
        return NFS4ERR_SERVERFAULT;
    memset(v, 0, 2 * sizeof(*v));
    u_int n = 0;
    if (flags & UIW__X_SEC_SYS)
        v[n++].flavor = AUTH_SYS;
    if (flags & UIW__X_SEC_NONE)
        v[n++].flavor = AUTH_NONE;
    r->SECINFO4resok_len = n;
    r->SECINFO4resok_val = v;
    return NFS4_OK;
}

static nfsstat4 op_secinfo_no_name(struct uiw__nfs4_c *c, const SECINFO_NO_NAME4args *a,
                                   SECINFO4resok *r)
{
    if (!c->cur.len)
        return NFS4ERR_NOFILEHANDLE;
    if (*a != SECINFO_STYLE4_CURRENT_FH && *a != SECINFO_STYLE4_PARENT)
        return NFS4ERR_INVAL;
    nfs_fh3 h = uiw__nfs4_fh3(&c->cur);
    struct uiw__nfs_export *ex = NULL;
    nfsstat3 s3 = uiw__nfs4_is_pseudo(&c->cur, NULL) ? NFS3_OK : uiw__nfs_fh_export(c->s, &h, &ex);
    if (s3 != NFS3_OK)
        return (nfsstat4)s3;
    nfsstat4 st = uiw__nfs4_flavors(c, ex, r);
    if (st != NFS4_OK)
        return st;
    c->cur.len = 0; /* section 18.45.3: it consumes the current handle */
    return NFS4_OK;
}

/* ---- COMPOUND (RFC 8881 sections 2.10.6, 16.2) ---- */

/* May come without SEQUENCE first, as the only operation (section 2.10.6.2 ff.). */
static int sessionless(uint32_t op)
{
    return op == OP_EXCHANGE_ID || op == OP_CREATE_SESSION || op == OP_DESTROY_SESSION ||
           op == OP_DESTROY_CLIENTID || op == OP_BIND_CONN_TO_SESSION;
}

/* Operation numbers of the COMPOUND's minor version (section 16.2.3, RFC 7862 section 15). */
static int legal(const struct uiw__nfs4_c *c, uint32_t op)
{
    return op >= OP_ACCESS && op <= (c->minor == 1 ? OP_RECLAIM_COMPLETE : OP_CLONE);
}

/* Run operation i (its arguments decoded into c->args[i]); its result into c->res[i]. */
static nfsstat4 run_op(struct uiw__nfs4_c *c, uint32_t i)
{
    nfs_argop4 *a = &c->args[i];
    nfs_resop4 *r = &c->res[i];
    uint32_t op = a->argop;
    r->resop = op;
    if (op == OP_SEQUENCE && i > 0)
        return NFS4ERR_SEQUENCE_POS;
    if (i == 0 && op != OP_SEQUENCE) {
        if (!sessionless(op))
            return NFS4ERR_OP_NOT_IN_SESSION;
        if (c->nargs > 1)
            return NFS4ERR_NOT_ONLY_OP;
    }
    struct uiw__vfs v = c->vfs;
    nfsstat4 st = NFS4ERR_NOTSUPP;
    switch (op) {
    case OP_SEQUENCE: {
        SEQUENCE4args *sa = &a->nfs_argop4_u.opsequence;
        st = uiw__nfs4_sequence(c->s->nfs4, sa, c->nargs, c->req_len,
                                &r->nfs_resop4_u.opsequence.SEQUENCE4res_u.sr_resok4, &c->ref,
                                &c->replay, &c->replay_len);
        c->cachethis = sa->sa_cachethis;
        break;
    }
    case OP_EXCHANGE_ID:
        st = uiw__nfs4_exchange_id(c->s->nfs4, &a->nfs_argop4_u.opexchange_id,
                                   &r->nfs_resop4_u.opexchange_id.EXCHANGE_ID4res_u.eir_resok4);
        break;
    case OP_CREATE_SESSION:
        st = uiw__nfs4_create_session(
            c->s->nfs4, &c->lim, uiw__nfs_xprt_conn4(c->rq->rq_xprt),
            &a->nfs_argop4_u.opcreate_session,
            &r->nfs_resop4_u.opcreate_session.CREATE_SESSION4res_u.csr_resok4);
        break;
    case OP_BIND_CONN_TO_SESSION:
        st = uiw__nfs4_bind_conn(
            c->s->nfs4, uiw__nfs_xprt_conn4(c->rq->rq_xprt),
            &a->nfs_argop4_u.opbind_conn_to_session,
            &r->nfs_resop4_u.opbind_conn_to_session.BIND_CONN_TO_SESSION4res_u.bctsr_resok4);
        break;
    case OP_BACKCHANNEL_CTL:
        st = uiw__nfs4_backchannel_ctl(c->s->nfs4, &c->ref, &a->nfs_argop4_u.opbackchannel_ctl);
        break;
    case OP_DESTROY_SESSION:
        st = uiw__nfs4_destroy_session(c->s->nfs4, a->nfs_argop4_u.opdestroy_session.dsa_sessionid);
        break;
    case OP_DESTROY_CLIENTID:
        st =
            uiw__nfs4_destroy_clientid(c->s->nfs4, a->nfs_argop4_u.opdestroy_clientid.dca_clientid);
        break;
    case OP_RECLAIM_COMPLETE:
        st = uiw__nfs4_reclaim_complete(c->s->nfs4, &c->ref,
                                        a->nfs_argop4_u.opreclaim_complete.rca_one_fs);
        break;
    case OP_PUTROOTFH:
    case OP_PUTPUBFH: /* the public handle is the root's (section 18.20.3) */
        st = op_putrootfh(c, &v);
        break;
    case OP_PUTFH:
        st = op_putfh(c, &v, &a->nfs_argop4_u.opputfh);
        break;
    case OP_GETFH:
        st = op_getfh(c, &v, &r->nfs_resop4_u.opgetfh.GETFH4res_u.resok4);
        break;
    case OP_SAVEFH:
        st = c->cur.len ? NFS4_OK : NFS4ERR_NOFILEHANDLE;
        if (st == NFS4_OK) {
            c->saved = c->cur;
            uiw__nfs4_sid_save(c);
        }
        break;
    case OP_RESTOREFH:
        st = c->saved.len ? NFS4_OK : NFS4ERR_RESTOREFH;
        if (st == NFS4_OK) {
            c->cur = c->saved;
            uiw__nfs4_sid_restore(c);
        }
        break;
    case OP_LOOKUP:
        st = op_lookup(c, &v, &a->nfs_argop4_u.oplookup);
        break;
    case OP_LOOKUPP:
        st = c->cur.len ? lookup(c, &v, NULL) : NFS4ERR_NOFILEHANDLE;
        break;
    case OP_GETATTR:
        st = uiw__nfs4_getattr(c, &v, &a->nfs_argop4_u.opgetattr,
                               &r->nfs_resop4_u.opgetattr.GETATTR4res_u.resok4);
        break;
    case OP_ACCESS:
        st = op_access(c, &v, &a->nfs_argop4_u.opaccess,
                       &r->nfs_resop4_u.opaccess.ACCESS4res_u.resok4);
        break;
    case OP_SECINFO_NO_NAME:
        st = op_secinfo_no_name(c, &a->nfs_argop4_u.opsecinfo_no_name,
                                &r->nfs_resop4_u.opsecinfo_no_name.SECINFO4res_u.resok4);
        break;
    case OP_SECINFO:
        st = uiw__nfs4_secinfo(c, &v, &a->nfs_argop4_u.opsecinfo,
                               &r->nfs_resop4_u.opsecinfo.SECINFO4res_u.resok4);
        break;
    case OP_CREATE:
        st = uiw__nfs4_create(c, &v, &a->nfs_argop4_u.opcreate,
                              &r->nfs_resop4_u.opcreate.CREATE4res_u.resok4);
        break;
    case OP_REMOVE:
        st = uiw__nfs4_remove(c, &v, &a->nfs_argop4_u.opremove,
                              &r->nfs_resop4_u.opremove.REMOVE4res_u.resok4);
        break;
    case OP_RENAME:
        st = uiw__nfs4_rename(c, &v, &a->nfs_argop4_u.oprename,
                              &r->nfs_resop4_u.oprename.RENAME4res_u.resok4);
        break;
    case OP_LINK:
        st = uiw__nfs4_link(c, &v, &a->nfs_argop4_u.oplink,
                            &r->nfs_resop4_u.oplink.LINK4res_u.resok4);
        break;
    case OP_READLINK:
        st = uiw__nfs4_readlink(c, &v, &r->nfs_resop4_u.opreadlink.READLINK4res_u.resok4);
        break;
    case OP_SETATTR:
        st = uiw__nfs4_setattr(c, &v, &a->nfs_argop4_u.opsetattr, &r->nfs_resop4_u.opsetattr);
        break;
    case OP_READDIR:
        st = uiw__nfs4_readdir(c, &v, &a->nfs_argop4_u.opreaddir,
                               &r->nfs_resop4_u.opreaddir.READDIR4res_u.resok4);
        break;
    case OP_VERIFY:
    case OP_NVERIFY: {
        int same = 0;
        st = uiw__nfs4_verify(c, &v,
                              op == OP_VERIFY ? &a->nfs_argop4_u.opverify.obj_attributes
                                              : &a->nfs_argop4_u.opnverify.obj_attributes,
                              &same);
        if (st == NFS4_OK && same != (op == OP_VERIFY))
            st = op == OP_VERIFY ? NFS4ERR_NOT_SAME : NFS4ERR_SAME;
        break;
    }
    case OP_OPEN:
        st = uiw__nfs4_open(c, &v, &a->nfs_argop4_u.opopen,
                            &r->nfs_resop4_u.opopen.OPEN4res_u.resok4);
        break;
    case OP_OPEN_DOWNGRADE:
        st =
            uiw__nfs4_open_downgrade(c, &v, &a->nfs_argop4_u.opopen_downgrade,
                                     &r->nfs_resop4_u.opopen_downgrade.OPEN_DOWNGRADE4res_u.resok4);
        break;
    case OP_CLOSE:
        st = uiw__nfs4_close(c, &v, &a->nfs_argop4_u.opclose,
                             &r->nfs_resop4_u.opclose.CLOSE4res_u.open_stateid);
        break;
    case OP_READ:
        st = uiw__nfs4_read(c, &v, &a->nfs_argop4_u.opread,
                            &r->nfs_resop4_u.opread.READ4res_u.resok4);
        break;
    case OP_WRITE:
        st = uiw__nfs4_write(c, &v, &a->nfs_argop4_u.opwrite,
                             &r->nfs_resop4_u.opwrite.WRITE4res_u.resok4);
        break;
    case OP_COMMIT:
        st = uiw__nfs4_commit(c, &v, &a->nfs_argop4_u.opcommit,
                              &r->nfs_resop4_u.opcommit.COMMIT4res_u.resok4);
        break;
    case OP_LOCK:
        st = uiw__nfs4_lock(c, &v, &a->nfs_argop4_u.oplock, &r->nfs_resop4_u.oplock);
        break;
    case OP_LOCKT:
        st = uiw__nfs4_lockt(c, &v, &a->nfs_argop4_u.oplockt, &r->nfs_resop4_u.oplockt);
        break;
    case OP_LOCKU:
        st = uiw__nfs4_locku(c, &v, &a->nfs_argop4_u.oplocku, &r->nfs_resop4_u.oplocku);
        break;
    case OP_TEST_STATEID:
        st = uiw__nfs4_test_stateid(c, &a->nfs_argop4_u.optest_stateid,
                                    &r->nfs_resop4_u.optest_stateid.TEST_STATEID4res_u.tsr_resok4);
        break;
    case OP_DELEGRETURN:
        st = uiw__nfs4_delegreturn(c, &v, &a->nfs_argop4_u.opdelegreturn);
        break;
    case OP_FREE_STATEID:
        st = uiw__nfs4_free_stateid(c, &a->nfs_argop4_u.opfree_stateid);
        break;
    case OP_SEEK:
        st = uiw__nfs4_seek(c, &v, &a->nfs_argop4_u.opseek,
                            &r->nfs_resop4_u.opseek.SEEK4res_u.resok4);
        break;
    case OP_ALLOCATE:
        st = uiw__nfs4_allocate(c, &v, &a->nfs_argop4_u.opallocate);
        break;
    case OP_DEALLOCATE:
        st = uiw__nfs4_deallocate(c, &v, &a->nfs_argop4_u.opdeallocate);
        break;
    case OP_COPY:
        st = uiw__nfs4_copy(c, &v, &a->nfs_argop4_u.opcopy,
                            &r->nfs_resop4_u.opcopy.COPY4res_u.cr_resok4);
        break;
    case OP_CLONE:
        st = uiw__nfs4_clone(c, &v, &a->nfs_argop4_u.opclone);
        break;
    default:
        break;
    }
    uiw__vfs_leave(&v);
    return st;
}

/* A decoding stream that gives back one word already read, then reads on from another:
 * an operation's number, looked at before its arguments are decoded with it (the
 * RPC-over-RDMA layer's streams do not move back). */
struct pushback {
    XDR x;
    XDR *in;
    long word;
    int have;
};

static bool_t pb_getlong(XDR *x, long *lp)
{
    struct pushback *p = (struct pushback *)x;
    if (!p->have)
        return XDR_GETLONG(p->in, lp);
    p->have = 0;
    *lp = p->word;
    return TRUE;
}

static bool_t pb_getbytes(XDR *x, char *cp, u_int n)
{
    struct pushback *p = (struct pushback *)x;
    return !p->have && XDR_GETBYTES(p->in, cp, n);
}

static bool_t pb_put(XDR *x, const long *lp)
{
    (void)x;
    (void)lp;
    return FALSE;
}

static bool_t pb_putbytes(XDR *x, const char *cp, u_int n)
{
    (void)x;
    (void)cp;
    (void)n;
    return FALSE;
}

static u_int pb_getpostn(XDR *x)
{
    struct pushback *p = (struct pushback *)x;
    return XDR_GETPOS(p->in) - (p->have ? 4 : 0);
}

static bool_t pb_setpostn(XDR *x, u_int pos)
{
    struct pushback *p = (struct pushback *)x;
    return !p->have && XDR_SETPOS(p->in, pos);
}

static int32_t *pb_inline(XDR *x, u_int n)
{
    struct pushback *p = (struct pushback *)x;
    return p->have ? NULL : XDR_INLINE(p->in, n);
}

static void pb_destroy(XDR *x)
{
    (void)x;
}

static bool_t pb_control(XDR *x, int req, void *info)
{
    struct pushback *p = (struct pushback *)x;
    return p->in->x_ops->x_control && p->in->x_ops->x_control(p->in, req, info);
}

static const struct xdr_ops pb_ops = {
    .x_getlong = pb_getlong,
    .x_putlong = pb_put,
    .x_getbytes = pb_getbytes,
    .x_putbytes = pb_putbytes,
    .x_getpostn = pb_getpostn,
    .x_setpostn = pb_setpostn,
    .x_inline = pb_inline,
    .x_destroy = pb_destroy,
    .x_control = pb_control,
};

static void pushback_init(struct pushback *p, XDR *in, long word)
{
    memset(p, 0, sizeof(*p));
    p->x.x_op = XDR_DECODE;
    p->x.x_ops = &pb_ops;
    p->in = in;
    p->word = word;
    p->have = 1;
}

/* The bytes of a result of nearly every COMPOUND (a SEQUENCE or GETATTR that went well,
 * PUTFH and its like) counted here, or 0 for another. */
static uint32_t hot_size(const nfs_resop4 *r)
{
    /* the operation's number and its status, then what a success adds */
    switch (r->resop) {
    case OP_SEQUENCE: /* the session, then five words */
        return r->nfs_resop4_u.opsequence.sr_status == NFS4_OK ? 8 + NFS4_SESSIONID_SIZE + 20 : 0;
    case OP_PUTFH:
    case OP_PUTROOTFH:
    case OP_PUTPUBFH:
    case OP_SAVEFH:
    case OP_RESTOREFH:
        return 8;
    case OP_GETATTR: {
        if (r->nfs_resop4_u.opgetattr.status != NFS4_OK)
            return 0;
        const fattr4 *f = &r->nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes;
        return 8 + 4 + 4 * f->attrmask.bitmap4_len + 4 + ((f->attr_vals.attrlist4_len + 3) & ~3u);
    }
    default:
        return 0;
    }
}

uint32_t uiw__nfs4_res_size(const nfs_resop4 *r)
{
    uint32_t n = hot_size(r);
    return n ? n : (uint32_t)xdr_sizeof(UIW__XDRPROC(xdr_nfs_resop4), (void *)(uintptr_t)r);
}

/* Section 2.10.6.4: a reply larger than the session's ca_maxresponsesize gets
 * NFS4ERR_REP_TOO_BIG, and one the client asked the slot to keep (sa_cachethis) larger
 * than ca_maxresponsesize_cached NFS4ERR_REP_TOO_BIG_TO_CACHE, in place of the result of
 * the operation that made it so (its effects stay: the operations whose results grow
 * large, READ, READDIR and GETATTR, have none). *size: the reply's bytes so far. */
static nfsstat4 fits(struct uiw__nfs4_c *c, const nfs_resop4 *r, uint32_t *size)
{
    uint32_t max_resp, max_cached;
    uiw__nfs4_session_sizes(&c->ref, &max_resp, &max_cached);
    *size += uiw__nfs4_res_size(r);
    /* the RPC reply's header: XID, direction, reply and accept status, a null verifier */
    uint32_t total = *size + 24;
    if (total > max_resp)
        return NFS4ERR_REP_TOO_BIG;
    if (c->cachethis && total > max_cached)
        return NFS4ERR_REP_TOO_BIG_TO_CACHE;
    return NFS4_OK;
}

/* WRITE's arguments (its number read), decoded on the call's own stream: the payload
 * stays where the transport received it (uiw__nfs_xdr_payload), as NFSv3's. */
static bool_t write_args(XDR *x, nfs_argop4 *a)
{
    a->argop = OP_WRITE;
    WRITE4args *w = &a->nfs_argop4_u.opwrite;
    return xdr_stateid4(x, &w->stateid) && xdr_offset4(x, &w->offset) &&
           xdr_stable_how4(x, &w->stable) &&
           uiw__nfs_xdr_payload(x, &w->data.data_val, &w->data.data_len);
}

/* A word of the stream, as xdr_u_int decodes it. */
static bool_t get_u32(XDR *x, u_int *n)
{
    long w;
    if (!XDR_GETLONG(x, &w))
        return FALSE;
    *n = (u_int)w;
    return TRUE;
}

/* The arguments of the operations of nearly every COMPOUND (SEQUENCE, PUTFH, GETATTR; the
 * number read), decoded on the call's own stream with the limits of their XDR, the handle
 * and the bitmap into the COMPOUND's memory: no allocation of their own, nothing to free
 * (owns_nothing). 1: decoded; 0: they do not decode; -1: another operation. */
static int hot_args(struct uiw__nfs4_c *c, XDR *x, uint32_t op, nfs_argop4 *a)
{
    u_int n;
    const uint8_t *p;
    a->argop = op;
    switch (op) {
    case OP_SEQUENCE: {
        /* its words read in place (XDR_INLINE) when the stream has them in one run */
        SEQUENCE4args *sa = &a->nfs_argop4_u.opsequence;
        if (!(p = (const uint8_t *)XDR_INLINE(x, NFS4_SESSIONID_SIZE + 16)))
            return xdr_SEQUENCE4args(x, sa);
        memcpy(sa->sa_sessionid, p, NFS4_SESSIONID_SIZE);
        p += NFS4_SESSIONID_SIZE;
        sa->sa_sequenceid = uiw__get_be32(p);
        sa->sa_slotid = uiw__get_be32(p + 4);
        sa->sa_highest_slotid = uiw__get_be32(p + 8);
        sa->sa_cachethis = uiw__get_be32(p + 12) != 0; /* as xdr_bool */
        return 1;
    }
    case OP_PUTFH: {
        nfs_fh4 *fh = &a->nfs_argop4_u.opputfh.object;
        if (!get_u32(x, &n) || n > NFS4_FHSIZE || !(fh->nfs_fh4_val = uiw__nfs4_alloc(c, n)))
            return 0;
        fh->nfs_fh4_len = n;
        if (!(p = (const uint8_t *)XDR_INLINE(x, (n + 3) & ~3u)))
            return xdr_opaque(x, fh->nfs_fh4_val, n);
        memcpy(fh->nfs_fh4_val, p, n);
        return 1;
    }
    case OP_GETATTR: {
        bitmap4 *b = &a->nfs_argop4_u.opgetattr.attr_request;
        if (!get_u32(x, &n) || n > NFS4_BITMAP_DECODE ||
            !(b->bitmap4_val = uiw__nfs4_alloc(c, n * sizeof(uint32_t))))
            return 0;
        b->bitmap4_len = n;
        if (n && (p = (const uint8_t *)XDR_INLINE(x, 4 * n)) != NULL) {
            for (u_int i = 0; i < n; i++)
                b->bitmap4_val[i] = uiw__get_be32(p + 4 * i);
            return 1;
        }
        for (u_int i = 0; i < n; i++)
            if (!xdr_uint32_t(x, &b->bitmap4_val[i]))
                return 0;
        return 1;
    }
    default:
        return -1;
    }
}

/* Whether hot_args decoded op's arguments (xdr_free must leave them). */
static int owns_nothing(uint32_t op)
{
    return op == OP_SEQUENCE || op == OP_PUTFH || op == OP_GETATTR;
}

/* svc_freeargs's routine: the WRITE payloads given back as they were taken (the other
 * arguments are freed by the dispatcher). */
static bool_t free_payloads(XDR *x, void *p)
{
    struct uiw__nfs4_c *c = p;
    for (uint32_t i = 0; i < c->ndec && c->args; i++)
        if (c->args[i].argop == OP_WRITE) {
            WRITE4args *w = &c->args[i].nfs_argop4_u.opwrite;
            uiw__nfs_xdr_payload(x, &w->data.data_val, &w->data.data_len);
            w->data.data_val = NULL;
        }
    return TRUE;
}

/* A COMPOUND's tag, minor version and operation count, as their XDR decodes them: the
 * words read in place, and the tag's bytes only when it has some (nearly every client
 * sends none). */
static bool_t dec_head(struct uiw__nfs4_c *c, XDR *x, uint32_t *count)
{
    long w;
    if (!XDR_GETLONG(x, &w))
        return FALSE;
    if (w != 0) {
        struct pushback pb;
        pushback_init(&pb, x, w);
        if (!xdr_utf8str_cs(&pb.x, &c->tag))
            return FALSE;
    }
    const uint8_t *p = (const uint8_t *)XDR_INLINE(x, 8);
    if (!p)
        return xdr_uint32_t(x, &c->minor) && xdr_uint32_t(x, count);
    c->minor = uiw__get_be32(p);
    *count = uiw__get_be32(p + 4);
    return TRUE;
}

/* The arguments, decoded and run one operation at a time: svc_getargs's routine (it
 * fails only for what is not a COMPOUND's XDR before its operations). */
static bool_t compound(XDR *x, void *p)
{
    struct uiw__nfs4_c *c = p;
    if (x->x_op == XDR_FREE)
        return TRUE; /* freed by the dispatcher */
    uint32_t count;
    if (!dec_head(c, x, &count))
        return FALSE;
    if (c->minor != 1 && c->minor != 2) {
        c->status = NFS4ERR_MINOR_VERS_MISMATCH; /* no results (section 16.2.3) */
        return TRUE;
    }
    if (count > OPS_MAX) {
        c->status = NFS4ERR_TOO_MANY_OPS;
        return TRUE;
    }
    c->nargs = count;
    /* a COMPOUND runs at most the session's ca_maxoperations: SEQUENCE refuses more, and
     * without it only the first operation runs */
    c->cap = count < c->lim.max_ops ? count : c->lim.max_ops;
    if (c->pool && c->cap <= POOL_OPS) {
        c->args = c->pool->args;
        c->res = c->pool->res;
        memset(c->args, 0, c->cap * sizeof(*c->args));
        memset(c->res, 0, c->cap * sizeof(*c->res));
    } else {
        c->args = calloc(c->cap ? c->cap : 1, sizeof(*c->args));
        c->res = calloc(c->cap ? c->cap : 1, sizeof(*c->res));
    }
    if (!c->args || !c->res) {
        c->status = NFS4ERR_SERVERFAULT;
        return TRUE;
    }
    /* every operation decoded before any runs, as knfsd does: a COMPOUND whose operation
     * numbers run out before its count gets GARBAGE_ARGS with nothing done; one whose
     * operation is illegal or whose arguments do not decode runs the operations before
     * it, and that one's result is its error */
    uint32_t n = count < c->cap ? count : c->cap, bad = n;
    nfsstat4 bad_st = NFS4_OK;
    u_int start = xdr_getpos(x);
    for (uint32_t i = 0; i < n; i++) {
        long w;
        if (!XDR_GETLONG(x, &w))
            return FALSE;
        uint32_t op = (uint32_t)w;
        if (!legal(c, op)) {
            bad = i;
            bad_st = NFS4ERR_OP_ILLEGAL;
            break;
        }
        c->ndec = i + 1;
        int ok = hot_args(c, x, op, &c->args[i]);
        if (ok < 0 && op == OP_WRITE) {
            ok = write_args(x, &c->args[i]);
        } else if (ok < 0) {
            struct pushback pb;
            pushback_init(&pb, x, w);
            ok = xdr_nfs_argop4(&pb.x, &c->args[i]);
        }
        if (!ok) {
            c->args[i].argop = op;
            bad = i;
            bad_st = NFS4ERR_BADXDR;
            break;
        }
    }
    /* the operations' bytes, with the tag and the words before them: the request as the
     * session's ca_maxrequestsize counts it, but for the RPC header (SEQUENCE refuses more
     * with NFS4ERR_REQ_TOO_BIG) */
    c->req_len = xdr_getpos(x) - start + 12 + c->tag.utf8string_len;
    uint32_t size = 12 + ((c->tag.utf8string_len + 3) & ~3u); /* status, tag, count */
    uiw__vfs_init(&c->vfs, c->s, c->rq, 0);
    for (uint32_t i = 0; i < n; i++) {
        nfs_resop4 *r = &c->res[c->nres++];
        if (i == bad) {
            /* section 15.2: an illegal operation's result is OP_ILLEGAL's */
            r->resop = bad_st == NFS4ERR_OP_ILLEGAL ? OP_ILLEGAL : c->args[i].argop;
            c->status = bad_st;
            set_status(r, c->status);
            return TRUE;
        }
        r->resop = c->args[i].argop;
        /* the next operation's number (a put-filehandle operation lets SECINFO_NO_NAME
         * after it answer for a flavor the export refuses) */
        c->next_op = i + 1 < c->ndec ? c->args[i + 1].argop : 0;
        c->status = run_op(c, i);
        if (c->status == NFS4_OK && c->ref.ses)
            c->status = fits(c, r, &size);
        set_status(r, c->status);
        if (c->replay || c->status != NFS4_OK)
            return TRUE;
    }
    return TRUE;
}

/* GETATTR values encoded by enc_hot at most (larger ones, which a stream may move by
 * RDMA, go through rpcgen's routine) */
#define HOT_ATTRS 512

/* A result of nearly every COMPOUND (SEQUENCE, PUTFH and its like, GETATTR), written as
 * words into the stream's own buffer (XDR_INLINE): 1; or 0 when rpcgen's routine is to
 * encode it (another operation, or no room inline). */
static int enc_hot(XDR *x, const nfs_resop4 *r)
{
    uint32_t n = hot_size(r);
    if (!n ||
        (r->resop == OP_GETATTR &&
         r->nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes.attr_vals.attrlist4_len >
             HOT_ATTRS))
        return 0;
    uint8_t *p = (uint8_t *)XDR_INLINE(x, (u_int)n);
    if (!p)
        return 0;
    uiw__put_be32(p, (uint32_t)r->resop);
    p += 4;
    if (r->resop == OP_SEQUENCE) {
        const SEQUENCE4resok *q = &r->nfs_resop4_u.opsequence.SEQUENCE4res_u.sr_resok4;
        uiw__put_be32(p, NFS4_OK);
        memcpy(p + 4, q->sr_sessionid, NFS4_SESSIONID_SIZE);
        p += 4 + NFS4_SESSIONID_SIZE;
        uiw__put_be32(p, q->sr_sequenceid);
        uiw__put_be32(p + 4, q->sr_slotid);
        uiw__put_be32(p + 8, q->sr_highest_slotid);
        uiw__put_be32(p + 12, q->sr_target_highest_slotid);
        uiw__put_be32(p + 16, q->sr_status_flags);
    } else if (r->resop == OP_GETATTR) {
        const fattr4 *f = &r->nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes;
        uint32_t len = f->attr_vals.attrlist4_len, pad = (4 - (len & 3)) & 3;
        uiw__put_be32(p, NFS4_OK);
        uiw__put_be32(p + 4, f->attrmask.bitmap4_len);
        p += 8;
        for (u_int i = 0; i < f->attrmask.bitmap4_len; i++, p += 4)
            uiw__put_be32(p, f->attrmask.bitmap4_val[i]);
        uiw__put_be32(p, len);
        memcpy(p + 4, f->attr_vals.attrlist4_val, len);
        memset(p + 4 + len, 0, pad);
    } else {
        uiw__put_be32(p, (uint32_t)r->nfs_resop4_u.opputfh.status); /* each one's status */
    }
    return 1;
}

bool_t uiw__nfs4_enc_result(XDR *x, const nfs_resop4 *r)
{
    return enc_hot(x, r) || xdr_nfs_resop4(x, (nfs_resop4 *)(uintptr_t)r);
}

/* The results, encoded. */
static bool_t enc_res(XDR *x, struct uiw__nfs4_c *c)
{
    uint32_t st = c->status, n = c->nres, tl = c->tag.utf8string_len;
    /* the status, the tag and the count written in place when the tag is short (what
     * xdr_utf8str_cs would send by chunk is long) and the stream has room inline */
    uint8_t *p = tl <= TAG_INLINE ? (uint8_t *)XDR_INLINE(x, 12 + ((tl + 3) & ~3u)) : NULL;
    if (p) {
        uiw__put_be32(p, st);
        uiw__put_be32(p + 4, tl);
        if (tl) {
            memset(p + 8 + (tl & ~3u), 0, 4); /* the pad */
            memcpy(p + 8, c->tag.utf8string_val, tl);
        }
        uiw__put_be32(p + 8 + ((tl + 3) & ~3u), n);
    } else if (!xdr_uint32_t(x, &st) || !xdr_utf8str_cs(x, &c->tag) || !xdr_uint32_t(x, &n)) {
        return FALSE;
    }
    /* a failed operation's result is its status and what its XDR has for that status
     * (nothing for most; the zeroed rest for the others) */
    for (uint32_t i = 0; i < n; i++)
        if (!uiw__nfs4_enc_result(x, &c->res[i]))
            return FALSE;
    return TRUE;
}

static bool_t enc_reply(XDR *x, void *c)
{
    return enc_res(x, c);
}

struct blob {
    char *p;
    u_int len;
};

static bool_t xdr_blob(XDR *x, void *p)
{
    struct blob *b = p;
    return xdr_opaque(x, b->p, b->len);
}

static void dispatch(struct uiw__nfsd *s, struct svc_req *rq, SVCXPRT *xprt)
{
    if (rq->rq_proc == 0) {
        svc_getargs(xprt, UIW__XDRPROC(xdr_void), NULL);
        svc_sendreply(xprt, UIW__XDRPROC(xdr_void), NULL);
        return;
    }
    if (rq->rq_proc != 1) {
        svcerr_noproc(xprt);
        return;
    }
    struct uiw__nfs4_pool *pool = pool_take();
    struct uiw__nfs4_c *c = pool ? &pool->c : malloc(sizeof(*c));
    if (!c) {
        svcerr_systemerr(xprt);
        return;
    }
    memset(c, 0, sizeof(*c));
    c->pool = pool;
    c->s = s;
    c->rq = rq;
    uiw__nfs4_limits(s, &c->lim);
    /* WRITE payloads: at most the server's wtmax, in place */
    uiw__nfs_args_limits(uiw__nfsd_max_io(s), uiw__nfs_xprt_is_rdma(xprt));
    if (!svc_getargs(xprt, UIW__XDRPROC(compound), (caddr_t)c)) {
        svcerr_decode(xprt);
        goto out;
    }
    struct blob b = {0};
    /* the slot keeps the reply when the client asked, or when it is the SEQUENCE alone */
    int keep = c->cachethis || c->nres == 1;
    if (!c->replay && !keep) {
        /* a reply not kept: encoded by the transport as it sends it, with no buffer or
         * copy of ours (READ data from where it was read: the transport references its
         * lent buffer, or RDMA Writes it into the client's Write chunk); its size is
         * bounded by the session's ca_maxresponsesize (fits); the slot free first, as
         * below */
        uiw__nfs4_slot_done(s->nfs4, &c->ref, NULL, 0, 0);
        if (!svc_sendreply(xprt, UIW__XDRPROC(enc_reply), (caddr_t)c) && s->opts.verbose)
            fprintf(stderr, "uiw-nfsd: COMPOUND: reply not sent\n");
        goto out;
    }
    if (c->replay) {
        b.p = c->replay; /* a retry: the bytes of the first reply */
        b.len = (u_int)c->replay_len;
    } else if ((b.p = malloc(REPLY_MAX + c->read_bytes)) != NULL) {
        XDR x;
        xdrmem_create(&x, b.p, (u_int)(REPLY_MAX + c->read_bytes), XDR_ENCODE);
        if (enc_res(&x, c))
            b.len = xdr_getpos(&x);
        xdr_destroy(&x);
    }
    if (!b.len && !c->replay)
        free(b.p);
    if (!b.len)
        b.p = NULL;
    /* the slot is free (its reply kept) before the reply goes: a client may send its
     * next call on the slot the moment the reply is in, and must not find it in use
     * (NFS4ERR_SEQ_MISORDERED) */
    uiw__nfs4_slot_done(s->nfs4, &c->ref, b.p, b.len, keep);
    if (!b.len)
        svcerr_systemerr(xprt);
    else if (!svc_sendreply(xprt, UIW__XDRPROC(xdr_blob), (caddr_t)&b) && s->opts.verbose)
        fprintf(stderr, "uiw-nfsd: COMPOUND: reply not sent\n");
    if (s->opts.verbose > 1)
        fprintf(stderr, "uiw-nfsd: COMPOUND of %u -> %d\n", c->nres, (int)c->status);
    if (!c->replay)
        free(b.p);
out:
    svc_freeargs(xprt, UIW__XDRPROC(free_payloads), (caddr_t)c);
    uiw__nfs_args_limits(0, 0);
    free(c->replay);
    for (uint32_t i = 0; i < c->ndec && c->args; i++)
        if (!owns_nothing(c->args[i].argop))
            xdr_free(UIW__XDRPROC(xdr_nfs_argop4), (char *)&c->args[i]);
    xdr_free(UIW__XDRPROC(xdr_utf8str_cs), (char *)&c->tag);
    while (c->mem) {
        struct uiw__nfs4_mem *m = c->mem;
        c->mem = m->next;
        free(m);
    }
    if (!pool || c->args != pool->args) {
        free(c->args);
        free(c->res);
    }
    if (pool)
        pool->busy = 0;
    else
        free(c);
}

void uiw__nfs4_dispatch(struct uiw__nfsd *s, struct svc_req *rq, SVCXPRT *xprt)
{
    if (rq->rq_cred.oa_flavor != AUTH_NONE && rq->rq_cred.oa_flavor != AUTH_SYS) {
        svcerr_weakauth(xprt);
        return;
    }
    /* the exports stay as they are while the COMPOUND runs (a reload waits) */
    pthread_rwlock_rdlock(&s->xlock);
    dispatch(s, rq, xprt);
    pthread_rwlock_unlock(&s->xlock);
}
