/*
 * iwperf over uiw: RDMA Write / Read / Send bandwidth and latency.
 *
 * Buffers (each side): buf = [sources (nslot * max) | sinks (nslot * max)] registered for
 * local write, remote write and remote read; its address and rkey travel in the CM private
 * data (iwp_pd). rbuf = receive slots: receive k lands at rbuf + k * rstride with room for
 * the largest message (rstride is IWP_CTRL_LEN, so that control messages never overwrite
 * each other, except on a --verify server). cbuf = the sources of outgoing control
 * messages (a ring, a slot reused once its Send completed).
 *
 * --verify checks every message: message i of a phase carries a pattern of its own
 * (iwp_fill_msg of the sender's seed and i), from source slot i % nslot into sink slot
 * i % nslot (IWP_VSLOTS of each), and the receiving side checks each one and counts them:
 *   Send: the server checks each receive (its VSLOTS receives, one slot each, do not
 *     overlap; credits keep a slot from being reused before it was checked);
 *   Write: each Write is followed by a MARK Send naming it, which the server sees once
 *     the Write is placed (RDMAP ordering); it checks the sink slot then; a Write waits
 *     for the credit of its MARK, and the server's VSLOTS receives then keep a sink slot
 *     from being written again before its check;
 *   Read: the responder cannot know when a Read was served, so its VSLOTS source slots
 *     hold fixed patterns (of the slot) and Read i reads slot i % VSLOTS into a sink slot
 *     the client zeroed before, checked once the Read completed;
 *   latency: each ping and each pong, checked by the side that receives it.
 *
 * Protocol per size (the client drives, the server answers):
 *   client START -> server ACK (credits, checksum of the server's source)
 *   data phase: Writes to the server's sink, Reads from its source, or Sends (bounded by
 *     the credits: receives the server has posted, advertised with CREDIT messages);
 *     latency: Send ping-pong, Write ping-pong polling the last byte of the sink, or one
 *     Read at a time
 *   client STOP (a zero-length Send: after all earlier Writes are placed) -> server RESULT
 *     (checksum of its sink, messages received, its copied-bytes statistic)
 *   client REPORT (the row it printed; the server prints it too)
 * and finally BYE, then a graceful disconnect.
 */
#include "iwperf.h"

#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <poll.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uiw/cm.h>
#include <uiw/verbs.h>

enum {
    SEED_CLIENT = 1,
    SEED_SERVER = 2,
    VSLOTS = 4,         /* --verify: source and sink slots, and a server's receives */
    NCTRL = 32,         /* control message sources */
    CLIENT_RECVS = 64,  /* receives the client keeps posted */
    TIMEOUT_MS = 30000, /* no progress for this long: give up */
    CM_TIMEOUT_MS = 15000,
};

#define RECV_FLAG (1ull << 63)

/* Server side of one size: state kept across handle_recv calls. */
struct srv_phase {
    enum iwp_test test;
    bool lat, verify;
    uint64_t s, t0, copied0;
    bool copied_known;
};

struct conn {
    const struct iwp_opts *o;
    bool server;
    struct uiw_context *ctx;
    struct uiw_pd *pd;
    struct uiw_cq *cq;
    struct uiw_comp_channel *cch; /* --events */
    struct uiw_cm_channel *ch;
    struct uiw_cm_id *lid, *id;
    struct uiw_qp *qp;
    uint64_t max;
    uint8_t *buf, *rbuf, *cbuf;
    size_t buflen, rbuflen;
    uint32_t nslot; /* source and sink slots in buf: 1, or VSLOTS with --verify */
    size_t rstride; /* receive slot k at rbuf + k * rstride */
    uint64_t vgood; /* --verify: messages of the phase received and found right */
    struct uiw_mr *mr, *rmr, *cmr;
    uint64_t peer_addr;
    uint32_t peer_rkey;
    uint32_t nrecv;
    uint32_t inline_lim; /* Sends and Writes shorter than this go inline (0: none) */
    /* send queue: WRs posted and completed (completions arrive in order) */
    uint64_t sq_posted, sq_done;
    uint32_t sq_limit;
    /* client: Sends the server allows in total, Sends made */
    uint64_t credits, sends;
    /* server: receives posted in total, last total advertised */
    uint64_t posted, advertised;
    /* data phase state */
    bool in_phase, lat_phase;
    uint64_t size;
    uint64_t data_recvs;
    uint64_t pongs;
    uint64_t lat_posts;   /* Sends and Writes of latency phases (for --cq-mod) */
    bool repost;          /* client: the pong's receive is to be posted again */
    uint64_t repost_slot; /* (after the next ping went out: off the timed path) */
    bool stop_seen, bye_seen;
    int in_pump;  /* handlers run inside pump and must not wait */
    bool closing; /* after BYE: flushed receives are expected */
    int err;
    struct iwp_opts opts;      /* o points here: a copy next to the fields the loop reads */
    struct srv_phase sp;       /* server: the size in progress */
    struct iwp_report *report; /* server: where the client's rows go */
    bool own_ch;               /* ch is this connection's (else the listener's) */
    /* off the data path, after the fields it reads */
    struct uiw_cm_conn_info info;
    uint64_t ctrl_seq[NCTRL];
    uint32_t ctrl_next;
    /* received control messages (client: ACK / RESULT) */
    bool have[16];
    struct iwp_ctrl last[16];
};

static int fail(struct conn *c, const char *what, int code)
{
    fprintf(stderr, "iwperf: %s: %s\n", what, uiw_strerror(code));
    if (!c->err)
        c->err = code ? code : -EIO;
    return -1;
}

/* ------------------------------------------------------------------------------------ */

IWP_HOT static int post_recv_slot(struct conn *c, uint64_t slot)
{
    /* every slot has room for the largest message: rbuf = nrecv - 1 strides + the largest */
    struct uiw_sge sge = {
        .addr = (uint64_t)(uintptr_t)(c->rbuf + slot * c->rstride),
        .length = (uint32_t)(c->rbuflen - (c->nrecv - 1) * c->rstride),
        .lkey = c->rmr->lkey,
    };
    struct uiw_recv_wr wr = {.wr_id = RECV_FLAG | slot, .sg_list = &sge, .num_sge = 1}, *bad;
    int rc = uiw_post_recv(c->qp, &wr, &bad);
    if (rc < 0)
        return fail(c, "post_recv", rc);
    c->posted++;
    return 0;
}

/* Post one send-queue WR; signalled ones carry their sequence number. */
IWP_HOT static int post_wr(struct conn *c, enum uiw_wr_opcode op, void *addr, uint32_t len,
                           uint32_t lkey, uint64_t raddr, bool signaled)
{
    struct uiw_sge sge = {.addr = (uint64_t)(uintptr_t)addr, .length = len, .lkey = lkey};
    struct uiw_send_wr wr =
                           {
                               .wr_id = c->sq_posted,
                               .sg_list = &sge,
                               .num_sge = len ? 1 : 0,
                               .opcode = op,
                               .send_flags = signaled ? UIW_SEND_SIGNALED : 0,
                           },
                       *bad;
    /* -I / --inline: small Sends and Writes copied at post time (perftest's inline) */
    if (len < c->inline_lim && op != UIW_WR_RDMA_READ)
        wr.send_flags |= UIW_SEND_INLINE;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = c->peer_rkey;
    int rc = uiw_post_send(c->qp, &wr, &bad);
    if (rc < 0)
        return fail(c, "post_send", rc);
    c->sq_posted++;
    if (op == UIW_WR_SEND)
        c->sends++;
    return 0;
}

static void handle_recv(struct conn *c, uint64_t slot, uint32_t len);

/* A latency phase's Send or Write is signalled one in cq_mod (perftest's CQ moderation: a
 * completion costs the stack work that a TCP ping-pong does not do), and always when it is
 * the client's last, whose completion ends the phase. */
IWP_HOT static bool lat_signalled(struct conn *c, bool last)
{
    return ++c->lat_posts % c->o->cq_mod == 0 || last;
}

/* Poll the CQ once; returns completions handled or -1. */
IWP_HOT static int pump(struct conn *c)
{
    struct uiw_wc wc[16];
    if (c->in_pump)
        return fail(c, "internal: a queue is full inside a completion handler", -ENOSPC);
    int n = uiw_poll_cq(c->cq, 16, wc);
    if (n < 0)
        return fail(c, "poll_cq", n);
    c->in_pump++;
    for (int i = 0; i < n; i++) {
        if (wc[i].status == UIW_WC_WR_FLUSH_ERR && c->closing) {
            /* a Send the peer's close overtook (a last CREDIT): done all the same */
            if (!(wc[i].wr_id & RECV_FLAG) && wc[i].wr_id + 1 > c->sq_done)
                c->sq_done = wc[i].wr_id + 1;
            continue;
        }
        if (wc[i].status != UIW_WC_SUCCESS) {
            fprintf(stderr, "iwperf: work completion error: %s (opcode %d, %s)\n",
                    uiw_wc_status_str(wc[i].status), (int)wc[i].opcode,
                    uiw_strerror(wc[i].vendor_err));
            if (!c->err)
                c->err = -EIO;
            c->in_pump--;
            return -1;
        }
        if (wc[i].wr_id & RECV_FLAG) {
            handle_recv(c, wc[i].wr_id & ~RECV_FLAG, wc[i].byte_len);
            if (c->err) {
                c->in_pump--;
                return -1;
            }
        } else if (wc[i].wr_id + 1 > c->sq_done) {
            c->sq_done = wc[i].wr_id + 1;
        }
    }
    c->in_pump--;
    return n;
}

/* --events: sleep until the CQ has a completion (bounded by timeout_ms). */
static int wait_event(struct conn *c, int timeout_ms);

/* One step of waiting: poll the CQ; with --events, sleep on the channel when it is empty.
 * Returns the completions handled (0 after a sleep) or -1. */
IWP_HOT static int step(struct conn *c)
{
    int n = pump(c);
    if (n != 0 || !c->o->events)
        return n;
    return wait_event(c, 100) < 0 ? -1 : 0;
}

static int wait_event(struct conn *c, int timeout_ms)
{
    int rc = uiw_req_notify_cq(c->cq, 0);
    if (rc < 0)
        return fail(c, "req_notify_cq", rc);
    /* a completion that arrived before arming would not raise an event: look first */
    int n = pump(c);
    if (n != 0)
        return n < 0 ? -1 : 0;
    /* sleep in the library, not in poll(): the thread is then woken by the socket itself */
    struct uiw_cq *cq;
    void *ctx;
    rc = uiw_wait_cq_event(c->cch, timeout_ms, &cq, &ctx);
    if (rc == 0)
        uiw_ack_cq_events(cq, 1);
    else if (rc != -ETIMEDOUT)
        return fail(c, "wait_cq_event", rc);
    return 0;
}

/* Pump until *flag is set (or, with flag NULL, until the send queue drained). */
static int wait_for(struct conn *c, const bool *flag)
{
    uint64_t deadline = iwp_now_ns() + (uint64_t)TIMEOUT_MS * 1000000;
    for (;;) {
        if (flag ? *flag : c->sq_done == c->sq_posted)
            return 0;
        int n = step(c);
        if (n < 0)
            return -1;
        if (n > 0)
            deadline = iwp_now_ns() + (uint64_t)TIMEOUT_MS * 1000000;
        else if (iwp_now_ns() > deadline)
            return fail(c, "waiting for the peer", -ETIMEDOUT);
    }
}

/* Wait until the send queue has room for one more WR (limit: sq_limit outstanding). */
/* Inside a timed loop: the clock is read only when there is something to wait for. */
IWP_HOT static int sq_room(struct conn *c, uint32_t limit)
{
    if (c->sq_posted - c->sq_done < limit)
        return 0;
    uint64_t deadline = iwp_now_ns() + (uint64_t)TIMEOUT_MS * 1000000;
    while (c->sq_posted - c->sq_done >= limit) {
        int n = step(c);
        if (n < 0)
            return -1;
        if (n == 0 && iwp_now_ns() > deadline)
            return fail(c, "send queue", -ETIMEDOUT);
    }
    return 0;
}

/* Client: wait for a credit for one more Send. */
IWP_HOT static int send_credit(struct conn *c)
{
    if (c->server || c->sends < c->credits)
        return 0;
    uint64_t deadline = iwp_now_ns() + (uint64_t)TIMEOUT_MS * 1000000;
    while (c->sends >= c->credits) {
        int n = step(c);
        if (n < 0)
            return -1;
        if (n == 0 && iwp_now_ns() > deadline)
            return fail(c, "waiting for credits", -ETIMEDOUT);
    }
    return 0;
}

static int send_ctrl(struct conn *c, const struct iwp_ctrl *m)
{
    uint32_t k = c->ctrl_next;
    uint64_t deadline = iwp_now_ns() + (uint64_t)TIMEOUT_MS * 1000000;
    /* the slot is free once the Send that used it completed (all ctrl Sends signalled) */
    while (c->ctrl_seq[k] != UINT64_MAX && c->ctrl_seq[k] >= c->sq_done) {
        int n = step(c);
        if (n < 0)
            return -1;
        if (n == 0 && iwp_now_ns() > deadline)
            return fail(c, "control slot", -ETIMEDOUT);
    }
    if (send_credit(c) < 0 || sq_room(c, c->sq_limit) < 0)
        return -1;
    uint8_t *p = c->cbuf + (size_t)k * IWP_CTRL_LEN;
    iwp_ctrl_encode(m, p);
    c->ctrl_seq[k] = c->sq_posted;
    c->ctrl_next = (k + 1) % NCTRL;
    return post_wr(c, UIW_WR_SEND, p, IWP_CTRL_LEN, c->cmr->lkey, 0, true);
}

static int send_ctrl2(struct conn *c, uint32_t type, uint64_t v0, uint64_t v1)
{
    struct iwp_ctrl m = {.type = type};
    m.v[0] = v0;
    m.v[1] = v1;
    return send_ctrl(c, &m);
}

/* ------------------------------------------------------------------------------------ */

static uint64_t copied_now(struct conn *c, bool *known)
{
    struct uiw_context_stats st;
    if (uiw_query_context_stats(c->ctx, &st) < 0) {
        *known = false;
        return 0;
    }
    return st.copied_payload_bytes;
}

/* Source and sink slot k of this side's buffer and of the peer's (k % nslot: always slot
 * 0 without --verify). */
static uint8_t *src_slot(const struct conn *c, uint64_t k)
{
    return c->buf + (k % c->nslot) * c->max;
}

static uint8_t *sink_slot(const struct conn *c, uint64_t k)
{
    return c->buf + (c->nslot + k % c->nslot) * c->max;
}

static uint64_t peer_src(const struct conn *c, uint64_t k)
{
    return c->peer_addr + (k % c->nslot) * c->max;
}

static uint64_t peer_sink(const struct conn *c, uint64_t k)
{
    return c->peer_addr + (c->nslot + k % c->nslot) * c->max;
}

/* --verify of Write latency: the last byte of each message is the round's tag, the rest
 * the message's pattern. */
static void fill_tagged(uint8_t *p, uint64_t s, uint32_t seed, uint64_t i, uint8_t tag)
{
    iwp_fill_msg(p, s - 1, seed, i);
    p[s - 1] = tag;
}

static int server_advertise(struct conn *c)
{
    uint64_t step = c->nrecv / 4 ? c->nrecv / 4 : 1;
    if (c->posted - c->advertised < step)
        return 0;
    c->advertised = c->posted;
    return send_ctrl2(c, IWP_C_CREDIT, c->posted, 0);
}

static void server_start(struct conn *c, const struct iwp_ctrl *m)
{
    uint64_t s = m->v[0];
    if (s == 0 || s > c->max) {
        fail(c, "START with a bad size", -EPROTO);
        return;
    }
    c->sp.s = s;
    c->size = s;
    c->data_recvs = 0;
    c->vgood = 0;
    c->stop_seen = false;
    c->in_phase = true;
    /* zero the sinks (Write latency polls the last byte); the sources get their patterns
     * again (Write latency changes its last byte); a --verify Read source slot k holds
     * message k's pattern */
    memset(sink_slot(c, 0), 0, c->nslot * c->max);
    for (uint32_t k = 0; k < c->nslot; k++) {
        if (c->sp.verify)
            iwp_fill_msg(src_slot(c, k), s, SEED_SERVER, k);
        else
            iwp_fill_pattern(src_slot(c, k), s, SEED_SERVER);
    }
    c->sp.t0 = iwp_now_ns();
    c->advertised = c->posted;
    send_ctrl2(c, IWP_C_ACK, c->posted, 0);
    /* after the ACK: the stack copies a small message's payload when it is posted, and
     * the phase's count is of the data */
    c->sp.copied_known = true;
    c->sp.copied0 = copied_now(c, &c->sp.copied_known);
}

static void server_stop(struct conn *c)
{
    bool known = c->sp.copied_known;
    uint64_t copied = copied_now(c, &known) - c->sp.copied0;
    struct iwp_ctrl m = {.type = IWP_C_RESULT};
    m.v[0] = c->posted;
    m.v[1] = c->vgood;
    m.v[2] = c->data_recvs;
    m.v[3] = iwp_now_ns() - c->sp.t0;
    m.v[4] = copied;
    m.v[5] = known;
    c->in_phase = false;
    c->advertised = c->posted;
    send_ctrl(c, &m);
}

/* Write latency reads the sink while the stack may be placing the next Write there, as an
 * RDMA application polls memory its NIC writes: nothing orders these reads after the
 * placement but the tag byte itself (tests/tsan.supp names these two functions). */
__attribute__((noinline)) static uint8_t placed_peek(const volatile uint8_t *p)
{
    return *p;
}

__attribute__((noinline)) static bool placed_check(const uint8_t *p, size_t len, uint32_t seed,
                                                   uint64_t idx)
{
    return iwp_check_msg(p, len, seed, idx);
}

/* Write ping-pong, --verify: ping i has arrived (its tag showed): check it, and give the
 * pong its own pattern. */
static void server_write_pong_verify(struct conn *c, uint8_t tag)
{
    uint64_t s = c->sp.s, i = c->data_recvs;
    c->vgood += placed_check(sink_slot(c, 0), s - 1, SEED_CLIENT, i);
    fill_tagged(src_slot(c, 0), s, SEED_SERVER, i, tag);
}

/* The server's loop, until BYE (or an hour): the client drives, handle_recv answers. */
IWP_HOT static int serve(struct conn *c)
{
    uint64_t deadline = iwp_now_ns() + 3600ull * 1000000000ull;
    unsigned spins = 0;
    uint8_t expect = 1;
    while (!c->bye_seen) {
        if (c->in_phase && c->sp.lat && c->sp.test == IWP_WRITE) {
            /* Write ping-pong: answer when the last byte of the sink shows the tag */
            volatile uint8_t *tail = sink_slot(c, 0) + c->sp.s - 1;
            if (placed_peek(tail) == expect) {
                if (c->sp.verify)
                    server_write_pong_verify(c, expect);
                else
                    c->buf[c->sp.s - 1] = expect;
                c->data_recvs++;
                if (sq_room(c, c->sq_limit) < 0 ||
                    post_wr(c, UIW_WR_RDMA_WRITE, c->buf, (uint32_t)c->sp.s, c->mr->lkey,
                            peer_sink(c, 0), lat_signalled(c, false)) < 0)
                    return -1;
                expect = (uint8_t)(expect % 255 + 1);
            }
        } else if (!c->in_phase) {
            expect = 1;
        }
        /* Write latency polls memory: spin; otherwise wait as the options say */
        bool spin = c->in_phase && c->sp.lat && c->sp.test == IWP_WRITE;
        if ((spin ? pump(c) : step(c)) < 0)
            return -1;
        if ((++spins & 255) == 0 && iwp_now_ns() > deadline)
            break;
    }
    return 0;
}

/* --verify, a data message of the phase arrived at the server: a Send (its bytes at p),
 * or the MARK of a Write (m: it names the Write, placed in its sink slot by now). */
static void server_check(struct conn *c, const uint8_t *p, const struct iwp_ctrl *m)
{
    uint64_t i = c->data_recvs;
    if (m)
        c->vgood += m->v[0] == i && iwp_check_msg(sink_slot(c, i), c->sp.s, SEED_CLIENT, i);
    else
        c->vgood += iwp_check_msg(p, c->sp.s, SEED_CLIENT, i);
}

IWP_HOT static void handle_recv(struct conn *c, uint64_t slot, uint32_t len)
{
    const uint8_t *p = c->rbuf + slot * c->rstride;
    struct iwp_ctrl m;
    if (!c->server) {
        if (c->lat_phase) {
            if (c->o->verify)
                c->vgood += iwp_check_msg(p, c->size, SEED_SERVER, c->pongs);
            c->pongs++;
            c->credits++; /* the server reposts right after it answered */
            /* posted again once the next ping is on its way (client_lat), off the timed
             * path: TCP has nothing to repost; the other receives stay posted */
            if (c->repost)
                post_recv_slot(c, c->repost_slot);
            c->repost = true;
            c->repost_slot = slot;
            return;
        } else if (len == IWP_CTRL_LEN && iwp_ctrl_decode(p, &m) == 0 && m.type < 16) {
            if (m.v[0] > c->credits &&
                (m.type == IWP_C_ACK || m.type == IWP_C_CREDIT || m.type == IWP_C_RESULT))
                c->credits = m.v[0];
            c->last[m.type] = m;
            c->have[m.type] = true;
        } else {
            fail(c, "unexpected message from the server", -EPROTO);
            return;
        }
        post_recv_slot(c, slot);
        return;
    }
    /* server */
    if (c->in_phase) {
        if (len == 0) {
            c->stop_seen = true;
            post_recv_slot(c, slot);
            server_stop(c);
            return;
        }
        if (c->sp.verify && c->sp.test == IWP_WRITE && !c->sp.lat && len == IWP_CTRL_LEN &&
            iwp_ctrl_decode(p, &m) == 0 && m.type == IWP_C_MARK) {
            server_check(c, NULL, &m);
            c->data_recvs++;
            if (post_recv_slot(c, slot) == 0)
                server_advertise(c);
            return;
        }
        if (c->sp.test != IWP_SEND || len != c->sp.s) {
            fail(c, "unexpected message in the data phase", -EPROTO);
            return;
        }
        if (c->sp.verify)
            server_check(c, p, NULL);
        uint64_t i = c->data_recvs++;
        if (c->sp.lat) {
            /* echo first, then post the receive again: the client counts the pong as the
             * credit of that receive, and sends again only after the pong, while the other
             * rx_depth - 1 receives stay posted */
            c->advertised = c->posted + 1;
            if (c->sp.verify)
                iwp_fill_msg(c->buf, c->sp.s, SEED_SERVER, i);
            if (c->sq_posted - c->sq_done >= c->sq_limit)
                fail(c, "internal: send queue full", -ENOSPC);
            else if (post_wr(c, UIW_WR_SEND, c->buf, (uint32_t)c->sp.s, c->mr->lkey, 0,
                             lat_signalled(c, false)) == 0)
                post_recv_slot(c, slot);
            return;
        }
        if (post_recv_slot(c, slot) < 0)
            return;
        server_advertise(c);
        return;
    }
    if (len != IWP_CTRL_LEN || iwp_ctrl_decode(p, &m) < 0) {
        fail(c, "unexpected message from the client", -EPROTO);
        return;
    }
    struct iwp_result res;
    switch (m.type) {
    case IWP_C_START:
        post_recv_slot(c, slot);
        server_start(c, &m);
        return;
    case IWP_C_REPORT:
        iwp_result_from_ctrl(&m, &res);
        if (c->report)
            iwp_report_row(c->report, &res);
        break;
    case IWP_C_BYE:
        c->bye_seen = true;
        c->closing = true;
        return;
    default:
        fail(c, "unexpected control message", -EPROTO);
        return;
    }
    post_recv_slot(c, slot);
    server_advertise(c);
}

/* ------------------------------------------------------------------------------------ */

/* The context, PD, CQ (and completion channel) of a connection, and its own connection
 * manager channel unless `ch` is given (the server's extra QPs share the listener's). */
static int setup_common(struct conn *c, struct uiw_cm_channel *ch)
{
    struct uiw_context_attr ca;
    uiw_context_attr_init(&ca);
    ca.progress_thread = !c->o->no_thread;
    /* without a progress thread, one thread at a time calls into the context: with --qps
     * each QP's thread has a context of its own and touches no other (nor the cm channel
     * the server's QPs share, which drives all of them), and the main thread, which sets
     * them up and closes them, hands them over and takes them back by creating and
     * joining those threads */
    ca.single_threaded = c->o->no_thread;
    c->ctx = uiw_open_context(&ca);
    if (!c->ctx)
        return fail(c, "open_context", -errno);
    c->pd = uiw_alloc_pd(c->ctx);
    c->ch = ch ? ch : uiw_cm_create_channel();
    c->own_ch = !ch;
    if (!c->pd || !c->ch)
        return fail(c, "alloc_pd / cm channel", -errno);
    c->sq_limit = c->o->tx_depth + NCTRL;
    c->inline_lim = c->o->inline_size ? c->o->inline_size + 1 : 0;
    if (c->o->events) {
        c->cch = uiw_create_comp_channel(c->ctx);
        if (!c->cch)
            return fail(c, "create_comp_channel", -errno);
    }
    c->cq = uiw_create_cq(c->ctx, (int)(c->sq_limit + c->o->rx_depth + CLIENT_RECVS + 64), NULL,
                          c->cch, 0);
    if (!c->cq)
        return fail(c, "create_cq", -errno);
    for (int i = 0; i < NCTRL; i++)
        c->ctrl_seq[i] = UINT64_MAX;
    return 0;
}

static void *alloc_pages(size_t len)
{
    void *p = NULL;
    if (posix_memalign(&p, 4096, (len + 4095) & ~(size_t)4095) != 0)
        return NULL;
    memset(p, 0, len);
    return p;
}

/* Buffers for messages of up to max bytes: nrecv receives (each with room for the largest
 * message, rstride apart), and with --verify VSLOTS sources and sinks. */
static int setup_buffers(struct conn *c, uint64_t max, uint32_t nrecv, size_t rstride,
                         uint32_t seed)
{
    c->max = max;
    c->nrecv = nrecv;
    c->nslot = c->o->verify ? VSLOTS : 1;
    c->buflen = 2 * (size_t)c->nslot * max;
    size_t big = max > IWP_CTRL_LEN ? max : IWP_CTRL_LEN;
    c->rstride = rstride;
    c->rbuflen = (size_t)(nrecv - 1) * rstride + big;
    c->buf = alloc_pages(c->buflen);
    c->rbuf = alloc_pages(c->rbuflen);
    c->cbuf = alloc_pages((size_t)NCTRL * IWP_CTRL_LEN);
    if (!c->buf || !c->rbuf || !c->cbuf)
        return fail(c, "allocating buffers", -ENOMEM);
    for (uint32_t k = 0; k < c->nslot; k++)
        iwp_fill_pattern(src_slot(c, k), max, seed);
    c->mr = uiw_reg_mr(c->pd, c->buf, c->buflen,
                       UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | UIW_ACCESS_REMOTE_READ);
    c->rmr = uiw_reg_mr(c->pd, c->rbuf, c->rbuflen, UIW_ACCESS_LOCAL_WRITE);
    c->cmr = uiw_reg_mr(c->pd, c->cbuf, (size_t)NCTRL * IWP_CTRL_LEN, 0);
    if (!c->mr || !c->rmr || !c->cmr)
        return fail(c, "reg_mr", -errno);
    return 0;
}

/* The device's IRD (ird) or ORD limit per QP. */
static uint16_t dev_rd(struct conn *c, bool ird)
{
    struct uiw_device_attr da;
    if (uiw_query_device(c->ctx, &da) < 0)
        return UIW_DEFAULT_IRD_ORD;
    int v = ird ? da.max_qp_rd_atom : da.max_qp_init_rd_atom;
    return (uint16_t)(v > UINT16_MAX ? UINT16_MAX : v);
}

static int create_qp(struct conn *c, struct uiw_cm_id *id, uint16_t ird, uint16_t ord)
{
    struct uiw_qp_init_attr qa = {
        .send_cq = c->cq,
        .recv_cq = c->cq,
        .cap = {.max_send_wr = c->sq_limit,
                .max_recv_wr = c->nrecv,
                .max_send_sge = 1,
                .max_recv_sge = 1,
                .max_inline_data = c->o->inline_size},
        .max_ird = ird,
        .max_ord = ord,
    };
    int rc = uiw_cm_create_qp(id, c->pd, &qa);
    if (rc < 0)
        return fail(c, "cm_create_qp", rc);
    c->qp = id->qp;
    for (uint32_t k = 0; k < c->nrecv; k++)
        if (post_recv_slot(c, k) < 0)
            return -1;
    return 0;
}

static void fill_param(const struct iwp_opts *o, struct uiw_conn_param *p, const void *pd,
                       uint16_t ird, uint16_t ord)
{
    memset(p, 0, sizeof(*p));
    p->private_data = pd;
    p->private_data_len = IWP_PD_LEN;
    p->responder_resources = ird;
    p->initiator_depth = ord;
    p->mpa_rev = (uint8_t)o->mpa_rev;
    p->crc = o->crc;
    p->markers = o->markers;
    p->timeout_ms = 10000;
}

static void report_conn(struct conn *c, struct iwp_report *r)
{
    if (uiw_cm_query(c->id, &c->info) < 0)
        return;
    r->mpa_rev = c->info.mpa_rev;
    r->crc = c->info.crc;
    r->markers = c->info.markers_tx || c->info.markers_rx;
    r->ird = c->info.ird;
    r->ord = c->info.ord;
    r->mulpdu = c->info.mulpdu;
}

static void teardown(struct conn *c)
{
    if (c->id) {
        if (c->qp)
            uiw_cm_destroy_qp(c->id);
        uiw_cm_destroy_id(c->id);
    }
    if (c->lid)
        uiw_cm_destroy_id(c->lid);
    if (c->cq)
        uiw_destroy_cq(c->cq);
    if (c->cch)
        uiw_destroy_comp_channel(c->cch);
    if (c->mr)
        uiw_dereg_mr(c->mr);
    if (c->rmr)
        uiw_dereg_mr(c->rmr);
    if (c->cmr)
        uiw_dereg_mr(c->cmr);
    if (c->pd)
        uiw_dealloc_pd(c->pd);
    if (c->ctx)
        uiw_close_context(c->ctx);
    if (c->ch && c->own_ch)
        uiw_cm_destroy_channel(c->ch);
    free(c->buf);
    free(c->rbuf);
    free(c->cbuf);
}

/* Graceful close: disconnect and wait (bounded) for DISCONNECTED. */
static void close_conn(struct conn *c, bool initiate)
{
    struct uiw_cm_event *ev;
    if (initiate)
        uiw_cm_disconnect(c->id);
    uint64_t deadline = iwp_now_ns() + 5000000000ull;
    c->closing = true;
    while (iwp_now_ns() < deadline) {
        /* without a progress thread, polling is what notices the peer's close */
        struct uiw_wc wc[16];
        uiw_poll_cq(c->cq, 16, wc);
        if (uiw_cm_get_event(c->ch, &ev, 20) < 0)
            continue;
        enum uiw_cm_event_type t = ev->event;
        uiw_cm_ack_event(ev);
        if (t == UIW_CM_EVENT_DISCONNECTED) {
            if (!initiate)
                uiw_cm_disconnect(c->id);
            return;
        }
    }
}

/* --stats: add the context's counters to the report's. */
static void take_stats(struct conn *c, struct iwp_report *r)
{
    struct uiw_context_stats st;
    if (!c->o->stats || !c->ctx || uiw_query_context_stats(c->ctx, &st) < 0)
        return;
    struct iwp_stack_stats *s = &r->stats;
    s->tx_bytes += st.tx_bytes;
    s->rx_bytes += st.rx_bytes;
    s->tx_fpdus += st.tx_fpdus;
    s->rx_fpdus += st.rx_fpdus;
    s->placed += st.placed_payload_bytes;
    s->copied += st.copied_payload_bytes;
    s->terms_sent += st.terminates_sent;
    s->terms_received += st.terminates_received;
    s->crc_errors += st.crc_errors;
    s->async_dropped += st.async_events_dropped;
    r->have_stats = true;
}

/* The end of a run: the report's last lines (or JSON document) and perftest's JSON file.
 * 0, or -1 when the file could not be written. */
static int finish(struct conn *c, struct iwp_report *r)
{
    take_stats(c, r);
    iwp_report_finish(r);
    return c->o->out_json ? iwp_report_out_json(r) : 0;
}

/* ------------------------------------------------------------------------------------ */

static struct conn *conn_new(const struct iwp_opts *o, bool server)
{
    /* on the heap, not in a frame: the fields the data path reads share one page, and the
     * stack below the polling loop spans fewer pages (each a TLB miss after a system
     * call) */
    struct conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->opts = *o;
    c->o = &c->opts;
    c->server = server;
    return c;
}

/* Server: take a client's connection request on c (its options in *so), accept it. */
static int server_accept(struct conn *c, struct uiw_cm_id *id, const struct iwp_pd *cpd,
                         const struct iwp_opts *so)
{
    c->id = id;
    c->peer_addr = cpd->addr;
    c->peer_rkey = cpd->rkey;
    c->sp.test = so->test;
    c->sp.lat = so->lat;
    c->sp.verify = so->verify;
    c->opts.verify = so->verify;
    /* --verify: VSLOTS receives of their own (the client's credits then keep every Send and
     * Write sink slot from being reused before it was checked) */
    size_t big = cpd->max_size > IWP_CTRL_LEN ? cpd->max_size : IWP_CTRL_LEN;
    if (setup_buffers(c, cpd->max_size, so->verify ? VSLOTS : c->o->rx_depth,
                      so->verify ? big : IWP_CTRL_LEN, SEED_SERVER) < 0 ||
        create_qp(c, c->id, dev_rd(c, true), UIW_DEFAULT_IRD_ORD) < 0)
        return -1;
    struct iwp_pd mypd = {.test = cpd->test,
                          .max_size = c->max,
                          .addr = (uint64_t)(uintptr_t)c->buf,
                          .rkey = c->mr->rkey,
                          .credits = (uint32_t)c->posted};
    uint8_t pdb[IWP_PD_LEN];
    iwp_pd_encode(&mypd, pdb);
    struct uiw_conn_param prm;
    fill_param(c->o, &prm, pdb, dev_rd(c, true), UIW_DEFAULT_IRD_ORD);
    int rc = uiw_cm_accept(c->id, &prm);
    if (rc < 0)
        return fail(c, "cm_accept", rc);
    c->advertised = c->posted;
    return 0;
}

static void *serve_thread(void *arg)
{
    struct conn *c = arg;
    return serve(c) < 0 ? arg : NULL;
}

/* The rows of several QPs' phases as one: their average bandwidths and message counts add
 * up. Their peaks were measured apart, at different times: the row's peak is the larger of
 * the summed averages and the highest single QP's peak (a bound from below, never a sum of
 * unrelated peaks). */
static void sum_rows(const struct iwp_result *rows, int n, struct iwp_result *out)
{
    *out = rows[0];
    for (int k = 1; k < n; k++) {
        const struct iwp_result *r = &rows[k];
        out->iters += r->iters;
        out->seconds = r->seconds > out->seconds ? r->seconds : out->seconds;
        out->bw_peak = r->bw_peak > out->bw_peak ? r->bw_peak : out->bw_peak;
        out->bw_avg += r->bw_avg;
        out->msg_rate += r->msg_rate;
        out->copied += r->copied;
        out->copied_known = out->copied_known && r->copied_known;
        if (r->verify == IWP_VERIFY_FAIL)
            out->verify = IWP_VERIFY_FAIL;
    }
    if (out->bw_peak < out->bw_avg)
        out->bw_peak = out->bw_avg;
}

/* Server with several QPs: each served by a thread of its own, then one row per size. */
static int serve_many(struct conn **conns, int n, struct iwp_report *rep)
{
    struct iwp_report mine[IWP_MAX_QPS];
    pthread_t th[IWP_MAX_QPS];
    int started = 0, rc = 0;
    memset(mine, 0, sizeof(mine));
    for (int k = 0; k < n; k++) {
        iwp_report_init(&mine[k], rep->o, "server", NULL); /* keeps its rows, prints none */
        conns[k]->report = &mine[k];
    }
    for (; started < n; started++)
        if (pthread_create(&th[started], NULL, serve_thread, conns[started]) != 0) {
            fail(conns[started], "pthread_create", -EAGAIN);
            rc = -1;
            break;
        }
    for (int k = 0; k < started; k++) {
        void *r;
        pthread_join(th[k], &r);
        if (r)
            rc = -1;
    }
    for (int k = 0; k < n; k++)
        conns[k]->report = NULL;
    for (int i = 0; rc == 0 && i < mine[0].nresults; i++) {
        struct iwp_result rows[IWP_MAX_QPS], sum;
        memset(rows, 0, sizeof(rows));
        for (int k = 0; k < n; k++)
            rows[k] = mine[k].results[i < mine[k].nresults ? i : 0];
        sum_rows(rows, n, &sum);
        iwp_report_row(rep, &sum);
    }
    return rc;
}

/* Server with several QPs: every connection ends (their events come to the listener's
 * channel); each is disconnected on our side when its DISCONNECTED arrives. */
static void close_many(struct conn **conns, int n)
{
    struct uiw_cm_channel *ch = conns[0]->ch;
    int down = 0;
    uint64_t deadline = iwp_now_ns() + 5000000000ull;
    for (int k = 0; k < n; k++)
        conns[k]->closing = true;
    while (down < n && iwp_now_ns() < deadline) {
        struct uiw_cm_event *ev;
        for (int k = 0; k < n; k++) {
            struct uiw_wc wc[16];
            uiw_poll_cq(conns[k]->cq, 16, wc);
        }
        if (uiw_cm_get_event(ch, &ev, 20) < 0)
            continue;
        if (ev->event == UIW_CM_EVENT_DISCONNECTED) {
            uiw_cm_disconnect(ev->id);
            down++;
        }
        uiw_cm_ack_event(ev);
    }
}

static int rdma_server(const struct iwp_opts *o)
{
    struct conn *conns[IWP_MAX_QPS] = {NULL};
    struct conn *c = conns[0] = conn_new(o, true);
    if (!c)
        return 1;
    struct uiw_cm_event *ev = NULL;
    struct iwp_report rep;
    struct iwp_opts so = *o;
    int status = 1, n = 0, want = 1, established = 0;
    if (setup_common(c, NULL) < 0)
        goto out;
    /* the listener takes no context: each QP's identifier takes its own QP's */
    c->lid = uiw_cm_create_id(c->ch, NULL, NULL);
    if (!c->lid) {
        fail(c, "cm_create_id", -errno);
        goto out;
    }
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    if (o->ipv6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_addr = in6addr_any;
        s6->sin6_port = htons(o->port);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        s4->sin_addr.s_addr = htonl(INADDR_ANY);
        s4->sin_port = htons(o->port);
    }
    int rc = uiw_cm_bind_addr(c->lid, (struct sockaddr *)&ss);
    if (rc == 0)
        rc = uiw_cm_listen(c->lid, IWP_MAX_QPS, NULL);
    if (rc < 0) {
        fail(c, "bind/listen", rc);
        goto out;
    }
    iwp_listening(c->o, uiw_cm_get_local_addr(c->lid));
    /* the client's QPs (its first request says how many): wait as long as it takes for the
     * first, a bounded time for the others */
    uint64_t deadline = 0;
    while (established < want) {
        rc = uiw_cm_get_event(c->ch, &ev, 1000);
        if (rc == -EAGAIN) {
            if (deadline && iwp_now_ns() > deadline) {
                fail(c, "waiting for the client's QPs", -ETIMEDOUT);
                goto out;
            }
            continue;
        }
        if (rc < 0) {
            fail(c, "cm_get_event", rc);
            goto out;
        }
        if (ev->event == UIW_CM_EVENT_ESTABLISHED) {
            established++;
            uiw_cm_ack_event(ev);
            continue;
        }
        if (ev->event != UIW_CM_EVENT_CONNECT_REQUEST) {
            bool early = n == 0;
            if (!early)
                fprintf(stderr, "%s: connection event %s (%s) while the QPs connect\n", o->prog,
                        uiw_cm_event_str(ev->event), uiw_strerror(ev->status));
            uiw_cm_ack_event(ev);
            if (early)
                continue; /* a client that gave up before we accepted it */
            goto out;
        }
        struct iwp_pd cpd;
        struct uiw_cm_id *id = ev->id;
        bool ok = iwp_pd_decode(ev->param.private_data, ev->param.private_data_len, &cpd) == 0 &&
                  cpd.test <= IWP_SEND && cpd.max_size && cpd.max_size <= IWP_MAX_SIZE &&
                  cpd.qps <= IWP_MAX_QPS && n < IWP_MAX_QPS;
        if (ok && n == 0) {
            want = cpd.qps ? (int)cpd.qps : 1;
            so.test = (enum iwp_test)cpd.test;
            so.lat = (cpd.flags & IWP_F_LAT) != 0;
            so.verify = (cpd.flags & IWP_F_VERIFY) != 0;
            so.qps = (uint32_t)want;
            deadline = iwp_now_ns() + (uint64_t)CM_TIMEOUT_MS * 1000000;
        } else if (ok) {
            ok = n < want && cpd.test == (uint32_t)so.test && cpd.max_size == c->max &&
                 (cpd.qps ? (int)cpd.qps : 1) == want;
        }
        uiw_cm_ack_event(ev);
        if (!ok) {
            uiw_cm_reject(id, NULL, 0);
            fail(c, "a client's private data", -EPROTO);
            goto out;
        }
        struct conn *k = n == 0 ? c : conn_new(o, true);
        if (!k) {
            uiw_cm_reject(id, NULL, 0);
            fail(c, "out of memory", -ENOMEM);
            goto out;
        }
        conns[n++] = k;
        if ((k != c && setup_common(k, c->ch) < 0) || server_accept(k, id, &cpd, &so) < 0)
            goto out;
    }
    iwp_report_init(&rep, &so, "server", stdout);
    report_conn(c, &rep);
    iwp_report_header(&rep);
    if (n == 1) {
        c->report = &rep;
        if (serve(c) < 0)
            goto out;
        c->report = NULL;
    } else if (serve_many(conns, n, &rep) < 0) {
        goto out;
    }
    for (int k = 1; k < n; k++)
        take_stats(conns[k], &rep);
    int fin = finish(c, &rep);
    for (int k = 0; k < n; k++)
        wait_for(conns[k], NULL);
    if (n == 1)
        close_conn(c, false);
    else
        close_many(conns, n);
    status = fin < 0 ? 1 : 0;
out:
    /* the extra QPs' identifiers live on the listener's channel: they go first */
    for (int k = n - 1; k >= 0; k--) {
        if (!conns[k])
            continue;
        conns[k]->report = NULL;
        teardown(conns[k]);
        free(conns[k]);
    }
    if (n == 0) {
        teardown(c);
        free(c);
    }
    return status;
}

/* ------------------------------------------------------------------------------------ */

static int resolve(const struct iwp_opts *o, struct sockaddr_storage *ss)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
    char port[8];
    snprintf(port, sizeof(port), "%u", o->port);
    int rc = getaddrinfo(o->host, port, &hints, &ai);
    if (rc != 0) {
        fprintf(stderr, "iwperf: %s: %s\n", o->host, gai_strerror(rc));
        return -1;
    }
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);
    return 0;
}

static bool time_up(const struct iwp_opts *o, uint64_t t0)
{
    return o->duration > 0 && (double)(iwp_now_ns() - t0) >= o->duration * 1e9;
}

/* Bandwidth: Writes, Reads or Sends with up to `limit` outstanding. */
static int client_bw(struct conn *c, uint64_t s, struct iwp_result *res)
{
    const struct iwp_opts *o = c->o;
    uint32_t limit = o->tx_depth;
    if (o->test == IWP_READ && c->info.ord && c->info.ord < limit)
        limit = c->info.ord;
    uint32_t sig = limit / 4 ? limit / 4 : 1;
    if (sig > 64)
        sig = 64;
    struct iwp_bw_meter m;
    uint64_t t0 = iwp_now_ns(), seq0 = c->sq_posted, posted = 0;
    iwp_bw_start(&m, t0, 10000000); /* peak over 10 ms windows */
    for (bool last = false; !last;) {
        if (c->sq_posted - c->sq_done >= limit || (o->test == IWP_SEND && c->sends >= c->credits)) {
            if (step(c) < 0)
                return -1;
            iwp_bw_update(&m, iwp_now_ns(), (c->sq_done - seq0) * s);
            continue;
        }
        /* the last WR is always signalled, so its completion ends the phase */
        last = o->iters ? posted + 1 == o->iters : time_up(o, t0);
        bool signaled = last || (posted % sig) == sig - 1;
        int rc;
        if (o->test == IWP_WRITE)
            rc = post_wr(c, UIW_WR_RDMA_WRITE, c->buf, (uint32_t)s, c->mr->lkey, peer_sink(c, 0),
                         signaled);
        else if (o->test == IWP_READ)
            rc = post_wr(c, UIW_WR_RDMA_READ, sink_slot(c, 0), (uint32_t)s, c->mr->lkey,
                         peer_src(c, 0), signaled);
        else
            rc = post_wr(c, UIW_WR_SEND, c->buf, (uint32_t)s, c->mr->lkey, 0, signaled);
        if (rc < 0)
            return -1;
        posted++;
    }
    if (wait_for(c, NULL) < 0)
        return -1;
    res->iters = posted;
    res->bw_peak = m.peak;
    return 0;
}

/* --verify: check the Reads of the phase that completed (Read i read the server's source
 * slot i % VSLOTS, whose pattern is message i % VSLOTS's); seq[] holds each slot's WR. */
static void check_reads(struct conn *c, uint64_t s, const uint64_t *seq, uint64_t posted,
                        uint64_t *checked)
{
    for (; *checked < posted && c->sq_done > seq[*checked % VSLOTS]; ++*checked)
        c->vgood += iwp_check_msg(sink_slot(c, *checked), s, SEED_SERVER, *checked % VSLOTS);
}

/* Bandwidth with --verify: client_bw's loop with every message in a slot of its own and
 * checked (the file's comment says how); a slot is reused only once its last message
 * completed, so fewer messages are in flight. */
static int client_bw_verify(struct conn *c, uint64_t s, struct iwp_result *res)
{
    const struct iwp_opts *o = c->o;
    uint32_t limit = o->tx_depth;
    if (o->test == IWP_READ && c->info.ord && c->info.ord < limit)
        limit = c->info.ord;
    uint64_t seq[VSLOTS], t0 = iwp_now_ns(), posted = 0, checked = 0;
    for (int k = 0; k < VSLOTS; k++)
        seq[k] = 0;
    bool credit = o->test != IWP_READ; /* a Send or a Write's MARK needs one */
    for (bool last = false; !last;) {
        if (o->test == IWP_READ)
            check_reads(c, s, seq, posted, &checked);
        uint32_t k = (uint32_t)(posted % VSLOTS);
        if ((posted >= VSLOTS && c->sq_done <= seq[k]) || c->sq_posted - c->sq_done >= limit ||
            (credit && c->sends >= c->credits)) {
            if (step(c) < 0)
                return -1;
            continue;
        }
        last = o->iters ? posted + 1 == o->iters : time_up(o, t0);
        seq[k] = c->sq_posted;
        int rc;
        if (o->test == IWP_READ) {
            memset(sink_slot(c, posted), 0, s);
            rc = post_wr(c, UIW_WR_RDMA_READ, sink_slot(c, posted), (uint32_t)s, c->mr->lkey,
                         peer_src(c, posted), true);
        } else {
            iwp_fill_msg(src_slot(c, posted), s, SEED_CLIENT, posted);
            rc = post_wr(c, o->test == IWP_WRITE ? UIW_WR_RDMA_WRITE : UIW_WR_SEND,
                         src_slot(c, posted), (uint32_t)s, c->mr->lkey, peer_sink(c, posted), true);
            if (rc == 0 && o->test == IWP_WRITE)
                rc = send_ctrl2(c, IWP_C_MARK, posted, 0);
        }
        if (rc < 0)
            return -1;
        posted++;
    }
    if (wait_for(c, NULL) < 0)
        return -1;
    if (o->test == IWP_READ)
        check_reads(c, s, seq, posted, &checked);
    res->iters = posted;
    return 0;
}

IWP_HOT static int client_lat(struct conn *c, uint64_t s, struct iwp_samples *smp)
{
    const struct iwp_opts *o = c->o;
    uint64_t t0 = iwp_now_ns();
    volatile uint8_t *tail = sink_slot(c, 0) + s - 1;
    uint8_t tag = 1;
    c->pongs = 0;
    for (uint64_t i = 0;; i++) {
        uint64_t a = iwp_now_ns(), deadline = a + (uint64_t)TIMEOUT_MS * 1000000;
        /* the last round trip: its Send or Write is signalled (the phase ends with it) */
        bool last = o->iters ? i + 1 >= o->iters : time_up(o, t0);
        if (sq_room(c, c->sq_limit) < 0)
            return -1;
        if (o->test == IWP_SEND) {
            if (o->verify)
                iwp_fill_msg(c->buf, s, SEED_CLIENT, i);
            if (send_credit(c) < 0 || post_wr(c, UIW_WR_SEND, c->buf, (uint32_t)s, c->mr->lkey, 0,
                                              lat_signalled(c, last)) < 0)
                return -1;
            if (c->repost) {
                c->repost = false;
                if (post_recv_slot(c, c->repost_slot) < 0)
                    return -1;
            }
            for (unsigned spins = 0; c->pongs <= i;) {
                int n = step(c);
                if (n < 0)
                    return -1;
                /* the clock only now and then: this loop is what is being timed */
                if (n == 0 && (++spins & 255) == 0 && iwp_now_ns() > deadline)
                    return fail(c, "waiting for the pong", -ETIMEDOUT);
            }
        } else if (o->test == IWP_WRITE) {
            if (o->verify)
                fill_tagged(c->buf, s, SEED_CLIENT, i, tag);
            else
                c->buf[s - 1] = tag;
            if (post_wr(c, UIW_WR_RDMA_WRITE, c->buf, (uint32_t)s, c->mr->lkey, peer_sink(c, 0),
                        lat_signalled(c, last)) < 0)
                return -1;
            while (placed_peek(tail) != tag) {
                int n = pump(c);
                if (n < 0)
                    return -1;
                if (n == 0 && iwp_now_ns() > deadline)
                    return fail(c, "waiting for the pong", -ETIMEDOUT);
            }
            if (o->verify)
                c->vgood += placed_check(sink_slot(c, 0), s - 1, SEED_SERVER, i);
            tag = (uint8_t)(tag % 255 + 1);
        } else {
            uint64_t want = c->sq_posted + 1;
            if (o->verify)
                memset(sink_slot(c, i), 0, s);
            if (post_wr(c, UIW_WR_RDMA_READ, sink_slot(c, i), (uint32_t)s, c->mr->lkey,
                        peer_src(c, i), true) < 0)
                return -1;
            while (c->sq_done < want) {
                int n = step(c);
                if (n < 0)
                    return -1;
                if (n == 0 && iwp_now_ns() > deadline)
                    return fail(c, "waiting for the Read", -ETIMEDOUT);
            }
            if (o->verify)
                c->vgood += iwp_check_msg(sink_slot(c, i), s, SEED_SERVER, i % VSLOTS);
        }
        if (iwp_samples_push(smp, iwp_now_ns() - a) < 0)
            return fail(c, "samples", -ENOMEM);
        if (last)
            return 0;
    }
}

static int client_phase(struct conn *c, uint64_t s, struct iwp_result *res)
{
    const struct iwp_opts *o = c->o;
    struct iwp_samples smp = {0};
    int rc = -1;
    memset(res, 0, sizeof(*res));
    res->bytes = s;
    if (o->lat && iwp_samples_reserve(&smp, o->iters ? o->iters : 65536) < 0)
        return fail(c, "samples", -ENOMEM);
    memset(sink_slot(c, 0), 0, c->nslot * c->max);
    iwp_fill_pattern(c->buf, s, SEED_CLIENT);
    c->size = s;
    c->vgood = 0;
    c->have[IWP_C_ACK] = c->have[IWP_C_RESULT] = false;
    if (send_ctrl2(c, IWP_C_START, s, o->iters) < 0 || wait_for(c, &c->have[IWP_C_ACK]) < 0)
        goto out;
    bool known = true;
    uint64_t copied0 = copied_now(c, &known);
    uint64_t t0 = iwp_now_ns();
    if (o->lat) {
        c->lat_phase = o->test == IWP_SEND;
        rc = client_lat(c, s, &smp);
        c->lat_phase = false;
        if (c->repost) {
            c->repost = false;
            if (post_recv_slot(c, c->repost_slot) < 0)
                rc = -1;
        }
        if (rc < 0)
            goto out;
        rc = -1;
        res->iters = smp.n;
    } else if ((o->verify ? client_bw_verify(c, s, res) : client_bw(c, s, res)) < 0) {
        goto out;
    }
    if (wait_for(c, NULL) < 0)
        goto out;
    /* every WR of the phase has completed: what the stack copied meanwhile */
    uint64_t copied1 = copied_now(c, &known);
    /* STOP: a zero-length Send; the server sees it after every earlier Write is placed */
    if (send_credit(c) < 0 || sq_room(c, c->sq_limit) < 0 ||
        post_wr(c, UIW_WR_SEND, NULL, 0, c->mr->lkey, 0, true) < 0 || wait_for(c, NULL) < 0 ||
        wait_for(c, &c->have[IWP_C_RESULT]) < 0)
        goto out;
    uint64_t t1 = iwp_now_ns();
    const struct iwp_ctrl *r = &c->last[IWP_C_RESULT];
    res->seconds = (double)(t1 - t0) / 1e9;
    if (o->lat) {
        iwp_lat_summarise(smp.v, smp.n, o->test == IWP_READ ? 1.0 : 0.5, &res->lat);
    } else {
        res->bw_avg = res->seconds > 0 ? (double)(res->iters * s) / res->seconds : 0;
        res->msg_rate = res->seconds > 0 ? (double)res->iters / res->seconds : 0;
        if (res->bw_peak < res->bw_avg)
            res->bw_peak = res->bw_avg;
    }
    res->copied_known = known && r->v[5];
    res->copied = copied1 - copied0 + r->v[4];
    if (o->verify) {
        /* every message, each one right, on the side that received it (the server counts
         * the Sends and Writes it got, the client the pongs and Reads) */
        uint64_t n = res->iters;
        bool ok = true;
        if (o->test != IWP_READ)
            ok = r->v[2] == n && r->v[1] == n;
        if (o->test == IWP_READ || o->lat)
            ok = ok && c->vgood == n;
        res->verify = ok ? IWP_VERIFY_OK : IWP_VERIFY_FAIL;
    }
    struct iwp_ctrl rep;
    iwp_result_to_ctrl(res, &rep);
    rc = send_ctrl(c, &rep);
out:
    iwp_samples_free(&smp);
    return rc;
}

/* Client: make c's QP and connect it to the server at dst (QP `index` of `qps`), retrying
 * a refused connection for a few seconds (the server may still be starting). */
static int client_connect(struct conn *c, const struct sockaddr_storage *dst, uint32_t qps,
                          uint32_t index)
{
    const struct iwp_opts *o = c->o;
    struct uiw_cm_event *ev;
    if (setup_common(c, NULL) < 0 ||
        setup_buffers(c, iwp_max_size(o), CLIENT_RECVS, IWP_CTRL_LEN, SEED_CLIENT) < 0)
        return -1;
    c->id = uiw_cm_create_id(c->ch, c->ctx, NULL);
    if (!c->id)
        return fail(c, "cm_create_id", -errno);
    /* -o: the Reads asked for, else as many as the TX depth; at most the device's ORD */
    uint16_t max_ord = dev_rd(c, false);
    uint32_t want = o->outs ? o->outs : o->tx_depth;
    uint16_t ord = (uint16_t)(want < max_ord ? want : max_ord);
    struct uiw_device_attr da;
    if (o->inline_size && uiw_query_device(c->ctx, &da) == 0 && o->inline_size > da.max_inline_data)
        return fail(c, "inline size beyond the device's max_inline_data", -EINVAL);
    if (create_qp(c, c->id, UIW_DEFAULT_IRD_ORD, ord) < 0)
        return -1;
    struct iwp_pd mypd = {.test = o->test,
                          .flags = (o->lat ? IWP_F_LAT : 0) | (o->verify ? IWP_F_VERIFY : 0),
                          .max_size = c->max,
                          .addr = (uint64_t)(uintptr_t)c->buf,
                          .rkey = c->mr->rkey,
                          .credits = c->nrecv,
                          .qps = qps,
                          .index = index};
    uint8_t pdb[IWP_PD_LEN];
    iwp_pd_encode(&mypd, pdb);
    struct uiw_conn_param prm;
    fill_param(o, &prm, pdb, UIW_DEFAULT_IRD_ORD, ord);
    for (int attempt = 0;; attempt++) {
        int rc = uiw_cm_connect(c->id, (const struct sockaddr *)dst, &prm);
        if (rc < 0)
            return fail(c, "cm_connect", rc);
        rc = uiw_cm_get_event(c->ch, &ev, CM_TIMEOUT_MS);
        if (rc < 0)
            return fail(c, "waiting for the connection", rc);
        if (ev->event == UIW_CM_EVENT_ESTABLISHED)
            break;
        int st = ev->status;
        enum uiw_cm_event_type t = ev->event;
        uiw_cm_ack_event(ev);
        if (t == UIW_CM_EVENT_UNREACHABLE && attempt < 50) {
            /* a fresh id for the next attempt */
            uiw_cm_destroy_qp(c->id);
            uiw_cm_destroy_id(c->id);
            c->qp = NULL;
            c->id = uiw_cm_create_id(c->ch, c->ctx, NULL);
            if (!c->id)
                return fail(c, "cm_create_id", -errno);
            c->posted = 0;
            if (create_qp(c, c->id, UIW_DEFAULT_IRD_ORD, ord) < 0)
                return -1;
            struct timespec ts = {0, 100000000};
            nanosleep(&ts, NULL);
            continue;
        }
        fprintf(stderr, "%s: connect: %s (%s)\n", o->prog, uiw_cm_event_str(t), uiw_strerror(st));
        if (!c->err)
            c->err = st ? st : -ECONNREFUSED;
        return -1;
    }
    struct iwp_pd spd;
    int bad = iwp_pd_decode(ev->param.private_data, ev->param.private_data_len, &spd);
    uiw_cm_ack_event(ev);
    /* the server sized its buffer from our request: its sink is at its base + max too */
    if (bad < 0 || spd.max_size != c->max)
        return fail(c, "the server's private data", -EPROTO);
    c->peer_addr = spd.addr;
    c->peer_rkey = spd.rkey;
    c->credits = spd.credits;
    return 0;
}

/* Client with several QPs: one thread per QP runs the sizes, all starting each size
 * together. */
struct client_worker {
    struct conn *c;
    const uint64_t *sizes;
    int nsizes;
    pthread_barrier_t *start;
    _Atomic bool *failed;
    struct iwp_result res[32];
};

static void *client_thread(void *arg)
{
    struct client_worker *w = arg;
    for (int i = 0; i < w->nsizes; i++) {
        pthread_barrier_wait(w->start); /* every QP takes part in every size, failed or not */
        if (!atomic_load(w->failed) && client_phase(w->c, w->sizes[i], &w->res[i]) < 0)
            atomic_store(w->failed, true);
    }
    if (!atomic_load(w->failed) &&
        (send_ctrl2(w->c, IWP_C_BYE, 0, 0) < 0 || wait_for(w->c, NULL) < 0))
        atomic_store(w->failed, true);
    return NULL;
}

static int client_many(struct conn **conns, int n, const uint64_t *sizes, int nsizes,
                       struct iwp_report *rep, bool *vfail)
{
    struct client_worker *w = calloc((size_t)n, sizeof(*w));
    pthread_t th[IWP_MAX_QPS];
    pthread_barrier_t start;
    _Atomic bool failed = false;
    int started = 0;
    if (!w || pthread_barrier_init(&start, NULL, (unsigned)n) != 0) {
        free(w);
        return fail(conns[0], "threads", -ENOMEM);
    }
    for (int k = 0; k < n; k++)
        w[k] = (struct client_worker){
            .c = conns[k], .sizes = sizes, .nsizes = nsizes, .start = &start, .failed = &failed};
    for (; started < n; started++)
        if (pthread_create(&th[started], NULL, client_thread, &w[started]) != 0)
            break;
    if (started < n) {
        /* the barrier counts n: without all threads none can pass it */
        fprintf(stderr, "%s: pthread_create failed\n", conns[0]->o->prog);
        exit(1);
    }
    for (int k = 0; k < n; k++)
        pthread_join(th[k], NULL);
    pthread_barrier_destroy(&start);
    int rc = atomic_load(&failed) ? -1 : 0;
    for (int i = 0; rc == 0 && i < nsizes; i++) {
        struct iwp_result rows[IWP_MAX_QPS], sum;
        memset(rows, 0, sizeof(rows));
        for (int k = 0; k < n; k++)
            rows[k] = w[k].res[i];
        sum_rows(rows, n, &sum);
        *vfail |= sum.verify == IWP_VERIFY_FAIL;
        iwp_report_row(rep, &sum);
    }
    free(w);
    return rc;
}

static int rdma_client(const struct iwp_opts *o)
{
    struct conn *conns[IWP_MAX_QPS] = {NULL};
    int n = (int)(o->qps ? o->qps : 1), made = 0;
    struct iwp_report rep;
    int status = 1;
    struct sockaddr_storage dst;
    if (resolve(o, &dst) < 0)
        return 1;
    for (; made < n; made++) {
        conns[made] = conn_new(o, false);
        if (!conns[made] || client_connect(conns[made], &dst, (uint32_t)n, (uint32_t)made) < 0) {
            made++;
            goto out;
        }
    }
    struct conn *c = conns[0];
    iwp_report_init(&rep, o, "client", stdout);
    report_conn(c, &rep);
    iwp_report_header(&rep);
    uint64_t sizes[32];
    int nsizes = iwp_sizes(o, sizes, 32);
    bool vfail = false;
    if (n == 1) {
        for (int i = 0; i < nsizes; i++) {
            struct iwp_result res;
            if (client_phase(c, sizes[i], &res) < 0)
                goto out;
            vfail |= res.verify == IWP_VERIFY_FAIL;
            iwp_report_row(&rep, &res);
        }
        if (send_ctrl2(c, IWP_C_BYE, 0, 0) < 0 || wait_for(c, NULL) < 0)
            goto out;
    } else if (client_many(conns, n, sizes, nsizes, &rep, &vfail) < 0) {
        goto out;
    }
    for (int k = 1; k < n; k++)
        take_stats(conns[k], &rep);
    for (int k = 0; k < n; k++)
        conns[k]->closing = true;
    int fin = finish(c, &rep);
    for (int k = 0; k < n; k++)
        close_conn(conns[k], true);
    status = vfail || fin < 0 ? 1 : 0;
out:
    for (int k = 0; k < made; k++) {
        if (!conns[k])
            continue;
        teardown(conns[k]);
        free(conns[k]);
    }
    return status;
}

int iwp_rdma_run(const struct iwp_opts *o)
{
    return o->host ? rdma_client(o) : rdma_server(o);
}
