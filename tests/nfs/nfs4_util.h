/* The NFSv4.1 tests' client (test_nfs4_server.c, test_nfs4_ns.c): COMPOUNDs as raw records
 * over TCP to an in-process uiw-nfsd, a session, and the operations' arguments. */
#ifndef UIW_TESTS_NFS_NFS4_UTIL_H
#define UIW_TESTS_NFS_NFS4_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "nfs4.h"
#include "nfs_util.h"

#define OWNER "uiw-nfs4-test-client"

struct t4 {
    const struct srv *v;
    const char *owner; /* the client's co_ownerid */
    int fd;
    uint32_t xid;
    struct uiw__pcap *pc; /* the traffic, for tshark (NULL: none) */
    unsigned calls;
    clientid4 cid;
    sessionid4 sid;
    uint32_t seq[64]; /* the last seqid of each slot */
};

/* One call of NFSv4 procedure `proc` with raw arguments: the reply record (malloc'd,
 * its mark left out), recorded in the capture. */
char *call4(struct t4 *t, uint32_t xid, uint32_t proc, const void *args, size_t alen, size_t *rlen);
/* A COMPOUND's arguments as raw bytes: tag "t4", the minor version, then the operations'
 * XDR (raw). */
size_t raw_args(char *buf, size_t cap, uint32_t minor, uint32_t nops, const void *ops, size_t olen);
/* The operations' XDR. */
size_t enc_ops(char *buf, size_t cap, nfs_argop4 *ops, unsigned n);
/* A COMPOUND of raw operations; the reply decoded into *res (free with xdr_free); the
 * reply's bytes returned when keep (else freed, NULL). */
char *compound_raw(struct t4 *t, uint32_t minor, uint32_t nops, const void *ops, size_t olen,
                   COMPOUND4res *res, int keep, size_t *rlen);
void compound(struct t4 *t, nfs_argop4 *ops, unsigned n, COMPOUND4res *res);
nfsstat4 st_of(const nfs_resop4 *r);
void sequence(struct t4 *t, nfs_argop4 *a, uint32_t slot, uint32_t seqid, int cachethis);
/* The next SEQUENCE of slot 0. */
void next_seq(struct t4 *t, nfs_argop4 *a);
void op(nfs_argop4 *a, nfs_opnum4 n);
/* EXCHANGE_ID and CREATE_SESSION (maxops operations per COMPOUND asked for). */
void session(struct t4 *t, uint32_t maxops);
void t4_open(struct t4 *t, const struct srv *v, const char *pcap);
void t4_close(struct t4 *t);
/* A server with NFSv4 on (lease: seconds, 0 for the default). */
void t4_start(struct srv *v, unsigned lease);
/* A server with NFSv4 on, exporting by an exports file's lines (srv_exports_opts). */
void t4_exports(struct srv *v, const char *text);

#endif
