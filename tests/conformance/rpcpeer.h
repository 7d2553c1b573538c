/*
 * A raw RPC-over-RDMA peer on the raw iWARP peer (rawpeer.h): it speaks MPA and RDMAP
 * itself, so it can send any transport header (malformed, out of credits, with chunks
 * that point anywhere) to the project's server, or play a server to the project's client,
 * and it checks every RDMA Write the stack sends it against the regions it advertised.
 *
 * Regions: memory the peer "registered" (an STag, a base TO, a length, access). A Read
 * Request of the stack is answered with a Read Response from a readable region, or, for
 * an STag/range the peer never advertised, with the Terminate an RNIC sends (remote
 * protection, invalid STag / base or bounds) unless `no_answer` makes it stay silent.
 * An RDMA Write is placed into a writable region, and counted as a violation when it
 * falls outside every one.
 */
#ifndef UIW_TESTS_CONFORMANCE_RPCPEER_H
#define UIW_TESTS_CONFORMANCE_RPCPEER_H

#include <stdbool.h>
#include <stdint.h>

#include <uiw/rpc.h>
#include <uiw/rpcrdma.h>

#include "rawpeer.h"

#define RPCPEER_MAX_REGIONS 8
#define RPCPEER_MSG_MAX     65536

struct rpcpeer_region {
    uint32_t stag;
    uint64_t to;
    uint8_t *mem;
    uint32_t len;
    bool writable, readable;
    uint32_t written; /* bytes RDMA-written into it */
};

struct rpcpeer {
    struct rawpeer raw;
    unsigned nregions;
    struct rpcpeer_region region[RPCPEER_MAX_REGIONS];
    bool no_answer;        /* ignore Read Requests */
    unsigned reads_served; /* Read Requests answered */
    unsigned violations;   /* RDMA Writes outside every writable region */
    bool with_inv;         /* the last message came by Send With Invalidate ... */
    uint32_t inv_stag;     /* ... of this STag */
    bool keep_connprop;    /* rpcpeer_recv_hdr returns CONNPROP messages too */
    unsigned connprops;    /* CONNPROP messages it skipped */
    uint8_t peer_pd[UIW_MPA_PD_MAX];
    uint16_t peer_pd_len;
    /* Told of every RDMA Read Request (write false) and RDMA Write segment (write true)
     * of the stack, before it is served or placed (NULL: none). */
    void (*on_access)(void *arg, bool write, uint32_t stag, uint64_t to, uint32_t len);
    void *on_access_arg;
};

/* Connect to a listener on loopback as the MPA initiator with `pd` as ULP private data
 * (NULL: none); 0 or a negative code. */
int rpcpeer_connect(struct rpcpeer *p, uint16_t port, const void *pd, uint16_t pd_len, bool crc);
/* Accept one connection on the TCP listener lfd as the MPA responder, replying with pd. */
int rpcpeer_accept(struct rpcpeer *p, int lfd, const void *pd, uint16_t pd_len, int timeout_ms);
void rpcpeer_close(struct rpcpeer *p, bool reset);

/* Advertise a region (see the top); returns it. */
struct rpcpeer_region *rpcpeer_region(struct rpcpeer *p, uint32_t stag, void *mem, uint32_t len,
                                      bool writable, bool readable);

/* Send one message (an RDMA Send carrying it). */
int rpcpeer_send(struct rpcpeer *p, const void *msg, uint32_t len);
/* Encode a header and an optional payload after it, and send them. */
int rpcpeer_send_hdr(struct rpcpeer *p, const struct uiw_rpcrdma_hdr *h, const void *payload,
                     uint32_t plen);

/* Wait for the stack's next Send (serving its Read Requests and taking its Writes
 * meanwhile): 1 with msg[0..*len), 0 when the stream ended, -ETIMEDOUT, or a negative
 * code (a Terminate from the stack: -EPROTO). */
int rpcpeer_recv(struct rpcpeer *p, uint8_t *msg, uint32_t cap, uint32_t *len, int timeout_ms);
/* rpcpeer_recv, then decode the RPC-over-RDMA header into h (sp: the codec's storage);
 * a Version Two CONNPROP is counted and skipped unless keep_connprop. Returns 1 with the
 * header decoded, or what rpcpeer_recv / the codec returned. */
int rpcpeer_recv_hdr(struct rpcpeer *p, uint8_t *msg, uint32_t cap, uint32_t *len,
                     struct uiw_rpcrdma_hdr *h, struct uiw_rpcrdma_space *sp, int timeout_ms);

/* Serve the stack's Read Requests and take its Writes for timeout_ms, dropping its Sends.
 * Returns 0 (*eof set when the stream ended), or a negative code (-EPROTO: a Terminate). */
int rpcpeer_pump(struct rpcpeer *p, int timeout_ms, bool *eof);

/* An ONC RPC call (xid, CALL, 2, prog, vers, proc, AUTH_NONE x2) then args; returns its
 * length written into out. */
uint32_t rpcpeer_rpc_call(uint8_t *out, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc,
                          const void *args, uint32_t alen);

/* Send the ONC RPC call of procedure proc (program prog, version 1, AUTH_NONE, args)
 * under header h; its RPC xid is h->xid unless rpc_xid is not 0. An RDMA_NOMSG header
 * goes alone (the call is then in its Position-Zero chunk). */
int rpcpeer_send_call(struct rpcpeer *p, const struct uiw_rpcrdma_hdr *h, uint32_t rpc_xid,
                      uint32_t prog, uint32_t proc, const void *args, uint32_t alen);

/* XDR routines of the tests' programs: void, and opaque<>. */
struct rpcpeer_blob {
    u_int len;
    char *val;
};
bool_t rpcpeer_xdr_void(XDR *x, void *p);
bool_t rpcpeer_xdr_blob(XDR *x, struct rpcpeer_blob *b);
/* Procedures of the tests' server programs, answered on x: GEN, u_int n (at most max) ->
 * opaque<> of n bytes, byte i = i + 1; SINK, opaque<max> -> u_int, the sum of its bytes. */
void rpcpeer_serve_gen(SVCXPRT *x, u_int max);
void rpcpeer_serve_sink(SVCXPRT *x, u_int max);
/* A program of procedures NULL, GEN and SINK (bounded by max); others PROC_UNAVAIL. */
enum rpcpeer_test_proc { RPCPEER_NULL = 0, RPCPEER_GEN = 1, RPCPEER_SINK = 2 };
void rpcpeer_serve_test(struct svc_req *rq, SVCXPRT *x, u_int max);

/* The segments a peer's messages offered the stack: what the stack may RDMA Read (a Read
 * chunk's) and RDMA Write (a Write or Reply chunk's). */
#define RPCPEER_MAX_GRANTS 512
struct rpcpeer_grants {
    unsigned n;
    struct rpcpeer_grant {
        bool write;
        uint32_t stag, len;
        uint64_t to;
    } g[RPCPEER_MAX_GRANTS];
};
/* The segments of h's chunks (an RDMA_MSG's or RDMA_NOMSG's; other messages have none). */
uint32_t rpcpeer_grants_in(const struct uiw_rpcrdma_hdr *h);
/* Record them; false (nothing recorded) when they do not fit. */
bool rpcpeer_grants_add(struct rpcpeer_grants *g, const struct uiw_rpcrdma_hdr *h);
/* An access of the stack (as rpcpeer.on_access reports it): aborts, naming `who`, unless
 * it lies inside a segment recorded for it. A zero-length one places nothing (the MPA
 * initiator's RTR is a zero-length RDMA Write, RFC 6581): always allowed. */
void rpcpeer_grants_check(const struct rpcpeer_grants *g, const char *who, bool write,
                          uint32_t stag, uint64_t to, uint32_t len);

#endif
