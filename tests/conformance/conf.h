/*
 * The uiw side of a conformance test: a context with its progress thread, protection
 * domains, memory regions surrounded by guard bytes, a QP connected to a raw peer
 * (rawpeer.h) through the connection manager, and checks of what the stack reports
 * locally (async events, completions, QP attributes, memory).
 */
#ifndef UIW_TESTS_CONFORMANCE_CONF_H
#define UIW_TESTS_CONFORMANCE_CONF_H

#include <stdbool.h>
#include <stdint.h>

#include <uiw/cm.h>
#include <uiw/verbs.h>
#include <uiw/wire.h>

#include "rawpeer.h"

#define CONF_WAIT_MS     5000 /* bound of every wait for the stack */
#define CONF_REGION_LEN  1024
#define CONF_GUARD_LEN   64
#define CONF_RECV_LEN    256
#define CONF_DEFAULT_RCV 4

/* Memory regions the stack side registers, each between guard bytes. */
enum conf_region {
    R_RW = 0,  /* LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ */
    R_NOWRITE, /* LOCAL_WRITE | REMOTE_READ */
    R_NOREAD,  /* LOCAL_WRITE | REMOTE_WRITE */
    R_OTHERPD, /* all access, registered in a second PD */
    R_RECV,    /* LOCAL_WRITE: the posted receives */
    R_FAST,    /* uiw_alloc_mr + REG_MR (all remote access): invalidatable */
    R_COUNT
};

struct conf_opts {
    int family;          /* 0 -> AF_INET */
    uint8_t rev;         /* MPA revision the raw peer speaks (0 -> 2) */
    bool crc;            /* the raw peer asks for CRC */
    bool markers;        /* the stack asks the raw peer for markers (the peer sends them) */
    bool peer_markers;   /* the raw peer asks the stack for markers */
    uint8_t rtr;         /* peer-to-peer: the UIW_CM_RTR_* offered (by the raw peer,
                          * or by the stack in initiator mode) */
    int nrecv;           /* receives posted before the handshake (-1 -> none, 0 -> 4) */
    int cq_size;         /* entries of the (shared) CQ (0 -> 256) */
    bool initiator;      /* the stack connects; the raw peer is the responder */
    bool no_progress;    /* no progress thread (inline progress only) */
    bool srq;            /* the QP takes its receives from an SRQ (c->srq), where the
                          * receives are posted */
    bool wake;           /* initiator: the wake-up Write as uiw_conn_param_init sets it
                          * (on: cm.h); else off, so that a silent raw peer sees only what a
                          * case provokes */
    bool rtr_unanswered; /* initiator with a Read RTR: the raw peer leaves the RTR Read
                          * Request unanswered (c->rtr_rr), for the case to answer */
};

struct conf {
    struct conf_opts o;
    struct uiw_context *ctx;
    struct uiw_pd *pd, *pd2;
    struct uiw_cq *cq;
    struct uiw_cm_channel *ch;
    struct uiw_cm_id *lid; /* listener (stack responder) */
    struct uiw_cm_id *id;  /* the connection */
    struct uiw_qp *qp;
    struct uiw_srq *srq; /* with o.srq: 16 receives at most */
    int srq_taken;       /* with o.srq: receives the failing QP took (conf_check_terminate) */
    uint8_t *mem;        /* guard | region 0 | guard | region 1 | ... | guard */
    uint8_t *shadow;     /* what mem must hold */
    size_t mem_len;
    uint8_t *region[R_COUNT];
    struct uiw_mr *mr[R_COUNT];
    uint32_t fast_rkey;               /* the valid STag of R_FAST */
    uint8_t rtr_chosen;               /* the UIW_CM_RTR_* the stack picked (peer-to-peer) */
    struct uiw_rdmap_read_req rtr_rr; /* the stack's RTR Read Request (initiator, Read RTR) */
    int nrecv;                        /* receives posted */
    bool read_posted;                 /* an RDMA Read (wr_id 55) is outstanding */
    int wc_done;                      /* receive completions a case consumed itself */
    int lfd;                          /* raw listener (initiator mode) */
    struct uiw_mpa_frame reply;       /* the frame the raw peer received (responder mode) */
    uint8_t frame_store[600];
    struct rawpeer peer;
    /* The last ULPDU the raw peer sent on purpose (what the Terminate must echo). */
    uint8_t sent[64];
    uint16_t sent_len;  /* the whole ULPDU's length */
    uint8_t sent_hdr;   /* its DDP header length */
    bool disconnected;  /* the test consumed the DISCONNECTED event itself */
    uint8_t *may_write; /* a range of a region with undefined content, or NULL */
    size_t may_len;
};

/* Connect a QP to a raw peer and bring both to FPDU mode. */
void conf_open(struct conf *c, const struct conf_opts *o);

/* One more raw peer connected to the same listener (responder mode), its QP on the same
 * CQ (and SRQ, with o.srq), in FPDU mode. */
struct conf_conn {
    struct rawpeer peer;
    struct uiw_cm_id *id;
    struct uiw_qp *qp;
    struct uiw_mpa_frame reply;
    uint8_t frame_store[600];
};
void conf_connect_more(struct conf *c, struct conf_conn *x);
/* Close it (the raw peer closes; DISCONNECTED awaited) and destroy its QP and id. */
void conf_conn_close(struct conf *c, struct conf_conn *x);
/* Wait for DISCONNECTED (bounded) and release everything; checks guards first. */
void conf_close(struct conf *c);

/* Mark n bytes at p (inside a region) as legitimately written with the given bytes. */
/* (c->may_write, c->may_len): a range whose content is undefined after the test (for
 * example a posted receive a CRC-failed Send may have been placed into). */
void conf_expect_written(struct conf *c, const void *p, const void *data, size_t n);
/* Every guard byte intact; with regions_too, every region byte as expected too. */
void conf_check_memory(struct conf *c, bool regions_too);

/* Post an RDMA Read (wr_id 55, signalled) into sink[0..len) of one of the regions, from
 * the raw peer's (rkey, rto) (a raw initiator that sent nothing yet sends a zero-length
 * Write first, so that the stack may send); and read the Read Request it puts on the
 * wire. */
void conf_post_read(struct conf *c, uint8_t *sink, uint32_t len, uint32_t rkey, uint64_t rto);
void conf_recv_read_req(struct conf *c, struct uiw_rdmap_read_req *rr);

/* Send a ULPDU made of a DDP header (and RDMA header) plus payload, remembering it. */
void conf_send(struct conf *c, const uint8_t *hdr, size_t hdr_len, const void *payload,
               size_t plen);

/* The next async event of the given type within the bounded wait (others are skipped
 * but must belong to this QP). */
void conf_expect_async(struct conf *c, enum uiw_event_type type, struct uiw_async_event *ev);
/* The next completion (bounded wait). */
void conf_next_wc(struct conf *c, struct uiw_wc *wc);
/* No completion arrives within ms. */
void conf_no_wc(struct conf *c, int ms);

/* The expected Terminate: triple, header-control bits, and the async/WC consequences. */
struct conf_expect {
    uint8_t layer, etype, code, hdrct;
    int async;       /* enum uiw_event_type, -1: none required */
    int head_status; /* status of the oldest receive, -1: flushed like the rest */
    bool untouched;  /* no region byte may change */
    int read_status; /* status of an outstanding RDMA Read (0: any error status) */
};
/* Read the Terminate from the wire and check it against e and c->sent, then the closed
 * stream, the async event, the QP's attributes, every receive's completion (with o.srq:
 * those the QP took, c->srq_taken; the SRQ's others stay), memory. */
void conf_check_terminate(struct conf *c, const struct conf_expect *e);

#endif
