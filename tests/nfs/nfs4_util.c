/* The NFSv4.1 tests' client: nfs4_util.h says what. */
#include "nfs4_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interop.h"
#include "io/pcap.h"
#include "nfs/xdr_data.h"
#include "rawrpc.h"
#include "test.h"

/* One call of NFSv4 procedure `proc` with raw arguments: the reply record (malloc'd,
 * its mark left out), recorded in the capture. */
char *call4(struct t4 *t, uint32_t xid, uint32_t proc, const void *args, size_t alen, size_t *rlen)
{
    char *rec = malloc(4 + 512 + alen);
    CHECK(rec != NULL);
    size_t hl = call_header(rec + 4, xid, 100003, 4, proc, AUTH_SYS);
    if (alen)
        memcpy(rec + 4 + hl, args, alen);
    uint32_t mark = htonl(0x80000000u | (uint32_t)(hl + alen));
    memcpy(rec, &mark, 4);
    send_all(t->fd, rec, 4 + hl + alen);
    char *r = recv_record(t->fd, rlen);
    if (t->pc) {
        struct iovec iov = {rec, 4 + hl + alen};
        uiw__pcap_data(t->pc, 1, &iov, 1, iov.iov_len);
        mark = htonl(0x80000000u | (uint32_t)*rlen);
        struct iovec rv[2] = {{&mark, 4}, {r, *rlen}};
        uiw__pcap_data(t->pc, 0, rv, 2, 4 + *rlen);
        t->calls++;
    }
    free(rec);
    return r;
}

/* A COMPOUND's arguments as raw bytes: tag "t4", the minor version, then the operations'
 * XDR (raw). */
size_t raw_args(char *buf, size_t cap, uint32_t minor, uint32_t nops, const void *ops, size_t olen)
{
    uint32_t h[] = {htonl(2), 0, htonl(minor), htonl(nops)};
    memcpy(h + 1, "t4\0\0", 4);
    CHECK(sizeof(h) + olen <= cap);
    memcpy(buf, h, sizeof(h));
    memcpy(buf + sizeof(h), ops, olen);
    return sizeof(h) + olen;
}

/* The operations' XDR. */
size_t enc_ops(char *buf, size_t cap, nfs_argop4 *ops, unsigned n)
{
    XDR x;
    xdrmem_create(&x, buf, (u_int)cap, XDR_ENCODE);
    for (unsigned i = 0; i < n; i++)
        CHECK(xdr_nfs_argop4(&x, &ops[i]));
    size_t len = xdr_getpos(&x);
    xdr_destroy(&x);
    return len;
}

/* A COMPOUND of raw operations; the reply decoded into *res (free with xdr_free); the
 * reply's bytes returned when keep (else freed, NULL). */
char *compound_raw(struct t4 *t, uint32_t minor, uint32_t nops, const void *ops, size_t olen,
                   COMPOUND4res *res, int keep, size_t *rlen)
{
    char args[16384];
    size_t alen = raw_args(args, sizeof(args), minor, nops, ops, olen);
    size_t n;
    uint32_t xid = ++t->xid;
    char *r = call4(t, xid, 1, args, alen, &n);
    struct rpc_msg m;
    memset(res, 0, sizeof(*res));
    decode_reply(r, n, xid, &m, UIW__XDRPROC(xdr_COMPOUND4res), res);
    CHECK_EQ(m.rm_reply.rp_stat, MSG_ACCEPTED);
    CHECK_EQ(m.acpted_rply.ar_stat, SUCCESS);
    CHECK_EQ(res->tag.utf8string_len, 2);
    CHECK(memcmp(res->tag.utf8string_val, "t4", 2) == 0); /* the tag echoed */
    if (rlen)
        *rlen = n;
    if (keep)
        return r;
    free(r);
    return NULL;
}

void compound(struct t4 *t, nfs_argop4 *ops, unsigned n, COMPOUND4res *res)
{
    char buf[16384];
    size_t len = enc_ops(buf, sizeof(buf), ops, n);
    compound_raw(t, 1, n, buf, len, res, 0, NULL);
}

nfsstat4 st_of(const nfs_resop4 *r)
{
    nfsstat4 st;
    memcpy(&st, &r->nfs_resop4_u, sizeof(st));
    return st;
}

void sequence(struct t4 *t, nfs_argop4 *a, uint32_t slot, uint32_t seqid, int cachethis)
{
    memset(a, 0, sizeof(*a));
    a->argop = OP_SEQUENCE;
    SEQUENCE4args *s = &a->nfs_argop4_u.opsequence;
    memcpy(s->sa_sessionid, t->sid, sizeof(t->sid));
    s->sa_sequenceid = seqid;
    s->sa_slotid = slot;
    s->sa_highest_slotid = slot;
    s->sa_cachethis = cachethis;
}

/* The next SEQUENCE of slot 0. */
void next_seq(struct t4 *t, nfs_argop4 *a)
{
    sequence(t, a, 0, ++t->seq[0], 0);
}

void op(nfs_argop4 *a, nfs_opnum4 n)
{
    memset(a, 0, sizeof(*a));
    a->argop = n;
}

/* EXCHANGE_ID and CREATE_SESSION (maxops operations per COMPOUND asked for). */
void session(struct t4 *t, uint32_t maxops)
{
    nfs_argop4 a;
    op(&a, OP_EXCHANGE_ID);
    EXCHANGE_ID4args *ea = &a.nfs_argop4_u.opexchange_id;
    memcpy(ea->eia_clientowner.co_verifier, "verf0001", NFS4_VERIFIER_SIZE);
    ea->eia_clientowner.co_ownerid.co_ownerid_len = (u_int)strlen(t->owner);
    ea->eia_clientowner.co_ownerid.co_ownerid_val = (char *)(uintptr_t)t->owner;
    ea->eia_state_protect.spa_how = SP4_NONE;
    COMPOUND4res res;
    compound(t, &a, 1, &res);
    CHECK_EQ(res.status, NFS4_OK);
    CHECK_EQ(res.resarray.resarray_len, 1);
    EXCHANGE_ID4resok *er =
        &res.resarray.resarray_val[0].nfs_resop4_u.opexchange_id.EXCHANGE_ID4res_u.eir_resok4;
    CHECK_EQ(er->eir_flags, EXCHGID4_FLAG_USE_NON_PNFS); /* new: not confirmed */
    CHECK_EQ(er->eir_state_protect.spr_how, SP4_NONE);
    CHECK(er->eir_server_owner.so_major_id.so_major_id_len > 0);
    t->cid = er->eir_clientid;
    uint32_t csseq = er->eir_sequenceid;
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);

    op(&a, OP_CREATE_SESSION);
    CREATE_SESSION4args *ca = &a.nfs_argop4_u.opcreate_session;
    ca->csa_clientid = t->cid;
    ca->csa_sequence = csseq;
    ca->csa_flags = 0; /* no back channel: test_nfs4_cb.c reads its calls */
    channel_attrs4 ch = {0, 1u << 30, 1u << 30, 1u << 30, maxops, 1000, {0, NULL}};
    ca->csa_fore_chan_attrs = ch;
    ca->csa_back_chan_attrs = ch;
    ca->csa_cb_program = 0x40000000;
    compound(t, &a, 1, &res);
    CHECK_EQ(res.status, NFS4_OK);
    CREATE_SESSION4resok *cr =
        &res.resarray.resarray_val[0].nfs_resop4_u.opcreate_session.CREATE_SESSION4res_u.csr_resok4;
    CHECK_EQ(cr->csr_sequence, csseq);
    /* clamped to the server's limits */
    CHECK_EQ(cr->csr_fore_chan_attrs.ca_maxrequests, 128);
    CHECK_EQ(cr->csr_fore_chan_attrs.ca_maxoperations, maxops < 16 ? maxops : 16);
    CHECK_EQ(cr->csr_fore_chan_attrs.ca_maxrequestsize, (1u << 20) + 16384);
    CHECK_EQ(cr->csr_fore_chan_attrs.ca_maxresponsesize_cached, 8192);
    CHECK_EQ(cr->csr_flags, 0);
    memcpy(t->sid, cr->csr_sessionid, sizeof(t->sid));
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
    memset(t->seq, 0, sizeof(t->seq));

    /* EXCHANGE_ID again: the record is confirmed now */
    op(&a, OP_EXCHANGE_ID);
    memcpy(ea->eia_clientowner.co_verifier, "verf0001", NFS4_VERIFIER_SIZE);
    ea->eia_clientowner.co_ownerid.co_ownerid_len = (u_int)strlen(t->owner);
    ea->eia_clientowner.co_ownerid.co_ownerid_val = (char *)(uintptr_t)t->owner;
    compound(t, &a, 1, &res);
    CHECK_EQ(res.status, NFS4_OK);
    er = &res.resarray.resarray_val[0].nfs_resop4_u.opexchange_id.EXCHANGE_ID4res_u.eir_resok4;
    CHECK_EQ(er->eir_clientid, t->cid);
    CHECK_EQ(er->eir_flags, EXCHGID4_FLAG_USE_NON_PNFS | EXCHGID4_FLAG_CONFIRMED_R);
    xdr_free(UIW__XDRPROC(xdr_COMPOUND4res), (char *)&res);
}

void t4_open(struct t4 *t, const struct srv *v, const char *pcap)
{
    memset(t, 0, sizeof(*t));
    t->v = v;
    t->owner = OWNER;
    t->fd = tcp_to(v->tcp);
    t->xid = 0x40000;
    if (pcap) {
        struct sockaddr_in cl = {.sin_family = AF_INET, .sin_port = htons(876)};
        struct sockaddr_in sv = {.sin_family = AF_INET, .sin_port = htons(2049)};
        cl.sin_addr.s_addr = sv.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        t->pc = uiw__pcap_open(pcap, (struct sockaddr *)&cl, (struct sockaddr *)&sv);
        CHECK(t->pc != NULL);
    }
}

void t4_close(struct t4 *t)
{
    if (t->pc)
        uiw__pcap_close(t->pc);
    close(t->fd);
}

void t4_exports(struct srv *v, const char *text)
{
    struct uiw__nfsd_opts o;
    uiw__nfsd_opts_default(&o);
    o.nfs4 = 1;
    srv_exports_opts(v, text, &o);
}

/* A server with NFSv4 on (lease: seconds, 0 for the default). */
void t4_start(struct srv *v, unsigned lease)
{
    struct uiw__nfsd_opts o;
    uiw__nfsd_opts_default(&o);
    o.no_root_squash = 1;
    o.nfs4 = 1;
    o.lease_time = lease;
    srv_start(v, &o);
}
