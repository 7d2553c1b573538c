/* Two engine QPs back to back in memory, with a byte pump between them (no sockets). */
#ifndef UIW_TESTS_RNIC_PAIR_H
#define UIW_TESTS_RNIC_PAIR_H

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uiw/verbs.h>
#include <uiw/wire.h>

#include "rnic/rnic.h"

/* PAIR_IO: like the io layer: follow uiw__qp_rx_stage's advice, read all that is there */
/* PAIR_PEEK: as PAIR_IO, but staged reads are peeks taken by uiw__qp_rx_take */
enum { PAIR_DIRECT = 0, PAIR_STAGED = 1, PAIR_MIXED = 2, PAIR_IO = 3, PAIR_PEEK = 4 };

struct pair_opts {
    bool crc;
    bool markers;
    uint16_t mulpdu;
    uint16_t ird[2], ord[2];
    enum uiw__rtr rtr; /* side 0 is the initiator */
    uint32_t sq, rq;
    int sig_all;
    uint64_t seed;
    size_t max_chunk; /* largest piece the pump moves at once */
    bool whole;       /* the pump moves max_chunk (or all there is), not a random piece */
    int mode;         /* PAIR_DIRECT / STAGED / MIXED on receive */
    int cqe;
    bool channel; /* CQs on a completion channel per side */
    /* Side 1's QP on an SRQ: with srq1_ctx, in that context, PD and SRQ (shared with other
     * pairs; pair_free leaves them), else with srq1_wr, on an SRQ of its own that holds
     * srq1_wr receives (pair_post_recv posts there). */
    struct uiw_context *srq1_ctx;
    struct uiw_pd *srq1_pd;
    struct uiw_srq *srq1;
    uint32_t srq1_wr;
};

struct side {
    struct uiw_context *ctx;
    struct uiw_pd *pd;
    struct uiw_cq *scq, *rcq;
    struct uiw_qp *qp;
    struct uiw_comp_channel *ch;
    struct uiw_srq *srq; /* the QP's SRQ, or NULL */
    bool shared;         /* ctx, pd and srq belong to the test */
    uint8_t *cap;        /* every byte this side sent */
    size_t cap_len, cap_size;
};

struct pair {
    struct side s[2];
    struct pair_opts o;
    uint64_t rnd;
    uint8_t *tmp;
    unsigned long rx_calls[2]; /* reads the receive side needed (PAIR_PEEK: and consumes) */
    unsigned long peeked[2];   /* bytes peeked at (PAIR_PEEK), taken or not */
    unsigned long chunks[2];   /* pieces side d's stream was cut into */
};

void pair_opts_default(struct pair_opts *o);
/* Create both sides; start = also uiw__qp_start both. */
void pair_init(struct pair *p, const struct pair_opts *o, bool start);
void pair_start(struct pair *p);
/* The initiator's first FPDU (a zero-length RDMA Write, moved to side 1): side 1, the
 * responder, may send from then on (RFC 5044 7.1.2). */
void pair_first_fpdu(struct pair *p);
void pair_free(struct pair *p);
uint64_t pair_rand(struct pair *p);
/* Move bytes both ways until nothing moves. Returns bytes moved. */
size_t pair_pump(struct pair *p);
/* Side d's pending TX bytes are written and lost (a peer that reads nothing). */
size_t pair_discard_tx(struct pair *p, int d);
/* Move bytes from side d only (up to limit bytes). */
size_t pair_pump_dir(struct pair *p, int d, size_t limit);
/* Feed raw stream bytes to side d's receive path (random splits). Returns the first
 * nonzero rx_advance / rx_staged result. */
int pair_feed(struct pair *p, int d, const uint8_t *buf, size_t len);
/* Bytes side d would send now (tx_next total) without sending them. */
size_t pair_tx_pending(struct pair *p, int d);

/* Poll exactly one completion from side d's send (send=true) or recv CQ; fails the test
 * if there is none. */
struct uiw_wc pair_wc(struct pair *p, int d, bool send);
int pair_nwc(struct pair *p, int d, bool send); /* drain and count */
/* Find (and consume events up to) an async event of type t on side d. */
bool pair_event(struct pair *p, int d, enum uiw_event_type t, struct uiw_async_event *ev);

/* The first ULPDU side d sent for which match(ulpdu, len) holds (its length in *len), or
 * NULL. Valid until the next call. */
const uint8_t *pair_find_ulpdu(struct pair *p, int d, bool (*match)(const uint8_t *, size_t),
                               size_t *len);
/* The Terminate side d sent: the body after the DDP header (returns its length, 0 if
 * none) and the DDP header bytes into ddp[18]. */
size_t pair_terminate(struct pair *p, int d, uint8_t *ddp, uint8_t *body, size_t cap);

struct uiw_mr *pair_mr(struct pair *p, int d, size_t len, unsigned access, uint8_t fill);
void pair_mr_free(struct uiw_mr *mr);
/* An unsignalled UIW_WR_REG_MR binding fast-register MR mr to [addr, addr+len) under key. */
struct uiw_send_wr pair_reg_wr(uint64_t id, struct uiw_mr *mr, uint32_t key, void *addr, size_t len,
                               unsigned access);
void pair_post_recv(struct pair *p, int d, uint64_t id, struct uiw_mr *mr, size_t off,
                    uint32_t len);
int pair_post(struct pair *p, int d, uint64_t id, enum uiw_wr_opcode op, unsigned flags,
              struct uiw_mr *mr, size_t off, uint32_t len, uint64_t raddr, uint32_t rkey);

/* uiw_dereg_mr(mr), then after(arg), in a thread of its own, watched through
 * uiw__dereg_wait_hook (one at a time): the order of the call's wait, of the end of what
 * it waits for (held by the test, marked by pair_dereg_mark) and of its return. */
struct pair_dereg {
    struct uiw_mr *mr;
    void (*after)(void *arg);
    void *arg;
    pthread_t th;
    sem_t waits, returned;
    atomic_uint seq;                    /* the next mark */
    _Atomic int what;                   /* what the call waits for, -1 before it waits */
    atomic_uint waited_at, returned_at; /* the marks of the wait starting and the return */
};
/* How long a wait is held before what it waits for ends: longer than any time-out a
 * broken wait could give up after. */
enum { PAIR_HOLD_MS = 1000 };
void pair_dereg_start(struct pair_dereg *d, struct uiw_mr *mr, void (*after)(void *), void *arg);
/* The call waits for what (the test holds it), and does not return for PAIR_HOLD_MS
 * while it is held; fails the test otherwise. */
void pair_dereg_held(struct pair_dereg *d, enum uiw__dereg_wait what);
/* The test is about to end what the call waits for: the mark of that. */
unsigned pair_dereg_mark(struct pair_dereg *d);
/* The call returns: after the wait started, and after the mark end. */
void pair_dereg_join(struct pair_dereg *d, unsigned end);

#endif
