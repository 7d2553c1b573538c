/*
 * uiw-nfsd's NFSv4.1 (src/nfs/nfs4.c, nfs4state.c), uiw__nfsd_opts.nfs4: on by default;
 * off, version 4 gets PROG_MISMATCH 3..3; on, COMPOUNDs over raw TCP records check
 * sessions, handles and attributes against the file system, and each error of the
 * COMPOUND and SEQUENCE rules; the traffic, written to a capture, decodes in tshark
 * without a malformed packet.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "interop.h"
#include "io/pcap.h"
#include "nfs/client.h"
#include "nfs/nfs4int.h"
#include "nfs/nfs4state.h"
#include "nfs/server.h"
#include "nfs/xdr_data.h"
#include "nfs4.h"
#include "nfs4_util.h"
#include "nfs_util.h"
#include "rawrpc.h"
#include "test.h"

TEST(nfs4_on_by_default_and_off)
{
    struct uiw__nfsd_opts o;
    uiw__nfsd_opts_default(&o);
    CHECK_EQ(o.nfs4, 1);
    o.nfs4 = 0;
    struct srv v;
    srv_start(&v, &o);
    int fd = tcp_to(v.tcp);
    /* NULL and COMPOUND of version 4: PROG_MISMATCH naming version 3 alone */
    expect_accept(fd, 100003, 4, 0, NULL, 0, PROG_MISMATCH);
    expect_accept(fd, 100003, 4, 1, NULL, 0, PROG_MISMATCH);
    close(fd);
    srv_stop(&v);
}

static void expect_versions(int fd, uint32_t vers, uint32_t lo, uint32_t hi)
{
    size_t n;
    char *r = call_raw(fd, 77, 100003, vers, 0, AUTH_SYS, NULL, 0, &n);
    struct rpc_msg m;
    decode_reply(r, n, 77, &m, NULL, NULL);
    CHECK_EQ(m.acpted_rply.ar_stat, PROG_MISMATCH);
    CHECK_EQ(m.acpted_rply.ar_vers.low, lo);
    CHECK_EQ(m.acpted_rply.ar_vers.high, hi);
    free(r);
}

/* The attributes GETATTR asks for, and their values read back. */
static const unsigned want_attrs[] = {
    FATTR4_SUPPORTED_ATTRS,
    FATTR4_TYPE,
    FATTR4_FH_EXPIRE_TYPE,
    FATTR4_CHANGE,
    FATTR4_SIZE,
    FATTR4_FSID,
    FATTR4_LEASE_TIME,
    FATTR4_FILEHANDLE,
    FATTR4_FILEID,
    FATTR4_MAXREAD,
    FATTR4_MODE,
    FATTR4_NUMLINKS,
    FATTR4_OWNER,
    FATTR4_OWNER_GROUP,
    FATTR4_SPACE_USED,
    FATTR4_TIME_ACCESS,
    FATTR4_TIME_METADATA,
    FATTR4_TIME_MODIFY,
    FATTR4_MOUNTED_ON_FILEID,
};

static void getattr_op(nfs_argop4 *a, uint32_t mask[2])
{
    op(a, OP_GETATTR);
    mask[0] = mask[1] = 0;
    for (size_t i = 0; i < sizeof(want_attrs) / sizeof(want_attrs[0]); i++)
        mask[want_attrs[i] / 32] |= 1u << (want_attrs[i] % 32);
    a->nfs_argop4_u.opgetattr.attr_request.bitmap4_len = 2;
    a->nfs_argop4_u.opgetattr.attr_request.bitmap4_val = mask;
}

static void check_time(XDR *x, const struct timespec *ts)
{
    int64_t s;
    uint32_t ns;
    CHECK(xdr_int64_t(x, &s) && xdr_uint32_t(x, &ns));
    CHECK_EQ(s, (int64_t)ts->tv_sec);
    CHECK_EQ(ns, (uint32_t)ts->tv_nsec);
}

static void check_id(XDR *x, unsigned id)
{
    char buf[32], *p = buf, want[32];
    CHECK(xdr_string(x, &p, sizeof(buf)));
    snprintf(want, sizeof(want), "%u", id);
    CHECK(strcmp(buf, want) == 0);
}

/* GETATTR's result against lstat of path, and the handle it names. */
static void check_attrs(const GETATTR4resok *g, const char *path, const nfs_fh4 *fh, int dir)
{
    struct stat st;
    CHECK_EQ(lstat(path, &st), 0);
    const fattr4 *f = &g->obj_attributes;
    CHECK_EQ(f->attrmask.bitmap4_len, 2);
    uint32_t mask[2];
    getattr_op(&(nfs_argop4){0}, mask);
    CHECK_EQ(f->attrmask.bitmap4_val[0], mask[0]); /* every one asked for is supported */
    CHECK_EQ(f->attrmask.bitmap4_val[1], mask[1]);
    XDR x;
    xdrmem_create(&x, f->attr_vals.attrlist4_val, f->attr_vals.attrlist4_len, XDR_DECODE);
    uint32_t u32, w0, w1, words;
    uint64_t u64, minor;
    /* supported_attrs: at least the mandatory ones (0 to 11, 19) */
    CHECK(xdr_uint32_t(&x, &words) && words >= 1 && words <= 3);
    CHECK(xdr_uint32_t(&x, &w0));
    w1 = 0;
    if (words > 1)
        CHECK(xdr_uint32_t(&x, &w1));
    if (words > 2)
        CHECK(xdr_uint32_t(&x, &u32)); /* suppattr_exclcreat's word */
    CHECK_EQ(w0 & 0x80fffu, 0x80fffu);
    CHECK((w1 & mask[1]) == mask[1]);
    CHECK(xdr_uint32_t(&x, &u32));
    CHECK_EQ(u32, dir ? NF4DIR : NF4REG);
    CHECK(xdr_uint32_t(&x, &u32));
    CHECK_EQ(u32, FH4_PERSISTENT);
    CHECK(xdr_uint64_t(&x, &u64)); /* change: the ctime */
    CHECK_EQ(u64, (uint64_t)st.st_ctim.tv_sec * 1000000000u + (uint64_t)st.st_ctim.tv_nsec);
    CHECK(xdr_uint64_t(&x, &u64));
    CHECK_EQ(u64, (uint64_t)st.st_size);
    CHECK(xdr_uint64_t(&x, &u64) && xdr_uint64_t(&x, &minor)); /* fsid */
    CHECK(u64 != 0 || minor != 0);
    CHECK(xdr_uint32_t(&x, &u32));
    CHECK_EQ(u32, 90); /* lease_time */
    char fhb[NFS4_FHSIZE], *fp = fhb;
    u_int fl;
    CHECK(xdr_bytes(&x, &fp, &fl, NFS4_FHSIZE));
    CHECK_EQ(fl, fh->nfs_fh4_len);
    CHECK(memcmp(fhb, fh->nfs_fh4_val, fl) == 0);
    CHECK(xdr_uint64_t(&x, &u64));
    CHECK_EQ(u64, (uint64_t)st.st_ino); /* fileid */
    CHECK(xdr_uint64_t(&x, &u64));
    CHECK_EQ(u64, 1u << 20); /* maxread */
    CHECK(xdr_uint32_t(&x, &u32));
    CHECK_EQ(u32, st.st_mode & 07777);
    CHECK(xdr_uint32_t(&x, &u32));
    CHECK_EQ(u32, (uint32_t)st.st_nlink);
    check_id(&x, st.st_uid);
    check_id(&x, st.st_gid);
    CHECK(xdr_uint64_t(&x, &u64));
    CHECK_EQ(u64, (uint64_t)st.st_blocks * 512);
    check_time(&x, &st.st_atim);
    check_time(&x, &st.st_ctim);
    check_time(&x, &st.st_mtim);
    CHECK(xdr_uint64_t(&x, &u64));
    CHECK_EQ(u64, (uint64_t)st.st_ino);                   /* mounted_on_fileid */
    CHECK_EQ(xdr_getpos(&x), f->attr_vals.attrlist4_len); /* nothing else */
    xdr_destroy(&x);
}

/* Sessions, the root and a file: the attributes as lstat sees them; handles through
 * SAVEFH, LOOKUPP, RESTOREFH; ACCESS and SECINFO_NO_NAME. */
static void session_and_files(struct srv *v, struct t4 *t)
{
    put_file(v, "f", "hello, nfs4", 11);
    /* the calls' AUTH_SYS identity (uid 1000) may search the export and write f */
    CHECK_EQ(chmod(v->dir, 0755), 0);
    CHECK_EQ(chmod(path_in(v, "f"), 0666), 0);
    session(t, 32);
    nfs_argop4 a[16];
    uint32_t mask[2];
    COMPOUND4res res;

    /* SEQUENCE, PUTROOTFH, GETFH, GETATTR */
    next_seq(t, &a[0]);
    op(&a[1], OP_PUTROOTFH);
    op(&a[2], OP_GETFH);
    getattr_op(&a[3], mask);
    compound(t, a, 4, &res);
    CHECK_EQ(res.status, NFS4_OK);
    CHECK_EQ(res.resarray.resarray_len, 4);
    nfs_resop4 *r = res.resarray.resarray_val;
    SEQUENCE4resok *sr = &r[0].nfs_resop4_u.opsequence.SEQUENCE4res_u.sr_resok4;
    CHECK(memcmp(sr->sr_sessionid, t->sid, sizeof(t->sid)) == 0);
    CHECK_EQ(sr->sr_sequenceid, 1);
    CHECK_EQ(sr->sr_highest_slotid, 127);
    nfs_fh4 *root = &r[2].nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;
    char rootfh[NFS4_FHSIZE];
    u_int rootlen = root->nfs_fh4_len;
    memcpy(rootfh, root->nfs_fh4_val, rootlen);
    check_attrs(&r[3].nfs_resop4_u.opgetattr.GETATTR4res_u.resok4, v->dir, root, 1);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);

    /* SEQUENCE, PUTFH (the root's), LOOKUP f, GETFH, GETATTR, ACCESS; PUTROOTFH, LOOKUP d,
     * SAVEFH, LOOKUPP, GETFH, RESTOREFH, GETFH, SECINFO_NO_NAME */
    CHECK_EQ(mkdir(path_in(v, "d"), 0755), 0);
    next_seq(t, &a[0]);
    op(&a[1], OP_PUTFH);
    a[1].nfs_argop4_u.opputfh.object.nfs_fh4_len = rootlen;
    a[1].nfs_argop4_u.opputfh.object.nfs_fh4_val = rootfh;
    op(&a[2], OP_LOOKUP);
    a[2].nfs_argop4_u.oplookup.objname.utf8string_len = 1;
    a[2].nfs_argop4_u.oplookup.objname.utf8string_val = "f";
    op(&a[3], OP_GETFH);
    getattr_op(&a[4], mask);
    op(&a[5], OP_ACCESS);
    a[5].nfs_argop4_u.opaccess.access = ACCESS4_READ | ACCESS4_MODIFY | ACCESS4_LOOKUP;
    op(&a[6], OP_PUTROOTFH);
    op(&a[7], OP_LOOKUP);
    a[7].nfs_argop4_u.oplookup.objname.utf8string_len = 1;
    a[7].nfs_argop4_u.oplookup.objname.utf8string_val = "d";
    op(&a[8], OP_SAVEFH);
    op(&a[9], OP_LOOKUPP);
    op(&a[10], OP_GETFH);
    op(&a[11], OP_RESTOREFH);
    op(&a[12], OP_GETFH);
    op(&a[13], OP_SECINFO_NO_NAME);
    a[13].nfs_argop4_u.opsecinfo_no_name = SECINFO_STYLE4_CURRENT_FH;
    compound(t, a, 14, &res);
    r = res.resarray.resarray_val;
    for (u_int i = 0; i < res.resarray.resarray_len; i++)
        if (st_of(&r[i]) != NFS4_OK)
            uiw_test_fail(__FILE__, __LINE__, "operation %u (%d): %d", i, (int)r[i].resop,
                          (int)st_of(&r[i]));
    CHECK_EQ(res.status, NFS4_OK);
    CHECK_EQ(res.resarray.resarray_len, 14);
    nfs_fh4 *ffh = &r[3].nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;
    check_attrs(&r[4].nfs_resop4_u.opgetattr.GETATTR4res_u.resok4, path_in(v, "f"), ffh, 0);
    ACCESS4resok *ar = &r[5].nfs_resop4_u.opaccess.ACCESS4res_u.resok4;
    CHECK_EQ(ar->supported, ACCESS4_READ | ACCESS4_MODIFY | ACCESS4_LOOKUP);
    CHECK_EQ(ar->access, ACCESS4_READ | ACCESS4_MODIFY); /* a file: no LOOKUP */
    nfs_fh4 *up = &r[10].nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;
    CHECK_EQ(up->nfs_fh4_len, rootlen); /* LOOKUPP of d: the root */
    CHECK(memcmp(up->nfs_fh4_val, rootfh, rootlen) == 0);
    nfs_fh4 *dfh = &r[12].nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;
    CHECK(dfh->nfs_fh4_len != rootlen || memcmp(dfh->nfs_fh4_val, rootfh, rootlen) != 0);
    SECINFO4resok *si = &r[13].nfs_resop4_u.opsecinfo_no_name.SECINFO4res_u.resok4;
    CHECK_EQ(si->SECINFO4resok_len, 2);
    CHECK_EQ(si->SECINFO4resok_val[0].flavor, AUTH_SYS);
    CHECK_EQ(si->SECINFO4resok_val[1].flavor, AUTH_NONE);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);

    /* LOOKUP of a name not there, and LOOKUPP of the root: NFS4ERR_NOENT ends it */
    next_seq(t, &a[0]);
    op(&a[1], OP_PUTROOTFH);
    op(&a[2], OP_LOOKUPP);
    op(&a[3], OP_GETFH);
    compound(t, a, 4, &res);
    CHECK_EQ(res.status, NFS4ERR_NOENT);
    CHECK_EQ(res.resarray.resarray_len, 3);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    next_seq(t, &a[0]);
    op(&a[1], OP_PUTROOTFH);
    op(&a[2], OP_LOOKUP);
    a[2].nfs_argop4_u.oplookup.objname.utf8string_len = 7;
    a[2].nfs_argop4_u.oplookup.objname.utf8string_val = "missing";
    compound(t, a, 3, &res);
    CHECK_EQ(res.status, NFS4ERR_NOENT);
    CHECK_EQ(res.resarray.resarray_len, 3);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);

    /* an operation not served (DELEGPURGE: no delegation outlives the server) */
    next_seq(t, &a[0]);
    op(&a[1], OP_PUTROOTFH);
    op(&a[2], OP_DELEGPURGE);
    compound(t, a, 3, &res);
    CHECK_EQ(res.status, NFS4ERR_NOTSUPP);
    CHECK_EQ(res.resarray.resarray_len, 3);
    CHECK_EQ(res.resarray.resarray_val[2].resop, OP_DELEGPURGE);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
}

TEST(nfs4_session_files)
{
    struct srv v;
    t4_start(&v, 0);
    struct t4 t;
    t4_open(&t, &v, NULL);
    expect_versions(t.fd, 2, 3, 4); /* version 4 is named now */
    size_t n;
    char *r = call4(&t, 5, 0, NULL, 0, &n); /* NULL */
    struct rpc_msg m;
    decode_reply(r, n, 5, &m, NULL, NULL);
    CHECK_EQ(m.acpted_rply.ar_stat, SUCCESS);
    free(r);
    session_and_files(&v, &t);

    /* DESTROY_SESSION, then DESTROY_CLIENTID; the session is gone */
    nfs_argop4 a[2];
    COMPOUND4res res;
    op(&a[0], OP_DESTROY_CLIENTID);
    a[0].nfs_argop4_u.opdestroy_clientid.dca_clientid = t.cid;
    compound(&t, a, 1, &res);
    CHECK_EQ(res.status, NFS4ERR_CLIENTID_BUSY);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    op(&a[0], OP_DESTROY_SESSION);
    memcpy(a[0].nfs_argop4_u.opdestroy_session.dsa_sessionid, t.sid, sizeof(t.sid));
    compound(&t, a, 1, &res);
    CHECK_EQ(res.status, NFS4_OK);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    op(&a[0], OP_DESTROY_CLIENTID);
    a[0].nfs_argop4_u.opdestroy_clientid.dca_clientid = t.cid;
    compound(&t, a, 1, &res);
    CHECK_EQ(res.status, NFS4_OK);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    next_seq(&t, &a[0]);
    compound(&t, a, 1, &res);
    CHECK_EQ(res.status, NFS4ERR_BADSESSION);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    t4_close(&t);
    srv_stop(&v);
}

/* An export (the root: fsid=root) whose sec= leaves out the caller's flavor (AUTH_SYS):
 * NFS4ERR_WRONGSEC, but SECINFO_NO_NAME after the put-filehandle operation names the
 * flavor it takes; with no export the caller is a client of: NFS4ERR_ACCESS. */
TEST(nfs4_export_access)
{
    static const struct {
        const char *line;
        nfsstat4 put;
    } cases[] = {
        {"%s 127.0.0.1(rw,sec=none,fsid=root)\n", NFS4ERR_WRONGSEC},
        {"%s 192.0.2.1(rw)\n", NFS4ERR_ACCESS},
    };
    for (unsigned k = 0; k < 2; k++) {
        struct srv v;
        memset(&v, 0, sizeof(v));
        t4_exports(&v, cases[k].line);
        struct t4 t;
        t4_open(&t, &v, NULL);
        session(&t, 8);
        nfs_argop4 a[3];
        COMPOUND4res res;
        next_seq(&t, &a[0]);
        op(&a[1], OP_PUTROOTFH);
        op(&a[2], OP_GETFH);
        compound(&t, a, 3, &res);
        CHECK_EQ(res.status, cases[k].put);
        CHECK_EQ(res.resarray.resarray_len, 2);
        xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
        next_seq(&t, &a[0]);
        op(&a[2], OP_SECINFO_NO_NAME);
        a[2].nfs_argop4_u.opsecinfo_no_name = SECINFO_STYLE4_CURRENT_FH;
        compound(&t, a, 3, &res);
        CHECK_EQ(res.status, cases[k].put == NFS4ERR_WRONGSEC ? NFS4_OK : NFS4ERR_ACCESS);
        if (res.status == NFS4_OK) {
            SECINFO4resok *si =
                &res.resarray.resarray_val[2].nfs_resop4_u.opsecinfo_no_name.SECINFO4res_u.resok4;
            CHECK_EQ(si->SECINFO4resok_len, 1);
            CHECK_EQ(si->SECINFO4resok_val[0].flavor, AUTH_NONE);
        }
        xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
        t4_close(&t);
        srv_stop(&v);
    }
}

/* A lease of 2 s: SEQUENCE every 0.5 s keeps the client past it; 4.5 s without one and
 * the client and its session are gone (NFS4ERR_BADSESSION), EXCHANGE_ID makes a new,
 * unconfirmed record. */
TEST(nfs4_lease_expiry)
{
    struct srv v;
    t4_start(&v, 2);
    struct t4 t;
    t4_open(&t, &v, NULL);
    session(&t, 8);
    nfs_argop4 a;
    COMPOUND4res res;
    for (int i = 0; i < 6; i++) {
        usleep(500000);
        next_seq(&t, &a);
        compound(&t, &a, 1, &res);
        CHECK_EQ(res.status, NFS4_OK);
        xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    }
    usleep(4500000);
    next_seq(&t, &a);
    compound(&t, &a, 1, &res);
    CHECK_EQ(res.status, NFS4ERR_BADSESSION);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    op(&a, OP_EXCHANGE_ID);
    EXCHANGE_ID4args *ea = &a.nfs_argop4_u.opexchange_id;
    memcpy(ea->eia_clientowner.co_verifier, "verf0001", NFS4_VERIFIER_SIZE);
    ea->eia_clientowner.co_ownerid.co_ownerid_len = (u_int)strlen(t.owner);
    ea->eia_clientowner.co_ownerid.co_ownerid_val = (char *)(uintptr_t)t.owner;
    compound(&t, &a, 1, &res);
    CHECK_EQ(res.status, NFS4_OK);
    EXCHANGE_ID4resok *er =
        &res.resarray.resarray_val[0].nfs_resop4_u.opexchange_id.EXCHANGE_ID4res_u.eir_resok4;
    CHECK(er->eir_clientid != t.cid);
    CHECK_EQ(er->eir_flags, EXCHGID4_FLAG_USE_NON_PNFS); /* not confirmed */
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    t4_close(&t);
    srv_stop(&v);
}

/* The COMPOUND and SEQUENCE errors, each provoked. */
static void errors(struct t4 *t)
{
    session(t, 8);
    nfs_argop4 a[16];
    COMPOUND4res res;
    char ops[4096];

    /* an operation other than the session-less ones without SEQUENCE first */
    op(&a[0], OP_PUTROOTFH);
    compound(t, a, 1, &res);
    CHECK_EQ(res.status, NFS4ERR_OP_NOT_IN_SESSION);
    CHECK_EQ(res.resarray.resarray_len, 1);
    CHECK_EQ(res.resarray.resarray_val[0].resop, OP_PUTROOTFH);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);

    /* a slot beyond the table (128 granted) */
    sequence(t, &a[0], 128, 1, 0);
    compound(t, a, 1, &res);
    CHECK_EQ(res.status, NFS4ERR_BADSLOT);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);

    /* a seqid neither the slot's next nor its last */
    sequence(t, &a[0], 0, t->seq[0] + 2, 0);
    compound(t, a, 1, &res);
    CHECK_EQ(res.status, NFS4ERR_SEQ_MISORDERED);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);

    /* SEQUENCE other than first */
    next_seq(t, &a[0]);
    op(&a[1], OP_PUTROOTFH);
    sequence(t, &a[2], 1, 1, 0);
    compound(t, a, 3, &res);
    CHECK_EQ(res.status, NFS4ERR_SEQUENCE_POS);
    CHECK_EQ(res.resarray.resarray_len, 3);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);

    /* more operations than the session's 8 */
    next_seq(t, &a[0]);
    for (int i = 1; i < 9; i++)
        op(&a[i], OP_PUTROOTFH);
    compound(t, a, 9, &res);
    CHECK_EQ(res.status, NFS4ERR_TOO_MANY_OPS);
    CHECK_EQ(res.resarray.resarray_len, 1);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    t->seq[0]--; /* the slot was not used */

    /* an operation number that is none (99, and 2): the OP_ILLEGAL result */
    uint32_t bad[] = {0, htonl(99)};
    next_seq(t, &a[0]);
    for (int k = 0; k < 2; k++) {
        if (k) {
            next_seq(t, &a[0]);
            bad[1] = htonl(2);
        }
        size_t len = enc_ops(ops, sizeof(ops), a, 1);
        memcpy(ops + len, &bad[1], 4);
        compound_raw(t, 1, 2, ops, len + 4, &res, 0, NULL);
        CHECK_EQ(res.status, NFS4ERR_OP_ILLEGAL);
        CHECK_EQ(res.resarray.resarray_len, 2);
        CHECK_EQ(st_of(&res.resarray.resarray_val[0]), NFS4_OK);
        CHECK_EQ(res.resarray.resarray_val[1].resop, OP_ILLEGAL);
        CHECK_EQ(res.resarray.resarray_val[1].nfs_resop4_u.opillegal.status, NFS4ERR_OP_ILLEGAL);
        xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    }

    /* minor version 3 (and 0): no results, the tag echoed */
    for (uint32_t minor = 0; minor < 4; minor += 3) {
        next_seq(t, &a[0]);
        size_t len = enc_ops(ops, sizeof(ops), a, 1);
        compound_raw(t, minor, 1, ops, len, &res, 0, NULL);
        CHECK_EQ(res.status, NFS4ERR_MINOR_VERS_MISMATCH);
        CHECK_EQ(res.resarray.resarray_len, 0);
        xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
        t->seq[0]--;
    }

    /* a retry with sa_cachethis: the first reply's bytes again, although the root
     * changed in between (its change attribute), and under a new XID */
    uint32_t chmask[1] = {1u << FATTR4_CHANGE};
    sequence(t, &a[0], 3, 1, 1);
    op(&a[1], OP_PUTROOTFH);
    op(&a[2], OP_GETATTR);
    a[2].nfs_argop4_u.opgetattr.attr_request.bitmap4_len = 1;
    a[2].nfs_argop4_u.opgetattr.attr_request.bitmap4_val = chmask;
    size_t len = enc_ops(ops, sizeof(ops), a, 3), n1, n2;
    char *r1 = compound_raw(t, 1, 3, ops, len, &res, 1, &n1);
    CHECK_EQ(res.status, NFS4_OK);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    usleep(20000);
    put_file(t->v, "touched", "x", 1);
    char *r2 = compound_raw(t, 1, 3, ops, len, &res, 1, &n2);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    CHECK_EQ(n1, n2);
    CHECK(memcmp(r1 + 4, r2 + 4, n1 - 4) == 0); /* all but the XID */
    free(r2);
    /* the slot's next request runs: the change shows */
    sequence(t, &a[0], 3, 2, 1);
    len = enc_ops(ops, sizeof(ops), a, 3);
    r2 = compound_raw(t, 1, 3, ops, len, &res, 1, &n2);
    CHECK_EQ(res.status, NFS4_OK);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    CHECK_EQ(n1, n2);
    CHECK(memcmp(r1 + 4, r2 + 4, n1 - 4) != 0);
    free(r1);
    free(r2);
    /* the retry of a reply not kept: NFS4ERR_RETRY_UNCACHED_REP */
    sequence(t, &a[0], 4, 1, 0);
    compound(t, a, 3, &res);
    CHECK_EQ(res.status, NFS4_OK);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    compound(t, a, 3, &res);
    CHECK_EQ(res.status, NFS4ERR_RETRY_UNCACHED_REP);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    /* the retry of a SEQUENCE alone is kept whatever sa_cachethis says */
    sequence(t, &a[0], 5, 1, 0);
    len = enc_ops(ops, sizeof(ops), a, 1);
    r1 = compound_raw(t, 1, 1, ops, len, &res, 1, &n1);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    r2 = compound_raw(t, 1, 1, ops, len, &res, 1, &n2);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    CHECK_EQ(n1, n2);
    CHECK(memcmp(r1 + 4, r2 + 4, n1 - 4) == 0);
    free(r1);
    free(r2);
}

TEST(nfs4_compound_errors)
{
    struct srv v;
    t4_start(&v, 0);
    struct t4 t;
    t4_open(&t, &v, NULL);
    errors(&t);
    t4_close(&t);
    srv_stop(&v);
}

/* A COMPOUND's tag comes back as it was sent, of every length: none, with and without a
 * pad, up to where the server writes it in place and past it (RFC 8881 section 16.2.3),
 * the pad's bytes zero. */
TEST(nfs4_compound_tag_echoed)
{
    struct srv v;
    t4_start(&v, 0);
    struct t4 t;
    t4_open(&t, &v, NULL);
    static const uint32_t lens[] = {0, 1, 3, 4, 63, 64, 65, 300};
    for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
        uint32_t tl = lens[k], padded = (tl + 3) & ~3u;
        char args[512];
        memset(args, 0, sizeof(args));
        uint32_t w = htonl(tl);
        memcpy(args, &w, 4);
        for (uint32_t i = 0; i < tl; i++)
            args[4 + i] = (char)('a' + i % 26);
        uint32_t tail[] = {htonl(1), htonl(1), htonl(OP_PUTROOTFH)};
        memcpy(args + 4 + padded, tail, sizeof(tail));
        size_t n;
        uint32_t xid = ++t.xid;
        char *r = call4(&t, xid, 1, args, 4 + padded + sizeof(tail), &n);
        struct rpc_msg m;
        COMPOUND4res res;
        memset(&res, 0, sizeof(res));
        decode_reply(r, n, xid, &m, UIW__XDRPROC(xdr_COMPOUND4res), &res);
        CHECK_EQ(res.tag.utf8string_len, tl);
        CHECK(tl == 0 || memcmp(res.tag.utf8string_val, args + 4, tl) == 0);
        CHECK_EQ(res.resarray.resarray_len, 1u);
        /* the reply's header (24 bytes), its status, the tag's length, bytes and pad */
        CHECK(n >= 24 + 8 + padded + 4);
        CHECK_EQ(memcmp(r + 24 + 4, &w, 4), 0);
        for (uint32_t i = tl; i < padded; i++)
            CHECK_EQ(r[24 + 8 + i], 0);
        xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
        free(r);
    }
    t4_close(&t);
    srv_stop(&v);
}

/* Slots used at once: each thread its own connection and slot of one session, the
 * server's TCP threads running their COMPOUNDs together (for ThreadSanitizer). */
struct slot_run {
    struct t4 t;
    uint32_t slot;
};

static void *slot_thread(void *p)
{
    struct slot_run *s = p;
    for (uint32_t seq = 1; seq <= 50; seq++) {
        nfs_argop4 a[3];
        uint32_t mask[2];
        sequence(&s->t, &a[0], s->slot, seq, seq % 2);
        op(&a[1], OP_PUTROOTFH);
        getattr_op(&a[2], mask);
        COMPOUND4res res;
        compound(&s->t, a, 3, &res);
        CHECK_EQ(res.status, NFS4_OK);
        SEQUENCE4resok *sr =
            &res.resarray.resarray_val[0].nfs_resop4_u.opsequence.SEQUENCE4res_u.sr_resok4;
        CHECK_EQ(sr->sr_slotid, s->slot);
        CHECK_EQ(sr->sr_sequenceid, seq);
        xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    }
    return NULL;
}

TEST(nfs4_slots_at_once)
{
    struct srv v;
    t4_start(&v, 0);
    struct t4 first;
    t4_open(&first, &v, NULL);
    session(&first, 8);
    enum { N = 4 };
    struct slot_run runs[N];
    pthread_t th[N];
    for (uint32_t i = 0; i < N; i++) {
        t4_open(&runs[i].t, &v, NULL);
        memcpy(runs[i].t.sid, first.sid, sizeof(first.sid));
        runs[i].t.xid = 0x100000 * (i + 1);
        runs[i].slot = i;
        CHECK_EQ(pthread_create(&th[i], NULL, slot_thread, &runs[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        t4_close(&runs[i].t);
    }
    t4_close(&first);
    srv_stop(&v);
}

/* The server's replies, every one of the tests above, decode in Wireshark's dissector
 * without a malformed packet, each call answered. */
TEST(tshark_nfs4_server)
{
    need_tshark();
    char dir[512], pcap[600];
    it_tmpdir(dir, sizeof(dir), "nfs4srv");
    snprintf(pcap, sizeof(pcap), "%s/nfs4.pcap", dir);
    struct srv v;
    t4_start(&v, 0);
    struct t4 t;
    t4_open(&t, &v, pcap);
    session_and_files(&v, &t);
    struct t4 e;
    t4_open(&e, &v, NULL);
    e.pc = t.pc; /* the errors in the same capture, on the same stream */
    e.xid = 0x80000;
    e.owner = "uiw-nfs4-test-errors";
    errors(&e);
    unsigned calls = t.calls + e.calls;
    close(e.fd);
    t4_close(&t);
    srv_stop(&v);
    CHECK_EQ(it_tshark_malformed(pcap, NULL), 0);
    CHECK_EQ(it_rpc_calls_answered(pcap), (int)calls);
    /* NFS4ERR_OP_ILLEGAL as tshark reads it: twice (99 and 2) */
    char *o = it_tshark_fields(pcap, "nfs.nfsstat4 == 10044 && rpc.msgtyp == 1", "rpc.xid");
    CHECK_EQ(it_nlines(o), 2);
    free(o);
    it_rmtree(dir); /* kept when a check failed: the capture to look at */
}

/* EXCHANGE_ID of `owner`: its status, the client ID and CREATE_SESSION's sequence. */
static nfsstat4 exchange(struct t4 *t, const char *owner, clientid4 *cid, uint32_t *csseq)
{
    nfs_argop4 a;
    op(&a, OP_EXCHANGE_ID);
    EXCHANGE_ID4args *ea = &a.nfs_argop4_u.opexchange_id;
    memcpy(ea->eia_clientowner.co_verifier, "verf0001", NFS4_VERIFIER_SIZE);
    ea->eia_clientowner.co_ownerid.co_ownerid_len = (u_int)strlen(owner);
    ea->eia_clientowner.co_ownerid.co_ownerid_val = (char *)(uintptr_t)owner;
    COMPOUND4res res;
    compound(t, &a, 1, &res);
    nfsstat4 st = res.status;
    if (st == NFS4_OK) {
        EXCHANGE_ID4resok *er =
            &res.resarray.resarray_val[0].nfs_resop4_u.opexchange_id.EXCHANGE_ID4res_u.eir_resok4;
        *cid = er->eir_clientid;
        *csseq = er->eir_sequenceid;
    }
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    return st;
}

/* CREATE_SESSION of client cid (fore channel ch; NULL: 64 KiB each way, 8 operations, 4
 * slots): its status (the session's id into sid when made). */
static nfsstat4 create_session_ch(struct t4 *t, clientid4 cid, uint32_t csseq, sessionid4 sid,
                                  const channel_attrs4 *fore)
{
    nfs_argop4 a;
    op(&a, OP_CREATE_SESSION);
    CREATE_SESSION4args *ca = &a.nfs_argop4_u.opcreate_session;
    ca->csa_clientid = cid;
    ca->csa_sequence = csseq;
    channel_attrs4 ch = {0, 65536, 65536, 4096, 8, 4, {0, NULL}};
    ca->csa_fore_chan_attrs = fore ? *fore : ch;
    ca->csa_back_chan_attrs = ch;
    COMPOUND4res res;
    compound(t, &a, 1, &res);
    nfsstat4 st = res.status;
    if (st == NFS4_OK)
        memcpy(sid,
               res.resarray.resarray_val[0]
                   .nfs_resop4_u.opcreate_session.CREATE_SESSION4res_u.csr_resok4.csr_sessionid,
               NFS4_SESSIONID_SIZE);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    return st;
}

static nfsstat4 create_session(struct t4 *t, clientid4 cid, uint32_t csseq, sessionid4 sid)
{
    return create_session_ch(t, cid, csseq, sid, NULL);
}

/* An empty owner gets NFS4ERR_INVAL. What one client holds is bounded: 16 sessions at once (the
 * 17th CREATE_SESSION gets NFS4ERR_NOSPC until one is destroyed), and 4,096 client records: past
 * them an EXCHANGE_ID drops the oldest unconfirmed record (its CREATE_SESSION then gets
 * NFS4ERR_STALE_CLIENTID), and with every record confirmed gets NFS4ERR_DELAY. */
TEST(nfs4_state_bounded)
{
    struct srv v;
    t4_start(&v, 0);
    struct t4 t;
    t4_open(&t, &v, NULL);
    clientid4 cid = 0;
    uint32_t csseq = 0;
    sessionid4 sid[17] = {{0}};
    CHECK_EQ(exchange(&t, "", &cid, &csseq), NFS4ERR_INVAL); /* an owner naming nobody */
    CHECK_EQ(exchange(&t, "bounded-client", &cid, &csseq), NFS4_OK);
    for (int i = 0; i < 16; i++)
        CHECK_EQ(create_session(&t, cid, csseq++, sid[i]), NFS4_OK);
    CHECK_EQ(create_session(&t, cid, csseq++, sid[16]), NFS4ERR_NOSPC);
    nfs_argop4 a;
    op(&a, OP_DESTROY_SESSION);
    memcpy(a.nfs_argop4_u.opdestroy_session.dsa_sessionid, sid[3], NFS4_SESSIONID_SIZE);
    COMPOUND4res res;
    compound(&t, &a, 1, &res);
    CHECK_EQ(res.status, NFS4_OK);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    CHECK_EQ(create_session(&t, cid, csseq++, sid[16]), NFS4_OK);

    /* 4,095 more records, unconfirmed: the first of them is dropped by one more */
    char owner[32];
    clientid4 first = 0, c = 0;
    uint32_t s = 0, first_seq = 0;
    for (int i = 0; i < 4095; i++) {
        snprintf(owner, sizeof(owner), "many-%d", i);
        CHECK_EQ(exchange(&t, owner, &c, &s), NFS4_OK);
        if (i == 0) {
            first = c;
            first_seq = s;
        }
    }
    CHECK_EQ(exchange(&t, "many-last", &c, &s), NFS4_OK);
    sessionid4 x = {0};
    CHECK_EQ(create_session(&t, first, first_seq, x), NFS4ERR_STALE_CLIENTID);
    /* every record confirmed: the next owner waits */
    for (int i = 1; i < 4095; i++) {
        snprintf(owner, sizeof(owner), "many-%d", i);
        CHECK_EQ(exchange(&t, owner, &c, &s), NFS4_OK);
        CHECK_EQ(create_session(&t, c, s, x), NFS4_OK);
    }
    CHECK_EQ(exchange(&t, "many-last", &c, &s), NFS4_OK);
    CHECK_EQ(create_session(&t, c, s, x), NFS4_OK);
    CHECK_EQ(exchange(&t, "one-too-many", &c, &s), NFS4ERR_DELAY);
    t4_close(&t);
    srv_stop(&v);
}

/* Every operation of a COMPOUND is decoded before any runs: operation numbers that run
 * out before the count get GARBAGE_ARGS with nothing done (the SEQUENCE in it did not
 * take its slot: the same sequence ID then runs as new); arguments that do not decode
 * let the operations before them run and end the COMPOUND with NFS4ERR_BADXDR. */
TEST(nfs4_compound_decoded_first)
{
    struct srv v;
    t4_start(&v, 0);
    struct t4 t;
    t4_open(&t, &v, NULL);
    session(&t, 8);
    nfs_argop4 a[2];
    sequence(&t, &a[0], 0, 1, 0);
    char ops[512], args[600];
    size_t olen = enc_ops(ops, sizeof(ops), a, 1);
    size_t alen = raw_args(args, sizeof(args), 1, 2, ops, olen); /* count 2, one there */
    expect_accept(t.fd, 100003, 4, 1, args, alen, GARBAGE_ARGS);
    COMPOUND4res res;
    compound(&t, a, 1, &res);
    CHECK_EQ(res.status, NFS4_OK); /* a new request: the first did not run */
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);

    /* SEQUENCE, PUTROOTFH, then LOOKUP whose name's length overruns the arguments */
    sequence(&t, &a[0], 0, 2, 0);
    op(&a[1], OP_PUTROOTFH);
    olen = enc_ops(ops, sizeof(ops), a, 2);
    uint32_t bad[] = {htonl(OP_LOOKUP), htonl(4000)};
    memcpy(ops + olen, bad, sizeof(bad));
    compound_raw(&t, 1, 3, ops, olen + sizeof(bad), &res, 0, NULL);
    CHECK_EQ(res.status, NFS4ERR_BADXDR);
    CHECK_EQ(res.resarray.resarray_len, 3);
    CHECK_EQ(st_of(&res.resarray.resarray_val[1]), NFS4_OK);
    CHECK_EQ(res.resarray.resarray_val[2].resop, OP_LOOKUP);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    t4_close(&t);
    srv_stop(&v);
}

/* A new directory out (a mkdtemp template) beside the export, and a handle forged for it
 * under the export's id (its device and inode number): *h, its bytes in forged. */
static void forge_outside(const struct srv *v, char *out, char forged[UIW__NFS_FH_MAX], nfs_fh3 *h)
{
    CHECK(mkdtemp(out) != NULL);
    int fd = open(out, O_PATH | O_CLOEXEC);
    CHECK(fd >= 0);
    struct uiw__nfsd_fh f;
    CHECK_EQ(uiw__nfs_fh_of(v->s, &v->s->exports[0], fd, &f), 0);
    close(fd);
    uiw__nfs_fh_encode(&f, h, forged);
}

/* GETFH gives back a handle the client put only if it names a file of its export: one
 * forged for a directory beside the export (its device and inode number under the
 * export's id) gets NFS4ERR_STALE, as GETATTR of it does. */
TEST(nfs4_forged_handle_not_given_back)
{
    struct srv v;
    t4_start(&v, 0);
    char out[] = "/tmp/uiw-nfs4-out-XXXXXX", forged[UIW__NFS_FH_MAX];
    nfs_fh3 h;
    forge_outside(&v, out, forged, &h);
    struct t4 t;
    t4_open(&t, &v, NULL);
    session(&t, 8);
    for (int k = 0; k < 2; k++) {
        nfs_argop4 a[3];
        next_seq(&t, &a[0]);
        op(&a[1], OP_PUTFH);
        a[1].nfs_argop4_u.opputfh.object.nfs_fh4_len = h.data.data_len;
        a[1].nfs_argop4_u.opputfh.object.nfs_fh4_val = forged;
        uint32_t mask[2] = {1u << FATTR4_TYPE, 0};
        if (k == 0)
            op(&a[2], OP_GETFH);
        else
            getattr_op(&a[2], mask);
        COMPOUND4res res;
        compound(&t, a, 3, &res);
        CHECK_EQ(res.status, NFS4ERR_STALE);
        CHECK_EQ(res.resarray.resarray_len, 3);
        xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    }
    t4_close(&t);
    rmdir(out);
    srv_stop(&v);
}

/* The attributes GETATTR of the file's own (stat's) and with those of its file system. */
static const unsigned file_attrs[] = {
    FATTR4_TYPE,        FATTR4_SIZE,          FATTR4_FSID,        FATTR4_FILEID, FATTR4_MODE,
    FATTR4_NUMLINKS,    FATTR4_OWNER,         FATTR4_OWNER_GROUP, FATTR4_RAWDEV, FATTR4_SPACE_USED,
    FATTR4_TIME_ACCESS, FATTR4_TIME_METADATA, FATTR4_TIME_MODIFY,
};

/* SEQUENCE, PUTFH fh, GETATTR of file_attrs (fs: and space_total, files_total). */
static void putfh_getattr(struct t4 *t, const char *fh, u_int len, int fs, COMPOUND4res *res)
{
    uint32_t mask[2] = {0, 0};
    for (size_t i = 0; i < sizeof(file_attrs) / sizeof(file_attrs[0]); i++)
        mask[file_attrs[i] / 32] |= 1u << (file_attrs[i] % 32);
    if (fs) {
        mask[FATTR4_SPACE_TOTAL / 32] |= 1u << (FATTR4_SPACE_TOTAL % 32);
        mask[FATTR4_FILES_TOTAL / 32] |= 1u << (FATTR4_FILES_TOTAL % 32);
    }
    nfs_argop4 a[3];
    next_seq(t, &a[0]);
    op(&a[1], OP_PUTFH);
    a[1].nfs_argop4_u.opputfh.object.nfs_fh4_len = len;
    a[1].nfs_argop4_u.opputfh.object.nfs_fh4_val = (char *)(uintptr_t)fh;
    op(&a[2], OP_GETATTR);
    a[2].nfs_argop4_u.opgetattr.attr_request.bitmap4_len = 2;
    a[2].nfs_argop4_u.opgetattr.attr_request.bitmap4_val = mask;
    compound(t, a, 3, res);
    CHECK_EQ(res->resarray.resarray_len, 3);
}

static void check_v3_time(XDR *x, const nfstime3 *t)
{
    int64_t s = 0;
    uint32_t ns = 0;
    CHECK(xdr_int64_t(x, &s) && xdr_uint32_t(x, &ns));
    CHECK_EQ(s, (int64_t)t->seconds);
    CHECK_EQ(ns, t->nseconds);
}

/* GETATTR's values of file_attrs against NFSv3's attributes of the same file (a3); with
 * fs, the file system's sizes against statfs of path. */
static void check_as_v3(const COMPOUND4res *res, const fattr3 *a3, int fs, const char *path)
{
    const fattr4 *f =
        &res->resarray.resarray_val[2].nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes;
    XDR x;
    xdrmem_create(&x, f->attr_vals.attrlist4_val, f->attr_vals.attrlist4_len, XDR_DECODE);
    uint32_t u32 = 0, u32b = 0;
    uint64_t u64 = 0, minor = 0;
    CHECK(xdr_uint32_t(&x, &u32));
    CHECK_EQ(u32, NF4REG);
    CHECK_EQ(a3->type, NF3REG);
    CHECK(xdr_uint64_t(&x, &u64));
    CHECK_EQ(u64, a3->size);
    CHECK(xdr_uint64_t(&x, &u64) && xdr_uint64_t(&x, &minor));
    CHECK_EQ(u64, a3->fsid);
    CHECK_EQ(minor, 0);
    CHECK(xdr_uint64_t(&x, &u64));
    CHECK_EQ(u64, a3->fileid);
    if (fs) {
        struct statfs sf;
        CHECK_EQ(statfs(path, &sf), 0);
        CHECK(xdr_uint64_t(&x, &u64)); /* files_total */
        CHECK_EQ(u64, (uint64_t)sf.f_files);
    }
    CHECK(xdr_uint32_t(&x, &u32));
    CHECK_EQ(u32, a3->mode & 07777);
    CHECK(xdr_uint32_t(&x, &u32));
    CHECK_EQ(u32, a3->nlink);
    check_id(&x, a3->uid);
    check_id(&x, a3->gid);
    CHECK(xdr_uint32_t(&x, &u32) && xdr_uint32_t(&x, &u32b));
    CHECK_EQ(u32, a3->rdev.specdata1);
    CHECK_EQ(u32b, a3->rdev.specdata2);
    if (fs) {
        struct statfs sf;
        CHECK_EQ(statfs(path, &sf), 0);
        CHECK(xdr_uint64_t(&x, &u64)); /* space_total */
        CHECK_EQ(u64, (uint64_t)sf.f_blocks * (uint64_t)sf.f_bsize);
    }
    CHECK(xdr_uint64_t(&x, &u64));
    CHECK_EQ(u64, a3->used);
    check_v3_time(&x, &a3->atime);
    check_v3_time(&x, &a3->ctime);
    check_v3_time(&x, &a3->mtime);
    CHECK_EQ(xdr_getpos(&x), f->attr_vals.attrlist4_len); /* nothing else */
    xdr_destroy(&x);
}

/* GETATTR of a handle PUT, with and without the file system's attributes (the second
 * needs a descriptor of the file, the first a stat through the handle only): the values
 * NFSv3's GETATTR gives for the same handle; once the file is removed, or for a handle
 * forged for a directory outside the export, NFS4ERR_STALE from GETATTR either way. */
TEST(nfs4_getattr_as_v3)
{
    struct srv v;
    t4_start(&v, 0);
    put_file(&v, "g", "attributes", 10);
    char url[600];
    snprintf(url, sizeof(url), "%s&version=3", v.url);
    struct uiw__nfs_url u;
    char err[512];
    CHECK_EQ(uiw__nfs_url_parse(url, &u, err, sizeof(err)), 0);
    struct uiw__nfs_client *c3 = uiw__nfs_client_open(&u, 0, err, sizeof(err));
    CHECK(c3 != NULL);
    struct uiw__nfs_fh fh;
    fattr3 a3;
    CHECK_EQ(uiw__nfs_lookup_path(c3, "g", &fh, &a3), 0);
    struct t4 t;
    t4_open(&t, &v, NULL);
    session(&t, 8);
    for (int fs = 0; fs < 2; fs++) {
        COMPOUND4res res;
        putfh_getattr(&t, fh.data, fh.len, fs, &res);
        CHECK_EQ(res.status, NFS4_OK);
        CHECK_EQ(uiw__nfs_getattr(c3, &fh, &a3), 0);
        check_as_v3(&res, &a3, fs, v.dir);
        xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    }
    uiw__nfs_client_close(c3);
    CHECK_EQ(unlink(path_in(&v, "g")), 0);
    char out[] = "/tmp/uiw-nfs4-out-XXXXXX", forged[UIW__NFS_FH_MAX];
    nfs_fh3 h;
    forge_outside(&v, out, forged, &h);
    for (int k = 0; k < 4; k++) {
        COMPOUND4res res;
        if (k < 2)
            putfh_getattr(&t, fh.data, fh.len, k, &res);
        else
            putfh_getattr(&t, forged, h.data.data_len, k - 2, &res);
        CHECK_EQ(res.status, NFS4ERR_STALE);
        CHECK_EQ(st_of(&res.resarray.resarray_val[1]), NFS4_OK);
        xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    }
    t4_close(&t);
    rmdir(out);
    srv_stop(&v);
}

/* A session's sizes hold (RFC 8881 section 2.10.6.4): a COMPOUND larger than its
 * ca_maxrequestsize gets NFS4ERR_REQ_TOO_BIG from SEQUENCE (nothing runs, the slot stays
 * as it was); the operation whose result takes the reply past ca_maxresponsesize gets
 * NFS4ERR_REP_TOO_BIG, and past ca_maxresponsesize_cached, when the client asked the
 * slot to keep it, NFS4ERR_REP_TOO_BIG_TO_CACHE. */
TEST(nfs4_session_sizes)
{
    struct srv v;
    t4_start(&v, 0);
    struct t4 t;
    t4_open(&t, &v, NULL);
    clientid4 cid = 0;
    uint32_t csseq = 0;
    CHECK_EQ(exchange(&t, "sizes-client", &cid, &csseq), NFS4_OK);
    channel_attrs4 fore = {0, 600, 600, 300, 16, 4, {0, NULL}};
    CHECK_EQ(create_session_ch(&t, cid, csseq, t.sid, &fore), NFS4_OK);
    memset(t.seq, 0, sizeof(t.seq));
    uint32_t all[2] = {0xffffffffu, 0xffffffffu};

    /* three LOOKUPs of 250-byte names: some 800 bytes */
    nfs_argop4 a[8];
    char name[251];
    memset(name, 'n', 250);
    name[250] = 0;
    sequence(&t, &a[0], 0, 1, 0);
    op(&a[1], OP_PUTROOTFH);
    for (int i = 2; i < 5; i++) {
        op(&a[i], OP_LOOKUP);
        a[i].nfs_argop4_u.oplookup.objname.utf8string_len = 250;
        a[i].nfs_argop4_u.oplookup.objname.utf8string_val = name;
    }
    COMPOUND4res res;
    compound(&t, a, 5, &res);
    CHECK_EQ(res.status, NFS4ERR_REQ_TOO_BIG);
    CHECK_EQ(res.resarray.resarray_len, 1);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);

    /* GETATTRs of every attribute until the reply passes 600 bytes */
    sequence(&t, &a[0], 0, 1, 0); /* the same sequence ID: the slot did not move */
    op(&a[1], OP_PUTROOTFH);
    for (int i = 2; i < 8; i++)
        getattr_op(&a[i], all);
    compound(&t, a, 8, &res);
    CHECK_EQ(res.status, NFS4ERR_REP_TOO_BIG);
    u_int n = res.resarray.resarray_len;
    CHECK(n > 3 && n < 8);
    for (u_int i = 0; i + 1 < n; i++)
        CHECK_EQ(st_of(&res.resarray.resarray_val[i]), NFS4_OK);
    CHECK_EQ(res.resarray.resarray_val[n - 1].resop, OP_GETATTR);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);

    /* one GETATTR fits the reply but not the slot's cache */
    sequence(&t, &a[0], 0, 2, 1);
    op(&a[1], OP_PUTROOTFH);
    getattr_op(&a[2], all);
    op(&a[3], OP_GETFH);
    compound(&t, a, 4, &res);
    CHECK_EQ(res.status, NFS4ERR_REP_TOO_BIG_TO_CACHE);
    CHECK(res.resarray.resarray_len >= 3);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    sequence(&t, &a[0], 0, 3, 0); /* not asked to keep it: it goes */
    compound(&t, a, 4, &res);
    CHECK_EQ(res.status, NFS4_OK);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    t4_close(&t);
    srv_stop(&v);
}

/* A server with NFSv4 on, its client records in dir. */
static void start_dir(struct srv *v, unsigned lease, const char *dir)
{
    struct uiw__nfsd_opts o;
    uiw__nfsd_opts_default(&o);
    o.no_root_squash = 1;
    o.nfs4 = 1;
    o.lease_time = lease;
    o.state_dir = dir;
    srv_start(v, &o);
}

/* The number of client records in dir, and whether one holds owner. */
static int records(const char *dir, const char *owner, int *found)
{
    char cmd[600], *out = NULL;
    snprintf(cmd, sizeof(cmd), "ls '%s' | grep -c '^c-'; grep -lx '%s' '%s'/c-* 2>/dev/null", dir,
             owner, dir);
    it_run(cmd, 1, 10, &out);
    int n = atoi(out);
    *found = strstr(out, "/c-") != NULL;
    free(out);
    return n;
}

/* RECLAIM_COMPLETE on the session of t: its status. */
static nfsstat4 reclaim_complete(struct t4 *t)
{
    nfs_argop4 a[2];
    next_seq(t, &a[0]);
    op(&a[1], OP_RECLAIM_COMPLETE);
    COMPOUND4res res;
    compound(t, a, 2, &res);
    nfsstat4 st = res.status;
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    return st;
}

/* With a state directory, a confirmed client is recorded on disk (an unconfirmed one is
 * not; one destroyed is removed). After a restart the recorded clients hold the server
 * in grace until each has sent RECLAIM_COMPLETE (a second gets NFS4ERR_COMPLETE_ALREADY;
 * a new client's does not end it), or until a lease has passed, which removes the
 * records of those that did not come back. */
TEST(nfs4_grace_after_restart)
{
    char dir[] = "/tmp/uiw-nfs4-state-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    struct srv v;
    start_dir(&v, 2, dir);
    CHECK_EQ(uiw__nfs4_in_grace(v.s->nfs4), 0);
    struct t4 a, c;
    t4_open(&a, &v, NULL);
    a.owner = "grace-a";
    session(&a, 8);
    t4_open(&c, &v, NULL);
    c.owner = "grace-c";
    session(&c, 8);
    clientid4 cid = 0;
    uint32_t cs = 0;
    CHECK_EQ(exchange(&a, "grace-b", &cid, &cs), NFS4_OK); /* unconfirmed */
    int found;
    CHECK_EQ(records(dir, "grace-a", &found), 2);
    CHECK(found);
    CHECK_EQ(records(dir, "grace-b", &found), 2);
    CHECK(!found);
    nfs_argop4 op1;
    op(&op1, OP_DESTROY_SESSION);
    memcpy(op1.nfs_argop4_u.opdestroy_session.dsa_sessionid, c.sid, NFS4_SESSIONID_SIZE);
    COMPOUND4res res;
    compound(&c, &op1, 1, &res);
    CHECK_EQ(res.status, NFS4_OK);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    op(&op1, OP_DESTROY_CLIENTID);
    op1.nfs_argop4_u.opdestroy_clientid.dca_clientid = c.cid;
    compound(&c, &op1, 1, &res);
    CHECK_EQ(res.status, NFS4_OK);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    CHECK_EQ(records(dir, "grace-a", &found), 1);
    t4_close(&a);
    t4_close(&c);
    srv_stop(&v);

    /* restarted: in grace for grace-a */
    start_dir(&v, 2, dir);
    CHECK_EQ(uiw__nfs4_in_grace(v.s->nfs4), 1);
    struct t4 d;
    t4_open(&d, &v, NULL);
    d.owner = "grace-d";
    session(&d, 8);
    CHECK_EQ(reclaim_complete(&d), NFS4_OK);
    CHECK_EQ(reclaim_complete(&d), NFS4ERR_COMPLETE_ALREADY);
    CHECK_EQ(uiw__nfs4_in_grace(v.s->nfs4), 1);
    t4_open(&a, &v, NULL);
    a.owner = "grace-a";
    session(&a, 8);
    CHECK_EQ(uiw__nfs4_in_grace(v.s->nfs4), 1);
    CHECK_EQ(reclaim_complete(&a), NFS4_OK);
    CHECK_EQ(uiw__nfs4_in_grace(v.s->nfs4), 0);
    CHECK_EQ(records(dir, "grace-a", &found), 2); /* grace-a and grace-d */
    t4_close(&a);
    t4_close(&d);
    srv_stop(&v);

    /* restarted again: nobody comes back; after the lease the records are gone */
    start_dir(&v, 2, dir);
    CHECK_EQ(uiw__nfs4_in_grace(v.s->nfs4), 2);
    usleep(2200000);
    CHECK_EQ(uiw__nfs4_in_grace(v.s->nfs4), 0);
    CHECK_EQ(records(dir, "grace-a", &found), 0);
    srv_stop(&v);
    it_rmtree(dir);
}

/* ---- opens, stateids and I/O (nfs4open.c, nfs4stid.c) ---- */

/* SEQUENCE (slot 0) as a[0], then a[1..n-1]; the COMPOUND's status. */
static nfsstat4 run(struct t4 *t, nfs_argop4 *a, unsigned n, COMPOUND4res *res)
{
    next_seq(t, &a[0]);
    compound(t, a, n, res);
    return res->status;
}

static nfs_resop4 *res_at(COMPOUND4res *res, unsigned i)
{
    CHECK(i < res->resarray.resarray_len);
    return &res->resarray.resarray_val[i];
}

static void done(COMPOUND4res *res)
{
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)res);
}

/* OPEN of `name` in the current directory (NULL: CLAIM_FH, the current file) by owner,
 * without creating. */
static void open_arg(nfs_argop4 *a, const char *owner, uint32_t access, uint32_t deny,
                     const char *name)
{
    op(a, OP_OPEN);
    OPEN4args *o = &a->nfs_argop4_u.opopen;
    o->share_access = access;
    o->share_deny = deny;
    o->owner.owner.owner_len = (u_int)strlen(owner);
    o->owner.owner.owner_val = (char *)(uintptr_t)owner;
    o->openhow.opentype = OPEN4_NOCREATE;
    o->claim.claim = name ? CLAIM_NULL : CLAIM_FH;
    if (name) {
        o->claim.open_claim4_u.file.utf8string_len = (u_int)strlen(name);
        o->claim.open_claim4_u.file.utf8string_val = (char *)(uintptr_t)name;
    }
}

/* The createattrs of a mode, in vals (8 bytes) and mask (2 words). */
static void mode_attr(fattr4 *f, uint32_t mask[2], char vals[4], uint32_t mode)
{
    mask[0] = 0;
    mask[1] = 1u << (FATTR4_MODE - 32);
    uint32_t be = htonl(mode);
    memcpy(vals, &be, 4);
    f->attrmask.bitmap4_len = 2;
    f->attrmask.bitmap4_val = mask;
    f->attr_vals.attrlist4_len = 4;
    f->attr_vals.attrlist4_val = vals;
}

static void stateid_op(nfs_argop4 *a, nfs_opnum4 n, const stateid4 *s)
{
    op(a, n);
    switch (n) {
    case OP_READ:
        a->nfs_argop4_u.opread.stateid = *s;
        break;
    case OP_WRITE:
        a->nfs_argop4_u.opwrite.stateid = *s;
        break;
    case OP_CLOSE:
        a->nfs_argop4_u.opclose.open_stateid = *s;
        break;
    case OP_OPEN_DOWNGRADE:
        a->nfs_argop4_u.opopen_downgrade.open_stateid = *s;
        break;
    default:
        a->nfs_argop4_u.opfree_stateid.fsa_stateid = *s;
        break;
    }
}

static void read_arg(nfs_argop4 *a, const stateid4 *s, uint64_t off, uint32_t count)
{
    stateid_op(a, OP_READ, s);
    a->nfs_argop4_u.opread.offset = off;
    a->nfs_argop4_u.opread.count = count;
}

static void write_arg(nfs_argop4 *a, const stateid4 *s, uint64_t off, stable_how4 how,
                      const char *data)
{
    stateid_op(a, OP_WRITE, s);
    a->nfs_argop4_u.opwrite.offset = off;
    a->nfs_argop4_u.opwrite.stable = how;
    a->nfs_argop4_u.opwrite.data.data_len = (u_int)strlen(data);
    a->nfs_argop4_u.opwrite.data.data_val = (char *)(uintptr_t)data;
}

static void putfh_arg(nfs_argop4 *a, const nfs_fh4 *fh)
{
    op(a, OP_PUTFH);
    a->nfs_argop4_u.opputfh.object = *fh;
}

static const stateid4 current_sid = {1, {0}};
static const stateid4 anon_sid = {0, {0}};

static stateid4 open_sid(COMPOUND4res *res, unsigned i)
{
    return res_at(res, i)->nfs_resop4_u.opopen.OPEN4res_u.resok4.stateid;
}

/* A server whose export's root the calls' uid 1000 makes files in, and a client of it
 * with a session of `slots` slots. */
static void start_open(struct srv *v, struct t4 *t, unsigned slots)
{
    t4_start(v, 0);
    CHECK_EQ(chmod(v->dir, 0777), 0);
    t4_open(t, v, NULL);
    session(t, slots);
}

/* a[1] to a[3]: PUTROOTFH, OPEN4_CREATE of `name` (mode 0640, UNCHECKED4, share access
 * both) by owner, GETFH; the attributes' words in mask and vals. */
static void open_create_args(nfs_argop4 *a, const char *owner, const char *name, uint32_t mask[2],
                             char vals[4])
{
    op(&a[1], OP_PUTROOTFH);
    open_arg(&a[2], owner, OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_NONE, name);
    OPEN4args *o = &a[2].nfs_argop4_u.opopen;
    o->openhow.opentype = OPEN4_CREATE;
    o->openhow.openflag4_u.how.mode = UNCHECKED4;
    mode_attr(&o->openhow.openflag4_u.how.createhow4_u.createattrs, mask, vals, 0640);
    op(&a[3], OP_GETFH);
}

/* The handle GETFH (result i of res) gave, copied into buf. */
static void keep_fh(COMPOUND4res *res, unsigned i, nfs_fh4 *fh, char buf[NFS4_FHSIZE])
{
    nfs_fh4 *h = &res_at(res, i)->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;
    memcpy(buf, h->nfs_fh4_val, h->nfs_fh4_len);
    fh->nfs_fh4_len = h->nfs_fh4_len;
    fh->nfs_fh4_val = buf;
}

/* The handle of `name` in the root (a root's LOOKUP). */
static void handle_of(struct t4 *t, const char *name, nfs_fh4 *fh, char buf[NFS4_FHSIZE])
{
    nfs_argop4 a[4];
    COMPOUND4res res;
    op(&a[1], OP_PUTROOTFH);
    op(&a[2], OP_LOOKUP);
    a[2].nfs_argop4_u.oplookup.objname.utf8string_len = (u_int)strlen(name);
    a[2].nfs_argop4_u.oplookup.objname.utf8string_val = (char *)(uintptr_t)name;
    op(&a[3], OP_GETFH);
    CHECK_EQ(run(t, a, 4, &res), NFS4_OK);
    keep_fh(&res, 3, fh, buf);
    done(&res);
}

/* An OPEN of `name` in the root by owner: its status, and the stateid in *s. */
static nfsstat4 open_name(struct t4 *t, const char *owner, uint32_t access, uint32_t deny,
                          const char *name, stateid4 *s)
{
    nfs_argop4 a[3];
    COMPOUND4res res;
    op(&a[1], OP_PUTROOTFH);
    open_arg(&a[2], owner, access, deny, name);
    nfsstat4 st = run(t, a, 3, &res);
    if (st == NFS4_OK && s)
        *s = open_sid(&res, 2);
    done(&res);
    return st;
}

/* One operation on the file fh (PUTFH, then a[2]): its status. */
static nfsstat4 on_file(struct t4 *t, const nfs_fh4 *fh, nfs_argop4 *a, COMPOUND4res *res)
{
    putfh_arg(&a[1], fh);
    nfsstat4 st = run(t, a, 3, res);
    CHECK_EQ(st_of(res_at(res, res->resarray.resarray_len - 1)), st);
    return st;
}

static nfsstat4 on_file_st(struct t4 *t, const nfs_fh4 *fh, nfs_argop4 *a)
{
    COMPOUND4res res;
    nfsstat4 st = on_file(t, fh, a, &res);
    done(&res);
    return st;
}

static void slurp(const char *path, char *buf, size_t cap, size_t *n)
{
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    *n = fread(buf, 1, cap, f);
    fclose(f);
}

/* OPEN4_CREATE, WRITE, READ and CLOSE in one COMPOUND through the current stateid,
 * checked against the file on disk; then the stateid's seqid rules, upgrade and
 * downgrade, and the errors of OPEN. */
TEST(nfs4_open_create_write_read_close)
{
    struct srv v;
    struct t4 t;
    start_open(&v, &t, 16);
    nfs_argop4 a[16];
    COMPOUND4res res;
    uint32_t mask[2];
    char vals[4];

    /* SEQUENCE PUTROOTFH OPEN(create "new", 0640) GETFH WRITE READ CLOSE */
    open_create_args(a, "o1", "new", mask, vals);
    write_arg(&a[4], &current_sid, 0, FILE_SYNC4, "hello, open");
    read_arg(&a[5], &current_sid, 0, 100);
    stateid_op(&a[6], OP_CLOSE, &current_sid);
    CHECK_EQ(run(&t, a, 7, &res), NFS4_OK);
    OPEN4resok * or = &res_at(&res, 2)->nfs_resop4_u.opopen.OPEN4res_u.resok4;
    CHECK_EQ(or->stateid.seqid, 1);
    CHECK_EQ(or->rflags, OPEN4_RESULT_LOCKTYPE_POSIX);
    CHECK_EQ(or->delegation.delegation_type, OPEN_DELEGATE_NONE);
    CHECK_EQ(or->attrset.bitmap4_len, 2);
    CHECK_EQ(or->attrset.bitmap4_val[1], 1u << (FATTR4_MODE - 32));
    CHECK(or->cinfo.atomic);
    CHECK(or->cinfo.after != or->cinfo.before); /* the root changed: "new" is in it */
    stateid4 first = or->stateid;
    WRITE4resok *wr = &res_at(&res, 4)->nfs_resop4_u.opwrite.WRITE4res_u.resok4;
    CHECK_EQ(wr->count, 11);
    CHECK_EQ(wr->committed, FILE_SYNC4);
    READ4resok *rr = &res_at(&res, 5)->nfs_resop4_u.opread.READ4res_u.resok4;
    CHECK_EQ(rr->data.data_len, 11);
    CHECK(memcmp(rr->data.data_val, "hello, open", 11) == 0);
    CHECK(rr->eof);
    stateid4 *cl = &res_at(&res, 6)->nfs_resop4_u.opclose.CLOSE4res_u.open_stateid;
    CHECK_EQ(cl->seqid, UINT32_MAX); /* the invalid special stateid */
    for (int i = 0; i < NFS4_OTHER_SIZE; i++)
        CHECK_EQ(cl->other[i], 0);
    char fhbuf[NFS4_FHSIZE];
    nfs_fh4 fh;
    keep_fh(&res, 3, &fh, fhbuf);
    done(&res);
    struct stat sb = lstat_ok(path_in(&v, "new"));
    CHECK_EQ(sb.st_mode & 07777, 0640);
    CHECK_EQ(sb.st_uid, 1000);
    char disk[64];
    size_t n;
    slurp(path_in(&v, "new"), disk, sizeof(disk), &n);
    CHECK_EQ(n, 11);
    CHECK(memcmp(disk, "hello, open", 11) == 0);

    /* the closed open's stateid: NFS4ERR_BAD_STATEID; the current stateid without an
     * operation that set it: the same */
    read_arg(&a[2], &first, 0, 10);
    CHECK_EQ(on_file_st(&t, &fh, a), NFS4ERR_BAD_STATEID);
    read_arg(&a[2], &current_sid, 0, 10);
    CHECK_EQ(on_file_st(&t, &fh, a), NFS4ERR_BAD_STATEID);
    /* the anonymous stateid reads and writes (no share reservation refuses it) */
    read_arg(&a[2], &anon_sid, 6, 10);
    CHECK_EQ(on_file(&t, &fh, a, &res), NFS4_OK);
    rr = &res_at(&res, 2)->nfs_resop4_u.opread.READ4res_u.resok4;
    CHECK_EQ(rr->data.data_len, 5);
    CHECK(memcmp(rr->data.data_val, " open", 5) == 0);
    done(&res);

    /* open for reading, then the same owner for writing: an upgrade (the same stateid,
     * seqid 2) */
    stateid4 s1, s2;
    CHECK_EQ(open_name(&t, "o1", OPEN4_SHARE_ACCESS_READ, 0, "new", &s1), NFS4_OK);
    CHECK_EQ(s1.seqid, 1);
    write_arg(&a[2], &s1, 0, UNSTABLE4, "HELLO");
    CHECK_EQ(on_file_st(&t, &fh, a), NFS4ERR_OPENMODE);
    CHECK_EQ(open_name(&t, "o1", OPEN4_SHARE_ACCESS_WRITE, 0, "new", &s2), NFS4_OK);
    CHECK_EQ(s2.seqid, 2);
    CHECK(memcmp(s1.other, s2.other, NFS4_OTHER_SIZE) == 0);
    /* seqid rules (section 8.2.2): older OLD_STATEID, newer BAD_STATEID, 0 the latest */
    write_arg(&a[2], &s1, 0, UNSTABLE4, "HELLO");
    CHECK_EQ(on_file_st(&t, &fh, a), NFS4ERR_OLD_STATEID);
    stateid4 s3 = s2;
    s3.seqid = 3;
    write_arg(&a[2], &s3, 0, UNSTABLE4, "HELLO");
    CHECK_EQ(on_file_st(&t, &fh, a), NFS4ERR_BAD_STATEID);
    stateid4 s0 = s2;
    s0.seqid = 0;
    write_arg(&a[2], &s0, 0, UNSTABLE4, "HELLO");
    CHECK_EQ(on_file(&t, &fh, a, &res), NFS4_OK);
    wr = &res_at(&res, 2)->nfs_resop4_u.opwrite.WRITE4res_u.resok4;
    CHECK_EQ(wr->committed, UNSTABLE4);
    char verf[NFS4_VERIFIER_SIZE];
    memcpy(verf, wr->writeverf, sizeof(verf));
    done(&res);
    op(&a[2], OP_COMMIT);
    CHECK_EQ(on_file(&t, &fh, a, &res), NFS4_OK);
    CHECK(memcmp(res_at(&res, 2)->nfs_resop4_u.opcommit.COMMIT4res_u.resok4.writeverf, verf,
                 sizeof(verf)) == 0);
    done(&res);
    slurp(path_in(&v, "new"), disk, sizeof(disk), &n);
    CHECK(memcmp(disk, "HELLO, open", 11) == 0);
    /* another stateid's `other` of this server: BAD_STATEID; of another boot: STALE */
    stateid4 bad = s2;
    bad.other[8] ^= 0x5a;
    write_arg(&a[2], &bad, 0, UNSTABLE4, "x");
    CHECK_EQ(on_file_st(&t, &fh, a), NFS4ERR_BAD_STATEID);
    bad = s2;
    bad.other[0] ^= 0x5a;
    write_arg(&a[2], &bad, 0, UNSTABLE4, "x");
    CHECK_EQ(on_file_st(&t, &fh, a), NFS4ERR_STALE_STATEID);
    /* TEST_STATEID: each its own status */
    op(&a[2], OP_TEST_STATEID);
    stateid4 tests[3] = {s2, first, bad};
    a[2].nfs_argop4_u.optest_stateid.ts_stateids.ts_stateids_len = 3;
    a[2].nfs_argop4_u.optest_stateid.ts_stateids.ts_stateids_val = tests;
    CHECK_EQ(on_file(&t, &fh, a, &res), NFS4_OK);
    TEST_STATEID4resok *tr =
        &res_at(&res, 2)->nfs_resop4_u.optest_stateid.TEST_STATEID4res_u.tsr_resok4;
    CHECK_EQ(tr->tsr_status_codes.tsr_status_codes_len, 3);
    CHECK_EQ(tr->tsr_status_codes.tsr_status_codes_val[0], NFS4_OK);
    CHECK_EQ(tr->tsr_status_codes.tsr_status_codes_val[1], NFS4ERR_BAD_STATEID);
    CHECK_EQ(tr->tsr_status_codes.tsr_status_codes_val[2], NFS4ERR_STALE_STATEID);
    done(&res);
    /* FREE_STATEID of an open: CLOSE frees it, not this */
    stateid_op(&a[2], OP_FREE_STATEID, &s2);
    CHECK_EQ(on_file_st(&t, &fh, a), NFS4ERR_LOCKS_HELD);

    /* OPEN_DOWNGRADE to reading: seqid 3, then a WRITE through it NFS4ERR_OPENMODE; to
     * more than it has NFS4ERR_INVAL */
    stateid_op(&a[2], OP_OPEN_DOWNGRADE, &s2);
    a[2].nfs_argop4_u.opopen_downgrade.share_access = OPEN4_SHARE_ACCESS_READ;
    CHECK_EQ(on_file(&t, &fh, a, &res), NFS4_OK);
    stateid4 s4 =
        res_at(&res, 2)->nfs_resop4_u.opopen_downgrade.OPEN_DOWNGRADE4res_u.resok4.open_stateid;
    CHECK_EQ(s4.seqid, 3);
    done(&res);
    write_arg(&a[2], &s4, 0, UNSTABLE4, "x");
    CHECK_EQ(on_file_st(&t, &fh, a), NFS4ERR_OPENMODE);
    stateid_op(&a[2], OP_OPEN_DOWNGRADE, &s4);
    a[2].nfs_argop4_u.opopen_downgrade.share_access = OPEN4_SHARE_ACCESS_BOTH;
    CHECK_EQ(on_file_st(&t, &fh, a), NFS4ERR_INVAL);
    /* CLOSE with the old seqid: OLD_STATEID; then with the latest; then again BAD */
    stateid_op(&a[2], OP_CLOSE, &s2);
    CHECK_EQ(on_file_st(&t, &fh, a), NFS4ERR_OLD_STATEID);
    stateid_op(&a[2], OP_CLOSE, &s4);
    CHECK_EQ(on_file_st(&t, &fh, a), NFS4_OK);
    stateid_op(&a[2], OP_CLOSE, &s4);
    CHECK_EQ(on_file_st(&t, &fh, a), NFS4ERR_BAD_STATEID);

    /* OPEN's errors */
    CHECK_EQ(mkdir(path_in(&v, "dir"), 0777), 0);
    CHECK_EQ(symlink("new", path_in(&v, "link")), 0);
    CHECK_EQ(open_name(&t, "o1", OPEN4_SHARE_ACCESS_READ, 0, "dir", NULL), NFS4ERR_ISDIR);
    CHECK_EQ(open_name(&t, "o1", OPEN4_SHARE_ACCESS_READ, 0, "link", NULL), NFS4ERR_SYMLINK);
    CHECK_EQ(open_name(&t, "o1", OPEN4_SHARE_ACCESS_READ, 0, "none", NULL), NFS4ERR_NOENT);
    CHECK_EQ(open_name(&t, "o1", 0, 0, "new", NULL), NFS4ERR_INVAL);
    CHECK_EQ(open_name(&t, "o1", OPEN4_SHARE_ACCESS_READ, 4, "new", NULL), NFS4ERR_INVAL);
    CHECK_EQ(open_name(&t, "o1", OPEN4_SHARE_ACCESS_READ, 0, "..", NULL), NFS4ERR_BADNAME);
    put_file(&v, "secret", "s", 1);
    CHECK_EQ(chmod(path_in(&v, "secret"), 0600), 0); /* root's: uid 1000 may not read it */
    CHECK_EQ(open_name(&t, "o1", OPEN4_SHARE_ACCESS_READ, 0, "secret", NULL), NFS4ERR_ACCESS);
    /* GUARDED4 of a file there: NFS4ERR_EXIST */
    op(&a[1], OP_PUTROOTFH);
    open_arg(&a[2], "o1", OPEN4_SHARE_ACCESS_READ, 0, "new");
    OPEN4args *o = &a[2].nfs_argop4_u.opopen;
    o->openhow.opentype = OPEN4_CREATE;
    o->openhow.openflag4_u.how.mode = GUARDED4;
    CHECK_EQ(run(&t, a, 3, &res), NFS4ERR_EXIST);
    done(&res);
    /* CLAIM_FH: the current file (and never a create); CLAIM_PREVIOUS: no grace */
    open_arg(&a[2], "o1", OPEN4_SHARE_ACCESS_READ, 0, NULL);
    CHECK_EQ(on_file(&t, &fh, a, &res), NFS4_OK);
    stateid4 s5 = open_sid(&res, 2);
    done(&res);
    a[2].nfs_argop4_u.opopen.openhow.opentype = OPEN4_CREATE;
    CHECK_EQ(on_file_st(&t, &fh, a), NFS4ERR_INVAL);
    open_arg(&a[2], "o1", OPEN4_SHARE_ACCESS_READ, 0, NULL);
    a[2].nfs_argop4_u.opopen.claim.claim = CLAIM_PREVIOUS;
    CHECK_EQ(on_file_st(&t, &fh, a), NFS4ERR_NO_GRACE);
    /* a delegation asked for: none, and why */
    open_arg(&a[2], "o1", OPEN4_SHARE_ACCESS_READ | OPEN4_SHARE_ACCESS_WANT_READ_DELEG, 0, NULL);
    CHECK_EQ(on_file(&t, &fh, a, &res), NFS4_OK);
    open_delegation4 *d = &res_at(&res, 2)->nfs_resop4_u.opopen.OPEN4res_u.resok4.delegation;
    CHECK_EQ(d->delegation_type, OPEN_DELEGATE_NONE_EXT);
    CHECK_EQ(d->open_delegation4_u.od_whynone.ond_why, WND4_CONTENTION);
    s5 = open_sid(&res, 2);
    done(&res);
    /* READ and WRITE of a directory: NFS4ERR_ISDIR */
    nfs_fh4 dfh;
    char dbuf[NFS4_FHSIZE];
    handle_of(&t, "dir", &dfh, dbuf);
    read_arg(&a[2], &anon_sid, 0, 10);
    CHECK_EQ(on_file_st(&t, &dfh, a), NFS4ERR_ISDIR);
    stateid_op(&a[2], OP_CLOSE, &s5);
    CHECK_EQ(on_file_st(&t, &fh, a), NFS4_OK);
    t4_close(&t);
    srv_stop(&v);
}

/* READs and WRITEs through an open stateid take the open-file cache's descriptors, as
 * NFSv3's do: after the first of each (which opens the file through its handle, and
 * caches it), none opens the file again; nor does the CLOSE. */
TEST(nfs4_io_takes_cached_descriptors)
{
    struct srv v;
    struct t4 t;
    start_open(&v, &t, 16);
    /* the file, made by an OPEN that stays open for both */
    uint32_t mask[2];
    char vals[4];
    nfs_argop4 a[4];
    open_create_args(a, "o1", "io", mask, vals);
    COMPOUND4res res;
    CHECK_EQ(run(&t, a, 4, &res), NFS4_OK);
    stateid4 sid = open_sid(&res, 2);
    char fhbuf[NFS4_FHSIZE];
    nfs_fh4 fh;
    keep_fh(&res, 3, &fh, fhbuf);
    done(&res);
    struct uiw__vfs_file_counts n0, n;
    uiw__vfs_file_counts(v.s, &n0);
    enum { ROUNDS = 50 };
    for (int i = 0; i < ROUNDS; i++) {
        char data[16];
        snprintf(data, sizeof(data), "round %02d", i);
        write_arg(&a[2], &sid, 0, UNSTABLE4, data);
        CHECK_EQ(on_file_st(&t, &fh, a), NFS4_OK);
        read_arg(&a[2], &sid, 0, 100);
        CHECK_EQ(on_file(&t, &fh, a, &res), NFS4_OK);
        READ4resok *rr = &res_at(&res, 2)->nfs_resop4_u.opread.READ4res_u.resok4;
        CHECK_EQ(rr->data.data_len, strlen(data));
        CHECK(memcmp(rr->data.data_val, data, strlen(data)) == 0);
        CHECK(rr->eof);
        done(&res);
    }
    stateid_op(&a[2], OP_CLOSE, &sid);
    CHECK_EQ(on_file_st(&t, &fh, a), NFS4_OK);
    uiw__vfs_file_counts(v.s, &n);
    /* the first WRITE's and the first READ's */
    CHECK_EQ(n.resolves - n0.resolves, 2);
    CHECK_EQ(n.opens - n0.opens, 2);
    CHECK_EQ(n.hits - n0.hits, 2 * ROUNDS - 2);
    t4_close(&t);
    srv_stop(&v);
}

/* A server (lease: seconds, 0 for the default) with the file "f" that uid 1000 may
 * read and write, and two clients of it with a session each. */
static void two_clients(struct srv *v, unsigned lease, struct t4 *t1, struct t4 *t2)
{
    t4_start(v, lease);
    CHECK_EQ(chmod(v->dir, 0755), 0); /* the calls' uid 1000 searches it */
    put_file(v, "f", "shared", 6);
    CHECK_EQ(chmod(path_in(v, "f"), 0666), 0);
    t4_open(t1, v, NULL);
    session(t1, 8);
    t4_open(t2, v, NULL);
    t2->owner = "uiw-nfs4-test-client-2";
    t2->xid = 0x90000;
    session(t2, 8);
}

/* Share reservations between two clients (section 9.7): a deny refuses the other's
 * open (NFS4ERR_SHARE_DENIED) and its I/O without an open (NFS4ERR_LOCKED), until the
 * open that denies is closed. */
TEST(nfs4_open_share_deny)
{
    struct srv v;
    struct t4 t1, t2;
    two_clients(&v, 0, &t1, &t2);
    stateid4 s1, s2;
    CHECK_EQ(open_name(&t1, "a", OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_WRITE, "f", &s1),
             NFS4_OK);
    CHECK_EQ(open_name(&t2, "b", OPEN4_SHARE_ACCESS_WRITE, 0, "f", NULL), NFS4ERR_SHARE_DENIED);
    CHECK_EQ(open_name(&t2, "b", OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_READ, "f", NULL),
             NFS4ERR_SHARE_DENIED); /* the first has it open for reading */
    /* the same client's other owner is refused alike */
    CHECK_EQ(open_name(&t1, "c", OPEN4_SHARE_ACCESS_BOTH, 0, "f", NULL), NFS4ERR_SHARE_DENIED);
    CHECK_EQ(open_name(&t2, "b", OPEN4_SHARE_ACCESS_READ, 0, "f", &s2), NFS4_OK);
    nfs_argop4 a[3];
    nfs_fh4 fh;
    char fhbuf[NFS4_FHSIZE];
    handle_of(&t2, "f", &fh, fhbuf);
    /* I/O without an open: the write is denied, the read is not */
    write_arg(&a[2], &anon_sid, 0, FILE_SYNC4, "x");
    CHECK_EQ(on_file_st(&t2, &fh, a), NFS4ERR_LOCKED);
    read_arg(&a[2], &anon_sid, 0, 6);
    CHECK_EQ(on_file_st(&t2, &fh, a), NFS4_OK);
    /* another client's stateid is not this one's */
    read_arg(&a[2], &s1, 0, 6);
    CHECK_EQ(on_file_st(&t2, &fh, a), NFS4ERR_BAD_STATEID);
    /* the upgrade of the second to writing is denied as well */
    CHECK_EQ(open_name(&t2, "b", OPEN4_SHARE_ACCESS_WRITE, 0, "f", NULL), NFS4ERR_SHARE_DENIED);
    stateid_op(&a[2], OP_CLOSE, &s1);
    CHECK_EQ(on_file_st(&t1, &fh, a), NFS4_OK);
    CHECK_EQ(open_name(&t2, "b", OPEN4_SHARE_ACCESS_WRITE, 0, "f", &s2), NFS4_OK);
    CHECK_EQ(s2.seqid, 2);
    write_arg(&a[2], &anon_sid, 0, FILE_SYNC4, "S");
    CHECK_EQ(on_file_st(&t1, &fh, a), NFS4_OK);
    t4_close(&t1);
    t4_close(&t2);
    srv_stop(&v);
}

/* EXCLUSIVE4_1 (section 18.16.3): the verifier makes a retry succeed on the file it
 * made, another verifier gets NFS4ERR_EXIST; its attributes are applied. */
TEST(nfs4_open_exclusive)
{
    struct srv v;
    struct t4 t;
    start_open(&v, &t, 8);
    nfs_argop4 a[4];
    COMPOUND4res res;
    uint32_t mask[2];
    char vals[4];
    stateid4 sids[2];
    for (int i = 0; i < 3; i++) {
        op(&a[1], OP_PUTROOTFH);
        open_arg(&a[2], "x", OPEN4_SHARE_ACCESS_BOTH, 0, "excl");
        OPEN4args *o = &a[2].nfs_argop4_u.opopen;
        o->openhow.opentype = OPEN4_CREATE;
        o->openhow.openflag4_u.how.mode = EXCLUSIVE4_1;
        creatverfattr *cv = &o->openhow.openflag4_u.how.createhow4_u.ch_createboth;
        memcpy(cv->cva_verf, i < 2 ? "verifier" : "another!", NFS4_VERIFIER_SIZE);
        mode_attr(&cv->cva_attrs, mask, vals, 0604);
        nfsstat4 st = run(&t, a, 3, &res);
        if (i == 2) {
            CHECK_EQ(st, NFS4ERR_EXIST);
        } else {
            CHECK_EQ(st, NFS4_OK);
            OPEN4resok * or = &res_at(&res, 2)->nfs_resop4_u.opopen.OPEN4res_u.resok4;
            sids[i] = or->stateid;
            /* made by the first: its mode set; the retry made nothing */
            CHECK_EQ(or->attrset.bitmap4_len, i == 0 ? 2u : 0u);
        }
        done(&res);
    }
    /* the retry is the same open: an upgrade of the stateid */
    CHECK(memcmp(sids[0].other, sids[1].other, NFS4_OTHER_SIZE) == 0);
    CHECK_EQ(sids[1].seqid, 2);
    struct stat sb = lstat_ok(path_in(&v, "excl"));
    CHECK_EQ(sb.st_mode & 07777, 0604);
    CHECK_EQ(sb.st_size, 0);
    t4_close(&t);
    srv_stop(&v);
}

/* A READ of 1 MiB (the server's maxread) in one COMPOUND over TCP, the data as on disk,
 * and the end of the file (eof) after a short one. */
TEST(nfs4_read_1m)
{
    struct srv v;
    t4_start(&v, 0);
    CHECK_EQ(chmod(v.dir, 0755), 0); /* the calls' uid 1000 searches it */
    size_t len = (1u << 20) + (1u << 19);
    char *data = malloc(len);
    CHECK(data != NULL);
    for (size_t i = 0; i < len; i++)
        data[i] = (char)(i * 7 + (i >> 12));
    put_file(&v, "big", data, len);
    CHECK_EQ(chmod(path_in(&v, "big"), 0644), 0);
    struct t4 t;
    t4_open(&t, &v, NULL);
    session(&t, 8);
    nfs_argop4 a[5];
    COMPOUND4res res;
    op(&a[1], OP_PUTROOTFH);
    open_arg(&a[2], "r", OPEN4_SHARE_ACCESS_READ, 0, "big");
    read_arg(&a[3], &current_sid, 0, 1u << 20);
    CHECK_EQ(run(&t, a, 4, &res), NFS4_OK);
    READ4resok *rr = &res_at(&res, 3)->nfs_resop4_u.opread.READ4res_u.resok4;
    CHECK_EQ(rr->data.data_len, 1u << 20);
    CHECK(memcmp(rr->data.data_val, data, 1u << 20) == 0);
    CHECK(!rr->eof);
    stateid4 s = open_sid(&res, 2);
    done(&res);
    op(&a[1], OP_PUTROOTFH);
    op(&a[2], OP_LOOKUP);
    a[2].nfs_argop4_u.oplookup.objname.utf8string_len = 3;
    a[2].nfs_argop4_u.oplookup.objname.utf8string_val = "big";
    read_arg(&a[3], &s, 1u << 20, 1u << 20);
    CHECK_EQ(run(&t, a, 4, &res), NFS4_OK);
    rr = &res_at(&res, 3)->nfs_resop4_u.opread.READ4res_u.resok4;
    CHECK_EQ(rr->data.data_len, 1u << 19);
    CHECK(memcmp(rr->data.data_val, data + (1u << 20), 1u << 19) == 0);
    CHECK(rr->eof);
    done(&res);
    free(data);
    t4_close(&t);
    srv_stop(&v);
}

/* Five seconds of SEQUENCEs of t alone, every half second: past a lease of 2 s that
 * another client does not renew. */
static void renew_past_lease(struct t4 *t)
{
    for (int i = 0; i < 10; i++) {
        usleep(500000);
        nfs_argop4 a;
        COMPOUND4res res;
        CHECK_EQ(run(t, &a, 1, &res), NFS4_OK);
        done(&res);
    }
}

/* A client whose lease runs out loses its opens: their share reservations no longer
 * refuse another client. */
TEST(nfs4_open_lease_expiry)
{
    struct srv v;
    struct t4 t1, t2;
    two_clients(&v, 2, &t1, &t2);
    stateid4 s1;
    CHECK_EQ(open_name(&t1, "a", OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_BOTH, "f", &s1),
             NFS4_OK);
    CHECK_EQ(open_name(&t2, "b", OPEN4_SHARE_ACCESS_READ, 0, "f", NULL), NFS4ERR_SHARE_DENIED);
    /* the second renews its lease, the first does not */
    renew_past_lease(&t2);
    CHECK_EQ(open_name(&t2, "b", OPEN4_SHARE_ACCESS_BOTH, 0, "f", NULL), NFS4_OK);
    t4_close(&t1);
    t4_close(&t2);
    srv_stop(&v);
}

/* The stateids a client may hold are capped: past the cap OPEN gets NFS4ERR_RESOURCE,
 * and a CLOSE makes room again. */
TEST(nfs4_open_cap)
{
    struct srv v;
    t4_start(&v, 0);
    CHECK_EQ(chmod(v.dir, 0755), 0); /* the calls' uid 1000 searches it */
    uiw__nfs4_stids_set_max(uiw__nfs4_state_stids(v.s->nfs4), 4);
    struct t4 t;
    t4_open(&t, &v, NULL);
    session(&t, 8);
    stateid4 s[4];
    char name[8];
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof(name), "f%d", i);
        put_file(&v, name, "x", 1);
        CHECK_EQ(chmod(path_in(&v, name), 0666), 0);
        CHECK_EQ(open_name(&t, "o", OPEN4_SHARE_ACCESS_READ, 0, name, i < 4 ? &s[i] : NULL),
                 i < 4 ? NFS4_OK : NFS4ERR_RESOURCE);
    }
    /* a new owner is refused alike: the stateid would be past the cap */
    CHECK_EQ(open_name(&t, "other", OPEN4_SHARE_ACCESS_READ, 0, "f0", NULL), NFS4ERR_RESOURCE);
    nfs_argop4 a[3];
    nfs_fh4 fh;
    char fhbuf[NFS4_FHSIZE];
    handle_of(&t, "f0", &fh, fhbuf);
    stateid_op(&a[2], OP_CLOSE, &s[0]);
    CHECK_EQ(on_file_st(&t, &fh, a), NFS4_OK);
    CHECK_EQ(open_name(&t, "o", OPEN4_SHARE_ACCESS_READ, 0, "f4", NULL), NFS4_OK);
    t4_close(&t);
    srv_stop(&v);
}

/* One COMPOUND of minor version 2 on t's session: SEQUENCE, PUTROOTFH, LOOKUP name, then
 * the operation o; its result into *res. */
static void v42(struct t4 *t, const char *name, nfs_argop4 *o, COMPOUND4res *res)
{
    nfs_argop4 a[4];
    next_seq(t, &a[0]);
    op(&a[1], OP_PUTROOTFH);
    op(&a[2], OP_LOOKUP);
    a[2].nfs_argop4_u.oplookup.objname.utf8string_len = (u_int)strlen(name);
    a[2].nfs_argop4_u.oplookup.objname.utf8string_val = (char *)(uintptr_t)name;
    a[3] = *o;
    char buf[4096];
    size_t len = enc_ops(buf, sizeof(buf), a, 4);
    compound_raw(t, 2, 4, buf, len, res, 0, NULL);
}

/* NFSv4.2's SEEK (data at 0; a hole, or the end where the file system keeps none, past
 * the first 4 KiB; NFS4ERR_NXIO past the end), ALLOCATE (the size grows to cover it) and
 * DEALLOCATE (the range reads as zeros, the size stays), with the anonymous stateid, each
 * checked against the file on disk. */
TEST(nfs4_v42_seek_allocate)
{
    struct srv v;
    t4_start(&v, 0);
    CHECK_EQ(chmod(v.dir, 0755), 0); /* the calls' uid 1000 searches it */
    char data[4096];
    memset(data, 'd', sizeof(data));
    put_file(&v, "sparse", data, sizeof(data));
    const char *p = path_in(&v, "sparse");
    int fd = open(p, O_WRONLY);
    CHECK(fd >= 0);
    CHECK_EQ(pwrite(fd, data, sizeof(data), 1 << 20), (ssize_t)sizeof(data));
    close(fd);
    CHECK_EQ(chmod(p, 0666), 0);
    off_t size = (1 << 20) + 4096;
    struct t4 t;
    t4_open(&t, &v, NULL);
    session(&t, 8);
    nfs_argop4 o;
    COMPOUND4res res;
    uint64_t at[] = {0, 4096, (uint64_t)size};
    data_content4 what[] = {NFS4_CONTENT_DATA, NFS4_CONTENT_HOLE, NFS4_CONTENT_DATA};
    for (int i = 0; i < 3; i++) {
        op(&o, OP_SEEK);
        o.nfs_argop4_u.opseek.sa_offset = at[i];
        o.nfs_argop4_u.opseek.sa_what = what[i];
        v42(&t, "sparse", &o, &res);
        if (i == 2) {
            CHECK_EQ(res.status, NFS4ERR_NXIO);
        } else {
            CHECK_EQ(res.status, NFS4_OK);
            seek_res4 *r = &res.resarray.resarray_val[3].nfs_resop4_u.opseek.SEEK4res_u.resok4;
            if (i == 0) {
                CHECK_EQ(r->sr_offset, 0);
                CHECK(!r->sr_eof);
            } else {
                CHECK(r->sr_offset >= 4096 && r->sr_offset <= (uint64_t)size);
                CHECK_EQ(r->sr_eof, r->sr_offset == (uint64_t)size);
            }
        }
        xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    }
    op(&o, OP_ALLOCATE);
    o.nfs_argop4_u.opallocate.aa_offset = (uint64_t)size;
    o.nfs_argop4_u.opallocate.aa_length = 8192;
    v42(&t, "sparse", &o, &res);
    CHECK_EQ(res.status, NFS4_OK);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    struct stat sb;
    CHECK_EQ(stat(p, &sb), 0);
    CHECK_EQ(sb.st_size, size + 8192);
    op(&o, OP_DEALLOCATE);
    o.nfs_argop4_u.opdeallocate.da_offset = 0;
    o.nfs_argop4_u.opdeallocate.da_length = 4096;
    v42(&t, "sparse", &o, &res);
    CHECK_EQ(res.status, NFS4_OK);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    CHECK_EQ(stat(p, &sb), 0);
    CHECK_EQ(sb.st_size, size + 8192);
    char back[4096];
    fd = open(p, O_RDONLY);
    CHECK_EQ(pread(fd, back, sizeof(back), 0), (ssize_t)sizeof(back));
    close(fd);
    for (size_t i = 0; i < sizeof(back); i++)
        CHECK_EQ(back[i], 0);
    /* SEEK is no operation of minor version 1 */
    op(&o, OP_SEEK);
    nfs_argop4 a[2];
    next_seq(&t, &a[0]);
    a[1] = o;
    compound(&t, a, 2, &res);
    CHECK_EQ(res.status, NFS4ERR_OP_ILLEGAL);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    t4_close(&t);
    srv_stop(&v);
}

/* ---- byte-range locks (nfs4lock.c) ---- */

/* LOCK of a new lock-owner (`owner`, from open stateid s) or of an existing one (owner
 * NULL: s the lock stateid). */
static void lock_arg(nfs_argop4 *a, nfs_lock_type4 type, uint64_t off, uint64_t len,
                     const stateid4 *s, const char *owner)
{
    op(a, OP_LOCK);
    LOCK4args *l = &a->nfs_argop4_u.oplock;
    l->locktype = type;
    l->offset = off;
    l->length = len;
    l->locker.new_lock_owner = owner != NULL;
    if (owner) {
        open_to_lock_owner4 *o = &l->locker.locker4_u.open_owner;
        o->open_stateid = *s;
        o->lock_owner.owner.owner_len = (u_int)strlen(owner);
        o->lock_owner.owner.owner_val = (char *)(uintptr_t)owner;
    } else {
        l->locker.locker4_u.lock_owner.lock_stateid = *s;
    }
}

static void lockt_arg(nfs_argop4 *a, nfs_lock_type4 type, uint64_t off, uint64_t len,
                      const char *owner)
{
    op(a, OP_LOCKT);
    LOCKT4args *l = &a->nfs_argop4_u.oplockt;
    l->locktype = type;
    l->offset = off;
    l->length = len;
    l->owner.owner.owner_len = (u_int)strlen(owner);
    l->owner.owner.owner_val = (char *)(uintptr_t)owner;
}

static void locku_arg(nfs_argop4 *a, const stateid4 *s, uint64_t off, uint64_t len)
{
    op(a, OP_LOCKU);
    LOCKU4args *l = &a->nfs_argop4_u.oplocku;
    l->locktype = WRITE_LT;
    l->lock_stateid = *s;
    l->offset = off;
    l->length = len;
}

/* a[2] (a LOCK, LOCKT or LOCKU) on fh: its status; the stateid a LOCK or LOCKU gave in
 * *s, or the lock that denied it in *d (its owner's bytes in owner, 64 bytes). */
static nfsstat4 lock_op(struct t4 *t, const nfs_fh4 *fh, nfs_argop4 *a, stateid4 *s, LOCK4denied *d,
                        char *owner)
{
    COMPOUND4res res;
    nfsstat4 st = on_file(t, fh, a, &res);
    nfs_resop4 *r = res_at(&res, 2);
    if (st == NFS4_OK && s && a[2].argop == OP_LOCK)
        *s = r->nfs_resop4_u.oplock.LOCK4res_u.resok4.lock_stateid;
    if (st == NFS4_OK && s && a[2].argop == OP_LOCKU)
        *s = r->nfs_resop4_u.oplocku.LOCKU4res_u.lock_stateid;
    if (st == NFS4ERR_DENIED && d) {
        *d = a[2].argop == OP_LOCK ? r->nfs_resop4_u.oplock.LOCK4res_u.denied
                                   : r->nfs_resop4_u.oplockt.LOCKT4res_u.denied;
        CHECK(d->owner.owner.owner_len < 64);
        if (d->owner.owner.owner_len)
            memcpy(owner, d->owner.owner.owner_val, d->owner.owner.owner_len);
        owner[d->owner.owner.owner_len] = 0;
        d->owner.owner.owner_val = owner;
    }
    done(&res);
    return st;
}

static void check_denied(const LOCK4denied *d, uint64_t off, uint64_t len, nfs_lock_type4 type,
                         clientid4 cid, const char *owner)
{
    CHECK_EQ(d->offset, off);
    CHECK_EQ(d->length, len);
    CHECK_EQ(d->locktype, type);
    CHECK_EQ(d->owner.clientid, cid);
    CHECK_EQ(strcmp(d->owner.owner.owner_val, owner), 0);
}

/* Two clients' locks on one file (sections 9, 18.10 to 18.12): a conflicting LOCK and
 * LOCKT are denied with the lock in the way and its owner, one beside it is granted, and
 * LOCKU lets the other in; a local process's locks conflict both ways (an empty owner of
 * client ID 0); the lock stateid's seqid goes up with each LOCK and LOCKU (an older one
 * NFS4ERR_OLD_STATEID, a guessed one NFS4ERR_BAD_STATEID); it reads as its open; FREE_STATEID
 * waits for its locks to go; CLOSE releases them; the arguments' errors. */
TEST(nfs4_lock_two_clients)
{
    struct srv v;
    struct t4 t1, t2;
    two_clients(&v, 0, &t1, &t2);
    const char *path = path_in(&v, "f");
    stateid4 s1, s2, l1, l2, x;
    CHECK_EQ(open_name(&t1, "a", OPEN4_SHARE_ACCESS_BOTH, 0, "f", &s1), NFS4_OK);
    CHECK_EQ(open_name(&t2, "b", OPEN4_SHARE_ACCESS_BOTH, 0, "f", &s2), NFS4_OK);
    nfs_fh4 fh;
    char fhbuf[NFS4_FHSIZE], owner[64];
    handle_of(&t1, "f", &fh, fhbuf);
    nfs_argop4 a[3];
    LOCK4denied d;

    lock_arg(&a[2], WRITE_LT, 0, 100, &s1, "lo1");
    CHECK_EQ(lock_op(&t1, &fh, a, &l1, NULL, NULL), NFS4_OK);
    CHECK_EQ(l1.seqid, 1);
    lock_arg(&a[2], WRITEW_LT, 50, 10, &s2, "lo2");
    CHECK_EQ(lock_op(&t2, &fh, a, NULL, &d, owner), NFS4ERR_DENIED);
    check_denied(&d, 0, 100, WRITE_LT, t1.cid, "lo1");
    lockt_arg(&a[2], READ_LT, 99, 1, "lo2");
    CHECK_EQ(lock_op(&t2, &fh, a, NULL, &d, owner), NFS4ERR_DENIED);
    check_denied(&d, 0, 100, WRITE_LT, t1.cid, "lo1");
    lockt_arg(&a[2], WRITE_LT, 100, 10, "lo2");
    CHECK_EQ(lock_op(&t2, &fh, a, NULL, NULL, NULL), NFS4_OK);
    /* the owner's own lock is no conflict for it */
    lockt_arg(&a[2], WRITE_LT, 0, 10, "lo1");
    CHECK_EQ(lock_op(&t1, &fh, a, NULL, NULL, NULL), NFS4_OK);
    lock_arg(&a[2], READ_LT, 100, 10, &s2, "lo2");
    CHECK_EQ(lock_op(&t2, &fh, a, &l2, NULL, NULL), NFS4_OK);
    CHECK_EQ(l2.seqid, 1);

    /* an existing lock-owner's LOCK through its lock stateid; the seqid rules */
    lock_arg(&a[2], WRITE_LT, 200, 10, &l1, NULL);
    CHECK_EQ(lock_op(&t1, &fh, a, &x, NULL, NULL), NFS4_OK);
    CHECK_EQ(x.seqid, 2);
    CHECK_EQ(memcmp(x.other, l1.other, NFS4_OTHER_SIZE), 0);
    locku_arg(&a[2], &l1, 200, 10);
    CHECK_EQ(lock_op(&t1, &fh, a, NULL, NULL, NULL), NFS4ERR_OLD_STATEID);
    stateid4 bad = x;
    bad.seqid = 9;
    locku_arg(&a[2], &bad, 200, 10);
    CHECK_EQ(lock_op(&t1, &fh, a, NULL, NULL, NULL), NFS4ERR_BAD_STATEID);
    bad = x;
    bad.other[11] ^= 1;
    locku_arg(&a[2], &bad, 200, 10);
    CHECK_EQ(lock_op(&t1, &fh, a, NULL, NULL, NULL), NFS4ERR_BAD_STATEID);
    locku_arg(&a[2], &x, 200, 10); /* another client's lock stateid is none of its */
    CHECK_EQ(lock_op(&t2, &fh, a, NULL, NULL, NULL), NFS4ERR_BAD_STATEID);
    l1 = x;
    read_arg(&a[2], &l1, 0, 6);
    CHECK_EQ(on_file_st(&t1, &fh, a), NFS4_OK);
    stateid_op(&a[2], OP_FREE_STATEID, &l1);
    CHECK_EQ(on_file_st(&t1, &fh, a), NFS4ERR_LOCKS_HELD);

    /* LOCKU lets the other client in */
    locku_arg(&a[2], &l1, 0, 100);
    CHECK_EQ(lock_op(&t1, &fh, a, &l1, NULL, NULL), NFS4_OK);
    CHECK_EQ(l1.seqid, 3);
    lock_arg(&a[2], WRITE_LT, 50, 10, &l2, NULL);
    CHECK_EQ(lock_op(&t2, &fh, a, &l2, NULL, NULL), NFS4_OK);
    CHECK_EQ(l2.seqid, 2);

    /* a local process's locks and the clients' conflict both ways */
    CHECK_EQ(ofd_lock(path, F_WRLCK, 55, 1), -1);
    int lfd = ofd_lock(path, F_WRLCK, 300, 10);
    CHECK(lfd >= 0);
    lock_arg(&a[2], READ_LT, 305, 1, &l1, NULL);
    CHECK_EQ(lock_op(&t1, &fh, a, NULL, &d, owner), NFS4ERR_DENIED);
    check_denied(&d, 300, 10, WRITE_LT, 0, "");
    close(lfd);
    CHECK_EQ(lock_op(&t1, &fh, a, &l1, NULL, NULL), NFS4_OK);
    CHECK_EQ(l1.seqid, 4);
    CHECK_EQ(ofd_lock(path, F_WRLCK, 300, 10), -1);
    lfd = ofd_lock(path, F_RDLCK, 0, 10);
    CHECK(lfd >= 0);
    close(lfd);

    /* FREE_STATEID once the locks are gone; then the stateid is none */
    locku_arg(&a[2], &l2, 0, NFS4_UINT64_MAX);
    CHECK_EQ(lock_op(&t2, &fh, a, &l2, NULL, NULL), NFS4_OK);
    stateid_op(&a[2], OP_FREE_STATEID, &l2);
    CHECK_EQ(on_file_st(&t2, &fh, a), NFS4_OK);
    locku_arg(&a[2], &l2, 0, 1);
    CHECK_EQ(lock_op(&t2, &fh, a, NULL, NULL, NULL), NFS4ERR_BAD_STATEID);

    /* the arguments' errors */
    lock_arg(&a[2], WRITE_LT, 0, 0, &l1, NULL);
    CHECK_EQ(lock_op(&t1, &fh, a, NULL, NULL, NULL), NFS4ERR_INVAL);
    lock_arg(&a[2], WRITE_LT, UINT64_MAX - 5, 10, &l1, NULL);
    CHECK_EQ(lock_op(&t1, &fh, a, NULL, NULL, NULL), NFS4ERR_INVAL);
    lock_arg(&a[2], WRITE_LT, (uint64_t)INT64_MAX + 1, 1, &l1, NULL);
    CHECK_EQ(lock_op(&t1, &fh, a, NULL, NULL, NULL), NFS4ERR_BAD_RANGE);
    lock_arg(&a[2], (nfs_lock_type4)9, 0, 1, &l1, NULL);
    CHECK_EQ(lock_op(&t1, &fh, a, NULL, NULL, NULL), NFS4ERR_INVAL);
    lock_arg(&a[2], WRITE_LT, 0, 1, &l1, "lo3"); /* a new owner from a lock stateid */
    CHECK_EQ(lock_op(&t1, &fh, a, NULL, NULL, NULL), NFS4ERR_BAD_STATEID);
    lock_arg(&a[2], WRITE_LT, 0, 1, &s1, NULL); /* an existing one's from an open one */
    CHECK_EQ(lock_op(&t1, &fh, a, NULL, NULL, NULL), NFS4ERR_BAD_STATEID);
    stateid4 r1;
    CHECK_EQ(open_name(&t1, "r", OPEN4_SHARE_ACCESS_READ, 0, "f", &r1), NFS4_OK);
    lock_arg(&a[2], WRITE_LT, 0, 1, &r1, "lo4");
    CHECK_EQ(lock_op(&t1, &fh, a, NULL, NULL, NULL), NFS4ERR_OPENMODE);

    /* CLOSE releases the open's locks: the whole file is free to the other client */
    stateid_op(&a[2], OP_CLOSE, &s1);
    CHECK_EQ(on_file_st(&t1, &fh, a), NFS4_OK);
    lockt_arg(&a[2], WRITE_LT, 0, NFS4_UINT64_MAX, "lo2");
    CHECK_EQ(lock_op(&t2, &fh, a, NULL, NULL, NULL), NFS4_OK);
    locku_arg(&a[2], &l1, 0, 1);
    CHECK_EQ(lock_op(&t1, &fh, a, NULL, NULL, NULL), NFS4ERR_BAD_STATEID);
    t4_close(&t1);
    t4_close(&t2);
    srv_stop(&v);
}

/* Each lock stateid holds its ranges merged, and at most UIW__NFS4_LK_RANGES apart: past
 * that LOCK gets NFS4ERR_RESOURCE and a LOCKU that would split one NFS4ERR_LOCK_RANGE; the
 * stateids of a client are capped as the opens' (NFS4ERR_RESOURCE). */
TEST(nfs4_lock_bounded)
{
    struct srv v;
    struct t4 t1, t2;
    two_clients(&v, 0, &t1, &t2);
    stateid4 s1, l1;
    CHECK_EQ(open_name(&t1, "a", OPEN4_SHARE_ACCESS_BOTH, 0, "f", &s1), NFS4_OK);
    nfs_fh4 fh;
    char fhbuf[NFS4_FHSIZE];
    handle_of(&t1, "f", &fh, fhbuf);
    nfs_argop4 a[3];
    lock_arg(&a[2], READ_LT, 0, 1, &s1, "lo1");
    CHECK_EQ(lock_op(&t1, &fh, a, &l1, NULL, NULL), NFS4_OK);
    for (unsigned i = 1; i < UIW__NFS4_LK_RANGES; i++) {
        lock_arg(&a[2], READ_LT, 2 * i, 1, &l1, NULL);
        CHECK_EQ(lock_op(&t1, &fh, a, &l1, NULL, NULL), NFS4_OK);
    }
    lock_arg(&a[2], READ_LT, 2 * UIW__NFS4_LK_RANGES, 1, &l1, NULL);
    CHECK_EQ(lock_op(&t1, &fh, a, NULL, NULL, NULL), NFS4ERR_RESOURCE);
    /* one that joins two is taken (the count goes down) */
    lock_arg(&a[2], READ_LT, 1, 1, &l1, NULL);
    CHECK_EQ(lock_op(&t1, &fh, a, &l1, NULL, NULL), NFS4_OK);
    lock_arg(&a[2], READ_LT, 2 * UIW__NFS4_LK_RANGES, 1, &l1, NULL);
    CHECK_EQ(lock_op(&t1, &fh, a, &l1, NULL, NULL), NFS4_OK);
    locku_arg(&a[2], &l1, 1, 1);
    CHECK_EQ(lock_op(&t1, &fh, a, NULL, NULL, NULL), NFS4ERR_LOCK_RANGE);
    /* the whole file as one */
    lock_arg(&a[2], WRITE_LT, 0, NFS4_UINT64_MAX, &l1, NULL);
    CHECK_EQ(lock_op(&t1, &fh, a, &l1, NULL, NULL), NFS4_OK);
    locku_arg(&a[2], &l1, 1, 1);
    CHECK_EQ(lock_op(&t1, &fh, a, &l1, NULL, NULL), NFS4_OK);
    locku_arg(&a[2], &l1, 0, NFS4_UINT64_MAX);
    CHECK_EQ(lock_op(&t1, &fh, a, &l1, NULL, NULL), NFS4_OK);
    stateid_op(&a[2], OP_FREE_STATEID, &l1);
    CHECK_EQ(on_file_st(&t1, &fh, a), NFS4_OK);

    /* the client's cap of stateids: its open and one lock stateid */
    uiw__nfs4_stids_set_max(uiw__nfs4_state_stids(v.s->nfs4), 2);
    lock_arg(&a[2], READ_LT, 0, 1, &s1, "lo1");
    CHECK_EQ(lock_op(&t1, &fh, a, &l1, NULL, NULL), NFS4_OK);
    lock_arg(&a[2], READ_LT, 0, 1, &s1, "lo2");
    CHECK_EQ(lock_op(&t1, &fh, a, NULL, NULL, NULL), NFS4ERR_RESOURCE);
    t4_close(&t1);
    t4_close(&t2);
    srv_stop(&v);
}

/* A client whose lease ran out loses its locks: the other gets them. */
TEST(nfs4_lock_lease_expiry)
{
    struct srv v;
    struct t4 t1, t2;
    two_clients(&v, 2, &t1, &t2);
    stateid4 s1, s2, l1;
    CHECK_EQ(open_name(&t1, "a", OPEN4_SHARE_ACCESS_BOTH, 0, "f", &s1), NFS4_OK);
    CHECK_EQ(open_name(&t2, "b", OPEN4_SHARE_ACCESS_BOTH, 0, "f", &s2), NFS4_OK);
    nfs_fh4 fh;
    char fhbuf[NFS4_FHSIZE];
    handle_of(&t1, "f", &fh, fhbuf);
    nfs_argop4 a[3];
    lock_arg(&a[2], WRITE_LT, 0, NFS4_UINT64_MAX, &s1, "lo1");
    CHECK_EQ(lock_op(&t1, &fh, a, &l1, NULL, NULL), NFS4_OK);
    lock_arg(&a[2], WRITE_LT, 10, 1, &s2, "lo2");
    CHECK_EQ(lock_op(&t2, &fh, a, NULL, NULL, NULL), NFS4ERR_DENIED);
    renew_past_lease(&t2);
    CHECK_EQ(lock_op(&t2, &fh, a, NULL, NULL, NULL), NFS4_OK);
    t4_close(&t1);
    t4_close(&t2);
    srv_stop(&v);
}

/* After a restart, in the grace period, a client of the last instance reclaims its open
 * (CLAIM_PREVIOUS) and its lock (LOCK with reclaim); a LOCK that is no reclaim, and
 * LOCKT, get NFS4ERR_GRACE; out of grace a reclaim gets NFS4ERR_NO_GRACE. */
TEST(nfs4_lock_reclaim_in_grace)
{
    char dir[] = "/tmp/uiw-nfs4-lock-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    struct srv v;
    start_dir(&v, 3, dir);
    CHECK_EQ(chmod(v.dir, 0755), 0);
    put_file(&v, "f", "shared", 6);
    CHECK_EQ(chmod(path_in(&v, "f"), 0666), 0);
    struct t4 t;
    t4_open(&t, &v, NULL);
    t.owner = "lock-reclaimer";
    session(&t, 8);
    stateid4 s, l;
    nfs_fh4 fh;
    char fhbuf[NFS4_FHSIZE];
    nfs_argop4 a[3];
    CHECK_EQ(reclaim_complete(&t), NFS4_OK);
    CHECK_EQ(open_name(&t, "a", OPEN4_SHARE_ACCESS_BOTH, 0, "f", &s), NFS4_OK);
    handle_of(&t, "f", &fh, fhbuf);
    lock_arg(&a[2], WRITE_LT, 0, 10, &s, "lo");
    a[2].nfs_argop4_u.oplock.reclaim = TRUE;
    CHECK_EQ(lock_op(&t, &fh, a, NULL, NULL, NULL), NFS4ERR_NO_GRACE);
    struct uiw__nfsd_reclaim_counts rc;
    CHECK_EQ(uiw__nfsd_reclaim_counts(v.s, &rc), 0);
    CHECK_EQ(rc.opens + rc.locks, 0); /* refused: none counted */
    t4_close(&t);
    srv_stop(&v);

    start_dir(&v, 3, dir); /* a new export directory: the file made again */
    CHECK_EQ(uiw__nfs4_in_grace(v.s->nfs4), 1);
    CHECK_EQ(chmod(v.dir, 0755), 0);
    put_file(&v, "f", "shared", 6);
    CHECK_EQ(chmod(path_in(&v, "f"), 0666), 0);
    t4_open(&t, &v, NULL);
    t.owner = "lock-reclaimer";
    session(&t, 8);
    handle_of(&t, "f", &fh, fhbuf);
    open_arg(&a[2], "a", OPEN4_SHARE_ACCESS_BOTH, 0, NULL);
    a[2].nfs_argop4_u.opopen.claim.claim = CLAIM_PREVIOUS;
    a[2].nfs_argop4_u.opopen.claim.open_claim4_u.delegate_type = OPEN_DELEGATE_NONE;
    COMPOUND4res res;
    CHECK_EQ(on_file(&t, &fh, a, &res), NFS4_OK);
    s = open_sid(&res, 2);
    done(&res);
    lock_arg(&a[2], WRITE_LT, 0, 10, &s, "lo");
    CHECK_EQ(lock_op(&t, &fh, a, NULL, NULL, NULL), NFS4ERR_GRACE);
    lockt_arg(&a[2], WRITE_LT, 0, 10, "lo");
    CHECK_EQ(lock_op(&t, &fh, a, NULL, NULL, NULL), NFS4ERR_GRACE);
    lock_arg(&a[2], WRITE_LT, 0, 10, &s, "lo");
    a[2].nfs_argop4_u.oplock.reclaim = TRUE;
    CHECK_EQ(lock_op(&t, &fh, a, &l, NULL, NULL), NFS4_OK);
    CHECK_EQ(l.seqid, 1);
    CHECK_EQ(ofd_lock(path_in(&v, "f"), F_RDLCK, 5, 1), -1);
    CHECK_EQ(uiw__nfsd_reclaim_counts(v.s, &rc), 0);
    CHECK_EQ(rc.opens, 1);
    CHECK_EQ(rc.locks, 1);
    CHECK_EQ(reclaim_complete(&t), NFS4_OK);
    CHECK_EQ(uiw__nfs4_in_grace(v.s->nfs4), 0);
    lock_arg(&a[2], WRITE_LT, 20, 10, &l, NULL);
    a[2].nfs_argop4_u.oplock.reclaim = TRUE;
    CHECK_EQ(lock_op(&t, &fh, a, NULL, NULL, NULL), NFS4ERR_NO_GRACE);
    a[2].nfs_argop4_u.oplock.reclaim = FALSE;
    CHECK_EQ(lock_op(&t, &fh, a, &l, NULL, NULL), NFS4_OK);
    CHECK_EQ(l.seqid, 2);
    CHECK_EQ(uiw__nfsd_reclaim_counts(v.s, &rc), 0);
    CHECK_EQ(rc.locks, 1); /* the LOCK that was no reclaim is not counted */
    t4_close(&t);
    srv_stop(&v);
    it_rmtree(dir);
}
