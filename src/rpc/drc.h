/*
 * The duplicate-reply cache (drc.c) as any transport's server uses it: calls keyed as
 * knfsd keys them (XID, program, version, procedure, the transport, the caller's address
 * without its port, a checksum of the call's first bytes), replies kept as bytes. The
 * RPC-over-RDMA responder uses it through rpc_internal.h's functions on its calls;
 * uiw-nfsd's TCP server through these, and both may share one cache.
 */
#ifndef UIW_RPC_DRC_H
#define UIW_RPC_DRC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

struct uiw__drc;
struct uiw_rpc_svc;

enum uiw__drc_verdict { UIW__DRC_MISS = 0, UIW__DRC_HIT, UIW__DRC_WAIT };

/* The transports a key names (a call sent again on another transport is another call, as
 * on knfsd). */
enum { UIW__DRC_RDMA = 0, UIW__DRC_TCP = 1 };

struct uiw__drc_key {
    uint32_t xid, prog, vers, proc, csum;
    uint8_t xprt, family;
    uint8_t addr[16];
};

/* A call's key: `start` are the call's bytes after its XID (the first 256 are summed). */
void uiw__drc_key(struct uiw__drc_key *k, uint8_t xprt, uint32_t xid, uint32_t prog, uint32_t vers,
                  uint32_t proc, const struct sockaddr_storage *peer, const void *start, size_t n);

/* A cache of its own: entries, each with room for a reply of max_reply bytes. */
struct uiw__drc *uiw__drc_create(uint32_t entries, uint32_t max_reply);
void uiw__drc_free(struct uiw__drc *d);
/* The room each entry has for a reply. */
uint32_t uiw__drc_max_reply(const struct uiw__drc *d);

/* Look a call up: MISS (the caller now owns an entry for it, *slot: run the call, then
 * uiw__drc_end), HIT (its reply's bytes copied into out, at most cap, *len of them: send
 * them), WAIT (the same call runs now: answer nothing). While the same call runs, one
 * retransmission at a time waits up to wait_ms for it to end (a client that lost its
 * connection sends again at once; its first copy's reply went with the connection), and
 * gets its reply (HIT) or runs (MISS: it was not kept); others get WAIT at once. */
enum uiw__drc_verdict uiw__drc_begin(struct uiw__drc *d, const struct uiw__drc_key *k, void *owner,
                                     int *slot, void *out, uint32_t cap, uint32_t *len,
                                     int wait_ms);
/* The owner of a slot is done: keep its reply (the bytes of iov, when cacheable and
 * within max_reply) or drop the entry. */
void uiw__drc_end(struct uiw__drc *d, int slot, void *owner, const struct iovec *iov, int niov,
                  bool cacheable);

/* The most entries one bucket of the cache's hash holds now. */
uint32_t uiw__drc_longest_chain(struct uiw__drc *d);

/* The RPC-over-RDMA server's cache (NULL when it keeps none): a server of another
 * transport in the same process may share it. */
struct uiw__drc *uiw__rpc_svc_drc(struct uiw_rpc_svc *svc);

#endif
