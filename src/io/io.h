/*
 * Internal: the io layer's shared structures: a context's progress engine (struct
 * uiw__io), a QP's connection (struct uiw__conn), and the hooks between the connection
 * manager (cm.c) and the data path (conn.c): a connection tells its owner (the cm's id)
 * through the owner's callbacks (struct uiw__conn_owner), never by calling up into cm.c.
 *
 * Locks and their order: channel lock (cm.c) -> a context's progress lock (loop.lock) ->
 * the channel's event-queue lock. Engine locks (QP, CQ) are taken inside the engine's
 * uiw__qp_* calls and never held across io code. Connection callbacks run with the
 * context's progress lock held.
 */
#ifndef UIW_IO_IO_H
#define UIW_IO_IO_H

#include <stdbool.h>

#include <uiw/cm.h>
#include <uiw/verbs.h>

#include "common/lock.h"
#include "io/loop.h"
#include "rnic/rnic.h"

struct uiw__pcap;
struct uiw__conn;

/* The owner of a connection and what it is told, each callback with the owner's arg. */
struct uiw__conn_owner {
    /* The stream ended (status 0 orderly, else the reason). loop.lock held. */
    void (*ended)(void *arg, int status);
    /* The connection's QP is being destroyed (uiw_destroy_qp): the owner lets go of c
     * (uiw__conn_release_owner). loop.lock not held. */
    void (*qp_destroyed)(void *arg, struct uiw__conn *c);
};

/* A context's progress engine. */
struct uiw__io {
    struct uiw_context *ctx;
    struct uiw__loop loop;
    struct uiw__conn *conns; /* every connection bound to a QP (guarded by loop.lock) */
    struct uiw__lock pend_lock;
    struct uiw__conn *pending; /* kicked connections the dispatcher serves next */
    char *pcap_dir;            /* from the context attributes, or NULL */
    unsigned probes;           /* inline passes (guarded by loop.lock) */
};

enum { UIW__CONN_IOV = 64 };

struct uiw__conn {
    struct uiw__ioh h;
    struct uiw__io *io;
    struct uiw_qp *qp;
    const struct uiw__conn_owner *owner; /* its callbacks, with owner_arg */
    void *owner_arg;                     /* NULL once the owner let go (loop.lock) */
    struct uiw__pcap *pcap;
    uint32_t log_id;  /* the connection's number in log lines */
    bool open;        /* socket open */
    bool closing;     /* FIN sent after the engine finished: draining until the peer closes */
    bool reported;    /* the engine was told that the stream ended */
    bool owner_told;  /* the owner was told that the stream ended */
    bool out_blocked; /* the last write hit EAGAIN: wait for EPOLLOUT */
    bool queued;      /* on io->pending (guarded by pend_lock) */
    bool rx_moved;    /* the last read pass (conn_rx) read stream bytes */
    size_t rx_skip;   /* processed bytes (peeked) still to be consumed from the socket */
    bool rx_hinted;   /* the last read or peek told rx_hint (and stage_cap): it is fresh */
    unsigned rx_hint; /* what uiw__qp_rx_take / _staged said the engine wants (UIW__WANT_*) */
    uint8_t *stage;   /* the engine's staging ring (from uiw__qp_rx_stage) */
    size_t stage_cap;
    uint8_t wake_state;          /* the initiator's wake-up Write (uiw__conn_wake): UIW__WAKE_* */
    uint8_t wake_left;           /* wake-up Writes still allowed */
    struct uiw__ioh wake;        /* its timer, or the lingering close's (timerfd; fd -1
                                  * when none) */
    uint64_t linger_until;       /* closing: uiw__now_ms() when the wait for the peer ends */
    unsigned wake_ms;            /* until the next one */
    struct uiw__conn *pend_next; /* (guarded by pend_lock) */
    struct uiw__conn *next, *prev;
    /* the iovecs of one readv or sendmsg (loop.lock held): here rather than on the
     * stack, which then stays within fewer pages (each a TLB miss after a system call) */
    struct iovec iov[UIW__CONN_IOV];
};

struct uiw__io *uiw__io_of(struct uiw_context *ctx);

/* Bind qp to the connected socket fd (ownership of fd and pcap passes to the connection),
 * start the QP with p (not yet polled: uiw__conn_go does that); owner (static) and arg are
 * whom the connection tells what happens to it. Returns 0 or -errno / the engine's code
 * (then fd and pcap are still the caller's). */
int uiw__conn_start(struct uiw_qp *qp, int fd, struct uiw__pcap *pcap,
                    const struct uiw__conn_owner *owner, void *arg,
                    const struct uiw__conn_params *p, struct uiw__conn **out);
/* After our FIN, how long a connection waits for the peer's before it closes its socket
 * and tells the owner. */
enum { UIW__LINGER_MS = 2000 };
enum { UIW__WAKE_NONE = 0, UIW__WAKE_IDLE, UIW__WAKE_ARMED };
enum { UIW__WAKE_TRIES = 5 }; /* 50 ms: at 50, 150, 350, 750 and 1550 ms */
/* The initiator's wake-up (uiw__qp_wake): ms after the connection's first bytes of FPDU
 * stream went out, if the peer has sent nothing yet, a zero-length RDMA Write follows;
 * while the peer still sends nothing, another after twice as long, UIW__WAKE_TRIES at
 * most. Before uiw__conn_go. Returns 0 or -errno (no timer: no wake-up). */
int uiw__conn_wake(struct uiw__conn *c, unsigned ms);
/* Register a started connection with its loop and run it. */
void uiw__conn_go(struct uiw__conn *c);
/* Inline progress for a context with this one connection: service it as if epoll had
 * reported it readable (the read is the probe: one syscall when nothing arrived, none
 * wasted on epoll when something did, and nothing else done when nothing arrived).
 * loop.lock held. Returns 1 if stream bytes moved. */
int uiw__conn_probe(struct uiw__conn *c);
/* From uiw_post_send, the QP lock held (uiw__io_ops.qp_send): if the loop's lock is free
 * and the socket is plain, send what the engine has now. True if all went out and
 * nothing is left for a service pass; false otherwise (the caller kicks c). */
bool uiw__conn_send_locked(struct uiw__conn *c);
/* Queue c for the dispatcher and ring the doorbell. */
void uiw__conn_defer(struct uiw__conn *c);
/* Serve the connection (events: EPOLL* seen, 0 for a doorbell). loop.lock held. */
void uiw__conn_service(struct uiw__conn *c, uint32_t events);
/* Close the socket if open, unbind from the QP, free. loop.lock not held. */
void uiw__conn_destroy(struct uiw__conn *c);
/* The owner arg lets go of the connection (the owner destroyed, or its QP detached or
 * being destroyed): true if arg still owned c, which then tells nobody any more. Takes
 * loop.lock. */
bool uiw__conn_release_owner(struct uiw__conn *c, void *arg);
/* Wake the progress engine for c (new work queued by the application or cm). */
void uiw__conn_kick(struct uiw__conn *c);

#endif
