/* Raw ONC RPC records to uiw-nfsd for the NFS tests. */
#ifndef UIW_TESTS_NFS_RAWRPC_H
#define UIW_TESTS_NFS_RAWRPC_H

#include <stddef.h>
#include <stdint.h>

#include <rpc/rpc.h>

/* The stamp of the AUTH_SYS credentials call_header writes (uid and gid 1000). */
extern uint32_t rawrpc_stamp;

void send_all(int fd, const void *p, size_t n);
/* n bytes, each read waiting at most 20 s (the test fails otherwise). */
void recv_all(int fd, void *p, size_t n);
/* An ONC RPC call header (flavor AUTH_NONE, AUTH_SYS or another) at buf, at most 512
 * bytes; returns its length. */
size_t call_header(char *buf, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc,
                   int flavor);
/* A reply record, its fragments joined: its length in *rlen, the bytes malloc'd. */
char *recv_record(int fd, size_t *rlen);
/* One call: header then `args` as raw bytes; returns the reply record (malloc'd). */
char *call_raw(int fd, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc, int flavor,
               const void *args, size_t alen, size_t *rlen);
/* Decode a reply's header (the call's XID checked); results, when accepted with SUCCESS,
 * with xres into res. */
void decode_reply(const char *r, size_t n, uint32_t xid, struct rpc_msg *m, xdrproc_t xres,
                  void *res);
/* A call with AUTH_SYS must get this accept_stat (PROG_MISMATCH: naming version 3). */
void expect_accept(int fd, uint32_t prog, uint32_t vers, uint32_t proc, const void *a, size_t alen,
                   enum accept_stat want);
/* The NFS status of an accepted reply: the first word of its results. */
uint32_t nfs_status(const char *r, size_t n);
/* GETATTR of handle h (len bytes) as `flavor`: the NFS status. */
uint32_t getattr_raw(int fd, uint32_t xid, int flavor, const char *h, uint32_t len);

#endif
