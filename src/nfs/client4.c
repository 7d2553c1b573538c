/*
 * The NFSv4.1 and NFSv4.2 client of uiw-nfs (RFC 8881, RFC 7862), behind client.h's
 * functions when the URL's ?version= (or the fallback from 4.2) chose version 4:
 *   - the session: EXCHANGE_ID (SP4_NONE; co_ownerid unique per host and process run
 *     unless ?owner= names it), CREATE_SESSION (the fore channel sized for the largest
 *     READ and WRITE), RECLAIM_COMPLETE, and at the end DESTROY_SESSION and
 *     DESTROY_CLIENTID;
 *   - every COMPOUND after those begins with SEQUENCE on a slot of the session's table;
 *     NFS4ERR_DELAY is retried with a backoff (NFS4ERR_GRACE each second),
 *     NFS4ERR_BADSESSION / DEADSESSION make a new session, NFS4ERR_STALE_CLIENTID /
 *     EXPIRED a new client record (then the COMPOUND goes again); a client idle for a
 *     third of the lease renews it with a SEQUENCE alone (uiw__nfs_lock, which holds a
 *     lock while nothing else is sent);
 *   - paths from PUTROOTFH with LOOKUPs (as many per COMPOUND as the session allows);
 *     GETATTR, SETATTR, REMOVE, RENAME, CREATE (directories), READDIR with attributes;
 *   - files: OPEN (CLAIM_NULL with create UNCHECKED4, or GUARDED4 for an exclusive create,
 *     or CLAIM_FH to open a file known by its handle), READ and WRITE with the open
 *     stateid, COMMIT, CLOSE. The open files are a small table (OPENS_MAX, the least
 *     recently used closed first): client.h's calls name files by handle and never say
 *     when they are done with one, so each is closed when the table needs room or the
 *     client closes. Delegations are declined (OPEN4_SHARE_ACCESS_WANT_NO_DELEG): this
 *     client caches no data, so one would only make other clients wait (tests may take
 *     them, uiw__nfs4c_want_deleg, and see them recalled and returned);
 *   - LOCK (open_to_lock_owner4) and LOCKU, NFS4ERR_DENIED polled with a backoff as Linux
 *     does for a blocking lock; COPY (4.2, synchronous) within one server.
 * Over RPC-over-RDMA a READ's data lands straight in the caller's buffer (a Write chunk,
 * the result decoded in place) and a WRITE's data leaves from it (a Read chunk), as the
 * v3 client's do. Errors are -nfsstat4: the values NFSv4 shares with NFSv3 (NOENT,
 * EXIST, NOTDIR, ...) are the same numbers, so callers comparing with -NFS3ERR_* work.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rpc/rpc.h>

#include "common/byteorder.h"
#include "nfs/client_int.h"
#include "nfs/pipe.h"
#include "nfs4.h"

#if UIW_NFS_HAVE_RDMA
#include <uiw/rpc.h>
#endif

/* Slots asked for on the fore channel (calls in flight at once: slot 0 the synchronous
 * calls', the others those in flight, as many as the bits of uiw__nfs4c.busy: 64, as
 * NFSv3 keeps 64 calls in flight). */
#define SLOTS 65
_Static_assert(SLOTS - 1 <= 64, "a bit of uiw__nfs4c.busy per slot but 0");
/* Open files kept (each an OPEN the server holds for us). */
#define OPENS_MAX 64
/* Operations in one COMPOUND asked for (the server may allow fewer). */
#define MAXOPS 16
/* READDIR: the reply's size asked for. */
#define READDIR_MAXCOUNT 65536u
/* NFS4ERR_DELAY: attempts, and the first wait (doubling, at most 2 s). */
#define DELAY_TRIES    12
#define DELAY_FIRST_MS 50
/* NFS4ERR_GRACE: how long to keep asking (a grace period lasts a lease, often 90 s). */
#define GRACE_MAX_MS 200000u
/* Headroom of the fore channel's requests and replies beside READ/WRITE data. */
#define CHAN_ROOM 16384u

struct open_file {
    struct uiw__nfs_fh fh;
    stateid4 sid;
    uint32_t access; /* OPEN4_SHARE_ACCESS_* held */
    uint64_t used;   /* when last used (a counter): the oldest is closed first */
    /* a delegation the server granted although none was wanted, and whether CB_RECALL
     * asked for it back (DELEGRETURN goes before the next COMPOUND) */
    stateid4 deleg;
    int has_deleg, recalled;
};

/* The back channel's slots (ca_maxrequests asked for) and operations per CB_COMPOUND. */
#define CB_SLOTS   2
#define CB_OPS_MAX 4

/* A back-channel slot: its last sequenceid and that CB_COMPOUND's results (statuses: the
 * operations this client serves return nothing else), sent again for a retry. */
struct cb_slot {
    uint32_t seq;
    int done; /* a CB_COMPOUND ran on it */
    nfsstat4 status;
    u_int nres;
    nfs_cb_opnum4 op[CB_OPS_MAX];
    nfsstat4 st[CB_OPS_MAX];
};

struct cres {
    COMPOUND4res r;
    const nfs_argop4 *ops; /* what was sent: each result must answer it */
    u_int nops;
    char *rbuf; /* a READ's data goes here (rcap bytes at most), or NULL */
    u_int rcap;
    u_int rlen;              /* how much came */
    nfs_resop4 *fixed;       /* room for nops results, kept by the caller (NULL: allocated) */
    struct attr_room *attrs; /* with fixed: room for a GETATTR's attributes (or NULL) */
};

/* A GETATTR result's mask and values as large as uiw-nfs asks for: a call in flight's
 * decoded here, not into memory of its own (more than this is, as a synchronous call's). */
struct attr_room {
    uint32_t mask[4];
    char vals[512];
};

/* A COMPOUND in flight on a fore-channel slot other than 0 (uiw__nfs4c_op_start): SEQUENCE,
 * PUTFH and one GETATTR, READ or WRITE. */
struct acall {
    struct uiw__nfs_op *op;
    enum uiw__nfs4c_kind kind;
    nfs_argop4 ops[3];
    nfs_resop4 res[3]; /* cr's results, kept from one call to the next */
    struct attr_room attrs;
    struct cres cr;
    struct uiw__nfs_async a;
    unsigned gen; /* the session it went on (uiw__nfs4c.gen) */
};

struct uiw__nfs4c {
    int minor;
    char owner[160]; /* co_ownerid */
    verifier4 verf;  /* co_verifier: this run's */
    clientid4 cid;
    sequenceid4 csseq; /* CREATE_SESSION's next csa_sequence */
    sessionid4 sid;
    int have_session;
    uint32_t seq[SLOTS]; /* each slot's last sequenceid */
    uint32_t nslots;     /* the server's ca_maxrequests, at most SLOTS */
    uint32_t maxops;
    uint32_t lease; /* seconds */
    uint32_t maxreq, maxresp;
    struct open_file opens[OPENS_MAX];
    unsigned nopens;
    uint64_t tick;
    unsigned renewals; /* new sessions or clients made on the server's word */
    uint64_t last_ms;  /* when the last COMPOUND was answered: the lease runs from it */
    uint32_t cb_prog;  /* the callback program served (0: no back channel) */
    int back_chan;     /* the server bound the connection to the back channel */
    struct cb_slot cb[CB_SLOTS];
    unsigned cb_runs;   /* back-channel operations run (a retry answered from its slot: not) */
    uint32_t seq_flags; /* the last SEQUENCE's sr_status_flags */
    uint64_t bound_ms;  /* when BIND_CONN_TO_SESSION was last sent */
    unsigned rebinds;   /* connections bound to the back channel again */
    int returning;      /* DELEGRETURNs going out (not again from inside them) */
    int want_deleg;     /* OPEN takes a delegation (uiw__nfs4c_want_deleg) */
    /* COMPOUNDs in flight on slots 1.. (busy); slot 0 is the synchronous
     * calls', which may go while these are out (a call in flight's reply is taken while
     * a synchronous call waits) */
    struct acall calls[SLOTS];
    uint64_t busy; /* bit k - 1: slot k */
    /* operations started while every slot was busy, in order (uiw__nfs_op.v4_next) */
    struct uiw__nfs_op *wait_head, **wait_tail;
    unsigned gen; /* sessions made: a reply of an older one moves no slot of this */
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000u, (long)(ms % 1000u) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- error names ---- */

static const struct {
    int st;
    const char *name;
} errnames[] = {
#define N(x)                                                                                       \
    {                                                                                              \
        x, #x                                                                                      \
    }
    N(NFS4ERR_PERM),
    N(NFS4ERR_NOENT),
    N(NFS4ERR_IO),
    N(NFS4ERR_NXIO),
    N(NFS4ERR_ACCESS),
    N(NFS4ERR_EXIST),
    N(NFS4ERR_XDEV),
    N(NFS4ERR_NOTDIR),
    N(NFS4ERR_ISDIR),
    N(NFS4ERR_INVAL),
    N(NFS4ERR_FBIG),
    N(NFS4ERR_NOSPC),
    N(NFS4ERR_ROFS),
    N(NFS4ERR_MLINK),
    N(NFS4ERR_NAMETOOLONG),
    N(NFS4ERR_NOTEMPTY),
    N(NFS4ERR_DQUOT),
    N(NFS4ERR_STALE),
    N(NFS4ERR_BADHANDLE),
    N(NFS4ERR_BAD_COOKIE),
    N(NFS4ERR_NOTSUPP),
    N(NFS4ERR_TOOSMALL),
    N(NFS4ERR_SERVERFAULT),
    N(NFS4ERR_BADTYPE),
    N(NFS4ERR_DELAY),
    N(NFS4ERR_SAME),
    N(NFS4ERR_DENIED),
    N(NFS4ERR_EXPIRED),
    N(NFS4ERR_LOCKED),
    N(NFS4ERR_GRACE),
    N(NFS4ERR_FHEXPIRED),
    N(NFS4ERR_SHARE_DENIED),
    N(NFS4ERR_WRONGSEC),
    N(NFS4ERR_CLID_INUSE),
    N(NFS4ERR_MOVED),
    N(NFS4ERR_NOFILEHANDLE),
    N(NFS4ERR_MINOR_VERS_MISMATCH),
    N(NFS4ERR_STALE_CLIENTID),
    N(NFS4ERR_STALE_STATEID),
    N(NFS4ERR_OLD_STATEID),
    N(NFS4ERR_BAD_STATEID),
    N(NFS4ERR_BAD_SEQID),
    N(NFS4ERR_LOCK_RANGE),
    N(NFS4ERR_SYMLINK),
    N(NFS4ERR_RESTOREFH),
    N(NFS4ERR_ATTRNOTSUPP),
    N(NFS4ERR_NO_GRACE),
    N(NFS4ERR_RECLAIM_BAD),
    N(NFS4ERR_BADXDR),
    N(NFS4ERR_LOCKS_HELD),
    N(NFS4ERR_OPENMODE),
    N(NFS4ERR_BADOWNER),
    N(NFS4ERR_BADCHAR),
    N(NFS4ERR_BADNAME),
    N(NFS4ERR_BAD_RANGE),
    N(NFS4ERR_LOCK_NOTSUPP),
    N(NFS4ERR_OP_ILLEGAL),
    N(NFS4ERR_DEADLOCK),
    N(NFS4ERR_FILE_OPEN),
    N(NFS4ERR_ADMIN_REVOKED),
    N(NFS4ERR_CB_PATH_DOWN),
    N(NFS4ERR_BADSESSION),
    N(NFS4ERR_BADSLOT),
    N(NFS4ERR_DEADSESSION),
    N(NFS4ERR_SEQ_MISORDERED),
    N(NFS4ERR_SEQUENCE_POS),
    N(NFS4ERR_REQ_TOO_BIG),
    N(NFS4ERR_REP_TOO_BIG),
    N(NFS4ERR_TOO_MANY_OPS),
    N(NFS4ERR_OP_NOT_IN_SESSION),
    N(NFS4ERR_SEQ_FALSE_RETRY),
    N(NFS4ERR_RETRY_UNCACHED_REP),
    N(NFS4ERR_NOT_ONLY_OP),
    N(NFS4ERR_WRONG_TYPE),
    N(NFS4ERR_OFFLOAD_DENIED),
    N(NFS4ERR_OFFLOAD_NO_REQS),
#undef N
};

const char *uiw__nfs4c_errname(int status)
{
    for (size_t i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
        if (errnames[i].st == status)
            return errnames[i].name;
    return NULL;
}

/* ---- the COMPOUND's reply, decoded with a READ's data into the caller's buffer ---- */

/* One word, read in place (XDR_INLINE) when the stream has it in its buffer: the numbers
 * and statuses of a COMPOUND's results (xdr_enum's value, without its calls). */
static bool_t get_u32(XDR *x, uint32_t *v)
{
    const uint8_t *p = (const uint8_t *)XDR_INLINE(x, 4);
    if (!p)
        return xdr_uint32_t(x, v);
    *v = uiw__get_be32(p);
    return TRUE;
}

static bool_t get_status(XDR *x, nfsstat4 *st)
{
    uint32_t v;
    if (!get_u32(x, &v))
        return FALSE;
    *st = (nfsstat4)v;
    return TRUE;
}

/* SEQUENCE's result (its number read): a success's words read in place (XDR_INLINE) when
 * the stream has them in one run, else with rpcgen's routine. */
static bool_t sequence_res(XDR *x, SEQUENCE4res *r)
{
    if (!get_status(x, &r->sr_status))
        return FALSE;
    if (r->sr_status != NFS4_OK)
        return TRUE;
    SEQUENCE4resok *ok = &r->SEQUENCE4res_u.sr_resok4;
    const uint8_t *p = (const uint8_t *)XDR_INLINE(x, NFS4_SESSIONID_SIZE + 20);
    if (!p)
        return xdr_SEQUENCE4resok(x, ok);
    memcpy(ok->sr_sessionid, p, NFS4_SESSIONID_SIZE);
    p += NFS4_SESSIONID_SIZE;
    ok->sr_sequenceid = uiw__get_be32(p);
    ok->sr_slotid = uiw__get_be32(p + 4);
    ok->sr_highest_slotid = uiw__get_be32(p + 8);
    ok->sr_target_highest_slotid = uiw__get_be32(p + 12);
    ok->sr_status_flags = uiw__get_be32(p + 16);
    return TRUE;
}

/* A GETATTR's result (its number read) with its mask and values in cr->attrs when they
 * fit, else in memory of their own; the limits of their XDR. */
static bool_t getattr_res(XDR *x, struct cres *cr, GETATTR4res *r)
{
    if (!get_status(x, &r->status))
        return FALSE;
    if (r->status != NFS4_OK)
        return TRUE;
    fattr4 *f = &r->GETATTR4res_u.resok4.obj_attributes;
    uint32_t n;
    if (!get_u32(x, &n) || n > NFS4_BITMAP_DECODE)
        return FALSE;
    f->attrmask.bitmap4_val = n <= 4 ? cr->attrs->mask : n ? malloc(n * sizeof(uint32_t)) : NULL;
    if (n && !f->attrmask.bitmap4_val)
        return FALSE;
    f->attrmask.bitmap4_len = n;
    for (u_int i = 0; i < n; i++)
        if (!get_u32(x, &f->attrmask.bitmap4_val[i]))
            return FALSE;
    if (!get_u32(x, &n) || n > NFS4_BODY_DECODE)
        return FALSE;
    f->attr_vals.attrlist4_val = n <= sizeof(cr->attrs->vals) ? cr->attrs->vals : malloc(n);
    if (!f->attr_vals.attrlist4_val)
        return FALSE;
    f->attr_vals.attrlist4_len = n;
    /* the values and their pad in place when the stream has them in its buffer and the
     * call offered no Write chunk (none without a READ), which a responder may have put
     * them in (the pad's bytes are not checked, as xdr_opaque does not) */
    const uint8_t *p = cr->rbuf ? NULL : (const uint8_t *)XDR_INLINE(x, (n + 3) & ~3u);
    if (!p)
        return xdr_opaque(x, f->attr_vals.attrlist4_val, n);
    memcpy(f->attr_vals.attrlist4_val, p, n);
    return TRUE;
}

/* Before r is freed: what getattr_res put in cr->attrs is not r's to free. */
static void attrs_unroom(struct cres *cr, nfs_resop4 *r)
{
    if (!cr->attrs || r->resop != OP_GETATTR)
        return;
    fattr4 *f = &r->nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes;
    if (f->attrmask.bitmap4_val == cr->attrs->mask)
        f->attrmask.bitmap4_val = NULL;
    if (f->attr_vals.attrlist4_val == cr->attrs->vals)
        f->attr_vals.attrlist4_val = NULL;
}

/* One result: the operation it answers, then its result with rpcgen's routine; a READ's
 * data decoded straight into rbuf (over RPC-over-RDMA it was written there already). */
static bool_t xdr_one_res(XDR *x, struct cres *cr, nfs_resop4 *o, u_int i)
{
    uint32_t op;
    if (!get_u32(x, &op))
        return FALSE;
    o->resop = (nfs_opnum4)op;
    if (o->resop != cr->ops[i].argop && o->resop != OP_ILLEGAL)
        return FALSE;
    if (o->resop == OP_READ && cr->rbuf) {
        READ4res *r = &o->nfs_resop4_u.opread;
        if (!xdr_nfsstat4(x, &r->status))
            return FALSE;
        if (r->status != NFS4_OK)
            return TRUE;
        u_int len;
        if (!xdr_bool(x, &r->READ4res_u.resok4.eof) || !xdr_u_int(x, &len) || len > cr->rcap)
            return FALSE;
        if (!xdr_opaque(x, cr->rbuf, len))
            return FALSE;
        cr->rlen = len;
        return TRUE; /* data_val stays NULL: nothing for xdr_free */
    }
    /* the union's arm after the number rpcgen's routine decodes first: decode the whole
     * result with it from a copy of the number */
    if (o->resop == OP_GETATTR && cr->attrs)
        return getattr_res(x, cr, &o->nfs_resop4_u.opgetattr);
    if (o->resop == OP_SEQUENCE)
        return sequence_res(x, &o->nfs_resop4_u.opsequence);
    if (o->resop == OP_PUTFH) /* its status alone */
        return get_status(x, &o->nfs_resop4_u.opputfh.status);
    switch (o->resop) {
#define ARM(OPN, member, fn)                                                                       \
    case OPN:                                                                                      \
        return fn(x, &o->nfs_resop4_u.member);
        ARM(OP_SEQUENCE, opsequence, xdr_SEQUENCE4res)
        ARM(OP_EXCHANGE_ID, opexchange_id, xdr_EXCHANGE_ID4res)
        ARM(OP_CREATE_SESSION, opcreate_session, xdr_CREATE_SESSION4res)
        ARM(OP_DESTROY_SESSION, opdestroy_session, xdr_DESTROY_SESSION4res)
        ARM(OP_DESTROY_CLIENTID, opdestroy_clientid, xdr_DESTROY_CLIENTID4res)
        ARM(OP_BIND_CONN_TO_SESSION, opbind_conn_to_session, xdr_BIND_CONN_TO_SESSION4res)
        ARM(OP_RECLAIM_COMPLETE, opreclaim_complete, xdr_RECLAIM_COMPLETE4res)
        ARM(OP_PUTFH, opputfh, xdr_PUTFH4res)
        ARM(OP_PUTROOTFH, opputrootfh, xdr_PUTROOTFH4res)
        ARM(OP_LOOKUP, oplookup, xdr_LOOKUP4res)
        ARM(OP_GETFH, opgetfh, xdr_GETFH4res)
        ARM(OP_GETATTR, opgetattr, xdr_GETATTR4res)
        ARM(OP_SETATTR, opsetattr, xdr_SETATTR4res)
        ARM(OP_SAVEFH, opsavefh, xdr_SAVEFH4res)
        ARM(OP_RESTOREFH, oprestorefh, xdr_RESTOREFH4res)
        ARM(OP_OPEN, opopen, xdr_OPEN4res)
        ARM(OP_CLOSE, opclose, xdr_CLOSE4res)
        ARM(OP_READ, opread, xdr_READ4res)
        ARM(OP_WRITE, opwrite, xdr_WRITE4res)
        ARM(OP_COMMIT, opcommit, xdr_COMMIT4res)
        ARM(OP_READDIR, opreaddir, xdr_READDIR4res)
        ARM(OP_CREATE, opcreate, xdr_CREATE4res)
        ARM(OP_REMOVE, opremove, xdr_REMOVE4res)
        ARM(OP_RENAME, oprename, xdr_RENAME4res)
        ARM(OP_LOCK, oplock, xdr_LOCK4res)
        ARM(OP_LOCKU, oplocku, xdr_LOCKU4res)
        ARM(OP_COPY, opcopy, xdr_COPY4res)
        ARM(OP_DELEGRETURN, opdelegreturn, xdr_DELEGRETURN4res)
        ARM(OP_ILLEGAL, opillegal, xdr_ILLEGAL4res)
#undef ARM
    default:
        return FALSE; /* an operation this client never sends */
    }
}

/* Whether r holds no memory for xdr_free to give back (after attrs_unroom): the results
 * of nearly every COMPOUND, which need not be walked through rpcgen's routine. */
static int owns_nothing(const nfs_resop4 *r)
{
    switch (r->resop) {
    case OP_SEQUENCE:
    case OP_PUTFH:
    case OP_PUTROOTFH:
    case OP_PUTPUBFH:
    case OP_SAVEFH:
    case OP_RESTOREFH:
        return 1;
    case OP_GETATTR: {
        const fattr4 *f = &r->nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes;
        return !f->attrmask.bitmap4_val && !f->attr_vals.attrlist4_val;
    }
    case OP_READ:
        return !r->nfs_resop4_u.opread.READ4res_u.resok4.data.data_val;
    default:
        return 0;
    }
}

/* The reply's status and tag as their XDR decodes them: both words read at once in place
 * when the stream has them in its buffer, the tag's bytes only when the server sent some
 * (it echoes the call's, empty). */
static bool_t res_head(XDR *x, COMPOUND4res *r)
{
    const uint8_t *p = (const uint8_t *)XDR_INLINE(x, 8);
    if (!p)
        return get_status(x, &r->status) && xdr_utf8str_cs(x, &r->tag);
    r->status = (nfsstat4)uiw__get_be32(p);
    uint32_t tl = uiw__get_be32(p + 4);
    if (!tl)
        return TRUE;
    /* as xdr_bytes decodes the rest: the bytes into memory of their own, then the pad */
    if (tl > NFS4_NAME_DECODE || !(r->tag.utf8string_val = malloc(tl)))
        return FALSE;
    r->tag.utf8string_len = tl;
    return xdr_opaque(x, r->tag.utf8string_val, tl);
}

/* COMPOUND4res, with at most as many results as operations were sent. */
static bool_t xdr_cres(XDR *x, struct cres *cr)
{
    COMPOUND4res *r = &cr->r;
    if (x->x_op == XDR_FREE && cr->fixed && r->resarray.resarray_val == cr->fixed) {
        for (u_int i = 0; i < r->resarray.resarray_len; i++) {
            attrs_unroom(cr, &cr->fixed[i]);
            if (!owns_nothing(&cr->fixed[i]))
                xdr_nfs_resop4(x, &cr->fixed[i]);
        }
        r->resarray.resarray_val = NULL;
        r->resarray.resarray_len = 0;
        return !r->tag.utf8string_val || xdr_utf8str_cs(x, &r->tag);
    }
    if (x->x_op == XDR_FREE)
        return xdr_COMPOUND4res(x, r);
    if (x->x_op != XDR_DECODE)
        return FALSE;
    uint32_t n;
    if (!res_head(x, r) || !get_u32(x, &n) || n > cr->nops)
        return FALSE;
    if (cr->fixed) /* a call in flight's: no allocation per call */
        memset(cr->fixed, 0, cr->nops * sizeof(nfs_resop4));
    r->resarray.resarray_val =
        cr->fixed ? cr->fixed : calloc(cr->nops ? cr->nops : 1, sizeof(nfs_resop4));
    if (!r->resarray.resarray_val)
        return FALSE;
    for (u_int i = 0; i < n; i++) {
        r->resarray.resarray_len = i + 1; /* what xdr_free must look at */
        if (!xdr_one_res(x, cr, &r->resarray.resarray_val[i], i))
            return FALSE;
    }
    return TRUE;
}

static void cres_free(struct cres *cr)
{
    xdr_free(UIW__XDRPROC(xdr_cres), (caddr_t)cr);
    memset(&cr->r, 0, sizeof(cr->r));
}

/* Every result starts with its status (RFC 8881 section 16.2.3). */
static nfsstat4 st_of(const nfs_resop4 *r)
{
    nfsstat4 st;
    memcpy(&st, &r->nfs_resop4_u, sizeof(st));
    return st;
}

/* The result of operation i, or NULL when the COMPOUND stopped before it. */
static nfs_resop4 *res_at(struct cres *cr, u_int i)
{
    return i < cr->r.resarray.resarray_len ? &cr->r.resarray.resarray_val[i] : NULL;
}

/* ---- calls ---- */

static void op_init(nfs_argop4 *a, nfs_opnum4 n)
{
    memset(a, 0, sizeof(*a));
    a->argop = n;
}

static void putfh(nfs_argop4 *a, const struct uiw__nfs_fh *fh)
{
    op_init(a, OP_PUTFH);
    a->nfs_argop4_u.opputfh.object.nfs_fh4_len = fh->len;
    a->nfs_argop4_u.opputfh.object.nfs_fh4_val = (char *)fh->data;
}

static int fh_out(struct uiw__nfs_fh *fh, const nfs_fh4 *in)
{
    if (in->nfs_fh4_len == 0 || in->nfs_fh4_len > sizeof(fh->data))
        return -NFS4ERR_BADHANDLE;
    fh->len = in->nfs_fh4_len;
    memcpy(fh->data, in->nfs_fh4_val, fh->len);
    return 0;
}

/* An operation of nearly every COMPOUND (SEQUENCE, PUTFH, GETATTR) written as words into
 * the stream's own buffer (XDR_INLINE): 1; or 0 when rpcgen's routine is to encode it
 * (another operation, or no room inline). */
static int arg_hot(XDR *x, const nfs_argop4 *o)
{
    u_int n;
    switch (o->argop) {
    case OP_SEQUENCE: /* the session, four words */
        n = 4 + NFS4_SESSIONID_SIZE + 16;
        break;
    case OP_PUTFH:
        if (o->nfs_argop4_u.opputfh.object.nfs_fh4_len > NFS4_FHSIZE)
            return 0;
        n = 8 + ((o->nfs_argop4_u.opputfh.object.nfs_fh4_len + 3) & ~3u);
        break;
    case OP_GETATTR:
        if (o->nfs_argop4_u.opgetattr.attr_request.bitmap4_len > 8)
            return 0;
        n = 8 + 4 * o->nfs_argop4_u.opgetattr.attr_request.bitmap4_len;
        break;
    default:
        return 0;
    }
    uint8_t *p = (uint8_t *)XDR_INLINE(x, n);
    if (!p)
        return 0;
    uiw__put_be32(p, (uint32_t)o->argop);
    p += 4;
    if (o->argop == OP_SEQUENCE) {
        const SEQUENCE4args *a = &o->nfs_argop4_u.opsequence;
        memcpy(p, a->sa_sessionid, NFS4_SESSIONID_SIZE);
        p += NFS4_SESSIONID_SIZE;
        uiw__put_be32(p, a->sa_sequenceid);
        uiw__put_be32(p + 4, a->sa_slotid);
        uiw__put_be32(p + 8, a->sa_highest_slotid);
        uiw__put_be32(p + 12, a->sa_cachethis ? 1 : 0);
    } else if (o->argop == OP_PUTFH) {
        const nfs_fh4 *fh = &o->nfs_argop4_u.opputfh.object;
        uint32_t len = fh->nfs_fh4_len, pad = (4 - (len & 3)) & 3;
        uiw__put_be32(p, len);
        memcpy(p + 4, fh->nfs_fh4_val, len);
        memset(p + 4 + len, 0, pad);
    } else {
        const bitmap4 *b = &o->nfs_argop4_u.opgetattr.attr_request;
        uiw__put_be32(p, b->bitmap4_len);
        for (u_int i = 0; i < b->bitmap4_len; i++)
            uiw__put_be32(p + 4 + 4 * i, b->bitmap4_val[i]);
    }
    return 1;
}

/* COMPOUND4args (encoding; arg_hot's operations written by it). */
static bool_t xdr_cargs(XDR *x, COMPOUND4args *a)
{
    if (x->x_op != XDR_ENCODE)
        return xdr_COMPOUND4args(x, a);
    u_int n = a->argarray.argarray_len;
    if (n > NFS4_OPS_DECODE || !xdr_utf8str_cs(x, &a->tag) || !xdr_uint32_t(x, &a->minorversion) ||
        !xdr_u_int(x, &n))
        return FALSE;
    for (u_int i = 0; i < n; i++)
        if (!arg_hot(x, &a->argarray.argarray_val[i]) &&
            !xdr_nfs_argop4(x, &a->argarray.argarray_val[i]))
            return FALSE;
    return TRUE;
}

/* One COMPOUND as it is: 0 with cr decoded (its status may be an error), or
 * UIW__NFS_ERPC. */
static int send_compound(struct uiw__nfs_client *c, nfs_argop4 *ops, u_int n, struct cres *cr,
                         uint32_t reply_max)
{
    COMPOUND4args a;
    memset(&a, 0, sizeof(a));
    a.minorversion = (uint32_t)c->v4->minor;
    a.argarray.argarray_len = n;
    a.argarray.argarray_val = ops;
    memset(&cr->r, 0, sizeof(cr->r));
    cr->ops = ops;
    cr->nops = n;
    cr->rlen = 0;
    return uiw__nfs_call_ddp(c, 1, UIW__XDRPROC(xdr_cargs), &a, UIW__XDRPROC(xdr_cres), cr,
                             cr->rbuf, cr->rcap, reply_max);
}

static int new_session(struct uiw__nfs_client *c);
static int new_client(struct uiw__nfs_client *c);
static void return_recalled(struct uiw__nfs_client *c);
static void cb_register(struct uiw__nfs_client *c);
static void cb_unregister(struct uiw__nfs_client *c);
static void bind_back(struct uiw__nfs_client *c);

/* A COMPOUND whose ops[0] is left for SEQUENCE (on slot 0: the client's synchronous calls
 * go one at a time; those in flight take the other slots), sent until it is not answered
 * NFS4ERR_DELAY, with a new session or client record when the server has lost ours. 0 (cr holds the
 * results, ops 1.. all NFS4_OK), -nfsstat4 of the first that failed (cr holds the results up to it:
 * the caller frees it either way), or UIW__NFS_ERPC (cr empty). */
static int compound(struct uiw__nfs_client *c, nfs_argop4 *ops, u_int n, struct cres *cr,
                    uint32_t reply_max)
{
    struct uiw__nfs4c *s = c->v4;
    unsigned wait = DELAY_FIRST_MS, grace_ms = 0;
    int remade = 0;
    return_recalled(c);
    if (c->rebind && s->cb_prog)
        bind_back(c); /* a TCP connection made again carries the back channel too */
    for (int attempt = 0;; attempt++) {
        op_init(&ops[0], OP_SEQUENCE);
        SEQUENCE4args *sa = &ops[0].nfs_argop4_u.opsequence;
        memcpy(sa->sa_sessionid, s->sid, sizeof(s->sid));
        sa->sa_sequenceid = s->seq[0] + 1;
        sa->sa_slotid = 0;
        sa->sa_highest_slotid = s->busy ? s->nslots - 1 : 0;
        sa->sa_cachethis = 0;
        int rc = send_compound(c, ops, n, cr, reply_max);
        if (rc != 0)
            return rc;
        nfs_resop4 *r0 = res_at(cr, 0);
        nfsstat4 st = cr->r.status;
        s->last_ms = now_ms();
        if (r0 && st_of(r0) == NFS4_OK) {
            s->seq[0]++; /* the slot moved on, whatever the operations after did */
            s->seq_flags = r0->nfs_resop4_u.opsequence.SEQUENCE4res_u.sr_resok4.sr_status_flags;
        }
        if (st == NFS4_OK) {
            if (s->cb_prog &&
                (s->seq_flags & (SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION)))
                bind_back(c);
            return 0;
        }
        if (st == NFS4ERR_RETRY_UNCACHED_REP && r0 && st_of(r0) == st && attempt < DELAY_TRIES) {
            /* the call ran, its reply lost with a connection, and the server kept no
             * copy (sa_cachethis is never set): the slot moves past it and the call goes
             * again as a new one (RFC 8881 section 2.10.6.1.3) */
            s->seq[0]++;
            cres_free(cr);
            continue;
        }
        if (st == NFS4ERR_DELAY && attempt < DELAY_TRIES) {
            cres_free(cr);
            sleep_ms(wait);
            wait = wait * 2 > 2000 ? 2000 : wait * 2;
            continue;
        }
        if (st == NFS4ERR_GRACE && grace_ms < GRACE_MAX_MS) {
            /* a server just started takes back what its clients held before opening
             * or locking anew (RFC 8881 section 8.4.2): asked again each second */
            if (c->verbose && grace_ms == 0)
                fprintf(stderr, "uiw-nfs: the server is in its grace period: waiting\n");
            cres_free(cr);
            sleep_ms(1000);
            grace_ms += 1000;
            attempt = 0;
            continue;
        }
        if ((st == NFS4ERR_BADSESSION || st == NFS4ERR_DEADSESSION) && !remade) {
            cres_free(cr);
            remade = 1;
            if ((rc = new_session(c)) != 0)
                return rc;
            continue;
        }
        if ((st == NFS4ERR_STALE_CLIENTID || st == NFS4ERR_EXPIRED) && r0 && st_of(r0) != NFS4_OK &&
            !remade) {
            cres_free(cr);
            remade = 1;
            if ((rc = new_client(c)) != 0)
                return rc;
            continue;
        }
        if (st == NFS4ERR_SEQ_MISORDERED && r0 && st_of(r0) == st && !remade) {
            /* the slot's sequence went astray (a reply lost with a connection): the
             * session is made again rather than guessed at */
            cres_free(cr);
            remade = 1;
            if ((rc = new_session(c)) != 0)
                return rc;
            continue;
        }
        if (st == NFS4_OK)
            return 0;
        return -(int)st;
    }
}

/* An operation alone (no SEQUENCE: EXCHANGE_ID, CREATE_SESSION, DESTROY_*): its status,
 * NFS4ERR_DELAY retried. */
static int alone(struct uiw__nfs_client *c, nfs_argop4 *op, struct cres *cr)
{
    unsigned wait = DELAY_FIRST_MS;
    for (int attempt = 0;; attempt++) {
        int rc = send_compound(c, op, 1, cr, 0);
        if (rc != 0)
            return rc;
        if (cr->r.status == NFS4ERR_DELAY && attempt < DELAY_TRIES) {
            cres_free(cr);
            sleep_ms(wait);
            wait = wait * 2 > 2000 ? 2000 : wait * 2;
            continue;
        }
        return cr->r.status == NFS4_OK ? 0 : -(int)cr->r.status;
    }
}

/* ---- the session ---- */

static int exchange_id(struct uiw__nfs_client *c)
{
    struct uiw__nfs4c *s = c->v4;
    nfs_argop4 a;
    op_init(&a, OP_EXCHANGE_ID);
    EXCHANGE_ID4args *ea = &a.nfs_argop4_u.opexchange_id;
    memcpy(ea->eia_clientowner.co_verifier, s->verf, sizeof(s->verf));
    ea->eia_clientowner.co_ownerid.co_ownerid_len = (u_int)strlen(s->owner);
    ea->eia_clientowner.co_ownerid.co_ownerid_val = s->owner;
    ea->eia_state_protect.spa_how = SP4_NONE;
    struct cres cr = {0};
    int rc = alone(c, &a, &cr);
    if (rc == 0) {
        EXCHANGE_ID4resok *ok =
            &cr.r.resarray.resarray_val[0].nfs_resop4_u.opexchange_id.EXCHANGE_ID4res_u.eir_resok4;
        s->cid = ok->eir_clientid;
        s->csseq = ok->eir_sequenceid;
        if (c->verbose)
            fprintf(stderr, "uiw-nfs: EXCHANGE_ID: client %016" PRIx64 " (owner %s)\n",
                    (uint64_t)s->cid, s->owner);
    }
    cres_free(&cr);
    return rc;
}

static int create_session(struct uiw__nfs_client *c)
{
    struct uiw__nfs4c *s = c->v4;
    nfs_argop4 a;
    op_init(&a, OP_CREATE_SESSION);
    CREATE_SESSION4args *ca = &a.nfs_argop4_u.opcreate_session;
    ca->csa_clientid = s->cid;
    ca->csa_sequence = s->csseq;
    /* a back channel on the connection: RPC-over-RDMA's backward direction, or the TCP
     * connection's records that are calls */
    ca->csa_flags = s->cb_prog ? CREATE_SESSION4_FLAG_CONN_BACK_CHAN : 0;
    /* the fore channel: the largest READ and WRITE (1 MiB) and their COMPOUND's other
     * operations; replies are not cached (sa_cachethis is never set) */
    channel_attrs4 fore = {
        0, (1u << 20) + CHAN_ROOM, (1u << 20) + CHAN_ROOM, 4096, MAXOPS, SLOTS, {0, NULL}};
    channel_attrs4 back = {0, 4096, 4096, 0, CB_OPS_MAX, CB_SLOTS, {0, NULL}};
    ca->csa_fore_chan_attrs = fore;
    ca->csa_back_chan_attrs = back;
    ca->csa_cb_program = s->cb_prog ? s->cb_prog : NFS4_CALLBACK;
    callback_sec_parms4 sec;
    memset(&sec, 0, sizeof(sec));
    sec.cb_secflavor = AUTH_NONE;
    ca->csa_sec_parms.csa_sec_parms_len = 1;
    ca->csa_sec_parms.csa_sec_parms_val = &sec;
    struct cres cr = {0};
    int rc = alone(c, &a, &cr);
    if (rc == 0) {
        CREATE_SESSION4resok *ok =
            &cr.r.resarray.resarray_val[0]
                 .nfs_resop4_u.opcreate_session.CREATE_SESSION4res_u.csr_resok4;
        memcpy(s->sid, ok->csr_sessionid, sizeof(s->sid));
        s->csseq++;
        s->have_session = 1;
        memset(s->seq, 0, sizeof(s->seq));
        s->gen++;
        memset(s->cb, 0, sizeof(s->cb));
        s->back_chan = (ok->csr_flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN) != 0;
        channel_attrs4 *f = &ok->csr_fore_chan_attrs;
        s->nslots = f->ca_maxrequests < SLOTS ? f->ca_maxrequests : SLOTS;
        s->maxops = f->ca_maxoperations;
        s->maxreq = f->ca_maxrequestsize;
        s->maxresp = f->ca_maxresponsesize;
        if (s->nslots == 0 || s->maxops < 2) {
            snprintf(c->err, sizeof(c->err), "CREATE_SESSION: the server allows no calls");
            rc = UIW__NFS_ERPC;
        }
        if (c->verbose)
            fprintf(stderr,
                    "uiw-nfs: CREATE_SESSION: %u slots, %u operations, requests %u, replies "
                    "%u bytes; back channel %s\n",
                    f->ca_maxrequests, f->ca_maxoperations, f->ca_maxrequestsize,
                    f->ca_maxresponsesize,
                    s->back_chan ? "bound"
                    : s->cb_prog ? "asked for, not bound"
                                 : "none (the transport serves no backward calls)");
    }
    cres_free(&cr);
    return rc;
}

/* The connection the calls go on, bound to the session again in both directions
 * (BIND_CONN_TO_SESSION, RFC 8881 section 18.34), once SEQUENCE says the back channel's
 * path is down or the TCP connection was made again: the transport connected again after
 * a loss, and the server takes a new connection for the fore channel alone until the
 * client binds it (section 2.10.3.1). On SEQUENCE's word at most once a second, so that
 * a server that cannot call back costs one call a second. */
static void bind_back(struct uiw__nfs_client *c)
{
    struct uiw__nfs4c *s = c->v4;
    uint64_t now = now_ms();
    if (s->bound_ms && now - s->bound_ms < 1000 && !c->rebind)
        return;
    s->bound_ms = now;
    nfs_argop4 a;
    op_init(&a, OP_BIND_CONN_TO_SESSION);
    BIND_CONN_TO_SESSION4args *b = &a.nfs_argop4_u.opbind_conn_to_session;
    memcpy(b->bctsa_sessid, s->sid, sizeof(s->sid));
    b->bctsa_dir = CDFC4_BACK_OR_BOTH;
    b->bctsa_use_conn_in_rdma_mode = c->rdma != 0;
    struct cres cr = {0};
    int rc = alone(c, &a, &cr);
    if (rc == 0) {
        const BIND_CONN_TO_SESSION4resok *ok =
            &cr.r.resarray.resarray_val[0]
                 .nfs_resop4_u.opbind_conn_to_session.BIND_CONN_TO_SESSION4res_u.bctsr_resok4;
        s->back_chan = ok->bctsr_dir == CDFS4_BACK || ok->bctsr_dir == CDFS4_BOTH;
        s->rebinds += s->back_chan;
        c->rebind = 0;
    }
    if (c->verbose)
        fprintf(stderr, "uiw-nfs: BIND_CONN_TO_SESSION: back channel %s\n",
                rc == 0 && s->back_chan ? "bound again"
                : rc == 0               ? "not bound"
                                        : uiw__nfs_errtext(c, rc));
    cres_free(&cr);
}

/* What the server held of our opens is gone with the client record. */
static void forget_opens(struct uiw__nfs4c *s)
{
    s->nopens = 0;
}

static int new_session(struct uiw__nfs_client *c)
{
    struct uiw__nfs4c *s = c->v4;
    s->have_session = 0;
    s->renewals++;
    if (c->verbose)
        fprintf(stderr, "uiw-nfs: the server lost the session: a new one\n");
    int rc = create_session(c);
    if (rc == -NFS4ERR_STALE_CLIENTID || rc == -NFS4ERR_EXPIRED)
        return new_client(c);
    return rc;
}

static int new_client(struct uiw__nfs_client *c)
{
    struct uiw__nfs4c *s = c->v4;
    s->have_session = 0;
    s->renewals++;
    forget_opens(s);
    if (c->verbose)
        fprintf(stderr, "uiw-nfs: the server lost the client record: a new one\n");
    int rc = exchange_id(c);
    return rc != 0 ? rc : create_session(c);
}

/* ---- attributes ---- */

/* Bit `bit`'s place in word k of an attribute bitmap (RFC 8881 section 3.3.7). */
#define ABIT(bit, k) ((bit) / 32 == (k) ? 1u << ((bit) % 32) : 0u)
/* Asked of every object (RFC 8881 section 5.8), word k of the bitmap. */
#define ATTR_WORD(k)                                                                               \
    (ABIT(FATTR4_TYPE, k) | ABIT(FATTR4_CHANGE, k) | ABIT(FATTR4_SIZE, k) | ABIT(FATTR4_FSID, k) | \
     ABIT(FATTR4_FILEID, k) | ABIT(FATTR4_MODE, k) | ABIT(FATTR4_NUMLINKS, k) |                    \
     ABIT(FATTR4_OWNER, k) | ABIT(FATTR4_OWNER_GROUP, k) | ABIT(FATTR4_RAWDEV, k) |                \
     ABIT(FATTR4_SPACE_USED, k) | ABIT(FATTR4_TIME_ACCESS, k) | ABIT(FATTR4_TIME_METADATA, k) |    \
     ABIT(FATTR4_TIME_MODIFY, k))
/* ... and of the root at setup, beside those. */
#define ROOT_WORD(k)                                                                               \
    (ATTR_WORD(k) | ABIT(FATTR4_LEASE_TIME, k) | ABIT(FATTR4_MAXREAD, k) | ABIT(FATTR4_MAXWRITE, k))

/* Never written: calls on any thread (and two GETATTRs of one COMPOUND) point at them
 * until they are encoded. */
static uint32_t attr_words[2] = {ATTR_WORD(0), ATTR_WORD(1)};
static uint32_t root_words[2] = {ROOT_WORD(0), ROOT_WORD(1)};

/* A GETATTR's bitmap: the attributes asked of every object, or with root, those the
 * setup asks of the root too. */
static void attr_request(bitmap4 *b, int root)
{
    b->bitmap4_len = 2;
    b->bitmap4_val = root ? root_words : attr_words;
}

/* What the setup asks of the root beside the rest. */
struct root_attrs {
    uint32_t lease;
    uint64_t maxread, maxwrite;
};

/* An owner string as a number ("1000", as servers send them under AUTH_SYS), or the
 * caller's id when it is a name. */
static uint32_t owner_id(const char *s, u_int n, uint32_t dflt)
{
    if (n == 0 || n > 10)
        return dflt;
    uint64_t v = 0;
    for (u_int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return dflt;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    return v > 0xffffffffu ? dflt : (uint32_t)v;
}

/* Attribute values read as XDR has them (big-endian words, strings padded to a word),
 * straight from the bytes: a load per word, where an XDR stream costs a call through its
 * operations per word (a GETATTR's values have about 25). */
struct ar {
    const uint8_t *p, *end;
};

static int ar32(struct ar *r, uint32_t *v)
{
    if (r->end - r->p < 4)
        return 0;
    *v = uiw__get_be32(r->p);
    r->p += 4;
    return 1;
}

static int ar64(struct ar *r, uint64_t *v)
{
    if (r->end - r->p < 8)
        return 0;
    *v = uiw__get_be64(r->p);
    r->p += 8;
    return 1;
}

static int ar_time(struct ar *r, nfstime3 *t)
{
    uint64_t sec;
    uint32_t nsec;
    if (!ar64(r, &sec) || !ar32(r, &nsec))
        return 0;
    t->seconds = (uint32_t)sec;
    t->nseconds = nsec;
    return 1;
}

/* fattr4 into NFSv3's fattr3 (and the root's extra ones into ra): 0 or -NFS4ERR_BADXDR
 * (a bit this client did not ask for, or values that do not decode). */
static int attrs_out(struct uiw__nfs_client *c, const fattr4 *f, fattr3 *a, struct root_attrs *ra)
{
    fattr3 tmp;
    if (!a)
        a = &tmp;
    memset(a, 0, sizeof(*a));
    const uint8_t *vals = (const uint8_t *)f->attr_vals.attrlist4_val;
    struct ar x = {vals, vals + f->attr_vals.attrlist4_len};
    int ok = 1;
    for (u_int w = 0; w < f->attrmask.bitmap4_len && ok; w++) {
        /* the bits set, lowest first (the order of the values) */
        for (uint32_t bits = f->attrmask.bitmap4_val[w]; bits && ok; bits &= bits - 1) {
            uint32_t bit = w * 32 + (uint32_t)__builtin_ctz(bits), u32 = 0;
            uint64_t u64 = 0, u64b = 0;
            switch (bit) {
            case FATTR4_TYPE:
                ok = ar32(&x, &u32);
                /* nfs_ftype4's first seven match ftype3's; attribute directories and
                 * named attributes are none of uiw-nfs's */
                a->type = u32 >= NF4REG && u32 <= NF4FIFO ? (ftype3)u32 : (ftype3)0;
                break;
            case FATTR4_CHANGE:
            case FATTR4_SIZE:
            case FATTR4_FILEID:
            case FATTR4_SPACE_USED:
            case FATTR4_MAXREAD:
            case FATTR4_MAXWRITE:
                ok = ar64(&x, &u64);
                if (bit == FATTR4_SIZE)
                    a->size = u64;
                else if (bit == FATTR4_FILEID)
                    a->fileid = u64;
                else if (bit == FATTR4_SPACE_USED)
                    a->used = u64;
                else if (bit == FATTR4_MAXREAD && ra)
                    ra->maxread = u64;
                else if (bit == FATTR4_MAXWRITE && ra)
                    ra->maxwrite = u64;
                break;
            case FATTR4_FSID:
                ok = ar64(&x, &u64) && ar64(&x, &u64b);
                a->fsid = u64 ^ (u64b << 32 | u64b >> 32);
                break;
            case FATTR4_LEASE_TIME:
                ok = ar32(&x, &u32);
                if (ra)
                    ra->lease = u32;
                break;
            case FATTR4_MODE:
                ok = ar32(&x, &u32);
                a->mode = u32 & 07777;
                break;
            case FATTR4_NUMLINKS:
                ok = ar32(&x, &a->nlink);
                break;
            case FATTR4_OWNER:
            case FATTR4_OWNER_GROUP: {
                /* the string in place: no copy of it (owner_id reads at most 10 bytes) */
                uint32_t n = 0;
                ok = ar32(&x, &n) && n <= 1024 && (size_t)(x.end - x.p) >= ((n + 3) & ~3u);
                if (!ok)
                    break;
                const char *str = (const char *)x.p;
                x.p += (n + 3) & ~3u;
                if (bit == FATTR4_OWNER)
                    a->uid = owner_id(str, n, c->url.uid);
                else
                    a->gid = owner_id(str, n, c->url.gid);
                break;
            }
            case FATTR4_RAWDEV:
                ok = ar32(&x, &a->rdev.specdata1) && ar32(&x, &a->rdev.specdata2);
                break;
            case FATTR4_TIME_ACCESS:
                ok = ar_time(&x, &a->atime);
                break;
            case FATTR4_TIME_METADATA:
                ok = ar_time(&x, &a->ctime);
                break;
            case FATTR4_TIME_MODIFY:
                ok = ar_time(&x, &a->mtime);
                break;
            default:
                ok = 0; /* not asked for: its size is unknown here */
            }
        }
    }
    return ok ? 0 : -NFS4ERR_BADXDR;
}

/* fattr4 of a mode and/or a size (SETATTR, CREATE, OPEN's createattrs): its values in
 * buf (at least 16 bytes), its bitmap in words[2]. */
static void attrs_in(fattr4 *f, uint32_t words[2], char *buf, const uint64_t *size,
                     const uint32_t *mode)
{
    words[0] = words[1] = 0;
    XDR x;
    xdrmem_create(&x, buf, 16, XDR_ENCODE);
    uint64_t sz = size ? *size : 0;
    uint32_t md = mode ? *mode : 0;
    if (size) {
        words[0] |= 1u << FATTR4_SIZE;
        xdr_uint64_t(&x, &sz);
    }
    if (mode) {
        words[1] |= 1u << (FATTR4_MODE - 32);
        xdr_uint32_t(&x, &md);
    }
    f->attrmask.bitmap4_len = 2;
    f->attrmask.bitmap4_val = words;
    f->attr_vals.attrlist4_len = xdr_getpos(&x);
    f->attr_vals.attrlist4_val = buf;
    xdr_destroy(&x);
}

static void getattr_op(nfs_argop4 *a)
{
    op_init(a, OP_GETATTR);
    attr_request(&a->nfs_argop4_u.opgetattr.attr_request, 0);
}

static int getattr_out(struct uiw__nfs_client *c, const nfs_resop4 *r, fattr3 *attr)
{
    if (!attr)
        return 0;
    return attrs_out(c, &r->nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes, attr, NULL);
}

/* ---- setup ---- */

int uiw__nfs4c_minor(const struct uiw__nfs_client *c)
{
    return c->v4 ? c->v4->minor : 0;
}

/* RECLAIM_COMPLETE (nothing to reclaim: a new client), then the root's handle,
 * attributes and limits. */
static int root_setup(struct uiw__nfs_client *c, char *err, size_t errlen)
{
    struct uiw__nfs4c *s = c->v4;
    nfs_argop4 ops[2];
    struct cres cr = {0};
    op_init(&ops[1], OP_RECLAIM_COMPLETE);
    int rc = compound(c, ops, 2, &cr, 0);
    cres_free(&cr);
    if (rc != 0 && rc != -NFS4ERR_COMPLETE_ALREADY) {
        snprintf(err, errlen, "RECLAIM_COMPLETE: %s", uiw__nfs_errtext(c, rc));
        return -1;
    }
    nfs_argop4 r[4];
    op_init(&r[1], OP_PUTROOTFH);
    op_init(&r[2], OP_GETFH);
    op_init(&r[3], OP_GETATTR);
    attr_request(&r[3].nfs_argop4_u.opgetattr.attr_request, 1);
    rc = compound(c, r, 4, &cr, 0);
    struct root_attrs ra = {90, 0, 0};
    fattr3 fa;
    if (rc == 0)
        rc = fh_out(&c->root,
                    &cr.r.resarray.resarray_val[2].nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object);
    if (rc == 0)
        rc = attrs_out(c,
                       &cr.r.resarray.resarray_val[3]
                            .nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes,
                       &fa, &ra);
    cres_free(&cr);
    if (rc != 0) {
        snprintf(err, errlen, "PUTROOTFH: %s", uiw__nfs_errtext(c, rc));
        return -1;
    }
    s->lease = ra.lease ? ra.lease : 90;
    /* READ and WRITE: the server's maximum, within what the session carries */
    uint64_t rt = ra.maxread ? ra.maxread : 1u << 20, wt = ra.maxwrite ? ra.maxwrite : 1u << 20;
    uint32_t rroom = s->maxresp > CHAN_ROOM ? s->maxresp - CHAN_ROOM : 4096;
    uint32_t wroom = s->maxreq > CHAN_ROOM ? s->maxreq - CHAN_ROOM : 4096;
    c->rtmax = (uint32_t)(rt < rroom ? rt : rroom);
    c->wtmax = (uint32_t)(wt < wroom ? wt : wroom);
    if (c->rtmax > (8u << 20))
        c->rtmax = 8u << 20;
    if (c->wtmax > (8u << 20))
        c->wtmax = 8u << 20;
    if (c->verbose)
        fprintf(stderr,
                "uiw-nfs: root handle of %u bytes, lease %u s, READ up to %u, WRITE up to %u "
                "bytes\n",
                c->root.len, s->lease, c->rtmax, c->wtmax);
    return 0;
}

int uiw__nfs4c_start(struct uiw__nfs_client *c, int minor, char *err, size_t errlen)
{
    struct uiw__nfs4c *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    c->v4 = s;
    s->wait_tail = &s->wait_head;
    /* co_ownerid: the host and this run (pid and start time), unless the URL names one;
     * co_verifier: this run's, so a restarted client's state is replaced */
    char host[64];
    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "localhost");
    host[sizeof(host) - 1] = 0;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (c->url.owner[0])
        snprintf(s->owner, sizeof(s->owner), "%s", c->url.owner);
    else
        snprintf(s->owner, sizeof(s->owner), "uiw-nfs/%s/%ld/%lld.%09ld", host, (long)getpid(),
                 (long long)ts.tv_sec, ts.tv_nsec);
    uint64_t v = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^ (uint64_t)getpid();
    memcpy(s->verf, &v, sizeof(s->verf));
    cb_register(c);
    int tries[2] = {minor ? minor : 2, minor ? -1 : 1};
    int rc = -1;
    for (int i = 0; i < 2 && tries[i] > 0; i++) {
        s->minor = tries[i];
        rc = exchange_id(c);
        if (rc != -NFS4ERR_MINOR_VERS_MISMATCH)
            break;
        if (c->verbose)
            fprintf(stderr, "uiw-nfs: NFS v4.%d: NFS4ERR_MINOR_VERS_MISMATCH\n", s->minor);
    }
    if (rc == -NFS4ERR_MINOR_VERS_MISMATCH) {
        snprintf(err, errlen, "%s: NFS v4.%d not served (NFS4ERR_MINOR_VERS_MISMATCH)", c->url.host,
                 s->minor);
        cb_unregister(c);
        free(s);
        c->v4 = NULL;
        return -2;
    }
    if (rc == 0)
        rc = create_session(c);
    if (rc != 0) {
        snprintf(err, errlen, "%s", uiw__nfs_errtext(c, rc));
        if (s->cid && rc != UIW__NFS_ERPC)
            uiw__nfs4c_stop(c);
        else {
            cb_unregister(c);
            free(s);
            c->v4 = NULL;
        }
        return -1;
    }
    if (root_setup(c, err, errlen) != 0) {
        uiw__nfs4c_stop(c);
        return -1;
    }
    return 0;
}

/* ---- open files ---- */

static struct open_file *open_find(struct uiw__nfs4c *s, const struct uiw__nfs_fh *fh)
{
    for (unsigned i = 0; i < s->nopens; i++)
        if (s->opens[i].fh.len == fh->len && memcmp(s->opens[i].fh.data, fh->data, fh->len) == 0)
            return &s->opens[i];
    return NULL;
}

static int delegreturn(struct uiw__nfs_client *c, struct open_file *f)
{
    nfs_argop4 ops[3];
    putfh(&ops[1], &f->fh);
    op_init(&ops[2], OP_DELEGRETURN);
    ops[2].nfs_argop4_u.opdelegreturn.deleg_stateid = f->deleg;
    struct cres cr = {0};
    c->v4->returning = 1;
    int rc = compound(c, ops, 3, &cr, 0);
    c->v4->returning = 0;
    cres_free(&cr);
    f->has_deleg = f->recalled = 0;
    return rc;
}

/* The delegations CB_RECALL asked for: returned (this client caches no data, so there
 * is nothing to write first: every WRITE went out when it was made). */
static void return_recalled(struct uiw__nfs_client *c)
{
    struct uiw__nfs4c *s = c->v4;
    if (s->returning)
        return;
    for (unsigned i = 0; i < s->nopens; i++)
        if (s->opens[i].has_deleg && s->opens[i].recalled)
            delegreturn(c, &s->opens[i]);
}

static int close_file(struct uiw__nfs_client *c, struct open_file *f)
{
    struct uiw__nfs4c *s = c->v4;
    if (f->has_deleg)
        delegreturn(c, f);
    nfs_argop4 ops[3];
    putfh(&ops[1], &f->fh);
    op_init(&ops[2], OP_CLOSE);
    ops[2].nfs_argop4_u.opclose.open_stateid = f->sid;
    struct cres cr = {0};
    int rc = compound(c, ops, 3, &cr, 0);
    cres_free(&cr);
    *f = s->opens[--s->nopens];
    return rc;
}

/* The least recently used of the open files (there is one at least). */
static struct open_file *lru_open(struct uiw__nfs4c *s)
{
    struct open_file *old = &s->opens[0];
    for (unsigned i = 1; i < s->nopens; i++)
        if (s->opens[i].used < old->used)
            old = &s->opens[i];
    return old;
}

/* Keep the stateid of an OPEN of fh (access: what it opened for). */
static struct open_file *open_keep(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh,
                                   const stateid4 *sid, uint32_t access, const open_delegation4 *dg)
{
    struct uiw__nfs4c *s = c->v4;
    struct open_file *f = open_find(s, fh);
    if (!f) {
        if (s->nopens == OPENS_MAX)
            close_file(c, lru_open(s));
        f = &s->opens[s->nopens++];
        f->fh = *fh;
        f->access = 0;
        f->has_deleg = f->recalled = 0;
    }
    f->sid = *sid;
    f->access |= access;
    f->used = ++s->tick;
    if (dg &&
        (dg->delegation_type == OPEN_DELEGATE_READ || dg->delegation_type == OPEN_DELEGATE_WRITE)) {
        f->deleg = dg->delegation_type == OPEN_DELEGATE_READ ? dg->open_delegation4_u.read.stateid
                                                             : dg->open_delegation4_u.write.stateid;
        f->has_deleg = 1;
        f->recalled = 0;
    }
    return f;
}

/* The open-owner: one per client (its opens are never sent in parallel). */
static void open_owner(struct uiw__nfs4c *s, open_owner4 *o)
{
    static char name[] = "uiw-nfs open";
    o->clientid = s->cid;
    o->owner.owner_len = sizeof(name) - 1;
    o->owner.owner_val = name;
}

static void open_args(struct uiw__nfs4c *s, nfs_argop4 *a, uint32_t access)
{
    op_init(a, OP_OPEN);
    OPEN4args *o = &a->nfs_argop4_u.opopen;
    o->seqid = 0; /* ignored in 4.1 (RFC 8881 section 18.16.3) */
    o->share_access = access | (s->want_deleg ? OPEN4_SHARE_ACCESS_WANT_NO_PREFERENCE
                                              : OPEN4_SHARE_ACCESS_WANT_NO_DELEG);
    o->share_deny = OPEN4_SHARE_DENY_NONE;
    open_owner(s, &o->owner);
}

/* The open stateid of fh for access, opening it (CLAIM_FH) when it is not open so. */
static int open_fh(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, uint32_t access,
                   stateid4 *sid)
{
    struct uiw__nfs4c *s = c->v4;
    struct open_file *f = open_find(s, fh);
    if (f && (f->access & access) == access) {
        f->used = ++s->tick;
        *sid = f->sid;
        return 0;
    }
    if (f)
        access |= f->access; /* an upgrade: the same stateid, for both */
    nfs_argop4 ops[3];
    putfh(&ops[1], fh);
    open_args(s, &ops[2], access);
    ops[2].nfs_argop4_u.opopen.openhow.opentype = OPEN4_NOCREATE;
    ops[2].nfs_argop4_u.opopen.claim.claim = CLAIM_FH;
    struct cres cr = {0};
    int rc = compound(c, ops, 3, &cr, 0);
    if (rc == 0) {
        OPEN4resok *ok = &cr.r.resarray.resarray_val[2].nfs_resop4_u.opopen.OPEN4res_u.resok4;
        *sid = ok->stateid;
        open_keep(c, fh, sid, access, &ok->delegation);
    }
    cres_free(&cr);
    return rc;
}

/* The stateid a READ or WRITE of fh at ops[*n] uses: fh's open stateid when it is open for
 * access, else the current stateid (RFC 8881 section 16.2.3.1.2) of an OPEN (CLAIM_FH, an
 * upgrade when open for less) put before it at ops[*n], so that the file is opened in the
 * same COMPOUND as its first READ or WRITE: one round trip, not two. *open_at: where that
 * OPEN is (0: none), for open_kept. */
static int open_in(struct uiw__nfs_client *c, nfs_argop4 *ops, u_int *n,
                   const struct uiw__nfs_fh *fh, uint32_t *access, stateid4 *sid, u_int *open_at)
{
    struct uiw__nfs4c *s = c->v4;
    struct open_file *f = open_find(s, fh);
    *open_at = 0;
    if (f && (f->access & *access) == *access) {
        f->used = ++s->tick;
        *sid = f->sid;
        sid->seqid = 0; /* the current one, whatever an upgrade made it (RFC 8881 8.2.2) */
        return 0;
    }
    if (*n + 2 > s->maxops) /* a session of so few operations: the OPEN on its own */
        return open_fh(c, fh, *access, sid);
    if (f)
        *access |= f->access;
    open_args(s, &ops[*n], *access);
    ops[*n].nfs_argop4_u.opopen.openhow.opentype = OPEN4_NOCREATE;
    ops[*n].nfs_argop4_u.opopen.claim.claim = CLAIM_FH;
    *open_at = (*n)++;
    memset(sid, 0, sizeof(*sid));
    sid->seqid = 1; /* the current stateid: the OPEN's */
    return 0;
}

/* After a COMPOUND with open_in's OPEN at open_at (0: none): the OPEN kept when it went
 * well, whatever the operations after it did (the server holds it). */
static void open_kept(struct uiw__nfs_client *c, struct cres *cr, u_int open_at,
                      const struct uiw__nfs_fh *fh, uint32_t access)
{
    nfs_resop4 *r = open_at ? res_at(cr, open_at) : NULL;
    if (!r || r->resop != OP_OPEN || r->nfs_resop4_u.opopen.status != NFS4_OK)
        return;
    OPEN4resok *ok = &r->nfs_resop4_u.opopen.OPEN4res_u.resok4;
    open_keep(c, fh, &ok->stateid, access, &ok->delegation);
}

/* With an OPEN of a new file into a full table of open files (open_at set; fh, when it is
 * known, not in the table: an upgrade keeps its place): the CLOSE of the least recently
 * used file (one without a delegation to return first) put at ops[*n] with its PUTFH, in
 * place of open_keep's COMPOUND of its own, when the session takes `after` operations
 * more. *victim: its handle, and *close_at where the CLOSE is (0: none). */
static void close_in(struct uiw__nfs_client *c, nfs_argop4 *ops, u_int *n, u_int open_at,
                     const struct uiw__nfs_fh *fh, u_int after, struct uiw__nfs_fh *victim,
                     u_int *close_at)
{
    struct uiw__nfs4c *s = c->v4;
    *close_at = 0;
    if (!open_at || s->nopens < OPENS_MAX || *n + 2 + after > s->maxops || (fh && open_find(s, fh)))
        return;
    const struct open_file *f = lru_open(s);
    if (f->has_deleg)
        return;
    *victim = f->fh;
    putfh(&ops[*n], victim);
    op_init(&ops[*n + 1], OP_CLOSE);
    ops[*n + 1].nfs_argop4_u.opclose.open_stateid = f->sid;
    *close_at = *n + 1;
    *n += 2;
}

/* After a COMPOUND with close_in's CLOSE at close_at: the file out of the table once the
 * CLOSE ran, whatever it answered (as close_file does). */
static void close_kept(struct uiw__nfs_client *c, struct cres *cr, u_int close_at,
                       const struct uiw__nfs_fh *victim)
{
    struct uiw__nfs4c *s = c->v4;
    struct open_file *f = close_at && res_at(cr, close_at) ? open_find(s, victim) : NULL;
    if (f)
        *f = s->opens[--s->nopens];
}

/* ---- operations ---- */

int uiw__nfs4c_lookup_path(struct uiw__nfs_client *c, const char *path, struct uiw__nfs_fh *fh,
                           fattr3 *attr)
{
    struct uiw__nfs4c *s = c->v4;
    struct uiw__nfs_fh cur = c->root;
    int first = 1;
    /* SEQUENCE, PUTROOTFH or PUTFH, LOOKUPs, GETFH, GETATTR: as many LOOKUPs as the
     * session's operations leave room for, then the next COMPOUND from where it got */
    u_int per = s->maxops > MAXOPS ? MAXOPS - 4 : s->maxops > 4 ? s->maxops - 4 : 1;
    char names[MAXOPS][256];
    for (;;) {
        u_int n = 0;
        while (*path && n < per) {
            while (*path == '/')
                path++;
            size_t len = strcspn(path, "/");
            if (len == 0)
                break;
            if (len >= sizeof(names[0]))
                return -NFS4ERR_NAMETOOLONG;
            memcpy(names[n], path, len);
            names[n][len] = 0;
            path += len;
            n++;
        }
        while (*path == '/')
            path++;
        nfs_argop4 ops[MAXOPS];
        u_int k = 1;
        if (first)
            op_init(&ops[k++], OP_PUTROOTFH);
        else
            putfh(&ops[k++], &cur);
        for (u_int i = 0; i < n; i++) {
            op_init(&ops[k], OP_LOOKUP);
            ops[k].nfs_argop4_u.oplookup.objname.utf8string_len = (u_int)strlen(names[i]);
            ops[k].nfs_argop4_u.oplookup.objname.utf8string_val = names[i];
            k++;
        }
        op_init(&ops[k++], OP_GETFH);
        getattr_op(&ops[k++]);
        struct cres cr = {0};
        int rc = compound(c, ops, k, &cr, 0);
        if (rc == 0)
            rc = fh_out(
                &cur,
                &cr.r.resarray.resarray_val[k - 2].nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object);
        if (rc == 0 && !*path && attr)
            rc = getattr_out(c, &cr.r.resarray.resarray_val[k - 1], attr);
        cres_free(&cr);
        if (rc != 0)
            return rc;
        first = 0;
        if (!*path)
            break;
    }
    *fh = cur;
    return 0;
}

int uiw__nfs4c_lookup(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir, const char *name,
                      struct uiw__nfs_fh *fh, fattr3 *attr)
{
    size_t len = strlen(name);
    if (len > 255)
        return -NFS4ERR_NAMETOOLONG;
    if (len == 0 || strchr(name, '/'))
        return -NFS4ERR_INVAL;
    nfs_argop4 ops[5];
    putfh(&ops[1], dir);
    op_init(&ops[2], OP_LOOKUP);
    ops[2].nfs_argop4_u.oplookup.objname.utf8string_len = (u_int)len;
    ops[2].nfs_argop4_u.oplookup.objname.utf8string_val = (char *)name;
    op_init(&ops[3], OP_GETFH);
    getattr_op(&ops[4]);
    struct cres cr = {0};
    int rc = compound(c, ops, 5, &cr, 0);
    struct uiw__nfs_fh out;
    if (rc == 0)
        rc = fh_out(&out,
                    &cr.r.resarray.resarray_val[3].nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object);
    if (rc == 0)
        rc = getattr_out(c, &cr.r.resarray.resarray_val[4], attr);
    cres_free(&cr);
    if (rc == 0 && fh)
        *fh = out;
    return rc;
}

int uiw__nfs4c_getattr(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, fattr3 *attr)
{
    nfs_argop4 ops[3];
    putfh(&ops[1], fh);
    getattr_op(&ops[2]);
    struct cres cr = {0};
    int rc = compound(c, ops, 3, &cr, 0);
    if (rc == 0)
        rc = getattr_out(c, &cr.r.resarray.resarray_val[2], attr);
    cres_free(&cr);
    return rc;
}

int uiw__nfs4c_setattr(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh,
                       const uint64_t *size, const uint32_t *mode)
{
    nfs_argop4 ops[3];
    putfh(&ops[1], fh);
    op_init(&ops[2], OP_SETATTR);
    SETATTR4args *sa = &ops[2].nfs_argop4_u.opsetattr;
    stateid4 sid;
    memset(&sid, 0, sizeof(sid)); /* the anonymous stateid: no open needed for a mode */
    int rc = 0;
    if (size && (rc = open_fh(c, fh, OPEN4_SHARE_ACCESS_WRITE, &sid)) != 0)
        return rc; /* a size change is a write (RFC 8881 section 18.30.3) */
    sa->stateid = sid;
    uint32_t words[2];
    char buf[16];
    attrs_in(&sa->obj_attributes, words, buf, size, mode);
    struct cres cr = {0};
    rc = compound(c, ops, 3, &cr, 0);
    cres_free(&cr);
    return rc;
}

/* A READ or WRITE of fh (op, its stateid set here) with what open_in and close_in add
 * around it: io_ops builds it, io_done keeps the OPEN and CLOSE's outcome and gives the
 * operation's result. */
struct io4 {
    nfs_argop4 ops[6];
    u_int n, at, io, cl;
    uint32_t access;
    struct uiw__nfs_fh victim;
};

static int io_ops(struct uiw__nfs_client *c, struct io4 *x, const struct uiw__nfs_fh *fh,
                  nfs_opnum4 op, uint32_t access)
{
    stateid4 sid;
    x->n = 2;
    x->access = access;
    putfh(&x->ops[1], fh);
    int rc = open_in(c, x->ops, &x->n, fh, &x->access, &sid, &x->at);
    if (rc != 0)
        return rc;
    x->io = x->n++;
    op_init(&x->ops[x->io], op);
    if (op == OP_READ)
        x->ops[x->io].nfs_argop4_u.opread.stateid = sid;
    else
        x->ops[x->io].nfs_argop4_u.opwrite.stateid = sid;
    close_in(c, x->ops, &x->n, x->at, fh, 0, &x->victim, &x->cl);
    return 0;
}

/* The operation's result when it went well (a CLOSE after it may have failed), or NULL
 * with *rc the COMPOUND's error. */
static nfs_resop4 *io_done(struct uiw__nfs_client *c, struct io4 *x, struct cres *cr,
                           const struct uiw__nfs_fh *fh, int *rc)
{
    close_kept(c, cr, x->cl, &x->victim);
    open_kept(c, cr, x->at, fh, x->access);
    nfs_resop4 *r = res_at(cr, x->io);
    if (r && st_of(r) == NFS4_OK)
        return r;
    if (*rc == 0)
        *rc = -NFS4ERR_SERVERFAULT;
    return NULL;
}

int uiw__nfs4c_read(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, uint64_t off,
                    uint32_t count, void *buf, int *eof)
{
    struct io4 x;
    int rc = io_ops(c, &x, fh, OP_READ, OPEN4_SHARE_ACCESS_READ);
    if (rc != 0)
        return rc;
    READ4args *a = &x.ops[x.io].nfs_argop4_u.opread;
    a->offset = off;
    a->count = count;
    struct cres cr = {0};
    cr.rbuf = buf;
    cr.rcap = count;
    /* over RPC-over-RDMA the data comes by RDMA Write into buf (a Write chunk), or
     * inline when it fits the buffers agreed on (uiw__nfs_call_ddp) */
    rc = compound(c, x.ops, x.n, &cr, 0);
    nfs_resop4 *r = io_done(c, &x, &cr, fh, &rc);
    if (r) {
        if (eof)
            *eof = r->nfs_resop4_u.opread.READ4res_u.resok4.eof;
        rc = (int)cr.rlen;
    }
    cres_free(&cr);
    return rc;
}

int uiw__nfs4c_write(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, uint64_t off,
                     uint32_t count, const void *buf, stable_how stable, char verf[8])
{
    struct io4 x;
    int rc = io_ops(c, &x, fh, OP_WRITE, OPEN4_SHARE_ACCESS_WRITE);
    if (rc != 0)
        return rc;
    WRITE4args *w = &x.ops[x.io].nfs_argop4_u.opwrite;
    w->offset = off;
    w->stable = (stable_how4)stable; /* UNSTABLE4, DATA_SYNC4, FILE_SYNC4: NFSv3's values */
    w->data.data_len = count;
    w->data.data_val = (char *)buf; /* over RPC-over-RDMA a Read chunk of this memory */
    struct cres cr = {0};
    rc = compound(c, x.ops, x.n, &cr, 0);
    nfs_resop4 *r = io_done(c, &x, &cr, fh, &rc);
    if (r) {
        WRITE4resok *ok = &r->nfs_resop4_u.opwrite.WRITE4res_u.resok4;
        if (verf)
            memcpy(verf, ok->writeverf, NFS4_VERIFIER_SIZE);
        rc = ok->count > count ? -NFS4ERR_SERVERFAULT : (int)ok->count;
    }
    cres_free(&cr);
    return rc;
}

int uiw__nfs4c_commit(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, char verf[8])
{
    nfs_argop4 ops[3];
    putfh(&ops[1], fh);
    op_init(&ops[2], OP_COMMIT); /* offset 0, count 0: the whole file */
    struct cres cr = {0};
    int rc = compound(c, ops, 3, &cr, 0);
    if (rc == 0 && verf)
        memcpy(verf,
               cr.r.resarray.resarray_val[2].nfs_resop4_u.opcommit.COMMIT4res_u.resok4.writeverf,
               NFS4_VERIFIER_SIZE);
    cres_free(&cr);
    return rc;
}

/* ---- operations in flight ---- */

/* Whether a delegation waits to be returned: that goes first, by a synchronous call. */
static int recall_pending(const struct uiw__nfs4c *s)
{
    for (unsigned i = 0; i < s->nopens; i++)
        if (s->opens[i].recalled)
            return 1;
    return 0;
}

/* What an ended call's operation gave (its SEQUENCE and PUTFH went well). */
static int acall_result(struct uiw__nfs_client *c, struct acall *q)
{
    struct uiw__nfs_op *op = q->op;
    nfs_resop4 *r = res_at(&q->cr, 2);
    if (!r)
        return -NFS4ERR_SERVERFAULT;
    switch (q->kind) {
    case UIW__NFS4C_GETATTR:
        return getattr_out(c, r, op->out_attr);
    case UIW__NFS4C_READ:
        if (op->out_eof)
            *op->out_eof = r->nfs_resop4_u.opread.READ4res_u.resok4.eof;
        return (int)q->cr.rlen;
    case UIW__NFS4C_WRITE: {
        WRITE4resok *ok = &r->nfs_resop4_u.opwrite.WRITE4res_u.resok4;
        if (op->out_verf)
            memcpy(op->out_verf, ok->writeverf, NFS4_VERIFIER_SIZE);
        return ok->count > op->count ? -NFS4ERR_SERVERFAULT : (int)ok->count;
    }
    }
    return -NFS4ERR_SERVERFAULT;
}

/* A call in flight ended (from the RPC layer's poll, perhaps inside a synchronous call's
 * wait: nothing here sends). Its slot moves on when its SEQUENCE went well; what the
 * synchronous path recovers from (the session, the client record, DELAY, GRACE, a stale
 * stateid, the connection) makes the operation run again that way from uiw__nfs_poll. */
static void acall_done(void *arg, int rc)
{
    struct acall *q = arg;
    struct uiw__nfs_op *op = q->op;
    struct uiw__nfs_client *c = op->c;
    struct uiw__nfs4c *s = c->v4;
    unsigned k = (unsigned)(q - s->calls);
    nfs_resop4 *r0 = rc == 0 ? res_at(&q->cr, 0) : NULL;
    int seq_ok = r0 && st_of(r0) == NFS4_OK;
    /* past a call that ran but whose reply was lost (see compound) too */
    if ((seq_ok || (r0 && st_of(r0) == NFS4ERR_RETRY_UNCACHED_REP)) && q->gen == s->gen) {
        s->seq[k]++;
        s->last_ms = now_ms();
    }
    s->busy &= ~(1ull << (k - 1));
    nfsstat4 st = rc == 0 ? q->cr.r.status : NFS4ERR_IO;
    int again = !seq_ok || q->gen != s->gen || st == NFS4ERR_DELAY || st == NFS4ERR_GRACE ||
                st == NFS4ERR_OLD_STATEID || st == NFS4ERR_BAD_STATEID ||
                st == NFS4ERR_STALE_STATEID || st == NFS4ERR_EXPIRED ||
                st == NFS4ERR_DELEG_REVOKED || st == NFS4ERR_ADMIN_REVOKED;
    int out = again ? 0 : st != NFS4_OK ? -(int)st : acall_result(c, q);
    cres_free(&q->cr);
    uiw__nfs_op_ended(op, out, again);
}

/* op sent on a free slot: 1; 0 when it is to run synchronously; -1 when no slot is free. */
static int acall_send(struct uiw__nfs_client *c, struct uiw__nfs_op *op, enum uiw__nfs4c_kind kind)
{
    struct uiw__nfs4c *s = c->v4;
    if (!s->have_session || s->returning || recall_pending(s))
        return 0;
    /* the lowest free slot: the first bit clear in busy */
    unsigned k = ~s->busy ? (unsigned)__builtin_ctzll(~s->busy) + 1 : SLOTS;
    if (k >= s->nslots)
        return s->nslots > 1 ? -1 : 0;
    stateid4 sid;
    memset(&sid, 0, sizeof(sid));
    if (kind != UIW__NFS4C_GETATTR) {
        uint32_t need =
            kind == UIW__NFS4C_READ ? OPEN4_SHARE_ACCESS_READ : OPEN4_SHARE_ACCESS_WRITE;
        struct open_file *f = open_find(s, &op->fh);
        if (!f || (f->access & need) != need)
            return 0; /* the OPEN first, synchronously */
        f->used = ++s->tick;
        sid = f->sid;
        sid.seqid = 0; /* the current one, whatever an upgrade made it (RFC 8881 8.2.2) */
    }
    struct acall *q = &s->calls[k];
    q->op = op;
    q->kind = kind;
    q->gen = s->gen;
    op_init(&q->ops[0], OP_SEQUENCE);
    SEQUENCE4args *sa = &q->ops[0].nfs_argop4_u.opsequence;
    memcpy(sa->sa_sessionid, s->sid, sizeof(s->sid));
    sa->sa_sequenceid = s->seq[k] + 1;
    sa->sa_slotid = k;
    sa->sa_highest_slotid = s->nslots - 1;
    putfh(&q->ops[1], &op->fh);
    memset(&q->cr, 0, sizeof(q->cr));
    memset(&q->a, 0, sizeof(q->a));
    if (kind == UIW__NFS4C_GETATTR) {
        getattr_op(&q->ops[2]);
    } else if (kind == UIW__NFS4C_READ) {
        op_init(&q->ops[2], OP_READ);
        READ4args *r = &q->ops[2].nfs_argop4_u.opread;
        r->stateid = sid;
        r->offset = op->off;
        r->count = op->count;
        q->cr.rbuf = op->buf; /* the data lands there: a Write chunk, or decoded inline */
        q->cr.rcap = op->count;
        q->a.result_buf = op->buf;
        q->a.result_len = op->count;
    } else {
        op_init(&q->ops[2], OP_WRITE);
        WRITE4args *w = &q->ops[2].nfs_argop4_u.opwrite;
        w->stateid = sid;
        w->offset = op->off;
        w->stable = (stable_how4)op->stable;
        w->data.data_len = op->count;
        w->data.data_val = op->buf; /* a Read chunk of this memory */
    }
    q->cr.ops = q->ops;
    q->cr.nops = 3;
    q->cr.fixed = q->res;
    q->cr.attrs = &q->attrs;
    COMPOUND4args a;
    memset(&a, 0, sizeof(a));
    a.minorversion = (uint32_t)s->minor;
    a.argarray.argarray_len = 3;
    a.argarray.argarray_val = q->ops;
    q->a.done = acall_done;
    q->a.arg = q;
    if (uiw__nfs_call_inflight(c, 1, UIW__XDRPROC(xdr_cargs), &a, UIW__XDRPROC(xdr_cres), &q->cr,
                               &q->a) != 0)
        return 0; /* it runs synchronously instead */
    s->busy |= 1ull << (k - 1);
    return 1;
}

int uiw__nfs4c_op_start(struct uiw__nfs_client *c, struct uiw__nfs_op *op,
                        enum uiw__nfs4c_kind kind)
{
    struct uiw__nfs4c *s = c->v4;
    int r = s->wait_head ? -1 : acall_send(c, op, kind); /* none passes those waiting */
    if (r >= 0)
        return r;
    op->v4_next = NULL;
    *s->wait_tail = op;
    s->wait_tail = &op->v4_next;
    return 1;
}

void uiw__nfs4c_resume(struct uiw__nfs_client *c)
{
    struct uiw__nfs4c *s = c->v4;
    while (s && s->wait_head) {
        struct uiw__nfs_op *op = s->wait_head;
        int r = acall_send(c, op, (enum uiw__nfs4c_kind)op->kind);
        if (r < 0)
            return;
        s->wait_head = op->v4_next;
        if (!s->wait_head)
            s->wait_tail = &s->wait_head;
        if (r == 0)
            uiw__nfs_op_ended(op, 0, 1); /* run synchronously from uiw__nfs_poll */
    }
}

void uiw__nfs4c_idle(struct uiw__nfs_client *c)
{
    if (!c->v4 || !c->v4->have_session)
        return;
    if (c->rebind && c->v4->cb_prog)
        bind_back(c);
    return_recalled(c);
}

int uiw__nfs4c_inflight(const struct uiw__nfs_client *c)
{
    return c->v4 && (c->v4->busy != 0 || c->v4->wait_head);
}

static int name_ok(const char *name)
{
    size_t len = strlen(name);
    if (len > 255)
        return -NFS4ERR_NAMETOOLONG;
    if (len == 0 || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return -NFS4ERR_BADNAME;
    return 0;
}

/* OPEN with create: UNCHECKED4 (a file there is opened and kept), or GUARDED4 when excl
 * (NFS4ERR_EXIST when there is one), with the mode; the file stays open for the WRITEs
 * that follow. */
int uiw__nfs4c_create(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir, const char *name,
                      uint32_t mode, int excl, struct uiw__nfs_fh *fh)
{
    int rc = name_ok(name);
    if (rc != 0)
        return rc;
    struct uiw__nfs4c *s = c->v4;
    nfs_argop4 ops[6];
    struct cres cr = {0};
    u_int n, ca, at;
    /* with the table of open files full, the CLOSE of its least recently used file first
     * in the same COMPOUND (open_keep's COMPOUND of its own otherwise): before the OPEN,
     * which reopens the file if it is that one; a CLOSE refused, the COMPOUND again
     * without it */
    for (int with_close = 1;; with_close = 0) {
        struct uiw__nfs_fh victim;
        n = 1;
        ca = 0;
        if (with_close)
            close_in(c, ops, &n, 1, NULL, 3, &victim, &ca);
        putfh(&ops[n++], dir);
        at = n++;
        open_args(s, &ops[at], OPEN4_SHARE_ACCESS_BOTH);
        OPEN4args *o = &ops[at].nfs_argop4_u.opopen;
        o->openhow.opentype = OPEN4_CREATE;
        createhow4 *how = &o->openhow.openflag4_u.how;
        how->mode = excl ? GUARDED4 : UNCHECKED4;
        uint32_t words[2];
        char buf[16];
        attrs_in(&how->createhow4_u.createattrs, words, buf, NULL, &mode);
        o->claim.claim = CLAIM_NULL;
        o->claim.open_claim4_u.file.utf8string_len = (u_int)strlen(name);
        o->claim.open_claim4_u.file.utf8string_val = (char *)name;
        op_init(&ops[n++], OP_GETFH);
        rc = compound(c, ops, n, &cr, 0);
        close_kept(c, &cr, ca, &victim);
        if (rc == 0 || !ca || !res_at(&cr, ca) || st_of(res_at(&cr, ca)) == NFS4_OK)
            break;
        cres_free(&cr);
    }
    struct uiw__nfs_fh out;
    if (rc == 0)
        rc = fh_out(
            &out,
            &cr.r.resarray.resarray_val[n - 1].nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object);
    if (rc == 0) {
        OPEN4resok *ok = &cr.r.resarray.resarray_val[at].nfs_resop4_u.opopen.OPEN4res_u.resok4;
        open_keep(c, &out, &ok->stateid, OPEN4_SHARE_ACCESS_BOTH, &ok->delegation);
        if (fh)
            *fh = out;
    } else if (res_at(&cr, at) && st_of(res_at(&cr, at)) == NFS4_OK) {
        /* opened, but no handle: nothing to name it by, so closed again */
        OPEN4resok *ok = &cr.r.resarray.resarray_val[at].nfs_resop4_u.opopen.OPEN4res_u.resok4;
        nfs_argop4 cl[3];
        putfh(&cl[1], dir);
        op_init(&cl[2], OP_CLOSE);
        cl[2].nfs_argop4_u.opclose.open_stateid = ok->stateid;
        struct cres cc = {0};
        compound(c, cl, 3, &cc, 0);
        cres_free(&cc);
    }
    cres_free(&cr);
    return rc;
}

int uiw__nfs4c_mkdir(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir, const char *name,
                     uint32_t mode, struct uiw__nfs_fh *fh)
{
    int rc = name_ok(name);
    if (rc != 0)
        return rc;
    nfs_argop4 ops[4];
    putfh(&ops[1], dir);
    op_init(&ops[2], OP_CREATE);
    CREATE4args *ca = &ops[2].nfs_argop4_u.opcreate;
    ca->objtype.type = NF4DIR;
    ca->objname.utf8string_len = (u_int)strlen(name);
    ca->objname.utf8string_val = (char *)name;
    uint32_t words[2];
    char buf[16];
    attrs_in(&ca->createattrs, words, buf, NULL, &mode);
    op_init(&ops[3], OP_GETFH);
    struct cres cr = {0};
    rc = compound(c, ops, 4, &cr, 0);
    if (rc == 0 && fh)
        rc = fh_out(fh,
                    &cr.r.resarray.resarray_val[3].nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object);
    cres_free(&cr);
    return rc;
}

int uiw__nfs4c_remove(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir, const char *name)
{
    int rc = name_ok(name);
    if (rc != 0)
        return rc;
    nfs_argop4 ops[3];
    putfh(&ops[1], dir);
    op_init(&ops[2], OP_REMOVE);
    ops[2].nfs_argop4_u.opremove.target.utf8string_len = (u_int)strlen(name);
    ops[2].nfs_argop4_u.opremove.target.utf8string_val = (char *)name;
    struct cres cr = {0};
    rc = compound(c, ops, 3, &cr, 0);
    cres_free(&cr);
    return rc;
}

int uiw__nfs4c_rename(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fdir, const char *from,
                      const struct uiw__nfs_fh *tdir, const char *to)
{
    int rc = name_ok(from);
    if (rc == 0)
        rc = name_ok(to);
    if (rc != 0)
        return rc;
    nfs_argop4 ops[5];
    putfh(&ops[1], fdir);
    op_init(&ops[2], OP_SAVEFH);
    putfh(&ops[3], tdir);
    op_init(&ops[4], OP_RENAME);
    ops[4].nfs_argop4_u.oprename.oldname.utf8string_len = (u_int)strlen(from);
    ops[4].nfs_argop4_u.oprename.oldname.utf8string_val = (char *)from;
    ops[4].nfs_argop4_u.oprename.newname.utf8string_len = (u_int)strlen(to);
    ops[4].nfs_argop4_u.oprename.newname.utf8string_val = (char *)to;
    struct cres cr = {0};
    rc = compound(c, ops, 5, &cr, 0);
    cres_free(&cr);
    return rc;
}

int uiw__nfs4c_readdir(struct uiw__nfs_client *c, const struct uiw__nfs_fh *dir,
                       uiw__nfs_dirent_fn fn, void *arg)
{
    nfs_argop4 ops[3];
    putfh(&ops[1], dir);
    op_init(&ops[2], OP_READDIR);
    READDIR4args *ra = &ops[2].nfs_argop4_u.opreaddir;
    ra->dircount = READDIR_MAXCOUNT / 2;
    ra->maxcount = READDIR_MAXCOUNT;
    attr_request(&ra->attr_request, 0);
    for (;;) {
        struct cres cr = {0};
        int rc = compound(c, ops, 3, &cr, READDIR_MAXCOUNT + 8192);
        if (rc != 0) {
            cres_free(&cr);
            return rc;
        }
        READDIR4resok *ok =
            &cr.r.resarray.resarray_val[2].nfs_resop4_u.opreaddir.READDIR4res_u.resok4;
        int n = 0;
        char name[256];
        for (entry4 *e = ok->reply.entries; e && rc == 0; e = e->nextentry, n++) {
            fattr3 a;
            int have = attrs_out(c, &e->attrs, &a, NULL) == 0 && e->attrs.attrmask.bitmap4_len;
            u_int len = e->name.utf8string_len;
            if (len == 0 || len >= sizeof(name) || memchr(e->name.utf8string_val, 0, len) ||
                memchr(e->name.utf8string_val, '/', len)) {
                rc = -NFS4ERR_BADNAME; /* a name no file of ours could have */
                break;
            }
            memcpy(name, e->name.utf8string_val, len);
            name[len] = 0;
            rc = fn(arg, name, have ? a.fileid : 0, have ? &a : NULL, NULL);
            ra->cookie = e->cookie;
        }
        memcpy(ra->cookieverf, ok->cookieverf, sizeof(ra->cookieverf));
        int eof = ok->reply.eof;
        cres_free(&cr);
        if (rc != 0)
            return rc;
        if (eof)
            return 0;
        if (n == 0)
            return -NFS4ERR_TOOSMALL;
    }
}

/* ---- locks ---- */

/* LOCK of the range (a new lock-owner from the open stateid): 0 with *lsid, -status. */
static int lock_once(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, const stateid4 *osid,
                     uint64_t off, uint64_t len, stateid4 *lsid)
{
    struct uiw__nfs4c *s = c->v4;
    char owner[64];
    snprintf(owner, sizeof(owner), "uiw-nfs lock %ld", (long)getpid());
    nfs_argop4 ops[3];
    putfh(&ops[1], fh);
    op_init(&ops[2], OP_LOCK);
    LOCK4args *l = &ops[2].nfs_argop4_u.oplock;
    l->locktype = WRITEW_LT; /* a blocking lock's: the server may queue us fairly */
    l->reclaim = 0;
    l->offset = off;
    l->length = len;
    l->locker.new_lock_owner = 1;
    open_to_lock_owner4 *o = &l->locker.locker4_u.open_owner;
    o->open_seqid = 0; /* seqids are the session's business in 4.1 */
    o->open_stateid = *osid;
    o->lock_seqid = 0;
    o->lock_owner.clientid = s->cid;
    o->lock_owner.owner.owner_len = (u_int)strlen(owner);
    o->lock_owner.owner.owner_val = owner;
    struct cres cr = {0};
    int rc = compound(c, ops, 3, &cr, 0);
    if (rc == 0)
        *lsid = cr.r.resarray.resarray_val[2].nfs_resop4_u.oplock.LOCK4res_u.resok4.lock_stateid;
    cres_free(&cr);
    return rc;
}

/* Wait ms, or less when *stop is set. */
static void wait_stop(unsigned ms, volatile sig_atomic_t *stop)
{
    for (unsigned t = 0; t < ms && !*stop; t += 100)
        sleep_ms(ms - t < 100 ? ms - t : 100);
}

int uiw__nfs_lock(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh, uint64_t off,
                  uint64_t len, volatile sig_atomic_t *stop, void (*held)(void *arg), void *arg)
{
    if (c->vers != 4)
        return -NFS4ERR_NOTSUPP;
    struct uiw__nfs4c *s = c->v4;
    if (len == 0)
        len = NFS4_UINT64_MAX; /* to the end of the file, however long it grows */
    stateid4 osid, lsid;
    int rc = open_fh(c, fh, OPEN4_SHARE_ACCESS_BOTH, &osid);
    if (rc != 0)
        return rc;
    unsigned wait = 1000;
    while ((rc = lock_once(c, fh, &osid, off, len, &lsid)) == -NFS4ERR_DENIED) {
        if (c->verbose)
            fprintf(stderr, "uiw-nfs: lock: held by another (NFS4ERR_DENIED): again in %u s\n",
                    wait / 1000);
        wait_stop(wait, stop);
        if (*stop) {
            rc = -EINTR;
            break;
        }
        wait = wait * 2 > 30000 ? 30000 : wait * 2;
    }
    if (rc == 0) {
        held(arg);
        /* nothing else goes to the server meanwhile: a SEQUENCE alone keeps the lease */
        uint64_t every = (uint64_t)s->lease * 1000u / 3u;
        while (!*stop && rc == 0) {
            wait_stop(100, stop);
            if (!*stop && now_ms() - s->last_ms >= every) {
                nfs_argop4 seq[1];
                struct cres cr = {0};
                rc = compound(c, seq, 1, &cr, 0);
                cres_free(&cr);
                if (c->verbose > 1)
                    fprintf(stderr, "uiw-nfs: lease renewed\n");
            }
        }
        nfs_argop4 ops[3];
        putfh(&ops[1], fh);
        op_init(&ops[2], OP_LOCKU);
        LOCKU4args *u = &ops[2].nfs_argop4_u.oplocku;
        u->locktype = WRITE_LT;
        u->seqid = 0;
        u->lock_stateid = lsid;
        u->offset = off;
        u->length = len;
        struct cres cr = {0};
        int ru = compound(c, ops, 3, &cr, 0);
        cres_free(&cr);
        if (rc == 0)
            rc = ru;
    }
    struct open_file *f = open_find(s, fh);
    if (f) {
        int rcl = close_file(c, f);
        if (rc == 0)
            rc = rcl;
    }
    return rc;
}

/* ---- COPY (NFSv4.2) ---- */

int64_t uiw__nfs_copy(struct uiw__nfs_client *c, const struct uiw__nfs_fh *src,
                      const struct uiw__nfs_fh *dst, uint64_t count)
{
    if (c->vers != 4 || c->v4->minor < 2)
        return -NFS4ERR_NOTSUPP;
    stateid4 ssid, dsid;
    int rc = open_fh(c, src, OPEN4_SHARE_ACCESS_READ, &ssid);
    if (rc == 0)
        rc = open_fh(c, dst, OPEN4_SHARE_ACCESS_WRITE, &dsid);
    if (rc != 0)
        return rc;
    uint64_t done = 0;
    int unstable = 0;
    while (done < count) {
        nfs_argop4 ops[5];
        putfh(&ops[1], src);
        op_init(&ops[2], OP_SAVEFH);
        putfh(&ops[3], dst);
        op_init(&ops[4], OP_COPY);
        COPY4args *a = &ops[4].nfs_argop4_u.opcopy;
        a->ca_src_stateid = ssid;
        a->ca_dst_stateid = dsid;
        a->ca_src_offset = done;
        a->ca_dst_offset = done;
        a->ca_count = count - done;
        a->ca_consecutive = 1;
        a->ca_synchronous = 1;
        struct cres cr = {0};
        rc = compound(c, ops, 5, &cr, 0);
        uint64_t n = 0;
        if (rc == 0) {
            write_response4 *w =
                &cr.r.resarray.resarray_val[4].nfs_resop4_u.opcopy.COPY4res_u.cr_resok4.cr_response;
            if (w->wr_callback_id.wr_callback_id_len) {
                /* asked for a synchronous copy: one going on in the background would need
                 * CB_OFFLOAD, which this client does not serve */
                rc = -NFS4ERR_SERVERFAULT;
            } else {
                n = w->wr_count;
                if (w->wr_committed == UNSTABLE4)
                    unstable = 1;
            }
        }
        cres_free(&cr);
        if (rc != 0)
            return rc;
        if (n == 0 || n > count - done)
            return n == 0 ? (int64_t)done : -NFS4ERR_SERVERFAULT; /* the source ended */
        done += n;
    }
    if (unstable && (rc = uiw__nfs4c_commit(c, dst, NULL)) != 0)
        return rc;
    return (int64_t)done;
}

/* ---- the back channel ---- */

/* One operation of a CB_COMPOUND after its CB_SEQUENCE. */
static nfsstat4 cb_op(struct uiw__nfs_client *c, const nfs_cb_argop4 *a)
{
    struct uiw__nfs4c *s = c->v4;
    s->cb_runs++;
    if (a->argop == OP_CB_RECALL_ANY) {
        /* RFC 8881 section 20.6: the delegations beyond craa_objects_to_keep go back
         * (DELEGRETURN before the next COMPOUND) when the mask names delegations */
        const CB_RECALL_ANY4args *ra = &a->nfs_cb_argop4_u.opcbrecall_any;
        uint32_t mask = ra->craa_type_mask.bitmap4_len ? ra->craa_type_mask.bitmap4_val[0] : 0;
        if (!(mask & (1u << RCA4_TYPE_MASK_RDATA_DLG | 1u << RCA4_TYPE_MASK_WDATA_DLG)))
            return NFS4_OK; /* nothing of those types is held */
        uint32_t kept = 0;
        for (unsigned i = 0; i < s->nopens; i++)
            if (s->opens[i].has_deleg && kept++ >= ra->craa_objects_to_keep)
                s->opens[i].recalled = 1;
        return NFS4_OK;
    }
    if (a->argop != OP_CB_RECALL)
        return NFS4ERR_NOTSUPP; /* no layouts, notifications, ... asked for */
    const CB_RECALL4args *r = &a->nfs_cb_argop4_u.opcbrecall;
    for (unsigned i = 0; i < s->nopens; i++) {
        struct open_file *f = &s->opens[i];
        if (f->has_deleg && memcmp(f->deleg.other, r->stateid.other, NFS4_OTHER_SIZE) == 0 &&
            f->fh.len == r->fh.nfs_fh4_len &&
            memcmp(f->fh.data, r->fh.nfs_fh4_val, f->fh.len) == 0) {
            f->recalled = 1; /* DELEGRETURN once this reply has gone */
            return NFS4_OK;
        }
    }
    /* RFC 8881 section 20.2.3: not a delegation this client holds */
    return NFS4ERR_BADHANDLE;
}

static int cb_known(nfs_cb_opnum4 op)
{
    return (op >= OP_CB_GETATTR && op <= OP_CB_NOTIFY_DEVICEID) || op == OP_CB_OFFLOAD;
}

int uiw__nfs4c_cb_compound(struct uiw__nfs_client *c, const CB_COMPOUND4args *a, CB_COMPOUND4res *r)
{
    struct uiw__nfs4c *s = c->v4;
    memset(r, 0, sizeof(*r));
    r->tag = a->tag;
    if (a->minorversion != (uint32_t)s->minor) {
        r->status = NFS4ERR_MINOR_VERS_MISMATCH; /* no results (section 20.9.3) */
        return 0;
    }
    u_int n = a->argarray.argarray_len;
    if (n == 0)
        return 0;
    r->resarray.resarray_val = calloc(n < CB_OPS_MAX ? n : CB_OPS_MAX, sizeof(nfs_cb_resop4));
    if (!r->resarray.resarray_val)
        return -ENOMEM;
    nfs_cb_resop4 *out = r->resarray.resarray_val;
    const nfs_cb_argop4 *op = a->argarray.argarray_val;
    r->resarray.resarray_len = 1;
    out[0].resop = cb_known(op[0].argop) ? op[0].argop : OP_CB_ILLEGAL;
    if (!cb_known(op[0].argop)) {
        r->status = out[0].nfs_cb_resop4_u.opcbillegal.status = NFS4ERR_OP_ILLEGAL;
        return 0;
    }
    if (op[0].argop != OP_CB_SEQUENCE) {
        r->status = NFS4ERR_OP_NOT_IN_SESSION;
        memcpy(&out[0].nfs_cb_resop4_u, &r->status, sizeof(r->status));
        return 0;
    }
    const CB_SEQUENCE4args *sa = &op[0].nfs_cb_argop4_u.opcbsequence;
    CB_SEQUENCE4res *sr = &out[0].nfs_cb_resop4_u.opcbsequence;
    nfsstat4 st = NFS4_OK;
    struct cb_slot *slot = NULL;
    if (!s->have_session || memcmp(sa->csa_sessionid, s->sid, sizeof(s->sid)) != 0)
        st = NFS4ERR_BADSESSION;
    else if (sa->csa_slotid >= CB_SLOTS)
        st = NFS4ERR_BADSLOT;
    else if (n > CB_OPS_MAX)
        st = NFS4ERR_TOO_MANY_OPS;
    else {
        slot = &s->cb[sa->csa_slotid];
        if (sa->csa_sequenceid == slot->seq && slot->done) {
            /* a retry: the first reply again, nothing run twice */
            for (u_int i = 1; i < slot->nres; i++) {
                out[i].resop = slot->op[i];
                memcpy(&out[i].nfs_cb_resop4_u, &slot->st[i], sizeof(slot->st[i]));
            }
            r->resarray.resarray_len = slot->nres;
            r->status = slot->status;
        } else if (sa->csa_sequenceid != slot->seq + 1) {
            st = NFS4ERR_SEQ_MISORDERED;
        }
    }
    sr->csr_status = st;
    if (st != NFS4_OK) {
        r->status = st;
        return 0;
    }
    CB_SEQUENCE4resok *ok = &sr->CB_SEQUENCE4res_u.csr_resok4;
    memcpy(ok->csr_sessionid, s->sid, sizeof(s->sid));
    ok->csr_sequenceid = sa->csa_sequenceid;
    ok->csr_slotid = sa->csa_slotid;
    ok->csr_highest_slotid = CB_SLOTS - 1;
    ok->csr_target_highest_slotid = CB_SLOTS - 1;
    if (sa->csa_sequenceid == slot->seq && slot->done)
        return 0; /* answered from the slot */
    for (u_int i = 1; i < n && r->status == NFS4_OK; i++) {
        nfsstat4 x;
        if (!cb_known(op[i].argop)) {
            out[i].resop = OP_CB_ILLEGAL;
            x = NFS4ERR_OP_ILLEGAL;
        } else {
            out[i].resop = op[i].argop;
            x = op[i].argop == OP_CB_SEQUENCE ? NFS4ERR_SEQUENCE_POS : cb_op(c, &op[i]);
        }
        memcpy(&out[i].nfs_cb_resop4_u, &x, sizeof(x));
        r->resarray.resarray_len = i + 1;
        r->status = x;
    }
    slot->seq = sa->csa_sequenceid;
    slot->done = 1;
    slot->status = r->status;
    slot->nres = r->resarray.resarray_len;
    for (u_int i = 1; i < slot->nres; i++) {
        slot->op[i] = out[i].resop;
        memcpy(&slot->st[i], &out[i].nfs_cb_resop4_u, sizeof(slot->st[i]));
    }
    return 0;
}

int uiw__nfs4c_session(const struct uiw__nfs_client *c, char id[16])
{
    if (!c->v4 || !c->v4->have_session)
        return -1;
    memcpy(id, c->v4->sid, sizeof(c->v4->sid));
    return 0;
}

unsigned uiw__nfs4c_cb_runs(const struct uiw__nfs_client *c)
{
    return c->v4 ? c->v4->cb_runs : 0;
}

unsigned uiw__nfs4c_rebinds(const struct uiw__nfs_client *c)
{
    return c->v4 ? c->v4->rebinds : 0;
}

void uiw__nfs4c_want_deleg(struct uiw__nfs_client *c, int on)
{
    if (c->v4)
        c->v4->want_deleg = on;
}

int uiw__nfs4c_has_deleg(struct uiw__nfs_client *c, const struct uiw__nfs_fh *fh)
{
    const struct open_file *f = c->v4 ? open_find(c->v4, fh) : NULL;
    return f && f->has_deleg;
}

uint32_t uiw__nfs4c_seq_flags(const struct uiw__nfs_client *c)
{
    return c->v4 ? c->v4->seq_flags : 0;
}

uint64_t uiw__nfs4c_clientid(const struct uiw__nfs_client *c)
{
    return c->v4 ? c->v4->cid : 0;
}

#if UIW_NFS_HAVE_RDMA
/* The clients serving a callback program, by its number (NFS4_CALLBACK + index): the
 * dispatch routine is told the program, not the client. cb_lock guards the table and is
 * held through a dispatch, so that a client unregistered (and then freed) is in none. */
#define CB_CLIENTS 64
static pthread_mutex_t cb_lock = PTHREAD_MUTEX_INITIALIZER;
static struct uiw__nfs_client *cb_clients[CB_CLIENTS];

static void cb_dispatch_locked(struct svc_req *rq, SVCXPRT *xprt);

static void cb_dispatch(struct svc_req *rq, SVCXPRT *xprt)
{
    pthread_mutex_lock(&cb_lock);
    cb_dispatch_locked(rq, xprt);
    pthread_mutex_unlock(&cb_lock);
}

static void cb_dispatch_locked(struct svc_req *rq, SVCXPRT *xprt)
{
    uint32_t i = (uint32_t)rq->rq_prog - NFS4_CALLBACK;
    struct uiw__nfs_client *c = i < CB_CLIENTS ? cb_clients[i] : NULL;
    if (!c || !c->v4) {
        svcerr_noprog(xprt);
        return;
    }
    if (rq->rq_proc == CB_NULL) {
        svc_getargs(xprt, UIW__XDRPROC(xdr_void), NULL);
        svc_sendreply(xprt, UIW__XDRPROC(xdr_void), NULL);
        return;
    }
    if (rq->rq_proc != CB_COMPOUND) {
        svcerr_noproc(xprt);
        return;
    }
    CB_COMPOUND4args a;
    memset(&a, 0, sizeof(a));
    if (!svc_getargs(xprt, UIW__XDRPROC(xdr_CB_COMPOUND4args), (caddr_t)&a)) {
        svcerr_decode(xprt);
        return;
    }
    CB_COMPOUND4res r;
    if (uiw__nfs4c_cb_compound(c, &a, &r) != 0)
        svcerr_systemerr(xprt);
    else
        svc_sendreply(xprt, UIW__XDRPROC(xdr_CB_COMPOUND4res), (caddr_t)&r);
    free(r.resarray.resarray_val);
    svc_freeargs(xprt, UIW__XDRPROC(xdr_CB_COMPOUND4args), (caddr_t)&a);
}

/* Serve the callback program on the client's RPC-over-RDMA connection. */
static void cb_register_rdma(struct uiw__nfs_client *c)
{
    pthread_mutex_lock(&cb_lock);
    for (uint32_t i = 0; i < CB_CLIENTS; i++) {
        if (cb_clients[i])
            continue;
        if (uiw_rpc_clnt_bc_register(c->nfs, NFS4_CALLBACK + i, NFS_CB, cb_dispatch) == 0) {
            cb_clients[i] = c;
            c->v4->cb_prog = NFS4_CALLBACK + i;
        }
        break;
    }
    pthread_mutex_unlock(&cb_lock);
}

static void cb_unregister_rdma(struct uiw__nfs_client *c)
{
    pthread_mutex_lock(&cb_lock);
    if (c->v4->cb_prog)
        cb_clients[c->v4->cb_prog - NFS4_CALLBACK] = NULL;
    pthread_mutex_unlock(&cb_lock);
}
#endif

size_t uiw__nfs4c_cb_serve(struct uiw__nfs_client *c, const char *rec, size_t len, char *out,
                           size_t cap)
{
    struct uiw__nfs4c *s = c->v4;
    char cred[MAX_AUTH_BYTES], verf[MAX_AUTH_BYTES];
    struct rpc_msg m;
    memset(&m, 0, sizeof(m));
    m.rm_call.cb_cred.oa_base = cred;
    m.rm_call.cb_verf.oa_base = verf;
    XDR x;
    xdrmem_create(&x, (char *)(uintptr_t)rec, (u_int)len, XDR_DECODE);
    if (!xdr_callmsg(&x, &m)) {
        XDR_DESTROY(&x);
        return 0;
    }
    struct rpc_msg r;
    memset(&r, 0, sizeof(r));
    r.rm_xid = m.rm_xid;
    r.rm_direction = REPLY;
    r.rm_reply.rp_stat = MSG_ACCEPTED;
    r.acpted_rply.ar_verf = _null_auth;
    r.acpted_rply.ar_stat = SUCCESS;
    r.acpted_rply.ar_results.where = NULL;
    r.acpted_rply.ar_results.proc = UIW__XDRPROC(xdr_void);
    CB_COMPOUND4args a;
    CB_COMPOUND4res res;
    memset(&a, 0, sizeof(a));
    memset(&res, 0, sizeof(res));
    int decoding = 0; /* what a decode that failed half way made is freed too */
    if (!s || !s->cb_prog || m.rm_call.cb_prog != s->cb_prog) {
        r.acpted_rply.ar_stat = PROG_UNAVAIL;
    } else if (m.rm_call.cb_vers != NFS_CB) {
        r.acpted_rply.ar_stat = PROG_MISMATCH;
        r.acpted_rply.ar_vers.low = r.acpted_rply.ar_vers.high = NFS_CB;
    } else if (m.rm_call.cb_proc == CB_NULL) {
        /* void: the reply as it is */
    } else if (m.rm_call.cb_proc != CB_COMPOUND) {
        r.acpted_rply.ar_stat = PROC_UNAVAIL;
    } else {
        decoding = 1;
        if (!xdr_CB_COMPOUND4args(&x, &a)) {
            r.acpted_rply.ar_stat = GARBAGE_ARGS;
        } else if (uiw__nfs4c_cb_compound(c, &a, &res) != 0) {
            r.acpted_rply.ar_stat = SYSTEM_ERR;
        } else {
            r.acpted_rply.ar_results.where = (caddr_t)&res;
            r.acpted_rply.ar_results.proc = UIW__XDRPROC(xdr_CB_COMPOUND4res);
        }
    }
    XDR y;
    xdrmem_create(&y, out, (u_int)cap, XDR_ENCODE);
    int ok = xdr_replymsg(&y, &r);
    if (!ok) { /* results larger than the room: the call failed on this side */
        XDR_SETPOS(&y, 0);
        r.acpted_rply.ar_stat = SYSTEM_ERR;
        r.acpted_rply.ar_results.proc = UIW__XDRPROC(xdr_void);
        ok = xdr_replymsg(&y, &r);
    }
    size_t n = ok ? XDR_GETPOS(&y) : 0;
    XDR_DESTROY(&y);
    free(res.resarray.resarray_val);
    x.x_op = XDR_FREE;
    if (decoding)
        xdr_CB_COMPOUND4args(&x, &a);
    XDR_DESTROY(&x);
    return n;
}

static size_t cb_serve_tcp(void *arg, const char *rec, size_t len, char *out, size_t cap)
{
    return uiw__nfs4c_cb_serve(arg, rec, len, out, cap);
}

/* The callback program served on the client's connection: RPC-over-RDMA's backward
 * direction (a program number of its own among the process's clients), or the TCP
 * connection's pipe (the connection is this client's alone). */
static void cb_register(struct uiw__nfs_client *c)
{
    if (!c->rdma) {
        if (c->pipe) {
            c->v4->cb_prog = NFS4_CALLBACK;
            uiw__nfs_pipe_serve(c->pipe, cb_serve_tcp, c);
        }
        return;
    }
#if UIW_NFS_HAVE_RDMA
    cb_register_rdma(c);
#endif
}

static void cb_unregister(struct uiw__nfs_client *c)
{
    if (!c->rdma) {
        if (c->pipe)
            uiw__nfs_pipe_serve(c->pipe, NULL, NULL);
        return;
    }
#if UIW_NFS_HAVE_RDMA
    cb_unregister_rdma(c);
#endif
}

/* ---- the end ---- */

void uiw__nfs4c_stop(struct uiw__nfs_client *c)
{
    struct uiw__nfs4c *s = c->v4;
    if (!s)
        return;
    while (s->busy) /* the calls in flight end first: they use what is freed below */
        if (uiw__nfs_xprt_poll(c, 1000) < 0)
            break;
    if (s->have_session) {
        while (s->nopens)
            close_file(c, &s->opens[s->nopens - 1]);
        nfs_argop4 a;
        op_init(&a, OP_DESTROY_SESSION);
        memcpy(a.nfs_argop4_u.opdestroy_session.dsa_sessionid, s->sid, sizeof(s->sid));
        struct cres cr = {0};
        alone(c, &a, &cr);
        cres_free(&cr);
        s->have_session = 0;
    }
    if (s->cid) {
        nfs_argop4 a;
        op_init(&a, OP_DESTROY_CLIENTID);
        a.nfs_argop4_u.opdestroy_clientid.dca_clientid = s->cid;
        struct cres cr = {0};
        int rc = alone(c, &a, &cr);
        cres_free(&cr);
        if (c->verbose)
            fprintf(stderr, "uiw-nfs: DESTROY_SESSION, DESTROY_CLIENTID: %s\n",
                    rc == 0 ? "done" : uiw__nfs_errtext(c, rc));
    }
    cb_unregister(c);
    free(s);
    c->v4 = NULL;
}
