/*
 * uiw-nfsd's NFSv4.1 back channel (src/nfs/nfs4cb.c) over raw TCP: a test client that
 * reads the server's calls (CB_NULL, CB_COMPOUND) from the connection it sends its own
 * COMPOUNDs on and answers them. CREATE_SESSION with CONN_BACK_CHAN gets a CB_NULL probe;
 * a CB_RECALL started through the server's API (as a delegation recall will) comes as
 * CB_SEQUENCE then CB_RECALL with the back channel's slot and seqid, and its result
 * reaches the API's completion; a lost connection makes SEQUENCE say CB_PATH_DOWN until
 * BIND_CONN_TO_SESSION binds another, on which the unanswered call goes again with the
 * same slot and seqid; unanswered calls time out; replies to nothing are dropped;
 * BACKCHANNEL_CTL changes the program and flavor; RPCSEC_GSS alone is refused. A capture
 * of the exchange decodes in tshark's NFS CB dissector.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "interop.h"
#include "io/pcap.h"
#include "nfs/nfs4cb.h"
#include "nfs/nfs4state.h"
#include "nfs/server.h"
#include "nfs/xdr_data.h"
#include "nfs4.h"
#include "nfs_util.h"
#include "rawrpc.h"
#include "test.h"

#define CB_PROG 0x40000000u

/* A client of one session, over connection fd. */
struct cbt {
    struct srv v;
    int fd;
    uint32_t xid;
    clientid4 cid;
    sessionid4 sid;
    uint32_t seq; /* slot 0's last seqid */
    /* calls of the server read while waiting for a reply */
    char *calls[8];
    size_t clen[8];
    unsigned ncalls;
    struct uiw__pcap *pc; /* both directions' records, for tshark (NULL: none) */
};

/* A record (its mark first) into the capture: from the client (1) or the server (0). */
static void cap(struct cbt *t, int from_client, const char *rec, size_t len, int marked)
{
    if (!t->pc)
        return;
    uint32_t mark = htonl(0x80000000u | (uint32_t)len);
    struct iovec iov[2] = {{&mark, 4}, {(char *)(uintptr_t)rec, len}};
    if (marked)
        uiw__pcap_data(t->pc, from_client, iov + 1, 1, len);
    else
        uiw__pcap_data(t->pc, from_client, iov, 2, 4 + len);
}

static uint32_t word(const char *r, size_t n, size_t at)
{
    CHECK(at + 4 <= n);
    uint32_t v;
    memcpy(&v, r + at, 4);
    return ntohl(v);
}

/* One call of ours; the server's calls that come before its reply are kept for next_call.
 * The reply's results decoded with xres into res. */
static void call(struct cbt *t, uint32_t proc, xdrproc_t xargs, void *args, xdrproc_t xres,
                 void *res)
{
    char rec[16384];
    uint32_t xid = ++t->xid;
    size_t hl = call_header(rec + 4, xid, 100003, 4, proc, AUTH_SYS);
    XDR x;
    xdrmem_create(&x, rec + 4 + hl, (u_int)(sizeof(rec) - 4 - hl), XDR_ENCODE);
    CHECK(xargs(&x, args));
    size_t len = hl + xdr_getpos(&x);
    xdr_destroy(&x);
    uint32_t mark = htonl(0x80000000u | (uint32_t)len);
    memcpy(rec, &mark, 4);
    send_all(t->fd, rec, 4 + len);
    cap(t, 1, rec, 4 + len, 1);
    for (;;) {
        size_t n;
        char *r = recv_record(t->fd, &n);
        cap(t, 0, r, n, 0);
        if (word(r, n, 4) == 0) { /* a CALL: the server's */
            CHECK(t->ncalls < 8);
            t->calls[t->ncalls] = r;
            t->clen[t->ncalls++] = n;
            continue;
        }
        struct rpc_msg m;
        decode_reply(r, n, xid, &m, xres, res);
        CHECK_EQ(m.rm_reply.rp_stat, MSG_ACCEPTED);
        CHECK_EQ(m.acpted_rply.ar_stat, SUCCESS);
        free(r);
        return;
    }
}

static void compound(struct cbt *t, nfs_argop4 *ops, unsigned n, COMPOUND4res *res)
{
    COMPOUND4args a;
    memset(&a, 0, sizeof(a));
    a.minorversion = 1;
    a.argarray.argarray_len = n;
    a.argarray.argarray_val = ops;
    memset(res, 0, sizeof(*res));
    call(t, 1, UIW__XDRPROC(xdr_COMPOUND4args), &a, UIW__XDRPROC(xdr_COMPOUND4res), res);
}

static void op(nfs_argop4 *a, nfs_opnum4 n)
{
    memset(a, 0, sizeof(*a));
    a->argop = n;
}

static nfsstat4 st_of(const nfs_resop4 *r)
{
    nfsstat4 st;
    memcpy(&st, &r->nfs_resop4_u, sizeof(st));
    return st;
}

static void freeres(COMPOUND4res *res)
{
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)res);
}

/* EXCHANGE_ID, then CREATE_SESSION with `flags` and the callback flavors sec (n); its
 * status, and the session in t when NFS4_OK. */
static nfsstat4 session(struct cbt *t, const char *owner, uint32_t flags, callback_sec_parms4 *sec,
                        u_int nsec, CREATE_SESSION4resok *out)
{
    nfs_argop4 a;
    op(&a, OP_EXCHANGE_ID);
    EXCHANGE_ID4args *ea = &a.nfs_argop4_u.opexchange_id;
    memcpy(ea->eia_clientowner.co_verifier, "verf0001", NFS4_VERIFIER_SIZE);
    ea->eia_clientowner.co_ownerid.co_ownerid_len = (u_int)strlen(owner);
    ea->eia_clientowner.co_ownerid.co_ownerid_val = (char *)(uintptr_t)owner;
    ea->eia_state_protect.spa_how = SP4_NONE;
    COMPOUND4res res;
    compound(t, &a, 1, &res);
    CHECK_EQ(res.status, NFS4_OK);
    EXCHANGE_ID4resok *er =
        &res.resarray.resarray_val[0].nfs_resop4_u.opexchange_id.EXCHANGE_ID4res_u.eir_resok4;
    t->cid = er->eir_clientid;
    uint32_t csseq = er->eir_sequenceid;
    freeres(&res);

    op(&a, OP_CREATE_SESSION);
    CREATE_SESSION4args *ca = &a.nfs_argop4_u.opcreate_session;
    ca->csa_clientid = t->cid;
    ca->csa_sequence = csseq;
    ca->csa_flags = flags;
    channel_attrs4 fore = {0, 65536, 65536, 4096, 8, 16, {0, NULL}};
    channel_attrs4 back = {0, 4096, 4096, 0, 2, 4, {0, NULL}};
    ca->csa_fore_chan_attrs = fore;
    ca->csa_back_chan_attrs = back;
    ca->csa_cb_program = CB_PROG;
    ca->csa_sec_parms.csa_sec_parms_len = nsec;
    ca->csa_sec_parms.csa_sec_parms_val = sec;
    compound(t, &a, 1, &res);
    nfsstat4 st = res.status;
    if (st == NFS4_OK) {
        CREATE_SESSION4resok *cr =
            &res.resarray.resarray_val[0]
                 .nfs_resop4_u.opcreate_session.CREATE_SESSION4res_u.csr_resok4;
        memcpy(t->sid, cr->csr_sessionid, sizeof(t->sid));
        t->seq = 0;
        if (out)
            *out = *cr;
    }
    freeres(&res);
    return st;
}

static callback_sec_parms4 sys_sec(void)
{
    callback_sec_parms4 s;
    memset(&s, 0, sizeof(s));
    s.cb_secflavor = AUTH_SYS;
    s.callback_sec_parms4_u.cbsp_sys_cred.stamp = 5;
    s.callback_sec_parms4_u.cbsp_sys_cred.machinename = (char *)(uintptr_t) "cbtest";
    s.callback_sec_parms4_u.cbsp_sys_cred.uid = 7;
    s.callback_sec_parms4_u.cbsp_sys_cred.gid = 8;
    return s;
}

/* SEQUENCE alone on slot 0: its sr_status_flags. */
static uint32_t seq_flags(struct cbt *t)
{
    nfs_argop4 a;
    op(&a, OP_SEQUENCE);
    SEQUENCE4args *s = &a.nfs_argop4_u.opsequence;
    memcpy(s->sa_sessionid, t->sid, sizeof(t->sid));
    s->sa_sequenceid = ++t->seq;
    COMPOUND4res res;
    compound(t, &a, 1, &res);
    CHECK_EQ(res.status, NFS4_OK);
    uint32_t f = res.resarray.resarray_val[0]
                     .nfs_resop4_u.opsequence.SEQUENCE4res_u.sr_resok4.sr_status_flags;
    freeres(&res);
    return f;
}

/* SEQUENCE's flags, asked until they are `want` (the server sees a closed connection
 * a moment after it closes). */
static void flags_become(struct cbt *t, uint32_t want)
{
    uint32_t f = 0;
    for (int i = 0; i < 100 && (f = seq_flags(t)) != want; i++)
        usleep(20000);
    CHECK_EQ(f, want);
}

/* BIND_CONN_TO_SESSION of t's connection: its status, the direction granted in *dir. */
static nfsstat4 bind_conn(struct cbt *t, const char *sid, channel_dir_from_client4 d,
                          channel_dir_from_server4 *dir)
{
    nfs_argop4 a;
    op(&a, OP_BIND_CONN_TO_SESSION);
    BIND_CONN_TO_SESSION4args *b = &a.nfs_argop4_u.opbind_conn_to_session;
    memcpy(b->bctsa_sessid, sid, NFS4_SESSIONID_SIZE);
    b->bctsa_dir = d;
    COMPOUND4res res;
    compound(t, &a, 1, &res);
    nfsstat4 st = res.status;
    if (st == NFS4_OK) {
        BIND_CONN_TO_SESSION4resok *r =
            &res.resarray.resarray_val[0]
                 .nfs_resop4_u.opbind_conn_to_session.BIND_CONN_TO_SESSION4res_u.bctsr_resok4;
        CHECK(memcmp(r->bctsr_sessid, sid, NFS4_SESSIONID_SIZE) == 0);
        CHECK_EQ(r->bctsr_use_conn_in_rdma_mode, FALSE);
        *dir = r->bctsr_dir;
    }
    freeres(&res);
    return st;
}

/* A call of the server's, as read. */
struct cbcall {
    char *rec;
    size_t len;
    uint32_t xid, prog, vers, proc, flavor;
    CB_COMPOUND4args args; /* proc 1 */
};

/* The server's next call (one kept by `call`, or read now, within 5 s). */
static void next_call(struct cbt *t, struct cbcall *c)
{
    memset(c, 0, sizeof(*c));
    if (t->ncalls) {
        c->rec = t->calls[0];
        c->len = t->clen[0];
        t->ncalls--;
        memmove(t->calls, t->calls + 1, t->ncalls * sizeof(t->calls[0]));
        memmove(t->clen, t->clen + 1, t->ncalls * sizeof(t->clen[0]));
    } else {
        struct pollfd pf = {t->fd, POLLIN, 0};
        CHECK(poll(&pf, 1, 5000) == 1);
        c->rec = recv_record(t->fd, &c->len);
        cap(t, 0, c->rec, c->len, 0);
    }
    XDR x;
    xdrmem_create(&x, c->rec, (u_int)c->len, XDR_DECODE);
    uint32_t mtype, rpcvers, clen, vflavor, vlen;
    CHECK(xdr_uint32_t(&x, &c->xid) && xdr_uint32_t(&x, &mtype) && xdr_uint32_t(&x, &rpcvers));
    CHECK_EQ(mtype, 0);
    CHECK_EQ(rpcvers, 2);
    CHECK(xdr_uint32_t(&x, &c->prog) && xdr_uint32_t(&x, &c->vers) && xdr_uint32_t(&x, &c->proc));
    CHECK(xdr_uint32_t(&x, &c->flavor) && xdr_uint32_t(&x, &clen));
    if (c->flavor == AUTH_SYS) {
        authsys_parms4 p;
        memset(&p, 0, sizeof(p));
        CHECK(xdr_authsys_parms4(&x, &p));
        CHECK(strcmp(p.machinename, "cbtest") == 0);
        CHECK_EQ(p.uid, 7);
        CHECK_EQ(p.gid, 8);
        xdr_free(UIW__XDRPROC(xdr_authsys_parms4), (char *)&p);
    } else {
        CHECK_EQ(clen, 0);
    }
    CHECK(xdr_uint32_t(&x, &vflavor) && xdr_uint32_t(&x, &vlen));
    CHECK_EQ(vflavor, AUTH_NONE);
    CHECK_EQ(vlen, 0);
    CHECK_EQ(c->vers, 1);
    if (c->proc == 1) {
        CHECK(xdr_CB_COMPOUND4args(&x, &c->args));
        CHECK_EQ(c->args.minorversion, 1);
    }
    CHECK_EQ(xdr_getpos(&x), c->len);
    xdr_destroy(&x);
}

static void call_free(struct cbcall *c)
{
    xdr_free(UIW__XDRPROC(xdr_CB_COMPOUND4args), (char *)&c->args);
    free(c->rec);
}

/* A reply to the server's call xid: accept_stat st, then the results (res: NULL for
 * none). */
static void reply(struct cbt *t, uint32_t xid, uint32_t st, xdrproc_t xres, void *res)
{
    char rec[4096];
    XDR x;
    xdrmem_create(&x, rec + 4, sizeof(rec) - 4, XDR_ENCODE);
    uint32_t one = 1, zero = 0;
    CHECK(xdr_uint32_t(&x, &xid) && xdr_uint32_t(&x, &one) && xdr_uint32_t(&x, &zero) &&
          xdr_uint32_t(&x, &zero) && xdr_uint32_t(&x, &zero) && xdr_uint32_t(&x, &st));
    if (res)
        CHECK(xres(&x, res));
    uint32_t len = xdr_getpos(&x), mark = htonl(0x80000000u | len);
    xdr_destroy(&x);
    memcpy(rec, &mark, 4);
    send_all(t->fd, rec, 4 + len);
    cap(t, 1, rec, 4 + len, 1);
}

/* CB_NULL next, answered. */
static void answer_probe(struct cbt *t)
{
    struct cbcall c;
    next_call(t, &c);
    CHECK_EQ(c.prog, CB_PROG);
    CHECK_EQ(c.proc, 0);
    reply(t, c.xid, SUCCESS, NULL, NULL);
    call_free(&c);
}

/* The CB_COMPOUND's CB_SEQUENCE checked (slot, seqid, the session) and answered with
 * CB_SEQUENCE's status sst and the second operation's status st. */
static void answer_compound(struct cbt *t, struct cbcall *c, uint32_t slot, uint32_t seqid,
                            nfsstat4 sst, nfsstat4 st)
{
    CHECK_EQ(c->proc, 1);
    CHECK_EQ(c->args.argarray.argarray_len, 2);
    nfs_cb_argop4 *a = c->args.argarray.argarray_val;
    CHECK_EQ(a[0].argop, OP_CB_SEQUENCE);
    CB_SEQUENCE4args *s = &a[0].nfs_cb_argop4_u.opcbsequence;
    CHECK(memcmp(s->csa_sessionid, t->sid, NFS4_SESSIONID_SIZE) == 0);
    CHECK_EQ(s->csa_slotid, slot);
    CHECK_EQ(s->csa_sequenceid, seqid);
    CHECK(s->csa_highest_slotid >= slot);
    CHECK_EQ(s->csa_referring_call_lists.csa_referring_call_lists_len, 0);
    nfs_cb_resop4 r[2];
    memset(r, 0, sizeof(r));
    r[0].resop = OP_CB_SEQUENCE;
    r[0].nfs_cb_resop4_u.opcbsequence.csr_status = sst;
    CB_SEQUENCE4resok *ok = &r[0].nfs_cb_resop4_u.opcbsequence.CB_SEQUENCE4res_u.csr_resok4;
    memcpy(ok->csr_sessionid, t->sid, NFS4_SESSIONID_SIZE);
    ok->csr_sequenceid = seqid;
    ok->csr_slotid = slot;
    ok->csr_highest_slotid = 3;
    ok->csr_target_highest_slotid = 3;
    r[1].resop = a[1].argop;
    r[1].nfs_cb_resop4_u.opcbrecall.status = st; /* every result starts with its status */
    CB_COMPOUND4res res;
    memset(&res, 0, sizeof(res));
    res.status = sst != NFS4_OK ? sst : st;
    res.resarray.resarray_len = sst != NFS4_OK ? 1 : 2;
    res.resarray.resarray_val = r;
    reply(t, c->xid, SUCCESS, UIW__XDRPROC(xdr_CB_COMPOUND4res), &res);
}

/* A callback's end, as the API reports it. */
struct result {
    _Atomic int done;
    _Atomic int status;
};

static void on_done(void *arg, nfsstat4 status)
{
    struct result *r = arg;
    atomic_store(&r->status, (int)status);
    atomic_fetch_add(&r->done, 1);
}

static nfsstat4 wait_done(struct result *r, int ms)
{
    for (int i = 0; i < ms / 10 && !atomic_load(&r->done); i++)
        usleep(10000);
    CHECK_EQ(atomic_load(&r->done), 1);
    return (nfsstat4)atomic_load(&r->status);
}

static void recall(struct cbt *t, struct result *r, const char *fh)
{
    memset(r, 0, sizeof(*r));
    stateid4 sid = {.seqid = 1};
    memcpy(sid.other, "deleg-000001", 12);
    nfs_fh4 h = {(u_int)strlen(fh), (char *)(uintptr_t)fh};
    CHECK_EQ(uiw__nfs4_cb_recall(t->v.s->nfs4, t->cid, &sid, &h, 1, on_done, r), 0);
}

static void check_recall(struct cbcall *c, const char *fh)
{
    CB_RECALL4args *ra = &c->args.argarray.argarray_val[1].nfs_cb_argop4_u.opcbrecall;
    CHECK_EQ(c->args.argarray.argarray_val[1].argop, OP_CB_RECALL);
    CHECK_EQ(ra->stateid.seqid, 1);
    CHECK(memcmp(ra->stateid.other, "deleg-000001", 12) == 0);
    CHECK_EQ(ra->truncate, TRUE);
    CHECK_EQ(ra->fh.nfs_fh4_len, strlen(fh));
    CHECK(memcmp(ra->fh.nfs_fh4_val, fh, strlen(fh)) == 0);
}

static struct uiw__nfsd_cb_counts counts(struct cbt *t)
{
    struct uiw__nfsd_cb_counts n;
    CHECK_EQ(uiw__nfsd_cb_counts(t->v.s, &n), 0);
    return n;
}

/* Until f(counts) holds (the server handles a reply on its own thread). */
#define COUNTS_BECOME(t, cond)                                                                     \
    do {                                                                                           \
        struct uiw__nfsd_cb_counts n_;                                                             \
        for (int i_ = 0; i_ < 200; i_++) {                                                         \
            n_ = counts(t);                                                                        \
            if (cond)                                                                              \
                break;                                                                             \
            usleep(10000);                                                                         \
        }                                                                                          \
        n_ = counts(t);                                                                            \
        CHECK(cond);                                                                               \
    } while (0)

static void start(struct cbt *t)
{
    memset(t, 0, sizeof(*t));
    struct uiw__nfsd_opts o;
    uiw__nfsd_opts_default(&o);
    o.nfs4 = 1;
    srv_start(&t->v, &o);
    t->fd = tcp_to(t->v.tcp);
    t->xid = 0x77000;
}

static void stop(struct cbt *t)
{
    if (t->pc)
        uiw__pcap_close(t->pc);
    while (t->ncalls)
        free(t->calls[--t->ncalls]);
    close(t->fd);
    srv_stop(&t->v);
}

/* A server, and a session of `owner` whose back channel is t's connection, its probe
 * answered. */
static void start_bc(struct cbt *t, const char *owner)
{
    start(t);
    callback_sec_parms4 sec[2];
    memset(&sec[0], 0, sizeof(sec[0]));
    sec[0].cb_secflavor = RPCSEC_GSS;
    sec[1] = sys_sec();
    CREATE_SESSION4resok cr;
    /* the first flavor callbacks can use is taken (RPCSEC_GSS is not) */
    CHECK_EQ(session(t, owner, CREATE_SESSION4_FLAG_CONN_BACK_CHAN, sec, 2, &cr), NFS4_OK);
    CHECK_EQ(cr.csr_flags, CREATE_SESSION4_FLAG_CONN_BACK_CHAN);
    CHECK_EQ(cr.csr_back_chan_attrs.ca_maxrequests, 4);
    CHECK(!uiw__nfs4_cb_client_up(t->v.s->nfs4, t->cid)); /* until the probe comes back */
    answer_probe(t);
    COUNTS_BECOME(t, n_.replies == 1);
    CHECK_EQ(seq_flags(t), 0);
    CHECK(uiw__nfs4_cb_client_up(t->v.s->nfs4, t->cid));
}

TEST(nfs4_cb_recall_tcp)
{
    struct cbt t;
    start_bc(&t, "cb-recall");

    /* CB_SEQUENCE (slot 0, seqid 1), CB_RECALL: answered; the API sees NFS4_OK */
    struct result r;
    recall(&t, &r, "handle-1");
    struct cbcall c;
    next_call(&t, &c);
    CHECK_EQ(c.prog, CB_PROG);
    CHECK_EQ(c.flavor, AUTH_SYS);
    check_recall(&c, "handle-1");
    answer_compound(&t, &c, 0, 1, NFS4_OK, NFS4_OK);
    call_free(&c);
    CHECK_EQ(wait_done(&r, 5000), NFS4_OK);

    /* the next one: seqid 2; the client's error for CB_RECALL is the result */
    recall(&t, &r, "handle-2");
    next_call(&t, &c);
    check_recall(&c, "handle-2");
    answer_compound(&t, &c, 0, 2, NFS4_OK, NFS4ERR_BADHANDLE);
    call_free(&c);
    CHECK_EQ(wait_done(&r, 5000), NFS4ERR_BADHANDLE);

    /* two at once take two slots */
    struct result r2;
    recall(&t, &r, "handle-3");
    recall(&t, &r2, "handle-4");
    struct cbcall c2;
    next_call(&t, &c);
    next_call(&t, &c2);
    check_recall(&c, "handle-3");
    check_recall(&c2, "handle-4");
    answer_compound(&t, &c2, 1, 1, NFS4_OK, NFS4_OK);
    answer_compound(&t, &c, 0, 3, NFS4_OK, NFS4_OK);
    call_free(&c);
    call_free(&c2);
    CHECK_EQ(wait_done(&r, 5000), NFS4_OK);
    CHECK_EQ(wait_done(&r2, 5000), NFS4_OK);

    /* CB_RECALL_ANY */
    memset(&r, 0, sizeof(r));
    CHECK_EQ(
        uiw__nfs4_cb_recall_any(t.v.s->nfs4, t.cid, 0, 1u << RCA4_TYPE_MASK_RDATA_DLG, on_done, &r),
        0);
    next_call(&t, &c);
    CHECK_EQ(c.args.argarray.argarray_val[1].argop, OP_CB_RECALL_ANY);
    CB_RECALL_ANY4args *ra = &c.args.argarray.argarray_val[1].nfs_cb_argop4_u.opcbrecall_any;
    CHECK_EQ(ra->craa_objects_to_keep, 0);
    CHECK_EQ(ra->craa_type_mask.bitmap4_len, 1);
    CHECK_EQ(ra->craa_type_mask.bitmap4_val[0], 1u << RCA4_TYPE_MASK_RDATA_DLG);
    answer_compound(&t, &c, 0, 4, NFS4_OK, NFS4_OK);
    call_free(&c);
    CHECK_EQ(wait_done(&r, 5000), NFS4_OK);

    /* replies to nothing, and a REPLY that is not RPC: dropped, the server goes on */
    reply(&t, 0x12345678, SUCCESS, NULL, NULL);
    uint32_t junk[] = {htonl(0x80000014u), htonl(1), htonl(1), 0, 0, htonl(1000)};
    send_all(t.fd, junk, sizeof(junk));
    COUNTS_BECOME(&t, n_.dropped == 2);
    CHECK_EQ(seq_flags(&t), 0);

    struct uiw__nfsd_cb_counts n = counts(&t);
    CHECK_EQ(n.sent, 6); /* the probe and five callbacks */
    CHECK_EQ(n.recalls, 4);
    CHECK_EQ(n.replies, 6);
    CHECK_EQ(n.errors, 1);
    CHECK_EQ(n.resent, 0);
    CHECK_EQ(n.timeouts, 0);
    stop(&t);
}

TEST(nfs4_cb_reconnect_tcp)
{
    struct cbt t;
    start_bc(&t, "cb-reconnect");

    /* the connection goes: the path is down, for the session and the client */
    close(t.fd);
    t.fd = tcp_to(t.v.tcp);
    flags_become(&t, SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION);
    CHECK(!uiw__nfs4_cb_client_up(t.v.s->nfs4, t.cid)); /* no delegation would be granted */

    /* a recall meanwhile waits for a path */
    struct result r;
    recall(&t, &r, "fh-reconnect");
    usleep(100000);
    CHECK_EQ(atomic_load(&r.done), 0);

    /* BIND_CONN_TO_SESSION: errors first */
    channel_dir_from_server4 dir;
    sessionid4 bogus = {0};
    memset(bogus, 0x5a, sizeof(bogus));
    CHECK_EQ(bind_conn(&t, bogus, CDFC4_BACK_OR_BOTH, &dir), NFS4ERR_BADSESSION);
    CHECK_EQ(bind_conn(&t, t.sid, (channel_dir_from_client4)5, &dir), NFS4ERR_INVAL);
    CHECK_EQ(bind_conn(&t, t.sid, CDFC4_FORE, &dir), NFS4_OK);
    CHECK_EQ(dir, CDFS4_FORE);
    CHECK_EQ(seq_flags(&t), SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION);
    /* both ways: the probe, then the recall that waited (slot 0, seqid 1) */
    CHECK_EQ(bind_conn(&t, t.sid, CDFC4_BACK_OR_BOTH, &dir), NFS4_OK);
    CHECK_EQ(dir, CDFS4_BOTH);
    answer_probe(&t);
    struct cbcall c;
    next_call(&t, &c);
    check_recall(&c, "fh-reconnect");
    uint32_t xid = c.xid;
    call_free(&c);
    /* ... whose reply is lost with the connection: it goes again on the next one bound,
     * the same call (xid, slot and seqid) for the client's reply cache */
    close(t.fd);
    t.fd = tcp_to(t.v.tcp);
    flags_become(&t, SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION);
    CHECK_EQ(bind_conn(&t, t.sid, CDFC4_BACK, &dir), NFS4_OK);
    CHECK_EQ(dir, CDFS4_BACK);
    answer_probe(&t);
    next_call(&t, &c);
    CHECK_EQ(c.xid, xid);
    check_recall(&c, "fh-reconnect");
    answer_compound(&t, &c, 0, 1, NFS4_OK, NFS4_OK);
    call_free(&c);
    CHECK_EQ(wait_done(&r, 5000), NFS4_OK);
    CHECK_EQ(seq_flags(&t), 0);

    struct uiw__nfsd_cb_counts n = counts(&t);
    CHECK_EQ(n.recalls, 2);
    CHECK_EQ(n.resent, 1);
    CHECK_EQ(n.errors, 0);
    stop(&t);
}

TEST(nfs4_cb_timeout_tcp)
{
    struct cbt t;
    start(&t);
    uiw__nfs4_cb_set_timeout(uiw__nfs4_state_cbs(t.v.s->nfs4), 300, 1500);
    callback_sec_parms4 sec = sys_sec();
    CHECK_EQ(session(&t, "cb-timeout", CREATE_SESSION4_FLAG_CONN_BACK_CHAN, &sec, 1, NULL),
             NFS4_OK);
    /* the probe unanswered: the path is down after the timeout */
    struct cbcall c;
    next_call(&t, &c);
    CHECK_EQ(c.proc, 0);
    call_free(&c);
    flags_become(&t, SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION);
    /* a recall without a path ends after the time given */
    struct result r;
    recall(&t, &r, "fh-timeout");
    CHECK_EQ(wait_done(&r, 5000), NFS4ERR_CB_PATH_DOWN);

    /* bound again, the probe answered PROG_UNAVAIL: the path is down at once */
    channel_dir_from_server4 dir;
    CHECK_EQ(bind_conn(&t, t.sid, CDFC4_BACK_OR_BOTH, &dir), NFS4_OK);
    next_call(&t, &c);
    CHECK_EQ(c.proc, 0);
    reply(&t, c.xid, PROG_UNAVAIL, NULL, NULL);
    call_free(&c);
    flags_become(&t, SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION);
    struct uiw__nfsd_cb_counts n = counts(&t);
    CHECK(n.timeouts >= 1);
    CHECK(n.errors >= 2);
    stop(&t);
}

/* The callback timer looks at the calls waiting or sent every 100 ms while there are
 * any (their timeouts); with none, a server whose clients take no callbacks now, it sleeps
 * until one comes instead of waking ten times a second for nothing. */
static void *nothing(void *arg)
{
    return arg;
}

TEST(nfs4_cb_timer_sleeps_when_idle)
{
    enum { MAXT = 64 };
    long tid0[MAXT], tid1[MAXT], tid2[MAXT];
    unsigned long long n0[MAXT], n1[MAXT], n2[MAXT];
    /* a thread first: ThreadSanitizer starts its background thread with the first one, so
     * that the timer's is the only thread that comes with the callbacks */
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, nothing, NULL), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
    int k0 = uiw_test_thread_sleeps(tid0, n0, MAXT);
    struct uiw__nfs4_cbs *cbs = uiw__nfs4_cbs_create();
    CHECK(cbs != NULL);
    usleep(100000); /* the timer asleep */
    int k1 = uiw_test_thread_sleeps(tid1, n1, MAXT);
    int timer = -1; /* the thread that was not there before */
    for (int i = 0; i < k1; i++) {
        bool old = false;
        for (int j = 0; j < k0; j++)
            old = old || tid1[i] == tid0[j];
        if (!old) {
            CHECK_EQ(timer, -1);
            timer = i;
        }
    }
    CHECK(timer >= 0);
    usleep(1000000);
    int k2 = uiw_test_thread_sleeps(tid2, n2, MAXT);
    unsigned long long woke = 0;
    for (int i = 0; i < k2; i++)
        if (tid2[i] == tid1[timer])
            woke = n2[i] - n1[timer];
    uiw__nfs4_cbs_destroy(cbs);
    if (woke > 2)
        uiw_test_fail(__FILE__, __LINE__, "the idle callback timer woke %llu times in 1 s", woke);
}

TEST(nfs4_cb_backchannel_ctl)
{
    struct cbt t;
    start(&t);
    /* RPCSEC_GSS alone: callbacks cannot be sent */
    callback_sec_parms4 gss;
    memset(&gss, 0, sizeof(gss));
    gss.cb_secflavor = RPCSEC_GSS;
    CHECK_EQ(session(&t, "cb-ctl", CREATE_SESSION4_FLAG_CONN_BACK_CHAN, &gss, 1, NULL),
             NFS4ERR_ENCR_ALG_UNSUPP);
    /* without CONN_BACK_CHAN: no back channel, no probe, no flags */
    callback_sec_parms4 sec = sys_sec();
    CREATE_SESSION4resok cr;
    CHECK_EQ(session(&t, "cb-ctl", 0, &sec, 1, &cr), NFS4_OK);
    CHECK_EQ(cr.csr_flags, 0);
    CHECK_EQ(seq_flags(&t), 0);
    CHECK_EQ(counts(&t).sent, 0);

    /* BACKCHANNEL_CTL: RPCSEC_GSS alone refused; AUTH_NONE and another program taken */
    nfs_argop4 a[2];
    op(&a[0], OP_SEQUENCE);
    memcpy(a[0].nfs_argop4_u.opsequence.sa_sessionid, t.sid, sizeof(t.sid));
    a[0].nfs_argop4_u.opsequence.sa_sequenceid = ++t.seq;
    op(&a[1], OP_BACKCHANNEL_CTL);
    a[1].nfs_argop4_u.opbackchannel_ctl.bca_cb_program = CB_PROG + 1;
    a[1].nfs_argop4_u.opbackchannel_ctl.bca_sec_parms.bca_sec_parms_len = 1;
    a[1].nfs_argop4_u.opbackchannel_ctl.bca_sec_parms.bca_sec_parms_val = &gss;
    COMPOUND4res res;
    compound(&t, a, 2, &res);
    CHECK_EQ(res.status, NFS4ERR_ENCR_ALG_UNSUPP);
    CHECK_EQ(st_of(&res.resarray.resarray_val[1]), NFS4ERR_ENCR_ALG_UNSUPP);
    freeres(&res);
    callback_sec_parms4 none;
    memset(&none, 0, sizeof(none));
    none.cb_secflavor = AUTH_NONE;
    a[0].nfs_argop4_u.opsequence.sa_sequenceid = ++t.seq;
    a[1].nfs_argop4_u.opbackchannel_ctl.bca_sec_parms.bca_sec_parms_val = &none;
    compound(&t, a, 2, &res);
    CHECK_EQ(res.status, NFS4_OK);
    freeres(&res);
    /* BACKCHANNEL_CTL needs a session (SEQUENCE first) */
    compound(&t, &a[1], 1, &res);
    CHECK_EQ(res.status, NFS4ERR_OP_NOT_IN_SESSION);
    freeres(&res);

    /* a back channel bound now: its calls are of the new program, in AUTH_NONE */
    channel_dir_from_server4 dir;
    CHECK_EQ(bind_conn(&t, t.sid, CDFC4_FORE_OR_BOTH, &dir), NFS4_OK);
    CHECK_EQ(dir, CDFS4_BOTH);
    struct cbcall c;
    next_call(&t, &c);
    CHECK_EQ(c.proc, 0);
    CHECK_EQ(c.prog, CB_PROG + 1);
    CHECK_EQ(c.flavor, AUTH_NONE);
    reply(&t, c.xid, SUCCESS, NULL, NULL);
    call_free(&c);
    struct result r;
    recall(&t, &r, "fh-ctl");
    next_call(&t, &c);
    CHECK_EQ(c.prog, CB_PROG + 1);
    check_recall(&c, "fh-ctl");
    /* NFS4ERR_DELAY from CB_SEQUENCE: the same call again a second later */
    uint32_t xid = c.xid;
    answer_compound(&t, &c, 0, 1, NFS4ERR_DELAY, NFS4_OK);
    call_free(&c);
    next_call(&t, &c);
    CHECK_EQ(c.xid, xid);
    answer_compound(&t, &c, 0, 1, NFS4_OK, NFS4_OK);
    call_free(&c);
    CHECK_EQ(wait_done(&r, 5000), NFS4_OK);
    /* a client with no session: nothing to call back */
    stateid4 sid = {.seqid = 1};
    nfs_fh4 h = {2, (char *)(uintptr_t) "fh"};
    CHECK_EQ(uiw__nfs4_cb_recall(t.v.s->nfs4, t.cid + 1000, &sid, &h, 0, on_done, &r), -ENOENT);
    stop(&t);
}

/* Wireshark's NFS dissector (its NFS CB part, not ours) reads the back channel as sent:
 * the probe, a CB_COMPOUND of CB_SEQUENCE and CB_RECALL and their replies, on the
 * connection of the fore channel's calls; nothing is malformed, every call answered. */
TEST(tshark_nfs4_callbacks)
{
    need_tshark();
    char dir[512], pcap[600];
    it_tmpdir(dir, sizeof(dir), "nfs4cb");
    snprintf(pcap, sizeof(pcap), "%s/cb.pcap", dir);
    struct cbt t;
    start(&t);
    struct sockaddr_in cl = {.sin_family = AF_INET, .sin_port = htons(876)};
    struct sockaddr_in sv = {.sin_family = AF_INET, .sin_port = htons(2049)};
    cl.sin_addr.s_addr = sv.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    t.pc = uiw__pcap_open(pcap, (struct sockaddr *)&cl, (struct sockaddr *)&sv);
    CHECK(t.pc != NULL);
    callback_sec_parms4 sec = sys_sec();
    CHECK_EQ(session(&t, "cb-tshark", CREATE_SESSION4_FLAG_CONN_BACK_CHAN, &sec, 1, NULL), NFS4_OK);
    answer_probe(&t);
    struct result r;
    recall(&t, &r, "handle-tshark");
    struct cbcall c;
    next_call(&t, &c);
    answer_compound(&t, &c, 0, 1, NFS4_OK, NFS4_OK);
    call_free(&c);
    CHECK_EQ(wait_done(&r, 5000), NFS4_OK);
    uiw__pcap_close(t.pc);
    t.pc = NULL;

    CHECK_EQ(it_tshark_malformed(pcap, NULL), 0);
    CHECK_EQ(it_rpc_calls_answered(pcap), 4); /* EXCHANGE_ID, CREATE_SESSION, CB_NULL, CB */
    /* the CB_COMPOUND and its reply: CB_SEQUENCE (11) then CB_RECALL (4) */
    char *o = it_tshark_fields(pcap, "nfs.cb.operation", "nfs.cb.operation");
    if (it_count_lines(o, "11,4") != 2)
        uiw_test_fail(__FILE__, __LINE__, "the callbacks in %s:\n%s", pcap, o);
    free(o);
    stop(&t);
    it_rmtree(dir);
}
