/*
 * ONC RPC calls in flight on the TCP connection of a libtirpc CLIENT (clnt_vc), for the
 * NFS client (client.c). clnt_vc makes one call at a time: it sends a call, then reads
 * the connection until that call's reply has come, dropping any other. A pipe writes
 * many calls on the same connection and matches the replies, as they come, to their
 * calls by XID: each call encoded whole (RPC header, the CLIENT's credential, the
 * arguments) as one record (RFC 5531 record marking) into a buffer that is sent as the
 * socket takes it, never blocking; each reply decoded into its call's results as soon as
 * its record is whole, and the call's `done` run. The XIDs come from the CLIENT's own
 * sequence, which the pipe holds from its first call on and gives back before a call of
 * clnt_vc's (uiw__nfs_pipe_give_xid), so that no call of clnt_vc's takes one of the
 * pipe's again (a server's duplicate-reply cache would answer it with another call's
 * reply).
 *
 * A pipe that serves backward calls (uiw__nfs_pipe_serve: NFSv4.1's back channel on the
 * fore channel's connection, RFC 8881 section 2.10.3.1) is the only reader of its
 * connection: every call goes through it, and the records whose msg_type is CALL are
 * handed to the server function, their replies sent on the same connection.
 *
 * One thread drives a pipe. Calls end only inside uiw__nfs_pipe_run (or _resend, _fail),
 * and `done` may start calls (but not run the pipe). A connection that breaks is the caller's to
 * make again: uiw__nfs_pipe_run says so, the caller connects a new CLIENT and has every call in
 * flight sent again on it with its XID (uiw__nfs_pipe_resend).
 */
#ifndef UIW_NFS_PIPE_H
#define UIW_NFS_PIPE_H

#include <stdint.h>

#include <rpc/rpc.h>

struct uiw__nfs_pipe;

/* Called once per call when it ends: RPC_SUCCESS with the results decoded, or why not. */
typedef void (*uiw__nfs_pipe_done)(void *arg, enum clnt_stat st);

/* A pipe of calls to program prog, version vers. NULL (errno set) without memory. */
struct uiw__nfs_pipe *uiw__nfs_pipe_create(uint32_t prog, uint32_t vers);
/* Its buffers made ready for replies of `in` bytes and calls of `out` bytes (READ and
 * WRITE payloads and their headers), their pages touched: the first large calls do not
 * grow them, nor fault in fresh memory, within their latency. A larger one still grows
 * them. 0, or -ENOMEM. */
int uiw__nfs_pipe_reserve(struct uiw__nfs_pipe *p, size_t in, size_t out);
/* Frees the pipe; calls still in flight are forgotten without their `done`. */
void uiw__nfs_pipe_destroy(struct uiw__nfs_pipe *p);

/* Calls started and not yet ended; the most there were at once. */
unsigned uiw__nfs_pipe_pending(const struct uiw__nfs_pipe *p);
unsigned uiw__nfs_pipe_most(const struct uiw__nfs_pipe *p);
/* Times its buffers grew for a call or a reply (not counting uiw__nfs_pipe_reserve). */
unsigned uiw__nfs_pipe_grown(const struct uiw__nfs_pipe *p);

/* Encode a call on cl's connection and queue it (it goes out from uiw__nfs_pipe_run).
 * args is encoded before this returns; res must stay valid until done runs. 0, or
 * -ENOMEM, -EMSGSIZE (the arguments do not encode). */
int uiw__nfs_pipe_call(struct uiw__nfs_pipe *p, CLIENT *cl, uint32_t proc, xdrproc_t xargs,
                       void *args, xdrproc_t xres, void *res, uiw__nfs_pipe_done done, void *arg);

/* A backward call's record (len bytes: the RPC message, its fragments joined) answered:
 * its reply's RPC message written to reply (room for cap bytes), its length returned, or
 * 0 to send nothing (a record that does not decode as a call). It runs inside
 * uiw__nfs_pipe_run and must not use the pipe. */
typedef size_t (*uiw__nfs_pipe_server)(void *arg, const char *rec, size_t len, char *reply,
                                       size_t cap);
/* The room a backward call's reply has. */
#define UIW__NFS_PIPE_REPLY_MAX 65536u

/* Serve the backward calls that come on the connection with fn (NULL: they are dropped,
 * as a peer that serves no callback program would). From then on the pipe keeps what it
 * has read and not yet sent across calls: every call on the connection must go through
 * it. */
void uiw__nfs_pipe_serve(struct uiw__nfs_pipe *p, uiw__nfs_pipe_server fn, void *arg);
/* Backward calls answered (or dropped) so far. */
unsigned uiw__nfs_pipe_served(const struct uiw__nfs_pipe *p);

#define UIW__NFS_PIPE_LOST (-1000)

/* Send what is queued, read the replies that came and end their calls, waiting for up to
 * timeout_ms (0: only what is ready; -1: until a call ends). Returns how many calls
 * ended (it returns as soon as some did, or a backward call was served), or
 * UIW__NFS_PIPE_LOST when the connection broke or the oldest call has had no reply for
 * `patience` seconds: then nothing more is read or sent until uiw__nfs_pipe_resend. With
 * no call in flight it returns at once, unless the pipe serves backward calls and
 * timeout_ms is not -1: then it waits for them (and for the connection to end). */
int uiw__nfs_pipe_run(struct uiw__nfs_pipe *p, CLIENT *cl, int timeout_ms, double patience);

/* After UIW__NFS_PIPE_LOST: every call in flight counted as sent once more; those sent
 * more than `most` times end with RPC_TIMEDOUT, the others go again, with their XIDs, on
 * cl's connection (a new one), whose XID sequence the pipe then holds where its own was.
 * Returns how many calls ended. */
int uiw__nfs_pipe_resend(struct uiw__nfs_pipe *p, CLIENT *cl, int most);

/* End every call in flight with st (the connection cannot be made again); returns how
 * many ended. */
int uiw__nfs_pipe_fail(struct uiw__nfs_pipe *p, enum clnt_stat st);

/* Before a call of clnt_vc's on cl: the XID sequence the pipe holds given back to cl. */
void uiw__nfs_pipe_give_xid(struct uiw__nfs_pipe *p, CLIENT *cl);
/* The last XID cl's sequence gave; make its next one the one after last. */
uint32_t uiw__nfs_clnt_last_xid(CLIENT *cl);
void uiw__nfs_clnt_set_last_xid(CLIENT *cl, uint32_t last);

#endif
