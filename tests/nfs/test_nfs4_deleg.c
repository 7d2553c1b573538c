/*
 * uiw-nfsd's NFSv4.1 read delegations (src/nfs/nfs4deleg.c) between raw test clients: a
 * client whose back channel works (a second connection bound to its session for
 * callbacks, whose calls the test answers) gets one on OPEN for reading; a client
 * without a back channel, or that refuses one, gets none. Another client's OPEN for
 * writing, REMOVE, or an NFSv3 WRITE is answered NFS4ERR_DELAY (NFS3ERR_JUKEBOX) and
 * sends CB_RECALL once with the delegation's stateid and handle; after DELEGRETURN the
 * retry goes through. A holder that leaves the recall unanswered has it revoked after a
 * lease: SEQUENCE says so and TEST_STATEID answers NFS4ERR_DELEG_REVOKED until
 * FREE_STATEID. The project's client (uiw-nfs put over NFSv4.1) waits out the recall
 * of a file it rewrites. A holder's lock stateids live beside its delegation, each freed
 * by its own rule.
 */
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nfs/nfs4cb.h"
#include "nfs/nfsd.h"
#include "nfs/server.h"
#include "nfs/xdr_data.h"
#include "nfs4.h"
#include "nfs4_util.h"
#include "rawrpc.h"
#include "run.h"
#include "test.h"

#define CB_PROG 0x40000000u

/* What an OPEN gave: the open's stateid, the delegation (its type, stateid, why none),
 * the file's handle and its directory's (the export's root). */
struct opened {
    stateid4 sid;
    open_delegation_type4 dtype;
    stateid4 dsid;
    uint32_t why;
    u_int fhlen, dirlen;
    char fh[UIW__NFS_FH_MAX], dir[UIW__NFS_FH_MAX];
};

static void res_free(COMPOUND4res *res)
{
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)res);
}

static uint32_t cb_answer_rec(int bfd, char *r, size_t n, CB_RECALL4args *rc, nfsstat4 st);
static uint32_t cb_answer(int bfd, CB_RECALL4args *rc);

/* A client of the server with a session whose back channel is a second connection
 * (*bfd), bound with BIND_CONN_TO_SESSION after BACKCHANNEL_CTL named AUTH_NONE; its
 * CB_NULL probe answered (it may come before BIND_CONN_TO_SESSION's reply). */

static void client_bc(struct t4 *t, const struct srv *v, const char *owner, int *bfd)
{
    t4_open(t, v, NULL);
    t->owner = owner;
    session(t, 16);
    nfs_argop4 a[2];
    COMPOUND4res res;
    next_seq(t, &a[0]);
    op(&a[1], OP_BACKCHANNEL_CTL);
    callback_sec_parms4 none;
    memset(&none, 0, sizeof(none));
    none.cb_secflavor = AUTH_NONE;
    a[1].nfs_argop4_u.opbackchannel_ctl.bca_cb_program = CB_PROG;
    a[1].nfs_argop4_u.opbackchannel_ctl.bca_sec_parms.bca_sec_parms_len = 1;
    a[1].nfs_argop4_u.opbackchannel_ctl.bca_sec_parms.bca_sec_parms_val = &none;
    compound(t, a, 2, &res);
    CHECK_EQ(res.status, NFS4_OK);
    res_free(&res);
    CHECK(!uiw__nfs4_cb_client_up(v->s->nfs4, t->cid));

    *bfd = tcp_to(v->tcp);
    op(&a[0], OP_BIND_CONN_TO_SESSION);
    memcpy(a[0].nfs_argop4_u.opbind_conn_to_session.bctsa_sessid, t->sid, sizeof(t->sid));
    a[0].nfs_argop4_u.opbind_conn_to_session.bctsa_dir = CDFC4_BACK;
    char ops[256], rec[4 + 512 + 512]; /* call_header takes 512 bytes */
    size_t olen = enc_ops(ops, sizeof(ops), a, 1);
    size_t hl = call_header(rec + 4, 0x5151, 100003, 4, 1, AUTH_SYS);
    size_t len = hl + raw_args(rec + 4 + hl, sizeof(rec) - 4 - hl, 1, 1, ops, olen);
    uint32_t mark = htonl(0x80000000u | (uint32_t)len);
    memcpy(rec, &mark, 4);
    send_all(*bfd, rec, 4 + len);
    int probed = 0;
    for (;;) {
        size_t n;
        char *r = recv_record(*bfd, &n);
        uint32_t mtype;
        CHECK(n >= 8);
        memcpy(&mtype, r + 4, 4);
        if (mtype == 0) { /* the server's CALL: its probe */
            CHECK_EQ(cb_answer_rec(*bfd, r, n, NULL, NFS4_OK), 0);
            probed = 1;
            continue;
        }
        struct rpc_msg m;
        memset(&res, 0, sizeof(res));
        decode_reply(r, n, 0x5151, &m, UIW__XDRPROC(xdr_COMPOUND4res), &res);
        free(r);
        CHECK_EQ(res.status, NFS4_OK);
        res_free(&res);
        break;
    }
    if (!probed)
        CHECK_EQ(cb_answer(*bfd, NULL), 0);
    for (int i = 0; i < 500 && !uiw__nfs4_cb_client_up(v->s->nfs4, t->cid); i++)
        usleep(10000);
    CHECK(uiw__nfs4_cb_client_up(v->s->nfs4, t->cid));
}

/* A client without a back channel. */
static void client_plain(struct t4 *t, const struct srv *v, const char *owner)
{
    t4_open(t, v, NULL);
    t->owner = owner;
    session(t, 16);
}

static uint32_t get32(const char *r, size_t n, size_t *at)
{
    CHECK(*at + 4 <= n);
    uint32_t x;
    memcpy(&x, r + *at, 4);
    *at += 4;
    return ntohl(x);
}

/* The server's next call on the back channel bfd (within 5 s), answered: CB_NULL, or a
 * CB_COMPOUND of CB_SEQUENCE and CB_RECALL (its arguments copied into *rc: free them
 * with xdr_free), CB_SEQUENCE NFS4_OK and CB_RECALL st. Its procedure. */
static uint32_t cb_answer_st(int bfd, CB_RECALL4args *rc, nfsstat4 st)
{
    struct pollfd pf = {bfd, POLLIN, 0};
    CHECK_EQ(poll(&pf, 1, 5000), 1);
    size_t n;
    char *r = recv_record(bfd, &n);
    return cb_answer_rec(bfd, r, n, rc, st);
}

/* The same, CB_RECALL answered NFS4_OK. */
static uint32_t cb_answer(int bfd, CB_RECALL4args *rc)
{
    return cb_answer_st(bfd, rc, NFS4_OK);
}

/* The same for the call r (n bytes, read already; freed). */
static uint32_t cb_answer_rec(int bfd, char *r, size_t n, CB_RECALL4args *rc, nfsstat4 st)
{
    size_t at = 0;
    uint32_t xid = get32(r, n, &at);
    CHECK_EQ(get32(r, n, &at), 0); /* CALL */
    CHECK_EQ(get32(r, n, &at), 2);
    CHECK_EQ(get32(r, n, &at), CB_PROG);
    CHECK_EQ(get32(r, n, &at), 1);
    uint32_t proc = get32(r, n, &at);
    for (int i = 0; i < 2; i++) { /* credential (AUTH_NONE, as BACKCHANNEL_CTL said), verifier */
        CHECK_EQ(get32(r, n, &at), AUTH_NONE);
        CHECK_EQ(get32(r, n, &at), 0);
    }
    char out[1024];
    uint32_t hdr[6] = {htonl(xid), htonl(1), 0, 0, 0, 0}; /* REPLY, accepted, SUCCESS */
    memcpy(out, hdr, sizeof(hdr));
    size_t len = sizeof(hdr);
    if (proc == 1) {
        CB_COMPOUND4args args;
        memset(&args, 0, sizeof(args));
        XDR x;
        xdrmem_create(&x, r + at, (u_int)(n - at), XDR_DECODE);
        CHECK(xdr_CB_COMPOUND4args(&x, &args));
        xdr_destroy(&x);
        CHECK_EQ(args.argarray.argarray_len, 2);
        nfs_cb_argop4 *ops = args.argarray.argarray_val;
        CHECK_EQ(ops[0].argop, OP_CB_SEQUENCE);
        CHECK_EQ(ops[1].argop, OP_CB_RECALL);
        const CB_SEQUENCE4args *sa = &ops[0].nfs_cb_argop4_u.opcbsequence;
        nfs_cb_resop4 ro[2];
        memset(ro, 0, sizeof(ro));
        ro[0].resop = OP_CB_SEQUENCE;
        CB_SEQUENCE4resok *ok = &ro[0].nfs_cb_resop4_u.opcbsequence.CB_SEQUENCE4res_u.csr_resok4;
        memcpy(ok->csr_sessionid, sa->csa_sessionid, NFS4_SESSIONID_SIZE);
        ok->csr_sequenceid = sa->csa_sequenceid;
        ok->csr_slotid = sa->csa_slotid;
        ok->csr_highest_slotid = sa->csa_highest_slotid;
        ok->csr_target_highest_slotid = sa->csa_highest_slotid;
        ro[1].resop = OP_CB_RECALL;
        ro[1].nfs_cb_resop4_u.opcbrecall.status = st;
        CB_COMPOUND4res cres;
        memset(&cres, 0, sizeof(cres));
        cres.status = st;
        cres.resarray.resarray_len = 2;
        cres.resarray.resarray_val = ro;
        xdrmem_create(&x, out + len, (u_int)(sizeof(out) - len), XDR_ENCODE);
        CHECK(xdr_CB_COMPOUND4res(&x, &cres));
        len += xdr_getpos(&x);
        xdr_destroy(&x);
        CHECK(rc != NULL);
        *rc = ops[1].nfs_cb_argop4_u.opcbrecall;
        memset(&ops[1].nfs_cb_argop4_u.opcbrecall, 0, sizeof(*rc)); /* now rc's */
        xdr_free(UIW__XDRPROC(xdr_CB_COMPOUND4args), (char *)&args);
    }
    uint32_t mark = htonl(0x80000000u | (uint32_t)len);
    send_all(bfd, &mark, 4);
    send_all(bfd, out, len);
    free(r);
    return proc;
}

/* Nothing more comes on the back channel for ms. */
static void cb_quiet(int bfd, int ms)
{
    struct pollfd pf = {bfd, POLLIN, 0};
    CHECK_EQ(poll(&pf, 1, ms), 0);
}

/* OPEN of `name` in the export's root (share: access and want bits; CLAIM_NULL, no
 * create): its status, and what it gave in *o. */
static nfsstat4 open_at(struct t4 *t, const char *name, uint32_t share, struct opened *o)
{
    nfs_argop4 a[5];
    next_seq(t, &a[0]);
    op(&a[1], OP_PUTROOTFH);
    op(&a[2], OP_GETFH);
    op(&a[3], OP_OPEN);
    OPEN4args *oa = &a[3].nfs_argop4_u.opopen;
    oa->share_access = share;
    oa->owner.clientid = t->cid;
    oa->owner.owner.owner_len = 5;
    oa->owner.owner.owner_val = (char *)(uintptr_t) "owner";
    oa->openhow.opentype = OPEN4_NOCREATE;
    oa->claim.claim = CLAIM_NULL;
    oa->claim.open_claim4_u.file.utf8string_len = (u_int)strlen(name);
    oa->claim.open_claim4_u.file.utf8string_val = (char *)(uintptr_t)name;
    op(&a[4], OP_GETFH);
    COMPOUND4res res;
    compound(t, a, 5, &res);
    nfsstat4 st = res.status;
    memset(o, 0, sizeof(*o));
    if (st == NFS4_OK) {
        OPEN4resok *ok = &res.resarray.resarray_val[3].nfs_resop4_u.opopen.OPEN4res_u.resok4;
        o->sid = ok->stateid;
        o->dtype = ok->delegation.delegation_type;
        if (o->dtype == OPEN_DELEGATE_READ) {
            open_read_delegation4 *rd = &ok->delegation.open_delegation4_u.read;
            o->dsid = rd->stateid;
            CHECK_EQ(rd->recall, FALSE);
            CHECK_EQ(rd->permissions.type, ACE4_ACCESS_ALLOWED_ACE_TYPE);
            CHECK_EQ(rd->permissions.access_mask, 0);
            CHECK_EQ(rd->permissions.who.utf8string_len, 0);
        }
        if (o->dtype == OPEN_DELEGATE_NONE_EXT)
            o->why = ok->delegation.open_delegation4_u.od_whynone.ond_why;
        nfs_fh4 *fh = &res.resarray.resarray_val[4].nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;
        o->fhlen = fh->nfs_fh4_len;
        memcpy(o->fh, fh->nfs_fh4_val, fh->nfs_fh4_len);
        fh = &res.resarray.resarray_val[2].nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;
        o->dirlen = fh->nfs_fh4_len;
        memcpy(o->dir, fh->nfs_fh4_val, fh->nfs_fh4_len);
    }
    res_free(&res);
    return st;
}

/* SEQUENCE, PUTFH of o's file, then x (NULL: none): the COMPOUND's status (its results
 * in *res when not NULL: free them with res_free). */
static nfsstat4 on_file(struct t4 *t, const struct opened *o, nfs_argop4 *x, COMPOUND4res *out)
{
    nfs_argop4 a[3];
    next_seq(t, &a[0]);
    op(&a[1], OP_PUTFH);
    a[1].nfs_argop4_u.opputfh.object.nfs_fh4_len = o->fhlen;
    a[1].nfs_argop4_u.opputfh.object.nfs_fh4_val = (char *)(uintptr_t)o->fh;
    if (x)
        a[2] = *x;
    COMPOUND4res res;
    compound(t, a, x ? 3 : 2, &res);
    nfsstat4 st = res.status;
    if (out)
        *out = res;
    else
        res_free(&res);
    return st;
}

static nfsstat4 delegreturn(struct t4 *t, const struct opened *o)
{
    nfs_argop4 x;
    op(&x, OP_DELEGRETURN);
    x.nfs_argop4_u.opdelegreturn.deleg_stateid = o->dsid;
    return on_file(t, o, &x, NULL);
}

/* TEST_STATEID of o's delegation: its status for it. */
static nfsstat4 test_deleg(struct t4 *t, const struct opened *o)
{
    nfs_argop4 x;
    op(&x, OP_TEST_STATEID);
    stateid4 sid = o->dsid;
    x.nfs_argop4_u.optest_stateid.ts_stateids.ts_stateids_len = 1;
    x.nfs_argop4_u.optest_stateid.ts_stateids.ts_stateids_val = &sid;
    COMPOUND4res res;
    CHECK_EQ(on_file(t, o, &x, &res), NFS4_OK);
    TEST_STATEID4resok *ok =
        &res.resarray.resarray_val[2].nfs_resop4_u.optest_stateid.TEST_STATEID4res_u.tsr_resok4;
    CHECK_EQ(ok->tsr_status_codes.tsr_status_codes_len, 1);
    nfsstat4 st = ok->tsr_status_codes.tsr_status_codes_val[0];
    res_free(&res);
    return st;
}

/* SEQUENCE's sr_status_flags (the lease renewed), with a PUTFH of o's file. */
static uint32_t seq_status(struct t4 *t, const struct opened *o)
{
    COMPOUND4res res;
    CHECK_EQ(on_file(t, o, NULL, &res), NFS4_OK);
    SEQUENCE4res *sr = &res.resarray.resarray_val[0].nfs_resop4_u.opsequence;
    uint32_t f = sr->SEQUENCE4res_u.sr_resok4.sr_status_flags;
    res_free(&res);
    return f;
}

/* The CB_RECALL's arguments are o's delegation and handle (not to truncate). */
static void check_recall(CB_RECALL4args *rc, const struct opened *o)
{
    CHECK_EQ(rc->stateid.seqid, o->dsid.seqid);
    CHECK(memcmp(rc->stateid.other, o->dsid.other, NFS4_OTHER_SIZE) == 0);
    CHECK_EQ(rc->truncate, FALSE);
    CHECK_EQ(rc->fh.nfs_fh4_len, o->fhlen);
    CHECK(memcmp(rc->fh.nfs_fh4_val, o->fh, o->fhlen) == 0);
    xdr_free(UIW__XDRPROC(xdr_CB_RECALL4args), (char *)rc);
}

static struct uiw__nfsd_deleg_counts dcounts(const struct srv *v)
{
    struct uiw__nfsd_deleg_counts n;
    CHECK_EQ(uiw__nfsd_deleg_counts(v->s, &n), 0);
    return n;
}

/* An NFSv3 call of proc with args: its NFS status. */
static uint32_t v3_call(const struct srv *v, uint32_t proc, xdrproc_t xargs, void *args)
{
    char buf[512];
    XDR x;
    xdrmem_create(&x, buf, sizeof(buf), XDR_ENCODE);
    CHECK(xargs(&x, args));
    size_t alen = xdr_getpos(&x), n;
    xdr_destroy(&x);
    int fd = tcp_to(v->tcp);
    static uint32_t xid = 0x3300; /* each a new call, not a retry the server replays */
    char *r = call_raw(fd, ++xid, 100003, 3, proc, AUTH_SYS, buf, alen, &n);
    uint32_t st = nfs_status(r, n);
    free(r);
    close(fd);
    return st;
}

/* An NFSv3 WRITE of o's file (its handle is NFSv3's too): the NFS status. */
static uint32_t v3_write(const struct srv *v, const struct opened *o)
{
    WRITE3args a;
    memset(&a, 0, sizeof(a));
    a.file.data.data_len = o->fhlen;
    a.file.data.data_val = (char *)(uintptr_t)o->fh;
    a.count = 3;
    a.stable = FILE_SYNC;
    a.data.data_len = 3;
    a.data.data_val = (char *)(uintptr_t) "new";
    return v3_call(v, NFSPROC3_WRITE, (xdrproc_t)xdr_WRITE3args, &a);
}

/* A server with NFSv4 (lease: seconds, 0 for the default; delegations off when off),
 * its export open to the calls' uid 1000, with the file "f". */
static void start(struct srv *v, unsigned lease, int off)
{
    struct uiw__nfsd_opts o;
    uiw__nfsd_opts_default(&o);
    o.nfs4 = 1;
    o.lease_time = lease;
    o.no_delegations = off;
    srv_start(v, &o);
    CHECK_EQ(chmod(v->dir, 0777), 0);
    put_file(v, "f", "hello", 5);
    CHECK_EQ(chmod(path_in(v, "f"), 0666), 0);
}

/* The server (as start), the holder c1 (its back channel b1) with a read delegation of
 * "f" (o1), and c2 without a back channel. */
static void setup(struct srv *v, unsigned lease, struct t4 *c1, int *b1, struct opened *o1,
                  struct t4 *c2)
{
    start(v, lease, 0);
    client_bc(c1, v, "deleg-holder", b1);
    client_plain(c2, v, "deleg-other");
    CHECK_EQ(open_at(c1, "f", OPEN4_SHARE_ACCESS_READ, o1), NFS4_OK);
    CHECK_EQ(o1->dtype, OPEN_DELEGATE_READ);
}

static void teardown(struct srv *v, struct t4 *c1, int b1, struct t4 *c2)
{
    close(b1);
    t4_close(c1);
    t4_close(c2);
    srv_stop(v);
}

TEST(nfs4_deleg_recall_on_open)
{
    /* a read delegation for the client with a back channel; none for the one without */
    struct srv v;
    struct t4 c1, c2;
    int b1;
    struct opened o1, o2, og;
    setup(&v, 0, &c1, &b1, &o1, &c2);
    put_file(&v, "g", "x", 1);
    CHECK(memcmp(o1.dsid.other, o1.sid.other, NFS4_OTHER_SIZE) != 0);
    CHECK_EQ(open_at(&c2, "f", OPEN4_SHARE_ACCESS_READ, &o2), NFS4_OK);
    CHECK_EQ(o2.dtype, OPEN_DELEGATE_NONE);
    /* refused by the client: none, and why */
    CHECK_EQ(open_at(&c1, "g", OPEN4_SHARE_ACCESS_READ | OPEN4_SHARE_ACCESS_WANT_NO_DELEG, &og),
             NFS4_OK);
    CHECK_EQ(og.dtype, OPEN_DELEGATE_NONE_EXT);
    CHECK_EQ(og.why, WND4_NOT_WANTED);
    /* a second OPEN of the holder: the one it holds, no other */
    CHECK_EQ(open_at(&c1, "f", OPEN4_SHARE_ACCESS_READ, &og), NFS4_OK);
    CHECK_EQ(og.dtype, OPEN_DELEGATE_NONE);

    /* another client opens for writing: NFS4ERR_DELAY, and the holder is recalled once */
    CHECK_EQ(open_at(&c2, "f", OPEN4_SHARE_ACCESS_BOTH, &o2), NFS4ERR_DELAY);
    CB_RECALL4args rc;
    CHECK_EQ(cb_answer(b1, &rc), 1);
    check_recall(&rc, &o1);
    CHECK_EQ(open_at(&c2, "f", OPEN4_SHARE_ACCESS_BOTH, &o2), NFS4ERR_DELAY);
    cb_quiet(b1, 200);
    CHECK_EQ(dcounts(&v).recalled, 1);

    /* the holder still reads through it, and opens under it */
    nfs_argop4 x;
    op(&x, OP_READ);
    x.nfs_argop4_u.opread.stateid = o1.dsid;
    x.nfs_argop4_u.opread.count = 100;
    COMPOUND4res res;
    CHECK_EQ(on_file(&c1, &o1, &x, &res), NFS4_OK);
    CHECK_EQ(res.resarray.resarray_val[2].nfs_resop4_u.opread.READ4res_u.resok4.data.data_len, 5);
    res_free(&res);
    op(&x, OP_OPEN);
    x.nfs_argop4_u.opopen.share_access = OPEN4_SHARE_ACCESS_READ;
    x.nfs_argop4_u.opopen.owner.clientid = c1.cid;
    x.nfs_argop4_u.opopen.owner.owner.owner_len = 2;
    x.nfs_argop4_u.opopen.owner.owner.owner_val = (char *)(uintptr_t) "o2";
    x.nfs_argop4_u.opopen.claim.claim = CLAIM_DELEG_CUR_FH;
    x.nfs_argop4_u.opopen.claim.open_claim4_u.oc_delegate_stateid = o1.dsid;
    CHECK_EQ(on_file(&c1, &o1, &x, NULL), NFS4_OK);
    /* another client cannot open under it */
    CHECK_EQ(on_file(&c2, &o1, &x, NULL), NFS4ERR_BAD_STATEID);
    /* the reclaim of a delegation: not supported, as knfsd */
    x.nfs_argop4_u.opopen.claim.claim = CLAIM_DELEG_PREV_FH;
    CHECK_EQ(on_file(&c1, &o1, &x, NULL), NFS4ERR_NOTSUPP);

    /* DELEGRETURN: the writer's retry goes through; a second one is no stateid */
    CHECK_EQ(delegreturn(&c1, &o1), NFS4_OK);
    CHECK_EQ(delegreturn(&c1, &o1), NFS4ERR_BAD_STATEID);
    CHECK_EQ(open_at(&c2, "f", OPEN4_SHARE_ACCESS_BOTH, &o2), NFS4_OK);
    CHECK_EQ(o2.dtype, OPEN_DELEGATE_NONE);
    /* the file open for writing by another client: no delegation now */
    CHECK_EQ(open_at(&c1, "f", OPEN4_SHARE_ACCESS_READ, &og), NFS4_OK);
    CHECK_EQ(og.dtype, OPEN_DELEGATE_NONE);

    struct uiw__nfsd_deleg_counts n = dcounts(&v);
    CHECK_EQ(n.granted, 1);
    CHECK_EQ(n.recalled, 1);
    CHECK_EQ(n.returned, 1);
    CHECK_EQ(n.revoked, 0);
    struct uiw__nfsd_cb_counts cb;
    CHECK_EQ(uiw__nfsd_cb_counts(v.s, &cb), 0);
    CHECK_EQ(cb.recalls, 1);
    teardown(&v, &c1, b1, &c2);
}

TEST(nfs4_deleg_recall_v3_write_and_remove)
{
    struct srv v;
    struct t4 c1, c2;
    int b1;
    struct opened o1;
    setup(&v, 0, &c1, &b1, &o1, &c2);

    /* NFSv3 WRITE: NFS3ERR_JUKEBOX until the delegation is back, one recall */
    CHECK_EQ(v3_write(&v, &o1), NFS3ERR_JUKEBOX);
    CB_RECALL4args rc;
    CHECK_EQ(cb_answer(b1, &rc), 1);
    check_recall(&rc, &o1);
    CHECK_EQ(v3_write(&v, &o1), NFS3ERR_JUKEBOX);
    cb_quiet(b1, 200);
    CHECK_EQ(delegreturn(&c1, &o1), NFS4_OK);
    CHECK_EQ(v3_write(&v, &o1), NFS3_OK);

    /* delegated again: with the file's descriptor for writing in the open-file cache now
     * (the WRITE above), a WRITE still waits for the delegation, and recalls it */
    CHECK_EQ(open_at(&c1, "f", OPEN4_SHARE_ACCESS_READ, &o1), NFS4_OK);
    CHECK_EQ(o1.dtype, OPEN_DELEGATE_READ);
    CHECK_EQ(v3_write(&v, &o1), NFS3ERR_JUKEBOX);
    CHECK_EQ(cb_answer(b1, &rc), 1);
    check_recall(&rc, &o1);
    CHECK_EQ(delegreturn(&c1, &o1), NFS4_OK);
    CHECK_EQ(v3_write(&v, &o1), NFS3_OK);

    /* delegated again; another client's REMOVE of its name recalls it */
    CHECK_EQ(open_at(&c1, "f", OPEN4_SHARE_ACCESS_READ, &o1), NFS4_OK);
    CHECK_EQ(o1.dtype, OPEN_DELEGATE_READ);
    nfs_argop4 a[3];
    COMPOUND4res res;
    next_seq(&c2, &a[0]);
    op(&a[1], OP_PUTROOTFH);
    op(&a[2], OP_REMOVE);
    a[2].nfs_argop4_u.opremove.target.utf8string_len = 1;
    a[2].nfs_argop4_u.opremove.target.utf8string_val = (char *)(uintptr_t) "f";
    compound(&c2, a, 3, &res);
    CHECK_EQ(res.status, NFS4ERR_DELAY);
    res_free(&res);
    CHECK_EQ(cb_answer(b1, &rc), 1);
    check_recall(&rc, &o1);
    CHECK_EQ(delegreturn(&c1, &o1), NFS4_OK);
    next_seq(&c2, &a[0]);
    compound(&c2, a, 3, &res);
    CHECK_EQ(res.status, NFS4_OK);
    res_free(&res);

    struct uiw__nfsd_deleg_counts n = dcounts(&v);
    CHECK_EQ(n.granted, 3);
    CHECK_EQ(n.recalled, 3);
    CHECK_EQ(n.returned, 3);
    CHECK_EQ(n.revoked, 0);
    teardown(&v, &c1, b1, &c2);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

TEST(nfs4_deleg_revoked_after_lease)
{
    struct srv v;
    struct t4 c1, c2;
    int b1;
    struct opened o1, o2;
    setup(&v, 10, &c1, &b1, &o1, &c2);

    /* the holder answers CB_RECALL and keeps the delegation: revoked a lease later */
    double t0 = now_s();
    CHECK_EQ(open_at(&c2, "f", OPEN4_SHARE_ACCESS_WRITE, &o2), NFS4ERR_DELAY);
    CB_RECALL4args rc;
    CHECK_EQ(cb_answer(b1, &rc), 1);
    check_recall(&rc, &o1);
    nfsstat4 st = NFS4ERR_DELAY;
    while (st == NFS4ERR_DELAY && now_s() - t0 < 20) {
        usleep(500000);
        seq_status(&c1, &o1); /* the holder's lease renewed: it is there, it just keeps it */
        st = open_at(&c2, "f", OPEN4_SHARE_ACCESS_WRITE, &o2);
    }
    CHECK_EQ(st, NFS4_OK);
    CHECK(now_s() - t0 >= 9.5);
    CHECK_EQ(dcounts(&v).revoked, 1);

    /* the holder is told, until it frees the stateid */
    CHECK_EQ(seq_status(&c1, &o1), SEQ4_STATUS_RECALLABLE_STATE_REVOKED);
    CHECK_EQ(test_deleg(&c1, &o1), NFS4ERR_DELEG_REVOKED);
    CHECK_EQ(delegreturn(&c1, &o1), NFS4ERR_DELEG_REVOKED);
    nfs_argop4 x;
    op(&x, OP_FREE_STATEID);
    x.nfs_argop4_u.opfree_stateid.fsa_stateid = o1.dsid;
    CHECK_EQ(on_file(&c1, &o1, &x, NULL), NFS4_OK);
    CHECK_EQ(seq_status(&c1, &o1), 0);
    CHECK_EQ(test_deleg(&c1, &o1), NFS4ERR_BAD_STATEID);
    struct uiw__nfsd_deleg_counts n = dcounts(&v);
    CHECK_EQ(n.recalled, 1);
    CHECK_EQ(n.returned, 0);
    teardown(&v, &c1, b1, &c2);
}

TEST(nfs4_deleg_off)
{
    struct srv v;
    start(&v, 0, 1);
    struct t4 c1;
    int b1;
    client_bc(&c1, &v, "deleg-none", &b1);
    struct opened o1;
    CHECK_EQ(open_at(&c1, "f", OPEN4_SHARE_ACCESS_READ | OPEN4_SHARE_ACCESS_WANT_READ_DELEG, &o1),
             NFS4_OK);
    CHECK_EQ(o1.dtype, OPEN_DELEGATE_NONE_EXT);
    CHECK_EQ(o1.why, WND4_CONTENTION);
    CHECK_EQ(dcounts(&v).granted, 0);
    close(b1);
    t4_close(&c1);
    srv_stop(&v);
}

/* The holder of a delegation, in a thread of its own: it answers the recall, then
 * returns the delegation. */
struct holder {
    struct t4 *c;
    int bfd;
    const struct opened *o;
};

static void *hold_then_return(void *arg)
{
    struct holder *h = arg;
    CB_RECALL4args rc;
    CHECK_EQ(cb_answer(h->bfd, &rc), 1);
    check_recall(&rc, h->o);
    CHECK_EQ(delegreturn(h->c, h->o), NFS4_OK);
    return NULL;
}

TEST(nfs4_deleg_recalled_by_uiw_nfs_put)
{
    struct srv v;
    struct t4 c1, c2;
    int b1;
    struct opened o1;
    setup(&v, 0, &c1, &b1, &o1, &c2);
    struct holder h = {&c1, b1, &o1};
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, hold_then_return, &h), 0);
    char local[] = "/tmp/uiw-deleg-put.XXXXXX", url[600];
    int fd = mkstemp(local);
    CHECK(fd >= 0);
    CHECK_EQ(write(fd, "rewritten\n", 10), 10);
    close(fd);
    /* the one export is the root of the NFSv4 namespace */
    snprintf(url, sizeof(url), "nfs://127.0.0.1:%d/f?version=4.1", v.tcp);
    const char *argv[] = {"uiw-nfs", "put", local, url, NULL};
    struct tool_run r;
    tool_run(UIW_NFS, argv, NULL, 0, 60, &r);
    CHECK_EQ(pthread_join(th, NULL), 0);
    unlink(local);
    CHECK_EQ(r.status, 0);
    tool_run_free(&r);
    char got[32] = "";
    FILE *f = fopen(path_in(&v, "f"), "r");
    CHECK(f != NULL);
    CHECK_EQ(fread(got, 1, sizeof(got) - 1, f), 10);
    fclose(f);
    CHECK(strcmp(got, "rewritten\n") == 0);
    struct uiw__nfsd_deleg_counts n = dcounts(&v);
    CHECK_EQ(n.recalled, 1);
    CHECK_EQ(n.returned, 1);
    CHECK_EQ(n.revoked, 0);
    teardown(&v, &c1, b1, &c2);
}

/* ---- each other change that recalls ---- */

/* A change by the other client (c2) or over NFSv3 of the file `name` in the export's
 * root (root: the root's handle, o: the file's): its status. */
struct change {
    const char *what, *name; /* the file it changes, which the holder opens first */
    uint32_t (*run)(const struct srv *v, struct t4 *c2, const struct opened *root,
                    const struct opened *o);
    uint32_t wait; /* its answer while the delegation is out */
};

static uint32_t v4_setattr_size(const struct srv *v, struct t4 *c2, const struct opened *root,
                                const struct opened *o)
{
    nfs_argop4 x;
    op(&x, OP_SETATTR);
    uint32_t mask = 1u << FATTR4_SIZE;
    char zero[8] = {0};
    x.nfs_argop4_u.opsetattr.obj_attributes.attrmask.bitmap4_len = 1;
    x.nfs_argop4_u.opsetattr.obj_attributes.attrmask.bitmap4_val = &mask;
    x.nfs_argop4_u.opsetattr.obj_attributes.attr_vals.attrlist4_len = 8;
    x.nfs_argop4_u.opsetattr.obj_attributes.attr_vals.attrlist4_val = zero;
    return on_file(c2, o, &x, NULL); /* the anonymous stateid */
}

static uint32_t v4_rename(const struct srv *v, struct t4 *c2, const struct opened *root,
                          const struct opened *o)
{
    nfs_argop4 x;
    op(&x, OP_RENAME);
    x.nfs_argop4_u.oprename.oldname.utf8string_len = 1;
    x.nfs_argop4_u.oprename.oldname.utf8string_val = (char *)(uintptr_t) "f";
    x.nfs_argop4_u.oprename.newname.utf8string_len = 1;
    x.nfs_argop4_u.oprename.newname.utf8string_val = (char *)(uintptr_t) "g";
    nfs_argop4 a[5];
    next_seq(c2, &a[0]);
    op(&a[1], OP_PUTROOTFH);
    op(&a[2], OP_SAVEFH);
    op(&a[3], OP_PUTROOTFH);
    a[4] = x;
    COMPOUND4res res;
    compound(c2, a, 5, &res);
    nfsstat4 st = res.status;
    res_free(&res);
    return st;
}

static uint32_t v3_setattr(const struct srv *v, struct t4 *c2, const struct opened *root,
                           const struct opened *o)
{
    SETATTR3args a;
    memset(&a, 0, sizeof(a));
    a.object.data.data_len = o->fhlen;
    a.object.data.data_val = (char *)(uintptr_t)o->fh;
    a.new_attributes.size.set_it = 1; /* as a writer may (uid 1000, the file 0666) */
    return v3_call(v, NFSPROC3_SETATTR, (xdrproc_t)xdr_SETATTR3args, &a);
}

static diropargs3 in_root(const struct opened *root, const char *name)
{
    diropargs3 d;
    d.dir.data.data_len = root->fhlen;
    d.dir.data.data_val = (char *)(uintptr_t)root->fh;
    d.name = (char *)(uintptr_t)name;
    return d;
}

static uint32_t v3_rename(const struct srv *v, struct t4 *c2, const struct opened *root,
                          const struct opened *o)
{
    RENAME3args a = {in_root(root, "g"), in_root(root, "f")};
    return v3_call(v, NFSPROC3_RENAME, (xdrproc_t)xdr_RENAME3args, &a);
}

static uint32_t v3_remove(const struct srv *v, struct t4 *c2, const struct opened *root,
                          const struct opened *o)
{
    REMOVE3args a = {in_root(root, "f")};
    return v3_call(v, NFSPROC3_REMOVE, (xdrproc_t)xdr_REMOVE3args, &a);
}

TEST(nfs4_deleg_recalled_by_each_change)
{
    struct srv v;
    struct t4 c1, c2;
    int b1;
    struct opened o1, root;
    setup(&v, 0, &c1, &b1, &o1, &c2);
    CHECK_EQ(delegreturn(&c1, &o1), NFS4_OK);
    /* the root's handle (for NFSv3's directory operations) */
    root.fhlen = o1.dirlen;
    memcpy(root.fh, o1.dir, o1.dirlen);

    static const struct change changes[] = {
        {"SETATTR of the size", "f", v4_setattr_size, NFS4ERR_DELAY},
        {"RENAME f g", "f", v4_rename, NFS4ERR_DELAY},
        {"NFSv3 SETATTR", "g", v3_setattr, NFS3ERR_JUKEBOX},
        {"NFSv3 RENAME g f", "g", v3_rename, NFS3ERR_JUKEBOX},
        {"NFSv3 REMOVE f", "f", v3_remove, NFS3ERR_JUKEBOX},
    };
    unsigned n = sizeof(changes) / sizeof(changes[0]);
    for (unsigned i = 0; i < n; i++) {
        const struct change *ch = &changes[i];
        fprintf(stderr, "%s\n", ch->what);
        struct opened o;
        CHECK_EQ(open_at(&c1, ch->name, OPEN4_SHARE_ACCESS_READ, &o), NFS4_OK);
        CHECK_EQ(o.dtype, OPEN_DELEGATE_READ);
        CHECK_EQ(ch->run(&v, &c2, &root, &o), ch->wait);
        CB_RECALL4args rc;
        CHECK_EQ(cb_answer(b1, &rc), 1);
        check_recall(&rc, &o);
        CHECK_EQ(delegreturn(&c1, &o), NFS4_OK);
        CHECK_EQ(ch->run(&v, &c2, &root, &o), 0);
    }
    /* the holder's own change recalls nothing */
    put_file(&v, "h", "x", 1);
    CHECK_EQ(chmod(path_in(&v, "h"), 0666), 0);
    CHECK_EQ(open_at(&c1, "h", OPEN4_SHARE_ACCESS_READ, &o1), NFS4_OK);
    CHECK_EQ(o1.dtype, OPEN_DELEGATE_READ);
    CHECK_EQ(v4_setattr_size(&v, &c1, &root, &o1), NFS4_OK);
    cb_quiet(b1, 200);
    struct uiw__nfsd_deleg_counts k = dcounts(&v);
    CHECK_EQ(k.granted, 2 + n);
    CHECK_EQ(k.recalled, n);
    CHECK_EQ(k.returned, 1 + n);
    teardown(&v, &c1, b1, &c2);
}

TEST(nfs4_deleg_revoked_when_recall_fails)
{
    struct srv v;
    struct t4 c1, c2;
    int b1;
    struct opened o1, o2;
    setup(&v, 0, &c1, &b1, &o1, &c2);
    /* the holder answers CB_RECALL with an error: it will not return it, so it is revoked
     * now, not a lease later */
    CHECK_EQ(open_at(&c2, "f", OPEN4_SHARE_ACCESS_WRITE, &o2), NFS4ERR_DELAY);
    CB_RECALL4args rc;
    CHECK_EQ(cb_answer_st(b1, &rc, NFS4ERR_BADHANDLE), 1);
    check_recall(&rc, &o1);
    nfsstat4 st = NFS4ERR_DELAY;
    for (int i = 0; i < 100 && st == NFS4ERR_DELAY; i++) {
        usleep(20000); /* the reply is handled on a server thread */
        st = open_at(&c2, "f", OPEN4_SHARE_ACCESS_WRITE, &o2);
    }
    CHECK_EQ(st, NFS4_OK);
    CHECK_EQ(seq_status(&c1, &o1), SEQ4_STATUS_RECALLABLE_STATE_REVOKED);
    CHECK_EQ(test_deleg(&c1, &o1), NFS4ERR_DELEG_REVOKED);
    struct uiw__nfsd_deleg_counts n = dcounts(&v);
    CHECK_EQ(n.recalled, 1);
    CHECK_EQ(n.revoked, 1);
    CHECK_EQ(n.returned, 0);
    teardown(&v, &c1, b1, &c2);
}

/* FREE_STATEID of sid on o's file: its status. */
static nfsstat4 free_sid(struct t4 *t, const struct opened *o, const stateid4 *sid)
{
    nfs_argop4 x;
    op(&x, OP_FREE_STATEID);
    x.nfs_argop4_u.opfree_stateid.fsa_stateid = *sid;
    return on_file(t, o, &x, NULL);
}

/* LOCK (lo: a new lock-owner's, from the open stateid *sid; NULL: *sid the lock
 * stateid) or LOCKU (unlock) of the first 4 bytes of o's file: its status, the lock
 * stateid given in *sid. */
static nfsstat4 lock_4(struct t4 *t, const struct opened *o, stateid4 *sid, const char *lo,
                       int unlock)
{
    nfs_argop4 x;
    if (unlock) {
        op(&x, OP_LOCKU);
        x.nfs_argop4_u.oplocku =
            (LOCKU4args){.locktype = READ_LT, .lock_stateid = *sid, .length = 4};
    } else {
        op(&x, OP_LOCK);
        LOCK4args *l = &x.nfs_argop4_u.oplock;
        *l = (LOCK4args){.locktype = READ_LT, .length = 4};
        l->locker.new_lock_owner = lo != NULL;
        if (lo) {
            l->locker.locker4_u.open_owner.open_stateid = *sid;
            l->locker.locker4_u.open_owner.lock_owner.clientid = t->cid;
            l->locker.locker4_u.open_owner.lock_owner.owner.owner_len = (u_int)strlen(lo);
            l->locker.locker4_u.open_owner.lock_owner.owner.owner_val = (char *)(uintptr_t)lo;
        } else {
            l->locker.locker4_u.lock_owner.lock_stateid = *sid;
        }
    }
    COMPOUND4res res;
    nfsstat4 st = on_file(t, o, &x, &res);
    nfs_resop4 *r = &res.resarray.resarray_val[2];
    if (st == NFS4_OK)
        *sid = unlock ? r->nfs_resop4_u.oplocku.LOCKU4res_u.lock_stateid
                      : r->nfs_resop4_u.oplock.LOCK4res_u.resok4.lock_stateid;
    res_free(&res);
    return st;
}

TEST(nfs4_deleg_and_locks)
{
    /* the holder of a delegation locks the file through its open too: each stateid
     * kind keeps its own FREE_STATEID rule, and the client's end frees them all */
    struct srv v;
    struct t4 c1, c2;
    int b1;
    struct opened o1;
    setup(&v, 0, &c1, &b1, &o1, &c2);
    stateid4 lk = o1.sid;
    CHECK_EQ(lock_4(&c1, &o1, &lk, "locker", 0), NFS4_OK);
    CHECK(memcmp(lk.other, o1.sid.other, NFS4_OTHER_SIZE) != 0);
    CHECK(memcmp(lk.other, o1.dsid.other, NFS4_OTHER_SIZE) != 0);
    CHECK_EQ(test_deleg(&c1, &o1), NFS4_OK);
    CHECK_EQ(free_sid(&c1, &o1, &o1.dsid), NFS4ERR_LOCKS_HELD);
    CHECK_EQ(free_sid(&c1, &o1, &o1.sid), NFS4ERR_LOCKS_HELD);
    CHECK_EQ(free_sid(&c1, &o1, &lk), NFS4ERR_LOCKS_HELD);
    /* a lock stateid is no delegation's, nor a delegation an open's to lock from */
    struct opened bad = o1;
    bad.dsid = lk;
    CHECK_EQ(delegreturn(&c1, &bad), NFS4ERR_BAD_STATEID);
    stateid4 ds = o1.dsid;
    CHECK_EQ(lock_4(&c1, &o1, &ds, "other", 0), NFS4ERR_BAD_STATEID);

    /* unlocked, the lock stateid is freed; the delegation and the open go on */
    CHECK_EQ(lock_4(&c1, &o1, &lk, NULL, 1), NFS4_OK);
    CHECK_EQ(free_sid(&c1, &o1, &lk), NFS4_OK);
    bad.dsid = lk;
    CHECK_EQ(test_deleg(&c1, &bad), NFS4ERR_BAD_STATEID);
    CHECK_EQ(test_deleg(&c1, &o1), NFS4_OK);

    /* locked again, then its client goes with its open, lock and delegation */
    lk = o1.sid;
    CHECK_EQ(lock_4(&c1, &o1, &lk, "locker", 0), NFS4_OK);
    CHECK_EQ(dcounts(&v).granted, 1);
    teardown(&v, &c1, b1, &c2);
}
